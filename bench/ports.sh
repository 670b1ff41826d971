#!/usr/bin/env bash
# bench/ports.sh [RUNS]: the ports of issue 16 against the current PyTorch (PyPI)
# on the same machine, 1 thread, runs alternating between the two; prints
# medians and ratios. RUNS defaults to 3; PORTS="lm" or "resnet" runs one.
#  * LSTM language model: one epoch of pytorch/examples word_language_model's
#    main.py at its defaults (LSTM 2 x 200, batch 20, bptt 35) on a corpus made
#    from /usr/share/common-licenses (bench/ports.lua lm / ports_torch.py lm);
#  * ResNet-18 on Fashion-MNIST: 20 timed SGD steps of batch 64 (after one
#    warm-up step), RESNET_STEPS / RESNET_BATCH change them.
set -euo pipefail
RUNS=${1:-3}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build}
PYTHON=${PYTHON:-$HOME/.cache/wick-torch-venv/bin/python} # the current PyTorch from PyPI: ../shared/bench/setup-torch.sh makes it
cd "$ROOT"
[ -x "$BUILD/wick" ] || { cmake -S . -B "$BUILD" >/dev/null && cmake --build "$BUILD" -j2 >/dev/null; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 BLIS_NUM_THREADS=1 MKL_NUM_THREADS=1
"$BUILD/wick" bench/ports.lua 1 prepare "$OUT/corpus"

run() { # side what -> appends name<TAB>value lines to $OUT/side.what
  local side=$1 what=$2
  if [ "$side" = wick ]; then "$BUILD/wick" bench/ports.lua 1 "$what" "$OUT/corpus"
  else "$PYTHON" bench/ports_torch.py 1 "$what" "$OUT/corpus"; fi >>"$OUT/$side.$what"
}

for _ in $(seq "$RUNS"); do
  for what in ${PORTS:-lm resnet}; do run wick "$what"; run torch "$what"; done
done

median() { # file name
  awk -v n="$2" '$1 == n { print $2 }' "$1" | sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}
row() { # label what name
  local w t
  w=$(median "$OUT/wick.$2" "$3"); t=$(median "$OUT/torch.$2" "$3")
  printf '| %s: %s | %s | %s | %s |\n' "$1" "$3" "$w" "$t" "$(awk -v a="$w" -v b="$t" 'BEGIN { printf "%.2f", a / b }')"
}
printf '| benchmark (1 thread, median of %d) | wick | PyTorch | wick / PyTorch |\n|---|---|---|---|\n' "$RUNS"
[ -f "$OUT/wick.lm" ] && for name in epoch_s epoch_cpu_s ms_per_batch mean_loss; do row "LSTM LM epoch" lm "$name"; done
[ -f "$OUT/wick.resnet" ] && for name in ms_per_step cpu_ms_per_step images_per_s last_loss; do row "ResNet-18 Fashion-MNIST" resnet "$name"; done
true
