-- wick.profiler: profile(fn, opts) runs fn while the core records every op
-- (src/core/profiler.c; the hook is in the binding, src/lua/profiler_lua.c),
-- then gives PyTorch's views of the events: key_averages():table{...} and
-- export_chrome_trace(path).
local wick = require("wick")
local check = require("wick.argcheck")
local core = wick._core

local profiler = {}
local function pack(...) return { n = select("#", ...), ... } end

-- shared with nn.Module.__call (lua/wick/nn/module.lua): `on` while a profile
-- records, and `call`, which runs a module's forward as a range
local profiling = package.loaded["wick._profiling"] or { on = false }
package.loaded["wick._profiling"] = profiling
local MODULE_RANGE = -3 -- the event's device code: a module's forward

-- a module's range name, PyTorch's: its class and its number among the
-- modules of its class this profile has seen ("nn.Module: Linear_0")
local function module_name(m)
  local name = profiling.names[m]
  if not name then
    local cls = (getmetatable(m) or {}).__name or "Module"
    local k = profiling.counts[cls] or 0
    profiling.counts[cls] = k + 1
    name = ("nn.Module: %s_%d"):format(cls, k)
    profiling.names[m] = name
  end
  return name
end

local function range(name, code, fn, ...)
  local ev = core.profiler_begin(name, code)
  local res = pack(pcall(fn, ...))
  core.profiler_end(ev)
  if not res[1] then error(res[2], 0) end
  return (table.unpack or unpack)(res, 2, res.n)
end

function profiling.call(m, ...) return range(module_name(m), MODULE_RANGE, m.forward, m, ...) end

local Profile = {}
Profile.__index = Profile
Profile.__name = "wick.profiler.profile"

local function shape_str(shapes)
  if not shapes then return "" end
  local parts = {}
  for i, s in ipairs(shapes) do parts[i] = "[" .. table.concat(s, ", ") .. "]" end
  return "[" .. table.concat(parts, ", ") .. "]"
end

-- self time: the event's time less its children's
local function finish(events)
  for _, e in ipairs(events) do
    e.dur_us = e.end_us - e.start_us
    e.self_us = e.dur_us
    e.self_bytes = e.bytes
  end
  for _, e in ipairs(events) do
    local p = events[e.parent]
    if p then
      p.self_us = p.self_us - e.dur_us
      p.self_bytes = p.self_bytes - e.bytes
    end
  end
  return events
end

-- GPU time: an op's own (device_us, timed by CUDA events around it), and with
-- that of the events inside it (a range's is its ops')
local function device_totals(events)
  local total = {}
  for i = #events, 1, -1 do -- children come after their parents
    local e = events[i]
    total[i] = (total[i] or 0) + (e.device_us or 0)
    if e.parent > 0 then total[e.parent] = (total[e.parent] or 0) + total[i] end
  end
  return total
end

local OPTIONS = { record_shapes = true, profile_memory = true, with_stack = true, max_events = true,
  activities = true, schedule = true, on_trace_ready = true, with_flops = true, with_modules = true,
  use_cuda = true, use_device = true, enabled = true } -- (the last three: torch.autograd.profiler.profile's)

--- PyTorch's ProfilerActivity: every device's ops are recorded whatever the list says
profiler.ProfilerActivity = { CPU = "cpu", CUDA = "cuda" }

--- wick.profiler.schedule{wait = 0, warmup = 0, active = 1, ["repeat"] = 0, skip_first = 0}
--- (or positionally): for each step, "none", "warmup", "record" or
--- "record_and_save" (the last active step of a cycle), as PyTorch's
function profiler.schedule(wait, warmup, active, rep, skip_first)
  if type(wait) == "table" then
    local o = check.options(wait, "schedule", { wait = "integer", warmup = "integer", active = "integer",
      ["repeat"] = "integer", skip_first = "integer" })
    wait, warmup, active, rep, skip_first = o.wait, o.warmup, o.active, o["repeat"], o.skip_first
  end
  wait, warmup, active = wait or 0, warmup or 0, active or 1
  rep, skip_first = rep or 0, skip_first or 0
  for name, v in pairs({ wait = wait, warmup = warmup, ["repeat"] = rep, skip_first = skip_first }) do
    check.int(v, "schedule", name, 0)
  end
  check.int(active, "schedule", "active", 1)
  local cycle = wait + warmup + active
  return function(step)
    if step < skip_first then return "none" end
    local s = step - skip_first
    if rep > 0 and math.floor(s / cycle) >= rep then return "none" end
    local mod = s % cycle
    if mod < wait then return "none" end
    if mod < wait + warmup then return "warmup" end
    return mod < cycle - 1 and "record" or "record_and_save"
  end
end

--- wick.profiler.tensorboard_trace_handler(dir[, worker_name]): an
--- on_trace_ready that writes each window's Chrome trace into dir, as
--- <worker_name>.<n>.pt.trace.json (TensorBoard's profiler plugin's layout)
function profiler.tensorboard_trace_handler(dir, worker_name)
  check.string(dir, "tensorboard_trace_handler", "dir_name")
  if worker_name ~= nil then check.string(worker_name, "tensorboard_trace_handler", "worker_name") end
  local n = 0
  return function(prof)
    os.execute("mkdir -p '" .. dir:gsub("'", "'\\''") .. "'")
    n = n + 1
    prof:export_chrome_trace(("%s/%s.%d.pt.trace.json"):format(dir, worker_name or "wick", n))
  end
end

-- The profile of the events that start in [from_us, to_us)
local function window(self, from_us, to_us)
  local events, map = {}, {}
  for i, e in ipairs(self.events) do
    if e.start_us >= from_us and e.start_us < to_us then
      local c = {}
      for k, v in pairs(e) do c[k] = v end
      events[#events + 1] = c
      map[i] = #events
      c.parent = map[e.parent] or 0
    end
  end
  return setmetatable({ events = events, dropped = 0, record_shapes = self.record_shapes,
    profile_memory = self.profile_memory }, getmetatable(self))
end

-- The scheduled windows of a finished profile, each given to on_trace_ready.
local function deliver(prof, steps, schedule, on_trace_ready)
  local from
  for k, st in ipairs(steps) do
    local action = schedule(k - 1)
    if (action == "record" or action == "record_and_save") and not from then from = st.start_us end
    if action == "none" or action == "warmup" then from = nil end
    if action == "record_and_save" and from then
      local w = window(prof, from, st.end_us)
      w.step_num = k -- (PyTorch's prof.step_num in the handler: the steps taken)
      on_trace_ready(w)
      from = nil
    end
  end
end

--- wick.profiler.profile(fn[, {record_shapes = false, profile_memory = true, max_events = 1e6,
--- schedule = profiler.schedule{...}, on_trace_ready = f, activities = {...}}]):
--- fn(prof_steps) runs profiled; fn may call prof_steps:step() at the end of
--- each training step (PyTorch's prof.step()): each step is a range
--- "ProfilerStep#N", and with a schedule each cycle's active steps go to
--- on_trace_ready as a profile of their own once fn returns
function profiler.profile(fn, opts)
  if type(fn) ~= "function" then check.expected("wick.profiler.profile", "fn", "a function", fn) end
  opts = opts or {}
  if type(opts) ~= "table" then check.expected("wick.profiler.profile", "opts", "a table", opts) end
  for k in pairs(opts) do
    if not OPTIONS[k] then core.error(("wick.profiler.profile: unknown option '%s'"):format(tostring(k))) end
  end
  if opts.activities ~= nil then
    check.table(opts.activities, "wick.profiler.profile", "activities")
    for i, a in ipairs(opts.activities) do
      if a ~= "cpu" and a ~= "cuda" then
        check.expected("wick.profiler.profile", ("activities[%d]"):format(i), "a ProfilerActivity", a)
      end
    end
  end
  if opts.schedule ~= nil and type(opts.schedule) ~= "function" then
    check.expected("wick.profiler.profile", "schedule", "a function (wick.profiler.schedule{...})", opts.schedule)
  end
  if opts.on_trace_ready ~= nil and type(opts.on_trace_ready) ~= "function" then
    check.expected("wick.profiler.profile", "on_trace_ready", "a function", opts.on_trace_ready)
  end
  local max_events = opts.max_events or 1000000
  if not core.profiler_hooked and not profiler._warned_unhooked then
    profiler._warned_unhooked = true
    wick._warn("wick.profiler.profile: this build has no profiler hook (WICK_PROFILER_HOOK=OFF): ops are not"
      .. " recorded, only record_function ranges")
  end
  -- the steps: with a schedule, "ProfilerStep#N" ranges from the start, each
  -- step() ending one and opening the next (PyTorch's); their times split the windows
  local steps, open = 0, nil
  local handle = { step_num = 0 } -- (PyTorch's prof.step_num: the step() calls so far)
  local function next_step()
    if open then core.profiler_end(open) end
    open = core.profiler_begin(("ProfilerStep#%d"):format(steps), -2)
    steps = steps + 1
  end
  function handle.step()
    handle.step_num = handle.step_num + 1
    if opts.schedule then next_step() end
  end
  core.profiler_start(max_events, opts.record_shapes and true or false)
  profiling.names, profiling.counts = setmetatable({}, { __mode = "k" }), {}
  profiling.on = true
  if opts.schedule then next_step() end
  local ok, err = pcall(fn, handle)
  if open then core.profiler_end(open) end
  profiling.on = false
  core.profiler_stop()
  local events, dropped = core.profiler_events()
  if not ok then error(err, 0) end
  if dropped > 0 then
    wick._warn(("wick.profiler.profile: %d events did not fit in max_events = %d and were dropped"):format(dropped,
      max_events))
  end
  local prof = setmetatable({ events = finish(events), dropped = dropped, step_num = handle.step_num,
    record_shapes = opts.record_shapes and true or false, profile_memory = opts.profile_memory ~= false }, Profile)
  if opts.on_trace_ready then
    if opts.schedule then
      local ranges = {} -- the step ranges, in order
      for _, e in ipairs(prof.events) do
        if e.device == -2 and e.name:match("^ProfilerStep#%d+$") then ranges[#ranges + 1] = e end
      end
      deliver(prof, ranges, opts.schedule, opts.on_trace_ready)
    else
      opts.on_trace_ready(prof)
    end
  end
  return prof
end

--- wick.profiler.record_function(name, fn, ...): fn(...) as a named range
function profiler.record_function(name, fn, ...)
  check.string(name, "wick.profiler.record_function", "name")
  if type(fn) ~= "function" then check.expected("wick.profiler.record_function", "fn", "a function", fn) end
  return range(name, nil, fn, ...)
end

-- ---- key_averages ----

local Averages = {}
Averages.__index = Averages
Averages.__name = "wick.profiler.EventList"

local function device_name(code)
  if code == nil or code < 0 then return nil end
  local ok, _, _, name = pcall(core.device_of_code, code)
  return ok and name or nil
end

--- prof:key_averages([{group_by_input_shape = false}]): one row per op name
--- (and input shapes), with count, self and total time and bytes
function Profile:key_averages(opts)
  opts = opts or {}
  for k in pairs(opts) do
    if k ~= "group_by_input_shape" then
      core.error(("key_averages: unknown option '%s'"):format(tostring(k)))
    end
  end
  local by_shape = opts.group_by_input_shape and true or false
  local rows, order = {}, {}
  local device = false
  local device_total = device_totals(self.events)
  -- a module range's own time and bytes count as its nearest other event's
  local extra_us, extra_bytes = {}, {}
  for _, e in ipairs(self.events) do
    if e.device == MODULE_RANGE then
      local p = e.parent
      while p > 0 and self.events[p].device == MODULE_RANGE do p = self.events[p].parent end
      if p > 0 then
        extra_us[p] = (extra_us[p] or 0) + e.self_us
        extra_bytes[p] = (extra_bytes[p] or 0) + e.self_bytes
      end
    end
  end
  for i, e in ipairs(self.events) do
    if e.device ~= MODULE_RANGE then -- modules' ranges: in the trace only, as in PyTorch
      local shapes = by_shape and shape_str(e.shapes) or ""
      -- PyTorch's table puts the profiler steps in one row
      local name = e.name:find("^ProfilerStep#") and "ProfilerStep*" or e.name
      local key = name .. "\0" .. shapes
      local r = rows[key]
      if not r then
        r = { key = name, input_shapes = shapes, count = 0, self_cpu_time_total = 0, cpu_time_total = 0,
          self_cpu_memory_usage = 0, cpu_memory_usage = 0, self_device_time_total = 0, device_time_total = 0 }
        rows[key] = r
        order[#order + 1] = r
      end
      r.count = r.count + 1
      r.self_cpu_time_total = r.self_cpu_time_total + e.self_us + (extra_us[i] or 0)
      r.cpu_time_total = r.cpu_time_total + e.dur_us
      r.self_cpu_memory_usage = r.self_cpu_memory_usage + e.self_bytes + (extra_bytes[i] or 0)
      r.cpu_memory_usage = r.cpu_memory_usage + e.bytes
      r.self_device_time_total = r.self_device_time_total + (e.device_us or 0)
      r.device_time_total = r.device_time_total + device_total[i]
      if e.device_us then device = true end
    end
  end
  for _, r in ipairs(order) do
    r.cpu_time = r.cpu_time_total / r.count
    r.device_time = r.device_time_total / r.count
    -- PyTorch 1.x's names of the GPU columns
    r.self_cuda_time_total, r.cuda_time_total, r.cuda_time = r.self_device_time_total, r.device_time_total,
      r.device_time
  end
  return setmetatable({ rows = order, by_shape = by_shape, memory = self.profile_memory, device = device }, Averages)
end

-- PyTorch's _format_time: us below 1 ms, ms below 1 s, else s
local function format_time(us)
  if us >= 1e6 then return ("%.3fs"):format(us / 1e6) end
  if us >= 1e3 then return ("%.3fms"):format(us / 1e3) end
  return ("%.3fus"):format(us)
end

local function format_memory(b)
  local a = math.abs(b)
  if a >= 1024 ^ 3 then return ("%.2f Gb"):format(b / 1024 ^ 3) end
  if a >= 1024 ^ 2 then return ("%.2f Mb"):format(b / 1024 ^ 2) end
  if a >= 1024 then return ("%.2f Kb"):format(b / 1024) end
  return ("%d b"):format(b)
end

local SORT_KEYS = { self_cpu_time_total = true, cpu_time_total = true, count = true, cpu_time = true,
  self_cpu_memory_usage = true, cpu_memory_usage = true, self_device_time_total = true, device_time_total = true,
  device_time = true, self_cuda_time_total = true, cuda_time_total = true, cuda_time = true }

--- averages:table{sort_by = "self_cpu_time_total", row_limit = 100}: PyTorch-like text
function Averages:table(opts, row_limit)
  if type(opts) ~= "table" then opts = { sort_by = opts, row_limit = row_limit } end -- PyTorch's (sort_by, row_limit)
  for k in pairs(opts) do
    if k ~= "sort_by" and k ~= "row_limit" then core.error(("table: unknown option '%s'"):format(tostring(k))) end
  end
  local sort_by = opts.sort_by or "self_cpu_time_total"
  if not SORT_KEYS[sort_by] then
    local keys = {}
    for k in pairs(SORT_KEYS) do keys[#keys + 1] = k end
    table.sort(keys)
    core.error(("table: sort_by must be one of %s, got '%s'"):format(table.concat(keys, ", "), tostring(sort_by)))
  end
  row_limit = opts.row_limit or 100
  if row_limit < 0 then row_limit = math.huge end -- (row_limit = -1: every row, as PyTorch's)
  local rows = {}
  for i, r in ipairs(self.rows) do rows[i] = r end
  table.sort(rows, function(a, b)
    if a[sort_by] ~= b[sort_by] then return a[sort_by] > b[sort_by] end
    return a.key < b.key
  end)
  local total_self, total_device = 0, 0
  for _, r in ipairs(rows) do
    total_self = total_self + r.self_cpu_time_total
    total_device = total_device + r.self_device_time_total
  end
  local name_w = 4
  for i = 1, math.min(#rows, row_limit) do name_w = math.max(name_w, #rows[i].key) end
  name_w = math.min(name_w, 55)
  local cols = { { "Name", name_w }, { "Self CPU %", 12 }, { "Self CPU", 12 }, { "CPU total %", 12 },
    { "CPU total", 12 }, { "CPU time avg", 12 } }
  if self.device then -- PyTorch's columns when a GPU was timed
    for _, c in ipairs({ "Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg" }) do cols[#cols + 1] = { c, 12 } end
  end
  if self.memory then
    cols[#cols + 1] = { "CPU Mem", 12 }
    cols[#cols + 1] = { "Self CPU Mem", 12 }
  end
  cols[#cols + 1] = { "# of Calls", 12 }
  local shape_w = 0
  if self.by_shape then
    for i = 1, math.min(#rows, row_limit) do shape_w = math.max(shape_w, #rows[i].input_shapes) end
    shape_w = math.max(shape_w, 12)
    cols[#cols + 1] = { "Input Shapes", shape_w }
  end
  local function line(cells)
    local out = {}
    for i, c in ipairs(cols) do
      local text = tostring(cells[i])
      if i == 1 then
        if #text > c[2] then text = text:sub(1, c[2] - 3) .. "..." end
        out[i] = ("%-" .. c[2] .. "s"):format(text)
      elseif c[1] == "Input Shapes" then
        out[i] = text
      else
        out[i] = ("%" .. c[2] .. "s"):format(text)
      end
    end
    return (table.concat(out, "  "):gsub("%s+$", ""))
  end
  local sep, head = {}, {}
  for i, c in ipairs(cols) do sep[i], head[i] = ("-"):rep(c[2]), c[1] end
  local dashes = table.concat(sep, "  ")
  local out = { dashes, line(head), dashes }
  local function pct(x, total)
    total = total or total_self
    return total > 0 and ("%.2f%%"):format(100 * x / total) or "0.00%"
  end
  for i = 1, math.min(#rows, row_limit) do
    local r = rows[i]
    local cells = { r.key, pct(r.self_cpu_time_total), format_time(r.self_cpu_time_total), pct(r.cpu_time_total),
      format_time(r.cpu_time_total), format_time(r.cpu_time) }
    if self.device then
      cells[#cells + 1] = format_time(r.self_device_time_total)
      cells[#cells + 1] = pct(r.self_device_time_total, total_device)
      cells[#cells + 1] = format_time(r.device_time_total)
      cells[#cells + 1] = format_time(r.device_time)
    end
    if self.memory then
      cells[#cells + 1] = format_memory(r.cpu_memory_usage)
      cells[#cells + 1] = format_memory(r.self_cpu_memory_usage)
    end
    cells[#cells + 1] = r.count
    if self.by_shape then cells[#cells + 1] = r.input_shapes end
    out[#out + 1] = line(cells)
  end
  out[#out + 1] = dashes
  out[#out + 1] = "Self CPU time total: " .. format_time(total_self)
  if self.device then out[#out + 1] = "Self CUDA time total: " .. format_time(total_device) end
  return table.concat(out, "\n") .. "\n"
end

Averages.__tostring = function(a) return a:table() end

-- ---- Chrome trace ----

local function json_string(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    if c == '"' then return '\\"' elseif c == "\\" then return "\\\\" end
    return ("\\u%04x"):format(c:byte())
  end) .. '"'
end

--- prof:export_chrome_trace(path): Chrome trace JSON ("X" events, us) for
--- chrome://tracing and Perfetto
function Profile:export_chrome_trace(path)
  check.string(path, "export_chrome_trace", "path")
  local f, err = io.open(path, "w")
  if not f then core.error("export_chrome_trace: cannot open '" .. path .. "' for writing: " .. tostring(err)) end
  -- the CPU ops on thread 1, what they ran on GPU N on "thread" 1000 + N
  local parts = { '{"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "CPU"}}' }
  local gpu_tracks = {}
  for _, e in ipairs(self.events) do
    local args = {}
    local dev = device_name(e.device)
    if dev then args[#args + 1] = '"Device": ' .. json_string(dev) end
    if e.shapes then args[#args + 1] = '"Input Dims": ' .. json_string(shape_str(e.shapes)) end
    if self.profile_memory then args[#args + 1] = ('"Bytes": %d'):format(e.bytes) end
    parts[#parts + 1] = ('{"ph": "X", "cat": "%s", "name": %s, "pid": 1, "tid": 1, "ts": %.3f, "dur": %.3f,'
      .. ' "args": {%s}}'):format(e.device == -2 and "user_annotation" or e.device == MODULE_RANGE and "python_function"
        or "cpu_op", json_string(e.name), e.start_us,
        e.dur_us, table.concat(args, ", "))
    if e.device_us then
      local tid = 1000 + (math.floor(e.device / 4) - 1) -- the binding's device code: (index + 1) * 4 + type
      if not gpu_tracks[tid] then
        gpu_tracks[tid] = true
        parts[#parts + 1] = ('{"ph": "M", "name": "thread_name", "pid": 1, "tid": %d, "args": {"name": %s}}')
          :format(tid, json_string((dev or "cuda") .. " stream"))
      end
      -- a record_function range's GPU span is PyTorch's gpu_user_annotation, an op's a kernel
      parts[#parts + 1] = ('{"ph": "X", "cat": "%s", "name": %s, "pid": 1, "tid": %d, "ts": %.3f, "dur": %.3f,'
        .. ' "args": {"Device": %s}}'):format(e.device == -2 and "gpu_user_annotation" or "kernel",
          json_string(e.name), tid, e.device_start_us, e.device_us, json_string(dev or "cuda"))
    end
  end
  local ok, werr = f:write('{"traceEvents": [\n', table.concat(parts, ",\n"), '\n], "displayTimeUnit": "ms"}\n')
  f:close()
  if not ok then core.error("export_chrome_trace: writing '" .. path .. "' failed: " .. tostring(werr)) end
  return path
end

Profile.__tostring = function(p) return p:key_averages():table() end

check.receivers(Profile, "profile")
check.receivers(Averages, "key_averages")

return profiler
