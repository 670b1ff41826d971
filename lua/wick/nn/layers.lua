-- The layers of wick.nn: thin Lua classes over tensors and the ops of
-- wick.nn.functional, initialised like PyTorch's.
local wick = require("wick")
local Module = require("wick.nn.module")
local F = require("wick.nn.functional")
local check = require("wick.argcheck")

local L = {}

--- A tensor that a module learns: requires grad.
function L.Parameter(t) return check.tensor(t, "Parameter", "data"):requires_grad_(true) end

-- U(-bound, bound) of the given shape.
local function uniform(shape, bound, opts)
  local t = wick.rand(shape, opts)
  return wick.no_grad(function() return (t * (2 * bound) - bound) end)
end
L._uniform = uniform

local function options(opts) return { device = opts and opts.device, dtype = opts and opts.dtype } end
-- the options every layer with parameters takes
local function layer_options(fn, opts, extra)
  local known = { device = "device", dtype = "dtype" }
  for k, v in pairs(extra or {}) do known[k] = v end
  return check.options(opts, fn, known)
end
local BIAS = { bias = "boolean" }

-- ---- Linear ----
L.Linear = Module:extend("Linear")
function L.Linear:init(in_features, out_features, opts)
  check.int(in_features, "Linear", "in_features", 0)
  check.int(out_features, "Linear", "out_features", 0)
  opts = layer_options("Linear", opts, BIAS)
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
local CONV = { bias = "boolean", stride = "integer|table", padding = "integer|table|string", dilation = "integer|table",
  groups = "integer", padding_mode = "string" }
-- nn.Conv2d(in, out, kernel_size[, stride[, padding[, dilation[, groups[, bias]]]]][, opts]), PyTorch's order
function L.Conv2d:init(in_channels, out_channels, kernel_size, ...)
  check.int(in_channels, "Conv2d", "in_channels", 1)
  check.int(out_channels, "Conv2d", "out_channels", 1)
  local positional = { ... }
  local opts = {}
  local names = { "stride", "padding", "dilation", "groups", "bias" }
  local n = select("#", ...)
  local last = positional[n]
  if n > 0 and type(last) == "table" and getmetatable(last) == nil and #last == 0 then -- the options table
    for k, v in pairs(layer_options("Conv2d", last, CONV)) do opts[k] = v end
    n = n - 1
  end
  if n > #names then check.fail("Conv2d", "expected at most %d positional arguments after kernel_size, got %d", #names, n) end
  for i = 1, n do
    if positional[i] ~= nil then
      if opts[names[i]] ~= nil then check.fail("Conv2d", "%s given both by position and as an option", names[i]) end
      opts[names[i]] = positional[i]
    end
  end
  layer_options("Conv2d", opts, CONV)
  if opts.padding_mode ~= nil then check.one_of(opts.padding_mode, "Conv2d", "padding_mode", { "zeros" }) end
  if kernel_size == nil then check.expected("Conv2d", "kernel_size", "an integer or a {h, w} table", nil) end
  local k = F._pair(kernel_size, "Conv2d kernel_size")
  for i = 1, 2 do check.int(k[i], "Conv2d", "kernel_size", 1) end
  self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, k
  self.stride, self.padding = opts.stride or 1, opts.padding or 0
  self.dilation, self.groups = opts.dilation or 1, opts.groups or 1
  check.int(self.groups, "Conv2d", "groups", 1)
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
local function pool_init(self, name, kernel_size, opts)
  if kernel_size == nil then check.expected(name, "kernel_size", "an integer or a {h, w} table", nil) end
  F._pair(kernel_size, name .. " kernel_size")
  self.kernel_size, self.opts = kernel_size, check.opt_table(opts, name, "opts") or {}
end
function L.MaxPool2d:init(kernel_size, opts) pool_init(self, "MaxPool2d", kernel_size, opts) end
function L.MaxPool2d:forward(x) return F.max_pool2d(x, self.kernel_size, self.opts) end
function L.MaxPool2d:extra_repr() return ("kernel_size=%s"):format(tostring(self.kernel_size)) end

L.AvgPool2d = Module:extend("AvgPool2d")
function L.AvgPool2d:init(kernel_size, opts) pool_init(self, "AvgPool2d", kernel_size, opts) end
function L.AvgPool2d:forward(x) return F.avg_pool2d(x, self.kernel_size, self.opts) end
function L.AvgPool2d:extra_repr() return ("kernel_size=%s"):format(tostring(self.kernel_size)) end

-- ---- shape and regularisation ----
L.Flatten = Module:extend("Flatten")
function L.Flatten:init(start_dim, end_dim)
  self.start_dim = check.opt_dim(start_dim, "Flatten", "start_dim", 2)
  self.end_dim = check.opt_dim(end_dim, "Flatten", "end_dim", -1)
end
function L.Flatten:forward(x) return x:flatten(self.start_dim, self.end_dim) end

L.Dropout = Module:extend("Dropout")
function L.Dropout:init(p) self.p = check.opt_number(p, "Dropout", "p", 0.5, 0, 1) end
function L.Dropout:forward(x) return F.dropout(x, self.p, self.training) end
function L.Dropout:extra_repr() return ("p=%s"):format(self.p) end

-- ---- normalisation ----
local function batch_norm_class(name, dims)
  local C = Module:extend(name)
  local known = { eps = "number", momentum = "number", affine = "boolean", track_running_stats = "boolean" }
  function C:init(num_features, opts)
    check.int(num_features, name, "num_features", 0)
    opts = layer_options(name, opts, known)
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
    check.tensor(x, name, "input")
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
local LAYER_NORM = { eps = "number", elementwise_affine = "boolean", bias = "boolean" }
function L.LayerNorm:init(normalized_shape, opts)
  opts = layer_options("LayerNorm", opts, LAYER_NORM)
  if type(normalized_shape) == "number" then normalized_shape = { normalized_shape } end
  check.table(normalized_shape, "LayerNorm", "normalized_shape")
  for i = 1, #normalized_shape do check.int(normalized_shape[i], "LayerNorm", "normalized_shape", 0) end
  self.normalized_shape, self.eps = normalized_shape, opts.eps or 1e-5
  if opts.elementwise_affine ~= false then
    self.weight = L.Parameter(wick.ones(normalized_shape, options(opts)))
    self.bias = L.Parameter(wick.zeros(normalized_shape, options(opts)))
  end
end
function L.LayerNorm:forward(x) return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps) end

L.Embedding = Module:extend("Embedding")
function L.Embedding:init(num_embeddings, embedding_dim, opts)
  check.int(num_embeddings, "Embedding", "num_embeddings", 0)
  check.int(embedding_dim, "Embedding", "embedding_dim", 0)
  opts = layer_options("Embedding", opts)
  self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
  self.weight = L.Parameter(wick.randn(num_embeddings, embedding_dim, options(opts)))
end
function L.Embedding:forward(indices) return F.embedding(indices, self.weight) end
function L.Embedding:extra_repr() return ("%d, %d"):format(self.num_embeddings, self.embedding_dim) end

-- ---- activations ----
local function activation(name, fn)
  local C = Module:extend(name)
  function C:forward(x) return fn(check.tensor(x, name, "input"), self) end
  return C
end
L.ReLU = activation("ReLU", function(x) return x:relu() end)
L.GELU = activation("GELU", function(x) return x:gelu() end)
L.Sigmoid = activation("Sigmoid", function(x) return x:sigmoid() end)
L.Tanh = activation("Tanh", function(x) return x:tanh() end)
L.Softmax = activation("Softmax", function(x, self) return x:softmax(self.dim or -1) end)
function L.Softmax:init(dim) self.dim = check.opt_dim(dim, "Softmax", "dim") end
L.LogSoftmax = activation("LogSoftmax", function(x, self) return x:log_softmax(self.dim or -1) end)
function L.LogSoftmax:init(dim) self.dim = check.opt_dim(dim, "LogSoftmax", "dim") end

-- ---- containers ----
L.Sequential = Module:extend("Sequential")
function L.Sequential:init(...)
  local n = select("#", ...)
  local list = {}
  for i = 1, n do
    list[i] = check.module((select(i, ...)), "Sequential", "module " .. i)
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
function L.Sequential:get(i) return self[tostring(check.int(i, "Sequential:get", "index"))] end
function L.Sequential:len() return rawget(self, "_n") end
function L.Sequential:add(m)
  check.module(m, "Sequential:add", "module")
  local n = rawget(self, "_n") + 1
  self[tostring(n)] = m
  rawget(self, "_list")[n] = m
  rawset(self, "_n", n)
  return self
end

L.ModuleList = Module:extend("ModuleList")
function L.ModuleList:init(modules)
  rawset(self, "_n", 0)
  for _, m in ipairs(check.opt_table(modules, "ModuleList", "modules") or {}) do
    check.module(m, "ModuleList", "modules")
    self:append(m)
  end
end
function L.ModuleList:append(m)
  check.module(m, "ModuleList:append", "module")
  local n = rawget(self, "_n") + 1
  self[tostring(n)] = m
  rawset(self, "_n", n)
  return self
end
function L.ModuleList:get(i) return self[tostring(check.int(i, "ModuleList:get", "index"))] end
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
  local known = { reduction = "string", weight = "tensor", ignore_index = "integer|boolean", label_smoothing = "number",
    pos_weight = "tensor|number" }
  function C:init(opts)
    self.opts = check.opt_table(opts, name, "opts") or {}
    check.options(self.opts, name, known)
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
