#!/usr/bin/env bash
# tools/gpu-prepare.sh [--no-data]: everything a device run of tools/gpu-check.sh
# needs, prepared here (a machine with nvcc; no GPU needed), so the rare and
# short GPU time goes to the checks and not to setting up.
#
#   1. ../shared/device/fetch-runtime.sh fills .devdeps/ with LuaJIT, busted and
#      OpenBLAS packages (and the Fashion-MNIST package unless --no-data, for the
#      examples tier);
#   2. the CUDA build (Release, OpenBLAS: .devdeps carries OpenBLAS, not BLIS) is
#      built in build-gpu-full/;
#   3. build-gpu/ receives only what gpu-check.sh runs: the runner and the C
#      tests, each self-contained (libwick linked in, cudart static);
#   4. the total is checked against the 64 MiB a device run may carry.
#
# Then one device run carrying [".devdeps", "build-gpu"]:
#   source .devdeps/env.sh; OUT=$OUT tools/gpu-check.sh quick
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
FETCH=${FETCH_RUNTIME:-$ROOT/../shared/device/fetch-runtime.sh}
LIMIT_MIB=64
data=dataset-fashion-mnist
case "${1:-}" in
  --no-data) data="" ;;
  "") ;;
  *) echo "usage: tools/gpu-prepare.sh [--no-data]" >&2; exit 2 ;;
esac

[ -x "$FETCH" ] || { echo "gpu-prepare: $FETCH not found (set FETCH_RUNTIME)" >&2; exit 1; }
rm -f .devdeps/dataset-fashion-mnist_*.deb # --no-data must not carry an earlier run's copy
EXTRA_DEBS="$data" "$FETCH"

cmake -S . -B build-gpu-full -DWICK_CUDA=ON -DWICK_BLAS=OPENBLAS -DCMAKE_BUILD_TYPE=Release \
  -DWICK_LUA54=OFF >/dev/null
cmake --build build-gpu-full -j"$(nproc)" --target wick_runner test_backends test_cuda_runtime test_core

rm -rf build-gpu
mkdir build-gpu
for f in wick test_backends test_cuda_runtime test_core; do cp build-gpu-full/"$f" build-gpu/; done

total=$(du -sk .devdeps build-gpu | awk '{ s += $1 } END { print int(s / 1024) }')
du -sh .devdeps build-gpu
echo "carry total: ${total} MiB of ${LIMIT_MIB} MiB"
if [ "$total" -ge "$LIMIT_MIB" ]; then
  echo "gpu-prepare: too large to carry; try --no-data" >&2
  exit 1
fi
echo "next: run with carry [\".devdeps\", \"build-gpu\"]: source .devdeps/env.sh; OUT=\$OUT tools/gpu-check.sh quick"
