-- Indexing and joining: index_select, gather, scatter/scatter_, cat, stack,
-- copy_, fill_, zero_, clone, item, totable. Index tensors are 1-based in Lua;
-- out-of-range indices raise clear errors and leave tensors unchanged.
local wick = require("wick")

local NaN = 0 / 0

local function close(actual, expected, tol, path)
  path = path or "value"
  if wick.is_tensor(actual) then actual = actual:totable() end
  if type(expected) == "table" then
    if type(actual) ~= "table" then return false, path .. ": expected a table, got " .. tostring(actual) end
    if #actual ~= #expected then
      return false, ("%s: expected %d elements, got %d"):format(path, #expected, #actual)
    end
    for i = 1, #expected do
      local ok, why = close(actual[i], expected[i], tol, path .. "[" .. i .. "]")
      if not ok then return false, why end
    end
    return true
  end
  if type(actual) ~= "number" then return false, path .. ": expected a number, got " .. tostring(actual) end
  if expected ~= expected then
    if actual ~= actual then return true end
    return false, ("%s: expected nan, got %.17g"):format(path, actual)
  end
  if actual ~= actual then return false, ("%s: expected %.17g, got nan"):format(path, expected) end
  local t = tol or 1e-6
  if math.abs(actual - expected) <= t * (1 + math.abs(expected)) then return true end
  return false, ("%s: expected %.17g, got %.17g"):format(path, expected, actual)
end

local function assert_close(actual, expected, tol)
  local ok, why = close(actual, expected, tol)
  assert(ok, why)
end

local function shape_of(t) local s = {}; for i = 1, t:dim() do s[i] = t:size(i) end; return s end

local function assert_error_has(fn, ...)
  local ok, err = pcall(fn)
  assert.is_false(ok, "expected an error")
  err = tostring(err)
  for _, needle in ipairs({ ... }) do
    assert(err:find(needle, 1, true), ("error %q does not contain %q"):format(err, needle))
  end
  return err
end

local function I(values) return wick.tensor(values, { dtype = "int64" }) end

local M = { { 1, 2, 3 }, { 4, 5, 6 }, { 7, 8, 9 } }

describe("index_select", function()
  it("picks rows and columns by 1-based indices", function()
    local t = wick.tensor(M)
    assert.are.same({ { 7, 8, 9 }, { 1, 2, 3 } }, t:index_select(1, I({ 3, 1 })):totable())
    assert.are.same({ { 2, 2 }, { 5, 5 }, { 8, 8 } }, t:index_select(2, I({ 2, 2 })):totable())
    assert.are.same({ { 3 }, { 6 }, { 9 } }, t:index_select(-1, I({ 3 })):totable())
    assert.are.same({ 0, 3 }, shape_of(t:index_select(1, I({}))))
    assert.are.same({ { 4, 5, 6 } }, wick.index_select(t, 1, I({ 2 })):totable())
  end)

  it("returns a new tensor, not a view", function()
    local t = wick.tensor(M)
    local r = t:index_select(1, I({ 1 }))
    assert.is_false(r:is_same_storage(t))
    r[1][1] = 100
    assert.are.equal(1, t[1][1]:item())
  end)

  it("accepts int32 indices and keeps the input's dtype", function()
    local r = wick.tensor(M, { dtype = "float64" }):index_select(1, wick.tensor({ 2 }, { dtype = "int32" }))
    assert.are.equal("float64", r.dtype)
    assert.are.same({ { 4, 5, 6 } }, r:totable())
    local big = I({ 2 ^ 50, -3, 2 ^ 52 + 1 }):index_select(1, I({ 3, 1 }))
    assert.are.equal("int64", big.dtype)
    assert.are.same({ 2 ^ 52 + 1, 2 ^ 50 }, big:totable())
    local h = wick.tensor({ 0.5, 1.5, 2.5 }, { dtype = "float16" }):index_select(1, I({ 3, 3, 1 }))
    assert.are.equal("float16", h.dtype)
    assert.are.same({ 2.5, 2.5, 0.5 }, h:totable())
    local b = wick.tensor({ true, false }):index_select(1, I({ 2, 1, 2 }))
    assert.are.same({ false, true, false }, b:totable())
  end)

  it("reads non-contiguous inputs and indices", function()
    local t = wick.tensor(M):t() -- {{1,4,7},{2,5,8},{3,6,9}}
    assert.are.same({ { 3, 6, 9 }, { 1, 4, 7 } }, t:index_select(1, I({ 3, 1 })):totable())
    assert.are.same({ { 4 }, { 5 }, { 6 } }, t:index_select(2, I({ 2 })):totable())
    local idx = I({ { 1, 3 }, { 2, 2 } }):select(2, 2) -- {3, 2}, stride 2
    assert.are.same({ { 7, 8, 9 }, { 4, 5, 6 } }, wick.tensor(M):index_select(1, idx):totable())
    local e = wick.tensor({ 10, 20, 30 }):expand(2, 3)
    assert.are.same({ { 30, 10 }, { 30, 10 } }, e:index_select(2, I({ 3, 1 })):totable())
  end)

  it("on a 3-D tensor along the middle dim", function()
    local x = wick.tensor({ { { 1, 2 }, { 3, 4 }, { 5, 6 } }, { { 7, 8 }, { 9, 10 }, { 11, 12 } } })
    assert.are.same({ { { 5, 6 }, { 1, 2 } }, { { 11, 12 }, { 7, 8 } } }, x:index_select(2, I({ 3, 1 })):totable())
  end)

  it("raises for out-of-range indices, naming the index and size", function()
    local t = wick.tensor(M)
    assert_error_has(function() return t:index_select(1, I({ 1, 4 })) end, "index_select", "index 4", "size 3")
    assert_error_has(function() return t:index_select(2, I({ 0 })) end, "index_select", "index 0")
    assert_error_has(function() return t:index_select(2, I({ -1 })) end, "index_select", "out of bounds")
  end)

  it("raises for float indices, 2-D indices and bad dims", function()
    local t = wick.tensor(M)
    assert_error_has(function() return t:index_select(1, wick.tensor({ 1 })) end, "index_select", "int64", "float32")
    assert_error_has(function() return t:index_select(1, I({ { 1 } })) end, "index_select", "1-D")
    assert_error_has(function() return t:index_select(3, I({ 1 })) end, "index_select", "dimension 3")
  end)
end)

describe("gather", function()
  it("gathers along dim 2 and dim 1 with 1-based indices", function()
    local t = wick.tensor(M)
    assert.are.same({ { 1, 1 }, { 6, 5 }, { 8, 9 } }, t:gather(2, I({ { 1, 1 }, { 3, 2 }, { 2, 3 } })):totable())
    assert.are.same({ { 7, 2, 6 } }, t:gather(1, I({ { 3, 1, 2 } })):totable())
    assert.are.same({ { 7, 2, 6 }, { 1, 2, 3 } }, t:gather(-2, I({ { 3, 1, 2 }, { 1, 1, 1 } })):totable())
    assert.are.same({ { 3 }, { 4 } }, wick.gather(t, 2, I({ { 3 }, { 1 } })):totable())
  end)

  it("keeps the input's dtype and reads non-contiguous inputs", function()
    local d = wick.tensor(M, { dtype = "float64" }):t():gather(2, I({ { 3 }, { 1 }, { 2 } }))
    assert.are.equal("float64", d.dtype)
    assert.are.same({ { 7 }, { 2 }, { 6 } }, d:totable())
    local i = I({ { 2 ^ 53, 1 }, { 2, 3 } }):gather(2, I({ { 1, 1 }, { 2, 1 } }))
    assert.are.same({ { 2 ^ 53, 2 ^ 53 }, { 3, 2 } }, i:totable())
    local idx = I({ { 1, 2, 3 }, { 3, 2, 1 } }):t() -- 3x2, non-contiguous index
    assert.are.same({ { 1, 3 }, { 5, 5 }, { 9, 7 } }, wick.tensor(M):gather(2, idx):totable())
  end)

  it("picks class scores the way a loss does", function()
    local logits = wick.tensor({ { 0.1, 0.7, 0.2 }, { 0.5, 0.3, 0.2 } })
    local target = I({ 2, 1 })
    assert_close(logits:gather(2, target:unsqueeze(2)):squeeze(2), { 0.7, 0.5 })
  end)

  it("raises for out-of-range indices and shape mismatches", function()
    local t = wick.tensor(M)
    assert_error_has(function() return t:gather(2, I({ { 4 } })) end, "gather", "index 4", "size 3")
    assert_error_has(function() return t:gather(1, I({ { 0 } })) end, "gather", "index 0")
    assert_error_has(function() return t:gather(1, I({ 1, 2 })) end, "gather", "dimensions")
    assert_error_has(function() return t:gather(1, wick.tensor({ { 1 } })) end, "gather", "int64")
  end)
end)

describe("scatter and scatter_", function()
  it("scatter writes src into a copy at 1-based positions", function()
    local z = wick.zeros(3, 3)
    local r = z:scatter(2, I({ { 2 }, { 3 }, { 1 } }), wick.tensor({ { 10 }, { 20 }, { 30 } }))
    assert.are.same({ { 0, 10, 0 }, { 0, 0, 20 }, { 30, 0, 0 } }, r:totable())
    assert.are.same({ { 0, 0, 0 }, { 0, 0, 0 }, { 0, 0, 0 } }, z:totable())
    local c = wick.zeros(2, 3):scatter(1, I({ { 2, 1, 2 } }), wick.tensor({ { 1, 2, 3 } }))
    assert.are.same({ { 0, 2, 0 }, { 1, 0, 3 } }, c:totable())
  end)

  it("scatter_ writes in place and returns self", function()
    local z = wick.zeros(3, 3)
    local r = z:scatter_(1, I({ { 3, 2, 1 } }), wick.tensor({ { 1, 2, 3 } }))
    assert.is_true(rawequal(r, z))
    assert.are.same({ { 0, 0, 3 }, { 0, 2, 0 }, { 1, 0, 0 } }, z:totable())
  end)

  it("takes a number as src", function()
    local z = wick.zeros(3, 3)
    z:scatter_(1, I({ { 3, 2, 1 } }), 7)
    assert.are.same({ { 0, 0, 7 }, { 0, 7, 0 }, { 7, 0, 0 } }, z:totable())
    local r = wick.ones(2, 2):scatter(2, I({ { 2 }, { 1 } }), -1.5)
    assert.are.same({ { 1, -1.5 }, { -1.5, 1 } }, r:totable())
  end)

  it("uses only the index's extent of a bigger src", function()
    local src = wick.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })
    local r = wick.zeros(2, 4):scatter(2, I({ { 4, 1 }, { 2, 3 } }), src)
    assert.are.same({ { 2, 0, 0, 1 }, { 0, 4, 5, 0 } }, r:totable())
  end)

  it("makes a one-hot matrix", function()
    local labels = I({ 3, 1, 2 })
    local onehot = wick.zeros(3, 4):scatter_(2, labels:unsqueeze(2), 1)
    assert.are.same({ { 0, 0, 1, 0 }, { 1, 0, 0, 0 }, { 0, 1, 0, 0 } }, onehot:totable())
  end)

  it("converts src to self's dtype and works on int64 and non-contiguous self", function()
    local i = wick.zeros(2, 2, { dtype = "int64" })
    i:scatter_(2, I({ { 2 }, { 1 } }), wick.tensor({ { 2.75 }, { -4 } }))
    assert.are.equal("int64", i.dtype)
    assert.are.same({ { 0, 2 }, { -4, 0 } }, i:totable())
    local base = wick.zeros(3, 2)
    local v = base:t() -- 2x3 view
    v:scatter_(2, I({ { 3 }, { 1 } }), 5)
    assert.are.same({ { 0, 5 }, { 0, 0 }, { 5, 0 } }, base:totable())
    local d = wick.zeros(3, { dtype = "float64" }):scatter(1, I({ 2 }), wick.tensor({ 0.1 }, { dtype = "float64" }))
    assert.are.same({ 0, 0.1, 0 }, d:totable())
  end)

  it("raises for out-of-range indices and leaves the tensor unchanged", function()
    local z = wick.tensor(M)
    local before = z:totable()
    assert_error_has(function() z:scatter_(1, I({ { 1, 5, 1 } }), 9) end, "scatter", "index 5", "size 3")
    assert.are.same(before, z:totable())
    assert_error_has(function() z:scatter_(2, I({ { 2, 0 } }), wick.tensor({ { 1, 1 } })) end, "scatter", "index 0")
    assert.are.same(before, z:totable())
    assert_error_has(function() return z:scatter(1, I({ { 4 } }), 1) end, "scatter", "index 4")
    assert.are.same(before, z:totable())
  end)

  it("raises for float indices and mismatched ranks", function()
    local z = wick.zeros(2, 2)
    assert_error_has(function() z:scatter_(1, wick.tensor({ { 1 } }), 1) end, "scatter", "int64")
    assert_error_has(function() z:scatter_(1, I({ 1 }), wick.ones(1)) end, "scatter", "dimensions")
    assert_error_has(function() z:scatter_(1, I({ { 1 } }), "x") end, "scatter", "src")
  end)
end)

describe("cat", function()
  it("joins along dim 1, 2 and -1", function()
    local a, b = wick.tensor({ { 1, 2 }, { 3, 4 } }), wick.tensor({ { 5, 6 } })
    local r = wick.cat({ a, b })
    assert.are.same({ { 1, 2 }, { 3, 4 }, { 5, 6 } }, r:totable())
    assert.are.same({ { 1, 2 }, { 3, 4 }, { 5, 6 } }, wick.cat({ a, b }, 1):totable())
    local c = wick.tensor({ { 7 }, { 8 } })
    assert.are.same({ { 1, 2, 7 }, { 3, 4, 8 } }, wick.cat({ a, c }, 2):totable())
    assert.are.same({ { 7, 1, 2 }, { 8, 3, 4 } }, wick.cat({ c, a }, -1):totable())
    assert.are.same({ 1, 2, 3 }, wick.cat({ wick.tensor({ 1 }), wick.tensor({ 2, 3 }) }):totable())
    assert.are.same({ 1, 2 }, wick.cat({ wick.tensor({ 1, 2 }) }):totable())
  end)

  it("joins 3-D tensors along the middle dim and skips empty parts", function()
    local a = wick.ones(2, 1, 2)
    local b = wick.zeros(2, 2, 2)
    local r = wick.cat({ a, b, wick.zeros(2, 0, 2) }, 2)
    assert.are.same({ 2, 3, 2 }, shape_of(r))
    assert.are.same({ { { 1, 1 }, { 0, 0 }, { 0, 0 } }, { { 1, 1 }, { 0, 0 }, { 0, 0 } } }, r:totable())
  end)

  it("promotes mixed dtypes like PyTorch", function()
    local r = wick.cat({ I({ 1, 2 }), wick.tensor({ 0.5 }) })
    assert.are.equal("float32", r.dtype)
    assert.are.same({ 1, 2, 0.5 }, r:totable())
    local d = wick.cat({ wick.tensor({ 1.5 }), wick.tensor({ 0.25 }, { dtype = "float64" }) })
    assert.are.equal("float64", d.dtype)
    assert.are.same({ 1.5, 0.25 }, d:totable())
    assert.are.equal("int64", wick.cat({ I({ 1 }), wick.tensor({ 2 }, { dtype = "int32" }) }).dtype)
    local h = wick.cat({ wick.tensor({ 1 }, { dtype = "float16" }), wick.tensor({ 2 }) })
    assert.are.equal("float32", h.dtype)
    assert.are.same({ 1, 2 }, h:totable())
    local b = wick.cat({ wick.tensor({ true }), I({ 5 }) })
    assert.are.equal("int64", b.dtype)
    assert.are.same({ 1, 5 }, b:totable())
  end)

  it("copies non-contiguous inputs in their logical order", function()
    local t = wick.tensor({ { 1, 2 }, { 3, 4 } })
    assert.are.same({ { 1, 3 }, { 2, 4 }, { 1, 2 }, { 3, 4 } }, wick.cat({ t:t(), t }):totable())
    local e = wick.tensor({ 9, 8 }):expand(2, 2)
    assert.are.same({ { 1, 2, 9, 8 }, { 3, 4, 9, 8 } }, wick.cat({ t, e }, 2):totable())
    local r = wick.cat({ t, t:narrow(2, 2, 1) }, 2)
    assert.are.same({ { 1, 2, 2 }, { 3, 4, 4 } }, r:totable())
    assert.is_false(r:is_same_storage(t))
  end)

  it("raises for mismatched sizes, 0-dim tensors, bad dims and bad arguments", function()
    assert_error_has(function() return wick.cat({ wick.ones(2, 2), wick.zeros(2, 3) }) end, "cat", "[2, 2]", "[2, 3]")
    assert_error_has(function() return wick.cat({ wick.ones(2, 2), wick.zeros(2) }) end, "cat")
    assert_error_has(function() return wick.cat({ wick.tensor(1), wick.tensor(2) }) end, "cat", "zero-dimensional")
    assert_error_has(function() return wick.cat({ wick.ones(2, 2), wick.ones(2, 2) }, 3) end, "cat", "dimension 3")
    assert_error_has(function() return wick.cat({}) end, "cat", "non-empty")
    assert_error_has(function() return wick.cat({ wick.ones(2), 5 }) end, "cat", "position 2")
  end)
end)

describe("stack", function()
  local a, b = wick.tensor({ 1, 2 }), wick.tensor({ 3, 4 })

  it("adds a new dim at 1, 2 and -1", function()
    local r = wick.stack({ a, b })
    assert.are.same({ 2, 2 }, shape_of(r))
    assert.are.same({ { 1, 2 }, { 3, 4 } }, r:totable())
    assert.are.same({ { 1, 2 }, { 3, 4 } }, wick.stack({ a, b }, 1):totable())
    assert.are.same({ { 1, 3 }, { 2, 4 } }, wick.stack({ a, b }, 2):totable())
    assert.are.same({ { 1, 3 }, { 2, 4 } }, wick.stack({ a, b }, -1):totable())
    assert.are.same({ { 1, 2 }, { 3, 4 } }, wick.stack({ a, b }, -2):totable())
  end)

  it("stacks matrices into 3-D along each dim", function()
    local x, y = wick.tensor({ { 1, 2 }, { 3, 4 } }), wick.tensor({ { 5, 6 }, { 7, 8 } })
    assert.are.same({ { { 1, 2 }, { 3, 4 } }, { { 5, 6 }, { 7, 8 } } }, wick.stack({ x, y }, 1):totable())
    assert.are.same({ { { 1, 2 }, { 5, 6 } }, { { 3, 4 }, { 7, 8 } } }, wick.stack({ x, y }, 2):totable())
    assert.are.same({ { { 1, 5 }, { 2, 6 } }, { { 3, 7 }, { 4, 8 } } }, wick.stack({ x, y }, 3):totable())
    assert.are.same({ 2, 2, 3 }, shape_of(wick.stack({ x, y, x }, -1)))
    -- non-contiguous parts
    assert.are.same({ { { 1, 3 }, { 2, 4 } }, { { 1, 2 }, { 3, 4 } } }, wick.stack({ x:t(), x }):totable())
  end)

  it("stacks 0-dim tensors into a vector and promotes dtypes", function()
    local r = wick.stack({ wick.tensor(1), wick.tensor(2), wick.tensor(3) })
    assert.are.same({ 1, 2, 3 }, r:totable())
    local m = wick.stack({ I({ 1 }), wick.tensor({ 0.5 }, { dtype = "float64" }) })
    assert.are.equal("float64", m.dtype)
    assert.are.same({ { 1 }, { 0.5 } }, m:totable())
  end)

  it("raises for unequal sizes and bad dims", function()
    local err = assert_error_has(function() return wick.stack({ a, wick.tensor({ 3, 4, 5 }) }) end,
      "stack expects each tensor to be equal size", "[2]", "[3]")
    assert.is_truthy(err:find("indexing_spec.lua:", 1, true))
    assert_error_has(function() return wick.stack({ a, b }, 4) end, "stack", "dimension 4")
    assert_error_has(function() return wick.stack({ a, b }, -4) end, "stack", "dimension -4")
  end)
end)

describe("copy_", function()
  it("copies values into the tensor and returns it", function()
    local t = wick.zeros(2, 2)
    local r = t:copy_(wick.tensor({ { 1, 2 }, { 3, 4 } }))
    assert.is_true(rawequal(r, t))
    assert.are.same({ { 1, 2 }, { 3, 4 } }, t:totable())
  end)

  it("broadcasts the source", function()
    local t = wick.zeros(2, 3)
    t:copy_(wick.tensor({ 1, 2, 3 }))
    assert.are.same({ { 1, 2, 3 }, { 1, 2, 3 } }, t:totable())
    t:copy_(wick.tensor({ { 7 }, { 8 } }))
    assert.are.same({ { 7, 7, 7 }, { 8, 8, 8 } }, t:totable())
    t:copy_(wick.tensor(5))
    assert.are.same({ { 5, 5, 5 }, { 5, 5, 5 } }, t:totable())
  end)

  it("converts dtypes", function()
    local f = wick.zeros(2)
    f:copy_(wick.tensor({ 0.1, 2 }, { dtype = "float64" }))
    assert.are.equal("float32", f.dtype)
    assert_close(f, { 0.1, 2 }, 1e-7)
    local i = wick.zeros(3, { dtype = "int64" })
    i:copy_(wick.tensor({ 1.7, -2.7, 3 }))
    assert.are.same({ 1, -2, 3 }, i:totable()) -- truncation toward zero
    local d = wick.zeros(1, { dtype = "float64" })
    d:copy_(I({ 2 ^ 52 + 1 }))
    assert.are.equal(2 ^ 52 + 1, d:item())
    local h = wick.zeros(2, { dtype = "float16" })
    h:copy_(wick.tensor({ 0.5, 1000 }))
    assert.are.same({ 0.5, 1000 }, h:totable())
    local b = wick.zeros(3, { dtype = "bool" })
    b:copy_(wick.tensor({ 0, 2, -1 }))
    assert.are.same({ false, true, true }, b:totable())
  end)

  it("writes into and reads from non-contiguous views", function()
    local base = wick.zeros(2, 3)
    base:t():copy_(wick.tensor({ { 1, 2 }, { 3, 4 }, { 5, 6 } }))
    assert.are.same({ { 1, 3, 5 }, { 2, 4, 6 } }, base:totable())
    local dst = wick.zeros(3, 2)
    dst:copy_(base:t())
    assert.are.same({ { 1, 2 }, { 3, 4 }, { 5, 6 } }, dst:totable())
    local n = wick.zeros(3, 4)
    n:narrow(2, 2, 2):copy_(wick.tensor({ 9, 8 }))
    assert.are.same({ { 0, 9, 8, 0 }, { 0, 9, 8, 0 }, { 0, 9, 8, 0 } }, n:totable())
  end)

  it("raises when the source cannot be broadcast, leaving the tensor unchanged", function()
    local t = wick.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })
    assert_error_has(function() t:copy_(wick.tensor({ 1, 2 })) end, "copy_", "3", "2")
    assert_error_has(function() t:copy_(wick.zeros(3, 3)) end, "copy_")
    assert.are.same({ { 1, 2, 3 }, { 4, 5, 6 } }, t:totable())
    assert_error_has(function() t:copy_(5) end, "copy_", "src")
  end)
end)

describe("fill_ and zero_", function()
  it("fill every element and return self", function()
    local t = wick.zeros(2, 3)
    assert.is_true(rawequal(t, t:fill_(2.5)))
    assert.are.same({ { 2.5, 2.5, 2.5 }, { 2.5, 2.5, 2.5 } }, t:totable())
    assert.is_true(rawequal(t, t:zero_()))
    assert.are.same({ { 0, 0, 0 }, { 0, 0, 0 } }, t:totable())
  end)

  it("fill every dtype", function()
    assert.are.same({ 7, 7 }, wick.zeros(2, { dtype = "int64" }):fill_(7):totable())
    assert.are.same({ 2 ^ 52, 2 ^ 52 }, wick.zeros(2, { dtype = "int64" }):fill_(2 ^ 52):totable())
    assert.are.same({ 0.1 }, wick.zeros(1, { dtype = "float64" }):fill_(0.1):totable())
    assert.are.same({ -2.5 }, wick.zeros(1, { dtype = "float16" }):fill_(-2.5):totable())
    assert.are.same({ true, true }, wick.zeros(2, { dtype = "bool" }):fill_(1):totable())
    assert.are.same({ 255 }, wick.zeros(1, { dtype = "uint8" }):fill_(255):totable())
    assert_close(wick.zeros(1):fill_(NaN), { NaN })
    assert.are.same({ math.huge }, wick.zeros(1):fill_(math.huge):totable())
  end)

  it("fill only the view", function()
    local t = wick.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })
    t:t()[3]:fill_(0)
    assert.are.same({ { 1, 2, 0 }, { 4, 5, 0 } }, t:totable())
    t[1]:zero_()
    assert.are.same({ { 0, 0, 0 }, { 4, 5, 0 } }, t:totable())
  end)

  it("fill_ raises for a non-number", function()
    assert_error_has(function() wick.zeros(2):fill_("x") end, "fill_", "number")
  end)
end)

describe("clone", function()
  it("copies into independent storage", function()
    local t = wick.tensor({ { 1, 2 }, { 3, 4 } })
    local c = t:clone()
    assert.is_false(c:is_same_storage(t))
    assert.are.same(t:totable(), c:totable())
    c[1][1] = 100
    assert.are.equal(1, t[1][1]:item())
    t[2][2] = -1
    assert.are.equal(4, c[2][2]:item())
    assert.are.same({ { 100, 2 }, { 3, 4 } }, wick.clone(c):totable())
  end)

  it("keeps dtype and the logical order of views", function()
    for _, dtype in ipairs({ "float64", "int64", "float16", "bool" }) do
      local c = wick.tensor({ 1, 0 }, { dtype = dtype }):clone()
      assert.are.equal(dtype, c.dtype)
    end
    local t = wick.tensor({ { 1, 2 }, { 3, 4 } }):t()
    local c = t:clone()
    assert.are.same({ { 1, 3 }, { 2, 4 } }, c:totable())
    local e = wick.tensor({ 1, 2 }):expand(3, 2):clone()
    e[1][1] = 9
    assert.are.same({ { 9, 2 }, { 1, 2 }, { 1, 2 } }, e:totable())
  end)
end)

describe("item and totable", function()
  it("item reads one-element tensors of every dtype", function()
    assert.are.equal(5, wick.tensor({ { 5 } }):item())
    assert.are.equal(2.5, wick.tensor(2.5):item())
    assert.are.equal(0.1, wick.tensor(0.1, { dtype = "float64" }):item())
    assert.are.equal(2 ^ 53, I({ 2 ^ 53 }):item())
    assert.are.equal(-7, wick.tensor({ -7 }, { dtype = "int32" }):item())
    assert.are.equal(0.333251953125, wick.tensor({ 1 / 3 }, { dtype = "float16" }):item())
    assert.are.equal(true, wick.tensor({ true }):item())
    assert.are.equal(200, wick.tensor({ 200 }, { dtype = "uint8" }):item())
    assert.are.equal(6, wick.tensor({ { 1, 2 }, { 3, 6 } })[2][2]:item())
    assert.are.equal(3, wick.tensor({ { 1, 2 }, { 3, 6 } }):t()[1][2]:item())
  end)

  it("item raises for more than one element and for int64 beyond 2^53", function()
    assert_error_has(function() return wick.tensor({ 1, 2 }):item() end, "2 elements")
    assert_error_has(function() return wick.zeros(0):item() end, "0 elements")
    assert_error_has(function() return I({ 2 ^ 53 }):add(1):item() end, "2^53")
  end)

  it("totable gives nested tables in logical order", function()
    assert.are.same({ { 1, 2 }, { 3, 4 } }, wick.tensor({ { 1, 2 }, { 3, 4 } }):totable())
    assert.are.same({ { 1, 3 }, { 2, 4 } }, wick.tensor({ { 1, 2 }, { 3, 4 } }):t():totable())
    assert.are.same({ 2, 4 }, wick.tensor({ { 1, 2 }, { 3, 4 } }):select(2, 2):totable())
    assert.are.same({ true, false }, wick.tensor({ true, false }):totable())
    assert.are.same({ {}, {} }, wick.zeros(2, 0):totable())
    assert.are.equal(3, wick.tensor(3):totable())
    assert.are.same({ 2 ^ 52 + 1 }, I({ 2 ^ 52 + 1 }):totable())
    assert.are.same({ { { 1 } } }, wick.ones(1, 1, 1, { dtype = "float16" }):totable())
  end)
end)
