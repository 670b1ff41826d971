"""PyTorch's side of bench/kernels.lua: the same cases, the same output lines.
   python bench/kernels_torch.py [--threads 1] [--dtype float32] [--min-time 0.2] [--sets 2] [--only NAME]"""
import argparse, time
import torch
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--threads", type=int, default=1)
p.add_argument("--dtype", default="float32")
p.add_argument("--min-time", type=float, default=0.2)
p.add_argument("--sets", type=int, default=2)
p.add_argument("--only", default=None)
a = p.parse_args()
torch.set_num_threads(a.threads)
torch.manual_seed(0)
dt = getattr(torch, a.dtype)


def timeit(fn):
    """The fastest of many single calls, in microseconds (see bench/kernels.lua)."""
    fn(); fn()
    best, t_end, calls = float("inf"), time.perf_counter() + a.min_time, 0
    while calls < 20 or time.perf_counter() < t_end:
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
        calls += 1
    return best * 1e6


def case(name, shape, fwd, make_inputs):
    if a.only is not None and name != a.only:
        return
    inputs = make_inputs()
    timeit(lambda: fwd(*inputs))  # warm-up, as in bench/kernels.lua
    with torch.no_grad():
        f = timeit(lambda: fwd(*inputs))
    leaves = [t.detach().requires_grad_() if t.is_floating_point() else t for t in inputs]
    gy = [None]

    def fb():
        for l in leaves:
            if l.requires_grad:
                l.grad = None
        y = fwd(*leaves)
        if y.dim() == 0:
            y.backward()
        else:
            if gy[0] is None:
                gy[0] = torch.ones_like(y)
            y.backward(gy[0])
    b = timeit(fb)
    print(f"{name:<14} {shape:<14} fwd_us={f:.1f} fwdbwd_us={b:.1f}", flush=True)


def shapes(sets):
    for B, T, C, H, V in sets:
        r = lambda *s: torch.randn(*s, dtype=dt)
        case("gelu", f"{B}x{T}x{4*C}", lambda x: F.gelu(x), lambda: [r(B, T, 4 * C)])
        case("gelu_tanh", f"{B}x{T}x{4*C}", lambda x: F.gelu(x, approximate="tanh"), lambda: [r(B, T, 4 * C)])
        case("softmax", f"{B}x{H}x{T}x{T}", lambda x: F.softmax(x, -1), lambda: [r(B, H, T, T)])
        case("log_softmax", f"{B*T}x{V}", lambda x: F.log_softmax(x, -1), lambda: [r(B * T, V)])
        case("layer_norm", f"{B}x{T}x{C}", lambda x, w, b: F.layer_norm(x, (C,), w, b),
             lambda: [r(B, T, C), r(C), r(C)])
        case("cross_entropy", f"{B*T}x{V}", lambda x, t: F.cross_entropy(x, t),
             lambda: [r(B * T, V), torch.randint(0, V, (B * T,))])


print(f"torch {torch.__version__} kernels: {a.threads} thread(s), {a.dtype}")
_x = torch.randn(12, 64, 512, dtype=dt)
timeit(lambda: F.gelu(_x))  # warm-up, as in bench/kernels.lua
shapes([(12, 64, 128, 4, 65), (4, 256, 768, 12, 8192)][:a.sets])
