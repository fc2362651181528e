#!/bin/sh
# tests/gpu/run-on-device.sh [BUILDDIR [PART]] : everything that needs the NVIDIA GPU, for a run
# on a GPU machine (build here, copy BUILDDIR's outputs there, run there):
#   on the GPU machine: sh tests/gpu/run-on-device.sh build   (with build/tests and build/lib)
# PART runs one part, for machines that limit a command's time (each takes a few minutes):
#   tests (gpu_test, several devices, interposition), sanitizers (memcheck, racecheck),
#   bench (cold start and every benchmark); all of them when left out.
# Writes logs under $OUT when it is set; BENCH_FMHA_ARGS is passed on to bench_fmha.py (e.g.
# --compare NAME=PATH to time another build of the library in the same process).
set -u
b=$(cd "${1:-build}" && pwd)
part=${2:-all}
case $part in all | tests | sanitizers | bench) ;; *) echo "run-on-device.sh: PART is tests, sanitizers or bench, not '$part'" >&2; exit 2 ;; esac
runs() { [ "$part" = all ] || [ "$part" = "$1" ]; }
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/aiter-aot-gpu}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/device.txt"
rc=0
if runs tests; then
echo "== GPU correctness (tests/gpu/gpu_test)"
"$b/tests/gpu/gpu_test" --mma "$b/tests/mma/mma_probe_sm_90a.cubin" > "$out/gpu_test.log" 2>&1 || rc=1
grep -v '^ok ' "$out/gpu_test.log" | tail -n 30
grep 'mma.sync' "$out/gpu_test.log"
echo "== several devices: per-device loading under concurrency (tests/gpu/multi_device)"
"$b/tests/gpu/multi_device" > "$out/multi_device.log" 2>&1 || rc=1
cat "$out/multi_device.log"
n=$(grep -c '^ordinal' "$out/multi_device.log")
if [ "$n" -ge 2 ]; then
    order=$(seq $((n - 1)) -1 0 | paste -sd,)
    echo "== the same under CUDA_VISIBLE_DEVICES=$order"
    CUDA_VISIBLE_DEVICES=$order "$b/tests/gpu/multi_device" > "$out/multi_device_rev.log" 2>&1 || rc=1
    cat "$out/multi_device_rev.log"
    # ordinal i of the reversed run must be ordinal n-1-i of the plain one
    a=$(grep '^ordinal' "$out/multi_device.log" | sed 's/.*bus //' | tac | paste -sd,)
    r=$(grep '^ordinal' "$out/multi_device_rev.log" | sed 's/.*bus //' | paste -sd,)
    [ "$a" = "$r" ] && echo "ok   device order follows CUDA_VISIBLE_DEVICES ($r)" || { echo "FAIL device order: $r, want $a"; rc=1; }
else
    echo "note: $n device: the CUDA_VISIBLE_DEVICES reordering run needs 2 or more (not run)"
fi
echo "== interposition with a cu* stub loaded RTLD_GLOBAL first"
python3 bench/interpose_cuda.py "$b" 2>&1 | tee "$out/interpose.log" || rc=1
fi
if runs sanitizers; then
echo "== compute-sanitizer memcheck (quick cases)"
compute-sanitizer --tool memcheck --error-exitcode 9 "$b/tests/gpu/gpu_test" --quick > "$out/memcheck.log" 2>&1 || rc=1
tail -n 3 "$out/memcheck.log"
# The one-pass mHC kernel hands shared memory between waves by mbarriers. Its outputs cannot show
# a missing wait (at T = 8200 an owner that skipped its wait for a free batch buffer still gave
# right outputs), racecheck does (2 hazards for that mutation, 2026-12-04). About 3 minutes.
echo "== compute-sanitizer racecheck of the one-pass mHC kernels, *pre_cluster_c* (quick cases, T = 8200 among them)"
compute-sanitizer --tool racecheck --error-exitcode 9 --kernel-name kns=pre_cluster_c "$b/tests/gpu/gpu_test" --quick > "$out/racecheck.log" 2>&1 || rc=1
tail -n 2 "$out/racecheck.log"
# The decode kernels stage the residual tile and the waves' sums in shared memory between
# block barriers. (Told to check only these, racecheck has stopped at the first one-pass case
# with an internal error about a hardware exception, after the decode cases: README.)
echo "== compute-sanitizer racecheck of the mHC decode kernels, mhc_decode* (quick mHC cases)"
compute-sanitizer --tool racecheck --error-exitcode 9 --kernel-name kns=mhc_decode "$b/tests/gpu/gpu_test" --only=mhc --quick > "$out/racecheck_decode.log" 2>&1 || rc=1
tail -n 2 "$out/racecheck_decode.log"
# FMHA's warp-specialized kernels hand K, V and Q tiles between the producer warp and the two
# consumer groups by mbarriers, and the groups take turns by named barriers (seconds).
echo "== compute-sanitizer racecheck of fmha_ws_* (quick FMHA cases)"
compute-sanitizer --tool racecheck --error-exitcode 9 --kernel-name kns=fmha_ws "$b/tests/gpu/gpu_test" --only=fmha --quick > "$out/racecheck_fmha.log" 2>&1 || rc=1
tail -n 2 "$out/racecheck_fmha.log"
fi
if runs bench; then
echo "== cold start"
python3 bench/coldstart.py "$b" 20 3 2>&1 | tee "$out/coldstart.log" || rc=1
echo "== benchmarks"
python3 bench/bench_moe.py "$b/lib/libaiter_aot.so" "$out" 2>&1 | tee "$out/bench.log" || rc=1
python3 bench/bench_mhc.py "$b/lib/libaiter_aot.so" "$out" 2>&1 | tee "$out/bench_mhc.log" || rc=1
python3 bench/bench_mhc_layer.py "$b/lib/libaiter_aot.so" "$out" 2>&1 | tee "$out/bench_mhc_layer.log" || rc=1
python3 bench/bench_fmha.py "$b/lib/libaiter_aot.so" "$out" ${BENCH_FMHA_ARGS:-} 2>&1 | tee "$out/bench_fmha.log" || rc=1
fi
echo "gpu run ($part) exit status $rc"
exit $rc
