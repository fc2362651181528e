#!/bin/sh
# tests/reproducible.sh ROOT BUILDDIR : configures and builds libaiter_aot.a in a second,
# differently named directory and compares it byte for byte with BUILDDIR's.
set -eu
root=$1 build=$2
other=$(mktemp -d /tmp/aiter-aot-repro.XXXXXX)
trap 'rm -rf "$other"' EXIT
args=$(sed -n 's/^  command = cd .* \&\& \.\/configure //p' "$build/build.ninja" | head -n1)
targets=$(sed -n 's/^targets = //p' "$build/build.ninja" | tr ' ' ',')
(cd "$root" && ./configure --builddir="$other/b" --targets="$targets" >/dev/null)
ninja -C "$other/b" lib/libaiter_aot.a >/dev/null
cmp "$build/lib/libaiter_aot.a" "$other/b/lib/libaiter_aot.a"
echo "libaiter_aot.a identical across build directories ($(wc -c <"$build/lib/libaiter_aot.a") bytes)"
