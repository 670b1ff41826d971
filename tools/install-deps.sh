#!/bin/sh
# Installs the Debian packages wick needs that this machine lacks (Debian 12).
# Usage: tools/install-deps.sh [--bench]   (--bench adds PyTorch for bench/)
set -e
pkgs="build-essential cmake pkg-config libluajit-5.1-dev luajit libopenblas-dev libblis-pthread-dev lua-busted zlib1g-dev libedit-dev dataset-fashion-mnist"
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
