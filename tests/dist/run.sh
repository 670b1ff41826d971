#!/bin/sh
# run.sh command...
# The ctests of tests/dist/*.lua without expect-failure (CMakeLists.txt): runs
# the mpirun job and exits with its code. One exception, retried once: Open
# MPI 4.1's mpirun now and then reports a rank that had finished (its last
# line printed, MPI_Finalize called at exit) as "exiting improperly" when the
# machine is loaded (seen once in the ASan suite, never reproduced in 8 reruns).
# Open MPI's runtime is known to do this to programs that did finalize:
# open-mpi/ompi#7833 (a plain MPI hello world, once in 1000-2000 runs; UCX's
# CI retries for it) and #12607 (concurrent mpiruns on a loaded machine), both
# naming the rank "with PID 0". That it is the same race here is likely, not proven.
# A job that fails so twice, or fails any other way, fails the test.
out=$(mktemp) || exit 1
"$@" >"$out" 2>&1
rc=$?
cat "$out"
if [ "$rc" -ne 0 ] && grep -q "exiting improperly" "$out"; then
  echo "---- mpirun reported a rank 'exiting improperly' (exit code $rc): running the job once more"
  "$@" >"$out" 2>&1
  rc=$?
  cat "$out"
fi
rm -f "$out"
exit $rc
