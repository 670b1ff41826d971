-- wick.linalg (PyTorch's torch.linalg): norms and products composed of wick's
-- ops, and the decompositions of the core (src/core/decomp.c: LU, Cholesky,
-- QR, eigh, SVD, computed in float64 on the CPU for every device) with their
-- derivatives written here in ops, as autograd.Functions: solve, inv, det,
-- slogdet, cholesky, lu, qr, eigh and svd are differentiable (twice, too; qr,
-- eigh and svd with PyTorch's formulas). matrix_exp is a series of products. solve_triangular, cholesky_solve and
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
local function batch_shape(A)
  local shape = A:size()
  shape[#shape], shape[#shape - 1] = nil, nil
  return shape
end
local function eye_like(A)
  local n = A:size(-1)
  local sizes = A:size()
  return wick.eye(n, { dtype = A.dtype, device = A.device }):expand(sizes)
end

-- ---- norms and products (compositions of ops) ----

-- The arguments of the norms, PyTorch's (x, ord, dim, keepdim, *, dtype) with the trailing options
-- table at any place (vector_norm(x, 2, {dtype = ...}), norm(A, {ord = 2, dim = 1})): ord, dim,
-- keepdim, and x cast to the dtype
local NORM_OPTIONS = { ord = "number|string", dim = "number|table", keepdim = "boolean", keepdims = "boolean",
  dtype = "dtype" }
local function norm_args(fn, x, ord, dim, keepdim, opts)
  check.tensor(x, fn, fn == "linalg.vector_norm" and "x" or "A")
  local o = opts
  if type(ord) == "table" then o, ord, dim, keepdim = ord, nil, nil, nil
  elseif type(dim) == "table" and getmetatable(dim) == nil and dim[1] == nil then o, dim, keepdim = dim, nil, nil
  elseif type(keepdim) == "table" then o, keepdim = keepdim, nil end
  if o ~= nil then
    check.options(o, fn, NORM_OPTIONS)
    if o.ord ~= nil then ord = o.ord end
    if o.dim ~= nil then dim = o.dim end
    if o.keepdim ~= nil or o.keepdims ~= nil then keepdim = o.keepdim or o.keepdims end
    if o.dtype ~= nil then
      if wick.promote_types(x.dtype, o.dtype) ~= o.dtype then -- (PyTorch's: a float64 input with dtype float32)
        check.fail(fn, "the dtype of the input (%s) should be convertible without narrowing to the specified dtype (%s)",
          x.dtype, o.dtype)
      end
      x = x:to(o.dtype)
    end
  end
  check.wrap_dims(x, dim, fn)
  return x, ord, dim, keepdim
end

-- PyTorch's error for a norm without an identity (ord < 0 or inf: a min or a max) over no elements
local function empty_norm_check(x, ord, dim)
  if type(ord) ~= "number" or not (ord < 0 or ord == math.huge) then return end
  local function text(v)
    if v == math.huge then return "inf" elseif v == -math.huge then return "-inf" end
    return v == math.floor(v) and ("%d"):format(v) or ("%.15g"):format(v)
  end
  if dim == nil or (type(dim) == "table" and #dim == 0) then
    if x:numel() == 0 then
      check.fail("linalg.vector_norm", "cannot compute the %s norm on an empty tensor because the operation does not "
        .. "have an identity", text(ord))
    end
    return
  end
  for _, d in ipairs(type(dim) == "table" and dim or { dim }) do
    local i = check.wrap_dim(x, d, "linalg.vector_norm")
    if x:size(i) == 0 then
      check.fail("linalg.vector_norm", "cannot compute the %s norm on the dimension %d because this dimension is "
        .. "empty and the operation does not have an identity", text(ord), i)
    end
  end
end

function linalg.vector_norm(...)
  local x, ord, dim, keepdim = norm_args("linalg.vector_norm", ...)
  empty_norm_check(x, ord, dim)
  return x:norm(ord or 2, dim, keepdim)
end

local function matrix_norm(A, ord, dim, keepdim)
  ord = ord or "fro"
  if A:dim() < 2 then check.fail("linalg.matrix_norm", "The input tensor A must have at least 2 dimensions.") end
  if ord == "fro" then return A:_abs_squared():sum(dim or { -2, -1 }, keepdim == true):sqrt() end
  if dim ~= nil then -- the two dims moved last (in their order: {-1, -2} is the transpose's norm)
    if type(dim) ~= "table" or #dim ~= 2 then check.fail("linalg.matrix_norm", "dim must be a pair of dims, got %s", check.describe(dim)) end
    local d1, d2 = check.wrap_dim(A, dim[1], "linalg.matrix_norm"), check.wrap_dim(A, dim[2], "linalg.matrix_norm")
    if d1 == d2 then check.fail("linalg.matrix_norm", "dims must be different, got %d twice", d1) end
    local r = matrix_norm(A:movedim({ d1, d2 }, { -2, -1 }), ord, nil, false)
    if keepdim then r = r:unsqueeze(math.min(d1, d2)):unsqueeze(math.max(d1, d2)) end
    return r
  end
  local s
  if ord == 2 or ord == -2 or ord == "nuc" then s = linalg.svdvals(A) end
  -- the largest (or smallest) along the last dim; the largest of none 0, as PyTorch's
  local function extreme(t, most)
    if most and t:size(-1) == 0 then return t:sum(-1) end
    return t[most and "max" or "min"](t, -1)
  end
  local r
  if ord == "nuc" then r = s:sum(-1)
  elseif ord == 2 or ord == -2 then r = extreme(s, ord > 0)
  elseif ord == 1 or ord == -1 then r = extreme(A:abs():sum(-2), ord > 0)
  elseif ord == math.huge or ord == -math.huge then r = extreme(A:abs():sum(-1), ord > 0)
  else check.fail("linalg.matrix_norm", "ord must be 'fro', 'nuc', 1, -1, 2, -2, inf or -inf, got %s", tostring(ord)) end
  if keepdim then r = r:unsqueeze(-1):unsqueeze(-1) end
  return r
end
function linalg.matrix_norm(...) return matrix_norm(norm_args("linalg.matrix_norm", ...)) end

function linalg.norm(...)
  local A, ord, dim, keepdim = norm_args("linalg.norm", ...)
  if ord == "fro" or ord == "nuc" or (ord == nil and type(dim) == "table") then
    return matrix_norm(A, ord or "fro", dim, keepdim)
  end
  if ord ~= nil and A:dim() == 2 and dim == nil then return matrix_norm(A, ord, nil, keepdim) end
  if type(ord) == "number" and type(dim) == "table" and #dim == 2 then return matrix_norm(A, ord, dim, keepdim) end
  if ord ~= nil and dim == nil and A:dim() > 2 then
    check.fail("linalg.norm", "If dim is not specified but ord is, the input must be 1D or 2D. Got %dD.", A:dim())
  end
  empty_norm_check(A, ord, dim)
  return A:norm(ord or 2, dim, keepdim)
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
  opts = check.options(opts, "linalg.solve", { left = "boolean" })
  if opts.left == false then -- X A = B: (A^T X^T = B^T)
    return mT(linalg.solve(mT(A), mT(B)))
  end
  -- B is a vector (or a batch of them) when its shape is A's without the last dim, as PyTorch's rule
  local vector = B:dim() == 1
  if not vector and B:dim() == A:dim() - 1 then
    vector = true
    for i = 1, B:dim() do vector = vector and B:size(i) == A:size(i) end
  end
  if vector then B = B:unsqueeze(-1) end
  if B:dim() < 2 then check.fail("linalg.solve", "B must have at least 1 dimension") end
  -- broadcast the batch dims
  if A:dim() ~= B:dim() or A:dim() > 2 then A, B = broadcast_batch("linalg.solve", A, B, "AX = B") end
  local X = Solve.apply(A, B)
  if vector then X = X:squeeze(-1) end
  return X
end

--- linalg.inv(A): A^-1 (an error naming the zero pivot when A is singular); its gradient
--- -A^-T g A^-T, as Solve's with B the identity
local Inv = wick.autograd.Function:extend("LinalgInv")
function Inv.forward(ctx, A)
  local X = core._linalg("inv", A)
  ctx:save_for_backward(A, X)
  return X
end
Inv.backward = function(ctx, g) return (Solve.backward(ctx, g)) end
function linalg.inv(A, opts)
  square("linalg.inv", A)
  if opts ~= nil then check.fail("linalg.inv", "takes one argument (A), got another: %s", check.describe(opts)) end
  return Inv.apply(A)
end

-- the dtypes of the core's decompositions, checked with the name of the function called
local function float_check(fn, A)
  if A.dtype ~= "float32" and A.dtype ~= "float64" then
    check.fail(fn, "Expected a floating point tensor of dtype float32 or float64 (got %s)", A.dtype)
  end
end

-- a result that does not depend on its inputs' values (matrix_power(A, 0), the empty results of the
-- decompositions of 0-size matrices): it requires grad as PyTorch's does, its gradients zeros
local Constant = wick.autograd.Function:extend("LinalgConstant")
function Constant.forward(ctx, value, A, B)
  ctx.like = { A, B }
  return value:clone()
end
function Constant.backward(ctx)
  local A, B = ctx.like[1], ctx.like[2]
  return nil, wick.zeros_like(A), B and wick.zeros_like(B) or nil
end
local function constant(value, A, B)
  if wick.is_grad_enabled() and (A.requires_grad or (B and B.requires_grad)) then
    return Constant.apply(value, A, B)
  end
  return value
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
  local ok, Ainv = pcall(linalg.inv, A)
  if not ok then -- some matrix is singular: A^-T from its LU, where its zero pivot gives infinities (PyTorch's)
    local packed, pivots = linalg.lu_factor_ex(A)
    Ainv = mT(linalg.lu_solve(packed, pivots, eye_like(A), { adjoint = true }))
  end
  return g:unsqueeze(-1):unsqueeze(-1) * mT(Ainv)
end

--- linalg.slogdet(A) -> sign, logabsdet (also as .sign / .logabsdet of the first... see docs)
function linalg.slogdet(A)
  square("linalg.slogdet", A)
  float_check("linalg.slogdet", A)
  return Slogdet.apply(A)
end

-- det's gradient is the cofactor matrix adj(A)^T, for every A: det(A) A^-T where A is invertible,
-- and for a singular A (PyTorch's formula) det(U) det(Vh) U diag(prod_{j ~= i} S_j) Vh from its
-- SVD A = U S Vh; a batch takes each matrix's own (the SVD only for the singular ones)
local function cofactor_svd(A)
  local U, S, Vh = linalg.svd(A, false)
  local alpha = wick.no_grad(function() -- det(U) det(Vh), +-1
    return core._linalg("slogdet", U:detach()) * core._linalg("slogdet", Vh:detach())
  end)
  local I = eye_like(U)
  local D = (S:unsqueeze(-2) * (1 - I) + I):prod(-1) * alpha:unsqueeze(-1) -- S with S_i taken out
  return (U * D:unsqueeze(-2)):matmul(Vh)
end
local Det = wick.autograd.Function:extend("LinalgDet")
function Det.forward(ctx, A)
  local sign, logabsdet = core._linalg("slogdet", A)
  local det = sign * logabsdet:exp()
  ctx:save_for_backward(A, det)
  return det
end
function Det.backward(ctx, g)
  local A, det = ctx.saved_tensors[1], ctx.saved_tensors[2]
  local n = A:size(-1)
  if A:numel() == 0 then return wick.zeros_like(A) end
  if wick.is_grad_enabled() then det = Det.apply(A) end -- (create_graph: det's own graph)
  local singular = det:detach():eq(0)
  local C
  if not singular:any():item() then
    C = det:unsqueeze(-1):unsqueeze(-1) * mT(linalg.inv(A))
  else
    local mask = singular:unsqueeze(-1):unsqueeze(-1)
    local regular = wick.where(mask, eye_like(A), A) -- (the singular ones replaced, so that inv runs)
    C = wick.where(mask, 0, det:unsqueeze(-1):unsqueeze(-1) * mT(linalg.inv(regular)))
    local idx = singular:reshape(-1):nonzero():squeeze(-1)
    local flat = A:reshape(-1, n, n)
    C = C:reshape(-1, n, n):index_copy(1, idx, cofactor_svd(flat:index_select(1, idx))):reshape(A:size())
  end
  return g:unsqueeze(-1):unsqueeze(-1) * C
end

--- linalg.det(A): differentiable everywhere, its gradient the cofactor matrix (adj(A)^T)
function linalg.det(A, opts)
  square("linalg.det", A)
  if opts ~= nil then check.fail("linalg.det", "takes one argument (A), got another: %s", check.describe(opts)) end
  float_check("linalg.det", A)
  return Det.apply(A)
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
  -- (a positional upper is PyTorch's TypeError, never the lower factor in silence)
  opts = check.options(opts, "linalg.cholesky", { upper = "boolean" })
  local L = Cholesky.apply(A)
  if opts.upper then return mT(L) end
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
--- X with A X = B (left = false: X A = B), A triangular (only its triangle is read); X in A's dtype
--- (B converted to it, as PyTorch's)
function linalg.solve_triangular(A, B, opts)
  local fn = "linalg.solve_triangular"
  square(fn, A)
  check.tensor(B, fn, "B")
  opts = check.options(opts, fn, { upper = "boolean", left = "boolean", unitriangular = "boolean" })
  if opts.upper == nil then check.fail(fn, "missing the required option 'upper' (true or false)") end
  if B:dim() < 2 then check.fail(fn, "The input tensor B must have at least 2 dimensions (got %d)", B:dim()) end
  if not A:is_floating_point() then
    check.fail(fn, "Expected A to be a floating point tensor, but found A of type %s and B of type %s", A.dtype, B.dtype)
  end
  if B:is_complex() and not A:is_complex() then
    check.fail(fn, "Expected B to be real as A is, but found A of type %s and B of type %s", A.dtype, B.dtype)
  end
  if B.dtype ~= A.dtype then B = B:to(A.dtype) end -- (PyTorch's: B taken in A's dtype, the result's)
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

--- linalg.cholesky_ex(A[, {upper = false, check_errors = false}]) -> L, info: info (int32, the batch's
--- shape) is 0 for a factored matrix and, for one that is not positive-definite, the order of its first
--- leading minor that is not (PyTorch's), its L then zeros; check_errors raises instead
function linalg.cholesky_ex(A, opts)
  local fn = "linalg.cholesky_ex"
  square(fn, A)
  opts = check.options(opts, fn, { upper = "boolean", check_errors = "boolean" })
  local factor = { upper = opts.upper == true }
  local bs = A:size()
  bs[#bs], bs[#bs - 1] = nil, nil
  local ok, L = pcall(linalg.cholesky, A, factor)
  if ok or opts.check_errors then
    if not ok then error(L, 0) end
    return L, wick.zeros(bs, { dtype = "int32", device = A.device })
  end
  -- one matrix at a time: which failed, and at which order
  local n = A:size(-1)
  local flat = A:reshape(-1, n, n)
  local Ls, infos = {}, {}
  for i = 1, flat:size(1) do
    local ok_i, Li = pcall(linalg.cholesky, flat[i], factor)
    if ok_i then
      Ls[i], infos[i] = Li, 0
    else
      local order = tonumber(tostring(Li):match("leading minor of order (%d+)"))
      if not order then error(Li, 0) end -- (not a positive-definiteness failure: raised as it is)
      Ls[i], infos[i] = wick.zeros_like(flat[i]), order
    end
  end
  return wick.stack(Ls):reshape(A:size()), wick.tensor(infos, { dtype = "int32", device = A.device }):reshape(bs)
end

-- ---- QR, eigh, SVD, with PyTorch's derivatives (real matrices) ----
-- backward gets nil for an output without a gradient (set_materialize_grads(false)):
-- the formulas take only the terms of the outputs in use, as PyTorch's do.

-- qr: with M = gR R^T - Q^T gQ (the terms present), for m >= n (PyTorch's
-- linalg_qr_backward) gA = (gQ + Q copyltu(M)) R^-T, copyltu(M) = triu(M) with its
-- strict upper part mirrored below; for m < n, gA = [Q tril(M^T - M) R1^-T, 0] + Q gR
-- with R1 the leading m x m block of R.
local Qr = wick.autograd.Function:extend("LinalgQr")
function Qr.forward(ctx, A, mode)
  local Q, R = core._linalg("qr", A, mode == "complete")
  ctx:save_for_backward(Q, R)
  ctx.mode = mode
  ctx:set_materialize_grads(false)
  return Q, R
end
function Qr.backward(ctx, gQ, gR)
  local Q, R = ctx.saved_tensors[1], ctx.saved_tensors[2]
  local m, n = Q:size(-2), R:size(-1)
  if ctx.mode == "r" then
    check.fail("linalg.qr", "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
      .. "Please use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.")
  end
  if ctx.mode == "complete" and m > n then
    check.fail("linalg.qr", "The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
  end
  if not gQ and not gR then return nil end
  local M
  if gR then M = gR:matmul(mT(R)) end
  if gQ then M = M and M - mT(Q):matmul(gQ) or -mT(Q):matmul(gQ) end
  if m >= n then
    M = M:triu()
    local gA = Q:matmul(M + mT(M:triu(1)))
    if gQ then gA = gA + gQ end
    return linalg.solve_triangular(mT(R), gA, { upper = false, left = false })
  end
  local gA = Q:matmul((mT(M) - M):tril())
  gA = linalg.solve_triangular(mT(R:narrow(-1, 1, m)), gA, { upper = false, left = false })
  local pad = R:size()
  pad[#pad] = n - m
  gA = wick.cat({ gA, wick.zeros(pad, { dtype = gA.dtype, device = gA.device }) }, -1)
  if gR then gA = gA + Q:matmul(gR) end
  return gA
end

-- eigh (A symmetric, V orthogonal): gA = V (diag(gL) + skew(V^T gV) / E) V^T with
-- skew(X) = (X - X^T) / 2 and E_ij = L_j - L_i (1 on the diagonal): a symmetric
-- gradient, PyTorch's (though only the lower triangle of A is read)
local Eigh = wick.autograd.Function:extend("LinalgEigh")
function Eigh.forward(ctx, A)
  local L, V = core._linalg("eigh", A)
  ctx:save_for_backward(L, V)
  ctx:set_materialize_grads(false)
  return L, V
end
function Eigh.backward(ctx, gL, gV)
  local L, V = ctx.saved_tensors[1], ctx.saved_tensors[2]
  if not gV then
    if not gL then return nil end
    return (V * gL:unsqueeze(-2)):matmul(mT(V))
  end
  local X = mT(V):matmul(gV)
  local E = L:unsqueeze(-2) - L:unsqueeze(-1)
  X = 0.5 * (X - mT(X)) / (E + eye_like(E))
  if gL then X = X + gL:diag_embed() end
  return V:matmul(X):matmul(mT(V))
end

-- svd (PyTorch's svd_backward, real case), k = min(m, n), E_jk = S_k^2 - S_j^2 (1 on
-- the diagonal), skew(X) = X - X^T:
--   gA = U [(skew(U^T gU) S + S skew(Vh gVh^T)) / E + diag(gS)] Vh
--      + (I - U U^T) gU S^-1 Vh      (m > n)
--      + U S^-1 gVh (I - Vh^T Vh)    (m < n)
-- full_matrices: the columns of U and rows of Vh past k get no gradient (PyTorch's).
local Svd = wick.autograd.Function:extend("LinalgSvd")
function Svd.forward(ctx, A, full)
  local U, S, Vh = core._linalg("svd", A, full)
  ctx:save_for_backward(U, S, Vh)
  ctx.full = full
  ctx:set_materialize_grads(false)
  return U, S, Vh
end
function Svd.backward(ctx, gU, gS, gVh)
  local U, S, Vh = unpack(ctx.saved_tensors)
  local m, n, k = U:size(-2), Vh:size(-1), S:size(-1)
  if ctx.full then
    U, Vh = U:narrow(-1, 1, k), Vh:narrow(-2, 1, k)
    if gU then gU = gU:narrow(-1, 1, k) end
    if gVh then gVh = gVh:narrow(-2, 1, k) end
  end
  if not gU and not gVh then
    if not gS then return nil end
    return U:matmul(gS:unsqueeze(-1) * Vh)
  end
  local Srow, Scol = S:unsqueeze(-2), S:unsqueeze(-1)
  local G
  if gU then
    local X = mT(U):matmul(gU)
    G = (X - mT(X)) * Srow
  end
  if gVh then
    local Y = Vh:matmul(mT(gVh))
    Y = Scol * (Y - mT(Y))
    G = G and G + Y or Y
  end
  local S2 = S * S
  local E = S2:unsqueeze(-2) - S2:unsqueeze(-1)
  G = G / (E + eye_like(E))
  if gS then G = G + gS:diag_embed() end
  if m > n and gU then
    local gUSinv = gU / Srow
    return (U:matmul(G) + gUSinv - U:matmul(mT(U):matmul(gUSinv))):matmul(Vh)
  elseif m < n and gVh then
    local SinvgVh = gVh / Scol
    return U:matmul(G:matmul(Vh) + SinvgVh - SinvgVh:matmul(mT(Vh)):matmul(Vh))
  end
  return U:matmul(G):matmul(Vh)
end

--- linalg.qr(A[, mode = "reduced"]) -> Q, R ("complete": square Q; "r": Q empty)
function linalg.qr(A, mode)
  check.tensor(A, "linalg.qr", "A")
  if type(mode) == "table" then mode = check.options(mode, "linalg.qr", { mode = "string" }).mode end
  mode = mode or "reduced"
  if mode ~= "reduced" and mode ~= "complete" and mode ~= "r" then
    check.fail("linalg.qr", "qr received unrecognized mode '%s' but expected one of 'reduced' (default), 'r', or 'complete'", tostring(mode))
  end
  local Q, R = Qr.apply(A, mode)
  if mode == "r" then return wick.empty({ 0 }, { dtype = A.dtype, device = A.device }), R end
  return Q, R
end

--- linalg.eigh(A[, UPLO = "L"]) -> eigenvalues (ascending), eigenvectors (columns)
function linalg.eigh(A, UPLO)
  square("linalg.eigh", A)
  if type(UPLO) == "table" then UPLO = check.options(UPLO, "linalg.eigh", { UPLO = "string" }).UPLO end
  if UPLO ~= nil and UPLO ~= "L" and UPLO ~= "U" then check.fail("linalg.eigh", "UPLO must be 'L' or 'U', got %s", tostring(UPLO)) end
  if UPLO == "U" then A = mT(A) end
  return Eigh.apply(A)
end
function linalg.eigvalsh(A, UPLO) return (linalg.eigh(A, UPLO)) end

-- ---- eig (general real matrices): LAPACK's dgeev path, in Lua over rows of numbers ----
-- balancing (dgebal), Householder reduction to upper Hessenberg form (dgehd2, dorghr), Francis
-- double-shift QR steps with deflation to the real Schur form (dlahqr, dlanv2: a complex pair's
-- eigenvalue with the positive imaginary part first), the eigenvectors by back-substitution on it
-- (dtrevc) and back-transformed (dgebak), then normalised as dgeev's; PyTorch's order, its vectors
local geev = (function()
  -- the constants of LAPACK's dlamch (float64): the safe minimum, the precision eps * base
  local SAFMIN, ULP = 2 ^ -1022, 2 ^ -52
  local abs, sqrt, max, min = math.abs, math.sqrt, math.max, math.min
  local function sign(a, b) if b >= 0 then return abs(a) end return -abs(a) end -- Fortran's SIGN(a, b)
  local function hypot(x, y) -- dlapy2: sqrt(x^2 + y^2) without overflow
    x, y = abs(x), abs(y)
    local w, z = max(x, y), min(x, y)
    if z == 0 or w > 1.79e308 then return w end
    return w * sqrt(1 + (z / w) ^ 2)
  end
  local function zeros(n)
    local m = {}
    for i = 1, n do
      local r = {}
      for j = 1, n do r[j] = 0 end
      m[i] = r
    end
    return m
  end

  -- dgebal ('B'): permutations isolating eigenvalues (rows pushed down, then columns pushed left),
  -- then the rows and columns ilo..ihi scaled by powers of 2 until their norms are close
  local function balance(a, n)
    local scale = {}
    local function swap(j, m, k, l)
      scale[m] = j
      if j == m then return end
      for i = 1, l do a[i][j], a[i][m] = a[i][m], a[i][j] end
      for i = k, n do a[j][i], a[m][i] = a[m][i], a[j][i] end
    end
    local k, l = 1, n
    local found = true
    while found do -- a row with no off-diagonal nonzero in columns 1..l: its eigenvalue is isolated
      found = false
      for j = l, 1, -1 do
        local isolated = true
        for i = 1, l do
          if i ~= j and a[j][i] ~= 0 then isolated = false; break end
        end
        if isolated then
          swap(j, l, k, l)
          if l == 1 then return 1, 1, scale end
          l = l - 1
          found = true
          break
        end
      end
    end
    found = true
    while found do -- a column with no off-diagonal nonzero in rows k..l
      found = false
      for j = k, l do
        local isolated = true
        for i = k, l do
          if i ~= j and a[i][j] ~= 0 then isolated = false; break end
        end
        if isolated then
          swap(j, k, k, l)
          k = k + 1
          found = true
          break
        end
      end
    end
    for i = k, l do scale[i] = 1 end
    local sfmin1 = SAFMIN / ULP
    local sfmax1, sfmin2 = 1 / sfmin1, sfmin1 * 2
    local sfmax2 = 1 / sfmin2
    local noconv = true
    while noconv do
      noconv = false
      for i = k, l do
        local c, r, ca, ra = 0, 0, 0, 0
        for j = k, l do c, r = c + a[j][i] ^ 2, r + a[i][j] ^ 2 end
        c, r = sqrt(c), sqrt(r)
        for j = 1, l do ca = max(ca, abs(a[j][i])) end
        for j = k, n do ra = max(ra, abs(a[i][j])) end
        if c ~= 0 and r ~= 0 then
          local g, f, s = r / 2, 1, c + r
          while c < g and max(f, c, ca) < sfmax2 and min(r, g, ra) > sfmin2 do
            f, c, ca, r, g, ra = f * 2, c * 2, ca * 2, r / 2, g / 2, ra / 2
          end
          g = c / 2
          while g >= r and max(r, ra) < sfmax2 and min(f, c, g, ca) > sfmin2 do
            f, c, g, ca, r, ra = f / 2, c / 2, g / 2, ca / 2, r * 2, ra * 2
          end
          local skip = c + r >= 0.95 * s or (f < 1 and scale[i] < 1 and f * scale[i] <= sfmin1)
            or (f > 1 and scale[i] > 1 and scale[i] >= sfmax1 / f)
          if not skip then
            scale[i] = scale[i] * f
            noconv = true
            for j = k, n do a[i][j] = a[i][j] / f end
            for j = 1, l do a[j][i] = a[j][i] * f end
          end
        end
      end
    end
    return k, l, scale
  end

  -- H = I - tau v v' applied from the left to columns c1..c2 of m (v's entries i+1..ihi; dlarf's order)
  local function reflect_columns(m, v, tau, i, ihi, c1, c2)
    for c = c1, c2 do
      local sum = 0
      for k = i + 1, ihi do sum = sum + v[k] * m[k][c] end
      sum = sum * tau
      for k = i + 1, ihi do m[k][c] = m[k][c] - sum * v[k] end
    end
  end
  -- dgehd2 and dorghr: Householder reflectors H = I - tau v v' (v(1) = 1, dlarfg's signs) reduce
  -- rows and columns ilo..ihi of a to upper Hessenberg form; q (when asked) their product
  local function hessenberg(a, n, ilo, ihi, want_q)
    local vs, taus = {}, {}
    for i = ilo, ihi - 1 do
      local alpha, xnorm = a[i + 1][i], 0
      for k = i + 2, ihi do xnorm = xnorm + a[k][i] ^ 2 end
      xnorm = sqrt(xnorm)
      local v, tau = { [i + 1] = 1 }, 0
      if xnorm ~= 0 then
        local beta = -sign(hypot(alpha, xnorm), alpha)
        tau = (beta - alpha) / beta
        local s = 1 / (alpha - beta)
        for k = i + 2, ihi do v[k] = a[k][i] * s end
        a[i + 1][i] = beta
        for r = 1, ihi do -- from the right, rows 1..ihi
          local row, sum = a[r], 0
          for k = i + 1, ihi do sum = sum + row[k] * v[k] end
          sum = sum * tau
          for k = i + 1, ihi do row[k] = row[k] - sum * v[k] end
        end
        reflect_columns(a, v, tau, i, ihi, i + 1, n) -- from the left, columns i+1..n
      else
        for k = i + 2, ihi do v[k] = 0 end
      end
      for k = i + 2, ihi do a[k][i] = 0 end
      vs[i], taus[i] = v, tau
    end
    if not want_q then return nil end
    local q = zeros(n)
    for i = 1, n do q[i][i] = 1 end
    for i = ihi - 1, ilo, -1 do -- q = H(ilo) ... H(ihi-1), accumulated backwards
      local v, tau = vs[i], taus[i]
      if tau ~= 0 then reflect_columns(q, v, tau, i, ihi, i + 1, ihi) end
    end
    return q
  end

  -- dlanv2: the standard form of a 2x2 block [a b; c d] (real eigenvalues: c = 0; complex ones:
  -- a = d and b c < 0), the rotation (cs, sn) and the eigenvalues (rt1i >= 0)
  local function standardize(a, b, c, d)
    local cs, sn
    local eps = ULP
    if c == 0 then
      cs, sn = 1, 0
    elseif b == 0 then
      cs, sn = 0, 1
      a, d = d, a
      b, c = -c, 0
    elseif a - d == 0 and sign(1, b) ~= sign(1, c) then
      cs, sn = 1, 0
    else
      local temp = a - d
      local p = 0.5 * temp
      local bcmax = max(abs(b), abs(c))
      local bcmis = min(abs(b), abs(c)) * sign(1, b) * sign(1, c)
      local scale = max(abs(p), bcmax)
      local z = (p / scale) * p + (bcmax / scale) * bcmis
      if z >= 4 * eps then -- real eigenvalues
        z = p + sign(sqrt(scale) * sqrt(z), p)
        a = d + z
        d = d - (bcmax / z) * bcmis
        local tau = hypot(c, z)
        cs, sn = z / tau, c / tau
        b, c = b - c, 0
      else -- complex or (almost) equal real eigenvalues: make the diagonal elements equal
        local sigma = b + c
        local safmn2 = 2 ^ math.floor(math.log(SAFMIN / eps) / math.log(2) / 2)
        for _ = 1, 20 do
          local sc = max(abs(temp), abs(sigma))
          if sc >= 1 / safmn2 then sigma, temp = sigma * safmn2, temp * safmn2
          elseif sc <= safmn2 then sigma, temp = sigma / safmn2, temp / safmn2
          else break end
        end
        p = 0.5 * temp
        local tau = hypot(sigma, temp)
        cs = sqrt(0.5 * (1 + abs(sigma) / tau))
        sn = -(p / (tau * cs)) * sign(1, sigma)
        local aa, bb = a * cs + b * sn, -a * sn + b * cs
        local cc, dd = c * cs + d * sn, -c * sn + d * cs
        a, b = aa * cs + cc * sn, bb * cs + dd * sn
        c, d = -aa * sn + cc * cs, -bb * sn + dd * cs
        temp = 0.5 * (a + d)
        a, d = temp, temp
        if c ~= 0 then
          if b ~= 0 then
            if sign(1, b) == sign(1, c) then -- real eigenvalues: upper triangular
              local sab, sac = sqrt(abs(b)), sqrt(abs(c))
              p = sign(sab * sac, c)
              tau = 1 / sqrt(abs(b + c))
              a, d = temp + p, temp - p
              b, c = b - c, 0
              local cs1, sn1 = sab * tau, sac * tau
              cs, sn = cs * cs1 - sn * sn1, cs * sn1 + sn * cs1
            end
          else
            b, c = -c, 0
            cs, sn = -sn, cs
          end
        end
      end
    end
    local rt1i = 0
    if c ~= 0 then rt1i = sqrt(abs(b)) * sqrt(abs(c)) end
    return a, b, c, d, a, rt1i, d, -rt1i, cs, sn
  end

  -- dlahqr (wantt: the Schur form T in h; z (or nil) times the Schur vectors): Francis double-shift
  -- QR steps on the active block l..i, with LAPACK's deflation test (Ahues and Kressner) and
  -- exceptional shifts every 10 steps without a deflation; false after 30 steps per row (nonconvergence)
  local function hqr(h, n, ilo, ihi, wr, wi, z)
    for i = 1, ilo - 1 do wr[i], wi[i] = h[i][i], 0 end
    for i = ihi + 1, n do wr[i], wi[i] = h[i][i], 0 end
    if ilo == ihi then wr[ilo], wi[ilo] = h[ilo][ilo], 0; return true end
    local nh = ihi - ilo + 1
    local smlnum = SAFMIN * (nh / ULP)
    local itmax = 30 * max(10, nh)
    local kdefl = 0
    local i1, i2 = 1, n
    local i = ihi
    while i >= ilo do
      local l = ilo
      local converged = false
      for _ = 0, itmax do
        local k = i
        while k > l do -- a small subdiagonal element
          local hkk1 = abs(h[k][k - 1])
          if hkk1 <= smlnum then break end
          local tst = abs(h[k - 1][k - 1]) + abs(h[k][k])
          if tst == 0 then
            if k - 2 >= ilo then tst = tst + abs(h[k - 1][k - 2]) end
            if k + 1 <= ihi then tst = tst + abs(h[k + 1][k]) end
          end
          if hkk1 <= ULP * tst then
            local ab = max(hkk1, abs(h[k - 1][k]))
            local ba = min(hkk1, abs(h[k - 1][k]))
            local aa = max(abs(h[k][k]), abs(h[k - 1][k - 1] - h[k][k]))
            local bb = min(abs(h[k][k]), abs(h[k - 1][k - 1] - h[k][k]))
            local s = aa + ab
            if ba * (ab / s) <= max(smlnum, ULP * (bb * (aa / s))) then break end
          end
          k = k - 1
        end
        l = k
        if l > ilo then h[l][l - 1] = 0 end
        if l >= i - 1 then converged = true; break end
        kdefl = kdefl + 1
        local h11, h12, h21, h22
        if kdefl % 20 == 0 then -- exceptional shifts
          local s = abs(h[i][i - 1]) + abs(h[i - 1][i - 2])
          h11 = 0.75 * s + h[i][i]
          h12, h21, h22 = -0.4375 * s, s, h11
        elseif kdefl % 10 == 0 then
          local s = abs(h[l + 1][l]) + abs(h[l + 2][l + 1])
          h11 = 0.75 * s + h[l][l]
          h12, h21, h22 = -0.4375 * s, s, h11
        else
          h11, h21, h12, h22 = h[i - 1][i - 1], h[i][i - 1], h[i - 1][i], h[i][i]
        end
        local rt1r, rt1i, rt2r, rt2i
        local s = abs(h11) + abs(h12) + abs(h21) + abs(h22)
        if s == 0 then
          rt1r, rt1i, rt2r, rt2i = 0, 0, 0, 0
        else
          h11, h21, h12, h22 = h11 / s, h21 / s, h12 / s, h22 / s
          local tr = (h11 + h22) / 2
          local det = (h11 - tr) * (h22 - tr) - h12 * h21
          local rtdisc = sqrt(abs(det))
          if det >= 0 then -- complex conjugate shifts
            rt1r, rt1i = tr * s, rtdisc * s
            rt2r, rt2i = rt1r, -rt1i
          else -- real shifts: the one closer to h22, twice
            rt1r, rt2r = tr + rtdisc, tr - rtdisc
            if abs(rt1r - h22) <= abs(rt2r - h22) then rt1r = rt1r * s else rt1r = rt2r * s end
            rt2r, rt1i, rt2i = rt1r, 0, 0
          end
        end
        local m, v1, v2, v3 = i - 2, 0, 0, 0
        while true do -- two consecutive small subdiagonal elements: where the step starts
          local h21s = h[m + 1][m]
          s = abs(h[m][m] - rt2r) + abs(rt2i) + abs(h21s)
          h21s = h[m + 1][m] / s
          v1 = h21s * h[m][m + 1] + (h[m][m] - rt1r) * ((h[m][m] - rt2r) / s) - rt1i * (rt2i / s)
          v2 = h21s * (h[m][m] + h[m + 1][m + 1] - rt1r - rt2r)
          v3 = h21s * h[m + 2][m + 1]
          s = abs(v1) + abs(v2) + abs(v3)
          v1, v2, v3 = v1 / s, v2 / s, v3 / s
          if m == l then break end
          local h00 = abs(h[m][m - 1]) * (abs(v2) + abs(v3))
          local h01 = ULP * abs(v1) * (abs(h[m - 1][m - 1]) + abs(h[m][m]) + abs(h[m + 1][m + 1]))
          if h00 <= h01 then break end
          m = m - 1
        end
        for kk = m, i - 1 do -- the double-shift step: the bulge chased down by reflectors of order 3 (2 last)
          local nr = min(3, i - kk + 1)
          if kk > m then
            v1, v2 = h[kk][kk - 1], h[kk + 1][kk - 1]
            v3 = nr == 3 and h[kk + 2][kk - 1] or 0
          end
          local t1 = 0 -- dlarfg of (v1, v2[, v3])
          local xnorm = nr == 3 and hypot(v2, v3) or abs(v2)
          if xnorm ~= 0 then
            local beta = -sign(hypot(v1, xnorm), v1)
            t1 = (beta - v1) / beta
            local sc = 1 / (v1 - beta)
            v2, v3 = v2 * sc, v3 * sc
            v1 = beta
          end
          if kk > m then
            h[kk][kk - 1] = v1
            h[kk + 1][kk - 1] = 0
            if kk < i - 1 then h[kk + 2][kk - 1] = 0 end
          elseif m > l then
            h[kk][kk - 1] = h[kk][kk - 1] * (1 - t1)
          end
          local t2 = t1 * v2
          if nr == 3 then
            local t3 = t1 * v3
            local r0, r1, r2 = h[kk], h[kk + 1], h[kk + 2]
            for j = kk, i2 do
              local sum = r0[j] + v2 * r1[j] + v3 * r2[j]
              r0[j], r1[j], r2[j] = r0[j] - sum * t1, r1[j] - sum * t2, r2[j] - sum * t3
            end
            for j = i1, min(kk + 3, i) do
              local r = h[j]
              local sum = r[kk] + v2 * r[kk + 1] + v3 * r[kk + 2]
              r[kk], r[kk + 1], r[kk + 2] = r[kk] - sum * t1, r[kk + 1] - sum * t2, r[kk + 2] - sum * t3
            end
            if z then
              for j = ilo, ihi do
                local r = z[j]
                local sum = r[kk] + v2 * r[kk + 1] + v3 * r[kk + 2]
                r[kk], r[kk + 1], r[kk + 2] = r[kk] - sum * t1, r[kk + 1] - sum * t2, r[kk + 2] - sum * t3
              end
            end
          elseif nr == 2 then
            local r0, r1 = h[kk], h[kk + 1]
            for j = kk, i2 do
              local sum = r0[j] + v2 * r1[j]
              r0[j], r1[j] = r0[j] - sum * t1, r1[j] - sum * t2
            end
            for j = i1, i do
              local r = h[j]
              local sum = r[kk] + v2 * r[kk + 1]
              r[kk], r[kk + 1] = r[kk] - sum * t1, r[kk + 1] - sum * t2
            end
            if z then
              for j = ilo, ihi do
                local r = z[j]
                local sum = r[kk] + v2 * r[kk + 1]
                r[kk], r[kk + 1] = r[kk] - sum * t1, r[kk + 1] - sum * t2
              end
            end
          end
        end
      end
      if not converged then return false end
      if l == i then -- one eigenvalue has converged
        wr[i], wi[i] = h[i][i], 0
      else -- a pair: the 2x2 block to standard form, the rotation applied to the rest of h and to z
        local a, b, c, d, cs, sn
        a, b, c, d, wr[i - 1], wi[i - 1], wr[i], wi[i], cs, sn =
          standardize(h[i - 1][i - 1], h[i - 1][i], h[i][i - 1], h[i][i])
        h[i - 1][i - 1], h[i - 1][i], h[i][i - 1], h[i][i] = a, b, c, d
        local r0, r1 = h[i - 1], h[i]
        for j = i + 1, i2 do r0[j], r1[j] = cs * r0[j] + sn * r1[j], cs * r1[j] - sn * r0[j] end
        for j = i1, i - 2 do
          local r = h[j]
          r[i - 1], r[i] = cs * r[i - 1] + sn * r[i], cs * r[i] - sn * r[i - 1]
        end
        if z then
          for j = ilo, ihi do
            local r = z[j]
            r[i - 1], r[i] = cs * r[i - 1] + sn * r[i], cs * r[i] - sn * r[i - 1]
          end
        end
      end
      kdefl = 0
      i = l - 1
    end
    return true
  end

  -- complex division (a + bi) / (c + di) (Smith's: exact as real division when b = d = 0)
  local function cdiv(a, b, c, d)
    if abs(d) <= abs(c) then
      local r = d / c
      local den = c + d * r
      return (a + b * r) / den, (b - a * r) / den
    end
    local r = c / d
    local den = c * r + d
    return (a * r + b) / den, (b * r - a) / den
  end

  -- dtrevc (right eigenvectors, back-transformed): for each eigenvalue w of the quasi-triangular t,
  -- x with x(k) = 1 (a pair: LAPACK's first two components) solving (T - w) x = 0 upwards by blocks
  -- (a pivot below smin taken as smin, as dlaln2), then q x; columns k (and k+1 of a pair: the
  -- imaginary part) of the result, scaled by the largest modulus
  local function eigenvectors(t, n, q)
    local vr = zeros(n)
    local smlnum = SAFMIN * (n / ULP)
    local ki = n
    while ki >= 1 do
      local pair = ki > 1 and t[ki][ki - 1] ~= 0
      local w_r, w_i = t[ki][ki], 0
      if pair then w_i = sqrt(abs(t[ki][ki - 1])) * sqrt(abs(t[ki - 1][ki])) end
      local smin = max(ULP * (abs(w_r) + abs(w_i)), smlnum)
      local xr, xi = {}, {}
      local top -- the last row of the triangular solve
      if not pair then
        xr[ki], xi[ki] = 1, 0
        for k = 1, ki - 1 do xr[k], xi[k] = -t[k][ki], 0 end
        top = ki - 1
      else
        if abs(t[ki - 1][ki]) >= abs(t[ki][ki - 1]) then
          xr[ki - 1], xi[ki] = 1, w_i / t[ki - 1][ki]
        else
          xr[ki - 1], xi[ki] = -w_i / t[ki][ki - 1], 1
        end
        xi[ki - 1], xr[ki] = 0, 0
        for k = 1, ki - 2 do xr[k], xi[k] = -xr[ki - 1] * t[k][ki - 1], -xi[ki] * t[k][ki] end
        top = ki - 2
      end
      local last = ki
      local j = top
      while j >= 1 do
        if j > 1 and t[j][j - 1] ~= 0 then -- a 2x2 block rows j-1, j: complete pivoting, complex
          local a11r, a12, a21, a22r = t[j - 1][j - 1] - w_r, t[j - 1][j], t[j][j - 1], t[j][j] - w_r
          local m = { { a11r, -w_i }, { a12, 0 }, { a21, 0 }, { a22r, -w_i } } -- (1,1) (1,2) (2,1) (2,2)
          local b1r, b1i, b2r, b2i = xr[j - 1], xi[j - 1], xr[j], xi[j]
          -- the largest entry as the pivot, moved to (1,1)
          local best, bi = -1, 1
          for e = 1, 4 do
            local v = abs(m[e][1]) + abs(m[e][2])
            if v > best then best, bi = v, e end
          end
          local swaprows = bi == 3 or bi == 4
          local swapcols = bi == 2 or bi == 4
          if swaprows then m[1], m[2], m[3], m[4] = m[3], m[4], m[1], m[2]; b1r, b1i, b2r, b2i = b2r, b2i, b1r, b1i end
          if swapcols then m[1], m[2], m[3], m[4] = m[2], m[1], m[4], m[3] end
          local p11r, p11i = m[1][1], m[1][2]
          if abs(p11r) + abs(p11i) < smin then p11r, p11i = smin, 0 end
          local lr, li = cdiv(m[3][1], m[3][2], p11r, p11i)
          local u22r = m[4][1] - (lr * m[2][1] - li * m[2][2])
          local u22i = m[4][2] - (lr * m[2][2] + li * m[2][1])
          if abs(u22r) + abs(u22i) < smin then u22r, u22i = smin, 0 end
          b2r, b2i = b2r - (lr * b1r - li * b1i), b2i - (lr * b1i + li * b1r)
          local y2r, y2i = cdiv(b2r, b2i, u22r, u22i)
          local y1r, y1i = cdiv(b1r - (m[2][1] * y2r - m[2][2] * y2i), b1i - (m[2][1] * y2i + m[2][2] * y2r),
            p11r, p11i)
          if swapcols then y1r, y1i, y2r, y2i = y2r, y2i, y1r, y1i end
          xr[j - 1], xi[j - 1], xr[j], xi[j] = y1r, y1i, y2r, y2i
          for k = 1, j - 2 do
            xr[k] = xr[k] - y1r * t[k][j - 1] - y2r * t[k][j]
            xi[k] = xi[k] - y1i * t[k][j - 1] - y2i * t[k][j]
          end
          j = j - 2
        else
          local dr, di = t[j][j] - w_r, -w_i
          if abs(dr) + abs(di) < smin then dr, di = smin, 0 end
          local yr, yi = cdiv(xr[j], xi[j], dr, di)
          xr[j], xi[j] = yr, yi
          for k = 1, j - 1 do
            xr[k] = xr[k] - yr * t[k][j]
            xi[k] = xi[k] - yi * t[k][j]
          end
          j = j - 1
        end
        local big = 0 -- (rescaled, keeping the direction, before it could overflow)
        for k = 1, last do big = max(big, abs(xr[k]), abs(xi[k])) end
        if big > 1e150 then
          for k = 1, last do xr[k], xi[k] = xr[k] / big, xi[k] / big end
        end
      end
      -- back-transform: q x, scaled by the largest modulus (LAPACK's: |re| + |im|)
      local ur, ui = {}, {}
      local emax = 0
      for r = 1, n do
        local sr, si, qr = 0, 0, q[r]
        for k = 1, last do sr, si = sr + qr[k] * xr[k], si + qr[k] * xi[k] end
        ur[r], ui[r] = sr, si
        emax = max(emax, abs(sr) + abs(si))
      end
      if not pair then
        for r = 1, n do vr[r][ki] = ur[r] / emax end
        ki = ki - 1
      else
        for r = 1, n do vr[r][ki - 1], vr[r][ki] = ur[r] / emax, ui[r] / emax end
        ki = ki - 2
      end
    end
    return vr
  end

  -- dgeev: the eigenvalues (wr, wi: of a pair, the one with the positive imaginary part first) and,
  -- when asked, the eigenvectors (vr: LAPACK's columns, each of unit norm, a complex one with its
  -- component of largest modulus real) of the n x n matrix a (rows of numbers, overwritten); nil on
  -- nonconvergence
  local function geev(a, n, want_vectors)
    local eps = ULP
    local smlnum = sqrt(SAFMIN) / eps
    local bignum = 1 / smlnum
    local anrm = 0
    for i = 1, n do for j = 1, n do anrm = max(anrm, abs(a[i][j])) end end
    local cscale = 1
    if anrm > 0 and anrm < smlnum then cscale = smlnum elseif anrm > bignum then cscale = bignum end
    if cscale ~= 1 then
      for i = 1, n do for j = 1, n do a[i][j] = a[i][j] / anrm * cscale end end
    end
    local ilo, ihi, scale = balance(a, n)
    local q = hessenberg(a, n, ilo, ihi, want_vectors)
    local wr, wi = {}, {}
    if not hqr(a, n, ilo, ihi, wr, wi, q) then return nil end
    local vr
    if want_vectors then
      vr = eigenvectors(a, n, q)
      if ilo ~= ihi then -- dgebak: the scaling and the permutations undone
        for i = ilo, ihi do
          local s = scale[i]
          for j = 1, n do vr[i][j] = vr[i][j] * s end
        end
      end
      for ii = 1, n do
        local i = ii
        if i < ilo or i > ihi then
          if i < ilo then i = ilo - ii end
          local k = scale[i]
          if k ~= i then vr[i], vr[k] = vr[k], vr[i] end
        end
      end
      local i = 1
      while i <= n do -- unit norms; a pair's largest component real (dlartg's rotation)
        if wi[i] == 0 then
          local s = 0
          for r = 1, n do s = s + vr[r][i] ^ 2 end
          s = sqrt(s)
          for r = 1, n do vr[r][i] = vr[r][i] / s end
          i = i + 1
        else
          local s1, s2 = 0, 0
          for r = 1, n do s1, s2 = s1 + vr[r][i] ^ 2, s2 + vr[r][i + 1] ^ 2 end
          local s = hypot(sqrt(s1), sqrt(s2))
          local k, best = 1, -1
          for r = 1, n do
            vr[r][i], vr[r][i + 1] = vr[r][i] / s, vr[r][i + 1] / s
            local m2 = vr[r][i] ^ 2 + vr[r][i + 1] ^ 2
            if m2 > best then k, best = r, m2 end
          end
          local f, g = vr[k][i], vr[k][i + 1]
          local cs, sn = 1, 0 -- (dlartg's, of LAPACK before 3.10, as MKL's: r > 0 unless |f| > |g|)
          if f == 0 then cs, sn = 0, 1
          elseif g ~= 0 then
            local d = hypot(f, g)
            cs, sn = f / d, g / d
            if abs(f) > abs(g) and cs < 0 then cs, sn = -cs, -sn end
          end
          for r = 1, n do
            local x, y = vr[r][i], vr[r][i + 1]
            vr[r][i], vr[r][i + 1] = cs * x + sn * y, cs * y - sn * x
          end
          vr[k][i + 1] = 0
          i = i + 2
        end
      end
    end
    if cscale ~= 1 then
      for i = 1, n do wr[i], wi[i] = wr[i] / cscale * anrm, wi[i] / cscale * anrm end
    end
    return wr, wi, vr
  end
  return geev
end)()

-- the inverse of the complex n x n matrix (re, im: rows of numbers), by Gaussian elimination with
-- partial pivoting; nil when a pivot is 0 (the eigenvectors of a defective matrix)
local function complex_inverse(re, im, n)
  local ar, ai, br, bi = {}, {}, {}, {}
  for i = 1, n do
    ar[i], ai[i], br[i], bi[i] = {}, {}, {}, {}
    for j = 1, n do ar[i][j], ai[i][j], br[i][j], bi[i][j] = re[i][j], im[i][j], i == j and 1 or 0, 0 end
  end
  for c = 1, n do
    local p, best = c, -1
    for r = c, n do
      local m = math.abs(ar[r][c]) + math.abs(ai[r][c])
      if m > best then p, best = r, m end
    end
    if best == 0 then return nil end
    ar[c], ar[p], ai[c], ai[p], br[c], br[p], bi[c], bi[p] = ar[p], ar[c], ai[p], ai[c], br[p], br[c], bi[p], bi[c]
    local pr, pi = ar[c][c], ai[c][c]
    local den = pr * pr + pi * pi
    local qr, qi = pr / den, -pi / den -- 1 / pivot
    for j = 1, n do -- the pivot row divided by the pivot
      ar[c][j], ai[c][j] = ar[c][j] * qr - ai[c][j] * qi, ar[c][j] * qi + ai[c][j] * qr
      br[c][j], bi[c][j] = br[c][j] * qr - bi[c][j] * qi, br[c][j] * qi + bi[c][j] * qr
    end
    for r = 1, n do
      if r ~= c then
        local fr, fi = ar[r][c], ai[r][c]
        if fr ~= 0 or fi ~= 0 then
          for j = 1, n do
            ar[r][j] = ar[r][j] - (fr * ar[c][j] - fi * ai[c][j])
            ai[r][j] = ai[r][j] - (fr * ai[c][j] + fi * ar[c][j])
            br[r][j] = br[r][j] - (fr * br[c][j] - fi * bi[c][j])
            bi[r][j] = bi[r][j] - (fr * bi[c][j] + fi * br[c][j])
          end
        end
      end
    end
  end
  return br, bi
end

local COMPLEX_OF = { float32 = "complex64", float64 = "complex128" }
-- the checks of eig and eigvals (fn), and their values: L [..., n] and (want_vectors) V [..., n, n]
-- of A's complex dtype on A's device, and (want_inverse) V^-1; computed in float64 on the CPU
local function eig_of(fn, A, want_vectors, want_inverse)
  square(fn, A)
  if A:is_complex() then
    check.fail(fn, "complex input (%s) is not supported: wick has no complex linear algebra", A.dtype)
  end
  float_check(fn, A)
  local n = A:size(-1)
  local cdtype = COMPLEX_OF[A.dtype]
  local opts = { dtype = cdtype, device = A.device }
  local vshape, lshape = {}, {}
  for i = 1, A:dim() do vshape[i] = A:size(i) end
  for i = 1, A:dim() - 1 do lshape[i] = vshape[i] end
  if A:numel() == 0 then
    return wick.zeros(lshape, opts), wick.zeros(vshape, opts), want_inverse and wick.zeros(vshape, opts) or nil
  end
  local X = A:detach():to("cpu"):to("float64")
  if not X:isfinite():all():item() then check.fail(fn, "input tensor should not contain infs or NaNs") end
  local mats = X:reshape(-1, n, n):totable()
  local lr, li, vre, vim, wre, wim = {}, {}, {}, {}, {}, {}
  for b, a in ipairs(mats) do
    local wr, wi, vr = geev(a, n, want_vectors)
    if not wr then
      check.fail(fn, "The algorithm failed to converge because the input matrix is ill-conditioned or has too many "
        .. "repeated eigenvalues (error code: %d)", n)
    end
    lr[b], li[b] = wr, wi
    if want_vectors then -- LAPACK's columns: a pair's are the real and imaginary parts of its first vector
      local re, im = {}, {}
      for r = 1, n do re[r], im[r] = {}, {} end
      local j = 1
      while j <= n do
        if wi[j] == 0 then
          for r = 1, n do re[r][j], im[r][j] = vr[r][j], 0 end
          j = j + 1
        else
          for r = 1, n do
            re[r][j], im[r][j] = vr[r][j], vr[r][j + 1]
            re[r][j + 1], im[r][j + 1] = vr[r][j], -vr[r][j + 1]
          end
          j = j + 2
        end
      end
      vre[b], vim[b] = re, im
      if want_inverse and want_inverse ~= "singular" then
        wre[b], wim[b] = complex_inverse(re, im, n)
        if not wre[b] then want_inverse = "singular" end -- (an error if backward runs)
      end
    end
  end
  local function complex(re, im, shape)
    local f64 = { dtype = "float64" }
    return wick.complex(wick.tensor(re, f64), wick.tensor(im, f64)):reshape(shape):to(cdtype):to(A.device)
  end
  local L = complex(lr, li, lshape)
  if not want_vectors then return L end
  if want_inverse == "singular" then return L, complex(vre, vim, vshape), nil end
  return L, complex(vre, vim, vshape), want_inverse and complex(wre, wim, vshape) or nil
end

-- eig's gradient (PyTorch's linalg_eig_backward, of a real A: the real part), with E_ij =
-- conj(L_j) - conj(L_i) (1 on the diagonal) and V^-1 from the forward:
--   gA = re(V^-H (diag(gL) + (V^H gV - V^H V re(diag(V^H gV))) / E) V^H)
-- (once: V and V^-1 are constants of the graph). The Function's outputs are the real views of L
-- and V (view_as_real, made complex again outside), its gradients theirs.
local Eig = wick.autograd.Function:extend("LinalgEig")
function Eig.forward(ctx, A, fn)
  local L, V, W = eig_of(fn, A, true, true)
  ctx:save_for_backward(L, V, W or V)
  ctx.dtype, ctx.fn, ctx.singular = A.dtype, fn, W == nil
  ctx:set_materialize_grads(false)
  return wick.view_as_real(L), wick.view_as_real(V)
end
Eig.backward = wick.autograd.once_differentiable(function(ctx, gL, gV)
  local L, V, W = unpack(ctx.saved_tensors)
  if not gL and not gV then return nil end
  if ctx.singular then
    check.fail(ctx.fn, "backward: the eigenvectors are linearly dependent (A is not diagonalizable), V^-1 does not "
      .. "exist")
  end
  if gL then gL = wick.view_as_complex(gL:contiguous()) end
  if gV then gV = wick.view_as_complex(gV:contiguous()) end
  local Vh = mT(V):conj()
  local G
  if gV then
    G = Vh:matmul(gV)
    local d = G:diagonal(0, -2, -1)
    if d.imag:abs():gt(1e-2):any():item() then
      check.fail("linalg_eig_backward", "The eigenvectors in the complex case are specified up to multiplication by "
        .. "e^{i phi}. The specified loss function depends on this quantity, so it is ill-defined.")
    end
    G = G - Vh:matmul(V * d.real:unsqueeze(-2))
    local Lc = L:conj()
    local I = wick.eye(L:size(-1), { dtype = ctx.dtype, device = L.device })
    G = G / (Lc:unsqueeze(-2) - Lc:unsqueeze(-1) + I) * (1 - I)
    if gL then G = G + gL:diag_embed() end
  else
    G = gL:diag_embed()
  end
  return mT(W):conj():matmul(G):matmul(Vh).real:contiguous()
end)

--- linalg.eig(A) -> eigenvalues, eigenvectors (columns, each of unit norm): complex64 (float32 A) or
--- complex128 (float64 A), in LAPACK's order (dgeev's, as PyTorch's); differentiable once
function linalg.eig(A)
  if wick.is_tensor(A) and A.requires_grad and wick.is_grad_enabled() then
    local L, V = Eig.apply(A, "linalg.eig")
    return wick.view_as_complex(L), wick.view_as_complex(V)
  end
  local L, V = eig_of("linalg.eig", A, true)
  return L, V
end
--- linalg.eigvals(A) -> eigenvalues (eig's, complex; differentiable through eig)
function linalg.eigvals(A)
  if wick.is_tensor(A) and A.requires_grad and wick.is_grad_enabled() then
    return wick.view_as_complex((Eig.apply(A, "linalg.eigvals")))
  end
  return (eig_of("linalg.eigvals", A, false))
end

--- linalg.svd(A[, full_matrices = true]) -> U, S (descending), Vh
function linalg.svd(A, full_matrices)
  check.tensor(A, "linalg.svd", "A")
  if type(full_matrices) == "table" then
    full_matrices = check.options(full_matrices, "linalg.svd", { full_matrices = "boolean", driver = "string" }).full_matrices
  end
  return Svd.apply(A, full_matrices ~= false)
end
function linalg.svdvals(A)
  local _, S = linalg.svd(A, false)
  return S
end

-- PyTorch's default relative tolerance for singular values: max(m, n) eps
local function default_rtol(A) return math.max(A:size(-1), A:size(-2)) * wick.finfo(A.dtype).eps end

-- a tolerance for the values S [..., k]: a number, or a tensor broadcast over the batch (with a last dim
-- of 1 added, PyTorch's), in the dtype of S (or a wider floating one)
local function tol_of(t, S)
  if not wick.is_tensor(t) then return t end
  local dtype = t:is_floating_point() and wick.promote_types(S.dtype, t.dtype) or S.dtype
  return t:to(dtype):to(S.device):unsqueeze(-1)
end
-- PyTorch's cutoff of singular values (or eigenvalues' magnitudes) S with largest smax [..., 1]:
-- max(atol, rtol * smax), rtol (when absent) 0 where atol > 0, else max(m, n) eps
local function cutoff_of(A, S, smax, atol, rtol)
  if rtol == nil then
    if wick.is_tensor(atol) then
      rtol = atol:le(0):to(S.dtype) * default_rtol(A) -- (NaN: no, as PyTorch's where(atol > 0, 0, eps))
    else
      rtol = (atol and atol > 0) and 0 or default_rtol(A)
    end
  end
  atol, rtol = tol_of(atol, S), tol_of(rtol, S)
  local cut = smax * rtol
  if wick.is_tensor(atol) then cut = wick.maximum(cut, atol)
  elseif atol then cut = cut:clamp(atol, math.huge) end
  return cut
end
-- a hermitian matrix's eigenvalues and vectors, from its lower triangle (PyTorch's hermitian = True)
local function hermitian_eigh(A) return linalg.eigh(A, "L") end

-- the checks of pinv, matrix_rank and cond (their own names in the messages)
local function matrix_check(fn, A)
  check.tensor(A, fn, "A")
  if A:dim() < 2 then check.fail(fn, "The input tensor A must have at least 2 dimensions (got %d)", A:dim()) end
  float_check(fn, A)
end

-- the pseudo-inverse (o: hermitian, atol, rtol), [..., n, m] with A's batch broadcast with the
-- tolerances'; zeros for a 0-size A (PyTorch's)
local function pinv_of(A, o)
  local sizes = A:size()
  if A:numel() == 0 then
    sizes[#sizes], sizes[#sizes - 1] = sizes[#sizes - 1], sizes[#sizes]
    return wick.zeros(sizes, { dtype = A.dtype, device = A.device })
  end
  if o.hermitian then
    local L, V = hermitian_eigh(A)
    local mag = L:abs()
    local keep = mag:gt(cutoff_of(A, mag, mag:amax(-1, true), o.atol, o.rtol))
    local Linv = wick.where(keep, 1 / wick.where(keep, L, wick.ones_like(L)), 0)
    return (V * Linv:unsqueeze(-2)):matmul(mT(V))
  end
  local U, S, Vh = linalg.svd(A, false)
  local keep = S:gt(cutoff_of(A, S, S:narrow(-1, 1, 1), o.atol, o.rtol))
  local Sinv = wick.where(keep, 1 / wick.where(keep, S, wick.ones_like(S)), 0)
  return (mT(Vh) * Sinv:unsqueeze(-2)):matmul(mT(U))
end
-- pinv's gradient (PyTorch's pinv_backward, for hermitian too: A taken as the general matrix it is),
-- with P = A^+ and G its gradient:
--   m <= n: K = G^T P, gA = -(P K)^T + K P^T - A P K P^T + P^T P (G^T - K A)
--   m > n:  K = P G^T, gA = -(K P)^T + (G^T - A K) P P^T + P^T K - P^T K P A
local Pinv = wick.autograd.Function:extend("LinalgPinv")
function Pinv.forward(ctx, A, o)
  local P = pinv_of(A, o)
  ctx:save_for_backward(A, P)
  ctx.o = o
  return P
end
function Pinv.backward(ctx, g)
  local A, P = ctx.saved_tensors[1], ctx.saved_tensors[2]
  if A:numel() == 0 then return wick.zeros_like(A) end
  if wick.is_grad_enabled() then P = Pinv.apply(A, ctx.o) end -- (create_graph: P's own graph)
  local gh, Ph = mT(g), mT(P)
  local gA
  if A:size(-2) <= A:size(-1) then
    local K = gh:matmul(P)
    local KPh = K:matmul(Ph)
    gA = -mT(P:matmul(K)) + KPh - A:matmul(P):matmul(KPh) + Ph:matmul(P):matmul(gh - K:matmul(A))
  else
    local K = P:matmul(gh)
    local PhK = Ph:matmul(K)
    gA = -mT(K:matmul(P)) + (gh - A:matmul(K)):matmul(P):matmul(Ph) + PhK - PhK:matmul(P):matmul(A)
  end
  if gA:dim() ~= A:dim() or gA.shape ~= A.shape then gA = gA:sum_to_size(A:size()) end -- (broadcast tolerances)
  return gA
end

--- linalg.pinv(A[, {rtol, atol, hermitian}]): the pseudo-inverse through the SVD (through eigh with
--- hermitian, reading the lower triangle); rtol and atol numbers or tensors broadcast over the batch
local PINV = { rtol = "number|tensor", atol = "number|tensor", hermitian = "boolean" }
function linalg.pinv(A, opts)
  matrix_check("linalg.pinv", A)
  opts = check.options(type(opts) == "table" and opts or { rtol = opts }, "linalg.pinv", PINV)
  return Pinv.apply(A, { hermitian = opts.hermitian == true, atol = opts.atol, rtol = opts.rtol })
end

--- linalg.matrix_rank(A[, {rtol, atol, hermitian}]): the number of singular values (eigenvalues' magnitudes with
--- hermitian) above max(atol, rtol * the largest); `tol` is PyTorch's old name of atol (rtol 0 then); the
--- tolerances numbers or tensors broadcast over the batch; 0 for a 0-size matrix
local RANK = { rtol = "number|tensor", atol = "number|tensor", tol = "number|tensor", hermitian = "boolean" }
function linalg.matrix_rank(A, opts)
  local fn = "linalg.matrix_rank"
  check.tensor(A, fn, "A")
  if A:dim() < 2 then check.fail(fn, "The input tensor A must have at least 2 dimensions (got %d)", A:dim()) end
  if A.dtype ~= "float32" and A.dtype ~= "float64" then
    check.fail(fn, "This function doesn't handle types other than float and double (got %s)", A.dtype)
  end
  opts = check.options(type(opts) == "table" and opts or { tol = opts }, fn, RANK)
  if A:numel() == 0 then return wick.zeros(batch_shape(A), { dtype = "int64", device = A.device }) end
  return wick.no_grad(function()
    local S, smax
    if opts.hermitian then
      S = (hermitian_eigh(A:detach())):abs()
      smax = S:amax(-1, true)
    else
      S = linalg.svdvals(A:detach())
      smax = S:narrow(-1, 1, 1)
    end
    local atol, rtol = opts.atol, opts.rtol
    if opts.tol ~= nil then atol, rtol = atol or opts.tol, rtol or 0 end
    return S:gt(cutoff_of(A, S, smax, atol, rtol)):sum(-1)
  end)
end

-- The least-squares solution A^+ B through the SVD, singular values at or
-- below rcond times the largest taken as zero; also the rank and the values.
local function lstsq_solve(A, B, rcond)
  local U, S, Vh = core._linalg("svd", A, false)
  local keep = S:gt(S:max(-1, true) * rcond)
  local Sinv = wick.where(keep, 1 / wick.where(keep, S, wick.ones_like(S)), wick.zeros_like(S))
  return mT(Vh):matmul(Sinv:unsqueeze(-1) * mT(U):matmul(B)), keep:sum(-1), S
end

-- The gradient of a full-rank least-squares solution X (PyTorch's): with G the
-- gradient of X, for m >= n (C = (A^T A)^-1, R = B - A X) dA = R (C G)^T - A C G X^T
-- and dB = A C G; for m < n (the minimum-norm X = A^T Y, D = (A A^T)^-1, Y = D B,
-- P = A^T D A) dA = Y ((I - P) G)^T - D A G X^T and dB = D A G.
local Lstsq = wick.autograd.Function:extend("LinalgLstsq")
function Lstsq.forward(ctx, A, B, rcond)
  local X = lstsq_solve(A, B, rcond)
  ctx:save_for_backward(A, B, X)
  return X
end
function Lstsq.backward(ctx, G)
  local A, B, X = unpack(ctx.saved_tensors)
  local At = mT(A)
  if A:size(-2) >= A:size(-1) then
    local CG = linalg.solve(At:matmul(A), G)
    local R = B - A:matmul(X)
    return R:matmul(mT(CG)) - A:matmul(CG):matmul(mT(X)), A:matmul(CG)
  end
  local D = linalg.inv(A:matmul(At))
  local Y, DAG = D:matmul(B), D:matmul(A):matmul(G)
  local IPG = G - At:matmul(D):matmul(A):matmul(G)
  return Y:matmul(mT(IPG)) - DAG:matmul(mT(X)), DAG
end

local LSTSQ_DRIVERS = { gels = true, gelsy = true, gelsd = true, gelss = true }
--- linalg.lstsq(A, B[, rcond][, {rcond =, driver = "gelsy"}]) -> {solution, residuals,
--- rank, singular_values} minimising |A X - B|, as PyTorch's: singular values at or
--- below rcond (default eps max(m, n)) times the largest count as zero; rank for
--- every driver but gels, singular_values for gelsd and gelss, residuals (the
--- squared ones, per column of B) for all but gelsy when m > n and A has full
--- rank (else empty tensors); differentiable for a full-rank A
function linalg.lstsq(A, B, rcond, opts)
  local fn = "linalg.lstsq"
  check.tensor(A, fn, "A")
  check.tensor(B, fn, "B")
  if type(rcond) == "table" and opts == nil then rcond, opts = nil, rcond end
  opts = check.options(opts, fn, { rcond = "number", driver = "string" })
  if opts.rcond ~= nil then
    if rcond ~= nil then check.fail(fn, "argument 'rcond' given both by position and as an option") end
    rcond = opts.rcond
  end
  if rcond ~= nil then check.number(rcond, fn, "rcond") end
  local driver = opts.driver or "gelsy"
  if not LSTSQ_DRIVERS[driver] then
    check.fail(fn, "parameter `driver` should be one of (gels, gelsy, gelsd, gelss), got '%s'", tostring(driver))
  end
  if A:dim() < 2 then check.fail(fn, "input must have at least 2 dimensions, got %d", A:dim()) end
  local vector = B:dim() == A:dim() - 1
  if vector then B = B:unsqueeze(-1) end
  if B:dim() < 2 or B:size(-2) ~= A:size(-2) then
    check.fail(fn, "input.size(-2) should match other.size(-2) (A is %s, B is %s)", tostring(A.shape),
      tostring(vector and B:squeeze(-1).shape or B.shape))
  end
  local m, n = A:size(-2), A:size(-1)
  if rcond == nil or rcond < 0 then rcond = wick.finfo(A.dtype).eps * math.max(m, n) end
  local X, rank, S
  if math.min(m, n) == 0 or A:numel() == 0 then -- (an empty system: X zeros, rank 0, PyTorch's)
    local xs, batch = B:size(), batch_shape(A)
    xs[#xs - 1] = n
    X = constant(wick.zeros(xs, { dtype = A.dtype, device = A.device }), A, B)
    rank = wick.zeros(batch, { dtype = "int64", device = A.device })
    batch[#batch + 1] = math.min(m, n)
    S = wick.zeros(batch, { dtype = A.dtype, device = A.device })
  elseif wick.is_grad_enabled() and (A.requires_grad or B.requires_grad) then
    X = Lstsq.apply(A, B, rcond)
    rank, S = select(2, wick.no_grad(lstsq_solve, A:detach(), B:detach(), rcond))
  else
    X, rank, S = lstsq_solve(A, B, rcond)
  end
  -- gels (a QR, no pivoting) fails on a matrix without full rank, as PyTorch's LAPACK call does (old pykan's
  -- try: lstsq(..., driver='gels') except: print('lstsq failed'))
  if driver == "gels" and rank:numel() > 0 and rank:lt(math.min(m, n)):any() then
    check.fail(fn, "The least squares solution could not be computed because the input matrix does not have full rank "
      .. "(error code: %d).", rank:min():item() + 1)
  end
  local empty = function(dtype) return wick.empty({ 0 }, { dtype = dtype, device = A.device }) end
  local residuals = empty(A.dtype)
  if driver ~= "gelsy" and m > n and rank:eq(n):all() then
    residuals = (A:matmul(X) - B):pow(2):sum(-2)
    if n == 0 and driver == "gels" then residuals = wick.zeros_like(residuals:detach()) end -- (LAPACK's gels: B zeroed)
    -- (a vector B keeps its residual's dim of 1, as PyTorch's)
  end
  if vector then X = X:squeeze(-1) end
  return { solution = X, residuals = residuals, rank = driver == "gels" and empty("int64") or rank,
    singular_values = (driver == "gelsd" or driver == "gelss") and S or empty(A.dtype) }
end

-- ---- LU (A = P L U, partial pivoting; the core's kernel) ----

-- the permutation of each matrix of m rows from LAPACK's 1-based row swaps (k of them): perm[i] the
-- row of A that is row i of L U, as an int64 tensor [..., m] (1-based)
local function permutation(pivots, m, fn)
  local k = pivots:size(-1)
  if pivots.dtype ~= "int32" and pivots.dtype ~= "int64" then
    check.fail(fn, "LU_pivots is expected to be a tensor of integers (got %s)", pivots.dtype)
  end
  local batch = pivots:size()
  batch[#batch] = nil
  local count = 1
  for _, d in ipairs(batch) do count = count * d end
  local flat = k > 0 and pivots:reshape(count, k):to("cpu"):totable() or {}
  local out = {}
  for b = 1, count do
    local perm = {}
    for i = 1, m do perm[i] = i end
    for i = 1, k do
      local j = flat[b][i]
      if j < 1 or j > m then check.fail(fn, "the pivots are row numbers from 1 to %d (got %d)", m, j) end
      perm[i], perm[j] = perm[j], perm[i]
    end
    out[b] = perm
  end
  batch[#batch + 1] = m
  if count == 0 or m == 0 then return wick.zeros(batch, { dtype = "int64", device = pivots.device }) end
  return wick.tensor(out, { dtype = "int64", device = pivots.device }):reshape(batch)
end

-- P^T as a matrix (rows of I in perm's order: P^T A = A[perm]), [..., m, m]
local function p_transposed(perm, like)
  local n = perm:size(-1)
  local eye = wick.eye(n, { dtype = like.dtype, device = like.device })
  local shape = perm:size()
  shape[#shape + 1] = n
  return eye:index_select(1, perm:reshape(-1)):reshape(shape)
end

-- P (m x m), L (m x k, unit lower) and U (k x n, upper) of a packed m x n LU, k = min(m, n)
local function lu_parts(packed, pivots, fn)
  local m, n = packed:size(-2), packed:size(-1)
  local k = math.min(m, n)
  local L = packed:narrow(-1, 1, k):tril(-1)
  local sizes = L:size()
  L = L + wick.eye(m, k, { dtype = packed.dtype, device = packed.device }):expand(sizes)
  return mT(p_transposed(permutation(pivots, m, fn), packed)), L, packed:narrow(-2, 1, k):triu()
end

local LU = wick.autograd.Function:extend("LinalgLU")
function LU.forward(ctx, A)
  local packed, pivots, info = core._linalg("lu_factor", A)
  local P, L, U = lu_parts(packed, pivots, "linalg.lu")
  ctx:save_for_backward(P, L, U)
  ctx:mark_non_differentiable(P, pivots, info)
  return P, L, U, pivots, info
end
-- P^T A = L U, differentiated: on the square part L^-1 dL + dU U^-1 = L^-1 P^T dA U^-1 splits into its strict
-- lower and upper triangles, so gA = P L^-H (tril(L^H gL, -1) + triu(gU U^H)) U^-H, the gradients taken on the
-- entries L and U hold (gL strictly lower, gU upper). A wide A's extra columns (U = [U1 U2], U2 = L^-1 P^T A2)
-- add L^-H gU2 as A2's gradient and -gU2 U2^H to L^H gL; a tall A's extra rows (L = [L1; L2], L2 = P^T A2 U^-1)
-- add gL2 U^-H as A2's gradient and -L2^H gL2 to gU U^H.
function LU.backward(ctx, _, gL, gU)
  local P, L, U = ctx.saved_tensors[1], ctx.saved_tensors[2], ctx.saved_tensors[3]
  if not gL and not gU then return nil end
  gL = gL and gL:tril(-1) or wick.zeros_like(L)
  gU = gU and gU or wick.zeros_like(U)
  local m, n = L:size(-2), U:size(-1)
  local k = math.min(m, n)
  local L1, U1 = L:narrow(-2, 1, k), U:narrow(-1, 1, k)
  local gL1, gU1 = gL:narrow(-2, 1, k), gU:narrow(-1, 1, k):triu()
  local lower = mT(L1):matmul(gL1)
  local upper = gU1:matmul(mT(U1))
  if n > k then lower = lower - gU:narrow(-1, k + 1, n - k):matmul(mT(U:narrow(-1, k + 1, n - k))) end
  if m > k then upper = upper - mT(L:narrow(-2, k + 1, m - k)):matmul(gL:narrow(-2, k + 1, m - k)) end
  local phi = lower:tril(-1) + upper:triu()
  local X = linalg.solve_triangular(mT(U1), phi, { upper = false, left = false }) -- phi U1^-H
  if n > k then X = wick.cat({ X, gU:narrow(-1, k + 1, n - k) }, -1) end
  local gA = linalg.solve_triangular(mT(L1), X, { upper = true, unitriangular = true }) -- L1^-H [...]
  if m > k then
    local tail = linalg.solve_triangular(mT(U1), gL:narrow(-2, k + 1, m - k), { upper = false, left = false })
    gA = wick.cat({ gA, tail }, -2)
  end
  return P:matmul(gA)
end

--- linalg.lu(A[, {pivot = true}]) -> P, L, U with A = P L U (m x n A: P m x m, L m x k, U k x n,
--- k = min(m, n); differentiable)
function linalg.lu(A, opts)
  check.tensor(A, "linalg.lu", "A")
  if A:dim() < 2 then check.fail("linalg.lu", "The input tensor A must have at least 2 dimensions (got %d)", A:dim()) end
  opts = check.options(opts, "linalg.lu", { pivot = "boolean" })
  if opts.pivot == false then check.fail("linalg.lu", "LU without pivoting is not supported on the CPU (as PyTorch's)") end
  local P, L, U = LU.apply(A)
  return P, L, U
end

-- PyTorch's error for the first matrix of a batch whose LU met a zero pivot (its 1-based order in info),
-- "(Batch element b)" (1-based) naming it in a batch
local function lu_errors(fn, info, extra)
  if info:numel() == 0 then return end
  local flat = info:reshape(-1)
  local bad = flat:ne(0):nonzero()
  if bad:numel() == 0 then return end
  local b = bad[1][1]:item()
  local k = flat[b]:item()
  check.fail(fn, "%sU[%d,%d] is zero and using it on lu_solve would result in a division by zero%s. If you still "
    .. "want to perform the factorization, consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)",
    info:dim() > 0 and ("(Batch element %d): "):format(b) or "", k, k, extra)
end

--- linalg.lu_factor_ex(A) -> LU, pivots, info: L (unit lower, diagonal not stored) and U packed
--- in LU, pivots LAPACK's 1-based row swaps (int32), info 0 or the first zero pivot
function linalg.lu_factor_ex(A, opts)
  check.tensor(A, "linalg.lu_factor_ex", "A")
  opts = check.options(opts, "linalg.lu_factor_ex", { pivot = "boolean", check_errors = "boolean" })
  if opts.pivot == false then check.fail("linalg.lu_factor", "LU without pivoting is not supported on the CPU (as PyTorch's)") end
  local packed, pivots, info
  if A.requires_grad and wick.is_grad_enabled() then -- through lu, so that LU carries the graph
    local _, L, U
    _, L, U, pivots, info = LU.apply(A)
    local m, n = A:size(-2), A:size(-1) -- L m x k and U k x n, packed m x n
    L = L:tril(-1)
    if m < n then L = wick.cat({ L, wick.zeros_like(U:narrow(-1, 1, n - m)) }, -1) end
    if m > n then U = wick.cat({ U, wick.zeros_like(L:narrow(-2, 1, m - n)) }, -2) end
    packed = L + U
  else
    packed, pivots, info = core._linalg("lu_factor", A)
  end
  if opts.check_errors then lu_errors("linalg.lu_factor_ex", info, " (the matrix is singular)") end
  return packed, pivots, info
end

--- linalg.lu_factor(A) -> LU, pivots; an error (PyTorch's) where a matrix of A has a zero pivot
--- (lu_factor_ex gives its info instead)
function linalg.lu_factor(A, opts)
  check.options(opts, "linalg.lu_factor", { pivot = "boolean" })
  local packed, pivots, info = linalg.lu_factor_ex(A, opts)
  lu_errors("linalg.lu_factor", info, "")
  return packed, pivots
end

--- wick.lu_unpack(LU, pivots) -> P, L, U
function linalg._lu_unpack(packed, pivots)
  check.tensor(packed, "lu_unpack", "LU_data")
  check.tensor(pivots, "lu_unpack", "LU_pivots")
  if packed:dim() < 2 then check.fail("lu_unpack", "LU_data must have at least 2 dimensions (got %d)", packed:dim()) end
  local k = math.min(packed:size(-2), packed:size(-1))
  local expected = batch_shape(packed)
  expected[#expected + 1] = k
  if wick.Size(expected) ~= pivots.shape then
    check.fail("lu_unpack", "LU_pivots of size %s do not match LU_data of size %s (expected [..., %d])",
      tostring(pivots.shape), tostring(packed.shape), k)
  end
  return lu_parts(packed, pivots, "lu_unpack")
end

--- linalg.lu_solve(LU, pivots, B[, {left = true, adjoint = false}]): X with A X = B from lu_factor's
--- results (differentiable in LU and B)
function linalg.lu_solve(packed, pivots, B, opts)
  local fn = "linalg.lu_solve"
  square(fn, packed)
  check.tensor(pivots, fn, "pivots")
  check.tensor(B, fn, "B")
  opts = check.options(opts, fn, { left = "boolean", adjoint = "boolean" })
  local L = packed:tril(-1) + eye_like(packed)
  local U = packed:triu()
  local perm = permutation(pivots, packed:size(-1), fn)
  local Pt = p_transposed(perm, packed)
  local left, adjoint = opts.left ~= false, opts.adjoint == true
  if left and not adjoint then -- L U X = P^T B
    local Y = linalg.solve_triangular(L, Pt:matmul(B), { upper = false, unitriangular = true })
    return linalg.solve_triangular(U, Y, { upper = true })
  elseif left then -- A^T X = B: U^T L^T P^T X = B
    local Y = linalg.solve_triangular(mT(U), B, { upper = false })
    local Z = linalg.solve_triangular(mT(L), Y, { upper = true, unitriangular = true })
    -- P Z: Z's rows gathered in perm's inverse order (a singular A's infinities kept, not a product's NaN)
    return Z:gather(-2, perm:argsort(-1):unsqueeze(-1):expand(Z:size()))
  end
  -- X A = B, or X A^T = B: transposed
  return mT(linalg.lu_solve(packed, pivots, mT(B), { adjoint = not adjoint }))
end

-- ---- matrix functions and small names ----

--- linalg.matrix_exp(A): e^A by scaling and squaring of a Taylor series (products only: any
--- device, differentiable)
function linalg.matrix_exp(A)
  square("linalg.matrix_exp", A)
  if not A:is_floating_point() then check.fail("linalg.matrix_exp", "expected a floating point tensor, got %s", A.dtype) end
  if A:numel() == 0 then return A:clone() end
  local norm = A:detach():abs():sum(-2):amax():item() -- the largest 1-norm of the batch
  local s = norm > 0.5 and math.ceil(math.log(norm / 0.5) / math.log(2)) or 0
  if s ~= s or s == math.huge then s = 0 end -- (nan or inf in A: the result shows it)
  local X = A / (2 ^ s)
  -- |X| <= 1/2: 18 terms leave less than 1e-19 (Horner: I + X (I + X/2 (I + X/3 ...)))
  local I = eye_like(A)
  local E = I
  for k = 18, 1, -1 do E = I + X:matmul(E) / k end
  for _ = 1, s do E = E:matmul(E) end
  return E
end

--- linalg.householder_product(A, tau) (torch.orgqr): the first n columns of H_1 ... H_k, H_j = I - tau_j v_j
--- v_j^T with v_j A's column j below the diagonal, 1 on it and 0 above (LAPACK's compact form,
--- geqrf's); A (..., m, n) with m >= n, tau (..., k), k <= n; differentiable in both
function linalg.householder_product(A, tau)
  local fn = "linalg.householder_product"
  check.tensor(A, fn, "input")
  check.tensor(tau, fn, "tau")
  if A:dim() < 2 then check.fail(fn, "input must have at least 2 dimensions, got %d", A:dim()) end
  local m, n = A:size(-2), A:size(-1)
  if m < n then check.fail(fn, "input.shape[-2] must be greater than or equal to input.shape[-1]") end
  local k = tau:dim() > 0 and tau:size(-1) or 1
  if k > n then check.fail(fn, "input.shape[-1] must be greater than or equal to tau.shape[-1]") end
  if A:numel() == 0 then -- (no columns, or an empty batch: the empty Q of A's shape, PyTorch's)
    return constant(wick.zeros(A:size(), { dtype = A.dtype, device = A.device }), A, tau)
  end
  local V = A:tril(-1) + wick.eye(m, n, { dtype = A.dtype, device = A.device })
  local Q = eye_like(V:narrow(-1, 1, 1):expand(V:size()):narrow(-2, 1, m):matmul(mT(V)))
  for j = 1, k do
    local v = V:narrow(-1, j, 1) -- (..., m, 1)
    local t = tau:narrow(-1, j, 1):unsqueeze(-1) -- (..., 1, 1)
    Q = Q - (Q:matmul(v) * t):matmul(mT(v))
  end
  return Q:narrow(-1, 1, n)
end

--- wick.geqrf(A) -> a, tau (torch.geqrf): LAPACK's compact QR of A (..., m, n): R on and above a's
--- diagonal, the Householder vectors below it (their leading 1 left out), the reflectors' factors in
--- tau; householder_product(a, tau) is Q. Computed reflector by reflector (LAPACK's dlarfg signs:
--- tau 0 where the column below the diagonal is already 0); not differentiable, as PyTorch's.
function methods.geqrf(A)
  local fn = "geqrf"
  check.tensor(A, fn, "input")
  if A:dim() < 2 then check.fail(fn, "input must have at least 2 dimensions, got %d", A:dim()) end
  if not A:is_floating_point() then check.fail(fn, "expected a floating point tensor, got %s", A.dtype) end
  local m, n = A:size(-2), A:size(-1)
  local k = math.min(m, n)
  local shape = A:size()
  local lead = {}
  for i = 1, A:dim() - 2 do lead[i] = shape[i] end
  lead[#lead + 1] = k
  if A:numel() == 0 then -- (nothing to reflect: a copy and zero factors, PyTorch's)
    return A:detach():clone(), wick.zeros(lead, { dtype = A.dtype, device = A.device })
  end
  return wick.no_grad(function()
    local a = A:to("float64"):reshape(-1, m, n):clone()
    local taus = wick.zeros({ a:size(1), k }, { dtype = "float64" })
    for b = 1, a:size(1) do
      local M = a[b]
      for j = 1, k do
        local alpha = M[j][j]:item()
        local below = M:narrow(1, j + 1, m - j):select(2, j) -- (m - j)
        local xnorm = m > j and below:norm():item() or 0
        if xnorm > 0 then
          local beta = -(alpha >= 0 and 1 or -1) * math.sqrt(alpha * alpha + xnorm * xnorm)
          local tau = (beta - alpha) / beta
          below:div_(alpha - beta)
          M[j][j] = beta
          taus[b][j] = tau
          if j < n then -- the reflector applied to the columns after j
            local v = wick.cat({ wick.ones(1, { dtype = "float64" }), below }):unsqueeze(2) -- (m - j + 1, 1)
            local rest = M:narrow(1, j, m - j + 1):narrow(2, j + 1, n - j)
            rest:sub_(v:matmul(mT(v):matmul(rest)) * tau)
          end
        end
      end
    end
    return a:reshape(shape):to(A.dtype), taus:reshape(lead):to(A.dtype)
  end)
end
function methods.orgqr(A, tau) return linalg.householder_product(A, tau) end

--- linalg.matrix_power(A, n) / t:matrix_power(n): A^n by squaring; a negative n is the inverse's power,
--- n = 0 the identity (requiring grad where A does, its gradient zeros), as PyTorch's
function linalg.matrix_power(A, n)
  check.tensor(A, "matrix_power", "self")
  check.int(n, "matrix_power", "n")
  if A:dim() < 2 or A:size(-1) ~= A:size(-2) then
    check.fail("matrix_power", "expected a batch of square matrices, got shape [%s]", table.concat(A:size(), ", "))
  end
  if n < 0 then A, n = linalg.inv(A), -n end
  if n == 0 then
    local eye = wick.eye(A:size(-1), { dtype = A.dtype, device = A.device }):expand(A:size()):contiguous()
    return constant(eye, A)
  end
  local result, base = nil, A
  while n > 0 do
    if n % 2 == 1 then result = result and result:matmul(base) or base end
    n = math.floor(n / 2)
    if n > 0 then base = base:matmul(base) end
  end
  return result
end
methods.matrix_power = linalg.matrix_power
function linalg.matmul(a, b) return wick.matmul(a, b) end
--- linalg.diagonal(A[, {offset = 0, dim1 = -2, dim2 = -1}])
function linalg.diagonal(A, opts)
  check.tensor(A, "linalg.diagonal", "A")
  opts = check.options(opts, "linalg.diagonal", { offset = "integer", dim1 = "integer", dim2 = "integer" })
  return A:diagonal(opts.offset or 0, opts.dim1 or -2, opts.dim2 or -1)
end
--- linalg.vecdot(x, y[, {dim = -1}]): sum of conj(x) y along dim
function linalg.vecdot(x, y, opts)
  check.tensor(x, "linalg.vecdot", "x")
  check.tensor(y, "linalg.vecdot", "y")
  if type(opts) == "number" then opts = { dim = opts } end
  opts = check.options(opts, "linalg.vecdot", { dim = "integer" })
  return (x:conj() * y):sum(opts.dim or -1)
end
--- linalg.vander(x[, {N}]): [..., n, N] with columns x^0, x^1, ..., x^(N-1)
function linalg.vander(x, opts)
  check.tensor(x, "linalg.vander", "x")
  if x:dim() < 1 then check.fail("linalg.vander", "x must have at least one dimension") end
  opts = check.options(opts, "linalg.vander", { N = "integer" })
  local N = opts.N or x:size(-1)
  if N < 1 then check.fail("linalg.vander", "N must be greater than 1, got %d", N) end
  local powers = wick.arange(N, { dtype = x:is_floating_point() and x.dtype or "int64", device = x.device })
  return x:unsqueeze(-1) ^ powers
end
--- linalg.cond(A[, p]): the condition number (p nil or 2: through the singular values)
function linalg.cond(A, p)
  check.tensor(A, "linalg.cond", "A")
  if type(p) == "table" then p = check.options(p, "linalg.cond", { p = "number|string" }).p end
  if A:dim() < 2 then check.fail("linalg.cond", "The input tensor must have at least 2 dimensions.") end
  float_check("linalg.cond", A)
  if (p == "fro" or p == "nuc") and A:size(-1) ~= A:size(-2) then
    check.fail("linalg.cond(ord=" .. p .. ")", "A must be batches of square matrices, but they are %d by %d matrices",
      A:size(-2), A:size(-1))
  end
  if A:numel() == 0 then -- (0 for empty matrices, as PyTorch's)
    return constant(wick.zeros(batch_shape(A), { dtype = A.dtype, device = A.device }), A)
  end
  if p == nil or p == 2 or p == -2 then
    local S = linalg.svdvals(A)
    local hi, lo = S:narrow(-1, 1, 1):squeeze(-1), S:narrow(-1, S:size(-1), 1):squeeze(-1)
    if p == -2 then return lo / hi end
    return hi / lo
  end
  square("linalg.cond(ord=" .. tostring(p) .. ")", A)
  local Ainv, info = linalg.inv_ex(A) -- (a singular matrix's condition number is inf, as PyTorch's)
  return wick.where(info:ne(0), math.huge, linalg.matrix_norm(A, p) * linalg.matrix_norm(Ainv, p))
end
-- PyTorch's _ex forms: run(A) as it is, or, where some matrix of the batch is singular (check_errors
-- false), info from its LU (the 1-based order of the first zero pivot, 0 for the others), those
-- matrices' results NaN and the rest computed as usual (kornia's safe_inverse_with_mask)
local function ex_form(fn, A, check_errors, run)
  square(fn, A)
  float_check(fn, A)
  local ok, X = pcall(run, A)
  local batch = batch_shape(A)
  if ok then return X, wick.zeros(batch, { dtype = "int32", device = A.device }) end
  local _, _, info = linalg.lu_factor_ex(A:detach())
  if check_errors or info:numel() == 0 or info:max():item() == 0 then error(X, 0) end -- (another failure)
  local view = { (table.unpack or unpack)(batch) }
  view[#view + 1], view[#view + 2] = 1, 1
  local bad = info:ne(0):view(view)
  X = run(wick.where(bad, eye_like(A), A))
  local mask = bad
  if X:dim() < A:dim() then mask = bad:squeeze(-1) end -- (a vector right-hand side)
  return wick.where(mask, 0 / 0, X), info:to("int32")
end
--- linalg.inv_ex(A[, {check_errors = false}]) -> inverse, info; linalg.solve_ex(A, B[, {left = true,
--- check_errors = false}]) -> result, info: info per matrix, 0 or where its LU met a zero pivot (that
--- matrix's result NaN), as PyTorch's
function linalg.inv_ex(A, opts)
  opts = check.options(opts, "linalg.inv_ex", { check_errors = "boolean" })
  return ex_form("linalg.inv_ex", A, opts.check_errors, linalg.inv)
end
function linalg.solve_ex(A, B, opts)
  opts = check.options(opts, "linalg.solve_ex", { left = "boolean", check_errors = "boolean" })
  return ex_form("linalg.solve_ex", A, opts.check_errors, function(M)
    return linalg.solve(M, B, { left = opts.left })
  end)
end
--- linalg.tensorinv(A[, ind = 2]) and linalg.tensorsolve(A, B[, dims]): through inv and solve
function linalg.tensorinv(A, ind)
  check.tensor(A, "linalg.tensorinv", "A")
  if type(ind) == "table" then ind = ind.ind end
  ind = ind or 2
  local size = A:size()
  local left, right, rows, cols = {}, {}, 1, 1
  for i = 1, #size do
    if i <= ind then left[#left + 1] = size[i]; rows = rows * size[i] else right[#right + 1] = size[i]; cols = cols * size[i] end
  end
  if rows ~= cols then
    check.fail("linalg.tensorinv", "Expected self to satisfy the requirement prod(self.shape[ind:]) == prod(self.shape[:ind]), but got %d != %d", cols, rows)
  end
  local shape = {}
  for _, v in ipairs(right) do shape[#shape + 1] = v end
  for _, v in ipairs(left) do shape[#shape + 1] = v end
  return linalg.inv(A:reshape(rows, cols)):reshape(shape)
end
function linalg.tensorsolve(A, B, dims)
  check.tensor(A, "linalg.tensorsolve", "A")
  check.tensor(B, "linalg.tensorsolve", "B")
  if type(dims) == "table" and getmetatable(dims) == nil and dims.dims ~= nil then
    dims = check.options(dims, "linalg.tensorsolve", { dims = "integer|table" }).dims
  end
  if dims ~= nil then -- (PyTorch's: those dims of A moved last, in their order)
    if type(dims) == "number" then dims = { dims } end
    local last = {}
    for i = 1, #dims do last[i] = A:dim() - #dims + i end
    A = A:movedim(dims, last)
  end
  local size, rest, rows, cols = A:size(), {}, 1, 1
  if B:dim() > #size then
    check.fail("linalg.tensorsolve", "B has more dimensions (%d) than A (%d)", B:dim(), #size)
  end
  for i = 1, #size do
    if i <= B:dim() then rows = rows * size[i] else rest[#rest + 1] = size[i]; cols = cols * size[i] end
  end
  if rows ~= cols then -- (PyTorch's words, of A's shape split at B's number of dims)
    check.fail("linalg.tensorsolve", "Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
      .. "prod(self.shape[:other.ndim]), but got %d != %d", cols, rows)
  end
  if B:numel() ~= rows then
    check.fail("linalg.tensorsolve", "Expected B to have prod(A.shape[:B.ndim]) = %d elements, got %d (A of shape %s, B of shape %s)",
      rows, B:numel(), tostring(A.shape), tostring(B.shape))
  end
  return linalg.solve(A:reshape(rows, cols), B:reshape(rows)):reshape(rest)
end

-- autocast's float32 list holds the decompositions and solvers: under
-- autocast their 16-bit float operands go to float32 (else their dtype is an
-- error) and they run as one op, without autocast inside (a product within
-- pinv stays float32, as in PyTorch's kernel)
local f32 = wick._autocast_float32
for _, name in ipairs({ "solve", "inv", "slogdet", "det", "cholesky", "qr", "eigh", "eigvalsh", "svd", "svdvals",
  "eig", "eigvals", "pinv", "matrix_rank", "lstsq", "lu", "lu_factor", "lu_factor_ex" }) do
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
--- torch.lu(A[, pivot = true[, get_infos = false]]) -> LU, pivots[, infos] (the old name of lu_factor_ex)
function methods.lu(t, pivot, get_infos)
  if type(pivot) == "table" then pivot, get_infos = pivot.pivot, pivot.get_infos end
  local packed, pivots, info = linalg.lu_factor_ex(t, { pivot = pivot })
  if get_infos then return packed, pivots, info end
  return packed, pivots
end
--- torch.lu_solve(b, LU_data, LU_pivots) (the old order) and torch.lu_unpack(LU, pivots)
function methods.lu_solve(b, packed, pivots) return linalg.lu_solve(packed, pivots, b) end
function methods.lu_unpack(packed, pivots) return linalg._lu_unpack(packed, pivots) end
function methods.matrix_exp(t) return linalg.matrix_exp(t) end
function methods.pinverse(t, rcond) return linalg.pinv(t, rcond and { rtol = rcond } or nil) end
function methods.cholesky(t, upper) return linalg.cholesky(t, { upper = upper == true }) end
function methods.qr(t, some) return linalg.qr(t, some == false and "complete" or "reduced") end
--- t:svd([some = true[, compute_uv = true]]) (or {some =, compute_uv =}) -> U, S, V (PyTorch's
--- torch.svd: V, not Vh); compute_uv false: U and V are zeros, (..., m, m) and (..., n, n)
function methods.svd(t, some, compute_uv)
  if type(some) == "table" then
    local o = check.options(some, "svd", { some = "boolean", compute_uv = "boolean" })
    some, compute_uv = o.some, o.compute_uv
  end
  if compute_uv == false then
    check.tensor(t, "svd", "input")
    local S = linalg.svdvals(t)
    local su, sv = t:size(), t:size()
    su[#su] = su[#su - 1]
    sv[#sv - 1] = sv[#sv]
    return wick.zeros(su, { dtype = t.dtype, device = t.device }), S,
      wick.zeros(sv, { dtype = t.dtype, device = t.device })
  end
  local U, S, Vh = linalg.svd(t, some == false)
  return U, S, mT(Vh)
end
--- wick.svd_lowrank(A[, q = 6[, niter = 2[, M]]]) -> U (m, q), S (q), V (n, q) (or {q =, niter =, M =}):
--- A - M's q largest singular triplets. PyTorch's is a randomized approximation; this is the exact
--- truncated SVD (what the approximation tends to with niter), so niter changes nothing; differentiable
--- (through linalg.svd).
function methods.svd_lowrank(A, q, niter, M)
  local fn = "svd_lowrank"
  if type(q) == "table" then q, niter, M = q.q, q.niter, q.M end
  check.tensor(A, fn, "A")
  if A:dim() < 2 then check.fail(fn, "A must have at least 2 dimensions, got %d", A:dim()) end
  local m, n = A.shape[A:dim() - 1], A.shape[A:dim()]
  q = check.opt_int(q, fn, "q", 6, 0)
  if q > math.min(m, n) then check.fail(fn, "q must be at most min(m, n) = %d, got %d", math.min(m, n), q) end
  check.opt_int(niter, fn, "niter", 2, 0)
  if M ~= nil then A = A - M end
  local U, S, Vh = linalg.svd(A, false)
  return U:narrow(-1, 1, q), S:narrow(-1, 1, q), mT(Vh):narrow(-1, 1, q)
end
--- wick.pca_lowrank(A[, q = min(6, m, n)[, center = true[, niter = 2]]]) -> U, S, V (or {q =, center =, niter =}):
--- svd_lowrank of A with its column means taken away (A's rows are the observations)
function methods.pca_lowrank(A, q, center, niter)
  if type(q) == "table" then q, center, niter = q.q, q.center, q.niter end
  check.tensor(A, "pca_lowrank", "A")
  if A:dim() < 2 then check.fail("pca_lowrank", "A must have at least 2 dimensions, got %d", A:dim()) end
  if q == nil then q = math.min(6, A.shape[A:dim() - 1], A.shape[A:dim()]) end
  if center ~= false then A = A - A:mean(-2, true) end
  return methods.svd_lowrank(A, q, niter)
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
-- PyTorch's named tuples: the first tensor answers the result's fields (Glow's
-- torch.linalg.slogdet(W).logabsdet, qr(A).Q); see wick._name_results
for name, fields in pairs({ slogdet = { "sign", "logabsdet" }, qr = { "Q", "R" }, eigh = { "eigenvalues", "eigenvectors" },
  eig = { "eigenvalues", "eigenvectors" },
  svd = { "U", "S", "Vh" }, lu = { "P", "L", "U" }, lu_factor = { "LU", "pivots" }, lu_factor_ex = { "LU", "pivots", "info" },
  cholesky_ex = { "L", "info" }, inv_ex = { "inverse", "info" }, solve_ex = { "result", "info" },
  lstsq = { "solution", "residuals", "rank", "singular_values" } }) do
  if linalg[name] then linalg[name] = wick._name_results(linalg[name], fields) end
end
methods.svd = wick._name_results(methods.svd, { "U", "S", "V" })
linalg._methods = methods
-- torch.cholesky_solve, torch.cholesky_inverse and torch.triangular_solve, as wick.* names and tensor
-- methods (until init.lua's list of linalg methods names them too)
for _, name in ipairs({ "cholesky_solve", "cholesky_inverse", "triangular_solve" }) do
  if rawget(wick, name) == nil then wick[name] = methods[name] end
  if rawget(wick.Tensor, name) == nil then wick.Tensor[name] = methods[name] end
end
return check.strict(linalg, "wick.linalg")
