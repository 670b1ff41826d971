#!/bin/sh
# Remakes docs/img/tensorboard.png, the README's picture of TensorBoard showing
# a wick run: a short Fashion-MNIST training logged with --tensorboard, then
# TensorBoard's page drawn by headless Chromium.
#
#   tools/tensorboard-screenshot.sh [BUILD_DIR=build] [OUT=docs/img/tensorboard.png]
#
# A developer's tool, never run by CI. Needs: a built wick (BUILD_DIR/wick), the
# Fashion-MNIST files (Debian's dataset-fashion-mnist or FASHION_MNIST_DIR),
# a python with the `tensorboard` package (WICK_TENSORBOARD_PYTHON, else the
# venv .ci/run makes, ~/.cache/wick-tensorboard-venv), `chromium` (apt-get
# install chromium) and, if present, `optipng` to shrink the PNG.
# Environment: EPOCHS (3), MAX_STEPS (steps an epoch, 150), PORT (6006),
# VIEW (the TensorBoard page: "#scalars&tagFilter=train", the scalars dashboard
# with the training curves first; "#timeseries" is the newer dashboard).
set -eu
build=${1:-build}
out=${2:-docs/img/tensorboard.png}
epochs=${EPOCHS:-3}
steps=${MAX_STEPS:-150}
port=${PORT:-6006}
view=${VIEW:-#scalars&tagFilter=train}

py=${WICK_TENSORBOARD_PYTHON:-$HOME/.cache/wick-tensorboard-venv/bin/python}
tensorboard=$(dirname "$py")/tensorboard
[ -x "$tensorboard" ] || { echo "no tensorboard next to $py (set WICK_TENSORBOARD_PYTHON)" >&2; exit 1; }
chrome=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$chrome" ] || { echo "no chromium (apt-get install chromium)" >&2; exit 1; }
[ -x "$build/wick" ] || { echo "no $build/wick: build wick first" >&2; exit 1; }

work=$(mktemp -d)
tb_pid=
cleanup() {
  [ -n "$tb_pid" ] && kill "$tb_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

# a short run: the loss every 10 steps, the test accuracy per epoch, a
# histogram of the first layer and the input images
"$build/wick" examples/fashion_mnist.lua --epochs "$epochs" --max-steps "$steps" --seed 1 \
  --checkpoint "$work/ckpt.safetensors" --tensorboard "$work/runs/fashion_mnist_mlp" >"$work/train.log"

# from inside $work, so the page shows the log folder as "runs"
(cd "$work" && exec "$tensorboard" --logdir runs --port "$port" --host 127.0.0.1 >tensorboard.log 2>&1) &
tb_pid=$!
up=0
for _ in $(seq 1 60); do
  if "$py" -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$port/data/runs', timeout=2)" \
      2>/dev/null; then up=1; break; fi
  sleep 1
done
[ "$up" = 1 ] || { cat "$work/tensorboard.log" >&2; echo "tensorboard did not start" >&2; exit 1; }

mkdir -p "$(dirname "$out")"
# Chromium writes the screenshot relative to its own working folder: give it an absolute path
case $out in /*) abs=$out ;; *) abs=$(pwd)/$out ;; esac
"$chrome" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,900 \
  --user-data-dir="$work/chrome" --virtual-time-budget=20000 --screenshot="$abs" \
  "http://127.0.0.1:$port/$view" >"$work/chrome.log" 2>&1 || { cat "$work/chrome.log" >&2; exit 1; }
if command -v optipng >/dev/null; then optipng -quiet -o2 "$abs"; fi
echo "wrote $out ($(wc -c <"$abs") bytes)"
