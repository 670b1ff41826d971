-- wick.vision: torchvision's operators (torchvision.ops), which detection
-- programs (YOLO's non_max_suppression, DETR's postprocessing, Faster R-CNN's
-- RPN and RoI heads) call beside torch: box arithmetic, box losses and
-- non-maximum suppression here; RoI pooling in vision/roi.lua; the layers
-- (FeaturePyramidNetwork, Conv2dNormActivation, ...) in vision/layers.lua.
-- Boxes are (N, 4) as (x1, y1, x2, y2) in pixels, torchvision's numbers;
-- indices (of boxes kept, of an image in a batch) are 1-based int64, wick's rule.
-- Loaded on first use of wick.vision (lua/wick/init.lua).
local wick = require("wick")
local check = require("wick.argcheck")

local ops = {}

local function boxes_arg(b, fn, arg)
  check.tensor(b, fn, arg)
  if b:dim() ~= 2 or b:size(2) ~= 4 then
    check.fail(fn, "expected %s of shape (N, 4) as (x1, y1, x2, y2), got %s", arg, tostring(b.shape))
  end
  return b
end
-- boxes of shape (..., 4)
local function last4_arg(b, fn, arg)
  check.tensor(b, fn, arg)
  if b:dim() < 1 or b:size(-1) ~= 4 then check.fail(fn, "expected %s of shape (..., 4), got %s", arg, tostring(b.shape)) end
  return b
end
-- the four coordinates of (..., 4) boxes, each (...): PyTorch's boxes.unbind(-1)
local function corners(b) return b:select(-1, 1), b:select(-1, 2), b:select(-1, 3), b:select(-1, 4) end
-- torchvision's _upcast: half precision to float32, small integers to int32, so products do not overflow
local function upcast(t)
  if t:is_floating_point() then
    return (t.dtype == "float32" or t.dtype == "float64") and t or t:float()
  end
  return (t.dtype == "int32" or t.dtype == "int64") and t or t:int()
end
local function float_of(t) return t:is_floating_point() and t or t:float() end

--- ops.box_area(boxes): (x2 - x1) (y2 - y1) of each box, (N)
function ops.box_area(boxes)
  boxes_arg(boxes, "box_area", "boxes")
  local x1, y1, x2, y2 = corners(upcast(boxes))
  return (x2 - x1) * (y2 - y1)
end

-- the (N, M) intersections and unions of two sets of boxes
local function inter_union(boxes1, boxes2)
  local a1, a2 = ops.box_area(boxes1), ops.box_area(boxes2)
  local lt = wick.maximum(boxes1:narrow(2, 1, 2):unsqueeze(2), boxes2:narrow(2, 1, 2):unsqueeze(1)) -- (N, M, 2)
  local rb = wick.minimum(boxes1:narrow(2, 3, 2):unsqueeze(2), boxes2:narrow(2, 3, 2):unsqueeze(1))
  local wh = upcast(rb - lt):clamp_min(0)
  local inter = wh:select(3, 1) * wh:select(3, 2)
  return inter, a1:unsqueeze(2) + a2:unsqueeze(1) - inter
end

--- ops.box_iou(boxes1, boxes2): the (N, M) intersections over unions
function ops.box_iou(boxes1, boxes2)
  boxes_arg(boxes1, "box_iou", "boxes1")
  boxes_arg(boxes2, "box_iou", "boxes2")
  local inter, union = inter_union(boxes1, boxes2)
  return inter / union
end

-- the (N, M) corners of the smallest boxes holding both of each pair: lt, rb (N, M, 2)
local function enclosing(boxes1, boxes2)
  local lt = wick.minimum(boxes1:narrow(2, 1, 2):unsqueeze(2), boxes2:narrow(2, 1, 2):unsqueeze(1))
  local rb = wick.maximum(boxes1:narrow(2, 3, 2):unsqueeze(2), boxes2:narrow(2, 3, 2):unsqueeze(1))
  return lt, rb
end

--- ops.generalized_box_iou(boxes1, boxes2): the (N, M) generalized IoUs, IoU minus the share of
--- the enclosing box that the union leaves empty
function ops.generalized_box_iou(boxes1, boxes2)
  boxes_arg(boxes1, "generalized_box_iou", "boxes1")
  boxes_arg(boxes2, "generalized_box_iou", "boxes2")
  local inter, union = inter_union(boxes1, boxes2)
  local iou = inter / union
  local lt, rb = enclosing(boxes1, boxes2)
  local wh = upcast(rb - lt):clamp_min(0)
  local area = wh:select(3, 1) * wh:select(3, 2)
  return iou - (area - union) / area
end

-- distance IoU of every pair and the IoU: (N, M) each
local function diou_iou(boxes1, boxes2, eps)
  local iou = ops.box_iou(boxes1, boxes2)
  local lt, rb = enclosing(boxes1, boxes2)
  local wh = upcast(rb - lt):clamp_min(0)
  local diagonal = wh:select(3, 1):pow(2) + wh:select(3, 2):pow(2) + eps
  local x1, y1, x2, y2 = corners(boxes1)
  local gx1, gy1, gx2, gy2 = corners(boxes2)
  local dx = upcast(((x1 + x2) / 2):unsqueeze(2) - ((gx1 + gx2) / 2):unsqueeze(1))
  local dy = upcast(((y1 + y2) / 2):unsqueeze(2) - ((gy1 + gy2) / 2):unsqueeze(1))
  return iou - (dx:pow(2) + dy:pow(2)) / diagonal, iou
end
local EPS = { eps = "number" }

--- ops.distance_box_iou(boxes1, boxes2[, eps = 1e-7]): the (N, M) distance IoUs (IoU less the
--- squared distance of the centres over the enclosing box's squared diagonal)
function ops.distance_box_iou(boxes1, boxes2, ...)
  local fn = "distance_box_iou"
  boxes_arg(boxes1, fn, "boxes1")
  boxes_arg(boxes2, fn, "boxes2")
  return (diou_iou(boxes1, boxes2, check.positional(fn, { "eps" }, EPS, ...).eps or 1e-7))
end

-- the aspect-ratio term of complete IoU: v, from widths and heights
local function aspect_term(w1, h1, w2, h2) return (4 / math.pi ^ 2) * (wick.atan(w1 / h1) - wick.atan(w2 / h2)):pow(2) end

--- ops.complete_box_iou(boxes1, boxes2[, eps = 1e-7]): the (N, M) complete IoUs (distance IoU
--- less the aspect-ratio term, its weight not differentiated)
function ops.complete_box_iou(boxes1, boxes2, ...)
  local fn = "complete_box_iou"
  boxes_arg(boxes1, fn, "boxes1")
  boxes_arg(boxes2, fn, "boxes2")
  local eps = check.positional(fn, { "eps" }, EPS, ...).eps or 1e-7
  local diou, iou = diou_iou(boxes1, boxes2, eps)
  local x1, y1, x2, y2 = corners(boxes1)
  local gx1, gy1, gx2, gy2 = corners(boxes2)
  local v = aspect_term((x2 - x1):unsqueeze(2), (y2 - y1):unsqueeze(2), (gx2 - gx1):unsqueeze(1), (gy2 - gy1):unsqueeze(1))
  local alpha = wick.no_grad(function() return v / (1 - iou + v + eps) end)
  return diou - alpha * v
end

local FORMATS = { xyxy = true, xywh = true, cxcywh = true }
local CONVERT = { in_fmt = "string", out_fmt = "string" }
--- ops.box_convert(boxes, in_fmt, out_fmt): (..., 4) boxes from one of "xyxy", "xywh" (corner,
--- size) and "cxcywh" (centre, size) to another
function ops.box_convert(boxes, ...)
  local fn = "box_convert"
  last4_arg(boxes, fn, "boxes")
  local o = check.positional(fn, { "in_fmt", "out_fmt" }, CONVERT, ...)
  if not FORMATS[o.in_fmt] or not FORMATS[o.out_fmt] then
    check.fail(fn, "Unsupported Bounding Box Conversions for given in_fmt and out_fmt (got '%s' and '%s'; "
      .. "the formats are 'xyxy', 'xywh' and 'cxcywh')", tostring(o.in_fmt), tostring(o.out_fmt))
  end
  if o.in_fmt == o.out_fmt then return boxes:clone() end
  local xyxy = boxes
  local a, b, c, d = corners(boxes)
  if o.in_fmt == "xywh" then
    xyxy = wick.stack({ a, b, a + c, b + d }, -1)
  elseif o.in_fmt == "cxcywh" then
    xyxy = wick.stack({ a - 0.5 * c, b - 0.5 * d, a + 0.5 * c, b + 0.5 * d }, -1)
  end
  if o.out_fmt == "xyxy" then return xyxy end
  local x1, y1, x2, y2 = corners(xyxy)
  if o.out_fmt == "xywh" then return wick.stack({ x1, y1, x2 - x1, y2 - y1 }, -1) end
  return wick.stack({ (x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1 }, -1)
end

--- ops.clip_boxes_to_image(boxes, size): (..., 4) boxes clipped to an image of size {height, width}
function ops.clip_boxes_to_image(boxes, size)
  local fn = "clip_boxes_to_image"
  last4_arg(boxes, fn, "boxes")
  if type(size) ~= "table" or #size ~= 2 then check.expected(fn, "size", "{height, width}", size) end
  local h, w = check.number(size[1], fn, "size"), check.number(size[2], fn, "size")
  local x1, y1, x2, y2 = corners(boxes)
  return wick.stack({ x1:clamp(0, w), y1:clamp(0, h), x2:clamp(0, w), y2:clamp(0, h) }, -1)
end

--- ops.remove_small_boxes(boxes, min_size): the 1-based indices of the boxes whose width and
--- height are both at least min_size
function ops.remove_small_boxes(boxes, min_size)
  local fn = "remove_small_boxes"
  boxes_arg(boxes, fn, "boxes")
  check.number(min_size, fn, "min_size")
  local x1, y1, x2, y2 = corners(boxes)
  return (x2 - x1):ge(min_size):logical_and((y2 - y1):ge(min_size)):nonzero():view(-1)
end

--- ops.masks_to_boxes(masks): the (N, 4) float boxes around the nonzero pixels of (N, H, W)
--- masks, in pixel coordinates from 0 as torchvision's (an empty mask is an error)
function ops.masks_to_boxes(masks)
  local fn = "masks_to_boxes"
  check.tensor(masks, fn, "masks")
  if masks:dim() ~= 3 then check.fail(fn, "expected masks of shape (N, H, W), got %s", tostring(masks.shape)) end
  local n, h, w = masks:size(1), masks:size(2), masks:size(3)
  local opts = { dtype = "float32", device = masks.device }
  if n == 0 then return wick.zeros({ 0, 4 }, opts) end
  local on = masks:ne(0)
  local empty = on:flatten(2):any(2):logical_not():nonzero()
  if empty:numel() > 0 then check.fail(fn, "mask %d has no nonzero pixel: it has no box", empty[1][1]:item()) end
  local xs = wick.arange(w, opts):view(1, 1, w):expand(n, h, w)
  local ys = wick.arange(h, opts):view(1, h, 1):expand(n, h, w)
  local function lowest(v) return wick.where(on, v, math.huge):flatten(2):amin(2) end
  local function highest(v) return wick.where(on, v, -math.huge):flatten(2):amax(2) end
  return wick.stack({ lowest(xs), lowest(ys), highest(xs), highest(ys) }, -1)
end

-- ---- losses ----
local function reduced(loss, reduction, fn)
  if reduction == "none" then return loss end
  if reduction == "mean" then return loss:numel() > 0 and loss:mean() or 0.0 * loss:sum() end
  if reduction == "sum" then return loss:sum() end
  check.fail(fn, "Invalid Value for arg 'reduction': '%s' (Supported reduction modes: 'none', 'mean', 'sum')", tostring(reduction))
end

local FOCAL = { alpha = "number", gamma = "number", reduction = "string" }
--- ops.sigmoid_focal_loss(inputs, targets[, alpha = 0.25[, gamma = 2[, reduction = "none"]]]):
--- RetinaNet's focal loss of logits against 0/1 targets; alpha < 0 weighs no class
function ops.sigmoid_focal_loss(inputs, targets, ...)
  local fn = "sigmoid_focal_loss"
  check.tensor(inputs, fn, "inputs")
  check.tensor(targets, fn, "targets")
  local o = check.positional(fn, { "alpha", "gamma", "reduction" }, FOCAL, ...)
  local alpha, gamma = o.alpha or 0.25, o.gamma or 2
  local p = inputs:sigmoid()
  local ce = wick.nn.functional.binary_cross_entropy_with_logits(inputs, targets, { reduction = "none" })
  local p_t = p * targets + (1 - p) * (1 - targets)
  local loss = ce * (1 - p_t):pow(gamma)
  if alpha >= 0 then loss = (alpha * targets + (1 - alpha) * (1 - targets)) * loss end
  return reduced(loss, o.reduction or "none", fn)
end

-- the intersections and unions of matching (..., 4) boxes, as the box losses take them
local function pair_inter_union(boxes1, boxes2)
  local x1, y1, x2, y2 = corners(boxes1)
  local gx1, gy1, gx2, gy2 = corners(boxes2)
  local ix1, iy1, ix2, iy2 = wick.maximum(x1, gx1), wick.maximum(y1, gy1), wick.minimum(x2, gx2), wick.minimum(y2, gy2)
  local inter = wick.where(iy2:gt(iy1):logical_and(ix2:gt(ix1)), (ix2 - ix1) * (iy2 - iy1), 0)
  return inter, (x2 - x1) * (y2 - y1) + (gx2 - gx1) * (gy2 - gy1) - inter
end
-- the corners of the boxes enclosing matching pairs
local function pair_enclosing(boxes1, boxes2)
  local x1, y1, x2, y2 = corners(boxes1)
  local gx1, gy1, gx2, gy2 = corners(boxes2)
  return wick.minimum(x1, gx1), wick.minimum(y1, gy1), wick.maximum(x2, gx2), wick.maximum(y2, gy2)
end
local BOX_LOSS = { reduction = "string", eps = "number" }
local function box_loss_args(fn, boxes1, boxes2, ...)
  last4_arg(boxes1, fn, "boxes1")
  last4_arg(boxes2, fn, "boxes2")
  local o = check.positional(fn, { "reduction", "eps" }, BOX_LOSS, ...)
  return float_of(boxes1), float_of(boxes2), o.reduction or "none", o.eps or 1e-7
end

--- ops.generalized_box_iou_loss(boxes1, boxes2[, reduction = "none"[, eps = 1e-7]]): 1 - GIoU
--- of matching (..., 4) boxes
function ops.generalized_box_iou_loss(...)
  local fn = "generalized_box_iou_loss"
  local b1, b2, reduction, eps = box_loss_args(fn, ...)
  local inter, union = pair_inter_union(b1, b2)
  local iou = inter / (union + eps)
  local cx1, cy1, cx2, cy2 = pair_enclosing(b1, b2)
  local area = (cx2 - cx1) * (cy2 - cy1)
  return reduced(1 - (iou - (area - union) / (area + eps)), reduction, fn)
end

-- the distance-IoU loss of matching boxes and their IoU
local function diou_loss(b1, b2, eps)
  local inter, union = pair_inter_union(b1, b2)
  local iou = inter / (union + eps)
  local cx1, cy1, cx2, cy2 = pair_enclosing(b1, b2)
  local diagonal = (cx2 - cx1):pow(2) + (cy2 - cy1):pow(2) + eps
  local x1, y1, x2, y2 = corners(b1)
  local gx1, gy1, gx2, gy2 = corners(b2)
  local centres = ((x2 + x1) / 2 - (gx1 + gx2) / 2):pow(2) + ((y2 + y1) / 2 - (gy1 + gy2) / 2):pow(2)
  return 1 - iou + centres / diagonal, iou
end

--- ops.distance_box_iou_loss(boxes1, boxes2[, reduction = "none"[, eps = 1e-7]]): 1 - DIoU
function ops.distance_box_iou_loss(...)
  local fn = "distance_box_iou_loss"
  local b1, b2, reduction, eps = box_loss_args(fn, ...)
  return reduced((diou_loss(b1, b2, eps)), reduction, fn)
end

--- ops.complete_box_iou_loss(boxes1, boxes2[, reduction = "none"[, eps = 1e-7]]): 1 - CIoU
function ops.complete_box_iou_loss(...)
  local fn = "complete_box_iou_loss"
  local b1, b2, reduction, eps = box_loss_args(fn, ...)
  local loss, iou = diou_loss(b1, b2, eps)
  local x1, y1, x2, y2 = corners(b1)
  local gx1, gy1, gx2, gy2 = corners(b2)
  local v = aspect_term(gx2 - gx1, gy2 - gy1, x2 - x1, y2 - y1)
  local alpha = wick.no_grad(function() return v / (1 - iou + v + eps) end)
  return reduced(loss + alpha * v, reduction, fn)
end

-- ---- non-maximum suppression ----
local NMS = { iou_threshold = "number" }
local NMS_BLOCK = 256
local function threshold_of(fn, ...)
  local t = check.positional(fn, { "iou_threshold" }, NMS, ...).iou_threshold
  if t == nil then check.fail(fn, "missing required argument 'iou_threshold'") end
  return t
end
local function scores_arg(scores, n, fn)
  check.tensor(scores, fn, "scores")
  if scores:dim() ~= 1 or scores:size(1) ~= n then
    check.fail(fn, "expected scores of shape (%d), one per box, got %s", n, tostring(scores.shape))
  end
end

-- Greedy suppression of boxes sorted by decreasing score: the 1-based positions kept. Block by
-- block: a block's boxes against those kept before it (one (kept, block) IoU matrix), then in
-- order among themselves through the pairs above the threshold, so memory stays O(n · block).
local function greedy(sorted, thr)
  local n, kept, kept_boxes = sorted:size(1), {}, nil
  for start = 1, n, NMS_BLOCK do
    local m = math.min(NMS_BLOCK, n - start + 1)
    local blk = sorted:narrow(1, start, m)
    local gone = {}
    if kept_boxes then
      local hit = ops.box_iou(kept_boxes, blk):gt(thr):any(1):totable()
      for i = 1, m do gone[i] = hit[i] end
    end
    local over = ops.box_iou(blk, blk):gt(thr):triu(1):nonzero():totable() -- (i, j), i < j, by i
    local new, k = {}, 1
    for i = 1, m do
      local keep = not gone[i]
      if keep then new[#new + 1] = i; kept[#kept + 1] = start + i - 1 end
      while over[k] and over[k][1] == i do
        if keep then gone[over[k][2]] = true end
        k = k + 1
      end
    end
    if #new > 0 then
      local chosen = blk:index_select(1, wick.tensor(new, { dtype = "int64", device = blk.device }))
      kept_boxes = kept_boxes and wick.cat({ kept_boxes, chosen }) or chosen
    end
  end
  return kept
end

--- ops.nms(boxes, scores, iou_threshold): the indices of the boxes kept by greedy
--- non-maximum suppression (a box goes when its IoU with a kept, higher-scoring one is
--- above the threshold), by decreasing score, as torchvision.ops.nms
function ops.nms(boxes, scores, ...)
  boxes_arg(boxes, "nms", "boxes")
  local n = boxes:size(1)
  scores_arg(scores, n, "nms")
  local thr = threshold_of("nms", ...)
  local I64 = { dtype = "int64", device = boxes.device }
  if n == 0 then return wick.empty({ 0 }, I64) end
  local _, order = scores:detach():sort({ descending = true, stable = true })
  local kept = greedy(boxes:detach():index_select(1, order), thr)
  return order:index_select(1, wick.tensor(kept, I64))
end

--- ops.batched_nms(boxes, scores, idxs, iou_threshold): nms within each category
--- of idxs (boxes of different categories never suppress each other), by decreasing score
function ops.batched_nms(boxes, scores, idxs, ...)
  local fn = "batched_nms"
  boxes_arg(boxes, fn, "boxes")
  local n = boxes:size(1)
  scores_arg(scores, n, fn)
  check.tensor(idxs, fn, "idxs")
  if idxs:dim() ~= 1 or idxs:size(1) ~= n then
    check.fail(fn, "expected idxs of shape (%d), a category per box, got %s", n, tostring(idxs.shape))
  end
  local thr = threshold_of(fn, ...)
  local I64 = { dtype = "int64", device = boxes.device }
  if n == 0 then return wick.empty({ 0 }, I64) end
  if boxes:numel() <= (boxes.device.type == "cpu" and 4000 or 20000) then
    -- torchvision's coordinate trick: each category moved clear of the others
    local span = boxes:max() - boxes:min() + 1
    return ops.nms(boxes + (idxs:to(boxes.dtype) * span):unsqueeze(2), scores, thr)
  end
  -- many boxes: each category on its own, as torchvision's _batched_nms_vanilla
  local keep = wick.zeros({ n }, { dtype = "bool", device = boxes.device })
  for _, id in ipairs(idxs:unique():totable()) do
    local at = idxs:eq(id):nonzero():view(-1)
    keep:index_fill_(1, at:index_select(1, ops.nms(boxes:index_select(1, at), scores:index_select(1, at), thr)), true)
  end
  local kept = keep:nonzero():view(-1)
  local _, order = scores:index_select(1, kept):sort({ descending = true, stable = true })
  return kept:index_select(1, order)
end

-- the leading arguments by torchvision's names too (remove_small_boxes(boxes, min_size=1e-2))
local ARG_NAMES = { box_area = { "boxes" }, box_iou = { "boxes1", "boxes2" }, generalized_box_iou = { "boxes1", "boxes2" },
  distance_box_iou = { "boxes1", "boxes2" }, complete_box_iou = { "boxes1", "boxes2" }, box_convert = { "boxes" },
  clip_boxes_to_image = { "boxes", "size" }, remove_small_boxes = { "boxes", "min_size" }, masks_to_boxes = { "masks" },
  sigmoid_focal_loss = { "inputs", "targets" }, generalized_box_iou_loss = { "boxes1", "boxes2" },
  distance_box_iou_loss = { "boxes1", "boxes2" }, complete_box_iou_loss = { "boxes1", "boxes2" },
  nms = { "boxes", "scores" }, batched_nms = { "boxes", "scores", "idxs" } }
for name, names in pairs(ARG_NAMES) do ops[name] = check.by_name(ops[name], name, names) end

local roi = require("wick.vision.roi")
roi.roi_align = check.by_name(roi.roi_align, "roi_align", { "input", "boxes" })
roi.roi_pool = check.by_name(roi.roi_pool, "roi_pool", { "input", "boxes" })
for name, f in pairs(roi) do ops[name] = f end
local layers = require("wick.vision.layers")
for name, f in pairs(layers) do ops[name] = f end
-- torchvision's module paths: ops.misc.Conv2dNormActivation, ops.feature_pyramid_network.LastLevelMaxPool
ops.misc = check.strict({ Conv2dNormActivation = layers.Conv2dNormActivation, SqueezeExcitation = layers.SqueezeExcitation,
  MLP = layers.MLP, FrozenBatchNorm2d = layers.FrozenBatchNorm2d, Permute = layers.Permute,
  ConvNormActivation = layers.ConvNormActivation, Conv3dNormActivation = layers.Conv3dNormActivation,
  interpolate = wick.nn.functional.interpolate }, "wick.vision.ops.misc")
-- torchvision.ops.stochastic_depth is the function, and the module of the same name
-- (from torchvision.ops.stochastic_depth import StochasticDepth): a callable table here
ops.stochastic_depth = setmetatable({ stochastic_depth = layers.stochastic_depth, StochasticDepth = layers.StochasticDepth },
  { __call = function(_, ...) return layers.stochastic_depth(...) end, __index = function(_, k)
    check.fail("wick.vision.ops.stochastic_depth", "has no '%s'", tostring(k))
  end })
ops.feature_pyramid_network = check.strict({ FeaturePyramidNetwork = layers.FeaturePyramidNetwork,
  ExtraFPNBlock = layers.ExtraFPNBlock, LastLevelMaxPool = layers.LastLevelMaxPool, LastLevelP6P7 = layers.LastLevelP6P7 },
  "wick.vision.ops.feature_pyramid_network")
ops.poolers = check.strict({ MultiScaleRoIAlign = ops.MultiScaleRoIAlign, LevelMapper = ops.LevelMapper }, "wick.vision.ops.poolers")

-- torchvision.utils: the image grid and file writer (wick.utils.make_grid and save_image)
local grid = require("wick.utils.grid")
local utils = check.strict({ make_grid = grid.make_grid, save_image = grid.save_image }, "wick.vision.utils")
return check.strict({ ops = check.strict(ops, "wick.vision.ops"), utils = utils,
  transforms = require("wick.vision.transforms") }, "wick.vision")
