-- wick.profiler: every op is an event, ranges nest, the table and the trace.
local wick = require("wick")

local function by_name(prof, name)
  for _, r in ipairs(prof:key_averages().rows) do
    if r.key == name then return r end
  end
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
    local path = os.tmpname()
    prof:export_chrome_trace(path)
    local f = assert(io.open(path))
    local text = f:read("*a")
    f:close()
    os.remove(path)
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
end)
