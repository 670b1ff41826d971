#!/usr/bin/env bash
# bench/fft.sh [RUNS]: wick.fft and wick.stft against torch.fft and torch.stft
# (the venv's PyTorch: pocketfft on the CPU) at 1 thread pinned to one core on
# both sides, runs alternating; prints each case's median over RUNS (default 5)
# and the ratio wick / PyTorch (below 1: wick is faster): bench/pair.sh.
exec "$(dirname "${BASH_SOURCE[0]}")/pair.sh" fft "$@"
