"""PyTorch's side of bench/distributed.sh's DDP rows: the Fashion-MNIST MLP of
examples/fashion_mnist_models.lua (784-512-256-10, ReLU), batch 128 per rank,
SGD lr 0.1 momentum 0.9 with a cosine schedule over the run (the example's
optimizer), under DistributedDataParallel (gloo) with a DistributedSampler
(shuffle, seed 0), one thread per rank. wick's side: bench/distributed_mlp.lua.

    MASTER_ADDR=127.0.0.1 MASTER_PORT=29513 \\
      mpirun -np 2 python bench/distributed_mlp_torch.py SAMPLES EPOCHS BUCKET_MB

SAMPLES: the first SAMPLES training images (0: all 60,000). mpirun only starts
the processes; the collectives are gloo's. Rank 0 prints name<TAB>value lines:
epoch_s (wall seconds per epoch, training loop only, mean over EPOCHS), data_s
(the part of it spent getting batches from the loader), steps (batches per rank per epoch), accuracy (test set, after the run), loss (the
mean training loss of the last epoch on rank 0), buckets (DDP's bucket count)."""
import gzip
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
from torch import nn

ROOT = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")


def env_int(*names):
    for name in names:
        if name in os.environ:
            return int(os.environ[name])
    raise SystemExit("distributed_mlp_torch.py: no rank in the environment (start it with mpirun or set RANK)")


def idx(name):
    with gzip.open(os.path.join(ROOT, name)) as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def images(name):
    return torch.from_numpy(idx(name).astype(np.float32) / 255).view(-1, 1, 28, 28)


def labels(name):
    return torch.from_numpy(idx(name).astype(np.int64))


def main():
    samples, epochs, bucket_mb = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    torch.set_num_threads(1)
    torch.manual_seed(1)
    rank = env_int("OMPI_COMM_WORLD_RANK", "RANK")
    size = env_int("OMPI_COMM_WORLD_SIZE", "WORLD_SIZE")
    dist.init_process_group("gloo", rank=rank, world_size=size)

    x, y = images("train-images-idx3-ubyte.gz"), labels("train-labels-idx1-ubyte.gz")
    if samples > 0:
        x, y = x[:samples], y[:samples]
    train = torch.utils.data.TensorDataset(x, y)
    sampler = torch.utils.data.distributed.DistributedSampler(train, num_replicas=size, rank=rank, shuffle=True,
                                                              seed=0)
    loader = torch.utils.data.DataLoader(train, batch_size=128, sampler=sampler)
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                          nn.Linear(256, 10))
    ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=bucket_mb)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs * len(loader))
    loss_fn = nn.CrossEntropyLoss()

    total, running, data = 0.0, 0.0, 0.0
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        running = 0.0
        dist.barrier()
        t0 = time.perf_counter()
        batches = iter(loader)
        while True:
            t1 = time.perf_counter()
            batch = next(batches, None)
            data += time.perf_counter() - t1
            if batch is None:
                break
            xb, yb = batch
            opt.zero_grad()
            loss = loss_fn(ddp(xb), yb)
            loss.backward()
            opt.step()
            schedule.step()
            running += loss.item()
        total += time.perf_counter() - t0
    if rank == 0:
        tx, ty = images("t10k-images-idx3-ubyte.gz"), labels("t10k-labels-idx1-ubyte.gz")
        with torch.no_grad():
            correct = sum(int((model(tx[i:i + 1000]).argmax(1) == ty[i:i + 1000]).sum()) for i in range(0, len(ty), 1000))
        print("epoch_s\t%.6g" % (total / epochs))
        print("data_s\t%.6g" % (data / epochs))
        print("steps\t%d" % len(loader))
        print("accuracy\t%.6g" % (correct / len(ty)))
        print("loss\t%.6g" % (running / len(loader)))
        sizes = ddp._get_ddp_logging_data().get("bucket_sizes")  # "b1, b2, ...": bytes per bucket
        if sizes:
            print("buckets\t%d" % len(str(sizes).split(",")))
        sys.stdout.flush()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
