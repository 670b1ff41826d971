-- wick.distributed: collectives over MPI (CPU tensors) and NCCL (CUDA tensors),
-- modelled on torch.distributed. The engine is C (src/dist/, include/wick_dist.h):
-- this file checks the Lua arguments and options and calls core.dist.
-- Ranks are 0-based, like MPI ranks and CUDA ordinals (src, dst too).
local core = require("wick.core")
local check = require("wick.argcheck")

local C = core.dist
local M = {}

local type, select = type, select

--- true when wick was built with MPI; false and the reason otherwise.
function M.is_available()
  local ok, why = C.is_available()
  if ok then return true end
  return false, why
end

--- init_process_group{backend = "mpi" | "nccl", timeout = seconds[, rank = r,
--- world_size = n]}, or init_process_group("mpi"[, {timeout = ...}]) as
--- PyTorch's positional backend. mpirun/srun give the rank and world size; a
--- rank or world_size passed as well (ports of PyTorch's spawn scripts) must
--- agree with them.
local INIT = { backend = "string", timeout = "number", rank = "integer", world_size = "integer" }
function M.init_process_group(opts, more)
  local fn = "init_process_group"
  if type(opts) == "string" then
    check.options(more, fn, { timeout = "number", rank = "integer", world_size = "integer" })
    more = more or {}
    opts = { backend = opts, timeout = more.timeout, rank = more.rank, world_size = more.world_size }
  end
  check.options(opts, fn, INIT)
  opts = opts or {}
  if opts.backend ~= nil then check.one_of(opts.backend, fn, "backend", { "mpi", "nccl" }) end
  if opts.timeout ~= nil then
    local t = opts.timeout
    if t ~= t or t <= 0 or t > 1e9 then
      check.fail(fn, "timeout must be a positive number of seconds, got %s", tostring(t))
    end
  end
  C.init(opts.backend, opts.timeout)
  for _, key in ipairs({ "rank", "world_size" }) do
    local given, actual = opts[key], key == "rank" and C.rank() or C.world_size()
    if given ~= nil and given ~= actual then
      C.destroy()
      check.fail(fn, "%s = %d was passed, but the launcher (mpirun, srun) started this process with %s %d; "
        .. "leave %s out or launch with the matching -np", key, given, key, actual, key)
    end
  end
end

--- PyTorch's dist.ReduceOp: {op = dist.ReduceOp.SUM} is {op = "sum"}
M.ReduceOp = { SUM = "sum", AVG = "avg", MAX = "max", MIN = "min", PRODUCT = "product" }

M.is_initialized = C.is_initialized
M.destroy_process_group = C.destroy
M.get_rank = C.rank
M.get_world_size = C.world_size
M.get_local_rank = C.local_rank

--- the backend's name ("mpi" or "nccl") of the initialized group
function M.get_backend()
  local _, _, _, backend = C.info()
  return backend
end

-- {op = ..., async_op = ...}: the op's name (or nil) and the async flag. Where
-- an op is taken, a string alone is it: all_reduce(t, "max") or
-- all_reduce(t, dist.ReduceOp.MAX), PyTorch's positional op.
local function options(opts, fn, with_op)
  if with_op and type(opts) == "string" then opts = { op = opts } end
  if with_op then
    check.options(opts, fn, { op = "string", async_op = "boolean" })
  else
    check.options(opts, fn, { async_op = "boolean" })
  end
  if opts == nil then return nil, false end
  if with_op and opts.op ~= nil then
    check.one_of(opts.op, fn, "op", { "sum", "avg", "max", "min", "product" })
  end
  return opts.op, opts.async_op == true
end

local function rank_arg(v, fn, name)
  check.int(v, fn, name, 0)
  return v
end

-- Under LuaJIT, all_reduce(t) and all_reduce(t, {op = ...}) first call the
-- engine through the FFI (a small all_reduce is short enough that the classic
-- C call shows); its errors are the engine's own, raised at the user's line.
local fast_all_reduce, tensor_ptr
local OPS = { sum = 0, avg = 1, max = 2, min = 3, product = 4 } -- wick_dist_op (include/wick_dist.h)
do
  local has_ffi, ffi = pcall(require, "ffi")
  if has_ffi and not os.getenv("WICK_NO_FFI") then
    pcall(ffi.cdef, "typedef struct wick_tensor wick_tensor;")
    fast_all_reduce = ffi.cast("int (*)(wick_tensor *, int)", C.fast_all_reduce())
    local slot = ffi.typeof("wick_tensor **")
    tensor_ptr = function(t) return ffi.cast(slot, t)[0] end
  end
end
local tensor_mt = core._mt

function M.all_reduce(t, opts)
  if fast_all_reduce and getmetatable(t) == tensor_mt then
    local op = 0
    if opts ~= nil then
      op = type(opts) == "table" and opts.async_op == nil and next(opts, next(opts)) == nil and OPS[opts.op]
    end
    if op then
      local rc = fast_all_reduce(tensor_ptr(t), op)
      if rc == 0 then return nil end
      if rc < 0 then C.raise_last() end
    end
  end
  check.tensor(t, "all_reduce", "tensor")
  local op, async = options(opts, "all_reduce", true)
  return C.all_reduce(t, op, async)
end

function M.broadcast(t, src, opts)
  check.tensor(t, "broadcast", "tensor")
  rank_arg(src, "broadcast", "src")
  local _, async = options(opts, "broadcast", false)
  return C.broadcast(t, src, async)
end

function M.all_gather(list, t, opts)
  if type(list) ~= "table" or check.is_tensor(list) then
    check.expected("all_gather", "tensor_list", "a table of tensors", list)
  end
  check.tensor(t, "all_gather", "tensor")
  for i = 1, #list do check.tensor(list[i], "all_gather", ("tensor_list[%d]"):format(i)) end
  local _, async = options(opts, "all_gather", false)
  return C.all_gather(list, t, async)
end

function M.all_gather_into_tensor(out, t, opts)
  check.tensor(out, "all_gather_into_tensor", "output_tensor")
  check.tensor(t, "all_gather_into_tensor", "input_tensor")
  local _, async = options(opts, "all_gather_into_tensor", false)
  return C.all_gather_into_tensor(out, t, async)
end

function M.reduce_scatter_tensor(out, t, opts)
  check.tensor(out, "reduce_scatter_tensor", "output")
  check.tensor(t, "reduce_scatter_tensor", "input")
  local op, async = options(opts, "reduce_scatter_tensor", true)
  return C.reduce_scatter_tensor(out, t, op, async)
end

--- reduce(t, dst[, {op = "sum", async_op = false}]): rank dst's t becomes the
--- op over ranks; every other rank's t is left as it was (PyTorch leaves it
--- unspecified). An all_reduce underneath (of a copy, on the other ranks).
function M.reduce(t, dst, opts)
  check.tensor(t, "reduce", "tensor")
  rank_arg(dst, "reduce", "dst")
  local op, async = options(opts, "reduce", true)
  local target = C.rank() == dst and t or t:clone()
  return C.all_reduce(target, op, async)
end

--- gather(t, gather_list, dst[, {async_op}]): on rank dst, gather_list (an
--- array of world-size tensors shaped like t) receives every rank's t, in rank
--- order; elsewhere gather_list is nil (or ignored). An all_gather underneath.
function M.gather(t, list, dst, opts)
  check.tensor(t, "gather", "tensor")
  rank_arg(dst, "gather", "dst")
  local _, async = options(opts, "gather", false)
  if C.rank() == dst then
    if type(list) ~= "table" or check.is_tensor(list) then
      check.expected("gather", "gather_list", "a table of tensors on the destination rank", list)
    end
    for i = 1, #list do check.tensor(list[i], "gather", ("gather_list[%d]"):format(i)) end
  else
    list = {}
    for i = 1, C.world_size() do list[i] = t:new_empty(t.shape) end
  end
  return C.all_gather(list, t, async)
end

-- several handles as one: wait() waits for all, is_completed() when all are
local function all_of(handles)
  return {
    wait = function() for _, h in ipairs(handles) do h:wait() end end,
    is_completed = function()
      for _, h in ipairs(handles) do if not h:is_completed() then return false end end
      return true
    end,
  }
end

--- scatter(t, scatter_list, src[, {async_op}]): rank r's t receives
--- scatter_list[r + 1] of rank src (world-size tensors shaped like t there;
--- nil elsewhere). Sends from src, a receive on every other rank.
function M.scatter(t, list, src, opts)
  check.tensor(t, "scatter", "tensor")
  rank_arg(src, "scatter", "src")
  local _, async = options(opts, "scatter", false)
  local rank, world = C.rank(), C.world_size()
  if rank ~= src then return C.recv(t, src, async) end
  if type(list) ~= "table" or check.is_tensor(list) then
    check.expected("scatter", "scatter_list", "a table of tensors on the source rank", list)
  end
  if #list ~= world then
    check.fail("scatter", "scatter_list must hold world_size (%d) tensors, got %d", world, #list)
  end
  for i = 1, world do check.tensor(list[i], "scatter", ("scatter_list[%d]"):format(i)) end
  local handles = {}
  for r = 0, world - 1 do
    if r ~= rank then handles[#handles + 1] = C.send(list[r + 1], r, true) end
  end
  t:copy_(list[rank + 1])
  if async then return all_of(handles) end
  for _, h in ipairs(handles) do h:wait() end
end

function M.barrier(opts)
  local _, async = options(opts, "barrier", false)
  return C.barrier(async)
end

function M.send(t, dst, opts)
  check.tensor(t, "send", "tensor")
  rank_arg(dst, "send", "dst")
  local _, async = options(opts, "send", false)
  return C.send(t, dst, async)
end

function M.recv(t, src, opts)
  check.tensor(t, "recv", "tensor")
  rank_arg(src, "recv", "src")
  local _, async = options(opts, "recv", false)
  return C.recv(t, src, async)
end

--- isend(t, dst) / irecv(t, src): send and recv with async_op; the handle's
--- wait() says when t may be reused (isend) or read (irecv). They start at
--- once, whatever collectives are queued, so a ring's isend-then-recv never
--- waits for itself.
function M.isend(t, dst)
  check.tensor(t, "isend", "tensor")
  rank_arg(dst, "isend", "dst")
  return C.send(t, dst, true)
end

function M.irecv(t, src)
  check.tensor(t, "irecv", "tensor")
  rank_arg(src, "irecv", "src")
  return C.recv(t, src, true)
end

return M
