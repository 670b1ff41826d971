-- wick.utils.checkpoint: PyTorch's torch.utils.checkpoint (activation
-- checkpointing). A checkpointed function keeps no activations for backward.
-- The reentrant form (the default, as PyTorch's) runs it without recording,
-- and backward runs it again with recording, from the same inputs and random
-- state, then backpropagates through that second run; use_reentrant = false
-- records it whole but keeps no saved tensors, which backward gets by running
-- it again (non_reentrant below).
local wick = require("wick")
local check = require("wick.argcheck")
local core = wick._core

local M = {}
local unpack = table.unpack or unpack -- luacheck: ignore (LuaJIT's global)
local function pack(...) return { n = select("#", ...), ... } end

local Checkpoint = wick.autograd.Function:extend("Checkpoint")

function Checkpoint.forward(ctx, fn, preserve, ...)
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
  local result = { n = args.n + 2 }
  for i = 1, args.n do
    if wick.is_tensor(inputs[i]) then result[i + 2] = inputs[i].grad end
  end
  return unpack(result, 1, result.n)
end

-- PyTorch's non-reentrant form: fn runs with recording, so everything it makes has its history
-- (the outputs, nested tables of them, and what it keeps elsewhere: GPT-OSS's router logits for
-- the load-balancing loss), but its ops keep none of the tensors their backward reads; the first
-- backward that reaches one runs fn again, from its inputs and random state, to get them
-- (core.checkpoint_begin: the engine's part in src/core/autograd.c)
local function non_reentrant(fn, preserve, args, n)
  local rng = preserve and wick.get_rng_state() or nil
  local versions = {}
  for i = 1, n do if wick.is_tensor(args[i]) then versions[i] = args[i]._version end end
  local function recompute()
    local inputs = {}
    for i = 1, n do -- the inputs again, detached: the recomputation's graph is thrown away
      local a = args[i]
      if versions[i] and a._version ~= versions[i] then -- (recomputed from other values: wrong gradients)
        check.fail("checkpoint", "argument %d of the checkpointed function was modified in place after it ran "
          .. "(version %d, expected %d): clone it before changing it", i, a._version, versions[i])
      end
      inputs[i] = wick.is_tensor(a) and a:detach():requires_grad_(a.requires_grad) or a
    end
    local now
    if rng then now = wick.get_rng_state(); wick.set_rng_state(rng) end
    local ok, err = pcall(wick.enable_grad, fn, unpack(inputs, 1, n))
    if now then wick.set_rng_state(now) end
    if not ok then error(err, 0) end
  end
  local id = core.checkpoint_begin(recompute)
  local outs = pack(pcall(fn, unpack(args, 1, n)))
  core.checkpoint_end(id)
  if not outs[1] then error(outs[2], 0) end
  return unpack(outs, 2, outs.n)
end

local OPTIONS = { use_reentrant = "boolean", preserve_rng_state = "boolean", determinism_check = "string",
  debug = "boolean", context_fn = "function" }
-- checkpoint's own options taken out of a trailing keyword table, or nil; the
-- second result is what is left for fn (nil when nothing is), as PyTorch's
-- checkpoint(blk, x, rope=rope, use_reentrant=False) passes blk only rope=
local function options_of(v)
  if type(v) ~= "table" or getmetatable(v) ~= nil then return nil end
  local opts, rest, any_rest = nil, {}, false
  for k, x in pairs(v) do
    if OPTIONS[k] then opts = opts or {}; opts[k] = x else rest[k], any_rest = x, true end
  end
  if not opts then return nil end
  return check.options(opts, "checkpoint", OPTIONS), any_rest and rest or nil
end

--- checkpoint(fn, ...[, {use_reentrant =, preserve_rng_state = true}]): fn(...),
--- its activations recomputed in backward instead of kept. Gradients reach
--- the tensor arguments and the parameters fn uses (accumulated into their
--- .grad, as PyTorch's reentrant form); under no grad mode it is fn(...).
--- The random state (wick's generator) is replayed, so dropout draws the same.
function M.checkpoint(fn, ...)
  if not check.is_callable(fn) then check.expected("checkpoint", "function", "a function or a module", fn) end
  local n = select("#", ...)
  local args = pack(...)
  local opts, rest
  if n > 0 then opts, rest = options_of(args[n]) end
  if opts then args[n] = rest; if rest == nil then n = n - 1 end end
  local preserve = not opts or opts.preserve_rng_state ~= false
  if opts and opts.context_fn then check.fail("checkpoint", "context_fn is not supported") end
  if not wick.is_grad_enabled() then return fn(unpack(args, 1, n)) end
  if opts and opts.use_reentrant == false then return non_reentrant(fn, preserve, args, n) end
  local any_grad = false
  for i = 1, n do any_grad = any_grad or (wick.is_tensor(args[i]) and args[i].requires_grad) end
  if not any_grad then -- (PyTorch's reentrant form warns so too: the parameters fn uses get no gradient)
    require("wick.nn.common").warn("None of the inputs have requires_grad=True. Gradients will be None")
  end
  -- fn returning one plain table (HF layers return tuples, perhaps as table.pack's
  -- {n = 3, a, nil, c} for a None inside): its entries go through the checkpoint as
  -- outputs, then back into a table of the same form
  local spec -- the table's form: {count =, packed =}
  local function flat(...)
    local r = pack(fn(...))
    if r.n ~= 1 or type(r[1]) ~= "table" or getmetatable(r[1]) ~= nil then return unpack(r, 1, r.n) end
    local count, packed = 0, false
    for k, v in pairs(r[1]) do
      if k == "n" and type(v) == "number" and v >= 0 and v % 1 == 0 then packed, k = true, v
      elseif type(k) ~= "number" or k < 1 or k % 1 ~= 0 then return r[1] end -- a table with names: as is
      count = math.max(count, k)
    end
    spec = { count = count, packed = packed }
    return unpack(r[1], 1, count)
  end
  local outs = pack(Checkpoint.apply(flat, preserve, unpack(args, 1, n)))
  if not spec then return unpack(outs, 1, outs.n) end
  local t = { unpack(outs, 1, spec.count) }
  if spec.packed then t.n = spec.count end
  return t
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
