-- The engine adds gradients in place into the ones it alone holds (a slice's
-- gradient into its slot of the input's gradient, a second gradient into the
-- first): the results are those of the composed rule, and a gradient anything
-- else can see (a leaf's .grad, a tensor the user passed, one shared by two
-- inputs) is never written into.
local wick = require("wick")
local F64 = { dtype = "float64" }

local function max_diff(a, b) return (a - b):abs():max():item() end

describe("in-place gradient accumulation in backward", function()
  it("split/narrow/select gradients land in their slots (all used, some used, repeated)", function()
    local x0 = wick.randn({ 4, 9 }, F64)
    local r = wick.randn({ 4, 3 }, F64)
    local x = x0:clone():requires_grad_(true)
    local a, b, c = unpack(x:split(3, 2))
    local y = (a * r):sum() + (b * b):sum() + (c * 2 * r):sum() + (x:select(2, 1) * 5):sum() + (x:narrow(2, 2, 3) * 3):sum()
    y:backward()
    -- the same by hand
    local want = wick.zeros({ 4, 9 }, F64)
    want:narrow(2, 1, 3):add_(r)
    want:narrow(2, 4, 3):add_(x0:narrow(2, 4, 3) * 2)
    want:narrow(2, 7, 3):add_(r * 2)
    want:select(2, 1):add_(5)
    want:narrow(2, 2, 3):add_(3)
    assert.is_true(max_diff(x.grad, want) < 1e-12)
    -- only one slice used: the rest of the gradient is zero
    local z = x0:clone():requires_grad_(true)
    local _, m = unpack(z:split(3, 2))
    m:sum():backward()
    assert.are.equal(12, z.grad:sum():item())
    assert.are.equal(0, z.grad:narrow(2, 1, 3):abs():sum():item())
  end)

  it("never writes into a gradient the caller passed or a leaf's existing .grad", function()
    local x = wick.randn({ 3, 4 }, F64):requires_grad_(true)
    local g = wick.ones({ 3, 4 }, F64)
    local y = x * 1
    local s = y + y -- two gradients meet at y's node
    s:backward(g)
    assert.are.equal(12, g:sum():item())
    local first = x.grad
    local before = first:clone()
    local y2 = x * 1
    y2:backward(g)
    assert.is_true(max_diff(x.grad, before + 1) < 1e-12)
    assert.are.equal(12, g:sum():item())
  end)
  it("index_select/embedding backward with a strided gradient counts each repeated index", function()
    local w = wick.randn({ 5, 3 }, F64):requires_grad_(true)
    local idx = wick.tensor({ { 1, 3, 3 }, { 5, 1, 3 } }, { dtype = "int64" })
    wick.nn.functional.embedding(idx, w):sum():backward() -- the gradient is an expanded scalar
    local want = wick.tensor({ 2, 0, 3, 0, 1 }, F64):unsqueeze(2):expand(5, 3)
    assert.is_true(max_diff(w.grad, want) == 0)
    local v = wick.randn({ 4, 6 }, F64):requires_grad_(true)
    local r = wick.randn({ 3, 4 }, F64)
    local y = v:index_select(2, wick.tensor({ 2, 2, 6 }, { dtype = "int64" }))
    local l = (y * r:t()):sum() -- a transposed (strided) gradient
    l:backward()
    local rt = r:t()
    local want2 = wick.zeros({ 4, 6 }, F64)
    want2:select(2, 2):add_(rt:select(2, 1) + rt:select(2, 2))
    want2:select(2, 6):add_(rt:select(2, 3))
    assert.is_true(max_diff(v.grad, want2) < 1e-12)
  end)
end)

describe("in-place ops on a tracked tensor that detached tensors share", function()
  it("write under t:detach() and t.data (values only, as in PyTorch), whether or not they were collected", function()
    local w = wick.ones(3, F64):requires_grad_()
    local y = w * 2
    local c = y:detach():clone() -- the detached alias is garbage, but alive until collected
    local d = y.data
    y:div_(4)
    assert.are.same({ 2, 2, 2 }, c:totable())
    assert.are.same({ 0.5, 0.5, 0.5 }, d:totable()) -- d shares y's values
    y:sum():backward()
    assert.are.same({ 0.5, 0.5, 0.5 }, w.grad:totable())
  end)

  it("remake a live tracked view's history; a changed saved output raises at backward", function()
    local w = wick.ones(3, F64):requires_grad_()
    local y = w * 2
    local v = y:view(3)
    y:div_(2) -- PyTorch's numbers: v sees the division, and its gradient goes through it
    assert.are.same({ 1, 1, 1 }, v:totable())
    ;(v * wick.tensor({ 1, 2, 3 }, F64)):sum():backward()
    assert.are.same({ 1, 2, 3 }, w.grad:totable())
    w.grad = nil
    local e = w:exp() -- saves its output for backward: PyTorch allows the write and refuses the backward
    e:mul_(2)
    assert.are.same({ 2 * math.exp(1), 2 * math.exp(1), 2 * math.exp(1) }, e:detach():totable())
    assert.has_error(function() e:sum():backward() end)
    -- once the detached alias is gone from the storage (set_ to other data), it counts no more
    local z = w * 3
    local a = z:detach()
    a:set_(wick.zeros(3, F64))
    local view = z:view(3)
    z:add_(1)
    assert.are.same({ 4, 4, 4 }, view:totable())
  end)
end)
