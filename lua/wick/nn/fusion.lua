-- wick.nn.utils.fusion: PyTorch's torch.nn.utils.fusion, a convolution or a
-- linear layer and the batch norm after it (in eval mode) folded into one
-- layer: w' = w * gamma / sqrt(var + eps) per output channel,
-- b' = (b - mean) * gamma / sqrt(var + eps) + beta.
local wick = require("wick")
local check = require("wick.argcheck")

local M = {}

-- the batch norm's scale gamma / sqrt(var + eps) and its shift, from its statistics
local function bn_scale(fn, rm, rv, eps, w, b)
  check.tensor(rm, fn, "bn_rm")
  check.tensor(rv, fn, "bn_rv")
  check.number(eps, fn, "bn_eps")
  w = w or wick.ones_like(rm)
  b = b or wick.zeros_like(rm)
  return w * (rv + eps):rsqrt(), b
end

-- a Parameter of t in dtype, requiring grad as `like` does
local function param_like(t, dtype, like)
  return wick.nn.Parameter(t:to(dtype), like == nil or like.requires_grad)
end

--- fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b[, transpose = false]): the fused
--- weight and bias (Parameters); conv_b, bn_w, bn_b may be nil
function M.fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose)
  local fn = "fuse_conv_bn_weights"
  check.tensor(conv_w, fn, "conv_w")
  local scale, shift = bn_scale(fn, bn_rm, bn_rv, bn_eps, bn_w, bn_b)
  local shape = { -1, 1 }
  if transpose then shape = { 1, -1 } end
  for _ = 3, conv_w:dim() do shape[#shape + 1] = 1 end
  local bias = conv_b or wick.zeros_like(bn_rm)
  local w = conv_w * scale:reshape(shape)
  local b = (bias - bn_rm) * scale + shift
  return param_like(w, conv_w.dtype, conv_w), param_like(b, conv_b and conv_b.dtype or conv_w.dtype, conv_b)
end

--- fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b): the fused weight and bias
function M.fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b)
  local fn = "fuse_linear_bn_weights"
  check.tensor(linear_w, fn, "linear_w")
  local scale, shift = bn_scale(fn, bn_rm, bn_rv, bn_eps, bn_w, bn_b)
  local bias = linear_b or wick.zeros_like(bn_rm)
  local w = linear_w * scale:unsqueeze(-1)
  local b = (bias - bn_rm) * scale + shift
  return param_like(w, linear_w.dtype, linear_w), param_like(b, linear_b and linear_b.dtype or linear_w.dtype, linear_b)
end

-- both modules in eval mode, as PyTorch asserts
local function eval_only(fn, a, b)
  check.module(a, fn, "module")
  check.module(b, fn, "bn")
  if a.training or b.training then check.fail(fn, "Fusion only for eval!") end
  if b.running_mean == nil or b.running_var == nil then
    check.fail(fn, "the batch norm must track running statistics (track_running_stats = true)")
  end
end

--- fuse_conv_bn_eval(conv, bn[, transpose = false]): a copy of conv with bn folded in (both in eval mode)
function M.fuse_conv_bn_eval(conv, bn, transpose)
  eval_only("fuse_conv_bn_eval", conv, bn)
  local fused = wick.deepcopy(conv)
  fused.weight, fused.bias = M.fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps,
    bn.weight, bn.bias, transpose)
  return fused
end

--- fuse_linear_bn_eval(linear, bn): a copy of linear with bn folded in (both in eval mode)
function M.fuse_linear_bn_eval(linear, bn)
  local fn = "fuse_linear_bn_eval"
  eval_only(fn, linear, bn)
  if not (linear.out_features == bn.num_features or bn.num_features == 1) then
    check.fail(fn, "To fuse, linear.out_features == bn.num_features or bn.num_features == 1")
  end
  local fused = wick.deepcopy(linear)
  fused.weight, fused.bias = M.fuse_linear_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps,
    bn.weight, bn.bias)
  return fused
end

return check.strict(M, "wick.nn.utils.fusion")
