-- wick.einx against the einx package (0.4.3 over PyTorch 2.11; values recorded there, with its
-- 0-based indices + 1 here): the calls lucidrains' vector-quantize-pytorch makes
local wick = require("wick")
local support = require("spec.support")
local einx = wick.einx
local F64 = { dtype = "float64" }

describe("wick.einx", function()
  local x = wick.arange(0, 24, F64):view(2, 3, 4)
  it("reductions over [bracketed] axes, or the axes the output lacks", function()
    assert.are.same({ { 12, 15, 18, 21 }, { 48, 51, 54, 57 } }, einx.sum("b [n] d", x):totable())
    assert.are.same({ { 4, 16 }, { 5, 17 }, { 6, 18 }, { 7, 19 } }, einx.mean("b n d -> d b", x):totable())
    local l = einx.logsumexp("b [n]", wick.tensor({ { 0, 1 }, { 2, 3 } }, F64)):totable()
    assert.is_true(math.abs(l[1] - 1.3132616875182228) < 1e-15 and math.abs(l[2] - 3.313261687518223) < 1e-15)
    assert.are.same({ 8, 9, 10 }, einx.max("b [n] d", x)[{ 1, { 1, 3 } }]:totable())
  end)
  it("elementwise ops align their operands by axis name, the output implicit or after ->", function()
    local w = wick.tensor({ 1, 2, 3, 4 }, F64)
    assert.are.same({ 42, 54, 66 }, einx.multiply("b n d, d -> b d n", x, w)[{ 2, 3 }]:totable())
    local y = wick.tensor({ 10, 20, 30 }, F64)
    assert.are.same({ { 10, 21, 32 }, { 13, 24, 35 } }, einx.add("a b, b", wick.arange(0, 6, F64):view(2, 3), y):totable())
    -- vector-quantize-pytorch: einx.where('b n, b n ..., -> b n ...', mask, embed_ind, -1)
    local mask = wick.tensor({ { true, false } })
    assert.are.same({ { { 1, 1, 1 }, { -1, -1, -1 } } }, einx.where("b n, b n ..., -> b n ...", mask, wick.ones(1, 2, 3), -1):totable())
    local g = wick.ones(2, 3, { requires_grad = true })
    einx.multiply("a b, b", g, wick.tensor({ 1, 2, 3 })):sum():backward()
    assert.are.same({ { 1, 2, 3 }, { 1, 2, 3 } }, g.grad:totable())
  end)
  it("get_at takes the bracketed axis at 1-based indices, the other axes by name", function()
    local cb = wick.arange(0, 24, F64):view(2, 4, 3)
    local idx = wick.tensor({ { { 1, 0 }, { 3, 2 } } }, { dtype = "int64" }) + 1
    assert.are.same({ { { { 3, 4, 5 }, { 9, 10, 11 } } }, { { { 12, 13, 14 }, { 18, 19, 20 } } } },
      einx.get_at("q [c] d, b n q -> q b n d", cb, idx):totable())
    local e = wick.arange(0, 12, F64):view(4, 3)
    local i = wick.tensor({ { 3, 0 }, { 1, 1 } }, { dtype = "int64" }) + 1
    assert.are.same({ { { 9, 10, 11 }, { 0, 1, 2 } }, { { 3, 4, 5 }, { 3, 4, 5 } } }, einx.get_at("[n] d, b k -> b k d", e, i):totable())
  end)
  it("bad patterns are errors naming einx's function", function()
    support.assert_error_has(function() return einx.sum("b [n d", x) end, "einx.sum: unbalanced brackets")
    support.assert_error_has(function() return einx.add("a b, b", x, wick.ones(4)) end, "does not match 'a b'")
    support.assert_error_has(function() return einx.add("a, b", wick.ones(2), wick.ones(3)) end, "give them")
    support.assert_error_has(function() return einx.get_at("q c d, b n q -> q b n d", x, x) end, "[brackets]")
    support.assert_error_has(function() return einx.add("a b c", x) end, "einx.add: takes 2 operands, got 1")
    support.assert_error_has(function() return einx.add("a b c, d -> a", x, wick.ones(2)) end, "the axis 'b' of an input is not in the output")
    support.assert_error_has(function() return einx.nonexistent end, "wick.einx has no 'nonexistent'")
  end)
  it("an axis has one size in every operand: a size 1 is einx's AxisSizeError, not a broadcast (native-sparse-attention)", function()
    -- einx 0.4.3: einx.add("b h w n d, h n d", randn(2,2,3,4,8), randn(2,1,8)) raises AxisSizeError
    support.assert_error_has(function() return einx.add("b h w n d, h n d", wick.randn(2, 2, 3, 4, 8), wick.randn(2, 1, 8)) end,
      "einx.add: the axis 'n' has size 4 in operand 1 ([2, 2, 3, 4, 8]) and 1 in operand 2 ([2, 1, 8])")
    support.assert_error_has(function() return einx.multiply("b i sel, b i sel d -> b i sel d", wick.randn(2, 3, 1), wick.randn(2, 3, 4, 5)) end,
      "the axis 'sel' has size 1 in operand 1")
    -- and "..." stands for as many dims in each operand (einx's RankError)
    support.assert_error_has(function() return einx.add("b ..., b ...", wick.randn(2, 3, 4), wick.randn(2, 4)) end,
      "'...' stands for 2 dim(s) in operand 1 ([2, 3, 4]) and 1 in operand 2 ([2, 4])")
    support.assert_error_has(function() return einx.get_at("b [i], b k -> b k", wick.randn(2, 4), wick.ones(3, 3, { dtype = "int64" })) end,
      "einx.get_at: the axis 'b' has size 2 in operand 1")
    assert.are.same({ 2, 3, 4 }, einx.add("b n d, n d", wick.ones(2, 3, 4), wick.ones(3, 4)):size():totable())
  end)
end)
