-- wick.distributed: collectives over MPI (CPU tensors) and NCCL (CUDA tensors),
-- modelled on torch.distributed. The engine is C (src/dist/, include/wick_dist.h):
-- this file checks the Lua arguments and options and calls core.dist.
-- Ranks are 0-based, like MPI ranks and CUDA ordinals (src, dst too).
local core = require("wick.core")
local check = require("wick.argcheck")

local C = core.dist
local M = {}

local type, select = type, select
local unpack = unpack or table.unpack

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
--- PyTorch's "gloo" (its CPU backend) is "mpi" here; init_method ("env://",
--- "tcp://...", "file://...") and device_id are taken and change nothing: the
--- launcher's MPI world is the group.
local MORE = { timeout = "number", rank = "integer", world_size = "integer", init_method = "string", device_id = "any" }
local INIT = { backend = "string" }
for k, v in pairs(MORE) do INIT[k] = v end
function M.init_process_group(opts, more)
  local fn = "init_process_group"
  if type(opts) == "string" then
    more = check.options(more, fn, MORE) or {}
    opts = { backend = opts, timeout = more.timeout, rank = more.rank, world_size = more.world_size }
  end
  check.options(opts, fn, INIT)
  opts = opts or {}
  if opts.backend ~= nil then check.one_of(opts.backend, fn, "backend", { "mpi", "nccl", "gloo" }) end
  if opts.backend == "gloo" then opts = setmetatable({ backend = "mpi" }, { __index = opts }) end
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

--- get_default_backend_for_device(device): the backend that moves its tensors
--- ("mpi" for the CPU, "nccl" for CUDA), as PyTorch's ("gloo" there for the CPU)
function M.get_default_backend_for_device(device)
  local d = require("wick").device(device)
  if d.type == "cpu" then return "mpi" end
  if d.type == "cuda" then return "nccl" end
  check.fail("get_default_backend_for_device", "no backend moves %s tensors", d.type)
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

-- a peer rank (dst or src), given in its place or by name in the options that follow
-- (stylegan2's dist.reduce(losses, dst=0)): the rank and the options without it
local function rank_arg(v, opts, fn, name)
  if type(v) == "table" and not check.is_tensor(v) and opts == nil then
    opts = {}
    for k, x in pairs(v) do if k ~= name then opts[k] = x end end
    v = rawget(v, name)
  end
  check.int(v, fn, name, 0)
  if not C.is_initialized() then -- (as the collectives say it, before the rank is read)
    check.fail("wick.distributed." .. fn, "the default process group is not initialized (call wick.distributed.init_process_group() first)")
  end
  return v, opts
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
  src, opts = rank_arg(src, opts, "broadcast", "src")
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
  dst, opts = rank_arg(dst, opts, "reduce", "dst")
  local op, async = options(opts, "reduce", true)
  local target = C.rank() == dst and t or t:clone()
  return C.all_reduce(target, op, async)
end

--- gather(t, gather_list, dst[, {async_op}]): on rank dst, gather_list (an
--- array of world-size tensors shaped like t) receives every rank's t, in rank
--- order; elsewhere gather_list is nil (or ignored). An all_gather underneath.
function M.gather(t, list, dst, opts)
  check.tensor(t, "gather", "tensor")
  dst, opts = rank_arg(dst, opts, "gather", "dst")
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
  src, opts = rank_arg(src, opts, "scatter", "src")
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
  dst, opts = rank_arg(dst, opts, "send", "dst")
  local _, async = options(opts, "send", false)
  return C.send(t, dst, async)
end

function M.recv(t, src, opts)
  check.tensor(t, "recv", "tensor")
  src, opts = rank_arg(src, opts, "recv", "src")
  local _, async = options(opts, "recv", false)
  return C.recv(t, src, async)
end

--- isend(t, dst) / irecv(t, src): send and recv with async_op; the handle's
--- wait() says when t may be reused (isend) or read (irecv). They start at
--- once, whatever collectives are queued, so a ring's isend-then-recv never
--- waits for itself.
function M.isend(t, dst)
  check.tensor(t, "isend", "tensor")
  dst = rank_arg(dst, nil, "isend", "dst")
  return C.send(t, dst, true)
end

function M.irecv(t, src)
  check.tensor(t, "irecv", "tensor")
  src = rank_arg(src, nil, "irecv", "src")
  return C.recv(t, src, true)
end

--- P2POp(op, tensor, peer): one transfer of batch_isend_irecv, as
--- torch.distributed.P2POp; op is dist.isend or dist.irecv.
local P2POp = { __name = "P2POp" }
P2POp.__index = P2POp
function P2POp.__tostring(p)
  return string.format("P2POp(%s, peer %d)", p.op == M.isend and "isend" or "irecv", p.peer)
end

function M.P2POp(op, tensor, peer, group, tag)
  if op ~= M.isend and op ~= M.irecv then
    error("wick.distributed.P2POp: op must be wick.distributed.isend or wick.distributed.irecv, got "
      .. tostring(op), 2)
  end
  check.tensor(tensor, "P2POp", "tensor")
  peer = rank_arg(peer, nil, "P2POp", "peer")
  if group ~= nil then
    error("wick.distributed.P2POp: only the default group exists (group must be nil)", 2)
  end
  return setmetatable({ op = op, tensor = tensor, peer = peer, tag = tag or 0 }, P2POp)
end

--- batch_isend_irecv(ops): starts every P2POp of the list together and
--- returns their handles (wait() each). No transfer waits for another to
--- start: a ring whose ranks all send before they receive cannot deadlock,
--- on MPI or NCCL (one NCCL group).
function M.batch_isend_irecv(ops)
  if type(ops) ~= "table" or #ops == 0 then
    error("wick.distributed.batch_isend_irecv: expected a non-empty list of P2POp", 2)
  end
  local raw = {}
  for i, p in ipairs(ops) do
    if getmetatable(p) ~= P2POp then
      error(string.format("wick.distributed.batch_isend_irecv: list[%d] is not a P2POp (make one with "
        .. "wick.distributed.P2POp(dist.isend or dist.irecv, tensor, peer))", i), 2)
    end
    raw[i] = { p.op == M.irecv, p.tensor, p.peer }
  end
  return C.batch(raw)
end

-- ---- objects (PyTorch's *_object collectives) ----
-- A Lua value as bytes and back: nil, booleans, numbers, strings, tables
-- (nested; keys of those kinds; cycles are an error) and tensors (values,
-- dtype and device). No code is ever loaded: decode parses its own format.

local wick_mod -- require("wick") lazily: this file is loaded while wick is
local function W() wick_mod = wick_mod or require("wick"); return wick_mod end

local function encode(v, out, seen, fn)
  local tv = type(v)
  if tv == "nil" then out[#out + 1] = "n"
  elseif tv == "boolean" then out[#out + 1] = v and "T" or "F"
  elseif tv == "number" then
    out[#out + 1] = "d" .. (v ~= v and "nan" or ("%.17g"):format(v)) .. ";"
  elseif tv == "string" then out[#out + 1] = "s" .. #v .. ":" .. v
  elseif check.is_tensor(v) then
    local flat = v:detach():cpu():reshape(-1)
    local shape = {}
    for i = 1, v:dim() do shape[i] = v:size(i) end
    out[#out + 1] = "x"
    encode({ dtype = v.dtype, device = tostring(v.device), shape = shape, values = flat:totable() }, out, seen, fn)
  elseif tv == "table" then
    if seen[v] then check.fail(fn, "the object holds a table inside itself (a cycle): it cannot be sent") end
    seen[v] = true
    local keys = {}
    for k in pairs(v) do
      local tk = type(k)
      if tk ~= "string" and tk ~= "number" and tk ~= "boolean" then
        check.fail(fn, "the object has a key of type %s: only strings, numbers and booleans can be sent", tk)
      end
      keys[#keys + 1] = k
    end
    out[#out + 1] = "t" .. #keys .. ";"
    for _, k in ipairs(keys) do
      encode(k, out, seen, fn)
      encode(v[k], out, seen, fn)
    end
    seen[v] = nil
  else
    check.fail(fn, "the object holds a %s: only nil, booleans, numbers, strings, tables and tensors can be sent", tv)
  end
end

-- decode(s, pos) -> value, next position; raises on anything malformed
local function decode(s, pos, fn)
  local tag = s:sub(pos, pos)
  local function bad() check.fail(fn, "received bytes that are not an object at byte %d", pos) end
  if tag == "n" then return nil, pos + 1
  elseif tag == "T" then return true, pos + 1
  elseif tag == "F" then return false, pos + 1
  elseif tag == "d" then
    local e = s:find(";", pos + 1, true) or bad()
    local v = tonumber(s:sub(pos + 1, e - 1))
    if v == nil then bad() end
    return v, e + 1
  elseif tag == "s" then
    local e = s:find(":", pos + 1, true) or bad()
    local n = tonumber(s:sub(pos + 1, e - 1))
    if not n or e + n > #s then bad() end
    return s:sub(e + 1, e + n), e + n + 1
  elseif tag == "t" then
    local e = s:find(";", pos + 1, true) or bad()
    local n = tonumber(s:sub(pos + 1, e - 1)) or bad()
    local t, p = {}, e + 1
    for _ = 1, n do
      local k, v
      k, p = decode(s, p, fn)
      v, p = decode(s, p, fn)
      if k == nil then bad() end
      t[k] = v
    end
    return t, p
  elseif tag == "x" then
    local d, p = decode(s, pos + 1, fn)
    if type(d) ~= "table" or type(d.values) ~= "table" then bad() end
    local wick = W()
    local t = wick.tensor(d.values, { dtype = d.dtype }):reshape(d.shape)
    return (d.device ~= "cpu" and t:to(d.device) or t), p
  end
  bad()
end

-- the bytes of s in a uint8 tensor of n >= #s elements (zero padded), on the backend's device
local function bytes_tensor(s, n, device)
  local wick = W()
  local bytes = {}
  for i = 1, #s, 4096 do
    local chunk = { s:byte(i, math.min(i + 4095, #s)) }
    for j = 1, #chunk do bytes[i + j - 1] = chunk[j] end
  end
  for i = #s + 1, n do bytes[i] = 0 end
  return wick.tensor(bytes, { dtype = "uint8", device = device })
end

local function tensor_string(t, n)
  local v = t:narrow(1, 1, n):cpu():totable()
  local parts = {}
  for i = 1, #v, 4096 do parts[#parts + 1] = string.char(unpack(v, i, math.min(i + 4095, #v))) end
  return table.concat(parts)
end

-- the device object collectives move their bytes on: the current GPU under NCCL
local function object_device()
  if M.get_backend() == "nccl" then return "cuda" end
  return "cpu"
end

local function to_bytes(obj, fn)
  local out = {}
  encode(obj, out, {}, fn)
  return table.concat(out)
end

-- obj's bytes, or nil and the error (raised after the collective, which the
-- other ranks are already in: a rank that cannot send still takes part)
local function try_bytes(obj, fn)
  local ok, s = pcall(to_bytes, obj, fn)
  if ok then return s end
  return nil, s
end

local function from_bytes(s, fn)
  local v, p = decode(s, 1, fn)
  if p ~= #s + 1 then check.fail(fn, "received %d bytes, of which the object takes %d", #s, p - 1) end
  return v
end

-- every rank's string, in rank order (s nil: this rank's encoding failed with err)
local function all_gather_strings(s, err, fn)
  local wick, world, device = W(), C.world_size(), object_device()
  local sizes = {}
  for i = 1, world do sizes[i] = wick.zeros(1, { dtype = "int64", device = device }) end
  C.all_gather(sizes, wick.tensor({ s and #s or -1 }, { dtype = "int64", device = device }), false)
  if err then error(err, 0) end
  local most = 1
  for i = 1, world do
    sizes[i] = sizes[i]:item()
    if sizes[i] < 0 then check.fail(fn, "rank %d could not send its object (its error says why)", i - 1) end
    most = math.max(most, sizes[i])
  end
  local out = wick.empty({ world * most }, { dtype = "uint8", device = device })
  C.all_gather_into_tensor(out, bytes_tensor(s, most, device), false)
  local strings = {}
  for r = 1, world do strings[r] = tensor_string(out:narrow(1, (r - 1) * most + 1, most), sizes[r]) end
  return strings
end

-- rank src's string on every rank (on src, s nil: its encoding failed with err)
local function broadcast_string(s, err, src, fn)
  local wick, device = W(), object_device()
  local is_src = C.rank() == src
  local size = wick.tensor({ s and #s or -1 }, { dtype = "int64", device = device })
  C.broadcast(size, src, false)
  if err then error(err, 0) end
  local n = size:item()
  if n < 0 then check.fail(fn, "rank %d could not send its object (its error says why)", src) end
  if not is_src then s = nil end
  local buf = s and bytes_tensor(s, math.max(n, 1), device) or wick.empty({ math.max(n, 1) }, { dtype = "uint8", device = device })
  C.broadcast(buf, src, false)
  return s or tensor_string(buf, n)
end

local function list_arg(list, fn, name)
  if type(list) ~= "table" or check.is_tensor(list) then check.expected(fn, name, "a table", list) end
  return list
end

--- all_gather_object(object_list, obj): object_list[r + 1] becomes rank r's
--- obj (a Lua value: nil, boolean, number, string, table, tensor).
function M.all_gather_object(list, obj)
  local fn = "all_gather_object"
  list_arg(list, fn, "object_list")
  local bytes, err = try_bytes(obj, fn)
  local strings = all_gather_strings(bytes, err, fn)
  for r = 1, #strings do list[r] = from_bytes(strings[r], fn) end
end

--- gather_object(obj, object_gather_list, dst): on rank dst,
--- object_gather_list[r + 1] becomes rank r's obj (nil elsewhere).
function M.gather_object(obj, list, dst)
  local fn = "gather_object"
  dst = rank_arg(dst, nil, fn, "dst")
  if C.rank() == dst then list_arg(list, fn, "object_gather_list") end
  local bytes, err = try_bytes(obj, fn)
  local strings = all_gather_strings(bytes, err, fn)
  if C.rank() == dst then
    for r = 1, #strings do list[r] = from_bytes(strings[r], fn) end
  end
end

--- broadcast_object_list(object_list, src): every rank's object_list takes
--- rank src's entries 1..#object_list (entries past them become nil).
function M.broadcast_object_list(list, src)
  local fn = "broadcast_object_list"
  list_arg(list, fn, "object_list")
  src = rank_arg(src, nil, fn, "src")
  local n = #list
  local bytes, err
  if C.rank() == src then bytes, err = try_bytes({ n = n, items = { unpack(list, 1, n) } }, fn) end
  local s = broadcast_string(bytes, err, src, fn)
  if C.rank() ~= src then
    local got = from_bytes(s, fn)
    for i = 1, math.max(n, got.n) do list[i] = got.items[i] end -- src's entries, its length too
  end
end

--- scatter_object_list(output_list, input_list, src): output_list[1] becomes
--- input_list[r + 1] of rank src on rank r (input_list: nil elsewhere).
function M.scatter_object_list(output, input, src)
  local fn = "scatter_object_list"
  list_arg(output, fn, "scatter_object_output_list")
  src = rank_arg(src, nil, fn, "src")
  local rank, world = C.rank(), C.world_size()
  local bytes, err
  if rank == src then
    if type(input) ~= "table" or check.is_tensor(input) then
      err = select(2, pcall(check.expected, fn, "scatter_object_input_list", "a table", input))
    elseif #input ~= world then
      err = select(2, pcall(check.fail, fn, "scatter_object_input_list must hold world_size (%d) objects, got %d",
        world, #input))
    else
      bytes, err = try_bytes({ unpack(input, 1, world) }, fn)
    end
  end
  output[1] = from_bytes(broadcast_string(bytes, err, src, fn), fn)[rank + 1]
end

return M
