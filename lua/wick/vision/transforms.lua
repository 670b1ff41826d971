-- wick.vision.transforms: torchvision's transforms (the v2 semantics) on tensor
-- images, uint8 or floating, of shape (..., C, H, W): Compose, the crops and
-- resizes, flips, color jitter, blur, erasing, rotations and affines, and the
-- automatic augmentations; the ops themselves in transforms_functional.lua
-- (wick.vision.transforms.functional). Each transform is a module: called on
-- a tensor it gives a tensor; called on several values (or one array of them)
-- it transforms the first tensor among them, the image, and passes the rest
-- through, as torchvision's v2 does with plain tensors (a label tensor beside
-- the image is left as it is). Random draws
-- use wick's generator with torchvision's calls in torchvision's order.
-- Loaded by wick.vision.
local wick = require("wick")
local check = require("wick.argcheck")
local TF = require("wick.vision.transforms_functional")
local Module = wick.nn.Module

local floor, sqrt, unpack = math.floor, math.sqrt, table.unpack or unpack -- luacheck: ignore
local pyround = TF._pyround
local T = {}

local function is_tensor(v) return check.is_tensor(v) end
local function is_num(v) return type(v) == "number" and v == v end
local function is_seq(v) return type(v) == "table" and not is_tensor(v) and getmetatable(v) == nil end

-- random draws, torchvision's calls
local function rand1() return wick.rand(1):item() end -- torch.rand(1)
local function uniform(a, b) return wick.empty(1):uniform_(a, b):item() end -- torch.empty(1).uniform_(a, b)
local function randint(lo, hi) return wick.randint(lo, hi, { 1 }):item() end -- torch.randint(lo, hi, (1,))

T.InterpolationMode = check.strict({ NEAREST = "nearest", NEAREST_EXACT = "nearest-exact", BILINEAR = "bilinear",
  BICUBIC = "bicubic" }, "wick.vision.transforms.InterpolationMode")
T.AutoAugmentPolicy = check.strict({ IMAGENET = "imagenet", CIFAR10 = "cifar10", SVHN = "svhn" },
  "wick.vision.transforms.AutoAugmentPolicy")

-- ---------------------------------------------------------------- the base

-- the values a transform was called with: a list, and how to give them back
local function inputs_of(...)
  local n = select("#", ...)
  if n == 1 then
    local x = ...
    if is_seq(x) then return x, "table" end
    return { x }, "one"
  end
  return { ... }, "many", n
end
local function outputs(list, how, n)
  if how == "one" then return list[1] end
  if how == "table" then return list end
  return unpack(list, 1, n)
end
local function first_image(fn, list)
  for i = 1, #list do if is_tensor(list[i]) then return list[i] end end
  check.fail(fn, "expected an image tensor of shape (..., C, H, W) among the inputs, got none")
end
-- the (C, H, W) of the image, the first tensor: torchvision's query_chw of a sample of plain tensors
local function query_chw(fn, list)
  local x = first_image(fn, list)
  if x:dim() < 2 then check.fail(fn, "expected a tensor image of shape (..., C, H, W), got %s", tostring(x.shape)) end
  local d = TF.get_dimensions(x)
  return d[1], d[2], d[3]
end
-- the inputs with the image (the first tensor) transformed, the rest as they are
local function transformed(self, list, n, params)
  local out, done = {}, false
  for i = 1, (n or #list) do
    local x = list[i]
    if is_tensor(x) and not done then out[i], done = self:transform(x, params), true else out[i] = x end
  end
  return out
end

--- The base of the transforms (torchvision's v2.Transform): forward draws make_params once, then
--- calls transform(x, params) on the image, the first tensor input
T.Transform = Module:extend("Transform")
function T.Transform:make_params(_) return {} end
function T.Transform:transform(x, _) return x end
function T.Transform:forward(...)
  local list, how, n = inputs_of(...)
  local fn = self.__name or "Transform"
  query_chw(fn, list)
  return outputs(transformed(self, list, n, self:make_params(list)), how, n)
end

local function p_arg(fn, p)
  if p == nil then return 0.5 end
  if not is_num(p) or p < 0 or p > 1 then check.fail(fn, "`p` should be a floating point value in the interval [0.0, 1.0].") end
  return p
end

-- transforms applied with probability p (torchvision's _RandomApplyTransform)
local RandomApplyTransform = T.Transform:extend("_RandomApplyTransform")
function RandomApplyTransform:forward(...)
  local list, how, n = inputs_of(...)
  query_chw(self.__name, list)
  if rand1() >= self.p then return outputs(list, how, n) end
  return outputs(transformed(self, list, n, self:make_params(list)), how, n)
end

-- ---------------------------------------------------------------- containers

local function transforms_arg(fn, transforms)
  if not is_seq(transforms) and not (type(transforms) == "table" and check.is_array(transforms)) then
    check.fail(fn, "Argument transforms should be a sequence of callables")
  end
  if #transforms == 0 then check.fail(fn, "Pass at least one transform") end
  for i = 1, #transforms do
    local t = transforms[i]
    if type(t) ~= "function" and not (type(t) == "table" and getmetatable(t) and getmetatable(t).__call) then
      check.fail(fn, "transforms[%d] should be a callable, got %s", i, check.describe(t))
    end
  end
  local copy = {}
  for i = 1, #transforms do copy[i] = transforms[i] end
  return copy
end
-- the transforms one after another; several inputs stay several
local function chain(ts, order, ...)
  local n = select("#", ...)
  local args = { ... }
  for _, k in ipairs(order) do
    if n > 1 then args = { ts[k](unpack(args, 1, n)) } else args = { ts[k](args[1]) } end
  end
  return unpack(args, 1, n)
end
local function in_order(n)
  local o = {}
  for i = 1, n do o[i] = i end
  return o
end

--- T.Compose(transforms): the transforms in order (a table of callables: transforms or functions)
T.Compose = T.Transform:extend("Compose", { "transforms" })
function T.Compose:init(transforms) self.transforms = transforms_arg("Compose", transforms) end
function T.Compose:forward(...) return chain(self.transforms, in_order(#self.transforms), ...) end

--- T.RandomApply(transforms[, p = 0.5]): all the transforms, with probability p
T.RandomApply = T.Transform:extend("RandomApply", { "transforms", "p?" })
function T.RandomApply:init(transforms, p)
  self.transforms = transforms_arg("RandomApply", transforms)
  self.p = p_arg("RandomApply", p)
end
function T.RandomApply:forward(...)
  if rand1() >= self.p then return ... end
  return chain(self.transforms, in_order(#self.transforms), ...)
end

--- T.RandomChoice(transforms[, p]): one of the transforms, drawn with weights p (equal by default)
T.RandomChoice = T.Transform:extend("RandomChoice", { "transforms", "p?" })
function T.RandomChoice:init(transforms, p)
  local fn = "RandomChoice"
  self.transforms = transforms_arg(fn, transforms)
  if p == nil then
    p = {}
    for i = 1, #self.transforms do p[i] = 1 end
  elseif not is_seq(p) or #p ~= #self.transforms then
    check.fail(fn, "Length of p doesn't match the number of transforms: %s != %d", is_seq(p) and tostring(#p) or check.describe(p), #self.transforms)
  end
  local total = 0
  for i = 1, #p do
    if not is_num(p[i]) or p[i] < 0 then check.fail(fn, "expected non-negative numbers in p, got %s", check.describe(p[i])) end
    total = total + p[i]
  end
  if not (total > 0) then check.fail(fn, "expected p to sum to more than 0") end
  self.p = {}
  for i = 1, #p do self.p[i] = p[i] / total end
end
function T.RandomChoice:forward(...)
  local k = wick.multinomial(wick.tensor(self.p), 1):item()
  return self.transforms[k](...)
end

--- T.RandomOrder(transforms): all the transforms, in a random order (wick.randperm)
T.RandomOrder = T.Transform:extend("RandomOrder", { "transforms" })
function T.RandomOrder:init(transforms) self.transforms = transforms_arg("RandomOrder", transforms) end
function T.RandomOrder:forward(...)
  return chain(self.transforms, wick.randperm(#self.transforms):totable(), ...)
end

--- T.Lambda(fn): fn(x) on each input tensor
T.Lambda = T.Transform:extend("Lambda", { "lambd" })
function T.Lambda:init(lambd)
  if type(lambd) ~= "function" and not (type(lambd) == "table" and getmetatable(lambd) and getmetatable(lambd).__call) then
    check.fail("Lambda", "Argument lambd should be callable, got %s", check.describe(lambd))
  end
  self.lambd = lambd
end
function T.Lambda:transform(x) return self.lambd(x) end

-- ---------------------------------------------------------------- dtype, normalize

--- T.ToDtype([dtype = "float32"[, scale = false]]): F.to_dtype
T.ToDtype = T.Transform:extend("ToDtype", { "dtype?", "scale?" })
function T.ToDtype:init(dtype, scale)
  self.dtype = dtype or "float32"
  if type(self.dtype) ~= "string" then check.expected("ToDtype", "dtype", "a dtype name", dtype) end
  self.scale = scale == true
end
function T.ToDtype:transform(x) return TF.to_dtype(x, self.dtype, self.scale) end

--- T.ConvertImageDtype([dtype = "float32"]): F.convert_image_dtype (to_dtype with scale)
T.ConvertImageDtype = T.Transform:extend("ConvertImageDtype", { "dtype?" })
function T.ConvertImageDtype:init(dtype) self.dtype = dtype or "float32" end
function T.ConvertImageDtype:transform(x) return TF.to_dtype(x, self.dtype, true) end

--- T.Normalize(mean, std[, inplace = false])
T.Normalize = T.Transform:extend("Normalize", { "mean", "std", "inplace?" })
function T.Normalize:init(mean, std, inplace)
  local fn = "Normalize"
  for _, pair in ipairs({ { mean, "mean" }, { std, "std" } }) do
    local v = pair[1]
    if not is_num(v) and not is_seq(v) then check.expected(fn, pair[2], "a number or a table of numbers", v) end
  end
  local sv = is_seq(std) and std or { std }
  for i = 1, #sv do
    if sv[i] == 0 then check.fail(fn, "std evaluated to zero, leading to division by zero.") end
  end
  self.mean, self.std, self.inplace = mean, std, inplace == true
end
function T.Normalize:transform(x) return TF.normalize(x, self.mean, self.std, self.inplace) end
function T.Normalize:extra_repr()
  local function s(v) return is_seq(v) and ("[" .. table.concat(v, ", ") .. "]") or tostring(v) end
  return ("mean=%s, std=%s, inplace=%s"):format(s(self.mean), s(self.std), self.inplace and "True" or "False")
end

-- ---------------------------------------------------------------- geometry

local function setup_size(fn, size)
  if is_num(size) then return { floor(size), floor(size) } end
  if is_seq(size) and #size == 1 then return { size[1], size[1] } end
  if not is_seq(size) or #size ~= 2 then check.fail(fn, "Please provide only two dimensions (h, w) for size.") end
  return { size[1], size[2] }
end

--- T.Resize(size[, interpolation = "bilinear"[, max_size[, antialias = true]]])
T.Resize = T.Transform:extend("Resize", { "size?", "interpolation?", "max_size?", "antialias?" })
function T.Resize:init(size, interpolation, max_size, antialias)
  local fn = "Resize"
  if is_num(size) then size = { size }
  elseif is_seq(size) and (#size == 1 or #size == 2) then size = { unpack(size) }
  elseif size == nil then
    if type(max_size) ~= "number" or max_size ~= floor(max_size) then
      check.fail(fn, "max_size must be an integer when size is None, but got %s instead.", check.describe(max_size))
    end
  else
    check.fail(fn, "size can be an integer, a sequence of one or two integers, or None, but got %s instead.", check.describe(size))
  end
  self.size = size
  self.interpolation = TF._interpolation_arg(fn, interpolation, "bilinear")
  self.max_size = max_size
  if antialias == nil then antialias = true end
  self.antialias = antialias
end
function T.Resize:transform(x) return TF.resize(x, self.size, self.interpolation, self.max_size, self.antialias) end

--- T.CenterCrop(size)
T.CenterCrop = T.Transform:extend("CenterCrop", { "size" })
function T.CenterCrop:init(size) self.size = setup_size("CenterCrop", size) end
function T.CenterCrop:transform(x) return TF.center_crop(x, self.size) end

--- T.RandomHorizontalFlip([p = 0.5]), T.RandomVerticalFlip([p = 0.5])
T.RandomHorizontalFlip = RandomApplyTransform:extend("RandomHorizontalFlip", { "p?" })
function T.RandomHorizontalFlip:init(p) self.p = p_arg("RandomHorizontalFlip", p) end
function T.RandomHorizontalFlip:transform(x) return TF.hflip(x) end
T.RandomVerticalFlip = RandomApplyTransform:extend("RandomVerticalFlip", { "p?" })
function T.RandomVerticalFlip:init(p) self.p = p_arg("RandomVerticalFlip", p) end
function T.RandomVerticalFlip:transform(x) return TF.vflip(x) end

local function padding_arg(fn, padding)
  if type(padding) == "number" then
    if padding ~= floor(padding) then check.fail(fn, "Got inappropriate padding arg: %s", tostring(padding)) end
    return
  end
  if not is_seq(padding) then check.fail(fn, "Got inappropriate padding arg: %s", check.describe(padding)) end
  if #padding ~= 1 and #padding ~= 2 and #padding ~= 4 then
    check.fail(fn, "Padding must be an int or a 1, 2, or 4 element of tuple or list, got %d elements", #padding)
  end
end
local function padding_mode_arg(fn, mode)
  if mode ~= "constant" and mode ~= "edge" and mode ~= "reflect" and mode ~= "symmetric" then
    check.fail(fn, "Padding mode should be either constant, edge, reflect or symmetric, got %s", tostring(mode))
  end
end

--- T.Pad(padding[, fill = 0[, padding_mode = "constant"]])
T.Pad = T.Transform:extend("Pad", { "padding", "fill?", "padding_mode?" })
function T.Pad:init(padding, fill, padding_mode)
  padding_arg("Pad", padding)
  self.padding_mode = padding_mode or "constant"
  padding_mode_arg("Pad", self.padding_mode)
  self.padding, self.fill = padding, fill or 0
end
function T.Pad:transform(x) return TF.pad(x, self.padding, self.fill, self.padding_mode) end

--- T.RandomCrop(size[, padding[, pad_if_needed = false[, fill = 0[, padding_mode = "constant"]]]])
T.RandomCrop = T.Transform:extend("RandomCrop", { "size", "padding?", "pad_if_needed?", "fill?", "padding_mode?" })
function T.RandomCrop:init(size, padding, pad_if_needed, fill, padding_mode)
  local fn = "RandomCrop"
  self.size = setup_size(fn, size)
  self.padding_mode = padding_mode or "constant"
  if pad_if_needed or padding ~= nil then
    if padding ~= nil then padding_arg(fn, padding) end
    padding_mode_arg(fn, self.padding_mode)
  end
  self.padding = (padding ~= nil and padding ~= 0) and TF._parse_padding(fn, padding) or nil
  self.pad_if_needed = pad_if_needed == true
  self.fill = fill or 0
end
--- RandomCrop.get_params(img, output_size): top, left, height, width of a random window (torchvision's v1)
function T.RandomCrop.get_params(img, output_size)
  local fn = "RandomCrop.get_params"
  TF._image_arg(img, fn, 2)
  local _, h, w = unpack(TF.get_dimensions(img))
  local s = setup_size(fn, output_size)
  local th, tw = s[1], s[2]
  if h < th or w < tw then
    check.fail(fn, "Required crop size (%d, %d) is larger than input image size (%d, %d)", th, tw, h, w)
  end
  if w == tw and h == th then return 0, 0, h, w end
  local i = randint(0, h - th + 1)
  local j = randint(0, w - tw + 1)
  return i, j, th, tw
end
function T.RandomCrop:make_params(list)
  local _, ph, pw = query_chw(self.__name, list)
  local l, r, t, b = 0, 0, 0, 0
  if self.padding then
    l, r, t, b = unpack(self.padding)
    ph, pw = ph + t + b, pw + l + r
  end
  local ch, cw = self.size[1], self.size[2]
  if self.pad_if_needed then
    if ph < ch then
      local d = ch - ph
      t, b, ph = t + d, b + d, ph + 2 * d
    end
    if pw < cw then
      local d = cw - pw
      l, r, pw = l + d, r + d, pw + 2 * d
    end
  end
  if ph < ch or pw < cw then
    check.fail("RandomCrop", "Required crop size (%d, %d) is larger than %sinput image size (%d, %d).", ch, cw,
      self.padding and "padded " or "", ph, pw)
  end
  local top = ph > ch and wick.randint(0, ph - ch + 1, {}):item() or 0
  local left = pw > cw and wick.randint(0, pw - cw + 1, {}):item() or 0
  return { needs_crop = ph > ch or pw > cw, top = top, left = left, height = ch, width = cw,
    needs_pad = l ~= 0 or t ~= 0 or r ~= 0 or b ~= 0, padding = { l, t, r, b } }
end
function T.RandomCrop:transform(x, p)
  if p.needs_pad then x = TF.pad(x, p.padding, self.fill, self.padding_mode) end
  if p.needs_crop then x = TF.crop(x, p.top, p.left, p.height, p.width) end
  return x
end

-- a window's random area (scale of the image's) and aspect (log-uniform in ratio), torchvision's draws in its
-- order: area_draw(area, scale, ratio) gives the function that draws one (area, aspect) pair
local function area_draw(area, scale, ratio)
  local log_ratio = wick.tensor(ratio):log()
  local lr1, lr2 = log_ratio[1]:item(), log_ratio[2]:item()
  return function()
    return area * uniform(scale[1], scale[2]), wick.empty(1):uniform_(lr1, lr2):exp():item()
  end
end
local function resized_crop_params(height, width, scale, ratio)
  local draw = area_draw(height * width, scale, ratio)
  for _ = 1, 10 do
    local target_area, aspect = draw()
    local w = pyround(sqrt(target_area * aspect))
    local h = pyround(sqrt(target_area / aspect))
    if 0 < w and w <= width and 0 < h and h <= height then
      local i = randint(0, height - h + 1)
      local j = randint(0, width - w + 1)
      return i, j, h, w
    end
  end
  local in_ratio = width / height
  local rmin, rmax = math.min(ratio[1], ratio[2]), math.max(ratio[1], ratio[2])
  local w, h
  if in_ratio < rmin then
    w = width
    h = pyround(w / rmin)
  elseif in_ratio > rmax then
    h = height
    w = pyround(h * rmax)
  else
    w, h = width, height
  end
  return floor((height - h) / 2), floor((width - w) / 2), h, w
end
local function pair_arg(fn, v, what)
  if not is_seq(v) or #v ~= 2 or not is_num(v[1]) or not is_num(v[2]) then check.fail(fn, "%s should be a sequence of two floats.", what) end
  return { v[1], v[2] }
end

--- T.RandomResizedCrop(size[, scale = {0.08, 1}[, ratio = {3/4, 4/3}[, interpolation = "bilinear"[, antialias = true]]]])
T.RandomResizedCrop = T.Transform:extend("RandomResizedCrop", { "size", "scale?", "ratio?", "interpolation?", "antialias?" })
function T.RandomResizedCrop:init(size, scale, ratio, interpolation, antialias)
  local fn = "RandomResizedCrop"
  self.size = setup_size(fn, size)
  self.scale = pair_arg(fn, scale or { 0.08, 1.0 }, "Scale")
  self.ratio = pair_arg(fn, ratio or { 3.0 / 4.0, 4.0 / 3.0 }, "Ratio")
  if self.scale[1] > self.scale[2] or self.ratio[1] > self.ratio[2] then
    io.stderr:write("RandomResizedCrop: Scale and ratio should be of kind (min, max)\n")
  end
  self.interpolation = TF._interpolation_arg(fn, interpolation, "bilinear")
  if antialias == nil then antialias = true end
  self.antialias = antialias
end
--- RandomResizedCrop.get_params(img, scale, ratio): top, left, height, width (torchvision's v1)
function T.RandomResizedCrop.get_params(img, scale, ratio)
  local fn = "RandomResizedCrop.get_params"
  TF._image_arg(img, fn, 2)
  local _, h, w = unpack(TF.get_dimensions(img))
  return resized_crop_params(h, w, pair_arg(fn, scale, "Scale"), pair_arg(fn, ratio, "Ratio"))
end
function T.RandomResizedCrop:make_params(list)
  local _, h, w = query_chw(self.__name, list)
  local i, j, hh, ww = resized_crop_params(h, w, self.scale, self.ratio)
  return { top = i, left = j, height = hh, width = ww }
end
function T.RandomResizedCrop:transform(x, p)
  return TF.resized_crop(x, p.top, p.left, p.height, p.width, self.size, self.interpolation, self.antialias)
end

-- degrees as {min, max}: a number d is {-d, d}
local function setup_angle(fn, v, name, sizes)
  if is_num(v) then
    if v < 0 then check.fail(fn, "If %s is a single number, it must be positive.", name) end
    return { -v, v }
  end
  if not is_seq(v) then check.fail(fn, "%s should be a sequence", name) end
  local ok = false
  for _, s in ipairs(sizes) do if #v == s then ok = true end end
  if not ok then check.fail(fn, "%s should be a sequence of length %s.", name, table.concat(sizes, " or ")) end
  for i = 1, #v do if not is_num(v[i]) then check.fail(fn, "%s should be a sequence of numbers", name) end end
  return { unpack(v) }
end

--- T.RandomRotation(degrees[, interpolation = "nearest"[, expand = false[, center[, fill = 0]]]])
T.RandomRotation = T.Transform:extend("RandomRotation", { "degrees", "interpolation?", "expand?", "center?", "fill?" })
function T.RandomRotation:init(degrees, interpolation, expand, center, fill)
  local fn = "RandomRotation"
  self.degrees = setup_angle(fn, degrees, "degrees", { 2 })
  self.interpolation = TF._interpolation_arg(fn, interpolation, "nearest")
  self.expand = expand == true
  if center ~= nil and (not is_seq(center) or #center ~= 2) then check.fail(fn, "center should be a sequence of length 2.") end
  self.center = center
  if fill == nil then fill = 0 end
  self.fill = fill
end
--- RandomRotation.get_params(degrees): an angle uniform in degrees {min, max}
function T.RandomRotation.get_params(degrees)
  return uniform(degrees[1], degrees[2])
end
function T.RandomRotation:make_params() return { angle = uniform(self.degrees[1], self.degrees[2]) } end
function T.RandomRotation:transform(x, p)
  return TF.rotate(x, p.angle, self.interpolation, self.expand, self.center, self.fill)
end

local function affine_draw(degrees, translate, scale, shear, h, w)
  local angle = uniform(degrees[1], degrees[2])
  local tx, ty = 0, 0
  if translate then
    local mdx, mdy = translate[1] * w, translate[2] * h
    tx = pyround(uniform(-mdx, mdx))
    ty = pyround(uniform(-mdy, mdy))
  end
  local s = 1.0
  if scale then s = uniform(scale[1], scale[2]) end
  local shx, shy = 0.0, 0.0
  if shear then
    shx = uniform(shear[1], shear[2])
    if #shear == 4 then shy = uniform(shear[3], shear[4]) end
  end
  return angle, { tx, ty }, s, { shx, shy }
end

--- T.RandomAffine(degrees[, translate[, scale[, shear[, interpolation = "nearest"[, fill = 0[, center]]]]]])
T.RandomAffine = T.Transform:extend("RandomAffine", { "degrees", "translate?", "scale?", "shear?", "interpolation?", "fill?", "center?" })
function T.RandomAffine:init(degrees, translate, scale, shear, interpolation, fill, center)
  local fn = "RandomAffine"
  self.degrees = setup_angle(fn, degrees, "degrees", { 2 })
  if translate ~= nil then
    if not is_seq(translate) or #translate ~= 2 then check.fail(fn, "translate should be a sequence of length 2.") end
    for _, t in ipairs(translate) do
      if not (is_num(t) and t >= 0 and t <= 1) then check.fail(fn, "translation values should be between 0 and 1") end
    end
  end
  self.translate = translate
  if scale ~= nil then
    if not is_seq(scale) or #scale ~= 2 then check.fail(fn, "scale should be a sequence of length 2.") end
    for _, s in ipairs(scale) do if not (is_num(s) and s > 0) then check.fail(fn, "scale values should be positive") end end
  end
  self.scale = scale
  self.shear = shear ~= nil and setup_angle(fn, shear, "shear", { 2, 4 }) or nil
  self.interpolation = TF._interpolation_arg(fn, interpolation, "nearest")
  if fill == nil then fill = 0 end
  self.fill = fill
  if center ~= nil and (not is_seq(center) or #center ~= 2) then check.fail(fn, "center should be a sequence of length 2.") end
  self.center = center
end
--- RandomAffine.get_params(degrees, translate, scale_ranges, shears, img_size): angle, {tx, ty}, scale, {shx, shy}
--- (img_size {W, H}, torchvision's v1)
function T.RandomAffine.get_params(degrees, translate, scale_ranges, shears, img_size)
  return affine_draw(degrees, translate, scale_ranges, shears, img_size[2], img_size[1])
end
function T.RandomAffine:make_params(list)
  local _, h, w = query_chw(self.__name, list)
  local angle, translate, scale, shear = affine_draw(self.degrees, self.translate, self.scale, self.shear, h, w)
  return { angle = angle, translate = translate, scale = scale, shear = shear }
end
function T.RandomAffine:transform(x, p)
  return TF.affine(x, p.angle, p.translate, p.scale, p.shear, self.interpolation, self.fill, self.center)
end

-- ---------------------------------------------------------------- color

local function jitter_range(fn, value, name, center, lo, hi, clip)
  if value == nil then return nil end
  if is_num(value) then
    if value < 0 then check.fail(fn, "If %s is a single number, it must be non negative.", name) end
    value = { center - value, center + value }
    if clip then value[1] = math.max(value[1], 0.0) end
  elseif is_seq(value) and #value == 2 and is_num(value[1]) and is_num(value[2]) then
    value = { value[1], value[2] }
  else
    check.fail(fn, "%s=%s should be a single number or a sequence with length 2.", name, check.describe(value))
  end
  if not (lo <= value[1] and value[1] <= value[2] and value[2] <= hi) then
    check.fail(fn, "%s values should be between (%s, %s) and increasing, but got [%s, %s].", name, tostring(lo),
      hi == math.huge and "inf" or tostring(hi), tostring(value[1]), tostring(value[2]))
  end
  if value[1] == center and value[2] == center then return nil end
  return value
end

--- T.ColorJitter([brightness[, contrast[, saturation[, hue]]]]): each a number v (the range {1 - v, 1 + v},
--- hue's {-v, v}) or {min, max}; applied in a random order
T.ColorJitter = T.Transform:extend("ColorJitter", { "brightness?", "contrast?", "saturation?", "hue?" })
function T.ColorJitter:init(brightness, contrast, saturation, hue)
  local fn = "ColorJitter"
  self.brightness = jitter_range(fn, brightness, "brightness", 1, 0, math.huge, true)
  self.contrast = jitter_range(fn, contrast, "contrast", 1, 0, math.huge, true)
  self.saturation = jitter_range(fn, saturation, "saturation", 1, 0, math.huge, true)
  self.hue = jitter_range(fn, hue, "hue", 0, -0.5, 0.5, false)
end
--- ColorJitter.get_params(brightness, contrast, saturation, hue): fn_idx (a permutation of 1..4: brightness,
--- contrast, saturation, hue), then each factor drawn from its {min, max} range (nil for a nil range)
function T.ColorJitter.get_params(brightness, contrast, saturation, hue)
  local fn_idx = wick.randperm(4)
  local function draw(r) return r and uniform(r[1], r[2]) or nil end
  local b = draw(brightness)
  local c = draw(contrast)
  local s = draw(saturation)
  local h = draw(hue)
  return fn_idx, b, c, s, h
end
function T.ColorJitter:make_params()
  local fn_idx, b, c, s, h = T.ColorJitter.get_params(self.brightness, self.contrast, self.saturation, self.hue)
  return { fn_idx = fn_idx:totable(), brightness_factor = b, contrast_factor = c, saturation_factor = s, hue_factor = h }
end
function T.ColorJitter:transform(x, p)
  for _, id in ipairs(p.fn_idx) do
    if id == 1 and p.brightness_factor then x = TF.adjust_brightness(x, p.brightness_factor)
    elseif id == 2 and p.contrast_factor then x = TF.adjust_contrast(x, p.contrast_factor)
    elseif id == 3 and p.saturation_factor then x = TF.adjust_saturation(x, p.saturation_factor)
    elseif id == 4 and p.hue_factor then x = TF.adjust_hue(x, p.hue_factor) end
  end
  return x
end

--- T.Grayscale([num_output_channels = 1])
T.Grayscale = T.Transform:extend("Grayscale", { "num_output_channels?" })
function T.Grayscale:init(n)
  n = n or 1
  if n ~= 1 and n ~= 3 then check.fail("Grayscale", "num_output_channels must be 1 or 3, got %s.", tostring(n)) end
  self.num_output_channels = n
end
function T.Grayscale:transform(x) return TF.rgb_to_grayscale(x, self.num_output_channels) end

--- T.RandomGrayscale([p = 0.1]): gray with as many channels as the input, with probability p
T.RandomGrayscale = RandomApplyTransform:extend("RandomGrayscale", { "p?" })
function T.RandomGrayscale:init(p) self.p = p_arg("RandomGrayscale", p == nil and 0.1 or p) end
function T.RandomGrayscale:make_params(list)
  local c = query_chw(self.__name, list)
  return { num_input_channels = c }
end
function T.RandomGrayscale:transform(x, p) return TF.rgb_to_grayscale(x, p.num_input_channels) end

--- T.GaussianBlur(kernel_size[, sigma = {0.1, 2}]): sigma drawn uniformly from {min, max} (a number: fixed)
T.GaussianBlur = T.Transform:extend("GaussianBlur", { "kernel_size", "sigma?" })
function T.GaussianBlur:init(kernel_size, sigma)
  local fn = "GaussianBlur"
  if is_num(kernel_size) then kernel_size = { kernel_size, kernel_size }
  elseif not is_seq(kernel_size) or #kernel_size ~= 2 then check.fail(fn, "Kernel size should be a tuple/list of two integers") end
  for _, k in ipairs(kernel_size) do
    if not is_num(k) or k <= 0 or k % 2 == 0 or k ~= floor(k) then check.fail(fn, "Kernel size value should be an odd and positive number.") end
  end
  self.kernel_size = { kernel_size[1], kernel_size[2] }
  sigma = sigma or { 0.1, 2.0 }
  if is_num(sigma) then
    if sigma <= 0 then check.fail(fn, "If sigma is a single number, it must be positive.") end
    sigma = { sigma, sigma }
  elseif is_seq(sigma) and (#sigma == 1 or #sigma == 2) then
    sigma = { sigma[1], sigma[#sigma] }
  else
    check.fail(fn, "sigma should be a single int or float or a list/tuple with length 2 floats.")
  end
  if not (is_num(sigma[1]) and is_num(sigma[2]) and 0 < sigma[1] and sigma[1] <= sigma[2]) then
    check.fail(fn, "sigma values should be positive and of the form (min, max). Got (%s, %s)", tostring(sigma[1]), tostring(sigma[2]))
  end
  self.sigma = sigma
end
--- GaussianBlur.get_params(sigma_min, sigma_max): a sigma drawn uniformly
function T.GaussianBlur.get_params(sigma_min, sigma_max) return uniform(sigma_min, sigma_max) end
function T.GaussianBlur:make_params()
  local s = uniform(self.sigma[1], self.sigma[2])
  return { sigma = { s, s } }
end
function T.GaussianBlur:transform(x, p) return TF.gaussian_blur(x, self.kernel_size, p.sigma) end

-- ---------------------------------------------------------------- erasing

local function erasing_params(c, img_h, img_w, scale, ratio, value)
  local draw = area_draw(img_h * img_w, scale, ratio)
  for _ = 1, 10 do
    local erase_area, aspect = draw()
    local h = pyround(sqrt(erase_area * aspect))
    local w = pyround(sqrt(erase_area / aspect))
    if h < img_h and w < img_w then
      local v
      if value == nil then
        v = wick.empty({ c, h, w }, { dtype = "float32" }):normal_()
      else
        v = wick.tensor(value):view(-1, 1, 1)
      end
      local i = randint(0, img_h - h + 1)
      local j = randint(0, img_w - w + 1)
      return i, j, h, w, v
    end
  end
  return 0, 0, img_h, img_w, nil
end

--- T.RandomErasing([p = 0.5[, scale = {0.02, 0.33}[, ratio = {0.3, 3.3}[, value = 0[, inplace = false]]]]]):
--- a random window set to value (a number, one per channel, or "random": normal noise)
T.RandomErasing = RandomApplyTransform:extend("RandomErasing", { "p?", "scale?", "ratio?", "value?", "inplace?" })
function T.RandomErasing:init(p, scale, ratio, value, inplace)
  local fn = "RandomErasing"
  self.p = p_arg(fn, p)
  if value == nil then value = 0.0 end
  if not (is_num(value) or type(value) == "string" or is_seq(value)) then
    check.fail(fn, "Argument value should be either a number or str or a sequence")
  end
  if type(value) == "string" and value ~= "random" then check.fail(fn, "If value is str, it should be 'random'") end
  scale = scale or { 0.02, 0.33 }
  ratio = ratio or { 0.3, 3.3 }
  if not is_seq(scale) then check.fail(fn, "Scale should be a sequence") end
  if not is_seq(ratio) then check.fail(fn, "Ratio should be a sequence") end
  if scale[1] > scale[2] or ratio[1] > ratio[2] then io.stderr:write("RandomErasing: Scale and ratio should be of kind (min, max)\n") end
  if scale[1] < 0 or scale[2] > 1 then check.fail(fn, "Scale should be between 0 and 1") end
  self.scale, self.ratio = { scale[1], scale[2] }, { ratio[1], ratio[2] }
  if is_num(value) then self.value = { value }
  elseif type(value) == "string" then self.value = nil
  else self.value = { unpack(value) } end
  self.inplace = inplace == true
end
--- RandomErasing.get_params(img, scale, ratio[, value]): i, j, h, w, v (v nil: no window found, erase nothing;
--- value nil: normal noise)
function T.RandomErasing.get_params(img, scale, ratio, value)
  TF._image_arg(img, "RandomErasing.get_params", 3)
  if is_num(value) then value = { value } end
  return erasing_params(img:size(-3), img:size(-2), img:size(-1), scale, ratio, value)
end
function T.RandomErasing:make_params(list)
  local c, h, w = query_chw(self.__name, list)
  if self.value ~= nil and #self.value ~= 1 and #self.value ~= c then
    check.fail("RandomErasing", "If value is a sequence, it should have either a single value or %d (number of inpt channels)", c)
  end
  local i, j, hh, ww, v = erasing_params(c, h, w, self.scale, self.ratio, self.value)
  return { i = i, j = j, h = hh, w = ww, v = v }
end
function T.RandomErasing:transform(x, p)
  if p.v == nil then return x end
  return TF.erase(x, p.i, p.j, p.h, p.w, p.v, self.inplace)
end

-- ---------------------------------------------------------------- automatic augmentation

local function linspace(a, b, n) return wick.linspace(a, b, n) end
local function posterize_bins(n, div)
  return wick.arange(n):div((n - 1) / div):neg():add(8):round():to("int32")
end
-- the ops of the augmentation spaces: name, magnitudes(num_bins, h, w) or nil, signed
local function space(entries)
  local s = {}
  for i, e in ipairs(entries) do s[i] = { name = e[1], magnitudes = e[2], signed = e[3] } end
  return s
end
local function base_space(wide)
  local m = wide and 0.99 or 0.3
  local c = wide and 0.99 or 0.9
  return {
    { "ShearX", function(n) return linspace(0.0, m, n) end, true },
    { "ShearY", function(n) return linspace(0.0, m, n) end, true },
    { "TranslateX", wide and function(n) return linspace(0.0, 32.0, n) end
      or function(n, _, w) return linspace(0.0, 150.0 / 331.0 * w, n) end, true },
    { "TranslateY", wide and function(n) return linspace(0.0, 32.0, n) end
      or function(n, h) return linspace(0.0, 150.0 / 331.0 * h, n) end, true },
    { "Rotate", function(n) return linspace(0.0, wide and 135.0 or 30.0, n) end, true },
    { "Brightness", function(n) return linspace(0.0, c, n) end, true },
    { "Color", function(n) return linspace(0.0, c, n) end, true },
    { "Contrast", function(n) return linspace(0.0, c, n) end, true },
    { "Sharpness", function(n) return linspace(0.0, c, n) end, true },
    { "Posterize", function(n) return posterize_bins(n, wide and 6 or 4) end, false },
    { "Solarize", function(n) return linspace(1.0, 0.0, n) end, false },
    { "AutoContrast", nil, false },
    { "Equalize", nil, false },
  }
end
local AA_SPACE = base_space(false)
AA_SPACE[#AA_SPACE + 1] = { "Invert", nil, false }
AA_SPACE = space(AA_SPACE)
local RA_SPACE = base_space(false)
table.insert(RA_SPACE, 1, { "Identity", nil, false })
RA_SPACE = space(RA_SPACE)
local TA_SPACE = base_space(true)
table.insert(TA_SPACE, 1, { "Identity", nil, false })
TA_SPACE = space(TA_SPACE)
local function by_name(sp)
  local t = {}
  for _, e in ipairs(sp) do t[e.name] = e end
  return t
end
local AA_BY_NAME = by_name(AA_SPACE)

-- one op on the image at a magnitude: torchvision's _apply_image_or_video_transform
local function apply_op(img, id, magnitude, interpolation, fill)
  if id == "Identity" then return img end
  local trunc = magnitude >= 0 and floor(magnitude) or -floor(-magnitude)
  if id == "ShearX" then
    return TF.affine(img, 0.0, { 0, 0 }, 1.0, { math.deg(math.atan(magnitude)), 0.0 }, interpolation, fill, { 0, 0 })
  elseif id == "ShearY" then
    return TF.affine(img, 0.0, { 0, 0 }, 1.0, { 0.0, math.deg(math.atan(magnitude)) }, interpolation, fill, { 0, 0 })
  elseif id == "TranslateX" then
    return TF.affine(img, 0.0, { trunc, 0 }, 1.0, { 0.0, 0.0 }, interpolation, fill)
  elseif id == "TranslateY" then
    return TF.affine(img, 0.0, { 0, trunc }, 1.0, { 0.0, 0.0 }, interpolation, fill)
  elseif id == "Rotate" then return TF.rotate(img, magnitude, interpolation, false, nil, fill)
  elseif id == "Brightness" then return TF.adjust_brightness(img, 1.0 + magnitude)
  elseif id == "Color" then return TF.adjust_saturation(img, 1.0 + magnitude)
  elseif id == "Contrast" then return TF.adjust_contrast(img, 1.0 + magnitude)
  elseif id == "Sharpness" then return TF.adjust_sharpness(img, 1.0 + magnitude)
  elseif id == "Posterize" then return TF.posterize(img, trunc)
  elseif id == "Solarize" then return TF.solarize(img, TF._max_value(img.dtype) * magnitude)
  elseif id == "AutoContrast" then return TF.autocontrast(img)
  elseif id == "Equalize" then return TF.equalize(img)
  elseif id == "Invert" then return TF.invert(img) end
  check.fail("AutoAugment", "No transform available for %s", tostring(id))
end

-- the one image among the inputs (auto augmentations take a single image)
local function the_image(fn, list, n)
  local at
  for i = 1, (n or #list) do
    if is_tensor(list[i]) then
      if at then
        check.fail(fn, "Auto augment transformations are only properly defined for a single image or video, but found 2 or more.")
      end
      at = i
    end
  end
  if not at then check.fail(fn, "Found no image in the sample.") end
  TF._image_arg(list[at], fn, 3)
  return at
end
local function auto_forward(self, body, ...)
  local list, how, n = inputs_of(...)
  local at = the_image(self.__name, list, n)
  local img = list[at]
  local out = {}
  for i = 1, (n or #list) do out[i] = list[i] end
  out[at] = body(self, img, img:size(-2), img:size(-1))
  return outputs(out, how, n)
end
local function auto_init(self, fn, interpolation, fill)
  self.interpolation = TF._interpolation_arg(fn, interpolation, "nearest")
  if self.interpolation ~= "nearest" and self.interpolation ~= "bilinear" then
    check.fail(fn, "Interpolation mode '%s' is unsupported with Tensor input", self.interpolation)
  end
  if fill ~= nil and not is_num(fill) and not is_seq(fill) then
    check.fail(fn, "Got inappropriate fill arg: %s", check.describe(fill))
  end
  self.fill = fill
end
local function random_op(sp) return sp[wick.randint(0, #sp, {}):item() + 1] end

local POLICIES = {
  imagenet = {
    { { "Posterize", 0.4, 8 }, { "Rotate", 0.6, 9 } }, { { "Solarize", 0.6, 5 }, { "AutoContrast", 0.6 } },
    { { "Equalize", 0.8 }, { "Equalize", 0.6 } }, { { "Posterize", 0.6, 7 }, { "Posterize", 0.6, 6 } },
    { { "Equalize", 0.4 }, { "Solarize", 0.2, 4 } }, { { "Equalize", 0.4 }, { "Rotate", 0.8, 8 } },
    { { "Solarize", 0.6, 3 }, { "Equalize", 0.6 } }, { { "Posterize", 0.8, 5 }, { "Equalize", 1.0 } },
    { { "Rotate", 0.2, 3 }, { "Solarize", 0.6, 8 } }, { { "Equalize", 0.6 }, { "Posterize", 0.4, 6 } },
    { { "Rotate", 0.8, 8 }, { "Color", 0.4, 0 } }, { { "Rotate", 0.4, 9 }, { "Equalize", 0.6 } },
    { { "Equalize", 0.0 }, { "Equalize", 0.8 } }, { { "Invert", 0.6 }, { "Equalize", 1.0 } },
    { { "Color", 0.6, 4 }, { "Contrast", 1.0, 8 } }, { { "Rotate", 0.8, 8 }, { "Color", 1.0, 2 } },
    { { "Color", 0.8, 8 }, { "Solarize", 0.8, 7 } }, { { "Sharpness", 0.4, 7 }, { "Invert", 0.6 } },
    { { "ShearX", 0.6, 5 }, { "Equalize", 1.0 } }, { { "Color", 0.4, 0 }, { "Equalize", 0.6 } },
    { { "Equalize", 0.4 }, { "Solarize", 0.2, 4 } }, { { "Solarize", 0.6, 5 }, { "AutoContrast", 0.6 } },
    { { "Invert", 0.6 }, { "Equalize", 1.0 } }, { { "Color", 0.6, 4 }, { "Contrast", 1.0, 8 } },
    { { "Equalize", 0.8 }, { "Equalize", 0.6 } },
  },
  cifar10 = {
    { { "Invert", 0.1 }, { "Contrast", 0.2, 6 } }, { { "Rotate", 0.7, 2 }, { "TranslateX", 0.3, 9 } },
    { { "Sharpness", 0.8, 1 }, { "Sharpness", 0.9, 3 } }, { { "ShearY", 0.5, 8 }, { "TranslateY", 0.7, 9 } },
    { { "AutoContrast", 0.5 }, { "Equalize", 0.9 } }, { { "ShearY", 0.2, 7 }, { "Posterize", 0.3, 7 } },
    { { "Color", 0.4, 3 }, { "Brightness", 0.6, 7 } }, { { "Sharpness", 0.3, 9 }, { "Brightness", 0.7, 9 } },
    { { "Equalize", 0.6 }, { "Equalize", 0.5 } }, { { "Contrast", 0.6, 7 }, { "Sharpness", 0.6, 5 } },
    { { "Color", 0.7, 7 }, { "TranslateX", 0.5, 8 } }, { { "Equalize", 0.3 }, { "AutoContrast", 0.4 } },
    { { "TranslateY", 0.4, 3 }, { "Sharpness", 0.2, 6 } }, { { "Brightness", 0.9, 6 }, { "Color", 0.2, 8 } },
    { { "Solarize", 0.5, 2 }, { "Invert", 0.0 } }, { { "Equalize", 0.2 }, { "AutoContrast", 0.6 } },
    { { "Equalize", 0.2 }, { "Equalize", 0.6 } }, { { "Color", 0.9, 9 }, { "Equalize", 0.6 } },
    { { "AutoContrast", 0.8 }, { "Solarize", 0.2, 8 } }, { { "Brightness", 0.1, 3 }, { "Color", 0.7, 0 } },
    { { "Solarize", 0.4, 5 }, { "AutoContrast", 0.9 } }, { { "TranslateY", 0.9, 9 }, { "TranslateY", 0.7, 9 } },
    { { "AutoContrast", 0.9 }, { "Solarize", 0.8, 3 } }, { { "Equalize", 0.8 }, { "Invert", 0.1 } },
    { { "TranslateY", 0.7, 9 }, { "AutoContrast", 0.9 } },
  },
  svhn = {
    { { "ShearX", 0.9, 4 }, { "Invert", 0.2 } }, { { "ShearY", 0.9, 8 }, { "Invert", 0.7 } },
    { { "Equalize", 0.6 }, { "Solarize", 0.6, 6 } }, { { "Invert", 0.9 }, { "Equalize", 0.6 } },
    { { "Equalize", 0.6 }, { "Rotate", 0.9, 3 } }, { { "ShearX", 0.9, 4 }, { "AutoContrast", 0.8 } },
    { { "ShearY", 0.9, 8 }, { "Invert", 0.4 } }, { { "ShearY", 0.9, 5 }, { "Solarize", 0.2, 6 } },
    { { "Invert", 0.9 }, { "AutoContrast", 0.8 } }, { { "Equalize", 0.6 }, { "Rotate", 0.9, 3 } },
    { { "ShearX", 0.9, 4 }, { "Solarize", 0.3, 3 } }, { { "ShearY", 0.8, 8 }, { "Invert", 0.7 } },
    { { "Equalize", 0.9 }, { "TranslateY", 0.6, 6 } }, { { "Invert", 0.9 }, { "Equalize", 0.6 } },
    { { "Contrast", 0.3, 3 }, { "Rotate", 0.8, 4 } }, { { "Invert", 0.8 }, { "TranslateY", 0.0, 2 } },
    { { "ShearY", 0.7, 6 }, { "Solarize", 0.4, 8 } }, { { "Invert", 0.6 }, { "Rotate", 0.8, 4 } },
    { { "ShearY", 0.3, 7 }, { "TranslateX", 0.9, 3 } }, { { "ShearX", 0.1, 6 }, { "Invert", 0.6 } },
    { { "Solarize", 0.7, 2 }, { "TranslateY", 0.6, 7 } }, { { "ShearY", 0.8, 4 }, { "Invert", 0.8 } },
    { { "ShearX", 0.7, 9 }, { "TranslateY", 0.8, 3 } }, { { "ShearY", 0.8, 5 }, { "AutoContrast", 0.7 } },
    { { "ShearX", 0.7, 2 }, { "Invert", 0.1 } },
  },
}

--- T.AutoAugment([policy = "imagenet"[, interpolation = "nearest"[, fill]]]): policy "imagenet", "cifar10" or "svhn"
--- (T.AutoAugmentPolicy.IMAGENET, ...)
T.AutoAugment = T.Transform:extend("AutoAugment", { "policy?", "interpolation?", "fill?" })
function T.AutoAugment:init(policy, interpolation, fill)
  local fn = "AutoAugment"
  policy = policy or "imagenet"
  if type(policy) ~= "string" or not POLICIES[policy:lower()] then
    check.fail(fn, "The provided policy %s is not recognized.", check.describe(policy))
  end
  self.policy = policy:lower()
  auto_init(self, fn, interpolation, fill)
end
local function autoaugment_body(self, img, h, w)
  local policies = POLICIES[self.policy]
  local policy = policies[wick.randint(0, #policies, {}):item() + 1]
  for _, op in ipairs(policy) do
    local id, prob, level = op[1], op[2], op[3]
    if wick.rand({}):item() <= prob then
      local entry = AA_BY_NAME[id]
      local magnitude = 0.0
      if entry.magnitudes then
        magnitude = entry.magnitudes(10, h, w)[level + 1]:item()
        if entry.signed and wick.rand({}):item() <= 0.5 then magnitude = -magnitude end
      end
      img = apply_op(img, id, magnitude, self.interpolation, self.fill)
    end
  end
  return img
end
function T.AutoAugment:forward(...) return auto_forward(self, autoaugment_body, ...) end

--- T.RandAugment([num_ops = 2[, magnitude = 9[, num_magnitude_bins = 31[, interpolation = "nearest"[, fill]]]]])
T.RandAugment = T.Transform:extend("RandAugment", { "num_ops?", "magnitude?", "num_magnitude_bins?", "interpolation?", "fill?" })
function T.RandAugment:init(num_ops, magnitude, num_magnitude_bins, interpolation, fill)
  local fn = "RandAugment"
  num_ops = num_ops == nil and 2 or num_ops
  if type(num_ops) ~= "number" or num_ops ~= floor(num_ops) or num_ops < 0 then
    check.fail(fn, "num_ops should be a non-negative integer, but got %s instead.", check.describe(num_ops))
  end
  self.num_ops = num_ops
  self.magnitude = magnitude == nil and 9 or magnitude
  self.num_magnitude_bins = num_magnitude_bins or 31
  if not (is_num(self.num_magnitude_bins) and self.num_magnitude_bins >= 2 and self.num_magnitude_bins == floor(self.num_magnitude_bins)) then
    check.fail(fn, "num_magnitude_bins should be an integer of at least 2, got %s", check.describe(self.num_magnitude_bins))
  end
  if not (is_num(self.magnitude) and self.magnitude == floor(self.magnitude) and self.magnitude >= 0
      and self.magnitude < self.num_magnitude_bins) then
    check.fail(fn, "magnitude should be an integer in [0, %d), got %s", self.num_magnitude_bins, check.describe(self.magnitude))
  end
  auto_init(self, fn, interpolation, fill)
end
local function randaugment_body(self, img, h, w)
  for _ = 1, self.num_ops do
    local entry = random_op(RA_SPACE)
    local magnitude = 0.0
    if entry.magnitudes then
      magnitude = entry.magnitudes(self.num_magnitude_bins, h, w)[self.magnitude + 1]:item()
      if entry.signed and wick.rand({}):item() <= 0.5 then magnitude = -magnitude end
    end
    img = apply_op(img, entry.name, magnitude, self.interpolation, self.fill)
  end
  return img
end
function T.RandAugment:forward(...) return auto_forward(self, randaugment_body, ...) end

--- T.TrivialAugmentWide([num_magnitude_bins = 31[, interpolation = "nearest"[, fill]]])
T.TrivialAugmentWide = T.Transform:extend("TrivialAugmentWide", { "num_magnitude_bins?", "interpolation?", "fill?" })
function T.TrivialAugmentWide:init(num_magnitude_bins, interpolation, fill)
  local fn = "TrivialAugmentWide"
  self.num_magnitude_bins = num_magnitude_bins or 31
  if not (is_num(self.num_magnitude_bins) and self.num_magnitude_bins >= 2 and self.num_magnitude_bins == floor(self.num_magnitude_bins)) then
    check.fail(fn, "num_magnitude_bins should be an integer of at least 2, got %s", check.describe(self.num_magnitude_bins))
  end
  auto_init(self, fn, interpolation, fill)
end
local function trivial_body(self, img, h, w)
  local entry = random_op(TA_SPACE)
  local magnitude = 0.0
  if entry.magnitudes then
    local level = wick.randint(0, self.num_magnitude_bins, {}):item()
    magnitude = entry.magnitudes(self.num_magnitude_bins, h, w)[level + 1]:item()
    if entry.signed and wick.rand({}):item() <= 0.5 then magnitude = -magnitude end
  end
  return apply_op(img, entry.name, magnitude, self.interpolation, self.fill)
end
function T.TrivialAugmentWide:forward(...) return auto_forward(self, trivial_body, ...) end

-- ---------------------------------------------------------------- the functional module

local names = {}
for k, v in pairs(TF) do if k:sub(1, 1) ~= "_" then names[k] = v end end
T.functional = check.strict(names, "wick.vision.transforms.functional")
-- torchvision.transforms.v2 is the same module here (`import torchvision.transforms.v2 as T`)
T.v2 = T
return check.strict(T, "wick.vision.transforms")
