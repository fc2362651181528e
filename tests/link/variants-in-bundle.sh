#!/bin/sh
# tests/link/variants-in-bundle.sh VARIANT_NAMES AOT_BUNDLE BUNDLE : every kernel of the variant
# lists is in the bundle for every target (the wave-32 and pipeline kernels for the sm_90a
# targets only), and the bundle has no kernel the lists lack.
set -eu
names=$1 ab=$2 bundle=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$names" >"$tmp/names"
# "TARGET KERNEL" for every kernel of the bundle
"$ab" list "$bundle" | awk '/^target /{t=$2; sub(/:$/, "", t)} /^    kernel /{print t, $2}' >"$tmp/have"
missing=0
for t in $(awk '{print $1}' "$tmp/have" | sort -u); do
    while read -r where name; do
        case $where:$t in pipelines:amdgcn* | wave32:amdgcn*) continue ;; esac
        grep -qx "$t $name" "$tmp/have" || { echo "missing from the bundle: $name for $t"; missing=$((missing + 1)); }
    done <"$tmp/names"
done
for k in $(awk '{print $2}' "$tmp/have" | sort -u); do
    grep -q " $k\$" "$tmp/names" || { echo "in the bundle but in no variant list: $k"; missing=$((missing + 1)); }
done
[ "$missing" = 0 ] && echo "$(wc -l <"$tmp/names") kernels of the variant lists, each in the bundle for every target it is built for"
