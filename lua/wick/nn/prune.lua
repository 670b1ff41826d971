-- wick.nn.utils.prune: PyTorch's torch.nn.utils.prune. Pruning `name` keeps
-- the parameter as `name_orig`, a 0/1 buffer `name_mask`, and recomputes
-- `name` = name_orig * name_mask before each forward (a pre-hook), with
-- PyTorch's state-dict names. Pruning again prunes among the entries (or,
-- structured, the channels) still kept, as PyTorch's PruningContainer.
-- `amount`: a fraction in [0, 1] (rounded as PyTorch: round(amount * n)) or
-- a count. Dimensions are 1-based (PyTorch's dim=-1 is -1 here too).
local wick = require("wick")
local check = require("wick.argcheck")
local Module = require("wick.nn.module")
local common = require("wick.nn.common")
local layers = require("wick.nn.layers")

local P = {}

-- ---- the methods: compute_mask(t, default_mask) -> a new mask ----

-- Python's round (half to even), as PyTorch's _compute_nparams_toprune
local function py_round(x)
  local f = math.floor(x)
  local r = x - f
  if r > 0.5 or (r == 0.5 and f % 2 == 1) then return f + 1 end
  return f
end

local function count_of(fn, amount, n)
  if type(amount) ~= "number" or amount ~= amount then check.fail(fn, "amount must be a number, got %s", check.describe(amount)) end
  if amount % 1 == 0 and amount >= 1 then -- a count (PyTorch: an int)
    if amount > n then
      check.fail(fn, "amount=%d should be smaller than the number of parameters to prune=%d", amount, n)
    end
    return amount
  end
  if amount < 0 or amount > 1 then check.fail(fn, "amount=%s should either be a float in the range [0, 1] or a non-negative integer", tostring(amount)) end
  return py_round(amount * n)
end

-- the flat positions of the k smallest (or largest) scores
local function positions(scores, k, largest)
  local _, idx = scores:reshape(-1):sort({ descending = largest == true, stable = true })
  return idx:narrow(1, 1, k)
end

local Method = {}
Method.__index = Method
local function method(name, kind, compute)
  local C = setmetatable({ __name = name, PRUNING_TYPE = kind }, { __index = Method })
  C.__index = C
  C.compute_mask = compute
  setmetatable(C, { __index = Method, __call = function(cls, o) return setmetatable(o or {}, cls) end })
  P[name] = C
  return C
end

method("Identity", "unstructured", function(_, _, mask) return mask:clone() end)

method("RandomUnstructured", "unstructured", function(self, t, mask)
  local k = count_of("random_unstructured", self.amount, t:numel())
  local m = mask:clone()
  if k > 0 then m:reshape(-1):index_fill_(1, positions(wick.rand_like(t:to("float32")), k, true), 0) end
  return m
end)

method("L1Unstructured", "unstructured", function(self, t, mask)
  local k = count_of("l1_unstructured", self.amount, t:numel())
  local m = mask:clone()
  if k > 0 then m:reshape(-1):index_fill_(1, positions(t:abs(), k, false), 0) end
  return m
end)

-- the 1-based dimension d of t (negative from the end)
local function dim_of(fn, t, d)
  local n = t:dim()
  local r = d < 0 and n + d + 1 or d
  if r < 1 or r > n then check.fail(fn, "dim %d is out of range for a %d-d tensor (dims are 1-based)", d, n) end
  return r
end

-- a mask keeping the channels (along dim) in `keep`, times the current mask
local function channel_mask(t, mask, dim, keep)
  local shape = {}
  for i = 1, t:dim() do shape[i] = 1 end
  shape[dim] = t:size(dim)
  local ch = wick.zeros(t:size(dim), { dtype = mask.dtype, device = mask.device })
  if keep:numel() > 0 then ch:index_fill_(1, keep, 1) end
  return mask * ch:reshape(shape)
end

method("LnStructured", "structured", function(self, t, mask)
  local fn = "ln_structured"
  local dim = dim_of(fn, t, self.dim or -1)
  local k = count_of(fn, self.amount, t:size(dim))
  local dims = {}
  for i = 1, t:dim() do if i ~= dim then dims[#dims + 1] = i end end
  local n = self.n
  local norms = #dims == 0 and t:abs() or t:norm(n, dims)
  return channel_mask(t, mask, dim, positions(norms, t:size(dim) - k, true))
end)

method("RandomStructured", "structured", function(self, t, mask)
  local fn = "random_structured"
  local dim = dim_of(fn, t, self.dim or -1)
  local k = count_of(fn, self.amount, t:size(dim))
  return channel_mask(t, mask, dim, positions(wick._rand(t:size(dim)), t:size(dim) - k, true))
end)

method("CustomFromMask", "global", function(self, _, mask) return mask * self.mask:to(mask.dtype) end)

-- the new mask of `method` where `mask` still keeps entries (or channels)
local function combine(m, t, mask)
  if m.PRUNING_TYPE == "structured" then
    -- among the channels some entry of which is kept
    local dim = dim_of("prune", t, m.dim or -1)
    local others = {}
    for i = 1, t:dim() do if i ~= dim then others[#others + 1] = i end end
    local alive = #others == 0 and mask:ne(0) or mask:ne(0):sum(others):ne(0)
    local kept = alive:nonzero():reshape(-1)
    if kept:numel() == 0 then return mask:clone() end
    local sub = m:compute_mask(t:index_select(dim, kept), mask:index_select(dim, kept))
    return (mask * 0):index_copy(dim, kept, sub)
  end
  if m.PRUNING_TYPE == "global" then return m:compute_mask(t, mask) end
  -- unstructured: among the entries still kept
  local keep = mask:reshape(-1):ne(0)
  local where = keep:nonzero():reshape(-1)
  local out = mask:clone()
  if where:numel() == 0 then return out end
  local sub = m:compute_mask(t:reshape(-1):index_select(1, where), wick.ones(where:numel(), { dtype = mask.dtype,
    device = mask.device }))
  out:reshape(-1):index_copy_(1, where, sub)
  return out
end

-- ---- applying a method to module.name ----

local HOOKS = common.hook_registry()

local function apply(fn, module, name, m, importance_scores)
  check.module(module, fn, "module")
  check.string(name, fn, "name")
  local hooks = HOOKS[module] or {}
  HOOKS[module] = hooks
  local orig, mask
  if hooks[name] then
    orig, mask = module[name .. "_orig"], module[name .. "_mask"]
  else
    orig = rawget(module, name)
    if not wick.is_tensor(orig) then
      check.fail(fn, "Parameter '%s' of module %s has to be pruned but does not exist", name, getmetatable(module).__name)
    end
    mask = wick.ones_like(orig)
  end
  local scores = importance_scores or (hooks[name] and orig * mask or orig)
  if wick.is_tensor(importance_scores) and tostring(importance_scores:size()) ~= tostring(orig:size()) then
    check.fail(fn, "importance_scores should have the same shape as parameter %s of %s", name, getmetatable(module).__name)
  end
  local new_mask = wick.no_grad(function() return combine(m, scores:detach(), mask) end)
  if not hooks[name] then
    Module._forget(module, name)
    module[name .. "_orig"] = orig
    module:register_buffer(name .. "_mask", new_mask)
    local function compute(mod) return mod[name .. "_orig"] * mod[name .. "_mask"] end
    hooks[name] = { compute = compute, entry = common.pre_hook(module, function(mod) rawset(mod, name, compute(mod)) end) }
  else
    module[name .. "_mask"] = new_mask
  end
  rawset(module, name, hooks[name].compute(module))
  return module
end

--- prune.identity(module, name)
function P.identity(module, name) return apply("identity", module, name, P.Identity()) end
-- PyTorch's arguments, by position or by name (prune.l1_unstructured(m,
-- "weight", amount=0.3) is {amount = 0.3})
-- (name too: prune.random_unstructured(m, name="weight", amount=0.3) is {name = "weight", amount = 0.3})
local AMOUNT = { name = "string", amount = "number" }
local SCORED = { name = "string", amount = "number", importance_scores = "tensor" }
local LN = { name = "string", amount = "number", n = "number", dim = "integer", importance_scores = "tensor" }
local STRUCTURED = { name = "string", amount = "number", dim = "integer" }
--- prune.random_unstructured(module, name, amount)
function P.random_unstructured(module, ...)
  local o = check.positional("random_unstructured", { "name", "amount" }, AMOUNT, ...)
  count_of("random_unstructured", o.amount, 1e300)
  return apply("random_unstructured", module, o.name, P.RandomUnstructured({ amount = o.amount }))
end
--- prune.l1_unstructured(module, name, amount[, importance_scores])
function P.l1_unstructured(module, ...)
  local o = check.positional("l1_unstructured", { "name", "amount", "importance_scores" }, SCORED, ...)
  count_of("l1_unstructured", o.amount, 1e300)
  return apply("l1_unstructured", module, o.name, P.L1Unstructured({ amount = o.amount }), o.importance_scores)
end
--- prune.ln_structured(module, name, amount, n, dim[, importance_scores])
function P.ln_structured(module, ...)
  local o = check.positional("ln_structured", { "name", "amount", "n", "dim", "importance_scores" }, LN, ...)
  check.number(o.n, "ln_structured", "n")
  check.int(o.dim, "ln_structured", "dim")
  count_of("ln_structured", o.amount, 1e300)
  return apply("ln_structured", module, o.name, P.LnStructured({ amount = o.amount, n = o.n, dim = o.dim }),
    o.importance_scores)
end
--- prune.random_structured(module, name, amount, dim)
function P.random_structured(module, ...)
  local o = check.positional("random_structured", { "name", "amount", "dim" }, STRUCTURED, ...)
  check.int(o.dim, "random_structured", "dim")
  count_of("random_structured", o.amount, 1e300)
  return apply("random_structured", module, o.name, P.RandomStructured({ amount = o.amount, dim = o.dim }))
end
--- prune.BasePruningMethod: a custom method is a subclass with its
--- compute_mask(t, default_mask) and PRUNING_TYPE ("unstructured", "structured"
--- with self.dim, or "global"):
---   local FooBar = prune.BasePruningMethod:extend("FooBar")
---   function FooBar:compute_mask(t, default_mask) ... end
---   FooBar.apply(module, name[, {field = value, ...}])  -- or FooBar:apply(...)
--- The options table becomes the instance's fields (PyTorch's constructor
--- arguments); an `init(self, ...)` of the subclass takes positional ones.
P.BasePruningMethod = Method
Method.__name = "BasePruningMethod"
Method.PRUNING_TYPE = "unstructured"
function Method.extend(base, name)
  local C = setmetatable({ __name = name or "PruningMethod" }, {
    __index = base,
    __call = function(cls, ...)
      local o = setmetatable({}, cls)
      if cls.init then cls.init(o, ...)
      elseif select("#", ...) > 0 then
        for k, v in pairs(check.table((...), name or "PruningMethod", "options")) do o[k] = v end
      end
      return o
    end })
  C.__index = C
  C.apply = function(first, ...)
    if first == C then return C.apply(...) end
    local fn = (C.__name or "prune") .. ".apply"
    local module, pname = first, ...
    local m = C(select(2, ...))
    if type(m.compute_mask) ~= "function" or m.compute_mask == Method.compute_mask then
      check.fail(fn, "the method defines no compute_mask(t, default_mask)")
    end
    return apply(fn, module, pname, m, m.importance_scores)
  end
  return C
end
function Method.compute_mask() check.fail("BasePruningMethod", "compute_mask is abstract: define it in the subclass") end

--- prune.custom_from_mask(module, name, mask)
function P.custom_from_mask(module, name, mask)
  check.tensor(mask, "custom_from_mask", "mask")
  return apply("custom_from_mask", module, name, P.CustomFromMask({ mask = mask }))
end

--- prune.global_unstructured(parameters, {pruning_method =, importance_scores =, amount = ...}):
--- parameters is a list of {module, name}; the method (an unstructured one) runs once over all of
--- them together
function P.global_unstructured(parameters, opts)
  local fn = "global_unstructured"
  check.table(parameters, fn, "parameters")
  check.table(opts, fn, "opts")
  local m = opts.pruning_method
  if type(m) ~= "table" or type(m.compute_mask) ~= "function" then
    check.fail(fn, "pruning_method must be one of prune's methods (prune.L1Unstructured, ...)")
  end
  if m.PRUNING_TYPE ~= "unstructured" then
    check.fail(fn, 'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method %s of type %s',
      tostring(m.__name), tostring(m.PRUNING_TYPE))
  end
  local method_opts = {}
  for k, v in pairs(opts) do
    if k ~= "pruning_method" and k ~= "importance_scores" then method_opts[k] = v end
  end
  local scores, masks = {}, {}
  for i, pair in ipairs(parameters) do
    if type(pair) ~= "table" or not check.is_module(pair[1]) or type(pair[2]) ~= "string" then
      check.fail(fn, "parameters[%d] must be a {module, name} pair", i)
    end
    local module, name = pair[1], pair[2]
    local t = module[name]
    if not wick.is_tensor(t) then check.fail(fn, "parameters[%d]: module has no tensor '%s'", i, name) end
    local given = opts.importance_scores and opts.importance_scores[i]
    scores[i] = (given or t):detach():reshape(-1)
    local mask = rawget(module, name .. "_mask")
    masks[i] = (mask or wick.ones_like(t)):reshape(-1)
  end
  local all = wick.cat(scores)
  local final = wick.no_grad(function() return combine(m(method_opts), all, wick.cat(masks)) end)
  local at = 1
  for i, pair in ipairs(parameters) do
    local n = scores[i]:numel()
    local t = pair[1][pair[2]]
    P.custom_from_mask(pair[1], pair[2], final:narrow(1, at, n):reshape(t:size()))
    at = at + n
  end
end

--- prune.remove(module, name): makes the pruning permanent (name a parameter again)
function P.remove(module, name)
  check.module(module, "remove", "module")
  check.string(name, "remove", "name")
  local h = HOOKS[module] and HOOKS[module][name]
  if not h then
    check.fail("remove", "Parameter '%s' of module %s has to be pruned before pruning can be removed", name,
      getmetatable(module).__name)
  end
  local w = wick.no_grad(function() return h.compute(module):clone() end)
  common.remove_pre_hook(module, h.entry)
  HOOKS[module][name] = nil
  Module._forget(module, name .. "_orig")
  Module._forget(module, name .. "_mask")
  rawset(module, name, nil)
  module[name] = layers.Parameter(w)
  return module
end

--- prune.is_pruned(module): whether it or a submodule has a pruned tensor
function P.is_pruned(module)
  check.module(module, "is_pruned", "module")
  for _, m in ipairs(module:modules()) do
    if HOOKS[m] and next(HOOKS[m]) then return true end
  end
  return false
end

return P
