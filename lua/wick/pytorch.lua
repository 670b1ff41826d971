-- Reading PyTorch checkpoints (`torch.save`'s zip format, `.pt`/`.pth`) holding
-- state dicts: tensors, dicts, OrderedDicts, lists, tuples, numbers, strings,
-- booleans and None.
--
-- The pickle in `<prefix>/data.pkl` is read by a DATA-ONLY unpickler: it never
-- imports or calls anything. GLOBAL/STACK_GLOBAL resolve only a short allowlist
-- (OrderedDict, the tensor rebuild functions, the storage types), each of which
-- is a constructor implemented here in Lua; anything else is refused with an
-- error naming the file. Every length and offset is checked against the bytes
-- that remain, and the stack, the marks and the memo are bounded.
local wick = require("wick")
local core = wick._core

local pytorch = {}

local floor, ldexp = math.floor, math.ldexp
local byte, sub = string.byte, string.sub

local MAX_STACK = 1000000
local MAX_MARKS = 100000
local MAX_MEMO = 1000000
local MAX_DIMS = 16

local STORAGE_DTYPE = {
  FloatStorage = "float32", DoubleStorage = "float64", HalfStorage = "float16", BFloat16Storage = "bfloat16",
  LongStorage = "int64", IntStorage = "int32", ByteStorage = "uint8", BoolStorage = "bool",
}
local ELEMENT = { float32 = 4, float64 = 8, float16 = 2, bfloat16 = 2, int64 = 8, int32 = 4, uint8 = 1, bool = 1 }

-- ---- little helpers over byte strings (positions are 1-based) ----

local function le(s, i, n) -- unsigned little-endian integer of n <= 6 bytes
  local v = 0
  for k = n - 1, 0, -1 do v = v * 256 + byte(s, i + k) end
  return v
end

local function signed_le(s, i, n) -- two's-complement little-endian integer of n <= 8 bytes
  if n == 0 then return 0 end
  local v = 0
  for k = n - 1, 0, -1 do v = v * 256 + byte(s, i + k) end
  if byte(s, i + n - 1) >= 128 then v = v - 2 ^ (8 * n) end
  return v
end

local function be_double(s, i) -- IEEE 754 binary64, big-endian (pickle's BINFLOAT)
  local b1, b2, b3, b4, b5, b6, b7, b8 = byte(s, i, i + 7)
  local sign = b1 >= 128 and -1 or 1
  local e = (b1 % 128) * 16 + floor(b2 / 16)
  local m = ((((((b2 % 16) * 256 + b3) * 256 + b4) * 256 + b5) * 256 + b6) * 256 + b7) * 256 + b8
  if e == 2047 then
    if m == 0 then return sign * math.huge end
    return 0 / 0
  elseif e == 0 then
    return sign * ldexp(m, -1074)
  end
  return sign * ldexp(m + 2 ^ 52, e - 1075)
end

-- ---- the zip container ----
-- Read through the file, never whole: the tail for the end records, the central
-- directory, one local header per entry; the entries' data stay on disk until
-- they are mapped.

local EOCD_SIZE, ZIP64_LOCATOR_SIZE, ZIP64_EOCD_SIZE = 22, 20, 56
local U16, U32 = 0xFFFF, 0xFFFFFFFF

-- n bytes at the 0-based offset of an open file (fewer past its end).
local function read_at(f, offset, n)
  f:seek("set", offset)
  return n > 0 and f:read(n) or ""
end

local function le64(s, i, fail) -- unsigned little-endian 64-bit integer, exact below 2^53
  local high = le(s, i + 4, 4)
  if high >= 2 ^ 21 then fail("corrupt zip archive (a 64-bit size or offset beyond 2^53)") end
  return le(s, i, 4) + high * 2 ^ 32
end

-- The central directory's place and entry count, from the end record (and the
-- zip64 end record when the 32-bit fields carry its sentinels).
local function find_directory(f, size, fail)
  if size < EOCD_SIZE then fail("truncated zip archive (no end of central directory record)") end
  local tail_start = math.max(0, size - EOCD_SIZE - 65535)
  local tail = read_at(f, tail_start, size - tail_start)
  local at -- 1-based in tail
  for i = #tail - EOCD_SIZE + 1, 1, -1 do
    if byte(tail, i) == 0x50 and sub(tail, i, i + 3) == "PK\5\6" then at = i; break end
  end
  if not at then fail("truncated or corrupt zip archive (no end of central directory record)") end
  local eocd = tail_start + at - 1
  if le(tail, at + 4, 2) ~= 0 or le(tail, at + 6, 2) ~= 0 then fail("multi-disk zip archives are not supported") end
  local count, cd_size, cd_offset = le(tail, at + 10, 2), le(tail, at + 12, 4), le(tail, at + 16, 4)
  local limit = eocd
  if count == U16 or cd_size == U32 or cd_offset == U32 then
    local loc = eocd >= ZIP64_LOCATOR_SIZE and read_at(f, eocd - ZIP64_LOCATOR_SIZE, ZIP64_LOCATOR_SIZE) or ""
    if sub(loc, 1, 4) ~= "PK\6\7" then
      fail("corrupt zip archive (zip64 sizes without a zip64 end record locator)")
    end
    local z = le64(loc, 9, fail)
    if z + ZIP64_EOCD_SIZE > eocd - ZIP64_LOCATOR_SIZE then fail("corrupt zip archive (the zip64 end record is out of place)") end
    local rec = read_at(f, z, ZIP64_EOCD_SIZE)
    if sub(rec, 1, 4) ~= "PK\6\6" then fail("corrupt zip archive (the zip64 end record is damaged)") end
    count, cd_size, cd_offset = le64(rec, 33, fail), le64(rec, 41, fail), le64(rec, 49, fail)
    limit = z
  end
  if cd_offset + cd_size > limit then
    fail(("truncated or corrupt zip archive (the central directory at byte %d, %d bytes, passes its end record at byte %d)")
      :format(cd_offset, cd_size, limit))
  end
  return count, cd_offset, cd_size
end

-- The zip64 extended information extra field holds, in this order, the sizes
-- and offset whose 32-bit fields carry the sentinel.
local function zip64_fields(extra, wanted, name, fail)
  local p = 1
  while p + 3 <= #extra do
    local id, len = le(extra, p, 2), le(extra, p + 2, 2)
    if p + 4 + len - 1 > #extra then break end
    if id == 1 then
      local got, q = {}, p + 4
      for i = 1, #wanted do
        if q + 7 > p + 4 + len - 1 then break end
        got[i] = le64(extra, q, fail)
        q = q + 8
      end
      if #got == #wanted then return got end
      break
    end
    p = p + 4 + len
  end
  fail(("corrupt zip archive (entry '%s' lacks its zip64 sizes)"):format(name))
end

-- The archive's entries: name -> {offset (0-based, of the data), size, crc}.
local function read_zip(f, size, fail)
  local count, cd_offset, cd_size = find_directory(f, size, fail)
  local cd = read_at(f, cd_offset, cd_size)
  local entries = {}
  local p = 1
  for n = 1, count do
    if p + 46 - 1 > cd_size or sub(cd, p, p + 3) ~= "PK\1\2" then
      fail(("corrupt zip archive (central directory entry %d is damaged)"):format(n))
    end
    local flags, method, crc = le(cd, p + 8, 2), le(cd, p + 10, 2), le(cd, p + 16, 4)
    local csize, usize = le(cd, p + 20, 4), le(cd, p + 24, 4)
    local name_len, extra_len, comment_len = le(cd, p + 28, 2), le(cd, p + 30, 2), le(cd, p + 32, 2)
    local local_offset = le(cd, p + 42, 4)
    if p + 46 + name_len + extra_len + comment_len - 1 > cd_size then
      fail(("corrupt zip archive (central directory entry %d runs past the directory)"):format(n))
    end
    local name = sub(cd, p + 46, p + 46 + name_len - 1)
    if usize == U32 or csize == U32 or local_offset == U32 then
      local wanted = {}
      if usize == U32 then wanted[#wanted + 1] = "usize" end
      if csize == U32 then wanted[#wanted + 1] = "csize" end
      if local_offset == U32 then wanted[#wanted + 1] = "offset" end
      local got = zip64_fields(sub(cd, p + 46 + name_len, p + 46 + name_len + extra_len - 1), wanted, name, fail)
      for i, field in ipairs(wanted) do
        if field == "usize" then usize = got[i] elseif field == "csize" then csize = got[i] else local_offset = got[i] end
      end
    end
    if flags % 2 == 1 then fail(("zip entry '%s' is encrypted"):format(name)) end
    if method ~= 0 then
      fail(("zip entry '%s' uses compression method %d; only stored (uncompressed) entries, as torch.save writes, are supported")
        :format(name, method))
    end
    if csize ~= usize then fail(("corrupt zip archive (stored entry '%s' has sizes %d and %d)"):format(name, csize, usize)) end
    local lh = local_offset + 30 <= cd_offset and read_at(f, local_offset, 30) or ""
    if sub(lh, 1, 4) ~= "PK\3\4" then
      fail(("corrupt zip archive (the local header of '%s' is damaged or out of place)"):format(name))
    end
    local start = local_offset + 30 + le(lh, 27, 2) + le(lh, 29, 2)
    if start + csize > cd_offset then
      fail(("truncated or corrupt zip archive (entry '%s' runs past the data: bytes %d..%d of %d)")
        :format(name, start, start + csize, cd_offset))
    end
    if entries[name] then fail(("corrupt zip archive (entry '%s' appears twice)"):format(name)) end
    entries[name] = { offset = start, size = csize, crc = crc }
    p = p + 46 + name_len + extra_len + comment_len
  end
  return entries
end

local function crc_of(t) return core.storage_crc32(t) end

-- ---- the unpickler ----

local NONE = setmetatable({}, { __tostring = function() return "None" end })
local MARK = setmetatable({}, { __tostring = function() return "MARK" end })

-- The allowlist. Kinds: "storage" (a storage type, used only as a marker in a
-- persistent id), "call" (a constructor implemented below), "type" (a tensor
-- type, a marker for _rebuild_from_type_v2).
local ALLOWED = {
  ["collections.OrderedDict"] = "call",
  ["torch._utils._rebuild_tensor_v2"] = "call",
  ["torch._utils._rebuild_parameter"] = "call",
  ["torch._tensor._rebuild_from_type_v2"] = "call",
  ["torch._tensor.Tensor"] = "type",
  ["torch.Tensor"] = "type",
  ["torch.nn.parameter.Parameter"] = "type",
}
for name in pairs(STORAGE_DTYPE) do ALLOWED["torch." .. name] = "storage" end

local function unpickle(s, path, storage_for)
  local function fail(what) wick.error(("wick.load: %s: %s"):format(path, what)) end
  local n = #s
  local pos = 1
  local stack, top = {}, 0
  local marks, nmarks = {}, 0
  local memo, nmemo = {}, 0
  local kind = setmetatable({}, { __mode = "k" }) -- table -> "dict" | "list" | "tuple" | "global"
  local length = setmetatable({}, { __mode = "k" }) -- list/tuple -> element count (None leaves holes)

  local function need(k, what)
    if pos + k - 1 > n then fail(("truncated pickle: %s needs %d bytes at byte %d, %d remain"):format(what, k, pos - 1, n - pos + 1)) end
  end
  local function take(k, what)
    need(k, what)
    local v = sub(s, pos, pos + k - 1)
    pos = pos + k
    return v
  end
  local function push(v)
    if top >= MAX_STACK then fail("pickle stack deeper than " .. MAX_STACK) end
    top = top + 1
    stack[top] = v
  end
  local function pop(what)
    if top == 0 then fail(("corrupt pickle: %s on an empty stack"):format(what)) end
    local v = stack[top]
    stack[top] = nil
    top = top - 1
    if v == MARK then fail(("corrupt pickle: %s met a MARK"):format(what)) end
    return v
  end
  local function peek(what)
    if top == 0 or stack[top] == MARK then fail(("corrupt pickle: %s on an empty stack"):format(what)) end
    return stack[top]
  end
  local function pop_mark(what) -- the items pushed since the last MARK, in order
    if nmarks == 0 then fail(("corrupt pickle: %s without a MARK"):format(what)) end
    local m = marks[nmarks]
    marks[nmarks] = nil
    nmarks = nmarks - 1
    local items = {}
    for i = m + 1, top do
      if stack[i] == MARK then fail(("corrupt pickle: %s met a nested MARK"):format(what)) end
      items[i - m] = stack[i]
      stack[i] = nil
    end
    local count = top - m
    top = m
    return items, count
  end
  local function put(index)
    if memo[index] == nil then
      nmemo = nmemo + 1
      if nmemo > MAX_MEMO then fail("pickle memo larger than " .. MAX_MEMO) end
    end
    memo[index] = peek("PUT")
  end
  local function get(index)
    local v = memo[index]
    if v == nil then fail(("corrupt pickle: memo entry %d is missing"):format(index)) end
    push(v)
  end
  local function value(v) if v == NONE then return nil end return v end
  local function new(k, len) local t = {} kind[t] = k; if len then length[t] = len end return t end
  local function tuple(items, count)
    local t = new("tuple", count)
    for i = 1, count do t[i] = value(items[i]) end
    return t
  end
  local function set_item(d, k, v)
    if kind[d] ~= "dict" then fail("corrupt pickle: SETITEM(S) on something that is not a dict") end
    local tk = type(k)
    if k ~= k or (tk ~= "string" and tk ~= "number" and tk ~= "boolean") then
      fail(("unsupported dict key %s (only strings, numbers and booleans)"):format(tostring(k)))
    end
    d[k] = value(v)
  end
  local function append(l, v)
    if kind[l] ~= "list" then fail("corrupt pickle: APPEND(S) on something that is not a list") end
    local i = length[l] + 1
    length[l] = i
    l[i] = value(v)
  end
  local function global(module, name)
    if not module:match("^[%a_][%w_.]*$") or not name:match("^[%a_][%w_.]*$") or #module + #name > 256 then
      fail(("corrupt pickle: a global with a malformed name %q"):format((module .. "." .. name):sub(1, 64)))
    end
    local full = module .. "." .. name
    local k = ALLOWED[full]
    if not k then
      wick.error(("wick.load: refusing to load %s from %s: only tensors, containers, numbers and strings are loaded"):format(full, path))
    end
    local g = new("global")
    g.name, g.kind = full, k
    return g
  end
  local function sizes_of(t, what)
    if kind[t] ~= "tuple" and kind[t] ~= "list" then fail(("a tensor's %s is not a tuple"):format(what)) end
    local len = length[t]
    if len > MAX_DIMS then fail(("a tensor with %d dimensions (at most %d)"):format(len, MAX_DIMS)) end
    local out = {}
    for i = 1, len do
      local d = t[i]
      if type(d) ~= "number" or d < 0 or d ~= floor(d) then fail(("a tensor's %s holds %s"):format(what, tostring(d))) end
      out[i] = d
    end
    return out
  end
  local call -- forward
  local function rebuild_tensor(args)
    local storage, offset = args[1], args[2]
    if not wick.is_tensor(storage) then fail("_rebuild_tensor_v2 was not given a storage") end
    if type(offset) ~= "number" or offset < 0 or offset ~= floor(offset) then fail("a tensor with a bad storage offset") end
    local size, stride = sizes_of(args[3], "size"), sizes_of(args[4], "stride")
    if #size ~= #stride then fail(("a tensor with %d sizes but %d strides"):format(#size, #stride)) end
    local ok, t = pcall(core.as_strided, storage, size, stride, offset)
    if not ok then fail("a tensor that does not fit its storage: " .. tostring(t):gsub("^.-: ", "")) end
    return t
  end
  call = function(g, args)
    if kind[g] ~= "global" then fail("corrupt pickle: REDUCE on something that is not a known constructor") end
    if g.kind ~= "call" then fail(("corrupt pickle: %s cannot be called"):format(g.name)) end
    if kind[args] ~= "tuple" then fail("corrupt pickle: REDUCE arguments are not a tuple") end
    local nargs = length[args]
    if g.name == "collections.OrderedDict" then
      local d = new("dict")
      if nargs >= 1 and args[1] ~= nil then
        local items = args[1]
        if kind[items] ~= "list" and kind[items] ~= "tuple" then fail("OrderedDict given something that is not a list of pairs") end
        for i = 1, length[items] do
          local pair = items[i]
          if (kind[pair] ~= "tuple" and kind[pair] ~= "list") or length[pair] ~= 2 then fail("OrderedDict given something that is not a pair") end
          set_item(d, pair[1], pair[2] == nil and NONE or pair[2])
        end
      end
      return d
    elseif g.name == "torch._utils._rebuild_tensor_v2" then
      if nargs < 4 then fail("_rebuild_tensor_v2 given fewer than 4 arguments") end
      return rebuild_tensor(args)
    elseif g.name == "torch._utils._rebuild_parameter" then
      if nargs < 1 or not wick.is_tensor(args[1]) then fail("_rebuild_parameter was not given a tensor") end
      return args[1]
    elseif g.name == "torch._tensor._rebuild_from_type_v2" then
      local func, new_type, inner = args[1], args[2], args[3]
      if kind[new_type] ~= "global" or new_type.kind ~= "type" then fail("_rebuild_from_type_v2 given an unknown type") end
      return call(func, inner)
    end
    fail("corrupt pickle: unknown constructor " .. g.name)
  end

  local ops = {}
  ops[0x80] = function() -- PROTO
    local v = byte(take(1, "PROTO"))
    if v > 5 then fail(("unsupported pickle protocol %d"):format(v)) end
  end
  ops[0x95] = function() take(8, "FRAME") end -- FRAME: a hint only
  ops[0x7D] = function() push(new("dict")) end -- EMPTY_DICT }
  ops[0x5D] = function() push(new("list", 0)) end -- EMPTY_LIST ]
  ops[0x29] = function() push(new("tuple", 0)) end -- EMPTY_TUPLE )
  ops[0x28] = function() -- MARK (
    if nmarks >= MAX_MARKS then fail("more than " .. MAX_MARKS .. " open MARKs") end
    nmarks = nmarks + 1
    marks[nmarks] = top
  end
  local function str(len_bytes, what)
    local len
    if len_bytes == 8 then
      need(8, what)
      if byte(s, pos + 6) ~= 0 or byte(s, pos + 7) ~= 0 then fail(("%s of an impossible length at byte %d"):format(what, pos - 1)) end
      len = le(s, pos, 6); pos = pos + 8
    else
      len = le(take(len_bytes, what), 1, len_bytes)
    end
    if len > n - pos + 1 then
      fail(("truncated pickle: %s of %d bytes at byte %d, %d remain"):format(what, len, pos - 1, n - pos + 1))
    end
    push(take(len, what))
  end
  ops[0x58] = function() str(4, "BINUNICODE") end -- X
  ops[0x8C] = function() str(1, "SHORT_BINUNICODE") end
  ops[0x8D] = function() str(8, "BINUNICODE8") end
  ops[0x55] = function() str(1, "SHORT_BINSTRING") end -- U
  ops[0x54] = function() -- BINSTRING T (signed length)
    need(4, "BINSTRING")
    if byte(s, pos + 3) >= 128 then fail("BINSTRING of a negative length") end
    str(4, "BINSTRING")
  end
  ops[0x43] = function() str(1, "SHORT_BINBYTES") end -- C
  ops[0x42] = function() str(4, "BINBYTES") end -- B
  ops[0x8E] = function() str(8, "BINBYTES8") end
  ops[0x71] = function() put(byte(take(1, "BINPUT"))) end -- q
  ops[0x72] = function() put(le(take(4, "LONG_BINPUT"), 1, 4)) end -- r
  ops[0x68] = function() get(byte(take(1, "BINGET"))) end -- h
  ops[0x6A] = function() get(le(take(4, "LONG_BINGET"), 1, 4)) end -- j
  ops[0x94] = function() put(nmemo) end -- MEMOIZE
  ops[0x4A] = function() push(signed_le(take(4, "BININT"), 1, 4)) end -- J
  ops[0x4B] = function() push(byte(take(1, "BININT1"))) end -- K
  ops[0x4D] = function() push(le(take(2, "BININT2"), 1, 2)) end -- M
  ops[0x8A] = function() -- LONG1
    local len = byte(take(1, "LONG1"))
    if len > 8 then fail(("an integer of %d bytes (at most 8 are supported)"):format(len)) end
    push(signed_le(take(len, "LONG1"), 1, len))
  end
  ops[0x47] = function() push(be_double(take(8, "BINFLOAT"), 1)) end -- G
  ops[0x88] = function() push(true) end -- NEWTRUE
  ops[0x89] = function() push(false) end -- NEWFALSE
  ops[0x4E] = function() push(NONE) end -- N
  ops[0x74] = function() push(tuple(pop_mark("TUPLE"))) end -- t
  ops[0x85] = function() local a = pop("TUPLE1"); push(tuple({ a }, 1)) end
  ops[0x86] = function() local b = pop("TUPLE2"); local a = pop("TUPLE2"); push(tuple({ a, b }, 2)) end
  ops[0x87] = function()
    local c = pop("TUPLE3"); local b = pop("TUPLE3"); local a = pop("TUPLE3")
    push(tuple({ a, b, c }, 3))
  end
  ops[0x73] = function() -- SETITEM s
    local v = pop("SETITEM"); local k = pop("SETITEM")
    set_item(peek("SETITEM"), k, v)
  end
  ops[0x75] = function() -- SETITEMS u
    local items, count = pop_mark("SETITEMS")
    if count % 2 ~= 0 then fail("corrupt pickle: SETITEMS with an odd number of items") end
    local d = peek("SETITEMS")
    for i = 1, count, 2 do set_item(d, items[i], items[i + 1]) end
  end
  ops[0x61] = function() local v = pop("APPEND"); append(peek("APPEND"), v) end -- a
  ops[0x65] = function() -- APPENDS e
    local items, count = pop_mark("APPENDS")
    local l = peek("APPENDS")
    for i = 1, count do append(l, items[i]) end
  end
  ops[0x30] = function() pop("POP") end -- 0
  ops[0x31] = function() pop_mark("POP_MARK") end -- 1
  ops[0x32] = function() push(peek("DUP")) end -- 2
  ops[0x63] = function() -- GLOBAL c: "module\nname\n"
    local e1 = s:find("\n", pos, true)
    local e2 = e1 and s:find("\n", e1 + 1, true)
    if not e2 or e2 - pos > 512 then fail(("corrupt pickle: bad GLOBAL at byte %d"):format(pos - 1)) end
    local module, name = sub(s, pos, e1 - 1), sub(s, e1 + 1, e2 - 1)
    pos = e2 + 1
    push(global(module, name))
  end
  ops[0x93] = function() -- STACK_GLOBAL
    local name = pop("STACK_GLOBAL"); local module = pop("STACK_GLOBAL")
    if type(module) ~= "string" or type(name) ~= "string" then fail("corrupt pickle: STACK_GLOBAL of non-strings") end
    push(global(module, name))
  end
  ops[0x52] = function() -- REDUCE R
    local args = pop("REDUCE"); local g = pop("REDUCE")
    push(call(g, args))
  end
  ops[0x62] = function() -- BUILD b: the state of a dict (OrderedDict's _metadata) or a tensor is dropped
    pop("BUILD")
    local obj = peek("BUILD")
    if kind[obj] ~= "dict" and not wick.is_tensor(obj) then fail("corrupt pickle: BUILD on something that is not a dict or tensor") end
  end
  ops[0x51] = function() -- BINPERSID Q
    local pid = pop("BINPERSID")
    if kind[pid] ~= "tuple" or pid[1] ~= "storage" or length[pid] < 5 then
      fail("unsupported persistent id (only ('storage', type, key, location, numel) is loaded)")
    end
    local stype, key, location, numel = pid[2], pid[3], pid[4], pid[5]
    if kind[stype] ~= "global" or stype.kind ~= "storage" then fail("a storage of an unknown type") end
    if type(key) ~= "string" or type(location) ~= "string" or type(numel) ~= "number" or numel < 0 or numel ~= floor(numel) then
      fail("a storage with a bad key, location or size")
    end
    push(storage_for(STORAGE_DTYPE[stype.name:sub(7)], key, location, numel))
  end

  while true do
    if pos > n then fail("truncated pickle: no STOP") end
    local op = byte(s, pos)
    pos = pos + 1
    if op == 0x2E then -- STOP .
      if top ~= 1 then fail(("corrupt pickle: STOP with %d items on the stack"):format(top)) end
      return value(stack[1])
    end
    local f = ops[op]
    if not f then fail(("unsupported pickle opcode 0x%02x at byte %d"):format(op, pos - 2)) end
    f()
  end
end

-- ---- loading ----

--- load(path, opts, storage): the value in a torch.save zip checkpoint.
--- `storage` is serialize.lua's: storage.map(path, specs) gives CPU tensors over
--- the file, storage.place(t, saved_location, map_location) moves one.
function pytorch.load(path, opts, storage)
  opts = opts or {}
  local function fail(what) wick.error(("wick.load: %s: %s"):format(path, what)) end
  local f, err = io.open(path, "rb")
  if not f then wick.error(("wick.load: cannot open %s: %s"):format(path, err)) end
  local ok, entries, pkl, prefix = pcall(function()
    local size = f:seek("end")
    local entries = read_zip(f, size, fail)
    local prefix
    for name in pairs(entries) do
      local p = name:match("^(.-)/data%.pkl$")
      if p and not p:find("/", 1, true) then
        if prefix then fail("the archive holds more than one data.pkl") end
        prefix = p
      end
    end
    if not prefix then fail("not a PyTorch checkpoint (the zip archive holds no <name>/data.pkl)") end
    local bo = entries[prefix .. "/byteorder"]
    if bo and read_at(f, bo.offset, bo.size) ~= "little" then
      fail("the checkpoint was saved big-endian; only little-endian checkpoints are supported")
    end
    local e = entries[prefix .. "/data.pkl"]
    return entries, read_at(f, e.offset, e.size), prefix
  end)
  f:close()
  if not ok then error(entries, 0) end
  local pkl_name = prefix .. "/data.pkl"
  if crc_of(core.from_bytes(pkl, "uint8", { #pkl })) ~= entries[pkl_name].crc then
    fail(("corrupt zip archive (CRC-32 mismatch in '%s')"):format(pkl_name))
  end

  -- First pass: every storage the pickle names, checked, as a meta tensor (no
  -- memory), so that all of them can then be mapped at once.
  local wanted, order = {}, {}
  local function declare(dtype, key, location, numel)
    local name = prefix .. "/data/" .. key
    local seen = wanted[name]
    if seen then
      if seen.dtype ~= dtype then fail(("storage '%s' is used as both %s and %s"):format(key, seen.dtype, dtype)) end
      return seen.meta
    end
    local e = entries[name]
    if not e then fail(("the archive lacks the storage '%s'"):format(name)) end
    if e.size ~= numel * ELEMENT[dtype] then
      fail(("storage '%s' holds %d bytes, not %d elements of %s"):format(key, e.size, numel, dtype))
    end
    if not pcall(wick.device, location) then fail(("storage '%s' has an unknown location '%s'"):format(key, location)) end
    seen = { dtype = dtype, location = location, entry = e, meta = wick.empty({ numel }, { dtype = dtype, device = "meta" }) }
    wanted[name] = seen
    order[#order + 1] = name
    return seen.meta
  end
  unpickle(pkl, path, declare)

  local specs = {}
  for i, name in ipairs(order) do
    local w = wanted[name]
    specs[i] = { w.entry.offset, w.dtype, w.meta:numel() }
  end
  local mapped = storage.map(path, specs)
  local placed = {}
  for i, name in ipairs(order) do
    local w = wanted[name]
    if opts.verify ~= false and crc_of(mapped[i]) ~= w.entry.crc then -- the zip's CRC-32 of every entry
      fail(("corrupt zip archive (CRC-32 mismatch in storage '%s': the data is corrupt; wick.load(path, {verify = false}) skips the check)"):format(name))
    end
    placed[name] = storage.place(mapped[i], w.location, opts.map_location)
  end
  -- Second pass: the same pickle over the real storages.
  return unpickle(pkl, path, function(_, key) return placed[prefix .. "/data/" .. key] end)
end

return pytorch
