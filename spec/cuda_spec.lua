-- CUDA against the CPU: every kind of op run on both, results compared with
-- per-dtype tolerances (support.assert_same_on): elementwise ops (every unary
-- and binary op, broadcasting, transposed inputs, dtype promotion, special
-- values), reductions per dim, softmax, matrix products, indexing and joining,
-- random numbers under wick.manual_seed, conv2d and pooling forward and
-- backward, autograd, every optimizer, a small training loop; then what only a
-- GPU has: checkpoints of CUDA tensors, CUDA's errors, memory statistics,
-- pinned memory and non_blocking copies, TF32.
--
-- Without a GPU each case is reported pending (busted's "skipped"), never
-- passed, and a few checks of the CPU-only behaviour run instead.
-- WICK_SPEC_DEVICE=cpu runs the comparison cases with the CPU standing in for
-- the GPU, which checks the cases themselves on a machine without one.
local wick = require("wick")
local nn = wick.nn
local F = wick.nn.functional
local support = require("spec.support")
local error_of, assert_contains, shape_of = support.error_of, support.assert_contains, support.shape_of

local HAS_CUDA = wick.cuda.is_available()
-- the device compared with the CPU: cuda:0, or WICK_SPEC_DEVICE's stand-in
-- (support.devices() is {"cpu"} plus that device, when there is one)
local DEVICE = support.devices()[2]

-- A case compared with the CPU: pending (skipped) without a device to compare.
local function on_device(name, fn)
  if DEVICE then it(name, function() fn(DEVICE) end)
  else pending("needs a CUDA GPU: " .. name) end
end

-- A case that needs a real GPU (no stand-in): pending without one.
local function gpu_it(name, fn)
  if HAS_CUDA then it(name, fn) else pending("needs a CUDA GPU: " .. name) end
end

-- fn(device) on the CPU and on DEVICE, same results (support.assert_same_on)
local function same(fn, opts) return support.assert_same_on(DEVICE, fn, opts) end

local FLOATS = { "float32", "float64", "float16", "bfloat16" }
local INTS = { "int64", "int32", "uint8" }

-- Deterministic inputs: values drawn on the CPU under a fixed seed, so both
-- runs of a case start from the same numbers.
local function randn(shape, dtype, seed)
  wick.manual_seed(seed or 1)
  return wick.randn(shape, { dtype = "float64" }):to(dtype or "float32")
end

-- Values with the special cases of floating point: signed zeros, infinities,
-- NaN, tiny and large magnitudes, negatives (for log and sqrt).
local SPECIAL = { 0, -0.0, 1, -1, 0.5, -2.5, 3, 1e-3, -1e-3, 20, -20, 88, -88, 1 / 0, -1 / 0, 0 / 0 }

local function special(dtype) return wick.tensor(SPECIAL, { dtype = "float64" }):to(dtype) end

-- the same values in reverse order (the other operand of binary ops)
local function reversed(t)
  local n = t:size(1)
  local idx = {}
  for i = 1, n do idx[i] = n + 1 - i end
  return t:index_select(1, wick.tensor(idx, { dtype = "int64", device = t.device }))
end

-- An integer tensor with negatives and values near the dtype's limits.
local function ints(dtype)
  local values = {
    int64 = { 0, 1, -1, 7, -7, 100, -100, 2 ^ 31, -(2 ^ 31), 2 ^ 40, 123456789, -5 },
    int32 = { 0, 1, -1, 7, -7, 100, -100, 2 ^ 31 - 1, -(2 ^ 31), 65536, 123456789, -5 },
    uint8 = { 0, 1, 2, 7, 9, 100, 200, 255, 128, 3, 254, 5 },
  }
  return wick.tensor(values[dtype], { dtype = dtype })
end

local UNARY = { "neg", "abs", "exp", "log", "sqrt", "tanh", "sigmoid", "relu", "erf", "gelu" }
local INT_UNARY = { neg = true, abs = true, relu = true }
local BINARY = { "add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge" }

describe("elementwise ops on " .. tostring(DEVICE or "cuda"), function()
  for _, op in ipairs(UNARY) do
    on_device(op .. " on every float dtype, with special values, in and out of place", function(d)
      for _, dtype in ipairs(FLOATS) do
        same(function(dev) return special(dtype):to(dev)[op](special(dtype):to(dev)) end)
        same(function(dev)
          local t = special(dtype):to(dev)
          t[op .. "_"](t)
          return t
        end)
        -- a transposed (non-contiguous) input
        same(function(dev) return randn({ 5, 7 }, dtype):to(dev):t()[op](randn({ 5, 7 }, dtype):to(dev):t()) end)
      end
      if INT_UNARY[op] then
        for _, dtype in ipairs({ "int64", "int32" }) do
          same(function(dev) local t = ints(dtype):to(dev); return t[op](t) end)
        end
      end
    end)
  end

  for _, op in ipairs(BINARY) do
    on_device(op .. ": same dtype, broadcasting, transposed and expanded inputs, scalars", function(d)
      for _, dtype in ipairs(FLOATS) do
        same(function(dev)
          local a, b = special(dtype):to(dev), reversed(special(dtype))
          return a[op](a, b:to(dev))
        end)
        same(function(dev)
          local a, b = randn({ 3, 1, 4 }, dtype, 2):to(dev), randn({ 2, 4 }, dtype, 3):to(dev)
          return a[op](a, b), b[op](b, a)
        end)
        same(function(dev)
          local a = randn({ 4, 6 }, dtype, 4):to(dev):t()
          local b = randn({ 6, 1 }, dtype, 5):to(dev):expand(6, 4)
          return a[op](a, b)
        end)
        same(function(dev)
          local a = randn({ 3, 5 }, dtype, 6):to(dev)
          return a[op](a, 2.5), a[op](a, -1)
        end)
      end
      for _, dtype in ipairs(INTS) do
        same(function(dev)
          local a = ints(dtype):to(dev)
          local b = reversed(ints(dtype)):to(dev)
          if op == "pow" then b = b:clamp(0, 3) end
          return a[op](a, b)
        end)
      end
    end)
  end

  on_device("add and sub with alpha, the operators, and in-place forms with broadcasting", function(d)
    same(function(dev)
      local a, b = randn({ 3, 4 }, "float32", 1):to(dev), randn({ 4 }, "float32", 2):to(dev)
      local c = a:clone()
      c:add_(b, 0.5)
      local e = a:clone()
      e:mul_(b)
      return a:add(b, 2), a:sub(b, -3), a + b, a - 1, 2 - a, a * b, a / b, -a, a ^ 2, 2 ^ b, c, e
    end)
  end)

  on_device("type promotion between dtypes follows the CPU's", function(d)
    local pairs_ = { { "int64", "float32" }, { "float16", "float64" }, { "int32", "uint8" }, { "bool", "int64" },
      { "bfloat16", "float16" }, { "uint8", "float16" }, { "bool", "float32" }, { "int32", "bfloat16" } }
    for _, p in ipairs(pairs_) do
      same(function(dev)
        local a = wick.tensor({ 1, 0, 3, 250 }, { dtype = "float64" }):to(p[1]):to(dev)
        local b = wick.tensor({ 2, 5, 0, 4 }, { dtype = "float64" }):to(p[2]):to(dev)
        return a + b, a * b, a:maximum(b), a:lt(b), a * 0.5, a + 1
      end)
    end
  end)

  on_device("integer arithmetic wraps around and divides like the CPU", function(d)
    same(function(dev)
      local big = wick.tensor({ 9223372036854775807, -9223372036854775807 }, { dtype = "int64" }):to(dev)
      local one = wick.tensor({ 1, 1 }, { dtype = "int64" }):to(dev)
      local u = wick.tensor({ 250, 3 }, { dtype = "uint8" }):to(dev)
      return big + one, big * 2, -big, u + 10, u - 5,
        ints("int64"):to(dev):div(wick.tensor(3, { dtype = "int64" }):to(dev)),
        ints("int32"):to(dev):pow(2)
    end)
  end)

  on_device("clamp and where on every dtype, NaN included", function(d)
    for _, dtype in ipairs(FLOATS) do
      same(function(dev)
        local t = special(dtype):to(dev)
        local c = t:clone()
        c:clamp_(-1, 2)
        return t:clamp(-1, 2), t:clamp(0), t:clamp(nil, 1), c, wick.where(t:gt(0), t, t * 2)
      end)
    end
    same(function(dev)
      local t = ints("int64"):to(dev)
      return t:clamp(-5, 100), wick.where(t:lt(0), t, wick.zeros(1, { dtype = "int64" }):to(dev))
    end)
  end)

  -- the plans of src/cuda/cuda_ew_plan.h: rows, columns, outer products, a 3-d row
  -- broadcast that coalesces to two dims, the general walk over 4 dims
  on_device("broadcasts: bias rows, columns, outer products, 3-d and 4-d", function(d)
    for _, dtype in ipairs({ "float32", "float64", "float16", "int64" }) do
      same(function(dev)
        local a = randn({ 33, 65 }, "float64", 11):to(dtype):to(dev)
        local row = randn({ 65 }, "float64", 12):to(dtype):to(dev)
        local col = randn({ 33, 1 }, "float64", 13):to(dtype):to(dev)
        local x3 = randn({ 4, 5, 67 }, "float64", 14):to(dtype):to(dev)
        local row3 = randn({ 67 }, "float64", 15):to(dtype):to(dev)
        local x4 = randn({ 2, 3, 4, 5 }, "float64", 16):to(dtype):to(dev)
        local mid = randn({ 3, 1, 1 }, "float64", 17):to(dtype):to(dev)
        local t = a:clone()
        t:add_(row)
        return a + row, a * col, col - row, row:maximum(a), x3 + row3, x4 * mid, a:t():contiguous():t() + row, t,
          a:gt(row), wick.where(a:gt(col), a, row)
      end)
    end
  end)

  -- numbers and 0-dim CPU tensors go to the kernels by value (wk_iter.host_values)
  on_device("numbers and CPU scalars beside device tensors, on every side and in place", function(d)
    for _, dtype in ipairs({ "float32", "float64", "bfloat16", "int64", "int32", "uint8", "bool" }) do
      same(function(dev)
        local a = wick.tensor({ 0, 1, 2, 3, 5, 7 }, { dtype = "float64" }):to(dtype):to(dev)
        local s = wick.tensor(3, { dtype = dtype })
        local half = wick.tensor(0.5, { dtype = "float64" })
        local c = a:clone()
        c:mul_(s)
        local m = a:gt(s)
        local z = a:clone()
        z:copy_(half) -- copy_ of a CPU scalar into a device tensor: by value too
        return a + 2, a * s, a:add(half), s:mul(a), a:maximum(s), a:eq(s), c, z, wick.where(m, a, s),
          wick.where(wick.tensor(true), a, s), wick.where(wick.tensor(false), a, s)
      end)
    end
  end)

  gpu_it("ops with numbers and CPU scalars queue no copy and no wait", function()
    if not wick.cuda.sync_count then return pending("no wick.cuda.sync_count in this build") end
    local a = wick.randn(64, 32):cuda()
    local s = wick.tensor(2.5)
    local before = wick.cuda.sync_count()
    for _ = 1, 10 do a = a * 0.5 + s - 1; a:mul_(1.01); a = wick.where(a:gt(0), a, s) end
    assert.are.equal(before, (wick.cuda.sync_count()))
  end)

  on_device("conversions between every pair of dtypes", function(d)
    local all = { "float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool" }
    local source = wick.tensor({ 0, 1, -1, 2.5, -2.5, 255, 256, 70000, 1e10 }, { dtype = "float64" })
    for _, from in ipairs(all) do
      for _, to in ipairs(all) do
        -- out-of-range float to int conversions are undefined in C: skip those
        local values = source
        if (to == "uint8" or to == "int32" or to == "int64") and (from:find("float") or from:find("bfloat")) then
          values = wick.tensor({ 0, 1, 2.5, 7.75, 100 }, { dtype = "float64" })
        end
        same(function(dev) return values:to(from):to(dev):to(to) end)
      end
    end
  end)
end)

-- ---- reductions and softmax ----

describe("reductions and softmax on " .. tostring(DEVICE or "cuda"), function()
  local REDUCE = { "sum", "mean", "prod", "max", "min", "argmax", "argmin", "var", "std" }

  on_device("every reduction over all elements and along each dim, keepdim, negative dims, transposed input", function(d)
    for _, dtype in ipairs({ "float32", "float64" }) do
      for _, op in ipairs(REDUCE) do
        same(function(dev)
          local t = randn({ 3, 4, 5 }, dtype, 7):to(dev)
          local out = { t[op](t) }
          for dim = 1, 3 do
            out[#out + 1] = t[op](t, dim)
            out[#out + 1] = t[op](t, -dim, true)
            out[#out + 1] = t:transpose(1, 3)[op](t:transpose(1, 3), dim)
          end
          return out
        end, { tol = { float32 = 1e-4 } })
      end
    end
  end)

  on_device("max and min along a dim give values and indices; ties take the first, NaN propagates", function(d)
    same(function(dev)
      local t = wick.tensor({ { 1, 3, 3, 0 }, { 2, 2, 0 / 0, 1 }, { -1, -1, -1, -1 } }):to(dev)
      local v1, i1 = t:max(2)
      local v2, i2 = t:min(1)
      return v1, i1, v2, i2, t:argmax(2), t:argmin(2), t:max(), t:min()
    end)
  end)

  on_device("reductions of float16, bfloat16, int and bool tensors", function(d)
    for _, dtype in ipairs({ "float16", "bfloat16" }) do
      same(function(dev)
        local t = randn({ 6, 8 }, dtype, 8):to(dev)
        return t:sum(), t:sum(2), t:mean(1), t:max(2), t:argmin(1)
      end, { tol = 1e-2 })
    end
    for _, dtype in ipairs({ "int64", "int32", "uint8" }) do
      same(function(dev)
        local t = ints(dtype):view(3, 4):to(dev)
        return t:sum(), t:sum(1), t:max(2), t:min(), t:argmax(1), t:prod(2)
      end)
    end
    same(function(dev)
      local b = wick.tensor({ { true, false, true }, { true, true, true } }, { dtype = "bool" }):to(dev)
      return b:sum(), b:sum(2), b:all(), b:any()
    end)
  end)

  on_device("large reductions (a million elements) and empty ones", function(d)
    same(function(dev)
      local t = randn({ 1000, 1000 }, "float32", 9):to(dev)
      return t:sum(), t:mean(), t:sum(1), t:sum(2), t:max(), t:argmax(), t:var(), t:std(2)
    end, { tol = 1e-4 })
    same(function(dev)
      local e = wick.zeros(0, 3):to(dev)
      return e:sum(), e:sum(1), e:prod(1), e:mean(2)
    end)
  end)

  on_device("softmax and log_softmax along every dim, with -inf and large logits", function(d)
    for _, dtype in ipairs(FLOATS) do
      same(function(dev)
        local t = randn({ 4, 5, 6 }, dtype, 10):to(dev) * 10
        local out = {}
        for dim = 1, 3 do
          out[#out + 1] = t:softmax(dim)
          out[#out + 1] = t:log_softmax(-dim)
        end
        local edge = wick.tensor({ { 1000, 0, -1 / 0 }, { -1 / 0, -1 / 0, 3 }, { 88, 89, 90 } }):to(dtype):to(dev)
        out[#out + 1] = edge:softmax(2)
        out[#out + 1] = edge:log_softmax(2)
        out[#out + 1] = t:transpose(1, 3):softmax(1)
        return out
      end, { tol = { float16 = 2e-3, bfloat16 = 1e-2 } })
    end
  end)
end)

-- ---- matrix products ----

describe("matrix products on " .. tostring(DEVICE or "cuda"), function()
  on_device("mm, bmm, matmul and addmm in float32 and float64, transposed operands, odd and empty sizes", function(d)
    for _, dtype in ipairs({ "float32", "float64" }) do
      same(function(dev)
        local a, b = randn({ 17, 33 }, dtype, 1):to(dev), randn({ 33, 9 }, dtype, 2):to(dev)
        local at, bt = randn({ 33, 17 }, dtype, 3):to(dev):t(), randn({ 9, 33 }, dtype, 4):to(dev):t()
        local c = randn({ 17, 9 }, dtype, 5):to(dev)
        local x, y = randn({ 3, 5, 7 }, dtype, 6):to(dev), randn({ 3, 7, 2 }, dtype, 7):to(dev)
        return a:mm(b), at:mm(b), a:mm(bt), at:mm(bt), x:bmm(y), x:transpose(2, 3):transpose(2, 3):bmm(y),
          c:addmm(a, b), c:addmm(at, bt, { beta = 0.5, alpha = -2 }), c:addmm(a, b, { beta = 0 }),
          a:matmul(b), x:matmul(y), randn({ 7 }, dtype, 8):to(dev):matmul(y),
          x:matmul(randn({ 7 }, dtype, 9):to(dev)), randn({ 7 }, dtype, 10):to(dev):matmul(randn({ 7 }, dtype, 11):to(dev)),
          randn({ 2, 1, 4, 3 }, dtype, 12):to(dev):matmul(randn({ 5, 3, 2 }, dtype, 13):to(dev)),
          wick.zeros(0, 4, { dtype = dtype }):to(dev):mm(wick.ones(4, 3, { dtype = dtype }):to(dev)),
          wick.ones(2, 0, { dtype = dtype }):to(dev):mm(wick.ones(0, 3, { dtype = dtype }):to(dev))
      end)
    end
  end)

  on_device("larger float32 products (512 x 1024 x 256) within float32 accuracy", function(d)
    same(function(dev)
      local a, b = randn({ 512, 1024 }, "float32", 14):to(dev), randn({ 1024, 256 }, "float32", 15):to(dev)
      return a:mm(b), b:t():mm(a:t())
    end, { tol = 1e-4 })
  end)

  on_device("float16 and bfloat16 products", function(d)
    for _, dtype in ipairs({ "float16", "bfloat16" }) do
      same(function(dev)
        local a, b = randn({ 16, 32 }, dtype, 16):to(dev), randn({ 32, 8 }, dtype, 17):to(dev)
        return a:mm(b), randn({ 2, 16, 32 }, dtype, 18):to(dev):bmm(randn({ 2, 32, 8 }, dtype, 19):to(dev))
      end, { tol = 2e-2 })
    end
  end)
end)

-- ---- indexing, joining, views ----

describe("indexing and joining on " .. tostring(DEVICE or "cuda"), function()
  local I = support.I

  on_device("index_select, gather, scatter and scatter_ along each dim", function(d)
    for _, dtype in ipairs({ "float32", "float64", "int64", "float16" }) do
      same(function(dev)
        local t = randn({ 4, 5 }, "float32", 20):to(dtype):to(dev)
        local idx = I({ 3, 1, 3, 4 }):to(dev)
        local g = I({ { 1, 5 }, { 2, 2 }, { 5, 1 }, { 3, 4 } }):to(dev)
        local s = I({ { 4, 2, 1, 3, 1 } }):to(dev)
        local z = wick.zeros(4, 5, { dtype = dtype }):to(dev)
        local z2 = z:clone()
        z2:scatter_(1, s, t:narrow(1, 1, 1))
        return t:index_select(1, idx), t:index_select(2, idx), t:index_select(-1, idx:narrow(1, 1, 2)),
          t:gather(2, g), t:gather(1, s), z:scatter(1, s, t:narrow(1, 1, 1)), z2, z:scatter(2, g, 7),
          t:t():index_select(1, idx)
      end)
    end
  end)

  on_device("t[i] reads and writes, select, narrow and copy_ into views", function(d)
    same(function(dev)
      local t = randn({ 3, 4, 5 }, "float32", 21):to(dev)
      local u = t:clone()
      u[2] = 7
      u[3][1] = randn({ 5 }, "float32", 22):to(dev)
      u:narrow(3, 2, 2):copy_(wick.ones(3, 4, 2):to(dev))
      u:select(2, 4):fill_(-1)
      local v = wick.zeros(5, 3):to(dev)
      v:copy_(t[1]:t():narrow(2, 1, 3))
      return t[2], t[3][4], t:select(3, 5), t:narrow(2, 2, 3), u, v, t:permute(3, 1, 2):contiguous(),
        t:transpose(1, 2):reshape(12, 5), t:view(60), t:flatten(2), t:unsqueeze(2):squeeze(2)
    end)
  end)

  on_device("cat and stack along each dim, of views and of several dtypes", function(d)
    same(function(dev)
      local a, b = randn({ 2, 3 }, "float32", 23):to(dev), randn({ 2, 3 }, "float32", 24):to(dev)
      local c = randn({ 3, 2 }, "float32", 25):to(dev):t()
      return wick.cat({ a, b }), wick.cat({ a, b, c }, 2), wick.cat({ a, c }, -1), wick.stack({ a, b, c }),
        wick.stack({ a, b }, 2), wick.stack({ a, c }, 3), wick.cat({ a, wick.zeros(0, 3):to(dev) }),
        wick.cat({ ints("int64"):to(dev), ints("int64"):to(dev) })
    end)
  end)

  on_device("creation on the device: zeros, ones, full, arange, eye, *_like", function(d)
    same(function(dev)
      local o = { device = dev }
      return wick.zeros(2, 3, o), wick.ones({ 4 }, { device = dev, dtype = "int32" }), wick.full({ 2, 2 }, 3.5, o),
        wick.arange(0, 10, 3, o), wick.arange(5, { device = dev, dtype = "int64" }), wick.eye(3, o),
        wick.zeros_like(wick.ones(2, 2):to(dev)), wick.full_like(wick.ones(3):to(dev), 2),
        wick.tensor({ { 1, 2 }, { 3, 4 } }, { device = dev, dtype = "float64" })
    end)
  end)
end)

-- ---- random numbers ----

describe("random numbers on " .. tostring(DEVICE or "cuda"), function()
  on_device("rand, randn and their _like forms give the CPU's values under wick.manual_seed", function(d)
    for _, dtype in ipairs({ "float32", "float64", "float16", "bfloat16" }) do
      same(function(dev)
        wick.manual_seed(1234)
        local a = wick.rand(1000, { device = dev, dtype = dtype })
        local b = wick.randn(33, 7, { device = dev, dtype = dtype })
        local c = wick.rand_like(b)
        local e = wick.randn_like(a)
        return a, b, c, e
      end, { tol = { float32 = 1e-5, float64 = 1e-12, float16 = 1e-3, bfloat16 = 8e-3 } })
    end
  end)

  on_device("get_rng_state and set_rng_state repeat the device's draws", function(d)
    local dev = d
    wick.manual_seed(5)
    local state = wick.get_rng_state()
    local first = wick.randn(100, { device = dev })
    wick.set_rng_state(state)
    local again = wick.randn(100, { device = dev })
    assert.are.same(first:cpu():totable(), again:cpu():totable())
  end)

  on_device("dropout draws the CPU's mask under the same seed", function(d)
    same(function(dev)
      wick.manual_seed(9)
      return F.dropout(wick.ones(20, 30):to(dev), 0.3, true)
    end)
  end)
end)

-- ---- convolution and pooling ----

-- fn(dev, x, w, b) -> output; returns the output and the gradients of x, w, b
-- (for a loss that weighs every output element differently).
local function forward_backward(dev, fn, x, w, b)
  local xx = x:to(dev):detach():requires_grad_()
  local ww = w and w:to(dev):detach():requires_grad_()
  local bb = b and b:to(dev):detach():requires_grad_()
  local out = fn(xx, ww, bb)
  local weights = wick.arange(1, out:numel() + 1, { dtype = out.dtype }):view(out:size()):to(dev) / out:numel()
  ;(out * weights):sum():backward()
  return out, xx.grad, ww and ww.grad or false, bb and bb.grad or false
end

describe("convolution and pooling on " .. tostring(DEVICE or "cuda"), function()
  local conv_cases = {
    { x = { 2, 3, 9, 9 }, w = { 4, 3, 3, 3 }, opts = {} },
    { x = { 1, 2, 8, 7 }, w = { 6, 2, 3, 2 }, opts = { stride = 2, padding = 1 } },
    { x = { 2, 4, 10, 10 }, w = { 4, 2, 3, 3 }, opts = { groups = 2, dilation = 2, padding = { 2, 1 } } },
    { x = { 3, 1, 28, 28 }, w = { 8, 1, 5, 5 }, opts = { padding = 2 } },
    { x = { 2, 3, 5, 5 }, w = { 5, 3, 1, 1 }, opts = { stride = { 2, 1 } }, bias = false },
  }
  for i, c in ipairs(conv_cases) do
    on_device(("conv2d forward and backward, case %d"):format(i), function(d)
      for _, dtype in ipairs({ "float32", "float64" }) do
        same(function(dev)
          local x, w = randn(c.x, dtype, 30 + i), randn(c.w, dtype, 40 + i)
          local b = c.bias ~= false and randn({ c.w[1] }, dtype, 50 + i) or nil
          return forward_backward(dev, function(xx, ww, bb) return F.conv2d(xx, ww, bb, c.opts) end, x, w, b)
        end, { tol = { float32 = 1e-4 } })
      end
    end)
  end

  on_device("max_pool2d and avg_pool2d forward and backward: strides, padding, ceil_mode, count_include_pad, ties", function(d)
    local cases = {
      { "max", 2, {} }, { "max", 3, { stride = 2, padding = 1 } }, { "max", { 2, 3 }, { stride = { 1, 2 }, ceil_mode = true } },
      { "avg", 2, {} }, { "avg", 3, { stride = 2, padding = 1, count_include_pad = false } },
      { "avg", 3, { stride = 2, padding = 1, ceil_mode = true } },
    }
    for _, c in ipairs(cases) do
      for _, dtype in ipairs({ "float32", "float64" }) do
        same(function(dev)
          local pool = c[1] == "max" and F.max_pool2d or F.avg_pool2d
          local x = randn({ 2, 3, 9, 8 }, dtype, 60)
          return forward_backward(dev, function(xx) return pool(xx, c[2], c[3]) end, x)
        end)
      end
    end
    -- ties in max pooling go to the first maximum on both
    same(function(dev)
      return forward_backward(dev, function(xx) return F.max_pool2d(xx, 2) end, wick.ones(1, 1, 4, 4))
    end)
  end)
end)

-- ---- autograd, optimizers, training ----

local function mlp(device, dtype)
  wick.manual_seed(11)
  local m = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 4))
  return m:to({ device = device, dtype = dtype or "float32" })
end

local function grads(model)
  local out = {}
  for i, p in ipairs(model:parameters()) do out[i] = p.grad end
  return out
end

describe("autograd, optimizers and training on " .. tostring(DEVICE or "cuda"), function()
  on_device("backward of a small MLP with cross entropy gives the CPU's gradients", function(d)
    for _, dtype in ipairs({ "float32", "float64" }) do
      same(function(dev)
        local model = mlp(dev, dtype)
        local x = randn({ 8, 10 }, dtype, 70):to(dev):requires_grad_()
        local target = support.I({ 1, 2, 3, 4, 4, 3, 2, 1 }):to(dev)
        local loss = nn.CrossEntropyLoss()(model(x), target)
        loss:backward()
        return loss, grads(model), x.grad
      end, { tol = { float32 = 1e-5 } })
    end
  end)

  on_device("backward through many ops: broadcasting, reductions, views, indexing, softmax, losses", function(d)
    same(function(dev)
      local a = randn({ 4, 5 }, "float64", 71):to(dev):requires_grad_()
      local b = randn({ 5 }, "float64", 72):to(dev):requires_grad_()
      local c = randn({ 5, 3 }, "float64", 73):to(dev):requires_grad_()
      local idx = support.I({ 2, 4, 1 }):to(dev)
      local y = (((a * b):exp() + 1):log() + a:t():t():sigmoid()):mm(c):softmax(2)
      local z = y:index_select(1, idx):sum() + a:max(2):sum() + (a:abs() + 1):sqrt():mean()
        + a:gather(2, support.I({ { 1 }, { 2 }, { 3 }, { 5 } }):to(dev)):pow(2):sum()
        + F.mse_loss(a:narrow(2, 1, 3), c:t():narrow(1, 1, 3):t():narrow(1, 1, 4) * 0 + 1)
        + wick.cat({ a, a * 2 }, 1):var() + a:gelu():tanh():sum()
      z:backward()
      return z, a.grad, b.grad, c.grad
    end)
  end)

  on_device("recorded in-place ops and the saved-tensor version check", function(d)
    same(function(dev)
      local x = randn({ 6 }, "float32", 74):to(dev):requires_grad_()
      local w = randn({ 6 }, "float32", 75):to(dev):requires_grad_()
      local y = x * 2
      y:add_(w):mul_(w):tanh_():clamp_(-0.9, 0.9):relu_()
      ;(y * y):sum():backward()
      local plain = randn({ 6 }, "float32", 76):to(dev)
      local z = x * plain
      plain:mul_(2) -- saved for x's gradient: backward must refuse
      local ok, err = pcall(function() z:sum():backward() end)
      assert.is_false(ok)
      assert_contains(err, "modified by an inplace operation")
      return y, x.grad, w.grad
    end)
  end)

  local optimizers = {
    { "SGD", { lr = 0.1 } },
    { "SGD", { lr = 0.1, momentum = 0.9 } },
    { "SGD", { lr = 0.1, momentum = 0.9, nesterov = true, weight_decay = 0.01 } },
    { "SGD", { lr = 0.05, momentum = 0.5, dampening = 0.1, maximize = true } },
    { "Adam", { lr = 0.01 } },
    { "Adam", { lr = 0.01, weight_decay = 0.1, betas = { 0.8, 0.9 } } },
    { "AdamW", { lr = 0.01 } },
  }
  for i, o in ipairs(optimizers) do
    on_device(("optimizer step %d: %s with its options, three steps, state included"):format(i, o[1]), function(d)
      same(function(dev)
        local model = mlp(dev)
        local opt = wick.optim[o[1]](model:parameters(), o[2])
        local x, y = randn({ 6, 10 }, "float32", 80):to(dev), randn({ 6, 4 }, "float32", 81):to(dev)
        for _ = 1, 3 do
          opt:zero_grad()
          F.mse_loss(model(x), y):backward()
          opt:step()
        end
        local params = {}
        for k, p in ipairs(model:parameters()) do params[k] = p:detach() end
        return params
      end, { tol = { float32 = 2e-5 } })
    end)
  end

  on_device("a tiny training loop (MLP, cross entropy, SGD momentum, 30 steps) ends at the CPU's weights and loss", function(d)
    same(function(dev)
      local model = mlp(dev)
      local opt = wick.optim.SGD(model:parameters(), { lr = 0.05, momentum = 0.9 })
      local data = wick.data.TensorDataset(randn({ 64, 10 }, "float32", 90),
        wick.tensor((function() local t = {}; for k = 1, 64 do t[k] = (k % 4) + 1 end; return t end)(), { dtype = "int64" }))
      local loader = wick.data.DataLoader(data, { batch_size = 16, device = dev })
      local loss_fn = nn.CrossEntropyLoss()
      local last
      for _ = 1, 8 do
        for x, y in loader:iter() do
          opt:zero_grad()
          last = loss_fn(model(x), y)
          last:backward()
          opt:step()
        end
      end
      local params = {}
      for k, p in ipairs(model:parameters()) do params[k] = p:detach() end
      return last:detach(), params
    end, { tol = { float32 = 1e-4 } })
  end)

  on_device("a CNN step (conv, relu, max_pool, linear) gives the CPU's gradients", function(d)
    same(function(dev)
      wick.manual_seed(12)
      local model = nn.Sequential(nn.Conv2d(1, 4, 3, { padding = 1 }), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(4 * 7 * 7, 10)):to(dev)
      local x = randn({ 4, 1, 14, 14 }, "float32", 91):to(dev)
      local loss = nn.CrossEntropyLoss()(model(x), support.I({ 1, 5, 9, 10 }):to(dev))
      loss:backward()
      return loss, grads(model)
    end, { tol = { float32 = 1e-4 } })
  end)
end)

-- ---- what only a GPU has ----

describe("the GPU's properties", function()
  gpu_it("get_device_properties, get_device_name and get_device_capability agree", function()
    local p = wick.cuda.get_device_properties(wick.device("cuda"))
    assert.is_true(#p.name > 0)
    assert.is_true(p.major >= 3 and p.minor >= 0)
    assert.is_true(p.total_memory > 2 ^ 30 and p.multi_processor_count > 0)
    assert.are.equal(p.name, wick.cuda.get_device_name(0))
    local major, minor = wick.cuda.get_device_capability()
    assert.are.same({ p.major, p.minor }, { major, minor })
    assert_contains(tostring(p), "_CudaDeviceProperties(name='" .. p.name)
    assert_contains(error_of(function() return wick.cuda.get_device_name(wick.cuda.device_count()) end),
      "invalid device ordinal")
  end)
end)

describe("CUDA checkpoints", function()
  local function tmpname() return os.tmpname() end

  gpu_it("wick.save of CUDA tensors and wick.load back to cuda:0, to the CPU, and through a function", function()
    local path = tmpname()
    local g = randn({ 3, 4 }, "float32", 100):cuda()
    local view = g:narrow(1, 2, 2)
    wick.save({ g = g, view = view, n = 3 }, path)
    local back = wick.load(path)
    assert.are.equal("cuda:0", tostring(back.g.device))
    assert.are.same(g:cpu():totable(), back.g:cpu():totable())
    assert.is_true(back.g:is_same_storage(back.view))
    local cpu = wick.load(path, { map_location = "cpu" })
    assert.are.equal("cpu", tostring(cpu.g.device))
    assert.are.same(g:cpu():totable(), cpu.g:totable())
    local locations = {}
    local mapped = wick.load(path, { map_location = function(storage, location)
      locations[#locations + 1] = location
      assert.are.equal("cpu", tostring(storage.device))
      return storage
    end })
    assert.are.same({ "cuda:0" }, locations)
    assert.are.same(view:cpu():totable(), mapped.view:totable())
    local renamed = wick.load(path, { map_location = { ["cuda:0"] = "cpu" } })
    assert.are.equal("cpu", tostring(renamed.view.device))
    os.remove(path)
  end)

  gpu_it("a model's state_dict saved from CUDA loads into a CPU model that scores the same", function()
    local path = tmpname()
    local model = mlp("cuda:0")
    local x = randn({ 5, 10 })
    local expected = model(x:cuda()):cpu():totable()
    wick.save(model:state_dict(), path)
    local cpu_model = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 4))
    cpu_model:load_state_dict(wick.load(path, { map_location = "cpu" }))
    support.assert_close(cpu_model(x), expected, 1e-5)
    os.remove(path)
  end)

  gpu_it("a saved ordinal beyond device_count raises docs/api.md's message; map_location renames it", function()
    -- spec/fixtures/saved_on_cuda.wick: weight saved from cuda:0, bias from cuda:1
    local fixture = "spec/fixtures/saved_on_cuda.wick"
    local n = wick.cuda.device_count()
    if n == 1 then
      assert_contains(error_of(function() return wick.load(fixture) end),
        "Attempting to deserialize object on CUDA device 1 but wick.cuda.device_count() is 1. "
        .. "Please use wick.load with map_location to map your storages to an existing device.")
    else
      local r = wick.load(fixture)
      assert.are.equal("cuda:0", tostring(r.weight.device))
      assert.are.equal("cuda:1", tostring(r.bias.device))
    end
    local r = wick.load(fixture, { map_location = { ["cuda:1"] = "cuda:0" } })
    assert.are.equal("cuda:0", tostring(r.weight.device))
    assert.are.equal("cuda:0", tostring(r.bias.device))
    assert.are.same({ 7, 8 }, r.bias:cpu():totable())
    assert.are.same({ { 1, 2, 3 }, { 4, 5, 6 } }, wick.load(fixture, { map_location = "cuda:0" }).weight:cpu():totable())
  end)
end)

describe("CUDA errors", function()
  gpu_it("'cuda:N' beyond device_count raises naming the device and the count", function()
    local n = wick.cuda.device_count()
    local err = error_of(function() return wick.ones(2, { device = "cuda:" .. n }) end)
    assert_contains(err, ("invalid device 'cuda:%d': wick.cuda.device_count() is %d"):format(n, n))
    assert_contains(error_of(function() return wick.ones(2):to("cuda:" .. (n + 3)) end), "cuda:" .. (n + 3))
    assert_contains(error_of(function() return wick.ones(2):cuda(n) end), "device_count")
    assert_contains(error_of(function() return wick.cuda.set_device(n) end), "device_count")
  end)

  gpu_it("the same-device rule between cpu and cuda:0, with docs/api.md's exact message", function()
    local c, g = wick.ones(2, 2), wick.ones(2, 2):cuda()
    local function body(fn) return (error_of(fn):gsub("^[^:]+:%d+: ", "", 1)) end
    assert.are.equal("Expected all tensors to be on the same device, but found at least two devices, cpu and cuda:0! "
      .. "(when checking argument for argument mat1 in method addmm)", body(function() return c:addmm(g, g) end))
    assert.are.equal("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! "
      .. "(when checking argument for argument other in method add)", body(function() return g + c end))
    assert_contains(error_of(function() return nn.Linear(2, 2)(g) end), "same device")
    assert_contains(error_of(function() return wick.cat({ c, g }) end), "same device")
    -- a 0-dim CPU tensor mixes as a scalar
    assert.are.same({ { 3, 3 }, { 3, 3 } }, (g * wick.tensor(3)):cpu():totable())
  end)

  gpu_it("out of memory is reported as 'out of memory' and recoverable", function()
    local err = error_of(function() return wick.empty(2 ^ 45, { device = "cuda" }) end)
    assert_contains(err, "CUDA out of memory. Tried to allocate") -- (PyTorch's words, which YOLOX tests)
    assert.are.same({ 2 }, wick.ones(1, { device = "cuda" }):add(1):cpu():totable())
  end)
end)

-- The wick.cuda functions the CUDA backend adds (guarded while they land).
local function cuda_fn(name)
  local fn = rawget(wick.cuda, name)
  if fn == nil then pending("wick.cuda." .. name .. " is not in this build yet") end
  return fn
end

describe("CUDA memory statistics, pinned memory, TF32", function()
  gpu_it("memory_allocated grows with a tensor and shrinks when it is freed; peak and reset; empty_cache", function()
    local sync = cuda_fn("synchronize")
    local allocated, peak = cuda_fn("memory_allocated"), cuda_fn("max_memory_allocated")
    local reserved, reset, empty = cuda_fn("memory_reserved"), cuda_fn("reset_peak_memory_stats"), cuda_fn("empty_cache")
    if not (sync and allocated and peak and reserved and reset and empty) then return end
    collectgarbage()
    collectgarbage()
    sync()
    local before = allocated()
    local t = wick.empty(1024 * 1024, { device = "cuda" }) -- 4 MiB
    assert.is_true(allocated() >= before + 4 * 1024 * 1024)
    assert.is_true(peak() >= allocated())
    assert.is_true(reserved() >= allocated())
    t = nil -- luacheck: ignore
    collectgarbage()
    collectgarbage()
    assert.is_true(allocated() <= before)
    local cached = reserved()
    empty()
    assert.is_true(reserved() <= cached)
    reset()
    assert.are.equal(allocated(), peak())
    assert.are.equal(allocated(0), allocated())
  end)

  gpu_it("pin_memory gives a pinned copy; non_blocking copies both ways arrive after synchronize", function()
    local sync = cuda_fn("synchronize")
    if not sync then return end
    local t = randn({ 256, 256 }, "float32", 110)
    assert.is_false(t:is_pinned())
    local p = t:pin_memory()
    assert.is_true(p:is_pinned())
    assert.is_true(rawequal(p, p:pin_memory()))
    assert.are.same(t:totable(), p:totable())
    local g = p:to("cuda:0", { non_blocking = true })
    local back = (g * 2):to("cpu", { non_blocking = true })
    sync()
    assert.are.same((t * 2):totable(), back:totable())
    local g2 = t:to({ device = "cuda:0", non_blocking = true })
    assert.are.same(t:totable(), g2:cpu():totable())
  end)

  gpu_it("with_device, current_device and synchronize(i)", function()
    local sync = cuda_fn("synchronize")
    if not sync then return end
    local n = wick.cuda.device_count()
    local seen = wick.cuda.with_device(n - 1, function() return wick.cuda.current_device() end)
    assert.are.equal(n - 1, seen)
    sync(0)
    assert.are.equal("cuda:0", tostring(wick.ones(1):cuda().device))
  end)

  gpu_it("allow_tf32 switches float32 products to TF32 (close to, not equal to, the CPU's) and back", function()
    local backends = rawget(wick, "backends")
    if not backends then return pending("wick.backends is not in this build yet") end
    local a, b = randn({ 256, 512 }, "float32", 111), randn({ 512, 256 }, "float32", 112)
    local expected = a:mm(b)
    assert.is_false(backends.cuda.matmul.allow_tf32)
    local strict = a:cuda():mm(b:cuda()):cpu()
    support.assert_close(strict, expected:totable(), 1e-4)
    backends.cuda.matmul.allow_tf32 = true
    local ok, fast = pcall(function() return a:cuda():mm(b:cuda()):cpu() end)
    backends.cuda.matmul.allow_tf32 = false
    assert(ok, fast)
    -- TF32 keeps 10 mantissa bits of each input: each of the 512 products is off
    -- by about 1e-3 of its size, so an element's error is about 1e-3 * sqrt(512)
    -- whatever its own size (0.02 was seen on an H200 at an element of 0.04):
    -- bounded relative to the largest element, not element by element
    local max_diff = (fast - expected):abs():max():item()
    local scale = expected:abs():max():item()
    assert.is_true(max_diff <= 2e-3 * scale, ("TF32 off by %g at a scale of %g"):format(max_diff, scale))
    assert.is_true(max_diff > 0, "TF32 gave bit-identical results: is allow_tf32 used?")
    assert.is_false(backends.cuda.matmul.allow_tf32)
  end)
end)

-- ---- without a GPU ----

describe("without a GPU", function()
  local function no_gpu_it(name, fn)
    if HAS_CUDA then pending("only meaningful where wick.cuda.is_available() is false: " .. name)
    else it(name, fn) end
  end

  no_gpu_it("is_available() is false and device_count() is 0", function()
    assert.is_false(wick.cuda.is_available())
    assert.are.equal(0, wick.cuda.device_count())
  end)

  no_gpu_it("get_device_properties, get_device_name and get_device_capability say there is no GPU", function()
    for _, name in ipairs({ "get_device_properties", "get_device_name", "get_device_capability" }) do
      assert_contains(error_of(function() return wick.cuda[name](0) end), "wick.cuda." .. name, "is_available() is false")
    end
  end)

  no_gpu_it("t:cuda(), t:to('cuda') and creation on cuda raise a clear error", function()
    local t = wick.ones(2)
    assert_contains(error_of(function() return t:cuda() end), "is_available() is false")
    assert_contains(error_of(function() return t:to("cuda:0") end), "is_available() is false")
    assert_contains(error_of(function() return wick.zeros(2, { device = "cuda" }) end), "is_available() is false")
    assert.are.same({ 1, 1 }, t:totable())
  end)

  no_gpu_it("wick.backends.cuda.matmul.allow_tf32 defaults to false", function()
    local backends = rawget(wick, "backends")
    if not backends then return pending("wick.backends is not in this build yet") end
    assert.is_false(backends.cuda.matmul.allow_tf32)
  end)

  no_gpu_it("memory statistics are 0 and empty_cache does nothing", function()
    for _, name in ipairs({ "memory_allocated", "max_memory_allocated", "memory_reserved" }) do
      local fn = cuda_fn(name)
      if not fn then return end
      assert.are.equal(0, fn())
    end
    local empty = cuda_fn("empty_cache")
    if not empty then return end
    empty()
  end)

  no_gpu_it("pin_memory raises a clear error; is_pinned is false", function()
    local t = wick.ones(3)
    assert.is_false(t:is_pinned())
    local err = error_of(function() return t:pin_memory() end)
    assert_contains(err, "pin_memory")
    assert_contains(err, "is_available() is false")
  end)
end)

-- ---- waits for the GPU (issue 12): counted, batched, and none for index bounds ----
-- wick.cuda.sync_count counts every wait of wick for a GPU, by reason; index
-- kernels check their indices on the GPU and the error surfaces at the next
-- wait; model:to and to_device wait once per call (wick.cuda.batch).
describe("waits for the GPU", function()
  -- the waits fn(...) caused, in all and by reason
  local function waits_of(fn, ...)
    local before, by_before = wick.cuda.sync_count()
    fn(...)
    local after, by_after = wick.cuda.sync_count()
    local by = {}
    for reason, n in pairs(by_after) do
      if n ~= (by_before[reason] or 0) then by[#by + 1] = ("%s: %d"):format(reason, n - (by_before[reason] or 0)) end
    end
    table.sort(by)
    return after - before, table.concat(by, ", ")
  end

  -- examples/fashion_mnist_models.lua, found from this file's path
  local function fashion_models()
    local root = debug.getinfo(1, "S").source:sub(2):match("^(.*)/spec/[^/]*$") or "."
    return dofile(root .. "/examples/fashion_mnist_models.lua")
  end

  it("sync_count is a count and a table by reason; 0 waits where nothing waited", function()
    local n, by = wick.cuda.sync_count()
    assert.are.equal("number", type(n))
    assert.are.equal("table", type(by))
    local total = 0
    for reason, k in pairs(by) do
      assert.are.equal("string", type(reason))
      total = total + k
    end
    assert.are.equal(n, total)
    assert.are.equal(0, (waits_of(function() return wick.ones(3) + 1 end)))
    if not HAS_CUDA then assert.are.equal(0, n) end
  end)

  it("batch returns fn's values, nests, and ends also when fn raises", function()
    local a, b, c = wick.cuda.batch(function(x, y) return x + y, nil, "z" end, 1, 2)
    assert.are.same({ 3, nil, "z" }, { a, b, c })
    assert.are.equal(7, wick.cuda.batch(wick.cuda.batch, function() return 7 end))
    local err = error_of(function() wick.cuda.batch(function() error("inside the batch") end) end)
    assert_contains(err, "inside the batch")
    -- the failed batch was closed: a later one still works, and nothing is left open
    assert.are.equal(1, wick.cuda.batch(function() return 1 end))
    assert_contains(error_of(function() wick.cuda.batch(42) end), "wick.cuda.batch")
  end)

  it("to_device and model:to move everything (on the CPU too)", function()
    local moved = wick.to_device({ wick.ones(2), { wick.zeros(3) }, "label" }, "cpu")
    assert.are.same({ 1, 1 }, moved[1]:totable())
    assert.are.same({ 0, 0, 0 }, moved[2][1]:totable())
    assert.are.equal("label", moved[3])
    local m = nn.Linear(3, 2):to("float64")
    assert.are.equal("float64", m.weight.dtype)
  end)

  gpu_it("model:to('cuda') and to_device wait once per call, not once per tensor", function()
    local models = fashion_models()
    local model = models.MLP()
    local n, by = waits_of(function() model:to("cuda") end)
    assert.is_true(n <= 1, "model:to('cuda') waited " .. n .. " times (" .. by .. ")")
    assert.are.equal("cuda", model.layers:get(2).weight.device.type)
    local batch = { wick.randn(4, 784), wick.tensor({ 1, 2, 3, 4 }, { dtype = "int64" }), { wick.ones(5) } }
    local moved
    n, by = waits_of(function() moved = wick.to_device(batch, "cuda") end)
    assert.is_true(n <= 1, "to_device waited " .. n .. " times (" .. by .. ")")
    assert.are.same({ 1, 2, 3, 4 }, moved[2]:cpu():totable())
    assert.are.same({ 1, 1, 1, 1, 1 }, moved[3][1]:cpu():totable())
  end)

  for _, name in ipairs({ "SGD", "Adam" }) do
    gpu_it("one training step of the Fashion-MNIST MLP (" .. name .. ") waits at most once, for loss:item()", function()
      local models = fashion_models()
      wick.manual_seed(5)
      local model = models.MLP():to("cuda")
      local opt = name == "SGD" and wick.optim.SGD(model:parameters(), { lr = 0.01, momentum = 0.9 })
        or wick.optim.Adam(model:parameters(), { lr = 1e-3 })
      local x = wick.randn(64, 1, 28, 28):cuda()
      local labels = {}
      for i = 1, 64 do labels[i] = (i * 7) % 10 + 1 end
      local y = wick.tensor(labels, { dtype = "int64" }):cuda()
      local function step()
        opt:zero_grad()
        local loss = F.cross_entropy(model(x), y)
        loss:backward()
        opt:step()
        return loss:item()
      end
      step() -- the first step creates the cuBLAS handle and the optimizer's state
      local loss
      local n, by = waits_of(function() loss = step() end)
      assert.are.equal("number", type(loss))
      assert.is_true(n <= 1, "one step waited " .. n .. " times (" .. by .. ")")
    end)
  end

  gpu_it("an index out of range raises at the next wait, naming the op, the index and the size", function()
    -- (scatter_add and index_add, the backward of gather and index_select, check
    -- through the same kernel code; tests/test_backends.c compares them on a GPU)
    local x = wick.arange(1, 11):cuda()
    local ops = {
      index_select = function(bad) return x:index_select(1, bad) end,
      gather = function(bad) return x:gather(1, bad) end,
      scatter = function(bad) return wick.zeros(10):cuda():scatter(1, bad, 1) end,
    }
    for op, run in pairs(ops) do
      local bad = wick.tensor({ 2, 12 }, { dtype = "int64" }):cuda()
      local r = run(bad) -- no wait here: the op returns at once
      local err = error_of(function() return r:sum():item() end)
      assert_contains(err, op .. ": index 12 is out of bounds for dimension 1 with size 10")
      assert_contains(err, "asynchronously")
      -- reported once: the device works on
      assert.are.equal(3, (x + 2)[1]:item())
    end
    -- wick.cuda.synchronize reports it too
    local _ = x:index_select(1, wick.tensor({ 0 }, { dtype = "int64" }):cuda())
    assert_contains(error_of(function() wick.cuda.synchronize() end), "index_select: index 0 is out of bounds")
    wick.cuda.synchronize()
  end)

  gpu_it("checking indices on the GPU costs no wait", function()
    local x, idx = wick.randn(100, 8):cuda(), wick.tensor({ 3, 1, 2 }, { dtype = "int64" }):cuda()
    local n, by = waits_of(function()
      local _ = x:index_select(1, idx), x:gather(1, idx:view(3, 1):expand(3, 8))
    end)
    assert.are.equal(0, n, by)
  end)
end)
