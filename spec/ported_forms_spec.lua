-- PyTorch forms that ported programs reached for (RL, probabilistic models,
-- LLM blocks, diffusion): cummax/cummin, logcumsumexp, isin, unflatten,
-- addbmm and the in-place products, _foreach_*, as_tensor,
-- set_default_tensor_type, triangular_solve, nn.Module(), wick.linalg's
-- unknown names. Expected values are PyTorch 2.15's (1-based indices here).
local wick = require("wick")
local support = require("spec.support")

local F64 = { dtype = "float64" }
local nan = 0 / 0

local function same_nan(got, want)
  for i = 1, #want do
    if type(want[i]) == "table" then same_nan(got[i], want[i])
    elseif want[i] ~= want[i] then assert.is_true(got[i] ~= got[i], "expected NaN at " .. i)
    else assert.are.equal(want[i], got[i]) end
  end
end

describe("ported forms", function()
  it("cummax and cummin: values and 1-based indices, later ties and NaN as PyTorch's", function()
    local x = wick.tensor({ { 1, 3, 2, 3, nan, 5, nan, 1 }, { -1, -2, -2, -5, 4, 4, 0, 0 } }, F64)
    local v, i = x:cummax(2)
    same_nan(v:totable(), { { 1, 3, 3, 3, nan, nan, nan, nan }, { -1, -1, -1, -1, 4, 4, 4, 4 } })
    assert.are.same({ { 1, 2, 2, 4, 5, 5, 7, 7 }, { 1, 1, 1, 1, 5, 6, 6, 6 } }, i:totable())
    v, i = wick.cummin(x, 2)
    same_nan(v:totable(), { { 1, 1, 1, 1, nan, nan, nan, nan }, { -1, -2, -2, -5, -5, -5, -5, -5 } })
    assert.are.same({ { 1, 1, 1, 1, 5, 5, 7, 7 }, { 1, 2, 3, 4, 4, 4, 4, 4 } }, i:totable())
    -- the gradient goes to the running maximum's element
    local y = wick.tensor({ 2, 1, 3 }, F64):requires_grad_()
    y:cummax(1):sum():backward()
    assert.are.same({ 2, 0, 1 }, y.grad:totable())
  end)

  it("logcumsumexp: log(cumsum(exp)) without overflow or underflow", function()
    local x = wick.tensor({ -1000, 0, 1000, -1e308 }, F64)
    assert.are.same({ -1000, 0, 1000, 1000 }, x:logcumsumexp(1):totable())
    local r = wick.randn(3, 9, F64)
    assert.is_true((wick.logcumsumexp(r, 2) - r:exp():cumsum(2):log()):abs():max():item() < 1e-14)
    local g = r:clone():requires_grad_()
    g:logcumsumexp(2):sum():backward()
    local want = r:clone():requires_grad_()
    want:exp():cumsum(2):log():sum():backward()
    assert.is_true((g.grad - want.grad):abs():max():item() < 1e-12)
  end)

  it("isin, unflatten, addbmm and the in-place products", function()
    assert.are.same({ false, true, false, true }, wick.isin(wick.tensor({ 1, 5, 3, 7 }), wick.tensor({ 5, 7, 9 })):totable())
    assert.are.same({ true, false }, wick.tensor({ 1.5, 2 }):isin(wick.tensor({ 2.0 }), { invert = true }):totable())
    assert.are.same({ 2, 3, 2, 4 }, wick.randn(2, 3, 8):unflatten(-1, { 2, -1 }):size())
    assert.has_error(function() wick.randn(2, 12):unflatten(2, { 5, -1 }) end)
    local t = wick.zeros(2, 2)
    assert.are.equal(t, t:addmm_(wick.ones(2, 3), wick.ones(3, 2), { beta = 1, alpha = -2 }))
    assert.are.same({ { -6, -6 }, { -6, -6 } }, t:totable())
    assert.are.same({ { 9, 9 }, { 9, 9 } }, wick.ones(2, 2):addbmm(wick.ones(2, 2, 4), wick.ones(2, 4, 2)):totable())
    local b = wick.tensor({ true, false })
    b:logical_not_()
    assert.are.same({ false, true }, b:totable())
  end)

  it("_foreach_ forms, as_tensor, set_default_tensor_type", function()
    local a, z = wick.ones(2), wick.zeros(2)
    assert.is_nil(wick._foreach_lerp_({ a }, { z }, 0.5))
    assert.are.same({ 0.5, 0.5 }, a:totable())
    local norms = wick._foreach_norm({ wick.ones(4), wick.ones(9) })
    assert.are.same({ 2, 3 }, { norms[1]:item(), norms[2]:item() })
    assert.has_error(function() wick._foreach_no_such_method({ a }) end, nil)
    local t = wick.ones(3)
    assert.are.equal(t, wick.as_tensor(t))
    assert.are.equal("float64", wick.as_tensor(t, "float64").dtype)
    assert.are.same({ 1, 2 }, wick.as_tensor({ 1, 2 }, { dtype = "int64" }):totable())
    wick.set_default_tensor_type(wick.DoubleTensor)
    local d = wick.zeros(1).dtype
    wick.set_default_tensor_type("torch.FloatTensor")
    assert.are.equal("float64", d)
    assert.are.equal("float32", wick.zeros(1).dtype)
  end)

  it("a number that overflows the dtype is an error, as PyTorch's (full, fill_, masked_fill, t[i] = v)", function()
    local msg = "value cannot be converted to type float without overflow"
    support.assert_error_has(function() wick.full({ 2, 2 }, wick.finfo("float64").min) end, msg)
    support.assert_error_has(function() wick.zeros(2):fill_(1e300) end, msg)
    support.assert_error_has(function() wick.zeros(2):masked_fill(wick.tensor({ true, false }), -1e300) end, msg)
    support.assert_error_has(function() local x = wick.zeros(3); x[1] = 1e39 end, msg)
    support.assert_error_has(function() wick.full({ 1 }, 2 ^ 63, { dtype = "int64" }) end, "type int64_t without overflow")
    support.assert_error_has(function() wick.full({ 1 }, 0 / 0, { dtype = "int32" }) end, "type int without overflow")
    support.assert_error_has(function() wick.full({ 1 }, 1e5, { dtype = "float16" }) end, "c10::Half without overflow")
    -- what fits: infinities and NaN in floats, the dtype's own extremes, negatives wrapping into uint8
    assert.are.same({ -math.huge }, wick.full({ 1 }, -math.huge):totable())
    assert.are.equal(wick.finfo("float32").min, wick.zeros(1):masked_fill(wick.tensor({ true }), wick.finfo("float32").min):item())
    assert.are.same({ 255 }, wick.full({ 1 }, -1, { dtype = "uint8" }):totable())
    assert.are.same({ 1e300 }, wick.full({ 1 }, 1e300, { dtype = "float64" }):totable())
  end)

  it("errors that say what to do: enable_gqa for fewer key heads, ':' for a module's method", function()
    local F = wick.nn.functional
    support.assert_error_has(function() F.scaled_dot_product_attention(wick.randn(1, 8, 4, 16), wick.randn(1, 2, 4, 16),
      wick.randn(1, 2, 4, 16)) end, "pass enable_gqa = true")
    local m = wick.nn.Linear(2, 2)
    support.assert_error_has(function() return m.forward(wick.ones(2)) end, "write m:forward(x)")
  end)

  it("triangular_solve, wick.linalg's unknown names, nn.Module()", function()
    local A = wick.tensor({ { 2, 1 }, { 0, 3 } }, F64)
    local b = wick.tensor({ { 4 }, { 6 } }, F64)
    local x, copy = wick.triangular_solve(b, A)
    assert.are.same({ { 1 }, { 2 } }, x:totable())
    assert.are.same(A:totable(), copy:totable())
    assert.is_false(rawequal(A, copy))
    support.assert_close(wick.triangular_solve(b, A, true, true):totable(), { { 2 }, { 4 / 3 } }, 1e-15)
    local ok, err = pcall(function() return wick.linalg.ldl_factor(A) end)
    assert.is_false(ok)
    assert.is_truthy(tostring(err):find("wick.linalg has no 'ldl_factor'", 1, true))
    local m = wick.nn.Module()
    m.block = wick.nn.Linear(2, 2)
    assert.are.equal(2, #m:parameters())
  end)
end)
