-- wick's side of bench/distributed.sh's DDP rows: the Fashion-MNIST MLP of
-- examples/fashion_mnist_models.lua (784-512-256-10, ReLU), batch 128 per rank,
-- SGD lr 0.1 momentum 0.9 with a cosine schedule over the run (the example's
-- optimizer), under nn.parallel.DistributedDataParallel with a
-- DistributedSampler (shuffle, seed 0), one thread per rank. PyTorch's side:
-- bench/distributed_mlp_torch.py.
--
--   mpirun -np 2 build/wick bench/distributed_mlp.lua SAMPLES EPOCHS BUCKET_MB
--
-- SAMPLES: the first SAMPLES training images (0: all 60,000). Rank 0 prints
-- name<TAB>value lines: epoch_s (wall seconds per epoch, training loop only,
-- mean over EPOCHS), data_s (the part of it spent getting batches), steps
-- (batches per rank per epoch), accuracy (test set, after the run), loss
-- (mean training loss of the last epoch on rank 0), in_sync (1 when every
-- rank ends with the same parameters), and from DDP's communication
-- statistics over the timed epochs: allreduce_s (time the bucket all-reduces
-- took), wait_s (time backward's end waited for them: exposed),
-- buckets (bucket all-reduces per step), hidden (1 - wait_s / allreduce_s);
-- standalone_s (the same buckets all-reduced as many times with nothing else
-- running) and hidden_vs_standalone (1 - wait_s / standalone_s).
local wick = require("wick")
local nn = wick.nn
local dist = wick.distributed

local samples, epochs, bucket_mb = tonumber(arg[1] or "0"), tonumber(arg[2] or "1"), tonumber(arg[3] or "1")
wick.set_num_threads(1)
wick.manual_seed(1)
dist.init_process_group { backend = "mpi" }
local rank, size = dist.get_rank(), dist.get_world_size()

local full = wick.data.FashionMNIST { train = true }
local n = samples > 0 and math.min(samples, full:len()) or full:len()
local train = wick.data.TensorDataset(full.images:narrow(1, 1, n), full.labels:narrow(1, 1, n))
local sampler = wick.data.DistributedSampler(train, { num_replicas = size, rank = rank, shuffle = true, seed = 0 })
local loader = wick.data.DataLoader(train, { batch_size = 128, sampler = sampler })
local model = nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
  nn.Linear(256, 10))
local ddp = nn.parallel.DistributedDataParallel(model, { bucket_cap_mb = bucket_mb })
local opt = wick.optim.SGD(model:parameters(), { lr = 0.1, momentum = 0.9 })
local schedule = wick.optim.CosineAnnealingLR(opt, { T_max = epochs * loader:len() })
local loss_fn = nn.CrossEntropyLoss()

-- DDP's cumulative communication statistics (the names agreed with helper B in
-- /work/notes/ISSUE15-D.md); nil when this DDP has none.
local function comm_stats()
  if type(ddp.comm_stats) ~= "function" then return nil end
  local s = ddp:comm_stats()
  return { allreduce_s = s.allreduce_s, wait_s = s.wait_s, buckets = s.buckets, bucket_sizes = s.bucket_sizes }
end

-- seconds per step of all-reducing DDP's buckets with nothing else running
-- (the same sizes, float32, one after the other, as a step does them)
local function standalone_step_s(bucket_sizes)
  local bufs = {}
  for i, bytes in ipairs(bucket_sizes) do bufs[i] = wick.zeros(math.floor(bytes / 4)) end
  for _, b in ipairs(bufs) do dist.all_reduce(b) end
  local reps = 100
  dist.barrier()
  local t0 = wick.clock()
  for _ = 1, reps do
    for _, b in ipairs(bufs) do dist.all_reduce(b) end
  end
  local t = wick.zeros(1, { dtype = "float64" }):fill_((wick.clock() - t0) / reps)
  dist.broadcast(t, 0)
  return t:item()
end

local total, running, data = 0, 0, 0
local before = comm_stats()
for epoch = 1, epochs do
  sampler:set_epoch(epoch - 1)
  running = 0
  dist.barrier()
  local t0 = wick.clock()
  local batches = loader:iter()
  while true do
    local t1 = wick.clock()
    local x, y = batches()
    data = data + (wick.clock() - t1)
    if x == nil then break end
    opt:zero_grad()
    local loss = loss_fn(ddp(x), y)
    loss:backward()
    opt:step()
    schedule:step()
    running = running + loss:item()
  end
  total = total + (wick.clock() - t0)
end
local after = comm_stats()

-- the same parameters on every rank: each rank's sum of all parameter values,
-- compared through a max and a min all-reduce
local checksum = wick.zeros(1, { dtype = "float64" })
wick.no_grad(function()
  for _, p in ipairs(model:parameters()) do checksum:add_(p:to("float64"):sum()) end
end)
local hi, lo = checksum:clone(), checksum:clone()
dist.all_reduce(hi, { op = "max" })
dist.all_reduce(lo, { op = "min" })
local standalone = after and after.bucket_sizes and standalone_step_s(after.bucket_sizes) or nil


if rank == 0 then
  local test = wick.data.FashionMNIST { train = false }
  local correct = 0
  wick.no_grad(function()
    for x, y in wick.data.DataLoader(test, { batch_size = 1000 }):iter() do
      correct = correct + model(x):argmax(2):eq(y):sum():item()
    end
  end)
  local function emit(name, value) io.write(("%s\t%.6g\n"):format(name, value)) end
  emit("epoch_s", total / epochs)
  emit("data_s", data / epochs)
  emit("steps", loader:len())
  emit("accuracy", correct / test:len())
  emit("loss", running / loader:len())
  emit("in_sync", hi:item() == lo:item() and 1 or 0)
  if before and after then
    local steps = epochs * loader:len()
    local allreduce, wait = after.allreduce_s - before.allreduce_s, after.wait_s - before.wait_s
    emit("allreduce_s", allreduce)
    emit("wait_s", wait)
    emit("buckets", (after.buckets - before.buckets) / steps)
    emit("hidden", allreduce > 0 and 1 - wait / allreduce or 0)
    if standalone then
      emit("standalone_s", standalone * steps)
      emit("hidden_vs_standalone", 1 - wait / (standalone * steps))
    end
  end
  io.flush()
end
dist.barrier()
dist.destroy_process_group()
