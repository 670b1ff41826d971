-- tostring(t) like PyTorch's repr (dtype named the wick way, and shown when not float32).
local wick = require("wick")

local function T(values, dtype) return wick.tensor(values, dtype and { dtype = dtype } or nil) end

local function lines(...) return table.concat({ ... }, "\n") end

describe("tostring of tensors", function()
  it("1-D float32", function()
    assert.are.equal("tensor([1., 2., 3.])", tostring(T({ 1, 2, 3 })))
    assert.are.equal("tensor([1.5000, 2.2500])", tostring(T({ 1.5, 2.25 })))
    assert.are.equal("tensor([-1.5000,  2.0000])", tostring(T({ -1.5, 2 })))
    assert.are.equal("tensor([-1.,  2., 10.])", tostring(T({ -1, 2, 10 })))
  end)

  it("rounds to 4 decimals", function()
    assert.are.equal("tensor([0.3333, 0.6667])", tostring(T({ 1 / 3, 2 / 3 })))
    assert.are.equal("tensor([  0.1000, 100.0000])", tostring(T({ 0.1, 100 })))
  end)

  it("2-D aligned, rows on new lines indented by 8 spaces", function()
    assert.are.equal(lines("tensor([[1., 2.],", "        [3., 4.]])"), tostring(T({ { 1, 2 }, { 3, 4 } })))
    assert.are.equal(lines(
      "tensor([[  1.5000,  -2.0000],",
      "        [  3.0000, 100.0000]])"), tostring(T({ { 1.5, -2 }, { 3, 100 } })))
  end)

  it("3-D separates blocks with a blank line", function()
    assert.are.equal(lines(
      "tensor([[[1., 1.],",
      "         [1., 1.]],",
      "",
      "        [[1., 1.],",
      "         [1., 1.]]])"), tostring(wick.ones(2, 2, 2)))
  end)

  it("int64 goes without dtype=, as in PyTorch, and shows no decimal point", function()
    assert.are.equal("tensor([1, 2])", tostring(T({ 1, 2 }, "int64")))
    assert.are.equal("tensor([ -1, 100], dtype=int32)", tostring(T({ -1, 100 }, "int32")))
    assert.are.equal("tensor([  0, 255], dtype=uint8)", tostring(T({ 0, 255 }, "uint8")))
    assert.are.equal(lines("tensor([[ 1, 20],", "        [-3,  4]])"),
      tostring(T({ { 1, 20 }, { -3, 4 } }, "int64")))
  end)

  it("int64 beyond 2^53 prints its exact value", function()
    local big = T({ 2 ^ 53 }, "int64") + 1
    assert.are.equal("tensor([9007199254740993])", tostring(big))
    local neg = T({ -(2 ^ 62) }, "int64") - 1
    assert.are.equal("tensor([-4611686018427387905])", tostring(neg))
  end)

  it("float64, float16 and bfloat16 show their dtype", function()
    assert.are.equal("tensor([1.5000, 2.0000], dtype=float64)", tostring(T({ 1.5, 2 }, "float64")))
    assert.are.equal("tensor([1.5000, 2.0000], dtype=float16)", tostring(T({ 1.5, 2 }, "float16")))
    assert.are.equal("tensor([1., 2.], dtype=bfloat16)", tostring(T({ 1, 2 }, "bfloat16")))
  end)

  it("bool shows True/False", function()
    assert.are.equal("tensor([ True, False])", tostring(T({ true, false })))
    assert.are.equal("tensor([True, True])", tostring(T({ true, true })))
    assert.are.equal(lines("tensor([[False,  True],", "        [ True, False]])"),
      tostring(T({ { 1, 2 }, { 2, 1 } }):eq(T({ { 0, 2 }, { 2, 0 } }))))
  end)

  it("scientific notation for very small or large values", function()
    assert.are.equal("tensor([1.0000e-05, 1.0000e+00])", tostring(T({ 1e-5, 1 })))
    assert.are.equal("tensor([1.0000e-05])", tostring(T({ 1e-5 })))
    assert.are.equal("tensor([1.0000e+09, 1.0000e+00])", tostring(T({ 1e9, 1 })))
    assert.are.equal("tensor([1.5000e+00, 1.0000e+09])", tostring(T({ 1.5, 1e9 })))
    assert.are.equal("tensor([1.0000e-01, 1.0000e+03])", tostring(T({ 0.1, 1000 })))
    -- integral values too, when they span more than three orders of magnitude
    assert.are.equal("tensor([1.0000e+00, 1.0000e+04])", tostring(T({ 1, 10000 })))
    assert.are.equal("tensor([   1., 1000.])", tostring(T({ 1, 1000 })))
  end)

  it("nan and inf", function()
    assert.are.equal("tensor([nan, inf, -inf, 1.])", tostring(T({ 0 / 0, 1 / 0, -1 / 0, 1 })))
    assert.are.equal("tensor([   nan, 0.5000])", tostring(T({ 0 / 0, 0.5 })))
    assert.are.equal("tensor([nan, nan])", tostring(T({ 0 / 0, 0 / 0 })))
  end)

  it("zeros", function()
    assert.are.equal("tensor([0., 0.])", tostring(wick.zeros(2)))
    assert.are.equal("tensor([-0.5000,  0.0000])", tostring(T({ -0.5, 0 })))
  end)

  it("wraps long rows at 80 columns", function()
    assert.are.equal(lines(
      "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,",
      "        14., 15., 16., 17., 18., 19., 20., 21., 22., 23., 24., 25., 26., 27.,",
      "        28., 29.])"), tostring(wick.arange(30)))
  end)

  it("summarises tensors of more than 1000 elements with ...", function()
    assert.are.equal("tensor([   0,    1,    2,  ..., 1997, 1998, 1999])",
      tostring(wick.arange(2000, { dtype = "int64" })))
    assert.are.equal(lines(
      "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,",
      "        1.9990e+03])"), tostring(wick.arange(2000)))
    assert.are.equal(lines(
      "tensor([[   0,    1,    2,  ...,   47,   48,   49],",
      "        [  50,   51,   52,  ...,   97,   98,   99],",
      "        [ 100,  101,  102,  ...,  147,  148,  149],",
      "        ...,",
      "        [1850, 1851, 1852,  ..., 1897, 1898, 1899],",
      "        [1900, 1901, 1902,  ..., 1947, 1948, 1949],",
      "        [1950, 1951, 1952,  ..., 1997, 1998, 1999]])"),
      tostring(wick.arange(2000, { dtype = "int64" }):view(40, 50)))
  end)

  it("does not summarise 1000 elements or fewer", function()
    local s = tostring(wick.arange(1000, { dtype = "int64" }))
    assert.is_falsy(s:find("...", 1, true))
    assert.is_truthy(s:find(" 500,", 1, true))
    assert.is_truthy(tostring(wick.arange(1001, { dtype = "int64" })):find("...", 1, true))
  end)

  it("0-dim tensors", function()
    assert.are.equal("tensor(3.5000)", tostring(wick.tensor(3.5)))
    assert.are.equal("tensor(3.)", tostring(wick.tensor(3)))
    assert.are.equal("tensor(-2)", tostring(wick.tensor(-2, { dtype = "int64" })))
    assert.are.equal("tensor(True)", tostring(wick.tensor(true)))
    assert.are.equal("tensor(1.0000e-06)", tostring(wick.tensor(1e-6)))
  end)

  it("meta tensors show device and size, no values", function()
    assert.are.equal("tensor(..., device='meta', size=(2, 3))", tostring(wick.ones(2, 3, { device = "meta" })))
    assert.are.equal("tensor(..., device='meta', size=(4,))", tostring(wick.ones(4, { device = "meta" })))
    assert.are.equal("tensor(..., device='meta', size=())", tostring(wick.tensor(1, { device = "meta" })))
    assert.are.equal("tensor(..., device='meta', size=(2,), dtype=float64)",
      tostring(wick.zeros(2, { device = "meta", dtype = "float64" })))
  end)

  it("empty tensors", function()
    assert.are.equal("tensor([])", tostring(wick.tensor({})))
    assert.are.equal("tensor([])", tostring(wick.zeros(0)))
    assert.are.equal("tensor([], size=(2, 0))", tostring(wick.zeros(2, 0)))
    -- with no values to show it, an empty tensor names any dtype but the default (PyTorch's)
    assert.are.equal("tensor([], dtype=int64)", tostring(wick.zeros(0, { dtype = "int64" })))
    assert.are.equal("tensor([], dtype=bool)", tostring(wick.zeros(0, { dtype = "bool" })))
    assert.are.equal("tensor([], size=(0, 4), dtype=int64)", tostring(wick.zeros(0, 4, { dtype = "int64" })))
  end)

  it("views print their logical values", function()
    local m = T({ { 1, 2, 3 }, { 4, 5, 6 } })
    assert.are.equal(lines("tensor([[1., 4.],", "        [2., 5.],", "        [3., 6.]])"), tostring(m:t()))
    assert.are.equal("tensor([2., 5.])", tostring(m:t()[2]))
    assert.are.equal(lines("tensor([[2., 3.],", "        [5., 6.]])"), tostring(m:narrow(2, 2, 2)))
    assert.are.equal(lines("tensor([[7., 8.],", "        [7., 8.]])"), tostring(T({ 7, 8 }):expand(2, 2)))
  end)

  it("cuda tensors show device='cuda:0'", function()
    if not wick.cuda.is_available() then pending("needs a GPU") end
    assert.are.equal("tensor([1., 2.], device='cuda:0')", tostring(T({ 1, 2 }):cuda()))
    assert.are.equal("tensor([1, 2], device='cuda:0')", tostring(T({ 1, 2 }, "int64"):cuda()))
  end)
end)

describe("tostring of devices and sizes", function()
  it("devices give their canonical string", function()
    assert.are.equal("cuda:1", tostring(wick.device("cuda", 1)))
    assert.are.equal("meta", tostring(wick.device("meta")))
  end)

  it("t.shape prints as a list", function()
    assert.are.equal("[2, 3]", tostring(wick.ones(2, 3).shape))
    assert.are.equal("[]", tostring(wick.tensor(1).shape))
  end)

  it("concatenates with .. as it prints (Python's f-strings)", function()
    local t = wick.tensor({ 1.5 })
    assert.are.equal("loss: " .. tostring(t), "loss: " .. t)
    assert.are.equal(tostring(t) .. " and 2", t .. " and " .. 2)
    assert.are.equal(tostring(t) .. tostring(t), ("" .. t) .. t) -- (text first: two tensors joined are an error)
    assert.has_error(function() return t .. t end)
    assert.has_error(function() return {} .. t end, "attempt to concatenate a table value with a tensor")
  end)

  it("a 0-dim tensor concatenates as its value, as Python's f-strings format it", function()
    assert.are.equal("expert_0", "expert_" .. wick.tensor(0, { dtype = "int64" }))
    assert.are.equal("loss: 0.5", "loss: " .. wick.tensor(0.5))
    assert.are.equal("0.10000000149011612", wick.tensor(0.1) .. "") -- (float32 0.1, Python's repr of it)
    assert.are.equal("2.0|True|1e-05|inf", wick.tensor(2.0, { dtype = "float64" }) .. "|" .. wick.tensor(true)
      .. "|" .. wick.tensor(1e-5, { dtype = "float64" }) .. "|" .. wick.tensor(1 / 0))
    local big = wick.tensor({ -1 / 0 }):to("int64")[1] -- (INT64_MIN: no exact Lua number)
    assert.are.equal("n=-9223372036854775808", "n=" .. big)
  end)
end)

describe("printing a parameter", function()
  it("starts with PyTorch's 'Parameter containing:' line; a tensor that only requires grad does not", function()
    local lin = wick.nn.Linear(2, 1)
    local text = tostring(lin.bias)
    assert.are.equal("Parameter containing:\ntensor([", text:sub(1, 30))
    assert.is_truthy(text:find("requires_grad=True", 1, true))
    assert.are.equal("tensor([1., 1.], requires_grad=True)", tostring(wick.ones(2, { requires_grad = true })))
    assert.are.equal("Parameter containing:", tostring(wick.nn.Parameter(wick.zeros(1))):match("^[^\n]*"))
  end)
end)


describe("printing rounds as PyTorch's", function()
  it("a tie in the last printed digit goes to even, as C's printf (and Python's) round the exact value", function()
    assert.are.equal("tensor([1.2812, 2.6562, 0.1250])", tostring(wick.tensor({ 1.28125, 2.65625, 0.125 })))
    assert.are.equal("tensor([1.2813])", tostring(wick.tensor({ 1.28126 }, { dtype = "float64" })):gsub(", dtype=float64", ""))
  end)
end)
