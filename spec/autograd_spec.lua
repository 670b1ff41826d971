-- Autograd: every differentiable op of the core checked against central finite
-- differences in float64 (gradcheck), then the engine's behaviour: accumulation,
-- retain_graph, errors, grad mode, detach, in-place rules, .grad, grad_fn,
-- printing, memory and deep graphs.
local wick = require("wick")
local support = require("spec.support")
local assert_close, assert_error_has, shape_of = support.assert_close, support.assert_error_has, support.shape_of
local I = support.I

local F64 = { dtype = "float64" }

-- gradcheck (spec/support.lua): float64 central differences against backward
local gradcheck, values_of, from_values = support.gradcheck, support.values_of, support.from_values

-- ---- inputs ----

local seed = 1
-- sizes as numbers or one table, like wick.randn's
local function sizes_of(...)
  if type((...)) == "table" then return (...) end
  return { ... }
end
local function randn(...)
  seed = seed + 1
  wick.manual_seed(seed)
  return wick.randn(sizes_of(...), F64)
end
-- values at least `margin` away from 0 (for abs, relu, division)
local function away(t, margin)
  margin = margin or 0.2
  return t + t:ge(0):to("float64") * (2 * margin) - margin
end
-- positive values in [0.5, 1.5] (log, sqrt, pow bases)
local function pos(...)
  seed = seed + 1
  wick.manual_seed(seed)
  return wick.rand(sizes_of(...), F64) + 0.5
end
-- distinct values spread by at least 0.1 in a random order (max, min without ties)
local function distinct(...)
  local t = randn(...)
  local n = t:numel()
  local order = values_of(t)
  local idx = {}
  for i = 1, n do idx[i] = i end
  table.sort(idx, function(a, b) return order[a] < order[b] end)
  local v = {}
  for rank, i in ipairs(idx) do v[i] = (rank - n / 2) * 0.1 end
  return from_values(v, shape_of(t))
end
local function T(values) return wick.tensor(values, F64) end

describe("gradcheck", function()
  it("catches a wrong analytic gradient", function()
    -- x * detach(x) has gradient x, but the function's true derivative is 2x
    local ok, err = pcall(gradcheck, function(x) return x * x:detach() end, { randn(3) })
    assert.is_false(ok)
    assert.is_truthy(tostring(err):find("analytic", 1, true))
    -- and the honest version passes
    assert.is_true(gradcheck(function(x) return x * x end, { randn(3) }))
  end)

  it("catches a missing gradient", function()
    local ok = pcall(gradcheck, function(x, y) return x * 2 + y:detach() end, { randn(2), randn(2) })
    assert.is_false(ok)
  end)
end)

describe("autograd gradients: unary ops", function()
  it("neg", function() gradcheck(function(x) return x:neg() end, { randn(3, 4) }) end)
  it("unary minus", function() gradcheck(function(x) return -x end, { randn(3, 4) }) end)
  it("abs (away from 0)", function() gradcheck(function(x) return x:abs() end, { away(randn(3, 4)) }) end)
  it("exp", function() gradcheck(function(x) return x:exp() end, { randn(3, 4) }) end)
  it("log", function() gradcheck(function(x) return x:log() end, { pos(3, 4) }) end)
  it("sqrt", function() gradcheck(function(x) return x:sqrt() end, { pos(3, 4) }) end)
  it("tanh", function() gradcheck(function(x) return x:tanh() end, { randn(3, 4) }) end)
  it("sigmoid", function() gradcheck(function(x) return x:sigmoid() end, { randn(3, 4) }) end)
  it("relu (away from 0)", function() gradcheck(function(x) return x:relu() end, { away(randn(3, 4)) }) end)
  it("module functions (wick.exp, wick.tanh)", function()
    gradcheck(function(x) return wick.tanh(wick.exp(x)) end, { randn(5) })
  end)
  it("erf", function() gradcheck(function(x) return x:erf() end, { randn(3, 4) }) end)
  for _, name in ipairs({ "sin", "cos", "atan", "sinh", "cosh", "expm1" }) do
    it(name, function() gradcheck(function(x) return x[name](x) end, { randn(3, 4) }) end)
  end
  for _, name in ipairs({ "log2", "log10", "log1p", "rsqrt", "reciprocal" }) do
    it(name, function() gradcheck(function(x) return x[name](x) end, { pos(3, 4) }) end)
  end
  it("tan (inside +-pi/2)", function() gradcheck(function(x) return x:tan() end, { pos(3, 4) - 1 }) end)
  it("asin and acos (inside +-1)", function()
    gradcheck(function(x) return x:asin() + x:acos() * 2 end, { (pos(3, 4) - 1) * 1.5 })
  end)
  it("frac passes the gradient; floor, ceil, round, trunc and sign give zeros", function()
    gradcheck(function(x) return x:frac() end, { away(randn(3, 4)) + 0.05 })
    local x = T({ -1.3, 0.4, 2.5 }):requires_grad_()
    ;(x:floor() + x:ceil() + x:round() + x:trunc() + x:sign()):sum():backward()
    assert_close(x.grad, { 0, 0, 0 }, 0)
  end)
  it("gelu", function() gradcheck(function(x) return x:gelu() end, { randn(3, 4) }) end)
  it("at the kinks, like PyTorch: relu'(0) = 0, abs'(0) = 0", function()
    local x = T({ -1, 0, 2 }):requires_grad_()
    x:relu():sum():backward()
    assert_close(x.grad, { 0, 0, 1 }, 0)
    x.grad = nil
    x:abs():sum():backward()
    assert_close(x.grad, { -1, 0, 1 }, 0)
  end)
  it("relu zeroes the gradient where x <= 0 and passes it elsewhere, NaN gradients too (PyTorch's threshold_backward)",
    function()
      for _, dtype in ipairs({ "float32", "float64" }) do
        -- 37 elements: whole vectors and a tail; the upstream gradient carries NaN and inf
        local n = 37
        local xs, gs = {}, {}
        for i = 1, n do
          xs[i] = (i % 3 == 0) and -i or (i % 5 == 0 and 0 or i / 7)
          gs[i] = (i % 4 == 0) and 0 / 0 or (i % 6 == 0 and math.huge or i)
        end
        xs[n] = 0 / 0 -- relu'(NaN): 1, like PyTorch (NaN <= 0 is false)
        local x = wick.tensor(xs, { dtype = dtype }):requires_grad_()
        x:relu():backward(wick.tensor(gs, { dtype = dtype }))
        local got = x.grad:totable()
        for i = 1, n do
          local want = (xs[i] == xs[i] and xs[i] <= 0) and 0 or gs[i]
          local same = (want ~= want and got[i] ~= got[i]) or want == got[i]
          assert(same, ("%s element %d: x %s, g %s: got %s, want %s"):format(dtype, i, xs[i], gs[i], got[i], want))
        end
      end
    end)
  it("0-dim input", function() gradcheck(function(x) return x:sigmoid() end, { T(0.3) }) end)
  it("non-contiguous input (a transposed view)", function()
    gradcheck(function(x) return x:t():exp() end, { randn(3, 2) })
  end)
end)

describe("autograd gradients: binary ops", function()
  it("add", function() gradcheck(function(a, b) return a:add(b) end, { randn(2, 3), randn(2, 3) }) end)
  it("sub", function() gradcheck(function(a, b) return a:sub(b) end, { randn(2, 3), randn(2, 3) }) end)
  it("mul", function() gradcheck(function(a, b) return a:mul(b) end, { randn(2, 3), randn(2, 3) }) end)
  it("div", function() gradcheck(function(a, b) return a:div(b) end, { randn(2, 3), away(randn(2, 3), 0.5) }) end)
  it("pow: tensor ^ tensor with a positive base", function()
    gradcheck(function(a, b) return a:pow(b) end, { pos(2, 3), randn(2, 3) })
  end)
  it("pow: tensor ^ number", function()
    gradcheck(function(a) return a:pow(3) end, { randn(2, 3) })
    gradcheck(function(a) return a:pow(2.5) end, { pos(2, 3) })
    gradcheck(function(a) return a:pow(-1.5) end, { pos(2, 3) })
  end)
  it("pow: number ^ tensor", function()
    gradcheck(function(b) return 2 ^ b end, { randn(2, 3) })
    gradcheck(function(b) return 0.7 ^ b end, { randn(4) })
  end)
  it("pow at a zero base, like PyTorch: x^0 has gradient 0, d(0^b)/db = 0 for b >= 0", function()
    local x = T({ 0, 1, 2 }):requires_grad_()
    ;(x ^ 0):sum():backward()
    assert_close(x.grad, { 0, 0, 0 }, 0)
    local a = T({ 0, 1, 2, 0 }):requires_grad_()
    local b = T({ 2, 0, 1, 1 }):requires_grad_()
    a:pow(b):sum():backward()
    assert_close(a.grad, { 0, 0, 1, 1 }, 0)
    assert_close(b.grad, { 0, 0, 2 * math.log(2), 0 }, 1e-15)
    -- x^2 at 0 has gradient 0, x^1 gradient 1
    local z = T({ 0, 0 }):requires_grad_()
    ;(z ^ 2 + z ^ 1):sum():backward()
    assert_close(z.grad, { 1, 1 }, 0)
  end)
  it("fmod and remainder (away from the jumps)", function()
    gradcheck(function(a, b) return a:fmod(b) end, { T({ 2.3, -2.3, 5.1, -0.7 }), T({ 1.1, 1.1, -2.2, 0.9 }) })
    gradcheck(function(a, b) return a:remainder(b) end, { T({ 2.3, -2.3, 5.1, -0.7 }), T({ 1.1, 1.1, -2.2, 0.9 }) })
  end)
  it("atan2", function() gradcheck(function(a, b) return a:atan2(b) end, { randn(3, 4), away(randn(3, 4)) }) end)
  it("maximum and minimum (no ties)", function()
    local a = randn(2, 3)
    local b = a + T({ { 0.5, -0.5, 0.3 }, { -0.3, 0.4, -0.6 } })
    gradcheck(function(x, y) return x:maximum(y) end, { a, b })
    gradcheck(function(x, y) return x:minimum(y) end, { a, b })
    gradcheck(function(x, y) return x:max(y) end, { a, b })
    gradcheck(function(x, y) return wick.minimum(x, y) end, { a, b })
  end)
  it("maximum with ties splits the gradient evenly, like PyTorch", function()
    local a = T({ 1, 2, 3 }):requires_grad_()
    local b = T({ 1, 5, 0 }):requires_grad_()
    a:maximum(b):sum():backward()
    assert_close(a.grad, { 0.5, 0, 1 }, 0)
    assert_close(b.grad, { 0.5, 1, 0 }, 0)
  end)
  it("clamp (away from the bounds)", function()
    local x = T({ { -2, -0.7, -0.3, 0.2 }, { 0.45, 0.8, 1.5, -1.1 } })
    gradcheck(function(t) return t:clamp(-0.5, 0.5) end, { x })
    gradcheck(function(t) return t:clamp(0) end, { x })
    gradcheck(function(t) return t:clamp(nil, 0.5) end, { x })
    gradcheck(function(t) return t:clamp({ min = -1, max = 1 }) end, { x })
  end)
  it("clamp passes the gradient strictly inside the bounds, as PyTorch 2 (none on them)", function()
    local x = T({ -2, 0, 2, -1, 1 }):requires_grad_()
    x:clamp(-1, 1):sum():backward()
    assert_close(x.grad, { 0, 1, 0, 0, 0 }, 0)
    local y = T({ -1, 0, 1, 1 / 0 }):requires_grad_()
    y:clamp_min(0):sum():backward() -- one bound only: +inf passes it
    assert_close(y.grad, { 0, 0, 1, 1 }, 0)
  end)
  it("activations' gradients at their kinks are PyTorch 2.15's (ELU, leaky ReLU, hard* at the bounds)", function()
    local F = wick.nn.functional
    local function grad(f)
      local x = T({ -3, -1, 0, 1, 3, 6 }):requires_grad_()
      f(x):sum():backward()
      return x.grad
    end
    local e1, e3 = math.exp(-1), math.exp(-3)
    assert_close(grad(F.elu), { e3, e1, 1, 1, 1, 1 }, 1e-15)
    assert_close(grad(F.leaky_relu), { 0.01, 0.01, 0.01, 1, 1, 1 }, 1e-15)
    assert_close(grad(F.hardtanh), { 0, 0, 1, 0, 0, 0 }, 0)
    assert_close(grad(F.relu6), { 0, 0, 0, 1, 1, 0 }, 0)
    assert_close(grad(F.hardsigmoid), { 0, 1 / 6, 1 / 6, 1 / 6, 0, 0 }, 1e-15)
    assert_close(grad(F.hardswish), { 0, 1 / 6, 0.5, 5 / 6, 1, 1 }, 1e-15)
    assert.is_false(F.elu(T({ 100 })):isinf():any()) -- the unused branch's exp never overflows
  end)
  it("binary cross entropies have PyTorch's gradients at saturated inputs and at a logit of 0", function()
    local F = wick.nn.functional
    local p = T({ 0, 1, 0, 1, 0.3 }):requires_grad_()
    F.binary_cross_entropy(p, T({ 1, 0, 0, 1, 1 }), { reduction = "sum" }):backward()
    assert_close(p.grad, { -1e12, 1e12, 0, 0, -1 / 0.3 }, 1e-3) -- (p - t) / max((1 - p) p, 1e-12): no NaN
    local z = T({ -200, 200, 20 }):requires_grad_()
    F.binary_cross_entropy(z:sigmoid(), T({ 1, 0, 0 }), { reduction = "sum" }):backward()
    assert_close(z.grad, { 0, 0, 1 / (1 + math.exp(-20)) }, 1e-12) -- saturated: 0, not NaN
    local x = T({ 0, 0, 1 }):requires_grad_()
    F.binary_cross_entropy_with_logits(x, T({ 1, 0, 1 }), { reduction = "sum" }):backward()
    assert_close(x.grad, { -0.5, 0.5, 1 / (1 + math.exp(-1)) - 1 }, 1e-15) -- sigmoid(x) - t
    local w = T({ 0, 0 }):requires_grad_()
    F.binary_cross_entropy_with_logits(w, T({ 1, 0 }), { pos_weight = T({ 2, 2 }), reduction = "sum" }):backward()
    assert_close(w.grad, { -1, 0.5 }, 1e-15) -- ((pw - 1) t + 1) sigmoid(x) - pw t (PyTorch: mean gives -0.5, 0.25)
    gradcheck(function(a) return F.binary_cross_entropy_with_logits(a, T({ 0.3, 1, 0 }), { pos_weight = T({ 2, 1, 3 }) }) end,
      { T({ 0.5, -1, 2 }) })
    gradcheck(function(a, t) return F.binary_cross_entropy(a:sigmoid(), t) end, { T({ 0.5, -1, 2 }), T({ 0.2, 0.9, 0.5 }) })
  end)
  it("where", function()
    local c = wick.tensor({ { true, false, true }, { false, false, true } })
    gradcheck(function(a, b) return wick.where(c, a, b) end, { randn(2, 3), randn(2, 3) })
    gradcheck(function(a, b) return a:where(c, b) end, { randn(2, 3), randn(2, 3) })
    -- broadcast operands: a row, a 0-dim tensor
    gradcheck(function(a, b) return wick.where(c, a, b) end, { randn(3), T(0.5) })
    -- a number on one side
    gradcheck(function(a) return wick.where(c, a, 0) end, { randn(2, 3) })
    gradcheck(function(b) return wick.where(c, 1.5, b) end, { randn(2, 1) })
  end)
  it("add and sub with alpha", function()
    gradcheck(function(a, b) return a:add(b, 2.5) end, { randn(2, 3), randn(2, 3) })
    gradcheck(function(a, b) return a:sub(b, 0.5) end, { randn(2, 3), randn(2, 3) })
    gradcheck(function(a, b) return a:add(b, { alpha = -3 }) end, { randn(2, 3), randn(3) })
    gradcheck(function(a, b) return wick.add(a, b, 4) end, { randn(2, 3), randn(2, 3) })
    gradcheck(function(a) return a:add(2, 3) end, { randn(2, 3) })
  end)
  it("one operand without requires_grad", function()
    gradcheck(function(a, b) return a * b + b / a end, { away(randn(2, 3), 0.5), randn(2, 3) },
      { constant = { [2] = true } })
    gradcheck(function(a, b) return a * b + b / a end, { away(randn(2, 3), 0.5), randn(2, 3) },
      { constant = { [1] = true } })
  end)
  it("the same tensor on both sides", function()
    gradcheck(function(a) return a * a end, { randn(4) })
    gradcheck(function(a) return a / a:exp() + a - a * 3 end, { randn(4) })
  end)
end)

describe("autograd gradients: Lua operators", function()
  it("tensor op tensor", function()
    local a, b = randn(2, 3), away(randn(2, 3), 0.5)
    gradcheck(function(x, y) return x + y end, { a, b })
    gradcheck(function(x, y) return x - y end, { a, b })
    gradcheck(function(x, y) return x * y end, { a, b })
    gradcheck(function(x, y) return x / y end, { a, b })
    gradcheck(function(x, y) return x:abs() ^ y end, { away(a), b })
  end)
  it("tensor op number and number op tensor", function()
    local a = away(randn(2, 3), 0.5)
    gradcheck(function(x) return x + 2 end, { a })
    gradcheck(function(x) return 2 + x end, { a })
    gradcheck(function(x) return x - 3 end, { a })
    gradcheck(function(x) return 3 - x end, { a })
    gradcheck(function(x) return x * 1.5 end, { a })
    gradcheck(function(x) return -2 * x end, { a })
    gradcheck(function(x) return x / 4 end, { a })
    gradcheck(function(x) return 1 / x end, { a })
    gradcheck(function(x) return x ^ 2 end, { a })
    gradcheck(function(x) return 3 ^ x end, { a })
  end)
  it("large tensors (past the FFI fast paths' size limit) and small ones agree", function()
    gradcheck(function(x, y) return (x * y - y) / (x:abs() + 1) end, { randn(3), randn(3) })
    local x = wick.randn(100, 50, F64):requires_grad_()
    local y = wick.randn(100, 50, F64)
    ;((x * y - y) / 2):sum():backward()
    assert_close(x.grad, (y / 2):totable(), 1e-12)
  end)
end)

describe("autograd gradients: broadcasting", function()
  it("[2, 3] with [3]: the gradient is summed to [3]", function()
    gradcheck(function(a, b) return a + b end, { randn(2, 3), randn(3) })
    gradcheck(function(a, b) return a * b end, { randn(2, 3), randn(3) })
    gradcheck(function(a, b) return b / a end, { away(randn(2, 3), 0.5), randn(3) })
    gradcheck(function(a, b) return a - b end, { randn(3), randn(2, 3) })
  end)
  it("[2, 1] with [1, 3]", function()
    gradcheck(function(a, b) return a * b end, { randn(2, 1), randn(1, 3) })
    gradcheck(function(a, b) return a - b end, { randn(2, 1), randn(1, 3) })
    gradcheck(function(a, b) return a:pow(b) end, { pos(2, 1), randn(1, 3) })
  end)
  it("with a 0-dim tensor", function()
    gradcheck(function(a, b) return a * b end, { randn(2, 3), T(1.7) })
    gradcheck(function(a, b) return a / b end, { T(-0.8), away(randn(2, 3), 0.5) })
    gradcheck(function(a, b) return a + b end, { T(0.4), T(-1.2) })
  end)
  it("leading and middle dims: [3, 1, 2] with [4, 1]", function()
    gradcheck(function(a, b) return a * b end, { randn(3, 1, 2), randn(4, 1) })
  end)
  it("maximum with a broadcast operand", function()
    local a = distinct(2, 3)
    gradcheck(function(x, y) return x:maximum(y) end, { a, T({ 0.05, -0.05, 0.15 }) })
  end)
  it("the reduced gradient has the input's shape", function()
    local a = randn(2, 3):requires_grad_()
    local b = randn(3):requires_grad_()
    local c = T(2):requires_grad_()
    ;((a * b) * c):sum():backward()
    assert.are.same({ 3 }, shape_of(b.grad))
    assert.are.same({}, shape_of(c.grad))
    assert.are.same({ 2, 3 }, shape_of(a.grad))
  end)
end)

describe("autograd gradients: reductions", function()
  for _, name in ipairs({ "sum", "mean" }) do
    it(name .. " over everything and along dims, keepdim on and off", function()
      local x = randn(3, 4)
      gradcheck(function(t) return t[name](t) end, { x })
      gradcheck(function(t) return t[name](t, 1) end, { x })
      gradcheck(function(t) return t[name](t, 2) end, { x })
      gradcheck(function(t) return t[name](t, -1) end, { x })
      gradcheck(function(t) return t[name](t, 1, true) end, { x })
      gradcheck(function(t) return t[name](t, 2, true) end, { x })
      gradcheck(function(t) return t[name](t, { keepdim = true }) end, { x })
      gradcheck(function(t) return t[name](t, 2) end, { randn(2, 3, 2) })
      gradcheck(function(t) return t[name](t) end, { T(1.5) })
    end)
  end
  it("prod over everything and along dims", function()
    local x = away(randn(2, 3), 0.3)
    gradcheck(function(t) return t:prod() end, { x })
    gradcheck(function(t) return t:prod(1) end, { x })
    gradcheck(function(t) return t:prod(2, true) end, { x })
    gradcheck(function(t) return t:prod(-1) end, { x })
  end)
  it("prod with a zero element", function()
    local x = T({ { 2, 0, 3 }, { 0.5, 1.5, -2 } })
    gradcheck(function(t) return t:prod(2) end, { x })
    gradcheck(function(t) return t:prod(1, true) end, { x })
    gradcheck(function(t) return t:prod() end, { T({ 2, 0, 3, -1 }) })
    gradcheck(function(t) return t:prod() end, { T({ 2, 0, 3, 0 }) })
  end)
  for _, name in ipairs({ "var", "std" }) do
    it(name .. " over everything and along dims, keepdim and correction", function()
      local x = randn(3, 4)
      gradcheck(function(t) return t[name](t) end, { x })
      gradcheck(function(t) return t[name](t, 1) end, { x })
      gradcheck(function(t) return t[name](t, 2, true) end, { x })
      gradcheck(function(t) return t[name](t, -1) end, { x })
      gradcheck(function(t) return t[name](t, { correction = 0 }) end, { x })
      gradcheck(function(t) return t[name](t, 2, { unbiased = false }) end, { x })
      gradcheck(function(t) return t[name](t, { dim = 1, keepdim = true, correction = 2 }) end, { x })
      gradcheck(function(t) return t[name](t, { keepdim = true }) end, { x })
    end)
  end
  it("max and min over everything (no ties)", function()
    local x = distinct(3, 4)
    gradcheck(function(t) return t:max() end, { x })
    gradcheck(function(t) return t:min() end, { x })
    gradcheck(function(t) return wick.max(t) end, { distinct(5) })
  end)
  it("max and min along a dim (no ties), keepdim on and off", function()
    local x = distinct(3, 4)
    for _, name in ipairs({ "max", "min" }) do
      gradcheck(function(t) return (t[name](t, 1)) end, { x })
      gradcheck(function(t) return (t[name](t, 2)) end, { x })
      gradcheck(function(t) return (t[name](t, -1)) end, { x })
      gradcheck(function(t) return (t[name](t, 1, true)) end, { x })
      gradcheck(function(t) return (t[name](t, 2, true)) end, { x })
      gradcheck(function(t) return (t[name](t, 2)) end, { distinct(2, 3, 2) })
    end
  end)
  it("max over everything with ties shares the gradient, max along a dim gives it to one index", function()
    local x = T({ { 1, 3 }, { 3, 2 } }):requires_grad_()
    x:max():backward()
    assert_close(x.grad, { { 0, 0.5 }, { 0.5, 0 } }, 0)
    local y = T({ { 1, 3 }, { 3, 2 } }):requires_grad_()
    local v, i = y:max(1)
    v:sum():backward()
    local idx = i:totable()
    local g = y.grad:totable()
    for col = 1, 2 do
      local s = 0
      for row = 1, 2 do s = s + g[row][col] end
      assert.are.equal(1, s)
      assert.are.equal(1, g[idx[col]][col])
    end
  end)
end)

describe("autograd gradients: matrix products", function()
  it("mm", function()
    gradcheck(function(a, b) return a:mm(b) end, { randn(2, 3), randn(3, 4) })
    gradcheck(function(a, b) return wick.mm(a, b) end, { randn(3, 3), randn(3, 1) })
    -- transposed operands
    gradcheck(function(a, b) return a:t():mm(b:t()) end, { randn(3, 2), randn(4, 3) })
  end)
  it("mm with one side constant", function()
    gradcheck(function(a, b) return a:mm(b) end, { randn(2, 3), randn(3, 4) }, { constant = { [1] = true } })
    gradcheck(function(a, b) return a:mm(b) end, { randn(2, 3), randn(3, 4) }, { constant = { [2] = true } })
  end)
  it("bmm", function()
    gradcheck(function(a, b) return a:bmm(b) end, { randn(2, 2, 3), randn(2, 3, 2) })
    gradcheck(function(a, b) return a:transpose(2, 3):bmm(b) end, { randn(2, 3, 2), randn(2, 3, 2) })
  end)
  it("addmm with beta and alpha, input broadcast", function()
    gradcheck(function(c, a, b) return c:addmm(a, b) end, { randn(2, 4), randn(2, 3), randn(3, 4) })
    gradcheck(function(c, a, b) return c:addmm(a, b, { beta = 0.5, alpha = 2 }) end,
      { randn(2, 4), randn(2, 3), randn(3, 4) })
    gradcheck(function(c, a, b) return c:addmm(a, b, { beta = -1.5, alpha = 0.25 }) end,
      { randn(4), randn(2, 3), randn(3, 4) })
    gradcheck(function(c, a, b) return wick.addmm(c, a, b, { alpha = 3 }) end,
      { randn(1, 4), randn(2, 3), randn(3, 4) })
  end)
  it("addmm with beta = 0 gives the input a zero gradient, like PyTorch", function()
    local c = T({ { 1, 2 }, { 3, 4 } }):requires_grad_()
    local a, b = randn(2, 3), randn(3, 2)
    c:addmm(a, b, { beta = 0 }):sum():backward()
    assert_close(c.grad, { { 0, 0 }, { 0, 0 } }, 0)
  end)
  local cases = {
    { "vector . vector", { 3 }, { 3 } },
    { "matrix x vector", { 2, 3 }, { 3 } },
    { "vector x matrix", { 3 }, { 3, 2 } },
    { "matrix x matrix", { 2, 3 }, { 3, 4 } },
    { "batch x matrix", { 2, 2, 3 }, { 3, 2 } },
    { "matrix x batch", { 2, 3 }, { 2, 3, 2 } },
    { "batch x batch", { 2, 2, 3 }, { 2, 3, 2 } },
    { "broadcast batches", { 2, 1, 2, 3 }, { 3, 3, 2 } },
    { "vector x batch", { 3 }, { 2, 3, 2 } },
    { "batch x vector", { 2, 2, 3 }, { 3 } },
  }
  for _, case in ipairs(cases) do
    it("matmul: " .. case[1], function()
      gradcheck(function(a, b) return a:matmul(b) end, { randn(case[2]), randn(case[3]) })
    end)
  end
end)

describe("autograd gradients: views", function()
  local x
  before_each(function() x = randn(2, 3, 4) end)
  it("view and reshape", function()
    gradcheck(function(t) return t:view(6, 4) end, { x })
    gradcheck(function(t) return t:view(-1) * 2 end, { x })
    gradcheck(function(t) return t:reshape(4, 6) end, { x })
    gradcheck(function(t) return t:view_as(wick.zeros(4, 6)) end, { x })
    -- reshape of a non-contiguous view copies
    gradcheck(function(t) return t:transpose(1, 3):reshape(-1) end, { x })
  end)
  it("transpose, t and permute", function()
    gradcheck(function(t) return t:transpose(1, 3) end, { x })
    gradcheck(function(t) return t:transpose(-1, 2) end, { x })
    gradcheck(function(t) return t:t() end, { randn(2, 3) })
    gradcheck(function(t) return t:t() end, { randn(3) })
    gradcheck(function(t) return t:permute(3, 1, 2) end, { x })
    gradcheck(function(t) return t:permute({ 2, 3, 1 }) end, { x })
    gradcheck(function(t) return t.T end, { x })
  end)
  it("narrow and select", function()
    gradcheck(function(t) return t:narrow(3, 2, 2) end, { x })
    gradcheck(function(t) return t:narrow(1, 2, 1) end, { x })
    gradcheck(function(t) return t:select(2, 3) end, { x })
    gradcheck(function(t) return t:select(-1, 1) end, { x })
    -- overlapping slices add up
    gradcheck(function(t) return t:narrow(3, 1, 3) * t:narrow(3, 2, 3) end, { x })
  end)
  it("squeeze, unsqueeze, expand, flatten", function()
    local y = randn(2, 1, 3, 1)
    gradcheck(function(t) return t:squeeze() end, { y })
    gradcheck(function(t) return t:squeeze(2) end, { y })
    gradcheck(function(t) return t:squeeze(1) end, { y })
    gradcheck(function(t) return t:unsqueeze(1) end, { x })
    gradcheck(function(t) return t:unsqueeze(-1) end, { x })
    gradcheck(function(t) return t:expand(2, 3, 4) end, { randn(3, 1) })
    gradcheck(function(t) return t:expand(2, -1, 4, 3, 2) end, { y })
    gradcheck(function(t) return t:expand(2, 3) end, { T(0.5) })
    gradcheck(function(t) return t:flatten() end, { x })
    gradcheck(function(t) return t:flatten(2) end, { x })
    gradcheck(function(t) return t:transpose(1, 2):flatten(1, 2) end, { x })
    gradcheck(function(t) return t:flatten() end, { T(1.25) })
  end)
  it("contiguous and clone", function()
    gradcheck(function(t) return t:transpose(1, 2):contiguous() end, { x })
    gradcheck(function(t) return t:contiguous() * t end, { x })
    gradcheck(function(t) return t:clone() end, { x })
    gradcheck(function(t) return t:clone() * t:t():clone():t() end, { randn(3, 3) })
  end)
  it("t[i] indexing", function()
    gradcheck(function(t) return t[2] end, { x })
    gradcheck(function(t) return t[1][3] end, { x })
    gradcheck(function(t) return t[-1][2][4] end, { x })
    gradcheck(function(t) return t[1] * t[2] end, { x })
  end)
  it("a chain of views on both sides of an op", function()
    gradcheck(function(a, b) return a:t():unsqueeze(1) * b:narrow(1, 2, 2):view(2, 1, 1):expand(2, 4, 3) end,
      { randn(3, 4), randn(4) })
  end)
end)

describe("autograd gradients: indexing, joining, softmax", function()
  it("index_select, repeated indices included", function()
    local x = randn(3, 4)
    gradcheck(function(t) return t:index_select(1, I({ 3, 1 })) end, { x })
    gradcheck(function(t) return t:index_select(2, I({ 2, 2, 4, 2 })) end, { x })
    gradcheck(function(t) return t:index_select(-1, I({ 1 })) end, { x })
    gradcheck(function(t) return wick.index_select(t, 1, I({ 1, 1, 1 })) end, { randn(2, 2) })
  end)
  it("gather, repeated indices included", function()
    local x = randn(3, 4)
    gradcheck(function(t) return t:gather(1, I({ { 1, 3, 3, 2 }, { 2, 2, 1, 1 } })) end, { x })
    gradcheck(function(t) return t:gather(2, I({ { 4, 4 }, { 1, 2 }, { 3, 3 } })) end, { x })
  end)
  it("cat along each dim, with an input that needs no grad", function()
    gradcheck(function(a, b) return wick.cat({ a, b }) end, { randn(2, 3), randn(1, 3) })
    gradcheck(function(a, b) return wick.cat({ a, b }, 2) end, { randn(2, 3), randn(2, 2) })
    gradcheck(function(a, b) return wick.cat({ a, b, a }, -1) end, { randn(2, 3), randn(2, 1) })
    local c = randn(2, 3)
    gradcheck(function(a, b) return wick.cat({ a, c, b }) end, { randn(1, 3), randn(3, 3) })
    gradcheck(function(a, b) return wick.cat({ a, b }) end, { randn(2, 3), randn(1, 3) }, { constant = { [1] = true } })
  end)
  it("cat and stack of more than 64 tensors (a node with many inputs)", function()
    local parts = {}
    for i = 1, 100 do parts[i] = T({ i, -i }):requires_grad_() end
    local w = wick.arange(1, 201, 1, F64)
    ;(wick.cat(parts) * w):sum():backward()
    for i = 1, 100 do assert_close(parts[i].grad, { 2 * i - 1, 2 * i }, 0) end
    for i = 1, 100 do parts[i].grad = nil end
    ;(wick.stack(parts, 2) * w:view(2, 100)):sum():backward()
    for i = 1, 100 do assert_close(parts[i].grad, { i, 100 + i }, 0) end
  end)
  it("stack", function()
    gradcheck(function(a, b) return wick.stack({ a, b }) end, { randn(2, 3), randn(2, 3) })
    gradcheck(function(a, b) return wick.stack({ a, b, a }, 2) end, { randn(2, 3), randn(2, 3) })
    gradcheck(function(a, b) return wick.stack({ a, b }, -1) end, { randn(2, 3), randn(2, 3) })
  end)
  for _, name in ipairs({ "softmax", "log_softmax" }) do
    it(name .. " along each dim", function()
      local x = randn(3, 4)
      gradcheck(function(t) return t[name](t, 1) end, { x })
      gradcheck(function(t) return t[name](t, 2) end, { x })
      gradcheck(function(t) return t[name](t, -1) end, { x })
      gradcheck(function(t) return t[name](t, -2) end, { x })
      gradcheck(function(t) return t[name](t, 2) end, { randn(2, 3, 2) })
      gradcheck(function(t) return wick[name](t, 1) end, { randn(4) })
      gradcheck(function(t) return t:t()[name](t:t(), 2) end, { x })
    end)
  end
end)

describe("autograd gradients: dtype round trips", function()
  it("to(float32) and back: the gradient arrives in the input's dtype", function()
    local x = T({ { 1, -2, 3 }, { 0.5, 0.25, -4 } }):requires_grad_()
    local w = wick.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })
    local y = x:to("float32")
    assert.are.equal("float32", y.dtype)
    assert.is_true(y.requires_grad)
    ;(y * w):sum():backward()
    assert.are.equal("float64", x.grad.dtype)
    assert_close(x.grad, { { 1, 2, 3 }, { 4, 5, 6 } }, 0)
  end)
  it("float32 -> float64 -> float32", function()
    local x = wick.tensor({ 1, 2, 3 }, { requires_grad = true })
    local y = x:to("float64")
    assert.are.equal("float64", y.dtype)
    ;((y * y):to("float32"):sum()):backward()
    assert.are.equal("float32", x.grad.dtype)
    assert_close(x.grad, { 2, 4, 6 }, 0)
  end)
  it("gradcheck through float64 -> float64 (the same object) and :double()", function()
    gradcheck(function(t) return t:to("float64") * t:double() end, { randn(3) })
  end)
  it("mixed dtypes: each gradient comes back in its input's dtype", function()
    local x = wick.tensor({ 1, 2 }, { requires_grad = true }) -- float32
    local y = T({ 3, 4 }):requires_grad_()                     -- float64
    local z = x * y
    assert.are.equal("float64", z.dtype)
    z:sum():backward()
    assert.are.equal("float32", x.grad.dtype)
    assert.are.equal("float64", y.grad.dtype)
    assert_close(x.grad, { 3, 4 }, 0)
    assert_close(y.grad, { 1, 2 }, 0)
    -- with an integer tensor, which needs no gradient
    local w = T({ 1, 2 }):requires_grad_()
    ;(w * I({ 3, 4 }) + w / I({ 2, 4 })):sum():backward()
    assert_close(w.grad, { 3.5, 4.25 }, 0)
    -- cat promotes, the gradients split and convert back
    local a = wick.tensor({ 1, 2 }, { requires_grad = true })
    local b = T({ 3 }):requires_grad_()
    local c = wick.cat({ a, b })
    assert.are.equal("float64", c.dtype)
    ;(c * T({ 1, 2, 3 })):sum():backward()
    assert.are.equal("float32", a.grad.dtype)
    assert_close(a.grad, { 1, 2 }, 0)
    assert_close(b.grad, { 3 }, 0)
  end)
  it("to() with nothing to change returns the tensor itself", function()
    local x = T({ 1, 2 }):requires_grad_()
    assert.is_true(rawequal(x, x:to("float64")))
  end)
end)

describe("autograd gradients: compositions", function()
  it("a small network: tanh(x W + b) then log_softmax", function()
    local x = randn(4, 3)
    gradcheck(function(w, b) return (x:mm(w) + b):tanh():log_softmax(2) end, { randn(3, 2), randn(2) })
  end)
  it("a mean squared error", function()
    gradcheck(function(p, y) return ((p - y) ^ 2):mean() end, { randn(5), randn(5) })
  end)
  it("a tensor used by several ops (gradients add up in the graph)", function()
    gradcheck(function(a) local e = a:exp(); return e * a + e:sum() - a:t():mm(a):sum(1) end, { randn(3, 3) })
  end)
end)

-- ---- behaviour ----

-- (three cycles: a tensor held by a weak-keyed table's value, a named result's indices beside its
-- values, h:max(2).indices, is freed the cycle after its key is)
local function settle()
  collectgarbage(); collectgarbage(); collectgarbage()
  return wick._core.cpu_bytes_in_use()
end

describe("autograd behaviour", function()
  it("requires_grad: get, set, creation option, requires_grad_()", function()
    local x = wick.ones(2)
    assert.is_false(x.requires_grad)
    x.requires_grad = true
    assert.is_true(x.requires_grad)
    x.requires_grad = false
    assert.is_false(x.requires_grad)
    assert.is_true(rawequal(x, x:requires_grad_()))
    assert.is_true(x.requires_grad)
    x:requires_grad_(false)
    assert.is_false(x.requires_grad)
    assert.is_true(wick.zeros(2, 3, { requires_grad = true }).requires_grad)
    assert.is_true(wick.tensor({ 1, 2 }, { requires_grad = true }).requires_grad)
    assert.is_true(wick.randn(2, { dtype = "float64", requires_grad = true }).requires_grad)
    assert.is_false(wick.tensor({ 1, 2 }, { requires_grad = false }).requires_grad)
    -- the result of an op on it requires grad; on a plain tensor it does not
    assert.is_true((wick.ones(2, { requires_grad = true }) * 2).requires_grad)
    assert.is_false((wick.ones(2) * 2).requires_grad)
  end)

  it("requires_grad on an integer or bool tensor raises", function()
    assert_error_has(function() wick.tensor({ 1, 2 }, { dtype = "int64" }).requires_grad = true end,
      "floating point", "int64")
    assert_error_has(function() wick.tensor({ 1, 2 }, { dtype = "int64" }):requires_grad_() end, "floating point")
    assert_error_has(function() return wick.zeros(2, { dtype = "int32", requires_grad = true }) end, "floating point")
    assert_error_has(function() wick.tensor({ true }).requires_grad = true end, "floating point", "bool")
  end)

  it("requires_grad cannot be switched off on a non-leaf", function()
    local y = wick.ones(2, { requires_grad = true }) * 2
    assert_error_has(function() y.requires_grad = false end, "leaf", "detach")
  end)

  it("detach_ cuts the tensor itself from the graph, in place (PyTorch's detach_)", function()
    local x = T({ 1, 2, 3 }):requires_grad_()
    local y = x * 2
    local same = y:detach_()
    assert.are.equal(y, same)
    assert.is_true(y.is_leaf)
    assert.is_false(y.requires_grad)
    assert.is_nil(y.grad_fn)
    assert_close(y, { 2, 4, 6 }, 0)
    local z = (y * x):sum() -- y is a constant now: dz/dx = y
    z:backward()
    assert_close(x.grad, { 2, 4, 6 }, 0)
    x:detach_() -- a leaf loses requires_grad, keeps its grad
    assert.is_false(x.requires_grad)
    assert_close(x.grad, { 2, 4, 6 }, 0)
  end)

  it("gradients accumulate across two backward calls with retain_graph", function()
    local x = T({ 1, 2, 3 }):requires_grad_()
    local y = (x * x):sum()
    y:backward({ retain_graph = true })
    assert_close(x.grad, { 2, 4, 6 }, 0)
    y:backward()
    assert_close(x.grad, { 4, 8, 12 }, 0)
    -- and across separate graphs
    ;(x * 3):sum():backward()
    assert_close(x.grad, { 7, 11, 15 }, 0)
  end)

  it("backward keeps .grad the same tensor object and writes in place", function()
    local x = T({ 1, 2 }):requires_grad_()
    ;(x * 2):sum():backward()
    local g = x.grad
    ;(x * 3):sum():backward()
    assert_close(g, { 5, 5 }, 0) -- the tensor read after the first backward sees the second
  end)

  it("a second backward without retain_graph raises", function()
    local x = T({ 1, 2, 3 }):requires_grad_()
    local y = (x * x):sum()
    y:backward()
    assert_error_has(function() y:backward() end, "backward through the graph a second time", "retain_graph")
    -- the gradient of the first pass is intact
    assert_close(x.grad, { 2, 4, 6 }, 0)
  end)

  it("a second backward through nodes that saved nothing runs, as PyTorch's (expand, add, sum)", function()
    local loc = T({ 0, 0, 0 }):requires_grad_()
    local shared = loc:expand(2, 3) -- built once, like Normal(loc, 1)'s broadcast parameters
    ;(shared + 1):sum():backward()
    ;(shared * 2):sum():backward() -- a new graph over the same expand node
    assert_close(loc.grad, { 6, 6, 6 }, 0)
    local y = (loc + 1):sum()
    y:backward()
    y:backward() -- AddBackward and SumBackward keep no tensors: nothing was freed
    assert_close(loc.grad, { 8, 8, 8 }, 0)
  end)

  it("a second backward through a freed shared part of the graph raises", function()
    local x = T({ 1, 2 }):requires_grad_()
    local h = x * x
    local a, b = (h + 1):sum(), (h * 2):sum()
    a:backward()
    assert_error_has(function() b:backward() end, "second time")
  end)

  it("backward on a tensor that does not require grad raises", function()
    assert_error_has(function() wick.ones(1):backward() end, "does not require grad")
    assert_error_has(function() wick.ones(2):sum():backward() end, "does not require grad")
    local x = wick.ones(2, { requires_grad = true })
    local y = wick.no_grad(function() return (x * 2):sum() end)
    assert_error_has(function() y:backward() end, "does not require grad")
  end)

  it("backward on a non-scalar without a gradient raises", function()
    local x = wick.ones(2, 3, { requires_grad = true })
    local err = assert_error_has(function() (x * 2):backward() end, "only for scalar outputs", "[2, 3]")
    assert.is_truthy(err:find("autograd_spec.lua", 1, true), err)
    -- a one-element tensor of any shape is fine
    local z = wick.ones(1, 1, { requires_grad = true })
    ;(z * 5):backward()
    assert_close(z.grad, { { 5 } }, 0)
  end)

  it("backward with an explicit gradient tensor", function()
    local x = T({ { 1, 2 }, { 3, 4 } }):requires_grad_()
    local y = x * x
    y:backward(T({ { 1, 0 }, { 0.5, -1 } }))
    assert_close(x.grad, { { 2, 0 }, { 3, -8 } }, 0)
    -- a gradient of another dtype is converted; with options after it
    local x2 = wick.tensor({ 1, 2 }, { requires_grad = true })
    local y2 = x2 * 3
    y2:backward(T({ 1, 2 }), { retain_graph = true })
    assert.are.equal("float32", x2.grad.dtype)
    assert_close(x2.grad, { 3, 6 }, 0)
    y2:backward(T({ 1, 1 }))
    assert_close(x2.grad, { 6, 9 }, 0)
    -- a gradient of the wrong shape raises
    local y3 = x * 2
    assert_error_has(function() y3:backward(T({ 1, 2, 3 })) end, "shape")
    assert_error_has(function() y3:backward("nope") end, "backward")
  end)

  it("only leaves accumulate .grad", function()
    local x = T({ 1, 2 }):requires_grad_()
    local y = x * 2
    ;(y * y):sum():backward()
    assert.is_nil(y.grad)
    assert_close(x.grad, { 8, 16 }, 0)
  end)

  it("backward works inside no_grad", function()
    local x = T({ 1, 2 }):requires_grad_()
    local y = (x * x):sum()
    wick.no_grad(function() y:backward() end)
    assert_close(x.grad, { 2, 4 }, 0)
    assert.is_false(x.grad.requires_grad)
  end)

  it("on the meta device: backward runs the shape logic and gives meta gradients", function()
    local x = wick.ones(2, 3, { device = "meta", requires_grad = true })
    local b = wick.ones(3, { device = "meta", requires_grad = true })
    ;(x:mm(x:t()):sum() + (x * b):mean()):backward()
    assert.are.equal("meta", x.grad.device.type)
    assert.are.same({ 2, 3 }, shape_of(x.grad))
    assert.are.same({ 3 }, shape_of(b.grad))
  end)

  it("backward on a leaf fills its own grad", function()
    local x = T(3):requires_grad_()
    x:backward()
    assert_close(x.grad, 1, 0)
  end)

  it("a leaf that is not reached gets no grad; a branch without grad is skipped", function()
    local x = T({ 1, 2 }):requires_grad_()
    local unused = T({ 1, 2 }):requires_grad_()
    local c = T({ 5, 6 })
    local _ = unused * 2
    ;(x * c):sum():backward()
    assert.is_nil(unused.grad)
    assert.is_nil(c.grad)
    assert_close(x.grad, { 5, 6 }, 0)
  end)

  it("no_grad returns fn's results and records nothing", function()
    local x = wick.ones(2, { requires_grad = true })
    local a, b, c = wick.no_grad(function(p, q)
      assert.is_false(wick.is_grad_enabled())
      return x * p, q, nil
    end, 2, "q")
    assert.is_false(a.requires_grad)
    assert.is_nil(a.grad_fn)
    assert.are.equal("q", b)
    assert.is_nil(c)
    assert.are.equal(3, select("#", wick.no_grad(function() return 1, nil, 3 end)))
    assert.is_true(wick.is_grad_enabled())
  end)

  it("no_grad restores grad mode even when fn raises, and passes the error on", function()
    assert.is_true(wick.is_grad_enabled())
    local ok, err = pcall(wick.no_grad, function() error("boom") end)
    assert.is_false(ok)
    assert.is_truthy(tostring(err):find("boom", 1, true))
    assert.is_true(wick.is_grad_enabled())
    -- also when it was off before
    wick.set_grad_enabled(false)
    ok = pcall(wick.enable_grad, function()
      assert.is_true(wick.is_grad_enabled())
      error("bang")
    end)
    assert.is_false(ok)
    assert.is_false(wick.is_grad_enabled())
    wick.set_grad_enabled(true)
    -- a wick error inside (shape mismatch)
    ok = pcall(wick.no_grad, function() return wick.ones(2) + wick.ones(3) end)
    assert.is_false(ok)
    assert.is_true(wick.is_grad_enabled())
  end)

  it("nested no_grad / enable_grad and set_grad_enabled", function()
    local x = wick.ones(2, { requires_grad = true })
    wick.no_grad(function()
      local y = wick.enable_grad(function() return x * 2 end)
      assert.is_true(y.requires_grad)
      assert.are.equal("MulBackward", y.grad_fn)
      assert.are.equal("CloneBackward", wick.enable_grad(function() return x:clone().grad_fn end)) -- (a copy, not an alias)
      assert.are.equal("ToCopyBackward", wick.enable_grad(function() return x:double().grad_fn end))
      assert.is_false((x * 2).requires_grad)
      assert.is_false(wick.is_grad_enabled())
    end)
    wick.set_grad_enabled(false)
    local ok, y = pcall(function() return x + 1 end)
    wick.set_grad_enabled(true)
    assert.is_true(ok)
    assert.is_false(y.requires_grad)
    assert.is_true((x + 1).requires_grad)
  end)

  it("detach cuts the graph and shares the data", function()
    local x = T({ 1, 2, 3 }):requires_grad_()
    local y = x * 2
    local d = y:detach()
    assert.is_false(d.requires_grad)
    assert.is_nil(d.grad_fn)
    assert.is_true(d.is_leaf)
    assert.is_true(d:is_same_storage(y))
    local z = (d * x):sum() -- only the direct path to x counts
    z:backward()
    assert_close(x.grad, { 2, 4, 6 }, 0)
    -- detach of a leaf
    local xd = x:detach()
    assert.is_false(xd.requires_grad)
    assert.is_nil(xd.grad)
  end)

  it("in-place ops on a leaf that requires grad raise, and work inside no_grad", function()
    local x = T({ 1, 2, 3 }):requires_grad_()
    assert_error_has(function() x:add_(1) end, "leaf", "no_grad")
    assert_error_has(function() x:add_(T({ 1, 1, 1 })) end, "leaf")
    assert_error_has(function() x:mul_(2) end, "leaf")
    assert_error_has(function() x:exp_() end, "leaf")
    assert_error_has(function() x:fill_(0) end, "leaf")
    assert_error_has(function() x:copy_(T({ 0, 0, 0 })) end, "leaf")
    assert_error_has(function() x:clamp_(0, 1) end, "leaf")
    assert_error_has(function() x[1] = 5 end, "in-place")
    assert_close(x, { 1, 2, 3 }, 0) -- untouched
    wick.no_grad(function()
      x:add_(1)
      x:mul_(T({ 1, 2, 1 }))
      x[3] = 10
    end)
    assert_close(x, { 2, 6, 10 }, 0)
    assert.is_true(x.requires_grad)
    assert.is_true(x.is_leaf)
    -- copy_ into a tracked tensor is recorded: the source gets the gradient, the old values none (PyTorch's)
    local y = x * 2
    local src = T({ 7, 8, 9 }):requires_grad_()
    y:copy_(src * 1)
    assert_close(y, { 7, 8, 9 }, 0)
    local z = y * 3
    z:sum():backward()
    assert_close(src.grad, { 3, 3, 3 }, 0)
    assert.is_nil(x.grad)
    local leaf = T({ 1, 1, 1 }):requires_grad_() -- a leaf source keeps its gradient too
    local h = x * 2
    h:copy_(leaf)
    local hs = h * 5
    hs:sum():backward()
    assert_close(leaf.grad, { 5, 5, 5 }, 0)
    y = x * 2
    y[1] = 5 -- index writes are recorded (docs/api.md: every indexing form works under autograd)
    assert_close(y, { 5, 12, 20 }, 0)
    -- under no_grad an in-place op on a tracked tensor runs and records nothing
    local plain = T({ 0, 0, 0 })
    wick.no_grad(function() plain:add_(x) end)
    assert_close(plain, { 2, 6, 10 }, 0)
    assert.is_false(plain.requires_grad)
  end)

  it("in-place ops on tracked non-leaf tensors are recorded, with the gradients of the out-of-place forms", function()
    local function run(inplace)
      local x = T({ 0.5, -1, 2, 0.25 }):requires_grad_()
      local w = T({ 1.5, 2, -0.5, 3 }):requires_grad_()
      local y = x * 2
      if inplace then
        y:add_(w)
        y:mul_(w) -- w's gradient needs y's value from before the write
        y:tanh_() -- saves its output
        y:clamp_(-0.9, 0.9)
        y:sub_(w, 0.5)
        y:div_(3)
        y:exp_()
      else
        y = ((((y + w) * w):tanh():clamp(-0.9, 0.9)) - w * 0.5) / 3
        y = y:exp()
      end
      ;(y * y):sum():backward()
      return y, x.grad, w.grad
    end
    local y1, gx1, gw1 = run(true)
    local y2, gx2, gw2 = run(false)
    assert_close(y1, y2:totable(), 1e-12)
    assert_close(gx1, gx2:totable(), 1e-12)
    assert_close(gw1, gw2:totable(), 1e-12)
    assert.are.equal("ExpBackward", y1.grad_fn)

    -- a plain tensor written with a tracked operand joins the graph
    local x = T({ 1, 2 }):requires_grad_()
    local acc = T({ 10, 20 })
    acc:mul_(x)
    assert.is_true(acc.requires_grad)
    assert.are.equal("MulBackward", acc.grad_fn)
    acc:sum():backward()
    assert_close(x.grad, { 10, 20 }, 0)

    -- float64 into a float32 tensor: the tensor keeps its dtype, gradients theirs
    local a = wick.tensor({ 1, 2 }):requires_grad_()
    local b = T({ 3, 4 }):requires_grad_()
    local c = a * 1
    c:add_(b)
    assert.are.equal("float32", c.dtype)
    c:sum():backward()
    assert.are.equal("float64", b.grad.dtype)
    assert_close(a.grad, { 1, 1 }, 0)
    assert_close(b.grad, { 1, 1 }, 0)
  end)

  it("in-place ops on tracked tensors refuse what PyTorch refuses, and leave the tensor as it was", function()
    local x = T({ 1, 2, 3 }):requires_grad_()
    local y = x * 2
    local view = y:narrow(1, 1, 2)
    -- the base while a view of it lives: the view's history is made again from the base's (PyTorch's)
    y:add_(1)
    assert_close(view, { 3, 5 }, 0)
    assert.are.equal("AsStridedBackward", view.grad_fn)
    ;(view * 3):sum():backward()
    assert_close(x.grad, { 6, 6, 0 }, 0)
    x.grad = nil
    view = nil
    collectgarbage()
    local e = x:exp() -- exp saves its output: changing it is allowed, a backward that reads it raises (PyTorch's rule)
    e:mul_(2)
    assert_error_has(function() e:sum():backward() end, "modified by an inplace operation", "saved by ExpBackward")
    local row = x:view(1, 3) * 1
    local w = T({ { 1, 1, 1 }, { 2, 2, 2 } }):requires_grad_()
    assert_error_has(function() row:add_(w) end, "output with shape [1, 3] doesn't match the broadcast shape [2, 3]")
    assert_close(row, { { 1, 2, 3 } }, 0)
    local counts = wick.zeros(3, { dtype = "int64" })
    assert_error_has(function() counts:add_(x) end, "can't be cast")
    -- a tensor saved by another node, changed afterwards: the backward says so
    local v = T({ 1, 1, 1 }):requires_grad_()
    local z = (x * 1) * v -- saves x * 1 for v's gradient
    local saved = x * 1
    local z2 = saved * v
    saved:add_(1)
    assert_error_has(function() z2:sum():backward() end, "modified by an inplace operation")
    z:sum():backward()
    assert_close(v.grad, { 1, 2, 3 }, 0)
  end)

  it("a write through t.data or t:detach() with a tracked operand updates the values (VQ-VAE's EMA codebook)", function()
    local buf = T({ 1, 1, 1 }) -- a buffer
    local w = T({ 1, 2, 3 }):requires_grad_()
    local embed_sum = w * 2
    buf.data:mul_(0.5):add_(embed_sum, 0.1)
    assert_close(buf, { 0.7, 0.9, 1.1 }, 1e-15)
    assert.is_false(buf.requires_grad)
    assert.is_nil(buf.grad_fn)
    -- a value saved for backward, written through .data: as PyTorch's (.data has a version counter of
    -- its own) the backward uses the new values (z = 3x: 2z = 6x); through detach() it refuses them
    local x = T({ 1, 2, 3 }):requires_grad_()
    local z = x * 1
    local s = z * z -- saves z
    z.data:add_(embed_sum)
    s:sum():backward()
    assert_close(x.grad, { 6, 12, 18 }, 0) -- (PyTorch 2.15: tensor([6., 12., 18.]))
    local x2 = T({ 1, 2, 3 }):requires_grad_()
    local z2 = x2 * 1
    local s2 = z2 * z2
    z2:detach():add_(embed_sum)
    assert_error_has(function() s2:sum():backward() end, "modified by an inplace operation")
  end)

  it("a saved tensor changed in place before backward raises PyTorch's error, not a wrong gradient", function()
    local stale = "modified by an inplace operation"
    -- a plain operand saved for the other's gradient
    local x = T({ 1, 1, 1 }):requires_grad_()
    local w = T({ 1, 2, 3 })
    local y = x * w
    w:mul_(10)
    assert_error_has(function() y:sum():backward() end, stale, "[float64 [3]], saved by MulBackward",
      "is at version 1; expected version 0")
    assert.is_nil(x.grad)
    -- through a view of it, under no_grad, and through the 1-element fast path
    local changes = {
      function(t) t:narrow(1, 2, 1):fill_(0) end,
      function(t) wick.no_grad(function() t:add_(1) end) end,
      function(t) t[1] = 7 end,
      function(t) t:detach():copy_(t * 2) end, -- detach shares the data, and so the version
    }
    for i, change in ipairs(changes) do
      local v = T({ 4, 5, 6 })
      local z = (x * v):sum()
      change(v)
      assert_error_has(function() z:backward() end, stale)
    end
    local one = wick.tensor({ 2 }):requires_grad_()
    local s = wick.tensor({ 3 })
    local p = one * s
    s:add_(wick.tensor({ 1 }))
    assert_error_has(function() p:backward() end, stale)
    -- a saved output (exp saves its result) changed through a detached alias
    local e = x:exp()
    e:detach():zero_()
    assert_error_has(function() e:sum():backward() end, stale, "ExpBackward")
    -- the weight of a retained graph (saved for the input's gradient), changed by an optimizer step
    local lin = wick.nn.Linear(3, 1, { dtype = "float64" })
    local out = lin(T({ { 1, 2, 3 } }):requires_grad_()):sum()
    out:backward({ retain_graph = true })
    wick.optim.SGD(lin:parameters(), { lr = 0.1 }):step()
    assert_error_has(function() out:backward() end, stale)
  end)

  it("in-place changes before the use, on a clone, or after the backward are fine", function()
    local x = T({ 1, 1, 1 }):requires_grad_()
    local w = T({ 1, 2, 3 })
    w:mul_(2) -- before it is saved
    local c = w:clone()
    local y = x * c
    w:mul_(10) -- the clone is what was saved
    y:sum():backward()
    assert_close(x.grad, { 2, 4, 6 }, 0)
    c:zero_() -- after the backward freed the graph
    x.grad = nil
    ;(x * w):sum():backward()
    assert_close(x.grad, { 20, 40, 60 }, 0)
  end)

  it("an SGD step in no_grad, then a fresh backward", function()
    local w = T({ 1, -1 }):requires_grad_()
    for _ = 1, 3 do
      w.grad = nil
      ;(w * w):sum():backward()
      wick.no_grad(function() w:sub_(w.grad * 0.25) end)
    end
    assert_close(w, { 0.125, -0.125 }, 1e-15)
  end)

  it(".grad assignment and clearing", function()
    local x = T({ 1, 2 }):requires_grad_()
    assert.is_nil(x.grad)
    x.grad = T({ 10, 20 })
    assert_close(x.grad, { 10, 20 }, 0)
    ;(x * 2):sum():backward()
    assert_close(x.grad, { 12, 22 }, 0) -- accumulates into the assigned gradient
    x.grad = nil
    assert.is_nil(x.grad)
    ;(x * 2):sum():backward()
    assert_close(x.grad, { 2, 2 }, 0)
    -- zeroing in place (the gradient itself does not require grad)
    assert.is_false(x.grad.requires_grad)
    x.grad:zero_()
    assert_close(x.grad, { 0, 0 }, 0)
    ;(x * 3):sum():backward()
    assert_close(x.grad, { 3, 3 }, 0)
    -- a gradient of the wrong shape or dtype raises
    assert_error_has(function() x.grad = T({ 1, 2, 3 }) end, "shape")
    assert_error_has(function() x.grad = wick.tensor({ 1, 2 }) end, "float32")
    assert_error_has(function() x.grad = 5 end, "grad")
    assert_error_has(function() x.grad = x end, "its own grad")
  end)

  it("grad_fn names and is_leaf", function()
    local x = T({ 1, 2 }):requires_grad_()
    local y = T({ 3, 4 }):requires_grad_()
    assert.is_nil(x.grad_fn)
    assert.is_true(x.is_leaf)
    assert.is_true(wick.ones(2).is_leaf)
    local names = {
      { x * y, "MulBackward" }, { x + y, "AddBackward" }, { x - y, "SubBackward" }, { x / y, "DivBackward" },
      { x ^ y, "PowBackward" }, { -x, "NegBackward" }, { x:exp(), "ExpBackward" }, { x:sum(), "SumBackward" },
      { x:mean(), "MeanBackward" }, { x:view(2, 1), "ViewBackward" }, { x:unsqueeze(1):t(), "TransposeBackward" },
      { x:maximum(y), "MaximumBackward" }, { x:tanh(), "TanhBackward" }, { x:relu(), "ReluBackward" },
      { x:softmax(1), "SoftmaxBackward" }, { x:log_softmax(1), "LogSoftmaxBackward" },
      { wick.cat({ x, y }), "CatBackward" }, { x:unsqueeze(1):mm(y:unsqueeze(2)), "MmBackward" },
      { x[1], "SelectBackward" }, { x:narrow(1, 1, 1), "NarrowBackward" },
      { x:index_select(1, I({ 1 })), "IndexSelectBackward" }, { x:gather(1, I({ 2 })), "GatherBackward" },
    }
    for _, case in ipairs(names) do
      assert.are.equal(case[2], case[1].grad_fn)
      assert.is_false(case[1].is_leaf)
      assert.is_true(case[1].requires_grad)
    end
    -- an op on tensors that do not require grad is a leaf without grad_fn
    local z = wick.ones(2) * 2
    assert.is_nil(z.grad_fn)
    assert.is_true(z.is_leaf)
  end)

  it("tostring shows grad_fn=<...> or requires_grad=True", function()
    local x = T({ 1, 2 }):requires_grad_()
    local s = tostring(x)
    assert.is_truthy(s:find("requires_grad=True", 1, true), s)
    assert.is_falsy(s:find("grad_fn", 1, true), s)
    local m = tostring(x * 2)
    assert.is_truthy(m:find("grad_fn=<MulBackward>", 1, true), m)
    assert.is_falsy(m:find("requires_grad", 1, true), m)
    local plain = tostring(wick.ones(2))
    assert.is_falsy(plain:find("grad", 1, true), plain)
  end)

  it("t.grad, t.grad_fn, t.is_leaf, t.requires_grad cannot be misused", function()
    local x = T({ 1, 2 })
    assert_error_has(function() x.grad_fn = "x" end, "grad_fn")
    assert_error_has(function() x.is_leaf = false end, "is_leaf")
  end)

  it("frees the graph and its gradients: no memory leak", function()
    local before = settle()
    local function work()
      local x = wick.randn(64, 64, { requires_grad = true })
      local w = wick.randn(64, 32, { requires_grad = true })
      local h = x:mm(w):tanh()
      local y = (h:softmax(2) * h + h:max(2):unsqueeze(2)):sum() / x:exp():sum()
      y:backward()
      assert.is_truthy(x.grad)
      assert.is_true(wick._core.cpu_bytes_in_use() > before)
    end
    work()
    assert.are.equal(before, settle())
    -- a graph retained and never backpropagated again, or never backpropagated at all
    local function retained()
      local x = wick.randn(32, 32, { requires_grad = true })
      local y = (x:mm(x) * x):sum()
      y:backward({ retain_graph = true })
      local z = (x:exp() * x):mean()
      return z.grad_fn
    end
    assert.are.equal("MeanBackward", retained())
    assert.are.equal(before, settle())
    -- after an error in backward
    local function failing()
      local x = wick.randn(8, { requires_grad = true })
      local y = (x * x):sum()
      y:backward()
      pcall(y.backward, y)
      pcall(function() return (x * 2):backward() end)
    end
    failing()
    assert.are.equal(before, settle())
  end)

  it("a deep chain (20000 adds) backpropagates without a stack overflow and frees", function()
    local before = settle()
    local function work()
      local x = wick.ones(3, { requires_grad = true })
      local y = x
      for _ = 1, 20000 do y = y + 1 end
      assert_close(y, { 20001, 20001, 20001 }, 0)
      y:sum():backward()
      assert_close(x.grad, { 1, 1, 1 }, 0)
      -- a deep chain of ops that save tensors, dropped without backward
      local z = x
      for _ = 1, 20000 do z = z * 1 end
      z = nil
      -- and one that is backpropagated, through both operands
      local a = wick.ones(2, { dtype = "float64", requires_grad = true })
      local s = a
      for _ = 1, 20000 do s = s * 0.5 + a * 0.5 end
      s:sum():backward()
      assert_close(a.grad, { 1, 1 }, 1e-9)
    end
    work()
    assert.are.equal(before, settle())
  end)

  it("a deep graph with many uses of one tensor", function()
    local x = T({ 1, 2 }):requires_grad_()
    local acc = x * 0
    for _ = 1, 5000 do acc = acc + x end
    acc:sum():backward()
    assert_close(x.grad, { 5000, 5000 }, 0)
  end)
end)

describe("t.data (PyTorch's p.data)", function()
  it("is the same storage outside autograd", function()
    local p = wick.tensor({ 1, 2, 3 }, { requires_grad = true })
    local d = p.data
    assert.is_false(d.requires_grad)
    d:mul_(2) -- an in-place update through .data, as old PyTorch optimizers write it
    assert.are.same({ 2, 4, 6 }, p:detach():totable())
    assert.is_true(p.requires_grad)
  end)

  it("p.data = t and p:set_(t) swap the data in place (PyTorch's, Torch7's set)", function()
    local lin = wick.nn.Linear(3, 2)
    local opt = wick.optim.SGD(lin:parameters(), { lr = 1 })
    local w = lin.weight
    lin.weight.data = wick.ones(2, 3)
    assert.are.equal(w, lin.weight) -- the same object: the optimizer still holds it
    assert.is_true(w.requires_grad)
    assert.are.same({ { 1, 1, 1 }, { 1, 1, 1 } }, w:detach():totable())
    local src = wick.zeros(2, 3)
    assert.are.equal(w, w:set_(src))
    src[1][1] = 5 -- shared storage
    assert.are.equal(5, w[1][1]:item())
    lin(wick.ones(1, 3)):sum():backward()
    opt:step()
    assert.are.equal(4, w[1][1]:item()) -- 5 - lr * grad (1)
    local t = wick.ones(4)
    t:set_()
    assert.are.equal(0, t:numel())
    local ok, err = pcall(function() w.data = 5 end)
    assert.is_false(ok)
    assert.is_truthy(tostring(err):find("expected a tensor", 1, true), err)
    assert.is_truthy(tostring(err):find("autograd_spec.lua:", 1, true), err)
    ok, err = pcall(function() w.data = wick.zeros(4) end) -- w has a grad of 2 x 3
    assert.is_false(ok)
    assert.is_truthy(tostring(err):find("would not fit its new data", 1, true), err)
  end)
end)

describe("inplace activations under autograd", function()
  it("write into the input, which takes their graph over (PixelSNAIL's GatedResBlock)", function()
    local nn, F = wick.nn, wick.nn.functional
    for _, act in ipairs({ function(x) return nn.ELU(1, true)(x) end, function(x) return F.elu(x, { inplace = true }) end,
      function(x) return nn.SiLU(true)(x) end, function(x) return nn.Hardswish(true)(x) end }) do
      local w = wick.tensor({ -2, -0.5, 0.5, 2 }, { dtype = "float64" }):requires_grad_()
      local x = w * 1
      local y = act(x)
      assert.is_true(rawequal(x, y))
      local z = x * 2 + y -- three times the activation
      z:sum():backward()
      local w2 = w:detach():clone():requires_grad_()
      local a = act(w2 * 1)
      local r = a * 3
      r:sum():backward()
      support.assert_close(w.grad:totable(), w2.grad:totable(), 1e-15)
    end
  end)
end)

describe("wick.utils.checkpoint (activation checkpointing)", function()
  it("gives the gradients of the plain run, dropout replayed, also in sequential segments", function()
    local nn, cp = wick.nn, wick.utils.checkpoint
    wick.manual_seed(0)
    local net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.5), nn.Linear(8, 2))
    local x = wick.randn(3, 4):requires_grad_()
    wick.manual_seed(5)
    net(x):sum():backward()
    local gw, gx = net[1].weight.grad:clone(), x.grad:clone()
    for _, run in ipairs({ function() return cp.checkpoint(net, x) end,
      function() return cp.checkpoint_sequential(net, 2, x) end }) do
      net:zero_grad()
      x.grad = nil
      wick.manual_seed(5)
      local y = run()
      y:sum():backward()
      assert.are.equal(0, (net[1].weight.grad - gw):abs():max():item())
      assert.are.equal(0, (x.grad - gx):abs():max():item())
    end
    assert.are.equal("CheckpointBackward", cp.checkpoint(net, x).grad_fn)
    assert_error_has(function() cp.checkpoint(5) end, "a function or a module")
    local a, b = cp.checkpoint(function(p, q) return p * q, p + q end, x, wick.ones(3, 4), { use_reentrant = false })
    assert.are.same({ 3, 4 }, b:size())
    assert.is_truthy(a.grad_fn)
  end)
end)

describe("anomaly detection", function()
  it("names the node whose gradient has NaN, and restores the setting", function()
    local A = wick.autograd
    local x = wick.tensor({ -1, 2 }):requires_grad_()
    assert_error_has(function() A.detect_anomaly(function() x:sqrt():sum():backward() end) end,
      "Function 'SqrtBackward' returned nan values in its 0th output")
    assert.is_false(A.is_anomaly_enabled())
    x.grad = nil
    x:sqrt():sum():backward() -- off: NaN gradients, no error (PyTorch's default)
    assert.is_true(x.grad[1]:item() ~= x.grad[1]:item())
    A.set_detect_anomaly(true)
    local z = wick.tensor({ 1, 2 }):requires_grad_()
    local y = (z * 2):sum()
    y:backward()
    A.set_detect_anomaly(false)
    assert.are.same({ 2, 2 }, z.grad:totable())
    assert_error_has(function() A.set_detect_anomaly(1) end, "expected a boolean")
  end)
end)

describe("gradients PyTorch defines as 0 where the formula is 0 / 0", function()
  it("std of a constant, atan2 at the origin, xlogy at x = 0", function()
    local x = wick.ones(3, F64):requires_grad_(true)
    x:std():backward()
    assert_close(x.grad, { 0, 0, 0 }, 0)
    local a, b = wick.zeros(1, F64):requires_grad_(true), wick.zeros(1, F64):requires_grad_(true)
    a:atan2(b):sum():backward()
    assert_close(a.grad, { 0 }, 0)
    assert_close(b.grad, { 0 }, 0)
    local p = wick.zeros(1, F64):requires_grad_(true)
    p:xlogy(wick.zeros(1, F64)):sum():backward()
    assert_close(p.grad, { 0 }, 0)
    -- away from those points the formulas stand
    local c = wick.tensor({ 1, 2, 4 }, F64):requires_grad_(true)
    c:std():backward()
    assert.is_true(c.grad:abs():sum():item() > 0)
  end)
end)

describe("autograd.grad with an input listed twice", function()
  it("gives it the same gradient in both places, as PyTorch's", function()
    local x = wick.randn(2, 3, F64):requires_grad_(true)
    local g = wick.autograd.grad((x * x):sum(), { x, x })
    assert_close(g[1], (x * 2):totable(), 1e-15)
    assert_close(g[2], (x * 2):totable(), 1e-15)
  end)
end)

-- An in-place op on a view rewrites its base's history (PyTorch's CopySlices):
-- values and gradients below are PyTorch 2.15's for the same lines.
describe("autograd: in-place writes through views", function()
  it("a method on a view of a tracked result: the base's gradient sees the write", function()
    local x = T({ { 1, 2, 3, 4 }, { 5, 6, 7, 8 }, { 9, 10, 11, 12 } }):requires_grad_()
    local y = x * 2
    y:narrow(2, 1, 2):mul_(3)
    assert_close(y, { { 6, 12, 6, 8 }, { 30, 36, 14, 16 }, { 54, 60, 22, 24 } }, 0)
    assert.are.equal("CopySlices", y.grad_fn)
    y:sum():backward()
    assert_close(x.grad, { { 6, 6, 2, 2 }, { 6, 6, 2, 2 }, { 6, 6, 2, 2 } }, 0)
  end)

  it("a buffer of zeros filled row by row from tracked values (an RNN's outputs)", function()
    local h = T({ 1, 2, 3 }):requires_grad_()
    local buf = wick.zeros(4, 3, F64)
    for t = 1, 4 do buf:select(1, t):copy_(h * t) end
    assert_close(buf, { { 1, 2, 3 }, { 2, 4, 6 }, { 3, 6, 9 }, { 4, 8, 12 } }, 0)
    assert.is_true(buf.requires_grad)
    local loss = (buf * buf):sum()
    loss:backward()
    assert_close(h.grad, { 60, 120, 180 }, 0) -- 2 h (1 + 4 + 9 + 16)
  end)

  it("the written view, used afterwards, is a view of the new base", function()
    local x = T({ { 1, 2, 3, 4 }, { 5, 6, 7, 8 }, { 9, 10, 11, 12 } }):requires_grad_()
    local z = x * 1
    local v = z[{ {}, 2 }]
    v:add_(10)
    assert.are.equal("AsStridedBackward", v.grad_fn)
    local loss = (v * wick.arange(1, 4, F64)):sum() + z:sum()
    loss:backward()
    assert_close(x.grad, { { 1, 2, 1, 1 }, { 1, 3, 1, 1 }, { 1, 4, 1, 1 } }, 0)
  end)

  it("views of views, a tracked operand, and t[key] = v into a view", function()
    local x = T({ { 1, 2, 3 }, { 4, 5, 6 } }):requires_grad_()
    local y = x * 1
    y:select(1, 2):narrow(1, 2, 2):mul_(x[{ 1, { 1, 2 } }])
    assert_close(y, { { 1, 2, 3 }, { 4, 5, 12 } }, 0)
    local l1 = (y * y):sum()
    l1:backward()
    assert_close(x.grad, { { 52, 148, 6 }, { 8, 10, 48 } }, 0)
    x.grad = nil
    local y3 = x + 0
    local col = y3[{ {}, 2 }]
    col[{ 1 }] = x[{ 2, 3 }] * 7
    assert_close(y3, { { 1, 42, 3 }, { 4, 5, 6 } }, 0)
    local l2 = y3:pow(2):sum()
    l2:backward()
    assert_close(x.grad, { { 2, 0, 6 }, { 8, 10, 600 } }, 0)
  end)

  it("fill_ and copy_ of a constant through a view cut the region's gradient (PyTorch's numbers)", function()
    local x = T({ { 1, 2 }, { 3, 4 } }):requires_grad_()
    local y = x * 2
    y:view(-1):fill_(0.25) -- the whole base becomes a constant
    local l1 = (y * T({ { 1, 2 }, { 3, 4 } })):sum()
    l1:backward()
    assert_close(x.grad, { { 0, 0 }, { 0, 0 } }, 0)
    x.grad = nil
    local z = x * 2
    z:select(1, 1):copy_(T({ 7, 8 }))
    local l2 = z:sum()
    l2:backward()
    assert_close(x.grad, { { 0, 0 }, { 2, 2 } }, 0)
  end)

  it("a view is not detached in place (PyTorch's error); its detach() stays detached when the base is written", function()
    local x = T({ 1, 2, 3 }):requires_grad_()
    local y = x * 2
    local v = y:narrow(1, 1, 2)
    assert_error_has(function() v:detach_() end, "Can't detach views in-place. Use detach() instead")
    assert.is_true(v.requires_grad)
    local d = v:detach()
    y:add_(1)
    assert.is_false(d.requires_grad)
    assert.is_nil(d.grad_fn)
    assert_close(d, { 3, 5 }, 0)
  end)

  it("another live view of the base gets its history again; refuses a view of a leaf that requires grad", function()
    local x = T({ 1, 2, 3 }):requires_grad_()
    assert_error_has(function() x:narrow(1, 1, 1):mul_(2) end, "a view of a leaf tensor that requires grad")
    assert_close(x, { 1, 2, 3 }, 0)
    local y = x * 2
    local a, b = y:narrow(1, 1, 1), y:narrow(1, 2, 2)
    a:add_(1)
    assert_close(y, { 3, 4, 6 }, 0)
    assert.are.equal("AsStridedBackward", b.grad_fn)
    b:sum():backward()
    assert_close(x.grad, { 0, 2, 2 }, 0)
    -- a view whose region was overwritten sees the writer's gradient (PyTorch's numbers)
    local x2 = T({ 1, 2, 3 }):requires_grad_()
    local z = x2 * 2
    local v = z[{ { 1, 2 } }]
    z[2] = x2[3] * 7
    assert_close(v, { 2, 21 }, 0)
    ;(v * T({ 1, 10 })):sum():backward()
    assert_close(x2.grad, { 2, 0, 70 }, 0)
    local e = x:exp() -- saves its output
    e:narrow(1, 1, 2):mul_(2)
    assert_error_has(function() e:sum():backward() end, "modified by an inplace operation")
  end)
end)

describe("the order backward sums gradients in", function()
  -- MuZero's min-max normalisation: two 1e5-sized terms that cancel beside a small one; in
  -- float32 the sum keeps the small term or not by its order, and PyTorch's engine runs the
  -- latest-made function first: these are PyTorch's gradients for both orders of the lines
  local w = wick.tensor({ { 0.007 }, { 0.011 }, { -0.004 } })
  local w2 = wick.tensor({ { 1.3 }, { -0.9 }, { 0.6 } })
  it("the small path made first", function()
    local x = wick.tensor({ { 0.3 }, { 1.2 }, { 2.5 } }):requires_grad_()
    local s = x * 1.0
    local r = (s * w):sum()
    local n = (s - s:min(2, { keepdim = true })) / 1e-5
    ;((n * w2):sum() + r):backward()
    assert.are.same(w:view(-1):totable(), x.grad:view(-1):totable())
  end)
  it("the small path made between", function()
    local x = wick.tensor({ { 0.3 }, { 1.2 }, { 2.5 } }):requires_grad_()
    local s = x * 1.0
    local m = s:min(2, { keepdim = true })
    local r = (s * w):sum()
    local n = (s - m) / 1e-5
    ;(r + (n * w2):sum()):backward()
    assert.are.same({ 0.0078125, 0.0078125, -0.00390625 }, x.grad:view(-1):totable())
  end)
end)
