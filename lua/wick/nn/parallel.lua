-- nn.parallel: DistributedDataParallel (one process per rank, over
-- wick.distributed) and DataParallel (nn.DataParallel: several devices of one
-- process).
--
-- DistributedDataParallel, PyTorch's way: every rank holds a replica of the
-- model and trains on its own share of the data; after backward each
-- parameter's .grad is the average over the ranks, so every rank's optimizer
-- makes the same step. The averaging overlaps backward: parameters are grouped
-- into buckets (flat tensors of up to bucket_cap_mb MiB, parameters in reverse
-- registration order at first, the order their gradients became ready from the
-- second step on); a post-accumulate-grad hook copies each gradient into its
-- bucket slot as soon as backward has finished it, and a bucket whose slots are
-- all filled is all-reduced asynchronously (on the process group's comm
-- thread) while backward goes on with the earlier layers. A callback queued for
-- the end of backward (wick.autograd.queue_callback) launches what is left,
-- waits, and copies the averages back into .grad. Buckets are launched in
-- order, so every rank issues the same collectives in the same order.
local wick = require("wick")
local check = require("wick.argcheck")
local Module = require("wick.nn.module")

local unpack = table.unpack or unpack -- luacheck: ignore (Lua 5.2+ and LuaJIT)
local pack = table.pack or function(...) return { n = select("#", ...), ... } end -- luacheck: ignore

local parallel = {}
parallel.DataParallel = require("wick.nn.data_parallel")
--- nn.parallel.data_parallel(module, inputs[, {device_ids =, output_device =, dim =}]): the function
--- form, one DataParallel call (inputs: a tensor or a list of arguments)
function parallel.data_parallel(module, inputs, opts)
  local dp = parallel.DataParallel(module, opts)
  if type(inputs) == "table" and not require("wick").is_tensor(inputs) then return dp(unpack(inputs)) end
  return dp(inputs)
end

local NAME = "DistributedDataParallel"
local MIB = 1024 * 1024
local NONE = 2 ^ 40 -- "no mismatch" in the cross-rank check (int64 all_reduce min)

local function fail(fmt, ...) wick.error(NAME .. ": " .. fmt:format(...)) end

-- The process-group API (wick.distributed); a test may put a stand-in here.
parallel._dist = nil
local function get_dist() return parallel._dist or wick.distributed end

-- ---- helpers ----

local function shape_str(t)
  local s = {}
  for i = 1, t:dim() do s[i] = tostring(t:size(i)) end
  return "[" .. table.concat(s, ", ") .. "]"
end

local function elem_size(t) return wick._dtype_info[t.dtype].size end

-- a string as an int64 tensor of its bytes, and back
local function bytes_of(s)
  local b = {}
  for i = 1, #s do b[i] = s:byte(i) end
  return wick.tensor(b, { dtype = "int64" })
end
local function string_of(t)
  local b, parts = t:totable(), {}
  for i = 1, #b, 4096 do parts[#parts + 1] = string.char(unpack(b, i, math.min(i + 4095, #b))) end
  return table.concat(parts)
end

-- rank `src`'s string s on every rank
local function broadcast_string(d, s, src, rank)
  local n = wick.tensor({ rank == src and #s or 0 }, { dtype = "int64" })
  d.broadcast(n, src)
  local len = n:item()
  if len == 0 then return "" end
  local buf = rank == src and bytes_of(s) or wick.zeros(len, { dtype = "int64" })
  d.broadcast(buf, src)
  return string_of(buf)
end

local function all_reduce_int(d, v, op)
  local t = wick.tensor({ v }, { dtype = "int64" })
  d.all_reduce(t, { op = op })
  return t:item()
end

-- Every tensor of the list from rank 0, one broadcast per dtype and device.
local function broadcast_coalesced(d, tensors)
  local groups, order = {}, {}
  for _, t in ipairs(tensors) do
    local key = t.dtype .. "@" .. t:_device_code()
    if not groups[key] then
      groups[key] = {}
      order[#order + 1] = key
    end
    table.insert(groups[key], t)
  end
  wick.no_grad(function()
    for _, key in ipairs(order) do
      local list, flats = groups[key], {}
      for i, t in ipairs(list) do flats[i] = t:reshape(-1) end
      local flat = #flats == 1 and flats[1]:clone() or wick.cat(flats)
      d.broadcast(flat, 0)
      local offset = 0
      for _, t in ipairs(list) do
        local n = t:numel()
        if n > 0 then t:copy_(flat:narrow(1, offset + 1, n):view(t.shape)) end
        offset = offset + n
      end
    end
  end)
end

-- ---- the cross-rank check of the model ----

-- One line per parameter and buffer: what must be equal on every rank.
local function describe_model(module)
  local lines = {}
  for name, p in module:named_parameters() do
    lines[#lines + 1] = ("parameter '%s' %s %s"):format(name, shape_str(p), p.dtype)
  end
  for name, b in module:named_buffers() do
    lines[#lines + 1] = ("buffer '%s' %s %s"):format(name, shape_str(b), b.dtype)
  end
  return lines
end

local function split_lines(s)
  local out = {}
  for line in (s .. "\n"):gmatch("(.-)\n") do out[#out + 1] = line end
  if s == "" then out = {} end
  return out
end

-- Compares every rank's description with rank 0's; on a difference every rank
-- raises the same error, naming the first entry that differs and a rank that
-- differs there.
local function check_same_model(d, rank, lines)
  local mine = table.concat(lines, "\n")
  local root = split_lines(broadcast_string(d, mine, 0, rank))
  local first = NONE
  for i = 1, math.max(#root, #lines) do
    if root[i] ~= lines[i] then
      first = i
      break
    end
  end
  first = all_reduce_int(d, first, "min")
  if first == NONE then return end
  local who = all_reduce_int(d, (root[first] ~= lines[first]) and rank or NONE, "min")
  local theirs = broadcast_string(d, lines[first] or "", who, rank)
  local function entry(s) return s ~= "" and s or "nothing (fewer parameters and buffers)" end
  fail("the model differs across ranks (every rank must build the same model): entry %d: rank 0 has %s, rank %d has %s",
    first, entry(root[first] or ""), who, entry(theirs))
end

-- ---- buckets ----

-- Buckets over the parameters in `order` (indices into S.params): a bucket
-- holds one dtype on one device; a new one starts when adding a parameter would
-- pass the cap (a parameter larger than the cap is a bucket of its own).
local function build_buckets(S, order)
  local buckets, open = {}, {}
  for _, i in ipairs(order) do
    local p = S.params[i].p
    local key = p.dtype .. "@" .. p:_device_code()
    local bytes = p:numel() * elem_size(p)
    local b = open[key]
    if b and b.bytes + bytes > S.cap_bytes and #b.members > 0 then b = nil end
    if not b then
      b = { key = key, dtype = p.dtype, device = p.device, members = {}, numel = 0, bytes = 0 }
      buckets[#buckets + 1] = b
      open[key] = b
    end
    b.members[#b.members + 1] = i
    b.numel = b.numel + p:numel()
    b.bytes = b.bytes + bytes
  end
  S.where = {}
  for bi, b in ipairs(buckets) do
    b.index = bi
    b.flat = wick.zeros(math.max(b.numel, 1), { dtype = b.dtype, device = b.device })
    b.slots = {}
    local offset = 0
    for k, i in ipairs(b.members) do
      local p = S.params[i].p
      local n = p:numel()
      b.slots[k] = n > 0 and b.flat:narrow(1, offset + 1, n):view(p.shape) or wick.zeros(p.shape, { dtype = b.dtype, device = b.device })
      S.where[i] = { b, k }
      offset = offset + n
    end
  end
  S.buckets = buckets
  S.layout = {}
  for _, b in ipairs(buckets) do
    for _, i in ipairs(b.members) do S.layout[#S.layout + 1] = i end
  end
end

local function reverse_order(n)
  local order = {}
  for i = n, 1, -1 do order[#order + 1] = i end
  return order
end

-- The buckets no longer fit the parameters (model:to moved or cast them).
local function layout_stale(S)
  for _, b in ipairs(S.buckets) do
    local p = S.params[b.members[1]].p
    if p.dtype .. "@" .. p:_device_code() ~= b.key then return true end
  end
  return false
end

-- ---- one backward's reduction ----

local function reset_reduction(S)
  S.ready = {}
  S.next_launch = 1
  for _, b in ipairs(S.buckets) do
    b.ready = 0
    b.work = nil
  end
end

-- Launches the buckets that are complete, in order (never one before an
-- earlier one: every rank issues the same collectives in the same order).
local function launch_ready(S)
  local d, stats = S.dist, S.stats
  while S.next_launch <= #S.buckets do
    local b = S.buckets[S.next_launch]
    if b.ready < #b.members then return end
    b.started = wick.clock()
    b.work = d.all_reduce(b.flat, { op = "avg", async_op = true })
    stats.buckets = stats.buckets + 1
    stats.bytes = stats.bytes + b.bytes
    S.next_launch = S.next_launch + 1
  end
end

local function mark_ready(S, i)
  if S.ready[i] then return end
  S.ready[i] = true
  local where = S.where[i]
  local b, k = where[1], where[2]
  local grad = S.params[i].p.grad
  if grad then b.slots[k]:copy_(grad) else b.slots[k]:zero_() end
  if S.record_order then S.ready_order[#S.ready_order + 1] = i end
  b.ready = b.ready + 1
  if b.ready == #b.members then launch_ready(S) end
end

-- Seconds a finished all-reduce ran: the engine's own clock when its handle
-- reports it, else from the launch to now.
local function work_seconds(b, now)
  local w = b.work
  if type(w.seconds) == "function" then
    local s = w:seconds()
    if type(s) == "number" then return s end
  end
  return now - b.started
end

local function wait_all(S)
  local stats = S.stats
  for bi = 1, S.next_launch - 1 do
    local b = S.buckets[bi]
    if b.work then
      local t0 = wick.clock()
      b.work:wait()
      local now = wick.clock()
      stats.wait_s = stats.wait_s + (now - t0)
      stats.allreduce_s = stats.allreduce_s + work_seconds(b, now)
      b.work = nil
    end
  end
end

-- The end of a synced backward (queued by the first hook that fired).
local function finalize(S)
  S.active = false
  local missing = {}
  local locally_used
  if S.find_unused then
    locally_used = {}
    for i = 1, #S.params do locally_used[i] = S.ready[i] and 1 or 0 end
  end
  for _, i in ipairs(S.layout) do
    if not S.ready[i] then
      if S.find_unused then mark_ready(S, i) else missing[#missing + 1] = i end
    end
  end
  launch_ready(S)
  local used
  if S.find_unused then -- which parameters some rank used: the others keep no .grad
    local t = wick.tensor(locally_used, { dtype = "int64" })
    S.dist.all_reduce(t, { op = "max" })
    used = t:totable()
  end
  wait_all(S)
  if #missing > 0 then
    table.sort(missing)
    S.unfinished = missing
    return
  end
  for i, entry in ipairs(S.params) do
    if not used or used[i] == 1 then
      local where = S.where[i]
      local slot, p = where[1].slots[where[2]], entry.p
      local g = p.grad
      if g then g:copy_(slot) else p.grad = slot:clone() end
    end
  end
  if S.record_order then
    S.record_order = false
    S.rebuild_pending = true
  end
end

local function on_grad_ready(S, i)
  if not S.sync_this then return end
  if not S.active then
    S.active = true
    reset_reduction(S)
    wick.autograd.queue_callback(function() finalize(S) end)
  end
  mark_ready(S, i)
end

-- From the second step on, the buckets follow the order in which gradients
-- became ready in the first (rank 0's order, so that all ranks agree).
local function rebuild(S)
  S.rebuild_pending = false
  local n = #S.params
  local order, seen = {}, {}
  for _, i in ipairs(S.ready_order) do
    if not seen[i] then
      order[#order + 1] = i
      seen[i] = true
    end
  end
  for _, i in ipairs(reverse_order(n)) do
    if not seen[i] then order[#order + 1] = i end
  end
  if S.world > 1 then
    local t = wick.tensor(order, { dtype = "int64" })
    S.dist.broadcast(t, 0)
    order = t:totable()
  end
  build_buckets(S, order)
end

-- ---- the module ----

-- parameter -> the state of the DDP whose hooks it carries (weak keys): a newer
-- DDP over the same parameters takes them over, the older one stops.
local owner = setmetatable({}, { __mode = "k" })

local function retire(S)
  for _, h in ipairs(S.handles) do h:remove() end
  S.handles = {}
  S.retired = true
end

local DDP = Module:extend(NAME, { "module" })

local OPTIONS = { device_ids = true, output_device = true, bucket_cap_mb = true, broadcast_buffers = true,
  find_unused_parameters = true }

--- nn.parallel.DistributedDataParallel(module[, {device_ids, bucket_cap_mb = 25,
--- broadcast_buffers = true, find_unused_parameters = false}])
function DDP:init(module, opts)
  if not check.is_module(module) then fail("expected a module to wrap, got %s", check.describe(module)) end
  if opts ~= nil and (type(opts) ~= "table" or getmetatable(opts) ~= nil) then
    fail("expected an options table, got %s", check.describe(opts))
  end
  opts = opts or {}
  for k in pairs(opts) do
    if not OPTIONS[k] then
      fail("unknown option '%s' (accepted: device_ids, output_device, bucket_cap_mb, broadcast_buffers, find_unused_parameters)", tostring(k))
    end
  end
  local cap = opts.bucket_cap_mb == nil and 25 or opts.bucket_cap_mb
  if type(cap) ~= "number" or cap <= 0 or cap ~= cap then fail("bucket_cap_mb must be a positive number, got %s", tostring(cap)) end
  for _, k in ipairs({ "broadcast_buffers", "find_unused_parameters" }) do
    if opts[k] ~= nil and type(opts[k]) ~= "boolean" then fail("%s must be a boolean, got %s", k, check.describe(opts[k])) end
  end
  local device
  if opts.device_ids ~= nil then
    local ids = opts.device_ids
    if type(ids) ~= "table" or getmetatable(ids) == wick.Device then ids = { ids } end
    if #ids ~= 1 then fail("device_ids must hold exactly one device (this process's), got %d", #ids) end
    local v = ids[1]
    device = type(v) == "number" and wick.device("cuda", v) or wick.device(v)
    for _, p in ipairs(module:parameters()) do -- PyTorch checks this at construction too
      if p.device.type ~= device.type or (device.index ~= nil and p.device.index ~= device.index) then
        fail("device_ids {%s} name the device the module runs on, but its parameters are on %s: move the model "
          .. "there first (model:to(\"%s\")), or leave device_ids out for a module on the CPU",
          tostring(device), tostring(p.device), tostring(device))
      end
    end
  end
  if opts.output_device ~= nil then -- one device per process: the outputs are where the module runs
    local v = opts.output_device
    local out = type(v) == "number" and wick.device("cuda", v) or wick.device(v)
    if not device or tostring(out) ~= tostring(device) then
      fail("output_device must be device_ids[1] (one device per process), got %s", tostring(out))
    end
  end
  local d = get_dist()
  if not d.is_initialized() then
    fail("the default process group is not initialized: call wick.distributed.init_process_group first")
  end
  self.module = module
  local S = {
    dist = d, rank = d.get_rank(), world = d.get_world_size(), device = device,
    cap_bytes = cap * MIB, broadcast_buffers = opts.broadcast_buffers ~= false,
    find_unused = opts.find_unused_parameters == true,
    require_sync = true, sync_this = true, active = false,
    record_order = true, ready_order = {}, rebuild_pending = false,
    stats = { allreduce_s = 0, wait_s = 0, buckets = 0, bytes = 0 },
  }
  rawset(self, "_ddp", S)

  S.params = {} -- the ones that get gradients (frozen ones are broadcast, not reduced: PyTorch's)
  local all = {}
  for name, p in module:named_parameters() do
    all[#all + 1] = p
    if p.requires_grad then S.params[#S.params + 1] = { name = name, p = p } end
  end
  if S.world > 1 then
    check_same_model(d, S.rank, describe_model(module))
    for _, b in ipairs(module:buffers()) do all[#all + 1] = b end
    broadcast_coalesced(d, all)
  end
  build_buckets(S, reverse_order(#S.params))
  reset_reduction(S)
  S.handles = {}
  for i, e in ipairs(S.params) do
    local previous = owner[e.p]
    if previous and not previous.retired then retire(previous) end
    owner[e.p] = S
    S.handles[i] = e.p:register_post_accumulate_grad_hook(function() on_grad_ready(S, i) end)
  end
end

local function unfinished_error(S)
  local names, idx = {}, {}
  for k, i in ipairs(S.unfinished) do
    names[k] = S.params[i].name
    idx[k] = tostring(i)
  end
  fail("Expected to have finished reduction in the prior iteration before starting a new one. This error indicates "
    .. "that your module has parameters that were not used in producing loss. You can enable unused parameter "
    .. "detection by passing find_unused_parameters = true to nn.parallel.DistributedDataParallel, and by making "
    .. "sure all forward outputs participate in calculating loss. Parameters which did not receive grad for rank %d: "
    .. "%s (indices %s)", S.rank, table.concat(names, ", "), table.concat(idx, " "))
end

local function move_inputs(device, ...)
  local args = pack(...)
  for i = 1, args.n do
    if wick.is_tensor(args[i]) then args[i] = args[i]:to(device) end
  end
  return unpack(args, 1, args.n)
end

--- ddp(...): runs the wrapped module (buffers from rank 0 first).
function DDP:forward(...)
  local S = rawget(self, "_ddp")
  if S.retired then
    fail("a newer DistributedDataParallel wraps this model's parameters and averages their gradients; use that one")
  end
  if S.unfinished then unfinished_error(S) end
  if S.active then -- the last backward stopped with an error before its end: drop its reduction
    wait_all(S)
    S.active = false
  end
  if S.rebuild_pending then rebuild(S)
  elseif layout_stale(S) then build_buckets(S, S.layout) end
  if S.broadcast_buffers and S.world > 1 then
    local buffers = self.module:buffers()
    if #buffers > 0 then broadcast_coalesced(S.dist, buffers) end
  end
  -- (PyTorch's ddp.require_backward_grad_sync = false, build-nanogpt's gradient
  -- accumulation: as no_sync, for the backward of this forward)
  S.sync_this = S.require_sync and rawget(self, "require_backward_grad_sync") ~= false and wick.is_grad_enabled()
  if S.device then return self.module(move_inputs(S.device, ...)) end
  return self.module(...)
end

--- ddp:no_sync(fn, ...): runs fn(...) without averaging gradients (they
--- accumulate locally; the next synced backward averages the sum).
function DDP:no_sync(fn, ...)
  local S = rawget(self, "_ddp")
  check.callable(fn, "no_sync", "fn")
  local previous = S.require_sync
  S.require_sync = false
  local results = pack(pcall(fn, ...))
  S.require_sync = previous
  if not results[1] then error(results[2], 0) end
  return unpack(results, 2, results.n)
end

--- ddp:comm_stats(): cumulative communication figures since construction.
function DDP:comm_stats()
  local S = rawget(self, "_ddp")
  local sizes = {}
  for i, b in ipairs(S.buckets) do sizes[i] = b.bytes end
  local s = S.stats
  return { allreduce_s = s.allreduce_s, wait_s = s.wait_s, buckets = s.buckets, bytes = s.bytes, bucket_sizes = sizes }
end

parallel.DistributedDataParallel = DDP
return check.strict(parallel, "wick.nn.parallel")
