#!/bin/sh
# bench/bundle_size.sh BUILDDIR : our bundle against clang-offload-bundler --compress (zstd, its
# defaults: level 3 + long-distance matching, CCOB v3) on the same code objects, and the time
# to decompress one target's frame. AMD targets only (the offload bundler takes hipv4 entries).
set -eu
b=$1
bundler=$(sed -n 's/^bundler = //p' "$b/build.ninja")
[ -n "$bundler" ] || { echo "no clang-offload-bundler (Debian package clang-tools-22: tools/install-deps --bench)"; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
targets="host-x86_64-unknown-linux-gnu"
inputs="/dev/null"
amd=""
for d in "$b"/co/gfx*; do
    t=$(basename "$d" | tr '_' ':')
    for co in "$d"/*.co; do
        m=$(basename "$co" .co)
        # one CCOB per module (the bundler bundles one file per target)
        echo "$m $t $co" >>"$tmp/list"
    done
    amd="$amd $d/*.co"
done
# ccob MODULE SUFFIX [sm]: one offload bundle of the module's AMD code objects (and with "sm" its
# cubins too, as hip-nvptx64 entries) at the bundler's default compression; prints its size.
ccob() {
    ts=host-x86_64-unknown-linux-gnu
    ins=/dev/null
    while read -r mm t co; do
        [ "$mm" = "$1" ] || continue
        ts="$ts,hipv4-amdgcn-amd-amdhsa--$t"
        ins="$ins,$co"
    done <"$tmp/list"
    if [ "${3:-}" = sm ]; then
        for cubin in "$b"/co/sm_*/"$1".cubin; do
            [ -f "$cubin" ] || continue
            ts="$ts,hip-nvptx64-nvidia-cuda--$(basename "$(dirname "$cubin")")"
            ins="$ins,$cubin"
        done
    fi
    "$bundler" -type=o -targets="$ts" $(echo "$ins" | tr ',' '\n' | sed 's/^/-input=/') -output="$tmp/$1.$2" -compress
    wc -c <"$tmp/$1.$2"
}
total_ccob=0
total_all=0
for m in $(cut -d' ' -f1 "$tmp/list" | sort -u); do
    total_ccob=$((total_ccob + $(ccob "$m" amd.ccob)))
    total_all=$((total_all + $(ccob "$m" all.ccob sm)))
done
"$b/bin/aot-bundle" pack -o "$tmp/ours.bundle" $(for d in "$b"/co/gfx*; do echo "--target $(basename "$d" | tr '_' ':') $d/*.co"; done) >/dev/null
ours=$(wc -c <"$tmp/ours.bundle")
raw=$(cat $amd | wc -c)
echo "AMD code objects: $(echo $amd | wc -w) files, $raw bytes uncompressed"
echo "clang-offload-bundler --compress (CCOB v3, zstd level 3 + LDM, one bundle per module): $total_ccob bytes"
echo "aot-bundle pack (level 19, LDM, per-target frames): $ours bytes"
echo "ratio ours / offload-bundler: $(awk "BEGIN{printf \"%.3f\", $ours/$total_ccob}")"
# The whole kernel set, sm_90a cubins included, against the build's bundle of every target.
ours_all=$(wc -c <"$b/aiter_aot.bundle")
echo "every target ($(ls "$b"/co/*/* | wc -l) files, $(cat "$b"/co/*/* | wc -c) bytes): offload-bundler $total_all bytes, the build's bundle $ours_all bytes, ratio $(awk "BEGIN{printf \"%.3f\", $ours_all/$total_all}")"
for lvl in 3 9 19 22; do
    "$b/bin/aot-bundle" pack --level $lvl --dict none -o "$tmp/l$lvl" $(for d in "$b"/co/gfx*; do echo "--target $(basename "$d" | tr '_' ':') $d/*.co"; done)
    "$b/bin/aot-bundle" pack --level $lvl --dict always -o "$tmp/d$lvl" $(for d in "$b"/co/gfx*; do echo "--target $(basename "$d" | tr '_' ':') $d/*.co"; done) 2>/dev/null || cp "$tmp/l$lvl" "$tmp/d$lvl"
    echo "  level $lvl: $(wc -c <"$tmp/l$lvl") bytes without dictionary, $(wc -c <"$tmp/d$lvl") with a trained one"
done
