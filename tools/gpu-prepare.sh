#!/usr/bin/env bash
# tools/gpu-prepare.sh [--no-data]: everything a device run of tools/gpu-check.sh
# needs, prepared here (a machine with nvcc; no GPU needed), so the rare and
# short GPU time goes to the checks and not to setting up.
#
#   1. the CUDA build (Release, OpenBLAS: .devdeps carries OpenBLAS, not BLIS;
#      -DWICK_CUDA_LINEINFO=ON, so compute-sanitizer names source lines) is
#      built in build-gpu-full/;
#   2. build-gpu/ receives only what gpu-check.sh runs: the runner and the C
#      tests, each self-contained (libwick linked in, cudart static);
#   3. ../shared/device/fetch-runtime.sh fills .devdeps/ with LuaJIT, busted and
#      OpenBLAS packages (and the Fashion-MNIST package unless --no-data, for the
#      examples tier; and Open MPI's runtime with mpirun when the runner links
#      libmpi, for wick.distributed and the nccl tier);
#   4. every shared library that a carried binary or library needs (readelf's
#      NEEDED, over build-gpu/* and every ELF file in the packages) must be in
#      what is carried, in a folder that .devdeps/env.sh or gpu-check.sh puts on
#      LD_LIBRARY_PATH or next to the file that needs it, or be one of glibc's,
#      libstdc++/libgcc_s or the driver's libcuda (BASE_LIBS below; OPTIONAL_LIBS:
#      hardware plugins' needs): the device machine has nothing else for sure;
#      otherwise it fails, naming what is missing and who needs it;
#   5. the total is checked against the 64 MiB a device run may carry.
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

cmake -S . -B build-gpu-full -DWICK_CUDA=ON -DWICK_BLAS=OPENBLAS -DCMAKE_BUILD_TYPE=Release \
  -DWICK_LUA54=OFF -DWICK_CUDA_LINEINFO=ON >/dev/null
tests="test_backends test_cuda_runtime test_core"
# (not test_dist_nccl: the NCCL backend's host logic needs no GPU, runs in CI,
# and opens its stand-in libraries by build-gpu-full's absolute paths)
# shellcheck disable=SC2086
cmake --build build-gpu-full -j"${JOBS:-2}" --target wick_runner $tests

rm -rf build-gpu
mkdir build-gpu
for f in wick $tests; do cp build-gpu-full/"$f" build-gpu/; done

rm -f .devdeps/dataset-fashion-mnist_*.deb # --no-data must not carry an earlier run's copy
# beyond fetch-runtime.sh's list: libz (the runner) and libtinfo (libedit), so
# nothing but glibc and libstdc++ is taken from the device machine; and Open
# MPI's runtime with mpirun when the runner links libmpi (wick.distributed; the
# nccl tier of gpu-check.sh starts a world under it, relocated to /opt/devdeps
# with OPAL_PREFIX): about 6 MB of packages
mpi=""
if readelf -d build-gpu/wick | grep -q 'NEEDED.*libmpi\.so'; then
  mpi="libopenmpi3 openmpi-bin openmpi-common libevent-core-2.1-7 libevent-pthreads-2.1-7 libfabric1 libhwloc15
       libibverbs1 ibverbs-providers librdmacm1 libnl-3-200 libnl-route-3-200 libpmix2 libpsm2-2
       libpsm-infinipath1 libuuid1 libucx0 libatomic1 libmunge2 libnuma1 libudev1"
fi
EXTRA_DEBS="zlib1g libtinfo6 $data $mpi" "$FETCH"
# the commit it was built from (the device machine's copy of the tree has no .git)
echo "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' plus changes')" \
  >build-gpu/revision.txt

# ---- 4. every needed shared library is carried ----
BASE_LIBS=" linux-vdso.so.1 ld-linux-x86-64.so.2 libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1
  libresolv.so.2 libutil.so.1 libstdc++.so.6 libgcc_s.so.1 libcuda.so.1 "
# needed only by plugins for InfiniPath hardware (libfabric's and Open MPI's psm
# providers), which a run on one machine never loads; the name is an
# alternatives link that libpsm-infinipath1's install script makes, so no
# package carries it (a plugin that fails to load is skipped by Open MPI)
OPTIONAL_LIBS=" libpsm_infinipath.so.1 "
check_libs() {
  local root missing=0 f lib d found
  root=$(mktemp -d)
  for f in .devdeps/*.deb; do dpkg -x "$f" "$root"; done
  # the folders env.sh (the packages' /usr/lib) and gpu-check.sh (the build, the packages' /lib) search
  local dirs=(build-gpu "$root/usr/lib/x86_64-linux-gnu" "$root/usr/lib/x86_64-linux-gnu/openblas-pthread"
    "$root/lib/x86_64-linux-gnu")
  local n=0
  while IFS= read -r f; do
    [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] || continue
    n=$((n + 1))
    for lib in $(readelf -d "$f" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
      case "$BASE_LIBS$OPTIONAL_LIBS" in *" $lib "*) continue ;; esac
      found=""
      # next to the file that needs it (a plugin's own folder: RUNPATH $ORIGIN)
      [ -e "$(dirname "$f")/$lib" ] && found=$(dirname "$f")
      for d in "${dirs[@]}"; do [ -z "$found" ] && [ -e "$d/$lib" ] && found=$d && break; done
      if [ -z "$found" ]; then
        echo "gpu-prepare: ${f#"$root"/} needs $lib, which is not carried" >&2
        missing=$((missing + 1))
      fi
    done
  done < <(find build-gpu "$root" -type f)
  rm -rf "$root"
  echo "shared libraries: $n ELF files checked, $missing needed libraries not carried"
  [ $missing -eq 0 ]
}
if ! check_libs; then
  echo "gpu-prepare: carry the missing libraries (their packages in EXTRA_DEBS above) before a device run" >&2
  exit 1
fi

total=$(du -sk .devdeps build-gpu | awk '{ s += $1 } END { print int(s / 1024) }')
du -sh .devdeps build-gpu
echo "carry total: ${total} MiB of ${LIMIT_MIB} MiB"
if [ "$total" -ge "$LIMIT_MIB" ]; then
  echo "gpu-prepare: too large to carry; try --no-data" >&2
  exit 1
fi
echo "next: run with carry [\".devdeps\", \"build-gpu\"]: source .devdeps/env.sh; OUT=\$OUT tools/gpu-check.sh quick"
