#!/usr/bin/env bash
# tools/gpu-check.sh [TIER...]: the checks that need a GPU, in tiers, on a GPU
# machine that has no Lua of its own.
#
#   quick      preflight, the op specs on CUDA (cuda, device, data_parallel),
#              the C tests (test_backends, test_cuda_runtime, test_core), the
#              matmul benchmark; fits one 10-minute device command: 8 minutes
#              at most, by the budget below
#   full       = suite examples sanitizer nccl bench (longer than one 10-minute
#              device command: on a device, run the tiers one per command)
#   suite      preflight, every spec/*_spec.lua, the C tests
#   examples   examples/tensors.lua; examples/fashion_mnist.lua --device cuda, MLP
#              and CNN, one epoch (needs FASHION_MNIST_DIR, i.e. the data set
#              carried along as EXTRA_DEBS=dataset-fashion-mnist; skipped otherwise)
#   sanitizer  compute-sanitizer under WICK_CUDA_CACHING=0 (every block its own
#              cudaMalloc, so overflows are seen; the build has -lineinfo):
#              memcheck on the op specs and test_cuda_runtime, racecheck and
#              synccheck on spec/cuda_spec.lua
#   bench      every GPU benchmark against PyTorch (bench/gpu.sh all)
#   nccl       preflight, wick.distributed's NCCL backend: test_dist_nccl (its host
#              logic, where carried: gpu-prepare.sh leaves it to CI), then tests/dist/nccl.lua in a world of one process per GPU
#              under mpirun (Open MPI carried in .devdeps by gpu-prepare.sh; a
#              world of one without it): every collective for every dtype against
#              values each rank computes alone. It fails unless every rank prints
#              its "checks passed" line; NCCL missing is "skipped", never "ok".
#              libnccl.so.2 is looked for on the library path, in CUDA's folders
#              and in the Python environment's nvidia-nccl package
#              (WICK_NCCL_LIBRARY overrides). Budget: preflight 20, test_dist_nccl
#              30, nccl world 150: 200 + 3 x 5 kill = 215 s. Prepare it with
#              tools/gpu-prepare.sh --no-data (with the data set the carry is
#              over 64 MiB)
#
# The quick tier's budget (seconds; each step runs under `timeout -k 5 LIMIT`,
# so a step costs at most LIMIT + 5):
#
#   step                    limit  + kill
#   preflight                  20      5
#   spec cuda_spec            110      5
#   spec device_spec           45      5
#   spec data_parallel_spec    45      5
#   test_backends              75      5
#   test_cuda_runtime          30      5
#   test_core                  30      5
#   bench matmul               85      5
#   total                     440 +   40 = 480 s = 8 min
#
# The sanitizer tier's (under WICK_CUDA_CACHING=0; fits one command too):
# preflight 20, memcheck cuda_spec 130, device_spec 60, data_parallel_spec 60,
# memcheck test_cuda_runtime 60, racecheck cuda_spec 115, synccheck cuda_spec
# 90: 535 + 7 x 5 kill = 570 s = 9.5 min, also its deadline.
#
# On top of the per-step limits, the whole run has a deadline (BUDGET_S seconds
# from the start; else 480 for quick alone, 570 for sanitizer alone, else none
# beyond the steps' own limits): a step gets at most what is left, and a step
# with under 10 s left is not run (and counted as failed), so one hang cannot
# push the run past the device command's 10 minutes.
# STEP_TIMEOUT (seconds) overrides every step's limit.
#
# Prepare here, on a machine with nvcc, in the project root: tools/gpu-prepare.sh
# (fetches .devdeps, builds the CUDA build with -lineinfo, keeps in build-gpu/
# only what runs there, checks that every shared library is carried and the 64
# MiB carry limit); rehearse it without a GPU: tools/gpu-rehearse.sh. Then one
# device run carrying [".devdeps", "build-gpu"]:
#   source .devdeps/env.sh; OUT=$OUT tools/gpu-check.sh quick
#
# What comes back: with OUT set, exactly two files: $OUT/summary.md and
# $OUT/gpu-check-logs.tar.gz (every step's full log); without OUT, the same two
# in build-gpu/ (gpu-check-summary.md, gpu-check-logs.tar.gz) and the logs in
# build-gpu/gpu-check-logs/. Both are rewritten after every step, so a run cut
# short still leaves them. The summary (per step: status, seconds, and the FIRST
# failing case with its message: busted's first "not ok" and its failure
# message, the first FAIL / "check failed" of the C tests, the first
# compute-sanitizer error with its stack; the last lines only for a timeout or
# crash), with the table of steps at its end, is printed to standard output
# last, after the progress lines on stderr (also when the run is cut short by
# TERM/INT/HUP). Exit status: 0 when every step passed (or was skipped); a step
# not run for lack of budget counts as failed.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 2
BUILD=${BUILD_DIR:-build-gpu}
WICK=$BUILD/wick
WORK=$(mktemp -d) # scratch that does not travel back (checkpoints of the examples, logs under OUT)
trap 'rm -rf "$WORK"' EXIT
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT" || exit 2
  SUMMARY=$OUT/summary.md ARCHIVE=$OUT/gpu-check-logs.tar.gz LOGS=$WORK/gpu-check-logs
else
  SUMMARY=$BUILD/gpu-check-summary.md ARCHIVE=$BUILD/gpu-check-logs.tar.gz LOGS=$BUILD/gpu-check-logs
  rm -rf "$LOGS"
fi
mkdir -p "$LOGS" || exit 2
T_START=$(date +%s)
case $BUILD in /*) BUILD_ABS=$BUILD ;; *) BUILD_ABS=$ROOT/$BUILD ;; esac
# the build, and the packages' /lib folder (zlib1g and libtinfo6 install there;
# .devdeps/env.sh puts only /opt/devdeps/usr/lib/... on the path)
export LD_LIBRARY_PATH="$BUILD_ABS:/opt/devdeps/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export WICK BUILD

TIERS=("$@")
[ ${#TIERS[@]} -eq 0 ] && TIERS=(quick)
STEPS=()
for t in "${TIERS[@]}"; do
  case $t in
    quick) STEPS+=(preflight opspecs ctests bench-matmul) TIER_BUDGET=480 ;;
    full) STEPS+=(preflight suite ctests examples sanitizer nccl bench-all) ;;
    suite) STEPS+=(preflight suite ctests) ;;
    examples) STEPS+=(preflight examples) ;;
    sanitizer) STEPS+=(preflight sanitizer) TIER_BUDGET=570 ;;
    bench) STEPS+=(preflight bench-all) ;;
    nccl) STEPS+=(preflight nccl) TIER_BUDGET=215 ;;
    *) echo "usage: tools/gpu-check.sh [quick|full|suite|examples|sanitizer|bench|nccl]..." >&2; exit 2 ;;
  esac
done

# the deadline: BUDGET_S, else the tier's budget (quick 480 s, sanitizer 570 s) when it runs
# alone, else no cap but the steps' own
if [ -n "${BUDGET_S:-}" ]; then DEADLINE=$((T_START + BUDGET_S))
elif [ ${#TIERS[@]} -eq 1 ] && [ -n "${TIER_BUDGET:-}" ]; then DEADLINE=$((T_START + TIER_BUDGET))
else DEADLINE=$((T_START + 86400)); fi

# ---- the busted script: a file, or the shell function of .devdeps/env.sh ----
find_busted() {
  local c
  for c in "${BUSTED_SCRIPT:-}" "$(declare -f busted 2>/dev/null | grep -o '/[^ ";]*/busted' | head -1)" \
      /opt/devdeps/usr/bin/busted "$(command -v busted 2>/dev/null)" /usr/bin/busted; do
    if [ -n "$c" ] && [ -f "$c" ] && grep -q "busted" "$c" 2>/dev/null; then echo "$c"; return 0; fi
  done
  return 1
}
BUSTED=$(find_busted || true)

SANITIZER=$(command -v compute-sanitizer 2>/dev/null || true)
for c in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
  [ -z "$SANITIZER" ] && [ -x "$c" ] && SANITIZER=$c
done

# ---- the summary: a table of steps, then each step's key lines ----
ROWS=$WORK/rows
DETAILS=$WORK/details
: >"$ROWS"
: >"$DETAILS"
FAILED=0
STARTED=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
GPU=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | paste -sd';' - || true)
REV=$(git rev-parse --short HEAD 2>/dev/null || cat "$BUILD/revision.txt" 2>/dev/null || echo "unknown")

# the summary: the steps' first failures and key lines, then the table of steps
# last (the end of the output is what a cut-short view of it keeps)
write_summary() {
  {
    echo "# GPU check: ${TIERS[*]}"
    echo
    if [ -s "$DETAILS" ]; then
      echo "## First failing case (or key lines) of each step"
      echo
      cat "$DETAILS"
    fi
    echo "## Steps"
    echo
    echo "- started: $STARTED; last update: $(date -u '+%H:%M:%S UTC'); elapsed: $(($(date +%s) - T_START)) s"
    echo "- GPU: ${GPU:-none found by nvidia-smi}"
    echo "- build: $BUILD (runner $WICK); commit: $REV"
    echo "- busted: ${BUSTED:-not found}; compute-sanitizer: ${SANITIZER:-not found}"
    echo "- full logs: $ARCHIVE"
    echo
    echo "| step | status | seconds | result |"
    echo "|---|---|---|---|"
    cat "$ROWS"
    echo
    echo "failed steps: $FAILED"
  } >"$WORK/summary.tmp" && mv -f "$WORK/summary.tmp" "$SUMMARY"
}

# the first failing case of a log, with its message, by the kind of step (rc: the step's status)
first_failure() { # kind log rc
  local kind=$1 log=$2 rc=$3
  case $kind in
    spec|sanitizer)
      # busted's TAP: "not ok N - name", then "# file @ line", "# Failure message: ..." and more "#" lines
      awk '/^not ok [0-9]+/ { if (seen) exit; seen = 1; print; n = 0; next }
           seen && /^#/ && n < 12 { print; n++; next }
           seen { exit }' "$log"
      ;;
  esac
  case $kind in
    sanitizer)
      # the first error report: its "=========" lines up to the next blank report line
      awk '/^========= (Invalid|Program hit|Race|Uninitialized|Barrier|Error|Warning|Potential|.*[Hh]azard)/ { if (seen) exit; seen = 1 }
           seen && /^========= *$/ { exit }
           seen && /^=========/ { print; if (++n >= 14) exit; next }
           seen { exit }' "$log"
      grep -m2 -E 'ERROR SUMMARY|LEAK SUMMARY|RACECHECK SUMMARY' "$log"
      ;;
    spec) ;; # its "not ok" block above
    ctest) grep -m1 -E '^FAIL |check failed' "$log"; grep -E '^test_[a-z_]+: ' "$log" | tail -n 2 ;;
    bench) grep -E '^(\||###|GPU:|wick:|no CUDA)' "$log"; grep -m1 -E 'failed|error|Error' "$log" ;;
    *) if [ "$rc" -ne 0 ]; then grep -m1 -E '^(wick|lua|luajit): |[Ee]rror' "$log"; else tail -n 12 "$log"; fi ;;
  esac
  [ "$rc" -eq 77 ] && return 0 # skipped: its own line says why
  # no case named but a failure: an error line, else where it stopped (a crash, a hang)
  if [ "$rc" -ne 0 ] && [ "$kind" != bench ] && ! grep -qE '^not ok |^FAIL |check failed|^========= [A-Z]' "$log"; then
    grep -m1 -E '^(wick|lua|luajit): |Segmentation|Aborted|out of memory|error' "$log"
    echo "... last lines:"
    tail -n 6 "$log"
  fi
}

tap_totals() { # log -> "P passed, S skipped (pending), F failed"
  awk '/^ok [0-9]+ - # SKIP/ { s++; next } /^ok [0-9]+/ { p++ } /^not ok [0-9]+/ { f++ }
       END { printf "%d passed, %d skipped (pending), %d failed\n", p, s, f }' "$1"
}

# step NAME KIND TIMEOUT CMD...: runs CMD under timeout, logs it, records it.
step() {
  local name=$1 kind=$2 limit=${STEP_TIMEOUT:-$3}
  shift 3
  local left=$((DEADLINE - $(date +%s) - 5))
  if [ $left -lt 10 ]; then
    FAILED=$((FAILED + 1)) # not checked: counts as a failure
    echo "| $name | NOT RUN | 0 | no time left in the run's budget |" >>"$ROWS"
    echo "   -> $name not run: no time left in the run's budget" >&2
    write_summary
    return
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  local log
  log=$LOGS/$(printf '%s' "$name" | tr -c 'A-Za-z0-9_.-' '_').log
  local shown=${SHOWN:-$*}
  echo "== $name: $shown" >&2
  local t0 t1 rc=0
  t0=$(date +%s.%N)
  # in the background and waited for, so that a TERM to this script is handled at once
  timeout -k 5 "$limit" "$@" >"$log" 2>&1 </dev/null &
  CHILD=$!
  wait "$CHILD" || rc=$?
  CHILD=""
  t1=$(date +%s.%N)
  local secs result
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
  case $kind in
    spec|sanitizer) result=$(tap_totals "$log")
      grep -qE '^(not )?ok [0-9]+' "$log" || result=$(grep -E '^test_[a-z_]+: ' "$log" | tail -n 1 | cut -c1-120 | tr '|' '/')
      [ "$kind" = sanitizer ] && result="$result; $(grep -m1 -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | sed 's/^=* *//')"
      ;;
    ctest) result=$(grep -E '^test_[a-z_]+: ' "$log" | tail -n 1 | cut -c1-160 | tr '|' '/') ;;
    bench)
      if grep -q '^no CUDA GPU' "$log"; then result=$(grep -m1 '^no CUDA GPU' "$log")
      else result=$(grep -c '^| ' "$log" | awk '{ print $1 " table rows (below)" }'); fi
      ;;
    *)
      # the error when it failed, else the last line
      if [ $rc -ne 0 ] && grep -qE '^(wick|lua|luajit): ' "$log"; then
        result=$(grep -E '^(wick|lua|luajit): ' "$log" | head -1 | cut -c1-160 | tr '|' '/')
      else
        result=$(tail -n 1 "$log" | cut -c1-160 | tr '|' '/')
      fi
      ;;
  esac
  # a spec run that counted no test at all did not run
  if [ "$kind" = spec ] || [ "$kind" = sanitizer ] && [ "${SPEC_STEP:-0}" = 1 ]; then :; fi
  if [ "$kind" = spec ] && ! grep -qE '^(not )?ok [0-9]+' "$log" && [ $rc -eq 0 ]; then rc=1; fi
  local status="ok"
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then status="TIMEOUT (${limit}s)"
  elif [ $rc -eq 77 ]; then status="skipped" # the C tests' (and ctest's) code for "cannot run here"
  elif [ $rc -ne 0 ]; then status="FAILED ($rc)"; fi
  case $status in ok|skipped) ;; *) FAILED=$((FAILED + 1)) ;; esac
  echo "| $name | $status | $secs | $result |" >>"$ROWS"
  local first
  first=$(first_failure "$kind" "$log" "$rc" | cut -c1-300 | head -40)
  if [ -n "$first" ]; then # a block only where there is something to say (keeps the summary short)
    {
      echo "### $name: $status, ${secs}s"
      echo
      echo "command: \`$shown\`"
      echo
      echo '```'
      printf '%s\n' "$first"
      echo '```'
      echo
    } >>"$DETAILS"
  fi
  echo "   -> $status (${secs}s): $result" >&2
  write_summary
  archive
}

# the logs, as one archive next to the summary (rewritten after every step)
archive() {
  tar -czf "$WORK/logs.tar.gz" -C "$(dirname "$LOGS")" "$(basename "$LOGS")" 2>/dev/null &&
    mv -f "$WORK/logs.tar.gz" "$ARCHIVE"
}

# skip NAME WHY: records a step that could not run here
skip() {
  echo "| $1 | skipped | 0 | $2 |" >>"$ROWS"
  echo "   -> $1 skipped: $2" >&2
  write_summary
}

spec() { # spec file, through busted under the wick runner
  if [ -z "$BUSTED" ]; then skip "spec $(basename "$1" .lua)" "busted not found (source .devdeps/env.sh first)"; return; fi
  step "spec $(basename "$1" .lua)" spec "${2:-300}" "$WICK" "$BUSTED" --helper=spec/helper.lua -o TAP "$1"
}

# what the machine has: the GPU, the runtime, libraries the runner lacks, what wick sees
preflight_body() {
  echo "nvidia-smi:"
  nvidia-smi -L 2>&1 || echo "  (no nvidia-smi, or no GPU)"
  echo "LuaJIT version: $(luajit -v 2>&1 | head -1)"
  echo "shared libraries not found (the runner, the C tests, luajit, the Lua C modules):"
  local f
  for f in "$WICK" "$BUILD"/test_* "$(command -v luajit)" $(find /opt/devdeps/usr/lib -path '*lua/5.1/*.so' 2>/dev/null); do
    [ -f "$f" ] && ldd "$f" 2>&1 | grep "not found" | sed "s|^|  $f: |"
  done
  echo "  (end)"
  echo "wick sees:"
  "$WICK" -e 'local w = require("wick")
    print("  cuda.is_available", w.cuda.is_available(), "device_count", w.cuda.device_count())'
}
preflight() {
  SHOWN="nvidia-smi -L; luajit -v; ldd $WICK; wick.cuda.is_available()" \
    step "preflight" info 20 bash -c "$(declare -f preflight_body); preflight_body"
}

OPSPECS=(spec/cuda_spec.lua spec/device_spec.lua spec/data_parallel_spec.lua)

# ---- NCCL: where libnccl.so.2 and mpirun are on this machine ----
# libnccl.so.2: WICK_NCCL_LIBRARY, else the library path and the system cache
# (nothing to set), else CUDA's folders, else the nvidia-nccl package of the
# Python that has PyTorch; prints the file to set WICK_NCCL_LIBRARY to, or nothing
find_nccl() {
  [ -n "${WICK_NCCL_LIBRARY:-}" ] && { echo "$WICK_NCCL_LIBRARY"; return 0; }
  local d py
  for d in ${LD_LIBRARY_PATH//:/ }; do [ -e "$d/libnccl.so.2" ] && return 0; done
  ldconfig -p 2>/dev/null | grep -q 'libnccl\.so\.2 ' && return 0
  for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -e "$d/libnccl.so.2" ] && { echo "$d/libnccl.so.2"; return 0; }
  done
  for py in python3 /opt/torch/.venv/bin/python3; do
    d=$("$py" -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null) &&
      [ -e "$d/libnccl.so.2" ] && { echo "$d/libnccl.so.2"; return 0; }
  done
  return 1
}
# mpirun: the system's, else Open MPI carried in .devdeps (unpacked in
# /opt/devdeps by env.sh; relocated there with OPAL_PREFIX)
find_mpirun() {
  local c
  if [ -x /opt/devdeps/usr/bin/orterun ]; then
    echo /opt/devdeps/usr/bin/orterun
    return 0
  fi
  for c in mpirun mpiexec orterun mpirun.openmpi; do command -v "$c" >/dev/null 2>&1 && { command -v "$c"; return 0; }; done
  return 1
}
# runs tests/dist/nccl.lua in a world of $1 processes ($2: the launcher, or
# empty for a world of one without one); exit 0 only when every rank printed
# its "checks passed" line, 77 when the test skipped (its "skipped: " line says
# why), else 1
nccl_world_body() {
  local n=$1 launcher=$2 out rc=0
  out=$(mktemp)
  echo "world of $n: ${launcher:-no mpirun, one process}; WICK_NCCL_LIBRARY=${WICK_NCCL_LIBRARY:-(library path)};" \
    "NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-} NCCL_DEBUG=${NCCL_DEBUG:-}"
  if [ -n "$launcher" ]; then
    "$launcher" --allow-run-as-root --oversubscribe -np "$n" "$WICK" tests/dist/nccl.lua >"$out" 2>&1 || rc=$?
  else
    "$WICK" tests/dist/nccl.lua >"$out" 2>&1 || rc=$?
  fi
  cat "$out"
  local passed
  passed=$(grep -cE '^\[rank [0-9]+\] nccl: [0-9]+ checks passed' "$out")
  if [ "$rc" -eq 0 ] && grep -q '^skipped: ' "$out"; then
    echo "nccl: skipped ($(grep -m1 '^skipped: ' "$out"))"; rm -f "$out"; return 77
  fi
  rm -f "$out"
  if [ "$rc" -ne 0 ] || [ "$passed" -ne "$n" ]; then
    echo "nccl: FAILED (exit $rc, $passed of $n ranks passed)"; return 1
  fi
  echo "nccl: $n rank(s) passed"
}
nccl_step() {
  if [ -x "$BUILD/test_dist_nccl" ]; then step "test_dist_nccl" ctest 30 "$BUILD/test_dist_nccl"
  else skip "test_dist_nccl" "not carried (host logic only: it runs in CI)"; fi
  local lib gpus launcher
  if lib=$(find_nccl); then
    [ -n "$lib" ] && export WICK_NCCL_LIBRARY=$lib
  fi
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
  [ "$gpus" -ge 1 ] || gpus=1
  if launcher=$(find_mpirun); then
    # Open MPI unpacked away from its build prefix finds its plugins and orted here
    [ "$launcher" = /opt/devdeps/usr/bin/orterun ] && export OPAL_PREFIX=/opt/devdeps/usr
  else
    launcher="" gpus=1
  fi
  # one machine: NCCL's bootstrap on the loopback interface (the device machine has no
  # network beyond itself), and NCCL's warnings in the log
  export NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo} NCCL_DEBUG=${NCCL_DEBUG:-WARN}
  SHOWN="${launcher:-(no mpirun)} -np $gpus $WICK tests/dist/nccl.lua" \
    step "nccl world of $gpus" info 150 bash -c "$(declare -f nccl_world_body); nccl_world_body $gpus '$launcher'"
}

run_step() {
  case $1 in
    preflight)
      if [ ! -x "$WICK" ]; then
        skip preflight "no runner at $WICK: prepare it first (tools/gpu-prepare.sh)"
      else preflight; fi
      ;;
    opspecs) spec spec/cuda_spec.lua 110; spec spec/device_spec.lua 45; spec spec/data_parallel_spec.lua 45 ;;
    suite) for s in spec/*_spec.lua; do spec "$s" 300; done ;;
    ctests)
      for t in test_backends test_cuda_runtime test_core; do
        local limit=30
        [ $t = test_backends ] && limit=75
        if [ -x "$BUILD/$t" ]; then step "$t" ctest $limit "$BUILD/$t"
        else skip "$t" "$BUILD/$t is not built"; fi
      done
      ;;
    examples)
      step "examples/tensors.lua" info 120 "$WICK" examples/tensors.lua
      # the profiler's CUDA event timing: matmuls on the GPU get a non-zero device
      # time (profiler_spec), and --profile's table PyTorch's CUDA columns
      spec spec/profiler_spec.lua 30
      SHOWN="$WICK examples/gpt.lua --device cuda --profile $WORK/gpt-profile.json | grep 'Self CUDA time total'" \
        step "examples/gpt.lua --profile cuda" info 120 bash -c "'$WICK' examples/gpt.lua --device cuda --profile \
          '$WORK/gpt-profile.json' 2>&1 | tee /dev/stderr | grep -q 'Self CUDA time total: '"
      local data=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
      if [ -f "$data/train-images-idx3-ubyte.gz" ] || [ -f "$data/train-images-idx3-ubyte" ]; then
        for model in mlp cnn; do
          step "examples/fashion_mnist.lua $model cuda" info 300 env FASHION_MNIST_DIR="$data" \
            "$WICK" examples/fashion_mnist.lua --model "$model" --device cuda --epochs 1 --checkpoint "$WORK/fmnist-$model.wick"
        done
      else
        skip "examples/fashion_mnist.lua" "no Fashion-MNIST files (carry them: EXTRA_DEBS=dataset-fashion-mnist ../shared/device/fetch-runtime.sh)"
      fi
      ;;
    sanitizer)
      if [ -z "$SANITIZER" ]; then skip "compute-sanitizer" "compute-sanitizer not found"
      elif [ -z "$BUSTED" ]; then skip "compute-sanitizer" "busted not found"
      else
        # every block its own cudaMalloc (see src/cuda/cuda_caching.h), so the tools see its bounds.
        # Memory access errors only: the specs run out of GPU memory on purpose (a clear error,
        # then recovery), which memcheck would count as API errors; wick checks every CUDA
        # call's result itself (wk_cuda_check), so an unexpected one fails the spec anyway
        local MEMCHECK_OPTS="--report-api-errors no --error-exitcode 99 --print-limit 100"
        local s limit
        for s in "${OPSPECS[@]}"; do
          limit=60
          [ "$s" = spec/cuda_spec.lua ] && limit=130
          step "memcheck $(basename "$s" .lua)" sanitizer $limit env WICK_CUDA_CACHING=0 "$SANITIZER" --tool memcheck \
            $MEMCHECK_OPTS "$WICK" "$BUSTED" --helper=spec/helper.lua -o TAP "$s"
        done
        if [ -x "$BUILD/test_cuda_runtime" ]; then
          step "memcheck test_cuda_runtime" sanitizer 60 env WICK_CUDA_CACHING=0 "$SANITIZER" --tool memcheck \
            $MEMCHECK_OPTS "$BUILD/test_cuda_runtime"
        fi
        for tool in racecheck synccheck; do
          limit=115
          [ $tool = synccheck ] && limit=90
          step "$tool cuda_spec" sanitizer $limit env WICK_CUDA_CACHING=0 "$SANITIZER" --tool $tool \
            --error-exitcode 99 --print-limit 100 "$WICK" "$BUSTED" --helper=spec/helper.lua -o TAP spec/cuda_spec.lua
        done
      fi
      ;;
    nccl) nccl_step ;;
    bench-matmul) step "bench matmul" bench 85 bash bench/gpu.sh matmul ;;
    bench-all) step "bench all" bench 540 bash bench/gpu.sh all ;;
  esac
}

# cut short (the device command's limit, ^C): the summary still comes out last
CHILD=""
interrupted() {
  [ -n "$CHILD" ] && kill -TERM "$CHILD" 2>/dev/null
  echo "| (interrupted) | STOPPED | - | the run was stopped from outside during the step above/next |" >>"$ROWS"
  FAILED=$((FAILED + 1))
  echo "== interrupted" >&2
  write_summary
  archive
  cat "$SUMMARY"
  rm -rf "$WORK"
  exit 3
}
trap interrupted TERM INT HUP

write_summary
archive
DONE=" "
for s in "${STEPS[@]}"; do
  case $DONE in *" $s "*) continue ;; esac # each step once, also when tiers overlap
  DONE="$DONE$s "
  run_step "$s"
done
echo "summary: $SUMMARY, logs: $ARCHIVE ($FAILED failed step(s), $(($(date +%s) - T_START)) s)" >&2
cat "$SUMMARY" # last, so that the tail of the output is the summary
[ $FAILED -eq 0 ]
