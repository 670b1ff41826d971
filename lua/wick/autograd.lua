-- wick.autograd: queue_callback, and Function (PyTorch's torch.autograd.Function),
-- a differentiable op written in Lua with its forward and backward by hand:
--
--   local Cube = wick.autograd.Function:extend("Cube")
--   function Cube.forward(ctx, x) ctx:save_for_backward(x); return x ^ 3 end
--   function Cube.backward(ctx, grad) local x = ctx.saved_tensors[1]; return grad * 3 * x ^ 2 end
--   local y = Cube.apply(x)
--
-- forward runs without grad; the core then records a node (src/core/function.c),
-- named "<Name>Backward", whose backward calls the class's backward: with one
-- differentiable output, on it; with several on one device, on one joint tensor
-- that their nodes feed, so that backward runs once with all their gradients
-- (joint_outputs). (Outputs on several devices get a node each, called with that
-- output's gradient and zeros for the others: a backward is linear in its
-- gradients, so the inputs' gradients add up to what one call gives.) The node
-- keeps ctx (and what it saved) until the graph is freed.
local wick = require("wick")
local core = require("wick.core")
local check = require("wick.argcheck")

local unpack = table.unpack or unpack -- luacheck: ignore (LuaJIT's global)
local function pack(...) return { n = select("#", ...), ... } end
local function is_tensor(v) return getmetatable(v) == core._mt end

local M = { queue_callback = core.queue_callback }

-- ---- ctx: what forward leaves for backward ----

local Ctx = {}
-- ctx.saved_variables: PyTorch's deprecated name of saved_tensors (EfficientNet's old Swish), with its warning
Ctx.__index = function(ctx, k)
  if k == "saved_variables" then
    require("wick.nn.common").warn("'saved_variables' is deprecated; use 'saved_tensors'")
    return rawget(ctx, "saved_tensors")
  end
  return Ctx[k]
end
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

local run_backward, joint_outputs -- (below)

local Function = { __name = "Function" }
Function.__index = Function
M.Function = Function

-- class.backward(ctx, grads of the nout outputs...): the gradients of the n inputs, checked
function run_backward(class, ctx, grads, nout, n)
  local name = class.__name
  if type(class.backward) ~= "function" then
    wick.error(("%s.backward is not defined (a Function needs forward and backward)"):format(name))
  end
  local r = pack(class.backward(ctx, unpack(grads, 1, nout)))
  for i = 1, math.max(r.n, n) do
    local g = r[i]
    if i > n and g ~= nil then
      wick.error(("%s.backward returned an incorrect number of gradients (expected %d, got %d)"):format(name, n, r.n))
    elseif g ~= nil and not is_tensor(g) then
      wick.error(("%s.backward returned a %s as the gradient of input %d; expected a tensor or nil")
        :format(name, type(g), i))
    elseif g ~= nil and ctx._not_tensor[i] then -- (torchsde's adjoint: nil for its 13 other arguments)
      wick.error(("function %sBackward returned a gradient different than nil at position %d, but the corresponding "
        .. "forward input was not a tensor"):format(name, i))
    elseif i > r.n and ctx.needs_input_grad[i] then
      wick.error(("%s.backward returned an incorrect number of gradients (expected %d, got %d)"):format(name, n, r.n))
    end
  end
  return r
end
-- One output's node: its backward calls class.backward with `grad` at output
-- `k` of `nout` (the other differentiable ones zeros, described by `meta`);
-- returns the gradients of the n inputs.
local function node_backward(class, ctx, k, nout, meta, n)
  return function(grad)
    local grads = {}
    for j, m in pairs(meta) do
      if j == k then grads[j] = grad
      elseif ctx._materialize then grads[j] = wick.zeros(m.size, { dtype = m.dtype, device = m.device }) end
    end
    return run_backward(class, ctx, grads, nout, n)
  end
end

-- Several differentiable outputs on one device: backward runs once with all their gradients, as
-- PyTorch's (a checkpointed HF block returns 5 to 7 outputs: one recomputation, not one per output).
-- The Function's node is recorded on a joint tensor (the outputs end to end, flat, in their
-- promoted dtype; its values unused) and each output's node, named as the Function's, puts the
-- output's gradient in its place of a joint gradient: the engine sums those before it runs the
-- Function's node. An output whose node never ran got no gradient: nil to backward under
-- set_materialize_grads(false), zeros otherwise.
function joint_outputs(class, ctx, outs, diff, meta, args)
  local first = outs[diff[1]]
  local dtype, device = first.dtype, first.device
  for _, k in ipairs(diff) do
    if outs[k].device ~= device then return false end -- (the engine's per-output nodes then)
    dtype = wick.promote_types(dtype, outs[k].dtype)
  end
  local offsets, total = {}, 0
  for i, k in ipairs(diff) do offsets[i], total = total, total + outs[k]:numel() end
  local opts = { dtype = dtype, device = device }
  local joint = wick.empty({ total }, opts)
  local received, nout, n, name = {}, outs.n, args.n, class.__name .. "Backward"
  core.function_record(joint, name, args, n, function(grad)
    local per_output = {}
    for j, m in pairs(meta) do
      if received[j] or (m.joint and ctx._materialize) then
        per_output[j] = grad:narrow(1, m.at + 1, m.numel):view(m.size):to(m.dtype)
      elseif ctx._materialize then
        per_output[j] = wick.zeros(m.size, { dtype = m.dtype, device = m.device })
      end
    end
    for k in pairs(received) do received[k] = nil end -- (a retained graph's next backward starts afresh)
    return run_backward(class, ctx, per_output, nout, n)
  end)
  local inputs = { n = 1, joint }
  for i, k in ipairs(diff) do
    local m, at = meta[k], offsets[i]
    m.joint, m.at, m.numel = true, at, outs[k]:numel()
    core.function_record(outs[k], name, inputs, 1, function(g) -- (its place of the joint gradient, zeros elsewhere)
      received[k] = true
      local parts = { g:reshape(-1):to(dtype) }
      if at > 0 then table.insert(parts, 1, wick.zeros({ at }, opts)) end
      if total - at - m.numel > 0 then parts[#parts + 1] = wick.zeros({ total - at - m.numel }, opts) end
      return { n = 1, #parts == 1 and parts[1] or wick.cat(parts) }
    end)
  end
  return true
end

local function apply(class, ...)
  local args = pack(...)
  local name = class.__name
  if type(class.forward) ~= "function" then wick.error(("%s.forward is not defined"):format(name)) end
  local ctx = setmetatable({ saved_tensors = {}, needs_input_grad = {}, _nondiff = {}, _materialize = true,
    _not_tensor = {} }, Ctx)
  local grad_on, any, inputs = core.is_grad_enabled(), false, {}
  for i = 1, args.n do
    local a = args[i]
    local needs = grad_on and is_tensor(a) and a.requires_grad or false
    ctx.needs_input_grad[i] = needs
    ctx._not_tensor[i] = not is_tensor(a)
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
    -- every tensor output's gradient reaches backward: zeros for those with
    -- none, integer and non-differentiable ones included (PyTorch's materialize)
    if is_tensor(o) then meta[k] = { size = o:size(), dtype = o.dtype, device = o.device } end
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
  if #diff >= 2 and joint_outputs(class, ctx, outs, diff, meta, args) then return unpack(outs, 1, outs.n) end
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

--- autograd.set_detect_anomaly(mode[, check_nan = true]): while on, a backward
--- checks every node's gradients for NaN and fails naming the first node that
--- made one (PyTorch's "Function 'LogBackward' returned nan values in its 0th
--- output."); autograd.detect_anomaly(fn, ...) runs fn with it on, then restores
--- it (or, without fn, turns it on, as the context manager's enter);
--- autograd.is_anomaly_enabled().
--- autograd.set_detect_anomaly(mode, fn, ...) runs fn in that mode and restores the previous one
--- (`with torch.autograd.set_detect_anomaly(True):`)
-- the mode and its NaN check as PyTorch keeps them; the core checks NaNs while both are on (wick
-- records no forward tracebacks, so the mode without the NaN check changes nothing else)
local anomaly = { mode = false, check_nan = true }
local function set_anomaly(mode, check_nan)
  anomaly.mode, anomaly.check_nan = mode, check_nan
  core.set_detect_anomaly(mode and check_nan)
end
local function with_anomaly(mode, check_nan, fn, ...)
  local was_mode, was_nan = anomaly.mode, anomaly.check_nan
  set_anomaly(mode, check_nan)
  local ok, out = pcall(function(...) return pack(fn(...)) end, ...)
  set_anomaly(was_mode, was_nan)
  if not ok then error(out, 0) end
  return unpack(out, 1, out.n)
end
function M.set_detect_anomaly(mode, check_nan, ...)
  check.boolean(mode, "set_detect_anomaly", "mode")
  if check.is_callable(check_nan) then return with_anomaly(mode, true, check_nan, ...) end
  if check_nan ~= nil then check.boolean(check_nan, "set_detect_anomaly", "check_nan") end
  if check.is_callable((...)) then return with_anomaly(mode, check_nan ~= false, ...) end
  set_anomaly(mode, check_nan ~= false)
end
function M.is_anomaly_enabled() return anomaly.mode end
--- autograd.is_anomaly_check_nan_enabled(): whether anomaly mode checks for NaNs (PyTorch's)
function M.is_anomaly_check_nan_enabled() return anomaly.check_nan end
function M.detect_anomaly(fn, ...)
  if fn == nil or type(fn) == "table" then
    local check_nan = type(fn) == "table" and check.options(fn, "detect_anomaly", { check_nan = "boolean" }).check_nan
    return M.set_detect_anomaly(true, check_nan ~= false)
  end
  if not check.is_callable(fn) then check.expected("detect_anomaly", "fn", "a function", fn) end
  return with_anomaly(true, true, fn, ...)
end

--- autograd.no_grad, enable_grad, set_grad_enabled, inference_mode: wick's (torch.autograd's paths to them)
M.no_grad, M.enable_grad, M.set_grad_enabled = wick.no_grad, wick.enable_grad, wick.set_grad_enabled
M.inference_mode = wick.inference_mode

--- autograd.once_differentiable(backward) (torch.autograd.function.once_differentiable): the
--- backward run without recording, so its gradients are not differentiable again
function M.once_differentiable(backward)
  check.callable(backward, "once_differentiable", "fn")
  return function(...) return wick.no_grad(backward, ...) end
end
M["function"] = { once_differentiable = M.once_differentiable } -- (torch.autograd.function's path)

--- autograd.Variable(t[, requires_grad]): PyTorch's deprecated wrapper, t itself
function M.Variable(t, requires_grad)
  check.tensor(t, "Variable", "data")
  if type(requires_grad) == "table" then
    local o = check.options(requires_grad, "Variable", { requires_grad = "boolean", volatile = "boolean" })
    if o.volatile ~= nil then
      require("wick.nn.common").warn("Variable: volatile was removed and now has no effect. Use `with torch.no_grad():` (wick.no_grad) instead.")
    end
    requires_grad = o.requires_grad
  end
  if requires_grad then t:requires_grad_(true) end
  return t
end

-- ---- backward and grad (PyTorch's torch.autograd.backward / grad) ----

local function list_of(v) -- a tensor, or a list of tensors, as a list
  if is_tensor(v) then return { v } end
  return v
end

-- Positional arguments after `first` names, or one table of keywords: PyTorch's
-- call `grad(outputs = y, inputs = x, create_graph = True)` ports as
-- `grad{outputs = y, inputs = x, create_graph = true}`.
local function keywords(fn, names, ...)
  local first = ...
  if select("#", ...) == 1 and type(first) == "table" and not is_tensor(first) and first[names[1]] ~= nil then
    return first
  end
  local n = select("#", ...)
  local last = n > 0 and select(n, ...) or nil
  local opts -- the last argument when it is an options table (not a tensor, nor a list of them)
  -- (a list of tensors may start with nil: grad_outputs {nil, g}; an options table has no integer keys)
  local function is_list(t) for k in pairs(t) do if type(k) == "number" then return true end end return false end
  if type(last) == "table" and not is_tensor(last) and last[1] == nil and not is_list(last) then opts, n = last, n - 1 end
  if n > #names then
    check.fail(fn, "takes at most %d positional arguments (%s) and an options table, got %d", #names,
      table.concat(names, ", "), n)
  end
  local args = {}
  for i = 1, n do args[names[i]] = (select(i, ...)) end
  for k, v in pairs(opts or {}) do args[k] = v end
  return args
end

local function check_keys(fn, args, allowed)
  for k in pairs(args) do
    if not allowed[k] then wick.error(("%s: unknown option '%s'"):format(fn, tostring(k))) end
  end
end

local GRAD_KEYS = { outputs = true, inputs = true, grad_outputs = true, retain_graph = true, create_graph = true,
  allow_unused = true, materialize_grads = true, only_inputs = true, is_grads_batched = true }

-- is_grads_batched: grad_outputs' first dim is a batch of vectors; one backward each (PyTorch's vmap
-- gives the same), the gradients stacked along a new first dim
local function batched_grad(fn, a)
  local go = list_of(a.grad_outputs)
  if type(go) ~= "table" or #go == 0 then wick.error(fn .. ": is_grads_batched = true needs grad_outputs") end
  local n
  for j, g in ipairs(go) do
    if not wick.is_tensor(g) or g:dim() == 0 then
      check.expected(fn, ("grad_outputs[%d]"):format(j), "a tensor with a batch dim (is_grads_batched)", g)
    end
    if n and g:size(1) ~= n then wick.error(fn .. ": the grad_outputs' batch sizes differ (is_grads_batched)") end
    n = g:size(1)
  end
  local inputs, per = list_of(a.inputs), {}
  for b = 1, n do
    local gb = {}
    for j, g in ipairs(go) do gb[j] = g:select(1, b) end
    local keep = a.retain_graph
    if b < n or keep == nil then keep = b < n or a.create_graph == true end
    per[b] = M.grad(a.outputs, a.inputs, gb, { retain_graph = keep, create_graph = a.create_graph,
      allow_unused = a.allow_unused, materialize_grads = a.materialize_grads })
  end
  local out = { n = type(inputs) == "table" and #inputs or 1 }
  for k = 1, out.n do
    if per[1][k] ~= nil then
      local parts = {}
      for b = 1, n do parts[b] = per[b][k] end
      out[k] = wick.stack(parts)
    end
  end
  return out
end

--- wick.autograd.grad(outputs, inputs[, grad_outputs][, opts]) -> list of gradients
function M.grad(...)
  local fn = "autograd.grad"
  local a = keywords(fn, { "outputs", "inputs", "grad_outputs", "retain_graph", "create_graph", "only_inputs",
    "allow_unused", "is_grads_batched", "materialize_grads" }, ...) -- PyTorch's positional order
  check_keys(fn, a, GRAD_KEYS)
  if a.materialize_grads and a.allow_unused == false then
    wick.error(fn .. ": Expected allow_unused to be True or not passed when materialize_grads=True, but got: "
      .. "allow_unused=False.")
  end
  if a.is_grads_batched then return batched_grad(fn, a) end
  local outputs, inputs = list_of(a.outputs), list_of(a.inputs)
  if type(outputs) ~= "table" then check.expected(fn, "outputs", "a tensor or a list of tensors", a.outputs) end
  if type(inputs) ~= "table" then check.expected(fn, "inputs", "a tensor or a list of tensors", a.inputs) end
  local go = a.grad_outputs
  if go ~= nil then go = list_of(go) end
  if go ~= nil and type(go) ~= "table" then check.expected(fn, "grad_outputs", "a tensor or a list", a.grad_outputs) end
  if go ~= nil then -- (a trailing nil, ones for a one-element output, cannot be told from a short list: only
    -- an output that needs its gradient says the lists differ, as PyTorch's "got 2 tensors and 1 gradients")
    local m = 0 -- (the largest index: table.maxn, which Lua 5.4 lacks)
    for k in pairs(go) do if type(k) == "number" and k > m then m = k end end
    local short = false
    for i = m + 1, #outputs do short = short or (is_tensor(outputs[i]) and outputs[i]:numel() ~= 1) end
    if m > #outputs or short then
      check.fail(fn, "got %d tensors and %d gradients (grad_outputs has one gradient per output)", #outputs, m)
    end
  end
  local create = a.create_graph == true
  local retain = a.retain_graph
  if retain == nil then retain = create end
  -- an input listed twice gets the same gradient each time, as PyTorch's
  local unique, where, at = {}, {}, {}
  for k = 1, #inputs do
    local t = inputs[k]
    if where[t] == nil then unique[#unique + 1] = t; where[t] = #unique end
    at[k] = where[t]
  end
  local grads = core.autograd_run(outputs, go, unique, retain, create, true)
  if #unique ~= #inputs then
    local spread = { n = #inputs }
    for k = 1, #inputs do spread[k] = grads[at[k]] end
    grads = spread
  end
  for k = 1, grads.n do
    if grads[k] == nil then
      if a.materialize_grads then
        grads[k] = wick.zeros_like(inputs[k])
      elseif not a.allow_unused then
        wick.error(fn .. ": One of the differentiated Tensors appears to not have been used in the graph "
          .. ("(input %d). Set allow_unused = true if this is the desired behavior."):format(k))
      end
    end
  end
  return grads
end

local BACKWARD_KEYS = { tensors = true, grad_tensors = true, retain_graph = true, create_graph = true, inputs = true,
  grad_variables = true }

--- wick.autograd.backward(tensors[, grad_tensors][, opts]): into the leaves' .grad (or only `inputs`')
function M.backward(...)
  local fn = "autograd.backward"
  local a = keywords(fn, { "tensors", "grad_tensors", "retain_graph", "create_graph", "grad_variables", "inputs" }, ...)
  check_keys(fn, a, BACKWARD_KEYS)
  local outputs = list_of(a.tensors)
  if type(outputs) ~= "table" then check.expected(fn, "tensors", "a tensor or a list of tensors", a.tensors) end
  local gt = a.grad_tensors
  if gt == nil then gt = a.grad_variables end -- (PyTorch's older name)
  if gt ~= nil then gt = list_of(gt) end
  local create = a.create_graph == true
  local retain = a.retain_graph
  if retain == nil then retain = create end
  local inputs = a.inputs
  if inputs ~= nil then inputs = list_of(inputs) end
  core.autograd_run(outputs, gt, inputs, retain, create, false)
end

-- ---- gradcheck and gradgradcheck (torch.autograd.gradcheck) ----

local GRADCHECK = { eps = "number", atol = "number", rtol = "number", raise_exception = "boolean",
  nondet_tol = "number", check_undefined_grad = "boolean", check_grad_dtypes = "boolean",
  check_batched_grad = "boolean", check_backward_ad = "boolean", fast_mode = "boolean", masked = "boolean",
  grad_outputs = "any", gen_non_contig_grad_outputs = "boolean", check_fwd_over_rev = "boolean",
  check_rev_over_rev = "boolean", check_forward_ad = "boolean" }

local function outputs_list(r, ...)
  if select("#", ...) > 0 then return { r, ... } end
  if is_tensor(r) then return { r } end
  return r
end

-- the analytical Jacobian of every output (from the graph of `outs`, made
-- first) against central differences, element by element; the differences
-- run func on perturbed copies of the inputs (the inputs stay as they are),
-- as PyTorch's: grad mode on, and the copies require grad as their inputs do
-- (a func that registers a hook on its output, or differentiates inside:
-- gradgradcheck's first derivatives)
local function check_jacobian(fn, func, inputs, outs, o)
  local eps, atol, rtol = o.eps or 1e-6, o.atol or 1e-5, o.rtol or 1e-3
  local xs, where = {}, {}
  for i, x in ipairs(inputs) do
    if is_tensor(x) and x.requires_grad then xs[#xs + 1] = x; where[#xs] = i end
  end
  -- analytic[j][e][m]: d output j element e / d input xs[m], flattened
  local analytic = {}
  for j, out in ipairs(outs) do
    analytic[j] = {}
    local flat = out:reshape(-1)
    for e = 1, out:numel() do
      local g = out.requires_grad and M.grad(flat[e], xs, nil, { retain_graph = true, allow_unused = true }) or {}
      analytic[j][e] = {}
      for m = 1, #xs do analytic[j][e][m] = g[m] and g[m]:double():reshape(-1) or false end
    end
  end
  for m, x in ipairs(xs) do
    local base = x:detach():double():reshape(-1)
    for k = 1, base:numel() do
      local function run(delta)
        local args = {}
        for i, v in ipairs(inputs) do args[i] = v end
        local c = base:clone()
        c[k] = base[k]:item() + delta
        args[where[m]] = c:view(x:size()):to(x.dtype):requires_grad_(true)
        return wick.enable_grad(function()
          local r = outputs_list(func(unpack(args, 1, #inputs)))
          for q, t in ipairs(r) do r[q] = t:detach() end
          return r
        end)
      end
      local plus, minus = run(eps), run(-eps)
      for j, out in ipairs(outs) do
        local numeric = ((plus[j]:double() - minus[j]:double()) / (2 * eps)):reshape(-1)
        for e = 1, out:numel() do
          local row = analytic[j][e][m]
          local a, n = row and row[k]:item() or 0, numeric[e]:item()
          if not (math.abs(a - n) <= atol + rtol * math.abs(n)) then
            local msg = ("%s: Jacobian mismatch for output %d with respect to input %d, element (output %d, input %d): numerical %.10g, analytical %.10g")
              :format(fn, j, where[m], e, k, n, a)
            if o.raise_exception == false then return false, msg end
            wick.error(msg)
          end
        end
      end
    end
  end
  return true
end

--- autograd.gradcheck(func, inputs[, {eps = 1e-6, atol = 1e-5, rtol = 1e-3, raise_exception = true}]):
--- true when the gradients of func at inputs (a tensor or a list; those that require grad are
--- checked, best in float64) match central differences; else an error (or false)
function M.gradcheck(func, inputs, opts)
  local fn = "gradcheck"
  check.callable(func, fn, "func")
  opts = check.options(opts, fn, GRADCHECK)
  inputs = list_of(inputs)
  if type(inputs) ~= "table" then check.expected(fn, "inputs", "a tensor or a list of tensors", inputs) end
  local any = false
  for _, x in ipairs(inputs) do if is_tensor(x) and x.requires_grad then any = true end end
  if not any then
    check.fail(fn, "gradcheck expects at least one input tensor to require gradient, but none of the them have requires_grad=True.")
  end
  local outs = wick.enable_grad(function() return outputs_list(func(unpack(inputs))) end)
  return wick.enable_grad(function() return check_jacobian(fn, func, inputs, outs, opts) end)
end

--- autograd.gradgradcheck(func, inputs[, grad_outputs][, opts]): gradcheck of the gradients of
--- func (with create_graph), with respect to the inputs and to grad_outputs (random when absent)
function M.gradgradcheck(func, inputs, grad_outputs, opts)
  local fn = "gradgradcheck"
  check.callable(func, fn, "func")
  if opts == nil and type(grad_outputs) == "table" and not is_tensor(grad_outputs) and grad_outputs[1] == nil
    and next(grad_outputs) ~= nil then grad_outputs, opts = nil, grad_outputs end
  opts = check.options(opts, fn, GRADCHECK)
  inputs = list_of(inputs)
  local outs = wick.enable_grad(function() return outputs_list(func(unpack(inputs))) end)
  local gos = grad_outputs and list_of(grad_outputs) or {}
  if not grad_outputs then
    for j, out in ipairs(outs) do gos[j] = wick.randn_like(out):requires_grad_(true) end
  end
  local n = #inputs
  local function first_order(...)
    local args = { ... }
    local xs, at = {}, {}
    for i = 1, n do if is_tensor(args[i]) and args[i].requires_grad then xs[#xs + 1] = args[i]; at[#xs] = i end end
    local os = outputs_list(func(unpack(args, 1, n)))
    local go = {}
    for j = 1, #os do go[j] = args[n + j] end
    local g = M.grad(os, xs, go, { create_graph = true, allow_unused = true })
    local out = {}
    for k = 1, #xs do out[k] = g[k] or wick.zeros_like(xs[k]) end
    return unpack(out)
  end
  local all = {}
  for i = 1, n do all[i] = inputs[i] end
  for j = 1, #gos do all[n + j] = gos[j] end
  local ok, why = wick.enable_grad(function()
    local first = outputs_list(first_order(unpack(all)))
    return check_jacobian(fn, first_order, all, first, opts)
  end)
  if ok then return true end
  return false, why
end

-- ---- forward_ad (torch.autograd.forward_ad): dual tensors, their tangents by reverse mode ----
-- make_dual(primal, tangent) inside a dual_level gives a tensor to compute with that remembers its
-- tangent; unpack_dual(y) gives y and J v, the Jacobian of y with respect to the level's duals
-- along their tangents, by the double-vjp trick (as func.jvp): y's gradient with respect to a
-- vector u is linear in u, and its gradient with respect to u along the tangents is J v. So f must
-- be differentiable twice, and the tangent costs two backward passes when it is read.
local forward_ad = {}
local levels = {} -- (a stack: each level the list of its duals and tangents)
local function level_fn(fn, ...)
  levels[#levels + 1] = {}
  local r = pack(pcall(fn, ...))
  levels[#levels] = nil
  if not r[1] then error(r[2], 0) end
  return unpack(r, 2, r.n)
end
--- forward_ad.dual_level(fn, ...): fn run inside a new level (Python's `with fwAD.dual_level():`);
--- without fn, a context object with __enter__ and __exit__
function forward_ad.dual_level(fn, ...)
  if fn == nil then
    return { __enter__ = function(self) levels[#levels + 1] = {}; return self end,
      __exit__ = function() levels[#levels] = nil end }
  end
  check.callable(fn, "forward_ad.dual_level", "fn")
  return level_fn(fn, ...)
end
function forward_ad.enter_dual_level() levels[#levels + 1] = {}; return #levels - 1 end
function forward_ad.exit_dual_level() levels[#levels] = nil end
--- forward_ad.make_dual(primal, tangent): a tensor with primal's values (a view of primal when it
--- requires grad, so its gradient still reaches primal) that carries tangent
function forward_ad.make_dual(primal, tangent)
  local fn = "forward_ad.make_dual"
  check.tensor(primal, fn, "tensor")
  check.tensor(tangent, fn, "tangent")
  local level = levels[#levels]
  if not level then check.fail(fn, "To create a dual tensor, you must be inside a dual_level context (forward_ad.dual_level(fn))") end
  if tostring(primal:size()) ~= tostring(tangent:size()) then
    check.fail(fn, "Trying to set a forward gradient that has a different size than that of the original Tensor, this is "
      .. "not supported. Tensor is of size %s while the given forward gradient is of size %s.", tostring(primal:size()),
      tostring(tangent:size()))
  end
  local dual = primal.requires_grad and wick.is_grad_enabled() and primal:view_as(primal) or primal:detach():requires_grad_(true)
  level[#level + 1] = { dual = dual, tangent = tangent }
  return dual
end
--- forward_ad.unpack_dual(t) -> primal, tangent (also as .primal and .tangent of the first): the tangent
--- nil where t does not depend on the level's duals
function forward_ad.unpack_dual(t)
  local fn = "forward_ad.unpack_dual"
  check.tensor(t, fn, "tensor")
  local level = levels[#levels]
  if not level or #level == 0 or not t.requires_grad then return t, nil end
  local duals, tangents = {}, {}
  for i, d in ipairs(level) do duals[i], tangents[i] = d.dual, d.tangent end
  local tangent
  wick.enable_grad(function()
    local u = wick.zeros_like(t):requires_grad_(true)
    local gs = M.grad({ t }, duals, { u }, { create_graph = true, allow_unused = true })
    local inner
    for i, g in ipairs(duals) do
      local gi = gs[i]
      if gi ~= nil then
        local term = (gi * tangents[i]:to(gi.dtype)):sum()
        inner = inner and inner + term or term
      end
      local _ = g
    end
    if inner == nil then return end
    if not inner.requires_grad then tangent = wick.zeros_like(t); return end
    tangent = M.grad({ inner }, { u }, nil, { create_graph = wick.is_grad_enabled(), allow_unused = true })[1]
      or wick.zeros_like(t)
  end)
  return t, tangent
end
forward_ad.unpack_dual = wick._name_results(forward_ad.unpack_dual, { "primal", "tangent" })
M.forward_ad = forward_ad

-- autograd.functional (jacobian, hessian, vjp, jvp, hvp, vhp): wick/func.lua, on first use
setmetatable(M, { __index = function(t, k)
  if k == "functional" then
    local f = require("wick.func")._functional
    rawset(t, k, f)
    return f
  elseif k == "profiler" then -- torch.autograd.profiler.profile: wick.profiler's
    local p = { profile = function(...) return require("wick.profiler").profile(...) end,
      record_function = function(...) return require("wick.profiler").record_function(...) end }
    rawset(t, k, p)
    return p
  end
  -- a name wick.autograd does not have is an error at the caller's line, as wick.nn's
  if type(k) == "string" and k:sub(1, 1) ~= "_" then
    error(("wick.autograd has no '%s' (not in this version of wick: see docs/api.md)"):format(k), 2)
  end
end })

return M
