-- wick.optim: SGD, Adam, AdamW and learning-rate schedulers. Updates run under
-- wick.no_grad with in-place ops, so optimizer state lives on each parameter's
-- device and nothing moves between devices.
local wick = require("wick")
local check = require("wick.argcheck")

local optim = {}
local unpack = table.unpack or unpack

local Optimizer = {}
Optimizer.__index = Optimizer
optim.Optimizer = Optimizer

-- Each class's update rule and each scheduler's formula, kept out of the
-- public tables (an object's methods are only what a user may call).
local updates, formulas = setmetatable({}, { __mode = "k" }), setmetatable({}, { __mode = "k" })

local function class(name, defaults, step)
  local C = setmetatable({}, { __index = Optimizer, __call = function(cls, params, ...) return cls.new(cls, params, ...) end })
  C.__index = C
  C.__name = name
  C.defaults = defaults
  updates[C] = step
  return C
end

-- Options PyTorch's optimizers take that choose an implementation, not a result
-- (wick has one implementation of each): accepted so that scripts passing them
-- (nanoGPT's fused = true on CUDA) run; any other value than a boolean or nil errors.
local IMPLEMENTATION = { foreach = "boolean", fused = "boolean", capturable = "boolean", differentiable = "boolean" }

-- The kind of each option (argcheck.options), from its default's type.
local function option_kinds(cls)
  local kinds = rawget(cls, "_option_kinds")
  if not kinds then
    kinds = {}
    for k, v in pairs(cls.defaults) do
      kinds[k] = v == "required" and "number" or type(v) == "number" and "number" or type(v) == "boolean" and "boolean"
        or "table"
    end
    for k, v in pairs(IMPLEMENTATION) do kinds[k] = v end
    rawset(cls, "_option_kinds", kinds)
  end
  return kinds
end

-- Checks the values of one group's hyper-parameters (a group may also carry
-- keys of the user's own, as in PyTorch; those are kept as they are).
local function check_group(name, group, kinds)
  for k, v in pairs(group) do
    if k == "betas" then
      if type(v) ~= "table" or type(v[1]) ~= "number" or type(v[2]) ~= "number" or v[1] ~= v[1] or v[2] ~= v[2]
          or v[1] < 0 or v[1] >= 1 or v[2] < 0 or v[2] >= 1 then
        check.fail(name, "betas must be two numbers in [0, 1), got %s", check.describe(v))
      end
    elseif k ~= "params" and kinds[k] == "number" then
      if type(v) ~= "number" or v ~= v then check.fail(name, "expected a number for option '%s', got %s", k, check.describe(v)) end
      if v < 0 then check.fail(name, "invalid %s value: %s (must be >= 0)", k == "lr" and "learning rate" or k, v) end
    elseif k ~= "params" and kinds[k] == "boolean" and type(v) ~= "boolean" then
      check.fail(name, "expected a boolean for option '%s', got %s", k, check.describe(v))
    end
  end
end

-- One parameter group: the optimizer's defaults, then the group's own options.
local function make_group(self, g, gi)
  local name = getmetatable(self).__name
  if type(g) ~= "table" or getmetatable(g) ~= nil or g.params == nil then
    check.fail(name, "parameter group %s must be a table with params = {...}, got %s", tostring(gi), check.describe(g))
  end
  local params = g.params
  if wick.is_tensor(params) then params = { params } end
  if type(params) ~= "table" then check.fail(name, "the params of parameter group %s must be an array of tensors", tostring(gi)) end
  local group = { params = {} }
  for k, v in pairs(self.defaults) do group[k] = v end
  for k, v in pairs(g) do if k ~= "params" then group[k] = v end end
  if type(group.betas) == "table" then group.betas = { group.betas[1], group.betas[2] } end
  local seen = {}
  for i = 1, #params do
    local p = params[i]
    if not wick.is_tensor(p) then check.fail(name, "parameter %d of group %s is not a tensor (got %s)", i, tostring(gi), check.describe(p)) end
    if seen[p] then check.fail(name, "parameter %d appears twice in parameter group %s", i, tostring(gi)) end
    seen[p] = true
    group.params[i] = p
  end
  for k, v in pairs(params) do
    if type(k) ~= "number" or k < 1 or k > #params or k ~= math.floor(k) then
      check.fail(name, "the params of parameter group %s must be an array (found the key %s)", tostring(gi), tostring(k))
    end
    local _ = v
  end
  if group.lr == "required" or type(group.lr) ~= "number" then check.fail(name, "lr is required (a number)") end
  check_group(name, group, option_kinds(getmetatable(self)))
  for _, other in ipairs(self.param_groups) do
    for _, q in ipairs(other.params) do
      if seen[q] then check.fail(name, "some parameters appear in more than one parameter group") end
    end
  end
  return group
end

-- PyTorch's positional hyper-parameters after params, per optimizer (the rest
-- are keyword-only there: options here)
local POSITIONAL = {
  SGD = { "lr", "momentum", "dampening", "weight_decay", "nesterov" },
  Adam = { "lr", "betas", "eps", "weight_decay", "amsgrad" },
  AdamW = { "lr", "betas", "eps", "weight_decay", "amsgrad" },
  Adadelta = { "lr", "rho", "eps", "weight_decay" },
}

--- Optimizer(params[, lr[, ...]][, opts]): params an array of tensors or of
--- groups {params = {...}, lr = ...}; hyper-parameters by PyTorch's position or
--- in the options table.
function Optimizer.new(cls, params, ...)
  if type(cls) ~= "table" or type(cls.defaults) ~= "table" then check.expected("Optimizer.new", "class", "an optimizer class", cls) end
  local opts = check.positional(cls.__name, POSITIONAL[cls.__name] or {}, option_kinds(cls), ...)
  if wick.is_tensor(params) then params = { params } end
  if type(params) ~= "table" or getmetatable(params) ~= nil then
    wick.error(("%s: expected an array of parameters (model:parameters()) or of parameter groups, got %s"):format(cls.__name, check.describe(params)))
  end
  if #params == 0 then wick.error(("%s: optimizer got an empty parameter list (expected model:parameters() or an array of parameter groups)"):format(cls.__name)) end
  local defaults = {}
  for k, v in pairs(cls.defaults) do defaults[k] = v end
  for k, v in pairs(opts) do defaults[k] = v end
  local self = setmetatable({ param_groups = {}, state = {}, defaults = defaults }, cls)
  -- an array of tensors, or an array of groups {params = {...}, lr = ...}
  local list = wick.is_tensor(params[1]) and { { params = params } } or params
  for gi, g in ipairs(list) do self:add_param_group(g, gi) end
  return self
end

--- add_param_group({params = {...}, lr = ...}): a new group, its missing
--- options from the optimizer's defaults (PyTorch's add_param_group).
function Optimizer:add_param_group(group, _index)
  if type(self) ~= "table" or type(self.param_groups) ~= "table" then check.expected("Optimizer:add_param_group", "self", "an optimizer", self) end
  self.param_groups[#self.param_groups + 1] = make_group(self, group, _index or #self.param_groups + 1)
end

local function this(self, fn)
  if type(self) ~= "table" or type(self.param_groups) ~= "table" then check.expected("Optimizer:" .. fn, "self", "an optimizer", self) end
  return self
end

--- zero_grad([set_to_none = true]): drops the gradients (or zeroes them in place).
function Optimizer:zero_grad(set_to_none)
  this(self, "zero_grad")
  -- PyTorch's zero_grad(set_to_none=True): by position or in an options table
  local o = check.positional("zero_grad", { "set_to_none" }, { set_to_none = "boolean" }, set_to_none)
  set_to_none = o.set_to_none ~= false
  for _, g in ipairs(self.param_groups) do
    for _, p in ipairs(g.params) do
      if set_to_none then p.grad = nil
      elseif p.grad then wick.no_grad(function() p.grad:zero_() end) end
    end
  end
end

local same_device = wick._core.same_device

-- State follows its parameter: after model:to(...) the next step moves it.
local function follow(p, state)
  for k, v in pairs(state) do
    if wick.is_tensor(v) and (not same_device(v, p) or (v:is_floating_point() and v.dtype ~= p.dtype)) then
      state[k] = v:to({ device = p.device, dtype = v:is_floating_point() and p.dtype or v.dtype })
    end
  end
end

local function update_all(self)
  local update = updates[getmetatable(self)]
  if not update then wick.error(("%s:step: this optimizer has no update rule"):format(tostring(getmetatable(self).__name))) end
  for _, group in ipairs(self.param_groups) do
    for _, p in ipairs(group.params) do
      local g = p.grad
      if g then
        local state = self.state[p]
        if not state then state = {}; self.state[p] = state
        else follow(p, state) end
        update(p, g, state, group)
      end
    end
  end
end

function Optimizer:step(closure)
  this(self, "step")
  if closure ~= nil then check.callable(closure, "step", "closure") end
  local loss
  if closure then loss = wick.enable_grad(closure) end
  wick.no_grad(update_all, self)
  return loss
end

-- Parameters are numbered in group order, as PyTorch numbers them.
local function numbered(self)
  local list = {}
  for _, group in ipairs(self.param_groups) do
    for _, p in ipairs(group.params) do list[#list + 1] = p end
  end
  return list
end

function Optimizer:state_dict()
  this(self, "state_dict")
  local state, groups, index = {}, {}, 0
  for gi, group in ipairs(self.param_groups) do
    local g = { params = {} }
    for k, v in pairs(group) do
      if k ~= "params" then g[k] = type(v) == "table" and { unpack(v) } or v end
    end
    for _, p in ipairs(group.params) do
      index = index + 1
      g.params[#g.params + 1] = index
      local s = self.state[p]
      if s then
        local copy = {}
        for k, v in pairs(s) do copy[k] = v end
        state[index] = copy
      end
    end
    groups[gi] = g
  end
  return { state = state, param_groups = groups }
end

--- Loads state saved by state_dict(); tensors move to each parameter's device and dtype.
function Optimizer:load_state_dict(sd)
  this(self, "load_state_dict")
  if type(sd) ~= "table" or type(sd.param_groups) ~= "table" or type(sd.state) ~= "table" then
    wick.error("load_state_dict: expected a table with state and param_groups (from opt:state_dict())")
  end
  if #sd.param_groups ~= #self.param_groups then
    wick.error(("load_state_dict: the saved state has %d parameter groups, this optimizer has %d"):format(#sd.param_groups, #self.param_groups))
  end
  for gi, g in ipairs(sd.param_groups) do
    if type(g) ~= "table" or type(g.params) ~= "table" then
      wick.error(("load_state_dict: group %d of the saved state is not a table with params"):format(gi))
    end
    if #g.params ~= #self.param_groups[gi].params then
      wick.error(("load_state_dict: group %d has %d parameters in the saved state but %d here"):format(gi, #g.params, #self.param_groups[gi].params))
    end
  end
  local params = numbered(self)
  self.state = {}
  for index, s in pairs(sd.state) do
    local p = params[tonumber(index)]
    if p and type(s) ~= "table" then
      wick.error(("load_state_dict: the state of parameter %s is a %s, not a table"):format(tostring(index), type(s)))
    end
    if p then
      local copy = {}
      for k, v in pairs(s) do
        if wick.is_tensor(v) then
          v = v:to({ device = p.device, dtype = v:is_floating_point() and p.dtype or v.dtype })
          if rawequal(v, s[k]) then v = v:clone() end
        end
        copy[k] = v
      end
      self.state[p] = copy
    end
  end
  for gi, g in ipairs(sd.param_groups) do
    for k, v in pairs(g) do if k ~= "params" then self.param_groups[gi][k] = v end end
  end
end

-- ---- SGD ----
optim.SGD = class("SGD", { lr = "required", momentum = 0, dampening = 0, weight_decay = 0, nesterov = false, maximize = false },
  function(p, g, state, group)
    if group.maximize then g = -g end
    if group.weight_decay ~= 0 then g = g + p * group.weight_decay end
    local momentum = group.momentum
    if momentum ~= 0 then
      local buf = state.momentum_buffer
      if not buf then
        buf = g:clone()
        state.momentum_buffer = buf
      else
        buf:mul_(momentum):add_(g, 1 - group.dampening)
      end
      if group.nesterov then g = g + buf * momentum else g = buf end
    end
    p:add_(g, -group.lr)
  end)

-- ---- Adam and AdamW ----
local fused_adam = wick._core._adam_step
local function adam(decoupled)
  return function(p, g, state, group)
    if group.maximize then g = -g end
    local b1, b2 = group.betas[1], group.betas[2]
    if not state.exp_avg then
      state.step = 0
      state.exp_avg = wick.zeros_like(p)
      state.exp_avg_sq = wick.zeros_like(p)
      if group.amsgrad then state.max_exp_avg_sq = wick.zeros_like(p) end
    end
    if not group.amsgrad and fused_adam(p, g, state.exp_avg, state.exp_avg_sq, group.lr, b1, b2,
        group.eps, group.weight_decay, state.step + 1, decoupled) then
      -- one pass in C (contiguous CPU float tensors), PyTorch's arithmetic
      state.step = state.step + 1
      return
    end
    if group.weight_decay ~= 0 then
      -- AdamW: p <- p (1 - lr wd) before the Adam step (decoupled); Adam: L2 in the gradient
      if decoupled then p:mul_(1 - group.lr * group.weight_decay)
      else g = g + p * group.weight_decay end
    end
    state.step = state.step + 1
    state.exp_avg:mul_(b1):add_(g, 1 - b1)
    state.exp_avg_sq:mul_(b2):add_(g * g, 1 - b2)
    local bc1, bc2 = 1 - b1 ^ state.step, 1 - b2 ^ state.step
    local second = state.exp_avg_sq
    if group.amsgrad then
      if not state.max_exp_avg_sq then state.max_exp_avg_sq = state.exp_avg_sq:clone() end
      state.max_exp_avg_sq:copy_(state.max_exp_avg_sq:maximum(state.exp_avg_sq))
      second = state.max_exp_avg_sq
    end
    local denom = (second:sqrt() / math.sqrt(bc2)):add_(group.eps)
    p:add_(state.exp_avg / denom, -group.lr / bc1)
  end
end
optim.Adam = class("Adam", { lr = 1e-3, betas = { 0.9, 0.999 }, eps = 1e-8, weight_decay = 0, amsgrad = false,
  maximize = false }, adam(false))
optim.AdamW = class("AdamW", { lr = 1e-3, betas = { 0.9, 0.999 }, eps = 1e-8, weight_decay = 1e-2, amsgrad = false,
  maximize = false }, adam(true))

-- ---- Adadelta (PyTorch's update rule; pytorch/examples' mnist uses it) ----
optim.Adadelta = class("Adadelta", { lr = 1.0, rho = 0.9, eps = 1e-6, weight_decay = 0, maximize = false },
  function(p, g, state, group)
    if group.maximize then g = -g end
    if group.weight_decay ~= 0 then g = g + p * group.weight_decay end
    if not state.square_avg then
      state.step = 0
      state.square_avg = wick.zeros_like(p)
      state.acc_delta = wick.zeros_like(p)
    end
    state.step = state.step + 1
    local rho, eps = group.rho, group.eps
    state.square_avg:mul_(rho):add_(g * g, 1 - rho)
    local delta = ((state.acc_delta + eps):sqrt() / (state.square_avg + eps):sqrt()) * g
    state.acc_delta:mul_(rho):add_(delta * delta, 1 - rho)
    p:add_(delta, -group.lr)
  end)

-- ---- schedulers ----
local Scheduler = {}
Scheduler.__index = Scheduler

-- kinds: the option kinds (argcheck.options) when not all numbers
local function scheduler(name, compute, defaults, kinds)
  local C = setmetatable({}, { __index = Scheduler, __call = function(cls, opt, ...) return cls.new(cls, opt, ...) end })
  C.__index = C
  C.__name = name
  formulas[C] = compute
  C.defaults = defaults
  C._kinds = kinds or {}
  return C
end

local function kinds_of(cls)
  local kinds = {}
  for k in pairs(cls.defaults) do kinds[k] = "number" end
  for k, v in pairs(cls._kinds) do kinds[k] = v end -- (also options with no default)
  return kinds
end

-- PyTorch's positional arguments after the optimizer, per scheduler
local SCHEDULER_POSITIONAL = {
  StepLR = { "step_size", "gamma" }, MultiStepLR = { "milestones", "gamma" }, ExponentialLR = { "gamma" },
  CosineAnnealingLR = { "T_max", "eta_min" }, LambdaLR = { "lr_lambda" },
  ReduceLROnPlateau = { "mode", "factor", "patience", "threshold", "threshold_mode", "cooldown", "min_lr", "eps" },
}
local function scheduler_options(cls, ...)
  return check.positional(cls.__name, SCHEDULER_POSITIONAL[cls.__name] or {}, kinds_of(cls), ...)
end

--- Scheduler(opt[, PyTorch's positional arguments][, opts])
function Scheduler.new(cls, opt, ...)
  if type(cls) ~= "table" or type(cls.defaults) ~= "table" then check.expected("Scheduler.new", "class", "a scheduler class", cls) end
  if type(opt) ~= "table" or type(opt.param_groups) ~= "table" then check.expected(cls.__name, "optimizer", "an optimizer", opt) end
  local opts = scheduler_options(cls, ...)
  local self = setmetatable({ optimizer = opt, last_epoch = 0, base_lrs = {} }, cls)
  for k, v in pairs(cls.defaults) do self[k] = v end
  for k, v in pairs(opts) do self[k] = v end
  if cls.__name == "StepLR" then check.int(self.step_size, "StepLR", "step_size", 1) end
  if cls.__name == "CosineAnnealingLR" and (self.T_max == 0) then check.fail("CosineAnnealingLR", "T_max must not be 0") end
  if cls.__name == "MultiStepLR" then
    local m = self.milestones
    if m == nil then check.fail("MultiStepLR", "milestones is required (an increasing array of step counts)") end
    for i = 1, #m do
      check.int(m[i], "MultiStepLR", "milestones", 0)
      if i > 1 and m[i] < m[i - 1] then check.fail("MultiStepLR", "milestones must be increasing") end
    end
  end
  if cls.__name == "LambdaLR" then
    local f = self.lr_lambda
    if f == nil then check.fail("LambdaLR", "lr_lambda is required (a function of the step count, or one per group)") end
    if type(f) == "table" and getmetatable(f) == nil then
      if #f ~= #opt.param_groups then
        check.fail("LambdaLR", "expected %d lr_lambdas, but got %d", #opt.param_groups, #f)
      end
      for i = 1, #f do check.callable(f[i], "LambdaLR", "lr_lambda") end
    end
  end
  for i, g in ipairs(opt.param_groups) do
    g.initial_lr = g.initial_lr or g.lr
    self.base_lrs[i] = g.initial_lr
  end
  -- PyTorch's initial step: the lr of step 0 (LambdaLR applies lr_lambda(0))
  local compute = formulas[cls]
  for i, g in ipairs(opt.param_groups) do g.lr = compute(self, self.base_lrs[i], i) end
  return self
end

local function sched(self, fn)
  if type(self) ~= "table" or type(self.optimizer) ~= "table" then check.expected("Scheduler:" .. fn, "self", "a scheduler", self) end
  return self
end

function Scheduler:step()
  sched(self, "step")
  self.last_epoch = self.last_epoch + 1
  local compute = formulas[getmetatable(self)]
  for i, g in ipairs(self.optimizer.param_groups) do g.lr = compute(self, self.base_lrs[i], i) end
end

function Scheduler:get_last_lr()
  sched(self, "get_last_lr")
  local out = {}
  for i, g in ipairs(self.optimizer.param_groups) do out[i] = g.lr end
  return out
end

-- The state: numbers and arrays of numbers (a function, like lr_lambda, is
-- not saved, as in PyTorch).
function Scheduler:state_dict()
  sched(self, "state_dict")
  local sd = { last_epoch = self.last_epoch, base_lrs = {} }
  for i, v in ipairs(self.base_lrs) do sd.base_lrs[i] = v end
  for k in pairs(kinds_of(getmetatable(self))) do
    local v = self[k]
    if type(v) == "number" or type(v) == "string" then sd[k] = v
    elseif type(v) == "table" and getmetatable(v) == nil and type(v[1]) ~= "function" then sd[k] = { unpack(v) } end
  end
  for _, k in ipairs(getmetatable(self)._extra_state or {}) do sd[k] = self[k] end
  return sd
end

function Scheduler:load_state_dict(sd)
  sched(self, "load_state_dict")
  check.table(sd, "load_state_dict", "state_dict")
  local cls = getmetatable(self)
  local kinds = kinds_of(cls)
  kinds.last_epoch, kinds.base_lrs = "number", "table"
  for _, k in ipairs(cls._extra_state or {}) do kinds[k] = "number" end
  for k, v in pairs(sd) do
    if type(k) ~= "string" or kinds[k] == nil then
      check.fail("load_state_dict", "unexpected key '%s' in a %s state", tostring(k), cls.__name)
    end
    if kinds[k] == "number" then check.number(v, "load_state_dict", k)
    else check.options({ [k] = v }, "load_state_dict", kinds) end
  end
  for k, v in pairs(sd) do self[k] = type(v) == "table" and { unpack(v) } or v end
end

optim.lr_scheduler = {}
optim.lr_scheduler.StepLR = scheduler("StepLR", function(self, base)
  return base * self.gamma ^ math.floor(self.last_epoch / self.step_size)
end, { step_size = 1, gamma = 0.1 })
optim.lr_scheduler.CosineAnnealingLR = scheduler("CosineAnnealingLR", function(self, base)
  return self.eta_min + (base - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
end, { T_max = 1, eta_min = 0 })
--- MultiStepLR(opt, {milestones = {...}, gamma = 0.1}): gamma^(milestones passed).
optim.lr_scheduler.MultiStepLR = scheduler("MultiStepLR", function(self, base)
  local passed = 0
  for _, m in ipairs(self.milestones) do if self.last_epoch >= m then passed = passed + 1 end end
  return base * self.gamma ^ passed
end, { gamma = 0.1 }, { milestones = "table" })
--- ExponentialLR(opt, {gamma = ...}): base * gamma^step.
optim.lr_scheduler.ExponentialLR = scheduler("ExponentialLR", function(self, base)
  return base * self.gamma ^ self.last_epoch
end, { gamma = 0.1 })
--- LambdaLR(opt, {lr_lambda = f}): base * f(step), step counted from 0.
optim.lr_scheduler.LambdaLR = scheduler("LambdaLR", function(self, base, i)
  local f = self.lr_lambda
  if type(f) == "table" and getmetatable(f) == nil then f = f[i] end
  local factor = f(self.last_epoch)
  if type(factor) ~= "number" then check.fail("LambdaLR", "lr_lambda returned a %s, not a number", type(factor)) end
  return base * factor
end, {}, { lr_lambda = "function|table" })

--- ReduceLROnPlateau(opt, {mode = "min", factor = 0.1, patience = 10, threshold = 1e-4,
--- threshold_mode = "rel", cooldown = 0, min_lr = 0, eps = 1e-8}): sched:step(metric)
--- multiplies the lr by factor once the metric has not improved for patience steps.
local Plateau = setmetatable({}, { __index = Scheduler, __call = function(cls, opt, ...) return cls.new(cls, opt, ...) end })
Plateau.__index = Plateau
Plateau.__name = "ReduceLROnPlateau"
Plateau.defaults = { mode = "min", factor = 0.1, patience = 10, threshold = 1e-4, threshold_mode = "rel", cooldown = 0,
  min_lr = 0, eps = 1e-8 }
Plateau._kinds = { mode = "string", threshold_mode = "string", min_lr = "number|table" }
Plateau._extra_state = { "best", "num_bad_epochs", "cooldown_counter" }
function Plateau.new(cls, opt, ...)
  if type(opt) ~= "table" or type(opt.param_groups) ~= "table" then check.expected(cls.__name, "optimizer", "an optimizer", opt) end
  local opts = scheduler_options(cls, ...)
  local self = setmetatable({ optimizer = opt, last_epoch = 0, base_lrs = {} }, cls)
  for k, v in pairs(cls.defaults) do self[k] = v end
  for k, v in pairs(opts) do self[k] = v end
  check.one_of(self.mode, cls.__name, "mode", { "min", "max" })
  check.one_of(self.threshold_mode, cls.__name, "threshold_mode", { "rel", "abs" })
  if self.factor >= 1 then check.fail(cls.__name, "Factor should be < 1.0.") end
  if type(self.min_lr) == "table" and #self.min_lr ~= #opt.param_groups then
    check.fail(cls.__name, "expected %d min_lrs, got %d", #opt.param_groups, #self.min_lr)
  end
  for i, g in ipairs(opt.param_groups) do self.base_lrs[i] = g.lr end
  self.best = self.mode == "min" and math.huge or -math.huge
  self.num_bad_epochs, self.cooldown_counter = 0, 0
  return self
end
local function better(self, a)
  local best, t = self.best, self.threshold
  if self.mode == "min" then
    return self.threshold_mode == "rel" and a < best * (1 - t) or self.threshold_mode == "abs" and a < best - t
  end
  return self.threshold_mode == "rel" and a > best * (1 + t) or self.threshold_mode == "abs" and a > best + t
end
function Plateau:step(metric)
  sched(self, "step")
  if wick.is_tensor(metric) then metric = metric:item() end
  check.number(metric, "ReduceLROnPlateau:step", "metrics")
  self.last_epoch = self.last_epoch + 1
  if better(self, metric) then
    self.best, self.num_bad_epochs = metric, 0
  else
    self.num_bad_epochs = self.num_bad_epochs + 1
  end
  if self.cooldown_counter > 0 then
    self.cooldown_counter = self.cooldown_counter - 1
    self.num_bad_epochs = 0
  end
  if self.num_bad_epochs > self.patience then
    for i, g in ipairs(self.optimizer.param_groups) do
      local min_lr = type(self.min_lr) == "table" and self.min_lr[i] or self.min_lr
      local new = math.max(g.lr * self.factor, min_lr)
      if g.lr - new > self.eps then g.lr = new end
    end
    self.cooldown_counter = self.cooldown
    self.num_bad_epochs = 0
  end
end
optim.lr_scheduler.ReduceLROnPlateau = Plateau

for name, C in pairs(optim.lr_scheduler) do optim[name] = C end

return optim
