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

function support.shape_of(t) local s = {}; for i = 1, t:dim() do s[i] = t:size(i) end; return s end

-- an int64 tensor (index tensors and the like)
function support.I(values) return wick.tensor(values, { dtype = "int64" }) end

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
-- of its own shape and dtype.
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
    return wick.no_grad(function()
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

return support
