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
/usr/bin/python3 bench/checkpoint_torch.py "$DIR/t.pt" >"$DIR/torch.tsv"
"$BUILD/wick" bench/checkpoint.lua --load "$DIR/t.pt" >"$DIR/wick_pt.tsv"
now() { date +%s.%N; }
cat "$DIR/w.wick" >/dev/null # warm
best=999
for _ in 1 2 3; do t0=$(now); cat "$DIR/w.wick" >/dev/null; t1=$(now); best=$(awk -v a="$best" -v b="$(echo "$t1 - $t0" | bc)" 'BEGIN { print (b < a ? b : a) }'); done
t0=$(now); dd if=/dev/zero of="$DIR/raw" bs=1M count=1024 conv=fsync status=none; t1=$(now)
raw_write=$(echo "$t1 - $t0" | bc)
get() { awk -v n="$2" '$1 == n { print $2 }' "$1"; }
ws=$(get "$DIR/wick.tsv" save_s); wl=$(get "$DIR/wick.tsv" load_touch_s)
ts=$(get "$DIR/torch.tsv" save_s); tl=$(get "$DIR/torch.tsv" load_touch_s)
printf '| 1 GiB state dict | wick | torch | raw | wick / raw | wick / torch |\n|---|---|---|---|---|---|\n'
printf '| save (s) | %.3f | %.3f | %.3f (dd + fsync) | %.2f | %.2f |\n' "$ws" "$ts" "$raw_write" "$(echo "$ws / $raw_write" | bc -l)" "$(echo "$ws / $ts" | bc -l)"
printf '| load + touch every element (s) | %.3f | %.3f | %.3f (cat, warm) | %.2f | %.2f |\n' "$wl" "$tl" "$best" "$(echo "$wl / $best" | bc -l)" "$(echo "$wl / $tl" | bc -l)"
wp=$(get "$DIR/wick_pt.tsv" load_touch_s)
printf '| wick.load of the torch.save file, + touch (s) | %.3f | %.3f | %.3f (cat of w.wick) | %.2f | %.2f |\n' "$wp" "$tl" "$best" "$(echo "$wp / $best" | bc -l)" "$(echo "$wp / $tl" | bc -l)"
