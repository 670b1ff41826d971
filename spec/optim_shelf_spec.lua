-- The optimizer and scheduler shelf against PyTorch: every configuration in
-- spec/fixtures/ref_optim.lua (tools/reference/optim.py) is rebuilt here from
-- its description and must give PyTorch's parameters after each step (float64
-- tight, float32 loose) and PyTorch's learning rates and momenta after each
-- scheduler step. State dicts resume: mid-run through wick.save / wick.load
-- onto a fresh optimizer and scheduler, in another dtype, and on another
-- device (meta here, the GPU where there is one).
local wick = require("wick")
local optim = wick.optim
local support = require("spec.support")
local assert_close, assert_error_has = support.assert_close, support.assert_error_has

local REF = support.reference("optim")

-- the same names as LAMBDAS in tools/reference/optim.py
local LAMBDAS = {
  pow95 = function(e) return 0.95 ^ e end,
  inv = function(e) return 1 / (e + 1) end,
  const9 = function() return 0.9 end,
  half = function(x) return 0.5 ^ x end,
}

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys)
  return keys
end

local function copy(t)
  if type(t) ~= "table" then return t end
  local out = {}
  for k, v in pairs(t) do out[k] = copy(v) end
  return out
end

-- w [3, 4], b [3]; loss = mean((tanh(x w^T + b) - y)^2) (tools/reference/optim.py's problem)
local function problem(opts)
  local w = support.formula({ 3, 4 }, 0, opts):requires_grad_()
  local b = support.formula({ 3 }, 1, opts):requires_grad_()
  local x, y = support.inputs({ 5, 4 }, opts), support.formula({ 5, 3 }, 2, opts)
  local function loss_fn() return ((x:mm(w:t()) + b):tanh() - y):pow(2):mean() end
  return w, b, loss_fn
end

local function optimizer_for(case, params)
  return optim[case.optimizer](params, copy(case.options))
end

local function closure_for(opt, loss_fn)
  return function()
    opt:zero_grad()
    local loss = loss_fn()
    loss:backward()
    return loss
  end
end

local function check_step(opt, w, b, loss, expected, tol, what)
  local ok, why = support.close(w, support.ref_tensor(expected.w):totable(), tol, what .. " w")
  assert(ok, why)
  ok, why = support.close(b, support.ref_tensor(expected.b):totable(), tol, what .. " b")
  assert(ok, why)
  ok, why = support.close(wick.is_tensor(loss) and loss:item() or loss, expected.loss, tol, what .. " loss")
  assert(ok, why)
  if expected.ax then -- ASGD's average of w
    ok, why = support.close(opt.state[w].ax, support.ref_tensor(expected.ax):totable(), tol, what .. " ax")
    assert(ok, why)
  end
end

local function run_optimizer(case, opts, tol, first, last, opt, w, b, loss_fn)
  if not opt then
    w, b, loss_fn = problem(opts)
    opt = optimizer_for(case, { w, b })
  end
  local closure = closure_for(opt, loss_fn)
  for s = first or 1, last or #case.steps do
    local loss = opt:step(closure)
    check_step(opt, w, b, loss, case.steps[s], tol, "step " .. s)
    if case.optimizer == "LBFGS" and tol < 1e-6 then
      local st = opt.state[w]
      assert.are.same({ case.steps[s].func_evals, case.steps[s].n_iter }, { st.func_evals, st.n_iter })
    end
  end
  return opt, w, b, loss_fn
end

describe("optimizers against PyTorch (tools/reference/optim.py)", function()
  for _, name in ipairs(sorted_keys(REF.optimizers)) do
    local case = REF.optimizers[name]
    it(name .. ", float64: every step's parameters and loss", function()
      run_optimizer(case, { dtype = "float64" }, 1e-10)
    end)
    it(name .. ", float32 follows", function()
      run_optimizer(case, { dtype = "float32" }, case.optimizer == "LBFGS" and 2e-3 or 2e-5)
    end)
  end
end)

-- the state through a file: what a checkpoint holds
local function through_file(sd)
  local path = os.tmpname()
  wick.save(sd, path)
  local loaded = wick.load(path)
  os.remove(path)
  return loaded
end

local function state_tensors(opt, fn)
  for _, s in pairs(opt.state) do
    for _, v in pairs(s) do
      if wick.is_tensor(v) then fn(v)
      elseif type(v) == "table" then for _, x in pairs(v) do if wick.is_tensor(x) then fn(x) end end end
    end
  end
end

describe("optimizer state dicts resume (one configuration per class)", function()
  local seen, cases = {}, {}
  for _, name in ipairs(sorted_keys(REF.optimizers)) do
    local case = REF.optimizers[name]
    if not seen[case.optimizer] then seen[case.optimizer] = true; cases[#cases + 1] = { name, case } end
  end
  for _, nc in ipairs(cases) do
    local name, case = nc[1], nc[2]
    local half = math.floor(#case.steps / 2)
    it(name .. ": a fresh optimizer loaded mid-run (through a file) takes PyTorch's remaining steps", function()
      local opt = run_optimizer(case, { dtype = "float64" }, 1e-10, 1, half)
      local sd = through_file(opt:state_dict())
      local w, b, loss_fn = problem({ dtype = "float64" })
      -- the parameters where the first run left them
      wick.no_grad(function()
        w:copy_(support.ref_tensor(case.steps[half].w)); b:copy_(support.ref_tensor(case.steps[half].b))
      end)
      local opt2 = optimizer_for(case, { w, b })
      opt2:load_state_dict(sd)
      run_optimizer(case, nil, 1e-10, half + 1, #case.steps, opt2, w, b, loss_fn)
    end)
    it(name .. ": float64 state resumes on float32 parameters (moved to their dtype)", function()
      local opt = run_optimizer(case, { dtype = "float64" }, 1e-10, 1, half)
      local w, b, loss_fn = problem({ dtype = "float32" })
      wick.no_grad(function()
        w:copy_(support.ref_tensor(case.steps[half].w)); b:copy_(support.ref_tensor(case.steps[half].b))
      end)
      local opt2 = optimizer_for(case, { w, b })
      opt2:load_state_dict(opt:state_dict())
      state_tensors(opt2, function(t) if t:is_floating_point() then assert.are.equal("float32", t.dtype) end end)
      run_optimizer(case, nil, case.optimizer == "LBFGS" and 2e-3 or 2e-5, half + 1, #case.steps, opt2, w, b, loss_fn)
    end)
    -- meta always (where the state must land, and a step's shapes), and the GPU where there is one
    local devices = { "meta" }
    for _, device in ipairs(support.devices()) do
      if device ~= "cpu" and device ~= "meta" then devices[#devices + 1] = device end
    end
    for _, device in ipairs(devices) do
      do
        it(name .. ": state saved on cpu resumes on " .. device, function()
          local opt = run_optimizer(case, { dtype = "float64" }, 1e-10, 1, half)
          local w, b, loss_fn = problem({ dtype = "float64", device = device })
          wick.no_grad(function()
            w:copy_(support.ref_tensor(case.steps[half].w):to(device)); b:copy_(support.ref_tensor(case.steps[half].b):to(device))
          end)
          local opt2 = optimizer_for(case, { w, b })
          opt2:load_state_dict(through_file(opt:state_dict()))
          local n = 0
          state_tensors(opt2, function(t) n = n + 1; assert.are.equal(wick.device(device).type, t.device.type) end)
          assert.is_true(n > 0)
          if device == "meta" then
            -- shapes and device rules only: an elementwise step runs on meta
            if case.optimizer ~= "LBFGS" then
              closure_for(opt2, loss_fn)()
              opt2:step()
            end
          else
            run_optimizer(case, nil, 1e-10, half + 1, #case.steps, opt2, w, b, loss_fn)
          end
        end)
      end
    end
  end
end)

-- ---- schedulers ----

local function make_scheduler(opt, spec)
  if spec.name == "SequentialLR" or spec.name == "ChainedScheduler" then
    local subs = {}
    for i, s in ipairs(spec.schedulers) do subs[i] = make_scheduler(opt, s) end
    if spec.name == "SequentialLR" then return optim.lr_scheduler.SequentialLR(opt, subs, copy(spec.milestones)) end
    return optim.lr_scheduler.ChainedScheduler(subs)
  end
  local opts = copy(spec.options)
  for _, key in ipairs({ "lr_lambda", "scale_fn" }) do
    local f = opts[key]
    if type(f) == "table" then
      opts[key] = {}
      for i, n in ipairs(f) do opts[key][i] = LAMBDAS[n] end
    elseif f ~= nil then
      opts[key] = LAMBDAS[f]
    end
  end
  return optim.lr_scheduler[spec.name](opt, opts)
end

local function make_optimizer(case, dtype)
  local params = { wick.zeros(2, { dtype = dtype or "float64" }):requires_grad_(),
    wick.zeros(3, { dtype = dtype or "float64" }):requires_grad_() }
  if case.groups then
    local groups = {}
    for i, g in ipairs(case.groups) do
      groups[i] = copy(g)
      groups[i].params = { params[i] }
    end
    return optim[case.optimizer](groups, copy(case.options))
  end
  return optim[case.optimizer](params, copy(case.options))
end

local function momenta(opt)
  local out = {}
  for i, g in ipairs(opt.param_groups) do out[i] = g.betas and g.betas[1] or g.momentum or 0 end
  return out
end

local function nsteps(case) return case.epochs and #case.epochs or case.metrics and #case.metrics or case.steps end

local function step_scheduler(case, opt, sched, i)
  opt:step()
  if case.epochs then sched:step(case.epochs[i])
  elseif case.metrics then sched:step(case.metrics[i])
  else sched:step() end
end

local function check_lr(case, opt, sched, i)
  local what = ("after step %d"):format(i)
  local ok, why = support.close(sched:get_last_lr(), case.lrs[i + 1], 1e-12, what .. ": lr")
  assert(ok, why)
  for gi, g in ipairs(opt.param_groups) do assert.are.equal(sched:get_last_lr()[gi], g.lr) end
  ok, why = support.close(momenta(opt), case.momenta[i + 1], 1e-12, what .. ": momentum")
  assert(ok, why)
end

describe("schedulers against PyTorch (tools/reference/optim.py)", function()
  for _, name in ipairs(sorted_keys(REF.schedulers)) do
    local case = REF.schedulers[name]
    it(name .. ": the lr (and momentum) after construction and each step", function()
      local opt = make_optimizer(case)
      local sched = make_scheduler(opt, case.scheduler)
      check_lr(case, opt, sched, 0)
      for i = 1, nsteps(case) do
        step_scheduler(case, opt, sched, i)
        check_lr(case, opt, sched, i)
      end
    end)
    it(name .. ": optimizer and scheduler state saved mid-run resume on a fresh pair", function()
      local opt = make_optimizer(case)
      local sched = make_scheduler(opt, case.scheduler)
      local half = math.floor(nsteps(case) / 2)
      for i = 1, half do step_scheduler(case, opt, sched, i) end
      local saved = through_file({ optimizer = opt:state_dict(), scheduler = sched:state_dict() })
      -- float32 parameters this time: the schedule does not depend on them
      local opt2 = make_optimizer(case, "float32")
      local sched2 = make_scheduler(opt2, case.scheduler)
      opt2:load_state_dict(saved.optimizer)
      sched2:load_state_dict(saved.scheduler)
      check_lr(case, opt2, sched2, half)
      for i = half + 1, nsteps(case) do
        step_scheduler(case, opt2, sched2, i)
        check_lr(case, opt2, sched2, i)
      end
    end)
  end
end)

describe("the shelf's arguments and errors, as PyTorch's", function()
  local function params() return { wick.zeros(2):requires_grad_() } end
  local function sgd() return optim.SGD(params(), { lr = 1, momentum = 0.9 }) end

  it("optimizers take PyTorch's positional hyper-parameters", function()
    local r = optim.RMSprop(params(), 0.05, 0.8, 1e-6, 0.1, 0.9, true)
    local g = r.param_groups[1]
    assert.are.same({ 0.05, 0.8, 1e-6, 0.1, 0.9, true }, { g.lr, g.alpha, g.eps, g.weight_decay, g.momentum, g.centered })
    assert.are.equal(0.5, optim.Adagrad(params(), 0.1, 0, 0, 0.5).param_groups[1].initial_accumulator_value)
    assert.are.equal(true, optim.NAdam(params(), 0.1, { 0.9, 0.99 }, 1e-8, 0.1, 4e-3, true).param_groups[1].decoupled_weight_decay)
    assert.are.equal(true, optim.RAdam(params(), { decoupled_weight_decay = true }).param_groups[1].decoupled_weight_decay)
    assert.are.same({ 0.8, 0.9 }, optim.Adamax(params(), 0.1, { 0.8, 0.9 }).param_groups[1].betas)
    assert.are.same({ 0.3, 1.5 }, optim.Rprop(params(), 0.1, { 0.3, 1.5 }).param_groups[1].etas)
    assert.are.equal(5, optim.ASGD(params(), 0.1, 1e-4, 0.75, 5).param_groups[1].t0)
    local l = optim.LBFGS(params(), 1, 16)
    assert.are.equal(20, l.param_groups[1].max_eval) -- max_iter * 5 / 4, as PyTorch
    assert.is_nil(l.param_groups[1].line_search_fn)
  end)

  it("optimizers refuse bad options", function()
    assert_error_has(function() optim.RMSprop(params(), { alpha = "x" }) end, "expected a number for option 'alpha'")
    assert_error_has(function() optim.Adagrad(params(), { lr = -1 }) end, "invalid learning rate")
    assert_error_has(function() optim.NAdam(params(), { betas = { 1, 0.9 } }) end, "betas must be two numbers")
    assert_error_has(function() optim.RAdam(params(), { decoupled = true }) end, "unknown option 'decoupled'")
    assert_error_has(function() optim.LBFGS(params(), { line_search_fn = "armijo" }) end, "line_search_fn")
    assert_error_has(function() optim.Rprop(params(), { etas = { 1.2, 0.5 } }) end, "Invalid eta values")
    assert_error_has(function() optim.Rprop(params(), { step_sizes = { 1, 0.5 } }) end, "step_sizes must be")
    assert_error_has(function() optim.LBFGS(params(), { max_iter = 0 }) end, "max_iter")
    assert_error_has(function()
      optim.LBFGS({ { params = params() }, { params = params() } })
    end, "doesn't support per-parameter options")
    local l = optim.LBFGS(params())
    assert_error_has(function() l:add_param_group({ params = params() }) end, "doesn't support per-parameter options")
    assert_error_has(function() l:step() end, "closure")
    assert_error_has(function() l:step(function() return "x" end) end, "the closure must return the loss")
  end)

  it("LBFGS stops at once when the gradient is already below tolerance_grad", function()
    local p = wick.zeros(3, { dtype = "float64" }):requires_grad_()
    local opt = optim.LBFGS({ p })
    local calls = 0
    local loss = opt:step(function()
      calls = calls + 1
      opt:zero_grad()
      local l = (p * p):sum()
      l:backward()
      return l
    end)
    assert.are.equal(1, calls)
    assert.are.equal(0, loss:item())
    -- no elements at all: nothing to optimize, one evaluation
    local e = wick.zeros(0):requires_grad_()
    local opt2 = optim.LBFGS({ e })
    calls = 0
    opt2:step(function() calls = calls + 1; opt2:zero_grad(); local l = e:sum(); l:backward(); return l end)
    assert.are.equal(1, calls)
  end)

  it("schedulers take PyTorch's positional arguments", function()
    local opt = sgd()
    local s = optim.lr_scheduler.OneCycleLR(opt, 1.0, 10)
    assert.are.equal(10, s.total_steps)
    assert_close(s:get_last_lr()[1], 0.04, 1e-12)
    local c = optim.lr_scheduler.CosineAnnealingWarmRestarts(sgd(), 3, 2, 0.01)
    assert.are.same({ 3, 2, 0.01 }, { c.T_0, c.T_mult, c.eta_min })
    local o = sgd()
    local seq = optim.SequentialLR(o, { optim.LinearLR(o, 0.1, 1, 2), optim.ExponentialLR(o, 0.5) }, { 2 })
    assert.are.equal(0.1, seq:get_last_lr()[1])
    assert.are.same({ 0.5, 0.25 }, { optim.LinearLR(sgd(), 0.5, 0.25, 4).start_factor, optim.LinearLR(sgd(), 0.5, 0.25, 4).end_factor })
    assert.are.equal(2, optim.PolynomialLR(sgd(), 4, 2).power)
    assert.are.equal(0.5, optim.ConstantLR(sgd(), 0.5, 2):get_last_lr()[1])
    local cyc = optim.CyclicLR(sgd(), 0.1, 1, 4, 2, "triangular2")
    assert.are.same({ 6, "triangular2", 0.1 }, { cyc.total_size, cyc.mode, cyc:get_last_lr()[1] })
  end)

  it("schedulers refuse bad arguments with PyTorch's messages", function()
    assert_error_has(function() optim.LinearLR(sgd(), { start_factor = 0 }) end, "Starting multiplicative factor")
    assert_error_has(function() optim.ConstantLR(sgd(), { factor = 2 }) end, "between 0 and 1")
    assert_error_has(function() optim.OneCycleLR(sgd(), { max_lr = 1 }) end, "total_steps OR (epochs AND steps_per_epoch)")
    assert_error_has(function() optim.OneCycleLR(sgd(), { max_lr = 1, total_steps = 5, anneal_strategy = "exp" }) end, "anneal_strategy")
    assert_error_has(function() optim.OneCycleLR(optim.Adagrad(params()), { max_lr = 1, total_steps = 5 }) end, "momentum or beta1")
    assert_error_has(function() optim.OneCycleLR(sgd(), { max_lr = { 1, 2 }, total_steps = 5 }) end, "max_lr must have the same length")
    local one = optim.OneCycleLR(sgd(), { max_lr = 1, total_steps = 2 })
    one:step(); one:step()
    assert_error_has(function() one:step() end, "Tried to step 3 times. The specified number of total steps is 2")
    assert_error_has(function() optim.CosineAnnealingWarmRestarts(sgd(), 0) end, "Expected positive integer T_0")
    assert_error_has(function() optim.CyclicLR(sgd(), 0.1, 1, { mode = "saw" }) end, "invalid value 'saw'")
    assert_error_has(function() optim.CyclicLR(sgd(), { base_lr = 0.1 }) end, "base_lr and max_lr are required")
    assert_error_has(function() optim.CyclicLR(optim.Adagrad(params()), 0.1, 1) end, "momentum or beta1")
    assert_error_has(function() optim.CosineAnnealingWarmRestarts(sgd(), 2, 1.5) end, "Expected integer T_mult >= 1")
    assert_error_has(function() optim.CosineAnnealingWarmRestarts(sgd(), 2):step(-1) end, "Expected non-negative epoch")
    local o = sgd()
    local a, b = optim.StepLR(o, 2), optim.ExponentialLR(o, 0.5)
    assert_error_has(function() optim.SequentialLR(o, { a, b }, { 1, 2 }) end, "one more than the number of milestone points")
    assert_error_has(function() optim.SequentialLR(o, { a, optim.ReduceLROnPlateau(o) }, { 1 }) end, "ReduceLROnPlateau")
    assert_error_has(function() optim.SequentialLR(o, { a, optim.StepLR(sgd(), 1) }, { 1 }) end, "same optimizer")
    assert_error_has(function() optim.ChainedScheduler({}) end, "at least one scheduler")
    local o2 = sgd()
    local nested = optim.SequentialLR(o2, { optim.StepLR(o2, 2), optim.ChainedScheduler({ optim.ExponentialLR(o2, 0.5) }) }, { 1 })
    assert_error_has(function() nested:step() end, "a ChainedScheduler cannot restart at a milestone")
    assert_error_has(function() optim.StepLR(o) end, "step_size is required")
    assert_error_has(function() optim.StepLR(o, 2):load_state_dict({ step = 1 }) end, "unexpected key 'step'")
  end)

  it("a user's own change to group.lr carries on through the recursive form, as in PyTorch", function()
    local opt = sgd()
    local s = optim.ExponentialLR(opt, 0.5)
    s:step()
    opt.param_groups[1].lr = 3
    s:step()
    assert.are.equal(1.5, s:get_last_lr()[1])
    s:step(4) -- an epoch given: the closed form, base lr * gamma^4
    assert.are.equal(1 / 16, s:get_last_lr()[1])
  end)
end)
