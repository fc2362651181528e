#!/bin/sh
# tests/mma/check-mfma.sh OBJDUMP PROBE.co... : each AMD probe code object holds the MFMA
# instructions its target should get from the portability layer (bf16 and f16 of every shape;
# the double-K shapes on gfx950 only), so no shape silently fell back to something else.
set -u
objdump=$1; shift
rc=0
for co in "$@"; do
    want="32x32x8_bf16 32x32x8_f16 16x16x16_bf16 16x16x16_f16"
    case $co in *gfx950*) want="$want 32x32x16_bf16 32x32x16_f16 16x16x32_bf16 16x16x32_f16" ;; esac
    have=$("$objdump" -d "$co" | grep -o 'v_mfma_f32_[0-9x]*_b\{0,1\}f16' | sort -u | tr '\n' ' ')
    for w in $want; do
        case " $have " in *" v_mfma_f32_$w "*) ;; *) echo "$co: no v_mfma_f32_$w (has: $have)"; rc=1 ;; esac
    done
    echo "$(basename "$co"): $have"
done
exit $rc
