#!/bin/sh
# bench/builder/run.sh [OUT] : the builder on this machine, each figure beside its alternative
# measured in the same run, as Markdown tables (docs/performance.md, "Builder"):
#   build times   a clean build (configure + ninja dist, the default targets; three of them,
#                 at the start, in the middle and at the end, the median taken), then against
#                 it: one kernel touched, one kernel edited, a clean build through an empty
#                 ccache and a second one through the filled cache (new build directory),
#                 a clean build through distcc with two local daemons; and the pack as the
#                 build runs it, with its cache, against aot-bundle's default pack
#   bundle size   per default target and together: the code objects, clang-offload-bundler
#                 --compress on them, and our bundle
#   decompression per target, through the reader the runtime uses
# Everything runs on a copy of the tree under /tmp (its kernel sources are touched and
# edited there). OUT (default /tmp/aiter-aot-builder-bench) receives sizes.tsv,
# decompress.tsv and bundle_size.svg (bench/builder/plot_sizes.py). Needs
# tools/install-deps --bench --launchers.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-/tmp/aiter-aot-builder-bench}
mkdir -p "$out"
tmp=$(mktemp -d /tmp/aiter-aot-bench.XXXXXX)
chmod 755 "$tmp" # distccd runs as the distccd user and logs into $tmp/distcc
src=$tmp/src
. "$root/tests/distccd.sh"
trap 'distccd_stop "$tmp/distcc"; rm -rf "$tmp"' EXIT
for tool in ccache distccd; do
    command -v "$tool" >/dev/null || { echo "no $tool: run tools/install-deps --bench --launchers" >&2; exit 1; }
done
mkdir -p "$src"
(cd "$root" && git ls-files -co --exclude-standard | tar -cf - -T -) | tar -x -C "$src"
kernel=kernels/moe/topk_softmax.hip

# timed CMD... : runs CMD (output to $tmp/log) and prints its wall time and the CPU time of
# the processes it ran (user + system, from the shell's `times`: what ran on this machine, so
# a distcc daemon's compiles are not in it), in seconds: "WALL CPU". Called in $(...), whose
# subshell starts with no children's time.
timed() {
    s=$(date +%s.%N)
    times >"$tmp/times0"
    "$@" >>"$tmp/log" 2>&1 || { echo "failed: $*" >&2; tail -n 20 "$tmp/log" >&2; return 1; }
    times >"$tmp/times1"
    awk -v s="$s" -v e="$(date +%s.%N)" 'function t(f,  a, b, x, c) { getline x <f; getline x <f
        split(x, a, " "); split(a[1], b, "m"); c = b[1] * 60 + b[2]; split(a[2], b, "m"); return c + b[1] * 60 + b[2] }
        BEGIN { printf "%.1f %.1f", e - s, t(ARGV[2]) - t(ARGV[1]) }' "$tmp/times0" "$tmp/times1"
}
# clean DIR [LAUNCHER] : configure and ninja dist in a new build directory
clean() { (cd "$src" && ./configure --builddir="$1" ${2:+--launcher=$2} >/dev/null && ninja -C "$1" dist); }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
# row NAME "WALL CPU" AGAINST "WALL CPU" : one line of the build table
row() {
    printf '| %s | %s | %s / %s | %s | %s / %s | %s |\n' "$1" "$3" "${2% *}" "${4% *}" "$(ratio "${2% *}" "${4% *}")" \
        "${2#* }" "${4#* }" "$(ratio "${2#* }" "${4#* }")"
}
same() { cmp -s "$tmp/clean/lib/libaiter_aot.a" "$1/lib/libaiter_aot.a" && echo "identical" || echo "DIFFERENT"; }

echo "machine: $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n1), $(nproc) cores," \
    "$(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo); $(date -u +%F);" \
    "load average at the start $(cut -d' ' -f1 /proc/loadavg)"
echo "command: sh bench/builder/run.sh"
echo
t_clean1=$(timed clean "$tmp/clean")
touch "$src/$kernel"
t_touch=$(timed ninja -C "$tmp/clean" dist)
cp "$src/$kernel" "$tmp/kernel.orig"
printf '\nAOT_KERNEL void aot_bench_edit(int *p) { p[0] = 1; }\n' >>"$src/$kernel"
t_edit=$(timed ninja -C "$tmp/clean" dist)
cp "$tmp/kernel.orig" "$src/$kernel"
timed ninja -C "$tmp/clean" dist >/dev/null # back to the clean build's bytes, for the comparisons
export CCACHE_DIR="$tmp/ccache"
t_cc1=$(timed clean "$tmp/cc1" ccache)
ccache -z >/dev/null
t_cc2=$(timed clean "$tmp/cc2" ccache)
cc_hits=$(ccache --print-stats | awk '$1 ~ /^(direct|preprocessed)_cache_hit$/ { n += $2 } END { print n }')
cc_miss=$(ccache --print-stats | awk '$1 == "cache_miss" { print $2 }')
t_clean2=$(timed clean "$tmp/clean2")
distccd_start "$tmp/distcc"
t_dc=$(timed clean "$tmp/dc" distcc)
dc_jobs=$(distccd_compiles "$tmp/distcc")
distccd_stop "$tmp/distcc"
t_clean3=$(timed clean "$tmp/clean3")
# median3 "W C" "W C" "W C" : the median wall time and the median CPU time
median3() {
    w=$(printf '%s\n' "${1% *}" "${2% *}" "${3% *}" | sort -n | sed -n 2p)
    echo "$w $(printf '%s\n' "${1#* }" "${2#* }" "${3#* }" | sort -n | sed -n 2p)"
}
t_clean=$(median3 "$t_clean1" "$t_clean2" "$t_clean3")

# the pack alone, median of 3: as the build runs it ($pack_flags: its cache) with every frame
# cached, with the AMD frames cached (sm_90a new), without cache; and aot-bundle's default
b=$tmp/clean
args=$(sed -n 's/^  pack_args = //p' "$b/build.ninja")
flags=$(sed -n 's/^pack_flags = //p' "$b/build.ninja" | sed 's/ *--cache [^ ]*//')
amd_args=$(printf '%s' "$args" | sed 's/--target sm_.*//')
pack() { (cd "$b" && ./bin/aot-bundle pack "$@" -o "$tmp/p.bundle" $args); }
pack3() { median3 "$(timed "$@")" "$(timed "$@")" "$(timed "$@")"; }
pack --cache "$tmp/all.cache" $flags >/dev/null
(cd "$b" && ./bin/aot-bundle pack --cache "$tmp/amd.cache" $flags -o "$tmp/a.bundle" $amd_args >/dev/null)
amd_cached() { cp "$tmp/amd.cache" "$tmp/try.cache" && pack --cache "$tmp/try.cache" $flags; }
t_p_all=$(pack3 pack --cache "$tmp/all.cache" $flags)
t_p_amd=$(pack3 amd_cached)
t_p_none=$(pack3 pack $flags)
cmp -s "$tmp/p.bundle" "$b/aiter_aot.bundle" || { echo "the pack's bundle differs from the build's" >&2; exit 1; }
t_p_default=$(pack3 pack)
default_same=$(cmp -s "$tmp/p.bundle" "$b/aiter_aot.bundle" && echo "the same bundle" || echo "ANOTHER bundle")

echo "| build ($(sed -n 's/^targets = //p' "$b/build.ninja")) | against | wall, s | ratio | CPU, s | ratio |"
echo "|---|---|---:|---:|---:|---:|"
row "clean build: configure, ninja dist (median of 3: $(echo "${t_clean1% *}, ${t_clean2% *}, ${t_clean3% *}") s)" "$t_clean" "itself" "$t_clean"
row "$kernel touched, ninja dist" "$t_touch" "clean build" "$t_clean"
row "$kernel edited (a kernel added: every target's code object changes), ninja dist" "$t_edit" "clean build" "$t_clean"
row "clean build through ccache, cache empty" "$t_cc1" "clean build" "$t_clean"
row "second clean build through ccache, new build directory ($cc_hits hits, $cc_miss misses; archive $(same "$tmp/cc2"))" "$t_cc2" "clean build" "$t_clean"
row "clean build through distcc, 2 daemons on 127.0.0.1 ($(echo $dc_jobs | tr ' ' '+') compiles sent; archive $(same "$tmp/dc"))" "$t_dc" "clean build" "$t_clean"
row "pack as the build runs it, every frame in its cache" "$t_p_all" "aot-bundle pack's default" "$t_p_default"
row "pack as the build runs it, the AMD frames in its cache (sm_90a new)" "$t_p_amd" "aot-bundle pack's default" "$t_p_default"
row "pack as the build runs it ($flags), no cache" "$t_p_none" "aot-bundle pack's default ($default_same)" "$t_p_default"
echo

# ---- decompression ----------------------------------------------------------------------
cc=$(sed -n 's/^cc = //p' "$b/build.ninja") zstd_a=$(sed -n 's/^zstd_a = //p' "$b/build.ninja")
$cc -std=c11 -O2 -I"$src/common" -I"$src/runtime/include" "$src/bench/builder/decompress_rate.c" \
    "$src"/common/bundle.c "$src"/common/hash.c "$src"/common/diag.c "$src"/common/target_id.c "$zstd_a" \
    -o "$tmp/decompress_rate"
printf 'target\tbytes\tchained\tfirst_ms\tmedian_ms\tfault_us\tzstd_ms\n' >"$out/decompress.tsv"
(cd "$b" && ./bin/aot-bundle list aiter_aot.bundle) >"$tmp/list"
frames=$(sed -n 's/^bundle .* in \([0-9]*\) frames.*/\1/p' "$tmp/list")
f=0
while [ "$f" -lt "$frames" ]; do "$tmp/decompress_rate" "$b/aiter_aot.bundle" "$f" >>"$out/decompress.tsv"; f=$((f + 1)); done
echo "| frame | bytes | first call of a process (page faults included) | decoding (median of 21 calls) | libzstd one-shot, same frame | ours / libzstd |"
echo "|---|---:|---:|---:|---:|---:|"
awk -F'\t' 'NR > 1 { printf "| %s%s | %d | %.2f ms, %.2f GB/s | %.2f ms, %.2f GB/s | %.2f ms, %.2f GB/s | %.2f |\n", $1,
    $3 == "chained" ? " (chained: its base frame decoded first)" : "", $2, $4, $2 / $4 / 1e6, $5, $2 / $5 / 1e6,
    $7, $2 / $7 / 1e6, $5 / $7 }' "$out/decompress.tsv"
echo
awk -F'\t' 'NR == 2 { printf "Touching one fresh 4 KiB page costs %.1f µs on this machine.\n\n", $6 }' "$out/decompress.tsv"

# ---- sizes ------------------------------------------------------------------------------
bundler=$(sed -n 's/^bundler = //p' "$b/build.ninja")
[ -n "$bundler" ] || { echo "no clang-offload-bundler: run tools/install-deps --bench" >&2; exit 1; }
# ccob TARGET... : bytes of clang-offload-bundler --compress, one bundle per module holding
# that module's code objects for the targets given (its defaults: zstd level 3 + LDM, CCOB v3)
ccob() {
    total=0
    for k in "$src"/kernels/*/*.hip; do
        m=$(basename "$k" .hip) ts=host-x86_64-unknown-linux-gnu ins=-input=/dev/null
        for t in "$@"; do
            case $t in
            sm_*) ts="$ts,hip-nvptx64-nvidia-cuda--$t" ins="$ins -input=$b/co/$t/$m.cubin" ;;
            *) ts="$ts,hipv4-amdgcn-amd-amdhsa--$t" ins="$ins -input=$b/co/$(printf '%s' "$t" | tr ':+' '__')/$m.co" ;;
            esac
        done
        "$bundler" -type=o -targets="$ts" $ins -output="$tmp/m.ccob" -compress
        total=$((total + $(wc -c <"$tmp/m.ccob")))
    done
    echo "$total"
}
raw() { cat "$@" | wc -c; }
kb() { awk -v n="$1" 'BEGIN { printf "%.1f KB", n / 1000 }'; }
targets=$(sed -n 's/^targets = //p' "$b/build.ninja")
amd=$(for t in $targets; do case $t in sm_*) ;; *) printf '%s ' "$t" ;; esac; done)
printf 'target\tcode_objects\tccob\tours\n' >"$out/sizes.tsv"
echo "| bundle | code objects | clang-offload-bundler --compress | aot-bundle | ours / offload-bundler | ours / code objects |"
echo "|---|---:|---:|---:|---:|---:|"
size_row() { # size_row NAME RAW CCOB OURS
    printf '| %s | %s | %s | %s | %s | %s |\n' "$1" "$(kb "$2")" "$(kb "$3")" "$(kb "$4")" "$(ratio "$4" "$3")" "$(ratio "$4" "$2")"
    printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$out/sizes.tsv"
}
co_dir() { printf '%s/co/%s' "$b" "$(printf '%s' "$1" | tr ':+' '__')"; }
for t in $targets; do
    ours=$(sed -n "s/^target .*--$t: .* \([0-9]*\) compressed\$/\1/p" "$tmp/list")
    [ -n "$ours" ] || { echo "no frame for $t in the bundle" >&2; exit 1; }
    chained=$(awk -F'\t' -v t="--$t" 'index($1, t) && $3 == "chained" { print " (chained)" }' "$out/decompress.tsv")
    size_row "$t frame$chained" "$(raw "$(co_dir "$t")"/*)" "$(ccob "$t")" "$ours"
done
(cd "$b" && ./bin/aot-bundle pack -o "$tmp/amd.bundle" $amd_args >/dev/null)
size_row "AMD targets, whole bundle" "$(raw $(for t in $amd; do echo "$(co_dir "$t")"/*; done))" \
    "$(ccob $amd)" "$(wc -c <"$tmp/amd.bundle")"
size_row "every default target, whole bundle" "$(raw "$b"/co/*/*)" "$(ccob $targets)" "$(wc -c <"$b/aiter_aot.bundle")"
echo
python3 "$root/bench/builder/plot_sizes.py" "$out/sizes.tsv" "$out/bundle_size.svg"

echo "load average at the end $(cut -d' ' -f1 /proc/loadavg); files in $out"
