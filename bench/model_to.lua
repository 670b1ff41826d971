-- model:to on a model of many small parameters (issue 14 item 3): wall time of
-- the moves that run without a GPU, and the Lua -> C crossings one move makes,
-- counted with a call hook (every call of a C function during model:to).
--   wick bench/model_to.lua [layers = 200] [repeats = 20]
-- Runs on any wick (the base commit's runner too): it uses only the public API.
local wick = require("wick")
local nn = wick.nn

local layers = tonumber(arg and arg[1]) or 200
local repeats = tonumber(arg and arg[2]) or 20

local function model()
  local m = nn.Sequential()
  for i = 1, layers do m:add_module(tostring(i), nn.Linear(16, 16)) end
  return m
end

local function with_grads(m)
  for _, p in ipairs(m:parameters()) do p.grad = wick.zeros_like(p) end
  return m
end

-- Calls of wick's C functions (the binding's: wick._core's functions, tensor
-- methods and metamethods) made while fn runs. The JIT is off while counting,
-- so the hook sees every call.
local core_fns = {}
local function collect(tbl, seen)
  if type(tbl) ~= "table" or seen[tbl] then return end
  seen[tbl] = true
  for _, v in pairs(tbl) do
    if type(v) == "function" then
      if debug.getinfo(v, "S").what == "C" then core_fns[v] = true end
    elseif type(v) == "table" then collect(v, seen) end
  end
end
collect(wick._core, {})
local function crossings(fn)
  local n = 0
  if jit then jit.off() end
  debug.sethook(function()
    local info = debug.getinfo(2, "f")
    if info and core_fns[info.func] then n = n + 1 end
  end, "c")
  fn()
  debug.sethook()
  if jit then jit.on() end
  return n
end

local clock = os.clock
local function best_of(fn, setup)
  local best = math.huge
  for _ = 1, repeats do
    local m = setup()
    collectgarbage()
    local t0 = clock()
    fn(m)
    local dt = clock() - t0
    if dt < best then best = dt end
  end
  return best * 1e3
end

local nparams = #model():parameters()
local cases = {
  { "to('meta')", function(m) m:to("meta") end, model },
  { "to('meta'), grads", function(m) m:to("meta") end, function() return with_grads(model()) end },
  { "to('float64')", function(m) m:to("float64") end, model },
  { "to('cpu') (nothing moves)", function(m) m:to("cpu") end, model },
}
print(("model: %d x Linear(16, 16), %d parameters; best of %d"):format(layers, nparams, repeats))
for _, c in ipairs(cases) do
  local name, fn, setup = c[1], c[2], c[3]
  local m = setup()
  local n = crossings(function() fn(m) end)
  print(("%-28s %8.3f ms   %6d crossings (%.1f per parameter)"):format(name, best_of(fn, setup), n, n / nparams))
end
