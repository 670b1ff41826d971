-- wick.linalg.eig and wick.linalg.eigvals (torch.linalg.eig, eigvals) of real matrices: the values,
-- their order and the vectors' normalisation against PyTorch 2.15's (CPU, MKL's dgeev), and the
-- gradients of PyTorch's linalg_eig_backward.
local wick = require("wick")
local support = require("spec.support")
local linalg = wick.linalg
local f64 = { dtype = "float64" }

local A4 = { { 0.5, -1.25, 2.0, 0.75 }, { 1.5, 0.25, -0.5, 1.0 }, { -2.0, 1.0, 0.125, -0.75 },
  { 0.25, -1.5, 1.75, -0.5 } }
-- PyTorch's torch.linalg.eig(torch.tensor(A4, dtype=torch.float64))
local L4re = { 0.2888809332976449, 0.2888809332976449, -0.622027748394599, 0.4192658817993088 }
local L4im = { 3.0125970346745388, -3.0125970346745388, 0.0, 0.0 }
local V4re = { { 0.5438340912216605, 0.5438340912216605, -0.4847205468364964, 0.36154525374306656 },
  { -0.004293413802908597, -0.004293413802908597, -0.21713399449356874, 0.7595397512955083 },
  { -0.22566135459562686, -0.22566135459562686, -0.17468141295961268, 0.5181267107394726 },
  { 0.4415229282106374, 0.4415229282106374, 0.8290869820930902, -0.1546903594802012 } }
local V4im = { { 0.0, 0.0, 0.0, 0.0 }, { -0.4548473156233677, 0.4548473156233677, 0.0, 0.0 },
  { 0.4601087311212906, -0.4601087311212906, 0.0, 0.0 }, { 0.19943515173000698, -0.19943515173000698, 0.0, 0.0 } }

-- max |A V - V diag(L)| (complex), over a batch too
local function residual(A, L, V)
  local Ac = A:to(L.dtype)
  return (Ac:matmul(V) - V * L:unsqueeze(-2)):abs():max():item()
end

describe("linalg.eig and eigvals", function()
  it("a 4x4 with a complex pair: PyTorch's eigenvalues, order and unit vectors (largest component real)", function()
    local A = wick.tensor(A4, f64)
    local L, V = linalg.eig(A)
    assert.are.equal("complex128", L.dtype)
    assert.are.equal("complex128", V.dtype)
    support.assert_close(L.real:totable(), L4re, 1e-14)
    support.assert_close(L.imag:totable(), L4im, 1e-14)
    support.assert_close(V.real:totable(), V4re, 1e-13)
    support.assert_close(V.imag:totable(), V4im, 1e-13)
    assert.is_true(residual(A, L, V) < 1e-14)
    local vals = linalg.eigvals(A)
    support.assert_close(vals.real:totable(), L4re, 1e-14)
    support.assert_close(vals.imag:totable(), L4im, 1e-14)
    local r = linalg.eig(A) -- the named result
    assert.is_true(r.eigenvectors:equal(V))
    assert.is_true(r.eigenvalues:equal(L))
  end)

  it("float32 gives complex64 (PyTorch's values within float32's precision)", function()
    local L, V = linalg.eig(wick.tensor(A4))
    assert.are.equal("complex64", L.dtype)
    assert.are.equal("complex64", V.dtype)
    support.assert_close(L.real:totable(), { 0.28888091444969177, 0.28888091444969177, -0.62202763557434082,
      0.41926565766334534 }, 1e-6)
    support.assert_close(L.imag:totable(), { 3.01259708404541016, -3.01259708404541016, 0, 0 }, 1e-6)
    assert.are.equal("complex64", linalg.eigvals(wick.tensor(A4)).dtype)
  end)

  it("symmetric and triangular matrices: real eigenvalues in LAPACK's order, PyTorch's signs", function()
    local L, V = linalg.eig(wick.tensor({ { 2, 1, 0.5 }, { 1, 3, -1 }, { 0.5, -1, 1 } }, f64))
    support.assert_close(L.real:totable(), { 0.1599281908357788, 2.077063898617895, 3.763007910546324 }, 1e-14)
    support.assert_close(L.imag:totable(), { 0, 0, 0 }, 0)
    support.assert_close(V.real:totable(), { { 0.4479164208360768, -0.7854548659624677, -0.4271200457497646 },
      { -0.433116131572947, 0.22730378448211072, -0.8722060571512879 },
      { -0.7821644945385109, -0.5756679972831495, 0.2383800754830894 } }, 1e-13)
    L, V = linalg.eig(wick.tensor({ { 3, 1, 2 }, { 0, -1, 4 }, { 0, 0, 2 } }, f64))
    support.assert_close(L.real:totable(), { 3, -1, 2 }, 0)
    support.assert_close(V.real:totable(), { { 1.0, -0.24253562503633297, -0.8944271909999159 },
      { 0.0, 0.9701425001453319, 0.35777087639996635 }, { 0.0, 0.0, 0.2683281572999748 } }, 1e-14)
    -- lower triangular: LAPACK's balancing permutes it (its order, not the diagonal's)
    L, V = linalg.eig(wick.tensor({ { 3, 0, 0 }, { 1, -1, 0 }, { 2, 4, 2 } }, f64))
    support.assert_close(L.real:totable(), { 2, -1, 3 }, 0)
    support.assert_close(V.real:totable(), { { 0, 0, 0.31524416249564025 }, { 0, 0.6, 0.07881104062391006 },
      { 1, -0.8, 0.9457324874869208 } }, 1e-14)
  end)

  it("the zero matrix, a Jordan block, a rotation", function()
    local L, V = linalg.eig(wick.zeros(3, 3, f64))
    support.assert_close(L.real:totable(), { 0, 0, 0 }, 0)
    assert.is_true(V:equal(wick.eye(3, f64):to("complex128")))
    L, V = linalg.eig(wick.tensor({ { 2, 1 }, { 0, 2 } }, f64))
    support.assert_close(L.real:totable(), { 2, 2 }, 0)
    support.assert_close(V.real:totable(), { { 1, -1 }, { 0, 4.44089209850062616e-16 } }, 1e-15)
    L = linalg.eigvals(wick.tensor({ { 0, 1 }, { -1, 0 } }, f64))
    support.assert_close(L.real:totable(), { 0, 0 }, 0)
    support.assert_close(L.imag:totable(), { 1, -1 }, 0)
  end)

  it("batches, and empty matrices", function()
    wick.manual_seed(3)
    local A = wick.randn(2, 3, 5, 5, f64)
    local L, V = linalg.eig(A)
    assert.are.same({ 2, 3, 5 }, L.shape:totable())
    assert.are.same({ 2, 3, 5, 5 }, V.shape:totable())
    assert.is_true(residual(A, L, V) < 1e-13)
    for b = 1, 3 do -- each matrix's own
      local l = linalg.eigvals(A[2][b])
      assert.is_true((l - L[2][b]):abs():max():item() == 0)
    end
    local norms = (V * V:conj()).real:sum(-2)
    assert.is_true((norms - 1):abs():max():item() < 1e-14)
    local A32 = wick.randn(4, 6, 6)
    local L32, V32 = linalg.eig(A32)
    assert.is_true(residual(A32, L32, V32) < 1e-5)
    L, V = linalg.eig(wick.zeros(0, 0))
    assert.are.same({ 0 }, L.shape:totable())
    assert.are.same({ 0, 0 }, V.shape:totable())
    assert.are.equal("complex64", L.dtype)
    L, V = linalg.eig(wick.zeros(2, 0, 0, f64))
    assert.are.same({ 2, 0 }, L.shape:totable())
    assert.are.equal("complex128", V.dtype)
    assert.are.same({ 0, 1 }, linalg.eigvals(wick.zeros(0, 1, 1)).shape:totable())
    L = linalg.eigvals(wick.tensor({ { -7.5 } }, f64))
    support.assert_close({ L.real:item(), L.imag:item() }, { -7.5, 0 }, 0)
  end)

  it("errors", function()
    support.assert_error_has(function() linalg.eig(wick.zeros(2, 3)) end,
      "linalg.eig: A must be batches of square matrices, but they are 2 by 3 matrices")
    support.assert_error_has(function() linalg.eigvals(wick.zeros(2, 3)) end,
      "linalg.eigvals: A must be batches of square matrices, but they are 2 by 3 matrices")
    support.assert_error_has(function() linalg.eig(wick.zeros(3)) end,
      "linalg.eig: The input tensor A must have at least 2 dimensions")
    support.assert_error_has(function() linalg.eig(wick.zeros(3, 3, { dtype = "int64" })) end,
      "linalg.eig: Expected a floating point tensor of dtype float32 or float64 (got int64)")
    support.assert_error_has(function() linalg.eigvals(wick.zeros(3, 3, { dtype = "float16" })) end,
      "linalg.eigvals: Expected a floating point tensor of dtype float32 or float64 (got float16)")
    support.assert_error_has(function() linalg.eig(wick.tensor({ { 1, 0 / 0 }, { 0, 1 } })) end,
      "linalg.eig: input tensor should not contain infs or NaNs")
    support.assert_error_has(function() linalg.eigvals(wick.tensor({ { 1, math.huge }, { 0, 1 } })) end,
      "linalg.eigvals: input tensor should not contain infs or NaNs")
    support.assert_error_has(function() linalg.eig(wick.zeros(2, 2, { dtype = "complex64" })) end,
      "linalg.eig: complex input (complex64) is not supported")
    support.assert_error_has(function() linalg.eig(nil) end, "linalg.eig: expected a tensor for argument 'A'")
    support.assert_error_has(function() linalg.eigvals("A") end, "linalg.eigvals: expected a tensor")
  end)

  it("huge and tiny entries (dgeev's scaling)", function()
    local L = linalg.eigvals(wick.tensor({ { 1e200, 1 }, { 1, 1e-200 } }, f64))
    support.assert_close(L.real:totable(), { 1e200, 0 }, 1e-15)
    L = linalg.eigvals(wick.tensor({ { 1e-300, 2e-300 }, { 3e-300, 4e-300 } }, f64))
    local r = L.real:totable()
    assert.is_true(math.abs(r[1] / 5.372281323269014e-300 - 1) < 1e-14)
    assert.is_true(math.abs(r[2] / -3.7228132326901432e-301 - 1) < 1e-14)
  end)

  it("gradients: PyTorch's linalg_eig_backward (eigvals, and eig with gauge-invariant losses)", function()
    local A = wick.tensor(A4, f64):requires_grad_()
    local c = wick.tensor({ 1, 2, 3, 4 }, f64)
    local L = linalg.eigvals(A)
    assert.is_true(L.requires_grad)
    local loss = (L.real * c + L.imag * c:flip(1)):sum()
    loss:backward()
    support.assert_close(A.grad:totable(), {
      { 1.9298911952313778, -0.04883772669177422, 0.4941983970358602, -0.8430556065268675 },
      { 0.7163336462564516, 3.095163295224852, 0.9005542703178524, 0.434479235308809 },
      { 0.281329825215523, 1.4506787026365968, 2.457553637364746, -0.49128268458858065 },
      { -0.37875428564937125, 0.30201552764450323, 0.4104922324195378, 2.517391872179024 } }, 1e-13)
    A.grad = nil
    local L2, V = linalg.eig(A)
    local C = wick.arange(0, 16, f64):sin():reshape(4, 4)
    loss = (V:abs() * C):sum() + (L2.imag * L2.imag):sum()
    loss:backward()
    support.assert_close(A.grad:totable(), {
      { -0.8097158957116996, -2.8430324218524117, 4.234951883316098, 0.4695107850482964 },
      { 2.807475348588932, 0.37478184137727877, -1.6951222700664696, 1.6395595725992886 },
      { -3.878024239666999, 1.2265635054049062, 0.5032803098961581, -4.297541858694758 },
      { -0.6532227186036816, -1.6392097072771232, 1.680916869164767, -0.0683462555617376 } }, 1e-12)
    local _, V3 = linalg.eig(A)
    support.assert_error_has(function() V3.real:sum():backward() end,
      "linalg_eig_backward: The eigenvectors in the complex case are specified up to multiplication by e^{i phi}")
    -- the sum of the eigenvalues is the trace
    local B = wick.randn(2, 3, 3, f64):requires_grad_()
    linalg.eigvals(B).real:sum():backward()
    assert.is_true((B.grad - wick.eye(3, f64)):abs():max():item() < 1e-13)
    -- empty: zeros
    local E = wick.zeros(2, 0, 0, f64):requires_grad_()
    local LE, VE = linalg.eig(E)
    assert.is_true(LE.requires_grad and VE.requires_grad)
    linalg.eigvals(E).real:sum():backward()
    assert.are.same({ 2, 0, 0 }, E.grad.shape:totable())
  end)
end)
