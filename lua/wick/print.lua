-- tostring(t) like PyTorch's repr: aligned values, `...` summaries of large
-- tensors, and device= / dtype= suffixes when they differ from the defaults.

-- wick.set_printoptions changes these (PyTorch's names and defaults)
local options = { precision = 4, threshold = 1000, edgeitems = 3, linewidth = 80, sci_mode = nil }
local ELLIPSIS = {} -- marks the elided middle of a summarised dim

local core = require("wick.core")

-- fmt:format(v) for one number, through C's snprintf: LuaJIT formats %f and %e itself and rounds a
-- tie away from zero (1.28125 as 1.2813), where C's printf, which Python and so PyTorch print
-- through, rounds the exact value to even (1.2812); Lua 5.4's string.format is C's already
local function number_format(fmt, v) return fmt:format(v) end
local has_ffi, ffi = pcall(require, "ffi")
if jit and has_ffi then -- (without the FFI, a host's sandbox: LuaJIT's own rounding)
  pcall(ffi.cdef, "int snprintf(char *s, size_t n, const char *fmt, ...);")
  local buf = ffi.new("char[128]")
  number_format = function(fmt, v) return ffi.string(buf, ffi.C.snprintf(buf, 128, fmt, ffi.cast("double", v))) end
end
local dtype_info = core.dtype_info
local function is_float(dtype) return dtype_info[dtype].is_floating end

-- The indices shown along a dim: all, or the first and last edgeitems (0 marks "...").
local function shown(size, summarize)
  local idx = {}
  local EDGE = options.edgeitems
  if summarize and size > 2 * EDGE then
    for i = 1, EDGE do idx[#idx + 1] = i end
    idx[#idx + 1] = 0
    for i = size - EDGE + 1, size do idx[#idx + 1] = i end
  else
    for i = 1, size do idx[i] = i end
  end
  return idx
end

local COMPLEX = {} -- the metatable of a complex value's {re, im} in the collected tree

-- Collects the shown values (as Lua values) into a nested structure.
local function collect(t, summarize, flat)
  if t:dim() == 0 then
    -- int64 values come as exact strings: item() raises beyond 2^53
    local v
    if dtype_info[t.dtype].is_complex then v = setmetatable(t:totable(), COMPLEX)
    else v = t.dtype == "int64" and t:_int64_str() or t:item() end
    flat[#flat + 1] = v
    return v
  end
  local out = {}
  for _, i in ipairs(shown(t:size(1), summarize)) do
    if i == 0 then out[#out + 1] = ELLIPSIS
    else out[#out + 1] = collect(t:select(1, i), summarize, flat) end
  end
  return out
end

local function float_formatter(values)
  local finite, int_mode = {}, true
  for _, v in ipairs(values) do
    if v == v and v ~= math.huge and v ~= -math.huge then
      finite[#finite + 1] = math.abs(v)
      if v ~= math.floor(v) then int_mode = false end
    end
  end
  local fmt
  if #finite == 0 then
    fmt = function(v) return tostring(v) end
  else
    local maxv, minv = 0, math.huge
    for _, a in ipairs(finite) do
      if a > maxv then maxv = a end
      if a ~= 0 and a < minv then minv = a end
    end
    if minv == math.huge then minv = 0 end
    local sci, fixed = ("%%.%de"):format(options.precision), ("%%.%df"):format(options.precision)
    local wide = maxv / math.max(minv, 1e-300) > 1000 or maxv > 1e8
    if options.sci_mode ~= nil then wide, int_mode = options.sci_mode, int_mode and not options.sci_mode end
    if int_mode then
      if wide then fmt = function(v) return number_format(sci, v) end
      else fmt = function(v) return number_format("%.0f.", v) end end
    elseif wide or (options.sci_mode == nil and minv ~= 0 and minv < 1e-4) then
      fmt = function(v) return number_format(sci, v) end
    else
      fmt = function(v) return number_format(fixed, v) end
    end
  end
  return function(v)
    if v ~= v then return "nan" end
    if v == math.huge then return "inf" end
    if v == -math.huge then return "-inf" end
    return fmt(v)
  end
end

-- PyTorch's: the parts formatted apart, the imaginary one signed, then "j"
local function complex_formatter(values)
  local re, im = {}, {}
  for i, v in ipairs(values) do re[i], im[i] = v[1], v[2] end
  local fr, fi = float_formatter(re), float_formatter(im)
  return function(v)
    local i = fi(v[2])
    if i:sub(1, 1) ~= "-" then i = "+" .. i end
    return fr(v[1]) .. i .. "j"
  end
end

local function formatter_for(dtype, values)
  if dtype == "bool" then return function(v) return v and "True" or "False" end end
  if dtype_info[dtype].is_complex then return complex_formatter(values) end
  if is_float(dtype) then return float_formatter(values) end
  return function(v) return type(v) == "string" and v or ("%.0f"):format(v) end
end

local function render(node, fmt, width, indent, depth, ndim)
  if type(node) ~= "table" or node == ELLIPSIS or getmetatable(node) == COMPLEX then
    local s = fmt(node)
    return (" "):rep(width - #s) .. s
  end
  if ndim - depth == 1 then -- innermost: wrap lines at linewidth
    local parts, line, lines = {}, {}, {}
    local per_line = math.max(1, math.floor((options.linewidth - indent) / (width + 2)))
    for _, v in ipairs(node) do
      parts[#parts + 1] = v == ELLIPSIS and " ..." or render(v, fmt, width, indent, depth + 1, ndim)
    end
    for i, p in ipairs(parts) do
      line[#line + 1] = p
      if #line == per_line and i < #parts then
        lines[#lines + 1] = table.concat(line, ", ")
        line = {}
      end
    end
    lines[#lines + 1] = table.concat(line, ", ")
    return "[" .. table.concat(lines, ",\n" .. (" "):rep(indent + 1)) .. "]"
  end
  local rows = {}
  for _, v in ipairs(node) do
    rows[#rows + 1] = v == ELLIPSIS and "..." or render(v, fmt, width, indent + 1, depth + 1, ndim)
  end
  local sep = "," .. ("\n"):rep(ndim - depth - 1) .. (" "):rep(indent + 1)
  return "[" .. table.concat(rows, sep) .. "]"
end

local function shape_tuple(t)
  local parts = {}
  for i = 1, t:dim() do parts[i] = tostring(t:size(i)) end
  if #parts == 1 then return "(" .. parts[1] .. ",)" end
  return "(" .. table.concat(parts, ", ") .. ")"
end

local function print_tensor(t)
  local suffix = {}
  local device = t.device
  local dtype = t.dtype
  if device.type ~= "cpu" then suffix[#suffix + 1] = ("device='%s'"):format(tostring(device)) end
  local body
  if device.type == "meta" then
    body = "..."
    suffix[#suffix + 1] = "size=" .. shape_tuple(t)
  elseif t:numel() == 0 then
    body = "[]"
    if t:dim() ~= 1 then suffix[#suffix + 1] = "size=" .. shape_tuple(t) end
  else
    local host = device.type == "cpu" and t or t:cpu()
    local flat = {}
    local tree = collect(host, host:numel() > options.threshold, flat)
    local fmt = formatter_for(dtype, flat)
    -- like PyTorch, a float tensor's column width comes from its finite non-zero
    -- values only (nan and inf may stick out), and is at least 1
    local width = 1
    local floating = is_float(dtype)
    for _, v in ipairs(flat) do
      if not floating or type(v) == "table" or (v == v and v ~= 0 and v ~= math.huge and v ~= -math.huge) then
        width = math.max(width, #fmt(v))
      end
    end
    body = render(tree, fmt, width, #"tensor(", 0, t:dim())
  end
  -- PyTorch's rule: the default dtype, int64 and bool go without saying
  -- (and the complex one whose parts are the default: complex64 beside float32),
  -- but an empty tensor, with no values to show it, names any other than the default
  local default_complex = core.get_default_dtype() == "float64" and "complex128" or "complex64"
  local implied = dtype == "int64" or dtype == "bool" or dtype == default_complex
  if dtype ~= core.get_default_dtype() and (not implied or t:numel() == 0) then
    suffix[#suffix + 1] = "dtype=" .. dtype
  end
  local grad_fn = t.grad_fn
  if grad_fn then suffix[#suffix + 1] = ("grad_fn=<%s>"):format(grad_fn)
  elseif t.requires_grad then suffix[#suffix + 1] = "requires_grad=True" end
  if #suffix > 0 then body = body .. ", " .. table.concat(suffix, ", ") end
  return "tensor(" .. body .. ")"
end

--- wick.set_printoptions{precision = 4, threshold = 1000, edgeitems = 3,
--- linewidth = 80, sci_mode = nil} (or profile = "default" | "short" | "full"), as PyTorch's
local PROFILES = {
  default = { precision = 4, threshold = 1000, edgeitems = 3, linewidth = 80 },
  short = { precision = 2, threshold = 1000, edgeitems = 2, linewidth = 80 },
  full = { precision = 4, threshold = math.huge, edgeitems = 3, linewidth = 80 },
}
local function set_printoptions(opts)
  local check = require("wick.argcheck")
  check.options(opts, "set_printoptions", { precision = "integer", threshold = "number", edgeitems = "integer",
    linewidth = "integer", sci_mode = "boolean", profile = "string" })
  opts = opts or {}
  if opts.profile then
    check.one_of(opts.profile, "set_printoptions", "profile", { "default", "short", "full" })
    for k, v in pairs(PROFILES[opts.profile]) do options[k] = v end
  end
  if opts.precision then options.precision = check.int(opts.precision, "set_printoptions", "precision", 0) end
  if opts.threshold then options.threshold = opts.threshold end
  if opts.edgeitems then options.edgeitems = check.int(opts.edgeitems, "set_printoptions", "edgeitems", 1) end
  if opts.linewidth then options.linewidth = check.int(opts.linewidth, "set_printoptions", "linewidth", 1) end
  if opts.sci_mode ~= nil or opts.profile then options.sci_mode = opts.sci_mode end
end

return { tostring = print_tensor, set_printoptions = set_printoptions }
