-- wick.linalg (PyTorch's torch.linalg): norms and products composed of wick's
-- ops, and the decompositions of the core (src/core/decomp.c: LU, Cholesky,
-- QR, eigh, SVD, computed in float64 on the CPU for every device) with their
-- derivatives written here in ops, as autograd.Functions: solve, inv, det,
-- slogdet and cholesky are differentiable (twice, too); qr, eigh and svd are
-- not (their backward raises). solve_triangular, cholesky_solve and
-- cholesky_inverse are substitutions written in ops (any dtype and device),
-- differentiable too. Tensor methods (t:inverse(), t:det(), ...) and the
-- torch.* names (wick.inverse, wick.svd, wick.cholesky_solve, ...) are at the end.
local wick = require("wick")
local core = require("wick.core")
local check = require("wick.argcheck")

local linalg = {}
local methods = {} -- the tensor methods and torch.* names (at the end)
local unpack = table.unpack or unpack -- luacheck: ignore (LuaJIT's global)

local function mT(t) return t:transpose(-2, -1) end
local function square(fn, A)
  check.tensor(A, fn, "A")
  if A:dim() < 2 then check.fail(fn, "The input tensor A must have at least 2 dimensions (got %d)", A:dim()) end
  if A:size(-1) ~= A:size(-2) then
    check.fail(fn, "A must be batches of square matrices, but they are %d by %d matrices", A:size(-2), A:size(-1))
  end
end
local function eye_like(A)
  local n = A:size(-1)
  local sizes = A:size()
  return wick.eye(n, { dtype = A.dtype, device = A.device }):expand(sizes)
end

-- ---- norms and products (compositions of ops) ----

function linalg.vector_norm(x, ord, dim, keepdim, opts)
  if type(ord) == "table" then ord, dim, keepdim, opts = ord.ord, ord.dim, ord.keepdim or ord.keepdims, ord end
  if type(keepdim) == "table" then keepdim, opts = keepdim.keepdim or keepdim.keepdims, keepdim end
  check.tensor(x, "linalg.vector_norm", "x")
  if opts and opts.dtype then x = x:to(opts.dtype) end
  return x:norm(ord or 2, dim, keepdim)
end

function linalg.matrix_norm(A, ord, dim, keepdim)
  if type(ord) == "table" then ord, dim, keepdim = ord.ord, ord.dim, ord.keepdim end
  check.tensor(A, "linalg.matrix_norm", "A")
  ord = ord or "fro"
  if ord == "fro" then return A:_abs_squared():sum(dim or { -2, -1 }, keepdim == true):sqrt() end
  if dim ~= nil then check.fail("linalg.matrix_norm", "ord '%s' with dim is not supported (the last two dims)", tostring(ord)) end
  local s
  if ord == 2 or ord == -2 or ord == "nuc" then s = linalg.svdvals(A) end
  local r
  if ord == "nuc" then r = s:sum(-1)
  elseif ord == 2 then r = s:max(-1)
  elseif ord == -2 then r = s:min(-1)
  elseif ord == 1 or ord == -1 then r = A:abs():sum(-2)[ord > 0 and "max" or "min"](A:abs():sum(-2), -1)
  elseif ord == math.huge or ord == -math.huge then r = A:abs():sum(-1)[ord > 0 and "max" or "min"](A:abs():sum(-1), -1)
  else check.fail("linalg.matrix_norm", "ord must be 'fro', 'nuc', 1, -1, 2, -2, inf or -inf, got %s", tostring(ord)) end
  if keepdim then r = r:unsqueeze(-1):unsqueeze(-1) end
  return r
end

function linalg.norm(A, ord, dim, keepdim)
  if type(ord) == "table" then ord, dim, keepdim = ord.ord, ord.dim, ord.keepdim end
  if ord == "fro" or ord == "nuc" or (ord == nil and type(dim) == "table") then
    return linalg.matrix_norm(A, ord or "fro", dim, keepdim)
  end
  if ord ~= nil and A:dim() == 2 and dim == nil then return linalg.matrix_norm(A, ord, nil, keepdim) end
  return linalg.vector_norm(A, ord, dim, keepdim)
end

function linalg.multi_dot(ms) return wick.chain_matmul(ms) end
function linalg.cross(a, b, dim) return a:cross(b, dim or -1) end

-- ---- solve, inv, det (through LU) ----

local Solve = wick.autograd.Function:extend("LinalgSolve")
function Solve.forward(ctx, A, B)
  local X = core._linalg("solve", A, B)
  ctx:save_for_backward(A, X)
  return X
end
function Solve.backward(ctx, g) -- gB = A^-T g, gA = -gB X^T
  local A, X = ctx.saved_tensors[1], ctx.saved_tensors[2]
  local gB = Solve.apply(mT(A), g)
  return -gB:matmul(mT(X)), gB
end

-- A [..., n, n] and B [..., n, k] with their batch dims broadcast (expanded views)
local function broadcast_batch(fn, A, B, eq)
  local nb = math.max(A:dim(), B:dim()) - 2
  local batch = {}
  for i = 1, nb do
    local ia, ib = i - (nb - (A:dim() - 2)), i - (nb - (B:dim() - 2))
    local a = ia >= 1 and A:size(ia) or 1
    local b = ib >= 1 and B:size(ib) or 1
    if a ~= b and a ~= 1 and b ~= 1 then
      check.fail(fn, "Incompatible shapes of A and B for the equation %s (%s and %s)", eq, tostring(A.shape),
        tostring(B.shape))
    end
    batch[i] = math.max(a, b)
  end
  local sa, sb = { unpack(batch) }, { unpack(batch) }
  sa[nb + 1], sa[nb + 2] = A:size(-2), A:size(-1)
  sb[nb + 1], sb[nb + 2] = B:size(-2), B:size(-1)
  return A:expand(sa), B:expand(sb)
end

--- linalg.solve(A, B[, {left = true}]): X with A X = B (B a matrix [..., n, k] or a vector [..., n])
function linalg.solve(A, B, opts)
  square("linalg.solve", A)
  check.tensor(B, "linalg.solve", "B")
  if opts ~= nil and opts.left == false then -- X A = B: (A^T X^T = B^T)
    return mT(linalg.solve(mT(A), mT(B)))
  end
  local vector = B:dim() == 1 or (B:dim() == A:dim() - 1 and B:size(-1) == A:size(-1))
  if vector then B = B:unsqueeze(-1) end
  if B:dim() < 2 then check.fail("linalg.solve", "B must have at least 1 dimension") end
  -- broadcast the batch dims
  if A:dim() ~= B:dim() or A:dim() > 2 then A, B = broadcast_batch("linalg.solve", A, B, "AX = B") end
  local X = Solve.apply(A, B)
  if vector then X = X:squeeze(-1) end
  return X
end

--- linalg.inv(A): A^-1 (an error naming the zero pivot when A is singular)
function linalg.inv(A)
  square("linalg.inv", A)
  return Solve.apply(A, eye_like(A))
end

local Slogdet = wick.autograd.Function:extend("LinalgSlogdet")
function Slogdet.forward(ctx, A)
  local sign, logabsdet = core._linalg("slogdet", A)
  ctx:save_for_backward(A)
  ctx:mark_non_differentiable(sign)
  return sign, logabsdet
end
function Slogdet.backward(ctx, _, g) -- d log|det A| = A^-T
  local A = ctx.saved_tensors[1]
  return g:unsqueeze(-1):unsqueeze(-1) * mT(linalg.inv(A))
end

--- linalg.slogdet(A) -> sign, logabsdet (also as .sign / .logabsdet of the first... see docs)
function linalg.slogdet(A)
  square("linalg.slogdet", A)
  return Slogdet.apply(A)
end

--- linalg.det(A): sign * exp(logabsdet), differentiable where A is invertible
function linalg.det(A)
  square("linalg.det", A)
  local sign, logabsdet = Slogdet.apply(A)
  return sign * logabsdet:exp()
end

-- ---- Cholesky ----

local Cholesky = wick.autograd.Function:extend("LinalgCholesky")
function Cholesky.forward(ctx, A)
  local L = core._linalg("cholesky", A)
  ctx:save_for_backward(L)
  return L
end
function Cholesky.backward(ctx, g) -- gA = sym(L^-T Phi(L^T g) L^-1), Phi: the lower part, half diagonal
  local L = ctx.saved_tensors[1]
  local P = mT(L):matmul(g)
  P = P:tril() - 0.5 * P:diagonal(0, -2, -1):diag_embed()
  local Linv = linalg.inv(L)
  local S = mT(Linv):matmul(P):matmul(Linv)
  return 0.5 * (S + mT(S))
end

--- linalg.cholesky(A[, {upper = false}]): L with A = L L^T (upper: U = L^T)
function linalg.cholesky(A, opts)
  square("linalg.cholesky", A)
  local L = Cholesky.apply(A)
  if type(opts) == "table" and opts.upper then return mT(L) end
  return L
end

-- ---- triangular solves: substitution, O(n^2) per column ----


-- X with A X = B, A lower (or upper) triangular: forward (back) substitution,
-- one row of X at a time over every batch and column at once
local function substitute(A, B, upper, unit)
  local n = A:size(-1)
  local X = B:contiguous():clone()
  local first, last, step = 1, n, 1
  if upper then first, last, step = n, 1, -1 end
  for i = first, last, step do
    local row = B:narrow(-2, i, 1)
    local lo, len -- the part of row i of A that meets the rows of X already known
    if upper then lo, len = i + 1, n - i else lo, len = 1, i - 1 end
    if len > 0 then row = row - A:narrow(-2, i, 1):narrow(-1, lo, len):matmul(X:narrow(-2, lo, len)) end
    if not unit then row = row / A:narrow(-2, i, 1):narrow(-1, i, 1) end
    X:narrow(-2, i, 1):copy_(row)
  end
  return X
end

local SolveTriangular = wick.autograd.Function:extend("LinalgSolveTriangular")
function SolveTriangular.forward(ctx, A, B, upper, unit)
  local X = substitute(A, B, upper, unit)
  ctx:save_for_backward(A, X)
  ctx.upper, ctx.unit = upper, unit
  return X
end
function SolveTriangular.backward(ctx, g) -- gB = A^-T g, gA = -gB X^T on A's triangle (PyTorch's)
  local A, X = ctx.saved_tensors[1], ctx.saved_tensors[2]
  local gB = SolveTriangular.apply(mT(A), g, not ctx.upper, ctx.unit)
  local gA
  if ctx.needs_input_grad[1] then
    gA = -gB:matmul(mT(X))
    if ctx.upper then gA = gA:triu(ctx.unit and 1 or 0) else gA = gA:tril(ctx.unit and -1 or 0) end
  end
  return gA, gB
end

--- linalg.solve_triangular(A, B, {upper =, left = true, unitriangular = false}):
--- X with A X = B (left = false: X A = B), A triangular (only its triangle is read)
function linalg.solve_triangular(A, B, opts)
  local fn = "linalg.solve_triangular"
  square(fn, A)
  check.tensor(B, fn, "B")
  opts = check.options(opts, fn, { upper = "boolean", left = "boolean", unitriangular = "boolean" })
  if opts.upper == nil then check.fail(fn, "missing the required option 'upper' (true or false)") end
  if B:dim() < 2 then check.fail(fn, "The input tensor B must have at least 2 dimensions (got %d)", B:dim()) end
  if not A:is_floating_point() or A.dtype ~= B.dtype then
    check.fail(fn, "Expected A and B to be floating tensors of one dtype, but found A of type %s and B of type %s",
      A.dtype, B.dtype)
  end
  local upper, left, unit = opts.upper, opts.left ~= false, opts.unitriangular == true
  if not left then -- X A = B: A^T X^T = B^T
    if A:size(-1) ~= B:size(-1) then
      check.fail(fn, "Incompatible shapes of A and B for the equation XA = B (%s and %s)", tostring(A.shape),
        tostring(B.shape))
    end
    A, B = broadcast_batch(fn, mT(A), mT(B), "XA = B")
    return mT(SolveTriangular.apply(A, B, not upper, unit))
  end
  if A:size(-1) ~= B:size(-2) then
    check.fail(fn, "Incompatible shapes of A and B for the equation AX = B (%s and %s)", tostring(A.shape),
      tostring(B.shape))
  end
  A, B = broadcast_batch(fn, A, B, "AX = B")
  return SolveTriangular.apply(A, B, upper, unit)
end

-- cholesky_solve: X = (L L^T)^-1 B by two substitutions; the gradient of L is
-- PyTorch's (dense: -(G X^T + X G^T) L, G = A^-1 g)
local CholeskySolve = wick.autograd.Function:extend("CholeskySolve")
function CholeskySolve.forward(ctx, B, L, upper)
  local Lo = upper and mT(L) or L -- A = Lo Lo^T
  local X = substitute(mT(Lo), substitute(Lo, B, false, false), true, false)
  ctx:save_for_backward(L, X)
  ctx.upper = upper
  return X
end
function CholeskySolve.backward(ctx, g)
  local L, X = ctx.saved_tensors[1], ctx.saved_tensors[2]
  local G = CholeskySolve.apply(g, L, ctx.upper)
  local gL
  if ctx.needs_input_grad[2] then
    local common = G:matmul(mT(X))
    common = common + mT(common)
    gL = ctx.upper and -L:matmul(common) or -common:matmul(L)
  end
  return G, gL
end

local function cholesky_factor(fn, L, upper)
  square(fn, L)
  if not L:is_floating_point() then check.fail(fn, "expected a floating tensor, got %s", L.dtype) end
  if type(upper) == "table" then
    upper = check.options(upper, fn, { upper = "boolean" }).upper
  elseif upper ~= nil then
    check.boolean(upper, fn, "upper")
  end
  return upper == true
end

--- wick.cholesky_solve(B, L[, upper = false]) (or {upper =}): X with (L L^T) X = B
function methods.cholesky_solve(B, L, upper)
  local fn = "cholesky_solve"
  check.tensor(B, fn, "B")
  upper = cholesky_factor(fn, L, upper)
  if B:dim() < 2 then check.fail(fn, "b should have at least 2 dimensions, but has %d dimensions instead", B:dim()) end
  if B.dtype ~= L.dtype then
    check.fail(fn, "Expected b and A to have the same dtype, but found b of type %s and A of type %s instead.",
      B.dtype, L.dtype)
  end
  if L:size(-1) ~= B:size(-2) then
    check.fail(fn, "Incompatible matrix sizes for cholesky_solve: each A matrix is %d by %d but each b matrix is %d by %d",
      L:size(-2), L:size(-1), B:size(-2), B:size(-1))
  end
  local Lb, Bb = broadcast_batch(fn, L, B, "AX = B")
  return CholeskySolve.apply(Bb, Lb, upper)
end

--- wick.cholesky_inverse(L[, upper = false]) (or {upper =}): (L L^T)^-1
function methods.cholesky_inverse(L, upper)
  upper = cholesky_factor("cholesky_inverse", L, upper)
  return CholeskySolve.apply(eye_like(L):contiguous(), L, upper)
end

--- linalg.cholesky_ex(A[, {upper = false, check_errors = false}]) -> L, info (int32 zeros: a matrix
--- that is not positive-definite raises, as with check_errors)
function linalg.cholesky_ex(A, opts)
  local fn = "linalg.cholesky_ex"
  square(fn, A)
  opts = check.options(opts, fn, { upper = "boolean", check_errors = "boolean" })
  local L = linalg.cholesky(A, { upper = opts.upper == true })
  local bs = A:size()
  bs[#bs], bs[#bs - 1] = nil, nil
  return L, wick.zeros(bs, { dtype = "int32", device = A.device })
end

-- ---- QR, eigh, SVD: values only (no derivative) ----

local Undifferentiable = {}
local function guarded(name, A, ...)
  if not (A.requires_grad and wick.is_grad_enabled()) then return core._linalg(name, A, ...) end
  local class = Undifferentiable[name]
  if not class then
    class = wick.autograd.Function:extend("Linalg" .. name:sub(1, 1):upper() .. name:sub(2))
    function class.forward(ctx, X, flag) return core._linalg(name, X, flag) end
    function class.backward()
      wick.error(("linalg.%s: its backward (a gradient through %s's results) is not supported"):format(name, name))
    end
    Undifferentiable[name] = class
  end
  return class.apply(A, ...)
end

--- linalg.qr(A[, mode = "reduced"]) -> Q, R ("complete": square Q; "r": Q empty)
function linalg.qr(A, mode)
  check.tensor(A, "linalg.qr", "A")
  if type(mode) == "table" then mode = mode.mode end
  mode = mode or "reduced"
  if mode ~= "reduced" and mode ~= "complete" and mode ~= "r" then
    check.fail("linalg.qr", "qr received unrecognized mode '%s' but expected one of 'reduced' (default), 'r', or 'complete'", tostring(mode))
  end
  local Q, R = guarded("qr", A, mode == "complete")
  if mode == "r" then return wick.empty({ 0 }, { dtype = A.dtype, device = A.device }), R end
  return Q, R
end

--- linalg.eigh(A[, UPLO = "L"]) -> eigenvalues (ascending), eigenvectors (columns)
function linalg.eigh(A, UPLO)
  square("linalg.eigh", A)
  if type(UPLO) == "table" then UPLO = UPLO.UPLO end
  if UPLO ~= nil and UPLO ~= "L" and UPLO ~= "U" then check.fail("linalg.eigh", "UPLO must be 'L' or 'U', got %s", tostring(UPLO)) end
  if UPLO == "U" then A = mT(A) end
  return guarded("eigh", A)
end
function linalg.eigvalsh(A, UPLO) return (linalg.eigh(A, UPLO)) end

--- linalg.svd(A[, full_matrices = true]) -> U, S (descending), Vh
function linalg.svd(A, full_matrices)
  check.tensor(A, "linalg.svd", "A")
  if type(full_matrices) == "table" then full_matrices = full_matrices.full_matrices end
  return guarded("svd", A, full_matrices ~= false)
end
function linalg.svdvals(A)
  local _, S = linalg.svd(A, false)
  return S
end

-- PyTorch's default relative tolerance for singular values: max(m, n) eps
local function default_rtol(A) return math.max(A:size(-1), A:size(-2)) * wick.finfo(A.dtype).eps end

--- linalg.pinv(A[, {rtol, atol, hermitian}]): the pseudo-inverse through the SVD
function linalg.pinv(A, opts)
  check.tensor(A, "linalg.pinv", "A")
  opts = type(opts) == "table" and opts or { rtol = opts }
  local U, S, Vh = linalg.svd(A, false)
  local rtol = opts.rtol
  if rtol == nil then rtol = (opts.atol and opts.atol > 0) and 0 or default_rtol(A) end
  local cutoff = S:max(-1, true) * rtol
  if opts.atol then cutoff = cutoff:clamp(opts.atol, math.huge) end
  local keep = S:gt(cutoff)
  local Sinv = wick.where(keep, 1 / wick.where(keep, S, wick.ones_like(S)), wick.zeros_like(S))
  return mT(Vh):matmul(Sinv:unsqueeze(-1) * mT(U))
end

--- linalg.matrix_rank(A[, {rtol, atol}]): the number of singular values above the tolerance
function linalg.matrix_rank(A, opts)
  check.tensor(A, "linalg.matrix_rank", "A")
  opts = type(opts) == "table" and opts or { tol = opts }
  local S = linalg.svdvals(A)
  local tol = opts.atol or opts.tol
  if tol == nil then
    local rtol = opts.rtol or default_rtol(A)
    return S:gt(S:max(-1, true) * rtol):sum(-1)
  end
  return S:gt(tol):sum(-1)
end

--- linalg.lstsq(A, B) -> {solution = X} minimising |A X - B| (through the pseudo-inverse)
function linalg.lstsq(A, B)
  check.tensor(A, "linalg.lstsq", "A")
  check.tensor(B, "linalg.lstsq", "B")
  local vector = B:dim() == A:dim() - 1
  if vector then B = B:unsqueeze(-1) end
  local X = linalg.pinv(A):matmul(B)
  if vector then X = X:squeeze(-1) end
  return { solution = X }
end

-- autocast's float32 list holds the decompositions and solvers: under
-- autocast their 16-bit float operands go to float32 (else their dtype is an
-- error) and they run as one op, without autocast inside (a product within
-- pinv stays float32, as in PyTorch's kernel)
local f32 = wick._autocast_float32
for _, name in ipairs({ "solve", "inv", "slogdet", "det", "cholesky", "qr", "eigh", "eigvalsh", "svd", "svdvals",
  "pinv", "matrix_rank", "lstsq" }) do
  local f = linalg[name]
  linalg[name] = function(A, B, ...)
    local dt = wick.is_tensor(A) and A.device.type
    if (dt == "cpu" or dt == "cuda") and wick._core._is_autocast_enabled(dt) then
      return wick.autocast({ device_type = dt, enabled = false }, f, f32(A), f32(B), ...)
    end
    return f(A, B, ...)
  end
end

-- ---- the torch.* names and tensor methods (init.lua binds them to these) ----

function methods.inverse(t) return linalg.inv(t) end
function methods.det(t) return linalg.det(t) end
function methods.slogdet(t) return linalg.slogdet(t) end
function methods.logdet(t) -- log det: NaN for a negative determinant, -inf for a singular matrix, as PyTorch
  local sign, logabsdet = linalg.slogdet(t)
  return wick.where(sign:lt(0), wick.full_like(logabsdet, 0 / 0), logabsdet)
end
function methods.pinverse(t, rcond) return linalg.pinv(t, rcond and { rtol = rcond } or nil) end
function methods.cholesky(t, upper) return linalg.cholesky(t, { upper = upper == true }) end
function methods.qr(t, some) return linalg.qr(t, some == false and "complete" or "reduced") end
--- t:svd([some = true]) -> U, S, V (PyTorch's torch.svd: V, not Vh)
function methods.svd(t, some)
  local U, S, Vh = linalg.svd(t, some == false)
  return U, S, mT(Vh)
end
--- wick.triangular_solve(b, A[, upper = true[, transpose = false[, unitriangular = false]]]) -> X, A:clone()
--- (the old torch.triangular_solve: A X = b, or A^T X = b when transpose)
function methods.triangular_solve(b, A, upper, transpose, unitriangular)
  local fn = "triangular_solve"
  check.tensor(b, fn, "self")
  check.tensor(A, fn, "A")
  if type(upper) == "table" then upper, transpose, unitriangular = upper.upper, upper.transpose, upper.unitriangular end
  upper = upper ~= false
  local M = transpose and mT(A) or A
  if transpose then upper = not upper end
  return linalg.solve_triangular(M, b, { upper = upper, unitriangular = unitriangular == true }), A:clone()
end
linalg._methods = methods
-- torch.cholesky_solve, torch.cholesky_inverse and torch.triangular_solve, as wick.* names and tensor
-- methods (until init.lua's list of linalg methods names them too)
for _, name in ipairs({ "cholesky_solve", "cholesky_inverse", "triangular_solve" }) do
  if rawget(wick, name) == nil then wick[name] = methods[name] end
  if rawget(wick.Tensor, name) == nil then wick.Tensor[name] = methods[name] end
end
return check.strict(linalg, "wick.linalg")
