#!/usr/bin/env bash
# bench/checkpoint.sh: save and load of a 1 GiB state dict, wick against
# torch.save/torch.load and against cat-ing (and dd-writing) the same bytes.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build}
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 BLIS_NUM_THREADS=1
cd "$ROOT"
"$BUILD/wick" bench/checkpoint.lua "$DIR/w.wick" >"$DIR/wick.tsv"
: >"$DIR/torch.tsv"
: >"$DIR/wick_pt.tsv"
PYTHON=${PYTHON:-$HOME/.cache/wick-torch-venv/bin/python}
if "$PYTHON" -c 'import torch' 2>/dev/null; then # without PyTorch: its columns say "-"
  "$PYTHON" bench/checkpoint_torch.py "$DIR/t.pt" >"$DIR/torch.tsv"
  "$BUILD/wick" bench/checkpoint.lua --load "$DIR/t.pt" >"$DIR/wick_pt.tsv"
fi
now() { date +%s.%N; }
cat "$DIR/w.wick" >/dev/null # warm
best=999
for _ in 1 2 3; do t0=$(now); cat "$DIR/w.wick" >/dev/null; t1=$(now); best=$(awk -v a="$best" -v b="$(echo "$t1 - $t0" | bc)" 'BEGIN { print (b < a ? b : a) }'); done
t0=$(now); dd if=/dev/zero of="$DIR/raw" bs=1M count=1024 conv=fsync status=none; t1=$(now)
raw_write=$(echo "$t1 - $t0" | bc)
get() { awk -v n="$2" '$1 == n { v = $2 } END { print (v == "" ? "-" : v) }' "$1"; }
num() { awk -v v="$1" -v f="$2" 'BEGIN { if (v == "-") print "-"; else printf f, v }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-") print "-"; else printf "%.2f", a / b }'; }
ws=$(get "$DIR/wick.tsv" save_s); wl=$(get "$DIR/wick.tsv" load_touch_s)
ts=$(get "$DIR/torch.tsv" save_s); tl=$(get "$DIR/torch.tsv" load_touch_s)
printf '| 1 GiB state dict | wick | torch | raw | wick / raw | wick / torch |\n|---|---|---|---|---|---|\n'
printf '| save (s) | %.3f | %s | %.3f (dd + fsync) | %s | %s |\n' "$ws" "$(num "$ts" %.3f)" "$raw_write" "$(ratio "$ws" "$raw_write")" "$(ratio "$ws" "$ts")"
printf '| load + touch every element (s) | %.3f | %s | %.3f (cat, warm) | %s | %s |\n' "$wl" "$(num "$tl" %.3f)" "$best" "$(ratio "$wl" "$best")" "$(ratio "$wl" "$tl")"
wp=$(get "$DIR/wick_pt.tsv" load_touch_s)
if [ "$wp" != - ]; then
  printf '| wick.load of the torch.save file, + touch (s) | %.3f | %s | %.3f (cat of w.wick) | %s | %s |\n' "$wp" "$(num "$tl" %.3f)" "$best" "$(ratio "$wp" "$best")" "$(ratio "$wp" "$tl")"
fi
printf '| 4,000 tensors of 64 floats: save (s) | %s | - | - | - | - |\n' "$(num "$(get "$DIR/wick.tsv" save_small_s)" %.4f)"
printf '| 4,000 tensors of 64 floats: load + touch (s) | %s | - | - | - | - |\n' "$(num "$(get "$DIR/wick.tsv" load_small_s)" %.4f)"
