#!/bin/sh
# run-fuzz.sh ROOT OUTDIR : builds each fuzz target with libFuzzer (clang-22, ASan, UBSan) and
# runs it for FUZZ_SECONDS (default 600) on FUZZ_JOBS processes (default 1), starting from the
# tree's corpus (tests/fuzz/corpus/NAME) and adding what it finds under OUTDIR/corpus/NAME.
# FUZZ_TARGETS picks targets (default: bundle codeobj metadata). Findings: OUTDIR/NAME/crash-*.
set -eu
root=$1 out=$2
cc=${FUZZ_CC:-clang-22}
secs=${FUZZ_SECONDS:-600} jobs=${FUZZ_JOBS:-1}
flags="-std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
  -I$root/common -I$root/runtime/include -I$root/runtime/src -I$root/tools/lib -I$root/tests/unit"
common="$root/common/hash.c $root/common/diag.c $root/common/target_id.c"
src_bundle="$root/tests/fuzz/fuzz_bundle.c $root/runtime/src/load_frame.c $root/common/bundle.c $common"
src_codeobj="$root/tests/fuzz/fuzz_codeobj.c $root/tools/lib/codeobj.c $root/tools/lib/msgpack.c $root/common/bundle.c $common"
src_metadata="$root/tests/fuzz/fuzz_metadata.c $root/tools/lib/codeobj.c $root/tools/lib/msgpack.c $root/common/bundle.c $common"
for t in ${FUZZ_TARGETS:-bundle codeobj metadata}; do
    mkdir -p "$out/$t" "$out/corpus/$t"
    eval src=\$src_$t
    # shellcheck disable=SC2086
    $cc $flags -o "$out/$t/fuzz_$t" $src -lelf -lzstd
    par=""
    [ "$jobs" -gt 1 ] && par="-jobs=$jobs -workers=$jobs" # each job logs to fuzz-N.log
    # shellcheck disable=SC2086
    (cd "$out/$t" && "./fuzz_$t" -max_total_time="$secs" $par \
        -rss_limit_mb=4096 -print_final_stats=1 "$out/corpus/$t" "$root/tests/fuzz/corpus/$t") \
        >"$out/$t/log" 2>&1 || { tail -40 "$out/$t/log"; echo "fuzz_$t: FINDING (see $out/$t)"; exit 1; }
    cat "$out/$t"/fuzz-*.log >>"$out/$t/log" 2>/dev/null || true
    grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' "$out/$t/log" || true
    grep -E 'cov: ' "$out/$t/log" | tail -1
    echo "fuzz_$t: $secs s, no finding"
done
