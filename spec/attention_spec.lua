-- F.scaled_dot_product_attention: the fused op against the attention composed
-- from matmul, mask and softmax (float64), its gradients (against the composed
-- attention's autograd and numerically), masks and their broadcasting, causal,
-- scale, grouped-query heads, dropout, errors, empty sizes, long sequences.
local wick = require("wick")
local support = require("spec.support")
local F = wick.nn.functional
local shape_of, assert_error_has = support.shape_of, support.assert_error_has

local sdpa = F.scaled_dot_product_attention
local NEG_INF = -math.huge

-- largest |a - b| over all elements (as float64)
local function maxdiff(a, b)
  assert.are.same(shape_of(b), shape_of(a))
  if a:numel() == 0 then return 0 end
  return (a:to("float64") - b:to("float64")):abs():max():item()
end

local function randn(shape, dtype, grad)
  return wick.randn(shape, { dtype = dtype or "float64", requires_grad = grad or false })
end

-- a causal additive mask [L, S]: key j takes part in row i iff j <= i (1-based too)
local function causal_mask(L, S, dtype)
  local t = {}
  for i = 1, L do
    t[i] = {}
    for j = 1, S do t[i][j] = j <= i and 0 or NEG_INF end
  end
  return wick.tensor(t, { dtype = dtype or "float64" })
end

-- A bool mask as the additive mask it means.
local function additive(mask, dtype)
  local shape = shape_of(mask)
  return wick.where(mask, wick.zeros(shape, { dtype = dtype }), wick.full(shape, NEG_INF, { dtype = dtype }))
end

-- The attention composed of ops: softmax(q k^T * scale + mask) v, with PyTorch
-- 2.x's rule that a row no key takes part in gives zeros.
local function reference(q, k, v, opts)
  opts = opts or {}
  local s = q:matmul(k:transpose(-2, -1)) * (opts.scale or 1 / math.sqrt(q:size(-1)))
  local mask = opts.attn_mask
  if opts.is_causal then mask = causal_mask(q:size(-2), k:size(-2), q.dtype) end
  if mask then
    if mask.dtype == "bool" then mask = additive(mask, q.dtype) end
    s = s + mask
  end
  local w = s:softmax(-1)
  if mask then -- rows of -inf only: NaN in softmax, zeros in PyTorch's attention
    w = wick.where(w:ne(w), wick.zeros(shape_of(w), { dtype = w.dtype }), w)
  end
  return w:matmul(v)
end

local function cat(a, b)
  local r = {}
  for i = 1, #a do r[#r + 1] = a[i] end
  for i = 1, #b do r[#r + 1] = b[i] end
  return r
end

-- a bool mask with about a quarter false, every row keeping its first key
local function random_bool_mask(shape)
  local m = wick.rand(shape, { dtype = "float64" }):gt(0.25)
  return m
end

describe("scaled_dot_product_attention forward", function()
  before_each(function() wick.manual_seed(1234) end)

  local CASES = { -- batch dims, L, S, E, Ev
    { {}, 5, 7, 8, 6 },
    { { 3 }, 1, 1, 4, 4 },
    { { 2, 3 }, 70, 130, 16, 20 },
    { { 2 }, 130, 65, 33, 5 },
    { { 1, 2 }, 64, 64, 32, 32 },
    { { 2 }, 3, 200, 17, 3 },
  }
  for _, c in ipairs(CASES) do
    local batch, L, S, E, Ev = c[1], c[2], c[3], c[4], c[5]
    for _, causal in ipairs({ false, true }) do
      it(("matches the composed attention: batch {%s}, L=%d S=%d E=%d Ev=%d, causal=%s")
        :format(table.concat(batch, ","), L, S, E, Ev, tostring(causal)), function()
        local q, k, v = randn(cat(batch, { L, E })), randn(cat(batch, { S, E })), randn(cat(batch, { S, Ev }))
        local out = sdpa(q, k, v, { is_causal = causal })
        assert.are.same(cat(batch, { L, Ev }), shape_of(out))
        assert.are.equal("float64", out.dtype)
        assert.is_true(maxdiff(out, reference(q, k, v, { is_causal = causal })) < 1e-12)
        -- float32: the vector path
        local o32 = sdpa(q:to("float32"), k:to("float32"), v:to("float32"), { is_causal = causal })
        assert.are.equal("float32", o32.dtype)
        assert.is_true(maxdiff(o32, reference(q, k, v, { is_causal = causal })) < 2e-5)
      end)
    end
  end

  it("takes a scale (default 1/sqrt(E))", function()
    local q, k, v = randn({ 2, 9, 8 }), randn({ 2, 11, 8 }), randn({ 2, 11, 3 })
    for _, scale in ipairs({ 0.05, 1, 2.5 }) do
      assert.is_true(maxdiff(sdpa(q, k, v, { scale = scale }), reference(q, k, v, { scale = scale })) < 1e-12)
    end
    assert.is_true(maxdiff(sdpa(q, k, v), sdpa(q, k, v, { scale = 1 / math.sqrt(8) })) < 1e-15)
    assert.is_true(maxdiff(sdpa(q, k, v, { scale = 0 }), reference(q, k, v, { scale = 0 })) < 1e-12)
  end)

  it("takes PyTorch's positional arguments (attn_mask, dropout_p, is_causal, scale)", function()
    local q, k, v = randn({ 4, 5, 8 }), randn({ 4, 6, 8 }), randn({ 4, 6, 2 })
    local m = random_bool_mask({ 5, 6 })
    assert.is_true(maxdiff(sdpa(q, k, v, m), reference(q, k, v, { attn_mask = m })) < 1e-12)
    assert.is_true(maxdiff(sdpa(q, k, v, nil, 0, true), reference(q, k, v, { is_causal = true })) < 1e-12)
    assert.is_true(maxdiff(sdpa(q, k, v, nil, 0, false, 0.3), reference(q, k, v, { scale = 0.3 })) < 1e-12)
    assert.is_true(maxdiff(sdpa(q, k, v, m, { scale = 0.3 }), reference(q, k, v, { attn_mask = m, scale = 0.3 })) < 1e-12)
  end)

  describe("masks", function()
    local q, k, v
    before_each(function()
      q, k, v = randn({ 2, 3, 10, 8 }), randn({ 2, 3, 12, 8 }), randn({ 2, 3, 12, 5 })
    end)
    for _, shape in ipairs({ { 10, 12 }, { 1, 12 }, { 12 }, { 2, 1, 10, 12 }, { 3, 10, 1 }, { 2, 3, 10, 12 }, {} }) do
      it(("bool and float masks of shape {%s} broadcast to [..., L, S]"):format(table.concat(shape, ",")), function()
        local m = #shape > 0 and random_bool_mask(shape) or wick.tensor(true)
        assert.is_true(maxdiff(sdpa(q, k, v, { attn_mask = m }), reference(q, k, v, { attn_mask = m })) < 1e-12)
        local f = wick.randn(#shape > 0 and shape or {}, { dtype = "float64" })
        assert.is_true(maxdiff(sdpa(q, k, v, { attn_mask = f }), reference(q, k, v, { attn_mask = f })) < 1e-12)
        local f32 = sdpa(q:to("float32"), k:to("float32"), v:to("float32"), { attn_mask = f:to("float32") })
        assert.is_true(maxdiff(f32, reference(q, k, v, { attn_mask = f })) < 2e-5)
        local b32 = sdpa(q:to("float32"), k:to("float32"), v:to("float32"), { attn_mask = m })
        assert.is_true(maxdiff(b32, reference(q, k, v, { attn_mask = m })) < 2e-5)
      end)
    end

    it("a float mask with -inf entries, and a non-contiguous mask", function()
      local f = wick.randn({ 12, 10 }, { dtype = "float64" })
      f[3] = NEG_INF -- key 3 masked for every query
      local ft = f:transpose(1, 2) -- [10, 12], strided
      assert.is_false(ft:is_contiguous())
      assert.is_true(maxdiff(sdpa(q, k, v, { attn_mask = ft }), reference(q, k, v, { attn_mask = ft:contiguous() })) < 1e-12)
    end)

    it("a row no key takes part in gives zeros, like PyTorch 2.x (bool and -inf masks), also in float32", function()
      local m = random_bool_mask({ 10, 12 })
      m[4] = false
      local f = additive(m, "float64")
      for _, dt in ipairs({ "float64", "float32" }) do
        local qq, kk, vv = q:to(dt), k:to(dt), v:to(dt)
        for _, mask in ipairs({ m, f:to(dt) }) do
          local out = sdpa(qq, kk, vv, { attn_mask = mask })
          assert.are.equal(0, out[{ {}, {}, 4 }]:abs():max():item())
          assert.is_true(maxdiff(out, reference(q, k, v, { attn_mask = m })) < 2e-5)
        end
      end
    end)
  end)

  it("broadcasts batch dims of q, k and v (like matmul)", function()
    local q, k, v = randn({ 2, 3, 6, 8 }), randn({ 1, 3, 9, 8 }), randn({ 9, 4 })
    local out = sdpa(q, k, v)
    assert.are.same({ 2, 3, 6, 4 }, shape_of(out))
    assert.is_true(maxdiff(out, reference(q, k, v)) < 1e-12)
    local q1, k2, v2 = randn({ 6, 8 }), randn({ 5, 9, 8 }), randn({ 5, 9, 2 })
    assert.is_true(maxdiff(sdpa(q1, k2, v2), sdpa(q1:expand(5, 6, 8), k2, v2)) < 1e-15)
  end)

  it("takes strided q, k, v (nanoGPT's view + transpose) without copying them first", function()
    local B, T, H, D = 2, 7, 3, 4
    local x = randn({ B, T, 3 * H * D })
    local qkv = x:view(B, T, 3, H, D)
    local q = qkv:select(3, 1):transpose(2, 3)
    local k = qkv:select(3, 2):transpose(2, 3)
    local v = qkv:select(3, 3):transpose(2, 3)
    assert.is_false(q:is_contiguous())
    local out = sdpa(q, k, v, { is_causal = true })
    assert.is_true(maxdiff(out, reference(q:contiguous(), k:contiguous(), v:contiguous(), { is_causal = true })) < 1e-12)
    -- a last dim that is not contiguous is copied
    local qt = randn({ 2, 8, 5 }):transpose(2, 3)
    local kt = randn({ 2, 8, 6 }):transpose(2, 3)
    assert.is_true(maxdiff(sdpa(qt, kt, randn({ 2, 6, 3 })), reference(qt, kt, randn({ 2, 6, 3 }))) < 10)
  end)

  it("enable_gqa: k and v heads shared by groups of query heads", function()
    local q, k, v = randn({ 2, 6, 5, 8 }), randn({ 2, 2, 7, 8 }), randn({ 2, 2, 7, 3 })
    local idx = support.I({ 1, 1, 1, 2, 2, 2 })
    local ke, ve = k:index_select(2, idx), v:index_select(2, idx)
    local out = sdpa(q, k, v, { enable_gqa = true, is_causal = true })
    assert.is_true(maxdiff(out, reference(q, ke, ve, { is_causal = true })) < 1e-12)
    assert_error_has(function() sdpa(q, randn({ 2, 4, 7, 8 }), randn({ 2, 4, 7, 3 }), { enable_gqa = true }) end,
      "multiple of the key and value heads")
    assert_error_has(function() sdpa(q, k, v) end, "do not broadcast")
  end)

  it("NaN in a query row gives NaN in that row only (float64 and float32)", function()
    for _, dt in ipairs({ "float64", "float32" }) do
      local q, k, v = randn({ 2, 4, 8 }, dt), randn({ 2, 6, 8 }, dt), randn({ 2, 6, 3 }, dt)
      q[{ 1, 2, 1 }] = 0 / 0
      local out = sdpa(q, k, v)
      local function nans(t) return t:ne(t):to("float64"):sum():item() end
      assert.are.equal(3, nans(out[1][2]))
      assert.are.equal(3, nans(out))
      local m = wick.ones(4, 6, { dtype = "bool" })
      m[2] = false -- and a row of no keys still gives zeros
      q[{ 1, 2, 1 }] = 1
      q[{ 1, 3, 1 }] = 0 / 0
      local o2 = sdpa(q, k, v, { attn_mask = m })
      assert.are.equal(0, o2[{ {}, 2 }]:abs():max():item())
      assert.are.equal(3, nans(o2[1][3]))
      assert.are.equal(3, nans(o2))
    end
  end)

  it("float16 and bfloat16 compute in float32 and return their dtype", function()
    local q, k, v = randn({ 2, 9, 8 }), randn({ 2, 11, 8 }), randn({ 2, 11, 4 })
    for _, dt in ipairs({ "float16", "bfloat16" }) do
      local qq, kk, vv = q:to(dt), k:to(dt), v:to(dt)
      local out = sdpa(qq, kk, vv, { is_causal = true })
      assert.are.equal(dt, out.dtype)
      local want = reference(qq:to("float64"), kk:to("float64"), vv:to("float64"), { is_causal = true })
      assert.is_true(maxdiff(out, want) < (dt == "float16" and 4e-3 or 3e-2))
    end
  end)
end)

describe("scaled_dot_product_attention backward", function()
  before_each(function() wick.manual_seed(99) end)

  -- grads of sum(out * w) from the fused op and from the composed reference
  local function compare_grads(qs, ks, vs, opts, tol, dtype)
    local q0, k0, v0 = randn(qs), randn(ks), randn(vs)
    local w
    local function grads(fn, dt)
      local q = q0:to(dt):detach():requires_grad_()
      local k = k0:to(dt):detach():requires_grad_()
      local v = v0:to(dt):detach():requires_grad_()
      local out = fn(q, k, v)
      w = w or wick.randn(shape_of(out), { dtype = "float64" })
      ;(out:to("float64") * w):sum():backward()
      return q.grad, k.grad, v.grad
    end
    local fq, fk, fv = grads(function(q, k, v) return sdpa(q, k, v, opts) end, dtype or "float64")
    local rq, rk, rv = grads(function(q, k, v) return reference(q, k, v, opts) end, "float64")
    assert.are.same(qs, shape_of(fq))
    assert.are.same(ks, shape_of(fk))
    assert.are.same(vs, shape_of(fv))
    assert.are.equal(dtype or "float64", fq.dtype)
    assert.is_true(maxdiff(fq, rq) < tol, "dq: " .. maxdiff(fq, rq))
    assert.is_true(maxdiff(fk, rk) < tol, "dk: " .. maxdiff(fk, rk))
    assert.is_true(maxdiff(fv, rv) < tol, "dv: " .. maxdiff(fv, rv))
  end

  local CASES = {
    { { 5, 8 }, { 7, 8 }, { 7, 6 }, {} },
    { { 2, 3, 70, 16 }, { 2, 3, 130, 16 }, { 2, 3, 130, 20 }, { is_causal = true } },
    { { 2, 130, 33 }, { 2, 65, 33 }, { 2, 65, 5 }, { is_causal = true } },
    { { 2, 3, 64, 32 }, { 2, 3, 64, 32 }, { 2, 3, 64, 32 }, { scale = 0.7 } },
    { { 2, 3, 6, 8 }, { 1, 3, 9, 8 }, { 9, 4 }, {} }, -- broadcast batch dims
    { { 2, 45, 48 }, { 2, 40, 48 }, { 2, 40, 48 }, { is_causal = true } }, -- 48-column tiles (3 vectors), odd row counts
  }
  for n, c in ipairs(CASES) do
    it(("matches the composed attention's autograd, case %d (float64 and float32)"):format(n), function()
      compare_grads(c[1], c[2], c[3], c[4], 1e-11)
      compare_grads(c[1], c[2], c[3], c[4], 5e-5, "float32")
    end)
  end

  it("with bool and float masks (broadcast), and rows no key takes part in (zero gradient)", function()
    local m = random_bool_mask({ 2, 1, 10, 12 })
    m[{ {}, {}, {}, 1 }] = true -- every row keeps a key (a row of none has NaN gradients in the reference)
    compare_grads({ 2, 3, 10, 8 }, { 2, 3, 12, 8 }, { 2, 3, 12, 5 }, { attn_mask = m }, 1e-11)
    compare_grads({ 2, 3, 10, 8 }, { 2, 3, 12, 8 }, { 2, 3, 12, 5 }, { attn_mask = m }, 5e-5, "float32")
    local f = wick.randn({ 10, 12 }, { dtype = "float64" })
    compare_grads({ 2, 3, 10, 8 }, { 2, 3, 12, 8 }, { 2, 3, 12, 5 }, { attn_mask = f }, 1e-11)
    local q = randn({ 10, 8 }, nil, true)
    local m2 = m[1][1]:clone()
    m2[3] = false
    sdpa(q, randn({ 12, 8 }), randn({ 12, 5 }), { attn_mask = m2 }):sum():backward()
    assert.are.equal(0, q.grad[3]:abs():max():item())
    assert.is_true(q.grad[1]:abs():max():item() > 0)
  end)

  it("enable_gqa sums the grouped heads' gradients", function()
    local idx = support.I({ 1, 1, 2, 2 })
    local q0, k0, v0 = randn({ 2, 4, 5, 8 }), randn({ 2, 2, 7, 8 }), randn({ 2, 2, 7, 3 })
    local w = randn({ 2, 4, 5, 3 })
    local function run(fused)
      local q, k, v = q0:detach():requires_grad_(), k0:detach():requires_grad_(), v0:detach():requires_grad_()
      local out = fused and sdpa(q, k, v, { enable_gqa = true })
        or reference(q, k:index_select(2, idx), v:index_select(2, idx))
      ;(out * w):sum():backward()
      return q.grad, k.grad, v.grad
    end
    local a = { run(true) }
    local b = { run(false) }
    for i = 1, 3 do assert.is_true(maxdiff(a[i], b[i]) < 1e-12) end
  end)

  it("agrees with finite differences (gradcheck), causal and masked", function()
    support.gradcheck(function(q, k, v) return sdpa(q, k, v, { is_causal = true }) end,
      { randn({ 2, 4, 3 }), randn({ 2, 5, 3 }), randn({ 2, 5, 2 }) })
    local m = wick.tensor({ { true, false, true }, { false, false, true } })
    support.gradcheck(function(q, k, v) return sdpa(q, k, v, { attn_mask = m, scale = 0.8 }) end,
      { randn({ 2, 3 }), randn({ 3, 3 }), randn({ 3, 4 }) })
  end)

  it("float16 inputs get float16 gradients", function()
    local q = randn({ 3, 5, 8 }):to("float16"):requires_grad_()
    local k = randn({ 3, 6, 8 }):to("float16"):requires_grad_()
    local v = randn({ 3, 6, 8 }):to("float16"):requires_grad_()
    sdpa(q, k, v):sum():backward()
    assert.are.equal("float16", q.grad.dtype)
    assert.are.same({ 3, 6, 8 }, shape_of(k.grad))
  end)

  it("records a grad_fn and raises when a saved input was changed in place", function()
    local q, k, v = randn({ 4, 8 }, nil, true), randn({ 5, 8 }), randn({ 5, 3 })
    local out = sdpa(q, k, v)
    assert.is_truthy(out.grad_fn)
    k:add_(1)
    assert_error_has(function() out:sum():backward() end, "modified by an inplace operation")
  end)
end)

describe("scaled_dot_product_attention dropout", function()
  local q, k, v
  before_each(function()
    wick.manual_seed(5)
    q, k, v = randn({ 2, 3, 20, 8 }), randn({ 2, 3, 24, 8 }), randn({ 2, 3, 24, 4 })
  end)

  it("is repeatable with manual_seed, and draws new masks otherwise", function()
    wick.manual_seed(42)
    local a = sdpa(q, k, v, { dropout_p = 0.3 })
    local b = sdpa(q, k, v, { dropout_p = 0.3 })
    wick.manual_seed(42)
    local c = sdpa(q, k, v, { dropout_p = 0.3 })
    assert.are.equal(0, maxdiff(a, c))
    assert.is_true(maxdiff(a, b) > 1e-3)
    assert.is_true(maxdiff(a, sdpa(q, k, v)) > 1e-3)
    -- float32 draws the same mask
    wick.manual_seed(42)
    local a32 = sdpa(q:to("float32"), k:to("float32"), v:to("float32"), { dropout_p = 0.3 })
    assert.is_true(maxdiff(a32, a) < 2e-5)
  end)

  it("applies whenever dropout_p > 0 (as PyTorch; pass 0 in eval mode), p = 0 is none, p = 1 drops all", function()
    assert.are.equal(0, maxdiff(sdpa(q, k, v, { dropout_p = 0 }), sdpa(q, k, v)))
    assert.are.equal(0, sdpa(q, k, v, { dropout_p = 1 }):abs():max():item())
  end)

  it("keeps the mean (weights scaled by 1 / (1 - p)) and drops about p of them", function()
    -- with v all ones, each output is the sum of a row's kept weights / (1 - p)
    local qq, kk = randn({ 64, 32, 8 }), randn({ 64, 32, 8 })
    local ones = wick.ones(64, 32, 1, { dtype = "float64" })
    for _, p in ipairs({ 0.1, 0.5 }) do
      local out = sdpa(qq, kk, ones, { dropout_p = p })
      local mean = out:mean():item()
      assert.is_true(math.abs(mean - 1) < 0.03, ("p = %g: mean %g"):format(p, mean))
    end
    -- uniform weights (q = 0): each kept weight is 1/S/(1-p), so p of them are dropped
    local out = sdpa(wick.zeros(1, 1, 8, { dtype = "float64" }), randn({ 1, 4000, 8 }),
      wick.eye(4000, { dtype = "float64" }):view(1, 4000, 4000), { dropout_p = 0.25 })
    local kept = out:gt(0):to("float64"):mean():item()
    assert.is_true(math.abs(kept - 0.75) < 0.03, "kept " .. kept)
  end)

  it("backward uses the forward's mask: gradients match finite differences for a fixed seed", function()
    local function f(qq, kk, vv)
      wick.manual_seed(77)
      return sdpa(qq, kk, vv, { dropout_p = 0.4, is_causal = true })
    end
    support.gradcheck(f, { randn({ 2, 5, 3 }), randn({ 2, 6, 3 }), randn({ 2, 6, 2 }) })
    -- and float32 backward equals float64's
    local function grads(dt)
      local a, b, c = q:to(dt):detach():requires_grad_(), k:to(dt):detach():requires_grad_(), v:to(dt):detach():requires_grad_()
      wick.manual_seed(3)
      sdpa(a, b, c, { dropout_p = 0.2 }):sum():backward()
      return a.grad, b.grad, c.grad
    end
    local g64, g32 = { grads("float64") }, { grads("float32") }
    for i = 1, 3 do assert.is_true(maxdiff(g64[i], g32[i]) < 1e-4) end
  end)
end)

describe("scaled_dot_product_attention errors", function()
  local q, k, v = randn({ 2, 3, 4 }), randn({ 2, 5, 4 }), randn({ 2, 5, 6 })

  it("shape mismatches name the shapes", function()
    assert_error_has(function() sdpa(q, randn({ 2, 5, 3 }), v) end, "query [2, 3, 4]", "key [2, 5, 3]")
    assert_error_has(function() sdpa(q, k, randn({ 2, 4, 6 })) end, "key [2, 5, 4]", "value [2, 4, 6]")
    assert_error_has(function() sdpa(q, randn({ 3, 5, 4 }), randn({ 3, 5, 6 })) end, "do not broadcast", "[2, 3, 4]")
    assert_error_has(function() sdpa(q, k, v, { attn_mask = wick.ones(4, 5, { dtype = "bool" }) }) end, "attn_mask of shape [4, 5]",
      "[2, 3, 5]")
    assert_error_has(function() sdpa(q, k, v, { attn_mask = wick.ones(1, 2, 3, 5, { dtype = "bool" }) }) end, "does not broadcast")
    assert_error_has(function() sdpa(wick.randn(4), wick.randn(4), wick.randn(4)) end, "at least 2 dimensional")
  end)

  it("dtype mismatches and integer inputs", function()
    assert_error_has(function() sdpa(q:to("float32"), k, v) end, "same dtype", "float32", "float64")
    assert_error_has(function() sdpa(q:to("int64"), k:to("int64"), v:to("int64")) end, "floating-point")
    assert_error_has(function() sdpa(q, k, v, { attn_mask = wick.ones(3, 5, { dtype = "int64" }) }) end,
      "attn_mask dtype", "int64")
    assert_error_has(function() sdpa(q, k, v, { attn_mask = wick.ones(3, 5, { dtype = "float16" }) }) end, "attn_mask dtype", "float16")
  end)

  it("options: unknown names, wrong types, causal with a mask, dropout out of range", function()
    assert_error_has(function() sdpa(q, k, v, { causal = true }) end, "unknown option 'causal'")
    assert_error_has(function() sdpa(q, k, v, { is_causal = 1 }) end, "is_causal must be a boolean")
    assert_error_has(function() sdpa(q, k, v, { dropout_p = "0.1" }) end, "dropout_p must be a number")
    assert_error_has(function() sdpa(q, k, v, { scale = true }) end, "scale must be a number")
    assert_error_has(function() sdpa(q, k, v, { attn_mask = 1 }) end, "attn_mask must be a tensor")
    assert_error_has(function() sdpa(q, k, v, { enable_gqa = "yes" }) end, "enable_gqa must be a boolean")
    assert_error_has(function() sdpa(q, k, v, nil, 0.1, { dropout_p = 0.1 }) end, "multiple values for argument 'dropout_p'")
    assert_error_has(function() sdpa(q, k, v, { attn_mask = wick.ones(3, 5, { dtype = "bool" }), is_causal = true }) end,
      "attn_mask should not be set when is_causal=True")
    assert_error_has(function() sdpa(q, k, v, { dropout_p = 1.5 }) end, "dropout probability has to be between 0 and 1")
    assert_error_has(function() sdpa(q, k, v, { dropout_p = -0.1 }) end, "between 0 and 1")
    assert_error_has(function() sdpa(q, "k", v) end, "expected a tensor for argument 'key'")
    -- (a float mask that requires grad runs composed, so it gets its gradient: port_lines_spec's round 49)
    local m = wick.zeros(3, 5, { dtype = q.dtype, requires_grad = true })
    sdpa(q, k, v, { attn_mask = m }):sum():backward()
    assert.are.same({ 3, 5 }, m.grad:size())
  end)

  it("names the user's line", function()
    local err = support.error_of(function() local r = sdpa(q, k, v, { bogus = 1 }); return r end)
    assert.is_truthy(err:find("attention_spec.lua:%d+:"), err)
  end)

  it("the same-device rule (meta with cpu)", function()
    assert_error_has(function() sdpa(q, k:to("meta"), v) end, "Expected all tensors to be on the same device")
  end)
end)

describe("scaled_dot_product_attention sizes", function()
  it("empty batch, L = 0, Ev = 0, E = 0 and S = 0 (zeros, like PyTorch)", function()
    assert.are.same({ 0, 3, 6 }, shape_of(sdpa(randn({ 0, 3, 4 }), randn({ 0, 5, 4 }), randn({ 0, 5, 6 }))))
    assert.are.same({ 2, 0, 6 }, shape_of(sdpa(randn({ 2, 0, 4 }), randn({ 2, 5, 4 }), randn({ 2, 5, 6 }))))
    assert.are.same({ 2, 3, 0 }, shape_of(sdpa(randn({ 2, 3, 4 }), randn({ 2, 5, 4 }), randn({ 2, 5, 0 }))))
    local q, k, v = randn({ 2, 3, 0 }), randn({ 2, 5, 0 }), randn({ 2, 5, 6 })
    assert.is_true(maxdiff(sdpa(q, k, v), reference(q, k, v, { scale = 1 })) < 1e-12) -- uniform weights, like PyTorch
    local q0 = randn({ 2, 3, 4 }, nil, true)
    local out = sdpa(q0, randn({ 2, 0, 4 }), randn({ 2, 0, 6 }))
    assert.are.same({ 2, 3, 6 }, shape_of(out))
    assert.are.equal(0, out:abs():max():item())
    out:sum():backward()
    assert.are.equal(0, q0.grad:abs():max():item())
  end)

  it("meta tensors: shapes and dtype only", function()
    local opts = { device = "meta", requires_grad = true }
    local q, k, v = wick.empty(2, 4, 9, 8, opts), wick.empty(2, 4, 11, 8, opts), wick.empty(2, 4, 11, 5, opts)
    local out = sdpa(q, k, v, { is_causal = true })
    assert.are.equal("meta", out.device.type)
    assert.are.same({ 2, 4, 9, 5 }, shape_of(out))
    out:sum():backward()
    assert.are.same({ 2, 4, 11, 5 }, shape_of(v.grad))
    assert_error_has(function() sdpa(q, wick.empty(2, 4, 11, 7, opts), v) end, "key's last dim")
  end)

  it("a long sequence (L = S = 4096) never holds the L x S matrix (64 MiB in float32)", function()
    local bytes = wick._core.cpu_bytes_in_use
    local q = randn({ 1, 1, 4096, 16 }, "float32", true)
    local k = randn({ 1, 1, 4096, 16 }, "float32", true)
    local v = randn({ 1, 1, 4096, 16 }, "float32", true)
    collectgarbage()
    local before = bytes()
    local out = sdpa(q, k, v, { is_causal = true })
    local grown = bytes() - before
    -- the output (256 KiB) and the saved log-sum-exp (16 KiB)
    assert.is_true(grown < 1024 * 1024, "grew by " .. grown)
    out:sum():backward()
    assert.are.same({ 1, 1, 4096, 16 }, shape_of(q.grad))
    -- the last row attends to all keys: against the composed reference on that row
    local row = reference(q[{ {}, {}, { 4096, 4096 } }]:to("float64"), k:to("float64"), v:to("float64"))
    assert.is_true(maxdiff(out[{ {}, {}, { 4096, 4096 } }], row) < 1e-4)
  end)
end)

describe("scaled_dot_product_attention on CUDA", function()
  local cuda = wick.cuda.is_available()
  local check = cuda and it or pending
  check("matches the CPU, forward and backward, with masks, causal and dropout", function()
    wick.manual_seed(8)
    for _, opts in ipairs({ {}, { is_causal = true }, { attn_mask = random_bool_mask({ 70, 130 }) },
                            { attn_mask = wick.randn(70, 130) }, { dropout_p = 0.2, is_causal = true } }) do
      local q, k, v = randn({ 2, 3, 70, 32 }, "float32"), randn({ 2, 3, 130, 32 }, "float32"), randn({ 2, 3, 130, 24 }, "float32")
      local function run(device)
        -- leaves on each device (q:to("cpu") is q itself, so without detach the CPU run
        -- would make q a leaf and the CUDA copies non-leaves without .grad)
        local function leaf(t) return t:to(device):detach():requires_grad_() end
        local qq, kk, vv = leaf(q), leaf(k), leaf(v)
        local o = {}
        for key, val in pairs(opts) do o[key] = wick.is_tensor(val) and val:to(device) or val end
        wick.manual_seed(21)
        local out = sdpa(qq, kk, vv, o)
        out:sum():backward()
        return out:cpu(), qq.grad:cpu(), kk.grad:cpu(), vv.grad:cpu()
      end
      local a, b = { run("cpu") }, { run("cuda") }
      for i = 1, 4 do assert.is_true(maxdiff(a[i], b[i]) < 1e-4, ("output %d differs by %g"):format(i, maxdiff(a[i], b[i]))) end
    end
  end)
end)

describe("F.multi_head_attention_forward", function()
  it("is nn.MultiheadAttention's forward over weights given as arguments, by position or by name", function()
    wick.manual_seed(4)
    local mha = wick.nn.MultiheadAttention(8, 2, { dtype = "float64" })
    mha:eval()
    local x = wick.randn({ 5, 2, 8 }, { dtype = "float64" })
    local want, ww = mha(x, x, x)
    local F = wick.nn.functional
    local out, w = F.multi_head_attention_forward(x, x, x, 8, 2, mha.in_proj_weight, mha.in_proj_bias, nil, nil, false,
      0, mha.out_proj.weight, mha.out_proj.bias, { training = false })
    assert.is_true((out - want):abs():max():item() < 1e-12)
    assert.is_true((w - ww):abs():max():item() < 1e-12)
    -- separate projections (CLIP's AttentionPool2d), all by name
    local E = 8
    local ipw = mha.in_proj_weight
    local out2 = F.multi_head_attention_forward({ query = x, key = x, value = x, embed_dim_to_check = E, num_heads = 2,
      q_proj_weight = ipw:narrow(1, 1, E), k_proj_weight = ipw:narrow(1, E + 1, E), v_proj_weight = ipw:narrow(1, 2 * E + 1, E),
      in_proj_bias = mha.in_proj_bias, add_zero_attn = false, dropout_p = 0, out_proj_weight = mha.out_proj.weight,
      out_proj_bias = mha.out_proj.bias, use_separate_proj_weight = true, training = false, need_weights = false })
    assert.is_true((out2 - want):abs():max():item() < 1e-12)
    assert.has_error(function() F.multi_head_attention_forward(x, x, x, 8, 2) end)
  end)
end)

describe("F.multi_head_attention_forward with an output projection of another width", function()
  it("gives [L, N, out_features], as CLIP's AttentionPool2d (embed_dim to output_dim)", function()
    wick.manual_seed(3)
    local E, x = 8, wick.randn(5, 2, 8)
    local q, k, v = wick.randn(E, E), wick.randn(E, E), wick.randn(E, E)
    local W, b = wick.randn(3, E), wick.randn(3)
    local function run(wo, bo, need)
      return F.multi_head_attention_forward({ query = x, key = x, value = x, embed_dim_to_check = E, num_heads = 2,
        q_proj_weight = q, k_proj_weight = k, v_proj_weight = v, in_proj_bias = wick.zeros(3 * E),
        add_zero_attn = false, dropout_p = 0, out_proj_weight = wo, out_proj_bias = bo,
        use_separate_proj_weight = true, training = false, need_weights = need })
    end
    for _, need in ipairs({ false, true }) do
      local out = run(W, b, need)
      assert.are.same({ 5, 2, 3 }, { out:size(1), out:size(2), out:size(3) })
      local plain = run(wick.eye(E), wick.zeros(E), need)
      assert.is_true(wick.allclose(out, F.linear(plain, W, b), { atol = 1e-5 }))
    end
    assert_error_has(function() run(wick.randn(3, 4), nil, false) end, "out_proj_weight must be [out_features, 8]")
  end)
end)

describe("nn.MultiheadAttention's query, key and value by name", function()
  it("as DETR calls it: self_attn(q, k, value=src, attn_mask=...) and all three by name", function()
    wick.manual_seed(1)
    local mha, q = wick.nn.MultiheadAttention(8, 2), wick.randn(4, 2, 8)
    local a = mha(q, q, q, { need_weights = false })
    assert.is_true(wick.equal(a, mha(q, q, { value = q, need_weights = false })))
    assert.is_true(wick.equal(a, mha({ query = q, key = q, value = q, need_weights = false })))
    local w1 = select(2, mha(q, q, q))
    assert.is_true(wick.equal(w1, select(2, mha(q, { key = q, value = q }))))
    assert_error_has(function() mha(q, q, q, { value = q }) end, "argument 'value' given both by position and as an option")
  end)
end)
