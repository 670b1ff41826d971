-- A small JSON encoder and a strict, bounded decoder for checkpoint headers.
-- Decoding never runs code: it builds tables, strings, numbers and booleans,
-- and rejects anything malformed with a message saying where.
local json = {}

local escapes = { ['"'] = '\\"', ["\\"] = "\\\\", ["\b"] = "\\b", ["\f"] = "\\f", ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t" }

local function encode_string(s)
  return '"' .. s:gsub('[%c"\\]', function(c) return escapes[c] or ("\\u%04x"):format(c:byte()) end) .. '"'
end

--- Encodes strings, numbers (integers only, exactly), booleans, arrays (tables
--- with `n` or a sequence) and objects (string keys, written in sorted order).
function json.encode(v)
  local t = type(v)
  if t == "string" then return encode_string(v) end
  if t == "number" then
    if v ~= math.floor(v) or v ~= v or math.abs(v) > 2 ^ 53 then error("json.encode: only integers are encoded as numbers", 2) end
    return ("%.0f"):format(v)
  end
  if t == "boolean" then return tostring(v) end
  if t ~= "table" then error("json.encode: cannot encode a " .. t, 2) end
  if v[1] ~= nil or next(v) == nil and getmetatable(v) == json.array then
    local parts = {}
    for i = 1, #v do parts[i] = json.encode(v[i]) end
    return "[" .. table.concat(parts, ",") .. "]"
  end
  local keys = {}
  for k in pairs(v) do
    if type(k) ~= "string" then error("json.encode: object keys must be strings", 2) end
    keys[#keys + 1] = k
  end
  table.sort(keys)
  local parts = {}
  for i, k in ipairs(keys) do parts[i] = encode_string(k) .. ":" .. json.encode(v[k]) end
  return "{" .. table.concat(parts, ",") .. "}"
end

json.array = {} -- metatable marking an empty table as an array

--- Whether s is well-formed UTF-8 (JSON text must be).
function json.valid_utf8(s)
  local i, n = 1, #s
  while i <= n do
    local c = s:byte(i)
    local extra = c < 0x80 and 0 or (c >= 0xC2 and c <= 0xDF) and 1 or (c >= 0xE0 and c <= 0xEF) and 2
      or (c >= 0xF0 and c <= 0xF4) and 3 or nil
    if not extra then return false end
    for k = 1, extra do
      local d = s:byte(i + k)
      if not d or d < 0x80 or d > 0xBF then return false end
    end
    i = i + extra + 1
  end
  return true
end

--- Decodes s; raises "what is wrong at byte N" (prefixed by `where`).
function json.decode(s, where, max_depth)
  max_depth = max_depth or 200
  local pos = 1
  local function fail(what) error(("%s: malformed JSON: %s at byte %d"):format(where or "json", what, pos), 0) end
  local function skip() pos = s:find("[^ \t\r\n]", pos) or #s + 1 end
  local value
  local function string_value()
    pos = pos + 1
    local out = {}
    while true do
      local i = s:find('["\\]', pos)
      if not i then fail("unterminated string") end
      out[#out + 1] = s:sub(pos, i - 1)
      if s:sub(i, i) == '"' then pos = i + 1; break end
      local c = s:sub(i + 1, i + 1)
      local simple = { ['"'] = '"', ["\\"] = "\\", ["/"] = "/", b = "\b", f = "\f", n = "\n", r = "\r", t = "\t" }
      if simple[c] then
        out[#out + 1] = simple[c]
        pos = i + 2
      elseif c == "u" then
        local hex = s:sub(i + 2, i + 5)
        if not hex:match("^%x%x%x%x$") then fail("bad \\u escape") end
        local code = tonumber(hex, 16)
        if code < 0x80 then out[#out + 1] = string.char(code)
        elseif code < 0x800 then out[#out + 1] = string.char(0xC0 + math.floor(code / 64), 0x80 + code % 64)
        else out[#out + 1] = string.char(0xE0 + math.floor(code / 4096), 0x80 + math.floor(code / 64) % 64, 0x80 + code % 64) end
        pos = i + 6
      else
        fail("bad escape")
      end
    end
    return table.concat(out)
  end
  value = function(depth)
    if depth > max_depth then fail("nesting deeper than " .. max_depth) end
    skip()
    local c = s:sub(pos, pos)
    if c == "{" then
      pos = pos + 1
      local obj = {}
      skip()
      if s:sub(pos, pos) == "}" then pos = pos + 1; return obj end
      while true do
        skip()
        if s:sub(pos, pos) ~= '"' then fail("expected a string key") end
        local k = string_value()
        skip()
        if s:sub(pos, pos) ~= ":" then fail("expected ':'") end
        pos = pos + 1
        obj[k] = value(depth + 1)
        skip()
        local d = s:sub(pos, pos)
        pos = pos + 1
        if d == "}" then return obj end
        if d ~= "," then fail("expected ',' or '}'") end
      end
    elseif c == "[" then
      pos = pos + 1
      local arr = setmetatable({}, json.array)
      skip()
      if s:sub(pos, pos) == "]" then pos = pos + 1; return arr end
      while true do
        arr[#arr + 1] = value(depth + 1)
        skip()
        local d = s:sub(pos, pos)
        pos = pos + 1
        if d == "]" then return arr end
        if d ~= "," then fail("expected ',' or ']'") end
      end
    elseif c == '"' then
      return string_value()
    elseif s:sub(pos, pos + 3) == "true" then pos = pos + 4; return true
    elseif s:sub(pos, pos + 4) == "false" then pos = pos + 5; return false
    elseif s:sub(pos, pos + 3) == "null" then pos = pos + 4; return nil
    else
      local num = s:match("^-?%d+%.?%d*[eE]?[-+]?%d*", pos)
      if not num or num == "" or num == "-" then fail("unexpected character '" .. c .. "'") end
      pos = pos + #num
      local n = tonumber(num)
      if not n then fail("bad number") end
      return n
    end
  end
  local result = value(0)
  skip()
  if pos <= #s then fail("trailing characters") end
  return result
end

return json
