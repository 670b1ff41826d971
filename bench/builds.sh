#!/usr/bin/env bash
# bench/builds.sh OLD_BUILD NEW_BUILD SCRIPT [ROUNDS]: a change measured
# before and after: `OLD_BUILD/wick SCRIPT` and `NEW_BUILD/wick SCRIPT` run
# alternating (the order flips each round), ROUNDS (default 5) each. SCRIPT
# prints `name<TAB>value` lines (bench/gemm_shapes.lua: GFLOP/s); prints per
# name both medians and the median of the rounds' new/old ratios. The old
# build is a worktree of the commit before, e.g.
#   git worktree add /tmp/old HEAD~1 && cmake -S /tmp/old -B /tmp/old/build && cmake --build /tmp/old/build -j2
#   WICK_NUM_THREADS=2 bench/builds.sh /tmp/old/build build bench/gemm_shapes.lua
set -euo pipefail
OLD=$1 NEW=$2 SCRIPT=$3 ROUNDS=${4:-5}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then order="old new"; else order="new old"; fi
  for side in $order; do
    dir=$OLD; [ "$side" = new ] && dir=$NEW
    "$dir/wick" "$SCRIPT" >"$OUT/$side.$r"
  done
done
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'); $ROUNDS rounds alternating; threads ${WICK_NUM_THREADS:-default}"
printf '| %s | old | new | new / old |\n|---|---|---|---|\n' "$(basename "$SCRIPT")"
for name in $(cut -f1 "$OUT/new.1"); do
  vals() { for r in $(seq "$ROUNDS"); do awk -F'\t' -v n="$name" '$1 == n { print $2 }' "$OUT/$1.$r"; done; }
  median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
  o=$(vals old | median) n=$(vals new | median)
  q=$(paste <(vals old) <(vals new) | awk '{ printf "%.4f\n", $2 / $1 }' | median)
  printf '| %s | %s | %s | %.2f |\n' "$name" "$o" "$n" "$q"
done
