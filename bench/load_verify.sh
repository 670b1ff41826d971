#!/usr/bin/env bash
# bench/load_verify.sh [ROUNDS]: is wick.load's default checksum check cheap?
# Writes a 1 GiB checkpoint, warms the page cache, then ROUNDS (default 7) times
# alternates `cat FILE > /dev/null` (the whole process, timed by the shell),
# `wick.load(FILE)` + a sum over every element (timed inside a fresh process;
# verified, the default) and the same with {verify = false}. Prints the medians,
# the ratio verified / cat (the goal: <= 1.5) and the CPU.
# BUILD_DIR (default build) picks the wick binary; WICK_NUM_THREADS applies.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build}
ROUNDS=${1:-7}
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
FILE=$DIR/load_verify.wick
cd "$ROOT"
"$BUILD/wick" bench/load_verify.lua --save "$FILE"
cat "$FILE" >/dev/null # warm
now() { date +%s.%N; }
: >"$DIR/cat" ; : >"$DIR/verify" ; : >"$DIR/noverify"
for _ in $(seq "$ROUNDS"); do
  t0=$(now); cat "$FILE" >/dev/null; t1=$(now)
  echo "$t1 - $t0" | bc >>"$DIR/cat"
  "$BUILD/wick" bench/load_verify.lua --load "$FILE" >>"$DIR/verify"
  "$BUILD/wick" bench/load_verify.lua --load "$FILE" --no-verify >>"$DIR/noverify"
done
median() { sort -g "$1" | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
c=$(median "$DIR/cat"); v=$(median "$DIR/verify"); n=$(median "$DIR/noverify")
echo "cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cpus, wick threads: ${WICK_NUM_THREADS:-default}"
echo "file: $(du -h "$FILE" | cut -f1), $ROUNDS rounds, medians:"
printf '  cat FILE > /dev/null              %.3f s\n' "$c"
printf '  wick.load + sum (verify, default) %.3f s   ratio to cat %.2f\n' "$v" "$(echo "$v / $c" | bc -l)"
printf '  wick.load + sum (verify = false)  %.3f s   ratio to cat %.2f\n' "$n" "$(echo "$n / $c" | bc -l)"
echo "  all: cat [$(tr '\n' ' ' <"$DIR/cat")] verify [$(tr '\n' ' ' <"$DIR/verify")] no-verify [$(tr '\n' ' ' <"$DIR/noverify")]"
