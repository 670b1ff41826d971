-- ranks: 1 2
-- The NCCL backend on CUDA tensors, one GPU per rank (src/dist/nccl.c): every
-- collective against values each rank computes alone, for every dtype NCCL
-- moves, contiguous and not, synchronous and async_op. Without a GPU (or
-- without NCCL, or with fewer GPUs than ranks on this machine) it prints
-- "skipped: <why>" and exits 0: it never claims a pass it did not run.
local wick = require("wick")
local dist = wick.distributed

local function skip(why)
  io.stdout:write("skipped: ", why, "\n")
  io.stdout:flush()
  os.exit(0)
end

if not dist.is_available() then skip("wick.distributed is not available (built without MPI)") end
if not wick.cuda.is_available() then skip("no CUDA GPU (wick.cuda.is_available() is false)") end
local local_size = tonumber(os.getenv("OMPI_COMM_WORLD_LOCAL_SIZE") or os.getenv("MPI_LOCALNRANKS") or "1")
if wick.cuda.device_count() < local_size then
  skip(("%d ranks on this machine but %d GPU(s): NCCL needs one GPU per rank"):format(local_size,
    wick.cuda.device_count()))
end
local ok, err = pcall(dist.init_process_group, {backend = "nccl", timeout = 60})
if not ok then
  if tostring(err):find("NCCL is not available", 1, true) then skip(tostring(err)) end
  error(err, 0)
end

local rank, n = dist.get_rank(), dist.get_world_size()
local device = "cuda:" .. wick.cuda.current_device()
local checks = 0

local function fail(msg) error(("[rank %d] nccl check failed: %s"):format(rank, msg), 2) end
local function check(cond, msg)
  checks = checks + 1
  if not cond then fail(msg) end
end
-- every element of `t` (on the GPU) equals `want`
local function all_equal(t, want, what)
  local got = t:cpu():double()
  local w = wick.full(got:size(), want, {dtype = "float64"})
  check(got:equal(w), ("%s: got %s, want every element %s"):format(what, tostring(got), tostring(want)))
end

check(dist.get_backend() == "nccl", "the backend is nccl")
-- In a world of one (one GPU) a reduction over ranks is the identity, so the
-- all_reduce checks cannot tell NCCL from nothing there; all_gather,
-- all_gather_into_tensor and reduce_scatter_tensor write fresh outputs and can.
-- The dtype and op tables are checked against nccl.h by test_dist_nccl.
-- the rank's device is local_rank % device_count, made current by init
check(wick.cuda.current_device() == dist.get_local_rank() % wick.cuda.device_count(), "current device")

local dtypes = {"float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8"}
local function factorial(k) local p = 1 for i = 2, k do p = p * i end return p end

for _, dt in ipairs(dtypes) do
  local floating = dt:find("float") ~= nil
  local function mk(v, size) return wick.full(size or {5}, v, {dtype = dt, device = device}) end
  -- sum, max, min, product over values rank + 1
  local t = mk(rank + 1); dist.all_reduce(t); all_equal(t, n * (n + 1) / 2, dt .. " sum")
  t = mk(rank + 1); dist.all_reduce(t, {op = "max"}); all_equal(t, n, dt .. " max")
  t = mk(rank + 1); dist.all_reduce(t, {op = "min"}); all_equal(t, 1, dt .. " min")
  t = mk(rank + 1); dist.all_reduce(t, {op = "product"}); all_equal(t, factorial(n), dt .. " product")
  if floating then t = mk(2 * rank); dist.all_reduce(t, {op = "avg"}); all_equal(t, n - 1, dt .. " avg") end
  -- broadcast from the last rank
  t = mk(rank + 7); dist.broadcast(t, n - 1); all_equal(t, n + 6, dt .. " broadcast")
  -- all_gather into a list and into one tensor
  local list = {}
  for r = 1, n do list[r] = mk(-1, {3}) end
  dist.all_gather(list, mk(rank + 2, {3}))
  for r = 1, n do all_equal(list[r], r + 1, dt .. " all_gather #" .. r) end
  local out = mk(-1, {n * 3})
  dist.all_gather_into_tensor(out, mk(rank + 2, {3}))
  for r = 1, n do all_equal(out:narrow(1, (r - 1) * 3 + 1, 3), r + 1, dt .. " all_gather_into_tensor") end
  -- reduce_scatter: rank r gets the sum over ranks of block r, which rank q filled with q + r + 1
  local src = wick.cat((function()
    local blocks = {}
    for r = 1, n do blocks[r] = mk(rank + r, {2}) end
    return blocks
  end)())
  local part = mk(-1, {2})
  dist.reduce_scatter_tensor(part, src)
  all_equal(part, n * (rank + 1) + n * (n - 1) / 2, dt .. " reduce_scatter_tensor")
end

-- bool: sum is a logical or, product a logical and (PyTorch's NCCL backend)
local b = wick.full({4}, rank == 0, {dtype = "bool", device = device})
dist.all_reduce(b)
check(b:cpu():all() == true, "bool sum (or)")
b = wick.full({4}, rank == 0, {dtype = "bool", device = device})
dist.all_reduce(b, {op = "product"})
check(b:cpu():any() == (n == 1), "bool product (and)")

-- a non-contiguous tensor is staged and written back
local base = wick.arange(12, {device = device}):reshape(3, 4)
local view = base:t()
check(not view:is_contiguous(), "the view is not contiguous")
dist.all_reduce(view)
check(base:cpu():equal(wick.arange(12):reshape(3, 4) * n), "non-contiguous all_reduce")

-- async_op: a handle that completes; the result is seen after wait
local big = wick.full({4194304}, rank + 1, {device = device}) -- 16 MiB of float32
local work = dist.all_reduce(big, {async_op = true})
work:wait()
check(work:is_completed() == true, "is_completed after wait")
check(big[1]:item() == n * (n + 1) / 2 and big[-1]:item() == n * (n + 1) / 2, "async all_reduce of 16 MiB")

-- point to point, and barrier
if n >= 2 then
  if rank == 0 then
    dist.send(wick.arange(1, 9, {device = device, dtype = "float64"}), 1)
  elseif rank == 1 then
    local r = wick.zeros(8, {device = device, dtype = "float64"})
    dist.recv(r, 0)
    check(r:cpu():equal(wick.arange(1, 9, {dtype = "float64"})), "send/recv")
  end
end
-- a recv whose tensor differs from the sender's is a clear error on the
-- receiver; the message is dropped, so both ranks go on with the group
if n >= 2 then
  if rank == 0 then
    dist.send(wick.ones(4, {device = device}), 1)
  elseif rank == 1 then
    local okr, errr = pcall(dist.recv, wick.zeros(8, {device = device, dtype = "float64"}), 0)
    check(not okr and tostring(errr):find("rank 0 sent 4 elements of float32, but the tensor holds 8 of float64",
      1, true) ~= nil, "mismatched recv: " .. tostring(errr))
  end
  local after = wick.full({3}, rank + 1, {device = device})
  dist.all_reduce(after)
  all_equal(after, n * (n + 1) / 2, "all_reduce after a mismatched recv")
end
-- batch_isend_irecv: a ring where every rank sends before it receives, 16 MiB
-- (past NCCL's buffers: one group per batch, so nothing waits on itself);
-- then a batch receive of the wrong size fails at the call, and the group goes on
if n >= 2 then
  local left, right = (rank - 1 + n) % n, (rank + 1) % n
  local recv_t = wick.zeros(4194304, {device = device})
  local reqs = dist.batch_isend_irecv({dist.P2POp(dist.isend, wick.full({4194304}, rank + 1, {device = device}), right),
                                       dist.P2POp(dist.irecv, recv_t, left)})
  for _, req in ipairs(reqs) do req:wait() end
  all_equal(recv_t, left + 1, "batch_isend_irecv ring of 16 MiB")
  if rank == 0 then
    dist.batch_isend_irecv({dist.P2POp(dist.isend, wick.ones(5, {device = device}), 1)})[1]:wait()
  elseif rank == 1 then
    local okb, errb = pcall(dist.batch_isend_irecv, {dist.P2POp(dist.irecv, wick.zeros(4, {device = device}), 0)})
    check(not okb and tostring(errb):find("rank 0 sent 5 elements of float32, but the tensor holds 4", 1, true) ~= nil,
      "mismatched batch recv: " .. tostring(errb))
  end
  local after = wick.full({3}, rank + 1, {device = device})
  dist.all_reduce(after)
  all_equal(after, n * (n + 1) / 2, "all_reduce after a mismatched batch recv")
end
dist.barrier()

-- a CPU tensor is an error on the nccl backend, at the caller's line
local cpu_ok, cpu_err = pcall(dist.all_reduce, wick.ones(3))
check(not cpu_ok and tostring(cpu_err):find("cuda") ~= nil, "a CPU tensor on nccl is an error: " .. tostring(cpu_err))

dist.destroy_process_group()
print(("[rank %d] nccl: %d checks passed, world size %d"):format(rank, checks, n))
