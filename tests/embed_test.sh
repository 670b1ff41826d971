#!/bin/sh
# ctest `embed`: a checkpoint in the Fashion-MNIST example's layout, made by
# build/wick, then the C host (examples/embed/host.c) running it.
#   embed_test.sh RUNNER HOST EXAMPLE_DIR
set -e
runner=$1 host=$2 dir=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$runner" "$dir/make_checkpoint.lua" "$tmp/mlp.wick"
"$host" "$tmp/mlp.wick" "$dir/model.lua" 6
