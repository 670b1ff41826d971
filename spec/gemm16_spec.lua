-- bfloat16 and float16 matrix products (src/cpu/cpu_gemm.c: the AMX kernel,
-- the VDPBF16PS kernel of src/cpu/cpu_gemm_avx512.c, or the float32 product
-- of operands widened 16 an instruction). ctest runs this file three times: as
-- the CPU chooses (gemm16_spec), with the VDPBF16PS kernel forced
-- (gemm16_spec_dot: WICK_BF16_KERNEL=dot) and with AVX-512 and AMX off
-- (gemm16_spec_fallback: F16C/AVX2 or scalar conversions). Every result is
-- checked against the float32 product of the same (16-bit) inputs: float32
-- accumulation and one rounding allow half a unit of the result plus the
-- float32 sums' order (2^-16 of sum |a| |b|), so a lost, doubled or misplaced
-- product fails.
local wick = require("wick")
local support = require("spec.support")

-- |r - want| <= 2^-8 |want| + 2^-16 (|a| @ |b|), elementwise; `want` float32
local function check_product(r, want, bound, what, dtype)
  assert.are.equal(dtype or "bfloat16", r.dtype, what)
  assert.are.same(want:size(), r:size(), what)
  local tol = want:abs() * 2 ^ -8 + bound * 2 ^ -16 + 1e-30
  local excess = ((r:to("float32") - want):abs() - tol):max():item()
  assert(excess <= 0, ("%s: off by %g beyond the tolerance"):format(what, excess))
end

-- a:mm(b) for bfloat16 a, b (any views) against their float32 product
local function check_mm(a, b, what)
  local af, bf = a:to("float32"), b:to("float32")
  check_product(a:mm(b), af:mm(bf), af:abs():mm(bf:abs()), what, a.dtype)
end

local function rand(...) return wick.randn(...):to("bfloat16") end
local function rand16(dtype, ...) return wick.randn(...):to(dtype) end

-- (m, k, n): tiny (the widening path), single rows and columns, k = 1 and odd,
-- edges of the 6 x 64 blocks, k over several 256-deep blocks
local SHAPES = {
  { 1, 1, 1 }, { 3, 5, 2 }, { 64, 1, 600 }, { 97, 3, 130 }, { 6, 512, 64 }, { 7, 515, 65 },
  { 100, 300, 200 }, { 1, 4096, 9 }, { 300, 257, 1 }, { 129, 1030, 70 }, { 12, 64, 128 },
}

describe("bfloat16 and float16 mm", function()
  wick.manual_seed(17)

  it("matches the float32 product of the same inputs, plain and transposed", function()
    for _, dtype in ipairs({ "bfloat16", "float16" }) do
      for _, s in ipairs(SHAPES) do
        local m, k, n = s[1], s[2], s[3]
        local what = ("%s %dx%dx%d"):format(dtype, m, k, n)
        local a, b = rand16(dtype, m, k), rand16(dtype, k, n)
        check_mm(a, b, what)
        check_mm(rand16(dtype, k, m):t(), b, what .. " A^T")
        check_mm(a, rand16(dtype, n, k):t(), what .. " B^T")
        check_mm(rand16(dtype, k, m):t(), rand16(dtype, n, k):t(), what .. " A^T B^T")
      end
    end
  end)

  it("reads strided views: a leading dimension wider than the rows", function()
    local a = rand(70, 300):narrow(2, 11, 257) -- 70 x 257, lda 300
    local b = rand(257, 400):narrow(2, 3, 129) -- 257 x 129, ldb 400
    check_mm(a, b, "narrowed")
    check_mm(rand(300, 90):narrow(1, 5, 257):t(), b, "narrowed A^T")
    check_mm(a, rand(160, 257):narrow(1, 2, 129):t(), "narrowed B^T")
    -- every other column: not a BLAS layout, copied first
    check_mm(rand(40, 257, 2):select(3, 1), b, "stepped")
  end)

  it("applies alpha and beta once, to float32 sums (addmm)", function()
    for _, dtype in ipairs({ "bfloat16", "float16" }) do
      for _, s in ipairs({ { 40, 50, 30 }, { 129, 1030, 70 } }) do
        local m, k, n = s[1], s[2], s[3]
        local c, a, b = rand16(dtype, m, n), rand16(dtype, m, k), rand16(dtype, k, n)
        local r = wick.addmm(c, a, b, { beta = 0.5, alpha = 2 })
        local af, bf = a:to("float32"), b:to("float32")
        local want = c:to("float32") * 0.5 + af:mm(bf) * 2
        check_product(r, want, af:abs():mm(bf:abs()) * 2 + c:to("float32"):abs(),
          ("addmm %s %dx%dx%d"):format(dtype, m, k, n), dtype)
      end
    end
  end)

  it("rounds to nearest even once and keeps infinities and NaN", function()
    -- 1 + 2^-8 is halfway between two bfloat16 numbers: nearest even is 1
    local a = wick.ones(64, 512, { dtype = "bfloat16" })
    local b = wick.zeros(512, 64, { dtype = "bfloat16" })
    b[1]:fill_(1)
    b[2]:fill_(2 ^ -8)
    local r = a:mm(b)
    assert.are.equal(1, r:max():item())
    assert.are.equal(1, r:min():item())
    b[2]:fill_(3 * 2 ^ -8) -- 1 + 3 * 2^-8: halfway, up to the even 1 + 2^-6
    assert.are.equal(1 + 2 ^ -6, a:mm(b):min():item())
    b[3][5] = math.huge
    b[3][6] = 0 / 0
    r = a:mm(b)
    assert.are.equal(math.huge, r[1][5]:item())
    assert.is_true(r[1][6]:item() ~= r[1][6]:item())
    assert.is_true(r[1][7]:item() == 1 + 2 ^ -6)
    -- float16: 1 + 2^-11 is halfway, 1 + 3 * 2^-11 rounds up to 1 + 2^-9
    local h = wick.ones(64, 512, { dtype = "float16" })
    local hb = wick.zeros(512, 64, { dtype = "float16" })
    hb[1]:fill_(1)
    hb[2]:fill_(2 ^ -11)
    assert.are.equal(1, h:mm(hb):max():item())
    hb[2]:fill_(3 * 2 ^ -11)
    assert.are.equal(1 + 2 ^ -9, h:mm(hb):min():item())
    -- a number beyond float16's largest (65504) is an error, as PyTorch's; an infinity passes through
    support.assert_error_has(function() hb[3][5] = 70000 end, "c10::Half without overflow")
    hb[3][5] = math.huge
    assert.are.equal(math.huge, h:mm(hb)[1][5]:item())
  end)

  it("batches (bmm and matmul with broadcasting)", function()
    local a, b = rand(3, 33, 70), rand(3, 70, 65)
    local r = a:bmm(b)
    for i = 1, 3 do
      local af, bf = a[i]:to("float32"), b[i]:to("float32")
      check_product(r[i], af:mm(bf), af:abs():mm(bf:abs()), "bmm " .. i)
    end
    local w = rand(70, 65)
    local r2 = a:matmul(w)
    for i = 1, 3 do
      local af, wf = a[i]:to("float32"), w:to("float32")
      check_product(r2[i], af:mm(wf), af:abs():mm(wf:abs()), "matmul " .. i)
    end
  end)

  it("runs linear layers with bias, forward and backward", function()
    local lin = wick.nn.Linear(300, 130, { dtype = "bfloat16" })
    local x = rand(64, 300):requires_grad_()
    local y = lin(x)
    assert.are.equal("bfloat16", y.dtype)
    local xf, wf = x:detach():to("float32"), lin.weight:detach():to("float32")
    local want = xf:mm(wf:t()) + lin.bias:detach():to("float32")
    check_product(y, want, xf:abs():mm(wf:t():abs()) + lin.bias:detach():to("float32"):abs(), "linear")
    local g = rand(64, 130)
    y:backward(g)
    local gf = g:to("float32")
    check_product(x.grad, gf:mm(wf), gf:abs():mm(wf:abs()), "linear dx")
    check_product(lin.weight.grad, gf:t():mm(xf), gf:t():abs():mm(xf:abs()), "linear dW")
  end)

  it("differentiates through mm in bfloat16", function()
    local a, b = rand(50, 700):requires_grad_(), rand(700, 40):requires_grad_()
    local g = rand(50, 40)
    a:mm(b):backward(g)
    local af, bf, gf = a:detach():to("float32"), b:detach():to("float32"), g:to("float32")
    check_product(a.grad, gf:mm(bf:t()), gf:abs():mm(bf:t():abs()), "mm da")
    check_product(b.grad, af:t():mm(gf), af:t():abs():mm(gf:abs()), "mm db")
  end)

  it("gives the same result at 1 and 2 threads", function()
    local a, b = rand(200, 600), rand(600, 300)
    local n = wick.get_num_threads()
    wick.set_num_threads(1)
    local r1 = a:mm(b)
    wick.set_num_threads(2)
    local r2 = a:mm(b)
    wick.set_num_threads(n)
    assert.is_true(r1:equal(r2))
  end)

  it("handles empty operands", function()
    assert.are.same({ 0, 70 }, rand(0, 600):mm(rand(600, 70)):size())
    local z = rand(64, 0):mm(rand(0, 600))
    assert.are.equal(0, z:abs():max():item())
    local c = rand(64, 600)
    assert.is_true(wick.addmm(c, rand(64, 0), rand(0, 600), { beta = 1 }):equal(c))
  end)
end)
