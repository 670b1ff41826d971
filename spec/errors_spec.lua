-- Every error starts with the position of the user's Lua line ("file:line: "),
-- whether it is raised by the C binding or by wick's own Lua files.
local wick = require("wick")

local SRC = debug.getinfo(1, "S").short_src

-- Runs fn under pcall. fn sets `expect.line` to the line of the call that must
-- fail (use `here() + 1` on the line before it). Returns the message and that line.
local expect = {}
local function here() return debug.getinfo(2, "l").currentline end

local function assert_raised_at(fn, piece)
  expect.line = nil
  local ok, err = pcall(fn)
  assert.is_false(ok, "expected an error, but the call succeeded")
  assert.are.equal("string", type(err))
  assert.is_number(expect.line, "the test did not record the expected line")
  local prefix = ("%s:%d: "):format(SRC, expect.line)
  assert.are.equal(prefix, err:sub(1, #prefix), ("error %q does not start with %q"):format(err, prefix))
  if piece then
    assert.is_truthy(err:find(piece, 1, true), ("expected %q to contain %q"):format(err, piece))
  end
  -- the position appears once, not doubled by a re-raise
  assert.is_falsy(err:sub(#prefix + 1):find(SRC .. ":", 1, true), "position repeated in " .. err)
  -- and never names wick's own files
  assert.is_falsy(err:find("init.lua", 1, true), "names init.lua: " .. err)
  assert.is_falsy(err:find("print.lua", 1, true), "names print.lua: " .. err)
  return err
end

describe("errors raised by the C binding", function()
  local a, b = wick.ones(2, 3), wick.ones(2, 3)

  it("mm with shapes that do not fit", function()
    assert_raised_at(function()
      expect.line = here() + 1
      local r = a:mm(b)
      return r
    end, "2x3 and 2x3")
  end)

  it("the expected line can be computed with debug.getinfo inside the function", function()
    local line
    local ok, err = pcall(function()
      line = debug.getinfo(1, "l").currentline; local r = a:mm(b)
      return r
    end)
    assert.is_false(ok)
    assert.is_number(line)
    local prefix = SRC .. ":" .. line .. ":"
    assert.are.equal(prefix, err:sub(1, #prefix))
  end)

  it("a one-line tail call names the line of the call", function()
    local line = debug.getinfo(1, "l").currentline; local ok, err = pcall(function() return a:mm(b) end)
    assert.is_false(ok)
    local prefix = SRC .. ":" .. line .. ":"
    assert.are.equal(prefix, err:sub(1, #prefix))
  end)

  it("broadcasting size mismatch through a Lua operator", function()
    assert_raised_at(function()
      expect.line = here() + 1
      local r = a + wick.ones(4)
      return r
    end, "[2, 3] vs [4]")
  end)

  it("the same-device rule", function()
    assert_raised_at(function()
      local m = wick.ones(3, 2, { device = "meta" })
      expect.line = here() + 1
      local r = a:mm(m)
      return r
    end, "Expected all tensors to be on the same device")
  end)

  it("a dtype cast in place", function()
    assert_raised_at(function()
      local i = wick.ones(2, { dtype = "int64" })
      expect.line = here() + 1
      i:add_(0.5)
    end, "can't be cast")
  end)

  it("bad sizes and ragged tables", function()
    assert_raised_at(function()
      expect.line = here() + 1
      local r = wick.zeros(2, -1)
      return r
    end, "negative")
    assert_raised_at(function()
      expect.line = here() + 1
      local r = wick.tensor({ { 1, 2 }, { 3 } })
      return r
    end, "ragged")
  end)

  it("out of memory", function()
    assert_raised_at(function()
      expect.line = here() + 1
      local r = wick.empty(1e15, 1e15)
      return r
    end, "out of memory")
  end)

  it("item() of a tensor with several elements and of an int64 beyond 2^53", function()
    assert_raised_at(function()
      expect.line = here() + 1
      local v = a:item()
      return v
    end, "6 elements")
    if math.type then return end -- Lua 5.3+: item() gives the exact integer (creation_spec)
    assert_raised_at(function()
      local big = wick.tensor(2 ^ 60, { dtype = "int64" })
      expect.line = here() + 1
      local v = big:item()
      return v
    end, "2^53")
  end)

  it("indexing out of range", function()
    assert_raised_at(function()
      expect.line = here() + 1
      local r = a[3]
      return r
    end, "out of bounds")
    assert_raised_at(function()
      expect.line = here() + 1
      a[0] = 1
    end, "index 0")
  end)

  it("a method called with a non-tensor self", function()
    assert_raised_at(function()
      expect.line = here() + 1
      local r = wick.Tensor.exp(5)
      return r
    end, "expected a tensor")
  end)

  it("module-level functions that wrap methods", function()
    assert_raised_at(function()
      expect.line = here() + 1
      local r = wick.add(a, wick.ones(5))
      return r
    end, "vs")
    assert_raised_at(function()
      expect.line = here() + 1
      local r = wick.mm(a, b)
      return r
    end, "2x3 and 2x3")
  end)

  it("errors inside nested user functions name the innermost user line", function()
    local function inner()
      expect.line = here() + 1
      local r = a:mm(b)
      return r
    end
    local function outer()
      local r = inner()
      return r
    end
    assert_raised_at(function()
      local r = outer()
      return r
    end)
  end)

  it("errors inside callbacks called by busted-like frameworks keep the user's line", function()
    local function run(f) local ok, err = pcall(f); return ok, err end
    local ok, err = run(function()
      expect.line = here() + 1
      local r = wick.device("gpu")
      return r
    end)
    assert.is_false(ok)
    local prefix = ("%s:%d: "):format(SRC, expect.line)
    assert.are.equal(prefix, err:sub(1, #prefix))
  end)
end)

describe("errors raised through wick's own Lua code", function()
  local t = wick.ones(2, 3)

  it("wick.device('gpu')", function()
    assert_raised_at(function()
      expect.line = here() + 1
      local d = wick.device("gpu")
      return d
    end, "'gpu'")
  end)

  it("wick.device with a bad index", function()
    assert_raised_at(function()
      expect.line = here() + 1
      local d = wick.device("cuda", -1)
      return d
    end, "accepted forms")
  end)

  it("t:cuda() (written in init.lua) when CUDA is unavailable", function()
    if wick.cuda.is_available() then pending("needs a machine without CUDA") end
    assert_raised_at(function()
      expect.line = here() + 1
      local g = t:cuda()
      return g
    end, "cuda")
    assert_raised_at(function()
      expect.line = here() + 1
      local g = t:cuda(1)
      return g
    end, "cuda:1")
  end)

  it("t:to('gpu')", function()
    assert_raised_at(function()
      expect.line = here() + 1
      local g = t:to("gpu")
      return g
    end, "'gpu'")
  end)

  it("setting a read-only tensor field", function()
    assert_raised_at(function()
      expect.line = here() + 1
      t.shape = 1
    end, "shape")
  end)

  it("changing a device object", function()
    assert_raised_at(function()
      local d = wick.device("cpu")
      expect.line = here() + 1
      d.type = "cuda"
    end, "read-only")
  end)

  it("wick.cuda.set_device with an ordinal that does not exist", function()
    assert_raised_at(function()
      expect.line = here() + 1
      wick.cuda.set_device(wick.cuda.device_count() + 3)
    end, "device_count")
  end)

  it("Lua-side methods that call into C: allclose, equal, view_as", function()
    assert_raised_at(function()
      expect.line = here() + 1
      local r = t:allclose(wick.ones(4))
      return r
    end, "vs")
    assert_raised_at(function()
      expect.line = here() + 1
      local r = t:view_as(wick.ones(7))
      return r
    end)
  end)

  it("wick.to_device with a bad device", function()
    assert_raised_at(function()
      expect.line = here() + 1
      local r = wick.to_device({ x = t, y = { t } }, "gpu")
      return r
    end, "'gpu'")
  end)

  it("conversion helpers like t:long() on meta tensors still name the user", function()
    local m = wick.ones(1, { device = "meta" })
    assert_raised_at(function()
      expect.line = here() + 1
      local r = m:long():item()
      return r
    end, "meta")
  end)
end)

describe("error values", function()
  it("are strings that scripts can match, e.g. 'out of memory'", function()
    local ok, err = pcall(wick.zeros, 1e9, 1e9)
    assert.is_false(ok)
    assert.are.equal("string", type(err))
    assert.is_truthy(err:find("out of memory", 1, true))
  end)

  it("leave wick usable afterwards", function()
    for _ = 1, 50 do pcall(function() return wick.ones(2) + wick.ones(3) end) end
    assert.are.same({ 2, 2 }, (wick.ones(2) + wick.ones(2)):totable())
  end)
end)

describe("argument checks of wick's Lua functions (wick.argcheck)", function()
  local nn, F = wick.nn, wick.nn.functional
  local t = wick.ones(2, 3)

  it("a constructor given a string for a size names the class and the argument, like PyTorch", function()
    assert_raised_at(function()
      expect.line = here() + 1
      local m = nn.Linear("3", 2)
      return m
    end, "Linear: expected an integer for argument 'in_features', got string")
    assert_raised_at(function()
      expect.line = here() + 1
      local m = nn.Embedding(4, -1)
      return m
    end, "Embedding: argument 'embedding_dim' must be a non-negative integer, got -1")
  end)

  it("a Lua-written tensor method given a non-tensor", function()
    assert_raised_at(function()
      expect.line = here() + 1
      local r = t:equal(1)
      return r
    end, "equal: expected a tensor for argument 'other', got 1")
    assert_raised_at(function()
      expect.line = here() + 1
      local r = wick.Tensor.float(5)
      return r
    end, "float: expected a tensor for argument 'self', got 5")
  end)

  it("wick.no_grad given something that is not a function", function()
    assert_raised_at(function()
      expect.line = here() + 1
      local r = wick.no_grad(0)
      return r
    end, "no_grad: expected a function for argument 'fn', got 0")
  end)

  it("an unknown or ill-typed option is named", function()
    assert_raised_at(function()
      expect.line = here() + 1
      local m = nn.Linear(3, 2, { bais = false })
      return m
    end, "Linear: unknown option 'bais' (expected bias, device, dtype)")
    assert_raised_at(function()
      expect.line = here() + 1
      local o = wick.optim.SGD(nn.Linear(3, 2):parameters(), { lr = "0.1" })
      return o
    end, "SGD: expected a number or a tensor for option 'lr', got '0.1'")
    assert_raised_at(function()
      expect.line = here() + 1
      local l = F.mse_loss(t, t, { reduction = "avg" })
      return l
    end, "mse_loss: invalid value 'avg' for argument 'reduction' (expected 'mean', 'sum', 'none')")
  end)

  it("a loss or a layer given a number instead of a tensor", function()
    assert_raised_at(function()
      expect.line = here() + 1
      local l = F.cross_entropy(1, wick.tensor({ 1 }, { dtype = "int64" }))
      return l
    end, "cross_entropy: expected a tensor for argument 'input', got 1")
    assert_raised_at(function()
      local relu = nn.ReLU()
      expect.line = here() + 1
      local y = relu(3)
      return y
    end, "ReLU: expected a tensor for argument 'input', got 3")
  end)

  it("a module method called with '.' instead of ':'", function()
    local m = nn.Linear(3, 2)
    assert_raised_at(function()
      expect.line = here() + 1
      local p = m.parameters()
      return p
    end, "Module:parameters: expected a module for argument 'self', got nil")
  end)

  it("data helpers with bad sizes and receivers", function()
    assert_raised_at(function()
      expect.line = here() + 1
      local p = wick.data.randperm(-1)
      return p
    end, "randperm: argument 'n' must be a non-negative integer, got -1")
    assert_raised_at(function()
      expect.line = here() + 1
      local ds = wick.data.TensorDataset(wick.ones(3), 5)
      return ds
    end, "TensorDataset: expected a tensor for argument 'tensor 2', got 5")
  end)

  it("Conv2d takes PyTorch's positional stride and padding, and checks them", function()
    local c = nn.Conv2d(1, 2, 3, 2, 1)
    assert.are.same({ 2, 2 }, c.stride) -- PyTorch's tuples
    assert.are.same({ 1, 1 }, c.padding)
    assert.are.same({ 1, 2, 3, 3 }, c(wick.ones(1, 1, 5, 5)):size())
    assert_raised_at(function()
      expect.line = here() + 1
      local m = nn.Conv2d(1, 2, 3, { stride = true })
      return m
    end, "Conv2d: expected an integer or a table for option 'stride', got boolean")
  end)
  it("number and string arguments of the binding name the function and the argument (Lua 5.4 too)", function()
    local t = wick.ones(3)
    assert_raised_at(function()
      expect.line = here() + 1
      local r = t:clamp("low")
      return r
    end, "clamp: expected a number for argument 'min', got string")
    assert_raised_at(function()
      expect.line = here() + 1
      local r = wick.clamp(t, 0, "x")
      return r
    end, "clamp: expected a number for argument 'max', got ")
    assert_raised_at(function()
      expect.line = here() + 1
      local r = wick.cuda.sync_count("x")
      return r
    end, "wick.cuda.sync_count: expected a device index or a CUDA device for argument 'device', got string")
    assert_raised_at(function()
      expect.line = here() + 1
      local r = wick.manual_seed({})
      return r
    end, "wick.manual_seed: expected a number for argument 'seed', got table")
    assert_raised_at(function()
      expect.line = here() + 1
      local r = t:addmm(wick.ones(3, 2), wick.ones(2, 3), { alpha = "x" })
      return r
    end, "addmm: expected a number for option 'alpha', got string")
  end)
end)

describe("a name wick does not have", function()
  it("is an error at the caller's line naming it, not a nil called later", function()
    local ok, err = pcall(function() return wick.as_tensorr({ 1 }) end)
    assert.is_false(ok)
    assert.is_truthy(tostring(err):find("wick has no 'as_tensorr'", 1, true))
    assert.is_truthy(tostring(err):find("errors_spec.lua", 1, true))
    assert.is_nil(rawget(wick, "as_tensorr"))
    assert.is_nil(wick._no_such_internal)
  end)
end)

describe("a name the namespaces do not have", function()
  it("is an error naming the namespace and the name", function()
    for _, case in ipairs({ { function() return wick.optim.SparseAdam end, "wick.optim has no 'SparseAdam'" },
      { function() return wick.optim.lr_scheduler.Nope end, "wick.optim.lr_scheduler has no 'Nope'" },
      { function() return wick.distributions.Hypergeometric end, "wick.distributions has no 'Hypergeometric'" },
      { function() return wick.nn.utils.nope end, "wick.nn.utils has no 'nope'" } }) do
      local ok, err = pcall(case[1])
      assert.is_false(ok)
      assert.is_truthy(tostring(err):find(case[2], 1, true), tostring(err))
    end
  end)
end)
