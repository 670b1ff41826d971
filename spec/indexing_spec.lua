-- Indexing and joining: index_select, gather, scatter/scatter_, cat, stack,
-- copy_, fill_, zero_, clone, item, totable. Index tensors are 1-based in Lua;
-- out-of-range indices raise clear errors and leave tensors unchanged.
local wick = require("wick")
local support = require("spec.support")
local NaN, I, shape_of = support.NaN, support.I, support.shape_of
local assert_close, assert_error_has = support.assert_close, support.assert_error_has

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

  it("takes exactly one index on a 0-d tensor", function()
    local s = wick.tensor(5)
    assert.are.equal(5, s:index_select(1, I({ 1 })):item())
    local ok, err = pcall(function() return s:index_select(1, I({})) end)
    assert.is_false(ok)
    assert.is_truthy(tostring(err):find("a 0-d tensor takes exactly one index, got 0", 1, true))
    ok = pcall(function() return s:index_add_(1, I({}), wick.tensor(1)) end)
    assert.is_false(ok)
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
    -- (parenthesised, so not a tail call: the error's position is this line)
    local err = assert_error_has(function() return (wick.stack({ a, wick.tensor({ 3, 4, 5 }) })) end,
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
    if not math.type then -- LuaJIT's numbers are doubles (Lua 5.4 gives the exact integer)
      assert_error_has(function() return I({ 2 ^ 53 }):add(1):item() end, "2^53")
    end
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

describe("wick.newaxis (Python's None in a key)", function()
  local N = wick.newaxis
  it("inserts a size-1 dim where it stands, counting the dims before it and '...'", function()
    local e = wick.arange(8):reshape(4, 2)
    assert.are.same({ 4, 2, 1, 1 }, e[{ {}, {}, N, N }]:size()) -- emb[:, :, None, None]
    assert.are.same({ 1, 4, 2 }, e[{ N }]:size())
    assert.are.same({ 1, 2 }, e[{ 1, N }]:size())
    assert.are.same({ 4, 2, 1 }, e[{ "...", N }]:size())
    assert.are.same({ 1, 4, 2, 1 }, e[{ N, "...", N }]:size())
    assert.are.same({ { { 2, 3 } }, { { 4, 5 } } }, e[{ { 2, 3 }, N }]:totable())
    -- broadcasting an outer sum, a[:, None] + a[None, :]
    local a = wick.arange(3)
    assert.are.same({ { 0, 1, 2 }, { 1, 2, 3 }, { 2, 3, 4 } }, (a[{ {}, N }] + a[{ N, {} }]):totable())
    assert.are.same({ 1, 2, 2 }, wick.arange(6):reshape(2, 3)[{ N, {}, wick.tensor({ 1, 3 }, { dtype = "int64" }) }]:size())
  end)

  it("is a view that writes and differentiates", function()
    local x = wick.zeros(2, 3)
    x[{ N, {}, 2 }] = 5
    assert.are.same({ { 0, 5, 0 }, { 0, 5, 0 } }, x:totable())
    local v = x[{ {}, N }]
    v:fill_(1)
    assert.are.equal(6, x:sum():item())
    local a = wick.randn(3, 2):requires_grad_()
    local y = a[{ {}, N }] * 2
    y:sum():backward()
    assert.are.same({ { 2, 2 }, { 2, 2 }, { 2, 2 } }, a.grad:totable())
    support.assert_error_has(function() return x[{ N, 1, 1, 1 }] end, "too many indices")
  end)
end)

describe("index tensors apart in a key (p[i0, :, i1])", function()
  it("puts their broadcast dims first, as PyTorch and NumPy (YOLOv8's get_box_metrics)", function()
    local p = wick.arange(30):view(2, 5, 3)
    local i0 = wick.tensor({ { 1, 1 }, { 2, 2 } }, { dtype = "int64" })
    local i1 = wick.tensor({ { 1, 3 }, { 2, 1 } }, { dtype = "int64" })
    assert.are.same({ { { 0, 3, 6, 9, 12 }, { 2, 5, 8, 11, 14 } }, { { 16, 19, 22, 25, 28 }, { 15, 18, 21, 24, 27 } } },
      p[{ i0, {}, i1 }]:totable()) -- PyTorch's values
    assert.are.same({ 2, 2, 2 }, p[{ i0, { 2, 3 }, i1 }]:size())
    assert.are.same({ 2, 2 }, p[{ i0, 2, i1 }]:size())
    local q = wick.zeros(2, 5, 3)
    q[{ i0[1], {}, i1[1] }] = 1 -- rows (1, 1) and (1, 3)
    assert.are.same({ 5, 0, 5 }, q[1]:sum(1):totable())
    assert.are.equal(10, q:sum():item())
  end)
end)

describe("a mask of several dims followed by {} entries", function()
  it("x[{mask2d, {}}] is x[{mask2d}] (spline flows), for reads and writes", function()
    local x = wick.arange(24):view(2, 3, 4)
    local m = x[{ {}, {}, 1 }]:gt(5)
    assert.are.same(x[{ m }]:totable(), x[{ m, {} }]:totable())
    local y = x:clone()
    y[{ m, {} }] = 0
    assert.are.equal(28, y:sum():item())
    support.assert_error_has(function() return x[{ m, 1 }] end, "must be the key's last entry")
  end)
end)

describe("scatter under autograd, scatter_reduce, index_reduce", function()
  local F64 = { dtype = "float64" }
  local function seq(shape, k) return support.seq(shape, k, 23, 11, 4) end -- deterministic distinct values
  local idx = wick.tensor({ { 1, 3, 1 }, { 2, 3, 3 }, { 1, 1, 2 }, { 3, 2, 1 } }, { dtype = "int64" })

  -- position (i, j) of t gets the values src[r][j] with idx[r][j] == i, by a loop
  local function reduce_loops(t, src, reduce, include_self)
    local T, S, X = t:totable(), src:totable(), idx:totable()
    local got = {}
    for r = 1, #X do
      for j = 1, #X[r] do
        local i = X[r][j]
        got[i] = got[i] or {}
        got[i][j] = got[i][j] or {}
        table.insert(got[i][j], S[r][j])
      end
    end
    for i = 1, #T do
      for j = 1, #T[i] do
        local vals = got[i] and got[i][j]
        if vals then
          if include_self then table.insert(vals, T[i][j]) end
          local acc = vals[1]
          for k = 2, #vals do
            local v = vals[k]
            if reduce == "sum" or reduce == "mean" then acc = acc + v
            elseif reduce == "prod" then acc = acc * v
            elseif reduce == "amax" then acc = math.max(acc, v)
            else acc = math.min(acc, v) end
          end
          T[i][j] = reduce == "mean" and acc / #vals or acc
        end
      end
    end
    return T
  end

  it("scatter_reduce combines as its definition, with or without self", function()
    local t, src = seq({ 3, 3 }, 5), seq({ 4, 3 }, 7)
    for _, reduce in ipairs({ "sum", "prod", "mean", "amax", "amin" }) do
      for _, inc in ipairs({ true, false }) do
        assert_close(t:scatter_reduce(1, idx, src, reduce, { include_self = inc }), reduce_loops(t, src, reduce, inc), 1e-12)
      end
    end
    local r = t:clone()
    r:scatter_reduce_(1, idx, src, "amax")
    assert_close(r, reduce_loops(t, src, "amax", true), 0)
    assert_close(wick.scatter_reduce(t, 1, idx, src, "sum"), reduce_loops(t, src, "sum", true), 1e-12)
    -- index_reduce: slices by a 1-D index
    local ir = t:index_reduce(1, wick.tensor({ 3, 1, 3 }, { dtype = "int64" }), seq({ 3, 3 }, 11), "amin", { include_self = false })
    local s = seq({ 3, 3 }, 11)
    assert_close(ir[1], s[2]:totable(), 0)
    assert_close(ir[2], t[2]:totable(), 0)
    assert_close(ir[3], wick.minimum(s[1], s[3]):totable(), 0)
    assert_error_has(function() t:scatter_reduce(1, idx, src, "max") end, "reduce")
  end)

  it("has PyTorch's gradients: sums and means by gradcheck, ties of amax split evenly", function()
    for _, reduce in ipairs({ "sum", "mean", "amax", "amin" }) do
      for _, inc in ipairs({ true, false }) do
        -- (no value of t equals one sent to it: PyTorch's count of ties has t's element even when not included)
        support.gradcheck(function(a, b) return a:scatter_reduce(1, idx, b, reduce, { include_self = inc }) end,
          { seq({ 3, 3 }, 5) + 0.125, seq({ 4, 3 }, 7) })
      end
    end
    -- a tie of two sent values and the position's own: each gets a third
    local t = wick.tensor({ { 5, 0 } }, F64):requires_grad_(true)
    local src = wick.tensor({ { 5, 1 }, { 5, 2 } }, F64):requires_grad_(true)
    local out = t:scatter_reduce(1, wick.ones(2, 2, { dtype = "int64" }), src, "amax")
    assert_close(out, { { 5, 2 } }, 0)
    out:sum():backward()
    assert_close(t.grad, { { 1 / 3, 0 } }, 1e-15)
    assert_close(src.grad, { { 1 / 3, 0 }, { 1 / 3, 1 } }, 1e-15)
    assert_error_has(function() t:scatter_reduce(1, wick.ones(2, 2, { dtype = "int64" }), src, "prod") end, "prod")
  end)

  it("scatter is differentiable in self (zero where written) and src (gathered)", function()
    local i2 = wick.tensor({ { 1, 3, 2 }, { 2, 1, 3 } }, { dtype = "int64" })
    support.gradcheck(function(a, b) return a:scatter(1, i2, b) end, { seq({ 3, 3 }, 5), seq({ 2, 3 }, 7) })
    support.gradcheck(function(a) return a:scatter(1, i2, 2.5) end, { seq({ 3, 3 }, 5) })
    local a = seq({ 3, 3 }, 5):requires_grad_(true) * 1
    a:scatter_(1, i2, 0)
    assert.are.equal(0, a[1][1]:item())
    assert.is_truthy(a.grad_fn)
  end)

  it("index_add_ and scatter_add_ write a tracked source into a fresh tensor, as PyTorch", function()
    local src = seq({ 4, 2 }, 3):requires_grad_(true)
    local i1 = wick.tensor({ 1, 3, 1, 2 }, { dtype = "int64" })
    local agg = wick.zeros(3, 2, F64):index_add_(1, i1, src)
    assert_close(agg[1], (src[1] + src[3]):totable(), 1e-15)
    agg:sum():backward()
    assert_close(src.grad, wick.ones(4, 2, F64):totable(), 0)
    local sa = wick.zeros(3, 2, F64):scatter_add_(1, i1:view(4, 1):expand(4, 2), src)
    assert_close(sa, agg:totable(), 0)
  end)
end)

describe("index_put's accumulate by keyword", function()
  it("adds repeated positions up with {accumulate = true} and names a misspelt option", function()
    local A = wick.zeros(3, 3)
    local r, c = wick.tensor({ 1, 1, 2 }, { dtype = "int64" }), wick.tensor({ 2, 2, 3 }, { dtype = "int64" })
    local out = A:index_put({ r, c }, wick.tensor({ 1, 2, 3 }), { accumulate = true })
    assert.are.same({ { 0, 3, 0 }, { 0, 0, 3 }, { 0, 0, 0 } }, out:totable())
    assert_error_has(function() A:index_put({ r, c }, wick.ones(3), { acumulate = true }) end, "unknown option 'acumulate'")
  end)
end)

describe("a range's ends as 0-dim integer tensors", function()
  it("read and write as the numbers they hold (Whisper's logits[k, begin:last] = -inf)", function()
    local t, e = wick.arange(1, 11), wick.tensor(5, { dtype = "int64" })
    assert.are.same({ 2, 3, 4, 5 }, t[{ { 2, e } }]:totable())
    assert.are.same({ 5, 6 }, t[{ { e, wick.tensor(6, { dtype = "int32" }) } }]:totable())
    local logits = wick.zeros(2, 6)
    logits[{ 1, { 3, wick.tensor(4, { dtype = "int64" }) } }] = -math.huge
    assert.are.same({ { 0, 0, -math.huge, -math.huge, 0, 0 }, { 0, 0, 0, 0, 0, 0 } }, logits:totable())
    assert_error_has(function() return t[{ { 2, wick.tensor(2.5) } }] end, "a range's ends are integers or one-element integer tensors, got a float32 tensor")
    -- a one-element 1-D integer tensor too (minGRU's randint(0, n, (1,)) as a slice start), as PyTorch's __index__
    assert.are.same({ 2, 3 }, t[{ { 2, wick.tensor({ 3 }, { dtype = "int64" }) } }]:totable())
    assert_error_has(function() return t[{ { 2, wick.tensor({ 3, 4 }, { dtype = "int64" }) } }] end, "of 1 dims")
  end)
end)
