-- wick.library: PyTorch's torch.library custom operators, as Python programs define them
-- (transformers' grouped-GEMM fallback of its Mixture-of-Experts layers):
--
--   local op = wick.library.custom_op("transformers::grouped_mm_fallback", function(x, w, offs) ... end,
--     {mutates_args = {}})
--   op:register_autograd(backward, {setup_context = setup_context})
--   wick.ops.transformers.grouped_mm_fallback(x, w, offs)   -- or op(x, w, offs)
--
-- An op is its function run without recording; with register_autograd, an autograd.Function
-- (PyTorch 2's form: setup_context(ctx, inputs, output), then backward(ctx, grads...)). Without
-- it, a backward through the op is PyTorch's error. register_fake keeps the shape function, which
-- wick (no tracing compiler) never needs to call.
local wick = require("wick")
local check = require("wick.argcheck")

local M = {}
local CustomOp = { __name = "CustomOpDef" }
CustomOp.__index = CustomOp

-- "ns::name" as its two parts
local function qualified(name)
  check.string(name, "library.custom_op", "name")
  local ns, op = name:match("^([%a_][%w_]*)::([%a_][%w_]*)$")
  if not ns then check.fail("library.custom_op", "expected a name of the form 'namespace::op', got '%s'", name) end
  return ns, op
end

-- the Function of an op without an autograd formula: its backward is PyTorch's error
local function unregistered(op)
  local F = wick.autograd.Function:extend(op._op)
  F.forward = function(...) return op._fn(...) end
  F.setup_context = function() end
  F.backward = function()
    wick.error(("Autograd has not been implemented for operator %s. Please register an autograd formula "
      .. "via op:register_autograd(backward, {setup_context = ...})"):format(op._name))
  end
  return F
end

--- wick.library.custom_op(name, fn[, {mutates_args =, device_types =, schema =}]), or
--- custom_op(name[, opts]) returning a decorator (Python's @torch.library.custom_op(name,
--- mutates_args=())): the op, callable, also as wick.ops.<namespace>.<name>
local OPTIONS = { mutates_args = "table|string", device_types = "table|string", schema = "string" }
function M.custom_op(name, fn, opts)
  local ns, short = qualified(name)
  if type(fn) == "table" or fn == nil then
    check.options(fn, "library.custom_op", OPTIONS)
    return function(f) return M.custom_op(name, f, fn) end
  end
  check.callable(fn, "library.custom_op", "fn")
  check.options(opts, "library.custom_op", OPTIONS)
  local op = setmetatable({ _name = name, _op = short, _fn = fn }, CustomOp)
  op._function = unregistered(op)
  local space = rawget(wick.ops, ns)
  if space == nil then
    space = {}
    rawset(wick.ops, ns, space)
  elseif type(space) ~= "table" or getmetatable(space) ~= nil then
    check.fail("library.custom_op", "the namespace '%s' is one of wick.ops's own names; choose another", ns)
  end
  space[short] = op
  return op
end

CustomOp.__call = function(op, ...) return op._function.apply(...) end
CustomOp.__tostring = function(op) return "<CustomOpDef(" .. op._name .. ")>" end

--- op:register_autograd(backward[, {setup_context = fn}]): backward(ctx, grads...) gives one
--- gradient per input (nil for a non-tensor), setup_context(ctx, inputs, output) saves what it needs
function CustomOp.register_autograd(op, backward, opts)
  check.callable(backward, "register_autograd", "backward")
  local o = check.options(opts, "register_autograd", { setup_context = "function" })
  local F = wick.autograd.Function:extend(op._op)
  F.forward = function(...) return op._fn(...) end
  F.setup_context = o.setup_context or function() end
  F.backward = backward
  op._function = F
end

--- op:register_fake(fn) (also as a decorator): the op's shape function, kept as op._fake
function CustomOp.register_fake(op, fn)
  check.callable(fn, "register_fake", "fn")
  op._fake = fn
  return fn
end
CustomOp.register_kernel = function(op, _, fn) -- (a per-device kernel: wick runs the one function)
  check.callable(fn, "register_kernel", "fn")
  op._fn = fn
  return fn
end

return check.strict(M, "wick.library")
