-- Helpers shared by the specs: local copies of them used to sit at the top of
-- each spec file. Load with `local support = require("spec.support")`.
local wick = require("wick")
local assert = require("luassert")

local support = {}

support.NaN = 0 / 0

-- ---- approximate comparison ----

-- Compares (nested) tables or numbers; tensors are read with :totable().
-- Shapes must match exactly. NaN matches only NaN, inf and -inf match only
-- themselves, and any other number must satisfy
-- |actual - expected| <= tol * (1 + |expected|).
-- Returns true, or false and a message naming the first difference.
local function compare(actual, expected, tol, path)
  if wick.is_tensor(actual) then actual = actual:totable() end
  if type(expected) == "table" then
    if type(actual) ~= "table" then return false, path .. ": expected a table, got " .. tostring(actual) end
    if #actual ~= #expected then
      return false, ("%s: expected %d elements, got %d"):format(path, #expected, #actual)
    end
    for i = 1, #expected do
      local ok, why = compare(actual[i], expected[i], tol, path .. "[" .. i .. "]")
      if not ok then return false, why end
    end
    return true
  end
  if type(expected) ~= "number" then
    return false, ("%s: expected value %s is neither a number nor a table"):format(path, tostring(expected))
  end
  if type(actual) ~= "number" then return false, path .. ": expected a number, got " .. tostring(actual) end
  if expected ~= expected then
    if actual ~= actual then return true end
    return false, ("%s: expected nan, got %.17g"):format(path, actual)
  end
  if actual ~= actual then return false, ("%s: expected %.17g, got nan"):format(path, expected) end
  if expected == math.huge or expected == -math.huge then
    if actual == expected then return true end
    return false, ("%s: expected %s, got %.17g"):format(path, tostring(expected), actual)
  end
  if math.abs(actual - expected) <= tol * (1 + math.abs(expected)) then return true end
  return false, ("%s: expected %.17g, got %.17g"):format(path, expected, actual)
end

-- The default tolerance of support.close and support.assert_close.
support.DEFAULT_TOL = 1e-6

-- close(actual, expected [, tol [, path]]) -> true | false, why
function support.close(actual, expected, tol, path)
  return compare(actual, expected, tol or support.DEFAULT_TOL, path or "value")
end

-- An assert_close(actual, expected [, tol]) whose tolerance, when not given,
-- is default_tol.
function support.assert_close_with(default_tol)
  return function(actual, expected, tol)
    local ok, why = compare(actual, expected, tol or default_tol, "value")
    assert(ok, why)
  end
end

support.assert_close = support.assert_close_with(support.DEFAULT_TOL)

-- ---- errors ----

-- Calls fn(...) under pcall; fails the test when it does not raise, else
-- returns the message. (A wick error names the first frame outside wick's own
-- files: when fn is a wick function itself, or a closure that tail-calls one,
-- that frame is here, in spec/support.lua.)
function support.error_of(fn, ...)
  local ok, err = pcall(fn, ...)
  assert.is_false(ok, "expected an error, but the call succeeded")
  return tostring(err)
end

function support.assert_contains(text, piece)
  assert.is_truthy(text:find(piece, 1, true), ("expected %q to contain %q"):format(text, piece))
end

-- Calls fn() (no arguments), which must raise an error containing every needle;
-- returns the message.
function support.assert_error_has(fn, ...)
  local err = support.error_of(fn)
  for _, needle in ipairs({ ... }) do
    assert(err:find(needle, 1, true), ("error %q does not contain %q"):format(err, needle))
  end
  return err
end

-- ---- tensors and tables ----

-- a sorted copy of an array
function support.sorted(list)
  local out = {}
  for i, v in ipairs(list) do out[i] = v end
  table.sort(out)
  return out
end

function support.shape_of(t) local s = {}; for i = 1, t:dim() do s[i] = t:size(i) end; return s end

-- an int64 tensor (index tensors and the like)
function support.I(values) return wick.tensor(values, { dtype = "int64" }) end

-- Deterministic float64 values ((i * k) % m - off) / scale for i = 0, 1, ...
-- in the given shape (the formula the Python that computed references used).
function support.seq(shape, k, m, off, scale)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  local v = {}
  for i = 0, n - 1 do v[i + 1] = ((i * k) % m - off) / scale end
  return wick.tensor(v, { dtype = "float64" }):reshape(shape)
end

-- the transpose of a 2-D Lua table
function support.transpose_table(a)
  local r = {}
  for j = 1, #a[1] do
    r[j] = {}
    for i = 1, #a do r[j][i] = a[i][j] end
  end
  return r
end

-- ---- gradcheck ----

local F64 = { dtype = "float64" }
support.GRADCHECK_EPS, support.GRADCHECK_ATOL, support.GRADCHECK_RTOL = 1e-6, 1e-5, 1e-4
local EPS, ATOL, RTOL = support.GRADCHECK_EPS, support.GRADCHECK_ATOL, support.GRADCHECK_RTOL

-- the elements of t as a flat Lua array (row-major), 0-dim included
function support.values_of(t)
  if t:dim() == 0 then return { t:item() } end
  return t:reshape(t:numel()):totable()
end

-- wick.randn(sizes...) in float64
function support.randn64(...)
  local sizes = { ... }
  sizes[#sizes + 1] = F64
  return wick.randn((table.unpack or unpack)(sizes))
end

-- a float64 tensor of `shape` (a Lua array, {} for 0-dim) from flat values
function support.from_values(vals, shape)
  if #shape == 0 then return wick.tensor(vals[1], F64) end
  return wick.tensor(vals, F64):view(shape)
end

local function copy(a) local r = {}; for i = 1, #a do r[i] = a[i] end; return r end

-- deterministic weights in [-1, 1] (an LCG of our own: independent of wick's RNG)
local function weights(n, seed)
  local s, w = seed or 12345, {}
  for i = 1, n do
    s = (1103515245 * s + 12345) % 2147483648
    w[i] = s / 1073741824 - 1
    if math.abs(w[i]) < 0.1 then w[i] = w[i] + 0.3 end -- every output element matters
  end
  return w
end

-- gradcheck(fn, inputs[, opts]): inputs are float64 tensors; each becomes a
-- fresh leaf with requires_grad, except those listed in opts.constant (a set of
-- input positions). The scalar loss is sum(fn(...) * W) for fixed random W,
-- so every element of the output contributes. The analytic gradient of each
-- leaf must match (f(x + eps e_j) - f(x - eps e_j)) / (2 eps) for every element
-- j within ATOL + RTOL * |numeric|. It also checks that every leaf got a .grad
-- of its own shape and dtype. opts.enable_grad: the numeric side runs with
-- grad enabled too (for fn that differentiates itself, as gradgradcheck's).
function support.gradcheck(fn, inputs, opts)
  opts = opts or {}
  local constant = opts.constant or {}
  local shapes, vals = {}, {}
  for i, x in ipairs(inputs) do
    assert.are.equal("float64", x.dtype, "gradcheck inputs must be float64")
    shapes[i], vals[i] = support.shape_of(x), support.values_of(x)
  end
  local n = #inputs
  local function make(i, v)
    local t = support.from_values(v, shapes[i])
    if not constant[i] then t:requires_grad_() end
    return t
  end

  -- analytic
  local leaves = {}
  for i = 1, n do leaves[i] = make(i, vals[i]) end
  local out = fn(unpack(leaves, 1, n))
  assert.is_true(wick.is_tensor(out), "gradcheck: fn must return a tensor")
  assert.is_true(out.requires_grad, "gradcheck: the output does not require grad")
  assert.is_truthy(out.grad_fn, "gradcheck: the output has no grad_fn")
  local out_shape = support.shape_of(out)
  local w = support.from_values(weights(out:numel()), out_shape)
  local loss = (out:to("float64") * w):sum()
  loss:backward()

  -- numeric
  local function f(args)
    return (opts.enable_grad and wick.enable_grad or wick.no_grad)(function()
      local o = fn(unpack(args, 1, n))
      assert.are.same(out_shape, support.shape_of(o))
      return (o:to("float64") * w):sum():item()
    end)
  end
  for i = 1, n do
    if not constant[i] then
      local g = leaves[i].grad
      assert.is_truthy(g, ("gradcheck: input %d got no gradient"):format(i))
      assert.are.same(shapes[i], support.shape_of(g), ("gradcheck: shape of the gradient of input %d"):format(i))
      assert.are.equal("float64", g.dtype)
      local analytic = support.values_of(g)
      local args = {}
      for k = 1, n do args[k] = support.from_values(vals[k], shapes[k]) end
      for j = 1, #vals[i] do
        local v = copy(vals[i])
        v[j] = vals[i][j] + EPS
        args[i] = support.from_values(v, shapes[i])
        local fp = f(args)
        v[j] = vals[i][j] - EPS
        args[i] = support.from_values(v, shapes[i])
        local fm = f(args)
        local numeric = (fp - fm) / (2 * EPS)
        local a = analytic[j]
        assert(a == a and math.abs(a - numeric) <= ATOL + RTOL * math.abs(numeric),
          ("gradcheck: input %d, element %d: analytic %.10g, numeric %.10g"):format(i, j, a, numeric))
      end
      args[i] = support.from_values(vals[i], shapes[i])
    else
      assert.is_nil(leaves[i].grad)
    end
  end
  return true
end

-- gradgradcheck(fn, inputs[, opts]): second derivatives. The gradients of
-- sum(fn(...) * W) with respect to the inputs, taken with
-- autograd.grad{create_graph = true} and summed against fixed random V, must
-- have the numeric gradient gradcheck computes (double backward through every
-- node of fn).
function support.gradgradcheck(fn, inputs, opts)
  opts = opts or {}
  local w, v
  local function first_order(...)
    local args = { ... }
    for i = 1, #args do
      if not args[i].requires_grad then args[i] = args[i]:detach():requires_grad_() end
    end
    local out = fn(unpack(args, 1, #args))
    w = w or support.from_values(weights(out:numel()), support.shape_of(out))
    local grads = wick.autograd.grad((out * w):sum(), args, { create_graph = true, allow_unused = true })
    local total = wick.zeros({}, { dtype = "float64" })
    v = v or {}
    for i = 1, #args do
      if grads[i] then
        v[i] = v[i] or support.from_values(weights(grads[i]:numel(), 977 + i), support.shape_of(grads[i]))
        total = total + (grads[i] * v[i]):sum()
      end
    end
    return total
  end
  return support.gradcheck(first_order, inputs, { enable_grad = true, constant = opts.constant })
end

-- The bytes of the file at path.
function support.read_file(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

-- The warnings wick._warn gives while f runs (a list of messages).
function support.warnings_of(f)
  local saved, got = wick._warn, {}
  wick._warn = function(msg) got[#got + 1] = msg end
  local ok, err = pcall(f)
  wick._warn = saved
  if not ok then error(err, 0) end
  return got
end

-- ---- the same op on several devices ----

-- The devices the op specs run on: "cpu", plus "cuda:0" where a CUDA GPU is
-- available. WICK_SPEC_DEVICE=cpu (or meta) adds that device instead of the
-- GPU, to check the specs' own code on a machine without one.
function support.devices()
  local list = { "cpu" }
  local extra = os.getenv("WICK_SPEC_DEVICE")
  if extra and extra ~= "" then list[#list + 1] = extra
  elseif wick.cuda.is_available() then list[#list + 1] = "cuda:0" end
  return list
end

-- fn(device) for each of support.devices(): a spec written once runs per device
-- (inside a describe, it registers its `it`s once per device).
function support.for_each_device(fn)
  for _, device in ipairs(support.devices()) do fn(device) end
end

-- How far a result on another device may stray from the CPU's, per dtype,
-- in support.close's terms (|a - e| <= tol * (1 + |e|)): integers and bool are
-- exact; bfloat16 has 8 significant bits, so one rounding step apart is 2^-7.
support.DEVICE_TOL = { float32 = 1e-5, float64 = 1e-12, float16 = 1e-3, bfloat16 = 8e-3,
  int64 = 0, int32 = 0, uint8 = 0, bool = 0 }

-- The values of one result, as plain Lua (bool as 0/1, so they compare as numbers).
local function host_values(t)
  if t.dtype == "bool" then t = t:to("uint8") end
  t = t:cpu()
  if t:dim() == 0 then return t:item() end
  return t:totable()
end

-- Compares one result of the device with the CPU's: tensors must agree in
-- shape and dtype, live on `device` (type and index), and hold the same values
-- within DEVICE_TOL (or opts.tol); on meta only shape and dtype are compared.
-- Plain tables are compared entry by entry; anything else must be equal.
local function same_result(actual, expected, device, opts, path)
  if wick.is_tensor(expected) then
    assert(wick.is_tensor(actual), ("%s: expected a tensor, got %s"):format(path, type(actual)))
    assert.are.same(support.shape_of(expected), support.shape_of(actual), path .. ": shape")
    assert.are.equal(expected.dtype, actual.dtype, path .. ": dtype")
    local dev = wick.device(device)
    if expected.device.type == "cpu" and dev.type ~= "cpu" then
      -- a result the op makes on its input's device
      assert.are.equal(dev.type, actual.device.type, path .. ": device")
      if dev.index then assert.are.equal(dev.index, actual.device.index, path .. ": device index") end
    end
    if actual.device.type == "meta" then return end
    local tol = opts.tol
    if type(tol) == "table" then tol = tol[expected.dtype] end
    if tol == nil then tol = support.DEVICE_TOL[expected.dtype] or support.DEFAULT_TOL end
    if tol == 0 then
      -- exact: compared as tensors, so int64 beyond 2^53 is compared too
      local a, e = actual:cpu():reshape(actual:numel()), expected:reshape(expected:numel())
      if a:numel() == 0 or a:eq(e):all() then return end
      local i = 1
      while a[i]:eq(e[i]):all() do i = i + 1 end
      local function show(t) return t.dtype == "int64" and t:_int64_str() or tostring(t:item()) end
      error(("%s: element %d (flattened): expected %s, got %s (on %s, %s, exact)")
        :format(path, i, show(e[i]), show(a[i]), tostring(device), expected.dtype), 0)
    end
    local ok, why = compare(host_values(actual), host_values(expected), tol, path)
    assert(ok, ("%s (on %s, %s, tolerance %g)"):format(why, tostring(device), expected.dtype, tol))
  elseif type(expected) == "table" and getmetatable(expected) == nil then
    assert.are.equal("table", type(actual), path .. ": expected a table")
    for k, v in pairs(expected) do same_result(actual[k], v, device, opts, path .. "." .. tostring(k)) end
    for k in pairs(actual) do assert(expected[k] ~= nil, ("%s: unexpected entry %s"):format(path, tostring(k))) end
  elseif type(expected) == "number" and type(actual) == "number" and opts.tol ~= 0 then
    local ok, why = compare(actual, expected, type(opts.tol) == "number" and opts.tol or support.DEVICE_TOL.float32, path)
    assert(ok, why)
  else
    assert.are.same(expected, actual, path)
  end
end

-- assert_same_on(device, fn[, opts]): runs fn("cpu") and fn(device) and
-- asserts that they give the same results (every returned value: tensors,
-- tables of tensors, numbers), within support.DEVICE_TOL for the result's
-- dtype. fn makes its inputs on the device it is given, e.g. from CPU tensors
-- made outside it: `function(d) return a:to(d):mm(b:to(d)) end`.
-- opts.tol: a number, or a table dtype -> tolerance, overriding DEVICE_TOL.
-- Returns the device's results.
function support.assert_same_on(device, fn, opts)
  opts = opts or {}
  local function pack(...) return { n = select("#", ...), ... } end
  local expected = pack(fn("cpu"))
  local actual = pack(fn(device))
  for i = 1, math.max(expected.n, actual.n) do
    same_result(actual[i], expected[i], device, opts, "result " .. i)
  end
  return unpack(actual, 1, actual.n)
end

-- ---- reference values written by PyTorch (tools/make_reference.py) ----
-- The same formulas as tools/reference/common.py, so that weights and inputs
-- agree without a shared random generator.

-- element i (row-major, from 0) is 0.5 * sin(0.37 * i + j): parameter j's values
function support.formula(shape, j, opts)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  local v = {}
  for i = 0, n - 1 do v[i + 1] = 0.5 * math.sin(0.37 * i + (j or 0)) end
  local t = wick.tensor(n > 0 and v or {}, { dtype = "float64" })
  t = #shape == 0 and t:reshape({}) or t:view(shape)
  return opts and t:to(opts) or t
end

-- element i (row-major, from 0) is cos(0.23 * i): inputs
function support.inputs(shape, opts)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  local v = {}
  for i = 0, n - 1 do v[i + 1] = math.cos(0.23 * i) end
  local t = wick.tensor(n > 0 and v or {}, { dtype = "float64" })
  t = #shape == 0 and t:reshape({}) or t:view(shape)
  return opts and t:to(opts) or t
end

-- fills the j-th parameter (named_parameters order, j from 0) with formula(shape, j)
function support.fill_parameters(m)
  wick.no_grad(function()
    local j = 0
    for _, p in m:named_parameters() do
      p:copy_(support.formula(p:size(), j, { dtype = p.dtype, device = p.device }))
      j = j + 1
    end
  end)
  return m
end

-- the table spec/fixtures/ref_<family>.lua
function support.reference(family)
  return dofile("spec/fixtures/ref_" .. family .. ".lua")
end

-- a float64 tensor from a reference value ({ shape = {...}, v1, v2, ... })
function support.ref_tensor(r, opts)
  local t = support.from_values({ unpack(r) }, r.shape)
  return opts and t:to(opts) or t
end

-- ---- TensorBoard event files ----

-- The records of an event file (TFRecord framing: uint64 length, masked CRC-32C
-- of it, the data, masked CRC-32C of the data), each checked against its CRCs.
function support.tb_records(path)
  local function le(s, i, n) -- little-endian unsigned integer of n bytes at i
    local v = 0
    for k = n - 1, 0, -1 do v = v * 256 + s:byte(i + k) end
    return v
  end
  local crc = wick._core.tb_masked_crc
  local f = assert(io.open(path, "rb"))
  local data = f:read("*a")
  f:close()
  local out, pos = {}, 1
  while pos <= #data do
    local n = le(data, pos, 8)
    assert.are.equal(crc(data:sub(pos, pos + 7)), le(data, pos + 8, 4))
    local body = data:sub(pos + 12, pos + 11 + n)
    assert.are.equal(#body, n)
    assert.are.equal(crc(body), le(data, pos + 12 + n, 4))
    out[#out + 1] = body
    pos = pos + 16 + n
  end
  return out
end

-- A table of value cases, each { name, f, flat values wanted, shape }: f() is a float64 tensor of that
-- shape whose values are the wanted ones to `tol` relative (1e-13 by default; NaN where NaN is wanted,
-- infinities and, with `exact_zero`, zeros to 1e-15 absolute); `quiet` runs f with its warnings caught.
function support.assert_value_cases(cases, opts)
  opts = opts or {}
  local tol, INF = opts.tol or 1e-13, math.huge
  for i, c in ipairs(cases) do
    local v
    if opts.quiet then support.warnings_of(function() v = c[2]() end) else v = c[2]() end
    local where = ("case %d (%s)"):format(i, c[1])
    assert.are.same(c[4], v:size(), where .. ": shape")
    assert.are.equal("float64", v.dtype, where)
    local got = v:reshape(-1):totable()
    assert.are.equal(#c[3], #got, where)
    for j, want in ipairs(c[3]) do
      local g = got[j]
      if want ~= want then
        assert.is_true(g ~= g, ("%s [%d]: %s, want nan"):format(where, j, tostring(g)))
      elseif want == INF or want == -INF or (opts.exact_zero and want == 0) then
        assert.is_true(want == g or math.abs(g - want) < 1e-15, ("%s [%d]: %.17g, want %.17g"):format(where, j, g, want))
      else
        local rel = math.abs(g - want) / math.max(math.abs(want), 1e-300)
        assert.is_true(rel < tol, ("%s [%d]: %.17g, want %.17g (relative %g)"):format(where, j, g, want, rel))
      end
    end
  end
end

return support
