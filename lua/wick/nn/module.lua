-- nn.Module: the base of every layer. A module is a Lua table whose fields are
-- tracked in the order of first assignment (never pairs order), so parameters(),
-- to(), state_dict() and optimizers see the same, repeatable order.
local wick = require("wick")
local check = require("wick.argcheck")
local core = require("wick.core")
local required = require("wick.nn.common").required
local ordered = require("wick.ordered")

local unpack = table.unpack or unpack -- luacheck: ignore
local Module = {}
Module.__name = "Module"
Module.__name__ = "Module" -- (Python's m.__class__.__name__: each class's own, set by extend)
-- A module's fields are its own; the rest comes from its class, and
-- _modules, _parameters and _buffers are PyTorch's dicts (see Module._private_dict).
function Module.__index(self, key)
  local v = getmetatable(self)[key]
  if v == nil then return Module._private_dict(self, key) end
  return v
end

local function is_tensor(v) return wick.is_tensor(v) end
local is_module = check.is_module
local not_a_module, none_module

-- The fields wick keeps on a module for itself (set with rawset, never state).
local INTERNAL = { _fields = true, _buffer_kinds = true, _param_names = true, _modules = true, _parameters = true,
  _buffers = true, _opts = true, _mode = true, _names = true,
  _forward_hooks = true, _forward_pre_hooks = true, _backward_hooks = true, _backward_pre_hooks = true,
  _forward_hook_list = true, _forward_pre_hook_list = true, _backward_hook_list = true, _backward_pre_hook_list = true,
  _state_dict_hooks = true, _state_dict_pre_hooks = true, _load_pre_hooks = true, _load_post_hooks = true }

-- the modules whose init is running (Module.new)
local building = setmetatable({}, { __mode = "k" })

-- What each field held when the module last saw it (track, or a walk): Lua calls a module's
-- __newindex only for a field it lacks, so a field's reassignment (m.fc = nn.Parameter(...) over a
-- child) is found on the next walk (members), which applies PyTorch's Module.__setattr__ rules to it.
-- (seen_values is weak: an old value no one else holds goes; seen_kinds keeps what it was.)
local seen_values = setmetatable({}, { __mode = "k" }) -- module -> { name = value } (weak values)
local seen_kinds = setmetatable({}, { __mode = "k" })  -- module -> { name = "module" | "tensor" | "other" | "none" }
local none_modules = setmetatable({}, { __mode = "k" }) -- module -> { name = true }: a child set to nil (None)
local function kind_of(v)
  if v == nil or v == false then return "none" end
  if check.is_module(v) then return "module" end
  if wick.is_tensor(v) then return "tensor" end
  return "other"
end
local function remember(self, key, value)
  local values, kinds = seen_values[self], seen_kinds[self]
  if not values then
    values, kinds = setmetatable({}, { __mode = "v" }), {}
    seen_values[self], seen_kinds[self] = values, kinds
  end
  values[key], kinds[key] = value, kind_of(value)
end

-- a module's own table of names (_param_names, _buffer_kinds), made on first use
local function registry(self, name)
  local t = rawget(self, name)
  if not t then
    t = {}
    rawset(self, name, t)
  end
  return t
end

-- Records each new field name once, in assignment order ("_private" names too:
-- a module under one is found like any other, as in PyTorch).
local function track(self, key, value)
  if key == nil or key ~= key then
    wick.error(("%s: cannot assign to a field with a %s key"):format(check.describe(self), key == nil and "nil" or "NaN"))
  end
  if key == "_modules" or key == "_parameters" or key == "_buffers" then
    check.fail(check.describe(self), "'%s' is PyTorch's dict of the module's own members, a view here: assign through it (m.%s.name = value) or set the field", key, key)
  end
  local fields = rawget(self, "_fields")
  if value ~= nil and not fields[key] and type(key) == "string" and not INTERNAL[key] then
    fields[key] = true
    fields[#fields + 1] = key
  end
  -- a tensor field is a parameter when it is one as it is assigned
  -- (nn.Parameter, or a leaf that requires grad), as PyTorch decides by type;
  -- it stays one when frozen later. Another tensor assigned while the module's
  -- init runs is a buffer (an "implicit" one: API.md's rule that what init
  -- assigns is state); one assigned later is a plain attribute.
  if type(key) == "string" then
    local params, buffers = rawget(self, "_param_names"), rawget(self, "_buffer_kinds")
    local made
    if is_tensor(value) then made = wick._buffers_made[value] end
    if made ~= nil then -- an nn.Buffer: a buffer, persistent as it says
      if params then params[key] = nil end
      registry(self, "_buffer_kinds")[key] = made or "nonpersistent"
    elseif is_tensor(value) and value:_is_parameter() then
      registry(self, "_param_names")[key] = true
      if buffers and buffers[key] == "implicit" then buffers[key] = nil end
    else
      if params then params[key] = nil end
      if value ~= nil and not is_tensor(value) and building[self] and not is_module(value) then
        -- a number or a flag init may replace with a parameter (members: the raw write is unseen)
        registry(self, "_param_names")[key] = "pending"
      end
      if is_tensor(value) and building[self] and not (buffers and buffers[key]) then
        registry(self, "_buffer_kinds")[key] = "implicit"
      end
    end
  end
  rawset(self, key, value)
  if type(key) == "string" then remember(self, key, value) end
end

local param_names = setmetatable({}, { __mode = "k" }) -- method -> { name = position }, or false
-- the function a decorator wraps (wick.no_grad()(f), wick.autocast(opts)(f)), innermost
local function undecorated(f)
  while wick._decorated[f] do f = wick._decorated[f] end
  return f
end
-- a method's parameter names after self, with their positions among the arguments
local function positions_of(f)
  f = undecorated(f)
  local names = param_names[f]
  if names == nil then
    names = false
    local info = type(f) == "function" and debug.getinfo(f, "u")
    if info and info.nparams and info.nparams > 1 then
      names = {}
      for i = 2, info.nparams do names[debug.getlocal(f, i)] = i - 1 end
    end
    param_names[f] = names
  end
  return names
end
-- Levenshtein's distance between two short strings, or more than 2 (enough to tell a typo)
local function distance(a, b)
  if math.abs(#a - #b) > 2 then return 3 end
  local prev = {}
  for j = 0, #b do prev[j] = j end
  for i = 1, #a do
    local cur = { [0] = i }
    for j = 1, #b do
      cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a:byte(i) == b:byte(j) and 0 or 1))
    end
    prev = cur
  end
  return prev[#b]
end
-- a table naming none of a method's parameters whose every key is a misspelling of one at its
-- place n or later (attention_mak for attention_mask): (the key, the name), else nil; a config
-- object has keys of its own
local function misspelt(t, names, n)
  local key, name = nil, nil
  for k in pairs(t) do
    if type(k) ~= "string" or #k < 4 then return nil end
    local near = nil
    for nm, at in pairs(names) do
      if at >= n and distance(k, nm) <= 2 then near = nm end
    end
    if not near then return nil end
    key, name = key or k, name or near
  end
  return key, name
end
local function names_in_order(names)
  local list = {}
  for name, at in pairs(names) do list[at] = name end
  return list
end
-- PyTorch's TypeError for a keyword that names no parameter, with the parameters, and the near
-- one when there is one (F5-TTS's transformer(x = x, ..., drop_txt = d))
local function unexpected_keyword(fn, key, names, hint)
  local near
  if type(key) == "string" and #key >= 4 then
    for nm in pairs(names) do if distance(key, nm) <= 2 then near = nm end end
  end
  check.fail(fn, "got an unexpected keyword argument '%s' (%sits parameters: %s)%s", key,
    near and ("did you mean '" .. near .. "'? ") or "", table.concat(names_in_order(names), ", "), hint or "")
end
-- where a vararg method's `...` starts among its arguments (Python's **kwargs), or false
local kwargs_at = setmetatable({}, { __mode = "k" })
-- an init's options parameter (a class of one's own declaring its names: the one after them)
local options_at = setmetatable({}, { __mode = "k" })
-- the inits whose first declared name is optional ("margin?"): a first table naming none of the
-- declared names is then its keywords, not that argument's value (pytorch-metric-learning's
-- TripletMarginLoss(distance=CosineSimilarity()) into init(margin, swap, kwargs))
local first_optional = setmetatable({}, { __mode = "k" })
local function varargs_at(f)
  f = undecorated(f)
  local at = kwargs_at[f]
  if at == nil then
    local info = debug.getinfo(f, "u")
    at = info.isvararg and info.nparams or false -- (nparams counts self: the first after the names)
    kwargs_at[f] = at
  end
  return at
end
-- PyTorch's keyword arguments: the last of n arguments, a plain table (no array part) whose every key
-- names a parameter of f (after self) at the table's position or later, bound to those parameters:
-- (the arguments, their count), or nil when the table is not that (an options table of f's own).
-- A vararg f takes other names too when one names a parameter: they come as one table where its
-- `...` starts, Python's **kwargs (HF's attention called with position_ids=, use_cache=, ...), or
-- in its options parameter (ArgsNet(2, {n_out = 5, bias = false})); another f refuses them then,
-- as PyTorch's TypeError (a misspelt keyword beside right ones). A method's `...` also takes a
-- table naming none of its parameters, `{}` too, when it comes before or at the `...` (an init's: not
-- as its first argument, HF's config), as a new table each call; without `...`,
-- a `{}` before its last parameter is an empty keyword call.
-- `owner` and `method` name f in that error: a module or a class, "forward" or "init".
-- the tables a binding gave as values (weak keys) -> the parameter names of the method they went to:
-- binding for that method again, as a module call's forward does, keeps them values (fairseq's
-- m(x, {incremental_state = {}}): the empty state is no empty keyword call); another method binds
-- them (SB3's features_extractor_class(space, **features_extractor_kwargs) of a table once a value)
local bound_values = setmetatable({}, { __mode = "k" })
-- "Class.method" for messages about a call of owner's method (owner a class or an instance)
local function qualified(owner, method)
  local class = rawget(owner, "__name") and owner or getmetatable(owner)
  return ((type(class) == "table" and rawget(class, "__name")) or "Module") .. "." .. method
end
local function plain_keys(t)
  if type(t) ~= "table" or getmetatable(t) ~= nil or #t > 0 then return false end
  for k in pairs(t) do if type(k) ~= "string" then return false end end
  return true
end
-- Python's f(x, mask=m, bias=b, **kwargs) as f(x, {mask = m, bias = b}, kwargs): a keywords table
-- (a key names a parameter at its place or later, the others go to f's `...`) followed by another
-- table of names, which f's `...` takes or whose keys name parameters too (HF's self.layer[1](h,
-- attention_mask=..., **kwargs)), is one keywords table; nil when the arguments are not of that form
local function merged_keywords(owner, method, f, names, n, ...)
  if n < 2 then return nil end
  local t, u = select(n, ...), select(n - 1, ...)
  if not plain_keys(t) or not plain_keys(u) then return nil end
  if next(u) == nil then -- keywords that were all None, then **kwargs: diffusers' attn1(h,
    -- encoder_hidden_states=None, attention_mask=None, **cross_attention_kwargs) as attn1(h, {}, kwargs)
    -- binds kwargs alone, when f's `...` comes after u's place and no key of kwargs names an earlier one
    local va = varargs_at(f)
    if not va or va <= n - 1 then return nil end
    for k in pairs(t) do
      local at = names[k]
      if at and at < n - 1 then return nil end
    end
    local args = { ... }
    local kwargs = {}
    for k, v in pairs(t) do kwargs[k] = v end
    args[n - 1], args[n] = kwargs, nil
    return args
  end
  local named = false -- (u's keys name parameters at its place or later; others go to f's `...`)
  for k in pairs(u) do
    local at = names[k]
    if at and at < n - 1 then return nil end
    if at then named = true elseif not varargs_at(f) then return nil end
  end
  if not named then return nil end
  if not varargs_at(f) then
    for k in pairs(t) do if not names[k] then return nil end end
  end
  local merged = {}
  for k, v in pairs(u) do merged[k] = v end
  for k, v in pairs(t) do
    if merged[k] ~= nil then check.fail(qualified(owner, method), "got multiple values for keyword argument '%s'", k) end
    merged[k] = v
  end
  local args = { ... }
  args[n - 1], args[n] = merged, nil
  return args
end
local function bind_keywords(owner, method, f, n, ...)
  -- (trailing nils are Lua's absent arguments: PatchTST's Backbone({c_in = 3, ...}, kwargs) with kwargs
  -- nil, Python's empty **kwargs, binds the table)
  while n > 1 and select(n, ...) == nil do n = n - 1 end
  local t = select(n, ...)
  if type(t) ~= "table" or getmetatable(t) ~= nil or #t > 0 then return nil end
  local names = positions_of(f)
  if not names or bound_values[t] == names then return nil end
  local merged = merged_keywords(owner, method, f, names, n, ...)
  if merged then return bind_keywords(owner, method, f, n - 1, unpack(merged, 1, n - 1)) end
  -- HF's Model(config): an init whose first parameter is `config` takes a lone table that does not
  -- name it as the config, also when its fields name later parameters (MusicGen's config.text_encoder
  -- and config.decoder beside init(config, text_encoder, audio_encoder, decoder))
  if method == "init" and n == 1 and t.config == nil and names.config == 1 then return nil end
  local top, others, earlier = n - 1, false, nil
  for k in pairs(t) do
    local at = type(k) == "string" and names[k]
    if at and at < n then earlier = earlier or k
    elseif at then top = math.max(top, at)
    elseif type(k) == "string" then others = others or k
    else return nil end
  end
  if earlier then -- a key for a parameter given before the table: PyTorch's TypeError when the table
    -- also names one at its place or later (voxceleb's ResNetSE(block, layers, filters, nOut, **kwargs)
    -- given the whole config, nOut in it), else a value (a config object whose keys happen to be names)
    if top < n then return nil end
    check.fail(qualified(owner, method),
      "got multiple values for argument '%s' (given at its place and in the keywords table)", earlier)
  end
  -- (an init's first argument stays a value: HF's config object, Model(config), unless that first
  -- argument is declared optional; or its options parameter after declared names: IPA's IPABlock(dim,
  -- {heads = 4}), Python's **kwargs)
  local kw_at = (method ~= "init" or n > 1 or first_optional[undecorated(f)]) and (varargs_at(f) or options_at[undecorated(f)])
  if top < n and not varargs_at(f) then -- PyTorch's TypeError for a misspelt keyword call (else a value)
    local key, name = misspelt(t, names, n)
    if key then
      check.fail(qualified(owner, method),
        "got an unexpected keyword argument '%s' (did you mean '%s'?)", key, name)
    end
  end
  if top < n then -- no key names a parameter: a value (HF's config object), but a method with
    -- `...` (Python's **kwargs) at this place or later takes it as its keywords: diffusers'
    -- attn(h, {temb = temb}), Hyena's ExponentialModulation(d_model, **kwargs), and `{}`, HF's
    -- keywords that were all None
    if (method ~= "init" or n > 1) and not kw_at then -- (an init's first argument stays a value: a config)
      local last = 0
      for _, at in pairs(names) do last = math.max(last, at) end
      -- keywords past the last parameter of a forward without `...`: PyTorch's TypeError, which
      -- speechbrain's try: layer(x, lengths=lengths) except TypeError: layer(x) relies on
      if others and n > last then
        unexpected_keyword(qualified(owner, method), others, names)
      end
      -- `{}` before the last parameter: HF's keywords that were all None (encoder_layer(h, None,
      -- layer_head_mask=None, output_attentions=None), HyenaDNA's GPT2Embeddings(d, v, n,
      -- **factory_kwargs) of {device = None, dtype = None}), dropped; on the last one it stays a
      -- value (whisper's kv_cache = {})
      if next(t) ~= nil or n >= last then return nil end
      local args = { ... }
      args[n] = nil
      return args, n - 1
    end
    if not kw_at or n > kw_at then return nil end
    -- (a new table, as Python's **kwargs: a kwargs.pop, or perceiver's kwargs.update(context = ...) of a
    -- table at the `...` already, leaves the caller's as it was; the new one is this method's
    -- value, so binding again, as a module call does before its forward, leaves it)
    local args, kwargs = { ... }, {}
    for i = n, kw_at - 1 do args[i] = nil end
    for k, v in pairs(t) do kwargs[k] = v end
    args[kw_at] = kwargs
    bound_values[kwargs] = names
    return args, kw_at
  end
  local extra = options_at[undecorated(f)] or varargs_at(f)
  -- an init's first argument with keys of its own, none for that first parameter, is a value: HF's
  -- config object whose position_embedding_type field names a later one, ElectraAttention(config)
  if others and not extra and method == "init" and n == 1 and t[names_in_order(names)[1]] == nil then return nil end
  if others and not extra then
    -- (a first argument: maybe a dict meant as one value, EfficientDet's Compose(...)({img = ..., annot = ...}))
    local hint = n == 1 and "; a table as the first argument whose keys name a parameter is a keyword call: a "
      .. "dict meant as one value goes as wick.OrderedDict(t), or any table with a metatable" or ""
    unexpected_keyword(qualified(owner, method), others, names, hint)
  end
  local args, kwargs = { ... }, nil
  args[n] = nil
  for k, v in pairs(t) do
    if names[k] then
      args[names[k]] = v
      if type(v) == "table" and getmetatable(v) == nil then bound_values[v] = names end
    else kwargs = kwargs or {}; kwargs[k] = v end
  end
  if others then top = math.max(top, extra); args[extra] = kwargs end
  return args, top
end

local WICK_DIR = debug.getinfo(1, "S").source:match("^@(.*/)nn/module%.lua$") -- (lua/wick/)
local function of_wick(f)
  local src = debug.getinfo(f, "S").source
  return WICK_DIR ~= nil and src:sub(2, #WICK_DIR + 1) == WICK_DIR
end
-- f (a method `name` of a class of one's own) taking PyTorch's keywords also when called as a
-- method: pytorch-flows' self.forward(noise, mode='inverse'), Informer's
-- self._prob_QK(queries, keys, sample_k=U_part, n_top=u)
local wrapped = setmetatable({}, { __mode = "k" }) -- keyword_method's and static_method's wrappers -> their functions
local function keyword_method(f, name)
  local function method(self, ...) -- (named self: Module:apply tells a method by its first parameter)
    local n = select("#", ...)
    if n > 0 then
      local bound, top = bind_keywords(self, name, f, n, ...)
      if bound then return f(self, unpack(bound, 1, top)) end
    end
    return f(self, ...)
  end
  param_names[method] = positions_of(f) -- (so a call binds before its hooks run, with f's names)
  kwargs_at[method] = varargs_at(f)
  wrapped[method] = f
  return method
end

-- f (a static function of a class of one's own, Python's @staticmethod: its first parameter is not
-- self) taking PyTorch's keywords after its first argument when every key names a parameter at the
-- table's place or later (Deformable DETR's self.get_reference_points(shapes, ratios,
-- device=src.device), SB3's init_weights(module, gain=0.01)); any other table is a value
local function static_method(f)
  local names = positions_of(f) -- (the parameters after the first, at their places after it)
  if not names then return f end
  local first_name = debug.getlocal(f, 1)
  -- every argument by name, the first's too (Florence-2's self.get_sinusoid_embeddings(max_positions=n,
  -- embed_dim=d)): a lone table naming the first parameter and only parameters
  local function all_by_name(t)
    if type(t) ~= "table" or getmetatable(t) ~= nil or #t > 0 or t[first_name] == nil then return nil end
    local args, top = {}, 0
    for k, v in pairs(t) do
      if k ~= first_name then
        local at = type(k) == "string" and names[k]
        if not at then return nil end
        args[at], top = v, math.max(top, at)
      end
    end
    return t[first_name], args, top
  end
  local function static(first, ...) -- (not named self: Module:apply calls it as a function)
    local n = select("#", ...)
    if n == 0 then
      local a, args, top = all_by_name(first)
      if args then return f(a, unpack(args, 1, top)) end
    end
    while n > 1 and select(n, ...) == nil do n = n - 1 end
    local t = n > 0 and select(n, ...)
    if type(t) ~= "table" or getmetatable(t) ~= nil or #t > 0 or next(t) == nil then return f(first, ...) end
    -- (keys that name no parameter go to a `...` (Python's **kwargs) when another key names one:
    -- HF's _prepare_4d_causal_attention_mask_with_cache_position(mask, sequence_length=..., device=...))
    local top, extra, named, others = n - 1, varargs_at(f), false, false
    for k in pairs(t) do
      local at = type(k) == "string" and names[k]
      if at and at < n then return f(first, ...) end
      if at then named, top = true, math.max(top, at)
      elseif extra and type(k) == "string" then others = true
      else return f(first, ...) end
    end
    if not named then return f(first, ...) end
    local args, kwargs = { ... }, others and {} or nil
    args[n] = nil
    for k, v in pairs(t) do
      if names[k] then args[names[k]] = v else kwargs[k] = v end
    end
    if kwargs then top = math.max(top, extra); args[extra] = kwargs end
    return f(first, unpack(args, 1, top))
  end
  wrapped[static] = f
  return static
end

--- Module:extend("Name"[, args]): a new class; Class(...) builds an instance and calls init.
--- args names init's required positional arguments, in order: each is also taken
--- by name from a trailing options table (Class(3, {out_features = 4})), and a
--- missing one is an error naming it (own_init_args for a class of one's own).
-- every method checks its receiver: m.parameters() instead of m:parameters() names the method
local function this(self, fn)
  if not is_module(self) then check.expected("Module:" .. fn, "self", "a module", self) end
  return self
end

-- the inits of one's own classes with declared argument names, as wrapped (weak keys)
local own_inits = setmetatable({}, { __mode = "k" })
-- the arguments of such an init: bound as bind_keywords does (a table naming none of its
-- arguments at its place or later is a value: HF's config object), the names it lacks in its
-- options parameter; then the declared required arguments are checked
local function own_init_args(class, declared, init, ...)
  local n = select("#", ...)
  local bound, top = nil, nil
  if n > 0 then bound, top = bind_keywords(class, "init", init, n, ...) end
  local list, count = bound or { ... }, bound and top or n
  for i, nm in ipairs(declared) do
    if list[i] == nil and nm:sub(-1) ~= "?" then
      check.fail(rawget(class, "__name") or "Module", "missing required argument '%s'", nm)
    end
  end
  return unpack(list, 1, count)
end

-- A class's own __getattr__ (PEFT's PeftModel, LoraModel, ModulesToSaveWrapper delegating to the
-- wrapped model) is Python's fallback for a name the usual lookup misses: the class's instance
-- __index becomes this, which looks the name up as before (`inner`: the class's __index function,
-- or the instance's class table), then calls the instance's class's __getattr__. A name being
-- resolved is not resolved again (Module.__getattr__(self, name), PyTorch's super().__getattr__,
-- from inside the override misses and raises, as PyTorch's does), nor is a name starting with "_"
-- (metamethods, and the private fields wick's own code looks for on any module).
local resolving = setmetatable({}, { __mode = "k" })
local getattr_indexes = setmetatable({}, { __mode = "k" }) -- (the functions getattr_index made)
local function getattr_index(inner)
  return function(obj, key)
    local v
    if type(inner) == "function" then v = inner(obj, key) else v = getmetatable(obj)[key] end
    if v ~= nil or type(key) ~= "string" or key:sub(1, 1) == "_" then return v end
    local busy = resolving[obj]
    if busy and busy[key] then return nil end
    busy = busy or {}
    resolving[obj] = busy
    busy[key] = true
    local ok, r = pcall(getmetatable(obj).__getattr__, obj, key)
    busy[key] = nil
    if not ok then error(r, 0) end
    return r
  end
end

-- A class's `_lazy` table is Python's functools.cached_property (uni2ts' QueryKeyProjection.proj_width):
-- the instances' lookup becomes this, which looks the name up as before (`inner` as getattr_index's),
-- then runs the nearest class's _lazy function of that name once and keeps its value in the instance.
local lazy_indexes = setmetatable({}, { __mode = "k" }) -- (the functions lazy_index made)
local function lazy_index(inner)
  return function(obj, key)
    local v
    if type(inner) == "function" then v = inner(obj, key) else v = getmetatable(obj)[key] end
    if v ~= nil or type(key) ~= "string" then return v end
    return require("wick.nn.common").cached_property(obj, getmetatable(obj), key)
  end
end

-- Python's dunder methods that are no Lua metamethods: looked up through the base, not copied
local INHERITED = { __call__ = true, __getattr__ = true, __setattr__ = true, __delattr__ = true }

-- tostring(cls): Python's str(cls), "<class 'SineLayer'>" (siren's str(layer.__class__) keys)
local function class_name(cls) return ("<class '%s'>"):format(tostring(rawget(cls, "__name"))) end

-- a class's init as its __newindex saw it: a second `function K:init` is a raw write (Lua calls
-- __newindex only for a new key), which replaces the constructor (a port of PyTorch's method named
-- init, lucidrains' Kmeans.init(self, x)); Module.new says so, once per class
local class_inits = setmetatable({}, { __mode = "k" })
local redefined_init = setmetatable({}, { __mode = "k" })
local function check_init_redefined(class)
  local first = class_inits[class]
  if first ~= nil and rawget(class, "init") ~= first and not redefined_init[class] then
    redefined_init[class] = true
    require("wick.nn.common").warn(("%s: init is defined again, replacing the constructor: in wick init is the "
      .. "constructor (PyTorch's __init__); give a method PyTorch calls init another name")
      :format(tostring(rawget(class, "__name") or "Module")), true)
  end
end
function Module:extend(name, args)
  if type(self) ~= "table" then check.expected("Module.extend", "self", "a module class", self) end
  if name ~= nil then check.string(name, "Module.extend", "name") end
  if args ~= nil then
    check.table(args, "Module.extend", "args")
    if rawget(args, "__name") ~= nil or getmetatable(args) ~= nil then -- Python's class C(A, B)
      check.fail("Module.extend", "the second argument is init's argument names, got the class %s: a class has one "
        .. "base (Python's second base, a mixin: Class:include(Mixin) after extend)",
        tostring(rawget(args, "__name") or check.describe(args)))
    end
    for i = 1, #args do check.string(args[i], "Module.extend", "args") end
  end
  local class = {}
  for k, v in pairs(self) do -- (the metamethods; __call__ and __getattr__, methods, are inherited: a
    -- class's own goes through __newindex, which makes it the call or the lookup's fallback)
    if type(k) == "string" and k:sub(1, 2) == "__" and not INHERITED[k] then class[k] = v end
  end
  class.__name = name or "Module"
  class.__name__ = class.__name
  if type(class.__index) ~= "function" then class.__index = class end -- (a container's __index looks up the class itself)
  class.super = self
  class._args = args
  return setmetatable(class, {
    __index = self,
    __call = function(cls, ...) return cls.new(cls, ...) end,
    __tostring = class_name,
    -- a method under a name wick keeps on every module would be hidden by it
    __newindex = function(cls, k, v)
      check.constructor_name(rawget(cls, "__name") or "Module", k, v)
      if INTERNAL[k] then
        check.fail(rawget(cls, "__name") or "Module", "'%s' is a name wick's modules use for themselves; name the method otherwise", k)
      end
      -- init takes its named arguments by name also when a subclass calls it
      -- (CausalConv1d's super().__init__(i, o, kernel_size=k, padding=p))
      if k == "init" and args and type(v) == "function" then
        local init = v
        if of_wick(init) then
          v = function(obj, ...) return init(obj, required(name or "Module", args, ...)) end
        else -- one's own class: its declared names join init's own for keywords
          local names = {}
          for nm, at in pairs(positions_of(init) or {}) do names[nm] = at end
          for i, nm in ipairs(args) do names[nm:match("^(.-)%??$")] = i end
          param_names[init] = names
          if debug.getinfo(init, "u").nparams - 1 > #args then options_at[init] = #args + 1 end
          first_optional[init] = args[1] ~= nil and args[1]:sub(-1) == "?" or nil
          v = function(obj, ...) return init(obj, own_init_args(cls, args, init, ...)) end
          own_inits[v] = true
        end
      elseif k == "init" and type(v) == "function" and not of_wick(undecorated(v)) then
        -- without declared names, init takes PyTorch's keywords also when a subclass calls it
        -- (nflows' super().__init__(mask, fn, unconditional_transform=ut))
        v = keyword_method(v, "init")
      end
      -- a forward of one's own binds PyTorch's keywords also when called as a method
      -- (pytorch-flows' self.forward(noise, mode='inverse')), and so does any other method of
      -- one's own (but metamethods); wick's own layers take theirs
      -- (a method: its first parameter is self, or cls for Python's classmethod; a static function
      -- of the class binds only a table of its parameters' names: static_method)
      local first = type(v) == "function" and debug.getlocal(undecorated(v), 1)
      if type(v) == "function" and type(k) == "string" and k ~= "init" and (k:sub(1, 2) ~= "__" or k == "__call__")
        and not of_wick(undecorated(v)) then
        if k == "forward" or first == "self" or first == "cls" then v = keyword_method(v, k)
        elseif first and k:sub(1, 2) ~= "__" then v = static_method(v) end
      end
      -- Python's __call__ defined on the class (pix2pix's GANLoss.__call__) replaces the module call
      if k == "__call__" and type(v) == "function" then rawset(cls, "__call", v) end
      -- its cached properties join the instances' lookup
      if k == "_lazy" then
        if type(v) ~= "table" then check.expected(rawget(cls, "__name") or "Module", "_lazy", "a table of functions (cached properties)", v) end
        if not lazy_indexes[rawget(cls, "__index")] then
          local index = lazy_index(rawget(cls, "__index") ~= cls and rawget(cls, "__index") or nil)
          lazy_indexes[index] = true
          rawset(cls, "__index", index)
        end
      end
      -- and its __getattr__ is the fallback of the instances' lookup
      if k == "__getattr__" and type(v) == "function" and not getattr_indexes[rawget(cls, "__index")] then
        local index = getattr_index(rawget(cls, "__index") ~= cls and rawget(cls, "__index") or nil)
        getattr_indexes[index] = true
        rawset(cls, "__index", index)
      end
      rawset(cls, k, v)
      if k == "init" then class_inits[cls] = v end -- (a second init is a raw write: Module.new finds it)
      require("wick.nn.common").included_late(cls, k)
    end,
  })
end

-- GCN(nfeat = 3, nhid = 8) and GAT(n, h, {dropout = 0.5, alpha = 0.2}): a class of one's own takes
-- init's arguments by name
local function keyword_init(class, ...)
  local n = select("#", ...)
  local args, top = nil, nil
  if n > 0 then args, top = bind_keywords(class, "init", class.init, n, ...) end
  if args then return unpack(args, 1, top) end
  return ...
end

-- nn.Linear(np.array(shape).prod(), 64): a built-in layer takes a 0-dim integer tensor as its number
-- (Python's __index__), wherever its arguments hold one
local function sizes_of(...)
  local n, args = select("#", ...), nil
  for i = 1, n do
    local v = select(i, ...)
    if check.is_tensor(v) and v:dim() == 0 and not v:is_floating_point() and not v:is_complex() and v.dtype ~= "bool" then
      args = args or { ... }
      args[i] = v:item()
    end
  end
  if args then return unpack(args, 1, n) end
  return ...
end

function Module.new(class, ...)
  local index = type(class) == "table" and rawget(class, "__index")
  if (index ~= class and type(index) ~= "function") or type(class.init) ~= "function" then check.expected("Module.new", "class", "a module class", class) end
  check_init_redefined(class)
  local self = setmetatable({ _fields = {}, training = true }, class)
  rawset(self, "training", true)
  -- the argument names of the class whose init runs: a subclass without an
  -- init of its own (class Conv1d(nn.Conv1d)) takes its base's by name too
  local args, c = rawget(class, "_args"), class
  while not args and type(c) == "table" and rawget(c, "init") == nil do
    c = rawget(c, "super")
    args = type(c) == "table" and rawget(c, "_args") or nil
  end
  building[self] = true
  if args and own_inits[class.init] then self:init(sizes_of(...))
  elseif args then self:init(required(class.__name, args, sizes_of(...)))
  else self:init(keyword_init(class, ...)) end
  building[self] = nil
  return self
end

function Module:init() end
-- nn.Module(): a plain container, as PyTorch's (`down = nn.Module(); down.block = ...`)
setmetatable(Module, { __call = function(cls, ...) return cls.new(cls, ...) end, __tostring = class_name })

function Module:forward()
  this(self, "forward")
  wick.error(("%s:forward is not defined"):format(getmetatable(self).__name))
end

Module.__newindex = track
-- While wick.profiler records, profiling.call(self, ...) runs forward as a range
-- named like PyTorch's module events ("nn.Module: Linear_0"); off, one test
-- (none in a build with WICK_PROFILER_HOOK=OFF, which leaves the profiler's hooks out).
local profiling = package.loaded["wick._profiling"] or { on = false }
package.loaded["wick._profiling"] = profiling
local function forward(self, ...)
  if profiling.on then return profiling.call(self, ...) end
  return self:forward(...)
end
if not core.profiler_hooked then forward = function(self, ...) return self:forward(...) end end

-- A call with forward hooks (register_forward_pre_hook, register_forward_hook),
-- as PyTorch's: pre hooks get (module, args) and may return new args (a
-- tensor, or an array of arguments); hooks get (module, args, output) and may
-- return a new output. A forward of several results gives them as an array.
local function pack(...) return { n = select("#", ...), ... } end
-- Backward hooks (register_full_backward_hook, register_full_backward_pre_hook)
-- through tensor hooks: each input tensor that requires grad enters forward as
-- a view with a hook (its gradient is grad_input[i]), the output leaves as one
-- (its gradient is grad_output, which pre hooks may replace). The hooks run
-- once every input's gradient has come (at once, with no input that requires
-- grad); a result replaces grad_input (the last input's gradient to arrive, the
-- only one still in flight: for one input, PyTorch's rule).
-- The module-global hooks (nn.register_module_forward_hook and its kin, PyTorch's
-- torch.nn.modules.module.register_module_*): lists of the same entries as a module's, run for
-- every module call before the module's own (PyTorch's order); global_hooks.any counts them
local global_hooks = { _forward_hook_list = {}, _forward_pre_hook_list = {}, _backward_hook_list = {},
  _backward_pre_hook_list = {}, any = 0 }
-- a call's hooks of one kind: the global ones, then the module's own, copied (PyTorch runs over a
-- copy: a hook that removes itself does not stop the next one, one added during the call runs from
-- the next call)
local function hooks_of(self, key)
  local own, global = rawget(self, key), global_hooks[key]
  if not own and #global == 0 then return nil end
  local out = {}
  for i = 1, #global do out[#out + 1] = global[i] end
  for i = 1, own and #own or 0 do out[#out + 1] = own[i] end
  return out
end
local function packed_list(t, n) t.n = n; return t end
-- the first tensor of a value, walking into tables (PyTorch's legacy backward hook's output)
local function first_tensor(v, depth)
  if wick.is_tensor(v) then return v end
  if type(v) ~= "table" or (depth or 0) > 8 then return nil end
  local n = 0
  while rawget(v, n + 1) ~= nil do n = n + 1 end
  for i = 1, n do
    local t = first_tensor(rawget(v, i), (depth or 0) + 1)
    if t then return t end
  end
  local keys = {}
  for k in pairs(v) do if type(k) == "string" then keys[#keys + 1] = k end end
  table.sort(keys)
  for _, k in ipairs(keys) do
    local t = first_tensor(rawget(v, k), (depth or 0) + 1)
    if t then return t end
  end
end
local HookOutputs -- (an autograd.Function, made on first use: the outputs of a module of several)
local function with_backward_hooks(self, args, run)
  local bw, bwpre = hooks_of(self, "_backward_hook_list"), hooks_of(self, "_backward_pre_hook_list")
  if not wick.is_grad_enabled() then return run(args) end
  local state = { grad_input = {}, pending = 0 }
  local function fire()
    local gi = packed_list({}, args.n)
    for i = 1, args.n do gi[i] = state.grad_input[i] end
    local result
    for _, h in ipairs(bw or {}) do
      local go = state.grad_output or packed_list({}, 0)
      local r = h.fn(self, gi, packed_list({ unpack(go, 1, go.n) }, go.n))
      if r ~= nil then
        if not wick.is_tensor(r) and (type(r) ~= "table" or getmetatable(r) ~= nil) then
          wick.error(("%s: a full backward hook returned %s; it returns nil or the grad_input list (a table of tensors)")
            :format(getmetatable(self).__name, check.describe(r)))
        end
        gi = wick.is_tensor(r) and packed_list({ r }, 1) or r
        result = gi
      end
    end
    return result
  end
  local wrapped = { n = args.n }
  for i = 1, args.n do
    local a = args[i]
    if wick.is_tensor(a) and a.requires_grad then
      a = a:view_as(a)
      state.pending = state.pending + 1
      a:register_hook(function(g)
        state.grad_input[i] = g
        state.pending = state.pending - 1
        if state.pending == 0 then
          local r = fire()
          if r then return r[i] end
        end
      end)
    end
    wrapped[i] = a
  end
  local out = run(wrapped)
  -- the pre hooks on grad_output (one entry per output), then fire when no input waits
  local function pre_hooks(go)
    for _, h in ipairs(bwpre or {}) do
      local r = h.fn(self, packed_list({ unpack(go, 1, go.n) }, go.n))
      if r ~= nil then
        if not wick.is_tensor(r) and (type(r) ~= "table" or getmetatable(r) ~= nil) then
          wick.error(("%s: a backward pre hook returned %s; it returns nil or the grad_output list (a table of tensors)")
            :format(getmetatable(self).__name, check.describe(r)))
        end
        go = wick.is_tensor(r) and packed_list({ r }, 1) or packed_list({ unpack(r, 1, r.n or go.n) }, go.n)
      end
    end
    state.grad_output = go
    if state.pending == 0 then fire() end
    return go
  end
  local y = out[1]
  if out.n == 1 and wick.is_tensor(y) then
    if not y.requires_grad then return out end
    y = y:view_as(y)
    y:register_hook(function(g) return pre_hooks(packed_list({ g }, 1))[1] end)
    return { y, n = 1 }
  end
  -- PyTorch's legacy register_backward_hook (no full hook, no pre hook): on the first output tensor
  -- (walking into tables), once
  local legacy = bwpre == nil
  for _, h in ipairs(bw or {}) do legacy = legacy and h.legacy == true end
  if legacy then
    local t = first_tensor(out.n == 1 and y or { unpack(out, 1, out.n) })
    if t and t.requires_grad then
      t:register_hook(function(g) state.grad_output = packed_list({ g }, 1); if state.pending == 0 then fire() end end)
    end
    return out
  end
  -- several outputs (Python's tuple): one node over every output that requires grad, whose backward
  -- gets their gradients together (PyTorch's BackwardHookFunction)
  local at, tensors = {}, {}
  for i = 1, out.n do
    if wick.is_tensor(out[i]) and out[i].requires_grad then at[#at + 1] = i; tensors[#tensors + 1] = out[i] end
  end
  if out.n == 1 or #at == 0 then
    if out.n == 1 then
      wick.error(("%s: full backward hooks take a module whose output is a tensor or several (Python's tuple), got %s")
        :format(getmetatable(self).__name, check.describe(y)))
    end
    return out
  end
  if not HookOutputs then
    HookOutputs = require("wick.autograd").Function:extend("BackwardHookFunction")
    function HookOutputs.forward(ctx, fn, ...) ctx:set_materialize_grads(false); ctx.fn = fn; return ... end
    function HookOutputs.backward(ctx, ...) return nil, ctx.fn(...) end
  end
  local n = out.n
  local results = pack(HookOutputs.apply(function(...)
    local grads = { ... }
    local go = packed_list({}, n)
    for k, i in ipairs(at) do go[i] = grads[k] end
    go = pre_hooks(go)
    local back = {}
    for k, i in ipairs(at) do back[k] = go[i] end
    return unpack(back, 1, #at)
  end, unpack(tensors)))
  local new = pack(unpack(out, 1, out.n))
  for k, i in ipairs(at) do new[i] = results[k] end
  return new
end

-- a call's arguments as PyTorch's (args, kwargs) for a with_kwargs hook: a trailing options table (a plain
-- table without an array part) is the kwargs, the rest the args; and back
local function split_kwargs(a)
  local last = a.n > 0 and a[a.n] or nil
  if type(last) == "table" and getmetatable(last) == nil and rawget(last, 1) == nil then
    local positional = pack(unpack(a, 1, a.n - 1))
    return positional, last
  end
  return a, {}
end
local function joined(positional, kwargs)
  if next(kwargs) == nil then return positional end
  local a = pack(unpack(positional, 1, positional.n or #positional))
  a.n = a.n + 1
  a[a.n] = kwargs
  return a
end

local function hooked_call(self, pre, post, ...)
  pre, post = hooks_of(self, "_forward_pre_hook_list"), hooks_of(self, "_forward_hook_list")
  local args = pack(...)
  for _, h in ipairs(pre or {}) do
    if h.with_kwargs then -- (fn(module, args, kwargs) -> nil, or new args and kwargs, PyTorch's)
      local positional, kwargs = split_kwargs(args)
      local r, kw = h.fn(self, positional, kwargs)
      if r ~= nil or kw ~= nil then
        if wick.is_tensor(r) then positional = { r, n = 1 }
        elseif type(r) == "table" then positional = pack(unpack(r, 1, r.n or #r)) end
        if type(kw) == "table" then kwargs = kw end
        args = joined(positional, kwargs)
      end
    else
      local r = h.fn(self, args)
      if wick.is_tensor(r) then args = { r, n = 1 }
      elseif type(r) == "table" then args = pack(unpack(r, 1, r.n or #r)) end
    end
  end
  local function call_post(h, a, output)
    if h.with_kwargs then
      local positional, kwargs = split_kwargs(a)
      return h.fn(self, positional, kwargs, output)
    end
    return h.fn(self, a, output)
  end
  -- the forward, then the forward hooks: a backward hook sees the gradient
  -- of the output the forward hooks made (PyTorch's order)
  local function run(a)
    local always = false
    for _, h in ipairs(post or {}) do always = always or h.always_call end
    local out
    if always then -- (the always_call hooks run, output nil, before the error goes on)
      local ok, r = pcall(function() return pack(forward(self, unpack(a, 1, a.n))) end)
      if not ok then
        for _, h in ipairs(post) do if h.always_call then call_post(h, a, nil) end end
        error(r, 0)
      end
      out = r
    else
      out = pack(forward(self, unpack(a, 1, a.n)))
    end
    for _, h in ipairs(post or {}) do
      local r = call_post(h, a, out.n == 1 and out[1] or { unpack(out, 1, out.n) })
      if r ~= nil then out = out.n == 1 and { r, n = 1 } or pack(unpack(r)) end
    end
    return out
  end
  local out
  if rawget(self, "_backward_hook_list") or rawget(self, "_backward_pre_hook_list")
    or #global_hooks._backward_hook_list > 0 or #global_hooks._backward_pre_hook_list > 0 then
    out = with_backward_hooks(self, args, run)
  else
    out = run(args)
  end
  return unpack(out, 1, out.n)
end

-- A built-in layer called with more arguments than its forward takes is
-- PyTorch's TypeError, not a silent drop (nn.Linear(4, 2)(x, mask)); trailing
-- nils are Lua's absent arguments. A forward of one's own keeps Lua's rule.
local max_args = setmetatable({}, { __mode = "k" }) -- forward -> its positional count, or false
local function check_arity(self, n, ...)
  local f = self.forward
  local max = max_args[f]
  if max == nil then
    local info = type(f) == "function" and debug.getinfo(f, "Su")
    max = info and info.nparams and not info.isvararg and info.source:find("wick/nn/", 1, true) and info.nparams - 1
      or false
    max_args[f] = max
  end
  if not max or n <= max then return end
  for i = max + 1, n do
    if select(i, ...) ~= nil then
      check.fail((getmetatable(self).__name or "Module") .. ".forward", "takes %d positional argument(s) but %d were given",
        max + 1, n + 1)
    end
  end
end

-- a call's argument checks: PyTorch's TypeError for extra ones, and its keyword arguments bound to the
-- forward's parameters (ConvLSTM's cell{input_tensor = x, cur_state = {h, c}}, whisper's
-- self.attn(x, {mask = mask, kv_cache = kv_cache}))
local function call_args(self, n, ...)
  if n > 1 then check_arity(self, n, ...) end
  if n > 0 then return bind_keywords(self, "forward", self.forward, n, ...) end
end

-- (the test and the forward inline: a call is on every layer's path)
if core.profiler_hooked then
  Module.__call = function(self, ...)
    local pre, post = rawget(self, "_forward_pre_hook_list"), rawget(self, "_forward_hook_list")
    if pre or post or rawget(self, "_backward_hook_list") or rawget(self, "_backward_pre_hook_list")
      or global_hooks.any > 0 then
      return hooked_call(self, pre, post, ...)
    end
    local args, k = call_args(self, select("#", ...), ...)
    if args then return Module.__call(self, unpack(args, 1, k)) end -- (not self(...): a class's own __call__)
    if profiling.on then return profiling.call(self, ...) end
    return self:forward(...)
  end
else
  Module.__call = function(self, ...)
    local pre, post = rawget(self, "_forward_pre_hook_list"), rawget(self, "_forward_hook_list")
    if pre or post or rawget(self, "_backward_hook_list") or rawget(self, "_backward_pre_hook_list")
      or global_hooks.any > 0 then
      return hooked_call(self, pre, post, ...)
    end
    local args, k = call_args(self, select("#", ...), ...)
    if args then return Module.__call(self, unpack(args, 1, k)) end -- (not self(...): a class's own __call__)
    return self:forward(...)
  end
end
--- m:__call__(...): the module call (hooks, then forward), for a class's own __call__ that calls its base's:
--- HF's GradientCheckpointingLayer's super().__call__(*args, **kwargs) is Class.super.__call__(self, ...)
function Module:__call__(...)
  this(self, "__call__")
  return Module.__call(self, ...)
end

-- A hook list's handle: handle:remove()
local hook_ids = 0
-- copy.deepcopy of a module copies a hook that is a bound method (BYOL's
-- layer.register_forward_hook(self._hook)) bound to the copy. A Lua hook that
-- stands for one is a closure over an object the deepcopy copied
-- (function(...) return self:_hook(...) end): the copy's hook is the same
-- function with those upvalues pointing at the copies (the others shared
-- with the original's); a hook over nothing copied stays the same function.
local HOOK_LISTS = { "_forward_hook_list", "_forward_pre_hook_list", "_backward_hook_list", "_backward_pre_hook_list",
  "_state_dict_hooks", "_state_dict_pre_hooks", "_load_pre_hooks", "_load_post_hooks" }
local function rebound(f, memo)
  if type(f) ~= "function" or not debug.upvaluejoin then return f end
  local n, remap = 0, false
  while debug.getupvalue(f, n + 1) ~= nil do
    n = n + 1
    local _, v = debug.getupvalue(f, n)
    if v ~= nil and memo[v] ~= nil and memo[v] ~= v then remap = true end
  end
  if not remap then return f end
  local ok, code = pcall(string.dump, f)
  local g = ok and (loadstring or load)(code)
  if not g then return f end -- (a C function: shared)
  for i = 1, n do
    local _, v = debug.getupvalue(f, i)
    if v ~= nil and memo[v] ~= nil and memo[v] ~= v then debug.setupvalue(g, i, memo[v])
    else debug.upvaluejoin(g, i, f, i) end
  end
  if getfenv and setfenv then setfenv(g, getfenv(f)) end
  return g
end
table.insert(wick._deepcopy_copiers, function(_, copy, memo)
  for _, key in ipairs(HOOK_LISTS) do
    local list = rawget(copy, key)
    for _, entry in ipairs(list or {}) do entry.fn = rebound(entry.fn, memo) end
  end
end)

-- (a handle: handle:remove(), once or more, and handle.id, the hook's key in m._forward_hooks and
-- its kin, unique, as PyTorch's RemovableHandle)
local function handle_of(list, entry, on_empty)
  local removed = false
  return { id = entry.id, remove = function()
    if removed then return end
    removed = true
    for i, e in ipairs(list) do
      if e == entry then table.remove(list, i); break end
    end
    if on_empty then on_empty() end
  end }
end
local function add_hook(self, key, fn, what, opts)
  check.callable(fn, what, "hook")
  local list = rawget(self, key) or {}
  rawset(self, key, list)
  hook_ids = hook_ids + 1
  local entry = { fn = fn, id = hook_ids, with_kwargs = opts and opts.with_kwargs, always_call = opts and opts.always_call,
    legacy = opts and opts.legacy }
  if opts and opts.prepend then table.insert(list, 1, entry) else list[#list + 1] = entry end
  return handle_of(list, entry, function()
    if #list == 0 and rawget(self, key) == list then rawset(self, key, nil) end
  end)
end

--- m:register_full_backward_hook(fn): fn(m, grad_input, grad_output) when the
--- gradients with respect to the module's inputs are computed (lists with their count in .n; an
--- entry is nil for an input that needs none); a list returned replaces grad_input.
--- register_backward_hook is PyTorch's legacy form: on a module of several outputs it hooks the
--- first output tensor. m:register_full_backward_pre_hook(fn): fn(m, grad_output) before them; a
--- result replaces grad_output.
function Module:register_full_backward_hook(fn)
  return add_hook(this(self, "register_full_backward_hook"), "_backward_hook_list", fn, "register_full_backward_hook")
end
function Module:register_backward_hook(fn)
  return add_hook(this(self, "register_backward_hook"), "_backward_hook_list", fn, "register_backward_hook",
    { legacy = true })
end
function Module:register_full_backward_pre_hook(fn)
  return add_hook(this(self, "register_full_backward_pre_hook"), "_backward_pre_hook_list", fn,
    "register_full_backward_pre_hook")
end

-- PyTorch's module-global hooks (torch.nn.modules.module.register_module_forward_hook and its kin):
-- they run for every module call, before the module's own hooks of the kind; each returns a handle
local function add_global_hook(key, fn, what, opts)
  if is_module(fn) then -- (m:register_module_forward_hook(f): the module came as the hook)
    check.fail(what, "takes a function for every module's calls: nn.%s(fn), not a module's method call", what)
  end
  check.callable(fn, what, "hook")
  if key == "_forward_hook_list" then opts = check.options(opts, what, { with_kwargs = "boolean", always_call = "boolean" }) end
  local list = global_hooks[key]
  hook_ids = hook_ids + 1
  local entry = { fn = fn, id = hook_ids, with_kwargs = opts and opts.with_kwargs, always_call = opts and opts.always_call }
  list[#list + 1] = entry
  global_hooks.any = global_hooks.any + 1
  return handle_of(list, entry, function() global_hooks.any = global_hooks.any - 1 end)
end
--- register_module_forward_pre_hook(fn): fn(m, args) before every module's forward
function Module.register_module_forward_pre_hook(fn)
  return add_global_hook("_forward_pre_hook_list", fn, "register_module_forward_pre_hook")
end
--- register_module_forward_hook(fn[, {with_kwargs =, always_call =}]): fn(m, args, output) after every module's forward
function Module.register_module_forward_hook(fn, opts)
  return add_global_hook("_forward_hook_list", fn, "register_module_forward_hook", opts)
end
--- register_module_full_backward_hook(fn), register_module_full_backward_pre_hook(fn): every module's
function Module.register_module_full_backward_hook(fn)
  return add_global_hook("_backward_hook_list", fn, "register_module_full_backward_hook")
end
function Module.register_module_full_backward_pre_hook(fn)
  return add_global_hook("_backward_pre_hook_list", fn, "register_module_full_backward_pre_hook")
end

--- m:register_forward_pre_hook(fn): fn(m, args) before each forward; a
--- result replaces the arguments (a tensor, or an array of them). Returns a
--- handle with :remove().
-- PyTorch's options of the forward hooks: prepend (run before the others),
-- with_kwargs (the hook also gets, and a pre-hook may return, the keyword
-- arguments: Lua passes them in the args' options table, so kwargs is {}),
-- always_call (a forward hook that runs also when the forward raises)
local FORWARD_HOOK = { prepend = "boolean", with_kwargs = "boolean", always_call = "boolean" }
function Module:register_forward_pre_hook(fn, opts)
  local what = "register_forward_pre_hook"
  local o = check.options(opts, what, { prepend = "boolean", with_kwargs = "boolean" })
  return add_hook(this(self, what), "_forward_pre_hook_list", fn, what, o)
end
--- m:register_forward_hook(fn): fn(m, args, output) after each forward; a
--- result replaces the output. Returns a handle with :remove().
function Module:register_forward_hook(fn, opts)
  local what = "register_forward_hook"
  return add_hook(this(self, what), "_forward_hook_list", fn, what, check.options(opts, what, FORWARD_HOOK))
end

--- Stores a tensor that is state but not a parameter (running statistics).
--- register_buffer(name, tensor[, persistent = true]) (or {persistent =}): a
--- non-persistent buffer moves with to() and is in buffers(), but not in
--- state_dict(), like PyTorch's.
local REGISTER_BUFFER = { tensor = "tensor", persistent = "boolean" }
-- PyTorch's checks of a name being registered: no "." (it would read as a child's), not empty, and not a
-- member of another kind already (a parameter registered as a buffer would silently stop training)
local function check_member_name(self, fn, kind, name, same_kind)
  if name == "" then check.fail(fn, "%s name can't be empty string \"\"", kind) end
  if name:find(".", 1, true) then check.fail(fn, "%s name can't contain \".\", got: %s", kind, name) end
  local v = rawget(self, name)
  if v ~= nil and not same_kind(v) then check.fail(fn, "attribute '%s' already exists", name) end
end
local function is_buffer_of(self, name)
  local kinds = rawget(self, "_buffer_kinds")
  return kinds ~= nil and kinds[name] ~= nil
end
function Module:register_buffer(name, ...)
  this(self, "register_buffer")
  check.string(name, "register_buffer", "name")
  check_member_name(self, "register_buffer", "buffer", name, function() return is_buffer_of(self, name) end)
  -- (the tensor by name too, HF's register_buffer("inv_freq", tensor=inv_freq, persistent=False))
  local first = ...
  if first ~= nil and not is_tensor(first) and (type(first) ~= "table" or getmetatable(first) ~= nil) then
    check.opt_tensor(first, "register_buffer", "tensor")
  end
  local opts = check.positional("register_buffer", { "tensor", "persistent" }, REGISTER_BUFFER, ...)
  local tensor = opts.tensor
  track(self, name, tensor)
  local fields = rawget(self, "_fields")
  if tensor == nil and not fields[name] then -- (a None placeholder keeps its place, PaLM's mask and pos_emb)
    fields[name] = true
    fields[#fields + 1] = name
  end
  local buffers = rawget(self, "_buffer_kinds") or {}
  buffers[name] = opts.persistent == false and "nonpersistent" or true
  rawset(self, "_buffer_kinds", buffers)
end

-- ---- the container rule ----
-- A module's members are its own array part (ModuleList, Sequential: children
-- "1", "2", ...) and then its fields in the order of first assignment. A plain
-- table field is walked too: array entries in index order, then string keys
-- sorted, nested tables alike. Something holding a module or a tensor where it
-- cannot be named (a key that is neither a string nor an array index, a table
-- with a metatable of its own) is an error, never skipped.

local floor = math.floor
local rawlen = rawlen or function(t) return #t end -- luacheck: ignore (5.1: # is raw on tables)

-- Whether v is, or (in plain tables, at any depth) holds, state: a module or a
-- parameter (a plain tensor in a plain table is an attribute, as PyTorch's:
-- RWKV's namespace of weights under blocks[0] needs no name)
local function holds(v, seen)
  if is_module(v) then return true end
  if is_tensor(v) then return v:_is_parameter() end
  if type(v) ~= "table" then return false end
  seen = seen or {}
  if seen[v] then return false end
  seen[v] = true
  for _, item in pairs(v) do
    if holds(item, seen) then return true end
  end
  return false
end

local add_member
-- the entries of a plain table assigned to `name`
local function table_members(out, owner, name, tbl, visiting)
  if visiting[tbl] then return end -- a table that holds itself: named once
  visiting[tbl] = true
  local n = 0
  while rawget(tbl, n + 1) ~= nil do n = n + 1 end
  for i = 1, n do add_member(out, owner, name .. "." .. i, rawget(tbl, i), visiting, nil, nil, true) end
  local keys = {}
  for k, v in pairs(tbl) do
    if type(k) == "string" then keys[#keys + 1] = k
    elseif not (type(k) == "number" and k >= 1 and k <= n and k == floor(k)) and holds(v) then
      wick.error(("%s: the table '%s' holds %s under the key %s, which has no name in a state dict (use array entries 1..n or string keys, or nn.ModuleList/nn.ModuleDict)")
        :format(getmetatable(owner).__name, name,
          (is_tensor(v) or is_module(v)) and "a " .. check.describe(v) or "a table with a module or a parameter", tostring(k)))
    end
  end
  table.sort(keys)
  for _, k in ipairs(keys) do add_member(out, owner, name .. "." .. k, rawget(tbl, k), visiting, nil, nil, true) end
  visiting[tbl] = nil
end

-- (param: whether a tensor field is a parameter; nil inside plain tables,
-- which may change after their assignment: asked there. nested: inside a
-- plain table, where a module that is also a field of the owner is left out:
-- PyTorch's `self.fcs = []` list beside `setattr(self, "fc%d" % i, fc)`
-- registers each layer once, under its field's name)
local DIRECT = {} -- visiting[DIRECT]: the owner's own children
local BELOW = {}  -- visiting[BELOW]: every module under them (made when a plain table holds a module)
local module_list
-- The modules registered under the owner's own children: a plain table's
-- module that is one of them (YOLOv3's self.yolo_layers = [layer[0] for layer
-- in self.module_list ...]) is named there, not again in the table, as
-- PyTorch leaves a plain list unregistered
local function registered_below(visiting)
  local below = visiting[BELOW]
  if not below then
    below = {}
    for child in pairs(visiting[DIRECT]) do
      for _, m in ipairs(module_list(child, "", {}, {})) do below[m[2]] = true end
    end
    visiting[BELOW] = below
  end
  return below
end
local TENSORS = {} -- visiting[TENSORS]: the tensors of the owner's own fields and every tensor under its children
local walk
-- A plain table's tensor that one of them is (DARTS' self._alphas = [(n, p) for n, p in
-- self.named_parameters()]) is named there, not again in the table, as PyTorch leaves a plain list
-- unregistered
local function registered_tensors(owner, visiting)
  local set = visiting[TENSORS]
  if not set then
    set = {}
    for _, key in ipairs(rawget(owner, "_fields")) do
      local v = rawget(owner, key)
      if is_tensor(v) then set[v] = true end
    end
    for child in pairs(visiting[DIRECT]) do
      if is_tensor(child) then set[child] = true
      elseif is_module(child) and child ~= owner then walk(child, "", function(_, t) set[t] = true end, nil, true, true) end
    end
    visiting[TENSORS] = set
  end
  return set
end
-- whether module m has a parameter or buffer anywhere in its tree
local function holds_tensors(m)
  local any = false
  walk(m, "", function() any = true end, nil, false, true)
  return any
end
add_member = function(out, owner, name, v, visiting, buffer, param, nested)
  if is_tensor(v) then
    if nested and registered_tensors(owner, visiting)[v] then return end
    if param == nil then param = v:_is_parameter() end
    out[#out + 1] = { name, v, "tensor", buffer == "nonpersistent", buffer ~= nil, param, buffer == "implicit" }
  elseif is_module(v) then
    -- (a table's back-reference to the module itself, lucidrains' {kls = self}, is not a child)
    if not (nested and (v == owner or visiting[DIRECT][v] or registered_below(visiting)[v])) then
      out[#out + 1] = { name, v, "module" }
    end
  elseif type(v) == "table" then
    if check.is_array(v) then
      table_members(out, owner, name, v, visiting)
    else -- an object (a distribution, a helper holding parameters registered elsewhere): not state, as in PyTorch
      -- (a helper pointing back at its owner: reformer's ParameterList(self, ...), or at modules the
      -- owner registers: PyG's RedrawProjection(self.convs, ...), is fine: nothing of it is skipped)
      -- (nor is one holding only modules without tensors: YOLOv8's self.criterion = v8DetectionLoss(self)
      -- with its BCEWithLogitsLoss and TaskAlignedAssigner, where nothing would be skipped)
      for k, item in pairs(v) do
        if is_module(item) and item ~= owner and not (visiting[DIRECT][item] or registered_below(visiting)[item])
            and holds_tensors(item) then
          wick.error(("%s: the field '%s' is an object (a table with a metatable) holding a %s at '%s': it would be skipped by parameters(), to() and state_dict(); make it a module (nn.Module:extend) or a plain table")
            :format(getmetatable(owner).__name, name, check.describe(item), tostring(k)))
        end
      end
    end
  end
end

-- PyTorch's name of a value's type in its Module.__setattr__ errors ('int', 'torch.FloatTensor', 'Tanh')
local function py_type_name(v)
  if wick.is_tensor(v) then return ("%s' (a %s tensor"):format(v:type(), v.dtype) end
  if is_module(v) then return getmetatable(v).__name or "Module" end
  if type(v) == "number" then return v == floor(v) and math.abs(v) < 2 ^ 63 and "int" or "float" end
  if type(v) == "string" then return "str" end
  if type(v) == "boolean" then return "bool" end
  return type(v)
end
local function cannot_assign(self, v, what, key, expected)
  local name = py_type_name(v)
  check.fail(getmetatable(self).__name or "Module", "cannot assign '%s%s as %s '%s' (%s or None expected)%s", name,
    name:find("tensor$") and ")" or "'", what, key, expected,
    " (found when the module was next walked: Lua does not tell a module of a field's reassignment)")
end
-- A field reassigned since the module last saw it, under PyTorch's Module.__setattr__ rules: an
-- nn.Parameter becomes a parameter (over a child module, a buffer or an attribute: the old entry goes);
-- a module over a buffer is a child; a tensor or a number over a child module, a number or a module
-- over a parameter, a number over a buffer are PyTorch's TypeError. (A plain tensor over a parameter
-- stays that parameter's value: torch.func.functional_call swaps them so.) nil or false (None) keeps
-- the entry, as PyTorch's None.
local function reconcile(self, key, v)
  local kinds = seen_kinds[self]
  local old = kinds and kinds[key]
  if old == nil then return remember(self, key, v) end -- (not seen: a deep copy)
  if v == nil then
    if old == "none" then return end
  elseif seen_values[self][key] == v then
    return
  end
  local params, buffers = rawget(self, "_param_names"), rawget(self, "_buffer_kinds")
  local param = params and params[key] == true
  local buffer = buffers and buffers[key]
  if is_tensor(v) and v:_is_parameter() and wick._buffers_made[v] == nil then
    if buffer then buffers[key] = nil end
    registry(self, "_param_names")[key] = true
  elseif is_module(v) then
    if param then cannot_assign(self, v, "parameter", key, "nn.Parameter") end
    if buffer then buffers[key] = nil end
    if params then params[key] = nil end
  elseif v ~= nil and v ~= false then
    local scalar = type(v) == "number" or type(v) == "string" or type(v) == "boolean"
    if old == "module" and (is_tensor(v) or scalar) then cannot_assign(self, v, "child module", key, "nn.Module") end
    if scalar and param then cannot_assign(self, v, "parameter", key, "nn.Parameter") end
    if scalar and (buffer == true or buffer == "nonpersistent") then
      cannot_assign(self, v, "buffer", key, "nn.Buffer, Tensor")
    end
  elseif old == "module" then
    none_modules[self] = none_modules[self] or {}
    none_modules[self][key] = true
  end
  if is_module(v) and none_modules[self] then none_modules[self][key] = nil end
  remember(self, key, v)
end
-- add_module(name, nil): PyTorch's None child, a name in m._modules
function none_module(self, name)
  local fields = rawget(self, "_fields")
  if not fields[name] then
    fields[name] = true
    fields[#fields + 1] = name
  end
  none_modules[self] = none_modules[self] or {}
  none_modules[self][name] = true
  remember(self, name, nil)
end

-- The named members of one module, in order: kind is "tensor" or "module".
-- (An array entry is named by its index, or by the name it was added under:
-- _names, of Sequential:add_module.)
local function members(self)
  local out, direct = {}, {}
  local visiting = { [DIRECT] = direct }
  for i = 1, rawlen(self) do direct[rawget(self, i)] = true end
  for _, key in ipairs(rawget(self, "_fields")) do
    local v = rawget(self, key)
    if is_module(v) then direct[v] = true end
  end
  local names, used = rawget(self, "_names") or {}, {}
  for i = 1, rawlen(self) do
    local name = names[i] or tostring(i)
    if used[name] then
      wick.error(("%s: entries %d and %d are both named '%s' (an add_module name and a position)"):format(
        getmetatable(self).__name, used[name], i, name))
    end
    used[name] = i
    add_member(out, self, name, rawget(self, i), visiting)
  end
  for _, key in ipairs(rawget(self, "_fields")) do reconcile(self, key, rawget(self, key)) end
  local buffers, params = rawget(self, "_buffer_kinds") or {}, rawget(self, "_param_names") or {}
  for _, key in ipairs(rawget(self, "_fields")) do
    local v, kind, param = rawget(self, key), buffers[key], params[key] == true
    -- a parameter assigned over a tensor init set (ddpm's self.logvar =
    -- nn.Parameter(self.logvar)) or over a number (x-transformers' self.q_scale = 1, then
    -- nn.Parameter(...)) is one: a raw field's reassignment is not seen
    if (kind == "implicit" or params[key] == "pending") and is_tensor(v) and v:_is_parameter() then
      kind, param = nil, true
    end
    add_member(out, self, key, v, visiting, kind, param)
  end
  return out
end

-- A tensor field is state when it is a parameter (nn.Parameter, or a leaf
-- that required grad when assigned), a registered buffer, or assigned while
-- init ran (track): a plain tensor attribute set later (an activation kept
-- for later, `self.attn = p`) or non-parameters inside a plain table
-- (`self.hidden = {h, c}`) are not listed, saved or moved, as in PyTorch.
local function not_state(m) return not m[5] and not m[6] end

-- Walks the tree: fn(prefix .. name, value, kind, registered) for every
-- tensor, each once (the first name of a tensor found twice, e.g. tied
-- weights) unless `all`; kind is "param" (requires grad, not a registered
-- buffer) or "buffer", or nil with `no_kind` (to(): no call into C per tensor).
-- With `all` (state_dict), non-persistent buffers are left out.
-- In PyTorch's order: a module's own parameters, then its own buffers (each in
-- the order of first assignment), then its children, each walked the same way.
-- (A child that is one of the modules being walked, a table's reference back to a
-- parent, is not walked again: `path` holds them.)
function walk(self, prefix, fn, seen, all, no_kind, own, path, on_module)
  seen, path = seen or {}, path or {}
  path[self] = true
  local list = members(self)
  for pass = 1, 3 do
    if pass == 3 and on_module then on_module(self, prefix) end -- (after its own tensors, before its children's)
    for _, m in ipairs(list) do
      local name, value = m[1], m[2]
      if m[3] == "module" then
        if pass == 3 and not own and not path[value] then
          walk(value, prefix .. name .. ".", fn, seen, all, no_kind, nil, path, on_module)
        end
      elseif pass == 3 or (pass == 1) == (m[5] == true) then -- luacheck: ignore (not this pass's kind)
      elseif all and m[4] then -- luacheck: ignore (a non-persistent buffer)
      elseif not_state(m) then -- luacheck: ignore (a plain tensor attribute)
      elseif all or not seen[value] then
        seen[value] = true
        -- a parameter stays one when frozen (requires_grad = false), as PyTorch's nn.Parameter
        local kind = not no_kind and (m[5] and "buffer" or "param") or nil
        fn(prefix .. name, value, kind, m[5], m[7])
      end
    end
  end
  path[self] = nil
end

-- An iterator of name, value over an array of {name, value} pairs.
local function pairs_of(list)
  local i = 0
  return function()
    i = i + 1
    if list[i] then return list[i][1], list[i][2] end
  end
end

-- named_parameters([prefix = ""[, recurse = true[, remove_duplicate = true]]]),
-- each also an option: PyTorch's; recurse = false lists the module's own only
local NAMED = { prefix = "string", recurse = "boolean", remove_duplicate = "boolean" }
local function named(self, wanted, fn, ...)
  local o = check.positional(fn, { "prefix", "recurse", "remove_duplicate" }, NAMED, ...)
  local prefix = (o.prefix or "") ~= "" and o.prefix .. "." or ""
  local list, seen = {}, o.remove_duplicate == false and setmetatable({}, { __newindex = function() end }) or {}
  walk(self, prefix, function(name, t, kind) if kind == wanted then list[#list + 1] = { name, t } end end,
    seen, nil, nil, o.recurse == false)
  return pairs_of(list)
end

function Module:named_parameters(...) return named(this(self, "named_parameters"), "param", "named_parameters", ...) end
function Module:named_buffers(...) return named(this(self, "named_buffers"), "buffer", "named_buffers", ...) end

-- parameters([recurse = true]), buffers([recurse = true]): arrays that a generic for also takes
-- directly, as modules() (PyTorch's `for p in model.parameters():`)
local function tensors_of(self, wanted, fn, ...)
  local o = check.positional(fn, { "recurse" }, { recurse = "boolean" }, ...)
  local out = {}
  for _, t in named(self, wanted, fn, { recurse = o.recurse }) do out[#out + 1] = t end
  return check.list(out)
end
function Module:parameters(...) return tensors_of(this(self, "parameters"), "param", "parameters", ...) end
function Module:buffers(...) return tensors_of(this(self, "buffers"), "buffer", "buffers", ...) end

--- named_children(): an iterator of name, child (each child once), like PyTorch.
function Module:named_children()
  this(self, "named_children")
  local list, seen = {}, {}
  for _, m in ipairs(members(self)) do
    if m[3] == "module" and not seen[m[2]] then
      seen[m[2]] = true
      list[#list + 1] = { m[1], m[2] }
    end
  end
  return pairs_of(list)
end

-- modules() and children(), as parameters() and buffers(), return arrays that a generic for also
-- takes directly (check.list)
function Module:children()
  this(self, "children")
  local out = {}
  for _, c in self:named_children() do out[#out + 1] = c end
  return check.list(out)
end

-- every module of the tree once, depth first, self first: { {name, module}, ... }
function module_list(self, prefix, seen, out)
  if seen[self] then return out end
  seen[self] = true
  out[#out + 1] = { prefix, self }
  for _, m in ipairs(members(self)) do
    if m[3] == "module" then module_list(m[2], prefix == "" and m[1] or prefix .. "." .. m[1], seen, out) end
  end
  return out
end

--- named_modules([memo[, prefix = ""[, remove_duplicate = true]]]) (or {memo =, prefix =, remove_duplicate =}): an
--- iterator of name, module over the whole tree, self first with the name "", each module once (every place it
--- holds with remove_duplicate = false), like PyTorch (dotted, 1-based names).
local NAMED_MODULES = { memo = "table", prefix = "string", remove_duplicate = "boolean" }
function Module:named_modules(memo, prefix, remove_duplicate)
  this(self, "named_modules")
  if type(memo) == "table" and getmetatable(memo) == nil
    and (memo.prefix ~= nil or memo.remove_duplicate ~= nil or memo.memo ~= nil) then -- (PyTorch's keywords)
    local o = check.options(memo, "named_modules", NAMED_MODULES)
    memo, prefix, remove_duplicate = o.memo, o.prefix, o.remove_duplicate
  end
  if memo ~= nil then check.table(memo, "named_modules", "memo") end
  if prefix ~= nil then check.string(prefix, "named_modules", "prefix") end
  if remove_duplicate ~= nil then check.boolean(remove_duplicate, "named_modules", "remove_duplicate") end
  local seen = memo or {}
  if remove_duplicate == false then -- (nothing remembered: a module shared by two parents comes twice)
    seen = setmetatable({}, { __index = memo, __newindex = function() end })
  end
  return pairs_of(module_list(self, prefix or "", seen, {}))
end

--- modules(): an array of every module of the tree (self first), each once.
function Module:modules()
  this(self, "modules")
  local out = {}
  for _, m in ipairs(module_list(self, "", {}, {})) do out[#out + 1] = m[2] end
  return check.list(out)
end

--- apply(fn): calls fn(module) on every module, children first, then self;
--- returns self (PyTorch's Module.apply, e.g. for weight initialisation).
-- whether fn is a method of obj's class or one of its bases
local function class_holds(obj, fn)
  local cls = type(obj) == "table" and getmetatable(obj)
  while type(cls) == "table" do
    for _, v in next, cls do
      if v == fn then return true end
    end
    cls = rawget(cls, "super")
  end
  return false
end
-- the `self` of the function that called m:apply (nil when it has none)
local function caller_self()
  if debug.getinfo(3, "f") == nil then return nil end -- (apply a coroutine's body)
  local name, value = debug.getlocal(3, 1)
  if name == "self" then return value end
end

function Module:apply(fn)
  this(self, "apply")
  check.callable(fn, "apply", "fn")
  -- PyTorch's self.apply(self._init_weights) passes a bound method; Lua's
  -- self:apply(self._init_weights) passes the function: one whose first
  -- parameter is `self` is called as a method, fn(owner, m), of the object it
  -- most likely came from: the caller's self where that one's class holds it
  -- (siamese's self.resnet.apply(self.init_weights) binds the outer network),
  -- else this module
  if type(fn) == "function" and debug.getlocal(fn, 1) == "self" then
    local method, receiver = fn, caller_self()
    if not class_holds(receiver, fn) then receiver = self end
    fn = function(m) return method(receiver, m) end
  end
  -- each child of each module, as PyTorch's recursion: a module shared by two parents gets fn once per
  -- parent (Zamba's tied shared block); a module inside itself (a cycle) is not walked again
  local path = {}
  local function visit(m)
    path[m] = true
    for _, c in ipairs(m:children()) do
      if not path[c] then visit(c) end
    end
    path[m] = nil
    fn(m)
  end
  visit(self)
  return self
end

--- requires_grad_([requires_grad = true]): sets requires_grad on every parameter; returns self.
local REQUIRES_GRAD = { requires_grad = "boolean" }
function Module:requires_grad_(...)
  this(self, "requires_grad_")
  local flag = check.positional("requires_grad_", { "requires_grad" }, REQUIRES_GRAD, ...).requires_grad
  if flag == nil then flag = true end
  -- every tensor but the registered buffers (a parameter frozen earlier is a
  -- tensor without requires_grad: it is found again here)
  walk(self, "", function(_, t, _, registered)
    if not registered and (t:is_floating_point() or t:is_complex()) then t:requires_grad_(flag) end
  end)
  return self
end

-- PyTorch's error for a dotted name whose last part is a member of another kind (a buffer, a
-- parameter, an attribute): "`rm` is not an nn.Module"
local function member_at(self, target)
  local parent_name, last = target:match("^(.*)%.([^.]+)$")
  if not parent_name then parent_name, last = "", target end
  local parent = self
  if parent_name ~= "" then
    parent = nil
    for name, m in self:named_modules() do
      if name == parent_name then parent = m; break end
    end
  end
  if parent == nil then return nil, last end
  return rawget(parent, last), last
end
function not_a_module(fn, self, target)
  local v, last = member_at(self, target)
  if v ~= nil and v ~= false and not is_module(v) then check.fail(fn, "`%s` is not an nn.Module", last) end
end

--- get_submodule("a.b.1"): the module at a dotted name ("" is self).
function Module:get_submodule(target)
  this(self, "get_submodule")
  check.string(target, "get_submodule", "target")
  if target == "" then return self end
  for name, m in self:named_modules() do
    if name == target then return m end
  end
  -- PyTorch's 0-based path ("layer2.0.conv1"): say the 1-based one when it exists
  local shifted = ("." .. target .. "."):gsub("%.(%d+)%f[.]", function(d) return "." .. (tonumber(d) + 1) end):sub(2, -2)
  for name in self:named_modules() do
    if name == shifted and shifted ~= target then
      check.fail("get_submodule", "%s has no submodule '%s' (indices count from 1: '%s')", getmetatable(self).__name,
        target, shifted)
    end
  end
  not_a_module("get_submodule", self, target)
  check.fail("get_submodule", "%s has no submodule '%s'", getmetatable(self).__name, target)
end

--- m:_get_name(): the class name (hifi-gan's op._get_name() == 'Conv1d')
function Module:_get_name()
  this(self, "_get_name")
  return getmetatable(self).__name
end

--- m:compile([opts]): PyTorch's in-place Module.compile (wick.compile's options checked; nothing to compile)
function Module:compile(opts)
  this(self, "compile")
  wick.compile(self, opts)
end

--- m:_load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
--- error_msgs): PyTorch's: copies the module's own tensors (not its children's) from
--- state_dict[prefix .. name] and appends to the lists what is missing, unexpected (when strict) or
--- mismatched (BEiT/ConvNeXt's utils.load_state_dict walks the modules calling it). Inside
--- load_state_dict, which runs a class's override first (a renaming one) and then copies
--- everything itself, the super call reaching here does nothing.
local inside_load = 0 -- (load_state_dict running the overrides)
function Module:_load_from_state_dict(state_dict, prefix, _, strict, missing, unexpected, errors)
  this(self, "_load_from_state_dict")
  if inside_load > 0 then return end
  check.table(state_dict, "_load_from_state_dict", "state_dict")
  prefix = prefix == nil and "" or check.string(prefix, "_load_from_state_dict", "prefix")
  local own = {}
  walk(self, "", function(name, t) own[name] = t end, nil, true, true, true)
  wick.no_grad(function()
    for name, t in pairs(own) do
      local v = state_dict[prefix .. name]
      if v == nil then
        if missing then missing[#missing + 1] = prefix .. name end
      elseif not wick.is_tensor(v) or tostring(v.shape) ~= tostring(t.shape) then
        if errors then
          errors[#errors + 1] = ("size mismatch for %s: copying a param with shape %s from checkpoint, the shape in "
            .. "current model is %s."):format(prefix .. name, wick.is_tensor(v) and tostring(v.shape) or type(v), tostring(t.shape))
        end
      else
        t:copy_(v)
      end
    end
  end)
  if strict and unexpected then
    local names = {}
    for k in pairs(state_dict) do
      if type(k) == "string" and k:sub(1, #prefix) == prefix then
        local first = k:sub(#prefix + 1):match("^[^.]*")
        local ok, child = pcall(function() return self[first] end) -- (a child's keys are the child's)
        if own[k:sub(#prefix + 1)] == nil and not (ok and is_module(child)) then names[#names + 1] = k end
      end
    end
    table.sort(names)
    for _, k in ipairs(names) do unexpected[#unexpected + 1] = k end
  end
end

--- set_submodule("layer3.1.conv2", module): the module at that dotted name replaced (its parent must exist)
function Module:set_submodule(target, module, strict)
  this(self, "set_submodule")
  check.string(target, "set_submodule", "target")
  check.module(module, "set_submodule", "module")
  if type(strict) == "table" then strict = check.options(strict, "set_submodule", { strict = "boolean" }).strict end
  if strict ~= nil then check.boolean(strict, "set_submodule", "strict") end
  if target == "" then check.fail("set_submodule", "Cannot set the submodule without a target name!") end
  local parent_name, last = target:match("^(.*)%.([^.]+)$")
  if not parent_name then parent_name, last = "", target end
  local parent = self:get_submodule(parent_name)
  not_a_module("set_submodule", parent, last)
  local at = tonumber(last)
  local positional = at and at == math.floor(at) and rawlen(parent) > 0
  if strict then -- (PyTorch's strict: the name must already hold a module)
    local old = positional and parent[at] or rawget(parent, last)
    if not is_module(old) then
      check.fail("set_submodule", "%s has no attribute '%s' (strict: the submodule must exist)", getmetatable(parent).__name, last)
    end
  end
  if positional then parent[at] = module else parent[last] = module end
end

--- get_parameter("layer.weight"), get_buffer("bn.running_mean"): the parameter or buffer of that dotted name
local function named_tensor(self, fn, kind, target, named)
  this(self, fn)
  check.string(target, fn, "target")
  for name, t in named(self) do
    if name == target then return t end
  end
  local v, last = member_at(self, target) -- (PyTorch's errors for a member of another kind)
  if v ~= nil and v ~= false then
    check.fail(fn, "`%s` is not %s", last, kind == "buffer" and "a buffer" or "an nn.Parameter")
  end
  check.fail(fn, "%s has no %s '%s'", getmetatable(self).__name, kind, target)
end
function Module:get_parameter(target)
  return named_tensor(self, "get_parameter", "parameter", target, Module.named_parameters)
end
function Module:get_buffer(target) return named_tensor(self, "get_buffer", "buffer", target, Module.named_buffers) end

--- add_module(name, module) / register_module: self[name] = module.
function Module:add_module(name, module)
  this(self, "add_module")
  check.string(name, "add_module", "name")
  if name == "" then check.fail("add_module", "module name can't be empty string \"\"") end
  if name:find(".", 1, true) then check.fail("add_module", "module name can't contain \".\", got: %s", name) end
  if module ~= nil then check.module(module, "add_module", "module") end
  -- (PyTorch's: a name the module holds as something else, a parameter, a buffer, an attribute)
  local old = rawget(self, name)
  if (old ~= nil and old ~= false and not is_module(old)) or is_buffer_of(self, name) then
    check.fail("add_module", "attribute '%s' already exists", name)
  end
  if module == nil then none_module(self, name) end
  self[name] = module
end
Module.register_module = Module.add_module

--- m:__setattr__(name, value) and m:__getattr__(name): Python's own spellings of m[name] = value and
--- m[name] (DLA's self.__setattr__('level_%d' % i, tree)); reading a missing one is PyTorch's error
function Module:__setattr__(name, value)
  this(self, "__setattr__")
  check.string(name, "__setattr__", "name")
  self[name] = value
end
--- m:__delattr__(name): Python's del m.name (timm's reparameterize(): self.__delattr__('conv_kxk')),
--- m[name] = nil: the child, parameter or buffer leaves the module
function Module:__delattr__(name)
  this(self, "__delattr__")
  check.string(name, "__delattr__", "name")
  if rawget(self, name) == nil then
    check.fail("__delattr__", "'%s' object has no attribute '%s'", getmetatable(self).__name, name)
  end
  self[name] = nil
  local fields = rawget(self, "_fields")
  if fields and fields[name] then Module._forget(self, name) end -- (del: the name leaves, not PyTorch's None)
end
function Module:__getattr__(name)
  this(self, "__getattr__")
  check.string(name, "__getattr__", "name")
  local v = self[name]
  if v == nil then check.fail("__getattr__", "'%s' object has no attribute '%s'", getmetatable(self).__name, name) end
  return v
end

--- register_parameter(name, tensor): self[name] = tensor (requires grad).
function Module:register_parameter(name, tensor)
  this(self, "register_parameter")
  check.string(name, "register_parameter", "name")
  check_member_name(self, "register_parameter", "parameter", name,
    function(v) return is_tensor(v) and not is_buffer_of(self, name) end)
  check.opt_tensor(tensor, "register_parameter", "param")
  -- (a frozen parameter, nn.Parameter(t, false), stays frozen)
  if tensor ~= nil and not tensor.requires_grad and not tensor:_is_parameter() then tensor:requires_grad_(true) end
  self[name] = tensor
  if tensor == nil then -- (PyTorch's None parameter: a name in m._parameters, in its place)
    local fields = rawget(self, "_fields")
    if not fields[name] then
      fields[name] = true
      fields[#fields + 1] = name
    end
    if rawget(self, name) == nil then registry(self, "_param_names")[name] = true end
  end
  remember(self, name, tensor)
end

-- Module._forget(m, name): the field is no longer a member (PyTorch's del
-- m._parameters[name]): it leaves the field order and the buffers, so a value
-- set later with rawset (a weight recomputed each forward) is not state.
function Module._forget(self, name)
  this(self, "_forget")
  check.string(name, "Module._forget", "name")
  local fields = rawget(self, "_fields")
  if fields[name] then
    fields[name] = nil
    for i = #fields, 1, -1 do
      if fields[i] == name then table.remove(fields, i) end
    end
  end
  local buffers, params = rawget(self, "_buffer_kinds"), rawget(self, "_param_names")
  if buffers then buffers[name] = nil end
  if params then params[name] = nil end
  if none_modules[self] then none_modules[self][name] = nil end
  if seen_kinds[self] then seen_values[self][name], seen_kinds[self][name] = nil, nil end
  rawset(self, name, nil)
end

-- ---- PyTorch's private dicts: m._modules, m._parameters, m._buffers ----
-- Each is a live view of the module's own children, parameters or buffers
-- (no copy, no second record): reading a name looks it up among members();
-- writing one assigns the field (m._modules.fc = nn.Linear(...) is m.fc = ...),
-- a buffer through register_buffer; writing nil forgets it (PyTorch's del
-- m._parameters[name]). In order: view:items(), view:keys(), view:values();
-- view:get(name[, default]); #view. Under LuaJIT the view is a userdata, so
-- pairs(view) is an error instead of an empty loop (Lua 5.4: __pairs, in order).
local DICT_KIND = { _modules = "module", _parameters = "param", _buffers = "buffer" }
local view_of = setmetatable({}, { __mode = "k" }) -- view -> { module, kind name }

-- the view's entries in order: name, value
local function dict_entries(view)
  local self, which = view_of[view][1], view_of[view][2]
  local want, list = DICT_KIND[which], {}
  for _, m in ipairs(members(self)) do
    local kind = m[3] == "module" and "module" or (m[5] and "buffer") or (m[6] and "param") or nil
    if kind == want then list[#list + 1] = { m[1], m[2] } end
  end
  -- PyTorch's None entries (register_parameter(name, nil), register_buffer(name, nil),
  -- add_module(name, nil), or a member set to nil), in their fields' places
  local fields, at = rawget(self, "_fields"), {}
  local params, buffers, nones = rawget(self, "_param_names") or {}, rawget(self, "_buffer_kinds") or {},
    none_modules[self] or {}
  local any = false
  for i, key in ipairs(fields) do
    at[key] = i
    local v = rawget(self, key)
    if v == nil or v == false then
      local none = (want == "param" and params[key] == true) or (want == "module" and nones[key])
        or (want == "buffer" and (buffers[key] == true or buffers[key] == "nonpersistent"))
      if none then list[#list + 1] = { key, nil }; any = true end
    end
  end
  if any then
    for i, e in ipairs(list) do e.order = { at[e[1]:match("^[^.]*")] or 0, i } end
    table.sort(list, function(a, b) return a.order[1] < b.order[1] or (a.order[1] == b.order[1] and a.order[2] < b.order[2]) end)
  end
  return list
end

-- keys() and values() of the dicts below: arrays that a generic for also takes (check.list)
local function column(entries, i)
  local out = {}
  for j, e in ipairs(entries) do out[j] = e[i] end
  return check.list(out)
end

local function dict_get(view, key)
  for _, e in ipairs(dict_entries(view)) do
    if e[1] == key then return e[2] end
  end
end

local DICT_METHODS = {
  items = function(view) return pairs_of(dict_entries(view)) end,
  keys = function(view) return column(dict_entries(view), 1) end,
  values = function(view) return column(dict_entries(view), 2) end,
  get = function(view, key, default)
    local v = dict_get(view, key)
    if v == nil then return default end
    return v
  end,
}

local DictView = { __name = "OrderedDict" }
DictView.__index = function(view, key)
  if DICT_METHODS[key] then return DICT_METHODS[key] end
  return dict_get(view, key)
end
DictView.__newindex = function(view, key, value)
  local self, which = view_of[view][1], view_of[view][2]
  check.string(key, "Module." .. which, "name")
  if value == nil then return Module._forget(self, key) end
  local want = DICT_KIND[which]
  if want == "module" then check.module(value, "Module._modules", key)
  else check.tensor(value, "Module." .. which, key) end
  if want == "buffer" then return self:register_buffer(key, value) end
  self[key] = value
  remember(self, key, value) -- (PyTorch's dicts take it as it is)
  -- PyTorch's _parameters is a plain dict that takes any tensor: learn2learn's update_module writes
  -- p - lr * g there, a tensor of the graph, which parameters() then gives (and the forward reads)
  if want == "param" and not value:_is_parameter() then registry(self, "_param_names")[key] = true end
end
DictView.__len = function(view) return #dict_entries(view) end
DictView.__pairs = function(view) return DICT_METHODS.items(view) end
DictView.__tostring = function(view)
  local names = {}
  for _, e in ipairs(dict_entries(view)) do names[#names + 1] = e[1] end
  return ("OrderedDict(%s: %s)"):format(view_of[view][2], table.concat(names, ", "))
end

local new_view
if newproxy then -- LuaJIT: a userdata, which pairs() refuses
  local template = newproxy(true)
  for k, v in pairs(DictView) do getmetatable(template)[k] = v end
  new_view = function() return newproxy(template) end
else
  new_view = function() return setmetatable({}, DictView) end
end

-- m._forward_pre_hooks and the other hook dicts, PyTorch's OrderedDict of id -> hook, read-only:
-- conv.py's `for hook in self._forward_pre_hooks.values(): hook(self, input)` (wavenet, fairseq's
-- incremental convs running weight norm's hook by hand); empty when there are none
local HOOK_DICTS = { _forward_pre_hooks = "_forward_pre_hook_list", _forward_hooks = "_forward_hook_list",
  _backward_hooks = "_backward_hook_list", _backward_pre_hooks = "_backward_pre_hook_list" }
local HookDict = { __name = "OrderedDict" }
local function hook_dict(self, key)
  local list = rawget(self, HOOK_DICTS[key]) or {}
  local function hook_entries()
    local out = {}
    for i, h in ipairs(list) do out[i] = { h.id, h.fn } end
    return out
  end
  local d = {
    items = function() return pairs_of(hook_entries()) end,
    keys = function() return column(hook_entries(), 1) end,
    values = function() return column(hook_entries(), 2) end,
    len = function() return #list end,
  }
  for k, f in pairs(d) do d[k] = function(_, ...) return f(...) end end
  return setmetatable(d, HookDict)
end
HookDict.__len = function(d) return d:len() end
HookDict.__pairs = function(d) return d:items() end
HookDict.__newindex = function() check.fail("Module", "a hook dict is read-only here: register hooks with register_forward_hook and the like") end

-- the view for m._modules, m._parameters or m._buffers, or a hook dict (nil for another name)
function Module._private_dict(self, key)
  if key == "__class__" then return getmetatable(self) end -- (layer.__class__.__name__)
  if HOOK_DICTS[key] then return hook_dict(self, key) end
  if not DICT_KIND[key] then return nil end
  local view = new_view()
  view_of[view] = { self, key }
  return view
end

local training_now = setmetatable({}, { __mode = "k" })
function Module:train(mode)
  this(self, "train")
  if type(mode) == "table" and getmetatable(mode) == nil then mode = check.options(mode, "train", { mode = "boolean" }).mode end
  mode = check.opt_boolean(mode, "train", "mode", true)
  -- PyTorch's: this module's flag, then each child's own train(mode), so a
  -- child class's override runs (loralib's merge on eval, a frozen norm)
  if training_now[self] then return self end -- (a module reachable from itself)
  training_now[self] = true
  rawset(self, "training", mode)
  local ok, err = pcall(function()
    for _, c in self:named_children() do c:train(mode) end
  end)
  training_now[self] = nil
  if not ok then error(err, 0) end
  return self
end

function Module:eval() return this(self, "eval"):train(false) end

--- zero_grad([set_to_none = true]): drops the gradients (or zeroes them in place).
function Module:zero_grad(set_to_none)
  this(self, "zero_grad")
  -- PyTorch's zero_grad(set_to_none=True): by position or in an options table
  local o = check.positional("zero_grad", { "set_to_none" }, { set_to_none = "boolean" }, set_to_none)
  set_to_none = o.set_to_none ~= false
  for _, p in ipairs(self:parameters()) do
    if set_to_none then p.grad = nil
    elseif p.grad then wick.no_grad(function() p.grad:zero_() end) end
  end
end


--- model:to(device | dtype | {device =, dtype =}): moves every parameter, buffer
--- and gradient in place (same Lua objects, new storage) and returns model.
--- One call into C (core.tensors_to, wick_tensors_to_ in src/core/tensor.c):
--- the device crosses as its number, each tensor moves once, all copies are
--- made before any tensor changes (a failure moves nothing), and the move
--- waits for a GPU once, not once per tensor.
-- (memory_format: checked, and a hint only here: parameters keep their layout)
local TO_OPTIONS = { device = "device", dtype = "dtype", non_blocking = "boolean", memory_format = "string" }
local tensors_to = core.tensors_to
local moved
--- m:to_empty({device = d[, recurse = true]}) (or m:to_empty(d)): every parameter
--- and buffer becomes uninitialized memory of its shape and dtype on d, keeping
--- its identity (PyTorch's: a model built on meta made real, then filled by
--- load_state_dict or an init)
function Module:to_empty(opts)
  this(self, "to_empty")
  if type(opts) ~= "table" or getmetatable(opts) ~= nil then opts = { device = opts } end
  local o = check.options(opts, "to_empty", { device = "device", recurse = "boolean" })
  if o.device == nil then check.fail("to_empty", "missing required argument 'device'") end
  local recurse = o.recurse ~= false
  wick.no_grad(function()
    for _, list in ipairs({ self:parameters(recurse), self:buffers(recurse) }) do
      for _, t in ipairs(list) do t:set_(wick.empty(t.shape, { dtype = t.dtype, device = o.device })) end
    end
  end)
  return self
end

--- m:_apply(fn[, recurse = true]): PyTorch's engine of to(), float(), cuda(): each child's
--- _apply(fn), then each own parameter and buffer takes fn(t)'s data in place (its grad fn's
--- too), keeping its identity. A class may override it (timm's Attention2d clears a cached
--- bias, then super()._apply(fn)): m:to() and its kin go through the tree's overrides.
function Module:_apply(fn, recurse)
  this(self, "_apply")
  check.callable(fn, "_apply", "fn")
  if recurse ~= false then
    for _, child in self:named_children() do child:_apply(fn) end
  end
  local own = {}
  walk(self, "", function(_, t) own[#own + 1] = t end, nil, nil, true, true)
  wick.no_grad(function()
    for _, t in ipairs(own) do
      local r = fn(t)
      if r ~= t then -- (a function that converts in place returns t itself: Module:to's)
        check.tensor(r, "_apply", "fn(t)")
        local g = t.grad
        local rg = g ~= nil and fn(g) or nil -- (before any change: a failing fn leaves t as it was)
        t.grad = nil
        local ok, err = pcall(t._replace, t, r)
        if not ok then t.grad = g; error(err, 0) end -- (the gradient back where the swap failed)
        t.grad = rg
      end
    end
  end)
  return self
end
local function applies_overridden(self)
  for _, m in self:named_modules() do
    if m._apply ~= Module._apply then return true end
  end
  return false
end

function Module:to(...)
  this(self, "to")
  local device, dtype, non_blocking
  for i = 1, select("#", ...) do
    local a = select(i, ...)
    if type(a) == "string" and (wick._dtype_info[a] or core.dtype_aliases[a]) then dtype = core.dtype_aliases[a] or a
    elseif type(a) == "table" and getmetatable(a) == nil then
      check.options(a, "Module:to", TO_OPTIONS)
      wick._memory_format(a.memory_format, "Module:to")
      device, dtype = a.device or device, a.dtype or dtype
      if a.non_blocking ~= nil then non_blocking = a.non_blocking end
    elseif type(a) == "string" or type(a) == "number" or getmetatable(a) == wick.Device then device = a
    elseif wick.is_tensor(a) then -- PyTorch's module.to(tensor): its device, and its dtype when floating
      device = a.device
      if a:is_floating_point() or a:is_complex() then dtype = a.dtype end
    elseif a ~= nil then check.expected("Module:to", "device", "a device, a dtype, a tensor or an options table", a) end
  end
  local code = device ~= nil and wick.device(device)._code or nil
  return moved(self, code, dtype, non_blocking, false)
end
-- model:to's moves, all in one crossing (or each tensor on its own through a class's own _apply, as
-- PyTorch's); floating_only: m:double() and its kin, which leave complex tensors as they are (PyTorch's
-- to(dtype) casts them too: complex to real with its warning, real to complex with its own)
-- (a tensor attribute assigned in init, an implicit non-persistent buffer, moves to the device but keeps
-- its dtype: PyTorch's casts touch parameters and registered buffers only, so MeshGraphNets' float32
-- accumulation counter stays float32 under m:half(), where float16 would overflow at 65504)
function moved(self, code, dtype, non_blocking, floating_only)
  local list, n, implicit = {}, 0, {}
  walk(self, "", function(_, t, _, _, is_implicit)
    if dtype and is_implicit then
      if code then implicit[#implicit + 1] = t end
    elseif not floating_only or t:is_floating_point() then n = n + 1; list[n] = t end
  end, nil, nil, true)
  if #implicit > 0 then tensors_to(implicit, code, nil, non_blocking) end
  local common = require("wick.nn.common")
  if dtype and not floating_only and dtype:match("^complex") then
    common.warn("Complex modules are a new feature under active development whose design may change, and some "
      .. "modules might not work as expected when using complex tensors as parameters or buffers.")
  end
  local made_real = 0
  if applies_overridden(self) then
    local keep = {}
    for i = 1, n do keep[list[i]] = true end
    self:_apply(function(t)
      if keep[t] then made_real = made_real + tensors_to({ t }, code, dtype, non_blocking) end
      return t
    end)
  else
    made_real = tensors_to(list, code, dtype, non_blocking)
  end
  if made_real > 0 then common.warn("Module:to: Casting complex values to real discards the imaginary part") end
  return self
end

function Module:cuda(index)
  this(self, "cuda")
  return Module.to(self, check.opt_int(index, "Module:cuda", "device", nil, 0) and wick.device("cuda", index) or "cuda")
end
-- (Module.to, not self:to: a class's own `to` is not these, as PyTorch's go through _apply; ELECTRA's
-- `to` override returns nothing, and model:double() still returns the model)
function Module:cpu() return Module.to(this(self, "cpu"), "cpu") end
function Module:float() return moved(this(self, "float"), nil, "float32", nil, true) end
function Module:double() return moved(this(self, "double"), nil, "float64", nil, true) end
function Module:half() return moved(this(self, "half"), nil, "float16", nil, true) end
function Module:bfloat16() return moved(this(self, "bfloat16"), nil, "bfloat16", nil, true) end
--- m:share_memory(): PyTorch's for multiprocessing; here m itself (one process)
function Module:share_memory() return this(self, "share_memory") end
--- m:type(dst_type): PyTorch's Module.type: every parameter and buffer cast to dst_type (a dtype, or
--- PyTorch's type name "torch.DoubleTensor"), integer buffers too, in place; returns m
function Module:type(dst_type)
  this(self, "type")
  if type(dst_type) ~= "string" then check.expected("type", "dst_type", "a dtype or a type name", dst_type) end
  return self:_apply(function(t) return t:type(dst_type) end)
end

-- ---- state dict hooks ----
-- Each module's hooks of one kind with its prefix ("" or "layers.1.attn."),
-- in named_modules order: fn(module, prefix, hook) for each.
local function each_hook(self, key, fn)
  for name, m in self:named_modules() do
    local list = rawget(m, key)
    if list then
      for _, e in ipairs({ unpack(list) }) do fn(m, name == "" and "" or name .. ".", e) end
    end
  end
end

--- m:register_state_dict_post_hook(fn) (and PyTorch's private spelling
--- _register_state_dict_hook): fn(module, state_dict, prefix, local_metadata)
--- after state_dict() has the module's entries; a table it returns replaces the
--- state dict. m:register_load_state_dict_pre_hook(fn): fn(module, state_dict,
--- prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
--- before load_state_dict reads the state dict, which the hook may change (a
--- checkpoint's wq/wk/wv merged into wqkv); _register_load_state_dict_pre_hook
--- (fn[, with_module = false]) is PyTorch's private form, without the module
--- unless with_module. m:register_load_state_dict_post_hook(fn):
--- fn(module, incompatible_keys) after loading, before strict's check, so it
--- may clear the key lists. Each returns a handle with :remove().
function Module:register_state_dict_post_hook(fn)
  return add_hook(this(self, "register_state_dict_post_hook"), "_state_dict_hooks", fn, "register_state_dict_post_hook")
end
Module._register_state_dict_hook = Module.register_state_dict_post_hook
--- m:register_state_dict_pre_hook(fn): fn(module, prefix, keep_vars) before state_dict() collects that module's tensors
function Module:register_state_dict_pre_hook(fn)
  return add_hook(this(self, "register_state_dict_pre_hook"), "_state_dict_pre_hooks", fn, "register_state_dict_pre_hook")
end
function Module:register_load_state_dict_pre_hook(fn)
  return add_hook(this(self, "register_load_state_dict_pre_hook"), "_load_pre_hooks", fn,
    "register_load_state_dict_pre_hook")
end
function Module:_register_load_state_dict_pre_hook(fn, with_module)
  this(self, "_register_load_state_dict_pre_hook")
  check.callable(fn, "_register_load_state_dict_pre_hook", "hook")
  with_module = check.opt_boolean(with_module, "_register_load_state_dict_pre_hook", "with_module", false)
  if with_module then return self:register_load_state_dict_pre_hook(fn) end
  return self:register_load_state_dict_pre_hook(function(_, ...) return fn(...) end)
end
function Module:register_load_state_dict_post_hook(fn)
  return add_hook(this(self, "register_load_state_dict_post_hook"), "_load_post_hooks", fn,
    "register_load_state_dict_post_hook")
end

--- state_dict([destination[, prefix = ""[, keep_vars = false]]]) (each also an
--- option): name -> tensor, sharing storage with the module and cut from the
--- graph unless keep_vars, names under prefix, into destination when given.
local STATE_DICT = { destination = "table", prefix = "string", keep_vars = "boolean" }
-- PyTorch's state dict metadata (its _metadata): each module's {version = m._version} by its name
-- without the dot, which load_state_dict hands a class's _load_from_state_dict and the hooks as
-- local_metadata (torchvision's MaskRCNNHeads converting checkpoints older than its version 2); a
-- state dict made elsewhere (a plain table, a copy) has none, and they get {} as PyTorch's do
Module._version = 1
--- m:get_extra_state() / m:set_extra_state(state): PyTorch's hooks for state beyond tensors (a class
--- defines both): state_dict stores get_extra_state()'s value under "<prefix>_extra_state" and
--- load_state_dict hands it back to set_extra_state (strict: its absence is a missing key)
function Module:get_extra_state()
  wick.error("Reached a code path in Module.get_extra_state() that should never be called. Please file an issue "
    .. "at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml to report this bug.")
end
function Module:set_extra_state()
  wick.error("Reached a code path in Module.set_extra_state() that should never be called. Please file an issue "
    .. "at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml to report this bug.")
end
-- the modules whose class defines get_extra_state (or set_extra_state), by their key in a state dict
local function extra_states(self, prefix, which)
  local out = {}
  for name, m in self:named_modules() do
    if m[which] ~= Module[which] then out[prefix .. (name == "" and "" or name .. ".") .. "_extra_state"] = m end
  end
  return out
end
local metadata_of = setmetatable({}, { __mode = "k" })
local function local_metadata(md, prefix) return md and md[prefix:sub(1, -2)] or {} end

function Module:state_dict(...)
  this(self, "state_dict")
  local o = check.positional("state_dict", { "destination", "prefix", "keep_vars" }, STATE_DICT, ...)
  local sd, prefix = o.destination, o.prefix or ""
  if sd == nil then sd = ordered.new() end -- (which keeps the order names are set in)
  local md = metadata_of[sd] or {}
  metadata_of[sd] = md
  for name, m in self:named_modules() do
    md[(prefix .. (name == "" and "" or name .. ".")):sub(1, -2)] = { version = m._version }
  end
  each_hook(self, "_state_dict_pre_hooks", function(m, at, e) e.fn(m, prefix .. at, o.keep_vars == true) end)
  -- a tensor under two names (tied weights) is stored under both, as in PyTorch; a tensor init
  -- assigned without registering it is left out, as PyTorch leaves out a plain attribute
  -- (a module's _extra_state after its own tensors and before its children's, PyTorch's
  -- _save_to_state_dict before the recursion)
  walk(self, prefix, function(name, t, _, _, plain)
    if plain then return end
    sd[name] = o.keep_vars and t or t:detach()
  end, nil, true, true, nil, nil, function(m, at)
    if m.get_extra_state ~= Module.get_extra_state then sd[at .. "_extra_state"] = m:get_extra_state() end
  end)
  each_hook(self, "_state_dict_hooks", function(m, at, e)
    local r = e.fn(m, sd, prefix .. at, local_metadata(md, prefix .. at))
    if type(r) == "table" then
      if r ~= sd and metadata_of[r] == nil then metadata_of[r] = md end
      sd = r
    end
  end)
  if o.destination == nil and ordered.is(sd) then ordered.mark_module_state(sd) end
  return sd
end

-- load_state_dict's result prints as PyTorch's
local IncompatibleKeys = { __name = "_IncompatibleKeys" }
IncompatibleKeys.__tostring = function(r)
  if #r.missing_keys == 0 and #r.unexpected_keys == 0 then return "<All keys matched successfully>" end
  return ("_IncompatibleKeys(missing_keys=%s, unexpected_keys=%s)"):format(tostring(check.list(r.missing_keys)),
    tostring(check.list(r.unexpected_keys)))
end

-- A state dict with PyTorch's 0-based child indices ("0.weight", torch.save of
-- a Sequential, "blocks.0.attn..." of a partial checkpoint loaded with strict
-- = false): renamed when the renamed keys fit more of the module's tensors
-- (name and shape) than the keys as they are, or as many with a 0 among the
-- indices (which wick's names never have). Else left as it is (and
-- load_state_dict's checks speak).
local function fitting(sd, own)
  local n = 0
  for k, v in pairs(sd) do
    local t = own[k]
    if t ~= nil and wick.is_tensor(v) and tostring(v.shape) == tostring(t.shape) then n = n + 1 end
  end
  return n
end
-- (hooked: load pre hooks will rewrite the keys, so a 0 index decides even
-- when no key fits yet)
local function pytorch_named(model, sd, own, hooked)
  local ok, renamed = pcall(require("wick.nn.utils").from_pytorch_names, sd, model)
  if not ok then return sd end
  local as_is, as_renamed = fitting(sd, own), fitting(renamed, own)
  if as_renamed > as_is then return renamed end
  if as_renamed == as_is and (as_renamed > 0 or hooked) then
    for k in pairs(sd) do
      if ("." .. k .. "."):find("%.0%.") then return renamed end
    end
  end
  return sd
end

-- A whole module that torch.save pickled (torch.save(model, f), read by wick.load(f, {weights_only =
-- false}): its __class__, _parameters, _buffers and _modules) as the state dict PyTorch's
-- model.state_dict() gives: parameters, persistent buffers, then each child's under its name
-- (word_language_model's torch.save(model, f) ... model = torch.load(f)); nil for anything else
local function pickled_module(v)
  return type(v) == "table" and type(rawget(v, "__class__")) == "string" and type(rawget(v, "_modules")) == "table"
    and type(rawget(v, "_parameters")) == "table"
end
local function pickled_state(obj, prefix, out, depth)
  if depth > 200 then wick.error("load_state_dict: a pickled module nested over 200 levels deep") end
  local transient = {}
  for _, name in pairs(type(obj._non_persistent_buffers_set) == "table" and obj._non_persistent_buffers_set or {}) do
    transient[name] = true
  end
  local function each(t, skip)
    local names = ordered.is(t) and ordered.names(t) or {}
    for _, k in ipairs(names) do
      if is_tensor(t[k]) and not (skip and skip[k]) then out[prefix .. k] = t[k] end
    end
  end
  each(obj._parameters)
  if type(obj._buffers) == "table" then each(obj._buffers, transient) end
  for _, k in ipairs(ordered.is(obj._modules) and ordered.names(obj._modules) or {}) do
    if pickled_module(obj._modules[k]) then pickled_state(obj._modules[k], prefix .. k .. ".", out, depth + 1) end
  end
  return out
end

--- load_state_dict(sd[, {strict = true}]): copies values into the existing tensors.
local LOAD_OPTIONS = { strict = "boolean", assign = "boolean" }
function Module:load_state_dict(sd, ...)
  this(self, "load_state_dict")
  check.table(sd, "load_state_dict", "state_dict")
  if pickled_module(sd) then sd = pickled_state(sd, "", ordered.new(), 0) end
  -- strict by position (PyTorch's load_state_dict(sd, False)) or as an option;
  -- assign = false is what this does (copies into the existing tensors)
  local opts = check.positional("load_state_dict", { "strict", "assign" }, LOAD_OPTIONS, ...)
  local strict, assign = opts.strict ~= false, opts.assign == true
  -- (a tensor that init assigned without registering it is state, but a
  -- PyTorch checkpoint does not have it: its absence is not an error)
  local own, order, needed, implicit, reshaped = {}, {}, {}, {}, {}
  walk(self, "", function(name, t, _, _, plain)
    own[name] = t
    order[#order + 1] = name
    if plain then implicit[name] = true else needed[#needed + 1] = name end
  end, nil, true, true)
  local pre = {}
  each_hook(self, "_load_pre_hooks", function(m, prefix, e) pre[#pre + 1] = { m, prefix, e.fn } end)
  -- a class's own _load_from_state_dict(state_dict, prefix, local_metadata, strict, missing, unexpected,
  -- errors) (torchvision's FrozenBatchNorm2d dropping num_batches_tracked) runs as PyTorch runs it, before
  -- the copy, which Module._load_from_state_dict (what its super call reaches) leaves to this function
  for name, m in self:named_modules() do
    local f = m._load_from_state_dict
    if f ~= Module._load_from_state_dict then
      pre[#pre + 1] = { m, name == "" and "" or name .. ".", function(mod, ...) return f(mod, ...) end }
    end
  end
  local given = sd
  sd = pytorch_named(self, sd, own, #pre > 0)
  local missing, unexpected, mismatched = {}, {}, {}
  if #pre > 0 then -- (the hooks change a copy, as PyTorch's, never the caller's table: an OrderedDict, sd:pop() there)
    local copy, names = ordered.new()
    local before = {}
    local keys = ordered.is(sd) and ordered.names(sd) or nil
    if not keys then
      keys = {}
      for k in pairs(sd) do keys[#keys + 1] = k end
      table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    end
    for _, k in ipairs(keys) do copy[k], before[k], names[#names + 1] = sd[k], true, k end
    sd = copy
    inside_load = inside_load + 1
    local md = metadata_of[given]
    local ok, err = pcall(function()
      for _, h in ipairs(pre) do
        h[3](h[1], sd, h[2], local_metadata(md, h[2]), strict, missing, unexpected, mismatched)
      end
    end)
    inside_load = inside_load - 1
    if not ok then error(err, 0) end
    -- the keys a hook wrote under PyTorch's 0-based names (a literal port of MaskRCNNHeads's
    -- mask_fcn1.weight -> 0.0.weight), renamed as the checkpoint's own were
    local added = {}
    for k, v in pairs(sd) do if not before[k] and own[k] == nil then added[k] = v end end
    local renamed = next(added) ~= nil and pytorch_named(self, added, own, false) or added
    if renamed ~= added then
      for k in pairs(added) do sd[k] = nil end
      for k, v in pairs(renamed) do sd[k] = v end
    end
  end
  for _, name in ipairs(order) do
    local v = sd[name]
    if v == nil then
      -- a batch norm's num_batches_tracked absent from a plain state dict
      -- (checkpoints older than it, a filtered dict) keeps its value, as
      -- PyTorch's _BatchNorm fills it in
      local nbt = name == "num_batches_tracked" or name:sub(-20) == ".num_batches_tracked"
      if not implicit[name] and not nbt then missing[#missing + 1] = name end
    else
      local t = own[name]
      if not wick.is_tensor(v) then
        mismatched[#mismatched + 1] = ('value for "%s" is a %s, not a tensor'):format(name, type(v))
      elseif tostring(v.shape) ~= tostring(t.shape) and implicit[name] then
        reshaped[name] = true -- an attribute init set, later made anew (YOLOv3's grid): it takes the saved one
      elseif tostring(v.shape) ~= tostring(t.shape) then
        mismatched[#mismatched + 1] = ("size mismatch for %s: copying a param with shape %s from checkpoint, the shape in current model is %s.")
          :format(name, tostring(v.shape), tostring(t.shape))
      elseif t.is_meta and not v.is_meta and not assign then -- (PyTorch's warning, once per line)
        require("wick.nn.common").warn(("load_state_dict: copying into %s, on the meta device (no data), is a no-op; load with {assign = true} to take the checkpoint's tensors"):format(name))
      end
    end
  end
  -- extra state (get_extra_state / set_extra_state): its key is the module's, not unexpected
  local extra = extra_states(self, "", "set_extra_state")
  local extra_keys = {}
  for k in pairs(extra) do extra_keys[#extra_keys + 1] = k end
  table.sort(extra_keys)
  for _, k in ipairs(extra_keys) do if sd[k] == nil then missing[#missing + 1] = k end end
  local keys = {}
  for k in pairs(sd) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  for _, k in ipairs(keys) do if own[k] == nil and extra[k] == nil then unexpected[#unexpected + 1] = k end end
  local function quoted(list)
    local q = {}
    for i, k in ipairs(list) do q[i] = ('"%s"'):format(k) end
    return table.concat(q, ", ")
  end
  -- raises if anything is wrong (the key lists only when strict), as PyTorch's
  local function check_problems()
    local problems = {}
    if strict and #missing > 0 then problems[#problems + 1] = "Missing key(s) in state_dict: " .. quoted(missing) .. "." end
    if strict and #unexpected > 0 then problems[#problems + 1] = "Unexpected key(s) in state_dict: " .. quoted(unexpected) .. "." end
    for _, m in ipairs(mismatched) do problems[#problems + 1] = m end
    if #problems == 0 then return end
    local msg = ("Error(s) in loading state_dict for %s:\n\t%s"):format(getmetatable(self).__name, table.concat(problems, "\n\t"))
    -- a hint when every key differs only by DataParallel's prefix
    local prefixed = 0
    for _, k in ipairs(keys) do if type(k) == "string" and k:sub(1, 7) == "module." and own[k:sub(8)] then prefixed = prefixed + 1 end end
    if prefixed > 0 and prefixed == #keys then
      msg = msg .. "\n\tThe checkpoint's keys carry a 'module.' prefix (a DataParallel model): load wick.nn.utils.strip_prefix(sd, 'module.')"
    end
    -- renamed as PyTorch's 0-based names though some keys were wick's own: a merge of both (Tacotron2's
    -- dummy_dict = model.state_dict(); dummy_dict.update(model_dict) of a PyTorch checkpoint)
    -- (an unexpected key naming a child by index: one shifted past the last; not a stray "pix")
    local shifted = false
    for _, k in ipairs(unexpected) do
      shifted = shifted or (type(k) == "string" and (k:find("^%d+%.") or k:find("%.%d+%.")) ~= nil)
    end
    local merged = #needed > 0 -- (every name of the model's own there as it is: model:state_dict()'s keys)
    for _, name in ipairs(needed) do merged = merged and given[name] ~= nil end
    if sd ~= given and shifted and merged then
      msg = msg .. "\n\tThe keys were renamed from PyTorch's 0-based child indices (the ones above are renamed), "
        .. "but some were wick's 1-based names already: a PyTorch state dict merged into model:state_dict()? "
        .. "Rename the PyTorch one first, nn.utils.from_pytorch_names(sd, model), then merge"
    elseif sd ~= given and shifted then
      msg = msg .. "\n\tThe keys above are renamed from the checkpoint's 0-based child indices (its x.0 is x.1 "
        .. "here): the model has fewer children there than the checkpoint"
    end
    wick.error(msg)
  end
  -- nothing is loaded when the load would fail, unless a post hook may still
  -- clear the key lists (PyTorch's order: load, post hooks, strict's check)
  local post = {}
  each_hook(self, "_load_post_hooks", function(m, _, e) post[#post + 1] = { m, e.fn } end)
  if #mismatched > 0 or #post == 0 then check_problems() end
  wick.no_grad(function()
    for _, name in ipairs(order) do
      local v = sd[name]
      -- assign: the module's tensor takes the checkpoint's (its storage,
      -- dtype and device) and keeps its identity and requires_grad, as
      -- PyTorch's assign = True keeps the Parameter's requires_grad
      if v ~= nil then
        if assign then own[name]:_replace(v) -- (v's dtype too, as t.data = v)
        elseif reshaped[name] then own[name]:set_(v:to({ dtype = own[name].dtype, device = own[name].device }):clone())
        else own[name]:copy_(v) end
      end
    end
  end)
  for _, k in ipairs(extra_keys) do if sd[k] ~= nil then extra[k]:set_extra_state(sd[k]) end end
  -- PyTorch's named tuple: r.missing_keys and r.unexpected_keys, and
  -- `local missing, unexpected = m:load_state_dict(sd, false)` (the result's
  -- array part is the missing keys; the unexpected ones come second)
  local result = setmetatable({ missing_keys = check.list(missing), unexpected_keys = check.list(unexpected) },
    IncompatibleKeys)
  for _, h in ipairs(post) do h[2](h[1], result) end
  check_problems()
  for i, k in ipairs(result.missing_keys) do result[i] = k end
  return result, result.unexpected_keys
end

--- The module tree, like PyTorch's repr.
-- Python's repr of a value: True/False, None, 'text', (a, b) and (a,) for an
-- array, integers without a point, other numbers in the fewest digits that
-- read back the same (1e-05).
local function py(v)
  local t = type(v)
  if v == nil then return "None" end
  if t == "boolean" then return v and "True" or "False" end
  if t == "string" then return "'" .. v .. "'" end
  if t == "number" then
    if v ~= v then return "nan" end
    if v == math.huge or v == -math.huge then return v > 0 and "inf" or "-inf" end
    if v == floor(v) and math.abs(v) < 2 ^ 53 then return ("%d"):format(v) end
    return check.shortest(v)
  end
  if t == "table" and getmetatable(v) == nil then
    local n = 0
    for k in pairs(v) do if type(k) == "number" and k > n then n = k end end
    local parts = {}
    for i = 1, n do parts[i] = py(v[i]) end
    return "(" .. table.concat(parts, ", ") .. (n == 1 and ",)" or ")")
  end
  return tostring(v)
end
Module._py = py

--- extra_repr(): the class's `_repr`, a list of field names, as PyTorch's
--- "name=value, ..." ("name?": only when the field is true, as "inplace=True");
--- a class may define extra_repr itself instead.
function Module:extra_repr()
  local names = self._repr
  if not names then return "" end
  local parts = {}
  -- "name?": only when set; "name#": a Python float (1.0, not 1); "name,": a number as the 1-tuple
  -- PyTorch's _single keeps (AvgPool1d's kernel_size=(4,))
  for _, entry in ipairs(names) do
    local name, flags = entry:match("^([^?#,]*)([?#,]*)$")
    local v = self[name]
    if not flags:find("?", 1, true) or v then
      local text = py(flags:find(",", 1, true) and type(v) == "number" and { v } or v)
      if flags:find("#", 1, true) and type(v) == "number" and text:match("^%-?%d+$") then text = text .. ".0" end
      parts[#parts + 1] = name .. "=" .. text
    end
  end
  return table.concat(parts, ", ")
end

local printing_now = setmetatable({}, { __mode = "k" }) -- the modules being printed (a child reaching back)
local module_repr
local function default_repr(self)
  local class = getmetatable(self)
  if printing_now[self] then return class.__name .. "(...)" end -- (a table's reference back to a parent)
  printing_now[self] = true
  local ok, r = pcall(module_repr, self, class.__name)
  printing_now[self] = nil
  if not ok then error(r, 0) end
  return r
end
--- m:__repr__(): the text print shows, PyTorch's __repr__ (a class's own __repr__ may call a child's:
--- deepspeech's SequenceWise does `tmpstr += self.module.__repr__()`).
function Module:__repr__()
  this(self, "__repr__")
  return default_repr(self)
end
function Module:__tostring()
  this(self, "__tostring")
  local repr = getmetatable(self).__repr__ -- a class of one's own may say it all, as Python's __repr__ (pygcn's layer)
  if type(repr) == "function" and repr ~= Module.__repr__ then return tostring(repr(self)) end
  return default_repr(self)
end
function module_repr(self, name)
  -- PyTorch's layout: the extra repr alone on the line when there are no
  -- children, else its lines and the children's, indented
  local extra = self:extra_repr()
  local lines = {}
  if extra ~= "" then
    for line in (extra .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = line end
  end
  local children = 0
  -- (a ModuleList's false entries, Python's None, print as PyTorch's "(2): None" in their place;
  -- a ParameterList's are in its extra_repr)
  local n_array, next_at = self._parameter_array and 0 or rawlen(self), 1
  local function nones_before(limit)
    for i = next_at, limit - 1 do
      if rawget(self, i) == false then children = children + 1; lines[#lines + 1] = ("(%d): None"):format(i) end
    end
    next_at = math.max(next_at, limit)
  end
  for _, m in ipairs(members(self)) do
    if m[3] == "module" then
      local at = tonumber(m[1])
      if at and at <= n_array and rawget(self, at) == m[2] then nones_before(at); next_at = at + 1 end
      children = children + 1
      lines[#lines + 1] = ("(%s): %s"):format(m[1], (tostring(m[2]):gsub("\n", "\n  ")))
    end
  end
  nones_before(n_array + 1)
  if #lines == 0 then return name .. "()" end
  if children == 0 and #lines == 1 then return ("%s(%s)"):format(name, lines[1]) end
  return ("%s(\n  %s\n)"):format(name, table.concat(lines, "\n  "))
end

Module._members = members
Module._track = track
-- (an optimizer's or a scheduler's init of one's own binds keywords the same way: wick.optim)
--- Class:include(Mixin, ...): Python's further bases (wick.nn.common.include)
Module.include = require("wick.nn.common").include
require("wick.nn.common").bind_keywords = bind_keywords
require("wick.nn.common").of_wick = of_wick
require("wick.nn.common").keyword_method = keyword_method -- (wick.Object's methods bind keywords the same way)
require("wick.nn.common").undecorated = undecorated
--- common.unwrapped(f): the function a class's method wrapper (keyword binding) or a decorator wraps, innermost
require("wick.nn.common").unwrapped = function(f)
  while wick._decorated[f] or wrapped[f] do f = wick._decorated[f] or wrapped[f] end
  return f
end
require("wick.nn.common").static_method = static_method
return Module
