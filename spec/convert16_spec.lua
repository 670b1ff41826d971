-- float32 <-> float16 / bfloat16 conversions (`:to`, autocast's casts, the
-- widening of 16-bit products): contiguous runs take the vector instructions of
-- src/cpu/cpu_convert.c (AVX-512, or F16C/AVX2: ctest runs this file again with
-- WICK_NO_AVX512_16BIT=1), strided ones dtype.c's scalar functions. Both must
-- give the same bits: exact widening, rounding to nearest even (ties, the
-- largest finite values and overflow to infinity, subnormals), NaN stays NaN.
local wick = require("wick")

local function isnan(x) return x ~= x end

-- values around every rounding rule of both formats, then some random ones
local function specials()
  local v = {
    0, -0.0, 1, -1, 0.1, 1 / 3, math.huge, -math.huge, 0 / 0,
    1 + 2 ^ -11, 1 + 3 * 2 ^ -11, 1 + 2 ^ -8, 1 + 3 * 2 ^ -8, -- float16 / bfloat16 ties
    65504, 65519, 65520, -65520, 2 ^ -14, 2 ^ -24, 2 ^ -25, 3 * 2 ^ -25, 2 ^ -26, 1e-8,
    3.389531389251535e38, 3.4028234663852886e38, 2 ^ -126, 2 ^ -133, 1e-40,
  }
  wick.manual_seed(3)
  local r = (wick.randn(500) * 1000):totable()
  for _, x in ipairs(r) do v[#v + 1] = x end
  local s = (wick.randn(300) * 1e-5):totable()
  for _, x in ipairs(s) do v[#v + 1] = x end
  return v
end

local function same(a, b, what)
  for i = 1, #a do
    if not (a[i] == b[i] or (isnan(a[i]) and isnan(b[i]))) then
      error(("%s: element %d is %.17g one way and %.17g the other"):format(what, i, a[i], b[i]))
    end
  end
end

describe("float16 and bfloat16 conversions", function()
  local values = specials()

  for _, dtype in ipairs({ "float16", "bfloat16" }) do
    it(("round float32 to %s the same way contiguous and strided, every length"):format(dtype), function()
      for _, n in ipairs({ 1, 7, 8, 9, 15, 16, 17, 31, 33, 63, #values }) do
        local x = wick.tensor({ table.unpack(values, 1, math.min(n, #values)) })
        -- the same values every second element of a twice longer tensor: a strided source
        local wide = wick.zeros(2 * x:size(1))
        wide[{ { 1, -1, 2 } }] = x
        local strided = wide[{ { 1, -1, 2 } }]
        local a, b = x:to(dtype), strided:to(dtype)
        -- widened back both ways too: contiguous (vector) and strided (scalar)
        local wa = a:to("float32"):totable()
        local a2 = wick.zeros(2 * a:size(1), { dtype = dtype })
        a2[{ { 1, -1, 2 } }] = a
        local wb = a2[{ { 1, -1, 2 } }]:to("float32"):totable()
        same(wa, b:to("float32"):totable(), ("%s, %d values: rounding"):format(dtype, n))
        same(wa, wb, ("%s, %d values: widening"):format(dtype, n))
      end
    end)
  end

  it("rounds as IEEE 754 says at the edges", function()
    local function h(x) return wick.tensor({ x }):to("float16"):to("float32"):item() end
    local function bf(x) return wick.tensor({ x }):to("bfloat16"):to("float32"):item() end
    assert.are.equal(1, h(1 + 2 ^ -11))                   -- a tie: to the even neighbour
    assert.are.equal(1 + 2 ^ -9, h(1 + 3 * 2 ^ -11))       -- a tie: to the even neighbour, up
    assert.are.equal(65504, h(65519))                     -- the largest finite value
    assert.are.equal(math.huge, h(65520))                  -- past it: infinity
    assert.are.equal(-math.huge, h(-65520))
    assert.are.equal(2 ^ -24, h(2 ^ -24))                  -- the smallest subnormal
    assert.are.equal(0, h(2 ^ -25))                        -- half of it: a tie, to zero
    assert.are.equal(2 ^ -23, h(3 * 2 ^ -25))              -- one and a half: to two
    assert.is_true(isnan(h(0 / 0)))
    assert.are.equal(1, bf(1 + 2 ^ -8))
    assert.are.equal(1 + 2 ^ -6, bf(1 + 3 * 2 ^ -8))
    assert.are.equal(math.huge, bf(3.4028234663852886e38)) -- float32's largest rounds up
    assert.is_true(isnan(bf(0 / 0)))
  end)

  it("converts large tensors on several threads like on one", function()
    wick.manual_seed(9)
    local x = wick.randn(3, 70001) * 100
    local before = wick.get_num_threads()
    local one = {}
    wick.set_num_threads(1)
    for _, dtype in ipairs({ "float16", "bfloat16" }) do one[dtype] = x:to(dtype):to("float32") end
    wick.set_num_threads(2)
    for _, dtype in ipairs({ "float16", "bfloat16" }) do
      assert.is_true(x:to(dtype):to("float32"):equal(one[dtype]), dtype)
    end
    wick.set_num_threads(before)
  end)
end)
