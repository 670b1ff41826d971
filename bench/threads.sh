#!/usr/bin/env bash
# bench/threads.sh [ROUNDS]: do two threads help? (issue 17 item 4)
# One epoch of the MLP 784-512-256-10 (bench/train.lua "mlp": the training
# alone, batch 128, SGD momentum) at 1 and 2 threads, wick and the current
# PyTorch (the venv ../shared/bench/setup-torch.sh makes), runs alternating,
# plus wick at 2 threads with its pool never spinning (WICK_SPIN_US=0).
# Prints medians and the issue's two ratios:
#   wick 2 threads / wick 1 thread   (goal <= 0.65)
#   wick 2 threads / PyTorch 2       (goal <= 0.8)
# ROUNDS defaults to 5 (about 2 minutes on a quiet 2-core machine). Needs a quiet
# machine: on a busy one, PyTorch's OpenMP threads spin against the load
# (measured: an epoch of 166-214 s at 2 threads against 15 s at 1).
set -euo pipefail
ROUNDS=${1:-5}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build}
PYTHON=${PYTHON:-$HOME/.cache/wick-torch-venv/bin/python}
cd "$ROOT"
[ -x "$BUILD/wick" ] || { cmake -S . -B "$BUILD" >/dev/null && cmake --build "$BUILD" -j2 >/dev/null; }
[ -x "$PYTHON" ] || { echo "bench/threads.sh: no PyTorch at $PYTHON (set PYTHON=...)" >&2; exit 1; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

run() { # name threads command... -> appends the epoch time to $OUT/name
  local name=$1 threads=$2
  shift 2
  OMP_NUM_THREADS=$threads MKL_NUM_THREADS=$threads "$@" "$threads" mlp | awk '$1 == "epoch_s" { print $2 }' >>"$OUT/$name"
}

for round in $(seq "$ROUNDS"); do
  run wick1 1 "$BUILD/wick" bench/train.lua
  run torch1 1 "$PYTHON" bench/train_torch.py
  run wick2 2 "$BUILD/wick" bench/train.lua
  run torch2 2 "$PYTHON" bench/train_torch.py
  WICK_SPIN_US=0 run wick2_nospin 2 "$BUILD/wick" bench/train.lua
  echo "round $round/$ROUNDS done" >&2
done

median() { sort -g "$OUT/$1" | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
w1=$(median wick1) w2=$(median wick2) t1=$(median torch1) t2=$(median torch2) w2n=$(median wick2_nospin)
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) CPUs; $ROUNDS rounds, medians"
printf '| MLP epoch (s) | wick | PyTorch | wick / PyTorch |\n|---|---|---|---|\n'
printf '| 1 thread | %s | %s | %s |\n' "$w1" "$t1" "$(ratio "$w1" "$t1")"
printf '| 2 threads | %s | %s | %s (goal <= 0.8) |\n' "$w2" "$t2" "$(ratio "$w2" "$t2")"
printf '| 2 threads / 1 thread | %s (goal <= 0.65) | %s | |\n' "$(ratio "$w2" "$w1")" "$(ratio "$t2" "$t1")"
printf '| wick 2 threads, WICK_SPIN_US=0 | %s (%s of 1 thread) | | |\n' "$w2n" "$(ratio "$w2n" "$w1")"
