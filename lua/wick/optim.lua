-- wick.optim: SGD, Adam, AdamW and learning-rate schedulers. Updates run under
-- wick.no_grad with in-place ops, so optimizer state lives on each parameter's
-- device and nothing moves between devices.
local wick = require("wick")
local check = require("wick.argcheck")

local optim = {}

local Optimizer = {}
Optimizer.__index = Optimizer
optim.Optimizer = Optimizer

-- Each class's update rule and each scheduler's formula, kept out of the
-- public tables (an object's methods are only what a user may call).
local updates, formulas = setmetatable({}, { __mode = "k" }), setmetatable({}, { __mode = "k" })

local function class(name, defaults, step)
  local C = setmetatable({}, { __index = Optimizer, __call = function(cls, params, opts) return cls.new(cls, params, opts) end })
  C.__index = C
  C.__name = name
  C.defaults = defaults
  updates[C] = step
  return C
end

-- The kind of each option (argcheck.options), from its default's type.
local function option_kinds(cls)
  local kinds = rawget(cls, "_option_kinds")
  if not kinds then
    kinds = {}
    for k, v in pairs(cls.defaults) do
      kinds[k] = v == "required" and "number" or type(v) == "number" and "number" or type(v) == "boolean" and "boolean"
        or "table"
    end
    rawset(cls, "_option_kinds", kinds)
  end
  return kinds
end

-- Checks the values of one group's hyper-parameters.
local function check_group(name, group)
  for k, v in pairs(group) do
    if k == "betas" then
      if type(v) ~= "table" or type(v[1]) ~= "number" or type(v[2]) ~= "number" or v[1] ~= v[1] or v[2] ~= v[2]
          or v[1] < 0 or v[1] >= 1 or v[2] < 0 or v[2] >= 1 then
        check.fail(name, "betas must be two numbers in [0, 1), got %s", check.describe(v))
      end
    elseif k ~= "params" and (k == "lr" or k == "momentum" or k == "dampening" or k == "weight_decay" or k == "eps") then
      if type(v) ~= "number" or v ~= v then check.fail(name, "expected a number for option '%s', got %s", k, check.describe(v)) end
      if v < 0 then check.fail(name, "invalid %s value: %s (must be >= 0)", k == "lr" and "learning rate" or k, v) end
    end
  end
end

function Optimizer.new(cls, params, opts)
  if type(cls) ~= "table" or type(cls.defaults) ~= "table" then check.expected("Optimizer.new", "class", "an optimizer class", cls) end
  opts = check.options(opts, cls.__name, option_kinds(cls))
  if type(params) ~= "table" or (#params == 0 and not wick.is_tensor(params)) then
    wick.error(("%s: expected a non-empty array of parameters (model:parameters()), got %s"):format(cls.__name, check.describe(params)))
  end
  if wick.is_tensor(params) then params = { params } end
  local groups = {}
  -- an array of tensors, or an array of groups {params = {...}, lr = ...}
  local list = wick.is_tensor(params[1]) and { { params = params } } or params
  for gi, g in ipairs(list) do
    if type(g) ~= "table" or type(g.params) ~= "table" then
      wick.error(("%s: parameter group %d must be a table with params = {...}, got %s"):format(cls.__name, gi, check.describe(g)))
    end
    local group = { params = {} }
    for k, v in pairs(cls.defaults) do group[k] = v end
    for k, v in pairs(opts) do group[k] = v end
    for k, v in pairs(g) do if k ~= "params" then group[k] = v end end
    for i, p in ipairs(g.params) do
      if not wick.is_tensor(p) then wick.error(("%s: parameter %d is not a tensor"):format(cls.__name, i)) end
      group.params[i] = p
    end
    if type(group.lr) ~= "number" then wick.error(("%s: lr is required (a number)"):format(cls.__name)) end
    check_group(cls.__name, group)
    groups[#groups + 1] = group
  end
  return setmetatable({ param_groups = groups, state = {} }, cls)
end

local function this(self, fn)
  if type(self) ~= "table" or type(self.param_groups) ~= "table" then check.expected("Optimizer:" .. fn, "self", "an optimizer", self) end
  return self
end

function Optimizer:zero_grad()
  this(self, "zero_grad")
  for _, g in ipairs(self.param_groups) do
    for _, p in ipairs(g.params) do p.grad = nil end
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
    for k, v in pairs(group) do if k ~= "params" then g[k] = v end end
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
local function adam(decoupled)
  return function(p, g, state, group)
    if group.maximize then g = -g end
    local b1, b2 = group.betas[1], group.betas[2]
    if group.weight_decay ~= 0 then
      if decoupled then p:mul_(1 - group.lr * group.weight_decay)
      else g = g + p * group.weight_decay end
    end
    if not state.exp_avg then
      state.step = 0
      state.exp_avg = wick.zeros_like(p)
      state.exp_avg_sq = wick.zeros_like(p)
    end
    state.step = state.step + 1
    state.exp_avg:mul_(b1):add_(g, 1 - b1)
    state.exp_avg_sq:mul_(b2):add_(g * g, 1 - b2)
    local bc1, bc2 = 1 - b1 ^ state.step, 1 - b2 ^ state.step
    local denom = (state.exp_avg_sq:sqrt() / math.sqrt(bc2)):add_(group.eps)
    p:add_(state.exp_avg / denom, -group.lr / bc1)
  end
end
optim.Adam = class("Adam", { lr = 1e-3, betas = { 0.9, 0.999 }, eps = 1e-8, weight_decay = 0, maximize = false }, adam(false))
optim.AdamW = class("AdamW", { lr = 1e-3, betas = { 0.9, 0.999 }, eps = 1e-8, weight_decay = 1e-2, maximize = false }, adam(true))

-- ---- schedulers ----
local Scheduler = {}
Scheduler.__index = Scheduler

local function scheduler(name, compute, defaults)
  local C = setmetatable({}, { __index = Scheduler, __call = function(cls, opt, opts) return cls.new(cls, opt, opts) end })
  C.__index = C
  C.__name = name
  formulas[C] = compute
  C.defaults = defaults
  return C
end

function Scheduler.new(cls, opt, opts)
  if type(cls) ~= "table" or type(cls.defaults) ~= "table" then check.expected("Scheduler.new", "class", "a scheduler class", cls) end
  if type(opt) ~= "table" or type(opt.param_groups) ~= "table" then check.expected(cls.__name, "optimizer", "an optimizer", opt) end
  local kinds = {}
  for k in pairs(cls.defaults) do kinds[k] = "number" end
  opts = check.options(opts, cls.__name, kinds)
  local self = setmetatable({ optimizer = opt, last_epoch = 0, base_lrs = {} }, cls)
  for k, v in pairs(cls.defaults) do self[k] = v end
  for k, v in pairs(opts) do self[k] = v end
  if cls.__name == "StepLR" then check.int(self.step_size, "StepLR", "step_size", 1) end
  if cls.__name == "CosineAnnealingLR" and (self.T_max == 0) then check.fail("CosineAnnealingLR", "T_max must not be 0") end
  for i, g in ipairs(opt.param_groups) do self.base_lrs[i] = g.lr end
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
  for i, g in ipairs(self.optimizer.param_groups) do g.lr = compute(self, self.base_lrs[i]) end
end

function Scheduler:get_last_lr()
  sched(self, "get_last_lr")
  local out = {}
  for i, g in ipairs(self.optimizer.param_groups) do out[i] = g.lr end
  return out
end

function Scheduler:state_dict()
  sched(self, "state_dict")
  local sd = { last_epoch = self.last_epoch, base_lrs = {} }
  for i, v in ipairs(self.base_lrs) do sd.base_lrs[i] = v end
  for k in pairs(getmetatable(self).defaults) do sd[k] = self[k] end
  return sd
end

function Scheduler:load_state_dict(sd)
  sched(self, "load_state_dict")
  check.table(sd, "load_state_dict", "state_dict")
  for k, v in pairs(sd) do
    if type(k) ~= "string" or (k ~= "last_epoch" and k ~= "base_lrs" and getmetatable(self).defaults[k] == nil) then
      check.fail("load_state_dict", "unexpected key '%s' in a %s state", tostring(k), getmetatable(self).__name)
    end
    if k == "base_lrs" then check.table(v, "load_state_dict", "base_lrs")
    else check.number(v, "load_state_dict", k) end
  end
  for k, v in pairs(sd) do self[k] = v end
end

optim.lr_scheduler = {}
optim.lr_scheduler.StepLR = scheduler("StepLR", function(self, base)
  return base * self.gamma ^ math.floor(self.last_epoch / self.step_size)
end, { step_size = 1, gamma = 0.1 })
optim.lr_scheduler.CosineAnnealingLR = scheduler("CosineAnnealingLR", function(self, base)
  return self.eta_min + (base - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
end, { T_max = 1, eta_min = 0 })
optim.StepLR = optim.lr_scheduler.StepLR
optim.CosineAnnealingLR = optim.lr_scheduler.CosineAnnealingLR

return optim
