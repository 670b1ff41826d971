#!/usr/bin/env bash
# bench/rnn.sh [RUNS]: nn.LSTM and nn.GRU forward, and forward + backward (the
# fused time loop, src/core/rnn.c), wick against PyTorch at 1 thread pinned to
# one core, alternating (bench/pair.sh: medians over RUNS, default 5, and the
# ratio wick / PyTorch; below 1: wick is faster).
exec "$(dirname "${BASH_SOURCE[0]}")/pair.sh" rnn "$@"
