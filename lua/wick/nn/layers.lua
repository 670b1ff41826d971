-- The layers of wick.nn: thin Lua classes over tensors and the ops of
-- wick.nn.functional, initialised like PyTorch's.
local wick = require("wick")
local Module = require("wick.nn.module")
local F = require("wick.nn.functional")

local L = {}

--- A tensor that a module learns: requires grad.
function L.Parameter(t) return t:requires_grad_(true) end

-- U(-bound, bound) of the given shape.
local function uniform(shape, bound, opts)
  local t = wick.rand(shape, opts)
  return wick.no_grad(function() return (t * (2 * bound) - bound) end)
end
L._uniform = uniform

local function options(opts) return { device = opts and opts.device, dtype = opts and opts.dtype } end

-- ---- Linear ----
L.Linear = Module:extend("Linear")
function L.Linear:init(in_features, out_features, opts)
  opts = opts or {}
  self.in_features, self.out_features = in_features, out_features
  -- PyTorch's default: kaiming_uniform(a = sqrt(5)) gives U(-1/sqrt(in), 1/sqrt(in))
  local bound = 1 / math.sqrt(in_features)
  self.weight = L.Parameter(uniform({ out_features, in_features }, bound, options(opts)))
  if opts.bias ~= false then self.bias = L.Parameter(uniform({ out_features }, bound, options(opts))) end
end
function L.Linear:forward(x) return F.linear(x, self.weight, self.bias) end
function L.Linear:extra_repr()
  return ("in_features=%d, out_features=%d, bias=%s"):format(self.in_features, self.out_features, tostring(self.bias ~= nil))
end

-- ---- Conv2d ----
L.Conv2d = Module:extend("Conv2d")
function L.Conv2d:init(in_channels, out_channels, kernel_size, opts)
  opts = opts or {}
  local k = F._pair(kernel_size, "Conv2d kernel_size")
  self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, k
  self.stride, self.padding = opts.stride or 1, opts.padding or 0
  self.dilation, self.groups = opts.dilation or 1, opts.groups or 1
  if in_channels % self.groups ~= 0 or out_channels % self.groups ~= 0 then
    wick.error("Conv2d: in_channels and out_channels must be divisible by groups")
  end
  local fan_in = in_channels / self.groups * k[1] * k[2]
  local bound = 1 / math.sqrt(fan_in)
  self.weight = L.Parameter(uniform({ out_channels, in_channels / self.groups, k[1], k[2] }, bound, options(opts)))
  if opts.bias ~= false then self.bias = L.Parameter(uniform({ out_channels }, bound, options(opts))) end
end
function L.Conv2d:forward(x)
  return F.conv2d(x, self.weight, self.bias,
    { stride = self.stride, padding = self.padding, dilation = self.dilation, groups = self.groups })
end
function L.Conv2d:extra_repr()
  return ("%d, %d, kernel_size=(%d, %d), stride=%s, padding=%s"):format(self.in_channels, self.out_channels,
    self.kernel_size[1], self.kernel_size[2], tostring(self.stride), tostring(self.padding))
end

-- ---- pooling ----
L.MaxPool2d = Module:extend("MaxPool2d")
function L.MaxPool2d:init(kernel_size, opts)
  self.kernel_size, self.opts = kernel_size, opts or {}
end
function L.MaxPool2d:forward(x) return F.max_pool2d(x, self.kernel_size, self.opts) end
function L.MaxPool2d:extra_repr() return ("kernel_size=%s"):format(tostring(self.kernel_size)) end

L.AvgPool2d = Module:extend("AvgPool2d")
function L.AvgPool2d:init(kernel_size, opts)
  self.kernel_size, self.opts = kernel_size, opts or {}
end
function L.AvgPool2d:forward(x) return F.avg_pool2d(x, self.kernel_size, self.opts) end
function L.AvgPool2d:extra_repr() return ("kernel_size=%s"):format(tostring(self.kernel_size)) end

-- ---- shape and regularisation ----
L.Flatten = Module:extend("Flatten")
function L.Flatten:init(start_dim, end_dim) self.start_dim, self.end_dim = start_dim or 2, end_dim or -1 end
function L.Flatten:forward(x) return x:flatten(self.start_dim, self.end_dim) end

L.Dropout = Module:extend("Dropout")
function L.Dropout:init(p) self.p = p or 0.5 end
function L.Dropout:forward(x) return F.dropout(x, self.p, self.training) end
function L.Dropout:extra_repr() return ("p=%s"):format(self.p) end

-- ---- normalisation ----
local function batch_norm_class(name, dims)
  local C = Module:extend(name)
  function C:init(num_features, opts)
    opts = opts or {}
    self.num_features, self.eps, self.momentum = num_features, opts.eps or 1e-5, opts.momentum or 0.1
    local o = options(opts)
    if opts.affine ~= false then
      self.weight = L.Parameter(wick.ones(num_features, o))
      self.bias = L.Parameter(wick.zeros(num_features, o))
    end
    if opts.track_running_stats ~= false then
      self:register_buffer("running_mean", wick.zeros(num_features, o))
      self:register_buffer("running_var", wick.ones(num_features, o))
      self:register_buffer("num_batches_tracked", wick.zeros({}, { device = o.device, dtype = "int64" }))
    end
  end
  function C:forward(x)
    if x:dim() ~= dims[1] and x:dim() ~= dims[2] then
      wick.error(("%s: expected %s input, got %d-D"):format(name, dims.text, x:dim()))
    end
    local training = self.training or not self.running_mean
    if self.training and self.num_batches_tracked then
      wick.no_grad(function() self.num_batches_tracked:add_(1) end)
    end
    return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias, training,
      self.momentum, self.eps)
  end
  function C:extra_repr()
    return ("%d, eps=%s, momentum=%s"):format(self.num_features, self.eps, self.momentum)
  end
  return C
end
L.BatchNorm1d = batch_norm_class("BatchNorm1d", { 2, 3, text = "2-D or 3-D" })
L.BatchNorm2d = batch_norm_class("BatchNorm2d", { 4, 4, text = "4-D" })

L.LayerNorm = Module:extend("LayerNorm")
function L.LayerNorm:init(normalized_shape, opts)
  opts = opts or {}
  if type(normalized_shape) == "number" then normalized_shape = { normalized_shape } end
  self.normalized_shape, self.eps = normalized_shape, opts.eps or 1e-5
  if opts.elementwise_affine ~= false then
    self.weight = L.Parameter(wick.ones(normalized_shape, options(opts)))
    self.bias = L.Parameter(wick.zeros(normalized_shape, options(opts)))
  end
end
function L.LayerNorm:forward(x) return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps) end

L.Embedding = Module:extend("Embedding")
function L.Embedding:init(num_embeddings, embedding_dim, opts)
  self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
  self.weight = L.Parameter(wick.randn(num_embeddings, embedding_dim, options(opts)))
end
function L.Embedding:forward(indices) return F.embedding(indices, self.weight) end
function L.Embedding:extra_repr() return ("%d, %d"):format(self.num_embeddings, self.embedding_dim) end

-- ---- activations ----
local function activation(name, fn)
  local C = Module:extend(name)
  function C:forward(x) return fn(x, self) end
  return C
end
L.ReLU = activation("ReLU", function(x) return x:relu() end)
L.GELU = activation("GELU", function(x) return x:gelu() end)
L.Sigmoid = activation("Sigmoid", function(x) return x:sigmoid() end)
L.Tanh = activation("Tanh", function(x) return x:tanh() end)
L.Softmax = activation("Softmax", function(x, self) return x:softmax(self.dim or -1) end)
function L.Softmax:init(dim) self.dim = dim end
L.LogSoftmax = activation("LogSoftmax", function(x, self) return x:log_softmax(self.dim or -1) end)
function L.LogSoftmax:init(dim) self.dim = dim end

-- ---- containers ----
L.Sequential = Module:extend("Sequential")
function L.Sequential:init(...)
  local n = select("#", ...)
  local list = {}
  for i = 1, n do
    list[i] = (select(i, ...))
    self[tostring(i)] = list[i]
  end
  rawset(self, "_n", n)
  rawset(self, "_list", list) -- the same modules, for forward without name lookups
end
function L.Sequential:forward(x)
  local list = rawget(self, "_list")
  for i = 1, rawget(self, "_n") do x = list[i]:forward(x) end
  return x
end
function L.Sequential:get(i) return self[tostring(i)] end
function L.Sequential:len() return rawget(self, "_n") end
function L.Sequential:add(m)
  local n = rawget(self, "_n") + 1
  self[tostring(n)] = m
  rawget(self, "_list")[n] = m
  rawset(self, "_n", n)
  return self
end

L.ModuleList = Module:extend("ModuleList")
function L.ModuleList:init(modules)
  rawset(self, "_n", 0)
  for _, m in ipairs(modules or {}) do self:append(m) end
end
function L.ModuleList:append(m)
  local n = rawget(self, "_n") + 1
  self[tostring(n)] = m
  rawset(self, "_n", n)
  return self
end
function L.ModuleList:get(i) return self[tostring(i)] end
function L.ModuleList:len() return rawget(self, "_n") end
function L.ModuleList:iter()
  local i = 0
  return function()
    i = i + 1
    if i <= rawget(self, "_n") then return i, self[tostring(i)] end
  end
end

-- ---- losses ----
local function loss_class(name, fn)
  local C = Module:extend(name)
  function C:init(opts)
    self.opts = opts or {}
    if self.opts.weight then self:register_buffer("weight", self.opts.weight) end
  end
  function C:forward(input, target)
    local opts = {}
    for k, v in pairs(self.opts) do opts[k] = v end
    opts.weight = self.weight
    return fn(input, target, opts)
  end
  return C
end
L.CrossEntropyLoss = loss_class("CrossEntropyLoss", F.cross_entropy)
L.NLLLoss = loss_class("NLLLoss", F.nll_loss)
L.MSELoss = loss_class("MSELoss", F.mse_loss)
L.L1Loss = loss_class("L1Loss", F.l1_loss)
L.BCELoss = loss_class("BCELoss", F.binary_cross_entropy)
L.BCEWithLogitsLoss = loss_class("BCEWithLogitsLoss", F.binary_cross_entropy_with_logits)

return L
