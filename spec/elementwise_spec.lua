-- Elementwise ops: values, in-place forms, Lua operators, broadcasting,
-- non-contiguous inputs, PyTorch's type promotion, and their errors.
local wick = require("wick")
local support = require("spec.support")
local error_of, assert_contains = support.error_of, support.assert_contains
local assert_close = support.assert_close_with(1e-5)

-- expected values computed in Lua, elementwise over a nested table
local function map(t, f)
  if type(t) ~= "table" then return f(t) end
  local out = {}
  for i, v in ipairs(t) do out[i] = map(v, f) end
  return out
end

local A = { { 1, -2, 3 }, { -4, 5, 6.5 } }
local B = { { 0.5, 4, -3 }, { 2, -2.5, 1 } }

describe("binary ops", function()
  local a, b = wick.tensor(A), wick.tensor(B)

  local function zip(f)
    local out = {}
    for i = 1, #A do
      out[i] = {}
      for j = 1, #A[i] do out[i][j] = f(A[i][j], B[i][j]) end
    end
    return out
  end

  it("add, sub, mul, div", function()
    assert_close(a:add(b):totable(), zip(function(x, y) return x + y end))
    assert_close(a:sub(b):totable(), zip(function(x, y) return x - y end))
    assert_close(a:mul(b):totable(), zip(function(x, y) return x * y end))
    assert_close(a:div(b):totable(), zip(function(x, y) return x / y end))
    assert.are.equal("float32", a:add(b).dtype)
  end)

  it("module-level forms give the same values as methods", function()
    assert.are.same(a:add(b):totable(), wick.add(a, b):totable())
    assert.are.same(a:mul(b):totable(), wick.mul(a, b):totable())
    assert.are.same(a:maximum(b):totable(), wick.maximum(a, b):totable())
  end)

  it("pow with a tensor and with a number exponent", function()
    local base = wick.tensor({ 1, 2, 3, 4 })
    local ex = wick.tensor({ 2, 0.5, -1, 3 })
    assert_close(base:pow(ex):totable(), { 1, math.sqrt(2), 1 / 3, 64 })
    assert_close(base:pow(2):totable(), { 1, 4, 9, 16 })
    assert_close(base:pow(-0.5):totable(), { 1, 1 / math.sqrt(2), 1 / math.sqrt(3), 0.5 })
  end)

  it("maximum and minimum", function()
    assert_close(a:maximum(b):totable(), zip(math.max))
    assert_close(a:minimum(b):totable(), zip(math.min))
  end)

  it("add with alpha: t:add(u, 2) is t + 2 * u", function()
    assert_close(a:add(b, 2):totable(), zip(function(x, y) return x + 2 * y end))
    assert_close(a:sub(b, 3):totable(), zip(function(x, y) return x - 3 * y end))
    assert_close(a:add(b, { alpha = 0.5 }):totable(), zip(function(x, y) return x + 0.5 * y end))
    assert_close(a:add(1, 10):totable(), zip(function(x, y) return x + 10 end))
  end)

  it("add_ with alpha", function()
    local t = wick.tensor({ 1, 2, 3 })
    t:add_(wick.tensor({ 1, 1, 1 }), -2)
    assert.are.same({ -1, 0, 1 }, t:totable())
  end)

  it("alpha must be integral for integer tensors", function()
    local i = wick.tensor({ 1, 2 }, { dtype = "int64" })
    assert_contains(error_of(function() return i:add(i, 0.5) end), "alpha")
    assert.are.same({ 3, 6 }, i:add(i, 2):totable())
  end)

  it("other ops take no alpha", function()
    assert_contains(error_of(function() return a:mul(b, 2) end), "mul")
  end)

  it("raises on bad operands", function()
    assert_contains(error_of(function() return a:add("x") end), "string")
    assert_contains(error_of(function() return a:add({}) end), "table")
    assert_contains(error_of(function() return a + "1" end), "string")
  end)
end)

describe("unary ops", function()
  local x = { -2, -0.5, 0, 0.5, 3 }
  local t = wick.tensor(x)

  it("neg, abs", function()
    assert_close(t:neg():totable(), map(x, function(v) return -v end))
    assert_close(t:abs():totable(), map(x, math.abs))
  end)

  it("exp, tanh, sigmoid, relu", function()
    assert_close(t:exp():totable(), map(x, math.exp))
    assert_close(t:tanh():totable(), map(x, math.tanh))
    assert_close(t:sigmoid():totable(), map(x, function(v) return 1 / (1 + math.exp(-v)) end))
    assert_close(t:relu():totable(), map(x, function(v) return math.max(v, 0) end))
  end)

  it("log and sqrt, with nan and -inf outside the domain", function()
    local p = wick.tensor({ 0.25, 1, 4, 0, -1 })
    assert_close(p:log():totable(), { math.log(0.25), 0, math.log(4), -math.huge, 0 / 0 })
    assert_close(p:sqrt():totable(), { 0.5, 1, 2, 0, 0 / 0 })
  end)

  it("sigmoid saturates without overflow", function()
    assert_close(wick.tensor({ -100, 100 }):sigmoid():totable(), { 0, 1 }, 1e-6)
    assert_close(wick.tensor({ -1000, 1000 }, { dtype = "float64" }):sigmoid():totable(), { 0, 1 }, 1e-12)
  end)

  it("integer inputs of float ops give float32; neg/abs/relu keep the dtype", function()
    local i = wick.tensor({ -4, 9 }, { dtype = "int64" })
    assert.are.equal("float32", i:exp().dtype)
    assert.are.equal("float32", i:sigmoid().dtype)
    local s = wick.tensor({ 4, 9 }, { dtype = "int32" }):sqrt()
    assert.are.equal("float32", s.dtype)
    assert.are.same({ 2, 3 }, s:totable())
    assert.are.equal("int64", i:neg().dtype)
    assert.are.same({ 4, -9 }, i:neg():totable())
    assert.are.same({ 4, 9 }, i:abs():totable())
    assert.are.same({ 0, 9 }, i:relu():totable())
    assert.are.equal("int64", i:relu().dtype)
  end)

  it("float64 is computed in float64", function()
    local d = wick.tensor({ 1e-10 }, { dtype = "float64" })
    assert.are.equal("float64", d:exp().dtype)
    assert.are.equal(math.exp(1e-10), d:exp():item())
  end)

  it("neg of a bool tensor raises", function()
    local b = wick.tensor({ true })
    assert_contains(error_of(function() return -b end), "bool")
  end)

  it("trigonometric, hyperbolic and logarithmic functions against Lua's math", function()
    local d = wick.tensor(x, { dtype = "float64" })
    local u = wick.tensor({ -0.9, -0.3, 0, 0.4, 0.8 }, { dtype = "float64" })
    local p = wick.tensor({ 0.25, 1, 3, 10, 1e-3 }, { dtype = "float64" })
    local function vals(t) return t:totable() end
    local function sinh(v) return (math.exp(v) - math.exp(-v)) / 2 end
    local function cosh(v) return (math.exp(v) + math.exp(-v)) / 2 end
    local cases = {
      { "sin", d, math.sin }, { "cos", d, math.cos }, { "tan", d, math.tan }, { "atan", d, math.atan },
      { "asin", u, math.asin }, { "acos", u, math.acos }, { "sinh", d, sinh }, { "cosh", d, cosh },
      { "log2", p, function(v) return math.log(v) / math.log(2) end },
      { "log10", p, function(v) return math.log(v) / math.log(10) end },
      { "log1p", p, function(v) return math.log(1 + v) end }, { "expm1", d, function(v) return math.exp(v) - 1 end },
      { "rsqrt", p, function(v) return 1 / math.sqrt(v) end }, { "reciprocal", p, function(v) return 1 / v end },
    }
    for _, c in ipairs(cases) do
      assert_close(vals(c[2][c[1]](c[2])), map(vals(c[2]), c[3]), 1e-12)
      assert_close(vals(wick[c[1]](c[2]:to("float32"))), map(vals(c[2]), c[3]), 1e-5) -- wick.sin(t) too
    end
    assert_close(vals(wick.tensor({ 1e-10 }, { dtype = "float64" }):log1p()), { 1e-10 - 5e-21 }, 1e-25) -- no cancellation
    assert.are.equal("float32", wick.tensor({ 1, 2 }, { dtype = "int64" }):sin().dtype)
  end)

  it("floor, ceil, round (half to even), trunc, frac, sign; integers stay integers", function()
    local v = wick.tensor({ -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.7, -2.7 })
    assert.are.same({ -3, -2, -1, 0, 1, 2, 2, -3 }, v:floor():totable())
    assert.are.same({ -2, -1, -0, 1, 2, 3, 3, -2 }, v:ceil():totable())
    assert.are.same({ -2, -2, -0, 0, 2, 2, 3, -3 }, v:round():totable())
    assert.are.same({ -2, -1, -0, 0, 1, 2, 2, -2 }, v:trunc():totable())
    assert_close(v:frac():totable(), { -0.5, -0.5, -0.5, 0.5, 0.5, 0.5, 0.7, -0.7 }, 1e-6)
    assert.are.same({ -1, -1, -1, 1, 1, 1, 1, -1 }, v:sign():totable())
    assert.are.same({ 0, 0 }, wick.tensor({ 0 / 0, -0.0 }):sign():totable()) -- PyTorch's (x > 0) - (x < 0)
    local i = wick.tensor({ -7, 0, 9 }, { dtype = "int64" })
    for _, name in ipairs({ "floor", "ceil", "round", "trunc" }) do
      assert.are.equal("int64", i[name](i).dtype)
      assert.are.same({ -7, 0, 9 }, i[name](i):totable())
    end
    assert.are.same({ -1, 0, 1 }, i:sign():totable())
    local w = v:clone()
    w:floor_()
    assert.are.same(v:floor():totable(), w:totable())
  end)
end)

describe("fmod, remainder (the % operator), atan2", function()
  it("fmod takes the dividend's sign, remainder the divisor's, like PyTorch", function()
    local a = wick.tensor({ -7, 7, -7, 7, 5.5 })
    local b = wick.tensor({ 3, 3, -3, -3, 2 })
    assert.are.same({ -1, 1, -1, 1, 1.5 }, a:fmod(b):totable())
    assert.are.same({ 2, 1, -1, -2, 1.5 }, a:remainder(b):totable())
    assert.are.same({ 2, 1, -1, -2, 1.5 }, (a % b):totable())
    assert.are.same({ 2, 1, 2, 1, 2.5 }, (a % 3):totable())
    local i = wick.tensor({ -7, 7, -8 }, { dtype = "int64" })
    assert.are.same({ 2, 1, 1 }, i:remainder(3):totable())
    assert.are.same({ -1, 1, -2 }, i:fmod(3):totable())
    assert.are.equal("int64", (i % 3).dtype)
    assert.are.same({ 0, 0, 0 }, i:fmod(-1):totable()) -- never C's INT64_MIN % -1
    assert.are.same({ 2, 1, 1 }, wick.remainder(i, 3):totable())
  end)

  it("atan2 gives the angle in every quadrant; integers give float32", function()
    local y = wick.tensor({ 1, 1, -1, -1, 0 }, { dtype = "float64" })
    local x = wick.tensor({ 1, -1, -1, 1, -1 }, { dtype = "float64" })
    local want = {}
    for k, yv in ipairs(y:totable()) do want[k] = math.atan2 and math.atan2(yv, x:totable()[k]) or math.atan(yv, x:totable()[k]) end
    assert_close(y:atan2(x):totable(), want, 1e-12)
    local r = wick.tensor({ 3 }, { dtype = "int64" }):atan2(wick.tensor({ 4 }, { dtype = "int64" }))
    assert.are.equal("float32", r.dtype)
    assert_close(r:totable(), { math.atan(3 / 4) }, 1e-6)
  end)
end)

describe("clamp", function()
  local t = wick.tensor({ -3, -1, 0, 2, 5 })

  it("clamps both sides", function()
    assert.are.same({ -1, -1, 0, 2, 2 }, t:clamp(-1, 2):totable())
  end)

  it("clamps one side with nil or an options table", function()
    assert.are.same({ 0, 0, 0, 2, 5 }, t:clamp(0):totable())
    assert.are.same({ -3, -1, 0, 1, 1 }, t:clamp(nil, 1):totable())
    assert.are.same({ 0, 0, 0, 2, 5 }, t:clamp({ min = 0 }):totable())
    assert.are.same({ -3, -1, 0, 1, 1 }, t:clamp({ max = 1 }):totable())
    assert.are.same({ -2, -1, 0, 2, 3 }, t:clamp({ min = -2, max = 3 }):totable())
  end)

  it("keeps an integer dtype", function()
    local i = wick.tensor({ -5, 5, 50 }, { dtype = "int32" }):clamp(0, 10)
    assert.are.equal("int32", i.dtype)
    assert.are.same({ 0, 5, 10 }, i:totable())
  end)

  it("saturates integer bounds beyond int64; a NaN one gives NaN in the default dtype, as PyTorch's", function()
    local i = wick.tensor({ -5, 5, 50 }, { dtype = "int64" })
    assert.are.same({ -5, 5, 50 }, i:clamp(-1e19, 1e19):totable())
    assert.are.same({ -5, 5, 10 }, i:clamp(-math.huge, 10):totable())
    assert.are.same({ 0, 5, 50 }, i:clamp(0, math.huge):totable())
    -- fractional bounds promote to float, as PyTorch's result type
    assert.are.same({ 0.5, 1, 1.5 }, wick.tensor({ 0, 1, 2 }, { dtype = "uint8" }):clamp(0.5, 1.5):totable())
    local n = i:clamp(0 / 0, 1)
    assert.are.equal(wick.get_default_dtype(), n.dtype)
    assert.is_true(n[3]:item() ~= n[3]:item())
    assert.is_true(i:clamp(1, 0 / 0)[1]:item() ~= i:clamp(1, 0 / 0)[1]:item())
  end)

  it("raises without bounds; with min > max every element is max, as PyTorch's", function()
    assert_contains(error_of(function() return t:clamp() end), "clamp")
    local r = t:clamp(3, 1):totable()
    for i = 1, #r do assert.are.equal(1, r[i]) end
  end)
end)

describe("NaN propagation", function()
  local nan = 0 / 0
  local n = wick.tensor({ nan, 1, -1 })

  it("maximum and minimum propagate NaN from either side", function()
    assert_close(n:maximum(wick.zeros(3)):totable(), { nan, 1, 0 })
    assert_close(wick.zeros(3):maximum(n):totable(), { nan, 1, 0 })
    assert_close(n:minimum(wick.zeros(3)):totable(), { nan, 0, -1 })
    assert_close(wick.zeros(3):minimum(n):totable(), { nan, 0, -1 })
  end)

  it("relu and clamp keep NaN", function()
    assert_close(n:relu():totable(), { nan, 1, 0 })
    assert_close(n:clamp(0, 0.5):totable(), { nan, 0.5, 0 })
    assert_close(n:clamp(0):totable(), { nan, 1, 0 })
  end)

  it("comparisons with NaN are false except ne", function()
    assert.are.same({ false, true, true }, n:eq(n):totable())
    assert.are.same({ true, false, false }, n:ne(n):totable())
    assert.are.same({ false, false, false }, n:eq(0 / 0):totable())
    assert.are.same({ true, true, true }, n:ne(0 / 0):totable())
    assert.are.same({ false, false, false }, n:lt(nan):totable())
    assert.are.same({ false, true, false }, n:ge(1):totable())
  end)
end)

describe("comparisons", function()
  local a = wick.tensor({ 1, 2, 3, 4 })
  local b = wick.tensor({ 4, 2, 1, 4 })

  it("eq ne lt le gt ge give bool tensors", function()
    assert.are.same({ false, true, false, true }, a:eq(b):totable())
    assert.are.same({ true, false, true, false }, a:ne(b):totable())
    assert.are.same({ true, false, false, false }, a:lt(b):totable())
    assert.are.same({ true, true, false, true }, a:le(b):totable())
    assert.are.same({ false, false, true, false }, a:gt(b):totable())
    assert.are.same({ false, true, true, true }, a:ge(b):totable())
    for _, op in ipairs({ "eq", "ne", "lt", "le", "gt", "ge" }) do
      assert.are.equal("bool", a[op](a, b).dtype, op)
    end
  end)

  it("compare with numbers on the right", function()
    assert.are.same({ false, false, true, true }, a:gt(2.5):totable())
    assert.are.same({ false, true, false, false }, a:eq(2):totable())
    assert.are.equal("bool", a:le(2).dtype)
  end)

  it("compare across dtypes after promotion", function()
    local i = wick.tensor({ 1, 2 }, { dtype = "int64" })
    assert.are.same({ false, false }, i:eq(1.5):totable())
    assert.are.same({ false, true }, i:gt(1.5):totable())
    assert.are.same({ true, false }, i:eq(wick.tensor({ 1, 3 }, { dtype = "float64" })):totable())
  end)

  it("Lua's == on tensors is identity", function()
    local c = wick.tensor({ 1, 2, 3, 4 })
    assert.is_false(a == c)
    assert.is_true(a == a)
  end)

  it("broadcast like the arithmetic ops", function()
    local col = wick.tensor({ { 1 }, { 3 } })
    local row = wick.tensor({ 1, 2, 3 })
    assert.are.same({ { true, false, false }, { true, true, true } }, col:ge(row):totable())
  end)
end)

describe("where", function()
  local cond = wick.tensor({ true, false, true })
  local x = wick.tensor({ 1, 2, 3 })
  local y = wick.tensor({ 10, 20, 30 })

  it("picks from tensors", function()
    assert.are.same({ 1, 20, 3 }, wick.where(cond, x, y):totable())
    assert.are.same({ 1, 20, 3 }, x:where(cond, y):totable())
  end)

  it("takes numbers for either operand", function()
    assert.are.same({ 1, 0, 3 }, wick.where(cond, x, 0):totable())
    assert.are.same({ -1, 20, -1 }, wick.where(cond, -1, y):totable())
    local both = wick.where(cond, 1, 0)
    assert.are.same({ 1, 0, 1 }, both:totable())
    assert.are.equal("int64", both.dtype) -- like torch.where(cond, 1, 0)
    local f = wick.where(cond, 1.5, 0)
    assert.are.equal("float32", f.dtype)
    assert.are.same({ 1.5, 0, 1.5 }, f:totable())
    assert.are.equal("float32", wick.where(cond, x, 7).dtype)
  end)

  it("broadcasts condition and operands", function()
    local c = wick.tensor({ { true }, { false } })
    local r = wick.where(c, wick.tensor({ 1, 2, 3 }), wick.tensor(0))
    assert.are.same({ { 1, 2, 3 }, { 0, 0, 0 } }, r:totable())
  end)

  it("promotes operand dtypes", function()
    local i = wick.tensor({ 1, 2, 3 }, { dtype = "int64" })
    local d = wick.tensor({ 0.5, 0.5, 0.5 }, { dtype = "float64" })
    local r = wick.where(cond, i, d)
    assert.are.equal("float64", r.dtype)
    assert.are.same({ 1, 0.5, 3 }, r:totable())
  end)

  it("condition from a comparison", function()
    local t = wick.tensor({ -1, 2, -3 })
    assert.are.same({ 0, 2, 0 }, wick.where(t:gt(0), t, 0):totable())
  end)

  it("raises on a non-bool condition and on bad operands", function()
    assert_contains(error_of(wick.where, x, x, y), "bool")
    assert_contains(error_of(wick.where, cond, "a", y), "string")
    assert_contains(error_of(wick.where, cond, x, wick.ones(2)), "[3] vs [2]")
  end)
end)

describe("in-place forms", function()
  it("return the same object and change it", function()
    local t = wick.tensor({ 1, 2, 3 })
    local u = wick.tensor({ 1, 1, 1 })
    for _, case in ipairs({
      { "add_", { 2, 3, 4 } }, { "sub_", { 1, 2, 3 } }, { "mul_", { 1, 2, 3 } }, { "div_", { 1, 2, 3 } },
    }) do
      local r = t[case[1]](t, u)
      assert.is_true(rawequal(t, r), case[1])
      assert.are.same(case[2], t:totable(), case[1])
    end
  end)

  it("take numbers", function()
    local t = wick.tensor({ 1, 2, 3 })
    assert.is_true(rawequal(t, t:mul_(2)))
    assert.are.same({ 2, 4, 6 }, t:totable())
    t:sub_(1):div_(2)
    assert.are.same({ 0.5, 1.5, 2.5 }, t:totable())
    t:pow_(2)
    assert.are.same({ 0.25, 2.25, 6.25 }, t:totable())
  end)

  it("unary and clamp in-place forms", function()
    local t = wick.tensor({ -1, 4 })
    assert.is_true(rawequal(t, t:neg_()))
    assert.are.same({ 1, -4 }, t:totable())
    assert.is_true(rawequal(t, t:abs_()))
    assert.are.same({ 1, 4 }, t:totable())
    assert.is_true(rawequal(t, t:sqrt_()))
    assert.are.same({ 1, 2 }, t:totable())
    assert.is_true(rawequal(t, t:clamp_(1.5, 3)))
    assert.are.same({ 1.5, 2 }, t:totable())
    local r = wick.tensor({ -2, 2 })
    assert.is_true(rawequal(r, r:relu_()))
    assert.are.same({ 0, 2 }, r:totable())
    local e = wick.tensor({ 0, 1 })
    e:exp_()
    assert_close(e:totable(), { 1, math.exp(1) })
  end)

  it("maximum_ and comparisons in place", function()
    local t = wick.tensor({ 1, 5 })
    t:maximum_(wick.tensor({ 3, 3 }))
    assert.are.same({ 3, 5 }, t:totable())
    local c = wick.tensor({ 1, 5 })
    c:gt_(2) -- the result 0/1 lands in the float tensor, like PyTorch's gt_
    assert.are.same({ 0, 1 }, c:totable())
  end)

  it("write through views into the base tensor", function()
    local base = wick.zeros(2, 3)
    local row = base[2]
    row:add_(5)
    assert.are.same({ { 0, 0, 0 }, { 5, 5, 5 } }, base:totable())
    local col = base:t()[1]
    col:add_(1)
    assert.are.same({ { 1, 0, 0 }, { 6, 5, 5 } }, base:totable())
  end)

  it("broadcast the other operand into self", function()
    local t = wick.zeros(2, 3)
    t:add_(wick.tensor({ 1, 2, 3 }))
    assert.are.same({ { 1, 2, 3 }, { 1, 2, 3 } }, t:totable())
    t:mul_(wick.tensor({ { 2 }, { 3 } }))
    assert.are.same({ { 2, 4, 6 }, { 3, 6, 9 } }, t:totable())
  end)

  it("raise when the broadcast would change self's shape", function()
    local t = wick.ones(3)
    local err = error_of(function() return t:add_(wick.ones(2, 3)) end)
    assert_contains(err, "[3]")
    assert_contains(err, "[2, 3]")
    assert.are.same({ 1, 1, 1 }, t:totable()) -- untouched
    local u = wick.ones(2, 1)
    assert_contains(error_of(function() return u:mul_(wick.ones(1, 3)) end), "[2, 1]")
    assert_contains(error_of(function() return u:sub_(wick.ones(2, 4)) end), "[2, 4]")
  end)

  it("raise when a float result would go into an integer tensor", function()
    local i = wick.tensor({ 1, 2 }, { dtype = "int64" })
    assert_contains(error_of(function() return i:add_(wick.tensor({ 0.5, 0.5 })) end), "can't be cast")
    assert_contains(error_of(function() return i:mul_(2.5) end), "can't be cast")
    assert_contains(error_of(function() return i:div_(2) end), "can't be cast") -- true division
    assert_contains(error_of(function() return i:exp_() end), "can't be cast")
    assert_contains(error_of(function() return i:sqrt_() end), "can't be cast")
    assert.are.same({ 1, 2 }, i:totable())
    local b = wick.tensor({ true, false })
    assert_contains(error_of(function() return b:add_(1) end), "can't be cast")
  end)

  it("integer in place with integer operands stays exact", function()
    local i = wick.tensor({ 1, 2 }, { dtype = "int32" })
    i:add_(wick.tensor({ 10, 20 }, { dtype = "int64" }))
    assert.are.equal("int32", i.dtype)
    assert.are.same({ 11, 22 }, i:totable())
    i:mul_(3)
    assert.are.same({ 33, 66 }, i:totable())
  end)

  it("a float tensor takes integer operands in place", function()
    local f = wick.tensor({ 0.5, 1.5 })
    f:add_(wick.tensor({ 1, 2 }, { dtype = "int64" }))
    assert.are.same({ 1.5, 3.5 }, f:totable())
    assert.are.equal("float32", f.dtype)
  end)

  it("raise on an expanded self", function()
    local e = wick.tensor({ 1, 2 }):expand(3, 2)
    assert_contains(error_of(function() return e:add_(1) end), "clone")
  end)
end)

describe("Lua operators", function()
  local t = wick.tensor({ 1, 2, 4 })
  local u = wick.tensor({ 2, 4, 8 })

  it("+ - * / ^ between tensors", function()
    assert.are.same({ 3, 6, 12 }, (t + u):totable())
    assert.are.same({ -1, -2, -4 }, (t - u):totable())
    assert.are.same({ 2, 8, 32 }, (t * u):totable())
    assert.are.same({ 0.5, 0.5, 0.5 }, (t / u):totable())
    assert_close((t ^ u):totable(), { 1, 16, 65536 })
  end)

  it("numbers on the right", function()
    assert.are.same({ 3, 4, 6 }, (t + 2):totable())
    assert.are.same({ -1, 0, 2 }, (t - 2):totable())
    assert.are.same({ 3, 6, 12 }, (t * 3):totable())
    assert.are.same({ 0.5, 1, 2 }, (t / 2):totable())
    assert.are.same({ 1, 4, 16 }, (t ^ 2):totable())
  end)

  it("numbers on the left keep the order of the operands", function()
    assert.are.same({ 3, 4, 6 }, (2 + t):totable())
    assert.are.same({ 1, 0, -2 }, (2 - t):totable())
    assert.are.same({ 3, 6, 12 }, (3 * t):totable())
    assert.are.same({ 2, 1, 0.5 }, (2 / t):totable())
    assert.are.same({ 2, 4, 16 }, (2 ^ t):totable())
  end)

  it("unary minus", function()
    assert.are.same({ -1, -2, -4 }, (-t):totable())
    assert.are.same({ 1, 2, 4 }, (-(-t)):totable())
    local i = wick.tensor({ 3 }, { dtype = "int64" })
    assert.are.same({ -3 }, (-i):totable())
    assert.are.equal("int64", (-i).dtype)
  end)

  it("return new tensors and leave the operands alone", function()
    local r = t + u
    assert.is_false(rawequal(r, t))
    assert.is_false(r:is_same_storage(t))
    assert.are.same({ 1, 2, 4 }, t:totable())
    assert.are.same({ 2, 4, 8 }, u:totable())
  end)

  it("chain into expressions", function()
    local r = (t * 2 + 1) / (u - 1) - 1
    assert_close(r:totable(), { 3 / 1 - 1, 5 / 3 - 1, 9 / 7 - 1 })
  end)

  it("bool numbers are accepted as operands", function()
    assert.are.same({ 2, 3, 5 }, (t + true):totable())
  end)
end)

describe("broadcasting", function()
  it("[2, 3] with [3]", function()
    local a = wick.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })
    local b = wick.tensor({ 10, 20, 30 })
    assert.are.same({ { 11, 22, 33 }, { 14, 25, 36 } }, (a + b):totable())
    assert.are.same({ { 9, 18, 27 }, { 6, 15, 24 } }, (b - a):totable())
    assert.are.same({ 2, 3 }, (b - a):size())
  end)

  it("[3] with [2, 3] (the shorter shape first)", function()
    local a = wick.tensor({ 1, 2, 3 })
    local b = wick.ones(2, 3)
    local r = a + b
    assert.are.same({ 2, 3 }, r:size())
    assert.are.same({ { 2, 3, 4 }, { 2, 3, 4 } }, r:totable())
    assert.are.same({ { 1, 2, 3 }, { 1, 2, 3 } }, a:mul(b):totable())
  end)

  it("[2, 1] with [1, 3]", function()
    local col = wick.tensor({ { 1 }, { 2 } })
    local row = wick.tensor({ { 10, 20, 30 } })
    local r = col * row
    assert.are.same({ 2, 3 }, r:size())
    assert.are.same({ { 10, 20, 30 }, { 20, 40, 60 } }, r:totable())
    assert.are.same({ { 9, 19, 29 }, { 8, 18, 28 } }, (row - col):totable())
  end)

  it("[4, 1, 3] with [2, 1]", function()
    local a = wick.arange(12):view(4, 1, 3)
    local b = wick.tensor({ { 0 }, { 100 } })
    local r = a + b
    assert.are.same({ 4, 2, 3 }, r:size())
    assert.are.equal(100 + 11, r[4][2][3]:item())
    assert.are.equal(3, r[2][1][1]:item())
  end)

  it("0-dim tensors broadcast against anything", function()
    local s = wick.tensor(10)
    local m = wick.tensor({ { 1, 2 }, { 3, 4 } })
    assert.are.same({ { 11, 12 }, { 13, 14 } }, (m + s):totable())
    assert.are.same({ { 9, 8 }, { 7, 6 } }, (s - m):totable())
    local z = s * wick.tensor(3)
    assert.are.equal(0, z:dim())
    assert.are.equal(30, z:item())
  end)

  it("with a size-0 dimension", function()
    local e = wick.zeros(0, 3)
    local r = e + wick.ones(3)
    assert.are.same({ 0, 3 }, r:size())
    assert.are.equal(0, r:numel())
  end)

  it("a size mismatch names both shapes", function()
    local err = error_of(function() return wick.ones(2, 3) + wick.ones(4) end)
    assert_contains(err, "[2, 3] vs [4]")
    err = error_of(function() return wick.ones(4):mul(wick.ones(2, 3)) end)
    assert_contains(err, "[4] vs [2, 3]")
    assert_contains(err, "mul")
    err = error_of(function() return wick.ones(2, 3):eq(wick.ones(3, 2)) end)
    assert_contains(err, "[2, 3] vs [3, 2]")
  end)
end)

describe("non-contiguous inputs", function()
  local m = wick.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })

  it("transposed views", function()
    local tt = m:t()
    assert.is_false(tt:is_contiguous())
    assert.are.same({ { 2, 5 }, { 3, 6 }, { 4, 7 } }, (tt + 1):totable())
    assert.are.same({ { 2, 8 }, { 4, 10 }, { 6, 12 } }, (tt + tt):totable())
    local sq = wick.tensor({ { 1, 2 }, { 3, 4 } })
    assert.are.same({ { 2, 5 }, { 5, 8 } }, (sq + sq:t()):totable())
    assert.are.same({ { 1, 6 }, { 6, 16 } }, (sq * sq:t()):totable())
    assert_close(sq:t():exp():log():totable(), { { 1, 3 }, { 2, 4 } })
  end)

  it("narrowed views", function()
    local n = m:narrow(2, 2, 2)
    assert.is_false(n:is_contiguous())
    assert.are.same({ { 20, 30 }, { 50, 60 } }, (n * 10):totable())
    assert.are.same({ { 4, 6 }, { 10, 12 } }, (n + n):totable())
    assert.are.same({ { 2, 3 }, { 5, 6 } }, n:maximum(wick.ones(2, 2)):totable())
    assert.are.same({ { false, true }, { true, true } }, n:gt(2):totable())
  end)

  it("expanded views", function()
    local e = wick.tensor({ 1, 2 }):expand(3, 2)
    assert.are.same({ 3, 2 }, e:size())
    assert.are.same({ { 2, 3 }, { 2, 3 }, { 2, 3 } }, (e + 1):totable())
    local c = wick.tensor({ { 1 }, { 2 }, { 3 } }):expand(3, 2)
    assert.are.same({ { 2, 3 }, { 3, 4 }, { 4, 5 } }, (e + c):totable())
    assert.are.same({ { -1, -2 }, { -1, -2 }, { -1, -2 } }, e:neg():totable())
  end)

  it("in place into a non-contiguous view", function()
    local base = wick.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })
    base:t():mul_(wick.tensor({ 10, 100 }))
    assert.are.same({ { 10, 20, 30 }, { 400, 500, 600 } }, base:totable())
    local b2 = wick.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })
    b2:narrow(2, 2, 2):add_(b2:narrow(2, 1, 2):clone())
    assert.are.same({ { 1, 3, 5 }, { 4, 9, 11 } }, b2:totable())
  end)

  it("large non-contiguous inputs (threaded path)", function()
    local big = wick.arange(300 * 400):view(300, 400)
    local r = big:t() * 2
    assert.are.same({ 400, 300 }, r:size())
    assert.are.equal(2 * (5 * 400 + 7), r[8][6]:item())
    assert.are.equal(2 * (299 * 400 + 399), r[400][300]:item())
    local s = big + big:t():t()
    assert.are.equal(2 * (123 * 400 + 45), s[124][46]:item())
  end)
end)

describe("type promotion", function()
  local function T(values, dtype) return wick.tensor(values, { dtype = dtype }) end

  it("int64 + float32 -> float32", function()
    local r = T({ 1, 2 }, "int64") + T({ 0.5, 0.25 }, "float32")
    assert.are.equal("float32", r.dtype)
    assert.are.same({ 1.5, 2.25 }, r:totable())
  end)

  it("int32 + int64 -> int64", function()
    local r = T({ 1, 2 }, "int32") + T({ 2 ^ 40, 3 }, "int64")
    assert.are.equal("int64", r.dtype)
    assert.are.same({ 2 ^ 40 + 1, 5 }, r:totable())
  end)

  it("int tensor + 2 stays int; int tensor + 2.5 -> float32", function()
    local i = T({ 1, 2 }, "int64")
    assert.are.equal("int64", (i + 2).dtype)
    assert.are.same({ 3, 4 }, (i + 2):totable())
    assert.are.equal("int32", (T({ 1 }, "int32") * 2).dtype)
    assert.are.equal("uint8", (T({ 1 }, "uint8") + 1).dtype)
    local f = i + 2.5
    assert.are.equal("float32", f.dtype)
    assert.are.same({ 3.5, 4.5 }, f:totable())
    assert.are.equal("float32", (2.5 - i).dtype)
    assert.are.equal("int64", (2 - i).dtype)
    assert.are.same({ 1, 0 }, (2 - i):totable())
  end)

  it("int / int -> float32 (true division)", function()
    local r = T({ 7, -7 }, "int64") / T({ 2, 2 }, "int64")
    assert.are.equal("float32", r.dtype)
    assert.are.same({ 3.5, -3.5 }, r:totable())
    assert.are.equal("float32", (T({ 1 }, "int32") / 2).dtype)
    assert.are.same({ 0.5 }, (1 / T({ 2 }, "int64")):totable())
  end)

  it("float32 + float64 -> float64", function()
    local r = T({ 1 }, "float32") + T({ 0.1 }, "float64")
    assert.are.equal("float64", r.dtype)
    assert.are.equal(1 + 0.1, r[1]:item())
  end)

  it("bool + bool stays bool (logical or), bool + number promotes", function()
    local r = T({ true, false, false }, "bool") + T({ true, true, false }, "bool")
    assert.are.equal("bool", r.dtype)
    assert.are.same({ true, true, false }, r:totable())
    local m = T({ true, false }, "bool") * T({ true, true }, "bool")
    assert.are.same({ true, false }, m:totable())
    local n = T({ true, false }, "bool") + 1
    assert.are.equal("int64", n.dtype)
    assert.are.same({ 2, 1 }, n:totable())
    assert.are.equal("float32", (T({ true }, "bool") + 0.5).dtype)
    assert.are.equal("int32", (T({ true }, "bool") + T({ 1 }, "int32")).dtype)
  end)

  it("bool - bool raises, like PyTorch", function()
    assert_contains(error_of(function() return T({ true }, "bool") - T({ true }, "bool") end), "bool")
  end)

  it("uint8 wraps around: 250 + 10 = 4", function()
    local r = T({ 250 }, "uint8") + T({ 10 }, "uint8")
    assert.are.equal("uint8", r.dtype)
    assert.are.same({ 4 }, r:totable())
    assert.are.same({ 4 }, (T({ 250 }, "uint8") + 10):totable())
    assert.are.same({ 246 }, (T({ 0 }, "uint8") - 10):totable())
    local u = T({ 250 }, "uint8")
    u:add_(10)
    assert.are.same({ 4 }, u:totable())
  end)

  it("uint8 + int32 -> int32 without wrapping", function()
    local r = T({ 250 }, "uint8") + T({ 10 }, "int32")
    assert.are.equal("int32", r.dtype)
    assert.are.same({ 260 }, r:totable())
  end)

  it("int32 overflow wraps like PyTorch", function()
    local r = T({ 2147483647 }, "int32") + 1
    assert.are.equal("int32", r.dtype)
    assert.are.same({ -2147483648 }, r:totable())
  end)

  it("float16 results", function()
    local h = T({ 1.5, 2 }, "float16")
    assert.are.equal("float16", (h + h).dtype)
    assert.are.same({ 3, 4 }, (h + h):totable())
    assert.are.equal("float16", (h * 2).dtype)
    assert.are.equal("float16", (h + 0.5).dtype)
    assert.are.equal("float16", (h + T({ 1, 2 }, "int64")).dtype)
    assert.are.equal("float32", (h + T({ 1, 2 }, "float32")).dtype)
    assert.are.equal("float32", (h + T({ 1, 2 }, "bfloat16")).dtype)
    assert.are.equal("float16", h:exp().dtype)
    assert_close(h:exp():totable(), { math.exp(1.5), math.exp(2) }, 1e-3)
  end)

  it("float16 overflow gives inf", function()
    local r = T({ 65504 }, "float16") * 2
    assert.are.equal(math.huge, r[1]:item())
  end)

  it("bfloat16 results", function()
    local b = T({ 1, 2 }, "bfloat16")
    assert.are.equal("bfloat16", (b * 3).dtype)
    assert.are.same({ 3, 6 }, (b * 3):totable())
    assert.are.equal("bfloat16", (b + T({ 1 }, "int32")).dtype)
  end)

  it("0-dim tensors and numbers rank below dimensioned tensors of the same category", function()
    local f32 = T({ 1, 2 }, "float32")
    assert.are.equal("float32", (f32 + wick.tensor(1, { dtype = "float64" })).dtype)
    local i32 = T({ 1, 2 }, "int32")
    assert.are.equal("int32", (i32 + wick.tensor(1, { dtype = "int64" })).dtype)
    -- a higher-category 0-dim tensor wins with its own dtype
    assert.are.equal("float64", (i32 + wick.tensor(1.5, { dtype = "float64" })).dtype)
    assert.are.equal("float32", (T({ 1 }, "int64") + wick.tensor(1.5)).dtype)
    -- two 0-dim tensors promote normally
    assert.are.equal("float64", (wick.tensor(1) + wick.tensor(1, { dtype = "float64" })).dtype)
  end)

  it("comparisons promote before comparing", function()
    local big = T({ 2 ^ 53 + 2 }, "int64")
    assert.are.same({ false }, big:eq(T({ 2 ^ 53 }, "int64")):totable())
    assert.are.same({ true }, big:gt(T({ 2 ^ 53 }, "int64")):totable())
  end)

  it("int64 arithmetic beyond 2^53 stays exact", function()
    local big = T({ 2 ^ 53 }, "int64")
    local r = big + 1 - 1 -- no rounding through doubles
    assert.are.same({ 2 ^ 53 }, r:totable())
    local s = (big + 1) - big
    assert.are.same({ 1 }, s:totable())
  end)
end)

describe("in-place ops on overlapping views", function()
  it("read the input as it was before the write, like a fresh copy", function()
    local wick = require("wick")
    local x = wick.tensor({1, 2, 3, 4, 5})
    x:narrow(1, 2, 4):add_(x:narrow(1, 1, 4)) -- x[2..5] += x[1..4]
    assert.are.same({1, 3, 5, 7, 9}, x:totable())
    local m = wick.tensor({{1, 2}, {3, 4}})
    m:add_(m:t())
    assert.are.same({{2, 5}, {5, 8}}, m:totable())
  end)
end)
