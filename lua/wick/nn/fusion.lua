-- wick.nn.utils.fusion: PyTorch's torch.nn.utils.fusion (also nn.utils.fuse_*), a convolution or a
-- linear layer and the batch norm after it (in eval mode) folded into one layer.
local wick = require("wick")
local check = require("wick.argcheck")

local M = {}

-- ---- fusion: a convolution or linear layer and the batch norm after it (eval mode) as one layer ----
-- (PyTorch's torch.nn.M.fuse_*: w' = w * gamma / sqrt(var + eps) per output channel,
-- b' = (b - mean) / sqrt(var + eps) * gamma + beta, computed in PyTorch's order of operations)

-- a floating-point tensor (nil where optional) of one channel per output channel (or 1, broadcast),
-- on the weight's device
local function fusion_vector(fn, v, arg, channels, what, device, optional)
  if v == nil and optional then return nil end
  check.tensor(v, fn, arg)
  if not v:is_floating_point() then check.fail(fn, "expected a floating-point tensor for argument '%s', got %s", arg, v.dtype) end
  if v:dim() > 1 or (v:numel() ~= channels and v:numel() ~= 1) then
    check.fail(fn, "%s has shape %s, expected %d values (%s) or 1", arg, wick.Size(v.shape), channels, what)
  end
  if tostring(v.device) ~= tostring(device) then
    check.fail(fn, "Expected all tensors to be on the same device, but found at least two devices, %s and %s!", device, v.device)
  end
  return v
end

local function fusion_weight(fn, w, arg, min_dim)
  check.tensor(w, fn, arg)
  if not w:is_floating_point() then check.fail(fn, "expected a floating-point tensor for argument '%s', got %s", arg, w.dtype) end
  if w:dim() < min_dim then check.fail(fn, "expected argument '%s' to have at least %d dimensions, got %dD", arg, min_dim, w:dim()) end
  return w
end

-- the batch norm's running statistics and affine parameters, checked against the layer's channels
local function fusion_bn(fn, bias, rm, rv, eps, bw, bb, channels, what, device, bias_arg)
  bias = fusion_vector(fn, bias, bias_arg, channels, what, device, true)
  rm = fusion_vector(fn, rm, "bn_rm", channels, what, device)
  rv = fusion_vector(fn, rv, "bn_rv", channels, what, device)
  check.number(eps, fn, "bn_eps")
  bw = fusion_vector(fn, bw, "bn_w", channels, what, device, true)
  bb = fusion_vector(fn, bb, "bn_b", channels, what, device, true)
  return bias, rm, rv, bw, bb
end

-- the fused weight and bias as Parameters in the layer's dtypes; a bias made from nothing requires no grad
local function fused_params(w, b, like_w, like_b)
  local Parameter = require("wick.nn").Parameter
  return Parameter(w:to(like_w.dtype), like_w.requires_grad),
    Parameter(b:to(like_b and like_b.dtype or like_w.dtype), like_b ~= nil and like_b.requires_grad)
end

--- fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b[, transpose = false]): the
--- convolution's weight and bias with the batch norm folded in, two new Parameters (conv_b, bn_w, bn_b may be nil)
function M.fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, ...)
  local fn = "fuse_conv_bn_weights"
  local transpose = check.positional(fn, { "transpose" }, { transpose = "boolean" }, ...).transpose
  fusion_weight(fn, conv_w, "conv_w", 2)
  local channels = conv_w:size(transpose and 2 or 1)
  local what = transpose and "conv_w's size at dim 2" or "conv_w's output channels"
  conv_b, bn_rm, bn_rv, bn_w, bn_b = fusion_bn(fn, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, channels, what,
    conv_w.device, "conv_b")
  return wick.no_grad(function()
    local bias = conv_b or wick.zeros_like(bn_rm)
    local gamma, beta = bn_w or wick.ones_like(bn_rm), bn_b or wick.zeros_like(bn_rm)
    local rsqrt = (bn_rv + bn_eps):rsqrt()
    local shape = transpose and { 1, -1 } or { -1, 1 }
    for i = 3, conv_w:dim() do shape[i] = 1 end
    local w = conv_w * (gamma * rsqrt):reshape(shape)
    local b = (bias - bn_rm) * rsqrt * gamma + beta
    return fused_params(w, b, conv_w, conv_b)
  end)
end

--- fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b): the linear layer's weight and
--- bias with the batch norm folded in, two new Parameters (linear_b may be nil; bn_w, bn_b too: 1 and 0)
function M.fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b)
  local fn = "fuse_linear_bn_weights"
  fusion_weight(fn, linear_w, "linear_w", 2)
  if linear_w:dim() ~= 2 then check.fail(fn, "expected a 2-D tensor for argument 'linear_w', got %dD", linear_w:dim()) end
  linear_b, bn_rm, bn_rv, bn_w, bn_b = fusion_bn(fn, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, linear_w:size(1),
    "linear_w's output features", linear_w.device, "linear_b")
  return wick.no_grad(function()
    local bias = linear_b or wick.zeros_like(bn_rm)
    local gamma, beta = bn_w or wick.ones_like(bn_rm), bn_b or wick.zeros_like(bn_rm)
    local scale = gamma * (bn_rv + bn_eps):rsqrt()
    local w = linear_w * scale:unsqueeze(-1):to(linear_w.dtype)
    local b = (bias - bn_rm) * scale + beta
    return fused_params(w, b, linear_w, linear_b)
  end)
end

-- both modules in eval mode (PyTorch's assertion), the layer's weight a tensor
local function fusion_modules(fn, layer, layer_arg, bn)
  check.module(layer, fn, layer_arg)
  check.module(bn, fn, "bn")
  if layer.training or bn.training then check.fail(fn, "Fusion only for eval!") end
  local ok, w = pcall(function() return layer.weight end)
  if not (ok and wick.is_tensor(w)) then
    check.fail(fn, "expected %s to have a weight tensor, got %s", layer_arg, ok and check.describe(w) or "none")
  end
end

local function bn_statistics(fn, bn)
  if not wick.is_tensor(bn.running_mean) or not wick.is_tensor(bn.running_var) then
    check.fail(fn, "bn.running_mean and bn.running_var must not be None")
  end
end

--- fuse_conv_bn_eval(conv, bn[, transpose = false]): a new convolution (a deep copy of conv) computing
--- bn(conv(x)); both in eval mode
function M.fuse_conv_bn_eval(conv, bn, ...)
  local fn = "fuse_conv_bn_eval"
  local transpose = check.positional(fn, { "transpose" }, { transpose = "boolean" }, ...).transpose
  fusion_modules(fn, conv, "conv", bn)
  bn_statistics(fn, bn)
  local w, b = M.fuse_conv_bn_weights(conv.weight, conv.bias, bn.running_mean, bn.running_var, bn.eps,
    bn.weight, bn.bias, transpose == true)
  local fused = wick.deepcopy(conv)
  fused.weight, fused.bias = w, b
  return fused
end

--- fuse_linear_bn_eval(linear, bn): a new linear layer (a deep copy of linear) computing bn(linear(x)); both
--- in eval mode, bn's features linear's output features or 1
function M.fuse_linear_bn_eval(linear, bn)
  local fn = "fuse_linear_bn_eval"
  fusion_modules(fn, linear, "linear", bn)
  local out_features = linear.weight:size(1)
  local ok, num_features = pcall(function() return bn.num_features end)
  if not ok or type(num_features) ~= "number" then
    check.fail(fn, "'%s' object has no attribute 'num_features' (bn must be a batch norm)", getmetatable(bn).__name or "Module")
  end
  if out_features ~= num_features and num_features ~= 1 then
    check.fail(fn, "To fuse, linear.out_features == bn.num_features or bn.num_features == 1, got linear.out_features=%d and bn.num_features=%s",
      out_features, tostring(num_features))
  end
  bn_statistics(fn, bn)
  local w, b = M.fuse_linear_bn_weights(linear.weight, linear.bias, bn.running_mean, bn.running_var, bn.eps,
    bn.weight, bn.bias)
  local fused = wick.deepcopy(linear)
  fused.weight, fused.bias = w, b
  return fused
end

return check.strict(M, "wick.nn.utils.fusion")
