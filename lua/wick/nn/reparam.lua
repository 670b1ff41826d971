-- Weight normalization and spectral normalization, both of PyTorch's forms:
-- nn.utils.weight_norm / spectral_norm (a forward pre-hook recomputes the
-- weight from weight_g and weight_v, or weight_orig and the power-iteration
-- vectors weight_u and weight_v: PyTorch's state-dict names) with their
-- remove_ functions, and nn.utils.parametrizations.weight_norm /
-- spectral_norm (parametrize: parametrizations.weight.original0/original1,
-- or .original and the buffers _u, _v), and parametrizations.orthogonal
-- (matrix_exp, cayley or householder maps, PyTorch's). Dimensions are 1-based: dim = 1 is
-- PyTorch's dim=0; dim = false is PyTorch's dim=None (the whole tensor).
local wick = require("wick")
local check = require("wick.argcheck")
local Module = require("wick.nn.module")
local common = require("wick.nn.common")
local layers = require("wick.nn.layers")
local F = require("wick.nn.functional")
local parametrize = require("wick.nn.parametrize")

local U, Pz = {}, {}

-- the 2-norm of v over every dimension but dim, kept as size-1 dimensions
-- (dim = nil: over all of v)
local function norm_except_dim(v, dim)
  if dim == nil then return v:norm() end
  local dims = {}
  for d = 1, v:dim() do if d ~= dim then dims[#dims + 1] = d end end
  if #dims == 0 then return v:abs() end
  return v:norm(2, dims, true)
end

-- PyTorch's _weight_norm: v * (g / ||v||)
local function weight_norm_of(v, g, dim) return v * (g / norm_except_dim(v, dim)) end

-- dim: an integer (1-based, negative from the end) or false (the whole tensor)
local function norm_dim(fn, dim, t, default)
  if dim == false then return nil end
  if dim == nil then dim = default end
  check.int(dim, fn, "dim")
  local n = t:dim()
  local d = dim < 0 and dim + n + 1 or dim
  if d < 1 or d > n then check.fail(fn, "dim %d is out of range for a %d-d weight (dims are 1-based)", dim, n) end
  return d
end

local function weight_of(fn, module, name)
  check.module(module, fn, "module")
  check.string(name, fn, "name")
  local w = rawget(module, name)
  if not wick.is_tensor(w) then
    check.fail(fn, "Module '%s' has no parameter or buffer with name '%s'", getmetatable(module).__name, name)
  end
  return w
end

-- ConvTranspose keeps its output channels in dimension 2
local function default_dim(module)
  return (getmetatable(module).__name or ""):match("^ConvTranspose") and 2 or 1
end

-- the hooks the pre-hook forms keep, per module and name (for remove_)
local HOOKS = common.hook_registry()
local function hooks_of(module)
  HOOKS[module] = HOOKS[module] or {}
  return HOOKS[module]
end

-- ---- nn.utils.weight_norm ----

--- nn.utils.weight_norm(module[, name = "weight"[, dim = 1]][, opts]) (deprecated in PyTorch, with its warning)
function U.weight_norm(module, ...)
  local fn = "weight_norm"
  common.warn("nn.utils.weight_norm is deprecated in favor of nn.utils.parametrizations.weight_norm (PyTorch's warning).", true)
  local o = check.positional(fn, { "name", "dim" }, { name = "string", dim = "integer|boolean" }, ...)
  local name = o.name or "weight"
  local w = weight_of(fn, module, name)
  local dim = norm_dim(fn, o.dim, w, 1)
  local hooks = hooks_of(module)
  if hooks[name] then check.fail(fn, "Cannot register two weight_norm hooks on the same parameter %s", name) end
  Module._forget(module, name)
  module[name .. "_g"] = layers.Parameter(wick.no_grad(function() return norm_except_dim(w, dim):clone() end))
  module[name .. "_v"] = layers.Parameter(w:detach())
  local function compute(m) return weight_norm_of(m[name .. "_v"], m[name .. "_g"], dim) end
  rawset(module, name, compute(module))
  hooks[name] = { kind = "weight_norm", compute = compute,
    entry = common.pre_hook(module, function(m) rawset(m, name, compute(m)) end) }
  return module
end

local function remove_hook(fn, kind, module, name, parts)
  check.module(module, fn, "module")
  name = name or "weight"
  local h = hooks_of(module)[name]
  if not h or h.kind ~= kind then
    check.fail(fn, "%s of '%s' not found in %s", kind, name, getmetatable(module).__name)
  end
  local w = wick.no_grad(function() return h.compute(module, false):clone() end)
  common.remove_pre_hook(module, h.entry)
  hooks_of(module)[name] = nil
  for _, k in ipairs(parts) do Module._forget(module, name .. k) end
  rawset(module, name, nil)
  module[name] = layers.Parameter(w)
  return module
end

--- nn.utils.remove_weight_norm(module[, name = "weight"])
function U.remove_weight_norm(module, name)
  return remove_hook("remove_weight_norm", "weight_norm", module, name, { "_g", "_v" })
end

-- ---- nn.utils.spectral_norm ----

-- the weight as a matrix, dimension dim first
local function as_matrix(w, dim)
  if dim ~= 1 then
    local order = { dim }
    for d = 1, w:dim() do if d ~= dim then order[#order + 1] = d end end
    w = w:permute(order)
  end
  return w:reshape(w:size(1), -1)
end

local function unit(t, eps) return F.normalize(t, 2, 1, eps) end

local SPECTRAL = { name = "string", n_power_iterations = "integer", eps = "number", dim = "integer" }

-- both forms' arguments: name, the weight, n_power_iterations, eps, dim
local function spectral_args(fn, module, ...)
  local o = check.positional(fn, { "name", "n_power_iterations", "eps", "dim" }, SPECTRAL, ...)
  local name = o.name or "weight"
  local w = weight_of(fn, module, name)
  local n_iter = check.opt_int(o.n_power_iterations, fn, "n_power_iterations", 1, 0)
  local dim = w:dim() > 0 and norm_dim(fn, o.dim, w, default_dim(module)) or 1
  return name, w, n_iter, o.eps or 1e-12, dim
end

--- nn.utils.spectral_norm(module[, name = "weight"[, n_power_iterations = 1[, eps = 1e-12[, dim]]]][, opts])
function U.spectral_norm(module, ...)
  local fn = "spectral_norm"
  local name, w, n_iter, eps, dim = spectral_args(fn, module, ...)
  if w:dim() < 1 then check.fail(fn, "the weight must have at least one dimension") end
  local hooks = hooks_of(module)
  if hooks[name] then check.fail(fn, "Cannot register two spectral_norm hooks on the same parameter %s", name) end
  local mat = as_matrix(w:detach(), dim)
  local opts = { dtype = w.dtype, device = w.device }
  local u = unit(wick._randn(mat:size(1), opts), eps)
  local v = unit(wick._randn(mat:size(2), opts), eps)
  Module._forget(module, name)
  module[name .. "_orig"] = w
  rawset(module, name, w:detach())
  module:register_buffer(name .. "_u", u)
  module:register_buffer(name .. "_v", v)
  local function compute(m, power)
    local weight, uu, vv = m[name .. "_orig"], m[name .. "_u"], m[name .. "_v"]
    local wm = as_matrix(weight, dim)
    if power then
      wick.no_grad(function()
        for _ = 1, n_iter do
          vv:copy_(unit(wm:t():mv(uu), eps))
          uu:copy_(unit(wm:mv(vv), eps))
        end
      end)
      if n_iter > 0 then uu, vv = uu:clone(), vv:clone() end
    end
    return weight / uu:dot(wm:mv(vv))
  end
  hooks[name] = { kind = "spectral_norm", compute = compute,
    entry = common.pre_hook(module, function(m) rawset(m, name, compute(m, m.training)) end) }
  return module
end

--- nn.utils.remove_spectral_norm(module[, name = "weight"])
function U.remove_spectral_norm(module, name)
  return remove_hook("remove_spectral_norm", "spectral_norm", module, name, { "_orig", "_u", "_v" })
end

-- ---- nn.utils.parametrizations ----

local WeightNorm = Module:extend("_WeightNorm")
function WeightNorm:init(dim) rawset(self, "_dim", dim) end
function WeightNorm:forward(g, v) return weight_norm_of(v, g, rawget(self, "_dim")) end
function WeightNorm:right_inverse(w) return { norm_except_dim(w, rawget(self, "_dim")), w } end

--- nn.utils.parametrizations.weight_norm(module[, name = "weight"[, dim = 1]][, opts]):
--- weight from parametrizations.weight.original0 (g) and original1 (v)
function Pz.weight_norm(module, ...)
  local fn = "parametrizations.weight_norm"
  local o = check.positional(fn, { "name", "dim" }, { name = "string", dim = "integer|boolean" }, ...)
  local name = o.name or "weight"
  local w = weight_of(fn, module, name)
  parametrize.register_parametrization(module, name, WeightNorm(norm_dim(fn, o.dim, w, 1)), { unsafe = true })
  -- a state dict of nn.utils.weight_norm's (weight_g, weight_v: TCN's checkpoints) loads into it,
  -- renamed, as PyTorch's _weight_norm_compat_hook does
  module:register_load_state_dict_pre_hook(function(_, sd, prefix)
    local g_key, v_key = prefix .. name .. "_g", prefix .. name .. "_v"
    local g, v = rawget(sd, g_key), rawget(sd, v_key)
    if g == nil or v == nil then return end
    rawset(sd, g_key, nil)
    rawset(sd, v_key, nil)
    sd[prefix .. "parametrizations." .. name .. ".original0"] = g
    sd[prefix .. "parametrizations." .. name .. ".original1"] = v
  end)
  return module
end

local SpectralNorm = Module:extend("_SpectralNorm")
function SpectralNorm:init(weight, n_iter, dim, eps)
  self.dim, self.eps, self.n_power_iterations = dim, eps, n_iter
  if weight:dim() > 1 then
    local mat = as_matrix(weight:detach(), dim)
    local opts = { dtype = weight.dtype, device = weight.device }
    self:register_buffer("_u", unit(wick._randn(mat:size(1), opts), eps))
    self:register_buffer("_v", unit(wick._randn(mat:size(2), opts), eps))
    self:_power_method(mat, 15)
  end
end
function SpectralNorm:_power_method(mat, n)
  wick.no_grad(function()
    for _ = 1, n do
      self._u:copy_(unit(mat:mv(self._v), self.eps))
      self._v:copy_(unit(mat:t():mv(self._u), self.eps))
    end
  end)
end
function SpectralNorm:forward(weight)
  if weight:dim() == 1 then return unit(weight, self.eps) end
  local mat = as_matrix(weight, self.dim)
  if self.training then self:_power_method(mat, self.n_power_iterations) end
  return weight / self._u:clone():dot(mat:mv(self._v:clone()))
end
function SpectralNorm:right_inverse(value) return value end

--- nn.utils.parametrizations.spectral_norm(module[, name = "weight"[, n_power_iterations = 1[, eps = 1e-12[, dim]]]][, opts])
function Pz.spectral_norm(module, ...)
  local name, w, n_iter, eps, dim = spectral_args("parametrizations.spectral_norm", module, ...)
  parametrize.register_parametrization(module, name, SpectralNorm(w, n_iter, dim, eps))
  return module
end

-- ---- parametrizations.orthogonal ----
-- PyTorch's construction, in wick's ops: the original X (n >= k, else transposed) is mapped to an
-- orthogonal Q: exp or Cayley of the skew-symmetric A = X' - X'^T (X' the lower triangle of X, padded
-- square), or the product of the Householder reflectors below X's diagonal (signs from the diagonal);
-- with the trivialization, Q is base Q, base the orthogonal matrix the weight was made (or set) to.

local function mT(t) return t:transpose(-2, -1) end
-- the Q of A = QR with R's diagonal non-negative (A tall): PyTorch's _make_orthogonal
local function make_orthogonal(A)
  local a, tau = wick.geqrf(A)
  return wick.linalg.householder_product(a, tau) * a:diagonal(0, -2, -1):sign():unsqueeze(-2)
end
local function is_orthogonal(Q)
  local n, k = Q:size(-2), Q:size(-1)
  local eye = wick.eye(k, { dtype = Q.dtype, device = Q.device })
  return mT(Q):matmul(Q):allclose(eye, 0, 10 * n * wick.finfo(Q.dtype).eps)
end

local MAPS = { matrix_exp = true, cayley = true, householder = true }
local Orthogonal = Module:extend("_Orthogonal")
function Orthogonal:init(weight, map, trivial)
  rawset(self, "_shape", weight:size())
  rawset(self, "_map", map)
  rawset(self, "_trivial", trivial)
end
function Orthogonal:forward(X)
  local n, k = X:size(-2), X:size(-1)
  local transposed = n < k
  if transposed then X, n, k = mT(X), k, n end
  local map, Q = rawget(self, "_map"), nil
  if map == "householder" then
    local A = X:tril(-1)
    Q = wick.linalg.householder_product(A, 2 / (1 + (A * A):sum(-2)))
    Q = Q * X:diagonal(0, -2, -1):int():unsqueeze(-2) -- (the diagonal's signs, no gradient)
  else
    X = X:tril()
    if n ~= k then
      local pad = X:size()
      pad[#pad] = n - k
      X = wick.cat({ X, wick.zeros(pad, { dtype = X.dtype, device = X.device }) }, -1)
    end
    local A = X - mT(X)
    if map == "matrix_exp" then Q = wick.linalg.matrix_exp(A)
    else
      local eye = wick.eye(n, { dtype = A.dtype, device = A.device })
      Q = wick.linalg.solve(eye - A * 0.5, eye + A * 0.5)
    end
    if n ~= k then Q = Q:narrow(-1, 1, k) end
  end
  if rawget(self, "_trivial") then Q = self.base:matmul(Q) end
  if transposed then Q = mT(Q) end
  return Q
end
function Orthogonal:right_inverse(Q)
  local fn = "parametrizations.orthogonal"
  if Q:size() ~= rawget(self, "_shape") then
    check.fail(fn, "Expected a matrix or batch of matrices of shape %s. Got a tensor of shape %s.",
      tostring(rawget(self, "_shape")), tostring(Q:size()))
  end
  return wick.no_grad(function()
    local Q_init = Q
    local n, k = Q:size(-2), Q:size(-1)
    local transposed = n < k
    if transposed then Q, n, k = mT(Q), k, n end
    if not rawget(self, "_trivial") then
      if rawget(self, "_map") ~= "householder" then
        -- (PyTorch's NotImplementedError: at registration the weight is taken as the original as it is)
        check.fail(fn, "It is not possible to assign to the matrix exponential or the Cayley parametrizations "
          .. "when use_trivialization=False. (PyTorch's NotImplementedError)")
      end
      -- X = QR with R's diagonal positive: the reflectors below the diagonal, its signs on it
      local a, tau = wick.geqrf(Q)
      local d = a:diagonal(0, -2, -1)
      d:copy_(wick.where(tau:eq(0), -d:sign(), d:sign()))
      return transposed and mT(a) or a
    end
    if n == k then
      Q = is_orthogonal(Q) and Q:clone() or make_orthogonal(Q)
    else -- completed to a square orthogonal matrix
      local extra = Q:size()
      extra[#extra] = n - k
      Q = make_orthogonal(wick.cat({ Q, wick._randn(extra, { dtype = Q.dtype, device = Q.device }) }, -1))
    end
    self:register_buffer("base", Q)
    -- -I: the Householder map gives the identity's first columns from it (and the others ignore it)
    local neg = wick.zeros_like(Q_init)
    neg:diagonal(0, -2, -1):fill_(-1)
    return neg
  end)
end

--- nn.utils.parametrizations.orthogonal(module[, name = "weight"[, orthogonal_map[, {use_trivialization = true}]]]):
--- module's weight made orthogonal (semi-orthogonal when not square) for all of training, as PyTorch's:
--- orthogonal_map "matrix_exp" (default for square weights), "cayley" or "householder" (default else)
function Pz.orthogonal(module, ...)
  local fn = "parametrizations.orthogonal"
  local o = check.positional(fn, { "name", "orthogonal_map" },
    { name = "string", orthogonal_map = "string", use_trivialization = "boolean" }, ...)
  local name = o.name or "weight"
  local w = weight_of(fn, module, name)
  if w:dim() < 2 then check.fail(fn, "Expected a matrix or batch of matrices. Got a tensor of %d dimensions.", w:dim()) end
  if w:is_complex() then check.fail(fn, "complex weights are not supported") end
  local map = o.orthogonal_map or (w:size(-2) == w:size(-1) and "matrix_exp" or "householder")
  if not MAPS[map] then
    check.fail(fn, 'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". Got: %s', map)
  end
  parametrize.register_parametrization(module, name, Orthogonal(w, map, o.use_trivialization ~= false),
    { unsafe = true })
  return module
end

U.parametrizations = check.strict(Pz, "wick.nn.utils.parametrizations")
return U
