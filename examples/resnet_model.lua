-- torchvision's models/resnet.py, ported line by line: BasicBlock, Bottleneck,
-- ResNet and the constructors resnet18, resnet34, resnet50, resnet101,
-- resnet152, resnext50_32x4d, resnext101_32x8d.
--   local resnet = dofile("examples/resnet_model.lua")
--   local model = resnet.resnet18({ num_classes = 10 })
-- Where this differs from resnet.py (besides Lua syntax):
--  * keyword arguments come in one options table: ResNet(block, layers,
--    {num_classes =, zero_init_residual =, groups =, width_per_group =,
--    replace_stride_with_dilation =, norm_layer =}), resnet18(opts); a block is
--    built positionally, block(inplanes, planes, stride, downsample, groups,
--    base_width, dilation, norm_layer), nil taking the default;
--  * no pretrained weights (no download): pretrained = true is an error;
--  * `out += identity` is out = out + identity and nn.ReLU(inplace=True) is
--    nn.ReLU(true): wick's activations compute a new tensor (docs/api.md);
--  * isinstance(m, nn.Conv2d) is a check of the module's class (isinstance below);
--  * state_dict names are torchvision's with 1-based indices in the Sequential
--    layers (layer1.1.conv1.weight for layer1.0.conv1.weight;
--    nn.utils.from_pytorch_names converts a torchvision state dict).
local wick = require("wick")
local nn = wick.nn
local unpack = table.unpack or unpack -- luacheck: ignore (5.1)

local resnet = {}

-- whether module m is an instance of class (or of a class extending it)
local function isinstance(m, class)
  local c = getmetatable(m)
  while c do
    if c == class then return true end
    c = rawget(c, "super")
  end
  return false
end
resnet.isinstance = isinstance

-- 3x3 convolution with padding
local function conv3x3(in_planes, out_planes, stride, groups, dilation)
  stride, groups, dilation = stride or 1, groups or 1, dilation or 1
  return nn.Conv2d(in_planes, out_planes, 3, { stride = stride, padding = dilation, groups = groups, bias = false,
    dilation = dilation })
end
resnet.conv3x3 = conv3x3

-- 1x1 convolution
local function conv1x1(in_planes, out_planes, stride)
  return nn.Conv2d(in_planes, out_planes, 1, { stride = stride or 1, bias = false })
end
resnet.conv1x1 = conv1x1

local BasicBlock = nn.Module:extend("BasicBlock")
BasicBlock.expansion = 1
resnet.BasicBlock = BasicBlock

function BasicBlock:init(inplanes, planes, stride, downsample, groups, base_width, dilation, norm_layer)
  stride, groups, base_width, dilation = stride or 1, groups or 1, base_width or 64, dilation or 1
  norm_layer = norm_layer or nn.BatchNorm2d
  if groups ~= 1 or base_width ~= 64 then error("BasicBlock only supports groups=1 and base_width=64", 2) end
  if dilation > 1 then error("Dilation > 1 not supported in BasicBlock", 2) end
  -- Both self.conv1 and self.downsample layers downsample the input when stride ~= 1
  self.conv1 = conv3x3(inplanes, planes, stride)
  self.bn1 = norm_layer(planes)
  self.relu = nn.ReLU(true)
  self.conv2 = conv3x3(planes, planes)
  self.bn2 = norm_layer(planes)
  self.downsample = downsample
  self.stride = stride
end

function BasicBlock:forward(x)
  local identity = x

  local out = self.conv1(x)
  out = self.bn1(out)
  out = self.relu(out)

  out = self.conv2(out)
  out = self.bn2(out)

  if self.downsample ~= nil then identity = self.downsample(x) end

  out = out + identity
  out = self.relu(out)

  return out
end

local Bottleneck = nn.Module:extend("Bottleneck")
Bottleneck.expansion = 4
resnet.Bottleneck = Bottleneck

function Bottleneck:init(inplanes, planes, stride, downsample, groups, base_width, dilation, norm_layer)
  stride, groups, base_width, dilation = stride or 1, groups or 1, base_width or 64, dilation or 1
  norm_layer = norm_layer or nn.BatchNorm2d
  local width = math.floor(planes * (base_width / 64.)) * groups
  -- Both self.conv2 and self.downsample layers downsample the input when stride ~= 1
  self.conv1 = conv1x1(inplanes, width)
  self.bn1 = norm_layer(width)
  self.conv2 = conv3x3(width, width, stride, groups, dilation)
  self.bn2 = norm_layer(width)
  self.conv3 = conv1x1(width, planes * self.expansion)
  self.bn3 = norm_layer(planes * self.expansion)
  self.relu = nn.ReLU(true)
  self.downsample = downsample
  self.stride = stride
end

function Bottleneck:forward(x)
  local identity = x

  local out = self.conv1(x)
  out = self.bn1(out)
  out = self.relu(out)

  out = self.conv2(out)
  out = self.bn2(out)
  out = self.relu(out)

  out = self.conv3(out)
  out = self.bn3(out)

  if self.downsample ~= nil then identity = self.downsample(x) end

  out = out + identity
  out = self.relu(out)

  return out
end

local ResNet = nn.Module:extend("ResNet")
resnet.ResNet = ResNet

function ResNet:init(block, layers, opts)
  opts = opts or {}
  local norm_layer = opts.norm_layer or nn.BatchNorm2d
  self._norm_layer = norm_layer

  self.inplanes = 64
  self.dilation = 1
  -- each element in the table indicates if we should replace
  -- the 2x2 stride with a dilated convolution instead
  local replace_stride_with_dilation = opts.replace_stride_with_dilation or { false, false, false }
  if #replace_stride_with_dilation ~= 3 then
    error("replace_stride_with_dilation should be nil or a 3-element table", 2)
  end
  self.groups = opts.groups or 1
  self.base_width = opts.width_per_group or 64
  self.conv1 = nn.Conv2d(3, self.inplanes, 7, { stride = 2, padding = 3, bias = false })
  self.bn1 = norm_layer(self.inplanes)
  self.relu = nn.ReLU(true)
  self.maxpool = nn.MaxPool2d(3, { stride = 2, padding = 1 })
  self.layer1 = self:_make_layer(block, 64, layers[1])
  self.layer2 = self:_make_layer(block, 128, layers[2], 2, replace_stride_with_dilation[1])
  self.layer3 = self:_make_layer(block, 256, layers[3], 2, replace_stride_with_dilation[2])
  self.layer4 = self:_make_layer(block, 512, layers[4], 2, replace_stride_with_dilation[3])
  self.avgpool = nn.AdaptiveAvgPool2d({ 1, 1 })
  self.fc = nn.Linear(512 * block.expansion, opts.num_classes or 1000)

  for _, m in ipairs(self:modules()) do
    if isinstance(m, nn.Conv2d) then
      nn.init.kaiming_normal_(m.weight, { mode = "fan_out", nonlinearity = "relu" })
    elseif isinstance(m, nn.BatchNorm2d) or isinstance(m, nn.GroupNorm) then
      nn.init.constant_(m.weight, 1)
      nn.init.constant_(m.bias, 0)
    end
  end

  -- Zero-initialize the last BN in each residual branch,
  -- so that the residual branch starts with zeros, and each residual block behaves like an identity.
  -- This improves the model by 0.2~0.3% according to https://arxiv.org/abs/1706.02677
  if opts.zero_init_residual then
    for _, m in ipairs(self:modules()) do
      if isinstance(m, Bottleneck) then
        nn.init.constant_(m.bn3.weight, 0)
      elseif isinstance(m, BasicBlock) then
        nn.init.constant_(m.bn2.weight, 0)
      end
    end
  end
end

function ResNet:_make_layer(block, planes, blocks, stride, dilate)
  stride = stride or 1
  local norm_layer = self._norm_layer
  local downsample = nil
  local previous_dilation = self.dilation
  if dilate then
    self.dilation = self.dilation * stride
    stride = 1
  end
  if stride ~= 1 or self.inplanes ~= planes * block.expansion then
    downsample = nn.Sequential(
      conv1x1(self.inplanes, planes * block.expansion, stride),
      norm_layer(planes * block.expansion)
    )
  end

  local layers = {}
  layers[#layers + 1] = block(self.inplanes, planes, stride, downsample, self.groups, self.base_width,
    previous_dilation, norm_layer)
  self.inplanes = planes * block.expansion
  for _ = 2, blocks do
    layers[#layers + 1] = block(self.inplanes, planes, 1, nil, self.groups, self.base_width, self.dilation, norm_layer)
  end

  return nn.Sequential(unpack(layers))
end

function ResNet:forward(x)
  x = self.conv1(x)
  x = self.bn1(x)
  x = self.relu(x)
  x = self.maxpool(x)

  x = self.layer1(x)
  x = self.layer2(x)
  x = self.layer3(x)
  x = self.layer4(x)

  x = self.avgpool(x)
  x = x:reshape(x:size(1), -1)
  x = self.fc(x)

  return x
end

local function _resnet(block, layers, opts)
  opts = opts or {}
  if opts.pretrained then error("pretrained weights are not available (no download): build the model untrained", 3) end
  local kwargs = {}
  for k, v in pairs(opts) do if k ~= "pretrained" and k ~= "progress" then kwargs[k] = v end end
  return ResNet(block, layers, kwargs)
end

function resnet.resnet18(opts) return _resnet(BasicBlock, { 2, 2, 2, 2 }, opts) end
function resnet.resnet34(opts) return _resnet(BasicBlock, { 3, 4, 6, 3 }, opts) end
function resnet.resnet50(opts) return _resnet(Bottleneck, { 3, 4, 6, 3 }, opts) end
function resnet.resnet101(opts) return _resnet(Bottleneck, { 3, 4, 23, 3 }, opts) end
function resnet.resnet152(opts) return _resnet(Bottleneck, { 3, 8, 36, 3 }, opts) end

function resnet.resnext50_32x4d(opts)
  opts = opts or {}
  opts.groups, opts.width_per_group = 32, 4
  return _resnet(Bottleneck, { 3, 4, 6, 3 }, opts)
end

function resnet.resnext101_32x8d(opts)
  opts = opts or {}
  opts.groups, opts.width_per_group = 32, 8
  return _resnet(Bottleneck, { 3, 4, 23, 3 }, opts)
end

return resnet
