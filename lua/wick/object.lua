-- wick.Object: the base of a plain class of one's own, Python's `object` (HF's
-- BeamSearchScorer, LogitsProcessorList, LabelSmoother), as nn.Module is a
-- module's. Name = wick.Object:extend("Name") (or Base:extend("Name") for a
-- subclass, Name.super the base); Name(...) builds an instance and calls its
-- init(...). init and the other methods of one's own take PyTorch's keywords
-- as a module's do (a trailing table naming their parameters), obj(...) calls
-- obj:__call__(...), tostring(obj) is obj:__repr__() when the class has one,
-- obj.__class__ is Name (and Name.__name__ its name), and wick.isinstance(obj, Name) holds. A function
-- in the class's `_lazy` table is Python's functools.cached_property: obj.name calls it once, at the
-- first read, and keeps its value in obj (HF's @cached_property def image_tokens(self)).
local check = require("wick.argcheck")
require("wick.nn.module") -- (which gives wick.nn.common its keyword_method)
local common = require("wick.nn.common")

local Object = { __name = "Object" }
Object.__index = Object
--- Object:init(): does nothing (Python's object.__init__), for super.init(self) calls
function Object.init() end
--- Class:include(Mixin, ...): Python's further bases (wick.nn.common.include)
Object.include = common.include

local function name_of(obj) return rawget(getmetatable(obj), "__name") end
local function call(obj, ...)
  local f = obj.__call__
  if type(f) ~= "function" then check.fail(name_of(obj), "'%s' object is not callable (its class has no __call__)", name_of(obj)) end
  return f(obj, ...)
end
local function repr(obj)
  local f = obj.__repr__
  if type(f) == "function" then return tostring(f(obj)) end
  return ("<%s object>"):format(name_of(obj))
end
local function class_repr(cls) return ("<class '%s'>"):format(rawget(cls, "__name")) end
local function new(cls, ...)
  local obj = setmetatable({}, cls)
  obj:init(...)
  return obj
end

-- the instances' lookup of a class with cached properties (a `_lazy` table here or in a base):
-- the class's members, then the nearest _lazy function of that name, run once and its value kept
local function lazy_index(cls)
  return function(obj, k)
    local v = cls[k]
    if v ~= nil then return v end
    return common.cached_property(obj, cls, k)
  end
end

-- a method of one's own binds PyTorch's keywords (its first parameter self, or cls, also under a
-- decorator: Meta's @torch.inference_mode() def generate(self, ...)); metamethods do not
local function define(cls, k, v)
  check.constructor_name(rawget(cls, "__name"), k, v)
  if k == "_lazy" then
    if type(v) ~= "table" then check.expected(rawget(cls, "__name"), "_lazy", "a table of functions (cached properties)", v) end
    rawset(cls, "__index", lazy_index(cls))
  end
  if type(v) == "function" and type(k) == "string" and (k:sub(1, 2) ~= "__" or k == "__call__") then
    local first = debug.getlocal(common.undecorated(v), 1)
    if first == "self" or first == "cls" then v = common.keyword_method(v, k)
    elseif first and k:sub(1, 2) ~= "__" then v = common.static_method(v) end -- (Python's @staticmethod)
  end
  rawset(cls, k, v)
  common.included_late(cls, k)
end

--- Object:extend(name): a new class (Python's class Name(Base)); its metamethods (__eq, __lt,
--- __len, ...) are the base's unless it defines its own
function Object.extend(base, name, ...)
  if type(base) ~= "table" or (base ~= Object and rawget(base, "super") == nil) then
    check.expected("Object.extend", "self", "wick.Object or a class made from it (Base:extend(\"Name\"))", base)
  end
  check.string(name, "Object.extend", "name")
  if select("#", ...) > 0 then -- (nn.Module:extend's list of init's names has no use here: init's own parameters bind)
    check.fail("Object.extend", "takes the class name only, got %d more argument(s) (init's parameters take the keywords)",
      select("#", ...))
  end
  local C = { __call = call, __tostring = repr }
  for k, v in pairs(base) do -- (Lua reads metamethods from the class itself, not its bases)
    if type(k) == "string" and k:sub(1, 2) == "__" and k ~= "__index" and k ~= "__name" then C[k] = v end
  end
  -- (obj.__class__ is its class, and obj.__class__.__name__ its name, as Python's: score_sde's
  -- class RSDE(self.__class__) is getmetatable(self):extend("RSDE") or self.__class__:extend("RSDE"))
  C.__name, C.__name__, C.super, C.__index, C.__class__ = name, name, base, C, C
  if type(rawget(base, "__index")) == "function" then C.__index = lazy_index(C) end -- (a base's cached properties)
  return setmetatable(C, { __index = base, __call = new, __tostring = class_repr, __newindex = define })
end

return Object
