-- The convolutional shelf against PyTorch's numbers (spec/fixtures/ref_conv.lua,
-- written by tools/make_reference.py conv): each case builds the module named by
-- the case, fills its parameters with support.fill_parameters, runs it on
-- support.inputs(x_shape) and compares the output and the gradients of the input
-- and of every parameter for loss = sum(y * formula(y.shape, 99)). On every
-- device of support.devices() (a GPU's results against the same references).
local wick = require("wick")
local nn = require("wick.nn")
local F = nn.functional
local support = require("spec.support")
local assert_error_has = support.assert_error_has

local REF = support.reference("conv")

-- a function as a module (tools/reference/conv.py's Fn)
local Fn = nn.Module:extend("Fn")
function Fn:init(fn) self.fn = fn end
function Fn:forward(x) return self.fn(x) end
local TOL = { float64 = 1e-10, float32 = 2e-5 }

-- the module of each case (as tools/reference/conv.py builds it), and forward's extra arguments
local BUILD = {
  convt_basic = function() return nn.ConvTranspose2d(3, 4, 3, { stride = 2, padding = 1, output_padding = 1 }) end,
  convt_basic_f32 = function() return nn.ConvTranspose2d(3, 4, 3, 2, 1, 1) end,
  convt_groups = function()
    return nn.ConvTranspose2d(4, 6, { 2, 3 }, { 1, 2 }, { 1, 0 }, { 1, 1 }, 2, false, 2)
  end,
  convt_dcgan = function() return nn.ConvTranspose2d(6, 8, 4, 1, 0, { bias = false }) end,
  convt_dcgan_s2 = function() return nn.ConvTranspose2d(8, 4, 4, 2, 1, { bias = false }) end,
  convt_unbatched = function() return nn.ConvTranspose2d(2, 3, 3, { stride = 2 }) end,
  convt_1x1_dil = function() return nn.ConvTranspose2d(2, 3, 1, { dilation = 2, output_padding = 1 }) end,
  convt_output_size = function() return nn.ConvTranspose2d(3, 2, 3, 3, 1), { 8, 11 } end,
  inorm2d = function() return nn.InstanceNorm2d(3) end,
  inorm2d_affine_track = function() return nn.InstanceNorm2d(3, { affine = true, track_running_stats = true, momentum = 0.3 }) end,
  inorm2d_eval = function() return nn.InstanceNorm2d(3, 1e-5, 0.1, true, true) end,
  inorm2d_f32 = function() return nn.InstanceNorm2d(3, { affine = true, eps = 1e-3 }) end,
  inorm1d = function() return nn.InstanceNorm1d(4, { affine = true }) end,
  inorm1d_unbatched = function() return nn.InstanceNorm1d(4, { track_running_stats = true }) end,
  up_nearest_x2 = function() return nn.Upsample({ scale_factor = 2 }) end,
  up_nearest_size = function() return nn.Upsample({ 5, 7 }) end,
  up_nearest_x1_5 = function() return nn.Upsample(nil, 1.5) end,
  up_nearest_down = function() return nn.Upsample({ size = { 2, 3 } }) end,
  up_bilinear_x2 = function() return nn.Upsample({ scale_factor = 2, mode = "bilinear" }) end,
  up_bilinear_ac = function() return nn.Upsample({ 7, 5 }, nil, "bilinear", true) end,
  up_bilinear_down = function() return nn.Upsample({ scale_factor = 0.6, mode = "bilinear" }) end,
  up_bilinear_recompute = function()
    return nn.Upsample({ scale_factor = 1.7, mode = "bilinear", recompute_scale_factor = true })
  end,
  up_bilinear_f32 = function() return nn.Upsample({ scale_factor = { 2, 3 }, mode = "bilinear" }) end,
  up_nearest_1d = function() return Fn(function(x) return F.interpolate(x, { scale_factor = 3 }) end) end,
  up_linear_1d = function() return Fn(function(x) return F.interpolate(x, 9, nil, "linear") end) end,
  up_bilinear_nn = function() return nn.UpsamplingBilinear2d({ scale_factor = 2 }) end,
  conv2d_reflect = function() return nn.Conv2d(2, 3, 3, { padding = 1, padding_mode = "reflect" }) end,
  conv2d_replicate = function() return nn.Conv2d(2, 3, 3, { padding = 1, padding_mode = "replicate" }) end,
  conv2d_circular = function() return nn.Conv2d(2, 3, 3, 1, 1, 1, 1, true, "circular") end,
  conv1d_reflect = function() return nn.Conv1d(2, 3, 3, { padding = 2, padding_mode = "reflect" }) end,
  conv1d_replicate = function() return nn.Conv1d(2, 3, 3, { padding = 2, padding_mode = "replicate" }) end,
  conv1d_circular = function() return nn.Conv1d(2, 3, 3, { padding = 2, padding_mode = "circular" }) end,
  conv2d_circular_asym = function() return nn.Conv2d(2, 3, { 3, 2 }, { padding = { 2, 1 }, padding_mode = "circular" }) end,
  conv2d_same_reflect = function() return nn.Conv2d(2, 2, 4, { padding = "same", padding_mode = "reflect" }) end,
  pad_constant = function() return Fn(function(x) return F.pad(x, { 1, -1, 2, 0 }, { value = 0.5 }) end) end,
  pad_reflect = function() return Fn(function(x) return F.pad(x, { 2, 1, 1, 3 }, "reflect") end) end,
  pad_replicate = function() return Fn(function(x) return F.pad(x, { 3, 1 }, { mode = "replicate" }) end) end,
  pad_circular = function() return Fn(function(x) return F.pad(x, { 1, 2, 2, 1 }, "circular") end) end,
  prelu = function() return nn.PReLU() end,
  prelu_channels = function() return nn.PReLU(3, 0.1) end,
  leaky_relu = function() return nn.LeakyReLU(0.2) end,
  elu = function() return nn.ELU(0.7) end,
  silu = function() return nn.SiLU() end,
  mish = function() return nn.Mish() end,
  softplus = function() return nn.Softplus({ beta = 2, threshold = 1 }) end,
  hardtanh = function() return nn.Hardtanh(-0.5, 0.3) end,
  groupnorm = function() return nn.GroupNorm(2, 4) end,
  groupnorm_noaffine = function() return nn.GroupNorm(3, 6, 1e-3, false) end,
  conv1d = function() return nn.Conv1d(4, 6, 3, { stride = 2, padding = 1, dilation = 2, groups = 2 }) end,
  conv1d_unbatched = function() return nn.Conv1d(2, 3, 2, { bias = false }) end,
  adaptive_avg_pool = function() return nn.AdaptiveAvgPool2d({ 3, 2 }) end,
  adaptive_avg_pool_even = function() return nn.AdaptiveAvgPool2d(4) end,
  adaptive_avg_pool_none = function() return nn.AdaptiveAvgPool2d({ nil, 3 }) end,
  dropout2d_eval = function() return nn.Dropout2d(0.5) end,
}

local function run_case(name, device)
  local r = REF[name]
  local m, extra = BUILD[name]()
  assert(m, "no module for case " .. name)
  m:to({ dtype = r.dtype, device = device })
  support.fill_parameters(m)
  if r.train == false then m:eval() end
  local opts = { dtype = r.dtype, device = device }
  local x = support.inputs(r.x_shape, opts):requires_grad_(true)
  local y = m(x, extra)
  y:mul(support.formula(y:size(), 99, opts)):sum():backward()
  local tol = TOL[r.dtype]
  local function same(actual, expected, what)
    local ok, why = support.close(actual:cpu():to("float64"), support.ref_tensor(expected):totable(), tol, what)
    assert(ok, why)
    assert.are.same(expected.shape, actual:size(), what .. ": shape")
  end
  same(y, r.y, name .. " output")
  same(x.grad, r.grad_input, name .. " grad input")
  local n = 0
  for pname, p in m:named_parameters() do
    assert(r.grads[pname], name .. ": PyTorch has no parameter " .. pname)
    same(p.grad, r.grads[pname], name .. " grad " .. pname)
    n = n + 1
  end
  local expected = 0
  for _ in pairs(r.grads) do expected = expected + 1 end
  assert.are.equal(expected, n, name .. ": parameter count")
  for bname, b in pairs(r.buffers or {}) do same(m[bname], b, name .. " buffer " .. bname) end
end

describe("convolutional shelf against PyTorch", function()
  local names = {}
  for name in pairs(REF) do names[#names + 1] = name end
  table.sort(names)
  support.for_each_device(function(device)
    for _, name in ipairs(names) do
      if device ~= "meta" then
        it(name .. " on " .. device, function() run_case(name, device) end)
      end
    end
  end)
  it("has a module for every case", function()
    for _, name in ipairs(names) do assert(BUILD[name], "no module for case " .. name) end
  end)
end)

describe("ConvTranspose2d", function()
  it("is named like PyTorch's, with its parameters and repr", function()
    local m = nn.ConvTranspose2d(4, 6, 3, { stride = 2, padding = 1, output_padding = 1, groups = 2, bias = false })
    assert.are.equal("ConvTranspose2d", getmetatable(m).__name)
    assert.are.same({ 4, 3, 3, 3 }, m.weight:size())
    assert.is_nil(m.bias)
    assert.are.equal("ConvTranspose2d(4, 6, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), "
      .. "output_padding=(1, 1), groups=2, bias=False)", tostring(m))
  end)
  it("gives the output shape of PyTorch's formula, on meta too", function()
    for _, device in ipairs({ "cpu", "meta" }) do
      local m = nn.ConvTranspose2d(3, 5, { 3, 2 }, { 2, 3 }, { 1, 0 }, { 1, 2 }, { dilation = { 1, 2 }, device = device })
      local y = m(wick.zeros({ 2, 3, 4, 5 }, { device = device }))
      assert.are.same({ 2, 5, 8, 17 }, y:size())
    end
  end)
  it("rejects what PyTorch rejects, at the caller's line", function()
    local w = wick.zeros({ 3, 2, 3, 3 })
    assert_error_has(function()
      local y = F.conv_transpose2d(wick.zeros({ 1, 4, 5, 5 }), w)
      return y
    end,
      "conv_shelf_spec.lua:", "expected input[1, 4, 5, 5] to have 3 channels, but got 4 channels instead")
    assert_error_has(function() return F.conv_transpose2d(wick.zeros({ 1, 3, 5, 5 }), w, nil, 1, 0, 1) end,
      "output padding must be smaller than either stride or dilation")
    assert_error_has(function() return F.conv_transpose2d(wick.zeros({ 1, 3, 1, 1 }), w, nil, 1, 2) end,
      "Output size is too small")
    assert_error_has(function() return F.conv_transpose2d(wick.zeros({ 1, 3, 5, 5 }), w, wick.zeros(3)) end,
      "expected bias to be 1-dimensional with 2 elements")
    assert_error_has(function() return nn.ConvTranspose2d(3, 2, 3, { padding_mode = "reflect" }) end,
      'Only "zeros" padding mode is supported for ConvTranspose2d')
    local m = nn.ConvTranspose2d(3, 2, 3, 2)
    assert_error_has(function() return m(wick.zeros({ 1, 3, 4, 4 }), { 12, 12 }) end,
      "requested an output size of [12, 12], but valid sizes range from [9, 9] to [10, 10]")
    assert_error_has(function() return F.conv_transpose2d(wick.zeros({ 1, 3, 5, 5 }), w, nil, { stride = 0 }) end,
      "non-positive stride")
  end)
  it("runs an empty batch", function()
    local m = nn.ConvTranspose2d(3, 2, 3, 2)
    local x = wick.zeros({ 0, 3, 4, 4 }):requires_grad_(true)
    local y = m(x)
    assert.are.same({ 0, 2, 9, 9 }, y:size())
    y:sum():backward()
    assert.are.same({ 0, 3, 4, 4 }, x.grad:size())
    assert.are.same({ 0, 0 }, m.bias.grad:totable())
  end)
end)

describe("inplace activations", function()
  it("write into the input and return it, with PyTorch's gradients through autograd", function()
    for _, case in ipairs({
      { function(i) return nn.ReLU(i) end },
      { function(i) return nn.LeakyReLU(0.2, i) end },
      { function(i) return nn.Hardtanh(-0.5, 0.3, i) end },
    }) do
      local x0 = support.inputs({ 2, 7 }, { dtype = "float64" }):requires_grad_(true)
      local ref = case[1](false)(x0 * 2)
      ref:mul(support.formula({ 2, 7 }, 3)):sum():backward()
      local want = x0.grad:clone()
      x0.grad = nil
      local h = x0 * 2
      local y = case[1](true)(h)
      assert.is_true(rawequal(y, h))
      support.assert_close(y:detach(), ref:detach():totable(), 1e-12)
      y:mul(support.formula({ 2, 7 }, 3)):sum():backward()
      support.assert_close(x0.grad, want:totable(), 1e-12)
    end
  end)
  it("write back outside autograd, and compute out of place under it where no in-place form exists", function()
    local x = support.inputs({ 5 })
    local want = nn.SiLU()(x):totable()
    assert.is_true(rawequal(x, nn.SiLU(true)(x)))
    support.assert_close(x, want, 1e-6)
    local leaf = support.inputs({ 5 }):requires_grad_(true)
    local y = nn.ELU(1, true)(leaf * 1)
    y:sum():backward()
    assert.are.same({ 5 }, leaf.grad:size())
    assert.are.equal("ReLU(inplace=True)", tostring(nn.ReLU(true)))
    assert.are.equal("LeakyReLU(negative_slope=0.2, inplace=True)", tostring(nn.LeakyReLU(0.2, true)))
  end)
end)

describe("interpolate, pad, PReLU, InstanceNorm", function()
  it("print like PyTorch's", function()
    assert.are.equal("Upsample(scale_factor=2.0, mode='nearest')", tostring(nn.Upsample({ scale_factor = 2 })))
    assert.are.equal("Upsample(size=(5, 7), mode='bilinear')", tostring(nn.Upsample({ 5, 7 }, nil, "bilinear")))
    assert.are.equal("PReLU(num_parameters=3)", tostring(nn.PReLU(3)))
    assert.are.equal("InstanceNorm2d(4, eps=1e-05, momentum=0.1, affine=False, bias=False, track_running_stats=False)",
      tostring(nn.InstanceNorm2d(4)))
    assert.are.equal("InstanceNorm2d", getmetatable(nn.InstanceNorm2d(4)).__name)
  end)
  it("reject what PyTorch rejects", function()
    local x4, x3 = wick.zeros({ 1, 2, 3, 4 }), wick.zeros({ 1, 2, 3 })
    assert_error_has(function() return F.interpolate(x4, { 6, 8 }, 2) end, "only one of size or scale_factor")
    assert_error_has(function() return F.interpolate(x4) end, "either size or scale_factor should be defined")
    assert_error_has(function() return F.interpolate(x3, { scale_factor = 2, mode = "bilinear" }) end,
      "Got 3D input, but bilinear mode needs 4D input")
    assert_error_has(function() return F.interpolate(x4, { scale_factor = 2, align_corners = true }) end,
      "align_corners option can only be set with the interpolating modes")
    assert_error_has(function() return F.interpolate(x4, { scale_factor = 2, mode = "lanczos" }) end,
      "mode 'lanczos' is not supported")
    assert_error_has(function() return F.interpolate(x4, { 6 }) end,
      "Input and output must have the same number of spatial dimensions")
    assert_error_has(function() return F.pad(x4, { 4, 0, 0, 0 }, "reflect") end,
      "Padding size should be less than the corresponding input dimension")
    assert_error_has(function() return F.pad(x4, { 1 }) end, "Padding length must be divisible by 2")
    assert_error_has(function() return F.pad(x4, { 1, 1 }, "wrap") end, "Unrecognised padding mode wrap")
    assert_error_has(function() return nn.PReLU(3)(x4) end,
      "Mismatch of parameter numbers and input channel size. Found parameter numbers = 3 and channel size = 2.")
    assert_error_has(function() return nn.InstanceNorm2d(3, { affine = true })(x4) end,
      "expected input's size at dim=1 to match num_features (3), but got: 2.")
    assert_error_has(function() return nn.Conv2d(2, 2, 3, { padding_mode = "wrap" }) end, "padding_mode")
  end)
  it("keeps shapes on meta and empty batches", function()
    local m = wick.zeros({ 2, 3, 4, 5 }, { device = "meta" })
    assert.are.same({ 2, 3, 8, 10 }, F.interpolate(m, { scale_factor = 2, mode = "bilinear" }):size())
    local e = wick.zeros({ 0, 3, 4, 5 }):requires_grad_(true)
    local y = F.interpolate(e, { size = { 7, 3 } })
    assert.are.same({ 0, 3, 7, 3 }, y:size())
    y:sum():backward()
    assert.are.same({ 0, 3, 4, 5 }, e.grad:size())
  end)
end)
