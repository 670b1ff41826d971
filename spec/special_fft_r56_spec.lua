-- torch.special / torch.fft conformance fixes: the reference values are PyTorch 2.15's (CPU),
-- float32 ones the float64 values rounded (PyTorch's own float32 kernels are a few ulp off).
local wick = require("wick")
local support = require("spec.support")
local special, fft = wick.special, wick.fft

local function t64(v) return wick.tensor(v, { dtype = "float64" }) end
-- every element of tensor t within rel (relative) of want's (inf, -inf and NaN exactly)
local function close(t, want, rel)
  local flat = t:flatten()
  assert.are.equal(#want, flat:numel())
  for i = 1, #want do
    local got, w = flat[i]:item(), want[i]
    if w ~= w then
      assert(got ~= got, ("element %d: expected NaN, got %.17g"):format(i, got))
    elseif w == math.huge or w == -math.huge then
      assert(got == w, ("element %d: expected %s, got %.17g"):format(i, tostring(w), got))
    else
      local err = math.abs(got - w) / math.max(math.abs(w), 1e-300)
      assert(err <= rel, ("element %d: expected %.17g, got %.17g (relative error %.3g)"):format(i, w, got, err))
    end
  end
end
local function grad(f, x)
  local leaf = x:clone():requires_grad_()
  return wick.autograd.grad(f(leaf):sum(), { leaf })[1]
end

describe("special (r56 conformance)", function()
  it("ndtri is accurate through both tails (float64 and float32)", function()
    close(special.ndtri(t64({ 1e-10, 1e-16, 1e-20, 1e-300, 0.3, 0.9, 1 - 1e-12, 5e-324 })),
      { -6.361340902404056, -8.222082216130435, -9.262340089798409, -37.0470962993612, -0.5244005127080409,
        1.2815515655446004, 7.0344869100478356, -38.467405617144344 }, 4e-15)
    local r = special.ndtri(wick.tensor({ 1e-5, 1e-8 }, { dtype = "float32" }))
    assert.are.equal("float32", r.dtype)
    close(r, { -4.264890670776367, -5.612001419067383 }, 2e-7)
    close(special.ndtri(t64({ 0, 1, 0.5, -0.1, 1.1, 0 / 0 })), { -math.huge, math.huge, 0, 0 / 0, 0 / 0, 0 / 0 }, 0)
    close(grad(special.ndtri, t64({ 1e-10, 0.9 })), { 1535723698.1963818, 5.698059856117003 }, 1e-14)
    support.assert_error_has(function() return special.ndtri(nil) end, "special.ndtri")
  end)

  it("erfinv is accurate next to +-1 and near 0", function()
    close(special.erfinv(t64({ -0.9, 1e-300, 0.3, 0.85, 1 - 1e-16, -(1 - 1e-16), 0.999999 })),
      { -1.1630871536766743, 8.86226925452758e-301, 0.2724627147267543, 1.0179024648320276, 5.8635847487551676,
        -5.8635847487551676, 3.458910737275499 }, 4e-15)
    close(special.erfinv(t64({ 1, -1, 1.1, 0 / 0 })), { math.huge, -math.huge, 0 / 0, 0 / 0 }, 0)
    assert.is_true(special.erfinv(t64({ -0.0 })):signbit():item())
    close(grad(special.erfinv, t64({ -0.9, 0.3 })), { 3.4280428114518418, 0.9545203588405493 }, 1e-14)
  end)

  it("log_ndtr of float32 does not underflow early", function()
    local r = special.log_ndtr(wick.tensor({ -14, -20, -30 }, { dtype = "float32" }))
    assert.are.equal("float32", r.dtype)
    close(r, { -101.56303405761719, -203.9171600341797, -454.3212585449219 }, 1e-7)
    close(special.log_ndtr(t64({ -14, -20, -38, 0.5 })),
      { -101.56303440744996, -203.9171553710973, -726.5572160188201, -0.36894641528865635 }, 2e-15)
    local g = grad(special.log_ndtr, wick.tensor({ -20 }, { dtype = "float32" }))
    close(g, { 20.049753068528464 }, 1e-6)
  end)

  it("xlog1py's gradients are PyTorch's, and a number may come first", function()
    close(grad(function(x) return special.xlog1py(x, t64({ 1, 2 })) end, wick.zeros(2, { dtype = "float64" })),
      { 0.6931471805599453, 1.0986122886681098 }, 1e-15)
    local x = t64({ 0, 0, 0, 1, 0, 2, -1 }):requires_grad_()
    local y = t64({ -1, -2, 0 / 0, -1, 1, 3, math.huge }):requires_grad_()
    local r = special.xlog1py(x, y)
    close(r, { 0, 0, 0 / 0, -math.huge, 0, 2.772588722239781, -math.huge }, 1e-15)
    local g = wick.autograd.grad(r:sum(), { x, y })
    close(g[1], { 0, 0, 0 / 0, -math.huge, 0.6931471805599453, 1.3862943611198906, math.huge }, 1e-15)
    close(g[2], { 0 / 0, 0, 0 / 0, math.huge, 0, 0.5, 0 }, 1e-15)
    close(special.xlog1py(2, wick.tensor({ 1, 2 })), { 1.3862943611198906, 2.1972245773362196 }, 1e-7)
    close(special.xlogy(2, wick.tensor({ 1, 2 })), { 0, 1.3862943611198906 }, 1e-7)
    assert.are.equal("float64", special.xlogy(2.5, t64({ 1, 2 })).dtype)
    close(special.xlogy(2.5, t64({ 1, 2 })), { 0, 1.7328679513998633 }, 1e-15)
    close(grad(function(t) return special.xlogy(2, t) end, t64({ 1, 2 })), { 2, 1 }, 1e-15)
    close(grad(function(t) return special.xlog1py(2, t) end, t64({ 1, 2 })), { 1, 2 / 3 }, 1e-15)
    support.assert_error_has(function() return special.xlog1py(2, 3) end, "invalid combination of arguments")
    support.assert_error_has(function() return special.xlogy(2, 3) end, "invalid combination of arguments")
  end)

  it("entr keeps float32 under a float64 default, with PyTorch's gradient at and below 0", function()
    wick.set_default_dtype("float64")
    finally(function() wick.set_default_dtype("float32") end)
    assert.are.equal("float32", special.entr(wick.tensor({ 0.5 }, { dtype = "float32" })).dtype)
    close(grad(special.entr, t64({ -1, 0, 0.5, 2 })), { 0 / 0, math.huge, -0.3068528194400547, -1.6931471805599454 }, 1e-15)
    close(special.entr(t64({ 0 / 0, math.huge, -math.huge, 0, -1 })), { 0 / 0, -math.huge, -math.huge, 0, -math.huge }, 0)
  end)

  it("spherical_bessel_j0 is 0 at +-inf; zeta(inf, 2) stays 0", function()
    close(special.spherical_bessel_j0(t64({ math.huge, -math.huge, 0, -3, 1e300, 0 / 0 })),
      { 0, 0, 1, 0.04704000268662240, -8.178819121159085e-301, 0 / 0 }, 1e-15)
    -- (the sum of 2^-inf, 3^-inf, ...: 0; PyTorch 2.15 gives NaN)
    close(special.zeta(t64({ math.huge }), t64({ 2 })), { 0 }, 0)
  end)

  it("multigammaln is defined below (p - 1) / 2, as PyTorch 2.15's", function()
    close(special.multigammaln(t64({ 0.1, 2.0, -0.3, 1.0 }), 3),
      { 7.642405237843729, 1.5963125911388552, 6.131618039766809, math.huge }, 4e-15)
    close(wick.mvlgamma(wick.tensor({ 0.1, 2.0 }), 3), { 7.642405237843729, 1.5963125911388552 }, 1e-6)
    close(grad(function(x) return special.multigammaln(x, 3) end, t64({ 0.1, -0.3 })),
      { -18.777017983604228, 0.9568104319093789 }, 1e-13)
    support.assert_error_has(function() return special.multigammaln(t64({ 3 }), 0) end,
      "p has to be greater than or equal to 1")
  end)
end)

describe("fft (r56 conformance)", function()
  local z = wick.complex(t64({ { 1, -0.5, 3 }, { 0.25, 2, -1 } }), t64({ { 2, 1, -1 }, { -2, 0.5, 0 } }))
  local r = t64({ { 1, 2, -1, 0.5 }, { 3, -2, 0.25, 4 } })

  it("hfft2 and hfftn", function()
    local y = fft.hfft2(z)
    assert.are.equal("float64", y.dtype)
    assert.are.same({ 2, 4 }, y:size())
    close(y, { 6.25, 2.25, 0.25, -3.75, -0.25, -2.25, 9.75, -4.25 }, 1e-15)
    close(fft.hfftn(z, { s = { 3, 5 }, norm = "ortho" }),
      { 2.1301408404140796, 0.15971719850830446, 0.9616580942672638, -0.9311818494196119, -0.7065912228502784,
        1.0351127897674315, -2.376739475634411, 0.5507007230389934, 1.01527031059744, -1.3307921826254132,
        1.4823263852673894, -0.44493838117455986, 3.709044345504206, 0.3693878678820378, -1.7501320973354542 }, 1e-14)
    local leaf = z:clone():requires_grad_()
    local w = t64({ { 1, 2, 3, 4 }, { -1, 0.5, 2, -3 } })
    local g = wick.autograd.grad((fft.hfft2(leaf) * w):sum(), { leaf })[1]
    close(wick.view_as_real(g), { 8.5, 0, -10, 3, 1.5, 0, 11.5, 0, 2, -11, -5.5, 0 }, 1e-15)
  end)

  it("ihfft2 and ihfftn", function()
    local y = fft.ihfft2(r)
    assert.are.equal("complex128", y.dtype)
    close(wick.view_as_real(y), { 0.96875, 0, 0.59375, -0.5625, -0.15625, 0, -0.34375, 0, -0.09375, 0.9375, -0.46875, 0 }, 1e-15)
    local y2 = fft.ihfftn(r, { 3, 3 }, nil, "forward")
    assert.are.same({ 3, 2 }, y2:size())
    close(wick.view_as_real(y2), { 3.25, 0, 4.375, 0.6495190528383292, 1.375, 1.0825317547305482, 0.25, 6.928203230275509,
      1.375, -1.0825317547305482, -3.125, 0.21650635094610982 }, 1e-14)
    local leaf = r:clone():requires_grad_()
    local w = t64({ { { 1, 0.5 }, { 2, -1 }, { 0, 3 } }, { { -2, 1 }, { 0.5, 0.5 }, { 1, 1 } } })
    local g = wick.autograd.grad((wick.view_as_real(fft.ihfftn(leaf, { dim = { 1, 2 }, norm = "ortho" })) * w):sum(), { leaf })[1]
    close(g, { 0.8838834764831843, -0.8838834764831843, -0.8838834764831843, -0.5303300858899106, 1.237436867076458,
      0.8838834764831843, 0.17677669529663687, 1.9445436482630054 }, 1e-14)
    support.assert_error_has(function() return fft.ihfft2(wick.ones(2, 2, { dtype = "complex64" })) end, "real input")
    support.assert_error_has(function() return fft.hfftn(wick.ones(3, 3), { s = { 1, 0 } }) end, "fft.hfftn")
    support.assert_error_has(function() return fft.hfft2(wick.ones(3)) end, "fft.hfft2")
    support.assert_error_has(function() return fft.ihfftn(wick.ones(3, 3), { norm = "bad" }) end, "norm")
  end)

  it("integer inputs take the default dtype's complex type", function()
    wick.set_default_dtype("float64")
    finally(function() wick.set_default_dtype("float32") end)
    local i = wick.tensor({ { 1, 2, 3 }, { 4, 5, 6 } }, { dtype = "int64" })
    for name, want in pairs({ fft = "complex128", ifft = "complex128", rfft = "complex128", irfft = "float64",
      hfft = "float64", ihfft = "complex128", fft2 = "complex128", irfft2 = "float64", hfft2 = "float64",
      ihfftn = "complex128" }) do
      assert.are.equal(want, fft[name](i).dtype, name)
    end
    wick.set_default_dtype("float32")
    assert.are.equal("complex64", fft.fft(i).dtype)
    assert.are.equal("complex64", fft.fft(wick.ones(2, { dtype = "float32" })).dtype)
  end)
end)
