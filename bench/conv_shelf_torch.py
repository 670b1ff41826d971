"""bench/conv_shelf_torch.py — the PyTorch side of bench/conv_shelf.lua: same
cases, counts and timing rules (median over REPEATS loops of the per-call CPU
time of this process).
    python bench/conv_shelf_torch.py [threads]"""
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import timing_torch

threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
torch.set_num_threads(threads)
REPEATS = 5


def timed(n, fn):
    return timing_torch.timed(n, fn, REPEATS)


CONVT = [
    ("convt_100_512_1to4", 100, 512, 4, 1, 0, 1, 5),
    ("convt_512_256_4to8", 512, 256, 4, 2, 1, 4, 3),
    ("convt_256_128_8to16", 256, 128, 4, 2, 1, 8, 3),
    ("convt_128_64_16to32", 128, 64, 4, 2, 1, 16, 3),
    ("convt_64_3_32to64", 64, 3, 4, 2, 1, 32, 3),
]
B = 16
torch.manual_seed(0)
for name, cin, cout, k, s, p, size, n in CONVT:
    m = nn.ConvTranspose2d(cin, cout, k, s, p, bias=False)
    x = torch.randn(B, cin, size, size, requires_grad=True)
    g = torch.randn(m(x).shape)

    def fwdbwd():
        x.grad = m.weight.grad = None
        m(x).backward(g)

    print(f"{name}_fwdbwd\t{timed(n, fwdbwd) * 1e3:.4f}")
for mode in ("nearest", "bilinear"):
    x = torch.randn(B, 64, 32, 32, requires_grad=True)
    g = torch.randn(B, 64, 64, 64)

    def up():
        x.grad = None
        F.interpolate(x, scale_factor=2, mode=mode).backward(g)

    print(f"upsample_{mode}_x2_fwdbwd\t{timed(3, up) * 1e3:.4f}")
