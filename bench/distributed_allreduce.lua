-- wick's side of bench/distributed.sh's all-reduce rows: wick.distributed's
-- all_reduce on the same float32 buffers, sizes and iteration scheme as
-- bench/distributed_allreduce_mpi.c (raw MPI_Allreduce) and
-- bench/distributed_allreduce_torch.py (PyTorch, gloo).
--
--   mpirun -np 2 build/wick bench/distributed_allreduce.lua MIN_TIME BYTES...
--
-- For each size: one checked all-reduce (rank r holds r + 1 everywhere; the sum
-- must be n(n+1)/2), two warm-up calls, then batches of 1, 2, 4, ... calls
-- between a barrier and rank 0's clock until one batch takes MIN_TIME seconds
-- (rank 0's time is broadcast so every rank runs the same batches). Rank 0
-- prints "allreduce<TAB>BYTES<TAB>SECONDS_PER_CALL<TAB>CALLS" per size.
--
-- Then, where LuaJIT's FFI reaches MPI (Open MPI's symbols), the same process
-- times raw MPI_Allreduce on the very memory of wick's tensor (MPI_COMM_WORLD,
-- in place) and wick's all_reduce of that tensor again, PAIRS batches of that many calls each,
-- alternating; rank 0 prints the medians as "inproc_raw" and "inproc_wick"
-- lines. Both then run under the same scheduling: on a machine other
-- processes load, separate processes get unequal shares of the cores, so this
-- pair, not the separate C program, shows what wick's layer costs per call.
local wick = require("wick")
local dist = wick.distributed

wick.set_num_threads(1)
if not dist.is_available() then error("wick.distributed is not available (built without MPI)") end
dist.init_process_group { backend = "mpi" }
local rank, size = dist.get_rank(), dist.get_world_size()
local min_time = tonumber(arg[1])
if not min_time then error("usage: distributed_allreduce.lua MIN_TIME BYTES...") end

local function time_size(buf)
  buf:zero_()
  for _ = 1, 2 do dist.all_reduce(buf) end
  local t = wick.zeros(1, { dtype = "float64" })
  local calls = 1
  while true do
    dist.barrier()
    local t0 = wick.clock()
    for _ = 1, calls do dist.all_reduce(buf) end
    t:fill_(wick.clock() - t0)
    dist.broadcast(t, 0)
    local elapsed = t:item()
    if elapsed >= min_time then return elapsed / calls, calls end
    calls = calls * 2
  end
end

-- Raw MPI through LuaJIT's FFI (Open MPI's ABI: handles are pointers to its
-- predefined objects, MPI_IN_PLACE is (void *) 1); nil where it is not reachable.
local function raw_mpi()
  local ok, ffi = pcall(require, "ffi")
  if not ok then return nil end
  local declared = pcall(ffi.cdef, [[
    int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, void *datatype, void *op, void *comm);
    int MPI_Barrier(void *comm);
    char ompi_mpi_comm_world[1]; char ompi_mpi_float[1]; char ompi_mpi_op_sum[1];
    typedef struct wick_tensor wick_tensor;
    void *wick_tensor_data(const wick_tensor *t);
  ]])
  if not declared then return nil end
  local C = ffi.C
  local found = pcall(function() return C.MPI_Allreduce, C.ompi_mpi_comm_world end)
  if not found then return nil end
  local in_place = ffi.cast("void *", 1)
  return {
    -- the memory of wick's own tensor t (a tensor userdata holds its wick_tensor * first):
    -- raw MPI and wick then move the very same buffer, in the same process
    data_of = function(t)
      return C.wick_tensor_data(ffi.cast("wick_tensor **", t)[0])
    end,
    batch = function(buf, count, calls)
      C.MPI_Barrier(C.ompi_mpi_comm_world)
      local t0 = wick.clock()
      for _ = 1, calls do
        C.MPI_Allreduce(in_place, buf, count, C.ompi_mpi_float, C.ompi_mpi_op_sum, C.ompi_mpi_comm_world)
      end
      return wick.clock() - t0
    end,
  }
end

local function wick_batch(buf, calls)
  dist.barrier()
  local t0 = wick.clock()
  for _ = 1, calls do dist.all_reduce(buf) end
  return wick.clock() - t0
end

local function median(v)
  table.sort(v)
  local n = #v
  return n % 2 == 1 and v[(n + 1) / 2] or (v[n / 2] + v[n / 2 + 1]) / 2
end

local raw = raw_mpi()
local pairs_n = tonumber(os.getenv("PAIRS") or "3")
for i = 2, #arg do
  local bytes = tonumber(arg[i])
  local count = math.floor(bytes / 4)
  local buf = wick.full({ count }, rank + 1, { dtype = "float32" })
  dist.all_reduce(buf)
  local want = size * (size + 1) / 2
  if buf:min():item() ~= want or buf:max():item() ~= want then error("wrong all-reduce result") end
  local per_call, calls = time_size(buf)
  if rank == 0 then
    io.write(("allreduce\t%d\t%.9g\t%d\n"):format(bytes, per_call, calls))
    io.flush()
  end
  if raw and pairs_n > 0 then
    local rbuf = raw.data_of(buf)
    raw.batch(rbuf, count, 2)
    local tr, tw = {}, {}
    for k = 1, pairs_n do
      if k % 2 == 1 then
        tr[k] = raw.batch(rbuf, count, calls); tw[k] = wick_batch(buf, calls)
      else
        tw[k] = wick_batch(buf, calls); tr[k] = raw.batch(rbuf, count, calls)
      end
    end
    if rank == 0 then
      io.write(("inproc_raw\t%d\t%.9g\t%d\n"):format(bytes, median(tr) / calls, calls))
      io.write(("inproc_wick\t%d\t%.9g\t%d\n"):format(bytes, median(tw) / calls, calls))
      io.flush()
    end
    rbuf = nil
  end
  buf = nil
  collectgarbage()
end
-- how the signature checks ran: predicted (one message, or none beyond a small
-- all_reduce's own) or full (a round trip of its own)
local predicted, full = require("wick.core").dist.check_counts()
if rank == 0 then io.write(("checks\t%d\t%d\n"):format(predicted, full)) end
dist.destroy_process_group()
