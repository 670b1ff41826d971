-- A tour of wick: tensors, devices, to(), and the same-device rule.
-- Run: build/wick examples/tensors.lua
local wick = require("wick")

local function section(title) print(("\n== %s =="):format(title)) end

section("tensors")
local x = wick.tensor({{1, 2, 3}, {4, 5, 6}})
print(x)
print("shape", x.shape, "dtype", x.dtype, "device", x.device)
print("x[2] is a view of the second row:", x[2])
x[2][3] = 60
print("after x[2][3] = 60:", x)
print("sum over dim 2:", x:sum(2))
print("x @ x:t():", x:matmul(x:t()))

section("dtypes")
local i = wick.arange(1, 6, 1, { dtype = "int64" })
print(i, "+ 0.5 promotes like PyTorch:", i + 0.5)
print(wick.ones(2, 2, { dtype = "float16" }) / 3)

section("devices")
local cuda = wick.cuda.is_available()
local device = wick.device(cuda and "cuda" or "cpu")
print("CUDA available:", cuda, "-> using", device)
print("device objects are interned:", wick.device("cuda:0") == wick.device("cuda:0"),
      "and cuda ~= cuda:0:", wick.device("cuda") ~= wick.device("cuda:0"))
local y = x:to(device)
print("x:to(device) is on", y.device, "; x:to('cpu') is x itself:", rawequal(x:to("cpu"), x))
print("x:to('float64') is a new tensor:", x:to("float64"))

section("the meta device: shapes without data")
local w = wick.randn(784, 512, { device = "meta" })
local batch = wick.empty(128, 784, { device = "meta" })
print("batch @ w on meta:", batch:mm(w))

section("the same-device rule")
local ok, err = pcall(function() return x:mm(wick.empty(3, 2, { device = "meta" })) end)
print("caught:", err)
if not cuda then
  ok, err = pcall(function() return x:to("cuda") end)
  print("caught:", err)
end
print("a 0-dim CPU tensor mixes with any device as a scalar:", (batch + wick.tensor(2)).shape)
