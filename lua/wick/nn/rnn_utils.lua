-- wick.nn.utils.rnn: batches of sequences of different lengths, as PyTorch's
-- torch.nn.utils.rnn: pad_sequence, pack_padded_sequence, pad_packed_sequence,
-- pack_sequence, unpad_sequence, unpack_sequence and PackedSequence.
--
-- A PackedSequence keeps what wick's recurrent layers run on: the padded batch,
-- time-major [T, B, *] in the caller's batch order, and one length per
-- sequence (the layers take them as their `lengths` option). PyTorch's packed
-- form (`data`: the steps of the sequences still running, longest first;
-- `batch_sizes`) is made from it when read, and the reverse when a
-- PackedSequence is built from PyTorch's fields. Indices are 1-based.
local wick = require("wick")
local check = require("wick.argcheck")

local R = {}

local PackedSequence = { __name = "PackedSequence" }
local FIELDS = { "data", "batch_sizes", "sorted_indices", "unsorted_indices" }
local FIELD_SET = { data = true, batch_sizes = true, sorted_indices = true, unsorted_indices = true }

local function is_packed(v) return getmetatable(v) == PackedSequence end
R._is_packed = is_packed

-- lengths: a table of integers or a 1-D tensor, one per sequence, in [1, T]
local function lengths_of(fn, lengths, B, T, zero_ok)
  local out = {}
  if wick.is_tensor(lengths) then
    if lengths:dim() ~= 1 then check.fail(fn, "'lengths' argument should be a 1D tensor, got %dD", lengths:dim()) end
    out = lengths:to("cpu"):to("int64"):tolist()
  elseif type(lengths) == "table" then
    for i, v in ipairs(lengths) do out[i] = check.int(v, fn, ("lengths[%d]"):format(i)) end
  else
    check.fail(fn, "expected a table of integers or a tensor for argument 'lengths', got %s", type(lengths))
  end
  if #out ~= B then
    check.fail(fn, "Expected `len(lengths)` to be equal to batch_size, but got %d (batch_size=%d)", #out, B)
  end
  for i, v in ipairs(out) do
    if v < 0 or (v == 0 and not zero_ok) then
      check.fail(fn, "Length of all samples has to be greater than 0, but found an element in 'lengths' that is <= 0")
    end
    if v > T then check.fail(fn, "lengths[%d] = %d is longer than the padded sequences (%d steps)", i, v, T) end
  end
  return out
end

-- the batch order longest first (stable), as 1-based positions
local function sorted_order(lengths)
  local order = {}
  for i = 1, #lengths do order[i] = i end
  table.sort(order, function(a, b)
    if lengths[a] ~= lengths[b] then return lengths[a] > lengths[b] end
    return a < b
  end)
  return order
end

local function inverse(order)
  local inv = {}
  for k, j in ipairs(order) do inv[j] = k end
  return inv
end

-- the rows of the flattened padded batch [T * B, *] that PyTorch's `data`
-- holds, in its order: step by step, the running sequences longest first
local function packed_rows(lengths, order)
  local rows, B = {}, #lengths
  for t = 1, lengths[order[1]] do
    for _, j in ipairs(order) do
      if lengths[j] < t then break end
      rows[#rows + 1] = (t - 1) * B + j
    end
  end
  return wick.tensor(rows, { dtype = wick.int64 })
end

local function flat(t) -- [T, B, *] as [T * B, *]
  local shape = t:size()
  table.remove(shape, 1)
  shape[1] = t:size(1) * t:size(2)
  return t:reshape(shape)
end

-- a PackedSequence over padded [T, B, *] (T = the longest length)
local function from_padded(padded, lengths, order)
  return setmetatable({ _padded = padded, _lengths = lengths, _order = order }, PackedSequence)
end
R._from_padded = from_padded

-- PyTorch's fields, made when first read
local function packed_field(self, k)
  local lengths = rawget(self, "_lengths")
  local order = rawget(self, "_order")
  local v
  if k == "data" then
    v = flat(rawget(self, "_padded")):index_select(1, packed_rows(lengths, order or sorted_order(lengths)))
  elseif k == "batch_sizes" then
    local sizes = {}
    for t = 1, lengths[(order or sorted_order(lengths))[1]] do
      local n = 0
      for _, l in ipairs(lengths) do if l >= t then n = n + 1 end end
      sizes[t] = n
    end
    v = wick.tensor(sizes, { dtype = wick.int64 })
  elseif k == "sorted_indices" then
    if not order then return nil end
    v = wick.tensor(order, { dtype = wick.int64 })
  elseif k == "unsorted_indices" then
    if not order then return nil end
    v = wick.tensor(inverse(order), { dtype = wick.int64 })
  else
    return nil
  end
  rawset(self, k, v)
  return v
end

-- PyTorch's namedtuple: p[1] is p.data, p[2] p.batch_sizes (1-based); another index or
-- name is an error, as Python's IndexError and AttributeError, not a nil found later
PackedSequence.__index = function(self, k)
  if type(k) == "number" then
    if not FIELDS[k] then
      check.fail("PackedSequence", "index %s is out of range: its fields are 1 (data), 2 (batch_sizes), "
        .. "3 (sorted_indices) and 4 (unsorted_indices)%s", tostring(k),
        k == 0 and " (PyTorch's p[0] is p[1], p.data)" or "")
    end
    k = FIELDS[k]
    local v = rawget(self, k)
    if v ~= nil then return v end
  end
  local method = rawget(PackedSequence, k)
  if method ~= nil then return method end
  if k == "is_cuda" then return rawget(self, "_padded").is_cuda end
  if type(k) == "string" and k:sub(1, 1) ~= "_" and not FIELD_SET[k] then
    check.fail("PackedSequence", "has no field '%s' (its fields: data, batch_sizes, sorted_indices, "
      .. "unsorted_indices; methods :to(), :cuda(), :cpu(), ...)", k)
  end
  return packed_field(self, k)
end

--- packed:unpack(): data, batch_sizes, sorted_indices, unsorted_indices (Python's `data, batch_sizes, ... =
--- packed`; LuaJIT's unpack(packed) reads the table raw and sees none of them)
function PackedSequence.unpack(self)
  return self.data, self.batch_sizes, self.sorted_indices, self.unsorted_indices
end

function PackedSequence.__tostring(self)
  return ("PackedSequence(data=%s, batch_sizes=%s, sorted_indices=%s, unsorted_indices=%s)"):format(
    tostring(self.data), tostring(self.batch_sizes), tostring(self.sorted_indices), tostring(self.unsorted_indices))
end

--- packed:to(...), :cpu(), :cuda(), :float(), :double(), :half(), :long(): the
--- same sequences with the data converted (the lengths stay on the CPU)
function PackedSequence:to(...)
  return from_padded(rawget(self, "_padded"):to(...), rawget(self, "_lengths"), rawget(self, "_order"))
end
for _, m in ipairs({ "cpu", "cuda", "float", "double", "half", "bfloat16", "long", "int", "detach" }) do
  PackedSequence[m] = function(self, ...)
    local p = rawget(self, "_padded")
    return from_padded(p[m](p, ...), rawget(self, "_lengths"), rawget(self, "_order"))
  end
end

--- nn.utils.rnn.PackedSequence(data, batch_sizes[, sorted_indices[, unsorted_indices]]):
--- one made from PyTorch's fields (e.g. a layer applied to packed.data)
setmetatable(PackedSequence, { __call = function(_, data, batch_sizes, sorted_indices, unsorted_indices)
  local fn = "PackedSequence"
  check.tensor(data, fn, "data")
  check.tensor(batch_sizes, fn, "batch_sizes")
  if data:dim() < 1 then check.fail(fn, "data must have at least one dimension") end
  local sizes = batch_sizes:to("cpu"):to("int64"):tolist()
  local B, total = sizes[1] or 0, 0
  for t, n in ipairs(sizes) do
    if n < 1 or n > B or (t > 1 and n > sizes[t - 1]) then
      check.fail(fn, "batch_sizes must be positive and non-increasing, got %d after %s at step %d", n,
        tostring(sizes[t - 1]), t)
    end
    total = total + n
  end
  if B == 0 then check.fail(fn, "batch_sizes must not be empty") end
  if data:size(1) ~= total then
    check.fail(fn, "data has %d rows but batch_sizes sum to %d", data:size(1), total)
  end
  local order = nil
  if sorted_indices ~= nil then
    check.tensor(sorted_indices, fn, "sorted_indices")
    order = sorted_indices:to("cpu"):to("int64"):tolist()
    if #order ~= B then check.fail(fn, "sorted_indices must have %d entries, got %d", B, #order) end
    local seen = {}
    for _, j in ipairs(order) do
      if j < 1 or j > B or seen[j] then check.fail(fn, "sorted_indices must be a permutation of 1..%d", B) end
      seen[j] = true
    end
  end
  -- sequence k (longest first) runs while batch_sizes[t] >= k
  local lengths, by_rank = {}, order or {}
  for k = 1, B do
    local n = 0
    for _, s in ipairs(sizes) do if s >= k then n = n + 1 end end
    lengths[by_rank[k] or k] = n
  end
  local T = #sizes
  local shape = data:size()
  shape[1] = T * B
  local padded = wick.zeros(shape, { dtype = data.dtype, device = data.device })
    :index_add(1, packed_rows(lengths, order or sorted_order(lengths)):to(data.device), data)
  shape[1] = B
  table.insert(shape, 1, T)
  local p = from_padded(padded:reshape(shape), lengths, order)
  rawset(p, "data", data)
  rawset(p, "batch_sizes", batch_sizes)
  return p
end })
R.PackedSequence = PackedSequence

--- pad_sequence(sequences[, batch_first = false[, padding_value = 0[, padding_side = "right"]]][, opts]):
--- tensors [L_i, *] padded to the longest, stacked as [L, B, *] ([B, L, *]
--- with batch_first)
local PAD = { batch_first = "boolean", padding_value = "number", padding_side = "string" }
function R.pad_sequence(sequences, ...)
  local fn = "pad_sequence"
  local o = check.positional(fn, { "batch_first", "padding_value", "padding_side" }, PAD, ...)
  if wick.is_tensor(sequences) then sequences = sequences:unbind(1) end
  check.tensors(sequences, fn, "sequences")
  if #sequences == 0 then check.fail(fn, "received an empty list of sequences") end
  local side = check.one_of(o.padding_side or "right", fn, "padding_side", { "right", "left" })
  local first = sequences[1]
  local L = 0
  for i, s in ipairs(sequences) do
    if s:dim() < 1 then check.fail(fn, "sequences[%d] is 0-dimensional; each sequence needs a first (time) dimension", i) end
    if s:dim() ~= first:dim() then
      check.fail(fn, "sequences[%d] has %d dimensions, sequences[1] %d", i, s:dim(), first:dim())
    end
    for d = 2, s:dim() do
      if s:size(d) ~= first:size(d) then
        check.fail(fn, "The size of sequences[%d] (%s) must match sequences[1] (%s) beyond the first dimension",
          i, tostring(s:size()), tostring(first:size()))
      end
    end
    if s.dtype ~= first.dtype or tostring(s.device) ~= tostring(first.device) then
      check.fail(fn, "sequences[%d] is %s on %s, sequences[1] %s on %s", i, s.dtype, tostring(s.device), first.dtype,
        tostring(first.device))
    end
    L = math.max(L, s:size(1))
  end
  local value = o.padding_value or 0
  local padded = {}
  for i, s in ipairs(sequences) do
    if s:size(1) == L then
      padded[i] = s
    else
      local shape = s:size()
      shape[1] = L - s:size(1)
      local fill = wick.full(shape, value, { dtype = s.dtype, device = s.device })
      padded[i] = wick.cat(side == "right" and { s, fill } or { fill, s }, 1)
    end
  end
  return wick.stack(padded, o.batch_first and 1 or 2)
end

--- pack_padded_sequence(input, lengths[, batch_first = false[, enforce_sorted = true]][, opts])
local PACK = { batch_first = "boolean", enforce_sorted = "boolean" }
function R.pack_padded_sequence(input, lengths, ...)
  local fn = "pack_padded_sequence"
  check.tensor(input, fn, "input")
  local o
  -- lengths by name too, PyTorch's pack_padded_sequence(x, lengths=..., batch_first=True)
  if type(lengths) == "table" and getmetatable(lengths) == nil and lengths.lengths ~= nil and select("#", ...) == 0 then
    o = {}
    for k, v in pairs(lengths) do if k ~= "lengths" then o[k] = v end end
    lengths = lengths.lengths
    o = check.options(o, fn, PACK)
  else
    o = check.positional(fn, { "batch_first", "enforce_sorted" }, PACK, ...)
  end
  if input:dim() < 2 then check.fail(fn, "input must have at least 2 dimensions (time and batch), got %dD", input:dim()) end
  local padded = o.batch_first and input:transpose(1, 2) or input
  local T, B = padded:size(1), padded:size(2)
  local lens = lengths_of(fn, lengths, B, T)
  local order = nil
  if o.enforce_sorted == false then
    order = sorted_order(lens)
  else
    for i = 2, B do
      if lens[i] > lens[i - 1] then
        check.fail(fn, "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
          .. "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this "
          .. "requirement if you do not need ONNX exportability.")
      end
    end
  end
  local longest = 0
  for _, l in ipairs(lens) do longest = math.max(longest, l) end
  if longest < T then padded = padded:narrow(1, 1, longest) end
  return from_padded(padded, lens, order)
end

--- pad_packed_sequence(sequence[, batch_first = false[, padding_value = 0[, total_length]]][, opts]):
--- padded, lengths (int64, the batch order of the sequences that were packed)
local UNPACK = { batch_first = "boolean", padding_value = "number", total_length = "integer" }
function R.pad_packed_sequence(sequence, ...)
  local fn = "pad_packed_sequence"
  if not is_packed(sequence) then
    check.fail(fn, "expected a PackedSequence for argument 'sequence', got %s",
      wick.is_tensor(sequence) and "a tensor" or type(sequence))
  end
  local o = check.positional(fn, { "batch_first", "padding_value", "total_length" }, UNPACK, ...)
  local padded, lens = rawget(sequence, "_padded"), rawget(sequence, "_lengths")
  local T, B = padded:size(1), padded:size(2)
  -- steps past a sequence's length hold padding_value
  local past = {}
  for t = 1, T do
    local row = {}
    for b = 1, B do row[b] = t > lens[b] end
    past[t] = row
  end
  local mask = wick.tensor(past, { dtype = wick.bool, device = padded.device })
  for _ = 3, padded:dim() do mask = mask:unsqueeze(-1) end
  padded = padded:masked_fill(mask, o.padding_value or 0)
  if o.total_length ~= nil then
    if o.total_length < T then
      check.fail(fn, "Expected total_length to be at least the length of the longest sequence in input, but got "
        .. "total_length=%d and max sequence length being %d", o.total_length, T)
    end
    if o.total_length > T then
      local shape = padded:size()
      shape[1] = o.total_length - T
      padded = wick.cat({ padded, wick.full(shape, o.padding_value or 0, { dtype = padded.dtype,
        device = padded.device }) }, 1)
    end
  end
  if o.batch_first then padded = padded:transpose(1, 2) end
  return padded, wick.tensor(lens, { dtype = wick.int64 })
end

--- pack_sequence(sequences[, enforce_sorted = true][, opts])
function R.pack_sequence(sequences, ...)
  local fn = "pack_sequence"
  local o = check.positional(fn, { "enforce_sorted" }, { enforce_sorted = "boolean" }, ...)
  check.tensors(sequences, fn, "sequences")
  local lens = {}
  for i, s in ipairs(sequences) do
    if s:dim() < 1 then check.fail(fn, "sequences[%d] is 0-dimensional", i) end
    lens[i] = s:size(1)
  end
  return R.pack_padded_sequence(R.pad_sequence(sequences), lens, { enforce_sorted = o.enforce_sorted })
end

--- unpad_sequence(padded, lengths[, batch_first = false]): the sequences, each
--- cut to its length
function R.unpad_sequence(padded, lengths, ...)
  local fn = "unpad_sequence"
  check.tensor(padded, fn, "padded_sequences")
  local o = check.positional(fn, { "batch_first" }, { batch_first = "boolean" }, ...)
  if padded:dim() < 2 then check.fail(fn, "padded_sequences must have at least 2 dimensions, got %dD", padded:dim()) end
  if not o.batch_first then padded = padded:transpose(1, 2) end
  local lens = lengths_of(fn, lengths, padded:size(1), padded:size(2), true) -- (a length 0: an empty sequence)
  local out = {}
  for b, l in ipairs(lens) do out[b] = padded[b]:narrow(1, 1, l) end
  return out
end

--- unpack_sequence(packed): the sequences of a PackedSequence
function R.unpack_sequence(packed)
  local padded, lens = R.pad_packed_sequence(packed, true)
  return R.unpad_sequence(padded, lens, true)
end

--- invert_permutation(permutation): the inverse of a permutation of 1..n (a 1-D int64 tensor of 1-based
--- indices, as a PackedSequence's sorted_indices): inv[permutation[i]] = i; nil gives nil
function R.invert_permutation(permutation)
  local fn = "invert_permutation"
  if permutation == nil then return nil end
  check.tensor(permutation, fn, "permutation")
  if permutation.dtype ~= "int64" then
    check.fail(fn, "expected an int64 tensor of indices for argument 'permutation', got %s", permutation.dtype)
  end
  if permutation:dim() > 1 then
    check.fail(fn, "expected a 1-D tensor for argument 'permutation', got %dD", permutation:dim())
  end
  local n = permutation:numel()
  if n == 0 then return permutation:clone() end
  if permutation.is_meta then return wick.empty_like(permutation) end -- (no values to invert or check)
  return wick.no_grad(function()
    local flat = permutation:reshape(-1)
    local lo, hi = flat:min():item(), flat:max():item()
    if lo < 1 or hi > n then
      check.fail(fn, "index %d is out of bounds for dimension 1 with size %d", lo < 1 and lo or hi, n)
    end
    local values, order = flat:sort()
    local at = values:ne(wick.arange(1, n + 1, { dtype = "int64", device = flat.device })):nonzero()
    if at:numel() > 0 then
      local k = at[1][1]:item()
      local v = values[k]:item()
      if v < k then check.fail(fn, "the index %d appears more than once: not a permutation of 1..%d", v, n) end
      check.fail(fn, "the index %d is missing: not a permutation of 1..%d", k, n)
    end
    return order:to("int64"):reshape(permutation.shape)
  end)
end

return R
