#!/bin/sh
# Installs the Debian packages wick needs that this machine lacks (Debian 12).
# Usage: tools/install-deps.sh [--bench]   (--bench adds PyTorch for bench/)
set -e
# clang, libclang-rt-14-dev (libFuzzer and the sanitizer runtimes: only recommended by clang,
# and --no-install-recommends skips them) and llvm-14 (llvm-symbolizer, for readable stacks)
# are for the fuzz targets (make fuzz, fuzz/README.md).
# liblua5.4-dev and lua5.4: build/lua54/wick.so and the <spec>_lua54 runs (WICK_LUA54=AUTO).
# python3-venv: .ci/run makes a venv with the tensorboard package for ctest tensorboard_read.
# libopenmpi-dev and openmpi-bin: wick.distributed (WICK_MPI=AUTO) and its mpirun tests (tests/dist).
pkgs="build-essential cmake pkg-config libopenmpi-dev openmpi-bin clang libclang-rt-14-dev llvm-14 libluajit-5.1-dev luajit liblua5.4-dev lua5.4 libopenblas-dev libblis-pthread-dev lua-busted zlib1g-dev libedit-dev python3 python3-venv dataset-fashion-mnist"
[ "${1:-}" = "--bench" ] && pkgs="$pkgs python3-torch"
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "installing:$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
