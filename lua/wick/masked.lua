-- wick.masked: torch.masked's functions on tensors with a `mask` option (HF's masked group norm:
-- torch.masked.mean(x, mask=m, dim=(2, 3), keepdim=True), torch.masked.var(..., unbiased=False)).
-- Each replaces the masked-out elements (mask false; the mask broadcasts to the input) with the
-- operation's identity (0 for sum, 1 for prod, -inf for amax and softmax, ...) and runs the
-- ordinary op, as PyTorch's _combine_input_and_mask does; mean, var and std divide by the count of
-- elements kept, so a fully masked-out reduction is NaN. Dims are 1-based; no dim reduces all.
-- Dense tensors only (wick has no sparse layouts and no MaskedTensor).
local wick = require("wick")
local check = require("wick.argcheck")

local M = {}

local REDUCE = { input = "tensor", dim = "integer|table", keepdim = "boolean", dtype = "dtype", mask = "tensor" }
local ALONG = { input = "tensor", dim = "integer", dtype = "dtype", mask = "tensor" }

-- the arguments by position or by name, the input (and other) a tensor
local function parse(fn, names, spec, ...)
  local o = check.positional(fn, names, spec, ...)
  check.tensor(o.input, fn, "input")
  if spec.other then check.tensor(o.other, fn, "other") end
  return o
end

-- the mask as a bool tensor of input's shape (PyTorch's _input_mask), or nil
local function input_mask(fn, input, mask)
  if mask == nil then return nil end
  if mask:dim() > input:dim() then
    check.fail(fn, "expected a mask broadcastable to the input (got a mask of %d dims for an input of %d)", mask:dim(), input:dim())
  end
  return mask:to("bool"):broadcast_to(input:size())
end

-- input with its masked-out elements replaced by value (a number, or a 0-dim tensor of input's dtype)
local function combined(fn, input, mask, value)
  local m = input_mask(fn, input, mask)
  if m == nil then return input end
  if not wick.is_tensor(value) then value = wick.full({}, value, { dtype = input.dtype, device = input.device }) end
  return wick.where(m, input, value)
end

-- the dims to reduce, ascending and each once (all of them for nil): PyTorch's _canonical_dim
local function dims_of(fn, dim, x)
  local ndim = x:dim()
  if dim == nil or (type(dim) == "table" and #dim == 0) then
    local all = {}
    for d = 1, ndim do all[d] = d end
    return all
  end
  local list, seen = type(dim) == "table" and dim or { dim }, {}
  local out = {}
  for _, d in ipairs(list) do
    d = check.wrap_dim(x, d, fn)
    if seen[d] then check.fail(fn, "dim=%d appears multiple times in the list of dims", d) end
    seen[d], out[#out + 1] = true, d
  end
  table.sort(out)
  return out
end

-- the identities of the extreme reductions, 0-dim of t's dtype: -inf / inf for floating types, the
-- integer range's ends else (int64's largest made in int64: 2^63 - 1 is no double)
local function lowest(t)
  local o = { dtype = t.dtype, device = t.device }
  if t:is_floating_point() then return wick.full({}, -math.huge, o) end
  if t.dtype == "bool" then return wick.full({}, false, o) end
  return wick.full({}, wick.iinfo(t.dtype).min, o)
end
local function highest(t)
  local o = { dtype = t.dtype, device = t.device }
  if t:is_floating_point() then return wick.full({}, math.huge, o) end
  if t.dtype == "bool" then return wick.full({}, true, o) end
  if t.dtype == "int64" then return -(lowest(t) + 1) end
  return wick.full({}, wick.iinfo(t.dtype).max, o)
end

-- sum's and prod's result type: integer inputs widen to int64, as torch.sum's
local function widened(t, dtype)
  if dtype ~= nil then return dtype end
  if t:is_floating_point() or t:is_complex() then return t.dtype end
  return "int64"
end

-- reduce(x, dims, keepdim) over each dim (the largest first, so that the others keep their place)
local function over(x, dims, keepdim, reduce)
  if x:dim() == 0 then return reduce(x, nil, keepdim) end
  for i = #dims, 1, -1 do x = reduce(x, dims[i], keepdim) end
  return x
end

--- wick.masked.sum(input[, dim[, {keepdim = false, dtype, mask}]]) (also every argument by name)
function M.sum(...)
  local o = parse("masked.sum", { "input", "dim" }, REDUCE, ...)
  local x = combined("masked.sum", o.input, o.mask, 0)
  local dims = dims_of("masked.sum", o.dim, x)
  x = x:to(widened(o.input, o.dtype))
  if x:dim() == 0 then return x:clone() end
  return x:sum(dims, o.keepdim == true)
end

--- wick.masked.prod(input[, dim[, {keepdim, dtype, mask}]])
function M.prod(...)
  local o = parse("masked.prod", { "input", "dim" }, REDUCE, ...)
  local x = combined("masked.prod", o.input, o.mask, 1):to(widened(o.input, o.dtype))
  return over(x, dims_of("masked.prod", o.dim, x), o.keepdim == true, function(t, d, k)
    if d == nil then return t:clone() end
    return t:prod(d, k)
  end)
end

local function extreme(name, fill)
  return function(...)
    local fn = "masked." .. name
    local o = parse(fn, { "input", "dim" }, REDUCE, ...)
    local x = combined(fn, o.input, o.mask, fill(o.input))
    local dims = dims_of(fn, o.dim, x)
    local r = x:dim() == 0 and x:clone() or x[name](x, dims, o.keepdim == true)
    return r:to(o.dtype or o.input.dtype)
  end
end
--- wick.masked.amax / amin(input[, dim[, {keepdim, dtype, mask}]]): masked-out elements count as -inf / inf
M.amax = extreme("amax", lowest)
M.amin = extreme("amin", highest)

local ARG = { input = "tensor", dim = "integer", keepdim = "boolean", dtype = "dtype", mask = "tensor" }
local function arg_extreme(name, fill)
  return function(...)
    local fn = "masked." .. name
    local o = parse(fn, { "input", "dim" }, ARG, ...)
    local x = combined(fn, o.input, o.mask, fill(o.input))
    local r
    if o.dim == nil then r = x[name](x) else r = x[name](x, o.dim, o.keepdim == true) end
    return r:to(o.dtype or o.input.dtype)
  end
end
--- wick.masked.argmax / argmin(input[, dim[, {keepdim, dtype, mask}]]): 1-based positions, in input's
--- dtype unless dtype says otherwise (PyTorch's .to(dtype=input.dtype))
M.argmax = arg_extreme("argmax", lowest)
M.argmin = arg_extreme("argmin", highest)

local function floating(dtype) return wick._dtype_info[dtype].is_floating or wick._dtype_info[dtype].is_complex end

-- the count of kept elements over dims (keepdim as asked), in dtype
local function count_of(fn, input, mask, dims, keepdim)
  local m = input_mask(fn, input, mask)
  if m == nil then m = wick.ones(input:size(), { dtype = "bool", device = input.device }) end
  if input:dim() == 0 then return m:to("int64") end
  return m:sum(dims, keepdim)
end

--- wick.masked.mean(input[, dim[, {keepdim, dtype, mask}]]): the mean of the kept elements (NaN where none is)
function M.mean(...)
  local fn = "masked.mean"
  local o = parse(fn, { "input", "dim" }, REDUCE, ...)
  local dtype = o.dtype or o.input.dtype
  if not floating(dtype) then
    check.fail(fn, "mean(): Could not infer output dtype. %s dtype must be either a floating point or complex dtype. Got: %s",
      o.dtype and "Optional" or "Input", dtype)
  end
  local dims = dims_of(fn, o.dim, o.input)
  local total = M.sum(o.input, o.dim, { keepdim = o.keepdim, dtype = dtype, mask = o.mask })
  return total / count_of(fn, o.input, o.mask, dims, o.keepdim == true)
end

local VAR = { input = "tensor", dim = "integer|table", unbiased = "boolean", correction = "number",
  keepdim = "boolean", dtype = "dtype", mask = "tensor" }
local function std_var(fn, take_sqrt, ...)
  local o = parse(fn, { "input", "dim", "unbiased" }, VAR, ...)
  if o.unbiased ~= nil and o.correction ~= nil then check.fail(fn, "Only one of unbiased and correction may be given") end
  local correction = 1
  if o.unbiased ~= nil then correction = o.unbiased and 1 or 0 end
  if o.correction ~= nil then correction = o.correction end
  local dtype = o.dtype or o.input.dtype
  if not floating(dtype) then dtype = "float32" end
  local dims = dims_of(fn, o.dim, o.input)
  local count = count_of(fn, o.input, o.mask, dims, true)
  local mean = M.sum(o.input, o.dim, { keepdim = true, dtype = dtype, mask = o.mask }) / count
  local x = o.input - mean
  local total = M.sum(x * x, o.dim, { keepdim = o.keepdim, dtype = dtype, mask = o.mask })
  count = count:reshape(total:size()):to(dtype)
  if correction ~= 0 then count = (count - correction):clamp(0, math.huge) end
  local out = total / count
  if take_sqrt then out = out:sqrt() end
  return out
end
--- wick.masked.var / std(input[, dim[, unbiased[, {correction, keepdim, dtype, mask}]]]): over the kept
--- elements, correction 1 (unbiased) unless unbiased = false or correction says otherwise
function M.var(...) return std_var("masked.var", false, ...) end
function M.std(...) return std_var("masked.std", true, ...) end

--- wick.masked.logsumexp(input[, dim[, {keepdim, dtype, mask}]]): masked-out elements count as -inf
function M.logsumexp(...)
  local fn = "masked.logsumexp"
  local o = parse(fn, { "input", "dim" }, REDUCE, ...)
  local x = combined(fn, o.input, o.mask, lowest(o.input))
  local dims = dims_of(fn, o.dim, x)
  local r = x:dim() == 0 and x:clone() or x:logsumexp(dims, o.keepdim == true)
  return r:to(o.dtype or o.input.dtype)
end

local NORM = { input = "tensor", ord = "number", dim = "integer|table", keepdim = "boolean", dtype = "dtype", mask = "tensor" }
--- wick.masked.norm(input[, ord = 2[, dim[, {keepdim, dtype, mask}]]]): the vector norm of the kept elements
function M.norm(...)
  local fn = "masked.norm"
  local o = parse(fn, { "input", "ord", "dim" }, NORM, ...)
  local ord = o.ord == nil and 2 or o.ord
  local x = combined(fn, o.input, o.mask, ord == -math.huge and highest(o.input) or 0)
  return wick.linalg.vector_norm(x, ord, dims_of(fn, o.dim, x), o.keepdim == true, { dtype = o.dtype or o.input.dtype })
end

-- the softmax family along one dim, masked-out elements first set to fill (their results 0, or -inf)
local function soft(name, f, fill)
  return function(...)
    local fn = "masked." .. name
    local o = parse(fn, { "input", "dim" }, ALONG, ...)
    if o.dim == nil then check.fail(fn, "expected a dim") end
    local x = combined(fn, o.input, o.mask, fill(o.input))
    return f(x, o.dim, { dtype = o.dtype or o.input.dtype })
  end
end
local F = wick.nn.functional
--- wick.masked.softmax / log_softmax / softmin(input, dim[, {dtype, mask}])
M.softmax = soft("softmax", F.softmax, lowest)
M.log_softmax = soft("log_softmax", F.log_softmax, lowest)
M.softmin = soft("softmin", F.softmin, highest)

local NORMALIZE = { input = "tensor", ord = "number", dim = "integer", eps = "number", dtype = "dtype", mask = "tensor" }
--- wick.masked.normalize(input, ord, dim[, {eps = 1e-12, dtype, mask}]): the kept elements over their
--- norm (at least eps), the others 0
function M.normalize(...)
  local fn = "masked.normalize"
  local o = parse(fn, { "input", "ord", "dim" }, NORMALIZE, ...)
  if o.ord == nil or o.dim == nil then check.fail(fn, "expected ord and dim") end
  local nrm = M.norm(o.input, o.ord, o.dim, { keepdim = true, dtype = o.dtype, mask = o.mask })
  return combined(fn, o.input, o.mask, 0) / nrm:clamp(o.eps or 1e-12, math.huge)
end

local function cumulative(name, fill)
  return function(...)
    local fn = "masked." .. name
    local o = parse(fn, { "input", "dim" }, ALONG, ...)
    if o.dim == nil then check.fail(fn, "expected a dim") end
    local x = combined(fn, o.input, o.mask, fill)
    local dtype = o.dtype or o.input.dtype
    return x[name](x, o.dim, { dtype = dtype }):to(dtype)
  end
end
--- wick.masked.cumsum / cumprod(input, dim[, {dtype, mask}]): masked-out elements count as 0 / 1
M.cumsum = cumulative("cumsum", 0)
M.cumprod = cumulative("cumprod", 1)

local ADD = { input = "tensor", other = "tensor", dtype = "dtype", input_mask = "tensor", other_mask = "tensor" }
--- wick.masked.logaddexp(input, other[, {dtype, input_mask, other_mask}])
function M.logaddexp(...)
  local fn = "masked.logaddexp"
  local o = parse(fn, { "input", "other" }, ADD, ...)
  local a = combined(fn, o.input, o.input_mask, lowest(o.input))
  local b = combined(fn, o.other, o.other_mask, lowest(o.other))
  return wick.logaddexp(a, b):to(o.dtype or o.input.dtype)
end

return M
