-- Views: view, reshape, transpose, t, permute, narrow, select, squeeze,
-- unsqueeze, expand, flatten, contiguous, t[i] indexing and assignment, and the
-- metadata (shape, size, stride, dim, numel, #t). Views share storage with their
-- base: writes through one are seen through the other.
local wick = require("wick")
local support = require("spec.support")
local shape_of, assert_error_has = support.shape_of, support.assert_error_has

-- 3x4 float32 holding 1..12 row by row
local function m34(opts)
  return wick.tensor({ { 1, 2, 3, 4 }, { 5, 6, 7, 8 }, { 9, 10, 11, 12 } }, opts)
end

-- 2x3x4 holding 1..24
local function t234(opts)
  local v, n = {}, 0
  for i = 1, 2 do
    v[i] = {}
    for j = 1, 3 do
      v[i][j] = {}
      for k = 1, 4 do n = n + 1; v[i][j][k] = n end
    end
  end
  return wick.tensor(v, opts), v
end

describe("view", function()
  it("reshapes a contiguous tensor without copying", function()
    local t = m34()
    local v = t:view(2, 6)
    assert.are.same({ 2, 6 }, shape_of(v))
    assert.are.same({ { 1, 2, 3, 4, 5, 6 }, { 7, 8, 9, 10, 11, 12 } }, v:totable())
    assert.is_true(v:is_same_storage(t))
    assert.are.same({ 6, 1 }, v:stride())
    assert.are.same({ 4, 3 }, shape_of(t:view({ 4, 3 })))
    assert.are.same({ 12 }, shape_of(t:view(12)))
    assert.are.same({ 1, 12, 1 }, shape_of(t:view(1, 12, 1)))
  end)

  it("infers one -1 dimension", function()
    local t = m34()
    assert.are.same({ 2, 6 }, shape_of(t:view(-1, 6)))
    assert.are.same({ 6, 2 }, shape_of(t:view(6, -1)))
    assert.are.same({ 2, 2, 3 }, shape_of(t:view(2, -1, 3)))
    assert.are.same({ 12 }, shape_of(t:view(-1)))
    assert.are.same({ 3, 4 }, shape_of(t:view({ -1, 4 })))
  end)

  it("raises for impossible shapes", function()
    local t = m34()
    assert_error_has(function() return t:view(5, -1) end, "view", "12")
    assert_error_has(function() return t:view(5, 3) end, "view", "[5, 3]", "12")
    assert_error_has(function() return t:view(-1, -1) end, "view", "only one dimension can be inferred")
  end)

  it("of a transposed tensor raises and mentions reshape", function()
    local t = m34()
    -- (parenthesised, so not a tail call: the error's position is this line)
    local err = assert_error_has(function() return (t:t():view(12)) end, "view", "reshape")
    assert.is_truthy(err:find("views_spec.lua:", 1, true))
    assert_error_has(function() return t:t():view(2, 6) end, "reshape")
  end)

  it("writes through to the base", function()
    local t = m34()
    local v = t:view(12)
    v[5] = 100
    assert.are.equal(100, t[2][1]:item())
    t[3][4] = -1
    assert.are.equal(-1, v[12]:item())
  end)

  it("is allowed on non-contiguous tensors when the layout permits", function()
    local _, raw = t234()
    local t = t234():transpose(1, 2) -- 3x2x4: the last dim stays contiguous
    local v = t:view(3, 2, 2, 2)
    assert.is_true(v:is_same_storage(t))
    assert.are.equal(raw[2][3][3], v[3][2][2][1]:item())
    -- a narrowed dim can be split
    local n = m34():narrow(2, 1, 4):narrow(1, 2, 2) -- rows 2..3, contiguous
    assert.are.same({ { 5, 6 }, { 7, 8 }, { 9, 10 }, { 11, 12 } }, n:view(4, 2):totable())
    -- an expanded dim can get a 1 inserted next to it
    local e = wick.tensor({ 1, 2 }):expand(3, 2)
    assert.are.same({ 3, 1, 2 }, shape_of(e:view(3, 1, 2)))
  end)

  it("works on int64, float64 and float16 and keeps the dtype", function()
    for _, dtype in ipairs({ "int64", "float64", "float16" }) do
      local v = m34({ dtype = dtype }):view(6, 2)
      assert.are.equal(dtype, v.dtype)
      assert.are.same({ 11, 12 }, v[6]:totable())
    end
  end)

  it("view_as takes the other's shape", function()
    assert.are.same({ 2, 6 }, shape_of(m34():view_as(wick.zeros(2, 6))))
  end)
end)

describe("reshape", function()
  it("returns a view when possible", function()
    local t = m34()
    local r = t:reshape(6, 2)
    assert.is_true(r:is_same_storage(t))
    assert.are.same({ { 1, 2 }, { 3, 4 }, { 5, 6 }, { 7, 8 }, { 9, 10 }, { 11, 12 } }, r:totable())
    assert.are.same({ 2, 6 }, shape_of(t:reshape(2, -1)))
    assert.are.same({ 12 }, shape_of(t:reshape({ 12 })))
  end)

  it("copies only when the layout needs it", function()
    local t = m34()
    local r = t:t():reshape(12)
    assert.is_false(r:is_same_storage(t))
    assert.are.same({ 1, 5, 9, 2, 6, 10, 3, 7, 11, 4, 8, 12 }, r:totable())
    -- the copy is independent
    r[1] = 99
    assert.are.equal(1, t[1][1]:item())
    -- a transposed tensor reshaped to its own shape needs no copy
    local same = t:t():reshape(4, 3)
    assert.is_true(same:is_same_storage(t))
    -- expanded: copies
    local e = wick.tensor({ 1, 2 }):expand(2, 2)
    local er = e:reshape(4)
    assert.are.same({ 1, 2, 1, 2 }, er:totable())
    er[1] = 7
    assert.are.same({ 1, 2 }, e[1]:totable())
  end)

  it("raises for impossible shapes", function()
    assert_error_has(function() return m34():reshape(5, -1) end, "reshape", "12")
  end)

  it("reshape_as takes the other's shape", function()
    assert.are.same({ 4, 3 }, shape_of(m34():reshape_as(wick.zeros(4, 3))))
  end)
end)

describe("transpose and t", function()
  it("swap dims as a view", function()
    local t = m34()
    local tt = t:transpose(1, 2)
    assert.are.same({ 4, 3 }, shape_of(tt))
    assert.are.same({ 1, 4 }, tt:stride())
    assert.are.same({ { 1, 5, 9 }, { 2, 6, 10 }, { 3, 7, 11 }, { 4, 8, 12 } }, tt:totable())
    assert.is_true(tt:is_same_storage(t))
    assert.is_false(tt:is_contiguous())
    assert.are.same(tt:totable(), t:transpose(-1, -2):totable())
    assert.are.same(tt:totable(), t:t():totable())
    assert.are.same(tt:totable(), wick.transpose(t, 2, 1):totable())
  end)

  it("write through to the base", function()
    local t = m34()
    t:t()[2][3] = 50 -- element (3, 2) of t
    assert.are.equal(50, t[3][2]:item())
  end)

  it("transpose of a 3-D tensor", function()
    local t, raw = t234()
    local x = t:transpose(1, 3) -- 4x3x2
    assert.are.same({ 4, 3, 2 }, shape_of(x))
    assert.are.same({ 1, 4, 12 }, x:stride())
    for i = 1, 4 do for j = 1, 3 do for k = 1, 2 do
      assert.are.equal(raw[k][j][i], x[i][j][k]:item())
    end end end
  end)

  it("t() of 1-D and 0-D returns the same values", function()
    assert.are.same({ 1, 2, 3 }, wick.tensor({ 1, 2, 3 }):t():totable())
    assert.are.equal(4, wick.tensor(4):t():item())
  end)

  it("raise for bad dims", function()
    assert_error_has(function() return m34():transpose(1, 3) end, "transpose", "dimension 3")
    assert_error_has(function() return m34():transpose(0, 1) end, "transpose", "dimension 0")
    assert_error_has(function() return t234():t() end, "t", "3-D")
  end)
end)

describe("permute", function()
  it("reorders dims as a view", function()
    local t, raw = t234()
    local p = t:permute(3, 1, 2) -- 4x2x3
    assert.are.same({ 4, 2, 3 }, shape_of(p))
    assert.are.same({ 1, 12, 4 }, p:stride())
    assert.is_true(p:is_same_storage(t))
    for i = 1, 4 do for j = 1, 2 do for k = 1, 3 do
      assert.are.equal(raw[j][k][i], p[i][j][k]:item())
    end end end
    assert.are.same(p:totable(), t:permute({ 3, 1, 2 }):totable())
    assert.are.same(p:totable(), t:permute(-1, -3, -2):totable())
    assert.are.same(t:totable(), t:permute(1, 2, 3):totable())
  end)

  it("T reverses all dims", function()
    local t, raw = t234()
    local r = t.T
    assert.are.same({ 4, 3, 2 }, shape_of(r))
    assert.are.equal(raw[2][1][3], r[3][1][2]:item())
  end)

  it("raises for a wrong count, repeats and bad dims", function()
    local t = t234()
    assert_error_has(function() return t:permute(1, 2) end, "permute", "3", "2")
    assert_error_has(function() return t:permute(1, 1, 2) end, "permute", "repeated")
    assert_error_has(function() return t:permute(1, 2, 4) end, "permute", "dimension 4")
  end)
end)

describe("narrow", function()
  it("takes a 1-based slice as a view", function()
    local t = m34()
    local n = t:narrow(2, 2, 2)
    assert.are.same({ { 2, 3 }, { 6, 7 }, { 10, 11 } }, n:totable())
    assert.are.same({ 4, 1 }, n:stride())
    assert.are.equal(1, n:storage_offset())
    assert.is_true(n:is_same_storage(t))
    assert.are.same({ { 5, 6, 7, 8 }, { 9, 10, 11, 12 } }, t:narrow(1, 2, 2):totable())
    assert.are.same({ { 4 }, { 8 }, { 12 } }, t:narrow(-1, 4, 1):totable())
    assert.are.same({ { 3, 4 }, { 7, 8 }, { 11, 12 } }, t:narrow(2, -2, 2):totable())
    assert.are.same({ 3, 0 }, shape_of(t:narrow(2, 4, 0)))
  end)

  it("writes through and narrows views of views", function()
    local t = m34()
    local n = t:t():narrow(1, 3, 2) -- rows 3..4 of the transpose: columns 3..4 of t
    assert.are.same({ { 3, 7, 11 }, { 4, 8, 12 } }, n:totable())
    n:fill_(0)
    assert.are.same({ { 1, 2, 0, 0 }, { 5, 6, 0, 0 }, { 9, 10, 0, 0 } }, t:totable())
  end)

  it("raises when out of range", function()
    assert_error_has(function() return m34():narrow(2, 4, 2) end, "narrow", "4", "2")
    assert_error_has(function() return m34():narrow(2, 5, 1) end, "narrow", "5")
    assert_error_has(function() return m34():narrow(3, 1, 1) end, "narrow", "dimension 3")
    assert_error_has(function() return m34():narrow(1, 0, 1) end, "narrow", "0")
  end)
end)

describe("select", function()
  it("removes a dim, picking one 1-based index", function()
    local t = m34()
    local r = t:select(1, 2)
    assert.are.same({ 5, 6, 7, 8 }, r:totable())
    assert.are.same({ 4 }, shape_of(r))
    assert.are.same({ 3, 7, 11 }, t:select(2, 3):totable())
    assert.are.same({ 4, 8, 12 }, t:select(2, -1):totable())
    assert.are.same({ 4, 8, 12 }, t:select(-1, 4):totable())
    assert.are.same({ 4 }, t:select(2, 3):stride())
    assert.are.same({ 1 }, t:select(1, 3):stride())
    local e = t:select(1, 1):select(1, 3)
    assert.are.equal(0, e:dim())
    assert.are.equal(3, e:item())
  end)

  it("writes through", function()
    local t = m34()
    t:select(2, 1):fill_(0)
    assert.are.same({ { 0, 2, 3, 4 }, { 0, 6, 7, 8 }, { 0, 10, 11, 12 } }, t:totable())
  end)

  it("raises when out of range, naming the index and size", function()
    assert_error_has(function() return m34():select(2, 5) end, "select", "index 5", "size 4")
    assert_error_has(function() return m34():select(1, -4) end, "select", "-4", "size 3")
    assert_error_has(function() return m34():select(1, 0) end, "select", "index 0")
  end)
end)

describe("squeeze and unsqueeze", function()
  it("squeeze removes every size-1 dim or one given dim", function()
    local t = wick.zeros(1, 3, 1, 2)
    assert.are.same({ 3, 2 }, shape_of(t:squeeze()))
    assert.are.same({ 3, 1, 2 }, shape_of(t:squeeze(1)))
    assert.are.same({ 1, 3, 2 }, shape_of(t:squeeze(3)))
    assert.are.same({ 1, 3, 2 }, shape_of(t:squeeze(-2)))
    -- a dim that is not 1 stays, like PyTorch
    assert.are.same({ 1, 3, 1, 2 }, shape_of(t:squeeze(2)))
    assert.are.equal(0, wick.zeros(1, 1):squeeze():dim())
  end)

  it("squeeze keeps values and shares storage", function()
    local t = wick.tensor({ { { 1 }, { 2 }, { 3 } } })
    local s = t:squeeze()
    assert.are.same({ 1, 2, 3 }, s:totable())
    assert.is_true(s:is_same_storage(t))
    s[2] = 20
    assert.are.equal(20, t[1][2][1]:item())
  end)

  it("squeeze raises for bad dims", function()
    assert_error_has(function() return wick.zeros(1, 3):squeeze(3) end, "squeeze")
  end)

  it("unsqueeze inserts a size-1 dim, with negative dims from the end", function()
    local t = wick.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })
    assert.are.same({ 1, 2, 3 }, shape_of(t:unsqueeze(1)))
    assert.are.same({ 2, 1, 3 }, shape_of(t:unsqueeze(2)))
    assert.are.same({ 2, 3, 1 }, shape_of(t:unsqueeze(3)))
    assert.are.same({ 2, 3, 1 }, shape_of(t:unsqueeze(-1)))
    assert.are.same({ 2, 1, 3 }, shape_of(t:unsqueeze(-2)))
    assert.are.same({ 1, 2, 3 }, shape_of(t:unsqueeze(-3)))
    assert.are.same({ { { 1, 2, 3 } }, { { 4, 5, 6 } } }, t:unsqueeze(2):totable())
    assert.are.same({ { { 1 }, { 2 }, { 3 } }, { { 4 }, { 5 }, { 6 } } }, t:unsqueeze(-1):totable())
    assert.is_true(t:unsqueeze(1):is_same_storage(t))
    assert.are.same({ 1 }, shape_of(wick.tensor(7):unsqueeze(1)))
    -- of a transposed view
    assert.are.same({ { { 1, 4 } }, { { 2, 5 } }, { { 3, 6 } } }, t:t():unsqueeze(2):totable())
  end)

  it("unsqueeze raises for out-of-range dims", function()
    local t = wick.zeros(2, 3)
    assert_error_has(function() return t:unsqueeze(4) end, "unsqueeze", "dimension 4")
    assert_error_has(function() return t:unsqueeze(-4) end, "unsqueeze", "dimension -4")
    assert_error_has(function() return t:unsqueeze(0) end, "unsqueeze", "dimension 0")
  end)
end)

describe("expand", function()
  it("repeats size-1 dims with stride 0, sharing storage", function()
    local c = wick.tensor({ { 1 }, { 2 } })
    local e = c:expand(2, 3)
    assert.are.same({ { 1, 1, 1 }, { 2, 2, 2 } }, e:totable())
    assert.are.same({ 1, 0 }, e:stride())
    assert.is_true(e:is_same_storage(c))
    c[2][1] = 5
    assert.are.same({ 5, 5, 5 }, e[2]:totable())
  end)

  it("adds leading dims and keeps -1 sizes", function()
    local r = wick.tensor({ 1, 2, 3 })
    local e = r:expand(2, -1)
    assert.are.same({ { 1, 2, 3 }, { 1, 2, 3 } }, e:totable())
    assert.are.same({ 0, 1 }, e:stride())
    assert.are.same({ 2, 2, 3 }, shape_of(r:expand({ 2, 2, 3 })))
    assert.are.same({ 4, 1, 3 }, shape_of(r:expand(4, 1, 3)))
    assert.are.same({ 3 }, shape_of(r:expand(3)))
  end)

  it("expand_as takes the other's shape", function()
    local e = wick.tensor({ 1, 2, 3 }):expand_as(wick.zeros(2, 3))
    assert.are.same({ { 1, 2, 3 }, { 1, 2, 3 } }, e:totable())
  end)

  it("of a transposed view", function()
    local t = wick.tensor({ { 1, 2, 3 } }):t() -- 3x1
    assert.are.same({ { 1, 1 }, { 2, 2 }, { 3, 3 } }, t:expand(3, 2):totable())
  end)

  it("raises for sizes that do not fit", function()
    local r = wick.tensor({ 1, 2, 3 })
    assert_error_has(function() return r:expand(2, 2) end, "expand", "2", "3")
    assert_error_has(function() return wick.zeros(2, 3):expand(3) end, "expand")
  end)
end)

describe("flatten", function()
  it("flattens all dims or a range of dims", function()
    local t, raw = t234()
    assert.are.same({ 24 }, shape_of(t:flatten()))
    assert.are.same({ 2, 12 }, shape_of(t:flatten(2)))
    assert.are.same({ 6, 4 }, shape_of(t:flatten(1, 2)))
    assert.are.same({ 2, 12 }, shape_of(t:flatten(2, -1)))
    assert.are.same({ 2, 3, 4 }, shape_of(t:flatten(2, 2)))
    assert.are.same({ 2, 12, 5 }, shape_of(wick.zeros(2, 3, 4, 5):flatten(2, -2)))
    local f = t:flatten()
    for i = 1, 24 do assert.are.equal(i, f[i]:item()) end
    assert.is_true(f:is_same_storage(t))
    assert.are.same({ 1 }, shape_of(wick.tensor(3):flatten()))
    assert.are.equal(raw[2][3][1], t:flatten(1, 2)[6][1]:item())
  end)

  it("copies a non-contiguous tensor into logical order", function()
    local t = m34():t()
    assert.are.same({ 1, 5, 9, 2, 6, 10, 3, 7, 11, 4, 8, 12 }, t:flatten():totable())
  end)

  it("raises when start comes after end", function()
    assert_error_has(function() return t234():flatten(3, 1) end, "flatten")
    assert_error_has(function() return t234():flatten(4) end, "flatten", "dimension 4")
  end)
end)

describe("contiguous", function()
  it("returns the same object when already contiguous", function()
    local t = m34()
    assert.is_true(rawequal(t, t:contiguous()))
    assert.is_true(t:is_contiguous())
  end)

  it("copies a non-contiguous view into a new contiguous tensor", function()
    local t = m34()
    local tt = t:t()
    local c = tt:contiguous()
    assert.is_false(rawequal(tt, c))
    assert.is_true(c:is_contiguous())
    assert.is_false(c:is_same_storage(t))
    assert.are.same({ 3, 1 }, c:stride())
    assert.are.same(tt:totable(), c:totable())
    c[1] = 0
    assert.are.equal(1, t[1][1]:item())
    local e = wick.tensor({ 1, 2 }):expand(2, 2)
    assert.is_false(e:is_contiguous())
    assert.are.same({ { 1, 2 }, { 1, 2 } }, e:contiguous():totable())
    assert.are.same({ 2, 1 }, e:contiguous():stride())
  end)
end)

describe("t[i] indexing", function()
  it("gives views of slices along dim 1", function()
    local t = m34()
    local row = t[2]
    assert.are.same({ 5, 6, 7, 8 }, row:totable())
    assert.is_true(row:is_same_storage(t))
    assert.are.equal(7, t[2][3]:item())
    assert.are.equal(0, t[2][3]:dim())
    assert.are.same({ 9, 10, 11, 12 }, t[-1]:totable())
    assert.are.equal(12, t[-1][-1]:item())
    assert.are.equal(9, t[3][-4]:item())
  end)

  it("writes through views to the base", function()
    local t = wick.zeros(3, 4)
    local row = t[2]
    row[3] = 5
    assert.are.same({ { 0, 0, 0, 0 }, { 0, 0, 5, 0 }, { 0, 0, 0, 0 } }, t:totable())
    t[3][1]:fill_(7)
    assert.are.equal(7, t[3][1]:item())
  end)

  it("assigns numbers and tensors", function()
    local t = m34()
    t[1] = 100
    assert.are.same({ 100, 100, 100, 100 }, t[1]:totable())
    t[2] = wick.tensor({ 9, 8, 7, 6 })
    assert.are.same({ 9, 8, 7, 6 }, t[2]:totable())
    t[3] = wick.tensor({ 1 }) -- broadcast
    assert.are.same({ 1, 1, 1, 1 }, t[3]:totable())
    t[-1] = 4
    assert.are.same({ 4, 4, 4, 4 }, t[3]:totable())
    t[2][2] = -3
    assert.are.equal(-3, t[2][2]:item())
    -- a tensor of another dtype is converted
    t[1] = wick.tensor({ 1, 2, 3, 4 }, { dtype = "int64" })
    assert.are.equal("float32", t.dtype)
    assert.are.same({ 1, 2, 3, 4 }, t[1]:totable())
    -- into an int64 tensor
    local i = wick.zeros(2, 2, { dtype = "int64" })
    i[2] = 7
    assert.are.same({ { 0, 0 }, { 7, 7 } }, i:totable())
  end)

  it("assigns through transposed views", function()
    local t = m34()
    local tt = t:t()
    tt[2] = wick.tensor({ -1, -2, -3 }) -- column 2 of t
    assert.are.same({ { 1, -1, 3, 4 }, { 5, -2, 7, 8 }, { 9, -3, 11, 12 } }, t:totable())
  end)

  it("raises for out-of-range indices, naming the index and size", function()
    local t = m34()
    assert_error_has(function() return t[5] end, "index 5", "size 3")
    assert_error_has(function() return t[-4] end, "-4", "size 3")
    assert_error_has(function() return t[1][5] end, "index 5", "size 4")
    assert_error_has(function() t[4] = 1 end, "index 4", "size 3")
    assert_error_has(function() t[-5] = wick.tensor({ 1, 2, 3, 4 }) end, "-5", "size 3")
    assert.are.same(m34():totable(), t:totable())
  end)

  it("raises for non-integer indices and bad values", function()
    local t = m34()
    assert_error_has(function() return t[1.5] end, "integer", "1.5")
    assert_error_has(function() t[1] = "x" end, "number or a tensor", "string")
    assert.are.same(m34():totable(), t:totable())
  end)

  it("raises for index 0: indices count from 1", function()
    local err = assert_error_has(function() return m34()[0] end, "index 0", "from 1")
    assert.is_truthy(err:find("views_spec.lua:", 1, true))
    assert_error_has(function() local t = m34(); t[0] = 1 end, "index 0")
  end)

  it("raises on a 0-dim tensor and for a shape mismatch", function()
    assert_error_has(function() return wick.tensor(3)[1] end, "0-dim")
    local t = m34()
    local before = t:totable()
    assert_error_has(function() t[1] = wick.tensor({ 1, 2 }) end, "4", "2")
    assert.are.same(before, t:totable())
  end)
end)

describe("metadata", function()
  it("shape, size, stride, dim, numel and #t", function()
    local t = t234()
    assert.are.same({ 2, 3, 4 }, { t.shape[1], t.shape[2], t.shape[3] })
    assert.are.equal(3, #t.shape)
    assert.are.same({ 2, 3, 4 }, t:size())
    assert.are.equal(3, t:size(2))
    assert.are.equal(4, t:size(-1))
    assert.are.same({ 12, 4, 1 }, t:stride())
    assert.are.equal(4, t:stride(2))
    assert.are.equal(1, t:stride(-1))
    assert.are.equal(3, t:dim())
    assert.are.equal(24, t:numel())
    assert.are.equal(2, #t)
    assert.are.equal(4, #t:permute(3, 1, 2))
    assert.are.equal(0, wick.tensor(5):dim())
    assert_error_has(function() return #wick.tensor(5) end, "0-d")
    assert.are.equal(1, wick.tensor(5):numel())
    assert.are.equal(0, wick.zeros(3, 0):numel())
    assert.are.same({ 3, 0 }, wick.zeros(3, 0):size())
  end)

  it("of views", function()
    local t = t234():permute(2, 3, 1)
    assert.are.same({ 3, 4, 2 }, t:size())
    assert.are.same({ 4, 1, 12 }, t:stride())
    assert.are.equal(24, t:numel())
    local n = t234():narrow(3, 2, 2)
    assert.are.same({ 2, 3, 2 }, n:size())
    assert.are.same({ 12, 4, 1 }, n:stride())
    assert.are.equal(1, n:storage_offset())
  end)

  it("size and stride raise for bad dims", function()
    assert_error_has(function() return m34():size(3) end, "size", "3")
    assert_error_has(function() return m34():stride(-3) end, "stride")
  end)

  it("views share storage, copies do not", function()
    local t = m34()
    for _, v in ipairs({ t:view(12), t:t(), t:narrow(1, 2, 1), t[2], t:select(2, 1), t:unsqueeze(1),
      t:permute(2, 1), t:flatten(), t:expand(2, 3, 4), t:squeeze() }) do
      assert.is_true(t:is_same_storage(v))
    end
    assert.is_false(t:is_same_storage(t:clone()))
    assert.is_false(t:is_same_storage(m34()))
  end)
end)

describe("copy_ and scatter_ from a view over the destination's own memory", function()
  it("read the source before writing (x:copy_(x:t()) is the transpose)", function()
    local x = wick.arange(1, 10):view(3, 3)
    local want = x:t():clone()
    x:copy_(x:t())
    assert.are.same(want:totable(), x:totable())
    local y = wick.arange(1, 10):view(3, 3)
    local idx = wick.tensor({ { 3, 2, 1 }, { 1, 3, 2 }, { 2, 1, 3 } }, { dtype = "int64" })
    local expect = wick.arange(1, 10):view(3, 3):clone():scatter_(2, idx, y:t():clone())
    y:scatter_(2, idx, y:t())
    assert.are.same(expect:totable(), y:totable())
  end)
end)

describe("in-place shape changes of a tensor with history", function()
  it("take the view's history (DeepAR's train_batch[t].unsqueeze_(0))", function()
    local mu = wick.randn(4, { requires_grad = true })
    local tb = wick.zeros(3, 4, 2)
    tb[{ 2, {}, 1 }] = mu * 2
    local v = tb[2]
    v:unsqueeze_(1)
    assert.are.same({ 1, 4, 2 }, shape_of(v))
    local s = (v * 3):sum()
    s:backward()
    assert.are.same({ 6, 6, 6, 6 }, mu.grad:totable())
    local y = mu * 1
    y:unsqueeze_(1)
    y:t_()
    assert.are.same({ 4, 1 }, shape_of(y))
    assert_error_has(function() y:set_(wick.zeros(1, 4)) end, "autograd history")
  end)
end)

describe("diagonal", function()
  it("is a view of a contiguous matrix (writes reach it), with its gradient", function()
    local c = wick.zeros(3, 3)
    c:diagonal():fill_(1)
    wick.diagonal(c):add_(5)
    assert.are.equal(18, c:sum():item())
    local a = wick.arange(12):view(3, 4)
    assert.are.same({ 1, 6, 11 }, a:diagonal(1):totable())
    assert.are.same({ 4, 9 }, a:diagonal(-1):totable())
    assert.are.same({ 0, 5, 10 }, a:t():diagonal():totable()) -- (a copy here)
    assert.are.same({ { 0, 5, 10 }, { 12, 17, 22 } }, wick.arange(24):view(2, 3, 4):diagonal(0, 2, 3):totable())
    local x = wick.randn(3, 3, { requires_grad = true })
    x:diagonal():sum():backward()
    assert.are.same(wick.eye(3):totable(), x.grad:totable())
  end)
end)

describe("resize_ and resize_as_", function()
  it("change the shape in place, keeping the first elements (DINO's k-NN buffer)", function()
    local t = wick.arange(6):view(2, 3)
    assert.is_true(rawequal(t, t:resize_(3, 3)))
    assert.are.same({ { 0, 1, 2 }, { 3, 4, 5 }, { 0, 0, 0 } }, t:totable())
    t:resize_as_(wick.ones(2))
    assert.are.same({ 0, 1 }, t:totable())
    assert_error_has(function() wick.ones(2, { requires_grad = true }):resize_(3) end, "require grad")
  end)
end)
