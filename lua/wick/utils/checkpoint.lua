-- wick.utils.checkpoint: PyTorch's torch.utils.checkpoint (activation
-- checkpointing). A checkpointed function keeps no activations for backward:
-- its forward runs without recording, and backward runs it again with
-- recording, from the same inputs and the same random state, then
-- backpropagates through that second run (PyTorch's reentrant variant).
local wick = require("wick")
local check = require("wick.argcheck")

local M = {}
local unpack = table.unpack or unpack -- luacheck: ignore (LuaJIT's global)
local function pack(...) return { n = select("#", ...), ... } end

local Checkpoint = wick.autograd.Function:extend("Checkpoint")

-- (anchor: a leaf that requires grad, or false: see M.checkpoint)
function Checkpoint.forward(ctx, fn, preserve, anchor, ...) -- luacheck: ignore anchor
  ctx.fn, ctx.args = fn, pack(...)
  if preserve then ctx.rng = wick.get_rng_state() end
  return fn(...)
end

function Checkpoint.backward(ctx, ...)
  local grads, args = pack(...), ctx.args
  local inputs = {}
  for i = 1, args.n do -- the inputs again, as leaves of the second run
    local a = args[i]
    if wick.is_tensor(a) then
      inputs[i] = a:detach()
      if a.requires_grad then inputs[i]:requires_grad_(true) end
    else
      inputs[i] = a
    end
  end
  local rng
  if ctx.rng then rng = wick.get_rng_state(); wick.set_rng_state(ctx.rng) end
  local ok, outs = pcall(function() return pack(wick.enable_grad(ctx.fn, unpack(inputs, 1, args.n))) end)
  if rng then wick.set_rng_state(rng) end
  if not ok then error(outs, 0) end
  local roots, seeds = {}, {}
  for k = 1, outs.n do
    local o = outs[k]
    if wick.is_tensor(o) and o.requires_grad and grads[k] ~= nil then
      roots[#roots + 1], seeds[#seeds + 1] = o, grads[k]
    end
  end
  if #roots > 0 then wick.autograd.backward(roots, seeds) end
  local result = { n = args.n + 3 }
  for i = 1, args.n do
    if wick.is_tensor(inputs[i]) then result[i + 3] = inputs[i].grad end
  end
  return unpack(result, 1, result.n)
end

local OPTIONS = { use_reentrant = "boolean", preserve_rng_state = "boolean", determinism_check = "string",
  debug = "boolean", context_fn = "function" }
-- a trailing table of checkpoint's own options (nothing else in it), or nil
local function options_of(v)
  if type(v) ~= "table" or getmetatable(v) ~= nil or next(v) == nil then return nil end
  for k in pairs(v) do if OPTIONS[k] == nil then return nil end end
  return check.options(v, "checkpoint", OPTIONS)
end

--- checkpoint(fn, ...[, {use_reentrant =, preserve_rng_state = true}]): fn(...),
--- its activations recomputed in backward instead of kept. Gradients reach
--- the tensor arguments and the parameters fn uses (accumulated into their
--- .grad, as PyTorch's reentrant form); under no grad mode it is fn(...).
--- The random state (wick's generator) is replayed, so dropout draws the same.
function M.checkpoint(fn, ...)
  if not check.is_callable(fn) then check.expected("checkpoint", "function", "a function or a module", fn) end
  local n = select("#", ...)
  local opts = n > 0 and options_of(select(n, ...)) or nil
  if opts then n = n - 1 end
  local preserve = not opts or opts.preserve_rng_state ~= false
  if opts and opts.context_fn then check.fail("checkpoint", "context_fn is not supported") end
  local args = pack(...)
  if not wick.is_grad_enabled() then return fn(unpack(args, 1, n)) end
  -- the non-reentrant form differentiates through fn's parameters even when no
  -- input requires grad (a frozen embedding under LoRA): a leaf that requires
  -- grad makes the checkpoint record then
  local anchor = false
  if opts and opts.use_reentrant == false then
    local any = false
    for i = 1, n do any = any or (wick.is_tensor(args[i]) and args[i].requires_grad) end
    if not any then anchor = wick.zeros({}, { requires_grad = true }) end
  end
  -- fn returning one plain table (HF layers return tuples, perhaps as table.pack's
  -- {n = 3, a, nil, c} for a None inside): its entries go through the checkpoint as
  -- outputs, then back into a table of the same form; with use_reentrant = false the
  -- tables inside it too (Switch's (hidden, ..., (router_logits, expert_index)): their
  -- tensors get gradients, as PyTorch's non-reentrant form gives them)
  local nested = opts and opts.use_reentrant == false
  local spec -- the table's form: {count =, packed =, [i] = the form of entry i (a table's) or false}
  local function form_of(t, depth)
    if type(t) ~= "table" or getmetatable(t) ~= nil then return nil end
    local count, packed = 0, false
    for k, v in pairs(t) do
      if k == "n" and type(v) == "number" and v >= 0 and v % 1 == 0 then packed, k = true, v
      elseif type(k) ~= "number" or k < 1 or k % 1 ~= 0 then return nil end -- a table with names: as is
      count = math.max(count, k)
    end
    local f = { count = count, packed = packed }
    for i = 1, count do f[i] = nested and depth < 32 and form_of(t[i], depth + 1) or false end
    return f
  end
  local function leaves(t, f, out)
    for i = 1, f.count do
      if f[i] then leaves(t[i], f[i], out) else out.n = out.n + 1; out[out.n] = t[i] end
    end
    return out
  end
  local function rebuild(f, values, at)
    local t = {}
    for i = 1, f.count do
      if f[i] then t[i], at = rebuild(f[i], values, at) else at = at + 1; t[i] = values[at] end
    end
    if f.packed then t.n = f.count end
    return t, at
  end
  local function flat(...)
    local r = pack(fn(...))
    if r.n ~= 1 then return unpack(r, 1, r.n) end
    spec = form_of(r[1], 0)
    if not spec then return r[1] end
    local out = leaves(r[1], spec, { n = 0 })
    return unpack(out, 1, out.n)
  end
  local outs = pack(Checkpoint.apply(flat, preserve, anchor, unpack(args, 1, n)))
  if spec then return (rebuild(spec, outs, 0)) end
  return unpack(outs, 1, outs.n)
end

--- checkpoint_sequential(functions, segments, input[, opts]): a Sequential (or a
--- list of modules) run in `segments` checkpointed pieces, the last one plainly
function M.checkpoint_sequential(functions, segments, input, opts)
  local list = {}
  for i = 1, #functions do list[i] = functions[i] end
  check.int(segments, "checkpoint_sequential", "segments", 1)
  local size = math.floor(#list / segments)
  local function run(first, last)
    return function(x)
      for i = first, last do x = list[i](x) end
      return x
    end
  end
  local last = 0
  for start = 1, size * (segments - 1), size do
    last = start + size - 1
    input = M.checkpoint(run(start, last), input, opts)
  end
  return run(last + 1, #list)(input)
end

--- get_device_states(...): the GPUs' generator states for the tensors given, as PyTorch's (devices, states);
--- wick has one generator for every device, saved with the CPU's (wick.get_rng_state): two empty lists.
--- set_device_states(devices, states) takes them back (nothing to do).
function M.get_device_states() return {}, {} end
function M.set_device_states(devices, states)
  check.table(devices, "set_device_states", "devices")
  check.table(states, "set_device_states", "states")
end

return check.strict(M, "wick.utils.checkpoint")
