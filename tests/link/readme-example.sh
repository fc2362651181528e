#!/bin/sh
# tests/link/readme-example.sh ROOT BUILDDIR TMP : builds the README's example with the README's
# link command against a DESTDIR install, and checks that the program is statically linked
# (no NEEDED libaiter_aot.so) and starts. The example is tests/link/readme_example.c, which must
# be the README's code block byte for byte.
set -eu
root=$1 build=$2 tmp=$3
rm -rf "$tmp" && mkdir -p "$tmp"
awk '/^## Linking/{f=1} f&&/^```c$/{g=1;next} g&&/^```$/{exit} g' "$root/README.md" >"$tmp/app.c"
cmp "$tmp/app.c" "$root/tests/link/readme_example.c" || { echo "README's example differs from tests/link/readme_example.c"; exit 1; }
cmd=$(grep -m1 '^cc app.c ' "$root/README.md") || { echo "no 'cc app.c' line in README.md"; exit 1; }

"$root/tools/make-dist" "$root" "$build" /usr/local "test" "$tmp/dist" "$root"/runtime/include/aiter_aot*.h >/dev/null
DESTDIR=$tmp/dest PREFIX=/usr/local "$root/tools/install-dist" "$tmp/dist" >/dev/null
export PKG_CONFIG_SYSROOT_DIR="$tmp/dest" PKG_CONFIG_LIBDIR="$tmp/dest/usr/local/lib/pkgconfig"
echo "$ $cmd"
(cd "$tmp" && sh -c "$cmd")
if readelf -d "$tmp/a.out" | grep NEEDED | grep libaiter_aot; then echo "dynamically linked"; exit 1; fi
# no GPU here: init may answer "no device"; the program must start and list the bundle
"$tmp/a.out" >"$tmp/run.txt" 2>&1 || true
cat "$tmp/run.txt"
grep -q '^embedded: ' "$tmp/run.txt" && grep -q '^init: ' "$tmp/run.txt"
# the shared variant names the .so
(cd "$tmp" && cc app.c -o shared.out $(pkg-config --cflags --libs aiter_aot-shared))
readelf -d "$tmp/shared.out" | grep -q 'NEEDED.*libaiter_aot.so' || { echo "aiter_aot-shared.pc does not link the .so"; exit 1; }
echo "static link: no NEEDED libaiter_aot.so, runs; aiter_aot-shared.pc links the .so"
