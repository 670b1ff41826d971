#!/usr/bin/env bash
# bench/gpu.sh [all|matmul|train|ops]...: the GPU benchmarks, wick and PyTorch on
# the same GPU in one run, printed as markdown tables with ratios and peak GPU
# memory. Each side is its own process (bench/gpu_*.lua under the wick runner,
# bench/gpu_*_torch.py under python3); every timing synchronizes the GPU before
# reading the clock.
#   matmul  TFLOP/s of n x n products, float32 / TF32 / bfloat16, n = 1024..8192
#           (goal: wick >= 95% of PyTorch)
#   train   one epoch of the Fashion-MNIST MLP and CNN, batch 64, on synthetic
#           data of the data set's shape, data on the GPU ("resident") and through
#           a pinned DataLoader ("loader") (goal: wick's epoch <= PyTorch eager's)
#   ops     host overhead per op on 1-element tensors, in microseconds
#           (goal: wick's below PyTorch's)
# Environment: BUILD_DIR (default build-gpu, else build): the CUDA build whose
# `wick` runner is used; PYTHON (default python3); MATMUL_SIZES (default
# 1024,2048,4096,8192). Without a GPU it prints "no CUDA GPU: skipped" and exits 0.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 2
if [ -n "${BUILD_DIR:-}" ]; then BUILD=$BUILD_DIR
elif [ -x build-gpu/wick ]; then BUILD=build-gpu
else BUILD=build; fi
WICK=$BUILD/wick
PYTHON=${PYTHON:-python3}
SIZES=${MATMUL_SIZES:-1024,2048,4096,8192}
case $BUILD in /*) BUILD_ABS=$BUILD ;; *) BUILD_ABS=$ROOT/$BUILD ;; esac
export LD_LIBRARY_PATH="$BUILD_ABS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# PyTorch brings its own CUDA libraries: keep the Lua runtime's folders
# (/opt/devdeps, see .devdeps/env.sh) and the wick build out of its search path.
PY_LD=$(printf '%s' "$LD_LIBRARY_PATH" | tr ':' '\n' | grep -v -e '^/opt/devdeps' -e "^$BUILD_ABS\$" | paste -sd: -)

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "no CUDA GPU: skipped"
  exit 0
fi
if [ ! -x "$WICK" ]; then
  echo "bench/gpu.sh: no wick runner at $WICK (prepare the CUDA build: tools/gpu-prepare.sh)" >&2
  exit 1
fi
if ! timeout 60 "$WICK" -e 'os.exit(require("wick").cuda.is_available() and 0 or 3)' >/dev/null 2>&1; then
  echo "no CUDA GPU: skipped (wick.cuda.is_available() is false for $WICK: a build without CUDA?)"
  exit 0
fi

WHAT=("$@")
[ ${#WHAT[@]} -eq 0 ] && WHAT=(all)
wants() { local w; for w in "${WHAT[@]}"; do [ "$w" = all ] || [ "$w" = "$1" ] && return 0; done; return 1; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
STATUS=0

# run NAME side cmd...: name<TAB>value lines into $TMP/NAME.side; stderr passes through
run() {
  local name=$1 side=$2
  shift 2
  local rc=0
  if [ "$side" = torch ]; then
    LD_LIBRARY_PATH="$PY_LD" "$@" >"$TMP/$name.$side" || rc=$?
  else
    "$@" >"$TMP/$name.$side" || rc=$?
  fi
  if [ $rc -ne 0 ]; then
    echo "bench/gpu.sh: $name ($side) failed with status $rc" >&2
    STATUS=1
  fi
}
value() { awk -F'\t' -v n="$2" '$1 == n { print $2; exit }' "$TMP/$1" 2>/dev/null; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "n/a"; else printf "%.2f", a / b }'; }
show() { [ -n "$1" ] && printf '%s' "$1" || printf 'n/a'; }
peak_row() { # label name
  local w t
  w=$(value "$2.wick" peak_mem_mb); t=$(value "$2.torch" peak_mem_mb)
  printf '| %s | %s | %s | %s |\n' "$1" "$(show "$w")" "$(show "$t")" "$(ratio "$w" "$t")"
}
PEAKS=()

echo "GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -1)"
echo "wick: $WICK; PyTorch: $(LD_LIBRARY_PATH="$PY_LD" "$PYTHON" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)' 2>/dev/null || echo "not available")"
echo

if wants matmul; then
  run matmul wick "$WICK" bench/gpu_matmul.lua "$SIZES"
  run matmul torch "$PYTHON" bench/gpu_matmul_torch.py "$SIZES"
  echo "### Matrix products (TFLOP/s, higher is better; goal: wick / PyTorch >= 0.95)"
  echo
  echo "| kind | n | wick | PyTorch | wick / PyTorch |"
  echo "|---|---|---|---|---|"
  for kind in float32 tf32 bfloat16; do
    for n in ${SIZES//,/ }; do
      w=$(value matmul.wick "matmul_${kind}_$n"); t=$(value matmul.torch "matmul_${kind}_$n")
      printf '| %s | %s | %s | %s | %s |\n' "$kind" "$n" "$(show "$w")" "$(show "$t")" "$(ratio "$w" "$t")"
    done
  done
  echo
  PEAKS+=("matmul:matmul")
fi

if wants train; then
  for model in mlp cnn; do
    for mode in resident loader; do
      run "train_${model}_$mode" wick "$WICK" bench/gpu_train.lua "$model" "$mode" 64
      run "train_${model}_$mode" torch "$PYTHON" bench/gpu_train_torch.py "$model" "$mode" 64
    done
  done
  echo "### One training epoch, batch 64, 60000 synthetic 1x28x28 images (seconds, lower is better; goal: wick / PyTorch <= 1)"
  echo
  echo "| model | data | wick s | PyTorch s | wick / PyTorch | wick last loss | PyTorch last loss |"
  echo "|---|---|---|---|---|---|---|"
  for model in mlp cnn; do
    for mode in resident loader; do
      name="train_${model}_$mode"
      w=$(value "$name.wick" epoch_s); t=$(value "$name.torch" epoch_s)
      printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$model" "$mode" "$(show "$w")" "$(show "$t")" "$(ratio "$w" "$t")" \
        "$(show "$(value "$name.wick" loss)")" "$(show "$(value "$name.torch" loss)")"
      PEAKS+=("train $model $mode:$name")
    done
  done
  echo
fi

if wants ops; then
  run ops wick "$WICK" bench/gpu_ops.lua
  run ops torch "$PYTHON" bench/gpu_ops_torch.py
  echo "### Host overhead per op on 1-element CUDA tensors (microseconds, lower is better; goal: wick / PyTorch < 1)"
  echo
  echo "| op | wick µs | PyTorch µs | wick / PyTorch |"
  echo "|---|---|---|---|"
  for op in add add_inplace mul_scalar relu sum mm_2x2; do
    w=$(value ops.wick "${op}_us"); t=$(value ops.torch "${op}_us")
    printf '| %s | %s | %s | %s |\n' "$op" "$(show "$w")" "$(show "$t")" "$(ratio "$w" "$t")"
  done
  echo
  PEAKS+=("ops:ops")
fi

if [ ${#PEAKS[@]} -gt 0 ]; then
  echo "### Peak GPU memory per benchmark process (MiB: wick.cuda.max_memory_allocated / torch.cuda.max_memory_allocated)"
  echo
  echo "| benchmark | wick MiB | PyTorch MiB | wick / PyTorch |"
  echo "|---|---|---|---|"
  for p in "${PEAKS[@]}"; do peak_row "${p%%:*}" "${p#*:}"; done
  echo
fi
exit $STATUS
