#!/usr/bin/python3
"""bench/ops_torch.py: the PyTorch side of bench/ops.lua (same names, sizes,
repetition counts and timing rules; see there).

    OPENBLAS_NUM_THREADS=n OMP_NUM_THREADS=n /usr/bin/python3 bench/ops_torch.py [threads]

Prints one `name<TAB>value` line per benchmark: seconds per op for *_1 and mm_4x4,
GFLOP/s for matmul_N, GB/s for *_16M.
"""
import os
import sys

THREADS = int(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("THREADS", "1"))
# before torch loads its OpenMP and BLAS runtimes
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, str(THREADS))

import ctypes  # noqa: E402
import ctypes.util  # noqa: E402
import gc  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402

torch.set_num_threads(THREADS)
now = time.perf_counter

OVERHEAD_N, REPEATS = 100000, 5
BIG_N, BIG_REPS = 16 * 1024 * 1024, 7
MATMUL = [(256, 20, 5), (512, 5, 5), (1024, 1, 5), (2048, 1, 3)]  # size, iters, repeats


def emit(name, value):
    print("%s\t%.6g" % (name, value), flush=True)


def overhead(name, body):
    body(OVERHEAD_N)  # warm-up
    t = []
    for _ in range(REPEATS):
        gc.collect()
        t0 = now()
        body(OVERHEAD_N)
        t.append((now() - t0) / OVERHEAD_N)
    emit(name, statistics.median(t))


def main():
    with torch.no_grad():
        a, b = torch.ones(1), torch.ones(1)

        def add_inplace(n):
            a.fill_(0)
            for _ in range(n):
                a.add_(b)

        def add(n):
            c = None
            for _ in range(n):
                c = a.add(b)
            return c

        x, y = torch.randn(4, 4), torch.randn(4, 4)

        def mm(n):
            c = None
            for _ in range(n):
                c = x.mm(y)
            return c

        overhead("add_inplace_1", add_inplace)
        overhead("add_1", add)
        overhead("mm_4x4", mm)

        # raw cblas_sgemm of the OpenBLAS this torch links, timed alternately with
        # torch's matmul: matmul_N_vs_sgemm (see bench/ops.lua)
        blas = ctypes.CDLL(ctypes.util.find_library("openblas") or "libopenblas.so.0")
        sgemm = blas.cblas_sgemm
        fp = ctypes.POINTER(ctypes.c_float)
        I, F = ctypes.c_int, ctypes.c_float
        sgemm.argtypes = [I, I, I, I, I, I, F, fp, I, fp, I, F, fp, I]
        sgemm.restype = None

        for n, iters, repeats in MATMUL:
            a2, b2 = torch.randn(n, n), torch.randn(n, n)
            ra, rb, rc = torch.randn(n, n), torch.randn(n, n), torch.zeros(n, n)
            pa, pb, pc = (ctypes.cast(x.data_ptr(), fp) for x in (ra, rb, rc))

            def raw():
                sgemm(101, 111, 111, n, n, n, 1.0, pa, n, pb, n, 0.0, pc, n)

            c = a2.matmul(b2)  # warm-up
            del c
            raw()
            t, ratio = [], []
            for _ in range(repeats):
                gc.collect()
                t0 = now()
                for _ in range(iters):
                    c = a2.matmul(b2)
                t.append((now() - t0) / iters)
                del c
                t0 = now()
                for _ in range(iters):
                    raw()
                ratio.append((now() - t0) / iters / t[-1])
            emit("matmul_%d" % n, 2.0 * n * n * n / statistics.median(t) * 1e-9)
            emit("matmul_%d_vs_sgemm" % n, statistics.median(ratio))
            del a2, b2, ra, rb, rc

        n, iters, repeats = 512, 2, 5
        a2, b2 = torch.randn(n, n).bfloat16(), torch.randn(n, n).bfloat16()
        c = a2.matmul(b2)  # warm-up
        t = []
        for _ in range(repeats):
            del c
            gc.collect()
            t0 = now()
            for _ in range(iters):
                c = a2.matmul(b2)
            t.append((now() - t0) / iters)
        emit("matmul_bf16_512", 2.0 * n * n * n / statistics.median(t) * 1e-9)
        del a2, b2, c

        def bandwidth(name, bytes_per_elem, op):
            c = op()  # warm-up
            del c
            gc.collect()
            t = []
            for _ in range(BIG_REPS):
                t0 = now()
                c = op()
                t.append(now() - t0)
                del c  # free the output outside the timed region
            emit(name, bytes_per_elem * BIG_N / statistics.median(t) * 1e-9)

        a3, b3 = torch.randn(BIG_N), torch.randn(BIG_N)
        bandwidth("add_16M", 12, lambda: a3.add(b3))
        bandwidth("mul_16M", 12, lambda: a3.mul(b3))
        bandwidth("relu_16M", 8, lambda: a3.relu())
        bandwidth("exp_16M", 8, lambda: a3.exp())
        d = a3.clone()
        bandwidth("add_inplace_16M", 12, lambda: d.add_(b3))
        del a3, b3, d
        gc.collect()

    # grid_sample at Deformable-DETR's sampling size (see bench/ops.lua)
    F = torch.nn.functional
    value = torch.randn(16, 32, 24, 20, requires_grad=True)
    grid = (torch.rand(16, 300, 16, 2) * 2.2 - 1.1).requires_grad_()

    def timed(name, iters, fn):
        fn()  # warm-up
        t = []
        for _ in range(REPEATS):
            gc.collect()
            t0 = now()
            for _ in range(iters):
                fn()
            t.append((now() - t0) / iters)
        emit(name, statistics.median(t))

    with torch.no_grad():
        timed("grid_sample_fwd", 10, lambda: F.grid_sample(value, grid, align_corners=False))

    def fwd_bwd():
        value.grad, grid.grad = None, None
        F.grid_sample(value, grid, align_corners=False).sum().backward()
    timed("grid_sample_fwd_bwd", 5, fwd_bwd)


if __name__ == "__main__":
    main()
