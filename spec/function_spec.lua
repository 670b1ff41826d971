-- wick.autograd.Function (PyTorch's torch.autograd.Function): forward and
-- backward written by hand, recorded as one node per output named after the
-- class; ctx's save_for_backward, saved_tensors, needs_input_grad,
-- mark_non_differentiable, set_materialize_grads; PyTorch 2's setup_context;
-- the errors of a bad backward; the node's state freed with the graph.
local wick = require("wick")
local support = require("spec.support")
local assert_error_has = support.assert_error_has
local function assert_close(expected, actual, tol) support.assert_close(actual:totable(), expected:totable(), tol) end

local F64 = { dtype = "float64" }
local function leaf(values) return wick.tensor(values, F64):requires_grad_() end

-- the tutorial's ("Learning PyTorch with Examples")
local LegendrePolynomial3 = wick.autograd.Function:extend("LegendrePolynomial3")
function LegendrePolynomial3.forward(ctx, input)
  ctx:save_for_backward(input)
  return 0.5 * (5 * input ^ 3 - 3 * input)
end
function LegendrePolynomial3.backward(ctx, grad_output)
  local input = ctx.saved_tensors[1]
  return grad_output * 1.5 * (5 * input ^ 2 - 1)
end

describe("autograd.Function", function()
  it("gives the gradients its backward computes, inside a larger graph", function()
    local x = leaf({ -1, -0.25, 0.5, 2 })
    local d = leaf({ 0.3 })
    local y = (LegendrePolynomial3.apply(x * d) * 2):sum()
    assert.equal("LegendrePolynomial3Backward", LegendrePolynomial3.apply(x * d).grad_fn)
    y:backward()
    -- the same by wick's own autograd
    local x2, d2 = leaf({ -1, -0.25, 0.5, 2 }), leaf({ 0.3 })
    local u = x2 * d2;
    ((0.5 * (5 * u ^ 3 - 3 * u)) * 2):sum():backward()
    assert_close(x2.grad, x.grad, 1e-12)
    assert_close(d2.grad, d.grad, 1e-12)
    -- Name:apply(...) is the same as Name.apply(...)
    assert.is_true(LegendrePolynomial3:apply(x):detach():equal(LegendrePolynomial3.apply(x):detach()))
  end)

  it("passes numbers through, and takes nil for their gradients", function()
    local Scale = wick.autograd.Function:extend("Scale")
    function Scale.forward(ctx, x, k)
      ctx.k = k
      return x * k
    end
    function Scale.backward(ctx, g) return g * ctx.k, nil end
    local x = leaf({ 1, 2 })
    Scale.apply(x, 3):sum():backward()
    assert_close(wick.tensor({ 3, 3 }, F64), x.grad, 0)
  end)

  it("says which inputs need a gradient, and skips those that need none", function()
    local Mul = wick.autograd.Function:extend("Mul")
    local seen
    function Mul.forward(ctx, a, b)
      ctx:save_for_backward(a, b)
      return a * b
    end
    function Mul.backward(ctx, g)
      seen = { ctx.needs_input_grad[1], ctx.needs_input_grad[2] }
      local a, b = ctx.saved_tensors[1], ctx.saved_tensors[2]
      return g * b, g * a
    end
    local a, b = leaf({ 1, 2 }), wick.tensor({ 5, 7 }, F64)
    Mul.apply(a, b):sum():backward()
    assert.are.same({ true, false }, seen)
    assert_close(b, a.grad, 0)
    assert.is_nil(b.grad)
  end)

  it("records nothing without an input that requires grad, or under no_grad", function()
    local x = wick.tensor({ 1, 2 }, F64)
    assert.is_nil(LegendrePolynomial3.apply(x).grad_fn)
    local w = leaf({ 1, 2 })
    local y = wick.no_grad(LegendrePolynomial3.apply, w)
    assert.is_nil(y.grad_fn)
    assert.is_false(y.requires_grad)
  end)

  it("handles several outputs: each output's gradient, zeros for the others", function()
    local Split = wick.autograd.Function:extend("Split")
    local got = {}
    function Split.forward(_, x) return x * 2, x * 3 end
    function Split.backward(_, g1, g2)
      got[#got + 1] = { g1 ~= nil and g1:sum():item(), g2 ~= nil and g2:sum():item() }
      return g1 * 2 + g2 * 3
    end
    local x = leaf({ 1, 2, 3 })
    local p, q = Split.apply(x)
    assert.equal("SplitBackward", p.grad_fn)
    assert.equal("SplitBackward", q.grad_fn);
    (p:sum() + q:sum() * 10):backward()
    assert_close(wick.tensor({ 32, 32, 32 }, F64), x.grad, 0)
    x.grad = nil
    -- only one output used
    local p2 = Split.apply(x)
    p2:sum():backward()
    assert_close(wick.tensor({ 2, 2, 2 }, F64), x.grad, 0)
    -- the output not used gets zeros by default, nil after set_materialize_grads(false)
    assert.are.same({ 3, 0 }, got[#got])
    local Lazy = wick.autograd.Function:extend("Lazy")
    function Lazy.forward(ctx, a)
      ctx:set_materialize_grads(false)
      return a * 1, a * 1
    end
    local saw_nil
    function Lazy.backward(_, g1, g2)
      saw_nil = g2 == nil
      return g1
    end
    local l1 = Lazy.apply(x)
    l1:sum():backward()
    assert.is_true(saw_nil)
  end)

  it("keeps non-differentiable outputs out of the graph", function()
    local Argmax = wick.autograd.Function:extend("MaxWithIndex")
    function Argmax.forward(ctx, x)
      local v, i = x:max(1)
      ctx:mark_non_differentiable(i)
      ctx:save_for_backward(i)
      ctx.n = x:size(1)
      return v, i
    end
    function Argmax.backward(ctx, g)
      local i = ctx.saved_tensors[1]
      local out = wick.zeros(ctx.n, F64)
      out[i:item()] = g:item()
      return out
    end
    local x = leaf({ 1, 5, 2 })
    local v, i = Argmax.apply(x)
    assert.is_nil(i.grad_fn)
    assert.equal("int64", i.dtype)
    v:backward()
    assert_close(wick.tensor({ 0, 1, 0 }, F64), x.grad, 0)
  end)

  it("never gives a grad_fn to an input it returns (a new tensor over the same data)", function()
    local Id = wick.autograd.Function:extend("Id")
    function Id.forward(_, x) return x end
    function Id.backward(_, g) return g * 5 end
    local x = leaf({ 1, 2 })
    local y = Id.apply(x)
    assert.is_nil(x.grad_fn)
    assert.equal("IdBackward", y.grad_fn)
    assert.is_false(rawequal(x, y))
    y:sum():backward()
    assert_close(wick.tensor({ 5, 5 }, F64), x.grad, 0)
  end)

  it("sums a gradient of a broadcast shape back to its input's", function()
    local Bias = wick.autograd.Function:extend("Bias")
    function Bias.forward(ctx, x, b)
      ctx.shape = x:size()
      return x + b
    end
    function Bias.backward(ctx, g) return g, g end -- b's gradient has x's shape
    local x, b = leaf({ { 1, 2, 3 }, { 4, 5, 6 } }), leaf({ { 0, 0, 0 } })
    Bias.apply(x, b):sum():backward()
    assert_close(wick.full({ 1, 3 }, 2, F64), b.grad, 0)
  end)

  it("takes PyTorch 2's forward without ctx plus setup_context", function()
    local Sq = wick.autograd.Function:extend("Sq")
    function Sq.forward(x) return x * x end
    function Sq.setup_context(ctx, inputs, output)
      ctx:save_for_backward(inputs[1])
      ctx.out = output
    end
    function Sq.backward(ctx, g) return 2 * ctx.saved_tensors[1] * g end
    local x = leaf({ 3, -1 })
    Sq.apply(x):sum():backward()
    assert_close(wick.tensor({ 6, -2 }, F64), x.grad, 0)
  end)

  it("runs again with retain_graph, and refuses a second backward without", function()
    local x = leaf({ 0.5 })
    local y = LegendrePolynomial3.apply(x):sum()
    y:backward({ retain_graph = true })
    local first = x.grad:clone()
    y:backward()
    assert_close(first * 2, x.grad, 1e-12)
  end)

  it("raises a bad backward's errors at the user's backward line", function()
    local Bad = wick.autograd.Function:extend("Bad")
    function Bad.forward(_, x) return x * 1 end
    local x = leaf({ 1, 2 })
    function Bad.backward(_, g) return wick.ones(3, F64) end
    assert_error_has(function() Bad.apply(x):sum():backward() end, "function_spec.lua:",
      "BadBackward returned an invalid gradient at index 1: got [3] but expected shape compatible with [2]")
    function Bad.backward(_, g) return 5 end
    assert_error_has(function() Bad.apply(x):sum():backward() end, "Bad.backward returned a number as the gradient of input 1")
    function Bad.backward() return end
    assert_error_has(function() Bad.apply(x):sum():backward() end,
      "Bad.backward returned an incorrect number of gradients (expected 1, got 0)")
    function Bad.backward(_, g) return g, g end
    assert_error_has(function() Bad.apply(x):sum():backward() end,
      "Bad.backward returned an incorrect number of gradients (expected 1, got 2)")
    function Bad.backward() error("boom in backward") end
    assert_error_has(function() Bad.apply(x):sum():backward() end, "function_spec.lua:",
      "backward: an autograd.Function's backward raised", "boom in backward")
    Bad.backward = nil
    assert_error_has(function() Bad.apply(x):sum():backward() end, "Bad.backward is not defined")
    -- and the graph machinery still works after each
    local y = LegendrePolynomial3.apply(x):sum()
    x.grad = nil
    y:backward()
    assert.is_not_nil(x.grad)
    -- a forward that is not there, and apply on the base class
    local None = wick.autograd.Function:extend("None")
    assert_error_has(function() None.apply(x) end, "None.forward is not defined")
    assert_error_has(function() wick.autograd.Function.apply(x) end, "Function:extend")
  end)

  it("frees its ctx and saved tensors with the graph", function()
    local Keep = wick.autograd.Function:extend("Keep")
    local ctxs = setmetatable({}, { __mode = "k" })
    function Keep.forward(ctx, x)
      ctxs[ctx] = true
      ctx:save_for_backward(x * 1)
      return x * 2
    end
    function Keep.backward(_, g) return g * 2 end
    local x = leaf({ 1 })
    for _ = 1, 20 do Keep.apply(x):sum():backward() end -- backward frees the graph
    for _ = 1, 20 do local _ = Keep.apply(x) end -- never differentiated: freed when collected
    collectgarbage()
    collectgarbage()
    Keep.apply(x):sum():backward() -- drops the state of freed nodes
    collectgarbage()
    collectgarbage()
    local left = 0
    for _ in pairs(ctxs) do left = left + 1 end
    assert.is_true(left <= 1, ("%d ctx tables still alive"):format(left))
  end)
end)
