-- wick.distributions against PyTorch 2.15's torch.distributions (values printed
-- there from the same inputs): Categorical (1-based classes), Normal,
-- Bernoulli, Uniform, kl_divergence; gradients through log_prob and rsample.
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
    assert.are.equal(-math.huge, u:log_prob(wick.tensor({ 3 })):item())
    close({ 0.6931 }, u:entropy():reshape(1))
    local s = u:sample({ 100 })
    assert.is_true(s:ge(0):all() and s:lt(2):all())
    assert_error_has(function() D.kl_divergence(b, u) end, "no KL divergence between Bernoulli and Uniform")
  end)
end)
