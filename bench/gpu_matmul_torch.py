"""PyTorch's side of bench/gpu_matmul.lua: the same sizes, dtypes and timing rules.
   python3 bench/gpu_matmul_torch.py [sizes]     sizes: comma-separated, default 1024,2048,4096,8192
Prints `name<TAB>value` lines: matmul_<float32|tf32|bfloat16>_<n> in TFLOP/s, peak_mem_mb."""
import sys
import time

from gpu_torch_common import torch_with_cuda

torch = torch_with_cuda()

sizes = [int(s) for s in (sys.argv[1] if len(sys.argv) > 1 else "1024,2048,4096,8192").split(",")]
dev = torch.device("cuda")


def emit(name, value):
    print("%s\t%.6g" % (name, value), flush=True)


def time_mm(a, b):
    c = torch.mm(a, b)  # warm-up
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    c = torch.mm(a, b)
    torch.cuda.synchronize()
    once = max(time.perf_counter() - t0, 1e-6)
    reps = max(3, min(500, int(0.2 / once)))
    best = float("inf")
    for _ in range(3):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(reps):
            c = torch.mm(a, b)
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t0) / reps)
    del c
    return best


torch.manual_seed(0)
for kind in ("float32", "tf32", "bfloat16"):
    dtype = torch.bfloat16 if kind == "bfloat16" else torch.float32
    torch.backends.cuda.matmul.allow_tf32 = kind == "tf32"
    for n in sizes:
        a = torch.randn(n, n, device=dev, dtype=dtype)
        b = torch.randn(n, n, device=dev, dtype=dtype)
        emit("matmul_%s_%d" % (kind, n), 2 * n ** 3 / time_mm(a, b) / 1e12)
        del a, b
torch.backends.cuda.matmul.allow_tf32 = False
emit("peak_mem_mb", torch.cuda.max_memory_allocated() / 2 ** 20)
