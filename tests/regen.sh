#!/bin/sh
# tests/regen.sh ROOT TMP : configure records its arguments, CC, CFLAGS and LDFLAGS; ninja's
# regeneration, run in a different environment, writes the same build.ninja.
set -eu
root=$1 tmp=$2
rm -rf "$tmp" && mkdir -p "$tmp"
CC=cc CFLAGS="-DAOT_REGEN='a b'" LDFLAGS=-Wl,-O1 "$root/configure" --without-cuda --targets=gfx942 \
    --builddir="$tmp/b" --launcher="env X='y z'" >/dev/null
cp "$tmp/b/build.ninja" "$tmp/first.ninja"
grep '^configure_env = ' "$tmp/first.ninja"
# what the configure edge runs, with ninja's $$ unescaped
vars() { sed -n "s/^$1 = //p" "$tmp/first.ninja" | sed 's/\$\$/$/g'; }
(cd "$root" && env CC=false CFLAGS=-bogus LDFLAGS= sh -c "env $(vars configure_env) ./configure $(vars configure_args)") >/dev/null
cmp "$tmp/first.ninja" "$tmp/b/build.ninja" && echo "regeneration writes the same build.ninja"
