#!/usr/bin/python3
"""Writes the PyTorch checkpoint fixtures read by spec/pytorch_spec.lua.

Run from the repository root with /usr/bin/python3 (PyTorch 1.13):
    /usr/bin/python3 tools/make_pt_fixtures.py
or, for the TinyGPT, the recurrent-layer or the objects fixture alone (written with PyTorch 2.x):
    ~/.cache/wick-torch-venv/bin/python tools/make_pt_fixtures.py tiny_gpt
    ~/.cache/wick-torch-venv/bin/python tools/make_pt_fixtures.py rnn
    ~/.cache/wick-torch-venv/bin/python tools/make_pt_fixtures.py objects
"""
import os
from collections import OrderedDict

import torch
import torch.nn as nn

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "spec", "fixtures")


def lua_number(x):
    return repr(float(x))


def lua_value(v, indent=""):
    if isinstance(v, torch.Tensor):
        return lua_value(v.tolist(), indent)
    if isinstance(v, (list, tuple)):
        return "{ " + ", ".join(lua_value(x, indent) for x in v) + " }"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return lua_number(v)
    if isinstance(v, str):
        return '"' + v + '"'
    raise TypeError(type(v))


def state_dict_fixture():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 2), nn.ReLU(), nn.Linear(2, 1))
    sd = model.state_dict()
    torch.save(sd, os.path.join(OUT, "pt_state_dict.pt"))
    x = torch.tensor([[1.0, -2.0, 0.5], [0.25, 0.75, -1.5], [3.0, 1.0, 2.0]])
    with torch.no_grad():
        y = model(x)
    lines = ["-- Written by tools/make_pt_fixtures.py: the values in pt_state_dict.pt", "return {"]
    lines.append("  state = {")
    for k, v in sd.items():
        lines.append('    ["%s"] = %s,' % (k, lua_value(v)))
    lines.append("  },")
    lines.append("  input = %s," % lua_value(x))
    lines.append("  output = %s," % lua_value(y))
    lines.append("}")
    with open(os.path.join(OUT, "pt_state_dict_expected.lua"), "w") as f:
        f.write("\n".join(lines) + "\n")


def mixed_fixture():
    base = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    d = {
        "long": torch.tensor([1, -2, 3, 2**40], dtype=torch.int64),
        "double": torch.tensor([[0.5, -1.25], [3.0, 1e-3]], dtype=torch.float64),
        "base": base,
        "transposed": base.t(),
        "list": [1, 2.5, "three"],
        "tuple": (4, "five", True),
        "nested": OrderedDict([("a", 1), ("b", {"c": torch.tensor([7, 8], dtype=torch.int32)})]),
        "int": 42,
        "big": -(2**40),
        "float": 0.125,
        "string": "hello",
        "flag": True,
        "off": False,
        "nothing": None,
        "bytes_t": torch.tensor([1, 255], dtype=torch.uint8),
        "bools": torch.tensor([True, False]),
        "half": torch.tensor([1.5, -2.0], dtype=torch.float16),
    }
    torch.save(d, os.path.join(OUT, "pt_mixed.pt"))


class Payload:
    def __reduce__(self):
        return (os.system, ("echo pwned > /tmp/wick_pwned",))


class TinyGPT(nn.Module):
    """nanoGPT's model.py structure and names (GPT, Block, CausalSelfAttention,
    MLP), with weight tying, written out so the fixture needs nothing else."""

    class Attention(nn.Module):
        def __init__(self, n_embd, n_head):
            super().__init__()
            self.c_attn = nn.Linear(n_embd, 3 * n_embd)
            self.c_proj = nn.Linear(n_embd, n_embd)
            self.n_head = n_head

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(C, dim=2)
            q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
            y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))

    class MLP(nn.Module):
        def __init__(self, n_embd):
            super().__init__()
            self.c_fc = nn.Linear(n_embd, 4 * n_embd)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * n_embd, n_embd)

        def forward(self, x):
            return self.c_proj(self.gelu(self.c_fc(x)))

    class Block(nn.Module):
        def __init__(self, n_embd, n_head):
            super().__init__()
            self.ln_1 = nn.LayerNorm(n_embd)
            self.attn = TinyGPT.Attention(n_embd, n_head)
            self.ln_2 = nn.LayerNorm(n_embd)
            self.mlp = TinyGPT.MLP(n_embd)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    def __init__(self, vocab_size=11, block_size=6, n_layer=2, n_head=2, n_embd=8):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab_size, n_embd),
            wpe=nn.Embedding(block_size, n_embd),
            h=nn.ModuleList([TinyGPT.Block(n_embd, n_head) for _ in range(n_layer)]),
            ln_f=nn.LayerNorm(n_embd),
        ))
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight
        for pn, p in self.named_parameters():  # nanoGPT's init, so LayerNorms are not all ones/zeros
            torch.nn.init.normal_(p, mean=0.0, std=0.3)

    def forward(self, idx):
        t = idx.size(1)
        x = self.transformer.wte(idx) + self.transformer.wpe(torch.arange(t))
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))


def tiny_gpt_fixture():
    torch.manual_seed(0)
    model = TinyGPT().double().eval()
    sd = model.state_dict()
    assert sd["lm_head.weight"].data_ptr() == sd["transformer.wte.weight"].data_ptr()
    torch.save(sd, os.path.join(OUT, "pt_tiny_gpt.pt"))
    idx = torch.tensor([[0, 5, 10, 3, 3, 7], [2, 2, 9, 1, 0, 4]])
    with torch.no_grad():
        logits = model(idx)
    lines = ["-- Written by tools/make_pt_fixtures.py: TinyGPT (nanoGPT's names, tied lm_head) of pt_tiny_gpt.pt",
             "-- in float64, its input (0-based token ids, as PyTorch has them) and its logits", "return {"]
    lines.append("  idx = %s," % lua_value(idx))
    lines.append("  logits = %s," % lua_value(logits))
    lines.append("  keys = { %s }," % ", ".join('"%s"' % k for k in sd.keys()))
    lines.append("}")
    with open(os.path.join(OUT, "pt_tiny_gpt_expected.lua"), "w") as f:
        f.write("\n".join(lines) + "\n")


def rnn_fixture():
    """RNN, LSTM, GRU outputs and gradients in float64 with weights from a formula
    the spec repeats: the j-th parameter (in named_parameters order), element i
    (row-major) is 0.5 * sin(0.37 * i + j); the input's element i is cos(0.23 * i)."""
    import math

    def fill(t, j):
        n = t.numel()
        t.copy_(torch.tensor([0.5 * math.sin(0.37 * i + j) for i in range(n)], dtype=torch.float64).view(t.shape))

    cases = [
        ("lstm_bi2", lambda: nn.LSTM(3, 4, 2, bidirectional=True), (5, 2, 3)),
        ("gru_bf", lambda: nn.GRU(3, 4, batch_first=True), (2, 5, 3)),
        ("rnn_relu", lambda: nn.RNN(3, 4, 2, nonlinearity="relu"), (5, 2, 3)),
        ("rnn_unbatched", lambda: nn.RNN(3, 4, bias=False), (5, 3)),
        ("gru_bi", lambda: nn.GRU(3, 2, bidirectional=True), (4, 1, 3)),
    ]
    lines = ["-- Written by tools/make_pt_fixtures.py (rnn_fixture): torch.nn RNN/LSTM/GRU in float64",
             "return {"]
    for name, make, shape in cases:
        m = make().double()
        with torch.no_grad():
            for j, (_, p) in enumerate(m.named_parameters()):
                fill(p, j)
        n = 1
        for d in shape:
            n *= d
        x = torch.tensor([math.cos(0.23 * i) for i in range(n)], dtype=torch.float64).view(shape).requires_grad_()
        out, h = m(x)
        hs = list(h) if isinstance(h, tuple) else [h]
        loss = (out * out).sum() + sum((t * 1.5).sum() for t in hs)
        loss.backward()
        lines.append("  %s = {" % name)
        lines.append("    names = { %s }," % ", ".join('"%s"' % k for k, _ in m.named_parameters()))
        lines.append("    out = %s," % lua_value(out.detach()))
        lines.append("    h = { %s }," % ", ".join(lua_value(t.detach()) for t in hs))
        lines.append("    grad_x = %s," % lua_value(x.grad))
        lines.append("    grad_whh = %s," % lua_value(m.weight_hh_l0.grad))
        lines.append("  },")
    lines.append("}")
    with open(os.path.join(OUT, "pt_rnn_expected.lua"), "w") as f:
        f.write("\n".join(lines) + "\n")


def malicious_fixture():
    torch.save({"weight": torch.zeros(2), "evil": Payload()}, os.path.join(OUT, "pt_malicious.pt"))


def objects_fixture():
    """A training checkpoint with objects beside the weights (Swin's yacs config, an
    argparse Namespace, numpy scalars and arrays): wick.load's weights_only = false."""
    import argparse
    import numpy as np
    arrays = {"f32_fortran": np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)),
              "i32": np.array([5, -6], dtype=np.int32), "b": np.array([True, False]),
              "c128": np.array([1 + 2j]), "empty": np.zeros((0, 3)), "zero_dim": np.array(2.5),
              "i16": np.array([7, -8], dtype=np.int16)}
    torch.save({"model": OrderedDict(w=torch.arange(3.0)), "args": argparse.Namespace(lr=0.1, name="x"),
                "best_acc": np.float64(0.5), "epoch": np.int64(7), "mean": np.arange(2.0), "tags": {"a"},
                "arrays": arrays}, os.path.join(OUT, "pt_objects.pt"))


if __name__ == "__main__":
    import sys
    if sys.argv[1:] == ["objects"]:
        objects_fixture()
        sys.exit(0)
    if sys.argv[1:] == ["tiny_gpt"]:  # only this one (the others stay byte for byte)
        tiny_gpt_fixture()
        sys.exit(0)
    if sys.argv[1:] == ["rnn"]:
        rnn_fixture()
        sys.exit(0)
    tiny_gpt_fixture()
    rnn_fixture()
    objects_fixture()
    state_dict_fixture()
    mixed_fixture()
    malicious_fixture()
