-- Facts stated once (issue 14 item 4): the dtype table the core exports
-- (core.dtype_info, core.dtype_aliases), checked against what tensors of each
-- dtype do; the one is_module test; the op-name tables.
local wick = require("wick")
local check = require("wick.argcheck")
local core = wick._core
local nn = wick.nn

describe("core.dtype_info", function()
  it("has a row for every dtype of core.dtypes, in its order, and nothing else", function()
    local n = 0
    for name, info in pairs(core.dtype_info) do
      n = n + 1
      assert.are.equal(name, info.name)
      assert.are.equal(name, core.dtypes[info.index])
    end
    assert.are.equal(#core.dtypes, n)
    assert.are.equal(10, n)
  end)

  it("states each dtype's size as the memory its tensors take", function()
    for _, name in ipairs(core.dtypes) do
      collectgarbage()
      local before = core.cpu_bytes_in_use()
      local t = wick.zeros(1000000, { dtype = name })
      local used = core.cpu_bytes_in_use() - before
      -- the header and the allocator's rounding are a few hundred bytes
      assert.is_true(math.abs(used - 1000000 * core.dtype_info[name].size) < 4096,
        name .. ": " .. used .. " bytes for 1e6 elements")
      t = nil -- luacheck: ignore
    end
  end)

  it("states which dtypes are floating or complex: exactly those that can require grad", function()
    for _, name in ipairs(core.dtypes) do
      local ok = pcall(function() wick.zeros(2, { dtype = name }):requires_grad_(true) end)
      assert.are.equal(core.dtype_info[name].is_floating or core.dtype_info[name].is_complex, ok, name)
      assert.are.equal(core.dtype_info[name].is_complex, wick.zeros(1, { dtype = name }):is_complex(), name)
      assert.are.equal(core.dtype_info[name].is_floating, wick.zeros(1, { dtype = name }):is_floating_point(), name)
    end
  end)

  it("states digits: the precision of a floating dtype, the range of an integer one", function()
    for _, name in ipairs(core.dtypes) do
      local info = core.dtype_info[name]
      if info.is_complex then -- digits of each part, the imaginary one too
        local eps = 2 ^ (1 - info.digits)
        local z = wick.complex(wick.tensor({ 1 + eps, 1 + eps / 2 }, { dtype = "float64" }),
          wick.tensor({ 1 + eps / 2, 1 + eps }, { dtype = "float64" })):to(name)
        assert.are.same({ { 1 + eps, 1 }, { 1, 1 + eps } }, z:totable(), name)
      elseif info.is_floating then
        -- the gap after 1 is 2^(1 - digits): 1 + it is exact, 1 + half of it rounds to 1
        local eps = 2 ^ (1 - info.digits)
        assert.are.equal(1 + eps, wick.tensor({ 1 + eps }, { dtype = name }):item(), name)
        assert.are.equal(1, wick.tensor({ 1 + eps / 2 }, { dtype = name }):item(), name)
      elseif name ~= "bool" and info.digits < 53 then -- the largest value an integer dtype holds, and the sign
        local top = 2 ^ info.digits - 1
        assert.are.equal(top, wick.tensor({ top }, { dtype = name }):item(), name)
        assert.are.equal(top, wick.tensor({ top }, { dtype = name }):add(1):sub(1):item(), name)
        if info.is_signed then assert.are.equal(-2 ^ info.digits, wick.tensor({ -2 ^ info.digits }, { dtype = name }):item(), name) end
      end
    end
  end)

  it("names the aliases wick.dtype parsing takes, each as t:<alias>() too", function()
    local n = 0
    for alias, name in pairs(core.dtype_aliases) do
      n = n + 1
      assert.is_not_nil(core.dtype_info[name])
      assert.are.equal(name, wick.zeros(1):to(alias).dtype)
      assert.are.equal(name, wick.zeros(1)[alias](wick.zeros(1)).dtype)
    end
    assert.is_true(n >= 6)
  end)

  it("lists every dtype in the error for an unknown one", function()
    local ok, err = pcall(wick.zeros, 1, { dtype = "float8" })
    assert.is_false(ok)
    for _, name in ipairs(core.dtypes) do assert.is_truthy(tostring(err):find(name, 1, true), name) end
  end)

  it("gives random_() its default range from digits", function()
    wick.manual_seed(3)
    local t = wick.empty(20000, { dtype = "uint8" }):random_()
    assert.are.equal(255, t:to("int64"):max():item())
    local b = wick.empty(100, { dtype = "bool" }):random_()
    assert.are.equal(1, b:to("int64"):max():item())
  end)
end)

describe("is_module", function()
  it("is one test: modules yes; classes, tensors, plain and other tables no", function()
    assert.is_true(check.is_module(nn.Linear(2, 2)))
    assert.is_true(check.is_module(nn.Sequential()))
    assert.is_false(check.is_module(nn.Linear))
    assert.is_false(check.is_module(nn.Module))
    assert.is_false(check.is_module(wick.zeros(1)))
    assert.is_false(check.is_module({ _fields = {} })) -- no class
    assert.is_false(check.is_module(setmetatable({ _fields = true }, {})))
    assert.is_false(check.is_module(wick.device("cpu")))
  end)

  it("is what Module methods, options and messages use", function()
    local fake = setmetatable({ _fields = 1 }, { __name = "Fake" })
    local ok, err = pcall(nn.Module.parameters, fake)
    assert.is_false(ok)
    assert.is_truthy(tostring(err):find("expected a module", 1, true))
    assert.is_false(pcall(nn.DataParallel, { _fields = {} }))
    assert.are.equal("Linear", check.describe(nn.Linear(1, 1)))
  end)
end)

describe("op names", function()
  it("names every op the tensor methods are built from", function()
    local t = wick.ones(2, 2)
    for _, m in ipairs({ "neg", "exp", "gelu_tanh", "add", "ge", "sum", "std", "argmin" }) do
      assert.are.equal("function", type(t[m]), m)
    end
    assert.are.equal(4, t:add(t):sum():item() / 2)
  end)
end)
