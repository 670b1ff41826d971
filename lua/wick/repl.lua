-- The Lua half of build/wick's prompt (src/app/repl.c): how results are printed,
-- how errors are cut down to the user's frames, and what Tab completes.
-- Kept in Lua because walking tables and metatables is what Lua does best; the
-- C side owns the terminal, the signals and the history.
local M = {}

local TABLE_LIMIT = 8 -- entries shown in a table summary before "... (n entries)"

local function wick_loaded() return package.loaded.wick end

local function is_tensor(v)
  local wick = wick_loaded()
  return wick ~= nil and type(wick.is_tensor) == "function" and wick.is_tensor(v)
end

local function first_line(s, limit)
  s = s:match("^[^\n]*")
  if #s > limit then s = s:sub(1, limit - 3) .. "..." end
  return s
end

-- one value inside a table summary: short, one line
local function short(v)
  if is_tensor(v) then
    local ok, s = pcall(function()
      local dev = tostring(v.device)
      return ("<tensor %s %s%s>"):format(tostring(v.dtype), tostring(v.shape), dev ~= "cpu" and " " .. dev or "")
    end)
    if ok then return s end
  end
  local t = type(v)
  if t == "string" then return first_line(("%q"):format(v), 40) end
  if t == "table" then
    local mt = getmetatable(v)
    if mt and mt.__tostring then return "<" .. first_line(tostring(v), 40) .. ">" end
    return "{...}"
  end
  return tostring(v)
end

local function key_text(k)
  if type(k) == "string" and k:match("^[%a_][%w_]*$") then return k end
  return "[" .. short(k) .. "]"
end

-- {1, 2, a = 1, b = <tensor float32 [2, 3]>, ... (12 entries)}
function M.summary(t)
  local n, len = 0, #t
  for _ in pairs(t) do n = n + 1 end
  local parts = {}
  for i = 1, math.min(len, TABLE_LIMIT) do parts[#parts + 1] = short(t[i]) end
  if #parts < TABLE_LIMIT then
    local keys = {}
    for k in pairs(t) do
      if not (type(k) == "number" and k >= 1 and k <= len and k % 1 == 0) then keys[#keys + 1] = k end
    end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    for _, k in ipairs(keys) do
      if #parts >= TABLE_LIMIT then break end
      parts[#parts + 1] = key_text(k) .. " = " .. short(t[k])
    end
  end
  if n > #parts then parts[#parts + 1] = ("... (%d entries)"):format(n) end
  return "{" .. table.concat(parts, ", ") .. "}"
end

-- the results of a line, tab-separated (tensors and modules through tostring)
function M.format(...)
  local out = {}
  for i = 1, select("#", ...) do
    local v = select(i, ...)
    local mt = type(v) == "table" and getmetatable(v)
    if type(v) == "table" and not (mt and mt.__tostring) then
      out[i] = M.summary(v)
    else
      out[i] = tostring(v)
    end
  end
  return table.concat(out, "\t")
end

-- message handler: the traceback without the prompt's own frames (the line's
-- main chunk and the C call that ran it); no traceback at all when only those.
-- `level`: where the traceback starts (2, the caller, unless called through
-- another handler, as build/wick's C one does)
function M.traceback(msg, level)
  if type(msg) ~= "string" then
    local mt = getmetatable(msg)
    if mt and mt.__tostring then
      msg = tostring(msg)
    else
      msg = ("(error object is a %s value)"):format(type(msg))
    end
  end
  local tb = debug.traceback("", level or 2)
  local lines = {}
  for l in tb:gmatch("[^\n]+") do
    -- builtins (error, assert, ...) show as "[builtin#19]: at 0x...": noise
    if not l:match("^%s*%[builtin#%d+%]:") then lines[#lines + 1] = l end
  end
  while #lines > 0 and (lines[#lines]:match("^%s*%[C%]: %?$") or lines[#lines]:match("^%s*stdin:%d+: in main chunk$")
    or lines[#lines]:match("^%s*%[C%]: in function 'xpcall'$")) do
    lines[#lines] = nil
  end
  if #lines <= 1 then return msg end -- only "stack traceback:"
  return msg .. "\n" .. table.concat(lines, "\n")
end

local keywords = { "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "if", "in", "local",
  "nil", "not", "or", "repeat", "return", "then", "true", "until", "while" }

-- the names a value offers after "." or ":": its own keys, then its metatable's
-- __index tables up the class chain (nn modules); tensors: wick.Tensor's methods
-- and, after ".", the tensor fields (shape, dtype, ...)
local function names_of(v, sep)
  local names = {}
  local function add(t, want_function)
    if type(t) ~= "table" then return end
    for k, x in pairs(t) do
      if type(k) == "string" and k:match("^[%a_][%w_]*$") and (not want_function or type(x) == "function") then
        names[k] = true
      end
    end
  end
  if is_tensor(v) then
    local wick = wick_loaded()
    add(wick.Tensor, true)
    if sep == "." then add(wick._tensor_fields) end
    return names
  end
  if type(v) == "table" and sep == "." then add(v) end
  local mt, depth = getmetatable(v), 0
  while type(mt) == "table" and depth < 16 do
    local index = rawget(mt, "__index")
    if type(index) ~= "table" then break end
    add(index, sep == ":")
    mt, depth = getmetatable(index), depth + 1
  end
  if sep == ":" and type(v) == "table" then add(v, true) end
  return names
end

-- completions of `text` (a name, or a.b.c, or a.b:c), as full replacements
function M.complete(text)
  local head, sep, part = text:match("^(.-)([%.:])([%w_]*)$")
  local names = {}
  if not head then
    if not text:match("^[%w_]*$") then return {} end
    part, head, sep = text, "", ""
    for k in pairs(_G) do
      if type(k) == "string" then names[k] = true end
    end
    for _, k in ipairs(keywords) do names[k] = true end
  else
    -- only plain name paths are walked: completion must never run user code
    -- beyond the __index of the values on the path
    if not head:match("^[%a_][%w_]*$") and not head:match("^[%a_][%w_%.]*[%w_]$") then return {} end
    local v = _G
    for name in head:gmatch("[^%.]+") do
      local ok, x = pcall(function() return v[name] end)
      if not ok or x == nil then return {} end
      v = x
    end
    names = names_of(v, sep)
  end
  local out = {}
  for k in pairs(names) do
    if k:sub(1, #part) == part and (k:sub(1, 1) ~= "_" or part:sub(1, 1) == "_") then
      out[#out + 1] = head .. sep .. k
    end
  end
  table.sort(out)
  return out
end

return M
