-- The 3-D (volumetric) convolutions and pooling, and the 1-D transposed
-- convolution, as functions of wick.nn.functional. Each is composed from the
-- 2-D op of the same name, so autograd (double backward where the 2-D op has
-- it), dtypes and devices come with it:
-- - conv3d: the depth window unfolded into channels, one conv2d over every
--   output depth (weight [O, C/g, kD, kH, kW] is conv2d's [O, C/g * kD, kH, kW]);
-- - conv_transpose3d: one conv_transpose2d per input depth, whose kD outputs
--   are added into their output depths (index_add);
-- - pooling: a 2-D pass over each (H, W) plane, then a second 2-D pass over
--   the [D, Ho * Wo] plane with a {kD, 1} window (max and sums are separable,
--   and so are adaptive bins); indices as PyTorch's, flat over D * H * W.
local wick = require("wick")
local check = require("wick.argcheck")
local common = require("wick.nn.common")
local F = require("wick.nn.functional")

local V = {}
local floor, max, min = math.floor, math.max, math.min

-- {d, h, w} of an integer or a table of three (PyTorch's _triple), checked
local function triple(v, fn, name, lo)
  if type(v) == "number" then v = { v, v, v } end
  if type(v) ~= "table" or getmetatable(v) ~= nil then check.expected(fn, name, "an integer or a {d, h, w} table", v) end
  if #v ~= 3 then check.fail(fn, "%s must be an integer or a {d, h, w} table, got a table of %d entries", name, #v) end
  for i = 1, 3 do check.int(v[i], fn, name, lo) end
  return { v[1], v[2], v[3] }
end
V._triple = triple

-- x as [N, C, D, H, W] (an unbatched [C, D, H, W] gets N = 1), and whether it was unbatched
local function batched5(x, fn)
  check.tensor(x, fn, "input")
  if x:dim() ~= 4 and x:dim() ~= 5 then
    check.fail(fn, "expected 4-D (unbatched) or 5-D input [N, C, D, H, W], got %d-D", x:dim())
  end
  if x:dim() == 4 then return x:unsqueeze(1), true end
  return x, false
end
local function unbatch(y, unbatched) return unbatched and y:squeeze(1) or y end

-- ---- convolution ----

local CONV3D = { stride = "integer|table", padding = "integer|table|string", dilation = "integer|table", groups = "integer" }

-- x padded for conv3d's padding (a number, a triple, "valid", "same"): the
-- padded input and the {h, w} padding left for conv2d
local function conv3d_padding(x, padding, k, s, d, fn)
  if padding == "valid" then return x, { 0, 0 } end
  if padding == "same" then
    for i = 1, 3 do
      if s[i] ~= 1 then check.fail(fn, "padding='same' is not supported for strided convolutions") end
    end
    local pads = {}
    for i = 3, 1, -1 do -- F.pad's order: the last dim first
      local total = d[i] * (k[i] - 1)
      pads[#pads + 1] = floor(total / 2)
      pads[#pads + 1] = total - floor(total / 2)
    end
    return F.pad(x, pads), { 0, 0 }
  end
  if type(padding) == "string" then check.fail(fn, "padding must be an integer, a {d, h, w} table, 'valid' or 'same', got '%s'", padding) end
  local p = triple(padding, fn, "padding", 0)
  if p[1] > 0 then x = F.pad(x, { 0, 0, 0, 0, p[1], p[1] }) end
  return x, { p[2], p[3] }
end

-- the windows of x [N, C, D, H, W] along D (size k, stride s, dilation d) as
-- conv2d's batch and channels: [N * Do, C * k, H, W] (channel c * k + kd)
local function depth_windows(x, k, s, d)
  local N, C, D, H, W = x:size(1), x:size(2), x:size(3), x:size(4), x:size(5)
  local span = d * (k - 1) + 1
  local Do = floor((D - span) / s) + 1
  local u = x:unfold(3, span, s) -- [N, C, Do, H, W, span]
  if d > 1 then u = u:index_select(6, wick.arange(1, span + 1, d, { dtype = "int64", device = x.device })) end
  return u:permute(1, 3, 2, 6, 4, 5):reshape(N * Do, C * k, H, W), Do
end

--- F.conv3d(input, weight[, bias[, stride[, padding[, dilation[, groups]]]]][, opts]): PyTorch's
--- order; input [N, C, D, H, W] (or [C, D, H, W]), weight [out, C / groups, kD, kH, kW]
function V.conv3d(x, weight, bias, ...)
  local fn = "conv3d"
  local o = check.positional(fn, { "stride", "padding", "dilation", "groups" }, CONV3D, ...)
  local unbatched
  x, unbatched = batched5(x, fn)
  check.tensor(weight, fn, "weight")
  if weight:dim() ~= 5 then check.fail(fn, "weight must be 5-D [out, in / groups, kD, kH, kW], got %d-D", weight:dim()) end
  local s = triple(o.stride or 1, fn, "stride", 1)
  local d = triple(o.dilation or 1, fn, "dilation", 1)
  local g = check.opt_int(o.groups, fn, "groups", 1, 1)
  local O, k = weight:size(1), { weight:size(3), weight:size(4), weight:size(5) }
  if x:size(2) ~= weight:size(2) * g then
    check.fail(fn, "expected input[%s] to have %d channels (weight of size [%s], groups=%d), but got %d channels instead",
      table.concat(x:size(), ", "), weight:size(2) * g, table.concat(weight:size(), ", "), g, x:size(2))
  end
  if O % g ~= 0 then check.fail(fn, "out_channels (%d) must be divisible by groups (%d)", O, g) end
  local hw_pad
  x, hw_pad = conv3d_padding(x, o.padding or 0, k, s, d, fn)
  if x:size(3) < d[1] * (k[1] - 1) + 1 then
    check.fail(fn, "input depth %d (padded) is smaller than the kernel's extent %d", x:size(3), d[1] * (k[1] - 1) + 1)
  end
  local N = x:size(1)
  local cols, Do = depth_windows(x, k[1], s[1], d[1])
  local w2 = weight:reshape(O, weight:size(2) * k[1], k[2], k[3])
  local y = F.conv2d(cols, w2, bias, { stride = { s[2], s[3] }, padding = hw_pad, dilation = { d[2], d[3] }, groups = g })
  y = y:view(N, Do, O, y:size(3), y:size(4)):permute(1, 3, 2, 4, 5):contiguous()
  return unbatch(y, unbatched)
end

local CONV_T3D = { stride = "integer|table", padding = "integer|table", output_padding = "integer|table",
  groups = "integer", dilation = "integer|table" }

--- F.conv_transpose3d(input, weight[, bias[, stride[, padding[, output_padding[, groups[, dilation]]]]]][, opts]):
--- PyTorch's order; weight [in, out / groups, kD, kH, kW]
function V.conv_transpose3d(x, weight, bias, ...)
  local fn = "conv_transpose3d"
  local o = check.positional(fn, { "stride", "padding", "output_padding", "groups", "dilation" }, CONV_T3D, ...)
  local unbatched
  x, unbatched = batched5(x, fn)
  check.tensor(weight, fn, "weight")
  if weight:dim() ~= 5 then check.fail(fn, "weight must be 5-D [in, out / groups, kD, kH, kW], got %d-D", weight:dim()) end
  local s = triple(o.stride or 1, fn, "stride", 1)
  local p = triple(o.padding or 0, fn, "padding", 0)
  local op = triple(o.output_padding or 0, fn, "output_padding", 0)
  local d = triple(o.dilation or 1, fn, "dilation", 1)
  local g = check.opt_int(o.groups, fn, "groups", 1, 1)
  for i = 1, 3 do
    if op[i] >= max(s[i], d[i]) then
      check.fail(fn, "output padding must be smaller than either stride or dilation, but got output_padding=%s, stride=%s, dilation=%s",
        table.concat(op, ","), table.concat(s, ","), table.concat(d, ","))
    end
  end
  local N, C, D = x:size(1), x:size(2), x:size(3)
  if weight:size(1) ~= C then
    check.fail(fn, "expected input[%s] to have %d channels (weight of size [%s]), but got %d channels instead",
      table.concat(x:size(), ", "), weight:size(1), table.concat(weight:size(), ", "), C)
  end
  if C % g ~= 0 then check.fail(fn, "in_channels (%d) must be divisible by groups (%d)", C, g) end
  local kD, O = weight:size(3), weight:size(2) * g
  local full = (D - 1) * s[1] + d[1] * (kD - 1) + 1 + op[1]
  local Dout = full - 2 * p[1]
  if Dout < 1 or x:numel() == 0 and N * C > 0 then
    check.fail(fn, "the output depth would be %d: the input is too small for this padding", Dout)
  end
  -- every input depth through conv_transpose2d, its kD output planes as channels o * kD + kd
  local planes = x:permute(1, 3, 2, 4, 5):reshape(N * D, C, x:size(4), x:size(5))
  local w2 = weight:reshape(C, weight:size(2) * kD, weight:size(4), weight:size(5))
  local z = F.conv_transpose2d(planes, w2, nil, { stride = { s[2], s[3] }, padding = { p[2], p[3] },
    output_padding = { op[2], op[3] }, groups = g, dilation = { d[2], d[3] } })
  local Ho, Wo = z:size(3), z:size(4)
  z = z:view(N, D, O, kD, Ho, Wo):permute(1, 2, 4, 3, 5, 6):reshape(N, D * kD, O, Ho, Wo)
  -- input depth i, kernel depth kd lands on output depth i * s + kd * d (before the padding is cut)
  local at = {}
  for i = 0, D - 1 do
    for kd = 0, kD - 1 do at[#at + 1] = i * s[1] + kd * d[1] + 1 end
  end
  local where = wick.tensor(at, { dtype = "int64", device = x.device })
  local y = wick.zeros({ N, full, O, Ho, Wo }, { dtype = z.dtype, device = z.device }):index_add(2, where, z)
  y = y:narrow(2, p[1] + 1, Dout):permute(1, 3, 2, 4, 5):contiguous()
  if bias ~= nil then
    check.tensor(bias, fn, "bias")
    y = y + bias:view(1, O, 1, 1, 1)
  end
  return unbatch(y, unbatched)
end

--- F.conv_transpose1d(input, weight[, bias[, stride[, padding[, output_padding[, groups[, dilation]]]]]][, opts]):
--- input [N, C, L] (or [C, L]), weight [in, out / groups, k]: conv_transpose2d over a height of 1
function V.conv_transpose1d(x, weight, bias, ...)
  local fn = "conv_transpose1d"
  local o = check.positional(fn, { "stride", "padding", "output_padding", "groups", "dilation" }, CONV_T3D, ...)
  check.tensor(x, fn, "input")
  if x:dim() ~= 2 and x:dim() ~= 3 then check.fail(fn, "expected 2-D (unbatched) or 3-D input, got %d-D", x:dim()) end
  check.tensor(weight, fn, "weight")
  if weight:dim() ~= 3 then check.fail(fn, "weight must be 3-D [in, out / groups, k], got %d-D", weight:dim()) end
  local channels = x:size(x:dim() - 1)
  if channels ~= weight:size(1) then -- (said in 1-D shapes, PyTorch's words; VITS' Generator's self.ups[i](x))
    check.fail(fn, "Given transposed=1, weight of size %s, expected input%s to have %d channels, but got %d channels instead",
      tostring(weight.shape), tostring(x.shape), weight:size(1), channels)
  end
  local function one(v, name, lo, default)
    if type(v) == "table" and #v == 1 and getmetatable(v) == nil then v = v[1] end -- PyTorch's (3,)
    return check.int(v == nil and default or v, fn, name, lo)
  end
  local o2 = { stride = { 1, one(o.stride, "stride", 1, 1) }, padding = { 0, one(o.padding, "padding", 0, 0) },
    output_padding = { 0, one(o.output_padding, "output_padding", 0, 0) }, groups = o.groups,
    dilation = { 1, one(o.dilation, "dilation", 1, 1) } }
  local ok, y = pcall(F.conv_transpose2d, x:unsqueeze(-2), weight:unsqueeze(3), bias, o2)
  if not ok then error((tostring(y):gsub("conv_transpose2d:", fn .. " (as conv_transpose2d):", 1)), 0) end
  return y:squeeze(-2)
end

-- ---- pooling ----

local POOL_ARGS = { "input", "kernel_size" }

-- y [N, C * D, Ho, Wo] of a 2-D pass, pooled over D by op with a {k, 1}
-- window: [N, C, Do, Ho, Wo]; with indices i1 (flat over H * W) and the
-- second pass's (flat over D * Ho * Wo), PyTorch's flat D * H * W indices
local function depth_pass(op, y, i1, N, C, D, H, W, opts)
  local Ho, Wo = y:size(3), y:size(4)
  local z, i2 = op(y:reshape(N, C, D, Ho * Wo), opts)
  local Do = z:size(3)
  z = z:view(N, C, Do, Ho, Wo)
  if not i1 then return z end
  local plane = Ho * Wo
  local depth = (i2 - 1):div(plane, { rounding_mode = "floor" }) -- the depth each maximum came from
  local hw = i1:reshape(N, C, D * plane):gather(3, i2:reshape(N, C, Do * plane))
  return z, (depth:reshape(N, C, Do * plane) * (H * W) + hw):view(N, C, Do, Ho, Wo)
end

-- a pool's kernel, stride (the kernel's when not given) and padding, as {d, h, w}
local function window(fn, kernel_size, o)
  local k = triple(kernel_size, fn, "kernel_size", 1)
  local stride = o.stride
  if stride == nil or (type(stride) == "table" and #stride == 0) then stride = k end
  return k, triple(stride, fn, "stride", 1), triple(o.padding or 0, fn, "padding", 0)
end

-- PyTorch's check of a 3-D pool's output, said in the input's own sizes (S3D's AvgPool3d((2, 7, 7))
-- on a small clip), before the two 2-D passes that compute it
local function check_pool_output(fn, x, k, s, p, d, ceil_mode)
  local sizes, outs, small = { x:size(2) }, { x:size(2) }, false
  for i = 1, 3 do
    local L = x:size(2 + i)
    local span = L + 2 * p[i] - d[i] * (k[i] - 1) - 1 + (ceil_mode and s[i] - 1 or 0)
    local out = floor(span / s[i]) + 1
    if ceil_mode and (out - 1) * s[i] >= L + p[i] then out = out - 1 end
    sizes[i + 1], outs[i + 1], small = L, out, small or out < 1
  end
  if small then
    check.fail(fn, "Given input size: (%s). Calculated output size: (%s). Output size is too small",
      table.concat(sizes, "x"), table.concat(outs, "x"))
  end
end

local MAX3D = { stride = "integer|table", padding = "integer|table", dilation = "integer|table",
  ceil_mode = "boolean", return_indices = "boolean" }
local function max_pool3d(x, kernel_size, ...)
  local fn = "max_pool3d"
  local o = check.positional(fn, { "stride", "padding", "dilation", "ceil_mode", "return_indices" }, MAX3D, ...)
  local unbatched
  x, unbatched = batched5(x, fn)
  local k, s, p = window(fn, kernel_size, o)
  local d = triple(o.dilation or 1, fn, "dilation")
  if d[1] <= 0 or d[2] <= 0 or d[3] <= 0 then -- (PyTorch's messages, its order T, H, W)
    check.fail(fn, "dilation should be greater than zero, but got dilationT: %d dilationH: %d dilationW: %d", d[1], d[2], d[3])
  end
  if p[1] > floor(k[1] / 2) or p[2] > floor(k[2] / 2) or p[3] > floor(k[3] / 2) then
    check.fail(fn, "pad should be smaller than or equal to half of kernel size, but got kT: %d kW: %d kH: %d padT: %d padW: %d padH: %d",
      k[1], k[3], k[2], p[1], p[3], p[2])
  end
  check_pool_output(fn, x, k, s, p, d, o.ceil_mode)
  local N, C, D, H, W = x:size(1), x:size(2), x:size(3), x:size(4), x:size(5)
  local ri = o.return_indices == true
  local function pass(t, kk, ss, pp, dd)
    local ok, a, b = pcall(F.max_pool2d, t, kk, { stride = ss, padding = pp, dilation = dd, ceil_mode = o.ceil_mode,
      return_indices = ri })
    if not ok then error((tostring(a):gsub("max_pool2d:", fn .. " (as max_pool2d):", 1)), 0) end
    return a, b
  end
  local y, i1 = pass(x:reshape(N, C * D, H, W), { k[2], k[3] }, { s[2], s[3] }, { p[2], p[3] }, { d[2], d[3] })
  local z, idx = depth_pass(function(t) return pass(t, { k[1], 1 }, { s[1], 1 }, { p[1], 0 }, { d[1], 1 }) end,
    y, i1, N, C, D, H, W)
  if ri then return unbatch(z, unbatched), unbatch(idx, unbatched) end
  return unbatch(z, unbatched)
end
--- F.max_pool3d(input, kernel_size[, stride[, padding[, dilation[, ceil_mode[, return_indices]]]]]) (or an
--- options table): input [N, C, D, H, W] (or [C, D, H, W]); indices 1-based, flat over D * H * W
function V.max_pool3d(...) return max_pool3d(common.required("max_pool3d", POOL_ARGS, ...)) end

-- how many positions of each window along one dim a divisor counts: PyTorch's
-- avg_pool3d (the window cut at the padded end; without the padding when not
-- count_include_pad)
local function window_counts(L, k, s, p, out, include_pad)
  local c = {}
  for i = 0, out - 1 do
    local start = i * s - p
    local stop = min(start + k, L + p)
    if not include_pad then start, stop = max(start, 0), min(stop, L) end
    c[i + 1] = stop - start
  end
  return c
end

local AVG3D = { stride = "integer|table", padding = "integer|table", ceil_mode = "boolean",
  count_include_pad = "boolean", divisor_override = "integer" }
local function avg_pool3d(x, kernel_size, ...)
  local fn = "avg_pool3d"
  local o = check.positional(fn, { "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override" }, AVG3D, ...)
  local unbatched
  x, unbatched = batched5(x, fn)
  local k, s, p = window(fn, kernel_size, o)
  if o.divisor_override ~= nil then check.int(o.divisor_override, fn, "divisor_override", 1) end
  check_pool_output(fn, x, k, s, p, { 1, 1, 1 }, o.ceil_mode)
  local N, C, D, H, W = x:size(1), x:size(2), x:size(3), x:size(4), x:size(5)
  -- two passes of averages over padded windows (PyTorch's count_include_pad
  -- divisors, the window cut at the padded end), rescaled to the divisor asked for
  local function pass(t, kk, ss, pp)
    local ok, a = pcall(F.avg_pool2d, t, kk, { stride = ss, padding = pp, ceil_mode = o.ceil_mode, count_include_pad = true })
    if not ok then error((tostring(a):gsub("avg_pool2d:", fn .. " (as avg_pool2d):", 1)), 0) end
    return a
  end
  local y = pass(x:reshape(N, C * D, H, W), { k[2], k[3] }, { s[2], s[3] }, { p[2], p[3] })
  local z = depth_pass(function(t) return pass(t, { k[1], 1 }, { s[1], 1 }, { p[1], 0 }) end, y, nil, N, C, D, H, W)
  local include = o.count_include_pad ~= false
  if include and not o.divisor_override then return unbatch(z, unbatched) end
  local opts = { dtype = z.dtype, device = z.device }
  local function volume(with_pad)
    local cd = wick.tensor(window_counts(D, k[1], s[1], p[1], z:size(3), with_pad), opts)
    local ch = wick.tensor(window_counts(H, k[2], s[2], p[2], z:size(4), with_pad), opts)
    local cw = wick.tensor(window_counts(W, k[3], s[3], p[3], z:size(5), with_pad), opts)
    return cd:view(-1, 1, 1) * ch:view(1, -1, 1) * cw:view(1, 1, -1)
  end
  local divisor = o.divisor_override or volume(include)
  return unbatch(z * (volume(true) / divisor), unbatched)
end
--- F.avg_pool3d(input, kernel_size[, stride[, padding[, ceil_mode[, count_include_pad[, divisor_override]]]]])
--- (or an options table): input [N, C, D, H, W] (or [C, D, H, W])
function V.avg_pool3d(...) return avg_pool3d(common.required("avg_pool3d", POOL_ARGS, ...)) end

-- {d, h, w} of an adaptive output size (nil keeps that size)
local function out3(size, x, fn)
  if type(size) == "number" then size = { size, size, size } end
  if type(size) ~= "table" then check.expected(fn, "output_size", "an integer or a {d, h, w} table", size) end
  local r = {}
  for i = 1, 3 do
    local v = size[i] -- (nil or false keeps that size: Python's None)
    r[i] = (v == nil or v == false) and x:size(2 + i) or check.int(v, fn, "output_size", 1)
  end
  return r
end

local function adaptive3d(fn, op)
  return function(x, ...)
    local unbatched
    x, unbatched = batched5(x, fn)
    local output_size, ri = F._adaptive_args(fn, ...)
    if type(ri) == "table" then ri = ri.return_indices end
    local sz = out3(output_size, x, fn)
    local N, C, D, H, W = x:size(1), x:size(2), x:size(3), x:size(4), x:size(5)
    local y, i1 = op(x:reshape(N, C * D, H, W), { sz[2], sz[3] }, ri or false)
    local z, idx = depth_pass(function(t) return op(t, { sz[1], sz[2] * sz[3] }, ri or false) end, y, ri and i1, N, C, D, H, W)
    if ri then return unbatch(z, unbatched), unbatch(idx, unbatched) end
    return unbatch(z, unbatched)
  end
end
--- F.adaptive_avg_pool3d(input, output_size), F.adaptive_max_pool3d(input, output_size[, return_indices]):
--- PyTorch's adaptive bins over D, H and W (nil in output_size keeps that size)
V.adaptive_avg_pool3d = adaptive3d("adaptive_avg_pool3d", function(t, size) return F.adaptive_avg_pool2d(t, size) end)
V.adaptive_max_pool3d = adaptive3d("adaptive_max_pool3d", function(t, size, ri)
  return F.adaptive_max_pool2d(t, size, { return_indices = ri })
end)

return V
