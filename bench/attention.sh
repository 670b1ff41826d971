#!/usr/bin/env bash
# bench/attention.sh [RUNS]: F.scaled_dot_product_attention, and the attention
# blocks built on it (nn.TransformerEncoder at word_language_model's size,
# nn.MultiheadAttention with its weights, a small nn.Transformer; forward +
# backward in training mode), wick against PyTorch (the venv's, with its fused
# CPU attention) at 1 thread pinned to one core on both sides, runs
# alternating; prints each case's median over RUNS (default 5) and the ratio
# wick / PyTorch (below 1: wick is faster): bench/pair.sh.
exec "$(dirname "${BASH_SOURCE[0]}")/pair.sh" attention "$@"
