#!/bin/sh
# The hostile-argument sweep (spec/sweep_spec.lua) in chunks, each in its own
# process under `timeout`, so that a case that kills the process (a signal, an
# ASan report) or hangs is recorded and the sweep resumes after it.
#
#   tools/sweep.sh [-r RUNNER] [-l LUA_DIR] [-c CHUNK] [-t SECONDS] [-o LOG]
#
#   -r  the wick runner to use (default build/wick)
#   -l  the lua/ folder wick is loaded from (default: lua/ next to this script)
#   -c  cases per chunk (default 20000); -t  seconds a chunk may take (default 120):
#       a chunk that runs out of time counts its case in flight as a hang
#   -o  where the cases that were not clean go, one line each (default sweep.log)
#   WICK_SWEEP_SAMPLE=N runs every N-th case only.
# Prints the counts: calls, clean errors (at the caller's line), successes,
# crashes (process died), hangs, errors not at the caller's line.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
runner=$here/build/wick
luadir=$here/lua
chunk=20000
limit=120
log=sweep.log
while getopts r:l:c:t:o: opt; do
  case $opt in
    r) runner=$OPTARG ;; l) luadir=$OPTARG ;; c) chunk=$OPTARG ;; t) limit=$OPTARG ;; o) log=$OPTARG ;;
    *) sed -n 6,16p "$0"; exit 2 ;;
  esac
done
spec=$here/spec/sweep_spec.lua
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
: > "$log"
export LUA_PATH="$luadir/?.lua;$luadir/?/init.lua;;"
export ASAN_OPTIONS="${ASAN_OPTIONS:-allocator_may_return_null=1:protect_shadow_gap=0:detect_leaks=0}"

from=1 total=0 clean=0 success=0 misplaced=0 hang=0 crash=0 lua_hang=0 unavail=0
start=$(date +%s)
while :; do
  to=$((from + chunk - 1))
  WICK_SWEEP_FROM=$from WICK_SWEEP_TO=$to timeout -s KILL "$limit" "$runner" "$spec" > "$out" 2> "$out.err"
  rc=$?
  n=$(sed -n 's/^N //p' "$out" | head -n 1)
  if [ -z "$n" ]; then
    echo "sweep.sh: the chunk from case $from did not start (exit $rc):" >&2
    tail -n 5 "$out.err" >&2
    rm -f "$out.err"
    exit 1
  fi
  # counts of this chunk's finished cases
  eval "$(awk '$1 == "R" { c[$3]++ } END { printf "c_clean=%d c_success=%d c_misplaced=%d c_hang=%d c_unavail=%d\n", c["clean"], c["success"], c["misplaced"], c["hang"], c["unavailable"] }' "$out")"
  clean=$((clean + c_clean)) success=$((success + c_success)) misplaced=$((misplaced + c_misplaced)) lua_hang=$((lua_hang + c_hang)) unavail=$((unavail + c_unavail))
  grep '^M ' "$out" | cut -c3- >> "$log"
  if grep -q '^DONE' "$out"; then
    [ "$to" -ge "$n" ] && break
    from=$((to + 1))
    continue
  fi
  # the process died: the case begun and not finished is the culprit
  last=$(awk '$1 == "B" { b = $2 } $1 == "R" { r = $2 } END { if (b != r) print b }' "$out")
  what=$(awk -v n="$last" '$1 == "B" && $2 == n { $1 = ""; $2 = ""; sub(/^  /, ""); print }' "$out")
  if [ -z "$last" ]; then
    echo "sweep.sh: the chunk from case $from died outside a case (exit $rc):" >&2
    tail -n 5 "$out.err" >&2
    exit 1
  fi
  if [ "$rc" -eq 137 ] || [ "$rc" -eq 124 ]; then
    hang=$((hang + 1)); echo "$last $what HANG (no result within ${limit}s)" >> "$log"
  else
    crash=$((crash + 1))
    why=$(grep -m 1 -E 'ERROR: AddressSanitizer|runtime error|Segmentation|Aborted|PANIC|panic' "$out.err" | cut -c1-200)
    echo "$last $what CRASH (exit $rc) ${why}" >> "$log"
  fi
  from=$((last + 1))
  [ "$from" -gt "$n" ] && break
done
rm -f "$out.err"
hang=$((hang + lua_hang))
calls=$((clean + success + misplaced + hang + crash))
echo "sweep over $n cases (sample 1/${WICK_SWEEP_SAMPLE:-1}), $(( $(date +%s) - start )) s, runner $runner, lua $luadir"
printf '%-40s %8s\n' "calls" "$calls" "clean errors (at the caller's line)" "$clean" "successes" "$success" \
  "crashes (process died)" "$crash" "hangs" "$hang" "errors not at the caller's line" "$misplaced" \
  "(cases skipped: receiver not buildable)" "$unavail"
echo "details: $log"
