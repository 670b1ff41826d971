-- A hostile-argument sweep over the public API (issue 11, item 7).
--
-- The API is enumerated at run time: every function of `wick` and `wick.cuda`,
-- `wick.nn` (constructors, and the methods of a constructed module),
-- `wick.nn.functional`, `wick.nn.utils`, `wick.fft`, `wick.einops`, `wick.vision.ops`, `wick.vision.utils`, `wick.library`, `wick.masked`, `wick.audio.functional`, `wick.optim` (constructors and the
-- methods of an optimizer and a scheduler), `wick.data` (and the methods of a
-- dataset and a loader), and every function of the tensor methods table and of
-- the tensor metatable. Each is called with nothing, and with one hostile value
-- (nil, wrong types, NaN/inf, negative, zero and huge sizes, bad dims, empty,
-- 0-d, non-contiguous and meta tensors, bad options) in each of the first three
-- argument positions, the positions before it holding a plausible value.
--
-- It passes when nothing crashes or hangs and every error starts with the line
-- of the call below (`invoke`), i.e. names the caller's line. Successes are
-- fine; the counts are printed.
--
-- Modes:
--   under busted (ctest sweep_spec): the whole sweep, or 1/N of the cases with
--     WICK_SWEEP_SAMPLE=N (the sanitizer build runs it sampled);
--   as a plain script, `build/wick spec/sweep_spec.lua` (tools/sweep.sh):
--     cases WICK_SWEEP_FROM..WICK_SWEEP_TO, one line per case on stdout
--     ("B <i>" before the call, "R <i> <status>" after), so a driver can
--     resume after a case that killed the process. Works against old trees
--     too (only the public API is used).
local wick = require("wick")
local unpack = table.unpack or unpack

local SRC = debug.getinfo(1, "S").short_src
local SAMPLE = math.max(1, math.floor(tonumber(os.getenv("WICK_SWEEP_SAMPLE") or "1") or 1))
local FROM = tonumber(os.getenv("WICK_SWEEP_FROM") or "1") or 1
local TO = tonumber(os.getenv("WICK_SWEEP_TO") or "") or math.huge
-- CPU seconds one call may spend in Lua code before it counts as a hang (the
-- sanitizer builds raise it: CMakeLists.txt)
local BUDGET_S = tonumber(os.getenv("WICK_SWEEP_BUDGET_S") or "10") or 10

-- ---- what is not called, with the reason ----
local SKIP = {
  ["wick.save"] = "writes a file at the path it is given",
  ["wick.save_safetensors"] = "writes a file at the path it is given",
  ["wick._warn"] = "writes its message to stderr (only noise here)",
  ["wick.data.FashionMNIST"] = "reads the 70000-image dataset from disk when it is installed (seconds a call)",
}
-- PyTorch's module-global hooks: one registered stays for every later module call of the sweep (a
-- module given as the hook, a callable, would run itself from its own call without end, as in PyTorch)
for _, kind in ipairs({ "forward_pre_hook", "forward_hook", "full_backward_hook", "full_backward_pre_hook" }) do
  SKIP["wick.nn.register_module_" .. kind] = "installs a hook every later module call of the sweep runs"
end
local SKIP_METHOD = {}
for name in pairs(SKIP) do
  local m = name:match("^wick%.nn%.(register_module_.*)$")
  if m then SKIP_METHOD[m] = true end
end
-- values not passed to a target (the case is not run), with the reason
local SKIP_VALUE = {
  ["wick.set_num_threads"] = {
    why = "counts above the current one: OpenBLAS then starts that many threads with a 128 MiB buffer each, "
      .. "which the address-space limit below refuses, and it retries the mapping without end",
    skip = function(v) return type(v) == "number" and v > wick.get_num_threads() end,
  },
  ["wick.nn.Transformer"] = {
    why = "counts of 2^28 and more: a legitimate request for that many encoder layers, each built and cloned "
      .. "in turn (about 2500 a second), which runs for hours or out of memory",
    skip = function(v) return type(v) == "number" and v >= 2 ^ 28 end,
  },
}
-- functions that allocate what their size arguments ask for: 2^31 elements is
-- a legitimate request of 8 GiB and more, so those sizes are not passed to them
-- (2^63 and -2^63 are: they must be refused by the checked size arithmetic).
-- The address-space limit below turns any other huge allocation into a clean
-- "out of memory".
local ALLOCATES = {}
for _, n in ipairs({ "zeros", "ones", "empty", "rand", "randn", "full", "arange", "eye", "randperm",
  "new_zeros", "new_ones", "new_empty", "new_full", "Linear", "Conv1d", "Conv2d", "Embedding", "BatchNorm1d", "GroupNorm",
  "BatchNorm2d", "LayerNorm" }) do ALLOCATES[n] = true end

-- ---- the address space: a huge allocation fails instead of swapping ----
-- Returns true when the limit is in place.
local function limit_address_space(headroom)
  local ok, ffi = pcall(require, "ffi")
  if not ok then return false end
  local f = io.open("/proc/self/status", "r")
  if not f then return false end
  local status = f:read("*a")
  f:close()
  local kb = tonumber(status:match("VmSize:%s*(%d+)"))
  if not kb then return false end
  pcall(ffi.cdef, "struct wick_sweep_rlimit { unsigned long cur, max; };"
    .. "int setrlimit(int, const struct wick_sweep_rlimit *);"
    .. "int getrlimit(int, struct wick_sweep_rlimit *);")
  local lim = ffi.new("struct wick_sweep_rlimit")
  if ffi.C.getrlimit(9, lim) ~= 0 then return false end -- RLIMIT_AS on Linux
  local want = kb * 1024 + headroom
  if tonumber(lim.max) < want then return false end
  lim.cur = want
  return ffi.C.setrlimit(9, lim) == 0
end
-- Where the limit cannot be set (no FFI: the Lua 5.4 runs), sizes that could
-- ask for gigabytes are passed to nobody.
local GIGABYTES = { ["2^28"] = true, ["2^31"] = true, ["2^32"] = true }
local limited = false

-- ---- hostile values (made fresh for every case) ----
local function T() return wick.tensor({ { 1, 2, 3 }, { 4, 5, 6 } }) end
local VALUES = {
  { "nil", function() return nil end },
  { "string", function() return "x" end },
  { "table", function() return {} end },
  { "true", function() return true end },
  { "false", function() return false end },
  { "function", function() return function() end end },
  { "thread", function() return coroutine.create(function() end) end },
  { "nan", function() return 0 / 0 end },
  { "inf", function() return math.huge end },
  { "-inf", function() return -math.huge end },
  { "-1", function() return -1 end },
  { "0", function() return 0 end },
  { "1", function() return 1 end },
  { "2", function() return 2 end },
  { "1.5", function() return 1.5 end },
  { "100", function() return 100 end },
  { "-100", function() return -100 end },
  { "2^28", function() return 2 ^ 28 end },
  { "2^31", function() return 2 ^ 31 end },
  { "2^32", function() return 2 ^ 32 end },
  { "2^63", function() return 2 ^ 63 end },
  { "-2^63", function() return -(2 ^ 63) end },
  { "{-1,2}", function() return { -1, 2 } end },
  { "{2^32,2^32}", function() return { 2 ^ 32, 2 ^ 32 } end },
  { "{2^63}", function() return { 2 ^ 63 } end },
  { "{'a'}", function() return { "a" } end },
  { "{{}}", function() return { {} } end },
  { "'cpu'", function() return "cpu" end },
  { "'meta'", function() return "meta" end },
  { "'float64'", function() return "float64" end },
  { "'int64'", function() return "int64" end },
  { "{dtype='nope'}", function() return { dtype = "nope" } end },
  { "{device='gpu'}", function() return { device = "gpu" } end },
  { "{bogus=1}", function() return { bogus = 1 } end },
  { "{dtype=1}", function() return { dtype = 1 } end },
  { "device(meta)", function() return wick.device("meta") end },
  { "tensor[2,3]", T },
  { "tensor 0-d", function() return wick.tensor(1.5) end },
  { "tensor [0]", function() return wick.zeros(0) end },
  { "tensor [0,3]", function() return wick.zeros(0, 3) end },
  { "tensor non-contiguous", function() return T():t() end },
  { "tensor meta[2,3]", function() return wick.ones(2, 3, { device = "meta" }) end },
  { "tensor int64", function() return wick.tensor({ 1, 2 }, { dtype = "int64" }) end },
  { "tensor bool", function() return wick.tensor({ true, false }) end },
  { "tensor int64 [0]", function() return wick.zeros(0, { dtype = "int64" }) end },
  { "tensor expanded", function() return wick.ones(1, 3):expand(4, 3) end },
}
-- receivers of the tensor methods
local SELVES = {
  { "[2,3]", T, full = true },
  { "0-d", function() return wick.tensor(1.5) end },
  { "[0,3]", function() return wick.zeros(0, 3) end },
  { "non-contiguous", function() return T():t() end },
  { "meta", function() return wick.ones(2, 3, { device = "meta" }) end },
  { "int64", function() return wick.tensor({ { 1, 2 }, { 3, 4 } }, { dtype = "int64" }) end },
  { "requires_grad", function() return T():requires_grad_(true) end },
  { "expanded", function() return wick.ones(1, 3):expand(4, 3) end },
  -- a view whose sizes multiply past 2^64 (an error where the arithmetic is checked)
  { "wrapped view", function() return wick.zeros(0):view(2 ^ 32, 2 ^ 32)[1] end, full = true },
}
-- what stands before the hostile value in the positions before it
local FILLERS = {
  { "1", function() return 1 end },
  { "tensor", T },
}

-- ---- the targets ----
local function sorted_functions(tbl, into, prefix, filter)
  local names = {}
  for k, v in pairs(tbl) do
    if type(k) == "string" and type(v) == "function" and (not filter or filter(k)) then names[#names + 1] = k end
  end
  table.sort(names)
  for _, k in ipairs(names) do into[#into + 1] = { prefix .. k, k, tbl[k] } end
end

-- Methods of an object: its own function fields and those of its metatable chain.
local function methods_of(obj)
  local found, list = {}, {}
  local function add(tbl)
    for k, v in pairs(tbl) do
      if type(k) == "string" and type(v) == "function" and not found[k] then found[k] = true; list[#list + 1] = k end
    end
  end
  if type(obj) == "table" then add(obj) end
  local mt = getmetatable(obj)
  local depth = 0
  while type(mt) == "table" and depth < 8 do
    add(mt)
    local idx = rawget(mt, "__index")
    if type(idx) == "table" and idx ~= mt then add(idx) end
    local up = getmetatable(mt)
    mt = up and type(up.__index) == "table" and up.__index or nil
    depth = depth + 1
  end
  table.sort(list)
  return list
end

-- Plausible constructor arguments, so the methods of a built object get swept.
local GOOD = {
  Linear = function() return 3, 2 end,
  Conv2d = function() return 1, 2, 3 end,
  Conv1d = function() return 1, 2, 3 end,
  GroupNorm = function() return 1, 3 end,
  AdaptiveAvgPool2d = function() return 1 end,
  Unflatten = function() return 2, { 1, 3 } end,
  MaxPool2d = function() return 2 end,
  AvgPool2d = function() return 2 end,
  BatchNorm1d = function() return 3 end,
  BatchNorm2d = function() return 3 end,
  LayerNorm = function() return 3 end,
  Embedding = function() return 4, 3 end,
  Sequential = function() return wick.nn.Linear(3, 2), wick.nn.ReLU() end,
  ModuleList = function() return { wick.nn.Linear(3, 2) } end,
  ModuleDict = function() return { { "a", wick.nn.Linear(3, 2) } } end,
  ParameterList = function() return { wick.zeros(2) } end,
  ParameterDict = function() return { { "p", wick.zeros(2) } } end,
  RNN = function() return 3, 2 end,
  LSTM = function() return 3, 2 end,
  GRU = function() return 3, 2 end,
  DataParallel = function() return wick.nn.Linear(3, 2), { device_ids = { "cpu", "cpu" } } end,
  Module = function() end,
}

local function targets()
  local list = {} -- { label, short name, fn, self maker or nil }
  local plain = {}
  sorted_functions(wick, plain, "wick.")
  sorted_functions(wick.cuda, plain, "wick.cuda.")
  sorted_functions(wick.nn.functional, plain, "wick.nn.functional.")
  sorted_functions(wick.nn.utils, plain, "wick.nn.utils.")
  sorted_functions(wick.nn.init, plain, "wick.nn.init.")
  sorted_functions(wick.data, plain, "wick.data.")
  sorted_functions(wick.fft, plain, "wick.fft.")
  sorted_functions(wick.einops, plain, "wick.einops.")
  sorted_functions(wick.vision.ops, plain, "wick.vision.ops.")
  sorted_functions(wick.vision.utils, plain, "wick.vision.utils.")
  sorted_functions(wick.library, plain, "wick.library.")
  sorted_functions(wick.masked, plain, "wick.masked.")
  sorted_functions(wick.audio.functional, plain, "wick.audio.functional.")
  for _, p in ipairs(plain) do list[#list + 1] = p end

  -- tensor methods and metamethods, called with every kind of receiver and a non-tensor one
  local mt = getmetatable(wick.ones(1))
  local methods = {}
  sorted_functions(wick.Tensor, methods, "Tensor.")
  sorted_functions(mt, methods, "mt.")
  for _, m in ipairs(methods) do
    for _, s in ipairs(SELVES) do list[#list + 1] = { m[1] .. " self " .. s[1], m[2], m[3], s[2], not s.full } end
    list[#list + 1] = { m[1] .. " self bad", m[2], m[3], "bad" }
  end

  -- nn: constructors (callable tables), then the methods of one built with good arguments
  local names = {}
  for k, v in pairs(wick.nn) do
    if type(k) == "string" and (type(v) == "function" or (type(v) == "table" and getmetatable(v) and getmetatable(v).__call)) then
      names[#names + 1] = k
    end
  end
  table.sort(names)
  for _, k in ipairs(names) do
    local ctor = wick.nn[k]
    list[#list + 1] = { "wick.nn." .. k, k, function(...) return ctor(...) end }
    if GOOD[k] then
      local ok, obj = pcall(function() return ctor(GOOD[k]()) end)
      if ok and type(obj) == "table" then
        for _, m in ipairs(methods_of(obj)) do
          if m ~= "__gc" and not SKIP_METHOD[m] then
            local mk = function() return ctor(GOOD[k]()) end
            list[#list + 1] = { ("wick.nn.%s():%s"):format(k, m), m, function(self, ...) return self[m](self, ...) end, mk }
          end
        end
      end
    end
  end

  -- optim: constructors, then an optimizer's and a scheduler's methods
  local function params() return wick.nn.Linear(3, 2):parameters() end
  local optnames = {}
  for k, v in pairs(wick.optim) do
    if type(v) == "table" and getmetatable(v) and getmetatable(v).__call then optnames[#optnames + 1] = k end
  end
  for k, v in pairs(wick.optim.lr_scheduler or {}) do
    if type(v) == "table" and getmetatable(v) and getmetatable(v).__call then optnames[#optnames + 1] = "lr_scheduler." .. k end
  end
  table.sort(optnames)
  local function optim_class(name)
    if name:sub(1, 13) == "lr_scheduler." then return wick.optim.lr_scheduler[name:sub(14)], true end
    return wick.optim[name], false
  end
  for _, k in ipairs(optnames) do
    local cls, is_sched = optim_class(k)
    list[#list + 1] = { "wick.optim." .. k, k, function(...) return cls(...) end }
    local mk
    if is_sched then
      mk = function() return cls(wick.optim.SGD(params(), { lr = 0.1 })) end
    elseif k ~= "Optimizer" then
      mk = function() return cls(params(), { lr = 0.1 }) end
    end
    if mk then
      local ok, obj = pcall(mk)
      if ok and type(obj) == "table" then
        for _, m in ipairs(methods_of(obj)) do
          if m ~= "new" then
            list[#list + 1] = { ("wick.optim.%s():%s"):format(k, m), m, function(self, ...) return self[m](self, ...) end, mk }
          end
        end
      end
    end
  end

  -- data: a dataset's and a loader's methods
  local function dataset() return wick.data.TensorDataset(T(), wick.tensor({ 1, 2 })) end
  local objects = {
    { "TensorDataset", dataset },
    { "DataLoader", function() return wick.data.DataLoader(dataset(), { batch_size = 1 }) end },
    { "DistributedSampler", function() return wick.data.DistributedSampler(dataset(), { num_replicas = 3, rank = 1 }) end },
  }
  for _, o in ipairs(objects) do
    local ok, obj = pcall(o[2])
    if ok then
      for _, m in ipairs(methods_of(obj)) do
        list[#list + 1] = { ("wick.data.%s():%s"):format(o[1], m), m, function(self, ...) return self[m](self, ...) end, o[2] }
      end
    end
  end
  return list
end

-- ---- the cases ----
-- A case: target index, receiver kind, argument position (0: no arguments),
-- filler, value. Enumerated in a fixed order, so a case has the same number in
-- every run of the same tree.
local function build_cases(tlist)
  local cases = {}
  local function add(ti, pos, filler, vi) cases[#cases + 1] = { ti, pos, filler, vi } end
  for ti, t in ipairs(tlist) do
    if SKIP[t[1]] == nil then
      local self_kind = t[4]
      if self_kind == "bad" then
        -- a non-tensor receiver, alone
        for vi, v in ipairs(VALUES) do if not v[1]:find("^tensor") then add(ti, 1, 0, vi) end end
      else
        add(ti, 0, 0, 0)
        for vi, v in ipairs(VALUES) do
          if not (ALLOCATES[t[2]] and (v[1] == "2^31" or v[1] == "2^32")) and (limited or not GIGABYTES[v[1]]) then
            add(ti, 1, 0, vi)
            if not t[5] then -- the second and third positions with the main receiver only
              for fi = 1, #FILLERS do
                add(ti, 2, fi, vi)
                add(ti, 3, fi, vi)
              end
            end
          end
        end
      end
    end
  end
  return cases
end

-- ---- one call ----
local HANG = setmetatable({}, { __tostring = function() return "sweep: over the time budget" end })
local deadline = math.huge
local function budget_hook()
  if os.clock() > deadline then deadline = math.huge; error(HANG, 0) end
end

-- The call site: every error must start with this line's position.
local function invoke(f, args, n)
  local results = { f(unpack(args, 1, n)) }
  return results
end
local INVOKE_LINE = debug.getinfo(invoke, "S").linedefined + 1
local PREFIX = ("%s:%d: "):format(SRC, INVOKE_LINE)

local nthreads = wick.get_num_threads()

local function run_case(tlist, case)
  local t = tlist[case[1]]
  local pos, fi, vi = case[2], case[3], case[4]
  local args, n = {}, 0
  if t[4] == "bad" then
    args[1], n = VALUES[vi][2](), 1
  else
    if t[4] then
      local made, value = pcall(t[4])
      if not made then return "unavailable" end -- a receiver this tree refuses to build
      args[1], n = value, 1
    end
    local base = n
    if pos > 0 then
      for p = 1, pos - 1 do args[base + p] = (FILLERS[fi] or FILLERS[1])[2]() end
      args[base + pos] = VALUES[vi][2]()
      n = base + pos
      local sv = SKIP_VALUE[t[1]]
      if sv and sv.skip(args[base + pos]) then return "unavailable" end
    end
  end
  deadline = os.clock() + BUDGET_S
  local ok, err = pcall(invoke, t[3], args, n)
  deadline = math.huge
  -- state a call may legitimately change, put back for the next case
  wick.set_grad_enabled(true)
  pcall(wick.set_num_threads, nthreads)
  wick.manual_seed(1)
  wick.set_default_dtype("float32")
  wick.set_default_device(nil)
  if ok then return "success" end
  if err == HANG then return "hang" end
  if type(err) == "string" and err:sub(1, #PREFIX) == PREFIX then return "clean" end
  return "misplaced", tostring(err)
end

local function describe_case(tlist, case)
  local t = tlist[case[1]]
  local what
  if case[2] == 0 then what = "()"
  elseif t[4] == "bad" then what = "(self = " .. VALUES[case[4]][1] .. ")"
  else
    local parts = {}
    for p = 1, case[2] - 1 do parts[p] = (FILLERS[case[3]] or FILLERS[1])[1] end
    parts[case[2]] = VALUES[case[4]][1]
    what = "(" .. table.concat(parts, ", ") .. ")"
  end
  return t[1] .. what
end

local function setup()
  -- 2 GiB: the CPU allocator keeps freed blocks cached (half a GiB after two default
  -- nn.Transformer()s), and LuaJIT's own allocations need room beside them
  limited = limit_address_space(2 * 1024 * 1024 * 1024)
  if jit then jit.off() end -- so the time-budget hook runs in every Lua loop
  debug.sethook(budget_hook, "", 100000)
  wick.manual_seed(1)
  local tlist = targets()
  return tlist, build_cases(tlist)
end

local function sampled(i) return SAMPLE == 1 or i % SAMPLE == 0 end
-- Dead tensors wait for the collector, which wick paces by their bytes against a Lua heap this
-- large (about 100 MiB of cases: four times that may lie dead); a run of large modules
-- (nn.Transformer() holds 170 MB) then fills the address-space limit, and LuaJIT's own
-- allocations fail there. Collecting past 256 MiB allocated keeps the cases apart.
local function collect_between_cases(i)
  if i % 2000 == 0 or wick.memory_stats()["allocated_bytes.all.current"] > 256 * 2 ^ 20 then collectgarbage() end
end

if describe == nil then
  -- ---- driver mode (tools/sweep.sh) ----
  local tlist, cases = setup()
  io.stdout:setvbuf("line")
  print(("N %d"):format(#cases))
  for i = math.max(1, FROM), math.min(#cases, TO) do
    if sampled(i) then
      io.stdout:write("B ", i, " ", describe_case(tlist, cases[i]), "\n")
      local status, msg = run_case(tlist, cases[i])
      io.stdout:write("R ", i, " ", status, "\n")
      if status ~= "success" and status ~= "clean" and status ~= "unavailable" then
        io.stdout:write("M ", i, " ", describe_case(tlist, cases[i]), " => ", (msg or status):gsub("\n", "\\n"), "\n")
      end
      collect_between_cases(i)
    end
  end
  print("DONE")
  return
end

describe("hostile-argument sweep over the public API", function()
  it("no crash or hang, and every error names the caller's line", function()
    local started = os.clock()
    local tlist, cases = setup()
    local counts = { calls = 0, success = 0, clean = 0, misplaced = 0, hang = 0, unavailable = 0 }
    local bad = {}
    for i, case in ipairs(cases) do
      if sampled(i) then
        local status, msg = run_case(tlist, case)
        counts[status] = counts[status] + 1
        if status ~= "unavailable" then counts.calls = counts.calls + 1 end
        if status ~= "success" and status ~= "clean" and status ~= "unavailable" and #bad < 25 then
          bad[#bad + 1] = ("#%d %s => %s"):format(i, describe_case(tlist, case), msg or status)
        end
        collect_between_cases(i)
      end
    end
    debug.sethook()
    if jit then jit.on() end
    local skipped = {}
    for name, why in pairs(SKIP) do skipped[#skipped + 1] = name .. " (" .. why .. ")" end
    for name, sv in pairs(SKIP_VALUE) do skipped[#skipped + 1] = name .. " given " .. sv.why end
    table.sort(skipped)
    io.stderr:write(("sweep: %d targets, %d cases, sample 1/%d: %d calls, %d clean errors, %d successes, %d errors not at the caller's line, %d hangs, %d cases not run (a receiver this tree refuses, or a value in SKIP_VALUE) (%.1f s); not called: %s\n")
      :format(#tlist, #cases, SAMPLE, counts.calls, counts.clean, counts.success, counts.misplaced, counts.hang,
        counts.unavailable, os.clock() - started, table.concat(skipped, "; ")))
    assert.is_true(counts.calls > 0)
    assert.are.equal(0, counts.misplaced + counts.hang, table.concat(bad, "\n"))
  end)
end)
