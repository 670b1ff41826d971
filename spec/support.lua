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

return support
