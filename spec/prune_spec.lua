-- nn.utils.prune (lua/wick/nn/prune.lua): masks worked out by hand, pruning
-- again among what is kept, PyTorch's state-dict names, remove.
local wick = require("wick")
local nn = wick.nn
local prune = nn.utils.prune
local support = require("spec.support")

local function linear_with(w)
  local l = nn.Linear(#w[1], #w)
  wick.no_grad(function() l.weight:copy_(wick.tensor(w)) end)
  return l
end

describe("nn.utils.prune", function()
  it("l1_unstructured zeroes the smallest magnitudes; again, among those kept", function()
    local l = linear_with({ { 1, -5, 3 }, { -2, 6, 0.5 } })
    prune.l1_unstructured(l, "weight", 0.5) -- round(0.5 * 6) = 3: 0.5, 1, -2
    assert.are.same({ { 0, 1, 1 }, { 0, 1, 0 } }, l.weight_mask:tolist())
    assert.are.same({ { 0, -5, 3 }, { 0, 6, 0 } }, l.weight:tolist())
    prune.l1_unstructured(l, "weight", 1) -- one more of the 3 kept: 3
    assert.are.same({ { 0, 1, 0 }, { 0, 1, 0 } }, l.weight_mask:tolist())
    local keys = {}
    for k in pairs(l:state_dict()) do keys[#keys + 1] = k end
    table.sort(keys)
    assert.are.same({ "bias", "weight_mask", "weight_orig" }, keys)
    assert.are.equal(2, #l:parameters()) -- bias, weight_orig
    -- the forward uses the pruned weight, recomputed from weight_orig
    wick.no_grad(function() l.weight_orig:fill_(1) end)
    local y = l(wick.ones(1, 3))
    assert.is_true((y - (l.bias + 1)):abs():max():item() < 1e-6) -- one kept weight of 1 per output
    assert.is_true(l.weight_orig.grad == nil)
    prune.remove(l, "weight")
    assert.are.same({ { 0, 1, 0 }, { 0, 1, 0 } }, l.weight:tolist())
    assert.is_true(l.weight.requires_grad)
    assert.is_false(prune.is_pruned(l))
  end)

  it("ln_structured keeps the channels of largest norm; global_unstructured prunes across tensors", function()
    local l = linear_with({ { 1, 1 }, { 3, 0 }, { 0, 0.5 } })
    prune.ln_structured(l, "weight", 1, 2, 1) -- one output channel, the smallest L2 norm (row 3)
    assert.are.same({ { 1, 1 }, { 1, 1 }, { 0, 0 } }, l.weight_mask:tolist())
    local a, b = linear_with({ { 4, 1 } }), linear_with({ { 2, 3 } })
    prune.global_unstructured({ { a, "weight" }, { b, "weight" } }, { pruning_method = prune.L1Unstructured, amount = 2 })
    assert.are.same({ { 1, 0 } }, a.weight_mask:tolist())
    assert.are.same({ { 0, 1 } }, b.weight_mask:tolist())
    assert.is_true(prune.is_pruned(nn.Sequential(a)))
  end)

  it("refuses bad amounts and unknown names", function()
    local l = nn.Linear(2, 2)
    support.assert_error_has(function() prune.l1_unstructured(l, "weight", 5) end, "should be smaller than the number of parameters")
    support.assert_error_has(function() prune.l1_unstructured(l, "weight", 1.5) end, "range [0, 1]")
    support.assert_error_has(function() prune.l1_unstructured(l, "nope", 0.5) end, "does not exist")
    support.assert_error_has(function() prune.remove(l, "weight") end, "has to be pruned before")
    support.assert_error_has(function() prune.l1_unstructured(l, "weight", { amont = 1 }) end, "amont")
  end)

  it("takes PyTorch's keywords as an options table", function()
    local l = linear_with({ { 1, -5, 3 }, { -2, 6, 0.5 } })
    prune.l1_unstructured(l, "weight", { amount = 0.5 })
    assert.are.same({ { 0, 1, 1 }, { 0, 1, 0 } }, l.weight_mask:tolist())
    local s = linear_with({ { 1, 1 }, { 3, 0 }, { 0, 0.5 } })
    prune.ln_structured(s, "weight", { amount = 1, n = 2, dim = 1 })
    assert.are.same({ { 1, 1 }, { 1, 1 }, { 0, 0 } }, s.weight_mask:tolist())
    local r = nn.Linear(4, 3)
    prune.random_structured(r, "weight", { amount = 2, dim = 1 })
    assert.are.equal(4, r.weight_mask:sum():item())
    -- importance_scores by position or by name where PyTorch takes it, refused where it does not
    local q = linear_with({ { 1, -5, 3 }, { -2, 6, 0.5 } })
    prune.l1_unstructured(q, "weight", 2, wick.tensor({ { 9, 9, 0 }, { 9, 0, 9 } }))
    assert.are.same({ { 1, 1, 0 }, { 1, 0, 1 } }, q.weight_mask:tolist())
    local u = nn.Linear(3, 2)
    support.assert_error_has(function()
      prune.random_unstructured(u, "weight", { amount = 1, importance_scores = wick.ones(2, 3) })
    end, "unknown option 'importance_scores'")
    support.assert_error_has(function() prune.random_structured(u, "weight", 1, 1, 5) end,
      "expected at most 3 positional argument(s) (name, amount, dim)")
    -- name by keyword too (the pruning tutorial's prune.random_unstructured(module, name="weight", amount=0.3))
    prune.random_unstructured(u, { name = "weight", amount = 0.5 })
    assert.are.equal(3, u.weight_mask:sum():item())
    support.assert_error_has(function() prune.l1_unstructured(nn.Linear(3, 2), { amount = 0.5 }) end,
      "expected a string for argument 'name'")
  end)

  it("a custom method: a subclass of BasePruningMethod with its compute_mask (the pruning tutorial)", function()
    local FooBar = prune.BasePruningMethod:extend("FooBarPruningMethod")
    FooBar.PRUNING_TYPE = "unstructured"
    function FooBar:compute_mask(_, default_mask)
      local mask = default_mask:clone()
      mask:view(-1)[{ { 1, -1, 2 } }] = 0 -- mask.view(-1)[::2] = 0
      return mask
    end
    local l = linear_with({ { 1, 2, 3, 4, 5 } })
    FooBar.apply(l, "weight")
    assert.are.same({ { 0, 1, 0, 1, 0 } }, l.weight_mask:tolist())
    FooBar:apply(l, "weight") -- again: among the two kept, the first
    assert.are.same({ { 0, 0, 0, 1, 0 } }, l.weight_mask:tolist())
    local Threshold = prune.BasePruningMethod:extend("ThresholdPruning")
    function Threshold:compute_mask(t, default_mask) return default_mask * t:abs():gt(self.threshold) end
    local m = linear_with({ { 0.5, -2, 1.5 } })
    Threshold.apply(m, "weight", { threshold = 1 })
    assert.are.same({ { 0, 1, 1 } }, m.weight_mask:tolist())
    support.assert_error_has(function() prune.BasePruningMethod:extend("X").apply(m, "bias") end, "defines no compute_mask")
  end)
end)

describe("a deep copy of a pruned or reparametrised module", function()
  it("keeps the registration: is_pruned, remove and the norms' removal work on the copy, apart from the original", function()
    local nn = wick.nn
    local prune = nn.utils.prune
    local m = nn.Linear(4, 4)
    prune.l1_unstructured(m, "weight", 0.25)
    local c = wick.deepcopy(m)
    assert.is_true(prune.is_pruned(c))
    prune.remove(c, "weight")
    assert.is_false(prune.is_pruned(c))
    assert.is_true(prune.is_pruned(m)) -- the original keeps its own
    local x = wick.randn(2, 4)
    assert.is_true((c(x) - m(x)):abs():max():item() < 1e-6)
    local w = wick.deepcopy(nn.utils.weight_norm(nn.Linear(3, 2)))
    nn.utils.remove_weight_norm(w)
    assert.is_nil(rawget(w, "_forward_pre_hook_list"))
    local s = wick.deepcopy(nn.utils.spectral_norm(nn.Linear(3, 2)))
    nn.utils.remove_spectral_norm(s)
    assert.are.same({ 2, 3 }, s.weight:size())
  end)
end)
