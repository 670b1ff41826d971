-- Function transforms over autograd: wick.autograd.functional (PyTorch's
-- torch.autograd.functional: jacobian, hessian, vjp, jvp, hvp, vhp) and
-- wick.func (torch.func: grad, grad_and_value, vjp, jacrev, jacfwd, hessian,
-- vmap, functional_call, stack_module_state).
--
-- Every transform runs the function under wick's autograd (autograd.grad,
-- with create_graph where a result must itself be differentiable), so a
-- function is differentiable twice where its ops are (docs: autograd). vmap
-- runs the function once per sample and stacks the results: PyTorch's
-- semantics (per-sample gradients, ensembles), not its batched kernels.
-- Dimensions are 1-based: in_dims = 1 is PyTorch's in_dims=0; false (or a
-- missing entry) is None. Arguments are tensors or pytrees of them (plain
-- tables: arrays and string-keyed, as PyTorch's tuples and dicts).
local wick = require("wick")
local check = require("wick.argcheck")
local autograd = require("wick.autograd")

local unpack = table.unpack or unpack -- luacheck: ignore
local function pack(...) return { n = select("#", ...), ... } end
local is_tensor = wick.is_tensor

-- f run to be differentiated: grad mode on, and scaled_dot_product_attention composed of matmul and
-- softmax (PyTorch's math backend), whose gradient can be differentiated again (the fused one's cannot)
local function differentiating(f)
  return wick.enable_grad(function() return require("wick.nn.functional")._with_math_sdpa(f) end)
end

-- ---- pytrees (wick.utils._pytree's nodes: plain tables, OrderedDicts, lists, namedtuples) ----

local pytree = require("wick.utils.pytree")
local function is_tree(v) return v ~= nil and not pytree.tree_is_leaf(v) end
-- the tensors of a tree, in its leaves' order
local function leaves(v)
  local out = {}
  for _, x in ipairs(pytree.tree_leaves(v)) do if is_tensor(x) then out[#out + 1] = x end end
  return out
end
-- the tree v with each tensor replaced by fn(tensor) (other values kept)
local function map(v, fn) return pytree.tree_map_only("tensor", fn, v) end
-- the tree v with its tensors replaced, in order, by list's
local function rebuild(v, list)
  local i = 0
  return map(v, function() i = i + 1; return list[i] end)
end

-- a differentiable stand-in for x: a new leaf, or (when x is already tracked,
-- by an enclosing transform, grad mode on) a view of it, so the outer graph stays
-- whole; under no_grad nothing outer is tracked, and the transform still
-- differentiates (titans' @torch.no_grad() forward_inference storing memories)
local function tracked(x)
  if x.requires_grad and wick.is_grad_enabled() then return x:view_as(x) end
  return x:detach():requires_grad_(true)
end

local function any_tracked(list)
  if not wick.is_grad_enabled() then return false end
  for _, x in ipairs(list) do if x.requires_grad then return true end end
  return false
end

-- whether a result computed from out must stay differentiable (torch.func's
-- levels): an input is tracked by an enclosing transform, or, with grad mode
-- on around the transform, out depends on a tensor that requires grad other
-- than the stand-ins xs (a module's parameters the function closes over, an
-- argument not differentiated here)
local function keeps_graph(outer, grad_on, out, xs)
  return outer or (grad_on and is_tensor(out) and out.requires_grad and out:_reaches_other_leaf(xs))
end

-- ---- torch.autograd.functional ----

local F = {}

-- gradients of out with respect to xs, nil where unused (out not tracked: all nil)
local function raw_grads(out, xs, v, create)
  if not (is_tensor(out) and out.requires_grad) then return {} end
  return autograd.grad(out, xs, v, { create_graph = create, retain_graph = true, allow_unused = true })
end


-- strict mode's checks, PyTorch's messages (its 0-based numbering, as PyTorch prints them)
local function check_outputs(fn, outs, strict)
  if not strict then return end
  for i, o in ipairs(outs) do
    if not o.requires_grad then
      check.fail(fn, "Output %d of the user-provided function does not require gradients. The outputs must be "
        .. "computed in a differentiable manner from the input when running in strict mode.", i - 1)
    end
  end
end
local STAGE = {
  jacobian = "Output %d of the user-provided function is independent of input %d. This is not allowed in strict mode.",
  back = "The output of the user-provided function is independent of input %d. This is not allowed in strict mode.",
  back_trick = "The gradient with respect to the input is independent of entry %d in the grad_outputs when using the "
    .. "double backward trick to compute forward mode gradients. This is not allowed in strict mode.",
  double_back = "The jacobian of the user-provided function is independent of input %d. This is not allowed in strict mode.",
  double_back_trick = "The hessian of the user-provided function is independent of entry %d in the grad_jacobian. "
    .. "This is not allowed in strict mode as it prevents from using the double backward trick to replace forward mode AD.",
}
-- PyTorch's _fill_in_zeros: zeros (like refs) where a gradient is nil, or strict mode's error;
-- stage "jacobian" is one output's row of a Jacobian (output j, 1-based, for the messages)
local function fill_in_zeros(fn, g, refs, strict, create, stage, j)
  local out = {}
  for i, ref in ipairs(refs) do
    local gi = g[i]
    if gi == nil then
      if strict and j then check.fail(fn, STAGE[stage], j - 1, i - 1) end
      if strict then check.fail(fn, STAGE[stage], i - 1) end
      gi = wick.zeros_like(ref)
    elseif strict and create and not gi.requires_grad then
      check.fail(fn, "The %s of the user-provided function is independent of input %d. This is not allowed in strict "
        .. "mode when create_graph=True.", stage:find("double") and "hessian" or "jacobian", (j or i) - 1) -- (PyTorch
      -- numbers the output in a Jacobian's row)
    end
    out[i] = create and gi or gi:detach()
  end
  return out
end

-- gradients of out (a tensor) with respect to xs, zeros where unused;
-- strict: the function's name, an output independent of an input is PyTorch's error
local function grads_of(out, xs, v, create, strict, j)
  return fill_in_zeros(strict, raw_grads(out, xs, v, create), xs, strict, create, "jacobian", j or 1)
end
-- the gradient of a one-element function (its jacobian) must depend on the inputs in strict mode
local function check_jacobian(fn, g, n, strict)
  if not strict then return end
  for i = 1, n do
    if g[i] == nil then check.fail(fn, STAGE.back, i - 1) end
    if not g[i].requires_grad then
      check.fail(fn, "While computing the hessian, found that the jacobian of the user-provided function with respect "
        .. "to input %d is independent of the input. This is not allowed in strict mode. You should ensure that your "
        .. "function is twice differentiable and that the jacobian depends on the inputs (this would be violated by a "
        .. "linear function for example).", i - 1)
    end
  end
end

local FUNCTIONAL = { create_graph = "boolean", strict = "boolean", vectorize = "boolean", strategy = "string",
  outer_jacobian_strategy = "string" }

-- inputs: a tensor (one) or a list of them; the function's arguments
local function inputs_of(fn, inputs, create)
  local single = is_tensor(inputs)
  local list = single and { inputs } or inputs
  if type(list) ~= "table" then check.expected(fn, "inputs", "a tensor or a list of tensors", inputs) end
  local xs = {}
  for i, x in ipairs(list) do
    if not is_tensor(x) then check.fail(fn, "inputs[%d] is not a tensor", i) end
    xs[i] = create and x.requires_grad and x:view_as(x) or x:detach():requires_grad_(true)
  end
  return xs, single
end

-- the function's results (several Lua results are a list, as Python's tuple)
local function outputs_of(fn, r, ...)
  if select("#", ...) > 0 then r = { r, ... } end
  if is_tensor(r) then return { r }, true end
  if type(r) ~= "table" then check.fail(fn, "the function must return a tensor or a list of tensors, got %s", type(r)) end
  for i, o in ipairs(r) do
    if not is_tensor(o) then check.fail(fn, "the function's output %d is not a tensor", i) end
  end
  return r, false
end

-- the Jacobian of outs[j] with respect to xs[i], one backward per output element
local function jacobian_of(outs, xs, create, strict)
  local J = {}
  for j, out in ipairs(outs) do
    local flat = out:reshape(-1)
    local rows = {}
    for i = 1, #xs do rows[i] = {} end
    for k = 1, flat:numel() do
      local g = grads_of(flat[k], xs, nil, create, strict, j)
      for i = 1, #xs do rows[i][k] = g[i] end
    end
    J[j] = {}
    for i, x in ipairs(xs) do
      local shape = out:size()
      for _, s in ipairs(x:size()) do shape[#shape + 1] = s end
      J[j][i] = flat:numel() == 0 and wick.zeros(shape, { dtype = x.dtype, device = x.device })
        or wick.stack(rows[i]):reshape(shape)
    end
  end
  return J
end

--- autograd.functional.jacobian(func, inputs[, {create_graph, strict, vectorize, strategy}])
-- strategy: "reverse-mode" (default) or "forward-mode" (which PyTorch takes with vectorize = true only,
-- without create_graph or strict; the values are the same here, computed by reverse mode)
local function jacobian_strategy(fn, opts, strategy, hint)
  if strategy ~= nil and strategy ~= "forward-mode" and strategy ~= "reverse-mode" then
    check.fail(fn, 'Expected strategy to be either "forward-mode" or "reverse-mode".%s', hint and (' Hint: If your '
      .. 'function has more outputs than inputs, "forward-mode" tends to be more performant. Otherwise, prefer to use '
      .. '"reverse-mode".') or "")
  end
  if strategy == "forward-mode" then
    if opts.create_graph then
      check.fail(fn, 'torch.autograd.functional.jacobian: `create_graph=True` and `strategy="forward-mode"` are not '
        .. 'supported together (yet). Please either set `create_graph=False` or `strategy="reverse-mode"`. '
        .. "(PyTorch's NotImplementedError)")
    end
    if opts.strict then
      check.fail(fn, 'torch.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` are not '
        .. 'supported together (yet). Please either set `strict=False` or `strategy="reverse-mode"`.')
    end
    if not opts.vectorize then
      check.fail(fn, "Computing Jacobian using forward-AD or forward-over-reverse Hessian isonly implemented for "
        .. "`vectorize=True`. (PyTorch's NotImplementedError)")
    end
  end
end

function F.jacobian(func, inputs, opts)
  local fn = "jacobian"
  check.callable(func, fn, "func")
  opts = check.options(opts, fn, FUNCTIONAL)
  if opts.outer_jacobian_strategy ~= nil then check.fail(fn, "unknown option 'outer_jacobian_strategy' (hessian's)") end
  jacobian_strategy(fn, opts, opts.strategy, true)
  local create = opts.create_graph == true
  local xs, single_in = inputs_of(fn, inputs, create)
  local outs, single_out = differentiating(function() return outputs_of(fn, func(unpack(xs))) end)
  check_outputs(fn, outs, opts.strict)
  if opts.strict and opts.vectorize then
    check.fail(fn, "torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not supported "
      .. "together. Please either set `strict=False` or `vectorize=False`.")
  end
  local J = differentiating(function() return jacobian_of(outs, xs, create, opts.strict and fn) end)
  if single_out and single_in then return J[1][1] end
  if single_out then return J[1] end
  if single_in then
    local out = {}
    for j = 1, #J do out[j] = J[j][1] end
    return out
  end
  return J
end

--- autograd.functional.hessian(func, inputs[, opts]): func returns one number (a 1-element tensor)
function F.hessian(func, inputs, opts)
  local fn = "hessian"
  check.callable(func, fn, "func")
  opts = check.options(opts, fn, FUNCTIONAL)
  if opts.strategy ~= nil then check.fail(fn, "unknown option 'strategy' (hessian's is outer_jacobian_strategy)") end
  local strategy = opts.outer_jacobian_strategy
  jacobian_strategy(fn, opts, strategy, false)
  local single = is_tensor(inputs)
  local function gradient(...)
    local xs = { ... }
    local out = func(...)
    if is_tensor(out) then check_outputs(fn, { out }, opts.strict) end
    if not is_tensor(out) or out:numel() ~= 1 then
      check.fail(fn, "The function given to hessian should return a single Tensor with one element")
    end
    local g = grads_of(out:reshape({}), xs, nil, true)
    check_jacobian(fn, g, #xs, opts.strict)
    if single then return g[1] end
    return g
  end
  return F.jacobian(gradient, inputs, { create_graph = opts.create_graph, strict = opts.strict,
    vectorize = opts.vectorize, strategy = strategy })
end

local function result(list, single)
  if single then return list[1] end
  return list
end

-- v: a tensor or a list matching `like` (nil: allowed when each has one element)
local function vectors(fn, v, like, what)
  if v == nil then
    for _, t in ipairs(like) do
      if t:numel() ~= 1 then
        check.fail(fn, "The vector v can only be None if the %s to the user-provided function is a single Tensor with a single element.", what)
      end
    end
    local ones = {}
    for i, t in ipairs(like) do ones[i] = wick.ones_like(t) end
    return ones
  end
  local list = is_tensor(v) and { v } or v
  if type(list) ~= "table" or #list ~= #like then
    check.fail(fn, "v must have one tensor per %s (%d), got %s", what, #like, check.describe(v))
  end
  for i, t in ipairs(like) do
    if not is_tensor(list[i]) or tostring(list[i]:size()) ~= tostring(t:size()) then
      check.fail(fn, "Mismatch in shape: v[%d] has a shape %s while the %s has %s", i,
        is_tensor(list[i]) and tostring(list[i]:size()) or check.describe(list[i]), what, tostring(t:size()))
    end
  end
  return list
end

local function detached(list, create)
  if create then return list end
  local out = {}
  for i, t in ipairs(list) do out[i] = t:detach() end
  return out
end

--- autograd.functional.vjp(func, inputs[, v][, opts]) -> outputs, vjp
-- v given positionally, or by keyword among the options ({v = ..., create_graph = ...})
local function v_and_opts(fn, v, opts)
  if opts == nil and type(v) == "table" and not is_tensor(v) and v[1] == nil and next(v) ~= nil then v, opts = nil, v end
  if type(opts) == "table" and opts.v ~= nil then
    if v ~= nil then check.fail(fn, "argument 'v' given both by position and as an option") end
    local rest = {}
    for k, x in pairs(opts) do if k ~= "v" then rest[k] = x end end
    v, opts = opts.v, rest
  end
  return v, check.options(opts, fn, FUNCTIONAL)
end

function F.vjp(func, inputs, v, opts)
  local fn = "vjp"
  check.callable(func, fn, "func")
  v, opts = v_and_opts(fn, v, opts)
  local create = opts.create_graph == true
  local xs, single_in = inputs_of(fn, inputs, create)
  return differentiating(function()
    local outs, single_out = outputs_of(fn, func(unpack(xs)))
    check_outputs(fn, outs, opts.strict)
    local vs = vectors(fn, v, outs, "output")
    local total = 0
    for i, o in ipairs(outs) do total = total + (o * vs[i]):sum() end
    local g = fill_in_zeros(fn, raw_grads(total, xs, nil, create), xs, opts.strict, create, "back")
    return result(detached(outs, create), single_out), result(g, single_in)
  end)
end

-- J v by the double-vjp trick: the vjp is linear in its vector u, so its
-- gradient with respect to u, along v, is J v
local function jvp_of(fn, func, inputs, v, opts)
  local create = opts.create_graph == true
  local xs, single_in = inputs_of(fn, inputs, create)
  local vs = vectors(fn, v, xs, "input")
  local strict = opts.strict
  return differentiating(function()
    local outs, single_out = outputs_of(fn, func(unpack(xs)))
    check_outputs(fn, outs, strict)
    local us = {}
    for i, o in ipairs(outs) do us[i] = wick.zeros_like(o):requires_grad_(true) end
    local total = 0
    for i, o in ipairs(outs) do total = total + (o * us[i]):sum() end
    local g = raw_grads(total, xs, nil, true)
    if strict then
      for i = 1, #xs do
        if g[i] == nil then check.fail(fn, STAGE.back, i - 1) end
        if not g[i].requires_grad then
          check.fail(fn, "The gradient with respect to input %d is independent of the inputs of the user-provided "
            .. "function. This is not allowed in strict mode.", i - 1)
        end
      end
    end
    local inner = 0
    for i = 1, #xs do if g[i] ~= nil then inner = inner + (g[i] * vs[i]):sum() end end
    local jv = fill_in_zeros(fn, raw_grads(inner, us, nil, create), outs, strict, create, "back_trick")
    return result(detached(outs, create), single_out), result(jv, single_out)
  end)
end

--- autograd.functional.jvp(func, inputs[, v][, opts]) -> outputs, jvp
function F.jvp(func, inputs, v, opts)
  check.callable(func, "jvp", "func")
  v, opts = v_and_opts("jvp", v, opts)
  return jvp_of("jvp", func, inputs, v, opts)
end

-- the Hessian of a one-element func along v (symmetric: H v = v H)
local function hessian_vector(fn, func, inputs, v, opts)
  check.callable(func, fn, "func")
  v, opts = v_and_opts(fn, v, opts)
  local create = opts.create_graph == true
  local xs, single_in = inputs_of(fn, inputs, create)
  local vs = vectors(fn, v, xs, "input")
  return differentiating(function()
    local out = func(unpack(xs))
    if is_tensor(out) then check_outputs(fn, { out }, opts.strict) end
    if not is_tensor(out) or out:numel() ~= 1 then
      check.fail(fn, "The function given to %s should return a single Tensor with a single element", fn)
    end
    local g = raw_grads(out:reshape({}), xs, nil, true)
    check_jacobian(fn, g, #xs, opts.strict)
    local inner = 0
    for i = 1, #xs do if g[i] ~= nil then inner = inner + (g[i] * vs[i]):sum() end end
    local hv = raw_grads(inner, xs, nil, create)
    -- (H is symmetric, so H v is computed as v H; hvp's strict mode names the jacobian's entries that
    -- depend on no input, PyTorch's double backward trick's)
    if opts.strict and fn == "hvp" then
      for i = 1, #xs do
        local dep = raw_grads(g[i]:sum(), xs, nil, false)
        local any = false
        for k = 1, #xs do any = any or dep[k] ~= nil end
        if not any then check.fail(fn, STAGE.double_back_trick, i - 1) end
      end
    end
    hv = fill_in_zeros(fn, hv, xs, opts.strict, create, fn == "hvp" and "double_back_trick" or "double_back")
    return create and out or out:detach(), result(hv, single_in)
  end)
end

--- autograd.functional.hvp(func, inputs, v[, opts]) -> output, H v
function F.hvp(func, inputs, v, opts) return hessian_vector("hvp", func, inputs, v, opts) end
--- autograd.functional.vhp(func, inputs, v[, opts]) -> output, v H
function F.vhp(func, inputs, v, opts) return hessian_vector("vhp", func, inputs, v, opts) end

-- ---- torch.func ----

local T = {}

-- argnums: 1-based position(s) of the differentiated argument(s), negative from the end (of n arguments)
local function argnum(fn, a, what, n)
  check.int(a, fn, what)
  if a == 0 then check.fail(fn, "argnums count from 1 (PyTorch's argnums=0 is 1), got 0") end
  if a > n or a < -n then check.fail(fn, "Got argnum=%d, but only %d positional inputs", a, n) end
  return a < 0 and a + n + 1 or a
end
local function positions(fn, argnums, n)
  if argnums == nil then return { argnum(fn, 1, "argnums", n) }, true end
  if type(argnums) == "number" then return { argnum(fn, argnums, "argnums", n) }, true end
  check.table(argnums, fn, "argnums")
  local out = {}
  for i, a in ipairs(argnums) do out[i] = argnum(fn, a, ("argnums[%d]"):format(i), n) end
  return out, false
end

local GRAD = { argnums = "number|table", has_aux = "boolean" }

-- value, gradients (as the argument trees), aux of f at args
local function value_and_grad(fn, f, o, ...)
  local args = pack(...)
  local at, single = positions(fn, o.argnums, args.n)
  local xs, trees = {}, {}
  local outer = false
  for k, a in ipairs(at) do
    local list = leaves(args[a])
    if #list == 0 then check.fail(fn, "argument %d has no tensor to differentiate", a) end
    outer = outer or any_tracked(list)
    local copies = {}
    for i, x in ipairs(list) do copies[i] = tracked(x); xs[#xs + 1] = copies[i] end
    trees[k] = { a, copies }
    args[a] = rebuild(args[a], copies)
  end
  local grad_on = wick.is_grad_enabled()
  return differentiating(function()
    local r = pack(f(unpack(args, 1, args.n)))
    local out, aux = r[1], r[2]
    if o.has_aux then
      if r.n ~= 2 then check.fail(fn, "has_aux = true: the function must return two values (output, aux)") end
    elseif r.n > 1 then
      check.fail(fn, "the function returned %d values; it must return one tensor with one element (with has_aux = true: the output and aux)", r.n)
    end
    if not is_tensor(out) or out:numel() ~= 1 then
      check.fail(fn, "the function must return a tensor with one element (a scalar), got %s",
        is_tensor(out) and tostring(out:size()) or check.describe(out))
    end
    outer = keeps_graph(outer, grad_on, out, xs)
    local g = grads_of(out:reshape({}), xs, nil, outer)
    local results, at_g = {}, 0
    for k, tree in ipairs(trees) do
      local n = #tree[2]
      local part = {}
      for i = 1, n do part[i] = g[at_g + i] end
      at_g = at_g + n
      results[k] = rebuild(args[tree[1]], part)
    end
    local grads = single and results[1] or results
    if not outer then -- (PyTorch's transforms give the output and aux outside their graph)
      out = out:detach()
      if aux ~= nil then aux = map(aux, function(t) return t:detach() end) end
    end
    return out, grads, aux
  end)
end

--- func.grad(f[, argnums = 1[, has_aux = false]]) (or {argnums =, has_aux =}): a function of f's
--- arguments returning the gradient of f (a one-element tensor) with respect to argument argnums
function T.grad(f, ...)
  check.callable(f, "func.grad", "func")
  local o = check.positional("func.grad", { "argnums", "has_aux" }, GRAD, ...)
  return function(...)
    local _, g, aux = value_and_grad("func.grad", f, o, ...)
    if o.has_aux then return g, aux end
    return g
  end
end

--- func.grad_and_value(f[, argnums[, has_aux]]): a function returning gradient, value
function T.grad_and_value(f, ...)
  check.callable(f, "func.grad_and_value", "func")
  local o = check.positional("func.grad_and_value", { "argnums", "has_aux" }, GRAD, ...)
  return function(...)
    local v, g, aux = value_and_grad("func.grad_and_value", f, o, ...)
    if o.has_aux then return g, v, aux end
    return g, v
  end
end

--- func.vjp(f, ...[, {has_aux = false}]) -> output, vjp_fn[, aux]: vjp_fn(cotangent) gives one gradient
--- per argument; with has_aux f returns (output, aux) and aux comes back third, outside the graph
function T.vjp(f, ...)
  check.callable(f, "func.vjp", "func")
  local args = pack(...)
  local has_aux = false
  local last = args[args.n]
  if args.n > 0 and type(last) == "table" and getmetatable(last) == nil and last.has_aux ~= nil and last[1] == nil then
    has_aux = check.options(last, "func.vjp", { has_aux = "boolean" }).has_aux
    args[args.n], args.n = nil, args.n - 1
  end
  local xs, outer = {}, false
  for a = 1, args.n do
    local list = leaves(args[a])
    outer = outer or any_tracked(list)
    local copies = {}
    for i, x in ipairs(list) do copies[i] = tracked(x); xs[#xs + 1] = copies[i] end
    args[a] = rebuild(args[a], copies)
  end
  local grad_on = wick.is_grad_enabled()
  local out, aux = differentiating(function() return f(unpack(args, 1, args.n)) end)
  if has_aux and aux == nil then check.fail("func.vjp", "has_aux = true: the function must return two values (output, aux)") end
  local outs = leaves(out)
  for _, o in ipairs(outs) do outer = keeps_graph(outer, grad_on, o, xs) end
  local function vjp_fn(cotangent)
    local cs = leaves(cotangent)
    if #cs ~= #outs then check.fail("func.vjp", "the cotangent must match the output's structure (%d tensors), got %d", #outs, #cs) end
    for i, o in ipairs(outs) do -- (no broadcasting, as PyTorch's autograd.grad)
      if tostring(cs[i]:size()) ~= tostring(o:size()) then
        check.fail("func.vjp", "Mismatch in shape: grad_output[%d] has a shape of %s and output[%d] has a shape of %s.",
          i, tostring(cs[i]:size()), i, tostring(o:size()))
      end
    end
    return differentiating(function()
      local total = 0
      for i, o in ipairs(outs) do total = total + (o * cs[i]):sum() end
      local g = grads_of(total, xs, nil, outer or any_tracked(cs))
      local results, at = {}, 0
      for a = 1, args.n do
        local n = #leaves(args[a])
        local part = {}
        for i = 1, n do part[i] = g[at + i] end
        at = at + n
        results[a] = rebuild(args[a], part)
      end
      return unpack(results, 1, args.n)
    end)
  end
  if not outer then out = map(out, function(t) return t:detach() end) end
  if has_aux then return out, vjp_fn, outer and aux or map(aux, function(t) return t:detach() end) end
  return out, vjp_fn
end

--- func.jvp(f, primals, tangents[, {has_aux = false, strict}]) -> output, J tangents[, aux]: primals and
--- tangents are lists of tensors (Python's tuples); by the double-vjp trick, so f must be differentiable
--- twice; with has_aux f returns (output, aux) and aux comes back third
function T.jvp(f, primals, tangents, opts)
  check.callable(f, "func.jvp", "func")
  local o = check.options(opts, "func.jvp", { has_aux = "boolean", strict = "boolean" })
  if o.has_aux then
    local aux
    local function main(...)
      local out, a = f(...)
      if a == nil then check.fail("func.jvp", "has_aux = true: the function must return two values (output, aux)") end
      aux = a
      return out
    end
    local out, jv = T.jvp(main, primals, tangents)
    return out, jv, map(aux, function(t) return t:detach() end)
  end
  local ps = is_tensor(primals) and { primals } or primals
  local ts = is_tensor(tangents) and { tangents } or tangents
  check.table(ps, "func.jvp", "primals")
  check.table(ts, "func.jvp", "tangents")
  local pl, tl = leaves(ps), leaves(ts)
  if #pl == 0 then check.fail("func.jvp", "primals must hold tensors (a tensor, or a list of tensors or trees of them)") end
  if #pl ~= #tl then check.fail("func.jvp", "primals hold %d tensor(s) but tangents %d (the same trees)", #pl, #tl) end
  -- (with grad mode on the results keep their graph, as PyTorch's: f's own parameters get gradients
  -- through them, MeanFlow's loss on jvp's output)
  local create = any_tracked(pl) or any_tracked(tl) or wick.is_grad_enabled()
  -- the primals are trees ({{params...}} for jvp(grad(f), (params,), (v,))): f sees them
  -- rebuilt from their tensors, and its result tree comes back the same shape (several
  -- results are a list, Python's `return u, v` tuple)
  local shape
  local function flat(...)
    local r = pack(f(unpack(rebuild(ps, { ... }))))
    shape = r.n > 1 and { unpack(r, 1, r.n) } or r[1]
    return unpack(leaves(shape))
  end
  local out, jv = jvp_of("func.jvp", flat, pl, tl, { create_graph = create })
  if is_tensor(shape) then return out, jv end
  return rebuild(shape, is_tensor(out) and { out } or out), rebuild(shape, is_tensor(jv) and { jv } or jv)
end

--- func.jacrev(f[, argnums = 1[, has_aux]]) and func.jacfwd: the Jacobian of f with respect to
--- argument argnums (a tensor): shape output ++ input
-- jacfwd also takes PyTorch's randomness (its Jacobian runs f once here, so
-- every value means the same)
-- jacrev also takes PyTorch's chunk_size (how many rows at a time: it limits PyTorch's memory, and the
-- rows are computed one at a time here, so the result is the same)
local JACFWD = { argnums = "number|table", has_aux = "boolean", randomness = "string" }
local JACREV = { argnums = "number|table", has_aux = "boolean", chunk_size = "number" }
local function jac(fn)
  local spec, order = JACREV, { "argnums", "has_aux" }
  if fn == "func.jacfwd" then spec, order = JACFWD, { "argnums", "has_aux", "randomness" } end
  return function(f, ...)
    check.callable(f, fn, "func")
    local o = check.positional(fn, order, spec, ...)
    if o.randomness ~= nil then check.one_of(o.randomness, fn, "randomness", { "error", "different", "same" }) end
    if o.chunk_size ~= nil then
      check.int(o.chunk_size, fn, "chunk_size")
      if o.chunk_size <= 0 then check.fail(fn, "jacrev: `chunk_size` should be greater than 0.") end
    end
    return function(...)
      local args = pack(...)
      local at, single = positions(fn, o.argnums, args.n)
      -- each differentiated argument: a tensor or a tree of them
      local xs, groups, outer = {}, {}, false
      for k, a in ipairs(at) do
        local list = leaves(args[a])
        if #list == 0 then check.fail(fn, "argument %d has no tensor to differentiate", a) end
        outer = outer or any_tracked(list)
        local copies = {}
        for i, x in ipairs(list) do copies[i] = tracked(x); xs[#xs + 1] = copies[i] end
        groups[k] = { tree = args[a], n = #list }
        args[a] = rebuild(args[a], copies)
      end
      local grad_on = wick.is_grad_enabled()
      return differentiating(function()
        local r = pack(f(unpack(args, 1, args.n)))
        local tree = r[1]
        -- several results without has_aux: PyTorch's tuple output, one Jacobian each
        if not o.has_aux and r.n > 1 then tree = { unpack(r, 1, r.n) } end
        local outs = leaves(tree)
        if #outs == 0 then
          check.fail(fn, "the function must return a tensor or a tree of tensors, got %s", check.describe(tree))
        end
        for _, out in ipairs(outs) do outer = keeps_graph(outer, grad_on, out, xs) end
        local J = jacobian_of(outs, xs, outer)
        -- per output: the Jacobians shaped as the differentiated arguments
        local per_out = {}
        for j = 1, #J do
          local by_arg, at_x = {}, 0
          for k, g in ipairs(groups) do
            local part = {}
            for i = 1, g.n do part[i] = J[j][at_x + i] end
            at_x = at_x + g.n
            by_arg[k] = rebuild(g.tree, part)
          end
          per_out[j] = single and by_arg[1] or by_arg
        end
        local value = is_tensor(tree) and per_out[1] or rebuild(tree, per_out)
        if o.has_aux then return value, r[2] end
        return value
      end)
    end
  end
end
T.jacrev = jac("func.jacrev")
T.jacfwd = jac("func.jacfwd")

--- func.hessian(f[, argnums = 1]): jacfwd(jacrev(f))
function T.hessian(f, argnums)
  return T.jacfwd(T.jacrev(f, argnums), argnums)
end

local VMAP = { in_dims = "number|table|boolean", out_dims = "number|table|boolean", randomness = "string", chunk_size = "number" }

-- the sample b of x along dim d (1-based; negative from the end)
local function sample_of(x, d, b) return x:select(d, b) end

-- an argument's tree of in_dims (a prefix of its structure, PyTorch's in_dims=(0, {'a': 0, 'b': None})) with
-- each dim spread over the subtree it heads: a tree of the argument's structure, a dim or false at each leaf
local function dims_tree(d, arg, a)
  local dl, dspec = pytree.tree_flatten(d)
  for _, x in ipairs(dl) do
    if x ~= false and type(x) ~= "number" then
      check.fail("func.vmap", "in_dims of argument %d: a tree of dims holds %s (each entry a dim or false)", a,
        check.describe(x))
    end
  end
  local ok, subs = pcall(dspec.flatten_up_to, dspec, arg)
  if not ok then
    check.fail("func.vmap", "in_dims is not compatible with the structure of argument %d: in_dims has structure %s "
      .. "but the argument has structure %s", a, tostring(dspec), tostring(pytree.tree_structure(arg)))
  end
  local spread = {}
  for i = 1, #dl do
    spread[i] = subs[i] == nil and nil or pytree.tree_map(function() return dl[i] end, subs[i])
  end
  return pytree.tree_unflatten(spread, dspec)
end

--- func.vmap(f[, in_dims = 1[, out_dims = 1]]) (or {in_dims =, out_dims =, randomness =, chunk_size =}):
--- f over the samples of its arguments along in_dims (per argument: a dim, or false for one shared
--- by all samples), its results stacked along out_dims
function T.vmap(f, ...)
  check.callable(f, "func.vmap", "func")
  local o = check.positional("func.vmap", { "in_dims", "out_dims", "randomness", "chunk_size" }, VMAP, ...)
  local in_dims = o.in_dims == nil and 1 or o.in_dims
  local out_dims = o.out_dims == nil and 1 or o.out_dims
  local randomness = check.one_of(o.randomness or "error", "func.vmap", "randomness", { "error", "different", "same" })
  return function(...)
    local args = pack(...)
    local dims = {} -- per argument: a dim, nil (not mapped), or a tree of them over the argument's structure
    for a = 1, args.n do
      local d = in_dims
      if type(in_dims) == "table" then d = in_dims[a] end
      if d ~= nil and d ~= false and type(d) ~= "number" and not is_tree(d) then
        check.fail("func.vmap", "in_dims of argument %d must be a dim, false, or a tree of them matching the "
          .. "argument's structure, got %s", a, check.describe(d))
      end
      dims[a] = is_tree(d) and dims_tree(d, args[a], a) or (d ~= false and d or nil)
    end
    -- fn(x, dim) for each tensor of argument a mapped along a dim
    local function each_mapped(a, fn)
      if type(dims[a]) == "table" then
        pytree.tree_map(function(x, d) if is_tensor(x) and d then fn(x, d) end end, args[a], dims[a])
      elseif dims[a] then
        for _, x in ipairs(leaves(args[a])) do fn(x, dims[a]) end
      end
    end
    local B
    for a = 1, args.n do
      each_mapped(a, function(x, dim)
        local d = dim < 0 and x:dim() + dim + 1 or dim
        if d < 1 or d > x:dim() then
          check.fail("func.vmap", "in_dims %d is out of range for argument %d of %d dims%s", dim, a, x:dim(),
            dim == 0 and " (dims count from 1: PyTorch's in_dims=0 is 1)" or "")
        end
        local n = x:size(d)
        if B and n ~= B then
          check.fail("func.vmap", "Expected all tensors to have the same size in the mapped dimension, got both %d and %d for the mapped dimension", B, n)
        end
        B = n
      end)
    end
    if not B then check.fail("func.vmap", "at least one argument must be mapped over (in_dims are all None/false)") end
    -- randomness: 'same' replays one generator state for every sample;
    -- 'error' (PyTorch's default) refuses a draw; 'different' lets each draw
    local results, state = {}, wick.get_rng_state()
    -- (no samples: f runs once on zeros of a sample's shape, for the results' shapes, and each result
    -- is stacked from none, PyTorch's empty outputs)
    local empty = B == 0
    for b = 1, empty and 1 or B do
      local function sample(x, dim)
        if empty then
          local shape = x:size():totable()
          table.remove(shape, dim < 0 and x:dim() + dim + 1 or dim)
          return wick.zeros(shape, { dtype = x.dtype, device = x.device })
        end
        return sample_of(x, dim, b)
      end
      local call = {}
      for a = 1, args.n do
        if type(dims[a]) == "table" then
          call[a] = pytree.tree_map(function(x, d) return is_tensor(x) and d and sample(x, d) or x end, args[a], dims[a])
        else
          call[a] = dims[a] and map(args[a], function(x) return sample(x, dims[a]) end) or args[a]
        end
      end
      if randomness == "same" then wick.set_rng_state(state) end
      results[b] = pack(f(unpack(call, 1, args.n)))
      if randomness == "error" and not wick.equal(state, wick.get_rng_state()) then
        check.fail("func.vmap", "the function drew random numbers, which vmap refuses with randomness = 'error' "
          .. "(its default, as PyTorch's); pass {randomness = 'different'} or {randomness = 'same'}")
      end
    end
    local first = results[1]
    for r = 1, first.n do
      local v = first[r]
      if not is_tensor(v) and (not is_tree(v) or #leaves(v) == 0) then
        check.fail("func.vmap", "the function returned %s as result %d: vmap stacks tensors (return a tensor, not a number from :item())",
          check.describe(v), r)
      end
    end
    local outs = {}
    for r = 1, first.n do
      local od = out_dims
      if type(out_dims) == "table" then od = out_dims[r] end
      if od == false then -- (PyTorch's out_dims=None: a result that is the same for every sample, unbatched)
        for b = 2, B do
          local mine, theirs = leaves(results[b][r]), leaves(first[r])
          for i = 1, #theirs do
            if not wick.equal(mine[i], theirs[i]) then
              check.fail("func.vmap", "out_dims is None (false) for result %d, but it differs between samples: it depends "
                .. "on a mapped input, so it must be stacked (give it a dim)", r)
            end
          end
        end
        outs[r] = first[r]
        goto next_result
      end
      if type(od) ~= "number" then check.fail("func.vmap", "out_dims of result %d must be a dim or false, got %s", r, check.describe(od)) end
      do
      local columns = {}
      for b = 1, empty and 1 or B do columns[b] = leaves(results[b][r]) end
      local stacked = {}
      for i = 1, #columns[1] do
        local items = {}
        for b = 1, B do items[b] = columns[b][i] end
        if empty then
          local one = columns[1][i]:unsqueeze(od)
          stacked[i] = one:narrow(od < 0 and one:dim() + od + 1 or od, 1, 0)
        else stacked[i] = wick.stack(items, od) end
      end
      outs[r] = is_tensor(first[r]) and stacked[1] or rebuild(first[r], stacked)
      end
      ::next_result::
    end
    return unpack(outs, 1, first.n)
  end
end

-- (a name copied from PyTorch counts children and list entries from 0)
local function zero_hint(name)
  if not (("." .. name .. "."):find("%.0%.")) then return "" end
  return " (children and list entries count from 1 here: PyTorch's 'x.0' is 'x.1'; nn.utils.from_pytorch_names "
    .. "renames a dict of PyTorch's names)"
end
-- the module owning a dotted name, and the last part
local function owner_of(module, name)
  local m, last = module, name
  for part in name:gmatch("([^.]+)%.") do
    local child = m[tonumber(part) or part]
    if not check.is_module(child) then
      check.fail("functional_call", "the module has no submodule for '%s'%s", name, zero_hint(name))
    end
    m = child
  end
  last = name:match("([^.]+)$")
  return m, tonumber(last) or last
end
-- the module and key holding the tensor of that name, or nil
local function tensor_at(module, name)
  local m = module
  for part in name:gmatch("([^.]+)%.") do
    m = m[tonumber(part) or part]
    if not check.is_module(m) then return nil end
  end
  local last = name:match("([^.]+)$")
  if last == nil then return nil end
  local key = tonumber(last) or last
  if not is_tensor(rawget(m, key)) then return nil end
  return m, key
end

--- func.functional_call(module, params_and_buffers, args[, kwargs]): module(args..., kwargs) with its
--- parameters and buffers of those names replaced by the given tensors (a table name -> tensor, or
--- a list of such tables), the module left as it was after
--- ({strict = true}: every parameter and buffer must be given; tie_weights, true by default as PyTorch's: a tensor
--- the module holds under several names, tied weights, is replaced under all of them)
local CALL_OPTIONS = { strict = "boolean", tie_weights = "boolean" }
function T.functional_call(module, tensors, args, kwargs, opts)
  check.module(module, "functional_call", "module")
  check.table(tensors, "functional_call", "parameter_and_buffer_dicts")
  if opts == nil and type(kwargs) == "table" and getmetatable(kwargs) == nil and next(kwargs) ~= nil then
    local only_options = true
    for k in pairs(kwargs) do only_options = only_options and CALL_OPTIONS[k] ~= nil end
    if only_options then kwargs, opts = nil, kwargs end
  end
  opts = check.options(opts, "functional_call", CALL_OPTIONS)
  if kwargs ~= nil and (type(kwargs) ~= "table" or getmetatable(kwargs) ~= nil) then
    check.expected("functional_call", "kwargs", "a table of keyword arguments", kwargs)
  end
  if kwargs ~= nil and next(kwargs) == nil then kwargs = nil end
  local dicts = tensors[1] ~= nil and tensors or { tensors }
  -- the replacements by name; with tie_weights (PyTorch's default) a tensor the module holds under
  -- several names (a tied embedding and output weight) is replaced under all of them
  local given = {}
  for _, d in ipairs(dicts) do
    for name, t in pairs(d) do
      if type(name) ~= "string" or not is_tensor(t) then
        check.fail("functional_call", "expected name -> tensor entries, got %s -> %s", tostring(name), check.describe(t))
      end
      given[name] = t
    end
  end
  -- a name the module has no tensor for: PyTorch's unexpected key, ignored unless strict (a 0-based
  -- name copied from PyTorch is refused, with its hint)
  local unexpected = {}
  for name in pairs(given) do
    if not tensor_at(module, name) then
      if zero_hint(name) ~= "" then
        owner_of(module, name)
        check.fail("functional_call", "the module has no tensor named '%s'%s", name, zero_hint(name))
      end
      unexpected[#unexpected + 1] = name
    end
  end
  if opts.strict then
    local missing, seen = {}, {}
    for _, named in ipairs({ module:named_parameters("", true, false), module:named_buffers("", true, false) }) do
      for name in named do
        if not seen[name] and given[name] == nil then missing[#missing + 1] = name end
        seen[name] = true
      end
    end
    -- (tied names count as given under tie_weights)
    if opts.tie_weights ~= false and #missing > 0 then
      local names_of = {}
      for _, named in ipairs({ module:named_parameters("", true, false), module:named_buffers("", true, false) }) do
        for name, t in named do names_of[t] = names_of[t] or {}; table.insert(names_of[t], name) end
      end
      local still = {}
      for _, name in ipairs(missing) do
        local m, key = tensor_at(module, name)
        local covered = false
        for _, other in ipairs(m and names_of[rawget(m, key)] or {}) do covered = covered or given[other] ~= nil end
        if not covered then still[#still + 1] = name end
      end
      missing = still
    end
    table.sort(missing)
    table.sort(unexpected)
    local function quoted(list)
      local q = {}
      for i, n in ipairs(list) do q[i] = "'" .. n .. "'" end
      return table.concat(q, ", ")
    end
    local msgs = {}
    if #unexpected > 0 then msgs[#msgs + 1] = "Unexpected key(s): " .. quoted(unexpected) .. "." end
    if #missing > 0 then msgs[#msgs + 1] = "Missing key(s): " .. quoted(missing) .. "." end
    if #msgs > 0 then
      check.fail("functional_call", "Error(s) in reparametrizing for %s:\n\t%s", getmetatable(module).__name,
        table.concat(msgs, "\n\t"))
    end
  end
  for _, name in ipairs(unexpected) do given[name] = nil end
  if opts.tie_weights ~= false then
    local names_of = {} -- tensor -> its names
    for _, named in ipairs({ module:named_parameters("", true, false), module:named_buffers("", true, false) }) do
      for name, t in named do
        names_of[t] = names_of[t] or {}
        table.insert(names_of[t], name)
      end
    end
    local tied = {}
    for name, t in pairs(given) do
      local m, key = owner_of(module, name)
      local names = is_tensor(rawget(m, key)) and names_of[rawget(m, key)] or nil
      for _, other in ipairs(names or {}) do
        if other ~= name then
          if given[other] ~= nil and given[other] ~= t then
            check.fail("functional_call", "functional_call got multiple values for keys ['%s', '%s'], which are tied. "
              .. "Consider using tie_weights=False", name < other and name or other, name < other and other or name)
          end
          tied[other] = t
        end
      end
    end
    for name, t in pairs(tied) do given[name] = t end
  end
  local saved = {}
  local ok, r = pcall(function()
    for name, t in pairs(given) do
      local m, key = owner_of(module, name)
      if not is_tensor(rawget(m, key)) then
        check.fail("functional_call", "the module has no tensor named '%s'%s", name, zero_hint(name))
      end
      saved[#saved + 1] = { m, key, rawget(m, key) }
      rawset(m, key, t)
    end
    -- kwargs: the forward's trailing keywords table (Python's module(*args, **kwargs))
    if is_tensor(args) or type(args) ~= "table" then args = { args } end
    if kwargs == nil then return pack(module(unpack(args))) end
    local n = #args
    local call = { unpack(args, 1, n) }
    call[n + 1] = kwargs
    return pack(module(unpack(call, 1, n + 1)))
  end)
  for i = #saved, 1, -1 do rawset(saved[i][1], saved[i][2], saved[i][3]) end
  if not ok then error(r, 0) end
  return unpack(r, 1, r.n)
end

--- func.stack_module_state(models) -> params, buffers: each name's tensors stacked along a new
--- first dimension (for vmap over an ensemble), the stacked parameters leaves that require grad
function T.stack_module_state(models)
  check.table(models, "stack_module_state", "models")
  if #models == 0 then check.fail("stack_module_state", "Expected at least one model, got 0.") end
  local function stacked(named)
    local order, by = {}, {}
    for i, m in ipairs(models) do
      check.module(m, "stack_module_state", ("models[%d]"):format(i))
      for name, t in named(m) do
        if not by[name] then by[name] = {}; order[#order + 1] = name end
        by[name][i] = t:detach()
      end
    end
    local out = {}
    for _, name in ipairs(order) do out[name] = wick.stack(by[name]) end
    return out
  end
  local params = stacked(function(m) return m:named_parameters() end)
  for _, t in pairs(params) do t:requires_grad_(true) end
  return params, stacked(function(m) return m:named_buffers() end)
end

--- func.replace_all_batch_norm_modules_(root): every batch norm in root stops
--- tracking running statistics (running_mean, running_var and
--- num_batches_tracked go, track_running_stats becomes false), as PyTorch's,
--- so that a vmap over it normalises each sample by its batch's statistics;
--- returns root
function T.replace_all_batch_norm_modules_(root)
  check.module(root, "func.replace_all_batch_norm_modules_", "root")
  local Module = require("wick.nn.module")
  for _, m in ipairs(root:modules()) do
    local name = getmetatable(m).__name
    if name == "BatchNorm1d" or name == "BatchNorm2d" or name == "BatchNorm3d" or name == "SyncBatchNorm" then
      for _, buffer in ipairs({ "running_mean", "running_var", "num_batches_tracked" }) do
        if rawget(m, buffer) ~= nil or m[buffer] ~= nil then Module._forget(m, buffer) end
      end
      m.track_running_stats = false
    end
  end
  return root
end

T._functional = F
return check.strict(T, "wick.func")
