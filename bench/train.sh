#!/usr/bin/env bash
# bench/train.sh [RUNS]: the training benchmarks of issue 3, wick against
# the current PyTorch (PyPI) on the same machine and thread count, runs alternating between
# the two; prints medians and ratios. RUNS defaults to 5.
set -euo pipefail
RUNS=${1:-5}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build}
PYTHON=${PYTHON:-$HOME/.cache/wick-torch-venv/bin/python} # the current PyTorch from PyPI: ../shared/bench/setup-torch.sh makes it
cd "$ROOT"
[ -x "$BUILD/wick" ] || { cmake -S . -B "$BUILD" >/dev/null && cmake --build "$BUILD" -j2 >/dev/null; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

run() { # threads side what -> appends name<TAB>value lines to $OUT/side.threads.what
  local threads=$1 side=$2 what=$3
  export OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads BLIS_NUM_THREADS=$threads
  if [ "$side" = wick ]; then "$BUILD/wick" bench/train.lua "$threads" "$what"
  else "$PYTHON" bench/train_torch.py "$threads" "$what"; fi >>"$OUT/$side.$threads.$what"
}

for threads in 1 2; do
  for _ in $(seq "$RUNS"); do run "$threads" wick epoch; run "$threads" torch epoch; done
done
for _ in $(seq 3); do run 1 wick step; run 1 torch step; done

median() { # file name
  awk -v n="$2" '$1 == n { print $2 }' "$1" | sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}
printf '| benchmark | wick | PyTorch | wick / PyTorch |\n|---|---|---|---|\n'
for threads in 1 2; do
  for name in epoch_s matmul_s accuracy peak_rss_mb; do
    w=$(median "$OUT/wick.$threads.epoch" $name); t=$(median "$OUT/torch.$threads.epoch" $name)
    printf '| MLP epoch, %d thread(s): %s | %s | %s | %s |\n' "$threads" "$name" "$w" "$t" "$(awk -v a="$w" -v b="$t" 'BEGIN { printf "%.2f", a / b }')"
  done
  w=$(median "$OUT/wick.$threads.epoch" epoch_s); m=$(median "$OUT/wick.$threads.epoch" matmul_s)
  t=$(median "$OUT/torch.$threads.epoch" epoch_s); tm=$(median "$OUT/torch.$threads.epoch" matmul_s)
  printf '| MLP epoch, %d thread(s): outside matrix products (s) | %s | %s | %s |\n' "$threads" \
    "$(awk -v a="$w" -v b="$m" 'BEGIN { printf "%.3f", a - b }')" "$(awk -v a="$t" -v b="$tm" 'BEGIN { printf "%.3f", a - b }')" \
    "$(awk -v a="$w" -v b="$m" -v c="$t" -v d="$tm" 'BEGIN { printf "%.2f", (a - b) / (c - d) }')"
done
for name in step_us peak_rss_mb; do
  w=$(median "$OUT/wick.1.step" $name); t=$(median "$OUT/torch.1.step" $name)
  printf '| batch-1 step of a 32-32-1 MLP: %s | %s | %s | %s |\n' "$name" "$w" "$t" "$(awk -v a="$w" -v b="$t" 'BEGIN { printf "%.3f", a / b }')"
done
