"""bench/attention_torch.py — the PyTorch side of bench/attention.lua: same cases,
counts and timing rules (median over REPEATS loops of the per-call CPU time
of this process: one thread on both sides, robust on a shared machine).
    python bench/attention_torch.py [threads]"""
import statistics
import sys
import time

import torch
import torch.nn.functional as F

threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
torch.set_num_threads(threads)
REPEATS = 7

# name, batch, heads, L (= S), head dim, is_causal, dropout_p, calls per loop
CASES = [
    ("gpt_causal", 12, 4, 64, 32, True, 0.0, 100),
    ("gpt_full", 12, 4, 64, 32, False, 0.0, 100),
    ("gpt_causal_dropout", 12, 4, 64, 32, True, 0.1, 100),
    ("long_causal", 1, 4, 1024, 64, True, 0.0, 3),
]


def timed(n, fn):
    fn()  # warm-up
    runs = []
    for _ in range(REPEATS):
        t0 = time.process_time()
        for _ in range(n):
            fn()
        runs.append((time.process_time() - t0) / n)
    return statistics.median(runs)


torch.manual_seed(0)
for name, B, H, T, D, causal, p, n in CASES:
    q = torch.randn(B, H, T, D, requires_grad=True)
    k = torch.randn(B, H, T, D, requires_grad=True)
    v = torch.randn(B, H, T, D, requires_grad=True)
    g = torch.randn(B, H, T, D)

    def fwd():
        with torch.no_grad():
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, dropout_p=p)

    def fwdbwd():
        q.grad = k.grad = v.grad = None
        F.scaled_dot_product_attention(q, k, v, is_causal=causal, dropout_p=p).backward(g)

    print(f"{name}_fwd\t{timed(n, fwd) * 1e3:.4f}")
    print(f"{name}_fwdbwd\t{timed(n, fwdbwd) * 1e3:.4f}")
