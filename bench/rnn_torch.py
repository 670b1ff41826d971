"""bench/rnn_torch.py — the PyTorch side of bench/rnn.lua: same cases, counts
and timing rules (median over REPEATS loops of the per-call CPU time of this
process: one thread on both sides, robust on a shared machine).
    python bench/rnn_torch.py [threads]"""
import sys

import torch
from timing_torch import timed

threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
torch.set_num_threads(threads)
REPEATS = 7

# name, kind, input size, hidden size, layers, steps, batch, calls per loop
CASES = [
    ("lstm_wlm", "LSTM", 200, 200, 2, 35, 20, 10),
    ("gru_wlm", "GRU", 200, 200, 2, 35, 20, 10),
    ("lstm_650", "LSTM", 650, 650, 2, 35, 20, 2),
    ("lstm_small_batch1", "LSTM", 64, 64, 1, 100, 1, 20),
]


torch.manual_seed(0)
for name, kind, I, H, L, T, B, n in CASES:
    m = getattr(torch.nn, kind)(I, H, L)
    x = torch.randn(T, B, I, requires_grad=True)
    g = torch.randn(T, B, H)

    def fwd():
        with torch.no_grad():
            return m(x)

    def fwdbwd():
        m.zero_grad()
        x.grad = None
        out, _ = m(x)
        out.backward(g)

    print("%s_fwd\t%.4f" % (name, timed(n, fwd, REPEATS) * 1e3))
    print("%s_fwdbwd\t%.4f" % (name, timed(n, fwdbwd, REPEATS) * 1e3))
