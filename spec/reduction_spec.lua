-- Reductions: sum mean max min argmax argmin prod var std, over all elements and
-- along one dim, across dtypes and non-contiguous views, checked against values
-- computed by hand (or by plain Lua loops over :totable()).
local wick = require("wick")
local support = require("spec.support")
local NaN, I, shape_of = support.NaN, support.I, support.shape_of
local assert_error_has = support.assert_error_has
local assert_close = support.assert_close_with(1e-5)

-- Plain Lua reference reductions over 2-D tables.
local function ref_reduce2(m, dim, fn, init)
  local rows, cols = #m, #m[1]
  local out = {}
  if dim == 1 then
    for j = 1, cols do
      local acc = init
      for i = 1, rows do acc = fn(acc, m[i][j]) end
      out[j] = acc
    end
  else
    for i = 1, rows do
      local acc = init
      for j = 1, cols do acc = fn(acc, m[i][j]) end
      out[i] = acc
    end
  end
  return out
end
local function add(a, b) return a + b end

local M = { { 1, 2, 3 }, { 4, 5, 6 } }
local P = { { 3, 1, 4 }, { 1, 5, 9 }, { 2, 6, 5 } }

describe("sum", function()
  it("sums all elements into a 0-dim tensor", function()
    local s = wick.tensor(M):sum()
    assert.are.equal(0, s:dim())
    assert.are.equal("float32", s.dtype)
    assert.are.equal(21, s:item())
  end)

  it("sums along positive and negative dims", function()
    local t = wick.tensor(M)
    assert.are.same({ 5, 7, 9 }, t:sum(1):totable())
    assert.are.same({ 6, 15 }, t:sum(2):totable())
    assert.are.same({ 6, 15 }, t:sum(-1):totable())
    assert.are.same({ 5, 7, 9 }, t:sum(-2):totable())
    assert.are.same({ 6, 15 }, wick.sum(t, 2):totable())
  end)

  it("keeps the reduced dim with keepdim given as a boolean or an options table", function()
    local t = wick.tensor(M)
    local a = t:sum(2, true)
    assert.are.same({ 2, 1 }, shape_of(a))
    assert.are.same({ { 6 }, { 15 } }, a:totable())
    local b = t:sum(2, { keepdim = true })
    assert.are.same({ 2, 1 }, shape_of(b))
    assert.are.same({ { 6 }, { 15 } }, b:totable())
    local c = t:sum(1, { keepdim = true })
    assert.are.same({ { 5, 7, 9 } }, c:totable())
    assert.are.same({ 1, 3 }, shape_of(t:sum(-2, true)))
    assert.are.same({ 2 }, shape_of(t:sum(2, false)))
    assert.are.same({ 2 }, shape_of(t:sum(2, { keepdim = false })))
  end)

  it("takes the dim from an options table", function()
    local t = wick.tensor(M)
    assert.are.same({ 6, 15 }, t:sum({ dim = 2 }):totable())
    assert.are.same({ { 5, 7, 9 } }, t:sum({ dim = 1, keepdim = true }):totable())
  end)

  it("reduces the middle dim of a 3-D tensor", function()
    -- x[i][j][k] = 100 i + 10 j + k
    local v = {}
    for i = 1, 2 do
      v[i] = {}
      for j = 1, 3 do
        v[i][j] = {}
        for k = 1, 4 do v[i][j][k] = 100 * i + 10 * j + k end
      end
    end
    local t = wick.tensor(v)
    local expected = {}
    for i = 1, 2 do
      expected[i] = {}
      for k = 1, 4 do expected[i][k] = 3 * (100 * i + k) + 10 * (1 + 2 + 3) end
    end
    assert.are.same(expected, t:sum(2):totable())
    assert.are.same(expected, t:sum(-2):totable())
    assert.are.same({ 2, 1, 4 }, shape_of(t:sum(2, true)))
  end)

  it("keeps float64 and its precision", function()
    local s = wick.tensor({ 0.1, 0.2 }, { dtype = "float64" }):sum()
    assert.are.equal("float64", s.dtype)
    assert.are.equal(0.1 + 0.2, s:item())
    local d = wick.tensor({ { 1e-10, 1 }, { 2, 3e-10 } }, { dtype = "float64" }):sum(2)
    assert.are.equal("float64", d.dtype)
    assert.are.same({ 1 + 1e-10, 2 + 3e-10 }, d:totable())
  end)

  it("sums float16 into float16", function()
    local s = wick.tensor({ 1.5, 2.5, 3 }, { dtype = "float16" }):sum()
    assert.are.equal("float16", s.dtype)
    assert.are.equal(7, s:item())
    local r = wick.tensor({ { 0.5, 0.25 }, { 8, 16 } }, { dtype = "float16" }):sum(2)
    assert.are.equal("float16", r.dtype)
    assert.are.same({ 0.75, 24 }, r:totable())
  end)

  it("sums integer tensors into int64, exactly", function()
    local big = I({ 2 ^ 40, 1, 2 }):sum()
    assert.are.equal("int64", big.dtype)
    assert.are.equal(2 ^ 40 + 3, big:item())
    local i32 = wick.tensor({ { 1, 2 }, { 3, 4 } }, { dtype = "int32" })
    assert.are.equal("int64", i32:sum().dtype)
    assert.are.equal(10, i32:sum():item())
    assert.are.equal("int64", i32:sum(1).dtype)
    assert.are.same({ 4, 6 }, i32:sum(1):totable())
    -- uint8 does not wrap around at 256
    local u8 = wick.tensor({ 200, 100 }, { dtype = "uint8" }):sum()
    assert.are.equal("int64", u8.dtype)
    assert.are.equal(300, u8:item())
    -- bool counts the true values
    local b = wick.tensor({ true, false, true, true }):sum()
    assert.are.equal("int64", b.dtype)
    assert.are.equal(3, b:item())
    assert.are.same({ 3, -3 }, I({ { 1, 2 }, { -1, -2 } }):sum(2):totable())
  end)

  it("gives 0 over an empty dim", function()
    local e = wick.zeros(2, 0)
    assert.are.same({ 0, 0 }, e:sum(2):totable())
    assert.are.same({ 2, 1 }, shape_of(e:sum(2, true)))
    assert.are.equal(0, wick.zeros(0):sum():item())
    local f = wick.zeros(0, 3):sum(1)
    assert.are.same({ 0, 0, 0 }, f:totable())
    assert.are.same({ 0 }, shape_of(wick.zeros(0, 3):sum(2)))
    assert.are.equal(0, I({}):sum():item())
  end)

  it("sums non-contiguous views", function()
    local t = wick.tensor(M)
    local tt = t:t() -- 3x2 transpose
    assert.is_false(tt:is_contiguous())
    assert.are.same({ 6, 15 }, tt:sum(1):totable())
    assert.are.same({ 5, 7, 9 }, tt:sum(2):totable())
    assert.are.equal(21, tt:sum():item())
    -- narrow: the last two columns
    local n = t:narrow(2, 2, 2)
    assert.are.same({ 7, 9 }, n:sum(1):totable())
    assert.are.same({ 5, 11 }, n:sum(2):totable())
    assert.are.equal(16, n:sum():item())
    -- expand: stride 0
    local e = wick.tensor({ 1, 2, 3 }):expand(4, 3)
    assert.are.same({ 4, 8, 12 }, e:sum(1):totable())
    assert.are.same({ 6, 6, 6, 6 }, e:sum(2):totable())
    assert.are.equal(24, e:sum():item())
    -- permute of a 3-D tensor: compare with the view's own values
    wick.manual_seed(7)
    local x = wick.rand(3, 4, 5):permute(3, 1, 2) -- 5x3x4
    local v = x:totable()
    local expected = {}
    for a = 1, 5 do
      expected[a] = {}
      for c = 1, 4 do
        local acc = 0
        for b = 1, 3 do acc = acc + v[a][b][c] end
        expected[a][c] = acc
      end
    end
    assert_close(x:sum(2), expected)
    local total = 0
    for a = 1, 5 do for b = 1, 3 do for c = 1, 4 do total = total + v[a][b][c] end end end
    assert_close(x:sum(), total)
    -- a row of a transposed view (stride > 1)
    assert.are.equal(15, tt:select(2, 2):sum():item())
  end)

  it("reduces non-contiguous int64 views exactly", function()
    local x = I({ { 3, 1, 4 }, { 1, 5, 9 }, { 2 ^ 50, 6, 5 } }):t() -- {{3,1,2^50},{1,5,6},{4,9,5}}
    assert.are.equal(2 ^ 50 + 34, x:sum():item())
    assert.are.same({ 2 ^ 50 + 4, 12, 18 }, x:sum(2):totable())
    assert.are.equal(3, x:argmax():item())
    assert.are.equal(2, x:argmin():item())
    local v, i = x:max(2)
    assert.are.same({ 2 ^ 50, 6, 9 }, v:totable())
    assert.are.same({ 3, 3, 2 }, i:totable())
    assert.are.same({ 12 }, x:narrow(2, 1, 1):prod(1):totable())
    assert.are.same({ 3 * 2 ^ 50, 30, 180 }, x:prod(2):totable())
  end)

  it("matches a Lua reference on a bigger random matrix, both dims", function()
    wick.manual_seed(3)
    local x = wick.randn(37, 53, { dtype = "float64" })
    local m = x:totable()
    assert_close(x:sum(1), ref_reduce2(m, 1, add, 0), 1e-12)
    assert_close(x:sum(2), ref_reduce2(m, 2, add, 0), 1e-12)
    assert_close(x:t():sum(1), ref_reduce2(m, 2, add, 0), 1e-12)
  end)

  it("matches a Lua reference on a matrix big enough to use several threads", function()
    wick.manual_seed(5)
    local x = wick.rand(300, 400)
    local m = x:totable()
    assert_close(x:sum(2), ref_reduce2(m, 2, add, 0), 1e-5)
    assert_close(x:sum(1), ref_reduce2(m, 1, add, 0), 1e-5)
    local mx = ref_reduce2(m, 2, math.max, -math.huge)
    assert.are.same(mx, x:max(2):totable())
    assert.are.same(ref_reduce2(m, 1, math.min, math.huge), x:t():min(2):totable())
  end)

  -- Sums down columns (a strided dim whose outputs lie side by side: bias
  -- gradients) add a block of outputs row by row; each output still adds in
  -- double in the order of the dim, so the bits are those of a Lua loop in that
  -- order, at any width (blocks of 512 and a partial one) and thread count.
  it("sums down columns exactly as a double loop in order, in blocks and on threads", function()
    wick.manual_seed(11)
    for _, dtype in ipairs({ "float32", "float64" }) do
      local x = wick.randn(70, 1100, { dtype = dtype }) * 1e3
      local m = x:totable()
      local want = ref_reduce2(m, 1, add, 0) -- Lua numbers are doubles: the kernel's order
      local one = x:sum(1)
      local got = one:totable()
      for j = 1, #want do
        local w = dtype == "float32" and wick.tensor({ want[j] }):item() or want[j] -- rounded once, like the store
        assert(got[j] == w, ("%s column %d: %.17g, want %.17g"):format(dtype, j, got[j], w))
      end
      local mean = x:mean(1):totable()
      for j = 1, #want do assert.is_true(math.abs(mean[j] - want[j] / 70) <= 1e-3 * math.abs(want[j] / 70) + 1e-9) end
      local threads = wick.get_num_threads()
      wick.set_num_threads(2)
      local two = x:sum(1)
      wick.set_num_threads(threads)
      assert.is_true(two:equal(one))
      -- the middle dim of a 3-D tensor, and a transposed view summed along its columns
      local y = wick.randn(3, 40, 33, { dtype = dtype })
      local rows = y:permute(1, 3, 2):contiguous():sum(3) -- the same sums along contiguous rows
      if dtype == "float64" then assert.is_true(y:sum(2):equal(rows)) end -- both add in order in double
      assert_close(y:sum(2), rows:totable(), 1e-5)
      local z = wick.randn(50, 30, { dtype = dtype }):t() -- [30, 50], strides {1, 30}
      assert_close(z:sum(2), z:contiguous():sum(2):totable(), 1e-5)
    end
  end)
end)

describe("mean", function()
  it("averages all elements and along dims", function()
    local t = wick.tensor(M)
    assert.are.equal(3.5, t:mean():item())
    assert.are.equal(0, t:mean():dim())
    assert.are.same({ 2.5, 3.5, 4.5 }, t:mean(1):totable())
    assert.are.same({ 2, 5 }, t:mean(2):totable())
    assert.are.same({ 2, 5 }, t:mean(-1):totable())
    assert.are.same({ { 2 }, { 5 } }, t:mean(2, true):totable())
    assert.are.same({ { 2.5, 3.5, 4.5 } }, t:mean(1, { keepdim = true }):totable())
  end)

  it("keeps float64 and float16", function()
    local d = wick.tensor({ 1, 2, 4 }, { dtype = "float64" }):mean()
    assert.are.equal("float64", d.dtype)
    assert.are.equal(7 / 3, d:item())
    local h = wick.tensor({ { 1, 2 }, { 3, 6 } }, { dtype = "float16" }):mean(2)
    assert.are.equal("float16", h.dtype)
    assert.are.same({ 1.5, 4.5 }, h:totable())
  end)

  it("raises a clear error for integer tensors", function()
    local err = assert_error_has(function() return I({ 1, 2, 3 }):mean() end, "mean", "floating point")
    assert.is_truthy(err:find("Long", 1, true))
    assert_error_has(function() return wick.tensor({ 1, 2 }, { dtype = "int32" }):mean(1) end, "mean",
      "floating point")
    assert_error_has(function() return wick.tensor({ true }):mean() end, "mean", "floating point")
  end)

  it("averages non-contiguous views", function()
    local t = wick.tensor(M)
    assert.are.same({ 2, 5 }, t:t():mean(1):totable())
    assert.are.same({ 2.5, 5.5 }, t:narrow(2, 2, 2):mean(2):totable())
    assert.are.same({ 2, 2, 2 }, wick.tensor({ { 1 }, { 2 }, { 3 } }):expand(3, 3):mean(1):totable())
  end)

  it("gives NaN over an empty dim, like PyTorch", function()
    assert_close(wick.zeros(0):mean(), NaN)
    assert_close(wick.zeros(2, 0):mean(2), { NaN, NaN })
  end)
end)

describe("max and min", function()
  it("reduce all elements to a 0-dim tensor", function()
    local t = wick.tensor(P)
    local mx, mn = t:max(), t:min()
    assert.are.equal(0, mx:dim())
    assert.are.equal(9, mx:item())
    assert.are.equal(1, mn:item())
    assert.are.equal("float32", mx.dtype)
  end)

  it("return values and 1-based int64 indices along a dim", function()
    local t = wick.tensor(P)
    local v, i = t:max(2)
    assert.are.same({ 4, 9, 6 }, v:totable())
    assert.are.same({ 3, 3, 2 }, i:totable())
    assert.are.equal("int64", i.dtype)
    v, i = t:max(1)
    assert.are.same({ 3, 6, 9 }, v:totable())
    assert.are.same({ 1, 3, 2 }, i:totable())
    v, i = t:min(2)
    assert.are.same({ 1, 1, 2 }, v:totable())
    assert.are.same({ 2, 1, 1 }, i:totable())
    v, i = t:min(-2)
    assert.are.same({ 1, 1, 4 }, v:totable())
    assert.are.same({ 2, 1, 1 }, i:totable())
    v, i = t:max(-1)
    assert.are.same({ 3, 3, 2 }, i:totable())
  end)

  it("keep the dim for values and indices", function()
    local t = wick.tensor(P)
    local v, i = t:max(2, true)
    assert.are.same({ { 4 }, { 9 }, { 6 } }, v:totable())
    assert.are.same({ { 3 }, { 3 }, { 2 } }, i:totable())
    v, i = t:min(1, { keepdim = true })
    assert.are.same({ { 1, 1, 4 } }, v:totable())
    assert.are.same({ { 2, 1, 1 } }, i:totable())
  end)

  it("take the dim from an options table", function()
    local v, i = wick.tensor(P):max({ dim = 2 })
    assert.are.same({ 4, 9, 6 }, v:totable())
    assert.are.same({ 3, 3, 2 }, i:totable())
  end)

  it("give the first index on ties", function()
    local v, i = wick.tensor({ { 2, 2, 1 }, { 0, 0, 0 } }):max(2)
    assert.are.same({ 2, 0 }, v:totable())
    assert.are.same({ 1, 1 }, i:totable())
    v, i = wick.tensor({ { 1, 0, 0 } }):min(2)
    assert.are.same({ 2 }, i:totable())
  end)

  it("work on 0-dim tensors along dim 1 or -1", function()
    local v, i = wick.tensor(5):max(1)
    assert.are.equal(5, v:item())
    assert.are.equal(1, i:item())
    v, i = wick.tensor(-2):min(-1)
    assert.are.equal(-2, v:item())
    assert.are.equal(1, i:item())
  end)

  it("work on int64, float64 and float16", function()
    local big = I({ { 2 ^ 40, -(2 ^ 41), 7 }, { 1, 2, 3 } })
    local v, i = big:max(2)
    assert.are.equal("int64", v.dtype)
    assert.are.same({ 2 ^ 40, 3 }, v:totable())
    assert.are.same({ 1, 3 }, i:totable())
    v, i = big:min(2)
    assert.are.same({ -(2 ^ 41), 1 }, v:totable())
    assert.are.same({ 2, 1 }, i:totable())
    assert.are.equal(2 ^ 40, big:max():item())
    assert.are.equal("int64", big:max().dtype)
    local d = wick.tensor({ 1 + 2 ^ -40, 1, 1 - 2 ^ -40 }, { dtype = "float64" })
    assert.are.equal(1 + 2 ^ -40, d:max():item())
    assert.are.equal(1 - 2 ^ -40, d:min():item())
    assert.are.equal("float64", d:max().dtype)
    local h = wick.tensor({ { 0.5, -3, 2.5 } }, { dtype = "float16" })
    v, i = h:max(2)
    assert.are.equal("float16", v.dtype)
    assert.are.same({ 2.5 }, v:totable())
    assert.are.same({ 3 }, i:totable())
    assert.are.equal(-3, h:min():item())
    local i32 = wick.tensor({ 4, -7, 5 }, { dtype = "int32" })
    assert.are.equal("int32", i32:max().dtype)
    assert.are.equal(-7, i32:min():item())
  end)

  it("propagate NaN", function()
    local t = wick.tensor({ 1, NaN, 3 })
    assert_close(t:max(), NaN)
    assert_close(t:min(), NaN)
    local m = wick.tensor({ { 1, NaN, 3 }, { 4, 5, 6 }, { NaN, 0, 9 } })
    local v, i = m:max(2)
    assert_close(v, { NaN, 6, NaN })
    assert.are.same({ 2, 3, 1 }, i:totable())
    v, i = m:min(2)
    assert_close(v, { NaN, 4, NaN })
    assert.are.same({ 2, 1, 1 }, i:totable())
    -- a NaN after a larger value still wins
    local w = wick.tensor({ 100, NaN, 1 }, { dtype = "float64" })
    assert_close(w:max(), NaN)
    assert_close(w:max(1), NaN)
  end)

  it("raise over an empty dim or an empty tensor", function()
    assert_error_has(function() return wick.zeros(2, 0):max(2) end, "max", "dimension 2")
    assert_error_has(function() return wick.zeros(2, 0):min(2) end, "min")
    assert_error_has(function() return wick.zeros(0):max() end, "max", "empty")
    assert_error_has(function() return wick.zeros(0, 3):argmax() end, "argmax")
    -- reducing the other (non-empty) dim of an empty tensor is fine
    local v, i = wick.zeros(0, 3):max(2)
    assert.are.same({ 0 }, shape_of(v))
    assert.are.same({ 0 }, shape_of(i))
  end)

  it("reduce non-contiguous views", function()
    local t = wick.tensor(P)
    local tt = t:t() -- {{3,1,2},{1,5,6},{4,9,5}}
    local v, i = tt:max(2)
    assert.are.same({ 3, 6, 9 }, v:totable())
    assert.are.same({ 1, 3, 2 }, i:totable())
    v, i = tt:min(1)
    assert.are.same({ 1, 1, 2 }, v:totable())
    assert.are.same({ 2, 1, 1 }, i:totable())
    assert.are.equal(9, tt:max():item())
    -- narrow to columns 1..2: {{3,1},{1,5},{2,6}}
    v, i = t:narrow(2, 1, 2):max(2)
    assert.are.same({ 3, 5, 6 }, v:totable())
    assert.are.same({ 1, 2, 2 }, i:totable())
    -- expand: all rows equal, first index wins
    v, i = wick.tensor({ 7, 8 }):expand(3, 2):max(1)
    assert.are.same({ 7, 8 }, v:totable())
    assert.are.same({ 1, 1 }, i:totable())
    -- and on a bigger random permuted view, against the view's own values
    wick.manual_seed(11)
    local x = wick.randn(4, 6, 5):permute(2, 3, 1) -- 6x5x4
    local xv = x:totable()
    local ev, ei = {}, {}
    for a = 1, 6 do
      ev[a], ei[a] = {}, {}
      for c = 1, 4 do
        local best, at = -math.huge, 0
        for b = 1, 5 do if xv[a][b][c] > best then best, at = xv[a][b][c], b end end
        ev[a][c], ei[a][c] = best, at
      end
    end
    v, i = x:max(2)
    assert.are.same(ev, v:totable())
    assert.are.same(ei, i:totable())
  end)

  it("with a tensor argument, give the elementwise maximum and minimum", function()
    local a = wick.tensor({ { 1, 5 }, { 7, 2 } })
    local b = wick.tensor({ 3, 3 })
    assert.are.same({ { 3, 5 }, { 7, 3 } }, a:max(b):totable())
    assert.are.same({ { 1, 3 }, { 3, 2 } }, a:min(b):totable())
    assert.are.same({ { 3, 5 }, { 7, 3 } }, b:max(a):totable())
    -- dtype promotion: int64 with float32 gives float32
    local r = I({ 1, 10 }):max(wick.tensor({ 2.5, 2.5 }))
    assert.are.equal("float32", r.dtype)
    assert.are.same({ 2.5, 10 }, r:totable())
    local ii = I({ 1, 10 }):max(I({ 4, 4 }))
    assert.are.equal("int64", ii.dtype)
    assert.are.same({ 4, 10 }, ii:totable())
    -- transposed operand
    local m = wick.tensor({ { 1, 2 }, { 3, 4 } })
    assert.are.same({ { 1, 3 }, { 3, 4 } }, m:max(m:t()):totable())
    -- NaN propagates, like torch.maximum
    assert_close(wick.tensor({ NaN, 1 }):max(wick.tensor({ 0, NaN })), { NaN, NaN })
  end)

  it("raise for bad dims, naming the dim", function()
    local t = wick.tensor(P)
    assert_error_has(function() return t:max(3) end, "max", "dimension 3")
    assert_error_has(function() return t:min(-3) end, "min", "dimension -3")
    assert_error_has(function() return t:max(0) end, "max", "dimension 0")
  end)
end)

describe("argmax and argmin", function()
  it("give the 1-based flat position over all elements", function()
    local t = wick.tensor(P) -- flat: 3 1 4 1 5 9 2 6 5
    local a = t:argmax()
    assert.are.equal("int64", a.dtype)
    assert.are.equal(0, a:dim())
    assert.are.equal(6, a:item())
    assert.are.equal(2, t:argmin():item()) -- first of the two 1s
  end)

  it("work along positive and negative dims, with keepdim", function()
    local t = wick.tensor(P)
    assert.are.same({ 3, 3, 2 }, t:argmax(2):totable())
    assert.are.same({ 3, 3, 2 }, t:argmax(-1):totable())
    assert.are.same({ 1, 3, 2 }, t:argmax(1):totable())
    assert.are.same({ 2, 1, 1 }, t:argmin(1):totable())
    assert.are.same({ 2, 1, 1 }, t:argmin(-2):totable())
    local k = t:argmax(1, true)
    assert.are.same({ 1, 3 }, shape_of(k))
    assert.are.same({ { 1, 3, 2 } }, k:totable())
    assert.are.same({ { 2 }, { 1 }, { 1 } }, t:argmin(2, { keepdim = true }):totable())
  end)

  it("count flat positions in the view's logical order", function()
    local tt = wick.tensor(P):t() -- {{3,1,2},{1,5,6},{4,9,5}}
    assert.are.equal(8, tt:argmax():item())
    assert.are.equal(2, tt:argmin():item())
    assert.are.same({ 1, 3, 2 }, tt:argmax(2):totable())
    local n = wick.tensor(P):narrow(1, 2, 2) -- {{1,5,9},{2,6,5}}
    assert.are.equal(3, n:argmax():item())
    assert.are.equal(1, n:argmin():item())
  end)

  it("work on int64, float64, float16 and point at NaN", function()
    assert.are.equal(2, I({ -5, 2 ^ 45, 3 }):argmax():item())
    assert.are.equal(1, I({ -5, 2 ^ 45, 3 }):argmin():item())
    assert.are.same({ 2, 1 }, I({ { 1, 9 }, { 8, 2 } }):argmax(2):totable())
    assert.are.equal(3, wick.tensor({ 1, 1, 1 + 2 ^ -40 }, { dtype = "float64" }):argmax():item())
    assert.are.equal(2, wick.tensor({ 1, -1, 0.5 }, { dtype = "float16" }):argmin():item())
    assert.are.equal(2, wick.tensor({ 1, NaN, 3 }):argmax():item())
    assert.are.equal(2, wick.tensor({ 1, NaN, 3 }):argmin():item())
  end)

  it("raise for bad dims", function()
    assert_error_has(function() return wick.tensor(P):argmax(3) end, "argmax", "dimension 3")
    assert_error_has(function() return wick.tensor(P):argmin(-4) end, "argmin", "dimension -4")
  end)
end)

describe("prod", function()
  it("multiplies all elements and along dims", function()
    local t = wick.tensor(M)
    assert.are.equal(720, t:prod():item())
    assert.are.same({ 4, 10, 18 }, t:prod(1):totable())
    assert.are.same({ 6, 120 }, t:prod(2):totable())
    assert.are.same({ 6, 120 }, t:prod(-1):totable())
    assert.are.same({ { 6 }, { 120 } }, t:prod(2, true):totable())
  end)

  it("keeps floating dtypes and gives int64 for integers", function()
    local d = wick.tensor({ 0.5, 0.25, 3 }, { dtype = "float64" }):prod()
    assert.are.equal("float64", d.dtype)
    assert.are.equal(0.375, d:item())
    local i = I({ 2 ^ 20, 2 ^ 20, 3 }):prod()
    assert.are.equal("int64", i.dtype)
    assert.are.equal(3 * 2 ^ 40, i:item())
    local i32 = wick.tensor({ { 2, 3 }, { 4, 5 } }, { dtype = "int32" }):prod(2)
    assert.are.equal("int64", i32.dtype)
    assert.are.same({ 6, 20 }, i32:totable())
    local h = wick.tensor({ 1.5, 2 }, { dtype = "float16" }):prod()
    assert.are.equal("float16", h.dtype)
    assert.are.equal(3, h:item())
  end)

  it("gives 1 over an empty dim", function()
    assert.are.equal(1, wick.zeros(0):prod():item())
    assert.are.same({ 1, 1 }, wick.zeros(2, 0):prod(2):totable())
  end)

  it("multiplies non-contiguous views", function()
    local t = wick.tensor(M)
    assert.are.same({ 6, 120 }, t:t():prod(1):totable())
    assert.are.same({ 6, 30 }, t:narrow(2, 2, 2):prod(2):totable())
    assert.are.same({ 8, 27 }, wick.tensor({ { 2 }, { 3 } }):expand(2, 3):prod(2):totable())
  end)
end)

describe("var and std", function()
  -- {1,2,3,4}: mean 2.5, sum of squares 5
  it("are unbiased by default", function()
    local t = wick.tensor({ 1, 2, 3, 4 })
    assert_close(t:var(), 5 / 3)
    assert_close(t:std(), math.sqrt(5 / 3))
    assert.are.equal(0, t:var():dim())
    assert_close(t:var({ unbiased = true }), 5 / 3)
  end)

  it("are biased with {unbiased = false} or {correction = 0}", function()
    local t = wick.tensor({ 1, 2, 3, 4 })
    assert_close(t:var({ unbiased = false }), 1.25)
    assert_close(t:var({ correction = 0 }), 1.25)
    assert_close(t:std({ unbiased = false }), math.sqrt(1.25))
    assert_close(t:std({ correction = 0 }), math.sqrt(1.25))
    assert_close(t:var({ correction = 2 }), 2.5)
  end)

  it("work along dims, with keepdim and options", function()
    local t = wick.tensor({ { 1, 2, 3, 4 }, { 2, 4, 6, 8 } })
    assert_close(t:var(2), { 5 / 3, 20 / 3 })
    assert_close(t:var(-1), { 5 / 3, 20 / 3 })
    assert_close(t:var(2, { unbiased = false }), { 1.25, 5 })
    assert_close(t:var(2, { correction = 0 }), { 1.25, 5 })
    assert_close(t:std(2), { math.sqrt(5 / 3), math.sqrt(20 / 3) })
    assert_close(t:std(2, { correction = 0 }), { math.sqrt(1.25), math.sqrt(5) })
    -- columns {1,2},{2,4},{3,6},{4,8}: unbiased var (b-a)^2/2
    assert_close(t:var(1), { 0.5, 2, 4.5, 8 })
    local k = t:var(2, true, true) -- PyTorch's positional (dim, unbiased, keepdim)
    assert.are.same({ 2, 1 }, shape_of(k))
    assert_close(k, { { 5 / 3 }, { 20 / 3 } })
    assert_close(t:var(2, false), { 1.25, 5 }) -- x.var(1, False): unbiased = False, not keepdim
    assert_close(t:std(1, false), { 0.5, 1, 1.5, 2 })
    assert_close(t:var(false), t:var({ correction = 0 }):item())
    local v, m = t:var_mean(2, false, true)
    assert_close(v, { { 1.25 }, { 5 } })
    assert_close(m, { { 2.5 }, { 5 } })
    assert_error_has(function() return t:var(2, false, { unbiased = true }) end, "got unbiased twice")
    local k2 = t:std(1, { keepdim = true, unbiased = false })
    assert.are.same({ 1, 4 }, shape_of(k2))
    assert_close(k2, { { 0.5, 1, 1.5, 2 } })
  end)

  it("keep float64 precision and float16 dtype", function()
    local d = wick.tensor({ 1e8 + 1, 1e8 + 2, 1e8 + 3 }, { dtype = "float64" })
    assert.are.equal("float64", d:var().dtype)
    assert_close(d:var(), 1, 1e-12)
    local h = wick.tensor({ 1, 3 }, { dtype = "float16" }):var()
    assert.are.equal("float16", h.dtype)
    assert.are.equal(2, h:item())
  end)

  it("give NaN for one element with the unbiased estimate", function()
    assert_close(wick.tensor({ 5 }):var(), NaN)
    assert_close(wick.tensor({ 5 }):var({ unbiased = false }), 0)
  end)

  it("divide by max(0, N - correction), like PyTorch", function()
    assert_close(wick.tensor({ 1, 3 }):var({ correction = 2 }), math.huge)
    assert_close(wick.tensor({ 1, 3 }):var({ correction = 3 }), math.huge)
    assert_close(wick.tensor({ 2, 2 }):var({ correction = 2 }), NaN)
    assert_close(wick.tensor({ { 1, 3 }, { 2, 2 } }):std(2, { correction = 2 }), { math.huge, NaN })
  end)

  it("raise for integer tensors", function()
    assert_error_has(function() return I({ 1, 2, 3 }):var() end, "var", "floating point")
    assert_error_has(function() return I({ 1, 2, 3 }):std(1) end, "std", "floating point")
  end)

  it("work on non-contiguous views", function()
    local t = wick.tensor({ { 1, 2, 3, 4 }, { 2, 4, 6, 8 } }):t() -- 4x2
    assert_close(t:var(1), { 5 / 3, 20 / 3 })
    assert_close(t:var(2), { 0.5, 2, 4.5, 8 })
    assert_close(t:std(), math.sqrt(((1 - 3.75) ^ 2 + (2 - 3.75) ^ 2 * 2 + (3 - 3.75) ^ 2 + (4 - 3.75) ^ 2 * 2
      + (6 - 3.75) ^ 2 + (8 - 3.75) ^ 2) / 7))
    assert_close(wick.tensor({ 1, 3 }):expand(3, 2):var(2), { 2, 2, 2 })
    assert_close(wick.tensor({ 1, 3 }):expand(3, 2):var(1), { 0, 0 })
  end)
end)

describe("reduction dims", function()
  it("out of range raise an error naming the dim and the user's line", function()
    local t = wick.tensor(M)
    -- (parenthesised, so not a tail call: the error's position is this line)
    local err = assert_error_has(function() return (t:sum(3)) end, "sum", "dimension 3")
    assert.is_truthy(err:find("reduction_spec.lua:", 1, true))
    assert_error_has(function() return t:sum(-3) end, "dimension -3")
    assert_error_has(function() return t:mean(5) end, "mean", "dimension 5")
    assert_error_has(function() return t:prod(-7) end, "prod", "dimension -7")
    assert_error_has(function() return t:var(3) end, "var", "dimension 3")
    assert_error_has(function() return t:std(3) end, "std", "dimension 3")
  end)

  it("0 raises: dims count from 1", function()
    assert_error_has(function() return wick.tensor(M):sum(0) end, "sum", "dimension 0")
    assert_error_has(function() return wick.tensor(M):argmax(0) end, "dimension 0")
  end)

  it("non-integer raises", function()
    assert_error_has(function() return wick.tensor(M):sum(1.5) end, "sum", "1.5")
  end)

  it("arguments of the wrong type raise instead of being ignored", function()
    assert_error_has(function() return wick.tensor(M):sum("x") end, "sum", "string")
    assert_error_has(function() return wick.tensor(M):max(1, true, {}, 5) end, "max", "number")
    assert_error_has(function() return wick.tensor(M):mean(1, "yes") end, "mean", "string")
  end)

  it("0-dim tensors reduce along dim 1 or -1 and reject dim 2", function()
    local s = wick.tensor(3)
    assert.are.equal(3, s:sum(1):item())
    assert.are.equal(3, s:mean(-1):item())
    assert.are.equal(0, s:sum(1):dim())
    assert_error_has(function() return s:sum(2) end, "sum", "dimension 2")
  end)

  describe("a list of dims (PyTorch's x.sum((1, 2)), x.mean([2, 3]))", function()
    -- a reference: every element's contribution summed over the listed dims, by loops
    local function ref_sum(t, keep) -- t: 2x3x4 nested table, keep: which of the 3 dims stay
      local out = {}
      for i = 1, 2 do for j = 1, 3 do for k = 1, 4 do
        local key = table.concat({ keep[1] and i or 1, keep[2] and j or 1, keep[3] and k or 1 }, ",")
        out[key] = (out[key] or 0) + t[i][j][k]
      end end end
      return out
    end
    local x = wick.randn(2, 3, 4)
    local X = x:totable()

    it("sum over several dims equals the loops' sum, in any order and with negative dims", function()
      for _, case in ipairs({ { { 1, 3 }, { false, true, false } }, { { 3, 1 }, { false, true, false } },
        { { -1, 2 }, { true, false, false } }, { { 2 }, { true, false, true } }, { { 1, 2, 3 }, { false, false, false } } }) do
        local want = ref_sum(X, case[2])
        local got = x:sum(case[1], true)
        local G = got:totable()
        for key, v in pairs(want) do
          local a, b, c = key:match("(%d+),(%d+),(%d+)")
          assert_close(v, G[tonumber(a)][tonumber(b)][tonumber(c)])
        end
        local kept = 0
        for _, k in ipairs(case[2]) do if k then kept = kept + 1 end end
        assert.are.equal(kept, x:sum(case[1]):dim()) -- without keepdim the listed dims go
      end
    end)

    it("mean over a list, as an option too, and its gradient", function()
      local m = x:mean({ dim = { 2, 3 } })
      assert.are.same({ 2 }, shape_of(m))
      for i = 1, 2 do
        local s = 0
        for j = 1, 3 do for k = 1, 4 do s = s + X[i][j][k] end end
        assert_close(s / 12, m:totable()[i])
      end
      assert.are.same({ 2, 1, 1 }, shape_of(x:mean({ 2, 3 }, { keepdim = true })))
      local w = wick.randn(2, 3, 4, { requires_grad = true })
      w:mean({ 2, 3 }):sum():backward()
      assert_close(1 / 12, w.grad:totable()[2][3][4])
      local p = wick.tensor({ { { 1, 2 }, { 3, 4 } }, { { 5, 6 }, { 7, 8 } } }):prod({ 1, 3 })
      assert.are.same({ 1 * 2 * 5 * 6, 3 * 4 * 7 * 8 }, p:totable())
    end)

    it("refuses what it cannot do instead of reducing over everything", function()
      assert_error_has(function() return x:sum({ 2, 2 }) end, "sum", "more than once")
      assert_error_has(function() return x:sum({ 2, -2 }) end, "sum", "more than once")
      assert_error_has(function() return x:median({ 1, 2 }) end, "median")
      assert_error_has(function() return x:max({ 1, 2 }) end, "max", "one dim")
      assert_error_has(function() return x:sum({ 1, "a" }) end, "sum", "string")
      assert_error_has(function() return x:sum({ 1, keepdim = true }) end, "sum", "list of dims")
      assert_error_has(function() return x:sum({ keepdims = 1 }) end, "sum", "'keepdims'", "boolean")
      assert_error_has(function() return x:sum({ unbiased = true }) end, "sum", "unknown option 'unbiased'")
      assert_error_has(function() return x:sum(2, { dim = 3 }) end, "sum", "twice")
      assert_error_has(function() return x:sum({ 4 }) end, "sum", "dimension 4")
    end)
  end)
end)

describe("var and std over several dims", function()
  it("reduce over all of them at once (the lecture's BatchNorm1d: x:var({1, 2}, {keepdim = true}))", function()
    local x = wick.randn(4, 3, 5, { dtype = "float64" })
    local v = x:var({ 1, 2 }, { keepdim = true })
    assert.are.same({ 1, 1, 5 }, v:size())
    local ref = x:permute(3, 1, 2):reshape(5, -1):var(2):view(1, 1, 5)
    assert.is_true((v - ref):abs():max():item() < 1e-12)
    assert.are.same({ 3 }, x:std({ 1, 3 }):size())
    local pop = x:var({ 1, 2 }, { correction = 0 })
    assert.is_true((pop - x:permute(3, 1, 2):reshape(5, -1):var(2, { correction = 0 })):abs():max():item() < 1e-12)
    support.gradcheck(function(a) return a:var({ 1, 3 }, true, true) end, { wick.randn(2, 3, 2, { dtype = "float64" }) })
  end)
end)


describe("amax and amin under autograd", function()
  it("keep infinite and huge values (their gradient is a Function, not arithmetic on them)", function()
    local x = wick.tensor({ { -math.huge, 1 }, { 2, -math.huge } }):requires_grad_(true)
    assert.are.same({ 1, 2 }, x:amax(2):totable())
    local y = wick.full({ 1, 4 }, -1e308, { dtype = "float64" }):requires_grad_(true)
    local m = y:amax(2)
    assert.are.same({ -1e308 }, m:totable())
    m:sum():backward()
    assert.are.same({ { 0.25, 0.25, 0.25, 0.25 } }, y.grad:totable())
    local z = wick.tensor({ { math.huge, 3 } }):requires_grad_(true)
    local n = z:amin()
    n:backward()
    assert.are.same({ { 0, 1 } }, z.grad:totable())
  end)
end)
