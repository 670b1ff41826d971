-- wick.distributions.transforms: PyTorch's torch.distributions.transforms,
-- the bijections a TransformedDistribution pushes its base through. A
-- transform t is called as t(x); t.inv is its inverse (t.inv.inv is t);
-- t:log_abs_det_jacobian(x, y) is log |dy/dx| summed over its domain's event
-- dims; t.domain and t.codomain carry event_dim (and a name); t.sign and
-- t.bijective as PyTorch's. cache_size = 1 keeps the last (x, y) pair, so
-- log_prob of a value that rsample just gave takes the x it came from (what
-- TanhTransform(cache_size = 1) is for: atanh at +-1 is infinite).
local wick = require("wick")
local check = require("wick.argcheck")

local M = {}
local unpack = table.unpack or unpack -- luacheck: ignore

-- a constraint as transforms report it: a name and its event_dim
local function constraint(name, event_dim)
  return setmetatable({ name = name, event_dim = event_dim or 0 },
    { __tostring = function(c) return name .. (c.event_dim > 0 and ("(event_dim=" .. c.event_dim .. ")") or "") end })
end
local REAL, POSITIVE, UNIT = constraint("real"), constraint("positive"), constraint("unit_interval")
M._constraint = constraint

--- sum_rightmost(t, n): t summed over its rightmost n dims (t itself for n = 0)
function M._sum_rightmost(t, n)
  if n <= 0 then return t end
  local dims = {}
  for i = 1, n do dims[i] = -i end
  return t:sum(dims)
end
local sum_rightmost = M._sum_rightmost

local F_ -- nn.functional, on first use (wick.nn loads after wick.distributions may)
local function F() F_ = F_ or wick.nn.functional; return F_ end

-- ---- the base ----

local Transform = { __name = "Transform", bijective = false, sign = 1 }
M.Transform = Transform

local Inverse
-- a transform class: instances find their methods in C, then in parent's chain; `positional`, the
-- names of its constructor's required arguments, which also come by keyword (HF's
-- AffineTransform(loc=self.loc, scale=self.scale, event_dim=event_dim))
local function class(name, positional)
  local C = { __name = name, _is_transform_class = true }
  C.__index = function(t, k)
    if k == "inv" then -- made on first use, and kept: t.inv.inv is t
      local inv = Inverse.new(t)
      rawset(t, "inv", inv)
      return inv
    end
    return C[k]
  end
  C.__call = function(t, x) return t:_forward(x) end
  C.__tostring = function(t) return t:_describe() end
  local function construct(cls, ...)
    if positional then return cls.new(check.required(name, positional, ...)) end
    return cls.new(...)
  end
  return setmetatable(C, { __index = Transform, __call = construct })
end
local function is_transform(v)
  return type(v) == "table" and rawget(getmetatable(v) or {}, "_is_transform_class") == true
end
M._is_transform = is_transform

-- a new transform of class C with cache_size from opts (0 or 1)
local function new(C, fn, domain, codomain, cache_size)
  cache_size = check.opt_int(cache_size, fn, "cache_size", 0, 0)
  if cache_size > 1 then check.fail(fn, "cache_size must be 0 or 1, got %d", cache_size) end
  return setmetatable({ domain = domain, codomain = codomain, _cache_size = cache_size }, C)
end

function Transform:_forward(x)
  check.tensor(x, self.__name, "x")
  if self._cache_size == 1 and rawequal(x, self._x) then return self._y end
  local y = self:_call(x)
  if self._cache_size == 1 then self._x, self._y = x, y end
  return y
end
function Transform:_inverse_of(y)
  check.tensor(y, self.__name .. ".inv", "y")
  if self._cache_size == 1 and rawequal(y, self._y) then return self._x end
  local x = self:_inverse(y)
  if self._cache_size == 1 then self._x, self._y = x, y end
  return x
end
function Transform:_inverse()
  check.fail(self.__name .. ".inv", "is not invertible (PyTorch's NotImplementedError)")
end
--- t:log_abs_det_jacobian(x, y): log |dy/dx|, summed over the domain's event dims
function Transform:log_abs_det_jacobian()
  check.fail(self.__name .. ":log_abs_det_jacobian", "not implemented for this transform (PyTorch's NotImplementedError)")
end
--- t:forward_shape(shape), t:inverse_shape(shape): the shape after (before) the transform
function Transform:forward_shape(shape) return shape end
function Transform:inverse_shape(shape) return shape end
function Transform:_describe() return self.__name .. "()" end
--- Transform:extend(name): a class of one's own (PyTorch's `class T(Transform)`): define
--- C:_call(x), C:_inverse(y), C:log_abs_det_jacobian(x, y), and C.domain, C.codomain, C.bijective,
--- C.sign as needed; C(...) makes one and calls C.init(self, ...) if defined (Transform.init(self,
--- {cache_size =}) sets the cache)
function Transform.extend(parent, name)
  check.string(name, "Transform:extend", "name")
  local C = class(name, parent)
  C.new = function(...)
    local t = setmetatable({ _cache_size = 0 }, C)
    t.domain, t.codomain = C.domain or REAL, C.codomain or REAL
    if C.init then C.init(t, ...) end
    return t
  end
  return C
end
function Transform.init(t, opts)
  opts = check.options(opts, t.__name, { cache_size = "integer" })
  t._cache_size = check.opt_int(opts.cache_size, t.__name, "cache_size", 0, 0)
end
--- t:with_cache([cache_size = 1]): the same transform with that cache
function Transform:with_cache(cache_size)
  local copy = {}
  for k, v in pairs(self) do copy[k] = v end
  copy._cache_size, copy._x, copy._y, copy.inv = cache_size == nil and 1 or cache_size, nil, nil, nil
  return setmetatable(copy, getmetatable(self))
end

-- C.new({cache_size}) for a transform with no parameters
local function plain(C, domain, codomain)
  C.new = function(opts)
    if type(opts) == "number" then opts = { cache_size = opts } end -- PyTorch's positional cache_size
    opts = check.options(opts, C.__name, { cache_size = "integer" })
    return new(C, C.__name, domain, codomain, opts.cache_size)
  end
end

-- ---- the inverse of a transform ----

Inverse = class("_InverseTransform")
M._InverseTransform = Inverse
function Inverse.new(t)
  local inv = setmetatable({ _inv = t, domain = t.codomain, codomain = t.domain, bijective = t.bijective,
    sign = t.sign, _cache_size = 0 }, Inverse)
  rawset(inv, "inv", t)
  return inv
end
function Inverse:_forward(y) return self._inv:_inverse_of(y) end
function Inverse:_inverse_of(x) return self._inv:_forward(x) end
function Inverse:log_abs_det_jacobian(x, y) return -self._inv:log_abs_det_jacobian(y, x) end
function Inverse:forward_shape(shape) return self._inv:inverse_shape(shape) end
function Inverse:inverse_shape(shape) return self._inv:forward_shape(shape) end
function Inverse:_describe() return "_InverseTransform(" .. tostring(self._inv) .. ")" end
function Inverse:with_cache(cache_size) return self._inv:with_cache(cache_size).inv end

-- ---- elementwise transforms ----

--- ExpTransform([{cache_size}]): y = exp(x)
local Exp = class("ExpTransform")
M.ExpTransform = Exp
Exp.bijective = true
plain(Exp, REAL, POSITIVE)
function Exp:_call(x) return x:exp() end
function Exp:_inverse(y) return y:log() end
function Exp:log_abs_det_jacobian(x) return x end

--- PowerTransform(exponent[, {cache_size}]): y = x^exponent on (0, inf)
local Power = class("PowerTransform", { "exponent" })
M.PowerTransform = Power
Power.bijective = true
function Power.new(exponent, opts)
  opts = check.options(opts, "PowerTransform", { cache_size = "integer" })
  if not wick.is_tensor(exponent) and type(exponent) ~= "number" then
    check.expected("PowerTransform", "exponent", "a number or a tensor", exponent)
  end
  local t = new(Power, "PowerTransform", POSITIVE, POSITIVE, opts.cache_size)
  t.exponent = exponent
  t.sign = wick.is_tensor(exponent) and exponent:sign() or (exponent > 0 and 1 or exponent < 0 and -1 or 0)
  return t
end
function Power:_call(x) return x ^ self.exponent end
function Power:_inverse(y) return y ^ (1 / self.exponent) end
function Power:log_abs_det_jacobian(x, y) return (self.exponent * y / x):abs():log() end

-- sigmoid kept inside (tiny, 1 - eps) of the dtype, as PyTorch's _clipped_sigmoid
local function clipped_sigmoid(x)
  local fi = wick.finfo(x.dtype)
  return x:sigmoid():clamp(fi.tiny, 1 - fi.eps)
end

--- SigmoidTransform([{cache_size}]): y = sigmoid(x), kept inside (0, 1)
local Sigmoid = class("SigmoidTransform")
M.SigmoidTransform = Sigmoid
Sigmoid.bijective = true
plain(Sigmoid, REAL, UNIT)
function Sigmoid:_call(x) return clipped_sigmoid(x) end
function Sigmoid:_inverse(y)
  local fi = wick.finfo(y.dtype)
  y = y:clamp(fi.tiny, 1 - fi.eps)
  return y:log() - (-y):log1p()
end
function Sigmoid:log_abs_det_jacobian(x) return -F().softplus(-x) - F().softplus(x) end

--- TanhTransform([{cache_size}]): y = tanh(x); its log-det is 2 (log 2 - x - softplus(-2x)), stable for large x
local Tanh = class("TanhTransform")
M.TanhTransform = Tanh
Tanh.bijective = true
plain(Tanh, REAL, constraint("interval(-1, 1)"))
function Tanh:_call(x) return x:tanh() end
function Tanh:_inverse(y) return y:atanh() end
function Tanh:log_abs_det_jacobian(x) return 2 * (math.log(2) - x - F().softplus(-2 * x)) end

--- SoftplusTransform([{cache_size}]): y = log(1 + exp(x))
local Softplus = class("SoftplusTransform")
M.SoftplusTransform = Softplus
Softplus.bijective = true
plain(Softplus, REAL, POSITIVE)
function Softplus:_call(x) return F().softplus(x) end
function Softplus:_inverse(y) return (-y):expm1():neg():log() + y end
function Softplus:log_abs_det_jacobian(x) return -F().softplus(-x) end

--- AbsTransform(): y = |x| (not bijective; its inverse is the identity, as PyTorch's)
local Abs = class("AbsTransform")
M.AbsTransform = Abs
plain(Abs, REAL, POSITIVE)
function Abs:_call(x) return x:abs() end
function Abs:_inverse(y) return y end

--- AffineTransform(loc, scale[, event_dim = 0[, cache_size]][, {event_dim =, cache_size =}]): y = loc + scale x
--- (numbers or tensors; event_dim and cache_size by position too, as PyTorch's: PatchTSMixer's
--- AffineTransform(loc, scale, event_dim))
local Affine = class("AffineTransform", { "loc", "scale" })
M.AffineTransform = Affine
Affine.bijective = true
function Affine.new(loc, scale, ...)
  local fn = "AffineTransform"
  local opts = check.positional(fn, { "event_dim", "cache_size" }, { event_dim = "integer", cache_size = "integer" }, ...)
  for name, v in pairs({ loc = loc, scale = scale }) do
    if not wick.is_tensor(v) and type(v) ~= "number" then check.expected(fn, name, "a number or a tensor", v) end
  end
  local event_dim = check.opt_int(opts.event_dim, fn, "event_dim", 0, 0)
  local t = new(Affine, fn, constraint("real", event_dim), constraint("real", event_dim), opts.cache_size)
  t.loc, t.scale, t.event_dim = loc, scale, event_dim
  t.sign = wick.is_tensor(scale) and scale:sign() or (scale > 0 and 1 or scale < 0 and -1 or 0)
  return t
end
function Affine:_call(x) return self.scale * x + self.loc end
function Affine:_inverse(y) return (y - self.loc) / self.scale end
function Affine:log_abs_det_jacobian(x)
  local result
  if wick.is_tensor(self.scale) then
    result = self.scale:abs():log()
  else
    result = wick.full_like(x, math.log(math.abs(self.scale)))
  end
  local shape = x:size()
  if self.event_dim > 0 then
    local keep = {}
    for i = 1, result:dim() - self.event_dim do keep[i] = result:size(i) end
    keep[#keep + 1] = -1
    result = result:reshape(keep):sum(-1)
    local cut = {}
    for i = 1, #shape - self.event_dim do cut[i] = shape[i] end
    shape = cut
  end
  return result:expand(shape)
end
function Affine:forward_shape(shape)
  local out = shape
  for _, v in ipairs({ self.loc, self.scale }) do
    if wick.is_tensor(v) then out = wick.broadcast_shapes(out, v:size()) end
  end
  return out
end
Affine.inverse_shape = Affine.forward_shape
function Affine:_describe() return "AffineTransform()" end

-- ---- transforms over the last dim ----

--- SoftmaxTransform(): y = softmax(x) over the last dim (not bijective; inverse log)
local Softmax = class("SoftmaxTransform")
M.SoftmaxTransform = Softmax
plain(Softmax, constraint("real_vector", 1), constraint("simplex", 1))
function Softmax:_call(x)
  local p = (x - x:amax(-1, true)):exp()
  return p / p:sum(-1, true)
end
function Softmax:_inverse(y) return y:log() end

--- StickBreakingTransform(): R^(k-1) onto the k-simplex by stick breaking (bijective)
local Stick = class("StickBreakingTransform")
M.StickBreakingTransform = Stick
Stick.bijective = true
plain(Stick, constraint("real_vector", 1), constraint("simplex", 1))
-- k + 1 - (1, 2, ..., k) for the last dim's size k, in x's dtype and device
local function stick_offset(x, k, plus)
  return plus - wick.ones(k, { dtype = x.dtype, device = x.device }):cumsum(1)
end
function Stick:_call(x)
  local k = x:size(-1)
  local z = clipped_sigmoid(x - stick_offset(x, k, k + 1):log())
  local z_cumprod = (1 - z):cumprod(-1)
  return F().pad(z, { 0, 1 }, "constant", 1) * F().pad(z_cumprod, { 1, 0 }, "constant", 1)
end
function Stick:_inverse(y)
  local k = y:size(-1) - 1
  local y_crop = y:narrow(-1, 1, k)
  local sf = (1 - y_crop:cumsum(-1)):clamp(wick.finfo(y.dtype).tiny, math.huge)
  return y_crop:log() - sf:log() + stick_offset(y, k, k + 1):log()
end
function Stick:log_abs_det_jacobian(x, y)
  local k = x:size(-1)
  x = x - stick_offset(x, k, k + 1):log()
  return (-x + F().logsigmoid(x) + y:narrow(-1, 1, k):log()):sum(-1)
end
function Stick:forward_shape(shape)
  local out = {}
  for i = 1, #shape do out[i] = shape[i] end
  out[#out] = out[#out] + 1
  return wick.Size(out)
end
function Stick:inverse_shape(shape)
  local out = {}
  for i = 1, #shape do out[i] = shape[i] end
  out[#out] = out[#out] - 1
  return wick.Size(out)
end

-- ---- transforms of transforms ----

--- ComposeTransform(parts[, {cache_size}]): parts applied in order; ComposeTransform({}) is the identity
local Compose = class("ComposeTransform")
M.ComposeTransform = Compose
function Compose.new(parts, opts)
  local fn = "ComposeTransform"
  check.table(parts, fn, "parts")
  opts = check.options(opts, fn, { cache_size = "integer" })
  for i, p in ipairs(parts) do
    if not is_transform(p) then check.expected(fn, "parts[" .. i .. "]", "a transform", p) end
  end
  local t = new(Compose, fn, nil, nil, opts.cache_size)
  t.parts = { unpack(parts) }
  local bijective, sign = true, 1
  for _, p in ipairs(parts) do
    bijective = bijective and p.bijective
    sign = sign * p.sign
  end
  t.bijective, t.sign = bijective, sign
  if #parts == 0 then
    t.domain, t.codomain = REAL, REAL
  else
    -- PyTorch's event_dim bookkeeping: the most event dims any part needs
    local e = parts[#parts].codomain.event_dim
    for i = #parts, 1, -1 do
      e = math.max(e - parts[i].codomain.event_dim + parts[i].domain.event_dim, parts[i].domain.event_dim)
    end
    t.domain = constraint(parts[1].domain.name, e)
    e = parts[1].domain.event_dim
    for _, p in ipairs(parts) do
      e = math.max(e - p.domain.event_dim + p.codomain.event_dim, p.codomain.event_dim)
    end
    t.codomain = constraint(parts[#parts].codomain.name, e)
  end
  return t
end
function Compose:_call(x)
  for _, p in ipairs(self.parts) do x = p(x) end
  return x
end
function Compose:_inverse(y)
  for i = #self.parts, 1, -1 do y = self.parts[i].inv(y) end
  return y
end
function Compose:log_abs_det_jacobian(x, y)
  local parts = self.parts
  if #parts == 0 then return wick.zeros_like(x) end
  local xs = { x }
  for i = 1, #parts - 1 do xs[i + 1] = parts[i](xs[i]) end
  xs[#parts + 1] = y
  local result, e = 0, self.domain.event_dim
  for i, p in ipairs(parts) do
    result = result + sum_rightmost(p:log_abs_det_jacobian(xs[i], xs[i + 1]), e - p.domain.event_dim)
    e = e + p.codomain.event_dim - p.domain.event_dim
  end
  return result
end
function Compose:forward_shape(shape)
  for _, p in ipairs(self.parts) do shape = p:forward_shape(shape) end
  return shape
end
function Compose:inverse_shape(shape)
  for i = #self.parts, 1, -1 do shape = self.parts[i]:inverse_shape(shape) end
  return shape
end
function Compose:_describe()
  local names = {}
  for i, p in ipairs(self.parts) do names[i] = "    " .. tostring(p) end
  return "ComposeTransform(\n" .. table.concat(names, ",\n") .. "\n)"
end
--- identity_transform: ComposeTransform({})
M.identity_transform = Compose.new({})

--- IndependentTransform(base_transform, reinterpreted_batch_ndims): the base's rightmost batch dims as event dims
local Independent = class("IndependentTransform", { "base_transform", "reinterpreted_batch_ndims" })
M.IndependentTransform = Independent
function Independent.new(base, ndims, opts)
  local fn = "IndependentTransform"
  if not is_transform(base) then check.expected(fn, "base_transform", "a transform", base) end
  ndims = check.int(ndims, fn, "reinterpreted_batch_ndims", 0)
  opts = check.options(opts, fn, { cache_size = "integer" })
  local t = new(Independent, fn, constraint(base.domain.name, base.domain.event_dim + ndims),
    constraint(base.codomain.name, base.codomain.event_dim + ndims), opts.cache_size)
  t.base_transform, t.reinterpreted_batch_ndims = base, ndims
  t.bijective, t.sign = base.bijective, base.sign
  return t
end
function Independent:_call(x) return self.base_transform(x) end
function Independent:_inverse(y) return self.base_transform.inv(y) end
function Independent:log_abs_det_jacobian(x, y)
  return sum_rightmost(self.base_transform:log_abs_det_jacobian(x, y), self.reinterpreted_batch_ndims)
end
function Independent:forward_shape(shape) return self.base_transform:forward_shape(shape) end
function Independent:inverse_shape(shape) return self.base_transform:inverse_shape(shape) end

--- ReshapeTransform(in_shape, out_shape): the rightmost dims from in_shape to out_shape (same numel)
local Reshape = class("ReshapeTransform", { "in_shape", "out_shape" })
M.ReshapeTransform = Reshape
Reshape.bijective = true
local function numel_of(shape)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  return n
end
function Reshape.new(in_shape, out_shape, opts)
  local fn = "ReshapeTransform"
  check.table(in_shape, fn, "in_shape")
  check.table(out_shape, fn, "out_shape")
  opts = check.options(opts, fn, { cache_size = "integer" })
  if numel_of(in_shape) ~= numel_of(out_shape) then
    check.fail(fn, "in_shape, out_shape have different numbers of elements")
  end
  local t = new(Reshape, fn, constraint("real", #in_shape), constraint("real", #out_shape), opts.cache_size)
  t.in_shape, t.out_shape = wick.Size({ unpack(in_shape) }), wick.Size({ unpack(out_shape) })
  return t
end
-- shape's leading dims (all but the last n) followed by tail
local function reshaped(fn, shape, n, from, tail)
  if #shape < n then check.fail(fn, "too few dimensions on input") end
  for i = 1, n do
    if shape[#shape - n + i] ~= from[i] then
      check.fail(fn, "shape mismatch: expected %s but got %s", tostring(from), tostring(shape))
    end
  end
  local out = {}
  for i = 1, #shape - n do out[i] = shape[i] end
  for _, s in ipairs(tail) do out[#out + 1] = s end
  return wick.Size(out)
end
function Reshape:forward_shape(shape)
  return reshaped("ReshapeTransform", shape, #self.in_shape, self.in_shape, self.out_shape)
end
function Reshape:inverse_shape(shape)
  return reshaped("ReshapeTransform.inv", shape, #self.out_shape, self.out_shape, self.in_shape)
end
function Reshape:_call(x) return x:reshape(self:forward_shape(x:size())) end
function Reshape:_inverse(y) return y:reshape(self:inverse_shape(y:size())) end
function Reshape:log_abs_det_jacobian(x)
  local batch = {}
  for i = 1, x:dim() - #self.in_shape do batch[i] = x:size(i) end
  return wick.zeros(batch, { dtype = x.dtype, device = x.device })
end

-- t.method() for t:method() is an error naming it (new is called on the class)
for name, C in pairs(M) do
  if type(C) == "table" and rawget(C, "_is_transform_class") then
    local make = C.new
    C.new = nil
    check.receivers(C, name)
    C.new = make
  end
end

return check.strict(M, "wick.distributions.transforms")
