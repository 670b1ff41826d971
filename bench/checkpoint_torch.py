"""PyTorch's side of bench/checkpoint.lua.  /usr/bin/python3 bench/checkpoint_torch.py PATH"""
import sys, time
import torch
path = sys.argv[1] if len(sys.argv) > 1 else "/tmp/torch-bench.pt"
torch.set_num_threads(1)
sd = {"layer%02d.weight" % i: torch.rand(4 * 1024 * 1024) for i in range(1, 65)}
t0 = time.perf_counter()
torch.save(sd, path)
print("save_s\t%.6g" % (time.perf_counter() - t0), flush=True)
del sd
best = float("inf")
for _ in range(3):
    t0 = time.perf_counter()
    loaded = torch.load(path)
    total = sum(t.sum().item() for t in loaded.values())
    best = min(best, time.perf_counter() - t0)
    del loaded
print("load_touch_s\t%.6g" % best, flush=True)
