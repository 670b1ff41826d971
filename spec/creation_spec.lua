-- Creating tensors: wick.tensor, the size-taking constructors, the *_like
-- forms, the random generator, every dtype, and bad sizes.
local wick = require("wick")
local support = require("spec.support")
local error_of, assert_contains = support.error_of, support.assert_contains

local DTYPES = { "float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool" }

local function flatten(t, out)
  out = out or {}
  if type(t) ~= "table" then out[#out + 1] = t; return out end
  for _, v in ipairs(t) do flatten(v, out) end
  return out
end

describe("wick.tensor", function()
  it("builds a 1-D float32 tensor from numbers", function()
    local t = wick.tensor({ 1.5, -2, 3 })
    assert.are.equal("float32", t.dtype)
    assert.are.same({ 3 }, t:size())
    assert.are.same({ 1.5, -2, 3 }, t:totable())
  end)

  it("uses float32 even when every element is an integer", function()
    local t = wick.tensor({ 1, 2, 3 })
    assert.are.equal("float32", t.dtype)
    assert.is_true(t:is_floating_point())
    assert.are.equal(2, t[2]:item())
  end)

  it("gives the same dtypes and values on Lua 5.4 (integer subtype) as on LuaJIT", function()
    -- math.type exists from Lua 5.3 on; LuaJIT's numbers are all doubles
    local mtype = math.type or function() return "float" end
    assert.are.equal("float32", wick.tensor({ 1, 2 }).dtype)
    assert.are.equal("float32", wick.tensor(3).dtype)
    assert.are.equal("float32", wick.full({ 2 }, 7).dtype)
    local i = wick.tensor({ 1, 2 }, { dtype = "int64" })
    assert.are.equal("int64", (i + 1).dtype)
    assert.are.equal("float32", (i + 1.5).dtype)
    -- values compare equal in every flavour; on 5.3+ integer dtypes, sizes and
    -- counts come back with the integer subtype, floating dtypes as floats
    assert.are.equal(3, i:sum():item())
    assert.are.equal(5, wick.tensor({ 5 }):item())
    assert.are.equal(3, wick.ones(2, 3):size(2))
    if math.type then
      assert.are.equal("integer", mtype(i:sum():item()))
      assert.are.equal("integer", mtype(i:totable()[1]))
      assert.are.equal("integer", mtype(wick.ones(2, 3):size(2)))
      assert.are.equal("integer", mtype(wick.ones(2, 3):numel()))
      assert.are.equal("float", mtype(wick.tensor({ 5 }):item()))
    end
  end)

  it("builds nested tables into matching shapes", function()
    local t = wick.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })
    assert.are.same({ 2, 3 }, t:size())
    assert.are.same({ { 1, 2, 3 }, { 4, 5, 6 } }, t:totable())
    local u = wick.tensor({ { { 1 }, { 2 } }, { { 3 }, { 4 } }, { { 5 }, { 6 } } })
    assert.are.same({ 3, 2, 1 }, u:size())
    assert.are.equal(6, u[3][2][1]:item())
    assert.are.equal(3, u:dim())
  end)

  it("turns a number into a 0-dim tensor", function()
    local t = wick.tensor(3.25)
    assert.are.equal(0, t:dim())
    assert.are.same({}, t:size())
    assert.are.equal(3.25, t:item())
    assert.are.equal(1, t:numel())
  end)

  it("turns booleans into a bool tensor", function()
    local t = wick.tensor({ true, false, true })
    assert.are.equal("bool", t.dtype)
    assert.are.same({ true, false, true }, t:totable())
    local s = wick.tensor(false)
    assert.are.equal("bool", s.dtype)
    assert.are.equal(false, s:item())
  end)

  it("takes a dtype option", function()
    local t = wick.tensor({ 1, 2 }, { dtype = "int64" })
    assert.are.equal("int64", t.dtype)
    assert.are.same({ 1, 2 }, t:totable())
    local b = wick.tensor({ true, false }, { dtype = "float64" })
    assert.are.equal("float64", b.dtype)
    assert.are.same({ 1, 0 }, b:totable())
    local f = wick.tensor({ 1.75, -2.5 }, { dtype = "int32" })
    assert.are.same({ 1, -2 }, f:totable()) -- truncation toward zero, like PyTorch
  end)

  it("copies a tensor argument instead of sharing it", function()
    local a = wick.tensor({ 1, 2, 3 })
    local b = wick.tensor(a)
    assert.is_false(rawequal(a, b))
    assert.is_false(a:is_same_storage(b))
    b[1] = 10
    assert.are.same({ 1, 2, 3 }, a:totable())
    assert.are.same({ 10, 2, 3 }, b:totable())
  end)

  it("builds empty tensors from empty tables", function()
    local t = wick.tensor({})
    assert.are.same({ 0 }, t:size())
    assert.are.equal(0, t:numel())
    assert.are.same({}, t:totable())
    local u = wick.tensor({ {}, {} })
    assert.are.same({ 2, 0 }, u:size())
  end)

  it("raises on a ragged table, naming the position", function()
    local err = error_of(wick.tensor, { { 1, 2 }, { 3 } })
    assert_contains(err, "ragged")
    assert_contains(err, "[2]")
    err = error_of(wick.tensor, { { 1, 2 }, { 3, 4 }, 5 })
    assert_contains(err, "ragged")
    assert_contains(err, "[3]")
    err = error_of(wick.tensor, { 1, { 2 } })
    assert_contains(err, "[2]")
    err = error_of(wick.tensor, { { { 1, 2 }, { 3, 4 } }, { { 5, 6 }, { 7 } } })
    assert_contains(err, "[2][2]")
  end)

  it("raises on elements that are not numbers or booleans", function()
    local err = error_of(wick.tensor, { 1, "two", 3 })
    assert_contains(err, "string")
    assert_contains(err, "[2]")
    err = error_of(wick.tensor, { { 1, 2 }, { 3, function() end } })
    assert_contains(err, "function")
    assert_contains(err, "[2][2]")
    err = error_of(wick.tensor, "hello")
    assert_contains(err, "string")
    err = error_of(wick.tensor, { 1, wick.tensor({ 2, 3 }) })
    assert_contains(err, "only one-element tensors can be converted to numbers, found one of 2 elements at [2]")
  end)

  it("takes one-element tensors as numbers (torch.tensor([t0, n]))", function()
    assert.are.same({ 3, 4 }, wick.tensor({ wick.tensor(3), 4 }):totable())
    assert.are.same({ { 1, 2 }, { 3, 5 } }, wick.tensor({ { wick.ones(1), 2 }, { 3, wick.tensor({ { 5 } }) } }):totable())
    assert.are.equal("bool", wick.tensor({ wick.tensor(true), false }).dtype)
    assert.are.equal("float64", wick.tensor({ wick.tensor(0.1, { dtype = "float64" }) }, { dtype = "float64" }).dtype)
  end)

  it("raises on an unknown dtype or option", function()
    local err = error_of(wick.tensor, { 1 }, { dtype = "float128" })
    assert_contains(err, "float128")
    err = error_of(wick.tensor, { 1 }, { colour = "red" })
    assert_contains(err, "colour")
  end)
end)

describe("size-taking constructors", function()
  it("zeros and ones take sizes as numbers or one table", function()
    local a = wick.zeros(2, 3)
    local b = wick.zeros({ 2, 3 })
    assert.are.same({ 2, 3 }, a:size())
    assert.are.same({ 2, 3 }, b:size())
    assert.are.same({ { 0, 0, 0 }, { 0, 0, 0 } }, a:totable())
    assert.are.same({ { 1, 1 }, { 1, 1 }, { 1, 1 } }, wick.ones(3, 2):totable())
    assert.are.same({ { 1, 1 }, { 1, 1 }, { 1, 1 } }, wick.ones({ 3, 2 }):totable())
    assert.are.equal("float32", a.dtype)
    assert.are.equal("cpu", a.device.type)
  end)

  it("take a trailing options table after numbers or a size table", function()
    local a = wick.zeros(2, 3, { dtype = "float64" })
    assert.are.equal("float64", a.dtype)
    assert.are.same({ 2, 3 }, a:size())
    local b = wick.ones({ 4 }, { dtype = "int32" })
    assert.are.equal("int32", b.dtype)
    assert.are.same({ 1, 1, 1, 1 }, b:totable())
    local c = wick.ones(2, { dtype = "bool", device = "cpu" })
    assert.are.same({ true, true }, c:totable())
    local d = wick.empty(5, { dtype = "uint8" })
    assert.are.equal("uint8", d.dtype)
    assert.are.same({ 5 }, d:size())
  end)

  it("makes a 0-dim tensor with no sizes", function()
    local z = wick.zeros()
    assert.are.equal(0, z:dim())
    assert.are.equal(0, z:item())
    assert.are.equal(1, wick.ones({}):item())
  end)

  it("makes tensors with a zero-sized dimension", function()
    local z = wick.zeros(3, 0)
    assert.are.same({ 3, 0 }, z:size())
    assert.are.equal(0, z:numel())
    assert.are.same({ {}, {}, {} }, z:totable())
    local o = wick.ones(0)
    assert.are.same({}, o:totable())
  end)

  it("empty has the right shape and dtype", function()
    local e = wick.empty(3, 4, { dtype = "float64" })
    assert.are.same({ 3, 4 }, e:size())
    assert.are.equal("float64", e.dtype)
    assert.are.equal(12, e:numel())
    assert.is_true(e:is_contiguous())
  end)

  it("full fills with a value and follows dtype rules", function()
    local f = wick.full({ 2, 2 }, 7.5)
    assert.are.equal("float32", f.dtype)
    assert.are.same({ { 7.5, 7.5 }, { 7.5, 7.5 } }, f:totable())
    local i = wick.full({ 3 }, 7, { dtype = "int64" })
    assert.are.equal("int64", i.dtype)
    assert.are.same({ 7, 7, 7 }, i:totable())
    local b = wick.full({ 2 }, true)
    assert.are.equal("bool", b.dtype)
    assert.are.same({ true, true }, b:totable())
    local n = wick.full({ 2 }, -3)
    assert.are.equal("float32", n.dtype) -- a Lua integer is still the default dtype
    assert.are.same({ -3, -3 }, n:totable())
  end)

  it("full rejects a missing size table or fill value", function()
    assert_contains(error_of(wick.full, 3, 1), "size table")
    assert_contains(error_of(wick.full, { 3 }, "x"), "fill value")
  end)

  it("arange excludes stop, like PyTorch", function()
    assert.are.same({ 0, 1, 2, 3, 4 }, wick.arange(5):totable())
    assert.are.same({ 2, 3, 4 }, wick.arange(2, 5):totable())
    assert.are.same({ 1, 3, 5 }, wick.arange(1, 7, 2):totable())
    assert.are.same({ 5, 4, 3, 2 }, wick.arange(5, 1, -1):totable())
    assert.are.same({ 0, 0.25, 0.5, 0.75 }, wick.arange(0, 1, 0.25):totable())
    assert.are.equal("float32", wick.arange(3).dtype)
    local i = wick.arange(1, 4, { dtype = "int64" })
    assert.are.equal("int64", i.dtype)
    assert.are.same({ 1, 2, 3 }, i:totable())
    assert.are.same({ 0 }, wick.arange(0):size())
  end)

  it("arange rejects a zero step and inconsistent bounds", function()
    assert_contains(error_of(wick.arange, 0, 5, 0), "step")
    assert_contains(error_of(wick.arange, 5, 0, 1), "inconsistent")
    assert_contains(error_of(wick.arange, "a"), "number")
  end)

  it("eye makes identity and rectangular matrices", function()
    assert.are.same({ { 1, 0, 0 }, { 0, 1, 0 }, { 0, 0, 1 } }, wick.eye(3):totable())
    assert.are.same({ { 1, 0, 0 }, { 0, 1, 0 } }, wick.eye(2, 3):totable())
    assert.are.same({ { 1, 0 }, { 0, 1 }, { 0, 0 } }, wick.eye(3, 2):totable())
    local e = wick.eye(2, { dtype = "int64" })
    assert.are.equal("int64", e.dtype)
    assert.are.same({ { 1, 0 }, { 0, 1 } }, e:totable())
    assert.has_error(function() wick.eye(-1) end)
  end)
end)

describe("*_like constructors", function()
  local src = wick.tensor({ { 1, 2, 3 }, { 4, 5, 6 } }, { dtype = "int32" })

  it("zeros_like / ones_like keep shape and dtype", function()
    local z = wick.zeros_like(src)
    assert.are.same({ 2, 3 }, z:size())
    assert.are.equal("int32", z.dtype)
    assert.are.same({ { 0, 0, 0 }, { 0, 0, 0 } }, z:totable())
    local o = wick.ones_like(src)
    assert.are.same({ { 1, 1, 1 }, { 1, 1, 1 } }, o:totable())
    assert.are.equal("int32", o.dtype)
    assert.is_false(o:is_same_storage(src))
  end)

  it("full_like fills with the value in the source dtype", function()
    local f = wick.full_like(src, 9)
    assert.are.equal("int32", f.dtype)
    assert.are.same({ { 9, 9, 9 }, { 9, 9, 9 } }, f:totable())
    local g = wick.full_like(src, 2.5, { dtype = "float64" })
    assert.are.equal("float64", g.dtype)
    assert.are.same({ { 2.5, 2.5, 2.5 }, { 2.5, 2.5, 2.5 } }, g:totable())
  end)

  it("empty_like, rand_like and randn_like keep the shape; options override the dtype", function()
    local e = wick.empty_like(src)
    assert.are.same({ 2, 3 }, e:size())
    assert.are.equal("int32", e.dtype)
    local f = wick.ones(4, 5, { dtype = "float64" })
    local r = wick.rand_like(f)
    assert.are.same({ 4, 5 }, r:size())
    assert.are.equal("float64", r.dtype)
    local n = wick.randn_like(f, { dtype = "float32" })
    assert.are.equal("float32", n.dtype)
    assert.are.same({ 4, 5 }, n:size())
    local z = wick.zeros_like(src, { dtype = "float16" })
    assert.are.equal("float16", z.dtype)
  end)

  it("rand_like of an integer tensor raises, like PyTorch", function()
    assert_contains(error_of(wick.rand_like, src), "floating")
  end)

  it("raise when the argument is not a tensor", function()
    assert_contains(error_of(wick.zeros_like, { 1, 2 }), "expected a tensor")
  end)
end)

describe("the random generator", function()
  it("manual_seed makes rand repeatable", function()
    wick.manual_seed(1234)
    local a = wick.rand(50):totable()
    wick.manual_seed(1234)
    local b = wick.rand(50):totable()
    assert.are.same(a, b)
  end)

  it("randn in float32 (its vectorised kernel) is the float64 draw to float precision, N(0, 1)", function()
    for _, seed in ipairs({ 1, 7 }) do
      wick.manual_seed(seed)
      local a = wick.randn(200003) -- a tail shorter than the 16 lanes
      wick.manual_seed(seed)
      local b = wick.randn(200003, { dtype = "float64" })
      assert.is_true((a:double() - b):abs():max():item() < 4e-6)
      assert.is_true(math.abs(a:mean():item()) < 0.01)
      assert.is_true(math.abs(a:std():item() - 1) < 0.01)
    end
  end)

  it("manual_seed makes randn repeatable", function()
    wick.manual_seed(99)
    local a = wick.randn(7, 3):totable()
    wick.manual_seed(99)
    local b = wick.randn(7, 3):totable()
    assert.are.same(a, b)
  end)

  it("different seeds give different numbers", function()
    wick.manual_seed(1)
    local a = wick.rand(20):totable()
    wick.manual_seed(2)
    local b = wick.rand(20):totable()
    assert.are_not.same(a, b)
    wick.manual_seed(1)
    local c = wick.randn(20):totable()
    wick.manual_seed(2)
    local d = wick.randn(20):totable()
    assert.are_not.same(c, d)
  end)

  it("successive draws differ", function()
    wick.manual_seed(5)
    local a = wick.rand(10):totable()
    local b = wick.rand(10):totable()
    assert.are_not.same(a, b)
  end)

  it("get_rng_state / set_rng_state restore the stream", function()
    wick.manual_seed(42)
    wick.rand(13) -- move the stream somewhere
    local state = wick.get_rng_state()
    local a = wick.rand(25):totable()
    local an = wick.randn(5):totable()
    wick.rand(100) -- move on
    wick.set_rng_state(state)
    local b = wick.rand(25):totable()
    local bn = wick.randn(5):totable()
    assert.are.same(a, b)
    assert.are.same(an, bn)
  end)

  it("get_rng_state returns a copy that later draws do not change", function()
    wick.manual_seed(7)
    local s1 = wick.get_rng_state()
    local saved = s1:totable()
    wick.rand(10)
    assert.are.same(saved, s1:totable())
    assert.are_not.same(saved, wick.get_rng_state():totable())
  end)

  it("set_rng_state rejects a tensor that is not a state", function()
    assert_contains(error_of(wick.set_rng_state, wick.zeros(3)), "get_rng_state")
    assert_contains(error_of(wick.set_rng_state, "state"), "expected a tensor")
  end)

  it("rand lies in [0, 1) and covers the interval", function()
    wick.manual_seed(2024)
    local v = wick.rand(10000):totable()
    local lo, hi, sum = math.huge, -math.huge, 0
    for _, x in ipairs(v) do
      lo, hi, sum = math.min(lo, x), math.max(hi, x), sum + x
    end
    assert.is_true(lo >= 0)
    assert.is_true(hi < 1)
    assert.is_true(lo < 0.01)
    assert.is_true(hi > 0.99)
    assert.is_true(math.abs(sum / #v - 0.5) < 0.02)
  end)

  it("rand in float16 and bfloat16 stays below 1", function()
    for _, d in ipairs({ "float16", "bfloat16" }) do
      local v = wick.rand(5000, { dtype = d }):totable()
      for _, x in ipairs(v) do assert.is_true(x >= 0 and x < 1, d .. " value " .. x) end
    end
  end)

  it("randn has mean about 0 and std about 1 over 10000 samples", function()
    wick.manual_seed(31337)
    local v = wick.randn(10000):totable()
    local sum, sq = 0, 0
    for _, x in ipairs(v) do sum = sum + x end
    local mean = sum / #v
    for _, x in ipairs(v) do sq = sq + (x - mean) ^ 2 end
    local std = math.sqrt(sq / (#v - 1))
    assert.is_true(math.abs(mean) < 0.05, "mean " .. mean)
    assert.is_true(math.abs(std - 1) < 0.05, "std " .. std)
    local neg = 0
    for _, x in ipairs(v) do if x < 0 then neg = neg + 1 end end
    assert.is_true(neg > 4700 and neg < 5300)
  end)

  it("rand and randn take sizes, tables and options", function()
    local a = wick.rand(2, 3)
    local b = wick.randn({ 4, 1, 2 }, { dtype = "float64" })
    assert.are.same({ 2, 3 }, a:size())
    assert.are.same({ 4, 1, 2 }, b:size())
    assert.are.equal("float64", b.dtype)
  end)

  it("rand and randn reject integer dtypes", function()
    assert_contains(error_of(wick.rand, 3, { dtype = "int64" }), "floating")
    assert_contains(error_of(wick.randn, 3, { dtype = "bool" }), "floating")
  end)
end)

describe("dtypes", function()
  for _, d in ipairs(DTYPES) do
    it("creates and reads back " .. d, function()
      local t = wick.tensor({ { 0, 1 }, { 2, 3 } }, { dtype = d })
      assert.are.equal(d, t.dtype)
      assert.are.same({ 2, 2 }, t:size())
      if d == "bool" then
        assert.are.same({ { false, true }, { true, true } }, t:totable())
        assert.are.equal(true, t[2][1]:item())
      else
        assert.are.same({ { 0, 1 }, { 2, 3 } }, t:totable())
        assert.are.equal(3, t[2][2]:item())
        assert.are.equal("number", type(t[1][2]:item()))
      end
      local z = wick.zeros(3, { dtype = d })
      assert.are.equal(d, z.dtype)
      local o = wick.ones({ 1 }, { dtype = d })
      assert.are.equal(d == "bool" and true or 1, o:item())
    end)
  end

  it("float16 and bfloat16 round like their formats", function()
    local h = wick.tensor({ 1.5, 0.1, 65504, 1e6 }, { dtype = "float16" }):totable()
    assert.are.equal(1.5, h[1])
    assert.is_true(math.abs(h[2] - 0.1) < 1e-4)
    assert.are_not.equal(0.1, h[2])
    assert.are.equal(65504, h[3])
    assert.are.equal(math.huge, h[4]) -- overflows to inf
    local b = wick.tensor({ 1.5, 3.14159, 1e30 }, { dtype = "bfloat16" }):totable()
    assert.are.equal(1.5, b[1])
    assert.are.equal(3.140625, b[2])
    assert.is_true(math.abs(b[3] / 1e30 - 1) < 0.01)
  end)

  it("integer dtypes keep exact values", function()
    local big = 2 ^ 40 + 3
    assert.are.equal(big, wick.tensor({ big }, { dtype = "int64" })[1]:item())
    assert.are.equal(2147483647, wick.tensor({ 2147483647 }, { dtype = "int32" })[1]:item())
    assert.are.equal(255, wick.tensor({ 255 }, { dtype = "uint8" })[1]:item())
    assert.are.equal(-5, wick.tensor(-5, { dtype = "int64" }):item())
    assert.are.equal(2 ^ 53, wick.tensor(2 ^ 53, { dtype = "int64" }):item())
  end)

  it("item() on an int64 beyond 2^53 raises rather than rounding (LuaJIT); Lua 5.4 gives the exact integer", function()
    local t = wick.tensor(2 ^ 53 + 2, { dtype = "int64" })
    local u = wick.tensor({ -(2 ^ 60) }, { dtype = "int64" })
    if math.type then -- Lua 5.3+: integers hold every int64
      assert.are.equal(9007199254740994, t:item())
      assert.are.equal("integer", math.type(t:item()))
      assert.is_true(u:totable()[1] == -(2 ^ 60))
      return
    end
    local err = error_of(t.item, t)
    assert_contains(err, "2^53")
    assert_contains(err, "9007199254740994")
    assert_contains(error_of(function() return u:totable() end), "2^53")
  end)

  it("float64 keeps full precision", function()
    local x = 0.1 + 0.2
    assert.are.equal(x, wick.tensor(x, { dtype = "float64" }):item())
    assert.are_not.equal(x, wick.tensor(x):item()) -- float32 rounds
  end)

  it("item() needs exactly one element", function()
    local t = wick.zeros(2)
    assert_contains(error_of(t.item, t), "2 elements")
  end)

  it("accepts the PyTorch aliases for dtype names", function()
    assert.are.equal("float64", wick.zeros(1, { dtype = "double" }).dtype)
    assert.are.equal("int64", wick.zeros(1, { dtype = "long" }).dtype)
    assert.are.equal("float16", wick.zeros(1, { dtype = "half" }).dtype)
  end)
end)

describe("bad sizes", function()
  it("a negative size raises", function()
    local err = error_of(wick.zeros, 2, -1)
    assert_contains(err, "negative")
    assert_contains(err, "-1")
    assert_contains(error_of(wick.ones, { -3 }), "negative")
    assert_contains(error_of(wick.empty, -1), "negative")
    assert_contains(error_of(wick.full, { 2, -2 }, 1), "negative")
  end)

  it("a non-integer size raises", function()
    local err = error_of(wick.zeros, 2.5)
    assert_contains(err, "integer")
    assert_contains(err, "2.5")
    assert_contains(error_of(wick.ones, { 2, 0.5 }), "integer")
    assert_contains(error_of(wick.rand, 0 / 0), "integer")
    assert_contains(error_of(wick.zeros, math.huge), "integer")
  end)

  it("a string size raises", function()
    local err = error_of(wick.zeros, "3")
    assert_contains(err, "wick.zeros")
    assert_contains(err, "string")
    assert_contains(error_of(wick.ones, { 2, "x" }), "string")
    assert_contains(error_of(wick.randn, 2, "x"), "string")
  end)

  it("numbers and size tables mix, as Python's zeros(*size, 3); an option in a size table raises", function()
    assert.are.same({ 2, 3 }, wick.zeros({ 2 }, 3):size():totable())
    assert.are.same({ 4, 2, 3 }, wick.zeros(4, wick.Size({ 2, 3 })):size():totable())
    assert_contains(error_of(wick.zeros, { 2, dtype = "int64" }, 3), "wick.zeros: unknown option 'dtype'")
  end)

  it("more than 16 dimensions raises", function()
    local sizes = {}
    for i = 1, 17 do sizes[i] = 1 end
    assert_contains(error_of(wick.zeros, sizes), "16")
  end)

  it("huge sizes raise an error containing 'out of memory'", function()
    assert_contains(error_of(wick.zeros, 1e9, 1e9), "out of memory")
    assert_contains(error_of(wick.empty, { 1e15, 1e15 }), "out of memory")
    assert_contains(error_of(wick.rand, 1e10, 1e10), "out of memory")
    assert_contains(error_of(wick.full, { 1e15, 1000 }, 1), "out of memory")
    assert_contains(error_of(wick.arange, 1e20), "out of memory")
  end)

  -- Sizes that pass the size check but no allocator can satisfy. AddressSanitizer
  -- aborts on such requests unless ASAN_OPTIONS has allocator_may_return_null=1.
  local function real_allocator_failures_testable()
    local f = io.open("/proc/self/maps")
    local maps = f and f:read("*a") or ""
    if f then f:close() end
    local asan = maps:find("libasan", 1, true) ~= nil
    return not asan or (os.getenv("ASAN_OPTIONS") or ""):find("allocator_may_return_null=1", 1, true) ~= nil
  end

  it("a failed allocation raises an error containing 'out of memory'", function()
    if not real_allocator_failures_testable() then
      pending("AddressSanitizer without allocator_may_return_null=1 aborts on huge allocations")
    end
    assert_contains(error_of(wick.empty, 1e14), "out of memory") -- 400 TB
    assert_contains(error_of(wick.ones, 1e7, 1e7, { dtype = "float64" }), "out of memory")
  end)

  it("an out-of-memory error leaves wick usable", function()
    assert.is_false(pcall(wick.empty, 1e15, 1e15))
    assert.are.same({ 1, 1 }, wick.ones(2):totable())
  end)
end)

describe("values", function()
  it("flatten helper sanity: totable of a 3-D tensor has every value", function()
    local t = wick.arange(24):view(2, 3, 4)
    local flat = flatten(t:totable())
    assert.are.equal(24, #flat)
    for i = 1, 24 do assert.are.equal(i - 1, flat[i]) end
  end)
end)

describe("t:new_zeros and friends (docs/api.md: t's device and dtype)", function()
  it("take t's dtype and device unless the options say otherwise", function()
    local x = wick.randn(2, 3, { dtype = "float64" })
    local z = x:new_zeros(2, 2)
    assert.are.equal("float64", z.dtype)
    assert.are.same({ 2, 2 }, z:size())
    assert.are.equal(0, z:abs():sum():item())
    assert.are.equal(3, x:new_ones({ 3 }):sum():item())
    assert.are.same({ 7, 7 }, x:new_full({ 2 }, 7):totable())
    assert.are.equal("float64", x:new_empty(1, 2).dtype)
    assert.are.equal("float64", x:new_tensor({ 1, 2 }).dtype)
    assert.are.equal("int64", x:new_zeros(2, { dtype = "int64" }).dtype)
    local m = wick.zeros(2, { device = "meta", dtype = "int32" }):new_ones(4)
    assert.are.equal("meta", m.device.type)
    assert.are.equal("int32", m.dtype)
  end)
  it("refuse unknown options", function()
    local x = wick.zeros(2)
    assert.has_error(function() x:new_zeros(2, { dtpe = "int64" }) end)
    assert.has_error(function() x:new_full({ 2 }, 1, "x") end)
  end)
end)

describe("the default dtype and device (torch.set_default_dtype / set_default_device)", function()
  after_each(function()
    wick.set_default_dtype("float32")
    wick.set_default_device(nil)
  end)

  it("is float32 on the CPU unless set", function()
    assert.are.equal("float32", wick.get_default_dtype())
    assert.are.equal(wick.device("cpu"), wick.get_default_device())
  end)

  it("is what factories, numbers and layers' parameters become", function()
    wick.set_default_dtype(wick.float64)
    assert.are.equal("float64", wick.get_default_dtype())
    for _, t in ipairs({ wick.zeros(2), wick.ones(2), wick.empty(2), wick.full({ 2 }, 1.5), wick.tensor({ 1.5 }),
      wick.arange(3), wick.randn(2), wick.rand(2), wick.eye(2), wick.linspace(0, 1, 3),
      wick.nn.Linear(2, 3).weight }) do
      assert.are.equal("float64", t.dtype)
    end
    -- an explicit dtype, and a tensor's own, still win
    assert.are.equal("float32", wick.zeros(2, { dtype = "float32" }).dtype)
    assert.are.equal("float32", wick.zeros_like(wick.zeros(2, { dtype = "float32" })).dtype)
    assert.are.equal("int64", wick.tensor({ 1 }, { dtype = wick.long }).dtype)
    -- 1/3 keeps float64's digits
    assert.are.equal(1 / 3, wick.tensor({ 1 / 3 }):item())
    -- printing names a dtype only when it is not the default
    assert.is_nil(tostring(wick.tensor({ 1.5 })):find("dtype", 1, true))
    assert.truthy(tostring(wick.tensor({ 1.5 }, { dtype = "float32" })):find("dtype=float32", 1, true))
  end)

  it("takes floating dtypes only", function()
    assert.has_error(function() wick.set_default_dtype("int64") end,
      "set_default_dtype: only floating-point dtypes can be the default, got int64")
    assert.has_error(function() wick.set_default_dtype("nope") end)
    assert.are.equal("float32", wick.get_default_dtype())
  end)

  it("puts new tensors on the default device", function()
    wick.set_default_device("meta")
    assert.are.equal(wick.device("meta"), wick.get_default_device())
    assert.are.equal("meta", wick.zeros(2).device.type)
    assert.are.equal("meta", wick.tensor({ 1 }).device.type)
    assert.are.equal("cpu", wick.zeros(2, { device = "cpu" }).device.type)
    wick.set_default_device(wick.device("cpu"))
    assert.are.equal("cpu", wick.zeros(2).device.type)
  end)
end)
