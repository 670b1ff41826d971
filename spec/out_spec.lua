-- PyTorch's `out=` on the module-level functions (lua/wick/init.lua,
-- with_out): `wick.mm(a, b, {out = c})` writes the result into c and returns
-- c; an empty c takes the result's shape; a c that cannot take the result
-- (shape, dtype, device, autograd) is an error at the caller's line, and a
-- function without `out` in PyTorch (views, several results) refuses it
-- instead of ignoring it.
local wick = require("wick")

describe("out= on module-level functions", function()
  wick.manual_seed(11)

  it("writes the result into out, in place, and returns out", function()
    local a, b = wick.randn(3, 4), wick.randn(4, 5)
    local c = wick.full({ 3, 5 }, 7)
    local r = wick.mm(a, b, { out = c })
    assert.is_true(rawequal(r, c))
    assert.is_true(c:equal(a:mm(b)))
    -- out's own memory: a view of a larger tensor sees the write
    local whole = wick.zeros(6)
    local part = whole[{ { 2, 4 } }]
    wick.add(wick.ones(3), 2, { out = part })
    assert.are.same({ 0, 3, 3, 3, 0, 0 }, whole:totable())
  end)

  it("keeps the function's other options", function()
    local x = wick.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })
    local out = wick.empty(2)
    wick.sum(x, { dim = 2, out = out })
    assert.are.same({ 6, 15 }, out:totable())
    wick.sum(x, 1, { out = wick.empty(0) })
    assert.are.same({ 5, 7, 9 }, wick.sum(x, 1):totable())
  end)

  it("gives an empty out the result's shape, and converts to out's dtype", function()
    local e = wick.empty(0)
    wick.cat({ wick.ones(2), wick.zeros(2) }, { out = e })
    assert.are.same({ 1, 1, 0, 0 }, e:totable())
    local d = wick.empty(2, 2, { dtype = "float64" })
    wick.mm(wick.eye(2), wick.full({ 2, 2 }, 0.1), { out = d })
    assert.are.equal("float64", d.dtype)
    local want = wick.full({ 2, 2 }, 0.1):to("float64") -- float32's 0.1, widened exactly
    assert.is_true(d:equal(want))
  end)

  it("refuses an out that cannot take the result, at the caller's line", function()
    local a, b = wick.randn(3, 4), wick.randn(4, 5)
    local function fails(pattern, f, ...)
      local ok, err = pcall(f, ...)
      assert.is_false(ok)
      assert.matches("out_spec.lua:%d+: .-" .. pattern, err)
    end
    fails("wick.mm: out has shape %[2, 2%] and the result %[3, 5%]", function() wick.mm(a, b, { out = wick.empty(2, 2) }) end)
    fails("result type float32 can't be cast to the desired output type int64",
      function() wick.mm(a, b, { out = wick.empty(3, 5, { dtype = "int64" }) }) end)
    fails("don't support automatic differentiation",
      function() wick.mm(a:clone():requires_grad_(), b, { out = wick.empty(3, 5) }) end)
    fails("wick.view: unexpected option 'out'", function() wick.view(a, 12, { out = wick.empty(12) }) end)
    fails("wick.sort: out= with several results", function() wick.sort(wick.ones(4), { out = wick.empty(4) }) end)
    fails("wick.split: its result is not a tensor", function() wick.split(wick.ones(4), 2, { out = wick.empty(4) }) end)
    fails("add: expected a tensor for argument 'out', got 3", function() wick.add(a, 1, { out = 3 }) end)
  end)
end)

describe("the factories' out= (torch.rand(2, 2, out=c))", function()
  it("makes the values in out's dtype and device and writes them into out", function()
    local c = wick.zeros(2, 2, { dtype = "float64" })
    local r = wick.rand(2, 2, { out = c })
    assert.is_true(rawequal(r, c))
    assert.are.equal("float64", c.dtype)
    assert.is_true(c:min():item() >= 0 and c:max():item() < 1 and c:sum():item() > 0)
    assert.are.same({ { 1, 0 }, { 0, 1 } }, wick.eye(2, { out = c }):totable())
    assert.are.same({ { 7, 7 }, { 7, 7 } }, wick.full({ 2, 2 }, 7, { out = c }):totable())
    assert.are.same({ { 0, 0 }, { 0, 0 } }, wick.zeros({ size = { 2, 2 }, out = c }):totable())
    local e = wick.empty(0, { dtype = "int64" })
    assert.are.same({ 0, 1, 2 }, wick.arange(3, { out = e }):totable())
    assert.are.equal("int64", e.dtype)
    assert.has_error(function() wick.ones(3, { out = c }) end)
  end)
end)

