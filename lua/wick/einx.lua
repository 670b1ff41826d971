-- wick.einx: the einx package's calls that lucidrains' newer code makes (einx.where, einx.add and the
-- other elementwise ops, einx.sum and the other reductions, einx.get_at), on wick tensors, so those
-- lines port as they are. A pattern names each operand's axes, operands apart by commas, the result
-- after "->": "b n, b n ... d, b n ... d -> b n ... d". "..." stands for the operand's remaining dims
-- (as many in each operand that has it; an axis has one size in every operand, as einx checks: a size 1
-- does not broadcast); an empty operand is a number; [brackets] mark the axes an op works along (the reduced axes of einx.sum("b [n] d", x), the indexed axis of
-- einx.get_at("q [c] d, b n q -> q b n d", codebooks, indices), whose indices count from 1 as
-- wick's gather). Each call is a permute and a view of each operand, then one wick op, so it is
-- differentiable and runs on any device.
local wick = require("wick")
local check = require("wick.argcheck")

local M = {}
local unpack = table.unpack or unpack -- luacheck: ignore

local function fail(fn, fmt, ...) check.fail("einx." .. fn, fmt, ...) end

-- one operand's expression: {axes = {name or "...", ...}, bracket = {[i] = true}}
local function operand(s, fn)
  local axes, bracket, seen = {}, {}, {}
  local function add(name, in_bracket)
    if seen[name] then fail(fn, "the axis '%s' appears twice in '%s'", name, s) end
    seen[name] = true
    axes[#axes + 1] = name
    if in_bracket then bracket[#axes] = true end
  end
  local i, inside = 1, false
  while i <= #s do
    local c = s:sub(i, i)
    if c:match("%s") then i = i + 1
    elseif c == "[" or c == "]" then
      if (c == "[") == inside then fail(fn, "unbalanced brackets in '%s'", s) end
      inside, i = c == "[", i + 1
    elseif s:sub(i, i + 2) == "..." then add("...", inside); i = i + 3
    else
      local name = s:match("^[%w_]+", i)
      if not name then fail(fn, "unexpected '%s' in '%s' (axes are names, '...' and [brackets])", c, s) end
      add(name, inside)
      i = i + #name
    end
  end
  if inside then fail(fn, "unbalanced brackets in '%s'", s) end
  return { axes = axes, bracket = bracket }
end

-- "in1, in2 -> out": the inputs' expressions and the output's (nil without "->")
local function parse(pattern, n, fn)
  if type(pattern) ~= "string" then check.expected("einx." .. fn, "pattern", "a pattern string", pattern) end
  local left, right = pattern:match("^(.-)%->(.*)$")
  left = left or pattern
  local ins = {}
  for part in (left .. ","):gmatch("(.-),") do ins[#ins + 1] = operand(part, fn) end
  if #ins ~= n then fail(fn, "the pattern '%s' has %d operand(s), got %d", pattern, #ins, n) end
  return ins, right and operand(right, fn) or nil
end

-- expression e's dim names, its "..." standing for `k` dims ("...j", j counting from the right)
local function out_names(e, k)
  local names = {}
  for _, a in ipairs(e.axes) do
    if a == "..." then
      for j = k, 1, -1 do names[#names + 1] = "..." .. j end
    else names[#names + 1] = a end
  end
  return names
end

-- the names of v's dims under expression e, and how many dims its "..." stands for
local function names_of(e, v, fn)
  local ndim = wick.is_tensor(v) and v:dim() or 0
  local named, ellipsis = #e.axes, false
  for _, a in ipairs(e.axes) do if a == "..." then named, ellipsis = named - 1, true end end
  if ndim < named or (not ellipsis and ndim ~= named) then
    fail(fn, "an operand of %d dim(s) does not match '%s'", ndim, table.concat(e.axes, " "))
  end
  return out_names(e, ndim - named), ellipsis and ndim - named or 0
end

-- every axis has one size in all operands, and "..." as many dims in each that has it (einx's
-- AxisSizeError and RankError: a size 1 does not broadcast against another size, as in einx)
local function agree(fn, pattern, ins, names, args, ks)
  local size, from, k_of = {}, {}, nil
  local function shape(i) return tostring(wick.is_tensor(args[i]) and args[i].shape or "a number") end
  for i = 1, #names do
    local has_ellipsis = false
    for _, a in ipairs(ins[i].axes) do has_ellipsis = has_ellipsis or a == "..." end
    if has_ellipsis then
      if k_of and k_of[1] ~= ks[i] then
        fail(fn, "'...' stands for %d dim(s) in operand %d (%s) and %d in operand %d (%s) of '%s'", k_of[1], k_of[2],
          shape(k_of[2]), ks[i], i, shape(i), pattern)
      end
      k_of = k_of or { ks[i], i }
    end
    for j, a in ipairs(names[i]) do
      local n = args[i]:size(j)
      if size[a] and size[a] ~= n then
        fail(fn, "the axis '%s' has size %d in operand %d (%s) and %d in operand %d (%s) of '%s'",
          (a:gsub("^%.%.%.%d+$", "...")), size[a], from[a], shape(from[a]), n, i, shape(i), pattern)
      end
      size[a], from[a] = n, from[a] or i
    end
  end
end

-- tensor t whose dims are `names`, permuted and viewed as the dims `out` (size 1 where it has none)
local function aligned(t, names, out, fn)
  local at = {}
  for i, name in ipairs(names) do at[name] = i end
  local perm, shape = {}, {}
  for _, name in ipairs(out) do
    if at[name] then perm[#perm + 1] = at[name]; at[name] = nil end
  end
  for _, name in ipairs(names) do
    if at[name] then fail(fn, "the axis '%s' of an input is not in the output", (name:gsub("^%.%.%.%d+$", "..."))) end
  end
  if #perm > 0 then t = t:permute(perm) end
  local has, j = {}, 0
  for _, name in ipairs(names) do has[name] = true end
  for i, name in ipairs(out) do
    if has[name] then j = j + 1; shape[i] = t:size(j) else shape[i] = 1 end
  end
  return #out > 0 and t:reshape(shape) or t
end

-- einx.f(pattern, a, b, ...): f on the operands aligned to the output's axes (the output: the
-- pattern's "->" side, else the input holding every axis)
local function elementwise(name, arity, f)
  M[name] = function(pattern, ...)
    local n = select("#", ...)
    local args = { ... }
    if n ~= arity then fail(name, "takes %d operands, got %d", arity, n) end
    local ins, out = parse(pattern, n, name)
    local names, ks, k = {}, {}, 0
    for i = 1, n do
      names[i], ks[i] = names_of(ins[i], args[i], name)
      k = math.max(k, ks[i])
    end
    agree(name, pattern, ins, names, args, ks)
    local to
    if out then to = out_names(out, k)
    else
      for i = 1, n do -- (the first input whose axes hold the others')
        local have = {}
        for _, a in ipairs(names[i]) do have[a] = true end
        local all = true
        for j = 1, n do for _, a in ipairs(names[j]) do all = all and have[a] == true end end
        if all and not to then to = names[i] end
      end
      if not to then fail(name, "the output's axes are not those of one input: give them ('%s -> ...')", pattern) end
    end
    for i = 1, n do
      if wick.is_tensor(args[i]) then args[i] = aligned(args[i], names[i], to, name) end
    end
    return f(unpack(args, 1, n))
  end
end
for _, op in ipairs({ "add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "maximum", "minimum",
  "logaddexp", "pow", "less", "less_equal", "greater", "greater_equal", "equal", "not_equal", "logical_and",
  "logical_or", "logical_xor" }) do
  local torch_name = ({ subtract = "sub", multiply = "mul", divide = "div", less = "lt", less_equal = "le",
    greater = "gt", greater_equal = "ge", equal = "eq", not_equal = "ne" })[op] or op
  elementwise(op, 2, function(a, b)
    if not wick.is_tensor(a) then a, b = wick.full({}, a, { dtype = b.dtype, device = b.device }), b end
    return a[torch_name](a, b)
  end)
end
elementwise("where", 3, function(c, a, b) return wick.where(c, a, b) end)

-- einx.f(pattern, x): the reduction f over the bracketed axes (or those the "->" side lacks)
local function reduction(name, f)
  M[name] = function(pattern, t, ...)
    if select("#", ...) > 0 then fail(name, "takes one operand, got %d", select("#", ...) + 1) end
    check.tensor(t, "einx." .. name, "tensor")
    local ins, out = parse(pattern, 1, name)
    local names, k = names_of(ins[1], t, name)
    local keep = {}
    if out then for _, a in ipairs(out_names(out, k)) do keep[a] = true end end
    local dims, rest, e = {}, {}, 0
    for i, a in ipairs(ins[1].axes) do
      for _ = 1, a == "..." and k or 1 do
        e = e + 1
        if ins[1].bracket[i] or (out and not keep[names[e]]) then dims[#dims + 1] = e
        else rest[#rest + 1] = names[e] end
      end
    end
    local r = #dims > 0 and f(t, dims) or t
    if out then r = aligned(r, rest, out_names(out, k), name) end
    return r
  end
end
-- a reduction whose wick method takes one dim: over the dims one at a time, the last first
local function dim_by_dim(method)
  return function(t, dims)
    for i = #dims, 1, -1 do t = t[method](t, dims[i]) end
    return t
  end
end
reduction("sum", function(t, dims) return t:sum(dims) end)
reduction("mean", function(t, dims) return t:mean(dims) end)
reduction("max", function(t, dims) return t:amax(dims) end)
reduction("min", function(t, dims) return t:amin(dims) end)
reduction("logsumexp", function(t, dims) return t:logsumexp(dims) end)
reduction("prod", dim_by_dim("prod"))
reduction("any", dim_by_dim("any"))
reduction("all", dim_by_dim("all"))

--- einx.get_at("q [c] d, b n q -> q b n d", x, indices): x's entries along its one bracketed axis at
--- `indices` (int64, from 1), the other axes matched by name; the output's axes in its order
function M.get_at(pattern, x, indices, ...)
  local fn = "get_at"
  if select("#", ...) > 0 then fail(fn, "takes a tensor and its indices, got %d operands", select("#", ...) + 2) end
  check.tensor(x, "einx.get_at", "tensor")
  check.tensor(indices, "einx.get_at", "indices")
  local ins, out = parse(pattern, 2, fn)
  if not out then fail(fn, "give the output's axes ('... -> ...')") end
  local xe = ins[1]
  local at_axis
  for i in pairs(xe.bracket) do
    if at_axis then fail(fn, "one [bracketed] axis of the tensor is indexed, got several in '%s'", pattern) end
    at_axis = xe.axes[i]
  end
  if not at_axis or at_axis == "..." then fail(fn, "mark the indexed axis of the tensor with [brackets]: 'q [c] d, ...'") end
  local xnames, k1 = names_of(xe, x, fn)
  local inames, k2 = names_of(ins[2], indices, fn)
  local x_rest_names = {} -- (x's axes but the indexed one, which the indices do not have)
  for _, a in ipairs(xnames) do x_rest_names[#x_rest_names + 1] = a == at_axis and "[" .. a .. "]" or a end
  agree(fn, pattern, ins, { x_rest_names, inames }, { x, indices }, { k1, k2 })
  local to = out_names(out, math.max(k1, k2))
  -- x as [output axes..., indexed axis], the indices as [output axes..., 1]: one gather along the last dim
  local x_rest = {}
  for _, a in ipairs(xnames) do if a ~= at_axis then x_rest[#x_rest + 1] = a end end
  local x_to = { unpack(to) }
  x_to[#x_to + 1] = at_axis
  local xa = aligned(x, xnames, x_to, fn)
  local ia = aligned(indices, inames, to, fn)
  local n = xa:size(#to + 1)
  if indices:numel() > 0 then -- (out of range: named by the pattern's axis, not the gather below)
    local lo, hi = indices:min():item(), indices:max():item()
    local bad = lo < 1 and lo or hi > n and hi
    if bad then
      fail(fn, "index %d is out of bounds for the bracketed axis '%s' of size %d%s", bad, at_axis, n,
        bad == 0 and " (indices are 1-based: a 0-based index from PyTorch needs + 1)" or "")
    end
  end
  local shape = {}
  for i = 1, #to do shape[i] = math.max(xa:size(i), ia:size(i)) end
  local xs = { unpack(shape) }
  xs[#xs + 1] = n
  return xa:expand(xs):gather(#to + 1, ia:expand(shape):unsqueeze(-1)):squeeze(-1)
end

--- einx.rearrange(pattern, x[, axes_lengths]): wick.einops.rearrange (the same notation for one operand)
function M.rearrange(pattern, x, ...) return wick.einops.rearrange(x, pattern, ...) end

return check.strict(M, "wick.einx")
