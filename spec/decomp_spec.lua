-- wick.linalg's decompositions (src/core/decomp.c, src/cpu/cpu_decomp.c):
-- solve, inv, det, slogdet, cholesky, qr, eigh, svd, pinv, lstsq,
-- matrix_rank and the norms built on them; the torch.* names; the
-- derivatives of solve, inv, det, slogdet and cholesky (checked against
-- finite differences, and twice); the errors PyTorch gives.
local wick = require("wick")
local support = require("spec.support")
local assert_error_has = support.assert_error_has
local linalg = wick.linalg

local F64 = { dtype = "float64" }
local unpack = table.unpack or unpack -- luacheck: ignore (LuaJIT's global)
local function randn(...)
  local sizes = { ... }
  sizes[#sizes + 1] = F64
  return wick.randn(unpack(sizes))
end
local function maxdiff(a, b) return (a - b):abs():max():item() end
local function eye(n) return wick.eye(n, F64) end
local function spd(n, batch) -- symmetric positive-definite
  local X = batch and randn(batch, n, n) or randn(n, n)
  return X:matmul(X:transpose(-2, -1)) + eye(n) * n
end

describe("linalg.solve, inv, det", function()
  it("solve gives X with A X = B, for matrices, vectors and batches", function()
    wick.manual_seed(3)
    local A, B = randn(5, 5), randn(5, 2)
    assert.is_true(maxdiff(A:mm(linalg.solve(A, B)), B) < 1e-12)
    local b = randn(5)
    local x = linalg.solve(A, b)
    assert.are.same({ 5 }, x:size())
    assert.is_true(maxdiff(A:mv(x), b) < 1e-12)
    local As, Bs = randn(3, 4, 4), randn(3, 4, 2)
    assert.is_true(maxdiff(As:matmul(linalg.solve(As, Bs)), Bs) < 1e-12)
    -- one A for a batch of B (broadcast), and X A = B with left = false
    local Bb = randn(3, 5, 2)
    assert.is_true(maxdiff(A:matmul(linalg.solve(A, Bb)), Bb) < 1e-12)
    local Br = randn(2, 5)
    assert.is_true(maxdiff(linalg.solve(A, Br, { left = false }):mm(A), Br) < 1e-12)
  end)

  it("inv, det and slogdet agree with each other and with a determinant by hand", function()
    local A = wick.tensor({ { 4, 1, 2 }, { 1, 3, 0 }, { 2, 0, 5 } }, F64)
    -- 4 (15 - 0) - 1 (5 - 0) + 2 (0 - 6) = 43
    assert.is_true(math.abs(linalg.det(A):item() - 43) < 1e-12)
    assert.is_true(math.abs(A:det():item() - 43) < 1e-12)
    local sign, logabsdet = linalg.slogdet(A)
    assert.are.equal(1, sign:item())
    assert.is_true(math.abs(logabsdet:item() - math.log(43)) < 1e-12)
    assert.is_true(maxdiff(A:mm(linalg.inv(A)), eye(3)) < 1e-12)
    assert.is_true(maxdiff(wick.inverse(A), linalg.inv(A)) == 0)
    local P = wick.tensor({ { 0, 1 }, { 1, 0 } }, F64) -- det -1: logdet is NaN, as PyTorch
    assert.are.equal(-1, linalg.det(P):item())
    assert.is_true(P:logdet():item() ~= P:logdet():item())
    -- float32 and a batch
    local Af = wick.randn(2, 3, 3) + wick.eye(3) * 3
    local d = linalg.det(Af)
    assert.are.same({ 2 }, d:size())
    assert.are.equal("float32", d.dtype)
    assert.is_true(math.abs(d[1]:item() - linalg.det(Af[1]:double()):item()) < 1e-3 * math.abs(d[1]:item()))
  end)

  it("says what is wrong: singular, not square, not floating, mismatched shapes", function()
    local S = wick.tensor({ { 1, 2 }, { 2, 4 } }, F64)
    assert_error_has(function() linalg.inv(S) end, "The diagonal element 2 is zero")
    assert_error_has(function() linalg.solve(S, wick.ones(2, F64)) end, "input matrix is singular")
    assert.are.equal(0, linalg.det(S):item())
    assert_error_has(function() linalg.inv(randn(2, 3)) end, "A must be batches of square matrices")
    assert_error_has(function() linalg.det(wick.ones(3)) end, "at least 2 dimensions")
    assert_error_has(function() linalg.inv(wick.ones(2, 2, { dtype = "int64" })) end, "float32 or float64")
    assert_error_has(function() linalg.solve(eye(3), randn(4, 2)) end, "Incompatible shapes")
    -- empty: det of 0 x 0 is 1, a batch of none is empty
    assert.are.equal(1, linalg.det(wick.zeros(0, 0, F64)):item())
    assert.are.same({ 0 }, linalg.det(wick.zeros(0, 2, 2, F64)):size())
  end)

  it("differentiates solve, inv, det, slogdet and cholesky, also twice", function()
    wick.manual_seed(4)
    local A, B = randn(3, 3) + eye(3) * 3, randn(3, 2)
    support.gradcheck(function(a, b) return linalg.solve(a, b) end, { A, B })
    support.gradcheck(function(a) return linalg.inv(a) end, { A })
    support.gradcheck(function(a) return linalg.det(a) end, { A })
    support.gradcheck(function(a) local _, l = linalg.slogdet(a); return l end, { A })
    support.gradcheck(function(x) return linalg.cholesky(x:matmul(x:t()) + eye(3) * 3) end, { randn(3, 3) })
    support.gradgradcheck(function(a) return linalg.inv(a) end, { A })
    support.gradgradcheck(function(a) return linalg.det(a) end, { A })
  end)
end)

describe("linalg.cholesky, qr, eigh, svd", function()
  it("cholesky gives L with A = L L^T (upper: U^T U), and refuses a matrix that is not positive-definite", function()
    local A = spd(4, 2)
    local L = linalg.cholesky(A)
    assert.is_true(maxdiff(L:matmul(L:transpose(-2, -1)), A) < 1e-10)
    assert.is_true(maxdiff(L, L:tril()) == 0)
    local U = linalg.cholesky(A, { upper = true })
    assert.is_true(maxdiff(U:transpose(-2, -1):matmul(U), A) < 1e-10)
    assert_error_has(function() linalg.cholesky(wick.tensor({ { 1, 2 }, { 2, 1 } }, F64)) end,
      "not positive-definite (the leading minor of order 2")
  end)

  it("qr gives orthonormal Q and upper R, reduced and complete", function()
    local A = randn(5, 3)
    local Q, R = linalg.qr(A)
    assert.are.same({ 5, 3 }, Q:size())
    assert.are.same({ 3, 3 }, R:size())
    assert.is_true(maxdiff(Q:mm(R), A) < 1e-12)
    assert.is_true(maxdiff(Q:t():mm(Q), eye(3)) < 1e-12)
    assert.is_true(maxdiff(R, R:triu()) == 0)
    local Qc, Rc = linalg.qr(A, "complete")
    assert.are.same({ 5, 5 }, Qc:size())
    assert.is_true(maxdiff(Qc:t():mm(Qc), eye(5)) < 1e-12)
    assert.is_true(maxdiff(Qc:mm(Rc), A) < 1e-12)
    -- LAPACK's signs: R's diagonal is minus the column norm where the column leads positive
    local Q1, R1 = linalg.qr(wick.tensor({ { 3, 0 }, { 4, 1 } }, F64))
    assert.are.equal(-5, R1[1][1]:item())
    assert.is_true(maxdiff(Q1:mm(R1), wick.tensor({ { 3, 0 }, { 4, 1 } }, F64)) < 1e-12)
  end)

  it("eigh gives ascending eigenvalues and orthonormal eigenvectors of the lower triangle", function()
    local A = spd(5)
    local w, V = linalg.eigh(A)
    for i = 2, 5 do assert.is_true(w[i - 1]:item() <= w[i]:item()) end
    assert.is_true(maxdiff(V:mm(wick.diag(w)):mm(V:t()), A) < 1e-10)
    assert.is_true(maxdiff(V:t():mm(V), eye(5)) < 1e-12)
    local Ab = A:clone()
    Ab[1][5] = 100 -- the upper triangle is not read
    assert.is_true(maxdiff(linalg.eigvalsh(Ab), w) < 1e-12)
  end)

  it("svd gives U S Vh, reduced and full, for tall, wide and rank-deficient matrices", function()
    for _, shape in ipairs({ { 5, 3 }, { 3, 5 }, { 4, 4 } }) do
      local A = randn(shape[1], shape[2])
      local U, S, Vh = linalg.svd(A, false)
      assert.is_true(maxdiff(U:mm(wick.diag(S)):mm(Vh), A) < 1e-12)
      for i = 2, S:size(1) do assert.is_true(S[i - 1]:item() >= S[i]:item()) end
      local Uf, Sf, Vhf = linalg.svd(A)
      assert.are.same({ shape[1], shape[1] }, Uf:size())
      assert.are.same({ shape[2], shape[2] }, Vhf:size())
      assert.is_true(maxdiff(Uf:t():mm(Uf), eye(shape[1])) < 1e-12)
      assert.is_true(maxdiff(Vhf:mm(Vhf:t()), eye(shape[2])) < 1e-12)
      assert.is_true(maxdiff(Sf, S) == 0)
    end
    local R = wick.tensor({ { 1, 2 }, { 2, 4 }, { 3, 6 } }, F64) -- rank 1
    local U, S = linalg.svd(R)
    assert.is_true(S[2]:item() < 1e-12)
    assert.is_true(maxdiff(U:t():mm(U), eye(3)) < 1e-12)
    assert.are.equal(1, linalg.matrix_rank(R):item())
    -- torch.svd returns V, not Vh
    local u, s, v = R:svd()
    assert.is_true(maxdiff(u:mm(wick.diag(s)):mm(v:t()), R) < 1e-12)
  end)

  it("pinv, lstsq and the spectral norms come from the SVD", function()
    local A = randn(6, 3)
    local P = linalg.pinv(A)
    assert.is_true(maxdiff(P:mm(A), eye(3)) < 1e-12)
    local b = randn(6)
    local x = linalg.lstsq(A, b).solution
    -- the normal equations hold at the least-squares solution
    assert.is_true(maxdiff(A:t():mv(A:mv(x) - b), wick.zeros(3, F64)) < 1e-10)
    local _, S = linalg.svd(A, false)
    assert.is_true(math.abs(linalg.matrix_norm(A, 2):item() - S[1]:item()) < 1e-12)
    assert.is_true(math.abs(linalg.norm(A, "nuc"):item() - S:sum():item()) < 1e-12)
  end)

  it("runs on a tensor that requires grad but raises at a backward through qr, eigh or svd", function()
    local A = randn(3, 3):requires_grad_()
    local U, S = linalg.svd(A)
    assert.is_true(U.requires_grad)
    assert_error_has(function() S:sum():backward() end, "linalg.svd: its backward")
  end)
end)
