-- Matrix products: mm, bmm, addmm and matmul in all its cases, on tiny and
-- BLAS-sized matrices, across dtypes and with non-contiguous operands, checked
-- against hand-computed values and a naive Lua triple loop.
local wick = require("wick")
local support = require("spec.support")
local NaN, I, shape_of, transpose_table = support.NaN, support.I, support.shape_of, support.transpose_table
local assert_error_has = support.assert_error_has
local assert_close = support.assert_close_with(1e-5)

-- Naive reference: a (n x k) times b (k x m), plain Lua tables.
local function naive_mm(a, b)
  local n, k, m = #a, #b, #b[1]
  assert(#a[1] == k)
  local c = {}
  for i = 1, n do
    c[i] = {}
    for j = 1, m do
      local acc = 0
      for p = 1, k do acc = acc + a[i][p] * b[p][j] end
      c[i][j] = acc
    end
  end
  return c
end

local A = { { 1, 2, 3 }, { 4, 5, 6 } }    -- 2x3
local B = { { 1, 2 }, { 3, 4 }, { 5, 6 } } -- 3x2
local AB = { { 22, 28 }, { 49, 64 } }

describe("mm", function()
  it("multiplies tiny matrices (2x3 @ 3x2, 2x2, 4x4)", function()
    local r = wick.tensor(A):mm(wick.tensor(B))
    assert.are.same({ 2, 2 }, shape_of(r))
    assert.are.equal("float32", r.dtype)
    assert.are.same(AB, r:totable())
    assert.are.same({ { 19, 22 }, { 43, 50 } },
      wick.tensor({ { 1, 2 }, { 3, 4 } }):mm(wick.tensor({ { 5, 6 }, { 7, 8 } })):totable())
    local m4 = { { 1, 0, 2, -1 }, { 3, 1, 0, 2 }, { -2, 4, 1, 0 }, { 0, 1, -3, 5 } }
    local n4 = { { 2, 1, 0, 0 }, { 0, 1, 3, -1 }, { 1, 0, 1, 2 }, { 4, -2, 0, 1 } }
    assert.are.same(naive_mm(m4, n4), wick.tensor(m4):mm(wick.tensor(n4)):totable())
    assert.are.same(m4, wick.tensor(m4):mm(wick.eye(4)):totable())
    assert.are.same(AB, wick.mm(wick.tensor(A), wick.tensor(B)):totable())
  end)

  it("multiplies B @ A into a 3x3", function()
    assert.are.same(naive_mm(B, A), wick.tensor(B):mm(wick.tensor(A)):totable())
  end)

  it("works in float64 with float64 precision", function()
    local a = wick.tensor({ { 1 + 2 ^ -40, 1 } }, { dtype = "float64" })
    local b = wick.tensor({ { 1 }, { -1 } }, { dtype = "float64" })
    local r = a:mm(b)
    assert.are.equal("float64", r.dtype)
    assert.are.equal(2 ^ -40, r:item())
    assert.are.same(AB, wick.tensor(A, { dtype = "float64" }):mm(wick.tensor(B, { dtype = "float64" })):totable())
  end)

  it("wraps int64 products around like PyTorch, and takes only integer alpha and beta", function()
    local a = I({ { 2 ^ 40 } })
    assert.are.equal(0, a:mm(a):item()) -- 2^80 mod 2^64
    assert.are.equal(0, I({ { 2 ^ 31, 2 ^ 31 } }):mm(I({ { 2 ^ 32 }, { 2 ^ 32 } })):item())
    assert.are.equal("-9223372036854775808", I({ { 2 ^ 62 } }):mm(I({ { 2 } })):_int64_str())
    assert_error_has(function() return wick.addmm(a, a, a, { alpha = 2.5 }) end, "alpha")
    assert_error_has(function() return wick.addmm(a, a, a, { beta = 1e30 }) end, "beta")
    assert.are.equal(2 ^ 40 * 3, wick.addmm(a, I({ { 1 } }), a, { alpha = 2 }):item())
  end)

  it("works in int64, exactly beyond float32's range", function()
    local r = I(A):mm(I(B))
    assert.are.equal("int64", r.dtype)
    assert.are.same(AB, r:totable())
    local big = I({ { 2 ^ 26, 2 ^ 26 } }):mm(I({ { 2 ^ 25 }, { 2 ^ 25 + 1 } }))
    assert.are.equal(2 ^ 51 + 2 ^ 51 + 2 ^ 26, big:item())
    local i32 = wick.tensor(A, { dtype = "int32" }):mm(wick.tensor(B, { dtype = "int32" }))
    assert.are.equal("int32", i32.dtype)
    assert.are.same(AB, i32:totable())
  end)

  it("works in float16", function()
    local r = wick.tensor(A, { dtype = "float16" }):mm(wick.tensor(B, { dtype = "float16" }))
    assert.are.equal("float16", r.dtype)
    assert.are.same(AB, r:totable())
    local h = wick.tensor({ { 0.5, 0.25 } }, { dtype = "float16" }):mm(wick.tensor({ { 2 }, { 4 } }, { dtype = "float16" }))
    assert.are.equal(2, h:item())
  end)

  it("handles an empty inner dim (zeros) and empty outer dims", function()
    local r = wick.zeros(2, 0):mm(wick.zeros(0, 3))
    assert.are.same({ 2, 3 }, shape_of(r))
    assert.are.same({ { 0, 0, 0 }, { 0, 0, 0 } }, r:totable())
    assert.are.same({ 0, 3 }, shape_of(wick.zeros(0, 4):mm(wick.zeros(4, 3))))
    assert.are.same({ 0, 0 }, shape_of(wick.ones(0, 4):mm(wick.ones(4, 0))))
  end)

  it("gives transposed views the results of their contiguous copies", function()
    local a = wick.tensor(A)
    local b = wick.tensor(B)
    local at, bt = a:t(), b:t() -- 3x2, 2x3
    assert.is_false(at:is_contiguous())
    assert.are.same(at:contiguous():mm(bt:contiguous()):totable(), at:mm(bt):totable())
    assert.are.same(naive_mm(transpose_table(A), transpose_table(B)), at:mm(bt):totable())
    -- one operand transposed
    assert.are.same(naive_mm(B, transpose_table(B)), b:mm(b:t()):totable())
    assert.are.same(naive_mm(transpose_table(A), A), a:t():mm(a):totable())
  end)

  it("handles narrowed, selected and expanded operands", function()
    local big = wick.tensor({ { 1, 2, 3, 4 }, { 5, 6, 7, 8 }, { 9, 10, 11, 12 } })
    local cols = big:narrow(2, 2, 2) -- 3x2, row stride 4
    local expected = naive_mm(transpose_table(cols:totable()), cols:totable())
    assert.are.same(expected, cols:t():mm(cols):totable())
    assert.are.same(naive_mm(cols:totable(), { { 1, 0 }, { 0, 2 } }),
      cols:mm(wick.tensor({ { 1, 0 }, { 0, 2 } })):totable())
    -- every second column: a stride that BLAS cannot take
    local x3 = wick.tensor({ { { 1, 2 }, { 3, 4 } }, { { 5, 6 }, { 7, 8 } } })
    local sel = x3:select(3, 2) -- {{2,4},{6,8}}, strides (4, 2)
    assert.are.same({ { 2, 4 }, { 6, 8 } }, sel:totable())
    assert.are.same(naive_mm(sel:totable(), sel:totable()), sel:mm(sel):totable())
    -- a row expanded to a matrix (stride 0)
    local e = wick.tensor({ 1, 2, 3 }):expand(2, 3)
    assert.are.same({ { 22, 28 }, { 22, 28 } }, e:mm(wick.tensor(B)):totable())
    local ec = wick.tensor({ { 1 }, { 2 }, { 3 } }):expand(3, 2)
    assert.are.same(naive_mm(A, { { 1, 1 }, { 2, 2 }, { 3, 3 } }), wick.tensor(A):mm(ec):totable())
  end)

  it("matches a naive triple loop on 64x64 float32 and float64 (BLAS)", function()
    wick.manual_seed(42)
    for _, dtype in ipairs({ "float32", "float64" }) do
      local a = wick.randn(64, 64, { dtype = dtype })
      local b = wick.randn(64, 64, { dtype = dtype })
      local at, bt = a:totable(), b:totable()
      local tol = dtype == "float64" and 1e-12 or 1e-4
      assert_close(a:mm(b), naive_mm(at, bt), tol)
      -- transposed views through BLAS's transpose flags, equal to contiguous copies
      assert_close(a:t():mm(b), naive_mm(transpose_table(at), bt), tol)
      assert_close(a:mm(b:t()), naive_mm(at, transpose_table(bt)), tol)
      assert_close(a:t():mm(b:t()), naive_mm(transpose_table(at), transpose_table(bt)), tol)
      assert_close(a:t():mm(b:t()), a:t():contiguous():mm(b:t():contiguous()):totable(), tol)
    end
  end)

  it("matches a naive triple loop on odd BLAS sizes and narrowed views", function()
    wick.manual_seed(43)
    local a = wick.randn(70, 90)
    local b = wick.randn(90, 33)
    assert_close(a:mm(b), naive_mm(a:totable(), b:totable()), 1e-4)
    -- narrowed rows and columns keep a leading dimension larger than the width
    local an = a:narrow(2, 11, 60) -- 70x60, row stride 90
    local bn = b:narrow(1, 31, 60) -- 60x33
    assert.is_false(an:is_contiguous())
    assert_close(an:mm(bn), naive_mm(an:totable(), bn:totable()), 1e-4)
    assert_close(an:mm(bn), an:contiguous():mm(bn:contiguous()):totable(), 1e-5)
    -- a transposed narrow
    local bt = b:narrow(2, 3, 30):t() -- 30x90
    assert_close(bt:mm(a:t()), naive_mm(bt:totable(), transpose_table(a:totable())), 1e-4)
  end)

  it("rounds float16 and bfloat16 products once, also BLAS-sized, transposed and narrowed", function()
    -- small integers: the float32 sums are exact, so the only rounding is the
    -- final one to the 16-bit dtype, which wick.tensor(...):to(dtype) repeats
    local function ints(rows, cols, seed)
      local t = {}
      for i = 1, rows do
        t[i] = {}
        for j = 1, cols do t[i][j] = (i * 7 + j * 13 + seed) % 9 - 4 end
      end
      return t
    end
    for _, dtype in ipairs({ "float16", "bfloat16" }) do
      for _, mkn in ipairs({ { 3, 4, 2 }, { 70, 91, 33 } }) do
        local m, k, n = mkn[1], mkn[2], mkn[3]
        local at, bt = ints(m, k, 1), ints(k, n, 5)
        local want = wick.tensor(naive_mm(at, bt)):to(dtype):totable()
        local a, b = wick.tensor(at, { dtype = dtype }), wick.tensor(bt, { dtype = dtype })
        local r = a:mm(b)
        assert.are.equal(dtype, r.dtype)
        assert.are.same(want, r:totable())
        assert.are.same(want, a:t():contiguous():t():mm(b:t():contiguous():t()):totable())
        -- a narrowed operand keeps a leading dimension wider than its rows
        local wide = wick.zeros(m, k + 5, { dtype = dtype })
        wide:narrow(2, 3, k):copy_(a)
        assert.are.same(want, wide:narrow(2, 3, k):mm(b):totable())
      end
      -- addmm reads C through beta: 0.5 * 2 + 2 * (A @ B), still exact before rounding
      -- (40 x 50 x 30: large enough for the AMX unit where there is one)
      local at, bt = ints(40, 50, 2), ints(50, 30, 3)
      local c = wick.full({ 40, 30 }, 2, { dtype = dtype })
      local r = wick.addmm(c, wick.tensor(at, { dtype = dtype }), wick.tensor(bt, { dtype = dtype }), { beta = 0.5, alpha = 2 })
      local want = naive_mm(at, bt)
      for i = 1, 40 do for j = 1, 30 do want[i][j] = 1 + 2 * want[i][j] end end
      assert.are.same(wick.tensor(want):to(dtype):totable(), r:totable())
    end
  end)

  it("matches the naive loop on a BLAS-sized int64 product", function()
    local av, bv = {}, {}
    for i = 1, 40 do
      av[i], bv[i] = {}, {}
      for j = 1, 40 do av[i][j] = (i * 7 + j * 3) % 11 - 5; bv[i][j] = (i * 5 + j) % 13 - 6 end
    end
    local r = I(av):mm(I(bv))
    assert.are.equal("int64", r.dtype)
    assert.are.same(naive_mm(av, bv), r:totable())
    assert.are.same(naive_mm(transpose_table(av), bv), I(av):t():mm(I(bv)):totable())
  end)

  it("raises on shape mismatch with PyTorch's text", function()
    -- (parenthesised, so not a tail call: the error's position is this line)
    local err = assert_error_has(function() return (wick.ones(2, 3):mm(wick.ones(4, 5))) end,
      "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)")
    assert.is_truthy(err:find("linalg_spec.lua:", 1, true))
    assert_error_has(function() return wick.ones(3, 2):mm(wick.ones(3, 2)) end,
      "mat1 and mat2 shapes cannot be multiplied (3x2 and 3x2)")
  end)

  it("raises on dtype mismatch, naming both dtypes", function()
    assert_error_has(function() return wick.ones(2, 3):mm(wick.ones(3, 2, { dtype = "float64" })) end,
      "float32", "float64")
    assert_error_has(function() return wick.ones(2, 3):mm(I({ { 1 }, { 2 }, { 3 } })) end, "float32", "int64")
  end)

  it("raises on non-2-D input", function()
    assert_error_has(function() return wick.ones(3):mm(wick.ones(3, 2)) end, "mm", "2-D", "1-D")
    assert_error_has(function() return wick.ones(2, 3):mm(wick.ones(3)) end, "mm", "2-D", "1-D")
    assert_error_has(function() return wick.ones(2, 2, 3):mm(wick.ones(3, 2)) end, "mm", "3-D")
    assert_error_has(function() return wick.tensor(1):mm(wick.ones(1, 1)) end, "mm", "0-D")
  end)

  it("raises for a non-tensor argument", function()
    assert_error_has(function() return wick.ones(2, 2):mm(3) end, "mm", "mat2")
  end)
end)

describe("bmm", function()
  local x = { { { 1, 2 }, { 3, 4 } }, { { 0, 1 }, { 1, 0 } } }        -- 2x2x2
  local y = { { { 1, 0, 2 }, { 0, 1, 3 } }, { { 4, 5, 6 }, { 7, 8, 9 } } } -- 2x2x3

  it("multiplies batch by batch", function()
    local r = wick.tensor(x):bmm(wick.tensor(y))
    assert.are.same({ 2, 2, 3 }, shape_of(r))
    assert.are.same({ naive_mm(x[1], y[1]), naive_mm(x[2], y[2]) }, r:totable())
    assert.are.same(r:totable(), wick.bmm(wick.tensor(x), wick.tensor(y)):totable())
  end)

  it("works in float64, int64 and float16", function()
    local expected = { naive_mm(x[1], y[1]), naive_mm(x[2], y[2]) }
    for _, dtype in ipairs({ "float64", "int64", "float16" }) do
      local r = wick.tensor(x, { dtype = dtype }):bmm(wick.tensor(y, { dtype = dtype }))
      assert.are.equal(dtype, r.dtype)
      assert.are.same(expected, r:totable())
    end
  end)

  it("takes permuted and transposed batches", function()
    wick.manual_seed(9)
    local a = wick.randn(3, 4, 5)
    local b = wick.randn(5, 3, 6):permute(2, 1, 3) -- 3x5x6, non-contiguous
    local r = a:bmm(b)
    local at, bt = a:totable(), b:totable()
    local expected = {}
    for i = 1, 3 do expected[i] = naive_mm(at[i], bt[i]) end
    assert_close(r, expected, 1e-5)
    assert_close(a:transpose(2, 3):bmm(a), (function()
      local e = {}
      for i = 1, 3 do e[i] = naive_mm(transpose_table(at[i]), at[i]) end
      return e
    end)(), 1e-5)
  end)

  it("raises on bad shapes", function()
    assert_error_has(function() return wick.ones(2, 2, 3):bmm(wick.ones(3, 3, 4)) end, "bmm", "2", "3")
    assert_error_has(function() return wick.ones(2, 2, 3):bmm(wick.ones(2, 4, 4)) end,
      "shapes cannot be multiplied")
    assert_error_has(function() return wick.ones(2, 3):bmm(wick.ones(3, 4)) end, "bmm", "3-D")
  end)
end)

describe("addmm", function()
  it("is input + mat1 @ mat2 by default", function()
    local r = wick.ones(2, 2):addmm(wick.tensor(A), wick.tensor(B))
    assert.are.same({ { 23, 29 }, { 50, 65 } }, r:totable())
    assert.are.same({ { 23, 29 }, { 50, 65 } }, wick.addmm(wick.ones(2, 2), wick.tensor(A), wick.tensor(B)):totable())
  end)

  it("applies beta and alpha", function()
    local input = wick.tensor({ { 1, 2 }, { 3, 4 } })
    local r = input:addmm(wick.tensor(A), wick.tensor(B), { beta = 2, alpha = 0.5 })
    assert.are.same({ { 2 + 11, 4 + 14 }, { 6 + 24.5, 8 + 32 } }, r:totable())
    local only_beta = input:addmm(wick.tensor(A), wick.tensor(B), { beta = 3 })
    assert.are.same({ { 25, 34 }, { 58, 76 } }, only_beta:totable())
    local only_alpha = input:addmm(wick.tensor(A), wick.tensor(B), { alpha = -1 })
    assert.are.same({ { -21, -26 }, { -46, -60 } }, only_alpha:totable())
    -- the input is untouched
    assert.are.same({ { 1, 2 }, { 3, 4 } }, input:totable())
  end)

  -- small products (up to 4096 multiply-adds) run wick's own loop with alpha
  -- and beta, every row length and layout of it: against the naive loop
  it("applies beta and alpha in small products of every width and layout", function()
    wick.manual_seed(7)
    for _, n in ipairs({ 1, 3, 4, 5, 8, 13 }) do
      local a, b, c = wick.randn(6, 7), wick.randn(7, n), wick.randn(6, n)
      local want = naive_mm(a:totable(), b:totable())
      local ct = c:totable()
      for i = 1, 6 do for j = 1, n do want[i][j] = 0.75 * want[i][j] - 2 * ct[i][j] end end
      assert_close(c:addmm(a, b, { beta = -2, alpha = 0.75 }), want, 1e-5)
      local bt = b:t():contiguous():t() -- columns of B contiguous
      assert_close(c:addmm(a, bt, { beta = -2, alpha = 0.75 }), want, 1e-5)
      local nan = wick.full({ 6, n }, 0 / 0)
      assert_close(nan:addmm(a, b, { beta = 0, alpha = 0.75 }), naive_mm(a:totable(), (b * 0.75):totable()), 1e-5)
    end
  end)

  it("ignores the input (even NaN) when beta is 0", function()
    local input = wick.tensor({ { NaN, NaN }, { NaN, NaN } })
    local r = input:addmm(wick.tensor(A), wick.tensor(B), { beta = 0 })
    assert.are.same(AB, r:totable())
  end)

  it("broadcasts a bias row or a scalar input", function()
    local bias = wick.tensor({ 10, 20 })
    assert.are.same({ { 32, 48 }, { 59, 84 } }, bias:addmm(wick.tensor(A), wick.tensor(B)):totable())
    assert.are.same({ { 20 + 22, 40 + 28 }, { 20 + 49, 40 + 64 } },
      bias:addmm(wick.tensor(A), wick.tensor(B), { beta = 2 }):totable())
    local col = wick.tensor({ { 1 }, { 2 } })
    assert.are.same({ { 23, 29 }, { 51, 66 } }, col:addmm(wick.tensor(A), wick.tensor(B)):totable())
  end)

  it("works in float64 and int64, and on BLAS sizes with transposed operands", function()
    local d = wick.ones(2, 2, { dtype = "float64" }):addmm(wick.tensor(A, { dtype = "float64" }),
      wick.tensor(B, { dtype = "float64" }), { beta = 0.5, alpha = 2 })
    assert.are.equal("float64", d.dtype)
    assert.are.same({ { 44.5, 56.5 }, { 98.5, 128.5 } }, d:totable())
    local i = I({ { 1, 1 }, { 1, 1 } }):addmm(I(A), I(B), { beta = 2, alpha = 3 })
    assert.are.equal("int64", i.dtype)
    assert.are.same({ { 68, 86 }, { 149, 194 } }, i:totable())
    wick.manual_seed(4)
    local m1, m2, inp = wick.randn(64, 48), wick.randn(64, 32), wick.randn(32)
    local r = inp:addmm(m1:t(), m2, { beta = -1, alpha = 0.25 })
    local ref = naive_mm(transpose_table(m1:totable()), m2:totable())
    local iv = inp:totable()
    for a = 1, 48 do for b = 1, 32 do ref[a][b] = -iv[b] + 0.25 * ref[a][b] end end
    assert_close(r, ref, 1e-4)
  end)

  it("raises on a shape or dtype mismatch", function()
    assert_error_has(function() return wick.ones(3, 3):addmm(wick.tensor(A), wick.tensor(B)) end, "addmm",
      "[3, 3]", "[2, 2]")
    assert_error_has(function() return wick.ones(2, 2):addmm(wick.ones(2, 3), wick.ones(4, 2)) end,
      "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x2)")
    assert_error_has(function()
      return wick.ones(2, 2, { dtype = "float64" }):addmm(wick.tensor(A), wick.tensor(B))
    end, "addmm", "float64", "float32")
  end)
end)

describe("matmul", function()
  it("1-D @ 1-D is a dot product giving a 0-dim tensor", function()
    local r = wick.tensor({ 1, 2, 3 }):matmul(wick.tensor({ 4, 5, 6 }))
    assert.are.equal(0, r:dim())
    assert.are.equal(32, r:item())
    local i = I({ 2 ^ 30, 3 }):matmul(I({ 2 ^ 20, 1 }))
    assert.are.equal("int64", i.dtype)
    assert.are.equal(2 ^ 50 + 3, i:item())
  end)

  it("2-D @ 1-D is a matrix-vector product", function()
    local r = wick.tensor(A):matmul(wick.tensor({ 1, 0, -1 }))
    assert.are.same({ 2 }, shape_of(r))
    assert.are.same({ -2, -2 }, r:totable())
  end)

  it("1-D @ 2-D is a vector-matrix product", function()
    local r = wick.tensor({ 1, 2 }):matmul(wick.tensor(A))
    assert.are.same({ 3 }, shape_of(r))
    assert.are.same({ 9, 12, 15 }, r:totable())
  end)

  it("2-D @ 2-D is mm", function()
    assert.are.same(AB, wick.tensor(A):matmul(wick.tensor(B)):totable())
    assert.are.same(AB, wick.matmul(wick.tensor(A), wick.tensor(B)):totable())
  end)

  it("3-D @ 2-D multiplies each batch by the matrix", function()
    local x = { A, { { 0, 1, 0 }, { 1, 0, 1 } }, { { -1, -1, -1 }, { 2, 0, 0 } } } -- 3x2x3
    local r = wick.tensor(x):matmul(wick.tensor(B))
    assert.are.same({ 3, 2, 2 }, shape_of(r))
    assert.are.same({ naive_mm(x[1], B), naive_mm(x[2], B), naive_mm(x[3], B) }, r:totable())
  end)

  it("2-D @ 3-D broadcasts the matrix over the batch", function()
    local y = { B, { { 1, 0 }, { 0, 1 }, { 1, 1 } } } -- 2x3x2
    local r = wick.tensor(A):matmul(wick.tensor(y))
    assert.are.same({ 2, 2, 2 }, shape_of(r))
    assert.are.same({ naive_mm(A, y[1]), naive_mm(A, y[2]) }, r:totable())
  end)

  it("3-D @ 1-D and 1-D @ 3-D drop the vector's dim", function()
    local x = { A, { { 0, 1, 0 }, { 1, 0, 1 } } } -- 2x2x3
    local r = wick.tensor(x):matmul(wick.tensor({ 1, 2, 3 }))
    assert.are.same({ 2, 2 }, shape_of(r))
    assert.are.same({ { 14, 32 }, { 2, 4 } }, r:totable())
    local l = wick.tensor({ 1, -1 }):matmul(wick.tensor(x))
    assert.are.same({ 2, 3 }, shape_of(l))
    assert.are.same({ { -3, -3, -3 }, { -1, 1, -1 } }, l:totable())
  end)

  it("broadcasts batch dims: 2x1x3x4 @ 5x4x2 -> 2x5x3x2", function()
    wick.manual_seed(21)
    local a = wick.randn(2, 1, 3, 4)
    local b = wick.randn(5, 4, 2)
    local r = a:matmul(b)
    assert.are.same({ 2, 5, 3, 2 }, shape_of(r))
    local at, bt = a:totable(), b:totable()
    local expected = {}
    for i = 1, 2 do
      expected[i] = {}
      for j = 1, 5 do expected[i][j] = naive_mm(at[i][1], bt[j]) end
    end
    assert_close(r, expected, 1e-5)
  end)

  it("gives transposed views the results of contiguous copies in every case", function()
    wick.manual_seed(22)
    local m = wick.randn(4, 3)
    local v = wick.randn(4)
    local mt = m:t() -- 3x4 non-contiguous
    assert_close(mt:matmul(v), mt:contiguous():matmul(v):totable(), 1e-6)
    assert_close(v:matmul(m), v:matmul(m:contiguous()):totable(), 1e-6)
    assert_close(mt:matmul(m), naive_mm(mt:totable(), m:totable()), 1e-5)
    local batch = wick.randn(4, 2, 3):transpose(1, 2) -- 2x4x3 non-contiguous
    assert_close(batch:matmul(mt), batch:contiguous():matmul(mt:contiguous()):totable(), 1e-5)
    local p = wick.randn(3, 5, 2):permute(2, 3, 1) -- 5x2x3
    local q = wick.randn(3, 4):t():narrow(2, 2, 2) -- 4x2 ... (narrowed columns of a transpose)
    assert.are.same({ 4, 2 }, shape_of(q))
    local e = wick.randn(3, 1):expand(3, 4) -- stride 0 columns
    assert_close(e:matmul(q), naive_mm(e:totable(), q:totable()), 1e-5)
    assert_close(q:t():matmul(e:t()), naive_mm(transpose_table(q:totable()), transpose_table(e:totable())), 1e-5)
    local pc = p:contiguous()
    assert_close(p:matmul(wick.ones(3, 2)), pc:matmul(wick.ones(3, 2)):totable(), 1e-6)
  end)

  it("works in float64, int64 and float16", function()
    local d = wick.tensor(A, { dtype = "float64" }):matmul(wick.tensor({ 0.1, 0.2, 0.3 }, { dtype = "float64" }))
    assert.are.equal("float64", d.dtype)
    assert_close(d, { 1.4, 3.2 }, 1e-14)
    local i = I({ { A, A } }):matmul(I(B)) -- 1x2x2x3 @ 3x2
    assert.are.equal("int64", i.dtype)
    assert.are.same({ { AB, AB } }, i:totable())
    local h = wick.tensor({ 1, 2, 3 }, { dtype = "float16" }):matmul(wick.tensor(B, { dtype = "float16" }))
    assert.are.equal("float16", h.dtype)
    assert.are.same({ 22, 28 }, h:totable())
  end)

  it("matches the naive loop on a big batched product (BLAS)", function()
    wick.manual_seed(23)
    local a = wick.randn(3, 64, 40)
    local b = wick.randn(40, 64)
    local r = a:matmul(b)
    local at, bt = a:totable(), b:totable()
    for i = 1, 3 do assert_close(r[i], naive_mm(at[i], bt), 1e-4) end
  end)

  it("raises on shape mismatch", function()
    assert_error_has(function() return wick.ones(2, 3):matmul(wick.ones(4, 5)) end,
      "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)")
    assert_error_has(function() return wick.ones(2, 3):matmul(wick.ones(2)) end, "matmul", "[2, 3]", "[2]")
    assert_error_has(function() return wick.ones(3):matmul(wick.ones(4)) end, "matmul", "[3]", "[4]")
    assert_error_has(function() return wick.ones(2, 2, 3):matmul(wick.ones(3, 3, 1)) end, "matmul")
  end)

  it("raises on 0-dim operands and dtype mismatch", function()
    assert_error_has(function() return wick.tensor(2):matmul(wick.ones(2)) end, "matmul", "0-D")
    assert_error_has(function() return wick.ones(2, 2):matmul(wick.ones(2, 2, { dtype = "float64" })) end,
      "float32", "float64")
    assert_error_has(function() return wick.ones(3):matmul(I({ 1, 2, 3 })) end, "float32", "int64")
  end)
end)
