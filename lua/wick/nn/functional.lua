-- wick.nn.functional: the operations behind the layers and losses. Each is a
-- composition of the core's ops (which record autograd and obey the same-device
-- rule) or one C op (conv2d, pooling).
local wick = require("wick")
local check = require("wick.argcheck")
local common = require("wick.nn.common")
local core = wick._core
local required = common.required
local tensor, opt_tensor = check.tensor, check.opt_tensor

local F = {}
local unpack = table.unpack or unpack

-- The same-device rule for a loss's extra operands, named after the loss (the
-- core's ops check it too, naming their own op).
local same_device = core.same_device
local function check_device(op, arg, t, other)
  if wick.is_tensor(t) and wick.is_tensor(other) and other:dim() > 0 and not same_device(t, other) then
    wick.error(("Expected all tensors to be on the same device, but found at least two devices, %s and %s! (when checking argument for argument %s in method %s)")
      :format(tostring(other.device), tostring(t.device), arg, op))
  end
end

--- a class weight of nll_loss / cross_entropy: on input's device and of its dtype (PyTorch refuses a
-- float32 weight beside float64 logits, rather than rounding the weights: DETR's empty_weight)
local function check_class_weight(fn, weight, input)
  check_device(fn, "weight", weight, input, "input")
  local classes = input:dim() >= 2 and input:size(2) or input:size(1)
  if wick.is_tensor(weight) and (weight:dim() ~= 1 or weight:size(1) ~= classes) then
    wick.error(("%s: weight tensor should be defined either for all %d classes or no classes but got weight tensor of "
      .. "shape: %s"):format(fn, classes, tostring(weight.shape)))
  end
  if wick.is_tensor(weight) and weight.dtype ~= input.dtype then
    wick.error(("%s: expected scalar type %s but found %s (the weight is %s, the input %s: make the weight "
      .. "with {dtype = ...} or register it as a buffer, which model:double() converts)")
      :format(fn, input.dtype, weight.dtype, weight.dtype, input.dtype))
  end
end

-- y = x W^T + b, x of shape [..., in], W [out, in], b [out].
--- (The core's addmm/matmul enforce the same-device rule, with PyTorch's message
--- for a Linear layer: "... argument mat1 in method addmm".)
local linear2d = core.linear
function F.linear(x, weight, bias)
  if type(bias) == "table" and getmetatable(bias) == nil then -- F.linear(x, w, {bias = b})
    bias = check.options(bias, "linear", { bias = "tensor" }).bias
  end
  tensor(x, "linear", "input")
  tensor(weight, "linear", "weight")
  opt_tensor(bias, "linear", "bias")
  if x:dim() == 0 or weight:dim() == 0 then
    check.fail("linear", "both arguments to linear need to be at least 1D, but they are %dD and %dD", x:dim(), weight:dim())
  end
  if weight:dim() == 1 then -- PyTorch's weight of shape (in): x @ w, the last dim gone (D-FINE's Integral)
    if bias ~= nil and x:dim() >= 2 then check.fail("linear", "addmm: mat2 must be a matrix, got 1-D tensor (a 1-D weight takes no bias)") end
    local y = x:matmul(weight)
    if bias then y = y + bias end
    return y
  end
  local n_in = x:size(x:dim())
  if weight:dim() == 2 and weight:size(2) ~= n_in then -- (PyTorch's words, then which sizes disagree)
    local rows = n_in > 0 and x:numel() / n_in or 0
    check.fail("linear", "mat1 and mat2 shapes cannot be multiplied (%dx%d and %dx%d): the input's last dim is %d, "
      .. "the weight [%d, %d] takes %d features", rows, n_in, weight:size(2), weight:size(1), n_in, weight:size(1),
      weight:size(2), weight:size(2))
  end
  if x:dim() == 2 then return linear2d(x, weight, bias) end
  if x:dim() > 2 and n_in > 0 and weight:dim() == 2 and weight:size(2) == n_in then
    -- the core folds the batch dims into rows: one product, one tensor of its own (an
    -- in-place ReLU may follow), and the weight's gradient as g^T x in its own layout
    return linear2d(x, weight, bias)
  end
  local y = x:matmul(weight:t())
  if bias then y = y + bias end
  return y
end

--- F.bilinear(x1, x2, weight[, bias]): y[.., o] = x1[.., i] weight[o, i, j] x2[.., j] + bias[o]
function F.bilinear(x1, x2, weight, bias)
  tensor(x1, "bilinear", "input1")
  tensor(x2, "bilinear", "input2")
  tensor(weight, "bilinear", "weight")
  opt_tensor(bias, "bilinear", "bias")
  if weight:dim() ~= 3 or x1:size(-1) ~= weight:size(2) or x2:size(-1) ~= weight:size(3) then
    check.fail("bilinear", "expected weight [out, %d, %d], got [%s]", x1:size(-1), x2:size(-1), table.concat(weight:size(), ", "))
  end
  local o, i, j = weight:size(1), weight:size(2), weight:size(3)
  local lead = x1:size()
  lead[#lead] = o
  local a = x1:reshape(-1, i):mm(weight:permute(2, 1, 3):reshape(i, o * j)):view(-1, o, j)
  local y = (a * x2:reshape(-1, 1, j)):sum(3):reshape(lead)
  if bias then y = y + bias end
  return y
end
--- F.grouped_mm(mat_a, mat_b[, {offs =, bias =, out_dtype =}]):
--- PyTorch's grouped product of Mixture-of-Experts layers, `offs` the groups' ends (cumulative counts, as
--- PyTorch's: no 1-based shift) along the jagged dimension of a 2-D operand: a (M, K) @ b (G, K, N) gives
--- (M, N), rows offs[g-1]..offs[g] by b[g]; a (M, K) @ b (K, N) gives (G, M, N), K partitioned; a (G, M, K)
--- @ b (K, N) gives (M, N), N partitioned; a (G, M, K) @ b (G, K, N), without offs, is bmm. Rows or
--- columns past offs's last are zeros (PyTorch leaves them unset). Composed of narrow and matmul:
--- differentiable, any dtype and device. bias: (G, N) per group with a 3-D b, else added to the result.
local GROUPED = { offs = "tensor", bias = "tensor", out_dtype = "dtype" }
function F.grouped_mm(a, b, opts)
  tensor(a, "grouped_mm", "mat_a")
  tensor(b, "grouped_mm", "mat_b")
  local o = check.options(opts, "grouped_mm", GROUPED)
  local da, db = a:dim(), b:dim()
  if (da ~= 2 and da ~= 3) or (db ~= 2 and db ~= 3) then
    check.fail("grouped_mm", "mat_a and mat_b must be 2-D or 3-D, got %d-D and %d-D", da, db)
  end
  if (da == 3 and db == 3) ~= (o.offs == nil) then
    check.fail("grouped_mm", da == 3 and db == 3 and "offs must be None when both operands are 3-D"
      or "offs is required when an operand is 2-D")
  end
  local k_a, k_b = a:size(-1), b:size(db == 3 and 2 or 1)
  if k_a ~= k_b then
    check.fail("grouped_mm", "contraction dimension of mat_a and mat_b must match, got %d and %d", k_a, k_b)
  end
  local function products()
    if da == 3 and db == 3 then
      if a:size(1) ~= b:size(1) then check.fail("grouped_mm", "group counts differ: %d and %d", a:size(1), b:size(1)) end
      return a:bmm(b)
    end
    local offs = o.offs
    if offs:dim() ~= 1 or offs:is_floating_point() or offs.dtype == "bool" then
      check.fail("grouped_mm", "offs must be a 1-D integer tensor, got %s of %d dims", offs.dtype, offs:dim())
    end
    local ends = offs:tolist()
    local G = #ends
    local total = da == 2 and db == 3 and a:size(1) or da == 2 and a:size(2) or b:size(2)
    local groups = db == 3 and b:size(1) or da == 3 and a:size(1) or G
    if G ~= groups then check.fail("grouped_mm", "offs has %d groups, the 3-D operand %d", G, groups) end
    if G == 0 then check.fail("grouped_mm", "offs must hold at least one group's end") end
    local prev = 0
    for g = 1, G do
      if ends[g] < prev or ends[g] > total then
        check.fail("grouped_mm", "offs must be non-decreasing ends within %d, got %d after %d", total, ends[g], prev)
      end
      prev = ends[g]
    end
    local parts, at = {}, 0
    for g = 1, G do
      local len = ends[g] - at
      if da == 2 and db == 3 then parts[g] = a:narrow(1, at + 1, len):mm(b[g])
      elseif da == 2 then parts[g] = a:narrow(2, at + 1, len):mm(b:narrow(1, at + 1, len))
      else parts[g] = a[g]:mm(b:narrow(2, at + 1, len)) end
      if o.bias ~= nil and db == 3 then parts[g] = parts[g] + o.bias[g] end
      at = ends[g]
    end
    if da == 2 and db == 2 then return wick.stack(parts) end
    local dim = da == 2 and 1 or 2
    if at < total then -- (past the last group: zeros)
      local tail = da == 2 and { total - at, b:size(3) } or { a:size(2), total - at }
      parts[#parts + 1] = a:new_zeros(tail)
    end
    return wick.cat(parts, dim)
  end
  local y = products()
  if o.bias ~= nil and db ~= 3 then y = y + o.bias end
  if o.out_dtype ~= nil then y = y:to(o.out_dtype) end
  return y
end

local RELU = { inplace = "boolean" }
--- F.relu(x[, inplace = false]) (or {inplace =}): inplace writes into x (x:relu_())
function F.relu(x, ...)
  tensor(x, "relu", "input")
  local o = check.positional("relu", { "inplace" }, RELU, ...)
  if o.inplace then return x:relu_() end
  return x:relu()
end
function F.relu_(x) return tensor(x, "relu_", "input"):relu_() end
--- GELU: exact (erf) form, or PyTorch's tanh approximation with {approximate = "tanh"}
--- (or "tanh" positionally, as F.gelu(input, 'tanh') in PyTorch).
local GELU_OPTIONS = { approximate = "string" }
function F.gelu(x, opts)
  tensor(x, "gelu", "input")
  if opts == nil then return x:gelu() end
  if type(opts) == "string" then opts = { approximate = opts } end
  opts = check.options(opts, "gelu", GELU_OPTIONS)
  local approximate = opts.approximate or "none"
  check.one_of(approximate, "gelu", "approximate", { "none", "tanh" })
  if approximate == "tanh" then return x:gelu_tanh() end
  return x:gelu()
end
-- (one argument each, as PyTorch's: another is an error, never ignored)
local function only_input(fn, n)
  if n > 0 then check.fail(fn, "takes 1 argument (input), got %d more", n) end
end
function F.sigmoid(x, ...)
  only_input("sigmoid", select("#", ...))
  return tensor(x, "sigmoid", "input"):sigmoid()
end
function F.tanh(x, ...)
  only_input("tanh", select("#", ...))
  return tensor(x, "tanh", "input"):tanh()
end

-- ---- more activations (PyTorch's positional arguments, or an options
-- table; inplace = true writes the result into x and returns x, under autograd
-- too, as the modules do) ----
local function act_args(fn, x, order, spec, ...)
  tensor(x, fn, "input")
  return check.positional(fn, order, spec, ...)
end
-- f(x), or with inplace written into x (returned). Under autograd x takes the
-- result's graph over (copy_ records it), as PyTorch's in-place forms do, and
-- the formula reads a copy of x: the values its ops save for backward are not
-- the ones the write replaces.
-- float16 and bfloat16 computed in float32 and rounded once, as PyTorch's kernels
-- (their opmath type): x sigmoid(x) in bfloat16 rounds twice, 1 ulp off in a fifth of
-- the values; float16's exp overflows in softplus from 11 on
local LOW = { float16 = true, bfloat16 = true }
local function opmath(f, v)
  if LOW[v.dtype] then return f(v:float()):to(v.dtype) end
  return f(v)
end
local function activate(x, o, f)
  if not o.inplace then return opmath(f, x) end
  return x:copy_(opmath(f, x.requires_grad and wick.is_grad_enabled() and x:clone() or x))
end
local INPLACE = { inplace = "boolean" }

--- F.silu(x): x sigmoid(x)
function F.silu(x, ...)
  local o = act_args("silu", x, { "inplace" }, INPLACE, ...)
  return activate(x, o, function(v) return v * v:sigmoid() end)
end
--- F.softplus(x[, beta = 1[, threshold = 20]]): log(1 + exp(beta x)) / beta,
--- and x itself where beta x > threshold, as PyTorch computes it (the exp
--- only sees values up to the threshold, so the branch not taken stays
--- finite and its gradient zero)
function F.softplus(x, ...)
  local o = act_args("softplus", x, { "beta", "threshold" }, { beta = "number", threshold = "number" }, ...)
  local beta, threshold = o.beta or 1, o.threshold or 20
  if beta == 0 then check.fail("softplus", "beta must not be 0") end
  return opmath(function(v)
    local z = v * beta
    local above = z:gt(threshold)
    -- (where, not a clamp: at z == threshold the gradient is sigmoid(z), as PyTorch's)
    local soft = wick.where(above, 0, z):exp():log1p() * (1 / beta) -- (log1p: exact far below 0)
    return wick.where(above, v, soft)
  end, x)
end
-- leaky_relu as one node, PyTorch's LeakyReluBackward: the gradient g where
-- x > 0, slope g elsewhere (at 0 the slope's, as PyTorch's); under
-- create_graph x joins that gradient's graph with a zero derivative, as in
-- PyTorch's leaky_relu_backward, so a GAN critic's biases reached only through
-- its masks get zeros, not none, from a gradient penalty's backward
local LeakyRelu
local function leaky_relu_fn()
  if LeakyRelu then return LeakyRelu end
  LeakyRelu = require("wick.autograd").Function:extend("LeakyRelu")
  function LeakyRelu.forward(ctx, v, slope)
    ctx.slope = slope
    ctx:save_for_backward(v)
    return wick.where(v:gt(0), v, v * slope)
  end
  function LeakyRelu.backward(ctx, g)
    local v = ctx.saved_tensors[1]
    local gx = wick.where(v:gt(0), g, g * ctx.slope)
    if wick.is_grad_enabled() and v.requires_grad then -- (where(false, x, 0) is 0 even for inf or NaN x)
      gx = gx + wick.where(wick.zeros({}, { dtype = "bool", device = v.device }), v, 0)
    end
    return gx
  end
  return LeakyRelu
end
--- F.leaky_relu(x[, negative_slope = 0.01[, inplace]])
function F.leaky_relu(x, ...)
  local o = act_args("leaky_relu", x, { "negative_slope", "inplace" }, { negative_slope = "number", inplace = "boolean" }, ...)
  local slope = o.negative_slope or 0.01
  return activate(x, o, function(v)
    if not (v.requires_grad and wick.is_grad_enabled()) then return wick.where(v:gt(0), v, v * slope) end
    return leaky_relu_fn().apply(v, slope)
  end)
end
--- F.elu(x[, alpha = 1[, inplace]])
function F.elu(x, ...)
  local o = act_args("elu", x, { "alpha", "inplace" }, { alpha = "number", inplace = "boolean" }, ...)
  -- alpha (exp(x) - 1) where x <= 0, else x; the exp sees no positive x (its gradient
  -- there would be 0 inf), at 0 the gradient is alpha and a NaN x passes it on, PyTorch's
  return activate(x, o, function(v)
    local nonpositive = v:le(0)
    local below = wick.where(nonpositive, v, wick.zeros({}, { dtype = v.dtype, device = v.device }))
    return wick.where(nonpositive, below:expm1() * (o.alpha or 1), v)
  end)
end
--- F.hardtanh(x[, min_val = -1[, max_val = 1[, inplace]]])
function F.hardtanh(x, ...)
  local o = act_args("hardtanh", x, { "min_val", "max_val", "inplace" },
    { min_val = "number", max_val = "number", inplace = "boolean" }, ...)
  local lo, hi = o.min_val or -1, o.max_val or 1
  if lo > hi then check.fail("hardtanh", "min_val cannot be greater than max_val") end
  return activate(x, o, function(v) return core.hardtanh(v, lo, hi) end)
end
--- F.relu6(x): min(max(x, 0), 6) (hardtanh's gradient: 0 outside (0, 6), a NaN x passes it on, as PyTorch's)
function F.relu6(x, ...)
  local o = act_args("relu6", x, { "inplace" }, INPLACE, ...)
  return activate(x, o, function(v) return core.hardtanh(v, 0, 6) end)
end
--- F.hardsigmoid(x): relu6(x + 3) / 6;  F.hardswish(x): x hardsigmoid(x)
function F.hardsigmoid(x, ...)
  local o = act_args("hardsigmoid", x, { "inplace" }, INPLACE, ...)
  return activate(x, o, function(v) return (v + 3):clamp(0, 6) / 6 end)
end
function F.hardswish(x, ...)
  local o = act_args("hardswish", x, { "inplace" }, INPLACE, ...)
  return activate(x, o, function(v) return v * (v + 3):clamp(0, 6) / 6 end)
end
--- F.mish(x): x tanh(softplus(x))
function F.mish(x, ...)
  local o = act_args("mish", x, { "inplace" }, INPLACE, ...)
  return activate(x, o, function(v) return v * F.softplus(v):tanh() end)
end
--- F.selu(x[, inplace]): scale (x if x > 0, else alpha (exp(x) - 1)), PyTorch's constants;
--- F.celu(x[, alpha = 1[, inplace]]): x if x > 0, else alpha (exp(x / alpha) - 1)
local SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
function F.selu(x, ...)
  local o = act_args("selu", x, { "inplace" }, INPLACE, ...)
  return activate(x, o, function(v) return F.elu(v, SELU_ALPHA) * SELU_SCALE end)
end
function F.celu(x, ...)
  local o = act_args("celu", x, { "alpha", "inplace" }, { alpha = "number", inplace = "boolean" }, ...)
  local alpha = o.alpha or 1
  if alpha == 0 then check.fail("celu", "ZeroDivisionError: alpha cannot be 0 for CELU") end
  return activate(x, o, function(v) return F.elu(v / alpha) * alpha end)
end
--- F.softshrink(x[, lambd = 0.5]): x - lambd above lambd, x + lambd below -lambd, else 0;
--- F.hardshrink(x[, lambd = 0.5]): x where |x| > lambd, else 0
function F.softshrink(x, ...)
  local lambd = act_args("softshrink", x, { "lambd" }, { lambd = "number" }, ...).lambd or 0.5
  if lambd < 0 then check.fail("softshrink", "lambda must be greater or equal to 0, but found to be %s", lambd) end
  local z = wick.zeros({}, { dtype = x.dtype, device = x.device })
  return wick.where(x:gt(lambd), x - lambd, wick.where(x:lt(-lambd), x + lambd, z))
end
function F.hardshrink(x, ...)
  local lambd = act_args("hardshrink", x, { "lambd" }, { lambd = "number" }, ...).lambd or 0.5
  return wick.where(x:abs():gt(lambd), x, wick.zeros({}, { dtype = x.dtype, device = x.device }))
end
--- F.softmin(x[, dim[, _stacklevel[, dtype]]]) (PyTorch's positional order, as F.softmax's; or by name):
--- softmax(-x, dim) (no dim: softmax's implicit one, with its warning)
function F.softmin(x, ...)
  local o = act_args("softmin", x, { "dim", "_stacklevel", "dtype" },
    { dim = "integer", _stacklevel = "integer", dtype = "dtype" }, ...)
  if o.dtype then x = x:to(o.dtype) end -- (cast first, as PyTorch's softmax with a dtype)
  return (-x):softmax(o.dim or F._implicit_softmax_dim(x, "softmin"))
end
-- float16 and bfloat16 norms compute in float32 (their float32 or half parameters too) and round once at
-- the end, as PyTorch's kernels: low_precision(x) says whether, in_compute(t, low) is t to compute with
local function low_precision(x) return x.dtype == "float16" or x.dtype == "bfloat16" end
local function in_compute(t, low) if low and t ~= nil then return t:float() end return t end

--- F.rms_norm(x, normalized_shape[, weight[, eps]]): x / sqrt(mean(x^2) + eps) over the trailing dims,
--- times weight. As PyTorch's: float16 and bfloat16 are computed in float32 (weight included,
--- rounded once at the end), and eps defaults to the machine epsilon of the dtype computed in.
function F.rms_norm(x, ...)
  tensor(x, "rms_norm", "input")
  local o = check.positional("rms_norm", { "normalized_shape", "weight", "eps" },
    { normalized_shape = "integer|table", weight = "tensor", eps = "number" }, ...)
  local shape = type(o.normalized_shape) == "number" and { o.normalized_shape } or o.normalized_shape
  check.table(shape, "rms_norm", "normalized_shape")
  for i = 1, #shape do check.int(shape[i], "rms_norm", "normalized_shape", 0) end
  local dims = {}
  for i = 1, #shape do
    local d = x:dim() - #shape + i
    if d < 1 or x:size(d) ~= shape[i] then
      check.fail("rms_norm", "Given normalized_shape=[%s], expected input with shape [*, %s], but got input of size[%s]",
        table.concat(shape, ", "), table.concat(shape, ", "), table.concat(x:size(), ", "))
    end
    dims[i] = d
  end
  local low = low_precision(x)
  local xc = in_compute(x, low)
  local eps = o.eps or wick.finfo(xc.dtype).eps
  local y = xc * ((xc * xc):mean(dims, true) + eps):rsqrt()
  if o.weight then y = y * in_compute(o.weight, low) end
  return low and y:to(x.dtype) or y
end
--- F.upsample(...) is F.interpolate; F.upsample_nearest(x, size, scale_factor),
--- F.upsample_bilinear(x, size, scale_factor) (align_corners = true): PyTorch's deprecated forms
function F.upsample(...) return F.interpolate(...) end
-- (size and scale_factor also by name: MAML's F.upsample_nearest(x, scale_factor=2))
local function upsample_args(fn, ...)
  local o = check.positional(fn, { "size", "scale_factor" }, { size = "any", scale_factor = "any" }, ...)
  return o.size, o.scale_factor
end
function F.upsample_nearest(x, ...)
  local size, scale_factor = upsample_args("upsample_nearest", ...)
  return F.interpolate(x, { size = size, scale_factor = scale_factor, mode = "nearest" })
end
function F.upsample_bilinear(x, ...)
  local size, scale_factor = upsample_args("upsample_bilinear", ...)
  return F.interpolate(x, { size = size, scale_factor = scale_factor, mode = "bilinear", align_corners = true })
end
--- F.local_response_norm(x, size[, alpha = 1e-4[, beta = 0.75[, k = 1]]]): x / (k + alpha/size
--- sum over `size` neighbouring channels of x^2)^beta, as PyTorch's (AlexNet)
local function local_response_norm(x, size, ...)
  tensor(x, "local_response_norm", "input")
  check.int(size, "local_response_norm", "size", 1)
  local o = check.positional("local_response_norm", { "alpha", "beta", "k" },
    { alpha = "number", beta = "number", k = "number" }, ...)
  local alpha, beta, k = o.alpha or 1e-4, o.beta or 0.75, o.k or 1
  if x:dim() < 3 then check.fail("local_response_norm", "Expected 3D or higher dimensionality input (got %d dimensions)", x:dim()) end
  local n, c = x:size(1), x:size(2)
  local sq = (x * x):reshape({ n, 1, c, -1 }) -- channels as a height, the rest flattened
  sq = F.pad(sq, { 0, 0, math.floor(size / 2), math.floor((size - 1) / 2) })
  local div = F.avg_pool2d(sq, { size, 1 }, { stride = 1 }):reshape(x:size())
  return x / (div * alpha + k) ^ beta
end
-- (size by name too, F.local_response_norm(x, {size = 3}); one given neither way is missing)
function F.local_response_norm(...) return local_response_norm(required("local_response_norm", { "input", "size" }, ...)) end

--- F.logsigmoid(x): log(sigmoid(x)) = -softplus(-x), stable for large |x|
-- (0 - softplus: +0 for a large x, as PyTorch's, where a negation gave -0)
function F.logsigmoid(x) return 0 - F.softplus(-tensor(x, "logsigmoid", "input")) end
--- F.softsign(x): x / (1 + |x|)
function F.softsign(x) return tensor(x, "softsign", "input") / (x:abs() + 1) end
--- F.glu(x[, dim = -1]): a sigmoid(b), a and b the halves of x along dim
function F.glu(x, ...)
  local o = act_args("glu", x, { "dim" }, { dim = "integer" }, ...)
  local dim = o.dim or -1
  local d = dim < 0 and x:dim() + 1 + dim or dim
  if d < 1 or d > x:dim() then check.fail("glu", "dim %d is out of range for a %d-d input", dim, x:dim()) end
  local n = x:size(d)
  if n % 2 ~= 0 then check.fail("glu", "Halving dimension must be even, but dimension %d is size %d", dim, n) end
  return x:narrow(d, 1, n / 2) * x:narrow(d, n / 2 + 1, n / 2):sigmoid()
end

-- f(...) with an error of the op `inner` that it calls named as fn: F.normalize's out written by
-- wick.div, lp_pool1d's pooling by avg_pool1d (PyTorch's words, under the function the user called)
local function named_as(fn, inner, f, ...)
  local ok, r = pcall(f, ...)
  if ok then return r end
  local msg = tostring(r)
  local at = msg:find(inner, 1, true)
  if not at then error(r, 0) end
  local rest = msg:sub(at + #inner):gsub("^%(%)", ""):gsub("^ %(as [%w_]+%)", ""):gsub("^: ", "")
  check.fail(fn, "%s", rest)
end

--- F.normalize(x[, p = 2[, dim = 2[, eps = 1e-12[, out]]]]): x / max(||x||_p, eps) along dim
--- (dim 2 is PyTorch's dim=1: wick's dimensions are 1-based); out (a tensor) takes the result
--- as wick.div's {out =} does and is returned
function F.normalize(x, ...)
  local o = act_args("normalize", x, { "p", "dim", "eps", "out" },
    { p = "number", dim = "integer|table", eps = "number", out = "tensor" }, ...)
  -- dim: one, or several (PyTorch's dim=(1, 2): APG's normalized_guidance), t:norm's
  local dim = type(o.dim) == "table" and o.dim or check.wrap_dim(x, o.dim or 2, "normalize")
  local norm = x:norm(o.p or 2, dim, true)
  if o.out ~= nil then
    return named_as("normalize", "wick.div", wick.div, x, norm:clamp_min(o.eps or 1e-12):expand_as(x), { out = o.out })
  end
  return x / norm:clamp_min(o.eps or 1e-12)
end
--- F.cosine_similarity(x1, x2[, dim = 2[, eps = 1e-8]]): x1 . x2 / (max(||x1||, eps) max(||x2||, eps)) along dim
function F.cosine_similarity(x1, x2, ...)
  tensor(x1, "cosine_similarity", "x1")
  tensor(x2, "cosine_similarity", "x2")
  local o = check.positional("cosine_similarity", { "dim", "eps" }, { dim = "integer", eps = "number" }, ...)
  local dim, eps = o.dim or 2, o.eps or 1e-8
  if x1.shape ~= x2.shape then
    check.broadcastable("cosine_similarity", x1, x2)
    x1, x2 = wick.broadcast_tensors(x1, x2) -- (then dim, as PyTorch's)
  end
  dim = check.wrap_dim(x1, dim, "cosine_similarity")
  local n1 = x1:norm(2, dim):clamp_min(eps)
  local n2 = x2:norm(2, dim):clamp_min(eps)
  return (x1 * x2):sum(dim) / (n1 * n2)
end
--- F.pairwise_distance(x1, x2[, p = 2[, eps = 1e-6[, keepdim = false]]]): ||x1 - x2 + eps||_p over the last dim
--- (keepdims: NumPy's name of keepdim, which PyTorch takes too)
function F.pairwise_distance(x1, x2, ...)
  tensor(x1, "pairwise_distance", "x1")
  tensor(x2, "pairwise_distance", "x2")
  local o = check.positional("pairwise_distance", { "p", "eps", "keepdim" },
    { p = "number", eps = "number", keepdim = "boolean", keepdims = "boolean" }, ...)
  local keepdim = o.keepdim
  if o.keepdims ~= nil then
    if keepdim ~= nil then check.fail("pairwise_distance", "got both keepdim and keepdims (keepdims is another name for keepdim)") end
    keepdim = o.keepdims
  end
  check.broadcastable("pairwise_distance", x1, x2)
  return (x1 - x2 + (o.eps or 1e-6)):norm(o.p or 2, -1, keepdim == true)
end
--- F.one_hot(t[, num_classes]) (or {num_classes =}): int64 of t's shape plus one
--- dimension of num_classes (default: t's largest class); classes are 1-based, as
--- wick's targets are: class k sets entry k.
function F.one_hot(t, ...)
  tensor(t, "one_hot", "tensor")
  local num_classes = check.positional("one_hot", { "num_classes" }, { num_classes = "integer" }, ...).num_classes
  if t:is_floating_point() or t.dtype == "bool" then
    check.fail("one_hot", "one_hot is only applicable to index tensor (int64), got %s", t.dtype)
  end
  local lo = t:numel() > 0 and t:min():item() or 1
  if lo < 1 then check.fail("one_hot", "Class values must be positive (classes are 1-based), got %d", lo) end
  local hi = t:numel() > 0 and t:max():item() or 0
  if num_classes == nil or num_classes == -1 then num_classes = hi end
  check.int(num_classes, "one_hot", "num_classes", 0)
  if hi > num_classes then check.fail("one_hot", "Class values must be at most num_classes (%d), got %d", num_classes, hi) end
  local shape = t:size()
  shape[#shape + 1] = num_classes
  local out = wick.zeros(shape, { dtype = "int64", device = t.device })
  if t:numel() == 0 then return out end
  return out:scatter(-1, t:to("int64"):unsqueeze(-1), 1)
end
-- F.softmax(x, dim[, {dtype =}]) or F.softmax(x, {dim = ..., dtype = ...}) (PyTorch's
-- keywords; also its positional order, F.softmax(x, dim, _stacklevel, dtype)); dtype casts first.
local SOFTMAX = { dim = "integer", _stacklevel = "integer", dtype = "dtype" }
-- PyTorch's implicit choice of dim (deprecated there too, with this warning):
-- dim 1 of 0-, 1- and 3-D inputs, else 2 (F.softmax and nn.Softmax without a dim)
function F._implicit_softmax_dim(x, fn)
  fn = type(fn) == "string" and fn or "softmax"
  tensor(x, fn, "input")
  common.warn(("%s: Implicit dimension choice for %s has been deprecated. Change the call to include dim=X "
    .. "as an argument."):format(fn, fn))
  return (x:dim() <= 1 or x:dim() == 3) and 1 or 2
end
local function softmax_like(fn)
  return function(x, ...)
    tensor(x, fn, "input")
    local o = check.positional(fn, { "dim", "_stacklevel", "dtype" }, SOFTMAX, ...)
    if o.dtype then x = x:to(o.dtype) end
    return x[fn](x, o.dim or F._implicit_softmax_dim(x, fn))
  end
end
F.softmax, F.log_softmax = softmax_like("softmax"), softmax_like("log_softmax")
--- F.flatten(x[, start_dim = 2[, end_dim = -1]]) (or by name): nn.Flatten's defaults
local FLATTEN = { start_dim = "integer", end_dim = "integer" }
function F.flatten(x, ...)
  tensor(x, "flatten", "input")
  local o = check.positional("flatten", { "start_dim", "end_dim" }, FLATTEN, ...)
  return x:flatten(o.start_dim or 2, o.end_dim or -1)
end

--- Inverted dropout: zeroes elements with probability p and scales the rest by 1/(1-p).
--- F.dropout(x[, p = 0.5[, training = true[, inplace]]]) or F.dropout(x, {p =, training =}).
--- F.dropout1d/2d/3d (the same arguments): whole channels, PyTorch's feature dropout
--- (one draw per (N, C) of an (N, C, ...) input).
local DROPOUT = { p = "number", training = "boolean", inplace = "boolean" }
local function dropout_args(fn, x, ...)
  tensor(x, fn, "input")
  local o = check.positional(fn, { "p", "training", "inplace" }, DROPOUT, ...)
  local p = o.p or 0.5
  if p < 0 or p > 1 then wick.error(("dropout probability has to be between 0 and 1, but got %s"):format(p)) end
  return p, o.training ~= false and p ~= 0
end
-- x times a keep mask of `shape` (broadcast over x), scaled by 1 / (1 - p)
local function drop(x, p, shape)
  if p == 1 then return x * 0 end
  local real = x.dtype == "complex64" and "float32" or x.dtype == "complex128" and "float64" or x.dtype
  local keep = wick._rand(shape, { device = x.device, dtype = real }):ge(p):to(real)
  return x * keep * (1 / (1 - p))
end
function F.dropout(x, ...)
  local p, active = dropout_args("dropout", x, ...)
  if not active then return x end
  return drop(x, p, x.shape)
end
local function feature_dropout(fn, x, p)
  if x:dim() < 2 then check.fail(fn, "Feature dropout requires at least 2 dimensions in the input") end
  local shape = x:size()
  for i = 3, #shape do shape[i] = 1 end
  return drop(x, p, shape)
end
-- dropout{k}d: (N, C, k spatial dims) or unbatched (C, k dims); PyTorch's dropout2d
-- also takes other dims, with a warning (3-D as (N, C, L))
local function channel_dropout(k)
  local fn = "dropout" .. k .. "d"
  return function(x, ...)
    local p, active = dropout_args(fn, x, ...)
    local d = x:dim()
    if k == 1 and d ~= 2 and d ~= 3 then
      check.fail(fn, "Expected 2D or 3D input, but received a %dD input. Note that dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).", d)
    end
    if k > 1 and d ~= k + 1 and d ~= k + 2 then
      common.warn(("%s: Received a %d-D input to %s, which is deprecated and will result in an error in a future release. To retain the behavior and silence this warning, please use dropout instead. Note that %s exists to provide channel-wise dropout on inputs with %d spatial dimensions, a channel dimension, and an optional batch dimension (i.e. %dD or %dD inputs).")
        :format(fn, d, fn, fn, k, k + 1, k + 2))
    end
    if k == 2 and d == 3 then
      common.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior is desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior will change in a future release to interpret the input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please switch to using dropout1d instead.")
    end
    if not active then return x end
    if k ~= 2 and d ~= k + 2 then return feature_dropout(fn, x:unsqueeze(1), p):squeeze(1) end -- unbatched, as PyTorch's
    return feature_dropout(fn, x, p)
  end
end
F.dropout1d, F.dropout2d, F.dropout3d = channel_dropout(1), channel_dropout(2), channel_dropout(3)

local pair = common.pair

-- Shape [1, C, 1, ...] that broadcasts a per-channel vector over x (channels at dim 2).
local function per_channel(v, x)
  local shape = { 1, v:numel() }
  for _ = 3, x:dim() do shape[#shape + 1] = 1 end
  return v:view(shape)
end

-- F.conv2d(input, weight[, bias[, stride[, padding[, dilation[, groups]]]]][, opts]): PyTorch's order
local CONV2D = { stride = "integer|table", padding = "integer|table|string", dilation = "integer|table", groups = "integer" }
-- padding = "same" with an even (dilated) kernel at stride 1: PyTorch's asymmetric split, the extra row and
-- column after, padded here; the C op pads an odd one symmetrically (and refuses a stride)
local function same_asymmetric(x, weight, o)
  if not (wick.is_tensor(x) and wick.is_tensor(weight) and weight:dim() == 4) then return x, o end
  local function pair(v, default)
    if v == nil then return default, default end
    if type(v) == "table" then return v[1], v[2] or v[1] end
    return v, v
  end
  local sh, sw = pair(o.stride, 1)
  local dh, dw = pair(o.dilation, 1)
  if sh ~= 1 or sw ~= 1 or type(dh) ~= "number" or type(dw) ~= "number" then return x, o end
  local th, tw = dh * (weight:size(3) - 1), dw * (weight:size(4) - 1)
  if th % 2 == 0 and tw % 2 == 0 then return x, o end
  local copy = {}
  for k, v in pairs(o) do copy[k] = v end
  copy.padding = { math.floor(th / 2), math.floor(tw / 2) }
  return F.pad(x, { 0, tw % 2, 0, th % 2 }), copy
end
-- the options of a 2-D op with PyTorch's one-element lists ({2}: 2 for both dims) as numbers
local function single_pairs(o, names)
  local out
  for _, k in ipairs(names) do
    local v = o[k]
    if type(v) == "table" and #v == 1 and getmetatable(v) == nil then
      out = out or {}
      out[k] = v[1]
    end
  end
  if not out then return o end
  for k, v in pairs(o) do if out[k] == nil then out[k] = v end end
  return out
end
local CONV_PAIRS = { "stride", "padding", "dilation" }
-- complex input or weight (SoundStream's ComplexConv2d): four real convolutions, (a + bi)(c + di)
local function complex_conv2d(x, weight, bias, ...)
  local function parts(t) if t:is_complex() then return t.real, t.imag end return t, nil end
  local xr, xi = parts(x)
  local wr, wi = parts(weight)
  local re, im = F.conv2d(xr, wr, nil, ...), nil
  if xi and wi then re = re - F.conv2d(xi, wi, nil, ...) end
  if wi then im = F.conv2d(xr, wi, nil, ...) end
  if xi then
    local t = F.conv2d(xi, wr, nil, ...)
    im = im and im + t or t
  end
  local y = wick.complex(re, im)
  if bias ~= nil then y = y + bias:view(-1, 1, 1) end
  return y
end
function F.conv2d(x, weight, bias, ...)
  if (wick.is_tensor(x) and x:is_complex()) or (wick.is_tensor(weight) and weight:is_complex()) then
    return complex_conv2d(x, weight, bias, ...)
  end
  local n = select("#", ...)
  local o
  local last = select(n > 0 and n or 1, ...)
  if n == 0 and type(bias) == "table" and getmetatable(bias) == nil then -- F.conv2d(x, w, {padding = "same"})
    o, bias = bias, nil
  elseif n == 1 and type(last) == "table" and getmetatable(last) == nil and #last == 0 then
    o = last -- one options table: the C op checks every option ({2, 2} alone is a stride)
  elseif n == 0 then
    o = {}
  else
    o = check.positional("conv2d", { "stride", "padding", "dilation", "groups" }, CONV2D, ...)
  end
  o = single_pairs(o, CONV_PAIRS)
  if o.padding == "same" then x, o = same_asymmetric(x, weight, o) end
  return core.conv2d(x, weight, bias, o)
end

--- F.conv_transpose2d(input, weight[, bias[, stride[, padding[, output_padding[, groups[, dilation]]]]]][, opts]),
--- PyTorch's order; weight [in, out / groups, kH, kW]. One C op each way (the
--- convolution's kernels with the roles of input and output swapped).
local CONV_T = { stride = "integer|table", padding = "integer|table", output_padding = "integer|table",
  groups = "integer", dilation = "integer|table" }
function F.conv_transpose2d(x, weight, bias, ...)
  local o = check.positional("conv_transpose2d", { "stride", "padding", "output_padding", "groups", "dilation" }, CONV_T, ...)
  return core.conv_transpose2d(x, weight, bias, o) -- the C op checks every argument
end
-- f(x, weight, {stride = 2}) (RealNVP's F.conv_transpose2d(x, w, stride=2), loralib's F.conv1d(a, b,
-- groups=g)): an options table where the bias goes is the options, its `bias` the bias
local function options_at_bias(f)
  return function(x, weight, bias, ...)
    if select("#", ...) == 0 and type(bias) == "table" and getmetatable(bias) == nil and next(bias) ~= nil
        and #bias == 0 then
      local opts = {}
      for k, v in pairs(bias) do if k ~= "bias" then opts[k] = v end end
      return f(x, weight, bias.bias, opts)
    end
    return f(x, weight, bias, ...)
  end
end
local AT_BIAS = { conv1d = true, conv3d = true, conv_transpose1d = true, conv_transpose2d = true, conv_transpose3d = true }

--- F.interpolate(input[, size[, scale_factor[, mode = "nearest"[, align_corners[, recompute_scale_factor]]]]][, opts]):
--- "nearest" on (N, C, L) or (N, C, H, W), "linear" on (N, C, L), "bilinear" on (N, C, H, W);
--- one C op each way (PyTorch's source positions: scale_factor, unless recomputed, sets them).
--- "bicubic" (N, C, H, W), "nearest-exact" and "area" (3-D to 5-D), and antialias = true with
--- "bilinear" or "bicubic": composed of index_select, matmul (and the adaptive average poolings),
--- so gradients flow.
local INTERP = { size = "integer|table", scale_factor = "number|table", mode = "string", align_corners = "boolean",
  recompute_scale_factor = "boolean", antialias = "boolean" }
local INTERP_MODES = { nearest = 1, linear = 1, bilinear = 2, trilinear = 3, bicubic = 2, area = 1, ["nearest-exact"] = 1 }
local NOT_INTERPOLATING = { nearest = true, area = true, ["nearest-exact"] = true }

-- A 1-D list of numbers as a tensor on x's device: int64 indices (1-based), or weights of
-- x's dtype shaped to broadcast along `dim` of x.
local function index_tensor(list, x)
  return wick.tensor(list, { dtype = "int64", device = x.device })
end
local function along(list, x, dim)
  local shape = { #list }
  for _ = dim + 1, x:dim() do shape[#shape + 1] = 1 end
  return wick.tensor(list, { dtype = x.dtype, device = x.device }):view(shape)
end

-- "nearest-exact" along `dim` (n to out): source floor((dst + 0.5) * scale) clamped, scale =
-- 1 / scale_factor when given, else n / out; the product rounded to float32 before the floor,
-- as PyTorch's CPU kernels (which round the scale to float32 too, `f32_scale`, except the 1-D and
-- 3-D ones on float64)
local function nearest_exact_along(x, dim, out, scale, f32_scale)
  local n = x:size(dim)
  if not (scale > 0) then scale = n / out end
  if f32_scale then scale = wick.tensor({ scale }, { dtype = "float32" }):item() end
  local src = ((wick.arange(out, { dtype = "float64" }) + 0.5) * scale):to("float32"):floor():totable()
  local idx = {}
  for i = 1, out do idx[i] = math.min(src[i], n - 1) + 1 end
  return x:index_select(dim, index_tensor(idx, x))
end

-- PyTorch's cubic convolution (A = -0.75): the weights of the taps at floor(src) - 1 .. + 2 for the fraction t
local CUBIC_A = -0.75
local function cubic1(t) return ((CUBIC_A + 2) * t - (CUBIC_A + 3)) * t * t + 1 end
local function cubic2(t) return ((CUBIC_A * t - 5 * CUBIC_A) * t + 8 * CUBIC_A) * t - 4 * CUBIC_A end
-- "bicubic" along `dim` (n to out), as upsample_bicubic2d: source positions align_corners
-- ? dst (n - 1) / (out - 1) : (dst + 0.5) scale - 0.5 (not clamped), the four taps clamped to the border
local function cubic_along(x, dim, out, align_corners, scale)
  local n = x:size(dim)
  if align_corners then
    scale = out > 1 and (n - 1) / (out - 1) or 0
  elseif not (scale > 0) then
    scale = n / out
  end
  local idx, w = { {}, {}, {}, {} }, { {}, {}, {}, {} }
  for i = 0, out - 1 do
    local real = align_corners and scale * i or scale * (i + 0.5) - 0.5
    local at = math.min(math.floor(real), n - 1)
    local t = math.min(math.max(real - at, 0), 1)
    local t2 = 1 - t
    w[1][i + 1], w[2][i + 1], w[3][i + 1], w[4][i + 1] = cubic2(t + 1), cubic1(t), cubic1(t2), cubic2(t2 + 1)
    for k = 1, 4 do idx[k][i + 1] = math.max(math.min(at - 2 + k, n - 1), 0) + 1 end
  end
  local y = x:index_select(dim, index_tensor(idx[1], x)) * along(w[1], x, dim)
  for k = 2, 4 do y = y + x:index_select(dim, index_tensor(idx[k], x)) * along(w[k], x, dim) end
  return y
end

-- antialias = true ("bilinear" and "bicubic" on 4-D input), as PyTorch's separable _aa kernels:
-- along `dim` (n to out) each output is the normalised filter (the triangle, or Keys' cubic
-- with a = -0.5) stretched by max(scale, 1), over the sources within its support, centred at
-- scale (dst + 0.5); a dim whose size is kept is left as is. One matmul with the [out, n] weights.
local AA_FILTERS = {
  bilinear = { 1, function(t)
    t = math.abs(t)
    return t < 1 and 1 - t or 0
  end },
  bicubic = { 2, function(t)
    local a = -0.5
    t = math.abs(t)
    if t < 1 then return ((a + 2) * t - (a + 3)) * t * t + 1 end
    if t < 2 then return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a end
    return 0
  end },
}
local function trunc(v) return v < 0 and math.ceil(v) or math.floor(v) end
local function antialias_along(x, dim, out, align_corners, scale, mode)
  local n = x:size(dim)
  if out == n then return x end
  if align_corners then
    scale = out > 1 and (n - 1) / (out - 1) or 0
  elseif not (scale > 0) then
    scale = n / out
  end
  local half, filter = AA_FILTERS[mode][1], AA_FILTERS[mode][2]
  local support = scale >= 1 and half * scale or half
  local max_taps = math.ceil(support) * 2 + 1
  local invscale = scale >= 1 and 1 / scale or 1
  local w = {}
  for i = 0, out - 1 do
    local row = {}
    for j = 1, n do row[j] = 0 end
    local center = scale * (i + 0.5)
    local xmin = math.max(trunc(center - support + 0.5), 0)
    local xsize = math.max(math.min(math.min(trunc(center + support + 0.5), n) - xmin, max_taps), 0)
    local total, ws = 0, {}
    for j = 0, xsize - 1 do
      ws[j] = filter((j + xmin - center + 0.5) * invscale)
      total = total + ws[j]
    end
    for j = 0, xsize - 1 do row[xmin + j + 1] = total ~= 0 and ws[j] / total or ws[j] end
    w[i + 1] = row
  end
  local m = wick.tensor(w, { dtype = x.dtype, device = x.device }) -- [out, n]
  if dim == x:dim() then return x:matmul(m:t()) end
  return m:matmul(x) -- (dim is the second last)
end
-- a size or scale list's entries, 0-dim tensors as the numbers they hold
-- (SAM's size=(h, w) from orig_im_size[0], orig_im_size[1])
local function numbers(list)
  local out = {}
  for i = 1, #list do out[i] = wick.ops._number_of(list[i]) end
  return out
end
local function spatial_list(v, n, what)
  if type(v) ~= "table" then
    local t = {}
    for i = 1, n do t[i] = v end
    return t, false
  end
  return numbers(v), true
end
function F.interpolate(x, ...)
  local fn = "interpolate"
  tensor(x, fn, "input")
  local o = check.positional(fn, { "size", "scale_factor", "mode", "align_corners", "recompute_scale_factor", "antialias" },
    INTERP, ...)
  local mode = o.mode or "nearest"
  if not INTERP_MODES[mode] then
    check.fail(fn, "mode '%s' is not supported (expected 'nearest', 'linear', 'bilinear', 'bicubic', 'trilinear', 'area' or 'nearest-exact')", mode)
  end
  if (mode == "nearest" or mode == "nearest-exact") and not x:is_floating_point() and x.dtype ~= "bool"
      and not x:is_complex() then -- (a uint8 image, as torchvision's resize: picked values, exact in float64)
    return F.interpolate(x:to("float64"), ...):to(x.dtype)
  end
  if o.antialias and not ((mode == "bilinear" or mode == "bicubic") and x:dim() == 4) then
    check.fail(fn, "Anti-alias option is restricted to bilinear and bicubic modes and requires a 4-D tensor as input")
  end
  local dims = x:dim() - 2
  if dims < 1 then check.fail(fn, "expected an input of at least 3 dims (N, C, ...), got %d-D", x:dim()) end
  if dims > 3 then check.fail(fn, "%d-D input is not supported (only 3-D, 4-D and 5-D)", x:dim()) end
  if x.dtype == "bool" then -- (PyTorch's "upsample_nearest1d" not implemented for 'Bool')
    check.fail(fn, "mode '%s' is not implemented for %s tensors, as PyTorch's; a mask resizes as x:float() "
      .. "(Hiera's mask.float()) or x:to('uint8') in the nearest modes", mode, x.dtype)
  end
  if mode == "bilinear" and dims ~= 2 then check.fail(fn, "Got %dD input, but bilinear mode needs 4D input", x:dim()) end
  if mode == "linear" and dims ~= 1 then check.fail(fn, "Got %dD input, but linear mode needs 3D input", x:dim()) end
  if mode == "trilinear" and dims ~= 3 then check.fail(fn, "Got %dD input, but trilinear mode needs 5D input", x:dim()) end
  if mode == "bicubic" and dims ~= 2 then check.fail(fn, "Got %dD input, but bicubic mode needs 4D input", x:dim()) end
  if NOT_INTERPOLATING[mode] and o.align_corners ~= nil then
    check.fail(fn, "align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear")
  end
  if o.size ~= nil and o.scale_factor ~= nil then check.fail(fn, "only one of size or scale_factor should be defined") end
  if o.size == nil and o.scale_factor == nil then check.fail(fn, "either size or scale_factor should be defined") end
  local in_sizes = {}
  for i = 1, dims do in_sizes[i] = x:size(i + 2) end
  local size, scales = {}, {}
  if o.size ~= nil then
    if o.recompute_scale_factor then
      check.fail(fn, "recompute_scale_factor is not meaningful with an explicit size.")
    end
    local s, listed = spatial_list(o.size, dims)
    if listed and #s ~= dims then
      check.fail(fn, "Input and output must have the same number of spatial dimensions, but got input with spatial dimensions of [%s] and output size of [%s]. Please provide input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format.",
        table.concat(in_sizes, ", "), table.concat(s, ", "))
    end
    for i = 1, dims do size[i], scales[i] = check.int(s[i], fn, "size", 1), 0 end
  else
    local s, listed = spatial_list(o.scale_factor, dims)
    if listed and #s ~= dims then
      check.fail(fn, "Input and scale_factor must have the same number of spatial dimensions, but got input with spatial dimensions of [%s] and scale_factor of shape [%s]. Please provide input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format.",
        table.concat(in_sizes, ", "), table.concat(s, ", "))
    end
    for i = 1, dims do
      if type(s[i]) ~= "number" then check.expected(fn, "scale_factor", "a number", s[i]) end
      size[i] = math.floor(in_sizes[i] * s[i])
      scales[i] = o.recompute_scale_factor and 0 or 1 / s[i]
    end
  end
  local ac = o.align_corners == true
  if mode == "area" then -- PyTorch's: the adaptive average pooling to the output size
    if dims == 1 then return F.adaptive_avg_pool1d(x, size[1]) end
    if dims == 2 then return F.adaptive_avg_pool2d(x, size) end
    return F.adaptive_avg_pool3d(x, size)
  end
  if mode == "nearest-exact" then
    local y = x
    local f32_scale = dims == 2 or x.dtype ~= "float64"
    for i = 1, dims do y = nearest_exact_along(y, i + 2, size[i], scales[i], f32_scale) end
    return y
  end
  if mode ~= "nearest" and not x:is_floating_point() then -- (one message for the interpolating modes)
    check.fail(fn, "mode '%s'%s on %s tensors is not implemented here (PyTorch's uint8 image kernels resize the "
      .. "width, round to uint8, then the height, in fixed point); resize x:float() the same way, one dim at a "
      .. "time with :round():clamp(0, 255) after each (within a level of PyTorch's; in one pass up to ~17 "
      .. "levels away), and convert back with :to('uint8')", mode,
      o.antialias and " with antialias" or "", x.dtype)
  end
  if o.antialias then
    -- the rows (W) then the columns (H), as PyTorch's separable kernel
    return antialias_along(antialias_along(x, 4, size[2], ac, scales[2], mode), 3, size[1], ac, scales[1], mode)
  end
  if mode == "bicubic" then
    -- separable, the rows (W) then the columns (H), as the kernel's sum over H of the sums over W
    return cubic_along(cubic_along(x, 4, size[2], ac, scales[2]), 3, size[1], ac, scales[1])
  end
  local m = mode == "nearest" and 0 or 1
  if dims == 1 then
    return core.upsample2d(x:unsqueeze(3), 1, size[1], m, ac, 0, scales[1]):squeeze(3)
  end
  if dims == 3 then -- separable: each (H, W) plane, then the depth over the [D, Ho * Wo] plane (that dim kept as is)
    local n, c, d = x:size(1), x:size(2), x:size(3)
    local y = core.upsample2d(x:reshape(n, c * d, x:size(4), x:size(5)), size[2], size[3], m, ac, scales[2], scales[3])
    local plane = size[2] * size[3]
    y = core.upsample2d(y:reshape(n, c, d, plane), size[1], plane, m, ac, scales[1], 0)
    return y:view(n, c, size[1], size[2], size[3])
  end
  return core.upsample2d(x, size[1], size[2], m, ac, scales[1], scales[2])
end

--- F.pad(input, pad[, mode = "constant"[, value = 0]]): pad = {left, right[, top, bottom[, front, back]]}
--- from the last dim backwards, as PyTorch's; modes "constant", "reflect", "replicate", "circular";
--- negative pads crop. Composed of cat (and index_select where a side crops), so gradients flow.
local PAD = { mode = "string", value = "float|boolean" } -- (NaN too: GraphGPS pads eigenvectors with it)
local PAD_MODES = { constant = true, reflect = true, replicate = true, circular = true }
-- 1-based source indices of positions -before .. n - 1 + after (0-based) for a non-constant mode
local function pad_indices(mode, n, before, after, fn)
  local idx = {}
  for i = -before, n - 1 + after do
    local j
    if mode == "reflect" then
      j = i < 0 and -i or i
      if j > n - 1 then j = 2 * (n - 1) - j end
    elseif mode == "replicate" then
      j = math.max(0, math.min(n - 1, i))
    else
      j = i % n
    end
    idx[#idx + 1] = j + 1
  end
  return idx
end
local function pad_input(x, pad, ...)
  local fn = "pad"
  tensor(x, fn, "input")
  check.table(pad, fn, "pad")
  -- one-element integer tensors stand for their numbers (UNet's diffX // 2)
  local numbers
  for i = 1, #pad do
    local v = pad[i]
    if wick.is_tensor(v) and v:numel() == 1 and not v:is_floating_point() then
      numbers = numbers or { unpack(pad) }
      numbers[i] = v:item()
    end
  end
  pad = numbers or pad
  local o = check.positional(fn, { "mode", "value" }, PAD, ...)
  if type(o.value) == "boolean" then o.value = o.value and 1 or 0 end -- Python's True is 1 (a bool mask's padding)
  local mode = o.mode or "constant"
  if not PAD_MODES[mode] then
    check.fail(fn, "Unrecognised padding mode %s (expected constant, reflect, replicate or circular)", mode)
  end
  if #pad % 2 ~= 0 then check.fail(fn, "Padding length must be divisible by 2") end
  if #pad / 2 > x:dim() then check.fail(fn, "Padding length should be less than or equal to two times the input dimension but got padding length %d and input of dimension %d", #pad, x:dim()) end
  for i = 1, #pad do check.int(pad[i], fn, "pad") end
  if mode ~= "constant" then
    if o.value ~= nil and o.value ~= 0 then check.fail(fn, "Padding mode \"%s\" doesn't take in value argument", mode) end
    x = wick._autocast_float32(x) -- (reflection and replication padding: autocast's float32 list)
    local k = #pad / 2
    if x:dim() < k + 1 or x:dim() > k + 2 then
      check.fail(fn, "%s padding of %d dims expects a %d-D (unbatched) or %d-D input, got %d-D", mode, k, k + 1, k + 2, x:dim())
    end
  end
  local y = x
  for i = 1, #pad / 2 do
    local dim = x:dim() - i + 1
    local before, after = pad[2 * i - 1], pad[2 * i]
    local n = y:size(dim)
    if before ~= 0 or after ~= 0 then
      if n + before + after < 0 or (n + before + after == 0 and mode ~= "constant") then
        check.fail(fn, "The input size %d, plus negative padding %d and %d resulted in a negative output size, which is invalid. Check dimension %d of your input.",
          n, before, after, dim)
      end
      if mode == "constant" then
        if before < 0 then y, n, before = y:narrow(dim, 1 - before, n + before), n + before, 0 end
        if after < 0 then y, n, after = y:narrow(dim, 1, n + after), n + after, 0 end
        local parts = {}
        local function filler(len)
          local shape = y:size()
          shape[dim] = len
          return wick.full(shape, o.value or 0, { dtype = y.dtype, device = y.device })
        end
        if before > 0 then parts[#parts + 1] = filler(before) end
        parts[#parts + 1] = y
        if after > 0 then parts[#parts + 1] = filler(after) end
        if #parts > 1 then y = wick.cat(parts, dim) end
      else
        if mode == "reflect" and (before >= n or after >= n) then
          check.fail(fn, "Argument #4: Padding size should be less than the corresponding input dimension, but got: padding (%d, %d) at dimension %d of input %s",
            before, after, dim, tostring(x.shape))
        end
        if mode == "circular" and (before > n or after > n) then
          check.fail(fn, "Padding value causes wrapping around more than once.")
        end
        if mode == "circular" then -- a negative side crops first, and the wrap comes from what is left (PyTorch's)
          if before < 0 then y, n, before = y:narrow(dim, 1 - before, n + before), n + before, 0 end
          if after < 0 then y, n, after = y:narrow(dim, 1, n + after), n + after, 0 end
          if before > n or after > n then check.fail(fn, "Padding value causes wrapping around more than once.") end
        end
        if before >= 0 and after >= 0 then -- the edges' strips joined on: one copy of y (cat), not a gather
          local function strip(len, at_end)
            if mode == "reflect" then return y:narrow(dim, at_end and n - len or 2, len):flip(dim) end
            if mode == "circular" then return y:narrow(dim, at_end and 1 or n - len + 1, len) end
            local shape = y:size() -- replicate: the edge repeated
            shape[dim] = len
            return y:narrow(dim, at_end and n or 1, 1):expand(shape)
          end
          local parts = {}
          if before > 0 then parts[#parts + 1] = strip(before, false) end
          parts[#parts + 1] = y
          if after > 0 then parts[#parts + 1] = strip(after, true) end
          y = wick.cat(parts, dim)
        else -- a negative side crops: the positions gathered
          local idx = wick.tensor(pad_indices(mode, n, before, after, fn), { dtype = "int64", device = y.device })
          y = y:index_select(dim, idx)
        end
      end
    end
  end
  return y
end
function F.pad(...) return pad_input(required("pad", { "input", "pad" }, ...)) end

--- F.prelu(input, weight): max(0, x) + weight * min(0, x), weight per channel (dim 2) or one value
function F.prelu(x, weight)
  tensor(x, "prelu", "input")
  tensor(weight, "prelu", "weight")
  x, weight = wick._autocast_lower(x), wick._autocast_lower(weight) -- on autocast's lower-precision list
  local n = weight:numel()
  if n ~= 1 then
    local channels = x:dim() >= 2 and x:size(2) or 1
    if x:dim() == 0 or n ~= channels then
      check.fail("prelu", "Mismatch of parameter numbers and input channel size. Found parameter numbers = %d and channel size = %d.",
        n, x:dim() == 0 and 1 or channels)
    end
    if x:dim() >= 2 then weight = per_channel(weight, x) end
  elseif x:dim() > 0 then
    local shape = {}
    for i = 1, x:dim() do shape[i] = 1 end
    weight = weight:reshape(shape)
  else
    weight = weight:reshape({})
  end
  return wick.where(x:gt(0), x, x * weight) -- (at 0 the slope's gradient, as PyTorch's)
end

-- a norm's parameters (name -> tensor or nil) in x's dtype, or float32 for a half x (PyTorch's one
-- mix; batch_norm's check is in C): a float32 batch into a float64 model stops at the norm
local PARAM_NAMES = { "weight", "bias", "running_mean", "running_var" }
local function same_dtypes(fn, x, ...) -- (weight, bias[, running_mean, running_var], each may be nil)
  for i = 1, select("#", ...) do
    local t = select(i, ...)
    if t ~= nil and t.dtype ~= x.dtype and not ((x.dtype == "float16" or x.dtype == "bfloat16") and t.dtype == "float32") then
      check.fail(fn, "expected %s of dtype %s (the input's), but got %s", PARAM_NAMES[i], x.dtype, t.dtype)
    end
  end
end

-- the options of the norms with statistics (batch_norm's and instance_norm's)
local NORM_STATS = { running_mean = "tensor", running_var = "tensor", weight = "tensor", bias = "tensor",
  training = "boolean", use_input_stats = "boolean", momentum = "number", eps = "number" }
--- F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats = true, momentum = 0.1, eps = 1e-5):
--- statistics per image and channel over (N, C, ...), the normalisation in the fused layer_norm kernel.
--- (PyTorch's positional order, or any of them in a trailing options table)
function F.instance_norm(x, ...)
  local fn = "instance_norm"
  tensor(x, fn, "input")
  local o = check.positional(fn, { "running_mean", "running_var", "weight", "bias", "use_input_stats", "momentum", "eps" },
    NORM_STATS, ...)
  if o.training ~= nil then check.fail(fn, "unknown option 'training' (use_input_stats)") end
  local running_mean, running_var, weight, bias = o.running_mean, o.running_var, o.weight, o.bias
  local use_input_stats, momentum, eps = o.use_input_stats, o.momentum or 0.1, o.eps or 1e-5
  if use_input_stats == nil then use_input_stats = true end
  same_dtypes(fn, x, weight, bias, running_mean, running_var)
  if x:dim() < 3 then check.fail(fn, "expected an input of at least 3 dims (N, C, ...), got %d-D", x:dim()) end
  local dtype, low = x.dtype, low_precision(x)
  x, weight, bias = in_compute(x, low), in_compute(weight, low), in_compute(bias, low)
  local n, c, spatial = x:size(1), x:size(2), 1
  for d = 3, x:dim() do spatial = spatial * x:size(d) end
  local flat = x:reshape({ n, c, spatial })
  if spatial == 1 and use_input_stats then -- (none is an empty result, as PyTorch's)
    check.fail(fn, "Expected more than 1 spatial element when training, got input size [%s]", table.concat(x:size(), ", "))
  end
  local y
  if use_input_stats then
    -- over the spatial dims in x's own shape: the result is no view of a temporary (an in-place
    -- activation after it, CycleGAN's, is then a plain in-place op, differentiable twice)
    y = core.layer_norm(x, x:dim() - 2, nil, nil, eps)
    if running_mean and running_var and x:numel() > 0 then
      wick.no_grad(function()
        local d = flat:detach()
        running_mean:mul_(1 - momentum):add_(d:mean(3):mean(1) * momentum)
        running_var:mul_(1 - momentum):add_(d:var(3, { unbiased = true }):mean(1) * momentum)
      end)
    end
  else
    if not (running_mean and running_var) then
      check.fail(fn, "Expected running_mean and running_var to be defined when use_input_stats is false")
    end
    local mean, var = in_compute(running_mean, low), in_compute(running_var, low)
    y = ((flat - mean:view({ 1, c, 1 })) / (var:view({ 1, c, 1 }) + eps):sqrt()):reshape(x:size())
  end
  if weight then y = y * per_channel(weight, x) end
  if bias then y = y + per_channel(bias, x) end
  return low and y:to(dtype) or y
end

-- F.max_pool2d(x, kernel_size[, stride[, padding[, dilation[, ceil_mode[, return_indices]]]]]),
-- F.avg_pool2d(x, kernel_size[, stride[, padding[, ceil_mode[, count_include_pad[, divisor_override]]]]]):
-- PyTorch's positional order, or any of them (kernel_size too) in a trailing options table
local POOL_ARGS = { "input", "kernel_size" }
local PAIR = "integer|table"
local function pool2d(name, order, spec)
  local op = core[name]
  return function(...)
    local args = { n = select("#", required(name, POOL_ARGS, ...)), required(name, POOL_ARGS, ...) }
    local kernel = args[2]
    if type(kernel) == "table" and #kernel == 1 and getmetatable(kernel) == nil then kernel = kernel[1] end
    return op(args[1], kernel, single_pairs(check.positional(name, order, spec, unpack(args, 3, args.n)), CONV_PAIRS))
  end
end
local fast_max_pool2d = pool2d("max_pool2d", { "stride", "padding", "dilation", "ceil_mode", "return_indices" },
  { stride = PAIR, padding = PAIR, dilation = PAIR, ceil_mode = "boolean", return_indices = "boolean" })

-- max_pool2d with a dilation other than 1 (the C op's is 1), composed of ops as PyTorch's CPU
-- kernel reads it: each window's positions in row-major order, a position taking over when it
-- is greater than the best so far or NaN (so the first maximum, the last NaN), the best starting
-- at -inf at the window's first position inside the input. The indices (1-based, flat over
-- H * W) are found without autograd; the values are the input gathered at them, whose gradient
-- goes to those positions as PyTorch's. A window with no position inside the input (a dilation
-- stepping over a small input) is -inf at PyTorch's index, with no gradient.
local function pool_out(L, k, p, s, d, ceil_mode)
  local num = L + 2 * p - d * (k - 1) - 1 + (ceil_mode and s - 1 or 0)
  local out = math.floor(num / s) + 1
  if ceil_mode and (out - 1) * s >= L + p then out = out - 1 end
  return out
end
local function dilated_max_pool2d(x, kernel, o)
  local fn = "max_pool2d"
  tensor(x, fn, "input")
  local k = pair(kernel, fn, "kernel_size")
  local st = o.stride
  if st == nil or (type(st) == "table" and getmetatable(st) == nil and #st == 0) then st = k end
  local s, p, d = pair(st, fn, "stride"), pair(o.padding or 0, fn, "padding"), pair(o.dilation, fn, "dilation")
  local nd = x:dim()
  if (nd ~= 3 and nd ~= 4) or x:size(nd - 2) == 0 or x:size(nd - 1) == 0 or x:size(nd) == 0 then
    check.fail(fn, "expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got: %s",
      tostring(x:size()))
  end
  if not x:is_floating_point() then check.fail(fn, "not implemented for %s tensors", x.dtype) end
  local C, H, W = x:size(nd - 2), x:size(nd - 1), x:size(nd)
  for i = 1, 2 do -- (PyTorch's pooling_output_shape, H then W)
    if s[i] == 0 then check.fail(fn, "stride should not be zero") end
    if p[i] < 0 then check.fail(fn, "pad must be non-negative, but got pad: %d", p[i]) end
    local half = ((k[i] - 1) * d[i] + 1) / 2
    if p[i] > (half < 0 and math.ceil(half) or math.floor(half)) then -- (C's division, toward zero)
      check.fail(fn, "pad should be at most half of effective kernel size, but got pad=%d, kernel_size=%d and dilation=%d",
        p[i], k[i], d[i])
    end
  end
  if k[1] <= 0 or k[2] <= 0 then check.fail(fn, "kernel size should be greater than zero, but got kH: %d kW: %d", k[1], k[2]) end
  if s[1] <= 0 or s[2] <= 0 then check.fail(fn, "stride should be greater than zero, but got dH: %d dW: %d", s[1], s[2]) end
  if d[1] <= 0 or d[2] <= 0 then
    check.fail(fn, "dilation should be greater than zero, but got dilationH: %d dilationW: %d", d[1], d[2])
  end
  if p[1] > math.floor(k[1] / 2) or p[2] > math.floor(k[2] / 2) then
    check.fail(fn, "pad should be smaller than or equal to half of kernel size, but got padW = %d, padH = %d, kW = %d, kH = %d",
      p[2], p[1], k[2], k[1])
  end
  local oh, ow = pool_out(H, k[1], p[1], s[1], d[1], o.ceil_mode), pool_out(W, k[2], p[2], s[2], d[2], o.ceil_mode)
  if oh < 1 or ow < 1 then
    check.fail(fn, "Given input size: (%dx%dx%d). Calculated output size: (%dx%dx%d). Output size is too small",
      C, H, W, C, oh, ow)
  end
  if oh * ow > 2 ^ 40 then check.fail(fn, "output size %d x %d is too large", oh, ow) end
  local dev = x.device
  local function ints(list) return wick.tensor(list, { dtype = "int64", device = dev }) end
  -- per output row (or column): the first position inside the input (PyTorch's start) and whether any is
  local function starts(n, L, kk, pp, ss, dd)
    local first, empty, any = {}, {}, false
    for q = 1, n do
      local at = (q - 1) * ss - pp
      local stop = math.min(at + (kk - 1) * dd + 1, L)
      while at < 0 do at = at + dd end
      first[q], empty[q] = at, at >= stop
      any = any or empty[q]
    end
    return first, empty, any
  end
  local r0, rempty, rany = starts(oh, H, k[1], p[1], s[1], d[1])
  local c0, cempty, cany = starts(ow, W, k[2], p[2], s[2], d[2])
  local shape = {}
  for i = 1, nd - 2 do shape[i] = x:size(i) end
  shape[nd - 1], shape[nd] = oh, ow
  local idx = wick.no_grad(function()
    local t = x:detach()
    -- -inf around the input, far enough for every window's last position
    local function extra(n, L, kk, pp, ss, dd) return math.max(pp, (n - 1) * ss + (kk - 1) * dd + 1 - L - pp) end
    local padded = F.pad(t, { p[2], extra(ow, W, k[2], p[2], s[2], d[2]), p[1], extra(oh, H, k[1], p[1], s[1], d[1]) },
      "constant", -math.huge)
    local rows, cols = {}, {}
    for q = 1, oh do rows[q] = r0[q] * W end
    for q = 1, ow do cols[q] = c0[q] + 1 end
    local at = (ints(rows):view(oh, 1) + ints(cols):view(1, ow)):expand(shape):clone()
    local best = wick.full(shape, -math.huge, { dtype = t.dtype, device = dev })
    for i = 0, k[1] - 1 do
      for q = 1, oh do rows[q] = (q - 1) * s[1] + i * d[1] + 1 end -- (in the padded input)
      local band = padded:index_select(nd - 1, ints(rows))
      local row_at = {}
      for q = 1, oh do row_at[q] = ((q - 1) * s[1] - p[1] + i * d[1]) * W end
      row_at = ints(row_at):view(oh, 1)
      for j = 0, k[2] - 1 do
        for q = 1, ow do cols[q] = (q - 1) * s[2] + j * d[2] + 1 end
        local v = band:index_select(nd, ints(cols))
        for q = 1, ow do cols[q] = (q - 1) * s[2] - p[2] + j * d[2] + 1 end
        local take = v:gt(best):logical_or(v:isnan())
        best = wick.where(take, v, best)
        at = wick.where(take, row_at + ints(cols):view(1, ow), at)
      end
    end
    return at
  end)
  local empty
  if rany or cany then
    empty = wick.tensor(rempty, { device = dev }):view(oh, 1):logical_or(wick.tensor(cempty, { device = dev }):view(1, ow))
  end
  local flat_shape = {}
  for i = 1, nd - 2 do flat_shape[i] = x:size(i) end
  flat_shape[nd - 1] = H * W
  local in_flat = x:reshape(flat_shape)
  flat_shape[nd - 1] = oh * ow
  local out = in_flat:gather(nd - 1, (empty and idx:clamp(1, H * W) or idx):reshape(flat_shape)):view(shape)
  if empty then out = wick.where(empty, wick.tensor(-math.huge, { dtype = x.dtype, device = dev }), out) end
  if o.return_indices then return out, idx end
  return out
end
local function dilated(v)
  if v == nil then return false end
  if type(v) == "table" and getmetatable(v) == nil then
    for i = 1, #v do if v[i] ~= 1 then return true end end
    return false
  end
  return v ~= 1
end
--- F.max_pool2d(x, kernel_size[, stride[, padding[, dilation = 1[, ceil_mode[, return_indices]]]]]) (or
--- an options table): with a dilation other than 1 composed of ops (PyTorch's values, indices and gradient)
function F.max_pool2d(...)
  local args = { n = select("#", required("max_pool2d", POOL_ARGS, ...)), required("max_pool2d", POOL_ARGS, ...) }
  local o = check.positional("max_pool2d", { "stride", "padding", "dilation", "ceil_mode", "return_indices" },
    { stride = PAIR, padding = PAIR, dilation = PAIR, ceil_mode = "boolean", return_indices = "boolean" },
    unpack(args, 3, args.n))
  if not dilated(o.dilation) then return fast_max_pool2d(...) end
  return dilated_max_pool2d(args[1], args[2], o)
end
local avg_pool2d = pool2d("avg_pool2d", { "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override" },
  { stride = PAIR, padding = PAIR, ceil_mode = "boolean", count_include_pad = "boolean", divisor_override = "integer" })
-- avg_pool2d with a divisor_override: the 3-D op over a depth of 1, which takes it
function F.avg_pool2d(...)
  local args = { n = select("#", required("avg_pool2d", POOL_ARGS, ...)), required("avg_pool2d", POOL_ARGS, ...) }
  local o = check.positional("avg_pool2d", { "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override" },
    { stride = PAIR, padding = PAIR, ceil_mode = "boolean", count_include_pad = "boolean", divisor_override = "integer" },
    unpack(args, 3, args.n))
  if o.divisor_override == nil then return avg_pool2d(...) end
  local function triple(v, depth)
    if v == nil then return nil end
    if type(v) == "number" then return { depth, v, v } end
    return { depth, v[1], v[#v] }
  end
  tensor(args[1], "avg_pool2d", "input")
  local y = F.avg_pool3d(args[1]:unsqueeze(-3), triple(args[2], 1), { stride = triple(o.stride, 1),
    padding = triple(o.padding, 0), ceil_mode = o.ceil_mode, count_include_pad = o.count_include_pad,
    divisor_override = o.divisor_override })
  return y:squeeze(-3)
end

-- ---- 1-D forms over the 2-D ops, pooling to a size, group norm, pixel shuffle ----

-- a 1-D op's options (PyTorch's positional order, or a table) as the 2-D op's
local function pair_opts(fn, order, spec, ...)
  local o = check.positional(fn, order, spec, ...)
  local out = {}
  for k, v in pairs(o) do
    if type(v) == "table" and #v == 1 and getmetatable(v) == nil then v = v[1] end -- PyTorch's (3,)
    if type(v) == "number" and k ~= "groups" and k ~= "divisor_override" then out[k] = { k == "padding" and 0 or 1, v }
    else out[k] = v end
  end
  return out
end
-- op(...) of a 1-D form over its 2-D op: an error names the 1-D op (its shapes
-- are the 2-D view's, with the 1 inserted; PyTorch's "(1 x 3)" sizes read "(3)")
local function as_1d(name, op, ...)
  local ok, r = pcall(op, ...) -- (the 2-D ops give one result)
  if not ok then error((tostring(r):gsub("([%w_]+)2d:", name .. " (as %12d):", 1):gsub("%(1 x (%d+)%)", "(%1)")), 0) end
  return r
end
local function as_2d(x, fn)
  tensor(x, fn, "input")
  if x:dim() ~= 2 and x:dim() ~= 3 then check.fail(fn, "expected 2-D (unbatched) or 3-D input, got %d-D", x:dim()) end
  return x:unsqueeze(-2), x:dim() == 2
end

--- F.conv1d(x, weight[, bias[, stride = 1[, padding = 0[, dilation = 1[, groups = 1]]]]]) (or
--- an options table): x [N, C, L] (or [C, L]), weight [out, C / groups, k]
function F.conv1d(x, weight, bias, ...)
  local x2 = as_2d(x, "conv1d")
  tensor(weight, "conv1d", "weight")
  if weight:dim() ~= 3 then check.fail("conv1d", "weight must be 3-D [out, in / groups, k], got %d-D", weight:dim()) end
  local o = pair_opts("conv1d", { "stride", "padding", "dilation", "groups" },
    { stride = "integer|table", padding = "integer|string|table", dilation = "integer|table", groups = "integer" }, ...)
  local groups, batched = o.groups or 1, x:dim() == 3 and x or x:unsqueeze(1)
  if weight:size(2) * groups ~= batched:size(2) then -- (PyTorch's message, in the 1-D shapes the user made)
    check.fail("conv1d", "Given groups=%d, weight of size %s, expected input%s to have %d channels, but got %d channels instead",
      groups, tostring(weight:size()), tostring(batched:size()), weight:size(2) * groups, batched:size(2))
  end
  local y = as_1d("conv1d", F.conv2d, x2, weight:unsqueeze(3), bias, o):squeeze(-2)
  return x:dim() == 2 and y:squeeze(1) or y
end
--- F.max_pool1d(x, kernel_size[, stride[, padding[, dilation[, ceil_mode]]]]), F.avg_pool1d(x,
--- kernel_size[, stride[, padding[, ceil_mode[, count_include_pad]]]]) (or an options table)
local function pool1d(name, pool2d, order, spec)
  local function pool(x, kernel_size, ...)
    local x2 = as_2d(x, name)
    check.int(kernel_size, name, "kernel_size", 1)
    return as_1d(name, pool2d, x2, { 1, kernel_size }, pair_opts(name, order, spec, ...)):squeeze(-2)
  end
  return function(...) return pool(required(name, POOL_ARGS, ...)) end
end
local max_pool1d = pool1d("max_pool1d", F.max_pool2d, { "stride", "padding", "dilation", "ceil_mode" },
  { stride = "integer", padding = "integer", dilation = "integer", ceil_mode = "boolean" })
local MAX1D = { stride = "integer|table", padding = "integer|table", dilation = "integer|table", ceil_mode = "boolean",
  return_indices = "boolean" }
--- F.max_pool1d(x, kernel_size[, stride[, padding[, dilation[, ceil_mode[, return_indices]]]]]): with
--- return_indices also the maxima's 1-based positions along L (over the 2-D op)
function F.max_pool1d(...)
  local args = { n = select("#", required("max_pool1d", POOL_ARGS, ...)), required("max_pool1d", POOL_ARGS, ...) }
  local o = check.positional("max_pool1d", { "stride", "padding", "dilation", "ceil_mode", "return_indices" }, MAX1D,
    unpack(args, 3, args.n))
  if dilated(o.dilation) then -- (PyTorch's max_pool1d checks, in its words, before the 2-D op's)
    local fn = "max_pool1d"
    as_2d(args[1], fn)
    local function one(v, name, default)
      if v == nil or (type(v) == "table" and getmetatable(v) == nil and #v == 0) then return default end
      if type(v) == "table" and getmetatable(v) == nil and #v == 1 then v = v[1] end
      return check.int(v, fn, name)
    end
    local k = one(args[2], "kernel_size")
    local s, p, d = one(o.stride, "stride", k), one(o.padding, "padding", 0), one(o.dilation, "dilation")
    if k <= 0 then check.fail(fn, "kernel_size must be greater than zero, but got %d", k) end
    if s <= 0 then check.fail(fn, "stride must be greater than zero, but got %d", s) end
    if p < 0 then check.fail(fn, "padding must be non-negative, but got %d", p) end
    if p > math.floor(k / 2) then
      check.fail(fn, "padding should be at most half of kernel size, but got padding=%d and kernel_size=%d", p, k)
    end
    if d <= 0 then check.fail(fn, "dilation must be greater than zero, but got %d", d) end
    local out = pool_out(args[1]:size(-1), k, p, s, d, o.ceil_mode)
    if out <= 0 then check.fail(fn, "Invalid computed output size: %d", out) end
  end
  if not o.return_indices then
    return max_pool1d(args[1], args[2], { stride = o.stride, padding = o.padding, dilation = o.dilation, ceil_mode = o.ceil_mode })
  end
  local x2 = as_2d(args[1], "max_pool1d")
  local function one(v) if type(v) == "table" then return v[1] end return v end
  local k = one(args[2])
  check.int(k, "max_pool1d", "kernel_size", 1)
  local opts = { return_indices = true, ceil_mode = o.ceil_mode }
  for _, name in ipairs({ "stride", "padding", "dilation" }) do
    if o[name] ~= nil then opts[name] = { name == "padding" and 0 or 1, one(o[name]) } end
  end
  local v, i = F.max_pool2d(x2, { 1, k }, opts)
  return v:squeeze(-2), i:squeeze(-2)
end
F.avg_pool1d = pool1d("avg_pool1d", F.avg_pool2d, { "stride", "padding", "ceil_mode", "count_include_pad" },
  { stride = "integer", padding = "integer", ceil_mode = "boolean", count_include_pad = "boolean" })

-- ---- fractional max pooling (Graham's), as PyTorch's CPU kernel ----

-- v as n values: a number stands for all of them, as does a table of one (PyTorch's (k,))
local function n_tuple(v, n)
  if type(v) == "table" and getmetatable(v) == nil and #v == 1 then v = v[1] end
  if type(v) ~= "number" then return v end
  local t = {}
  for i = 1, n do t[i] = v end
  return t
end
-- v as a list of n integers (a number for all of them, or a table of n), each at least min if given
local function int_tuple(v, n, fn, name, min)
  v = n_tuple(v, n)
  if type(v) ~= "table" or getmetatable(v) ~= nil or #v ~= n then
    check.fail(fn, "%s must either be a single Int or tuple of Ints (%d of them), got %s", name, n,
      type(v) == "table" and ("a table of %d entries"):format(#v) or check.describe(v))
  end
  local t = {}
  for i = 1, n do t[i] = check.int(v[i], fn, name, min) end
  return t
end
local FRACTIONAL = { output_size = "integer|table", output_ratio = "number|table", return_indices = "boolean",
  _random_samples = "tensor" }
local FRACTIONAL_ORDER = { "output_size", "output_ratio", "return_indices", "_random_samples" }
local DIM_NAMES = { { "height", "width" }, { "time", "height", "width" } }
-- F.fractional_max_pool2d / 3d over the last n (2 or 3) dims: each plane's windows (kernel_size
-- each) start where PyTorch's generate_intervals puts them from the plane's samples u (in the
-- input's dtype, [N, C, n]; 2-D: u[1] for the width, u[2] for the height; 3-D: time, height,
-- width): for output i < out, floor((i + u) * alpha) - floor(u * alpha), alpha = (in - k) / (out - 1),
-- the last at in - k. The maximum as max_pool2d's (the first, a NaN the last one); indices 1-based,
-- flat over the plane; the values the input gathered there (so the gradient goes to them).
local function fractional_max_pool(n, x, kernel_size, ...)
  local fn = ("fractional_max_pool%dd"):format(n)
  local o = check.positional(fn, FRACTIONAL_ORDER, FRACTIONAL, ...)
  tensor(x, fn, "input")
  if kernel_size == nil then check.fail(fn, "missing required argument 'kernel_size'") end
  local output_size = o.output_size
  if output_size == nil and o.output_ratio == nil then
    check.fail(fn, "requires specifying either an output_size or an output_ratio")
  end
  local k = int_tuple(kernel_size, n, fn, "kernel_size")
  local nd = x:dim()
  if nd ~= n + 1 and nd ~= n + 2 then
    check.fail(fn, "Expected %dD or %dD tensor, but got: %s", n + 1, n + 2, tostring(x:size()))
  end
  if output_size == nil then
    local r = n_tuple(o.output_ratio, n)
    if #r ~= n then check.fail(fn, "requires output_ratio to either be a single Int or tuple of Ints (%d of them)", n) end
    output_size = {}
    for i = 1, n do
      check.number(r[i], fn, "output_ratio")
      if r[i] ~= r[i] or r[i] < 0 or r[i] == math.huge then check.fail(fn, "output_ratio must be a finite non-negative number, got %s", tostring(r[i])) end
      local v = x:size(nd - n + i) * r[i]
      output_size[i] = v < 0 and math.ceil(v) or math.floor(v) -- (Python's int())
    end
  end
  local out = int_tuple(output_size, n, fn, "output_size")
  for i = 2, nd do
    if x:size(i) == 0 then
      check.fail(fn, "Expected input to have non-zero size for non-batch dimensions, but got %s with dimension %d being empty.",
        tostring(x:size()), i)
    end
  end
  if not x:is_floating_point() then check.fail(fn, "not implemented for %s tensors", x.dtype) end
  local any_small = false
  for i = 1, n do any_small = any_small or k[i] <= 0 end
  if any_small then
    local parts = {}
    for i = 1, n do parts[i] = tostring(k[i]) end
    check.fail(fn, "kernel size should be greater than zero, but got %s", table.concat(parts, "x"))
  end
  local sizes = {}
  for i = 1, n do
    sizes[i] = x:size(nd - n + i)
    if out[i] < 0 then check.fail(fn, "output_size must be non-negative, got %d", out[i]) end
    if out[i] + k[i] - 1 > sizes[i] then
      check.fail(fn, "pool %s %d too large relative to input %s %d", DIM_NAMES[n - 1][i], k[i], DIM_NAMES[n - 1][i], sizes[i])
    end
  end
  local unbatched = nd == n + 1
  local xb = unbatched and x:unsqueeze(1) or x
  local N, C = xb:size(1), xb:size(2)
  local u = o._random_samples
  if u == nil then
    u = wick.rand({ N, C, n }, { dtype = x.dtype, device = x.device })
  else
    if u:dim() ~= 3 then check.fail(fn, "Expect _random_samples to have 3 dimensions, got %d", u:dim()) end
    if u.dtype ~= x.dtype then check.fail(fn, "Expect _random_samples to have the same dtype as input") end
    if u:size(1) < N then check.fail(fn, "Expect _random_samples.size(0) no less then input batch size.") end
    if u:size(2) ~= C then check.fail(fn, "Expect _random_samples.size(1) equals to input channel size.") end
    if u:size(3) ~= n then check.fail(fn, "Expect _random_samples.size(2) equals to %d; got %d.", n, u:size(3)) end
    if u.device ~= x.device then check.fail(fn, "Expect _random_samples on the input's device (%s), got %s", tostring(x.device), tostring(u.device)) end
    u = u:narrow(1, 1, N)
  end
  local shape = { N, C }
  local total = 1
  for i = 1, n do shape[2 + i], total = out[i], total * out[i] end
  local plane = 1
  for i = 1, n do plane = plane * sizes[i] end
  local dev, dtype = x.device, x.dtype
  local column = n == 2 and { 2, 1 } or { 1, 2, 3 } -- (the sample of each dim: 2-D's width first, as PyTorch's)
  local idx = wick.no_grad(function()
    local samples = u:detach()
    -- each dim's window starts [N, C, out], 0-based, shaped to broadcast over the output
    local starts = {}
    for i = 1, n do
      local s
      if out[i] == 0 then
        s = wick.zeros({ N, C, 0 }, { dtype = "int64", device = dev })
      else
        local last = wick.full({ N, C, 1 }, sizes[i] - k[i], { dtype = "int64", device = dev })
        if out[i] > 1 then
          local ui = samples:select(3, column[i]):unsqueeze(3)
          local alpha = wick.tensor(sizes[i] - k[i], { dtype = dtype, device = dev }) / wick.tensor(out[i] - 1, { dtype = dtype, device = dev })
          local steps = wick.arange(0, out[i] - 1, { dtype = dtype, device = dev })
          local first = ((steps + ui) * alpha):trunc() - (ui * alpha):trunc()
          -- (a sample far outside [0, 1), or NaN, would put a window outside the input)
          if first:numel() > 0 and not (first:isfinite():all():item() and first:min():item() >= 0
              and first:max():item() <= sizes[i] - k[i]) then
            check.fail(fn, "_random_samples put a window outside the input (the samples should be in [0, 1))")
          end
          s = wick.cat({ first:to("int64"), last }, 3)
        else
          s = last
        end
      end
      local view = { N, C }
      for j = 1, n do view[2 + j] = j == i and out[i] or 1 end
      starts[i] = s:reshape(view)
    end
    local flat = xb:detach():reshape(N, C, plane)
    local stride = {}
    stride[n] = 1
    for i = n - 1, 1, -1 do stride[i] = stride[i + 1] * sizes[i + 1] end
    local best = wick.full(shape, -math.huge, { dtype = dtype, device = dev })
    local at
    local offset = {}
    for i = 1, n do offset[i] = 0 end
    while true do -- each position of the window, the last dim fastest
      local pos = (starts[1] + offset[1]) * stride[1]
      for i = 2, n do pos = pos + (starts[i] + offset[i]) * stride[i] end
      pos = (pos + 1):expand(shape) -- (1-based)
      if not at then at = pos:clone() end
      local v = flat:gather(3, pos:reshape(N, C, total)):view(shape)
      local take = v:gt(best):logical_or(v:isnan())
      best = wick.where(take, v, best)
      at = wick.where(take, pos, at)
      local i = n
      while i >= 1 do
        offset[i] = offset[i] + 1
        if offset[i] < k[i] then break end
        offset[i] = 0
        i = i - 1
      end
      if i < 1 then break end
    end
    return at
  end)
  local y = xb:reshape(N, C, plane):gather(3, idx:reshape(N, C, total)):view(shape)
  if unbatched then y, idx = y:squeeze(1), idx:squeeze(1) end
  if o.return_indices then return y, idx end
  return y
end
--- F.fractional_max_pool2d(input, kernel_size[, output_size[, output_ratio[, return_indices[, _random_samples]]]])
--- (or an options table): input [N, C, H, W] (or [C, H, W]); output_size {oh, ow} or output_ratio
--- (of H and W, truncated); _random_samples [N, C, 2] in the input's dtype (uniform in [0, 1) when not
--- given) fixes the windows, as PyTorch's. F.fractional_max_pool3d the same over [N, C, T, H, W] with
--- samples [N, C, 3]. Indices 1-based, flat over the plane (the volume).
function F.fractional_max_pool2d(...) return fractional_max_pool(2, required("fractional_max_pool2d", POOL_ARGS, ...)) end
function F.fractional_max_pool3d(...) return fractional_max_pool(3, required("fractional_max_pool3d", POOL_ARGS, ...)) end
--- F.fractional_max_pool2d_with_indices, F.fractional_max_pool3d_with_indices: return_indices = true
for n = 2, 3 do
  local fn = ("fractional_max_pool%dd_with_indices"):format(n)
  F[fn] = function(...)
    local args = { n = select("#", required(fn, POOL_ARGS, ...)), required(fn, POOL_ARGS, ...) }
    local o = check.positional(fn, FRACTIONAL_ORDER, FRACTIONAL, unpack(args, 3, args.n))
    o.return_indices = true
    return fractional_max_pool(n, args[1], args[2], o)
  end
end

-- PyTorch's keywords of the adaptive poolings, F.adaptive_avg_pool2d(x, output_size=(3, 4)) as
-- (x, {output_size = {3, 4}[, return_indices = b]}): output_size and the rest of the arguments
-- (return_indices as a positional boolean)
function F._adaptive_args(fn, output_size, ...)
  if type(output_size) == "table" and getmetatable(output_size) == nil and output_size.output_size ~= nil then
    if select("#", ...) > 0 and select(1, ...) ~= nil then check.fail(fn, "got output_size by name and more arguments after it") end
    local o = check.options(output_size, fn, { output_size = "any", return_indices = "boolean" })
    if o.return_indices ~= nil then return o.output_size, o.return_indices end
    return o.output_size
  end
  return output_size, ...
end
local adaptive_args = F._adaptive_args

local ADAPTIVE_MAX_BINS = 2 ^ 20
-- PyTorch's adaptive bins of n into out: {first (1-based), length}
local function adaptive_bins(n, out)
  local bins = {}
  for i = 0, out - 1 do
    local a, b = math.floor(i * n / out), math.ceil((i + 1) * n / out)
    bins[#bins + 1] = { a + 1, b - a }
  end
  return bins
end
-- The adaptive poolings: output_size (a number, or {oh, ow} where nil or false keeps
-- that size) checked; bins of equal size go to `equal(x, kh, kw)` (one op),
-- others through `bin(window, row_bin, col_bin)` each, which returns the
-- bin's value and, for max pooling, its 1-based flat index in the plane.
local function adaptive_pool2d(fn, x, output_size, equal, bin)
  tensor(x, fn, "input")
  output_size = wick.ops._number_of(output_size)
  if type(output_size) == "number" then output_size = { output_size, output_size } end
  check.table(output_size, fn, "output_size")
  if getmetatable(output_size) == nil then -- (false keeps that size too: Python's None)
    local h, w = output_size[1], output_size[2]
    output_size = { h ~= false and wick.ops._number_of(h) or nil, w ~= false and wick.ops._number_of(w) or nil }
  end
  for i = 1, 2 do
    if output_size[i] ~= nil then check.int(output_size[i], fn, "output_size", 1) end
  end
  if x:dim() ~= 3 and x:dim() ~= 4 then check.fail(fn, "expected a 3-D or 4-D input, got %d-D", x:dim()) end
  local hd, wd = x:dim() - 1, x:dim()
  local H, W = x:size(hd), x:size(wd)
  local oh, ow = output_size[1] or H, output_size[2] or W
  if oh * ow > ADAPTIVE_MAX_BINS then -- the bins below are Lua tables and a loop each
    check.fail(fn, "output_size %d x %d has more than %d bins", oh, ow, ADAPTIVE_MAX_BINS)
  end
  if H % oh == 0 and W % ow == 0 then return equal(x, H / oh, W / ow) end
  local rows, irows = {}, {}
  for _, r in ipairs(adaptive_bins(H, oh)) do
    local cols, icols = {}, {}
    local strip = x:narrow(hd, r[1], r[2])
    for _, c in ipairs(adaptive_bins(W, ow)) do
      cols[#cols + 1], icols[#icols + 1] = bin(strip:narrow(wd, c[1], c[2]), r, c)
    end
    rows[#rows + 1] = wick.stack(cols, hd)
    if #icols > 0 then irows[#irows + 1] = wick.stack(icols, hd) end
  end
  return wick.stack(rows, hd), #irows > 0 and wick.stack(irows, hd) or nil
end

--- F.adaptive_avg_pool2d(x, output_size): averages over PyTorch's adaptive bins
--- (row i covers floor(i H / oh) .. ceil((i + 1) H / oh)); nil in output_size keeps that size.
function F.adaptive_avg_pool2d(x, ...)
  local output_size = adaptive_args("adaptive_avg_pool2d", ...)
  if select("#", ...) > 1 then check.fail("adaptive_avg_pool2d", "takes 2 arguments (input, output_size), got more") end
  return (adaptive_pool2d("adaptive_avg_pool2d", x, output_size, function(t, kh, kw)
    local hd, wd = t:dim() - 1, t:dim()
    local shape = t:size() -- [.., H, W] as [.., oh, kh, ow, kw]
    shape[hd], shape[wd], shape[wd + 1], shape[wd + 2] = shape[hd] / kh, kh, shape[wd] / kw, kw
    return t:reshape(shape):mean(wd + 2):mean(wd)
  end, function(w)
    local wd = w:dim()
    return w:mean(wd):mean(wd - 1)
  end))
end

--- F.adaptive_max_pool2d(x, output_size[, return_indices = false]) (or {return_indices = b}):
--- the maximum of each adaptive bin (the first one, as PyTorch's kernel); with
--- return_indices also its 1-based flat position in the H x W plane, as max_pool2d's.
function F.adaptive_max_pool2d(x, ...)
  local fn = "adaptive_max_pool2d"
  local output_size, with_indices = adaptive_args(fn, ...)
  with_indices = check.positional(fn, { "return_indices" }, { return_indices = "boolean" }, with_indices,
    select(3, ...)).return_indices
  local v, i = adaptive_pool2d(fn, x, output_size, function(t, kh, kw)
    return core.max_pool2d(t, { kh, kw }, { return_indices = with_indices or false })
  end, function(w, r, c)
    local hd, cl = w:dim() - 1, c[2]
    local m, at = w:flatten(hd):max(hd) -- the window's first maximum, 1-based in the window
    if not with_indices then return m end
    local q = (at - 1):div(cl, { rounding_mode = "floor" })
    return m, (q + (r[1] - 1)) * x:size(hd + 1) + (at - 1 - q * cl) + c[1]
  end)
  if with_indices then return v, i end
  return v
end

--- F.adaptive_max_pool1d(x, output_size[, return_indices = false]): over the 2-D op (indices along L)
function F.adaptive_max_pool1d(x, ...)
  local x2 = as_2d(x, "adaptive_max_pool1d")
  local output_size, ri = adaptive_args("adaptive_max_pool1d", ...)
  check.int(wick.ops._number_of(output_size), "adaptive_max_pool1d", "output_size", 1)
  local v, i = F.adaptive_max_pool2d(x2, { 1, output_size }, ri, select(3, ...))
  if i then return v:squeeze(-2), i:squeeze(-2) end
  return v:squeeze(-2)
end
--- F.adaptive_avg_pool1d(x, output_size)
function F.adaptive_avg_pool1d(x, ...)
  local x2 = as_2d(x, "adaptive_avg_pool1d")
  local output_size = adaptive_args("adaptive_avg_pool1d", ...)
  check.int(wick.ops._number_of(output_size), "adaptive_avg_pool1d", "output_size", 1)
  return F.adaptive_avg_pool2d(x2, { 1, output_size }):squeeze(-2)
end

--- F.group_norm(x, num_groups[, weight[, bias[, eps = 1e-5]]]): statistics over each group of channels
--- (PyTorch's positional order, or any of them in a trailing options table)
local GROUP_NORM = { num_groups = "integer", weight = "tensor", bias = "tensor", eps = "number" }
function F.group_norm(x, ...)
  tensor(x, "group_norm", "input")
  local o = check.positional("group_norm", { "num_groups", "weight", "bias", "eps" }, GROUP_NORM, ...)
  local num_groups, weight, bias, eps = o.num_groups, o.weight, o.bias, o.eps or 1e-5
  check.int(num_groups, "group_norm", "num_groups", 1)
  local c = x:dim() >= 2 and x:size(2) or 0
  if x:dim() < 2 or c % num_groups ~= 0 then
    check.fail("group_norm", "expected an input of shape (N, C, ...) with C divisible by num_groups (%d), got [%s]", num_groups, table.concat(x:size(), ", "))
  end
  same_dtypes("group_norm", x, weight, bias)
  local dtype, low = x.dtype, low_precision(x)
  x, weight, bias = in_compute(x, low), in_compute(weight, low), in_compute(bias, low)
  local n, per = x:size(1), 1
  for i = 2, x:dim() do per = per * x:size(i) end
  local g = x:reshape({ n, num_groups, per / num_groups })
  local mean = g:mean(3, true)
  local var = g:var(3, { unbiased = false, keepdim = true })
  local y = ((g - mean) / (var + eps):sqrt()):reshape(x:size())
  local shape = { 1, c }
  for _ = 3, x:dim() do shape[#shape + 1] = 1 end
  if weight then y = y * weight:view(shape) end
  if bias then y = y + bias:view(shape) end
  return low and y:to(dtype) or y
end

--- F.pixel_shuffle(x, r): [.., C r^2, H, W] to [.., C, H r, W r]; F.pixel_unshuffle the inverse.
-- Both: x's last three dims viewed as five, permuted, and merged to three.
local function regroup(x, five, perm, three)
  local lead = x:size()
  for _ = 1, 3 do lead[#lead] = nil end
  local view, order, out = { unpack(lead) }, {}, { unpack(lead) }
  for i = 1, #lead do order[i] = i end
  for i = 1, 5 do view[#view + 1], order[#order + 1] = five[i], #lead + perm[i] end
  for i = 1, 3 do out[#out + 1] = three[i] end
  return x:reshape(view):permute(order):reshape(out)
end
local function chw(x, fn, factor, name)
  tensor(x, fn, "input")
  check.int(factor, fn, name, 1)
  if x:dim() < 3 then check.fail(fn, "expected at least 3 dimensions, got %d", x:dim()) end
  return x:size(-3), x:size(-2), x:size(-1)
end
function F.pixel_shuffle(...)
  local x, r = required("pixel_shuffle", { "input", "upscale_factor" }, ...)
  local c, h, w = chw(x, "pixel_shuffle", r, "upscale_factor")
  if c % (r * r) ~= 0 then check.fail("pixel_shuffle", "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor, but input.size(-3)=%d is not divisible by %d", c, r * r) end
  return regroup(x, { c / (r * r), r, r, h, w }, { 1, 4, 2, 5, 3 }, { c / (r * r), h * r, w * r })
end
function F.pixel_unshuffle(...)
  local x, r = required("pixel_unshuffle", { "input", "downscale_factor" }, ...)
  local c, h, w = chw(x, "pixel_unshuffle", r, "downscale_factor")
  if h % r ~= 0 or w % r ~= 0 then check.fail("pixel_unshuffle", "height and width (%d, %d) must be divisible by downscale_factor %d", h, w, r) end
  return regroup(x, { c, h / r, r, w / r, r }, { 1, 3, 5, 2, 4 }, { c * r * r, h / r, w / r })
end

--- F.unfold(x, kernel_size[, {dilation = 1, padding = 0, stride = 1}]) (or those positionally):
--- the sliding blocks of x [N, C, H, W] as columns, [N, C kh kw, L] (PyTorch's im2col order:
--- channel, then kernel row, then kernel column)
local function unfold(x, kernel_size, ...)
  local fn = "unfold"
  tensor(x, fn, "input")
  local o = check.positional(fn, { "dilation", "padding", "stride" },
    { dilation = "integer|table", padding = "integer|table", stride = "integer|table" }, ...)
  local k, d = pair(kernel_size, fn, "kernel_size", 1), pair(o.dilation or 1, fn, "dilation", 1)
  local p, st = pair(o.padding or 0, fn, "padding", 0), pair(o.stride or 1, fn, "stride", 1)
  local unbatched = x:dim() == 3
  if unbatched then x = x:unsqueeze(1) end
  if x:dim() ~= 4 then check.fail(fn, "expected a 3-D or 4-D input, got %d-D", x:dim()) end
  if p[1] > 0 or p[2] > 0 then x = F.pad(x, { p[2], p[2], p[1], p[1] }) end
  local n, c, h, w = x:size(1), x:size(2), x:size(3), x:size(4)
  local oh = math.floor((h - d[1] * (k[1] - 1) - 1) / st[1]) + 1
  local ow = math.floor((w - d[2] * (k[2] - 1) - 1) / st[2]) + 1
  if oh < 1 or ow < 1 then
    check.fail(fn, "the kernel (%d x %d, dilation %d x %d) does not fit the padded input (%d x %d)", k[1], k[2], d[1], d[2], h, w)
  end
  local cols = {}
  for i = 0, k[1] - 1 do
    for j = 0, k[2] - 1 do
      local r0, c0 = i * d[1] + 1, j * d[2] + 1
      cols[#cols + 1] = x[{ {}, {}, { r0, r0 + (oh - 1) * st[1], st[1] }, { c0, c0 + (ow - 1) * st[2], st[2] } }]
    end
  end
  local out = wick.stack(cols, 3):reshape(n, c * k[1] * k[2], oh * ow)
  return unbatched and out:squeeze(1) or out
end
function F.unfold(...) return unfold(required("unfold", POOL_ARGS, ...)) end

--- F.fold(x, output_size, kernel_size[, {dilation = 1, padding = 0, stride = 1}]) (or those positionally):
--- col2im, the adjoint of F.unfold: the columns of x [N, C kh kw, L] (or [C kh kw, L]) added
--- into [N, C, H, W] (or [C, H, W]) where their blocks lie, overlaps summed. One index_add
--- (over a map of where each column entry lands, found by unfolding an image of indices), so
--- gradients flow.
local function fold(x, output_size, kernel_size, ...)
  local fn = "fold"
  tensor(x, fn, "input")
  local o = check.positional(fn, { "dilation", "padding", "stride" },
    { dilation = "integer|table", padding = "integer|table", stride = "integer|table" }, ...)
  local size, k = pair(output_size, fn, "output_size"), pair(kernel_size, fn, "kernel_size")
  local d, p, st = pair(o.dilation or 1, fn, "dilation"), pair(o.padding or 0, fn, "padding"), pair(o.stride or 1, fn, "stride")
  local d2, shape = x:dim(), table.concat(x:size(), ", ")
  if (d2 ~= 2 and d2 ~= 3) or x:size(d2 - 1) == 0 or x:size(d2) == 0 then
    check.fail(fn, "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero dimensions for input, but got: [%s]", shape)
  end
  if k[1] <= 0 or k[2] <= 0 then
    check.fail(fn, "kernel size should be greater than zero, but got kernel_height: %d kernel_width: %d", k[1], k[2])
  end
  if st[1] <= 0 or st[2] <= 0 then
    check.fail(fn, "stride should be greater than zero, but got stride_height: %d stride_width: %d", st[1], st[2])
  end
  if d[1] <= 0 or d[2] <= 0 then
    check.fail(fn, "dilation should be greater than zero, but got dilation_height: %d dilation_width: %d", d[1], d[2])
  end
  if p[1] < 0 or p[2] < 0 then
    check.fail(fn, "padding should be non-negative, but got pad_height: %d pad_width: %d", p[1], p[2])
  end
  local unbatched = d2 == 2
  if unbatched then x = x:unsqueeze(1) end
  local n, ckk, l = x:size(1), x:size(2), x:size(3)
  if ckk % (k[1] * k[2]) ~= 0 then
    check.fail(fn, "Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got input.size(1)=%d and kernel_size=(%d, %d).", ckk, k[1], k[2])
  end
  local function blocks(i) -- C's integer division (toward zero), as PyTorch's check
    local v = (size[i] + 2 * p[i] - (d[i] * (k[i] - 1) + 1)) / st[i]
    return (v < 0 and math.ceil(v) or math.floor(v)) + 1
  end
  local bh, bw = blocks(1), blocks(2)
  local given = ("Given output_size=(%d, %d), kernel_size=(%d, %d), dilation=(%d, %d), padding=(%d, %d), stride=(%d, %d), ")
    :format(size[1], size[2], k[1], k[2], d[1], d[2], p[1], p[2], st[1], st[2])
  if l ~= bh * bw then
    check.fail(fn, "%sexpected size of input's dimension 2 to match the calculated number of sliding blocks %d * %d = %d, but got input.size(2)=%d.",
      given, bh, bw, bh * bw, l)
  end
  if bh < 1 or bw < 1 then
    check.fail(fn, "%scalculated shape of the array of sliding blocks as (%d, %d), which is too small (non-positive)", given, bh, bw)
  end
  local c, hw = ckk / (k[1] * k[2]), size[1] * size[2]
  -- where each of the kh kw L entries of a channel's columns lands: 1 for the padding, 2 .. H W + 1 the plane
  local image = (wick.arange(hw, { dtype = "int64", device = x.device }) + 1):view(1, 1, size[1], size[2])
  local map = unfold(image, k, { dilation = d, padding = p, stride = st }):reshape(-1) + 1
  local out = wick.zeros({ n, c, hw + 1 }, { dtype = x.dtype, device = x.device })
    :index_add(3, map, x:reshape(n, c, k[1] * k[2] * l))
    :narrow(3, 2, hw):reshape(n, c, size[1], size[2])
  return unbatched and out:squeeze(1) or out
end
function F.fold(...) return fold(required("fold", { "input", "output_size", "kernel_size" }, ...)) end

--- F.threshold(x, threshold, value[, inplace = false]) (or by name): x where x > threshold, else value;
--- F.tanhshrink(x): x - tanh(x)
function F.threshold(...)
  local x, threshold, value, inplace = required("threshold", { "input", "threshold", "value" }, ...)
  tensor(x, "threshold", "input")
  check.number(threshold, "threshold", "threshold")
  check.number(value, "threshold", "value")
  if type(inplace) == "table" and getmetatable(inplace) == nil then
    inplace = check.options(inplace, "threshold", { inplace = "boolean" }).inplace
  end
  local r = wick.where(x:gt(threshold), x, wick.full({}, value, { dtype = x.dtype, device = x.device }))
  if inplace then return x:copy_(r) end
  return r
end
function F.tanhshrink(x) return tensor(x, "tanhshrink", "input") - x:tanh() end

--- Fused attention, like torch.nn.functional.scaled_dot_product_attention:
--- F.scaled_dot_product_attention(q, k, v[, {attn_mask =, dropout_p = 0, is_causal = false,
--- scale =, enable_gqa = false}]) (or those arguments positionally, in PyTorch's order).
--- dropout_p applies whenever it is above 0, as in PyTorch (pass 0 in eval mode).
--- The C op checks every argument and option; the L x S matrix is never formed.
local SDPA_ORDER = { "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa" }
local SDPA_SPEC = { attn_mask = "tensor", dropout_p = "number", is_causal = "boolean", scale = "number", enable_gqa = "boolean" }
-- the attention written with matmul and softmax (PyTorch's math backend), differentiable twice: for
-- a float attn_mask that requires grad (SAM's decomposed relative-position bias), whose L x S gradient
-- the fused op never forms, and under F._with_math_sdpa (the arguments checked as its ops check theirs).
local function sdpa_composed(q, k, v, o)
  if o.enable_gqa and k:dim() >= 3 and q:size(-3) ~= k:size(-3) then
    local rep = q:size(-3) / k:size(-3)
    k, v = k:repeat_interleave(rep, -3), v:repeat_interleave(rep, -3)
  end
  local s = q:matmul(k:transpose(-2, -1)) * (o.scale or 1 / math.sqrt(q:size(-1)))
  local mask = o.attn_mask
  if o.is_causal then
    mask = wick.ones(q:size(-2), k:size(-2), { dtype = "bool", device = q.device }):tril()
  end
  if mask and mask.dtype == "bool" then
    s = s:masked_fill(mask:logical_not(), -math.huge)
  elseif mask then
    s = s + mask
  end
  local p = s:softmax(-1)
  if o.dropout_p and o.dropout_p > 0 then p = F.dropout(p, o.dropout_p) end
  return p:matmul(v)
end
-- how many calls now ask for the math backend: sdpa_kernel(SDPBackend.MATH, fn) and wick.func's
-- transforms, whose gradients may be differentiated again (the fused op's backward is not)
local math_sdpa = 0
--- F._with_math_sdpa(fn, ...): fn(...) with scaled_dot_product_attention composed of matmul and softmax
local function math_sdpa_done(ok, ...)
  math_sdpa = math_sdpa - 1
  if not ok then error((...), 0) end
  return ...
end
function F._with_math_sdpa(fn, ...)
  check.callable(fn, "_with_math_sdpa", "fn")
  math_sdpa = math_sdpa + 1
  return math_sdpa_done(pcall(fn, ...))
end
function F.scaled_dot_product_attention(q, k, v, ...)
  local is_tensor = wick.is_tensor
  local n = select("#", ...)
  local mask = n > 0 and (...)
  if n > 0 and not is_tensor(mask) then
    local last = select(n, ...)
    mask = type(last) == "table" and not is_tensor(last) and last.attn_mask
  end
  mask = is_tensor(mask) and mask or nil
  if wick.is_grad_enabled() and (math_sdpa > 0 or (mask and mask.requires_grad and mask:is_floating_point()))
      and is_tensor(q) and is_tensor(k) and is_tensor(v)
      and (q.requires_grad or k.requires_grad or v.requires_grad or (mask and mask.requires_grad)) then
    local o = check.positional("scaled_dot_product_attention", SDPA_ORDER, SDPA_SPEC, ...)
    if o.is_causal and o.attn_mask then
      check.fail("scaled_dot_product_attention", "Explicit attn_mask should not be set when is_causal=True")
    end
    return sdpa_composed(q, k, v, o)
  end
  return core.scaled_dot_product_attention(q, k, v, ...)
end


--- Batch normalisation over dim 2 (channels); running statistics are updated in
--- place when training.
--- F.batch_norm(x, running_mean, running_var[, weight[, bias[, training = false[, momentum = 0.1[, eps = 1e-5]]]]])
--- (PyTorch's positional order, or any of them in a trailing options table).
function F.batch_norm(x, ...)
  tensor(x, "batch_norm", "input")
  local o = check.positional("batch_norm", { "running_mean", "running_var", "weight", "bias", "training", "momentum", "eps" },
    NORM_STATS, ...)
  if o.use_input_stats ~= nil then check.fail("batch_norm", "unknown option 'use_input_stats' (instance_norm's)") end
  local running_mean, running_var, weight, bias = o.running_mean, o.running_var, o.weight, o.bias
  local training, momentum, eps = o.training or false, o.momentum or 0.1, o.eps or 1e-5
  if not training and not (running_mean and running_var) then
    check.fail("batch_norm", "running_mean and running_var are required when not training")
  end
  return core.batch_norm(x, weight, bias, running_mean, running_var, training, momentum, eps) -- one fused kernel each way
end

--- Layer normalisation over the trailing dims given by normalized_shape:
--- F.layer_norm(x, normalized_shape[, weight[, bias[, eps = 1e-5]]]) (PyTorch's
--- positional order, or weight, bias and eps in a trailing options table).
local LAYER_NORM = { normalized_shape = "integer|table", weight = "tensor", bias = "tensor", eps = "number" }
function F.layer_norm(x, ...)
  tensor(x, "layer_norm", "input")
  local o = check.positional("layer_norm", { "normalized_shape", "weight", "bias", "eps" }, LAYER_NORM, ...)
  local normalized_shape, weight, bias, eps = o.normalized_shape, o.weight, o.bias, o.eps or 1e-5
  if type(normalized_shape) == "number" then normalized_shape = { normalized_shape } end
  check.table(normalized_shape, "layer_norm", "normalized_shape")
  for i = 1, #normalized_shape do check.int(normalized_shape[i], "layer_norm", "normalized_shape", 0) end
  local n = #normalized_shape
  if n > x:dim() then
    check.fail("layer_norm", "normalized_shape of %d dimension(s) for an input of %d", n, x:dim())
  end
  local k = x:dim() - n
  for i = 1, n do
    if x:size(k + i) ~= normalized_shape[i] then
      check.fail("layer_norm", "Given normalized_shape=[%s], expected input with shape [*, %s], but got input of size[%s]",
        table.concat(normalized_shape, ", "), table.concat(normalized_shape, ", "), table.concat(x:size(), ", "))
    end
  end
  return core.layer_norm(x, n, weight, bias, eps) -- one fused kernel each way
end

-- t:index_select(dim, idx) (or gather), with 1-based indices: an index out of
-- range (0, the 0-based habit) is an error naming fn and the 1-based rule,
-- worked out only once the op has failed
local function pick(fn, what, op, t, dim, idx)
  local ok, out = pcall(t[op], t, dim, idx)
  if ok then return out end
  local n = t:size(dim)
  local read, lo, hi = pcall(function() return idx:min():item(), idx:max():item() end)
  if read then
    local bad = lo < 1 and lo or (hi > n and hi or nil)
    if bad then check.fail(fn, what, bad, n) end
  end
  error(out, 0) -- another error: as it was
end

--- Rows of weight picked by 1-based indices (fn: the name errors give, nn.Embedding's).
function F._embedding(fn, indices, weight)
  tensor(indices, fn, "input")
  tensor(weight, fn, "weight")
  if weight:dim() ~= 2 then check.fail(fn, "expected a 2-D weight, got %d-D", weight:dim()) end
  if indices.dtype ~= "int64" and indices.dtype ~= "int32" then
    check.fail(fn, "expected indices of dtype int64, got %s%s", indices.dtype, indices:is_floating_point()
      and (" (wick.tensor of Lua numbers and wick.arange give %s, the default dtype, unless {dtype = 'int64'}; "
        .. "or convert with :long())"):format(wick.get_default_dtype()) or "")
  end
  local flat = pick(fn, "index %d is out of range (indices are 1-based: 1 to %d)", "index_select", weight, 1,
    indices:reshape(-1))
  local shape = {}
  for i = 1, indices:dim() do shape[i] = indices:size(i) end
  shape[#shape + 1] = weight:size(2)
  return flat:view(shape)
end
--- max_norm as PyTorch takes it: Python's True is 1.0 (TabPFN's nn.Embedding(n, d, max_norm=True))
function F._max_norm(v)
  if type(v) == "boolean" then return v and 1 or 0 end
  return v
end
--- PyTorch's embedding_renorm_: each row of weight that indices look up, of a norm_type-norm
--- (in double) above max_norm, scaled in place by max_norm / (norm + 1e-7), outside autograd
function F._embedding_renorm_(weight, indices, max_norm, norm_type)
  tensor(weight, "embedding_renorm_", "weight")
  tensor(indices, "embedding_renorm_", "indices")
  check.number(max_norm, "embedding_renorm_", "max_norm")
  check.opt_number(norm_type, "embedding_renorm_", "norm_type")
  wick.no_grad(function()
    local rows = indices:reshape(-1):unique()
    local w = weight:index_select(1, rows)
    local norms = w:to("float64"):norm(norm_type or 2, 2, true)
    -- (max_norm / (norm + 1e-7) divided as PyTorch's, not max_norm times a reciprocal)
    local scale = wick.where(norms:gt(max_norm), wick.full_like(norms, max_norm) / (norms + 1e-7), 1):to(w.dtype)
    weight:index_copy_(1, rows, w * scale)
  end)
end
--- F._scale_grad_by_freq(out, indices, weight): out (the rows of weight looked up by indices) with the
--- gradient through each position divided by how often its index occurs in indices, as PyTorch's
--- embedding backward with scale_grad_by_freq (each gradient times 1 / count, then summed per row)
local FreqScale
function F._scale_grad_by_freq(out, indices, weight)
  tensor(out, "scale_grad_by_freq", "out")
  tensor(indices, "scale_grad_by_freq", "indices")
  tensor(weight, "scale_grad_by_freq", "weight")
  if not out.requires_grad then return out end
  if not FreqScale then
    FreqScale = wick.autograd.Function:extend("EmbeddingScaleGradByFreq")
    function FreqScale.forward(ctx, x, scale)
      ctx.scale = scale
      return x:clone()
    end
    function FreqScale.backward(ctx, g) return g * ctx.scale, nil end
  end
  local flat = indices:reshape(-1)
  local scale = wick.no_grad(function()
    local opts = { dtype = "float64", device = weight.device }
    local counts = wick.zeros(weight:size(1), opts):index_add(1, flat, wick.ones(flat:numel(), opts))
    return (1 / counts:index_select(1, flat)):to(out.dtype)
  end)
  local shape = {}
  for i = 1, indices:dim() do shape[i] = indices:size(i) end
  shape[#shape + 1] = 1
  return FreqScale.apply(out, scale:view(shape))
end
--- F.embedding(input, weight[, padding_idx[, max_norm[, norm_type[, scale_grad_by_freq[, sparse]]]]][, opts]):
--- padding_idx (1-based) gets no gradient, as PyTorch's; max_norm renormalises the rows looked up
--- in place first, as PyTorch's; scale_grad_by_freq divides each row's gradient by how often its
--- index occurs in input, as PyTorch's
local EMBEDDING_F = { padding_idx = "integer", max_norm = "number|boolean", norm_type = "number",
  scale_grad_by_freq = "boolean", sparse = "boolean" }
function F.embedding(indices, weight, ...)
  local o = check.positional("embedding", { "padding_idx", "max_norm", "norm_type", "scale_grad_by_freq", "sparse" },
    EMBEDDING_F, ...)
  if o.sparse then common.dense_sparse_warning("embedding") end
  if o.max_norm ~= nil then
    F._embedding("embedding", indices, weight) -- (its checks of the indices first)
    F._embedding_renorm_(weight, indices, F._max_norm(o.max_norm), o.norm_type)
  end
  local out = F._embedding("embedding", indices, weight)
  if o.scale_grad_by_freq then out = F._scale_grad_by_freq(out, indices, weight) end
  if o.padding_idx == nil or not out.requires_grad then return out end
  local p = o.padding_idx < 0 and weight:size(1) + 1 + o.padding_idx or o.padding_idx
  if p < 1 or p > weight:size(1) then check.fail("embedding", "padding_idx must be within num_embeddings (1 to %d)", weight:size(1)) end
  -- the padding rows' values without their gradient
  return wick.where(indices:eq(p):unsqueeze(-1), out:detach(), out)
end

--- F.embedding_bag(input, weight[, offsets][, opts]) (PyTorch's positional order:
--- offsets, max_norm, norm_type, scale_grad_by_freq, mode, sparse,
--- per_sample_weights, include_last_offset, padding_idx): the sum, mean or max of
--- each bag's embeddings. A 2-D input's rows are the bags; a 1-D input is cut
--- into bags at `offsets`, each bag's first position, 1-based (PyTorch's
--- [0, 3, 5] is {1, 4, 6}). An empty bag gives zeros; entries equal to
--- padding_idx (1-based) are left out of their bag. max_norm renormalises the rows
--- of weight that input looks up in place first, as F.embedding's; scale_grad_by_freq
--- (modes "sum" and "mean") divides each row's gradient by how often input has it.
local EMBEDDING_BAG = { offsets = "tensor", max_norm = "number|boolean", norm_type = "number", scale_grad_by_freq = "boolean",
  mode = "string", sparse = "boolean", per_sample_weights = "tensor", include_last_offset = "boolean", padding_idx = "integer" }
local EMBEDDING_BAG_ORDER = { "offsets", "max_norm", "norm_type", "scale_grad_by_freq", "mode", "sparse",
  "per_sample_weights", "include_last_offset", "padding_idx" }
local function bag_ids(fn, input, offsets, last)
  if offsets == nil then check.fail(fn, "offsets has to be a 1D Tensor but got nil (a 1-D input needs offsets)") end
  if offsets:dim() ~= 1 or (offsets.dtype ~= "int64" and offsets.dtype ~= "int32") then
    check.fail(fn, "offsets has to be a 1-D int64 tensor, got a %d-D %s tensor", offsets:dim(), offsets.dtype)
  end
  local n, count = input:size(1), offsets:size(1) - (last and 1 or 0)
  if count < 0 or (count == 0 and n > 0) then check.fail(fn, "offsets has no bag for the input's %d entries", n) end
  if offsets:numel() > 0 then
    if offsets[1]:item() ~= 1 then
      check.fail(fn, "the first offset must be 1, got %d (offsets are 1-based positions: PyTorch's 0 is 1)", offsets[1]:item())
    end
    if offsets:numel() > 1 and (offsets:narrow(1, 2, offsets:numel() - 1) - offsets:narrow(1, 1, offsets:numel() - 1)):lt(0):any() then
      check.fail(fn, "offsets must be non-decreasing")
    end
    if offsets[-1]:item() > n + 1 then check.fail(fn, "offset %d is past the input's %d entries", offsets[-1]:item(), n) end
  end
  local starts = offsets:narrow(1, 1, count):to("int64")
  local ids = wick.searchsorted(starts, wick.arange(1, n + 1, { dtype = "int64", device = input.device }), { right = true }) - 1
  local keep = last and offsets:numel() > 0 and wick.arange(1, n + 1, { dtype = "int64", device = input.device }):lt(offsets[-1]) or nil
  return ids, count, keep
end
function F.embedding_bag(input, weight, ...)
  local fn = "embedding_bag"
  tensor(input, fn, "input")
  tensor(weight, fn, "weight")
  local o = check.positional(fn, EMBEDDING_BAG_ORDER, EMBEDDING_BAG, ...)
  if o.sparse and fn == "embedding_bag" then common.dense_sparse_warning(fn) end
  local mode = check.one_of(o.mode or "mean", fn, "mode", { "sum", "mean", "max" })
  if o.scale_grad_by_freq and mode == "max" then
    check.fail(fn, "max mode does not support scaling the gradient by the frequency")
  end
  local psw = o.per_sample_weights
  if psw and mode ~= "sum" then
    check.fail(fn, "per_sample_weights is only supported for mode='sum' (got mode='%s')", mode)
  end
  if psw and psw:numel() ~= input:numel() then
    check.fail(fn, "per_sample_weights has %d entries for an input of %d", psw:numel(), input:numel())
  end
  if psw and psw.dtype ~= weight.dtype then
    check.fail(fn, "per_sample_weights is %s but weight is %s: make them the same dtype (e.g. per_sample_weights:to(weight.dtype))",
      psw.dtype, weight.dtype)
  end
  local flat, ids, bags, keep
  if input:dim() == 2 then
    if o.offsets then check.fail(fn, "offsets has to be nil if the input is 2-D (its rows are the bags)") end
    bags = input:size(1)
    flat = input:reshape(-1)
    ids = wick.arange(1, bags + 1, { dtype = "int64", device = input.device }):repeat_interleave(input:size(2))
  elseif input:dim() == 1 then
    flat = input
    ids, bags, keep = bag_ids(fn, input, o.offsets, o.include_last_offset)
  else
    check.fail(fn, "input has to be 1-D or 2-D, got %d-D", input:dim())
  end
  local d = weight:size(2)
  if o.max_norm ~= nil then
    F._embedding(fn, flat, weight) -- (its checks of the indices first)
    F._embedding_renorm_(weight, flat, F._max_norm(o.max_norm), o.norm_type)
  end
  local emb = F._embedding(fn, flat, weight)
  if o.scale_grad_by_freq then emb = F._scale_grad_by_freq(emb, flat, weight) end
  if psw then emb = emb * psw:reshape(-1, 1) end
  if o.padding_idx then
    local pad = o.padding_idx < 0 and weight:size(1) + 1 + o.padding_idx or o.padding_idx
    keep = keep and keep:logical_and(flat:ne(pad)) or flat:ne(pad)
  end
  local zeros = function(...) return wick.zeros({ ... }, { dtype = emb.dtype, device = emb.device }) end
  if mode == "max" then
    if keep then emb = emb:masked_fill(keep:logical_not():unsqueeze(2), -math.huge) end
    local rows, per = {}, wick.bincount(ids, { minlength = bags })
    local at = 1
    for b = 1, bags do
      local len = per[b]:item()
      local v = len > 0 and emb:narrow(1, at, len):max(1) or zeros(d)
      rows[b] = wick.where(v:eq(-math.huge), zeros(d), v) -- a bag of padding only: zeros
      at = at + len
    end
    return bags > 0 and wick.stack(rows) or zeros(0, d)
  end
  local weight_of = keep and keep:to(emb.dtype) or nil
  if weight_of then emb = emb * weight_of:unsqueeze(2) end
  local out = zeros(bags, d):index_add(1, ids, emb)
  if mode == "mean" then
    local counts = zeros(bags):index_add(1, ids, weight_of or wick.ones(flat:numel(), { dtype = emb.dtype, device = emb.device }))
    out = out / counts:clamp_min(1):unsqueeze(2)
  end
  return out
end

-- ---- losses ----

local REDUCTIONS = { "mean", "sum", "none" }
local KL_REDUCTIONS = { "mean", "sum", "none", "batchmean" }
-- sum / total weight; when every weight is 0 (a crop of ignored pixels) the value is NaN, as
-- PyTorch's, but the gradient 0, as its: the NaN a constant beside a finite quotient
local function weighted_mean(sum, total)
  local none = total:eq(0)
  return sum / wick.where(none, 1, total) + wick.where(none, 0 / 0, 0):to(sum.dtype):detach()
end
local function reduce(loss, reduction, denominator)
  reduction = reduction or "mean"
  if reduction == "none" then return loss end
  if reduction == "sum" then return loss:sum() end
  if reduction == "mean" then
    if denominator then return weighted_mean(loss:sum(), denominator) end
    return loss:mean()
  end
  wick.error(("invalid reduction '%s' (expected 'mean', 'sum' or 'none')"):format(tostring(reduction)))
end

--- F._Reduction.get_enum(reduction): PyTorch's private numbering of the reductions, 0 "none", 1
--- "mean", 2 "sum" (basicsr's reduce_loss, copied widely)
F._Reduction = {
  get_enum = function(reduction)
    local enum = ({ none = 0, mean = 1, elementwise_mean = 1, sum = 2 })[reduction]
    if enum == nil then check.fail("_Reduction.get_enum", "%s is not a valid value for reduction", tostring(reduction)) end
    return enum
  end,
}

local LOSS_OPTIONS = { reduction = "string", weight = "tensor", ignore_index = "integer|boolean", label_smoothing = "number",
  pos_weight = "tensor|number", size_average = "boolean", reduce = "boolean" }

-- PyTorch's deprecated size_average and reduce keywords, which its losses older
-- than `reduction` still take (torch.nn._reduction.legacy_get_string): reduce =
-- false gives "none", else size_average = false "sum", else "mean"; either one
-- given overrides reduction, with PyTorch's warning (once per call site). Returns
-- opts with the reduction in their place: a copy, the caller's table stays as it was.
local function legacy_reduction(fn, opts)
  if opts.reduction == "elementwise_mean" then -- PyTorch 0.4's name of "mean", with its warning
    common.warn("reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead.")
    local out = {}
    for k, v in pairs(opts) do out[k] = v end
    out.reduction = "mean"
    opts = out
  end
  if opts.size_average == nil and opts.reduce == nil then return opts end
  check.opt_boolean(opts.size_average, fn, "size_average")
  check.opt_boolean(opts.reduce, fn, "reduce")
  local reduction = opts.reduce == false and "none" or opts.size_average == false and "sum" or "mean"
  common.warn(("%s: size_average and reduce args will be deprecated, please use reduction='%s' instead.")
    :format(fn, reduction))
  local out = {}
  for k, v in pairs(opts) do out[k] = v end
  out.size_average, out.reduce, out.reduction = nil, nil, reduction
  return out
end
-- for the nn.*Loss classes (layers.lua), which convert at construction
function F._legacy_reduction(fn, opts)
  check.string(fn, "_legacy_reduction", "fn")
  return legacy_reduction(fn, check.table(opts, fn, "opts"))
end

-- a loss's options with the legacy size_average and reduce added
local function with_legacy(spec)
  local out = { size_average = "boolean", reduce = "boolean" }
  for k, v in pairs(spec) do out[k] = v end
  return out
end
-- PyTorch's autocast runs the losses in float32: under autocast a float16 or
-- bfloat16 operand is cast up (recorded, so its gradient comes back in its dtype).
local float32_under_autocast = wick._autocast_float32

-- The arguments every loss takes: input, target (tensors) and its options;
-- returns the options, input and target (float32 under autocast).
local function loss_args(fn, input, target, known, order, ...)
  tensor(input, fn, "input")
  tensor(target, fn, "target")
  local n, opts = select("#", ...), ...
  if n <= 1 and (opts == nil or (type(opts) == "table" and getmetatable(opts) == nil)) then -- the options table
    opts = check.options(opts, fn, known)
  elseif n == 1 and (type(opts) == "string" or type(opts) == "number") and order[1] ~= "reduction" then
    check.fail(fn, "expected an options table as argument 3, got %s%s; reduction and the other keyword arguments go in the options table: %s(input, target, {reduction = 'sum'})",
      check.describe(opts), type(opts) == "string" and (" '" .. opts .. "'") or "", fn)
  else -- PyTorch's positional arguments after target (weight, size_average, ...), then options
    opts = check.positional(fn, order, known, ...)
  end
  opts = legacy_reduction(fn, opts)
  if opts.reduction ~= nil then
    check.one_of(opts.reduction, fn, "reduction", fn == "kl_div" and KL_REDUCTIONS or REDUCTIONS)
  end
  return opts, float32_under_autocast(input), float32_under_autocast(target)
end
-- PyTorch's positional orders after input and target
local ORDER = {
  nll_loss = { "weight", "size_average", "ignore_index", "reduce", "reduction" },
  cross_entropy = { "weight", "size_average", "ignore_index", "reduce", "reduction", "label_smoothing" },
  binary_cross_entropy = { "weight", "size_average", "reduce", "reduction" },
  binary_cross_entropy_with_logits = { "weight", "size_average", "reduce", "reduction", "pos_weight" },
  mse_loss = { "size_average", "reduce", "reduction" },
  l1_loss = { "size_average", "reduce", "reduction" },
  soft_margin_loss = { "size_average", "reduce", "reduction" },
  smooth_l1_loss = { "size_average", "reduce", "reduction", "beta" },
  huber_loss = { "reduction", "delta" },
  kl_div = { "size_average", "reduce", "reduction", "log_target" },
  poisson_nll_loss = { "log_input", "full", "size_average", "eps", "reduce", "reduction" },
}
F._LOSS_ORDER = ORDER -- (the loss classes take the same: nn.L1Loss(None, None, 'sum'))
local function known(...)
  local out = {}
  for _, k in ipairs({ ... }) do out[k] = LOSS_OPTIONS[k] end
  return out
end
-- PyTorch's check of a target whose size differs from the input's: the error
-- error_fmt (of the target's and the input's sizes), or else a warning once per call site
local BROADCAST = "Using a target size (%s) that is different to the input size (%s). This will likely lead to "
  .. "incorrect results due to broadcasting. Please ensure they have the same size."
local function same_size(fn, input, target, error_fmt)
  if input.shape == target.shape then return end
  local t, i = tostring(target.shape), tostring(input.shape)
  if error_fmt then check.fail(fn, error_fmt, t, i) end
  common.warn(fn .. ": " .. BROADCAST:format(t, i))
  check.broadcastable(fn, input, target) -- (named as the loss, not as the sub inside it)
end

local NLL = known("reduction", "weight", "ignore_index", "size_average", "reduce")
local CE = known("reduction", "weight", "ignore_index", "label_smoothing", "size_average", "reduce")
local REDUCTION = known("reduction", "size_average", "reduce")
local BCE = known("reduction", "weight", "size_average", "reduce")
local BCE_LOGITS = known("reduction", "weight", "pos_weight", "size_average", "reduce")
local SMOOTH = with_legacy({ reduction = "string", beta = "number" })
-- mse_loss, l1_loss and huber_loss take PyTorch 2.15's element-wise weight, last in its positional order
-- (not the loss classes': ORDER stays theirs)
local REDUCTION_W = known("reduction", "size_average", "reduce", "weight")
local ORDER_W = { mse_loss = { "size_average", "reduce", "reduction", "weight" },
  l1_loss = { "size_average", "reduce", "reduction", "weight" }, huber_loss = { "reduction", "delta", "weight" } }
-- the element-wise loss times the weight (of the input's size, PyTorch's check), reduced as PyTorch's:
-- "mean" divides by the weights' sum for mse_loss and l1_loss (by_weight), by the count for huber_loss
local function weighted(fn, loss, weight, input, reduction, by_weight)
  check_device(fn, "weight", weight, input, "input")
  if weight.shape ~= input.shape then check.fail(fn, "Weights and input must have the same size.") end
  loss = loss * weight
  reduction = reduction or "mean"
  if reduction == "none" then return loss end
  if reduction == "sum" then return loss:sum() end
  if by_weight then return loss:sum() / weight:sum() end
  return loss:mean()
end
local HUBER = { reduction = "string", delta = "number", weight = "tensor" } -- newer than reduction: no size_average, as in PyTorch
local KL = with_legacy({ reduction = "string", log_target = "boolean" })

--- Negative log likelihood of 1-based class targets.
-- An unbatched input (C) against one class index (a 0-dim or 1-element
-- target), as PyTorch takes it: the loss of the batch of one, shaped as the
-- target with reduction "none". nil when not that case.
local function unbatched_class(loss, input, target, opts)
  if input:dim() ~= 1 or target:is_floating_point() or target:numel() ~= 1 or target:dim() > 1 then return nil end
  local plain = {}
  for k, v in pairs(opts) do plain[k] = v end
  local r = loss(input:unsqueeze(1), target:reshape(1), plain)
  if (opts.reduction or "mean") == "none" then r = r:view(target.shape) end
  return r
end

-- the loss itself, its errors named as fn's (cross_entropy's own call names cross_entropy)
-- a target of ignore_index + 1 outside the classes: labels made 1-based with + 1 that moved the
-- ignored value too (UperNet's labels + 1 with 255, HF's -100 made -99), said so rather than a
-- bare out-of-bounds error
-- (looked for only once f, the loss's kernel, has failed: no pass over the target, no device sync, when it runs)
local function shifted_ignore(fn, target, ignore, classes, f, ...)
  local ok, r = pcall(f, ...)
  if ok then return r end
  if type(ignore) == "number" and (ignore + 1 > classes or ignore + 1 < 1) and target:numel() > 0
      and not target.is_meta and target:eq(ignore + 1):any():item() then
    check.fail(fn, "Target %d is out of bounds (classes are 1 to %d). It is ignore_index + 1: labels made 1-based "
      .. "with + 1 keep the ignored value as it is (where(labels:eq(%d), labels, labels + 1))", ignore + 1, classes,
      ignore)
  end
  error(r, 0)
end
-- ignore_index = 0 where no target is 0: a port's pad id 0 kept after the labels became 1-based
-- (perceiver-ar's ignore_index = 0 is 1 here), which ignores nothing; said once per call site,
-- the targets read at its first call only (a 0 among them: a sentinel of one's own, nothing said)
local zero_ignore_seen = {}
local function zero_ignore(fn, target, ignore)
  if ignore ~= 0 or target.is_meta then return end
  local site = common.call_site()
  if zero_ignore_seen[site] then return end
  zero_ignore_seen[site] = true
  if not target:eq(0):any():item() then
    common.warn(fn .. ": ignore_index = 0 ignores nothing here, classes count from 1 (PyTorch's ignore_index = 0 "
      .. "for a pad id 0 is ignore_index = 1 once the labels are 1-based; a pad id -1 shifted to 0 is right as it is, "
      .. "and this call had no padding)")
  end
end
local function nll(fn, logp, target, opts)
  if logp:dim() < 2 then wick.error(("%s: expected input of at least 2 dims [N, C], got %d"):format(fn, logp:dim())) end
  if target.dtype ~= "int64" and target.dtype ~= "int32" then
    wick.error(("%s: expected class indices of dtype int64 (1-based), got %s"):format(fn, target.dtype))
  end
  -- PyTorch's shape checks: the target is the input's shape without the class dim 2
  local want = {}
  for d = 1, logp:dim() do if d ~= 2 then want[#want + 1] = logp:size(d) end end
  if target:dim() ~= #want then
    if logp:dim() == 2 then
      check.fail(fn, "0D or 1D target tensor expected, multi-target not supported (a target of shape %s for an "
        .. "input %s)", tostring(target.shape), tostring(logp.shape))
    end
    check.fail(fn, "expected a target of shape %s (the input %s without its class dim 2), got %s",
      tostring(wick.Size(want)), tostring(logp.shape), tostring(target.shape))
  end
  if target:size(1) ~= want[1] then
    check.fail(fn, "Expected input batch_size (%d) to match target batch_size (%d).", want[1], target:size(1))
  end
  for d = 2, #want do
    if target:size(d) ~= want[d] then
      check.fail(fn, "Expected target size %s, got %s", tostring(wick.Size(want)), tostring(target.shape))
    end
  end
  check_device(fn, "target", target, logp, "input")
  local ignore = opts.ignore_index
  if ignore == nil then ignore = -100 end -- PyTorch's default; 1-based classes never collide with it
  zero_ignore(fn, target, ignore)
  local mask, safe = nil, target
  if ignore ~= false then
    mask = target:ne(ignore)
    safe = wick.where(mask, target, 1)
  end
  local picked = shifted_ignore(fn, target, ignore, logp:size(2), pick, fn,
    "Target %d is out of bounds (classes are 1 to %d).", "gather", logp, 2, safe:unsqueeze(2)):squeeze(2)
  local w
  if opts.weight then
    check_class_weight(fn, opts.weight, logp)
    w = opts.weight:index_select(1, safe:reshape(-1)):view(safe.shape)
  end
  if mask then
    local m = mask:to(logp.dtype)
    w = w and w * m or m
  end
  local loss = -picked
  if w then loss = loss * w end
  local reduction = opts.reduction or "mean"
  if reduction == "mean" and w then return reduce(loss, "mean", w:sum()) end
  return reduce(loss, reduction)
end
function F.nll_loss(logp, target, ...)
  local opts, logp, target = loss_args("nll_loss", logp, target, NLL, ORDER.nll_loss, ...)
  local one = unbatched_class(F.nll_loss, logp, target, opts)
  if one then return one end
  return nll("nll_loss", logp, target, opts)
end

--- Cross entropy of logits [N, C] against 1-based class indices [N] (or class
--- probabilities [N, C]), with weight, ignore_index and label_smoothing.
function F.cross_entropy(logits, target, ...)
  local opts, logits, target = loss_args("cross_entropy", logits, target, CE, ORDER.cross_entropy, ...)
  if logits:dim() == 0 then check.fail("cross_entropy", "expected an input of at least 1 dimension, got a 0-dim tensor") end
  local one = unbatched_class(F.cross_entropy, logits, target, opts)
  if one then return one end
  local dim = logits:dim() >= 2 and 2 or 1
  local smoothing = opts.label_smoothing or 0
  if target:is_floating_point() and target:dim() ~= logits:dim() then
    wick.error(("cross_entropy: targets are either class indices (int64, 1-based, shape [N]) or class probabilities (float, shape of the input %s); got %s targets of shape %s")
      :format(tostring(logits.shape), target.dtype, tostring(target.shape)))
  end
  local ignore = opts.ignore_index
  if logits:dim() == 2 and target:dim() == 1 and (target.dtype == "int64" or target.dtype == "int32")
    and (type(ignore) ~= "boolean" or ignore == false) then
    if smoothing < 0 or smoothing > 1 then wick.error("cross_entropy: label_smoothing must be between 0 and 1") end
    check_device("cross_entropy", "target", target, logits, "input")
    if opts.weight then check_class_weight("cross_entropy", opts.weight, logits) end
    if ignore == nil then ignore = -100 elseif ignore == false then ignore = nil end
    zero_ignore("cross_entropy", target, ignore)
    -- log_softmax and nll in one fused kernel each way
    return shifted_ignore("cross_entropy", target, ignore, logits:size(2), core.cross_entropy, logits, target,
      opts.weight, ignore, smoothing, opts.reduction or "mean")
  end
  if target:is_floating_point() then -- class probabilities: the input's shape, no ignore_index (PyTorch's)
    if target.shape ~= logits.shape then
      check.fail("cross_entropy", "class-probability targets must have the input's shape %s, got %s",
        tostring(logits.shape), tostring(target.shape))
    end
    if type(ignore) == "number" and ignore >= 1 then
      check.fail("cross_entropy", "ignore_index is not supported for floating point target")
    end
  end
  local logp = logits:log_softmax(dim)
  if target:is_floating_point() then -- class probabilities
    local t = target
    local classes = logits:size(dim)
    if smoothing > 0 then t = t * (1 - smoothing) + smoothing / classes end
    local per = logp * t
    if opts.weight then
      check_class_weight("cross_entropy", opts.weight, logits)
      per = per * (dim == 2 and per_channel(opts.weight, logp) or opts.weight)
    end
    return reduce(-per:sum(dim), opts.reduction)
  end
  if smoothing < 0 or smoothing > 1 then wick.error("cross_entropy: label_smoothing must be between 0 and 1") end
  local nll_part = nll("cross_entropy", logp, target, { reduction = opts.reduction, weight = opts.weight, ignore_index = opts.ignore_index })
  if smoothing == 0 then return nll_part end
  local classes = logits:size(dim)
  -- the class weight along the class dim (dim 2 of [N, C, d...])
  local per = opts.weight and logp * (dim == 2 and per_channel(opts.weight, logp) or opts.weight) or logp
  local smooth = -per:sum(dim)
  local reduction = opts.reduction or "mean"
  local w
  if ignore == nil then ignore = -100 end -- (PyTorch's default, as nll_loss's; false: none)
  if ignore ~= false then
    local m = target:ne(ignore):to(logits.dtype)
    smooth = smooth * m
    w = m
  end
  if opts.weight then
    local safe = ignore ~= false and wick.where(target:ne(ignore), target, 1) or target
    local wt = opts.weight:index_select(1, safe:reshape(-1)):view(safe.shape)
    w = w and w * wt or wt
  end
  local smooth_red
  if reduction == "mean" and w then smooth_red = weighted_mean(smooth:sum(), w:sum())
  else smooth_red = reduce(smooth, reduction) end
  return nll_part * (1 - smoothing) + smooth_red * (smoothing / classes)
end

--- F.mse_loss(input, target[, size_average[, reduce[, reduction = "mean"[, weight]]]]) (or by name):
--- (input - target)^2, times weight (input's size) before the reduction; "mean" with a weight is
--- sum(w d^2) / sum(w), as PyTorch's
function F.mse_loss(input, target, ...)
  local opts, input, target = loss_args("mse_loss", input, target, REDUCTION_W, ORDER_W.mse_loss, ...)
  check_device("mse_loss", "target", target, input, "input")
  same_size("mse_loss", input, target)
  if opts.weight ~= nil then
    local d = input - target
    return weighted("mse_loss", d * d, opts.weight, input, opts.reduction, true)
  end
  return core.mse_loss(input, target, opts.reduction or "mean")
end

--- F.smooth_l1_loss(input, target[, {reduction = "mean", beta = 1}]): 0.5 d^2 / beta
--- where |d| < beta, else |d| - beta / 2 (d = input - target)
function F.smooth_l1_loss(input, target, ...)
  local opts, input, target = loss_args("smooth_l1_loss", input, target, SMOOTH, ORDER.smooth_l1_loss, ...)
  check_device("smooth_l1_loss", "target", target, input, "input")
  same_size("smooth_l1_loss", input, target)
  local beta = opts.beta or 1
  if beta < 0 then check.fail("smooth_l1_loss", "beta must be non-negative, got %s", tostring(beta)) end
  local d = (input - target):abs()
  if beta == 0 then return reduce(d, opts.reduction) end
  return reduce(wick.where(d:lt(beta), d * d * (0.5 / beta), d - 0.5 * beta), opts.reduction)
end

--- F.huber_loss(input, target[, reduction = "mean"[, delta = 1[, weight]]]) (or by name): 0.5 d^2 where
--- |d| < delta, else delta (|d| - delta / 2); times weight (input's size) before the reduction, whose
--- "mean" is then the mean of the weighted losses (PyTorch's)
function F.huber_loss(input, target, ...)
  local opts, input, target = loss_args("huber_loss", input, target, HUBER, ORDER_W.huber_loss, ...)
  check_device("huber_loss", "target", target, input, "input")
  same_size("huber_loss", input, target)
  local delta = opts.delta or 1
  if not (delta > 0) then check.fail("huber_loss", "delta must be positive, got %s", tostring(delta)) end
  local d = (input - target):abs()
  local loss = wick.where(d:lt(delta), d * d * 0.5, (d - 0.5 * delta) * delta)
  if opts.weight ~= nil then return weighted("huber_loss", loss, opts.weight, input, opts.reduction, false) end
  return reduce(loss, opts.reduction)
end

--- F.kl_div(input, target[, {reduction = "mean", log_target = false}]): input
--- holds log-probabilities; target probabilities (or log-probabilities with
--- log_target), pointwise target (log target - input), 0 where target is 0;
--- reduction "batchmean" divides the sum by the batch size (PyTorch's advice).
function F.kl_div(input, target, ...)
  local opts, input, target = loss_args("kl_div", input, target, KL, ORDER.kl_div, ...)
  check_device("kl_div", "target", target, input, "input")
  local loss
  if opts.log_target then
    loss = target:exp() * (target - input)
  else
    -- target log target, 0 where target is 0 (PyTorch's xlogy: NaN below 0, as log's)
    local zero = target:eq(0)
    local tlogt = wick.where(zero, target * 0, target * wick.where(zero, wick.ones_like(target), target):log())
    loss = tlogt - target * input
  end
  if opts.reduction == "batchmean" then
    return loss:sum() / (input:dim() > 0 and input:size(1) or 1)
  end
  if (opts.reduction or "mean") == "mean" then -- PyTorch's warning, once per line
    common.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
      .. "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
      .. "'mean' will be changed to behave the same as 'batchmean' in the next major release.")
  end
  return reduce(loss, opts.reduction)
end

--- F.soft_margin_loss(input, target[, {reduction}]): log(1 + exp(-target input)), target +-1
function F.soft_margin_loss(input, target, ...)
  local opts, input, target = loss_args("soft_margin_loss", input, target, REDUCTION, ORDER.soft_margin_loss, ...)
  check_device("soft_margin_loss", "target", target, input, "input")
  check.broadcastable("soft_margin_loss", input, target)
  return reduce(F.softplus(-(target * input)), opts.reduction)
end
--- F.poisson_nll_loss(input, target[, {log_input = true, full = false, eps = 1e-8, reduction}]):
--- exp(input) - target input (log_input), else input - target log(input + eps); full adds
--- Stirling's term target log target - target + log(2 pi target) / 2 where target > 1
local POISSON = with_legacy({ reduction = "string", log_input = "boolean", full = "boolean", eps = "number" })
function F.poisson_nll_loss(input, target, ...)
  local opts, input, target = loss_args("poisson_nll_loss", input, target, POISSON, ORDER.poisson_nll_loss, ...)
  check_device("poisson_nll_loss", "target", target, input, "input")
  local loss
  if opts.log_input == false then loss = input - target * (input + (opts.eps or 1e-8)):log()
  else loss = input:exp() - target * input end
  if opts.full then
    local big = target:gt(1)
    local safe = wick.where(big, target, wick.ones_like(target))
    local stirling = safe * safe:log() - safe + (safe * (2 * math.pi)):log() * 0.5
    loss = loss + wick.where(big, stirling, stirling * 0)
  end
  return reduce(loss, opts.reduction)
end
--- F.gumbel_softmax(logits[, {tau = 1, hard = false, dim = -1}]): softmax((logits + Gumbel noise) / tau);
--- hard: the one-hot of its argmax, with the soft sample's gradient (straight through)
function F.gumbel_softmax(logits, ...)
  tensor(logits, "gumbel_softmax", "logits")
  -- PyTorch's order (logits, tau, hard, eps, dim), a 0-dim tau as its number
  local opts = check.positional("gumbel_softmax", { "tau", "hard", "eps", "dim" },
    { tau = "number", hard = "boolean", dim = "integer", eps = "number" }, ...)
  local tau, dim = opts.tau or 1, opts.dim or -1
  if not (tau > 0) then check.fail("gumbel_softmax", "tau must be positive, got %s", tostring(tau)) end
  local u = wick._rand(logits.shape, { dtype = logits.dtype, device = logits.device }):clamp(1e-20, 1)
  local y = ((logits - (-(u:log())):log()) / tau):softmax(dim)
  if not opts.hard then return y end
  local hard = wick.zeros_like(y):scatter(dim, y:argmax(dim, true), 1)
  return hard - y:detach() + y
end

-- the losses of two inputs and a +-1 target: checks, then the reduction
-- (PyTorch's positional arguments after the target, in order, then the options table)
local function pair_loss(fn, x1, x2, y, spec, order, ...)
  tensor(x1, fn, "input1")
  tensor(x2, fn, "input2")
  local opts
  -- the target by keyword: loss(x1, x2, {target = y})
  if type(y) == "table" and getmetatable(y) == nil and wick.is_tensor(y.target) then
    local rest = {}
    for k, v in pairs(y) do if k ~= "target" then rest[k] = v end end
    for k, v in pairs((...) or {}) do rest[k] = v end
    y, opts = y.target, check.options(rest, fn, spec)
  else
    opts = check.positional(fn, order, spec, ...)
  end
  tensor(y, fn, "target")
  opts = legacy_reduction(fn, opts)
  if opts.reduction ~= nil then check.one_of(opts.reduction, fn, "reduction", REDUCTIONS) end
  return opts, float32_under_autocast(y), float32_under_autocast(x1), float32_under_autocast(x2)
end
local MARGIN = with_legacy({ reduction = "string", margin = "number" })
local MARGIN_ORDER = { "margin", "size_average", "reduce", "reduction" }
--- F.margin_ranking_loss(x1, x2, y[, margin = 0[, size_average[, reduce[, reduction]]]][, opts]):
--- max(0, -y (x1 - x2) + margin)
function F.margin_ranking_loss(x1, x2, y, ...)
  local opts
  opts, y, x1, x2 = pair_loss("margin_ranking_loss", x1, x2, y, MARGIN, MARGIN_ORDER, ...)
  check.broadcastable("margin_ranking_loss", x1, x2)
  check.broadcastable("margin_ranking_loss", x1 - x2, y)
  return reduce((-y * (x1 - x2) + (opts.margin or 0)):clamp_min(0), opts.reduction)
end
--- F.cosine_embedding_loss(x1, x2, y[, {margin = 0, reduction}]): 1 - cos where y = 1,
--- max(0, cos - margin) where y = -1 (cosines along dim 2)
function F.cosine_embedding_loss(x1, x2, y, ...)
  local opts
  opts, y, x1, x2 = pair_loss("cosine_embedding_loss", x1, x2, y, MARGIN, MARGIN_ORDER, ...)
  check.broadcastable("cosine_embedding_loss", x1, x2)
  local dim = x1:dim() > 1 and 2 or 1
  if y:dim() ~= x1:dim() - 1 or (y:dim() == 1 and y:size(1) ~= x1:size(1)) then
    check.fail("cosine_embedding_loss", "expected a target of shape [%s] for inputs of shape %s, got %s",
      x1:dim() > 1 and tostring(x1:size(1)) or "", tostring(x1.shape), tostring(y.shape))
  end
  -- (PyTorch's: eps in each squared norm, so a zero vector's cosine is 0 and its gradient finite)
  local cos = (x1 * x2):sum(dim) / (((x1 * x1):sum(dim) + 1e-12) * ((x2 * x2):sum(dim) + 1e-12)):sqrt()
  local loss = wick.where(y:eq(1), 1 - cos, (cos - (opts.margin or 0)):clamp_min(0))
  return reduce(wick.where(y:eq(1):logical_or(y:eq(-1)), loss, cos * 0), opts.reduction)
end
--- F.triplet_margin_loss(anchor, positive, negative[, {margin = 1, p = 2, eps = 1e-6, swap = false, reduction}]):
--- max(d(a, p) - d(a, n) + margin, 0), d the pairwise p-norm distance
local TRIPLET = with_legacy({ reduction = "string", margin = "number", p = "number", eps = "number", swap = "boolean" })
function F.triplet_margin_loss(a, pos, neg, ...)
  local opts
  opts, neg, a, pos = pair_loss("triplet_margin_loss", a, pos, neg, TRIPLET,
    { "margin", "p", "eps", "swap", "size_average", "reduce", "reduction" }, ...)
  local p, eps = opts.p or 2, opts.eps or 1e-6
  if opts.margin ~= nil and opts.margin <= 0 then
    check.fail("triplet_margin_loss", "margin must be greater than 0, got %s", tostring(opts.margin))
  end
  local dp = F.pairwise_distance(a, pos, p, eps)
  local dn = F.pairwise_distance(a, neg, p, eps)
  if opts.swap then dn = wick.minimum(dn, F.pairwise_distance(pos, neg, p, eps)) end
  return reduce((dp - dn + (opts.margin or 1)):clamp_min(0), opts.reduction)
end

--- F.triplet_margin_with_distance_loss(anchor, positive, negative[, {distance_function = F.pairwise_distance,
--- margin = 1, swap = false, reduction = "mean"}]): max(d(a, p) - d(a, n) + margin, 0) for a distance
--- function of one's own (PyTorch's keyword-only options)
local TRIPLET_DISTANCE = { distance_function = "function|table", margin = "number", swap = "boolean", reduction = "string" }
local function triplet_margin_with_distance_loss(a, pos, neg, opts, ...)
  local fn = "triplet_margin_with_distance_loss"
  check.extra(fn, ...)
  tensor(a, fn, "anchor")
  tensor(pos, fn, "positive")
  tensor(neg, fn, "negative")
  local o = check.options(opts, fn, TRIPLET_DISTANCE)
  local margin = o.margin or 1
  if margin <= 0 then check.fail(fn, "margin must be greater than 0, got %s", tostring(margin)) end
  if a:dim() ~= pos:dim() or a:dim() ~= neg:dim() then
    check.fail(fn, "The anchor, positive, and negative tensors are expected to have the same number of dimensions, "
      .. "but got: anchor %dD, positive %dD, and negative %dD inputs", a:dim(), pos:dim(), neg:dim())
  end
  local d = o.distance_function or F.pairwise_distance
  local dp, dn = d(a, pos), d(a, neg)
  if o.swap then dn = wick.minimum(dn, d(pos, neg)) end
  return reduce((dp - dn + margin):clamp_min(0), o.reduction)
end
-- (the tensors by name too: F.triplet_margin_with_distance_loss{anchor = a, positive = p, negative = n})
function F.triplet_margin_with_distance_loss(...)
  return triplet_margin_with_distance_loss(required("triplet_margin_with_distance_loss", { "anchor", "positive", "negative" }, ...))
end

--- F.l1_loss(input, target[, size_average[, reduce[, reduction = "mean"[, weight]]]]) (or by name):
--- |input - target|, times weight as mse_loss's
function F.l1_loss(input, target, ...)
  local opts, input, target = loss_args("l1_loss", input, target, REDUCTION_W, ORDER_W.l1_loss, ...)
  check_device("l1_loss", "target", target, input, "input")
  same_size("l1_loss", input, target)
  if opts.weight ~= nil then return weighted("l1_loss", (input - target):abs(), opts.weight, input, opts.reduction, true) end
  return reduce((input - target):abs(), opts.reduction)
end

--- Binary cross entropy of probabilities; log clamped at -100 like PyTorch.
-- The two binary cross entropies elementwise, with PyTorch's closed-form
-- gradients (autograd.Functions whose backward is written with ops, so they
-- differentiate twice): composed of ops, log(p) at p = 0 or 1 makes the
-- gradient 0 * inf = NaN, and the stable form of log(1 + exp(-x)) loses half
-- of the gradient at x = 0 (the kinks of |x| and max(-x, 0)).
-- PyTorch's kernel: (t - 1) max(log1p(-p), -100) - t max(log(p), -100) (log1p: a p near 0 keeps its
-- loss, DLRM's saturated sigmoid); backward g (p - t) / max((1 - p) p, eps), eps float32's 1e-12 (its
-- constexpr float), and the target's -logit(p) g
local BCE_EPS = 9.999999960041972e-13
local BCEFn = wick.autograd.Function:extend("BinaryCrossEntropy")
function BCEFn.forward(ctx, p, t)
  ctx:save_for_backward(p, t)
  return (t - 1) * (-p):log1p():clamp(-100) - t * p:log():clamp(-100)
end
function BCEFn.backward(ctx, g)
  local p, t = ctx.saved_tensors[1], ctx.saved_tensors[2]
  local gp = ctx.needs_input_grad[1] and g * (p - t) / ((1 - p) * p):clamp_min(BCE_EPS) or nil
  local gt = ctx.needs_input_grad[2] and g * ((-p):log1p() - p:log()) or nil
  return gp, gt
end
-- log(1 + exp(-x)) computed stably
local function softplus_neg(x) return (-x:abs()):exp():log1p() + (-x):clamp_min(0) end
local BCELogitsFn = wick.autograd.Function:extend("BinaryCrossEntropyWithLogits")
function BCELogitsFn.forward(ctx, x, t, pos_weight)
  ctx:save_for_backward(x, t, pos_weight)
  if pos_weight then return (1 - t) * x + ((pos_weight - 1) * t + 1) * softplus_neg(x) end
  return (1 - t) * x + softplus_neg(x)
end
function BCELogitsFn.backward(ctx, g) -- g ((pw - 1) t + 1) sigmoid(x) - pw t), PyTorch's
  local x, t, pw = ctx.saved_tensors[1], ctx.saved_tensors[2], ctx.saved_tensors[3]
  local s = x:sigmoid()
  local gx, gt
  if ctx.needs_input_grad[1] then gx = pw and g * (((pw - 1) * t + 1) * s - pw * t) or g * (s - t) end
  if ctx.needs_input_grad[2] then gt = pw and g * ((pw - 1) * softplus_neg(x) - x) or g * -x end
  return gx, gt, nil
end

-- a binary cross entropy's target is probabilities: an integer or bool one is PyTorch's error (`what`)
local function float_target(fn, target, what)
  if not target:is_floating_point() then
    check.fail(fn, "%s (the loss takes probabilities: target:float() makes them of %s class labels)",
      what:format(target.dtype), target.dtype)
  end
end
function F.binary_cross_entropy(p, target, ...)
  local opts, p, target = loss_args("binary_cross_entropy", p, target, BCE, ORDER.binary_cross_entropy, ...)
  float_target("binary_cross_entropy", target, "Found dtype %s but expected " .. p.dtype)
  if target.dtype ~= p.dtype then -- (PyTorch's: no promotion; NeuS's mask.float() beside a float64 model)
    check.fail("binary_cross_entropy", "Found dtype %s but expected %s (the target must have the input's dtype: "
      .. "target:to(input.dtype))", target.dtype, p.dtype)
  end
  check_device("binary_cross_entropy", "target", target, p, "input")
  same_size("binary_cross_entropy", p, target,
    "Using a target size (%s) that is different to the input size (%s) is deprecated. Please ensure they have the same size.")
  -- (PyTorch's check: logits passed for probabilities, a NaN; TGN's BCELoss after a sigmoid)
  if p.device.type ~= "meta" and wick.no_grad(function() return p:ge(0):logical_and(p:le(1)):all() end) == false then
    check.fail("binary_cross_entropy", "all elements of input should be between 0 and 1")
  end
  local loss = BCEFn.apply(p, target)
  if opts.weight then
    check.broadcastable("binary_cross_entropy", p, opts.weight) -- (PyTorch names the weight's shape too)
    loss = loss * opts.weight
  end
  return reduce(loss, opts.reduction)
end

--- Binary cross entropy of logits, computed stably:
--- (1 - y) x + log(1 + exp(-x)), with pos_weight scaling the positive term.
-- The loss has a floating target's dtype, as PyTorch's, whose (1 - target).mul_(input) keeps it
-- (float32 labels beside a float64 model, Faster R-CNN's RPN, give a float32 loss): its value
-- reduced in that dtype, its gradient the input dtype's all the way, as PyTorch's backward
local function in_target_dtype(loss, target, reduction)
  local reduced = reduce(loss, reduction)
  if not target:is_floating_point() or loss.dtype == target.dtype then return reduced end
  local value = reduce(loss:detach():to(target.dtype), reduction)
  local r = reduced:to(target.dtype)
  return r + (value - r):detach()
end
function F.binary_cross_entropy_with_logits(x, target, ...)
  local opts, x, target = loss_args("binary_cross_entropy_with_logits", x, target, BCE_LOGITS, ORDER.binary_cross_entropy_with_logits, ...)
  float_target("binary_cross_entropy_with_logits", target, "result type " .. x.dtype .. " can't be cast to the desired output type %s")
  check_device("binary_cross_entropy_with_logits", "target", target, x, "input")
  same_size("binary_cross_entropy_with_logits", x, target, "Target size (%s) must be the same as input size (%s)")
  local pw = opts.pos_weight
  if pw ~= nil and not wick.is_tensor(pw) then pw = wick.full({}, pw, { dtype = x.dtype, device = x.device }) end
  if pw and pw.requires_grad and wick.is_grad_enabled() then -- (its gradient: the composed form)
    local lw = (pw - 1) * target + 1
    local loss = (1 - target) * x + lw * softplus_neg(x)
    if opts.weight then loss = loss * opts.weight end
    return in_target_dtype(loss, target, opts.reduction)
  end
  local loss = BCELogitsFn.apply(x, target, pw)
  if opts.weight then loss = loss * opts.weight end
  return in_target_dtype(loss, target, opts.reduction)
end

-- ---- sampling grids (spatial transformers) ----

-- PyTorch's warning when align_corners is left out of affine_grid or grid_sample (once per call site)
local function grid_align_warning()
  common.warn("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. Please "
    .. "specify align_corners=True if the old behavior is desired. See the documentation of grid_sample for details.")
end

--- F.affine_grid(theta, size[, {align_corners = false}]): the (N, H, W, 2)
--- grid of x, y sampling positions in [-1, 1] that the (N, 2, 3) affine maps
--- theta make of an (N, C, H, W) output `size`, or the (N, D, H, W, 3) grid of
--- x, y, z positions of (N, 3, 4) maps and an (N, C, D, H, W) size (PyTorch's)
function F.affine_grid(theta, size, ...)
  check.tensor(theta, "affine_grid", "theta")
  -- PyTorch's (theta, size, align_corners), size also by name
  if type(size) == "table" and getmetatable(size) == nil and size.size ~= nil then
    local rest = {}
    for k, v in pairs(size) do if k ~= "size" then rest[k] = v end end
    return F.affine_grid(theta, size.size, rest)
  end
  check.table(size, "affine_grid", "size")
  local opts = check.positional("affine_grid", { "align_corners" }, { align_corners = "boolean" }, ...)
  local align = opts.align_corners
  if align == nil then grid_align_warning() end
  align = align or false
  for i = 1, #size do check.int(size[i], "affine_grid", "size", 0) end
  if #size ~= 4 and #size ~= 5 then
    check.fail("affine_grid", "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
      .. "respectively. Got size [%s].", table.concat(size, ", "))
  end
  local nd = #size - 2 -- spatial dims
  local N = size[1]
  if theta:dim() ~= 3 or theta:size(1) ~= N or theta:size(2) ~= nd or theta:size(3) ~= nd + 1 then
    check.fail("affine_grid", "Expected a batch of %dD affine matrices of shape Nx%dx%d for size [%s]. Got [%s].",
      nd, nd, nd + 1, table.concat(size, ", "), table.concat(theta:size(), ", "))
  end
  local o = { dtype = theta.dtype, device = theta.device }
  local function base(n) -- the pixels' normalised positions
    if n == 1 then return wick.zeros(1, o) end
    local r = wick.linspace(-1, 1, n, o)
    return align and r or r * ((n - 1) / n)
  end
  -- (D,) H, W; the positions x (along the last dim), y, (z), then ones, each over the whole output
  local spatial, count = {}, 1
  for d = 1, nd do spatial[d] = size[2 + d]; count = count * spatial[d] end
  local parts = {}
  for d = 1, nd do
    local along = nd - d + 1 -- x along the last spatial dim
    local shape = {}
    for e = 1, nd do shape[e] = e == along and spatial[e] or 1 end
    parts[d] = base(spatial[along]):view(shape):expand(spatial)
  end
  parts[nd + 1] = wick.ones(spatial, o)
  local grid = wick.stack(parts, nd + 1):reshape(1, count, nd + 1):expand(N, count, nd + 1)
  local out = { N }
  for d = 1, nd do out[d + 1] = spatial[d] end
  out[nd + 2] = nd
  return grid:bmm(theta:transpose(2, 3)):view(out)
end

local GRID_MODES = { "bilinear", "nearest", "bicubic" }
local GRID_PADDING = { "zeros", "border", "reflection" }
local GRID_PADDING_CODE = { zeros = 0, border = 1, reflection = 2 } -- (wick_grid_sample2d's)
local grid_sample_composed
-- 2-D bilinear and nearest sampling on the kernels: their backward a kernel too, but under create_graph the
-- composed form's gradients, which are differentiable again (MAML through a spatial transformer).
-- (Made on first use: wick.autograd loads after this file.)
local GridSampleFn
local function grid_sample_fn()
  GridSampleFn = wick.autograd.Function:extend("GridSampler2D")
  function GridSampleFn.forward(ctx, input, grid, mode, padding, align)
    ctx:save_for_backward(input, grid)
    ctx.how = { mode, padding, align }
    return core.grid_sample2d(input, grid, mode == "nearest" and 1 or 0, GRID_PADDING_CODE[padding], align)
  end
  function GridSampleFn.backward(ctx, g)
    local input, grid = ctx.saved_tensors[1], ctx.saved_tensors[2]
    local mode, padding, align = unpack(ctx.how)
    local want_input, want_grid = ctx.needs_input_grad[1], ctx.needs_input_grad[2]
    if not wick.is_grad_enabled() then
      return core.grid_sample2d_backward(g, input, grid, mode == "nearest" and 1 or 0, GRID_PADDING_CODE[padding], align,
        want_input, want_grid)
    end
    -- (aliases of input and grid as the gradients' ends: g's own history reaches input and grid too,
    -- and through this very node)
    local x, at = input:view_as(input), grid:view_as(grid)
    local wrt = {}
    if want_input then wrt[#wrt + 1] = x end
    if want_grid then wrt[#wrt + 1] = at end
    local grads = wick.autograd.grad((grid_sample_composed(x, at, mode, padding, align) * g):sum(), wrt,
      { create_graph = true })
    if want_input then return grads[1], grads[2] end
    return nil, grads[1]
  end
  return GridSampleFn
end

-- PyTorch's reflect_coordinates: c reflected into [low2 / 2, high2 / 2] (twice the bounds, so that
-- align_corners = false reflects about the pixels' edges), differentiable
local function reflect(c, low2, high2)
  if low2 == high2 then return c * 0 end
  local lo, span = low2 / 2, (high2 - low2) / 2
  local a = (c - lo):abs()
  local extra = a:fmod(span)
  local even = (a:detach() / span):floor():fmod(2):eq(0)
  return wick.where(even, extra + lo, span - extra + lo)
end
-- a source coordinate under the padding mode (PyTorch's compute_coordinates)
local function pad_coord(c, n, padding, align)
  if padding == "border" then return c:clamp(0, n - 1) end
  if padding == "reflection" then
    c = align and reflect(c, 0, 2 * (n - 1)) or reflect(c, -1, 2 * n - 1)
    return c:clamp(0, n - 1)
  end
  return c
end
-- PyTorch's cubic convolution weights (A = -0.75) of the taps at -1, 0, 1, 2 from floor(x), t = x - floor(x)
local function cubic_weights(t)
  local A = -0.75
  local function near(x) return ((A + 2) * x - (A + 3)) * x * x + 1 end
  local function far(x) return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A end
  return { far(t + 1), near(t), near(1 - t), far(2 - t) }
end

--- F.grid_sample(input, grid[, {mode = "bilinear", padding_mode = "zeros",
--- align_corners = false}]): input (N, C, H, W) read at the grid's (N, Ho, Wo,
--- 2) positions (x, y in [-1, 1]) into (N, C, Ho, Wo), or (N, C, D, H, W) at
--- (N, Do, Ho, Wo, 3) positions (x, y, z); modes "bilinear" (trilinear in 3-D),
--- "nearest" and "bicubic" (2-D), padding "zeros", "border" and "reflection";
--- differentiable in input and grid, also twice (PyTorch's; 2-D bilinear and nearest run as kernels,
--- their gradients of gradients through the composed form; the others are composed)
function F.grid_sample(input, grid, ...)
  check.tensor(input, "grid_sample", "input")
  check.tensor(grid, "grid_sample", "grid")
  -- PyTorch's (input, grid, mode, padding_mode, align_corners) or by name
  local opts = check.positional("grid_sample", { "mode", "padding_mode", "align_corners" },
    { mode = "string", padding_mode = "string", align_corners = "boolean" }, ...)
  local mode = opts.mode or "bilinear"
  local padding = opts.padding_mode or "zeros"
  if opts.align_corners == nil then grid_align_warning() end
  local align = opts.align_corners or false
  check.one_of(mode, "grid_sample", "mode", GRID_MODES)
  check.one_of(padding, "grid_sample", "padding_mode", GRID_PADDING)
  local nd = input:dim() - 2
  if nd ~= 2 and nd ~= 3 then
    check.fail("grid_sample", "expected a 4-D (N, C, H, W) or 5-D (N, C, D, H, W) input, got [%s]",
      table.concat(input:size(), ", "))
  end
  if grid:dim() ~= nd + 2 or grid:size(-1) ~= nd then
    check.fail("grid_sample", "a %d-D input takes a grid of shape (N, %s, %d), got [%s]", nd + 2,
      nd == 2 and "H_out, W_out" or "D_out, H_out, W_out", nd, table.concat(grid:size(), ", "))
  end
  if grid:size(1) ~= input:size(1) then
    check.fail("grid_sample", "grid and input must have the same batch size, got %d and %d", grid:size(1), input:size(1))
  end
  if grid.dtype ~= input.dtype then
    check.fail("grid_sample", "expected grid to have the input's dtype %s, got %s", input.dtype, grid.dtype)
  end
  if mode == "bicubic" and nd == 3 then check.fail("grid_sample", "bicubic interpolation only supports 4D input") end
  if nd == 2 and mode ~= "bicubic" then -- the kernels (src/core/grid_sample.c); the rest composed
    return (GridSampleFn or grid_sample_fn()).apply(input, grid, mode, padding, align)
  end
  return grid_sample_composed(input, grid, mode, padding, align)
end

-- grid_sample written with other ops, differentiable any number of times (checked by F.grid_sample)
function grid_sample_composed(input, grid, mode, padding, align)
  local nd = input:dim() - 2
  local N, C = input:size(1), input:size(2)
  local sizes, out, total, m = {}, {}, 1, 1 -- spatial sizes (D,) H, W; the output's
  for d = 1, nd do sizes[d], out[d] = input:size(2 + d), grid:size(1 + d); total, m = total * sizes[d], m * out[d] end
  -- the source coordinate along spatial dim d (the grid's last entry is x, along the last dim)
  local coords = {}
  for d = 1, nd do
    local g, n = grid:select(-1, nd - d + 1), sizes[d]
    coords[d] = align and (g + 1) * ((n - 1) / 2) or ((g + 1) * n - 1) / 2
  end
  local flat = input:reshape(N, C, total)
  local view = { N, C }
  for d = 1, nd do view[2 + d] = out[d] end
  -- input's values at integer positions cs (one tensor per spatial dim), times w; zero outside
  local function at(cs, w)
    local inside, idx = nil, nil
    for d = 1, nd do
      local c, n = cs[d], sizes[d]
      local ok = c:ge(0):logical_and(c:le(n - 1))
      inside = inside and inside:logical_and(ok) or ok
      local clamped = c:clamp(0, n - 1)
      idx = idx and idx * n + clamped or clamped
    end
    idx = idx:to("int64") + 1
    local v = flat:gather(3, idx:reshape(N, 1, m):expand(N, C, m)):view(view)
    -- (where, not a product with the mask: a NaN position's NaN weight reads zero, as the 2-D kernel's, and
    -- gives the input no NaN gradient)
    return v * wick.where(inside, w, 0):unsqueeze(2)
  end
  if mode == "bicubic" then -- 16 taps, each coordinate under the padding mode (PyTorch's get_value_bounded)
    local y0, x0 = coords[1]:detach():floor(), coords[2]:detach():floor()
    local wy, wx = cubic_weights(coords[1] - y0), cubic_weights(coords[2] - x0)
    local r
    for i = 1, 4 do
      local y = pad_coord(y0 + (i - 2), sizes[1], padding, align)
      for j = 1, 4 do
        local x = pad_coord(x0 + (j - 2), sizes[2], padding, align)
        local v = at({ y:detach():round(), x:detach():round() }, wy[i] * wx[j])
        r = r and r + v or v
      end
    end
    return r
  end
  for d = 1, nd do coords[d] = pad_coord(coords[d], sizes[d], padding, align) end
  if mode == "nearest" then
    local cs = {}
    for d = 1, nd do cs[d] = coords[d]:detach():round() end
    -- weights of 1 that the grid is part of, its gradient zero (PyTorch's: autograd.grad to it works)
    local never = wick.zeros(out, { dtype = "bool", device = input.device })
    return at(cs, wick.where(never, coords[1], 1))
  end
  -- (tri)linear: the 2^nd corners around each position, each weighted by its opposite volume
  local lo, frac = {}, {}
  for d = 1, nd do lo[d] = coords[d]:detach():floor(); frac[d] = coords[d] - lo[d] end
  local r
  for corner = 0, 2 ^ nd - 1 do
    local cs, w = {}, nil
    for d = 1, nd do
      local up = math.floor(corner / 2 ^ (nd - d)) % 2 == 1
      cs[d] = up and lo[d] + 1 or lo[d]
      local wd = up and frac[d] or 1 - frac[d]
      w = w and w * wd or wd
    end
    local v = at(cs, w)
    r = r and r + v or v
  end
  return r
end

-- ---- more losses: margins, Gaussian NLL, CTC ----

-- a loss's PyTorch positional arguments after input and target (`order`), and/or
-- a trailing options table; returns the options, input and target as loss_args
local function loss_positional(fn, input, target, order, spec, ...)
  tensor(input, fn, "input")
  tensor(target, fn, "target")
  return loss_args(fn, input, target, spec, order, check.positional(fn, order, spec, ...))
end
local function class_targets(fn, target, what)
  if target.dtype ~= "int64" and target.dtype ~= "int32" then
    check.fail(fn, "expected %s of dtype int64 (1-based class indices), got %s", what, target.dtype)
  end
end
-- input (C) or (N, C) as (N, C): the 2-D view and whether it was 1-D
local function rows(fn, input)
  local d = input:dim()
  if d > 2 then
    check.fail(fn, "expected a 1-D (C) or 2-D (N, C) input, got %d-D of shape %s", d, tostring(input.shape))
  end
  local x = d < 2 and input:reshape(1, -1) or input
  if x:size(2) == 0 then check.fail(fn, "expected a non-empty class dimension, got input of shape %s", tostring(input.shape)) end
  return x, d < 2
end
local function class_range(x, C)
  return wick.arange(C, { dtype = "int64", device = x.device }):add(1):view(1, C)
end

--- F.multi_margin_loss(input, target[, p = 1[, margin = 1[, weight]]][, opts]): per sample
--- sum over j ~= y of (w[y]) max(0, margin - x[y] + x[j])^p / C; input (N, C) or (C),
--- target 1-based class indices (N) or ()
local MULTI_MARGIN = with_legacy({ reduction = "string", p = "integer", margin = "number", weight = "tensor" })
function F.multi_margin_loss(input, target, ...)
  local fn = "multi_margin_loss"
  local opts
  opts, input, target = loss_positional(fn, input, target, { "p", "margin", "weight", "size_average", "reduce", "reduction" },
    MULTI_MARGIN, ...)
  local p, margin = opts.p or 1, opts.margin or 1
  if p ~= 1 and p ~= 2 then check.fail(fn, "only p == 1 and p == 2 supported, got %d", p) end
  class_targets(fn, target, "target")
  check_device(fn, "target", target, input, "input")
  local x, single = rows(fn, input)
  local N, C = x:size(1), x:size(2)
  if target:numel() ~= N or (single and target:dim() > 1) or (not single and target:dim() ~= 1) then
    check.fail(fn, "inconsistent target size: expected %s for an input of shape %s, got %s",
      single and "() or (1)" or ("(" .. N .. ")"), tostring(input.shape), tostring(target.shape))
  end
  local t = target:reshape(N, 1):to("int64")
  if N > 0 and (t:min():item() < 1 or t:max():item() > C) then
    check.fail(fn, "target out of range: class indices are 1 to %d, got %d to %d", C, t:min():item(), t:max():item())
  end
  local z = (x - x:gather(2, t) + margin):clamp_min(0)
  if p == 2 then z = z * z end
  if opts.weight then
    check_device(fn, "weight", opts.weight, input, "input")
    if opts.weight:dim() ~= 1 or opts.weight:numel() ~= C then
      check.fail(fn, "expected weight to be a 1-D tensor of size %d, got shape %s", C, tostring(opts.weight.shape))
    end
    z = z * opts.weight:index_select(1, t:view(N)):view(N, 1)
  end
  local others = class_range(x, C):ne(t):to(z.dtype)
  local loss = (z * others):sum(2) / C
  if single then loss = loss:view({}) end
  return reduce(loss, opts.reduction)
end

--- F.multilabel_margin_loss(input, target[, opts]): input (N, C) or (C); target of the
--- same shape holds 1-based class indices up to the first one below 1 (0 pads, where
--- PyTorch's 0-based targets pad with -1); per sample the sum over target classes j and
--- non-target classes k of max(0, 1 - (x[j] - x[k])), divided by C
local MULTILABEL = with_legacy({ reduction = "string" })
function F.multilabel_margin_loss(input, target, ...)
  local fn = "multilabel_margin_loss"
  local opts
  opts, input, target = loss_positional(fn, input, target, { "size_average", "reduce", "reduction" }, MULTILABEL, ...)
  class_targets(fn, target, "target")
  check_device(fn, "target", target, input, "input")
  local x, single = rows(fn, input)
  local N, C = x:size(1), x:size(2)
  if target.shape ~= input.shape then
    check.fail(fn, "inconsistent target size: %s for input of size: %s", tostring(target.shape), tostring(input.shape))
  end
  local t = target:reshape(N, C):to("int64")
  local valid = t:lt(1):to("int64"):cumsum(2):eq(0) -- up to the first index below 1
  local safe = wick.where(valid, t, wick.ones_like(t))
  if N > 0 and safe:max():item() > C then
    check.fail(fn, "target out of range: class indices are 1 to %d, got %d", C, safe:max():item())
  end
  local vf = valid:to(x.dtype)
  local is_target = wick.zeros_like(x):detach():scatter_add(2, safe, vf):gt(0)
  local h = (1 - x:gather(2, safe):unsqueeze(3) + x:unsqueeze(2)):clamp_min(0) -- [N, j, k]
  local m = vf:unsqueeze(3) * is_target:logical_not():to(x.dtype):unsqueeze(2)
  local loss = (h * m):sum(3):sum(2) / C
  if single then loss = loss:view({}) end
  return reduce(loss, opts.reduction)
end

--- F.multilabel_soft_margin_loss(input, target[, weight][, opts]): per sample the mean over
--- classes (the last dim) of -(y log sigmoid(x) + (1 - y) log sigmoid(-x)), times weight
local MULTILABEL_SOFT = with_legacy({ reduction = "string", weight = "tensor" })
function F.multilabel_soft_margin_loss(input, target, ...)
  local fn = "multilabel_soft_margin_loss"
  local opts
  opts, input, target = loss_positional(fn, input, target, { "weight", "size_average", "reduce", "reduction" },
    MULTILABEL_SOFT, ...)
  check_device(fn, "target", target, input, "input")
  if input:dim() == 0 then check.fail(fn, "expected an input of at least 1 dimension, got a 0-dim tensor") end
  check.broadcastable(fn, input, target)
  local loss = -(target * F.logsigmoid(input) + (1 - target) * F.logsigmoid(-input))
  if opts.weight then
    check_device(fn, "weight", opts.weight, input, "input")
    loss = loss * opts.weight
  end
  local C = input:size(-1)
  loss = loss:sum(loss:dim()) / C
  return reduce(loss, opts.reduction)
end

--- F.hinge_embedding_loss(input, target[, margin = 1][, opts]): x where y = 1,
--- max(0, margin - x) where y = -1 (PyTorch's: both terms where y is neither)
local HINGE = with_legacy({ reduction = "string", margin = "number" })
function F.hinge_embedding_loss(input, target, ...)
  local fn = "hinge_embedding_loss"
  local opts
  opts, input, target = loss_positional(fn, input, target, { "margin", "size_average", "reduce", "reduction" }, HINGE, ...)
  check_device(fn, "target", target, input, "input")
  check.broadcastable(fn, input, target)
  local zero = wick.zeros_like(input)
  local clamped = ((opts.margin or 1) - input):clamp_min(0)
  local loss = wick.where(target:ne(1), clamped, zero) + wick.where(target:ne(-1), input, zero)
  return reduce(loss, opts.reduction)
end

--- F.gaussian_nll_loss(input, target, var[, full = false[, eps = 1e-6[, reduction = "mean"]]][, opts]):
--- 0.5 (log max(var, eps) + (input - target)^2 / max(var, eps)) (+ 0.5 log(2 pi) with full);
--- var: input's shape, one dim fewer, one dim of size 1, or a number; the clamp passes
--- var's gradient through unchanged, as PyTorch's (in-place under no_grad)
local GAUSSIAN = { reduction = "string", full = "boolean", eps = "number" }
function F.gaussian_nll_loss(input, target, var, ...)
  local fn = "gaussian_nll_loss"
  local opts
  opts, input, target = loss_positional(fn, input, target, { "full", "eps", "reduction" }, GAUSSIAN, ...)
  if type(var) == "number" then
    if not (var >= 0) then check.fail(fn, "var has negative entry/entries") end
    var = wick.full(input.shape, var, { dtype = input.dtype, device = input.device })
  end
  tensor(var, fn, "var")
  if not var:is_floating_point() then check.fail(fn, "expected a floating-point var, got %s", var.dtype) end
  var = float32_under_autocast(var)
  check_device(fn, "target", target, input, "input")
  check_device(fn, "var", var, input, "input")
  if var.shape ~= input.shape then
    local ok = false
    local d = input:dim()
    if var:dim() == d - 1 then
      ok = true
      for i = 1, d - 1 do if var:size(i) ~= input:size(i) then ok = false end end
      if ok then var = var:unsqueeze(-1) end
    elseif var:dim() == d then
      local mismatched = 0
      for i = 1, d do if var:size(i) ~= input:size(i) then mismatched = mismatched + var:size(i) end end
      ok = mismatched == 1
    end
    if not ok then
      check.fail(fn, "var is of incorrect size: %s for input of size %s", tostring(var.shape), tostring(input.shape))
    end
  end
  if var:numel() > 0 and var:min():item() < 0 then check.fail(fn, "var has negative entry/entries") end
  local eps = opts.eps or 1e-6
  local v = var + (var:detach():clamp_min(eps) - var:detach()) -- the clamp, var's gradient unchanged
  local loss = (v:log() + (input - target) ^ 2 / v) * 0.5
  if opts.full then loss = loss + 0.5 * math.log(2 * math.pi) end
  return reduce(loss, opts.reduction)
end

-- ctc_loss's lengths: a number, an array of integers, or an integer tensor (0-d or 1-D)
local function ctc_lengths(fn, v, what, n)
  local list
  if type(v) == "number" then list = { v }
  elseif wick.is_tensor(v) then
    if v:is_floating_point() or v.dtype == "bool" or v:dim() > 1 then
      check.fail(fn, "expected %s as an integer tensor of 0 or 1 dims, an array or a number, got a %s tensor of shape %s",
        what, v.dtype, tostring(v.shape))
    end
    list = v:dim() == 0 and { v:item() } or v:to("float64"):totable()
  elseif type(v) == "table" and getmetatable(v) == nil then list = v
  else check.expected(fn, what, "a tensor, an array of integers or a number", v) end
  if #list ~= n then check.fail(fn, "expected %s of size %d (the batch), got %d", what, n, #list) end
  for i = 1, n do
    local x = list[i]
    if type(x) ~= "number" or x ~= math.floor(x) or x < 0 or x >= 2 ^ 53 then
      check.fail(fn, "%s must be non-negative integers, got %s at %d", what, tostring(x), i)
    end
  end
  return list
end

local CTC = { blank = "integer", reduction = "string", zero_infinity = "boolean" }
local CTC_NEG = -1e30 -- log(0) in the recursion: finite, so that no gradient is NaN
--- F.ctc_loss(log_probs, targets, input_lengths, target_lengths[, blank = 1[, reduction = "mean"[,
--- zero_infinity = false]]][, opts]): connectionist temporal classification. log_probs (T, N, C)
--- (or (T, C)); targets 1-based classes, padded (N, S) or concatenated (sum of target_lengths);
--- blank is a 1-based class (1: PyTorch's default 0). The forward (alpha) recursion over time
--- in log space, vectorised over batch and label positions; autograd gives the gradient
--- (with PyTorch's exp(log_probs) term: see below).
function F.ctc_loss(log_probs, targets, input_lengths, target_lengths, ...)
  local fn = "ctc_loss"
  tensor(log_probs, fn, "log_probs")
  tensor(targets, fn, "targets")
  local o = check.positional(fn, { "blank", "reduction", "zero_infinity" }, CTC, ...)
  local reduction = o.reduction or "mean"
  check.one_of(reduction, fn, "reduction", REDUCTIONS)
  if not log_probs:is_floating_point() then check.fail(fn, "expected floating log_probs, got %s", log_probs.dtype) end
  local lp = float32_under_autocast(log_probs)
  local out_dtype = lp.dtype
  if out_dtype == "float16" or out_dtype == "bfloat16" then lp = lp:to("float32") end -- (log 0 as -1e30 needs float32's range)
  local batched = lp:dim() == 3
  if lp:dim() == 2 then lp = lp:unsqueeze(2)
  elseif lp:dim() ~= 3 then
    check.fail(fn, "expected log_probs of 3 dims (T, N, C) or 2 (T, C), got %d-D", lp:dim())
  end
  check_device(fn, "targets", targets, lp, "log_probs")
  local T, N, C = lp:size(1), lp:size(2), lp:size(3)
  if lp:numel() == 0 then check.fail(fn, "log_probs tensor must not be empty, got shape %s", tostring(log_probs.shape)) end
  local blank = o.blank or 1
  if blank < 1 or blank > C then check.fail(fn, "blank must be in label range: 1 to %d, got %d", C, blank) end
  local il = ctc_lengths(fn, input_lengths, "input_lengths", N)
  local tl = ctc_lengths(fn, target_lengths, "target_lengths", N)
  if targets:is_floating_point() -- (PyTorch's takes float targets of whole values, as their integers)
    and wick.no_grad(function() return targets:eq(targets:trunc()):all():item() end) then
    targets = targets:detach():to("int64")
  elseif targets.dtype ~= "int64" and targets.dtype ~= "int32" then
    check.fail(fn, "expected targets of dtype int64 (1-based class indices), got %s", targets.dtype)
  end
  local smax, total = 0, 0
  for n = 1, N do
    if il[n] > T then check.fail(fn, "Expected input_lengths to have value at most %d, but got value %d", T, il[n]) end
    smax, total = math.max(smax, tl[n]), total + tl[n]
  end
  local dev, dt = lp.device, lp.dtype
  local I64 = { dtype = "int64", device = dev }
  local tlt = wick.tensor(N > 0 and tl or {}, I64):view(N, 1)
  local ilt = wick.tensor(N > 0 and il or {}, I64):view(N, 1)
  local padded -- (N, smax) int64
  if targets:dim() == 2 and batched or (not batched and targets:dim() == 1) then
    local t2 = batched and targets or targets:unsqueeze(1)
    if t2:size(1) ~= N then check.fail(fn, "expected targets of %d rows (the batch), got shape %s", N, tostring(targets.shape)) end
    if smax > t2:size(2) then
      check.fail(fn, "Expected tensor to have size at least %d at dimension 1, but got size %d for targets of shape %s",
        smax, t2:size(2), tostring(targets.shape))
    end
    padded = t2:narrow(2, 1, smax):to("int64")
  elseif batched and targets:dim() == 1 then -- concatenated
    if targets:numel() < total then
      check.fail(fn, "Expected tensor to have size at least %d at dimension 1, but got size %d", total, targets:numel())
    end
    local starts = (tlt:cumsum(1) - tlt) + 1 -- (N, 1), 1-based
    local at = (starts + wick.arange(smax, I64):view(1, smax)):clamp_max(math.max(total, 1))
    if total == 0 then padded = wick.full({ N, smax }, blank, I64)
    else padded = targets:to("int64"):index_select(1, at:reshape(-1)):view(N, smax) end
  else
    check.fail(fn, "expected targets (N, S) or concatenated 1-D for log_probs (T, N, C), (S) for (T, C); got shape %s",
      tostring(targets.shape))
  end
  local in_target = wick.arange(smax, I64):view(1, smax):lt(tlt)
  padded = wick.where(in_target, padded, wick.full({}, blank, I64))
  if N > 0 and smax > 0 and (padded:min():item() < 1 or padded:max():item() > C) then
    check.fail(fn, "target out of range: class indices are 1 to %d, got %d to %d", C, padded:min():item(), padded:max():item())
  end
  -- PyTorch's documented rule ("the target index cannot be blank"), checked: with 1-based
  -- classes a target equal to the blank is most often a 0-based label not moved up by 1.
  if N > 0 and smax > 0 and padded:eq(blank):logical_and(in_target):any() then
    check.fail(fn, "a target is the blank class %d (targets cannot be blank; class indices are 1-based: "
      .. "labels from PyTorch need + 1, and blank = 1 is PyTorch's blank = 0)", blank)
  end
  local L = 2 * smax + 1
  local blanks = wick.full({ N, smax }, blank, I64)
  local ext = wick.cat({ wick.stack({ blanks, padded }, 3):view(N, 2 * smax), wick.full({ N, 1 }, blank, I64) }, 2)
  local function shift(a, k, fill) -- a moved k places along the labels, `fill` coming in
    if L <= k then return wick.full(a.shape, fill, { dtype = a.dtype, device = dev }) end
    return wick.cat({ wick.full({ N, k }, fill, { dtype = a.dtype, device = dev }), a:narrow(2, 1, L - k) }, 2)
  end
  local skip = ext:ne(blank):logical_and(ext:ne(shift(ext, 2, blank))) -- s-2 -> s allowed
  local neg = wick.full({}, CTC_NEG, { dtype = dt, device = dev })
  local alpha = wick.full({ N, L }, CTC_NEG, { dtype = dt, device = dev })
  if T > 0 and N > 0 then
    local E = lp:gather(3, ext:unsqueeze(1):expand(T, N, L):contiguous()) -- (T, N, L)
    local first = wick.arange(L, I64):view(1, L):lt(2)
    alpha = wick.where(first, E[1], neg)
    alpha = wick.where(ilt:ge(1), alpha, neg) -- (an input of length 0 starts nowhere)
    for t = 2, T do
      local new = wick.stack({ alpha, shift(alpha, 1, CTC_NEG), wick.where(skip, shift(alpha, 2, CTC_NEG), neg) }, 3)
        :logsumexp(3) + E[t]
      alpha = wick.where(ilt:ge(t), new, alpha)
    end
  end
  local last = alpha:gather(2, tlt * 2 + 1)
  local before = wick.where(tlt:gt(0), alpha:gather(2, (tlt * 2):clamp_min(1)), neg)
  local ll = wick.cat({ last, before }, 2):logsumexp(2)
  -- an empty input matches only an empty target: log 1
  ll = wick.where(ilt:eq(0):logical_and(tlt:eq(0)):view(N), ll * 0, ll)
  local impossible = ll:lt(CTC_NEG / 10)
  local nll = -ll
  if lp.requires_grad and wick.is_grad_enabled() and T > 0 and N > 0 then
    -- PyTorch's kernel's gradient: the true one plus exp(log_probs) over each input's steps,
    -- a term of value 0 here (no change through log_softmax, where it cancels; an input of
    -- raw scores, as crnn's, trains as in PyTorch)
    local steps = wick.arange(1, T + 1, I64):view(T, 1):le(ilt:view(1, N)) -- (T, N)
    local mass = wick.where(steps, lp:exp():sum(3), wick.zeros({}, { dtype = dt, device = dev })):sum(1)
    nll = nll + (mass - mass:detach())
  end
  local loss = wick.where(impossible, wick.full({}, math.huge, { dtype = dt, device = dev }), nll)
  -- (an impossible sample's where gives it no gradient)
  if o.zero_infinity then loss = wick.where(impossible, wick.zeros({}, { dtype = dt, device = dev }), loss) end
  if reduction == "none" then loss = batched and loss or loss:view({})
  elseif reduction == "sum" then loss = loss:sum()
  else loss = (loss / tlt:view(N):clamp_min(1):to(dt)):mean() end
  return out_dtype ~= dt and loss:to(out_dtype) or loss
end

-- ---- randomized activations and dropouts ----

--- F.rrelu(x[, lower = 1/8[, upper = 1/3[, training = false[, inplace]]]]): x where x >= 0,
--- else x a, a ~ U(lower, upper) per element in training, (lower + upper) / 2 otherwise
local RRELU = { lower = "number", upper = "number", training = "boolean", inplace = "boolean" }
function F.rrelu(x, ...)
  local o = act_args("rrelu", x, { "lower", "upper", "training", "inplace" }, RRELU, ...)
  local lower, upper = o.lower or 1 / 8, o.upper or 1 / 3
  if lower > upper then check.fail("rrelu", "Lower bound should be less than or equal to the upper bound, got %s > %s", lower, upper) end
  if not x:is_floating_point() then check.fail("rrelu", "expected a floating input, got %s", x.dtype) end
  return activate(x, o, function(v)
    -- (x > 0 keeps x; at 0 the slope, so the gradient there is the slope's, as PyTorch's)
    if not o.training then return wick.where(v:gt(0), v, v * ((lower + upper) / 2)) end
    local a = wick._rand(v.shape, { dtype = v.dtype, device = v.device }) * (upper - lower) + lower
    return wick.where(v:gt(0), v, v * a)
  end)
end

-- alpha dropout: keep mask `shape` (broadcast over x); SELU's saturation value for dropped
-- units, then the affine map that keeps mean 0 and variance 1 (PyTorch's)
local SELU_ALPHA = 1.7580993408473766
local function alpha_drop(fn, feature)
  return function(x, ...)
    local o = act_args(fn, x, { "p", "training", "inplace" }, DROPOUT, ...)
    local p = o.p or 0.5
    if p < 0 or p > 1 then wick.error(("dropout probability has to be between 0 and 1, but got %s"):format(p)) end
    if not o.training or p == 0 or x:numel() == 0 then return x end
    return activate(x, o, function(v)
      if p == 1 then return v * 0 end
      local shape = v:size()
      if feature then
        if v:dim() < 2 then check.fail(fn, "Feature dropout requires at least 2 dimensions in the input") end
        for i = 3, #shape do shape[i] = 1 end
      end
      local keep = wick._rand(shape, { dtype = v.dtype, device = v.device }):ge(p):to(v.dtype)
      local a = 1 / math.sqrt((SELU_ALPHA * SELU_ALPHA * p + 1) * (1 - p))
      return v * (keep * a) + ((keep - 1) * (SELU_ALPHA * a) + SELU_ALPHA * a * p)
    end)
  end
end
--- F.alpha_dropout(x[, p = 0.5[, training = false[, inplace]]]) (PyTorch's default: not training);
--- F.feature_alpha_dropout: one draw per (N, C)
F.alpha_dropout = alpha_drop("alpha_dropout", false)
F.feature_alpha_dropout = alpha_drop("feature_alpha_dropout", true)

-- ---- unpooling and power-average pooling ----

-- x (N, C, L) into (N, C, size) at 1-based idx (N, C, L); the gradient gathers back (PyTorch's)
local UnpoolFn = wick.autograd.Function:extend("MaxUnpool")
function UnpoolFn.forward(ctx, x, idx, size)
  ctx.idx = idx
  return wick.zeros({ x:size(1), x:size(2), size }, { dtype = x.dtype, device = x.device }):scatter(3, idx, x)
end
function UnpoolFn.backward(ctx, g) return g:gather(3, ctx.idx), nil, nil end

local UNPOOL = { stride = "integer|table", padding = "integer|table", output_size = "table" }
-- max_unpool{k}d(x, indices, kernel_size[, stride[, padding[, output_size]]][, opts])
local function max_unpool(k)
  local fn = "max_unpool" .. k .. "d"
  local run
  function run(x, indices, kernel_size, ...)
    tensor(x, fn, "input")
    tensor(indices, fn, "indices")
    if kernel_size == nil then check.fail(fn, "missing required argument 'kernel_size'") end
    local o = check.positional(fn, { "stride", "padding", "output_size" }, UNPOOL, ...)
    local function list(v, what, min) return int_tuple(v, k, fn, what, min) end
    local ks = list(kernel_size, "kernel_size", 1)
    local st = o.stride ~= nil and list(o.stride, "stride", 1) or ks
    local pd = list(o.padding or 0, "padding", 0)
    local d = x:dim()
    if d ~= k + 1 and d ~= k + 2 then
      check.fail(fn, "expected a %d-D or %d-D input, got %d-D", k + 1, k + 2, d)
    end
    if indices.shape ~= x.shape then
      check.fail(fn, "Expected shape of indices to be same as that of the input tensor (%s) but got indices tensor with shape: %s",
        tostring(x.shape), tostring(indices.shape))
    end
    if indices.dtype ~= "int64" and indices.dtype ~= "int32" then
      check.fail(fn, "elements in indices should be type int64 but got: %s", indices.dtype)
    end
    local sizes = {}
    for i = 1, k do sizes[i] = (x:size(d - k + i) - 1) * st[i] + ks[i] - 2 * pd[i] end
    if o.output_size then
      local os = o.output_size
      if #os == k + 2 then os = { unpack(os, 3, k + 2) } end
      if #os ~= k then
        check.fail(fn, "output_size should be a sequence containing %d or %d elements, but it has a length of '%d'", k, k + 2, #os)
      end
      for i = 1, k do
        check.int(os[i], fn, "output_size", 0)
        local lo, hi = sizes[i] - st[i], sizes[i] + st[i]
        if not (lo < os[i] and os[i] < hi) then
          check.fail(fn, "invalid output_size (dim %d must be between %d and %d), got %d", i, lo, hi, os[i])
        end
        sizes[i] = os[i]
      end
    end
    local plane = 1
    for i = 1, k do
      if sizes[i] < 0 then check.fail(fn, "output_size must contain non-negative spatial dimensions, got %d", sizes[i]) end
      plane = plane * sizes[i]
    end
    if plane * math.max(x:numel(), 1) > 2 ^ 53 then
      check.fail(fn, "output of %s per plane is too large", table.concat(sizes, "x"))
    end
    local xb, ib = x, indices
    if d == k + 1 then xb, ib = x:unsqueeze(1), indices:unsqueeze(1) end
    local N, Cc = xb:size(1), xb:size(2)
    local flat, fidx = xb:reshape(N, Cc, -1), ib:reshape(N, Cc, -1):to("int64")
    if fidx:numel() > 0 and (fidx:min():item() < 1 or fidx:max():item() > plane) then
      check.fail(fn, "Found an invalid max index: %d (output volumes are of size %s; indices are 1-based)",
        fidx:min():item() < 1 and fidx:min():item() or fidx:max():item(), table.concat(sizes, "x"))
    end
    local y = UnpoolFn.apply(flat, fidx, plane)
    local shape = { N, Cc }
    for i = 1, k do shape[#shape + 1] = sizes[i] end
    y = y:view(shape)
    return d == k + 1 and y:squeeze(1) or y
  end
  -- (the leading three by name too: max_unpool2d(v, i, {kernel_size = 2, stride = 2}))
  return function(...) return run(required(fn, { "input", "indices", "kernel_size" }, ...)) end
end
--- F.max_unpool2d(x, indices, kernel_size[, stride = kernel_size[, padding = 0[, output_size]]][, opts]):
--- the inverse of max_pool2d{return_indices = true} (indices 1-based flat positions in the
--- output's H*W plane); zeros elsewhere. F.max_unpool1d the same over (N, C, L)
F.max_unpool2d = max_unpool(2)
F.max_unpool1d = max_unpool(1)
F.max_unpool3d = max_unpool(3) -- (over D, H and W: indices in the D*H*W volume, as max_pool3d's)

--- F.lp_pool2d(x, norm_type, kernel_size[, stride[, ceil_mode]][, opts]): (sum over the
--- window of x^p)^(1/p), PyTorch's (sign(s) relu(|s|))^(1/p) of the windows' sums s;
--- norm_type inf / -inf: the max / -max of -|x|. F.lp_pool1d over (N, C, L), F.lp_pool3d over
--- D, H and W. Every argument by PyTorch's name too (F.lp_pool2d(x, {norm_type = 2, kernel_size = 2}):
--- ARG_NAMES below); an error of the pooling inside names lp_pool*d.
local LP = { stride = "integer|table", ceil_mode = "boolean" }
local function lp_pool(k)
  local fn = "lp_pool" .. k .. "d"
  local names = { "input", "norm_type", "kernel_size" }
  local function lp(x, norm_type, kernel_size, ...)
    tensor(x, fn, "input")
    check.number(norm_type, fn, "norm_type")
    if norm_type == 0 then check.fail(fn, "norm_type must be a non-zero value, but got 0") end
    if kernel_size == nil then check.fail(fn, "missing required argument 'kernel_size'") end
    local o = check.positional(fn, { "stride", "ceil_mode" }, LP, ...)
    local pool = k == 1 and F.max_pool1d or k == 2 and F.max_pool2d or F.max_pool3d
    local avg = k == 1 and F.avg_pool1d or k == 2 and F.avg_pool2d or F.avg_pool3d
    local max_name, avg_name = "max_pool" .. k .. "d", "avg_pool" .. k .. "d"
    local opts = { stride = o.stride, padding = 0, ceil_mode = o.ceil_mode or false }
    if norm_type == math.huge then return (named_as(fn, max_name, pool, x:abs(), kernel_size, opts)) end
    if norm_type == -math.huge then return -(named_as(fn, max_name, pool, -x:abs(), kernel_size, opts)) end
    local area = 1
    if k == 1 then
      area = type(kernel_size) == "table" and getmetatable(kernel_size) == nil and #kernel_size == 1 and kernel_size[1]
        or check.int(kernel_size, fn, "kernel_size")
    elseif k == 2 then
      local kk = pair(kernel_size, fn, "kernel_size", 1)
      area = kk[1] * kk[2]
    else
      local kk = type(kernel_size) == "table" and kernel_size or { kernel_size, kernel_size, kernel_size }
      for i = 1, 3 do area = area * check.int(kk[i], fn, "kernel_size") end
    end
    local s = named_as(fn, avg_name, avg, x:pow(norm_type), kernel_size, opts)
    return (s:sign() * s:abs():relu() * area):pow(1 / norm_type)
  end
  return function(...) return lp(required(fn, names, ...)) end
end
F.lp_pool2d = lp_pool(2)
F.lp_pool1d = lp_pool(1)
F.lp_pool3d = lp_pool(3)
--- F.elu_(x[, alpha]), F.celu_, F.hardtanh_(x[, min_val[, max_val]]), F.leaky_relu_(x[, negative_slope]),
--- F.rrelu_(x[, lower[, upper[, training]]]), F.selu_(x), F.threshold_(x, threshold, value): the
--- activations written into x (PyTorch's in-place functional forms; an options table works too)
for name, order in pairs({ elu = { "alpha" }, celu = { "alpha" }, hardtanh = { "min_val", "max_val" },
  leaky_relu = { "negative_slope" }, rrelu = { "lower", "upper", "training" }, selu = {}, threshold = { "threshold", "value" } }) do
  F[name .. "_"] = function(x, ...)
    local o = { inplace = true }
    local n = select("#", ...)
    while n > 0 and select(n, ...) == nil do n = n - 1 end -- (trailing nils: absent)
    local last = n > 0 and select(n, ...) or nil
    if type(last) == "table" and getmetatable(last) == nil then
      for k, v in pairs(last) do o[k] = v end
      n = n - 1
    end
    if n > #order then check.fail(name .. "_", "takes at most %d arguments after the input, got %d", #order, n) end
    for i = 1, n do
      local v = select(i, ...)
      if v ~= nil then o[order[i]] = v end
    end
    return F[name](x, o)
  end
end
--- F.adaptive_max_pool1d_with_indices, ..2d.., ..3d..: the adaptive max pools with return_indices = true
for d = 1, 3 do
  F["adaptive_max_pool" .. d .. "d_with_indices"] = function(x, output_size)
    return F["adaptive_max_pool" .. d .. "d"](x, output_size, true)
  end
end
--- F.pdist(input[, p = 2]): wick.pdist
function F.pdist(x, p) return wick.pdist(x, p) end
--- F.max_pool1d_with_indices, F.max_pool2d_with_indices, F.max_pool3d_with_indices: the pools with
--- return_indices = true (PyTorch's names)
for d = 1, 3 do
  F["max_pool" .. d .. "d_with_indices"] = function(x, kernel_size, ...)
    local o = check.positional("max_pool" .. d .. "d_with_indices", { "stride", "padding", "dilation", "ceil_mode", "return_indices" },
      MAX1D, ...)
    o.return_indices = true
    return F["max_pool" .. d .. "d"](x, kernel_size, o)
  end
end
--- F.channel_shuffle(input, groups): (N, g C', ...) as (N, C' g, ...) (ShuffleNet; nn.ChannelShuffle's);
--- groups and input by name too (F.channel_shuffle{input = x, groups = 2}); F.native_channel_shuffle is
--- the same function (PyTorch's kernel-level name)
local function channel_shuffle(fn, x, groups, ...)
  tensor(x, fn, "input")
  check.extra(fn, ...)
  check.int(groups, fn, "groups")
  if groups <= 0 then check.fail(fn, "Number of groups to divide channels in must be positive. Value of groups:%d", groups) end
  if x:dim() <= 2 then
    check.fail(fn, "channel_shuffle expects input with > 2 dims, but got input with sizes [%s]", table.concat(x:size(), ", "))
  end
  local c = x:size(2)
  if c % groups ~= 0 then
    check.fail(fn, "Number of channels must be divisible by groups. Got %d channels and %d groups.", c, groups)
  end
  local shape, split = x:size(), x:size()
  table.remove(split, 2)
  table.insert(split, 2, c / groups)
  table.insert(split, 2, groups)
  return x:reshape(split):transpose(2, 3):reshape(shape)
end
local SHUFFLE_ARGS = { "input", "groups" }
function F.channel_shuffle(...) return channel_shuffle("channel_shuffle", required("channel_shuffle", SHUFFLE_ARGS, ...)) end
function F.native_channel_shuffle(...)
  return channel_shuffle("native_channel_shuffle", required("native_channel_shuffle", SHUFFLE_ARGS, ...))
end

--- F.conv_tbc(input, weight, bias[, pad = 0]): PyTorch's time-batch-channel convolution (fairseq's
--- ConvTBC): input [T, B, C_in], weight [K, C_in, C_out], bias [C_out] -> [T + 2 pad - K + 1, B, C_out],
--- conv1d's cross-correlation over time with pad zeros at both ends (a negative pad crops); composed of
--- conv1d and permutes, so differentiable
local function conv_tbc(x, weight, bias, ...)
  local fn = "conv_tbc"
  tensor(x, fn, "input")
  tensor(weight, fn, "weight")
  tensor(bias, fn, "bias")
  local pad = check.positional(fn, { "pad" }, { pad = "integer" }, ...).pad or 0
  check.int(pad, fn, "pad")
  if x:dim() ~= 3 then check.fail(fn, "Input must have 3 dims: time, batch, in_channel") end
  if weight:dim() ~= 3 then check.fail(fn, "Weight tensor must have 3 dims: kernel_width, in_channels, out_channels.") end
  if bias:dim() ~= 1 then check.fail(fn, "Bias must be 1-D") end
  if x:size(3) ~= weight:size(2) then
    check.fail(fn, "Input dim 3 (input channels, %d) is not == dim 2 in the weight tensor (%d)", x:size(3), weight:size(2))
  end
  if bias:size(1) ~= weight:size(3) then
    check.fail(fn, "Bias size must equal dim 3 in the weight tensor (output channels, %d), got %d", weight:size(3), bias:size(1))
  end
  if weight.dtype ~= x.dtype then
    check.fail(fn, "input and weight must have the same dtype, but got %s and %s", x.dtype, weight.dtype)
  end
  check_device(fn, "weight", weight, x)
  check_device(fn, "bias", bias, x)
  local T, B, K, C_out = x:size(1), x:size(2), weight:size(1), weight:size(3)
  local T_out = T + 2 * pad - K + 1
  if T_out < 0 then
    check.fail(fn, "Trying to create tensor with negative dimension %d: [%d, %d, %d]", T_out, T_out, B, C_out)
  end
  if bias.dtype ~= x.dtype then bias = bias:to(x.dtype) end -- (PyTorch's output starts as the bias, in input's dtype)
  if T_out == 0 or K == 0 or B == 0 or C_out == 0 then -- (nothing for conv1d to slide: the bias alone)
    return bias:expand({ T_out, B, C_out }) + wick.zeros({ T_out, B, C_out }, { dtype = x.dtype, device = x.device })
  end
  if pad < 0 then x, pad = x:narrow(1, 1 - pad, T + 2 * pad), 0 end
  local y = named_as(fn, "conv1d", F.conv1d, x:permute(2, 3, 1), weight:permute(3, 2, 1), bias, { padding = pad })
  return y:permute(3, 1, 2):contiguous()
end
function F.conv_tbc(...) return conv_tbc(required("conv_tbc", { "input", "weight", "bias", "pad?" }, ...)) end

-- The losses' tensors by PyTorch's names too (SAM's F.kl_div(input=log_prob,
-- target=one_hot, reduction='none')): taken from the trailing options table
-- when it names one of them
local LOSS_NAMES = {
  two = { "input", "target" },
  pair = { "input1", "input2", "target" },
}
local LOSSES = { nll_loss = "two", cross_entropy = "two", mse_loss = "two", l1_loss = "two", smooth_l1_loss = "two",
  huber_loss = "two", kl_div = "two", soft_margin_loss = "two", poisson_nll_loss = "two", binary_cross_entropy = "two",
  binary_cross_entropy_with_logits = "two", multi_margin_loss = "two", multilabel_margin_loss = "two",
  multilabel_soft_margin_loss = "two", hinge_embedding_loss = "two", margin_ranking_loss = "pair",
  cosine_embedding_loss = "pair", gaussian_nll_loss = { "input", "target", "var" },
  triplet_margin_loss = { "anchor", "positive", "negative" },
  ctc_loss = { "log_probs", "targets", "input_lengths", "target_lengths" } }
for name, kind in pairs(LOSSES) do
  F[name] = check.by_name(F[name], name, type(kind) == "table" and kind or LOSS_NAMES[kind])
end

-- The other functions' leading arguments by PyTorch's names too (HF's
-- F.scaled_dot_product_attention(query=q, key=k, value=v, attn_mask=m), F.linear(input=x,
-- weight=w)); those not listed take their first tensor as `input`
local ARG_NAMES = {
  scaled_dot_product_attention = { "query", "key", "value" }, multi_head_attention_forward = { "query", "key", "value" },
  linear = { "input", "weight", "bias?" }, bilinear = { "input1", "input2", "weight", "bias?" },
  conv1d = { "input", "weight", "bias?" }, conv2d = { "input", "weight", "bias?" }, conv3d = { "input", "weight", "bias?" },
  conv_transpose1d = { "input", "weight", "bias?" }, conv_transpose2d = { "input", "weight", "bias?" },
  conv_transpose3d = { "input", "weight", "bias?" }, embedding = { "input", "weight" },
  embedding_bag = { "input", "weight" }, layer_norm = { "input", "normalized_shape" },
  rms_norm = { "input", "normalized_shape" }, group_norm = { "input", "num_groups" },
  batch_norm = { "input", "running_mean", "running_var" }, prelu = { "input", "weight" },
  softmax = { "input", "dim?" }, log_softmax = { "input", "dim?" }, softmin = { "input", "dim?" },
  gumbel_softmax = { "logits" }, cosine_similarity = { "x1", "x2" }, pairwise_distance = { "x1", "x2" },
  grid_sample = { "input", "grid" }, affine_grid = { "theta", "size" }, pad = { "input", "pad" },
  one_hot = { "tensor" }, glu = { "input", "dim?" }, pixel_shuffle = { "input", "upscale_factor" },
  pixel_unshuffle = { "input", "downscale_factor" },
  lp_pool1d = { "input", "norm_type", "kernel_size" }, lp_pool2d = { "input", "norm_type", "kernel_size" },
  lp_pool3d = { "input", "norm_type", "kernel_size" }, local_response_norm = { "input", "size" },
  channel_shuffle = { "input", "groups" }, native_channel_shuffle = { "input", "groups" },
  triplet_margin_with_distance_loss = { "anchor", "positive", "negative" }, grouped_mm = { "mat_a", "mat_b" },
  conv_tbc = { "input", "weight", "bias", "pad?" },
}
-- the 3-D convolutions and pooling, conv_transpose1d: composed from the 2-D ops above (volumetric.lua,
-- which requires this module: F is in package.loaded first)
package.loaded["wick.nn.functional"] = F
for name, f in pairs(require("wick.nn.volumetric")) do
  if name:sub(1, 1) ~= "_" then F[name] = f end
end
-- every F function takes its leading tensors by PyTorch's names, and the convolutions an options
-- table where the bias goes
for name, f in pairs(F) do
  if type(f) == "function" and name:sub(1, 1) ~= "_" and not LOSSES[name] then
    F[name] = check.by_name(AT_BIAS[name] and options_at_bias(f) or f, name, ARG_NAMES[name] or { "input" })
  end
end

return F
