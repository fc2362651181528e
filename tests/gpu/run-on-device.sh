#!/bin/sh
# tests/gpu/run-on-device.sh [BUILDDIR] : everything that needs the NVIDIA GPU, in one go, for
# one call of the device tool (build here, carry BUILDDIR's outputs, run there):
#   device run: sh tests/gpu/run-on-device.sh build    (carry: build/tests, build/lib)
# Writes logs under $OUT when it is set.
set -u
b=$(cd "${1:-build}" && pwd)
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/aiter-aot-gpu}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/device.txt"
rc=0
echo "== GPU correctness (tests/gpu/gpu_test)"
"$b/tests/gpu/gpu_test" --mma "$b/tests/mma/mma_probe_sm_90a.cubin" > "$out/gpu_test.log" 2>&1 || rc=1
grep -v '^ok ' "$out/gpu_test.log" | tail -n 30
grep 'mma.sync' "$out/gpu_test.log"
echo "== interposition with a cu* stub loaded RTLD_GLOBAL first"
python3 bench/interpose_cuda.py "$b" 2>&1 | tee "$out/interpose.log" || rc=1
echo "== compute-sanitizer memcheck (quick cases)"
compute-sanitizer --tool memcheck --error-exitcode 9 "$b/tests/gpu/gpu_test" --quick > "$out/memcheck.log" 2>&1 || rc=1
tail -n 3 "$out/memcheck.log"
echo "== cold start"
python3 bench/coldstart.py "$b" 10 2>&1 | tee "$out/coldstart.log" || rc=1
echo "== benchmarks"
python3 bench/bench_moe.py "$b/lib/libaiter_aot.so" "$out" 2>&1 | tee "$out/bench.log" || rc=1
python3 bench/bench_mhc.py "$b/lib/libaiter_aot.so" "$out" 2>&1 | tee "$out/bench_mhc.log" || rc=1
echo "gpu run exit status $rc"
exit $rc
