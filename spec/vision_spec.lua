-- wick.vision.ops: torchvision's operators. roi_align and roi_pool are checked
-- against loops written here from torchvision's CPU kernels (the sample
-- positions, the bilinear corners, the rounded bins), nms against greedy
-- suppression written from its definition.
local wick = require("wick")
local nn = wick.nn
local F = nn.functional
local support = require("spec.support")
local ops = wick.vision.ops

-- torchvision's roi_align, one value at a time (img: C lists of H lists of W numbers)
local function roi_align_ref(img, roi, ph, pw, scale, ratio, aligned)
  local H, W = #img[1], #img[1][1]
  local off = aligned and 0.5 or 0
  local sw, sh = roi[2] * scale - off, roi[3] * scale - off
  local rw, rh = roi[4] * scale - off - sw, roi[5] * scale - off - sh
  if not aligned then rw, rh = math.max(rw, 1), math.max(rh, 1) end
  local bh, bw = rh / ph, rw / pw
  local gh = ratio > 0 and ratio or math.ceil(rh / ph)
  local gw = ratio > 0 and ratio or math.ceil(rw / pw)
  local function bilinear(c, y, x)
    if y < -1 or y > H or x < -1 or x > W then return 0 end
    y, x = math.max(y, 0), math.max(x, 0)
    local yl, xl = math.floor(y), math.floor(x)
    local yh, xh = yl + 1, xl + 1
    if yl >= H - 1 then yl, yh, y = H - 1, H - 1, H - 1 end
    if xl >= W - 1 then xl, xh, x = W - 1, W - 1, W - 1 end
    local ly, lx = y - yl, x - xl
    local v = img[c]
    return (1 - ly) * (1 - lx) * v[yl + 1][xl + 1] + (1 - ly) * lx * v[yl + 1][xh + 1]
      + ly * (1 - lx) * v[yh + 1][xl + 1] + ly * lx * v[yh + 1][xh + 1]
  end
  local out = {}
  for c = 1, #img do
    out[c] = {}
    for p = 0, ph - 1 do
      out[c][p + 1] = {}
      for q = 0, pw - 1 do
        local acc = 0
        for iy = 0, gh - 1 do
          for ix = 0, gw - 1 do
            acc = acc + bilinear(c, sh + p * bh + (iy + 0.5) * bh / gh, sw + q * bw + (ix + 0.5) * bw / gw)
          end
        end
        out[c][p + 1][q + 1] = acc / math.max(gh * gw, 1)
      end
    end
  end
  return out
end

-- greedy suppression from its definition: by decreasing score, a box goes when its IoU
-- with a kept box is above the threshold
local function nms_ref(boxes, scores, thr)
  local iou = ops.box_iou(boxes, boxes):totable()
  local _, order = scores:sort({ descending = true, stable = true })
  local o, gone, keep = order:totable(), {}, {}
  for i = 1, #o do
    if not gone[o[i]] then
      keep[#keep + 1] = o[i]
      for j = i + 1, #o do if iou[o[i]][o[j]] > thr then gone[o[j]] = true end end
    end
  end
  return keep
end

local function random_boxes(n, span, size)
  local xy = wick.rand(n, 2, { dtype = wick.float64 }) * span
  return wick.cat({ xy, xy + wick.rand(n, 2, { dtype = wick.float64 }) * size + 1 }, 2)
end

describe("wick.vision.ops' boxes", function()
  local b = wick.tensor({ { 0, 0, 10, 10 }, { 1, 1, 11, 11 }, { 20, 20, 30, 30 }, { 0, 0, 10, 10.5 } }, { dtype = wick.float64 })

  it("box_convert between xyxy, xywh and cxcywh", function()
    assert.are.same({ 5, 5, 10, 10 }, ops.box_convert(b, "xyxy", "cxcywh")[1]:totable())
    assert.are.same({ 1, 1, 10, 10 }, ops.box_convert(b, { in_fmt = "xyxy", out_fmt = "xywh" })[2]:totable())
    local round = ops.box_convert(ops.box_convert(b, "xyxy", "cxcywh"), "cxcywh", "xywh")
    assert.are.same(b:totable(), ops.box_convert(round, "xywh", "xyxy"):totable())
    support.assert_error_has(function() return ops.box_convert(b, "xyxy", "yxyx") end,
      "Unsupported Bounding Box Conversions for given in_fmt and out_fmt")
  end)

  it("clip_boxes_to_image, remove_small_boxes (1-based) and masks_to_boxes", function()
    assert.are.same({ 0, 0, 9, 8 }, ops.clip_boxes_to_image(b, { 8, 9 })[1]:totable())
    assert.are.same({ 20, 20, 30, 30 }, ops.clip_boxes_to_image(b, { 40, 40 })[3]:totable())
    assert.are.same({ 2 }, ops.remove_small_boxes(wick.tensor({ { 0, 0, 10, 10 }, { 0, 0, 11, 10.5 } }), 10.2):totable())
    -- torchvision's names: postprocess_detections' remove_small_boxes(boxes, min_size=1e-2)
    assert.are.same({ 2 }, ops.remove_small_boxes(wick.tensor({ { 0, 0, 10, 10 }, { 0, 0, 11, 10.5 } }), { min_size = 10.2 }):totable())
    assert.are.same({ 0, 0, 9, 8 }, ops.clip_boxes_to_image(b, { size = { 8, 9 } })[1]:totable())
    assert.are.same(ops.box_iou(b, b):totable(), ops.box_iou(b, { boxes2 = b }):totable())
    local masks = wick.zeros(2, 5, 6)
    masks[1][2][3] = 1
    masks[1][4][5] = 1
    masks[2][5][1] = 1
    assert.are.same({ { 2, 1, 4, 3 }, { 0, 4, 0, 4 } }, ops.masks_to_boxes(masks):totable())
    support.assert_error_has(function() return ops.masks_to_boxes(wick.zeros(1, 2, 2)) end, "mask 1 has no nonzero pixel")
  end)

  it("generalized, distance and complete IoU, and their losses", function()
    local a = wick.tensor({ { 0, 0, 2, 2 } }, { dtype = wick.float64 })
    local c = wick.tensor({ { 1, 1, 3, 3 } }, { dtype = wick.float64 })
    -- IoU 1/7, enclosing 9, union 7: GIoU 1/7 - 2/9
    support.assert_close(ops.generalized_box_iou(a, c):item(), 1 / 7 - 2 / 9, 1e-12)
    -- centres 2 apart (squared), diagonal 18: DIoU 1/7 - 2/18
    support.assert_close(ops.distance_box_iou(a, c, { eps = 0 }):item(), 1 / 7 - 2 / 18, 1e-12)
    support.assert_close(ops.complete_box_iou(a, c, 0):item(), 1 / 7 - 2 / 18, 1e-12) -- same aspect: no term
    support.assert_close(ops.generalized_box_iou_loss(a, c):item(), 1 - (1 / 7 - 2 / 9), 1e-6)
    support.assert_close(ops.distance_box_iou_loss(a, c, { eps = 0 }):item(), 1 - (1 / 7 - 2 / 18), 1e-12)
    local w = wick.tensor({ { 0, 0, 4, 2 } }, { dtype = wick.float64 })
    local v = 4 / math.pi ^ 2 * (math.atan(1) - math.atan(2)) ^ 2
    local iou = 4 / 8
    local alpha = v / (1 - iou + v)
    local diou = iou - 1 / 20 -- centres (2, 1) and (1, 1); enclosing 4 x 2
    support.assert_close(ops.complete_box_iou_loss(w, a, { eps = 0 }):item(), 1 - diou + alpha * v, 1e-12)
    support.assert_close(ops.generalized_box_iou_loss(b:narrow(1, 1, 2), b:narrow(1, 1, 2)):totable(), { 0, 0 }, 1e-8)
    support.assert_error_has(function() return ops.generalized_box_iou_loss(a, c, "avg") end,
      "Invalid Value for arg 'reduction': 'avg'")
  end)

  it("sigmoid_focal_loss is RetinaNet's", function()
    local x, y = wick.tensor({ 0.3, -1.2, 2.0 }, { dtype = wick.float64 }), wick.tensor({ 1, 0, 1 }, { dtype = wick.float64 })
    local want = 0
    for i, xi in ipairs(x:totable()) do
      local yi = y[i]:item()
      local p = 1 / (1 + math.exp(-xi))
      local ce = -(yi * math.log(p) + (1 - yi) * math.log(1 - p))
      local pt = p * yi + (1 - p) * (1 - yi)
      want = want + (0.25 * yi + 0.75 * (1 - yi)) * ce * (1 - pt) ^ 2
    end
    support.assert_close(ops.sigmoid_focal_loss(x, y, { reduction = "sum" }):item(), want, 1e-12)
    support.assert_close(ops.sigmoid_focal_loss(x, y, 0.25, 2, "mean"):item(), want / 3, 1e-12)
  end)

  it("nms and batched_nms keep what greedy suppression keeps, the threshold also by name", function()
    wick.manual_seed(3)
    for _, n in ipairs({ 1, 7, 300, 700 }) do
      local boxes, scores = random_boxes(n, 100, 30), wick.rand(n, { dtype = wick.float64 })
      assert.are.same(nms_ref(boxes, scores, 0.5), ops.nms(boxes, scores, 0.5):totable())
      assert.are.same(nms_ref(boxes, scores, 0.3), ops.nms(boxes, scores, { iou_threshold = 0.3 }):totable())
    end
    assert.are.same({}, ops.nms(wick.zeros(0, 4), wick.zeros(0), 0.5):totable())
    support.assert_error_has(function() return ops.nms(wick.zeros(2, 4), wick.zeros(2)) end, "missing required argument 'iou_threshold'")
    -- batched: per category, by decreasing score; the coordinate trick (few boxes) and one
    -- category at a time (over 1000 boxes, as torchvision's) give the same
    for _, n in ipairs({ 50, 1500 }) do
      local boxes, scores = random_boxes(n, 200, 40), wick.rand(n, { dtype = wick.float64 })
      local idxs = wick.randint(0, 3, { n })
      local want = {}
      for c = 0, 2 do
        local at = idxs:eq(c):nonzero():view(-1)
        for _, k in ipairs(nms_ref(boxes:index_select(1, at), scores:index_select(1, at), 0.5)) do want[#want + 1] = at[k]:item() end
      end
      local s = scores:totable()
      table.sort(want, function(i, j) return s[i] > s[j] end)
      assert.are.same(want, ops.batched_nms(boxes, scores, idxs, { iou_threshold = 0.5 }):totable())
    end
  end)
end)

describe("wick.vision.ops' RoI pooling", function()
  local img = (wick.arange(2 * 3 * 12 * 10, { dtype = wick.float64 }) * 0.37):sin():reshape(2, 3, 12, 10)
  local rois = wick.tensor({ { 1, 1.3, 2.2, 8.7, 9.1 }, { 2, -3, -2, 4, 30 }, { 1, 5, 5, 5.2, 5.1 }, { 2, 0, 0, 19.5, 23.9 },
    { 1, 9.9, 11.5, 25, 30 } }, { dtype = wick.float64 })

  it("roi_align is torchvision's kernel: aligned or not, fixed or adaptive sampling, any scale", function()
    local pix = img:totable()
    for _, aligned in ipairs({ false, true }) do
      for _, ratio in ipairs({ 2, -1, 0 }) do
        for _, scale in ipairs({ 1, 0.5 }) do
          local y = ops.roi_align(img, rois, { 3, 4 }, scale, ratio, aligned)
          assert.are.same({ 5, 3, 3, 4 }, y:size())
          for k, roi in ipairs(rois:totable()) do
            support.assert_close(y[k]:totable(), roi_align_ref(pix[roi[1]], roi, 3, 4, scale, ratio, aligned), 1e-12)
          end
        end
      end
    end
    -- a list of boxes per image is the rois with batch indices 1, 2, ...
    local by_list = ops.roi_align(img, { rois:narrow(1, 1, 1):narrow(2, 2, 4), rois:narrow(1, 2, 1):narrow(2, 2, 4) },
      { output_size = 2, sampling_ratio = 2 })
    local by_rows = ops.roi_align(img, rois:narrow(1, 1, 2), 2, 1, 2)
    assert.are.same(by_rows:totable(), by_list:totable())
  end)

  it("roi_align's gradient reaches the features and agrees with the forward (it is linear)", function()
    local x = img:clone():requires_grad_()
    local y = ops.roi_align(x, rois, 3, 0.5, -1, true)
    local c = (wick.arange(y:numel(), { dtype = wick.float64 }) * 0.7):cos():reshape(y.shape)
    local f = (y * c):sum()
    f:backward()
    support.assert_close((x.grad * img):sum():item(), f:item(), 1e-10)
    local empty = ops.roi_align(x, wick.zeros(0, 5, { dtype = wick.float64 }), 3)
    assert.are.same({ 0, 3, 3, 3 }, empty:size())
    support.assert_error_has(function() return ops.roi_align(img, wick.tensor({ { 3, 0, 0, 1, 1 } }, { dtype = wick.float64 }), 2) end,
      "a box's batch index is not an image of the input: they count from 1 to 2")
    support.assert_error_has(function() return ops.roi_align(img, wick.zeros(2, 4), 2) end, "boxes must be a tensor of shape [K, 5]")
    support.assert_error_has(function() return ops.roi_align(img, wick.tensor({ { 1, 0 / 0, 0, 4, 4 } }, { dtype = wick.float64 }), 2) end,
      "roi_align: box 1 is not finite: its corners are (nan, 0, 4, 4)")
    support.assert_error_has(function() return ops.roi_pool(img, wick.tensor({ { 1, 0, 0, math.huge, 4 } }, { dtype = wick.float64 }), 2) end,
      "roi_pool: box 1 is not finite")
    support.assert_error_has(function() return ops.roi_align(wick.zeros(1, 2, 0, 8), wick.tensor({ { 1, 0, 0, 4, 4 } }), 2) end,
      "the input's feature maps are empty ([1, 2, 0, 8])")
  end)

  it("roi_pool takes the maximum of each rounded bin, 0 for an empty one", function()
    local x = (wick.arange(1 * 2 * 6 * 7, { dtype = wick.float64 }) * 1.3):sin():reshape(1, 2, 6, 7)
    local y = ops.roi_pool(x, wick.tensor({ { 1, 0.6, 1.4, 4.5, 3.2 }, { 1, 5, 5, 9, 9 } }, { dtype = wick.float64 }), { 2, 3 })
    local v = x:totable()[1]
    -- box 1: corners rounded to (1, 1)-(5, 3), 5 x 3 pixels; bin (p, q) spans rows
    -- [floor(p * 1.5), ceil((p + 1) * 1.5)) and columns [floor(q * 5 / 3), ceil((q + 1) * 5 / 3)) from there
    for c = 1, 2 do
      for p = 0, 1 do
        for q = 0, 2 do
          local best = -math.huge
          for h = math.floor(p * 1.5) + 1, math.ceil((p + 1) * 1.5) do
            for w = math.floor(q * 5 / 3) + 1, math.ceil((q + 1) * 5 / 3) do best = math.max(best, v[c][h + 1][w + 1]) end
          end
          assert.are.equal(best, y[1][c][p + 1][q + 1]:item())
        end
      end
    end
    -- box 2 reaches past the map: its bins outside are empty
    assert.are.equal(0, y[2][1][2][3]:item())
    local m = ops.RoIPool({ 2, 3 }, 1)
    assert.are.same(y:totable(), m(x, wick.tensor({ { 1, 0.6, 1.4, 4.5, 3.2 }, { 1, 5, 5, 9, 9 } }, { dtype = wick.float64 })):totable())
  end)

  it("MultiScaleRoIAlign pools each box from its FPN level", function()
    local feats = wick.OrderedDict({ { "0", wick.randn(1, 2, 32, 32) }, { "1", wick.randn(1, 2, 16, 16) }, { "2", wick.randn(1, 2, 8, 8) } })
    local pool = ops.MultiScaleRoIAlign({ "0", "1", "2" }, 3, 2)
    -- image 128: scales 1/4, 1/8 and 1/16, levels 2..4; a 224 box is level 4, a 30 box level 2
    local boxes = { wick.tensor({ { 0, 0, 30, 30 }, { 0, 0, 224, 224 }, { 10, 10, 40, 40 } }) }
    local y = pool(feats, boxes, { { 128, 128 } })
    assert.are.same({ 0.25, 0.125, 0.0625 }, pool.scales)
    assert.are.same({ 3, 2, 3, 3 }, y:size())
    assert.are.same(ops.roi_align(feats["0"], { boxes[1]:narrow(1, 1, 1) }, 3, 0.25, 2):totable(), y:narrow(1, 1, 1):totable())
    assert.are.same(ops.roi_align(feats["2"], { boxes[1]:narrow(1, 2, 1) }, 3, 0.0625, 2):totable(), y:narrow(1, 2, 1):totable())
    assert.are.same({ 1, 3, 1 }, ops.LevelMapper(2, 4)(boxes):totable())
    -- a box whose level has no map in featmap_names gets zeros, as torchvision's
    local gap = ops.MultiScaleRoIAlign({ "0", "2" }, 3, 2)(feats, boxes, { { 128, 128 } })
    assert.are.same({ 3, 2, 3, 3 }, gap:size())
    assert.are.equal(0, gap[2]:abs():sum():item())
  end)
end)

describe("wick.vision.ops' layers", function()
  it("FeaturePyramidNetwork: one map per input name, fine to coarse, and the extra levels", function()
    wick.manual_seed(0)
    local fpn = ops.FeaturePyramidNetwork({ 3, 5 }, 4, { extra_blocks = ops.LastLevelMaxPool() })
    local x = wick.OrderedDict({ { "feat0", wick.randn(1, 3, 16, 16) }, { "feat1", wick.randn(1, 5, 8, 8) } })
    local out = fpn(x)
    local names, shapes = {}, {}
    for k, v in out:items() do names[#names + 1], shapes[#shapes + 1] = k, v:size() end
    assert.are.same({ "feat0", "feat1", "pool" }, names)
    assert.are.same({ { 1, 4, 16, 16 }, { 1, 4, 8, 8 }, { 1, 4, 4, 4 } }, shapes)
    -- torchvision's top-down pathway, computed here
    local inner1 = fpn.inner_blocks[2](x.feat1)
    local top = fpn.inner_blocks[1](x.feat0) + F.interpolate(inner1, { size = { 16, 16 }, mode = "nearest" })
    assert.are.same(fpn.layer_blocks[1](top):totable(), out.feat0:totable())
    assert.are.same(F.max_pool2d(out.feat1, 1, 2, 0):totable(), out.pool:totable())
    local keys = {}
    for k in fpn:state_dict():keys() do keys[#keys + 1] = k end
    assert.are.same({ "inner_blocks.1.1.weight", "inner_blocks.1.1.bias", "inner_blocks.2.1.weight", "inner_blocks.2.1.bias",
      "layer_blocks.1.1.weight", "layer_blocks.1.1.bias", "layer_blocks.2.1.weight", "layer_blocks.2.1.bias" }, keys)
    assert.are.equal(0, fpn.inner_blocks[1][1].bias:abs():sum():item()) -- kaiming_uniform_(a = 1), bias 0
    local retina = ops.FeaturePyramidNetwork({ 3, 5 }, 4, { extra_blocks = ops.LastLevelP6P7(5, 4) })
    local r = retina(x)
    assert.are.same({ 1, 4, 4, 4 }, r.p6:size())
    assert.are.same({ 1, 4, 2, 2 }, r.p7:size())
    support.assert_error_has(function() return fpn(wick.OrderedDict({ { "feat0", x.feat0 } })) end,
      "expected 2 feature maps, one per entry of in_channels_list, got 1")
    support.assert_error_has(function() return ops.FeaturePyramidNetwork({}, 4) end, "in_channels_list is empty")
  end)

  it("Conv2dNormActivation, SqueezeExcitation, MLP, StochasticDepth and FrozenBatchNorm2d", function()
    local c = ops.Conv2dNormActivation(3, 8, { stride = 2 })
    assert.are.equal(3, #c)
    assert.are.same({ 1, 1 }, c[1].padding)
    assert.is_nil(c[1].bias) -- a norm follows
    local plain = ops.misc.Conv2dNormActivation(3, 8, { kernel_size = 5, norm_layer = false, activation_layer = nn.SiLU })
    assert.are.equal(2, #plain)
    assert.are.same({ 2, 2 }, plain[1].padding)
    assert.is_not_nil(plain[1].bias)
    local se = ops.SqueezeExcitation(8, 2)
    local x = wick.randn(2, 8, 4, 4)
    local scale = (se.fc2(se.fc1(x:mean({ 3, 4 }, true)):relu())):sigmoid()
    support.assert_close(se(x):totable(), (x * scale):totable(), 1e-6)
    -- torchvision's inplace=None (nn.GELU takes no inplace) is false; Conv3d's flavour; the module path
    local gelu = ops.Conv2dNormActivation(3, 6, { activation_layer = nn.GELU, inplace = false })
    assert.is_true(wick.isinstance(gelu[3], nn.GELU))
    local c3 = ops.misc.Conv3dNormActivation(3, 6, { kernel_size = { 3, 1, 1 } })
    assert.are.same({ 1, 0, 0 }, c3[1].padding)
    assert.is_true(wick.isinstance(c3[2], nn.BatchNorm3d))
    assert.are.equal("StochasticDepth(p=0.0, mode=row)", tostring(ops.stochastic_depth.StochasticDepth(0, "row")))
    assert.are.equal("Hardswish()", tostring(nn.Hardswish(true)))
    local mlp = ops.MLP(4, { 8, 2 }, { dropout = 0.1 })
    assert.are.equal(5, #mlp)
    local sd = ops.StochasticDepth(0.5, "row")
    local y = sd(wick.ones(64, 3))
    for _, row in ipairs(y:totable()) do assert.is_true(row[1] == 0 or row[1] == 2) end
    sd:eval()
    assert.are.same(wick.ones(2, 3):totable(), sd(wick.ones(2, 3)):totable())
    support.assert_error_has(function() return ops.stochastic_depth(wick.ones(2), 1.5, "row") end, "drop probability has to be between 0 and 1")
    local bn = nn.BatchNorm2d(3)
    bn.running_mean:fill_(0.5)
    local frozen = ops.FrozenBatchNorm2d(3)
    frozen:load_state_dict(bn:state_dict()) -- (its num_batches_tracked dropped)
    bn:eval()
    local z = wick.randn(1, 3, 2, 2)
    support.assert_close(frozen(z):totable(), bn(z):totable(), 1e-6)
  end)
end)

describe("wick.OrderedDict", function()
  it("keeps the order names are set in; Sequential takes one", function()
    local d = wick.OrderedDict()
    d.b = 1
    d.a = 2
    d.c = 3
    d.b = nil
    d.b = 4 -- set again after its removal: last
    local keys = {}
    for k in d:keys() do keys[#keys + 1] = k end
    assert.are.same({ "a", "c", "b" }, keys)
    assert.are.equal("OrderedDict([('a', 2), ('c', 3), ('b', 4)])", tostring(d))
    local s = nn.Sequential(wick.OrderedDict({ { "conv", nn.Conv2d(1, 2, 3) }, { "act", nn.ReLU() } }))
    assert.is_not_nil(s.conv)
    assert.are.same({ "conv.weight", "conv.bias" }, (function()
      local t = {}
      for k in s:state_dict():keys() do t[#t + 1] = k end
      return t
    end)())
    support.assert_error_has(function() return wick.OrderedDict({ { "a" } }) end, "item 1 is not a {name, value} pair")
    -- torchvision's IntermediateLayerGetter: a ModuleDict of an OrderedDict, in its order
    local layers = wick.OrderedDict()
    layers.conv = nn.Conv2d(3, 4, 3) -- (one statement each: Lua's a, b = x, y assigns in no set order)
    layers.relu = nn.ReLU()
    layers.bn = nn.BatchNorm2d(4)
    local names = {}
    for k in nn.ModuleDict(layers):keys() do names[#names + 1] = k end
    assert.are.same({ "conv", "relu", "bn" }, names)
  end)

  it("factories take layout = wick.strided and pin_memory, as PyTorch's", function()
    assert.are.same({ 3, 3 }, wick.full_like(wick.ones(2), 3, { layout = wick.strided }):totable())
    assert.are.same({ 0, 0 }, wick.zeros(2, { pin_memory = false }):totable())
    support.assert_error_has(function() return wick.zeros(2, { layout = "sparse_coo" }) end, "layout must be wick.strided")
  end)

  it("binary_cross_entropy_with_logits has a floating target's dtype, as PyTorch's", function()
    local x = wick.tensor({ 0.3, -0.2 }, { dtype = wick.float64, requires_grad = true })
    local loss = F.binary_cross_entropy_with_logits(x, wick.tensor({ 1, 0 }))
    assert.are.equal("float32", loss.dtype)
    assert.are.equal(0.57624709606170654, loss:item()) -- PyTorch's float32 value
    loss:backward()
    assert.are.equal("float64", x.grad.dtype)
    -- the gradient is float64's all the way (Faster R-CNN's objectness logits), as PyTorch's
    local z = wick.zeros(7, { dtype = wick.float64, requires_grad = true })
    F.binary_cross_entropy_with_logits(z, wick.ones(7)):backward()
    assert.are.equal(-0.5 / 7, z.grad[1]:item())
  end)
end)
