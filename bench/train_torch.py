"""PyTorch's side of bench/train.lua: the same models, data, batch and steps.
   /usr/bin/python3 bench/train_torch.py THREADS epoch|mlp|step   (mlp: the epoch's training alone)"""
import gzip, os, sys, time
import numpy as np
import torch
from torch import nn

threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
what = sys.argv[2] if len(sys.argv) > 2 else "epoch"
torch.set_num_threads(threads)
torch.manual_seed(1)
ROOT = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")


def emit(name, value):
    print("%s\t%.6g" % (name, value), flush=True)


def peak_rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024


def idx(name):
    with gzip.open(os.path.join(ROOT, name)) as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


if what in ("epoch", "mlp"):
    x = torch.from_numpy(idx("train-images-idx3-ubyte.gz").astype(np.float32) / 255).view(-1, 1, 28, 28)
    y = torch.from_numpy(idx("train-labels-idx1-ubyte.gz").astype(np.int64))
    tx = torch.from_numpy(idx("t10k-images-idx3-ubyte.gz").astype(np.float32) / 255).view(-1, 1, 28, 28)
    ty = torch.from_numpy(idx("t10k-labels-idx1-ubyte.gz").astype(np.int64))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=128, shuffle=True)
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                          nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    t0 = time.perf_counter()
    for xb, yb in loader:
        opt.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
    epoch = time.perf_counter() - t0
    if what == "mlp":
        emit("epoch_s", epoch)
        sys.exit(0)
    shapes = [(784, 512), (512, 256), (256, 10)]
    mats = [(torch.randn(128, a), torch.randn(b, a), torch.randn(128, b)) for a, b in shapes]
    t1 = time.perf_counter()
    for _ in range(len(loader)):
        for i, (m, w, g) in enumerate(mats):
            m.mm(w.t())
            g.t().mm(m)
            if i > 0:
                g.mm(w)
    matmul = time.perf_counter() - t1
    with torch.no_grad():
        acc = (model(tx).argmax(1) == ty).float().mean().item()
    emit("epoch_s", epoch)
    emit("matmul_s", matmul)
    emit("accuracy", acc)
    emit("peak_rss_mb", peak_rss_mb())
else:
    model = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(1, 32), torch.randn(1, 1)
    loss_fn = nn.MSELoss()

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(2000):
        step()
    best = float("inf")
    for _ in range(5):
        n, t0 = 5000, time.perf_counter()
        for _ in range(n):
            step()
        best = min(best, (time.perf_counter() - t0) / n)
    emit("step_us", best * 1e6)
    emit("peak_rss_mb", peak_rss_mb())
