#!/usr/bin/env bash
# bench/mnist_cnn.sh [RUNS]: pytorch/examples' MNIST CNN, a training pass and an
# evaluation of 10k images, wick against PyTorch (bench/pair.sh: alternating
# runs, medians; THREADS=2 for two threads). Issue 17's convolution goal.
exec "$(dirname "${BASH_SOURCE[0]}")/pair.sh" mnist_cnn "$@"
