-- wick.vision.ops' layers, torchvision's: the building blocks of its models
-- (torchvision.ops.misc: Conv2dNormActivation, SqueezeExcitation, MLP,
-- FrozenBatchNorm2d, Permute; stochastic_depth and StochasticDepth) and the
-- FeaturePyramidNetwork with its extra blocks. Python's None for a layer
-- argument (norm_layer=None) is `false` here: nil is an absent argument,
-- which takes the default.
local wick = require("wick")
local check = require("wick.argcheck")
local nn = wick.nn
local F = nn.functional
local Module = require("wick.nn.module")
local ordered = require("wick.ordered")

local V = {}
local unpack = table.unpack or unpack -- luacheck: ignore

-- an argument that is a layer class: the default when nil, none when false
local function layer_arg(v, default, fn, arg)
  if v == nil then return default end
  if v == false then return nil end
  if not check.is_callable(v) then check.expected(fn, arg, "a layer class (false for none)", v) end
  return v
end
-- activation_layer(inplace = inplace), torchvision's: no argument when inplace is nil, or false
-- (an activation's default; nn.GELU takes no inplace, torchvision's inplace=None)
local function activation(cls, inplace)
  if not inplace then return cls() end
  return cls({ inplace = inplace })
end

--- ops.stochastic_depth(input, p, mode[, training = true]): drops whole samples ("row") or the whole
--- batch ("batch") with probability p, scaling what stays by 1 / (1 - p), as torchvision's
local DEPTH = { p = "number", mode = "string", training = "boolean" }
function V.stochastic_depth(input, ...)
  local fn = "stochastic_depth"
  check.tensor(input, fn, "input")
  local o = check.positional(fn, { "p", "mode", "training" }, DEPTH, ...)
  local p, mode = o.p, o.mode
  if p == nil or p < 0 or p > 1 then check.fail(fn, "drop probability has to be between 0 and 1, but got %s", tostring(p)) end
  if mode ~= "batch" and mode ~= "row" then check.fail(fn, "mode has to be either 'batch' or 'row', but got %s", tostring(mode)) end
  if o.training == false or p == 0 then return input end
  local keep = 1 - p
  local size = {}
  for i = 1, input:dim() do size[i] = 1 end
  if mode == "row" then size[1] = input:size(1) end
  local noise = wick.empty(size, { dtype = input.dtype, device = input.device }):bernoulli_(keep)
  if keep > 0 then noise:div_(keep) end
  return input * noise
end

V.StochasticDepth = Module:extend("StochasticDepth", { "p", "mode" })
--- ops.StochasticDepth(p, mode): stochastic_depth in training mode, the identity in eval
function V.StochasticDepth:init(p, mode) self.p, self.mode = p, mode end
function V.StochasticDepth:forward(input) return V.stochastic_depth(input, self.p, self.mode, self.training) end
function V.StochasticDepth:extra_repr() -- (p a Python float: p=0.0)
  local p = self.p
  return ("p=%s, mode=%s"):format(p == math.floor(p) and ("%.1f"):format(p) or Module._py(p), self.mode)
end

local CONV_NORM = { kernel_size = "integer|table", stride = "integer|table", padding = "integer|table|string",
  groups = "integer", norm_layer = "any", activation_layer = "any", dilation = "integer|table", inplace = "boolean",
  bias = "boolean", conv_layer = "any" }
local CONV_NORM_ORDER = { "kernel_size", "stride", "padding", "groups", "norm_layer", "activation_layer", "dilation",
  "inplace", "bias", "conv_layer" }
-- the padding that keeps the size at stride 1: (k - 1) / 2 * dilation per dim
local function same_padding(k, dilation, dims)
  if type(k) == "number" and type(dilation) == "number" then return math.floor((k - 1) / 2) * dilation end
  local out = {}
  for i = 1, dims do
    local ki = type(k) == "table" and k[i] or k
    local di = type(dilation) == "table" and dilation[i] or dilation
    out[i] = math.floor((ki - 1) / 2) * di
  end
  return out
end
-- conv, norm and activation as the entries of the Sequential `self` (the defaults of Conv2d's
-- or Conv3d's flavour: conv, norm, dims)
local function conv_norm_activation(self, fn, defaults, in_channels, out_channels, ...)
  local o = check.positional(fn, CONV_NORM_ORDER, CONV_NORM, ...)
  local k, dilation = o.kernel_size or 3, o.dilation or 1
  local padding = o.padding
  if padding == nil then padding = same_padding(k, dilation, defaults.dims) end
  local conv = layer_arg(o.conv_layer, defaults.conv, fn, "conv_layer")
  local norm = layer_arg(o.norm_layer, defaults.norm, fn, "norm_layer")
  local act = layer_arg(o.activation_layer, nn.ReLU, fn, "activation_layer")
  local bias = o.bias
  if bias == nil then bias = norm == nil end
  local layers = { conv(in_channels, out_channels, k, o.stride or 1, padding,
    { dilation = dilation, groups = o.groups or 1, bias = bias }) }
  if norm then layers[#layers + 1] = norm(out_channels) end
  if act then
    local inplace = o.inplace
    if inplace == nil then inplace = true end
    layers[#layers + 1] = activation(act, inplace)
  end
  nn.Sequential.init(self, unpack(layers))
  self.out_channels = out_channels
end

-- a class of that flavour: its init builds the entries with these defaults
local function conv_norm_class(name, base, defaults)
  local C = base:extend(name, { "in_channels", "out_channels" })
  function C:init(in_channels, out_channels, ...)
    conv_norm_activation(self, name, defaults, in_channels, out_channels, ...)
  end
  return C
end
local FLAVOUR_2D = { conv = nn.Conv2d, norm = nn.BatchNorm2d, dims = 2 }
--- ops.ConvNormActivation(in_channels, out_channels[, ...][, conv_layer = nn.Conv2d]): the base of the
--- two below, the convolution a class given
V.ConvNormActivation = conv_norm_class("ConvNormActivation", nn.Sequential, FLAVOUR_2D)
--- ops.Conv2dNormActivation(in_channels, out_channels[, kernel_size = 3[, stride = 1[, padding[, groups = 1[,
--- norm_layer = nn.BatchNorm2d[, activation_layer = nn.ReLU[, dilation = 1[, inplace = true[, bias]]]]]]]]]):
--- a Sequential of the convolution, the norm and the activation (false for none); padding keeps the
--- size at stride 1, bias is on only without a norm, unless given; inplace = false (Python's None
--- too) builds the activation without the argument (nn.GELU)
V.Conv2dNormActivation = conv_norm_class("Conv2dNormActivation", V.ConvNormActivation, FLAVOUR_2D)
--- ops.Conv3dNormActivation(...): the same with nn.Conv3d and nn.BatchNorm3d
V.Conv3dNormActivation = conv_norm_class("Conv3dNormActivation", V.ConvNormActivation,
  { conv = nn.Conv3d, norm = nn.BatchNorm3d, dims = 3 })

V.SqueezeExcitation = Module:extend("SqueezeExcitation", { "input_channels", "squeeze_channels" })
--- ops.SqueezeExcitation(input_channels, squeeze_channels[, activation = nn.ReLU[, scale_activation =
--- nn.Sigmoid]]): x scaled per channel by scale_activation(fc2(activation(fc1(avgpool(x)))))
function V.SqueezeExcitation:init(input_channels, squeeze_channels, ...)
  local fn = "SqueezeExcitation"
  local o = check.positional(fn, { "activation", "scale_activation" }, { activation = "any", scale_activation = "any" }, ...)
  self.avgpool = nn.AdaptiveAvgPool2d(1)
  self.fc1 = nn.Conv2d(input_channels, squeeze_channels, 1)
  self.fc2 = nn.Conv2d(squeeze_channels, input_channels, 1)
  self.activation = layer_arg(o.activation, nn.ReLU, fn, "activation")()
  self.scale_activation = layer_arg(o.scale_activation, nn.Sigmoid, fn, "scale_activation")()
end
function V.SqueezeExcitation:_scale(input)
  return self.scale_activation(self.fc2(self.activation(self.fc1(self.avgpool(input)))))
end
function V.SqueezeExcitation:forward(input) return self:_scale(input) * input end

local MLP_OPTS = { norm_layer = "any", activation_layer = "any", inplace = "boolean", bias = "boolean", dropout = "number" }
V.MLP = nn.Sequential:extend("MLP", { "in_channels", "hidden_channels" })
--- ops.MLP(in_channels, hidden_channels[, norm_layer[, activation_layer = nn.ReLU[, inplace[, bias =
--- true[, dropout = 0]]]]]): Linear, norm, activation and Dropout for each of hidden_channels but the
--- last, then a Linear to the last and a Dropout
function V.MLP:init(in_channels, hidden_channels, ...)
  local fn = "MLP"
  check.table(hidden_channels, fn, "hidden_channels")
  local o = check.positional(fn, { "norm_layer", "activation_layer", "inplace", "bias", "dropout" }, MLP_OPTS, ...)
  local norm = layer_arg(o.norm_layer, nil, fn, "norm_layer")
  local act = layer_arg(o.activation_layer, nn.ReLU, fn, "activation_layer")
  local bias, dropout = o.bias ~= false, o.dropout or 0
  local layers, dim = {}, in_channels
  for i = 1, #hidden_channels - 1 do
    local h = hidden_channels[i]
    layers[#layers + 1] = nn.Linear(dim, h, bias)
    if norm then layers[#layers + 1] = norm(h) end
    if act then layers[#layers + 1] = activation(act, o.inplace) end
    layers[#layers + 1] = nn.Dropout(dropout, o.inplace or false)
    dim = h
  end
  layers[#layers + 1] = nn.Linear(dim, hidden_channels[#hidden_channels], bias)
  layers[#layers + 1] = nn.Dropout(dropout, o.inplace or false)
  nn.Sequential.init(self, unpack(layers))
end

V.FrozenBatchNorm2d = Module:extend("FrozenBatchNorm2d", { "num_features" })
--- ops.FrozenBatchNorm2d(num_features[, eps = 1e-5]): a batch norm whose statistics and affine
--- parameters are buffers, never trained (a checkpoint's num_batches_tracked is dropped)
function V.FrozenBatchNorm2d:init(num_features, ...)
  local o = check.positional("FrozenBatchNorm2d", { "eps" }, { eps = "number" }, ...)
  self.eps = o.eps or 1e-5
  self:register_buffer("weight", wick.ones(num_features))
  self:register_buffer("bias", wick.zeros(num_features))
  self:register_buffer("running_mean", wick.zeros(num_features))
  self:register_buffer("running_var", wick.ones(num_features))
end
function V.FrozenBatchNorm2d:_load_from_state_dict(state_dict, prefix, ...)
  state_dict[prefix .. "num_batches_tracked"] = nil
  return Module._load_from_state_dict(self, state_dict, prefix, ...)
end
function V.FrozenBatchNorm2d:forward(x)
  local w, b = self.weight:reshape(1, -1, 1, 1), self.bias:reshape(1, -1, 1, 1)
  local rv, rm = self.running_var:reshape(1, -1, 1, 1), self.running_mean:reshape(1, -1, 1, 1)
  local scale = w * (rv + self.eps):rsqrt()
  return x * scale + (b - rm * scale)
end
function V.FrozenBatchNorm2d:extra_repr() return ("%d, eps=%s"):format(self.weight:size(1), self.eps) end

V.Permute = Module:extend("Permute", { "dims" })
--- ops.Permute(dims): x:permute(dims) as a layer (dims 1-based, wick's)
function V.Permute:init(dims) self.dims = dims end
function V.Permute:forward(x) return x:permute(self.dims) end

-- ---- the feature pyramid ----
--- ops.ExtraFPNBlock: the base of the blocks FeaturePyramidNetwork runs last, called as
--- block(results, x, names) and returning the results and names, longer
V.ExtraFPNBlock = Module:extend("ExtraFPNBlock")

V.LastLevelMaxPool = V.ExtraFPNBlock:extend("LastLevelMaxPool")
--- ops.LastLevelMaxPool(): a "pool" level, the last one max-pooled with kernel 1 and stride 2
function V.LastLevelMaxPool:forward(x, y, names)
  names[#names + 1] = "pool"
  x[#x + 1] = F.max_pool2d(x[#x], 1, 2, 0)
  return x, names
end

-- FPN's initialisation of its convolutions: kaiming_uniform_(a = 1), bias 0
local function fpn_init(m)
  for _, c in ipairs(m:modules()) do
    if wick.isinstance(c, nn.Conv2d) then
      nn.init.kaiming_uniform_(c.weight, { a = 1 })
      if c.bias ~= nil then nn.init.constant_(c.bias, 0) end
    end
  end
end

V.LastLevelP6P7 = V.ExtraFPNBlock:extend("LastLevelP6P7", { "in_channels", "out_channels" })
--- ops.LastLevelP6P7(in_channels, out_channels): RetinaNet's levels "p6" and "p7", stride-2
--- convolutions of the last level (of the last input when in_channels differs from out_channels)
function V.LastLevelP6P7:init(in_channels, out_channels)
  self.p6 = nn.Conv2d(in_channels, out_channels, 3, 2, 1)
  self.p7 = nn.Conv2d(out_channels, out_channels, 3, 2, 1)
  fpn_init(self)
  self.use_P5 = in_channels == out_channels
end
function V.LastLevelP6P7:forward(p, c, names)
  local x = self.use_P5 and p[#p] or c[#c]
  local p6 = self.p6(x)
  local p7 = self.p7(F.relu(p6))
  p[#p + 1], p[#p + 2] = p6, p7
  names[#names + 1], names[#names + 2] = "p6", "p7"
  return p, names
end

V.FeaturePyramidNetwork = Module:extend("FeaturePyramidNetwork", { "in_channels_list", "out_channels" })
--- ops.FeaturePyramidNetwork(in_channels_list, out_channels[, extra_blocks[, norm_layer]]): m(x), x
--- an OrderedDict of feature maps from fine to coarse (or a table, its names sorted), gives an
--- OrderedDict of out_channels maps under the same names (and the extra block's), as torchvision's
function V.FeaturePyramidNetwork:init(in_channels_list, out_channels, ...)
  local fn = "FeaturePyramidNetwork"
  check.table(in_channels_list, fn, "in_channels_list")
  if #in_channels_list == 0 then check.fail(fn, "in_channels_list is empty: a pyramid needs at least one level") end
  local o = check.positional(fn, { "extra_blocks", "norm_layer" }, { extra_blocks = "any", norm_layer = "any" }, ...)
  self.inner_blocks = nn.ModuleList()
  self.layer_blocks = nn.ModuleList()
  local norm = o.norm_layer or false
  for _, c in ipairs(in_channels_list) do
    if c == 0 then check.fail(fn, "in_channels=0 is currently not supported") end
    self.inner_blocks:append(V.Conv2dNormActivation(c, out_channels,
      { kernel_size = 1, padding = 0, norm_layer = norm, activation_layer = false }))
    self.layer_blocks:append(V.Conv2dNormActivation(out_channels, out_channels,
      { kernel_size = 3, norm_layer = norm, activation_layer = false }))
  end
  fpn_init(self)
  if o.extra_blocks then
    if not check.is_module(o.extra_blocks) then check.expected(fn, "extra_blocks", "a module (an ExtraFPNBlock)", o.extra_blocks) end
    self.extra_blocks = o.extra_blocks
  end
end
--- fpn:get_result_from_inner_blocks(x, idx) / get_result_from_layer_blocks: block idx (1-based,
--- negative from the end) applied to x
function V.FeaturePyramidNetwork:get_result_from_inner_blocks(x, idx)
  return self.inner_blocks[idx < 0 and #self.inner_blocks + idx + 1 or idx](x)
end
function V.FeaturePyramidNetwork:get_result_from_layer_blocks(x, idx)
  return self.layer_blocks[idx < 0 and #self.layer_blocks + idx + 1 or idx](x)
end
function V.FeaturePyramidNetwork:forward(x)
  check.table(x, "FeaturePyramidNetwork", "x")
  local names = ordered.names(x)
  local feats = {}
  for i, name in ipairs(names) do feats[i] = x[name] end
  local n = #feats
  if n == 0 or n ~= #self.inner_blocks then
    check.fail("FeaturePyramidNetwork", "expected %d feature maps, one per entry of in_channels_list, got %d",
      #self.inner_blocks, n)
  end
  local last_inner = self:get_result_from_inner_blocks(feats[n], -1)
  local results = { self:get_result_from_layer_blocks(last_inner, -1) }
  for idx = n - 1, 1, -1 do
    local lateral = self:get_result_from_inner_blocks(feats[idx], idx)
    local top_down = F.interpolate(last_inner, { size = { lateral:size(-2), lateral:size(-1) }, mode = "nearest" })
    last_inner = lateral + top_down
    table.insert(results, 1, self:get_result_from_layer_blocks(last_inner, idx))
  end
  if self.extra_blocks then results, names = self.extra_blocks(results, feats, names) end
  local out, order = ordered.new()
  for i, name in ipairs(names) do
    rawset(out, name, results[i])
    order[#order + 1] = name
  end
  return out
end

return V
