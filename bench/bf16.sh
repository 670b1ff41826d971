#!/usr/bin/env bash
# bench/bf16.sh [RUNS]: bfloat16 and float16 matrix products (bench/bf16.lua,
# its cases there), wick against PyTorch (oneDNN) at 1 thread and at 2, runs
# alternating (bench/pair.sh: ms per product, medians over RUNS, default 3;
# wick / PyTorch below 1: wick is faster). CASES=bf16,bf16_NT picks cases;
# WICK_BF16_KERNEL / WICK_NO_AVX512_16BIT pick wick's kernel (docs/api.md).
set -euo pipefail
HERE=$(dirname "${BASH_SOURCE[0]}")
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-);$(grep -o -w 'avx512_bf16\|avx512_fp16\|amx_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')"
for t in ${BF16_THREADS:-1 2}; do
  THREADS=$t "$HERE/pair.sh" bf16 "${1:-3}"
done
