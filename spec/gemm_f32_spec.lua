-- float32 matrix products through every route of src/cpu/cpu_gemm.c: wick's
-- AVX-512 kernel (src/cpu/cpu_gemm_avx512.c: C with at most 256 rows, or at
-- most 64 columns and a plain A, on CPUs whose 512-bit FMAs do twice the work
-- of 256-bit ones) and BLIS for the rest. ctest runs this file again with the
-- kernel off (gemm_f32_spec_blas: WICK_NO_AVX512_F32=1), so both routes meet
-- the same checks on such a CPU. Every result is checked against the float64
-- product of the same float32 inputs: float32 sums of k products stay within
-- k * 2^-23 of sum |a| |b| (plus the result's rounding), so a lost, doubled or
-- misplaced product fails.
local wick = require("wick")

-- r (float32) against a:double() @ b:double() * alpha + c * beta
local function check(r, a, b, what, alpha, beta, c)
  alpha, beta = alpha or 1, beta or 0
  assert.are.equal("float32", r.dtype, what)
  local ad, bd = a:to("float64"), b:to("float64")
  local want = ad:mm(bd) * alpha
  local bound = ad:abs():mm(bd:abs()) * math.abs(alpha)
  if beta ~= 0 then
    want = want + c:to("float64") * beta
    bound = bound + c:to("float64"):abs() * math.abs(beta)
  end
  assert.are.same(want:size(), r:size(), what)
  local k = a:size(2)
  local tol = bound * ((k + 2) * 2 ^ -23) + 1e-30
  local excess = ((r:to("float64") - want):abs() - tol):max():item()
  assert(excess <= 0, ("%s: off by %g beyond the tolerance"):format(what, excess))
end

-- (m, k, n): rows around the kernel's 6, columns around its panels of 64
-- (and a last panel's 16, 32 or 48 columns, whole or not: its narrower
-- kernels), k around its blocks of 128 (1, 127, 129, 300) and the 16 x 16
-- transposes of a B^T (256, 784), few rows (<= 256) and few columns (<= 64)
-- and neither (BLIS)
local SHAPES = {
  { 1, 4097, 1 }, { 7, 600, 3 }, { 5, 129, 64 }, { 6, 128, 65 }, { 13, 1, 4096 }, { 20, 200, 800 },
  { 64, 300, 127 }, { 128, 257, 130 }, { 255, 127, 200 }, { 256, 129, 64 }, { 257, 33, 63 }, { 700, 100, 64 },
  { 1000, 20, 17 }, { 300, 70, 300 }, { 128, 784, 112 }, { 128, 256, 10 }, { 24, 256, 48 },
}

describe("float32 mm", function()
  wick.manual_seed(5)

  -- 3 threads: block counts that 2 divides and 3 does not (choose_blocks)
  for _, threads in ipairs({ 1, 2, 3 }) do
    it(("matches the float64 product, plain and transposed, on %d thread(s)"):format(threads), function()
      local before = wick.get_num_threads()
      wick.set_num_threads(threads)
      for _, s in ipairs(SHAPES) do
        local m, k, n = s[1], s[2], s[3]
        local what = ("%dx%dx%d, %d thread(s)"):format(m, k, n, threads)
        local a, b = wick.randn(m, k), wick.randn(k, n)
        local at, bt = wick.randn(k, m):t(), wick.randn(n, k):t()
        check(a:mm(b), a, b, what)
        check(at:mm(b), at, b, what .. " A^T")
        check(a:mm(bt), a, bt, what .. " B^T")
        check(at:mm(bt), at, bt, what .. " A^T B^T")
      end
      wick.set_num_threads(before)
    end)
  end

  it("reads strided views: leading dimensions wider than the rows", function()
    local a = wick.randn(70, 300):narrow(2, 11, 257) -- 70 x 257, lda 300
    local b = wick.randn(257, 400):narrow(2, 3, 129) -- 257 x 129, ldb 400
    check(a:mm(b), a, b, "narrowed")
    local at = wick.randn(300, 90):narrow(1, 5, 257):t()
    check(at:mm(b), at, b, "narrowed A^T")
    local bt = wick.randn(160, 257):narrow(1, 2, 129):t()
    check(a:mm(bt), a, bt, "narrowed B^T")
  end)

  it("applies alpha and beta (addmm), and ignores a NaN input when beta is 0", function()
    for _, s in ipairs({ { 40, 300, 70 }, { 200, 129, 64 }, { 600, 50, 30 }, { 300, 70, 300 } }) do
      local m, k, n = s[1], s[2], s[3]
      local what = ("addmm %dx%dx%d"):format(m, k, n)
      local c, a, b = wick.randn(m, n), wick.randn(m, k), wick.randn(k, n)
      check(wick.addmm(c, a, b, { beta = 0.5, alpha = 2 }), a, b, what, 2, 0.5, c)
      check(wick.addmm(c, a, b), a, b, what .. " beta 1", 1, 1, c)
      local nan = wick.full({ m, n }, 0 / 0)
      local r = wick.addmm(nan, a, b, { beta = 0 })
      assert.is_false(r:ne(r):any(), what .. ": NaN from an ignored input")
      check(r, a, b, what .. " beta 0")
    end
  end)

  it("keeps infinities and NaN of the operands", function()
    local a, b = wick.randn(30, 200), wick.randn(200, 70)
    a[3][100] = math.huge
    b[50][7] = 0 / 0
    local r = a:mm(b)
    local function nan(x) return x ~= x end
    for i = 1, 30 do assert.is_true(nan(r[i][7]:item()), "NaN in B's column 7 reaches every row") end
    local x = r[3][1]:item()
    assert.is_true(x == math.huge or x == -math.huge or nan(x), "the infinity reaches its row")
    assert.is_false(nan(r[4][1]:item()), "a row without the infinity stays finite")
    assert.is_true(math.abs(r[4][1]:item()) < math.huge)
  end)

  it("gives the same bits run to run (blocks depend only on sizes and threads)", function()
    local a, b = wick.randn(200, 500), wick.randn(500, 300)
    assert.is_true(a:mm(b):equal(a:mm(b)))
  end)
end)
