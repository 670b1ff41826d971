-- Devices: device objects, wick.cuda, t.device and t:to, the same-device rule
-- (tested on the meta device, so it runs without a GPU), and meta tensors.
local wick = require("wick")
local support = require("spec.support")
local error_of, assert_contains = support.error_of, support.assert_contains

local HAS_CUDA = wick.cuda.is_available()

-- The exact message of docs/api.md, after the "file:line: " position prefix.
local function same_device_message(first, second, arg, op)
  return ("Expected all tensors to be on the same device, but found at least two devices, %s and %s! "
    .. "(when checking argument for argument %s in method %s)"):format(first, second, arg, op)
end

-- Asserts that `fn` raises exactly the same-device message (after the position).
local function assert_same_device_error(fn, first, second, arg, op)
  local err = error_of(fn)
  local expected = same_device_message(first, second, arg, op)
  local body = err:gsub("^[^:]+:%d+: ", "", 1)
  assert.are.equal(expected, body)
end

local function bytes_in_use() return wick._core.cpu_bytes_in_use() end

describe("wick.device", function()
  it("parses the forms of docs/api.md", function()
    local cases = {
      { { "cpu" }, "cpu", nil, "cpu" },
      { { "cuda" }, "cuda", nil, "cuda" },
      { { "cuda:1" }, "cuda", 1, "cuda:1" },
      { { "cuda:0" }, "cuda", 0, "cuda:0" },
      { { "meta" }, "meta", nil, "meta" },
      { { "cuda", 1 }, "cuda", 1, "cuda:1" },
      { { "cuda", 0 }, "cuda", 0, "cuda:0" },
      { { "cuda:12" }, "cuda", 12, "cuda:12" },
    }
    for _, c in ipairs(cases) do
      local d = wick.device(unpack(c[1]))
      assert.are.equal(c[2], d.type, c[4])
      assert.are.equal(c[3], d.index, c[4])
      assert.are.equal(c[4], tostring(d))
    end
  end)

  it("index is an integer number when present", function()
    local d = wick.device("cuda:3")
    assert.are.equal("number", type(d.index))
    assert.are.equal(3, d.index)
    assert.is_nil(wick.device("cpu").index)
  end)

  it("interns device objects", function()
    assert.is_true(wick.device("cuda:0") == wick.device("cuda:0"))
    assert.is_true(rawequal(wick.device("cuda:0"), wick.device("cuda:0")))
    assert.is_true(rawequal(wick.device("cuda", 1), wick.device("cuda:1")))
    assert.is_true(rawequal(wick.device("cpu"), wick.device("cpu")))
    assert.is_true(rawequal(wick.device("meta"), wick.ones(1, { device = "meta" }).device))
  end)

  it("accepts a device object and returns it", function()
    local d = wick.device("cuda:2")
    assert.is_true(rawequal(d, wick.device(d)))
  end)

  it("cuda without an index is not cuda:0", function()
    assert.is_false(wick.device("cuda") == wick.device("cuda:0"))
    assert.is_true(wick.device("cuda") ~= wick.device("cuda:0"))
    assert.is_false(wick.device("cuda:0") == wick.device("cuda:1"))
    assert.is_false(wick.device("cpu") == wick.device("meta"))
  end)

  it("never equals a string", function()
    assert.is_false(wick.device("cpu") == "cpu")
    assert.is_false(wick.device("cuda:0") == "cuda:0")
    assert.is_true(wick.device("cpu").type == "cpu")
    assert.is_true(tostring(wick.device("cuda:0")) == "cuda:0")
  end)

  it("works as a table key", function()
    local counts = {}
    counts[wick.device("cpu")] = 1
    counts[wick.device("cuda:0")] = 2
    counts[wick.device("cuda")] = 3
    assert.are.equal(1, counts[wick.device("cpu")])
    assert.are.equal(2, counts[wick.device("cuda", 0)])
    assert.are.equal(3, counts[wick.device("cuda")])
    assert.is_nil(counts[wick.device("cuda:1")])
    assert.is_nil(counts["cpu"])
    assert.are.equal(1, counts[wick.ones(1).device])
  end)

  it("stays interned across garbage collections while referenced as a key", function()
    local t = { [wick.device("cuda:7")] = "seven" }
    collectgarbage()
    collectgarbage()
    assert.are.equal("seven", t[wick.device("cuda:7")])
  end)

  it("is read-only", function()
    local d = wick.device("cuda:0")
    assert.has_error(function() d.index = 5 end)
    assert.has_error(function() d.type = "cpu" end)
    assert.has_error(function() d.extra = true end)
    assert.are.equal(0, wick.device("cuda:0").index)
    assert.are.equal("cuda", wick.device("cuda:0").type)
  end)

  for _, bad in ipairs({ "gpu", "cuda:x", "cuda:-1", "", "CPU", "cuda:", "cuda:1x", " cpu", "cuda0" }) do
    it(("raises on %q, naming it and listing the accepted forms"):format(bad), function()
      local err = error_of(wick.device, bad)
      assert_contains(err, "'" .. bad .. "'")
      assert_contains(err, "'cpu'")
      assert_contains(err, "'cuda'")
      assert_contains(err, "'cuda:N'")
      assert_contains(err, "'meta'")
    end)
  end

  it("raises on a bad index", function()
    assert_contains(error_of(wick.device, "cuda", -1), "-1")
    assert_contains(error_of(wick.device, "cuda", 1.5), "1.5")
    assert_contains(error_of(wick.device, "cuda:0", 1), "cuda:0")
    assert_contains(error_of(wick.device, "cuda", "x"), "accepted forms")
  end)

  it("raises on a non-string; a number is a CUDA ordinal, as torch.device(3)", function()
    assert.are.equal(wick.device("cuda:3"), wick.device(3))
    assert_contains(error_of(wick.device, true), "boolean")
    assert_contains(error_of(wick.device, nil), "nil")
  end)
end)

describe("wick.cuda", function()
  it("is_available is a boolean and never raises", function()
    local ok, v = pcall(wick.cuda.is_available)
    assert.is_true(ok)
    assert.are.equal("boolean", type(v))
    assert.are.equal(v, wick.cuda.is_available())
  end)

  it("device_count is a non-negative integer consistent with is_available", function()
    local n = wick.cuda.device_count()
    assert.are.equal("number", type(n))
    assert.is_true(n >= 0 and n == math.floor(n))
    if not HAS_CUDA then assert.are.equal(0, n) else assert.is_true(n > 0) end
  end)

  it("set_device rejects an ordinal that does not exist", function()
    local n = wick.cuda.device_count()
    local err = error_of(wick.cuda.set_device, n)
    assert_contains(err, "device_count")
    assert_contains(error_of(wick.cuda.set_device, -1), "-1")
  end)

  it("with_device restores the current device also when fn raises", function()
    if not HAS_CUDA then pending("needs a GPU") end
    local before = wick.cuda.current_device()
    local ok = pcall(wick.cuda.with_device, 0, function() error("boom") end)
    assert.is_false(ok)
    assert.are.equal(before, wick.cuda.current_device())
    local a, b = wick.cuda.with_device(0, function(x, y) return x + y, wick.cuda.current_device() end, 1, 2)
    assert.are.equal(3, a)
    assert.are.equal(0, b)
  end)
end)

describe("t.device and t:to", function()
  it("t.device is an interned device object", function()
    local t = wick.ones(2)
    assert.is_true(rawequal(wick.device("cpu"), t.device))
    assert.are.equal("cpu", t.device.type)
    assert.are.equal("cpu", tostring(t.device))
    assert.is_true(getmetatable(t.device) == wick.Device)
    assert.is_true(rawequal(wick.device("meta"), wick.ones(2, { device = "meta" }).device))
  end)

  it("creation takes a device string or object", function()
    assert.are.equal("meta", wick.zeros(2, { device = "meta" }).device.type)
    assert.are.equal("meta", wick.zeros(2, { device = wick.device("meta") }).device.type)
    assert.are.equal("cpu", wick.tensor({ 1 }, { device = wick.device("cpu") }).device.type)
    assert.are.equal("meta", wick.tensor({ 1, 2 }, { device = "meta" }).device.type)
    assert.are.equal("meta", wick.arange(4, { device = "meta" }).device.type)
    assert.are.equal("meta", wick.eye(3, { device = "meta" }).device.type)
    assert.are.equal("meta", wick.full({ 2 }, 1, { device = "meta" }).device.type)
    assert.are.equal("meta", wick.rand(3, { device = "meta" }).device.type)
    assert.are.equal("meta", wick.randn(3, { device = "meta" }).device.type)
    assert.are.equal("meta", wick.zeros_like(wick.ones(2), { device = "meta" }).device.type)
  end)

  it("creation rejects a bad device", function()
    assert_contains(error_of(wick.zeros, 2, { device = "gpu" }), "'gpu'")
    assert_contains(error_of(wick.zeros, 2, { device = 5 }), "device")
  end)

  it("returns the same object when nothing changes", function()
    local t = wick.ones(2, 3)
    assert.is_true(rawequal(t, t:to("cpu")))
    assert.is_true(rawequal(t, t:to(wick.device("cpu"))))
    assert.is_true(rawequal(t, t:to("float32")))
    assert.is_true(rawequal(t, t:to({ dtype = "float32", device = "cpu" })))
    assert.is_true(rawequal(t, t:to({ device = "cpu" })))
    assert.is_true(rawequal(t, t:cpu()))
    assert.is_true(rawequal(t, t:float()))
    local m = wick.ones(2, { device = "meta" })
    assert.is_true(rawequal(m, m:to("meta")))
  end)

  it("to(dtype) makes a new tensor and leaves t untouched", function()
    local t = wick.tensor({ 1.5, 2.5 })
    local d = t:to("float64")
    assert.is_false(rawequal(t, d))
    assert.are.equal("float64", d.dtype)
    assert.are.equal("float32", t.dtype)
    assert.are.same({ 1.5, 2.5 }, d:totable())
    d[1] = 9
    assert.are.same({ 1.5, 2.5 }, t:totable())
    local i = t:to("int64")
    assert.are.same({ 1, 2 }, i:totable())
    assert.are.equal("int64", t:long().dtype)
    assert.are.equal("float64", t:double().dtype)
  end)

  it("to{dtype=, device=} changes both", function()
    local t = wick.tensor({ 1, 2, 3 })
    local m = t:to({ dtype = "float16", device = "meta" })
    assert.are.equal("float16", m.dtype)
    assert.are.equal("meta", m.device.type)
    assert.are.same({ 3 }, m:size())
    assert.are.equal("cpu", t.device.type)
    assert.are.equal("float32", t.dtype)
    local d = t:to({ dtype = "float64" })
    assert.are.equal("float64", d.dtype)
    assert.are.equal("cpu", d.device.type)
  end)

  it("to(device) to meta makes a new tensor and leaves t on the cpu", function()
    local t = wick.ones(2, 3)
    local m = t:to("meta")
    assert.is_false(rawequal(t, m))
    assert.are.equal("meta", m.device.type)
    assert.are.same({ 2, 3 }, m:size())
    assert.are.equal("cpu", t.device.type)
    assert.are.same({ { 1, 1, 1 }, { 1, 1, 1 } }, t:totable())
    local m2 = t:to(wick.device("meta"))
    assert.are.equal("meta", m2.device.type)
  end)

  it("to(other_tensor) takes its dtype and device", function()
    local t = wick.ones(2)
    local like = wick.zeros(1, { dtype = "float64", device = "meta" })
    local r = t:to(like)
    assert.are.equal("float64", r.dtype)
    assert.are.equal("meta", r.device.type)
  end)

  it("copying out of a meta tensor raises", function()
    local m = wick.ones(2, { device = "meta" })
    assert_contains(error_of(function() return m:to("cpu") end), "meta")
  end)

  it("to rejects bad arguments", function()
    local t = wick.ones(2)
    assert_contains(error_of(function() return t:to("gpu") end), "'gpu'")
    assert_contains(error_of(function() return t:to(true) end), "boolean")
    assert_contains(error_of(function() return t:to(-1) end), "a device ordinal must be an integer >= 0")
    if not wick.cuda.is_available() then assert_contains(error_of(function() return t:to(42) end), "cuda:42") end
    assert_contains(error_of(function() return t:to({ dtype = "float99" }) end), "float99")
  end)

  it("is_cuda and is_meta", function()
    assert.is_false(wick.ones(1).is_cuda)
    assert.is_true(wick.ones(1, { device = "meta" }).is_meta)
    assert.is_false(wick.ones(1).is_meta)
  end)
end)

describe("CUDA when it is unavailable", function()
  local function cuda_absent()
    if HAS_CUDA then pending("only meaningful when wick.cuda.is_available() is false") end
  end

  it("creating on cuda raises a clear error", function()
    cuda_absent()
    for _, dev in ipairs({ "cuda", "cuda:0", "cuda:1" }) do
      local err = error_of(wick.zeros, 2, { device = dev })
      assert_contains(err, dev)
      assert_contains(err, "is_available")
    end
    assert_contains(error_of(wick.tensor, { 1, 2 }, { device = "cuda" }), "is_available")
    assert_contains(error_of(wick.ones, { 2 }, { device = wick.device("cuda", 0) }), "is_available")
  end)

  it("moving to cuda raises a clear error and leaves t on the cpu", function()
    cuda_absent()
    local t = wick.ones(3)
    assert_contains(error_of(function() return t:to("cuda") end), "is_available")
    assert_contains(error_of(function() return t:cuda() end), "is_available")
    assert_contains(error_of(function() return t:cuda(1) end), "cuda:1")
    assert_contains(error_of(function() return t:to({ device = "cuda:0", dtype = "float64" }) end), "is_available")
    assert.are.equal("cpu", t.device.type)
    assert.are.same({ 1, 1, 1 }, t:totable())
  end)
end)

describe("real CUDA tensors", function()
  local function need_gpu()
    if not HAS_CUDA then pending("needs a GPU") end
  end

  it("round-trip through cuda keeps values and the tensor prints its device", function()
    need_gpu()
    local t = wick.tensor({ 1, 2, 3 })
    local g = t:cuda()
    assert.are.equal("cuda", g.device.type)
    assert.are.equal(0, g.device.index)
    assert.is_true(tostring(g):find("device='cuda:0'", 1, true) ~= nil)
    assert.are.same({ 1, 2, 3 }, g:cpu():totable())
    assert.is_true(rawequal(g, g:to("cuda:0")))
  end)

  it("ops between cpu and cuda tensors raise the same-device error", function()
    need_gpu()
    local c, g = wick.ones(2, 2), wick.ones(2, 2):cuda()
    assert_same_device_error(function() return c + g end, "cpu", "cuda:0", "other", "add")
    assert_same_device_error(function() return c:addmm(g, g) end, "cpu", "cuda:0", "mat1", "addmm")
  end)

  it("a 0-dim cpu tensor mixes with a cuda tensor", function()
    need_gpu()
    local r = wick.ones(2):cuda() * wick.tensor(3)
    assert.are.equal("cuda", r.device.type)
    assert.are.same({ 3, 3 }, r:cpu():totable())
  end)
end)

describe("the same-device rule (cpu and meta)", function()
  local C, M = wick.ones(2, 3), wick.ones(2, 3, { device = "meta" })

  local binary_ops = { "add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge" }
  for _, op in ipairs(binary_ops) do
    it(op .. " raises with the first operand's device first", function()
      assert_same_device_error(function() return C[op](C, M) end, "cpu", "meta", "other", op)
      assert_same_device_error(function() return M[op](M, C) end, "meta", "cpu", "other", op)
    end)
  end

  it("the in-place forms raise too, leaving self untouched", function()
    assert_same_device_error(function() return C:add_(M) end, "cpu", "meta", "other", "add")
    assert_same_device_error(function() return C:mul_(M) end, "cpu", "meta", "other", "mul")
    assert_same_device_error(function() return M:sub_(C) end, "meta", "cpu", "other", "sub")
    assert.are.same({ { 1, 1, 1 }, { 1, 1, 1 } }, C:totable())
  end)

  it("the Lua operators raise too", function()
    assert_same_device_error(function() return C + M end, "cpu", "meta", "other", "add")
    assert_same_device_error(function() return M - C end, "meta", "cpu", "other", "sub")
    assert_same_device_error(function() return C * M end, "cpu", "meta", "other", "mul")
    assert_same_device_error(function() return M / C end, "meta", "cpu", "other", "div")
    assert_same_device_error(function() return C ^ M end, "cpu", "meta", "other", "pow")
  end)

  it("add with alpha raises too", function()
    assert_same_device_error(function() return C:add(M, 2) end, "cpu", "meta", "other", "add")
  end)

  it("mm", function()
    local Mt = wick.ones(3, 2, { device = "meta" })
    assert_same_device_error(function() return C:mm(Mt) end, "cpu", "meta", "mat2", "mm")
    assert_same_device_error(function() return M:mm(wick.ones(3, 2)) end, "meta", "cpu", "mat2", "mm")
  end)

  it("addmm names the argument that differs", function()
    local in_c, in_m = wick.ones(2, 2), wick.ones(2, 2, { device = "meta" })
    local a_c, a_m = wick.ones(2, 3), wick.ones(2, 3, { device = "meta" })
    local b_c, b_m = wick.ones(3, 2), wick.ones(3, 2, { device = "meta" })
    assert_same_device_error(function() return in_c:addmm(a_m, b_m) end, "cpu", "meta", "mat1", "addmm")
    assert_same_device_error(function() return in_m:addmm(a_c, b_m) end, "meta", "cpu", "mat1", "addmm")
    assert_same_device_error(function() return in_m:addmm(a_m, b_c) end, "meta", "cpu", "mat2", "addmm")
    assert_same_device_error(function() return in_c:addmm(a_c, b_m) end, "cpu", "meta", "mat2", "addmm")
  end)

  it("matmul", function()
    assert_same_device_error(function() return C:matmul(wick.ones(3, { device = "meta" })) end,
      "cpu", "meta", "other", "matmul")
    assert_same_device_error(function() return M:matmul(wick.ones(3, 4)) end, "meta", "cpu", "other", "matmul")
  end)

  it("where", function()
    local cond_c, cond_m = C:gt(0), M:gt(0)
    assert_same_device_error(function() return wick.where(cond_c, M, C) end, "cpu", "meta", "input", "where")
    assert_same_device_error(function() return wick.where(cond_c, C, M) end, "cpu", "meta", "other", "where")
    assert_same_device_error(function() return wick.where(cond_m, C, M) end, "meta", "cpu", "input", "where")
    assert_same_device_error(function() return wick.where(cond_m, M, C) end, "meta", "cpu", "other", "where")
  end)

  it("cat", function()
    assert_same_device_error(function() return wick.cat({ C, M }) end, "cpu", "meta", "tensors", "cat")
    assert_same_device_error(function() return wick.cat({ M, M, C }, 2) end, "meta", "cpu", "tensors", "cat")
  end)

  it("index_select", function()
    local idx_c = wick.tensor({ 1, 2 }, { dtype = "int64" })
    local idx_m = wick.tensor({ 1, 2 }, { dtype = "int64", device = "meta" })
    assert_same_device_error(function() return C:index_select(2, idx_m) end, "cpu", "meta", "index", "index_select")
    assert_same_device_error(function() return M:index_select(2, idx_c) end, "meta", "cpu", "index", "index_select")
  end)

  it("gather", function()
    local idx_c = wick.ones(2, 3, { dtype = "int64" })
    local idx_m = wick.ones(2, 3, { dtype = "int64", device = "meta" })
    assert_same_device_error(function() return C:gather(1, idx_m) end, "cpu", "meta", "index", "gather")
    assert_same_device_error(function() return M:gather(1, idx_c) end, "meta", "cpu", "index", "gather")
  end)

  it("copy_ from the cpu into a meta tensor is allowed (a no-op), like PyTorch", function()
    local m = wick.zeros(2, 3, { device = "meta" })
    assert.is_true(rawequal(m, m:copy_(C)))
  end)

  it("a 0-dim cpu tensor mixes with a meta tensor as a scalar", function()
    local s = wick.tensor(2)
    local r1 = M + s
    local r2 = s * M
    local r3 = M:maximum(s)
    local r4 = wick.where(M:gt(0), s, M)
    for _, r in ipairs({ r1, r2, r3, r4 }) do
      assert.are.equal("meta", r.device.type)
      assert.are.same({ 2, 3 }, r:size())
    end
    assert.are.equal("meta", M:add_(s).device.type)
    local i = wick.tensor(2, { dtype = "int64" })
    assert.are.equal("float32", (M + i).dtype)
    -- same category: the dimensioned tensor decides, as in PyTorch
    assert.are.equal("float32", (M + wick.tensor(2, { dtype = "float64" })).dtype)
    assert.are.equal("float64", (M:to("int64") + wick.tensor(2, { dtype = "float64" })).dtype)
  end)

  it("a 0-dim meta tensor does not mix with a cpu tensor", function()
    local ms = wick.tensor(2, { device = "meta" })
    assert_same_device_error(function() return C + ms end, "cpu", "meta", "other", "add")
  end)

  it("the error is raised before any work: the cpu operand is untouched", function()
    local t = wick.tensor({ 1, 2, 3 })
    pcall(function() return t:add_(wick.ones(3, { device = "meta" })) end)
    assert.are.same({ 1, 2, 3 }, t:totable())
  end)
end)

describe("meta tensors", function()
  local M = wick.ones(2, 3, { device = "meta" })

  it("elementwise ops give the right shapes and dtypes", function()
    local r = M + wick.ones(3, { device = "meta" })
    assert.are.equal("meta", r.device.type)
    assert.are.same({ 2, 3 }, r:size())
    assert.are.equal("float32", r.dtype)
    local col, row = wick.ones(4, 1, { device = "meta" }), wick.ones(1, 5, { device = "meta" })
    assert.are.same({ 4, 5 }, (col * row):size())
    assert.are.equal("bool", M:gt(0).dtype)
    assert.are.equal("int64", (M:to("int64") + 1).dtype)
    assert.are.equal("float32", (M:to("int64") / 2).dtype)
    assert.are.equal("float32", M:to("int32"):exp().dtype)
    assert.are.equal("float64", (M + M:to("float64")).dtype)
    assert.are.equal("float16", M:to("float16"):neg().dtype)
    assert.are.same({ 2, 3 }, M:clamp(0, 1):size())
    assert.are.same({ 2, 3 }, wick.where(M:gt(0), M, 0):size())
  end)

  it("shape errors are still raised", function()
    local err = error_of(function() return M + wick.ones(4, { device = "meta" }) end)
    assert_contains(err, "[2, 3] vs [4]")
    err = error_of(function() return M:mm(wick.ones(2, 3, { device = "meta" })) end)
    assert_contains(err, "2x3 and 2x3")
    err = error_of(function() return M:to("int64"):add_(0.5) end)
    assert_contains(err, "can't be cast")
  end)

  it("linear algebra, reductions and views give the right shapes", function()
    local r = M:mm(wick.ones(3, 5, { device = "meta" }))
    assert.are.same({ 2, 5 }, r:size())
    assert.are.equal("meta", r.device.type)
    local b = wick.ones(7, 2, 3, { device = "meta" }):matmul(wick.ones(3, 4, { device = "meta" }))
    assert.are.same({ 7, 2, 4 }, b:size())
    local am = wick.ones(2, 5, { device = "meta" }):addmm(M, wick.ones(3, 5, { device = "meta" }))
    assert.are.same({ 2, 5 }, am:size())
    assert.are.same({}, M:sum():size())
    assert.are.same({ 3 }, M:sum(1):size())
    assert.are.same({ 2, 1 }, M:mean(2, true):size())
    assert.are.same({ 3, 2 }, M:t():size())
    assert.are.same({ 6 }, M:view(6):size())
    assert.are.same({ 2, 2 }, M:narrow(2, 2, 2):size())
    assert.are.same({ 3 }, M[1]:size())
    assert.are.same({ 4, 3 }, wick.cat({ M, M }):size())
    assert.are.same({ 2, 2, 3 }, wick.stack({ M, M }):size())
    local idx = wick.tensor({ 1, 1, 2, 1 }, { dtype = "int64", device = "meta" })
    assert.are.same({ 2, 4 }, M:index_select(2, idx):size())
    assert.are.same({ 2, 3 }, M:softmax(2):size())
  end)

  it("allocate no data", function()
    collectgarbage()
    collectgarbage()
    local before = bytes_in_use()
    local big = wick.empty(1000, 1000, 1000, { device = "meta" }) -- 4 GB if it were real
    local r = (big * 2 + big):exp()
    local s = big:sum(1)
    local p = wick.ones(100000, 100000, { device = "meta" }):mm(wick.ones(100000, 100000, { device = "meta" }))
    local grown = bytes_in_use() - before
    assert.is_true(grown < 1e6, "meta ops allocated " .. grown .. " bytes")
    assert.are.same({ 1000, 1000, 1000 }, r:size())
    assert.are.same({ 1000, 1000 }, s:size())
    assert.are.same({ 100000, 100000 }, p:size())
  end)

  it("item() and totable() raise", function()
    local one = wick.ones(1, { device = "meta" })
    local err = error_of(function() return one:item() end)
    assert_contains(err, "meta")
    err = error_of(function() return M:totable() end)
    assert_contains(err, "meta")
    err = error_of(function() return M:sum():item() end)
    assert_contains(err, "meta")
  end)

  it("print without values", function()
    assert.are.equal("tensor(..., device='meta', size=(2, 3))", tostring(M))
  end)
end)

describe("devices cross the binding as numbers", function()
  it("a device object caches its number; t.device finds the interned object by it", function()
    local cpu, meta = wick.device("cpu"), wick.device("meta")
    assert.are.equal("number", type(cpu._code))
    assert.are_not.equal(cpu._code, meta._code)
    assert.are_not.equal(wick.device("cuda")._code, wick.device("cuda:0")._code)
    assert.are_not.equal(wick.device("cuda:0")._code, wick.device("cuda:1")._code)
    assert.is_true(rawequal(cpu, wick.ones(1).device))
    assert.is_true(rawequal(meta, wick.ones(1, { device = "meta" }).device))
    assert.are.equal(meta._code, wick.ones(1, { device = meta })._device_code(wick.ones(1, { device = meta })))
  end)

  it("a device named once is not parsed again, even after a collection", function()
    local name = "cuda:7"
    local code = wick.device(name)._code
    collectgarbage(); collectgarbage()
    local parse, calls = wick._core.parse_device, 0
    if jit then jit.off() end
    debug.sethook(function()
      local info = debug.getinfo(2, "f")
      if info and info.func == parse then calls = calls + 1 end
    end, "c")
    local d = wick.device(name)
    local m = wick.device("meta")
    debug.sethook()
    if jit then jit.on() end
    assert.are.equal(0, calls)
    assert.are.equal(code, d._code)
    assert.is_true(rawequal(m, wick.ones(1, { device = "meta" }).device))
  end)

  it("each number gives back its device, and a number of no device is an error", function()
    for _, name in ipairs({ "cpu", "meta", "cuda", "cuda:0", "cuda:3" }) do
      local d = wick.device(name)
      local type_, index, canonical, code = wick._core.device_of_code(d._code)
      assert.are.equal(d.type, type_)
      assert.are.equal(d.index, index)
      assert.are.equal(name, canonical)
      assert.are.equal(d._code, code)
    end
    for _, bad in ipairs({ -1, 3, 4 + 3, 8 + 2, 2.5 }) do
      assert.is_false(pcall(wick._core.device_of_code, bad), tostring(bad))
    end
  end)

  it("a device object is read through its number by every function taking a device", function()
    local meta = wick.device("meta")
    assert.are.equal("meta", wick.zeros(2, { device = meta }).device.type)
    assert.are.equal("meta", wick.ones(2):to(meta).device.type)
    -- a plain table {type =, index =} still works, and a number is no device
    assert.are.equal("meta", wick.zeros(2, { device = { type = "meta" } }).device.type)
    assert_contains(error_of(wick.zeros, 2, { device = meta._code }), "device")
  end)

  it("module moves take the device's number: a bad one is an error, nothing moves", function()
    local m = wick.nn.Linear(2, 2)
    assert_contains(error_of(function() wick._core.tensors_to({ m.weight }, 3) end), "device number")
    assert_contains(error_of(function() wick._core.tensors_to({ m.weight }, "meta") end), "device number")
    assert_contains(error_of(function() wick._core.tensors_to({ m.weight, 5 }, wick.device("meta")._code) end), "tensor")
    assert_contains(error_of(function() wick._core.tensors_to(m.weight) end), "array of tensors")
    assert.are.equal("cpu", m.weight.device.type)
    wick._core.tensors_to({}, wick.device("meta")._code)
  end)

  it("model:cuda() without CUDA raises the creation error and moves nothing", function()
    if HAS_CUDA then pending("only meaningful when wick.cuda.is_available() is false") end
    local m = wick.nn.Sequential(wick.nn.Linear(2, 2), wick.nn.Linear(2, 2))
    local w = m:parameters()[1]
    assert_contains(error_of(function() m:cuda() end), "is_available")
    assert_contains(error_of(function() m:to({ device = "cuda:1", dtype = "float64" }) end), "cuda:1")
    for _, p in ipairs(m:parameters()) do
      assert.are.equal("cpu", p.device.type)
      assert.are.equal("float32", p.dtype)
    end
    assert.is_true(rawequal(w, m:parameters()[1]))
  end)
end)
