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
