-- F.linear on inputs of 3 or more dims folds the batch dims into the rows of one
-- product (as PyTorch does): the same values and gradients as x:matmul(W:t()) + b,
-- and the weight's gradient in the weight's own (contiguous) layout.
local wick = require("wick")
local F = wick.nn.functional
local F64 = { dtype = "float64" }

local function max_diff(a, b) return (a - b):abs():max():item() end

local function check(xshape, with_bias, transpose_x)
  local x0 = wick.randn(xshape, F64)
  if transpose_x then x0 = x0:transpose(1, 2) end -- a strided input
  local n_in = x0:size(x0:dim())
  local w0, b0 = wick.randn({ 5, n_in }, F64), with_bias and wick.randn({ 5 }, F64) or nil
  local function leaves() return x0:clone():requires_grad_(true), w0:clone():requires_grad_(true),
      b0 and b0:clone():requires_grad_(true) end
  local x, w, b = leaves()
  if transpose_x then x = x0:clone():requires_grad_(true) end
  local y = F.linear(x, w, b)
  local r = wick.randn(y:size(), F64)
  local l1 = (y * r):sum()
  l1:backward()
  local x2, w2, b2 = leaves()
  if transpose_x then x2 = x0:clone():requires_grad_(true) end
  local y2 = x2:matmul(w2:t())
  if b2 then y2 = y2 + b2 end
  local l2 = (y2 * r):sum()
  l2:backward()
  assert.are.same(y2:size(), y:size())
  assert.is_true(max_diff(y, y2) < 1e-12)
  assert.is_true(max_diff(x.grad, x2.grad) < 1e-12)
  assert.is_true(max_diff(w.grad, w2.grad) < 1e-12)
  assert.is_true(w.grad:is_contiguous())
  if b then assert.is_true(max_diff(b.grad, b2.grad) < 1e-12) end
end

describe("F.linear over batch dims", function()
  it("matches matmul with the transposed weight, values and gradients", function()
    check({ 3, 4, 7 }, true)
    check({ 3, 4, 7 }, false)
    check({ 2, 3, 4, 6 }, true)
    check({ 4, 3, 7 }, true, true)
  end)
  it("a transposed right operand (copied to its plain layout for many rows) gives the plain product", function()
    for _, dtype in ipairs({ "float32", "float64" }) do
      for _, case in ipairs({ { 63, 40, 24 }, { 64, 40, 24 }, { 200, 40, 24 }, { 70, 37, 29 }, { 65, 16, 17 } }) do
        local m, n, k = case[1], case[2], case[3] -- sizes off multiples of 8 take the copy's edge loop
        local a = wick.randn({ m, k }, { dtype = dtype })
        local w = wick.randn({ n, k }, { dtype = dtype })
        local got = a:mm(w:t())
        -- the reference: sums of products element by element in double
        local A, W = a:double(), w:double()
        local want = (A:unsqueeze(2) * W:unsqueeze(1)):sum(3)
        assert.are.same({ m, n }, got:size())
        assert.is_true(max_diff(got:double(), want) < (dtype == "float64" and 1e-12 or 1e-4))
        -- addmm with beta accumulates into the broadcast input
        local bias = wick.randn({ n }, { dtype = dtype })
        local y = wick.addmm(bias, a, w:t())
        assert.is_true(max_diff(y:double(), want + bias:double()) < (dtype == "float64" and 1e-12 or 1e-4))
      end
    end
  end)
  it("keeps empty batches and the size-mismatch error", function()
    local y = F.linear(wick.randn(2, 0, 4), wick.randn(6, 4))
    assert.are.same({ 2, 0, 6 }, y:size())
    assert.has_error(function() F.linear(wick.randn(2, 3, 4), wick.randn(6, 3)) end)
  end)
end)
