-- wick.distributions: PyTorch's torch.distributions for the common cases
-- (Categorical, OneHotCategorical, Normal, MultivariateNormal, Bernoulli,
-- Uniform, Independent, and kl_divergence between two of a kind), as
-- compositions of wick's ops, so log_prob, entropy and rsample are
-- differentiable. Categorical's values are 1-based class indices, as wick's
-- class targets are. validate_args is on by default, as PyTorch's: the
-- parameters are checked against their constraints at construction and the
-- values of log_prob (and cdf, icdf) against the support.
local wick = require("wick")
local check = require("wick.argcheck")

local M = {}
local LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
local LOG_2PI = math.log(2 * math.pi)

local function is_tensor(v) return wick.is_tensor(v) end
local function Size(t) return setmetatable(t or {}, wick.Size) end
local function concat(a, b)
  local out = {}
  for _, n in ipairs(a) do out[#out + 1] = n end
  for _, n in ipairs(b) do out[#out + 1] = n end
  return Size(out)
end
local function mT(t) return t:transpose(-2, -1) end

-- a number or tensor parameter as a floating tensor (numbers in `like`'s dtype and device)
local function param(v, fn, name, like)
  if is_tensor(v) then return v:is_floating_point() and v or v:to(wick.get_default_dtype()) end
  check.number(v, fn, name)
  return wick.full({}, v, like and { dtype = like.dtype, device = like.device } or nil)
end
-- sample_shape ({} or nil, a number, or a size table) followed by a base shape
local function shape_of(sample_shape, base, fn)
  local out = {}
  if type(sample_shape) == "number" then out[1] = check.int(sample_shape, fn, "sample_shape", 0)
  elseif sample_shape ~= nil then
    check.table(sample_shape, fn, "sample_shape")
    for i, n in ipairs(sample_shape) do out[i] = check.int(n, fn, "sample_shape", 0) end
  end
  for _, n in ipairs(base) do out[#out + 1] = n end
  return out
end
-- the broadcast of two sizes (PyTorch's broadcast_shapes), or an error naming both
local function broadcast_shapes(fn, a, b, what)
  local n = math.max(#a, #b)
  local out = {}
  for i = 1, n do
    local ia, ib = i - (n - #a), i - (n - #b) -- (rawget: a Size reads a negative index from the end)
    local x, y = ia >= 1 and rawget(a, ia) or 1, ib >= 1 and rawget(b, ib) or 1
    if x ~= y and x ~= 1 and y ~= 1 then
      check.fail(fn, "%s: shapes %s and %s cannot be broadcast", what, tostring(Size(a)), tostring(Size(b)))
    end
    out[i] = x == 1 and y or x
  end
  return Size(out)
end
-- the sum of t's rightmost n dims
local function sum_rightmost(t, n)
  if n == 0 then return t end
  local dims = {}
  for i = 1, n do dims[i] = -i end
  return t:sum(dims)
end

-- ---- the base: validate_args, lazy properties, receivers ----

local Distribution = { __name = "Distribution" }
M.Distribution = Distribution
local default_validate = true
--- Distribution.set_default_validate_args(bool): validate_args when a constructor is not given it (true, as PyTorch's)
function Distribution.set_default_validate_args(value)
  check.boolean(value, "Distribution.set_default_validate_args", "value")
  default_validate = value
end

local function class(name)
  local C = { __name = name, _lazy = {} }
  C.__index = function(d, k)
    local v = C[k]
    if v ~= nil then return v end
    local f = C._lazy[k]
    if f then
      v = f(d)
      rawset(d, k, v)
      return v
    end
    return Distribution[k]
  end
  C.__tostring = function(d)
    local parts = {}
    for _, p in ipairs(C._params or {}) do
      local v = rawget(d, p)
      if v ~= nil then
        parts[#parts + 1] = p .. ": " .. (v:dim() == 0 and tostring(v:item()) or ("Size(" .. tostring(v:size()) .. ")"))
      end
    end
    return name .. "(" .. table.concat(parts, ", ") .. ")"
  end
  M[name] = setmetatable(C, { __call = function(cls, ...) return cls.new(...) end, __index = Distribution })
  return C
end
-- d:method() with '.' for ':' (or another receiver): an error at the caller's line
local function receivers(C)
  for k, f in pairs(C) do
    if type(f) == "function" and type(k) == "string" and k:sub(1, 1) ~= "_" and k ~= "new" then
      C[k] = function(self, ...)
        if type(self) ~= "table" or getmetatable(self) ~= C then
          check.fail(C.__name .. ":" .. k, "expected a %s as self, got %s (call it with ':', as d:%s(...))",
            C.__name, check.describe(self), k)
        end
        return f(self, ...)
      end
    end
  end
end

local function validating(d, opts)
  local v = opts and opts.validate_args
  if v == nil then v = default_validate end
  rawset(d, "_validate_args", v)
  return v
end
local function all_of(mask) return mask:all() == true end
-- PyTorch's ValueError for a parameter outside its constraint
local function check_param(d, name, ok, constraint)
  if not all_of(ok) then
    local v = rawget(d, name) or d[name]
    check.fail(getmetatable(d).__name, "expected parameter %s (Tensor of shape %s) to satisfy the constraint %s, "
      .. "but found invalid values", name, tostring(v:size()), constraint)
  end
end
-- the value of log_prob: its event dims and broadcasting (PyTorch's _validate_sample), then its support
local function check_sample(d, fn, value, support, ok)
  local n_event = #d.event_shape
  local vs = value:size()
  if #vs < n_event then
    check.fail(fn, "the value has %d dims, fewer than the event shape %s", #vs, tostring(d.event_shape))
  end
  for i = 1, n_event do
    if vs[#vs - n_event + i] ~= d.event_shape[i] then
      check.fail(fn, "The right-most size of value must match event_shape: %s vs %s.", tostring(vs),
        tostring(d.event_shape))
    end
  end
  broadcast_shapes(fn, vs, concat(d.batch_shape, d.event_shape), "Value is not broadcastable with batch_shape+event_shape")
  if ok and not all_of(ok(value)) then
    check.fail(fn, "expected value argument (Tensor of shape %s) to be within the support (%s) of the distribution "
      .. "%s, but found invalid values", tostring(vs), support, getmetatable(d).__name)
  end
end
local function not_nan(t) return t:eq(t) end

-- two parameters (numbers or tensors) as tensors of one shape
local function two_params(fn, a, b, na, nb, opts)
  check.options(opts, fn, { validate_args = "boolean" })
  local like = is_tensor(a) and a or is_tensor(b) and b or nil
  return wick.broadcast_tensors(param(a, fn, na, like), param(b, fn, nb, like))
end
-- sample() of a distribution with rsample(): the same without gradients
local function sample_of(d, sample_shape) return wick.no_grad(function() return d:rsample(sample_shape) end) end

-- (probs) or ({probs = p} or {logits = l}): exactly one of them, as PyTorch's
local function probs_or_logits(fn, probs, opts, kind)
  if type(probs) == "table" and not is_tensor(probs) then probs, opts = nil, probs end
  opts = check.options(opts, fn, { probs = kind, logits = kind, validate_args = "boolean" })
  probs = probs or opts.probs
  if (probs == nil) == (opts.logits == nil) then
    check.fail(fn, "Either `probs` or `logits` must be specified, but not both.")
  end
  return probs, opts.logits, opts
end
-- PyTorch's clamp_probs: into [eps, 1 - eps] of the dtype
local function clamp_probs(p)
  local eps = wick.finfo(p.dtype).eps
  return p:clamp(eps, 1 - eps)
end

-- ---- Categorical ----

--- Categorical(probs) or Categorical{probs = p} / {logits = l}: over the last
--- dim; sample() gives 1-based classes
local Categorical = class("Categorical")
Categorical._params = { "probs" }
function Categorical.new(probs, opts)
  local fn = "Categorical"
  local logits
  probs, logits, opts = probs_or_logits(fn, probs, opts, "tensor")
  local d = setmetatable({}, Categorical)
  local validate = validating(d, opts)
  if probs then
    check.tensor(probs, fn, "probs")
    if probs:dim() < 1 then check.fail(fn, "probs must be at least one-dimensional.") end
    if not probs:is_floating_point() then probs = probs:to(wick.get_default_dtype()) end
    d.probs = probs / probs:sum(-1, true)
    d.logits = clamp_probs(d.probs):log() -- PyTorch's probs_to_logits
    if validate then
      check_param(d, "probs", d.probs:ge(0):all(-1):logical_and((d.probs:sum(-1) - 1):abs():lt(1e-6)), "Simplex()")
    end
  else
    check.tensor(logits, fn, "logits")
    if logits:dim() < 1 then check.fail(fn, "logits must be at least one-dimensional.") end
    if not logits:is_floating_point() then logits = logits:to(wick.get_default_dtype()) end
    d.logits = logits - logits:logsumexp(-1, true)
    d.probs = d.logits:exp()
    if validate then check_param(d, "logits", not_nan(d.logits), "IndependentConstraint(Real(), 1)") end
  end
  d.batch_shape = d.probs:size()
  d._num_events = table.remove(d.batch_shape)
  d.event_shape = Size()
  d.has_rsample = false
  return d
end
function Categorical._lazy.param_shape(d) return d.probs:size() end
function Categorical._lazy.mode(d) return (select(2, d.probs:max(-1))) end
--- d:sample([sample_shape]): 1-based class indices (int64) of sample_shape .. batch_shape
function Categorical:sample(sample_shape)
  local shape = shape_of(sample_shape, self.batch_shape, "Categorical:sample")
  local n = 1
  for i = 1, #shape - #self.batch_shape do n = n * shape[i] end
  local flat = self.probs:detach():reshape(-1, self._num_events)
  local draws = wick.multinomial(flat, n, true) -- (rows, n)
  return draws:t():reshape(#shape > 0 and shape or {})
end
--- d:log_prob(value): the log probability of 1-based classes `value` (a tensor, or one class as a
--- number; broadcast against batch_shape)
function Categorical:log_prob(value)
  local fn = "Categorical:log_prob"
  if type(value) == "number" then
    value = wick.tensor(check.int(value, fn, "value"), { dtype = "int64", device = self.logits.device })
  end
  check.tensor(value, fn, "value")
  if self._validate_args then
    local n = self._num_events
    check_sample(self, fn, value, ("IntegerInterval(lower_bound=1, upper_bound=%d)"):format(n), function(v)
      local ok = v:ge(1):logical_and(v:le(n))
      if v:is_floating_point() then ok = ok:logical_and(v:eq(v:floor())) end
      return ok
    end)
  end
  local v, log_pmf = wick.broadcast_tensors(value:to("int64"):unsqueeze(-1), self.logits)
  return log_pmf:gather(-1, v:narrow(-1, 1, 1)):squeeze(-1)
end
--- d:entropy(): -sum p log p, with -inf logits (zero probabilities) clamped to the dtype's min, as PyTorch
function Categorical:entropy()
  local logits = self.logits:clamp(wick.finfo(self.logits.dtype).min, math.huge)
  return -(logits * self.probs):sum(-1)
end

-- ---- OneHotCategorical ----

--- OneHotCategorical(probs) or {probs = p} / {logits = l}: one-hot vectors over the last dim
local OneHotCategorical = class("OneHotCategorical")
OneHotCategorical._params = { "probs" }
function OneHotCategorical.new(probs, opts)
  local fn = "OneHotCategorical"
  local logits
  probs, logits, opts = probs_or_logits(fn, probs, opts, "tensor")
  local d = setmetatable({}, OneHotCategorical)
  local validate = validating(d, opts)
  local ok, c = pcall(Categorical.new, probs and { probs = probs, validate_args = validate }
    or { logits = logits, validate_args = validate })
  if not ok then -- the same check, named for this class at the caller's line
    local msg = tostring(c):gsub("^.-Categorical: ", "")
    check.fail(fn, "%s", msg)
  end
  d._categorical = c
  d.probs, d.logits = c.probs, c.logits
  d.batch_shape = concat(c.batch_shape, {})
  d.event_shape = Size({ c._num_events })
  d.has_rsample = false
  return d
end
function OneHotCategorical._lazy.mean(d) return d.probs end
function OneHotCategorical._lazy.variance(d) return d.probs * (1 - d.probs) end
function OneHotCategorical._lazy.mode(d)
  return wick.nn.functional.one_hot(d._categorical.mode, d.event_shape[1]):to(d.probs.dtype)
end
function OneHotCategorical._lazy.param_shape(d) return d.probs:size() end
--- d:sample([sample_shape]): one-hot float vectors of sample_shape .. batch_shape .. {n}
function OneHotCategorical:sample(sample_shape)
  shape_of(sample_shape, {}, "OneHotCategorical:sample")
  local idx = self._categorical:sample(sample_shape)
  return wick.nn.functional.one_hot(idx, self.event_shape[1]):to(self.probs.dtype)
end
--- d:log_prob(value): the log probability of one-hot vectors
function OneHotCategorical:log_prob(value)
  local fn = "OneHotCategorical:log_prob"
  check.tensor(value, fn, "value")
  if self._validate_args then
    check_sample(self, fn, value, "OneHot()", function(v)
      return v:eq(0):logical_or(v:eq(1)):all(-1):logical_and(v:sum(-1):eq(1))
    end)
  end
  local _, idx = value:max(-1)
  return self._categorical:log_prob(idx)
end
function OneHotCategorical:entropy() return self._categorical:entropy() end

-- ---- erfinv (for Normal:icdf) ----

-- erfinv(x) = ndtri((1 + x) / 2) / sqrt(2), ndtri by Wichura's AS241 (PPND16,
-- about 1e-16 relative, in float64); its derivative sqrt(pi)/2 exp(y^2), so
-- icdf is differentiable in its value
local Erfinv = wick.autograd.Function:extend("Erfinv")
local AS241 = {
  a = { 3.3871328727963666080e0, 1.3314166789178437745e+2, 1.9715909503065514427e+3, 1.3731693765509461125e+4,
    4.5921953931549871457e+4, 6.7265770927008700853e+4, 3.3430575583588128105e+4, 2.5090809287301226727e+3 },
  b = { 1.0, 4.2313330701600911252e+1, 6.8718700749205790830e+2, 5.3941960214247511077e+3,
    2.1213794301586595867e+4, 3.9307895800092710610e+4, 2.8729085735721942674e+4, 5.2264952788528545610e+3 },
  c = { 1.42343711074968357734e0, 4.63033784615654529590e0, 5.76949722146069140550e0, 3.64784832476320460504e0,
    1.27045825245236838258e0, 2.41780725177450611770e-1, 2.27238449892691845833e-2, 7.74545014278341407640e-4 },
  d = { 1.0, 2.05319162663775882187e0, 1.67638483018380384940e0, 6.89767334985100004550e-1,
    1.48103976427480074590e-1, 1.51986665636164571966e-2, 5.47593808499534494600e-4, 1.05075007164441684324e-9 },
  e = { 6.65790464350110377720e0, 5.46378491116411436990e0, 1.78482653991729133580e0, 2.96560571828504891230e-1,
    2.65321895265761230930e-2, 1.24266094738807843860e-3, 2.71155556874348757815e-5, 2.01033439929228813265e-7 },
  f = { 1.0, 5.99832206555887937690e-1, 1.36929880922735805310e-1, 1.48753612908506148525e-2,
    7.86869131145613259100e-4, 1.84631831751005468180e-5, 1.42151175831644588870e-7, 2.04426310338993978564e-15 },
}
local function poly(cs, r)
  local v = wick.full_like(r, cs[#cs])
  for i = #cs - 1, 1, -1 do v = v * r + cs[i] end
  return v
end
local function erfinv_values(x)
  local dtype = x.dtype
  x = x:double()
  local ax = x:abs()
  local q = ax * 0.5 -- ndtri of p = (1 + |x|) / 2: q = p - 1/2, min(p, 1 - p) = (1 - |x|) / 2 (exact)
  local r0 = 0.180625 - q * q
  local central = q * poly(AS241.a, r0) / poly(AS241.b, r0)
  local r = (-((1 - ax) * 0.5):clamp(1e-300, 1):log()):sqrt()
  local rm, rt = (r - 1.6):clamp(-math.huge, 3.4), (r - 5):clamp(0, math.huge)
  local tail = wick.where(r:le(5), poly(AS241.c, rm) / poly(AS241.d, rm), poly(AS241.e, rt) / poly(AS241.f, rt))
  local y = wick.where(q:le(0.425), central, tail) * (x:sign() / math.sqrt(2))
  y = wick.where(ax:eq(1), x * math.huge, y)
  y = wick.where(ax:gt(1), 0 / 0, y)
  return y:to(dtype)
end
function Erfinv.forward(ctx, x)
  local y = erfinv_values(x)
  ctx:save_for_backward(y)
  return y
end
function Erfinv.backward(ctx, g)
  local y = ctx.saved_tensors[1]
  return g * (y * y):exp() * (math.sqrt(math.pi) / 2)
end

-- ---- Normal ----

--- Normal(loc, scale) (numbers or tensors, broadcast): sample, rsample (with
--- gradients through loc and scale), log_prob, entropy, cdf, icdf, mean, stddev, variance
local Normal = class("Normal")
Normal._params = { "loc", "scale" }
function Normal.new(loc, scale, opts)
  local d = setmetatable({}, Normal)
  d.loc, d.scale = two_params("Normal", loc, scale, "loc", "scale", opts)
  if validating(d, opts) then
    check_param(d, "loc", not_nan(d.loc), "Real()")
    check_param(d, "scale", d.scale:gt(0), "GreaterThan(lower_bound=0.0)")
  end
  d.mean, d.stddev, d.mode = d.loc, d.scale, d.loc
  d.variance = d.scale * d.scale
  d.batch_shape, d.event_shape = d.loc:size(), Size()
  d.has_rsample = true
  return d
end
function Normal:rsample(sample_shape)
  local shape = shape_of(sample_shape, self.batch_shape, "Normal:rsample")
  local eps = wick.randn(shape, { dtype = self.loc.dtype, device = self.loc.device })
  return self.loc + eps * self.scale
end
Normal.sample = sample_of
local function real_value(d, fn, value)
  value = param(value, fn, "value", d.loc)
  if d._validate_args then check_sample(d, fn, value, "Real()", not_nan) end
  return value
end
function Normal:log_prob(value)
  value = real_value(self, "Normal:log_prob", value)
  return -((value - self.loc) ^ 2) / (2 * self.variance) - self.scale:log() - LOG_SQRT_2PI
end
function Normal:entropy() return self.scale:log() + (0.5 + LOG_SQRT_2PI) end
function Normal:cdf(value)
  value = real_value(self, "Normal:cdf", value)
  return ((value - self.loc) / (self.scale * math.sqrt(2))):erf():add(1):mul(0.5)
end
--- d:icdf(p): the quantile loc + scale sqrt(2) erfinv(2p - 1), differentiable in p, loc and scale
function Normal:icdf(value)
  local fn = "Normal:icdf"
  value = param(value, fn, "value", self.loc)
  if self._validate_args then
    check_sample(self, fn, value, "Interval(lower_bound=0.0, upper_bound=1.0)", function(v)
      return v:ge(0):logical_and(v:le(1))
    end)
  end
  return self.loc + self.scale * Erfinv.apply(value * 2 - 1) * math.sqrt(2)
end

-- ---- MultivariateNormal ----

local linalg_ -- wick.linalg, on first use
local function linalg() linalg_ = linalg_ or wick.linalg; return linalg_ end
-- |L^-1 x|^2 over the batch (PyTorch's _batch_mahalanobis), x [..., n], L [..., n, n] broadcast
local function mahalanobis(L, x)
  local y = linalg().solve_triangular(L, x:unsqueeze(-1), { upper = false }):squeeze(-1)
  return (y * y):sum(-1)
end
local function half_log_det(L) return L:diagonal(0, -2, -1):log():sum(-1) end

--- MultivariateNormal(loc, covariance_matrix) or (loc, {covariance_matrix = | precision_matrix = | scale_tril =})
local MultivariateNormal = class("MultivariateNormal")
MultivariateNormal._params = { "loc" }
function MultivariateNormal.new(loc, cov, opts)
  local fn = "MultivariateNormal"
  check.tensor(loc, fn, "loc")
  if type(cov) == "table" and not is_tensor(cov) then cov, opts = nil, cov end
  if cov ~= nil then check.tensor(cov, fn, "covariance_matrix") end
  opts = check.options(opts, fn, { covariance_matrix = "tensor", precision_matrix = "tensor", scale_tril = "tensor",
    validate_args = "boolean" })
  if cov ~= nil and opts.covariance_matrix ~= nil then
    check.fail(fn, "argument 'covariance_matrix' given both by position and as an option")
  end
  cov = cov or opts.covariance_matrix
  local given = (cov and 1 or 0) + (opts.precision_matrix and 1 or 0) + (opts.scale_tril and 1 or 0)
  if given ~= 1 then
    check.fail(fn, "Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
  end
  if loc:dim() < 1 then check.fail(fn, "loc must be at least one-dimensional.") end
  if not loc:is_floating_point() then loc = loc:to(wick.get_default_dtype()) end
  local name, m = "scale_tril", opts.scale_tril
  if cov then name, m = "covariance_matrix", cov elseif opts.precision_matrix then name, m = "precision_matrix",
    opts.precision_matrix end
  if m:dim() < 2 then
    check.fail(fn, "%s matrix must be at least two-dimensional, with optional leading batch dimensions", name)
  end
  local n = loc:size(-1)
  if m:size(-1) ~= n or m:size(-2) ~= n then
    check.fail(fn, "%s must be a batch of %d by %d matrices (loc's last size), got shape %s", name, n, n,
      tostring(m:size()))
  end
  if m.dtype ~= loc.dtype then m = m:to(loc.dtype) end
  local d = setmetatable({}, MultivariateNormal)
  local validate = validating(d, opts)
  local mb = m:size()
  mb[#mb], mb[#mb - 1] = nil, nil
  local lb = loc:size()
  lb[#lb] = nil
  d.batch_shape = broadcast_shapes(fn, mb, lb, "loc and " .. name)
  d.event_shape = Size({ n })
  d.loc = loc:expand(concat(d.batch_shape, { n }))
  local full = concat(d.batch_shape, { n, n })
  d._given = name
  rawset(d, name, m:expand(full))
  if validate then
    check_param(d, "loc", not_nan(d.loc), "IndependentConstraint(Real(), 1)")
    if name == "scale_tril" then
      check_param(d, name, m:tril():eq(m):all(-1):all(-1):logical_and(m:diagonal(0, -2, -1):gt(0):all(-1)),
        "LowerCholesky()")
    else
      check_param(d, name, (m - mT(m)):abs():le(1e-6):all(-1):all(-1), "PositiveDefinite()")
    end
  end
  local ok, L = true, m
  if name == "covariance_matrix" then
    ok, L = pcall(linalg().cholesky, m)
  elseif name == "precision_matrix" then -- PyTorch's _precision_to_scale_tril
    ok, L = pcall(linalg().cholesky, m:flip({ -2, -1 }))
    if ok then
      local Linv = mT(L:flip({ -2, -1 }))
      L = linalg().solve_triangular(Linv, wick.eye(n, { dtype = m.dtype, device = m.device }), { upper = false })
    end
  end
  if not ok then
    check.fail(fn, "expected parameter %s (Tensor of shape %s) to satisfy the constraint PositiveDefinite(), "
      .. "but found invalid values", name, tostring(m:size()))
  end
  d._unbroadcasted_scale_tril = L
  d.has_rsample = true
  return d
end
function MultivariateNormal._lazy.scale_tril(d) return d._unbroadcasted_scale_tril:expand(concat(d.batch_shape,
  { d.event_shape[1], d.event_shape[1] })) end
function MultivariateNormal._lazy.covariance_matrix(d)
  local L = d._unbroadcasted_scale_tril
  return L:matmul(mT(L)):expand(concat(d.batch_shape, { d.event_shape[1], d.event_shape[1] }))
end
function MultivariateNormal._lazy.precision_matrix(d)
  return wick.cholesky_inverse(d._unbroadcasted_scale_tril):expand(concat(d.batch_shape,
    { d.event_shape[1], d.event_shape[1] }))
end
function MultivariateNormal._lazy.mean(d) return d.loc end
function MultivariateNormal._lazy.mode(d) return d.loc end
function MultivariateNormal._lazy.variance(d)
  local L = d._unbroadcasted_scale_tril
  return (L * L):sum(-1):expand(concat(d.batch_shape, d.event_shape))
end
function MultivariateNormal._lazy.stddev(d) return d.variance:sqrt() end
--- d:rsample([sample_shape]): loc + L eps, eps standard normal from wick's generator
function MultivariateNormal:rsample(sample_shape)
  local shape = shape_of(sample_shape, concat(self.batch_shape, self.event_shape), "MultivariateNormal:rsample")
  local eps = wick.randn(shape, { dtype = self.loc.dtype, device = self.loc.device })
  return self.loc + self._unbroadcasted_scale_tril:matmul(eps:unsqueeze(-1)):squeeze(-1)
end
MultivariateNormal.sample = sample_of
function MultivariateNormal:log_prob(value)
  local fn = "MultivariateNormal:log_prob"
  value = param(value, fn, "value", self.loc)
  if self._validate_args then check_sample(self, fn, value, "IndependentConstraint(Real(), 1)", function(v)
    return not_nan(v):all(-1) end)
  end
  local L = self._unbroadcasted_scale_tril
  local m = mahalanobis(L, value - self.loc)
  return -0.5 * (m + self.event_shape[1] * LOG_2PI) - half_log_det(L)
end
function MultivariateNormal:entropy()
  local H = half_log_det(self._unbroadcasted_scale_tril) + 0.5 * self.event_shape[1] * (1 + LOG_2PI)
  if #self.batch_shape == 0 then return H end
  return H:expand(self.batch_shape)
end

-- ---- Independent ----

--- Independent(base, reinterpreted_batch_ndims): the base's rightmost batch dims as event dims
local Independent = class("Independent")
function Independent.new(base, ndims, opts)
  local fn = "Independent"
  local kind = type(base) == "table" and getmetatable(base)
  if not (kind and type(rawget(kind, "__name")) == "string" and M[kind.__name] == kind) then
    check.expected(fn, "base_distribution", "a distribution", base)
  end
  check.int(ndims, fn, "reinterpreted_batch_ndims", 0)
  opts = check.options(opts, fn, { validate_args = "boolean" })
  local nb = #base.batch_shape
  if ndims > nb then
    check.fail(fn, "Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), actual %d vs %d",
      ndims, nb)
  end
  local d = setmetatable({}, Independent)
  d.base_dist, d.reinterpreted_batch_ndims = base, ndims
  local batch, moved = {}, {}
  for i = 1, nb - ndims do batch[i] = base.batch_shape[i] end
  for i = nb - ndims + 1, nb do moved[#moved + 1] = base.batch_shape[i] end
  d.batch_shape, d.event_shape = Size(batch), concat(moved, base.event_shape)
  d.has_rsample = base.has_rsample
  validating(d, opts)
  return d
end
for _, k in ipairs({ "mean", "mode", "variance", "stddev" }) do
  Independent._lazy[k] = function(d) return d.base_dist[k] end
end
function Independent:sample(sample_shape) return self.base_dist:sample(sample_shape) end
function Independent:rsample(sample_shape)
  if not self.base_dist.rsample then
    check.fail("Independent:rsample", "the base distribution %s has no rsample", getmetatable(self.base_dist).__name)
  end
  return self.base_dist:rsample(sample_shape)
end
function Independent:log_prob(value)
  return sum_rightmost(self.base_dist:log_prob(value), self.reinterpreted_batch_ndims)
end
function Independent:entropy() return sum_rightmost(self.base_dist:entropy(), self.reinterpreted_batch_ndims) end

-- ---- Bernoulli ----

--- Bernoulli(probs) or Bernoulli{probs = p} / {logits = l}
local Bernoulli = class("Bernoulli")
Bernoulli._params = { "probs" }
function Bernoulli.new(probs, opts)
  local fn = "Bernoulli"
  local logits
  probs, logits, opts = probs_or_logits(fn, probs, opts, "tensor|number")
  local d = setmetatable({}, Bernoulli)
  local validate = validating(d, opts)
  if probs ~= nil then
    d.probs = param(probs, fn, "probs")
    local p = clamp_probs(d.probs)
    d.logits = p:log() - (-p):log1p() -- PyTorch's probs_to_logits(is_binary = true)
    if validate then check_param(d, "probs", d.probs:ge(0):logical_and(d.probs:le(1)),
      "Interval(lower_bound=0.0, upper_bound=1.0)") end
  else
    d.logits = param(logits, fn, "logits")
    d.probs = d.logits:sigmoid()
    if validate then check_param(d, "logits", not_nan(d.logits), "Real()") end
  end
  d.mean, d.variance = d.probs, d.probs * (1 - d.probs)
  d.batch_shape, d.event_shape = d.probs:size(), Size()
  d.has_rsample = false
  return d
end
function Bernoulli:sample(sample_shape)
  local shape = shape_of(sample_shape, self.batch_shape, "Bernoulli:sample")
  return wick.no_grad(function() return wick.bernoulli(self.probs:expand(shape):contiguous()) end)
end
function Bernoulli:log_prob(value)
  local fn = "Bernoulli:log_prob"
  value = param(value, fn, "value", self.logits)
  if self._validate_args then
    check_sample(self, fn, value, "Boolean()", function(v) return v:eq(0):logical_or(v:eq(1)) end)
  end
  local logits, v = wick.broadcast_tensors(self.logits, value)
  return -wick.nn.functional.binary_cross_entropy_with_logits(logits, v, { reduction = "none" })
end
function Bernoulli:entropy()
  return wick.nn.functional.binary_cross_entropy_with_logits(self.logits, self.probs, { reduction = "none" })
end

-- ---- Uniform ----

--- Uniform(low, high): values in [low, high)
local Uniform = class("Uniform")
Uniform._params = { "low", "high" }
function Uniform.new(low, high, opts)
  local d = setmetatable({}, Uniform)
  d.low, d.high = two_params("Uniform", low, high, "low", "high", opts)
  if validating(d, opts) then
    check_param(d, "low", d.low:lt(d.high), "LessThan(upper_bound=high)")
  end
  d.mean = (d.low + d.high) / 2
  d.variance = (d.high - d.low) ^ 2 / 12
  d.stddev = d.variance:sqrt()
  d.batch_shape, d.event_shape = d.low:size(), Size()
  d.has_rsample = true
  return d
end
function Uniform:rsample(sample_shape)
  local shape = shape_of(sample_shape, self.batch_shape, "Uniform:rsample")
  local u = wick.rand(shape, { dtype = self.low.dtype, device = self.low.device })
  return self.low + u * (self.high - self.low)
end
Uniform.sample = sample_of
function Uniform:log_prob(value)
  local fn = "Uniform:log_prob"
  value = param(value, fn, "value", self.low)
  if self._validate_args then
    check_sample(self, fn, value, "Interval(lower_bound=low, upper_bound=high)", function(v)
      return v:ge(self.low):logical_and(v:le(self.high))
    end)
  end
  local inside = value:ge(self.low):logical_and(value:lt(self.high))
  return wick.where(inside, -(self.high - self.low):log(), -math.huge)
end
function Uniform:entropy() return (self.high - self.low):log() end

for _, C in ipairs({ Categorical, OneHotCategorical, Normal, MultivariateNormal, Independent, Bernoulli, Uniform }) do
  receivers(C)
end

-- ---- KL divergence ----

local function kl_categorical(p, q)
  local t = p.probs * (p.logits - q.logits)
  t = wick.where(q.probs:eq(0):expand_as(t), math.huge, t)
  t = wick.where(p.probs:eq(0):expand_as(t), 0, t)
  return t:sum(-1)
end

--- kl_divergence(p, q) for two distributions of one kind (Normal, MultivariateNormal, Categorical,
--- OneHotCategorical, Bernoulli, Uniform, Independent)
function M.kl_divergence(p, q)
  local fn = "kl_divergence"
  local kind = type(p) == "table" and getmetatable(p) or nil
  local qkind = type(q) == "table" and getmetatable(q) or nil
  if kind == nil or qkind ~= kind or M[rawget(kind, "__name") or ""] ~= kind then
    check.fail(fn, "no KL divergence between %s and %s (two distributions of one kind are needed)",
      kind and kind.__name or type(p), qkind and qkind.__name or type(q))
  end
  if kind == Normal then
    local ratio = (p.scale / q.scale) ^ 2
    local t1 = ((p.loc - q.loc) / q.scale) ^ 2
    return (ratio + t1 - 1 - ratio:log()) * 0.5
  elseif kind == Categorical then
    return kl_categorical(p, q)
  elseif kind == OneHotCategorical then
    return kl_categorical(p._categorical, q._categorical)
  elseif kind == Bernoulli then
    local sp = p.probs
    return sp * (wick.nn.functional.softplus(-q.logits) - wick.nn.functional.softplus(-p.logits))
      + (1 - sp) * (wick.nn.functional.softplus(q.logits) - wick.nn.functional.softplus(p.logits))
  elseif kind == Uniform then
    local inside = q.low:le(p.low):logical_and(q.high:ge(p.high))
    return wick.where(inside, ((q.high - q.low) / (p.high - p.low)):log(), math.huge)
  elseif kind == MultivariateNormal then
    if p.event_shape[1] ~= q.event_shape[1] then
      check.fail(fn, "KL-divergence between two Multivariate Normals with different event shapes cannot be computed")
    end
    local n = p.event_shape[1]
    local pL, qL = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    local pb, qb = pL:size(), qL:size()
    pb[#pb], pb[#pb - 1], qb[#qb], qb[#qb - 1] = nil, nil, nil, nil
    local full = concat(broadcast_shapes(fn, qb, pb, "the scale_tril of p and q"), { n, n })
    local X = linalg().solve_triangular(qL:expand(full), pL:expand(full), { upper = false })
    local term2 = (X * X):sum({ -2, -1 })
    local term3 = mahalanobis(qL, q.loc - p.loc)
    return half_log_det(qL) - half_log_det(pL) + 0.5 * (term2 + term3 - n)
  elseif kind == Independent then
    if p.reinterpreted_batch_ndims ~= q.reinterpreted_batch_ndims then
      check.fail(fn, "no KL divergence between Independent distributions of different reinterpreted_batch_ndims "
        .. "(%d and %d)", p.reinterpreted_batch_ndims, q.reinterpreted_batch_ndims)
    end
    return sum_rightmost(M.kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)
  end
  check.fail(fn, "no KL divergence for %s", kind.__name)
end
M.kl = { kl_divergence = M.kl_divergence }

-- a name wick.distributions does not have is an error at the caller's line
check.strict(M, "wick.distributions")

return M
