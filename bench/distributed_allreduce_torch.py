"""PyTorch's side of bench/distributed.sh's all-reduce rows: torch.distributed
with gloo, the same float32 buffers, sizes and iteration scheme as
bench/distributed_allreduce_mpi.c (raw MPI) and bench/distributed_allreduce.lua.

    MASTER_ADDR=127.0.0.1 MASTER_PORT=29512 \\
      mpirun -np 2 python bench/distributed_allreduce_torch.py MIN_TIME BYTES...

mpirun only starts the two processes (rank and size from OMPI_COMM_WORLD_*, or
RANK/WORLD_SIZE); the collectives are gloo's. Rank 0 prints
"allreduce<TAB>BYTES<TAB>SECONDS_PER_CALL<TAB>CALLS" per size."""
import os
import sys
import time

import torch
import torch.distributed as dist


def env_int(*names):
    for name in names:
        if name in os.environ:
            return int(os.environ[name])
    raise SystemExit("distributed_allreduce_torch.py: no rank in the environment (start it with mpirun or set RANK)")


def time_size(buf, min_time):
    buf.zero_()
    for _ in range(2):
        dist.all_reduce(buf)
    calls = 1
    t = torch.zeros(1, dtype=torch.float64)
    while True:
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(calls):
            dist.all_reduce(buf)
        t[0] = time.perf_counter() - t0
        dist.broadcast(t, 0)
        if t.item() >= min_time:
            return t.item() / calls, calls
        calls *= 2


def main():
    torch.set_num_threads(1)
    rank = env_int("OMPI_COMM_WORLD_RANK", "RANK")
    size = env_int("OMPI_COMM_WORLD_SIZE", "WORLD_SIZE")
    dist.init_process_group("gloo", rank=rank, world_size=size)
    min_time = float(sys.argv[1])
    for arg in sys.argv[2:]:
        nbytes = int(arg)
        buf = torch.full((nbytes // 4,), float(rank + 1), dtype=torch.float32)
        dist.all_reduce(buf)
        if not bool((buf == size * (size + 1) / 2).all()):
            raise SystemExit("distributed_allreduce_torch.py: wrong all-reduce result")
        per_call, calls = time_size(buf, min_time)
        if rank == 0:
            print("allreduce\t%d\t%.9g\t%d" % (nbytes, per_call, calls), flush=True)
        del buf
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
