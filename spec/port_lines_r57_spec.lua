-- Lines of public PyTorch programs ported in the fifty-seventh round (each worked
-- differently, or not at all, before), one describe per program or sweep; the
-- earlier rounds are spec/port_lines_spec.lua.
local wick = require("wick")
local nn = wick.nn
local F = nn.functional
local support = require("spec.support")

describe("the fifty-seventh round's lines, part 1 (functional_call)", function()
  it("functional_call(module, params, args, kwargs) calls module(args..., kwargs), as torch.func's", function()
    local M = nn.Module:extend("ScaledLinear")
    function M:init() M.super.init(self); self.lin = nn.Linear(3, 2) end
    function M:forward(x, opts) local y = self.lin(x); return opts and opts.scale and y * opts.scale or y end
    local m = M()
    local p = { ["lin.weight"] = wick.ones(2, 3), ["lin.bias"] = wick.zeros(2) }
    local x = wick.ones(1, 3)
    assert.are.same({ { 6, 6 } }, wick.func.functional_call(m, p, { x }, { scale = 2 }):tolist())
    assert.are.same({ { 9, 9 } }, wick.func.functional_call(m, p, x, { scale = 3 }, { strict = true }):tolist())
    assert.are.same({ { 3, 3 } }, wick.func.functional_call(m, p, x, { strict = true }):tolist())
    assert.are.same({ { 3, 3 } }, wick.func.functional_call(m, p, x, {}):tolist())
    support.assert_error_has(function() wick.func.functional_call(m, p, x, 5) end,
      "expected a table of keyword arguments for argument 'kwargs'")
  end)
end)

describe("the fifty-seventh round's lines, part 2 (vmap's trees of in_dims)", function()
  it("in_dims = {1, {a = 1, b = false}} is PyTorch's in_dims=(0, {'a': 0, 'b': None})", function()
    local f = function(x, p) return x * p.a + p.b end
    local x = wick.arange(6):view(2, 3):double()
    local p = { a = wick.tensor({ 1, 2 }, { dtype = "float64" }), b = wick.tensor({ 10, 20, 30 }, { dtype = "float64" }) }
    -- torch: vmap(f, (0, {'a': 0, 'b': None}))(x, p)
    assert.are.same({ { 10, 21, 32 }, { 16, 28, 40 } }, wick.func.vmap(f, { 1, { a = 1, b = false } })(x, p):tolist())
    local g = function(l) return l[1] + l[2] end
    assert.are.same({ { 1, 1, 1 }, { 1, 1, 1 } },
      wick.func.vmap(g, { { 1, 2 } })({ wick.ones(2, 3), wick.zeros(3, 2) }):tolist())
    support.assert_error_has(function() wick.func.vmap(f, { 1, { a = 1, c = false } })(x, p) end,
      "in_dims is not compatible with the structure of argument 2")
    support.assert_error_has(function() wick.func.vmap(f, { 1, { a = "x", b = false } })(x, p) end,
      "a tree of dims holds")
  end)
end)

describe("the fifty-seventh round's lines, part 3 (the R2D2 port)", function()
  it("wick.float_power(number, t): Ape-X's epsilon ladder, np.power(0.4, np.linspace(1, 8, n))", function()
    local eps = wick.float_power(0.4, wick.linspace(1, 8, 4))
    assert.are.equal("float64", eps.dtype)
    -- torch.float_power(0.4, torch.linspace(1, 8, 4))
    support.assert_close(eps, { 0.4, 0.04715560661647965, 0.00555912565951857, 0.0006553600000000003 }, 1e-14)
    local t = wick.tensor({ 1, 2 }, { dtype = "float64", requires_grad = true })
    wick.float_power(2, t):sum():backward()
    support.assert_close(t.grad, { 2 * math.log(2), 4 * math.log(2) }, 1e-15)
  end)
end)
