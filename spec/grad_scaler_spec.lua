-- wick.amp.GradScaler (lua/wick/amp.lua; the fused unscale wick_amp_unscale_,
-- src/core/optim.c and src/cpu/cpu_optim.c): PyTorch's scale, growth tracker,
-- unscaled gradients and parameters step for step (tools/reference/amp.py),
-- the skipped steps, and the errors PyTorch raises.
local wick = require("wick")
local support = require("spec.support")
local optim = wick.optim

local REF = support.reference("amp")
local STEPS = #REF["defaults/growth_interval=2"].steps
local UNSCALE_FIRST = { [2] = true, [6] = true }
local INJECT = { [3] = 1 / 0, [6] = 0 / 0 }

local function close(actual, ref, tol)
  local expect = support.ref_tensor(ref):float()
  assert.is_true(actual:allclose(expect, tol, tol), ("got %s, want %s"):format(tostring(actual), tostring(expect)))
end

local function run_case(name, opts)
  local ref = REF[name]
  local w = support.formula({ 3, 4 }, 0):float():requires_grad_()
  local b = support.formula({ 3 }, 1):float():requires_grad_()
  local x = support.inputs({ 5, 4 }):float()
  local y = support.formula({ 5, 3 }, 2):float()
  local opt = optim.SGD({ w, b }, { lr = 0.1, momentum = 0.9 })
  local scaler = wick.amp.GradScaler("cpu", opts)
  for step = 1, STEPS do
    local r = ref.steps[step]
    opt:zero_grad()
    local loss = (x:matmul(w:t()) + b - y):pow(2):mean()
    local scaled = scaler:scale(loss)
    assert.same({ 1 }, scaled:size())
    scaled:backward()
    if INJECT[step] then wick.no_grad(function() w.grad[1][1] = INJECT[step] end) end
    assert.near(r.loss, loss:item(), 1e-6)
    assert.near(r.scaled_loss, scaled:item(), 1e-6 * math.abs(r.scaled_loss))
    if UNSCALE_FIRST[step] then
      scaler:unscale_(opt)
      close(b.grad, r.b_grad_unscaled, 1e-5)
    end
    scaler:step(opt)
    scaler:update()
    assert.equal(r.scale, scaler:get_scale(), "scale after step " .. step)
    assert.equal(r.growth_tracker, scaler._growth_tracker, "growth tracker after step " .. step)
    close(w, r.w, 1e-5)
    close(b, r.b, 1e-5)
  end
  assert.same(ref.state_dict, scaler:state_dict())
end

describe("wick.amp.GradScaler against PyTorch", function()
  it("follows the defaults with growth_interval = 2 (skips, backs off, grows)", function()
    run_case("defaults/growth_interval=2", { growth_interval = 2 })
  end)
  it("follows other factors, with the scale rounded to float32", function()
    run_case("init_scale=1000, growth_factor=1.5, backoff_factor=0.3, growth_interval=3",
      { init_scale = 1000, growth_factor = 1.5, backoff_factor = 0.3, growth_interval = 3 })
  end)
  it("can be made to fail: a wrong backoff factor gives another scale", function()
    assert.has_error(function()
      run_case("defaults/growth_interval=2", { growth_interval = 2, backoff_factor = 0.25 })
    end)
  end)
end)

describe("wick.amp.GradScaler", function()
  local function setup(opts)
    local w = wick.ones(4):requires_grad_()
    local opt = optim.SGD({ w }, { lr = 1 })
    local scaler = wick.amp.GradScaler("cpu", opts)
    local loss = (w * w):sum()
    scaler:scale(loss):backward()
    return w, opt, scaler
  end

  it("skips the step and halves the scale on inf, grows after growth_interval clean steps", function()
    local w, opt, scaler = setup({ init_scale = 8, growth_interval = 2 })
    wick.no_grad(function() w.grad[2] = -1 / 0 end)
    scaler:step(opt)
    scaler:update()
    assert.same({ 1, 1, 1, 1 }, w:totable())
    assert.equal(4, scaler:get_scale())
    for _ = 1, 2 do
      opt:zero_grad()
      scaler:scale((w * w):sum()):backward()
      scaler:step(opt)
      scaler:update()
    end
    assert.equal(8, scaler:get_scale())
    assert.is_true(w:allclose(wick.ones(4) * 1)) -- d/dw sum(w^2) = 2w: 1 -> -1 -> 1
  end)

  it("unscales the gradients by the scale", function()
    local w, opt, scaler = setup({ init_scale = 1024 })
    assert.same({ 2048, 2048, 2048, 2048 }, w.grad:totable())
    scaler:unscale_(opt)
    assert.same({ 2, 2, 2, 2 }, w.grad:totable())
  end)

  it("raises PyTorch's errors", function()
    local _, opt, scaler = setup()
    scaler:unscale_(opt)
    assert.has_error(function() scaler:unscale_(opt) end,
      "GradScaler:unscale_: unscale_() has already been called on this optimizer since the last update().")
    scaler:step(opt)
    assert.has_error(function() scaler:step(opt) end,
      "GradScaler:step: step() has already been called since the last update().")
    assert.has_error(function() scaler:unscale_(opt) end, "GradScaler:unscale_: unscale_() is being called after step().")
    scaler:update()
    local fresh = wick.amp.GradScaler("cpu")
    assert.has_error(function() fresh:step(opt) end)
    assert.has_error(function() fresh:update() end)
    assert.has_error(function() wick.amp.GradScaler("cpu", { growth_factor = 0.5 }) end)
    assert.has_error(function() wick.amp.GradScaler("cpu", { bogus = 1 }) end)
    assert.has_error(function() wick.amp.GradScaler("tpu") end)
    assert.has_error(function() scaler:update() end, "GradScaler:update: No inf checks were recorded prior to update.")
  end)

  it("scales tables of outputs, and a disabled scaler passes everything through", function()
    local scaler = wick.amp.GradScaler("cpu", { init_scale = 4 })
    local out = scaler:scale({ wick.ones(2), { wick.ones(1) * 2 } })
    assert.same({ 4, 4 }, out[1]:totable())
    assert.same({ 8 }, out[2][1]:totable())
    local off = wick.amp.GradScaler("cpu", { enabled = false })
    local t = wick.ones(2)
    assert.equal(t, off:scale(t))
    assert.equal(1, off:get_scale())
    assert.same({}, off:state_dict())
    assert.is_false(off:is_enabled())
  end)

  it("new_scale, state_dict and load_state_dict", function()
    local w, opt, scaler = setup({ init_scale = 16 })
    scaler:step(opt)
    scaler:update(3.0)
    assert.equal(3, scaler:get_scale())
    local sd = scaler:state_dict()
    assert.same({ scale = 3, growth_factor = 2, backoff_factor = 0.5, growth_interval = 2000, _growth_tracker = 0 }, sd)
    local other = wick.amp.GradScaler("cpu")
    other:load_state_dict(sd)
    assert.equal(3, other:get_scale())
    assert.has_error(function() other:load_state_dict({}) end)
    local _ = w
  end)

  it("without a GPU, the default device (cuda) warns and disables, like PyTorch", function()
    if wick.cuda.is_available() then return end
    local saved, said = io.stderr, {}
    io.stderr = { write = function(_, s) said[#said + 1] = s end }
    local scaler = wick.amp.GradScaler()
    io.stderr = saved
    assert.is_false(scaler:is_enabled())
    assert.matches("CUDA is not available", table.concat(said))
  end)
end)

describe("wick_amp_unscale_ (the fused C op)", function()
  local unscale = wick._core._amp_unscale_

  it("multiplies every gradient and flags inf/NaN, for float32, float64, half types and views", function()
    local inv = wick.full({ 1 }, 0.5)
    local found = wick.zeros(1)
    local a = wick.tensor({ 2, 4, 6 })
    local d = wick.tensor({ 2, 4 }, { dtype = "float64" })
    local h = wick.tensor({ 2, 4 }, { dtype = "bfloat16" })
    local base = wick.tensor({ { 2, 4 }, { 6, 8 } })
    local view = base:t()
    unscale({ a, d, h, view }, found, inv)
    assert.same({ 1, 2, 3 }, a:totable())
    assert.same({ 1, 2 }, d:totable())
    assert.same({ 1, 2 }, h:float():totable())
    assert.same({ { 1, 2 }, { 3, 4 } }, base:totable())
    assert.equal(0, found:item())
    -- many elements (the vectorised loop), one bad value in the middle
    for _, bad in ipairs({ 1 / 0, -1 / 0, 0 / 0 }) do
      local g = wick.ones(1000)
      g[517] = bad
      local f = wick.zeros(1)
      unscale({ wick.ones(3), g }, f, inv)
      assert.equal(1, f:item())
      assert.equal(0.5, g[1]:item())
    end
  end)

  it("rejects bad operands", function()
    local g = wick.ones(2)
    assert.has_error(function() unscale({ g }, wick.zeros(2), wick.ones(1)) end)
    assert.has_error(function() unscale({ g }, wick.zeros(1), wick.ones(1, { dtype = "float64" })) end)
    assert.has_error(function() unscale({ wick.ones(2, { dtype = "int64" }) }, wick.zeros(1), wick.ones(1)) end)
    unscale({}, wick.zeros(1), wick.ones(1))
  end)
end)
