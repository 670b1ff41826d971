#!/usr/bin/env python3
"""Writes the nanoGPT fixture read by spec/port_nanogpt_spec.lua: a tiny GPT of
nanoGPT's model.py (the PyTorch model of bench/gpt_torch.py), its state_dict as
torch.save writes it (tied weights under both names, PyTorch's 0-based names),
and an input with the logits and loss PyTorch computes for it.

Run from the repository root with a PyTorch venv:
    ~/.cache/wick-torch-venv/bin/python tools/make_gpt_fixture.py
"""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bench"))
from gpt_torch import GPT, GPTConfig  # noqa: E402

OUT = os.path.join(HERE, "..", "spec", "fixtures")


def main():
    torch.manual_seed(0)
    # bias=True so that every kind of parameter (Linear and LayerNorm biases) is in the file
    config = GPTConfig(block_size=8, vocab_size=11, n_layer=2, n_head=2, n_embd=16, dropout=0.0, bias=True)
    model = GPT(config)
    model.eval()
    torch.save(model.state_dict(), os.path.join(OUT, "gpt_state_dict.pt"))
    g = torch.Generator().manual_seed(1)
    idx = torch.randint(config.vocab_size, (2, config.block_size), generator=g)
    targets = torch.randint(config.vocab_size, (2, config.block_size), generator=g)
    with torch.no_grad():
        logits, loss = model(idx, targets)
        last, _ = model(idx)
    # 0-based token ids, as PyTorch has them; the spec adds 1
    torch.save({"idx": idx, "targets": targets, "logits": logits, "loss": loss, "last_logits": last,
                "num_params": torch.tensor(model.get_num_params())},
               os.path.join(OUT, "gpt_expected.pt"))
    print("wrote gpt_state_dict.pt and gpt_expected.pt: loss %.6f, %d parameters" % (loss.item(),
                                                                                    model.get_num_params()))


if __name__ == "__main__":
    main()
