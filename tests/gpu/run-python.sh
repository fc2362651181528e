#!/bin/sh
# tests/gpu/run-python.sh [WHEEL [CUSTUB]] : the Python package on the GPU machine. Installs the
# wheel (built here by make python from an sm_90a build) with pip into a scratch folder, no
# virtual environment (the machine's python3 is the one with torch; a --system-site-packages venv
# would not see it), then runs tests/gpu/test_python.py and bench/bench_python.py.
#   sh tests/gpu/run-python.sh dist/python/aiter_aot-0.1.0-cp39-abi3-linux_x86_64.whl build/tests/interpose/libcustub.so
# Logs under $OUT when it is set.
set -u
cd "$(dirname "$0")/../.."
whl=${1:-$(ls dist/python/aiter_aot-*.whl | head -n 1)}
stub=${2:-build/tests/interpose/libcustub.so}
out=${OUT:-/tmp/aiter-aot-gpu}
site=$(mktemp -d)
mkdir -p "$out"
export PYTHONUNBUFFERED=1
if [ ! -f "$stub" ]; then  # the cu* stub of tests/interpose, built here when not copied along
    stub=$site/libcustub.so
    cc -shared -fPIC -o "$stub" tests/interpose/custub.c || exit 1
fi
python3 -m pip install -q --no-deps --no-index --target "$site" "$whl" 2>&1 | grep -v "as the 'root' user" | tee "$out/pip.log"
PYTHONPATH=$site python3 -c "import sys, aiter_aot; print('python', sys.version.split()[0], 'aiter_aot', aiter_aot.version(), aiter_aot.targets())" || exit 1
rc=0
echo "== tests/gpu/test_python.py"
PYTHONPATH=$site python3 tests/gpu/test_python.py "$stub" 2>&1 | tee "$out/test_python.log" | grep -v '^ok ' 
grep -q ' 0 failed' "$out/test_python.log" || rc=1
echo "== bench/bench_python.py"
lib=${AITER_AOT_LIB:-build/lib/libaiter_aot.so}
PYTHONPATH=$site python3 bench/bench_python.py "$lib" 2>&1 | tee "$out/bench_python.log" || rc=1
echo "python run exit status $rc"
exit $rc
