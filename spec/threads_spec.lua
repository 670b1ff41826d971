-- The CPU thread pool (src/core/threads.c) and the products split over it
-- (src/cpu/cpu_gemm.c): BLAS runs on one thread and a large product becomes one
-- BLAS call per block of C, one block per thread. The same results at 1, 2 and 3
-- threads (bitwise for elementwise ops; within rounding for products, whose
-- BLAS kernels may differ by block shape), the same at a given count run after
-- run, and the count changed between and inside training steps.
local wick = require("wick")
local support = require("spec.support")
local assert_error_has = support.assert_error_has

-- the largest |a - b| relative to the largest |b|
local function rel_diff(a, b)
  local scale = b:abs():max():item()
  return (a - b):abs():max():item() / (scale > 0 and scale or 1)
end

local TOL = { float32 = 2e-6, float64 = 1e-14 }

-- fn() at each thread count, the results in a table by count; the count restored
local function at_threads(counts, fn)
  local before, out = wick.get_num_threads(), {}
  for _, n in ipairs(counts) do
    wick.set_num_threads(n)
    local ok, r = pcall(fn)
    if not ok then
      wick.set_num_threads(before)
      error(r, 0)
    end
    out[n] = r
  end
  wick.set_num_threads(before)
  return out
end

-- deterministic inputs: wick's generator reseeded
local function randn(seed, dtype, ...)
  wick.manual_seed(seed)
  return wick.randn(...):to(dtype)
end

describe("thread pool", function()
  local before
  before_each(function() before = wick.get_num_threads() end)
  after_each(function() wick.set_num_threads(before) end)

  it("takes a count and reports it", function()
    for _, n in ipairs({ 1, 2, 3, 1 }) do
      wick.set_num_threads(n)
      assert.are.equal(n, wick.get_num_threads())
    end
    assert_error_has(function() wick.set_num_threads(0) end, "set_num_threads")
  end)

  for _, dtype in ipairs({ "float32", "float64" }) do
    -- sizes with at least 2^21 multiply-adds (two blocks of 2^20) and rows and columns
    -- that are not multiples of the 16-element block edge
    local cases = {
      { "x @ W^T (a linear layer's forward)", function(a, b) return a:mm(b:t()) end, { 128, 300 }, { 200, 300 } },
      { "G^T @ X (its weight's gradient)", function(a, b) return a:t():mm(b) end, { 150, 200 }, { 150, 300 } },
      { "G @ W (its input's gradient)", function(a, b) return a:mm(b) end, { 90, 200 }, { 200, 333 } },
      { "x @ W^T with few rows (W^T read in place)", function(a, b) return a:mm(b:t()) end, { 40, 400 }, { 300, 400 } },
      { "tall: split by rows", function(a, b) return a:mm(b) end, { 1000, 64 }, { 64, 40 } },
      { "a strided (sliced) left operand", function(a, b) return a[{ {}, { 1, 200, 2 } }]:mm(b) end, { 120, 400 },
        { 100, 160 } },
      { "both operands transposed", function(a, b) return a:t():mm(b:t()) end, { 256, 100 }, { 96, 256 } },
    }
    for _, c in ipairs(cases) do
      it(("splits %s: %s the same at 1, 2 and 3 threads"):format(dtype, c[1]), function()
        local a, b = randn(1, dtype, unpack(c[3])),
          randn(2, dtype, unpack(c[4]))
        local r = at_threads({ 1, 2, 3 }, function() return c[2](a, b) end)
        local again = at_threads({ 2 }, function() return c[2](a, b) end)
        assert.is_true(rel_diff(r[2], r[1]) <= TOL[dtype], "2 threads: " .. rel_diff(r[2], r[1]))
        assert.is_true(rel_diff(r[3], r[1]) <= TOL[dtype], "3 threads: " .. rel_diff(r[3], r[1]))
        assert.are.equal(0, (again[2] - r[2]):abs():max():item()) -- the same split, the same bits
        -- and right: against float64 products in plain Lua-free form (a float64 mm at 1 thread of
        -- the operands widened), so a block put in the wrong place of C fails here
        local want = at_threads({ 1 }, function() return c[2](a:to("float64"), b:to("float64")) end)[1]
        assert.is_true(rel_diff(r[2]:to("float64"), want) <= (dtype == "float32" and 1e-5 or 1e-14))
      end)
    end

    it(("splits %s addmm (beta, alpha) and batched products"):format(dtype), function()
      local bias, a, b = randn(3, dtype, 64, 300), randn(4, dtype, 64, 400), randn(5, dtype, 400, 300)
      local r = at_threads({ 1, 2 }, function() return wick.addmm(bias, a, b, { beta = 0.5, alpha = 2 }) end)
      assert.is_true(rel_diff(r[2], r[1]) <= TOL[dtype])
      local x, y = randn(6, dtype, 3, 70, 200), randn(7, dtype, 3, 200, 150)
      r = at_threads({ 1, 2 }, function() return x:bmm(y) end)
      assert.is_true(rel_diff(r[2], r[1]) <= TOL[dtype])
    end)
  end

  it("gives elementwise ops and the products' copies the same bits at any count", function()
    local x = randn(8, "float32", 262144)
    local r = at_threads({ 1, 2, 3 }, function() return (x * 3 + 1):relu():mul(x) end)
    assert.are.equal(0, (r[2] - r[1]):abs():max():item())
    assert.are.equal(0, (r[3] - r[1]):abs():max():item())
  end)

  it("trains the same with the count changed between and inside steps", function()
    local function losses(schedule)
      wick.manual_seed(11)
      local nn = wick.nn
      local model = nn.Sequential(nn.Linear(300, 256), nn.ReLU(), nn.Linear(256, 10))
      local opt = wick.optim.SGD(model:parameters(), { lr = 0.05, momentum = 0.9 })
      local x, y = wick.randn(128, 300), wick.randint(1, 11, { 128 })
      local out = {}
      for step = 1, 6 do
        wick.set_num_threads(schedule(step, 1))
        opt:zero_grad()
        local loss = nn.functional.cross_entropy(model(x), y)
        wick.set_num_threads(schedule(step, 2))
        loss:backward()
        wick.set_num_threads(schedule(step, 3))
        opt:step()
        out[step] = loss:item()
      end
      return out
    end
    local one = losses(function() return 1 end)
    local mixed = losses(function(step, phase) return (step + phase) % 3 + 1 end)
    for i = 1, #one do
      assert.is_true(math.abs(mixed[i] - one[i]) <= 1e-5 * math.abs(one[i]), ("step %d: %g vs %g"):format(i,
        mixed[i], one[i]))
    end
    assert.is_true(one[6] < one[1]) -- it trained
  end)
end)
