#!/usr/bin/env bash
# tools/gpu-check.sh [TIER...]: the checks that need a GPU, in tiers that each
# fit a few minutes, on a GPU machine that has no Lua of its own.
#
#   quick      preflight, the op specs on CUDA (cuda, device, data_parallel),
#              the C tests (test_backends, test_cuda_runtime), the matmul benchmark
#   full       = suite examples sanitizer bench (run the parts separately when one
#              command may not take that long)
#   suite      preflight, every spec/*_spec.lua, the C tests
#   examples   examples/tensors.lua; examples/fashion_mnist.lua --device cuda, MLP
#              and CNN, one epoch (needs FASHION_MNIST_DIR, i.e. the data set
#              carried along as EXTRA_DEBS=dataset-fashion-mnist; skipped otherwise)
#   sanitizer  compute-sanitizer (memcheck) on the op specs
#   bench      every GPU benchmark against PyTorch (bench/gpu.sh all)
#
# Prepare on a machine with nvcc, in the project root: tools/gpu-prepare.sh
# (fetches .devdeps, builds the CUDA build, keeps in build-gpu/ only what runs
# here, checks the 64 MiB carry limit), then one device run carrying
# [".devdeps", "build-gpu"]:
#   source .devdeps/env.sh; tools/gpu-check.sh quick
#
# Run from the project root after `source .devdeps/env.sh` (see
# ../shared/device/README.md), with the CUDA build in build-gpu/ (BUILD_DIR to
# change it). Every step runs under `timeout` (STEP_TIMEOUT seconds overrides the
# per-step defaults) and a failing step does not stop the others. A summary
# (per step: command, status, seconds, key lines: busted totals, benchmark
# tables, compute-sanitizer error counts) goes to $OUT/summary.md when OUT is
# set, else to build-gpu/gpu-check-summary.md; it is rewritten after every
# step, so a run cut short still leaves one. Full logs go next to it, in
# gpu-check-logs/. Exit status: 0 when every step passed (or was skipped).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 2
BUILD=${BUILD_DIR:-build-gpu}
WICK=$BUILD/wick
if [ -n "${OUT:-}" ]; then
  SUMMARY=$OUT/summary.md LOGS=$OUT/gpu-check-logs
else
  SUMMARY=$BUILD/gpu-check-summary.md LOGS=$BUILD/gpu-check-logs
fi
mkdir -p "$LOGS" || exit 2
WORK=$(mktemp -d) # scratch that does not travel back (checkpoints of the examples)
trap 'rm -rf "$WORK"' EXIT
case $BUILD in /*) BUILD_ABS=$BUILD ;; *) BUILD_ABS=$ROOT/$BUILD ;; esac
export LD_LIBRARY_PATH="$BUILD_ABS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export WICK

TIERS=("$@")
[ ${#TIERS[@]} -eq 0 ] && TIERS=(quick)
STEPS=()
for t in "${TIERS[@]}"; do
  case $t in
    quick) STEPS+=(preflight opspecs ctests bench-matmul) ;;
    full) STEPS+=(preflight suite ctests examples sanitizer bench-all) ;;
    suite) STEPS+=(preflight suite ctests) ;;
    examples) STEPS+=(preflight examples) ;;
    sanitizer) STEPS+=(preflight sanitizer) ;;
    bench) STEPS+=(preflight bench-all) ;;
    *) echo "usage: tools/gpu-check.sh [quick|full|suite|examples|sanitizer|bench]..." >&2; exit 2 ;;
  esac
done

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
REV=$(git rev-parse --short HEAD 2>/dev/null || echo "unknown")

write_summary() {
  {
    echo "# GPU check: ${TIERS[*]}"
    echo
    echo "- started: $STARTED; last update: $(date -u '+%H:%M:%S UTC')"
    echo "- GPU: ${GPU:-none found by nvidia-smi}"
    echo "- build: $BUILD (runner $WICK); commit: $REV (plus the working tree's changes)"
    echo "- busted: ${BUSTED:-not found}; compute-sanitizer: ${SANITIZER:-not found}"
    echo "- failed steps so far: $FAILED; full logs: $LOGS/"
    echo
    echo "| step | status | seconds | result |"
    echo "|---|---|---|---|"
    cat "$ROWS"
    echo
    cat "$DETAILS"
  } >"$SUMMARY.tmp" && mv "$SUMMARY.tmp" "$SUMMARY"
}

# key lines of a log, by the kind of step
key_lines() { # kind log
  local kind=$1 log=$2
  case $kind in
    spec)
      grep -E '^not ok ' "$log" | head -30
      grep -E '^# (Failure message|.*_spec\.lua @)' "$log" | head -30
      grep -vE '^(not )?ok ' "$log" | grep -E '^(wick: |lua: |luajit: )|Segmentation|Aborted|out of memory' | head -10
      ;;
    bench) grep -E '^(\||###|GPU:|wick:|no CUDA|bench/gpu.sh)' "$log" ;;
    sanitizer)
      grep -E 'ERROR SUMMARY|LEAK SUMMARY' "$log"
      grep -E '^========= (Invalid|Program hit|Race|Uninitialized|Error)' "$log" | sort | uniq -c | sort -rn | head -15
      tap_totals "$log"
      ;;
    *) tail -n 15 "$log" ;;
  esac
}

tap_totals() { # log -> "P passed, S skipped (pending), F failed"
  awk '/^ok [0-9]+ - # SKIP/ { s++; next } /^ok [0-9]+/ { p++ } /^not ok [0-9]+/ { f++ }
       END { printf "%d passed, %d skipped (pending), %d failed\n", p, s, f }' "$1"
}

# step NAME KIND TIMEOUT CMD...: runs CMD under timeout, logs it, records it.
step() {
  local name=$1 kind=$2 limit=${STEP_TIMEOUT:-$3}
  shift 3
  local log
  log=$LOGS/$(printf '%s' "$name" | tr -c 'A-Za-z0-9_.-' '_').log
  local shown=${SHOWN:-$*}
  echo "== $name: $shown" >&2
  local t0 t1 rc=0
  t0=$(date +%s.%N)
  timeout -k 15 "$limit" "$@" >"$log" 2>&1 </dev/null || rc=$?
  t1=$(date +%s.%N)
  local secs result
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
  case $kind in
    spec|sanitizer) result=$(tap_totals "$log") ;;
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
  if [ "$kind" = spec ] && ! grep -qE '^(not )?ok [0-9]+' "$log" && [ $rc -eq 0 ]; then rc=1; fi
  local status="ok"
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then status="TIMEOUT (${limit}s)"
  elif [ $rc -eq 77 ]; then status="skipped" # the C tests' (and ctest's) code for "cannot run here"
  elif [ $rc -ne 0 ]; then status="FAILED ($rc)"; fi
  case $status in ok|skipped) ;; *) FAILED=$((FAILED + 1)) ;; esac
  echo "| $name | $status | $secs | $result |" >>"$ROWS"
  {
    echo "### $name: $status, ${secs}s"
    echo
    echo "command: \`$shown\`"
    echo
    echo '```'
    key_lines "$kind" "$log" | cut -c1-300 | head -80
    echo '```'
    echo
  } >>"$DETAILS"
  echo "   -> $status (${secs}s): $result" >&2
  write_summary
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
  echo "luajit: $(luajit -v 2>&1 | head -1)"
  echo "libraries of $WICK not found:"
  ldd "$WICK" 2>&1 | grep "not found" || echo "  none"
  echo "wick sees:"
  "$WICK" -e 'local w = require("wick")
    print("  cuda.is_available", w.cuda.is_available(), "device_count", w.cuda.device_count())'
}
preflight() {
  SHOWN="nvidia-smi -L; luajit -v; ldd $WICK; wick.cuda.is_available()" \
    step "preflight" info 120 bash -c "$(declare -f preflight_body); preflight_body"
}

OPSPECS=(spec/cuda_spec.lua spec/device_spec.lua spec/data_parallel_spec.lua)

run_step() {
  case $1 in
    preflight)
      if [ ! -x "$WICK" ]; then
        skip preflight "no runner at $WICK: prepare it first (tools/gpu-prepare.sh)"
      else preflight; fi
      ;;
    opspecs) for s in "${OPSPECS[@]}"; do spec "$s" 300; done ;;
    suite) for s in spec/*_spec.lua; do spec "$s" 300; done ;;
    ctests)
      for t in test_backends test_cuda_runtime test_core; do
        if [ -x "$BUILD/$t" ]; then step "$t" info 300 "$BUILD/$t"
        else skip "$t" "$BUILD/$t is not built"; fi
      done
      ;;
    examples)
      step "examples/tensors.lua" info 120 "$WICK" examples/tensors.lua
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
        for s in "${OPSPECS[@]}"; do
          step "compute-sanitizer memcheck $(basename "$s" .lua)" sanitizer 300 "$SANITIZER" --tool memcheck \
            --error-exitcode 99 --print-limit 200 "$WICK" "$BUSTED" --helper=spec/helper.lua -o TAP "$s"
        done
      fi
      ;;
    bench-matmul) step "bench matmul" bench 300 bash bench/gpu.sh matmul ;;
    bench-all) step "bench all" bench 540 bash bench/gpu.sh all ;;
  esac
}

write_summary
DONE=" "
for s in "${STEPS[@]}"; do
  case $DONE in *" $s "*) continue ;; esac # each step once, also when tiers overlap
  DONE="$DONE$s "
  run_step "$s"
done
echo "summary: $SUMMARY ($FAILED failed step(s))" >&2
[ $FAILED -eq 0 ]
