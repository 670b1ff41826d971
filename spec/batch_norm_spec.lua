-- F.batch_norm / nn.BatchNorm*d on the fused C op (wick_batch_norm): values and
-- gradients against the composed formula in float64 (mean and biased variance
-- over every dim but the channel one), float32 within float32's rounding, the
-- half types computed in float32, running statistics of another dtype, and
-- the errors. nn_spec.lua checks PyTorch's own numbers on small cases.
local wick = require("wick")
local support = require("spec.support")
local F = wick.nn.functional

-- the composed reference, float64
local function reference(x, w, b, eps)
  local c = x:size(2)
  local flat = x:transpose(1, 2):reshape(c, -1)
  local shape = { 1, c }
  for i = 3, x:dim() do shape[i] = 1 end
  local mean, var = flat:mean(2):view(shape), flat:var(2, { unbiased = false }):view(shape)
  return (x - mean) / (var + eps):sqrt() * w:view(shape) + b:view(shape)
end

local function rel_err(a, r)
  return (a:to("float64") - r):abs():max():item() / (r:abs():max():item() + 1e-300)
end

local function leaf(t, dtype) return t:to(dtype):clone():requires_grad_() end

describe("batch_norm (fused)", function()
  for _, case in ipairs({ { 16, 8, 7, 7 }, { 32, 16, 1, 1 }, { 5, 3 }, { 4, 3, 5 }, { 2, 3, 2, 2, 2 } }) do
    it(("training: values and gradients of x, weight and bias, shape %s"):format(table.concat(case, "x")), function()
      wick.manual_seed(7)
      local c = case[2]
      local x64 = (wick.randn(case) * 3 + 1):to("float64")
      local w64, b64 = wick.randn(c):to("float64"), wick.randn(c):to("float64")
      local g64 = wick.randn(case):to("float64")
      local xr, wr, br = leaf(x64, "float64"), leaf(w64, "float64"), leaf(b64, "float64")
      local yr = reference(xr, wr, br, 1e-5)
      local _ = (yr * g64):sum():backward()
      for _, dt in ipairs({ "float64", "float32" }) do
        local tol = dt == "float64" and 1e-12 or 2e-6
        local x, w, b = leaf(x64, dt), leaf(w64, dt), leaf(b64, dt)
        local rm, rv = wick.zeros(c, { dtype = dt }), wick.ones(c, { dtype = dt })
        local y = F.batch_norm(x, rm, rv, w, b, true, 0.1, 1e-5)
        assert.are.equal("NativeBatchNormBackward", tostring(y.grad_fn))
        local _ = (y * g64:to(dt)):sum():backward()
        for name, pair in pairs({ y = { y, yr }, gx = { x.grad, xr.grad }, gw = { w.grad, wr.grad }, gb = { b.grad, br.grad } }) do
          local e = rel_err(pair[1], pair[2])
          assert(e < tol, ("%s %s: relative error %g"):format(dt, name, e))
        end
        -- running statistics: (1 - m) r + m stat, the variance unbiased
        local flat = x64:transpose(1, 2):reshape(c, -1)
        local n = flat:size(2)
        assert(rel_err(rm, flat:mean(2) * 0.1) < tol)
        assert(rel_err(rv, flat:var(2, { unbiased = false }) * (0.1 * n / (n - 1)) + 0.9) < tol)
      end
    end)
  end

  it("eval mode: the running statistics normalise, gradients flow through them as constants", function()
    local x = leaf(wick.randn(6, 4, 3), "float64")
    local w, b = leaf(wick.randn(4), "float64"), leaf(wick.randn(4), "float64")
    local rm, rv = wick.randn(4):to("float64"), (wick.rand(4) + 0.5):to("float64")
    support.gradcheck(function(xx, ww, bb) return F.batch_norm(xx, rm, rv, ww, bb, false, 0.1, 1e-5) end, { x, w, b })
    local y = F.batch_norm(x, rm, rv, w, b, false, 0.1, 1e-5)
    local shape = { 1, 4, 1 }
    local expected = (x - rm:view(shape)) / (rv:view(shape) + 1e-5):sqrt() * w:view(shape) + b:view(shape)
    assert(rel_err(y, expected) < 1e-12)
  end)

  it("training gradients match central differences, with and without affine parameters", function()
    local x = leaf(wick.randn(5, 3, 2), "float64")
    local w, b = leaf(wick.randn(3), "float64"), leaf(wick.randn(3), "float64")
    support.gradcheck(function(xx, ww, bb) return F.batch_norm(xx, nil, nil, ww, bb, true, 0.1, 1e-5) end, { x, w, b })
    support.gradcheck(function(xx) return F.batch_norm(xx, nil, nil, nil, nil, true, 0.1, 1e-5) end, { x })
  end)

  it("half inputs compute in float32 and keep their dtype; a float64 input into float32 parameters is refused", function()
    for _, dt in ipairs({ "bfloat16", "float16" }) do
      local x = wick.randn(8, 3, 4):to(dt)
      local y = F.batch_norm(x, nil, nil, nil, nil, true, 0.1, 1e-5)
      assert.are.equal(dt, y.dtype)
      local r = reference(x:to("float64"), wick.ones(3, { dtype = "float64" }), wick.zeros(3, { dtype = "float64" }), 1e-5)
      assert(rel_err(y, r) < 2e-2)
    end
    local bn = wick.nn.BatchNorm1d(3)
    local y = bn(wick.randn(8, 3):to("bfloat16")) -- (PyTorch's one mix: a half input, float32 parameters)
    assert.are.equal("bfloat16", y.dtype)
    assert.are.equal("float32", bn.running_mean.dtype)
    -- as PyTorch's "mixed dtype (CPU)" errors, in training and in eval (TabNet's float32 batch into a float64 model)
    support.assert_error_has(function() return bn(wick.randn(8, 3):to("float64")) end,
      "batch_norm: expected weight of dtype float64 (the input's), but got float32")
    bn:double():eval()
    support.assert_error_has(function() return bn(wick.randn(8, 3)) end,
      "batch_norm: expected weight of dtype float32 (the input's), but got float64")
    support.assert_error_has(function() return wick.nn.InstanceNorm1d(3, { affine = true }):double()(wick.randn(2, 3, 5)) end,
      "expected weight of dtype float32")
    support.assert_error_has(function() return wick.nn.GroupNorm(1, 3):double()(wick.randn(4, 3)) end,
      "group_norm: expected weight of dtype float32 (the input's), but got float64")
  end)

  it("errors name the argument", function()
    local x = wick.randn(4, 3, 2)
    support.assert_error_has(function() F.batch_norm(x, nil, nil, wick.ones(4), nil, true) end, "weight", "[3]")
    support.assert_error_has(function() F.batch_norm(x, wick.zeros(3), nil, nil, nil, true) end, "running_mean and running_var")
    support.assert_error_has(function() F.batch_norm(x, nil, nil, nil, nil, false) end, "required when not training")
    support.assert_error_has(function() F.batch_norm(wick.randn(1, 3), nil, nil, nil, nil, true) end, "more than 1 value per channel")
    support.assert_error_has(function() F.batch_norm(wick.ones(4, 3, { dtype = "int64" }), nil, nil, nil, nil, true) end, "floating")
    support.assert_error_has(function() F.batch_norm(wick.randn(3), nil, nil, nil, nil, true) end, "2-D")
  end)

  it("runs on the meta device (shapes only)", function()
    local y = F.batch_norm(wick.empty(4, 3, 2, { device = "meta" }), nil, nil, nil, nil, true)
    assert.are.same({ 4, 3, 2 }, y:size())
  end)
end)
