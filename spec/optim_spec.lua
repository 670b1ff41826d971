-- wick.optim: SGD (momentum, dampening, nesterov, weight_decay, maximize), Adam
-- and AdamW steps against PyTorch, zero_grad, state_dict / load_state_dict
-- (resuming gives identical steps; loaded state moves to each parameter's device
-- and dtype), the StepLR and CosineAnnealingLR schedules and their state,
-- nn.utils.clip_grad_norm_, and small problems that must converge.
local wick = require("wick")
local nn = wick.nn
local optim = wick.optim
local support = require("spec.support")
local assert_close, assert_error_has, shape_of = support.assert_close, support.assert_error_has, support.shape_of

local F64 = { dtype = "float64" }

-- The tiny problem: loss = mean((X w^T + b - Y)^2) over 3 samples, w [2, 2], b [2],
-- starting from w = {{0.5, -0.3}, {0.2, 0.8}}, b = {0.1, -0.2}.
local X = wick.tensor({ { 1.0, 2.0 }, { -1.0, 0.5 }, { 0.5, -1.5 } }, F64)
local Y = wick.tensor({ { 1.0, -1.0 }, { 0.0, 2.0 }, { -0.5, 0.5 } }, F64)

local function params(opts)
  opts = opts or F64
  local w = wick.tensor({ { 0.5, -0.3 }, { 0.2, 0.8 } }, opts):requires_grad_()
  local b = wick.tensor({ 0.1, -0.2 }, opts):requires_grad_()
  return w, b
end

local function loss_of(w, b)
  local x, y = X:to({ dtype = w.dtype, device = w.device }), Y:to({ dtype = w.dtype, device = w.device })
  local d = x:mm(w:t()) + b - y
  return (d * d):mean()
end

local function step(opt, w, b)
  opt:zero_grad()
  loss_of(w, b):backward()
  opt:step()
end

-- Parameters after each of 3 steps, computed with PyTorch 1.13 in float64:
-- torch.optim.<Optimizer>([w, b], **options) on the same problem (see the
-- `it` names for the options).
local REF = {
  sgd = {{w = {{0.49333333333333335, -0.15916666666666665}, {0.07666666666666669, 0.5700000000000001}}, b = {0.10833333333333334, -0.16000000000000003}}, {w = {{0.4835069444444445, -0.04895833333333331}, {-0.032333333333333304, 0.3915833333333334}}, b = {0.11125, -0.1142777777777778}}, {w = {{0.4716137152777778, 0.037519965277777796}, {-0.12945995370370367, 0.2530245370370371}}, b = {0.11036516203703704, -0.06536388888888892}}},
  sgd_momentum = {{w = {{0.49333333333333335, -0.15916666666666665}, {0.07666666666666669, 0.5700000000000001}}, b = {0.10833333333333334, -0.16000000000000003}}, {w = {{0.47750694444444447, 0.07779166666666666}, {-0.14333333333333328, 0.18458333333333343}}, b = {0.11875000000000001, -0.0782777777777778}}, {w = {{0.4485262152777778, 0.34996996527777774}, {-0.42555995370370364, -0.25442546296296287}}, b = {0.12236516203703704, 0.04933611111111111}}},
  sgd_dampening = {{w = {{0.49333333333333335, -0.15916666666666665}, {0.07666666666666669, 0.5700000000000001}}, b = {0.10833333333333334, -0.16000000000000003}}, {w = {{0.4824201388888889, 0.02268750000000001}, {-0.0888333333333333, 0.2737916666666667}}, b = {0.11729166666666667, -0.10113888888888892}}, {w = {{0.465746484375, 0.22174665798611112}, {-0.2828649884259259, -0.04882719907407403}}, b = {0.12342462384259259, -0.02192986111111115}}},
  sgd_nesterov = {{w = {{0.48733333333333334, -0.03241666666666664}, {-0.03433333333333333, 0.363}}, b = {0.11583333333333334, -0.12400000000000003}}, {w = {{0.45786006944444446, 0.23868541666666668}, {-0.31682333333333335, -0.07408416666666666}}, b = {0.11886250000000001, 0.005057222222222203}}, {w = {{0.4098906605902778, 0.4549275668402778}, {-0.6102348224537038, -0.41427395046296295}}, b = {0.10281839641203704, 0.18418758611111108}}},
  sgd_wd = {{w = {{0.48833333333333334, -0.15616666666666665}, {0.07466666666666669, 0.562}}, b = {0.10733333333333335, -0.15800000000000003}}, {w = {{0.46810694444444445, 0.02702833333333336}, {-0.09742999999999997, 0.26068}}, b = {0.11292666666666668, -0.0895977777777778}}, {w = {{0.4406468402777778, 0.18869918194444446}, {-0.2718871537037037, -0.001978457407407378}}, b = {0.11126533981481482, -0.0026064111111111293}}},
  sgd_maximize = {{w = {{0.5066666666666667, -0.4408333333333333}, {0.32333333333333336, 1.03}}, b = {0.09166666666666667, -0.24}}, {w = {{0.5101736111111111, -0.6122916666666666}, {0.461, 1.3115833333333333}}, b = {0.07791666666666669, -0.27427777777777773}}, {w = {{0.509427951388889, -0.8212699652777776}, {0.6154599537037038, 1.6564754629629628}}, b = {0.05713483796296299, -0.30030277777777775}}},
  adam = {{w = {{0.40000001499999777, -0.2000000007100592}, {0.1000000008108108, 0.7000000004347826}}, b = {0.19999998800000146, -0.10000000249999996}}, {w = {{0.306782064825479, -0.10082568436796854}, {0.00024324469335028354, 0.600359366758245}}, b = {0.2345605768144117, -0.0005682879475700509}}, {w = {{0.24011194279429382, -0.003121215872702754}, {-0.09908075909639788, 0.5013756545989857}}, b = {0.20984390238619255, 0.0977830654107907}}},
  adam_wd = {{w = {{0.40000085713551026, -0.20000006952486477}, {0.10000007978717038, 0.7000000420167891}}, b = {0.19999863638223114, -0.1000002380946712}}, {w = {{0.3048722604719825, -0.10133426796845112}, {0.0004849397471492489, 0.600625016894396}}, b = {0.20462449760859336, -0.0011092112208984511}}, {w = {{0.22734292036899237, -0.004896153377825854}, {-0.09817174751630482, 0.50237639113801}}, b = {0.16179304122112118, 0.09568277298256116}}},
  adamw = {{w = {{0.39950001499999777, -0.19970000071005917}, {0.0998000008108108, 0.6992000004347826}}, b = {0.19989998800000144, -0.09980000249999996}}, {w = {{0.3060225239025262, -0.1003288200056961}, {-5.53586691495328e-05, 0.5988642398359696}}, b = {0.23434174080166292, -0.00026681063719610765}}, {w = {{0.2396135397030008, -0.002531507018098303}, {-0.09937630925097232, 0.4992930642101949}}, b = {0.20949307362910996, 0.09809123789784586}}},
  adamw_wd = {{w = {{0.3750000149999977, -0.18500000071005912}, {0.09000000081081079, 0.6600000004347826}}, b = {0.19499998800000146, -0.09000000249999994}}, {w = {{0.28506567125231186, -0.07895298371800252}, {-0.013234915828338994, 0.5291537125886293}}, b = {0.19888154443409184, 0.012646883905089168}}, {w = {{0.2670882518598291, 0.016793452978876564}, {-0.10930451268127657, 0.4084295394982506}}, b = {0.142795559349219, 0.10715240728839902}}},
}

local function check_steps(make, ref, tol)
  local w, b = params()
  local opt = make({ w, b })
  for s = 1, 3 do
    step(opt, w, b)
    assert_close(w, ref[s].w, tol or 1e-12)
    assert_close(b, ref[s].b, tol or 1e-12)
  end
end

describe("optimizer steps against PyTorch (3 steps, float64)", function()
  it("SGD(lr = 0.1)", function()
    check_steps(function(p) return optim.SGD(p, { lr = 0.1 }) end, REF.sgd)
  end)
  it("SGD(lr = 0.1, momentum = 0.9)", function()
    check_steps(function(p) return optim.SGD(p, { lr = 0.1, momentum = 0.9 }) end, REF.sgd_momentum)
  end)
  it("SGD(lr = 0.1, momentum = 0.9, dampening = 0.5)", function()
    check_steps(function(p) return optim.SGD(p, { lr = 0.1, momentum = 0.9, dampening = 0.5 }) end, REF.sgd_dampening)
  end)
  it("SGD(lr = 0.1, momentum = 0.9, nesterov = true)", function()
    check_steps(function(p) return optim.SGD(p, { lr = 0.1, momentum = 0.9, nesterov = true }) end, REF.sgd_nesterov)
  end)
  it("SGD(lr = 0.1, momentum = 0.5, weight_decay = 0.1)", function()
    check_steps(function(p) return optim.SGD(p, { lr = 0.1, momentum = 0.5, weight_decay = 0.1 }) end, REF.sgd_wd)
  end)
  it("SGD(lr = 0.1, maximize = true)", function()
    check_steps(function(p) return optim.SGD(p, { lr = 0.1, maximize = true }) end, REF.sgd_maximize)
  end)
  it("Adam(lr = 0.1)", function()
    check_steps(function(p) return optim.Adam(p, { lr = 0.1 }) end, REF.adam)
  end)
  it("Adam(lr = 0.1, betas = {0.8, 0.99}, eps = 1e-6, weight_decay = 0.1)", function()
    check_steps(function(p) return optim.Adam(p, { lr = 0.1, betas = { 0.8, 0.99 }, eps = 1e-6, weight_decay = 0.1 }) end, REF.adam_wd)
  end)
  it("AdamW(lr = 0.1) (default weight_decay 0.01)", function()
    check_steps(function(p) return optim.AdamW(p, { lr = 0.1 }) end, REF.adamw)
  end)
  it("AdamW(lr = 0.1, weight_decay = 0.5, betas = {0.5, 0.9})", function()
    check_steps(function(p) return optim.AdamW(p, { lr = 0.1, weight_decay = 0.5, betas = { 0.5, 0.9 } }) end, REF.adamw_wd)
  end)

  it("float32 parameters follow the float64 reference closely", function()
    local w, b = params({ dtype = "float32" })
    local opt = optim.Adam({ w, b }, { lr = 0.1 })
    for s = 1, 3 do
      step(opt, w, b)
      assert.are.equal("float32", w.dtype)
      assert_close(w, REF.adam[s].w, 1e-5)
    end
  end)

  it("parameter groups with their own options", function()
    local w, b = params()
    local opt = optim.SGD({ { params = { w } }, { params = { b }, lr = 0.1, momentum = 0.9 } }, { lr = 0 })
    step(opt, w, b)
    step(opt, w, b)
    assert_close(w, { { 0.5, -0.3 }, { 0.2, 0.8 } }) -- lr 0: unchanged
    -- b moves as if it were optimized alone with the second group's options
    local w2, b2 = params()
    local alone = optim.SGD({ b2 }, { lr = 0.1, momentum = 0.9 })
    step(alone, w2, b2)
    step(alone, w2, b2)
    assert.is_true(b:equal(b2))
    local _, b0 = params()
    assert.is_false(b:equal(b0)) -- (b did move)
  end)

  it("a parameter without a gradient is skipped", function()
    local w, b = params()
    local opt = optim.Adam({ w, b }, { lr = 0.1 })
    opt:zero_grad()
    local d = X:mm(w:t()) - Y
    local l = (d * d):mean()
    l:backward()
    opt:step()
    assert_close(b, { 0.1, -0.2 })
    assert.is_nil(rawget(opt.state, b)) -- no state was made for it
    assert.is_truthy(opt.state[w].exp_avg)
    assert.are.same({}, opt.state[b]) -- a look makes an empty one, as PyTorch's defaultdict(dict)
    assert.is_nil(opt:state_dict().state[2]) -- which state_dict leaves out
  end)

  it("step(closure) re-evaluates the loss and returns it", function()
    local w, b = params()
    local opt = optim.SGD({ w, b }, { lr = 0.1 })
    local loss = opt:step(function()
      opt:zero_grad()
      local l = loss_of(w, b)
      l:backward()
      return l
    end)
    assert.is_true(wick.is_tensor(loss))
    assert_close(w, REF.sgd[1].w, 1e-12)
  end)

  it("raises on unknown options, an lr that is not a number and no parameters", function()
    local w = params()
    assert_error_has(function() optim.SGD({ w }, { lr = 0.1, momentun = 0.9 }) end, "momentun")
    assert_error_has(function() optim.SGD({ w }, { lr = "fast" }) end, "lr")
    assert_error_has(function() optim.Adam({}, { lr = 0.1 }) end, "parameters")
  end)
end)

describe("zero_grad", function()
  it("clears every parameter's gradient", function()
    local w, b = params()
    local opt = optim.SGD({ w, b }, { lr = 0.1 })
    loss_of(w, b):backward()
    assert.is_truthy(w.grad); assert.is_truthy(b.grad)
    opt:zero_grad()
    assert.is_nil(w.grad); assert.is_nil(b.grad)
  end)

  it("without it, gradients accumulate", function()
    local w, b = params()
    loss_of(w, b):backward()
    local g1 = w.grad:clone()
    loss_of(w, b):backward()
    assert_close(w.grad, (g1 * 2):totable(), 1e-12)
  end)

  it("takes an nn.ParameterList as PyTorch's iterable of parameters (MAML's Learner.parameters())", function()
    local pl = wick.nn.ParameterList({ wick.nn.Parameter(wick.ones(2)), wick.nn.Parameter(wick.ones(3)) })
    local opt = optim.SGD(pl, { lr = 0.5 })
    assert.are.equal(2, #opt.param_groups[1].params)
    local g = optim.Adam({ { params = pl, lr = 0.1 } })
    assert.is_true(rawequal(pl[2], g.param_groups[1].params[2]))
    pl[1]:sum():backward()
    opt:step()
    assert.are.same({ 0.5, 0.5 }, pl[1]:totable())
    support.assert_error_has(function() optim.SGD(wick.nn.Linear(2, 2), 0.1) end, "model:parameters()")
  end)
end)

-- ======================================================================
describe("optimizer state_dict / load_state_dict", function()
  local function path() return os.tmpname() end

  for _, case in ipairs({
    { "SGD with momentum", function(p) return optim.SGD(p, { lr = 0.1, momentum = 0.9, nesterov = true }) end },
    { "Adam", function(p) return optim.Adam(p, { lr = 0.1, weight_decay = 0.01 }) end },
    { "AdamW", function(p) return optim.AdamW(p, { lr = 0.05 }) end },
  }) do
    it(case[1] .. ": a resumed run takes identical next steps (through wick.save / wick.load)", function()
      local w, b = params()
      local opt = case[2]({ w, b })
      step(opt, w, b); step(opt, w, b)
      local file = path()
      wick.save({ model = { w = w:detach(), b = b:detach() }, optim = opt:state_dict() }, file)
      -- the original run continues
      step(opt, w, b); step(opt, w, b)
      -- the resumed run
      local ck = wick.load(file)
      os.remove(file)
      local w2 = ck.model.w:clone():requires_grad_()
      local b2 = ck.model.b:clone():requires_grad_()
      local opt2 = case[2]({ w2, b2 })
      opt2:load_state_dict(ck.optim)
      step(opt2, w2, b2); step(opt2, w2, b2)
      assert.is_true(w2:equal(w), "w after resuming")
      assert.is_true(b2:equal(b), "b after resuming")
      -- without the optimizer state, the steps differ
      local w3 = ck.model.w:clone():requires_grad_()
      local b3 = ck.model.b:clone():requires_grad_()
      local opt3 = case[2]({ w3, b3 })
      step(opt3, w3, b3); step(opt3, w3, b3)
      assert.is_false(w3:equal(w))
    end)
  end

  it("state_dict numbers parameters from 1 and carries the group options", function()
    local w, b = params()
    local opt = optim.Adam({ w, b }, { lr = 0.01, betas = { 0.8, 0.9 } })
    step(opt, w, b)
    local sd = opt:state_dict()
    assert.are.same({ 1, 2 }, sd.param_groups[1].params)
    assert.are.equal(0.01, sd.param_groups[1].lr)
    assert.are.same({ 0.8, 0.9 }, sd.param_groups[1].betas)
    assert.are.equal(1, sd.state[1].step)
    assert.are.same({ 2, 2 }, shape_of(sd.state[1].exp_avg))
    assert.are.same({ 2 }, shape_of(sd.state[2].exp_avg_sq))
  end)

  it("loading copies the state: later steps do not change the saved tensors", function()
    local w, b = params()
    local opt = optim.SGD({ w, b }, { lr = 0.1, momentum = 0.9 })
    step(opt, w, b)
    local sd = opt:state_dict()
    local saved = sd.state[1].momentum_buffer:clone()
    local w2, b2 = params()
    local opt2 = optim.SGD({ w2, b2 }, { lr = 0.1, momentum = 0.9 })
    opt2:load_state_dict(sd)
    step(opt2, w2, b2)
    assert.is_true(sd.state[1].momentum_buffer:equal(saved))
  end)

  it("loading restores the group options (lr changed by a scheduler)", function()
    local w, b = params()
    local opt = optim.SGD({ w, b }, { lr = 0.1 })
    opt.param_groups[1].lr = 0.025
    local opt2 = optim.SGD({ w, b }, { lr = 0.1 })
    opt2:load_state_dict(opt:state_dict())
    assert.are.equal(0.025, opt2.param_groups[1].lr)
  end)

  it("moves loaded state to the parameter's dtype (float32 state, float64 model)", function()
    local w, b = params({ dtype = "float32" })
    local opt = optim.Adam({ w, b }, { lr = 0.1 })
    step(opt, w, b)
    local sd = opt:state_dict()
    assert.are.equal("float32", sd.state[1].exp_avg.dtype)
    local w2, b2 = params()
    local opt2 = optim.Adam({ w2, b2 }, { lr = 0.1 })
    opt2:load_state_dict(sd)
    assert.are.equal("float64", opt2.state[w2].exp_avg.dtype)
    assert.are.equal("float64", opt2.state[b2].exp_avg_sq.dtype)
    assert.are.equal(1, opt2.state[w2].step)
    wick.no_grad(function() w2:copy_(w); b2:copy_(b) end)
    step(opt2, w2, b2)
    assert_close(w2, REF.adam[2].w, 1e-6)
    assert.are.equal("float64", w2.dtype)
  end)

  it("moves loaded state to the parameter's device (meta)", function()
    local w, b = params()
    local opt = optim.SGD({ w, b }, { lr = 0.1, momentum = 0.9 })
    step(opt, w, b)
    local wm, bm = params({ device = "meta", dtype = "float32" })
    local optm = optim.SGD({ wm, bm }, { lr = 0.1, momentum = 0.9 })
    optm:load_state_dict(opt:state_dict())
    local buf = optm.state[wm].momentum_buffer
    assert.are.equal("meta", buf.device.type)
    assert.are.equal("float32", buf.dtype)
    assert.are.same({ 2, 2 }, shape_of(buf))
    -- Adam's state too, and a step on meta runs
    local a = optim.Adam({ w, b }, { lr = 0.1 })
    step(a, w, b)
    local am = optim.Adam({ wm, bm }, { lr = 0.1 })
    am:load_state_dict(a:state_dict())
    assert.are.equal("meta", am.state[bm].exp_avg.device.type)
    wm.grad = wick.zeros(2, 2, { device = "meta" })
    am:step()
    assert.are.equal("meta", am.state[wm].exp_avg_sq.device.type)
  end)

  it("a model moved with model:to keeps its optimizer state working", function()
    local m = nn.Linear(2, 2)
    local opt = optim.Adam(m:parameters(), { lr = 0.1 })
    m(wick.randn(3, 2)):sum():backward()
    opt:step()
    m:to("float64")
    opt:load_state_dict(opt:state_dict())
    assert.are.equal("float64", opt.state[m.weight].exp_avg.dtype)
    opt:zero_grad()
    m(wick.randn(3, 2, F64)):sum():backward()
    opt:step()
    assert.are.equal(2, opt.state[m.weight].step)
    -- to another device: reloading its own state_dict moves the state there
    m:to("meta")
    opt:load_state_dict(opt:state_dict())
    assert.are.equal("meta", opt.state[m.bias].exp_avg.device.type)
    opt:zero_grad()
    m(wick.randn(3, 2, { device = "meta", dtype = "float64" })):sum():backward()
    opt:step()
    assert.are.equal("meta", opt.state[m.weight].exp_avg_sq.device.type)
    assert.are.equal(3, opt.state[m.weight].step)
  end)

  it("raises on a state of another shape of optimizer", function()
    local w, b = params()
    local opt = optim.SGD({ w, b }, { lr = 0.1 })
    local one = optim.SGD({ w }, { lr = 0.1 })
    assert_error_has(function() one:load_state_dict(opt:state_dict()) end, "parameters")
    assert_error_has(function() opt:load_state_dict({}) end, "state_dict")
  end)
end)

-- ======================================================================
describe("learning-rate schedulers", function()
  local function lrs(make, n)
    local p = wick.zeros(1):requires_grad_()
    local opt = optim.SGD({ p }, { lr = 1.0 })
    local sch = make(opt)
    local out = { sch:get_last_lr()[1] }
    for _ = 1, n do
      opt:step(); sch:step()
      out[#out + 1] = sch:get_last_lr()[1]
      assert.are.equal(out[#out], opt.param_groups[1].lr)
    end
    return out
  end

  -- PyTorch 1.13: get_last_lr() after construction and after each step
  it("StepLR(step_size = 2, gamma = 0.5)", function()
    assert_close(lrs(function(o) return optim.lr_scheduler.StepLR(o, { step_size = 2, gamma = 0.5 }) end, 7),
      { 1.0, 1.0, 0.5, 0.5, 0.25, 0.25, 0.125, 0.125 }, 1e-12)
  end)

  it("CosineAnnealingLR(T_max = 4, eta_min = 0.1), also past T_max", function()
    assert_close(lrs(function(o) return optim.lr_scheduler.CosineAnnealingLR(o, { T_max = 4, eta_min = 0.1 }) end, 10),
      { 1.0, 0.8681980515339464, 0.55, 0.23180194846605368, 0.1, 0.2318019484660536, 0.55, 0.8681980515339467,
        1.0, 0.8681980515339468, 0.55 }, 1e-12)
  end)

  it("every parameter group follows its own base lr", function()
    local p, q = wick.zeros(1):requires_grad_(), wick.zeros(1):requires_grad_()
    local opt = optim.SGD({ { params = { p }, lr = 1.0 }, { params = { q }, lr = 0.2 } }, { lr = 1 })
    local sch = optim.StepLR(opt, { step_size = 1, gamma = 0.5 })
    sch:step(); sch:step()
    assert_close(sch:get_last_lr(), { 0.25, 0.05 }, 1e-12)
  end)

  it("state_dict / load_state_dict resumes the schedule", function()
    for _, make in ipairs({
      function(o) return optim.StepLR(o, { step_size = 2, gamma = 0.5 }) end,
      function(o) return optim.CosineAnnealingLR(o, { T_max = 5, eta_min = 0.01 }) end,
    }) do
      local p = wick.zeros(1):requires_grad_()
      local opt = optim.SGD({ p }, { lr = 1.0 })
      local sch = make(opt)
      for _ = 1, 3 do sch:step() end
      local sd = wick.to_device(sch:state_dict(), "cpu") -- a plain table
      assert.are.equal(3, sd.last_epoch)
      local opt2 = optim.SGD({ wick.zeros(1):requires_grad_() }, { lr = 1.0 })
      local sch2 = make(opt2)
      sch2:load_state_dict(sd)
      opt2:load_state_dict(opt:state_dict())
      for _ = 1, 4 do
        sch:step(); sch2:step()
        assert.are.equal(sch:get_last_lr()[1], sch2:get_last_lr()[1])
        assert.are.equal(opt.param_groups[1].lr, opt2.param_groups[1].lr)
      end
      -- a fresh scheduler does not match
      local sch3 = make(optim.SGD({ wick.zeros(1):requires_grad_() }, { lr = 1.0 }))
      sch3:step()
      assert.are_not.equal(sch:get_last_lr()[1], sch3:get_last_lr()[1])
    end
  end)

  it("raise on unknown options", function()
    local opt = optim.SGD({ wick.zeros(1):requires_grad_() }, { lr = 1 })
    assert_error_has(function() optim.StepLR(opt, { step = 3 }) end, "step")
  end)
end)

-- ======================================================================
describe("nn.utils.clip_grad_norm_", function()
  local function with_grads()
    local p, q = wick.zeros(2):requires_grad_(), wick.zeros(1, 1):requires_grad_()
    p.grad = wick.tensor({ 3, 4 })
    q.grad = wick.tensor({ { 12 } })
    return p, q
  end

  it("returns the total norm and scales the gradients to max_norm", function()
    local p, q = with_grads()
    local total = nn.utils.clip_grad_norm_({ p, q }, 6.5) -- norm 13
    assert.is_true(wick.is_tensor(total))
    assert_close(total:item(), 13, 1e-6)
    local c = 6.5 / (13 + 1e-6)
    assert_close(p.grad, { 3 * c, 4 * c }, 1e-6)
    assert_close(q.grad, { { 12 * c } }, 1e-6)
    -- the new norm is max_norm
    local n = math.sqrt(p.grad:pow(2):sum():item() + q.grad:pow(2):sum():item())
    assert_close(n, 6.5, 1e-5)
  end)

  it("leaves gradients alone under max_norm", function()
    local p, q = with_grads()
    assert_close(nn.utils.clip_grad_norm_({ p, q }, 100):item(), 13, 1e-6)
    assert_close(p.grad, { 3, 4 })
    assert_close(q.grad, { { 12 } })
  end)

  it("the infinity norm and other p-norms; a single tensor; no gradients", function()
    local p, q = with_grads()
    assert_close(nn.utils.clip_grad_norm_({ p, q }, 6, math.huge):item(), 12, 1e-6)
    assert_close(q.grad, { { 6 } }, 1e-5)
    p, q = with_grads()
    assert_close(nn.utils.clip_grad_norm_({ p, q }, 1000, 1):item(), 19, 1e-6)
    p = with_grads()
    assert_close(nn.utils.clip_grad_norm_(p, 1):item(), 5, 1e-6)
    assert_close(p.grad, { 0.6, 0.8 }, 1e-5)
    assert_close(nn.utils.clip_grad_norm_({ wick.zeros(2):requires_grad_() }, 1):item(), 0)
  end)

  it("works on the parameters of a model after backward", function()
    wick.manual_seed(4)
    local m = nn.Linear(4, 3)
    local out = m(wick.randn(5, 4)) * 100
    out:sum():backward()
    local total = nn.utils.clip_grad_norm_(m:parameters(), 1.0)
    assert.is_true(total:item() > 1)
    local sq = 0
    for _, p in ipairs(m:parameters()) do sq = sq + p.grad:pow(2):sum():item() end
    assert_close(math.sqrt(sq), 1.0, 1e-5)
  end)
end)

-- ======================================================================
describe("small problems converge", function()
  it("linear regression with SGD and momentum reaches near-zero loss", function()
    wick.manual_seed(0)
    local x = wick.randn(64, 3)
    local y = x:mm(wick.tensor({ { 2 }, { -3 }, { 0.5 } })) + 1
    local m = nn.Linear(3, 1)
    local opt = optim.SGD(m:parameters(), { lr = 0.1, momentum = 0.9 })
    local crit = nn.MSELoss()
    local first, loss
    for i = 1, 200 do
      opt:zero_grad()
      loss = crit(m(x), y)
      if i == 1 then first = loss:item() end
      loss:backward()
      opt:step()
    end
    assert.is_true(first > 1)
    assert.is_true(loss:item() < 1e-6, "final loss " .. loss:item())
    assert_close(m.weight, { { 2, -3, 0.5 } }, 1e-4)
    assert_close(m.bias, { 1 }, 1e-4)
  end)

  it("XOR with a small MLP and Adam", function()
    wick.manual_seed(1)
    local x = wick.tensor({ { 0, 0 }, { 0, 1 }, { 1, 0 }, { 1, 1 } })
    local y = wick.tensor({ { 0 }, { 1 }, { 1 }, { 0 } })
    local m = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 1))
    local opt = optim.Adam(m:parameters(), { lr = 0.05 })
    local crit = nn.BCEWithLogitsLoss()
    local loss
    for _ = 1, 400 do
      opt:zero_grad()
      loss = crit(m(x), y)
      loss:backward()
      opt:step()
    end
    assert.is_true(loss:item() < 0.02, "final loss " .. loss:item())
    local p = m(x):sigmoid()
    assert.is_true(p:gt(0.5):to("float32"):equal(y), tostring(p))
  end)

  it("a 2-class logistic problem with CrossEntropyLoss, AdamW and a scheduler", function()
    wick.manual_seed(2)
    local n = 100
    local a = wick.randn(n, 2) * 0.5 + wick.tensor({ 2, 2 })
    local b = wick.randn(n, 2) * 0.5 - wick.tensor({ 2, 2 })
    local x = wick.cat({ a, b }, 1)
    local labels = {}
    for i = 1, 2 * n do labels[i] = i <= n and 1 or 2 end
    local y = support.I(labels)
    local m = nn.Linear(2, 2)
    local opt = optim.AdamW(m:parameters(), { lr = 0.1 })
    local sch = optim.CosineAnnealingLR(opt, { T_max = 50 })
    local crit = nn.CrossEntropyLoss()
    local loss
    for _ = 1, 50 do
      opt:zero_grad()
      loss = crit(m(x), y)
      loss:backward()
      opt:step()
      sch:step()
    end
    assert.is_true(loss:item() < 0.05, "final loss " .. loss:item())
    local pred = m(x):argmax(2)
    assert.are.equal(2 * n, pred:eq(y):to("float64"):sum():item())
  end)
end)

describe("optimizer state follows its parameters", function()
  it("moves momentum buffers after model:to(dtype) and keeps stepping", function()
    local wick = require("wick")
    local nn = wick.nn
    wick.manual_seed(3)
    local m = nn.Linear(3, 2)
    local opt = wick.optim.SGD(m:parameters(), { lr = 0.1, momentum = 0.9 })
    local x = wick.randn(4, 3)
    for _ = 1, 2 do opt:zero_grad(); m(x):sum():backward(); opt:step() end
    local weight = m.weight
    m:to("float64")
    assert.is_true(rawequal(weight, m.weight))
    opt:zero_grad()
    m(x:double()):sum():backward()
    opt:step()
    assert.are.equal("float64", opt.state[m.weight].momentum_buffer.dtype)
    assert.are.equal("float64", m.weight.dtype)
  end)
end)

-- Parameters after each of 3 steps, computed with PyTorch 2.x in float64 on
-- the same problem: AdamW([{params = [w], weight_decay = 0.1}, {params = [b],
-- weight_decay = 0}], lr = 0.1, betas = (0.9, 0.95)) (nanoGPT's decay / no-decay
-- groups) and Adam([w, b], lr = 0.1, amsgrad = True, weight_decay = 0.1).
local REF_GROUPS = {
  adamw_groups = {{w = {{0.3950000149999977, -0.1970000007100592}, {0.0980000008108108, 0.6920000004347826}}, b = {0.19999998800000146, -0.10000000249999995}}, {w = {{0.29846694769551824, -0.09566532438519015}, {-0.002814911001578768, 0.585353254563225}}, b = {0.23471505823647024, -0.00036313393362950863}}, {w = {{0.23350648137559085, 0.003507540420513322}, {-0.10232774983181996, 0.4802791637423407}}, b = {0.20976792233795577, 0.09856328087443834}}},
  adam_amsgrad = {{w = {{0.4000000085714278, -0.20000000069524912}, {0.10000000079787236, 0.7000000004201681}}, b = {0.19999998636363822, -0.10000000238095234}}, {w = {{0.3036634314954335, -0.10085533935438702}, {0.000276170907897888, 0.600365688940649}}, b = {0.21039830328504286, -0.0006944231616271973}}, {w = {{0.2215550696617422, -0.003172055049681488}, {-0.09895231815591415, 0.5014008840106068}}, b = {0.173566953137975, 0.09726138425698634}}},
}

describe("parameter groups", function()
  it("AdamW with nanoGPT's decay / no-decay groups and betas from the options, against PyTorch", function()
    check_steps(function(p)
      return optim.AdamW({ { params = { p[1] }, weight_decay = 0.1 }, { params = { p[2] }, weight_decay = 0 } },
        { lr = 0.1, betas = { 0.9, 0.95 }, fused = false })
    end, REF_GROUPS.adamw_groups)
  end)

  it("Adam with amsgrad, against PyTorch", function()
    check_steps(function(p) return optim.Adam(p, { lr = 0.1, amsgrad = true, weight_decay = 0.1 }) end, REF_GROUPS.adam_amsgrad)
  end)

  it("AdamW's decay is decoupled: p (1 - lr wd) before the Adam step", function()
    local w = wick.tensor({ 2.0, -1.0 }, F64):requires_grad_()
    local opt = optim.AdamW({ w }, { lr = 0.01, weight_decay = 0.5, eps = 0 })
    ;(w * wick.tensor({ 3.0, -0.5 }, F64)):sum():backward()
    opt:step()
    -- first step: m^ = g, v^ = g^2, so the Adam part is lr * sign(g)
    assert_close(w, { 2.0 * (1 - 0.005) - 0.01, -1.0 * (1 - 0.005) + 0.01 }, 1e-14)
  end)

  it("each group takes the options' defaults, param_groups[i].lr is read and written", function()
    local w, b = params()
    local opt = optim.AdamW({ { params = { w }, weight_decay = 0.1 }, { params = { b }, lr = 0.5 } },
      { lr = 0.01, betas = { 0.8, 0.9 } })
    assert.are.equal(0.01, opt.param_groups[1].lr)
    assert.are.equal(0.5, opt.param_groups[2].lr)
    assert.are.equal(0.1, opt.param_groups[1].weight_decay)
    assert.are.equal(0.01, opt.param_groups[2].weight_decay) -- AdamW's default
    assert.are.same({ 0.8, 0.9 }, opt.param_groups[2].betas)
    assert.are.equal(0.01, opt.defaults.lr)
    opt.param_groups[2].lr = 0 -- written: b no longer moves
    local b0 = b:clone()
    step(opt, w, b)
    assert.is_true(b:equal(b0))
    local w0 = w:clone()
    step(opt, w, b)
    assert.is_false(w:equal(w0))
  end)

  it("add_param_group adds a group with the defaults, and refuses a parameter already in one", function()
    local w, b = params()
    local opt = optim.SGD({ w }, { lr = 0.1, momentum = 0.9 })
    opt:add_param_group({ params = { b }, lr = 0.2 })
    assert.are.equal(2, #opt.param_groups)
    assert.are.equal(0.9, opt.param_groups[2].momentum)
    assert.are.equal(0.2, opt.param_groups[2].lr)
    local b0 = b:clone()
    step(opt, w, b)
    assert.is_false(b:equal(b0))
    assert_error_has(function() opt:add_param_group({ params = { w } }) end, "more than one parameter group")
    assert_error_has(function() opt:add_param_group({ w }) end, "params = {...}")
    assert_error_has(function() optim.SGD({ w, w }, { lr = 0.1 }) end, "appears twice")
  end)

  it("accepts fused and foreach (one implementation here), checks option and group types", function()
    local w, b = params()
    assert.is_not_nil(optim.AdamW({ w, b }, { lr = 1e-3, fused = true, foreach = false }))
    assert.is_not_nil(optim.SGD({ w, b }, { lr = 1e-3, fused = true }))
    assert_error_has(function() optim.AdamW({ w }, { fused = "yes" }) end, "expected a boolean for option 'fused'")
    assert_error_has(function() optim.AdamW({ w }, { betas = { 0.9, 1.5 } }) end, "betas must be two numbers")
    assert_error_has(function() optim.AdamW({ { params = { w }, weight_decay = "x" } }) end, "expected a number for option 'weight_decay'")
    assert_error_has(function() optim.AdamW({ { params = { w }, lr = -1 } }) end, "invalid learning rate")
    assert_error_has(function() optim.AdamW({ { params = { w }, amsgrad = 1 } }) end, "expected a boolean for option 'amsgrad'")
    assert_error_has(function() optim.AdamW({ { params = { w, "x" } } }) end, "parameter 2 of group 1 is not a tensor")
    -- keys of the user's own in a group are kept, as PyTorch keeps them
    local opt = optim.AdamW({ { params = { w }, name = "decay" } })
    assert.are.equal("decay", opt.param_groups[1].name)
  end)

  it("state_dict / load_state_dict with two groups: the resumed run continues identically", function()
    local function make(w, b)
      return optim.AdamW({ { params = { w }, weight_decay = 0.1 }, { params = { b }, weight_decay = 0, lr = 0.05 } },
        { lr = 0.1, betas = { 0.9, 0.95 } })
    end
    local w, b = params()
    local opt = make(w, b)
    step(opt, w, b)
    opt.param_groups[1].lr = 0.07
    local sd = opt:state_dict()
    assert.are.equal(2, #sd.param_groups)
    assert.are.same({ 1 }, sd.param_groups[1].params)
    assert.are.same({ 2 }, sd.param_groups[2].params)
    local w2, b2 = w:detach():clone():requires_grad_(), b:detach():clone():requires_grad_()
    local opt2 = make(w2, b2)
    opt2:load_state_dict(sd)
    assert.are.equal(0.07, opt2.param_groups[1].lr)
    assert.are.equal(0.05, opt2.param_groups[2].lr)
    for _ = 1, 2 do
      step(opt, w, b)
      step(opt2, w2, b2)
    end
    assert.is_true(w:equal(w2))
    assert.is_true(b:equal(b2))
    -- a saved state with another group layout is refused
    local single = optim.AdamW({ w2, b2 })
    assert_error_has(function() single:load_state_dict(sd) end, "2 parameter groups")
  end)
end)

describe("more schedulers, as PyTorch's", function()
  local function one_param_opt(lr)
    local w = wick.zeros(2):requires_grad_()
    return optim.SGD({ w }, { lr = lr or 1 }), w
  end

  it("MultiStepLR: gamma at each milestone (PyTorch: 1, .5, .5, .5, .25, .25)", function()
    local opt = one_param_opt()
    local s = optim.lr_scheduler.MultiStepLR(opt, { milestones = { 2, 5 }, gamma = 0.5 })
    local got = {}
    for i = 1, 6 do s:step(); got[i] = s:get_last_lr()[1] end
    assert.are.same({ 1, 0.5, 0.5, 0.5, 0.25, 0.25 }, got)
    local s2 = optim.MultiStepLR((one_param_opt()), { milestones = { 2, 5 }, gamma = 0.5 })
    s2:load_state_dict(s:state_dict())
    assert.are.equal(6, s2.last_epoch)
    assert_error_has(function() optim.lr_scheduler.MultiStepLR(opt, { milestone = { 1 } }) end, "unknown option 'milestone'")
    assert.are.same({ 1, 3 }, optim.lr_scheduler.MultiStepLR(one_param_opt(), { milestones = { 3, 1 } }).milestones) -- (any order, as PyTorch's Counter)
    assert_error_has(function() optim.lr_scheduler.MultiStepLR(opt) end, "milestones is required")
  end)

  it("LambdaLR: base lr times f(step), f called from step 0 at construction", function()
    local opt = one_param_opt(2)
    local seen = {}
    local s = optim.lr_scheduler.LambdaLR(opt, { lr_lambda = function(e) seen[#seen + 1] = e; return 1 / (e + 1) end })
    assert.are.equal(2, opt.param_groups[1].lr)
    for _ = 1, 3 do s:step() end
    assert.are.same({ 0, 1, 2, 3 }, seen)
    assert.are.equal(2 / 4, s:get_last_lr()[1])
    assert.is_nil(s:state_dict().lr_lambda) -- a function is not saved, as in PyTorch
    assert_error_has(function() optim.lr_scheduler.LambdaLR(opt, { lr_lambda = 3 }) end, "option 'lr_lambda'")
  end)

  it("ReduceLROnPlateau: step(metric) (PyTorch: 1, 1, 1, .1, .1, .01, .01)", function()
    local opt = one_param_opt()
    local s = optim.lr_scheduler.ReduceLROnPlateau(opt, { mode = "min", patience = 1 })
    local got = {}
    for i, m in ipairs({ 5, 4, 4, 4, 4, wick.tensor(4), 3 }) do s:step(m); got[i] = opt.param_groups[1].lr end
    assert.are.same({ 1, 1, 1, 0.1, 0.1, 0.01, 0.01 }, (function()
      local r = {}
      for i, v in ipairs(got) do r[i] = math.floor(v * 1e12 + 0.5) / 1e12 end
      return r
    end)())
    local s2 = optim.ReduceLROnPlateau((one_param_opt()))
    s2:load_state_dict(s:state_dict())
    assert.are.equal(3, s2.best)
    assert_error_has(function() optim.ReduceLROnPlateau(opt, { mode = "lowest" }) end, "invalid value 'lowest'")
    assert_error_has(function() s:step("x") end, "expected a number")
  end)

  it("zero_grad(false) zeroes in place, zero_grad() drops the gradients", function()
    local opt, w = one_param_opt()
    w:sum():backward()
    opt:zero_grad(false)
    assert.is_not_nil(w.grad)
    assert.are.equal(0, w.grad:abs():sum():item())
    opt:zero_grad()
    assert.is_nil(w.grad)
  end)

  it("clip_grad_norm_ takes PyTorch's norm_type and error_if_nonfinite, by position or option", function()
    local w = wick.tensor({ 3.0, 4.0 }, F64):requires_grad_()
    w:sum():backward()
    w.grad = wick.tensor({ 3.0, 4.0 }, F64)
    local total = nn.utils.clip_grad_norm_({ w }, 1, { norm_type = 1 })
    assert.are.equal(7, total:item())
    w.grad = wick.tensor({ 0 / 0, 1 }, F64)
    assert_error_has(function() nn.utils.clip_grad_norm_({ w }, 1, 2, true) end, "non-finite")
    assert_error_has(function() nn.utils.clip_grad_norm_({ w }, 1, { norm = 2 }) end, "unknown option 'norm'")
  end)
end)

describe("PyTorch's positional hyper-parameters", function()
  it("SGD(params, lr, momentum), AdamW(params, lr, betas[, opts]) as PyTorch orders them", function()
    local w, b = params()
    local opt = optim.SGD({ w, b }, 0.1, 0.9)
    assert.are.equal(0.1, opt.param_groups[1].lr)
    assert.are.equal(0.9, opt.param_groups[1].momentum)
    local a = optim.AdamW({ w, b }, 1e-3, { 0.9, 0.95 }, { weight_decay = 0.1 })
    assert.are.same({ 0.9, 0.95 }, a.param_groups[1].betas)
    assert.are.equal(0.1, a.param_groups[1].weight_decay)
    -- the same steps as the options form
    check_steps(function(p) return optim.SGD(p, 0.1, 0.9) end, REF.sgd_momentum)
    assert_error_has(function() optim.SGD({ w }, "0.1") end, "SGD: expected a number or a tensor for option 'lr'")
    assert_error_has(function() optim.SGD({ w }, 0.1, { lr = 0.2 }) end, "given both")
  end)
end)

describe("schedulers take PyTorch's positional arguments", function()
  it("StepLR(opt, step_size, gamma), MultiStepLR(opt, milestones), LambdaLR(opt, f), ReduceLROnPlateau(opt, mode)", function()
    local function opt_of() return optim.SGD({ wick.zeros(1):requires_grad_() }, { lr = 1 }) end
    local opt = opt_of()
    local s = optim.lr_scheduler.StepLR(opt, 2, 0.5)
    for _ = 1, 4 do s:step() end
    assert.are.equal(0.25, opt.param_groups[1].lr)
    local m = optim.lr_scheduler.MultiStepLR(opt_of(), { 1, 3 }, { gamma = 0.5 })
    m:step()
    assert.are.equal(0.5, m:get_last_lr()[1])
    local l = optim.lr_scheduler.LambdaLR(opt_of(), function(e) return 1 / (e + 2) end)
    assert.are.equal(0.5, l:get_last_lr()[1])
    assert.are.equal("max", optim.lr_scheduler.ReduceLROnPlateau(opt_of(), "max").mode)
    assert.are.equal(5, optim.lr_scheduler.CosineAnnealingLR(opt_of(), 5).T_max)
    assert_error_has(function() optim.lr_scheduler.StepLR(opt_of(), "2") end, "StepLR: expected a number for option 'step_size'")
    assert_error_has(function() optim.lr_scheduler.StepLR(opt_of(), 2, { step_size = 3 }) end, "given both")
  end)
end)

describe("state saved by PyTorch", function()
  -- what wick.load gives for torch.save(opt.state_dict()): parameters numbered
  -- from 0, scalars such as step as 0-dim tensors
  local function as_pytorch(sd)
    local out = { state = {}, param_groups = {} }
    for i, s in pairs(sd.state) do
      local c = {}
      for k, v in pairs(s) do c[k] = type(v) == "number" and wick.tensor(v, F64) or v end
      out.state[i - 1] = c
    end
    for gi, g in ipairs(sd.param_groups) do
      local c = { params = {} }
      for k, v in pairs(g) do if k ~= "params" then c[k] = v end end
      for j, i in ipairs(g.params) do c.params[j] = i - 1 end
      out.param_groups[gi] = c
    end
    return out
  end

  it("resumes an optimizer from PyTorch's numbering and 0-dim scalars", function()
    for _, make in ipairs({
      function(p) return optim.Adam(p, { lr = 0.1 }) end,
      function(p) return optim.SGD(p, { lr = 0.1, momentum = 0.9 }) end,
      function(p) return optim.NAdam(p, { lr = 0.1 }) end,
    }) do
      local a, b = wick.tensor({ 1, 2 }, F64):requires_grad_(), wick.tensor({ { 3, -1 } }, F64):requires_grad_()
      local function run(opt, x, y)
        opt:zero_grad()
        local loss = (x * x):sum() + (y * y * y):sum()
        loss:backward()
        opt:step()
      end
      local opt = make({ a, b })
      for _ = 1, 3 do run(opt, a, b) end
      local a2, b2 = a:detach():clone():requires_grad_(), b:detach():clone():requires_grad_()
      local opt2 = make({ a2, b2 })
      opt2:load_state_dict(as_pytorch(opt:state_dict()))
      run(opt, a, b)
      run(opt2, a2, b2)
      assert.is_true(a:equal(a2) and b:equal(b2))
    end
  end)

  it("loads a scheduler's state with PyTorch's own bookkeeping keys", function()
    local p = wick.zeros(1):requires_grad_()
    local sched = optim.lr_scheduler.StepLR(optim.SGD({ p }, { lr = 1 }), 2, 0.5)
    local sd = sched:state_dict()
    sd._is_initial, sd._get_lr_called_within_step = false, false
    local other = optim.lr_scheduler.StepLR(optim.SGD({ p }, { lr = 1 }), 2, 0.5)
    other:load_state_dict(sd)
    assert.are.same(sched:get_last_lr(), other:get_last_lr())
    sd.nonsense = 1
    assert_error_has(function() other:load_state_dict(sd) end, "unexpected key 'nonsense'")
  end)
end)

describe("PyTorch's optimizer defaults and checks", function()
  it("SGD's lr defaults to 1e-3, nesterov needs momentum, Adam takes decoupled_weight_decay (AdamW's rule)", function()
    local p = wick.ones(2):requires_grad_()
    assert.are.equal(1e-3, optim.SGD({ p }).param_groups[1].lr)
    assert_error_has(function() optim.SGD({ p }, { lr = 0.1, nesterov = true }) end,
      "Nesterov momentum requires a momentum and zero dampening")
    assert_error_has(function() optim.SGD({ p }, { lr = 0.1, momentum = 0.9, dampening = 0.1, nesterov = true }) end,
      "Nesterov momentum requires")
    local a = wick.tensor({ 1, 2 }, F64):requires_grad_()
    local b = a:detach():clone():requires_grad_()
    local oa = optim.Adam({ a }, { lr = 0.1, weight_decay = 0.1, decoupled_weight_decay = true })
    local ob = optim.AdamW({ b }, { lr = 0.1, weight_decay = 0.1 })
    for _ = 1, 3 do
      for _, pair in ipairs({ { a, oa }, { b, ob } }) do
        pair[2]:zero_grad()
        local loss = (pair[1] * pair[1]):sum()
        loss:backward()
        pair[2]:step()
      end
    end
    assert.is_true(a:equal(b))
  end)
end)

describe("lr_scheduler.LRScheduler, a scheduler of one's own", function()
  local S = optim.lr_scheduler
  local Warmup = S.LRScheduler:extend("Warmup")
  function Warmup:init(opt, warmup, last_epoch)
    self.warmup = warmup
    Warmup.super.init(self, opt, last_epoch)
  end
  function Warmup:get_lr()
    local out = {}
    for i, base in ipairs(self.base_lrs) do out[i] = base * math.min(1, (self.last_epoch + 1) / self.warmup) end
    return out
  end

  it("steps through its get_lr, as PyTorch's subclasses (values from torch 2.15)", function()
    local p = wick.ones(1):requires_grad_()
    local opt = optim.SGD({ { params = { p }, lr = 0.1 }, { params = { wick.ones(1):requires_grad_() }, lr = 1 } })
    local s = Warmup(opt, 4)
    local got = {}
    for _ = 1, 6 do
      got[#got + 1] = s:get_last_lr()[1]
      opt:step()
      s:step()
    end
    assert_close({ 0.025, 0.05, 0.075, 0.1, 0.1, 0.1 }, got, 1e-15)
    assert.are.equal(1, opt.param_groups[2].lr)
    assert.is_true(wick.isinstance(s, S.LRScheduler))
    -- its state is every plain field; it resumes
    local sd = s:state_dict()
    assert.are.equal(4, sd.warmup)
    assert.is_nil(sd.optimizer)
    local again = Warmup(optim.SGD({ { params = { p }, lr = 0.1 }, { params = { wick.ones(1):requires_grad_() }, lr = 1 } }), 4)
    again:load_state_dict(sd)
    assert.are.equal(s.last_epoch, again.last_epoch)
    assert.are.same(s:get_last_lr(), again:get_last_lr())
  end)

  it("says what a subclass left out", function()
    local p = wick.ones(1):requires_grad_()
    local NoInit = S.LRScheduler:extend("NoInit")
    function NoInit:init() end
    assert_error_has(function() NoInit(optim.SGD({ p }, { lr = 0.1 })) end, "init must call NoInit.super.init")
    local NoLr = S.LRScheduler:extend("NoLr")
    assert_error_has(function() NoLr(optim.SGD({ p }, { lr = 0.1 })) end, "NoLr:get_lr: not defined")
    local Short = S.LRScheduler:extend("Short")
    function Short:get_lr() return {} end
    assert_error_has(function() Short(optim.SGD({ p }, { lr = 0.1 })) end, "expected a table of 1 learning rates")
    assert_error_has(function() Warmup(optim.SGD({ p }, { lr = 0.1 }), 2, 5) end, "initial_lr")
  end)
end)

describe("schedulers resumed from PyTorch's saved states (spec/fixtures/pt_schedulers.py)", function()
  it("OneCycleLR, LambdaLR, MultiplicativeLR, ReduceLROnPlateau and MultiStepLR (its Counter) give PyTorch's next lr", function()
    local L = optim.lr_scheduler
    local all = wick.load("spec/fixtures/pt_schedulers.pt")
    local make = {
      OneCycleLR = function(o) return L.OneCycleLR(o, 0.1, { total_steps = 10 }) end,
      LambdaLR = function(o) return L.LambdaLR(o, function(e) return 0.5 ^ e end) end,
      MultiplicativeLR = function(o) return L.MultiplicativeLR(o, function() return 0.9 end) end,
      ReduceLROnPlateau = function(o) return L.ReduceLROnPlateau(o) end,
      MultiStepLR = function(o) return L.MultiStepLR(o, { 2, 4, 4 }) end,
    }
    for name, f in pairs(make) do
      local p = wick.nn.Parameter(wick.zeros(2))
      local o = optim.SGD({ p }, { lr = 0.1, momentum = 0.9 })
      local s = f(o)
      s:load_state_dict(all[name])
      o.param_groups[1].lr = all[name .. "_lr"]:item()
      o:step()
      if name == "ReduceLROnPlateau" then s:step(1.0) else s:step() end
      assert.is_true(math.abs(o.param_groups[1].lr - all[name .. "_next"]:item()) < 1e-15, name)
    end
  end)
end)

describe("optimizers by keyword", function()
  it("take {params = ..., lr = ...} as PyTorch's Adam(params=..., lr=...)", function()
    local m = nn.Linear(2, 3)
    local opt = optim.Adam({ lr = 1e-4, params = m:parameters() })
    assert.are.equal(1e-4, opt.param_groups[1].lr)
    assert.are.equal(2, #opt.param_groups[1].params)
    assert_error_has(function() optim.SGD({ lr = 0.1, params = {} }) end, "empty parameter list")
  end)
end)

describe("an optimizer of one's own (Optimizer:extend)", function()
  it("runs its step over the groups with state per parameter, and checks that init calls the base", function()
    local Sign = optim.Optimizer:extend("SignSGD")
    function Sign:init(params, lr, opts)
      Sign.super.init(self, params, { lr = lr, skip = (opts or {}).skip })
    end
    function Sign:step()
      wick.no_grad(function()
        for _, g in ipairs(self.param_groups) do
          for _, p in ipairs(g.params) do
            if p.grad and not (g.skip and g.skip(p)) then
              local state = self.state[p] -- a table from its first look, as PyTorch's defaultdict(dict)
              if next(state) == nil then state.n = 0 end
              state.n = state.n + 1
              p:add_(p.grad:sign() * -g.lr)
            end
          end
        end
      end)
    end
    local w = nn.Parameter(wick.tensor({ 1, -1 }))
    local b = nn.Parameter(wick.tensor({ 0 }))
    local opt = Sign({ w, b }, 0.5, { skip = function(p) return p:dim() == 1 and p:numel() == 1 end })
    w.grad, b.grad = wick.tensor({ 2, -3 }), wick.tensor({ 1 })
    opt:step()
    assert.are.same({ 0.5, -0.5 }, w:totable())
    assert.are.same({ 0 }, b:totable())
    assert.are.equal(1, opt.state[w].n)
    opt:zero_grad()
    assert.is_nil(w.grad)
    local Bad = optim.Optimizer:extend("Bad")
    function Bad:init() end
    assert_error_has(function() Bad() end, "must call Bad.super.init")
  end)
end)

describe("a built-in scheduler's last_epoch", function()
  it("takes -1 (HF's LambdaLR(opt, f, last_epoch)), and another from the groups' initial_lr, as PyTorch's", function()
    local p = nn.Parameter(wick.zeros(1))
    local fresh = optim.SGD({ p }, { lr = 0.1 })
    -- no initial_lr (an optimizer whose state was not loaded): PyTorch's KeyError
    assert_error_has(function() optim.lr_scheduler.LambdaLR(fresh, function() return 1 end, 3) end,
      "param 'initial_lr' is not specified in param_groups[1] when resuming")
    local opt = optim.SGD({ p }, { lr = 0.1 })
    optim.lr_scheduler.LambdaLR(opt, function() return 0.5 end, -1)
    assert_close(opt.param_groups[1].lr, 0.05, 1e-12)
    assert.are.equal(2, optim.lr_scheduler.StepLR(opt, { step_size = 2, last_epoch = -1 }).step_size)
    -- VITS' ExponentialLR(optim_g, gamma, last_epoch=epoch_str-2) after the optimizer's state is loaded
    local s = optim.lr_scheduler.LambdaLR(opt, function(e) return 1 / (e + 1) end, 3)
    assert.are.equal(4, s.last_epoch)
    assert_close(opt.param_groups[1].lr, 0.1 / 5, 1e-12)
    local warm = optim.SGD({ p }, { lr = 0.1 })
    warm.param_groups[1].initial_lr = 0.1
    local c = optim.lr_scheduler.CosineAnnealingWarmRestarts(warm, 10, { last_epoch = 4 })
    assert.are.same({ 5, 5 }, { c.T_cur, c.last_epoch }) -- PyTorch: 0.05, T_cur 5, last_epoch 5
    assert_close(c:get_last_lr()[1], 0.05, 1e-12)
  end)
end)
