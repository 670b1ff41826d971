-- nn.utils.parametrize, weight_norm / spectral_norm in both of PyTorch's
-- forms, parameters_to_vector (lua/wick/nn/parametrize.lua, reparam.lua,
-- utils.lua): state-dict names as PyTorch's, values against their
-- definitions (the weight is unchanged by weight_norm; spectral_norm's
-- weight has largest singular value 1, checked with linalg.svdvals),
-- gradients against the same formula written out, and removal.
local wick = require("wick")
local nn = wick.nn
local P = nn.utils.parametrize
local support = require("spec.support")

local F64 = { dtype = "float64" }
local function keys(m)
  local k = {}
  for name in pairs(m:state_dict()) do k[#k + 1] = name end
  table.sort(k)
  return k
end
local function near(a, b, tol) return (a - b):abs():max():item() < (tol or 1e-12) end

local Symmetric = nn.Module:extend("Symmetric")
function Symmetric:forward(X) return X:triu() + X:triu(1):transpose(-1, -2) end

describe("nn.utils.parametrize", function()
  it("computes the tensor on each read, from parametrizations.<name>.original", function()
    wick.manual_seed(1)
    local l = nn.Linear(3, 3):double()
    local w0 = l.weight:detach():clone()
    P.register_parametrization(l, "weight", Symmetric())
    assert.are.same({ "bias", "parametrizations.weight.original" }, keys(l))
    assert.are.equal("ParametrizedLinear", getmetatable(l).__name)
    assert.is_true(P.is_parametrized(l))
    assert.is_true(P.is_parametrized(l, "weight"))
    assert.is_false(P.is_parametrized(l, "bias"))
    assert.is_true(near(l.weight, l.weight:t()))
    assert.is_true(near(l.parametrizations.weight.original, w0))
    assert.are.equal(2, #l:parameters())
    -- the gradient reaches the original through the parametrization
    local x = wick.randn(4, 3, F64)
    l(x):sum():backward()
    local o = w0:clone():requires_grad_()
    wick.nn.functional.linear(x, o:triu() + o:triu(1):t(), l.bias):sum():backward()
    assert.is_true(near(l.parametrizations.weight.original.grad, o.grad))
    -- printed as PyTorch's
    support.assert_contains(tostring(l), "ParametrizedLinear(\n  in_features=3, out_features=3, bias=True\n  (parametrizations): ModuleDict(")
  end)

  it("assigns through right_inverse, caches under cached(), and removes", function()
    local l = nn.Linear(3, 3):double()
    P.register_parametrization(l, "weight", Symmetric())
    -- Symmetric has no right_inverse: assigning is PyTorch's error, the original left as it was
    local before = l.parametrizations.weight.original:clone()
    support.assert_error_has(function() l.weight = wick.eye(3, F64) * 2 end, "does not implement right_inverse")
    assert.is_true(near(l.parametrizations.weight.original, before))
    wick.no_grad(function() l.parametrizations.weight.original:copy_(wick.eye(3, F64) * 2) end)
    assert.is_true(near(l.weight, wick.eye(3, F64) * 2))
    local calls = 0
    local Count = nn.Module:extend("Count")
    function Count:forward(X) calls = calls + 1; return X end
    P.register_parametrization(l, "weight", Count())
    P.cached(function()
      local _ = l.weight + l.weight
    end)
    assert.are.equal(2, calls) -- once at registration (the shape check), once in cached()
    local original = l.parametrizations.weight.original
    P.remove_parametrizations(l, "weight")
    assert.are.equal("Linear", getmetatable(l).__name)
    assert.is_true(rawequal(original, l.weight)) -- the value left in the original tensor, as PyTorch's set_
    assert.are.same({ "bias", "weight" }, keys(l))
    assert.is_nil(rawget(l, "parametrizations"))
  end)

  it("refuses a parametrization that changes the shape unless unsafe", function()
    local Flat = nn.Module:extend("Flat")
    function Flat:forward(X) return X:reshape(-1) end
    local l = nn.Linear(3, 2)
    support.assert_error_has(function() P.register_parametrization(l, "weight", Flat()) end,
      "may not change the shape")
    assert.are.equal("Linear", getmetatable(l).__name)
    support.assert_error_has(function() P.register_parametrization(l, "nope", Flat()) end,
      "has no parameter or buffer with name 'nope'")
    P.register_parametrization(l, "weight", Flat(), { unsafe = true })
    assert.are.same({ 6 }, l.weight:size())
  end)
end)

describe("weight_norm and spectral_norm", function()
  it("weight_norm (hook form): weight_g and weight_v, the same weight, gradients of g * v / ||v||", function()
    wick.manual_seed(2)
    local m = nn.Linear(5, 3):double()
    local w0 = m.weight:detach():clone()
    local warned = support.warnings_of(function() nn.utils.weight_norm(m) end) -- (PyTorch's FutureWarning)
    assert.are.equal(1, #warned)
    support.assert_contains(warned[1], "nn.utils.weight_norm is deprecated in favor of nn.utils.parametrizations.weight_norm (PyTorch's")
    assert.are.same({ "bias", "weight_g", "weight_v" }, keys(m))
    assert.are.same({ 3, 1 }, m.weight_g:size())
    assert.is_true(near(m.weight, w0))
    local x = wick.randn(4, 5, F64)
    m(x):pow(2):sum():backward()
    local g = m.weight_g:detach():clone():requires_grad_()
    local v = w0:clone():requires_grad_()
    local w = v * (g / (v * v):sum(2, true):sqrt())
    wick.nn.functional.linear(x, w, m.bias):pow(2):sum():backward()
    assert.is_true(near(m.weight_g.grad, g.grad))
    assert.is_true(near(m.weight_v.grad, v.grad))
    nn.utils.remove_weight_norm(m)
    assert.are.same({ "bias", "weight" }, keys(m))
    assert.is_true(near(m.weight, w0))
    support.assert_error_has(function() nn.utils.remove_weight_norm(m) end, "weight_norm of 'weight' not found")
  end)

  it("parametrizations.weight_norm: original0 (g) and original1 (v); dim = false is the whole tensor", function()
    local c = nn.Conv1d(2, 3, 3):double()
    local w0 = c.weight:detach():clone()
    nn.utils.parametrizations.weight_norm(c, { dim = false })
    assert.are.same({ "bias", "parametrizations.weight.original0", "parametrizations.weight.original1" }, keys(c))
    assert.are.equal(0, c.parametrizations.weight.original0:dim())
    assert.is_true(near(c.weight, w0))
    support.assert_error_has(function() nn.utils.parametrizations.weight_norm(nn.Linear(2, 2), { dim = 3 }) end,
      "out of range")
  end)

  it("spectral_norm (both forms) divides by the largest singular value", function()
    wick.manual_seed(3)
    local m = nn.Linear(6, 4):double()
    nn.utils.spectral_norm(m, { n_power_iterations = 50 })
    assert.are.same({ "bias", "weight_orig", "weight_u", "weight_v" }, keys(m))
    m(wick.randn(2, 6, F64)) -- training: the power iterations run
    assert.is_true(math.abs(wick.linalg.svdvals(m.weight)[1]:item() - 1) < 1e-6)
    local u = m.weight_u:clone()
    m:eval()
    m(wick.randn(2, 6, F64))
    assert.is_true(near(u, m.weight_u)) -- eval: no iteration
    nn.utils.remove_spectral_norm(m)
    assert.are.same({ "bias", "weight" }, keys(m))

    local c = nn.Conv2d(3, 4, 3):double()
    nn.utils.parametrizations.spectral_norm(c)
    assert.are.same({ "bias", "parametrizations.weight.1._u", "parametrizations.weight.1._v",
      "parametrizations.weight.original" }, keys(c))
    for _ = 1, 30 do c(wick.randn(1, 3, 5, 5, F64)) end
    local sigma = wick.linalg.svdvals(c.weight:reshape(4, -1))[1]:item()
    assert.is_true(math.abs(sigma - 1) < 1e-4, "sigma " .. sigma)
  end)

  it("parameters_to_vector and vector_to_parameters", function()
    local m = nn.Linear(3, 2)
    local v = nn.utils.parameters_to_vector(m:parameters())
    assert.are.same({ 8 }, v:size())
    assert.is_true(near(v:narrow(1, 1, 6), m.weight:reshape(-1)))
    nn.utils.vector_to_parameters(wick.arange(1, 9), m:parameters())
    assert.are.same({ 7, 8 }, m.bias:tolist())
    support.assert_error_has(function() nn.utils.vector_to_parameters(wick.zeros(7), m:parameters()) end,
      "vec has 7 elements but the parameters hold 8")
  end)
end)
