-- wick.profiler: every op is an event, ranges nest, the table and the trace.
local wick = require("wick")

local function by_name(prof, name)
  for _, r in ipairs(prof:key_averages().rows) do
    if r.key == name then return r end
  end
end

-- the text of the profile's Chrome trace
local function trace_text(prof)
  local path = os.tmpname()
  prof:export_chrome_trace(path)
  local f = assert(io.open(path))
  local text = f:read("*a")
  f:close()
  os.remove(path)
  return text
end

describe("wick.profiler.profile", function()
  it("records every op with its count, and nothing once it returns", function()
    local a, b = wick.randn(4, 5), wick.randn(4, 5)
    local prof = wick.profiler.profile(function()
      for _ = 1, 3 do local _ = (a + b):relu() end
      local _ = a:matmul(b:t())
    end)
    assert.are.equal(3, by_name(prof, "add").count)
    assert.are.equal(3, by_name(prof, "relu").count)
    assert.are.equal(1, by_name(prof, "matmul").count)
    assert.is_nil(by_name(prof, "size"))
    assert.are.equal(8, #prof.events) -- and b:t()
    local after = wick.profiler.profile(function() end)
    assert.are.equal(0, #after.events)
    local _ = a + b -- off again: nothing to record into
    assert.are.equal(0, #after.events)
  end)

  it("nests ops in record_function ranges: total includes children, self does not", function()
    local x = wick.randn(64, 64)
    local prof = wick.profiler.profile(function()
      wick.profiler.record_function("outer", function()
        for _ = 1, 4 do local _ = x:matmul(x) end
      end)
    end)
    local outer = by_name(prof, "outer")
    local mm = by_name(prof, "matmul")
    assert.are.equal(4, mm.count)
    assert.is_true(outer.cpu_time_total >= mm.cpu_time_total)
    assert.is_true(math.abs(outer.self_cpu_time_total - (outer.cpu_time_total - mm.cpu_time_total)) < 1e-6)
    for _, e in ipairs(prof.events) do
      if e.name == "matmul" then assert.are.equal("outer", prof.events[e.parent].name) end
    end
  end)

  it("record_function returns fn's results and passes errors on", function()
    assert.are.same({ 1, 2 }, { wick.profiler.record_function("r", function(p, q) return p, q end, 1, 2) })
    assert.has_error(function() wick.profiler.record_function("r", function() error("boom", 0) end) end, "boom")
  end)

  it("an op that raises inside the profile is closed, and later ops do not nest in it", function()
    local x = wick.randn(2, 3)
    local prof = wick.profiler.profile(function()
      assert.is_false(pcall(function() return x:matmul(x) end))
      local _ = x + x
    end)
    assert.are.equal(2, #prof.events)
    assert.are.equal("matmul", prof.events[1].name)
    assert.are.equal(0, prof.events[2].parent)
    assert.is_true(prof.events[1].end_us >= prof.events[1].start_us)
  end)

  it("records input shapes and groups by them", function()
    local a, b = wick.randn(2, 3), wick.randn(4, 3)
    local prof = wick.profiler.profile(function()
      local _ = a + a
      local _ = b + b
      local _ = b + b
    end, { record_shapes = true })
    local rows = prof:key_averages({ group_by_input_shape = true }).rows
    local seen = {}
    for _, r in ipairs(rows) do seen[r.input_shapes] = r.count end
    assert.are.equal(1, seen["[[2, 3], [2, 3]]"])
    assert.are.equal(2, seen["[[4, 3], [4, 3]]"])
  end)

  it("counts the bytes an op allocates", function()
    local prof = wick.profiler.profile(function() local _ = wick.zeros(1000, 1000) end)
    assert.are.equal(4e6, by_name(prof, "zeros").cpu_memory_usage)
  end)

  it("prints a PyTorch-like table, sorted and limited", function()
    local x = wick.randn(128, 128)
    local prof = wick.profiler.profile(function()
      for _ = 1, 5 do local _ = x:matmul(x) end
      local _ = x:relu()
    end)
    local text = prof:key_averages():table({ sort_by = "count", row_limit = 1 })
    assert.is_truthy(text:find("Name", 1, true))
    assert.is_truthy(text:find("Self CPU %", 1, true))
    assert.is_truthy(text:find("# of Calls", 1, true))
    assert.is_truthy(text:find("\nmatmul ", 1, true))
    assert.is_falsy(text:find("\nrelu ", 1, true))
    assert.is_truthy(text:find("Self CPU time total: ", 1, true))
    assert.has_error(function() prof:key_averages():table({ sort_by = "nope" }) end)
    assert.has_error(function() prof:key_averages():table({ row_limt = 3 }) end)
  end)

  it("writes a Chrome trace of X events in microseconds", function()
    local x = wick.randn(8, 8)
    local prof = wick.profiler.profile(function()
      wick.profiler.record_function("my \"range\"", function() local _ = x:matmul(x) end)
    end, { record_shapes = true })
    local text = trace_text(prof)
    assert.is_truthy(text:find('^{"traceEvents": %['))
    assert.is_truthy(text:find('"name": "my \\"range\\""', 1, true))
    assert.is_truthy(text:find('"cat": "user_annotation"', 1, true))
    assert.is_truthy(text:find('"ph": "X", "cat": "cpu_op", "name": "matmul"', 1, true))
    assert.is_truthy(text:find('"Input Dims": "[[8, 8], [8, 8]]"', 1, true))
    assert.is_truthy(text:find('"Device": "cpu"', 1, true))
    local n = 0
    for _ in text:gmatch('"ph": "X"') do n = n + 1 end
    assert.are.equal(2, n)
    assert.has_error(function() prof:export_chrome_trace("/nonexistent-dir/x.json") end)
  end)

  it("rejects bad arguments and nested profiles", function()
    assert.has_error(function() wick.profiler.profile(42) end)
    assert.has_error(function() wick.profiler.profile(function() end, { record_shape = true }) end)
    assert.has_error(function() wick.profiler.profile(function() end, { max_events = 0 }) end)
    assert.has_error(function()
      wick.profiler.profile(function() wick.profiler.profile(function() end) end)
    end)
    -- the outer profile stopped when its fn raised: a new one can start
    assert.are.equal(0, #wick.profiler.profile(function() end).events)
  end)

  it("passes fn's error on after stopping", function()
    assert.has_error(function() wick.profiler.profile(function() error("inner", 0) end) end, "inner")
    assert.are.equal(0, #wick.profiler.profile(function() end).events)
  end)

  it("puts the profiler steps in one row, as PyTorch's table does", function()
    local x = wick.randn(4, 4)
    local prof = wick.profiler.profile(function()
      for i = 1, 3 do wick.profiler.record_function("ProfilerStep#" .. i, function() local _ = x:relu() end) end
    end)
    local steps = by_name(prof, "ProfilerStep*")
    assert.are.equal(3, steps.count)
    assert.is_nil(by_name(prof, "ProfilerStep#1"))
    local text = trace_text(prof) -- the trace keeps each step's own name
    assert.is_truthy(text:find('"name": "ProfilerStep#3"', 1, true))
  end)

  it("shows PyTorch's CUDA columns only when events were timed on a GPU", function()
    local x = wick.randn(4, 4)
    local prof = wick.profiler.profile(function()
      wick.profiler.record_function("step", function()
        local _ = x:matmul(x)
        local _ = x:relu()
      end)
    end)
    local text = prof:key_averages():table()
    assert.is_falsy(text:find("CUDA", 1, true)) -- a CPU run: no GPU columns
    for _, r in ipairs(prof:key_averages().rows) do assert.are.equal(0, r.self_device_time_total) end
    -- as if matmul and relu had run 30 us and 10 us on cuda:0 (device code (0 + 1) * 4 + 1)
    for _, e in ipairs(prof.events) do
      if e.name ~= "step" then
        e.device = 5
        e.device_us = e.name == "matmul" and 30 or 10
        e.device_start_us = e.start_us + 1
      end
    end
    local avg = prof:key_averages()
    assert.are.equal(30, by_name(prof, "matmul").self_device_time_total)
    local step = by_name(prof, "step")
    assert.are.equal(0, step.self_device_time_total)
    assert.are.equal(40, step.device_time_total) -- a range's GPU time is its ops'
    assert.are.equal(40, step.cuda_time_total)
    text = avg:table({ sort_by = "self_cuda_time_total" })
    local head = text:match("^[^\n]*\n([^\n]*)")
    assert.is_truthy(head:find("CPU time avg  +Self CUDA  +Self CUDA %%  +CUDA total  +CUDA time avg  +CPU Mem"), head)
    assert.is_truthy(text:find("\nmatmul .-30%.000us  +75%.00%%"), text)
    assert.is_truthy(text:find("Self CUDA time total: 40.000us", 1, true))
    -- sorted by GPU time: matmul, relu, then the range (0 us of its own)
    assert.is_truthy(text:find("\nmatmul.*\nrelu.*\nstep"), text)
    local trace = trace_text(prof)
    assert.is_truthy(trace:find('"tid": 1000, "args": {"name": "cuda:0 stream"}', 1, true))
    assert.is_truthy(trace:find('"ph": "X", "cat": "kernel", "name": "matmul", "pid": 1, "tid": 1000', 1, true))
    local n = 0
    for _ in trace:gmatch('"cat": "kernel"') do n = n + 1 end
    assert.are.equal(2, n)
  end)

  local gpu = wick.cuda.is_available() and it or pending
  gpu("times CUDA ops on the GPU (needs a CUDA GPU)", function()
    local x = wick.randn(512, 512, { device = "cuda" })
    local _ = x:matmul(x)
    wick.cuda.synchronize()
    local prof = wick.profiler.profile(function()
      wick.profiler.record_function("step", function()
        for _ = 1, 3 do local _ = x:matmul(x):relu() end
      end)
      wick.cuda.synchronize()
    end)
    local mm, step = by_name(prof, "matmul"), by_name(prof, "step")
    assert.is_true(mm.self_device_time_total > 0)
    assert.is_true(step.device_time_total >= mm.self_device_time_total)
    assert.is_true(prof:key_averages():table():find("Self CUDA", 1, true) ~= nil)
    for _, e in ipairs(prof.events) do
      if e.name == "matmul" then
        assert.is_true(e.device_us > 0 and e.device_start_us >= 0)
        assert.is_true(e.device_start_us + 1e3 >= e.start_us) -- roughly on the host's clock
      end
    end
  end)

  it("names the ops of every kind of binding function, also one a script took before profiling", function()
    assert.is_true(wick._core.profiler_hooked) -- the default build has the hook
    local x, y = wick.randn(4, 4), wick.randn(4, 4)
    local relu = x.relu -- taken before the profile starts: still recorded
    local prof = wick.profiler.profile(function()
      local _ = relu(x)
      _ = x:exp_() -- an in-place closure of the unary table
      _ = -x -- a metamethod
      _ = x * y
      _ = x:sum(1) -- a reduction's closure
      _ = x:view(16) -- a view's closure
      _ = x:clamp(0, 1)
      _ = wick.zeros(2) -- a creation closure of the module table
      _ = x:size() -- metadata: not an op
      _ = x:dim()
    end)
    local names = {}
    for _, e in ipairs(prof.events) do names[#names + 1] = e.name end
    assert.are.same({ "relu", "exp_", "unm", "mul", "sum", "view", "clamp", "zeros" }, names)
  end)

  it("a build without the hook (WICK_PROFILER_HOOK=OFF) records only ranges, and says so", function()
    if wick._core.profiler_hooked then
      -- what profile does then, with the flag the binding reports faked
      local core = wick._core
      core.profiler_hooked = false
      local warned
      local saved = wick._warn
      wick._warn = function(msg) warned = msg end
      local ok, err = pcall(wick.profiler.profile, function() end)
      wick._warn, core.profiler_hooked = saved, true
      wick.profiler._warned_unhooked = nil
      assert(ok, err)
      assert.is_truthy(warned and warned:find("WICK_PROFILER_HOOK=OFF", 1, true), warned)
    end
  end)

  it("records each module's forward as a range named like PyTorch's, in the trace only", function()
    local nn = wick.nn
    local model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    local x = wick.randn(3, 4)
    local prof = wick.profiler.profile(function()
      wick.profiler.record_function("step", function() local _ = model(x) end)
      local _ = model(x)
    end)
    local ranges = {}
    for i, e in ipairs(prof.events) do
      if e.name:find("^nn%.Module: ") then ranges[#ranges + 1] = e.name .. "<" .. (prof.events[e.parent] or { name = "" }).name end
      if e.name == "linear" then assert.is_truthy(prof.events[e.parent].name:find("^nn%.Module: Linear_%d$"), i) end
    end
    assert.are.same({ "nn.Module: Sequential_0<step", "nn.Module: Linear_0<nn.Module: Sequential_0",
      "nn.Module: ReLU_0<nn.Module: Sequential_0", "nn.Module: Linear_1<nn.Module: Sequential_0",
      "nn.Module: Sequential_0<", "nn.Module: Linear_0<nn.Module: Sequential_0",
      "nn.Module: ReLU_0<nn.Module: Sequential_0", "nn.Module: Linear_1<nn.Module: Sequential_0" }, ranges)
    -- not rows of the table (PyTorch shows them in the trace only); their own
    -- time counts as the enclosing event's, so the step's self time keeps it
    assert.is_nil(by_name(prof, "nn.Module: Linear_0"))
    local step = by_name(prof, "step")
    local ops = 0
    for _, e in ipairs(prof.events) do
      if e.name == "linear" or e.name == "relu" then
        local p = e
        repeat p = prof.events[p.parent] until not p or p.name == "step"
        if p then ops = ops + e.dur_us end
      end
    end
    assert.is_true(math.abs(step.self_cpu_time_total - (step.cpu_time_total - ops)) < 1e-6)
    local text = trace_text(prof)
    assert.is_truthy(text:find('"cat": "python_function", "name": "nn.Module: Linear_1"', 1, true))
    -- off again: a module call records nothing, and errors pass through
    local after = wick.profiler.profile(function() end)
    local _ = model(x)
    assert.are.equal(0, #after.events)
    assert.has_error(function()
      wick.profiler.profile(function() model(wick.randn(3, 5)) end)
    end)
  end)

  it("records each autograd node's backward inside the backward op", function()
    local w = wick.randn(4, 4, { requires_grad = true })
    local x = wick.randn(2, 4)
    local prof = wick.profiler.profile(function()
      local y = x:matmul(w):relu():sum()
      y:backward()
    end)
    local names = {}
    for _, e in ipairs(prof.events) do
      if e.name:find("Backward") then
        names[#names + 1] = e.name
        assert.are.equal("backward", prof.events[e.parent].name)
      end
    end
    assert.is_true(#names >= 3, table.concat(names, " "))
    local bw = by_name(prof, "backward")
    assert.is_true(bw.self_cpu_time_total < bw.cpu_time_total)
  end)

  it("records the optimizers' fused Adam and SGD steps", function()
    for name, make in pairs({ _adam_step = wick.optim.Adam, _sgd_step = wick.optim.SGD }) do
      local p = wick.randn(8, { requires_grad = true })
      local opt = make({ p }, { lr = 0.1, momentum = name == "_sgd_step" and 0.9 or nil })
      p.grad = wick.ones(8)
      local prof = wick.profiler.profile(function() opt:step() end)
      local seen = false
      for _, e in ipairs(prof.events) do seen = seen or e.name == name end
      assert.is_true(seen, name)
    end
  end)
end)

describe("wick.profiler with PyTorch's schedule, step and on_trace_ready", function()
  local P = wick.profiler
  it("gives each cycle's active steps to on_trace_ready, as ProfilerStep#N ranges", function()
    local x = wick.randn(8, 8)
    local got = {}
    local prof = P.profile(function(p)
      for _ = 1, 9 do
        x:matmul(x)
        p:step()
      end
    end, { activities = { P.ProfilerActivity.CPU, P.ProfilerActivity.CUDA }, record_shapes = true,
      schedule = P.schedule { wait = 1, warmup = 1, active = 2, ["repeat"] = 2 },
      on_trace_ready = function(pr) got[#got + 1] = pr end })
    assert.are.equal(2, #got)
    local function steps(pr)
      local names, mm = {}, 0
      for _, e in ipairs(pr.events) do
        if e.name:match("^ProfilerStep") then names[#names + 1] = e.name end
        if e.name == "matmul" then mm = mm + 1 end
      end
      return table.concat(names, " "), mm
    end
    assert.are.same({ "ProfilerStep#2 ProfilerStep#3", 2 }, { steps(got[1]) })
    assert.are.same({ "ProfilerStep#6 ProfilerStep#7", 2 }, { steps(got[2]) })
    -- the whole run is the returned profile; its steps share PyTorch's ProfilerStep* row
    local rows = prof:key_averages().rows
    local step_row
    for _, r in ipairs(rows) do if r.key == "ProfilerStep*" then step_row = r end end
    assert.are.equal(10, step_row.count) -- #0 .. #9: one opened at the start and one by each step()
    assert.truthy(got[1]:key_averages():table():find("matmul", 1, true))
  end)

  it("follows PyTorch's schedule, and writes traces for TensorBoard", function()
    local s = P.schedule(1, 1, 2, 1, 1)
    local want = { "none", "none", "warmup", "record", "record_and_save", "none", "none" }
    for step = 0, #want - 1 do assert.are.equal(want[step + 1], s(step)) end
    local dir = os.tmpname()
    os.remove(dir)
    local handler = P.tensorboard_trace_handler(dir, "w0")
    P.profile(function(p) for _ = 1, 3 do wick.ones(2):add(1); p:step() end end,
      { schedule = P.schedule { active = 1 }, on_trace_ready = handler })
    local f = io.open(dir .. "/w0.1.pt.trace.json")
    assert.is_not_nil(f)
    assert.truthy(f:read("*a"):find('"traceEvents"', 1, true))
    f:close()
    os.execute("rm -rf '" .. dir .. "'")
  end)

  it("refuses bad schedules and activities", function()
    assert.has_error(function() P.schedule { active = 0 } end)
    assert.has_error(function() P.profile(function() end, { activities = { "tpu" } }) end)
    assert.has_error(function() P.profile(function() end, { schedule = 3 }) end)
  end)
end)
