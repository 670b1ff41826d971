#!/bin/sh
# Runs each fuzz target for SECONDS seconds (fuzz/README.md); `make fuzz` and
# `make fuzz-long` call it after building the targets.
#   fuzz/run.sh SECONDS [BUILD_DIR]      (FUZZ_TARGETS="native pytorch" to pick)
# Per target: first the inputs in fuzz/regressions/<target>-* (each must load
# without a finding), then libFuzzer on a working corpus BUILD_DIR/corpus/<target>
# seeded from fuzz/corpus/<target>. Logs go to BUILD_DIR/logs/<target>.log,
# crashing inputs to BUILD_DIR/artifacts/<target>/. Exits 1 if any target
# found something.
set -u
seconds=${1:?usage: fuzz/run.sh SECONDS [BUILD_DIR]}
build=${2:-build-fuzz}
targets=${FUZZ_TARGETS:-native safetensors pytorch numpy pytorch_c flat idx}
root=$(cd "$(dirname "$0")/.." && pwd)
case $build in /*) ;; *) build=$(pwd)/$build ;; esac

# Any allocation of 1 GiB or more is a finding: no input of this size needs one,
# so it is a size claimed by the file and not checked against it. The malloc
# limit catches 1 GiB..1 TiB; allocator_may_return_null=0 (ASan's default, unlike
# the specs' ctest setting) makes the larger ones, which ASan refuses before the
# limit sees them, a report too instead of a quiet "out of memory" error.
export ASAN_OPTIONS="allocator_may_return_null=0:detect_leaks=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
flags="-rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=10 -print_final_stats=1"

mkdir -p "$build/logs"
failed=""
for t in $targets; do
  bin="$build/fuzz_$t"
  log="$build/logs/$t.log"
  art="$build/artifacts/$t"
  work="$build/corpus/$t"
  mkdir -p "$art" "$work"
  if [ ! -x "$bin" ]; then
    echo "fuzz_$t: $bin is missing (build it: make fuzz)"
    failed="$failed $t"
    continue
  fi
  : >"$log"
  regressions=$(ls "$root/fuzz/regressions/$t"-* 2>/dev/null || true)
  if [ -n "$regressions" ]; then
    # shellcheck disable=SC2086
    if ! "$bin" $flags $regressions >>"$log" 2>&1; then
      echo "fuzz_$t: FAILED on a known regression input (fuzz/regressions/$t-*); end of $log:"
      tail -n 60 "$log"
      failed="$failed $t"
      continue
    fi
  fi
  # shellcheck disable=SC2086
  "$bin" $flags -max_total_time="$seconds" -dict="$root/fuzz/dict/$t.dict" -artifact_prefix="$art/" \
    "$work" "$root/fuzz/corpus/$t" >>"$log" 2>&1
  rc=$?
  last=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
  if [ "$rc" -ne 0 ]; then
    echo "fuzz_$t: FAILED (exit $rc) after $last"
    echo "  input: $(sed -n 's/.*Test unit written to //p' "$log" | tail -n 1); end of $log:"
    tail -n 80 "$log"
    failed="$failed $t"
  else
    echo "fuzz_$t: ok, ${seconds}s, ${speed:-?} exec/s, $last"
  fi
done
if [ -n "$failed" ]; then
  echo "fuzz: findings or failures in:$failed (fuzz/README.md says how to reproduce)"
  exit 1
fi
