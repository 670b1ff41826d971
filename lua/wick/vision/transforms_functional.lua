-- wick.vision.transforms.functional: torchvision's transforms.v2.functional on
-- tensor images, uint8 or floating, of shape (..., C, H, W) (wick has no PIL).
-- Each op follows torchvision's kernel step by step (its float32 arithmetic,
-- its rounding back to integers), so results are torchvision's. Crop offsets
-- (top, left, erase's i, j) are pixel offsets from the top left corner, 0 the
-- first row, torchvision's numbers, as box coordinates are.
-- Loaded by wick.vision.transforms.
local wick = require("wick")
local check = require("wick.argcheck")
local F = wick.nn.functional

local floor, abs, max, min = math.floor, math.abs, math.max, math.min
local M = {}

local function is_tensor(v) return check.is_tensor(v) end
local function pyround(x) -- Python's round(): halves to even
  local f = floor(x)
  local d = x - f
  if d > 0.5 or (d == 0.5 and f % 2 == 1) then return f + 1 end
  return f
end
M._pyround = pyround
local function is_int(v) return type(v) == "number" and v == floor(v) and v == v and abs(v) < 2 ^ 53 end

-- the image argument: a tensor of at least `dims` dims
local function image_arg(img, fn, dims)
  dims = dims or 3
  if not is_tensor(img) then check.fail(fn, "img should be a Tensor image. Got %s", check.describe(img)) end
  if img:dim() < dims then
    check.fail(fn, "expected a tensor image of shape (..., %s), got %s (%d dims)", dims == 3 and "C, H, W" or "H, W",
      tostring(img.shape), img:dim())
  end
  return img
end
M._image_arg = image_arg

local MAX_VALUE = { uint8 = 255, int8 = 127, int16 = 32767, uint16 = 65535, int32 = 2147483647, int64 = 9223372036854775807 }
local function max_value(dtype) return MAX_VALUE[dtype] or 1 end
M._max_value = max_value
local VALUE_BITS = { uint8 = 8, int8 = 7, int16 = 15, uint16 = 16, int32 = 31, int64 = 63 }
local function is_float_dtype(d) return d == "float32" or d == "float64" or d == "float16" or d == "bfloat16" end

local function sizes(t)
  local s = {}
  for i = 1, t:dim() do s[i] = t:size(i) end
  return s
end
-- t's shape with its last `n` dims replaced by the values in `tail`
local function with_tail(shape, n, tail)
  local s = {}
  for i = 1, #shape - n do s[i] = shape[i] end
  for _, v in ipairs(tail) do s[#s + 1] = v end
  return s
end
-- (B, C, H, W) view of (..., C, H, W)
local function as4d(img)
  local c, h, w = img:size(-3), img:size(-2), img:size(-1)
  return img:reshape({ -1, c, h, w })
end

-- ---------------------------------------------------------------- metadata

--- F.get_dimensions(img): {C, H, W} (a 2-D image has one channel)
function M.get_dimensions(img)
  image_arg(img, "get_dimensions", 2)
  if img:dim() == 2 then return { 1, img:size(1), img:size(2) } end
  return { img:size(-3), img:size(-2), img:size(-1) }
end
--- F.get_num_channels(img)
function M.get_num_channels(img) return M.get_dimensions(img)[1] end
--- F.get_size(img): {H, W}; F.get_image_size(img): {W, H} (torchvision's v1 order)
function M.get_size(img)
  local d = M.get_dimensions(img)
  return { d[2], d[3] }
end
function M.get_image_size(img)
  local d = M.get_dimensions(img)
  return { d[3], d[2] }
end

-- ---------------------------------------------------------------- dtype

--- F.to_dtype(img[, dtype = "float32"[, scale = false]]): the image in dtype, its values rescaled
--- between the ranges ([0, 1] for floating dtypes, [0, max] for integers) when scale is true
function M.to_dtype(img, dtype, scale)
  local fn = "to_dtype"
  if not is_tensor(img) then check.fail(fn, "expected a Tensor, got %s", check.describe(img)) end
  dtype = dtype or "float32"
  if type(dtype) ~= "string" or not (is_float_dtype(dtype) or VALUE_BITS[dtype] or dtype == "bool") then
    check.fail(fn, "expected a dtype name for argument 'dtype', got %s", check.describe(dtype))
  end
  if img.dtype == dtype then return img end
  if not scale then return img:to(dtype) end
  local fin, fout = img:is_floating_point(), is_float_dtype(dtype)
  if fin then
    if fout then return img:to(dtype) end
    if (img.dtype == "float32" and (dtype == "int32" or dtype == "int64")) or (img.dtype == "float64" and dtype == "int64") then
      check.fail(fn, "The conversion from %s to %s cannot be performed safely.", img.dtype, dtype)
    end
    return img:mul(max_value(dtype) + 1.0 - 1e-3):to(dtype)
  end
  if not VALUE_BITS[img.dtype] then check.fail(fn, "Number of value bits is only defined for integer dtypes, but got %s.", img.dtype) end
  if fout then return img:to(dtype):mul_(1.0 / max_value(img.dtype)) end
  local bin, bout = VALUE_BITS[img.dtype], VALUE_BITS[dtype]
  local shift = abs(bin - bout)
  if bin > bout then
    if img.dtype == "uint16" then return (img / 2 ^ shift):to(dtype) end
    return img:bitwise_right_shift(shift):to(dtype)
  end
  if dtype == "uint16" then return img:to(dtype) * 2 ^ shift end
  return img:to(dtype):bitwise_left_shift(shift)
end
--- F.convert_image_dtype(img[, dtype = "float32"]): to_dtype with scale = true (torchvision's deprecated name)
function M.convert_image_dtype(img, dtype) return M.to_dtype(img, dtype or "float32", true) end

-- ---------------------------------------------------------------- geometry

--- F.hflip(img), F.vflip(img) (also horizontal_flip, vertical_flip)
function M.hflip(img) return image_arg(img, "hflip", 2):flip(-1) end
function M.vflip(img) return image_arg(img, "vflip", 2):flip(-2) end
M.horizontal_flip, M.vertical_flip = M.hflip, M.vflip

-- padding as {left, right, top, bottom} from an int or 1, 2 or 4 numbers (left, top, right, bottom)
local function parse_padding(fn, padding)
  if is_int(padding) then return { padding, padding, padding, padding } end
  if type(padding) == "table" and not is_tensor(padding) then
    for i = 1, #padding do
      if not is_int(padding[i]) then check.fail(fn, "`padding` should be an integer or tuple or list of integers, but got %s", check.describe(padding[i])) end
    end
    if #padding == 1 then return { padding[1], padding[1], padding[1], padding[1] } end
    if #padding == 2 then return { padding[1], padding[1], padding[2], padding[2] } end
    if #padding == 4 then return { padding[1], padding[3], padding[2], padding[4] } end
    check.fail(fn, "Padding must be an int or a 1, 2, or 4 element tuple or list. Found %d", #padding)
  end
  check.fail(fn, "`padding` should be an integer or tuple or list of integers, but got %s", check.describe(padding))
end
M._parse_padding = parse_padding

-- 0-based index lists for torchvision's symmetric padding of one dim of size n
local function symmetric_index(n, before, after)
  local idx = {}
  for i = before - 1, 0, -1 do idx[#idx + 1] = i end
  for i = 0, n - 1 do idx[#idx + 1] = i end
  for i = 1, after do idx[#idx + 1] = n - i end
  for k, v in ipairs(idx) do idx[k] = (v % n) + 1 end -- (torch's negative index: from the end, wrapped)
  return idx
end

-- torch padding {left, right, top, bottom} with a scalar fill
local function pad_scalar(img, p, fill, mode)
  local shape = sizes(img)
  local x = as4d(img)
  if mode == "constant" then
    x = F.pad(x, p, "constant", fill)
  elseif mode == "edge" or mode == "reflect" then
    local dtype = x.dtype
    local cast = not x:is_floating_point()
    if cast then x = x:float() end
    x = F.pad(x, p, mode == "edge" and "replicate" or "reflect")
    if cast then x = x:to(dtype) end
  else -- symmetric
    if p[1] < 0 or p[2] < 0 or p[3] < 0 or p[4] < 0 then
      local cl, cr, ct, cb = max(-p[1], 0), max(-p[2], 0), max(-p[3], 0), max(-p[4], 0)
      x = x:narrow(3, ct + 1, x:size(3) - ct - cb):narrow(4, cl + 1, x:size(4) - cl - cr)
      p = { max(p[1], 0), max(p[2], 0), max(p[3], 0), max(p[4], 0) }
    end
    local h, w = x:size(3), x:size(4)
    if (p[3] > 0 or p[4] > 0) and h > 0 then
      x = x:index_select(3, wick.tensor(symmetric_index(h, p[3], p[4]), { dtype = "int64", device = x.device }))
    end
    if (p[1] > 0 or p[2] > 0) and w > 0 then
      x = x:index_select(4, wick.tensor(symmetric_index(w, p[1], p[2]), { dtype = "int64", device = x.device }))
    end
  end
  return x:reshape(with_tail(shape, 2, { x:size(3), x:size(4) }))
end

local PAD_MODES = { constant = true, edge = true, reflect = true, symmetric = true }
--- F.pad(img, padding[, fill = 0[, padding_mode = "constant"]]): padding an int (all sides), {lr, tb} or
--- {left, top, right, bottom}; fill a number or one per channel (constant mode); modes "constant", "edge",
--- "reflect", "symmetric"
function M.pad(img, padding, fill, padding_mode)
  local fn = "pad"
  image_arg(img, fn, 2)
  local p = parse_padding(fn, padding)
  padding_mode = padding_mode or "constant"
  if not PAD_MODES[padding_mode] then
    check.fail(fn, "`padding_mode` should be either `'constant'`, `'edge'`, `'reflect'` or `'symmetric'`, but got `'%s'`.",
      tostring(padding_mode))
  end
  if fill == nil then fill = 0 end
  if type(fill) == "table" and #fill == 1 then fill = fill[1] end
  local squeeze = img:dim() == 2
  if squeeze then img = img:unsqueeze(1) end
  local out
  if type(fill) == "number" then
    out = pad_scalar(img, p, fill, padding_mode)
  elseif type(fill) == "table" then
    if padding_mode ~= "constant" then check.fail(fn, "Padding mode '%s' is not supported if fill is not scalar", padding_mode) end
    out = pad_scalar(img, p, 0, "constant")
    local v = wick.tensor(fill):to(out.dtype):reshape({ -1, 1, 1 })
    local H, W = out:size(-2), out:size(-1)
    local left, right, top, bottom = p[1], p[2], p[3], p[4]
    if top > 0 then out:narrow(-2, 1, top):copy_(v:expand_as(out:narrow(-2, 1, top))) end
    if left > 0 then out:narrow(-1, 1, left):copy_(v:expand_as(out:narrow(-1, 1, left))) end
    if bottom > 0 then out:narrow(-2, H - bottom + 1, bottom):copy_(v:expand_as(out:narrow(-2, H - bottom + 1, bottom))) end
    if right > 0 then out:narrow(-1, W - right + 1, right):copy_(v:expand_as(out:narrow(-1, W - right + 1, right))) end
  else
    check.fail(fn, "fill should be a number or a table of numbers, got %s", check.describe(fill))
  end
  if squeeze then out = out:squeeze(1) end
  return out
end

-- img[..., a:b, c:d] with Python's clamped slices (0-based, end exclusive)
local function slice(img, top, bottom, left, right)
  local h, w = img:size(-2), img:size(-1)
  top, bottom = min(max(top, 0), h), min(max(bottom, 0), h)
  left, right = min(max(left, 0), w), min(max(right, 0), w)
  return img:narrow(-2, top + 1, max(bottom - top, 0)):narrow(-1, left + 1, max(right - left, 0))
end

local function int_arg(v, fn, name)
  if not is_int(v) then check.expected(fn, name, "an integer", v) end
  return v
end

--- F.crop(img, top, left, height, width): the window of the image at pixel offset (top, left); the parts
--- outside the image are zeros
function M.crop(img, top, left, height, width)
  local fn = "crop"
  image_arg(img, fn, 2)
  int_arg(top, fn, "top"); int_arg(left, fn, "left"); int_arg(height, fn, "height"); int_arg(width, fn, "width")
  if height < 0 or width < 0 then check.fail(fn, "expected a non-negative height and width, got %d and %d", height, width) end
  local h, w = img:size(-2), img:size(-1)
  local right, bottom = left + width, top + height
  if left < 0 or top < 0 or right > w or bottom > h then
    local part = slice(img, max(top, 0), bottom, max(left, 0), right)
    local p = { max(min(right, 0) - left, 0), max(right - max(w, left), 0), max(min(bottom, 0) - top, 0), max(bottom - max(h, top), 0) }
    local squeeze = part:dim() == 2
    if squeeze then part = part:unsqueeze(1) end
    local out = pad_scalar(part, p, 0, "constant")
    return squeeze and out:squeeze(1) or out
  end
  return slice(img, top, bottom, left, right)
end

-- size as {h, w} from an int or 1 or 2 numbers
local function size_pair(fn, size, name)
  if is_int(size) then return { size, size } end
  if type(size) == "table" and not is_tensor(size) and (#size == 1 or #size == 2) then
    for i = 1, #size do int_arg(size[i], fn, name) end
    return #size == 1 and { size[1], size[1] } or { size[1], size[2] }
  end
  check.fail(fn, "Please provide only two dimensions (h, w) for %s, got %s", name, check.describe(size))
end
M._size_pair = size_pair

--- F.center_crop(img, output_size): the central window of output_size (an int or {h, w}), zero-padded
--- where larger than the image
function M.center_crop(img, output_size)
  local fn = "center_crop"
  image_arg(img, fn, 2)
  local s = size_pair(fn, output_size, "output_size")
  local ch, cw = s[1], s[2]
  if img:numel() == 0 then return img:reshape(with_tail(sizes(img), 2, { ch, cw })) end
  local ih, iw = img:size(-2), img:size(-1)
  if ch > ih or cw > iw then
    local p = { cw > iw and floor((cw - iw) / 2) or 0, cw > iw and floor((cw - iw + 1) / 2) or 0,
      ch > ih and floor((ch - ih) / 2) or 0, ch > ih and floor((ch - ih + 1) / 2) or 0 }
    local squeeze = img:dim() == 2
    local x = squeeze and img:unsqueeze(1) or img
    x = pad_scalar(x, p, 0, "constant")
    img = squeeze and x:squeeze(1) or x
    ih, iw = img:size(-2), img:size(-1)
    if cw == iw and ch == ih then return img end
  end
  local top, left = pyround((ih - ch) / 2), pyround((iw - cw) / 2)
  return slice(img, top, top + ch, left, left + cw)
end

-- ---------------------------------------------------------------- resize

local MODES = { nearest = true, ["nearest-exact"] = true, bilinear = true, bicubic = true }
local function interpolation_arg(fn, mode, default)
  if mode == nil then return default end
  if type(mode) == "number" then -- PIL's codes, as torchvision accepts them
    local pil = { [0] = "nearest", [2] = "bilinear", [3] = "bicubic" }
    if pil[mode] then return pil[mode] end
  end
  if type(mode) ~= "string" or not MODES[mode:lower()] then
    check.fail(fn, "interpolation should be one of \"nearest\", \"nearest-exact\", \"bilinear\", \"bicubic\", got %s",
      type(mode) == "string" and ("'" .. mode .. "'") or check.describe(mode))
  end
  return mode:lower()
end
M._interpolation_arg = interpolation_arg

--- the output size of resize: size an int (or {s}) for the smaller edge, {h, w}, or nil with max_size
local function resized_size(fn, h, w, size, max_size)
  if is_int(size) then size = { size } end
  if size ~= nil and (type(size) ~= "table" or is_tensor(size)) then
    check.fail(fn, "size can be an integer, a sequence of one or two integers, or nil, but got %s instead.", check.describe(size))
  end
  if size ~= nil then
    if #size ~= 1 and #size ~= 2 then
      check.fail(fn, "size can be an integer, a sequence of one or two integers, or nil, but got a table of %d instead.", #size)
    end
    for i = 1, #size do
      int_arg(size[i], fn, "size")
      if size[i] <= 0 then check.fail(fn, "expected size values greater than 0, got %d", size[i]) end
    end
    if max_size ~= nil and #size ~= 1 then
      check.fail(fn, "max_size should only be passed if size is None or specifies the length of the smaller edge, "
        .. "i.e. size should be an int or a sequence of length 1 in torchscript mode.")
    end
  end
  if max_size ~= nil then int_arg(max_size, fn, "max_size") end
  local short, long
  if w <= h then short, long = w, h else short, long = h, w end
  local new_short, new_long
  if size == nil then
    if max_size == nil then check.fail(fn, "max_size must be an integer when size is None, but got None instead.") end
    new_short, new_long = floor(max_size * short / long), max_size
  elseif #size == 1 then
    new_short, new_long = size[1], floor(size[1] * long / short)
    if max_size ~= nil then
      if max_size <= size[1] then
        check.fail(fn, "max_size = %d must be strictly greater than the requested size for the smaller edge size = %d", max_size, size[1])
      end
      if new_long > max_size then new_short, new_long = floor(max_size * new_short / new_long), max_size end
    end
  else
    return size[1], size[2]
  end
  if w <= h then return new_long, new_short end
  return new_short, new_long
end
M._resized_size = resized_size

-- PyTorch's uint8 resize along dim d (3 = H, 4 = W) of a (B, C, H, W) uint8 tensor: its fixed-point
-- separable filter (the weights of the antialiased float filter, to 16-bit integers, summed exactly)
local function bicubic_filter(a)
  return function(x)
    x = abs(x)
    if x < 1 then return ((a + 2) * x - (a + 3)) * x * x + 1 end
    if x < 2 then return (((x - 5) * x + 8) * x - 4) * a end
    return 0
  end
end
local function bilinear_filter(x)
  x = abs(x)
  return x < 1 and 1 - x or 0
end
local function uint8_resize_dim(x, d, out_size, mode, antialias)
  local in_size = x:size(d)
  local scale = in_size / out_size
  local interp = mode == "bicubic" and 4 or 2
  local filter = mode == "bicubic" and bicubic_filter(antialias and -0.5 or -0.75) or bilinear_filter
  local aa = antialias and scale >= 1
  local support = aa and (interp / 2) * scale or interp / 2
  local invscale = aa and 1 / scale or 1
  local rows, wmax = {}, 0
  for i = 0, out_size - 1 do
    local center = scale * (i + 0.5)
    local xmin = max(floor(center - support + 0.5), 0)
    local xmax = min(floor(center + support + 0.5), in_size)
    local ws, total = {}, 0
    for j = xmin, xmax - 1 do
      local v = filter((j - center + 0.5) * invscale)
      ws[#ws + 1] = v
      total = total + v
    end
    for k = 1, #ws do
      if total ~= 0 then ws[k] = ws[k] / total end
      if abs(ws[k]) > wmax then wmax = abs(ws[k]) end
    end
    rows[i + 1] = { xmin = xmin, w = ws }
  end
  local prec = 0
  while prec < 22 do
    if floor(0.5 + wmax * 2 ^ (prec + 1)) >= 2 ^ 15 then break end
    prec = prec + 1
  end
  -- the (in_size, out_size) weight matrix from its nonzero entries, a few per output column
  local at_in, at_out, q_of = {}, {}, {}
  for i, r in ipairs(rows) do
    for k, v in ipairs(r.w) do
      local q = v * 2 ^ prec
      q = q < 0 and -floor(-q + 0.5) or floor(q + 0.5) -- (C's cast after +-0.5: toward zero)
      at_in[#at_in + 1], at_out[#at_out + 1], q_of[#q_of + 1] = r.xmin + k, i, q
    end
  end
  local m = wick.zeros({ in_size, out_size }, { dtype = "float64", device = x.device })
  if #q_of > 0 then
    local idx = { wick.tensor(at_in, { dtype = "int64", device = x.device }),
      wick.tensor(at_out, { dtype = "int64", device = x.device }) }
    m:index_put_(idx, wick.tensor(q_of, { dtype = "float64", device = x.device }))
  end
  local xd = x:double()
  if d == 3 then xd = xd:transpose(3, 4) end
  local acc = xd:matmul(m) -- (exact: integers below 2^53)
  acc = acc:add_(2 ^ (prec - 1)):div_(2 ^ prec):floor_():clamp_(0, 255)
  if d == 3 then acc = acc:transpose(3, 4) end
  return acc:to("uint8"):contiguous()
end

--- F.resize(img, size[, interpolation = "bilinear"[, max_size[, antialias = true]]]): size an int (the smaller
--- edge, the aspect kept) or {h, w}; modes "nearest", "nearest-exact", "bilinear", "bicubic"
function M.resize(img, size, interpolation, max_size, antialias)
  local fn = "resize"
  image_arg(img, fn, 3)
  local mode = interpolation_arg(fn, interpolation, "bilinear")
  if antialias == nil then antialias = true end
  if mode ~= "bilinear" and mode ~= "bicubic" then antialias = false end
  local shape = sizes(img)
  local c, h, w = img:size(-3), img:size(-2), img:size(-1)
  local nh, nw = resized_size(fn, h, w, size, max_size)
  if nh * nw > 2 ^ 40 then check.fail(fn, "output size %d x %d is too large", nh, nw) end -- (F.interpolate's bound)
  if nh == h and nw == w then return img end
  if img:numel() == 0 then return img:reshape(with_tail(shape, 3, { c, nh, nw })) end
  local x = img:reshape({ -1, c, h, w })
  local dtype = x.dtype
  if dtype == "uint8" and (mode == "bilinear" or mode == "bicubic") then
    if nw ~= w then x = uint8_resize_dim(x, 4, nw, mode, antialias) end
    if nh ~= h then x = uint8_resize_dim(x, 3, nh, mode, antialias) end
    return x:reshape(with_tail(shape, 3, { c, nh, nw }))
  end
  local ok_dtype = dtype == "float32" or dtype == "float64" or ((mode == "nearest" or mode == "nearest-exact") and dtype == "uint8")
  if not ok_dtype then x = x:float() end
  local opts = { size = { nh, nw }, mode = mode }
  if mode == "bilinear" or mode == "bicubic" then
    opts.align_corners = false
    opts.antialias = antialias
  end
  x = F.interpolate(x, opts)
  if not ok_dtype then
    if mode == "bicubic" and dtype == "uint8" then x = x:clamp_(0, 255) end
    if not is_float_dtype(dtype) then x = x:round_() end
    x = x:to(dtype)
  end
  return x:reshape(with_tail(shape, 3, { c, nh, nw }))
end

--- F.resized_crop(img, top, left, height, width, size[, interpolation = "bilinear"[, antialias = true]]): crop then resize
function M.resized_crop(img, top, left, height, width, size, interpolation, antialias)
  image_arg(img, "resized_crop", 3)
  return M.resize(M.crop(img, top, left, height, width), size, interpolation, nil, antialias)
end

-- ---------------------------------------------------------------- affine

local rad = math.rad
local function inverse_affine_matrix(center, angle, translate, scale, shear)
  local r, sx, sy = rad(angle), rad(shear[1]), rad(shear[2])
  local cx, cy = center[1], center[2]
  local tx, ty = translate[1], translate[2]
  local a = math.cos(r - sy) / math.cos(sy)
  local b = -(a * math.tan(sx) + math.sin(r))
  local c = math.sin(r - sy) / math.cos(sy)
  local d = math.cos(r) - c * math.tan(sx)
  local m = { d / scale, -b / scale, 0.0, -c / scale, a / scale, 0.0 }
  m[3] = m[3] + cx - m[1] * (cx + tx) - m[2] * (cy + ty)
  m[6] = m[6] + cy - m[4] * (cx + tx) - m[5] * (cy + ty)
  return m
end
M._get_inverse_affine_matrix = inverse_affine_matrix

-- torchvision's _affine_grid: (1, oh, ow, 2) sampling positions
local function affine_grid(theta, w, h, ow, oh)
  local dtype = theta.dtype
  local base = wick.empty({ 1, oh, ow, 3 }, { dtype = dtype, device = theta.device })
  base:select(4, 1):copy_(wick.linspace((1.0 - ow) * 0.5, (ow - 1.0) * 0.5, ow, { device = theta.device }):to(dtype):expand(1, oh, ow))
  base:select(4, 2):copy_(wick.linspace((1.0 - oh) * 0.5, (oh - 1.0) * 0.5, oh, { device = theta.device }):to(dtype):view(1, oh, 1):expand(1, oh, ow))
  base:select(4, 3):fill_(1)
  local rescaled = theta:transpose(2, 3):div(wick.tensor({ 0.5 * w, 0.5 * h }, { dtype = dtype, device = theta.device }))
  return base:view(1, oh * ow, 3):bmm(rescaled):view(1, oh, ow, 2)
end

local function fill_check(fn, img, fill)
  if fill == nil then return end
  if type(fill) == "table" then
    if #fill > 1 and #fill ~= img:size(-3) then
      check.fail(fn, "The number of elements in 'fill' cannot broadcast to match the number of channels of the image (%d ~= %d)",
        #fill, img:size(-3))
    end
    for i = 1, #fill do if type(fill[i]) ~= "number" then check.fail(fn, "Argument fill should be either int, float, tuple or list") end end
  elseif type(fill) ~= "number" then
    check.fail(fn, "Argument fill should be either int, float, tuple or list")
  end
end

local function apply_grid(img, grid, mode, fill)
  local shape = sizes(img)
  local oh, ow = grid:size(2), grid:size(3)
  local c, ih, iw = img:size(-3), img:size(-2), img:size(-1)
  local out_shape = with_tail(shape, 3, { c, oh, ow })
  if img:numel() == 0 then return img:reshape(out_shape) end
  local x = img:reshape({ -1, c, ih, iw })
  local b = x:size(1)
  local fp = x.dtype == grid.dtype
  local fx = fp and x or x:to(grid.dtype)
  if b > 1 then grid = grid:expand(b, oh, ow, 2) end
  if fill ~= nil then
    fx = wick.cat({ fx, wick.ones({ b, 1, ih, iw }, { dtype = fx.dtype, device = fx.device }) }, 2)
  end
  fx = F.grid_sample(fx, grid, { mode = mode, padding_mode = "zeros", align_corners = false })
  if fill ~= nil then
    local mask = fx:narrow(2, c + 1, 1)
    fx = fx:narrow(2, 1, c)
    mask = mask:expand_as(fx)
    local fl = type(fill) == "table" and fill or { fill }
    local fimg = wick.tensor(fl, { dtype = fx.dtype, device = fx.device }):view(1, -1, 1, 1)
    if mode == "nearest" then
      fx = wick.where(mask:lt(0.5), fimg:expand_as(fx), fx)
    else
      fx = fx:sub(fimg):mul_(mask):add_(fimg)
    end
  end
  if not fp then fx = fx:round():to(x.dtype) end
  return fx:reshape(out_shape)
end

local function grid_mode(fn, interpolation)
  local mode = interpolation_arg(fn, interpolation, "nearest")
  if mode ~= "nearest" and mode ~= "bilinear" then
    check.fail(fn, "Interpolation mode '%s' is unsupported with Tensor input", mode)
  end
  return mode
end

local function number_pair(fn, v, name)
  if type(v) ~= "table" or #v ~= 2 or type(v[1]) ~= "number" or type(v[2]) ~= "number" then
    check.fail(fn, "Argument %s should be a sequence of length 2", name)
  end
  return v
end
-- a center {x, y} in pixels as the offset from the image's middle (torchvision's center_f); nil: the middle
local function center_offset(fn, center, h, w)
  if center == nil then return { 0.0, 0.0 } end
  number_pair(fn, center, "center")
  return { center[1] - w * 0.5, center[2] - h * 0.5 }
end

--- F.affine(img, angle, translate, scale, shear[, interpolation = "nearest"[, fill[, center]]]): rotation by angle
--- degrees (counter-clockwise), translation {tx, ty} in pixels, scale, shear (degrees, a number or {sx, sy}) about
--- the center (default the image's)
function M.affine(img, angle, translate, scale, shear, interpolation, fill, center)
  local fn = "affine"
  image_arg(img, fn, 3)
  if type(angle) ~= "number" then check.fail(fn, "Argument angle should be int or float") end
  if type(translate) ~= "table" then check.fail(fn, "Argument translate should be a sequence") end
  if #translate ~= 2 then check.fail(fn, "Argument translate should be a sequence of length 2") end
  if type(scale) ~= "number" then check.expected(fn, "scale", "a number", scale) end
  if not (scale > 0) then check.fail(fn, "Argument scale should be positive") end
  if type(shear) == "number" then shear = { shear, 0.0 }
  elseif type(shear) == "table" and #shear == 1 then shear = { shear[1], shear[1] }
  elseif type(shear) ~= "table" then check.fail(fn, "Shear should be either a single value or a sequence of two values") end
  if #shear ~= 2 then check.fail(fn, "Shear should be a sequence containing two values. Got a table of %d", #shear) end
  local mode = grid_mode(fn, interpolation)
  local h, w = img:size(-2), img:size(-1)
  local cf = center_offset(fn, center, h, w)
  fill_check(fn, img, fill)
  local m = inverse_affine_matrix(cf, angle, { translate[1], translate[2] }, scale, shear)
  local dtype = img:is_floating_point() and img.dtype or "float32"
  local theta = wick.tensor(m, { dtype = dtype, device = img.device }):reshape({ 1, 2, 3 })
  return apply_grid(img, affine_grid(theta, w, h, w, h), mode, fill)
end

local function rotated_size(m, w, h)
  local hw, hh = 0.5 * w, 0.5 * h
  local pts = wick.tensor({ { -hw, -hh, 1.0 }, { -hw, hh, 1.0 }, { hw, hh, 1.0 }, { hw, -hh, 1.0 } }, { dtype = "float32" })
  local theta = wick.tensor(m, { dtype = "float32" }):view(2, 3)
  local np = pts:matmul(theta:t())
  local mn, mx = np:amin(1), np:amax(1)
  local halfs = wick.tensor({ hw, hh }, { dtype = "float32" })
  mn, mx = mn:add(halfs), mx:add(halfs)
  local tol = 1e-4
  local cmax = mx:mul(1.0 / tol):trunc():mul(tol):ceil()
  local cmin = mn:mul(1.0 / tol):trunc():mul(tol):floor()
  local s = (cmax - cmin):tolist()
  local sw, sh = s[1], s[2]
  return sw >= 0 and floor(sw) or -floor(-sw), sh >= 0 and floor(sh) or -floor(-sh)
end

--- F.rotate(img, angle[, interpolation = "nearest"[, expand = false[, center[, fill]]]]): rotated by angle degrees
--- counter-clockwise; expand makes the output hold the whole rotated image
function M.rotate(img, angle, interpolation, expand, center, fill)
  local fn = "rotate"
  image_arg(img, fn, 3)
  if type(angle) ~= "number" or angle ~= angle then check.expected(fn, "angle", "a number", angle) end
  angle = angle % 360
  if center == nil then
    if angle == 0 then return img:clone() end
    if angle == 180 then return img:rot90(2, { -2, -1 }) end
    if expand or img:size(-1) == img:size(-2) then
      if angle == 90 then return img:rot90(1, { -2, -1 }) end
      if angle == 270 then return img:rot90(3, { -2, -1 }) end
    end
  end
  local mode = grid_mode(fn, interpolation)
  local ih, iw = img:size(-2), img:size(-1)
  local cf = center_offset(fn, center, ih, iw)
  local m = inverse_affine_matrix(cf, -angle, { 0.0, 0.0 }, 1.0, { 0.0, 0.0 })
  fill_check(fn, img, fill)
  local ow, oh = iw, ih
  if expand then ow, oh = rotated_size(m, iw, ih) end
  local dtype = img:is_floating_point() and img.dtype or "float32"
  local theta = wick.tensor(m, { dtype = dtype, device = img.device }):reshape({ 1, 2, 3 })
  return apply_grid(img, affine_grid(theta, iw, ih, ow, oh), mode, fill)
end

-- ---------------------------------------------------------------- color

local function channels_arg(fn, img, what)
  local c = img:size(-3)
  if c ~= 1 and c ~= 3 then
    check.fail(fn, what or "Input image tensor permitted channel values are 1 or 3, but found %d", c)
  end
  return c
end
local function factor_arg(fn, v, name)
  if type(v) ~= "number" or v ~= v then check.expected(fn, name, "a number", v) end
  if v < 0 then check.fail(fn, "%s (%s) is not non-negative.", name, tostring(v)) end
  return v
end

--- F.normalize(img, mean, std[, inplace = false]): (img - mean) / std per channel, a floating image
function M.normalize(img, mean, std, inplace)
  local fn = "normalize"
  if not is_tensor(img) then check.fail(fn, "img should be a Tensor image. Got %s", check.describe(img)) end
  if not img:is_floating_point() then check.fail(fn, "Input tensor should be a float tensor. Got %s.", img.dtype) end
  if img:dim() < 3 then
    check.fail(fn, "Expected tensor to be a tensor image of size (..., C, H, W). Got %s.", tostring(img.shape))
  end
  local function vec(v, name)
    if type(v) == "number" then return { v } end
    if is_tensor(v) then return v:double():view(-1):totable() end
    if type(v) ~= "table" or #v == 0 then check.expected(fn, name, "a number or a table of numbers", v) end
    for i = 1, #v do if type(v[i]) ~= "number" then check.expected(fn, name, "a table of numbers", v[i]) end end
    return v
  end
  mean, std = vec(mean, "mean"), vec(std, "std")
  for i = 1, #std do
    if std[i] == 0 then check.fail(fn, "std evaluated to zero, leading to division by zero.") end
  end
  local c = img:size(-3)
  for _, pair in ipairs({ { mean, "mean" }, { std, "std" } }) do
    local n = #pair[1]
    if n ~= 1 and n ~= c then
      check.fail(fn, "The size of %s (%d) must match the number of channels (%d) of the image", pair[2], n, c)
    end
  end
  local mt = wick.tensor(mean, { dtype = img.dtype, device = img.device }):view(-1, 1, 1)
  local st = wick.tensor(std, { dtype = img.dtype, device = img.device }):view(-1, 1, 1)
  local out = inplace and img:sub_(mt) or img:sub(mt)
  return out:div_(st)
end

-- a number as float32 rounds it
local function f32(x) return wick.tensor(x, { dtype = "float32" }):item() end
-- PyTorch's a.add(b, alpha=alpha): a fused multiply-add, one rounding (float32: exact in float64, then rounded)
local function add_alpha(a, b, alpha)
  if a.dtype == "float32" then
    local bd = b.dtype == "float32" and b:double() or b:float():double()
    return a:double():add_(bd:mul(f32(alpha))):float()
  end
  return a:add(b, { alpha = alpha })
end
-- PyTorch's t.mul(x) of a float32 tensor: x rounded to float32 first
local function mul_scalar(t, x)
  if t.dtype == "float32" then return t:mul(f32(x)) end
  return t:mul(x)
end

local function blend(img1, img2, ratio)
  local fp = img1:is_floating_point()
  -- (an integer image times a number is float32 in PyTorch, whatever the number: 1.0 too)
  local out = add_alpha(mul_scalar(fp and img1 or img1:float(), ratio), img2, 1.0 - ratio):clamp_(0, max_value(img1.dtype))
  return fp and out or out:to(img1.dtype)
end

-- (..., 1, H, W) luma in the float dtype of the computation
local function gray(img, preserve)
  local r, g, b = img:select(-3, 1), img:select(-3, 2), img:select(-3, 3)
  if not img:is_floating_point() then r = r:float() end
  local l = add_alpha(add_alpha(mul_scalar(r, 0.2989), g, 0.587), b, 0.114):unsqueeze(-3)
  if preserve then l = l:to(img.dtype) end
  return l
end

--- F.rgb_to_grayscale(img[, num_output_channels = 1]): 0.2989 R + 0.587 G + 0.114 B (also to_grayscale)
function M.rgb_to_grayscale(img, num_output_channels)
  local fn = "rgb_to_grayscale"
  image_arg(img, fn, 3)
  num_output_channels = num_output_channels or 1
  if num_output_channels ~= 1 and num_output_channels ~= 3 then
    check.fail(fn, "num_output_channels must be 1 or 3, got %s.", tostring(num_output_channels))
  end
  local c = img:size(-3)
  if c == 1 then
    if num_output_channels == 1 then return img:clone() end
    local rep = {}
    for i = 1, img:dim() do rep[i] = 1 end
    rep[img:dim() - 2] = 3
    return img:_repeat(rep)
  end
  if c ~= 3 then check.fail(fn, "Input image tensor permitted channel values are 1 or 3, but found %d", c) end
  local l = gray(img, true)
  if num_output_channels == 3 then l = l:expand_as(img) end
  return l
end
M.to_grayscale = M.rgb_to_grayscale

--- F.adjust_brightness(img, brightness_factor)
function M.adjust_brightness(img, brightness_factor)
  local fn = "adjust_brightness"
  image_arg(img, fn, 3)
  factor_arg(fn, brightness_factor, "brightness_factor")
  channels_arg(fn, img)
  local out = mul_scalar(img:is_floating_point() and img or img:float(), brightness_factor):clamp_(0, max_value(img.dtype))
  return img:is_floating_point() and out or out:to(img.dtype)
end

--- F.adjust_saturation(img, saturation_factor)
function M.adjust_saturation(img, saturation_factor)
  local fn = "adjust_saturation"
  image_arg(img, fn, 3)
  factor_arg(fn, saturation_factor, "saturation_factor")
  if channels_arg(fn, img) == 1 then return img end
  local g = gray(img, false)
  if not img:is_floating_point() then g = g:floor_() end
  return blend(img, g, saturation_factor)
end

--- F.adjust_contrast(img, contrast_factor)
function M.adjust_contrast(img, contrast_factor)
  local fn = "adjust_contrast"
  image_arg(img, fn, 3)
  factor_arg(fn, contrast_factor, "contrast_factor")
  local c = channels_arg(fn, img)
  local fp = img:is_floating_point()
  local g
  if c == 3 then
    g = gray(img, false)
    if not fp then g = g:floor_() end
  else
    g = fp and img or img:float()
  end
  local mean = g:mean({ -3, -2, -1 }, true)
  return blend(img, mean, contrast_factor)
end

--- F.adjust_sharpness(img, sharpness_factor)
function M.adjust_sharpness(img, sharpness_factor)
  local fn = "adjust_sharpness"
  image_arg(img, fn, 3)
  local c, h, w = img:size(-3), img:size(-2), img:size(-1)
  if c ~= 1 and c ~= 3 then check.fail(fn, "Input image tensor can have 1 or 3 channels, but found %d", c) end
  factor_arg(fn, sharpness_factor, "sharpness_factor")
  if img:numel() == 0 or h <= 2 or w <= 2 then return img end
  local fp = img:is_floating_point()
  local shape = sizes(img)
  local x = img:reshape({ -1, c, h, w })
  local kd = fp and img.dtype or "float32"
  local a, b = 1.0 / 13.0, 5.0 / 13.0
  local kernel = wick.tensor({ { a, a, a }, { a, b, a }, { a, a, a } }, { dtype = kd, device = img.device }):expand(c, 1, 3, 3)
  local out = x:to(kd):clone()
  local blurred = F.conv2d(out, kernel:contiguous(), nil, 1, 0, 1, c)
  if not fp then blurred = blurred:round() end
  local view = out:narrow(3, 2, h - 2):narrow(4, 2, w - 2)
  view:copy_(add_alpha(view, blurred:sub(view), 1.0 - sharpness_factor))
  out = out:clamp_(0, max_value(img.dtype))
  if not fp then out = out:to(img.dtype) end
  return out:reshape(shape)
end

local function rgb_to_hsv(img)
  local r, g = img:select(-3, 1), img:select(-3, 2)
  local maxc, minc = img:amax(-3), img:amin(-3)
  local eqc = maxc:eq(minc)
  local range = maxc - minc
  local ones = wick.ones_like(maxc)
  local s = range / wick.where(eqc, ones, maxc)
  local divisor = wick.where(eqc, ones, range):unsqueeze(-3)
  local q = (maxc:unsqueeze(-3) - img) / divisor
  local rc, gc, bc = q:select(-3, 1), q:select(-3, 2), q:select(-3, 3)
  local neq_r = maxc:ne(r)
  local eq_g = maxc:eq(g)
  local hg = rc:add(2.0):sub(bc):mul(eq_g:logical_and(neq_r))
  local hr = bc:sub(gc):mul(neq_r:logical_not())
  local hb = gc:add(4.0):sub(rc):mul(neq_r:logical_and(eq_g:logical_not()))
  local h = hr:add(hg):add(hb)
  h = h:mul(1.0 / 6.0):add(1.0):fmod(1.0)
  return h, s, maxc
end

local HSV_SELECT = { { 0, 2, 1, 1, 3, 0 }, { 3, 0, 0, 2, 1, 1 }, { 1, 1, 3, 0, 0, 2 } }
local function hsv_to_rgb(h, s, v)
  local h6 = h:mul(6)
  local i = h6:floor()
  local f = h6:sub(i)
  i = i:to("int64"):remainder(6)
  local sxf = s * f
  local one_minus_s = s:neg():add(1.0)
  local q = sxf:neg():add(1.0):mul(v):clamp(0.0, 1.0)
  local t = sxf:add(one_minus_s):mul(v):clamp(0.0, 1.0)
  local p = one_minus_s:mul(v):clamp(0.0, 1.0)
  local vpqt = wick.stack({ v, p, q, t }, -3)
  local sel = wick.tensor(HSV_SELECT, { dtype = "int64", device = h.device }):add(1) -- (1-based for gather)
  local idx = sel:index_select(2, i:reshape({ -1 }):add(1)) -- (3, N)
  local shp = sizes(i)
  idx = idx:reshape(with_tail({ 3 }, 0, shp))
  if #shp > 2 then idx = idx:movedim(1, -3) end
  return vpqt:gather(-3, idx)
end

--- F.adjust_hue(img, hue_factor): hue_factor in [-0.5, 0.5], through HSV in float32
function M.adjust_hue(img, hue_factor)
  local fn = "adjust_hue"
  image_arg(img, fn, 3)
  if type(hue_factor) ~= "number" or hue_factor ~= hue_factor then check.expected(fn, "hue_factor", "a number", hue_factor) end
  if not (hue_factor >= -0.5 and hue_factor <= 0.5) then check.fail(fn, "hue_factor (%s) is not in [-0.5, 0.5].", tostring(hue_factor)) end
  if channels_arg(fn, img) == 1 then return img end
  if img:numel() == 0 then return img end
  local dtype = img.dtype
  local x = M.to_dtype(img, "float32", true)
  local h, s, v = rgb_to_hsv(x)
  h = h:add(hue_factor):remainder(1.0)
  return M.to_dtype(hsv_to_rgb(h, s, v), dtype, true)
end

--- F.adjust_gamma(img, gamma[, gain = 1])
function M.adjust_gamma(img, gamma, gain)
  local fn = "adjust_gamma"
  image_arg(img, fn, 3)
  if type(gamma) ~= "number" then check.expected(fn, "gamma", "a number", gamma) end
  if gamma < 0 then check.fail(fn, "Gamma should be a non-negative real number") end
  gain = gain or 1.0
  local out = img:is_floating_point() and img:pow(gamma) or M.to_dtype(img, "float32", true):pow_(gamma)
  if gain ~= 1.0 then out = out:mul_(gain):clamp_(0.0, 1.0) end
  return M.to_dtype(out, img.dtype, true)
end

--- F.posterize(img, bits): keeps the top `bits` bits of each value (bits in [0, 8])
function M.posterize(img, bits)
  local fn = "posterize"
  image_arg(img, fn, 3)
  if not is_int(bits) or bits < 0 or bits > 8 then
    check.fail(fn, "bits must be a positive integer in the range [0, 8], got %s instead.", check.describe(bits))
  end
  if img:is_floating_point() then
    local levels = 2 ^ bits
    return img:mul(levels):floor_():clamp_(0, levels - 1):mul_(1.0 / levels)
  end
  local nb = VALUE_BITS[img.dtype]
  if bits >= nb then return img end
  local mask = math.floor((2 ^ bits - 1) * 2 ^ (nb - bits)) -- (an integer: Lua 5.4's 2 ^ n is a float)
  return img:bitwise_and(mask)
end

--- F.invert(img): max - img (1 - img for floating images)
function M.invert(img)
  image_arg(img, "invert", 3)
  if img:is_floating_point() then return img:neg():add(1.0) end
  if img.dtype == "uint8" then return img:bitwise_not() end
  return img:bitwise_xor(2 ^ VALUE_BITS[img.dtype] - 1)
end

--- F.solarize(img, threshold): values at or above threshold inverted
function M.solarize(img, threshold)
  local fn = "solarize"
  image_arg(img, fn, 3)
  if type(threshold) ~= "number" then check.expected(fn, "threshold", "a number", threshold) end
  if threshold > max_value(img.dtype) then
    check.fail(fn, "Threshold should be less or equal the maximum value of the dtype, but got %s", tostring(threshold))
  end
  return wick.where(img:ge(threshold), M.invert(img), img)
end

--- F.autocontrast(img): each channel stretched to the full range
function M.autocontrast(img)
  local fn = "autocontrast"
  image_arg(img, fn, 3)
  channels_arg(fn, img)
  if img:numel() == 0 then return img end
  local bound = max_value(img.dtype)
  local fp = img:is_floating_point()
  local fimg = fp and img or img:float()
  local mn = fimg:amin({ -2, -1 }, true)
  local mx = fimg:amax({ -2, -1 }, true)
  local eq = mx:eq(mn)
  local inv_scale = mx:sub(mn):mul_(1.0 / bound)
  mn = mn:masked_fill(eq, 0.0)
  inv_scale = inv_scale:masked_fill(eq, 1.0)
  return fimg:sub(mn):div_(inv_scale):clamp_(0, bound):to(img.dtype)
end

--- F.equalize(img): each channel's histogram equalized (as PIL's ImageOps.equalize)
function M.equalize(img)
  local fn = "equalize"
  image_arg(img, fn, 3)
  if img:numel() == 0 then return img end
  local dtype = img.dtype
  local u = M.to_dtype(img, "uint8", true)
  local shape = sizes(u)
  local n = u:size(-1) * u:size(-2)
  local flat = u:reshape({ -1, n }):to("int64") -- (B, HW)
  local B = flat:size(1)
  local idx = flat:add(1)
  local hist = wick.zeros({ B, 256 }, { dtype = "int64", device = u.device })
  hist:scatter_add_(2, idx, wick.ones({ B, n }, { dtype = "int64", device = u.device }))
  local cum = hist:cumsum(2)
  local at = cum:argmax(2):unsqueeze(2)
  local non_max = hist:gather(2, at):neg():add(n)
  local step = non_max:div(255, { rounding_mode = "floor" })
  local valid = step:ne(0) -- (B, 1)
  cum = cum:narrow(2, 1, 255)
  cum = cum:add(step:div(2, { rounding_mode = "floor" })):div(step:clamp(1), { rounding_mode = "floor" }):clamp(0, 255)
  local lut = wick.cat({ wick.zeros({ B, 1 }, { dtype = "int64", device = u.device }), cum }, 2)
  local eq = lut:gather(2, idx):to("uint8")
  local out = wick.where(valid:expand(B, n), eq, flat:to("uint8")):reshape(shape)
  return M.to_dtype(out, dtype, true)
end

-- ---------------------------------------------------------------- blur, erase

local function gaussian_kernel1d(ks, sigma, dtype, device)
  local lim = (ks - 1) / (2.0 * math.sqrt(2.0))
  local x = wick.linspace(-lim, lim, ks, { dtype = dtype, device = device })
  return wick.softmax(x:div(sigma):pow(2):neg(), 1)
end

--- F.gaussian_blur(img, kernel_size[, sigma]): kernel_size an odd int or {kx, ky}; sigma a number or {sx, sy}
--- (default 0.3 * ((k - 1) * 0.5 - 1) + 0.8 as torchvision's k * 0.15 + 0.35); reflect padding
function M.gaussian_blur(img, kernel_size, sigma)
  local fn = "gaussian_blur"
  image_arg(img, fn, 3)
  if is_int(kernel_size) then kernel_size = { kernel_size, kernel_size }
  elseif type(kernel_size) ~= "table" or #kernel_size ~= 2 then
    check.fail(fn, "If kernel_size is a sequence its length should be 2. Got %s", type(kernel_size) == "table" and #kernel_size or check.describe(kernel_size))
  end
  for _, k in ipairs(kernel_size) do
    if not is_int(k) or k % 2 == 0 or k < 0 then
      check.fail(fn, "kernel_size should have odd and positive integers. Got {%s, %s}", tostring(kernel_size[1]), tostring(kernel_size[2]))
    end
  end
  if sigma == nil then
    sigma = { kernel_size[1] * 0.15 + 0.35, kernel_size[2] * 0.15 + 0.35 }
  elseif type(sigma) == "number" then
    sigma = { sigma, sigma }
  elseif type(sigma) == "table" then
    if #sigma == 1 then sigma = { sigma[1], sigma[1] }
    elseif #sigma ~= 2 then check.fail(fn, "If sigma is a sequence, its length should be 2. Got %d", #sigma) end
  else
    check.fail(fn, "sigma should be either float or sequence of floats. Got %s", check.describe(sigma))
  end
  for _, s in ipairs(sigma) do
    if type(s) ~= "number" or not (s > 0) then check.fail(fn, "sigma should have positive values. Got {%s, %s}", tostring(sigma[1]), tostring(sigma[2])) end
  end
  if img:numel() == 0 then return img end
  local shape = sizes(img)
  local c = img:size(-3)
  local x = img:reshape({ -1, c, img:size(-2), img:size(-1) })
  local fp = img:is_floating_point()
  local kd = fp and img.dtype or "float32"
  local kx = gaussian_kernel1d(kernel_size[1], sigma[1], kd, img.device)
  local ky = gaussian_kernel1d(kernel_size[2], sigma[2], kd, img.device)
  local kernel = (ky:unsqueeze(2) * kx):expand(c, 1, kernel_size[2], kernel_size[1]):contiguous()
  local out = fp and x or x:float()
  local px, py = floor(kernel_size[1] / 2), floor(kernel_size[2] / 2)
  if px >= out:size(4) or py >= out:size(3) then
    check.fail(fn, "Padding size should be less than the corresponding input dimension, but got: padding (%d, %d) at "
      .. "dimension 3 of input %s", px, px, tostring(out.shape))
  end
  out = F.pad(out, { px, px, py, py }, "reflect")
  out = F.conv2d(out, kernel, nil, 1, 0, 1, c)
  if not fp then out = out:round():to(img.dtype) end
  return out:reshape(shape)
end

--- F.erase(img, i, j, h, w, v[, inplace = false]): the window at pixel offset (i, j) of size (h, w) set to v
--- (a number or a tensor broadcastable to (..., C, h, w))
function M.erase(img, i, j, h, w, v, inplace)
  local fn = "erase"
  image_arg(img, fn, 3)
  int_arg(i, fn, "i"); int_arg(j, fn, "j"); int_arg(h, fn, "h"); int_arg(w, fn, "w")
  if not inplace then img = img:clone() end
  local win = slice(img, i, i + h, j, j + w)
  if win:numel() > 0 then
    if is_tensor(v) then win:copy_(v:to(img.dtype):expand_as(win)) else win:fill_(v) end
  end
  return img
end

return M
