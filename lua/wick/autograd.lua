-- wick.autograd: queue_callback, and Function (PyTorch's torch.autograd.Function),
-- a differentiable op written in Lua with its forward and backward by hand:
--
--   local Cube = wick.autograd.Function:extend("Cube")
--   function Cube.forward(ctx, x) ctx:save_for_backward(x); return x ^ 3 end
--   function Cube.backward(ctx, grad) local x = ctx.saved_tensors[1]; return grad * 3 * x ^ 2 end
--   local y = Cube.apply(x)
--
-- forward runs without grad; the core then records one node per
-- differentiable output (src/core/function.c), named "<Name>Backward", whose
-- backward calls the class's backward with that output's gradient and zeros
-- for the others: a backward is linear in its gradients, so the inputs'
-- gradients add up over the outputs' nodes to what one call with all of them
-- gives. The node keeps ctx (and what it saved) until the graph is freed.
local wick = require("wick")
local core = require("wick.core")
local check = require("wick.argcheck")

local unpack = table.unpack or unpack -- luacheck: ignore (LuaJIT's global)
local function pack(...) return { n = select("#", ...), ... } end
local function is_tensor(v) return getmetatable(v) == core._mt end

local M = { queue_callback = core.queue_callback }

-- ---- ctx: what forward leaves for backward ----

local Ctx = {}
Ctx.__index = Ctx
Ctx.__name = "FunctionCtx"

--- ctx:save_for_backward(...): tensors backward reads back as ctx.saved_tensors
function Ctx:save_for_backward(...)
  local saved = pack(...)
  for i = 1, saved.n do
    if saved[i] ~= nil and not is_tensor(saved[i]) then
      check.expected("save_for_backward", ("argument %d"):format(i), "a tensor or nil", saved[i])
    end
  end
  self.saved_tensors = saved
end

--- ctx:mark_non_differentiable(...): outputs that get no node (no gradient flows back from them)
function Ctx:mark_non_differentiable(...)
  for i = 1, select("#", ...) do self._nondiff[select(i, ...)] = true end
end

--- ctx:set_materialize_grads(false): backward gets nil, not zeros, for outputs without a gradient
function Ctx:set_materialize_grads(value) self._materialize = value ~= false end

function Ctx:mark_dirty()
  wick.error("autograd.Function: mark_dirty (a forward that modifies its inputs in place) is not supported; "
    .. "return a new tensor instead")
end

-- ---- Function ----

local Function = { __name = "Function" }
Function.__index = Function
M.Function = Function

-- One output's node: its backward calls class.backward with `grad` at output
-- `k` of `nout` (the other differentiable ones zeros, described by `meta`);
-- returns the gradients of the n inputs.
local function node_backward(class, ctx, k, nout, meta, n)
  local name = class.__name
  return function(grad)
    if type(class.backward) ~= "function" then
      wick.error(("%s.backward is not defined (a Function needs forward and backward)"):format(name))
    end
    local grads = {}
    for j, m in pairs(meta) do
      if j == k then grads[j] = grad
      elseif ctx._materialize then grads[j] = wick.zeros(m.size, { dtype = m.dtype, device = m.device }) end
    end
    local r = pack(class.backward(ctx, unpack(grads, 1, nout)))
    for i = 1, math.max(r.n, n) do
      local g = r[i]
      if i > n and g ~= nil then
        wick.error(("%s.backward returned an incorrect number of gradients (expected %d, got %d)"):format(name, n, r.n))
      elseif g ~= nil and not is_tensor(g) then
        wick.error(("%s.backward returned a %s as the gradient of input %d; expected a tensor or nil")
          :format(name, type(g), i))
      elseif i > r.n and ctx.needs_input_grad[i] then
        wick.error(("%s.backward returned an incorrect number of gradients (expected %d, got %d)"):format(name, n, r.n))
      end
    end
    return r
  end
end

local function apply(class, ...)
  local args = pack(...)
  local name = class.__name
  if type(class.forward) ~= "function" then wick.error(("%s.forward is not defined"):format(name)) end
  local ctx = setmetatable({ saved_tensors = {}, needs_input_grad = {}, _nondiff = {}, _materialize = true }, Ctx)
  local grad_on, any, inputs = core.is_grad_enabled(), false, {}
  for i = 1, args.n do
    local a = args[i]
    local needs = grad_on and is_tensor(a) and a.requires_grad or false
    ctx.needs_input_grad[i] = needs
    any = any or needs
    if is_tensor(a) then inputs[a] = true end
  end
  local outs
  if class.setup_context then -- PyTorch 2's form: forward(...) without ctx, then setup_context(ctx, inputs, output)
    outs = pack(wick.no_grad(class.forward, unpack(args, 1, args.n)))
    class.setup_context(ctx, args, outs.n == 1 and outs[1] or { unpack(outs, 1, outs.n) })
  else
    outs = pack(wick.no_grad(class.forward, ctx, unpack(args, 1, args.n)))
  end
  if not any then return unpack(outs, 1, outs.n) end
  local meta, seen, diff = {}, {}, {}
  for k = 1, outs.n do
    local o = outs[k]
    if is_tensor(o) and not ctx._nondiff[o] and o:is_floating_point() then
      -- an input, a tensor already in a graph, or one returned twice: a new
      -- tensor object over its data takes the node
      if inputs[o] or seen[o] or o.requires_grad then o = o:detach() end
      seen[o] = true
      outs[k] = o
      meta[k] = { size = o:size(), dtype = o.dtype, device = o.device }
      diff[#diff + 1] = k
    end
  end
  for _, k in ipairs(diff) do
    core.function_record(outs[k], name .. "Backward", args, args.n, node_backward(class, ctx, k, outs.n, meta, args.n))
  end
  return unpack(outs, 1, outs.n)
end

--- Function:extend("Name"): a new Function class; define Name.forward(ctx, ...)
--- and Name.backward(ctx, grad_outputs...), then call Name.apply(...)
function Function:extend(name)
  if type(self) ~= "table" or (self ~= Function and getmetatable(self) == nil) then
    check.expected("Function.extend", "self", "a Function class", self)
  end
  if name ~= nil then check.string(name, "Function.extend", "name") end
  local class = setmetatable({ __name = name or "Function" }, { __index = self })
  class.__index = class
  --- Name.apply(...) (Name:apply(...) also works): forward, recorded for backward
  class.apply = function(...)
    if select("#", ...) > 0 and select(1, ...) == class then return apply(class, select(2, ...)) end
    return apply(class, ...)
  end
  return class
end

function Function.apply()
  wick.error("autograd.Function.apply: call apply on a class made with Function:extend(\"Name\")")
end

return M
