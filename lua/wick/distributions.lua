-- wick.distributions: PyTorch's torch.distributions for the common cases
-- (Categorical, Normal, Bernoulli, Uniform, and kl_divergence between two of a
-- kind), as compositions of wick's ops, so log_prob, entropy and rsample are
-- differentiable. Categorical's values are 1-based class indices, as wick's
-- class targets are.
local wick = require("wick")
local check = require("wick.argcheck")

local M = {}
local LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)

local function is_tensor(v) return wick.is_tensor(v) end
-- a number or tensor parameter as a floating tensor (numbers in `like`'s dtype and device)
local function param(v, fn, name, like)
  if is_tensor(v) then return v:is_floating_point() and v or v:to(wick.get_default_dtype()) end
  check.number(v, fn, name)
  return wick.full({}, v, like and { dtype = like.dtype, device = like.device } or nil)
end
-- sample_shape ({} or nil, a number, or a size table) followed by a base shape
local function shape_of(sample_shape, base, fn)
  local out = {}
  if type(sample_shape) == "number" then out[1] = sample_shape
  elseif sample_shape ~= nil then
    check.table(sample_shape, fn, "sample_shape")
    for i, n in ipairs(sample_shape) do out[i] = check.int(n, fn, "sample_shape", 0) end
  end
  for _, n in ipairs(base) do out[#out + 1] = n end
  return out
end

local function class(name)
  local C = { __name = name }
  C.__index = C
  C.__tostring = function(d) return name .. "()" end
  M[name] = setmetatable(C, { __call = function(cls, ...) return cls.new(...) end })
  return C
end

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
  return probs, opts.logits
end

-- ---- Categorical ----

--- Categorical(probs) or Categorical{probs = p} / {logits = l}: over the last
--- dim; sample() gives 1-based classes
local Categorical = class("Categorical")
function Categorical.new(probs, opts)
  local fn = "Categorical"
  local logits
  probs, logits = probs_or_logits(fn, probs, opts, "tensor")
  local d = setmetatable({}, Categorical)
  if probs then
    check.tensor(probs, fn, "probs")
    if probs:dim() < 1 then check.fail(fn, "probs must be at least one-dimensional") end
    d.probs = probs / probs:sum(-1, true)
    d.logits = d.probs:clamp(wick.finfo(d.probs.dtype).tiny, 1):log()
  else
    check.tensor(logits, fn, "logits")
    if logits:dim() < 1 then check.fail(fn, "logits must be at least one-dimensional") end
    d.logits = logits - logits:logsumexp(-1, true)
    d.probs = d.logits:exp()
  end
  d.batch_shape = d.probs:size()
  d._num_events = table.remove(d.batch_shape)
  d.event_shape = {}
  return d
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
--- d:log_prob(value): the log probability of 1-based classes `value`
function Categorical:log_prob(value)
  check.tensor(value, "Categorical:log_prob", "value")
  if value:dim() < #self.batch_shape then value = value:expand(self.batch_shape) end
  local shape = value:size()
  shape[#shape + 1] = self._num_events
  return self.logits:expand(shape):gather(-1, value:to("int64"):unsqueeze(-1)):squeeze(-1)
end
function Categorical:entropy()
  local p_logp = self.probs * self.logits
  return -p_logp:sum(-1)
end

-- ---- Normal ----

--- Normal(loc, scale) (numbers or tensors, broadcast): sample, rsample (with
--- gradients through loc and scale), log_prob, entropy, cdf, mean, stddev, variance
local Normal = class("Normal")
function Normal.new(loc, scale, opts)
  local d = setmetatable({}, Normal)
  d.loc, d.scale = two_params("Normal", loc, scale, "loc", "scale", opts)
  d.mean, d.stddev = d.loc, d.scale
  d.variance = d.scale * d.scale
  d.batch_shape, d.event_shape = d.loc:size(), {}
  return d
end
function Normal:rsample(sample_shape)
  local shape = shape_of(sample_shape, self.batch_shape, "Normal:rsample")
  local eps = wick.randn(shape, { dtype = self.loc.dtype, device = self.loc.device })
  return self.loc + eps * self.scale
end
Normal.sample = sample_of
function Normal:log_prob(value)
  value = param(value, "Normal:log_prob", "value", self.loc)
  return -((value - self.loc) ^ 2) / (2 * self.variance) - self.scale:log() - LOG_SQRT_2PI
end
function Normal:entropy() return self.scale:log() + (0.5 + LOG_SQRT_2PI) end
function Normal:cdf(value)
  value = param(value, "Normal:cdf", "value", self.loc)
  return ((value - self.loc) / (self.scale * math.sqrt(2))):erf():add(1):mul(0.5)
end

-- ---- Bernoulli ----

--- Bernoulli(probs) or Bernoulli{probs = p} / {logits = l}
local Bernoulli = class("Bernoulli")
function Bernoulli.new(probs, opts)
  local fn = "Bernoulli"
  local logits
  probs, logits = probs_or_logits(fn, probs, opts, "tensor|number")
  local d = setmetatable({}, Bernoulli)
  if probs ~= nil then
    d.probs = param(probs, fn, "probs")
    local p = d.probs:clamp(wick.finfo(d.probs.dtype).eps, 1 - wick.finfo(d.probs.dtype).eps)
    d.logits = (p / (1 - p)):log()
  else
    d.logits = param(logits, fn, "logits")
    d.probs = d.logits:sigmoid()
  end
  d.mean, d.variance = d.probs, d.probs * (1 - d.probs)
  d.batch_shape, d.event_shape = d.probs:size(), {}
  return d
end
function Bernoulli:sample(sample_shape)
  local shape = shape_of(sample_shape, self.batch_shape, "Bernoulli:sample")
  return wick.no_grad(function() return wick.bernoulli(self.probs:expand(shape):contiguous()) end)
end
function Bernoulli:log_prob(value)
  local logits, v = wick.broadcast_tensors(self.logits, param(value, "Bernoulli:log_prob", "value", self.logits))
  return -wick.nn.functional.binary_cross_entropy_with_logits(logits, v, { reduction = "none" })
end
function Bernoulli:entropy()
  return wick.nn.functional.binary_cross_entropy_with_logits(self.logits, self.probs, { reduction = "none" })
end

-- ---- Uniform ----

--- Uniform(low, high): values in [low, high)
local Uniform = class("Uniform")
function Uniform.new(low, high, opts)
  local d = setmetatable({}, Uniform)
  d.low, d.high = two_params("Uniform", low, high, "low", "high", opts)
  d.mean = (d.low + d.high) / 2
  d.variance = (d.high - d.low) ^ 2 / 12
  d.stddev = d.variance:sqrt()
  d.batch_shape, d.event_shape = d.low:size(), {}
  return d
end
function Uniform:rsample(sample_shape)
  local shape = shape_of(sample_shape, self.batch_shape, "Uniform:rsample")
  local u = wick.rand(shape, { dtype = self.low.dtype, device = self.low.device })
  return self.low + u * (self.high - self.low)
end
Uniform.sample = sample_of
function Uniform:log_prob(value)
  value = param(value, "Uniform:log_prob", "value", self.low)
  local inside = value:ge(self.low):logical_and(value:lt(self.high))
  return wick.where(inside, -(self.high - self.low):log(), -math.huge)
end
function Uniform:entropy() return (self.high - self.low):log() end

-- ---- KL divergence ----

--- kl_divergence(p, q) for two distributions of one kind (Normal, Categorical, Bernoulli, Uniform)
function M.kl_divergence(p, q)
  local kind = getmetatable(p)
  if kind == nil or getmetatable(q) ~= kind then
    check.fail("kl_divergence", "no KL divergence between %s and %s (two distributions of one kind are needed)",
      kind and kind.__name or type(p), getmetatable(q) and getmetatable(q).__name or type(q))
  end
  if kind == Normal then
    local ratio = (p.scale / q.scale) ^ 2
    local t1 = ((p.loc - q.loc) / q.scale) ^ 2
    return (ratio + t1 - 1 - ratio:log()) * 0.5
  elseif kind == Categorical then
    return (p.probs * (p.logits - q.logits)):sum(-1)
  elseif kind == Bernoulli then
    local sp = p.probs
    return sp * (wick.nn.functional.softplus(-q.logits) - wick.nn.functional.softplus(-p.logits))
      + (1 - sp) * (wick.nn.functional.softplus(q.logits) - wick.nn.functional.softplus(p.logits))
  elseif kind == Uniform then
    local inside = q.low:le(p.low):logical_and(q.high:ge(p.high))
    return wick.where(inside, ((q.high - q.low) / (p.high - p.low)):log(), math.huge)
  end
  check.fail("kl_divergence", "no KL divergence for %s", kind.__name)
end
M.kl = { kl_divergence = M.kl_divergence }

return M
