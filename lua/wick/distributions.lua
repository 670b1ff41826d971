-- wick.distributions: PyTorch's torch.distributions for the common cases
-- (Categorical, OneHotCategorical, Normal, MultivariateNormal, Bernoulli,
-- Uniform, Independent, Gamma, Beta, Dirichlet, Exponential, Laplace,
-- StudentT, LogNormal, the counts, Cauchy, HalfNormal, Gumbel, Weibull,
-- Chi2, Geometric, TransformedDistribution, MixtureSameFamily, the relaxed
-- ones, Multinomial, OneHotCategoricalStraightThrough, HalfCauchy, InverseGamma,
-- Pareto, Kumaraswamy, FisherSnedecor, LogisticNormal, and kl_divergence by
-- register_kl's pairs: two of a kind and PyTorch's closed forms across families), as
-- compositions of wick's ops, so log_prob, entropy and rsample are
-- differentiable. Gamma draws are Marsaglia and Tsang's (PyTorch's
-- sample_gamma) from wick's uniform and normal draws, Beta and Dirichlet
-- draws normalised Gammas; their rsample has no gradient to the concentration
-- yet (an error in backward, never a wrong gradient: PyTorch's implicit
-- reparameterisation needs the incomplete gamma's derivative), so StudentT's
-- rsample has none to df. Categorical's values are
-- 1-based class indices, as wick's class targets are. validate_args is on by default, as PyTorch's: the
-- parameters are checked against their constraints at construction and the
-- values of log_prob (and cdf, icdf) against the support.
local wick = require("wick")
local check = require("wick.argcheck")

local M = {}
local unpack = table.unpack or unpack -- luacheck: ignore
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
  local shape = wick.ops._broadcast_sizes({ a, b })
  if not shape then
    check.fail(fn, "%s: shapes %s and %s cannot be broadcast", what, tostring(Size(a)), tostring(Size(b)))
  end
  return shape
end
local T = require("wick.distributions.transforms")
M.transforms = T
local Cn = require("wick.distributions.constraints")
M.constraints = Cn
-- each class's support and arg_constraints (PyTorch's d.support, d.arg_constraints), from {support, constraints}
local function constrain(specs)
  for C, spec in pairs(specs) do
    rawset(C, "support", spec[1])
    rawset(C, "arg_constraints", spec[2])
  end
end
local sum_rightmost = T._sum_rightmost

-- ---- the base: validate_args, lazy properties, receivers ----

local Distribution = { __name = "Distribution" }
M.Distribution = Distribution
local default_validate = true
--- Distribution.set_default_validate_args(bool): validate_args when a constructor is not given it (true, as PyTorch's)
function Distribution.set_default_validate_args(value)
  check.boolean(value, "Distribution.set_default_validate_args", "value")
  default_validate = value
end

-- What PyTorch's Distribution base gives every distribution: rsample raises
-- NotImplementedError where there are no reparameterised draws, sample_n(n)
-- is sample({n}) with its deprecation warning, enumerate_support raises
-- where the support is not discrete and finite
local function name_of(d) return type(d) == "table" and getmetatable(d) and getmetatable(d).__name or "Distribution" end
function Distribution.rsample(d)
  check.fail(name_of(d) .. ":rsample", "has no reparameterised draws (PyTorch's NotImplementedError): sample() draws "
    .. "without gradients")
end
function Distribution.sample_n(d, n)
  require("wick.nn.common").warn("sample_n will be deprecated. Use .sample((n,)) instead")
  check.int(n, name_of(d) .. ":sample_n", "n", 0)
  return d:sample({ n })
end
-- entropy, cdf and icdf where a distribution has none: PyTorch's NotImplementedError
for _, k in ipairs({ "entropy", "cdf", "icdf" }) do
  Distribution[k] = function(d)
    check.fail(name_of(d) .. ":" .. k, "not implemented for this distribution (PyTorch's NotImplementedError)")
  end
end
function Distribution.enumerate_support(d)
  check.fail(name_of(d) .. ":enumerate_support", "not implemented for this distribution in this version of wick")
end
Distribution.has_enumerate_support = false

-- what enumerate_support gives: `values` (n values along the first dim, each of
-- the event shape) viewed with a 1 per batch dim, expanded to the batch unless
-- expand is false (PyTorch's enumerate_support(expand=True))
local function support_of(d, values, expand)
  local n, view, full = values:size(1), { values:size(1) }, { values:size(1) }
  for i = 1, #d.batch_shape do view[#view + 1], full[#full + 1] = 1, d.batch_shape[i] end
  for i = 2, values:dim() do view[#view + 1], full[#full + 1] = values:size(i), values:size(i) end
  values = values:view(view)
  if expand == false then return values end
  return values:expand(full)
end

-- a class's instances copied into self: a registered class's init, what a subclass's
-- init reaches through super (PyTorch's super().__init__(logits=logits))
local function init_from(C)
  return function(self, ...)
    for k, v in next, C(...) do rawset(self, k, v) end
  end
end

-- an instance of a distribution class: a built-in one or one of one's own (Distribution:extend)
local function is_distribution(v)
  local kind = type(v) == "table" and getmetatable(v) or nil
  return type(kind) == "table" and rawget(kind, "_distribution_class") == true
end

--- d:expand(batch_shape): the same distribution over a larger batch (PyTorch's Distribution.expand):
--- every parameter, cached value and inner distribution broadcast to batch_shape followed by what it
--- holds beyond the old batch dims; views, no copies
local function expanded(d, old, new, fn)
  local out = setmetatable({}, getmetatable(d))
  local batch = d.batch_shape
  -- (a tensor whose leading dims are not the batch's, as MultivariateNormal's _unbroadcasted_scale_tril
  -- beside a batched loc, broadcasts where it is used: kept as it is)
  local function aligned(k, v)
    if type(k) == "string" and k:find("^_unbroadcasted") then return false end
    if v:dim() < old then return false end
    for i = 1, old do
      if v:size(i) ~= batch[i] and v:size(i) ~= 1 then return false end
    end
    return true
  end
  for k, v in next, d do
    if is_tensor(v) and aligned(k, v) then
      local shape = { unpack(new) }
      for i = old + 1, v:dim() do shape[#shape + 1] = v:size(i) end
      local ok, e = pcall(v.expand, v, shape)
      if not ok then check.fail(fn, "the new batch shape %s does not broadcast with %s", tostring(Size(new)), tostring(v.shape)) end
      v = e
    elseif is_distribution(v) and #v.batch_shape >= old then
      local inner = { unpack(new) }
      for i = old + 1, #v.batch_shape do inner[#inner + 1] = v.batch_shape[i] end
      v = expanded(v, #v.batch_shape, inner, fn)
    end
    out[k] = v
  end
  out.batch_shape = Size({ unpack(new) })
  return out
end
function Distribution.expand(d, batch_shape, _instance)
  local fn = name_of(d) .. ":expand"
  local new = shape_of(batch_shape, {}, fn)
  if #new < #d.batch_shape then
    check.fail(fn, "the new batch shape %s has fewer dims than the batch shape %s", tostring(Size(new)), tostring(d.batch_shape))
  end
  return expanded(d, #d.batch_shape, new, fn)
end

local function class(name)
  local C = { __name = name, _lazy = {}, _distribution_class = true }
  C.init = init_from(C)
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
    return (getmetatable(d).__name or name) .. "(" .. table.concat(parts, ", ") .. ")"
  end
  -- PyTorch's positional validate_args (D.Normal(loc, scale, False)): a trailing
  -- boolean is that option
  local function call(cls, ...)
    local n = select("#", ...)
    -- every argument by name, Normal{loc = m, scale = s} (PyTorch's Normal(loc=m, scale=s))
    -- (an OrderedDict of them too: Python's Normal(**params) of uni2ts' tree_map'ed parameters)
    local kw, t = rawget(cls, "_keywords"), (...)
    if kw and n == 1 and type(t) == "table" and (getmetatable(t) == nil or require("wick.ordered").is(t))
      and rawget(t, 1) == nil and t[kw[1]] ~= nil then
      local args, rest, named = {}, nil, {}
      for i, k in ipairs(kw) do args[i], named[k] = t[k], true end
      for k, v in pairs(t) do
        if not named[k] then rest = rest or {}; rest[k] = v end
      end
      args[#kw + 1] = rest
      return cls.new(unpack(args, 1, #kw + 1))
    end
    if n > 0 and type(select(n, ...)) == "boolean" then
      local args = { ... }
      args[n] = { validate_args = args[n] }
      return cls.new(unpack(args, 1, n))
    end
    return cls.new(...)
  end
  M[name] = setmetatable(C, { __call = call, __index = Distribution })
  return C
end
-- whether class S is C or extends it
local function extends(S, C)
  while type(S) == "table" do
    if S == C then return true end
    S = rawget(S, "super")
  end
  return false
end
--- Distribution:extend(name) (and any class's, OneHotCategorical:extend("OneHotDist")): a subclass,
--- PyTorch's class OneHotDist(OneHotCategorical): its methods override the base's (a method may
--- stand for a property, dreamer's mode(); a function in Sub._lazy is one: HF's AffineTransformed
--- @property mean is Sub._lazy.mean(d), read as d.mean), Sub.super is the base; Sub(...) calls Sub:init(...),
--- which calls Sub.super.init(self, ...) for the base's constructor (Distribution.init(self,
--- batch_shape, event_shape[, validate_args]) for a distribution of one's own)
function Distribution.extend(parent, name)
  check.string(name, "Distribution.extend", "name")
  local S = { __name = name, _distribution_class = true, super = parent, _lazy = {} }
  local parent_index = rawget(parent, "__index")
  S.__index = function(d, k)
    local v = rawget(S, k)
    if v ~= nil then return v end
    local f = S._lazy[k] -- (a property: computed at the first read, as the base classes' are)
    if f then
      v = f(d)
      rawset(d, k, v)
      return v
    end
    if type(parent_index) == "function" then return parent_index(d, k) end
    return parent[k]
  end
  S.__tostring = rawget(parent, "__tostring")
  return setmetatable(S, { __index = parent, __call = function(cls, ...)
    local self = setmetatable({}, cls)
    cls.init(self, ...)
    return self
  end, __newindex = function(cls, k, f) -- (its methods check their receiver, as the base's)
    if type(f) == "function" and type(k) == "string" and k:sub(1, 2) ~= "__" then
      local method = f
      f = function(self, ...)
        if type(self) ~= "table" or not extends(getmetatable(self), cls) then
          check.fail(name .. ":" .. k, "expected a %s as self, got %s (call it with ':', as d:%s(...))",
            name, check.describe(self), k)
        end
        return method(self, ...)
      end
    end
    rawset(cls, k, f)
  end })
end
--- Distribution.init(self, batch_shape, event_shape[, validate_args]): PyTorch's Distribution.__init__
function Distribution.init(self, batch_shape, event_shape, validate_args)
  rawset(self, "batch_shape", Size(batch_shape and { unpack(batch_shape) } or {}))
  rawset(self, "event_shape", Size(event_shape and { unpack(event_shape) } or {}))
  if validate_args == nil then validate_args = default_validate end
  rawset(self, "_validate_args", validate_args)
end

-- d:method() with '.' for ':' (or another receiver): an error at the caller's line
local function receivers(C)
  for k, f in pairs(C) do
    if type(f) == "function" and type(k) == "string" and k:sub(1, 1) ~= "_" and k ~= "new" then
      C[k] = function(self, ...)
        if type(self) ~= "table" or not extends(getmetatable(self), C) then
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
local function in_unit_interval(p) return p:ge(0):logical_and(p:le(1)) end

-- tensors broadcast to one shape, an error named for fn where they do not
local function broadcast_params(fn, ...)
  local out = { pcall(wick.broadcast_tensors, ...) }
  if not out[1] then check.fail(fn, "%s", (tostring(out[2]):gsub("^.-:%d+: ", ""))) end
  return unpack(out, 2, select("#", ...) + 1)
end
-- two parameters (numbers or tensors) as tensors of one shape
local function two_params(fn, a, b, na, nb, opts)
  check.options(opts, fn, { validate_args = "boolean" })
  local like = is_tensor(a) and a or is_tensor(b) and b or nil
  return broadcast_params(fn, param(a, fn, na, like), param(b, fn, nb, like))
end
-- a distribution of class C with a real loc and a positive scale (Laplace, Cauchy, Gumbel)
local function located(C, loc, scale, opts)
  local d = setmetatable({}, C)
  d.loc, d.scale = two_params(C.__name, loc, scale, "loc", "scale", opts)
  if validating(d, opts) then
    check_param(d, "loc", d.loc:eq(d.loc), "Real()")
    check_param(d, "scale", d.scale:gt(0), "GreaterThan(lower_bound=0.0)")
  end
  d.batch_shape, d.event_shape = d.loc:size(), Size()
  d.has_rsample = true
  return d
end
-- one of class C with two positive parameters a and b (Gamma, Weibull)
local function positive_pair(C, a, b, na, nb, opts)
  local d = setmetatable({}, C)
  d[na], d[nb] = two_params(C.__name, a, b, na, nb, opts)
  if validating(d, opts) then
    check_param(d, na, d[na]:gt(0), "GreaterThan(lower_bound=0.0)")
    check_param(d, nb, d[nb]:gt(0), "GreaterThan(lower_bound=0.0)")
  end
  d.batch_shape, d.event_shape = d[na]:size(), Size()
  d.has_rsample = true
  return d
end
-- sample() of a distribution with rsample(): the same without gradients
local function sample_of(d, sample_shape) return wick.no_grad(function() return d:rsample(sample_shape) end) end

-- (probs) or ({probs = p} or {logits = l}): exactly one of them, as PyTorch's
local function probs_or_logits(fn, probs, opts, kind)
  if type(probs) == "table" and not is_tensor(probs) then probs, opts = nil, probs end
  if is_tensor(opts) or type(opts) == "number" then opts = { logits = opts } end -- PyTorch's (probs, logits) by position
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
-- d.probs and d.logits of a binary outcome from whichever was given (PyTorch's probs_to_logits and
-- sigmoid), checked when validating: probs by in_range (named range), logits not NaN. With
-- count_name, the count parameter `count` broadcast with them is returned.
local function binary_params(d, fn, probs, logits, validate, in_range, range, count, count_name)
  local like = is_tensor(probs) and probs or is_tensor(logits) and logits or nil
  local name, value = probs ~= nil and "probs" or "logits", probs ~= nil and probs or logits
  local t = param(value, fn, name, like)
  if count_name then count, t = wick.broadcast_tensors(param(count, fn, count_name, like), t) end
  if probs ~= nil then
    d.probs = t
    local p = clamp_probs(t)
    d.logits = p:log() - (-p):log1p()
    if validate then check_param(d, "probs", in_range(t), range) end
  else
    d.logits = t
    d.probs = t:sigmoid()
    if validate then check_param(d, "logits", not_nan(t), "Real()") end
  end
  return count
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
-- no mean or variance over classes: NaN of the batch shape, as PyTorch's
function Categorical._lazy.mean(d) return wick.full(d.batch_shape, 0 / 0, { dtype = d.probs.dtype, device = d.probs.device }) end
function Categorical._lazy.variance(d) return d.mean:clone() end
function Categorical._lazy.stddev(d) return d.mean:clone() end
Categorical.has_enumerate_support = true
--- d:enumerate_support([expand = true]): the classes 1 .. n (int64) along a new first dim
function Categorical:enumerate_support(expand)
  return support_of(self, wick.arange(1, self._num_events + 1, { dtype = "int64", device = self.probs.device }), expand)
end
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

-- the Categorical a one-hot or relaxed distribution is built on, its errors named for fn
local function categorical_of(fn, probs, logits, validate)
  local ok, c = pcall(Categorical.new, probs and { probs = probs, validate_args = validate }
    or { logits = logits, validate_args = validate })
  if not ok then check.fail(fn, "%s", (tostring(c):gsub("^.-Categorical: ", ""))) end
  return c
end

-- ---- OneHotCategorical ----

--- OneHotCategorical(probs) or {probs = p} / {logits = l}: one-hot vectors over the last dim
local OneHotCategorical = class("OneHotCategorical")
OneHotCategorical._params = { "probs" }
-- one of class C (OneHotCategorical or its straight-through subclass), its errors named for C
local function one_hot_categorical(C, probs, opts)
  local fn = C.__name
  local logits
  probs, logits, opts = probs_or_logits(fn, probs, opts, "tensor")
  local d = setmetatable({}, C)
  local c = categorical_of(fn, probs, logits, validating(d, opts))
  d._categorical = c
  d.probs, d.logits = c.probs, c.logits
  d.batch_shape = concat(c.batch_shape, {})
  d.event_shape = Size({ c._num_events })
  d.has_rsample = false
  return d
end
function OneHotCategorical.new(probs, opts) return one_hot_categorical(OneHotCategorical, probs, opts) end
function OneHotCategorical._lazy.mean(d) return d.probs end
function OneHotCategorical._lazy.variance(d) return d.probs * (1 - d.probs) end
function OneHotCategorical._lazy.stddev(d) return d.variance:sqrt() end
function OneHotCategorical._lazy.mode(d)
  return wick.nn.functional.one_hot(d._categorical.mode, d.event_shape[1]):to(d.probs.dtype)
end
function OneHotCategorical._lazy.param_shape(d) return d.probs:size() end
OneHotCategorical.has_enumerate_support = true
--- d:enumerate_support([expand = true]): the n one-hot vectors along a new first dim
function OneHotCategorical:enumerate_support(expand)
  local n = self.event_shape[1]
  return support_of(self, wick.eye(n, { dtype = self.probs.dtype, device = self.probs.device }), expand)
end
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

-- ---- Normal ----

--- Normal(loc, scale) (numbers or tensors, broadcast): sample, rsample (with
--- gradients through loc and scale), log_prob, entropy, cdf, icdf, mean, stddev, variance
local Normal = class("Normal")
Normal._keywords = { "loc", "scale" }
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
  value = param(value, fn, "value", self.loc) -- (not checked, as PyTorch's: outside [0, 1] is NaN)
  return self.loc + self.scale * (value * 2 - 1):erfinv() * math.sqrt(2) -- (the core's erfinv kernel)
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

-- the one matrix of MultivariateNormal and Wishart: covariance_matrix by position or option, or precision_matrix,
-- or scale_tril (exactly one, PyTorch's checks); its name, the matrix, and the options
local function one_matrix(fn, cov, opts)
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
  if cov then return "covariance_matrix", cov, opts end
  if opts.precision_matrix then return "precision_matrix", opts.precision_matrix, opts end
  return "scale_tril", opts.scale_tril, opts
end
-- validate_args' check of that matrix: lower-triangular with a positive diagonal, or symmetric
local function check_matrix(d, name, m)
  if name == "scale_tril" then
    check_param(d, name, m:tril():eq(m):all(-1):all(-1):logical_and(m:diagonal(0, -2, -1):gt(0):all(-1)),
      "LowerCholesky()")
  else
    check_param(d, name, (m - mT(m)):abs():le(1e-6):all(-1):all(-1), "PositiveDefinite()")
  end
end
-- the lower Cholesky factor of the inverse of a precision matrix P (PyTorch's _precision_to_scale_tril),
-- or nil where P is not positive-definite
local function precision_to_scale_tril(P)
  local ok, L = pcall(linalg().cholesky, P:flip({ -2, -1 }))
  if not ok then return nil end
  local Linv = mT(L:flip({ -2, -1 }))
  return linalg().solve_triangular(Linv, wick.eye(P:size(-1), { dtype = P.dtype, device = P.device }), { upper = false })
end
-- the scale_tril of that matrix, or PyTorch's constraint error where it is not positive-definite
local function scale_tril_of(fn, name, m)
  local L = m
  if name == "covariance_matrix" then
    local ok, f = pcall(linalg().cholesky, m)
    L = ok and f or nil
  elseif name == "precision_matrix" then
    L = precision_to_scale_tril(m)
  end
  if not L then
    check.fail(fn, "expected parameter %s (Tensor of shape %s) to satisfy the constraint PositiveDefinite(), "
      .. "but found invalid values", name, tostring(m:size()))
  end
  return L
end

--- MultivariateNormal(loc, covariance_matrix) or (loc, {covariance_matrix = | precision_matrix = | scale_tril =})
local MultivariateNormal = class("MultivariateNormal")
MultivariateNormal._keywords = { "loc", "covariance_matrix" }
MultivariateNormal._params = { "loc" }
function MultivariateNormal.new(loc, cov, opts)
  local fn = "MultivariateNormal"
  check.tensor(loc, fn, "loc")
  local name, m
  name, m, opts = one_matrix(fn, cov, opts)
  if loc:dim() < 1 then check.fail(fn, "loc must be at least one-dimensional.") end
  if not loc:is_floating_point() then loc = loc:to(wick.get_default_dtype()) end
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
    check_matrix(d, name, m)
  end
  d._unbroadcasted_scale_tril = scale_tril_of(fn, name, m)
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

-- ---- LowRankMultivariateNormal, Wishart, LKJCholesky ----

local LOG_2 = math.log(2)
-- a tensor's sizes without its last k
local function leading(t, k)
  local s = t:size()
  for _ = 1, k do s[#s] = nil end
  return s
end
-- the low-rank helpers (PyTorch's _batch_capacitance_tril, _batch_lowrank_logdet, _batch_lowrank_mahalanobis):
-- W [..., n, m] the cov_factor, D [..., n] the cov_diag, C the lower Cholesky factor of I + W^T D^-1 W
local lowrank = {}
function lowrank.capacitance_tril(W, D)
  local K = (mT(W) / D:unsqueeze(-2)):matmul(W) + wick.eye(W:size(-1), { dtype = W.dtype, device = W.device })
  return linalg().cholesky(K)
end
-- log|W W^T + D| by the matrix determinant lemma: log|C| + log|D|
function lowrank.logdet(D, C) return 2 * half_log_det(C) + D:log():sum(-1) end
-- x^T (W W^T + D)^-1 x by Woodbury's identity
function lowrank.mahalanobis(W, D, x, C)
  local Wt_Dinv_x = (mT(W) / D:unsqueeze(-2)):matmul(x:unsqueeze(-1)):squeeze(-1)
  return (x * x / D):sum(-1) - mahalanobis(C, Wt_Dinv_x)
end
-- the trace of X X^T over the batch (PyTorch's _batch_trace_XXT)
function lowrank.trace_XXT(X) return (X * X):sum({ -2, -1 }) end
-- d:expand(batch_shape) keeping `keys` as they are (tensors over an unbroadcasted batch)
function lowrank.expand_keeping(d, batch_shape, keys)
  local kept = {}
  for _, k in ipairs(keys) do kept[k] = rawget(d, k); rawset(d, k, nil) end
  local ok, out = pcall(Distribution.expand, d, batch_shape)
  for k, v in pairs(kept) do rawset(d, k, v) end
  if not ok then error(out, 0) end
  for k, v in pairs(kept) do rawset(out, k, v) end
  return out
end

--- LowRankMultivariateNormal(loc, cov_factor, cov_diag): a multivariate normal of covariance
--- cov_factor cov_factor^T + diag(cov_diag) (loc [..., n], cov_factor [..., n, m], cov_diag [..., n],
--- broadcast); log_prob and entropy by Woodbury's identity and the matrix determinant lemma
local LowRankMultivariateNormal = class("LowRankMultivariateNormal")
LowRankMultivariateNormal._keywords = { "loc", "cov_factor", "cov_diag" }
LowRankMultivariateNormal._params = { "loc", "cov_factor", "cov_diag" }
function LowRankMultivariateNormal.new(loc, cov_factor, cov_diag, opts)
  local fn = "LowRankMultivariateNormal"
  check.tensor(loc, fn, "loc")
  check.tensor(cov_factor, fn, "cov_factor")
  check.tensor(cov_diag, fn, "cov_diag")
  opts = check.options(opts, fn, { validate_args = "boolean" })
  if loc:dim() < 1 then check.fail(fn, "loc must be at least one-dimensional.") end
  local n = loc:size(-1)
  if cov_factor:dim() < 2 then
    check.fail(fn, "cov_factor must be at least two-dimensional, with optional leading batch dimensions")
  end
  if cov_factor:size(-2) ~= n then check.fail(fn, "cov_factor must be a batch of matrices with shape %d x m", n) end
  if cov_diag:dim() < 1 or cov_diag:size(-1) ~= n then
    check.fail(fn, "cov_diag must be a batch of vectors with shape %s", tostring(Size({ n })))
  end
  if not loc:is_floating_point() then loc = loc:to(wick.get_default_dtype()) end
  if cov_factor.dtype ~= loc.dtype then cov_factor = cov_factor:to(loc.dtype) end
  if cov_diag.dtype ~= loc.dtype then cov_diag = cov_diag:to(loc.dtype) end
  local batch = wick.ops._broadcast_sizes({ leading(loc, 1), leading(cov_factor, 2), leading(cov_diag, 1) })
  if not batch then
    check.fail(fn, "Incompatible batch shapes: loc %s, cov_factor %s, cov_diag %s", tostring(loc:size()),
      tostring(cov_factor:size()), tostring(cov_diag:size()))
  end
  local d = setmetatable({}, LowRankMultivariateNormal)
  d.batch_shape, d.event_shape = Size(batch), Size({ n })
  d.loc, d.cov_diag = loc:expand(concat(batch, { n })), cov_diag:expand(concat(batch, { n }))
  d.cov_factor = cov_factor:expand(concat(batch, { n, cov_factor:size(-1) }))
  if validating(d, opts) then
    check_param(d, "loc", not_nan(d.loc):all(-1), "IndependentConstraint(Real(), 1)")
    check_param(d, "cov_factor", not_nan(d.cov_factor):all(-1):all(-1), "IndependentConstraint(Real(), 2)")
    check_param(d, "cov_diag", d.cov_diag:gt(0):all(-1), "IndependentConstraint(GreaterThan(lower_bound=0.0), 1)")
  end
  d._unbroadcasted_cov_factor, d._unbroadcasted_cov_diag = cov_factor, cov_diag
  local ok_c, C = pcall(lowrank.capacitance_tril, cov_factor, cov_diag)
  if not ok_c then
    check.fail(fn, "the capacitance matrix I + cov_factor^T cov_diag^-1 cov_factor is not positive-definite "
      .. "(PyTorch's linalg.cholesky error): cov_diag must be positive")
  end
  d._capacitance_tril = C
  d.has_rsample = true
  return d
end
function LowRankMultivariateNormal._lazy.mean(d) return d.loc end
function LowRankMultivariateNormal._lazy.mode(d) return d.loc end
function LowRankMultivariateNormal._lazy.variance(d)
  local W = d._unbroadcasted_cov_factor
  return ((W * W):sum(-1) + d._unbroadcasted_cov_diag):expand(concat(d.batch_shape, d.event_shape))
end
function LowRankMultivariateNormal._lazy.stddev(d) return d.variance:sqrt() end
-- (sqrt(D) times the Cholesky factor of I + D^-1/2 W W^T D^-1/2, whose eigenvalues are at least 1)
function LowRankMultivariateNormal._lazy.scale_tril(d)
  local n = d.event_shape[1]
  local sqrt_D = d._unbroadcasted_cov_diag:sqrt():unsqueeze(-1)
  local X = d._unbroadcasted_cov_factor / sqrt_D
  local K = X:matmul(mT(X)) + wick.eye(n, { dtype = X.dtype, device = X.device })
  return (sqrt_D * linalg().cholesky(K)):expand(concat(d.batch_shape, { n, n }))
end
function LowRankMultivariateNormal._lazy.covariance_matrix(d)
  local W, n = d._unbroadcasted_cov_factor, d.event_shape[1]
  return (W:matmul(mT(W)) + d._unbroadcasted_cov_diag:diag_embed()):expand(concat(d.batch_shape, { n, n }))
end
function LowRankMultivariateNormal._lazy.precision_matrix(d)
  local W, D, n = d._unbroadcasted_cov_factor, d._unbroadcasted_cov_diag, d.event_shape[1]
  local A = linalg().solve_triangular(d._capacitance_tril, mT(W) / D:unsqueeze(-2), { upper = false })
  return (D:reciprocal():diag_embed() - mT(A):matmul(A)):expand(concat(d.batch_shape, { n, n }))
end
--- d:rsample([sample_shape]): loc + W eps_W + sqrt(D) eps_D, eps_W and eps_D standard normal from wick's generator
function LowRankMultivariateNormal:rsample(sample_shape)
  local shape = shape_of(sample_shape, concat(self.batch_shape, self.event_shape), "LowRankMultivariateNormal:rsample")
  local W_shape = { unpack(shape) }
  W_shape[#W_shape] = self.cov_factor:size(-1)
  local opts = { dtype = self.loc.dtype, device = self.loc.device }
  local eps_W = wick.randn(W_shape, opts)
  local eps_D = wick.randn(shape, opts)
  return self.loc + self._unbroadcasted_cov_factor:matmul(eps_W:unsqueeze(-1)):squeeze(-1)
    + self._unbroadcasted_cov_diag:sqrt() * eps_D
end
LowRankMultivariateNormal.sample = sample_of
function LowRankMultivariateNormal:log_prob(value)
  local fn = "LowRankMultivariateNormal:log_prob"
  value = param(value, fn, "value", self.loc)
  if self._validate_args then check_sample(self, fn, value, "IndependentConstraint(Real(), 1)", function(v)
    return not_nan(v):all(-1) end)
  end
  local W, D, C = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag, self._capacitance_tril
  local m = lowrank.mahalanobis(W, D, value - self.loc, C)
  return -0.5 * (lowrank.logdet(D, C) + self.event_shape[1] * LOG_2PI + m)
end
function LowRankMultivariateNormal:entropy()
  local H = 0.5 * (lowrank.logdet(self._unbroadcasted_cov_diag, self._capacitance_tril)
    + self.event_shape[1] * (1 + LOG_2PI))
  if #self.batch_shape == 0 then return H end
  return H:expand(self.batch_shape)
end
--- d:expand(batch_shape): loc, cov_factor, cov_diag broadcast to the new batch (views, no copies)
function LowRankMultivariateNormal:expand(batch_shape)
  return lowrank.expand_keeping(self, batch_shape, { "_capacitance_tril" })
end

-- the KL divergences PyTorch registers for LowRankMultivariateNormal (registered with register_kl below)
local function lowrank_event_check(p, q, which)
  if p.event_shape[1] ~= q.event_shape[1] then
    check.fail("kl_divergence", "KL-divergence between two %s with different event shapes cannot be computed", which)
  end
end
function lowrank.kl_lowrank_lowrank(p, q)
  lowrank_event_check(p, q, "Low Rank Multivariate Normals")
  local pW, pD, pC = p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag, p._capacitance_tril
  local qW, qD, qC = q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag, q._capacitance_tril
  local term1 = lowrank.logdet(qD, qC) - lowrank.logdet(pD, pC)
  local term3 = lowrank.mahalanobis(qW, qD, q.loc - p.loc, qC)
  -- inv(qcov) pcov = (inv(qD) - A^T A)(pD + pW pW^T), A = qC^-1 qW^T inv(qD)
  local A = linalg().solve_triangular(qC, mT(qW) / qD:unsqueeze(-2), { upper = false })
  local term21 = (pD / qD):sum(-1)
  local term22 = lowrank.trace_XXT(pW * qD:rsqrt():unsqueeze(-1))
  local term23 = lowrank.trace_XXT(A * pD:sqrt():unsqueeze(-2))
  local term24 = lowrank.trace_XXT(A:matmul(pW))
  local term2 = term21 + term22 - term23 - term24
  return 0.5 * (term1 + term2 + term3 - p.event_shape[1])
end
function lowrank.kl_mvn_lowrank(p, q)
  lowrank_event_check(p, q, "(Low Rank) Multivariate Normals")
  local pL = p._unbroadcasted_scale_tril
  local qW, qD, qC = q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag, q._capacitance_tril
  local term1 = lowrank.logdet(qD, qC) - 2 * half_log_det(pL)
  local term3 = lowrank.mahalanobis(qW, qD, q.loc - p.loc, qC)
  local A = linalg().solve_triangular(qC, mT(qW) / qD:unsqueeze(-2), { upper = false })
  local term21 = lowrank.trace_XXT(pL * qD:rsqrt():unsqueeze(-1))
  local term22 = lowrank.trace_XXT(A:matmul(pL))
  local term2 = term21 - term22
  return 0.5 * (term1 + term2 + term3 - p.event_shape[1])
end
function lowrank.kl_lowrank_mvn(p, q)
  lowrank_event_check(p, q, "(Low Rank) Multivariate Normals")
  local pW, pD, pC = p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag, p._capacitance_tril
  local qL = q._unbroadcasted_scale_tril
  local term1 = 2 * half_log_det(qL) - lowrank.logdet(pD, pC)
  local term3 = mahalanobis(qL, q.loc - p.loc)
  local n = p.event_shape[1]
  -- (cov_diag's batch too: PyTorch's broadcasts only q's scale_tril with p's cov_factor and fails on a batched cov_diag)
  local batch = broadcast_shapes("kl_divergence", leading(qL, 2), broadcast_shapes("kl_divergence", leading(pW, 2),
    leading(pD, 1), "p's cov_factor and cov_diag"), "the batch shapes of q and p")
  local qL_ = qL:expand(concat(batch, { n, n }))
  local term21 = lowrank.trace_XXT(linalg().solve_triangular(qL_, pW:expand(concat(batch, { n, pW:size(-1) })),
    { upper = false }))
  local term22 = lowrank.trace_XXT(linalg().solve_triangular(qL_, pD:sqrt():diag_embed():expand(concat(batch, { n, n })),
    { upper = false }))
  return 0.5 * (term1 + (term21 + term22) + term3 - n)
end

--- Wishart(df, covariance_matrix) or (df, {covariance_matrix = | precision_matrix = | scale_tril =}): positive-definite
--- p by p matrices (df a number or tensor above p - 1, broadcast with the matrices' batch); rsample by Bartlett's
--- decomposition
local Wishart = class("Wishart")
Wishart._keywords = { "df", "covariance_matrix" }
Wishart._params = { "covariance_matrix", "precision_matrix", "scale_tril", "df" }
function Wishart.new(df, cov, opts)
  local fn = "Wishart"
  local name, m
  name, m, opts = one_matrix(fn, cov, opts)
  if m:dim() < 2 then
    check.fail(fn, "%s must be at least two-dimensional, with optional leading batch dimensions", name)
  end
  local p = m:size(-1)
  if m:size(-2) ~= p then check.fail(fn, "%s must be a batch of square matrices, got shape %s", name, tostring(m:size())) end
  if not m:is_floating_point() then m = m:to(wick.get_default_dtype()) end
  local batch = leading(m, 2)
  local shown = df
  if is_tensor(df) then
    if df.dtype ~= m.dtype then df = df:to(m.dtype) end
    batch = broadcast_shapes(fn, batch, df:size(), "df and " .. name)
  else
    check.number(df, fn, "df")
    shown = check.shortest(df)
    df = wick.full({}, df, { dtype = m.dtype, device = m.device })
  end
  if df:le(p - 1):any() == true then
    check.fail(fn, "Value of df=%s expected to be greater than ndim - 1 = %d.", tostring(shown), p - 1)
  end
  local d = setmetatable({}, Wishart)
  d.df = df:expand(batch)
  rawset(d, name, m:expand(concat(batch, { p, p })))
  if df:lt(p):any() == true then
    require("wick.nn.common").warn("Low df values detected. Singular samples are highly likely to occur for "
      .. "ndim - 1 < df < ndim.")
  end
  d.batch_shape, d.event_shape = Size(batch), Size({ p, p })
  if validating(d, opts) then
    check_param(d, "df", d.df:gt(p - 1), ("GreaterThan(lower_bound=%d)"):format(p - 1))
    check_matrix(d, name, m)
  end
  d._unbroadcasted_scale_tril = scale_tril_of(fn, name, m)
  d.has_rsample = true
  return d
end
function Wishart._lazy.scale_tril(d) return d._unbroadcasted_scale_tril:expand(concat(d.batch_shape, d.event_shape)) end
function Wishart._lazy.covariance_matrix(d)
  local L = d._unbroadcasted_scale_tril
  return L:matmul(mT(L)):expand(concat(d.batch_shape, d.event_shape))
end
function Wishart._lazy.precision_matrix(d)
  local L = d._unbroadcasted_scale_tril
  local I = wick.eye(d.event_shape[1], { dtype = L.dtype, device = L.device })
  return wick.cholesky_solve(I, L):expand(concat(d.batch_shape, d.event_shape))
end
local function df_matrix(d) return d.df:reshape(concat(d.batch_shape, { 1, 1 })) end
function Wishart._lazy.mean(d) return df_matrix(d) * d.covariance_matrix end
--- d.mode: (df - p - 1) covariance_matrix, NaN where df <= p + 1
function Wishart._lazy.mode(d)
  local factor = d.df - d.event_shape[1] - 1
  factor = wick.where(factor:le(0), 0 / 0, factor)
  return factor:reshape(concat(d.batch_shape, { 1, 1 })) * d.covariance_matrix
end
function Wishart._lazy.variance(d)
  local V = d.covariance_matrix
  local diag = V:diagonal(0, -2, -1)
  return df_matrix(d) * (V * V + diag:unsqueeze(-1) * diag:unsqueeze(-2))
end
function Wishart._lazy.stddev(d) return d.variance:sqrt() end
-- one set of draws by Bartlett's decomposition: L A A^T L^T, A lower triangular with sqrt(chi2(df - i + 1))
-- on the diagonal (clamped above eps) and standard normals below it (in row-major order, as PyTorch's tril_indices)
function lowrank.bartlett(d, shape)
  local p, L = d.event_shape[1], d._unbroadcasted_scale_tril
  local opts = { dtype = L.dtype, device = L.device }
  local chi2_df = d.df:unsqueeze(-1) - wick.arange(p, opts)
  local chi2 = M.Chi2.new(chi2_df, { validate_args = false }):rsample(shape)
  local diag = chi2:sqrt():clamp(wick.finfo(L.dtype).eps, math.huge)
  local k = p * (p - 1) / 2
  local z = wick.randn(concat(concat(shape, d.batch_shape), { k }), opts)
  -- (each normal to its place below the diagonal by a 0/1 matrix: exact, and differentiable as PyTorch's index_put)
  local place = wick.zeros({ k, p * p }, opts)
  if k > 0 then
    local vals, row = {}, 0
    for i = 1, k * p * p do vals[i] = 0 end
    for i = 2, p do
      for j = 1, i - 1 do
        vals[row * p * p + (i - 1) * p + j], row = 1, row + 1
      end
    end
    place = wick.tensor(vals, { dtype = L.dtype }):reshape({ k, p * p }):to(L.device)
  end
  local noise = diag:diag_embed() + z:matmul(place):reshape(concat(leading(z, 1), { p, p }))
  local chol = L:matmul(noise)
  return chol:matmul(mT(chol))
end
--- d:rsample([sample_shape[, max_try_correction = 10]]): Bartlett's draws; a draw that is not positive-definite
--- (low df) is drawn again, up to max_try_correction times, with a warning
function Wishart:rsample(sample_shape, max_try_correction)
  local fn = "Wishart:rsample"
  local shape = shape_of(sample_shape, {}, fn)
  if max_try_correction == nil then max_try_correction = 10 end
  check.int(max_try_correction, fn, "max_try_correction", 0)
  local sample = lowrank.bartlett(self, shape)
  local nb = #self.batch_shape
  local function singular(s)
    local bad = Cn.positive_definite.check(s:detach()):logical_not()
    for _ = 1, nb do bad = bad:any(-1) end
    return bad
  end
  local bad = singular(sample)
  if bad:any() == true then
    require("wick.nn.common").warn("Singular sample detected.")
    local view = concat(shape, {})
    for _ = 1, nb + 2 do view[#view + 1] = 1 end
    for _ = 1, max_try_correction do
      local new = lowrank.bartlett(self, shape)
      sample = wick.where(bad:reshape(view), new, sample)
      bad = bad:logical_and(singular(new))
      if bad:any() ~= true then break end
    end
  end
  return sample
end
Wishart.sample = sample_of
function Wishart:log_prob(value)
  local fn = "Wishart:log_prob"
  value = param(value, fn, "value", self.df)
  if self._validate_args then check_sample(self, fn, value, "PositiveDefinite()", Cn.positive_definite.check) end
  local nu, p, L = self.df, self.event_shape[1], self._unbroadcasted_scale_tril
  local _, logabsdet = linalg().slogdet(value)
  return -nu * (p * LOG_2 / 2 + half_log_det(L)) - wick.mvlgamma(nu / 2, p) + (nu - p - 1) / 2 * logabsdet
    - wick.cholesky_solve(value, L):diagonal(0, -2, -1):sum(-1) / 2
end
function Wishart:entropy()
  local nu, p, L = self.df, self.event_shape[1], self._unbroadcasted_scale_tril
  local x = nu / 2
  -- the multivariate digamma: sum over i < p of digamma(x - i / 2)
  local mvdigamma = (x:unsqueeze(-1) - wick.arange(p, { dtype = x.dtype, device = x.device }) / 2):digamma():sum(-1)
  return (p + 1) * (p * LOG_2 / 2 + half_log_det(L)) + wick.mvlgamma(x, p) - (nu - p - 1) / 2 * mvdigamma + nu * p / 2
end

--- LKJCholesky(dim[, concentration = 1]): lower Cholesky factors of dim by dim correlation matrices, of density
--- proportional to det(L L^T)^(concentration - 1); sample by the onion method (no rsample, as PyTorch's)
local LKJCholesky = class("LKJCholesky")
LKJCholesky._keywords = { "dim", "concentration" }
LKJCholesky._params = { "concentration" }
function LKJCholesky.new(dim, concentration, opts)
  local fn = "LKJCholesky"
  if type(concentration) == "table" and not is_tensor(concentration) and opts == nil then
    concentration, opts = nil, concentration
  end
  opts = check.options(opts, fn, { validate_args = "boolean" })
  check.int(dim, fn, "dim")
  if dim < 2 then check.fail(fn, "Expected dim to be an integer greater than or equal to 2. Found dim=%d.", dim) end
  if concentration == nil then concentration = 1.0 end
  local d = setmetatable({}, LKJCholesky)
  d.dim, d.concentration = dim, param(concentration, fn, "concentration")
  if validating(d, opts) then check_param(d, "concentration", d.concentration:gt(0), "GreaterThan(lower_bound=0.0)") end
  d.batch_shape, d.event_shape = d.concentration:size(), Size({ dim, dim })
  d.has_rsample = false
  return d
end
-- the Beta draws of the onion method (Lewandowski et al.'s section 3.2, NumPyro's): row i (0-based, i >= 1) of
-- squared length y ~ Beta(i / 2, concentration + (dim - 2) / 2 - (i - 1) / 2), over batch_shape + {dim} (row 0's
-- draw unused). (PyTorch's _beta has i - 1/2 for the first parameter, wrong from the third row on: its draws'
-- correlations r_13, r_23, ... are not LKJ's, whose marginals are all (r + 1) / 2 ~ Beta(b, b), b = concentration
-- - 1 + dim / 2)
function LKJCholesky._lazy._beta(d)
  local c = d.concentration
  local opts = { dtype = c.dtype, device = c.device }
  local offset = wick.cat({ wick.zeros({ 1 }, opts), wick.arange(d.dim - 1, opts) })
  local marginal = c + 0.5 * (d.dim - 2)
  return M.Beta.new(offset * 0.5 + 0.5, marginal:unsqueeze(-1) - 0.5 * offset, { validate_args = false })
end
--- d:sample([sample_shape]): the onion method (Lewandowski, Kurowicka and Joe 2009), vectorised over the rows
function LKJCholesky:sample(sample_shape)
  local shape = shape_of(sample_shape, {}, "LKJCholesky:sample")
  return wick.no_grad(function()
    local y = self._beta:sample(shape):unsqueeze(-1)
    local u = wick.randn(concat(concat(shape, self.batch_shape), self.event_shape), { dtype = y.dtype,
      device = y.device }):tril(-1)
    local norm = linalg().vector_norm(u, 2, -1, true)
    -- (the first row is all zeros: zeros on the sphere, as PyTorch's fill)
    local w = y:sqrt() * wick.where(norm:eq(0), 0, u / norm)
    local diag = (1 - (w * w):sum(-1)):clamp(wick.finfo(w.dtype).tiny, math.huge):sqrt()
    return w + diag:diag_embed()
  end)
end
function LKJCholesky:log_prob(value)
  local fn = "LKJCholesky:log_prob"
  value = param(value, fn, "value", self.concentration)
  if self._validate_args then check_sample(self, fn, value, "CorrCholesky()", Cn.corr_cholesky.check) end
  local dim, c = self.dim, self.concentration
  -- L_ii^(2 (concentration - 1) + dim - i) over i >= 2: det(L L^T)^(concentration - 1) and the Jacobian of L -> L L^T
  local diag = value:diagonal(0, -2, -1):narrow(-1, 2, dim - 1)
  local order = 2 * (c - 1):unsqueeze(-1) + dim - wick.arange(2, dim + 1, { dtype = c.dtype, device = c.device })
  local unnormalized = (order * diag:log()):sum(-1)
  -- the normalising constant (Lewandowski et al., p. 1999)
  local dm1 = dim - 1
  local alpha = c + 0.5 * dm1
  local denominator = alpha:lgamma() * dm1
  local numerator = wick.mvlgamma(alpha - 0.5, dm1)
  local pi_constant = 0.5 * dm1 * math.log(math.pi)
  return unnormalized - (pi_constant + numerator - denominator)
end

-- (their supports and constraints are with the others', below; Wishart's depend on p)
function Wishart._lazy.arg_constraints(d)
  return { covariance_matrix = Cn.positive_definite, precision_matrix = Cn.positive_definite,
    scale_tril = Cn.lower_cholesky, df = Cn.greater_than(d.event_shape[1] - 1) }
end
for _, C in ipairs({ LowRankMultivariateNormal, Wishart, LKJCholesky }) do receivers(C) end
-- PyTorch's module names (torch.distributions.lowrank_multivariate_normal, .lkj_cholesky)
M.lowrank_multivariate_normal = check.strict({ LowRankMultivariateNormal = LowRankMultivariateNormal },
  "wick.distributions.lowrank_multivariate_normal")
M.lkj_cholesky = check.strict({ LKJCholesky = LKJCholesky }, "wick.distributions.lkj_cholesky")

-- ---- Independent ----

--- Independent(base, reinterpreted_batch_ndims): the base's rightmost batch dims as event dims
local Independent = class("Independent")
Independent._keywords = { "base_distribution", "reinterpreted_batch_ndims" }
function Independent.new(base, ndims, opts)
  local fn = "Independent"
  if not is_distribution(base) then check.expected(fn, "base_distribution", "a distribution", base) end
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
  -- (a subclass's method standing for the property, dreamer's OneHotDist.mode(): bound to the base,
  -- as Python's self.base_dist.mode is)
  Independent._lazy[k] = function(d)
    local v, base = d.base_dist[k], d.base_dist
    if type(v) == "function" then return function(_, ...) return v(base, ...) end end
    return v
  end
end
function Independent:sample(sample_shape) return self.base_dist:sample(sample_shape) end
function Independent:rsample(sample_shape)
  if self.base_dist.rsample == Distribution.rsample then -- (the base's: no reparameterised draws)
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
  binary_params(d, fn, probs, logits, validating(d, opts), in_unit_interval, "Interval(lower_bound=0.0, upper_bound=1.0)")
  d.mean, d.variance = d.probs, d.probs * (1 - d.probs)
  d.stddev = d.variance:sqrt()
  -- the more likely value; NaN where both are as likely (PyTorch's)
  d.mode = wick.where(d.probs:eq(0.5), 0 / 0, d.probs:ge(0.5):to(d.probs.dtype))
  d.batch_shape, d.event_shape = d.probs:size(), Size()
  d.has_rsample = false
  return d
end
Bernoulli.has_enumerate_support = true
--- d:enumerate_support([expand = true]): 0 and 1 along a new first dim
function Bernoulli:enumerate_support(expand)
  return support_of(self, wick.tensor({ 0, 1 }, { dtype = self.probs.dtype, device = self.probs.device }), expand)
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
Uniform._keywords = { "low", "high" }
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
  d.mode = wick.full_like(d.low, 0 / 0) -- (every value as likely: PyTorch's NaN)
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
--- d:cdf(x): (x - low) / (high - low), clamped to [0, 1]; d:icdf(p): low + p (high - low)
function Uniform:cdf(value)
  value = param(value, "Uniform:cdf", "value", self.low)
  if self._validate_args then
    check_sample(self, "Uniform:cdf", value, "Interval(lower_bound=low, upper_bound=high)", function(v)
      return v:ge(self.low):logical_and(v:le(self.high))
    end)
  end
  return ((value - self.low) / (self.high - self.low)):clamp(0, 1)
end
function Uniform:icdf(value)
  value = param(value, "Uniform:icdf", "value", self.low)
  return value * (self.high - self.low) + self.low
end

-- ---- Gamma draws (Marsaglia and Tsang) ----

-- a tensor's values as a flat Lua array of numbers (float64)
local function values_of(t) return t:detach():to("cpu"):double():contiguous():reshape(-1):totable() end
-- a flat Lua array as a tensor of `like`'s shape, dtype and device
local function tensor_of(vals, like)
  if #vals == 0 then return wick.zeros(like:size(), { dtype = like.dtype, device = like.device }) end
  return wick.tensor(vals, { dtype = like.dtype }):reshape(like:size()):to(like.device)
end
-- the next standard uniform (or normal) draw of wick's generator, drawn in blocks of at least n
local function draws(kind, n)
  local block, i = nil, 0
  return function()
    if block == nil or i >= #block then
      block, i = wick[kind](math.max(n, 64), { dtype = "float64" }):totable(), 0
    end
    i = i + 1
    return block[i]
  end
end
-- Marsaglia and Tsang's acceptance-rejection ("A simple method for generating gamma
-- variables", 2000) for alpha >= 1, boosted by U^(1/alpha) below 1
local function sample_gamma(alpha, uniform, normal)
  if not (alpha >= 0) then return 0 / 0 end -- NaN or negative (validate_args = false): NaN, never a hang
  local scale = 1
  if alpha < 1 then
    if alpha == 0 then return 0 end
    scale = (1 - uniform()) ^ (1 / alpha)
    alpha = alpha + 1
  end
  local d = alpha - 1 / 3
  local c = 1 / math.sqrt(9 * d)
  while true do
    local x, y
    repeat
      x = normal()
      y = 1 + c * x
    until y > 0
    local v = y * y * y
    local u = 1 - uniform()
    local xx = x * x
    if u < 1 - 0.0331 * xx * xx then return scale * d * v end
    if math.log(u) < 0.5 * xx + d * (1 - v + math.log(v)) then return scale * d * v end
  end
end
-- standard Gamma(alpha) draws for each value of alpha (a flat array), from wick's generator
local function standard_gamma_values(a)
  local n = #a
  local uniform, normal = draws("rand", n), draws("randn", n)
  local out = {}
  for i = 1, n do out[i] = sample_gamma(a[i], uniform, normal) end
  return out
end

-- A Poisson(lam) draw: multiplying uniforms (Knuth) below 10; above, Hoermann's transformed
-- rejection with squeeze, PTRS ("The transformed rejection method for generating Poisson random
-- variables", 1993), whose acceptance is above 0.9 whatever lam
local LOG_FACTORIAL = { [0] = 0 }
for k = 1, 30 do LOG_FACTORIAL[k] = LOG_FACTORIAL[k - 1] + math.log(k) end
-- log k!: a table up to 30, then Stirling's series for lgamma(k + 1) (error below 1e-13 there)
local function log_factorial(k)
  if k <= 30 then return LOG_FACTORIAL[k] end
  local x = k + 1
  return (x - 0.5) * math.log(x) - x + 0.5 * math.log(2 * math.pi) + 1 / (12 * x) - 1 / (360 * x ^ 3) + 1 / (1260 * x ^ 5)
end
local function sample_poisson(lam, uniform)
  if not (lam >= 0) or lam == math.huge then return 0 / 0 end
  if lam == 0 then return 0 end
  if lam < 10 then
    local limit, prod, k = math.exp(-lam), 1 - uniform(), 0
    while prod > limit do
      prod = prod * (1 - uniform())
      k = k + 1
    end
    return k
  end
  local slam, loglam = math.sqrt(lam), math.log(lam)
  local b = 0.931 + 2.53 * slam
  local a = -0.059 + 0.02483 * b
  local invalpha = 1.1239 + 1.1328 / (b - 3.4)
  local vr = 0.9277 - 3.6224 / (b - 2)
  while true do
    local u = uniform() - 0.5
    local v = 1 - uniform()
    local us = 0.5 - math.abs(u)
    local k = math.floor((2 * a / us + b) * u + lam + 0.43)
    if us >= 0.07 and v <= vr then return k end
    if k >= 0 and (us >= 0.013 or v <= us)
      and math.log(v) + math.log(invalpha) - math.log(a / (us * us) + b) <= -lam + k * loglam - log_factorial(k) then
      return k
    end
  end
end
--- wick.poisson(rates): a Poisson draw for each rate (>= 0), in the rates' dtype and device
--- (torch.poisson), from wick's generator
function M._poisson(rates)
  check.tensor(rates, "poisson", "input")
  if not rates:is_floating_point() then
    check.fail("poisson", "expected a floating-point tensor of rates, got %s", rates.dtype)
  end
  local lam = values_of(rates)
  for i = 1, #lam do
    if not (lam[i] >= 0) then check.fail("poisson", "invalid Poisson rate, expected rate to be non-negative, got %g", lam[i]) end
  end
  local uniform = draws("rand", #lam)
  local out = {}
  for i = 1, #lam do out[i] = sample_poisson(lam[i], uniform) end
  return tensor_of(out, rates)
end

-- A Binomial(n, p) draw: for p above 1/2 the failures of 1 - p; then Devroye's geometric waiting
-- times while n p < 10, else Hoermann's transformed rejection, BTRS ("The generation of binomial
-- random variates", 1993), as PyTorch's
local function sample_binomial(n, p, uniform)
  if not (n >= 0 and p >= 0 and p <= 1) or n == math.huge then return 0 / 0 end
  if n == 0 or p == 0 then return 0 end
  if p == 1 then return n end
  if p > 0.5 then return n - sample_binomial(n, 1 - p, uniform) end
  if n * p < 10 then
    local logq, count, waited = math.log(1 - p), 0, 0
    while true do
      waited = waited + math.ceil(math.log(1 - uniform()) / logq)
      if waited > n then return count end
      count = count + 1
    end
  end
  local q = 1 - p
  local spq = math.sqrt(n * p * q)
  local b = 1.15 + 2.53 * spq
  local a = -0.0873 + 0.0248 * b + 0.01 * p
  local c = n * p + 0.5
  local vr = 0.92 - 4.2 / b
  local alpha = (2.83 + 5.1 / b) * spq
  local lpq = math.log(p / q)
  local m = math.floor((n + 1) * p)
  local h = log_factorial(m) + log_factorial(n - m)
  while true do
    local u = uniform() - 0.5
    local v = uniform()
    local us = 0.5 - math.abs(u)
    local k = math.floor((2 * a / us + b) * u + c)
    if k >= 0 and k <= n then
      if us >= 0.07 and v <= vr then return k end
      if math.log(v * alpha / (a / (us * us) + b)) <= h - log_factorial(k) - log_factorial(n - k) + (k - m) * lpq then
        return k
      end
    end
  end
end
--- wick.binomial(count, prob): a Binomial(count, prob) draw for each pair (broadcast), in prob's
--- dtype and device (torch.binomial), from wick's generator
function M._binomial(count, prob)
  local fn = "binomial"
  check.tensor(count, fn, "count")
  check.tensor(prob, fn, "prob")
  if not prob:is_floating_point() then check.fail(fn, "expected a floating-point tensor of probabilities, got %s", prob.dtype) end
  count, prob = wick.broadcast_tensors(count, prob)
  local n, p = values_of(count), values_of(prob)
  for i = 1, #n do
    if not (n[i] >= 0 and n[i] == math.floor(n[i])) then
      check.fail(fn, "count must hold non-negative integers, got %g", n[i])
    end
    if not (p[i] >= 0 and p[i] <= 1) then check.fail(fn, "prob must be in [0, 1], got %g", p[i]) end
  end
  local uniform = draws("rand", #n)
  local out = {}
  for i = 1, #n do out[i] = sample_binomial(n[i], p[i], uniform) end
  return tensor_of(out, prob)
end

-- The implicit reparameterisation gradient of a Gamma draw with respect to its
-- concentration (-(d/da cdf(x; a)) / pdf(x; a)) needs the incomplete gamma
-- function's derivative, which wick does not have yet: a backward that reaches
-- a concentration is an error, never a silently wrong gradient. Gradients to
-- everything else (Gamma's rate, StudentT's loc and scale) flow as usual.
local function no_concentration_grad(what)
  check.fail(what, "the gradient of a draw with respect to the concentration (PyTorch's implicit "
    .. "reparameterisation) is not implemented in this version of wick; draw with sample(), or "
    .. "detach the concentration")
end

-- torch._standard_gamma: draws of Gamma(alpha, 1) (at least the dtype's tiny)
local StandardGamma = wick.autograd.Function:extend("StandardGamma")
function StandardGamma.forward(ctx, alpha)
  return tensor_of(standard_gamma_values(values_of(alpha)), alpha):clamp(wick.finfo(alpha.dtype).tiny, math.huge)
end
function StandardGamma.backward() no_concentration_grad("Gamma:rsample") end
function M._standard_gamma(alpha, ...)
  check.tensor(alpha, "_standard_gamma", "self")
  if select("#", ...) > 0 and select(1, ...) ~= nil then check.fail("_standard_gamma", "takes one tensor of concentrations") end
  if not alpha:is_floating_point() then check.fail("_standard_gamma", "expected a floating-point tensor, got %s", alpha.dtype) end
  return StandardGamma.apply(alpha)
end
-- torch._sample_dirichlet: float64 Gammas (at least float64's tiny) normalised over the last dim,
-- then in [tiny, 1) of the dtype
local DirichletSample = wick.autograd.Function:extend("DirichletSample")
function DirichletSample.forward(ctx, conc)
  local gamma = wick.tensor(standard_gamma_values(values_of(conc)), { dtype = "float64" })
  gamma = gamma:clamp(wick.finfo("float64").tiny, math.huge):reshape(conc:size())
  local fi = wick.finfo(conc.dtype)
  return (gamma / gamma:sum(-1, true)):to(conc.dtype):clamp(fi.tiny, 1 - fi.eps / 2):to(conc.device)
end
function DirichletSample.backward() no_concentration_grad("Dirichlet:rsample") end
function M._sample_dirichlet(conc, ...)
  check.tensor(conc, "_sample_dirichlet", "self")
  if select("#", ...) > 0 and select(1, ...) ~= nil then check.fail("_sample_dirichlet", "takes one tensor of concentrations") end
  if not conc:is_floating_point() then check.fail("_sample_dirichlet", "expected a floating-point tensor, got %s", conc.dtype) end
  if conc:dim() == 0 then check.fail("_sample_dirichlet", "expected concentrations with at least 1 dim, got a 0-dim tensor") end
  return DirichletSample.apply(conc)
end

-- n parameters (numbers or tensors) as tensors of one shape
local function n_params(fn, values, names, opts)
  check.options(opts, fn, { validate_args = "boolean" })
  local like
  for i = 1, #names do if is_tensor(values[i]) then like = values[i]; break end end
  local ts = {}
  for i = 1, #names do ts[i] = param(values[i], fn, names[i], like) end
  return broadcast_params(fn, unpack(ts))
end
local POSITIVE = "GreaterThan(lower_bound=0.0)"
local NONNEGATIVE = "GreaterThanEq(lower_bound=0.0)"
local UNIT_INTERVAL = "Interval(lower_bound=0.0, upper_bound=1.0)"
-- the value of log_prob as a tensor in `like`'s dtype, checked against a support when validating
local function value_in(d, fn, value, like, support, ok)
  value = param(value, fn, "value", like)
  if d._validate_args then check_sample(d, fn, value, support, ok) end
  return value
end
local function positive(v) return v:gt(0) end
local function nonnegative(v) return v:ge(0) end
-- a distribution of one parameter, rate (a number or tensor), checked by ok (named constraint)
local function rated(C, rate, opts, ok, constraint, has_rsample)
  local fn = C.__name
  check.options(opts, fn, { validate_args = "boolean" })
  local d = setmetatable({}, C)
  d.rate = param(rate, fn, "rate")
  if validating(d, opts) then check_param(d, "rate", ok(d.rate), constraint) end
  d.batch_shape, d.event_shape = d.rate:size(), Size()
  d.has_rsample = has_rsample
  return d
end

-- ---- Gamma ----

--- Gamma(concentration, rate) (numbers or tensors, broadcast): values in [0, inf)
local Gamma = class("Gamma")
Gamma._keywords = { "concentration", "rate" }
Gamma._params = { "concentration", "rate" }
function Gamma.new(concentration, rate, opts)
  return positive_pair(Gamma, concentration, rate, "concentration", "rate", opts)
end
function Gamma._lazy.mean(d) return d.concentration / d.rate end
function Gamma._lazy.mode(d) return ((d.concentration - 1) / d.rate):clamp(0, math.huge) end
function Gamma._lazy.variance(d) return d.concentration / d.rate ^ 2 end
function Gamma._lazy.stddev(d) return d.variance:sqrt() end
--- d:rsample([sample_shape]): standard Gamma draws / rate; gradients to rate (to
--- concentration: an error in backward, see no_concentration_grad)
function Gamma:rsample(sample_shape)
  local shape = shape_of(sample_shape, self.batch_shape, "Gamma:rsample")
  -- (wick._standard_gamma and wick.poisson looked up at each draw, as PyTorch's samplers find
  -- torch._standard_gamma and torch.poisson: a test replaying PyTorch's draws replaces them)
  local value = wick._standard_gamma(self.concentration:expand(shape)) / self.rate:expand(shape)
  wick.no_grad(function() value:detach():clamp_(wick.finfo(value.dtype).tiny, math.huge) end)
  return value
end
Gamma.sample = sample_of
function Gamma:log_prob(value)
  value = value_in(self, "Gamma:log_prob", value, self.rate, NONNEGATIVE, nonnegative)
  local a, b = self.concentration, self.rate
  return wick.xlogy(a, b) + wick.xlogy(a - 1, value) - b * value - a:lgamma()
end
--- d:cdf(x): the regularized incomplete gamma P(concentration, rate x) (special.gammainc; the
--- gradient flows to x and rate, not to concentration, as PyTorch's)
function Gamma:cdf(value)
  value = value_in(self, "Gamma:cdf", value, self.rate, NONNEGATIVE, nonnegative)
  return wick.special.gammainc(self.concentration, self.rate * value)
end
function Gamma:entropy()
  local a = self.concentration
  return a - self.rate:log() + a:lgamma() + (1 - a) * a:digamma()
end

-- ---- Dirichlet ----

--- Dirichlet(concentration): concentration [..., k] (batch_shape [...], event_shape {k}); values on the simplex
local Dirichlet = class("Dirichlet")
Dirichlet._keywords = { "concentration" }
Dirichlet._params = { "concentration" }
function Dirichlet.new(concentration, opts)
  local fn = "Dirichlet"
  check.tensor(concentration, fn, "concentration")
  opts = check.options(opts, fn, { validate_args = "boolean" })
  if concentration:dim() < 1 then check.fail(fn, "`concentration` parameter must be at least one-dimensional.") end
  if not concentration:is_floating_point() then concentration = concentration:to(wick.get_default_dtype()) end
  local d = setmetatable({}, Dirichlet)
  d.concentration = concentration
  if validating(d, opts) then
    check_param(d, "concentration", positive(concentration):all(-1), "IndependentConstraint(" .. POSITIVE .. ", 1)")
  end
  d.batch_shape = concentration:size()
  d.event_shape = Size({ table.remove(d.batch_shape) })
  d.has_rsample = true
  return d
end
function Dirichlet._lazy.mean(d) return d.concentration / d.concentration:sum(-1, true) end
function Dirichlet._lazy.mode(d)
  local a = d.concentration
  local am1 = (a - 1):clamp(0, math.huge)
  local mode = am1 / am1:sum(-1, true)
  -- all below 1: PyTorch's one-hot of the argmax of the NaN row, the first vertex
  local first = wick.nn.functional.one_hot(wick.ones(d.batch_shape, { dtype = "int64", device = a.device }),
    d.event_shape[1]):to(mode.dtype)
  return wick.where(a:lt(1):all(-1, true), first, mode)
end
function Dirichlet._lazy.variance(d)
  local a = d.concentration
  local a0 = a:sum(-1, true)
  return a * (a0 - a) / (a0 ^ 2 * (a0 + 1))
end
function Dirichlet._lazy.stddev(d) return d.variance:sqrt() end
--- d:rsample([sample_shape]): normalised Gamma draws (no gradient to concentration yet: an
--- error in backward)
function Dirichlet:rsample(sample_shape)
  local shape = shape_of(sample_shape, concat(self.batch_shape, self.event_shape), "Dirichlet:rsample")
  return wick._sample_dirichlet(self.concentration:expand(shape))
end
Dirichlet.sample = sample_of
local function simplex(v) return v:ge(0):all(-1):logical_and((v:sum(-1) - 1):abs():lt(1e-6)) end
function Dirichlet:log_prob(value)
  value = value_in(self, "Dirichlet:log_prob", value, self.concentration, "Simplex()", simplex)
  local a = self.concentration
  return wick.xlogy(a - 1, value):sum(-1) + a:sum(-1):lgamma() - a:lgamma():sum(-1)
end
function Dirichlet:entropy()
  local a = self.concentration
  local k = self.event_shape[1]
  local a0 = a:sum(-1)
  return a:lgamma():sum(-1) - a0:lgamma() - (k - a0) * a0:digamma() - ((a - 1) * a:digamma()):sum(-1)
end

-- ---- Beta ----

--- Beta(concentration1, concentration0) (numbers or tensors, broadcast): values in [0, 1], a
--- Dirichlet over (x, 1 - x) as PyTorch's
local Beta = class("Beta")
Beta._keywords = { "concentration1", "concentration0" }
Beta._params = { "concentration1", "concentration0" }
function Beta.new(concentration1, concentration0, opts)
  local fn = "Beta"
  local d = setmetatable({}, Beta)
  d.concentration1, d.concentration0 = two_params(fn, concentration1, concentration0, "concentration1",
    "concentration0", opts)
  local validate = validating(d, opts)
  if validate then
    check_param(d, "concentration1", positive(d.concentration1), POSITIVE)
    check_param(d, "concentration0", positive(d.concentration0), POSITIVE)
  end
  d._dirichlet = Dirichlet.new(wick.stack({ d.concentration1, d.concentration0 }, -1), { validate_args = validate })
  d.batch_shape, d.event_shape = d.concentration1:size(), Size()
  d.has_rsample = true
  return d
end
function Beta._lazy.mean(d) return d.concentration1 / (d.concentration1 + d.concentration0) end
function Beta._lazy.mode(d) return d._dirichlet.mode:select(-1, 1) end
function Beta._lazy.variance(d)
  local total = d.concentration1 + d.concentration0
  return d.concentration1 * d.concentration0 / (total ^ 2 * (total + 1))
end
function Beta._lazy.stddev(d) return d.variance:sqrt() end
--- d:rsample([sample_shape]): the first coordinate of the Dirichlet's rsample (PyTorch's gradients)
function Beta:rsample(sample_shape)
  shape_of(sample_shape, {}, "Beta:rsample")
  return self._dirichlet:rsample(sample_shape):select(-1, 1)
end
Beta.sample = sample_of
function Beta:log_prob(value)
  value = value_in(self, "Beta:log_prob", value, self.concentration1, UNIT_INTERVAL, function(v)
    return v:ge(0):logical_and(v:le(1))
  end)
  local a, b = self.concentration1, self.concentration0
  return wick.xlogy(a - 1, value) + wick.xlogy(b - 1, 1 - value) + (a + b):lgamma() - a:lgamma() - b:lgamma()
end
function Beta:entropy() return self._dirichlet:entropy() end

-- ---- Exponential ----

--- Exponential(rate) (a number or tensor): values in [0, inf)
local Exponential = class("Exponential")
Exponential._keywords = { "rate" }
Exponential._params = { "rate" }
function Exponential.new(rate, opts) return rated(Exponential, rate, opts, positive, POSITIVE, true) end
function Exponential._lazy.mean(d) return d.rate:reciprocal() end
function Exponential._lazy.mode(d) return wick.zeros_like(d.rate) end
function Exponential._lazy.stddev(d) return d.rate:reciprocal() end
function Exponential._lazy.variance(d) return d.rate ^ -2 end
--- d:rsample([sample_shape]): exponential_ draws of rate 1 / rate
function Exponential:rsample(sample_shape)
  local shape = shape_of(sample_shape, self.batch_shape, "Exponential:rsample")
  local e = wick.empty(shape, { dtype = self.rate.dtype, device = self.rate.device }):exponential_()
  return e / self.rate
end
Exponential.sample = sample_of
function Exponential:log_prob(value)
  value = value_in(self, "Exponential:log_prob", value, self.rate, NONNEGATIVE, nonnegative)
  return self.rate:log() - self.rate * value
end
function Exponential:entropy() return 1 - self.rate:log() end
function Exponential:cdf(value)
  value = value_in(self, "Exponential:cdf", value, self.rate, NONNEGATIVE, nonnegative)
  return 1 - (-self.rate * value):exp()
end
function Exponential:icdf(value)
  value = param(value, "Exponential:icdf", "value", self.rate)
  return -(-value):log1p() / self.rate
end

-- ---- Laplace ----

--- Laplace(loc, scale) (numbers or tensors, broadcast)
local Laplace = class("Laplace")
Laplace._keywords = { "loc", "scale" }
Laplace._params = { "loc", "scale" }
function Laplace.new(loc, scale, opts) return located(Laplace, loc, scale, opts) end
function Laplace._lazy.mean(d) return d.loc end
function Laplace._lazy.mode(d) return d.loc end
function Laplace._lazy.variance(d) return 2 * d.scale ^ 2 end
function Laplace._lazy.stddev(d) return d.scale * math.sqrt(2) end
--- d:rsample([sample_shape]): loc - scale sign(u) log1p(-|u|), u uniform in [eps - 1, 1)
function Laplace:rsample(sample_shape)
  local shape = shape_of(sample_shape, self.batch_shape, "Laplace:rsample")
  local eps = wick.finfo(self.loc.dtype).eps
  local u = wick.empty(shape, { dtype = self.loc.dtype, device = self.loc.device }):uniform_(eps - 1, 1)
  return self.loc - self.scale * u:sign() * (-u:abs()):log1p()
end
Laplace.sample = sample_of
function Laplace:log_prob(value)
  value = value_in(self, "Laplace:log_prob", value, self.loc, "Real()", not_nan)
  return -(2 * self.scale):log() - (value - self.loc):abs() / self.scale
end
function Laplace:entropy() return 1 + (2 * self.scale):log() end
function Laplace:cdf(value)
  value = value_in(self, "Laplace:cdf", value, self.loc, "Real()", not_nan)
  local z = value - self.loc
  return 0.5 - 0.5 * z:sign() * (-z:abs() / self.scale):expm1()
end
function Laplace:icdf(value)
  value = param(value, "Laplace:icdf", "value", self.loc)
  local term = value - 0.5
  return self.loc - self.scale * term:sign() * (-2 * term:abs()):log1p()
end

-- ---- StudentT ----

--- StudentT(df, [loc = 0, [scale = 1]]) (numbers or tensors, broadcast)
local StudentT = class("StudentT")
StudentT._keywords = { "df", "loc", "scale" }
StudentT._params = { "df", "loc", "scale" }
function StudentT.new(df, loc, scale, opts)
  local fn = "StudentT"
  if type(loc) == "table" and not is_tensor(loc) then loc, scale, opts = nil, nil, loc end
  if type(scale) == "table" and not is_tensor(scale) then scale, opts = nil, scale end
  local d = setmetatable({}, StudentT)
  d.df, d.loc, d.scale = n_params(fn, { df, loc or 0, scale or 1 }, { "df", "loc", "scale" }, opts)
  if validating(d, opts) then
    check_param(d, "df", positive(d.df), POSITIVE)
    check_param(d, "loc", not_nan(d.loc), "Real()")
    check_param(d, "scale", positive(d.scale), POSITIVE)
  end
  d._chi2 = Gamma.new(d.df * 0.5, wick.full_like(d.df, 0.5), { validate_args = false }) -- PyTorch's Chi2(df)
  d.batch_shape, d.event_shape = d.df:size(), Size()
  d.has_rsample = true
  return d
end
function StudentT._lazy.mean(d) return wick.where(d.df:le(1), 0 / 0, d.loc) end
function StudentT._lazy.mode(d) return d.loc end
function StudentT._lazy.variance(d)
  local df = d.df
  local v = wick.where(df:gt(2), d.scale ^ 2 * df / (df - 2), math.huge)
  return wick.where(df:le(1), 0 / 0, v)
end
function StudentT._lazy.stddev(d) return d.variance:sqrt() end
--- d:rsample([sample_shape]): loc + scale X / sqrt(Z / df), X standard normal, Z a Chi2(df) rsample
function StudentT:rsample(sample_shape)
  local shape = shape_of(sample_shape, self.batch_shape, "StudentT:rsample")
  local X = wick.randn(shape, { dtype = self.df.dtype, device = self.df.device })
  local Z = self._chi2:rsample(sample_shape)
  return self.loc + self.scale * (X * (Z / self.df):rsqrt())
end
StudentT.sample = sample_of
function StudentT:log_prob(value)
  value = value_in(self, "StudentT:log_prob", value, self.loc, "Real()", not_nan)
  local df = self.df
  local y = (value - self.loc) / self.scale
  local Z = self.scale:log() + 0.5 * df:log() + 0.5 * math.log(math.pi) + (0.5 * df):lgamma()
    - (0.5 * (df + 1)):lgamma()
  return -0.5 * (df + 1) * (y ^ 2 / df):log1p() - Z
end
local LGAMMA_HALF = 0.5 * math.log(math.pi)
function StudentT:entropy()
  local df = self.df
  local lbeta = (0.5 * df):lgamma() + LGAMMA_HALF - (0.5 * (df + 1)):lgamma()
  return self.scale:log() + 0.5 * (df + 1) * ((0.5 * (df + 1)):digamma() - (0.5 * df):digamma())
    + 0.5 * df:log() + lbeta
end

-- ---- LogNormal ----

--- LogNormal(loc, scale): exp of a Normal(loc, scale) (d.base_dist), values in (0, inf)
local LogNormal = class("LogNormal")
LogNormal._keywords = { "loc", "scale" }
LogNormal._params = { "loc", "scale" }
function LogNormal.new(loc, scale, opts)
  local fn = "LogNormal"
  local d = setmetatable({}, LogNormal)
  local validate = validating(d, opts)
  local ok, base = pcall(Normal.new, loc, scale, opts)
  if not ok then -- the same check, named for this class at the caller's line
    check.fail(fn, "%s", (tostring(base):gsub("^.-Normal: ", "")))
  end
  d.base_dist = base
  d.loc, d.scale = base.loc, base.scale
  rawset(d, "_validate_args", validate)
  d.batch_shape, d.event_shape = base.batch_shape, Size()
  d.has_rsample = true
  return d
end
function LogNormal._lazy.mean(d) return (d.loc + d.scale ^ 2 / 2):exp() end
function LogNormal._lazy.mode(d) return (d.loc - d.scale ^ 2):exp() end
function LogNormal._lazy.variance(d)
  local s2 = d.scale ^ 2
  return s2:expm1() * (2 * d.loc + s2):exp()
end
function LogNormal._lazy.stddev(d) return d.variance:sqrt() end
--- d:rsample([sample_shape]): exp of the Normal's rsample
function LogNormal:rsample(sample_shape)
  shape_of(sample_shape, {}, "LogNormal:rsample")
  return self.base_dist:rsample(sample_shape):exp()
end
LogNormal.sample = sample_of
function LogNormal:log_prob(value)
  value = value_in(self, "LogNormal:log_prob", value, self.loc, POSITIVE, positive)
  local x = value:log()
  -- the base's log_prob without its own support check (log of a positive value is real)
  return -((x - self.loc) ^ 2) / (2 * self.scale ^ 2) - self.scale:log() - LOG_SQRT_2PI - x
end
function LogNormal:entropy() return self.base_dist:entropy() + self.loc end
--- d:cdf(x), d:icdf(p): the base Normal's through the log and the exp (PyTorch's TransformedDistribution)
function LogNormal:cdf(value)
  value = value_in(self, "LogNormal:cdf", value, self.loc, POSITIVE, positive)
  return ((value:log() - self.loc) / (self.scale * math.sqrt(2))):erf():add(1):mul(0.5)
end
function LogNormal:icdf(value) return self.base_dist:icdf(value):exp() end

-- ---- Poisson ----

local NONNEGATIVE_INTEGER = "IntegerGreaterThan(lower_bound=0)"
local function nonnegative_integer(v) return v:ge(0):logical_and(v:eq(v:floor())) end

--- Poisson(rate) (a number or tensor): counts 0, 1, 2, ...
local Poisson = class("Poisson")
Poisson._keywords = { "rate" }
Poisson._params = { "rate" }
function Poisson.new(rate, opts) return rated(Poisson, rate, opts, nonnegative, NONNEGATIVE, false) end
function Poisson._lazy.mean(d) return d.rate end
function Poisson._lazy.mode(d) return d.rate:floor() end
function Poisson._lazy.variance(d) return d.rate end
function Poisson._lazy.stddev(d) return d.rate:sqrt() end
function Poisson:sample(sample_shape)
  local shape = shape_of(sample_shape, self.batch_shape, "Poisson:sample")
  return wick.no_grad(function() return wick.poisson(self.rate:expand(shape)) end)
end
function Poisson:log_prob(value)
  value = value_in(self, "Poisson:log_prob", value, self.rate, NONNEGATIVE_INTEGER, nonnegative_integer)
  local rate, v = wick.broadcast_tensors(self.rate, value)
  return wick.xlogy(v, rate) - rate - (v + 1):lgamma()
end

-- ---- Binomial ----

--- Binomial([total_count = 1[, probs]]) or (total_count, {probs =} or {logits =}): successes of
--- probability probs in total_count trials
local Binomial = class("Binomial")
Binomial._params = { "total_count", "probs" }
-- Binomial{total_count =, probs =} and NegativeBinomial{total_count =, logits =}: every argument by name
local function count_keywords(total_count, probs, opts)
  if type(total_count) ~= "table" or is_tensor(total_count) then return total_count, probs, opts end
  local o = total_count
  return o.total_count, nil, { probs = o.probs, logits = o.logits, validate_args = o.validate_args }
end
function Binomial.new(total_count, probs, opts)
  local fn = "Binomial"
  total_count, probs, opts = count_keywords(total_count, probs, opts)
  if total_count == nil then total_count = 1 end
  local logits
  probs, logits, opts = probs_or_logits(fn, probs, opts, "tensor|number")
  local d = setmetatable({}, Binomial)
  local validate = validating(d, opts)
  d.total_count = binary_params(d, fn, probs, logits, validate, in_unit_interval, UNIT_INTERVAL, total_count, "total_count")
  if validate then check_param(d, "total_count", nonnegative_integer(d.total_count), NONNEGATIVE_INTEGER) end
  d.batch_shape, d.event_shape = d.probs:size(), Size()
  d.has_rsample = false
  return d
end
function Binomial._lazy.mean(d) return d.total_count * d.probs end
function Binomial._lazy.mode(d) return ((d.total_count + 1) * d.probs):floor():minimum(d.total_count) end
function Binomial._lazy.variance(d) return d.total_count * d.probs * (1 - d.probs) end
function Binomial._lazy.stddev(d) return d.variance:sqrt() end
function Binomial:sample(sample_shape)
  local shape = shape_of(sample_shape, self.batch_shape, "Binomial:sample")
  return wick.no_grad(function() return M._binomial(self.total_count:expand(shape), self.probs:expand(shape)) end)
end
function Binomial:log_prob(value)
  value = value_in(self, "Binomial:log_prob", value, self.logits, "IntegerInterval(lower_bound=0, upper_bound=total_count)",
    function(v) return nonnegative_integer(v):logical_and(v:le(self.total_count)) end)
  local n, l, k = wick.broadcast_tensors(self.total_count, self.logits, value)
  -- PyTorch's stable form: n max(l, 0) + n log1p(exp(-|l|)) is n log(1 + exp(l))
  local normalize = n * (l:clamp(0, math.huge) + l - l:clamp(-math.huge, 0)) / 2 + n * (-l:abs()):exp():log1p()
    - (n + 1):lgamma()
  return k * l - (k + 1):lgamma() - (n - k + 1):lgamma() - normalize
end
--- d:enumerate_support([expand = true]): 0 .. total_count along a new first dim (one total_count for all)
Binomial.has_enumerate_support = true
function Binomial:enumerate_support(expand)
  local n = self.total_count:max():item()
  if self.total_count:min():item() ~= n then
    check.fail("Binomial:enumerate_support", "Inhomogeneous total count not supported by `enumerate_support`.")
  end
  return support_of(self, wick.arange(0, n + 1, { dtype = self.probs.dtype, device = self.probs.device }), expand)
end
function Binomial:entropy()
  local support = self:enumerate_support(false)
  local lp = self:log_prob(support)
  return -(lp:exp() * lp):sum(1)
end

-- ---- NegativeBinomial ----

--- NegativeBinomial(total_count, probs) or (total_count, {probs =} or {logits =}): the number of
--- successes (each of probability probs) before total_count failures
local NegativeBinomial = class("NegativeBinomial")
NegativeBinomial._params = { "total_count", "probs" }
function NegativeBinomial.new(total_count, probs, opts)
  local fn = "NegativeBinomial"
  total_count, probs, opts = count_keywords(total_count, probs, opts)
  local logits
  probs, logits, opts = probs_or_logits(fn, probs, opts, "tensor|number")
  local d = setmetatable({}, NegativeBinomial)
  local validate = validating(d, opts)
  d.total_count = binary_params(d, fn, probs, logits, validate, function(p) return p:ge(0):logical_and(p:lt(1)) end,
    "HalfOpenInterval(lower_bound=0.0, upper_bound=1.0)", total_count, "total_count")
  if validate then check_param(d, "total_count", nonnegative(d.total_count), NONNEGATIVE) end
  d.batch_shape, d.event_shape = d.logits:size(), Size()
  d.has_rsample = false
  return d
end
function NegativeBinomial._lazy.mean(d) return d.total_count * d.logits:exp() end
function NegativeBinomial._lazy.mode(d) return ((d.total_count - 1) * d.logits:exp()):floor():clamp(0, math.huge) end
function NegativeBinomial._lazy.variance(d) return d.mean / (-d.logits):sigmoid() end
function NegativeBinomial._lazy.stddev(d) return d.variance:sqrt() end
--- d:sample([sample_shape]): Poisson draws of Gamma(total_count, exp(-logits)) rates, as PyTorch's
function NegativeBinomial:sample(sample_shape)
  local shape = shape_of(sample_shape, self.batch_shape, "NegativeBinomial:sample")
  return wick.no_grad(function()
    local rate = M.Gamma(self.total_count, (-self.logits):exp(), { validate_args = false }):sample(sample_shape)
    return wick.poisson(rate:expand(shape))
  end)
end
function NegativeBinomial:log_prob(value)
  value = value_in(self, "NegativeBinomial:log_prob", value, self.logits, NONNEGATIVE_INTEGER, nonnegative_integer)
  local F = wick.nn.functional
  local n, l, v = wick.broadcast_tensors(self.total_count, self.logits, value)
  local log_unnormalized = n * F.logsigmoid(-l) + v * F.logsigmoid(l)
  local log_normalization = -(n + v):lgamma() + (v + 1):lgamma() + n:lgamma()
  -- total_count + value == 0: the probability is 1 (lgamma(0) is inf on both sides)
  log_normalization = wick.where((n + v):eq(0), 0, log_normalization)
  return log_unnormalized - log_normalization
end

-- ---- Cauchy, HalfNormal, Gumbel, Weibull, Chi2, Geometric ----

--- Cauchy(loc, scale): rsample loc + scale tan(pi (u - 1/2)); no mean or variance (NaN and inf, as PyTorch's)
local Cauchy = class("Cauchy")
Cauchy._keywords = { "loc", "scale" }
Cauchy._params = { "loc", "scale" }
function Cauchy.new(loc, scale, opts) return located(Cauchy, loc, scale, opts) end
function Cauchy._lazy.mean(d) return wick.full_like(d.loc, 0 / 0) end
function Cauchy._lazy.mode(d) return d.loc end
function Cauchy._lazy.variance(d) return wick.full_like(d.loc, math.huge) end
function Cauchy._lazy.stddev(d) return d.variance end
function Cauchy:rsample(sample_shape)
  local shape = shape_of(sample_shape, self.batch_shape, "Cauchy:rsample")
  local u = wick.rand(shape, { dtype = self.loc.dtype, device = self.loc.device })
  return self.loc + self.scale * ((u - 0.5) * math.pi):tan()
end
Cauchy.sample = sample_of
function Cauchy:log_prob(value)
  value = value_in(self, "Cauchy:log_prob", value, self.loc, "Real()", not_nan)
  return -math.log(math.pi) - self.scale:log() - (((value - self.loc) / self.scale) ^ 2):log1p()
end
function Cauchy:cdf(value)
  value = value_in(self, "Cauchy:cdf", value, self.loc, "Real()", not_nan)
  return ((value - self.loc) / self.scale):atan() / math.pi + 0.5
end
function Cauchy:icdf(value)
  value = param(value, "Cauchy:icdf", "value", self.loc)
  return ((value - 0.5) * math.pi):tan() * self.scale + self.loc
end
function Cauchy:entropy() return math.log(4 * math.pi) + self.scale:log() end

-- HalfNormal and HalfCauchy: |x| for x of the base distribution (loc 0, this scale), values in
-- [0, inf): the density doubled, cdf 2 F - 1, icdf F^-1((p + 1) / 2), entropy the base's minus log 2
local function half_class(name, Base)
  local C = class(name)
  C._keywords, C._params = { "scale" }, { "scale" }
  function C.new(scale, opts)
    check.options(opts, name, { validate_args = "boolean" })
    local d = setmetatable({}, C)
    d.scale = param(scale, name, "scale")
    if validating(d, opts) then check_param(d, "scale", positive(d.scale), POSITIVE) end
    d.base_dist = Base.new(wick.zeros_like(d.scale), d.scale, { validate_args = false })
    d.batch_shape, d.event_shape = d.scale:size(), Size()
    d.has_rsample = true
    return d
  end
  function C._lazy.mode(d) return wick.zeros_like(d.scale) end
  function C._lazy.stddev(d) return d.variance:sqrt() end
  function C:rsample(sample_shape) return self.base_dist:rsample(sample_shape):abs() end
  C.sample = sample_of
  function C:log_prob(value)
    value = value_in(self, name .. ":log_prob", value, self.scale, NONNEGATIVE, nonnegative)
    local lp = self.base_dist:log_prob(value) + math.log(2)
    return wick.where(value:ge(0), lp, -math.huge)
  end
  function C:cdf(value)
    value = value_in(self, name .. ":cdf", value, self.scale, NONNEGATIVE, nonnegative)
    return 2 * self.base_dist:cdf(value) - 1
  end
  function C:icdf(prob)
    prob = param(prob, name .. ":icdf", "value", self.scale)
    return self.base_dist:icdf((prob + 1) / 2)
  end
  function C:entropy() return self.base_dist:entropy() - math.log(2) end
  return C
end

--- HalfNormal(scale): |x| for x ~ Normal(0, scale)
local HalfNormal = half_class("HalfNormal", Normal)
function HalfNormal._lazy.mean(d) return d.scale * math.sqrt(2 / math.pi) end
function HalfNormal._lazy.variance(d) return d.scale ^ 2 * (1 - 2 / math.pi) end

--- Gumbel(loc, scale): loc - scale log(-log u)
local Gumbel = class("Gumbel")
Gumbel._keywords = { "loc", "scale" }
Gumbel._params = { "loc", "scale" }
local EULER_GAMMA = 0.57721566490153286061
function Gumbel.new(loc, scale, opts) return located(Gumbel, loc, scale, opts) end
function Gumbel._lazy.mean(d) return d.loc + d.scale * EULER_GAMMA end
function Gumbel._lazy.mode(d) return d.loc end
function Gumbel._lazy.variance(d) return d.scale ^ 2 * (math.pi ^ 2 / 6) end
function Gumbel._lazy.stddev(d) return d.variance:sqrt() end
function Gumbel:rsample(sample_shape)
  local shape = shape_of(sample_shape, self.batch_shape, "Gumbel:rsample")
  local fi = wick.finfo(self.loc.dtype)
  local u = wick.empty(shape, { dtype = self.loc.dtype, device = self.loc.device }):uniform_(fi.tiny, 1 - fi.eps)
  return self.loc - self.scale * (-u:log()):log()
end
Gumbel.sample = sample_of
function Gumbel:log_prob(value)
  value = value_in(self, "Gumbel:log_prob", value, self.loc, "Real()", not_nan)
  local z = (self.loc - value) / self.scale
  return (z - z:exp()) - self.scale:log()
end
function Gumbel:cdf(value)
  value = value_in(self, "Gumbel:cdf", value, self.loc, "Real()", not_nan)
  return (-(-(value - self.loc) / self.scale):exp()):exp()
end
function Gumbel:entropy() return self.scale:log() + (1 + EULER_GAMMA) end
--- d:icdf(p): loc - scale log(-log p)
function Gumbel:icdf(value)
  value = param(value, "Gumbel:icdf", "value", self.loc)
  return self.loc - self.scale * (-value:log()):log()
end

--- Weibull(scale, concentration): scale (-log u)^(1/concentration); values in (0, inf)
local Weibull = class("Weibull")
Weibull._keywords = { "scale", "concentration" }
Weibull._params = { "scale", "concentration" }
function Weibull.new(scale, concentration, opts)
  return positive_pair(Weibull, scale, concentration, "scale", "concentration", opts)
end
function Weibull._lazy.mean(d) return d.scale * (1 + d.concentration:reciprocal()):lgamma():exp() end
function Weibull._lazy.mode(d)
  local k = d.concentration
  return d.scale * ((k - 1) / k) ^ k:reciprocal()
end
function Weibull._lazy.variance(d)
  local k = d.concentration
  return d.scale ^ 2 * ((1 + 2 / k):lgamma():exp() - (1 + k:reciprocal()):lgamma():exp() ^ 2)
end
function Weibull._lazy.stddev(d) return d.variance:sqrt() end
function Weibull:rsample(sample_shape)
  local shape = shape_of(sample_shape, self.batch_shape, "Weibull:rsample")
  local fi = wick.finfo(self.scale.dtype)
  local u = wick.empty(shape, { dtype = self.scale.dtype, device = self.scale.device }):uniform_(fi.tiny, 1)
  return self.scale * (-u:log()) ^ self.concentration:reciprocal()
end
Weibull.sample = sample_of
function Weibull:log_prob(value)
  value = value_in(self, "Weibull:log_prob", value, self.scale, POSITIVE, positive)
  local k, z = self.concentration, value / self.scale
  return k:log() - self.scale:log() + (k - 1) * z:log() - z ^ k
end
function Weibull:cdf(value)
  value = value_in(self, "Weibull:cdf", value, self.scale, POSITIVE, positive)
  return -(-((value / self.scale) ^ self.concentration)):expm1()
end
--- d:icdf(p): scale (-log(1 - p))^(1 / concentration)
function Weibull:icdf(value)
  value = param(value, "Weibull:icdf", "value", self.scale)
  return self.scale * (-(-value):log1p()) ^ self.concentration:reciprocal()
end
function Weibull:entropy()
  local k = self.concentration
  return EULER_GAMMA * (1 - k:reciprocal()) + (self.scale / k):log() + 1
end

--- Chi2(df): Gamma(df / 2, 1 / 2)
local Chi2 = class("Chi2")
Chi2._keywords = { "df" }
Chi2._params = { "df" }
function Chi2.new(df, opts)
  check.options(opts, "Chi2", { validate_args = "boolean" })
  local d = setmetatable({}, Chi2)
  d.df = param(df, "Chi2", "df")
  if validating(d, opts) then check_param(d, "df", positive(d.df), POSITIVE) end
  d._gamma = Gamma.new(d.df * 0.5, wick.full_like(d.df, 0.5), { validate_args = false })
  d.batch_shape, d.event_shape = d.df:size(), Size()
  d.has_rsample = true
  return d
end
for _, k in ipairs({ "mean", "mode", "variance", "stddev" }) do Chi2._lazy[k] = function(d) return d._gamma[k] end end
function Chi2:rsample(sample_shape) return self._gamma:rsample(sample_shape) end
Chi2.sample = sample_of
function Chi2:log_prob(value) -- (its values checked as PyTorch's Chi2, a Gamma, checks them)
  value = value_in(self, "Chi2:log_prob", value, self.df, "GreaterThanEq(lower_bound=0.0)", function(v) return v:ge(0) end)
  return self._gamma:log_prob(value)
end
function Chi2:entropy() return self._gamma:entropy() end
function Chi2:cdf(value)
  value = value_in(self, "Chi2:cdf", value, self.df, "GreaterThanEq(lower_bound=0.0)", function(v) return v:ge(0) end)
  return self._gamma:cdf(value)
end

--- Geometric(probs) or {logits = l}: the failures before the first success, 0, 1, ...
local Geometric = class("Geometric")
Geometric._params = { "probs" }
function Geometric.new(probs, opts)
  local fn = "Geometric"
  local logits
  probs, logits, opts = probs_or_logits(fn, probs, opts, "number|tensor")
  local d = setmetatable({}, Geometric)
  local validate = validating(d, opts)
  binary_params(d, fn, probs, logits, validate, function(p) return p:gt(0):logical_and(p:le(1)) end,
    "Interval(lower_bound=0.0, upper_bound=1.0)")
  d.batch_shape, d.event_shape = d.probs:size(), Size()
  d.has_rsample = false
  return d
end
function Geometric._lazy.mean(d) return d.probs:reciprocal() - 1 end
function Geometric._lazy.mode(d) return wick.zeros_like(d.probs) end
function Geometric._lazy.variance(d) return (d.probs:reciprocal() - 1) / d.probs end
function Geometric._lazy.stddev(d) return d.variance:sqrt() end
function Geometric:sample(sample_shape)
  local shape = shape_of(sample_shape, self.batch_shape, "Geometric:sample")
  return wick.no_grad(function()
    local fi = wick.finfo(self.probs.dtype)
    local u = wick.empty(shape, { dtype = self.probs.dtype, device = self.probs.device }):uniform_(fi.tiny, 1)
    return (u:log() / (-self.probs):log1p()):floor()
  end)
end
function Geometric:log_prob(value)
  value = value_in(self, "Geometric:log_prob", value, self.probs, NONNEGATIVE_INTEGER, nonnegative_integer)
  local p = self.probs
  local value_p = wick.where(p:eq(1):logical_and(value:eq(0)), 0, value * (-p):log1p())
  return value_p + p:clamp(wick.finfo(p.dtype).tiny, 1):log()
end
function Geometric:entropy()
  local p = clamp_probs(self.probs)
  return wick.nn.functional.binary_cross_entropy(p, p, { reduction = "none" }) / p
end

-- ---- TransformedDistribution, MixtureSameFamily, the relaxed ones ----



--- TransformedDistribution(base, transforms): the base's values pushed through transforms (one
--- transform or a list, wick.distributions.transforms), with PyTorch's shapes and log-densities
local TransformedDistribution = class("TransformedDistribution")
TransformedDistribution._keywords = { "base_distribution", "transforms" }
function TransformedDistribution.new(base, transforms, opts)
  local fn = "TransformedDistribution"
  if not is_distribution(base) then check.expected(fn, "base_distribution", "a distribution", base) end
  if T._is_transform(transforms) then transforms = { transforms } end
  check.table(transforms, fn, "transforms")
  for i, t in ipairs(transforms) do
    if not T._is_transform(t) then check.expected(fn, "transforms[" .. i .. "]", "a transform", t) end
  end
  opts = check.options(opts, fn, { validate_args = "boolean" })
  local d = setmetatable({}, TransformedDistribution)
  validating(d, opts)
  d.transforms = { unpack(transforms) }
  local base_shape, base_event_dim = concat(base.batch_shape, base.event_shape), #base.event_shape
  local t = T.ComposeTransform(d.transforms)
  if #base_shape < t.domain.event_dim then
    check.fail(fn, "base_distribution needs to have shape with size at least %d, but got %s.", t.domain.event_dim,
      tostring(base_shape))
  end
  local forward = t:forward_shape(base_shape)
  local expanded = t:inverse_shape(forward)
  -- leading batch dims the transforms' parameters add (AffineTransform(loc of shape (3)) on a
  -- scalar base): drawn as extra sample dims, as PyTorch's base.expand
  local extra = #expanded - #base_shape
  for i = 1, #base_shape do
    if extra < 0 or expanded[extra + i] ~= base_shape[i] then
      check.fail(fn, "the transforms broadcast the base's shape %s to %s within its own dims: give the base "
        .. "distribution parameters of the full shape", tostring(base_shape), tostring(expanded))
    end
  end
  d._extra = {}
  for i = 1, extra do d._extra[i] = expanded[i] end
  local reinterpreted = t.domain.event_dim - base_event_dim
  if reinterpreted > 0 then base = Independent.new(base, reinterpreted) end
  d.base_dist = base
  local event_dim = t.codomain.event_dim + math.max(base_event_dim - t.domain.event_dim, 0)
  local batch, event = {}, {}
  for i = 1, #forward do
    if i <= #forward - event_dim then batch[#batch + 1] = forward[i] else event[#event + 1] = forward[i] end
  end
  d.batch_shape, d.event_shape = Size(batch), Size(event)
  d.has_rsample = base.has_rsample
  return d
end
local function transformed(d, x)
  for _, t in ipairs(d.transforms) do x = t(x) end
  return x
end
--- d:sample([sample_shape]), d:rsample([sample_shape]): the base's draws, transformed
function TransformedDistribution:sample(sample_shape)
  local shape = concat(shape_of(sample_shape, {}, "TransformedDistribution:sample"), self._extra)
  return wick.no_grad(function() return transformed(self, self.base_dist:sample(shape)) end)
end
function TransformedDistribution:rsample(sample_shape)
  local shape = concat(shape_of(sample_shape, {}, "TransformedDistribution:rsample"), self._extra)
  return transformed(self, self.base_dist:rsample(shape))
end
--- d:log_prob(value): the base's log_prob of the inverse, less each transform's log |det J|
function TransformedDistribution:log_prob(value)
  local fn = "TransformedDistribution:log_prob"
  local y = param(value, fn, "value")
  if self._validate_args then check_sample(self, fn, y, "the last transform's codomain", function(v) return v:eq(v) end) end
  local event_dim, lp = #self.event_shape, 0
  for i = #self.transforms, 1, -1 do
    local t = self.transforms[i]
    local x = t.inv(y)
    event_dim = event_dim + t.domain.event_dim - t.codomain.event_dim
    lp = lp - T._sum_rightmost(t:log_abs_det_jacobian(x, y), event_dim - t.domain.event_dim)
    y = x
  end
  return lp + T._sum_rightmost(self.base_dist:log_prob(y), event_dim - #self.base_dist.event_shape)
end
-- a cdf of the base made the transformed one's: 1 - F where the transforms decrease
local function monotonize(d, value)
  local sign = 1
  for _, t in ipairs(d.transforms) do sign = sign * t.sign end
  if sign == 1 then return value end
  return sign * (value - 0.5) + 0.5
end
--- d:cdf(value), d:icdf(p): through the base's, for monotone transforms
function TransformedDistribution:cdf(value)
  value = param(value, "TransformedDistribution:cdf", "value")
  for i = #self.transforms, 1, -1 do value = self.transforms[i].inv(value) end
  return monotonize(self, self.base_dist:cdf(value))
end
function TransformedDistribution:icdf(value)
  value = param(value, "TransformedDistribution:icdf", "value")
  return transformed(self, self.base_dist:icdf(monotonize(self, value)))
end

--- MixtureSameFamily(mixture_distribution, component_distribution): a Categorical over the
--- component distribution's rightmost batch dim
local MixtureSameFamily = class("MixtureSameFamily")
MixtureSameFamily._keywords = { "mixture_distribution", "component_distribution" }
function MixtureSameFamily.new(mixture, component, opts)
  local fn = "MixtureSameFamily"
  if getmetatable(mixture) ~= Categorical then
    check.fail(fn, "The Mixture distribution needs to be an instance of torch.distributions.Categorical, got %s",
      check.describe(mixture))
  end
  if not is_distribution(component) then
    check.fail(fn, "The Component distribution need to be an instance of torch.distributions.Distribution, got %s",
      check.describe(component))
  end
  opts = check.options(opts, fn, { validate_args = "boolean" })
  local mdbs, cdbs = mixture.batch_shape, component.batch_shape
  if #cdbs < 1 then check.fail(fn, "component_distribution must have at least one batch dimension") end
  local cb = {}
  for i = 1, #cdbs - 1 do cb[i] = cdbs[i] end
  for i = 1, math.min(#mdbs, #cb) do
    local a, b = mdbs[#mdbs - i + 1], cb[#cb - i + 1]
    if a ~= 1 and b ~= 1 and a ~= b then
      check.fail(fn, "`mixture_distribution.batch_shape` (%s) is not compatible with "
        .. "`component_distribution.batch_shape`(%s)", tostring(mdbs), tostring(Size(cb)))
    end
  end
  local km, kc = mixture._num_events, cdbs[#cdbs]
  if km ~= kc then
    check.fail(fn, "`mixture_distribution component` (%d) does not equal `component_distribution.batch_shape[-1]` (%d)",
      km, kc)
  end
  local d = setmetatable({}, MixtureSameFamily)
  validating(d, opts)
  d.mixture_distribution, d.component_distribution = mixture, component
  d._event_ndims = #component.event_shape
  d.batch_shape, d.event_shape = Size(cb), component.event_shape
  d.has_rsample = false
  return d
end
-- x with a size-1 dim where the components are
function MixtureSameFamily:_pad(x) return x:unsqueeze(-1 - self._event_ndims) end
-- the mixture's probs shaped to multiply the components' (PyTorch's _pad_mixture_dimensions)
function MixtureSameFamily:_pad_mixture_dimensions(x)
  local cat_ndims = #self.mixture_distribution.batch_shape
  local pad = cat_ndims == 1 and 0 or #self.batch_shape - cat_ndims
  local shape = x:size()
  local out = {}
  for i = 1, #shape - 1 do out[#out + 1] = shape[i] end
  for _ = 1, pad do out[#out + 1] = 1 end
  out[#out + 1] = shape[#shape]
  for _ = 1, self._event_ndims do out[#out + 1] = 1 end
  return x:reshape(out)
end
function MixtureSameFamily._lazy.mean(d)
  local probs = d:_pad_mixture_dimensions(d.mixture_distribution.probs)
  return (probs * d.component_distribution.mean):sum(-1 - d._event_ndims)
end
function MixtureSameFamily._lazy.variance(d)
  local probs = d:_pad_mixture_dimensions(d.mixture_distribution.probs)
  local c = d.component_distribution
  local mean_cond_var = (probs * c.variance):sum(-1 - d._event_ndims)
  local var_cond_mean = (probs * (c.mean - d:_pad(d.mean)) ^ 2):sum(-1 - d._event_ndims)
  return mean_cond_var + var_cond_mean
end
function MixtureSameFamily._lazy.stddev(d) return d.variance:sqrt() end
function MixtureSameFamily:log_prob(value)
  local x = self:_pad(param(value, "MixtureSameFamily:log_prob", "value"))
  local log_prob_x = self.component_distribution:log_prob(x)
  local log_mix_prob = self.mixture_distribution.logits:log_softmax(-1)
  return (log_prob_x + log_mix_prob):logsumexp(-1)
end
function MixtureSameFamily:cdf(value)
  local x = self:_pad(param(value, "MixtureSameFamily:cdf", "value"))
  return (self.component_distribution:cdf(x) * self.mixture_distribution.probs):sum(-1)
end
--- d:sample([sample_shape]): a component by the mixture's draw (no rsample, as PyTorch's)
function MixtureSameFamily:sample(sample_shape)
  local shape = shape_of(sample_shape, {}, "MixtureSameFamily:sample")
  return wick.no_grad(function()
    local es = self.event_shape
    local gather_dim = #shape + #self.batch_shape + 1
    local mix = self.mixture_distribution:sample(shape)
    local comp = self.component_distribution:sample(shape)
    local mix_shape = mix:size()
    local r, rep = {}, {}
    for i = 1, #mix_shape do r[i], rep[i] = mix_shape[i], 1 end
    for _ = 1, #es + 1 do r[#r + 1] = 1 end
    rep[#rep + 1] = 1
    for _, n in ipairs(es) do rep[#rep + 1] = n end
    local index = mix:reshape(r):repeat_tensor(rep)
    return comp:gather(gather_dim, index):squeeze(gather_dim)
  end)
end

--- LogitRelaxedBernoulli(temperature, probs) or (temperature, {logits = l}): logits of a relaxed Bernoulli
local LogitRelaxedBernoulli = class("LogitRelaxedBernoulli")
LogitRelaxedBernoulli._params = { "probs" }
LogitRelaxedBernoulli._keywords = { "temperature", "probs" } -- (TAPAS' RelaxedBernoulli(temperature=t, logits=l))
function LogitRelaxedBernoulli.new(temperature, probs, opts)
  local fn = "LogitRelaxedBernoulli"
  local logits
  probs, logits, opts = probs_or_logits(fn, probs, opts, "number|tensor")
  local d = setmetatable({}, LogitRelaxedBernoulli)
  local validate = validating(d, opts)
  binary_params(d, fn, probs, logits, validate, in_unit_interval, "Interval(lower_bound=0.0, upper_bound=1.0)")
  d.temperature = param(temperature, fn, "temperature", d.probs)
  d.batch_shape, d.event_shape = d.probs:size(), Size()
  d.has_rsample = true
  return d
end
function LogitRelaxedBernoulli:rsample(sample_shape)
  local shape = shape_of(sample_shape, self.batch_shape, "LogitRelaxedBernoulli:rsample")
  local probs = clamp_probs(self.probs:expand(shape))
  local u = clamp_probs(wick.rand(shape, { dtype = probs.dtype, device = probs.device }))
  return (u:log() - (-u):log1p() + probs:log() - (-probs):log1p()) / self.temperature
end
LogitRelaxedBernoulli.sample = sample_of
function LogitRelaxedBernoulli:log_prob(value)
  local logits, v = wick.broadcast_tensors(self.logits, param(value, "LogitRelaxedBernoulli:log_prob", "value",
    self.logits))
  local diff = logits - v * self.temperature
  return self.temperature:log() + diff - 2 * diff:exp():log1p()
end

--- ExpRelaxedCategorical(temperature, probs) or (temperature, {logits = l}): log of a relaxed one-hot draw
local ExpRelaxedCategorical = class("ExpRelaxedCategorical")
ExpRelaxedCategorical._params = { "probs" }
ExpRelaxedCategorical._keywords = { "temperature", "probs" } -- (TAPAS' RelaxedBernoulli(temperature=t, logits=l))
function ExpRelaxedCategorical.new(temperature, probs, opts)
  local fn = "ExpRelaxedCategorical"
  local logits
  probs, logits, opts = probs_or_logits(fn, probs, opts, "tensor")
  local d = setmetatable({}, ExpRelaxedCategorical)
  local c = categorical_of(fn, probs, logits, validating(d, opts))
  d._categorical, d.probs, d.logits = c, c.probs, c.logits
  d.temperature = param(temperature, fn, "temperature", c.probs)
  d.batch_shape, d.event_shape = concat(c.batch_shape, {}), Size({ c._num_events })
  d.has_rsample = true
  return d
end
function ExpRelaxedCategorical:rsample(sample_shape)
  local shape = shape_of(sample_shape, concat(self.batch_shape, self.event_shape), "ExpRelaxedCategorical:rsample")
  local u = clamp_probs(wick.rand(shape, { dtype = self.logits.dtype, device = self.logits.device }))
  local gumbels = -((-(u:log())):log())
  local scores = (self.logits + gumbels) / self.temperature
  return scores - scores:logsumexp(-1, true)
end
ExpRelaxedCategorical.sample = sample_of
function ExpRelaxedCategorical:log_prob(value)
  value = param(value, "ExpRelaxedCategorical:log_prob", "value", self.logits)
  local K = self.event_shape[1]
  local log_scale = wick.full_like(self.temperature, K):lgamma() - self.temperature:log() * -(K - 1)
  local score = self.logits - value * self.temperature
  score = (score - score:logsumexp(-1, true)):sum(-1)
  return score + log_scale
end

-- the options table of (temperature, probs, opts): probs' place when it holds one, else opts unless that is
-- PyTorch's positional logits
local function options_given(probs, opts)
  if type(probs) == "table" and not is_tensor(probs) then return probs end
  if type(opts) == "table" and not is_tensor(opts) then return opts end
  return nil
end
-- a TransformedDistribution of base by transforms, with class C's methods and these fields
local function transformed_of(C, base, transforms, opts, fields)
  local ok, d = pcall(TransformedDistribution.new, base, transforms, opts)
  if not ok then check.fail(C.__name, "%s", (tostring(d):gsub("^.-TransformedDistribution: ", ""))) end
  for k, v in pairs(fields) do d[k] = v end
  return setmetatable(d, C)
end
-- C's instances use TransformedDistribution's methods
local function as_transformed(C)
  for k, f in pairs(TransformedDistribution) do
    if type(f) == "function" and k ~= "new" and k:sub(1, 2) ~= "__" and rawget(C, k) == nil then C[k] = f end
  end
end

--- RelaxedBernoulli(temperature, probs) or (temperature, {logits = l}): sigmoid of a LogitRelaxedBernoulli
local RelaxedBernoulli = class("RelaxedBernoulli")
RelaxedBernoulli._params = { "probs" }
RelaxedBernoulli._keywords = { "temperature", "probs" } -- (TAPAS' RelaxedBernoulli(temperature=t, logits=l))
function RelaxedBernoulli.new(temperature, probs, opts)
  local keep = options_given(probs, opts) -- (PyTorch's positional (temperature, None, logits) too)
  local base = LogitRelaxedBernoulli.new(temperature, probs, opts)
  return transformed_of(RelaxedBernoulli, base, { T.SigmoidTransform() },
    { validate_args = keep and keep.validate_args },
    { temperature = base.temperature, probs = base.probs, logits = base.logits })
end
as_transformed(RelaxedBernoulli)

--- RelaxedOneHotCategorical(temperature, probs) or (temperature, {logits = l}): exp of an ExpRelaxedCategorical
local RelaxedOneHotCategorical = class("RelaxedOneHotCategorical")
RelaxedOneHotCategorical._params = { "probs" }
RelaxedOneHotCategorical._keywords = { "temperature", "probs" } -- (TAPAS' RelaxedBernoulli(temperature=t, logits=l))
function RelaxedOneHotCategorical.new(temperature, probs, opts)
  local keep = options_given(probs, opts)
  local base = ExpRelaxedCategorical.new(temperature, probs, opts)
  return transformed_of(RelaxedOneHotCategorical, base, { T.ExpTransform() },
    { validate_args = keep and keep.validate_args },
    { temperature = base.temperature, probs = base.probs, logits = base.logits })
end
as_transformed(RelaxedOneHotCategorical)

-- ---- Multinomial, OneHotCategoricalStraightThrough, HalfCauchy, InverseGamma, Pareto, Kumaraswamy,
-- FisherSnedecor, LogisticNormal ----

--- Multinomial([total_count = 1[, probs]]) or (total_count, {probs =} or {logits =}): the counts of
--- each of the last dim's categories in total_count draws (one Lua integer total_count, as PyTorch's)
local Multinomial = class("Multinomial")
Multinomial._params = { "probs" }
function Multinomial.new(total_count, probs, opts)
  local fn = "Multinomial"
  total_count, probs, opts = count_keywords(total_count, probs, opts)
  if total_count == nil then total_count = 1 end
  if type(total_count) ~= "number" or total_count ~= math.floor(total_count) or total_count == math.huge then
    check.fail(fn, "inhomogeneous total_count is not supported (total_count must be one integer, got %s)",
      check.describe(total_count))
  end
  if total_count < 0 then
    check.fail(fn, "expected parameter total_count (%d) to satisfy the constraint %s, but found invalid values",
      total_count, NONNEGATIVE_INTEGER)
  end
  local logits
  probs, logits, opts = probs_or_logits(fn, probs, opts, "tensor")
  local d = setmetatable({}, Multinomial)
  local c = categorical_of(fn, probs, logits, validating(d, opts))
  d.total_count = total_count
  d._categorical, d.probs, d.logits = c, c.probs, c.logits
  d.batch_shape = concat(c.batch_shape, {})
  d.event_shape = Size({ c._num_events })
  d.has_rsample = false
  return d
end
function Multinomial._lazy.mean(d) return d.probs * d.total_count end
function Multinomial._lazy.variance(d) return d.total_count * d.probs * (1 - d.probs) end
function Multinomial._lazy.stddev(d) return d.variance:sqrt() end
function Multinomial._lazy.param_shape(d) return d.probs:size() end
function Multinomial._lazy._binomial(d)
  return Binomial.new(d.total_count, d.probs, { validate_args = false })
end
--- d:sample([sample_shape]): counts (in probs' dtype) of sample_shape .. batch_shape .. {k}, each
--- row summing to total_count: total_count Categorical draws, counted
function Multinomial:sample(sample_shape)
  local shape = shape_of(sample_shape, {}, "Multinomial:sample")
  local full = concat(concat(shape, self.batch_shape), self.event_shape)
  return wick.no_grad(function()
    local counts = wick.zeros(full, { dtype = "int64", device = self.probs.device })
    if self.total_count > 0 and counts:numel() > 0 then
      -- (the draws' memory asked for first: an error that says so where there is not enough,
      -- before the generator runs; an empty tensor's pages are not touched)
      local ok, e = pcall(wick.empty, { self.total_count, counts:numel() / self.event_shape[1] },
        { dtype = "int64", device = self.probs.device })
      if not ok then check.fail("Multinomial:sample", "%.0f draws: %s", self.total_count, (tostring(e):gsub("^.-:%d+: ", ""))) end
      local idx = self._categorical:sample(concat({ self.total_count }, shape)) -- (n, sample.., batch..)
      local perm = {}
      for i = 2, idx:dim() do perm[#perm + 1] = i end
      perm[#perm + 1] = 1
      idx = idx:permute(perm):contiguous()
      counts:scatter_add_(-1, idx, wick.ones_like(idx))
    end
    return counts:to(self.probs.dtype)
  end)
end
--- d:log_prob(value): log n! - sum log x_i! + sum x_i log p_i, n the row's sum (any count in each row)
function Multinomial:log_prob(value)
  local fn = "Multinomial:log_prob"
  if is_tensor(value) and not value:is_floating_point() then value = value:to(self.logits.dtype) end
  value = param(value, fn, "value", self.logits)
  if self._validate_args then
    check_sample(self, fn, value, "Multinomial()", function(v)
      return v:ge(0):all(-1):logical_and(v:sum(-1):le(self.total_count))
    end)
  end
  local logits, v = wick.broadcast_tensors(self.logits, value)
  local log_factorial_n = (v:sum(-1) + 1):lgamma()
  local log_factorial_xs = (v + 1):lgamma():sum(-1)
  logits = wick.where(v:eq(0):logical_and(logits:eq(-math.huge)), 0, logits)
  return log_factorial_n - log_factorial_xs + (logits * v):sum(-1)
end
--- d:entropy(): n H(categorical) - log n! + the expected sum of log x_i! under each Binomial(n, p_i)
function Multinomial:entropy()
  local n = wick.tensor(self.total_count, { dtype = self.probs.dtype, device = self.probs.device })
  local term1 = n * self._categorical:entropy() - (n + 1):lgamma()
  if self.total_count == 0 then return term1 end
  local view = { self.total_count }
  for _ = 1, #self.batch_shape + 1 do view[#view + 1] = 1 end
  local support = wick.arange(1, self.total_count + 1, { dtype = self.probs.dtype, device = self.probs.device })
    :reshape(view) -- (1 .. n, the Binomial's support but 0, along a new first dim)
  local binomial_probs = self._binomial:log_prob(support):exp()
  local weights = (support + 1):lgamma()
  return term1 + (binomial_probs * weights):sum(1):sum(-1)
end

--- OneHotCategoricalStraightThrough(probs) or {logits = l}: a OneHotCategorical whose rsample passes
--- gradients straight through (Bengio et al., 2013): the one-hot draw plus probs - probs:detach()
local OneHotCategoricalStraightThrough = class("OneHotCategoricalStraightThrough")
OneHotCategoricalStraightThrough._params = { "probs" }
rawset(OneHotCategoricalStraightThrough, "super", OneHotCategorical)
getmetatable(OneHotCategoricalStraightThrough).__index = OneHotCategorical -- (its methods and support)
setmetatable(OneHotCategoricalStraightThrough._lazy, { __index = OneHotCategorical._lazy })
function OneHotCategoricalStraightThrough.new(probs, opts)
  local d = one_hot_categorical(OneHotCategoricalStraightThrough, probs, opts)
  d.has_rsample = true
  return d
end
function OneHotCategoricalStraightThrough:rsample(sample_shape)
  local samples = self:sample(sample_shape)
  local probs = self._categorical.probs
  return samples + (probs - probs:detach())
end

--- HalfCauchy(scale): |x| for x ~ Cauchy(0, scale)
local HalfCauchy = half_class("HalfCauchy", Cauchy)
function HalfCauchy._lazy.mean(d) return wick.full_like(d.scale, math.huge) end
function HalfCauchy._lazy.variance(d) return d.base_dist.variance end

-- the log_prob of a TransformedDistribution (the transforms' log-determinants and the base's)
local transformed_log_prob = TransformedDistribution.log_prob

--- InverseGamma(concentration, rate): 1 / x for x ~ Gamma(concentration, rate); values in (0, inf)
local InverseGamma = class("InverseGamma")
InverseGamma._keywords = { "concentration", "rate" }
InverseGamma._params = { "concentration", "rate" }
function InverseGamma.new(concentration, rate, opts)
  local p = positive_pair(InverseGamma, concentration, rate, "concentration", "rate", opts)
  local validate = p._validate_args
  local base = Gamma.new(p.concentration, p.rate, { validate_args = validate })
  local neg_one = wick.full({}, -1, { dtype = base.rate.dtype, device = base.rate.device })
  return transformed_of(InverseGamma, base, { T.PowerTransform(neg_one) }, { validate_args = validate },
    { concentration = base.concentration, rate = base.rate })
end
as_transformed(InverseGamma)
function InverseGamma:log_prob(value)
  value = value_in(self, "InverseGamma:log_prob", value, self.rate, POSITIVE, positive)
  return transformed_log_prob(self, value)
end
function InverseGamma._lazy.mean(d)
  return wick.where(d.concentration:gt(1), d.rate / (d.concentration - 1), math.huge)
end
function InverseGamma._lazy.mode(d) return d.rate / (d.concentration + 1) end
function InverseGamma._lazy.variance(d)
  local a = d.concentration
  return wick.where(a:gt(2), d.rate:square() / ((a - 1):square() * (a - 2)), math.huge)
end
function InverseGamma._lazy.stddev(d) return d.variance:sqrt() end
function InverseGamma:entropy()
  local a = self.concentration
  return a + self.rate:log() + a:lgamma() - (1 + a) * a:digamma()
end

--- Pareto(scale, alpha): scale exp(x) for x ~ Exponential(alpha) (Pareto type I); values in [scale, inf)
local Pareto = class("Pareto")
Pareto._keywords = { "scale", "alpha" }
Pareto._params = { "scale", "alpha" }
function Pareto.new(scale, alpha, opts)
  local p = positive_pair(Pareto, scale, alpha, "scale", "alpha", opts)
  local validate = p._validate_args
  local base = Exponential.new(p.alpha, { validate_args = validate })
  return transformed_of(Pareto, base, { T.ExpTransform(), T.AffineTransform(0, p.scale) },
    { validate_args = validate }, { scale = p.scale, alpha = p.alpha })
end
as_transformed(Pareto)
function Pareto:log_prob(value)
  value = value_in(self, "Pareto:log_prob", value, self.scale, "GreaterThanEq(lower_bound=scale)",
    function(v) return v:ge(self.scale) end)
  return transformed_log_prob(self, value)
end
function Pareto._lazy.mean(d)
  local a = d.alpha:clamp(1, math.huge)
  return a * d.scale / (a - 1)
end
function Pareto._lazy.mode(d) return d.scale end
function Pareto._lazy.variance(d)
  local a = d.alpha:clamp(2, math.huge)
  return d.scale ^ 2 * a / ((a - 1) ^ 2 * (a - 2))
end
function Pareto._lazy.stddev(d) return d.variance:sqrt() end
function Pareto:entropy() return (self.scale / self.alpha):log() + (1 + self.alpha:reciprocal()) end

--- Kumaraswamy(concentration1, concentration0): (1 - (1 - u)^(1/b))^(1/a), a = concentration1,
--- b = concentration0, u uniform; values in [0, 1]
local Kumaraswamy = class("Kumaraswamy")
Kumaraswamy._keywords = { "concentration1", "concentration0" }
Kumaraswamy._params = { "concentration1", "concentration0" }
function Kumaraswamy.new(concentration1, concentration0, opts)
  local p = positive_pair(Kumaraswamy, concentration1, concentration0, "concentration1", "concentration0", opts)
  local validate = p._validate_args
  local c1, c0 = p.concentration1, p.concentration0
  local base = Uniform.new(wick.full_like(c0, 0), wick.full_like(c0, 1), { validate_args = validate })
  return transformed_of(Kumaraswamy, base, { T.PowerTransform(c0:reciprocal()), T.AffineTransform(1.0, -1.0),
    T.PowerTransform(c1:reciprocal()) }, { validate_args = validate }, { concentration1 = c1, concentration0 = c0 })
end
as_transformed(Kumaraswamy)
function Kumaraswamy:log_prob(value)
  value = value_in(self, "Kumaraswamy:log_prob", value, self.concentration1, UNIT_INTERVAL, in_unit_interval)
  return transformed_log_prob(self, value)
end
-- the n-th moment b B(1 + n / a, b)
local function kumaraswamy_moment(a, b, n)
  local arg1 = 1 + n / a
  return b * (arg1:lgamma() + b:lgamma() - (arg1 + b):lgamma()):exp()
end
function Kumaraswamy._lazy.mean(d) return kumaraswamy_moment(d.concentration1, d.concentration0, 1) end
function Kumaraswamy._lazy.mode(d)
  local a, b = d.concentration1, d.concentration0
  local log_mode = b:reciprocal() * (-b):log1p() - (-b * a):log1p()
  return wick.where(b:lt(1):logical_or(a:lt(1)), 0 / 0, log_mode):exp()
end
function Kumaraswamy._lazy.variance(d)
  return kumaraswamy_moment(d.concentration1, d.concentration0, 2) - d.mean ^ 2
end
function Kumaraswamy._lazy.stddev(d) return d.variance:sqrt() end
function Kumaraswamy:entropy()
  local a, b = self.concentration1, self.concentration0
  local t1, t0 = 1 - a:reciprocal(), 1 - b:reciprocal()
  local H0 = (b + 1):digamma() + EULER_GAMMA
  return t0 + t1 * H0 - a:log() - b:log()
end

--- FisherSnedecor(df1, df2): (X1 / df1) / (X2 / df2) of chi-squares; values in (0, inf)
local FisherSnedecor = class("FisherSnedecor")
FisherSnedecor._keywords = { "df1", "df2" }
FisherSnedecor._params = { "df1", "df2" }
function FisherSnedecor.new(df1, df2, opts)
  local d = positive_pair(FisherSnedecor, df1, df2, "df1", "df2", opts)
  d._gamma1 = Gamma.new(d.df1 * 0.5, d.df1, { validate_args = false })
  d._gamma2 = Gamma.new(d.df2 * 0.5, d.df2, { validate_args = false })
  return d
end
function FisherSnedecor._lazy.mean(d)
  local df2 = wick.where(d.df2:le(2), 0 / 0, d.df2)
  return df2 / (df2 - 2)
end
function FisherSnedecor._lazy.mode(d)
  local mode = (d.df1 - 2) / d.df1 * d.df2 / (d.df2 + 2)
  return wick.where(d.df1:le(2), 0 / 0, mode)
end
function FisherSnedecor._lazy.variance(d)
  local df2 = wick.where(d.df2:le(4), 0 / 0, d.df2)
  return 2 * df2 ^ 2 * (d.df1 + df2 - 2) / (d.df1 * (df2 - 2) ^ 2 * (df2 - 4))
end
function FisherSnedecor._lazy.stddev(d) return d.variance:sqrt() end
--- d:rsample([sample_shape]): the ratio of the two Gammas' rsample (no gradient to df1, df2 yet:
--- an error in backward, as Gamma's)
function FisherSnedecor:rsample(sample_shape)
  local shape = shape_of(sample_shape, self.batch_shape, "FisherSnedecor:rsample")
  local X1 = self._gamma1:rsample(sample_shape):view(shape)
  local X2 = self._gamma2:rsample(sample_shape):view(shape)
  local tiny = wick.finfo(X2.dtype).tiny
  return (X1 / X2:clamp(tiny, math.huge)):clamp(tiny, math.huge)
end
FisherSnedecor.sample = sample_of
function FisherSnedecor:log_prob(value)
  value = value_in(self, "FisherSnedecor:log_prob", value, self.df1, POSITIVE, positive)
  local ct1, ct2, ct3 = self.df1 * 0.5, self.df2 * 0.5, self.df1 / self.df2
  local t1 = (ct1 + ct2):lgamma() - ct1:lgamma() - ct2:lgamma()
  local t2 = ct1 * ct3:log() + (ct1 - 1) * value:log()
  local t3 = (ct1 + ct2) * (ct3 * value):log1p()
  return t1 + t2 - t3
end

--- LogisticNormal(loc, scale): the stick-breaking transform of Normal(loc, scale) draws over the last
--- dim (k values onto the (k + 1)-simplex)
local LogisticNormal = class("LogisticNormal")
LogisticNormal._keywords = { "loc", "scale" }
LogisticNormal._params = { "loc", "scale" }
function LogisticNormal.new(loc, scale, opts)
  local fn = "LogisticNormal"
  check.options(opts, fn, { validate_args = "boolean" })
  local validate = opts and opts.validate_args
  local ok, base = pcall(Normal.new, loc, scale, opts)
  if not ok then check.fail(fn, "%s", (tostring(base):gsub("^.-Normal: ", ""))) end
  if #base.batch_shape == 0 then base = base:expand({ 1 }) end
  local d = transformed_of(LogisticNormal, base, { T.StickBreakingTransform() }, { validate_args = validate }, {})
  d.loc, d.scale = d.base_dist.base_dist.loc, d.base_dist.base_dist.scale
  return d
end
as_transformed(LogisticNormal)
function LogisticNormal:log_prob(value)
  value = value_in(self, "LogisticNormal:log_prob", value, self.loc, "Simplex()", simplex)
  return transformed_log_prob(self, value)
end

for _, C in ipairs({ Categorical, OneHotCategorical, Normal, MultivariateNormal, Independent, Bernoulli, Uniform,
  Gamma, Dirichlet, Beta, Exponential, Laplace, StudentT, LogNormal,
  Poisson, NegativeBinomial, Binomial, TransformedDistribution, MixtureSameFamily, LogitRelaxedBernoulli,
  ExpRelaxedCategorical, RelaxedBernoulli, RelaxedOneHotCategorical, Cauchy, HalfNormal, Gumbel, Weibull, Chi2,
  Geometric, Multinomial, OneHotCategoricalStraightThrough, HalfCauchy, InverseGamma, Pareto, Kumaraswamy,
  FisherSnedecor, LogisticNormal }) do
  receivers(C)
end

-- ---- KL divergence ----

local function kl_categorical(p, q)
  local t = p.probs * (p.logits - q.logits)
  t = wick.where(q.probs:eq(0):expand_as(t), math.huge, t)
  t = wick.where(p.probs:eq(0):expand_as(t), 0, t)
  return t:sum(-1)
end

-- the KL divergence of two distributions of one built-in kind (registered below for each kind)
local function same_kind_kl(kind, p, q)
  local fn = "kl_divergence"
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
  elseif kind == Gamma then
    local t1 = q.concentration * (p.rate / q.rate):log()
    local t2 = q.concentration:lgamma() - p.concentration:lgamma()
    local t3 = (p.concentration - q.concentration) * p.concentration:digamma()
    local t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4
  elseif kind == Beta then
    local sum_p = p.concentration1 + p.concentration0
    local sum_q = q.concentration1 + q.concentration0
    local t1 = q.concentration1:lgamma() + q.concentration0:lgamma() + sum_p:lgamma()
    local t2 = p.concentration1:lgamma() + p.concentration0:lgamma() + sum_q:lgamma()
    local t3 = (p.concentration1 - q.concentration1) * p.concentration1:digamma()
    local t4 = (p.concentration0 - q.concentration0) * p.concentration0:digamma()
    local t5 = (sum_q - sum_p) * sum_p:digamma()
    return t1 - t2 + t3 + t4 + t5
  elseif kind == Dirichlet then
    if p.event_shape[1] ~= q.event_shape[1] then
      check.fail(fn, "no KL divergence between Dirichlet distributions of different event shapes (%s and %s)",
        tostring(p.event_shape), tostring(q.event_shape))
    end
    local sum_p, sum_q = p.concentration:sum(-1), q.concentration:sum(-1)
    local t1 = sum_p:lgamma() - sum_q:lgamma()
    local t2 = (p.concentration:lgamma() - q.concentration:lgamma()):sum(-1)
    local t3 = p.concentration - q.concentration
    local t4 = p.concentration:digamma() - sum_p:digamma():unsqueeze(-1)
    return t1 - t2 + (t3 * t4):sum(-1)
  elseif kind == Exponential then
    local rate_ratio = q.rate / p.rate
    return -rate_ratio:log() + rate_ratio - 1
  elseif kind == Laplace then
    local scale_ratio = p.scale / q.scale
    local loc_abs_diff = (p.loc - q.loc):abs()
    return -scale_ratio:log() + loc_abs_diff / q.scale + scale_ratio * (-loc_abs_diff / p.scale):exp() - 1
  elseif kind == LogNormal then
    return M.kl_divergence(p.base_dist, q.base_dist)
  elseif kind == Poisson then
    return p.rate * (p.rate:log() - q.rate:log()) - (p.rate - q.rate)
  end
  check.fail(fn, "no KL divergence for %s", kind.__name)
end

-- ---- register_kl and the dispatch (PyTorch's _KL_REGISTRY and _dispatch_kl) ----

local KL_REGISTRY = {} -- KL_REGISTRY[P][Q] = function(p, q)
local function is_distribution_class(C)
  return C == Distribution or (type(C) == "table" and rawget(C, "_distribution_class") == true)
end
--- register_kl(P, Q)(function(p, q) ... end): the KL divergence kl_divergence uses for p an
--- instance of class P (or of a subclass) and q of Q (PyTorch's @register_kl decorator); returns
--- the function. The most specific registered pair wins, by p's class first, with a warning where
--- ordering by q's class first would pick another
function M.register_kl(P, Q)
  local fn = "register_kl"
  if not is_distribution_class(P) then
    check.fail(fn, "Expected type_p to be a Distribution subclass but got %s", check.describe(P))
  end
  if not is_distribution_class(Q) then
    check.fail(fn, "Expected type_q to be a Distribution subclass but got %s", check.describe(Q))
  end
  return function(f)
    if type(f) ~= "function" and not (type(f) == "table" and getmetatable(f) and getmetatable(f).__call) then
      check.fail(fn, "expected a function of (p, q) to register, got %s", check.describe(f))
    end
    KL_REGISTRY[P] = KL_REGISTRY[P] or {}
    KL_REGISTRY[P][Q] = f
    return f
  end
end
-- a distribution's class, then the classes it extends, then Distribution (nil for a non-distribution)
local function lineage(d)
  local mt = type(d) == "table" and getmetatable(d) or nil
  if not (type(mt) == "table" and rawget(mt, "_distribution_class") == true) then return nil end
  local out = {}
  while type(mt) == "table" and mt ~= Distribution do
    out[#out + 1] = mt
    mt = rawget(mt, "super")
  end
  out[#out + 1] = Distribution
  return out
end
local function dispatch_kl(lp, lq)
  local left, right
  for i, P in ipairs(lp) do
    local row = KL_REGISTRY[P]
    if row then
      for j, Q in ipairs(lq) do
        local f = row[Q]
        if f then
          if not left or i < left[1] or (i == left[1] and j < left[2]) then left = { i, j, f } end
          if not right or j < right[2] or (j == right[2] and i < right[1]) then right = { i, j, f } end
        end
      end
    end
  end
  if not left then return nil end
  if left[3] ~= right[3] then
    require("wick.nn.common").warn(("Ambiguous kl_divergence(%s, %s). Please register_kl(%s, %s)"):format(
      lp[1].__name, lq[1].__name, lp[left[1]].__name, lq[right[2]].__name))
  end
  return left[3]
end

--- kl_divergence(p, q): KL(p || q) over the batch, by the function registered for their classes
--- (register_kl): two of a kind (Normal, MultivariateNormal, Categorical, OneHotCategorical,
--- Bernoulli, Binomial, Uniform, Independent, Gamma, Beta, Dirichlet, Exponential, Laplace, LogNormal,
--- Poisson, Cauchy, HalfNormal, Gumbel, Geometric, Pareto; not StudentT, as PyTorch) and PyTorch's
--- closed forms across families (Uniform-Normal, Gamma-Exponential, Normal-Gumbel, ...)
function M.kl_divergence(p, q)
  local fn = "kl_divergence"
  local lp, lq = lineage(p), lineage(q)
  local f = lp and lq and dispatch_kl(lp, lq)
  if not f then
    local pn, qn = lp and lp[1].__name or check.describe(p), lq and lq[1].__name or check.describe(q)
    if lp and lq and lp[1] == lq[1] then check.fail(fn, "no KL divergence for %s", pn) end
    check.fail(fn, "no KL divergence between %s and %s (PyTorch's NotImplementedError: No KL(p || q) is "
      .. "implemented for p type %s and q type %s)", pn, qn, pn, qn)
  end
  return f(p, q)
end
for _, kind in ipairs({ Normal, Categorical, OneHotCategorical, Bernoulli, Uniform, MultivariateNormal, Independent,
  Gamma, Beta, Dirichlet, Exponential, Laplace, LogNormal, Poisson }) do
  M.register_kl(kind, kind)(function(p, q) return same_kind_kl(kind, p, q) end)
end
M.register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)(lowrank.kl_lowrank_lowrank)
M.register_kl(MultivariateNormal, LowRankMultivariateNormal)(lowrank.kl_mvn_lowrank)
M.register_kl(LowRankMultivariateNormal, MultivariateNormal)(lowrank.kl_lowrank_mvn)

local function infinite_like(t) return wick.full_like(t, math.huge) end
local function x_log_x(t) return wick.xlogy(t, t) end
local register_kl = M.register_kl

-- two of a kind, beyond the ones above
register_kl(Binomial, Binomial)(function(p, q)
  if p.total_count:lt(q.total_count):any() == true then
    check.fail("kl_divergence", "KL between Binomials where q.total_count > p.total_count is not implemented")
  end
  local kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs):log1p() - (-q.probs):log1p())
  return wick.where(p.total_count:gt(q.total_count), math.huge, kl)
end)
register_kl(Gumbel, Gumbel)(function(p, q)
  local ct1, ct2, ct3 = p.scale / q.scale, q.loc / q.scale, p.loc / q.scale
  local t1 = -ct1:log() - ct2 + ct3
  local t2 = ct1 * EULER_GAMMA
  local t3 = (ct2 + (1 + ct1):lgamma() - ct3):exp()
  return t1 + t2 + t3 - (1 + EULER_GAMMA)
end)
register_kl(Geometric, Geometric)(function(p, q)
  return -p:entropy() - (-q.probs):log1p() / p.probs - q.logits
end)
register_kl(HalfNormal, HalfNormal)(function(p, q) return M.kl_divergence(p.base_dist, q.base_dist) end)
register_kl(Cauchy, Cauchy)(function(p, q)
  local t1 = ((p.scale + q.scale) ^ 2 + (p.loc - q.loc) ^ 2):log()
  local t2 = (4 * p.scale * q.scale):log()
  return t1 - t2
end)
register_kl(Pareto, Pareto)(function(p, q)
  local scale_ratio, alpha_ratio = p.scale / q.scale, q.alpha / p.alpha
  local result = q.alpha * scale_ratio:log() - alpha_ratio:log() + alpha_ratio - 1
  return wick.where(p.scale:lt(q.scale), math.huge, result)
end)

-- across families: infinite where p's support reaches outside q's (not yet Gamma-Beta, PyTorch's
-- infinite too: distributions_more_spec still asks for its error)
for _, pair in ipairs({ { Beta, { Pareto } }, { Exponential, { Beta, Pareto, Uniform } },
  { Gamma, { Beta, Pareto, Uniform } }, { Gumbel, { Beta, Exponential, Gamma, Pareto, Uniform } },
  { Laplace, { Beta, Exponential, Gamma, Pareto, Uniform } }, { Normal, { Beta, Exponential, Gamma, Pareto, Uniform } },
  { Pareto, { Beta, Uniform } }, { Poisson, { Bernoulli, Binomial } } }) do
  local P = pair[1]
  local field = ({ [Beta] = "concentration1", [Exponential] = "rate", [Gamma] = "concentration", [Gumbel] = "loc",
    [Laplace] = "loc", [Normal] = "loc", [Pareto] = "scale", [Poisson] = "rate" })[P]
  for _, Q in ipairs(pair[2]) do
    register_kl(P, Q)(function(p) return infinite_like(p[field]) end)
  end
end
register_kl(Bernoulli, Poisson)(function(p, q) return -p:entropy() - (p.probs * q.rate:log() - q.rate) end)
register_kl(Beta, Exponential)(function(p, q)
  return -p:entropy() - q.rate:log() + q.rate * (p.concentration1 / (p.concentration1 + p.concentration0))
end)
register_kl(Beta, Gamma)(function(p, q)
  local t1 = -p:entropy()
  local t2 = q.concentration:lgamma() - q.concentration * q.rate:log()
  local t3 = (q.concentration - 1) * (p.concentration1:digamma() - (p.concentration1 + p.concentration0):digamma())
  local t4 = q.rate * p.concentration1 / (p.concentration1 + p.concentration0)
  return t1 + t2 - t3 + t4
end)
register_kl(Beta, Normal)(function(p, q)
  local E_beta = p.concentration1 / (p.concentration1 + p.concentration0)
  local var_normal = q.scale ^ 2
  local t1 = -p:entropy()
  local t2 = 0.5 * (var_normal * 2 * math.pi):log()
  local t3 = (E_beta * (1 - E_beta) / (p.concentration1 + p.concentration0 + 1) + E_beta ^ 2) * 0.5
  local t4 = q.loc * E_beta
  local t5 = q.loc ^ 2 * 0.5
  return t1 + t2 + (t3 - t4 + t5) / var_normal
end)
register_kl(Beta, Uniform)(function(p, q)
  local result = -p:entropy() + (q.high - q.low):log()
  return wick.where(q.low:gt(0):logical_or(q.high:lt(1)), math.huge, result)
end)
register_kl(Exponential, Gamma)(function(p, q)
  local ratio = q.rate / p.rate
  local t1 = -q.concentration * ratio:log()
  return t1 + ratio + q.concentration:lgamma() + q.concentration * EULER_GAMMA - (1 + EULER_GAMMA)
end)
register_kl(Exponential, Gumbel)(function(p, q)
  local scale_rate_prod = p.rate * q.scale
  local loc_scale_ratio = q.loc / q.scale
  local t1 = scale_rate_prod:log() - 1
  local t2 = loc_scale_ratio:exp() * scale_rate_prod / (scale_rate_prod + 1)
  local t3 = scale_rate_prod:reciprocal()
  return t1 - loc_scale_ratio + t2 + t3
end)
register_kl(Exponential, Normal)(function(p, q)
  local var_normal, rate_sqr = q.scale ^ 2, p.rate ^ 2
  local t1 = 0.5 * (rate_sqr * var_normal * 2 * math.pi):log()
  local t2 = rate_sqr:reciprocal()
  local t3 = q.loc / p.rate
  local t4 = q.loc ^ 2 * 0.5
  return t1 - 1 + (t2 - t3 + t4) / var_normal
end)
register_kl(Gamma, Exponential)(function(p, q)
  return -p:entropy() - q.rate:log() + q.rate * p.concentration / p.rate
end)
register_kl(Gamma, Gumbel)(function(p, q)
  local a = p.concentration
  local beta_scale_prod = p.rate * q.scale
  local loc_scale_ratio = q.loc / q.scale
  local t1 = (a - 1) * a:digamma() - a:lgamma() - a
  local t2 = beta_scale_prod:log() + a / beta_scale_prod
  local t3 = loc_scale_ratio:exp() * (1 + beta_scale_prod:reciprocal()) ^ (-a) - loc_scale_ratio
  return t1 + t2 + t3
end)
register_kl(Gamma, Normal)(function(p, q)
  local a = p.concentration
  local var_normal, beta_sqr = q.scale ^ 2, p.rate ^ 2
  local t1 = 0.5 * (beta_sqr * var_normal * 2 * math.pi):log() - a - a:lgamma()
  local t2 = 0.5 * (a ^ 2 + a) / beta_sqr
  local t3 = q.loc * a / p.rate
  local t4 = 0.5 * q.loc ^ 2
  return t1 + (a - 1) * a:digamma() + (t2 - t3 + t4) / var_normal
end)
register_kl(Gumbel, Normal)(function(p, q)
  local param_ratio = p.scale / q.scale
  local t1 = (param_ratio / math.sqrt(2 * math.pi)):log()
  local t2 = (math.pi * param_ratio * 0.5) ^ 2 / 3
  local t3 = ((p.loc + p.scale * EULER_GAMMA - q.loc) / q.scale) ^ 2 * 0.5
  return -t1 + t2 + t3 - (EULER_GAMMA + 1)
end)
register_kl(Laplace, Normal)(function(p, q)
  local var_normal = q.scale ^ 2
  local scale_sqr_var_ratio = p.scale ^ 2 / var_normal
  local t1 = 0.5 * (2 * scale_sqr_var_ratio / math.pi):log()
  local t2 = 0.5 * p.loc ^ 2
  local t3 = p.loc * q.loc
  local t4 = 0.5 * q.loc ^ 2
  return -t1 + scale_sqr_var_ratio + (t2 - t3 + t4) / var_normal - 1
end)
register_kl(Normal, Gumbel)(function(p, q)
  local mean_scale_ratio = p.loc / q.scale
  local var_scale_sqr_ratio = (p.scale / q.scale) ^ 2
  local loc_scale_ratio = q.loc / q.scale
  local t1 = var_scale_sqr_ratio:log() * 0.5
  local t2 = mean_scale_ratio - loc_scale_ratio
  local t3 = (-mean_scale_ratio + 0.5 * var_scale_sqr_ratio + loc_scale_ratio):exp()
  return -t1 + t2 + t3 - (0.5 * (1 + math.log(2 * math.pi)))
end)
register_kl(Normal, Laplace)(function(p, q)
  local loc_diff = p.loc - q.loc
  local scale_ratio = p.scale / q.scale
  local loc_diff_scale_ratio = loc_diff / p.scale
  local t1 = scale_ratio:log()
  local t2 = math.sqrt(2 / math.pi) * p.scale * (-0.5 * loc_diff_scale_ratio ^ 2):exp()
  local t3 = loc_diff * (math.sqrt(0.5) * loc_diff_scale_ratio):erf()
  return -t1 + (t2 + t3) / q.scale - (0.5 * (1 + math.log(0.5 * math.pi)))
end)
register_kl(Pareto, Exponential)(function(p, q)
  local scale_rate_prod = p.scale * q.rate
  local t1 = (p.alpha / scale_rate_prod):log()
  local t2 = p.alpha:reciprocal()
  local t3 = p.alpha * scale_rate_prod / (p.alpha - 1)
  return wick.where(p.alpha:le(1), math.huge, t1 - t2 + t3 - 1)
end)
register_kl(Pareto, Gamma)(function(p, q)
  local common_term = p.scale:log() + p.alpha:reciprocal()
  local t1 = p.alpha:log() - common_term
  local t2 = q.concentration:lgamma() - q.concentration * q.rate:log()
  local t3 = (1 - q.concentration) * common_term
  local t4 = q.rate * p.alpha * p.scale / (p.alpha - 1)
  return wick.where(p.alpha:le(1), math.huge, t1 + t2 + t3 + t4 - 1)
end)
register_kl(Pareto, Normal)(function(p, q)
  local var_normal = 2 * q.scale ^ 2
  local common_term = p.scale / (p.alpha - 1)
  local t1 = (math.sqrt(2 * math.pi) * q.scale * p.alpha / p.scale):log()
  local t2 = p.alpha:reciprocal()
  local t3 = p.alpha * common_term ^ 2 / (p.alpha - 2)
  local t4 = (p.alpha * common_term - q.loc) ^ 2
  return wick.where(p.alpha:le(2), math.huge, t1 - t2 + (t3 + t4) / var_normal - 1)
end)
register_kl(Uniform, Beta)(function(p, q)
  local common_term = p.high - p.low
  local t1 = common_term:log()
  local t2 = (q.concentration1 - 1) * (x_log_x(p.high) - x_log_x(p.low) - common_term) / common_term
  local t3 = (q.concentration0 - 1) * (x_log_x(1 - p.high) - x_log_x(1 - p.low) + common_term) / common_term
  local t4 = q.concentration1:lgamma() + q.concentration0:lgamma() - (q.concentration1 + q.concentration0):lgamma()
  local result = t3 + t4 - t1 - t2
  return wick.where(p.high:gt(1):logical_or(p.low:lt(0)), math.huge, result)
end)
register_kl(Uniform, Exponential)(function(p, q)
  local result = q.rate * (p.high + p.low) / 2 - ((p.high - p.low) * q.rate):log()
  return wick.where(p.low:lt(0), math.huge, result)
end)
register_kl(Uniform, Gamma)(function(p, q)
  local common_term = p.high - p.low
  local t1 = common_term:log()
  local t2 = q.concentration:lgamma() - q.concentration * q.rate:log()
  local t3 = (1 - q.concentration) * (x_log_x(p.high) - x_log_x(p.low) - common_term) / common_term
  local t4 = q.rate * (p.high + p.low) / 2
  return wick.where(p.low:lt(0), math.huge, -t1 + t2 + t3 + t4)
end)
register_kl(Uniform, Gumbel)(function(p, q)
  local common_term = q.scale / (p.high - p.low)
  local high_loc_diff = (p.high - q.loc) / q.scale
  local low_loc_diff = (p.low - q.loc) / q.scale
  local t1 = common_term:log() + 0.5 * (high_loc_diff + low_loc_diff)
  local t2 = common_term * ((-high_loc_diff):exp() - (-low_loc_diff):exp())
  return t1 - t2
end)
register_kl(Uniform, Normal)(function(p, q)
  local common_term = p.high - p.low
  local t1 = (math.sqrt(math.pi * 2) * q.scale / common_term):log()
  local t2 = common_term ^ 2 / 12
  local t3 = ((p.high + p.low - 2 * q.loc) / 2) ^ 2
  return t1 + 0.5 * (t2 + t3) / q.scale ^ 2
end)
register_kl(Uniform, Pareto)(function(p, q)
  local support_uniform = p.high - p.low
  local t1 = (q.alpha * q.scale ^ q.alpha * support_uniform):log()
  local t2 = (x_log_x(p.high) - x_log_x(p.low) - support_uniform) / support_uniform
  return wick.where(p.low:lt(q.scale), math.huge, t2 * (q.alpha + 1) - t1)
end)
M.kl = { kl_divergence = M.kl_divergence, register_kl = M.register_kl }

--- wick.distributions.utils: torch.distributions.utils' helpers (fairseq's probs_to_logits)
M.utils = check.strict({
  --- probs_to_logits(probs[, is_binary = false]): log(p) (or log(p / (1 - p))) of probs clamped into [eps, 1 - eps]
  probs_to_logits = function(probs, is_binary)
    check.tensor(probs, "probs_to_logits", "probs")
    local p = clamp_probs(probs)
    if is_binary then return p:log() - (-p):log1p() end
    return p:log()
  end,
  --- logits_to_probs(logits[, is_binary = false]): sigmoid (binary) or softmax over the last dim
  logits_to_probs = function(logits, is_binary)
    check.tensor(logits, "logits_to_probs", "logits")
    if is_binary then return logits:sigmoid() end
    return logits:softmax(-1)
  end,
  clamp_probs = function(probs) return clamp_probs(check.tensor(probs, "clamp_probs", "probs")) end,
  --- broadcast_all(...): numbers and tensors broadcast to one shape, numbers as tensors like the first tensor
  broadcast_all = function(...)
    local args, like = { ... }, nil
    for i = 1, select("#", ...) do if is_tensor(args[i]) then like = like or args[i] end end
    for i = 1, select("#", ...) do args[i] = param(args[i], "broadcast_all", ("values[%d]"):format(i), like) end
    return wick.broadcast_tensors(unpack(args, 1, select("#", ...)))
  end,
}, "wick.distributions.utils")

-- ---- supports and parameter constraints (PyTorch's d.support, d.arg_constraints) ----

constrain({
  [Normal] = { Cn.real, { loc = Cn.real, scale = Cn.positive } },
  [MultivariateNormal] = { Cn.real_vector, { loc = Cn.real_vector, covariance_matrix = Cn.positive_definite,
    precision_matrix = Cn.positive_definite, scale_tril = Cn.lower_cholesky } },
  [LowRankMultivariateNormal] = { Cn.real_vector, { loc = Cn.real_vector, cov_factor = Cn.independent(Cn.real, 2),
    cov_diag = Cn.independent(Cn.positive, 1) } },
  [Wishart] = { Cn.positive_definite }, -- (arg_constraints: lazy, above)
  [LKJCholesky] = { Cn.corr_cholesky, { concentration = Cn.positive } },
  [Bernoulli] = { Cn.boolean, { probs = Cn.unit_interval, logits = Cn.real } },
  [Categorical] = { nil, { probs = Cn.simplex, logits = Cn.independent(Cn.real, 1) } },
  [OneHotCategorical] = { Cn.one_hot, { probs = Cn.simplex, logits = Cn.independent(Cn.real, 1) } },
  [Uniform] = { nil, { low = Cn.dependent, high = Cn.dependent } },
  [Gamma] = { Cn.nonnegative, { concentration = Cn.positive, rate = Cn.positive } },
  [Dirichlet] = { Cn.simplex, { concentration = Cn.independent(Cn.positive, 1) } },
  [Beta] = { Cn.unit_interval, { concentration1 = Cn.positive, concentration0 = Cn.positive } },
  [Exponential] = { Cn.nonnegative, { rate = Cn.positive } },
  [Laplace] = { Cn.real, { loc = Cn.real, scale = Cn.positive } },
  [StudentT] = { Cn.real, { df = Cn.positive, loc = Cn.real, scale = Cn.positive } },
  [LogNormal] = { Cn.positive, { loc = Cn.real, scale = Cn.positive } },
  [Poisson] = { Cn.nonnegative_integer, { rate = Cn.nonnegative } },
  [Binomial] = { nil, { total_count = Cn.nonnegative_integer, probs = Cn.unit_interval, logits = Cn.real } },
  [NegativeBinomial] = { Cn.nonnegative_integer, { total_count = Cn.greater_than_eq(0), probs = Cn.half_open_interval(0, 1),
    logits = Cn.real } },
  [Cauchy] = { Cn.real, { loc = Cn.real, scale = Cn.positive } },
  [HalfNormal] = { Cn.nonnegative, { scale = Cn.positive } },
  [Gumbel] = { Cn.real, { loc = Cn.real, scale = Cn.positive } },
  [Weibull] = { Cn.positive, { scale = Cn.positive, concentration = Cn.positive } },
  [Geometric] = { Cn.nonnegative_integer, { probs = Cn.unit_interval, logits = Cn.real } },
  [Chi2] = { Cn.nonnegative, { df = Cn.positive } },
  [Independent] = { nil, {} },
  [TransformedDistribution] = { nil, {} },
  [MixtureSameFamily] = { nil, {} },
  [LogitRelaxedBernoulli] = { Cn.real, { probs = Cn.unit_interval, logits = Cn.real } },
  [RelaxedBernoulli] = { Cn.unit_interval, { temperature = Cn.positive, probs = Cn.unit_interval, logits = Cn.real } },
  [ExpRelaxedCategorical] = { Cn.real_vector, { probs = Cn.simplex, logits = Cn.real_vector } },
  [RelaxedOneHotCategorical] = { Cn.simplex, { temperature = Cn.positive, probs = Cn.simplex, logits = Cn.real_vector } },
  [Multinomial] = { nil, { probs = Cn.simplex, logits = Cn.real_vector } },
  [OneHotCategoricalStraightThrough] = { Cn.one_hot, { probs = Cn.simplex, logits = Cn.independent(Cn.real, 1) } },
  [HalfCauchy] = { Cn.nonnegative, { scale = Cn.positive } },
  [InverseGamma] = { Cn.positive, { concentration = Cn.positive, rate = Cn.positive } },
  [Pareto] = { nil, { alpha = Cn.positive, scale = Cn.positive } },
  [Kumaraswamy] = { Cn.unit_interval, { concentration1 = Cn.positive, concentration0 = Cn.positive } },
  [FisherSnedecor] = { Cn.positive, { df1 = Cn.positive, df2 = Cn.positive } },
  [LogisticNormal] = { Cn.simplex, { loc = Cn.real, scale = Cn.positive } },
})
-- the supports that depend on the parameters (classes 1 .. n here, as wick's classes count from 1)
function Categorical._lazy.support(d) return Cn.integer_interval(1, d._num_events) end
function Uniform._lazy.support(d) return Cn.interval(d.low, d.high) end
function Binomial._lazy.support(d) return Cn.integer_interval(0, d.total_count) end
function Independent._lazy.support(d) return Cn.independent(d.base_dist.support, d.reinterpreted_batch_ndims) end
function MixtureSameFamily._lazy.support(d) return d.component_distribution.support end
function Pareto._lazy.support(d) return Cn.greater_than_eq(d.scale) end
-- PyTorch's constraints.multinomial(total_count): non-negative counts summing to at most total_count
function Multinomial._lazy.support(d)
  local n = d.total_count
  local c = setmetatable({ _repr = "Multinomial()", is_discrete = true, event_dim = 1, upper_bound = n }, Cn.Constraint)
  c.check = function(a, b)
    local v = rawequal(a, c) and b or a
    check.tensor(v, "Multinomial().check", "value")
    return v:ge(0):all(-1):logical_and(v:sum(-1):le(n))
  end
  return c
end

-- ---- VonMises, ContinuousBernoulli, GeneralizedPareto ----

-- standard uniforms of shape in `like`'s dtype and device (wick.rand, looked up at each draw: a test
-- replaying PyTorch's draws replaces it), an error named for fn where they do not fit in memory
local function uniforms(fn, shape, like)
  local ok, u = pcall(wick.rand, shape, { dtype = like.dtype, device = like.device })
  if not ok then check.fail(fn, "%s", (tostring(u):gsub("^.-:%d+: ", ""))) end
  return u
end

-- log I_order(x), x > 0, order 0 or 1: the polynomial approximations (Abramowitz and Stegun 9.8.1-9.8.4)
-- PyTorch's von_mises uses, below 3.75 and above (error about 1e-7: the values are PyTorch's, not I's)
local BESSEL_SMALL = {
  [0] = { 1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.360768e-1, 0.45813e-2 },
  [1] = { 0.5, 0.87890594, 0.51498869, 0.15084934, 0.2658733e-1, 0.301532e-2, 0.32411e-3 },
}
local BESSEL_LARGE = {
  [0] = { 0.39894228, 0.1328592e-1, 0.225319e-2, -0.157565e-2, 0.916281e-2, -0.2057706e-1, 0.2635537e-1,
    -0.1647633e-1, 0.392377e-2 },
  [1] = { 0.39894228, -0.3988024e-1, -0.362018e-2, 0.163801e-2, -0.1031555e-1, 0.2282967e-1, -0.2895312e-1,
    0.1787654e-1, -0.420059e-2 },
}
-- c[1] + y (c[2] + y (c[3] + ...)), by Horner's rule
local function horner(y, c)
  local r = c[#c]
  for i = #c - 1, 1, -1 do r = c[i] + y * r end
  return r
end
local function log_bessel_i(x, order)
  local y = x / 3.75
  y = y * y
  local small = horner(y, BESSEL_SMALL[order])
  if order == 1 then small = x:abs() * small end
  small = small:log()
  local large = x - 0.5 * x:log() + horner(x:reciprocal() * 3.75, BESSEL_LARGE[order]):log()
  return wick.where(x:lt(3.75), small, large)
end

--- VonMises(loc, concentration): the circular von Mises distribution of angles in radians (loc and the
--- values any real, read modulo 2 pi); mean, mode and variance are the circular ones; sample() only (no
--- rsample, as PyTorch's)
local VonMises = class("VonMises")
VonMises._keywords = { "loc", "concentration" }
VonMises._params = { "loc", "concentration" }
function VonMises.new(loc, concentration, opts)
  local d = setmetatable({}, VonMises)
  d.loc, d.concentration = two_params("VonMises", loc, concentration, "loc", "concentration", opts)
  if validating(d, opts) then
    check_param(d, "loc", not_nan(d.loc), "Real()")
    check_param(d, "concentration", d.concentration:gt(0), POSITIVE)
  end
  d.batch_shape, d.event_shape = d.loc:size(), Size()
  d.has_rsample = false
  return d
end
function VonMises._lazy.mean(d) return d.loc end
function VonMises._lazy.mode(d) return d.loc end
function VonMises._lazy.variance(d)
  return 1 - (log_bessel_i(d.concentration, 1) - log_bessel_i(d.concentration, 0)):exp()
end
function VonMises._lazy.stddev(d) return d.variance:sqrt() end
function VonMises:log_prob(value)
  value = value_in(self, "VonMises:log_prob", value, self.loc, "Real()", not_nan)
  return self.concentration * (value - self.loc):cos() - LOG_2PI - log_bessel_i(self.concentration, 0)
end
-- the proposal's r of Best and Fisher's sampler (1 / kappa + kappa below kappa = 1e-5), in float64
function VonMises._lazy._loc(d) return d.loc:to("float64") end
function VonMises._lazy._concentration(d) return d.concentration:to("float64") end
function VonMises._lazy._proposal_r(d)
  local kappa = d._concentration
  local tau = 1 + (1 + 4 * kappa ^ 2):sqrt()
  local rho = (tau - (2 * tau):sqrt()) / (2 * kappa)
  local r = (1 + rho ^ 2) / (2 * rho)
  return wick.where(kappa:lt(1e-5), kappa:reciprocal() + kappa, r)
end
--- d:sample([sample_shape]): Best and Fisher's rejection sampler ("Efficient simulation of the von Mises
--- distribution", 1979) in float64 whatever the dtype, as PyTorch's: each round draws three uniforms for
--- every value (one wick.rand of {3, ...}) until each value has been accepted once. A concentration no
--- proposal serves (NaN, 0 or one whose r overflows, with validate_args = false) gives NaN where PyTorch's
--- loop never ends.
function VonMises:sample(sample_shape)
  local fn = "VonMises:sample"
  local shape = shape_of(sample_shape, self.batch_shape, fn)
  return wick.no_grad(function()
    local loc, kappa, r = self._loc, self._concentration, self._proposal_r
    local ok, x = pcall(wick.zeros, shape, { dtype = "float64", device = loc.device })
    if not ok then check.fail(fn, "%s", (tostring(x):gsub("^.-:%d+: ", ""))) end
    local hopeless = r:isfinite():logical_not():expand(shape)
    local done, rounds = hopeless, 0
    while not all_of(done) and rounds < 1000 do -- (each round accepts more than half the values)
      rounds = rounds + 1
      local u = uniforms(fn, concat({ 3 }, shape), x)
      local u1, u2, u3 = u:select(1, 1), u:select(1, 2), u:select(1, 3)
      local z = (math.pi * u1):cos()
      local f = (1 + r * z) / (r + z)
      local c = kappa * (r - f)
      local accept = (c * (2 - c) - u2):gt(0):logical_or(((c / u2):log() + 1 - c):ge(0))
      if accept:any() == true then
        x = wick.where(accept, (u3 - 0.5):sign() * f:acos(), x)
        done = done:logical_or(accept)
      end
    end
    x = wick.where(done:logical_and(hopeless:logical_not()), x, 0 / 0)
    return ((x + math.pi + loc) % (2 * math.pi) - math.pi):to(self.loc.dtype)
  end)
end

--- ContinuousBernoulli(probs[, opts]), {probs = p} / {logits = l} (opts.lims = {0.499, 0.501}), or PyTorch's
--- positional (probs, logits, lims): the continuous Bernoulli of Loaiza-Ganem and Cunningham (2019), the
--- density C(p) p^x (1 - p)^(1 - x) on [0, 1]; probs clamped into [eps, 1 - eps]; within lims the
--- normaliser, mean, variance, cdf and icdf are PyTorch's Taylor expansions around 1/2
local ContinuousBernoulli = class("ContinuousBernoulli")
ContinuousBernoulli._params = { "probs", "logits" }
function ContinuousBernoulli.new(probs, logits, lims, opts)
  local fn = "ContinuousBernoulli"
  if type(probs) == "table" and not is_tensor(probs) and logits == nil and lims == nil and opts == nil then
    probs, opts = nil, probs
  elseif type(logits) == "table" and not is_tensor(logits) and lims == nil and opts == nil then
    logits, opts = nil, logits
  end
  opts = check.options(opts, fn, { probs = "tensor|number", logits = "tensor|number", lims = "table",
    validate_args = "boolean" })
  local given = { probs = probs, logits = logits, lims = lims }
  for _, name in ipairs({ "probs", "logits", "lims" }) do
    if opts[name] ~= nil then
      if given[name] ~= nil then check.fail(fn, "got %s both by position and by name", name) end
      given[name] = opts[name]
    end
  end
  probs, logits, lims = given.probs, given.logits, given.lims or { 0.499, 0.501 }
  if (probs == nil) == (logits == nil) then
    check.fail(fn, "Either `probs` or `logits` must be specified, but not both.")
  end
  check.table(lims, fn, "lims")
  check.number(lims[1], fn, "lims[1]")
  check.number(lims[2], fn, "lims[2]")
  local d = setmetatable({}, ContinuousBernoulli)
  local validate = validating(d, opts)
  if probs ~= nil then
    local p = param(probs, fn, "probs")
    -- (as PyTorch's: probs checked before the clamp where validate_args is given, even false; by default
    -- only after it, where only NaN fails)
    if opts.validate_args ~= nil and not all_of(in_unit_interval(p)) then
      check.fail(fn, "The parameter probs has invalid values")
    end
    d.probs = clamp_probs(p)
    if validate then check_param(d, "probs", in_unit_interval(d.probs), UNIT_INTERVAL) end
  else
    d.logits = param(logits, fn, "logits")
    if validate then check_param(d, "logits", not_nan(d.logits), "Real()") end
  end
  d._lims = { lims[1], lims[2] }
  d.batch_shape, d.event_shape = (rawget(d, "probs") or d.logits):size(), Size()
  d.has_rsample = true
  return d
end
function ContinuousBernoulli._lazy.logits(d)
  local p = clamp_probs(d.probs)
  return p:log() - (-p):log1p()
end
function ContinuousBernoulli._lazy.probs(d) return clamp_probs(d.logits:sigmoid()) end
function ContinuousBernoulli._lazy.param_shape(d) return (rawget(d, "probs") or d.logits):size() end
-- where probs is outside lims (the closed forms), and probs with lims[1] inside
function ContinuousBernoulli:_outside_unstable_region()
  return self.probs:le(self._lims[1]):logical_or(self.probs:gt(self._lims[2]))
end
function ContinuousBernoulli:_cut_probs()
  return wick.where(self:_outside_unstable_region(), self.probs, self._lims[1])
end
-- log C(p), the log normaliser: log |log(1 - p) - log p| - log |1 - 2p|
function ContinuousBernoulli:_cont_bern_log_norm()
  local cut = self:_cut_probs()
  local below = wick.where(cut:le(0.5), cut, 0)
  local above = wick.where(cut:ge(0.5), cut, 1)
  local log_norm = ((-cut):log1p() - cut:log()):abs():log()
    - wick.where(cut:le(0.5), (-2 * below):log1p(), (2 * above - 1):log())
  local x = (self.probs - 0.5) ^ 2
  local taylor = math.log(2) + (4 / 3 + 104 / 45 * x) * x
  return wick.where(self:_outside_unstable_region(), log_norm, taylor)
end
function ContinuousBernoulli._lazy.mean(d)
  local cut = d:_cut_probs()
  local mus = cut / (2 * cut - 1) + ((-cut):log1p() - cut:log()):reciprocal()
  local x = d.probs - 0.5
  local taylor = 0.5 + (1 / 3 + 16 / 45 * x ^ 2) * x
  return wick.where(d:_outside_unstable_region(), mus, taylor)
end
function ContinuousBernoulli._lazy.variance(d)
  local cut = d:_cut_probs()
  local vars = cut * (cut - 1) / (1 - 2 * cut) ^ 2 + (((-cut):log1p() - cut:log()) ^ 2):reciprocal()
  local x = (d.probs - 0.5) ^ 2
  local taylor = 1 / 12 - (1 / 15 - 128 / 945 * x) * x
  return wick.where(d:_outside_unstable_region(), vars, taylor)
end
function ContinuousBernoulli._lazy.stddev(d) return d.variance:sqrt() end
function ContinuousBernoulli:log_prob(value)
  local fn = "ContinuousBernoulli:log_prob"
  value = value_in(self, fn, value, self.logits, UNIT_INTERVAL, in_unit_interval)
  local logits, v = broadcast_params(fn, self.logits, value)
  return -wick.nn.functional.binary_cross_entropy_with_logits(logits, v, { reduction = "none" })
    + self:_cont_bern_log_norm()
end
--- d:cdf(x): (p^x (1 - p)^(1 - x) + p - 1) / (2p - 1), x within lims; d:icdf(u) its inverse (not checked,
--- as PyTorch's)
function ContinuousBernoulli:cdf(value)
  value = value_in(self, "ContinuousBernoulli:cdf", value, self.probs, UNIT_INTERVAL, in_unit_interval)
  local cut = self:_cut_probs()
  local cdfs = (cut:pow(value) * (1 - cut):pow(1 - value) + cut - 1) / (2 * cut - 1)
  local unbounded = wick.where(self:_outside_unstable_region(), cdfs, value)
  return wick.where(value:le(0), 0, wick.where(value:ge(1), 1, unbounded))
end
function ContinuousBernoulli:icdf(value)
  value = param(value, "ContinuousBernoulli:icdf", "value", self.probs)
  local cut = self:_cut_probs()
  local inverse = ((-cut + value * (2 * cut - 1)):log1p() - (-cut):log1p()) / (cut:log() - (-cut):log1p())
  return wick.where(self:_outside_unstable_region(), inverse, value)
end
--- d:rsample([sample_shape]): icdf of uniforms, differentiable in probs (or logits)
function ContinuousBernoulli:rsample(sample_shape)
  local fn = "ContinuousBernoulli:rsample"
  return self:icdf(uniforms(fn, shape_of(sample_shape, self.batch_shape, fn), self.probs))
end
ContinuousBernoulli.sample = sample_of
function ContinuousBernoulli:entropy()
  local log_probs0, log_probs1 = (-self.probs):log1p(), self.probs:log()
  return self.mean * (log_probs0 - log_probs1) - self:_cont_bern_log_norm() - log_probs0
end

--- GeneralizedPareto(loc, scale, concentration): values in [loc, inf), or [loc, loc - scale / concentration]
--- where concentration < 0; concentration 0 (within 1e-8, PyTorch's isclose) is loc + Exponential(1 / scale)
local GeneralizedPareto = class("GeneralizedPareto")
GeneralizedPareto._keywords = { "loc", "scale", "concentration" }
GeneralizedPareto._params = { "loc", "scale", "concentration" }
function GeneralizedPareto.new(loc, scale, concentration, opts)
  local fn = "GeneralizedPareto"
  local d = setmetatable({}, GeneralizedPareto)
  d.loc, d.scale, d.concentration = n_params(fn, { loc, scale, concentration }, { "loc", "scale", "concentration" },
    opts)
  if validating(d, opts) then
    check_param(d, "loc", not_nan(d.loc), "Real()")
    check_param(d, "scale", d.scale:gt(0), POSITIVE)
    check_param(d, "concentration", not_nan(d.concentration), "Real()")
  end
  d.batch_shape, d.event_shape = d.loc:size(), Size()
  d.has_rsample = true
  return d
end
-- the support's upper bound: loc - scale / concentration where concentration < 0, else inf
local function gp_upper(d) return wick.where(d.concentration:lt(0), d.loc - d.scale / d.concentration, math.huge) end
-- (0-dim bounds as numbers: they print as PyTorch's f-string prints a 0-dim tensor, 0.0)
function GeneralizedPareto._lazy.support(d)
  if d.loc:dim() == 0 then return Cn.interval(d.loc:item(), gp_upper(d):item()) end
  return Cn.interval(d.loc, gp_upper(d))
end
-- the concentration, where it is 0 (|c| <= 1e-8), and it with 1 there
local function gp_concentration(d)
  local c = d.concentration
  local eq_zero = c:abs():le(1e-8)
  return eq_zero, wick.where(eq_zero, 1, c)
end
-- (x - loc) / scale of a value of the support (checked when validating, its bounds in the message where
-- they are single numbers, as PyTorch prints them)
local function gp_z(d, fn, value)
  value = param(value, fn, "value", d.loc)
  if d._validate_args then
    local s = d.support
    local text = "Interval(lower_bound=loc, upper_bound=loc - scale / concentration or inf)"
    if d.loc:dim() == 0 then text = tostring(s) end
    check_sample(d, fn, value, text, function(v) return s.check(v) end)
  end
  return (value - d.loc) / d.scale
end
function GeneralizedPareto:log_prob(value)
  local z = gp_z(self, "GeneralizedPareto:log_prob", value)
  local eq_zero, safe = gp_concentration(self)
  local y = safe:reciprocal() + wick.ones_like(z)
  local nonzero = wick.where(y:eq(0), y, y * (safe * z):log1p())
  return -self.scale:log() - wick.where(eq_zero, z, nonzero)
end
local function gp_log_survival(d, fn, value)
  local z = gp_z(d, fn, value)
  local eq_zero, safe = gp_concentration(d)
  return wick.where(eq_zero, -z, -(safe * z):log1p() / safe)
end
--- d:log_survival_function(x): log(1 - cdf(x)); d:log_cdf(x), d:cdf(x) from it; d:icdf(u) (not checked)
function GeneralizedPareto:log_survival_function(value)
  return gp_log_survival(self, "GeneralizedPareto:log_survival_function", value)
end
function GeneralizedPareto:log_cdf(value)
  return (-gp_log_survival(self, "GeneralizedPareto:log_cdf", value):exp()):log1p()
end
function GeneralizedPareto:cdf(value)
  return (-gp_log_survival(self, "GeneralizedPareto:cdf", value):exp()):log1p():exp()
end
function GeneralizedPareto:icdf(value)
  value = param(value, "GeneralizedPareto:icdf", "value", self.loc)
  local eq_zero, safe = gp_concentration(self)
  local logu = (-value):log1p()
  local nonzero = self.loc + self.scale / safe * (-safe * logu):expm1()
  local zero = self.loc - self.scale * logu
  return wick.where(eq_zero, zero, nonzero)
end
function GeneralizedPareto:rsample(sample_shape)
  local fn = "GeneralizedPareto:rsample"
  return self:icdf(uniforms(fn, shape_of(sample_shape, self.batch_shape, fn), self.loc))
end
GeneralizedPareto.sample = sample_of
function GeneralizedPareto._lazy.mean(d)
  local valid = d.concentration:lt(1)
  local safe = wick.where(valid, d.concentration, 0.5)
  return wick.where(valid, d.loc + d.scale / (1 - safe), 0 / 0)
end
function GeneralizedPareto._lazy.variance(d)
  local valid = d.concentration:lt(0.5)
  local safe = wick.where(valid, d.concentration, 0.25)
  return wick.where(valid, d.scale ^ 2 / ((1 - safe) ^ 2 * (1 - 2 * safe)), 0 / 0)
end
function GeneralizedPareto._lazy.stddev(d) return d.variance:sqrt() end
function GeneralizedPareto._lazy.mode(d) return d.loc end
function GeneralizedPareto:entropy()
  return (self.scale:log() + self.concentration + 1):expand(self.batch_shape)
end

for _, C in ipairs({ VonMises, ContinuousBernoulli, GeneralizedPareto }) do receivers(C) end
constrain({
  [VonMises] = { Cn.real, { loc = Cn.real, concentration = Cn.positive } },
  [ContinuousBernoulli] = { Cn.unit_interval, { probs = Cn.unit_interval, logits = Cn.real } },
  [GeneralizedPareto] = { nil, { loc = Cn.real, scale = Cn.positive, concentration = Cn.real } },
})

-- ContinuousBernoulli's KL divergences (PyTorch's register_kl pairs; none with Beta, Gamma or Laplace as q:
-- no closed form)
register_kl(ContinuousBernoulli, ContinuousBernoulli)(function(p, q)
  local t1 = p.mean * (p.logits - q.logits)
  local t2 = p:_cont_bern_log_norm() + (-p.probs):log1p()
  local t3 = -q:_cont_bern_log_norm() - (-q.probs):log1p()
  return t1 + t2 + t3
end)
-- -H(p) - E_p[log q] for q a ContinuousBernoulli and p a Beta or Uniform (on [0, 1])
local function kl_to_continuous_bernoulli(p, q)
  return -p:entropy() - p.mean * q.logits - (-q.probs):log1p() - q:_cont_bern_log_norm()
end
register_kl(Beta, ContinuousBernoulli)(kl_to_continuous_bernoulli)
register_kl(Uniform, ContinuousBernoulli)(function(p, q)
  -- (infinite where high >= 1 or low <= 0, PyTorch's test, bounds included)
  return wick.where(p.high:ge(1):logical_or(p.low:le(0)), math.huge, kl_to_continuous_bernoulli(p, q))
end)
register_kl(ContinuousBernoulli, Exponential)(function(p, q)
  return -p:entropy() - q.rate:log() + q.rate * p.mean
end)
register_kl(ContinuousBernoulli, Normal)(function(p, q)
  local t1 = -p:entropy()
  local t2 = 0.5 * (LOG_2PI + (q.loc / q.scale):square()) + q.scale:log()
  local t3 = (p.variance + p.mean:square() - 2 * q.loc * p.mean) / (2 * q.scale:square())
  return t1 + t2 + t3
end)
register_kl(ContinuousBernoulli, Uniform)(function(p, q)
  -- (infinite where q.low >= 0 or q.high <= 1: PyTorch's test as it stands, so even for Uniform(0, 1))
  return wick.where(q.low:ge(0):logical_or(q.high:le(1)), math.huge, -p:entropy() + (q.high - q.low):log())
end)
register_kl(ContinuousBernoulli, Pareto)(function(p) return infinite_like(p.probs) end)
for P, field in pairs({ [Exponential] = "rate", [Gamma] = "concentration", [Gumbel] = "loc", [Laplace] = "loc",
  [Normal] = "loc", [Pareto] = "scale" }) do
  register_kl(P, ContinuousBernoulli)(function(p) return infinite_like(p[field]) end)
end

-- PyTorch's submodules, for the long import paths
-- (torch.distributions.categorical.Categorical, .normal.Normal, .kl.kl_divergence):
-- each class under its module's name, snake_case but for PyTorch's few others
local MODULE_NAME = { FisherSnedecor = "fishersnedecor", OneHotCategoricalStraightThrough = "one_hot_categorical",
  StudentT = "studentT", RelaxedOneHotCategorical = "relaxed_categorical",
  ExpRelaxedCategorical = "relaxed_categorical", LogitRelaxedBernoulli = "relaxed_bernoulli" }
M.distribution = { Distribution = Distribution }
local classes = {}
for name, C in pairs(M) do
  if type(C) == "table" and rawget(C, "__name") == name and name ~= "Distribution" then classes[#classes + 1] = name end
end
local modules = {}
for _, name in ipairs(classes) do
  local module = MODULE_NAME[name] or name:gsub("(%l)(%u)", "%1_%2"):lower()
  modules[module] = modules[module] or {}
  modules[module][name] = M[name]
end
for module, members in pairs(modules) do
  M[module] = check.strict(members, "wick.distributions." .. module)
end

-- the transforms under wick.distributions too, as torch.distributions.ExpTransform
for name, C in pairs(T) do
  if type(C) == "table" and rawget(C, "_is_transform_class") and name:sub(1, 1) ~= "_" then M[name] = C end
end
M.identity_transform = T.identity_transform

-- a name wick.distributions does not have is an error at the caller's line
check.strict(M, "wick.distributions")

return M
