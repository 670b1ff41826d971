-- wick.ops: the ops a transformer script uses, written over the core's ops so
-- that they run on every backend and under autograd: tril/triu, split/chunk,
-- argsort/topk (over the C sort), multinomial, randint/randperm, clamp with
-- tensor bounds, where with numbers, einsum, and the in-place random fills.
-- Sort and the scans (cumsum, cumprod) are C (src/core/sort.c, src/lua/ops_lua.c).
-- Dimensions and indices are 1-based, as everywhere in wick.
local core = require("wick.core")
local check = require("wick.argcheck")

local Tensor = core.Tensor
local tensor_mt = core._mt
local is_tensor = check.is_tensor
local floor, huge = math.floor, math.huge
local unpack = table.unpack or unpack
-- a 0-dim real tensor where PyTorch takes "float or Tensor" (k-diffusion's
-- linspace(t_start, t_end, n)) is the number it holds
local function number_of(v)
  if is_tensor(v) and v:dim() == 0 and not v:is_complex() then return v:item() end
  return v
end
-- a one-element integer tensor where PyTorch takes an int (ViLT's multinomial(p, mask.max())) is
-- the number it holds; a float one stays, for check.int's error
local function int_of(v)
  if is_tensor(v) and v:numel() == 1 and not v:is_floating_point() and not v:is_complex() then return v:item() end
  return v
end

return function(wick)
  local meshgrid_first -- (set with Tensor.unpack below)
  local ops = {}

  -- t:name_(...) made of f (name's out-of-place form): the result written back into t (t's version
  -- bumps; autograd sees a copy_); a result t's dtype cannot hold (PyTorch's can_cast: an integer t's
  -- true_divide_) and a leaf that requires grad are PyTorch's errors, named name_
  local function in_place_form(name, f)
    return function(t, ...)
      check.tensor(t, name .. "_", "self")
      if t.requires_grad and t.is_leaf and wick.is_grad_enabled() then
        check.fail(name .. "_", "a leaf tensor that requires grad is used in an in-place operation; "
          .. "wrap the update in wick.no_grad(...)")
      end
      local r = f(t, ...)
      if is_tensor(r) and r.dtype ~= t.dtype and not wick.can_cast(r.dtype, t.dtype) then
        check.fail(name .. "_", "result type %s can't be cast to the desired output type %s", r.dtype, t.dtype)
      end
      return t:copy_(r)
    end
  end

  local dtype_info = core.dtype_info
  local function is_float(dtype) return dtype_info[dtype].is_floating end

  local wrap_dim = check.wrap_dim

  -- The value of `size...` arguments as one array: numbers (or 0-dim integer tensors), tables of
  -- them, or both (Python's x.repeat(*shape, 2) is x:repeat_tensor(shape, 2), as wl_sizes reads
  -- them); one table may be PyTorch's keyword form, {[keyword] = sizes} (torch.tile(x, dims=(B, 1)),
  -- x.repeat(repeats=(2, 1)))
  local function size_arg(fn, keyword, ...)
    local n, first = select("#", ...), ...
    if n == 1 and type(first) == "table" and not is_tensor(first) and first[keyword] ~= nil then
      for k in pairs(first) do
        if k ~= keyword then check.fail(fn, "got %s beside its option '%s'", type(k) == "string" and "another option" or "sizes", keyword) end
      end
      return size_arg(fn, keyword, first[keyword])
    end
    local sizes = {}
    for i = 1, n do -- (an integer tensor of one element too: StyleGAN's y.repeat(G, 1, H, W))
      local a = select(i, ...)
      if type(a) == "table" and not is_tensor(a) then
        for k in pairs(a) do
          if type(k) ~= "number" then check.fail(fn, "unknown option '%s' (it takes %s)", tostring(k), keyword) end
        end
        for j = 1, #a do sizes[#sizes + 1] = check.int(int_of(a[j]), fn, "size", 0) end
      else
        sizes[#sizes + 1] = check.int(int_of(a), fn, "size", 0)
      end
    end
    return sizes
  end

  -- ---- tril / triu ----

  local function triangle(t, k, lower, fn, opts)
    check.tensor(t, fn, "self")
    if type(k) == "table" and not is_tensor(k) then k, opts = nil, k end
    if opts ~= nil then
      local o = check.options(opts, fn, { diagonal = "integer" })
      if k ~= nil and o.diagonal ~= nil then check.fail(fn, "got diagonal both by position and as an option") end
      k = k == nil and o.diagonal or k
    end
    k = check.opt_int(k, fn, "diagonal", 0)
    if t:dim() < 2 then check.fail(fn, "input tensor must have at least 2 dimensions, got %d", t:dim()) end
    local r, c = t:size(-2), t:size(-1)
    local opts = { dtype = "int64", device = t.device }
    local offset = wick.arange(c, opts):view(1, c) - wick.arange(r, opts):view(r, 1) -- column - row
    local keep = lower and offset:le(k) or offset:ge(k)
    return core.where(keep, t, wick.zeros({}, { dtype = t.dtype, device = t.device }))
  end
  function Tensor.tril(t, k, opts) return triangle(t, k, true, "tril", opts) end
  function Tensor.triu(t, k, opts) return triangle(t, k, false, "triu", opts) end
  function Tensor.tril_(t, k, opts) return check.tensor(t, "tril_", "self"):copy_(triangle(t, k, true, "tril_", opts)) end
  function Tensor.triu_(t, k, opts) return check.tensor(t, "triu_", "self"):copy_(triangle(t, k, false, "triu_", opts)) end

  -- ---- split / chunk / unbind: arrays of views ----
  -- (lists, as model:parameters(): parts[-1] the last; a method or arithmetic on the list says to unpack it)

  -- a trailing {dim = d} stands for the dim argument (PyTorch's keyword)
  local function dim_option(dim, fn)
    if type(dim) == "table" and not is_tensor(dim) then return check.options(dim, fn, { dim = "integer" }).dim end
    return dim
  end

  -- t:split(split_size_or_sizes[, dim]), or PyTorch's keywords in one table:
  -- t:split({split_size = {2, 4}, dim = 2}) (torch.split's split_size_or_sections too)
  local SPLIT = { split_size = "integer|table", split_size_or_sections = "integer|table", dim = "integer" }
  function Tensor.split(t, ...)
    check.tensor(t, "split", "self")
    local o = check.positional("split", { "split_size", "dim" }, SPLIT, ...)
    if o.split_size ~= nil and o.split_size_or_sections ~= nil then
      check.fail("split", "got both split_size and split_size_or_sections (the same argument)")
    end
    local split_size, dim = o.split_size or o.split_size_or_sections, o.dim
    if split_size == nil then check.fail("split", "missing argument 'split_size' (a size, or a list of sizes)") end
    dim = wrap_dim(t, dim == nil and 1 or dim, "split")
    if t:dim() == 0 then check.fail("split", "cannot split a 0-dim tensor") end
    local n = t:size(dim)
    local parts = {}
    if type(split_size) == "table" then
      local total = 0
      -- (0-dim integer tensors are their numbers: Deformable DETR's [H_ * W_ for H_, W_ in shapes])
      local sizes = {}
      for i = 1, #split_size do
        local v = split_size[i]
        sizes[i] = is_tensor(v) and not v:is_floating_point() and v.dtype ~= "bool" and number_of(v) or v
      end
      split_size = sizes
      for i = 1, #split_size do
        check.int(split_size[i], "split", "split_size_or_sections[" .. i .. "]", 0)
        total = total + split_size[i]
      end
      if total ~= n then
        check.fail("split", "split_with_sizes expects split_sizes to sum exactly to %d (input tensor's size at dimension %d), but got split_sizes={%s}",
          n, dim, table.concat(split_size, ", "))
      end
      local at = 1
      for i = 1, #split_size do
        parts[i] = t:narrow(dim, at, split_size[i])
        at = at + split_size[i]
      end
      return check.list(parts)
    end
    check.int(split_size, "split", "split_size", 0)
    if split_size == 0 and n > 0 then check.fail("split", "split_size can only be 0 if dimension size is 0, but got dimension size of %d", n) end
    if n == 0 then return check.list({ t:narrow(dim, 1, 0) }) end
    for at = 1, n, split_size do parts[#parts + 1] = t:narrow(dim, at, math.min(split_size, n - at + 1)) end
    return check.list(parts)
  end

  --- t:split_with_sizes(split_sizes[, dim = 1]) (or {split_sizes =, dim =}): PyTorch's split into a list of sizes
  -- (Depth Pro's torch.split_with_sizes(h, n_patches))
  function Tensor.split_with_sizes(t, ...)
    check.tensor(t, "split_with_sizes", "self")
    local o = check.positional("split_with_sizes", { "split_sizes", "dim" }, { split_sizes = "table", dim = "integer" }, ...)
    if o.split_sizes == nil then check.fail("split_with_sizes", "missing argument 'split_sizes' (a list of sizes)") end
    return t:split(o.split_sizes, o.dim or 1)
  end

  function Tensor.chunk(t, ...)
    check.tensor(t, "chunk", "self")
    local o = check.positional("chunk", { "chunks", "dim" }, { chunks = "integer", dim = "integer" }, ...)
    local chunks, dim = check.int(o.chunks, "chunk", "chunks", 1), o.dim
    dim = wrap_dim(t, dim == nil and 1 or dim, "chunk")
    if t:dim() == 0 then check.fail("chunk", "cannot chunk a 0-dim tensor") end
    local n = t:size(dim)
    if n == 0 then -- (an empty dim gives `chunks` empty parts, as PyTorch's: a, b = x.chunk(2) of an empty batch)
      if chunks > 2 ^ 20 then -- (each part is a tensor object: 2^28 of them are gigabytes, past a Lua table's size)
        check.fail("chunk", "%d empty parts of an empty dim are more than a list holds here (at most 2^20)", chunks)
      end
      local parts = {}
      for i = 1, chunks do parts[i] = t:narrow(dim, 1, 0) end
      return check.list(parts)
    end
    return Tensor.split(t, math.max(1, math.ceil(n / chunks)), dim)
  end

  -- t:tensor_split(sections or indices[, dim = 1]) (NumPy's array_split): n parts
  -- whose sizes differ by at most one (the first ones larger), or the parts
  -- between the split points: {2, 3} gives elements 1..2, 3, and 4.. (PyTorch's
  -- input[:2], input[2:3], input[3:]: a point k splits after the k-th element)
  local TENSOR_SPLIT = { sections = "integer", indices = "table|tensor", tensor_indices_or_sections = "integer|table|tensor",
    indices_or_sections = "integer|table|tensor", dim = "integer" }
  local function split_points(fn, t, how, dim)
    check.tensor(t, fn, "self")
    if t:dim() == 0 then check.fail(fn, "expected at least a 1-dimensional tensor, but got a tensor with 0 dims instead") end
    dim = wrap_dim(t, dim == nil and 1 or dim, fn)
    local n = t:size(dim)
    if is_tensor(how) then
      if how:is_floating_point() or how:dim() > 1 then
        check.fail(fn, "tensor_indices_or_sections must be a zero-dimension or one-dimension integer tensor")
      end
      how = how:dim() == 0 and how:item() or how:totable()
    end
    local parts = {}
    if type(how) == "number" then
      check.int(how, fn, "sections", 1)
      if how > n and how > 2 ^ 20 then -- (as many tensors, nearly all empty)
        check.fail(fn, "%.0f sections of a dimension of size %d: at most %d, or the size itself", how, n, 2 ^ 20)
      end
      local base, extra, at = math.floor(n / how), n % how, 1
      for i = 1, how do
        local len = base + (i <= extra and 1 or 0)
        parts[i], at = t:narrow(dim, at, len), at + len
      end
      return check.list(parts)
    end
    check.table(how, fn, "indices")
    local prev = 0
    for i = 1, #how + 1 do
      local k = how[i]
      if i <= #how then check.int(k, fn, "indices[" .. i .. "]") end
      local stop = i <= #how and math.max(0, math.min(k < 0 and k + n or k, n)) or n
      local start = math.min(prev, n)
      parts[i] = t:narrow(dim, start + 1, math.max(0, stop - start))
      prev = math.max(prev, stop)
    end
    return check.list(parts)
  end
  function Tensor.tensor_split(t, ...)
    local o = check.positional("tensor_split", { "indices_or_sections", "dim" }, TENSOR_SPLIT, ...)
    local how = o.indices_or_sections or o.tensor_indices_or_sections or o.sections or o.indices
    if how == nil then check.fail("tensor_split", "missing argument 'indices_or_sections'") end
    return split_points("tensor_split", t, how, o.dim)
  end
  -- hsplit, vsplit, dsplit (NumPy's): tensor_split along dim 2 (1 for a vector), 1 and 3,
  -- a number of sections dividing the size exactly; PyTorch's keywords in a table: {sections = n}
  -- or {indices = {...}} (a table with no keys but a list is the list of indices)
  local NP_SPLIT = { sections = "integer", indices = "table|tensor" }
  local function np_split(fn, dim_of, min_dims)
    return function(t, how, extra)
      check.tensor(t, fn, "self")
      if extra ~= nil then
        if type(extra) == "table" and not is_tensor(extra) and getmetatable(extra) == nil then
          check.fail(fn, "either the sections / indices or an options table, not both")
        end
        check.fail(fn, "expected 2 arguments (input and sections or indices), got a third (%s)", check.describe(extra))
      end
      if type(how) == "table" and getmetatable(how) == nil and next(how) ~= nil and #how == 0 then
        local o = check.options(how, fn, NP_SPLIT)
        if o.sections ~= nil and o.indices ~= nil then check.fail(fn, "got both sections and indices") end
        how = o.sections
        if how == nil then how = o.indices end
        if how == nil then check.fail(fn, "missing argument 'sections' or 'indices'") end
      end
      if how == nil then check.fail(fn, "missing argument 'sections' or 'indices'") end
      if t:dim() < min_dims then
        check.fail(fn, "%s requires a tensor with at least %d dimension%s, but got a tensor with %d dimensions!",
          fn, min_dims, min_dims > 1 and "s" or "", t:dim())
      end
      local dim = dim_of(t)
      if type(how) == "number" then check.int(how, fn, "sections", 1) end
      if type(how) == "number" and t:size(dim) % how ~= 0 then
        check.fail(fn, "%s attempted to split along dimension %d, but the size of the dimension %d is not divisible by the split_size %d!",
          fn, dim, t:size(dim), how)
      end
      return split_points(fn, t, how, dim)
    end
  end
  Tensor.hsplit = np_split("hsplit", function(t) return t:dim() == 1 and 1 or 2 end, 1)
  Tensor.vsplit = np_split("vsplit", function() return 1 end, 2)
  Tensor.dsplit = np_split("dsplit", function() return 3 end, 3)

  function Tensor.unbind(t, dim)
    check.tensor(t, "unbind", "self")
    dim = dim_option(dim, "unbind")
    dim = wrap_dim(t, dim == nil and 1 or dim, "unbind")
    if t:dim() == 0 then check.fail("unbind", "cannot unbind a 0-dim tensor") end
    local parts = {}
    for i = 1, t:size(dim) do parts[i] = t:select(dim, i) end
    return check.list(parts)
  end
  --- t:unpack([dim = 1]): the slices along dim as several results, Python's `q, k, v = t`
  --- (`local q, k, v = t:unpack()`, Lua's unpack not taking a tensor)
  -- (the first grid of each wick.meshgrid call, with their count: its t:unpack() is a port's
  -- `gx, gy = wick.meshgrid(...):unpack()`, which would unpack that grid's rows)
  meshgrid_first = setmetatable({}, { __mode = "k" })
  function Tensor.unpack(t, dim)
    check.tensor(t, "unpack", "self")
    if dim == nil and meshgrid_first[t] then
      check.fail("unpack", "this is the first of wick.meshgrid's %d grids, which it returns as several values: "
        .. "local gx, gy = wick.meshgrid(...) (no :unpack()); t:unpack(1) unpacks this grid's rows", meshgrid_first[t])
    end
    if t:dim() == 0 then check.fail("unpack", "cannot unpack a 0-dim tensor (iteration over a 0-d tensor)") end
    return unpack(Tensor.unbind(t, dim))
  end

  -- ---- argsort / topk / msort ----

  function Tensor.argsort(t, dim, descending)
    check.tensor(t, "argsort", "self")
    if type(dim) == "table" then -- t:argsort{dim = 1, descending = true}
      local o = check.options(dim, "argsort", { dim = "integer", descending = "boolean", stable = "boolean" })
      dim, descending = o.dim, o.descending
    end
    if dim ~= nil then wrap_dim(t, dim, "argsort") end
    local _, idx = Tensor.sort(t, dim, descending)
    return idx
  end

  local TOPK = { dim = "integer", largest = "boolean", sorted = "boolean" }
  local TOPK_K = { k = "integer|tensor", dim = "integer", largest = "boolean", sorted = "boolean" }
  --- t:topk(k[, dim = -1[, largest = true[, sorted = true]]]) or t:topk(k, {dim =, largest =, sorted =})
  --- (or t:topk{k =, dim =, ...}): values, indices (1-based); ties come in no promised order, as in PyTorch.
  function Tensor.topk(t, k, dim, largest, sorted)
    check.tensor(t, "topk", "self")
    if type(k) == "table" and not is_tensor(k) and dim == nil then -- all by keyword: torch.topk(x, k=1, dim=-1)
      local o = check.options(k, "topk", TOPK_K)
      k, dim, largest, sorted = o.k, o.dim, o.largest, o.sorted
    end
    k = number_of(k) -- (DeepSpeed's capacity, a 0-dim int64 tensor)
    check.int(k, "topk", "k", 0)
    if type(dim) == "table" then
      local o = check.options(dim, "topk", TOPK)
      dim, largest, sorted = o.dim, o.largest, o.sorted
    end
    dim = wrap_dim(t, dim == nil and -1 or dim, "topk")
    largest = check.opt_boolean(largest, "topk", "largest", true)
    check.opt_boolean(sorted, "topk", "sorted", true)
    local n = t:dim() == 0 and 1 or t:size(dim)
    if k > n then check.fail("topk", "selected index k out of range (k = %d, but dimension %d has size %d)", k, dim, n) end
    return Tensor._topk(t, k, dim, largest)
  end

  -- t:sort(1, {descending = true}), t:topk(2, 1, {largest = false}): some arguments by position, the
  -- rest in a trailing options table (Lovasz's torch.sort(errors, 0, descending=True))
  local function trailing_options(name, names, f)
    local known = {}
    for _, k in ipairs(names) do known[k] = true end
    return function(t, ...)
      local n = select("#", ...)
      local last = n >= 2 and select(n, ...) or nil
      if not (type(last) == "table" and getmetatable(last) == nil and next(last) ~= nil and #last == 0) then
        return f(t, ...)
      end
      local args = { ... }
      args[n] = nil
      for k, v in pairs(check.axis_as_dim(name, last)) do
        if not known[k] then check.fail(name, "unknown option '%s' (expected %s)", tostring(k), table.concat(names, ", ")) end
        for i, key in ipairs(names) do
          if key == k then
            if args[i] ~= nil then check.fail(name, "argument '%s' given both by position and as an option", k) end
            args[i] = v
          end
        end
      end
      return f(t, unpack(args, 1, #names))
    end
  end
  Tensor.sort = trailing_options("sort", { "dim", "descending", "stable" }, Tensor.sort)
  Tensor.argsort = trailing_options("argsort", { "dim", "descending" }, Tensor.argsort)
  Tensor.topk = trailing_options("topk", { "k", "dim", "largest", "sorted" }, Tensor.topk)

  function Tensor.msort(t) return (Tensor.sort(check.tensor(t, "msort", "self"), 1)) end
  function Tensor.cumsum_(t, dim, opts) return check.tensor(t, "cumsum_", "self"):copy_(Tensor.cumsum(t, dim, opts)) end
  function Tensor.cumprod_(t, dim, opts) return check.tensor(t, "cumprod_", "self"):copy_(Tensor.cumprod(t, dim, opts)) end

  -- ---- clamp with one bound, tensor bounds ----

  local clamp_numbers, clamp_numbers_ = Tensor.clamp, Tensor.clamp_
  -- (min and max by name, in a table alone or after min: clamp(x, -1, {max = 1}))
  local function bounds(lo, hi)
    if type(lo) == "table" and not is_tensor(lo) and hi == nil then
      check.options(lo, "clamp", { min = "float|tensor", max = "float|tensor" })
      return lo.min, lo.max
    end
    if type(hi) == "table" and not is_tensor(hi) then
      check.options(hi, "clamp", { max = "float|tensor", min = "float|tensor" })
      if hi.min ~= nil then check.fail("clamp", "argument 'min' given both by position and as an option") end
      return lo, hi.max
    end
    return lo, hi
  end
  local function fractional(v) return type(v) == "number" and v == v and v % 1 ~= 0 end
  local function clamp_any(t, lo, hi, fn)
    check.tensor(t, fn, "self")
    -- an integer tensor with a fractional bound is promoted first, as PyTorch's result type
    -- (x-transformers' mask.sum().clamp(min = 1e-5) is float32 1e-5, not int64 1)
    if (fractional(lo) or fractional(hi) or lo ~= lo or hi ~= hi) and not t:is_floating_point() and not t:is_complex() then
      t = t:to(wick.get_default_dtype())
    end
    -- a NaN bound makes every value NaN, as PyTorch's clamp (with a zero gradient: x * 0)
    if lo ~= lo or hi ~= hi then return t * 0 + (0 / 0) end
    if not is_tensor(lo) and not is_tensor(hi) then return clamp_numbers(t, lo, hi) end
    if lo == nil and hi == nil then check.fail(fn, "at least one of min and max must be given") end
    local r = t
    -- (a bound that does not broadcast is named as clamp's, not as maximum's)
    local function bound(op, x, b)
      local ok, v = pcall(op, x, b)
      if not ok then error((tostring(v):gsub("%f[%w]m[axinmu]+mum: ", fn .. ": ", 1)), 0) end
      return v
    end
    if is_tensor(lo) then r = bound(wick.maximum, r, lo) elseif lo ~= nil then r = clamp_numbers(r, check.number(lo, fn, "min")) end
    if is_tensor(hi) then r = bound(wick.minimum, r, hi) elseif hi ~= nil then r = clamp_numbers(r, nil, check.number(hi, fn, "max")) end
    return r
  end
  function Tensor.clamp(t, lo, hi)
    lo, hi = bounds(lo, hi)
    return clamp_any(t, lo, hi, "clamp")
  end
  function Tensor.clamp_(t, lo, hi)
    lo, hi = bounds(lo, hi)
    if not is_tensor(lo) and not is_tensor(hi) and lo == lo and hi == hi and not ((fractional(lo) or fractional(hi)) and is_tensor(t)
      and not t:is_floating_point() and not t:is_complex()) then
      return clamp_numbers_(t, lo, hi)
    end
    local r = clamp_any(t, lo, hi, "clamp_")
    if r:is_floating_point() and not t:is_floating_point() then -- (YOLOv3's gj.clamp_(0, gain[3] - 1))
      check.fail("clamp_", "result type Float can't be cast to the desired output type %s (a float bound on an "
        .. "integer tensor, as PyTorch refuses it)", t.dtype)
    end
    return t:copy_(r)
  end
  function Tensor.clamp_min(t, v)
    if v == nil then check.expected("clamp_min", "min", "a number or a tensor", v) end
    return clamp_any(t, v, nil, "clamp_min")
  end
  function Tensor.clamp_max(t, v)
    if v == nil then check.expected("clamp_max", "max", "a number or a tensor", v) end
    return clamp_any(t, nil, v, "clamp_max")
  end
  function Tensor.clamp_min_(t, v) return check.tensor(t, "clamp_min_", "self"):copy_(Tensor.clamp_min(t, v)) end
  function Tensor.clamp_max_(t, v) return check.tensor(t, "clamp_max_", "self"):copy_(Tensor.clamp_max(t, v)) end
  Tensor.clip, Tensor.clip_ = Tensor.clamp, Tensor.clamp_

  -- ---- where with numbers on either side (the C binding takes them) ----
  -- Two integral numbers give int64, like torch.where(cond, 1, 0).
  local core_where = core.where
  function ops.where(cond, a, b, extra)
    if extra ~= nil then check.extra("where", extra) end
    -- a Lua boolean (t:any(), t:all()) is the 0-dim bool tensor PyTorch's would be
    -- (T5's torch.where(torch.isinf(h).any(), max - 1000, max))
    if type(cond) == "boolean" and (a ~= nil or b ~= nil) then
      -- beside tensors of values it is a ported comparison gone wrong: Lua's == and ~= between a
      -- tensor and a number give a constant boolean (guided-diffusion's where(t == 0, nll, kl))
      local function values(v) return is_tensor(v) and v:dim() > 0 end
      if values(a) or values(b) then
        check.fail("where", "the condition is a Lua boolean (%s), not a tensor: Lua's == and ~= between a "
          .. "tensor and a number are always false and true, so write t:eq(x) or t:ne(x); `not mask` is always "
          .. "false too (Python's ~mask is mask:logical_not()); a boolean from t:any() or t:all() chooses with "
          .. "Lua's `if`", tostring(cond))
      end
      local like = is_tensor(a) and a or is_tensor(b) and b or nil
      cond = wick.tensor(cond, { device = like and like.device or nil })
    end
    if type(cond) == "boolean" then -- (where(indices == i): DeepSeek-V3's MoE dispatch ported as it is)
      check.fail("where", "the condition is a Lua boolean (%s), not a tensor: Lua's == and ~= between a tensor and "
        .. "a number are always false and true, so write t:eq(x) or t:ne(x)", tostring(cond))
    end
    check.tensor(cond, "where", "condition")
    if a == nil and b == nil then -- torch.where(cond): nonzero as a tuple, one 1-based index tensor per dim
      return unpack(cond:nonzero({ as_tuple = true }))
    end
    return core_where(cond, a, b)
  end
  function Tensor.where(t, cond, other) return ops.where(cond, check.tensor(t, "where", "self"), other) end

  -- ---- random numbers ----

  local function float_draws(fn, t)
    return wick._rand(t:size(), { dtype = "float64", device = t.device })
  end

  --- wick.randint([low = 0, ]high, size[, opts]): integers in [low, high) (high excluded), int64 by default.
  --- low, high and size may come by name as in PyTorch: wick.randint(9, {size = {3}}).
  local RANDINT = { low = "integer|tensor", high = "integer|tensor", size = "table", dtype = "dtype", device = "device",
    requires_grad = "boolean" }
  -- a trailing table of options: plain, no array part, not empty (an empty table is the size of a 0-dim result)
  local function is_options(v) return type(v) == "table" and getmetatable(v) == nil and v[1] == nil and next(v) ~= nil end
  -- low, high, size and the options of randint(...): positional ones in PyTorch's two
  -- orders (high, size) and (low, high, size), the rest by name; a positional number
  -- before a named high is low, as PyTorch's randint(2, high = 9, size = (3,)) has it
  local function randint_args(...)
    local n = select("#", ...)
    local args = { ... }
    local opts = nil
    if n > 0 and is_options(args[n]) then opts, n = args[n], n - 1 end
    opts = check.options(opts, "randint", RANDINT)
    local pos = {}
    if n > 0 and type(args[n]) == "table" and not is_tensor(args[n]) then pos.size, n = args[n], n - 1 end
    if n > 2 and not pos.size and type(args[3]) == "number" then -- (TD3's np.random.randint(0, size, size=batch))
      check.fail("randint", "size must be a table of sizes, as PyTorch's tuple: randint(%s, %s, {%s})",
        tostring(args[1]), tostring(args[2]), tostring(args[3]))
    end
    if n > 2 then check.fail("randint", "expected at most 3 positional arguments (low, high, size), got %d", n + (pos.size and 1 or 0)) end
    if n == 2 then pos.low, pos.high = args[1], args[2]
    elseif n == 1 and opts.high ~= nil then pos.low = args[1]
    elseif n == 1 then pos.high = args[1] end
    for _, name in ipairs({ "low", "high", "size" }) do
      if opts[name] ~= nil then
        if pos[name] ~= nil then check.fail("randint", "argument '%s' given both by position and as an option", name) end
        pos[name] = opts[name]
      end
    end
    return pos.low or 0, pos.high, pos.size, opts
  end
  function ops.randint(...)
    local low, high, size, opts = randint_args(...)
    low, high = number_of(low), number_of(high) -- (0-dim tensors: HashNeRF's randint(0, resolution - cube_size, (3,)))
    check.int(low, "randint", "low")
    -- high may reach 2^63 (k-diffusion's seed = torch.randint(0, 2 ** 63 - 1, [])): a LuaJIT int64
    -- or a whole number past 2^53 (draws then take 53 bits of it)
    if type(high) == "cdata" then high = tonumber(high) end
    if not (type(high) == "number" and high == floor(high) and high > 2 ^ 53 and high <= 2 ^ 63) then
      check.int(high, "randint", "high")
    end
    check.table(size, "randint", "size")
    if low >= high then
      check.fail("randint", "random_ expects 'from' to be less than 'to', but got from=%d >= to=%d", low, high)
    end
    local dtype = opts.dtype or "int64"
    local u = wick._rand(size, { dtype = "float64", device = opts.device })
    -- (u * range) >= 0, so the conversion's truncation is the floor
    local r = (u * (high - low)):to("int64")
    -- u * range rounds up to range in the last bit only (past 2^53, u < 1 keeps it below)
    if high - low <= 2 ^ 53 then r = r:clamp(nil, high - low - 1) end
    if low ~= 0 then r = r + low end
    r = r:to(dtype)
    -- PyTorch's rule: only a floating result may require grad (the default int64 raises)
    if opts.requires_grad then r:requires_grad_(true) end
    return r
  end

  --- wick.randint_like(t, [low = 0, ]high[, opts]): randint with t's shape, dtype and device.
  local RANDINT_LIKE = { dtype = "dtype", device = "device", requires_grad = "boolean" }
  function ops.randint_like(t, a, b, opts)
    check.tensor(t, "randint_like", "input")
    local low, high = a, b
    if b == nil or type(b) == "table" then low, high, opts = 0, a, b end
    -- low and high by name too (score_sde's randint_like(data, low=0, high=2))
    if type(high) == "table" and not is_tensor(high) and opts == nil then
      local o, rest = high, {}
      for k, v in pairs(o) do if k ~= "low" and k ~= "high" then rest[k] = v end end
      low, high, opts = o.low or low, o.high, rest
      if high == nil then check.fail("randint_like", "missing required argument 'high'") end
    end
    opts = check.options(opts, "randint_like", RANDINT_LIKE)
    return ops.randint(low, high, t:size(), { dtype = opts.dtype or t.dtype, device = opts.device or t.device,
      requires_grad = opts.requires_grad })
  end

  --- wick.normal(mean, std[, size][, opts]): numbers need a size; tensors broadcast (mean + std * N(0, 1)).
  local NORMAL = { dtype = "dtype", device = "device", requires_grad = "boolean" }
  -- a draw r from tensors that require grad (normal's mean and std, bernoulli's p): in the graph, as PyTorch's
  -- NormalBackward and BernoulliBackward, with zero gradients to them (the nodes made on first use)
  local draw_nodes = {}
  local function zero_grad_draw(name, r, a, b)
    if not (wick.is_grad_enabled() and ((is_tensor(a) and a.requires_grad) or (is_tensor(b) and b.requires_grad))) then
      return r
    end
    local fn = draw_nodes[name]
    if not fn then
      fn = wick.autograd.Function:extend(name)
      function fn.forward(ctx, value, x, y)
        ctx.x, ctx.y = x, y
        return value:clone()
      end
      function fn.backward(ctx)
        local zero = function(v) return is_tensor(v) and wick.zeros_like(v) or nil end
        return nil, zero(ctx.x), zero(ctx.y)
      end
      draw_nodes[name] = fn
    end
    return fn.apply(r, is_tensor(a) and a or nil, is_tensor(b) and b or nil)
  end

  function ops.normal(mean, std, size, opts)
    -- PyTorch's keywords: normal{mean =, std =, size =}, normal(0, 1, {size = {2, 3}})
    if type(mean) == "table" and getmetatable(mean) == nil and std == nil and size == nil and opts == nil then
      local o = mean
      mean, std, size, opts = o.mean, o.std, o.size, {}
      for k, v in pairs(o) do if k ~= "mean" and k ~= "std" and k ~= "size" then opts[k] = v end end
      if mean == nil then mean = 0 end
      if std == nil then std = 1 end
    end
    if type(size) == "table" and opts == nil and not size[1] and next(size) ~= nil then size, opts = nil, size end
    if type(opts) == "table" and opts.size ~= nil and getmetatable(opts) == nil then
      if size ~= nil then check.fail("normal", "size given both by position and as an option") end
      local rest = {}
      for k, v in pairs(opts) do if k ~= "size" then rest[k] = v end end
      size, opts = opts.size, rest
    end
    opts = check.options(opts, "normal", NORMAL)
    if not is_tensor(mean) and not is_tensor(std) then
      check.number(mean, "normal", "mean")
      check.number(std, "normal", "std", 0)
      check.table(size, "normal", "size")
      local r = wick._randn(size, { dtype = opts.dtype, device = opts.device }) * std + mean
      if opts.requires_grad then r:requires_grad_(true) end
      return r
    end
    if size ~= nil then check.fail("normal", "size is taken only when mean and std are both numbers") end
    if std == nil and is_tensor(mean) then std = 1 end -- normal(mean_tensor): PyTorch's std = 1
    if not is_tensor(std) then check.number(std, "normal", "std", 0)
    elseif not std.is_meta and not wick.no_grad(function() return std:ge(0):all() end) then -- (NaN too)
      check.fail("normal", "normal expects all elements of std >= 0.0")
    end
    if not is_tensor(mean) then check.number(mean, "normal", "mean") end
    local like = is_tensor(mean) and mean or std
    local shape = like:size()
    if is_tensor(mean) and is_tensor(std) then
      shape = (mean:detach() * 0 + std:detach() * 0):size() -- the broadcast shape
    end
    local z = wick._randn(shape, { dtype = opts.dtype or like.dtype, device = like.device })
    local r = wick.no_grad(function() return z * std + mean end)
    if opts.requires_grad then return r:requires_grad_(true) end
    return zero_grad_draw("Normal", r, mean, std) -- (not reparameterised: zero gradients, as PyTorch's)
  end

  --- wick.randperm(n[, opts]): a random permutation of 1..n (PyTorch's 0..n-1 plus 1), int64 by default.
  local RANDPERM = { dtype = "dtype", device = "device" }
  function ops.randperm(n, opts)
    n = int_of(n)
    check.int(n, "randperm", "n", 0)
    opts = check.options(opts, "randperm", RANDPERM)
    local dtype = opts.dtype or "int64"
    if n == 0 then return wick.zeros(0, { dtype = dtype, device = opts.device }) end
    local _, idx = Tensor.sort(wick._rand(n, { dtype = "float64", device = opts.device }))
    return idx:to(dtype)
  end

  local MULTINOMIAL = { replacement = "boolean", num_samples = "integer" }
  -- an upper bound on the comparisons held at once by the sampling with replacement
  local CHUNK_ELEMENTS = 2 ^ 24

  --- wick.multinomial(probs, num_samples[, replacement = false]) or (..., {replacement =}):
  --- 1-based category indices (int64), one row of draws per row of probs (1-D or 2-D).
  function ops.multinomial(probs, num_samples, replacement)
    check.tensor(probs, "multinomial", "input")
    if type(num_samples) == "table" and replacement == nil then -- multinomial(p, {num_samples = 1, replacement = ...})
      local o = check.options(num_samples, "multinomial", MULTINOMIAL)
      num_samples, replacement = o.num_samples, o.replacement
      if num_samples == nil then check.fail("multinomial", "missing argument 'num_samples'") end
    elseif type(replacement) == "table" then
      local o = check.options(replacement, "multinomial", MULTINOMIAL)
      if o.num_samples ~= nil then check.fail("multinomial", "num_samples given twice") end
      replacement = o.replacement
    end
    num_samples = int_of(num_samples)
    check.int(num_samples, "multinomial", "num_samples", 1)
    replacement = check.opt_boolean(replacement, "multinomial", "replacement", false)
    local nd = probs:dim()
    if nd ~= 1 and nd ~= 2 then check.fail("multinomial", "prob_dist must be 1 or 2 dim, got %d", nd) end
    if not is_float(probs.dtype) then check.fail("multinomial", "only supports floating-point dtypes for input, got %s", probs.dtype) end
    local n = probs:size(-1)
    if n == 0 then check.fail("multinomial", "number of categories cannot be zero") end
    if not replacement and num_samples > n then
      check.fail("multinomial", "cannot sample n_sample > prob_dist.size(-1) samples without replacement (n_sample = %d, categories = %d)",
        num_samples, n)
    end
    local p = (nd == 1 and probs:view(1, n) or probs):detach():to("float64")
    local rows = p:size(1)
    if rows == 0 then return wick.zeros(nd == 1 and { num_samples } or { 0, num_samples }, { dtype = "int64", device = probs.device }) end
    if probs.is_meta then
      return wick.empty(nd == 1 and { num_samples } or { rows, num_samples }, { dtype = "int64", device = "meta" })
    end
    -- invalid distributions raise (one wait for the device: one small table)
    local bad = p:lt(0):any() or p:ne(p):any() or p:abs():eq(huge):any()
    if bad then check.fail("multinomial", "probability tensor contains either `inf`, `nan` or element < 0") end
    local total = p:sum(2, true) -- [rows, 1]
    if total:le(0):any() then check.fail("multinomial", "invalid multinomial distribution (sum of probabilities <= 0)") end
    if not replacement then
      local nonzero = p:gt(0):sum(2):min():item()
      if nonzero < num_samples then
        check.fail("multinomial", "invalid multinomial distribution (with replacement=False, not enough non-negative category to sample): %d samples asked, %d categories with nonzero probability",
          num_samples, nonzero)
      end
      -- the exponential race (PyTorch's own): keys p / E with E ~ Exp(1), the largest win
      local e = -(1 - wick._rand(rows, n, { dtype = "float64", device = probs.device })):log()
      local idx
      if num_samples == 1 then idx = (p / e):argmax(2, true) -- one token at a time: no sort
      else idx = select(2, Tensor.topk(p / e, num_samples, 2, true)) end
      return nd == 1 and idx:view(num_samples) or idx
    end
    -- inverse CDF: the category is the number of cumulative sums at or below u * total, where
    -- total is the last cumulative sum itself (so u < 1 never reaches past a nonzero weight)
    local sums = p:cumsum(2)
    total = sums:narrow(2, n, 1)
    local cdf = sums:view(rows, 1, n)
    local out = {}
    local per = math.max(1, floor(CHUNK_ELEMENTS / (rows * n)))
    for first = 1, num_samples, per do
      local count = math.min(per, num_samples - first + 1)
      local u = wick._rand(rows, count, { dtype = "float64", device = probs.device }) * total
      local idx = cdf:le(u:view(rows, count, 1)):sum(3) + 1
      out[#out + 1] = idx:clamp(nil, n)
    end
    local idx = #out == 1 and out[1] or wick.cat(out, 2)
    return nd == 1 and idx:view(num_samples) or idx
  end
  function Tensor.multinomial(t, num_samples, replacement) return ops.multinomial(t, num_samples, replacement) end

  --- wick.bernoulli(p_tensor): 1 with probability p, elementwise, in p's dtype.
  function ops.bernoulli(p, prob)
    check.tensor(p, "bernoulli", "input")
    if prob ~= nil then return p:clone():bernoulli_(prob) end
    if p:numel() > 0 and (p:lt(0):any() or p:gt(1):any() or p:ne(p):any()) then
      check.fail("bernoulli", "Expected p_in >= 0 && p_in <= 1 to be true, but got false (probabilities in [0, 1])")
    end
    local r = wick.no_grad(function() return float_draws("bernoulli", p):lt(p):to(p.dtype) end)
    return p:is_floating_point() and zero_grad_draw("Bernoulli", r, p) or r
  end
  Tensor.bernoulli = ops.bernoulli

  -- in-place fills: each draws from wick's generator (repeatable under wick.manual_seed)
  local function fill_with(t, fn, values)
    if t.requires_grad and t.is_leaf and wick.is_grad_enabled() then
      check.fail(fn, "a leaf tensor that requires grad is used in an in-place operation; wrap the fill in wick.no_grad(...)")
    end
    return t:copy_(values)
  end
  local function need_float(t, fn)
    check.tensor(t, fn, "self")
    if not is_float(t.dtype) then check.fail(fn, "expected a floating-point tensor, got %s", t.dtype) end
  end
  ops._number_of = number_of
  -- t:normal_({mean =, std =}) and the like: PyTorch's keywords in a trailing options table, after
  -- positional ones or alone (SAC's self.noise.normal_(0., std=0.1) is noise:normal_(0., {std = 0.1}));
  -- a 0-dim tensor is its number (Rainbow's uniform_(0, p_total / batch_size))
  local function keywords(fn, names, a, b)
    local spec = {}
    for _, n in ipairs(names) do spec[n] = "number|tensor" end
    local o = b == nil and check.positional(fn, names, spec, a) or check.positional(fn, names, spec, a, b)
    return number_of(o[names[1]]), number_of(o[names[2]])
  end

  -- a complex t: both parts drawn as a real tensor [..., 2] (PyTorch's: a normal's
  -- std split between them, std / sqrt 2 each; complex init of FNO's spectral weights)
  local function complex_fill(t, fn, a, b)
    if t.requires_grad and t.is_leaf and wick.is_grad_enabled() then fill_with(t, fn) end
    Tensor[fn](t:view_as_real(), a, b)
    return t
  end
  function Tensor.normal_(t, mean, std)
    mean, std = keywords("normal_", { "mean", "std" }, mean, std)
    if check.tensor(t, "normal_", "self"):is_complex() then
      return complex_fill(t, "normal_", mean, check.opt_number(std, "normal_", "std", 1, 0) / math.sqrt(2))
    end
    need_float(t, "normal_")
    mean = check.opt_number(mean, "normal_", "mean", 0)
    std = check.opt_number(std, "normal_", "std", 1, 0)
    -- draws in t's dtype (float32 for the 16-bit ones), scaled in place: one
    -- temporary the size of t, not three in float64 (model construction)
    local work = (t.dtype == "float16" or t.dtype == "bfloat16") and "float32" or t.dtype
    local z = wick._randn(t:size(), { dtype = work, device = t.device })
    if std ~= 1 then z:mul_(std) end
    if mean ~= 0 then z:add_(mean) end
    return fill_with(t, "normal_", z)
  end
  function Tensor.uniform_(t, from, to)
    from, to = keywords("uniform_", { "from", "to" }, from, to)
    if check.tensor(t, "uniform_", "self"):is_complex() then return complex_fill(t, "uniform_", from, to) end
    need_float(t, "uniform_")
    from = check.opt_number(from, "uniform_", "from", 0)
    to = check.opt_number(to, "uniform_", "to", 1)
    if from > to then check.fail("uniform_", "expects to return a [from, to) range, but found from=%s > to=%s", from, to) end
    return fill_with(t, "uniform_", float_draws("uniform_", t) * (to - from) + from)
  end
  function Tensor.exponential_(t, lambd)
    lambd = keywords("exponential_", { "lambd" }, lambd)
    need_float(t, "exponential_")
    lambd = check.opt_number(lambd, "exponential_", "lambd", 1)
    if lambd <= 0 then check.fail("exponential_", "expects lambda > 0.0, but found lambda=%s", lambd) end
    return fill_with(t, "exponential_", -(1 - float_draws("exponential_", t)):log() / lambd)
  end
  function Tensor.log_normal_(t, mean, std)
    mean, std = keywords("log_normal_", { "mean", "std" }, mean, std)
    need_float(t, "log_normal_")
    mean = check.opt_number(mean, "log_normal_", "mean", 1)
    std = check.opt_number(std, "log_normal_", "std", 2, 0)
    return fill_with(t, "log_normal_", (wick._randn(t:size(), { dtype = "float64", device = t.device }) * std + mean):exp())
  end
  function Tensor.geometric_(t, p)
    p = keywords("geometric_", { "p" }, p)
    check.tensor(t, "geometric_", "self")
    check.number(p, "geometric_", "p")
    if not (p > 0 and p < 1) then check.fail("geometric_", "expects p to be in (0, 1), but got p=%s", p) end
    -- the number of trials up to the first success: floor(log(1 - u) / log(1 - p)) + 1
    local k = ((1 - float_draws("geometric_", t)):log() / math.log(1 - p)):to("int64") + 1
    return fill_with(t, "geometric_", k)
  end
  function Tensor.bernoulli_(t, p)
    p = keywords("bernoulli_", { "p" }, p)
    check.tensor(t, "bernoulli_", "self")
    if p == nil then p = 0.5 end
    if is_tensor(p) then
      if p:numel() > 0 and (p:lt(0):any() or p:gt(1):any() or p:ne(p):any()) then
        check.fail("bernoulli_", "Expected p_in >= 0 && p_in <= 1 to be true, but got false (probabilities in [0, 1])")
      end
      return fill_with(t, "bernoulli_", float_draws("bernoulli_", t):lt(p))
    end
    check.number(p, "bernoulli_", "p", 0, 1)
    return fill_with(t, "bernoulli_", float_draws("bernoulli_", t):lt(p))
  end
  -- the largest integer random_() gives by default: every integer below it fits the dtype exactly
  -- (2^digits for a floating dtype, the largest value of an integer one, 2^53 at most: a Lua number)
  local RANDOM_TOP = {}
  for name, info in pairs(dtype_info) do
    RANDOM_TOP[name] = (info.is_floating or info.digits >= 53) and 2 ^ math.min(info.digits, 53) or 2 ^ info.digits - 1
  end
  --- t:random_([from, ]to): integers in [from, to); t:random_(): [0, 2^mantissa] (2^53 for int64 here).
  function Tensor.random_(t, from, to)
    from, to = keywords("random_", { "from", "to" }, from, to)
    check.tensor(t, "random_", "self")
    if from == nil and to == nil then from, to = 0, RANDOM_TOP[t.dtype] + 1
    elseif to == nil then from, to = 0, from
    elseif from == nil then from = 0 end
    check.int(from, "random_", "from")
    check.int(to, "random_", "to")
    return fill_with(t, "random_", ops.randint(from, to, t:size(), { device = t.device }))
  end

  -- ---- einsum ----

  -- the labels of ellipsis dims: control characters, never letters; ELL[1] is the last dim
  local ELL = {}
  for k = 1, 16 do ELL[k] = string.char(k) end
  local function label_name(c) return c:match("%a") and ("'" .. c .. "'") or "'...'" end

  -- subscripts with "..." spelled out for an operand of `ndim` dims (or the output with `nell`)
  local function expand_ellipsis(s, ndim, where, eq)
    local at = s:find("...", 1, true)
    local rest = at and (s:sub(1, at - 1) .. s:sub(at + 3)) or s
    if rest:find("%.") then check.fail("einsum", "%s of '%s' has a '.' that is not part of one '...'", where, eq) end
    if rest:find("[^%a]") then check.fail("einsum", "invalid subscript '%s' in %s of '%s' (letters a-z, A-Z only)", rest:match("[^%a]"), where, eq) end
    if not at then return s, 0 end
    local nell = ndim - #rest
    if nell < 0 then check.fail("einsum", "%s has %d dimension(s) but its subscripts '%s' name more", where, ndim, s) end
    if nell > #ELL then check.fail("einsum", "%s: '...' covers more than %d dimensions", where, #ELL) end
    local labels = {}
    for j = 1, nell do labels[j] = ELL[nell - j + 1] end
    return s:sub(1, at - 1) .. table.concat(labels) .. s:sub(at + 3), nell
  end

  local function parse_einsum(eq, operands)
    if type(eq) ~= "string" then check.expected("einsum", "equation", "a string", eq) end
    local spec = eq:gsub("%s", "")
    local lhs, rhs = spec:match("^(.-)%->(.*)$")
    if not lhs then lhs = spec end
    if lhs:find("%->") or (rhs and rhs:find("%-")) or (not rhs and lhs:find("%-")) then
      check.fail("einsum", "equation '%s' has a misplaced '-' or more than one '->'", eq)
    end
    local inputs = {}
    for part in (lhs .. ","):gmatch("([^,]*),") do inputs[#inputs + 1] = part end
    if #inputs ~= #operands then
      check.fail("einsum", "equation '%s' names %d operand(s) but %d tensor(s) were given", eq, #inputs, #operands)
    end
    local counts, sizes, max_ell = {}, {}, 0
    for i, s in ipairs(inputs) do
      local t = operands[i]
      local where = "operand " .. i
      local full, nell = expand_ellipsis(s, t:dim(), where, eq)
      max_ell = math.max(max_ell, nell)
      if #full ~= t:dim() then
        check.fail("einsum", "operand %d has %d dimension(s) but its subscripts '%s' name %d", i, t:dim(), s, #full)
      end
      for j = 1, #full do -- (counted as written: 'ii' alone is a trace, summed)
        local c = full:sub(j, j)
        counts[c] = (counts[c] or 0) + 1
      end
      -- a subscript repeated within an operand takes its diagonal ('ii->i',
      -- 'NMKK->NM'): the two dims become one, last
      local j = 1
      while j <= #full do
        local c = full:sub(j, j)
        local k = full:find(c, j + 1, true)
        if k then
          if t:size(j) ~= t:size(k) then
            check.fail("einsum", "subscript '%s' is repeated in operand %d ('%s') for dimensions of sizes %d and %d",
              c, i, s, t:size(j), t:size(k))
          end
          t = t:diagonal(0, j, k)
          full = full:sub(1, j - 1) .. full:sub(j + 1, k - 1) .. full:sub(k + 1) .. c
          j = 1
        else
          j = j + 1
        end
      end
      operands[i] = t
      inputs[i] = full
      for d = 1, #full do -- a size 1 broadcasts against the others (PyTorch's)
        local c = full:sub(d, d)
        local n = t:size(d)
        if sizes[c] and sizes[c] ~= n and n ~= 1 and sizes[c] ~= 1 then
          check.fail("einsum", "subscript %s has size %d in operand %d but size %d earlier (they do not broadcast)",
            label_name(c), n, i, sizes[c])
        end
        sizes[c] = (sizes[c] == nil or sizes[c] == 1) and n or sizes[c]
      end
    end
    for i, full in ipairs(inputs) do -- the broadcast dims expanded
      local t, shape, grow = operands[i], {}, false
      for d = 1, #full do
        shape[d] = sizes[full:sub(d, d)]
        grow = grow or shape[d] ~= t:size(d)
      end
      if grow then operands[i] = t:expand(shape) end
    end
    local ell = {}
    for j = max_ell, 1, -1 do ell[#ell + 1] = ELL[j] end
    if rhs == nil then -- implicit output: the ellipsis dims, then the subscripts named once, in alphabetical order
      local once = {}
      for c, k in pairs(counts) do if k == 1 and c:match("%a") then once[#once + 1] = c end end
      table.sort(once)
      rhs = table.concat(ell) .. table.concat(once)
    else
      local at = rhs:find("...", 1, true)
      local rest = at and (rhs:sub(1, at - 1) .. rhs:sub(at + 3)) or rhs
      if rest:find("[^%a]") then check.fail("einsum", "invalid output subscript '%s' in '%s'", rest:match("[^%a]"), eq) end
      if at then rhs = rhs:sub(1, at - 1) .. table.concat(ell) .. rhs:sub(at + 3) end
    end
    local seen = {}
    for j = 1, #rhs do
      local c = rhs:sub(j, j)
      if seen[c] then check.fail("einsum", "output subscript '%s' appears more than once in '%s'", c, eq) end
      if not counts[c] then check.fail("einsum", "output subscript '%s' does not appear in any input of '%s'", c, eq) end
      seen[c] = true
    end
    return inputs, rhs, sizes
  end

  local function chars(s)
    local out = {}
    for j = 1, #s do out[j] = s:sub(j, j) end
    return out
  end

  -- t (labels) summed over the labels not in `keep` (a set)
  local function sum_out(t, labels, keep)
    local kept = {}
    for j = #labels, 1, -1 do
      if not keep[labels[j]] then t = t:sum(j) else table.insert(kept, 1, labels[j]) end
    end
    return t, kept
  end

  -- t permuted so that its labels come in `order`
  local function arrange(t, labels, order)
    local pos = {}
    for j, c in ipairs(labels) do pos[c] = j end
    local perm, identity = {}, true
    for j, c in ipairs(order) do perm[j] = pos[c]; identity = identity and pos[c] == j end
    if identity or #perm < 2 then return t end
    return t:permute(unpack(perm))
  end

  local function product(list, sizes)
    local n = 1
    for _, c in ipairs(list) do n = n * sizes[c] end
    return n
  end

  -- A (labels la) times B (labels lb), summing the shared labels not in `keep`
  local function contract(a, la, b, lb, keep, sizes)
    local in_a, in_b = {}, {}
    for _, c in ipairs(la) do in_a[c] = true end
    for _, c in ipairs(lb) do in_b[c] = true end
    local ka, kb = {}, {}
    for c in pairs(in_a) do if keep[c] or in_b[c] then ka[c] = true end end
    for c in pairs(in_b) do if keep[c] or in_a[c] then kb[c] = true end end
    a, la = sum_out(a, la, ka)
    b, lb = sum_out(b, lb, kb)
    local batch, left, inner, right = {}, {}, {}, {}
    for _, c in ipairs(la) do
      local shared = false
      for _, d in ipairs(lb) do if d == c then shared = true end end
      if shared then
        if keep[c] then batch[#batch + 1] = c else inner[#inner + 1] = c end
      else
        left[#left + 1] = c
      end
    end
    for _, c in ipairs(lb) do if not in_a[c] then right[#right + 1] = c end end
    local order_a, order_b = {}, {}
    for _, g in ipairs({ batch, left, inner }) do for _, c in ipairs(g) do order_a[#order_a + 1] = c end end
    for _, g in ipairs({ batch, inner, right }) do for _, c in ipairs(g) do order_b[#order_b + 1] = c end end
    local nb, nl, ni, nr = product(batch, sizes), product(left, sizes), product(inner, sizes), product(right, sizes)
    local a3 = arrange(a, la, order_a):reshape(nb, nl, ni)
    local b3 = arrange(b, lb, order_b):reshape(nb, ni, nr)
    -- nothing to sum (a broadcast product: mamba's "bld,bln,bdl->bdln"): one elementwise
    -- product beats nb products of rank 1
    local r = ni == 1 and a3 * b3 or a3:bmm(b3)
    local labels, shape = {}, {}
    for _, g in ipairs({ batch, left, right }) do
      for _, c in ipairs(g) do labels[#labels + 1] = c; shape[#shape + 1] = sizes[c] end
    end
    return r:reshape(shape), labels
  end

  --- wick.einsum(equation, t1, t2, ...) or wick.einsum(equation, {t1, t2, ...}): sums of products
  --- over named subscripts ("ij,jk->ik", "bhqd,bhkd->bhqk", "i,j->ij", "ij->ji", "ij->"), built
  --- on permute, reshape, bmm and sum (so it runs on every backend, autograd included).
  -- PyTorch's sublist form, einsum(a, {0, 1}, b, {1, 2}[, {0, 2}]): each operand followed by the list of
  -- its subscripts, integers 0 to 51 (PyTorch's letters: 0..25 'A'..'Z', 26..51 'a'..'z') or "..."
  -- (Python's Ellipsis), then the output's list if given; as the equation and the operands
  local function sublist_letters(list, where)
    if type(list) ~= "table" or getmetatable(list) ~= nil then
      check.expected("einsum", where, "a list of subscripts (integers 0 to 51, or \"...\")", list)
    end
    local out = {}
    for k in pairs(list) do
      if type(k) ~= "number" or k < 1 or k % 1 ~= 0 or k > #list then
        check.expected("einsum", where, "a list of subscripts (integers 0 to 51, or \"...\")", list)
      end
    end
    for i = 1, #list do
      local s = list[i]
      if s == "..." then out[i] = "..."
      elseif type(s) == "number" and s % 1 == 0 then
        if s < 0 or s >= 52 then check.fail("einsum", "subscript in subscript list is not within the valid range [0, 52)") end
        out[i] = string.char(s < 26 and 65 + s or 97 + s - 26)
      else
        check.fail("einsum", "%s: expected integers 0 to 51 or \"...\", got %s at position %d", where, check.describe(s), i)
      end
    end
    return table.concat(out)
  end
  local function sublist_equation(...)
    local n = select("#", ...)
    while n > 0 and select(n, ...) == nil do n = n - 1 end
    if n < 2 then
      check.fail("einsum", "must specify the equation string and at least one operand, or at least one operand and its subscripts list")
    end
    local args, parts, operands = { ... }, {}, {}
    for i = 1, math.floor(n / 2) do
      operands[i] = check.tensor(args[2 * i - 1], "einsum", "operand " .. i)
      parts[i] = sublist_letters(args[2 * i], "the subscripts of operand " .. i)
    end
    local eq = table.concat(parts, ",")
    if n % 2 == 1 then eq = eq .. "->" .. sublist_letters(args[n], "the output subscripts") end
    return eq, operands
  end
  function ops.einsum(eq, ...)
    local operands = { ... }
    if is_tensor(eq) then
      eq, operands = sublist_equation(eq, ...)
    elseif select("#", ...) == 1 and type(operands[1]) == "table" and not is_tensor(operands[1]) then
      operands = { unpack(operands[1]) } -- (a copy: diagonals replace its entries)
    end
    for i = 1, #operands do check.tensor(operands[i], "einsum", "operand " .. i) end
    if #operands == 0 then check.fail("einsum", "expected at least one operand") end
    -- operands of several dtypes meet in their promoted one (PyTorch's does for an outer product, GPT-J's
    -- einsum("i , j -> i j", arange(n, dtype=float), inv_freq), though not through its bmm: here always)
    local dtype = operands[1].dtype
    for i = 2, #operands do
      if operands[i].dtype ~= dtype and wick._autocast_lower(operands[i]) == operands[i] then
        dtype = wick.promote_types(dtype, operands[i].dtype)
      end
    end
    for i = 1, #operands do
      if operands[i].dtype ~= dtype and wick._autocast_lower(operands[i]) == operands[i] then operands[i] = operands[i]:to(dtype) end
    end
    local inputs, rhs, sizes = parse_einsum(eq, operands)
    local out = chars(rhs)
    local out_set = {}
    for _, c in ipairs(out) do out_set[c] = true end
    local t, labels = operands[1], chars(inputs[1])
    for i = 2, #operands do
      -- keep what the output or a later operand still needs
      local keep = {}
      for c in pairs(out_set) do keep[c] = true end
      for j = i + 1, #operands do for _, c in ipairs(chars(inputs[j])) do keep[c] = true end end
      t, labels = contract(t, labels, operands[i], chars(inputs[i]), keep, sizes)
    end
    t, labels = sum_out(t, labels, out_set)
    if #out == 0 then
      if t:dim() > 0 then t = t:sum() end
      return t
    end
    return arrange(t, labels, out)
  end

  -- ---- reshaping, reductions and products PyTorch scripts use, over the core's ops ----

  local function index_range(n, device, from, step) -- int64 [from, from + step, ...], n of them
    return wick.arange(0, n, { dtype = "int64", device = device }) * step + from
  end
  -- dims: a number or a table of them, as positive dims of t
  local function dims_arg(t, dims, fn)
    if dims == nil then check.fail(fn, "expected a dim or a table of dims, got nothing") end
    if type(dims) ~= "table" then dims = { dims } end
    for k in pairs(dims) do -- an options table in a dim's place (x:amax({dim = 1}, true)) is not a list of dims
      if type(k) ~= "number" then
        check.fail(fn, "expected a dim or a list of dims, got a table with the key '%s' (options go last: "
          .. "{dim =, keepdim =})", tostring(k))
      end
    end
    local out = {}
    for i, d in ipairs(dims) do out[i] = wrap_dim(t, d, fn) end
    return out
  end

  --- t:flip(dims): the elements in reverse order along each of dims (a copy, like PyTorch's)
  function Tensor.flip(t, dims, ...)
    check.tensor(t, "flip", "self")
    if type(dims) == "number" and select("#", ...) > 0 then dims = { dims, ... } end
    local out = t
    local seen = {}
    for _, d in ipairs(dims_arg(t, dims, "flip")) do
      if seen[d] then check.fail("flip", "dim %d appears multiple times in the list of dims", d) end
      seen[d] = true
      local n = t:size(d)
      if n > 1 then out = out:index_select(d, index_range(n, t.device, n, -1)) end
    end
    return out == t and t:clone() or out
  end
  function Tensor.fliplr(t) return Tensor.flip(t, 2) end
  function Tensor.flipud(t) return Tensor.flip(t, 1) end

  --- t:roll(shifts[, dims]) (or {shifts =, dims =}, Swin's keywords): elements shifted
  --- along dims, those pushed off one end coming back at the other; without dims t
  --- is flattened first
  local ROLL = { shifts = "integer|table", dims = "integer|table" }
  function Tensor.roll(t, ...)
    check.tensor(t, "roll", "self")
    local o = check.positional("roll", { "shifts", "dims" }, ROLL, ...)
    local shifts, dims = o.shifts, o.dims
    if shifts == nil then check.fail("roll", "missing argument 'shifts'") end
    if dims == nil then
      if type(shifts) == "table" then check.fail("roll", "shifts must be a number when dims is not given") end
      return Tensor.roll(t:reshape(-1), shifts, 1):view(t.shape)
    end
    if type(shifts) ~= "table" then shifts = { shifts } end
    local ds = dims_arg(t, dims, "roll")
    if #shifts ~= #ds then check.fail("roll", "shifts and dimensions must align. shifts: %d, dims: %d", #shifts, #ds) end
    local out = t
    for i, d in ipairs(ds) do
      check.int(shifts[i], "roll", "shifts")
      local n = t:size(d)
      local k = n > 0 and shifts[i] % n or 0
      if k ~= 0 then out = wick.cat({ out:narrow(d, n - k + 1, k), out:narrow(d, 1, n - k) }, d) end
    end
    return out == t and t:clone() or out
  end

  -- The arguments of a reduction, PyTorch's positional-or-keyword ones (names, in
  -- PyTorch's order; kinds in spec): t:f(dim[, keepdim]), t:f(dim, {keepdim =}),
  -- t:f({dim =, keepdim =}). keepdims is NumPy's spelling of keepdim, which PyTorch
  -- takes too (P.sum(1, keepdims=True)). Returns the checked arguments and keepdim
  -- as a boolean.
  local function reduction_args(fn, names, spec, ...)
    local o = check.positional(fn, names, spec, ...)
    local keepdim = o.keepdim
    if o.keepdims ~= nil then
      if keepdim ~= nil then check.fail(fn, "got both keepdim and keepdims (keepdims is another name for keepdim)") end
      keepdim = o.keepdims
    end
    return o, keepdim == true, keepdim ~= nil
  end
  local DIMS_KEEPDIM = { dim = "integer|table", keepdim = "boolean", keepdims = "boolean" }

  --- t:amax([dim[, keepdim]]), t:amin (or {dim =, keepdim =}): the largest / smallest
  --- values over dim (a number or a table of dims) or over all elements
  -- amax/amin's gradient, PyTorch's: split evenly among the elements equal to
  -- the result r (taken with keepdim over ds). A Function, not arithmetic on
  -- t: an infinite element (a masked row) or a sum of huge ties would make
  -- NaN of the values. (Made on first use: wick.autograd loads after this file.)
  local TiesFn
  local function ties_fn()
    TiesFn = wick.autograd.Function:extend("AmaxAmin")
    function TiesFn.forward(ctx, t, r, keepdim, ...)
      local ds = { ... }
      local mask = t:eq(r):to(t.dtype)
      ctx.share, ctx.ds = mask / mask:sum(ds, true), ds
      local out = r:clone()
      if keepdim then return out end
      table.sort(ds, function(a, b) return a > b end)
      for _, d in ipairs(ds) do out = out:squeeze(d) end
      return out
    end
    function TiesFn.backward(ctx, g)
      local dims = { unpack(ctx.ds) }
      table.sort(dims)
      if g:dim() < ctx.share:dim() then
        for _, d in ipairs(dims) do g = g:unsqueeze(d) end
      end
      return g * ctx.share
    end
    return TiesFn
  end
  local function even_ties(t, r, ds, keepdim)
    return (TiesFn or ties_fn()).apply(t, r, keepdim, unpack(ds))
  end
  local function extreme(t, pick, fn, ...)
    check.tensor(t, fn, "self")
    local o, keepdim = reduction_args(fn, { "dim", "keepdim" }, DIMS_KEEPDIM, ...)
    if t.requires_grad and wick.is_grad_enabled() and t:numel() > 0 and t:dim() > 0 then
      local ds = {}
      if o.dim == nil then for i = 1, t:dim() do ds[i] = i end else ds = dims_arg(t, o.dim, fn) end
      return even_ties(t, extreme(t:detach(), pick, fn, { dim = o.dim, keepdim = true }), ds, keepdim)
    end
    if o.dim == nil then -- all elements; keepdim keeps every dim, as size 1
      if t:numel() == 0 then check.fail(fn, "cannot reduce an empty tensor (it has no elements): it has no identity") end
      local r = t[pick](t)
      if not keepdim then return r end
      local ones = {}
      for i = 1, t:dim() do ones[i] = 1 end
      return r:reshape(ones)
    end
    local ds = dims_arg(t, o.dim, fn)
    table.sort(ds, function(a, b) return a > b end) -- from the last, so that earlier dims keep their numbers
    for i = 1, #ds do
      if ds[i] == ds[i - 1] then check.fail(fn, "dim %d appears multiple times in the list of dims", ds[i]) end
      if t:size(ds[i]) == 0 then check.fail(fn, "cannot reduce over dimension %d of size 0: it has no identity", ds[i]) end
    end
    local out = t
    for _, d in ipairs(ds) do out = (out[pick](out, d, keepdim)) end
    return out
  end
  function Tensor.amax(t, ...) return extreme(t, "max", "amax", ...) end
  function Tensor.amin(t, ...) return extreme(t, "min", "amin", ...) end
  --- t:aminmax([{dim =, keepdim =}]) (dim and keepdim also by position): amin and amax, two results
  function Tensor.aminmax(t, ...)
    check.tensor(t, "aminmax", "self")
    local o, keepdim = reduction_args("aminmax", { "dim", "keepdim" }, DIMS_KEEPDIM, ...)
    local opts = { dim = o.dim, keepdim = keepdim }
    return extreme(t, "min", "aminmax", opts), extreme(t, "max", "aminmax", opts)
  end

  --- t:logsumexp(dim[, keepdim]) (or {dim =, keepdim =}): log(sum(exp(t))) along dim
  --- (a number or a table of dims), without overflow
  function Tensor.logsumexp(t, ...)
    check.tensor(t, "logsumexp", "self")
    local o, keepdim = reduction_args("logsumexp", { "dim", "keepdim" }, DIMS_KEEPDIM, ...)
    local ds = dims_arg(t, o.dim, "logsumexp")
    for _, d in ipairs(ds) do
      if t:size(d) == 0 then -- the log of an empty sum: -inf, as PyTorch's
        local shape = t:size()
        for _, e in ipairs(ds) do shape[e] = 1 end
        local r = wick.full(shape, -math.huge, { dtype = t:is_floating_point() and t.dtype or nil, device = t.device })
        if keepdim then return r end
        table.sort(ds, function(a, b) return a > b end)
        for _, e in ipairs(ds) do r = r:squeeze(e) end
        return r
      end
    end
    local m = t:detach():amax(ds, true)
    m = wick.where(m:isinf(), wick.zeros_like(m), m) -- all -inf (or an inf): no shift
    local out = (t - m):exp():sum(ds, true):log() + m
    if keepdim then return out end
    table.sort(ds, function(a, b) return a > b end) -- from the last, so that earlier dims keep their numbers
    for _, d in ipairs(ds) do out = out:squeeze(d) end
    return out
  end

  --- t:nonzero([{as_tuple = false}]): the 1-based coordinates of the nonzero
  --- elements, int64 [n, t:dim()] in row-major order; with as_tuple, one
  --- int64 tensor per dimension
  function Tensor.nonzero(t, opts)
    check.tensor(t, "nonzero", "self")
    local as_tuple = check.options(opts, "nonzero", { as_tuple = "boolean" }).as_tuple
    local mask = t:ne(0)
    if t:dim() == 0 then mask = mask:reshape(1) end
    local cols = {}
    for d = 1, mask:dim() do
      local shape = {}
      for i = 1, mask:dim() do shape[i] = i == d and mask:size(d) or 1 end
      local coord = wick.arange(1, mask:size(d) + 1, { dtype = "int64", device = t.device }):view(shape)
      cols[d] = coord:expand(mask.shape):masked_select(mask)
    end
    if as_tuple then return cols end
    if #cols == 0 then return wick.zeros({ mask:sum():item(), 0 }, { dtype = "int64", device = t.device }) end
    return wick.stack(cols, 2)
  end
  function Tensor.argwhere(t) return Tensor.nonzero(t) end

  --- t:repeat_interleave(repeats[, dim]): each element (slice along dim)
  --- repeated `repeats` times (a number, or an int64 tensor / table per
  --- element); without dim t is flattened first
  function Tensor.repeat_interleave(t, repeats, dim, opts)
    check.tensor(t, "repeat_interleave", "self")
    local output_size
    if opts ~= nil then -- repeat_interleave(n, dim, {output_size =}): HF's (n, dim=2, output_size=h)
      if type(dim) == "table" then check.fail("repeat_interleave", "got two options tables") end
      local o = check.options(opts, "repeat_interleave", { output_size = "integer" })
      output_size = o.output_size
    end
    -- one argument, the counts: each 1-based position i repeated t[i] times (PyTorch's
    -- repeat_interleave(repeats), 0-based there: a batch vector from the graphs' sizes)
    if repeats == nil and dim == nil then
      if t:dim() ~= 1 or t:is_floating_point() then
        check.fail("repeat_interleave", "repeats alone must be a 1-D integer tensor, got %s [%s]", t.dtype, table.concat(t:size(), ", "))
      end
      return Tensor.repeat_interleave(wick.arange(1, t:numel() + 1, { dtype = "int64", device = t.device }), t)
    end
    -- PyTorch's keywords: repeat_interleave(t, {repeats =, dim =, output_size =})
    if type(repeats) == "table" and not is_tensor(repeats) and repeats[1] == nil and next(repeats) ~= nil
      and dim == nil then
      local o = check.options(repeats, "repeat_interleave", { repeats = "number|table|tensor", dim = "integer",
        axis = "integer", output_size = "integer" })
      if o.dim ~= nil and o.axis ~= nil then check.fail("repeat_interleave", "got both dim and axis (axis is another name for dim)") end
      repeats, dim, output_size = o.repeats, o.dim or o.axis, o.output_size
    elseif type(dim) == "table" then -- (axis: NumPy's name, as PyTorch takes it: ConvNeXt-V2's upsample_mask)
      local o = check.options(dim, "repeat_interleave", { dim = "integer", axis = "integer", output_size = "integer" })
      if o.dim ~= nil and o.axis ~= nil then check.fail("repeat_interleave", "got both dim and axis (axis is another name for dim)") end
      dim, output_size = o.dim or o.axis, o.output_size
    end
    if dim == nil then t, dim = t:reshape(-1), 1 end
    local d = wrap_dim(t, dim, "repeat_interleave")
    local n = t:size(d)
    local I64 = { dtype = "int64", device = t.device }
    local idx
    if type(repeats) == "number" then
      check.int(repeats, "repeat_interleave", "repeats", 0)
      idx = wick.arange(1, n + 1, I64):view(n, 1):expand(n, repeats):reshape(-1)
    else
      local c
      if is_tensor(repeats) then
        if repeats:is_floating_point() or repeats:is_complex() or repeats.dtype == "bool" then
          check.fail("repeat_interleave", "repeats must be an integer tensor, got %s (PyTorch refuses it too; convert with :long())", repeats.dtype)
        end
        c = repeats:to(I64)
      elseif type(repeats) == "table" then c = wick.tensor(repeats, I64)
      else check.expected("repeat_interleave", "repeats", "a number, a table or an int64 tensor", repeats) end
      c = c:reshape(-1)
      if c:numel() == 1 and n ~= 1 then c = c:expand(n) end
      if c:numel() ~= n then
        check.fail("repeat_interleave", "repeats must have the same size as input along dim (%d), got %d", n, c:numel())
      end
      if n > 0 and c:min():item() < 0 then check.fail("repeat_interleave", "repeats can not be negative") end
      -- element i repeated c[i] times: marks at the blocks' starts, summed up
      local total = n > 0 and c:sum():item() or 0
      local ends = c:cumsum(1)
      local marks = wick.zeros({ total + 1 }, I64)
      if n > 1 then marks:index_put_({ ends:narrow(1, 1, n - 1) + 1 }, wick.ones(n - 1, I64), true) end
      idx = marks:cumsum(1):narrow(1, 1, total) + 1
    end
    if output_size ~= nil and output_size ~= idx:numel() then -- (a size hint, which must be right)
      check.fail("repeat_interleave", "Invalid output_size, expected %d but got %d", idx:numel(), output_size)
    end
    if idx:numel() == 0 then
      local shape = t:size()
      shape[d] = 0
      return wick.empty(shape, { dtype = t.dtype, device = t.device })
    end
    return t:index_select(d, idx)
  end

  --- t["repeat"](t, sizes...) (repeat is a Lua keyword: t:repeat_tensor(...) is
  --- the same, Torch7's repeatTensor too): t tiled sizes[i] times along each
  --- dim; sizes may be more than t's dims (new leading ones)
  local function tiled(t, reps, fn)
    if #reps < t:dim() then check.fail(fn, "Number of dimensions of repeat dims (%d) can not be smaller than number of dimensions of tensor (%d)", #reps, t:dim()) end
    local lead = #reps - t:dim()
    local view, expanded, final = {}, {}, {}
    for i, r in ipairs(reps) do
      r = int_of(r)
      check.int(r, fn, "sizes", 0)
      local s = i > lead and t:size(i - lead) or 1
      view[#view + 1], view[#view + 2] = 1, s
      expanded[#expanded + 1], expanded[#expanded + 2] = r, s
      final[i] = r * s
    end
    if #reps == 0 then return t:clone() end
    return t:reshape(view):expand(expanded):clone():view(final) -- always a copy, as PyTorch's
  end
  local function repeat_tensor(t, ...)
    check.tensor(t, "repeat", "self")
    return tiled(t, size_arg("repeat", "repeats", ...), "repeat")
  end
  Tensor["repeat"], Tensor.repeat_tensor, Tensor.repeatTensor = repeat_tensor, repeat_tensor, repeat_tensor
  --- t:tile(reps): repeat, with reps padded by leading 1s to t's dims
  function Tensor.tile(t, ...)
    check.tensor(t, "tile", "self")
    local reps = size_arg("tile", "dims", ...)
    local padded = {}
    for _ = #reps + 1, t:dim() do padded[#padded + 1] = 1 end
    for _, r in ipairs(reps) do padded[#padded + 1] = r end
    return tiled(t, padded, "tile")
  end

  --- t:diag([k = 0]): a 1-D t becomes the k-th diagonal of a square matrix;
  --- a 2-D t gives its k-th diagonal (a copy)
  -- a complex t: the real op on its real and imaginary parts (S4's torch.diag_embed(W))
  local function by_parts(f, t, ...)
    return wick.complex(f(wick.real(t), ...), f(wick.imag(t), ...))
  end
  function Tensor.diag(t, k)
    check.tensor(t, "diag", "self")
    if type(k) == "table" and getmetatable(k) == nil then k = check.options(k, "diag", { diagonal = "integer" }).diagonal end
    if t:is_complex() then return by_parts(Tensor.diag, t, k) end
    k = check.opt_int(k, "diag", "diagonal", 0)
    if t:dim() == 1 then
      local n = t:size(1)
      local m = n + math.abs(k)
      local out = wick.zeros({ m, m }, { dtype = t.dtype, device = t.device })
      if n == 0 then return out end
      local rows = index_range(n, t.device, k >= 0 and 1 or 1 - k, 1)
      local flat = (rows - 1) * m + rows + k -- 1-based positions in the flattened matrix
      return out:reshape(-1):index_put({ flat }, t):view(m, m)
    end
    if t:dim() ~= 2 then check.fail("diag", "expected a 1-D or 2-D tensor, got %d-D", t:dim()) end
    local r, c = t:size(1), t:size(2)
    local first_row, first_col = k >= 0 and 1 or 1 - k, k >= 0 and 1 + k or 1
    local n = math.max(0, math.min(r - first_row + 1, c - first_col + 1))
    if n == 0 then return wick.empty({ 0 }, { dtype = t.dtype, device = t.device }) end
    local flat = index_range(n, t.device, (first_row - 1) * c + first_col, c + 1)
    return t:reshape(-1):index_select(1, flat)
  end

  --- t:outer(v), t:dot(v), t:mv(v), t:lerp(end, weight), t:addcmul(t1, t2[, {value = 1}]), t:addcdiv
  local function vec(t, fn, name)
    check.tensor(t, fn, name)
    if t:dim() ~= 1 then check.fail(fn, "1D tensors expected, but got %dD for %s", t:dim(), name) end
    return t
  end
  function Tensor.outer(a, b) return vec(a, "outer", "self"):unsqueeze(2) * vec(b, "outer", "vec2"):unsqueeze(1) end
  Tensor.ger = Tensor.outer
  function Tensor.dot(a, b)
    vec(a, "dot", "self")
    vec(b, "dot", "tensor")
    if a:size(1) ~= b:size(1) then
      check.fail("dot", "inconsistent tensor size, expected tensor [%d] and src [%d] to have the same number of elements, but got %d and %d elements respectively", a:size(1), b:size(1), a:size(1), b:size(1))
    end
    if a.dtype ~= b.dtype then
      check.fail("dot", "expected both vectors to have same dtype, but found %s and %s", a.dtype, b.dtype)
    end
    return a:unsqueeze(1):mm(b:unsqueeze(2)):reshape({})
  end
  --- t:inner(u): sums over the last dims of both; shape t's leading dims then u's
  function Tensor.inner(a, b)
    check.tensor(a, "inner", "self")
    check.tensor(b, "inner", "other")
    if a:dim() == 0 or b:dim() == 0 then return a * b end
    local k = a:size(-1)
    if b:size(-1) ~= k then
      check.fail("inner", "last dimension of both inputs must match, got %d and %d", k, b:size(-1))
    end
    local shape = {}
    for i = 1, a:dim() - 1 do shape[#shape + 1] = a:size(i) end
    for i = 1, b:dim() - 1 do shape[#shape + 1] = b:size(i) end
    return a:reshape(-1, k):mm(b:reshape(-1, k):t()):reshape(shape)
  end
  function Tensor.mv(m, v)
    check.tensor(m, "mv", "self")
    if m:dim() ~= 2 then check.fail("mv", "vector + matrix @ vector expected, got a %d-D matrix", m:dim()) end
    return m:mm(vec(v, "mv", "vec"):unsqueeze(2)):squeeze(2)
  end
  -- ATen's lerp: t + w (to - t) where |w| < 0.5, else to - (to - t)(1 - w), each one fused
  -- multiply-add (its kernels' fmadd), in float32 for the half types (its opmath): the same bits
  function Tensor.lerp(t, to, weight)
    check.tensor(t, "lerp", "self")
    if not t:is_floating_point() and not t:is_complex() then -- (PyTorch's lerp_kernel has no integer form)
      check.fail("lerp", "\"lerp_kernel_scalar\" not implemented for '%s'", t.dtype)
    end
    if not is_tensor(to) then check.number(to, "lerp", "end") end
    if not is_tensor(weight) then check.number(weight, "lerp", "weight") end
    -- PyTorch's dtypes: end's is self's, and so is a dimensioned weight's; a 0-dim weight of another one
    -- takes part only beside 0-dim self and end (torchmetrics' lerp(tpr[i - 1], tpr[i], w) is float64)
    if is_tensor(to) and to.dtype ~= t.dtype then
      check.fail("lerp", "expected dtype %s for `end` but got dtype %s", t.dtype, to.dtype)
    end
    local out = t.dtype
    if is_tensor(weight) and weight.dtype ~= t.dtype then
      if weight:dim() > 0 then check.fail("lerp", "expected dtype %s for `weight` but got dtype %s", t.dtype, weight.dtype) end
      if t:dim() == 0 and (not is_tensor(to) or to:dim() == 0) then out = wick.promote_types(t.dtype, weight.dtype) end
    end
    if t:is_complex() or (is_tensor(to) and to:is_complex()) or (is_tensor(weight) and weight:is_complex()) then
      return t + (to - t) * weight
    end
    t, to = t:to(out), is_tensor(to) and to:to(out) or to
    local op = out == "float64" and "float64" or "float32"
    local s, e = t:to(op), is_tensor(to) and to:to(op) or to
    local w = is_tensor(weight) and weight:to(op) or wick.full({}, weight, { dtype = op, device = t.device })
    local d = e - s
    local r
    if is_tensor(weight) then
      r = wick.where(w:abs():lt(0.5), ops._fma(w, d, s, op), ops._fma(-d, 1 - w, e, op))
    elseif math.abs(weight) < 0.5 then r = ops._fma(w, d, s, op)
    else r = ops._fma(-d, 1 - w, e, op) end
    return r:to(t.dtype)
  end
  -- PyTorch's deprecated overloads with the number first: t:add_(alpha, other),
  -- t:addcmul_(value, t1, t2); they still work there, with this warning (once per
  -- line: wick.nn's warn, required when first needed, as ops.lua loads before it)
  local function deprecated(fn, old, new)
    require("wick.nn.common").warn(("This overload of %s is deprecated:\n\t%s\nConsider using one of the "
      .. "following signatures instead:\n\t%s"):format(fn, old, new))
  end
  for _, name in ipairs({ "add", "add_", "sub", "sub_" }) do
    local f = Tensor[name]
    Tensor[name] = function(t, a, b, ...)
      if type(a) == "number" and is_tensor(b) then -- t:add_(alpha, other)
        deprecated(name, name .. "(Number alpha, Tensor other)", name .. "(Tensor other, *, Number alpha)")
        return f(t, b, a, ...)
      end
      return f(t, a, b, ...)
    end
  end

  local VALUE = { value = "number|tensor" } -- (a one-element tensor is its number: L-BFGS' value=t)
  -- t + (value t1) * t2 and t + (value t1) / t2 as PyTorch's kernels round them: value t1 first, the
  -- product and the sum fused (one fma: the exact product of two float32 values is a float64, so float32
  -- and the 16-bit floats run the last step in float64 and round once); float16 and bfloat16 entirely
  -- in float32 first (their opmath); float64 without the fma, 1 ulp from PyTorch's at times
  local WIDE = { float32 = "float64", float16 = "float64", bfloat16 = "float64" }
  local OPMATH = { float16 = "float32", bfloat16 = "float32" }
  local function addc_values(t, a, b, value, div)
    local dtype = wick.promote_types(wick.result_type(t, a), wick.result_type(a, b))
    if not dtype_info[dtype].is_floating or dtype_info[dtype].is_complex then
      return t + (div and a / b or a * b) * value
    end
    local low = OPMATH[dtype]
    local scaled = (low and a:to(low) or a) * value
    if div then
      local r = (low and t:to(low) or t) + scaled / (low and b:to(low) or b)
      return low and r:to(dtype) or r
    end
    local wide = WIDE[dtype]
    if not wide then return t + scaled * b end
    return (t:to(wide) + scaled:to(wide) * b:to(wide)):to(dtype)
  end
  -- t + value * (t1 op t2): the operands and value checked first
  local function addc(t, a, b, opts, fn, div)
    check.tensor(t, fn, "self")
    if type(a) == "number" and is_tensor(b) and is_tensor(opts) then -- t:addcmul(value, t1, t2)
      deprecated(fn, fn .. "(Number value, Tensor tensor1, Tensor tensor2)",
        fn .. "(Tensor tensor1, Tensor tensor2, *, Number value)")
      a, b, opts = b, opts, a
    end
    check.tensor(a, fn, "tensor1")
    check.tensor(b, fn, "tensor2")
    local value = type(opts) == "number" and opts or check.options(opts, fn, VALUE).value or 1
    if is_tensor(value) then
      if value:numel() ~= 1 then check.fail(fn, "value must be a number or a one-element tensor, got %s", tostring(value.shape)) end
      value = value:item()
    end
    return addc_values(t, a, b, value, div)
  end
  function Tensor.addcmul(t, a, b, opts) return addc(t, a, b, opts, "addcmul", false) end
  function Tensor.addcdiv(t, a, b, opts) return addc(t, a, b, opts, "addcdiv", true) end
  -- (the in-place forms name themselves in the deprecation warning, as PyTorch's addcmul_)
  local in_place_of = { lerp = Tensor.lerp,
    addcmul = function(t, a, b, opts) return addc(t, a, b, opts, "addcmul_", false) end,
    addcdiv = function(t, a, b, opts) return addc(t, a, b, opts, "addcdiv_", true) end }
  for _, name in ipairs({ "lerp", "addcmul", "addcdiv" }) do Tensor[name .. "_"] = in_place_form(name, in_place_of[name]) end

  function Tensor.tolist(t) return check.tensor(t, "tolist", "self"):totable() end
  function Tensor.type_as(t, other)
    check.tensor(t, "type_as", "self")
    return t:to(check.tensor(other, "type_as", "other").dtype)
  end

  --- wick.linspace(start, stop, steps[, opts]): steps evenly spaced values,
  --- both ends included (float32 unless a dtype says otherwise)
  local SPACE = { steps = "integer", base = "number", dtype = "dtype", device = "device", requires_grad = "boolean" }
  -- PyTorch's keywords (steps =, base =) from the options table, and its
  -- requires_grad applied to the result
  -- (a table at steps' place is the options when it names only options; another is a wrong steps,
  -- said as such: Perceiver's linspace(start=, end=, steps=num_bands) given a table)
  local function options_only(t)
    if getmetatable(t) ~= nil or #t > 0 then return false end
    for k in pairs(t) do if SPACE[k] == nil then return false end end
    return true
  end
  local function space_args(fn, steps, opts)
    if type(steps) == "table" and opts == nil and options_only(steps) then steps, opts = nil, steps end
    local o = check.options(opts, fn, SPACE)
    if o.steps ~= nil then
      if steps ~= nil then check.fail(fn, "argument 'steps' given both by position and as an option") end
      steps = o.steps
    end
    return steps, o
  end
  local function grad_if(t, o)
    if o.requires_grad then t:requires_grad_(true) end
    return t
  end
  --- ops._fma(x, y, z, dtype): x * y + z rounded once to dtype, as a fused multiply-add (PyTorch's
  --- kernels' fmadd, and what its compilers contract a * b + c to): below float64 computed in float64
  --- (the product exact); in float64 the product's and the sum's rounding errors added back (Dekker's
  --- split, Knuth's two-sum). x, y, z tensors or numbers, one of them a tensor.
  function ops._fma(x, y, z, dtype)
    local function f64(v) return is_tensor(v) and v:to("float64") or v end
    x, y, z = f64(x), f64(y), f64(z)
    local p = x * y
    local s = p + z
    if dtype == "float64" then
      local function split(v)
        local c = v * 134217729
        local hi = c - (c - v)
        return hi, v - hi
      end
      local xh, xl = split(x)
      local yh, yl = split(y)
      local perr = ((xh * yh - p) + xh * yl + xl * yh) + xl * yl -- p + perr = x y exactly
      local back = s - p
      s = s + (((p - (s - back)) + (z - back)) + perr)
    end
    return s:to(dtype)
  end

  local function linspace(fn, start, stop, steps, opts)
    local o
    steps, o = space_args(fn, steps, opts)
    start, stop, steps = number_of(start), number_of(stop), number_of(steps)
    check.number(start, fn, "start")
    check.number(stop, fn, "end")
    check.int(steps, fn, "steps", 0)
    opts = { dtype = o.dtype, device = o.device }
    if steps == 1 then return grad_if(wick.full({ 1 }, start, opts), o) end
    local dtype = o.dtype or wick.get_default_dtype()
    local info = wick._dtype_info[dtype]
    if info.is_floating and not info.is_complex then -- (start and end in the dtype first, as PyTorch's)
      start, stop = wick.full({}, start, { dtype = dtype }):item(), wick.full({}, stop, { dtype = dtype }):item()
    elseif not info.is_floating then
      start, stop = start < 0 and math.ceil(start) or floor(start), stop < 0 and math.ceil(stop) or floor(stop)
    end
    local step = (stop - start) / (steps - 1)
    if dtype == "float32" then -- (PyTorch's: the difference and the quotient each rounded to float32)
      local f32 = { dtype = "float32" }
      step = ((wick.full({}, stop, f32) - wick.full({}, start, f32)) / (steps - 1)):item()
    end
    local i = wick.arange(0, steps, { dtype = "float64" })
    -- the first half from start, the second from stop, as PyTorch's kernel: both ends exact, and each
    -- value start + step i (or stop - step (steps - 1 - i)) one fused multiply-add, as its compilers
    -- contract it, in float32 for float32 and the half types, else in float64
    local half = floor(steps / 2)
    local k = wick.where(i:lt(half), i, i - (steps - 1))
    local f64 = { dtype = "float64" }
    local base = wick.where(i:lt(half), wick.full({}, start, f64), wick.full({}, stop, f64))
    local low = dtype == "float32" or dtype == "float16" or dtype == "bfloat16"
    local v = ops._fma(k, step, base, low and "float32" or "float64")
    return grad_if(v:to({ dtype = dtype, device = o.device or wick.get_default_device() }), o)
  end
  -- start, end and steps by name too ({start = 0, ["end"] = 1, steps = 3}, PyTorch's keywords)
  local SPACE_NAMES = { "start", "end", "steps?" }
  local function by_name(fn, ...) return check.required(fn, SPACE_NAMES, ...) end
  function ops.linspace(...)
    local start, stop, steps, opts = by_name("linspace", ...)
    return linspace("linspace", start, stop, steps, opts)
  end
  --- wick.logspace(start, stop, steps[, base = 10[, opts]]): base ^ linspace(start, stop, steps)
  function ops.logspace(...)
    local start, stop, steps, base, opts = by_name("logspace", ...)
    if type(base) == "table" and not is_tensor(base) then base, opts = nil, base end
    local o
    steps, o = space_args("logspace", steps, opts)
    base = number_of(base or o.base)
    if base ~= nil then check.number(base, "logspace", "base") end
    local e = linspace("logspace", start, stop, steps, { dtype = "float64" })
    return grad_if((wick.full({}, base or 10, { dtype = "float64" }) ^ e):to({ dtype = o.dtype or wick.get_default_dtype(),
      device = o.device or wick.get_default_device() }), o)
  end
  --- wick.meshgrid(t1, t2, ...[, {indexing = "ij"}]) (or one table of tensors):
  --- coordinate grids; "xy" swaps the first two dims (NumPy's)
  function ops.meshgrid(...)
    local args = { ... }
    local opts
    if #args > 0 and type(args[#args]) == "table" and not is_tensor(args[#args]) and args[#args].indexing then
      opts = table.remove(args)
    end
    if #args == 1 and type(args[1]) == "table" and not is_tensor(args[1]) then args = args[1] end
    local indexing = check.options(opts, "meshgrid", { indexing = "string" }).indexing or "ij"
    check.one_of(indexing, "meshgrid", "indexing", { "ij", "xy" })
    local n = #args
    for i, t in ipairs(args) do
      check.tensor(t, "meshgrid", ("tensors[%d]"):format(i))
      if t:dim() > 1 then check.fail("meshgrid", "expected 0-D or 1-D tensors, got %d-D for tensors[%d]", t:dim(), i) end
    end
    local sizes = {}
    for i, t in ipairs(args) do sizes[i] = t:numel() end
    local order = {}
    for i = 1, n do order[i] = i end
    if indexing == "xy" and n >= 2 then order[1], order[2] = 2, 1 end
    local shape = {}
    for pos, i in ipairs(order) do shape[pos] = sizes[i] end
    local out = {}
    for i, t in ipairs(args) do
      local view = {}
      for pos, j in ipairs(order) do view[pos] = j == i and sizes[i] or 1 end
      out[i] = t:reshape(view):expand(shape)
    end
    if n > 1 then meshgrid_first[out[1]] = n end
    return unpack(out, 1, n)
  end

  -- ---- logical ops, counts, differences, selections ----

  local function as_bool(t) return t.dtype == "bool" and t or t:ne(0) end
  local function other_tensor(t, u, fn)
    if type(u) == "number" or type(u) == "boolean" then
      return wick.full({}, type(u) == "boolean" and (u and 1 or 0) or u, { device = t.device })
    end
    return check.tensor(u, fn, "other")
  end
  -- the other mask of a logical op: a tensor, as PyTorch's (a Lua boolean there is most often a
  -- tensor == tensor, which Lua answers with false rather than calling eq)
  local function other_mask(u, fn)
    if wick.is_tensor(u) then return as_bool(u) end
    check.fail(fn, "argument 'other' (position 2) must be Tensor, not %s%s", type(u) == "boolean" and "bool" or type(u),
      type(u) == "boolean" and " (a == b between two tensors is Lua's comparison, a boolean: write a:eq(b); and "
        .. "t:any() / t:all() are Lua booleans: t:flatten():any(1) is the 0-dim tensor)" or "")
  end
  --- t:logical_not(), t:logical_and(u), t:logical_or(u), t:logical_xor(u): bool results, nonzero is true
  function Tensor.logical_not(t) return check.tensor(t, "logical_not", "self"):eq(0) end
  function Tensor.logical_and(t, u)
    local a, b = as_bool(check.tensor(t, "logical_and", "self")), other_mask(u, "logical_and")
    return (a:to("int64") * b:to("int64")):ne(0)
  end
  function Tensor.logical_or(t, u)
    local a, b = as_bool(check.tensor(t, "logical_or", "self")), other_mask(u, "logical_or")
    return (a:to("int64") + b:to("int64")):ne(0)
  end
  function Tensor.logical_xor(t, u)
    local a, b = as_bool(check.tensor(t, "logical_xor", "self")), other_mask(u, "logical_xor")
    return a:ne(b)
  end
  --- t:count_nonzero([dim]): int64
  function Tensor.count_nonzero(t, dim)
    check.tensor(t, "count_nonzero", "self")
    local nz = t:ne(0):to("int64")
    if dim == nil then return nz:sum() end
    return nz:sum(dim)
  end
  --- t:hypot(u): sqrt(t^2 + u^2)
  function Tensor.hypot(t, u)
    t, u = ops._float_operands("hypot", t, u)
    return (t * t + u * u):sqrt()
  end
  local FLOAT_MAX = { float32 = 3.4028234663852886e38, float64 = 1.7976931348623157e308, float16 = 65504,
    bfloat16 = 3.3895313892515355e38 }
  --- t:nan_to_num([nan = 0[, posinf[, neginf]]]) (or an options table): NaN and
  --- infinities replaced; the infinities by the dtype's largest values by default
  function Tensor.nan_to_num(t, ...)
    check.tensor(t, "nan_to_num", "self")
    local o = check.positional("nan_to_num", { "nan", "posinf", "neginf" },
      { nan = "number", posinf = "number", neginf = "number" }, ...)
    if not t:is_floating_point() then return t:clone() end
    local big = FLOAT_MAX[t.dtype]
    local function fill(v) return wick.full({}, v, { dtype = t.dtype, device = t.device }) end
    local out = wick.where(t:ne(t), fill(o.nan or 0), t)
    out = wick.where(out:eq(huge), fill(o.posinf or big), out)
    return wick.where(out:eq(-huge), fill(o.neginf or -big), out)
  end
  function Tensor.nan_to_num_(t, ...) return check.tensor(t, "nan_to_num_", "self"):copy_(Tensor.nan_to_num(t, ...)) end
  --- t:diff([n = 1[, dim = -1[, prepend[, append]]]]) (or by name): differences of
  --- neighbours along dim, n times, after prepend and append are joined on along dim
  local DIFF = { n = "integer", dim = "integer", prepend = "tensor", append = "tensor" }
  function Tensor.diff(t, ...)
    check.tensor(t, "diff", "self")
    local o = check.positional("diff", { "n", "dim", "prepend", "append" }, DIFF, ...)
    local n = check.opt_int(o.n, "diff", "n", 1, 0)
    local d = wrap_dim(t, o.dim or -1, "diff")
    local out = t
    if o.prepend or o.append then
      local parts = {}
      for _, part in ipairs({ o.prepend or false, t, o.append or false }) do
        if part then parts[#parts + 1] = part end
      end
      out = wick.cat(parts, d)
    end
    for _ = 1, n do
      local len = out:size(d)
      if len <= 1 then -- (an empty slice of out: still in the graph, zero gradients, as PyTorch's)
        return out:narrow(d, 1, 0)
      end
      local hi, lo = out:narrow(d, 2, len - 1), out:narrow(d, 1, len - 1)
      out = out.dtype == "bool" and hi:logical_xor(lo) or hi - lo -- (PyTorch's diff of bools: the changes)
    end
    return out
  end
  --- wick.gradient(t[, {spacing = 1, dim = all, edge_order = 1}]) (torch.gradient): the
  --- derivative of t sampled on a grid, one tensor per dim in a list (`wick.gradient(f)[1]`,
  --- `local gy, gx = wick.gradient(f):unpack()`): central differences inside, one-sided
  --- differences of first or second order at the edges. spacing is one step for every dim,
  --- a list of steps, or a list of 1-D coordinate tensors (uneven grids: the
  --- second-order formula of unequal steps); an integer t gives the default dtype.
  local GRADIENT = { spacing = "number|table|tensor", dim = "integer|table", edge_order = "integer" }
  local function gradient_along(t, d, step, edge)
    local n = t:size(d)
    local function at(i, len) return t:narrow(d, i, len) end
    local first, inner, last
    if type(step) == "number" then
      if n > 2 then inner = (at(3, n - 2) - at(1, n - 2)) / (2 * step) end
      if edge == 1 then
        first, last = (at(2, 1) - at(1, 1)) / step, (at(n, 1) - at(n - 1, 1)) / step
      else
        first = (at(1, 1) * -1.5 + at(2, 1) * 2 - at(3, 1) * 0.5) / step
        last = (at(n - 2, 1) * 0.5 - at(n - 1, 1) * 2 + at(n, 1) * 1.5) / step
      end
    else -- coordinates: the steps h between them, shaped to broadcast along d
      local shape = {}
      for i = 1, t:dim() do shape[i] = i == d and -1 or 1 end
      local h = step:to(t.dtype):diff():view(shape)
      local function hat(i, len) return h:narrow(d, i, len) end
      if n > 2 then
        local hs, hd = hat(1, n - 2), hat(2, n - 2)
        inner = at(1, n - 2) * (-hd / (hs * (hs + hd))) + at(2, n - 2) * ((hd - hs) / (hs * hd))
          + at(3, n - 2) * (hs / (hd * (hs + hd)))
      end
      if edge == 1 then
        first, last = (at(2, 1) - at(1, 1)) / hat(1, 1), (at(n, 1) - at(n - 1, 1)) / hat(n - 1, 1)
      else
        local a, b = hat(1, 1), hat(2, 1)
        first = at(1, 1) * (-(a * 2 + b) / (a * (a + b))) + at(2, 1) * ((a + b) / (a * b))
          + at(3, 1) * (-a / (b * (a + b)))
        a, b = hat(n - 2, 1), hat(n - 1, 1)
        last = at(n - 2, 1) * (b / (a * (a + b))) - at(n - 1, 1) * ((a + b) / (a * b))
          + at(n, 1) * ((b * 2 + a) / (b * (a + b)))
      end
    end
    return wick.cat(inner and { first, inner, last } or { first, last }, d)
  end
  function wick.gradient(t, opts)
    check.tensor(t, "gradient", "input")
    local o = check.options(opts, "gradient", GRADIENT)
    local edge = o.edge_order or 1
    if edge ~= 1 and edge ~= 2 then check.fail("gradient", "torch.gradient only supports edge_order=1 and edge_order=2.") end
    if t.dtype == "bool" then
      check.fail("gradient", "subtraction with two bool tensors is not supported: give t:long() or a floating tensor")
    end
    local dims = {}
    if o.dim == nil then
      for i = 1, t:dim() do dims[i] = i end
    else
      for i, d in ipairs(type(o.dim) == "table" and o.dim or { o.dim }) do dims[i] = wrap_dim(t, d, "gradient") end
    end
    local spacing = o.spacing
    if spacing == nil or type(spacing) == "number" or check.is_tensor(spacing) and spacing:dim() == 0 then
      local step = spacing == nil and 1 or check.is_tensor(spacing) and spacing:item() or spacing
      spacing = {}
      for i = 1, #dims do spacing[i] = step end
    elseif check.is_tensor(spacing) or #spacing ~= #dims then
      check.fail("gradient", "expected spacing to be unspecified, a scalar, or a list of length equal to %s, but got %s",
        o.dim == nil and ("'self.dim() = %d', since dim argument was not given"):format(t:dim()) or "the number of dims",
        check.is_tensor(spacing) and "a tensor (give a list of coordinate tensors, one per dim)"
          or ("a list of length %d"):format(#spacing))
    end
    if not wick.is_floating_point(t) then t = t:to(wick.get_default_dtype()) end
    local out = {}
    for i, d in ipairs(dims) do
      if t:size(d) < edge + 1 then
        check.fail("gradient", "torch.gradient expected each dimension size to be at least edge_order+1 (dim %d has %d)",
          d, t:size(d))
      end
      local step = spacing[i]
      if check.is_tensor(step) and step:dim() == 0 then step = step:item() end
      if check.is_tensor(step) then
        if step:dim() ~= 1 or step:size(1) ~= t:size(d) then
          check.fail("gradient", "spacing[%d] holds coordinates of shape [%s] for dim %d of size %d: give a 1-D tensor of %d",
            i, table.concat(step:size(), ", "), d, t:size(d), t:size(d))
        end
      elseif type(step) ~= "number" then
        check.fail("gradient", "spacing[%d] must be a number or a 1-D tensor of coordinates, got %s", i, type(step))
      end
      out[i] = gradient_along(t, d, step, edge)
    end
    return check.list(out)
  end
  --- t:trace(): the sum of a matrix's diagonal
  function Tensor.trace(t)
    check.tensor(t, "trace", "self")
    if t:dim() ~= 2 then check.fail("trace", "expected a matrix, but got tensor with dim %d", t:dim()) end
    return wick._autocast_float32(t):diag():sum()
  end
  --- t:movedim(source, destination) (t:moveaxis): dims moved, the others in their order; a view
  function Tensor.movedim(t, src, dst)
    check.tensor(t, "movedim", "self")
    local srcs, dsts = dims_arg(t, src, "movedim"), dims_arg(t, dst, "movedim")
    if #srcs ~= #dsts then
      check.fail("movedim", "Invalid source or destination dims: source (%d dims) should contain the same number of dims as destination (%d dims)", #srcs, #dsts)
    end
    local n, perm, used, taken = t:dim(), {}, {}, {}
    for i, sd in ipairs(srcs) do
      if taken[sd] or perm[dsts[i]] then check.fail("movedim", "repeated dim in source or destination") end
      perm[dsts[i]], taken[sd] = sd, true
    end
    local rest = {}
    for d = 1, n do if not taken[d] then rest[#rest + 1] = d end end
    local k = 1
    for pos = 1, n do
      if not perm[pos] then perm[pos], k = rest[k], k + 1 end
      used[pos] = true
    end
    if n == 0 then return t:view({}) end
    return t:permute(perm)
  end
  Tensor.moveaxis = Tensor.movedim
  --- t:take(index): t as 1-D, at the 1-based positions of index (index's shape;
  --- negative from the end, as PyTorch's take)
  function Tensor.take(t, index)
    check.tensor(t, "take", "self")
    check.tensor(index, "take", "index")
    return t:reshape(-1)[index:reshape(-1)]:view(index.shape)
  end

  --- wick.as_strided(t, size, stride[, storage_offset]) / t:as_strided: PyTorch's view of
  --- t's storage with these sizes and strides (in elements; the offset, 0-based, counts from
  --- the storage's start: t's own offset by default); size, stride and storage_offset by name too.
  --- A tensor that requires grad (in grad mode) gives the same elements as a copy that carries the
  --- gradient, when they are elements of t (a strided view too: Longformer's _chunk of a
  --- transposed reshape); elsewhere, or on a t whose elements overlap, an error.
  local AS_STRIDED = { size = "table", stride = "table", storage_offset = "integer" }
  -- the 0-based storage positions of a (size, stride) view from offset, in its shape
  local function storage_positions(size, stride, offset, device)
    local I64 = { dtype = "int64", device = device }
    local pos = wick.full({}, offset, I64)
    for k = 1, #size do
      local shape = {}
      for j = 1, #size do shape[j] = j == k and size[k] or 1 end
      pos = pos + (wick.arange(size[k], I64) * stride[k]):view(shape)
    end
    return pos
  end
  function Tensor.as_strided(t, ...)
    check.tensor(t, "as_strided", "input")
    -- (an options table names size, stride or storage_offset: {} is an empty size, torchdiffeq's (), ())
    local n = select("#", ...)
    local last = n > 0 and select(n, ...) or nil
    local named = n > 0 and type(last) == "table" and getmetatable(last) == nil and #last == 0 and next(last) ~= nil
    local size, stride, storage_offset = ...
    if named then
      local o = check.positional("as_strided", { "size", "stride", "storage_offset" }, AS_STRIDED, ...)
      size, stride, storage_offset = o.size, o.stride, o.storage_offset
    end
    local function list(v, what)
      if getmetatable(v) == wick.Size then v = v:totable() end
      if type(v) ~= "table" then check.expected("as_strided", what, "a table of integers", v) end
      return v
    end
    size, stride = list(size, "size"), list(stride, "stride")
    local offset = storage_offset == nil and t:storage_offset() or check.int(storage_offset, "as_strided", "storage_offset", 0)
    local view = core.as_strided(t, size, stride, offset)
    if not (t.requires_grad and wick.is_grad_enabled()) then return view end
    local pos = storage_positions(size, stride, offset, t.device) -- each element's place in the storage
    local n, base = t:numel(), t:storage_offset()
    local at -- each element's 0-based place in t, -1 for none
    if t:is_contiguous() then
      at = pos - base
      if pos:numel() > 0 and (at:min():item() < 0 or at:max():item() >= n) then at = nil end
    else -- (t's elements by their storage places: an inverse map over the span they cover)
      local mine = storage_positions(t:size():totable(), t:stride(), base, t.device):reshape(-1)
      local lo, hi = n > 0 and mine:min():item() or 0, n > 0 and mine:max():item() or -1
      local inverse = wick.full({ hi - lo + 1 }, -1, { dtype = "int64", device = t.device })
      inverse:scatter_(1, mine - lo + 1, wick.arange(n, { dtype = "int64", device = t.device }))
      if inverse:ge(0):sum():item() ~= n then
        check.fail("as_strided", "of a tensor that requires grad whose elements overlap (an expanded tensor): "
          .. "make it contiguous first, or detach it")
      end
      local inside = pos:ge(lo):logical_and(pos:le(hi))
      if pos:numel() > 0 and inside:all() then
        at = inverse[(pos - lo + 1):reshape(-1)]:view(pos.shape)
        if at:numel() > 0 and at:min():item() < 0 then at = nil end
      end
    end
    if not at then
      check.fail("as_strided", "of a tensor that requires grad: only elements of the tensor itself "
        .. "(detach it, or make it contiguous first)")
    end
    return t:reshape(-1)[(at + 1):reshape(-1)]:view(view.shape)
  end
  wick.as_strided = Tensor.as_strided
  --- t:as_strided_(size, stride[, storage_offset]): t itself takes that view of its storage (PyTorch's in-place
  --- form; a leaf that requires grad is PyTorch's error)
  function Tensor.as_strided_(t, size, stride, storage_offset)
    check.tensor(t, "as_strided_", "self")
    if t.requires_grad and wick.is_grad_enabled() then
      check.fail("as_strided_", t.is_leaf and "a leaf Variable that requires grad is being used in an in-place operation."
        or "of a tensor that requires grad: use as_strided, or detach it")
    end
    local view = Tensor.as_strided(t, size, stride, storage_offset)
    return t:_replace(view)
  end

  -- index_add's and index_copy's index: int64 (or int32) positions 1..size
  -- along dim, as PyTorch checks them (they do not count from the end)
  local function positive_index(fn, t, d, index)
    local dt = index.dtype
    if dt ~= "int64" and dt ~= "int32" then
      check.fail(fn, "expected dtype int32/int64 for index, got %s (Lua numbers make tensors of the default floating dtype: "
        .. "make it with {dtype = \"int64\"} or :long())", dt)
    end
    if index:numel() == 0 then return end
    local lo, hi, size = index:min():item(), index:max():item(), t:dim() == 0 and 1 or t:size(d)
    if lo < 1 or hi > size then
      check.fail(fn, "index %d is out of bounds for dimension %d with size %d (indices are 1-based)",
        lo < 1 and lo or hi, d, size)
    end
  end
  for _, name in ipairs({ "index_copy", "index_copy_" }) do
    local c = Tensor[name]
    Tensor[name] = function(t, dim, index, ...)
      if is_tensor(t) and is_tensor(index) and type(dim) == "number" then
        positive_index(name, t, wrap_dim(t, dim, name), index)
      end
      return c(t, dim, index, ...)
    end
  end
  wick.index_copy = function(t, ...) return Tensor.index_copy(t, ...) end

  --- t:index_add(dim, index, source[, {alpha = 1}]) and index_add_: slice
  --- index[i] of t along dim plus alpha times slice i of source (repeated
  --- indices add up)
  local ALPHA = { alpha = "number" }
  local function index_add(t, dim, index, source, opts, fn, inplace)
    check.tensor(t, fn, "self")
    local d = wrap_dim(t, dim, fn)
    check.tensor(index, fn, "index")
    check.tensor(source, fn, "source")
    local alpha = type(opts) == "number" and opts or check.options(opts, fn, ALPHA).alpha or 1
    if index:dim() > 1 then check.fail(fn, "index should have at most one dimension, got %d", index:dim()) end
    positive_index(fn, t, d, index)
    if source.dtype ~= t.dtype then
      check.fail(fn, "self (%s) and source (%s) must have the same scalar type, as PyTorch's", t.dtype, source.dtype)
    end
    local src = alpha == 1 and source or source * alpha
    local out = t:movedim(d, 1):index_put({ index:reshape(-1) }, src:movedim(d, 1), true):movedim(1, d)
    if inplace then return t:copy_(out) end
    return out
  end
  function Tensor.index_add(t, dim, index, source, opts) return index_add(t, dim, index, source, opts, "index_add", false) end
  function Tensor.index_add_(t, dim, index, source, opts) return index_add(t, dim, index, source, opts, "index_add_", true) end

  -- the scatter family's arguments checked: self, dim (0-based d), index, src
  local function scatter_args(t, dim, index, src, fn)
    check.tensor(t, fn, "self")
    local d = wrap_dim(t, dim, fn)
    check.tensor(index, fn, "index")
    check.tensor(src, fn, "src")
    if index.dtype ~= "int64" and index.dtype ~= "int32" then -- (as scatter and gather: never truncated)
      check.fail(fn, "expected the index to be an int64 tensor, but got %s%s", index.dtype, index:is_floating_point()
        and " (Lua numbers make tensors of the default floating dtype: make the index with {dtype = \"int64\"} or :long())" or "")
    end
    if index:dim() ~= t:dim() then
      check.fail(fn, "Index tensor must have the same number of dimensions as self tensor (%d), got %d", t:dim(), index:dim())
    end
    return d
  end
  -- the 0-based flat position in t of each element of index (index's shape): its
  -- coordinates, with dim's from index
  local function scatter_positions(t, d, index, fn)
    local I64 = { dtype = "int64", device = t.device }
    local lo, hi = index:min():item(), index:max():item()
    local bad = lo < 1 and lo or hi > t:size(d) and hi or nil
    if bad then
      check.fail(fn, "index %d is out of bounds for dimension %d with size %d (indices are 1-based)", bad, d, t:size(d))
    end
    local flat = wick.zeros(index.shape, I64)
    local stride = 1
    for k = t:dim(), 1, -1 do
      local coord
      if k == d then
        coord = index:to("int64") - 1
      else
        local shape = {}
        for j = 1, index:dim() do shape[j] = j == k and index:size(k) or 1 end
        coord = wick.arange(0, index:size(k), I64):view(shape)
      end
      flat = flat + coord * stride
      stride = stride * t:size(k)
    end
    return flat:reshape(-1)
  end
  -- src's elements that index's take part (src may be larger), flat
  local function scatter_values(src, index)
    if src:dim() ~= index:dim() then return src:reshape(-1) end
    local box = {}
    for j = 1, index:dim() do box[j] = { 1, index:size(j) } end
    return src[box]:reshape(-1)
  end

  --- t:scatter_add(dim, index, src) and scatter_add_: t[... index[i][j] ...] += src[i][j] along dim (1-based)
  -- nothing to scatter: t (or its copy) as it is, though of src's graph still (zero gradients
  -- reach src, as PyTorch's: PyG's scatter over a graph without edges); x + -0.0 is x, -0.0 too
  local function nothing_scattered(t, src, inplace)
    local out = inplace and t or t:clone()
    if src.requires_grad and wick.is_grad_enabled() then out:add_(src:sum():neg()) end
    return out
  end
  local function scatter_add(t, dim, index, src, fn, inplace)
    local d = scatter_args(t, dim, index, src, fn)
    if src.dtype ~= t.dtype then
      check.fail(fn, "Expected self.dtype to be equal to src.dtype (%s and %s), as PyTorch", t.dtype, src.dtype)
    end
    if index:numel() == 0 then return nothing_scattered(t, src, inplace) end
    local flat = scatter_positions(t, d, index, fn)
    local out = t:reshape(-1):index_put({ flat + 1 }, scatter_values(src, index), true):view(t.shape)
    if inplace then return t:copy_(out) end
    return out
  end

  --- t:scatter(dim, index, src) (src a tensor or a number) and scatter_: the C
  --- op, and under autograd a Function with PyTorch's gradients (self: zero
  --- where written; src: the gradient gathered at index)
  local core_scatter, core_scatter_ = Tensor.scatter, Tensor.scatter_
  local ScatterFn
  local function scatter_fn()
    ScatterFn = wick.autograd.Function:extend("Scatter")
    function ScatterFn.forward(ctx, t, src, dim, index, value)
      ctx.dim, ctx.index = dim, index
      ctx.src_shape = src and src:size()
      return core_scatter(t, dim, index, src or value)
    end
    function ScatterFn.backward(ctx, g)
      local gt = ctx.needs_input_grad[1] and g:scatter(ctx.dim, ctx.index, 0) or nil
      local gs
      if ctx.needs_input_grad[2] then
        gs = g:gather(ctx.dim, ctx.index)
        local larger = false
        for j = 1, gs:dim() do larger = larger or ctx.src_shape[j] ~= gs:size(j) end
        if larger then -- src larger than index (PyTorch refuses its gradient then)
          local box = {}
          for j = 1, gs:dim() do box[j] = { 1, gs:size(j) } end
          local full = wick.zeros(ctx.src_shape, { dtype = gs.dtype, device = gs.device })
          full[box] = gs
          gs = full
        end
      end
      return gt, gs
    end
    return ScatterFn
  end
  local function tracked(...)
    if not wick.is_grad_enabled() then return false end
    for i = 1, select("#", ...) do
      local v = select(i, ...)
      if is_tensor(v) and v.requires_grad then return true end
    end
    return false
  end
  -- PyTorch's scatter(..., reduce = "add" | "multiply") (or {reduce = ...}): scatter_reduce's sum or prod
  local scatter_reduce
  local function scatter_with(t, dim, index, src, reduce, fn, inplace)
    if type(reduce) == "table" and getmetatable(reduce) == nil then reduce = check.options(reduce, fn, { reduce = "string" }).reduce end
    check.one_of(reduce, fn, "reduce", { "add", "multiply" })
    if not is_tensor(src) then
      check.number(src, fn, "value")
      check.tensor(index, fn, "index")
      src = wick.full(index.shape, src, { dtype = t.dtype, device = t.device })
    end
    return scatter_reduce(t, dim, index, src, reduce == "add" and "sum" or "prod", nil, fn, inplace)
  end
  function Tensor.scatter(t, dim, index, src, ...)
    if select("#", ...) > 0 then return scatter_with(t, dim, index, src, ..., "scatter", false) end
    if not tracked(t, src) then return core_scatter(t, dim, index, src) end
    scatter_args(t, dim, index, is_tensor(src) and src or t, "scatter")
    if is_tensor(src) then return (ScatterFn or scatter_fn()).apply(t, src, dim, index) end
    return (ScatterFn or scatter_fn()).apply(t, nil, dim, index, src)
  end
  function Tensor.scatter_(t, dim, index, src, ...)
    if select("#", ...) > 0 then return scatter_with(t, dim, index, src, ..., "scatter_", true) end
    if not tracked(t, src) then return core_scatter_(t, dim, index, src) end
    return t:copy_(Tensor.scatter(t, dim, index, src))
  end

  --- t:scatter_reduce(dim, index, src, reduce[, {include_self = true}]) and
  --- scatter_reduce_: each position of t that index names gets the src values
  --- sent there combined by reduce ("sum", "prod", "mean", "amax", "amin"),
  --- with t's own value unless include_self is false; positions not named keep
  --- t's value. Gradients as PyTorch's (amax/amin split among the elements equal
  --- to the result; none for "prod").
  local REDUCE = { "sum", "prod", "mean", "amax", "amin" }
  local ExtremaFn
  local function extrema_fn()
    ExtremaFn = wick.autograd.Function:extend("ScatterReduce")
    -- (self flat, values flat, their 0-based positions, the result computed
    -- without a graph, include_self)
    function ExtremaFn.forward(ctx, self_flat, vals, pos, out, include_self)
      local at = pos + 1
      local hit = wick.zeros(self_flat:numel(), { dtype = "bool", device = self_flat.device }):index_fill(1, at, true)
      local from_vals = vals:eq(out:index_select(1, at)):to(vals.dtype)
      local same = self_flat:eq(out):to(vals.dtype)
      -- PyTorch's count of ties has t's element in it even when not included
      local count = same:index_put({ at }, from_vals, true)
      ctx.at, ctx.share_vals = at, from_vals / count:index_select(1, at)
      ctx.share_self = (include_self and same or hit:logical_not():to(vals.dtype)) / count
      return out:clone()
    end
    function ExtremaFn.backward(ctx, g)
      return g * ctx.share_self, g:index_select(1, ctx.at) * ctx.share_vals, nil, nil, nil
    end
    return ExtremaFn
  end
  -- each position's extreme (amax/amin) or product of vals, without a graph
  local function grouped(self_flat, vals, pos, reduce, include_self)
    local out = self_flat:clone()
    if reduce == "prod" then
      local v, p, r, seen = vals:totable(), pos:totable(), out:totable(), {}
      for i = 1, #v do
        local k = p[i] + 1
        if not seen[k] then seen[k] = true; if not include_self then r[k] = 1 end end
        r[k] = r[k] * v[i]
      end
      return wick.tensor(r, { dtype = out.dtype, device = out.device })
    end
    local sorted, order = vals:sort() -- values ascending, then positions grouped (the sort is stable)
    local grouped_pos, by_pos = pos:index_select(1, order):sort()
    sorted = sorted:index_select(1, by_pos)
    local m = grouped_pos:numel()
    local pick = wick.ones(m, { dtype = "bool", device = out.device })
    if m > 1 then -- amax: a group's last element; amin: its first
      local differs = grouped_pos:narrow(1, 2, m - 1):ne(grouped_pos:narrow(1, 1, m - 1))
      if reduce == "amax" then pick[{ { 1, m - 1 } }] = differs else pick[{ { 2, m } }] = differs end
    end
    local at, best = grouped_pos[pick] + 1, sorted[pick]
    if include_self then
      local own = out:index_select(1, at)
      best = reduce == "amax" and wick.maximum(best, own) or wick.minimum(best, own)
    end
    return out:index_put({ at }, best)
  end
  -- The index along d alone (1-D) when index is one index expanded over its
  -- other dims (stride 0: a GNN's dst:unsqueeze(-1):expand(E, F)), else nil
  local function expanded_rows(index, d)
    for k = 1, index:dim() do
      if k ~= d and index:size(k) > 1 and index:stride(k) ~= 0 then return nil end
    end
    local v = index
    for k = index:dim(), 1, -1 do if k ~= d then v = v:select(k, 1) end end
    return v:to("int64")
  end
  -- amax/amin of whole rows: t's slices along d (within index's extent on the
  -- other dims) reduced with src's slices sent to them by the 1-D index rows.
  -- The E rows are sorted by their index (E keys, not E x F elements), then
  -- each run of equal keys is reduced by doubling: after the step of span s a
  -- row holds the extreme of the 2s rows from it in its run, so log2 of the
  -- longest run steps leave each run's first row with the run's extreme.
  local function grouped_rows(t, d, index, rows, src, reduce, include_self)
    local extreme = reduce == "amax" and wick.maximum or wick.minimum
    local box = {}
    for k = 1, t:dim() do box[k] = k == d and {} or { 1, index:size(k) } end
    local E = rows:numel()
    local S = src[(function()
      local b = {}
      for k = 1, src:dim() do b[k] = { 1, index:size(k) } end
      return b
    end)()]:movedim(d, 1):reshape(E, -1)
    local block = t[box]
    local target = block:movedim(d, 1)
    local width = S:size(2)
    local keys, order = rows:sort({ stable = true })
    S = S:index_select(1, order)
    local longest = wick.bincount(keys):max():item()
    local span = 1
    while span < longest do
      local n = E - span
      local head, tail = S:narrow(1, 1, n), S:narrow(1, 1 + span, n)
      local same = keys:narrow(1, 1, n):eq(keys:narrow(1, 1 + span, n)):unsqueeze(2)
      head:copy_(wick.where(same, extreme(head, tail), head)) -- (computed whole before the write)
      span = span * 2
    end
    local first = wick.ones(E, { dtype = "bool", device = keys.device })
    if E > 1 then first[{ { 2, E } }] = keys:narrow(1, 2, E - 1):ne(keys:narrow(1, 1, E - 1)) end
    local at, best = keys[first], S[first]
    local flat_target = target:reshape(target:size(1), width)
    if include_self then best = extreme(best, flat_target:index_select(1, at)) end
    local done = flat_target:index_copy(1, at, best):view(target.shape):movedim(1, d)
    local out = t:clone()
    out[box] = done
    return out
  end
  function scatter_reduce(t, dim, index, src, reduce, opts, fn, inplace)
    local d = scatter_args(t, dim, index, src, fn)
    check.one_of(reduce, fn, "reduce", REDUCE)
    local include_self = check.options(opts, fn, { include_self = "boolean" }).include_self ~= false
    if index:numel() == 0 then return nothing_scattered(t, src, inplace) end
    local rows = (reduce == "amax" or reduce == "amin") and src:dim() == index:dim() and expanded_rows(index, d)
    if rows then
      local lo, hi = rows:min():item(), rows:max():item()
      if lo < 1 or hi > t:size(d) then
        check.fail(fn, "index %d is out of bounds for dimension %d with size %d (indices are 1-based)",
          lo < 1 and lo or hi, d, t:size(d))
      end
      if not tracked(t, src) then -- (no flat positions needed)
        local out = grouped_rows(t, d, index, rows, src:to(t.dtype), reduce, include_self)
        if inplace then return t:copy_(out) end
        return out
      end
    end
    local pos = scatter_positions(t, d, index, fn)
    local vals = scatter_values(src, index):to(t.dtype)
    local self_flat = t:reshape(-1)
    local out
    if reduce == "sum" or reduce == "mean" then
      local base = include_self and self_flat or self_flat:index_fill(1, pos + 1, 0)
      out = base:index_put({ pos + 1 }, vals, true)
      if reduce == "mean" then
        local count = wick.zeros(self_flat:numel(), { dtype = t.dtype, device = t.device })
          :index_put({ pos + 1 }, wick.ones_like(vals), true) + (include_self and 1 or 0)
        count = count:clamp_min(1) -- (positions not named: t's value over 1)
        out = t:is_floating_point() and out / count or out:div(count, { rounding_mode = "floor" })
      end
    else
      if reduce == "prod" and tracked(t, src) then
        check.fail(fn, "the gradient of reduce='prod' is not supported; compute it under wick.no_grad")
      end
      local r = wick.no_grad(function()
        if rows then return grouped_rows(t:detach(), d, index, rows, src:detach():to(t.dtype), reduce, include_self):reshape(-1) end
        return grouped(self_flat:detach(), vals:detach(), pos, reduce, include_self)
      end)
      out = tracked(t, src) and (ExtremaFn or extrema_fn()).apply(self_flat, vals, pos, r, include_self) or r
    end
    out = out:view(t.shape)
    if inplace then return t:copy_(out) end
    return out
  end
  function Tensor.scatter_reduce(t, dim, index, src, reduce, opts)
    return scatter_reduce(t, dim, index, src, reduce, opts, "scatter_reduce", false)
  end
  function Tensor.scatter_reduce_(t, dim, index, src, reduce, opts)
    return scatter_reduce(t, dim, index, src, reduce, opts, "scatter_reduce_", true)
  end
  -- segment_reduce's identity per reduction (an empty segment's value without `initial`) and
  -- scatter_reduce's name for it
  local SEGMENT = { sum = { 0, "sum" }, mean = { 0 / 0, "mean" }, max = { -math.huge, "amax" },
    min = { math.huge, "amin" }, prod = { 1, "prod" } }
  SEGMENT.amax, SEGMENT.amin = SEGMENT.max, SEGMENT.min -- (PyG's reduce names)
  local SEGMENT_OPTS = { lengths = "tensor|table", offsets = "tensor|table", indices = "any", axis = "integer",
    unsafe = "boolean", initial = "number" }
  --- wick.segment_reduce(data, reduce[, {lengths =, offsets =, axis = 1, unsafe = false, initial =}]):
  --- data reduced ("sum", "mean", "max", "min", "prod") over consecutive segments of dim axis,
  --- their lengths given as 1-D `lengths` or `offsets` (lengths[i] = offsets[i + 1] - offsets[i]),
  --- as torch.segment_reduce (PyG's torch._segment_reduce(src, reduce, offsets=ptr)); an empty
  --- segment gives the reduction's identity (NaN for mean), or `initial`, which also joins every
  --- segment as PyTorch's does
  function ops.segment_reduce(data, reduce, opts)
    local fn = "segment_reduce"
    check.tensor(data, fn, "data")
    local how = SEGMENT[reduce]
    if not how then check.fail(fn, "reduce must be 'sum', 'mean', 'max', 'min' or 'prod', got %s", check.describe(reduce)) end
    local o = check.options(opts, fn, SEGMENT_OPTS)
    if o.indices ~= nil then check.fail(fn, "indices is not supported yet (nor by PyTorch): give lengths or offsets") end
    local lengths
    local function int64(v, name)
      if not is_tensor(v) then v = wick.tensor(v, { dtype = "int64", device = data.device }) end
      if v:is_floating_point() or v:dim() ~= 1 then check.fail(fn, "%s must be a 1-D integer tensor, got %s %s", name, v.dtype, tostring(v.shape)) end
      return v:to(data.device):long()
    end
    if o.offsets ~= nil then
      local off = int64(o.offsets, "offsets")
      if off:numel() == 0 then check.fail(fn, "offsets must have at least one entry") end
      lengths = off:narrow(1, 2, off:numel() - 1) - off:narrow(1, 1, off:numel() - 1)
    elseif o.lengths ~= nil then
      lengths = int64(o.lengths, "lengths")
    else
      check.fail(fn, "Either lengths or offsets must be defined")
    end
    local nd = data:dim()
    if nd == 0 then check.fail(fn, "data must have at least one dimension") end
    local axis = o.axis or 1
    if axis < 0 then axis = nd + 1 + axis end
    if axis < 1 or axis > nd then check.fail(fn, "axis %d is out of range for %d dims (dims count from 1)", o.axis, nd) end
    if lengths:lt(0):any() then check.fail(fn, "lengths contains negative value!") end
    if not o.unsafe and lengths:sum():item() ~= data:size(axis) then
      check.fail(fn, "Expected all rows of lengths along axis to sum to data.size(lengths.dim()-1) when !unsafe (the "
        .. "lengths sum to %d, data has %d along dim %d)", lengths:sum():item(), data:size(axis), axis)
    end
    local nseg = lengths:numel()
    local x = data:movedim(axis, 1)
    local ids = wick.arange(1, nseg + 1, { dtype = "int64", device = data.device }):repeat_interleave(lengths)
    local shape = x:size()
    local at = ids
    for _ = 2, #shape do at = at:unsqueeze(-1) end
    at = at:expand(shape)
    shape[1] = nseg
    local start = o.initial ~= nil and o.initial or how[1]
    local out = wick.full(shape, start, { dtype = data.dtype, device = data.device })
    out = out:scatter_reduce(1, at, x, how[2], { include_self = o.initial ~= nil and reduce ~= "mean" })
    if o.initial ~= nil and reduce == "mean" then -- PyTorch's: (sum + initial) / count, initial alone when empty
      local sums = wick.zeros(shape, { dtype = data.dtype, device = data.device }):scatter_add(1, at, x) + o.initial
      local counts = lengths:clamp_min(1):to(data.dtype)
      for _ = 2, #shape do counts = counts:unsqueeze(-1) end
      out = sums / counts
    end
    return out:movedim(1, axis)
  end

  --- t:index_reduce(dim, index, source, reduce[, {include_self = true}]) and
  --- index_reduce_: slice index[i] of t along dim combined with slice i of
  --- source by reduce ("prod", "mean", "amax", "amin"), as scatter_reduce
  local function index_reduce(t, dim, index, source, reduce, opts, fn, inplace)
    check.tensor(t, fn, "self")
    local d = wrap_dim(t, dim, fn)
    check.tensor(index, fn, "index")
    check.tensor(source, fn, "source")
    check.one_of(reduce, fn, "reduce", { "prod", "mean", "amax", "amin" })
    if index:dim() > 1 then check.fail(fn, "index should have at most one dimension, got %d", index:dim()) end
    if source:dim() ~= t:dim() or source:size(d) ~= index:numel() then
      check.fail(fn, "source must have self's dims with index's %d entries along dim %d", index:numel(), d)
    end
    local shape = {}
    for j = 1, source:dim() do shape[j] = j == d and index:numel() or 1 end
    local full = index:reshape(shape):expand(source:size())
    return scatter_reduce(t, d, full, source, reduce, opts, fn, inplace)
  end
  function Tensor.index_reduce(t, dim, index, source, reduce, opts)
    return index_reduce(t, dim, index, source, reduce, opts, "index_reduce", false)
  end
  function Tensor.index_reduce_(t, dim, index, source, reduce, opts)
    return index_reduce(t, dim, index, source, reduce, opts, "index_reduce_", true)
  end
  function Tensor.scatter_add(t, dim, index, src) return scatter_add(t, dim, index, src, "scatter_add", false) end
  function Tensor.scatter_add_(t, dim, index, src) return scatter_add(t, dim, index, src, "scatter_add_", true) end

  --- t:median([dim[, keepdim]]) (or {dim =, keepdim =}): the lower median (PyTorch's);
  --- with dim (or keepdim alone, which means dim = -1 as in PyTorch) the values and
  --- their 1-based indices
  --- t:nanmedian(...): the same over the values that are not NaN (NaN where all are)
  local DIM_KEEPDIM = { dim = "integer", keepdim = "boolean", keepdims = "boolean" }
  -- the lower median along d as PyTorch's: a NaN in a slice makes its median that
  -- NaN (the first, by position), unless skip_nan: then the median of the others
  local function median_along(t, d, keepdim, skip_nan)
    local n = t:dim() > 0 and t:size(d) or 1
    if not t:is_floating_point() then return Tensor.kthvalue(t, floor((n - 1) / 2) + 1, d, keepdim) end
    local v, i = t:sort(d, { stable = true }) -- (NaNs last, in their order)
    local count = t:isnan():logical_not():sum(d, true) -- the values that are not NaN
    local k
    if skip_nan then k = (count - 1):clamp_min(0):div(2, { rounding_mode = "floor" }) + 1
    else k = wick.where(count:lt(n), count + 1, floor((n - 1) / 2) + 1) end
    if t:dim() == 0 then v, i, k = v:reshape(1), i:reshape(1), k:reshape(1) end
    v, i = v:gather(math.max(d, 1), k), i:gather(math.max(d, 1), k)
    if t:dim() == 0 then return v:reshape({}), i:reshape({}) end
    if not keepdim then v, i = v:squeeze(d), i:squeeze(d) end
    return v, i
  end
  for name, skip_nan in pairs({ median = false, nanmedian = true }) do
    Tensor[name] = function(t, ...)
      check.tensor(t, name, "self")
      local o, keepdim, keepdim_given = reduction_args(name, { "dim", "keepdim" }, DIM_KEEPDIM, ...)
      local dim = o.dim
      if dim == nil and keepdim_given then dim = -1 end
      if dim == nil then
        local flat = t:reshape(-1)
        if flat:numel() == 0 then -- (PyTorch's NaN; an integer tensor's has none: an error)
          if not t:is_floating_point() then check.fail(name, "%s() input tensor cannot be empty", name) end
          return wick.full({}, 0 / 0, { dtype = t.dtype, device = t.device })
        end
        return (median_along(flat, 1, false, skip_nan))
      end
      local d = wrap_dim(t, dim, name)
      if t:dim() > 0 and t:size(d) == 0 then
        check.fail(name, "%s(): Expected reduction dim %d to have non-zero size.", name, d)
      end
      return median_along(t, d, keepdim, skip_nan)
    end
  end
  --- t:kthvalue(k[, dim = -1[, keepdim]]) (or k, {dim =, keepdim =}): the k-th smallest
  --- values along dim and their 1-based indices
  local KTHVALUE = { k = "integer", dim = "integer", keepdim = "boolean", keepdims = "boolean" }
  function Tensor.kthvalue(t, ...)
    check.tensor(t, "kthvalue", "self")
    local o, keepdim = reduction_args("kthvalue", { "k", "dim", "keepdim" }, KTHVALUE, ...)
    local k = o.k
    local d = wrap_dim(t, o.dim or -1, "kthvalue")
    local n = t:dim() > 0 and t:size(d) or 1
    check.int(k, "kthvalue", "k")
    if k < 1 or k > n then check.fail("kthvalue", "k (%d) is out of range for dimension of size %d", k, n) end
    local v, i = t:sort(d)
    v, i = v:narrow(d, k, 1), i:narrow(d, k, 1)
    if not keepdim and t:dim() > 0 then v, i = v:squeeze(d), i:squeeze(d) end
    return v, i
  end

  -- unique{dim = d}: the distinct slices along d, sorted lexicographically (stable
  -- sorts from the last element of a slice to the first), with the inverse and counts
  local function unique_slices(t, opts)
    local d = wrap_dim(t, opts.dim, "unique")
    local n = t:size(d)
    local I64 = { dtype = "int64", device = t.device }
    local rows = t:movedim(d, 1):reshape(n, -1) -- one slice per row
    local order = wick.arange(1, n + 1, I64)
    if n > 0 then
      for c = rows:size(2), 1, -1 do
        local _, o = rows:index_select(1, order):select(2, c):sort() -- stable
        order = order:index_select(1, o)
      end
    end
    local sorted = rows:index_select(1, order)
    local change = wick.ones({ n }, { dtype = "bool", device = t.device })
    if n > 1 then change:narrow(1, 2, n - 1):copy_(sorted:narrow(1, 2, n - 1):ne(sorted:narrow(1, 1, n - 1)):any(2)) end
    local keep = change:nonzero():reshape(-1)
    local shape = t:movedim(d, 1):size()
    shape[1] = keep:numel()
    local values = sorted:index_select(1, keep):reshape(shape):movedim(1, d)
    local inverse, counts
    if opts.return_inverse then
      inverse = wick.zeros({ n }, I64):scatter(1, order, change:to("int64"):cumsum(1))
    end
    if opts.return_counts then counts = wick.cat({ keep, wick.full({ 1 }, n + 1, I64) }):diff() end
    if opts.return_inverse and opts.return_counts then return values, inverse, counts end
    if opts.return_inverse then return values, inverse end
    if opts.return_counts then return values, counts end
    return values
  end

  --- t:unique([sorted = true[, return_inverse = false[, return_counts = false[, dim]]]]) (or those in an
  --- options table): the distinct values (sorted), then the inverse (1-based) and the counts when asked
  local UNIQUE = { sorted = "boolean", return_inverse = "boolean", return_counts = "boolean", dim = "integer" }
  function Tensor.unique(t, ...)
    check.tensor(t, "unique", "self")
    local opts = check.positional("unique", { "sorted", "return_inverse", "return_counts", "dim" }, UNIQUE, ...)
    if opts.dim ~= nil then return unique_slices(t, opts) end
    local flat = t:reshape(-1)
    local n = flat:numel()
    local I64 = { dtype = "int64", device = t.device }
    if n == 0 then
      local e = wick.empty({ 0 }, { dtype = t.dtype, device = t.device })
      if opts.return_inverse and opts.return_counts then return e, wick.empty(t.shape, I64), wick.empty({ 0 }, I64) end
      if opts.return_inverse then return e, wick.empty(t.shape, I64) end
      if opts.return_counts then return e, wick.empty({ 0 }, I64) end
      return e
    end
    local s, order = flat:sort()
    local change = wick.ones({ n }, { dtype = "bool", device = t.device })
    if n > 1 then change:narrow(1, 2, n - 1):copy_(s:narrow(1, 2, n - 1):ne(s:narrow(1, 1, n - 1))) end
    local values = s:masked_select(change)
    local inverse, counts
    if opts.return_inverse then
      local group = change:to("int64"):cumsum(1) -- 1-based group of each sorted element
      inverse = wick.zeros({ n }, I64):scatter(1, order, group):view(t.shape)
    end
    if opts.return_counts then
      local starts = change:nonzero():reshape(-1)
      counts = wick.cat({ starts, wick.full({ 1 }, n + 1, I64) }):diff()
    end
    if opts.return_inverse and opts.return_counts then return values, inverse, counts end
    if opts.return_inverse then return values, inverse end
    if opts.return_counts then return values, counts end
    return values
  end

  --- t:quantile(q[, dim[, keepdim = false[, interpolation = "linear"]]]) (or an options
  --- table) and t:nanquantile (NaN left out): q a number in [0, 1] or a 1-D tensor
  --- of them (its values then lead the result's dims); without dim, over all
  --- elements; interpolation "linear", "lower", "higher", "midpoint", "nearest"
  local QUANTILE = { dim = "integer", keepdim = "boolean", interpolation = "string" }
  local function quantile(fn, ignore_nan, t, q, ...)
    check.tensor(t, fn, "self")
    if not t:is_floating_point() then check.fail(fn, "quantile() input tensor must be either float or double dtype") end
    local o = check.positional(fn, { "dim", "keepdim", "interpolation" }, QUANTILE, ...)
    local how = check.one_of(o.interpolation or "linear", fn, "interpolation", { "linear", "lower", "higher", "midpoint", "nearest" })
    local qs = is_tensor(q) and q:to(t.dtype) or wick.tensor(check.number(q, fn, "q"), { dtype = t.dtype, device = t.device })
    if qs:dim() > 1 then check.fail(fn, "quantile() q must be a scalar or 1D tensor") end
    if qs:numel() > 0 and (qs:min():item() < 0 or qs:max():item() > 1) then
      check.fail(fn, "quantile() q values must be in the range [0, 1]")
    end
    local x, d = t, o.dim
    if d == nil then x, d = t:reshape(-1), 1 else d = wrap_dim(t, d, fn) end
    local n = x:size(d)
    if n == 0 then check.fail(fn, "quantile() input tensor must be non-empty") end
    local sorted = x:sort(d) -- NaN last
    local moved = sorted:movedim(d, -1) -- [..., n]
    local lead = moved:dim() - 1
    local shape, ones = {}, {}
    for i = 1, lead do shape[i] = moved:size(i); ones[i] = 1 end
    ones[lead + 1] = -1
    local count -- the values taken part: all, or those that are not NaN
    if ignore_nan then count = moved:eq(moved):sum(-1):to(t.dtype)
    else count = wick.full(shape, n, { dtype = t.dtype, device = t.device }) end
    -- [..., q]: the fractional ranks, in float64 as PyTorch's (39 * 0.33333334f is 13.0000004, not 13)
    local pos = (count:unsqueeze(-1):double() - 1) * qs:double():reshape(ones)
    local lo, hi = pos:floor(), pos:ceil()
    if how == "lower" then hi = lo elseif how == "higher" then lo = hi
    elseif how == "nearest" then lo = pos:round(); hi = lo end
    local function at(k) return moved:gather(-1, k:clamp_min(0):to("int64") + 1) end
    local a, b = at(lo), at(hi)
    local r
    if how == "midpoint" then r = a + (b - a) * wick.where(hi:gt(lo), 0.5, 0)
    else r = a:lerp(b, (pos - lo):to(a.dtype)) end
    if ignore_nan then r = wick.where(count:unsqueeze(-1):eq(0), 0 / 0, r)
    else r = wick.where(moved:isnan():any(-1, true), 0 / 0, r) end
    -- q's dim first, then the reduced shape (dim kept as 1 with keepdim)
    r = r:movedim(-1, 1)
    if o.keepdim then
      if o.dim == nil then
        local ones = {}
        for i = 1, t:dim() do ones[i] = 1 end
        r = r:reshape(qs:numel(), unpack(ones))
      else
        r = r:unsqueeze(d + 1)
      end
    end
    if qs:dim() == 0 then r = r:squeeze(1) end
    return r
  end
  function Tensor.quantile(t, q, ...) return quantile("quantile", false, t, q, ...) end
  function Tensor.nanquantile(t, q, ...) return quantile("nanquantile", true, t, q, ...) end

  --- t:unique_consecutive([{return_inverse = false, return_counts = false}]):
  --- the first value of each run of equal neighbours (in order, not sorted),
  --- then the inverse (1-based run of each element) and the runs' lengths
  function Tensor.unique_consecutive(t, ...)
    check.tensor(t, "unique_consecutive", "self")
    local opts = check.positional("unique_consecutive", { "return_inverse", "return_counts", "dim" },
      { return_inverse = "boolean", return_counts = "boolean", dim = "integer" }, ...)
    if opts.dim ~= nil then -- runs of equal whole slices along dim
      local d = wrap_dim(t, opts.dim, "unique_consecutive")
      local n = t:size(d)
      local I64 = { dtype = "int64", device = t.device }
      local starts = wick.ones({ n }, { dtype = "bool", device = t.device })
      if n > 1 then
        local moved = t:movedim(d, 1):reshape(n, -1)
        starts:narrow(1, 2, n - 1):copy_(moved:narrow(1, 2, n - 1):ne(moved:narrow(1, 1, n - 1)):any(2))
      end
      local at = starts:nonzero():reshape(-1)
      local values = t:index_select(d, at)
      local inverse = opts.return_inverse and starts:to("int64"):cumsum(1) or nil
      local counts = opts.return_counts and wick.cat({ at, wick.full({ 1 }, n + 1, I64) }):diff() or nil
      if inverse and counts then return values, inverse, counts end
      if inverse or counts then return values, inverse or counts end
      return values
    end
    local flat = t:reshape(-1)
    local n = flat:numel()
    local I64 = { dtype = "int64", device = t.device }
    local values, inverse, counts
    if n == 0 then
      values, inverse, counts = wick.empty({ 0 }, { dtype = t.dtype, device = t.device }), wick.empty(t.shape, I64), wick.empty({ 0 }, I64)
    else
      local starts = wick.ones({ n }, { dtype = "bool", device = t.device })
      if n > 1 then starts:narrow(1, 2, n - 1):copy_(flat:narrow(1, 2, n - 1):ne(flat:narrow(1, 1, n - 1))) end
      values = flat:masked_select(starts)
      if opts.return_inverse then inverse = starts:to("int64"):cumsum(1):view(t.shape) end
      if opts.return_counts then
        counts = wick.cat({ starts:nonzero():reshape(-1), wick.full({ 1 }, n + 1, I64) }):diff()
      end
    end
    if opts.return_inverse and opts.return_counts then return values, inverse, counts end
    if opts.return_inverse then return values, inverse end
    if opts.return_counts then return values, counts end
    return values
  end

  --- t:var_mean([dim][, opts]) and t:std_mean: both at once, as PyTorch's
  -- mean's arguments: var's, without correction / unbiased (by name, or
  -- the first boolean: PyTorch's positional var(dim, unbiased, keepdim))
  local function mean_args(...)
    local args = { ... }
    local n = select("#", ...)
    for i = 1, n do
      if type(args[i]) == "boolean" then
        table.remove(args, i)
        n = n - 1
        break
      end
    end
    local last = args[n]
    if type(last) == "table" and not is_tensor(last) and getmetatable(last) == nil then
      local rest = {}
      for k, v in pairs(last) do if k ~= "correction" and k ~= "unbiased" then rest[k] = v end end
      args[n] = next(rest) ~= nil and rest or nil
    end
    return unpack(args, 1, n)
  end
  -- PyTorch's warning when a var/std reduces n elements with n - correction <= 0 (a NaN, or inf), as
  -- ZoeDepth's SILog loss over a mask that keeps one pixel (correction: 1 unless the arguments say)
  local function correction_of(...)
    local n = select("#", ...)
    for i = 1, n do
      local v = (select(i, ...))
      if type(v) == "boolean" then return v and 1 or 0 end
      if type(v) == "table" and not is_tensor(v) and getmetatable(v) == nil then
        if v.correction ~= nil then return tonumber(v.correction) or 1 end
        if v.unbiased ~= nil then return v.unbiased and 1 or 0 end
      end
    end
    return 1
  end
  -- a fractional correction (PyTorch's Scalar: sums of squares over N - correction), which the C reduction
  -- takes as an integer: the arguments with correction 0 instead, and the factor N / max(0, N - correction)
  -- (of var; its root of std) for the result; nil when the correction is a whole number
  local function fractional(...)
    local n = select("#", ...)
    local o = n > 0 and select(n, ...) or nil
    if type(o) ~= "table" or is_tensor(o) or getmetatable(o) ~= nil or type(o.correction) ~= "number"
      or o.correction % 1 == 0 or o.correction ~= o.correction then
      return nil
    end
    local args, copy = { ... }, {}
    for k, v in pairs(o) do copy[k] = v end
    copy.correction = 0
    args[n] = copy
    return o.correction, args, n
  end
  for _, fn in ipairs({ "var", "std" }) do
    local whole = Tensor[fn]
    local function reduce(t, ...)
      local c, args, n = fractional(...)
      if c == nil then return whole(t, ...) end
      local r = whole(t, unpack(args, 1, n))
      if not is_tensor(r) or r:numel() == 0 then return r end
      local N = t:numel() / r:numel()
      local factor = N / math.max(0, N - c) -- (N - c <= 0: inf, or NaN for 0 / 0, as PyTorch's)
      return r * (fn == "std" and math.sqrt(factor) or factor)
    end
    Tensor[fn] = function(t, ...)
      local r = reduce(t, ...)
      if is_tensor(r) and r:numel() > 0 and t:numel() > 0 and t:numel() / r:numel() - correction_of(...) <= 0 then
        require("wick.nn.common").warn(("%s(): degrees of freedom is <= 0. Correction should be strictly less than the reduction factor "
          .. "(input numel divided by output numel)."):format(fn))
      end
      return r
    end
  end
  function Tensor.var_mean(t, ...) return check.tensor(t, "var_mean", "self"):var(...), t:mean(mean_args(...)) end
  function Tensor.std_mean(t, ...) return check.tensor(t, "std_mean", "self"):std(...), t:mean(mean_args(...)) end

  --- wick.nextafter(x, y) and t:nextafter(y): the next float after x towards y,
  --- elementwise (float32 and float64), as C's nextafter: from the bits, as
  --- integers of the same width (a float's magnitude grows with its bits);
  --- PyTorch's gradient: x's passes through, y gets zeros
  local NEXT_BITS = { float32 = "int32", float64 = "int64" }
  local function next_float(x, y)
    -- PyTorch's promotion (float32 with float64 is float64)
    local dt = wick.promote_types(x.dtype, y.dtype)
    x, y = wick.broadcast_tensors(x:to(dt), y:to(dt))
    local bits = NEXT_BITS[dt]
    local b = x:contiguous():view(bits)
    -- away from zero (bits + 1) or towards it (bits - 1): x > 0 going up, x < 0 going down
    local away = wick.where(x:gt(0), y:gt(x), y:lt(x))
    local moved = wick.where(away, b + 1, b - 1):view(x.dtype)
    -- from a zero: the smallest subnormal of y's side; x == y gives y, NaN gives NaN
    local tiny = wick.zeros({}, { dtype = bits, device = x.device }):add(1):view(x.dtype)
    local out = wick.where(x:eq(0), wick.where(y:gt(0), tiny, -tiny), moved)
    out = wick.where(x:eq(y), y, out)
    return wick.where(x:isnan():logical_or(y:isnan()), x + y, out)
  end
  --- t:sum_to_size(size...) (PyTorch's): t summed over the dims a tensor of `size`
  --- was broadcast along to t's shape (a backward's gradient back to its input's size)
  function Tensor.sum_to_size(t, ...)
    check.tensor(t, "sum_to_size", "self")
    local size = size_arg("sum_to_size", "size", ...)
    local n, lead = #size, t:dim() - #size
    local ok = lead >= 0
    for i = 1, n do
      check.int(size[i], "sum_to_size", "size", 0)
      ok = ok and (size[i] == t:size(lead + i) or size[i] == 1)
    end
    if not ok then
      check.fail("sum_to_size", "size {%s} is not expandable to size {%s}", table.concat(size, ", "),
        table.concat(t:size():totable(), ", "))
    end
    local dims = {}
    for d = 1, lead do dims[#dims + 1] = d end
    for i = 1, n do
      if size[i] == 1 and t:size(lead + i) ~= 1 then dims[#dims + 1] = lead + i end
    end
    if #dims == 0 then return t end
    return t:sum(dims, true):view(size)
  end

  local NextAfter
  function Tensor.nextafter(x, y)
    check.tensor(x, "nextafter", "input")
    check.tensor(y, "nextafter", "other")
    if not NEXT_BITS[x.dtype] or not NEXT_BITS[y.dtype] then
      check.fail("nextafter", "expected float32 or float64 tensors, got %s and %s", x.dtype, y.dtype)
    end
    if not ((x.requires_grad or y.requires_grad) and wick.is_grad_enabled()) then return next_float(x, y) end
    if not NextAfter then
      NextAfter = wick.autograd.Function:extend("Nextafter")
      function NextAfter.forward(ctx, a, b)
        ctx.a, ctx.b = a:size(), { b:size(), b.dtype }
        return next_float(a, b)
      end
      function NextAfter.backward(ctx, g)
        return g:sum_to_size(ctx.a), wick.zeros(ctx.b[1], { dtype = ctx.b[2], device = g.device })
      end
    end
    return NextAfter.apply(x, y)
  end
  wick.nextafter = Tensor.nextafter

  --- wick.cov(input[, {correction = 1, fweights, aweights}]) / t:cov: the
  --- covariance of the rows (variables) over the columns (observations), with
  --- NumPy's and PyTorch's frequency and analytic weights; wick.corrcoef(input):
  --- the Pearson correlations (clipped to [-1, 1])
  function Tensor.cov(t, opts)
    local fn = "cov"
    check.tensor(t, fn, "input")
    local o = check.options(opts, fn, { correction = "integer", fweights = "tensor", aweights = "tensor" })
    if t:dim() > 2 then check.fail(fn, "expected input to have two or fewer dimensions but got an input with %d dimensions", t:dim()) end
    local x = t:dim() < 2 and t:reshape(1, -1) or t
    if not x:is_floating_point() and not x:is_complex() then x = x:to(wick.get_default_dtype()) end
    local n, correction = x:size(2), o.correction or 1
    for _, name in ipairs({ "fweights", "aweights" }) do -- (PyTorch's checks, in its words)
      local v = o[name]
      if v then
        if name == "fweights" and v:is_floating_point() -- (wick.tensor({1, 2}) is float: whole values pass)
          and wick.no_grad(function() return v:ne(v:trunc()):any():item() end) then
          check.fail(fn, "expected fweights to have integral dtype (or whole values) but got fweights with %s dtype", v.dtype)
        elseif name == "aweights" and not v:is_floating_point() then
          check.fail(fn, "expected aweights to have floating point dtype but got aweights with %s dtype", v.dtype)
        end
        if v:dim() > 1 then
          check.fail(fn, "expected %s to have one or fewer dimensions but got %s with %d dimensions", name, name, v:dim())
        end
        if v:numel() ~= n then
          check.fail(fn, "expected %s to have the same numel as there are observations in the input but got %d != %d",
            name, v:numel(), n)
        end
        if wick.no_grad(function() return v:lt(0):any():item() end) then check.fail(fn, "%s cannot be negative", name) end
      end
    end
    local w = o.fweights and o.fweights:reshape(-1):to(x.dtype)
    if o.aweights then w = w and w * o.aweights:reshape(-1):to(x.dtype) or o.aweights:reshape(-1):to(x.dtype) end
    local w_sum = w and w:sum() or n
    local avg = w and (x * w):sum(2) / w_sum or x:mean(2)
    local fact
    if not w then fact = n - correction
    elseif correction == 0 then fact = w_sum
    elseif not o.aweights then fact = w_sum - correction
    else fact = w_sum - correction * (w * o.aweights:reshape(-1):to(x.dtype)):sum() / w_sum end
    fact = is_tensor(fact) and fact:clamp_min(0) or math.max(fact, 0)
    local xm = x - avg:unsqueeze(2)
    local c = (w and xm * w or xm):matmul(xm:transpose(1, 2)) / fact
    return x:size(1) == 1 and c:reshape({}) or c -- (one variable: a 0-dim result, as PyTorch's squeeze)
  end
  function Tensor.corrcoef(t)
    local c = Tensor.cov(check.tensor(t, "corrcoef", "input"))
    if c:dim() == 0 then return c / c end
    local sd = c:diagonal():sqrt()
    c = c / sd:unsqueeze(2) / sd:unsqueeze(1)
    return c:clamp(-1, 1)
  end
  wick.cov, wick.corrcoef = Tensor.cov, Tensor.corrcoef

  --- t:mode([dim = -1[, keepdim = false]]) (or {dim =, keepdim =}): the most
  --- frequent value along dim (the smallest of a tie) and the 1-based index of
  --- its last occurrence, as PyTorch's
  function Tensor.mode(t, ...)
    local fn = "mode"
    check.tensor(t, fn, "self")
    local o, keepdim = reduction_args(fn, { "dim", "keepdim" }, DIMS_KEEPDIM, ...)
    if t:dim() == 0 then return t:clone(), wick.ones({}, { dtype = "int64", device = t.device }) end
    local d = wrap_dim(t, o.dim or -1, fn)
    if t:size(d) == 0 then check.fail(fn, "Expected reduction dim %d to have non-zero size (shape %s)", d, tostring(t.shape)) end
    local moved = t:movedim(d, -1)
    local n = moved:size(-1)
    local x = moved:reshape(-1, n)
    local sorted, order = x:sort({ dim = 2, stable = true })
    local starts = wick.ones(x.shape, { dtype = "bool", device = t.device })
    if n > 1 then starts[{ {}, { 2, n } }] = sorted[{ {}, { 2, n } }]:ne(sorted[{ {}, { 1, n - 1 } }]) end
    local run = starts:to("int64"):cumsum(2) -- (1-based run of each sorted position)
    local counts = wick.zeros(x.shape, { dtype = "int64", device = t.device }):scatter_add(2, run, wick.ones_like(run))
    local best = counts:argmax(2, true) -- (the first of the most frequent: the smallest value)
    local in_best = run:eq(best)
    local pos = wick.arange(1, n + 1, { dtype = "int64", device = t.device }):expand(x.shape)
    local last = (pos * in_best:to("int64")):amax(2, true)
    local values, indices = sorted:gather(2, last), order:gather(2, last)
    local shape = moved:size()
    shape[#shape] = 1
    values, indices = values:reshape(shape):movedim(-1, d), indices:reshape(shape):movedim(-1, d)
    if not keepdim then values, indices = values:squeeze(d), indices:squeeze(d) end
    return values, indices
  end
  wick.mode = Tensor.mode

  --- wick.pdist(input[, p = 2]): the distances between the rows of input [N, M],
  --- each pair i < j once, in row-major order
  function ops.pdist(input, p)
    check.tensor(input, "pdist", "input")
    if input:dim() ~= 2 then check.fail("pdist", "only supports 2D tensors, got: %dD", input:dim()) end
    if type(p) == "table" then p = check.options(p, "pdist", { p = "number" }).p end
    p = check.opt_number(p, "pdist", "p", 2)
    if p < 0 then check.fail("pdist", "only supports non-negative p values, got %g", p) end
    local n = input:size(1)
    if n < 2 then return wick.empty({ 0 }, { dtype = input.dtype, device = input.device }) end
    local ij = wick.triu_indices(n, n, 1, { device = input.device })
    return (input:index_select(1, ij[1]) - input:index_select(1, ij[2])):norm(p, 2)
  end
  wick.pdist = ops.pdist

  --- t:take_along_dim(indices[, dim]) and wick.take_along_dim: gather along dim
  --- with t and indices broadcast over the other dims (NumPy's); without dim,
  --- over the flattened t and indices
  function Tensor.take_along_dim(t, indices, dim)
    local fn = "take_along_dim"
    check.tensor(t, fn, "input")
    check.tensor(indices, fn, "indices")
    if type(dim) == "table" and not is_tensor(dim) then dim = check.options(dim, fn, { dim = "integer" }).dim end
    if dim == nil then return t:reshape(-1):gather(1, indices:reshape(-1)) end
    check.int(dim, fn, "dim")
    local n = t:dim()
    if indices:dim() ~= n then
      check.fail(fn, "input and indices should have the same number of dimensions, but got %d dimensions for input, "
        .. "and %d dimensions for indices", n, indices:dim())
    end
    local d = dim < 0 and n + 1 + dim or dim
    if d < 1 or d > n then check.fail(fn, "dimension %d out of range for a %d-D tensor", dim, n) end
    local a, b = {}, {}
    for i = 1, n do
      local si, sj = t:size(i), indices:size(i)
      if i ~= d and si ~= sj and si ~= 1 and sj ~= 1 then
        check.fail(fn, "the size of input (%d) and indices (%d) must match at dimension %d (or one of them be 1)", si, sj, i)
      end
      local m = (si == 1 and sj) or si
      a[i], b[i] = i == d and si or m, i == d and sj or m
    end
    return t:expand(a):gather(d, indices:expand(b))
  end
  wick.take_along_dim = Tensor.take_along_dim

  --- wick.cdist(x1, x2[, p = 2]): the p-norm distances between the rows of
  --- x1 [.., P, M] and x2 [.., R, M]: [.., P, R]
  local CDIST_MODES = { use_mm_for_euclid_dist_if_necessary = true, use_mm_for_euclid_dist = true,
    donot_use_mm_for_euclid_dist = true }
  function ops.cdist(x1, x2, ...)
    check.tensor(x1, "cdist", "x1")
    check.tensor(x2, "cdist", "x2")
    local o = check.positional("cdist", { "p", "compute_mode" }, { p = "number", compute_mode = "string" }, ...)
    local p, mode = o.p or 2, o.compute_mode or "use_mm_for_euclid_dist_if_necessary"
    if not (p >= 0) then check.fail("cdist", "cdist only supports non-negative p values") end
    if not CDIST_MODES[mode] then check.fail("cdist", "%s is not a valid value for compute_mode", mode) end
    if x1:dim() < 2 or x2:dim() < 2 then check.fail("cdist", "cdist only supports at least 2D tensors, X1 got: %dD", x1:dim()) end
    if x1:size(-1) ~= x2:size(-1) then
      check.fail("cdist", "X1 and X2 must have the same number of columns. X1: %d X2: %d", x1:size(-1), x2:size(-1))
    end
    x1, x2 = wick._autocast_float32(x1), wick._autocast_float32(x2) -- (autocast's float32 list)
    local mm = p == 2 and (mode == "use_mm_for_euclid_dist" or
      (mode == "use_mm_for_euclid_dist_if_necessary" and (x1:size(-2) > 25 or x2:size(-2) > 25)))
    if mm then -- PyTorch's _euclidean_dist: one product of [-2 x1, |x1|^2, 1] and [x2, 1, |x2|^2]
      local n1, n2 = (x1 * x1):sum(-1, true), (x2 * x2):sum(-1, true)
      local a = wick.cat({ x1 * -2, n1, wick.ones_like(n1) }, -1)
      local b = wick.cat({ x2, wick.ones_like(n2), n2 }, -1)
      -- squared distances clamped at 0; a zero distance is exactly 0 with a zero gradient, as PyTorch's
      -- _euclidean_dist_backward masks it (the sqrt sees 1 there, so no inf reaches the gradient)
      local sq = a:matmul(b:transpose(-2, -1)):clamp_min(0)
      local pos = sq:gt(0)
      return wick.where(pos, wick.where(pos, sq, 1):sqrt(), 0)
    end
    local diff = x1:unsqueeze(-2) - x2:unsqueeze(-3)
    return diff:norm(p, -1)
  end
  --- wick.tril_indices(row, col[, offset = 0[, opts]]), wick.triu_indices: the
  --- 1-based coordinates of the triangle, int64 [2, N] in row-major order
  local TRI = { offset = "integer", dtype = "dtype", device = "device", layout = "any" }
  local function tri_indices(row, col, offset, opts, lower, fn)
    if type(offset) == "table" then offset, opts = nil, offset end
    check.int(row, fn, "row", 0)
    check.int(col, fn, "col", 0)
    local o = check.options(opts, fn, TRI)
    if o.offset ~= nil then
      if offset ~= nil then check.fail(fn, "argument 'offset' given both by position and as an option") end
      offset = o.offset
    end
    offset = check.opt_int(offset, fn, "offset", 0)
    local dtype = o.dtype or "int64"
    if dtype ~= "int64" and dtype ~= "int32" then check.fail(fn, "dtype must be int64 or int32, got %s", dtype) end
    local I64 = { dtype = "int64", device = o.device or "cpu" }
    local r = wick.arange(1, row + 1, I64):view(row, 1):expand(row, col)
    local c = wick.arange(1, col + 1, I64):view(1, col):expand(row, col)
    local keep = lower and (c - r):le(offset) or (c - r):ge(offset)
    return wick.stack({ r:masked_select(keep), c:masked_select(keep) }):to(dtype)
  end
  function ops.tril_indices(row, col, offset, opts) return tri_indices(row, col, offset, opts, true, "tril_indices") end
  function ops.triu_indices(row, col, offset, opts) return tri_indices(row, col, offset, opts, false, "triu_indices") end
  -- (PyTorch's keywords: wick.triu_indices{row = 3, col = 4, offset = 1})
  for _, name in ipairs({ "tril_indices", "triu_indices" }) do
    ops[name] = check.by_name(ops[name], name, { "row", "col", "offset?" })
  end

  -- ---- a few more of PyTorch's names ----

  --- t:floor_divide(u): floor(t / u) (integers stay integers); t:fmax(u), t:fmin(u): NaN-ignoring max/min
  function Tensor.floor_divide(t, u)
    check.tensor(t, "floor_divide", "self")
    if not is_tensor(u) then
      check.number(u, "floor_divide", "other")
      -- (an integer tensor over a fractional number divides in the result's dtype, as PyTorch's)
      if u % 1 ~= 0 and not t:is_floating_point() and not t:is_complex() then t = t:to(wick.get_default_dtype()) end
    end
    return t:div(u, { rounding_mode = "floor" })
  end
  function Tensor.fmax(t, u)
    check.tensor(t, "fmax", "self")
    check.tensor(u, "fmax", "other")
    return wick.where(t:ne(t), u, wick.where(u:ne(u), t, t:maximum(u)))
  end
  function Tensor.fmin(t, u)
    check.tensor(t, "fmin", "self")
    check.tensor(u, "fmin", "other")
    return wick.where(t:ne(t), u, wick.where(u:ne(u), t, t:minimum(u)))
  end
  --- t:nanmean([dim[, keepdim]]) (or {dim =, keepdim =, dtype =}): the mean of the
  --- non-NaN elements; dtype casts t first
  local NANMEAN = { dim = "integer|table", keepdim = "boolean", keepdims = "boolean", dtype = "dtype" }
  function Tensor.nanmean(t, ...)
    check.tensor(t, "nanmean", "self")
    local o, keepdim = reduction_args("nanmean", { "dim", "keepdim" }, NANMEAN, ...)
    if o.dtype then t = t:to(o.dtype) end
    local ok = t:eq(t)
    local zeroed = wick.where(ok, t, wick.zeros({}, { dtype = t.dtype, device = t.device }))
    local n = ok:to(t.dtype)
    return zeroed:sum(o.dim, keepdim) / n:sum(o.dim, keepdim)
  end
  local LOW_PRECISION = { float16 = true, bfloat16 = true }
  -- beta = 0's input term: t's shape (broadcast as t) and a zero gradient, but none of
  -- t's NaN or inf (PyTorch: "input is ignored"; HF's baddbmm into torch.empty)
  local function ignored(t) return wick.where(wick.zeros({}, { dtype = "bool", device = t.device }), t, 0) end
  --- t:baddbmm(b1, b2[, {beta = 1, alpha = 1}]): beta t + alpha b1 @ b2 (batches)
  function Tensor.baddbmm(t, b1, b2, opts)
    check.tensor(t, "baddbmm", "self")
    check.tensor(b1, "baddbmm", "batch1")
    check.tensor(b2, "baddbmm", "batch2")
    local o = check.options(opts, "baddbmm", { beta = "number", alpha = "number" })
    local beta, alpha = o.beta or 1, o.alpha or 1
    local function combine(x, m1, m2)
      local p = m1:bmm(m2)
      if alpha ~= 1 then p = p * alpha end
      if beta == 0 then return p + ignored(x) end
      return (beta == 1 and x or x * beta) + p
    end
    -- (on autocast's lower-precision list, as bmm)
    t, b1, b2 = wick._autocast_lower(t), wick._autocast_lower(b1), wick._autocast_lower(b2)
    if not (LOW_PRECISION[t.dtype] or LOW_PRECISION[b1.dtype]) then return combine(t, b1, b2) end
    -- one rounding, as PyTorch's (and addmm's): the product and the sum in float32 (autocast off for
    -- them), then the result's dtype (RecurrentGemma's RG-LRU gates in bfloat16)
    local d = wick.promote_types(t.dtype, wick.promote_types(b1.dtype, b2.dtype))
    local dt = t.device.type
    local r = (dt == "cpu" or dt == "cuda")
      and wick.autocast({ device_type = dt, enabled = false }, combine, t:float(), b1:float(), b2:float())
      or combine(t:float(), b1:float(), b2:float())
    return r:to(d)
  end
  --- t:vdot(u): the dot product of two 1-D tensors, t conjugated first when complex
  function Tensor.vdot(t, u)
    check.tensor(t, "vdot", "self")
    return Tensor.dot(t:is_complex() and t:conj() or t, u)
  end
  --- t:rot90([k = 1[, dims = {1, 2}]]): rotated k quarter turns from dims[1] towards dims[2]
  function Tensor.rot90(t, k, dims)
    check.tensor(t, "rot90", "self")
    k = check.opt_int(k, "rot90", "k", 1) % 4
    dims = dims or { 1, 2 }
    if type(dims) ~= "table" or #dims ~= 2 then check.fail("rot90", "expected total rotation dims == 2") end
    local d1, d2 = wrap_dim(t, dims[1], "rot90"), wrap_dim(t, dims[2], "rot90")
    if d1 == d2 then check.fail("rot90", "expected rotation dims to be different") end
    if k == 1 then return t:flip(d2):transpose(d1, d2) end
    if k == 2 then return t:flip({ d1, d2 }) end
    if k == 3 then return t:flip(d1):transpose(d1, d2) end
    return t:clone()
  end
  --- t:diagflat([offset = 0]) (torch.diagflat): t flattened, on the offset-th diagonal of a square matrix
  function Tensor.diagflat(t, offset)
    check.tensor(t, "diagflat", "self")
    if type(offset) == "table" and getmetatable(offset) == nil then
      offset = check.options(offset, "diagflat", { offset = "integer" }).offset
    end
    return Tensor.diag(t:reshape(-1), check.opt_int(offset, "diagflat", "offset", 0))
  end
  --- t:diag_embed([offset = 0]): each vector of the last dim on the offset-th
  --- diagonal of a new square matrix (two new last dims)
  function Tensor.diag_embed(t, offset, dim1, dim2)
    check.tensor(t, "diag_embed", "self")
    if t:is_complex() then return by_parts(Tensor.diag_embed, t, offset, dim1, dim2) end
    if type(offset) == "table" then -- diag_embed(x, {offset =, dim1 =, dim2 =})
      local o = check.options(offset, "diag_embed", { offset = "integer", dim1 = "integer", dim2 = "integer" })
      offset, dim1, dim2 = o.offset, o.dim1, o.dim2
    end
    offset = check.opt_int(offset, "diag_embed", "offset", 0)
    if dim1 ~= nil or dim2 ~= nil then -- the new dims elsewhere than last: the result permuted
      local nd = t:dim() + 1
      local function place(d, name, default)
        d = check.opt_int(d, "diag_embed", name, default)
        local p = d < 0 and d + nd + 1 or d
        if p < 1 or p > nd then check.fail("diag_embed", "Dimension out of range (expected to be in range of [%d, %d], but got %d)", -nd, nd, d) end
        return p
      end
      local p1, p2 = place(dim1, "dim1", -2), place(dim2, "dim2", -1)
      if p1 == p2 then check.fail("diag_embed", "diagonal dimensions cannot be identical %d, %d", dim1 or -2, dim2 or -1) end
      local r = Tensor.diag_embed(t, offset)
      local perm, k = {}, 0
      for pos = 1, nd do
        if pos == p1 then perm[pos] = nd - 1 elseif pos == p2 then perm[pos] = nd else k = k + 1; perm[pos] = k end
      end
      return r:permute(perm)
    end
    if t:dim() == 0 then check.fail("diag_embed", "expected at least a 1-D tensor") end
    local n = t:size(-1)
    local m = n + math.abs(offset)
    local lead = t:size()
    lead[#lead] = nil
    local flat_shape, out_shape = { unpack(lead) }, { unpack(lead) }
    flat_shape[#flat_shape + 1] = m * m
    out_shape[#out_shape + 1], out_shape[#out_shape + 2] = m, m
    local out = wick.zeros(flat_shape, { dtype = t.dtype, device = t.device })
    if n == 0 then return out:view(out_shape) end
    local i = wick.arange(0, n, { dtype = "int64", device = t.device })
    local row, col = offset >= 0 and i or i - offset, offset >= 0 and i + offset or i
    local idx = (row * m + col + 1):expand(t.shape)
    return out:scatter(-1, idx, t):view(out_shape)
  end
  -- the broadcast of a list of sizes (tables of numbers), or nil and where it fails: the
  -- list's index, the dim (of the result), that size and the one it meets
  local function broadcast_sizes(sizes)
    local ndim = 0
    for _, s in ipairs(sizes) do ndim = math.max(ndim, #s) end
    local shape = {}
    for d = 1, ndim do shape[d] = 1 end
    for i, s in ipairs(sizes) do
      local off = ndim - #s
      for j = 1, #s do
        local n, have = rawget(s, j), shape[off + j] -- (rawget: a Size reads a negative index from the end)
        if have == 1 then shape[off + j] = n
        elseif n ~= 1 and n ~= have then return nil, i, off + j, n, have end
      end
    end
    return setmetatable(shape, wick.Size)
  end
  ops._broadcast_sizes = broadcast_sizes
  --- wick.broadcast_shapes(shape1, shape2, ...): the shape tensors of those shapes broadcast to
  --- (a wick.Size; a number is a 1-D shape), as torch.broadcast_shapes
  function ops.broadcast_shapes(...)
    local sizes = { ... }
    for i = 1, select("#", ...) do
      local s = sizes[i]
      if type(s) == "number" then sizes[i] = { check.int(s, "broadcast_shapes", ("shapes[%d]"):format(i), 0) }
      else
        check.table(s, "broadcast_shapes", ("shapes[%d]"):format(i))
        for j = 1, #s do check.int(s[j], "broadcast_shapes", ("shapes[%d]"):format(i), 0) end
      end
    end
    local shape, i, d, n, have = broadcast_sizes(sizes)
    if not shape then
      check.fail("broadcast_shapes", "Shape mismatch: objects cannot be broadcast to a single shape: shapes[%d] has "
        .. "size %d at dimension %d where another has %d", i, n, d, have)
    end
    return shape
  end
  --- wick.broadcast_tensors(t1, t2, ...): every tensor expanded to the common shape (views)
  function ops.broadcast_tensors(...)
    local ts = { ... }
    if #ts == 1 and type(ts[1]) == "table" and not is_tensor(ts[1]) then ts = ts[1] end
    local sizes = {}
    for i, t in ipairs(ts) do
      check.tensor(t, "broadcast_tensors", ("tensors[%d]"):format(i))
      sizes[i] = t:size()
    end
    local shape, i, d, n, have = broadcast_sizes(sizes)
    if not shape then
      check.fail("broadcast_tensors", "the size of tensors[%d] (%d) must match the size of another (%d) at dimension %d",
        i, n, have, d)
    end
    local out = {}
    for k, t in ipairs(ts) do out[k] = t:expand(shape) end
    return unpack(out, 1, #ts)
  end
  --- wick.tensordot(a, b[, dims = 2]): dims a number (the last dims of a with the first of b) or {{a's}, {b's}}
  function ops.tensordot(a, b, dims)
    check.tensor(a, "tensordot", "a")
    check.tensor(b, "tensordot", "b")
    if type(dims) == "table" and getmetatable(dims) == nil and dims.dims ~= nil and next(dims, next(dims)) == nil then
      dims = dims.dims -- PyTorch's keyword: tensordot(image, matrix, dims=1)
    end
    local da, db = {}, {}
    if dims == nil then dims = 2 end
    if type(dims) == "number" then
      check.int(dims, "tensordot", "dims", 0)
      if dims > a:dim() or dims > b:dim() then check.fail("tensordot", "dims (%d) exceeds the inputs' dimensions", dims) end
      for i = 1, dims do da[i], db[i] = a:dim() - dims + i, i end
    else
      if type(dims) ~= "table" or type(dims[1]) ~= "table" or type(dims[2]) ~= "table" or #dims[1] ~= #dims[2] then
        check.fail("tensordot", "dims must be a number or two lists of the same length, {{a's dims}, {b's dims}}")
      end
      da, db = dims_arg(a, dims[1], "tensordot"), dims_arg(b, dims[2], "tensordot")
    end
    local ca, cb = {}, {}
    for _, d in ipairs(da) do ca[d] = true end
    for _, d in ipairs(db) do cb[d] = true end
    local pa, pb, shape, k = {}, {}, {}, 1
    for d = 1, a:dim() do if not ca[d] then pa[#pa + 1] = d; shape[#shape + 1] = a:size(d) end end
    for i, d in ipairs(da) do
      pa[#pa + 1] = d
      if a:size(d) ~= b:size(db[i]) then
        check.fail("tensordot", "contracted dimensions need to match, but first has size %d in dim %d and second has size %d in dim %d", a:size(d), d, b:size(db[i]), db[i])
      end
      k = k * a:size(d)
    end
    for _, d in ipairs(db) do pb[#pb + 1] = d end
    for d = 1, b:dim() do if not cb[d] then pb[#pb + 1] = d; shape[#shape + 1] = b:size(d) end end
    local am = (#pa > 0 and a:permute(pa) or a):reshape(-1, k)
    local bm = (#pb > 0 and b:permute(pb) or b):reshape(k, -1)
    return am:mm(bm):reshape(shape)
  end
  --- wick.bincount(input[, weights[, minlength = 0]]) (or {weights =, minlength =}):
  --- entry k counts the values k of the 1-D integer input (or sums their weights);
  --- values are 1-based as classes are (F.one_hot's), the length max(input's
  --- largest value, minlength); int64 counts, the weights' dtype with weights
  function ops.bincount(input, ...)
    check.tensor(input, "bincount", "input")
    local o = check.positional("bincount", { "weights", "minlength" }, { weights = "tensor", minlength = "integer" }, ...)
    if input:dim() ~= 1 or input:is_floating_point() or input.dtype == "bool" then
      check.fail("bincount", "expected a 1-D integer tensor, got a %d-D %s tensor", input:dim(), input.dtype)
    end
    local w = o.weights
    if w and (w:dim() ~= 1 or w:size(1) ~= input:size(1)) then
      check.fail("bincount", "weights should be 1-d and have the same length as input")
    end
    local minlength = check.int(o.minlength or 0, "bincount", "minlength", 0)
    local lo = input:numel() > 0 and input:min():item() or 1
    if lo < 1 then check.fail("bincount", "values must be positive (they count from 1, as classes do), got %d", lo) end
    local n = math.max(input:numel() > 0 and input:max():item() or 0, minlength)
    local dtype = w and (w:is_floating_point() and w.dtype or "float64") or "int64"
    local out = wick.zeros(n, { dtype = dtype, device = input.device })
    if input:numel() == 0 then return out end
    return out:index_add(1, input:to("int64"), w and w:to(dtype) or wick.ones(input:numel(), { dtype = dtype, device = input.device }))
  end

  Tensor.bincount = ops.bincount

  -- ---- window functions (torch.hann_window and friends) ----
  local WINDOW = { periodic = "boolean", dtype = "dtype", device = "device", requires_grad = "boolean",
    alpha = "number", beta = "number", layout = "any" }
  --- wick.hann_window(n[, periodic = true][, opts]), hamming_window (alpha = 0.54, beta = 0.46),
  --- blackman_window, bartlett_window, kaiser_window (beta = 12): PyTorch's windows, periodic (the
  --- first n of n + 1) by default. Each is computed in its own dtype by PyTorch's steps (arange k,
  --- times a step, cos, ...), so a float32 window has PyTorch's roundings rather than the float64
  --- window's (wick's float32 cos is correctly rounded and PyTorch's is not always: hann_window(1024)
  --- differs in one entry by 1 ulp of float32).
  local function window(name, formula, order)
    local function make(n, ...)
      check.int(n, name, "window_length", 0)
      local o = check.positional(name, order or { "periodic" }, WINDOW, ...)
      local opts = { dtype = o.dtype or wick.get_default_dtype(), device = o.device }
      if not wick.empty(0, { dtype = opts.dtype }):is_floating_point() then
        check.fail(name, "%s expects floating point dtypes, got: %s", name, opts.dtype)
      end
      local w
      if n <= 1 then
        w = wick.ones(n, opts)
      else
        local m = o.periodic == false and n or n + 1 -- the symmetric window's length
        w = formula(wick.arange(m, opts), m, o):narrow(1, 1, n)
      end
      if o.requires_grad then w:requires_grad_(true) end
      return w
    end
    -- window_length by name too (torch.hann_window(window_length=n))
    return function(...) return make(check.required(name, { "window_length" }, ...)) end
  end
  -- k = 0 .. m - 1 as a tensor of the window's dtype
  local function hamming(k, m, alpha, beta) return k:mul_(2 * math.pi / (m - 1)):cos_():mul_(-beta):add_(alpha) end
  ops.hann_window = window("hann_window", function(k, m) return hamming(k, m, 0.5, 0.5) end)
  ops.hamming_window = window("hamming_window", function(k, m, o) return hamming(k, m, o.alpha or 0.54, o.beta or 0.46) end,
    { "periodic", "alpha", "beta" })
  ops.blackman_window = window("blackman_window", function(k, m)
    local x = k:mul_(math.pi / (m - 1))
    return (x * 4):cos_():mul_(0.08) - (x * 2):cos_():mul_(0.5) + 0.42
  end)
  ops.bartlett_window = window("bartlett_window", function(k, m)
    local w = k:mul_(2 / (m - 1))
    local half = math.floor((m - 1) / 2) + 1
    w:narrow(1, half + 1, m - half):mul_(-1):add_(2)
    return w
  end)
  -- kaiser_window(n[, periodic = true[, beta = 12]]): I0(beta sqrt(1 - ((k - a) / a)^2)) / I0(beta), a = (m - 1) / 2
  ops.kaiser_window = window("kaiser_window", function(k, m, o)
    local beta, a = o.beta or 12, (m - 1) / 2
    local r = (k - a) / a
    return ((1 - r * r):abs():sqrt() * beta):i0() / wick.tensor(beta, { dtype = k.dtype, device = k.device }):i0()
  end, { "periodic", "beta" })

  -- each entry's 1-based place in its row's stable ascending sort (the inverse of argsort)
  local function stable_ranks(t)
    local _, order = t:sort({ dim = -1, stable = true })
    local places = wick.arange(1, t:size(-1) + 1, { dtype = "int64", device = t.device }):expand_as(order)
    return wick.empty_like(order):scatter_(-1, order, places:contiguous())
  end
  -- For each row of v [..., M], how many entries of its row of seq [..., K] come before each value
  -- (are < it, or <= it when right): seq and v merge in one stable sort, where a value's place
  -- less its place among the values alone is the count. O((K + M) log(K + M)), where comparing
  -- every pair (what small sizes do) would hold K x M booleans.
  local function count_before(seq, v, right)
    local M = v:size(-1)
    if seq:size(-1) * M * math.floor(v:numel() / math.max(M, 1)) <= 65536 then
      local before = right and seq:unsqueeze(-2):le(v:unsqueeze(-1)) or seq:unsqueeze(-2):lt(v:unsqueeze(-1))
      return before:to("int64"):sum(-1)
    end
    local dt = wick.promote_types(seq.dtype, v.dtype)
    seq, v = seq:to(dt), v:to(dt)
    -- stable: a value precedes the equal entries when it goes left of them, follows them when right
    local merged = right and wick.cat({ seq, v }, -1) or wick.cat({ v, seq }, -1)
    local place = stable_ranks(merged)
    place = right and place:narrow(-1, seq:size(-1) + 1, M) or place:narrow(-1, 1, M)
    return place - stable_ranks(v)
  end
  local SEARCH = { sorted_sequence = "tensor", input = "tensor|number", self = "number", right = "boolean",
    side = "string", out_int32 = "boolean", sorter = "tensor" }
  local BUCKETIZE = { input = "tensor|number", boundaries = "tensor", right = "boolean", out_int32 = "boolean" }
  --- wick.searchsorted(sorted, values[, {right = false, side =, sorter =, out_int32 = false}]): for each
  --- value, the 1-based position where it would be inserted to keep sorted's last dim sorted
  --- (PyTorch's index plus 1); wick.bucketize(values, boundaries[, {right, out_int32}]) the same,
  --- arguments swapped; every argument by name too (torch.bucketize(input=x, boundaries=b, right=True))
  local function search(fn, sorted, values, o)
    check.tensor(sorted, fn, fn == "bucketize" and "boundaries" or "sorted_sequence")
    if values == nil then check.expected(fn, "input", "a tensor or a number", values) end
    if o.side ~= nil and o.side ~= "left" and o.side ~= "right" then
      check.fail(fn, "side can only be 'left' or 'right', got '%s'", o.side)
    end
    if o.side == "left" and o.right then check.fail(fn, "side and right can't be set to opposites, got side of left while right was True") end
    local is_right = o.right == true or o.side == "right"
    local scalar = not is_tensor(values)
    if scalar then -- (a fractional number beside integer boundaries compares as a float: 0.5 between 0 and 1)
      local v = check.number(values, fn, "input")
      local dtype = (v % 1 ~= 0 and not sorted:is_floating_point()) and wick.get_default_dtype() or sorted.dtype
      values = wick.tensor({ v }, { dtype = dtype, device = sorted.device })
      if dtype ~= sorted.dtype then sorted = sorted:to(dtype) end
    end
    if sorted:dim() == 0 then check.fail(fn, "sorted_sequence must have at least one dimension") end
    if o.sorter then
      if o.sorter.shape ~= sorted.shape or o.sorter:is_floating_point() then
        check.fail(fn, "sorter must be an integer tensor of sorted_sequence's shape [%s], got a %s tensor of [%s]",
          table.concat(sorted:size(), ", "), o.sorter.dtype, table.concat(o.sorter:size(), ", "))
      end
      sorted = sorted:gather(-1, o.sorter:to("int64")) -- 1-based, as argsort's indices
    end
    if scalar and sorted:dim() > 1 then
      check.fail(fn, "input value can be a scalar only when boundaries tensor dimension is 1, but we got boundaries tensor dim(%d) and input value's dim(0) numel(1)", sorted:dim())
    end
    if sorted:dim() > 1 then -- one sorted row per leading index: values' leading dims are sorted's
      local same = values:dim() == sorted:dim()
      for j = 1, sorted:dim() - 1 do same = same and values:size(j) == sorted:size(j) end
      if not same then
        check.fail(fn, "boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries tensor and input value tensor must match, but we got boundaries tensor [%s] and input value tensor [%s]",
          table.concat(sorted:size(), ", "), table.concat(values:size(), ", "))
      end
    end
    local at
    if sorted:dim() > 1 then
      at = count_before(sorted, values, is_right)
    else -- one sorted row for all values
      at = count_before(sorted, values:reshape(-1), is_right):reshape(values.shape)
    end
    at = at + 1
    if values:is_floating_point() then at = wick.where(values:ne(values), sorted:size(-1) + 1, at) end -- NaN goes last
    if scalar then at = at:reshape({}) end
    return o.out_int32 and at:to("int32") or at
  end
  function ops.searchsorted(...)
    local o = check.positional("searchsorted", { "sorted_sequence", "input" }, SEARCH, ...)
    if o.self ~= nil and o.input ~= nil then check.fail("searchsorted", "got both input and self") end
    local values = o.input
    if values == nil then values = o.self end
    return search("searchsorted", o.sorted_sequence, values, o)
  end
  function ops.bucketize(...)
    local o = check.positional("bucketize", { "input", "boundaries" }, BUCKETIZE, ...)
    return search("bucketize", o.boundaries, o.input, o)
  end
  --- wick.block_diag(t1, t2, ...): the matrices on the diagonal of a block matrix
  function ops.block_diag(...)
    local ts = { ... }
    local rows, cols, dtype, device = 0, 0, nil, nil
    for i, t in ipairs(ts) do
      check.tensor(t, "block_diag", ("tensors[%d]"):format(i))
      if t:dim() > 2 then check.fail("block_diag", "Input tensors must have 2 or fewer dimensions. Input %d has %d dimensions", i, t:dim()) end
      local m = t:dim() == 2 and t or t:reshape(1, -1)
      ts[i] = m
      rows, cols = rows + m:size(1), cols + m:size(2)
      dtype = dtype and wick.promote_types(dtype, t.dtype) or t.dtype -- (an int block before a float one: float)
      device = device or t.device
    end
    local out = wick.zeros({ rows, cols }, { dtype = dtype, device = device })
    local r, c = 1, 1
    for _, m in ipairs(ts) do
      if m:numel() > 0 then out:narrow(1, r, m:size(1)):narrow(2, c, m:size(2)):copy_(m) end
      r, c = r + m:size(1), c + m:size(2)
    end
    return out
  end
  --- wick.cartesian_prod(t1, t2, ...): every combination of the 1-D tensors' elements, [n, k]
  function ops.cartesian_prod(...)
    local ts = { ... }
    for i, t in ipairs(ts) do
      check.tensor(t, "cartesian_prod", ("tensors[%d]"):format(i))
      if t:dim() ~= 1 then check.fail("cartesian_prod", "Expect a 1D vector, but got shape [%s]", table.concat(t:size(), ", ")) end
    end
    if #ts == 1 then return ts[1]:clone() end
    local grids = { ops.meshgrid(unpack(ts)) }
    for i, g in ipairs(grids) do grids[i] = g:reshape(-1) end
    return wick.stack(grids, 2)
  end

  --- t:unfold(dim, size, step): every window of `size` elements along `dim`,
  --- `step` apart, in a new last dim (PyTorch's Tensor.unfold; a copy here,
  --- through index_select, so gradients flow)
  function Tensor.unfold(t, dim, size, step)
    check.tensor(t, "unfold", "self")
    check.int(dim, "unfold", "dimension")
    check.int(size, "unfold", "size", 0)
    check.int(step, "unfold", "step", 1)
    local d = dim < 0 and dim + t:dim() + 1 or dim
    if t:dim() == 0 then d = 1 end
    if d < 1 or d > math.max(t:dim(), 1) then
      check.fail("unfold", "Dimension out of range (expected to be in range of [%d, %d], but got %d)", -math.max(t:dim(), 1), math.max(t:dim(), 1), dim)
    end
    local x = t:dim() == 0 and t:reshape(1) or t
    local len = x:size(d)
    if size > len then check.fail("unfold", "maximum size for tensor at dimension %d is %d but size is %d", dim, len, size) end
    local n = math.floor((len - size) / step) + 1
    local I64 = { dtype = "int64", device = t.device }
    local starts = wick.arange(0, n, I64) * step + 1
    local idx = (starts:view(n, 1) + wick.arange(0, size, I64):view(1, size)):reshape(-1)
    local picked = x:index_select(d, idx) -- dim d now holds n * size
    local shape = x:size()
    shape[d] = n
    table.insert(shape, d + 1, size)
    local out = picked:reshape(shape):movedim(d + 1, -1)
    return t:dim() == 0 and out:reshape(size) or out
  end

  --- t:diagonal([offset = 0[, dim1 = 1[, dim2 = 2]]]): the diagonal of the
  --- (dim1, dim2) planes in a new last dim (PyTorch's; a copy here, with gradients)
  local DIAGONAL = { offset = "integer", dim1 = "integer", dim2 = "integer" }
  function Tensor.diagonal(t, offset, dim1, dim2, extra)
    check.tensor(t, "diagonal", "self")
    if type(offset) == "table" or type(dim1) == "table" or type(dim2) == "table" or extra ~= nil then
      -- PyTorch's keywords (t.diagonal(offset=1, dim1=-2, dim2=-1)): an options table, or after the
      -- positions it does not repeat (t:diagonal(0, {dim1 = 2, dim2 = 3}))
      if type(offset) == "table" and not check.is_tensor(offset) and (dim1 ~= nil or dim2 ~= nil) then
        check.fail("diagonal", "either an options table or positional arguments (offset, dim1, dim2), not both")
      end
      local o = check.positional("diagonal", { "offset", "dim1", "dim2" }, DIAGONAL, offset, dim1, dim2, extra)
      offset, dim1, dim2 = o.offset, o.dim1, o.dim2
    end
    offset = check.opt_int(offset, "diagonal", "offset", 0)
    dim1, dim2 = check.opt_int(dim1, "diagonal", "dim1", 1), check.opt_int(dim2, "diagonal", "dim2", 2)
    if t:dim() < 2 then check.fail("diagonal", "expected a tensor of at least 2 dims, got %d", t:dim()) end
    local d1 = dim1 < 0 and dim1 + t:dim() + 1 or dim1
    local d2 = dim2 < 0 and dim2 + t:dim() + 1 or dim2
    if d1 == d2 then check.fail("diagonal", "diagonal dimensions cannot be identical %d, %d", dim1, dim2) end
    -- dims in decreasing order take the same elements as the other way round with the offset negated,
    -- without a transpose (linear_operator's A.diagonal(dim1=-1, dim2=-2).add_(jitter) writes through)
    if d1 > d2 then d1, d2, offset = d2, d1, -offset end
    local x = t:movedim({ d1, d2 }, { -2, -1 })
    local n, m = x:size(-2), x:size(-1)
    local rows = offset >= 0 and math.max(0, math.min(n, m - offset)) or math.max(0, math.min(n + offset, m))
    local first_row, first_col = offset >= 0 and 1 or 1 - offset, offset >= 0 and 1 + offset or 1
    local shape = x:size()
    shape[#shape] = nil
    shape[#shape] = n * m
    if rows == 0 then
      shape[#shape] = 0
      return wick.empty(shape, { dtype = t.dtype, device = t.device })
    end
    local first = (first_row - 1) * m + first_col
    if m <= 1 or x:stride(-2) == m * x:stride(-1) then
      -- the last two dims merge into one: the diagonal is a strided slice of it, a view (writes reach t)
      local key = {}
      for i = 1, #shape - 1 do key[i] = {} end
      key[#shape] = { first, first + (rows - 1) * (m + 1), m + 1 }
      return x:view(shape)[key]
    end
    local r = wick.arange(0, rows, { dtype = "int64", device = t.device })
    return x:reshape(shape):index_select(-1, r * (m + 1) + first)
  end

  --- t:isclose(u[, rtol = 1e-5[, atol = 1e-8[, equal_nan = false]]]): elementwise
  --- |t - u| <= atol + rtol |u| (bool), as PyTorch's
  function Tensor.isclose(t, u, rtol, atol, equal_nan)
    check.tensor(t, "isclose", "self")
    if type(rtol) == "table" then
      local o = check.options(rtol, "isclose", { rtol = "number", atol = "number", equal_nan = "boolean" })
      rtol, atol, equal_nan = o.rtol, o.atol, o.equal_nan
    end
    rtol, atol = check.opt_number(rtol, "isclose", "rtol", 1e-5), check.opt_number(atol, "isclose", "atol", 1e-8)
    if not wick.is_tensor(u) then u = wick.full({}, check.number(u, "isclose", "other"), { dtype = t.dtype, device = t.device }) end
    -- equal (infinities of one sign too), or both finite and within the tolerance (an infinity is not
    -- close to anything else, as PyTorch's)
    local close = (t - u):abs():le((u:abs() * rtol) + atol):logical_and(t:isfinite():logical_and(u:isfinite()))
      :logical_or(t:eq(u))
    if equal_nan then close = close:logical_or(t:ne(t):logical_and(u:ne(u))) end
    return close
  end

  --- t:resize_(sizes...) (numbers or a table) and t:resize_as_(u): t takes the
  --- new shape in place, contiguous; as PyTorch's, on its own storage while that holds the elements
  --- (its views see the writes: DCGAN's input.data:resize_(x:size()):copy_(x)), else on a new one
  --- whose first elements are t's (in order) and the others zeros (PyTorch leaves them uninitialised)
  function Tensor.resize_(t, ...)
    check.tensor(t, "resize_", "self")
    local sizes = select("#", ...) == 1 and type((...)) == "table" and (...) or { ... }
    local plain = {}
    for i = 1, #sizes do plain[i] = sizes[i] end -- (a wick.Size too)
    sizes = plain
    local n = 1
    for i, v in ipairs(sizes) do n = n * check.int(v, "resize_", ("size[%d]"):format(i), 0) end
    if t.requires_grad then check.fail("resize_", "cannot resize variables that require grad") end
    local strides, step = {}, 1
    for i = #sizes, 1, -1 do strides[i], step = step, step * math.max(sizes[i], 1) end
    local fits, view = pcall(core.as_strided, t, sizes, strides, t:storage_offset())
    if fits then return t:set_(view) end
    local fresh = wick.zeros(sizes, { dtype = t.dtype, device = t.device })
    local keep = math.min(n, t:numel())
    if keep > 0 then fresh:reshape(-1):narrow(1, 1, keep):copy_(t:reshape(-1):narrow(1, 1, keep)) end
    return t:set_(fresh)
  end
  function Tensor.resize_as_(t, u)
    check.tensor(u, "resize_as_", "the_template")
    return Tensor.resize_(t, u:size())
  end

  -- ---- in-place shape changes (t keeps its identity and takes the view's geometry) ----
  local function reshaped_(name, f)
    Tensor[name] = function(t, ...)
      check.tensor(t, name, "self")
      if t.requires_grad and t.is_leaf and wick.is_grad_enabled() then -- (as every in-place op, PyTorch's)
        check.fail(name, "a leaf tensor that requires grad is used in an in-place operation; wrap the update in "
          .. "wick.no_grad(...), or use the out-of-place %s", name:sub(1, -2))
      end
      return t:set_(f(t, ...))
    end
  end
  reshaped_("t_", function(t) return t:t() end)
  reshaped_("transpose_", function(t, a, b) return t:transpose(a, b) end)
  reshaped_("squeeze_", function(t, ...) return t:squeeze(...) end)
  reshaped_("unsqueeze_", function(t, d) return t:unsqueeze(d) end)
  Tensor.swapaxes, Tensor.swapdims = Tensor.transpose, Tensor.transpose
  function Tensor.ravel(t) return check.tensor(t, "ravel", "self"):reshape(-1) end

  --- wick.hstack / vstack / dstack / column_stack / row_stack (tensors): numpy's joins
  local function at_least(t, n)
    while t:dim() < n do t = n == 3 and t:dim() == 2 and t:unsqueeze(-1) or t:unsqueeze(1) end
    return t
  end
  local function joined(name, prepare, dim_of)
    ops[name] = function(ts)
      check.table(ts, name, "tensors")
      local list = {}
      for i, t in ipairs(ts) do list[i] = prepare(check.tensor(t, name, ("tensors[%d]"):format(i))) end
      if #list == 0 then check.fail(name, "expects a non-empty list of tensors") end
      return wick.cat(list, dim_of(list[1]))
    end
  end
  joined("hstack", function(t) return at_least(t, 1) end, function(t) return t:dim() == 1 and 1 or 2 end)
  joined("vstack", function(t) return at_least(t, 2) end, function() return 1 end)
  ops.row_stack = ops.vstack
  joined("dstack", function(t) return at_least(t, 3) end, function() return 3 end)
  joined("column_stack", function(t) return t:dim() <= 1 and t:reshape(-1, 1) or t end, function() return 2 end)

  -- ---- small elementwise and product forms PyTorch has (compositions, with gradients) ----
  local function tensor_or_number(v, like)
    if wick.is_tensor(v) then return v end
    return wick.full({}, check.number(v, "other", "other"), { dtype = like.dtype, device = like.device })
  end
  -- t and u (a tensor or a number) in their result type, floating (the default dtype over integers),
  -- before a composed op's first step: PyTorch's xlogy(float64, float32) takes the log in float64
  local function float_operands(fn, t, u)
    check.tensor(t, fn, "self")
    if not wick.is_tensor(u) then check.number(u, fn, "other") end
    local d = wick.result_type(t, u)
    if d == "bool" or not (d:match("float") or d:match("^complex")) then d = wick.get_default_dtype() end
    if t.dtype ~= d then t = t:to(d) end
    if wick.is_tensor(u) and u.dtype ~= d then u = u:to(d) end
    return t, tensor_or_number(u, t)
  end
  ops._float_operands = float_operands
  --- t:logit([eps]): log(p / (1 - p)), p clamped to [eps, 1 - eps] when eps is given
  function Tensor.logit(t, ...) -- (eps by name too: Grounding DINO's special.logit(x, eps=1e-5))
    check.tensor(t, "logit", "self")
    local eps = check.positional("logit", { "eps" }, { eps = "number" }, ...).eps
    if eps ~= nil then t = t:clamp(eps, 1 - eps) end
    return (t / (1 - t)):log()
  end
  --- t:xlogy(u): t * log(u), 0 where t is 0 (and u not NaN)
  function Tensor.xlogy(t, u)
    t, u = float_operands("xlogy", t, u)
    -- (0 where t is 0 and u is not NaN; the log taken of 1 there, so that
    -- t's gradient, log(u), is 0 and not -inf at u = 0, as PyTorch's)
    local zero = t:eq(0):logical_and(u:eq(u))
    local y = wick.where(zero, t * 0, t * wick.where(zero, 1, u):log())
    -- t's gradient where t is 0 is still log(u) (0 where u <= 0), as PyTorch's: a term of value 0 carries it
    local g = wick.where(zero:logical_and(u:gt(0)):logical_and(u:isfinite()), u, 1):log()
    return y + (t - t:detach()) * g
  end
  function Tensor.rad2deg(t) return check.tensor(t, "rad2deg", "self") * (180 / math.pi) end
  function Tensor.deg2rad(t) return check.tensor(t, "deg2rad", "self") * (math.pi / 180) end
  -- a float tensor of t (integers in the default float dtype), for the inverse hyperbolics
  local function floating(t, fn)
    check.tensor(t, fn, "self")
    return t:is_floating_point() and t or t:to(wick.get_default_dtype())
  end
  --- t:atanh(), t:asinh(), t:acosh(): by log1p and sqrt (PyTorch's values and gradients)
  function Tensor.atanh(t)
    local x = floating(t, "atanh")
    return ((x * 2) / (1 - x)):log1p() * 0.5
  end
  function Tensor.asinh(t) -- sign(x) log1p(|x| + x^2 / (1 + sqrt(1 + x^2))): exact near 0 and far out
    local x = floating(t, "asinh")
    local negative = x:lt(0)
    local a = wick.where(negative, -x, x) -- |x| with the gradient 1 at 0 (abs's is 0 there)
    local big = a:gt(2 ^ 28) -- (x^2 overflows: log(2|x|))
    local small = wick.where(big, 0, a)
    local r = (small + small * small / ((small * small + 1):sqrt() + 1)):log1p()
    r = wick.where(big, (wick.where(big, a, 1) * 2):log(), r)
    return wick.where(negative, -r, r)
  end
  function Tensor.acosh(t)
    local x = floating(t, "acosh")
    return (x + (x * x - 1):sqrt()):log()
  end
  --- t:logaddexp(u): log(e^t + e^u) without overflow; t:logaddexp2(u) in base 2
  function Tensor.logaddexp(t, u)
    t, u = float_operands("logaddexp", t, u)
    local m = wick.maximum(t, u)
    local finite = m:isfinite()
    local diff = wick.where(finite, (t - u):abs(), 0)
    return wick.where(finite, m + (-diff):exp():log1p(), m)
  end
  function Tensor.logaddexp2(t, u)
    t, u = float_operands("logaddexp2", t, u)
    local ln2 = math.log(2)
    return Tensor.logaddexp(t * ln2, u * ln2) / ln2
  end
  --- t:nansum([dim[, keepdim]]): the sum with NaN counted as 0
  function Tensor.nansum(t, ...)
    check.tensor(t, "nansum", "self")
    if not t:is_floating_point() then return t:sum(...) end
    return wick.where(t:isnan(), 0, t):sum(...)
  end
  function Tensor.exp2(t) -- 2^t by pow, correctly rounded (e^(t ln 2) lost ulps to the rounding of t ln 2)
    check.tensor(t, "exp2", "self")
    return wick.pow(2, t:is_floating_point() and t or t:to(wick.get_default_dtype()))
  end
  --- t:float_power(u): t ^ u in float64 (wick.float_power(number, u) too: numpy's np.power(0.4, t))
  function Tensor.float_power(t, u)
    if type(t) == "number" and wick.is_tensor(u) then return t ^ u:to("float64") end
    check.tensor(t, "float_power", "self")
    return t:to("float64") ^ (wick.is_tensor(u) and u:to("float64") or check.number(u, "float_power", "exponent"))
  end
  function Tensor.true_divide(t, u) return check.tensor(t, "true_divide", "self"):div(u) end
  --- t:addmv(mat, vec[, {beta = 1, alpha = 1}]): beta t + alpha (mat @ vec)
  function Tensor.addmv(t, mat, vec, opts)
    check.tensor(t, "addmv", "self")
    check.options(opts, "addmv", { beta = "number", alpha = "number" })
    local beta, alpha = opts and opts.beta or 1, opts and opts.alpha or 1
    local prod = check.tensor(mat, "addmv", "mat"):mv(check.tensor(vec, "addmv", "vec"))
    return (beta == 0 and ignored(t) or t * beta) + prod * alpha
  end
  --- t:addr(u, v[, {beta = 1, alpha = 1}]): beta t + alpha outer(u, v)
  function Tensor.addr(t, u, v, opts)
    check.tensor(t, "addr", "self")
    check.options(opts, "addr", { beta = "number", alpha = "number" })
    local beta, alpha = opts and opts.beta or 1, opts and opts.alpha or 1
    return (beta == 0 and ignored(t) or t * beta) + check.tensor(u, "addr", "vec1"):outer(check.tensor(v, "addr", "vec2")) * alpha
  end
  --- t:kron(u): the Kronecker product (blocks t[i, j] * u)
  function Tensor.kron(t, u)
    check.tensor(t, "kron", "self")
    check.tensor(u, "kron", "other")
    local n = math.max(t:dim(), u:dim())
    local a, b = t, u
    while a:dim() < n do a = a:unsqueeze(1) end
    while b:dim() < n do b = b:unsqueeze(1) end
    local ashape, bshape, out = {}, {}, {}
    for i = 1, n do
      ashape[2 * i - 1], ashape[2 * i] = a:size(i), 1
      bshape[2 * i - 1], bshape[2 * i] = 1, b:size(i)
      out[i] = a:size(i) * b:size(i)
    end
    return (a:reshape(ashape) * b:reshape(bshape)):reshape(out)
  end
  --- t:cross(u[, dim]): the cross product of 3-vectors along dim (the first of size 3 without one)
  function Tensor.cross(t, u, dim)
    check.tensor(t, "cross", "self")
    check.tensor(u, "cross", "other")
    if type(dim) == "table" then dim = check.options(dim, "cross", { dim = "number" }).dim end
    if dim == nil then
      for d = 1, t:dim() do if t:size(d) == 3 then dim = d; break end end
      if dim == nil then check.fail("cross", "no dimension of size 3 in input") end
    end
    if t:size(dim) ~= 3 or u:size(dim) ~= 3 then
      check.fail("cross", "inputs dimension %d must have length 3", dim)
    end
    local function c(x, i) return x:narrow(dim, i, 1) end
    return wick.cat({ c(t, 2) * c(u, 3) - c(t, 3) * c(u, 2), c(t, 3) * c(u, 1) - c(t, 1) * c(u, 3),
      c(t, 1) * c(u, 2) - c(t, 2) * c(u, 1) }, dim)
  end
  --- wick.chain_matmul(...) / wick.linalg.multi_dot(list): the product, left to right
  function ops.chain_matmul(...)
    local ms = select("#", ...) == 1 and type(...) == "table" and not wick.is_tensor(...) and (...) or { ... }
    if #ms == 0 then check.fail("chain_matmul", "expected at least one tensor") end
    local out = check.tensor(ms[1], "chain_matmul", "matrices[1]")
    for i = 2, #ms do out = out:matmul(check.tensor(ms[i], "chain_matmul", ("matrices[%d]"):format(i))) end
    return out
  end

  --- t:fill_diagonal_(value[, wrap = false]): the main diagonal (all indices
  --- equal) set to value (a number or a boolean) in place; wrap: a tall matrix's restarts every m + 1 rows
  function Tensor.fill_diagonal_(t, value, wrap)
    check.tensor(t, "fill_diagonal_", "self")
    if type(value) == "boolean" then value = value and 1 or 0 end -- (radius_graph's adj.fill_diagonal_(False))
    check.number(value, "fill_diagonal_", "fill_value")
    if t:dim() < 2 then check.fail("fill_diagonal_", "dimensions must larger than 1") end
    if not t:is_contiguous() then check.fail("fill_diagonal_", "expected a contiguous tensor") end
    local count = t:size(1)
    for d = 2, t:dim() do
      if t:dim() > 2 and t:size(d) ~= count then check.fail("fill_diagonal_", "all dimensions of input must be of equal length") end
    end
    local step, mult = 0, 1 -- the flat distance between diagonal elements: the sum of the strides
    for d = t:dim(), 1, -1 do step, mult = step + mult, mult * t:size(d) end
    if t:dim() == 2 then
      local n, m = t:size(1), t:size(2)
      count = math.min(n, m)
      if wrap and n > m then count = math.floor((n * m - 1) / (m + 1)) + 1 end
    end
    if count > 0 then
      t:reshape(-1):index_fill_(1, wick.arange(0, count, { dtype = "int64", device = t.device }) * step + 1, value)
    end
    return t
  end

  --- t:histc([bins = 100[, min = 0[, max = 0]]]) (or {bins =, min =, max =}):
  --- counts of t's values in `bins` equal bins over [min, max] (the data's
  --- range when min == max); values outside are left out; t's dtype
  local HISTC = { bins = "integer", min = "number", max = "number" }
  function Tensor.histc(t, ...)
    check.tensor(t, "histc", "self")
    local o = check.positional("histc", { "bins", "min", "max" }, HISTC, ...)
    local bins, min, max = o.bins, o.min, o.max
    bins = check.opt_int(bins, "histc", "bins", 100)
    if bins < 1 then check.fail("histc", "bins must be > 0, but got %d", bins) end
    min, max = check.opt_number(min, "histc", "min", 0), check.opt_number(max, "histc", "max", 0)
    if not t:is_floating_point() then check.fail("histc", "\"histogram_cpu\" not implemented for '%s'", t.dtype) end
    local x = t:detach():reshape(-1):to("float64")
    if min == max and x:numel() > 0 then min, max = x:min():item(), x:max():item() end
    if min == max then min, max = min - 1, max + 1 end
    if min > max then check.fail("histc", "max must be larger than min") end
    if not (math.abs(min) < math.huge and math.abs(max) < math.huge) then
      local text = function(v) return v ~= v and "nan" or ("%g"):format(v) end
      check.fail("histc", "range of [%s, %s] is not finite", text(min), text(max))
    end
    local keep = x:ge(min):logical_and(x:le(max))
    x = x[keep]
    local idx = ((x - min) * (bins / (max - min))):floor():clamp(0, bins - 1):to("int64") + 1
    local counts = wick.zeros(bins, { dtype = "float64", device = t.device })
    if idx:numel() > 0 then counts:index_add_(1, idx, wick.ones(idx:numel(), { dtype = "float64", device = t.device })) end
    return counts:to(t.dtype)
  end

  --- wick.histogram(t[, bins = 100][, {bins =, range = {min, max}, weight =, density = false}]):
  --- hist, bin_edges (PyTorch's torch.histogram with an integer bins)
  local HISTOGRAM = { bins = "integer|tensor", range = "table", weight = "tensor", density = "boolean" }
  -- histogram over given edges: bin i holds [e_i, e_i+1), the last one closed
  local function histogram_edges(t, x, edges, opts)
    local fn = "histogram"
    if edges:dim() ~= 1 or edges:numel() < 2 then
      check.fail(fn, "bins must be a 1-D tensor of at least 2 edges, got shape [%s]", table.concat(edges:size(), ", "))
    end
    if opts.range then check.fail(fn, "range cannot be given with a tensor of bin edges") end
    local e = edges:detach():to("float64")
    local k = e:numel() - 1
    if e:diff():lt(0):any() then check.fail(fn, "bin edges must be increasing") end
    local keep = x:ge(e[1]):logical_and(x:le(e[k + 1]))
    local idx = wick.searchsorted(e, x[keep], { right = true }):sub(1):clamp(1, k)
    local w = opts.weight and opts.weight:detach():reshape(-1):to("float64")[keep]
      or wick.ones(idx:numel(), { dtype = "float64", device = t.device })
    local hist = wick.zeros(k, { dtype = "float64", device = t.device })
    if idx:numel() > 0 then hist:index_add_(1, idx, w) end
    if opts.density then hist = hist / (hist:sum() * e:diff()) end
    return hist:to(t.dtype), edges:clone()
  end
  function ops.histogram(t, ...)
    check.tensor(t, "histogram", "input")
    local opts = check.positional("histogram", { "bins" }, HISTOGRAM, ...)
    local x = t:detach():reshape(-1):to("float64")
    if is_tensor(opts.bins) and opts.bins:dim() > 0 then return histogram_edges(t, x, opts.bins, opts) end
    local bins = check.opt_int(opts.bins, "histogram", "bins", 100, 1)
    local lo, hi
    if opts.range then lo, hi = opts.range[1], opts.range[2]
    elseif x:numel() > 0 then lo, hi = x:min():item(), x:max():item()
    else lo, hi = 0, 0 end
    if lo == hi then lo, hi = lo - 0.5, hi + 0.5 end -- numpy's and PyTorch's widening of an empty range
    local edges = wick.linspace(lo, hi, bins + 1, { dtype = "float64", device = t.device })
    local keep = x:ge(lo):logical_and(x:le(hi))
    local idx = ((x[keep] - lo) * (bins / (hi - lo))):floor():clamp(0, bins - 1):to("int64") + 1
    local w = opts.weight and opts.weight:detach():reshape(-1):to("float64")[keep]
      or wick.ones(idx:numel(), { dtype = "float64", device = t.device })
    local hist = wick.zeros(bins, { dtype = "float64", device = t.device })
    if idx:numel() > 0 then hist:index_add_(1, idx, w) end
    if opts.density then hist = hist / (hist:sum() * (hi - lo) / bins) end
    return hist:to(t.dtype), edges:to(t.dtype)
  end

  --- wick.histogramdd(input, bins[, range[, weight[, density]]]) (or {range =, weight =, density = false}):
  --- hist, bin_edges (a list of D tensors) of the points input (..., D), as PyTorch's: bins a number of bins
  --- for every dim, a list of D numbers, or a list of D 1-D tensors of increasing edges; range a flat list
  --- {min1, max1, ..., minD, maxD} (else each dim's min and max; an empty range widened by 0.5 each side);
  --- bin i holds [e_i, e_i+1), the last one closed; points outside are left out; weight of shape input's
  --- (..., ) adds weights instead of ones; density divides by the total and by each bin's volume
  local HISTOGRAMDD = { bins = "integer|table", range = "table", weight = "tensor", density = "boolean" }
  function ops.histogramdd(input, ...)
    local fn = "histogramdd"
    check.tensor(input, fn, "input")
    local o = check.positional(fn, { "bins", "range", "weight", "density" }, HISTOGRAMDD, ...)
    if o.bins == nil then check.fail(fn, "missing required argument 'bins'") end
    if input:dim() < 2 then check.fail(fn, "input tensor should have at least 2 dimensions") end
    if input.dtype ~= "float32" and input.dtype ~= "float64" then
      check.fail(fn, "\"histogramdd\" not implemented for '%s' (a floating point input: float32 or float64)", input.dtype)
    end
    local D = input:size(-1)
    if D == 0 then return wick.zeros({}, { dtype = input.dtype, device = input.device }), check.list({}) end
    local pts = input:detach():reshape(-1, D)
    local N = pts:size(1)
    local lead = input:size()
    lead[#lead] = nil
    local w = o.weight
    if w ~= nil then
      local ws, same = w:size(), w:dim() == #lead
      for i = 1, #lead do same = same and ws[i] == lead[i] end
      if not same then
        check.fail(fn, "if weight tensor is provided it should have the same shape as the input tensor excluding its "
          .. "innermost dimension, but got input with shape [%s] and weight with shape [%s]",
          table.concat(input:size(), ", "), table.concat(ws, ", "))
      end
      if w.dtype ~= input.dtype then
        check.fail(fn, "if weight tensor is provided, input tensor and weight tensor should have the same dtype, "
          .. "but got input(%s), and weight(%s)", input.dtype, w.dtype)
      end
      w = w:detach():reshape(-1):to("float64")
    end
    -- the edges of each dim
    local bins, edges = o.bins, {}
    if type(bins) == "table" then
      if #bins ~= D then
        if is_tensor(bins[1]) then
          check.fail(fn, "expected %d sequences of bin edges for a %d-dimensional histogram but got %d", D, D, #bins)
        end
        check.fail(fn, "The size of bins must be equal to the innermost dimension of the input.")
      end
    end
    local given = type(bins) == "table" and is_tensor(bins[1])
    if given then
      for d = 1, D do
        local e = bins[d]
        if not is_tensor(e) then check.expected(fn, "bins[" .. d .. "]", "a tensor (all of bins, or none)", e) end
        if e.dtype ~= input.dtype then
          check.fail(fn, "input tensor and bins tensors should have the same dtype, but got input with dtype %s and "
            .. "bins for dimension %d with dtype %s", input.dtype, d, e.dtype)
        end
        if e:dim() ~= 1 then
          check.fail(fn, "bins tensor should have one dimension, but got %d dimensions in the bins tensor for dimension %d",
            e:dim(), d)
        end
        if e:numel() < 1 then
          check.fail(fn, "bins tensor should have at least 1 element, but got 0 elements in the bins tensor for dimension %d", d)
        end
        if e:numel() < 2 then check.fail(fn, "bins must be > 0, but got 0 for dimension %d", d) end
        if e:detach():diff():lt(0):any():item() then check.fail(fn, "the bin edges of dimension %d must be increasing", d) end
        edges[d] = e:detach():clone()
      end
    else
      local counts = {}
      for d = 1, D do
        local k = type(bins) == "table" and bins[d] or bins
        counts[d] = check.int(k, fn, type(bins) == "table" and "bins[" .. d .. "]" or "bins")
        if counts[d] <= 0 then check.fail(fn, "bins must be > 0, but got %d for dimension %d", counts[d], d) end
        if counts[d] > 2 ^ 24 then check.fail(fn, "bins must be at most 2^24, got %d for dimension %d", counts[d], d) end
      end
      local range = o.range
      if range ~= nil and #range ~= 2 * D then
        check.fail(fn, "for a %d-dimensional histogram range should have %d elements, but got %d", D, 2 * D, #range)
      end
      local lo, hi
      if range == nil and N > 0 then lo, hi = pts:amin(1):to("float64"):totable(), pts:amax(1):to("float64"):totable() end
      for d = 1, D do
        local a, b
        if range ~= nil then
          a, b = check.number(range[2 * d - 1], fn, "range[" .. (2 * d - 1) .. "]"), check.number(range[2 * d], fn, "range[" .. (2 * d) .. "]")
        elseif N > 0 then a, b = lo[d], hi[d]
        else a, b = 0, 1 end -- (no points: PyTorch's [0, 1])
        if a > b then check.fail(fn, "min should not exceed max, but got min %s max %s for dimension %d", a, b, d) end
        if not (a > -math.huge and b < math.huge) then
          check.fail(fn, "dimension %d's range [%s, %s] is not finite", d, tostring(a), tostring(b))
        end
        if a == b then a, b = a - 0.5, b + 0.5 end
        edges[d] = wick.linspace(a, b, counts[d] + 1, { dtype = input.dtype, device = input.device })
      end
    end
    -- each point's bin in each dim (points outside some dim's edges, NaN too, left out)
    local sizes, keep = {}, wick.ones({ N }, { dtype = "bool", device = input.device })
    local x = pts:to("float64")
    local e64 = {}
    for d = 1, D do
      e64[d] = edges[d]:to("float64")
      sizes[d] = e64[d]:numel() - 1
      local col = x:select(2, d)
      keep = keep:logical_and(col:ge(e64[d][1]:item())):logical_and(col:le(e64[d][-1]:item()))
    end
    local total = 1
    for d = 1, D do total = total * sizes[d] end
    if total > 2 ^ 31 then check.fail(fn, "%.0f bins in all: at most 2^31", total) end
    local hist = wick.zeros(total, { dtype = "float64", device = input.device })
    local flat
    local kept = keep:nonzero():reshape(-1)
    local stride = 1
    for d = D, 1, -1 do
      local col = x:select(2, d):index_select(1, kept):contiguous()
      -- (searchsorted's 1-based place after the edges <= the value: its bin, 1-based, then 0-based)
      local pos = (wick.searchsorted(e64[d], col, { right = true }) - 1):clamp(1, sizes[d]) - 1
      flat = flat and flat + pos * stride or pos * stride
      stride = stride * sizes[d]
    end
    if flat ~= nil and flat:numel() > 0 then
      local add = w and w:index_select(1, kept) or wick.ones(flat:numel(), { dtype = "float64", device = input.device })
      hist:index_add_(1, flat + 1, add)
    end
    hist = hist:view(sizes):to(input.dtype)
    if o.density then
      hist = hist / hist:sum()
      for d = 1, D do
        local shape = {}
        for i = 1, D do shape[i] = i == d and sizes[d] or 1 end
        hist = hist / edges[d]:diff():view(shape)
      end
    end
    return hist, check.list(edges)
  end
  ops.histogramdd = check.by_name(ops.histogramdd, "histogramdd", { "input", "bins?" })
  wick.histogramdd = ops.histogramdd

  -- ---- more of PyTorch's forms that ported programs call ----
  --- t:addbmm(b1, b2[, {beta = 1, alpha = 1}]): beta t + alpha sum_i b1[i] @ b2[i]
  function Tensor.addbmm(t, b1, b2, opts)
    check.tensor(t, "addbmm", "self")
    check.tensor(b1, "addbmm", "batch1")
    check.tensor(b2, "addbmm", "batch2")
    if b1:dim() ~= 3 or b2:dim() ~= 3 then check.fail("addbmm", "batch1 and batch2 must be 3-D tensors") end
    local o = check.options(opts, "addbmm", { beta = "number", alpha = "number" })
    local beta, alpha = o.beta or 1, o.alpha or 1
    local p = b1:bmm(b2):sum(1)
    if alpha ~= 1 then p = p * alpha end
    if beta == 0 then return p + ignored(t) end
    return (beta == 1 and t or t * beta) + p
  end
  for _, name in ipairs({ "addmm", "baddbmm", "addbmm", "addmv", "addr", "logical_not", "logical_and", "logical_or",
    "logical_xor", "square" }) do
    if Tensor[name] and rawget(Tensor, name .. "_") == nil then Tensor[name .. "_"] = in_place_form(name, Tensor[name]) end
  end

  --- t:unflatten(dim, sizes): dim split into sizes (one may be -1)
  function Tensor.unflatten(t, dim, sizes)
    check.tensor(t, "unflatten", "self")
    local d = wrap_dim(t, dim, "unflatten")
    check.table(sizes, "unflatten", "sizes")
    if #sizes == 0 then check.fail("unflatten", "sizes must be non-empty") end
    local shape = t:size()
    local new = {}
    for i = 1, d - 1 do new[#new + 1] = shape[i] end
    local known, free = 1, nil
    for i, v in ipairs(sizes) do
      check.int(v, "unflatten", "sizes", -1)
      if v == -1 then
        if free then check.fail("unflatten", "only one dimension can be inferred") end
        free = #new + 1
      else known = known * v end
      new[#new + 1] = v
    end
    if free then
      if known == 0 or shape[d] % known ~= 0 then
        check.fail("unflatten", "sizes %s don't multiply up to the size of dim %d (%d) of the input", table.concat(sizes, ", "), dim, shape[d])
      end
      new[free] = floor(shape[d] / known)
    elseif known ~= shape[d] then
      check.fail("unflatten", "provided sizes don't multiply up to the size of dim %d (%d) in the input tensor", dim, shape[d])
    end
    for i = d + 1, #shape do new[#new + 1] = shape[i] end
    return t:view(new)
  end

  -- a number (or a table of them) beside a tensor `like`: a tensor of like's dtype, the default float one for
  -- a fraction beside integers (a number: 0-dim, as PyTorch's Number element / test_element)
  local function whole(v, depth)
    if type(v) == "number" then return v % 1 == 0 end
    if type(v) == "table" and depth < 32 then
      for _, e in ipairs(v) do if not whole(e, depth + 1) then return false end end
    end
    return true
  end
  local function isin_operand(v, like)
    if like == nil or (not like:is_floating_point() and not whole(v, 0)) then return wick.tensor(v) end
    return wick.tensor(v, { dtype = like.dtype, device = like.device })
  end
  --- t:isin(test_elements[, {invert = false, assume_unique}]): whether each element is among test_elements
  function Tensor.isin(t, test, opts)
    if not is_tensor(t) then t = isin_operand(t, is_tensor(test) and test or nil) end
    if not is_tensor(test) then test = isin_operand(test, t) end
    local o = check.options(opts, "isin", { invert = "boolean", assume_unique = "boolean" })
    local flat = test:reshape(-1)
    local r
    if flat:numel() == 0 then
      r = wick.zeros(t.shape, { dtype = "bool", device = t.device })
    else
      local dtype = wick.promote_types(t.dtype, flat.dtype) -- (1.5 is not in {1, 5})
      local sorted = flat:to(dtype):sort()
      local x = t:to(dtype)
      local pos = wick.searchsorted(sorted, x:reshape(-1)):clamp(1, sorted:numel())
      r = sorted:index_select(1, pos):eq(x:reshape(-1)):view(t.shape)
    end
    if o.invert then r = r:logical_not() end
    return r
  end
  function ops.isin(elements, test, opts)
    -- PyTorch's keywords, all of them (HF's isin_mps_friendly(elements=..., test_elements=...)) or after elements
    local function keywords(t)
      return type(t) == "table" and getmetatable(t) == nil and (t.elements ~= nil or t.test_elements ~= nil)
    end
    if keywords(elements) and test == nil then
      local o = check.options(elements, "isin", { elements = "any", test_elements = "any", invert = "boolean",
        assume_unique = "boolean" })
      elements, test, opts = o.elements, o.test_elements, { invert = o.invert, assume_unique = o.assume_unique }
    elseif keywords(test) and opts == nil then
      local o = check.options(test, "isin", { test_elements = "any", invert = "boolean", assume_unique = "boolean" })
      test, opts = o.test_elements, { invert = o.invert, assume_unique = o.assume_unique }
    end
    if elements == nil then check.fail("isin", "missing required argument 'elements'") end
    if test == nil then check.fail("isin", "missing required argument 'test_elements'") end
    if not is_tensor(elements) and not is_tensor(test) and type(elements) ~= "table" and type(test) ~= "table" then
      check.fail("isin", "expected elements or test_elements to be a tensor, got %s and %s",
        check.describe(elements), check.describe(test))
    end
    if not is_tensor(elements) then elements = isin_operand(elements, is_tensor(test) and test or nil) end
    return Tensor.isin(elements, test, opts)
  end

  -- An inclusive scan along dim by doubling (Hillis-Steele: after the step of
  -- width w each position holds the combination of its last 2w): combine(prev,
  -- cur) of an earlier and a later window, elementwise, for any associative rule
  local function scan(acc, d, combine)
    local n = acc[1]:size(d)
    local step = 1
    while step < n do
      local prev = {}
      for k = 1, #acc do prev[k] = acc[k]:narrow(d, 1, n - step) end
      local cur = {}
      for k = 1, #acc do cur[k] = acc[k]:narrow(d, step + 1, n - step) end
      local merged = { combine(prev, cur) }
      for k = 1, #acc do acc[k] = wick.cat({ acc[k]:narrow(d, 1, step), merged[k] }, d) end
      step = step * 2
    end
    return acc
  end

  --- t:logcumsumexp(dim): log(cumsum(exp(t))) along dim, without overflow or underflow (logaddexp's scan)
  -- dim by name too ({dim = 2} or NumPy's {axis = 2}), as PyTorch's dim=
  local function dim_of(fn, dim)
    if type(dim) == "table" and not is_tensor(dim) then
      local o = check.options(dim, fn, { dim = "integer", axis = "integer" })
      return o.dim or o.axis
    end
    return dim
  end
  function Tensor.logcumsumexp(t, dim)
    check.tensor(t, "logcumsumexp", "self")
    dim = dim_of("logcumsumexp", dim)
    if not t:is_floating_point() then t = t:to(wick.get_default_dtype()) end
    if t:dim() == 0 then return t:clone() end
    local d = wrap_dim(t, dim, "logcumsumexp")
    if t:numel() == 0 then return t:clone() end
    return scan({ t }, d, function(prev, cur) return prev[1]:logaddexp(cur[1]) end)[1]
  end

  --- t:cummax(dim), t:cummin(dim): the running maximum (minimum) and its 1-based
  --- index, as PyTorch's: a later equal value takes over, NaN wins and stays
  local function cumextreme(name, beats)
    return function(t, dim)
      check.tensor(t, name, "self")
      dim = dim_of(name, dim)
      if t:dim() == 0 then return t:clone(), wick.ones({}, { dtype = "int64", device = t.device }) end
      local d = wrap_dim(t, dim, name)
      if t:numel() == 0 then return t:clone(), wick.zeros(t.shape, { dtype = "int64", device = t.device }) end
      local n = t:size(d)
      local shape = {}
      for i = 1, t:dim() do shape[i] = i == d and n or 1 end
      local idx = wick.arange(1, n + 1, { dtype = "int64", device = t.device }):view(shape):expand(t.shape):contiguous()
      local r = scan({ t, idx }, d, function(prev, cur)
        local pv, cv = prev[1], cur[1]
        local take_prev = beats(pv, cv)
        if pv:is_floating_point() then take_prev = take_prev:logical_or(pv:isnan():logical_and(cv:isnan():logical_not())) end
        return wick.where(take_prev, pv, cv), wick.where(take_prev, prev[2], cur[2])
      end)
      return r[1], r[2]
    end
  end
  Tensor.cummax = cumextreme("cummax", function(a, b) return a:gt(b) end)
  Tensor.cummin = cumextreme("cummin", function(a, b) return a:lt(b) end)

  -- ---- the module-level names ----
  for _, name in ipairs({ "tril", "triu", "split", "split_with_sizes", "chunk", "unbind", "sort", "argsort", "topk", "msort", "cumsum",
    "tensor_split", "hsplit", "vsplit", "dsplit", "cumprod", "clamp", "clamp_min", "clamp_max", "clip", "flip", "fliplr", "flipud", "roll", "amax", "amin", "aminmax",
    "logsumexp", "nonzero", "argwhere", "repeat_interleave", "tile", "diag", "outer", "ger", "dot", "inner", "mv",
    "lerp", "addcmul", "addcdiv", "logical_not", "logical_and", "logical_or", "logical_xor", "count_nonzero",
    "hypot", "nan_to_num", "diff", "trace", "movedim", "moveaxis", "take", "index_add", "scatter_add", "median", "nanmedian",
    "scatter", "scatter_reduce", "index_reduce",
    "kthvalue", "unique", "unique_consecutive", "quantile", "nanquantile", "var_mean", "std_mean", "floor_divide", "fmax", "fmin", "nanmean", "baddbmm", "vdot", "rot90",
    "square", "dist", "all", "any", "histc", "atanh", "asinh", "acosh", "logaddexp", "logaddexp2", "nansum", "diagonal", "isclose", "ravel", "swapaxes", "swapdims", "logit", "xlogy",
    "rad2deg", "deg2rad", "exp2", "float_power", "true_divide", "addmv", "addr", "kron", "cross", "matrix_power",
    "addbmm", "logcumsumexp", "cummax", "cummin", "diag_embed", "diagflat" }) do
    -- the method as it is when called (init.lua wraps some for PyTorch's keywords later);
    -- torch.quantile(input=x, q=q): the tensor by PyTorch's name too
    wick[name] = check.by_name(function(t, ...) return Tensor[name](t, ...) end, name, { "input" })
  end
  for _, name in ipairs({ "where", "randint", "randint_like", "randperm", "multinomial", "einsum", "bernoulli", "normal", "bincount",
    "linspace", "logspace", "meshgrid", "cdist", "tril_indices", "triu_indices", "broadcast_tensors", "broadcast_shapes", "tensordot",
    "searchsorted", "bucketize", "block_diag", "segment_reduce", "cartesian_prod", "histogram", "hstack", "vstack", "row_stack",
    "dstack", "column_stack", "chain_matmul", "hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window",
    "isin" }) do
    wick[name] = ops[name]
  end
  wick.concatenate, wick.concat = wick.cat, wick.cat -- PyTorch's aliases of torch.cat
  wick._segment_reduce = ops.segment_reduce -- (PyTorch's private name, which PyG calls)
  for _, name in ipairs({ "true_divide", "floor_divide", "xlogy" }) do -- (a number first, as wick.div takes it)
    wick[name] = wick._number_first(wick[name])
  end

  -- ---- PyTorch's other names (NumPy's) and the small ops written with others ----

  --- t:renorm(p, dim, maxnorm): each slice along dim whose p-norm exceeds maxnorm scaled to norm maxnorm
  --- (by maxnorm / (norm + 1e-7), PyTorch's), the others as they are; the scale is differentiated too
  function Tensor.renorm(t, p, dim, maxnorm)
    check.tensor(t, "renorm", "self")
    check.number(p, "renorm", "p")
    check.int(dim, "renorm", "dim")
    check.number(maxnorm, "renorm", "maxnorm")
    if t:dim() < 2 then check.fail("renorm", "input needs at least 2 dimensions, got %d dimensions", t:dim()) end
    if not t:is_floating_point() then check.fail("renorm", "expected a floating point tensor as input, got %s", t.dtype) end
    if not (p > 0) then check.fail("renorm", "non-positive-norm not supported") end
    if not (maxnorm >= 0) then check.fail("renorm", "expected maxnorm to be >= 0 but got %s", tostring(maxnorm)) end
    local d = dim < 0 and dim + t:dim() + 1 or dim
    if d < 1 or d > t:dim() then check.fail("renorm", "dim %d is out of range for %d dims", dim, t:dim()) end
    local others = {}
    for i = 1, t:dim() do if i ~= d then others[#others + 1] = i end end
    local norms = wick.linalg.vector_norm(t, p, others, true)
    return t * wick.where(norms:gt(maxnorm), maxnorm / (norms + 1e-7), 1)
  end
  wick.renorm = Tensor.renorm
  -- the in-place forms the core lacks (DAB-DETR's dim_tx //= 2, floor_divide_)
  for _, name in ipairs({ "acosh", "asinh", "atanh", "copysign", "deg2rad", "rad2deg", "exp2", "floor_divide",
    "true_divide", "heaviside", "hypot", "i0", "ldexp", "logit", "mvlgamma", "nextafter", "sgn", "sinc", "xlogy",
    "renorm" }) do
    if Tensor[name .. "_"] == nil then -- (the method looked up at the call: some are defined later)
      Tensor[name .. "_"] = in_place_form(name, function(t, ...) return Tensor[name](t, ...) end)
    end
  end
  -- float_power_ writes float64 (or complex128), so its self must be one (PyTorch's rule)
  local float_power_ = in_place_form("float_power", function(t, ...) return Tensor.float_power(t, ...) end)
  function Tensor.float_power_(t, ...)
    check.tensor(t, "float_power_", "self")
    if t.dtype ~= "float64" and t.dtype ~= "complex128" then
      check.fail("float_power_", "the base given to float_power_ has dtype %s but the operation's result requires dtype float64", t.dtype)
    end
    return float_power_(t, ...)
  end
  Tensor.swapaxes_, Tensor.swapdims_ = Tensor.transpose_, Tensor.transpose_
  -- torch.arccos is torch.acos, ...: each alias, with its in-place form, as a method and a function
  local ALIASES = { arccos = "acos", arcsin = "asin", arctan = "atan", arctan2 = "atan2", arccosh = "acosh",
    arcsinh = "asinh", arctanh = "atanh", absolute = "abs", multiply = "mul", subtract = "sub", greater = "gt",
    less = "lt", greater_equal = "ge", less_equal = "le", not_equal = "ne", fix = "trunc", negative = "neg",
    broadcast_to = "expand" }
  for alias, name in pairs(ALIASES) do
    for _, suffix in ipairs({ "", "_" }) do
      local target = Tensor[name .. suffix]
      if target ~= nil then
        Tensor[alias .. suffix] = target
        wick[alias .. suffix] = rawget(wick, name .. suffix) or function(t, ...) return target(t, ...) end
      end
    end
  end
  Tensor.ndimension = Tensor.dim -- (PyTorch's old name of dim())
  -- t:squeeze({1, 3}): PyTorch 2's tuple of dims, each squeezed where its size is 1
  for _, name in ipairs({ "squeeze", "squeeze_" }) do
    local one = Tensor[name]
    Tensor[name] = function(t, dims, ...)
      if type(dims) == "table" and getmetatable(dims) == nil and type(dims.dim) == "table" then
        for k in pairs(dims) do if k ~= "dim" then check.fail(name, "unknown option '%s'", tostring(k)) end end
        dims = dims.dim -- (t:squeeze(dim=(2, 4)))
      end
      if type(dims) == "table" and getmetatable(dims) == nil and dims[1] ~= nil then
        check.tensor(t, name, "self")
        local n, seen, list = math.max(t:dim(), 1), {}, {}
        for i, d in ipairs(dims) do
          check.int(d, name, ("dim[%d]"):format(i))
          local p = d < 0 and d + n + 1 or d
          if p < 1 or p > n then
            check.fail(name, "Dimension out of range (expected to be in range of [%d, %d], but got %d)", -n, n, d)
          end
          if seen[p] then check.fail(name, "dim %d appears multiple times in the list of dims", d) end
          seen[p], list[#list + 1] = true, p
        end
        table.sort(list, function(a, b) return a > b end)
        local r = t
        for _, p in ipairs(list) do
          if t:dim() > 0 and r:size(p) == 1 then r = one(r, p) end
        end
        return r
      end
      return one(t, dims, ...)
    end
  end
  wick.squeeze = function(t, ...) return Tensor.squeeze(t, ...) end
  --- wick.unflatten(t, dim, sizes) (t:unflatten's function form), t:narrow_copy(dim, start, length) (narrow, copied)
  wick.unflatten = function(t, ...) return check.tensor(t, "unflatten", "input"):unflatten(...) end
  function Tensor.narrow_copy(t, ...) return check.tensor(t, "narrow_copy", "self"):narrow(...):clone() end
  wick.narrow_copy = Tensor.narrow_copy
  --- wick.can_cast(from, to): PyTorch's casting rule (no float to integer, no complex to real, nothing to bool)
  local function kind(dtype) -- bool < integers < floating < complex
    local info = wick._dtype_info[dtype]
    return dtype == "bool" and 0 or info.is_complex and 3 or info.is_floating and 2 or 1
  end
  function wick.can_cast(from, to)
    check.one_of(from, "can_cast", "from_", wick.dtypes)
    check.one_of(to, "can_cast", "to", wick.dtypes)
    return kind(from) <= kind(to)
  end
  --- t:round([decimals = 0]) (or {decimals =}): round(t * 10^d) / 10^d, as PyTorch's, halves to even
  for _, name in ipairs({ "round", "round_" }) do
    local plain = Tensor[name]
    Tensor[name] = function(t, decimals)
      if type(decimals) == "table" then decimals = check.options(decimals, name, { decimals = "integer" }).decimals end
      decimals = check.opt_int(decimals, name, "decimals", 0)
      if decimals == 0 then return plain(t) end
      check.tensor(t, name, "self")
      -- (PyTorch's kernel: a negative decimals divides first; float16 and bfloat16 computed in float32,
      -- rounded once, so 65000 in float16 does not overflow at 10^2 times it)
      local x = (t.dtype == "float16" or t.dtype == "bfloat16") and t:float() or t
      local r
      if decimals > 0 then r = (x * 10 ^ decimals):round() / 10 ^ decimals
      else r = (x / 10 ^ -decimals):round() * 10 ^ -decimals end
      r = r:to(t.dtype)
      if name == "round_" then return t:copy_(r) end
      return r
    end
  end
  wick.round = function(t, ...) return Tensor.round(t, ...) end
  wick.round_ = function(t, ...) return Tensor.round_(t, ...) end
  --- t:apply_(fn), t:map_(other, fn): fn over each element (and other's) in place, on the CPU (PyTorch's
  --- Python-callable forms; pytorch-ntm's apply_(lambda x: 0 if x < 0.5 else 1))
  function Tensor.apply_(t, fn)
    check.tensor(t, "apply_", "self")
    check.callable(fn, "apply_", "callable")
    if t.device.type ~= "cpu" then check.fail("apply_", "apply_ is only implemented on CPU tensors") end
    local flat = t:reshape(-1):totable()
    for i = 1, #flat do flat[i] = fn(flat[i]) end
    return t:copy_(wick.tensor(flat, { dtype = t.dtype }):reshape(t:size()))
  end
  function Tensor.map_(t, other, fn)
    check.tensor(t, "map_", "self")
    check.tensor(other, "map_", "tensor")
    check.callable(fn, "map_", "callable")
    if t.device.type ~= "cpu" or other.device.type ~= "cpu" then check.fail("map_", "map_ is only implemented on CPU tensors") end
    local a, b = t:reshape(-1):totable(), other:expand(t:size()):reshape(-1):totable()
    for i = 1, #a do a[i] = fn(a[i], b[i]) end
    return t:copy_(wick.tensor(a, { dtype = t.dtype }):reshape(t:size()))
  end
  --- wick.unravel_index(indices, shape): the 1-based coordinates of 1-based flat indices (several values, PyTorch's tuple)
  function ops.unravel_index(indices, shape)
    if type(indices) == "number" then indices = wick.tensor(indices, { dtype = "int64" }) end
    check.tensor(indices, "unravel_index", "indices")
    if indices:is_floating_point() or indices:is_complex() then
      check.fail("unravel_index", "expected 'indices' to be integer dtype, but got %s", indices.dtype)
    end
    if type(shape) == "number" then shape = { shape } end
    check.table(shape, "unravel_index", "shape")
    local total = 1
    for i = 1, #shape do total = total * check.int(shape[i], "unravel_index", "shape", 0) end
    if (indices:lt(1):any()) or (indices:gt(total):any()) then
      check.fail("unravel_index", "index out of bounds for the shape (indices are 1-based, 1 to %d)", total)
    end
    local rest, out = indices - 1, {}
    for d = #shape, 1, -1 do
      out[d] = rest:remainder(shape[d]) + 1
      rest = rest:floor_divide(shape[d])
    end
    return unpack(out, 1, #shape)
  end
  wick.unravel_index = ops.unravel_index
  --- t:positive(): t itself (PyTorch's torch.positive; refused for bool)
  function Tensor.positive(t)
    check.tensor(t, "positive", "self")
    if t.dtype == "bool" then check.fail("positive", "The `+` operator, on a bool tensor is not supported.") end
    return t
  end
  --- wick.rsub(input, other[, {alpha = 1}]): other - alpha input
  function Tensor.rsub(t, other, opts)
    check.tensor(t, "rsub", "self")
    opts = check.options(opts, "rsub", { alpha = "number" })
    local alpha = opts.alpha or 1
    return other - (alpha == 1 and t or t * alpha)
  end
  wick.rsub = function(t, ...) return Tensor.rsub(t, ...) end
  --- t:is_same_size(other): the same shape
  function Tensor.is_same_size(t, other)
    check.tensor(t, "is_same_size", "self")
    check.tensor(other, "is_same_size", "other")
    if t:dim() ~= other:dim() then return false end
    for i = 1, t:dim() do
      if t:size(i) ~= other:size(i) then return false end
    end
    return true
  end
  --- t:is_nonzero(): the one element's truth (an error for no element or several, as PyTorch's)
  function Tensor.is_nonzero(t)
    check.tensor(t, "is_nonzero", "self")
    if t:numel() == 0 then check.fail("is_nonzero", "Boolean value of Tensor with no values is ambiguous") end
    if t:numel() > 1 then check.fail("is_nonzero", "Boolean value of Tensor with more than one value is ambiguous") end
    if t:is_complex() then return t:abs():item() ~= 0 end
    local v = t:item()
    return v ~= 0 and v ~= false
  end
  --- t:adjoint(): the last two dims swapped, conjugated when complex
  function Tensor.adjoint(t)
    check.tensor(t, "adjoint", "self")
    if t:dim() < 2 then check.fail("adjoint", "tensor.adjoint() is only supported on matrices or batches of matrices. Got 1-D tensor.") end
    local a = t:transpose(-2, -1)
    return t:is_complex() and a:conj() or a
  end
  --- wick.atleast_1d(t, ...) / atleast_2d / atleast_3d: views with at least that many dims (several
  --- tensors, or one array of them, give as many results)
  local function atleast(name, n, shape_of)
    return function(...)
      local ts = { ... }
      local array = #ts == 1 and type(ts[1]) == "table" and not is_tensor(ts[1])
      if array then ts = ts[1] end
      local out = {}
      for i, t in ipairs(ts) do
        check.tensor(t, name, ("tensors[%d]"):format(i))
        out[i] = t:dim() >= n and t or t:reshape(shape_of(t))
      end
      if array then return out end
      return unpack(out, 1, #ts)
    end
  end
  wick.atleast_1d = atleast("atleast_1d", 1, function() return { 1 } end)
  wick.atleast_2d = atleast("atleast_2d", 2, function(t) return t:dim() == 0 and { 1, 1 } or { 1, t:size(1) } end)
  wick.atleast_3d = atleast("atleast_3d", 3, function(t)
    if t:dim() == 0 then return { 1, 1, 1 } end
    if t:dim() == 1 then return { 1, t:size(1), 1 } end
    return { t:size(1), t:size(2), 1 }
  end)
  Tensor.atleast_1d, Tensor.atleast_2d, Tensor.atleast_3d = wick.atleast_1d, wick.atleast_2d, wick.atleast_3d
  --- wick.combinations(t[, r = 2[, with_replacement = false]]) (or {r =, with_replacement =}): the
  --- r-element combinations of a 1-D tensor's elements in order, [n, r] (itertools.combinations)
  function ops.combinations(t, r, with_replacement)
    check.tensor(t, "combinations", "input")
    local COMB = { r = "integer", with_replacement = "boolean" }
    if type(r) == "table" then
      local o = check.options(r, "combinations", COMB)
      r, with_replacement = o.r, o.with_replacement
    elseif type(with_replacement) == "table" then -- (combinations(x, 2, with_replacement=True))
      with_replacement = check.options(with_replacement, "combinations", { with_replacement = "boolean" }).with_replacement
    end
    r = check.opt_int(r, "combinations", "r", 2, 0)
    with_replacement = check.opt_boolean(with_replacement, "combinations", "with_replacement", false)
    if t:dim() ~= 1 then
      check.fail("combinations", "Expect a 1D vector, but got shape [%s]", table.concat(t:size(), ", "))
    end
    local n = t:size(1)
    if r == 0 then return wick.empty(0, { dtype = t.dtype, device = t.device }) end
    local columns, pick = {}, {}
    for j = 1, r do columns[j] = {} end
    local function walk(j, from)
      if j > r then
        for k = 1, r do columns[k][#columns[k] + 1] = pick[k] end
        return
      end
      for i = from, n do
        pick[j] = i
        walk(j + 1, with_replacement and i or i + 1)
      end
    end
    walk(1, 1)
    if #columns[1] == 0 then return wick.empty(0, r, { dtype = t.dtype, device = t.device }) end
    local cols = {}
    for k = 1, r do
      cols[k] = t:index_select(1, wick.tensor(columns[k], { dtype = "int64", device = t.device }))
    end
    return wick.stack(cols, 2)
  end
  wick.combinations = ops.combinations
  --- wick.gcd(a, b), wick.lcm(a, b): elementwise, for integer tensors (non-negative results)
  local function integers(name, a, b)
    check.tensor(a, name, "self")
    if type(b) == "number" then b = wick.full({}, b, { dtype = a.dtype, device = a.device }) end
    check.tensor(b, name, "other")
    if a:is_floating_point() or b:is_floating_point() or a:is_complex() or b:is_complex() then
      check.fail(name, "\"%s_cpu\" not implemented for '%s'", name, a:is_floating_point() and a.dtype or b.dtype)
    end
    return wick.broadcast_tensors(a:abs(), b:abs())
  end
  function Tensor.gcd(a, b)
    local x, y = integers("gcd", a, b)
    x, y = x:clone(), y:clone()
    while y:ne(0):any() do
      local nz = y:ne(0)
      local r = x:remainder(wick.where(nz, y, 1))
      x, y = wick.where(nz, y, x), wick.where(nz, r, 0)
    end
    return x
  end
  function Tensor.lcm(a, b)
    local x, y = integers("lcm", a, b)
    local g = x:gcd(y)
    return wick.where(g:eq(0), 0, x:floor_divide(wick.where(g:eq(0), 1, g)) * y)
  end
  function Tensor.gcd_(a, b) check.tensor(a, "gcd_", "self"); return a:copy_(Tensor.gcd(a, b)) end
  function Tensor.lcm_(a, b) check.tensor(a, "lcm_", "self"); return a:copy_(Tensor.lcm(a, b)) end
  wick.gcd = function(a, b) return Tensor.gcd(a, b) end
  wick.lcm = function(a, b) return Tensor.lcm(a, b) end
  --- wick.trapezoid(y[, x][, {dx = 1, dim = -1}]) (also trapz), wick.cumulative_trapezoid: the trapezoid
  --- rule along dim, with sample points x (a tensor) or spacing dx
  local function trapezoid_terms(name, y, x, opts)
    check.tensor(y, name, "y")
    if type(x) == "table" and not is_tensor(x) then x, opts = nil, x end
    if type(x) == "number" then x, opts = nil, { dx = x, dim = opts } end
    opts = check.options(opts, name, { x = "tensor", dx = "number", dim = "integer" })
    if opts.x ~= nil then
      if x ~= nil then check.fail(name, "argument 'x' given both by position and as an option") end
      x = opts.x
    end
    if x ~= nil and opts.dx ~= nil then check.fail(name, "takes either x or dx, not both") end
    local dim = opts.dim or -1
    if not y:is_floating_point() and not y:is_complex() then y = y:to(wick.get_default_dtype()) end
    local n = y:size(dim)
    if n == 0 then return nil, dim, y end
    local left, right = y:narrow(dim, 1, n - 1), y:narrow(dim, 2, n - 1)
    local mid = (left + right) / 2
    if x ~= nil then
      check.tensor(x, name, "x")
      local dx = x:diff({ dim = x:dim() == 1 and 1 or dim })
      if x:dim() == 1 then
        local shape = {}
        for i = 1, y:dim() do shape[i] = 1 end
        shape[dim < 0 and y:dim() + dim + 1 or dim] = n - 1
        dx = dx:reshape(shape)
      end
      return mid * dx, dim, y
    end
    return mid * (opts.dx or 1), dim, y
  end
  function ops.trapezoid(y, x, opts)
    local terms, dim, yy = trapezoid_terms("trapezoid", y, x, opts)
    if terms == nil then return yy:sum(dim) end
    return terms:sum(dim)
  end
  function ops.cumulative_trapezoid(y, x, opts)
    local terms, dim, yy = trapezoid_terms("cumulative_trapezoid", y, x, opts)
    if terms == nil then return yy:narrow(dim, 1, 0) end
    return terms:cumsum(dim)
  end
  -- (PyTorch's keyword for the first argument: wick.trapezoid{y = y, x = xs})
  ops.trapezoid = check.by_name(ops.trapezoid, "trapezoid", { "y" })
  ops.cumulative_trapezoid = check.by_name(ops.cumulative_trapezoid, "cumulative_trapezoid", { "y" })
  wick.trapezoid, wick.trapz, wick.cumulative_trapezoid = ops.trapezoid, ops.trapezoid, ops.cumulative_trapezoid
  --- wick.vander(x[, N[, increasing = false]]): the Vandermonde matrix of a 1-D x, columns x^(N-1) ... x^0
  function ops.vander(x, N, increasing)
    check.tensor(x, "vander", "x")
    if type(N) == "table" then N, increasing = N.N, N.increasing end
    if x:dim() ~= 1 then check.fail("vander", "x must be a one-dimensional tensor.") end
    N = check.opt_int(N, "vander", "N", x:size(1), 0)
    local powers = wick.arange(0, N, { dtype = x:is_floating_point() and x.dtype or "int64", device = x.device })
    if not increasing then powers = powers:flip(1) end
    return x:unsqueeze(2):pow(powers:unsqueeze(1)) -- (pow, not ^: Lua's ^ of two integer tensors is refused)
  end
  wick.vander = ops.vander
  --- wick.ldexp(x, e): x * 2^e
  function Tensor.ldexp(x, e)
    check.tensor(x, "ldexp", "self")
    local two = wick.full({}, 2, { dtype = x:is_floating_point() and x.dtype or wick.get_default_dtype(), device = x.device })
    return x * two ^ e
  end
  wick.ldexp = function(x, e) return Tensor.ldexp(x, e) end
  --- wick.diagonal_scatter(input, src[, offset = 0[, dim1 = 1[, dim2 = 2]]]), wick.select_scatter(input,
  --- src, dim, index) (or by PyTorch's names: {input =, src =, offset =, dim1 =, dim2 =, dim =, index =}):
  --- a copy of input with src (of the diagonal's / slice's shape) written into that diagonal / slice
  local function same_shape(fn, src, slice)
    local a, b = src:size(), slice:size()
    local same = #a == #b
    for i = 1, #a do same = same and a[i] == b[i] end
    if not same then
      check.fail(fn, "expected src to have a size equal to the slice of self. src size = [%s], slice size = [%s]",
        table.concat(a, ", "), table.concat(b, ", "))
    end
  end
  local DIAGONAL_SCATTER = { offset = "integer", dim1 = "integer", dim2 = "integer" }
  local function diagonal_scatter(t, src, offset, dim1, dim2)
    local fn = "diagonal_scatter"
    check.tensor(t, fn, "input")
    check.tensor(src, fn, "src")
    if type(offset) == "table" and not is_tensor(offset) then
      if dim1 ~= nil or dim2 ~= nil then check.fail(fn, "either an options table or positional arguments, not both") end
      local o = check.options(offset, fn, DIAGONAL_SCATTER)
      offset, dim1, dim2 = o.offset, o.dim1, o.dim2
    end
    offset = check.opt_int(offset, fn, "offset", 0)
    dim1, dim2 = check.opt_int(dim1, fn, "dim1", 1), check.opt_int(dim2, fn, "dim2", 2)
    if t:dim() < 2 then check.fail(fn, "expected a tensor of at least 2 dims, got %d", t:dim()) end
    local d1, d2 = wrap_dim(t, dim1, fn), wrap_dim(t, dim2, fn)
    if d1 == d2 then check.fail(fn, "diagonal dimensions cannot be identical %d, %d", dim1, dim2) end
    -- the two dims last in a contiguous copy, whose diagonal is a view (t:diagonal of dims that are
    -- not adjacent is a copy, which a write would not reach), then back in their places
    local y = t:movedim({ d1, d2 }, { -2, -1 }):clone():contiguous()
    local diag = y:diagonal(offset, -2, -1)
    same_shape(fn, src, diag)
    diag:copy_(src)
    return y:movedim({ -2, -1 }, { d1, d2 }):contiguous()
  end
  local function select_scatter(t, src, dim, index)
    local fn = "select_scatter"
    check.tensor(t, fn, "input")
    check.tensor(src, fn, "src")
    if dim == nil then check.fail(fn, "missing required argument 'dim'") end
    if index == nil then check.fail(fn, "missing required argument 'index'") end
    index = check.opt_int(index, fn, "index")
    if t:dim() == 0 then check.fail(fn, "cannot select from a 0-dim tensor") end
    local d = wrap_dim(t, check.int(dim, fn, "dim"), fn)
    local n = t:size(d)
    if index == 0 then check.fail(fn, "index 0 is invalid: indices count from 1 (and from -1 backwards)") end
    if index > n or index < -n then
      check.fail(fn, "index %d out of range for tensor of size [%s] at dimension %d", index, table.concat(t:size(), ", "), d)
    end
    local out = t:clone()
    local slice = out:select(d, index)
    same_shape(fn, src, slice)
    slice:copy_(src)
    return out
  end
  ops.diagonal_scatter = check.by_name(diagonal_scatter, "diagonal_scatter",
    { "input", "src", "offset?", "dim1?", "dim2?" })
  ops.select_scatter = check.by_name(select_scatter, "select_scatter", { "input", "src", "dim", "index" })
  wick.diagonal_scatter, wick.select_scatter = ops.diagonal_scatter, ops.select_scatter
  Tensor.diagonal_scatter, Tensor.select_scatter = ops.diagonal_scatter, ops.select_scatter
  -- torch.dropout(input, p, train) and the distance functions at the top level: nn.functional's
  wick.dropout = function(x, p, train) return wick.nn.functional.dropout(x, p, train) end
  wick.alpha_dropout = function(x, p, train) return wick.nn.functional.alpha_dropout(x, p, train) end
  wick.feature_alpha_dropout = function(x, p, train) return wick.nn.functional.feature_alpha_dropout(x, p, train) end
  wick.cosine_similarity = function(...) return wick.nn.functional.cosine_similarity(...) end
  wick.pairwise_distance = function(...) return wick.nn.functional.pairwise_distance(...) end
  wick.pairwise_distance = function(...) return wick.nn.functional.pairwise_distance(...) end
  -- torch.conv2d, torch.layer_norm, torch.pixel_shuffle, ...: nn.functional's ops by their torch.* names,
  -- the same arguments (torch.layer_norm's and torch.group_norm's trailing cudnn flag dropped)
  local function functional() return wick.nn.functional end
  for _, name in ipairs({ "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "avg_pool1d", "adaptive_avg_pool1d",
    "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "prelu", "selu", "celu", "threshold", "rrelu", "hardshrink",
    "bilinear", "rms_norm", "selu_", "celu_", "rrelu_", "threshold_" }) do
    if rawget(wick, name) == nil then wick[name] = function(...) return functional()[name](...) end end
  end
  wick.native_channel_shuffle = wick.channel_shuffle
  function wick.layer_norm(x, shape, weight, bias, eps) return functional().layer_norm(x, shape, weight, bias, eps) end
  function wick.group_norm(x, groups, weight, bias, eps) return functional().group_norm(x, groups, weight, bias, eps) end
  --- wick.batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps) and
  --- wick.instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps):
  --- torch.batch_norm's order (weight and bias first), F's ops
  function wick.batch_norm(x, weight, bias, mean, var, training, momentum, eps)
    return functional().batch_norm(x, mean, var, weight, bias, training, momentum, eps)
  end
  function wick.instance_norm(x, weight, bias, mean, var, use_input_stats, momentum, eps)
    return functional().instance_norm(x, mean, var, weight, bias, use_input_stats, momentum, eps)
  end
  --- wick.adaptive_max_pool1d(input, output_size): values and indices, as torch's
  function wick.adaptive_max_pool1d(x, size) return functional().adaptive_max_pool1d(x, size, true) end
  --- wick.constant_pad_nd(input, pad[, value = 0]): F.pad's constant mode
  function wick.constant_pad_nd(x, pad, value) return functional().pad(x, pad, "constant", value or 0) end

  -- ---- small PyTorch names ----
  --- wick.positive(t): t itself (a bool tensor refused, as PyTorch's unary +)
  function wick.positive(t)
    check.tensor(t, "positive", "input")
    if t.dtype == "bool" then check.fail("positive", "The `+` operator, on a bool tensor is not supported.") end
    return t
  end
  Tensor.positive = wick.positive
  --- wick.fill(t, value): a new tensor of t's shape and dtype filled with value
  function wick.fill(t, value) return wick.full_like(check.tensor(t, "fill", "input"), value) end
  wick.adjoint = Tensor.adjoint
  --- t:isreal(): true where the imaginary part is 0 (everywhere for a real tensor)
  function Tensor.isreal(t)
    check.tensor(t, "isreal", "self")
    if t:is_complex() then return t.imag:eq(0) end
    return wick.ones(t:size(), { dtype = "bool", device = t.device })
  end
  -- (wick has no inference tensors and no negative bit)
  function Tensor.is_inference(t) check.tensor(t, "is_inference", "self"); return false end
  function Tensor.is_neg(t) check.tensor(t, "is_neg", "self"); return false end
  wick.isreal, wick.is_inference, wick.is_neg = Tensor.isreal, Tensor.is_inference, Tensor.is_neg
  function wick.get_device(t) return check.tensor(t, "get_device", "input"):get_device() end
  -- methods of PyTorch's that are wick functions
  function Tensor.stft(t, ...) return wick.stft(t, ...) end
  function Tensor.istft(t, ...) return wick.istft(t, ...) end
  function Tensor.histogram(t, ...) return wick.histogram(t, ...) end
  function Tensor.hardshrink(t, ...) return functional().hardshrink(t, ...) end
  function Tensor.prelu(t, w) return functional().prelu(t, w) end
  function Tensor.igamma_(t, x) return check.tensor(t, "igamma_", "self"):copy_(wick.igamma(t, x)) end
  function Tensor.igammac_(t, x) return check.tensor(t, "igammac_", "self"):copy_(wick.igammac(t, x)) end
  -- PyTorch's unsafe_ forms (no version check of the views): the plain ones
  Tensor.unsafe_chunk, Tensor.unsafe_split, Tensor.unsafe_split_with_sizes = Tensor.chunk, Tensor.split, Tensor.split
  wick.unsafe_chunk = function(t, ...) return Tensor.chunk(t, ...) end
  wick.unsafe_split = function(t, ...) return Tensor.split(t, ...) end
  wick.unsafe_split_with_sizes = wick.unsafe_split

  --- wick.range(start, end[, step = 1][, opts]): PyTorch's deprecated range, end included, in the
  --- default dtype, with its warning
  local RANGE_WARNED = false
  function wick.range(start, stop, step, opts)
    if type(step) == "table" and opts == nil then step, opts = nil, step end
    check.number(start, "range", "start")
    check.number(stop, "range", "end")
    step = check.opt_number(step, "range", "step", 1)
    if step == 0 or step ~= step then check.fail("range", "step must be nonzero") end
    if (stop - start) / step < 0 then check.fail("range", "upper bound and larger bound inconsistent with step sign") end
    if not RANGE_WARNED then
      RANGE_WARNED = true
      wick.warn("torch.range is deprecated and will be removed in a future release because its behavior is inconsistent "
        .. "with Python's range builtin. Instead, use torch.arange, which produces values in [start, end).")
    end
    local o = check.options(opts, "range", { dtype = "dtype", device = "device", requires_grad = "boolean" })
    local n = math.floor((stop - start) / step) + 1
    local r = wick.arange(n, { dtype = "float64", device = o.device }) * step + start
    r = r:to(o.dtype or wick.get_default_dtype())
    if o.requires_grad then r:requires_grad_(true) end
    return r
  end

  --- wick.empty_strided(size, stride[, opts]), t:new_empty_strided(size, stride[, opts]): an uninitialised
  --- tensor of that layout, over a storage just large enough
  local function empty_strided(fn, size, stride, opts, like)
    if getmetatable(size) == wick.Size then size = size:totable() end
    if getmetatable(stride) == wick.Size then stride = stride:totable() end
    check.table(size, fn, "size")
    check.table(stride, fn, "stride")
    if #size ~= #stride then
      check.fail(fn, "mismatch in length of strides and shape: %d and %d", #stride, #size)
    end
    local extent = 1
    for i = 1, #size do
      check.int(size[i], fn, "size", 0)
      check.int(stride[i], fn, "stride", 0)
      if size[i] == 0 then extent = 0 end
    end
    if extent > 0 then
      for i = 1, #size do extent = extent + (size[i] - 1) * stride[i] end
    end
    local o = check.options(opts, fn, { dtype = "dtype", device = "device", requires_grad = "boolean", pin_memory = "boolean",
      layout = "any" })
    local base = wick.empty({ extent }, { dtype = o.dtype or (like and like.dtype), device = o.device or (like and like.device) })
    local r = base:as_strided(size, stride)
    if o.requires_grad then r:requires_grad_(true) end
    return r
  end
  function wick.empty_strided(size, stride, opts) return empty_strided("empty_strided", size, stride, opts) end
  function Tensor.new_empty_strided(t, size, stride, opts)
    return empty_strided("new_empty_strided", size, stride, opts, check.tensor(t, "new_empty_strided", "self"))
  end

  --- t:frexp() / wick.frexp(t): the mantissa (in [0.5, 1) by magnitude, t's sign and dtype) and the
  --- int32 exponent with t = mantissa 2^exponent; 0, infinities and NaN give themselves and 0
  function Tensor.frexp(t)
    check.tensor(t, "frexp", "self")
    if not t:is_floating_point() then check.fail("frexp", "torch.frexp() only supports floating-point dtypes") end
    local x = t:to("float64")
    local a = x:abs()
    local normal = a:gt(0):logical_and(a:lt(math.huge))
    local safe = wick.where(normal, a, 1)
    local e = safe:log2():floor() + 1
    -- (the scaling in two halves: 2^-e alone overflows for a subnormal's e near -1074)
    local function scaled(v, by)
      local half = (by / 2):floor()
      return v * (-half):exp2() * (half - by):exp2()
    end
    local m = scaled(safe, e)
    -- (log2's rounding near a power of two: move the mantissa into [0.5, 1))
    local big, small = m:ge(1), m:lt(0.5)
    e = e + big:to("float64") - small:to("float64")
    m = wick.where(big, m / 2, wick.where(small, m * 2, m))
    m = wick.where(normal, m * x:sign(), x)
    return m:to(t.dtype), wick.where(normal, e, 0):to("int32")
  end
  wick.frexp = Tensor.frexp

  --- t:nonzero_static({size =, fill_value = -1}) (or size[, fill_value]): nonzero's rows, exactly size
  --- of them: cut, or filled with fill_value
  function Tensor.nonzero_static(t, size, fill_value)
    check.tensor(t, "nonzero_static", "input")
    if type(size) == "table" and getmetatable(size) == nil then
      local o = check.options(size, "nonzero_static", { size = "integer", fill_value = "integer" })
      size, fill_value = o.size, o.fill_value
    end
    check.int(size, "nonzero_static", "size", 0)
    fill_value = check.opt_int(fill_value, "nonzero_static", "fill_value", -1)
    local nz = t:nonzero()
    local n = nz:size(1)
    if n >= size then return nz:narrow(1, 1, size) end
    local pad = wick.full({ size - n, nz:size(2) }, fill_value, { dtype = "int64", device = t.device })
    return wick.cat({ nz, pad }, 1)
  end
  wick.nonzero_static = function(t, opts) return Tensor.nonzero_static(t, opts) end

  --- t:put_(index, source[, accumulate = false]): source's values written (or added) at index's
  --- 1-based positions in t read as flat (negative from the end); t:put the same on a copy
  local function put_values(fn, t, index, source, accumulate)
    check.tensor(t, fn, "self")
    check.tensor(index, fn, "index")
    check.tensor(source, fn, "source")
    if index:is_floating_point() or index.dtype == "bool" then
      check.fail(fn, "put_(): Expected a long tensor for index, but got %s", index.dtype)
    end
    if index:numel() ~= source:numel() then
      check.fail(fn, "index and source need to have the same number of elements, but got %d and %d elements",
        index:numel(), source:numel())
    end
    if type(accumulate) == "table" then
      accumulate = check.options(accumulate, fn, { accumulate = "boolean" }).accumulate
    end
    local n, flat = t:numel(), index:reshape(-1):to("int64")
    if flat:numel() > 0 then
      local lo, hi = flat:min():item(), flat:max():item()
      local bad = (lo < -n or lo == 0) and lo or (hi > n or hi == 0) and hi or nil
      if bad then check.fail(fn, "out of range: tried to access index %d on a tensor of %d elements (1-based)", bad, n) end
    end
    flat = wick.where(flat:lt(0), flat + n + 1, flat)
    local values = t:reshape(-1):clone()
    values:index_put_({ flat }, source:reshape(-1):to(t.dtype), accumulate == true)
    return values:view(t:size())
  end
  function Tensor.put_(t, index, source, accumulate)
    local r = put_values("put_", t, index, source, accumulate) -- (t checked there first)
    return t:copy_(r)
  end
  function Tensor.put(t, index, source, accumulate) return put_values("put", t, index, source, accumulate) end
  wick.put = Tensor.put

  --- t:cauchy_([median = 0[, sigma = 1]]): draws of the Cauchy distribution, median + sigma tan(pi (u - 1/2))
  function Tensor.cauchy_(t, median, sigma)
    check.tensor(t, "cauchy_", "self")
    median, sigma = check.opt_number(median, "cauchy_", "median", 0), check.opt_number(sigma, "cauchy_", "sigma", 1)
    if not (sigma > 0) then check.fail("cauchy_", "cauchy_ expects sigma > 0.0, but found sigma=%s", tostring(sigma)) end
    local u = wick.rand(t:size(), { dtype = "float64", device = t.device })
    return t:copy_(((u - 0.5) * math.pi):tan() * sigma + median)
  end

  --- wick.slice_scatter(input, src[, dim = 1[, start[, end[, step = 1]]]]) (or by name): a copy of input with
  --- src written into the slice start..end (1-based, end included, as wick's ranges; nil: to that end)
  function ops.slice_scatter(t, src, ...)
    check.tensor(t, "slice_scatter", "input")
    check.tensor(src, "slice_scatter", "src")
    local o = check.positional("slice_scatter", { "dim", "start", "end", "step" },
      { dim = "integer", start = "integer", ["end"] = "integer", step = "integer" }, ...)
    local d = wrap_dim(t, o.dim or 1, "slice_scatter")
    local size = t:size(d)
    local first = o.start or 1
    local last = o["end"] or size
    if first < 0 then first = first + size + 1 end
    if last < 0 then last = last + size + 1 end
    first, last = math.max(first, 1), math.min(last, size)
    local step = check.opt_int(o.step, "slice_scatter", "step", 1, 1)
    local out = t:clone()
    if last < first then return out end
    local index = wick.arange(first, last + 1, step, { dtype = "int64", device = t.device })
    out:index_copy_(d, index, src:to(t.dtype))
    return out
  end
  ops.slice_scatter = check.by_name(ops.slice_scatter, "slice_scatter", { "input", "src" })
  wick.slice_scatter, Tensor.slice_scatter = ops.slice_scatter, ops.slice_scatter

  --- wick.frobenius_norm(input, dim[, keepdim]) and wick.nuclear_norm(input[, dim][, keepdim]): linalg's norms
  function wick.frobenius_norm(t, dim, keepdim)
    return wick.linalg.vector_norm(check.tensor(t, "frobenius_norm", "input"), 2, dim, keepdim)
  end
  function wick.nuclear_norm(t, dim, keepdim)
    check.tensor(t, "nuclear_norm", "input")
    if type(dim) == "boolean" then dim, keepdim = nil, dim end
    return wick.linalg.matrix_norm(t, "nuc", dim or { -2, -1 }, keepdim)
  end

  -- PyTorch's deprecated positional addmm_(beta, alpha, mat1, mat2) and addmm_(beta, mat1, mat2)
  -- (center loss's distmat.addmm_(1, -2, x, centers.t())), with its warning
  for _, name in ipairs({ "addmm", "addmm_" }) do
    local method = Tensor[name]
    Tensor[name] = function(t, a, b, c, d, ...)
      if type(a) == "number" and (type(b) == "number" or is_tensor(b)) and is_tensor(c) then
        local beta, alpha, m1, m2 = a, b, c, d
        if is_tensor(b) then alpha, m1, m2 = 1, b, c end
        require("wick.nn.common").warn(("This overload of %s is deprecated:\n\t%s(Number beta, Number alpha, Tensor "
          .. "mat1, Tensor mat2)\nConsider using one of the following signatures instead:\n\t%s(Tensor mat1, Tensor "
          .. "mat2, *, Number beta = 1, Number alpha = 1)"):format(name, name, name))
        return method(t, m1, m2, { beta = beta, alpha = alpha })
      end
      return method(t, a, b, c, d, ...)
    end
  end
  return ops
end
