-- ranks: 2 3
-- Every collective of wick.distributed over MPI, checked against values each
-- rank computes alone: float32, float64, int64 and bfloat16 (and a sum for
-- float16, int32, uint8, bool), contiguous and non-contiguous (transposed
-- views), synchronous and {async_op = true}; then the errors: sizes and dtypes
-- that differ across ranks (an error on every rank, and the group still works
-- after it), a send/recv size mismatch, tensors on the wrong device (meta).
-- ctest runs it as dist_collectives_<N> under mpirun -np N (CMakeLists.txt).
local wick = require("wick")
local dist = wick.distributed

assert(dist.is_available(), "built without MPI: this test is not registered then")
dist.init_process_group{ backend = "mpi", timeout = 60 }
assert(dist.is_initialized())
local rank, world = dist.get_rank(), dist.get_world_size()
assert(world >= 2, "run under mpirun -np 2 or more")
assert(dist.get_local_rank() == rank, "one machine: the local rank is the rank")
assert(dist.get_backend() == "mpi")

local checks = dofile("tests/dist/lib/checks.lua").new(rank, "collectives.lua")
local check, errors_with = checks.check, checks.errors_with

-- rank r's values: small integers, exact in every dtype (also bfloat16, and
-- their sums over 3 ranks); `small` ones (1..3) for products
local ROWS, COLS = 3, 4
local function values(r, small)
  local v = {}
  for i = 0, ROWS * COLS - 1 do v[i + 1] = small and (i + r) % 3 + 1 or (i * 7 + r * 3) % 11 - 3 end
  return wick.tensor(v, { dtype = "float64" }):reshape(ROWS, COLS)
end
local function as(v, dtype) return v:to(dtype) end

-- the tensor a rank passes: contiguous, or a transposed view with the same values
local function input(v, dtype, contiguous)
  local t = as(v, dtype)
  if contiguous then return t:clone() end
  local x = wick.empty({ v:size(2), v:size(1) }, { dtype = dtype }):t()
  x:copy_(t)
  assert(not x:is_contiguous())
  return x
end

local function same(a, b) return a.dtype == b.dtype and a:equal(b) end

local function expected_reduce(op, dtype, small)
  local acc = values(0, small)
  for r = 1, world - 1 do
    local v = values(r, small)
    if op == "sum" or op == "avg" then acc = acc + v
    elseif op == "max" then acc = wick.maximum(acc, v)
    elseif op == "min" then acc = wick.minimum(acc, v)
    elseif op == "product" then acc = acc * v end
  end
  acc = as(acc, dtype)
  if op == "avg" then acc = acc / world end -- the engine sums, then divides in the dtype
  return acc
end

-- runs a collective synchronously or async (then waits); returns the handle or nil
local function run(async, fn)
  if not async then
    local r = fn(nil)
    check(r == nil, "a synchronous collective returns nothing")
    return
  end
  local w = fn({ async_op = true })
  check(w ~= nil and type(w.wait) == "function", "async_op returns a work handle")
  w:wait()
  check(w:is_completed(), "work:is_completed() after wait")
end

local DTYPES = { "float32", "float64", "int64", "bfloat16" }
for _, dtype in ipairs(DTYPES) do
  local floating = dtype ~= "int64"
  for _, contiguous in ipairs({ true, false }) do
    for _, async in ipairs({ false, true }) do
      local case = ("%s %s %s"):format(dtype, contiguous and "contiguous" or "transposed", async and "async" or "sync")

      -- all_reduce, every op
      for _, op in ipairs({ "sum", "avg", "max", "min", "product" }) do
        if op ~= "avg" or floating then
          local small = op == "product"
          local t = input(values(rank, small), dtype, contiguous)
          run(async, function(o)
            if o then o.op = op; return dist.all_reduce(t, o) end
            return dist.all_reduce(t, { op = op })
          end)
          check(same(t, expected_reduce(op, dtype, small)), case .. " all_reduce " .. op)
        end
      end
      if not floating then
        local t = input(values(rank), dtype, contiguous)
        errors_with(function() dist.all_reduce(t, { op = "avg" }) end, "op 'avg' needs a floating point tensor",
          case .. " all_reduce avg of int64")
      end

      -- broadcast from the last rank and from rank 0
      for _, src in ipairs({ world - 1, 0 }) do
        local t = input(values(rank), dtype, contiguous)
        run(async, function(o) return dist.broadcast(t, src, o) end)
        check(same(t, as(values(src), dtype)), case .. " broadcast from " .. src)
      end

      -- all_gather into a list (the list's tensors transposed views too)
      do
        local t = input(values(rank), dtype, contiguous)
        local list = {}
        for r = 1, world do list[r] = input(values(0):zero_(), dtype, contiguous) end
        run(async, function(o) return dist.all_gather(list, t, o) end)
        for r = 1, world do check(same(list[r], as(values(r - 1), dtype)), case .. " all_gather list[" .. r .. "]") end
        check(same(t, as(values(rank), dtype)), case .. " all_gather leaves the input")
      end

      -- all_gather_into_tensor: out is [world * ROWS, COLS], rank r's rows at r * ROWS
      do
        local t = input(values(rank), dtype, contiguous)
        local want = {}
        for r = 0, world - 1 do want[r + 1] = values(r) end
        want = as(wick.cat(want, 1), dtype)
        local out = input(want:double():clone():zero_(), dtype, contiguous)
        run(async, function(o) return dist.all_gather_into_tensor(out, t, o) end)
        check(same(out, want), case .. " all_gather_into_tensor")
      end

      -- reduce_scatter_tensor: each rank's input is [world * ROWS, COLS]; out is its ROWS of the sum
      for _, op in ipairs({ "sum", "max", floating and "avg" or "min" }) do
        local parts, sums = {}, {}
        for r = 0, world - 1 do parts[r + 1] = values(r) + rank * 2 end
        local t = input(wick.cat(parts, 1), dtype, contiguous)
        -- what the reduction of every rank's input gives, rank by rank's rows
        local acc
        for q = 0, world - 1 do
          local mine = {}
          for r = 0, world - 1 do mine[r + 1] = values(r) + q * 2 end
          local full = wick.cat(mine, 1)
          if not acc then acc = full
          elseif op == "sum" or op == "avg" then acc = acc + full
          elseif op == "max" then acc = wick.maximum(acc, full)
          else acc = wick.minimum(acc, full) end
        end
        local want = as(acc:narrow(1, rank * ROWS + 1, ROWS), dtype)
        if op == "avg" then want = want / world end
        local out = input(values(0):zero_(), dtype, contiguous)
        run(async, function(o)
          if o then o.op = op; return dist.reduce_scatter_tensor(out, t, o) end
          return dist.reduce_scatter_tensor(out, t, { op = op })
        end)
        check(same(out, want), case .. " reduce_scatter_tensor " .. op)
      end

      -- send / recv around the ring: each rank sends to the next and receives from the previous
      do
        local t = input(values(rank), dtype, contiguous)
        local got = input(values(0):zero_(), dtype, contiguous)
        local nxt, prev = (rank + 1) % world, (rank - 1) % world
        local w = dist.send(t, nxt, { async_op = true })
        run(async, function(o) return dist.recv(got, prev, o) end)
        w:wait()
        check(same(got, as(values(prev), dtype)), case .. " send/recv")
      end

      run(async, function(o) return dist.barrier(o) end)
    end
  end
end

-- the other dtypes: a sum each (bool: or), and a max for uint8
for _, dtype in ipairs({ "float16", "int32", "uint8" }) do
  local v = values(rank):abs()
  local t = as(v, dtype)
  dist.all_reduce(t)
  local want = values(0):abs()
  for r = 1, world - 1 do want = want + values(r):abs() end
  check(same(t, as(want, dtype)), dtype .. " all_reduce sum")
end
do
  local t = wick.tensor({ rank == 0, false, true, rank == 1 })
  dist.all_reduce(t)
  check(same(t, wick.tensor({ true, false, true, true })), "bool all_reduce sum (or)")
  t = wick.tensor({ rank == 0, true, false, true })
  dist.all_reduce(t, { op = "min" })
  check(same(t, wick.tensor({ false, true, false, true })), "bool all_reduce min (and)")
end

-- several async works in flight, a synchronous one queued behind them, a handle dropped unwaited
do
  local ts, works = {}, {}
  for i = 1, 6 do
    ts[i] = wick.full({ 1000 }, rank + i)
    works[i] = dist.all_reduce(ts[i], { async_op = true })
  end
  dist.all_reduce(wick.full({ 3 }, 1), { async_op = true }) -- dropped at once
  collectgarbage()
  local s = wick.full({ 5 }, rank)
  dist.all_reduce(s) -- runs after the six, in order
  local base = 0
  for r = 0, world - 1 do base = base + r end
  check(same(s, wick.full({ 5 }, base)), "sync all_reduce behind async ones")
  for i = 1, 6 do
    works[i]:wait()
    check(same(ts[i], wick.full({ 1000 }, base + world * i)), "async all_reduce #" .. i)
  end
  check(works[1]:wait() == true, "wait again on a finished work")
end

-- an all_reduce larger than the signature check's payload (256 bytes): its first
-- 256 bytes ride in the check's message, the rest in a second call; values vary
-- by position, so a prefix reduced twice or a remainder at the wrong offset fails
do
  local N = 3001 -- 6002 bytes in bfloat16, 24008 in int64: every dtype splits
  local function long(r, small)
    local v = {}
    for i = 0, N - 1 do v[i + 1] = small and (i + r) % 3 + 1 or (i * 7 + r * 3) % 11 - 3 end
    return wick.tensor(v, { dtype = "float64" })
  end
  for _, dtype in ipairs(DTYPES) do
    for _, op in ipairs({ "sum", "max", "min", "product" }) do
      local small = op == "product"
      local t = as(long(rank, small), dtype)
      dist.all_reduce(t, { op = op })
      local want = long(0, small)
      for r = 1, world - 1 do
        local v = long(r, small)
        if op == "sum" then want = want + v
        elseif op == "max" then want = wick.maximum(want, v)
        elseif op == "min" then want = wick.minimum(want, v)
        else want = want * v end
      end
      check(same(t, as(want, dtype)), dtype .. " all_reduce " .. op .. " of " .. N .. " elements (split after 256 bytes)")
    end
  end
end

-- a large tensor (64 MiB float32 over the comm thread and inline)
do
  local n = 16 * 1024 * 1024
  local t = wick.full({ n }, rank + 1)
  dist.all_reduce(t)
  local want = world * (world + 1) / 2
  check(t:min():item() == want and t:max():item() == want, "64 MiB all_reduce")
end

-- a barrier waits for the slowest rank (sync and async)
for _, async in ipairs({ false, true }) do
  dist.barrier() -- the ranks leave it at nearly the same time: the sleep below is what is measured
  local t0 = wick.clock()
  if rank == world - 1 then os.execute("sleep 0.5") end
  run(async, function(o) return dist.barrier(o) end)
  check(wick.clock() - t0 >= 0.25, ("barrier (%s) waited %.3f s for the slowest rank"):format(
    async and "async" or "sync", wick.clock() - t0))
end

-- all_gather into a list on some ranks meets all_gather_into_tensor on others (the same bytes)
do
  local t = values(rank)
  local got
  if rank % 2 == 0 then
    local list = {}
    for r = 1, world do list[r] = values(0):zero_() end
    dist.all_gather(list, t)
    got = wick.cat(list, 1)
  else
    got = wick.zeros(world * ROWS, COLS, { dtype = "float64" })
    dist.all_gather_into_tensor(got, t)
  end
  local want = {}
  for r = 0, world - 1 do want[r + 1] = values(r) end
  check(same(got, wick.cat(want, 1)), "all_gather meets all_gather_into_tensor")
end

-- leaves that require grad (parameters: DDP broadcasts and averages them),
-- 0-dim and empty tensors
do
  for _, contiguous in ipairs({ true, false }) do
    local p = input(values(rank), "float32", contiguous):requires_grad_()
    dist.all_reduce(p, { op = "avg" })
    check(same(p:detach(), expected_reduce("avg", "float32")), "avg into a leaf that requires grad")
    check(p.requires_grad and p.grad_fn == nil, "the leaf stays a leaf")
    dist.broadcast(p, 0)
    check(same(p:detach(), expected_reduce("avg", "float32")), "broadcast into a leaf that requires grad")
  end
  local s = wick.tensor(rank + 1.0)
  dist.all_reduce(s)
  check(s:dim() == 0 and s:item() == world * (world + 1) / 2, "0-dim all_reduce")
  local e = wick.zeros(0, 3)
  dist.all_reduce(e)
  dist.broadcast(e, 0)
  local list = {}
  for r = 1, world do list[r] = wick.zeros(0, 3) end
  dist.all_gather(list, e)
  check(e:numel() == 0 and list[world]:numel() == 0, "empty tensors")
end

-- errors that are the same on every rank, after which the group still works
errors_with(function() dist.all_reduce(wick.zeros(rank == 0 and 3 or 4)) end,
  "the tensors' numbers of elements differ across ranks", "sizes differ across ranks")
-- a small all_reduce rides in the check's own message, a large one does not: they still meet
errors_with(function() dist.all_reduce(wick.zeros(rank == 0 and 10 or 100000)) end,
  "the tensors' numbers of elements differ across ranks (10 on some, 100000 on others)", "small meets large")
errors_with(function() dist.all_reduce(wick.zeros(4, { dtype = rank == 0 and "float32" or "int64" })) end,
  "dtypes differ across ranks", "dtypes differ across ranks")
errors_with(function() dist.broadcast(wick.zeros(4), rank == 0 and 0 or 1) end,
  "the src ranks differ across ranks", "broadcast src differs across ranks")
errors_with(function()
  if rank == 0 then dist.broadcast(wick.zeros(4), 0) else dist.all_reduce(wick.zeros(4)) end
end, "the ranks called different collectives here", "different collectives")
errors_with(function() dist.all_reduce(wick.zeros(4), { op = rank == 0 and "sum" or "max" }) end,
  "the reduce op differs across ranks", "ops differ across ranks")
do
  local t = wick.full({ 4 }, rank)
  dist.all_reduce(t)
  check(t[1]:item() == world * (world - 1) / 2, "the group works after the errors")
end

-- a recv whose tensor does not fit what was sent: an error on the receiver
if rank == 0 then
  dist.send(wick.zeros(4), 1)
  dist.send(wick.zeros(4), 1)
elseif rank == 1 then
  errors_with(function() dist.recv(wick.zeros(3), 0) end, "rank 0 sent 4 elements of float32, but the tensor holds 3",
    "recv size mismatch")
  errors_with(function() dist.recv(wick.zeros(4, { dtype = "int64" }), 0) end,
    "rank 0 sent 4 elements of float32, but the tensor holds 4 of int64", "recv dtype mismatch")
end

-- errors found before anything moves (each rank alone)
local meta = wick.empty({ 4 }, { device = "meta" })
errors_with(function() dist.all_reduce(meta) end, "the tensor is on meta, but the mpi backend moves cpu tensors",
  "all_reduce of a meta tensor")
errors_with(function() dist.broadcast(meta, 0) end, "is on meta", "broadcast of a meta tensor")
errors_with(function() dist.all_gather_into_tensor(wick.zeros(4 * world), meta) end, "is on meta",
  "all_gather_into_tensor of a meta tensor")
errors_with(function() dist.broadcast(wick.zeros(2), world) end, "src must be a rank from 0 to " .. (world - 1),
  "broadcast from a rank that does not exist")
errors_with(function() dist.send(wick.zeros(2), rank) end, "is this process's own rank", "send to itself")
errors_with(function() dist.all_gather({ wick.zeros(2) }, wick.zeros(2)) end,
  "the list must hold world size (" .. world .. ") tensors, got 1", "all_gather with a short list")
errors_with(function() dist.all_gather_into_tensor(wick.zeros(3), wick.zeros(2)) end,
  "out must hold world size", "all_gather_into_tensor with a wrong out")
errors_with(function() dist.reduce_scatter_tensor(wick.zeros(2), wick.zeros(3)) end,
  "must hold world size", "reduce_scatter_tensor with a wrong input")
errors_with(function() dist.all_reduce(wick.zeros(2), { op = "mean" }) end, "invalid value 'mean' for argument 'op'",
  "unknown op")
errors_with(function() dist.all_reduce(wick.zeros(2), { async = true }) end, "unknown option 'async'",
  "unknown option")
errors_with(function() dist.all_reduce({}) end, "expected a tensor", "all_reduce of a table")
errors_with(function() dist.init_process_group() end, "already initialized", "init twice")

dist.barrier()
dist.destroy_process_group()
check(not dist.is_initialized(), "destroy_process_group")
errors_with(function() dist.all_reduce(wick.zeros(2)) end, "not initialized", "all_reduce after destroy")
-- a second group in the same process (MPI stays initialized until exit)
dist.init_process_group{ timeout = 30 }
local t = wick.ones(3)
dist.all_reduce(t)
check(same(t, wick.full({ 3 }, world)), "all_reduce in a second group")
dist.destroy_process_group()

local n = checks.finish()
if rank == 0 then print(("collectives: %d checks passed on each of %d ranks"):format(n, world)) end
