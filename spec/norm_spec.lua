-- The fused transformer kernels: vectorised float32 math (exp, tanh, sigmoid,
-- erf, GELU in both forms) against float64 libm, F.gelu's approximate option,
-- layer_norm and cross entropy (one C op each way) against float64 references
-- composed from other ops, their gradients numerically, and edge cases.
local wick = require("wick")
local F = require("wick.nn.functional")
local nn = require("wick.nn")
local support = require("spec.support")
local gradcheck, assert_error_has, values_of = support.gradcheck, support.assert_error_has, support.values_of
local F64 = { dtype = "float64" }

-- float32 ulp of a (float64) value, the smallest denormal at least
local function ulp32(v)
  v = math.abs(v)
  if v < 2 ^ -126 then return 2 ^ -149 end
  local _, e = math.frexp(v) -- v = m 2^e, m in [0.5, 1)
  return 2 ^ (e - 24)
end

-- Inputs over the float range: powers of ten from 1e-45 to 3e38 of both signs,
-- a dense grid over [-110, 110], denormals, zeros, infinities, NaN, and the
-- edges of exp's range.
local function wide_inputs()
  local xs = { 0, -0.0, math.huge, -math.huge, 0 / 0, 1e-45, -1e-45, 1e-40, 3e-39, 1.2e-38,
    88.72283, 88.7228394, 89, -87.3, -87.5, -103.9, -104, -150, 0.625, -0.625, 1, -1, 4, -4, 3.9, 0.9999 }
  for e = -45, 38, 0.25 do
    xs[#xs + 1] = 10 ^ e
    xs[#xs + 1] = -(10 ^ e)
  end
  for i = -11000, 11000 do xs[#xs + 1] = i / 100 + 0.00137 end
  return xs
end

-- max error of a float32 op in ulp of the float64 reference, `scale_x` adding
-- ulps of |x| to the allowance (GELU's 1 + erf cancels for negative x, as in
-- PyTorch's own formula)
local function check_ulps(name, op32, op64, max_ulp, scale_x)
  local xs = wide_inputs()
  local x32 = wick.tensor(xs, { dtype = "float32" })
  local got = values_of(op32(x32):to("float64"))
  local want = values_of(op64(x32:to("float64")))
  local xv = values_of(x32:to("float64"))
  local strided = values_of(op32(wick.tensor(xs, { dtype = "float32" }):view(-1, 1):expand(#xs, 2):select(2, 1)):to("float64"))
  local worst = 0
  for i = 1, #xs do
    local g, w = got[i], want[i]
    if w ~= w then
      assert(g ~= g, ("%s(%.9g): expected NaN, got %.9g"):format(name, xv[i], g))
    elseif w == math.huge or w == -math.huge or math.abs(w) > 3.4028234663852886e38 then
      local w32 = w > 0 and math.huge or -math.huge
      assert(g == w32, ("%s(%.9g): expected %s, got %.9g"):format(name, xv[i], tostring(w32), g))
    else
      local allow = ulp32(w) + (scale_x and ulp32(xv[i]) or 0)
      local err = math.abs(g - w) / allow
      assert(err <= max_ulp, ("%s(%.9g): %.9g, float64 %.9g: %.2f ulp"):format(name, xv[i], g, w, err))
      if err > worst then worst = err end
    end
    -- the scalar loop of strided runs agrees with the vector one
    local s = strided[i]
    assert((s ~= s and g ~= g) or s == g or math.abs(s - g) <= 4 * (ulp32(w == w and w or 0) + ulp32(xv[i])),
      ("%s(%.9g): strided %.9g vs contiguous %.9g"):format(name, xv[i], s, g))
  end
  return worst
end

describe("vectorised float32 math", function()
  it("exp correctly rounded (half an ulp of libm's double) over the float range, overflow to inf, underflow through denormals to 0", function()
    check_ulps("exp", function(x) return x:exp() end, function(x) return x:exp() end, 0.5000001)
    local e = wick.tensor({ 88.7228317, 88.7228394, -103.97, -104.5, -87.5 }):exp():totable()
    assert.is_true(e[1] < math.huge and e[1] > 3.4e38)
    assert.are.equal(math.huge, e[2])
    assert.is_true(e[3] > 0 and e[3] < 1e-44) -- a denormal
    assert.are.equal(0, e[4])
    assert.is_true(math.abs(e[5] - math.exp(-87.5)) <= 2 * ulp32(math.exp(-87.5)))
  end)
  it("tanh, sigmoid, erf within a few ulp", function()
    check_ulps("tanh", function(x) return x:tanh() end, function(x) return x:tanh() end, 3)
    check_ulps("sigmoid", function(x) return x:sigmoid() end, function(x) return x:sigmoid() end, 3)
    check_ulps("erf", function(x) return x:erf() end, function(x) return x:erf() end, 4)
  end)
  it("GELU in both forms", function()
    check_ulps("gelu", function(x) return x:gelu() end, function(x) return x:gelu() end, 4, true)
    check_ulps("gelu_tanh", function(x) return F.gelu(x, { approximate = "tanh" }) end, function(x)
      return x * 0.5 * (((x + x * x * x * 0.044715) * math.sqrt(2 / math.pi)):tanh() + 1)
    end, 4, true)
  end)
  it("exact GELU keeps its relative accuracy for negative x, where it tends to 0", function()
    -- the bounds: 4 ulp of the result plus 4 ulp of x absolute (above, over the
    -- float range); relative to float64 GELU: 2e-6 on [-3, 0), 6e-6 on [-5, -3)
    -- (further out float64's own 1 + erf cancels too much to be the reference)
    local xs = {}
    for i = 1, 5000 do xs[i] = -i / 1000 + 0.000377 end
    local x32 = wick.tensor(xs, { dtype = "float32" })
    local got = values_of(x32:gelu():to("float64"))
    local want = values_of(x32:to("float64"):gelu())
    local xv = values_of(x32:to("float64"))
    for i = 1, #xs do
      local rel = math.abs(got[i] - want[i]) / math.abs(want[i])
      local bound = xv[i] >= -3 and 2e-6 or 6e-6
      assert(rel <= bound, ("gelu(%.9g): %.9g, float64 %.9g: relative error %.3g"):format(xv[i], got[i], want[i], rel))
    end
  end)
  it("exact GELU in the far tail: relative accuracy to x = -7.07, then 0 (|GELU| < 6e-12 there)", function()
    -- x Phi(x) with Phi(x) = erfc(z) / 2, z = -x / sqrt 2, from erfc's continued
    -- fraction in float64 (no cancellation; converged for z >= 3.5); 6e-6 as on
    -- [-5, -3) above (4.2e-6 measured without FMA, 3.1e-6 with)
    local function gelu_ref(x)
      local z = -x / math.sqrt(2)
      local f = z
      for k = 80, 1, -1 do f = z + (k / 2) / f end
      return x * 0.5 * math.exp(-z * z) / math.sqrt(math.pi) / f
    end
    local xs = {}
    for i = 1, 2200 do xs[i] = -5 - i / 1000 + 0.000213 end -- (-7.2, -5)
    local x32 = wick.tensor(xs, { dtype = "float32" })
    local got, xv = values_of(x32:gelu():to("float64")), values_of(x32:to("float64"))
    for i = 1, #xs do
      local want = gelu_ref(xv[i])
      if xv[i] > -7.0710678 then
        local rel = math.abs(got[i] - want) / math.abs(want)
        assert(rel <= 6e-6, ("gelu(%.9g): %.9g, reference %.9g: relative error %.3g"):format(xv[i], got[i], want, rel))
      elseif xv[i] < -7.0710679 then
        assert(got[i] == 0 and math.abs(want) < 6e-12, ("gelu(%.9g): %.9g, reference %.9g"):format(xv[i], got[i], want))
      end
    end
    -- the continued fraction itself against float64 GELU where that is still exact enough
    assert(math.abs(gelu_ref(-3.5) / values_of(wick.tensor({ -3.5 }, F64):gelu())[1] - 1) < 1e-10)
  end)
  it("lengths around the vector width", function()
    for n = 0, 40 do
      local x = (wick.arange(n, F64) - n / 2) * (12 / 41)
      support.assert_close(x:exp():totable(), x:to("float32"):exp():totable(), 1e-6)
      support.assert_close(x:gelu():totable(), x:to("float32"):gelu():totable(), 1e-6)
    end
  end)
end)

describe("gelu", function()
  it("takes approximate = 'none' or 'tanh' like PyTorch, and nn.GELU too", function()
    local x = (wick.arange(101, F64) - 50) / 10
    local ref = x * 0.5 * (((x + x * x * x * 0.044715) * math.sqrt(2 / math.pi)):tanh() + 1)
    support.assert_close(ref:totable(), F.gelu(x, { approximate = "tanh" }):totable(), 1e-14)
    support.assert_close(x:gelu():totable(), F.gelu(x, { approximate = "none" }):totable(), 0)
    support.assert_close(ref:totable(), nn.GELU({ approximate = "tanh" })(x):totable(), 1e-14)
    support.assert_close(ref:totable(), nn.GELU("tanh")(x):totable(), 1e-14)
    support.assert_close(ref:totable(), F.gelu(x, "tanh"):totable(), 1e-14)
    assert_error_has(function() F.gelu(x, "fast") end, "approximate")
    assert_error_has(function() F.gelu(x, { approximate = "fast" }) end, "approximate")
    assert_error_has(function() F.gelu(x, { approximat = "tanh" }) end, "approximat")
  end)
  it("gradients of both forms (float64 numerically; float32 fused against float64)", function()
    gradcheck(function(x) return x:gelu() end, { wick.randn(5, 7, F64) * 3 })
    gradcheck(function(x) return F.gelu(x, { approximate = "tanh" }) end, { wick.randn(5, 7, F64) * 3 })
    for _, form in ipairs({ "none", "tanh" }) do
      local x64 = (wick.randn(3, 37, F64) * 4):requires_grad_()
      local x32 = x64:detach():to("float32"):requires_grad_()
      F.gelu(x64, { approximate = form }):sum():backward()
      F.gelu(x32, { approximate = form }):sum():backward()
      support.assert_close(x64.grad:totable(), x32.grad:to("float64"):totable(), 1e-5)
    end
  end)
end)

-- layer_norm composed from float64 ops: the reference
local function ln_ref(x, nd, w, b, eps)
  local shape = x.shape
  local lead = {}
  for i = 1, x:dim() - nd do lead[i] = x:size(i) end
  lead[#lead + 1] = -1
  local flat = x:reshape(x:dim() - nd == 0 and { 1, -1 } or lead)
  local mean = flat:mean(-1, true)
  local var = flat:var(-1, { unbiased = false, keepdim = true })
  local y = ((flat - mean) / (var + (eps or 1e-5)):sqrt()):view(shape)
  if w then y = y * w end
  if b then y = y + b end
  return y
end

describe("layer_norm", function()
  it("matches a float64 reference, with and without weight and bias, any normalized_shape", function()
    for _, case in ipairs({ { { 4, 5 }, { 5 } }, { { 2, 3, 37 }, { 37 } }, { { 2, 3, 4 }, { 3, 4 } }, { { 6 }, { 6 } },
      { { 3, 1 }, { 1 } }, { { 5, 130 }, { 130 } } }) do
      local shape, ns = case[1], case[2]
      local x = wick.randn(shape, F64) * 3 + 1
      local w, b = wick.randn(ns, F64), wick.randn(ns, F64)
      for _, wb in ipairs({ { w, b }, { w, nil }, { nil, b }, { nil, nil } }) do
        local ref = ln_ref(x, #ns, wb[1], wb[2])
        support.assert_close(ref:totable(), F.layer_norm(x, ns, wb[1], wb[2]):totable(), 1e-12)
        local y32 = F.layer_norm(x:to("float32"), ns, wb[1] and wb[1]:to("float32"), wb[2] and wb[2]:to("float32"))
        assert.are.equal("float32", y32.dtype)
        support.assert_close(ref:totable(), y32:to("float64"):totable(), 1e-5)
      end
    end
  end)
  it("nn.LayerNorm, eps, bfloat16 and float16 inputs", function()
    local ln = nn.LayerNorm(8)
    local x = wick.randn(3, 8)
    support.assert_close(ln_ref(x:double(), 1):totable(), ln(x):double():totable(), 1e-5)
    local c = wick.full({ 2, 8 }, 3.0, F64)
    support.assert_close(wick.zeros(2, 8):totable(), F.layer_norm(c, { 8 }, nil, nil, 0.5):totable(), 0)
    for _, dt in ipairs({ "bfloat16", "float16" }) do
      local y = F.layer_norm(x:to(dt), { 8 })
      assert.are.equal(dt, y.dtype)
      support.assert_close(ln_ref(x:to(dt):double(), 1):totable(), y:double():totable(), 2e-2)
    end
  end)
  it("gradients of input, weight and bias numerically, and float32 against float64", function()
    gradcheck(function(x, w, b) return F.layer_norm(x, { 5 }, w, b) end,
      { wick.randn(3, 5, F64), wick.randn(5, F64), wick.randn(5, F64) })
    gradcheck(function(x, w) return F.layer_norm(x, { 2, 3 }, w) end, { wick.randn(2, 2, 3, F64), wick.randn(2, 3, F64) })
    gradcheck(function(x, b) return F.layer_norm(x, { 4 }, nil, b) end, { wick.randn(3, 4, F64), wick.randn(4, F64) })
    gradcheck(function(x) return F.layer_norm(x, { 4 }) end, { wick.randn(2, 4, F64) })
    local fixed = wick.randn(3, 4, F64)
    gradcheck(function(w, b) return F.layer_norm(fixed, { 4 }, w, b) end,
      { wick.randn(4, F64), wick.randn(4, F64) })
    -- float32 vector kernels, many rows (threads) and a tail
    local x64 = wick.randn(300, 77, F64):requires_grad_()
    local w64, b64 = wick.randn(77, F64):requires_grad_(), wick.randn(77, F64):requires_grad_()
    local x32, w32, b32 = x64:detach():float():requires_grad_(), w64:detach():float():requires_grad_(),
      b64:detach():float():requires_grad_()
    local gy = wick.randn(300, 77, F64);
    (F.layer_norm(x64, { 77 }, w64, b64) * gy):sum():backward()
    ;(F.layer_norm(x32, { 77 }, w32, b32) * gy:float()):sum():backward()
    support.assert_close(x64.grad:totable(), x32.grad:double():totable(), 1e-4)
    support.assert_close(w64.grad:totable(), w32.grad:double():totable(), 1e-4)
    support.assert_close(b64.grad:totable(), b32.grad:double():totable(), 1e-4)
    assert.are.equal("NativeLayerNormBackward", F.layer_norm(x32, { 77 }, w32, b32).grad_fn)
  end)
  it("empty inputs, and checks with PyTorch's texts", function()
    local e = wick.zeros(0, 4, F64):requires_grad_()
    local y = F.layer_norm(e, { 4 }, wick.ones(4, F64), wick.zeros(4, F64))
    assert.are.same({ 0, 4 }, support.shape_of(y))
    y:sum():backward()
    assert.are.same({ 0, 4 }, support.shape_of(e.grad))
    assert.are.same({ 3, 0 }, support.shape_of(F.layer_norm(wick.zeros(3, 0), { 0 })))
    assert_error_has(function() F.layer_norm(wick.zeros(2, 3), { 4 }) end,
      "Given normalized_shape=[4], expected input with shape [*, 4], but got input of size[2, 3]")
    assert_error_has(function() F.layer_norm(wick.zeros(3), { 1, 3 }) end, "normalized_shape of 2 dimension(s)")
    assert_error_has(function() F.layer_norm(wick.zeros(2, 3), { 3 }, wick.ones(4)) end, "weight")
    assert_error_has(function() F.layer_norm(wick.zeros(2, 3), { 3 }, wick.ones(3, F64)) end, "dtype")
    assert_error_has(function() F.layer_norm(wick.zeros(2, 3, { dtype = "int64" }), { 3 }) end, "floating")
  end)
end)

-- cross entropy composed from float64 ops (log_softmax, gather): the reference
local function ce_ref(x, t, opts)
  opts = opts or {}
  local logp = x:log_softmax(2)
  local n, c = x:size(1), x:size(2)
  local ignore = opts.ignore_index == nil and -100 or opts.ignore_index
  local w = opts.weight and values_of(opts.weight)
  local eps = opts.label_smoothing or 0
  local lp, tv = logp:totable(), values_of(t)
  local losses, total, den = {}, 0, 0
  for i = 1, n do
    local ti = tv[i]
    if ti == ignore then losses[i] = 0
    else
      local wt = w and w[ti] or 1
      local smooth = 0
      for k = 1, c do smooth = smooth - (w and w[k] or 1) * lp[i][k] end
      losses[i] = -(1 - eps) * wt * lp[i][ti] + eps / c * smooth
      den = den + wt
    end
    total = total + losses[i]
  end
  local r = opts.reduction or "mean"
  if r == "none" then return losses end
  if r == "sum" then return total end
  return total / den
end

describe("cross_entropy with class indices (fused)", function()
  it("matches a float64 reference with weight, ignore_index, label_smoothing and every reduction", function()
    local x = wick.randn(9, 7, F64) * 3
    local t = support.I({ 1, 7, 3, 3, 2, 5, 6, 7, 4 })
    local w = wick.rand(7, F64) + 0.5
    for _, opts in ipairs({ {}, { reduction = "sum" }, { reduction = "none" }, { weight = w },
      { ignore_index = 3 }, { weight = w, ignore_index = 7, reduction = "sum" }, { label_smoothing = 0.1 },
      { label_smoothing = 0.2, weight = w, ignore_index = 3 }, { label_smoothing = 1, reduction = "none" },
      { ignore_index = false } }) do
      local got = F.cross_entropy(x, t, opts)
      local want = ce_ref(x, t, opts)
      support.assert_close(want, type(want) == "table" and got:totable() or got:item(), 1e-12)
      local got32 = F.cross_entropy(x:float(), t, { weight = opts.weight and opts.weight:float(),
        ignore_index = opts.ignore_index, label_smoothing = opts.label_smoothing, reduction = opts.reduction })
      assert.are.equal("float32", got32.dtype)
      support.assert_close(want, type(want) == "table" and got32:double():totable() or got32:item(), 1e-5)
    end
    assert.are.same({}, support.shape_of(F.cross_entropy(x, t)))
    assert.are.same({ 9 }, support.shape_of(F.cross_entropy(x, t, { reduction = "none" })))
  end)
  it("float32 rows of a vector or more (blocks of rows share one vector log) match float64", function()
    for _, c in ipairs({ 16, 17, 65, 130 }) do
      local x = wick.randn(37, c, F64) * 3
      local t = wick.randint(1, c + 1, { 37 })
      local w = wick.rand(c, F64) + 0.5
      for _, opts in ipairs({ { reduction = "none" }, { weight = w, reduction = "none" },
        { ignore_index = t[5]:item(), label_smoothing = 0.1, reduction = "none" }, {} }) do
        local want = ce_ref(x, t, opts)
        local got32 = F.cross_entropy(x:float(), t, { weight = opts.weight and opts.weight:float(),
          ignore_index = opts.ignore_index, label_smoothing = opts.label_smoothing, reduction = opts.reduction })
        support.assert_close(want, type(want) == "table" and got32:double():totable() or got32:item(), 1e-5)
      end
    end
  end)
  it("gradients numerically, and float32 against float64", function()
    local t = support.I({ 2, 1, 4, 4, 3 })
    local w = wick.rand(4, F64) + 0.5
    for _, opts in ipairs({ {}, { reduction = "sum" }, { reduction = "none" }, { weight = w }, { ignore_index = 4 },
      { label_smoothing = 0.3, weight = w, ignore_index = 1 }, { label_smoothing = 0.1, reduction = "none" } }) do
      gradcheck(function(x) return F.cross_entropy(x, t, opts) end, { wick.randn(5, 4, F64) })
    end
    local x64 = (wick.randn(200, 65, F64) * 2):requires_grad_()
    local x32 = x64:detach():float():requires_grad_()
    local tt = wick.randint(1, 66, { 200 })
    F.cross_entropy(x64, tt, { label_smoothing = 0.1 }):backward()
    F.cross_entropy(x32, tt, { label_smoothing = 0.1 }):backward()
    support.assert_close(x64.grad:totable(), x32.grad:double():totable(), 1e-6)
  end)
  it("edge cases: all ignored, huge and -inf logits, int32 targets, empty batch, bad targets", function()
    local x = wick.randn(3, 4, F64)
    local t = support.I({ 2, 2, 2 })
    local m = F.cross_entropy(x, t, { ignore_index = 2 }):item()
    assert.is_true(m ~= m) -- 0 / 0, like PyTorch
    assert.are.equal(0, F.cross_entropy(x, t, { ignore_index = 2, reduction = "sum" }):item())
    local xr = x:clone():requires_grad_()
    F.cross_entropy(xr, t, { ignore_index = 2, reduction = "sum" }):backward()
    support.assert_close(wick.zeros(3, 4):totable(), xr.grad:totable(), 0)
    local huge = wick.tensor({ { 1e30, 0, -1e30 }, { 30, 30, 0 } }, { dtype = "float32" })
    support.assert_close({ 0, math.log(2) }, F.cross_entropy(huge, support.I({ 1, 2 }), { reduction = "none" }):double():totable(), 1e-6)
    local ninf = wick.tensor({ { -math.huge, 0, 0 } }, { dtype = "float32" })
    support.assert_close(math.log(2), F.cross_entropy(ninf, support.I({ 2 })):item(), 1e-6)
    assert.are.equal(math.huge, F.cross_entropy(ninf, support.I({ 1 })):item())
    support.assert_close(F.cross_entropy(x, t):item(), F.cross_entropy(x, t:to("int32")):item(), 1e-15)
    local e = F.cross_entropy(wick.zeros(0, 4), wick.zeros(0, { dtype = "int64" }), { reduction = "sum" })
    assert.are.equal(0, e:item())
    assert_error_has(function() F.cross_entropy(x, support.I({ 1, 5, 2 })) end, "Target 5 is out of bounds")
    assert_error_has(function() F.cross_entropy(x, support.I({ 1, 0, 2 })) end, "Target 0 is out of bounds")
    assert_error_has(function() F.cross_entropy(x, t, { label_smoothing = 1.5 }) end, "label_smoothing")
    assert_error_has(function() F.cross_entropy(x, t, { reduction = "avg" }) end, "reduction")
    -- probability targets and [N, C, d] inputs keep the composed path
    local p = wick.rand(3, 4, F64)
    p = p / p:sum(2, true)
    support.assert_close(-(x:log_softmax(2) * p):sum(2):mean():item(), F.cross_entropy(x, p):item(), 1e-12)
  end)
end)

-- The CUDA kernels (src/cuda/cuda_norm.cu) against the CPU's; pending without a GPU.
describe("on CUDA", function()
  local function gpu_it(name, fn)
    it(name, function()
      if not wick.cuda.is_available() then return pending("needs a CUDA GPU: " .. name) end
      fn()
    end)
  end
  local function both(fn, inputs)
    local outs = {}
    for k, dev in ipairs({ "cpu", "cuda" }) do
      local leaves = {}
      for i, t in ipairs(inputs) do
        leaves[i] = t:to(dev):detach() -- a leaf on each device (t:to("cpu") is t itself)
        if t:is_floating_point() then leaves[i]:requires_grad_() end
      end
      local y = fn(unpack(leaves))
      local gy = wick.ones(y.shape, { dtype = y.dtype }):to(dev)
      y:backward(gy)
      local r = { y:to("cpu"):double():totable() }
      for i, l in ipairs(leaves) do if l.grad then r[#r + 1] = l.grad:to("cpu"):double():totable() end end
      outs[k] = r
    end
    for i = 1, #outs[1] do support.assert_close(outs[1][i], outs[2][i], 1e-5) end
  end
  gpu_it("layer_norm forward and backward", function()
    both(function(x, w, b) return F.layer_norm(x, { 37 }, w, b) end, { wick.randn(50, 37), wick.randn(37), wick.randn(37) })
    both(function(x) return F.layer_norm(x, { 2, 8 }) end, { wick.randn(3, 2, 8, F64) })
  end)
  gpu_it("cross entropy forward and backward, options", function()
    local t = wick.randint(1, 66, { 40 })
    t[3] = 7
    both(function(x) return F.cross_entropy(x, t:to(x.device), { ignore_index = 7, label_smoothing = 0.1 }) end,
      { wick.randn(40, 65) })
    both(function(x) return F.cross_entropy(x, t:to(x.device), { reduction = "none" }) end, { wick.randn(40, 65, F64) })
    assert_error_has(function() F.cross_entropy(wick.randn(2, 3):cuda(), support.I({ 1, 9 }):cuda()):item() end, "9")
  end)
  gpu_it("GELU backward, both forms", function()
    both(function(x) return F.gelu(x, { approximate = "tanh" }) end, { wick.randn(1000) * 3 })
    both(function(x) return F.gelu(x) end, { wick.randn(1000) * 3 })
  end)
end)
