-- wick.distributions against PyTorch 2.x's torch.distributions (values printed
-- there from the same inputs, in float64 where the inputs are): Categorical
-- (1-based classes), OneHotCategorical, Normal (icdf too), MultivariateNormal,
-- Independent, Bernoulli, Uniform, kl_divergence; gradients through log_prob,
-- rsample and icdf; validate_args (on by default, as PyTorch's).
local wick = require("wick")
local support = require("spec.support")
local assert_error_has = support.assert_error_has
local D = wick.distributions
local F64 = { dtype = "float64" }
local function close(want, t, tol) support.assert_close(t:totable(), want, tol or 1e-4) end

describe("wick.distributions", function()
  it("Categorical: probs, entropy, log_prob of 1-based classes and its gradient, sample shapes", function()
    local logits = wick.tensor({ { 1, 2, 3 }, { 0, 0, 5 } }, F64):requires_grad_()
    local c = D.Categorical({ logits = logits })
    close({ { 0.0900, 0.2447, 0.6652 }, { 0.0066, 0.0066, 0.9867 } }, c.probs)
    close({ 0.8324, 0.0799 }, c:entropy())
    local lp = c:log_prob(wick.tensor({ 3, 1 }, { dtype = "int64" })) -- PyTorch's classes 2 and 0
    close({ -0.4076, -5.0134 }, lp)
    lp:sum():backward()
    close({ { -0.0900, -0.2447, 0.3348 }, { 0.9934, -0.0066, -0.9867 } }, logits.grad)
    assert.are.same({ 2 }, c:sample():size())
    assert.are.same({ 4, 2 }, c:sample({ 4 }):size())
    local one = D.Categorical(wick.tensor({ 0.2, 0.8 }))
    assert.are.equal(0, one:sample():dim()) -- REINFORCE's action: a 0-dim class
    close({ -0.2231 }, one:log_prob(wick.tensor(2, { dtype = "int64" })):reshape(1))
    wick.manual_seed(0)
    local draws = D.Categorical(wick.tensor({ 0, 1, 0 })):sample({ 50 })
    assert.is_true(draws:eq(2):all())
    assert_error_has(function() D.Categorical({}) end, "Either `probs` or `logits` must be specified")
    assert_error_has(function() D.Categorical({ probs = wick.ones(2), logits = wick.ones(2) }) end, "but not both")
  end)

  it("Normal: log_prob, entropy, cdf, rsample's gradient, kl_divergence", function()
    local n = D.Normal(wick.tensor({ 0, 1 }, F64), wick.tensor({ 1, 2 }, F64))
    close({ -1.0439, -1.7371 }, n:log_prob(wick.tensor({ 0.5, 0 }, F64)))
    close({ 1.4189, 2.1121 }, n:entropy())
    close({ 0.5, 0.5 }, n:cdf(wick.tensor({ 0, 1 }, F64)))
    close({ 0, 1.3069 }, D.kl_divergence(n, D.Normal(0, 1)))
    local mu, sigma = wick.tensor({ 1 }, F64):requires_grad_(), wick.tensor({ 2 }, F64):requires_grad_()
    local x = D.Normal(mu, sigma):rsample({ 1000 })
    assert.are.same({ 1000, 1 }, x:size())
    x:sum():backward()
    assert.are.equal(1000, mu.grad:item()) -- d(loc + eps scale)/d loc
    assert.is_false(D.Normal(mu, sigma):sample().requires_grad)
  end)

  it("Bernoulli and Uniform", function()
    local b = D.Bernoulli(wick.tensor({ 0.3, 0.9 }, F64))
    close({ -1.2040, -2.3026 }, b:log_prob(wick.tensor({ 1, 0 }, F64)))
    close({ 0.6109, 0.3251 }, b:entropy())
    close({ 0.0823, 0.3681 }, D.kl_divergence(b, D.Bernoulli({ logits = wick.tensor({ 0, 0 }, F64) })))
    assert.are.same({ 3, 2 }, b:sample({ 3 }):size())
    local u = D.Uniform(0, 2)
    close({ -0.6931 }, u:log_prob(wick.tensor({ 1 })))
    -- outside the support: an error by default (PyTorch's validate_args), -inf without validation
    assert_error_has(function() u:log_prob(wick.tensor({ 3 })) end, "to be within the support")
    assert.are.equal(-math.huge, D.Uniform(0, 2, { validate_args = false }):log_prob(wick.tensor({ 3 })):item())
    close({ 0.6931 }, u:entropy():reshape(1))
    local s = u:sample({ 100 })
    assert.is_true(s:ge(0):all() and s:lt(2):all())
    assert_error_has(function() D.kl_divergence(b, u) end, "no KL divergence between Bernoulli and Uniform")
  end)
  it("Categorical as PyTorch: probs_to_logits clamps to eps, entropy and KL with zero probabilities, broadcast log_prob", function()
    local c = D.Categorical(wick.tensor({ 0.5, 0.5, 0 }))
    close({ -0.693147182465, -0.693147182465, -15.942384719849 }, c.logits, 1e-6)
    close({ -15.942384719849 }, c:log_prob(wick.tensor(3, { dtype = "int64" })):reshape(1), 1e-6)
    close({ -15.942384719849 }, c:log_prob(3):reshape(1), 1e-6) -- one class as a number
    assert_error_has(function() c:log_prob(1.5) end, "expected an integer for argument 'value'")
    local z = D.Categorical({ logits = wick.tensor({ { 0, 0, -math.huge }, { 1, 2, 3 } }, F64) })
    close({ 0.69314718056, 0.83239558184 }, z:entropy(), 1e-10) -- not NaN
    local q = D.Categorical(wick.tensor({ 0.2, 0.8, 0 }, F64))
    close({ 0.223143551314, math.huge }, D.kl_divergence(z, q), 1e-10)
    close({ 0.192744757022, 1.107203540906 }, D.kl_divergence(q, z), 1e-10)
    local c4 = D.Categorical(wick.tensor({ { 0.1, 0.2, 0.7 }, { 0.3, 0.3, 0.4 }, { 0.5, 0.25, 0.25 },
      { 1 / 3, 1 / 3, 1 / 3 } }, F64))
    local lp = c4:log_prob(wick.tensor({ { 1 }, { 3 } }, { dtype = "int64" })) -- value (2, 1) against batch (4)
    assert.are.same({ 2, 4 }, lp:size())
    close({ { -2.302585092994, -1.203972804326, -0.69314718056, -1.098612288668 },
      { -0.356674943939, -0.916290731874, -1.38629436112, -1.098612288668 } }, lp, 1e-10)
    assert.is_true(c4.event_shape == wick.Size({}))
    assert.are.equal(wick.Size, getmetatable(c4.event_shape))
  end)

  it("OneHotCategorical: one-hot samples, log_prob, entropy, variance, KL", function()
    local oh = D.OneHotCategorical({ logits = wick.tensor({ { 1, 2, 3 }, { 0, 0, 5 } }, F64) })
    assert.is_true(oh.batch_shape == wick.Size({ 2 }))
    assert.is_true(oh.event_shape == wick.Size({ 3 }))
    close({ -0.407605964444, -5.013385901721 }, oh:log_prob(wick.tensor({ { 0, 0, 1 }, { 1, 0, 0 } }, F64)), 1e-10)
    close({ 0.83239558184, 0.07986944651 }, oh:entropy(), 1e-10)
    close({ { 0.081925069065, 0.18483644651, 0.222695426535 }, { 0.006604153862, 0.006604153862, 0.013119906489 } },
      oh.variance, 1e-10)
    close({ 0.068259352381, 0.622765709465 }, D.kl_divergence(oh, D.OneHotCategorical(wick.tensor({ 0.2, 0.3, 0.5 }, F64))),
      1e-10)
    wick.manual_seed(1)
    local s = oh:sample({ 5 })
    assert.are.same({ 5, 2, 3 }, s:size())
    assert.are.equal("float64", s.dtype)
    assert.is_true(s:sum(-1):eq(1):all())
    local one = D.OneHotCategorical(wick.tensor({ 0, 0, 1 }))
    assert.are.same({ 0, 0, 1 }, one:sample():totable())
    assert.are.same({ 3 }, one.mode:size())
    assert_error_has(function() one:log_prob(wick.tensor({ 0.5, 0.5, 0 })) end, "to be within the support (OneHot())")
    assert_error_has(function() one:log_prob(wick.tensor({ 0, 1 })) end, "The right-most size of value must match")
    assert_error_has(function() D.OneHotCategorical({}) end, "OneHotCategorical: Either `probs` or `logits`")
  end)

  it("MultivariateNormal: log_prob, entropy and their gradients, from a covariance, precision or scale_tril", function()
    local loc = wick.tensor({ { 0.5, -1, 2 }, { 1, 0, -0.5 } }, F64):requires_grad_()
    local A = wick.tensor({ { 2, 0, 0 }, { 0.5, 1.5, 0 }, { -0.3, 0.2, 1 } }, F64)
    local cov = A:mm(A:t()):requires_grad_()
    local m = D.MultivariateNormal(loc, cov) -- covariance_matrix by position, as PyTorch's
    assert.is_true(m.batch_shape == wick.Size({ 2 }))
    assert.is_true(m.event_shape == wick.Size({ 3 }))
    local x = wick.tensor({ { 1, 0, 1 }, { 0, 0.5, 0 } }, F64)
    local lp, H = m:log_prob(x), m:entropy()
    close({ -4.599351499393, -4.136677888282 }, lp, 1e-10)
    close({ 5.355427888282, 5.355427888282 }, H, 1e-10)
    ;(lp:sum() + H:sum()):backward()
    close({ { -0.163194444444, 0.527777777778, -1.041666666667 }, { -0.2875, 0.3, 0.25 } }, loc.grad, 1e-10)
    close({ { 0.054644338349, -0.086190200617, 0.049059606481 }, { -0.086190200617, 0.184274691358, -0.237384259259 },
      { 0.049059606481, -0.237384259259, 0.573784722222 } }, cov.grad, 1e-10)
    close({ { 2, 0, 0 }, { 0.5, 1.5, 0 }, { -0.3, 0.2, 1 } }, m.scale_tril[1], 1e-12)
    close({ { 0.311388888889, -0.135555555556, 0.183333333333 }, { -0.135555555556, 0.462222222222, -0.133333333333 },
      { 0.183333333333, -0.133333333333, 1.0 } }, m.precision_matrix[1], 1e-10)
    close({ 4, 2.5, 1.13 }, m.variance[1], 1e-12)
    assert.are.same({ 2, 3, 3 }, m.covariance_matrix:size())
    assert.is_true(m.mean == m.loc)
    local P = wick.linalg.inv(A:mm(A:t()))
    close({ -4.599351499393, -7.099351499393 },
      D.MultivariateNormal(loc:detach()[1], { precision_matrix = P }):log_prob(x), 1e-10)
    local m3 = D.MultivariateNormal(wick.zeros(3, F64), { scale_tril = A })
    close({ -4.69445566606, -3.91320566606 }, m3:log_prob(x), 1e-10)
    assert.is_true(m3.batch_shape == wick.Size({}))
    -- a batch of scale_tril with one loc (broadcast), and the gradient of scale_tril
    local St = wick.stack({ A, A * 2 }):requires_grad_()
    local m4 = D.MultivariateNormal(wick.tensor({ 0, 1, 2 }, F64), { scale_tril = St })
    assert.is_true(m4.batch_shape == wick.Size({ 2 }))
    local lp4 = m4:log_prob(x[1])
    close({ -4.561122332727, -6.111293041073 }, lp4, 1e-10)
    lp4:sum():backward()
    close({ { { -0.368194444444, 0, 0 }, { -0.232222222222, -0.27962962963, 0 },
      { -0.341666666667, 0.569444444444, -0.533055555556 } },
      { { -0.233524305556, 0, 0 }, { -0.029027777778, -0.284953703704, 0 },
        { -0.042708333333, 0.071180555556, -0.441631944444 } } }, St.grad, 1e-10)
    local q = D.MultivariateNormal(wick.tensor({ 0, 1, -1 }, F64),
      { scale_tril = wick.tensor({ { 1, 0, 0 }, { 0.3, 0.8, 0 }, { 0.1, -0.2, 1.5 } }, F64) })
    close({ 6.735974893126, 3.52784121257 }, D.kl_divergence(m, q), 1e-10)
  end)

  it("MultivariateNormal: rsample is loc + L eps from wick's generator, with the sample moments", function()
    local A = wick.tensor({ { 2, 0, 0 }, { 0.5, 1.5, 0 }, { -0.3, 0.2, 1 } }, F64)
    local loc = wick.tensor({ 1, -2, 3 }, F64):requires_grad_()
    local m = D.MultivariateNormal(loc, { scale_tril = A })
    wick.manual_seed(5)
    local s = m:rsample({ 4 })
    wick.manual_seed(5)
    local eps = wick.randn(4, 3, F64)
    assert.is_true((s - (loc + eps:matmul(A:t()))):abs():max():item() < 1e-12)
    s:sum():backward()
    close({ 4, 4, 4 }, loc.grad, 1e-12)
    assert.is_false(m:sample().requires_grad)
    assert.are.same({ 2, 5, 3 }, m:sample({ 2, 5 }):size())
    wick.manual_seed(6)
    local big = m:sample({ 20000 })
    local c = big - big:mean(1)
    local cov = c:t():mm(c) / 20000
    assert.is_true((big:mean(1) - loc:detach()):abs():max():item() < 0.06)
    assert.is_true((cov - A:mm(A:t())):abs():max():item() < 0.15)
  end)

  it("MultivariateNormal: says what is wrong", function()
    local I = wick.eye(2, F64)
    assert_error_has(function() D.MultivariateNormal(wick.zeros(2, F64)) end,
      "Exactly one of covariance_matrix or precision_matrix or scale_tril")
    assert_error_has(function() D.MultivariateNormal(wick.zeros(2, F64), I, { scale_tril = I }) end, "Exactly one of")
    assert_error_has(function() D.MultivariateNormal(wick.zeros({}, F64), I) end, "loc must be at least one-dimensional")
    assert_error_has(function() D.MultivariateNormal(wick.zeros(3, F64), I) end, "must be a batch of 3 by 3 matrices")
    assert_error_has(function() D.MultivariateNormal(wick.zeros(2, 2, F64), wick.stack({ I, I, I })) end,
      "cannot be broadcast")
    assert_error_has(function() D.MultivariateNormal(wick.zeros(2, F64), wick.tensor({ { 1, 2 }, { 2, 1 } }, F64)) end,
      "covariance_matrix (Tensor of shape [2, 2]) to satisfy the constraint PositiveDefinite()")
    assert_error_has(function() D.MultivariateNormal(wick.zeros(2, F64), wick.tensor({ { 1, 0.5 }, { 0, 1 } }, F64)) end,
      "PositiveDefinite()")
    assert_error_has(function() D.MultivariateNormal(wick.zeros(2, F64), { scale_tril = -I }) end, "LowerCholesky()")
    assert_error_has(function() D.MultivariateNormal(wick.zeros(2, F64), I):log_prob(wick.zeros(3, F64)) end,
      "The right-most size of value must match event_shape")
    assert_error_has(function() D.kl_divergence(D.MultivariateNormal(wick.zeros(2, F64), I),
      D.MultivariateNormal(wick.zeros(3, F64), wick.eye(3, F64))) end, "different event shapes")
    local msg = support.error_of(function() D.MultivariateNormal(wick.zeros(2, F64)) end)
    assert.is_truthy(msg:find("distributions_spec.lua:%d+:"), msg)
  end)

  it("Independent: the rightmost batch dims as event dims, and its KL", function()
    local loc2, sc = wick.tensor({ { 0, 1 }, { 2, -1 } }, F64), wick.tensor({ { 1, 2 }, { 0.5, 1.5 } }, F64)
    local ind = D.Independent(D.Normal(loc2, sc), 1)
    assert.is_true(ind.batch_shape == wick.Size({ 2 }))
    assert.is_true(ind.event_shape == wick.Size({ 2 }))
    close({ -2.781024246969, -4.439083882846 }, ind:log_prob(wick.tensor({ { 0.5, 0 }, { 1, 1 } }, F64)), 1e-10)
    close({ 3.531024246969, 2.550194993958 }, ind:entropy(), 1e-10)
    local ind2 = D.Independent(D.Normal(wick.zeros(2, 2, F64), wick.ones(2, 2, F64)), 1)
    close({ 1.30685281944, 3.037682072452 }, D.kl_divergence(ind, ind2), 1e-10)
    close(loc2:totable(), ind.mean, 1e-12)
    assert.are.same({ 3, 2, 2 }, ind:rsample({ 3 }):size())
    local all = D.Independent(D.Normal(loc2, sc), 2)
    assert.is_true(all.batch_shape == wick.Size({}))
    close({ -2.781024246969 - 4.439083882846 }, all:log_prob(wick.tensor({ { 0.5, 0 }, { 1, 1 } }, F64)):reshape(1), 1e-10)
    assert_error_has(function() D.Independent(D.Normal(loc2, sc), 3) end,
      "Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), actual 3 vs 2")
    assert_error_has(function() D.Independent({}, 1) end, "expected a distribution for argument 'base_distribution'")
    assert_error_has(function() D.kl_divergence(ind, all) end, "different reinterpreted_batch_ndims")
    assert_error_has(function() D.Independent(D.Bernoulli(wick.tensor({ 0.5 })), 1):rsample() end, "has no rsample")
  end)

  it("Normal:icdf (with its gradient) inverts cdf", function()
    local n = D.Normal(wick.tensor({ 0, 1 }, F64), wick.tensor({ 1, 2 }, F64))
    local p = wick.tensor({ 0.025, 0.9 }, F64):requires_grad_()
    local q = n:icdf(p)
    close({ -1.95996398454, 3.563103131089 }, q, 1e-10)
    q:sum():backward()
    close({ 17.110083080333, 11.396119712234 }, p.grad, 1e-9)
    close({ 0.025, 0.9 }, n:cdf(q:detach()), 1e-12)
    close({ -4.750757694244, -0.524400472641, 0, 4.750757694244 },
      D.Normal(0, 1):icdf(wick.tensor({ 1e-6, 0.3, 0.5, 0.999999 })), 1e-6)
    close({ -7.034486910048, -3.090232306168, 6.361340889697 },
      D.Normal(wick.tensor(0, F64), 1):icdf(wick.tensor({ 1e-12, 1e-3, 1 - 1e-10 }, F64)), 1e-8)
    close({ -math.huge, math.huge }, D.Normal(0, 1):icdf(wick.tensor({ 0, 1 })))
    assert.is_true(D.Normal(0, 1):icdf(wick.tensor({ 1.5 })):isnan():all()) -- (not checked, as PyTorch's)
  end)

  it("validate_args: PyTorch's parameter and support checks by default; validate_args = false skips them", function()
    assert_error_has(function() D.Normal(0, -1) end,
      "Normal: expected parameter scale (Tensor of shape []) to satisfy the constraint GreaterThan(lower_bound=0.0)")
    assert_error_has(function() D.Normal(0, 1):log_prob(wick.tensor(0 / 0)) end, "within the support (Real())")
    assert_error_has(function() D.Categorical(wick.tensor({ -0.5, 1.5 })) end, "constraint Simplex()")
    assert_error_has(function() D.Categorical(wick.tensor({ 0.5, 0.5 })):log_prob(wick.tensor(3, { dtype = "int64" })) end,
      "IntegerInterval(lower_bound=1, upper_bound=2)")
    assert_error_has(function() D.Categorical(wick.tensor({ 0.5, 0.5 })):log_prob(wick.tensor(1.5)) end,
      "IntegerInterval")
    assert_error_has(function() D.Bernoulli(wick.tensor({ 1.5 })) end, "Interval(lower_bound=0.0, upper_bound=1.0)")
    assert_error_has(function() D.Bernoulli(wick.tensor({ 0.5 })):log_prob(wick.tensor({ 0.5 })) end, "(Boolean())")
    assert_error_has(function() D.Uniform(1, 0) end, "LessThan")
    assert_error_has(function() D.Normal(wick.zeros(3), 1):log_prob(wick.zeros(2)) end, "cannot be broadcast")
    assert_error_has(function() D.Normal(0, 1, { validate = true }) end, "unknown option 'validate'")
    -- off: no checks (PyTorch's values then)
    assert.is_true(D.Normal(0, -1, { validate_args = false }).scale:item() == -1)
    close({ 0.5 * math.log(0.5) * 2 }, D.Bernoulli(wick.tensor({ 0.5 }), { validate_args = false })
      :log_prob(wick.tensor({ 0.5 })), 1e-6)
    D.Distribution.set_default_validate_args(false)
    local ok = pcall(function() return D.Normal(0, -1) end)
    D.Distribution.set_default_validate_args(true)
    assert.is_true(ok)
    assert_error_has(function() D.Distribution.set_default_validate_args("no") end, "expected a boolean")
    -- batch_shape and event_shape are wick.Size everywhere
    for _, d in ipairs({ D.Normal(0, 1), D.Bernoulli(0.5), D.Uniform(0, 1), D.Categorical(wick.ones(3)) }) do
      assert.are.equal(wick.Size, getmetatable(d.event_shape))
      assert.are.equal(wick.Size, getmetatable(d.batch_shape))
      assert.are.equal("[]", tostring(d.event_shape))
    end
    assert_error_has(function() local n = D.Normal(0, 1); return n.log_prob(wick.tensor(0)) end,
      "Normal:log_prob: expected a Normal as self")
  end)

  it("can be a field of an nn.Module", function()
    local Net = wick.nn.Module:extend("DistNet")
    function Net:init()
      self.fc = wick.nn.Linear(2, 2)
      self.prior = D.MultivariateNormal(wick.zeros(2), { scale_tril = wick.eye(2) })
    end
    local net = Net()
    local x = net.fc(wick.ones(1, 2))
    assert.are.same({ 1 }, net.prior:log_prob(x):size())
  end)
end)

describe("log_prob of values with more leading dims than the batch", function()
  it("broadcasts them as PyTorch (Monte-Carlo samples scored by an unbatched distribution)", function()
    local D = wick.distributions
    assert.are.same({ 4, 2 }, D.MultivariateNormal(wick.zeros(3), wick.eye(3)):log_prob(wick.zeros(4, 2, 3)):size())
    assert.are.same({ 5, 4, 2, 3 }, D.Normal(wick.zeros(3), wick.ones(3)):log_prob(wick.zeros(5, 4, 2, 3)):size())
    assert.are.same({ 4, 2 }, D.Categorical(wick.ones(3)):log_prob(wick.ones(4, 2, { dtype = "int64" })):size())
  end)
end)
