-- ranks: 2 3
-- PyTorch's object collectives in Lua terms: all_gather_object,
-- gather_object, broadcast_object_list, scatter_object_list with nested
-- tables, strings with any bytes, numbers (integers, fractions, inf, nan),
-- booleans and tensors; objects of different sizes on different
-- ranks; an object that cannot be sent is an error on every rank, and the
-- group still works after it.
local wick = require("wick")
local dist = wick.distributed

dist.init_process_group{ backend = "mpi", timeout = 60 }
local rank, size = dist.get_rank(), dist.get_world_size()
local checks = dofile("tests/dist/lib/checks.lua").new(rank, "objects.lua")
local check, errors_with = checks.check, checks.errors_with

-- rank r's object: its size grows with r
local function object_of(r)
  return {
    rank = r, name = ("rank-%d"):rep(r + 1):format(r, r, r), bytes = "\0\1\255;:" .. string.rep("x", 1000 * r),
    frac = r + 0.1, big = 2 ^ 53 + 2 * r, inf = 1 / 0, flag = r % 2 == 0,
    list = { 1, 2, { nested = { r } } },
    t = wick.arange(r + 2):reshape(1, r + 2):to("int64"),
  }
end

local function same_object(a, b)
  return a.rank == b.rank and a.name == b.name and a.bytes == b.bytes and a.frac == b.frac and a.big == b.big
    and a.inf == b.inf and a.flag == b.flag and a.list[3].nested[1] == b.list[3].nested[1] and #a.list == 3
    and a.t.dtype == "int64" and a.t:equal(b.t)
end

-- all_gather_object
do
  local out = {}
  dist.all_gather_object(out, object_of(rank))
  check(#out == size, "all_gather_object fills world_size entries")
  for r = 0, size - 1 do check(same_object(out[r + 1], object_of(r)), ("all_gather_object: rank %d's object"):format(r)) end
  local plain = {}
  dist.all_gather_object(plain, rank == 0 and "zero" or rank)
  check(plain[1] == "zero" and plain[size] == (size > 1 and size - 1 or "zero"), "all_gather_object of plain values")
  local nan = {}
  dist.all_gather_object(nan, 0 / 0)
  check(nan[1] ~= nan[1], "nan survives")
end

-- gather_object
for dst = 0, size - 1 do
  local out = rank == dst and {} or nil
  dist.gather_object({ from = rank }, out, dst)
  if rank == dst then
    for r = 0, size - 1 do check(out[r + 1].from == r, ("gather_object to %d: rank %d's"):format(dst, r)) end
  end
end

-- broadcast_object_list: the list's entries replaced in place; src's length
-- wins (a Lua array's length ends at its first nil)
for src = 0, size - 1 do
  local list = { "mine", rank, false }
  if rank == src then list = { { seed = 1234, src = src }, "hello" } end
  dist.broadcast_object_list(list, src)
  check(type(list[1]) == "table" and list[1].seed == 1234 and list[1].src == src and list[2] == "hello"
    and list[3] == nil, ("broadcast_object_list from %d"):format(src))
end

-- scatter_object_list
for src = 0, size - 1 do
  local input = nil
  if rank == src then
    input = {}
    for r = 0, size - 1 do input[r + 1] = { for_rank = r, from = src } end
  end
  local output = { "placeholder" }
  dist.scatter_object_list(output, input, src)
  check(output[1].for_rank == rank and output[1].from == src, ("scatter_object_list from %d"):format(src))
end

-- an object that cannot be sent: an error on every rank, then the group works
errors_with(function() dist.all_gather_object({}, rank == 1 and { f = print } or {}) end,
  rank == 1 and "holds a function" or "rank 1 could not send its object", "all_gather_object of a function")
local cyclic = {}
cyclic.self = cyclic
errors_with(function() dist.broadcast_object_list({ rank == 0 and cyclic or 0 }, 0) end,
  rank == 0 and "a cycle" or "rank 0 could not send its object", "broadcast_object_list of a cycle")
errors_with(function() dist.all_gather_object(5, 1) end, "expected a table for argument 'object_list'", "args")
local ok_after = {}
dist.all_gather_object(ok_after, rank)
check(ok_after[size] == size - 1, "the group works after the errors")

dist.barrier()
checks.finish()
dist.destroy_process_group()
