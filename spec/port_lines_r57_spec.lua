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
