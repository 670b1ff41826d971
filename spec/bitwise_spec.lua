-- The bitwise ops (wick.h's BITWISE_* and shifts, scalar_math.h): PyTorch's
-- values for every integer dtype and bool, the widths of the narrow dtypes,
-- shifts past the width, and the dtype errors.
local wick = require("wick")

local function ints(v, dtype) return wick.tensor(v, { dtype = dtype or "int64" }) end
local function same(got, want, dtype)
  assert.are.same(want, got:totable())
  if dtype then assert.are.equal(dtype, got.dtype) end
end

describe("bitwise ops", function()
  local a, b = ints({ 12, -7, 255, 0 }), ints({ 10, 3, 1, 5 })

  it("and, or, xor, not on int64: two's complement, as Python's &, |, ^, ~", function()
    same(a:bitwise_and(b), { 8, 1, 1, 0 }, "int64")
    same(a:bitwise_or(b), { 14, -5, 255, 5 })
    same(a:bitwise_xor(b), { 6, -6, 254, 5 })
    same(a:bitwise_not(), { -13, 6, -256, -1 })
    same(wick.bitwise_and(a, 6), { 4, 0, 6, 0 })
    same(wick.bitwise_or(b, 3), { 11, 3, 3, 7 })
  end)

  it("shifts: by a number or elementwise; past the width gives 0 (-1 for a negative value shifted right)", function()
    same(a:bitwise_left_shift(2), { 48, -28, 1020, 0 })
    same(a:bitwise_right_shift(1), { 6, -4, 127, 0 }) -- arithmetic: -7 >> 1 = -4
    same(a:bitwise_left_shift(b), { 12288, -56, 510, 0 })
    same(ints({ 1, -1, 5 }):bitwise_left_shift(ints({ 64, 70, -1 })), { 0, 0, 0 })
    same(ints({ 1, -1, 5 }):bitwise_right_shift(ints({ 64, 70, -1 })), { 0, -1, 0 })
  end)

  it("narrow dtypes keep their own widths", function()
    local u = ints({ 200, 1 }, "uint8")
    same(u:bitwise_left_shift(1), { 144, 2 }, "uint8")
    same(u:bitwise_not(), { 55, 254 }, "uint8")
    same(u:bitwise_right_shift(9), { 0, 0 })
    local i = ints({ -1, 3 }, "int32")
    same(i:bitwise_left_shift(31), { -2147483648, -2147483648 }, "int32")
    same(i:bitwise_right_shift(40), { -1, 0 })
    same(i:bitwise_and(0xff), { 255, 3 }, "int32")
    same(i:bitwise_xor(ints({ 1, 1 })), { -2, 2 }, "int64") -- promotion as PyTorch's
  end)

  it("bool stays bool; ~ of a bool is its logical not", function()
    local m1, m2 = wick.tensor({ true, false, true }), wick.tensor({ true, true, false })
    same(m1:bitwise_and(m2), { true, false, false }, "bool")
    same(m1:bitwise_or(m2), { true, true, true }, "bool")
    same(m1:bitwise_xor(m2), { false, true, true }, "bool")
    same(m1:bitwise_not(), { false, true, false }, "bool")
    same(wick.bitwise_not(m2), { false, false, true })
    same(m1:bitwise_and(1), { 1, 0, 1 }, "int64") -- a number of a higher category promotes
  end)

  it("in place", function()
    local c = a:clone()
    assert.are.equal(c, c:bitwise_xor_(1))
    same(c, { 13, -8, 254, 1 })
    local m = wick.tensor({ true, false })
    m:bitwise_not_()
    same(m, { false, true }, "bool")
    local v = ints({ 1, 2, 3, 4 })
    v:narrow(1, 2, 2):bitwise_left_shift_(4) -- through a view
    same(v, { 1, 32, 48, 4 })
  end)

  it("empty and 0-dim tensors", function()
    same(ints({}):bitwise_and(ints({})), {})
    assert.are.equal(6, ints(7):bitwise_and(ints({ 14 })):sum():item())
  end)

  it("refuses floating tensors and shifts of bool, naming the op", function()
    local ok, err = pcall(function() return wick.randn(3):bitwise_and(1) end)
    assert.is_false(ok)
    assert.matches("bitwise_and: only for integer and bool tensors, got float32", err, 1, true)
    ok, err = pcall(function() return a:bitwise_or(2.5) end)
    assert.is_false(ok)
    assert.matches("bitwise_or: only for integer and bool tensors", err, 1, true)
    ok, err = pcall(function() return wick.tensor({ 1.5 }):bitwise_not() end)
    assert.is_false(ok)
    assert.matches("bitwise_not", err, 1, true)
    ok, err = pcall(function() return wick.tensor({ true }):bitwise_left_shift(wick.tensor({ true })) end)
    assert.is_false(ok)
    assert.matches("bitwise_left_shift: not implemented for bool tensors", err, 1, true)
    ok, err = pcall(function() local t = ints({ 1 }); t:bitwise_and_(1.5) end)
    assert.is_false(ok)
  end)
end)
