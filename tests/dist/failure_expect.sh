#!/bin/sh
# failure_expect.sh LIMIT PATTERN command...
# The ctests of tests/dist/failure_*.lua (CMakeLists.txt): passes only when the
# command (an mpirun job) exits non-zero within LIMIT seconds and its output
# matches PATTERN (grep -E). Prints the job's output either way.
limit=$1
pattern=$2
shift 2
out=$(mktemp) || exit 1
start=$(date +%s)
"$@" >"$out" 2>&1
rc=$?
elapsed=$(($(date +%s) - start))
cat "$out"
echo "---- exit code $rc after $elapsed s"
fail=0
if [ "$rc" -eq 0 ]; then
  echo "FAILED: the job exited with 0; expected a non-zero exit code"
  fail=1
fi
if [ "$elapsed" -gt "$limit" ]; then
  echo "FAILED: the job took $elapsed s, more than $limit s"
  fail=1
fi
if ! grep -Eq "$pattern" "$out"; then
  echo "FAILED: no line of the output matches: $pattern"
  fail=1
fi
rm -f "$out"
exit $fail
