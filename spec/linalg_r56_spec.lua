-- linalg against PyTorch 2.15 (a conformance sweep's findings): det's gradient at singular
-- matrices (the cofactor matrix), slogdet's there, 0-size matrices in pinv, matrix_rank,
-- matrix_norm, cond, lstsq, geqrf and householder_product, lu_factor's error for a zero
-- pivot, pinv's gradient (PyTorch's formula, hermitian too), matrix_power(A, 0)'s gradient,
-- tensor tolerances, solve_triangular's dtypes, and errors that name the function called.
-- The numbers are PyTorch's (torch.linalg, float64).
local wick = require("wick")
local support = require("spec.support")
local assert_error_has = support.assert_error_has
local assert_close = support.assert_close_with(1e-12)
local linalg = wick.linalg

local F64 = { dtype = "float64" }
local function T(x) return wick.tensor(x, F64) end
local function shape(t) return support.shape_of(t) end
local function grad(y, x) return wick.autograd.grad(y, { x })[1] end

describe("linalg.det's gradient", function()
  it("is the cofactor matrix adj(A)^T at a singular matrix too (PyTorch's SVD formula)", function()
    local A = T({ { 1, 2 }, { 2, 4 } }):requires_grad_()
    assert_close(grad(linalg.det(A), A), { { 4, -2 }, { -2, 1 } })
    -- rank 2 of 3: a cofactor matrix that is not zero
    local B = T({ { 1, 2, 3 }, { 2, 4, 6 }, { 1, 0, 1 } }):requires_grad_()
    assert_close(grad(linalg.det(B), B), { { 4, 4, -4 }, { -2, -2, 2 }, { 0, 0, 0 } })
    -- rank 1 or 0 of 3: zero; a 1 x 1 zero: 1
    local Z = wick.zeros(3, 3, F64):requires_grad_()
    assert_close(grad(linalg.det(Z), Z), { { 0, 0, 0 }, { 0, 0, 0 }, { 0, 0, 0 } })
    local z = wick.zeros(1, 1, F64):requires_grad_()
    assert_close(grad(linalg.det(z), z), { { 1 } })
    assert_close(grad(wick.det(A), A), { { 4, -2 }, { -2, 1 } })
  end)

  it("takes each matrix of a batch as it is, singular or not", function()
    local A = T({ { { 1, 2, 3 }, { 4, 5, 6 }, { 7, 8, 9 } }, { { 2, 1, 0 }, { 1, 3, 1 }, { 0, 1, 4 } },
      { { 0, 0, 0 }, { 1, 2, 3 }, { 0, 1, 1 } } }):requires_grad_()
    local g = grad((linalg.det(A) * T({ 1.5, -2, 0.5 })):sum(), A)
    assert_close(g, {
      { { -4.5, 9, -4.5 }, { 9, -18, 9 }, { -4.5, 9, -4.5 } },
      { { -22, 8, -2 }, { 8, -16, 4 }, { -2, 4, -10 } },
      { { -0.5, -0.5, 0.5 }, { 0, 0, 0 }, { 0, 0, 0 } } }, 1e-11)
  end)

  it("differentiates twice (create_graph)", function()
    local A = T({ { 2, 1, 0.5 }, { 0.3, 3, 1 }, { 0, 1, 4 } }):requires_grad_()
    local g = wick.autograd.grad(linalg.det(A), { A }, nil, { create_graph = true })[1]
    local gg = grad((g * T({ { 1, 2, 3 }, { 4, 5, 6 }, { 7, 8, 9 } })):sum(), A)
    assert_close(gg, { { 33, -11.7, -14.6 }, { -10, 18.5, -10 }, { -3.5, -10.1, 8.4 } }, 1e-12)
  end)

  it("slogdet and logdet: no error at a singular matrix, PyTorch's infinities there, the others as usual", function()
    local B = T({ { { 1, 2 }, { 2, 4 } }, { { 2, 1 }, { 1, 3 } } }):requires_grad_()
    local want = { { { -math.huge, math.huge }, { math.huge, -math.huge } }, { { 0.6, -0.2 }, { -0.2, 0.4 } } }
    assert_close(grad(select(2, linalg.slogdet(B)):sum(), B), want)
    assert_close(grad(wick.logdet(B):sum(), B), want)
    local sign, logabsdet = linalg.slogdet(B:detach())
    assert_close(sign, { 0, 1 })
    assert_close(logabsdet, { -math.huge, 1.6094379124341003 })
  end)
end)

describe("linalg on 0-size matrices (PyTorch's empty results)", function()
  it("pinv and pinverse: [..., n, m] zeros, hermitian too", function()
    assert.are.same({ 3, 0 }, shape(linalg.pinv(wick.zeros(0, 3, F64))))
    assert.are.same({ 0, 3 }, shape(linalg.pinv(wick.zeros(3, 0, F64))))
    assert.are.same({ 3, 0 }, shape(wick.pinverse(wick.zeros(0, 3, F64))))
    assert.are.same({ 0, 3 }, shape(linalg.pinv(wick.zeros(3, 0, F64), { atol = 0.5 })))
    assert.are.same({ 0, 0 }, shape(linalg.pinv(wick.zeros(0, 0, F64), { hermitian = true })))
    assert.are.same({ 2, 3, 0 }, shape(linalg.pinv(wick.zeros(2, 0, 3, F64))))
    local A = wick.zeros(0, 3, F64):requires_grad_()
    assert.are.same({ 0, 3 }, shape(grad(linalg.pinv(A):sum(), A)))
  end)

  it("matrix_rank: 0 (int64) per matrix", function()
    local r = linalg.matrix_rank(wick.zeros(3, 0, F64))
    assert.are.equal("int64", r.dtype)
    assert.are.equal(0, r:item())
    assert.are.equal(0, linalg.matrix_rank(wick.zeros(0, 0, F64), { hermitian = true }):item())
    assert.are.same({ 0, 0 }, linalg.matrix_rank(wick.zeros(2, 0, 3, F64), { atol = 0.5 }):totable())
  end)

  it("matrix_norm: 0 where the norm is a largest value (2, 1, inf), a sum or fro; the smallest of none an error", function()
    for _, ord in ipairs({ 2, 1, math.huge, "nuc", "fro" }) do
      assert.are.equal(0, linalg.matrix_norm(wick.zeros(0, 3, F64), ord):item())
      assert.are.equal(0, linalg.matrix_norm(wick.zeros(3, 0, F64), ord):item())
    end
    assert.are.same({ 0, 0 }, linalg.matrix_norm(wick.zeros(2, 0, 3, F64), 2):totable())
    assert.are.equal(0, linalg.matrix_norm(wick.zeros(0, 3, F64), -1):item()) -- (3 column sums of 0)
    assert_error_has(function() linalg.matrix_norm(wick.zeros(0, 3, F64), -2) end, "size 0")
  end)

  it("cond: 0 (the square check first for 'fro' and 'nuc')", function()
    assert.are.equal(0, linalg.cond(wick.zeros(0, 0, F64)):item())
    for _, p in ipairs({ 1, -2, math.huge, "fro", "nuc" }) do
      assert.are.equal(0, linalg.cond(wick.zeros(0, 0, F64), p):item())
    end
    assert.are.same({ 0, 0 }, linalg.cond(wick.zeros(2, 0, 3, F64), 1):totable())
    assert_error_has(function() linalg.cond(wick.zeros(0, 3, F64), "fro") end,
      "linalg.cond(ord=fro): A must be batches of square matrices, but they are 0 by 3 matrices")
  end)

  it("lstsq: a zero solution, rank 0, and the residuals of B for a 3 x 0 A", function()
    local r = linalg.lstsq(wick.zeros(0, 3, F64), wick.zeros(0, 2, F64))
    assert_close(r.solution, { { 0, 0 }, { 0, 0 }, { 0, 0 } })
    assert.are.equal(0, r.rank:item())
    r = linalg.lstsq(wick.zeros(3, 0, F64), T({ { 1, 2 }, { 3, 4 }, { 5, 6 } }), { driver = "gelsd" })
    assert.are.same({ 0, 2 }, shape(r.solution))
    assert_close(r.residuals, { 35, 56 })
    assert.are.same({ 0 }, shape(r.singular_values))
    r = linalg.lstsq(wick.zeros(3, 0, F64), wick.ones(3, 2, F64), { driver = "gels" })
    assert_close(r.residuals, { 0, 0 }) -- (LAPACK's gels zeroes B)
    r = linalg.lstsq(wick.zeros(3, 0, F64), wick.ones(3, F64), { driver = "gelss" })
    assert_close(r.residuals, { 3 })
    r = linalg.lstsq(wick.zeros(2, 3, 0, F64), wick.ones(2, 3, 2, F64), { driver = "gelsd" })
    assert.are.same({ 2, 0, 2 }, shape(r.solution))
    assert.are.same({ 0, 0 }, r.rank:totable())
    local A, B = wick.zeros(3, 0, F64):requires_grad_(), T({ { 1, 2 }, { 3, 4 }, { 5, 6 } }):requires_grad_()
    local gs = wick.autograd.grad(linalg.lstsq(A, B).solution:sum(), { A, B }, nil, { allow_unused = true })
    assert_close(gs[2], { { 0, 0 }, { 0, 0 }, { 0, 0 } })
  end)

  it("geqrf and householder_product", function()
    local a, tau = wick.geqrf(wick.zeros(0, 3, F64))
    assert.are.same({ 0, 3 }, shape(a))
    assert.are.same({ 0 }, shape(tau))
    a, tau = wick.geqrf(wick.zeros(2, 0, 3, F64))
    assert.are.same({ 2, 0 }, shape(tau))
    assert.are.same({ 3, 0 }, shape(linalg.householder_product(wick.geqrf(wick.zeros(3, 0, F64)))))
    assert.are.same({ 0, 0 }, shape(linalg.householder_product(wick.geqrf(wick.zeros(0, 0, F64)))))
    assert_error_has(function() linalg.householder_product(wick.geqrf(wick.zeros(0, 3, F64))) end,
      "input.shape[-2] must be greater than or equal to input.shape[-1]")
  end)
end)

describe("linalg.lu_factor", function()
  it("raises PyTorch's error at a zero pivot (1-based, as info), lu_factor_ex gives info", function()
    local msg = " is zero and using it on lu_solve would result in a division by zero. If you still want to perform "
      .. "the factorization, consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)"
    assert_error_has(function() linalg.lu_factor(wick.zeros(2, 2)) end, "linalg.lu_factor: U[1,1]" .. msg)
    assert_error_has(function() linalg.lu_factor(T({ { 1, 2 }, { 2, 4 } })) end, "linalg.lu_factor: U[2,2]" .. msg)
    assert_error_has(function() linalg.lu_factor(T({ { 1, 2, 3 }, { 2, 4, 7 } })) end, "U[2,2] is zero")
    assert_error_has(function() linalg.lu_factor(wick.stack({ wick.eye(2), wick.zeros(2, 2) })) end,
      "linalg.lu_factor: (Batch element 2): U[1,1] is zero")
    local _, _, info = linalg.lu_factor_ex(wick.zeros(2, 2))
    assert.are.equal(1, info:item())
    assert_error_has(function() linalg.lu_factor_ex(wick.zeros(2, 2), { check_errors = true }) end,
      "linalg.lu_factor_ex: U[1,1] is zero")
    -- a rectangular matrix of full rank factors
    local LU = linalg.lu_factor(T({ { 1, 2, 3 }, { 2, 5, 7 } }))
    assert_close(LU, { { 2, 5, 7 }, { 0.5, -0.5, -0.5 } })
  end)
end)

describe("linalg.pinv's gradient (PyTorch's pinv_backward)", function()
  local function pinv_grad(M, W, opts)
    local A = T(M):requires_grad_()
    return grad((linalg.pinv(A, opts) * T(W)):sum(), A)
  end

  it("with hermitian: the general formula (not a symmetric gradient), the input as it is", function()
    assert_close(pinv_grad({ { 1, 2 }, { 2, -3 } }, { { 1, 2 }, { 3, 4 } }, { hermitian = true }),
      { { -1.122448979591837, -0.08163265306122457 }, { 0.06122448979591802, 0.04081632653061227 } })
    -- a matrix that is not symmetric: pinv reads its lower triangle, the formula takes all of it
    assert_close(pinv_grad({ { 1, 5 }, { 2, -3 } }, { { 1, 2 }, { 3, 4 } }, { hermitian = true }),
      { { -1.1924198250728868, -1.6822157434402338 }, { 0.06122448979591802, -0.8862973760932947 } })
    assert_close(pinv_grad({ { 4, 1, 0.5 }, { 1, -2, 0.3 }, { 0.5, 0.3, 1 } }, { { 1, -1, 2 }, { 0.5, 3, -2 }, { 1, 1, 1 } },
      { hermitian = true }), {
        { -0.003976193335662623, -0.06835681609747546, -0.11535532579264489 },
        { 0.3171572025941129, -0.674236696436369, -1.1128496484409118 },
        { -0.28474784915713125, 0.4934587627740401, -0.5897758537863573 } })
  end)

  it("of a singular, a tall and a wide matrix", function()
    assert_close(pinv_grad({ { 1, 2 }, { 2, 4 } }, { { 1, 2 }, { 3, 4 } }),
      { { -0.0336, -0.0592 }, { -0.0992, -0.1824 } })
    assert_close(pinv_grad({ { 1, 2 }, { 3, 4 }, { 5, 7 } }, { { 1, -2, 0.5 }, { 2, 1, 3 } }),
      { { -4.867346938775521, 2.75 }, { -4.244897959183649, 3.25 }, { 4.234693877551036, -3 } }, 1e-11)
    assert_close(pinv_grad({ { 1, 3, 5 }, { 2, 4, 7 } }, { { 1, 2 }, { -2, 1 }, { 0.5, 3 } }),
      { { -4.867346938775483, -4.244897959183663, 4.234693877551006 }, { 2.75, 3.25, -3 } }, 1e-11)
  end)
end)

describe("linalg.matrix_power(A, 0)", function()
  it("requires grad where A does, its gradient zeros (PyTorch's)", function()
    local A = T({ { 1, 2 }, { 3, 4 } }):requires_grad_()
    local P = linalg.matrix_power(A, 0)
    assert.is_true(P.requires_grad)
    assert_close(P, { { 1, 0 }, { 0, 1 } })
    assert_close(grad((P * T({ { 1, 2 }, { 3, 4 } })):sum(), A), { { 0, 0 }, { 0, 0 } })
    assert.are.same({ 3, 2, 2 }, shape(linalg.matrix_power(wick.randn(3, 2, 2, F64):requires_grad_(), 0)))
    assert.is_false(linalg.matrix_power(T({ { 1, 2 }, { 3, 4 } }), 0).requires_grad)
  end)
  it("the method and wick.matrix_power are the same function: n = 0 in the graph, a negative n the inverse's power", function()
    local A = T({ { 2, 1 }, { 1, 3 } }):requires_grad_()
    assert.is_true(A:matrix_power(0).requires_grad)
    assert.is_true(wick.matrix_power(A, 0).requires_grad)
    assert_close(A:matrix_power(-2), { { 0.4, -0.2 }, { -0.2, 0.2 } }, 1e-15)
    -- torch: a.matrix_power(-1).sum().backward()
    assert_close(grad(A:matrix_power(-1):sum(), A), { { -0.16, -0.08 }, { -0.08, -0.04 } }, 1e-15)
    local out = wick.empty({ 2, 2 }, F64)
    wick.matrix_power(A:detach(), 2, { out = out })
    assert_close(out, { { 5, 5 }, { 5, 10 } })
  end)
end)

describe("tensor tolerances of pinv and matrix_rank", function()
  it("broadcast over the batch (a last dim added), rtol 0 where a tensor atol > 0", function()
    local M = T({ { { 1, 0, 0 }, { 0, 1e-3, 0 }, { 0, 0, 0 } }, { { 1, 0, 0 }, { 0, 1e-3, 0 }, { 0, 0, 0 } } })
    assert.are.same({ 2, 1 }, linalg.matrix_rank(M, { rtol = T({ 0, 0.01 }) }):totable())
    assert.are.same({ { 2 }, { 1 }, { 0 } },
      linalg.matrix_rank(T({ { 1, 0, 0 }, { 0, 1e-3, 0 }, { 0, 0, 0 } }), { atol = T({ { 0 }, { 0.01 }, { 2 } }) }):totable())
    assert.are.same({ 2, 1, 2 }, linalg.matrix_rank(T({ { 2, 0 }, { 0, 1e-3 } }), { atol = T({ 0, 0.01, -1 }) }):totable())
    assert.are.same({ 3 }, linalg.matrix_rank(wick.eye(3, F64), { atol = wick.tensor({ 0.5 }, { dtype = "float32" }) }):totable())
    assert_close(linalg.pinv(T({ { 1, 0 }, { 0, 1e-3 } }), { rtol = T({ 0, 0.01 }) }),
      { { { 1, 0 }, { 0, 1000 } }, { { 1, 0 }, { 0, 0 } } })
    assert_close(linalg.pinv(T({ { { 1, 0 }, { 0, 1e-3 } }, { { 2, 0 }, { 0, 0.5 } } }), { atol = T({ 0.01, 1 }), hermitian = true }),
      { { { 1, 0 }, { 0, 0 } }, { { 0.5, 0 }, { 0, 0 } } })
    local A = T({ { 1, 0.2 }, { 0.1, 1e-3 } }):requires_grad_()
    local g = grad((linalg.pinv(A, { rtol = T({ 0, 0.01 }) }) * T({ { 1, 2 }, { 3, 4 } })):sum(), A)
    assert_close(g, { { -439.34072022158233, 2039.335180055296 }, { 3973.4072022160317, -18393.351800554014 } }, 1e-11)
  end)
end)

describe("linalg.solve_triangular with B of another dtype", function()
  it("takes B in A's dtype (PyTorch's), the gradients in their own", function()
    local A = T({ { 2, 1 }, { 0, 4 } }):requires_grad_()
    local B = wick.tensor({ { 1 }, { 1 / 3 } }, { dtype = "float32" }):requires_grad_()
    local X = linalg.solve_triangular(A, B, { upper = true })
    assert.are.equal("float64", X.dtype)
    assert_close(X, { { 0.4583333320915699 }, { 0.0833333358168602 } }, 1e-15)
    local gs = wick.autograd.grad(X:sum(), { A, B })
    assert_close(gs[1], { { -0.22916666604578495, -0.0416666679084301 }, { 0, -0.010416666977107525 } }, 1e-15)
    assert.are.equal("float32", gs[2].dtype)
    assert_close(gs[2], { { 0.5 }, { 0.125 } })
    local Y = linalg.solve_triangular(A:detach():float(), T({ { 1 }, { 1 / 3 } }), { upper = true })
    assert.are.equal("float32", Y.dtype)
    assert_close(Y, { { 0.4583333432674408 }, { 0.0833333358168602 } }, 1e-7)
    assert.are.equal("float64", linalg.solve_triangular(A:detach(), wick.tensor({ { 1, 2 } }, { dtype = "float32" }),
      { upper = true, left = false }).dtype)
    assert_error_has(function()
      linalg.solve_triangular(wick.tensor({ { 1, 0 }, { 0, 1 } }, { dtype = "int64" }), wick.ones(2, 1), { upper = true })
    end, "linalg.solve_triangular: Expected A to be a floating point tensor")
  end)
end)

describe("linalg's errors name the function called", function()
  local I64 = wick.tensor({ { 1, 2 }, { 3, 4 } }, { dtype = "int64" })
  it("for an integer or 1-D input", function()
    assert_error_has(function() linalg.det(I64) end, "linalg.det: Expected a floating point tensor", "(got int64)")
    assert_error_has(function() linalg.pinv(I64) end, "linalg.pinv: Expected a floating point tensor")
    assert_error_has(function() linalg.pinv(wick.ones(3, F64)) end, "linalg.pinv: The input tensor A must have at least 2 dimensions")
    assert_error_has(function() linalg.matrix_rank(I64) end,
      "linalg.matrix_rank: This function doesn't handle types other than float and double")
    assert_error_has(function() linalg.matrix_rank(wick.ones(3, F64)) end, "linalg.matrix_rank: The input tensor A must have at least 2 dimensions")
    assert_error_has(function() linalg.cond(I64) end, "linalg.cond: Expected a floating point tensor")
    assert_error_has(function() linalg.cond(I64, 1) end, "linalg.cond: Expected a floating point tensor")
    assert_error_has(function() linalg.cond(wick.ones(3, F64)) end, "linalg.cond: The input tensor must have at least 2 dimensions.")
    assert_error_has(function() linalg.cond(wick.randn(3, 4, F64), 1) end,
      "linalg.cond(ord=1): A must be batches of square matrices, but they are 3 by 4 matrices")
    assert_error_has(function() linalg.inv_ex(I64) end, "linalg.inv_ex: Expected a floating point tensor")
  end)

  it("vector_norm of nothing where the norm has no identity (ord < 0 or inf)", function()
    assert_error_has(function() linalg.vector_norm(wick.zeros(0, F64), math.huge) end,
      "linalg.vector_norm: cannot compute the inf norm on an empty tensor because the operation does not have an identity")
    assert_error_has(function() linalg.vector_norm(wick.zeros(0, F64), -1) end, "cannot compute the -1 norm on an empty tensor")
    assert_error_has(function() linalg.vector_norm(wick.zeros(0, F64), -0.5) end, "cannot compute the -0.5 norm")
    assert_error_has(function() linalg.norm(wick.zeros(0, F64), -math.huge) end, "cannot compute the -inf norm")
    assert_error_has(function() linalg.vector_norm(wick.zeros(0, 3, F64), math.huge, 1) end,
      "cannot compute the inf norm on the dimension 1 because this dimension is empty")
    assert.are.same({ 0 }, shape(linalg.vector_norm(wick.zeros(0, 3, F64), math.huge, 2)))
    assert.are.equal(0, linalg.vector_norm(wick.zeros(0, F64)):item())
    assert.are.equal(0, linalg.vector_norm(wick.zeros(0, F64), 0):item())
  end)

  it("tensorsolve of shapes that do not make a square system", function()
    assert_error_has(function() linalg.tensorsolve(wick.randn(6, 3, F64), wick.randn(6, F64)) end,
      "linalg.tensorsolve: Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
      .. "prod(self.shape[:other.ndim]), but got 3 != 6")
    assert_error_has(function() linalg.tensorsolve(wick.randn(2, 3, 6, F64), wick.randn(3, 3, F64)) end,
      "linalg.tensorsolve: Expected B to have prod(A.shape[:B.ndim]) = 6 elements, got 9")
    local X = linalg.tensorsolve(wick.eye(6, F64):reshape(2, 3, 6), wick.arange(6, F64):reshape(3, 2))
    assert_close(X, { 0, 1, 2, 3, 4, 5 })
  end)
end)
