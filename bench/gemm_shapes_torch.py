# bench/gemm_shapes_torch.py — bench/gemm_shapes.lua's products in PyTorch
# (torch.set_num_threads from WICK_NUM_THREADS, default 1): the same shapes,
# warm-up, timing and output (`MxKxN[ab]<TAB>GFLOP/s`).
import os
import time

import torch

torch.set_num_threads(int(os.environ.get("WICK_NUM_THREADS", "1")))
SHAPES = [(1024, 1024, 1024, ""), (700, 200, 3985, ""), (700, 3985, 200, ""), (20, 200, 800, ""), (128, 784, 512, "b"),
          (128, 512, 784, ""), (512, 128, 784, "a"), (64, 576, 3136, ""), (64, 3136, 576, "b"), (576, 64, 3136, "a"),
          (3136, 576, 64, ""), (512, 4608, 392, "")]
for m, k, n, tr in SHAPES:
    a = torch.randn(k, m).t() if tr == "a" else torch.randn(m, k)
    b = torch.randn(n, k).t() if tr == "b" else torch.randn(k, n)
    for _ in range(3):
        a.matmul(b)
    t = []
    for _ in range(7):
        t0 = time.perf_counter()
        a.matmul(b)
        t.append(time.perf_counter() - t0)
    t.sort()
    print(f"{m}x{k}x{n}{tr}\t{2 * m * k * n / t[3] / 1e9:.1f}", flush=True)
