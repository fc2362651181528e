#!/bin/sh
# tests/launchers.sh ROOT BUILDDIR [ccache] [distcc] [sccache] : the product built through
# configure's --launcher with each engine for real (tools/install-deps --launchers), in fresh
# build directories under /tmp, compared byte for byte with BUILDDIR's own build. One line per
# check; the closing line is "N passed, N failed". make check-launchers runs all three.
#   ccache  a clean build fills an empty cache; a second clean build in another directory
#           must hit it for every compile it runs (HIP, nvcc and host C)
#   distcc  two distccd on 127.0.0.1 (one job each), started and stopped here; each daemon's
#           log must show compiles, and the output must equal the local build's
#   sccache the same two builds as ccache; sccache 0.4 (Debian 12) caches host C and nvcc and
#           refuses -x hip, so the HIP compiles must be its non-cacheable calls
set -u
root=$1
build=$(cd "$2" && pwd)
shift 2
engines=${*:-ccache distcc sccache}
tmp=$(mktemp -d /tmp/aiter-aot-launchers.XXXXXX)
chmod 755 "$tmp" # distccd runs as the distccd user and logs into $tmp/distcc
products="lib/libaiter_aot.a lib/libaiter_aot.so bin/aot-bundle"
targets=$(sed -n 's/^targets = //p' "$build/build.ninja" | tr ' ' ',')
pass=0 fail=0
. "$root/tests/distccd.sh"
cleanup() {
    distccd_stop "$tmp/distcc"
    [ -n "${SCCACHE_DIR:-}" ] && sccache --stop-server >/dev/null 2>&1
    rm -rf "$tmp"
}
trap cleanup EXIT

check() { # check NAME CONDITION-STATUS DETAIL : one result line
    if [ "$2" = 0 ]; then pass=$((pass + 1)); printf 'ok   %-34s %s\n' "$1" "$3"
    else fail=$((fail + 1)); printf 'FAIL %-34s %s\n' "$1" "$3"; fi
}

# build DIR LAUNCHER : configures DIR like BUILDDIR with the launcher and builds the product;
# the ninja output is DIR.log. Prints the seconds it took.
build() {
    (cd "$root" && ./configure --builddir="$1" --targets="$targets" --launcher="$2" >/dev/null) || return 1
    t0=$(date +%s)
    ninja -C "$1" $products >"$1.log" 2>&1 || { tail -n 20 "$1.log" >&2; return 1; }
    echo $(( $(date +%s) - t0 ))
}

# same DIR : are DIR's products byte-identical to BUILDDIR's?
same() {
    for p in $products; do cmp -s "$build/$p" "$1/$p" || return 1; done
}

# compiles DIR RULES : how many edges of those rules (HIP, NVCC, CC: ninja's descriptions) ran
compiles() { grep -cE "^\[[0-9]+/[0-9]+\] ($2) " "$1.log"; }

run_ccache() {
    export CCACHE_DIR="$tmp/ccache"
    s1=$(build "$tmp/cc1" ccache) || { check ccache-first-build 1 "(log: build failed)"; return; }
    ccache -z >/dev/null
    s2=$(build "$tmp/cc2" ccache) || { check ccache-second-build 1 "(build failed)"; return; }
    stats=$(ccache --print-stats)
    stat() { printf '%s\n' "$stats" | awk -v k="$1" '$1 == k { print $2 }'; }
    hits=$(( $(stat direct_cache_hit) + $(stat preprocessed_cache_hit) ))
    misses=$(stat cache_miss) uncacheable=$(( $(stat called_for_link) + $(stat unsupported_compiler_option) + $(stat unsupported_source_language) ))
    want=$(compiles "$tmp/cc2" "HIP|NVCC|CC")
    check ccache-every-compile-hits "$([ "$hits" = "$want" ] && [ "$misses" = 0 ] && [ "$uncacheable" = 0 ]; echo $?)" \
        "$hits hits of $want compiles ($(compiles "$tmp/cc2" HIP) HIP, $(compiles "$tmp/cc2" NVCC) nvcc), $misses misses; $s1 s, then $s2 s"
    same "$tmp/cc2"
    check ccache-output-identical $? "$products"
}

run_distcc() {
    distccd_start "$tmp/distcc" || { check distcc-daemons 1 "distccd did not start"; return; }
    s=$(build "$tmp/dc" distcc) || { check distcc-build 1 "(build failed)"; return; }
    set -- $(distccd_compiles "$tmp/distcc")
    check distcc-both-daemons-compiled "$([ "$1" -gt 0 ] && [ "$2" -gt 0 ]; echo $?)" \
        "$1 + $2 of $(compiles "$tmp/dc" CC) host C compiles remote; HIP and nvcc local ($s s)"
    same "$tmp/dc"
    check distcc-output-identical $? "$products"
}

run_sccache() {
    export SCCACHE_DIR="$tmp/sccache" SCCACHE_SERVER_PORT=$((40000 + $$ % 20000)) SCCACHE_IDLE_TIMEOUT=0
    sccache --start-server >/dev/null 2>&1 || { check sccache-server 1 "did not start"; return; }
    s1=$(build "$tmp/sc1" sccache) || { check sccache-first-build 1 "(build failed)"; return; }
    sccache --zero-stats >/dev/null
    s2=$(build "$tmp/sc2" sccache) || { check sccache-second-build 1 "(build failed)"; return; }
    stats=$(sccache --show-stats)
    stat() { printf '%s\n' "$stats" | sed -n "s/^$1  *\([0-9]*\)\$/\1/p"; }
    hits=$(stat "Cache hits") misses=$(stat "Cache misses") refused=$(stat "Non-cacheable calls")
    c=$(compiles "$tmp/sc2" "NVCC|CC") hip=$(compiles "$tmp/sc2" HIP)
    check sccache-c-and-nvcc-hit "$([ "$hits" = "$c" ] && [ "$misses" = 0 ] && [ "$refused" = "$hip" ]; echo $?)" \
        "$hits hits of $c C and nvcc compiles, $misses misses; $refused of $hip HIP not cacheable; $s1 s, then $s2 s"
    same "$tmp/sc2"
    check sccache-output-identical $? "$products"
}

for e in $engines; do
    if ! command -v "$e" >/dev/null; then check "$e" 1 "not installed (tools/install-deps --launchers)"; continue; fi
    "run_$e"
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
