-- F.interpolate's "bicubic", "area" and "nearest-exact" modes and antialias, and F.fold / nn.Fold
-- (col2im, the adjoint of F.unfold): properties (constants and linear ramps kept,
-- the adjoint identity, gradients by gradcheck) plus small reference numbers.
--
-- Reference numbers marked "PyTorch" were computed with PyTorch 2.15 (CPU, float64
-- unless said otherwise; torch.nn.functional.interpolate / fold with the same inputs)
-- and pasted here; the specs never run Python.
local wick = require("wick")
local nn = wick.nn
local F = nn.functional
local support = require("spec.support")
local assert_error_has = support.assert_error_has

local F64 = { dtype = "float64" }
local function flat(t) return t:reshape(-1):totable() end
local function assert_close(actual, expected, tol)
  if wick.is_tensor(actual) then actual = flat(actual) end
  if wick.is_tensor(expected) then expected = flat(expected) end
  support.assert_close(actual, expected, tol)
end

-- x = (0 .. 11)^2 / 10 as [1, 1, 3, 4], float64, a leaf
local function squares()
  return (wick.arange(12, F64):pow(2) / 10):view(1, 1, 3, 4):detach():requires_grad_(true)
end
-- y and the gradient of sum(y * (0 .. numel - 1)) with respect to x
local function value_and_grad(x, opts)
  local y = F.interpolate(x, opts)
  local w = wick.arange(y:numel(), F64):view(y:size())
  x.grad = nil
  ;(y * w):sum():backward()
  return y, x.grad
end

describe("F.interpolate mode = 'bicubic'", function()
  it("matches PyTorch's upsample_bicubic2d, values and gradients, with size or scale_factor", function()
    local x = squares()
    -- PyTorch: size (5, 3), align_corners false
    local y, g = value_and_grad(x, { size = { 5, 3 }, mode = "bicubic" })
    assert.are.same({ 1, 1, 5, 3 }, y:size())
    assert_close(y, { -0.15414537037037046, -0.05630000000000039, 0.4591379629629622, 0.3162361111111079,
      0.8668999999999949, 1.8351564814814751, 1.7100694444444458, 3.0125, 4.7325231481481485, 4.831902777777776,
      6.8860999999999954, 9.357889814814808, 7.081484259259266, 9.588500000000003, 12.513108333333335 }, 1e-12)
    assert_close(g, { 0.7527499999999991, 1.7904444444444427, 2.37364814814815, 3.5551574074074086, 7.745999999999996,
      8.609999999999989, 9.226000000000006, 10.705999999999998, 13.91444444444444, 14.51274999999999,
      15.095953703703717, 16.71685185185185 }, 1e-12)
    -- PyTorch: size (5, 3), align_corners true
    y, g = value_and_grad(x, { size = { 5, 3 }, mode = "bicubic", align_corners = true })
    assert_close(y, { 0.0, 0.2125, 0.9, 0.35, 1.05, 2.225, 1.6, 3.0125, 4.9, 4.15, 6.275, 8.875, 6.4, 9.0125, 12.1 }, 1e-12)
    assert_close(g, { 0.462890625, 1.224609375, 1.224609375, 3.275390625, 11.689453125, 9.091796875, 9.091796875,
      16.064453125, 14.56640625, 10.46484375, 10.46484375, 17.37890625 }, 1e-12)
    -- PyTorch: scale_factor 1.7 (3 x 4 to 5 x 6, source positions from 1 / 1.7)
    y, g = value_and_grad(x, { scale_factor = 1.7, mode = "bicubic" })
    assert.are.same({ 1, 1, 5, 6 }, y:size())
    assert_close(y, { -0.15795289113803204, -0.1626991656981378, -0.13881825196051126, -0.04978889211046795,
      0.15894960054930488, 0.41701301936853274, 0.23130653346733993, 0.35335650765643434, 0.5860997515752817,
      0.8623374217490568, 1.2815487737122042, 1.728054228937418, 1.3796913144958312, 1.7106036188661464,
      2.287390739469511, 2.8720031786858944, 3.637911315985006, 4.394823768389596, 4.309589332084096,
      4.8606194380855525, 5.799990763005433, 6.709596111097601, 7.840884325093749, 8.92493143012222,
      6.613362416003092, 7.302168730303528, 8.468488882122672, 9.581513900850997, 10.941500935125504,
      12.230308271756005 }, 1e-12)
    assert_close(g, { 5.052537808935182, 10.281514254002515, 16.605704276822213, 8.670003481123539, 37.41879700675164,
      44.18604754764467, 52.49312877623695, 24.168647115122894, 59.891688031860554, 66.86668534877008,
      75.5133247425851, 33.851921610144814 }, 1e-12)
    -- PyTorch: scale_factor 0.6 (downsampling to 1 x 2)
    y, g = value_and_grad(x, { scale_factor = 0.6, mode = "bicubic" })
    assert_close(y, { 0.30562414266117804, 1.0518518518518498 }, 1e-12)
    assert_close(g, { 0, 0, 0.6851851851851851, 0, 0, 0, 0.37037037037037046, 0, 0, 0, -0.055555555555556246, 0 }, 1e-12)
  end)

  it("keeps constants, reproduces linear ramps away from the border, and is the identity at the same size", function()
    local c = wick.full({ 2, 3, 4, 5 }, 2.5, F64)
    for _, ac in ipairs({ false, true }) do
      assert_close(F.interpolate(c, { size = { 9, 3 }, mode = "bicubic", align_corners = ac }),
        wick.full({ 2, 3, 9, 3 }, 2.5, F64), 1e-13)
    end
    -- with align_corners every source position lies in [0, n - 1]; the cubic convolution
    -- reproduces a linear function wherever its four taps lie inside
    local ramp = wick.arange(9, F64):view(1, 1, 1, 9):expand(1, 1, 2, 9):contiguous()
    local y = F.interpolate(ramp, { size = { 2, 17 }, mode = "bicubic", align_corners = true })
    local row = y[1][1][1]:totable()
    for i = 5, 13 do assert.is_true(math.abs(row[i] - (i - 1) / 2) < 1e-12) end
    local x = wick.randn(1, 2, 5, 6, F64)
    assert_close(F.interpolate(x, { size = { 5, 6 }, mode = "bicubic" }), x, 1e-14)
    assert_close(F.interpolate(x, { scale_factor = 1, mode = "bicubic" }), x, 1e-14)
  end)

  it("float32 agrees with float64; gradients by gradcheck; nn.Upsample takes the mode", function()
    local x = wick.randn(2, 2, 6, 5, F64)
    for _, o in ipairs({ { size = { 8, 3 } }, { scale_factor = { 1.5, 0.75 } }, { size = { 4, 11 }, align_corners = true } }) do
      o.mode = "bicubic"
      assert_close(F.interpolate(x:float(), o):double(), F.interpolate(x, o), 1e-5)
      assert.is_true(support.gradcheck(function(t) return F.interpolate(t, o) end, { wick.randn(1, 2, 4, 3, F64) }))
    end
    local up = nn.Upsample({ scale_factor = 2, mode = "bicubic" })
    assert.are.equal("Upsample(scale_factor=2.0, mode='bicubic')", tostring(up))
    assert.are.same({ 2, 2, 12, 10 }, up(x):size())
  end)

  it("rejects what PyTorch rejects", function()
    assert_error_has(function() F.interpolate(wick.zeros(1, 2, 3), { scale_factor = 2, mode = "bicubic" }) end,
      "Got 3D input, but bicubic mode needs 4D input")
    assert_error_has(function() F.interpolate(wick.zeros({ 1, 2, 3, 4 }, { dtype = "int64" }), { size = 2, mode = "bicubic" }) end,
      "is not implemented here")
    assert_error_has(function() F.interpolate(wick.zeros(1, 2, 3, 4), { scale_factor = 2, mode = "cubic" }) end,
      "mode 'cubic' is not supported")
  end)
end)

describe("F.interpolate with antialias = true", function()
  it("matches PyTorch's _upsample_bilinear2d_aa and _upsample_bicubic2d_aa, values and gradients", function()
    local x = squares()
    -- PyTorch: bicubic, antialias, size (2, 3)
    local y, g = value_and_grad(x, { size = { 2, 3 }, mode = "bicubic", antialias = true })
    assert_close(y, { 0.421877972900008, 0.9749243556391953, 1.8572758226783377, 5.0489610690135205, 7.048760631722662,
      9.377865278731758 }, 1e-12)
    assert_close(g, { -0.10786658341438377, 0.16247611652904634, 0.6035396938896442, 0.8105506124820498, 0.8123047250768465,
      1.2437042519333383, 1.807801353505051, 1.9869119808812328, 1.3781373469090408, 1.78241119102103, 2.223474768381629,
      2.2965545428054743 }, 1e-12)
    -- PyTorch: bilinear, antialias, scale_factor 0.5
    y, g = value_and_grad(x, { scale_factor = 0.5, mode = "bilinear", antialias = true })
    assert_close(y, { 2.108163265306122, 3.477551020408163 }, 1e-12)
    assert_close(g, { 0, 0.06122448979591836, 0.18367346938775508, 0.18367346938775508, 0, 0.06122448979591836,
      0.18367346938775508, 0.18367346938775508, 0, 0.02040816326530612, 0.06122448979591836, 0.06122448979591836 }, 1e-12)
    -- PyTorch: bicubic, antialias, align_corners, upsampling to 4 x 7 (the first row and the gradient)
    y, g = value_and_grad(x, { size = { 4, 7 }, mode = "bicubic", antialias = true, align_corners = true })
    assert_close(y[1][1][1], { -0.10944272445820445, -0.10169035728006161, -0.08537565287263978, -0.014802631578947551,
      0.1088815789473682, 0.30550421856167115, 0.5573568958893582 }, 1e-12)
    assert_close(g, { 6.868252651070906, 12.823141768036832, 20.017354739197824, 11.085798599859066, 40.54000361214107,
      45.58018951894289, 54.18693340376084, 26.610207377173726, 41.48015137250628, 44.25837739200645, 50.389702147897744,
      24.15988741740639 }, 1e-12)
  end)

  it("keeps constants and the sizes kept; only bilinear and bicubic on 4-D input", function()
    local c = wick.full({ 1, 2, 9, 7 }, -1.5, F64)
    for _, mode in ipairs({ "bilinear", "bicubic" }) do
      assert_close(F.interpolate(c, { size = { 4, 3 }, mode = mode, antialias = true }), wick.full({ 1, 2, 4, 3 }, -1.5, F64), 1e-13)
      local x = wick.randn(1, 2, 5, 6, F64)
      local y = F.interpolate(x, { size = { 5, 3 }, mode = mode, antialias = true })
      assert_close(y, F.interpolate(x:float(), { size = { 5, 3 }, mode = mode, antialias = true }):double(), 1e-5)
      assert.is_true(support.gradcheck(function(t) return F.interpolate(t, { size = { 2, 5 }, mode = mode, antialias = true }) end,
        { wick.randn(1, 1, 4, 3, F64) }))
    end
    assert_error_has(function() F.interpolate(wick.zeros(1, 1, 4), { size = 3, mode = "linear", antialias = true }) end,
      "Anti-alias option is restricted to bilinear and bicubic modes and requires a 4-D tensor as input")
    assert_error_has(function() F.interpolate(wick.zeros(1, 1, 4, 4), { size = 3, mode = "nearest", antialias = true }) end,
      "Anti-alias option is restricted to bilinear and bicubic modes")
  end)
end)

describe("F.interpolate mode = 'nearest-exact'", function()
  it("takes source floor((dst + 0.5) * scale), as PyTorch's", function()
    local v = wick.arange(5, F64):view(1, 1, 5)
    -- PyTorch: nearest-exact and nearest, 5 to 8
    assert.are.same({ 0, 0, 1, 2, 2, 3, 4, 4 }, flat(F.interpolate(v, { size = 8, mode = "nearest-exact" })))
    assert.are.same({ 0, 0, 1, 1, 2, 3, 3, 4 }, flat(F.interpolate(v, { size = 8, mode = "nearest" })))
    local v2 = wick.arange(12, F64):view(1, 1, 3, 4)
    -- PyTorch: scale_factor 1.5
    assert.are.same({ 0, 1, 1, 2, 3, 3, 4, 5, 5, 6, 7, 7, 4, 5, 5, 6, 7, 7, 8, 9, 9, 10, 11, 11 },
      flat(F.interpolate(v2, { scale_factor = 1.5, mode = "nearest-exact" })))
    -- PyTorch: scale_factor 0.7 (3 x 4 to 2 x 2): the given scale, or n / out when recomputed
    assert.are.same({ 0, 2, 8, 10 }, flat(F.interpolate(v2, { scale_factor = 0.7, mode = "nearest-exact" })))
    assert.are.same({ 1, 3, 9, 11 },
      flat(F.interpolate(v2, { scale_factor = 0.7, mode = "nearest-exact", recompute_scale_factor = true })))
    -- PyTorch: 5-D, 2 x 3 x 2 to 3 x 2 x 5
    local v3 = wick.arange(12, F64):view(1, 1, 2, 3, 2)
    assert.are.same({ 0, 0, 1, 1, 1, 4, 4, 5, 5, 5, 6, 6, 7, 7, 7, 10, 10, 11, 11, 11, 6, 6, 7, 7, 7, 10, 10, 11, 11, 11 },
      flat(F.interpolate(v3, { size = { 3, 2, 5 }, mode = "nearest-exact" })))
  end)

  it("rounds the source position as PyTorch's CPU kernels at exact halves", function()
    -- PyTorch: 2 to 41, (20 + 0.5) * 2 / 41 = 1 exactly: 1-D float64 gives source 1 (the scale kept
    -- in float64), the 2-D kernel 0 (its scale rounded to float32)
    local one = F.interpolate(wick.arange(2, F64):view(1, 1, 2), { size = 41, mode = "nearest-exact" })
    assert.are.equal(1, flat(one)[21])
    local two = F.interpolate(wick.arange(2, F64):view(1, 1, 1, 2), { size = { 1, 41 }, mode = "nearest-exact" })
    assert.are.equal(0, flat(two)[21])
    -- PyTorch: 8 to 47 in float32 gives source 3 at dst 23, in float64 4
    local x8 = wick.arange(8, F64):view(1, 1, 8)
    assert.are.equal(4, flat(F.interpolate(x8, { size = 47, mode = "nearest-exact" }))[24])
    assert.are.equal(3, flat(F.interpolate(x8:float(), { size = 47, mode = "nearest-exact" }))[24])
  end)

  it("sends gradients back to the sources; keeps integer dtypes; no align_corners", function()
    local x = wick.randn(1, 2, 3, 4, F64):requires_grad_(true)
    local y = F.interpolate(x, { size = { 7, 5 }, mode = "nearest-exact" })
    y:sum():backward()
    assert.are.equal(70, x.grad:sum():item())
    assert.is_true(support.gradcheck(function(t) return F.interpolate(t, { scale_factor = 1.7, mode = "nearest-exact" }) end,
      { wick.randn(1, 1, 3, 4, F64) }))
    local i = wick.arange(4, { dtype = "int64" }):view(1, 1, 4)
    local yi = F.interpolate(i, { size = 7, mode = "nearest-exact" })
    assert.are.equal("int64", yi.dtype)
    assert.are.same({ 0, 0, 1, 2, 2, 3, 3 }, flat(yi))
    assert_error_has(function() F.interpolate(x, { scale_factor = 2, mode = "nearest-exact", align_corners = false }) end,
      "align_corners option can only be set with the interpolating modes")
  end)
end)

describe("F.interpolate mode = 'area'", function()
  it("is the adaptive average pooling to the output size, as PyTorch's", function()
    local a = wick.arange(35, F64):pow(1.5):view(1, 1, 5, 7)
    -- PyTorch: area to 3 x 4, and scale_factor 0.6 (the same size)
    local want = { 10.536919043855413, 15.045795524517688, 22.34189349790864, 28.579666076720734, 58.50814434892603,
      67.16739098157393, 79.3449212905746, 88.9289679594068, 125.93877228417645, 137.35933688534695, 153.0567689290411,
      165.17338863174666 }
    assert_close(F.interpolate(a, { size = { 3, 4 }, mode = "area" }), want, 1e-13)
    assert_close(F.interpolate(a, { scale_factor = 0.6, mode = "area" }), want, 1e-13)
    local x = wick.randn(2, 3, 8, F64)
    assert_close(F.interpolate(x, { scale_factor = 0.5, mode = "area" }), F.avg_pool1d(x, 2), 1e-14)
    local v = wick.randn(1, 2, 4, 6, 2, F64)
    assert_close(F.interpolate(v, { size = { 2, 3, 1 }, mode = "area" }), F.avg_pool3d(v, { 2, 2, 2 }), 1e-14)
    assert.is_true(support.gradcheck(function(t) return F.interpolate(t, { size = { 3, 2 }, mode = "area" }) end,
      { wick.randn(1, 1, 5, 4, F64) }))
    assert_error_has(function() F.interpolate(a, { size = 2, mode = "area", align_corners = true }) end,
      "align_corners option can only be set with the interpolating modes")
  end)
end)

describe("F.fold and nn.Fold (col2im)", function()
  it("sums the columns into their blocks, as PyTorch's", function()
    -- PyTorch: fold of 1 .. 48 as [1, 8, 6] to 3 x 4, kernel 2
    local c = wick.arange(1, 49, F64):view(1, 8, 6)
    local y = F.fold(c, { 3, 4 }, 2)
    assert.are.same({ 1, 2, 3, 4 }, y:size())
    assert.are.same({ 1, 9, 11, 9, 17, 48, 52, 33, 16, 39, 41, 24, 25, 57, 59, 33, 65, 144, 148, 81, 40, 87, 89, 48 }, flat(y))
    -- PyTorch: unbatched 1 .. 16 as [4, 4] to 3 x 3, kernel 2, padding 1, stride 2 (positionally)
    local u = F.fold(wick.arange(1, 17, F64):view(4, 4), { 3, 3 }, 2, 1, 1, 2)
    assert.are.same({ 1, 3, 3 }, u:size())
    assert.are.same({ 13, 10, 14, 7, 4, 8, 15, 12, 16 }, flat(u))
    -- each position covered once by a dilated kernel; the overlap counts of a 2 x 2 kernel
    assert.are.same(flat(wick.ones(16)), flat(F.fold(wick.ones(1, 4, 4), 4, 2, { dilation = 2 })))
    assert.are.same({ 1, 2, 2, 1, 2, 4, 4, 2, 2, 4, 4, 2, 1, 2, 2, 1 },
      flat(F.fold(wick.ones(1, 4, 9), { output_size = { 4, 4 }, kernel_size = 2 })))
  end)

  it("is the adjoint of F.unfold; fold(unfold(x)) is x times the overlap counts; gradients", function()
    local cases = {
      { { 2, 3, 5, 6 }, { 2, 3 }, { padding = 1, stride = 2 } },
      { { 1, 2, 7, 7 }, 3, { dilation = 2, padding = { 2, 1 }, stride = { 1, 2 } } },
      { { 3, 1, 4, 4 }, 2, {} },
    }
    for _, case in ipairs(cases) do
      local shape, k, o = case[1], case[2], case[3]
      local x = wick.randn(shape, F64)
      local ux = F.unfold(x, k, o)
      local c = wick.randn(ux:size(), F64)
      local fc = F.fold(c, { shape[3], shape[4] }, k, o)
      assert.are.same(shape, fc:size())
      -- <unfold(x), c> = <x, fold(c)>
      assert.is_true(math.abs((ux * c):sum():item() - (x * fc):sum():item()) < 1e-10)
      local counts = F.fold(F.unfold(wick.ones(shape, F64), k, o), { shape[3], shape[4] }, k, o)
      assert_close(F.fold(ux, { shape[3], shape[4] }, k, o), x * counts, 1e-13)
      assert.is_true(support.gradcheck(function(t) return F.fold(t, { shape[3], shape[4] }, k, o) end,
        { wick.randn({ 1, c:size(2), c:size(3) }, F64) }))
    end
    local e = F.fold(wick.zeros(0, 12, 9), { 4, 4 }, 2)
    assert.are.same({ 0, 3, 4, 4 }, e:size())
    local f32 = F.fold(wick.ones(1, 4, 9), 4, 2)
    assert.are.equal("float32", f32.dtype)
  end)

  it("nn.Fold prints and runs as PyTorch's", function()
    local m = nn.Fold({ 4, 5 }, 2)
    assert.are.equal("Fold(output_size=(4, 5), kernel_size=2, dilation=1, padding=0, stride=1)", tostring(m))
    assert.are.same({ 2, 3, 4, 5 }, m(wick.randn(2, 12, 12)):size())
    local s = nn.Fold(4, 2, { stride = 2, padding = 1 })
    assert.are.equal("Fold(output_size=4, kernel_size=2, dilation=1, padding=1, stride=2)", tostring(s))
    assert.are.same({ 1, 4, 4 }, s(wick.randn(4, 9)):size())
    assert.are.same({ 1, 3, 3 }, nn.Fold({ output_size = 3, kernel_size = 2 })(wick.randn(4, 4)):size())
  end)

  it("rejects bad sizes with PyTorch's messages", function()
    assert_error_has(function() F.fold(wick.zeros(1, 10, 9), { 4, 4 }, 2) end,
      "Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got input.size(1)=10 and kernel_size=(2, 2).")
    assert_error_has(function() F.fold(wick.zeros(1, 12, 8), { 4, 4 }, 2) end,
      "Given output_size=(4, 4), kernel_size=(2, 2), dilation=(1, 1), padding=(0, 0), stride=(1, 1), expected size of input's dimension 2 to match the calculated number of sliding blocks 3 * 3 = 9, but got input.size(2)=8.")
    assert_error_has(function() F.fold(wick.zeros(1, 9, 1), { 1, 1 }, 3) end,
      "calculated shape of the array of sliding blocks as (-1, -1), which is too small (non-positive)")
    assert_error_has(function() F.fold(wick.zeros(2, 2, 12, 9), { 4, 4 }, 2) end,
      "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero dimensions for input, but got: [2, 2, 12, 9]")
    assert_error_has(function() F.fold(wick.zeros(1, 12, 9), { 4, 4 }, 0) end,
      "kernel size should be greater than zero, but got kernel_height: 0 kernel_width: 0")
    assert_error_has(function() F.fold(wick.zeros(1, 12, 9), { 4, 4 }, 2, { stride = 0 }) end,
      "stride should be greater than zero, but got stride_height: 0 stride_width: 0")
    assert_error_has(function() F.fold(wick.zeros(1, 12, 9), { 4, 4 }, 2, { dilation = 0 }) end,
      "dilation should be greater than zero, but got dilation_height: 0 dilation_width: 0")
    assert_error_has(function() F.fold(wick.zeros(1, 12, 9), { 4, 4 }, 2, { padding = -1 }) end,
      "padding should be non-negative, but got pad_height: -1 pad_width: -1")
    assert_error_has(function() F.fold(wick.zeros(1, 12, 9), { 4, 4 }) end, "missing required argument 'kernel_size'")
  end)
end)
