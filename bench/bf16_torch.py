"""bench/bf16_torch.py: the PyTorch side of bench/bf16.lua (same cases, sizes
and timing rules; see there).   python bench/bf16_torch.py [threads]"""
import os
import sys

THREADS = int(sys.argv[1] if len(sys.argv) > 1 else "1")
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, str(THREADS))

import gc  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402

torch.set_num_threads(THREADS)
REPEATS = int(os.environ.get("REPEATS", "5"))
SIZES = (256, 512, 1024, 2048)
CASES = os.environ.get("CASES", "bf16,bf16_NT,bf16_TN,f16")
# BENCH_CLOCK=cpu: process CPU time instead of wall-clock (1 thread, a loaded machine)
now = time.process_time if os.environ.get("BENCH_CLOCK") == "cpu" else time.perf_counter


def ms(f):
    f()  # warm-up
    t0 = now()
    f()
    iters = max(1, int(0.05 / max(now() - t0, 1e-6)))
    t = []
    for _ in range(REPEATS):
        gc.collect()
        t1 = now()
        for _ in range(iters):
            f()
        t.append((now() - t1) / iters)
    return statistics.median(t) * 1e3


with torch.no_grad():
    for case in CASES.split(","):
        dtype = torch.float16 if "f16" in case and "bf16" not in case else torch.bfloat16
        if case.startswith("cast_"):
            for n in SIZES:
                x = torch.randn(n, n)
                h = x.to(dtype)
                print("%s_%d\t%.4f" % (case, n, ms(lambda: x.to(dtype))), flush=True)
                print("un%s_%d\t%.4f" % (case, n, ms(lambda: h.to(torch.float32))), flush=True)
            continue
        for n in SIZES:
            a, b = torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype)
            if "_NT" in case:
                f = lambda: a.mm(b.t())  # noqa: E731
            elif "_TN" in case:
                f = lambda: a.t().mm(b)  # noqa: E731
            else:
                f = lambda: a.mm(b)  # noqa: E731
            print("%s_%d\t%.4f" % (case, n, ms(f)), flush=True)
