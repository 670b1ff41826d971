-- nn.utils: fuse_conv_bn_eval / fuse_conv_bn_weights / fuse_linear_bn_eval / fuse_linear_bn_weights,
-- skip_init, convert_conv{2,3}d_weight_memory_format, nn.utils.rnn.invert_permutation and the module
-- paths nn.utils.clip_grad and nn.utils.convert_parameters. The expected numbers are PyTorch 2.15's
-- (float64), for the same inputs built the same way (sin of an arange).
local wick = require("wick")
local nn = wick.nn
local support = require("spec.support")

local F64 = { dtype = "float64" }
-- sin(arange(n) * a + b), as the reference script built its inputs
local function seq(n, a, b) return (wick.arange(n, F64) * a + (b or 0)):sin() end

-- the largest difference relative to the expected value's size (at least 1)
local function assert_close(expected, t, tol)
  local got = t:detach():reshape(-1):tolist()
  assert.are.equal(#expected, #got)
  local worst = 0
  for i, e in ipairs(expected) do
    worst = math.max(worst, math.abs(got[i] - e) / math.max(1, math.abs(e)))
  end
  assert(worst <= (tol or 4e-16), ("worst relative difference %.3g"):format(worst))
end

-- the inputs of the reference script
local function inputs()
  return {
    conv_w = seq(24, 0.37):reshape(3, 2, 2, 2), conv_b = seq(3, 1.1, 0.5),
    rm = seq(3, 0.7, 0.2) * 0.3, rv = seq(3, 0.9, 0.1):abs() + 0.5, bw = seq(3, 1.3, 0.3) + 1, bb = seq(3, 0.5, 0.7),
    tw = seq(24, 0.37):reshape(2, 3, 2, 2), lw = seq(12, 0.29, 0.4):reshape(3, 4), lb = seq(3, 0.8, 0.9),
  }
end

local CONV_W = { 0, 0.60438559882613707, 1.126970442152172, 1.4970251229902498, 1.6644644762939216, 1.6066263710870505,
  1.3313389235785695, 0.87586099835695508, 0.31166907501198959, -0.32322901919150088, -0.91437958198329761,
  -1.3817731579021852, -1.6621502190899267, -1.7175630456230151, -1.540511771383517, -1.1549594557546738,
  -0.36594670151297054, 0.0070197609207468224, 0.37903613164502831, 0.69975174009003038, 0.9257592331976553,
  1.026469557024865, 0.98825204169513337, 0.81627924862187107 }
local CONV_B = { 1.3458913551030092, 2.2515267533382182, 1.1230105978962501 }

-- a Conv2d(2, 3, 2) and a BatchNorm2d(3, eps = 1e-3) in float64 holding the reference inputs, in eval mode
local function conv_and_bn(I, conv_class, weight)
  local conv = (conv_class or nn.Conv2d)(2, 3, 2, F64)
  local bn = nn.BatchNorm2d(3, { eps = 1e-3, dtype = "float64" })
  wick.no_grad(function()
    conv.weight:copy_(weight or I.conv_w); conv.bias:copy_(I.conv_b)
    bn.running_mean:copy_(I.rm); bn.running_var:copy_(I.rv); bn.weight:copy_(I.bw); bn.bias:copy_(I.bb)
  end)
  conv:eval(); bn:eval()
  return conv, bn
end

describe("nn.utils fusion (PyTorch's torch.nn.utils.fusion)", function()
  it("fuse_conv_bn_weights matches PyTorch, with and without the optional tensors and transposed", function()
    local I = inputs()
    local w, b = nn.utils.fuse_conv_bn_weights(I.conv_w, I.conv_b, I.rm, I.rv, 1e-3, I.bw, I.bb)
    assert_close(CONV_W, w)
    assert_close(CONV_B, b)
    assert.are.same({ 3, 2, 2, 2 }, w.shape)
    assert.are.equal("float64", w.dtype)
    assert.is_true(wick.isinstance(w, nn.Parameter))
    assert.is_false(w.requires_grad) -- (conv_w's)
    w, b = nn.utils.fuse_conv_bn_weights(I.conv_w, nil, I.rm, I.rv, 1e-3, nil, nil)
    assert_close({ 0, 0.46651962332852198, 0.86989800418201579, 1.1555397710454898, 1.2847846507800764,
      1.2401399552288395, 1.0276481344969044, 0.67606895967614411, 0.15586776827715518, -0.16164897291094696,
      -0.4572872839451651, -0.69103390632903039, -0.83125233127786258, -0.85896465276920531, -0.77042013809358156,
      -0.5776028719312416, -0.29529707451613407, 0.0056645267060174568, 0.30585946081200566, 0.56465775174868271,
      0.7470322649154354, 0.82829946551266065, 0.79746021918119669, 0.65868847323856272 }, w)
    assert_close({ -0.076890917679438398, -0.20282049899267424, -0.24926238100328374 }, b)
    w, b = nn.utils.fuse_conv_bn_weights(I.tw, I.conv_b, I.rm, I.rv, 1e-3, I.bw, I.bb, true)
    assert_close({ 0, 0.60438559882613707, 1.126970442152172, 1.4970251229902498, 1.7186693017431784,
      1.6589476451348171, 1.374695207232673, 0.90438422201833346, 0.1860322203208091, -0.19293223785516461,
      -0.54578422272348459, -0.82476687343571331, -1.6097279395944866, -1.6633931102016624, -1.4919258266728765,
      -1.1185333814443608, -0.61308879594917332, 0.011760556258488885, 0.6350181723478282, 1.1723290578148029,
      0.9257592331976553, 1.026469557024865, 0.98825204169513337, 0.81627924862187107 }, w)
    assert_close(CONV_B, b)
    -- (transpose as an option too)
    local w2 = nn.utils.fuse_conv_bn_weights(I.tw, I.conv_b, I.rm, I.rv, 1e-3, I.bw, I.bb, { transpose = true })
    assert.is_true(w2:equal(w))
  end)

  it("fuse_linear_bn_weights matches PyTorch, a 1-feature batch norm broadcast", function()
    local I = inputs()
    local w, b = nn.utils.fuse_linear_bn_weights(I.lw, I.lb, I.rm, I.rv, 1e-3, I.bw, I.bb)
    assert_close({ 0.65085396585868049, 1.0638757974510393, 1.3880509685686102, 1.5963068816096364, 1.7256774718760588,
      1.6589476451348171, 1.4536753696172413, 1.1270033947039384, 0.42153152697156465, 0.13516271269445887,
      -0.16249384369726963, -0.44658017375731113 }, w)
    assert_close({ 1.8538166145753041, 2.2378779326874487, 1.2992527434211734 }, b)
    local one = function(t) return t:narrow(1, 1, 1) end
    w, b = nn.utils.fuse_linear_bn_weights(I.lw, nil, one(I.rm), one(I.rv), 1e-5, one(I.bw), one(I.bb))
    assert_close({ 0.65139083912062035, 1.0647533621577747, 1.3891959373178608, 1.5976236354861471, 1.6726301908399994,
      1.6079516372539795, 1.4089894261984808, 1.0923593393797077, 0.68450386744092051, 0.21948393810032674,
      -0.26386558852482844, -0.72517910642526739 }, w)
    assert_close({ 0.54452178077864988 }, b)
    assert.is_false(b.requires_grad) -- (a bias made from nothing, as PyTorch's)
  end)

  it("fuse_conv_bn_eval: a new convolution computing bn(conv(x)), as PyTorch's", function()
    local I = inputs()
    local conv, bn = conv_and_bn(I)
    local x = seq(36, 0.53, 0.1):reshape(2, 2, 3, 3)
    local fused = nn.utils.fuse_conv_bn_eval(conv, bn)
    assert.is_false(rawequal(fused, conv))
    assert.are.equal("Conv2d", getmetatable(fused).__name)
    assert_close(CONV_W, fused.weight)
    assert_close(CONV_B, fused.bias)
    assert.is_true(fused.weight.requires_grad)
    assert.is_true(conv.weight:equal(I.conv_w)) -- (conv itself unchanged)
    local expected = { 1.9310089564207449, 3.2191598028618027, 4.0410498877416057, 3.3492741092612861, 2.031453287922671,
      0.67003804642035714, -0.49649142277290248, 0.018473539955121281, 1.020785529954523, 1.8253691609771956,
      2.6884971696770448, 2.5102114272856357, 0.45344939614720403, -0.74945817399508785, -1.2581634826041859,
      -0.42437967800544374, 2.7866172890766623, 4.0827964347274559, 4.9499498827037742, 4.2829895413471073,
      1.0447706692760963, 0.26424623575469774, -0.44039368012076024, -0.17116593389244766 }
    assert_close(expected, bn(conv(x)), 1e-15)
    assert_close(expected, fused(x), 4e-15) -- (PyTorch's fused module differs from its reference by 8.9e-16)
    -- a convolution without a bias gets one (PyTorch's: requires no grad)
    local nb = nn.Conv2d(2, 3, 2, { bias = false, dtype = "float64" })
    nb:eval()
    local f2 = nn.utils.fuse_conv_bn_eval(nb, bn)
    assert.is_true(wick.isinstance(f2.bias, nn.Parameter))
    assert.is_false(f2.bias.requires_grad)
    assert.is_true((f2(x) - bn(nb(x))):abs():max():item() < 1e-14)
    -- and a transposed convolution, transpose = true
    local ct, bnt = conv_and_bn(I, nn.ConvTranspose2d, I.tw)
    local ft = nn.utils.fuse_conv_bn_eval(ct, bnt, true)
    assert.is_true((ft(x) - bnt(ct(x))):abs():max():item() < 4e-15)
  end)

  it("fuse_linear_bn_eval: a new linear layer computing bn(linear(x))", function()
    local I = inputs()
    local lin = nn.Linear(4, 3, F64)
    local bn = nn.BatchNorm1d(3, { eps = 1e-3, dtype = "float64" })
    wick.no_grad(function()
      lin.weight:copy_(I.lw); lin.bias:copy_(I.lb)
      bn.running_mean:copy_(I.rm); bn.running_var:copy_(I.rv); bn.weight:copy_(I.bw); bn.bias:copy_(I.bb)
    end)
    lin:eval(); bn:eval()
    local x = seq(8, 0.61, 0.3):reshape(2, 4)
    local fused = nn.utils.fuse_linear_bn_eval(lin, bn)
    assert.are.equal("Linear", getmetatable(fused).__name)
    assert_close({ 5.6255055859832526, 6.4647320067208849, 0.9896949273538761, -0.70540263667291592, 0.3923136928484886,
      1.9967482539116566 }, fused(x), 4e-15)
    assert.is_true(lin.weight:equal(I.lw))
  end)

  it("errors as PyTorch's: training mode, no running statistics, mismatched sizes, bad arguments", function()
    local I = inputs()
    local conv, bn = conv_and_bn(I)
    bn:train()
    support.assert_error_has(function() nn.utils.fuse_conv_bn_eval(conv, bn) end, "fuse_conv_bn_eval: Fusion only for eval!")
    bn:eval(); conv:train()
    support.assert_error_has(function() nn.utils.fuse_conv_bn_eval(conv, bn) end, "Fusion only for eval!")
    conv:eval()
    local stateless = nn.BatchNorm2d(3, { track_running_stats = false })
    stateless:eval()
    support.assert_error_has(function() nn.utils.fuse_conv_bn_eval(conv, stateless) end,
      "bn.running_mean and bn.running_var must not be None")
    local lin, bn4 = nn.Linear(4, 3), nn.BatchNorm1d(4)
    lin:eval(); bn4:eval()
    support.assert_error_has(function() nn.utils.fuse_linear_bn_eval(lin, bn4) end,
      "To fuse, linear.out_features == bn.num_features or bn.num_features == 1, got linear.out_features=3 and bn.num_features=4")
    local training_lin = nn.Linear(4, 3)
    support.assert_error_has(function() nn.utils.fuse_linear_bn_eval(training_lin, bn4) end, "fuse_linear_bn_eval: Fusion only for eval!")
    local ln = nn.LayerNorm(3)
    ln:eval()
    support.assert_error_has(function() nn.utils.fuse_linear_bn_eval(lin, ln) end, "no attribute 'num_features'")
    support.assert_error_has(function() nn.utils.fuse_conv_bn_eval(nil, bn) end, "expected a module for argument 'conv'")
    support.assert_error_has(function() nn.utils.fuse_conv_bn_eval(conv, "bn") end, "expected a module for argument 'bn'")
    local relu = nn.ReLU()
    relu:eval()
    support.assert_error_has(function() nn.utils.fuse_conv_bn_eval(relu, bn) end, "expected conv to have a weight tensor")
    support.assert_error_has(function() nn.utils.fuse_conv_bn_eval(conv, bn, "yes") end, "transpose")
    local two = I.rm:narrow(1, 1, 2)
    support.assert_error_has(function() nn.utils.fuse_conv_bn_weights(I.conv_w, I.conv_b, two, I.rv, 1e-3, I.bw, I.bb) end,
      "fuse_conv_bn_weights: bn_rm has shape")
    support.assert_error_has(function() nn.utils.fuse_conv_bn_weights(I.conv_w, two, I.rm, I.rv, 1e-3, I.bw, I.bb) end,
      "conv_b has shape")
    support.assert_error_has(function() nn.utils.fuse_conv_bn_weights(I.conv_w, I.conv_b, I.rm, I.rv, 0 / 0, I.bw, I.bb) end,
      "expected a number for argument 'bn_eps'")
    support.assert_error_has(function() nn.utils.fuse_conv_bn_weights(I.conv_w, I.conv_b, I.rm, nil, 1e-3) end,
      "expected a tensor for argument 'bn_rv'")
    support.assert_error_has(function() nn.utils.fuse_conv_bn_weights("w", I.conv_b, I.rm, I.rv, 1e-3) end,
      "expected a tensor for argument 'conv_w'")
    support.assert_error_has(function() nn.utils.fuse_conv_bn_weights(wick.zeros(3), nil, I.rm, I.rv, 1e-3) end,
      "expected argument 'conv_w' to have at least 2 dimensions")
    support.assert_error_has(function()
      nn.utils.fuse_conv_bn_weights(I.conv_w:to("int64"), nil, I.rm, I.rv, 1e-3)
    end, "expected a floating-point tensor for argument 'conv_w', got int64")
    support.assert_error_has(function() nn.utils.fuse_linear_bn_weights(I.lw, I.lb, I.rm, I.rv:reshape(3, 1), 1e-3) end,
      "fuse_linear_bn_weights: bn_rv has shape")
    support.assert_error_has(function() nn.utils.fuse_linear_bn_weights(I.conv_w, nil, I.rm, I.rv, 1e-3) end,
      "expected a 2-D tensor for argument 'linear_w', got 4D")
    support.assert_error_has(function()
      nn.utils.fuse_linear_bn_weights(I.lw, nil, I.rm:to("meta"), I.rv, 1e-3)
    end, "Expected all tensors to be on the same device")
    -- empty: no channels fuse to no channels
    local e = wick.zeros(0, F64)
    local w, b = nn.utils.fuse_linear_bn_weights(wick.zeros(0, 4, F64), nil, e, e, 1e-5, nil, nil)
    assert.are.same({ 0, 4 }, w.shape)
    assert.are.same({ 0 }, b.shape)
  end)
end)

describe("nn.utils.skip_init", function()
  it("builds the module on meta and makes it real uninitialized: no initialisation runs", function()
    wick.manual_seed(7)
    local m = nn.utils.skip_init(nn.Linear, 5, 3)
    local after = wick.randn(4)
    wick.manual_seed(7)
    assert.is_true(after:equal(wick.randn(4))) -- (no random initialisation drew from the generator)
    assert.are.equal("Linear", getmetatable(m).__name)
    assert.are.same({ 3, 5 }, m.weight.shape)
    assert.are.equal("cpu", m.weight.device.type)
    assert.is_true(m.weight.requires_grad)
    assert.is_true(wick.isinstance(m.weight, nn.Parameter))
    assert.are.same({ 2, 3 }, m(wick.zeros(2, 5)).shape)
    -- options (PyTorch's keywords) pass through, device among them
    local k = nn.utils.skip_init(nn.Linear, { in_features = 6, out_features = 1, bias = false, dtype = "float64", device = "cpu" })
    assert.are.same({ 1, 6 }, k.weight.shape)
    assert.are.equal("float64", k.weight.dtype)
    assert.is_nil(k.bias)
    local bn = nn.utils.skip_init(nn.BatchNorm2d, 4)
    assert.are.same({ 4 }, bn.running_var.shape)
    assert.is_false(bn.running_var.is_meta)
  end)

  it("errors as PyTorch's for what is no module class or takes no device", function()
    support.assert_error_has(function() nn.utils.skip_init(nn.Linear(2, 2), 2, 2) end, "skip_init: Expected a Module; got")
    support.assert_error_has(function() nn.utils.skip_init("Linear", 2, 2) end, "skip_init: Expected a Module; got 'Linear'")
    support.assert_error_has(function() nn.utils.skip_init(nil) end, "Expected a Module; got nil")
    support.assert_error_has(function() nn.utils.skip_init(nn.ReLU) end,
      "skip_init: Module must support a 'device' arg to skip initialization")
    -- a class of one's own that makes its tensors without the device
    local Own = nn.Module:extend("Own")
    function Own:init(n) self.w = nn.Parameter(wick.randn(n)) end
    support.assert_error_has(function() nn.utils.skip_init(Own, 3) end, "Module must support a 'device' arg")
    support.assert_error_has(function() nn.utils.skip_init(nn.Linear, 2, 2, { device = "bogus" }) end,
      "skip_init: expected a device for option 'device', got 'bogus'")
    support.assert_error_has(function() nn.utils.skip_init(nn.Linear, -1, 2) end, "Linear")
  end)
end)

describe("nn.utils.convert_conv2d_weight_memory_format / convert_conv3d_weight_memory_format", function()
  it("lays out the convolutions' weights as PyTorch's, in place, leaving other layers", function()
    local m = nn.Sequential(nn.Conv2d(2, 3, 3), nn.Sequential(nn.ConvTranspose2d(3, 4, 2)), nn.Conv3d(2, 3, 2),
      nn.ConvTranspose3d(3, 2, { 1, 2, 3 }), nn.Linear(2, 2))
    local w1 = m[1].weight
    local before = w1:clone()
    local strides = function()
      local out = {}
      for _, p in ipairs(m:parameters()) do if p:dim() > 1 then out[#out + 1] = p:stride() end end
      return out
    end
    assert.is_true(rawequal(m, nn.utils.convert_conv2d_weight_memory_format(m, wick.channels_last)))
    assert.is_true(rawequal(w1, m[1].weight))
    assert.is_true(w1:equal(before))
    assert.are.same({ { 18, 1, 6, 2 }, { 16, 1, 8, 4 }, { 16, 8, 4, 2, 1 }, { 12, 6, 6, 3, 1 }, { 2, 1 } }, strides())
    nn.utils.convert_conv3d_weight_memory_format(m, wick.channels_last_3d)
    assert.are.same({ { 18, 1, 6, 2 }, { 16, 1, 8, 4 }, { 16, 1, 8, 4, 2 }, { 12, 1, 12, 6, 2 }, { 2, 1 } }, strides())
    nn.utils.convert_conv2d_weight_memory_format(m, wick.contiguous_format)
    nn.utils.convert_conv3d_weight_memory_format(m, wick.contiguous_format)
    assert.are.same({ { 18, 9, 3, 1 }, { 16, 4, 2, 1 }, { 16, 8, 4, 2, 1 }, { 12, 6, 6, 3, 1 }, { 2, 1 } }, strides())
    assert.is_true(w1:equal(before))
  end)

  it("errors as PyTorch's for a format of another rank or preserve_format", function()
    local conv2, conv3 = nn.Conv2d(2, 2, 1), nn.Conv3d(2, 2, 1)
    support.assert_error_has(function() nn.utils.convert_conv2d_weight_memory_format(conv2, wick.channels_last_3d) end,
      "convert_conv2d_weight_memory_format: required rank 5 tensor to use channels_last_3d format")
    support.assert_error_has(function() nn.utils.convert_conv3d_weight_memory_format(conv3, wick.channels_last) end,
      "convert_conv3d_weight_memory_format: required rank 4 tensor to use channels_last format")
    support.assert_error_has(function() nn.utils.convert_conv2d_weight_memory_format(conv2, wick.preserve_format) end,
      "Unsupported memory format Preserve")
    support.assert_error_has(function() nn.utils.convert_conv2d_weight_memory_format(conv2, "nhwc") end, "memory_format must be")
    support.assert_error_has(function() nn.utils.convert_conv2d_weight_memory_format(conv2) end, "missing required argument 'memory_format'")
    support.assert_error_has(function() nn.utils.convert_conv2d_weight_memory_format({}, wick.channels_last) end,
      "expected a module for argument 'module'")
  end)
end)

describe("nn.utils.rnn.invert_permutation", function()
  local L = function(t) return wick.tensor(t, { dtype = "int64" }) end
  it("inverts a 1-based permutation, as PyTorch's (0-based [4, 0, 3, 1, 2] -> [1, 3, 4, 2, 0])", function()
    local inv = nn.utils.rnn.invert_permutation(L({ 5, 1, 4, 2, 3 }))
    assert.are.same({ 2, 4, 5, 3, 1 }, inv:tolist())
    assert.are.equal("int64", inv.dtype)
    assert.is_nil(nn.utils.rnn.invert_permutation(nil))
    assert.are.same({ 0 }, nn.utils.rnn.invert_permutation(L({})).shape)
    local p = wick.randperm(200)
    assert.is_true(p:index_select(1, nn.utils.rnn.invert_permutation(p)):equal(wick.arange(1, 201, { dtype = "int64" })))
    -- a PackedSequence's unsorted_indices are its sorted_indices inverted
    local packed = nn.utils.rnn.pack_padded_sequence(wick.zeros(4, 3, 1), { 2, 4, 3 }, { enforce_sorted = false })
    assert.are.same(packed.unsorted_indices:tolist(), nn.utils.rnn.invert_permutation(packed.sorted_indices):tolist())
  end)

  it("errors for what is no permutation", function()
    local ip = nn.utils.rnn.invert_permutation
    support.assert_error_has(function() ip(L({ 1, 3 })) end, "invert_permutation: index 3 is out of bounds for dimension 1 with size 2")
    support.assert_error_has(function() ip(L({ 0, 1 })) end, "index 0 is out of bounds")
    support.assert_error_has(function() ip(L({ 1, 1, 2 })) end, "the index 1 appears more than once")
    support.assert_error_has(function() ip(L({ 2, 2, 3 })) end, "the index 1 is missing")
    support.assert_error_has(function() ip(L({ { 1, 2 } })) end, "expected a 1-D tensor")
    support.assert_error_has(function() ip(wick.tensor({ 1, 2 })) end, "expected an int64 tensor of indices")
    support.assert_error_has(function() ip({ 1, 2 }) end, "expected a tensor for argument 'permutation'")
  end)
end)

describe("nn.utils.clip_grad and nn.utils.convert_parameters", function()
  it("are PyTorch's module paths to the same functions", function()
    assert.are.equal(nn.utils.clip_grad_norm_, nn.utils.clip_grad.clip_grad_norm_)
    assert.are.equal(nn.utils.clip_grad_value_, nn.utils.clip_grad.clip_grad_value_)
    assert.are.equal(nn.utils.clip_grad_norm, nn.utils.clip_grad.clip_grad_norm)
    assert.are.equal(nn.utils.parameters_to_vector, nn.utils.convert_parameters.parameters_to_vector)
    assert.are.equal(nn.utils.vector_to_parameters, nn.utils.convert_parameters.vector_to_parameters)
    support.assert_error_has(function() return nn.utils.clip_grad.clip_grad end, "clip_grad")
    local l = nn.Linear(2, 2)
    local v = nn.utils.convert_parameters.parameters_to_vector(l:parameters())
    assert.are.same({ 6 }, v.shape)
  end)
end)
