-- The fused Adam/AdamW step (wick._core._adam_step, src/cpu/cpu_optim.c) that
-- optim.Adam/AdamW take for contiguous CPU float parameters: the same values as
-- PyTorch's single-tensor update written out here element by element in Lua
-- numbers, for both weight-decay forms, both of ATen's lerp formulas, float32 and
-- float64, over several steps; the cases it declines (non-contiguous, mismatched,
-- integer, amsgrad) still update correctly by the composed ops.
local wick = require("wick")
local optim = wick.optim

-- PyTorch's _single_tensor_adam on plain Lua numbers (double precision)
local function reference(p, grads, opts, decoupled)
  local m, v = {}, {}
  for i = 1, #p do m[i], v[i] = 0, 0 end
  local b1, b2 = opts.betas[1], opts.betas[2]
  for step, g0 in ipairs(grads) do
    for i = 1, #p do
      local g = g0[i]
      if opts.weight_decay ~= 0 then
        if decoupled then p[i] = p[i] * (1 - opts.lr * opts.weight_decay) else g = g + p[i] * opts.weight_decay end
      end
      m[i] = m[i] + (1 - b1) * (g - m[i])
      v[i] = v[i] * b2 + (1 - b2) * g * g
      local bc1, bc2 = 1 - b1 ^ step, 1 - b2 ^ step
      local denom = math.sqrt(v[i]) / math.sqrt(bc2) + opts.eps
      p[i] = p[i] - opts.lr / bc1 * (m[i] / denom)
    end
  end
  return p
end

local function values(n, seed)
  local t = {}
  for i = 1, n do t[i] = math.sin(i * 1.7 + seed) * (1 + i % 5) end
  return t
end

local function run(cls, dtype, opts, n, steps, shape_of)
  local p0 = values(n, 0.3)
  local p = wick.tensor(p0, { dtype = dtype })
  if shape_of then p = p:reshape(shape_of) end
  p:requires_grad_(true)
  local o = cls({ p }, opts)
  local grads = {}
  for s = 1, steps do
    grads[s] = values(n, s)
    local g = wick.tensor(grads[s], { dtype = dtype })
    p.grad = shape_of and g:reshape(shape_of) or g
    o:step()
  end
  return p:detach():reshape({ n }):to({ dtype = "float64" }), reference(p0, grads, opts, cls == optim.AdamW)
end

local function assert_matches(got, want, tol)
  for i = 1, #want do
    local x = got[i]:item()
    assert(math.abs(x - want[i]) <= tol * (1 + math.abs(want[i])),
      ("element %d: got %.17g, want %.17g"):format(i, x, want[i]))
  end
end

describe("fused Adam/AdamW step", function()
  for _, cls_name in ipairs({ "Adam", "AdamW" }) do
    for _, dtype in ipairs({ "float32", "float64" }) do
      for _, case in ipairs({
        { lr = 1e-2, betas = { 0.9, 0.99 }, eps = 1e-8, weight_decay = 0.1 },
        { lr = 3e-3, betas = { 0.9, 0.999 }, eps = 1e-6, weight_decay = 0 },
        { lr = 1e-2, betas = { 0.3, 0.9 }, eps = 1e-8, weight_decay = 0.05 }, -- 1 - beta1 >= 0.5: ATen's other lerp form
      }) do
        it(("%s %s matches PyTorch's update (betas %g, %g; weight_decay %g)"):format(cls_name, dtype, case.betas[1],
          case.betas[2], case.weight_decay), function()
          local got, want = run(optim[cls_name], dtype, case, 37, 5, { 37 })
          assert_matches(got, want, dtype == "float64" and 1e-12 or 2e-5)
          got, want = run(optim[cls_name], dtype, case, 24, 3, { 4, 6 })
          assert_matches(got, want, dtype == "float64" and 1e-12 or 2e-5)
        end)
      end
    end
  end

  it("runs for contiguous CPU float operands and declines every other case", function()
    local p = wick.randn(4, 3)
    local g, m, v = wick.randn(4, 3), wick.zeros(4, 3), wick.zeros(4, 3)
    local step = wick._core._adam_step
    assert.is_true(step(p, g, m, v, 1e-3, 0.9, 0.99, 1e-8, 0.1, 1, true))
    assert.is_false(step(p, wick.randn(3, 4):t(), m, v, 1e-3, 0.9, 0.99, 1e-8, 0.1, 2, true)) -- strided grad
    assert.is_false(step(p, wick.randn(5), m, v, 1e-3, 0.9, 0.99, 1e-8, 0.1, 2, true))        -- other size
    assert.is_false(step(p, g:double(), m, v, 1e-3, 0.9, 0.99, 1e-8, 0.1, 2, true))           -- other dtype
    assert.is_false(step(p, g, m, m, 1e-3, 0.9, 0.99, 1e-8, 0.1, 2, true))                    -- shared state
    assert.is_false(step(p, g, m, v, 1e-3, 0.9, 0.99, 1e-8, 0.1, 0, true))                    -- step 0
    local mp = wick.zeros(4, 3, { device = "meta" })                                           -- a backend without it
    assert.is_false(step(mp, mp:clone(), mp:clone(), mp:clone(), 1e-3, 0.9, 0.99, 1e-8, 0.1, 1, true))
    local ip = wick.tensor({ 1, 2 }, { dtype = "int64" })
    assert.is_false(step(ip, ip:clone(), ip:clone(), ip:clone(), 1e-3, 0.9, 0.99, 1e-8, 0, 1, true))
  end)

  it("gives the composed update's values where it declines (a strided gradient, amsgrad)", function()
    local opts = { lr = 1e-2, betas = { 0.9, 0.99 }, eps = 1e-8, weight_decay = 0.1 }
    local n = 12
    local p0 = values(n, 0.3)
    local p = wick.tensor(p0, { dtype = "float64" }):reshape({ 3, 4 }):requires_grad_(true)
    local o = optim.AdamW({ p }, opts)
    local grads = {}
    for s = 1, 3 do
      grads[s] = values(n, s)
      -- a transposed view with the same values in p's order
      p.grad = wick.tensor(grads[s], { dtype = "float64" }):reshape({ 3, 4 }):t():contiguous():t()
      assert.is_false(p.grad:is_contiguous())
      o:step()
    end
    assert_matches(p:detach():reshape({ n }), reference(p0, grads, opts, true), 1e-12)
    local q = wick.tensor(values(n, 0.3), { dtype = "float64" }):requires_grad_(true)
    local oa = optim.AdamW({ q }, { lr = 1e-2, amsgrad = true })
    q.grad = wick.tensor(values(n, 1), { dtype = "float64" })
    oa:step()
    assert.is_truthy(oa.state[q].max_exp_avg_sq)
  end)

  it("bumps the versions of what it writes (a saved parameter cannot be used after the step)", function()
    local p = wick.randn(5):requires_grad_(true)
    local y = (p * p):sum()
    p.grad = wick.randn(5)
    local o = optim.AdamW({ p }, { lr = 1e-2 })
    o:step()
    assert.has_error(function() y:backward() end)
  end)
end)

-- PyTorch's _single_tensor_adadelta on plain Lua numbers (double precision)
local function reference_adadelta(p, grads, opts)
  local sq, acc = {}, {}
  for i = 1, #p do sq[i], acc[i] = 0, 0 end
  for _, g0 in ipairs(grads) do
    for i = 1, #p do
      local g = opts.maximize and -g0[i] or g0[i]
      if opts.weight_decay ~= 0 then g = g + opts.weight_decay * p[i] end
      sq[i] = sq[i] * opts.rho + (1 - opts.rho) * g * g
      local delta = math.sqrt(acc[i] + opts.eps) / math.sqrt(sq[i] + opts.eps) * g
      acc[i] = acc[i] * opts.rho + (1 - opts.rho) * delta * delta
      p[i] = p[i] - opts.lr * delta
    end
  end
  return p
end

local function run_adadelta(dtype, opts, n, steps, shape, strided)
  local p0 = values(n, 0.3)
  local p = wick.tensor(p0, { dtype = dtype }):reshape(shape):requires_grad_(true)
  local o = optim.Adadelta({ p }, opts)
  local grads = {}
  for s = 1, steps do
    grads[s] = values(n, s)
    local g = wick.tensor(grads[s], { dtype = dtype }):reshape(shape)
    -- strided: the same values through a transposed view (the composed update)
    p.grad = strided and g:t():contiguous():t() or g
    o:step()
  end
  return p:detach():reshape({ n }):to({ dtype = "float64" }), reference_adadelta(p0, grads, opts)
end

describe("fused Adadelta step", function()
  for _, dtype in ipairs({ "float32", "float64" }) do
    for _, case in ipairs({
      { lr = 1.0, rho = 0.9, eps = 1e-6, weight_decay = 0, maximize = false },
      { lr = 0.5, rho = 0.8, eps = 1e-4, weight_decay = 0.01, maximize = true },
    }) do
      it(("%s matches PyTorch's update (rho %g, weight_decay %g, maximize %s), fused and composed"):format(dtype,
        case.rho, case.weight_decay, tostring(case.maximize)), function()
        local tol = dtype == "float64" and 1e-12 or 2e-5
        local got, want = run_adadelta(dtype, case, 37, 5, { 37 }, false)
        assert_matches(got, want, tol)
        got, want = run_adadelta(dtype, case, 24, 4, { 4, 6 }, true)
        assert_matches(got, want, tol)
      end)
    end
  end

  it("runs for contiguous CPU float operands and declines every other case", function()
    local p = wick.randn(4, 3)
    local g, sq, acc = wick.randn(4, 3), wick.zeros(4, 3), wick.zeros(4, 3)
    local step = wick._core._adadelta_step
    assert.is_true(step(p, g, sq, acc, 1, 0.9, 1e-6, 0, false))
    assert.is_false(step(p, wick.randn(3, 4):t(), sq, acc, 1, 0.9, 1e-6, 0, false)) -- strided grad
    assert.is_false(step(p, wick.randn(5), sq, acc, 1, 0.9, 1e-6, 0, false))        -- other size
    assert.is_false(step(p, g:double(), sq, acc, 1, 0.9, 1e-6, 0, false))           -- other dtype
    assert.is_false(step(p, g, sq, sq, 1, 0.9, 1e-6, 0, false))                     -- shared state
    local mp = wick.zeros(4, 3, { device = "meta" })                                 -- a backend without it
    assert.is_false(step(mp, mp:clone(), mp:clone(), mp:clone(), 1, 0.9, 1e-6, 0, false))
  end)
end)

describe("fused steps on the pool", function()
  -- a parameter above two grains (2 x 32768 elements, src/cpu/cpu_optim.c) is
  -- split among the threads: each range must update its own elements once
  local n = 100003
  local function after_steps(threads, make)
    local before = wick.get_num_threads()
    wick.set_num_threads(threads)
    local p = wick.tensor(values(n, 0.3)):requires_grad_(true)
    local o = make(p)
    for s = 1, 3 do
      p.grad = wick.tensor(values(n, s))
      o:step()
    end
    wick.set_num_threads(before)
    return p:detach()
  end
  for name, make in pairs({
    SGD = function(p) return optim.SGD({ p }, { lr = 0.1, momentum = 0.9, weight_decay = 0.01 }) end,
    Adam = function(p) return optim.Adam({ p }, { lr = 0.01 }) end,
    AdamW = function(p) return optim.AdamW({ p }, { lr = 0.01, weight_decay = 0.1 }) end,
    Adadelta = function(p) return optim.Adadelta({ p }, { lr = 1.0, weight_decay = 0.01 }) end,
  }) do
    it(name .. " gives the same parameters on 1 and 2 threads, every element updated", function()
      local one, two = after_steps(1, make), after_steps(2, make)
      assert.is_true(one:equal(two))
      assert.are.equal(n, one:ne(wick.tensor(values(n, 0.3))):sum():item())
    end)
  end
end)
