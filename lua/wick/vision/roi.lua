-- wick.vision.ops' region-of-interest pooling, torchvision's: roi_align and
-- RoIAlign (Mask R-CNN's bilinear pooling), roi_pool and RoIPool (Fast
-- R-CNN's max pooling), and MultiScaleRoIAlign (Faster R-CNN's FPN pooler
-- with its LevelMapper). Composed of wick's ops, so the gradient reaches the
-- features on any device (none reaches the boxes, as torchvision's). A box
-- list's row of rois is (batch index, x1, y1, x2, y2), the batch index 1-based.
local wick = require("wick")
local check = require("wick.argcheck")
local Module = require("wick.nn.module")
local common = require("wick.nn.common")
local ordered = require("wick.ordered")

local R = {}

-- The (K, 5) rois of `boxes`: a (K, 5) tensor as it is, or a list of (L, 4) boxes per image
-- (torchvision's convert_boxes_to_roi_format: image i's boxes get batch index i), detached,
-- in the features' dtype
local function rois_of(boxes, fn, input)
  local rois
  if wick.is_tensor(boxes) then
    if boxes:dim() ~= 2 or boxes:size(2) ~= 5 then
      check.fail(fn, "boxes must be a tensor of shape [K, 5] (batch index from 1, x1, y1, x2, y2) or a list of "
        .. "[L, 4] tensors, one per image; got a tensor of %s", tostring(boxes.shape))
    end
    rois = boxes
  elseif type(boxes) == "table" and getmetatable(boxes) == nil then
    local parts = {}
    for i, b in ipairs(boxes) do
      if not wick.is_tensor(b) or b:dim() ~= 2 or b:size(2) ~= 4 then
        check.fail(fn, "boxes[%d] must be a tensor of shape [L, 4] as (x1, y1, x2, y2), got %s", i,
          wick.is_tensor(b) and "a tensor of " .. tostring(b.shape) or check.describe(b))
      end
      b = b:detach():to(input.dtype)
      parts[i] = wick.cat({ wick.full({ b:size(1), 1 }, i, { dtype = b.dtype, device = b.device }), b }, 2)
    end
    rois = #parts > 0 and wick.cat(parts) or wick.zeros({ 0, 5 }, { dtype = input.dtype, device = input.device })
  else
    check.expected(fn, "boxes", "a [K, 5] tensor or a list of [L, 4] tensors", boxes)
  end
  rois = rois:detach():to(input.dtype)
  if rois.device ~= input.device then
    check.fail(fn, "expected the boxes on the input's device %s, got %s", tostring(input.device), tostring(rois.device))
  end
  local b = rois:select(2, 1)
  if rois:size(1) > 0 and (b:lt(1):any() or b:gt(input:size(1)):any() or b:ne(b:floor()):any()) then
    check.fail(fn, "a box's batch index is not an image of the input: they count from 1 to %d", input:size(1))
  end
  if rois:size(1) > 0 and not rois:isfinite():all() then
    local at = rois:isfinite():all(2):logical_not():nonzero()[1][1]:item()
    check.fail(fn, "box %d is not finite: its corners are %s", at, Module._py(rois[at]:narrow(1, 2, 4):totable()))
  end
  return rois
end

local function input_arg(input, fn)
  check.tensor(input, fn, "input")
  if input:dim() ~= 4 then check.fail(fn, "expected input of shape (N, C, H, W), got %s", tostring(input.shape)) end
  if not input:is_floating_point() then check.fail(fn, "expected a floating input, got %s", input.dtype) end
end
-- an empty (0, C, ph, pw) result that is still part of the input's graph
local function no_rois(input, ph, pw) return input:reshape(-1):narrow(1, 1, 0):view(0, input:size(2), ph, pw) end

-- Along one axis of size `size`, torchvision's bilinear corners for the sample positions p:
-- (low, high) 0-based int64 and their weights, zero where p is beyond [-1, size]
local function corners(p, size)
  local valid = p:ge(-1):logical_and(p:le(size)):to(p.dtype)
  local y = p:clamp_min(0)
  local low = y:floor()
  local top = low:ge(size - 1)
  low = wick.where(top, size - 1, low)
  local high = wick.where(top, size - 1, low + 1)
  local ly = wick.where(top, low, y) - low
  return low:long(), high:long(), (1 - ly) * valid, ly * valid
end

-- The samples of rois `at` (a 1-based index tensor), g x g' points per bin: (k, C, ph, pw)
local function align_group(feat, dims, r, at, g, ph, pw)
  local H, W, C = dims[1], dims[2], dims[3]
  local gh, gw = g[1], g[2]
  local k = at:size(1)
  local pick = function(t) return t:index_select(1, at) end
  local y1, x1, bh, bw, b = pick(r.y1), pick(r.x1), pick(r.bh), pick(r.bw), pick(r.b)
  -- (no sample: a reversed aligned box's negative grid too, whose loops torchvision never enters)
  if gh <= 0 or gw <= 0 then return wick.zeros({ k, C, ph, pw }, { dtype = feat.dtype, device = feat.device }) end
  local opts = { dtype = feat.dtype, device = feat.device }
  -- torchvision's sample positions: start + p * bin + (i + .5) * bin / grid
  local function positions(start, bin, pooled, grid)
    local p = wick.arange(pooled, opts):view(1, pooled, 1)
    local i = (wick.arange(grid, opts) + 0.5):view(1, 1, grid)
    return start:view(-1, 1, 1) + p * bin:view(-1, 1, 1) + i * bin:view(-1, 1, 1) / grid
  end
  local ylo, yhi, wylo, wyhi = corners(positions(y1, bh, ph, gh), H) -- (k, ph, gh)
  local xlo, xhi, wxlo, wxhi = corners(positions(x1, bw, pw, gw), W) -- (k, pw, gw)
  local rows = ((b:view(-1, 1, 1, 1) * H + wick.stack({ ylo, yhi }, -1)) * W):view(k, ph, gh * 2, 1, 1)
  local idx = rows + wick.stack({ xlo, xhi }, -1):view(k, 1, 1, pw, gw * 2)
  local wgt = wick.stack({ wylo, wyhi }, -1):view(k, ph, gh * 2, 1, 1) * wick.stack({ wxlo, wxhi }, -1):view(k, 1, 1, pw, gw * 2)
  local vals = feat:index_select(1, idx:reshape(-1) + 1):view(k, ph, gh * 2, pw, gw * 2, C)
  local out = (vals * wgt:unsqueeze(-1)):sum(5):sum(3) / math.max(gh * gw, 1) -- (k, ph, pw, C)
  return out:permute(1, 4, 2, 3)
end

local ROI_ALIGN = { output_size = "integer|table", spatial_scale = "number", sampling_ratio = "integer", aligned = "boolean" }
local ROI_ALIGN_ORDER = { "output_size", "spatial_scale", "sampling_ratio", "aligned" }
local ALIGN_ELEMENTS = 2 ^ 22 -- gathered values per step: rois go in chunks that stay under it

--- ops.roi_align(input, boxes, output_size[, spatial_scale = 1[, sampling_ratio = -1[, aligned = false]]])
--- (or those by name): (K, C, ph, pw), each box's bins averaged over bilinear samples of the (N, C, H,
--- W) features, as torchvision's (aligned = true shifts the boxes by half a pixel; a sampling_ratio
--- of 0 or less takes ceil(box size / output size) samples per bin)
function R.roi_align(input, boxes, ...)
  local fn = "roi_align"
  input_arg(input, fn)
  local o = check.positional(fn, ROI_ALIGN_ORDER, ROI_ALIGN, ...)
  if o.output_size == nil then check.fail(fn, "missing required argument 'output_size'") end
  local size = common.pair(o.output_size, fn, "output_size", 1)
  local ph, pw = size[1], size[2]
  local scale, ratio, aligned = o.spatial_scale or 1, o.sampling_ratio or -1, o.aligned == true
  local rois = rois_of(boxes, fn, input)
  local K, C, H, W = rois:size(1), input:size(2), input:size(3), input:size(4)
  if K == 0 then return no_rois(input, ph, pw) end
  if H == 0 or W == 0 then check.fail(fn, "the input's feature maps are empty (%s): no box can sample them", tostring(input.shape)) end
  local off = aligned and 0.5 or 0
  local r = { b = rois:select(2, 1):long() - 1 }
  r.x1, r.y1 = rois:select(2, 2) * scale - off, rois:select(2, 3) * scale - off
  local rw, rh = rois:select(2, 4) * scale - off - r.x1, rois:select(2, 5) * scale - off - r.y1
  if not aligned then rw, rh = rw:clamp_min(1), rh:clamp_min(1) end
  r.bh, r.bw = rh / ph, rw / pw
  local ghs = ratio > 0 and nil or r.bh:ceil():totable()
  local gws = ratio > 0 and nil or r.bw:ceil():totable()
  -- the rois by their grid of samples (one grid for all with a positive sampling_ratio)
  local groups, keys = {}, {}
  for i = 1, K do
    local gh, gw = ratio > 0 and ratio or ghs[i], ratio > 0 and ratio or gws[i]
    local key = gh .. "x" .. gw
    if not groups[key] then groups[key] = { grid = { gh, gw } }; keys[#keys + 1] = key end
    local list = groups[key]
    list[#list + 1] = i
  end
  local feat = input:permute(1, 3, 4, 2):reshape(-1, C) -- a row per (image, y, x)
  local parts, order = {}, {}
  for _, key in ipairs(keys) do
    local list, g = groups[key], groups[key].grid
    local per = math.max(1, math.floor(ALIGN_ELEMENTS / (ph * pw * math.max(g[1] * g[2], 1) * 4 * math.max(C, 1))))
    for s = 1, #list, per do
      local at = {}
      for j = s, math.min(#list, s + per - 1) do at[#at + 1] = list[j]; order[#order + 1] = list[j] end
      parts[#parts + 1] = align_group(feat, { H, W, C }, r, wick.tensor(at, { dtype = "int64", device = input.device }), g, ph, pw)
    end
  end
  local out = #parts == 1 and parts[1] or wick.cat(parts)
  local back = wick.tensor(order, { dtype = "int64", device = input.device }):argsort()
  return out:index_select(1, back)
end

-- C's round: halves away from zero (torchvision's std::round of the scaled corners)
local function round_away(v) return v < 0 and -math.floor(-v + 0.5) or math.floor(v + 0.5) end

local ROI_POOL = { output_size = "integer|table", spatial_scale = "number" }
--- ops.roi_pool(input, boxes, output_size[, spatial_scale = 1]): (K, C, ph, pw), the maximum of
--- each bin of each box (its corners rounded to pixels), 0 for an empty bin, as torchvision's
function R.roi_pool(input, boxes, ...)
  local fn = "roi_pool"
  input_arg(input, fn)
  local o = check.positional(fn, { "output_size", "spatial_scale" }, ROI_POOL, ...)
  if o.output_size == nil then check.fail(fn, "missing required argument 'output_size'") end
  local size = common.pair(o.output_size, fn, "output_size", 1)
  local ph, pw = size[1], size[2]
  local rois = rois_of(boxes, fn, input)
  local K, C, H, W = rois:size(1), input:size(2), input:size(3), input:size(4)
  if K == 0 then return no_rois(input, ph, pw) end
  local scaled = (rois:narrow(2, 2, 4) * (o.spatial_scale or 1)):totable()
  local batch = rois:select(2, 1):totable()
  local zero = wick.zeros({ C }, { dtype = input.dtype, device = input.device })
  local outs = {}
  -- bin p of n over a box side from `start` of `len` pixels: its [lo, hi) clipped to [0, limit)
  local function bin(p, n, start, len, limit)
    local sz = len / n
    local lo = math.floor(p * sz) + start
    local hi = math.ceil((p + 1) * sz) + start
    return math.min(math.max(lo, 0), limit), math.min(math.max(hi, 0), limit)
  end
  for k = 1, K do
    local x1, y1, x2, y2 = round_away(scaled[k][1]), round_away(scaled[k][2]), round_away(scaled[k][3]), round_away(scaled[k][4])
    local rw, rh = math.max(x2 - x1 + 1, 1), math.max(y2 - y1 + 1, 1)
    local img = input[batch[k]]
    local cells = {}
    for i = 0, ph - 1 do
      local h0, h1 = bin(i, ph, y1, rh, H)
      for j = 0, pw - 1 do
        local w0, w1 = bin(j, pw, x1, rw, W)
        if h1 <= h0 or w1 <= w0 then
          cells[#cells + 1] = zero
        else
          cells[#cells + 1] = (img:narrow(2, h0 + 1, h1 - h0):narrow(3, w0 + 1, w1 - w0):reshape(C, -1):max(2))
        end
      end
    end
    outs[k] = wick.stack(cells, 2):view(C, ph, pw)
  end
  return wick.stack(outs)
end

-- The modules over them
R.RoIAlign = Module:extend("RoIAlign", { "output_size", "spatial_scale", "sampling_ratio" })
--- ops.RoIAlign(output_size, spatial_scale, sampling_ratio[, aligned = false]): roi_align as a module,
--- called as m(input, rois)
function R.RoIAlign:init(output_size, spatial_scale, sampling_ratio, ...)
  local o = check.positional("RoIAlign", { "aligned" }, { aligned = "boolean" }, ...)
  self.output_size, self.spatial_scale, self.sampling_ratio = output_size, spatial_scale, sampling_ratio
  self.aligned = o.aligned == true
end
function R.RoIAlign:forward(input, rois)
  return R.roi_align(input, rois, self.output_size, self.spatial_scale, self.sampling_ratio, self.aligned)
end
local py = Module._py -- (Python's repr: a tuple for a size pair)
function R.RoIAlign:extra_repr()
  return ("output_size=%s, spatial_scale=%s, sampling_ratio=%s, aligned=%s"):format(py(self.output_size),
    py(self.spatial_scale), py(self.sampling_ratio), py(self.aligned))
end

R.RoIPool = Module:extend("RoIPool", { "output_size", "spatial_scale" })
--- ops.RoIPool(output_size, spatial_scale): roi_pool as a module, m(input, rois)
function R.RoIPool:init(output_size, spatial_scale) self.output_size, self.spatial_scale = output_size, spatial_scale end
function R.RoIPool:forward(input, rois) return R.roi_pool(input, rois, self.output_size, self.spatial_scale) end
function R.RoIPool:extra_repr() return ("output_size=%s, spatial_scale=%s"):format(py(self.output_size), py(self.spatial_scale)) end

-- ---- MultiScaleRoIAlign ----
R.LevelMapper = {}
R.LevelMapper.__index = R.LevelMapper
R.LevelMapper.__name = "LevelMapper"
--- ops.LevelMapper(k_min, k_max[, canonical_scale = 224[, canonical_level = 4[, eps = 1e-6]]]):
--- mapper(boxlists) gives each box its 1-based feature level, FPN paper's eq. 1 (torchvision's
--- 0-based level plus 1)
setmetatable(R.LevelMapper, { __call = function(cls, k_min, k_max, ...)
  local o = check.positional("LevelMapper", { "canonical_scale", "canonical_level", "eps" },
    { canonical_scale = "number", canonical_level = "number", eps = "number" }, ...)
  return setmetatable({ k_min = check.int(k_min, "LevelMapper", "k_min"), k_max = check.int(k_max, "LevelMapper", "k_max"),
    s0 = o.canonical_scale or 224, lvl0 = o.canonical_level or 4, eps = o.eps or 1e-6 }, cls)
end })
function R.LevelMapper:__call(boxlists)
  local areas = {}
  for i, b in ipairs(boxlists) do
    local x1, y1, x2, y2 = b:select(2, 1), b:select(2, 2), b:select(2, 3), b:select(2, 4)
    areas[i] = (x2 - x1) * (y2 - y1)
  end
  local s = wick.cat(areas):sqrt()
  local levels = (wick.log2(s / self.s0) + self.lvl0 + wick.tensor(self.eps, { dtype = s.dtype })):floor()
  return levels:clamp(self.k_min, self.k_max):long() - self.k_min + 1
end

-- torchvision's _infer_scale: the power of two nearest to a feature map's size over the image's
local function infer_scale(feature, original)
  local approx = feature:size(-2) / original[1]
  return 2 ^ wick.tensor(approx, { dtype = "float32" }):log2():round():item()
end

R.MultiScaleRoIAlign = Module:extend("MultiScaleRoIAlign", { "featmap_names", "output_size", "sampling_ratio" })
--- ops.MultiScaleRoIAlign(featmap_names, output_size, sampling_ratio[, {canonical_scale = 224,
--- canonical_level = 4}]): m(x, boxes, image_shapes) pools each box from the feature map of x (names
--- to (N, C, H, W) maps, an OrderedDict in FPN's order) its size maps it to, as torchvision's
function R.MultiScaleRoIAlign:init(featmap_names, output_size, sampling_ratio, ...)
  local fn = "MultiScaleRoIAlign"
  check.table(featmap_names, fn, "featmap_names")
  local o = check.positional(fn, {}, { canonical_scale = "number", canonical_level = "number" }, ...)
  self.featmap_names = featmap_names
  self.output_size = type(output_size) == "number" and { output_size, output_size } or output_size
  self.sampling_ratio = sampling_ratio
  self.canonical_scale, self.canonical_level = o.canonical_scale or 224, o.canonical_level or 4
end
function R.MultiScaleRoIAlign:forward(x, boxes, image_shapes)
  local fn = "MultiScaleRoIAlign"
  check.table(x, fn, "x")
  check.table(boxes, fn, "boxes")
  check.table(image_shapes, fn, "image_shapes")
  local wanted = {}
  for _, name in ipairs(self.featmap_names) do wanted[name] = true end
  local feats = {}
  for _, name in ipairs(ordered.is(x) and ordered.names(x) or self.featmap_names) do
    if wanted[name] then
      if x[name] == nil then check.fail(fn, "x has no feature map '%s'", tostring(name)) end
      feats[#feats + 1] = x[name]
    end
  end
  if #feats == 0 then check.fail(fn, "none of featmap_names is in x") end
  local max_h, max_w = 0, 0
  for _, s in ipairs(image_shapes) do max_h, max_w = math.max(max_h, s[1]), math.max(max_w, s[2]) end
  local scales = {}
  for i, f in ipairs(feats) do scales[i] = infer_scale(f, { max_h, max_w }) end
  self.scales = scales
  local rois = rois_of(boxes, fn, feats[1])
  if #feats == 1 then return R.roi_align(feats[1], rois, self.output_size, scales[1], self.sampling_ratio) end
  -- (every level is in the result's graph, boxes or none: a level without any gets a zero gradient,
  -- as torchvision's result[idx_in_level] = roi_align(...) gives it)
  if rois:size(1) == 0 then
    local parts = {}
    for i, feat in ipairs(feats) do parts[i] = no_rois(feat, self.output_size[1], self.output_size[2]) end
    return wick.cat(parts):to(feats[1].dtype)
  end
  local lvl_min = -wick.tensor(scales[1], { dtype = "float32" }):log2():item()
  local lvl_max = -wick.tensor(scales[#scales], { dtype = "float32" }):log2():item()
  self.map_levels = R.LevelMapper(math.floor(lvl_min), math.floor(lvl_max),
    { canonical_scale = self.canonical_scale, canonical_level = self.canonical_level })
  local levels = self.map_levels(boxes)
  local C = feats[1]:size(2)
  local parts, order = {}, {}
  for level, feat in ipairs(feats) do
    local at = levels:eq(level):nonzero():view(-1)
    parts[#parts + 1] = R.roi_align(feat, rois:index_select(1, at), self.output_size, scales[level], self.sampling_ratio)
    order[#order + 1] = at
  end
  local beyond = levels:gt(#feats):nonzero():view(-1) -- (levels without a map: zeros, as torchvision's)
  if beyond:numel() > 0 then
    parts[#parts + 1] = wick.zeros({ beyond:numel(), C, self.output_size[1], self.output_size[2] },
      { dtype = feats[1].dtype, device = feats[1].device })
    order[#order + 1] = beyond
  end
  local out = wick.cat(parts):to(feats[1].dtype)
  return out:index_select(1, wick.cat(order):argsort())
end
function R.MultiScaleRoIAlign:extra_repr()
  local names = {}
  for i, n in ipairs(self.featmap_names) do names[i] = "'" .. tostring(n) .. "'" end
  return ("featmap_names=[%s], output_size=%s, sampling_ratio=%s"):format(table.concat(names, ", "),
    py(self.output_size), py(self.sampling_ratio))
end

return R
