-- wick.vision: torchvision's box operations (torchvision.ops), which detection
-- programs (YOLO's non_max_suppression, DETR's postprocessing) call beside torch.
-- Boxes are (N, 4) as (x1, y1, x2, y2); indices are 1-based int64, wick's rule.
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

--- ops.box_area(boxes): (x2 - x1) (y2 - y1) of each box, (N)
function ops.box_area(boxes)
  boxes_arg(boxes, "box_area", "boxes")
  return (boxes:select(2, 3) - boxes:select(2, 1)) * (boxes:select(2, 4) - boxes:select(2, 2))
end

--- ops.box_iou(boxes1, boxes2): the (N, M) intersections over unions
function ops.box_iou(boxes1, boxes2)
  boxes_arg(boxes1, "box_iou", "boxes1")
  boxes_arg(boxes2, "box_iou", "boxes2")
  local a1, a2 = ops.box_area(boxes1), ops.box_area(boxes2)
  local lt = wick.maximum(boxes1:narrow(2, 1, 2):unsqueeze(2), boxes2:narrow(2, 1, 2):unsqueeze(1)) -- (N, M, 2)
  local rb = wick.minimum(boxes1:narrow(2, 3, 2):unsqueeze(2), boxes2:narrow(2, 3, 2):unsqueeze(1))
  local wh = (rb - lt):clamp_min(0)
  local inter = wh:select(3, 1) * wh:select(3, 2)
  return inter / (a1:unsqueeze(2) + a2:unsqueeze(1) - inter)
end

--- ops.nms(boxes, scores, iou_threshold): the indices of the boxes kept by greedy
--- non-maximum suppression (a box goes when its IoU with a kept, higher-scoring one is
--- above the threshold), by decreasing score, as torchvision.ops.nms
function ops.nms(boxes, scores, iou_threshold)
  boxes_arg(boxes, "nms", "boxes")
  check.tensor(scores, "nms", "scores")
  check.number(iou_threshold, "nms", "iou_threshold")
  local n = boxes:size(1)
  if scores:dim() ~= 1 or scores:size(1) ~= n then
    check.fail("nms", "expected scores of shape (%d), one per box, got %s", n, tostring(scores.shape))
  end
  local I64 = { dtype = "int64", device = boxes.device }
  if n == 0 then return wick.empty({ 0 }, I64) end
  local _, order = scores:detach():sort({ descending = true, stable = true })
  local sorted = boxes:detach():index_select(1, order)
  local over = ops.box_iou(sorted, sorted):gt(iou_threshold) -- (n, n)
  local gone, keep = {}, {}
  for i = 1, n do
    if not gone[i] then
      keep[#keep + 1] = i
      local row = over[i]:narrow(1, i, n - i + 1):nonzero():view(-1)
      for _, j in ipairs(row:totable()) do gone[i + j - 1] = true end
    end
  end
  return order:index_select(1, wick.tensor(keep, I64))
end

--- ops.batched_nms(boxes, scores, idxs, iou_threshold): nms within each category
--- of idxs (boxes of different categories never suppress each other), by decreasing score
function ops.batched_nms(boxes, scores, idxs, iou_threshold)
  boxes_arg(boxes, "batched_nms", "boxes")
  check.tensor(idxs, "batched_nms", "idxs")
  if idxs:dim() ~= 1 or idxs:size(1) ~= boxes:size(1) then
    check.fail("batched_nms", "expected idxs of shape (%d), a category per box, got %s", boxes:size(1),
      tostring(idxs.shape))
  end
  if boxes:size(1) == 0 then return wick.empty({ 0 }, { dtype = "int64", device = boxes.device }) end
  -- torchvision's coordinate trick: each category moved clear of the others
  local span = boxes:max() - boxes:min() + 1
  local moved = boxes + (idxs:to(boxes.dtype) * span):unsqueeze(2)
  return ops.nms(moved, scores, iou_threshold)
end

return { ops = check.strict(ops, "wick.vision.ops") }
