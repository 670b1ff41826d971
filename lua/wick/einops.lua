-- wick.einops: the einops package's operations on wick tensors (rearrange,
-- reduce, repeat, pack, unpack, einsum, parse_shape, and the Rearrange and
-- Reduce layers), so that transformer code written with einops ports line
-- by line. A pattern names the axes of the input and of the result:
-- "b c (h p1) (w p2) -> b (h w) (p1 p2 c)"; parentheses group axes into one
-- dimension, "..." stands for any number of axes, "1" and "()" are a
-- dimension of size 1. Sizes the input does not fix come in a table
-- ({p1 = 16, p2 = 16}). Each operation is a reshape, a permute, a reduction
-- or an expand of the tensor, so it is differentiable and runs on any device.
-- `repeat` is a Lua keyword: einops.repeat_ (or einops["repeat"]).
local wick = require("wick")
local check = require("wick.argcheck")

local M = {}
local unpack = table.unpack or unpack -- luacheck: ignore

local function fail(fn, fmt, ...) check.fail("einops." .. fn, fmt, ...) end

-- "a (b c) ..." -> {"a", "(", "b", "c", ")", "..."}
local function tokens(side, fn)
  local out, pos = {}, 1
  while pos <= #side do
    local c = side:sub(pos, pos)
    if c:match("%s") then
      pos = pos + 1
    elseif c == "(" or c == ")" or c == "*" then
      out[#out + 1], pos = c, pos + 1
    elseif side:sub(pos, pos + 2) == "..." then
      out[#out + 1], pos = "...", pos + 3
    else
      local name = side:match("^[%w_]+", pos)
      if not name then fail(fn, "unexpected '%s' in the pattern '%s'", c, side) end
      if name:match("^%d") and not name:match("^%d+$") then fail(fn, "'%s' is not an axis name", name) end
      out[#out + 1], pos = name, pos + #name
    end
  end
  return out
end

-- one side of a pattern: an array of groups (one per dimension), each an
-- array of axes: a name, "...", or a number (an anonymous axis)
local function parse(side, fn)
  local groups, group, seen = {}, nil, {}
  for _, tok in ipairs(tokens(side, fn)) do
    if tok == "(" then
      if group then fail(fn, "nested parentheses in '%s'", side) end
      group = { paren = true }
    elseif tok == ")" then
      if not group then fail(fn, "unbalanced ')' in '%s'", side) end
      groups[#groups + 1], group = group, nil
    else
      local axis = tok:match("^%d+$") and tonumber(tok) or tok
      if type(axis) == "string" then
        if seen[axis] then fail(fn, "the axis '%s' appears twice in '%s'", axis, side) end
        seen[axis] = true
      end
      if group then group[#group + 1] = axis else groups[#groups + 1] = { axis } end
    end
  end
  if group then fail(fn, "unbalanced '(' in '%s'", side) end
  return groups
end

local function split(pattern, fn)
  check.string(pattern, "einops." .. fn, "pattern")
  local l, r = pattern:match("^(.-)%->(.*)$")
  if not l then fail(fn, "the pattern '%s' has no '->'", pattern) end
  return parse(l, fn), parse(r, fn)
end

-- "..." replaced by n axes named "...1" .. "...n", in place in its group
local function expand_ellipsis(groups, n, fn, left)
  local out = {}
  for _, g in ipairs(groups) do
    local at
    for i, a in ipairs(g) do if a == "..." then at = i end end
    if not at then
      out[#out + 1] = g
    elseif not g.paren then -- a bare "...": n dimensions
      for k = 1, n do out[#out + 1] = { "..." .. k } end
    elseif left then
      fail(fn, "'...' inside parentheses on the left is not supported")
    else
      local ng = { paren = true }
      for i, a in ipairs(g) do
        if i == at then for k = 1, n do ng[#ng + 1] = "..." .. k end else ng[#ng + 1] = a end
      end
      out[#out + 1] = ng
    end
  end
  return out
end

local function has_ellipsis(groups)
  for _, g in ipairs(groups) do for _, a in ipairs(g) do if a == "..." then return true end end end
  return false
end

-- a list given for a tensor is stacked first, as einops does; the stacked tensor remembers the count
-- for the rank error (a ported `q, k, v = x.chunk(3)` whose list went in whole)
local stacked_from = setmetatable({}, { __mode = "k" })
local function stacked(t)
  if type(t) ~= "table" or check.is_tensor(t) then return t end
  local s = wick.stack(t)
  stacked_from[s] = #t
  return s
end

-- the input's axes: names in order with their sizes (size-1 anonymous axes dropped)
local function left_axes(t, left, lengths, fn)
  if has_ellipsis(left) then
    local n = t:dim() - (#left - 1)
    if n < 0 then fail(fn, "the pattern has %d dimensions besides '...', the tensor %d", #left - 1, t:dim()) end
    left = expand_ellipsis(left, n, fn, true)
  end
  if #left ~= t:dim() then
    local list = stacked_from[t] and (" (a list of %d tensors, stacked: split, chunk and unbind give one table, "
      .. "`local q, k, v = x:chunk(3, -1):unpack()` their parts)"):format(stacked_from[t]) or ""
    fail(fn, "the pattern's left side has %d dimensions, the tensor %d (shape %s)%s", #left, t:dim(),
      table.concat(t:size(), "x"), list)
  end
  local names, sizes = {}, {}
  for d, g in ipairs(left) do
    local dim, known, unknown = t:size(d), 1, nil
    for _, a in ipairs(g) do
      if type(a) == "number" then
        if a ~= 1 then fail(fn, "an anonymous axis on the left must be 1, got %d", a) end
      elseif lengths[a] then
        known = known * lengths[a]
      elseif unknown then
        fail(fn, "two axes of unknown size ('%s' and '%s') in one group: give one in axes_lengths", unknown, a)
      else
        unknown = a
      end
    end
    if unknown then
      if known == 0 or dim % known ~= 0 then
        fail(fn, "dimension %d (size %d) does not split into the known axes (%d)", d, dim, known)
      end
    elseif known ~= dim then
      fail(fn, "dimension %d has size %d, the pattern gives %d", d, dim, known)
    end
    for _, a in ipairs(g) do
      if type(a) == "string" then
        names[#names + 1], sizes[#sizes + 1] = a, (a == unknown) and math.floor(dim / known) or lengths[a]
      end
    end
  end
  return names, sizes
end

local function lengths_of(fn, axes_lengths)
  if axes_lengths == nil then return {} end
  check.table(axes_lengths, "einops." .. fn, "axes_lengths")
  for k, v in pairs(axes_lengths) do
    if type(k) ~= "string" then fail(fn, "axes_lengths: expected names as keys, got %s", check.describe(k)) end
    check.int(v, "einops." .. fn, k, 0) -- (0 too: repeat(x, "d -> b n d", n = 0) is empty, as einops')
  end
  return axes_lengths
end

local REDUCTIONS = { mean = true, sum = true, max = true, min = true, prod = true, any = true, all = true }

-- rearrange, reduce (op) and repeat: one walk from the left axes to the right groups
local function apply(fn, t, pattern, op, axes_lengths)
  check.tensor(t, "einops." .. fn, "tensor")
  local lengths = lengths_of(fn, axes_lengths)
  local left, right = split(pattern, fn)
  local n_ell = 0
  if has_ellipsis(left) then n_ell = t:dim() - (#left - 1) end
  if has_ellipsis(right) and not has_ellipsis(left) then fail(fn, "'...' on the right only") end
  local names, sizes = left_axes(t, left, lengths, fn)
  right = expand_ellipsis(right, math.max(n_ell, 0), fn, false)
  local on_right, pos = {}, {}
  for _, g in ipairs(right) do for _, a in ipairs(g) do if type(a) == "string" then on_right[a] = true end end end
  for i, a in ipairs(names) do pos[a] = i end
  local x = t:reshape(#sizes > 0 and sizes or {})
  -- axes only on the left are reduced
  local kept, kept_sizes, reduced = {}, {}, {}
  for i, a in ipairs(names) do
    if on_right[a] then kept[#kept + 1], kept_sizes[#kept_sizes + 1] = a, sizes[i]
    else reduced[#reduced + 1] = i end
  end
  if #reduced > 0 then
    if fn ~= "reduce" then fail(fn, "the axis '%s' is on the left only (use einops.reduce to reduce it)", names[reduced[1]]) end
    if type(op) ~= "string" then -- a function: f(x, dims), the reduced dims (1-based) in one call
      x = op(x, reduced)
      if not check.is_tensor(x) then fail(fn, "the reduction function returned %s, not a tensor", check.describe(x)) end
      local want = #names - #reduced
      if x:dim() ~= want then
        fail(fn, "the reduction function returned a tensor of %d dims, expected %d (the dims not reduced)", x:dim(), want)
      end
    else
      for k = #reduced, 1, -1 do -- from the last, so the positions hold
        local d = reduced[k]
        x = (x[op](x, d)) -- (max and min: the values)
      end
    end
  end
  -- the kept axes in the right side's order
  local order, new_pos = {}, {}
  for i, a in ipairs(kept) do new_pos[a] = i end
  for _, g in ipairs(right) do
    for _, a in ipairs(g) do if type(a) == "string" and new_pos[a] then order[#order + 1] = new_pos[a] end end
  end
  if #order > 1 then x = x:permute(order) end
  -- new axes (repeat) inserted and expanded; then the right's groups
  local flat, shape, any_new = {}, {}, false
  for _, g in ipairs(right) do
    local size = 1
    for _, a in ipairs(g) do
      local n
      if type(a) == "number" then
        n = a
        if a ~= 1 then
          if fn ~= "repeat" then fail(fn, "an anonymous axis (%d) on the right is for einops.repeat_", a) end
          any_new = true
          flat[#flat + 1] = { new = true, size = a }
        end
      elseif new_pos[a] then
        n = kept_sizes[new_pos[a]]
        flat[#flat + 1] = { size = n }
      else
        if fn ~= "repeat" then fail(fn, "the axis '%s' is on the right only (use einops.repeat_ to add it)", a) end
        n = lengths[a]
        if not n then fail(fn, "the new axis '%s' needs its size in axes_lengths", a) end
        any_new = true
        flat[#flat + 1] = { new = true, size = n }
      end
      size = size * n
    end
    shape[#shape + 1] = size
  end
  if any_new then
    local sz = {}
    for i, f in ipairs(flat) do
      if f.new then x = x:unsqueeze(i) end
      sz[i] = f.size
    end
    x = x:expand(sz)
  end
  return x:reshape(shape)
end

--- einops.rearrange(t, pattern[, axes_lengths]): reorder, split and merge axes
function M.rearrange(t, pattern, axes_lengths)
  return apply("rearrange", stacked(t), pattern, nil, axes_lengths)
end

--- einops.reduce(t, pattern, reduction[, axes_lengths]): reduce the axes the right side drops
--- (reduction "mean", "sum", "max", "min", "prod", "any", "all", or a function f(x, dims)
--- of the dims to reduce, 1-based, giving x without them)
--- ("repeat" and "rearrange" too, einops' own names for those: hyper-connections' Reduce('b ... -> (b s) ...',
--- 'repeat', s = n))
local function check_reduction(fn, reduction)
  if type(reduction) == "function" then return end
  check.string(reduction, fn, "reduction")
  if not REDUCTIONS[reduction] and reduction ~= "repeat" and reduction ~= "rearrange" then
    check.fail(fn, "unknown reduction '%s' (mean, sum, max, min, prod, any, all, repeat, rearrange or a function)", reduction)
  end
end
function M.reduce(t, pattern, reduction, axes_lengths)
  t = stacked(t)
  check_reduction("einops.reduce", reduction)
  if reduction == "repeat" or reduction == "rearrange" then return apply(reduction, t, pattern, nil, axes_lengths) end
  return apply("reduce", t, pattern, reduction, axes_lengths)
end

--- einops.repeat_(t, pattern[, axes_lengths]) (einops.repeat): new axes, copies along them
function M.repeat_(t, pattern, axes_lengths)
  t = stacked(t)
  return apply("repeat", t, pattern, nil, axes_lengths)
end
M["repeat"] = M.repeat_

--- einops.parse_shape(t, pattern): {name = size} for the named axes ("_" skips one)
function M.parse_shape(t, pattern)
  check.tensor(t, "einops.parse_shape", "tensor")
  check.string(pattern, "einops.parse_shape", "pattern")
  local groups = parse(pattern, "parse_shape")
  if #groups ~= t:dim() then
    fail("parse_shape", "the pattern has %d dimensions, the tensor %d", #groups, t:dim())
  end
  local out = {}
  for d, g in ipairs(groups) do
    if #g ~= 1 then fail("parse_shape", "groups are not supported in parse_shape") end
    if g[1] ~= "_" then out[g[1]] = t:size(d) end
  end
  return out
end

-- pack/unpack: the axes before and after "*"
local function star(pattern, fn)
  check.string(pattern, "einops." .. fn, "pattern")
  local groups = parse(pattern, fn)
  local at
  for i, g in ipairs(groups) do
    if #g ~= 1 then fail(fn, "groups are not supported in '%s'", pattern) end
    if g[1] == "*" then at = i end
  end
  if not at then fail(fn, "the pattern '%s' needs one '*'", pattern) end
  return at - 1, #groups - at
end

--- einops.pack(tensors, pattern) -> packed, shapes: the '*' axes of each tensor flattened and concatenated
function M.pack(tensors, pattern)
  check.table(tensors, "einops.pack", "tensors")
  local before, after = star(pattern, "pack")
  local parts, shapes = {}, {}
  for i, t in ipairs(tensors) do
    check.tensor(t, "einops.pack", "tensors[" .. i .. "]")
    local n = t:dim() - before - after
    if n < 0 then fail("pack", "tensors[%d] has %d dimensions, the pattern at least %d", i, t:dim(), before + after) end
    local size, s = t:size(), {}
    local new = {}
    for d = 1, before do new[#new + 1] = size[d] end
    local p = 1
    for d = before + 1, before + n do s[#s + 1] = size[d]; p = p * size[d] end
    new[#new + 1] = p
    for d = before + n + 1, t:dim() do new[#new + 1] = size[d] end
    parts[i], shapes[i] = t:reshape(new), s
  end
  return wick.cat(parts, before + 1), shapes
end

--- einops.unpack(packed, shapes, pattern) -> tensors: pack undone
function M.unpack(packed, shapes, pattern)
  check.tensor(packed, "einops.unpack", "tensor")
  check.table(shapes, "einops.unpack", "packed_shapes")
  local before, after = star(pattern, "unpack")
  if packed:dim() ~= before + after + 1 then
    fail("unpack", "the packed tensor has %d dimensions, the pattern %d", packed:dim(), before + after + 1)
  end
  local counts, total = {}, 0
  for i, s in ipairs(shapes) do
    local p = 1
    for _, v in ipairs(s) do p = p * v end
    counts[i], total = p, total + p
  end
  if total ~= packed:size(before + 1) then
    fail("unpack", "the shapes hold %d elements along '*', the tensor %d", total, packed:size(before + 1))
  end
  local out, start, size = {}, 0, packed:size()
  for i, s in ipairs(shapes) do
    local piece = packed:narrow(before + 1, start + 1, counts[i])
    local new = {}
    for d = 1, before do new[#new + 1] = size[d] end
    for _, v in ipairs(s) do new[#new + 1] = v end
    for d = before + 2, packed:dim() do new[#new + 1] = size[d] end
    out[i], start = piece:reshape(new), start + counts[i]
  end
  return check.list(out) -- (a list as split's: `local mem, h = einops.unpack(...):unpack()`, out[-1])
end

--- einops.einsum(a, b, ..., pattern): wick.einsum with axis names of any length
function M.einsum(...)
  local n = select("#", ...)
  if n == 0 then fail("einsum", "expected tensors and a pattern, got nothing") end
  local pattern = select(n, ...)
  check.string(pattern, "einops.einsum", "pattern")
  local letters, next_letter = {}, 0
  local alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
  local spec = pattern:gsub("%.%.%.", "\1"):gsub("[%w_]+", function(name)
    if not letters[name] then
      next_letter = next_letter + 1
      if next_letter > #alphabet then fail("einsum", "too many axis names") end
      letters[name] = alphabet:sub(next_letter, next_letter)
    end
    return letters[name]
  end):gsub("%s", ""):gsub("\1", "...")
  local operands = {}
  for i = 1, n - 1 do operands[i] = select(i, ...) end
  return wick.einsum(spec, unpack(operands, 1, n - 1))
end

-- einops.layers.torch: Rearrange and Reduce as modules
local nn = wick.nn
-- (the axes' lengths as a table, or by name beside the others, einops' **axes_lengths:
-- Reduce({pattern = p, reduction = "sum", s = 2}))
local function with_named(axes_lengths, named)
  if named == nil then return axes_lengths end
  local all = {}
  for k, v in pairs(axes_lengths or {}) do all[k] = v end
  for k, v in pairs(named) do all[k] = v end
  return all
end
local Rearrange = nn.Module:extend("Rearrange")
function Rearrange:init(pattern, axes_lengths, ...)
  check.string(pattern, "Rearrange", "pattern")
  self.pattern, self.axes_lengths = pattern, lengths_of("Rearrange", with_named(axes_lengths, ...))
end
function Rearrange:forward(x) return M.rearrange(x, self.pattern, self.axes_lengths) end
-- einops' repr: the pattern, then each axis length (name=value; sorted:
-- a Lua table keeps no keyword order)
local function lengths_repr(lengths)
  local names, parts = {}, {}
  for k in pairs(lengths or {}) do names[#names + 1] = k end
  table.sort(names)
  for _, k in ipairs(names) do parts[#parts + 1] = (", %s=%s"):format(k, tostring(lengths[k])) end
  return table.concat(parts)
end
function Rearrange:extra_repr() return ("'%s'%s"):format(self.pattern, lengths_repr(self.axes_lengths)) end
local Reduce = nn.Module:extend("Reduce")
function Reduce:init(pattern, reduction, axes_lengths, ...)
  check.string(pattern, "Reduce", "pattern")
  check_reduction("Reduce", reduction)
  self.pattern, self.reduction = pattern, reduction
  self.axes_lengths = lengths_of("Reduce", with_named(axes_lengths, ...))
end
function Reduce:forward(x) return M.reduce(x, self.pattern, self.reduction, self.axes_lengths) end
function Reduce:extra_repr()
  local r = type(self.reduction) == "string" and ("'%s'"):format(self.reduction) or "<function>"
  return ("'%s', %s%s"):format(self.pattern, r, lengths_repr(self.axes_lengths))
end

--- einops.layers.torch.EinMix(pattern, weight_shape[, bias_shape][, axes_lengths]) (or weight_shape,
--- bias_shape and the lengths by name: EinMix("b n g d -> b n g l", {weight_shape = "g d l",
--- bias_shape = "g l", g = 2, d = 4, l = 3})): einsum of the input with a weight of weight_shape's
--- axes, plus a bias over bias_shape's output axes (size 1 on the others); groups "(a b)" on
--- either side rearranged before and after; einops' uniform He initialisation and errors
local EinMix = nn.Module:extend("EinMix")
local function names_in(groups, into)
  for _, g in ipairs(groups) do for _, a in ipairs(g) do if type(a) == "string" and a ~= "..." then into[a] = true end end end
  return into
end
local function flat(groups)
  local out = {}
  for _, g in ipairs(groups) do for _, a in ipairs(g) do if a ~= 1 then out[#out + 1] = a end end end
  return out
end
local function report(axes, message)
  local list = {}
  for a in pairs(axes) do list[#list + 1] = a end
  if #list > 0 then table.sort(list); fail("EinMix", message, "{" .. table.concat(list, ", ") .. "}") end
end
local function minus(a, ...)
  local out, others = {}, { ... }
  for k in pairs(a) do
    local found = false
    for _, o in ipairs(others) do found = found or o[k] ~= nil end
    if not found then out[k] = true end
  end
  return out
end
function EinMix:init(pattern, ...)
  local fn = "EinMix"
  local args, n = { ... }, select("#", ...)
  local named = n > 0 and type(args[n]) == "table" and getmetatable(args[n]) == nil and args[n] or nil
  if named then n = n - 1 end
  local weight_shape, bias_shape = args[1], args[2]
  local lengths = {}
  for k, v in pairs(named or {}) do
    if k == "weight_shape" then weight_shape = v elseif k == "bias_shape" then bias_shape = v else lengths[k] = v end
  end
  if n > 2 then fail(fn, "takes a pattern, weight_shape and bias_shape, then axes lengths by name") end
  check.string(pattern, "einops.EinMix", "pattern")
  check.string(weight_shape, "einops.EinMix", "weight_shape")
  if bias_shape ~= nil then check.string(bias_shape, "einops.EinMix", "bias_shape") end
  lengths_of(fn, lengths)
  local left, right = split(pattern, fn)
  local weight = parse(weight_shape, fn)
  local lid, rid, wid = names_in(left, {}), names_in(right, {}), names_in(weight, {})
  report(minus(rid, lid, wid), "Unrecognized identifiers on the right side of EinMix %s")
  if has_ellipsis(weight) then fail(fn, "Ellipsis is not supported in weight, as its shape should be fully specified") end
  if has_ellipsis(left) ~= has_ellipsis(right) then fail(fn, "Ellipsis in EinMix should be on both sides, %s", pattern) end
  for _, side in ipairs({ left, right, weight }) do
    for _, g in ipairs(side) do
      for _, a in ipairs(g) do
        if type(a) == "number" and a ~= 1 then fail(fn, "Anonymous axes (numbers) are not allowed in EinMix") end
        if g.paren and a == "..." and side == left then fail(fn, "Ellipsis on left side can't be in parenthesis, got %s", pattern) end
      end
    end
  end
  if weight_shape:find("[()]") then fail(fn, "Parenthesis is not allowed in weight shape: %s", weight_shape) end
  local function composed(groups)
    for _, g in ipairs(groups) do if #g ~= 1 or (g.paren and g[1] == "...") then return true end end
    return false
  end
  local lflat, rflat, wflat = flat(left), flat(right), flat(weight)
  if composed(left) then
    local pre = {}
    for k, v in pairs(lengths) do if lid[k] then pre[k] = v end end
    self.pre_rearrange = Rearrange(pattern:match("^(.-)%->") .. "-> " .. table.concat(lflat, " "), pre)
  end
  if composed(right) then self.post_rearrange = Rearrange(table.concat(rflat, " ") .. " ->" .. pattern:match("%->(.*)$")) end
  for a in pairs(wid) do if not lengths[a] then fail(fn, "Dimension %s of weight should be specified", a) end end
  report(minus(lengths, lid, wid), "Axes %s are not used in pattern")
  report(minus(wid, lid, rid), "Weight axes %s are redundant")
  local wsize, fan_in = {}, 1
  for i, a in ipairs(wflat) do
    wsize[i] = lengths[a]
    if not rid[a] then fan_in = fan_in * lengths[a] end
  end
  local bsize
  if bias_shape ~= nil then
    local bid = names_in(parse(bias_shape, fn), {})
    report(minus(bid, rid), "Bias axes %s not present in output")
    report(minus(bid, lengths), "Sizes not provided for bias axes %s")
    bsize = {}
    local used = false
    for _, a in ipairs(rflat) do
      if a == "..." then
        if used then fail(fn, "all bias dimensions should go after ellipsis in the output") end
      elseif bid[a] then
        bsize[#bsize + 1], used = lengths[a], true
      else
        bsize[#bsize + 1] = 1
      end
    end
  end
  local wb, bb = math.sqrt(3 / fan_in), math.sqrt(1 / fan_in)
  self.weight = nn.Parameter(wick.zeros(wsize):uniform_(-wb, wb))
  if bsize then self.bias = nn.Parameter(wick.zeros(bsize):uniform_(-bb, bb)) end
  -- the einsum with one letter an axis (sorted names), "..." kept
  local all, ids = minus(lid), {}
  for k in pairs(rid) do all[k] = true end
  for k in pairs(wid) do all[k] = true end
  for k in pairs(all) do ids[#ids + 1] = k end
  table.sort(ids)
  if #ids > 52 then fail(fn, "too many axis names") end
  local letter, alphabet = {}, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
  for i, k in ipairs(ids) do letter[k] = alphabet:sub(i, i) end
  letter["..."] = "..."
  local function spec(list)
    local out = {}
    for i, a in ipairs(list) do out[i] = letter[a] end
    return table.concat(out)
  end
  self.einsum_pattern = spec(lflat) .. "," .. spec(wflat) .. "->" .. spec(rflat)
  self.pattern, self.weight_shape, self.bias_shape, self.axes_lengths = pattern, weight_shape, bias_shape, lengths
end
function EinMix:forward(input)
  if self.pre_rearrange then input = self.pre_rearrange(input) end
  local result = wick.einsum(self.einsum_pattern, input, self.weight)
  if self.bias then result = result + self.bias end
  if self.post_rearrange then result = self.post_rearrange(result) end
  return result
end
function EinMix:extra_repr()
  return ("'%s', '%s'%s%s"):format(self.pattern, self.weight_shape,
    self.bias_shape and (", '%s'"):format(self.bias_shape) or "", lengths_repr(self.axes_lengths))
end

M.Rearrange, M.Reduce, M.EinMix = Rearrange, Reduce, EinMix
M.layers = check.strict({ Rearrange = Rearrange, Reduce = Reduce, EinMix = EinMix }, "wick.einops.layers")
rawset(M.layers, "torch", M.layers)

return check.strict(M, "wick.einops")
