-- ranks: 2 3
-- The predicted signature check (src/dist/group.c): when the ranks' recent
-- calls predict the next one, its check is one small message, and a small CPU
-- all_reduce rides in it with a flag. Checked here: repeated calls are
-- predicted (check_counts says so) and give the right values for every dtype
-- and op the predicted message carries, below and above the size it carries;
-- a cycle of different calls (a DDP step's buckets) is predicted too; when one
-- rank breaks a predicted pattern (another size, another collective, another
-- op) every rank gets the same clear error, and the group works after it; when
-- every rank changes together, nothing fails.
local wick = require("wick")
local dist = wick.distributed
local counts = require("wick.core").dist.check_counts

assert(dist.is_available(), "built without MPI: this test is not registered then")
dist.init_process_group{ backend = "mpi", timeout = 60 }
local rank, world = dist.get_rank(), dist.get_world_size()

local checks = dofile("tests/dist/lib/checks.lua").new(rank, "predicted.lua")
local check, errors_with = checks.check, checks.errors_with

-- rank r's values for element i (0-based): small integers, exact in every dtype here
-- (`small`: 1 to 3, for products and uint8)
local function value(r, i, small) return small and (i + r) % 3 + 1 or (i * 7 + r * 3) % 11 - 3 end
local function input(n, dtype, small)
  local v = {}
  for i = 0, n - 1 do v[i + 1] = value(rank, i, small) end
  return wick.tensor(v, { dtype = dtype })
end
local function small_for(dtype, op) return op == "product" or dtype == "uint8" end
local function expected(n, dtype, op)
  local small = small_for(dtype, op)
  local v = {}
  for i = 0, n - 1 do
    local acc = value(0, i, small)
    for r = 1, world - 1 do
      local x = value(r, i, small)
      if op == "sum" or op == "avg" then acc = acc + x
      elseif op == "max" then acc = math.max(acc, x)
      elseif op == "min" then acc = math.min(acc, x)
      else acc = acc * x end
    end
    v[i + 1] = acc
  end
  local t = wick.tensor(v, { dtype = dtype })
  if op == "avg" then t = t / world end
  return t
end

local function delta(f)
  local p0, f0 = counts()
  f()
  local p1, f1 = counts()
  return p1 - p0, f1 - f0
end

-- the same call 6 times: the first three take the full check (no history,
-- then a pattern seen once), the rest are predicted; every result is right
local function repeated(n, dtype, op, what)
  local ok = true
  local predicted, full = delta(function()
    for _ = 1, 6 do
      local t = input(n, dtype, small_for(dtype, op))
      dist.all_reduce(t, { op = op })
      ok = ok and t:equal(expected(n, dtype, op))
    end
  end)
  check(ok, what .. ": right values")
  check(predicted >= 3, ("%s: %d of 6 calls predicted"):format(what, predicted))
  check(predicted + full == 6, what .. ": every call checked once")
end

-- 1000 float32 elements ride in the predicted message (at most 16 KiB);
-- 5000 do not (the predicted check is then a flag, the data moves after it)
for _, c in ipairs({
  { "float32", "sum" }, { "float32", "avg" }, { "float64", "max" }, { "float64", "min" }, { "int64", "sum" },
  { "int64", "max" }, { "int32", "product" }, { "int32", "min" }, { "float32", "product" },
  -- dtypes the predicted message does not carry (flag only)
  { "bfloat16", "sum" }, { "uint8", "max" }, { "float16", "min" },
}) do
  for _, n in ipairs({ 1, 1000, 5000 }) do repeated(n, c[1], c[2], ("%s %s of %d"):format(c[1], c[2], n)) end
end
repeated(0, "float32", "sum", "an empty all_reduce")

-- a cycle of three buckets, a barrier and a broadcast, as a training step's:
-- predicted from the third round on
do
  local sizes = { 700, 1300, 3 }
  local ok = true
  local predicted, full = delta(function()
    for _ = 1, 5 do
      for _, n in ipairs(sizes) do
        local t = input(n, "float32")
        dist.all_reduce(t, { op = "avg" })
        ok = ok and t:equal(expected(n, "float32", "avg"))
      end
      dist.barrier()
      local b = wick.full({ 5 }, rank)
      dist.broadcast(b, world - 1)
      ok = ok and b:equal(wick.full({ 5 }, world - 1))
    end
  end)
  check(ok, "a cycle of calls: right values")
  check(predicted >= 10 and predicted + full == 25, ("a cycle of calls: %d predicted, %d full"):format(predicted, full))
end

local function streak(n)
  for _ = 1, 4 do dist.all_reduce(wick.ones(n)) end
  local predicted = delta(function() dist.all_reduce(wick.ones(n)) end)
  check(predicted == 1, "the streak is predicted")
end

local function works_after(what)
  local t = input(1000, "float32")
  dist.all_reduce(t)
  check(t:equal(expected(1000, "float32", "sum")), what .. ": the group works after the error")
end

-- a rank that breaks a predicted pattern: the same error on every rank
for _, n in ipairs({ 1000, 5000 }) do
  streak(n)
  errors_with(function() dist.all_reduce(wick.ones(rank == 1 and n + 1 or n)) end,
    "the tensors' numbers of elements differ across ranks", "another size after a streak of " .. n)
  works_after("another size")
  streak(n)
  errors_with(function()
    if rank == 1 then dist.broadcast(wick.ones(n), 0) else dist.all_reduce(wick.ones(n)) end
  end, "the ranks called different collectives here", "another collective after a streak of " .. n)
  works_after("another collective")
  streak(n)
  errors_with(function() dist.all_reduce(wick.ones(n), { op = rank == 1 and "max" or "sum" }) end,
    "the reduce op differs across ranks", "another op after a streak of " .. n)
  works_after("another op")
  streak(n)
  errors_with(function() dist.all_reduce(wick.ones(n, { dtype = rank == 1 and "float64" or "float32" })) end,
    "the tensors' dtypes differ across ranks", "another dtype after a streak of " .. n)
  works_after("another dtype")
  -- every rank changes together: no error, right values
  streak(n)
  local t = input(n + 7, "float64")
  dist.all_reduce(t, { op = "max" })
  check(t:equal(expected(n + 7, "float64", "max")), "every rank changes after a streak of " .. n)
end

-- async work keeps its order (the comm thread runs the checks)
do
  local ts, hs = {}, {}
  for k = 1, 8 do
    ts[k] = input(k % 2 == 0 and 100 or 3000, "float32")
    hs[k] = dist.all_reduce(ts[k], { async_op = true })
  end
  local ok = true
  for k = 1, 8 do
    hs[k]:wait()
    ok = ok and ts[k]:equal(expected(k % 2 == 0 and 100 or 3000, "float32", "sum"))
  end
  check(ok, "async all_reduces alternating two sizes")
end

dist.barrier()
local n = checks.finish()
if rank == 0 then print(("predicted: %d checks passed on each of %d ranks"):format(n, dist.get_world_size())) end
dist.destroy_process_group()
