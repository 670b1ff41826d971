-- wick.distributions.transforms, TransformedDistribution, MixtureSameFamily
-- and the relaxed distributions against PyTorch's torch.distributions: every
-- reference number below was printed by PyTorch (torch 2.15, float64) from the
-- same inputs.
local wick = require("wick")
local support = require("spec.support")
local D = wick.distributions
local T = D.transforms
local F64 = { dtype = "float64" }
local function V(v) return wick.tensor(v, F64) end
local function close(want, t, tol) support.assert_close(t:totable(), want, tol or 1e-9) end
local unpack = table.unpack or unpack -- luacheck: ignore
local function dims(size) return { unpack(size) } end

describe("TransformedDistribution", function()
  it("gives a LogNormal through AffineTransform and ExpTransform: log_prob, cdf, icdf as PyTorch's", function()
    local d = D.TransformedDistribution(D.Normal(V({ 0, 0, 0 }), V({ 1, 1, 1 })),
      { T.AffineTransform(1.0, 2.0), T.ExpTransform() })
    assert.are.same({ 3 }, dims(d.batch_shape))
    assert.are.same({}, dims(d.event_shape))
    local x = V({ 0.5, 1.5, 3.0 })
    close({ -1.277281955084434, -2.061734789082387, -2.711913550367273 }, d:log_prob(x))
    close({ 0.19861641975736127, 0.3831311666163049, 0.5196623384975168 }, d:cdf(x))
    close({ 0.20948500212405705, 2.718281828459045, 35.27248263126183 }, d:icdf(V({ 0.1, 0.5, 0.9 })), 1e-7)
    -- the same as wick's own LogNormal
    close(D.LogNormal(V({ 1, 1, 1 }), V({ 2, 2, 2 })):log_prob(x):totable(), d:log_prob(x))
    assert.are.same({ 4, 3 }, dims(d:rsample({ 4 }):size()))
    -- a decreasing transform: the cdf is 1 - F
    local neg = D.TransformedDistribution(D.Normal(V({ 0, 0 }), V({ 1, 1 })), { T.AffineTransform(0, -2) })
    close({ 0.3085375387259869, 0.5987063256829237 }, neg:cdf(V({ -1, 0.5 })), 1e-7)
  end)

  it("gives SAC's tanh-squashed Normal: log_prob and its gradients, the cached x for rsample's value", function()
    local td = D.TransformedDistribution(D.Normal(V({ 0, 0 }), V({ 1, 1 })), T.TanhTransform({ cache_size = 1 }))
    close({ -0.5028463536224441, -0.639137670406231 }, td:log_prob(V({ 0.7985, -0.6829 })))
    local mu = V({ 0.2, -0.3 }):requires_grad_()
    local ls = V({ 0.1, -0.2 }):requires_grad_()
    local base = D.Normal(mu, ls:exp())
    local x = mu + ls:exp() * V({ 0.5, -1.2 })
    local tanh = T.TanhTransform()
    local lp = (base:log_prob(x) - tanh:log_abs_det_jacobian(x, tanh(x))):sum()
    lp:backward()
    assert.is_true(math.abs(lp:item() - -0.7361818299211044) < 1e-12)
    close({ 1.2733777367008912, -1.7142868948759742 }, mu.grad)
    close({ -0.296349978836593, 0.6842472805202255 }, ls.grad)
    -- with the cache, log_prob of an rsample at tanh's saturation stays finite (atanh(1) is inf)
    local sat = D.TransformedDistribution(D.Normal(V({ 30 }), V({ 0.1 })), T.TanhTransform({ cache_size = 1 }))
    local a = sat:rsample()
    assert.are.equal(1, a:item())
    assert.is_true(sat:log_prob(a):isfinite():all())
  end)

  it("makes a logistic distribution from the inverse of SigmoidTransform", function()
    local lo = D.TransformedDistribution(D.Uniform(V(0), V(1)), { T.SigmoidTransform().inv, T.AffineTransform(0.5, 2.0) })
    assert.is_true(math.abs(lo:log_prob(V(1.0)):item() - -2.0950260203176323) < 1e-12)
  end)

  it("takes event dims from ReshapeTransform and IndependentTransform, and batch dims from a transform's parameters", function()
    local d4 = D.TransformedDistribution(D.Normal(wick.zeros(6, F64), wick.ones(6, F64)),
      { T.ReshapeTransform({ 6 }, { 2, 3 }), T.IndependentTransform(T.ExpTransform(), 2) })
    assert.are.same({}, dims(d4.batch_shape))
    assert.are.same({ 2, 3 }, dims(d4.event_shape))
    assert.is_true(math.abs(d4:log_prob(wick.arange(1, 7, F64):reshape(2, 3) / 3):item() - -6.598962539894487) < 1e-12)
    local d3 = D.TransformedDistribution(D.Normal(V(0), V(1)), { T.AffineTransform(V({ 1, 2, 3 }), 2) })
    assert.are.same({ 3 }, dims(d3.batch_shape))
    assert.are.same({ 5, 3 }, dims(d3:sample({ 5 }):size()))
    close({ -1.737085713764618, -1.737085713764618, -1.737085713764618 }, d3:log_prob(V({ 0, 1, 2 })))
  end)

  it("refuses what is not a distribution or a transform, at the caller's line", function()
    support.assert_error_has(function() D.TransformedDistribution(3, {}) end, "TransformedDistribution")
    support.assert_error_has(function() D.TransformedDistribution(D.Normal(0, 1), { 3 }) end,
      "expected a transform for argument 'transforms[1]'")
  end)
end)

describe("transforms", function()
  it("give PyTorch's values, inverses and log-determinants", function()
    local sb = T.StickBreakingTransform()
    local z = V({ 0.3, -1, 2 })
    local y = sb(z)
    close({ 0.3103224420123704, 0.1071499630468746, 0.5130886034653004, 0.06943899147545457 }, y)
    close(z:totable(), sb.inv(y), 1e-12)
    assert.is_true(math.abs(sb:log_abs_det_jacobian(z, y):item() - -6.738282753317737) < 1e-12)
    local sp = T.SoftplusTransform()
    z = V({ -2, 0, 3 })
    close({ 0.1269280110429725, 0.6931471805599453, 3.048587351573742 }, sp(z))
    close(z:totable(), sp.inv(sp(z)), 1e-12)
    close({ -2.1269280110429727, -0.6931471805599453, -0.04858735157374206 }, sp:log_abs_det_jacobian(z, sp(z)))
    local pw = T.PowerTransform(3)
    z = V({ 0.5, 2 })
    close({ -0.2876820724517809, 2.4849066497880004 }, pw:log_abs_det_jacobian(z, pw(z)))
    local af = T.AffineTransform(wick.zeros(2, F64), V({ 2, -3 }), { event_dim = 1 })
    close({ math.log(6), math.log(6), math.log(6), math.log(6) }, af:log_abs_det_jacobian(wick.ones(4, 2, F64), nil))
    close({ 1, -1 }, af.sign)
    -- the inverse of the inverse is the transform; a composition inverts in reverse order
    local e = T.ExpTransform()
    assert.are.equal(e, e.inv.inv)
    local c = T.ComposeTransform({ T.ExpTransform(), T.AffineTransform(1, 2) })
    close({ 0.5, 2 }, c.inv(c(V({ 0.5, 2 }))), 1e-12)
    assert.are.equal(D.ExpTransform, T.ExpTransform)
  end)

  it("let a script write its own with Transform:extend", function()
    local Cube = T.Transform:extend("Cube")
    Cube.bijective = true
    function Cube:_call(x) return x ^ 3 end
    function Cube:_inverse(y) return y:sign() * y:abs() ^ (1 / 3) end
    function Cube:log_abs_det_jacobian(x) return (3 * x ^ 2):log() end
    local d = D.TransformedDistribution(D.Normal(V({ 0 }), V({ 1 })), { Cube() })
    local y = V({ 8 })
    local want = D.Normal(V({ 0 }), V({ 1 })):log_prob(V({ 2 })) - math.log(12)
    close(want:totable(), d:log_prob(y), 1e-12)
  end)
end)

describe("MixtureSameFamily", function()
  local mix = D.Categorical(V({ 0.1, 0.2, 0.3, 0.4 }))
  it("gives PyTorch's log_prob, mean, variance and cdf of a Gaussian mixture", function()
    local g = D.MixtureSameFamily(mix, D.Normal(V({ -1, 0, 1, 2 }), V({ 0.5, 1, 1.5, 0.3 })))
    close({ -1.8764657616068219, -1.8845445113795707 }, g:log_prob(V({ 0.1, 0.2 })))
    assert.is_true(math.abs(g.mean:item() - 1.0) < 1e-12 and math.abs(g.variance:item() - 1.936) < 1e-12)
    assert.is_true(math.abs(g:cdf(V(0.3)):item() - 0.31922692581784384) < 1e-12)
    assert.are.same({ 7 }, dims(g:sample({ 7 }):size()))
  end)
  it("mixes multivariate components, and draws each sample from one component", function()
    local comp = D.Independent(D.Normal(wick.arange(8, F64):reshape(4, 2) / 4, wick.arange(1, 9, F64):reshape(4, 2) / 5), 1)
    local g = D.MixtureSameFamily(mix, comp)
    close({ -1.406479360980702, -4.061042617291742 }, g:log_prob(V({ { 0.1, 0.2 }, { 1, -1 } })))
    close({ 1.0, 1.25 }, g.mean)
    close({ 1.41, 1.85 }, g.variance)
    assert.are.same({ 2 }, dims(g.event_shape))
    -- components far apart: each draw lies near one of the means
    local far = D.MixtureSameFamily(mix, D.Normal(V({ -100, 0, 100, 200 }), V({ 1e-3, 1e-3, 1e-3, 1e-3 })))
    for _, v in ipairs(far:sample({ 50 }):totable()) do
      local near = math.abs(v + 100) < 1 or math.abs(v) < 1 or math.abs(v - 100) < 1 or math.abs(v - 200) < 1
      assert.is_true(near, tostring(v))
    end
  end)
  it("refuses a mixture that is not a Categorical or a count that does not match", function()
    support.assert_error_has(function() D.MixtureSameFamily(D.Normal(0, 1), D.Normal(V({ 0, 1 }), V({ 1, 1 }))) end,
      "needs to be an instance of torch.distributions.Categorical")
    support.assert_error_has(function() D.MixtureSameFamily(mix, D.Normal(V({ 0, 1 }), V({ 1, 1 }))) end,
      "does not equal `component_distribution.batch_shape[-1]`")
  end)
end)

describe("the relaxed distributions", function()
  it("give PyTorch's log_prob; rsample lies in (0, 1) and on the simplex", function()
    local rb = D.RelaxedBernoulli(V(0.5), V({ 0.3, 0.7 }))
    close({ -0.25279481345134047, 0.3127557100038971 }, rb:log_prob(V({ 0.2, 0.9 })), 1e-12)
    local r = rb:rsample({ 100 })
    assert.is_true(r:gt(0):all() and r:lt(1):all())
    local rc = D.RelaxedOneHotCategorical(V(0.5), V({ 0.2, 0.3, 0.5 }))
    close({ 0.27637489060978204, -0.8994493713858676 }, rc:log_prob(V({ { 0.1, 0.2, 0.7 }, { 0.5, 0.25, 0.25 } })), 1e-12)
    local s = rc:rsample({ 10 })
    assert.are.same({ 10, 3 }, dims(s:size()))
    close(wick.ones(10, F64):totable(), s:sum(-1), 1e-12)
    assert.is_not_nil(D.relaxed_categorical.RelaxedOneHotCategorical)
    assert.is_not_nil(D.relaxed_bernoulli.RelaxedBernoulli)
  end)
end)

describe("distributions built with every argument by name (PyTorch's keywords)", function()
  it("give the same distribution as the positional form", function()
    local m, L = V({ 0.5, -1 }), V({ { 2, 0 }, { 0.3, 1 } })
    local x = V({ 0.1, 0.2 })
    close(D.MultivariateNormal(m, { scale_tril = L }):log_prob(x):totable(),
      D.MultivariateNormal{ loc = m, scale_tril = L }:log_prob(x))
    close(D.Normal(m, V({ 1, 2 })):log_prob(x):totable(), D.Normal{ loc = m, scale = V({ 1, 2 }) }:log_prob(x))
    assert.are.same({ 2 }, dims(D.Independent{ base_distribution = D.Normal(m, V({ 1, 2 })),
      reinterpreted_batch_ndims = 1 }.event_shape))
    support.assert_error_has(function() D.Normal{ loc = m, scale = V({ 1, 2 }), foo = 1 } end,
      "unknown option 'foo'")
  end)
end)
