-- wick.distributions' Gamma, Beta, Dirichlet, Exponential, Laplace, StudentT
-- and LogNormal against PyTorch 2.x's torch.distributions: every reference
-- number below was printed by PyTorch (torch 2.15, float64) from the same
-- inputs: mean, mode, variance, log_prob, entropy, kl_divergence, the
-- gradients of log_prob + entropy to the parameters. rsample's gradient to a
-- concentration (PyTorch's implicit reparameterisation) is not implemented:
-- a clear error in backward, checked here; to a rate it is -x / rate.
-- Samples are checked by their moments (20000 draws, a fixed seed).
local wick = require("wick")
local support = require("spec.support")
local assert_error_has = support.assert_error_has
local D = wick.distributions
local F64 = { dtype = "float64" }
local function T(v) return wick.tensor(v, F64) end
local function close(want, t, tol) support.assert_close(t:totable(), want, tol or 1e-9) end
local N = 20000
-- the sample mean (and variance) of s along dim 1 within k standard errors of mean (and var, with
-- the fourth central moment m4 giving the variance's standard error)
local function moments_near(s, mean, var, m4, k)
  k = k or 4
  local sm, sv = s:mean(1):totable(), s:var(1):totable()
  if type(sm) == "number" then sm, sv, mean, var, m4 = { sm }, { sv }, { mean }, { var }, m4 and { m4 } end
  for i = 1, #mean do
    local se = math.sqrt(var[i] / N)
    assert.is_true(math.abs(sm[i] - mean[i]) < k * se, ("mean %d: %g, want %g +- %g"):format(i, sm[i], mean[i], k * se))
    if m4 then
      local sev = math.sqrt((m4[i] - var[i] ^ 2) / N)
      assert.is_true(math.abs(sv[i] - var[i]) < k * sev,
        ("variance %d: %g, want %g +- %g"):format(i, sv[i], var[i], k * sev))
    end
  end
end

describe("wick.distributions: Gamma, Beta, Dirichlet", function()
  it("Gamma: moments, log_prob, entropy, their gradients and KL as PyTorch", function()
    local a, r = T({ 0.5, 2, 10 }):requires_grad_(), T({ 1, 3, 0.5 }):requires_grad_()
    local g = D.Gamma(a, r)
    assert.is_true(g.batch_shape == wick.Size({ 3 }))
    assert.is_true(g.event_shape == wick.Size({}))
    assert.is_true(g.has_rsample)
    close({ 0.5, 0.666666666667, 20.0 }, g.mean)
    close({ 0.0, 0.333333333333, 18.0 }, g.mode)
    close({ 0.5, 0.222222222222, 40.0 }, g.variance)
    close({ 0.707106781187, 0.471404520791, 6.324555320337 }, g.stddev)
    local lp, H = g:log_prob(T({ 0.3, 1, 20 })), g:entropy()
    close({ -0.270378540762, -0.802775422664, -2.771708823695 }, lp)
    close({ 0.090609929914, 0.478603376233, 3.229201359041 }, H)
    ;(lp:sum() + H:sum()):backward()
    close({ 4.226938322732, 1.030893886481, 0.104335482788 }, a.grad)
    close({ -0.8, -0.666666666667, -2.0 }, r.grad)
    close({ 0.216242889526, 0.246182150894, 1.393021728804 },
      D.kl_divergence(g, D.Gamma(T({ 1, 0.7, 4 }), T({ 2, 1, 0.4 }))))
    -- numbers: a 0-dim batch in the default dtype
    local g1 = D.Gamma(2, 1)
    assert.are.equal(0, g1:sample():dim())
    assert.are.equal("float32", g1:sample().dtype)
    assert.are.same({ 5, 3 }, g:sample({ 5 }):size())
  end)

  it("Dirichlet: moments (mode a vertex when every concentration < 1), log_prob, entropy, gradients, KL", function()
    local c = T({ { 0.5, 2, 3 }, { 0.2, 0.3, 0.9 } }):requires_grad_()
    local d = D.Dirichlet(c)
    assert.is_true(d.batch_shape == wick.Size({ 2 }))
    assert.is_true(d.event_shape == wick.Size({ 3 }))
    close({ { 0.090909090909, 0.363636363636, 0.545454545455 }, { 0.142857142857, 0.214285714286, 0.642857142857 } },
      d.mean)
    close({ { 0.0, 0.333333333333, 0.666666666667 }, { 1.0, 0.0, 0.0 } }, d.mode)
    close({ { 0.012714558169, 0.035600762873, 0.038143674507 }, { 0.051020408163, 0.070153061224, 0.095663265306 } },
      d.variance)
    local lp, H = d:log_prob(T({ 0.2, 0.3, 0.5 })), d:entropy()
    close({ 0.906753634905, -0.606204960125 }, lp)
    close({ -1.914676990986, -3.854425325316 }, H)
    ;(lp:sum() + H:sum()):backward()
    close({ { 4.930922330703, -0.162242090433, -0.296350533443 }, { 22.991548657476, 9.16835150913, -1.447921324778 } },
      c.grad)
    close({ 2.130222738305, 6.320185140828 }, D.kl_divergence(d, D.Dirichlet(T({ 1, 2, 0.5 }))))
    local s = d:sample({ 4 })
    assert.are.same({ 4, 2, 3 }, s:size())
    close({ { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 } }, s:sum(-1), 1e-12)
    assert_error_has(function() D.Dirichlet(T(1)) end, "`concentration` parameter must be at least one-dimensional.")
    assert_error_has(function() D.Dirichlet(T({ 1, -1 })) end,
      "Dirichlet: expected parameter concentration (Tensor of shape [2]) to satisfy the constraint "
      .. "IndependentConstraint(GreaterThan(lower_bound=0.0), 1)")
    assert_error_has(function() d:log_prob(T({ 0.5, 0.6, 0.1 })) end, "to be within the support (Simplex())")
    assert_error_has(function() d:log_prob(T({ 0.5, 0.5 })) end, "The right-most size of value must match")
    assert_error_has(function() D.kl_divergence(d, D.Dirichlet(T({ 1, 1 }))) end, "different event shapes")
  end)

  it("Beta: moments, log_prob, entropy, gradients, KL", function()
    local c1, c0 = T({ 2, 0.5, 5 }):requires_grad_(), T({ 3, 0.5, 1.5 }):requires_grad_()
    local b = D.Beta(c1, c0)
    assert.is_true(b.batch_shape == wick.Size({ 3 }))
    assert.is_true(b.event_shape == wick.Size({}))
    close({ 0.4, 0.5, 0.769230769231 }, b.mean)
    close({ 0.333333333333, 1.0, 0.888888888889 }, b.mode)
    close({ 0.04, 0.125, 0.023668639053 }, b.variance)
    local lp, H = b:log_prob(T({ 0.3, 0.1, 0.8 })), b:entropy()
    close({ 0.567583957585, 0.059242918477, 0.907997305671 }, lp)
    close({ -0.234906649788, -0.24156447527, -0.579905141061 }, H)
    ;(lp:sum() + H:sum()):backward()
    close({ -0.101604670828, -0.093823698476, -0.073361301455 }, c1.grad)
    close({ 0.100759122784, 2.103400878861, 0.427862754396 }, c0.grad)
    close({ 0.234906649788, 1.038017220931, 0.200975209833 },
      D.kl_divergence(b, D.Beta(T({ 1, 2, 4 }), T({ 1, 0.7, 2 }))))
    local s = b:sample({ 6 })
    assert.are.same({ 6, 3 }, s:size())
    assert.is_true(s:gt(0):all() and s:lt(1):all())
    assert.are.equal(0, D.Beta(2, 3):sample():dim())
    assert_error_has(function() b:log_prob(T({ 1.5, 0.5, 0.5 })) end,
      "to be within the support (Interval(lower_bound=0.0, upper_bound=1.0)) of the distribution Beta")
    assert_error_has(function() D.Beta(1, 0) end,
      "Beta: expected parameter concentration0 (Tensor of shape []) to satisfy the constraint "
      .. "GreaterThan(lower_bound=0.0)")
  end)

  it("rsample: d x / d rate is -x / rate; a gradient to a concentration is a clear error, not a wrong value", function()
    local a, r = T({ 0.4, 3 }), T({ 2, 0.5 }):requires_grad_()
    local g = D.Gamma(a, r)
    wick.manual_seed(3)
    local x = g:rsample({ 5 })
    assert.is_true(x.requires_grad)
    x:sum():backward()
    close((-x:detach() / r:detach()):sum(1):totable(), r.grad, 1e-10)
    assert.is_false(g:sample().requires_grad)
    local msg = "the gradient of a draw with respect to the concentration"
    local a2 = T({ 0.3, 2 }):requires_grad_()
    assert_error_has(function() D.Gamma(a2, 1):rsample({ 3 }):sum():backward() end, msg)
    local c = T({ 0.7, 2, 4 }):requires_grad_()
    assert_error_has(function() D.Dirichlet(c):rsample({ 3 }):sum():backward() end, msg)
    assert_error_has(function() D.Beta(T(2):requires_grad_(), T(3)):rsample({ 3 }):sum():backward() end, msg)
    -- StudentT: loc and scale get their gradients; df (a concentration inside) only when it requires none
    local loc = T({ 1 }):requires_grad_()
    D.StudentT(T({ 3 }), loc, T({ 2 })):rsample({ 4 }):sum():backward()
    close({ 4 }, loc.grad, 0)
  end)

  it("samples have the distributions' moments (20000 draws, within 4 standard errors)", function()
    wick.manual_seed(7)
    local a, r = { 0.3, 2, 15 }, { 1, 2, 0.5 }
    local mean, var, m4 = {}, {}, {}
    for i = 1, 3 do
      mean[i], var[i] = a[i] / r[i], a[i] / r[i] ^ 2
      m4[i] = var[i] ^ 2 * (3 + 6 / a[i]) -- Gamma's excess kurtosis 6 / a
    end
    local s = D.Gamma(T(a), T(r)):sample({ N })
    assert.is_true(s:gt(0):all())
    moments_near(s, mean, var, m4)
    local sf = D.Gamma(wick.tensor({ 0.5, 4 }), 1):sample({ N }) -- float32
    assert.are.equal("float32", sf.dtype)
    moments_near(sf:double(), { 0.5, 4 }, { 0.5, 4 })
    local b = D.Beta(T({ 2, 0.5 }), T({ 5, 0.5 }))
    moments_near(b:sample({ N }), b.mean:totable(), b.variance:totable())
    local d = D.Dirichlet(T({ 0.5, 1, 3 }))
    moments_near(d:sample({ N }), d.mean:totable(), d.variance:totable())
    local e = D.Exponential(T({ 0.5, 4 }))
    -- (the fourth central moment: Exponential's 9 / rate^4, Laplace's 24 scale^4)
    moments_near(e:sample({ N }), { 2, 0.25 }, { 4, 0.0625 }, { 9 / 0.5 ^ 4, 9 / 4 ^ 4 })
    local l = D.Laplace(T({ 1, -2 }), T({ 0.5, 2 }))
    moments_near(l:sample({ N }), { 1, -2 }, { 0.5, 8 }, { 24 * 0.5 ^ 4, 24 * 2 ^ 4 })
    local t = D.StudentT(T({ 5, 10 }), T({ 1, 0 }), T({ 2, 1 }))
    moments_near(t:sample({ N }), { 1, 0 }, { 4 * 5 / 3, 10 / 8 })
    local ln = D.LogNormal(T({ 0, 1 }), T({ 0.5, 0.25 }))
    moments_near(ln:sample({ N }), ln.mean:totable(), ln.variance:totable())
  end)
end)

describe("wick.distributions: Exponential, Laplace, StudentT, LogNormal", function()
  it("Exponential", function()
    local rate = T({ 0.5, 2 }):requires_grad_()
    local e = D.Exponential(rate)
    local v = T({ 1, 0.25 })
    local lp, H = e:log_prob(v), e:entropy()
    close({ -1.19314718056, 0.19314718056 }, lp)
    close({ 1.69314718056, 0.30685281944 }, H)
    close({ 0.393469340287, 0.393469340287 }, e:cdf(v))
    close({ 0.713349887877, 1.151292546497 }, e:icdf(T({ 0.3, 0.9 })))
    ;(lp:sum() + H:sum()):backward()
    close({ -1.0, -0.25 }, rate.grad)
    close({ 0.30685281944, 0.19314718056 }, D.kl_divergence(e, D.Exponential(T({ 1, 1 }))))
    close({ 2, 0.5 }, e.mean)
    close({ 4, 0.25 }, e.variance)
    close({ 0, 0 }, e.mode)
    local r2 = T(2):requires_grad_()
    local x = D.Exponential(r2):rsample({ 10 })
    x:sum():backward()
    close({ (-x:detach() / 2):sum():item() }, r2.grad:reshape(1), 1e-12)
    assert_error_has(function() e:log_prob(T({ -1, 1 })) end, "(GreaterThanEq(lower_bound=0.0))")
    assert_error_has(function() D.Exponential(0) end, "Exponential: expected parameter rate")
  end)

  it("Laplace", function()
    local loc, scale = T({ 0, 1 }):requires_grad_(), T({ 2, 0.5 }):requires_grad_()
    local l = D.Laplace(loc, scale)
    local v = T({ 1, 0.25 })
    local lp, H = l:log_prob(v), l:entropy()
    close({ -1.88629436112, -1.5 }, lp)
    close({ 2.38629436112, 1.0 }, H)
    close({ 0.696734670144, 0.111565080074 }, l:cdf(v))
    close({ -1.021651247532, 1.804718956217 }, l:icdf(T({ 0.3, 0.9 })))
    ;(lp:sum() + H:sum()):backward()
    close({ 0.5, -2.0 }, loc.grad)
    close({ 0.25, 3.0 }, scale.grad)
    close({ 0.364454385583, 0.760814822178 }, D.kl_divergence(l, D.Laplace(T({ 0.5, 0 }), T({ 1, 1 }))))
    close({ 8, 0.5 }, l.variance)
    close({ math.sqrt(8), math.sqrt(0.5) }, l.stddev)
  end)

  it("StudentT", function()
    local df, loc, scale = T({ 0.5, 1.5, 3 }):requires_grad_(), T({ 1, 0, -1 }):requires_grad_(),
      T({ 2, 1, 0.5 }):requires_grad_()
    local t = D.StudentT(df, loc, scale)
    close({ 0 / 0, 0.0, -1.0 }, t.mean)
    close({ 0 / 0, math.huge, 0.75 }, t.variance)
    local lp, H = t:log_prob(T({ 0.5, 2, -1.2 })), t:entropy()
    close({ -2.092017383214, -2.700754014995, -0.411661146925 }, lp)
    close({ 4.359874596664, 2.149659467845, 1.080330391303 }, H)
    ;(lp:sum() + H:sum()):backward()
    close({ -3.817222088611, -0.454721271349, -0.088945548527 }, df.grad)
    close({ -0.333333333333, 0.909090909091, -1.012658227848 }, loc.grad)
    close({ 0.083333333333, 1.818181818182, 0.405063291139 }, scale.grad)
    -- loc and scale default to 0 and 1; validate_args may follow df alone
    local t1 = D.StudentT(3, { validate_args = false })
    close({ 0 }, t1.loc:reshape(1))
    close({ 1 }, t1.scale:reshape(1))
    assert.is_true(D.StudentT(T({ 3 })):rsample({ 4 }):size() == wick.Size({ 4, 1 }))
    assert_error_has(function() D.kl_divergence(t, t) end, "no KL divergence for StudentT")
  end)

  it("LogNormal", function()
    local loc, scale = T({ 0, 1 }):requires_grad_(), T({ 1, 0.5 }):requires_grad_()
    local ln = D.LogNormal(loc, scale)
    close({ 1.6487212707, 3.080216848918 }, ln.mean)
    close({ 0.367879441171, 2.117000016613 }, ln.mode)
    close({ 4.670774270472, 2.694758124345 }, ln.variance)
    local lp, H = ln:log_prob(T({ 2, 3 })), ln:entropy()
    close({ -1.852312220724, -1.343852408266 }, lp)
    close({ 1.418938533205, 1.725791352645 }, H)
    ;(lp:sum() + H:sum()):backward()
    close({ 1.69314718056, 1.394449154672 }, loc.grad)
    close({ 0.480453013918, 0.077795067811 }, scale.grad)
    close({ 0.44314718056, 0.81814718056 }, D.kl_divergence(ln, D.LogNormal(T({ 1, 0 }), T({ 2, 1 }))))
    assert_error_has(function() ln:log_prob(T({ 0, 1 })) end, "(GreaterThan(lower_bound=0.0))")
    assert_error_has(function() D.LogNormal(0, -1) end, "LogNormal: expected parameter scale")
  end)

  it("validate_args = false skips the checks; a wrong receiver is named", function()
    assert.is_true(D.Gamma(-1, 1, { validate_args = false }).concentration:item() == -1)
    assert.is_true(D.Gamma(-1, 1, { validate_args = false }):sample({ 3 }):isnan():all()) -- NaN, not a hang
    assert_error_has(function() D.Gamma(1, 1, { validate = true }) end, "unknown option 'validate'")
    assert_error_has(function() local g = D.Gamma(1, 1); return g.log_prob(T(1)) end,
      "Gamma:log_prob: expected a Gamma as self")
    assert.are.equal(math.huge, D.kl_divergence(D.Gamma(1, 1), D.Beta(1, 1)):item()) -- (PyTorch's: Beta's support is bounded)
    assert_error_has(function() D.kl_divergence(D.Dirichlet(wick.ones(3)), D.Normal(0, 1)) end, "no KL divergence between")
    for _, d in ipairs({ D.Gamma(1, 1), D.Beta(1, 1), D.Dirichlet(wick.ones(3)), D.Exponential(1), D.Laplace(0, 1),
      D.StudentT(3), D.LogNormal(0, 1) }) do
      assert.are.equal(wick.Size, getmetatable(d.event_shape))
      assert.are.equal(wick.Size, getmetatable(d.batch_shape))
      assert.is_true(d.has_rsample)
    end
  end)
end)

describe("Poisson, NegativeBinomial and wick.poisson (values from PyTorch 2.15)", function()
  it("log_prob, moments and KL are PyTorch's", function()
    local p = D.Poisson(wick.tensor({ 2.5, 40 }))
    close({ -1.5429, -2.7901 }, p:log_prob(wick.tensor({ 3, 41 })), 1e-4)
    close({ 2, 40 }, p.mode, 0)
    local nb = D.NegativeBinomial(5, wick.tensor({ 0.3, 0.7 }))
    close({ -1.4833, -2.6779 }, nb:log_prob(wick.tensor({ 2, 10 })), 1e-4)
    close({ 2.1429, 11.6667 }, nb.mean, 1e-4)
    close({ 3.0612, 38.8889 }, nb.variance, 1e-4)
    close({ 1, 9 }, nb.mode, 0)
    close({ -2.7390, -2.0831 }, D.NegativeBinomial(wick.tensor({ 3 }), { logits = wick.tensor({ 0.4 }) })
      :log_prob(wick.tensor({ 0, 4 })), 1e-4)
    close({ 0.1891 }, D.kl_divergence(D.Poisson(wick.tensor({ 2 })), D.Poisson(wick.tensor({ 3 }))), 1e-4)
    assert.has_error(function() p:log_prob(wick.tensor({ 1.5, 2 })) end)
    assert.has_error(function() D.Poisson(-1) end)
  end)
  it("draws integers whose mean and variance are the rate, on both sides of the algorithms' switch", function()
    wick.manual_seed(5)
    for _, lam in ipairs({ 0.5, 9.5, 10, 300 }) do
      local x = wick.poisson(wick.full({ 40000 }, lam, { dtype = "float64" }))
      assert.are.equal(0, (x - x:floor()):abs():max():item())
      local se = math.sqrt(lam / 40000)
      assert.is_true(math.abs(x:mean():item() - lam) < 5 * se, lam .. ": mean " .. x:mean():item())
      assert.is_true(math.abs(x:var():item() / lam - 1) < 0.05, lam .. ": var " .. x:var():item())
    end
    assert.are.equal(0, wick.poisson(wick.zeros(5)):sum():item())
    assert.has_error(function() wick.poisson(wick.tensor({ -1 })) end,
      "poisson: invalid Poisson rate, expected rate to be non-negative, got -1")
    local s = D.NegativeBinomial(5, wick.tensor({ 0.3, 0.7 })):sample({ 20000 })
    assert.are.same({ 20000, 2 }, s.shape)
    close({ 2.1429, 11.6667 }, s:mean(1), 0.3)
  end)
end)

describe("Binomial and wick.binomial (values from PyTorch 2.15)", function()
  it("log_prob, moments, entropy and support are PyTorch's", function()
    local b = D.Binomial(10, wick.tensor({ 0.3, 0.8 }))
    close({ -1.3212, -1.3151 }, b:log_prob(wick.tensor({ 3, 9 })), 1e-4)
    close({ 3, 8 }, b.mean, 1e-5)
    close({ 2.1, 1.6 }, b.variance, 1e-5)
    close({ 3, 8 }, b.mode, 0)
    close({ 1.7791, 1.6219 }, b:entropy(), 1e-4)
    local b2 = D.Binomial(wick.tensor({ 5, 20 }), { logits = wick.tensor({ -0.5, 1.2 }) })
    close({ -2.3704, -5.2656 }, b2:log_prob(wick.tensor({ 0, 20 })), 1e-4)
    close({ 2, 16 }, b2.mode, 0)
    close({ 0, 1, 2, 3, 4 }, D.Binomial(4, wick.tensor(0.5)):enumerate_support(), 0)
    assert.has_error(function() b:log_prob(wick.tensor({ 11, 2 })) end)
    assert.has_error(function() D.Binomial(2.5, 0.5) end)
  end)
  it("draws match the mean and variance on both sides of the algorithms' switch", function()
    wick.manual_seed(9)
    for _, c in ipairs({ { 20, 0.1 }, { 100, 0.3 }, { 1000, 0.9 } }) do
      local n, p = c[1], c[2]
      local x = wick.binomial(wick.full({ 40000 }, n), wick.full({ 40000 }, p, { dtype = "float64" }))
      assert.are.equal(0, (x - x:floor()):abs():max():item())
      assert.is_true(x:max():item() <= n)
      local var = n * p * (1 - p)
      assert.is_true(math.abs(x:mean():item() - n * p) < 5 * math.sqrt(var / 40000), n .. ": mean " .. x:mean():item())
      assert.is_true(math.abs(x:var():item() / var - 1) < 0.05, n .. ": var " .. x:var():item())
    end
    assert.has_error(function() wick.binomial(wick.tensor({ 1.5 }), wick.tensor({ 0.5 })) end,
      "binomial: count must hold non-negative integers, got 1.5")
  end)
end)
