-- The layers of wick.nn: thin Lua classes over tensors and the ops of
-- wick.nn.functional, initialised like PyTorch's.
local wick = require("wick")
local Module = require("wick.nn.module")
local F = require("wick.nn.functional")
local check = require("wick.argcheck")

local L = {}
local py = Module._py -- Python's repr of a value, for extra_repr
local common = require("wick.nn.common")
local int_pair = common.pair -- {h, w} of an integer or a pair, checked

--- A tensor that a module learns: requires grad.
-- nn.Parameter(t): a leaf that requires grad; the result of an op (torch's
-- nn.Parameter(torch.randn(n, requires_grad=True) * 0.01)) becomes a leaf over its data
function L.Parameter(t, requires_grad)
  if t == nil then t = wick.empty({ 0 }) end -- (PyTorch's Parameter(None): an empty one of the default dtype)
  check.tensor(t, "Parameter", "data")
  requires_grad = check.flag(requires_grad, "Parameter", "requires_grad", true)
  if t.grad_fn ~= nil then t = t:detach() end
  wick._parameters[t] = true -- prints "Parameter containing:" first, as PyTorch's
  if requires_grad then return t:requires_grad_(true) end
  -- a frozen parameter (nn.Parameter(t, false)) stays in parameters(): it is
  -- marked by turning requires_grad on and off (integer tensors cannot be)
  if t:is_floating_point() or t:is_complex() then t:requires_grad_(true) end
  return t:requires_grad_(false)
end

--- nn.Buffer(data[, {persistent = true}]): PyTorch's (2.5) buffer marker, data
--- detached (keeping requires_grad); a module field it is assigned to is a buffer
--- (HF's self.position_ids = nn.Buffer(torch.arange(n).expand((1, -1)), persistent=False)),
--- as register_buffer(name, t, persistent) would make it.
function L.Buffer(data, opts)
  if type(data) == "table" and getmetatable(data) == nil and opts == nil then
    data, opts = nil, data -- (nn.Buffer{persistent = false}: the data left out)
  end
  check.opt_tensor(data, "Buffer", "data")
  local persistent = check.options(opts, "Buffer", { persistent = "boolean" }).persistent ~= false
  data = data or wick.empty(0)
  local t = data:detach():requires_grad_(data.requires_grad)
  wick._buffers_made[t] = persistent
  return t
end

-- U(-bound, bound) of the given shape.
local function uniform(shape, bound, opts)
  check.number(bound, "_uniform", "bound")
  local t = wick._rand(shape, opts)
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
local LINEAR = { bias = "truth", device = "device", dtype = "dtype" }

-- ---- Linear ----
L.Linear = Module:extend("Linear", { "in_features", "out_features" })
-- nn.Linear(in_features, out_features[, bias = true][, {bias =, device =, dtype =}])
-- PyTorch's default init bound 1/sqrt(fan_in), 0 for an empty fan (nn.Linear(0, n))
local function fan_bound(fan) return fan > 0 and 1 / math.sqrt(fan) or 0 end
-- The parameters `names` of m drawn again from U(-bound, bound), in place
local function refill_uniform(m, bound, names)
  wick.no_grad(function()
    for _, name in ipairs(names) do
      local p = m[name]
      if p ~= nil then p:uniform_(-bound, bound) end
    end
  end)
end
-- m:reset_parameters() of Linear and the convolutions: PyTorch's kaiming_uniform_(a = sqrt(5)),
-- U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for the weight and the bias, fan_in the weight's
-- elements per entry of its dim 1. Their init ends by calling it, as PyTorch's, so a
-- subclass's own reset_parameters (loralib's) runs there.
local function reset_fan_in(self)
  local w = self.weight
  local fan = w:size(1) > 0 and w:numel() / w:size(1) or 0
  refill_uniform(self, fan_bound(fan), { "weight", "bias" })
end
function L.Linear:init(in_features, out_features, ...)
  check.int(in_features, "Linear", "in_features", 0)
  check.int(out_features, "Linear", "out_features", 0)
  local opts = check.positional("Linear", { "bias", "device", "dtype" }, LINEAR, ...)
  self.in_features, self.out_features = in_features, out_features
  self.weight = L.Parameter(wick.empty({ out_features, in_features }, options(opts)))
  if opts.bias ~= false then self.bias = L.Parameter(wick.empty({ out_features }, options(opts))) end
  self:reset_parameters()
end
L.Linear.reset_parameters = reset_fan_in
function L.Linear:forward(x) return F.linear(x, self.weight, self.bias) end
function L.Linear:extra_repr()
  return ("in_features=%d, out_features=%d, bias=%s"):format(self.in_features, self.out_features, py(self.bias ~= nil))
end
-- nn.modules.linear.NonDynamicallyQuantizableLinear: a Linear by another name (MultiheadAttention's
-- out_proj, as PyTorch's prints it)
L.NonDynamicallyQuantizableLinear = L.Linear:extend("NonDynamicallyQuantizableLinear", { "in_features", "out_features" })

-- PyTorch's private bases, for isinstance(m, nn.modules.conv._ConvNd) and
-- nn.modules.batchnorm._BatchNorm (as in SAM's bypass_bn), and for a user's
-- subclass (NVAE's SyncBatchNormSwish(_BatchNorm)): the convolutions extend
-- _ConvNd, the batch norms _BatchNorm, every norm with running statistics
-- _NormBase, the instance norms _InstanceNorm. Their init and forward are
-- PyTorch's (with the norms, below)
L._ConvNd = Module:extend("_ConvNd", { "in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation",
  "transposed", "output_padding", "groups", "bias", "padding_mode" })
L._NormBase = Module:extend("_NormBase", { "num_features" })
L._BatchNorm = L._NormBase:extend("_BatchNorm", { "num_features" })
L._InstanceNorm = L._NormBase:extend("_InstanceNorm", { "num_features" })

-- _ConvNd(in_channels, out_channels, kernel_size, stride, padding, dilation, transposed, output_padding, groups,
-- bias, padding_mode[, opts]): PyTorch's, for a user's subclass (the sizes are tables, as PyTorch's tuples):
-- the attributes, weight [out, in / groups, k...] ([in, out / groups, k...] transposed) and bias, initialised
-- as PyTorch's; the subclass gives forward
local CONV_ND = { stride = "table", padding = "table|string", dilation = "table", transposed = "boolean",
  output_padding = "table", groups = "integer", bias = "truth", padding_mode = "string", device = "device", dtype = "dtype" }
function L._ConvNd:init(in_channels, out_channels, kernel_size, ...)
  local name = self.__name__
  check.int(in_channels, name, "in_channels", 1)
  check.int(out_channels, name, "out_channels", 1)
  if type(kernel_size) ~= "table" then
    check.fail(name, "kernel_size must be a table of sizes, one per spatial dim (PyTorch's _ConvNd takes a tuple: "
      .. "_pair(k) is {k, k}), got %s", check.describe(kernel_size))
  end
  local o = check.positional(name, { "stride", "padding", "dilation", "transposed", "output_padding", "groups", "bias",
    "padding_mode", "device", "dtype" }, CONV_ND, ...)
  local groups = o.groups or 1
  if in_channels % groups ~= 0 then check.fail(name, "in_channels must be divisible by groups") end
  if out_channels % groups ~= 0 then check.fail(name, "out_channels must be divisible by groups") end
  self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, kernel_size
  self.stride, self.padding, self.dilation = o.stride, o.padding, o.dilation
  self.transposed, self.output_padding, self.groups = o.transposed == true, o.output_padding, groups
  self.padding_mode = check.one_of(o.padding_mode or "zeros", name, "padding_mode", { "zeros", "reflect", "replicate", "circular" })
  local wshape = self.transposed and { in_channels, out_channels / groups } or { out_channels, in_channels / groups }
  for i, k in ipairs(kernel_size) do wshape[2 + i] = check.int(k, name, "kernel_size", 1) end
  self.weight = L.Parameter(wick.empty(wshape, options(o)))
  if o.bias ~= false and o.bias ~= nil then self.bias = L.Parameter(wick.empty({ out_channels }, options(o))) end
  self:reset_parameters()
end
L._ConvNd.reset_parameters = reset_fan_in

-- ---- Conv2d ----
L.Conv2d = L._ConvNd:extend("Conv2d", { "in_channels", "out_channels", "kernel_size" })
local PADDING_MODES = { "zeros", "reflect", "replicate", "circular" }
-- {top, bottom, left, right} of a padding (number, {h, w}, "valid", "same") for kernel k and dilation d
-- ("same": the total d (k - 1) split with the extra one after, as PyTorch's)
local function explicit_padding(padding, k, d)
  if padding == "valid" then return { 0, 0, 0, 0 } end
  local out = {}
  for i = 1, 2 do
    local before, after
    if padding == "same" then
      local total = d[i] * (k[i] - 1)
      before = math.floor(total / 2)
      after = total - before
    else
      local p = int_pair(padding, "Conv2d", "padding", 0)
      before, after = p[i], p[i]
    end
    out[2 * i - 1], out[2 * i] = before, after
  end
  return out
end
local CONV = { bias = "truth", stride = "integer|table", padding = "integer|table|string", dilation = "integer|table",
  groups = "integer", padding_mode = "string", device = "device", dtype = "dtype" }
local CONV_ORDER = { "stride", "padding", "dilation", "groups", "bias", "padding_mode", "device", "dtype" }
-- PyTorch's ConvNd.extra_repr: a number as a tuple of one per spatial dim
local function conv_repr(self)
  local dims = type(self.kernel_size) == "table" and #self.kernel_size or 1
  local function tuple(v)
    if type(v) ~= "number" then return type(v) == "string" and v or py(v) end
    local t = {}
    for i = 1, dims do t[i] = v end
    return py(t)
  end
  local function all(v, x)
    for _, e in ipairs(type(v) == "number" and { v } or v) do if e ~= x then return false end end
    return true
  end
  local s = ("%d, %d, kernel_size=%s, stride=%s"):format(self.in_channels, self.out_channels, tuple(self.kernel_size),
    tuple(self.stride))
  if type(self.padding) == "string" or not all(self.padding, 0) then s = s .. ", padding=" .. tuple(self.padding) end
  if not all(self.dilation, 1) then s = s .. ", dilation=" .. tuple(self.dilation) end
  if self.output_padding and not all(self.output_padding, 0) then
    s = s .. ", output_padding=" .. tuple(self.output_padding)
  end
  if self.groups ~= 1 then s = s .. ", groups=" .. self.groups end
  if not self.bias then s = s .. ", bias=False" end
  if self.padding_mode ~= "zeros" then s = s .. ", padding_mode=" .. self.padding_mode end
  return s
end
-- nn.Conv2d(in, out, kernel_size[, stride[, padding[, dilation[, groups[, bias[, padding_mode]]]]]][, opts]), PyTorch's order
function L.Conv2d:init(in_channels, out_channels, kernel_size, ...)
  check.int(in_channels, "Conv2d", "in_channels", 1)
  check.int(out_channels, "Conv2d", "out_channels", 1)
  local opts = check.positional("Conv2d", CONV_ORDER, CONV, ...)
  self.padding_mode = check.one_of(opts.padding_mode or "zeros", "Conv2d", "padding_mode", PADDING_MODES)
  local k = int_pair(kernel_size, "Conv2d", "kernel_size", 1)
  self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, k
  -- PyTorch's attributes: tuples (m.padding[0] is m.padding[1] here), padding a string as given
  self.stride, self.dilation = int_pair(opts.stride or 1, "Conv2d", "stride", 1), int_pair(opts.dilation or 1, "Conv2d", "dilation", 1)
  self.padding = type(opts.padding) == "string" and opts.padding or int_pair(opts.padding or 0, "Conv2d", "padding", 0)
  if self.padding == "same" and (self.stride[1] ~= 1 or self.stride[2] ~= 1) then
    check.fail("Conv2d", "padding='same' is not supported for strided convolutions")
  end
  self.output_padding = { 0, 0 }
  self.groups = check.opt_int(opts.groups, "Conv2d", "groups", 1, 1)
  if in_channels % self.groups ~= 0 or out_channels % self.groups ~= 0 then
    wick.error("Conv2d: in_channels and out_channels must be divisible by groups")
  end
  self.weight = L.Parameter(wick.empty({ out_channels, in_channels / self.groups, k[1], k[2] }, options(opts)))
  if opts.bias ~= false then self.bias = L.Parameter(wick.empty({ out_channels }, options(opts))) end
  self:reset_parameters()
end
L.Conv2d.reset_parameters = reset_fan_in
-- m:_conv_forward(x, weight, bias): the convolution with the layer's options, as
-- PyTorch's (a subclass overrides it to change the weight: weight standardisation)
function L.Conv2d:_conv_forward(x, weight, bias)
  local padding = self.padding
  if self.padding_mode ~= "zeros" then -- PyTorch's _reversed_padding_repeated_twice, then no padding
    local p = explicit_padding(padding, self.kernel_size, int_pair(self.dilation, "Conv2d", "dilation", 1))
    x, padding = F.pad(x, { p[3], p[4], p[1], p[2] }, self.padding_mode), 0
  end
  return F.conv2d(x, weight, bias, { stride = self.stride, padding = padding, dilation = self.dilation, groups = self.groups })
end
function L.Conv2d:forward(x) return self:_conv_forward(x, self.weight, self.bias) end
L.Conv2d.extra_repr = conv_repr

-- ---- ConvTranspose2d ----
L.ConvTranspose2d = L._ConvNd:extend("ConvTranspose2d", { "in_channels", "out_channels", "kernel_size" })
local CONV_T = { bias = "truth", stride = "integer|table", padding = "integer|table", output_padding = "integer|table",
  dilation = "integer|table", groups = "integer", padding_mode = "string", device = "device", dtype = "dtype" }
local CONV_T_ORDER = { "stride", "padding", "output_padding", "groups", "bias", "dilation", "padding_mode", "device", "dtype" }
-- nn.ConvTranspose2d(in, out, kernel_size[, stride[, padding[, output_padding[, groups[, bias[, dilation[,
-- padding_mode]]]]]]][, opts]), PyTorch's order; weight [in, out / groups, kH, kW]
function L.ConvTranspose2d:init(in_channels, out_channels, kernel_size, ...)
  local fn = "ConvTranspose2d"
  check.int(in_channels, fn, "in_channels", 1)
  check.int(out_channels, fn, "out_channels", 1)
  local opts = check.positional(fn, CONV_T_ORDER, CONV_T, ...)
  if opts.padding_mode ~= nil and opts.padding_mode ~= "zeros" then
    check.fail(fn, 'Only "zeros" padding mode is supported for ConvTranspose2d')
  end
  local k = int_pair(kernel_size, fn, "kernel_size", 1)
  self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, k
  self.stride = int_pair(opts.stride or 1, fn, "stride", 1)
  self.padding = int_pair(opts.padding or 0, fn, "padding", 0)
  self.output_padding = int_pair(opts.output_padding or 0, fn, "output_padding", 0)
  self.dilation = int_pair(opts.dilation or 1, fn, "dilation", 1)
  self.groups = check.opt_int(opts.groups, fn, "groups", 1, 1)
  self.padding_mode = "zeros"
  if in_channels % self.groups ~= 0 then check.fail(fn, "in_channels must be divisible by groups") end
  if out_channels % self.groups ~= 0 then check.fail(fn, "out_channels must be divisible by groups") end
  self.weight = L.Parameter(wick.empty({ in_channels, out_channels / self.groups, k[1], k[2] }, options(opts)))
  if opts.bias ~= false then self.bias = L.Parameter(wick.empty({ out_channels }, options(opts))) end
  self:reset_parameters()
end
L.ConvTranspose2d.reset_parameters = reset_fan_in
-- PyTorch's _output_padding: the output_padding that gives output_size (n
-- spatial sizes, or with the leading dims), for a transposed convolution of n dims
local function output_padding(self, x, output_size, n, fn)
  local function list(v) return type(v) == "table" and v or { v } end
  local stride, padding, dilation, k = list(self.stride), list(self.padding), list(self.dilation), list(self.kernel_size)
  if output_size == nil then return self.output_padding end
  check.table(output_size, fn, "output_size")
  local lead = x:dim() == n + 2 and 2 or 1
  local size = {}
  for d = 1, n do size[d] = output_size[#output_size == lead + n and lead + d or d] end
  if #output_size ~= n and #output_size ~= lead + n then
    check.fail(fn, "for %dD input, output_size must have %d or %d elements (got %d)", n, n, lead + n, #output_size)
  end
  local lo, hi, res, input = {}, {}, {}, {}
  for d = 1, n do
    input[d] = x:size(lead + d)
    lo[d] = (input[d] - 1) * stride[d] - 2 * padding[d] + dilation[d] * (k[d] - 1) + 1
    hi[d] = lo[d] + stride[d] - 1
  end
  for d = 1, n do
    if size[d] < lo[d] or size[d] > hi[d] then
      check.fail(fn, "requested an output size of [%s], but valid sizes range from [%s] to [%s] (for an input of [%s])",
        table.concat(size, ", "), table.concat(lo, ", "), table.concat(hi, ", "), table.concat(input, ", "))
    end
    res[d] = size[d] - lo[d]
  end
  return res
end
function L.ConvTranspose2d:_output_padding(x, output_size) return output_padding(self, x, output_size, 2, "ConvTranspose2d") end
--- forward(x[, output_size]): output_size ({h, w}, or with the batch and channel dims) picks the output_padding
function L.ConvTranspose2d:forward(x, output_size)
  check.tensor(x, "ConvTranspose2d", "input")
  return F.conv_transpose2d(x, self.weight, self.bias, { stride = self.stride, padding = self.padding,
    output_padding = self:_output_padding(x, output_size), groups = self.groups, dilation = self.dilation })
end
L.ConvTranspose2d.extra_repr = conv_repr

-- ---- Conv1d: a Conv2d over a height of 1 ----
L.Conv1d = L._ConvNd:extend("Conv1d", { "in_channels", "out_channels", "kernel_size" })
local CONV1 = { bias = "truth", stride = "integer|table", padding = "integer|string|table", dilation = "integer|table",
  groups = "integer", padding_mode = "string", device = "device", dtype = "dtype" }
-- PyTorch's _single: a number, or a table of one number ((3,), as Conv1d prints it)
local function single(v, name)
  if type(v) ~= "table" then return v end
  if #v ~= 1 or getmetatable(v) ~= nil then check.fail("Conv1d", "expected an integer or a table of one for '%s'", name) end
  return v[1]
end
-- nn.Conv1d(in, out, kernel_size[, stride[, padding[, dilation[, groups[, bias[, padding_mode]]]]]][, opts])
function L.Conv1d:init(in_channels, out_channels, kernel_size, ...)
  check.int(in_channels, "Conv1d", "in_channels", 1)
  check.int(out_channels, "Conv1d", "out_channels", 1)
  kernel_size = check.int(single(kernel_size, "kernel_size"), "Conv1d", "kernel_size", 1)
  local opts = check.positional("Conv1d", CONV_ORDER, CONV1, ...)
  for _, k in ipairs({ "stride", "padding", "dilation" }) do
    if type(opts[k]) == "table" then opts[k] = single(opts[k], k) end
  end
  self.padding_mode = check.one_of(opts.padding_mode or "zeros", "Conv1d", "padding_mode", PADDING_MODES)
  -- PyTorch's attributes: tuples of one ((3,)), padding a string as given
  self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, { kernel_size }
  self.stride = { check.opt_int(opts.stride, "Conv1d", "stride", 1, 1) }
  self.padding = type(opts.padding) == "string" and opts.padding or { check.opt_int(opts.padding, "Conv1d", "padding", 0, 0) }
  self.dilation = { check.opt_int(opts.dilation, "Conv1d", "dilation", 1, 1) }
  if self.padding == "same" and self.stride[1] ~= 1 then
    check.fail("Conv1d", "padding='same' is not supported for strided convolutions")
  end
  self.output_padding = { 0 }
  self.groups = check.opt_int(opts.groups, "Conv1d", "groups", 1, 1)
  if in_channels % self.groups ~= 0 or out_channels % self.groups ~= 0 then
    wick.error("Conv1d: in_channels and out_channels must be divisible by groups")
  end
  self.weight = L.Parameter(wick.empty({ out_channels, in_channels / self.groups, kernel_size }, options(opts)))
  if opts.bias ~= false then self.bias = L.Parameter(wick.empty({ out_channels }, options(opts))) end
  self:reset_parameters()
end
L.Conv1d.reset_parameters = reset_fan_in
function L.Conv1d:forward(x)
  check.tensor(x, "Conv1d", "input")
  if x:dim() ~= 2 and x:dim() ~= 3 then check.fail("Conv1d", "expected 2-D (unbatched) or 3-D input, got %d-D", x:dim()) end
  return self:_conv_forward(x, self.weight, self.bias)
end
local function one(v) return type(v) == "table" and v[1] or v end -- (a tuple of one's value)
function L.Conv1d:_conv_forward(x, weight, bias)
  local padding = one(self.padding)
  if self.padding_mode ~= "zeros" then
    local p = explicit_padding(padding, { 1, one(self.kernel_size) }, { 1, one(self.dilation) })
    x, padding = F.pad(x, { p[3], p[4] }, self.padding_mode), 0
  end
  return F.conv1d(x, weight, bias, { stride = one(self.stride), padding = padding, dilation = one(self.dilation),
    groups = self.groups })
end
L.Conv1d.extra_repr = conv_repr

-- ---- the 3-D convolutions and ConvTranspose1d (their functions: wick.nn.volumetric) ----
local triple = require("wick.nn.volumetric")._triple
L.Conv3d = L._ConvNd:extend("Conv3d", { "in_channels", "out_channels", "kernel_size" })
-- nn.Conv3d(in, out, kernel_size[, stride[, padding[, dilation[, groups[, bias[, padding_mode]]]]]][, opts]), PyTorch's order
function L.Conv3d:init(in_channels, out_channels, kernel_size, ...)
  local fn = "Conv3d"
  check.int(in_channels, fn, "in_channels", 1)
  check.int(out_channels, fn, "out_channels", 1)
  local opts = check.positional(fn, CONV_ORDER, CONV, ...)
  self.padding_mode = check.one_of(opts.padding_mode or "zeros", fn, "padding_mode", PADDING_MODES)
  local k = triple(kernel_size, fn, "kernel_size", 1)
  self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, k
  self.stride, self.dilation = triple(opts.stride or 1, fn, "stride", 1), triple(opts.dilation or 1, fn, "dilation", 1)
  self.padding = type(opts.padding) == "string" and opts.padding or triple(opts.padding or 0, fn, "padding", 0)
  if self.padding == "same" and (self.stride[1] ~= 1 or self.stride[2] ~= 1 or self.stride[3] ~= 1) then
    check.fail(fn, "padding='same' is not supported for strided convolutions")
  end
  self.groups = check.opt_int(opts.groups, fn, "groups", 1, 1)
  if in_channels % self.groups ~= 0 or out_channels % self.groups ~= 0 then
    check.fail(fn, "in_channels and out_channels must be divisible by groups")
  end
  self.weight = L.Parameter(wick.empty({ out_channels, in_channels / self.groups, k[1], k[2], k[3] }, options(opts)))
  if opts.bias ~= false then self.bias = L.Parameter(wick.empty({ out_channels }, options(opts))) end
  self:reset_parameters()
end
L.Conv3d.reset_parameters = reset_fan_in
function L.Conv3d:_conv_forward(x, weight, bias)
  local padding = self.padding
  if self.padding_mode ~= "zeros" then -- F.pad's order: the last dim first
    local pads = {}
    for i = 3, 1, -1 do
      local before, after = 0, 0
      if padding == "same" then
        local total = self.dilation[i] * (self.kernel_size[i] - 1)
        before, after = math.floor(total / 2), total - math.floor(total / 2)
      elseif padding ~= "valid" then
        before, after = padding[i], padding[i]
      end
      pads[#pads + 1], pads[#pads + 2] = before, after
    end
    x, padding = F.pad(x, pads, self.padding_mode), 0
  end
  return F.conv3d(x, weight, bias, { stride = self.stride, padding = padding, dilation = self.dilation, groups = self.groups })
end
function L.Conv3d:forward(x) return self:_conv_forward(x, self.weight, self.bias) end
L.Conv3d.extra_repr = conv_repr

-- nn.ConvTranspose3d(in, out, kernel_size[, stride[, padding[, output_padding[, groups[, bias[, dilation[,
-- padding_mode]]]]]]][, opts]) and nn.ConvTranspose1d(...): ConvTranspose2d's arguments; weight [in, out / groups, k...]
local function conv_transpose_class(name, n, fn)
  local C = L._ConvNd:extend(name, { "in_channels", "out_channels", "kernel_size" })
  -- the attributes are PyTorch's tuples: {k} for 1-D (hifi-gan's op.output_padding[0])
  local function shape(v, what, lo)
    if n == 3 then return triple(v, name, what, lo) end
    if type(v) == "table" and #v == 1 and getmetatable(v) == nil then v = v[1] end -- PyTorch's (3,)
    return { check.int(v, name, what, lo) }
  end
  local function arg(v) return n == 1 and v[1] or v end
  function C:init(in_channels, out_channels, kernel_size, ...)
    check.int(in_channels, name, "in_channels", 1)
    check.int(out_channels, name, "out_channels", 1)
    local opts = check.positional(name, CONV_T_ORDER, CONV_T, ...)
    if opts.padding_mode ~= nil and opts.padding_mode ~= "zeros" then
      check.fail(name, 'Only "zeros" padding mode is supported for %s', name)
    end
    local k = shape(kernel_size, "kernel_size", 1)
    self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, k
    self.stride, self.padding = shape(opts.stride or 1, "stride", 1), shape(opts.padding or 0, "padding", 0)
    self.output_padding = shape(opts.output_padding or 0, "output_padding", 0)
    self.dilation = shape(opts.dilation or 1, "dilation", 1)
    self.groups = check.opt_int(opts.groups, name, "groups", 1, 1)
    self.padding_mode = "zeros"
    if in_channels % self.groups ~= 0 then check.fail(name, "in_channels must be divisible by groups") end
    if out_channels % self.groups ~= 0 then check.fail(name, "out_channels must be divisible by groups") end
    local wshape = { in_channels, out_channels / self.groups }
    for i = 1, n do wshape[2 + i] = k[i] end
    self.weight = L.Parameter(wick.empty(wshape, options(opts)))
    if opts.bias ~= false then self.bias = L.Parameter(wick.empty({ out_channels }, options(opts))) end
    self:reset_parameters()
  end
  C.reset_parameters = reset_fan_in
  function C:forward(x, output_size)
    check.tensor(x, name, "input")
    return fn(x, self.weight, self.bias, { stride = arg(self.stride), padding = arg(self.padding),
      output_padding = arg(output_padding(self, x, output_size, n, name)), groups = self.groups,
      dilation = arg(self.dilation) })
  end
  C.extra_repr = conv_repr
  return C
end
L.ConvTranspose3d = conv_transpose_class("ConvTranspose3d", 3, function(...) return F.conv_transpose3d(...) end)
L.ConvTranspose1d = conv_transpose_class("ConvTranspose1d", 1, function(...) return F.conv_transpose1d(...) end)

-- ---- pooling ----
L.MaxPool2d = Module:extend("MaxPool2d", { "kernel_size" })
-- MaxPool2d(kernel_size[, stride[, padding[, dilation[, return_indices[, ceil_mode]]]]][, opts]),
-- AvgPool2d(kernel_size[, stride[, padding[, ceil_mode[, count_include_pad]]]][, opts]): PyTorch's order
local MAX_POOL = { stride = "integer|table", padding = "integer|table", dilation = "integer|table",
  return_indices = "boolean", ceil_mode = "boolean" }
local AVG_POOL = { stride = "integer|table", padding = "integer|table", ceil_mode = "boolean",
  count_include_pad = "boolean", divisor_override = "integer" }
-- the arguments as PyTorch's fields (stride defaults to the kernel), as written
local function pool_init(self, name, kernel_size, names, spec, defaults, ...)
  local dims = name:sub(-2) == "3d" and 3 or 2
  if dims == 3 then triple(kernel_size, name, "kernel_size", 1) else int_pair(kernel_size, name, "kernel_size", 1) end
  local opts = check.positional(name, names, spec, ...)
  self.kernel_size, self.stride = kernel_size, opts.stride or kernel_size
  for _, k in ipairs(names) do
    if opts[k] ~= nil then self[k] = opts[k] elseif defaults[k] ~= nil then self[k] = defaults[k] end
  end
end
-- the fields `names` as an options table
local function fields(self, names)
  local o = {}
  for _, k in ipairs(names) do o[k] = self[k] end
  return o
end
local MAX_POOL_ORDER = { "stride", "padding", "dilation", "return_indices", "ceil_mode" }
function L.MaxPool2d:init(kernel_size, ...)
  pool_init(self, "MaxPool2d", kernel_size, MAX_POOL_ORDER, MAX_POOL,
    { padding = 0, dilation = 1, return_indices = false, ceil_mode = false }, ...)
end
function L.MaxPool2d:forward(x) return F.max_pool2d(x, self.kernel_size, fields(self, MAX_POOL_ORDER)) end
L.MaxPool2d._repr = { "kernel_size", "stride", "padding", "dilation", "ceil_mode" }

L.AvgPool2d = Module:extend("AvgPool2d", { "kernel_size" })
local AVG_POOL_ORDER = { "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override" }
function L.AvgPool2d:init(kernel_size, ...)
  pool_init(self, "AvgPool2d", kernel_size, AVG_POOL_ORDER, AVG_POOL,
    { padding = 0, ceil_mode = false, count_include_pad = true }, ...)
end
function L.AvgPool2d:forward(x) return F.avg_pool2d(x, self.kernel_size, fields(self, AVG_POOL_ORDER)) end
L.AvgPool2d._repr = { "kernel_size", "stride", "padding" }

--- nn.MaxPool3d and nn.AvgPool3d: MaxPool2d's and AvgPool2d's arguments (and
--- AvgPool3d's divisor_override) with {d, h, w} kernels, over F.max_pool3d / F.avg_pool3d
L.MaxPool3d = Module:extend("MaxPool3d", { "kernel_size" })
function L.MaxPool3d:init(kernel_size, ...)
  pool_init(self, "MaxPool3d", kernel_size, MAX_POOL_ORDER, MAX_POOL,
    { padding = 0, dilation = 1, return_indices = false, ceil_mode = false }, ...)
end
function L.MaxPool3d:forward(x) return F.max_pool3d(x, self.kernel_size, fields(self, MAX_POOL_ORDER)) end
L.MaxPool3d._repr = L.MaxPool2d._repr
L.AvgPool3d = Module:extend("AvgPool3d", { "kernel_size" })
function L.AvgPool3d:init(kernel_size, ...)
  pool_init(self, "AvgPool3d", kernel_size, AVG_POOL_ORDER, AVG_POOL,
    { padding = 0, ceil_mode = false, count_include_pad = true }, ...)
end
function L.AvgPool3d:forward(x) return F.avg_pool3d(x, self.kernel_size, fields(self, AVG_POOL_ORDER)) end
L.AvgPool3d._repr = L.AvgPool2d._repr

--- nn.FractionalMaxPool2d(kernel_size[, output_size[, output_ratio[, return_indices[, _random_samples]]]][, opts]),
--- nn.FractionalMaxPool3d (the same, {t, h, w}): F.fractional_max_pool2d / 3d with the layer's
--- arguments; one of output_size and output_ratio (each ratio in (0, 1)); _random_samples, when
--- given, a buffer that fixes the windows (fresh uniform samples on each call otherwise)
local FRACTIONAL = { output_size = "integer|table", output_ratio = "number|table", return_indices = "boolean",
  _random_samples = "tensor" }
local FRACTIONAL_ORDER = { "output_size", "output_ratio", "return_indices", "_random_samples" }
local function fractional_class(name, n)
  local C = Module:extend(name, { "kernel_size" })
  function C:init(kernel_size, ...)
    if kernel_size == nil then check.fail(name, "missing required argument 'kernel_size'") end
    local o = check.positional(name, FRACTIONAL_ORDER, FRACTIONAL, ...)
    self.kernel_size, self.return_indices = kernel_size, o.return_indices or false
    self.output_size, self.output_ratio = o.output_size, o.output_ratio
    if o.output_size == nil and o.output_ratio == nil then
      check.fail(name, "requires specifying either an output size, or a pooling ratio")
    end
    if o.output_size ~= nil and o.output_ratio ~= nil then
      check.fail(name, "only one of output_size and output_ratio may be specified")
    end
    if o.output_ratio ~= nil then
      local r = o.output_ratio
      if type(r) == "number" then r = { r } end
      if #r ~= 1 and #r ~= n then
        check.fail(name, "output_ratio must be a number or a table of %d numbers, got a table of %d entries", n, #r)
      end
      for i = 1, #r do
        if type(r[i]) ~= "number" or not (r[i] > 0 and r[i] < 1) then
          local shown = {}
          for j = 1, #r do shown[j] = tostring(r[j]) end
          check.fail(name, "output_ratio must be between 0 and 1 (got %s)",
            type(o.output_ratio) == "number" and tostring(o.output_ratio) or "{" .. table.concat(shown, ", ") .. "}")
        end
      end
    end
    if o._random_samples ~= nil then self:register_buffer("_random_samples", o._random_samples) end
  end
  local f = ("fractional_max_pool%dd"):format(n)
  function C:forward(x)
    return F[f](x, self.kernel_size, { output_size = self.output_size, output_ratio = self.output_ratio,
      return_indices = self.return_indices, _random_samples = self._random_samples })
  end
  return C
end
L.FractionalMaxPool2d = fractional_class("FractionalMaxPool2d", 2)
L.FractionalMaxPool3d = fractional_class("FractionalMaxPool3d", 3)

--- nn.AdaptiveAvgPool2d(output_size): averages over PyTorch's adaptive bins
--- (row i covers floor(i H / oh) .. ceil((i + 1) H / oh)); nil in output_size keeps that size.
L.AdaptiveAvgPool2d = Module:extend("AdaptiveAvgPool2d", { "output_size" })
function L.AdaptiveAvgPool2d:init(output_size)
  local size = type(output_size) == "number" and { output_size, output_size } or output_size
  check.table(size, "AdaptiveAvgPool2d", "output_size")
  for i = 1, 2 do
    if size[i] ~= nil then check.int(size[i], "AdaptiveAvgPool2d", "output_size", 1) end
  end
  self.output_size = type(output_size) == "number" and output_size or { size[1], size[2] } -- as written
end
function L.AdaptiveAvgPool2d:forward(x) return F.adaptive_avg_pool2d(x, self.output_size) end
L.AdaptiveAvgPool2d._repr = { "output_size" }
--- nn.AdaptiveMaxPool2d(output_size[, return_indices = false]) (or {return_indices = b}):
--- the maximum of each adaptive bin; nn.AdaptiveMaxPool1d(output_size[, return_indices])
L.AdaptiveMaxPool2d = Module:extend("AdaptiveMaxPool2d", { "output_size" })
function L.AdaptiveMaxPool2d:init(output_size, ...)
  local size = type(output_size) == "number" and { output_size, output_size } or output_size
  check.table(size, "AdaptiveMaxPool2d", "output_size")
  for i = 1, 2 do
    if size[i] ~= nil then check.int(size[i], "AdaptiveMaxPool2d", "output_size", 1) end
  end
  self.output_size = type(output_size) == "number" and output_size or { size[1], size[2] }
  self.return_indices = check.positional("AdaptiveMaxPool2d", { "return_indices" }, { return_indices = "boolean" }, ...)
    .return_indices or false
end
function L.AdaptiveMaxPool2d:forward(x) return F.adaptive_max_pool2d(x, self.output_size, self.return_indices) end
L.AdaptiveMaxPool2d._repr = { "output_size" }
L.AdaptiveMaxPool1d = Module:extend("AdaptiveMaxPool1d", { "output_size" })
function L.AdaptiveMaxPool1d:init(n, ...)
  self.output_size = check.int(n, "AdaptiveMaxPool1d", "output_size", 1)
  self.return_indices = check.positional("AdaptiveMaxPool1d", { "return_indices" }, { return_indices = "boolean" }, ...)
    .return_indices or false
end
function L.AdaptiveMaxPool1d:forward(x) return F.adaptive_max_pool1d(x, self.output_size, self.return_indices) end
L.AdaptiveMaxPool1d._repr = { "output_size" }
--- nn.AdaptiveAvgPool3d(output_size), nn.AdaptiveMaxPool3d(output_size[, return_indices = false]):
--- {d, h, w} (nil keeps that size) or one number
local function adaptive3d_class(name, fn, with_indices)
  local C = Module:extend(name, { "output_size" })
  function C:init(output_size, ...)
    if type(output_size) ~= "number" then
      check.table(output_size, name, "output_size")
      for i = 1, 3 do
        if output_size[i] ~= nil then check.int(output_size[i], name, "output_size", 1) end
      end
      output_size = { output_size[1], output_size[2], output_size[3] }
    else
      check.int(output_size, name, "output_size", 1)
    end
    self.output_size = output_size
    if with_indices then
      self.return_indices = check.positional(name, { "return_indices" }, { return_indices = "boolean" }, ...).return_indices
        or false
    end
  end
  function C:forward(x) return F[fn](x, self.output_size, self.return_indices) end
  C._repr = { "output_size" }
  return C
end
L.AdaptiveAvgPool3d = adaptive3d_class("AdaptiveAvgPool3d", "adaptive_avg_pool3d", false)
L.AdaptiveMaxPool3d = adaptive3d_class("AdaptiveMaxPool3d", "adaptive_max_pool3d", true)

--- nn.Upsample([size[, scale_factor[, mode = "nearest"[, align_corners[, recompute_scale_factor]]]]][, opts]):
--- F.interpolate with the module's arguments; nn.UpsamplingNearest2d, nn.UpsamplingBilinear2d (align_corners).
local UPSAMPLE = { size = "integer|table", scale_factor = "number|table", mode = "string", align_corners = "boolean",
  recompute_scale_factor = "boolean" }
local UPSAMPLE_ORDER = { "size", "scale_factor", "mode", "align_corners", "recompute_scale_factor" }
local function py_float(v) -- Python's repr of a float
  if type(v) == "table" then
    local t = {}
    for i = 1, #v do t[i] = py_float(v[i]) end
    return "(" .. table.concat(t, ", ") .. ")"
  end
  if v == math.floor(v) then return ("%.1f"):format(v) end
  return tostring(v)
end
local function upsample_class(name, fixed)
  local C = Module:extend(name)
  function C:init(...)
    local o = check.positional(name, fixed and { "size", "scale_factor" } or UPSAMPLE_ORDER, UPSAMPLE, ...)
    for k, v in pairs(fixed or {}) do o[k] = v end
    self.size, self.scale_factor, self.mode = o.size, o.scale_factor, o.mode or "nearest"
    self.align_corners, self.recompute_scale_factor = o.align_corners, o.recompute_scale_factor
  end
  function C:forward(x)
    return F.interpolate(x, { size = self.size, scale_factor = self.scale_factor, mode = self.mode,
      align_corners = self.align_corners, recompute_scale_factor = self.recompute_scale_factor })
  end
  function C:extra_repr()
    local s = self.scale_factor ~= nil and "scale_factor=" .. py_float(self.scale_factor)
      or "size=" .. (type(self.size) == "table" and "(" .. table.concat(self.size, ", ") .. ")" or tostring(self.size))
    return s .. ", mode='" .. self.mode .. "'"
  end
  return C
end
L.Upsample = upsample_class("Upsample")
L.UpsamplingNearest2d = upsample_class("UpsamplingNearest2d", { mode = "nearest" })
L.UpsamplingBilinear2d = upsample_class("UpsamplingBilinear2d", { mode = "bilinear", align_corners = true })

-- ---- shape and regularisation ----
L.Flatten = Module:extend("Flatten")
function L.Flatten:init(...)
  local opts = check.positional("Flatten", { "start_dim", "end_dim" }, { start_dim = "integer", end_dim = "integer" }, ...)
  self.start_dim = check.opt_dim(opts.start_dim, "Flatten", "start_dim", 2)
  self.end_dim = check.opt_dim(opts.end_dim, "Flatten", "end_dim", -1)
end
function L.Flatten:forward(x) return x:flatten(self.start_dim, self.end_dim) end
L.Flatten._repr = { "start_dim", "end_dim" }

-- nn.Dropout([p = 0.5[, inplace = false]]) and nn.Dropout1d/2d/3d (whole channels): F's,
-- in training mode (inplace gives the same values: accepted); F's function is looked up at each
-- call, as PyTorch's forward does (a test that replaces F.dropout reaches nn.Dropout too)
local function dropout_class(name, fname)
  local C = Module:extend(name)
  function C:init(...)
    local opts = check.positional(name, { "p", "inplace" }, { p = "number", inplace = "boolean" }, ...)
    self.p, self.inplace = check.opt_number(opts.p, name, "p", 0.5, 0, 1), opts.inplace == true
  end
  function C:forward(x) return F[fname](x, self.p, self.training) end
  C._repr = { "p#", "inplace" }
  return C
end
L.Dropout = dropout_class("Dropout", "dropout")
L.Dropout1d = dropout_class("Dropout1d", "dropout1d")
L.Dropout2d = dropout_class("Dropout2d", "dropout2d")
L.Dropout3d = dropout_class("Dropout3d", "dropout3d")

--- nn.Unflatten(dim, sizes): dim (1-based) becomes the given sizes.
L.Unflatten = Module:extend("Unflatten", { "dim", "unflattened_size" })
function L.Unflatten:init(dim, sizes)
  self.dim = check.dim(dim, "Unflatten", "dim")
  check.table(sizes, "Unflatten", "unflattened_size")
  if #sizes == 0 then check.fail("Unflatten", "unflattened_size must not be empty") end
  local copy = {}
  for i = 1, #sizes do copy[i] = check.int(sizes[i], "Unflatten", "unflattened_size", -1) end
  self.unflattened_size = copy
end
function L.Unflatten:forward(x)
  check.tensor(x, "Unflatten", "input")
  local d = self.dim < 0 and x:dim() + 1 + self.dim or self.dim
  if d < 1 or d > x:dim() then check.fail("Unflatten", "dim %d out of range for a %d-D input", self.dim, x:dim()) end
  local shape = {}
  for i = 1, d - 1 do shape[#shape + 1] = x:size(i) end
  for _, n in ipairs(self.unflattened_size) do shape[#shape + 1] = n end
  for i = d + 1, x:dim() do shape[#shape + 1] = x:size(i) end
  return x:reshape(shape)
end
L.Unflatten._repr = { "dim", "unflattened_size" }

-- ---- normalisation ----
-- (num_features[, eps[, momentum[, affine[, track_running_stats]]]][, opts]), PyTorch's order, for the batch
-- and instance norms: affine and track_running_stats default to `default` (true for BatchNorm, false for
-- InstanceNorm); weight/bias as parameters, running statistics as buffers
local NORM = { eps = "number", momentum = "number|boolean", affine = "boolean", track_running_stats = "boolean",
  device = "device", dtype = "dtype", bias = "boolean" }
local function norm_init(self, name, default, num_features, ...)
  check.int(num_features, name, "num_features", 0)
  local opts = check.positional(name, { "eps", "momentum", "affine", "track_running_stats", "device", "dtype" }, NORM, ...)
  local function flag(v) if v == nil then return default end return v end
  -- (momentum = false is PyTorch's momentum=None, the cumulative average, which Lua's nil cannot say)
  if opts.momentum == true then check.fail(name, "momentum must be a number, or false for PyTorch's None") end
  local momentum = opts.momentum
  if momentum == nil then momentum = 0.1 elseif momentum == false then momentum = nil end
  self.num_features, self.eps, self.momentum = num_features, opts.eps or 1e-5, momentum
  self.affine, self.track_running_stats = flag(opts.affine), flag(opts.track_running_stats)
  local o = options(opts)
  if self.affine then
    self.weight = L.Parameter(wick.ones(num_features, o))
    -- bias = false (PyTorch 2.15's keyword): a scale without a shift
    if opts.bias ~= false then self.bias = L.Parameter(wick.zeros(num_features, o)) end
  end
  if self.track_running_stats then
    self:register_buffer("running_mean", wick.zeros(num_features, o))
    self:register_buffer("running_var", wick.ones(num_features, o))
    self:register_buffer("num_batches_tracked", wick.zeros({}, { device = o.device, dtype = "int64" }))
  end
end

-- PyTorch's _NormBase.extra_repr
local function norm_repr(self)
  return ("%d, eps=%s, momentum=%s, affine=%s, bias=%s, track_running_stats=%s"):format(self.num_features,
    py(self.eps), py(self.momentum), py(self.affine), py(self.bias ~= nil), py(self.track_running_stats))
end

--- m:reset_running_stats() (running mean 0, variance 1, no batches seen) and
--- m:reset_parameters() (also weight 1 and bias 0), as PyTorch's _NormBase
local function reset_running_stats(self)
  if not self.running_mean then return end
  wick.no_grad(function()
    self.running_mean:zero_()
    self.running_var:fill_(1)
    self.num_batches_tracked:zero_()
  end)
end
-- weight 1 and bias 0 where there are (LayerNorm's, GroupNorm's, RMSNorm's reset_parameters)
local function reset_affine(self)
  wick.no_grad(function()
    if self.weight ~= nil then self.weight:fill_(1) end
    if self.bias ~= nil then self.bias:fill_(0) end
  end)
end
local function reset_norm_parameters(self)
  reset_running_stats(self)
  reset_affine(self)
end

-- _NormBase(num_features[, eps[, momentum[, affine = true[, track_running_stats = true]]]][, opts]): the
-- parameters and buffers; a subclass gives _check_input_dim (PyTorch's leaves it to them too)
function L._NormBase:init(...) norm_init(self, self.__name__, true, ...) end
function L._NormBase:_check_input_dim()
  check.fail(self.__name__, "_check_input_dim is not defined: a subclass of %s defines %s:_check_input_dim(input) "
    .. "(or its own forward), as in PyTorch", rawget(self.super, "__name__") or "_NormBase", self.__name__)
end
L._NormBase.reset_running_stats, L._NormBase.reset_parameters = reset_running_stats, reset_norm_parameters
L._NormBase.extra_repr = norm_repr
L._BatchNorm._batch_norm = true -- (swa_utils.update_bn resets these, as PyTorch's _BatchNorm)
-- PyTorch's _BatchNorm.forward
function L._BatchNorm:forward(x)
  check.tensor(x, self.__name__, "input")
  self:_check_input_dim(x)
  local training = self.training or not self.running_mean
  local momentum = self.momentum
  if self.training and self.num_batches_tracked then
    wick.no_grad(function() self.num_batches_tracked:add_(1) end)
    -- momentum nil: the cumulative average over the batches seen (PyTorch's)
    if momentum == nil then momentum = 1 / self.num_batches_tracked:item() end
  end
  return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias, training,
    momentum or 0, self.eps)
end

local function batch_norm_class(name, dims)
  local C = L._BatchNorm:extend(name, { "num_features" })
  function C:init(...) norm_init(self, name, true, ...) end
  function C:_check_input_dim(x)
    check.tensor(x, name, "input")
    if x:dim() ~= dims[1] and x:dim() ~= dims[2] then
      wick.error(("%s: expected %s input, got %d-D"):format(name, dims.text, x:dim()))
    end
  end
  return C
end
L.BatchNorm1d = batch_norm_class("BatchNorm1d", { 2, 3, text = "2-D or 3-D" })
L.BatchNorm2d = batch_norm_class("BatchNorm2d", { 4, 4, text = "4-D" })
L.BatchNorm3d = batch_norm_class("BatchNorm3d", { 5, 5, text = "5-D" })

L.LayerNorm = Module:extend("LayerNorm", { "normalized_shape" })
local LAYER_NORM = { eps = "number", elementwise_affine = "boolean", bias = "boolean", device = "device", dtype = "dtype" }
-- nn.LayerNorm(normalized_shape[, eps[, elementwise_affine[, bias]]][, opts]), PyTorch's order
function L.LayerNorm:init(normalized_shape, ...)
  local opts = check.positional("LayerNorm", { "eps", "elementwise_affine", "bias", "device", "dtype" }, LAYER_NORM, ...)
  if type(normalized_shape) == "number" then normalized_shape = { normalized_shape } end
  check.table(normalized_shape, "LayerNorm", "normalized_shape")
  for i = 1, #normalized_shape do check.int(normalized_shape[i], "LayerNorm", "normalized_shape", 0) end
  self.normalized_shape, self.eps = normalized_shape, opts.eps or 1e-5
  self.elementwise_affine = opts.elementwise_affine ~= false
  if self.elementwise_affine then
    self.weight = L.Parameter(wick.ones(normalized_shape, options(opts)))
    if opts.bias ~= false then self.bias = L.Parameter(wick.zeros(normalized_shape, options(opts))) end
  end
end
L.LayerNorm.reset_parameters = reset_affine
function L.LayerNorm:forward(x) return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps) end
function L.LayerNorm:extra_repr()
  return ("%s, eps=%s, elementwise_affine=%s, bias=%s"):format(py(self.normalized_shape), py(self.eps),
    py(self.elementwise_affine), py(self.bias ~= nil))
end

--- nn.GroupNorm(num_groups, num_channels[, eps[, affine]][, opts]): statistics
--- over each group of channels (and every position) of (N, C, ...).
L.GroupNorm = Module:extend("GroupNorm", { "num_groups", "num_channels" })
function L.GroupNorm:init(num_groups, num_channels, ...)
  check.int(num_groups, "GroupNorm", "num_groups", 1)
  check.int(num_channels, "GroupNorm", "num_channels", 0)
  local opts = check.positional("GroupNorm", { "eps", "affine", "device", "dtype" },
    { eps = "number", affine = "boolean", device = "device", dtype = "dtype", bias = "boolean" }, ...)
  if num_channels % num_groups ~= 0 then check.fail("GroupNorm", "num_channels must be divisible by num_groups") end
  self.num_groups, self.num_channels, self.eps = num_groups, num_channels, opts.eps or 1e-5
  self.affine = opts.affine ~= false
  if self.affine then
    self.weight = L.Parameter(wick.ones(num_channels, options(opts)))
    if opts.bias ~= false then self.bias = L.Parameter(wick.zeros(num_channels, options(opts))) end
  end
end
L.GroupNorm.reset_parameters = reset_affine
function L.GroupNorm:forward(x)
  check.tensor(x, "GroupNorm", "input")
  if x:dim() < 2 or x:size(2) ~= self.num_channels then
    check.fail("GroupNorm", "expected an input of shape (N, %d, ...), got [%s]", self.num_channels, table.concat(x:size(), ", "))
  end
  return F.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)
end
function L.GroupNorm:extra_repr()
  return ("%d, %d, eps=%s, affine=%s, bias=%s"):format(self.num_groups, self.num_channels, py(self.eps),
    py(self.weight ~= nil), py(self.bias ~= nil))
end

-- _InstanceNorm(num_features[, eps[, momentum[, affine = false[, track_running_stats = false]]]][, opts]) and
-- PyTorch's forward; a subclass gives _get_no_batch_dim() (the dims of an unbatched input)
function L._InstanceNorm:init(...) norm_init(self, self.__name__, false, ...) end
function L._InstanceNorm:_get_no_batch_dim()
  check.fail(self.__name__, "_get_no_batch_dim is not defined: a subclass of _InstanceNorm defines "
    .. "%s:_get_no_batch_dim() (the number of dims of an unbatched input), as in PyTorch", self.__name__)
end
function L._InstanceNorm:forward(x)
  local name = self.__name__
  check.tensor(x, name, "input")
  local dims = self:_get_no_batch_dim() + 1
  if x:dim() ~= dims and x:dim() ~= dims - 1 then
    check.fail(name, "expected %d-D or %d-D input, got %d-D", dims - 1, dims, x:dim())
  end
  local unbatched = x:dim() == dims - 1
  if unbatched then x = x:unsqueeze(1) end
  if x:size(2) ~= self.num_features and self.affine then
    check.fail(name, "expected input's size at dim=%d to match num_features (%d), but got: %d.", unbatched and 0 or 1,
      self.num_features, x:size(2))
  end
  local use_input_stats = self.training or not self.track_running_stats
  -- (PyTorch's _InstanceNorm counts no batches, and momentum = None there freezes the running stats)
  local y = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias, use_input_stats,
    self.momentum == nil and 0 or self.momentum, self.eps)
  if unbatched then y = y:squeeze(1) end
  return y
end

--- nn.InstanceNorm1d / nn.InstanceNorm2d(num_features[, eps[, momentum[, affine = false[,
--- track_running_stats = false]]]][, opts]): statistics per image and channel.
local function instance_norm_class(name, dims)
  local C = L._InstanceNorm:extend(name, { "num_features" })
  function C:init(...) norm_init(self, name, false, ...) end
  function C._get_no_batch_dim() return dims - 1 end
  return C
end
L.InstanceNorm1d = instance_norm_class("InstanceNorm1d", 3)
L.InstanceNorm2d = instance_norm_class("InstanceNorm2d", 4)
L.InstanceNorm3d = instance_norm_class("InstanceNorm3d", 5)

L.Embedding = Module:extend("Embedding", { "num_embeddings", "embedding_dim" })
local EMBEDDING = { padding_idx = "integer", max_norm = "number|boolean", norm_type = "number", scale_grad_by_freq = "boolean",
  sparse = "boolean", _weight = "tensor", _freeze = "boolean", device = "device", dtype = "dtype" }
local EMBEDDING_ORDER = { "padding_idx", "max_norm", "norm_type", "scale_grad_by_freq", "sparse", "_weight", "_freeze",
  "device", "dtype" }
-- a 1-based padding_idx (negative counts from the end, as PyTorch's does)
local function padding_index(idx, n)
  if idx == nil then return nil end
  local given = idx
  if idx < 0 then idx = n + 1 + idx end
  if idx < 1 or idx > n then
    check.fail("Embedding", "padding_idx must be within num_embeddings: 1 to %d, or -%d to -1 from the end (got %d; "
      .. "indices are 1-based, PyTorch's padding_idx = 0 is 1 here)", n, n, given)
  end
  return idx
end
-- nn.Embedding(num_embeddings, embedding_dim[, padding_idx][, opts]): padding_idx
-- is 1-based; its row starts at zero and gets no gradient, as in PyTorch
function L.Embedding:init(num_embeddings, embedding_dim, ...)
  check.int(num_embeddings, "Embedding", "num_embeddings", 0)
  check.int(embedding_dim, "Embedding", "embedding_dim", 0)
  local opts = check.positional("Embedding", EMBEDDING_ORDER, EMBEDDING, ...)
  if opts.sparse then common.dense_sparse_warning("Embedding") end
  self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
  self.padding_idx = padding_index(opts.padding_idx, num_embeddings)
  self.max_norm = F._max_norm(opts.max_norm)
  self.norm_type, self.scale_grad_by_freq, self.sparse = opts.norm_type or 2, opts.scale_grad_by_freq == true, opts.sparse == true
  if opts._weight then
    local w = opts._weight
    if w:dim() ~= 2 or w:size(1) ~= num_embeddings or w:size(2) ~= embedding_dim then
      check.fail("Embedding", "Shape of weight does not match num_embeddings and embedding_dim")
    end
    self.weight = L.Parameter(w, not opts._freeze)
  else
    self.weight = L.Parameter(wick.empty(num_embeddings, embedding_dim, options(opts)), not opts._freeze)
    self:reset_parameters()
  end
end
--- m:reset_parameters(): N(0, 1) again, the padding row zero (Embedding, EmbeddingBag)
local function reset_embedding(self)
  wick.no_grad(function()
    self.weight:normal_()
    if self.padding_idx then self.weight:select(1, self.padding_idx):fill_(0) end
  end)
end
L.Embedding.reset_parameters = reset_embedding
function L.Embedding:forward(indices)
  local out = F._embedding("Embedding", indices, self.weight)
  if self.max_norm then -- (the rows looked up renormalised in place, then looked up again: PyTorch's order)
    F._embedding_renorm_(self.weight, indices, self.max_norm, self.norm_type)
    out = F._embedding("Embedding", indices, self.weight)
  end
  if self.scale_grad_by_freq then out = F._scale_grad_by_freq(out, indices, self.weight) end
  if self.padding_idx and self.weight.requires_grad then
    -- the padding row's value, with no gradient flowing back to it
    local pad = indices:eq(self.padding_idx):unsqueeze(-1)
    out = wick.where(pad, out:detach(), out)
  end
  return out
end
function L.Embedding:extra_repr()
  return ("%d, %d"):format(self.num_embeddings, self.embedding_dim) ..
    (self.padding_idx and (", padding_idx=%d"):format(self.padding_idx) or "") ..
    (self.max_norm and (", max_norm=%s"):format(self.max_norm % 1 == 0 and ("%.1f"):format(self.max_norm)
      or tostring(self.max_norm)) or "") ..
    (self.norm_type and self.norm_type ~= 2 and (", norm_type=%s"):format(py_float(self.norm_type)) or "") ..
    (self.scale_grad_by_freq and ", scale_grad_by_freq=True" or "") .. (self.sparse and ", sparse=True" or "")
end
--- nn.Embedding.from_pretrained(embeddings[, freeze = true[, padding_idx[, max_norm[, norm_type[,
--- scale_grad_by_freq[, sparse]]]]]][, opts])
function L.Embedding.from_pretrained(embeddings, ...)
  check.tensor(embeddings, "Embedding.from_pretrained", "embeddings")
  if embeddings:dim() ~= 2 then check.fail("Embedding.from_pretrained", "Embeddings parameter is expected to be 2-dimensional") end
  local o = check.positional("Embedding.from_pretrained", { "freeze", "padding_idx", "max_norm", "norm_type",
    "scale_grad_by_freq", "sparse" }, { freeze = "boolean", padding_idx = "integer", max_norm = "number|boolean",
    norm_type = "number", scale_grad_by_freq = "boolean", sparse = "boolean" }, ...)
  local freeze = o.freeze ~= false
  local w = embeddings:detach():clone()
  if not freeze then w:requires_grad_(true) end
  return L.Embedding(embeddings:size(1), embeddings:size(2), { padding_idx = o.padding_idx, _weight = w, _freeze = freeze,
    max_norm = o.max_norm, norm_type = o.norm_type, scale_grad_by_freq = o.scale_grad_by_freq, sparse = o.sparse })
end

--- nn.EmbeddingBag(num_embeddings, embedding_dim[, max_norm[, norm_type[, scale_grad_by_freq[, mode = "mean"[,
--- sparse[, _weight[, include_last_offset[, padding_idx]]]]]]]][, opts]): m(input[, offsets[, per_sample_weights]])
--- is F.embedding_bag with the layer's weight and options (offsets 1-based)
L.EmbeddingBag = Module:extend("EmbeddingBag", { "num_embeddings", "embedding_dim" })
local EMBEDDING_BAG = { max_norm = "number|boolean", norm_type = "number", scale_grad_by_freq = "boolean", mode = "string",
  sparse = "boolean", _weight = "tensor", include_last_offset = "boolean", padding_idx = "integer", device = "device",
  dtype = "dtype" }
function L.EmbeddingBag:init(num_embeddings, embedding_dim, ...)
  check.int(num_embeddings, "EmbeddingBag", "num_embeddings", 0)
  check.int(embedding_dim, "EmbeddingBag", "embedding_dim", 0)
  local o = check.positional("EmbeddingBag", { "max_norm", "norm_type", "scale_grad_by_freq", "mode", "sparse", "_weight",
    "include_last_offset", "padding_idx" }, EMBEDDING_BAG, ...)
  if o.sparse then common.dense_sparse_warning("EmbeddingBag") end
  self.num_embeddings, self.embedding_dim, self.sparse = num_embeddings, embedding_dim, o.sparse == true
  self.max_norm, self.norm_type = F._max_norm(o.max_norm), o.norm_type or 2
  self.scale_grad_by_freq = o.scale_grad_by_freq == true
  self.mode = check.one_of(o.mode or "mean", "EmbeddingBag", "mode", { "sum", "mean", "max" })
  self.include_last_offset = o.include_last_offset or false
  self.padding_idx = padding_index(o.padding_idx, num_embeddings)
  if o._weight then
    if o._weight:dim() ~= 2 or o._weight:size(1) ~= num_embeddings or o._weight:size(2) ~= embedding_dim then
      check.fail("EmbeddingBag", "Shape of weight does not match num_embeddings and embedding_dim")
    end
    self.weight = L.Parameter(o._weight)
  else
    self.weight = L.Parameter(wick.empty(num_embeddings, embedding_dim, options(o)))
    self:reset_parameters()
  end
end
--- nn.EmbeddingBag.from_pretrained(embeddings[, freeze = true[, max_norm[, norm_type[, scale_grad_by_freq[, mode[,
--- sparse[, include_last_offset[, padding_idx]]]]]]]][, opts]): a bag over a copy of the weights (frozen by default)
function L.EmbeddingBag.from_pretrained(embeddings, ...)
  local fn = "EmbeddingBag.from_pretrained"
  check.tensor(embeddings, fn, "embeddings")
  if embeddings:dim() ~= 2 then check.fail(fn, "Embeddings parameter is expected to be 2-dimensional") end
  local spec = { freeze = "boolean" }
  for k, v in pairs(EMBEDDING_BAG) do spec[k] = v end
  local o = check.positional(fn, { "freeze", "max_norm", "norm_type", "scale_grad_by_freq", "mode", "sparse",
    "include_last_offset", "padding_idx" }, spec, ...)
  local opts = { _weight = embeddings:detach():clone() }
  for k, v in pairs(o) do if k ~= "freeze" then opts[k] = v end end
  local bag = L.EmbeddingBag(embeddings:size(1), embeddings:size(2), opts)
  bag.weight.requires_grad = o.freeze == false
  return bag
end
L.EmbeddingBag.reset_parameters = reset_embedding
function L.EmbeddingBag:forward(input, offsets, per_sample_weights)
  -- PyTorch's keywords: m(input, offsets, {per_sample_weights = w}), m(input, {offsets =, per_sample_weights =})
  local function options(v) return type(v) == "table" and getmetatable(v) == nil end
  local BAG = { offsets = "tensor", per_sample_weights = "tensor" }
  if options(offsets) and per_sample_weights == nil then
    local o = check.options(offsets, "EmbeddingBag", BAG)
    offsets, per_sample_weights = o.offsets, o.per_sample_weights
  elseif options(per_sample_weights) then
    per_sample_weights = check.options(per_sample_weights, "EmbeddingBag", { per_sample_weights = "tensor" }).per_sample_weights
  end
  return F.embedding_bag(input, self.weight, { offsets = offsets, mode = self.mode, per_sample_weights = per_sample_weights,
    include_last_offset = self.include_last_offset, padding_idx = self.padding_idx, max_norm = self.max_norm,
    norm_type = self.norm_type, scale_grad_by_freq = self.scale_grad_by_freq })
end
function L.EmbeddingBag:extra_repr()
  local function num(v) return v % 1 == 0 and ("%.1f"):format(v) or tostring(v) end
  return ("%d, %d"):format(self.num_embeddings, self.embedding_dim) ..
    (self.max_norm and (", max_norm=%s"):format(num(self.max_norm)) or "") ..
    (self.norm_type ~= 2 and (", norm_type=%s"):format(num(self.norm_type)) or "") ..
    (self.scale_grad_by_freq and ", scale_grad_by_freq=True" or "") ..
    (", mode='%s'"):format(self.mode) ..
    (self.padding_idx and (", padding_idx=%d"):format(self.padding_idx) or "")
end

-- (the recurrent layers, nn.RNN/LSTM/GRU and the cells: wick.nn.recurrent)

-- ---- activations ----
-- inplace = true: the result is written into the input, which is returned, as
-- PyTorch's. in_place(x, self) does it through differentiable in-place ops where
-- the class has them (ReLU, LeakyReLU, Hardtanh); the others copy the result
-- into x, which under autograd takes the result's graph over (copy_ records it).
local function activation(name, fn, in_place, args)
  local C = Module:extend(name, args)
  function C:forward(x)
    check.tensor(x, name, "input")
    if not self.inplace then return fn(x, self) end
    if in_place then return in_place(x, self) end
    -- (under autograd the formula reads a copy: the values it saves are not the ones the write replaces)
    return x:copy_(fn(x.requires_grad and wick.is_grad_enabled() and x:clone() or x, self))
  end
  return C
end
local INPLACE = { inplace = "boolean" }
local function inplace_init(name)
  return function(self, ...) self.inplace = check.positional(name, { "inplace" }, INPLACE, ...).inplace == true end
end
L.ReLU = activation("ReLU", function(x) return x:relu() end, function(x) return x:relu_() end)
L.ReLU.init = inplace_init("ReLU")
L.ReLU._repr = { "inplace?" }
L.GELU = activation("GELU", function(x, self)
  if self.approximate == "tanh" then return x:gelu_tanh() end -- one fused kernel each way
  return x:gelu()
end)
-- nn.GELU([approximate = "none"]) or nn.GELU({approximate = "tanh"})
function L.GELU:init(...)
  local opts = check.positional("GELU", { "approximate" }, { approximate = "string" }, ...)
  self.approximate = check.one_of(opts.approximate or "none", "GELU", "approximate", { "none", "tanh" })
end
function L.GELU:extra_repr() return ("approximate='%s'"):format(self.approximate) end
L.Sigmoid = activation("Sigmoid", function(x) return x:sigmoid() end)
L.Tanh = activation("Tanh", function(x) return x:tanh() end)

-- More of PyTorch's activations: the formulas are F's.
L.LeakyReLU = activation("LeakyReLU", function(x, self) return F.leaky_relu(x, self.negative_slope) end,
  function(x, self) -- x * (1 where x > 0, else the slope) without autograd; under it F's one node
    local slope = self.negative_slope
    -- (LeakyReluBackward: its input gets a zero edge, so a gradient penalty gives the biases zeros, not nil)
    if x.requires_grad and wick.is_grad_enabled() then return x:copy_(F.leaky_relu(x:clone(), slope)) end
    return x:mul_(x:gt(0):to(x.dtype):mul_(1 - slope):add_(slope))
  end)
function L.LeakyReLU:init(...)
  local o = check.positional("LeakyReLU", { "negative_slope", "inplace" }, { negative_slope = "number", inplace = "boolean" }, ...)
  self.negative_slope, self.inplace = o.negative_slope or 0.01, o.inplace == true
end
L.LeakyReLU._repr = { "negative_slope#", "inplace?" }
L.SiLU = activation("SiLU", function(x) return F.silu(x) end)
L.SiLU.init = inplace_init("SiLU")
L.SiLU._repr = { "inplace?" }
L.ELU = activation("ELU", function(x, self) return F.elu(x, self.alpha) end)
function L.ELU:init(...)
  local o = check.positional("ELU", { "alpha", "inplace" }, { alpha = "number", inplace = "boolean" }, ...)
  self.alpha, self.inplace = o.alpha or 1, o.inplace == true
end
L.ELU._repr = { "alpha#", "inplace?" }
L.Softplus = activation("Softplus", function(x, self) return F.softplus(x, self.beta, self.threshold) end)
function L.Softplus:init(...)
  local o = check.positional("Softplus", { "beta", "threshold" }, { beta = "number", threshold = "number" }, ...)
  self.beta, self.threshold = o.beta or 1, o.threshold or 20
  if self.beta == 0 then check.fail("Softplus", "beta must not be 0") end
end
L.Softplus._repr = { "beta#", "threshold#" }
L.Mish = activation("Mish", function(x) return F.mish(x) end)
L.Mish.init = inplace_init("Mish")
L.Mish._repr = { "inplace?" }
L.Hardtanh = activation("Hardtanh", function(x, self) return x:clamp(self.min_val, self.max_val) end,
  function(x, self) return x:clamp_(self.min_val, self.max_val) end)
function L.Hardtanh:init(...)
  local o = check.positional("Hardtanh", { "min_val", "max_val", "inplace" },
    { min_val = "number", max_val = "number", inplace = "boolean" }, ...)
  self.min_val, self.max_val, self.inplace = o.min_val or -1, o.max_val or 1, o.inplace == true
  if self.min_val > self.max_val then check.fail("Hardtanh", "min_val cannot be greater than max_val") end
end
L.Hardtanh._repr = { "min_val#", "max_val#", "inplace?" }
-- the rest of F's activations as modules: nn.ReLU6([inplace]), nn.Hardsigmoid,
-- nn.Hardswish, nn.LogSigmoid(), nn.Softsign(), nn.GLU([dim = -1])
for name, fn in pairs({ ReLU6 = F.relu6, Hardsigmoid = F.hardsigmoid, Hardswish = F.hardswish }) do
  L[name] = activation(name, function(x) return fn(x) end)
  L[name].init = inplace_init(name)
  L[name]._repr = name == "ReLU6" and { "inplace?" } or {} -- (PyTorch's Hardswish(True) prints Hardswish())
end
L.LogSigmoid = activation("LogSigmoid", F.logsigmoid)
L.Tanhshrink = activation("Tanhshrink", F.tanhshrink)
--- nn.Threshold(threshold, value[, inplace])
L.Threshold = activation("Threshold", function(x, self) return F.threshold(x, self.threshold, self.value) end,
  nil, { "threshold", "value" })
L.Threshold._repr = { "threshold", "value", "inplace?" }
function L.Threshold:init(threshold, value, ...)
  check.number(threshold, "Threshold", "threshold")
  check.number(value, "Threshold", "value")
  self.threshold, self.value = threshold, value
  self.inplace = check.positional("Threshold", { "inplace" }, INPLACE, ...).inplace == true
end
--- nn.PixelShuffle(upscale_factor), nn.PixelUnshuffle(downscale_factor)
L.PixelShuffle = Module:extend("PixelShuffle", { "upscale_factor" })
function L.PixelShuffle:init(r) self.upscale_factor = check.int(r, "PixelShuffle", "upscale_factor", 1) end
function L.PixelShuffle:forward(x) return F.pixel_shuffle(x, self.upscale_factor) end
L.PixelShuffle._repr = { "upscale_factor" }
L.PixelUnshuffle = Module:extend("PixelUnshuffle", { "downscale_factor" })
function L.PixelUnshuffle:init(r) self.downscale_factor = check.int(r, "PixelUnshuffle", "downscale_factor", 1) end
function L.PixelUnshuffle:forward(x) return F.pixel_unshuffle(x, self.downscale_factor) end
L.PixelUnshuffle._repr = { "downscale_factor" }
--- nn.Bilinear(in1_features, in2_features, out_features[, bias = true][, opts]):
--- y = x1^T A x2 + b, weight [out, in1, in2], PyTorch's U(-1/sqrt(in1), 1/sqrt(in1)) init
L.Bilinear = Module:extend("Bilinear", { "in1_features", "in2_features", "out_features" })
function L.Bilinear:init(in1, in2, out, ...)
  check.int(in1, "Bilinear", "in1_features", 1)
  check.int(in2, "Bilinear", "in2_features", 1)
  check.int(out, "Bilinear", "out_features", 1)
  local opts = check.positional("Bilinear", { "bias", "device", "dtype" }, LINEAR, ...)
  self.in1_features, self.in2_features, self.out_features = in1, in2, out
  self.weight = L.Parameter(wick.empty({ out, in1, in2 }, options(opts)))
  if opts.bias ~= false then self.bias = L.Parameter(wick.empty({ out }, options(opts))) end
  self:reset_parameters()
end
function L.Bilinear:reset_parameters() refill_uniform(self, fan_bound(self.in1_features), { "weight", "bias" }) end
function L.Bilinear:forward(x1, x2) return F.bilinear(x1, x2, self.weight, self.bias) end
function L.Bilinear:extra_repr()
  return ("in1_features=%d, in2_features=%d, out_features=%d, bias=%s"):format(self.in1_features, self.in2_features,
    self.out_features, py(self.bias ~= nil))
end
--- nn.Unfold(kernel_size[, dilation = 1[, padding = 0[, stride = 1]]]) (or an options table)
L.Unfold = Module:extend("Unfold", { "kernel_size" })
local UNFOLD_ORDER = { "dilation", "padding", "stride" }
function L.Unfold:init(kernel_size, ...)
  local o = check.positional("Unfold", UNFOLD_ORDER,
    { dilation = "integer|table", padding = "integer|table", stride = "integer|table" }, ...)
  self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, o.dilation or 1, o.padding or 0, o.stride or 1
end
function L.Unfold:forward(x) return F.unfold(x, self.kernel_size, fields(self, UNFOLD_ORDER)) end
L.Unfold._repr = { "kernel_size", "dilation", "padding", "stride" }
--- nn.Fold(output_size, kernel_size[, dilation = 1[, padding = 0[, stride = 1]]]) (or an options table): F.fold
L.Fold = Module:extend("Fold", { "output_size", "kernel_size" })
function L.Fold:init(output_size, kernel_size, ...)
  local o = check.positional("Fold", UNFOLD_ORDER,
    { dilation = "integer|table", padding = "integer|table", stride = "integer|table" }, ...)
  self.output_size, self.kernel_size = output_size, kernel_size
  self.dilation, self.padding, self.stride = o.dilation or 1, o.padding or 0, o.stride or 1
end
function L.Fold:forward(x) return F.fold(x, self.output_size, self.kernel_size, fields(self, UNFOLD_ORDER)) end
L.Fold._repr = { "output_size", "kernel_size", "dilation", "padding", "stride" }
--- nn.ZeroPad1d/2d/3d(padding), nn.ConstantPad1d/2d/3d(padding, value), nn.ReflectionPad1d/2d/3d,
--- nn.ReplicationPad1d/2d/3d, nn.CircularPad1d/2d/3d: F.pad with a number (every side)
--- or PyTorch's tuple {left, right[, top, bottom[, front, back]]}
local function pad_class(name, sides, mode, with_value)
  local C = Module:extend(name, with_value and { "padding", "value" } or { "padding" })
  function C:init(padding, value)
    if type(padding) == "number" then
      check.int(padding, name, "padding", 0)
      local p = {}
      for i = 1, 2 * sides do p[i] = padding end
      padding = p
    end
    check.table(padding, name, "padding")
    if #padding ~= 2 * sides then check.fail(name, "padding must be a number or a table of %d numbers, got %d", 2 * sides, #padding) end
    for i = 1, #padding do check.int(padding[i], name, "padding") end
    if with_value then
      if type(value) == "boolean" then value = value and 1 or 0 end -- Python's True is 1
      if type(value) ~= "number" then check.expected(name, "value", "a number", value) end -- (NaN too, as F.pad's)
    end
    self.padding, self.value = padding, with_value and value or 0
  end
  function C:forward(x) return F.pad(x, self.padding, mode, self.value) end
  function C:extra_repr()
    return with_value and ("padding=%s, value=%s"):format(py(self.padding), py(self.value)) or py(self.padding)
  end
  L[name] = C
end
for sides, d in pairs({ [1] = "1d", [2] = "2d", [3] = "3d" }) do
  pad_class("ZeroPad" .. d, sides, "constant", false)
  pad_class("ConstantPad" .. d, sides, "constant", true)
  pad_class("ReflectionPad" .. d, sides, "reflect", false)
  pad_class("ReplicationPad" .. d, sides, "replicate", false)
  pad_class("CircularPad" .. d, sides, "circular", false)
end
--- nn.AdaptiveAvgPool1d(output_size)
L.AdaptiveAvgPool1d = Module:extend("AdaptiveAvgPool1d", { "output_size" })
function L.AdaptiveAvgPool1d:init(n) self.output_size = check.int(n, "AdaptiveAvgPool1d", "output_size", 1) end
function L.AdaptiveAvgPool1d:forward(x) return F.adaptive_avg_pool1d(x, self.output_size) end
L.AdaptiveAvgPool1d._repr = { "output_size" }
--- nn.MarginRankingLoss([opts]), nn.CosineEmbeddingLoss([opts]), nn.TripletMarginLoss([opts]): m(x1, x2, y)
-- (PyTorch's positional orders: MarginRankingLoss(0.3), TripletMarginLoss(0.7, 3))
local PAIR_ORDER = { "margin", "size_average", "reduce", "reduction" }
local PAIR_LOSS_ORDER = { MarginRankingLoss = PAIR_ORDER, CosineEmbeddingLoss = PAIR_ORDER,
  TripletMarginLoss = { "margin", "p", "eps", "swap", "size_average", "reduce", "reduction" } }
local PAIR_KINDS = { margin = "number", p = "number", eps = "number", swap = "boolean", size_average = "boolean",
  reduce = "boolean", reduction = "string" }
for name, fn in pairs({ MarginRankingLoss = F.margin_ranking_loss, CosineEmbeddingLoss = F.cosine_embedding_loss,
  TripletMarginLoss = F.triplet_margin_loss }) do
  local C = Module:extend(name)
  local kinds = {}
  for _, k in ipairs(PAIR_LOSS_ORDER[name]) do kinds[k] = PAIR_KINDS[k] end
  function C:init(...)
    local o = check.positional(name, PAIR_LOSS_ORDER[name], kinds, ...)
    -- size_average / reduce become a reduction here, so PyTorch's warning comes once, at construction
    rawset(self, "_opts", F._legacy_reduction(name, o))
  end
  function C:forward(a, b, c) return fn(a, b, c, rawget(self, "_opts")) end
  L[name] = C
end
L.Softsign = activation("Softsign", F.softsign)
L.GLU = Module:extend("GLU")
function L.GLU:init(...) self.dim = check.positional("GLU", { "dim" }, { dim = "integer" }, ...).dim or -1 end
function L.GLU:forward(x) return F.glu(x, self.dim) end
L.GLU._repr = { "dim" }
--- nn.CosineSimilarity([dim = 2[, eps = 1e-8]]), nn.PairwiseDistance([p = 2[, eps = 1e-6[, keepdim]]])
L.CosineSimilarity = Module:extend("CosineSimilarity")
function L.CosineSimilarity:init(...)
  local o = check.positional("CosineSimilarity", { "dim", "eps" }, { dim = "integer", eps = "number" }, ...)
  self.dim, self.eps = o.dim or 2, o.eps or 1e-8
end
function L.CosineSimilarity:forward(x1, x2) return F.cosine_similarity(x1, x2, self.dim, self.eps) end
L.PairwiseDistance = Module:extend("PairwiseDistance")
function L.PairwiseDistance:init(...)
  local o = check.positional("PairwiseDistance", { "p", "eps", "keepdim" },
    { p = "number", eps = "number", keepdim = "boolean" }, ...)
  self.norm, self.eps, self.keepdim = o.p or 2, o.eps or 1e-6, o.keepdim == true
end
function L.PairwiseDistance:forward(x1, x2) return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim) end

--- nn.PReLU([num_parameters = 1[, init = 0.25]][, opts]): a learned slope per channel (or one)
L.PReLU = Module:extend("PReLU")
function L.PReLU:init(...)
  local o = check.positional("PReLU", { "num_parameters", "init", "device", "dtype" },
    { num_parameters = "integer", init = "number", device = "device", dtype = "dtype" }, ...)
  self.num_parameters = check.opt_int(o.num_parameters, "PReLU", "num_parameters", 1, 1)
  self.init_value = o.init or 0.25
  self.weight = L.Parameter(wick.full({ self.num_parameters }, self.init_value, options(o)))
end
function L.PReLU:reset_parameters() wick.no_grad(function() self.weight:fill_(self.init_value) end) end
function L.PReLU:forward(x) return F.prelu(x, self.weight) end
L.PReLU._repr = { "num_parameters" }

L.Softmax = activation("Softmax", function(x, self) return x:softmax(self.dim or F._implicit_softmax_dim(x, "softmax")) end)
function L.Softmax:init(...)
  local opts = check.positional("Softmax", { "dim" }, { dim = "integer" }, ...)
  self.dim = check.opt_dim(opts.dim, "Softmax", "dim")
end
L.Softmax._repr = { "dim" }
L.LogSoftmax = activation("LogSoftmax", function(x, self) return x:log_softmax(self.dim or F._implicit_softmax_dim(x, "log_softmax")) end)
function L.LogSoftmax:init(...)
  local opts = check.positional("LogSoftmax", { "dim" }, { dim = "integer" }, ...)
  self.dim = check.opt_dim(opts.dim, "LogSoftmax", "dim")
end
L.LogSoftmax._repr = { "dim" }
L.Softmin = activation("Softmin", function(x, self) return F.softmin(x, self.dim or F._implicit_softmax_dim(x, "softmin")) end)
function L.Softmin:init(...)
  local opts = check.positional("Softmin", { "dim" }, { dim = "integer" }, ...)
  self.dim = check.opt_dim(opts.dim, "Softmin", "dim")
end
L.Softmin._repr = { "dim" }
--- nn.Softmax2d(): softmax over the channels of (N, C, H, W) or (C, H, W)
L.Softmax2d = Module:extend("Softmax2d")
function L.Softmax2d:forward(x)
  check.tensor(x, "Softmax2d", "input")
  if x:dim() ~= 3 and x:dim() ~= 4 then check.fail("Softmax2d", "expected a 3-D or 4-D input, got %d-D", x:dim()) end
  return x:softmax(-3)
end
--- nn.SELU([inplace]), nn.CELU([alpha = 1[, inplace]]), nn.Softshrink([lambd = 0.5]),
--- nn.Hardshrink([lambd = 0.5]): F's
L.SELU = activation("SELU", function(x) return F.selu(x) end)
L.SELU.init = inplace_init("SELU")
L.SELU._repr = { "inplace?" }
L.CELU = activation("CELU", function(x, self) return F.celu(x, self.alpha) end)
function L.CELU:init(...)
  local o = check.positional("CELU", { "alpha", "inplace" }, { alpha = "number", inplace = "boolean" }, ...)
  self.alpha, self.inplace = o.alpha or 1, o.inplace == true
end
L.CELU._repr = { "alpha#", "inplace?" }
for name, fn in pairs({ Softshrink = F.softshrink, Hardshrink = F.hardshrink }) do
  local C = Module:extend(name)
  function C:init(...) self.lambd = check.positional(name, { "lambd" }, { lambd = "number" }, ...).lambd or 0.5 end
  function C:forward(x) return fn(x, self.lambd) end
  function C:extra_repr() return py_float(self.lambd) end -- (PyTorch's: Softshrink(0.3))
  L[name] = C
end
--- nn.RMSNorm(normalized_shape[, eps[, elementwise_affine = true]][, opts]): F.rms_norm with a weight of ones
L.RMSNorm = Module:extend("RMSNorm", { "normalized_shape" })
function L.RMSNorm:init(normalized_shape, ...)
  local opts = check.positional("RMSNorm", { "eps", "elementwise_affine", "device", "dtype" },
    { eps = "number", elementwise_affine = "boolean", device = "device", dtype = "dtype" }, ...)
  if type(normalized_shape) == "number" then normalized_shape = { normalized_shape } end
  check.table(normalized_shape, "RMSNorm", "normalized_shape")
  for i = 1, #normalized_shape do check.int(normalized_shape[i], "RMSNorm", "normalized_shape", 0) end
  self.normalized_shape, self.eps = normalized_shape, opts.eps
  self.elementwise_affine = opts.elementwise_affine ~= false
  if self.elementwise_affine then self.weight = L.Parameter(wick.ones(normalized_shape, options(opts))) end
end
L.RMSNorm.reset_parameters = reset_affine
function L.RMSNorm:forward(x) return F.rms_norm(x, self.normalized_shape, self.weight, self.eps) end
function L.RMSNorm:extra_repr()
  return ("%s, eps=%s, elementwise_affine=%s"):format(py(self.normalized_shape), self.eps and py(self.eps) or "None",
    py(self.elementwise_affine))
end
--- nn.LocalResponseNorm(size[, alpha = 1e-4[, beta = 0.75[, k = 1]]]): F.local_response_norm
L.LocalResponseNorm = Module:extend("LocalResponseNorm", { "size" })
function L.LocalResponseNorm:init(size, ...)
  self.size = check.int(size, "LocalResponseNorm", "size", 1)
  local o = check.positional("LocalResponseNorm", { "alpha", "beta", "k" }, { alpha = "number", beta = "number", k = "number" }, ...)
  self.alpha, self.beta, self.k = o.alpha or 1e-4, o.beta or 0.75, o.k or 1
end
function L.LocalResponseNorm:forward(x) return F.local_response_norm(x, self.size, self.alpha, self.beta, self.k) end
function L.LocalResponseNorm:extra_repr() -- (PyTorch's: the size alone, the others by name)
  return ("%s, alpha=%s, beta=%s, k=%s"):format(py(self.size), py_float(self.alpha), py_float(self.beta), py_float(self.k))
end
--- nn.ChannelShuffle(groups): (N, g C', ...) as (N, C' g, ...) (ShuffleNet)
L.ChannelShuffle = Module:extend("ChannelShuffle", { "groups" })
function L.ChannelShuffle:init(groups) self.groups = check.int(groups, "ChannelShuffle", "groups", 1) end
function L.ChannelShuffle:forward(x) return require("wick.nn.functional").channel_shuffle(x, self.groups) end
L.ChannelShuffle._repr = { "groups" }
--- nn.MaxPool1d(kernel_size[, stride[, padding[, dilation[, return_indices[, ceil_mode]]]]][, opts]),
--- nn.AvgPool1d(kernel_size[, stride[, padding[, ceil_mode[, count_include_pad]]]][, opts]): F's 1-D forms
L.MaxPool1d = Module:extend("MaxPool1d", { "kernel_size" })
function L.MaxPool1d:init(kernel_size, ...)
  self.kernel_size = check.int(kernel_size, "MaxPool1d", "kernel_size", 1)
  local o = check.positional("MaxPool1d", { "stride", "padding", "dilation", "return_indices", "ceil_mode" },
    { stride = "integer", padding = "integer", dilation = "integer", return_indices = "boolean", ceil_mode = "boolean" }, ...)
  self.stride, self.padding, self.dilation = o.stride or kernel_size, o.padding or 0, o.dilation or 1
  self.ceil_mode, self.return_indices = o.ceil_mode or false, o.return_indices or false
end
function L.MaxPool1d:forward(x)
  return F.max_pool1d(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode, self.return_indices)
end
L.MaxPool1d._repr = { "kernel_size", "stride", "padding", "dilation", "ceil_mode" }
L.AvgPool1d = Module:extend("AvgPool1d", { "kernel_size" })
function L.AvgPool1d:init(kernel_size, ...)
  self.kernel_size = check.int(kernel_size, "AvgPool1d", "kernel_size", 1)
  local o = check.positional("AvgPool1d", { "stride", "padding", "ceil_mode", "count_include_pad" },
    { stride = "integer", padding = "integer", ceil_mode = "boolean", count_include_pad = "boolean" }, ...)
  self.stride, self.padding = o.stride or kernel_size, o.padding or 0
  self.ceil_mode, self.count_include_pad = o.ceil_mode or false, o.count_include_pad ~= false
end
function L.AvgPool1d:forward(x)
  return F.avg_pool1d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad)
end
L.AvgPool1d._repr = { "kernel_size,", "stride,", "padding," }
L.Identity = Module:extend("Identity")
function L.Identity:init() end -- PyTorch's Identity takes and ignores any arguments
function L.Identity:forward(x) return x end

-- ---- containers ----
-- ModuleList, Sequential and ParameterList keep their members in their own
-- array part, so ipairs(list), #list and list[i] work as on a Lua array; the
-- module walk (parameters(), state_dict(), to()) names them "1", "2", ...
-- A module added to Sequential or ModuleList under a name (add_module,
-- register_module, or seq.name = m, as PyTorch registers a child) is appended
-- too, in registration order, keeping that name (_names[i]). An integer name
-- is PyTorch's 0-based index (torchvision's slice:add_module(str(i), layer)):
-- the next position (0- or 1-based) names the child by position; another,
-- k, names it k + 1, so that a slice of features from 4 on loads PyTorch's
-- checkpoint ("slice2.4.weight" is wick's "slice2.5.weight").
local track = Module._track
local floor = math.floor
local rawlen = rawlen or function(t) return #t end -- luacheck: ignore

-- a module under a name: replaces the entry of that name in its place, or is appended
local function add_named(self, name, key, value)
  local n, names = rawlen(self), rawget(self, "_names")
  -- (a negative integer, CLIP's OrderedDict([("-1", pool), ("0", conv)...]), is a plain name)
  local index = key:find("^%d+$") and tonumber(key)
  if index then key = tostring(index + 1) end -- wick's 1-based name of PyTorch's index
  for i = 1, n do
    if (names and names[i] or tostring(i)) == key then return rawset(self, i, value) end
  end
  if not index then
    if key == "" or key:find(".", 1, true) or rawget(self, key) ~= nil or getmetatable(self)[key] ~= nil then
      check.fail(name, "cannot add a module named '%s' (empty, has a '.', or names a field or method of %s)", key, name)
    end
  end
  if not index or (index ~= n and index ~= n + 1) then
    if not names then names = {}; rawset(self, "_names", names) end
    names[n + 1] = key
  end
  rawset(self, n + 1, value)
end

-- __newindex of an array container: list[n + 1] = m appends, string keys are
-- ordinary fields (a module under one: add_named, with `named`). (list[i] = m
-- for an existing i replaces it in its place: a plain raw write.) __index:
-- the class's methods, then list[-1] (the last), an entry by its name; index 0
-- or past #list + 1 is an error (list[#list + 1] is nil: ipairs stops there).
-- the position of the entry named key ("3", or its add_module name), or nil
local function named_position(self, key)
  local names = rawget(self, "_names")
  for i = 1, rawlen(self) do
    if ((names and names[i]) or tostring(i)) == key then return i end
  end
end
local function array_container(C, name, check_item, named)
  if named then -- add_module(name, m): an integer name is PyTorch's 0-based index (see above)
    local function add_module(self, key, value)
      check.string(key, name .. ":add_module", "name")
      check.module(value, name .. ":add_module", "module")
      add_named(self, name, key, value)
    end
    rawset(C, "add_module", add_module)
    rawset(C, "register_module", add_module)
  end
  -- list + {m, ...} (or + another list): a new container of both's entries, PyTorch's ModuleList.__add__
  -- (pytorch-ntm's heads += [...] is heads = heads + {...})
  C.__add = function(a, b)
    if getmetatable(a) ~= C or type(b) ~= "table" or (getmetatable(b) ~= nil and getmetatable(b) ~= C) then
      check.fail(name, "a %s adds a %s or an array of entries, got %s", name, name, check.describe(b))
    end
    local out = L[name]()
    for _, v in ipairs(a) do out[#out + 1] = v end
    for _, v in ipairs(b) do out[#out + 1] = v end
    return out
  end
  C.__newindex = function(self, key, value)
    if type(key) == "number" then
      local n = rawlen(self)
      if key < 0 and key >= -n and key == floor(key) then key = n + 1 + key end -- list[-1] = m: the last
      if key ~= floor(key) or key < 1 or key > n + 1 then
        check.fail(name, "index %s out of range (the list has %d entries; use append or insert)", tostring(key), n)
      end
      if value == nil then check.fail(name, "cannot assign nil to index %d (use pop)", key) end
      rawset(self, key, check_item(value, name))
    elseif named and type(key) == "string" and value == nil and named_position(self, key) then
      self:pop(named_position(self, key)) -- seq.conv = nil: the entry leaves (PyTorch's del seq.conv)
    elseif named and type(key) == "string" and check.is_module(value) then
      -- an entry's own name (as named_children gives it) replaces that entry;
      -- another is add_module's (an integer name: PyTorch's 0-based index)
      local at = named_position(self, key)
      if at then rawset(self, at, value) else add_named(self, name, key, value) end
    else
      track(self, key, value)
    end
  end
  C.__index = function(self, key)
    local v = getmetatable(self)[key]
    if v ~= nil then return v end
    local n = rawlen(self)
    -- a one-element integer tensor is its number (Mixtral's self.experts[expert_idx] over nonzero())
    if wick.is_tensor(key) and key:numel() == 1 and not key:is_floating_point() and not key:is_complex() then
      return self[key:item()]
    end
    if type(key) == "number" then
      if key < 0 and key >= -n and key == floor(key) then return rawget(self, n + 1 + key) end
      if key == n + 1 then return nil end
      if key == 0 then check.fail(name, "index 0 is invalid: indices count from 1 (and from -1 backwards)") end
      check.fail(name, "index %s is out of range for %d entries (indices count from 1, and from -1 backwards)",
        tostring(key), n)
    end
    if type(key) == "string" then
      local at = named_position(self, key)
      if at then return rawget(self, at) end
      if key == "0" and n > 0 then -- getattr(seq, "0") walking a PyTorch state dict's names (cyclegan's load_networks)
        check.fail(name, "no entry named '0': entries are named from '1' (PyTorch's '0' is '1' here; "
          .. "nn.utils.from_pytorch_names renames a PyTorch state dict's keys)")
      end
      local v = Module._private_dict(self, key)
      if v == nil and key:match("^%d+$") then -- (PyTorch's AttributeError; wick.getattr's default still applies)
        check.fail(name, "no entry named '%s': it has %d entries, named '1' to '%d'", key, n, n)
      end
      return v
    end
    if check.is_slice(key) then -- a wick.slice, Python's slice object (st-moe's self.experts[slice(0, n)])
      key = { { check.slice_range(key, n, name) } }
    end
    if type(key) == "table" then -- m[{{a, b[, step]}}]: PyTorch's m[a-1:b:step], a new container of the same entries
      local r = key[1]
      if #key ~= 1 or type(r) ~= "table" or getmetatable(r) ~= nil or type(r[1]) ~= "number" then
        check.fail(name, "a %s is sliced with {{first, last[, step]}} (inclusive, negative from the end), got another table key", name)
      end
      local step = r[3] or 1
      check.int(step, name, "step")
      if step == 0 then check.fail(name, "slice step cannot be zero") end
      -- a negative step walks back from first to last (PyTorch's m[::-1] is m[{{-1, 1, -1}}])
      local a, b = r[1], r[2] or (step > 0 and n or 1)
      check.int(a, name, "first")
      check.int(b, name, "last")
      if a < 0 then a = n + 1 + a end
      if b < 0 then b = n + 1 + b end
      local bad
      if step > 0 then bad = a < 1 or b > n or a > b + 1 else bad = a > n or b < 1 or a < b - 1 end
      if bad then
        check.fail(name, "the range {%d, %d} reaches past the %d entries (indices count from 1)", r[1], r[2] or n, n)
      end
      -- a Sequential's entries keep their names, as PyTorch's slice keeps its keys
      -- (features[{{5, 9}}] holds "5" .. "9", PyTorch's "4" .. "8"); a
      -- ModuleList's (or ParameterList's) slice is numbered afresh, as PyTorch's
      local keep = name == "Sequential"
      local out, names, out_names = L[name](), keep and rawget(self, "_names"), nil
      for i = a, b, step do
        local j, key = floor((i - a) / step) + 1, names and names[i] or tostring(i)
        rawset(out, j, rawget(self, i))
        if keep and key ~= tostring(j) then
          out_names = out_names or {}
          out_names[j] = key
        end
      end
      if out_names then rawset(out, "_names", out_names) end
      return out
    end
  end
  function C:len() return rawlen(self) end
  -- list:unpack(): the entries as several values (Python's `for attn, ff in self.blocks` unpacking each,
  -- as a list of parts unpacks)
  function C:unpack() return (table.unpack or unpack)(check.module(self, name .. ":unpack", "self"), 1, rawlen(self)) end
  -- list:get(i): i may be negative (from the end)
  C.get = function(self, i)
    check.int(i, name .. ":get", "index")
    local n = rawlen(self)
    local j = i < 0 and n + 1 + i or i
    if j < 1 or j > n then check.fail(name .. ":get", "index %d out of range for %d entries", i, n) end
    return rawget(self, j)
  end
  -- for m in list:iter(): the entries, as Python's `for m in self.layers` (and t:iter()); each with its index after it
  function C:iter()
    local i = 0
    return function()
      i = i + 1
      local v = rawget(self, i)
      if v ~= nil then return v, i end
    end
  end
  function C:append(v)
    rawset(self, rawlen(self) + 1, check_item(v, name .. ":append"))
    return self
  end
  function C:extend(items, ...)
    if not check.is_module(self) then return Module.extend(self, items, ...) end -- on the class: a subclass
    if type(items) ~= "table" then check.expected(name .. ":extend", "modules", "an array or a " .. name, items) end
    local list, n = {}, rawlen(items)
    -- (a hole in a plain array, RETRO's {attn, has_cross_attn and ca or nil, ff}, is an entry too)
    if getmetatable(items) == nil and table.maxn then n = math.max(n, table.maxn(items)) end
    for i = 1, n do list[i] = check_item(rawget(items, i), name .. ":extend") end
    for i = 1, n do rawset(self, rawlen(self) + 1, list[i]) end
    return self
  end
  --- insert(index, v): like table.insert (and PyTorch's insert, 1-based).
  function C:insert(index, v)
    local n = rawlen(self)
    check.int(index, name .. ":insert", "index")
    if index == 0 then -- (PyTorch's self.up.insert(0, up), to prepend)
      check.fail(name .. ":insert", "index 0 is invalid: indices count from 1 (PyTorch's insert(0, m), which prepends, is insert(1, m))")
    end
    if index < 0 then index = n + 2 + index end
    if index < 1 or index > n + 1 then check.fail(name .. ":insert", "index out of range for %d entries", n) end
    v = check_item(v, name .. ":insert")
    local names = rawget(self, "_names") or {}
    for i = n, index, -1 do rawset(self, i + 1, rawget(self, i)); names[i + 1] = names[i] end
    rawset(self, index, v)
    names[index] = nil
    return self
  end
  if named then -- seq:__delattr__("conv"): Python's del seq.conv, the named entry leaves
    function C:__delattr__(key)
      local at = type(key) == "string" and named_position(self, key)
      if at then self:pop(at) return end
      return Module.__delattr__(self, key)
    end
  end
  --- pop([index = last]): removes and returns an entry.
  function C:pop(index)
    local n = rawlen(self)
    index = check.opt_int(index, name .. ":pop", "index", n)
    if index == 0 then check.fail(name .. ":pop", "index 0 is invalid: indices count from 1 (PyTorch's pop(0) is pop(1))") end
    if index < 0 then index = n + 1 + index end
    if index < 1 or index > n then check.fail(name .. ":pop", "index out of range for %d entries", n) end
    local v = rawget(self, index)
    local names = rawget(self, "_names") or {}
    for i = index, n - 1 do rawset(self, i, rawget(self, i + 1)); names[i] = names[i + 1] end
    rawset(self, n, nil)
    names[n] = nil
    return v
  end
end
local function module_item(v, fn) return check.module(v, fn, "module") end
-- a ModuleList entry: a module, or false for Python's None (nil, a hole in a list, is one too)
local function module_or_none(v, fn)
  if v == nil or v == false then return false end
  if not check.is_module(v) then check.expected(fn, "module", "a module (or false for None)", v) end
  return v
end
-- a ParameterList entry: a tensor (made a parameter), or false for Python's None
-- (transformer-xl's out_projs.append(None))
-- (a module, a nested ParameterList, is a child, as PyTorch's setattr makes it; a tensor that is
-- no leaf, an expanded parameter, is a new parameter on its values, as PyTorch's Parameter(t))
local function parameter_item(v, fn)
  if v == nil or v == false then return false end
  if check.is_module(v) then return v end
  check.tensor(v, fn, "parameter")
  if not v.is_leaf then return L.Parameter(v) end
  if v:_is_parameter() then return v end -- (as it is: a frozen nn.Parameter stays frozen, as PyTorch's)
  if not v.requires_grad and v:is_floating_point() then v:requires_grad_(true) end
  return v
end

-- The modules of argument i of nn.Sequential, appended to out: a module, or a
-- plain Lua list of modules, flattened one level. PyTorch's
-- nn.Sequential(*block(a, b), *block(b, c)) has no Lua form (unpack expands only
-- the last argument), so nn.Sequential(block(a, b), block(b, c)) stands for it.
local function sequential_items(v, i, out)
  if check.is_module(v) then out[#out + 1] = v; return end
  local ordered = require("wick.ordered")
  if ordered.is(v) then -- Sequential(OrderedDict([("conv1", ...), ...]))
    local pairs_of = {}
    for k, m in v:items() do pairs_of[#pairs_of + 1] = { k, m } end
    return sequential_items(pairs_of, i, out)
  end
  if not check.is_array(v) then
    check.expected("Sequential", "module " .. i, "a module or a list of modules", v)
  end
  local n = #v
  for k in pairs(v) do
    if type(k) ~= "number" or k ~= floor(k) or k < 1 or k > n then
      check.fail("Sequential", "argument %d is a table but not a list of modules (it has the key %s; named modules "
        .. "in order are wick.OrderedDict({{name, module}, ...}), Python's OrderedDict)", i, tostring(k))
    end
  end
  for k = 1, n do
    local m = rawget(v, k)
    -- {name, module}: PyTorch's Sequential(OrderedDict([(name, module), ...]))
    local named = type(m) == "table" and not check.is_module(m) and getmetatable(m) == nil and type(m[1]) == "string"
      and check.is_module(m[2]) and m[3] == nil
    if named then
      out[#out + 1] = m[2]
      out.names = out.names or {}
      out.names[#out] = m[1]
    elseif not check.is_module(m) then
      check.fail("Sequential", "expected a module or a {name, module} pair at position %d of the list given as argument %d, got %s",
        k, i, check.describe(m))
    else
      out[#out + 1] = m
    end
  end
end

--- nn.Sequential(m1, m2, ...): runs its modules in order; an argument may be a
--- list of modules, which count as given one by one.
L.Sequential = Module:extend("Sequential")
array_container(L.Sequential, "Sequential", module_item, true)
function L.Sequential:init(...)
  local modules = {}
  for i = 1, select("#", ...) do sequential_items((select(i, ...)), i, modules) end
  for i, m in ipairs(modules) do
    if modules.names and modules.names[i] then add_named(self, "Sequential", modules.names[i], m)
    else rawset(self, i, m) end
  end
end
function L.Sequential:forward(...)
  local n = rawlen(self)
  if n == 0 then return ... end
  local x = ...
  for i = 1, n - 1 do x = rawget(self, i)(x) end -- module(input), as PyTorch's (profiler ranges)
  return rawget(self, n)(x) -- every result of the last module (an MDN head's pi, sigma, mu)
end
L.Sequential.add = L.Sequential.append

--- nn.ModuleList([modules]): an array of modules, walked by ipairs.
L.ModuleList = Module:extend("ModuleList")
array_container(L.ModuleList, "ModuleList", module_or_none, true)
function L.ModuleList:init(modules)
  if modules ~= nil then self:extend(modules) end
end
--- PyTorch's ModuleList repr: a run of equal entries prints once, as "(1-3): 3 x Block(...)"
function L.ModuleList:__repr__()
  check.module(self, "ModuleList:__repr__", "self")
  local class = getmetatable(self).__name
  for _, m in ipairs(Module._members(self)) do -- (a named member beside the entries: the whole tree)
    if m[3] == "module" and not tonumber(m[1]) then return Module.__repr__(self) end
  end
  local n = rawlen(self)
  if n == 0 then return class .. "()" end
  local lines, first, text = {}, 1, nil
  for i = 1, n + 1 do
    local entry = i <= n and rawget(self, i)
    local r = i <= n and (entry and tostring(entry) or "None") or nil
    if i > 1 and r ~= text then
      local line = first == i - 1 and ("(%d): %s"):format(first, text)
        or ("(%d-%d): %d x %s"):format(first, i - 1, i - first, text)
      lines[#lines + 1] = line:gsub("\n", "\n  ")
      first = i
    end
    text = r
  end
  return ("%s(\n  %s\n)"):format(class, table.concat(lines, "\n  "))
end

--- nn.ParameterList([tensors]): an array of parameters, walked by ipairs.
L.ParameterList = Module:extend("ParameterList")
array_container(L.ParameterList, "ParameterList", parameter_item)
L.ParameterList._parameter_array = true -- (its entries print in extra_repr)
function L.ParameterList:init(params)
  if params ~= nil then self:extend(params) end
end
-- a parameter entry as PyTorch's ParameterList and ParameterDict print it
local LEGACY_TYPE = { float32 = "FloatTensor", float64 = "DoubleTensor", float16 = "HalfTensor",
  bfloat16 = "BFloat16Tensor", int64 = "LongTensor", int32 = "IntTensor", uint8 = "ByteTensor", bool = "BoolTensor" }
local function parameter_line(key, p, legacy)
  local dtype = legacy and (LEGACY_TYPE[p.dtype] or p.dtype) or p.dtype
  return ("  (%s): Parameter containing: [torch.%s of size %s]"):format(key, dtype, table.concat(p:size(), "x"))
end
function L.ParameterList:extra_repr()
  local lines = {}
  for i, p in ipairs(self) do
    lines[i] = not p and ("  (%d): Object of type: NoneType"):format(i)
      or check.is_module(p) and ("  (%d): Object of type: %s"):format(i, getmetatable(p).__name) or parameter_line(i, p)
  end
  return table.concat(lines, "\n")
end

-- ModuleDict and ParameterDict: string keys in insertion order, d[name] read
-- and written; a name that is a method of the class is refused (as PyTorch
-- refuses an attribute that already exists).
local function dict_container(C, name, check_item)
  C.__newindex = function(self, key, value)
    if type(key) ~= "string" then check.fail(name, "keys must be strings, got a %s key", type(key)) end
    -- a value that is no module and no tensor is a plain attribute, as PyTorch's
    -- Module.__setattr__ keeps one (torchvision's IntermediateLayerGetter:
    -- self.return_layers = {...}): not an entry
    if value ~= nil and not check.is_module(value) and not check.is_tensor(value) and rawget(self, key) == nil then
      rawset(self, key, value)
      return
    end
    if key == "" or key:find(".", 1, true) or key:sub(1, 1) == "_" or getmetatable(self)[key] ~= nil or key == "training" then
      check.fail(name, "invalid key '%s' (empty, has a '.', starts with '_', or names an attribute of %s)", key, name)
    end
    if value ~= nil then value = check_item(value, name) end
    track(self, key, value)
  end
  local function entries(self)
    local out = {}
    for _, k in ipairs(rawget(self, "_fields")) do
      local v = rawget(self, k)
      if v ~= nil and k ~= "training" then out[#out + 1] = { k, v } end
    end
    return out
  end
  --- d:items(): an iterator of name, value in insertion order.
  function C:items()
    local list, i = entries(self), 0
    return function()
      i = i + 1
      if list[i] then return list[i][1], list[i][2] end
    end
  end
  --- d:keys(), d:values(): arrays in insertion order that a generic for also takes (check.list)
  function C:keys()
    local out = {}
    for i, e in ipairs(entries(self)) do out[i] = e[1] end
    return check.list(out)
  end
  function C:values()
    local out = {}
    for i, e in ipairs(entries(self)) do out[i] = e[2] end
    return check.list(out)
  end
  function C:len() return #entries(self) end
  function C:contains(key) return type(key) == "string" and rawget(self, key) ~= nil and getmetatable(self)[key] == nil end
  --- d:pop(key): removes and returns an entry.
  function C:pop(key)
    check.string(key, name .. ":pop", "key")
    local v = rawget(self, key)
    if v == nil then check.fail(name .. ":pop", "no key '%s'", key) end
    rawset(self, key, nil)
    local fields = rawget(self, "_fields")
    fields[key] = nil
    for i = #fields, 1, -1 do if fields[i] == key then table.remove(fields, i) end end
    return v
  end
  function C:clear()
    for _, e in ipairs(entries(self)) do self:pop(e[1]) end
  end
  --- d:update(x): x a ModuleDict or an OrderedDict (its order), an array of {name, value} pairs
  --- (their order) or a table name -> value (sorted names).
  function C:update(x)
    if type(x) ~= "table" then check.expected(name .. ":update", "modules", "a table", x) end
    -- (an OrderedDict in its order: torchvision's IntermediateLayerGetter, super().__init__(layers))
    if getmetatable(x) == getmetatable(self) or (check.is_module(x) and type(x.items) == "function")
      or require("wick.ordered").is(x) then
      for k, v in x:items() do self[k] = v end
      return self
    end
    if getmetatable(x) ~= nil then
      check.expected(name .. ":update", "modules", "a plain table, an OrderedDict or a " .. name, x)
    end
    local n = #x
    for i = 1, n do
      local pair = x[i]
      if type(pair) ~= "table" or getmetatable(pair) ~= nil or type(pair[1]) ~= "string" or pair[2] == nil then
        check.fail(name .. ":update", "entry %d must be a {name, value} pair", i)
      end
    end
    local keys = {}
    for k in pairs(x) do
      if type(k) == "string" then keys[#keys + 1] = k
      elseif not (type(k) == "number" and k >= 1 and k <= n and k == floor(k)) then
        check.fail(name .. ":update", "keys must be strings, got a %s key", type(k))
      end
    end
    table.sort(keys)
    for i = 1, n do self[x[i][1]] = x[i][2] end
    for _, k in ipairs(keys) do self[k] = x[k] end
    return self
  end
end

--- nn.ModuleDict([modules]): modules by name, in insertion order.
L.ModuleDict = Module:extend("ModuleDict")
dict_container(L.ModuleDict, "ModuleDict", module_item)
function L.ModuleDict:init(modules)
  if modules ~= nil then self:update(modules) end
end

--- nn.ParameterDict([tensors]): parameters by name, in insertion order.
L.ParameterDict = Module:extend("ParameterDict")
dict_container(L.ParameterDict, "ParameterDict", parameter_item)
function L.ParameterDict:init(params)
  if params ~= nil then self:update(params) end
end
function L.ParameterDict:extra_repr()
  local lines = {}
  for k, p in self:items() do lines[#lines + 1] = parameter_line(k, p, true) end
  return table.concat(lines, "\n")
end

-- ---- losses ----
--- nn.modules.loss._Loss([size_average[, reduce[, reduction = "mean"]]]) and _WeightedLoss([weight[,
--- ...]]): PyTorch's bases of the losses, which loss libraries subclass (smp's class DiceLoss(_Loss),
--- super().__init__()): a module with `reduction` (PyTorch's legacy flags mapped), and the `weight` buffer
L._Loss = Module:extend("_Loss")
local LOSS_BASE = { size_average = "boolean", reduce = "boolean", reduction = "string", weight = "tensor" }
function L._Loss:init(...)
  local o = F._legacy_reduction("_Loss", check.positional("_Loss", { "size_average", "reduce", "reduction" }, LOSS_BASE, ...))
  self.reduction = o.reduction or "mean"
end
L._WeightedLoss = L._Loss:extend("_WeightedLoss")
function L._WeightedLoss:init(...)
  local o = check.positional("_WeightedLoss", { "weight", "size_average", "reduce", "reduction" }, LOSS_BASE, ...)
  L._Loss.init(self, { size_average = o.size_average, reduce = o.reduce, reduction = o.reduction })
  self:register_buffer("weight", o.weight)
end

-- nn.XLoss([weight][, opts]): PyTorch's positional arguments (weight for the losses that take one,
-- then the legacy size_average, reduce, ... as F's: F._LOSS_ORDER[fname]), then keyword arguments in
-- the options table.
local LOSS_DEFAULTS = { ignore_index = -100, label_smoothing = 0.0, beta = 1.0, delta = 1.0, log_target = false }
local function loss_class(name, fname, spec)
  local fn, order = F[fname], F._LOSS_ORDER[fname]
  local C = (spec.weight and L._WeightedLoss or L._Loss):extend(name)
  function C:init(...)
    local first, want = ..., spec[order[1]] -- (what PyTorch's first positional takes: HuberLoss's is reduction)
    if (type(first) == "string" or type(first) == "boolean" or type(first) == "number")
        and not want:find(type(first), 1, true) then
      check.fail(name, "options such as reduction go in the options table: nn.%s({reduction = 'sum'}), got a %s as argument 1",
        name, type(first))
    end
    local opts = F._legacy_reduction(name, check.positional(name, order, spec, ...))
    if opts.reduction ~= nil then
      check.one_of(opts.reduction, name, "reduction",
        spec.log_target and { "mean", "sum", "none", "batchmean" } or { "mean", "sum", "none" })
    end
    -- the options but the tensors (buffers) are fields, read at each call:
    -- loss.reduction = "none" after construction counts (d2l's MaskedSoftmaxCELoss)
    for k, v in pairs(opts) do
      if not wick.is_tensor(v) and k ~= "size_average" and k ~= "reduce" then self[k] = v end
    end
    self.reduction = opts.reduction or "mean"
    -- PyTorch's loss objects carry their defaults (fla's torch.full_like(labels, criterion.ignore_index))
    for k, v in pairs(LOSS_DEFAULTS) do
      if spec[k] ~= nil and self[k] == nil then self[k] = v end
    end
    if opts.weight then self:register_buffer("weight", opts.weight) end
    if wick.is_tensor(opts.pos_weight) then self:register_buffer("pos_weight", opts.pos_weight) end
  end
  function C:forward(input, target)
    local opts = {}
    for k in pairs(spec) do
      if k ~= "size_average" and k ~= "reduce" then opts[k] = self[k] end
    end
    return fn(input, target, opts)
  end
  function C:extra_repr() return "" end
  return C
end
-- the options of a loss class: the given ones, and PyTorch's deprecated
-- size_average and reduce unless legacy is false (the losses newer than reduction)
local function known(legacy, ...)
  local all = { reduction = "string", weight = "tensor", ignore_index = "integer|boolean", label_smoothing = "number",
    pos_weight = "tensor|number", beta = "number", delta = "number", log_target = "boolean" }
  local out = {}
  for _, k in ipairs({ ... }) do out[k] = all[k] end
  if legacy then out.size_average, out.reduce = "boolean", "boolean" end
  return out
end
L.CrossEntropyLoss = loss_class("CrossEntropyLoss", "cross_entropy",
  known(true, "weight", "reduction", "ignore_index", "label_smoothing"))
L.NLLLoss = loss_class("NLLLoss", "nll_loss", known(true, "weight", "reduction", "ignore_index"))
--- nn.NLLLoss2d: NLLLoss by its old name, with PyTorch's deprecation warning
L.NLLLoss2d = L.NLLLoss:extend("NLLLoss2d")
function L.NLLLoss2d:init(...)
  wick.warn("NLLLoss2d has been deprecated. Please use NLLLoss instead as a drop-in replacement and see "
    .. "https://pytorch.org/docs/main/nn.html#torch.nn.NLLLoss for more details.")
  L.NLLLoss.init(self, ...)
end
L.MSELoss = loss_class("MSELoss", "mse_loss", known(true, "reduction"))
L.L1Loss = loss_class("L1Loss", "l1_loss", known(true, "reduction"))
L.BCELoss = loss_class("BCELoss", "binary_cross_entropy", known(true, "weight", "reduction"))
L.BCEWithLogitsLoss = loss_class("BCEWithLogitsLoss", "binary_cross_entropy_with_logits",
  known(true, "weight", "reduction", "pos_weight"))
L.SmoothL1Loss = loss_class("SmoothL1Loss", "smooth_l1_loss", known(true, "reduction", "beta"))
L.HuberLoss = loss_class("HuberLoss", "huber_loss", known(false, "reduction", "delta"))
L.KLDivLoss = loss_class("KLDivLoss", "kl_div", known(true, "reduction", "log_target"))
L.SoftMarginLoss = loss_class("SoftMarginLoss", "soft_margin_loss", known(true, "reduction"))

-- ---- lazy modules ----
-- nn.LazyLinear(out_features[, ...]) and the others: the base layer's
-- arguments without the input size, which the first forward reads from its
-- input (features: the last dim; channels: dim 2, or 1 unbatched); the module
-- then becomes the base layer (its class, parameters made on the input's
-- device, in its floating dtype unless `dtype` was given), as PyTorch's.
local unpack = table.unpack or unpack -- luacheck: ignore
-- The base layer's arguments: the lazy layer's, after the inferred size, the
-- options table (a copy, added when there is none) given what `fill` sets
local function lazy_args(args, n, fill)
  local list = { n }
  for i = 1, args.n do list[i + 1] = args[i] end
  local last = list[#list]
  if type(last) ~= "table" or getmetatable(last) ~= nil or #last > 0 then
    last = {}
    list[#list + 1] = last
  else
    local copy = {}
    for k, v in pairs(last) do copy[k] = v end
    last = copy
    list[#list] = last
  end
  fill(last)
  return list
end

-- nn.LazyLinear and friends: PyTorch's lazy modules. Until the first forward
-- the parameters and buffers are uninitialized placeholders (empty tensors
-- under the base layer's names), so parameters() lists them and an optimizer
-- built then (d2l's Trainer) holds them; the first forward builds the base
-- layer for the input's size and sets each placeholder to its tensor in place
-- (t:set_), keeping its identity, and the module becomes the base layer.
-- a lazy module's own parameters and buffers by name
local function lazy_members(m)
  local out = {}
  for k, p in m:named_parameters("", false) do out[k] = p end
  for k, b in m:named_buffers("", false) do out[k] = b end
  return out
end
local function lazy_class(name, base, spatial, size_of)
  local C = Module:extend(name)
  function C:init(...)
    local args = { n = select("#", ...), ... }
    rawset(self, "_lazy", args)
    -- the names come from the base layer built on meta for a size any argument takes
    local size = type(args[1]) == "number" and args[1] >= 1 and args[1] == math.floor(args[1]) and args[1] or 1
    local opts
    local probe = base(unpack(lazy_args(args, size, function(o) opts = o; o.device = "meta" end)))
    local device, dtype = args.n > 0 and type(args[args.n]) == "table" and args[args.n].device, opts.dtype
    local t = { device = device or nil, dtype = dtype }
    local uninitialized = {} -- placeholder -> true until a forward or a load gives it its shape
    rawset(self, "_uninitialized", uninitialized)
    for k, p in probe:named_parameters("", false) do
      self[k] = L.Parameter(wick.empty({ 0 }, { device = t.device, dtype = t.dtype or p.dtype }))
      uninitialized[self[k]] = true
    end
    for k, b in probe:named_buffers("", false) do
      self:register_buffer(k, wick.empty({ 0 }, { device = t.device, dtype = b.dtype }))
      uninitialized[self[k]] = true
    end
    -- a checkpoint loaded before the first forward gives the placeholders its
    -- shapes (PyTorch's _lazy_load_hook); the load then copies the values in
    self:register_load_state_dict_pre_hook(function(_, sd, prefix)
      wick.no_grad(function()
        for k, ph in pairs(lazy_members(self)) do
          local v = sd[prefix .. k]
          if uninitialized[ph] and wick.is_tensor(v) then
            ph:set_(wick.empty(v.shape, { dtype = ph.dtype, device = ph.device }))
            uninitialized[ph] = nil
          end
        end
      end)
    end)
  end
  function C:forward(x, ...)
    check.tensor(x, name, "input")
    local n = size_of(x, spatial)
    if n == nil then check.fail(name, "cannot infer the input size from a %d-D input", x:dim()) end
    -- the base layer's device and dtype: the options', else the input's
    local m = base(unpack(lazy_args(rawget(self, "_lazy"), n, function(o)
      if o.device == nil then o.device = x.device end
      if o.dtype == nil and x:is_floating_point() then o.dtype = x.dtype end
    end)))
    local placeholders, uninitialized = lazy_members(self), rawget(self, "_uninitialized")
    local hooks, pre = rawget(self, "_forward_hook_list"), rawget(self, "_forward_pre_hook_list")
    local training = self.training
    for k in pairs(self) do rawset(self, k, nil) end
    for k, v in pairs(m) do rawset(self, k, v) end
    rawset(self, "_forward_hook_list", hooks)
    rawset(self, "_forward_pre_hook_list", pre)
    rawset(self, "training", training)
    setmetatable(self, getmetatable(m))
    wick.no_grad(function()
      for k, ph in pairs(placeholders) do
        local v = rawget(self, k)
        if wick.is_tensor(v) then
          if uninitialized[ph] then
            ph:_replace(v)
          elseif not wick.equal(wick.tensor(ph.shape), wick.tensor(v.shape)) then -- loaded: the checkpoint's values stay
            check.fail(name, "the loaded '%s' of shape %s does not fit an input of size %d (the layer wants %s)", k,
              tostring(ph.shape), n, tostring(v.shape))
          end
          rawset(self, k, ph)
        end
      end
    end)
    return self:forward(x, ...)
  end
  function C:extra_repr() return "uninitialized" end
  return C
end
local function features(x) return x:dim() >= 1 and x:size(-1) or nil end
local function channels(x, spatial)
  if x:dim() == spatial + 2 then return x:size(2) end
  if x:dim() == spatial + 1 then return x:size(1) end
end
local function norm_channels(x) return x:dim() >= 2 and x:size(2) or nil end
L.LazyLinear = lazy_class("LazyLinear", L.Linear, 0, features)
for _, c in ipairs({ { "Conv1d", 1 }, { "Conv2d", 2 }, { "Conv3d", 3 }, { "ConvTranspose1d", 1 },
  { "ConvTranspose2d", 2 }, { "ConvTranspose3d", 3 } }) do
  if L[c[1]] then L["Lazy" .. c[1]] = lazy_class("Lazy" .. c[1], L[c[1]], c[2], channels) end
end
for _, c in ipairs({ "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d" }) do
  if L[c] then L["Lazy" .. c] = lazy_class("Lazy" .. c, L[c], 0, norm_channels) end
end

-- ---- the losses with PyTorch's positional constructor arguments ----
-- nn.Name(args in PyTorch's order[, opts]) or nn.Name(opts): the options F's function takes;
-- forward(...) passes its `arity` arguments, then the options, to fn
local function positional_loss_class(name, fn, arity, order, spec)
  local C = Module:extend(name)
  function C:init(...)
    local opts = F._legacy_reduction(name, check.positional(name, order, spec, ...))
    if opts.reduction ~= nil then check.one_of(opts.reduction, name, "reduction", { "mean", "sum", "none" }) end
    local kept = {}
    for k, v in pairs(opts) do if not wick.is_tensor(v) then kept[k] = v end end
    rawset(self, "_opts", kept)
    self.reduction = opts.reduction or "mean"
    -- PyTorch's loss objects carry their defaults (fla's torch.full_like(labels, criterion.ignore_index))
    for k, v in pairs(LOSS_DEFAULTS) do
      if spec[k] ~= nil and self[k] == nil then self[k] = v end
    end
    if opts.weight then self:register_buffer("weight", opts.weight) end
  end
  function C:forward(...)
    local opts = {}
    for k, v in pairs(rawget(self, "_opts")) do opts[k] = v end
    opts.weight = self.weight
    local args = { ... }
    args[arity + 1] = opts
    return fn(unpack(args, 1, arity + 1))
  end
  function C:extra_repr() return "" end
  return C
end
local LEGACY = { size_average = "boolean", reduce = "boolean", reduction = "string" }
local function with(extra)
  local out = {}
  for k, v in pairs(LEGACY) do out[k] = v end
  for k, v in pairs(extra) do out[k] = v end
  return out
end
--- nn.MultiMarginLoss([p = 1[, margin = 1[, weight]]][, opts]), nn.MultiLabelMarginLoss([opts]),
--- nn.MultiLabelSoftMarginLoss([weight][, opts]), nn.HingeEmbeddingLoss([margin = 1][, opts]):
--- m(input, target)
L.MultiMarginLoss = positional_loss_class("MultiMarginLoss", F.multi_margin_loss, 2,
  { "p", "margin", "weight", "size_average", "reduce", "reduction" }, with({ p = "integer", margin = "number", weight = "tensor" }))
L.MultiLabelMarginLoss = positional_loss_class("MultiLabelMarginLoss", F.multilabel_margin_loss, 2,
  { "size_average", "reduce", "reduction" }, with({}))
L.MultiLabelSoftMarginLoss = positional_loss_class("MultiLabelSoftMarginLoss", F.multilabel_soft_margin_loss, 2,
  { "weight", "size_average", "reduce", "reduction" }, with({ weight = "tensor" }))
L.HingeEmbeddingLoss = positional_loss_class("HingeEmbeddingLoss", F.hinge_embedding_loss, 2,
  { "margin", "size_average", "reduce", "reduction" }, with({ margin = "number" }))
--- nn.PoissonNLLLoss([log_input = true[, full = false[, size_average[, eps = 1e-8[, reduce[, reduction]]]]]][, opts])
L.PoissonNLLLoss = positional_loss_class("PoissonNLLLoss", F.poisson_nll_loss, 2,
  { "log_input", "full", "size_average", "eps", "reduce", "reduction" },
  with({ log_input = "boolean", full = "boolean", eps = "number" }))
--- nn.GaussianNLLLoss([{full = false, eps = 1e-6, reduction = "mean"}]) (keywords only, as
--- PyTorch's): m(input, target, var)
L.GaussianNLLLoss = positional_loss_class("GaussianNLLLoss", F.gaussian_nll_loss, 3,
  {}, { full = "boolean", eps = "number", reduction = "string" })
--- nn.CTCLoss([blank = 1[, reduction = "mean"[, zero_infinity = false]]][, opts]):
--- m(log_probs, targets, input_lengths, target_lengths); blank is 1-based (PyTorch's 0)
L.CTCLoss = Module:extend("CTCLoss")
function L.CTCLoss:init(...)
  local o = check.positional("CTCLoss", { "blank", "reduction", "zero_infinity" },
    { blank = "integer", reduction = "string", zero_infinity = "boolean" }, ...)
  if o.reduction ~= nil then check.one_of(o.reduction, "CTCLoss", "reduction", { "mean", "sum", "none" }) end
  if o.blank ~= nil and o.blank < 1 then check.fail("CTCLoss", "blank is a 1-based class index, got %d", o.blank) end
  self.blank, self.reduction, self.zero_infinity = o.blank or 1, o.reduction or "mean", o.zero_infinity == true
end
function L.CTCLoss:forward(log_probs, targets, input_lengths, target_lengths)
  return F.ctc_loss(log_probs, targets, input_lengths, target_lengths,
    { blank = self.blank, reduction = self.reduction, zero_infinity = self.zero_infinity })
end


-- ---- randomized activation, alpha dropout ----
--- nn.RReLU([lower = 1/8[, upper = 1/3[, inplace]]]): random slopes in training, (lower + upper) / 2 in eval
L.RReLU = activation("RReLU", function(x, self)
  return F.rrelu(x, self.lower, self.upper, self.training)
end)
function L.RReLU:init(...)
  local o = check.positional("RReLU", { "lower", "upper", "inplace" },
    { lower = "number", upper = "number", inplace = "boolean" }, ...)
  self.lower, self.upper, self.inplace = o.lower or 1 / 8, o.upper or 1 / 3, o.inplace == true
  if self.lower > self.upper then check.fail("RReLU", "lower must not exceed upper, got %s > %s", self.lower, self.upper) end
end
L.RReLU._repr = { "lower#", "upper#", "inplace?" }
--- nn.AlphaDropout([p = 0.5[, inplace]]), nn.FeatureAlphaDropout: F's, in training mode
L.AlphaDropout = dropout_class("AlphaDropout", "alpha_dropout")
L.FeatureAlphaDropout = dropout_class("FeatureAlphaDropout", "feature_alpha_dropout")

-- ---- unpooling, power-average pooling ----
local UNPOOL = { stride = "integer|table", padding = "integer|table" }
local function unpool_class(name, fn, k)
  local C = Module:extend(name, { "kernel_size" })
  function C:init(kernel_size, ...)
    if kernel_size == nil then check.fail(name, "missing required argument 'kernel_size'") end
    local o = check.positional(name, { "stride", "padding" }, UNPOOL, ...)
    self.kernel_size, self.stride, self.padding = kernel_size, o.stride or kernel_size, o.padding or 0
  end
  --- m(input, indices[, output_size])
  function C:forward(x, indices, output_size)
    return fn(x, indices, self.kernel_size, self.stride, self.padding, output_size)
  end
  function C:extra_repr() -- (PyTorch's _single / _pair / _triple: a number printed as a k-tuple)
    local parts = {}
    for i, key in ipairs({ "kernel_size", "stride", "padding" }) do
      local v = self[key]
      if type(v) == "number" then
        local all = {}
        for j = 1, k do all[j] = v end
        v = all
      end
      parts[i] = key .. "=" .. py(v)
    end
    return table.concat(parts, ", ")
  end
  return C
end
--- nn.MaxUnpool2d(kernel_size[, stride = kernel_size[, padding = 0]][, opts]), nn.MaxUnpool1d: F's
L.MaxUnpool2d = unpool_class("MaxUnpool2d", F.max_unpool2d, 2)
L.MaxUnpool1d = unpool_class("MaxUnpool1d", F.max_unpool1d, 1)
L.MaxUnpool3d = unpool_class("MaxUnpool3d", F.max_unpool3d, 3)
local function lp_class(name, fn)
  local C = Module:extend(name, { "norm_type", "kernel_size" })
  function C:init(norm_type, kernel_size, ...)
    check.number(norm_type, name, "norm_type")
    if kernel_size == nil then check.fail(name, "missing required argument 'kernel_size'") end
    local o = check.positional(name, { "stride", "ceil_mode" }, { stride = "integer|table", ceil_mode = "boolean" }, ...)
    self.norm_type, self.kernel_size, self.stride, self.ceil_mode = norm_type, kernel_size, o.stride, o.ceil_mode == true
  end
  function C:forward(x) return fn(x, self.norm_type, self.kernel_size, self.stride, self.ceil_mode) end
  C._repr = { "norm_type", "kernel_size", "stride", "ceil_mode" }
  return C
end
--- nn.LPPool2d(norm_type, kernel_size[, stride = kernel_size[, ceil_mode = false]][, opts]), nn.LPPool1d
L.LPPool2d = lp_class("LPPool2d", F.lp_pool2d)
L.LPPool1d = lp_class("LPPool1d", F.lp_pool1d)
L.LPPool3d = lp_class("LPPool3d", F.lp_pool3d)

--- nn.TripletMarginWithDistanceLoss([{distance_function =, margin = 1, swap = false, reduction = "mean"}]): F's
L.TripletMarginWithDistanceLoss = Module:extend("TripletMarginWithDistanceLoss")
function L.TripletMarginWithDistanceLoss:init(opts)
  local o = check.options(opts, "TripletMarginWithDistanceLoss", { distance_function = "function|table", margin = "number",
    swap = "boolean", reduction = "string" })
  self.distance_function, self.margin, self.swap, self.reduction = o.distance_function, o.margin or 1, o.swap or false,
    o.reduction or "mean"
  check.one_of(self.reduction, "TripletMarginWithDistanceLoss", "reduction", { "mean", "sum", "none" })
  if self.margin <= 0 then check.fail("TripletMarginWithDistanceLoss", "margin must be greater than 0, got %s", tostring(self.margin)) end
end
function L.TripletMarginWithDistanceLoss:forward(a, p, n)
  return F.triplet_margin_with_distance_loss(a, p, n, { distance_function = self.distance_function, margin = self.margin,
    swap = self.swap, reduction = self.reduction })
end

return L
