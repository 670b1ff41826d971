"""PyTorch's side of bench/gpu_ops.lua: launch overhead of ops on 1-element CUDA
tensors, same ops, counts and timing rules.
   python3 bench/gpu_ops_torch.py
Prints `<op>_us<TAB>microseconds per op` (median of 5 loops of N ops, synchronized
before and after each loop), then peak_mem_mb."""
import sys
import time

from gpu_torch_common import torch_with_cuda

torch = torch_with_cuda()

N, LOOPS = 20000, 5
a = torch.ones(1, device="cuda")
b = torch.ones(1, device="cuda")
m = torch.ones(2, 2, device="cuda")

ops = [
    ("add", lambda: a + b),
    ("add_inplace", lambda: a.add_(b)),
    ("mul_scalar", lambda: a * 2),
    ("relu", lambda: a.relu()),
    ("sum", lambda: a.sum()),
    ("mm_2x2", lambda: m.mm(m)),
]

for name, fn in ops:
    for _ in range(1000):
        fn()
    times = []
    for _ in range(LOOPS):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(N):
            fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) / N)
    times.sort()
    print("%s_us\t%.6g" % (name, times[(LOOPS - 1) // 2] * 1e6), flush=True)
    a.fill_(1)
print("peak_mem_mb\t%.6g" % (torch.cuda.max_memory_allocated() / 2 ** 20), flush=True)
