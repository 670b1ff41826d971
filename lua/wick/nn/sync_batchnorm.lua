-- nn.SyncBatchNorm: batch normalisation whose statistics, in training mode,
-- are those of the global batch over every rank of wick.distributed (PyTorch's
-- torch.nn.SyncBatchNorm), and nn.SyncBatchNorm.convert_sync_batchnorm.
--
-- Forward (training, the process group initialized, world size > 1): each
-- rank reduces its own share per channel (its mean and the sum of squared
-- deviations from it, then sum = n mean and sum of squares = M2 + n mean^2,
-- in float64) and one all_reduce of [sum (C), sum of squares (C), count (1)]
-- gives the global mean and biased variance, which normalise the rank's share;
-- the running statistics take the unbiased global variance (N / (N - 1)), as
-- PyTorch's batch_norm_gather_stats_with_counts. A rank whose share is empty
-- still takes part (zeros, count 0), as in PyTorch.
-- Backward (an autograd.Function, as PyTorch's sync_batch_norm): each rank
-- reduces sum(dy) and sum(dy * xhat) per channel; the weight and bias
-- gradients are these local sums (DistributedDataParallel averages them over
-- the ranks, as in PyTorch), and when the input needs a gradient one
-- all_reduce of both gives the global sums, so that
--   dx = (dy - sum(dy) / N - xhat * sum(dy * xhat) / N) * invstd * weight
-- is the gradient of BatchNorm over the concatenated batch.
-- Everywhere else (eval mode, not initialized, world size 1) it is
-- F.batch_norm, as BatchNorm.
local wick = require("wick")
local check = require("wick.argcheck")
local Module = require("wick.nn.module")
local F = require("wick.nn.functional")
local layers = require("wick.nn.layers")

local unpack = table.unpack or unpack -- luacheck: ignore (Lua 5.2+ and LuaJIT)
local is_module = check.is_module

local NAME = "SyncBatchNorm"

local SyncBatchNorm = require("wick.nn.layers")._BatchNorm:extend(NAME, { "num_features" })

-- The process-group API (wick.distributed); a test may put a stand-in here.
SyncBatchNorm._dist = nil
local function get_dist() return rawget(SyncBatchNorm, "_dist") or wick.distributed end

local function check_group(fn, group)
  if group ~= nil then
    check.fail(fn, "only the default process group exists (process_group must be nil)")
  end
end

-- ---- the module ----

-- (num_features[, eps[, momentum[, affine[, track_running_stats[, process_group]]]]][, opts]), PyTorch's order
local OPTS = { eps = "number", momentum = "number", affine = "boolean", track_running_stats = "boolean",
  process_group = "any", device = "device", dtype = "dtype" }
function SyncBatchNorm:init(num_features, ...)
  check.int(num_features, NAME, "num_features", 0)
  local o = check.positional(NAME, { "eps", "momentum", "affine", "track_running_stats", "process_group", "device", "dtype" },
    OPTS, ...)
  check_group(NAME, o.process_group)
  self.num_features, self.eps, self.momentum = num_features, o.eps or 1e-5, o.momentum or 0.1
  self.affine, self.track_running_stats = o.affine ~= false, o.track_running_stats ~= false
  self.process_group = o.process_group
  local to = { device = o.device, dtype = o.dtype }
  if self.affine then
    self.weight = layers.Parameter(wick.ones(num_features, to))
    self.bias = layers.Parameter(wick.zeros(num_features, to))
  end
  if self.track_running_stats then
    self:register_buffer("running_mean", wick.zeros(num_features, to))
    self:register_buffer("running_var", wick.ones(num_features, to))
    self:register_buffer("num_batches_tracked", wick.zeros({}, { device = o.device, dtype = "int64" }))
  end
end

-- a batch norm (swa_utils.update_bn resets it, as PyTorch's _BatchNorm); the
-- methods and repr of nn.BatchNorm (PyTorch's _NormBase)
SyncBatchNorm._batch_norm = true
SyncBatchNorm.reset_running_stats = rawget(layers.BatchNorm2d, "reset_running_stats")
SyncBatchNorm.reset_parameters = rawget(layers.BatchNorm2d, "reset_parameters")
SyncBatchNorm.extra_repr = rawget(layers.BatchNorm2d, "extra_repr")

-- the world size when the statistics must be synchronised (> 1), else nil
local function sync_world()
  local d = get_dist()
  if d.is_available and not d.is_available() then return nil end
  if not d.is_initialized() then return nil end
  local n = d.get_world_size()
  if n > 1 then return n, d end
  return nil
end

local function shape_str(t)
  local s = {}
  for i = 1, t:dim() do s[i] = tostring(t:size(i)) end
  return "[" .. table.concat(s, ", ") .. "]"
end

-- the dims every channel is reduced over (all but 2), and the [1, C, 1, ...] shape
local function layout(x)
  local dims, shape = { 1 }, { 1, x:size(2) }
  for d = 3, x:dim() do
    dims[#dims + 1] = d
    shape[d] = 1
  end
  return dims, shape
end

-- the dtype the arithmetic runs in: float32 for the 16-bit floats
local function compute_dtype(x)
  if x.dtype == "float16" or x.dtype == "bfloat16" then return "float32" end
  return x.dtype
end

local SyncFn = wick.autograd.Function:extend("SyncBatchNorm")

-- forward(ctx, x, weight, bias, o): o = {running_mean, running_var, eps, momentum, dist}
function SyncFn.forward(ctx, x, weight, bias, o)
  local d = o.dist
  local C = x:size(2)
  local n = C > 0 and x:numel() / C or 0
  local dims, shape = layout(x)
  local acc = compute_dtype(x)
  local xc = x.dtype == acc and x or x:to(acc)
  local combined
  if n > 0 then
    local mean = xc:mean(dims)
    local centered = xc - mean:view(shape)
    local m2 = (centered * centered):sum(dims):double()
    local mean64 = mean:double()
    combined = wick.cat({ mean64 * n, m2 + mean64 * mean64 * n,
      wick.full({ 1 }, n, { dtype = "float64", device = x.device }) })
  else -- an empty share: it still takes part, with count 0 (PyTorch's)
    combined = wick.zeros(2 * C + 1, { dtype = "float64", device = x.device })
  end
  d.all_reduce(combined)
  local N = combined[2 * C + 1]:item()
  if N == 1 then
    check.fail(NAME, "Expected more than 1 value per channel when training, got input size %s "
      .. "(1 value per channel over all the ranks)", shape_str(x))
  end
  ctx.n, ctx.N, ctx.dims, ctx.shape, ctx.acc, ctx.dist, ctx.weight = n, N, dims, shape, acc, d, weight
  ctx.bias_dtype = bias and bias.dtype
  if N == 0 then -- every rank's share is empty
    ctx:save_for_backward(xc)
    return x:clone()
  end
  local sum, sumsq = combined:narrow(1, 1, C), combined:narrow(1, C + 1, C)
  local mean = sum / N
  local var = ((sumsq - sum * mean) / N):clamp(0)
  local invstd = (var + o.eps):rsqrt()
  local rm, rv, m = o.running_mean, o.running_var, o.momentum
  if rm then rm:copy_(rm * (1 - m) + mean:to(rm.dtype) * m) end
  if rv then rv:copy_(rv * (1 - m) + (var * (N / (N - 1))):to(rv.dtype) * m) end
  local mean_c, invstd_c = mean:to(acc), invstd:to(acc)
  ctx:save_for_backward(xc, mean_c, invstd_c)
  if n == 0 then return x:clone() end
  local out = (xc - mean_c:view(shape)) * invstd_c:view(shape)
  if weight then out = out * weight:to(acc):view(shape) end
  if bias then out = out + bias:to(acc):view(shape) end
  if out.dtype ~= x.dtype then out = out:to(x.dtype) end
  return out
end

function SyncFn.backward(ctx, dy)
  local xc, mean, invstd = unpack(ctx.saved_tensors)
  local need_x, need_w, need_b = ctx.needs_input_grad[1], ctx.needs_input_grad[2], ctx.needs_input_grad[3]
  local n, N, dims, shape, acc, weight = ctx.n, ctx.N, ctx.dims, ctx.shape, ctx.acc, ctx.weight
  local C = xc:size(2)
  local sum_dy, sum_dy_xhat, xhat, dyc
  if n > 0 and N > 0 then
    dyc = dy.dtype == acc and dy or dy:to(acc)
    xhat = (xc - mean:view(shape)) * invstd:view(shape)
    sum_dy = dyc:sum(dims)
    sum_dy_xhat = (dyc * xhat):sum(dims)
  else
    sum_dy = wick.zeros(C, { dtype = acc, device = xc.device })
    sum_dy_xhat = sum_dy
  end
  -- the weight and bias gradients: this rank's sums (DistributedDataParallel averages them)
  local gw = need_w and sum_dy_xhat:to(weight.dtype) or nil
  local gb = need_b and sum_dy:to(ctx.bias_dtype or sum_dy.dtype) or nil
  local gx
  if need_x then
    -- every rank all-reduces (an empty share with zeros), so the collectives match
    local combined = wick.cat({ sum_dy, sum_dy_xhat })
    ctx.dist.all_reduce(combined)
    if n > 0 and N > 0 then
      local g_dy, g_dy_xhat = combined:narrow(1, 1, C) / N, combined:narrow(1, C + 1, C) / N
      local scale = invstd
      if weight then scale = scale * weight:to(acc) end
      gx = (dyc - g_dy:view(shape) - xhat * g_dy_xhat:view(shape)) * scale:view(shape)
      if gx.dtype ~= dy.dtype then gx = gx:to(dy.dtype) end
    else -- an empty share (or every share empty): an empty gradient
      gx = wick.zeros_like(dy)
    end
  end
  return gx, gw, gb, nil
end

function SyncBatchNorm:forward(x)
  check.tensor(x, NAME, "input")
  if x:dim() < 2 then check.fail(NAME, "expected at least 2D input (got %dD input)", x:dim()) end
  if x:size(2) == 0 then check.fail(NAME, "number of input channels should be non-zero") end
  -- PyTorch's _BatchNorm.forward: momentum nil averages over the batches seen
  local momentum = self.momentum
  local factor = momentum or 0
  if self.training and self.track_running_stats and self.num_batches_tracked then
    wick.no_grad(function() self.num_batches_tracked:add_(1) end)
    if momentum == nil then factor = 1 / self.num_batches_tracked:item() end
  end
  local bn_training = self.training or (self.running_mean == nil and self.running_var == nil)
  local running_mean, running_var
  if not self.training or self.track_running_stats then
    running_mean, running_var = self.running_mean, self.running_var
  end
  local world, d
  if bn_training and self.training then world, d = sync_world() end
  if not world then
    return F.batch_norm(x, running_mean, running_var, self.weight, self.bias, bn_training, factor, self.eps)
  end
  local C = x:size(2)
  for _, p in ipairs({ { "weight", self.weight }, { "bias", self.bias }, { "running_mean", running_mean },
    { "running_var", running_var } }) do
    local t = p[2]
    if t ~= nil and (t:dim() ~= 1 or t:size(1) ~= C) then
      check.fail(NAME, "expected %s of shape [%d] (the input's channels), but got %s", p[1], C, shape_str(t))
    end
  end
  return SyncFn.apply(x, self.weight, self.bias,
    { running_mean = running_mean, running_var = running_var, eps = self.eps, momentum = factor, dist = d })
end

-- ---- convert_sync_batchnorm ----

local convert

-- the modules held by `src` (its array part, its fields, plain tables in them)
-- converted, and put in `dst` (src itself, or the SyncBatchNorm replacing it)
local function convert_children(src, dst, group, memo, visiting)
  local function entry(v)
    if is_module(v) then return convert(v, group, memo) end
    if check.is_array(v) and not visiting[v] then
      visiting[v] = true
      for k, item in pairs(v) do
        local new = entry(item)
        if new ~= item then rawset(v, k, new) end
      end
      visiting[v] = nil
    end
    return v
  end
  local n = 0
  while rawget(src, n + 1) ~= nil do n = n + 1 end
  for i = 1, n do
    local v = rawget(src, i)
    if is_module(v) then rawset(dst, i, convert(v, group, memo)) end
  end
  for _, key in ipairs({ unpack(rawget(src, "_fields")) }) do
    local v = rawget(src, key)
    if type(v) == "table" then
      local new = entry(v)
      if src ~= dst then
        if is_module(new) or (type(new) == "table" and getmetatable(new) == nil) then dst[key] = new end
      elseif new ~= v then
        rawset(dst, key, new)
      end
    end
  end
end

local function copy_state(bn, group)
  local out = SyncBatchNorm(bn.num_features, { eps = bn.eps, affine = bn.affine ~= false,
    track_running_stats = bn.track_running_stats ~= false, process_group = group })
  -- the same tensors (parameters, frozen or not, and buffers), as PyTorch's
  rawset(out, "momentum", bn.momentum)
  if bn.affine ~= false then
    rawset(out, "weight", bn.weight)
    rawset(out, "bias", bn.bias)
  end
  if bn.track_running_stats ~= false then
    rawset(out, "running_mean", bn.running_mean)
    rawset(out, "running_var", bn.running_var)
    rawset(out, "num_batches_tracked", bn.num_batches_tracked)
  end
  rawset(out, "training", bn.training)
  if rawget(bn, "qconfig") ~= nil then out.qconfig = rawget(bn, "qconfig") end
  return out
end

convert = function(m, group, memo)
  local done = memo[m]
  if done then return done end
  local out = m
  if m._batch_norm then out = copy_state(m, group) end
  memo[m] = out
  convert_children(m, out, group, memo, {})
  return out
end

--- nn.SyncBatchNorm.convert_sync_batchnorm(module[, process_group]): every
--- batch norm in module (BatchNorm1d/2d/3d, their subclasses, SyncBatchNorm)
--- replaced by a SyncBatchNorm holding its parameters and buffers (the same
--- tensors), momentum, eps and training flag; module itself is changed and
--- returned, or the new SyncBatchNorm when it is a batch norm.
function SyncBatchNorm.convert_sync_batchnorm(...)
  local fn = "SyncBatchNorm.convert_sync_batchnorm"
  local module, process_group = ...
  if module == SyncBatchNorm then -- SyncBatchNorm:convert_sync_batchnorm(m): Python's classmethod call
    module, process_group = select(2, ...)
  end
  check.module(module, fn, "module")
  check_group(fn, process_group)
  return convert(module, process_group, {})
end

return SyncBatchNorm
