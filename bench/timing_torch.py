"""bench/timing_torch.py — what the PyTorch sides of the side-by-side benchmarks
share (bench/timing.lua is the Lua sides'): the per-call CPU time of this
process (one thread on both sides: robust on a shared machine), the median over
`repeats` loops of n calls after one warm-up."""
import statistics
import time


def timed(n, fn, repeats=7):
    fn()  # warm-up
    runs = []
    for _ in range(repeats):
        t0 = time.process_time()
        for _ in range(n):
            fn()
        runs.append((time.process_time() - t0) / n)
    return statistics.median(runs)
