#!/bin/sh
# bench/bundle_size.sh BUILDDIR : our bundle against clang-offload-bundler --compress (zstd, its
# defaults: level 3 + long-distance matching, CCOB v3) on the same code objects, and the time
# to decompress one target's frame. AMD targets only (the offload bundler takes hipv4 entries).
set -eu
b=$1
bundler=$(sed -n 's/^bundler = //p' "$b/build.ninja")
[ -n "$bundler" ] || { echo "no clang-offload-bundler"; exit 0; }
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
total_ccob=0
for m in $(cut -d' ' -f1 "$tmp/list" | sort -u); do
    ts=host-x86_64-unknown-linux-gnu
    ins=/dev/null
    while read -r mm t co; do
        [ "$mm" = "$m" ] || continue
        ts="$ts,hipv4-amdgcn-amd-amdhsa--$t"
        ins="$ins,$co"
    done <"$tmp/list"
    "$bundler" -type=o -targets="$ts" -input="$(echo "$ins" | sed 's/,/ -input=/g')" -output="$tmp/$m.ccob" -compress 2>/dev/null ||
        "$bundler" -type=o -targets="$ts" $(echo "$ins" | tr ',' '\n' | sed 's/^/-input=/') -output="$tmp/$m.ccob" -compress
    total_ccob=$((total_ccob + $(wc -c <"$tmp/$m.ccob")))
done
"$b/bin/aot-bundle" pack -o "$tmp/ours.bundle" $(for d in "$b"/co/gfx*; do echo "--target $(basename "$d" | tr '_' ':') $d/*.co"; done) >/dev/null
ours=$(wc -c <"$tmp/ours.bundle")
raw=$(cat $amd | wc -c)
echo "AMD code objects: $(echo $amd | wc -w) files, $raw bytes uncompressed"
echo "clang-offload-bundler --compress (CCOB v3, zstd level 3 + LDM, one bundle per module): $total_ccob bytes"
echo "aot-bundle pack (level 19, LDM, per-target frames): $ours bytes"
echo "ratio ours / offload-bundler: $(awk "BEGIN{printf \"%.3f\", $ours/$total_ccob}")"
for lvl in 3 9 19 22; do
    "$b/bin/aot-bundle" pack --level $lvl --dict none -o "$tmp/l$lvl" $(for d in "$b"/co/gfx*; do echo "--target $(basename "$d" | tr '_' ':') $d/*.co"; done)
    "$b/bin/aot-bundle" pack --level $lvl --dict always -o "$tmp/d$lvl" $(for d in "$b"/co/gfx*; do echo "--target $(basename "$d" | tr '_' ':') $d/*.co"; done) 2>/dev/null || cp "$tmp/l$lvl" "$tmp/d$lvl"
    echo "  level $lvl: $(wc -c <"$tmp/l$lvl") bytes without dictionary, $(wc -c <"$tmp/d$lvl") with a trained one"
done
