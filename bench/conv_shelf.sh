#!/usr/bin/env bash
# bench/conv_shelf.sh [RUNS]: ConvTranspose2d (dcgan's generator layers) and upsampling,
# forward + backward, wick against PyTorch at 1 thread (bench/pair.sh).
exec "$(dirname "${BASH_SOURCE[0]}")/pair.sh" conv_shelf "$@"
