-- softmax and log_softmax along dims 1, 2 and -1: rows sum to 1,
-- log_softmax equals log(softmax), stable for large inputs, across dtypes and
-- non-contiguous views; integer inputs raise.
local wick = require("wick")
local support = require("spec.support")
local shape_of, transpose_table = support.shape_of, support.transpose_table
local assert_close, assert_error_has = support.assert_close, support.assert_error_has

-- every value finite (no NaN, no inf) in a nested table
local function all_finite(v)
  if type(v) == "table" then
    for i = 1, #v do if not all_finite(v[i]) then return false end end
    return true
  end
  return v == v and v ~= math.huge and v ~= -math.huge
end

-- reference softmax of a Lua array, in double precision
local function ref_softmax(xs)
  local m = -math.huge
  for i = 1, #xs do if xs[i] > m then m = xs[i] end end
  local s = 0
  for i = 1, #xs do s = s + math.exp(xs[i] - m) end
  local out, logs = {}, {}
  for i = 1, #xs do
    out[i] = math.exp(xs[i] - m) / s
    logs[i] = xs[i] - m - math.log(s)
  end
  return out, logs
end

local function ref_rows(m)
  local sm, lsm = {}, {}
  for i = 1, #m do sm[i], lsm[i] = ref_softmax(m[i]) end
  return sm, lsm
end

local X = { { 1, 2, 3 }, { -1, 0, 1 }, { 0.5, 0.5, 0.5 } }
-- softmax of {1,2,3} (shift-invariant, so also of {-1,0,1}):
local S123 = { 0.09003057317038046, 0.24472847105479764, 0.6652409557748219 }

describe("softmax", function()
  it("along the last dim (2 and -1): hand-computed values, rows sum to 1", function()
    local t = wick.tensor(X)
    local s = t:softmax(2)
    assert.are.equal("float32", s.dtype)
    assert.are.same({ 3, 3 }, shape_of(s))
    assert_close(s, { S123, S123, { 1 / 3, 1 / 3, 1 / 3 } }, 1e-6)
    assert_close(t:softmax(-1), s:totable(), 0)
    assert_close(s:sum(2), { 1, 1, 1 }, 1e-6)
    assert_close(wick.softmax(t, 2), s:totable(), 0)
  end)

  it("along dim 1: columns sum to 1", function()
    local t = wick.tensor(X)
    local s = t:softmax(1)
    local expected = transpose_table((ref_rows(transpose_table(X))))
    assert_close(s, expected, 1e-6)
    assert_close(s:sum(1), { 1, 1, 1 }, 1e-6)
    assert_close(t:softmax(-2), expected, 1e-6)
  end)

  it("of a 1-D tensor along dim 1 and -1", function()
    local v = wick.tensor({ 1, 2, 3 })
    assert_close(v:softmax(1), S123, 1e-6)
    assert_close(v:softmax(-1), S123, 1e-6)
    assert_close(wick.tensor({ 0, 0 }):softmax(1), { 0.5, 0.5 }, 0)
  end)

  it("along the middle dim of a 3-D tensor", function()
    wick.manual_seed(1)
    local t = wick.randn(2, 5, 3, { dtype = "float64" })
    local v = t:totable()
    local s = t:softmax(2)
    for i = 1, 2 do
      for k = 1, 3 do
        local col = {}
        for j = 1, 5 do col[j] = v[i][j][k] end
        local ref = ref_softmax(col)
        for j = 1, 5 do assert_close(s[i][j][k]:item(), ref[j], 1e-12) end
      end
    end
    assert_close(s:sum(2), { { 1, 1, 1 }, { 1, 1, 1 } }, 1e-12)
  end)

  it("is stable for large inputs (no NaN, no inf)", function()
    local s = wick.tensor({ 1000, -1000, 0 }):softmax(1)
    assert.is_true(all_finite(s:totable()))
    assert_close(s, { 1, 0, 0 }, 1e-7)
    local big = wick.tensor({ { 1000, 1001, 1002 }, { -1000, -1001, -1002 } }):softmax(2)
    assert.is_true(all_finite(big:totable()))
    assert_close(big, { S123, { S123[3], S123[2], S123[1] } }, 1e-6)
    local equal = wick.tensor({ 1e30, 1e30 }):softmax(1)
    assert_close(equal, { 0.5, 0.5 }, 1e-7)
    local d = wick.tensor({ 1e300, 1e300, 1e300 }, { dtype = "float64" }):softmax(1)
    assert_close(d, { 1 / 3, 1 / 3, 1 / 3 }, 1e-12)
  end)

  it("gives 0 for -inf entries and handles all -inf rows without NaN in log_softmax's max shift", function()
    local s = wick.tensor({ -math.huge, 0, 0 }):softmax(1)
    assert_close(s, { 0, 0.5, 0.5 }, 1e-7)
    local l = wick.tensor({ -math.huge, 0, 0 }):log_softmax(1)
    assert_close(l, { -math.huge, math.log(0.5), math.log(0.5) }, 1e-6)
  end)

  it("of a 0-dim tensor is 1 (log_softmax 0)", function()
    local s = wick.tensor(3):softmax(1)
    assert.are.equal(0, s:dim())
    assert.are.equal(1, s:item())
    assert.are.equal(0, wick.tensor(-7):log_softmax(-1):item())
  end)

  it("propagates NaN", function()
    local s = wick.tensor({ 1, 0 / 0, 3 }):softmax(1):totable()
    for i = 1, 3 do assert.is_true(s[i] ~= s[i]) end
  end)

  it("works in float64 with float64 precision", function()
    local t = wick.tensor(X, { dtype = "float64" })
    local s = t:softmax(2)
    assert.are.equal("float64", s.dtype)
    assert_close(s, { S123, S123, { 1 / 3, 1 / 3, 1 / 3 } }, 1e-15)
    local tiny = wick.tensor({ 0, 1e-12 }, { dtype = "float64" }):softmax(1)
    assert_close(tiny, { 0.5 - 2.5e-13, 0.5 + 2.5e-13 }, 1e-15)
  end)

  it("takes float16 input and gives float16 output", function()
    local s = wick.tensor({ 1, 2, 3 }, { dtype = "float16" }):softmax(1)
    assert.are.equal("float16", s.dtype)
    assert_close(s, S123, 1e-3)
    local big = wick.tensor({ { 60000, 60000 }, { -60000, 0 } }, { dtype = "float16" }):softmax(2)
    assert.is_true(all_finite(big:totable()))
    assert_close(big, { { 0.5, 0.5 }, { 0, 1 } }, 1e-3)
  end)

  it("works on non-contiguous views", function()
    local t = wick.tensor(X)
    local tt = t:t()
    assert_close(tt:softmax(2), t:t():contiguous():softmax(2):totable(), 0)
    assert_close(tt:softmax(1), transpose_table(t:softmax(2):totable()), 1e-7)
    local n = t:narrow(2, 2, 2) -- {{2,3},{0,1},{0.5,0.5}}
    local e = 1 / (1 + math.exp(1))
    assert_close(n:softmax(2), { { e, 1 - e }, { e, 1 - e }, { 0.5, 0.5 } }, 1e-6)
    local ex = wick.tensor({ 1, 2, 3 }):expand(2, 3)
    assert_close(ex:softmax(2), { S123, S123 }, 1e-6)
    assert_close(ex:softmax(1), { { 0.5, 0.5, 0.5 }, { 0.5, 0.5, 0.5 } }, 1e-7)
    wick.manual_seed(2)
    local p = wick.randn(3, 4, 5):permute(3, 1, 2) -- 5x3x4
    assert_close(p:softmax(-1), p:contiguous():softmax(-1):totable(), 1e-7)
    assert_close(p:softmax(1), p:contiguous():softmax(1):totable(), 1e-7)
  end)

  it("does not change its input", function()
    local t = wick.tensor(X)
    t:softmax(2)
    t:log_softmax(1)
    assert.are.same(X, t:totable())
  end)

  it("raises for integer and bool input", function()
    assert_error_has(function() return wick.tensor({ 1, 2 }, { dtype = "int64" }):softmax(1) end, "softmax", "int64")
    assert_error_has(function() return wick.tensor({ 1, 2 }, { dtype = "int32" }):log_softmax(1) end, "log_softmax",
      "int32")
    assert_error_has(function() return wick.tensor({ true, false }):softmax(1) end, "softmax", "bool")
  end)

  it("raises for bad dims, naming the dim", function()
    local t = wick.tensor(X)
    -- (parenthesised, so not a tail call: the error's position is this line)
    local err = assert_error_has(function() return (t:softmax(3)) end, "softmax", "dimension 3")
    assert.is_truthy(err:find("softmax_spec.lua:", 1, true))
    assert_error_has(function() return t:log_softmax(-3) end, "log_softmax", "dimension -3")
    assert_error_has(function() return t:softmax(0) end, "softmax", "dimension 0")
    assert_error_has(function() return t:softmax() end, "softmax", "dimension")
  end)
end)

describe("log_softmax", function()
  it("along dims 2, -1 and 1 matches hand-computed values", function()
    local t = wick.tensor(X)
    local l = t:log_softmax(2)
    local logS = { math.log(S123[1]), math.log(S123[2]), math.log(S123[3]) }
    assert_close(l, { logS, logS, { -math.log(3), -math.log(3), -math.log(3) } }, 1e-6)
    assert_close(t:log_softmax(-1), l:totable(), 0)
    local _, ref1 = ref_rows(transpose_table(X))
    assert_close(t:log_softmax(1), transpose_table(ref1), 1e-6)
    assert_close(wick.log_softmax(t, 1), transpose_table(ref1), 1e-6)
  end)

  it("equals log(softmax)", function()
    wick.manual_seed(3)
    local t = wick.randn(4, 6)
    for _, dim in ipairs({ 1, 2, -1 }) do
      assert_close(t:log_softmax(dim), t:softmax(dim):log():totable(), 1e-5)
    end
    local d = wick.randn(3, 7, { dtype = "float64" })
    assert_close(d:log_softmax(2), d:softmax(2):log():totable(), 1e-12)
  end)

  it("exp of it sums to 1", function()
    wick.manual_seed(4)
    local t = wick.randn(5, 8)
    assert_close(t:log_softmax(2):exp():sum(2), { 1, 1, 1, 1, 1 }, 1e-6)
    assert_close(t:log_softmax(1):exp():sum(1), { 1, 1, 1, 1, 1, 1, 1, 1 }, 1e-6)
  end)

  it("is stable for large inputs: finite where softmax underflows to 0", function()
    local l = wick.tensor({ 1000, -1000, 0 }):log_softmax(1)
    assert.is_true(all_finite(l:totable()))
    assert_close(l, { 0, -2000, -1000 }, 1e-6)
    local d = wick.tensor({ { -1000, -1000 } }, { dtype = "float64" }):log_softmax(2)
    assert_close(d, { { -math.log(2), -math.log(2) } }, 1e-12)
    local b = wick.tensor({ 1e4, 0 }):log_softmax(1)
    assert_close(b, { 0, -1e4 }, 1e-6)
  end)

  it("works in float64, float16 and on non-contiguous views", function()
    local d = wick.tensor({ 1, 2, 3 }, { dtype = "float64" }):log_softmax(1)
    assert.are.equal("float64", d.dtype)
    assert_close(d, { math.log(S123[1]), math.log(S123[2]), math.log(S123[3]) }, 1e-15)
    local h = wick.tensor({ 1, 2, 3 }, { dtype = "float16" }):log_softmax(1)
    assert.are.equal("float16", h.dtype)
    assert_close(h, { math.log(S123[1]), math.log(S123[2]), math.log(S123[3]) }, 2e-3)
    local t = wick.tensor(X):t()
    assert_close(t:log_softmax(2), wick.tensor(X):t():contiguous():log_softmax(2):totable(), 0)
    local ex = wick.tensor({ { 1 }, { 2 } }):expand(2, 3)
    assert_close(ex:log_softmax(2), { { -math.log(3), -math.log(3), -math.log(3) },
      { -math.log(3), -math.log(3), -math.log(3) } }, 1e-6)
  end)
end)

-- The vectorised float32 kernels (cpu_vmath.h) and the fused backwards:
-- rows of every length around the vector width, softmax over a non-last dim
-- (columns), -inf rows, and gradients against float64.
describe("softmax kernels", function()
  local F64 = { dtype = "float64" }
  it("float32 rows of 1 to 40 elements (and longer, up to past the rows held in registers) and columns match float64", function()
    local lengths = {}
    for d = 1, 40 do lengths[d] = d end
    for _, d in ipairs({ 48, 63, 64, 65, 80, 97, 112, 127, 128, 129, 200 }) do lengths[#lengths + 1] = d end
    for _, d in ipairs(lengths) do
      local x = wick.randn(3, d, F64) * 4
      for _, dim in ipairs({ 2, 1 }) do
        assert_close(x:softmax(dim):totable(), x:float():softmax(dim):double():totable(), 2e-6)
        assert_close(x:log_softmax(dim):totable(), x:float():log_softmax(dim):double():totable(), 2e-6)
      end
    end
    local x = wick.randn(2, 33, 5, F64)
    assert_close(x:softmax(2):totable(), x:float():softmax(2):double():totable(), 2e-6)
    assert_close(x:log_softmax(2):totable(), x:float():log_softmax(2):double():totable(), 2e-6)
  end)
  it("a NaN anywhere in a float32 row makes the whole row NaN, other rows untouched", function()
    for _, d in ipairs({ 5, 16, 17, 64, 65, 128, 129 }) do
      for _, at in ipairs({ 1, d }) do
        local x = wick.randn(3, d)
        x[2][at] = 0 / 0
        for _, name in ipairs({ "softmax", "log_softmax" }) do
          local s = x[name](x, 2):totable()
          for k = 1, d do
            assert.is_true(s[2][k] ~= s[2][k], ("%s, length %d, NaN at %d: %s at %d"):format(name, d, at, s[2][k], k))
            assert.is_true(s[1][k] == s[1][k] and s[3][k] == s[3][k])
          end
        end
      end
    end
  end)
  it("a row of -inf gives NaN (like PyTorch), one -inf gives 0, huge values stay finite", function()
    for _, dt in ipairs({ "float32", "float64" }) do
      for _, d in ipairs({ 3, 17, 64, 65, 128, 200 }) do
        local x = wick.zeros(2, d, { dtype = dt })
        x[1] = -math.huge
        local s = x:softmax(2):totable()
        assert.is_true(s[1][1] ~= s[1][1] and s[1][d] ~= s[1][d])
        assert_close(1 / d, s[2][d], 1e-6)
        local l = x:log_softmax(2):totable()
        assert.is_true(l[1][1] ~= l[1][1])
        local y = wick.full({ 1, d }, 3e38, { dtype = dt })
        y[1][1] = -math.huge
        local sy = y:softmax(2):totable()[1]
        assert.are.equal(0, sy[1])
        assert_close(1 / (d - 1), sy[d], 1e-6)
      end
    end
  end)
  it("fused backwards: numerically in float64, float32 against float64", function()
    for _, dim in ipairs({ 1, 2, 3 }) do
      support.gradcheck(function(x) return x:softmax(dim) end, { wick.randn(2, 3, 4, F64) })
      support.gradcheck(function(x) return x:log_softmax(dim) end, { wick.randn(2, 3, 4, F64) })
    end
    for _, d in ipairs({ 7, 16, 65 }) do
      for _, name in ipairs({ "softmax", "log_softmax" }) do
        local x64 = (wick.randn(30, d, F64) * 3):requires_grad_()
        local x32 = x64:detach():float():requires_grad_()
        local gy = wick.randn(30, d, F64)
        ;(x64[name](x64, 2) * gy):sum():backward()
        ;(x32[name](x32, 2) * gy:float()):sum():backward()
        assert_close(x64.grad:totable(), x32.grad:double():totable(), 1e-5)
      end
    end
  end)
end)

describe("F.softmax / F.log_softmax keywords", function()
  it("take dim and dtype in an options table, and refuse others", function()
    local Fn = wick.nn.functional
    local x = wick.tensor({ { 1, 2, 3 }, { 0, 0, 0 } })
    assert.is_true(Fn.softmax(x, { dim = -1 }):allclose(Fn.softmax(x, 2)))
    local l = Fn.log_softmax(x, { dim = 1, dtype = "float64" })
    assert.are.equal("float64", l.dtype)
    assert.is_true(l:allclose(Fn.log_softmax(x:double(), 1)))
    assert.has_error(function() Fn.softmax(x, { dm = 1 }) end)
  end)
end)
