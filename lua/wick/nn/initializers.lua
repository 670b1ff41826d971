-- wick.nn.init: PyTorch's torch.nn.init. Every function fills its tensor in
-- place without recording gradients and returns it; the fans and gains are
-- computed as PyTorch computes them.
local wick = require("wick")
local check = require("wick.argcheck")
local common = require("wick.nn.common")

local init = {}

local function target(t, fn) return check.tensor(t, fn, "tensor") end

-- Writes `value` (a tensor of t's shape, any dtype/device) into t, gradient-free.
local function assign(t, value)
  wick.no_grad(function() t:copy_(value) end)
  return t
end

local function like(t, dtype) return { device = t.device, dtype = dtype or t.dtype } end
local function is_float(t) return t:is_floating_point() end

-- (complex_ok: a fill of both parts, as the tensor's own normal_ and uniform_ draw them)
local function need_float(t, fn, complex_ok)
  if not (is_float(t) or complex_ok and t:is_complex()) then
    check.fail(fn, "expected a floating-point tensor, got %s", t.dtype)
  end
end

-- U(a, b) and N(mean, std) fills: the tensor's own in-place methods where
-- they exist (wick.ops), else drawn with wick.rand/randn and copied in.
local Tensor = wick.Tensor
local function fill_uniform(t, a, b)
  if t:numel() == 0 then return t end
  if rawget(Tensor, "uniform_") then
    wick.no_grad(function() t:uniform_(a, b) end)
    return t
  end
  return assign(t, wick._rand(t.shape, like(t)) * (b - a) + a)
end
local function fill_normal(t, mean, std)
  if t:numel() == 0 then return t end
  if rawget(Tensor, "normal_") then
    wick.no_grad(function() t:normal_(mean, std) end)
    return t
  end
  return assign(t, wick._randn(t.shape, like(t)) * std + mean)
end

local arguments = check.positional

--- calculate_gain(nonlinearity[, param]): the recommended gain, like PyTorch.
local LINEAR = { linear = true, conv1d = true, conv2d = true, conv3d = true, conv_transpose1d = true,
  conv_transpose2d = true, conv_transpose3d = true, sigmoid = true }
function init.calculate_gain(nonlinearity, ...)
  local param = arguments("calculate_gain", { "param" }, { param = "number" }, ...).param
  check.string(nonlinearity, "calculate_gain", "nonlinearity")
  if LINEAR[nonlinearity] then return 1 end
  if nonlinearity == "tanh" then return 5 / 3 end
  if nonlinearity == "relu" then return math.sqrt(2) end
  if nonlinearity == "leaky_relu" then
    local slope = check.opt_number(param, "calculate_gain", "param", 0.01)
    return math.sqrt(2 / (1 + slope * slope))
  end
  if nonlinearity == "selu" then return 3 / 4 end
  check.fail("calculate_gain", "Unsupported nonlinearity %s", nonlinearity)
end

--- fan_in, fan_out of a weight (PyTorch's _calculate_fan_in_and_fan_out):
--- dim 2 is the input, dim 1 the output, the rest the receptive field.
function init._calculate_fan_in_and_fan_out(t, fn)
  fn = fn or "_calculate_fan_in_and_fan_out"
  target(t, fn)
  if t:dim() < 2 then
    check.fail(fn, "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
  end
  local receptive = 1
  for i = 3, t:dim() do receptive = receptive * t:size(i) end
  return t:size(2) * receptive, t:size(1) * receptive
end

local function correct_fan(t, mode, fn)
  check.one_of(mode, fn, "mode", { "fan_in", "fan_out" })
  local fan_in, fan_out = init._calculate_fan_in_and_fan_out(t, fn)
  return mode == "fan_in" and fan_in or fan_out
end

--- uniform_(tensor[, a = 0[, b = 1]]) (or {a =, b =}): U(a, b).
function init.uniform_(t, ...)
  target(t, "uniform_")
  local o = arguments("uniform_", { "a", "b", "generator" }, { a = "number", b = "number", generator = "any" }, ...)
  local a, b = o.a or 0, o.b or 1
  need_float(t, "uniform_", true)
  if a > b then check.fail("uniform_", "expected a <= b, got a=%s, b=%s", a, b) end
  return fill_uniform(t, a, b)
end

--- normal_(tensor[, mean = 0[, std = 1]]): N(mean, std^2).
function init.normal_(t, ...)
  target(t, "normal_")
  local o = arguments("normal_", { "mean", "std", "generator" }, { mean = "number", std = "number", generator = "any" }, ...)
  local mean, std = o.mean or 0, o.std or 1
  need_float(t, "normal_", true)
  if std < 0 then check.fail("normal_", "expected std >= 0.0, got %s", std) end
  return fill_normal(t, mean, std)
end

-- the standard normal's CDF of a number (wick.special.ndtr: erfc, no cancellation in the lower tail)
local function norm_cdf(x) return wick.special.ndtr(wick.tensor(x, { dtype = "float64" })):item() end

--- trunc_normal_(tensor[, mean = 0[, std = 1[, a = -2[, b = 2]]]]): N(mean, std^2)
--- truncated to [a, b], drawn by inverting the CDF as PyTorch does.
function init.trunc_normal_(t, ...)
  target(t, "trunc_normal_")
  local o = arguments("trunc_normal_", { "mean", "std", "a", "b", "generator" },
    { mean = "number", std = "number", a = "number", b = "number", generator = "any" }, ...)
  local mean, std, a, b = o.mean or 0, o.std or 1, o.a or -2, o.b or 2
  need_float(t, "trunc_normal_")
  if std < 0 then check.fail("trunc_normal_", "expected std >= 0.0, got %s", std) end
  if a > b then check.fail("trunc_normal_", "expected a <= b, got a=%s, b=%s", a, b) end
  if t:numel() == 0 then return t end
  if std == 0 then return assign(t, wick.full(t.shape, math.min(math.max(mean, a), b), like(t))) end
  local l, u = norm_cdf((a - mean) / std), norm_cdf((b - mean) / std)
  local eps = 1e-15
  local x = wick._rand(t.shape, like(t, "float64")) * (2 * u - 2 * l) + (2 * l - 1)
  x = x:clamp(-1 + eps, 1 - eps)
  local v = (x:erfinv() * (std * math.sqrt(2)) + mean):clamp(a, b)
  return assign(t, v)
end

--- constant_(tensor, val), ones_(tensor), zeros_(tensor).
function init.constant_(t, ...)
  target(t, "constant_")
  local val = arguments("constant_", { "val" }, { val = "number" }, ...).val
  check.number(val, "constant_", "val")
  wick.no_grad(function() t:fill_(val) end)
  return t
end
function init.ones_(t) return init.constant_(target(t, "ones_"), 1) end
function init.zeros_(t) return init.constant_(target(t, "zeros_"), 0) end

--- eye_(tensor): the identity matrix of a 2-D tensor.
function init.eye_(t)
  target(t, "eye_")
  if t:dim() ~= 2 then check.fail("eye_", "Only tensors with 2 dimensions are supported") end
  return assign(t, wick.eye(t:size(1), t:size(2), like(t)))
end

--- xavier_uniform_(tensor[, gain = 1]), xavier_normal_(tensor[, gain = 1]).
local XAVIER = { gain = "number", generator = "any" }
function init.xavier_uniform_(t, ...)
  target(t, "xavier_uniform_")
  local o = arguments("xavier_uniform_", { "gain", "generator" }, XAVIER, ...)
  local fan_in, fan_out = init._calculate_fan_in_and_fan_out(t, "xavier_uniform_")
  need_float(t, "xavier_uniform_", true)
  local std = (o.gain or 1) * math.sqrt(2 / (fan_in + fan_out))
  local bound = math.sqrt(3) * std
  return fill_uniform(t, -bound, bound)
end
function init.xavier_normal_(t, ...)
  target(t, "xavier_normal_")
  local o = arguments("xavier_normal_", { "gain", "generator" }, XAVIER, ...)
  local fan_in, fan_out = init._calculate_fan_in_and_fan_out(t, "xavier_normal_")
  need_float(t, "xavier_normal_", true)
  return fill_normal(t, 0, (o.gain or 1) * math.sqrt(2 / (fan_in + fan_out)))
end

--- kaiming_uniform_(tensor[, a = 0[, mode = "fan_in"[, nonlinearity = "leaky_relu"]]])
--- and kaiming_normal_ (same arguments), like PyTorch's.
local KAIMING = { a = "number", mode = "string", nonlinearity = "string", generator = "any" }
local KAIMING_ORDER = { "a", "mode", "nonlinearity", "generator" }
local function kaiming_std(t, fn, ...)
  local o = arguments(fn, KAIMING_ORDER, KAIMING, ...)
  local fan = correct_fan(t, o.mode or "fan_in", fn)
  need_float(t, fn, true)
  local gain = init.calculate_gain(o.nonlinearity or "leaky_relu", o.a or 0)
  return gain / math.sqrt(fan)
end
function init.kaiming_uniform_(t, ...)
  target(t, "kaiming_uniform_")
  local std = kaiming_std(t, "kaiming_uniform_", ...)
  local bound = math.sqrt(3) * std
  return fill_uniform(t, -bound, bound)
end
function init.kaiming_normal_(t, ...)
  target(t, "kaiming_normal_")
  return fill_normal(t, 0, kaiming_std(t, "kaiming_normal_", ...))
end

--- orthogonal_(tensor[, gain = 1]): a (semi-)orthogonal matrix, by Gram-Schmidt
--- on the rows of a normal draw (PyTorch uses a QR; both give a Haar-like sample).
function init.orthogonal_(t, ...)
  target(t, "orthogonal_")
  local o = arguments("orthogonal_", { "gain", "generator" }, XAVIER, ...)
  if t:dim() < 2 then check.fail("orthogonal_", "Only tensors with 2 or more dimensions are supported") end
  need_float(t, "orthogonal_")
  if t:numel() == 0 then return t end
  local rows = t:size(1)
  local cols = t:numel() / rows
  local transposed = rows > cols
  local n, m = transposed and cols or rows, transposed and rows or cols -- n <= m: orthonormal rows
  local a = wick._randn(n, m, { dtype = "float64" })
  local q = wick.zeros(n, m, { dtype = "float64" })
  for i = 1, n do
    local v = a:select(1, i)
    if i > 1 then -- minus its projection on the rows before, twice (classical Gram-Schmidt, re-orthogonalised)
      local prev = q:narrow(1, 1, i - 1)
      for _ = 1, 2 do v = v - prev:t():matmul(prev:matmul(v)) end
    end
    q:select(1, i):copy_(v / (v * v):sum():sqrt())
  end
  local mat = transposed and q:t() or q
  return assign(t, (mat * (o.gain or 1)):reshape(t.shape))
end

--- dirac_(tensor[, groups = 1]): the identity of a convolution (3-, 4- or 5-D
--- weight [out, in, k...]): 1 at the kernel's centre for out channel i and in
--- channel i of each group, 0 elsewhere.
function init.dirac_(t, ...)
  target(t, "dirac_")
  local groups = arguments("dirac_", { "groups" }, { groups = "integer" }, ...).groups or 1
  if t:dim() < 3 or t:dim() > 5 then check.fail("dirac_", "Only tensors with 3, 4, or 5 dimensions are supported") end
  check.int(groups, "dirac_", "groups", 1)
  if t:size(1) % groups ~= 0 then check.fail("dirac_", "dim 0 must be divisible by groups") end
  local per = t:size(1) / groups
  local w = wick.zeros(t.shape, like(t))
  for g = 0, groups - 1 do
    for i = 1, math.min(per, t:size(2)) do
      local at = { g * per + i, i }
      for d = 3, t:dim() do at[d] = math.floor(t:size(d) / 2) + 1 end
      w[at] = 1
    end
  end
  return assign(t, w)
end

--- sparse_(tensor, sparsity[, std = 0.01]): a 2-D weight drawn from N(0, std^2)
--- with ceil(sparsity * rows) zeros in each column (PyTorch's).
function init.sparse_(t, ...)
  target(t, "sparse_")
  local o = arguments("sparse_", { "sparsity", "std", "generator" }, { sparsity = "number", std = "number", generator = "any" }, ...)
  if t:dim() ~= 2 then check.fail("sparse_", "Only tensors with 2 dimensions are supported") end
  check.number(o.sparsity, "sparse_", "sparsity")
  need_float(t, "sparse_")
  local rows, cols = t:size(1), t:size(2)
  local zeros = math.ceil(o.sparsity * rows)
  local w = wick._randn(t.shape, like(t)) * (o.std or 0.01)
  for c = 1, cols do
    if zeros > 0 then w[{ wick.randperm(rows):narrow(1, 1, zeros), c }] = 0 end
  end
  return assign(t, w)
end

-- every argument by name, the tensor too (KGE's nn.init.uniform_(tensor=w, a=-r, b=r) is
-- nn.init.uniform_{tensor = w, a = -r, b = r})
for name, f in pairs(init) do
  if name:sub(-1) == "_" then
    init[name] = function(t, ...)
      if type(t) == "table" and getmetatable(t) == nil and t.tensor ~= nil and select("#", ...) == 0 then
        local rest = {}
        for k, v in pairs(t) do if k ~= "tensor" then rest[k] = v end end
        if next(rest) == nil then return f(t.tensor) end
        return f(t.tensor, rest)
      end
      return f(t, ...)
    end
  end
end

-- PyTorch's private helpers, which programs call (EfficientDet's variance_scaling_ returns
-- _no_grad_normal_(tensor, 0., std)): the fills above, which run without recording already
init._no_grad_uniform_, init._no_grad_normal_, init._no_grad_trunc_normal_ = init.uniform_, init.normal_, init.trunc_normal_
init._no_grad_fill_, init._no_grad_zero_ = init.constant_, init.zeros_

-- PyTorch's deprecated names without the trailing underscore: the same
-- function, with its FutureWarning (once per call site)
for _, name in ipairs({ "uniform", "normal", "constant", "eye", "xavier_uniform", "xavier_normal", "kaiming_uniform",
  "kaiming_normal", "orthogonal" }) do
  local fn = init[name .. "_"]
  init[name] = function(...)
    common.warn(("nn.init.%s is now deprecated in favor of nn.init.%s_."):format(name, name))
    return fn(...)
  end
end

return init
