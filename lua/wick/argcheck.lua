-- wick.argcheck: the argument checks of wick's public Lua functions.
--
-- Every check raises through core.error (src/lua/args.c, wl_raise), which
-- prefixes the message with the position of the first stack frame outside
-- wick's own Lua files: the user's line. Messages follow PyTorch's where it
-- has one: "Linear: expected an integer for argument 'in_features', got string".
-- The checks are plain type tests, cheap enough for forward calls.
local core = require("wick.core")

local raise = core.error
local tensor_mt = core._mt
local type, getmetatable, rawget, tostring, floor, huge = type, getmetatable, rawget, tostring, math.floor, math.huge
local unpack = table.unpack or unpack -- luacheck: ignore (LuaJIT's global)

local C = {}

local DTYPES = {}
for _, d in ipairs(core.dtypes) do DTYPES[d] = true end

--- The one test of "is a module" (an instance of nn.Module or a subclass):
--- a table with a metatable (its class) holding the module's own field list.
--- Module classes (nn.Linear itself) are not modules. Everyone asks this one.
local function is_module(v)
  return type(v) == "table" and getmetatable(v) ~= nil and type(rawget(v, "_fields")) == "table"
end
C.is_module = is_module

--- What a value is, for messages: "Tensor", a module's class name, "nan",
--- the number itself, or the Lua type.
local function describe(v)
  local t = type(v)
  if t == "number" then
    if v ~= v then return "nan" end
    return tostring(v)
  end
  if t == "userdata" and getmetatable(v) == tensor_mt then return "Tensor" end
  if is_module(v) then return getmetatable(v).__name or "table" end
  if t == "table" and getmetatable(v) and rawget(getmetatable(v), "__name") == "Size" then return "a Size " .. tostring(v) end
  if t == "table" and C.is_array(v) and getmetatable(rawget(v, 1)) == tensor_mt and tensor_mt ~= nil then
    return ("a table of %d tensors (split, chunk, unbind and LSTMCell give one table: unpack(...) it, or index it)"):format(#v)
  end
  return t
end
C.describe = describe

--- Raises "fn: message" at the user's line.
function C.fail(fn, fmt, ...)
  raise(fn .. ": " .. (select("#", ...) > 0 and fmt:format(...) or fmt))
end

local function expected(fn, arg, what, v)
  raise(("%s: expected %s for argument '%s', got %s"):format(fn, what, arg, describe(v)))
end
C.expected = expected

function C.is_tensor(v) return getmetatable(v) == tensor_mt end

--- check.list(t): the array t, which a generic for also takes directly, as Python's for over a
--- generator (`for p in model:parameters() do`, `for m in model:modules() do`), besides ipairs;
--- list[-1] is the last entry, list[{a, b}] the entries a..b inclusive (negative from the end,
--- as a tensor's range: Python's list(m.children())[:-1] is m:children()[{{1, -2}}]).
--- check.is_array(v): a plain table or such a list, where a function takes an array.
local LIST_HINT = "split, chunk, unbind and LSTMCell give one table, not several results (Python's "
  .. "`a, b = x.chunk(2)` is `local a, b = x:chunk(2):unpack()`, or index it: parts[1], parts[-1] the last)"
local list_pos = setmetatable({}, { __mode = "k" })
-- a tensor's fields, read from a list of tensors: a ported `chosen, rejected = x.chunk(2)` reading chosen.shape
local TENSOR_FIELDS = { shape = true, dtype = true, device = true, ndim = true, requires_grad = true, grad = true,
  grad_fn = true, is_leaf = true, is_cuda = true, data = true, T = true, mT = true, H = true, mH = true, real = true,
  imag = true, layout = true }
local list_mt = { __call = function(list, _, prev)
  local i = list_pos[list]
  if prev == nil then i = 1
  elseif i and rawget(list, i) == prev then i = i + 1
  else -- (another loop over the same list moved the position: find prev)
    i = 1
    while rawget(list, i) ~= nil and rawget(list, i) ~= prev do i = i + 1 end
    i = i + 1
  end
  list_pos[list] = i
  return rawget(list, i)
end }
-- parts:unpack(): the entries as several values (`local a, b = x:chunk(2):unpack()`, as t:unpack())
local function list_unpack(list) return unpack(list, 1, #list) end
list_mt.__index = function(list, k)
  local n = #list
  if type(k) == "number" then
    if k == 0 then raise("a list's index 0: lists count from 1 (Python's list(...)[0] is [1], [-1] the last)") end
    return k < 0 and rawget(list, n + k + 1) or nil
  end
  if k == "unpack" then return list_unpack end
  if type(k) == "string" and k ~= "iter" and type(rawget(core.Tensor, k)) == "function" -- (iter: what an iterable is asked)
    and getmetatable(rawget(list, 1)) == tensor_mt then
    raise(("a table of %d tensors has no method '%s': %s"):format(n, k, LIST_HINT))
  end
  if TENSOR_FIELDS[k] and getmetatable(rawget(list, 1)) == tensor_mt then
    raise(("a table of %d tensors has no field '%s': %s"):format(n, k, LIST_HINT))
  end
  if type(k) ~= "table" then return nil end
  -- Python's out[:3], out[3:] (a wick.slice: 0-based start, stop excluded, a step), also as {wick.slice(...)}
  local sl = C.is_slice(k) and k or (#k == 1 and C.is_slice(k[1]) and k[1]) or nil
  if sl then
    local first, last, step = C.slice_range(sl, n, "list")
    local out = {}
    for i = first, last, step do out[#out + 1] = rawget(list, i) end
    return setmetatable(out, list_mt)
  end
  local r = type(k[1]) == "table" and k[1] or k
  local a, b = r[1] or 1, r[2] or -1
  if type(a) ~= "number" or type(b) ~= "number" then raise("a list's range is {first, last} (numbers, inclusive)") end
  if a < 0 then a = n + a + 1 end
  if b < 0 then b = n + b + 1 end
  local out = {}
  for i = math.max(a, 1), math.min(b, n) do out[#out + 1] = rawget(list, i) end
  return setmetatable(out, list_mt)
end
-- arithmetic on a list: a ported `q, k = x.chunk(2)` that kept the whole list in q; a list plus a list
-- (or a plain table) is both in one list, Python's list(a.parameters()) + list(b.parameters())
local function list_misuse(a, b)
  local list = getmetatable(a) == list_mt and a or b
  raise(("arithmetic on a list of %d %s: %s"):format(#list,
    getmetatable(rawget(list, 1)) == tensor_mt and "tensors" or "values", LIST_HINT))
end
for _, op in ipairs({ "__sub", "__mul", "__div", "__mod", "__pow", "__unm", "__lt", "__le" }) do list_mt[op] = list_misuse end
list_mt.__add = function(a, b)
  if not (C.is_array(a) and C.is_array(b)) then list_misuse(a, b) end
  local out = {}
  for i = 1, #a do out[i] = rawget(a, i) end
  for i = 1, #b do out[#out + 1] = rawget(b, i) end
  return setmetatable(out, list_mt)
end
list_mt.__concat = list_mt.__add -- (Lua's spelling of joining: a:parameters() .. b:parameters())
-- printed as Python prints a list: ['a', 'b'] (strings quoted), [] when empty
list_mt.__tostring = function(list)
  local parts = {}
  for i = 1, #list do
    local v = rawget(list, i)
    parts[i] = type(v) == "string" and ("'" .. v .. "'") or tostring(v)
  end
  return "[" .. table.concat(parts, ", ") .. "]"
end
-- wick.deepcopy of a list copies its entries (Python's copy.deepcopy(list(m.parameters())): new tensors)
list_mt.__deepcopy = function(list, copy)
  local out = {}
  for i = 1, #list do out[i] = copy(rawget(list, i)) end
  return setmetatable(out, list_mt)
end
C.list_mt = list_mt
--- check.constructor_name(class, key, value): a class's method named __init__ (Python's) or __init
--- (Torch7's) is an error that says wick's constructor is init; never called, it would fail far away
function C.constructor_name(class, k, v)
  if (k == "__init__" or k == "__init") and type(v) == "function" then
    C.fail(class, "the constructor is init here, not %s (Python's __init__, Torch7's __init): define "
      .. "function %s:init(...), and call the base's as %s.super.init(self, ...)", k, class, class)
  end
end
function C.list(t) return setmetatable(t, list_mt) end
function C.is_array(v)
  if type(v) ~= "table" then return false end
  local mt = getmetatable(v)
  return mt == nil or mt == list_mt
end

local slice_mt = getmetatable(core.slice(nil))
--- Is v a wick.slice, Python's slice object?
function C.is_slice(v) return getmetatable(v) == slice_mt end

--- Python's slice `key` over n entries, as the 1-based loop `for i = first,
--- last, step`: Python's clamping (within [0, n] going forward, [-1, n - 1]
--- going back, as Glow's self.flows[::-1]); a one-value integer tensor reads as
--- its value. The one reading of a slice for a Size and the module containers.
function C.slice_range(key, n, fn)
  local function field(what) -- (checked here: a field may have been set since wick.slice)
    local v = key[what]
    if C.is_tensor(v) and v:numel() == 1 and not v:is_floating_point() then v = v:item() end
    if v ~= nil and (type(v) ~= "number" or v ~= floor(v)) then
      C.fail(fn, "expected an integer or nil for a slice's %s, got %s", what, describe(v))
    end
    return v
  end
  local step = field("step") or 1
  if step == 0 then C.fail(fn, "slice step cannot be zero") end
  local lo, hi = step > 0 and 0 or -1, step > 0 and n or n - 1
  local function clamp(v, default)
    if v == nil then return default end
    if v < 0 then v = v + n end
    return math.max(lo, math.min(hi, v))
  end
  local start, stop = clamp(field("start"), step > 0 and 0 or n - 1), clamp(field("stop"), step > 0 and n or -1)
  if step > 0 then return start + 1, math.max(start, stop), math.min(step, n + 1) end -- (a step past the end: the first entry)
  -- walking back from start + 1 to stop + 2 (none when stop is at or past start)
  return start + 1, math.min(stop + 2, start + 2), math.max(step, -(n + 1))
end

function C.tensor(v, fn, arg)
  if getmetatable(v) ~= tensor_mt then expected(fn, arg, "a tensor", v) end
  return v
end

function C.opt_tensor(v, fn, arg)
  if v ~= nil and getmetatable(v) ~= tensor_mt then expected(fn, arg, "a tensor or nil", v) end
  return v
end

--- A number (not NaN); with lo/hi, within [lo, hi].
function C.number(v, fn, arg, lo, hi)
  if type(v) ~= "number" or v ~= v then expected(fn, arg, "a number", v) end
  if (lo and v < lo) or (hi and v > hi) then
    raise(("%s: argument '%s' must be between %s and %s, got %s"):format(fn, arg, tostring(lo or -huge),
      tostring(hi or huge), describe(v)))
  end
  return v
end

function C.opt_number(v, fn, arg, default, lo, hi)
  if v == nil then return default end
  return C.number(v, fn, arg, lo, hi)
end

--- An integer (a number with no fraction, at most 2^53 in magnitude); with min, at least min.
function C.int(v, fn, arg, min)
  if type(v) ~= "number" or v ~= floor(v) or v > 2 ^ 53 or v < -2 ^ 53 then
    if getmetatable(v) == tensor_mt then -- (U-Net's torch.tensor([x2.size()[2] - x1.size()[2]]) is float32 here)
      raise(("%s: expected an integer for argument '%s', got a %s tensor of %d element(s) (use :item(); "
        .. "Lua numbers make tensors of the default floating dtype unless {dtype = \"int64\"})"):format(fn, arg, v.dtype, v:numel()))
    end
    expected(fn, arg, "an integer", v)
  end
  if min and v < min then
    raise(("%s: argument '%s' must be %s, got %s"):format(fn, arg,
      min == 0 and "a non-negative integer" or min == 1 and "a positive integer" or ("an integer >= " .. min), describe(v)))
  end
  return v
end

function C.opt_int(v, fn, arg, default, min)
  if v == nil then return default end
  -- (a 0-dim integer tensor as its number, Python's __index__, as the C arguments take it: Zamba's
  -- mask:tril(cache:get_seq_length()))
  if getmetatable(v) == tensor_mt and v:dim() == 0 and not v:is_floating_point() and not v:is_complex()
    and v.dtype ~= "bool" then
    v = v:item()
  end
  return C.int(v, fn, arg, min)
end

--- A dimension: a non-zero integer (1-based, negative from the end).
--- A 1-based dim d (negative from the end) of tensor t as a positive one; errors name fn.
function C.wrap_dim(t, d, fn)
  C.dim(d, fn, "dim")
  local n = t:dim()
  local m = n > 0 and n or 1
  if d < -m or d > m then
    C.fail(fn, "dimension %d out of range (expected 1 to %d, or -%d to -1)", d, m, m)
  end
  return d < 0 and d + m + 1 or d
end

--- A dim argument that is nil, one dim or a list of them, each checked against t (errors name fn).
function C.wrap_dims(t, dims, fn)
  if type(dims) == "table" and getmetatable(dims) == nil then
    for i = 1, #dims do C.wrap_dim(t, dims[i], fn) end
  elseif dims ~= nil then C.wrap_dim(t, dims, fn) end
  return dims
end

--- Raises PyTorch's "The size of tensor a (x) must match the size of tensor b (y) at non-singleton
--- dimension d" (d 1-based), named fn, unless a's and b's sizes broadcast.
function C.broadcastable(fn, a, b)
  local na, nb = a:dim(), b:dim()
  for k = 0, math.min(na, nb) - 1 do
    local x, y = a:size(na - k), b:size(nb - k)
    if x ~= y and x ~= 1 and y ~= 1 then
      C.fail(fn, "The size of tensor a (%d) must match the size of tensor b (%d) at non-singleton dimension %d",
        x, y, math.max(na, nb) - k)
    end
  end
end

function C.dim(v, fn, arg)
  if type(v) ~= "number" or v ~= floor(v) or v == 0 or v > 2 ^ 31 or v < -2 ^ 31 then
    expected(fn, arg or "dim", "a dimension (a non-zero integer: 1-based, negative from the end)", v)
  end
  return v
end

function C.opt_dim(v, fn, arg, default)
  if v == nil then return default end
  return C.dim(v, fn, arg)
end

function C.boolean(v, fn, arg)
  if type(v) ~= "boolean" then expected(fn, arg, "a boolean", v) end
  return v
end

function C.opt_boolean(v, fn, arg, default)
  if v == nil then return default end
  return C.boolean(v, fn, arg)
end

--- A boolean argument that PyTorch passes by keyword: true/false, nil (the
--- default), or an options table holding it by name (nn.Parameter(t,
--- {requires_grad = false})). Anything else is an error, never true.
function C.flag(v, fn, arg, default)
  if type(v) == "table" and getmetatable(v) == nil then v = v[arg] end
  if v == nil then return default end
  if type(v) ~= "boolean" then expected(fn, arg, "a boolean (or {" .. arg .. " = ...})", v) end
  return v
end

function C.string(v, fn, arg)
  if type(v) ~= "string" then expected(fn, arg, "a string", v) end
  return v
end

--- A table (any table: an array, a dict, an object).
function C.table(v, fn, arg)
  if type(v) ~= "table" then expected(fn, arg, "a table", v) end
  return v
end

function C.opt_table(v, fn, arg)
  if v ~= nil and type(v) ~= "table" then expected(fn, arg, "a table or nil", v) end
  return v
end

--- A function, or a table or userdata with a __call metamethod.
local function is_callable(v)
  if type(v) == "function" then return true end
  local m = getmetatable(v)
  if m == tensor_mt then return false end -- (its __call is Python's iteration: `for row in t do`)
  return type(m) == "table" and m.__call ~= nil
end

C.is_callable = is_callable

function C.callable(v, fn, arg)
  if not is_callable(v) then expected(fn, arg, "a function", v) end
  return v
end

--- A module (an instance of nn.Module or a subclass).
function C.module(v, fn, arg)
  if not is_module(v) then expected(fn, arg, "a module", v) end
  return v
end

--- One of the given strings.
function C.one_of(v, fn, arg, choices)
  for i = 1, #choices do if v == choices[i] then return v end end
  local quoted = {}
  for i = 1, #choices do quoted[i] = "'" .. choices[i] .. "'" end
  raise(("%s: invalid value %s for argument '%s' (expected %s)"):format(fn,
    type(v) == "string" and ("'" .. v .. "'") or describe(v), arg, table.concat(quoted, ", ")))
end

--- An array of tensors (or one tensor, made a one-element array).
function C.tensors(v, fn, arg)
  if getmetatable(v) == tensor_mt then return { v } end
  if type(v) ~= "table" then expected(fn, arg, "a tensor or an array of tensors", v) end
  for i = 1, #v do
    if getmetatable(v[i]) ~= tensor_mt then
      raise(("%s: expected a tensor at %s[%d], got %s"):format(fn, arg, i, describe(v[i])))
    end
  end
  return v
end

-- The kinds an option can have (C.options).
local kinds = {
  boolean = function(v) return type(v) == "boolean" end,
  number = function(v) return type(v) == "number" and v == v end,
  float = function(v) return type(v) == "number" end, -- (a number, NaN included: clamp's bound)
  integer = function(v) return type(v) == "number" and v == floor(v) and v <= 2 ^ 53 and v >= -2 ^ 53 end,
  string = function(v) return type(v) == "string" end,
  table = function(v) return type(v) == "table" end,
  tensor = function(v) return getmetatable(v) == tensor_mt end,
  dtype = function(v) return DTYPES[v] == true end,
  -- a device string or object; wick.device() checks the string itself
  device = function(v) return type(v) == "string" or (type(v) == "table" and not is_module(v)) end,
  ["function"] = is_callable,
  any = function() return true end,
  -- a flag a Python layer tests with `if bias:` (nn.LSTMCell(n, h, 1)): a boolean or an integer,
  -- which positional() turns into its truth
  truth = function(v) return type(v) == "boolean" or (type(v) == "number" and v == floor(v)) end,
}
local kind_text = { boolean = "a boolean", number = "a number", float = "a number", integer = "an integer", string = "a string",
  table = "a table", tensor = "a tensor", dtype = "a dtype name", device = "a device", ["function"] = "a function",
  any = "a value", truth = "a boolean" }

-- what C.options gives for absent options: shared, so it must stay empty
local EMPTY = setmetatable({}, { __newindex = function() raise("wick.argcheck: the empty options table is read-only") end })
C.EMPTY = EMPTY

--- C.axis_as_dim(fn, opts): the options table opts with `axis` (NumPy's name for dim, which PyTorch
--- takes: torch.topk(x, k, axis=-1)) as `dim` (a copy), or opts itself when it has no axis; both is
--- an error. The one reading of axis for the options of functions written in Lua (the C ones: wl_getdim).
function C.axis_as_dim(fn, opts)
  if type(opts) ~= "table" or rawget(opts, "axis") == nil then return opts end
  if opts.dim ~= nil then raise(("%s: got both dim and axis (axis is another name for dim)"):format(fn)) end
  local copy = {}
  for k, v in pairs(opts) do copy[k] = v end
  copy.dim, copy.axis = opts.axis, nil
  return copy
end

--- opts: nil (gives an empty table) or a table whose keys are in `spec`
--- (name -> kind, or "kind|kind" for several, e.g. "number|table"); returns opts
--- (a copy with axis as dim where spec has dim).
function C.options(opts, fn, spec)
  if opts == nil then return EMPTY end
  if type(opts) ~= "table" or getmetatable(opts) == tensor_mt then expected(fn, "opts", "an options table", opts) end
  if spec.dim ~= nil and spec.axis == nil then opts = C.axis_as_dim(fn, opts) end
  for k, v in pairs(opts) do
    local want = type(k) == "string" and spec[k] or nil
    if want == nil then
      local names = {}
      for name in pairs(spec) do names[#names + 1] = name end
      table.sort(names)
      raise(("%s: unknown option '%s' (expected %s)"):format(fn, tostring(k), table.concat(names, ", ")))
    end
    local ok = false
    for kind in want:gmatch("[^|]+") do
      if kinds[kind](v) then ok = true; break end
    end
    if not ok then
      local texts = {}
      for kind in want:gmatch("[^|]+") do texts[#texts + 1] = kind_text[kind] end
      raise(("%s: expected %s for option '%s', got %s"):format(fn, table.concat(texts, " or "), k,
        kinds.string(v) and ("'" .. v .. "'") or describe(v)))
    end
  end
  return opts
end

-- In args (a table of arguments by name), a 0-dim tensor where spec takes a
-- number is the number it holds (an integer one where it takes an integer), as
-- the ops written in C take it: roll(x, idx[1], -1). Changes args; returns it.
local function numbers_of(args, spec)
  for k, v in pairs(args) do
    if type(v) == "number" and spec[k] == "truth" and v == floor(v) then args[k] = v ~= 0 end
    local want = getmetatable(v) == tensor_mt and type(k) == "string" and spec[k]
    if want and not want:find("tensor", 1, true) and v:dim() == 0 and not v:is_complex() then
      if want:find("number", 1, true) or (want:find("integer", 1, true) and not v:is_floating_point() and v.dtype ~= "bool") then
        args[k] = v:item()
      end
    end
  end
  return args
end

--- PyTorch's positional-or-keyword arguments: `names` gives the order of the
--- positional ones in `...`; a trailing plain table is the options table (kinds
--- in `spec`). Returns one table of every argument given, each checked; an
--- argument given both ways, or too many positions, is an error. A trailing
--- table with an array part ({3, 3}) is a positional argument, not options.
-- a table whose keys are all options of spec (axis too where spec has dim)
local function of_options(t, spec)
  if type(t) ~= "table" or getmetatable(t) ~= nil or #t > 0 then return false end
  for k in pairs(t) do
    if type(k) ~= "string" or (spec[k] == nil and not (k == "axis" and spec.dim ~= nil)) then return false end
  end
  return true
end

function C.positional(fn, names, spec, ...)
  local n = select("#", ...)
  local args = { ... }
  while n > 0 and args[n] == nil do n = n - 1 end -- (trailing nils: Python's empty **kwargs after the options)
  -- Python's f(x, mode=m, **kwargs) as f(x, {mode = m}, kwargs): two trailing tables of options are one
  -- (SuperPoint's grid_sample(d, k, mode="bilinear", **kwargs))
  if n >= 2 and of_options(args[n - 1], spec) and next(args[n - 1]) ~= nil and of_options(args[n], spec) then
    local merged = {}
    for k, v in pairs(args[n - 1]) do merged[k] = v end
    for k, v in pairs(args[n]) do
      if merged[k] ~= nil then raise(("%s: got multiple values for keyword argument '%s'"):format(fn, k)) end
      merged[k] = v
    end
    args[n - 1], args[n], n = merged, nil, n - 1
  end
  local out = {}
  local last = args[n]
  -- the options table: a plain table with no array part ({3, 3} is a size)
  if n > 0 and type(last) == "table" and getmetatable(last) == nil and #last == 0 then
    if spec.dim ~= nil and spec.axis == nil then last = C.axis_as_dim(fn, last) end
    for k, v in pairs(last) do out[k] = v end
    C.options(numbers_of(out, spec), fn, spec)
    n = n - 1
  end
  if n > #names then
    raise(("%s: expected at most %d positional argument(s) (%s), got %d"):format(fn, #names, table.concat(names, ", "), n))
  end
  for i = 1, n do
    if args[i] ~= nil then
      if out[names[i]] ~= nil then raise(("%s: argument '%s' given both by position and as an option"):format(fn, names[i])) end
      out[names[i]] = args[i]
    end
  end
  return C.options(numbers_of(out, spec), fn, spec)
end

--- C.receivers(class, name): every method of class (its function fields but
--- the metamethods) checks its receiver first, so obj.method() (a '.' for a
--- ':') is an error at the caller's line naming the method, not one inside it.
-- (an instance of a subclass, whose class reaches class by `super`, is one too: Tacotron2's
-- SummaryWriter subclass; set raw, past a class's own __newindex)
function C.receivers(class, name)
  local function is_instance(obj)
    if type(obj) ~= "table" then return false end
    local c = getmetatable(obj)
    while type(c) == "table" and c ~= class do c = rawget(c, "super") end
    return c == class
  end
  for k, f in pairs(class) do
    if type(f) == "function" and type(k) == "string" and k:sub(1, 2) ~= "__" then
      rawset(class, k, function(self, ...)
        if not is_instance(self) then
          raise(("%s:%s: expected a %s as self, got %s (call it with ':', as obj:%s(...))"):format(name, k, name,
            describe(self), k))
        end
        return f(self, ...)
      end)
    end
  end
  return class
end

--- strict(tbl, what[, lazy]): tbl with a name it does not have an error at the
--- caller's line ("what has no 'x' (not in this version of wick: see
--- docs/api.md)"), as PyTorch's AttributeError, not a nil called further on;
--- names starting with "_" are exempt. tbl must have no metatable. lazy: names
--- whose value a function gives on first use (a module that loads later).
function C.strict(tbl, what, lazy)
  return setmetatable(tbl, { __index = function(t, k)
    if lazy and lazy[k] then
      local v = lazy[k]()
      rawset(t, k, v)
      return v
    end
    if type(k) == "string" and k:sub(1, 1) ~= "_" then
      error(("%s has no '%s' (not in this version of wick: see docs/api.md)"):format(what, k), 2)
    end
  end })
end

--- check.shortest(x): a finite number's shortest %g digits that read back as it, Python's repr of a float
--- ("0.1", "0.10000000149011612", "1e-05"); the one spelling of numbers in Python's form (module reprs, `..`)
function C.shortest(x)
  for digits = 1, 17 do
    local text = ("%." .. digits .. "g"):format(x)
    if tonumber(text) == x then return text end
  end
  return ("%.17g"):format(x)
end

-- an options table: a plain table whose keys are all strings ({3, 3} and {nil, 7} are values)
local function is_options(t)
  if type(t) ~= "table" or getmetatable(t) ~= nil then return false end
  for k in pairs(t) do
    if type(k) ~= "string" then return false end
  end
  return true
end

--- required(fn, names, ...): the arguments `...` with PyTorch's required
--- positional arguments `names` (in order) also taken by name from the
--- trailing options table, as Python takes keywords: (1, 16, {kernel_size = 3,
--- stride = 2}) for names {in_channels, out_channels, kernel_size} gives
--- (1, 16, 3, {stride = 2}). One given neither way is an error naming it; one
--- given both ways too. A name ending in "?" is optional (Python's argument
--- with a default: nil when given neither way). The options table left over
--- (a copy, maybe empty) follows the arguments.
local parsed = setmetatable({}, { __mode = "k" })
local function names_of(names)
  local p = parsed[names]
  if not p then
    p = {}
    for i, nm in ipairs(names) do
      local base, q = nm:match("^(.-)(%??)$")
      p[i] = { base, q == "?" }
      if base == "dim" then p.has_dim = true end
    end
    parsed[names] = p
  end
  return p
end
-- "missing required argument 'x'", and the other keys of the options table (a
-- keyword of an outer class passed down: Net(3, {n_components = 4}))
local function missing(fn, name, opts, spec)
  local stray = {}
  if opts then
    for k in pairs(opts) do
      local known = false
      for i = 1, #spec do known = known or spec[i][1] == k end
      if not known then stray[#stray + 1] = "'" .. tostring(k) .. "'" end
    end
  end
  table.sort(stray)
  if #stray == 0 then C.fail(fn, "missing required argument '%s'", name) end
  C.fail(fn, "missing required argument '%s' (the options table holds %s)", name, table.concat(stray, ", "))
end

function C.required(fn, names, ...)
  local spec = names_of(names)
  local n, k = select("#", ...), #spec
  while n > 0 and select(n, ...) == nil do n = n - 1 end
  local last = n > 0 and select(n, ...) or nil
  local opts_at, named = is_options(last) and n, false
  if opts_at and spec.has_dim then last = C.axis_as_dim(fn, last) end
  if opts_at then
    for i = 1, k do
      if last[spec[i][1]] ~= nil then named = true; break end
    end
  end
  if not named and not (opts_at and opts_at <= k and spec[opts_at][2]) then -- the common case: nothing to move
    for i = 1, k do
      if (i == opts_at or select(i, ...) == nil) and not spec[i][2] then
        missing(fn, spec[i][1], opts_at and last, spec)
      end
    end
    if n == select("#", ...) then return ... end
    return unpack({ ... }, 1, n) -- (without trailing nils: Python's empty **kwargs after the options)
  end
  local args, rest = { ... }, {}
  args[n] = nil
  for key, v in pairs(last) do rest[key] = v end
  for i = 1, k do
    local name = spec[i][1]
    local v = last[name]
    if v ~= nil then
      if args[i] ~= nil then C.fail(fn, "argument '%s' given both by position and as an option", name) end
      args[i], rest[name] = v, nil
    elseif args[i] == nil and not spec[i][2] then
      missing(fn, name, last, spec)
    end
  end
  if next(rest) == nil then return unpack(args, 1, math.max(n - 1, k)) end -- (nothing left: no options table)
  local at = n > k and n or k + 1
  args[at] = rest
  return unpack(args, 1, at)
end

--- f of n parameters with a plain table more (not empty) an error naming its
--- first key: a Lua function silently drops what it does not name, where
--- PyTorch's t.lerp(e, w, bogus=1) is a TypeError (the C binding's wl_no_more,
--- for the methods written in Lua). Other values more are a call's further
--- results, which Lua drops (a:equal(b:sort(2))).
local function extra(fn, v)
  if type(v) ~= "table" or getmetatable(v) ~= nil then return end
  local k = next(v)
  if k == nil then return end
  if type(k) == "string" then C.fail(fn, "unknown option '%s' (it takes none)", k) end
  C.fail(fn, "got an unexpected extra argument (a table)")
end
C.extra = extra
function C.no_more(f, fn, n)
  if n == 1 then return function(a, x) if x ~= nil then extra(fn, x) end return f(a) end end
  if n == 2 then return function(a, b, x) if x ~= nil then extra(fn, x) end return f(a, b) end end
  if n == 3 then return function(a, b, c, x) if x ~= nil then extra(fn, x) end return f(a, b, c) end end
  assert(n == 4, "no_more: 1 to 4 parameters")
  return function(a, b, c, d, x) if x ~= nil then extra(fn, x) end return f(a, b, c, d) end
end

--- by_name(f, fn, names[, skip = 0]): f taking the arguments `names` (after
--- `skip` leading ones: a method's self) also by PyTorch's names from the
--- trailing options table, as required() moves them (gather(v, {dim = -1,
--- index = d}), F.kl_div({input = lp, target = p})); names ending in "?" may be
--- left out; names.aliases maps another keyword to one of them (scatter's
--- value to src). Calls without such a table go straight to f.
local function pack(...) return { n = select("#", ...), ... } end
function C.by_name(f, fn, names, skip)
  skip = skip or 0
  local plain = {}
  for i, nm in ipairs(names) do plain[i] = nm:gsub("%?$", "") end
  local function call(...)
    local n = select("#", ...)
    local last = n > skip and select(n, ...) or nil
    if type(last) ~= "table" or getmetatable(last) ~= nil then return f(...) end
    for k, alias in pairs(names.aliases or {}) do
      if last[k] ~= nil then
        if last[alias] ~= nil then C.fail(fn, "got both '%s' and '%s'", alias, k) end
        local args, copy = pack(...), {}
        for key, v in pairs(last) do copy[key] = v end
        copy[alias], copy[k] = last[k], nil
        args[n] = copy
        return call(unpack(args, 1, n))
      end
    end
    local named = false
    for _, nm in ipairs(plain) do named = named or last[nm] ~= nil end
    if not named then return f(...) end
    local args = pack(...)
    local moved = pack(C.required(fn, names, unpack(args, skip + 1, n)))
    local m = moved.n -- (the options left over, dropped when empty)
    if type(moved[m]) == "table" and next(moved[m]) == nil then m = m - 1 end
    for i = 1, m do args[skip + i] = moved[i] end
    return f(unpack(args, 1, skip + m))
  end
  return call
end

return C
