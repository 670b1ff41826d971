-- wick.optim: PyTorch's optimizers (SGD, Adam, AdamW, Adadelta, RMSprop, Adagrad,
-- Adamax, NAdam, RAdam, Rprop, ASGD, Muon, Adafactor, LBFGS) and learning-rate schedulers. Updates run under
-- wick.no_grad with in-place ops, so optimizer state lives on each parameter's
-- device and nothing moves between devices.
local wick = require("wick")
local check = require("wick.argcheck")

local optim = {}
local unpack = table.unpack or unpack

local Optimizer = { __name = "Optimizer" }
Optimizer.__index = Optimizer
optim.Optimizer = Optimizer
-- torch.optim.optimizer's names: `from torch.optim.optimizer import Optimizer, required` (LARS's
-- lr=required: a group without its own value of such an option is an error)
local REQUIRED = "required"
optim.optimizer = { Optimizer = Optimizer, required = REQUIRED }
local hooked_step -- a step with the step hooks around it (with the hooks, below)

-- Each class's update rule and each scheduler's formula, kept out of the
-- public tables (an object's methods are only what a user may call).
local updates, formulas = setmetatable({}, { __mode = "k" }), setmetatable({}, { __mode = "k" })

-- kinds: the kinds of options whose default is nil (argcheck.options)
-- a value in a message: an array's entries ({0.9, 1}), else its description
local function shown(v)
  if type(v) ~= "table" then return check.describe(v) end
  local parts = {}
  for i = 1, #v do parts[i] = v[i] == nil and "None" or tostring(v[i]) end -- (Adafactor's eps = (None, 1e-3))
  return "{" .. table.concat(parts, ", ") .. "}"
end
-- print(opt): PyTorch's repr, each group's options sorted by name
local function optimizer_repr(self)
  local lines = { (getmetatable(self).__name or "Optimizer") .. " (" }
  for i, g in ipairs(rawget(self, "param_groups") or {}) do
    lines[#lines + 1] = ("Parameter Group %d"):format(i - 1)
    local keys = {}
    for k in pairs(g) do if k ~= "params" then keys[#keys + 1] = k end end
    table.sort(keys)
    for _, k in ipairs(keys) do
      local v = g[k]
      local text = type(v) == "table" and "(" .. shown(v):sub(2, -2) .. ")" or type(v) == "boolean" and
        (v and "True" or "False") or tostring(v)
      lines[#lines + 1] = ("    %s: %s"):format(k, text)
    end
  end
  lines[#lines + 1] = ")"
  return table.concat(lines, "\n")
end
Optimizer.__tostring = optimizer_repr

local init_builtin -- (below: a built-in optimizer's init on an instance)
local function class(name, defaults, step, kinds)
  local C = setmetatable({}, { __index = Optimizer, __call = function(cls, params, ...) return cls.new(cls, params, ...) end })
  C.__index = C
  C.__tostring = optimizer_repr
  C.__name = name
  C.defaults = defaults
  C._nil_kinds = kinds
  updates[C] = step
  -- C.init(self, params, ...): what C(params, ...) does, on an instance of a subclass of C
  -- (MobileViT's AdamWOptimizer(BaseOptim, AdamW) calls AdamW.__init__(self, params=..., lr=...))
  if step then C.init = function(self, params, ...) return init_builtin(self, C, params, ...) end end
  return C
end
-- the update rule of an optimizer's class: its own, or the built-in class it extends
local function update_rule(cls)
  while type(cls) == "table" and updates[cls] == nil do cls = rawget(cls, "super") end
  return type(cls) == "table" and updates[cls] or nil
end

-- Options PyTorch's optimizers take that choose an implementation, not a result
-- (wick has one implementation of each): accepted so that scripts passing them
-- (nanoGPT's fused = true on CUDA) run; any other value than a boolean or nil errors.
local IMPLEMENTATION = { foreach = "boolean", fused = "boolean", capturable = "boolean", differentiable = "boolean" }

-- The kind of each option (argcheck.options), from its default's type.
-- (An optimizer of one's own, Optimizer:extend, has its options unchecked.)
local function option_kinds(cls)
  if rawget(cls, "super") ~= nil then return {} end
  local kinds = rawget(cls, "_option_kinds")
  if not kinds then
    kinds = {}
    for k, v in pairs(cls.defaults) do
      kinds[k] = v == "required" and "number" or type(v) == "number" and "number" or type(v) == "boolean" and "boolean"
        or type(v) == "string" and "string" or "table"
    end
    for k, v in pairs(cls._nil_kinds or {}) do kinds[k] = v end
    for k, v in pairs(IMPLEMENTATION) do kinds[k] = v end
    if kinds.lr == "number" then kinds.lr = "number|tensor" end -- (PyTorch's Tensor lr, kept a tensor)
    rawset(cls, "_option_kinds", kinds)
  end
  return kinds
end

-- Checks the values of one group's hyper-parameters (a group may also carry
-- keys of the user's own, as in PyTorch; those are kept as they are).
local ADJUST_LR_NAMES = { original = true, match_rms_adamw = true, spectral_unclamped = true }
local function check_group(name, group, kinds, own)
  for k, v in pairs(group) do
    if own and (k == "etas" or k == "step_sizes" or k == "betas") then -- (an own optimizer's: as given)
    elseif k == "etas" then
      if type(v) ~= "table" or type(v[1]) ~= "number" or type(v[2]) ~= "number" or not (0 < v[1] and v[1] < 1 and 1 < v[2]) then
        check.fail(name, "Invalid eta values: %s (etas must be {etaminus, etaplus} with 0 < etaminus < 1 < etaplus)", shown(v))
      end
    elseif k == "step_sizes" then
      if type(v) ~= "table" or type(v[1]) ~= "number" or type(v[2]) ~= "number" or v[1] < 0 or v[2] < v[1] then
        check.fail(name, "step_sizes must be {min, max} with 0 <= min <= max, got %s", shown(v))
      end
    elseif k == "betas" then
      if type(v) ~= "table" or type(v[1]) ~= "number" or type(v[2]) ~= "number" or v[1] ~= v[1] or v[2] ~= v[2]
          or v[1] < 0 or v[1] >= 1 or v[2] < 0 or v[2] >= 1 then
        check.fail(name, "betas must be two numbers in [0, 1), got %s", shown(v))
      end
    elseif k == "beta2_decay" and not own then -- (Adafactor's: negative)
      if type(v) ~= "number" or not (v <= 0) then check.fail(name, "beta2_decay should be <= 0 but is: %s", shown(v)) end
    elseif k == "eps" and not own and type(v) == "table" then -- (Adafactor's pair, the first nil for None)
      if (v[1] and (type(v[1]) ~= "number" or not (v[1] >= 0))) or type(v[2]) ~= "number" or not (v[2] >= 0) then
        check.fail(name, "eps must be {epsilon1 (nil for the dtype's eps) >= 0, epsilon2 >= 0}, got %s", shown(v))
      end
    elseif k == "d" and not own and kinds[k] == "number" and not (type(v) == "number" and v >= 1) then
      check.fail(name, "Clipping threshold d should be >= 1 but is: %s", shown(v))
    elseif k == "adjust_lr_fn" and not own and v ~= nil and not ADJUST_LR_NAMES[v] then
      check.fail(name, "Adjust learning rate function %s is not supported (original, match_rms_adamw or spectral_unclamped)",
        shown(v))
    elseif k == "ns_steps" and not own and not (type(v) == "number" and v >= 0 and v < 100 and v == math.floor(v)) then
      check.fail(name, "Number of steps must be an integer less than 100 for computational efficiency, got %s", shown(v))
    elseif k == "ns_coefficients" and not own and (type(v) ~= "table" or #v ~= 3 or type(v[1]) ~= "number"
        or type(v[2]) ~= "number" or type(v[3]) ~= "number") then
      check.fail(name, "Coefficients must be a tuple of exactly 3 values, got %s", shown(v))
    elseif k == "lr" and kinds[k] == "number|tensor" and wick.is_tensor(v) then
      if v:numel() ~= 1 then check.fail(name, "Tensor lr must be 1-element") end
      if not (v:item() >= 0) then check.fail(name, "invalid learning rate: %s (must be >= 0)", tostring(v:item())) end
    elseif k ~= "params" and (kinds[k] == "number" or kinds[k] == "number|tensor") then
      if type(v) ~= "number" or v ~= v then check.fail(name, "expected a number for option '%s', got %s", k, check.describe(v)) end
      if v < 0 then check.fail(name, "invalid %s value: %s (must be >= 0)", k == "lr" and "learning rate" or k, v) end
      if k == "rho" and v > 1 then check.fail(name, "Invalid rho value: %s (must be in [0, 1])", v) end
    elseif k ~= "params" and kinds[k] == "boolean" and type(v) ~= "boolean" then
      check.fail(name, "expected a boolean for option '%s', got %s", k, check.describe(v))
    end
  end
end

-- params as an array: a tensor alone, or an nn.ParameterList (iterable in
-- PyTorch: MAML's Learner.parameters() returns one) as its parameters
local GROUPS_MT
local function parameter_list(params)
  if wick.is_tensor(params) then return { params } end
  -- an iterator: of tensors, or of name, tensor pairs (PyTorch 2.6's SGD(model.named_parameters()):
  -- the group's param_names)
  if type(params) == "function" then
    local tensors, names = {}, {}
    for a, b in params do
      if wick.is_tensor(b) then names[#names + 1], tensors[#tensors + 1] = a, b else tensors[#tensors + 1] = a end
    end
    if #names > 0 and #names == #tensors then return { { params = tensors, param_names = names } } end
    return tensors
  end
  local class = type(params) == "table" and getmetatable(params)
  if class == check.list_mt then return { unpack(params) } end -- (model:parameters())
  if class and class.__name == "ParameterList" and type(params.parameters) == "function" then return parameter_list(params:parameters()) end
  -- another optimizer's param_groups (SAM's base_optimizer(self.param_groups)): the same group tables
  if class == GROUPS_MT then return { unpack(params) } end
  return params
end

-- One parameter group: the optimizer's defaults, then the group's own options.
-- a parameter group's methods, as a Python dict's: group:update({lr = 0.1}) (convmixer's
-- opt.param_groups[0].update(lr=lr)), get, setdefault, pop, keys and items (by name); a
-- metatable, so pairs() sees only the options
local function group_names(group)
  local names = {}
  for k in pairs(group) do names[#names + 1] = k end
  table.sort(names, function(a, b) return tostring(a) < tostring(b) end)
  return names
end
local function group_items(group)
  local names, i = group_names(group), 0
  return function()
    i = i + 1
    local k = names[i]
    if k ~= nil then return k, group[k] end
  end
end
-- a Python dict's methods, for a parameter group and a parameter's state (DARTS'
-- w_optim.state[w].get('momentum_buffer', 0.))
local DICT_MT = { __index = {
  update = function(group, values)
    check.table(values, "param_group:update", "values")
    for k, v in pairs(values) do group[k] = v end
  end,
  -- (Adan's and AdaBelief's __setstate__: group.setdefault('no_prox', False))
  get = function(group, k, default)
    local v = rawget(group, k)
    if v == nil then return default end
    return v
  end,
  setdefault = function(group, k, default)
    if rawget(group, k) == nil then rawset(group, k, default) end
    return rawget(group, k)
  end,
  pop = function(group, k, default)
    local v = rawget(group, k)
    if v == nil then
      if default == nil then check.fail("param_group:pop", "no key '%s'", tostring(k)) end
      return default
    end
    rawset(group, k, nil)
    return v
  end,
  keys = function(group) return check.list(group_names(group)) end, -- (an array a for also takes)
  items = group_items,
} }

-- opt.param_groups: an array that also reads from the end (param_groups[-1], TabNet's last lr)
GROUPS_MT = { __index = function(list, i)
  if type(i) == "number" and i < 0 then return rawget(list, #list + 1 + i) end
  if i == 0 then
    check.fail("param_groups", "index 0 is invalid: indices count from 1 (PyTorch's param_groups[0] is param_groups[1])")
  end
end }
local function group_list() return setmetatable({}, GROUPS_MT) end

local function make_group(self, g, gi)
  local name = getmetatable(self).__name
  if type(g) ~= "table" or (getmetatable(g) ~= nil and getmetatable(g) ~= DICT_MT) or g.params == nil then
    -- {a:parameters(), b:parameters()}: Python's itertools.chain(a.parameters(), b.parameters())
    local arrays = check.is_array(g) and g[1] ~= nil and wick.is_tensor(g[1])
    check.fail(name, "parameter group %s must be a table with params = {...}, got %s%s", tostring(gi), check.describe(g),
      arrays and " (an array of tensors: to chain several modules' parameters (itertools.chain), pass one array "
        .. "holding all of them, or a group per module: {{params = a:parameters()}, {params = b:parameters()}})" or "")
  end
  local params = parameter_list(g.params)
  if type(params) ~= "table" then check.fail(name, "the params of parameter group %s must be an array of tensors", tostring(gi)) end
  -- the table given becomes the group, as PyTorch's add_param_group fills the dict it is given: a change
  -- to it shows in the optimizer, and two optimizers given the same groups share them (SAM and its base)
  local group = g
  for k, v in pairs(self.defaults) do
    if rawget(group, k) == nil then group[k] = v end
    if group[k] == REQUIRED then
      check.fail(name, "parameter group didn't specify a value of required optimization parameter %s", k)
    end
  end
  -- an optimizer of one's own keeps its options as given (Adan's three betas);
  -- the built-ins' pairs are copied and checked as PyTorch's
  local own = rawget(getmetatable(self), "super") ~= nil
  for _, k in ipairs({ "betas", "etas", "step_sizes" }) do
    if type(group[k]) == "table" then group[k] = own and { unpack(group[k]) } or { group[k][1], group[k][2] } end
  end
  local seen, list = {}, {}
  for i = 1, #params do
    local p = params[i]
    if not wick.is_tensor(p) then check.fail(name, "parameter %d of group %s is not a tensor (got %s)", i, tostring(gi), check.describe(p)) end
    if seen[p] then check.fail(name, "parameter %d appears twice in parameter group %s", i, tostring(gi)) end
    if not p.is_leaf then -- PyTorch's ValueError: a computed tensor never gets a .grad, so step would do nothing
      check.fail(name, "can't optimize a non-leaf Tensor (parameter %d of group %s is computed from others: "
        .. "optimize the leaf, or make one with t:detach():requires_grad_())", i, tostring(gi))
    end
    seen[p] = true
    list[i] = p
  end
  for k, v in pairs(params) do
    if type(k) ~= "number" or k < 1 or k > #params or k ~= math.floor(k) then
      check.fail(name, "the params of parameter group %s must be an array (found the key %s)", tostring(gi), tostring(k))
    end
    local _ = v
  end
  if group.lr == "required" or (not own and type(group.lr) ~= "number" and not wick.is_tensor(group.lr)) then
    check.fail(name, "lr is required (a number)")
  end
  check_group(name, group, option_kinds(getmetatable(self)), own)
  -- (SGD's own check, as PyTorch's SGD.__init__: an optimizer of one's own with a nesterov option,
  -- Muon's, has no dampening and no such rule)
  if not own and name == "SGD" and group.nesterov and (group.momentum <= 0 or group.dampening ~= 0) then
    check.fail(name, "Nesterov momentum requires a momentum and zero dampening")
  end
  for _, other in ipairs(self.param_groups) do
    for _, q in ipairs(other.params) do
      if seen[q] then check.fail(name, "some parameters appear in more than one parameter group") end
    end
  end
  group.params = list
  return setmetatable(group, DICT_MT)
end

-- PyTorch's positional hyper-parameters after params, per optimizer (the rest
-- are keyword-only there: options here)
local POSITIONAL = {
  SGD = { "lr", "momentum", "dampening", "weight_decay", "nesterov" },
  Adam = { "lr", "betas", "eps", "weight_decay", "amsgrad" },
  AdamW = { "lr", "betas", "eps", "weight_decay", "amsgrad" },
  Adadelta = { "lr", "rho", "eps", "weight_decay" },
  RMSprop = { "lr", "alpha", "eps", "weight_decay", "momentum", "centered" },
  Adagrad = { "lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps" },
  Adamax = { "lr", "betas", "eps", "weight_decay" },
  NAdam = { "lr", "betas", "eps", "weight_decay", "momentum_decay", "decoupled_weight_decay" },
  RAdam = { "lr", "betas", "eps", "weight_decay", "decoupled_weight_decay" },
  Rprop = { "lr", "etas", "step_sizes" },
  ASGD = { "lr", "lambd", "alpha", "t0", "weight_decay" },
  Muon = { "lr", "weight_decay", "momentum", "nesterov", "ns_coefficients", "eps", "ns_steps", "adjust_lr_fn" },
  Adafactor = { "lr", "beta2_decay", "eps", "d", "weight_decay" },
  LBFGS = { "lr", "max_iter", "max_eval", "tolerance_grad", "tolerance_change", "history_size", "line_search_fn" },
}

-- opt.state: a table per parameter, made at its first look (PyTorch's
-- defaultdict(dict)), so an optimizer of one's own starts with
-- `local state = self.state[p]`; state_dict leaves out the empty ones
local state_mt = {
  __index = function(t, p)
    if not wick.is_tensor(p) then return nil end
    local s = setmetatable({}, DICT_MT)
    rawset(t, p, s)
    return s
  end,
  __newindex = function(t, p, s)
    if type(s) == "table" and getmetatable(s) == nil then setmetatable(s, DICT_MT) end
    rawset(t, p, s)
  end,
}
local function state_table(t) return setmetatable(t, state_mt) end

--- Optimizer(params[, lr[, ...]][, opts]): params an array of tensors or of
--- groups {params = {...}, lr = ...}; hyper-parameters by PyTorch's position or
--- in the options table.
function Optimizer.new(cls, params, ...)
  if type(cls) ~= "table" or type(cls.defaults) ~= "table" then check.expected("Optimizer.new", "class", "an optimizer class", cls) end
  return init_builtin(setmetatable({}, cls), cls, params, ...)
end
-- self gets the groups, state and defaults of the built-in class cls from PyTorch's arguments
function init_builtin(self, cls, params, ...)
  -- all by keyword (PyTorch's Adam(lr=1e-4, params=model.parameters())): the parameters in the options
  if type(params) == "table" and getmetatable(params) == nil and params.params ~= nil and #params == 0
    and select("#", ...) == 0 then
    local rest = {}
    for k, v in pairs(params) do if k ~= "params" then rest[k] = v end end
    return init_builtin(self, cls, params.params, rest)
  end
  local opts = check.positional(cls.__name, POSITIONAL[cls.__name] or {}, option_kinds(cls), ...)
  params = parameter_list(params)
  if type(params) ~= "table" or getmetatable(params) ~= nil then
    wick.error(("%s: expected an array of parameters (model:parameters()) or of parameter groups, got %s"):format(cls.__name, check.describe(params)))
  end
  if #params == 0 then wick.error(("%s: optimizer got an empty parameter list (expected model:parameters() or an array of parameter groups)"):format(cls.__name)) end
  local defaults = {}
  for k, v in pairs(cls.defaults) do defaults[k] = v end
  for k, v in pairs(opts) do defaults[k] = v end
  self.param_groups, self.state, self.defaults = group_list(), state_table(rawget(self, "state") or {}), defaults
  -- an array of tensors, or an array of groups {params = {...}, lr = ...}
  local list = wick.is_tensor(params[1]) and { { params = params } } or params
  for gi, g in ipairs(list) do self:add_param_group(g, gi) end
  local check_param = rawget(cls, "_check_param") -- (a class's rule on its parameters: Muon's matrices)
  if check_param then
    for _, g in ipairs(self.param_groups) do for _, p in ipairs(g.params) do check_param(p) end end
  end
  return self
end

--- optim.Optimizer:extend("Name"): the base of an optimizer of one's own, as a
--- subclass of PyTorch's torch.optim.Optimizer (LARS, LAMB, Lion): Name's
--- init(self, params, ...) calls Name.super.init(self, params, defaults), and
--- Name's step(self[, closure]) updates self.param_groups[i].params (under
--- wick.no_grad), keeping per-parameter state in self.state[p]; zero_grad,
--- add_param_group, state_dict and load_state_dict are the optimizers'. Group
--- options are the defaults' and the groups' own, of any kind (functions too).
-- Base:extend(name) for the optimizers and the schedulers: a class whose
-- instances start as fresh() and run init(...), which must call the base's
-- init (done(obj) says it did; `args` names its arguments in the message)
-- an optimizer's own step takes PyTorch's keywords as its init does: SophiaG's step(bs=total_bs)
-- is opt:step({bs = total_bs}), bound to step(self, closure, bs)
local function keyword_step(cls, step)
  return function(self, ...)
    local n = select("#", ...)
    local last = n > 0 and select(n, ...) or nil
    if type(last) == "table" and getmetatable(last) == nil then
      require("wick.nn.module") -- (which gives wick.nn.common its bind_keywords)
      local bound, top = require("wick.nn.common").bind_keywords(cls, "step", step, n, ...)
      if bound then return step(self, unpack(bound, 1, top)) end
    end
    return step(self, ...)
  end
end

local function subclass(base, root, name, fresh, done, args, hint)
  local what = root.__name
  if type(base) ~= "table" or (base ~= root and rawget(base, "super") == nil and not updates[base]) then
    if type(base) == "table" and rawget(base, "__name") then -- (LBFGS, whose step is a closure's)
      check.fail(what .. ".extend", "%s cannot be extended here: extend %s itself", base.__name, what)
    end
    check.expected(what .. ".extend", "self", "an " .. what .. " class", base)
  end
  if name ~= nil then check.string(name, what .. ".extend", "name") end
  local C = setmetatable({ super = base, __name = name or what, __tostring = rawget(root, "__tostring") }, {
    __index = base,
    -- an optimizer's own step runs the step hooks (register_step_pre_hook) as the built-ins' do
    __newindex = function(cls, k, v)
      if root == Optimizer and k == "step" and type(v) == "function" then v = hooked_step(keyword_step(cls, v)) end
      rawset(cls, k, v)
    end,
    __call = function(cls, ...)
      local obj = setmetatable(fresh(), cls)
      -- an init of one's own takes PyTorch's keywords: Adan(params, weight_decay=0.02) is
      -- Adan(params, {weight_decay = 0.02}), as a module's init does
      local n, init, bound, top = select("#", ...), obj.init, nil, nil
      if n > 0 and init ~= root.init then
        require("wick.nn.module") -- (which gives wick.nn.common its bind_keywords)
        bound, top = require("wick.nn.common").bind_keywords(cls, "init", init, n, ...)
      end
      if bound then init(obj, unpack(bound, 1, top)) else obj:init(...) end
      if not done(obj) then
        check.fail(cls.__name, "init must call %s.super.init(self, %s) (%s's init)%s", cls.__name, args, what, hint or "")
      end
      return obj
    end,
  })
  C.__index = C
  return C
end

function Optimizer:extend(name)
  check.string(name, "Optimizer.extend", "name")
  return subclass(self, Optimizer, name, function() return { state = {} } end,
    function(obj) return rawget(obj, "param_groups") ~= nil end, "params, defaults",
    "; a wrapper of another optimizer (Lookahead) sets self.param_groups = inner.param_groups (and self.state) instead")
end

--- Optimizer.init(self, params, defaults): PyTorch's Optimizer.__init__ (for Optimizer:extend)
function Optimizer:init(params, defaults)
  local name = (getmetatable(self) or Optimizer).__name or "Optimizer"
  check.table(defaults, name, "defaults")
  params = parameter_list(params)
  if type(params) ~= "table" or getmetatable(params) ~= nil then
    check.expected(name, "params", "an array of parameters (model:parameters()) or of parameter groups", params)
  end
  if #params == 0 then check.fail(name, "optimizer got an empty parameter list") end
  self.defaults = {}
  for k, v in pairs(defaults) do self.defaults[k] = v end
  self.param_groups, self.state = group_list(), state_table(rawget(self, "state") or {})
  local list = wick.is_tensor(params[1]) and { { params = params } } or params
  for gi, g in ipairs(list) do self:add_param_group(g, gi) end
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

-- A state tensor on its parameter's device, floating state in its dtype;
-- arrays of tensors (LBFGS's history) entry by entry.
local function moved(v, p)
  if wick.is_tensor(v) then
    if not same_device(v, p) or (v:is_floating_point() and v.dtype ~= p.dtype) then
      return v:to({ device = p.device, dtype = v:is_floating_point() and p.dtype or v.dtype })
    end
  elseif type(v) == "table" and getmetatable(v) == nil then
    local out = {}
    for k, x in pairs(v) do out[k] = moved(x, p) end
    return out
  end
  return v
end

-- State follows its parameter: after model:to(...) the next step moves it.
local function follow(p, state)
  for k, v in pairs(state) do
    if wick.is_tensor(v) then state[k] = moved(v, p) end
  end
end

-- A one-element tensor set as a hyper-parameter (DINO's param_group["lr"] =
-- lr_schedule[it], a NumPy float; PyTorch's Tensor lr, which LeanRL anneals with
-- group["lr"].copy_(lrnow)): the update reads the number it holds from a view of the group, and
-- the group keeps the tensor
local function numbers_view(group)
  local view
  for k, v in pairs(group) do
    if k ~= "params" and wick.is_tensor(v) and v:numel() == 1 then
      view = view or setmetatable({}, { __index = group })
      view[k] = v:item()
    end
  end
  return view or group
end
optim._numbers_view = numbers_view

local function update_all(self)
  local update = update_rule(getmetatable(self))
  if not update then wick.error(("%s:step: this optimizer has no update rule"):format(tostring(getmetatable(self).__name))) end
  for _, group in ipairs(self.param_groups) do
    local values = numbers_view(group)
    for _, p in ipairs(group.params) do
      local g = p.grad
      if g then
        local state = self.state[p]
        -- a complex parameter is updated as its real view, as PyTorch's
        -- optimizers do (each part its own coordinate; the state is real)
        local q = p
        if p:is_complex() then q, g = p:view_as_real(), g:view_as_real() end
        if not state then state = {}; self.state[p] = state
        else follow(q, state) end
        update(q, g, state, values)
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
    -- (a function option, LARS's weight_decay_filter, is code: left out, so wick.save takes the state;
    -- load_state_dict keeps the live group's)
    for k, v in pairs(group) do
      if k ~= "params" and type(v) ~= "function" then g[k] = type(v) == "table" and { unpack(v) } or v end
    end
    for _, p in ipairs(group.params) do
      index = index + 1
      g.params[#g.params + 1] = index
      local s = rawget(self.state, p)
      if s and next(s) ~= nil then
        local copy = {}
        for k, v in pairs(s) do copy[k] = type(v) == "table" and getmetatable(v) == nil and { unpack(v) } or v end
        state[index] = copy
      end
    end
    groups[gi] = g
  end
  return { state = state, param_groups = groups }
end

-- the per-parameter states that are scalars (PyTorch keeps them as 0-dim tensors, wick as numbers)
local SCALAR_STATE = { step = true, mu_product = true, eta = true, mu = true, func_evals = true, n_iter = true }
--- Loads state saved by state_dict(); tensors move to each parameter's device and dtype.
function Optimizer:load_state_dict(sd, ...)
  this(self, "load_state_dict")
  if select("#", ...) > 0 then -- (PyTorch's TypeError: load_state_dict(sd, strict=False) on an optimizer)
    check.fail("load_state_dict", "an optimizer's load_state_dict takes the state dict alone, got another argument: %s",
      check.describe((...)))
  end
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
  -- PyTorch's own state (torch.save(opt.state_dict()) read by wick.load)
  -- numbers the parameters from 0 and keeps its scalars (step, mu_product,
  -- eta, mu) as 0-dim tensors: from it, parameter i + 1 and numbers
  local first = math.huge
  for _, g in ipairs(sd.param_groups) do
    for _, i in ipairs(g.params) do first = math.min(first, tonumber(i) or math.huge) end
  end
  local pytorch = first == 0
  local params = numbered(self)
  -- each saved per-parameter tensor has its parameter's shape: a state saved
  -- for parameters in another order (a ModuleDict built from a Lua table
  -- constructor lists its children by sorted name) fails here, before any
  -- state is replaced, not at step(). (LBFGS keeps flat vectors instead.)
  -- (an optimizer of one's own may keep state of other shapes: Adafactor's factored moments)
  local own_class = rawget(getmetatable(self), "super")
  if getmetatable(self).__name ~= "LBFGS" and own_class == nil then
    for index, s in pairs(sd.state) do
      local p = params[(tonumber(index) or 0) + (pytorch and 1 or 0)]
      if p and type(s) == "table" then
        local factored = rawget(getmetatable(self), "_factored_state") or {}
        for k, v in pairs(s) do
          if wick.is_tensor(v) and v:dim() > 0 and not factored[k] and tostring(v:size()) ~= tostring(p:size()) then
            wick.error(("load_state_dict: the saved state '%s' of parameter %s has shape %s, but that parameter has shape %s (were the parameters listed in another order when it was saved?)")
              :format(tostring(k), tostring(index), tostring(v:size()), tostring(p:size())))
          end
        end
      end
    end
  end
  self.state = state_table({})
  for index, s in pairs(sd.state) do
    local p = params[(tonumber(index) or 0) + (pytorch and 1 or 0)]
    if p and type(s) ~= "table" then
      wick.error(("load_state_dict: the state of parameter %s is a %s, not a table"):format(tostring(index), type(s)))
    end
    if p then
      local copy = {}
      for k, v in pairs(s) do
        -- (a 0-dim state of a 0-dim parameter is its moment, a tensor, unless it is a scalar's name:
        -- angleproto's nn.Parameter(torch.tensor(init_w)) resumed with Adam keeps exp_avg a tensor)
        -- (an optimizer of one's own keeps PyTorch's tensors: its step is ported from PyTorch's)
        if pytorch and own_class == nil and wick.is_tensor(v) and v:dim() == 0 and (p:dim() > 0 or SCALAR_STATE[k]) then
          v = v:item()
        elseif wick.is_tensor(v) then
          v = moved(v, p)
          if rawequal(v, s[k]) then v = v:clone() end
        elseif type(v) == "table" and getmetatable(v) == nil then
          local list = moved(v, p)
          for i, x in pairs(list) do
            -- (PyTorch's LBFGS keeps its ro list as 0-dim tensors, wick as numbers)
            if pytorch and wick.is_tensor(x) and x:dim() == 0 then list[i] = x:item()
            elseif rawequal(x, v[i]) and wick.is_tensor(x) then list[i] = x:clone() end
          end
          v = list
        end
        copy[k] = v
      end
      self.state[p] = copy
    end
  end
  for gi, g in ipairs(sd.param_groups) do
    for k, v in pairs(g) do if k ~= "params" then self.param_groups[gi][k] = v end end
  end
  -- (as PyTorch's load_state_dict ends: an optimizer's own __setstate__ fills in what an older
  -- state lacks, SophiaG's maximize and capturable)
  self:__setstate__({ state = self.state, param_groups = self.param_groups })
end

-- The gradient a step uses: negated under maximize, plus weight_decay * p
-- (L2 in the gradient, PyTorch's coupled weight decay).
local function decayed(p, g, group)
  if group.maximize then g = -g end
  if group.weight_decay ~= 0 then g = g + p * group.weight_decay end
  return g
end

-- A parameter's first state: step 0 and the named buffers, zeros like p.
local function zero_state(state, p, ...)
  state.step = 0
  for i = 1, select("#", ...) do state[select(i, ...)] = wick.zeros_like(p) end
end

-- ---- SGD ----
local fused_sgd = wick._core._sgd_step
optim.SGD = class("SGD", { lr = 1e-3, momentum = 0, dampening = 0, weight_decay = 0, nesterov = false, maximize = false },
  function(p, g, state, group)
    local momentum = group.momentum
    local buf, first = state.momentum_buffer, false
    if momentum ~= 0 and not buf then buf, first = wick.empty_like(p), true end
    if fused_sgd(p, g, buf, group.lr, momentum, group.dampening, group.weight_decay, group.nesterov,
        group.maximize, first) then
      -- one pass in C (contiguous CPU float tensors), PyTorch's arithmetic
      if first then state.momentum_buffer = buf end
      return
    end
    g = decayed(p, g, group)
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
local function adam(always_decoupled)
  return function(p, g, state, group)
    local decoupled = always_decoupled or group.decoupled_weight_decay -- Adam's option: AdamW's rule
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
    -- (PyTorch's single-tensor Adam op for op: lerp, addcmul and addcdiv round as its kernels do,
    -- a bfloat16 parameter's steps included)
    state.step = state.step + 1
    state.exp_avg:lerp_(g, 1 - b1)
    state.exp_avg_sq:mul_(b2):addcmul_(g, g, { value = 1 - b2 })
    local bc1, bc2 = 1 - b1 ^ state.step, 1 - b2 ^ state.step
    local second = state.exp_avg_sq
    if group.amsgrad then
      if not state.max_exp_avg_sq then state.max_exp_avg_sq = state.exp_avg_sq:clone() end
      state.max_exp_avg_sq:copy_(state.max_exp_avg_sq:maximum(state.exp_avg_sq))
      second = state.max_exp_avg_sq
    end
    local denom = (second:sqrt() / math.sqrt(bc2)):add_(group.eps)
    p:addcdiv_(state.exp_avg, denom, { value = -group.lr / bc1 })
  end
end
optim.Adam = class("Adam", { lr = 1e-3, betas = { 0.9, 0.999 }, eps = 1e-8, weight_decay = 0, amsgrad = false,
  maximize = false, decoupled_weight_decay = false }, adam(false))
optim.AdamW = class("AdamW", { lr = 1e-3, betas = { 0.9, 0.999 }, eps = 1e-8, weight_decay = 1e-2, amsgrad = false,
  maximize = false, decoupled_weight_decay = true }, adam(true)) -- (the key in its groups, as PyTorch 2.x's)

-- ---- Adadelta (PyTorch's update rule; pytorch/examples' mnist uses it) ----
local fused_adadelta = wick._core._adadelta_step
optim.Adadelta = class("Adadelta", { lr = 1.0, rho = 0.9, eps = 1e-6, weight_decay = 0, maximize = false },
  function(p, g, state, group)
    if not state.square_avg then zero_state(state, p, "square_avg", "acc_delta") end
    state.step = state.step + 1
    if fused_adadelta(p, g, state.square_avg, state.acc_delta, group.lr, group.rho, group.eps, group.weight_decay,
        group.maximize) then
      return -- one pass in C (contiguous CPU float tensors), PyTorch's arithmetic
    end
    g = decayed(p, g, group)
    local rho, eps = group.rho, group.eps
    state.square_avg:mul_(rho):add_(g * g, 1 - rho)
    local delta = (state.acc_delta + eps):sqrt_():div_((state.square_avg + eps):sqrt_()):mul_(g)
    state.acc_delta:mul_(rho):add_(delta * delta, 1 - rho)
    p:add_(delta, -group.lr)
  end)


-- ---- RMSprop ----
optim.RMSprop = class("RMSprop", { lr = 1e-2, alpha = 0.99, eps = 1e-8, weight_decay = 0, momentum = 0, centered = false,
  maximize = false },
  function(p, g, state, group)
    g = decayed(p, g, group)
    if not state.square_avg then zero_state(state, p, "square_avg") end
    state.step = state.step + 1
    local alpha = group.alpha
    state.square_avg:mul_(alpha):add_(g * g, 1 - alpha)
    local avg
    if group.centered then
      -- the variance: E[g^2] - E[g]^2
      state.grad_avg = state.grad_avg or wick.zeros_like(p)
      state.grad_avg:mul_(alpha):add_(g, 1 - alpha)
      avg = (state.square_avg - state.grad_avg * state.grad_avg):sqrt_()
    else
      avg = state.square_avg:sqrt()
    end
    avg:add_(group.eps)
    if group.momentum > 0 then
      state.momentum_buffer = state.momentum_buffer or wick.zeros_like(p)
      state.momentum_buffer:mul_(group.momentum):add_(g / avg)
      p:add_(state.momentum_buffer, -group.lr)
    else
      p:add_(g / avg, -group.lr)
    end
  end)

-- ---- Adagrad ----
optim.Adagrad = class("Adagrad", { lr = 1e-2, lr_decay = 0, weight_decay = 0, initial_accumulator_value = 0, eps = 1e-10,
  maximize = false },
  function(p, g, state, group)
    if not state.sum then
      state.step = 0
      state.sum = wick.full_like(p, group.initial_accumulator_value)
    end
    state.step = state.step + 1
    g = decayed(p, g, group)
    local clr = group.lr / (1 + (state.step - 1) * group.lr_decay)
    state.sum:add_(g * g)
    p:add_(g / state.sum:sqrt():add_(group.eps), -clr)
  end)

-- ---- Adamax (Adam with the infinity norm) ----
optim.Adamax = class("Adamax", { lr = 2e-3, betas = { 0.9, 0.999 }, eps = 1e-8, weight_decay = 0, maximize = false },
  function(p, g, state, group)
    g = decayed(p, g, group)
    if not state.exp_avg then zero_state(state, p, "exp_avg", "exp_inf") end
    state.step = state.step + 1
    local b1, b2 = group.betas[1], group.betas[2]
    state.exp_avg:mul_(b1):add_(g, 1 - b1)
    state.exp_inf:mul_(b2):maximum_(g:abs():add_(group.eps))
    p:add_(state.exp_avg / state.exp_inf, -group.lr / (1 - b1 ^ state.step))
  end)

-- Adam's moments for NAdam and RAdam; decoupled weight decay (p (1 - lr wd))
-- or L2 in the gradient. Returns the gradient used.
local function adam_moments(p, g, state, group)
  if group.maximize then g = -g end
  if not state.exp_avg then zero_state(state, p, "exp_avg", "exp_avg_sq") end
  state.step = state.step + 1
  if group.weight_decay ~= 0 then
    if group.decoupled_weight_decay then p:mul_(1 - group.lr * group.weight_decay)
    else g = g + p * group.weight_decay end
  end
  local b1, b2 = group.betas[1], group.betas[2]
  state.exp_avg:mul_(b1):add_(g, 1 - b1)
  state.exp_avg_sq:mul_(b2):add_(g * g, 1 - b2)
  return g
end

-- ---- NAdam (Adam with Nesterov momentum, Dozat's momentum schedule) ----
optim.NAdam = class("NAdam", { lr = 2e-3, betas = { 0.9, 0.999 }, eps = 1e-8, weight_decay = 0, momentum_decay = 4e-3,
  decoupled_weight_decay = false, maximize = false },
  function(p, g, state, group)
    if not state.mu_product then state.mu_product = 1 end
    g = adam_moments(p, g, state, group)
    local step, b1, b2, lr = state.step, group.betas[1], group.betas[2], group.lr
    local mu = b1 * (1 - 0.5 * 0.96 ^ (step * group.momentum_decay))
    local mu_next = b1 * (1 - 0.5 * 0.96 ^ ((step + 1) * group.momentum_decay))
    state.mu_product = state.mu_product * mu
    local denom = (state.exp_avg_sq / (1 - b2 ^ step)):sqrt_():add_(group.eps)
    p:add_(g / denom, -lr * (1 - mu) / (1 - state.mu_product))
    p:add_(state.exp_avg / denom, -lr * mu_next / (1 - state.mu_product * mu_next))
  end)

-- ---- RAdam (Adam with the variance of the adaptive lr rectified) ----
optim.RAdam = class("RAdam", { lr = 1e-3, betas = { 0.9, 0.999 }, eps = 1e-8, weight_decay = 0,
  decoupled_weight_decay = false, maximize = false },
  function(p, g, state, group)
    adam_moments(p, g, state, group)
    local step, b1, b2, lr = state.step, group.betas[1], group.betas[2], group.lr
    local bc1, bc2 = 1 - b1 ^ step, 1 - b2 ^ step
    local rho_inf = 2 / (1 - b2) - 1
    local rho_t = rho_inf - 2 * step * b2 ^ step / bc2
    if rho_t > 5 then
      -- the rectification term times the adaptive lr sqrt(bc2) / (sqrt(v) + eps)
      local rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
      -- exp_avg / bc1 * lr * sqrt(bc2) / (sqrt(v) + eps) * rect, the scalars folded
      p:add_(state.exp_avg / state.exp_avg_sq:sqrt():add_(group.eps), -lr * rect * math.sqrt(bc2) / bc1)
    else
      p:add_(state.exp_avg, -lr / bc1)
    end
  end)

-- ---- Rprop (resilient backpropagation: a step size per element, from the gradient's signs) ----
local function sign(t) return t:gt(0):to(t.dtype) - t:lt(0):to(t.dtype) end
optim.Rprop = class("Rprop", { lr = 1e-2, etas = { 0.5, 1.2 }, step_sizes = { 1e-6, 50 }, maximize = false },
  function(p, g, state, group)
    if group.maximize then g = -g end
    if not state.prev then
      zero_state(state, p, "prev")
      state.step_size = wick.full_like(p, group.lr)
    end
    state.step = state.step + 1
    local etaminus, etaplus = group.etas[1], group.etas[2]
    -- the factor: etaplus where the sign held, etaminus where it flipped, 1 at a zero
    local product = g * state.prev
    local factor = wick.ones_like(p):masked_fill_(product:gt(0), etaplus):masked_fill_(product:lt(0), etaminus)
    state.step_size:mul_(factor):clamp_(group.step_sizes[1], group.step_sizes[2])
    -- after a flip: no step, and no flip seen at the next step
    g = g:masked_fill(factor:eq(etaminus), 0)
    p:sub_(sign(g) * state.step_size)
    state.prev:copy_(g)
  end)

-- ---- ASGD (averaged SGD; the average in state.ax) ----
optim.ASGD = class("ASGD", { lr = 1e-2, lambd = 1e-4, alpha = 0.75, t0 = 1e6, weight_decay = 0, maximize = false },
  function(p, g, state, group)
    g = decayed(p, g, group)
    if not state.ax then
      zero_state(state, p, "ax")
      state.eta, state.mu = group.lr, 1
    end
    state.step = state.step + 1
    p:mul_(1 - group.lambd * state.eta)
    p:add_(g, -state.eta)
    if state.mu ~= 1 then state.ax:add_((p - state.ax):mul_(state.mu)) else state.ax:copy_(p) end
    state.eta = group.lr / (1 + group.lambd * group.lr * state.step) ^ group.alpha
    state.mu = 1 / math.max(1, state.step - group.t0)
  end)

-- ---- Muon (momentum orthogonalized by a Newton-Schulz iteration; PyTorch 2.9's torch.optim.Muon) ----
-- The update's nearest semi-orthogonal matrix, approximately: X / |X|, then ns_steps of the
-- quintic X <- a X + (b A + c A^2) X with A = X X^T, in bfloat16 as PyTorch's (on the wide
-- orientation: a tall matrix is transposed first and back after).
local function newton_schulz(update, coefficients, steps, eps)
  local a, b, c = coefficients[1], coefficients[2], coefficients[3]
  local X = update:to("bfloat16", { copy = true })
  local tall = update:size(1) > update:size(2)
  if tall then X = X.T end
  X:div_(X:norm():clamp(eps, math.huge))
  for _ = 1, steps do
    local gram = X:matmul(X.T)
    X = wick.addmm(X, wick.addmm(gram, gram, gram, { beta = b, alpha = c }), X, { beta = a })
  end
  return tall and X.T or X
end
-- the lr scaled for the matrix's shape [A, B]: Keller Jordan's sqrt(max(1, A / B)) ("original",
-- the default), Moonshot's 0.2 sqrt(max(A, B)) ("match_rms_adamw"), Bernstein's sqrt(A / B)
local ADJUST_LR = {
  original = function(A, B) return math.sqrt(math.max(1, A / B)) end,
  match_rms_adamw = function(A, B) return 0.2 * math.sqrt(math.max(A, B)) end,
  spectral_unclamped = function(A, B) return math.sqrt(A / B) end,
}
optim.Muon = class("Muon", { lr = 1e-3, weight_decay = 0.1, momentum = 0.95, nesterov = true,
  ns_coefficients = { 3.4445, -4.775, 2.0315 }, eps = 1e-7, ns_steps = 5 },
  function(p, g, state, group)
    if g:dim() ~= 2 then check.fail("Muon", "Param gradient must be a 2D matrix, got shape %s", tostring(g.shape)) end
    if not state.momentum_buffer then state.momentum_buffer = wick.zeros_like(g) end
    local buf, m = state.momentum_buffer, group.momentum
    buf:lerp_(g, 1 - m)
    local update = group.nesterov and g:lerp(buf, m) or buf
    update = newton_schulz(update, group.ns_coefficients, group.ns_steps, group.eps)
    local lr = group.lr
    p:mul_(1 - lr * group.weight_decay)
    p:add_(update, -lr * ADJUST_LR[group.adjust_lr_fn or "original"](p:size(1), p:size(2)))
  end, { adjust_lr_fn = "string" })

function optim.Muon._check_param(p)
  if p:dim() ~= 2 then
    check.fail("Muon", "Muon only supports 2D parameters whereas we found a parameter with size: %s", tostring(p.shape))
  end
end

-- ---- Adafactor (factored second moments; PyTorch 2.5's torch.optim.Adafactor) ----
-- A matrix's (or a stack of them, the last two dims) squared gradient is kept as its row and column
-- means (row_var [..., n, 1], col_var [..., 1, m]), a vector's whole (variance); the decay
-- 1 - beta2_t = step^beta2_decay; the step size min(lr, 1 / sqrt(step)) times the parameter's RMS
-- (at least eps[2]), the update clipped to RMS d. eps[1] nil (PyTorch's None): the dtype's eps.
optim.Adafactor = class("Adafactor", { lr = 1e-2, beta2_decay = -0.8, eps = { nil, 1e-3 }, d = 1, weight_decay = 0,
  maximize = false },
  function(p, g, state, group)
    if group.maximize then g = -g end
    if state.step == nil then
      state.step = 0
      if g:dim() > 1 then
        local rows, cols = g:size(), g:size()
        rows[#rows], cols[#cols - 1] = 1, 1
        state.row_var, state.col_var = g:new_zeros(rows), g:new_zeros(cols)
      else
        state.variance = wick.zeros_like(g)
      end
    end
    state.step = state.step + 1
    local step, lr = state.step, group.lr
    local eps1, eps2 = group.eps[1] or wick.finfo(p.dtype).eps, group.eps[2]
    local decay = step ^ group.beta2_decay
    local alpha = math.max(eps2, p:norm():item() / math.sqrt(p:numel())) * math.min(lr, 1 / math.sqrt(step))
    if group.weight_decay ~= 0 then p:mul_(1 - lr * group.weight_decay) end
    local estimate
    if g:dim() > 1 then
      state.row_var:lerp_(wick.linalg.vector_norm(g, 2, -1, true):square_():div_(g:size(-1)), decay)
      state.col_var:lerp_(wick.linalg.vector_norm(g, 2, -2, true):square_():div_(g:size(-2)), decay)
      estimate = state.row_var:matmul(state.col_var)
      estimate:div_(state.row_var:mean(-2, true):clamp_(eps1, math.huge))
    else
      state.variance:lerp_(g * g, decay)
      estimate = state.variance:clone()
    end
    local update = estimate:clamp_(eps1 * eps1, math.huge):rsqrt_():mul_(g)
    local denom = math.max(1, update:norm():item() / (math.sqrt(update:numel()) * group.d))
    p:add_(update, -alpha / denom)
  end)
-- Adafactor's factored moments are not of the parameter's shape
optim.Adafactor._factored_state = { row_var = true, col_var = true }

-- ---- LBFGS (PyTorch's: one group, the parameters as one flat vector) ----
local function dot(a, b) return (a * b):sum():item() end
local function absmax(a) return a:numel() == 0 and 0 or a:abs():max():item() end -- (no parameter elements: optimal)

-- the minimum of the cubic through (x1, f1, g1) and (x2, f2, g2), kept in bounds
local function cubic_interpolate(x1, f1, g1, x2, f2, g2, lo, hi)
  if not lo then lo, hi = math.min(x1, x2), math.max(x1, x2) end
  local d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
  local d2_square = d1 * d1 - g1 * g2
  if d2_square < 0 then return (lo + hi) / 2 end
  local d2 = math.sqrt(d2_square)
  local min_pos
  if x1 <= x2 then min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
  else min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2)) end
  return math.min(math.max(min_pos, lo), hi)
end

-- A line search along d for a step t that satisfies the strong Wolfe
-- conditions (sufficient decrease c1, curvature c2): bracketing, then zoom.
-- Returns the loss, the flat gradient and the step there, and the evaluations.
local function strong_wolfe(obj, x, t, d, f, g, gtd, tolerance_change, max_ls)
  local c1, c2 = 1e-4, 0.9
  local d_norm = absmax(d)
  g = g:clone()
  local f_new, g_new = obj(x, t, d)
  local evals, gtd_new = 1, dot(g_new, d)
  local t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
  local done, ls_iter = false, 0
  local bracket, bf, bg, bgtd
  while ls_iter < max_ls do
    if f_new > f + c1 * t * gtd or (ls_iter > 1 and f_new >= f_prev) then
      bracket, bf, bg, bgtd = { t_prev, t }, { f_prev, f_new }, { g_prev, g_new:clone() }, { gtd_prev, gtd_new }
      break
    end
    if math.abs(gtd_new) <= -c2 * gtd then
      bracket, bf, bg, done = { t }, { f_new }, { g_new }, true
      break
    end
    if gtd_new >= 0 then
      bracket, bf, bg, bgtd = { t_prev, t }, { f_prev, f_new }, { g_prev, g_new:clone() }, { gtd_prev, gtd_new }
      break
    end
    local tmp = t
    t = cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, t + 0.01 * (t - t_prev), t * 10)
    t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new:clone(), gtd_new
    f_new, g_new = obj(x, t, d)
    evals, gtd_new, ls_iter = evals + 1, dot(g_new, d), ls_iter + 1
  end
  if ls_iter == max_ls then bracket, bf, bg = { 0, t }, { f, f_new }, { g, g_new } end
  -- zoom: shrink the bracket until the point satisfies the conditions
  local insuf_progress = false
  local low, high = 1, 2
  if bf[1] > bf[#bf] then low, high = 2, 1 end
  while not done and ls_iter < max_ls do
    if math.abs(bracket[2] - bracket[1]) * d_norm < tolerance_change then break end
    t = cubic_interpolate(bracket[1], bf[1], bgtd[1], bracket[2], bf[2], bgtd[2])
    local bmax, bmin = math.max(bracket[1], bracket[2]), math.min(bracket[1], bracket[2])
    local eps = 0.1 * (bmax - bmin)
    if math.min(bmax - t, t - bmin) < eps then
      if insuf_progress or t >= bmax or t <= bmin then
        if math.abs(t - bmax) < math.abs(t - bmin) then t = bmax - eps else t = bmin + eps end
        insuf_progress = false
      else
        insuf_progress = true
      end
    else
      insuf_progress = false
    end
    f_new, g_new = obj(x, t, d)
    evals, gtd_new, ls_iter = evals + 1, dot(g_new, d), ls_iter + 1
    if f_new > f + c1 * t * gtd or f_new >= bf[low] then
      bracket[high], bf[high], bg[high], bgtd[high] = t, f_new, g_new:clone(), gtd_new
      if bf[1] <= bf[2] then low, high = 1, 2 else low, high = 2, 1 end
    else
      if math.abs(gtd_new) <= -c2 * gtd then
        done = true
      elseif gtd_new * (bracket[high] - bracket[low]) >= 0 then
        bracket[high], bf[high], bg[high], bgtd[high] = bracket[low], bf[low], bg[low], bgtd[low]
      end
      bracket[low], bf[low], bg[low], bgtd[low] = t, f_new, g_new:clone(), gtd_new
    end
  end
  return bf[low], bg[low], bracket[low], evals
end

local LBFGS = class("LBFGS", { lr = 1, max_iter = 20, tolerance_grad = 1e-7, tolerance_change = 1e-9, history_size = 100,
  maximize = false }, nil, { max_eval = "number", line_search_fn = "string" })
optim.LBFGS = LBFGS

function LBFGS.new(cls, params, ...)
  local self = Optimizer.new(cls, params, ...)
  if #self.param_groups ~= 1 then check.fail("LBFGS", "LBFGS doesn't support per-parameter options (parameter groups)") end
  local group = self.param_groups[1]
  if group.max_eval == nil then group.max_eval = math.floor(group.max_iter * 5 / 4) end
  self.defaults.max_eval = group.max_eval
  for _, k in ipairs({ "max_iter", "max_eval", "history_size" }) do check.int(group[k], "LBFGS", k, 1) end
  if group.line_search_fn ~= nil then check.one_of(group.line_search_fn, "LBFGS", "line_search_fn", { "strong_wolfe" }) end
  return self
end

function LBFGS:add_param_group(group, index)
  if #self.param_groups > 0 then check.fail("LBFGS", "LBFGS doesn't support per-parameter options (parameter groups)") end
  Optimizer.add_param_group(self, group, index)
end

-- the gradients of all parameters as one vector (zeros for a parameter without one)
local function flat_grad(params, maximize)
  local views = {}
  for i, p in ipairs(params) do
    views[i] = p.grad and p.grad:reshape({ -1 }) or wick.zeros({ p:numel() }, { dtype = p.dtype, device = p.device })
  end
  local flat = wick.cat(views, 1)
  return maximize and flat:neg_() or flat
end

-- p += step * (p's slice of the flat vector) for every parameter
local function add_flat(params, step, update)
  local offset = 0
  for _, p in ipairs(params) do
    local n = p:numel()
    if n > 0 then p:add_(update:narrow(1, offset + 1, n):view_as(p), step) end
    offset = offset + n
  end
end

local function loss_value(loss, maximize)
  local v = wick.is_tensor(loss) and loss:item() or loss
  if type(v) ~= "number" then check.fail("LBFGS:step", "the closure must return the loss (a number or a one-element tensor), got %s", check.describe(loss)) end
  return maximize and -v or v
end

-- one LBFGS step: up to max_iter iterations of the two-loop recursion, each a
-- fixed step lr (the first scaled by 1 / |g|_1) or a strong-Wolfe line search.
local function lbfgs_step(self, closure)
  local params, group = self.param_groups[1].params, self.param_groups[1]
  if #params == 0 then return wick.enable_grad(closure) end
  local lr, max_iter, max_eval = numbers_view(group).lr, group.max_iter, group.max_eval
  local tolerance_grad, tolerance_change, history_size = group.tolerance_grad, group.tolerance_change, group.history_size
  local maximize = group.maximize
  local state = self.state[params[1]]
  if not state then state = {}; self.state[params[1]] = state else follow(params[1], state) end
  state.func_evals, state.n_iter = state.func_evals or 0, state.n_iter or 0
  local function evaluate() return wick.enable_grad(closure) end

  local orig_loss = evaluate()
  local loss = loss_value(orig_loss, maximize)
  local current_evals = 1
  state.func_evals = state.func_evals + 1
  local g = flat_grad(params, maximize)
  if absmax(g) <= tolerance_grad then return orig_loss end

  local d, t, old_dirs, old_stps, ro = state.d, state.t, state.old_dirs, state.old_stps, state.ro
  local H_diag, prev_flat_grad, prev_loss = state.H_diag, state.prev_flat_grad, state.prev_loss
  local n_iter = 0
  while n_iter < max_iter do
    n_iter = n_iter + 1
    state.n_iter = state.n_iter + 1
    if state.n_iter == 1 then
      d, old_dirs, old_stps, ro, H_diag = -g, {}, {}, {}, 1
      state.al = state.al or {}
    else
      -- the curvature pair (y, s), kept when y.s is positive enough
      local y, s = g - prev_flat_grad, d * t
      local ys = dot(y, s)
      if ys > 1e-10 then
        if #old_dirs == history_size then
          table.remove(old_dirs, 1); table.remove(old_stps, 1); table.remove(ro, 1)
        end
        old_dirs[#old_dirs + 1], old_stps[#old_stps + 1], ro[#ro + 1] = y, s, 1 / ys
        H_diag = ys / dot(y, y)
      end
      -- the two-loop recursion: d = -H g (al kept in the state, as PyTorch's scratch list)
      local al, q = state.al or {}, -g
      state.al = al
      for i = #old_dirs, 1, -1 do
        al[i] = dot(old_stps[i], q) * ro[i]
        q:add_(old_dirs[i], -al[i])
      end
      d = q * H_diag
      for i = 1, #old_dirs do
        local be_i = dot(old_dirs[i], d) * ro[i]
        d:add_(old_stps[i], al[i] - be_i)
      end
    end
    if prev_flat_grad == nil then prev_flat_grad = g:clone() else prev_flat_grad:copy_(g) end
    prev_loss = loss
    if state.n_iter == 1 then t = math.min(1, 1 / g:abs():sum():item()) * lr else t = lr end
    local gtd = dot(g, d)
    if gtd > -tolerance_change then break end

    local ls_func_evals = 0
    if group.line_search_fn ~= nil then
      local x_init = {}
      for i, p in ipairs(params) do x_init[i] = p:clone() end
      local function obj(x, step, dir)
        add_flat(params, step, dir)
        local f = loss_value(evaluate(), maximize)
        local fg = flat_grad(params, maximize)
        for i, p in ipairs(params) do p:copy_(x[i]) end
        return f, fg
      end
      loss, g, t, ls_func_evals = strong_wolfe(obj, x_init, t, d, loss, g, gtd, tolerance_change, max_eval - current_evals)
      add_flat(params, t, d)
    else
      add_flat(params, t, d)
      if n_iter ~= max_iter then
        loss = loss_value(evaluate(), maximize)
        g = flat_grad(params, maximize)
        ls_func_evals = 1
      end
    end
    local opt_cond = absmax(g) <= tolerance_grad
    current_evals = current_evals + ls_func_evals
    state.func_evals = state.func_evals + ls_func_evals
    if n_iter == max_iter or current_evals >= max_eval or opt_cond then break end
    if absmax(d * t) <= tolerance_change or math.abs(loss - prev_loss) < tolerance_change then break end
  end
  state.d, state.t, state.old_dirs, state.old_stps, state.ro = d, t, old_dirs, old_stps, ro
  state.H_diag, state.prev_flat_grad, state.prev_loss = H_diag, prev_flat_grad, prev_loss
  return orig_loss
end

--- opt:step(closure): closure re-evaluates the model and returns the loss
--- (it runs with gradients on); returns the loss of its first evaluation.
function LBFGS:step(closure)
  this(self, "step")
  check.callable(closure, "LBFGS:step", "closure")
  return wick.no_grad(lbfgs_step, self, closure)
end

-- ---- hooks (PyTorch's Optimizer.register_step_pre_hook and the rest) ----

-- torch.optim.optimizer.register_optimizer_step_pre_hook / _post_hook: every optimizer's
local global_hooks = { step_pre = {}, step_post = {} }
local function add_hook(list, fn, what)
  check.callable(fn, what, "hook")
  local entry = { fn = fn }
  list[#list + 1] = entry
  return { remove = function()
    for i, e in ipairs(list) do if e == entry then table.remove(list, i); break end end
  end }
end
local function hooks_of(self, kind)
  local all = rawget(self, "_hooks")
  if not all then all = {}; rawset(self, "_hooks", all) end
  all[kind] = all[kind] or {}
  return all[kind]
end
local function each_hook(self, kind, fn)
  for _, list in ipairs({ global_hooks[kind] or {}, (rawget(self, "_hooks") or {})[kind] or {} }) do
    for _, e in ipairs({ unpack(list) }) do fn(e.fn) end
  end
end
function optim.optimizer.register_optimizer_step_pre_hook(fn)
  return add_hook(global_hooks.step_pre, fn, "register_optimizer_step_pre_hook")
end
function optim.optimizer.register_optimizer_step_post_hook(fn)
  return add_hook(global_hooks.step_post, fn, "register_optimizer_step_post_hook")
end
--- opt:register_step_pre_hook(fn): fn(opt, args, kwargs) before each step (args the step's
--- arguments, kwargs {}); returning new args and kwargs replaces them. register_step_post_hook(fn):
--- fn(opt, args, kwargs) after it. register_state_dict_pre_hook(fn): fn(opt) before state_dict;
--- register_state_dict_post_hook(fn): fn(opt, state_dict), a table returned replaces it;
--- register_load_state_dict_pre_hook(fn): fn(opt, state_dict), likewise;
--- register_load_state_dict_post_hook(fn): fn(opt) after loading. Each returns a handle with :remove().
for _, kind in ipairs({ "step_pre", "step_post", "state_dict_pre", "state_dict_post", "load_state_dict_pre",
  "load_state_dict_post" }) do
  local name = "register_" .. kind .. "_hook"
  Optimizer[name] = function(self, fn) return add_hook(hooks_of(this(self, name), kind), fn, name) end
end

-- a step with the hooks around it (once: a step that calls its parent's runs them once)
function hooked_step(step)
  return function(self, ...)
    if type(self) ~= "table" or rawget(self, "_in_step") or (next(global_hooks.step_pre) == nil
      and next(global_hooks.step_post) == nil and rawget(self, "_hooks") == nil) then
      return step(self, ...)
    end
    local args, kwargs = { n = select("#", ...), ... }, {}
    each_hook(self, "step_pre", function(fn)
      local a, k = fn(self, args, kwargs)
      if a ~= nil then args, kwargs = a, k or kwargs end
    end)
    rawset(self, "_in_step", true)
    local ok, r = pcall(function() return { step(self, unpack(args, 1, args.n or #args)) } end)
    rawset(self, "_in_step", nil)
    if not ok then error(r, 0) end
    each_hook(self, "step_post", function(fn) fn(self, args, kwargs) end)
    return unpack(r)
  end
end
Optimizer.step = hooked_step(Optimizer.step)
LBFGS.step = hooked_step(LBFGS.step)
local plain_state_dict, plain_load_state_dict = Optimizer.state_dict, Optimizer.load_state_dict
function Optimizer:state_dict()
  each_hook(this(self, "state_dict"), "state_dict_pre", function(fn) fn(self) end)
  local sd = plain_state_dict(self)
  each_hook(self, "state_dict_post", function(fn) sd = fn(self, sd) or sd end)
  return sd
end
function Optimizer:load_state_dict(sd, ...)
  each_hook(this(self, "load_state_dict"), "load_state_dict_pre", function(fn) sd = fn(self, sd) or sd end)
  local r = plain_load_state_dict(self, sd, ...)
  each_hook(self, "load_state_dict_post", function(fn) fn(self) end)
  return r
end
--- opt:__setstate__(state): PyTorch's Optimizer.__setstate__ (Adan's super().__setstate__(state)):
--- the fields of state set on the optimizer
function Optimizer:__setstate__(state)
  check.table(state, "__setstate__", "state")
  for k, v in pairs(state) do self[k] = v end
end

-- ---- learning-rate schedulers ----
-- As PyTorch's: construction sets initial_lr in each group and takes the
-- initial step (the lr of step 0); sched:step() applies the recursive form
-- (from each group's current lr, so schedulers chain and a user's own change
-- to group.lr carries on), sched:step(epoch) the closed form at that epoch.
local Scheduler = {}
Scheduler.__index = Scheduler
optim.lr_scheduler = {}

local function copy_plain(v)
  if type(v) ~= "table" or getmetatable(v) ~= nil then return v end
  local out = {}
  for k, x in pairs(v) do out[k] = copy_plain(x) end
  return out
end

-- spec: defaults, kinds (options with no default, or of several kinds),
-- positional (PyTorch's order after the optimizer), validate(self, opt),
-- lr(self, group, base_lr, i) (PyTorch's get_lr: from the current group.lr),
-- closed(self, base_lr, i) (the closed form at last_epoch), finish(self)
-- (after the initial step), state (saved fields that are not options: name -> kind)
local function sched(self, fn)
  if type(self) ~= "table" or type(self.optimizer) ~= "table" then check.expected("Scheduler:" .. fn, "self", "a scheduler", self) end
  return self
end

-- lr_scheduler.LRScheduler: the base of every scheduler, built in or one's
-- own (wick.isinstance(sched, LRScheduler) is true for all, as PyTorch's)
local LRScheduler = setmetatable({ __name = "LRScheduler" }, { __index = Scheduler })
LRScheduler.__index = LRScheduler
optim.lr_scheduler.LRScheduler = LRScheduler
optim.lr_scheduler._LRScheduler = LRScheduler -- (PyTorch's older name, still exported)

local function scheduler(name, spec)
  local C = setmetatable({}, { __index = LRScheduler, __call = function(cls, ...) return cls.new(cls, ...) end })
  C.__index = C
  C.__name = name
  C.defaults = spec.defaults or {}
  -- PyTorch's get_lr: the lrs the next step would set (the recursive form)
  formulas[C] = spec
  optim.lr_scheduler[name] = C
  return C
end

local function kinds_of(cls)
  local spec = formulas[cls] or {}
  local kinds = {}
  for k, v in pairs(cls.defaults or {}) do kinds[k] = type(v) end
  for k, v in pairs(spec.kinds or {}) do kinds[k] = v end
  return kinds
end


local function set_lrs(self, values)
  for i, g in ipairs(self.optimizer.param_groups) do
    if wick.is_tensor(g.lr) then g.lr:fill_(values[i]) else g.lr = values[i] end -- (a Tensor lr stays one)
  end
  self._last_lr = { unpack(values) }
end

-- PyTorch's _update_lr: the recursive form for a plain step, the closed form
-- (where the scheduler has one) at a given epoch
local function update_lr(self, epoch)
  local spec, values = formulas[getmetatable(self)], {}
  self.last_epoch = epoch or self.last_epoch + 1
  if spec == nil then -- a scheduler of one's own (LRScheduler:extend): its get_lr()
    local name = getmetatable(self).__name
    -- (PyTorch's flag, true while step calls get_lr: k-diffusion's InverseLR warns when it is not)
    self._get_lr_called_within_step = true
    local ok, got = pcall(self.get_lr, self)
    self._get_lr_called_within_step = false
    if not ok then error(got, 0) end
    values = got
    if type(values) ~= "table" or #values ~= #self.optimizer.param_groups then
      check.fail(name .. ":get_lr", "expected a table of %d learning rates (one per parameter group), got %s",
        #self.optimizer.param_groups, check.describe(values))
    end
    for i, v in ipairs(values) do check.number(v, name .. ":get_lr", ("lr %d"):format(i)) end
    return set_lrs(self, values)
  end
  local form = spec.lr
  if epoch ~= nil and spec.closed then form = function(s, _, base, i) return spec.closed(s, base, i) end end
  for i, g in ipairs(self.optimizer.param_groups) do values[i] = form(self, numbers_view(g), self.base_lrs[i], i) end
  set_lrs(self, values)
end

-- PyTorch's warning for sched:step() before any opt:step(): the optimizer's
-- step (its class's, or one of its own) notes on the optimizer that it ran
local function track_step(opt)
  if rawget(opt, "_step_tracked") or type(opt.step) ~= "function" then return end
  local step = opt.step
  rawset(opt, "step", function(o, ...)
    if type(o) == "table" then rawset(o, "_opt_called", true) end
    return step(o, ...)
  end)
  rawset(opt, "_step_tracked", true)
end
local function warn_order(self)
  if self._step_count == 1 and not self._is_initial and not rawget(self.optimizer, "_opt_called") then
    require("wick.nn.common").warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch "
      .. "1.1.0 and later, you should call them in the opposite order: `optimizer.step()` before "
      .. "`lr_scheduler.step()`.  Failure to do this will result in PyTorch skipping the first value of the learning "
      .. "rate schedule. See more details at https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate")
  end
end

local function initial_step(self)
  track_step(self.optimizer)
  self._step_count = 0
  self._is_initial = true
  self:step()
  self._is_initial = nil
end

-- the groups' initial_lr (set from lr on a fresh start; a resumed one, last_epoch >= 0, needs them)
local function base_lrs_of(name, opt, last_epoch)
  local base = {}
  for i, g in ipairs(opt.param_groups) do
    if g.initial_lr == nil then
      if last_epoch ~= -1 then
        check.fail(name, "param 'initial_lr' is not specified in param_groups[%d] when resuming an optimizer "
          .. "(load the optimizer's state first, or resume the scheduler with load_state_dict)", i)
      end
      g.initial_lr = wick.is_tensor(g.lr) and g.lr:clone() or g.lr -- (PyTorch's: a Tensor lr's clone)
    end
    base[i] = wick.is_tensor(g.initial_lr) and g.initial_lr:item() or g.initial_lr
  end
  return base
end

--- Scheduler(opt[, PyTorch's positional arguments][, opts])
function Scheduler.new(cls, opt, ...)
  if type(cls) ~= "table" or formulas[cls] == nil then check.expected("Scheduler.new", "class", "a scheduler class", cls) end
  -- all by keyword (PyTorch's LambdaLR(optimizer=opt, lr_lambda=f)): the optimizer in the options
  if type(opt) == "table" and type(opt.optimizer) == "table" and opt.param_groups == nil and select("#", ...) == 0 then
    local rest = {}
    for k, v in pairs(opt) do if k ~= "optimizer" then rest[k] = v end end
    return Scheduler.new(cls, opt.optimizer, rest)
  end
  if type(opt) ~= "table" or type(opt.param_groups) ~= "table" then check.expected(cls.__name, "optimizer", "an optimizer", opt) end
  local spec = formulas[cls]
  -- PyTorch's last_epoch after the hyper-parameters (HF's LambdaLR(opt, f, last_epoch)) or by
  -- name: -1 a fresh start; another resumes from the groups' initial_lr, which a resumed
  -- optimizer's state has (VITS' ExponentialLR(optim_g, gamma, last_epoch=epoch_str-2)), as PyTorch's
  local args, positional = { n = select("#", ...), ... }, spec.positional or {}
  local last = args[args.n]
  local last_epoch
  if args.n == #positional + 1 and type(last) == "number" then
    last_epoch, args.n = last, args.n - 1
  elseif type(last) == "table" and getmetatable(last) == nil and last.last_epoch ~= nil then
    local rest = {}
    for k, v in pairs(last) do if k ~= "last_epoch" then rest[k] = v end end
    last_epoch, args[args.n] = last.last_epoch, rest
  end
  last_epoch = last_epoch == nil and -1 or check.int(last_epoch, cls.__name, "last_epoch", -1)
  local opts = check.positional(cls.__name, positional, kinds_of(cls), unpack(args, 1, args.n))
  local self = setmetatable({ optimizer = opt, last_epoch = last_epoch, base_lrs = {} }, cls)
  for k, v in pairs(cls.defaults) do self[k] = copy_plain(v) end
  for k, v in pairs(opts) do self[k] = v end
  if spec.validate then spec.validate(self, opt) end
  self.base_lrs = base_lrs_of(cls.__name, opt, last_epoch)
  initial_step(self)
  if spec.finish then spec.finish(self) end
  return self
end

-- PyTorch's warning for a scheduler stepped with an epoch
local function epoch_deprecated()
  require("wick.nn.common").warn("The epoch parameter in `scheduler.step()` was not necessary and is being "
    .. "deprecated where possible. Please use `scheduler.step()` to step the scheduler. During the deprecation, "
    .. "if epoch is different from None, the closed form is used instead of the new chainable form, where "
    .. "available. Please open an issue if you are unable to replicate your use case: "
    .. "https://github.com/pytorch/pytorch/issues/new/choose.")
end

--- sched:step([epoch]): the next step's lr (or, given an epoch, that epoch's)
function Scheduler:step(epoch)
  sched(self, "step")
  if epoch ~= nil then
    check.number(epoch, self.__name .. ":step", "epoch")
    if not self._is_initial then epoch_deprecated() end
  end
  warn_order(self)
  self._step_count = self._step_count + 1
  update_lr(self, epoch)
end

function Scheduler:get_last_lr()
  sched(self, "get_last_lr")
  return { unpack(self._last_lr) }
end

--- lr_scheduler.LRScheduler: the base of a scheduler of one's own, as
--- PyTorch's: LRScheduler:extend("Name") makes a class whose init(opt, ...)
--- sets its fields and then calls Name.super.init(self, opt[, last_epoch]),
--- and whose get_lr() gives one lr per parameter group (self.last_epoch,
--- self.base_lrs, the groups' lr); step, get_last_lr, state_dict (every
--- plain field) and load_state_dict are the schedulers'.

function LRScheduler:extend(name)
  return subclass(self, LRScheduler, name, function() return {} end, function(obj) return obj._step_count ~= nil end,
    "optimizer")
end

--- LRScheduler.init(self, optimizer[, last_epoch = -1]): base_lrs from the
--- groups' initial_lr, then the initial step (PyTorch's __init__)
function LRScheduler:init(opt, last_epoch)
  local name = (getmetatable(self) or LRScheduler).__name
  if type(opt) ~= "table" or type(opt.param_groups) ~= "table" then check.expected(name, "optimizer", "an optimizer", opt) end
  last_epoch = last_epoch == nil and -1 or check.int(last_epoch, name, "last_epoch", -1)
  self.optimizer, self.base_lrs = opt, base_lrs_of(name, opt, last_epoch)
  self.last_epoch = last_epoch
  initial_step(self)
end

function LRScheduler:get_lr()
  local name = (getmetatable(self) or LRScheduler).__name
  local spec = formulas[getmetatable(self)]
  if spec and not spec.lr then -- (ReduceLROnPlateau: no formula, as PyTorch's NotImplementedError)
    check.fail(name .. ":get_lr", "this scheduler computes its lrs from the metric at step(metric): use get_last_lr()")
  end
  if spec then -- PyTorch's: the recursive form from the current lrs, with its warning
    require("wick.nn.common").warn("To get the last learning rate computed by the scheduler, please use "
      .. "`get_last_lr()`.")
    local values = {}
    for i, g in ipairs(self.optimizer.param_groups) do values[i] = spec.lr(self, numbers_view(g), self.base_lrs[i], i) end
    return values
  end
  check.fail(name .. ":get_lr", "not defined: a scheduler made with LRScheduler:extend defines get_lr()")
end

local STATE_KINDS = { last_epoch = "number", _step_count = "number", base_lrs = "table", _last_lr = "table" }
-- PyTorch's own bookkeeping in its saved schedulers: what wick derives from the
-- constructor's arguments (OneCycleLR's phases and annealing function,
-- ReduceLROnPlateau's default_min_lr) or does not save (LambdaLR's functions,
-- None in PyTorch's state)
local PYTORCH_ONLY = { _get_lr_called_within_step = true, _is_initial = true, verbose = true,
  _anneal_func_type = true, _schedule_phases = true, lr_lambdas = true, default_min_lr = true, mode_worse = true }
local PYTORCH_NAMES = { min_lrs = "min_lr" } -- (ReduceLROnPlateau's per-group list)
-- PyTorch's MultiStepLR saves its milestones as a Counter (milestone -> count):
-- wick's array of milestones, a milestone repeated count times
local function milestones_array(v)
  if type(v) ~= "table" or v[1] ~= nil or next(v) == nil then return v end
  local out = {}
  for m, count in pairs(v) do
    if type(m) ~= "number" or type(count) ~= "number" or count < 0 or count > 1e6 then
      check.fail("load_state_dict", "milestones: expected an array or PyTorch's Counter of step counts")
    end
    for _ = 1, count do out[#out + 1] = m end
  end
  table.sort(out)
  return out
end

-- The state: numbers, strings, booleans and arrays of them (a function, like
-- lr_lambda, is not saved, as in PyTorch).
function Scheduler:state_dict()
  sched(self, "state_dict")
  local cls = getmetatable(self)
  local sd = {}
  local function keep(k)
    local v = self[k]
    if type(v) == "function" or (type(v) == "table" and (getmetatable(v) ~= nil or type(v[1]) == "function")) then return end
    sd[k] = copy_plain(v)
  end
  for k in pairs(STATE_KINDS) do keep(k) end
  for k in pairs(kinds_of(cls)) do keep(k) end
  for k in pairs((formulas[cls] or {}).state or {}) do keep(k) end
  if formulas[cls] == nil then -- one's own (PyTorch's: its __dict__ but the optimizer)
    for k in pairs(self) do if k ~= "optimizer" and type(k) == "string" then keep(k) end end
  end
  return sd
end

function Scheduler:load_state_dict(sd)
  sched(self, "load_state_dict")
  check.table(sd, "load_state_dict", "state_dict")
  local cls = getmetatable(self)
  local kinds = kinds_of(cls)
  for k, v in pairs(STATE_KINDS) do kinds[k] = v end
  for k, v in pairs((formulas[cls] or {}).state or {}) do kinds[k] = v end
  local own = {}
  for k, v in pairs(sd) do
    k = PYTORCH_NAMES[k] or k
    if not PYTORCH_ONLY[k] then -- (PyTorch's own bookkeeping, in its saved schedulers)
      if type(k) ~= "string" or (kinds[k] == nil and formulas[cls] ~= nil) then
        check.fail("load_state_dict", "unexpected key '%s' in a %s state", tostring(k), cls.__name)
      end
      -- (only wick's own MultiStepLR keeps an array: a scheduler of one's own keeps its value as saved,
      -- basicsr's MultiStepRestartLR its Counter)
      own[k] = k == "milestones" and formulas[cls] ~= nil and milestones_array(v) or v
    end
  end
  if formulas[cls] ~= nil then check.options(own, "load_state_dict", kinds) end
  for k, v in pairs(own) do self[k] = copy_plain(v) end
  if self._last_lr == nil then self._last_lr = {} end
end

--- StepLR(opt, step_size[, gamma = 0.1]): gamma every step_size steps.
scheduler("StepLR", {
  defaults = { gamma = 0.1 }, kinds = { step_size = "number" }, positional = { "step_size", "gamma" },
  validate = function(self)
    if self.step_size == nil then check.fail("StepLR", "step_size is required") end
    check.int(self.step_size, "StepLR", "step_size", 1)
  end,
  lr = function(self, group)
    if self.last_epoch == 0 or self.last_epoch % self.step_size ~= 0 then return group.lr end
    return group.lr * self.gamma
  end,
  closed = function(self, base) return base * self.gamma ^ math.floor(self.last_epoch / self.step_size) end,
})

--- MultiStepLR(opt, milestones[, gamma = 0.1]): gamma at each milestone (in any order, a repeated one
--- counting as often as it appears: PyTorch's Counter).
scheduler("MultiStepLR", {
  defaults = { gamma = 0.1 }, kinds = { milestones = "table" }, positional = { "milestones", "gamma" },
  validate = function(self)
    local m = self.milestones
    if m == nil then check.fail("MultiStepLR", "milestones is required (an increasing array of step counts)") end
    for i = 1, #m do check.int(m[i], "MultiStepLR", "milestones", 0) end
    self.milestones = { unpack(m) }
    table.sort(self.milestones)
  end,
  lr = function(self, group)
    local hits = 0
    for _, m in ipairs(self.milestones) do if m == self.last_epoch then hits = hits + 1 end end
    return hits == 0 and group.lr or group.lr * self.gamma ^ hits
  end,
  closed = function(self, base)
    local passed = 0
    for _, m in ipairs(self.milestones) do if self.last_epoch >= m then passed = passed + 1 end end
    return base * self.gamma ^ passed
  end,
})

--- ConstantLR(opt[, factor = 1/3[, total_iters = 5]]): factor until total_iters.
scheduler("ConstantLR", {
  defaults = { factor = 1 / 3, total_iters = 5 }, positional = { "factor", "total_iters" },
  validate = function(self)
    if self.factor > 1 or self.factor < 0 then check.fail("ConstantLR", "Constant multiplicative factor expected to be between 0 and 1.") end
    check.int(self.total_iters, "ConstantLR", "total_iters", 0)
  end,
  lr = function(self, group)
    if self.last_epoch == 0 then return group.lr * self.factor end
    if self.last_epoch ~= self.total_iters then return group.lr end
    return group.lr * (1 / self.factor)
  end,
  closed = function(self, base)
    return base * (self.factor + (self.last_epoch >= self.total_iters and (1 - self.factor) or 0))
  end,
})

--- LinearLR(opt[, start_factor = 1/3[, end_factor = 1[, total_iters = 5]]]):
--- the factor goes linearly from start_factor to end_factor over total_iters steps.
scheduler("LinearLR", {
  defaults = { start_factor = 1 / 3, end_factor = 1, total_iters = 5 },
  positional = { "start_factor", "end_factor", "total_iters" },
  validate = function(self)
    if self.start_factor > 1 or self.start_factor <= 0 then
      check.fail("LinearLR", "Starting multiplicative factor expected to be greater than 0 and less or equal to 1.")
    end
    if self.end_factor > 1 or self.end_factor < 0 then
      check.fail("LinearLR", "Ending multiplicative factor expected to be between 0 and 1.")
    end
    check.int(self.total_iters, "LinearLR", "total_iters", 1)
  end,
  lr = function(self, group)
    if self.last_epoch == 0 then return group.lr * self.start_factor end
    if self._is_initial or self.last_epoch > self.total_iters then return group.lr end
    local s, e = self.start_factor, self.end_factor
    return group.lr * (1 + (e - s) / (self.total_iters * s + (self.last_epoch - 1) * (e - s)))
  end,
  closed = function(self, base)
    local s, e = self.start_factor, self.end_factor
    return base * (s + (e - s) * math.min(self.total_iters, self.last_epoch) / self.total_iters)
  end,
})

--- ExponentialLR(opt, gamma): times gamma every step.
scheduler("ExponentialLR", {
  kinds = { gamma = "number" }, positional = { "gamma" },
  validate = function(self)
    if self.gamma == nil then check.fail("ExponentialLR", "missing 1 required positional argument: 'gamma'") end
  end,
  lr = function(self, group) return self._is_initial and group.lr or group.lr * self.gamma end,
  closed = function(self, base) return base * self.gamma ^ self.last_epoch end,
})

--- PolynomialLR(opt[, total_iters = 5[, power = 1]]): (1 - t / total_iters)^power.
scheduler("PolynomialLR", {
  defaults = { total_iters = 5, power = 1 }, positional = { "total_iters", "power" },
  validate = function(self) check.int(self.total_iters, "PolynomialLR", "total_iters", 1) end,
  lr = function(self, group)
    if self._is_initial or self.last_epoch > self.total_iters then return group.lr end
    local T, t = self.total_iters, self.last_epoch
    return group.lr * ((1 - t / T) / (1 - (t - 1) / T)) ^ self.power
  end,
  closed = function(self, base)
    return base * (1 - math.min(self.total_iters, self.last_epoch) / self.total_iters) ^ self.power
  end,
})

--- CosineAnnealingLR(opt, T_max[, eta_min = 0]): half a cosine from the base lr
--- to eta_min over T_max steps (and back up after, as PyTorch's).
scheduler("CosineAnnealingLR", {
  defaults = { eta_min = 0 }, kinds = { T_max = "number" }, positional = { "T_max", "eta_min" },
  validate = function(self)
    if self.T_max == nil then check.fail("CosineAnnealingLR", "missing 1 required positional argument: 'T_max'") end
    if self.T_max == 0 then check.fail("CosineAnnealingLR", "T_max must not be 0") end
  end,
  lr = function(self, group, base)
    local e, T, t = self.eta_min, self.T_max, self.last_epoch
    if self._is_initial then return group.lr end
    if self._step_count == 1 and t > 0 then return e + (base - e) * (1 + math.cos(t * math.pi / T)) / 2 end
    if (t - 1 - T) % (2 * T) == 0 then return group.lr + (base - e) * (1 - math.cos(math.pi / T)) / 2 end
    return (1 + math.cos(math.pi * t / T)) / (1 + math.cos(math.pi * (t - 1) / T)) * (group.lr - e) + e
  end,
  closed = function(self, base)
    return self.eta_min + (base - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
  end,
})

-- the lr_lambda of group i (one function, or one per group)
local function lambda_of(self, name, i)
  local f = self.lr_lambda
  if type(f) == "table" and getmetatable(f) == nil then f = f[i] end
  local factor = f(self.last_epoch)
  -- a one-element tensor is its number (airbench's lambda i: lr_schedule[i])
  if wick.is_tensor(factor) and factor:numel() == 1 and not factor:is_complex() then factor = factor:item() end
  if type(factor) ~= "number" then check.fail(name, "lr_lambda returned a %s, not a number", type(factor)) end
  return factor
end

local function check_lambdas(name)
  return function(self, opt)
    local f = self.lr_lambda
    if f == nil then check.fail(name, "lr_lambda is required (a function of the step count, or one per group)") end
    if type(f) == "table" and getmetatable(f) == nil then
      if #f ~= #opt.param_groups then check.fail(name, "expected %d lr_lambdas, but got %d", #opt.param_groups, #f) end
      for i = 1, #f do check.callable(f[i], name, "lr_lambda") end
    end
  end
end

--- LambdaLR(opt, lr_lambda): base lr * lr_lambda(step), the step counted from 0.
scheduler("LambdaLR", {
  kinds = { lr_lambda = "function|table" }, positional = { "lr_lambda" }, validate = check_lambdas("LambdaLR"),
  lr = function(self, _, base, i) return base * lambda_of(self, "LambdaLR", i) end,
})

--- MultiplicativeLR(opt, lr_lambda): lr * lr_lambda(step) at every step after the first.
scheduler("MultiplicativeLR", {
  kinds = { lr_lambda = "function|table" }, positional = { "lr_lambda" }, validate = check_lambdas("MultiplicativeLR"),
  lr = function(self, group, _, i)
    if self._is_initial then return group.lr end
    return group.lr * lambda_of(self, "MultiplicativeLR", i)
  end,
})

--- CosineAnnealingWarmRestarts(opt, T_0[, T_mult = 1[, eta_min = 0]]): a cosine
--- from the base lr to eta_min over T_i steps, then a restart with T_i * T_mult;
--- sched:step(epoch) takes fractional epochs.
local CAWR = scheduler("CosineAnnealingWarmRestarts", {
  defaults = { T_mult = 1, eta_min = 0 }, kinds = { T_0 = "number" }, positional = { "T_0", "T_mult", "eta_min" },
  state = { T_i = "number", T_cur = "number" },
  validate = function(self)
    local n = "CosineAnnealingWarmRestarts"
    if type(self.T_0) ~= "number" or self.T_0 <= 0 or self.T_0 ~= math.floor(self.T_0) then
      check.fail(n, "Expected positive integer T_0, but got %s", check.describe(self.T_0))
    end
    if self.T_mult < 1 or self.T_mult ~= math.floor(self.T_mult) then check.fail(n, "Expected integer T_mult >= 1, but got %s", self.T_mult) end
    self.T_i, self.T_cur = self.T_0, self.last_epoch
  end,
  lr = function(self, _, base) return self.eta_min + (base - self.eta_min) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2 end,
})

function CAWR:step(epoch)
  sched(self, "step")
  if epoch == nil and self.last_epoch < 0 then epoch = 0 end
  if epoch == nil then
    epoch = self.last_epoch + 1
    self.T_cur = self.T_cur + 1
    if self.T_cur >= self.T_i then
      self.T_cur = self.T_cur % self.T_i
      self.T_i = self.T_i * self.T_mult
    end
  else
    check.number(epoch, "CosineAnnealingWarmRestarts:step", "epoch")
    if epoch < 0 then check.fail("CosineAnnealingWarmRestarts:step", "Expected non-negative epoch, but got %s", epoch) end
    if epoch >= self.T_0 then
      if self.T_mult == 1 then
        self.T_cur = math.fmod(epoch, self.T_0)
      else
        -- the restart epoch is in: T_0 (T_mult^n - 1) / (T_mult - 1) <= epoch
        local n = math.floor(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1) / math.log(self.T_mult))
        self.T_cur = epoch - self.T_0 * (self.T_mult ^ n - 1) / (self.T_mult - 1)
        self.T_i = self.T_0 * self.T_mult ^ n
      end
    else
      self.T_i = self.T_0
      self.T_cur = epoch
    end
  end
  self._step_count = (self._step_count or 0) + 1
  self.last_epoch = math.floor(epoch)
  local values, lr = {}, formulas[CAWR].lr
  for i, g in ipairs(self.optimizer.param_groups) do values[i] = lr(self, g, self.base_lrs[i], i) end
  set_lrs(self, values)
end

-- one value per group: a number, or an array of one per group (PyTorch's _format_param)
local function per_group(name, what, v, opt)
  if type(v) == "table" then
    if #v ~= #opt.param_groups then
      check.fail(name, "%s must have the same length as optimizer.param_groups. %s has %d values, param_groups has %d.",
        what, what, #v, #opt.param_groups)
    end
    return { unpack(v) }
  end
  local out = {}
  for i = 1, #opt.param_groups do out[i] = v end
  return out
end

-- the group's momentum, or Adam's first beta, set to m
local function set_momentum(self, group, m)
  if self.use_beta1 then group.betas = { m, group.betas[2] } else group.momentum = m end
end

local function momentum_kind(self, name, opt)
  local d = opt.defaults or {}
  if d.momentum == nil and d.betas == nil then
    check.fail(name, "optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
  end
  self.use_beta1 = d.betas ~= nil
end

local function anneal(self, start, stop, pct)
  if self.anneal_strategy == "cos" then return stop + (start - stop) / 2 * (math.cos(math.pi * pct) + 1) end
  return (stop - start) * pct + start
end

--- OneCycleLR(opt, max_lr[, total_steps[, epochs[, steps_per_epoch[, pct_start = 0.3[,
--- anneal_strategy = "cos"[, cycle_momentum = true[, base_momentum = 0.85[,
--- max_momentum = 0.95[, div_factor = 25[, final_div_factor = 1e4[, three_phase = false]]]]]]]]]]]):
--- the 1cycle policy, the lr from max_lr / div_factor up to max_lr and down to
--- max_lr / (div_factor * final_div_factor), momentum (or Adam's beta1) the other way.
scheduler("OneCycleLR", {
  defaults = { pct_start = 0.3, anneal_strategy = "cos", cycle_momentum = true, base_momentum = 0.85, max_momentum = 0.95,
    div_factor = 25, final_div_factor = 1e4, three_phase = false },
  kinds = { max_lr = "number|table", total_steps = "number", epochs = "number", steps_per_epoch = "number",
    base_momentum = "number|table", max_momentum = "number|table" },
  positional = { "max_lr", "total_steps", "epochs", "steps_per_epoch", "pct_start", "anneal_strategy", "cycle_momentum",
    "base_momentum", "max_momentum", "div_factor", "final_div_factor", "three_phase" },
  state = { _phases = "table", use_beta1 = "boolean" },
  validate = function(self, opt)
    local n = "OneCycleLR"
    if self.max_lr == nil then check.fail(n, "max_lr is required") end
    if self.total_steps ~= nil then
      check.int(self.total_steps, n, "total_steps", 1)
    elseif self.epochs ~= nil and self.steps_per_epoch ~= nil then
      check.int(self.epochs, n, "epochs", 1)
      check.int(self.steps_per_epoch, n, "steps_per_epoch", 1)
      self.total_steps = self.epochs * self.steps_per_epoch
    else
      check.fail(n, "You must define either total_steps OR (epochs AND steps_per_epoch)")
    end
    if self.pct_start < 0 or self.pct_start > 1 then check.fail(n, "Expected float between 0 and 1 pct_start, but got %s", self.pct_start) end
    check.one_of(self.anneal_strategy, n, "anneal_strategy", { "cos", "linear" })
    local total, pct = self.total_steps, self.pct_start
    -- each phase: its last step and the group fields it goes between
    if self.three_phase then
      self._phases = {
        { pct * total - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum" },
        { 2 * pct * total - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum" },
        { total - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum" },
      }
    else
      self._phases = {
        { pct * total - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum" },
        { total - 1, "max_lr", "min_lr", "base_momentum", "max_momentum" },
      }
    end
    local max_lrs = per_group(n, "max_lr", self.max_lr, opt)
    for i, g in ipairs(opt.param_groups) do
      g.initial_lr = max_lrs[i] / self.div_factor
      g.max_lr = max_lrs[i]
      g.min_lr = g.initial_lr / self.final_div_factor
    end
    if self.cycle_momentum then
      momentum_kind(self, n, opt)
      local maxs = per_group(n, "max_momentum", self.max_momentum, opt)
      local bases = per_group(n, "base_momentum", self.base_momentum, opt)
      for i, g in ipairs(opt.param_groups) do
        set_momentum(self, g, maxs[i])
        g.max_momentum, g.base_momentum = maxs[i], bases[i]
      end
    end
  end,
  lr = function(self, group)
    local step = self.last_epoch
    if step > self.total_steps then
      check.fail("OneCycleLR", "Tried to step %d times. The specified number of total steps is %d", step, self.total_steps)
    end
    local start, lr, momentum = 0, nil, nil
    for i, phase in ipairs(self._phases) do
      local stop = phase[1]
      if step <= stop or i == #self._phases then
        local pct = (step - start) / (stop - start)
        lr = anneal(self, group[phase[2]], group[phase[3]], pct)
        if self.cycle_momentum then momentum = anneal(self, group[phase[4]], group[phase[5]], pct) end
        break
      end
      start = stop
    end
    if self.cycle_momentum then set_momentum(self, group, momentum) end
    return lr
  end,
})

--- CyclicLR(opt, base_lr, max_lr[, step_size_up = 2000[, step_size_down[, mode = "triangular"[,
--- gamma = 1[, scale_fn[, scale_mode = "cycle"[, cycle_momentum = true[, base_momentum = 0.8[,
--- max_momentum = 0.9]]]]]]]]]): the lr between base_lr and max_lr in cycles
--- (triangular, triangular2: halved each cycle, exp_range: times gamma^step).
scheduler("CyclicLR", {
  defaults = { step_size_up = 2000, mode = "triangular", gamma = 1, scale_mode = "cycle", cycle_momentum = true,
    base_momentum = 0.8, max_momentum = 0.9 },
  kinds = { base_lr = "number|table", max_lr = "number|table", step_size_down = "number", scale_fn = "function",
    base_momentum = "number|table", max_momentum = "number|table" },
  positional = { "base_lr", "max_lr", "step_size_up", "step_size_down", "mode", "gamma", "scale_fn", "scale_mode",
    "cycle_momentum", "base_momentum", "max_momentum" },
  state = { _base_lrs = "table", max_lrs = "table", base_momentums = "table", max_momentums = "table", total_size = "number",
    step_ratio = "number", use_beta1 = "boolean" },
  validate = function(self, opt)
    local n = "CyclicLR"
    if self.base_lr == nil or self.max_lr == nil then check.fail(n, "base_lr and max_lr are required") end
    self._base_lrs = per_group(n, "base_lr", self.base_lr, opt)
    for i, g in ipairs(opt.param_groups) do g.lr = self._base_lrs[i] end
    self.max_lrs = per_group(n, "max_lr", self.max_lr, opt)
    local up = self.step_size_up
    local down = self.step_size_down or up
    self.total_size = up + down
    if not (self.total_size > 0) then check.fail(n, "step_size_up + step_size_down must be positive") end
    self.step_ratio = up / self.total_size
    if self.scale_fn == nil then
      check.one_of(self.mode, n, "mode", { "triangular", "triangular2", "exp_range" })
      self.scale_mode = self.mode == "exp_range" and "iterations" or "cycle"
    else
      check.one_of(self.scale_mode, n, "scale_mode", { "cycle", "iterations" })
    end
    if self.cycle_momentum then
      momentum_kind(self, n, opt)
      self.base_momentums = per_group(n, "base_momentum", self.base_momentum, opt)
      self.max_momentums = per_group(n, "max_momentum", self.max_momentum, opt)
      for i, g in ipairs(opt.param_groups) do
        set_momentum(self, g, self.max_momentums[i])
        g.max_momentum, g.base_momentum = self.max_momentums[i], self.base_momentums[i]
      end
    end
  end,
  finish = function(self) self.base_lrs = { unpack(self._base_lrs) } end,
  lr = function(self, group, base, i)
    local cycle = math.floor(1 + self.last_epoch / self.total_size)
    local x = 1 + self.last_epoch / self.total_size - cycle
    local scale_factor = x <= self.step_ratio and x / self.step_ratio or (x - 1) / (self.step_ratio - 1)
    local scale
    local at = self.scale_mode == "cycle" and cycle or self.last_epoch
    if self.scale_fn then scale = self.scale_fn(at)
    elseif self.mode == "triangular" then scale = 1
    elseif self.mode == "triangular2" then scale = 1 / 2 ^ (at - 1)
    else scale = self.gamma ^ at end
    if self.cycle_momentum then
      local hi, lo = self.max_momentums[i], self.base_momentums[i]
      set_momentum(self, group, hi - (hi - lo) * scale_factor * scale)
    end
    return base + (self.max_lrs[i] - base) * scale_factor * scale
  end,
})

-- ---- schedulers of schedulers ----
local function sub_schedulers(name, list, opt)
  if type(list) ~= "table" or #list < 1 then
    check.fail(name, "%s expects at least one scheduler, but got %s", name, check.describe(list))
  end
  for i, s in ipairs(list) do
    if type(s) ~= "table" or type(s.optimizer) ~= "table" or getmetatable(s) == nil then
      check.fail(name, "%s at index %d should be a scheduler (with an optimizer)", name, i)
    end
    if getmetatable(s).__name == "ReduceLROnPlateau" then
      check.fail(name, "%s does not support `ReduceLROnPlateau` scheduler as it requires a metric in `step`, but got one at index %d", name, i)
    end
    if s.optimizer ~= opt then
      check.fail(name, "%s expects all schedulers to belong to the same optimizer, but scheduler %d has another", name, i)
    end
  end
  return { unpack(list) }
end

-- the state of a scheduler of schedulers: its own fields and each one's state
local function nested_state(self, fields)
  local sd = { _schedulers = {} }
  for _, k in ipairs(fields) do sd[k] = copy_plain(self[k]) end
  for i, s in ipairs(self._schedulers) do sd._schedulers[i] = s:state_dict() end
  return sd
end

local function load_nested(self, sd, fields)
  sched(self, "load_state_dict")
  check.table(sd, "load_state_dict", "state_dict")
  local allowed = { _schedulers = true }
  for _, k in ipairs(fields) do allowed[k] = true end
  for k in pairs(sd) do
    if not allowed[k] then check.fail("load_state_dict", "unexpected key '%s' in a %s state", tostring(k), getmetatable(self).__name) end
  end
  if type(sd._schedulers) ~= "table" or #sd._schedulers ~= #self._schedulers then
    check.fail("load_state_dict", "expected the states of %d schedulers", #self._schedulers)
  end
  for _, k in ipairs(fields) do if sd[k] ~= nil then self[k] = copy_plain(sd[k]) end end
  for i, s in ipairs(self._schedulers) do s:load_state_dict(sd._schedulers[i]) end
end

local function nested_class(name)
  local C = setmetatable({}, { __index = Scheduler, __call = function(cls, ...) return cls.new(cls, ...) end })
  C.__index = C
  C.__name = name
  C.defaults = {}
  optim.lr_scheduler[name] = C
  return C
end

-- the number of milestones <= e (Python's bisect_right)
local function bisect_right(list, e)
  local n = 0
  for _, m in ipairs(list) do if m <= e then n = n + 1 end end
  return n
end

--- SequentialLR(opt, schedulers, milestones): schedulers[i] from milestones[i - 1]
--- on, restarted (its closed form at 0) at its milestone.
local Sequential = nested_class("SequentialLR")
local SEQUENTIAL_FIELDS = { "last_epoch", "_milestones", "_last_lr" }
function Sequential.new(cls, opt, ...)
  if type(opt) ~= "table" or type(opt.param_groups) ~= "table" then check.expected(cls.__name, "optimizer", "an optimizer", opt) end
  local a = check.positional(cls.__name, { "schedulers", "milestones" }, { schedulers = "table", milestones = "table" }, ...)
  local list = sub_schedulers(cls.__name, a.schedulers, opt)
  local milestones = a.milestones or {}
  if #milestones ~= #list - 1 then
    check.fail(cls.__name, "Sequential Schedulers expects number of schedulers provided to be one more than the number of milestone points, but got number of schedulers %d and the number of milestones to be equal to %d",
      #list, #milestones)
  end
  for i = 1, #milestones do check.int(milestones[i], cls.__name, "milestones", 0) end
  local self = setmetatable({ optimizer = opt, _schedulers = list, _milestones = { unpack(milestones) }, last_epoch = 0 }, cls)
  for _, g in ipairs(opt.param_groups) do g.lr = g.initial_lr end
  -- each scheduler's construction took a step: undo it, then start the first
  local function undo(s)
    if s._schedulers then for _, c in ipairs(s._schedulers) do undo(c) end
    elseif s.last_epoch then s.last_epoch = s.last_epoch - 1 end
  end
  undo(self)
  local first = list[bisect_right(self._milestones, 0) + 1]
  initial_step(first)
  self._last_lr = first:get_last_lr()
  return self
end

function Sequential:step()
  sched(self, "step")
  self.last_epoch = self.last_epoch + 1
  local idx = bisect_right(self._milestones, self.last_epoch)
  local s = self._schedulers[idx + 1]
  if idx > 0 and self._milestones[idx] == self.last_epoch then
    if not formulas[getmetatable(s)] then
      check.fail(self.__name, "a %s cannot restart at a milestone (as in PyTorch)", getmetatable(s).__name)
    end
    update_lr(s, 0)
  else
    s:step()
  end
  self._last_lr = s:get_last_lr()
end

function Sequential:state_dict() return nested_state(sched(self, "state_dict"), SEQUENTIAL_FIELDS) end
function Sequential:load_state_dict(sd) load_nested(self, sd, SEQUENTIAL_FIELDS) end

--- ChainedScheduler(schedulers[, optimizer]): every scheduler steps, one after
--- the other, each from the lr the previous one left.
local Chained = nested_class("ChainedScheduler")
function Chained.new(cls, ...)
  local a = check.positional(cls.__name, { "schedulers", "optimizer" }, { schedulers = "table", optimizer = "table" }, ...)
  local first = type(a.schedulers) == "table" and a.schedulers[1]
  local opt = a.optimizer or (type(first) == "table" and first.optimizer)
  local list = sub_schedulers(cls.__name, a.schedulers, opt)
  local self = setmetatable({ optimizer = opt, _schedulers = list }, cls)
  self._last_lr = {}
  for i, g in ipairs(opt.param_groups) do self._last_lr[i] = g.lr end
  return self
end

function Chained:step()
  sched(self, "step")
  for _, s in ipairs(self._schedulers) do s:step() end
  self._last_lr = {}
  for i, g in ipairs(self.optimizer.param_groups) do self._last_lr[i] = g.lr end
end

function Chained:state_dict() return nested_state(sched(self, "state_dict"), { "_last_lr" }) end
function Chained:load_state_dict(sd) load_nested(self, sd, { "_last_lr" }) end

--- ReduceLROnPlateau(opt[, mode = "min"[, factor = 0.1[, patience = 10[, threshold = 1e-4[,
--- threshold_mode = "rel"[, cooldown = 0[, min_lr = 0[, eps = 1e-8]]]]]]]]): sched:step(metric)
--- multiplies the lr by factor once the metric has not improved for patience steps.
local Plateau = scheduler("ReduceLROnPlateau", {
  defaults = { mode = "min", factor = 0.1, patience = 10, threshold = 1e-4, threshold_mode = "rel", cooldown = 0,
    min_lr = 0, eps = 1e-8 },
  kinds = { min_lr = "number|table" },
  positional = { "mode", "factor", "patience", "threshold", "threshold_mode", "cooldown", "min_lr", "eps" },
  state = { best = "number", num_bad_epochs = "number", cooldown_counter = "number" },
})
function Plateau.new(cls, opt, ...)
  if type(opt) ~= "table" or type(opt.param_groups) ~= "table" then check.expected(cls.__name, "optimizer", "an optimizer", opt) end
  local opts = check.positional(cls.__name, formulas[cls].positional, kinds_of(cls), ...)
  local self = setmetatable({ optimizer = opt, last_epoch = 0, base_lrs = {}, _step_count = 0 }, cls)
  for k, v in pairs(cls.defaults) do self[k] = v end
  for k, v in pairs(opts) do self[k] = v end
  check.one_of(self.mode, cls.__name, "mode", { "min", "max" })
  check.one_of(self.threshold_mode, cls.__name, "threshold_mode", { "rel", "abs" })
  if self.factor >= 1 then check.fail(cls.__name, "Factor should be < 1.0.") end
  if type(self.min_lr) == "table" and #self.min_lr ~= #opt.param_groups then
    check.fail(cls.__name, "expected %d min_lrs, got %d", #opt.param_groups, #self.min_lr)
  end
  self._last_lr = {}
  for i, g in ipairs(opt.param_groups) do self.base_lrs[i], self._last_lr[i] = g.lr, g.lr end
  self.best = self.mode == "min" and math.huge or -math.huge
  self.num_bad_epochs, self.cooldown_counter = 0, 0
  return self
end
-- PyTorch's fields read from the state: min_lrs (one floor per group) and in_cooldown (a property)
Plateau.__index = function(self, k)
  if k == "in_cooldown" then return rawget(self, "cooldown_counter") > 0 end
  if k == "min_lrs" then
    local out = {}
    for i = 1, #self.optimizer.param_groups do
      local min_lr = rawget(self, "min_lr")
      out[i] = type(min_lr) == "table" and min_lr[i] or min_lr
    end
    return out
  end
  return Plateau[k]
end
local function better(self, a)
  local best, t = self.best, self.threshold
  if self.mode == "min" then
    return self.threshold_mode == "rel" and a < best * (1 - t) or self.threshold_mode == "abs" and a < best - t
  end
  return self.threshold_mode == "rel" and a > best * (1 + t) or self.threshold_mode == "abs" and a > best + t
end
function Plateau:step(metric, epoch)
  sched(self, "step")
  if wick.is_tensor(metric) then metric = metric:item() end
  check.number(metric, "ReduceLROnPlateau:step", "metrics")
  if epoch ~= nil then -- (step(metric, epoch): PyTorch's warning, and the epoch as given)
    check.number(epoch, "ReduceLROnPlateau:step", "epoch")
    epoch_deprecated()
    self.last_epoch = epoch
  else
    self.last_epoch = self.last_epoch + 1
  end
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
  self._last_lr = {}
  for i, g in ipairs(self.optimizer.param_groups) do self._last_lr[i] = g.lr end
end

for name, C in pairs(optim.lr_scheduler) do optim[name] = C end

--- swa_utils.SWALR(opt, swa_lr[, anneal_epochs = 10[, anneal_strategy = "cos"]]): each
--- group's lr annealed ("cos" or "linear") to swa_lr (a number, or one per group;
--- kept as group.swa_lr) over anneal_epochs steps, then held there (PyTorch's).
local function swa_anneal(strategy, t)
  if strategy == "linear" then return t end
  return (1 - math.cos(math.pi * t)) / 2
end
local SWALR = scheduler("SWALR", {
  defaults = { anneal_epochs = 10, anneal_strategy = "cos" },
  kinds = { swa_lr = "number|table" },
  positional = { "swa_lr", "anneal_epochs", "anneal_strategy" },
  validate = function(self, opt)
    if self.swa_lr == nil then check.fail("SWALR", "swa_lr is required (a number, or one per parameter group)") end
    local lrs = per_group("SWALR", "swa_lr", self.swa_lr, opt)
    for i, g in ipairs(opt.param_groups) do g.swa_lr = lrs[i] end
    check.one_of(self.anneal_strategy, "SWALR", "anneal_strategy", { "cos", "linear" })
    check.int(self.anneal_epochs, "SWALR", "anneal_epochs", 0)
  end,
  lr = function(self, group)
    local step, T = self._step_count - 1, self.anneal_epochs
    if T == 0 then step = math.max(1, step) end
    local function alpha(s) return swa_anneal(self.anneal_strategy, math.max(0, math.min(1, s / math.max(1, T)))) end
    local prev_alpha, a, swa_lr = alpha(step - 1), alpha(step), group.swa_lr
    local prev_lr = prev_alpha == 1 and swa_lr or (group.lr - prev_alpha * swa_lr) / (1 - prev_alpha)
    return swa_lr * a + prev_lr * (1 - a)
  end,
})
optim.lr_scheduler.SWALR = nil -- (PyTorch's is torch.optim.swa_utils.SWALR only)
optim.swa_utils = require("wick.swa_utils")
optim.swa_utils.SWALR = SWALR

-- a name wick.optim does not have is an error at the caller's line
check.strict(optim.lr_scheduler, "wick.optim.lr_scheduler")
check.strict(optim.swa_utils, "wick.optim.swa_utils")
check.strict(optim, "wick.optim")

return optim
