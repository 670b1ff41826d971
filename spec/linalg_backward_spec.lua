-- The derivatives of linalg.qr, linalg.eigh and linalg.svd (PyTorch's
-- formulas, lua/wick/linalg.lua) and of what is built on them (svdvals,
-- eigvalsh, pinv, matrix_norm, cond, wick.svd, wick.qr, svd_lowrank): checked
-- against central differences in float64 through gradcheck, on losses that do
-- not depend on the signs of the vectors (eigenvectors and singular vectors
-- are unique only up to sign); PyTorch's symmetric gradient of eigh pinned by
-- its values; the errors PyTorch gives.
local wick = require("wick")
local support = require("spec.support")
local assert_error_has = support.assert_error_has
local assert_close = support.assert_close_with(1e-10)
local linalg = wick.linalg

local F64 = { dtype = "float64" }
local unpack = table.unpack or unpack -- luacheck: ignore (LuaJIT's global)
local randn = support.randn64
local function leaf(...) return randn(...):requires_grad_() end
local function mT(t) return t:transpose(-2, -1) end
local function gradcheck(fn, inputs) assert.is_true(wick.autograd.gradcheck(fn, inputs)) end
local function maxdiff(a, b) return (a - b):abs():max():item() end

-- sum(S w) + sum(U diag(S) Vh * W) + sum(U U^T * W1) + sum(V V^T * W2) + sum(u1 v1^T * W):
-- every term is the same for any choice of the signs
local function svd_loss(full, W, W1, W2, w)
  return function(A)
    local U, S, Vh = linalg.svd(A, full)
    local k = S:size(-1)
    U, Vh = U:narrow(-1, 1, k), Vh:narrow(-2, 1, k)
    return (S * w):sum() + ((U * S:unsqueeze(-2)):matmul(Vh) * W):sum() + (U:matmul(mT(U)) * W1):sum()
      + (mT(Vh):matmul(Vh) * W2):sum() + (U:narrow(-1, 1, 1):matmul(Vh:narrow(-2, 1, 1)) * W):sum()
  end
end

describe("linalg.svd's gradient", function()
  it("matches central differences for tall, wide, square and batched matrices", function()
    wick.manual_seed(11)
    for _, shape in ipairs({ { 5, 3 }, { 3, 5 }, { 4, 4 }, { 2, 4, 3 }, { 2, 3, 4 } }) do
      local m, n = shape[#shape - 1], shape[#shape]
      local k = math.min(m, n)
      local loss = svd_loss(false, randn(m, n), randn(m, m), randn(n, n), randn(k))
      gradcheck(loss, { leaf(unpack(shape)) })
    end
  end)

  it("gives gauge-invariant outputs their exact Jacobian (U S Vh, U U^T, Vh^T Vh, S)", function()
    wick.manual_seed(12)
    gradcheck(function(A)
      local U, S, Vh = linalg.svd(A, false)
      return (U * S:unsqueeze(-2)):matmul(Vh), U:matmul(mT(U)), mT(Vh):matmul(Vh), S
    end, { leaf(4, 3) })
    gradcheck(function(A)
      local U, _, Vh = linalg.svd(A, false)
      return U:matmul(mT(U)), mT(Vh):matmul(Vh)
    end, { leaf(2, 3, 5) })
  end)

  it("takes any subset of U, S and Vh: S alone, U alone, Vh alone", function()
    wick.manual_seed(13)
    local W1, W2 = randn(5, 5), randn(3, 3)
    gradcheck(function(A) local _, S = linalg.svd(A, false); return S end, { leaf(5, 3) })
    gradcheck(function(A) local U = linalg.svd(A, false); return (U:matmul(mT(U)) * W1):sum() end, { leaf(5, 3) })
    gradcheck(function(A) local _, _, Vh = linalg.svd(A, false); return (mT(Vh):matmul(Vh) * W2):sum() end,
      { leaf(5, 3) })
  end)

  it("with full_matrices, ignores the columns of U (rows of Vh) past min(m, n), as PyTorch", function()
    wick.manual_seed(14)
    for _, shape in ipairs({ { 5, 3 }, { 3, 5 } }) do
      local m, n = shape[1], shape[2]
      local k = math.min(m, n)
      gradcheck(svd_loss(true, randn(m, n), randn(m, m), randn(n, n), randn(k)), { leaf(m, n) })
      -- a loss on the extra columns adds nothing
      local A = leaf(m, n)
      local U, S, Vh = linalg.svd(A) -- full_matrices = true by default
      assert.are.same({ m, m }, U:size())
      assert.are.same({ n, n }, Vh:size())
      local Uk, Vk = U:narrow(-1, 1, k), Vh:narrow(-2, 1, k)
      local g1 = wick.autograd.grad(((Uk * S:unsqueeze(-2)):matmul(Vk)):sum(), { A }, nil, { retain_graph = true })[1]
      local g2 = wick.autograd.grad(((Uk * S:unsqueeze(-2)):matmul(Vk)):sum() + U:sum() + Vh:sum()
        - Uk:sum() - Vk:sum(), { A })[1]
      assert.is_true(maxdiff(g1, g2) < 1e-12)
      assert.is_true(maxdiff(g1, wick.ones(m, n, F64)) < 1e-12) -- d sum(A) / dA
    end
  end)

  it("is differentiable twice", function()
    wick.manual_seed(15)
    assert.is_true(wick.autograd.gradgradcheck(function(A)
      local U, S, Vh = linalg.svd(A, false)
      return S, U:matmul(mT(U)), mT(Vh):matmul(Vh)
    end, { leaf(4, 3) }))
  end)

  it("runs in float32 too", function()
    wick.manual_seed(16)
    local A = randn(4, 3)
    local W = randn(4, 3)
    local grads = {}
    for _, dt in ipairs({ "float32", "float64" }) do
      local X = A:to(dt):requires_grad_()
      local U, S, Vh = linalg.svd(X, false)
      local loss = ((U * S:unsqueeze(-2)):matmul(Vh) * W:to(dt)):sum()
      loss:backward()
      assert.are.equal(dt, X.grad.dtype)
      grads[dt] = X.grad:double()
    end
    assert.is_true(maxdiff(grads.float32, grads.float64) < 1e-4)
    assert.is_true(maxdiff(grads.float64, W) < 1e-12) -- U S Vh is A
  end)
end)

describe("what is built on the SVD", function()
  it("svdvals, matrix_norm ('nuc', 2, -2), cond and pinv match central differences", function()
    wick.manual_seed(21)
    gradcheck(function(A) return linalg.svdvals(A) end, { leaf(3, 5) })
    gradcheck(function(A) return linalg.svdvals(A) end, { leaf(2, 4, 3) })
    gradcheck(function(A) return linalg.matrix_norm(A, "nuc") end, { leaf(4, 3) })
    gradcheck(function(A) return linalg.matrix_norm(A, 2) end, { leaf(4, 3) })
    gradcheck(function(A) return linalg.matrix_norm(A, -2) end, { leaf(3, 4) })
    gradcheck(function(A) return linalg.norm(A, "nuc") end, { leaf(3, 3) })
    gradcheck(function(A) return linalg.cond(A) end, { leaf(3, 3) })
    gradcheck(function(A) return linalg.pinv(A) end, { leaf(4, 3) })
    gradcheck(function(A) return linalg.pinv(A) end, { leaf(3, 4) })
    gradcheck(function(A) return A:pinverse() end, { leaf(2, 3, 2) })
  end)

  it("matrix_rank stays an integer count without a gradient", function()
    local A = leaf(4, 3)
    local r = linalg.matrix_rank(A)
    assert.is_false(r.requires_grad)
    assert.are.equal(3, r:item())
  end)

  it("wick.svd (U, S, V) and its compute_uv = false (zeros for U and V, as torch.svd)", function()
    wick.manual_seed(22)
    local W = randn(5, 3)
    gradcheck(function(A)
      local U, S, V = wick.svd(A)
      return ((U * S:unsqueeze(-2)):matmul(mT(V)) * W):sum() + U:matmul(mT(U)), V:matmul(mT(V))
    end, { leaf(5, 3) })
    gradcheck(function(A) local U, S, V = A:svd(false); return (U:narrow(-1, 1, 3) * S):matmul(mT(V)) end,
      { leaf(5, 3) })
    -- demucs: torch.svd(p, compute_uv=False)[1], then a backward
    local p = wick.randn(6, 10, { dtype = "float64", requires_grad = true })
    local U, S, V = wick.svd(p, { compute_uv = false })
    assert.are.same({ 6, 6 }, U:size())
    assert.are.same({ 10, 10 }, V:size())
    assert.are.equal(0, U:abs():max():item())
    assert.are.equal(0, V:abs():max():item())
    S:sum():backward()
    local Ue, _, Vhe = linalg.svd(p:detach(), false)
    assert.is_true(maxdiff(p.grad, Ue:matmul(Vhe)) < 1e-12) -- d sum(S) = U Vh
    gradcheck(function(A) local _, s = wick.svd(A, true, false); return s end, { leaf(3, 4) })
  end)

  it("svd_lowrank: the gradient of the top singular value is u1 v1^T (demucs)", function()
    wick.manual_seed(23)
    -- a clear gap between the first singular value and the others
    local u = randn(6, 1) / math.sqrt(6)
    local v = randn(1, 10) / math.sqrt(10)
    local p = (u:matmul(v) * 20 + randn(6, 10) * 0.1):requires_grad_()
    local _, S = wick.svd_lowrank(p, 1, 2)
    assert.are.same({ 1 }, S:size())
    S[1]:backward()
    local U, _, Vh = linalg.svd(p:detach(), false)
    local g = U:narrow(-1, 1, 1):matmul(Vh:narrow(-2, 1, 1))
    assert.is_false(p.grad:isnan():any())
    assert.is_true(maxdiff(p.grad, g) < 1e-12)
    -- and the rank-q reconstruction U S V^T
    gradcheck(function(A)
      local Uq, Sq, Vq = wick.svd_lowrank(A, 2, 2)
      return (Uq * Sq:unsqueeze(-2)):matmul(mT(Vq))
    end, { leaf(4, 5) })
  end)
end)

describe("linalg.eigh's gradient", function()
  -- eigh reads the lower triangle; these losses take a symmetric X + X^T
  local function sym(X) return X + mT(X) end

  it("matches central differences for eigenvalues, V diag(L) V^T and V1 V1^T, batched too", function()
    wick.manual_seed(31)
    local W, W2, w = randn(4, 4), randn(4, 4), randn(4)
    local function loss(X)
      local L, V = linalg.eigh(sym(X))
      local V2 = V:narrow(-1, 1, 2)
      return (L * w):sum() + (V:matmul(L:diag_embed()):matmul(mT(V)) * W):sum() + (V2:matmul(mT(V2)) * W2):sum()
    end
    gradcheck(loss, { leaf(4, 4) })
    gradcheck(loss, { leaf(3, 4, 4) })
    gradcheck(function(X)
      local L, V = linalg.eigh(sym(X))
      return L, V:matmul(mT(V)), V:narrow(-1, 1, 1):matmul(mT(V:narrow(-1, 1, 1)))
    end, { leaf(2, 3, 3) })
    gradcheck(function(X) return linalg.eigvalsh(sym(X)) end, { leaf(2, 4, 4) })
    gradcheck(function(X) return linalg.eigvalsh(sym(X), "U") end, { leaf(4, 4) })
  end)

  it("gives PyTorch's symmetric gradient (only the lower triangle is read), for UPLO 'L' and 'U'", function()
    -- torch.linalg.eigh(A[, UPLO='U']) of this A, loss sum(L w) + sum(v1 v1^T * W)
    local A0 = wick.tensor({ { 4, 1, -2 }, { 3, 2, 0.5 }, { -1, 5, -3 } }, F64)
    local w = wick.tensor({ 1, -2, 0.5 }, F64)
    local W = wick.tensor({ { 1, 2, 0 }, { -1, 0.5, 3 }, { 2, -1, 1 } }, F64)
    local expected = {
      L = {
        { -0.82572313369666162, 0.77962201061369951, 0.97911738668893267 },
        { 0.7796220106136994, 0.19632014664285014, -0.83459378883750324 },
        { 0.97911738668893256, -0.83459378883750324, 0.12940298705381145 } },
      U = {
        { 0.33248517865412741, 0.53665701418412071, 0.17318211206950662 },
        { 0.53665701418412071, -1.6797920863630487, -0.72593220743058318 },
        { 0.17318211206950662, -0.72593220743058307, 0.84730690770892048 } },
    }
    for _, uplo in ipairs({ "L", "U" }) do
      local A = A0:clone():requires_grad_()
      local L, V = linalg.eigh(A, uplo)
      local v1 = V:narrow(-1, 1, 1)
      local loss = (L * w):sum() + (v1:matmul(mT(v1)) * W):sum()
      loss:backward()
      assert_close(A.grad, expected[uplo])
    end
    assert_close(linalg.eigvalsh(A0), { -6.661756141085617, 2.837609492076112, 6.824146649009506 })
  end)

  it("is differentiable twice", function()
    wick.manual_seed(32)
    assert.is_true(wick.autograd.gradgradcheck(function(X)
      local L, V = linalg.eigh(sym(X))
      return L, V:matmul(L:diag_embed()):matmul(mT(V))
    end, { leaf(3, 3) }))
  end)
end)

describe("linalg.qr's gradient", function()
  it("matches central differences for Q and R, tall, wide, square and batched", function()
    wick.manual_seed(41)
    for _, shape in ipairs({ { 5, 3 }, { 3, 5 }, { 4, 4 }, { 2, 5, 3 }, { 2, 3, 4 } }) do
      local m, n = shape[#shape - 1], shape[#shape]
      local k = math.min(m, n)
      local W1, W2 = randn(m, k), randn(k, n)
      gradcheck(function(A) local Q, R = linalg.qr(A); return (Q * W1):sum() + (R * W2):sum() end,
        { leaf(unpack(shape)) })
    end
    gradcheck(function(A) return linalg.qr(A) end, { leaf(4, 3) }) -- Q alone
    gradcheck(function(A) local _, R = linalg.qr(A); return R end, { leaf(3, 4) }) -- R alone
  end)

  it("mode 'complete' with m <= n, and wick.qr", function()
    wick.manual_seed(42)
    gradcheck(function(A) return linalg.qr(A, "complete") end, { leaf(3, 5) })
    gradcheck(function(A) return linalg.qr(A, { mode = "complete" }) end, { leaf(3, 3) })
    gradcheck(function(A) return wick.qr(A) end, { leaf(5, 3) })
    gradcheck(function(A) return A:qr(false) end, { leaf(2, 3) })
  end)

  it("is differentiable twice", function()
    wick.manual_seed(43)
    assert.is_true(wick.autograd.gradgradcheck(function(A) return linalg.qr(A) end, { leaf(3, 2) }))
  end)

  it("raises PyTorch's errors for mode 'r' and for mode 'complete' with m > n", function()
    local A = leaf(4, 3)
    local _, R = linalg.qr(A, "r")
    assert_error_has(function() R:sum():backward() end,
      "linalg.qr: The derivative of linalg.qr depends on Q, which is not computed when mode='r'")
    local Q
    Q, R = linalg.qr(A, "complete")
    assert.are.same({ 4, 4 }, Q:size())
    assert_error_has(function() (Q:sum() + R:sum()):backward() end,
      "linalg.qr: The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
    assert_error_has(function() local _, R2 = wick.qr(A, false); R2:sum():backward() end,
      "mode='complete' and nrows > ncols")
  end)
end)
