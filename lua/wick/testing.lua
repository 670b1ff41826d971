-- wick.testing: torch.testing's assert_close (and its older assert_allclose),
-- which test files of ported programs call. Loaded on first use of wick.testing
-- (lua/wick/init.lua).
local wick = require("wick")
local check = require("wick.argcheck")

local testing = {}

-- PyTorch's default tolerances by dtype: {rtol, atol}
local DEFAULT = { float16 = { 1e-3, 1e-5 }, bfloat16 = { 1.6e-2, 1e-5 }, float32 = { 1.3e-6, 1e-5 },
  float64 = { 1e-7, 1e-7 }, complex64 = { 1.3e-6, 1e-5 }, complex128 = { 1e-7, 1e-7 } }

local function fail(msg, user)
  wick.error(user and (user .. "\n\n" .. msg) or msg)
end

-- the 1-based index of flat position i (from 1) in shape
local function where(i, shape)
  local idx, rest = {}, i - 1
  for d = #shape, 1, -1 do
    idx[d] = rest % shape[d] + 1
    rest = math.floor(rest / shape[d])
  end
  return "(" .. table.concat(idx, ", ") .. ")"
end

--- wick.testing.assert_close(actual, expected[, {rtol =, atol =, equal_nan = false, check_dtype = true,
--- check_device = true, msg =}]): PyTorch's torch.testing.assert_close: tensors (or numbers) of one
--- shape, dtype and device whose elements are within atol + rtol * |expected| (default tolerances by
--- dtype, as PyTorch's; both or neither given), else an error with PyTorch's report
function testing.assert_close(actual, expected, opts)
  local o = check.options(opts, "assert_close", { rtol = "number", atol = "number", equal_nan = "boolean",
    check_dtype = "boolean", check_device = "boolean", msg = "string" })
  if (o.rtol == nil) ~= (o.atol == nil) then
    check.fail("assert_close", "Both 'rtol' and 'atol' must be either specified or omitted, but got no %s.",
      o.rtol == nil and "rtol" or "atol")
  end
  local scalars = type(actual) == "number" and type(expected) == "number"
  if scalars then
    actual, expected = wick.tensor(actual, { dtype = "float64" }), wick.tensor(expected, { dtype = "float64" })
  end
  check.tensor(actual, "assert_close", "actual")
  check.tensor(expected, "assert_close", "expected")
  if actual.shape ~= expected.shape then
    fail(("The values for attribute 'shape' do not match: %s != %s."):format(tostring(actual.shape), tostring(expected.shape)), o.msg)
  end
  if o.check_dtype ~= false and actual.dtype ~= expected.dtype then
    fail(("The values for attribute 'dtype' do not match: %s != %s."):format(actual.dtype, expected.dtype), o.msg)
  end
  if o.check_device ~= false and tostring(actual.device) ~= tostring(expected.device) then
    fail(("The values for attribute 'device' do not match: %s != %s."):format(tostring(actual.device),
      tostring(expected.device)), o.msg)
  end
  local d = DEFAULT[wick.promote_types(actual.dtype, expected.dtype)] or { 0, 0 }
  local rtol, atol = o.rtol or d[1], o.atol or d[2]
  local a = actual:detach():to({ device = "cpu", dtype = actual:is_complex() and "complex128" or "float64" })
  local e = expected:detach():to({ device = "cpu", dtype = a.dtype })
  local diff = (a - e):abs()
  local ok = diff:le(e:abs() * rtol + atol)
  local an, en = a:isnan(), e:isnan()
  if o.equal_nan then ok = ok:logical_or(an:logical_and(en)) end
  ok = ok:logical_or(a:eq(e)) -- (equal infinities)
  local bad = ok:logical_not()
  local n_bad = bad:sum():item()
  if n_bad == 0 then return end
  local numel = ok:numel()
  local lines = { ("%s are not close!"):format(scalars and "Scalars" or "Tensor-likes"), "" }
  local flat_diff = wick.where(bad, diff, 0):reshape(-1)
  local rel = wick.where(bad, diff / e:abs(), 0):reshape(-1)
  local ai, ri = flat_diff:argmax():item(), rel:argmax():item()
  if not scalars then
    lines[#lines + 1] = ("Mismatched elements: %d / %d (%.1f%%)"):format(n_bad, numel, 100 * n_bad / numel)
    lines[#lines + 1] = ("Greatest absolute difference: %s at index %s (up to %s allowed)"):format(
      tostring(flat_diff[ai]:item()), where(ai, actual:size()), tostring(atol))
    lines[#lines + 1] = ("Greatest relative difference: %s at index %s (up to %s allowed)"):format(
      tostring(rel[ri]:item()), where(ri, actual:size()), tostring(rtol))
  else
    lines[#lines + 1] = ("Expected %s but got %s."):format(tostring(e:reshape(-1)[1]:item()), tostring(a:reshape(-1)[1]:item()))
    lines[#lines + 1] = ("Absolute difference: %s (up to %s allowed)"):format(tostring(flat_diff[1]:item()), tostring(atol))
    lines[#lines + 1] = ("Relative difference: %s (up to %s allowed)"):format(tostring(rel[1]:item()), tostring(rtol))
  end
  fail(table.concat(lines, "\n"), o.msg)
end
--- wick.testing.assert_allclose(actual, expected[, opts]): PyTorch's deprecated form (its dtypes may differ)
function testing.assert_allclose(actual, expected, opts)
  local o = {}
  for k, v in pairs(opts or {}) do o[k] = v end
  o.check_dtype = false
  return testing.assert_close(actual, expected, o)
end

return check.strict(testing, "wick.testing")
