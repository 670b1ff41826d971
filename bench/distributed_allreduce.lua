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

for i = 2, #arg do
  local bytes = tonumber(arg[i])
  local buf = wick.full({ math.floor(bytes / 4) }, rank + 1, { dtype = "float32" })
  dist.all_reduce(buf)
  local want = size * (size + 1) / 2
  if buf:min():item() ~= want or buf:max():item() ~= want then error("wrong all-reduce result") end
  local per_call, calls = time_size(buf)
  if rank == 0 then
    io.write(("allreduce\t%d\t%.9g\t%d\n"):format(bytes, per_call, calls))
    io.flush()
  end
  buf = nil
  collectgarbage()
end
dist.destroy_process_group()
