-- Complex tensors (src/core/complex.c): the dtypes, the views of their parts,
-- arithmetic checked against the formulas on the parts (computed here in
-- Lua), autograd against PyTorch's convention (the gradient of z is
-- dL/d re z + i dL/d im z), optimizers, printing, checkpoints, and the
-- errors of the ops that do not take them.
local wick = require("wick")

local function c(re, im, dtype)
  return wick.complex(wick.tensor(re, { dtype = dtype }), wick.tensor(im, { dtype = dtype }))
end
-- {re, im} pairs of a 1-D complex tensor
local function pairs_of(z) return z:totable() end
local function close(a, b, tol, what)
  tol = tol or 1e-5
  assert(math.abs(a - b) <= tol * (1 + math.abs(b)), ("%s: %.9g vs %.9g"):format(what or "value", a, b))
end
local function close_pairs(got, want, tol)
  assert.are.equal(#want, #got)
  for i = 1, #want do
    close(got[i][1], want[i][1], tol, "re " .. i)
    close(got[i][2], want[i][2], tol, "im " .. i)
  end
end
local function cmul(a, b) return { a[1] * b[1] - a[2] * b[2], a[1] * b[2] + a[2] * b[1] } end
local function cdiv(a, b)
  local d = b[1] * b[1] + b[2] * b[2]
  return { (a[1] * b[1] + a[2] * b[2]) / d, (a[2] * b[1] - a[1] * b[2]) / d }
end

describe("complex tensors", function()
  local zr, zi = { 1, -2.5, 0, 3 }, { -1, 2, 3.25, 0.5 }
  local wr, wi = { 0.5, 1, -2, 4 }, { 2, -0.25, 1, -3 }
  local z, w = c(zr, zi), c(wr, wi)
  local Z, W = pairs_of(z), pairs_of(w)

  it("are dtypes complex64 and complex128 (cfloat, cdouble), neither floating; promotion as PyTorch's", function()
    assert.are.equal("complex64", z.dtype)
    assert.are.equal("complex64", wick.cfloat)
    assert.are.equal("complex128", wick.cdouble)
    assert.is_true(z:is_complex())
    assert.is_false(z:is_floating_point())
    assert.is_false(wick.is_complex(wick.ones(2)))
    assert.are.equal("complex128", (z + wick.ones(4, { dtype = "float64" })).dtype)
    assert.are.equal("complex64", (z * wick.ones(4, { dtype = "int64" })).dtype)
    assert.are.equal("complex64", (z * 2.5).dtype)
    assert.are.equal("complex128", (z + z:to("complex128")).dtype)
    assert.are.equal("complex64", wick.zeros(2, { dtype = "cfloat" }).dtype)
  end)

  it("view_as_real and view_as_complex share memory, and check layouts as PyTorch", function()
    local v = wick.view_as_real(z)
    assert.are.same({ 4, 2 }, v:size())
    assert.are.equal("float32", v.dtype)
    v[{ 2, 1 }] = 7
    assert.are.equal(7, z.real[2]:item())
    local back = wick.view_as_complex(v)
    assert.is_true(back:is_same_storage(z))
    assert.are.same(z:totable(), back:totable())
    v[{ 2, 1 }] = -2.5
    assert.has_error(function() wick.view_as_complex(wick.zeros(3, 3)) end,
      "view_as_complex: Tensor must have a last dimension of size 2")
    assert.has_error(function() wick.view_as_complex(wick.zeros(2, 3):t()) end)
    assert.has_error(function() wick.view_as_complex(wick.zeros(3, 3):narrow(2, 1, 2)) end,
      "view_as_complex: Tensor must have a stride divisible by 2 for all but last dimension (call :contiguous() first)")
    assert.has_error(function() wick.view_as_real(wick.zeros(2)) end,
      "view_as_real is only supported for complex tensors, got float32")
    -- a view with an odd offset or stride has no complex view
    local flat = wick.zeros(10)
    assert.has_error(function() wick.view_as_complex(flat:narrow(1, 2, 8):view(4, 2)) end,
      "view_as_complex: Tensor must have a storage_offset divisible by 2")
  end)

  it("real and imag are views; conj and angle as the formulas", function()
    close_pairs(pairs_of(z), { { 1, -1 }, { -2.5, 2 }, { 0, 3.25 }, { 3, 0.5 } })
    assert.are.same({ 1, -2.5, 0, 3 }, z.real:totable())
    assert.are.same({ -1, 2, 3.25, 0.5 }, z.imag:totable())
    assert.is_true(z.real:is_same_storage(z))
    local conj = pairs_of(z:conj())
    for i = 1, 4 do assert.are.same({ Z[i][1], -Z[i][2] }, conj[i]) end
    local angle = z:angle():totable()
    for i = 1, 4 do close(angle[i], math.atan2(Z[i][2], Z[i][1])) end
    local real_angle = wick.tensor({ 2, -1, 0 }):angle():totable()
    close(real_angle[1], 0)
    close(real_angle[2], math.pi)
    close(real_angle[3], 0)
    assert.has_error(function() return wick.ones(2).imag end,
      "imag is not implemented for tensors with non-complex dtypes (got float32)")
  end)

  it("+, -, *, / of complex tensors, with real tensors and numbers, broadcast", function()
    local want = {}
    for i = 1, 4 do want[i] = cmul(Z[i], W[i]) end
    close_pairs(pairs_of(z * w), want)
    for i = 1, 4 do want[i] = cdiv(Z[i], W[i]) end
    close_pairs(pairs_of(z / w), want)
    for i = 1, 4 do want[i] = { Z[i][1] + W[i][1], Z[i][2] + W[i][2] } end
    close_pairs(pairs_of(z + w), want)
    for i = 1, 4 do want[i] = { Z[i][1] - 2 * W[i][1], Z[i][2] - 2 * W[i][2] } end
    close_pairs(pairs_of(z:sub(w, { alpha = 2 })), want)
    local r = wick.tensor({ 2, -1, 0.5, 4 })
    for i = 1, 4 do want[i] = { Z[i][1] * r[i]:item(), Z[i][2] * r[i]:item() } end
    close_pairs(pairs_of(z * r), want)
    close_pairs(pairs_of(r * z), want)
    for i = 1, 4 do want[i] = cdiv({ r[i]:item(), 0 }, Z[i]) end
    close_pairs(pairs_of(r / z), want)
    for i = 1, 4 do want[i] = { Z[i][1] + 1.5, Z[i][2] } end
    close_pairs(pairs_of(z + 1.5), want)
    for i = 1, 4 do want[i] = { 1 - Z[i][1], -Z[i][2] } end
    close_pairs(pairs_of(1 - z), want)
    for i = 1, 4 do want[i] = { -Z[i][1], -Z[i][2] } end
    close_pairs(pairs_of(-z), want)
    -- broadcast: a column of complex against a row of complex
    local col = c({ 1, 2 }, { 0, -1 }):view(2, 1)
    local grid = (col * w):view(-1)
    assert.are.same({ 2, 4 }, (col * w):size())
    local g = pairs_of(grid)
    for i = 1, 2 do
      for j = 1, 4 do close_pairs({ g[(i - 1) * 4 + j] }, { cmul(({ { 1, 0 }, { 2, -1 } })[i], W[j]) }) end
    end
    assert.are.same({ true, false, false, false }, z:eq(c({ 1, 0, 0, 0 }, { -1, 0, 0, 0 })):totable())
    assert.are.same({ false, true, true, true }, z:ne(c({ 1, 0, 0, 0 }, { -1, 0, 0, 0 })):totable())
  end)

  it("in place: z:mul_(w), z:add_(1); a real tensor refuses a complex result", function()
    local a = z:clone()
    a:mul_(w)
    local want = {}
    for i = 1, 4 do want[i] = cmul(Z[i], W[i]) end
    close_pairs(pairs_of(a), want)
    a:add_(1)
    for i = 1, 4 do want[i][1] = want[i][1] + 1 end
    close_pairs(pairs_of(a), want)
    assert.has_error(function() a:abs_() end, "abs_: in-place abs is not supported for complex tensors (use t:abs())")
    assert.has_error(function() wick.ones(4):mul_(z) end,
      "mul: result type ComplexFloat can't be cast to the desired output type Float")
  end)

  it("abs, exp, log, sqrt, reciprocal as the formulas", function()
    local abs, e, l, s, rec = z:abs():totable(), pairs_of(z:exp()), pairs_of(z:log()), pairs_of(z:sqrt()),
        pairs_of(z:reciprocal())
    for i = 1, 4 do
      local re, im = Z[i][1], Z[i][2]
      local m = math.sqrt(re * re + im * im)
      close(abs[i], m)
      close_pairs({ e[i] }, { { math.exp(re) * math.cos(im), math.exp(re) * math.sin(im) } })
      close_pairs({ l[i] }, { { math.log(m), math.atan2(im, re) } })
      local t = math.atan2(im, re) / 2
      close_pairs({ s[i] }, { { math.sqrt(m) * math.cos(t), math.sqrt(m) * math.sin(t) } })
      close_pairs({ rec[i] }, { cdiv({ 1, 0 }, Z[i]) })
    end
  end)

  it("pow (2 and 0.5 exactly, others by e^(b log a)), where, masks, sgn, vdot and linear: PyTorch 2.15's values", function()
    local a = c({ 1, -2, 0.5, 0 }, { 0.5, 1, -3, 2 })
    local b = c({ 0.3, 1, -1, 2 }, { 1, 0, 0.5, -1 })
    assert.are.same({ { 0.75, 1 }, { 3, -4 }, { -8.75, -3 }, { -4, 0 } }, (a ^ 2):totable())
    close_pairs(pairs_of(a ^ b), { { 0.63006806, 0.16132990 }, { -2.0000002, 0.99999982 }, { -0.25305980, 0.61387593 },
      { -14.801629, 12.294836 } }, 1e-5)
    close_pairs(pairs_of(a ^ 0.5), { { 1.0290855, 0.24293414 }, { 0.34356076, 1.4553467 }, { 1.3306730, -1.1272491 },
      { 1, 1 } }, 1e-5)
    assert.are.same({ { 1, 0.5 }, { -2, 1 }, { 0.5, -3 }, { 0, 2 } }, wick.where(a:abs():gt(1), a, b):totable())
    assert.are.same({ { 1, 0.5 }, { -2, 1 }, { 0.5, -3 }, { 0, 2 } }, a[a:abs():gt(1)]:totable())
    close_pairs(pairs_of(a:sgn()), { { 0.89442718, 0.44721359 }, { -0.89442718, 0.44721359 }, { 0.16439898, -0.98639393 },
      { 0, 1 } })
    close_pairs({ wick.vdot(a, b):totable() }, { { -5.2, -6.9 } })
    local W = wick.complex(wick.arange(8):reshape(2, 4) * 0.1, wick.arange(8):reshape(2, 4) * -0.2)
    close_pairs(pairs_of(wick.nn.functional.linear(a, W, wick.complex(wick.ones(2), wick.zeros(2)))),
      { { 1.1, 0.3 }, { 1.3, 0.9 } })
  end)

  it("sum and mean, over everything or a dim, keepdim; matmul as the sums of products", function()
    local m = c({ { 1, 2, 3 }, { -1, 0.5, 2 } }, { { 0, -1, 2 }, { 1, 1, -0.5 } })
    local all = m:sum():totable()
    close_pairs({ all }, { { 7.5, 2.5 } })
    close_pairs(pairs_of(m:sum(1)), { { 0, 1 }, { 2.5, 0 }, { 5, 1.5 } })
    close_pairs(pairs_of(m:mean(2)), { { 2, 1 / 3 }, { 0.5, 0.5 } })
    assert.are.same({ 2, 1 }, m:sum(2, true):size())
    assert.are.same({ 1, 1 }, m:sum({ keepdim = true, dim = nil }):size())
    local v = c({ 1, -1, 2 }, { 0.5, 2, 0 })
    local prod = m:matmul(v)
    local M, V = m:totable(), pairs_of(v)
    for i = 1, 2 do
      local acc = { 0, 0 }
      for k = 1, 3 do
        local p = cmul(M[i][k], V[k])
        acc = { acc[1] + p[1], acc[2] + p[2] }
      end
      close_pairs({ prod:totable()[i] }, { acc })
    end
    -- a real operand: the same as its complex copy
    local r = wick.tensor({ { 1, 2 }, { 0, -1 }, { 3, 1 } })
    close_pairs(wick.view_as_complex(wick.view_as_real(m:matmul(r)):contiguous()):view(-1):totable(),
      m:matmul(r:to("complex64")):view(-1):totable())
    assert.are.equal("complex64", wick.bmm(m:unsqueeze(1), m:t():unsqueeze(1)).dtype)
  end)

  it("norms of |z| (sqrt of the sum of |z|^2), vector and Frobenius, with gradients finite at 0", function()
    local a = c({ 3, 0, 0 }, { 4, 1, 0 })
    close(a:norm():item(), math.sqrt(26))
    close(wick.linalg.vector_norm(a):item(), math.sqrt(26))
    close(a:norm(1):item(), 6)
    close(wick.linalg.matrix_norm(a:view(1, 3)):item(), math.sqrt(26))
    local p = a:clone():requires_grad_()
    local n = p:norm()
    n:backward()
    close_pairs(pairs_of(p.grad), pairs_of(a / math.sqrt(26)))
  end)

  it("converts: real to complex (imaginary 0), complex to real (the real part), between widths", function()
    assert.are.same({ { 1, 0 }, { 2, 0 } }, wick.tensor({ 1, 2 }):to("complex64"):totable())
    assert.are.same({ 1, -2.5, 0, 3 }, z:to("float32"):totable())
    assert.are.same(z:totable(), z:to("complex128"):to("complex64"):totable())
    local dst = wick.zeros(4, { dtype = "complex64" })
    dst:copy_(z)
    assert.are.same(z:totable(), dst:totable())
    dst:copy_(wick.tensor({ 5 }))
    assert.are.same({ { 5, 0 }, { 5, 0 }, { 5, 0 }, { 5, 0 } }, dst:totable())
    dst:fill_(2)
    assert.are.same({ 2, 0 }, dst:totable()[3])
    assert.are.same({ { 1, 0 }, { 1, 0 } }, wick.ones(2, { dtype = "complex128" }):totable())
    local cat = wick.cat({ z, w })
    assert.are.same(z:totable()[4], cat:totable()[4])
    assert.are.same(w:totable()[1], cat:totable()[5])
    assert.are.same(z:totable()[2], z:flip(1):totable()[3])
  end)

  it("draws rand (each part uniform) and randn (each part of variance 1/2)", function()
    wick.manual_seed(1)
    local n = wick.randn(20000, { dtype = "complex64" })
    local v = wick.view_as_real(n)
    close(v:mean():item(), 0, 0.03, "mean")
    close(v:var(1)[1]:item(), 0.5, 0.05, "var re")
    close(v:var(1)[2]:item(), 0.5, 0.05, "var im")
    local u = wick.view_as_real(wick.rand(1000, { dtype = "complex128" }))
    assert.is_true(u:min():item() >= 0 and u:max():item() < 1 and u:std():item() > 0.2)
  end)

  it("differentiate as PyTorch: d|z|^2 = 2z, d re(z w) / dz = conj(w)", function()
    local a = z:clone():requires_grad_()
    local loss = (a:abs() * a:abs()):sum()
    loss:backward()
    close_pairs(pairs_of(a.grad), pairs_of(z * 2))
    local b = z:clone():requires_grad_()
    local l2 = (b * w).real:sum()
    l2:backward()
    close_pairs(pairs_of(b.grad), pairs_of(w:conj()))
    -- through view_as_complex to a real leaf: the gradient of its pairs
    local x = wick.view_as_real(z):clone():requires_grad_()
    local l3 = (wick.view_as_complex(x) * w).imag:sum()
    l3:backward()
    -- im(z w) = re z im w + im z re w
    for i = 1, 4 do
      close(x.grad[i][1]:item(), W[i][2])
      close(x.grad[i][2]:item(), W[i][1])
    end
    assert.are.equal("ViewAsRealBackward0", tostring(wick.view_as_real(b * 1).grad_fn))
    -- |z| at 0: gradient 0, as PyTorch's (not NaN)
    local at0 = c({ 0, 3 }, { 0, 4 }):requires_grad_()
    local l4 = at0:abs():sum()
    l4:backward()
    assert.are.same({ { 0, 0 }, { 0.6000000238418579, 0.800000011920929 } }, at0.grad:totable())
  end)

  it("train as parameters: SGD updates each part as its real view", function()
    local p = wick.nn.Parameter(z:clone())
    assert.is_true(p.requires_grad)
    local opt = wick.optim.SGD({ p }, { lr = 0.1 })
    local loss = (p * w).real:sum()
    loss:backward()
    opt:step()
    close_pairs(pairs_of(p:detach()), pairs_of(z - w:conj() * 0.1))
  end)

  it("print as PyTorch, with the complex dtype the default one's", function()
    assert.are.equal("tensor([ 1.0000-1.0000j, -2.5000+2.0000j,  0.0000+3.2500j,  3.0000+0.5000j])", tostring(z))
    assert.are.equal("tensor([1.+0.j, 2.+0.j], dtype=complex128)", tostring(wick.tensor({ 1, 2 }):to("complex128")))
  end)

  it("save and load, and read PyTorch's complex storages' names", function()
    local path = os.tmpname()
    wick.save({ z = z, w = w:to("complex128") }, path)
    local s = wick.load(path)
    os.remove(path)
    assert.are.same(z:totable(), s.z:totable())
    assert.are.equal("complex128", s.w.dtype)
    assert.are.same(w:totable(), s.w:to("complex64"):totable())
  end)

  it("are refused by the ops that do not take them, naming the op", function()
    for name, f in pairs({
      relu = function() return z:relu() end,
      max = function() return z:max() end,
      sort = function() return z:sort() end,
      cumsum = function() return z:cumsum(1) end,
      floor = function() return z:floor() end,
      clamp = function() return z:clamp(0, 1) end,
      prod = function() return z:prod() end,
    }) do
      local ok, err = pcall(f)
      assert.is_false(ok, name)
      assert.is_truthy(tostring(err):find("not implemented for complex64", 1, true), name .. ": " .. tostring(err))
    end
    assert.has_error(function() return z[1]:item() end,
      "item(): a complex64 value has two parts, which one number cannot hold: read t.real:item() and t.imag:item()")
  end)
end)
