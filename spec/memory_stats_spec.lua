-- wick.memory_stats / memory_summary: the CPU allocator's counts with
-- torch.cuda.memory_stats' keys, and the CUDA forms.
local wick = require("wick")

local function settle() collectgarbage(); collectgarbage() end

describe("wick.memory_stats", function()
  it("has PyTorch's keys, all numbers", function()
    local s = wick.memory_stats()
    for _, k in ipairs({ "allocated_bytes.all.current", "allocated_bytes.all.peak", "allocated_bytes.all.allocated",
      "allocated_bytes.all.freed", "allocation.all.current", "allocation.all.allocated", "allocation.all.freed",
      "reserved_bytes.all.current", "num_alloc_retries", "num_ooms" }) do
      assert.are.equal("number", type(s[k]), k)
    end
    assert.is_true(s["reserved_bytes.all.current"] >= s["allocated_bytes.all.current"])
    assert.are.equal(s["allocated_bytes.all.allocated"] - s["allocated_bytes.all.freed"], s["allocated_bytes.all.current"])
  end)

  it("counts a tensor's bytes when made and when freed, and the peak", function()
    settle()
    wick.reset_peak_memory_stats()
    local before = wick.memory_stats()
    assert.are.equal(before["allocated_bytes.all.current"], before["allocated_bytes.all.peak"])
    local function work()
      local t = wick.empty(1000, 1000) -- 4 MB of float32
      local mid = wick.memory_stats()
      assert.are.equal(before["allocated_bytes.all.current"] + 4e6, mid["allocated_bytes.all.current"])
      assert.are.equal(before["allocation.all.allocated"] + 1, mid["allocation.all.allocated"])
      assert.is_true(mid["allocated_bytes.all.peak"] >= before["allocated_bytes.all.current"] + 4e6)
      return t:numel()
    end
    assert.are.equal(1e6, work())
    settle()
    local after = wick.memory_stats()
    assert.are.equal(before["allocated_bytes.all.current"], after["allocated_bytes.all.current"])
    assert.is_true(after["allocated_bytes.all.peak"] >= before["allocated_bytes.all.current"] + 4e6)
    assert.are.equal(before["allocated_bytes.all.freed"] + 4e6, after["allocated_bytes.all.freed"])
    wick.reset_peak_memory_stats()
    assert.are.equal(after["allocated_bytes.all.current"], wick.memory_stats()["allocated_bytes.all.peak"])
  end)

  it("counts small (inline) tensors too", function()
    settle()
    local before = wick.memory_stats()["allocated_bytes.all.allocated"]
    local t = wick.zeros(3)
    assert.are.equal(before + 12, wick.memory_stats()["allocated_bytes.all.allocated"])
    assert.are.equal(3, t:numel())
  end)

  it("does not count host memory wrapped without a copy", function()
    -- meta tensors hold no memory either
    settle()
    local before = wick.memory_stats()["allocated_bytes.all.allocated"]
    local m = wick.empty(1000, 1000, { device = "meta" })
    assert.are.equal(before, wick.memory_stats()["allocated_bytes.all.allocated"])
    assert.are.equal(1e6, m:numel())
  end)

  it("memory_summary is a PyTorch-like table", function()
    local text = wick.memory_summary()
    assert.is_truthy(text:find("wick CPU memory summary", 1, true))
    assert.is_truthy(text:find("| Metric                | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |", 1, true))
    assert.is_truthy(text:find("| Allocated memory      |", 1, true))
    for line in text:gmatch("[^\n]+") do assert.are.equal(77, #line, line) end
  end)
end)

describe("wick.cuda.memory_stats", function()
  it("is {} without CUDA and a table of counts with it", function()
    local s = wick.cuda.memory_stats()
    if wick.cuda.is_available() then
      assert.are.equal("number", type(s["allocated_bytes.all.current"]))
      assert.is_truthy(wick.cuda.memory_summary():find("device ID", 1, true))
    else
      assert.are.same({}, s)
      assert.is_truthy(wick.cuda.memory_summary():find("no CUDA device", 1, true))
    end
  end)
end)
