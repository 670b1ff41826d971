-- Checkpoints: the fixture saved from CUDA, map_location, safetensors interop,
-- and hostile files (each must raise an error naming the file, never crash).
local wick = require("wick")
local support = require("spec.support")
local assert_error_has = support.assert_error_has

local FIXTURE = "spec/fixtures/saved_on_cuda.wick"
local dir = os.tmpname()
os.remove(dir)
os.execute("mkdir -p " .. dir)

local function read(path) local f = assert(io.open(path, "rb")); local s = f:read("*a"); f:close(); return s end
local function write(path, s) local f = assert(io.open(path, "wb")); f:write(s); f:close() end
local function u64(n) local b = {} for i = 1, 8 do b[i] = string.char(n % 256); n = math.floor(n / 256) end return table.concat(b) end

describe("the fixture saved from cuda:0 and cuda:1", function()
  it("without map_location raises API.md's error where CUDA is unavailable", function()
    if wick.cuda.is_available() then return pending("this machine has CUDA") end
    assert_error_has(function() return wick.load(FIXTURE) end,
      "Attempting to deserialize object on a CUDA device but wick.cuda.is_available() is false. If you are running on a CPU-only machine, please use wick.load with map_location='cpu' to map your storages to the CPU.")
  end)

  it("map_location 'cpu' and a device object bring everything to the CPU with the saved values", function()
    for _, where in ipairs({ "cpu", wick.device("cpu") }) do
      local r = wick.load(FIXTURE, { map_location = where })
      assert.are.equal("cpu", r.weight.device.type)
      assert.are.same({ { 1, 2, 3 }, { 4, 5, 6 } }, r.weight:totable())
      assert.are.same({ 7, 8 }, r.bias:totable())
      assert.are.equal("float32", r.bias.dtype)
    end
  end)

  it("a table renames saved locations and keeps the others", function()
    local r = wick.load(FIXTURE, { map_location = { ["cuda:0"] = "meta", ["cuda:1"] = "cpu" } })
    assert.are.equal("meta", r.weight.device.type)
    assert.are.equal("cpu", r.bias.device.type)
    assert.are.same({ 7, 8 }, r.bias:totable())
    if not wick.cuda.is_available() then
      assert_error_has(function() return wick.load(FIXTURE, { map_location = { ["cuda:1"] = "cpu" } }) end,
        "wick.cuda.is_available() is false")
    end
  end)

  it("a function is called once per storage with a 1-D CPU tensor and its saved location", function()
    local seen = {}
    local r = wick.load(FIXTURE, { map_location = function(storage, location)
      seen[location] = storage:numel()
      assert.are.equal("cpu", storage.device.type)
      assert.are.equal(1, storage:dim())
      if location == "cuda:1" then return storage:to("meta") end
    end })
    assert.are.same({ ["cuda:0"] = 6, ["cuda:1"] = 2 }, seen)
    assert.are.equal("cpu", r.weight.device.type)
    assert.are.equal("meta", r.bias.device.type)
    assert.are.same({ 2 }, { r.bias:size(1) })
  end)

  it("an unknown map_location is a clear error", function()
    assert_error_has(function() return wick.load(FIXTURE, { map_location = "gpu" }) end, "invalid map_location 'gpu'")
  end)

  it("is a valid safetensors file: its storages read as plain entries", function()
    local bytes = read(FIXTURE)
    local n = 0
    for i = 8, 1, -1 do n = n * 256 + bytes:byte(i) end
    assert.is_true(n > 0 and n < #bytes)
    assert.are.equal(0, (8 + n) % 8) -- the data starts aligned
    assert.is_truthy(bytes:sub(9, 8 + n):find('"__metadata__"', 1, true))
  end)
end)

describe("safetensors", function()
  it("reads a file written by the reference safetensors library", function()
    local r = wick.load("spec/fixtures/from_python.safetensors")
    assert.are.same({ { 0, 1, 2 }, { 3, 4, 5 } }, r.weight:totable())
    assert.are.same({ 1, -2, 3 }, r.ids:totable())
    assert.are.equal("int64", r.ids.dtype)
    assert.are.same({ 0.5, -1 }, r.half:totable())
    assert.are.equal("float16", r.half.dtype)
    assert.are.same({ true, false, true }, r.mask:totable())
  end)

  it("round-trips a flat table through save_safetensors", function()
    local path = dir .. "/flat.safetensors"
    local t = { a = wick.randn(3, 4), b = wick.arange(5, { dtype = "int64" }), c = wick.randn(2, 3):t() }
    wick.save_safetensors(t, path)
    local r = wick.load(path)
    for k, v in pairs(t) do assert.is_true(r[k]:equal(v), k) end
    assert_error_has(function() wick.save_safetensors({ a = 1 }, path) end, "flat table of name -> tensor")
  end)
end)

describe("hostile checkpoint files", function()
  local good = dir .. "/good.wick"
  wick.save({ w = wick.randn(4, 4), step = 3 }, good)
  local bytes = read(good)
  local n = 0
  for i = 8, 1, -1 do n = n * 256 + bytes:byte(i) end
  local header = bytes:sub(9, 8 + n)
  local data = bytes:sub(9 + n)

  local function with_header(h, d)
    local bad = dir .. "/bad.wick"
    write(bad, u64(#h) .. h .. (d or data))
    return bad
  end

  it("a header size beyond the file", function()
    local bad = dir .. "/huge.wick"
    write(bad, u64(2 ^ 50) .. header)
    assert_error_has(function() return wick.load(bad) end, bad, "not a wick checkpoint")
  end)

  it("an entry that claims more bytes than the file holds, without allocating them", function()
    local h = header:gsub('"shape":%[16%]', '"shape":[4000000000000]'):gsub('"data_offsets":%[0,64%]', '"data_offsets":[0,16000000000000]')
    assert_error_has(function() return wick.load(with_header(h)) end, "truncated")
  end)

  it("a size that does not match the dtype", function()
    local h = header:gsub('"shape":%[16%]', '"shape":[15]')
    assert_error_has(function() return wick.load(with_header(h)) end, "bytes for 15 elements")
  end)

  it("an unknown dtype", function()
    local h = header:gsub('"dtype":"F32"', '"dtype":"X99"')
    assert_error_has(function() return wick.load(with_header(h)) end, "lacks dtype")
  end)

  it("a view that reaches outside its storage", function()
    local h = header:gsub('\\"offset\\":0', '\\"offset\\":9') -- same length: the data stays aligned
    assert.are_not.equal(header, h)
    assert_error_has(function() return wick.load(with_header(h)) end, "reaches element")
  end)

  it("deep nesting and malformed JSON", function()
    local deep = '{"a":' .. ("["):rep(100000) .. ("]"):rep(100000) .. "}"
    assert_error_has(function() return wick.load(with_header(deep, "")) end, "nesting deeper")
    assert_error_has(function() return wick.load(with_header('{"a":', "")) end, "corrupt header")
  end)
end)

describe("atomic writes", function()
  -- the runner that runs this spec, to start writers as separate processes
  local runner = arg and arg[-1] or "build/wick"
  -- the exit status as a number: LuaJIT (5.1) returns it, Lua 5.2+ returns
  -- ok, "exit" or "signal", code
  local function sh(cmd)
    local ok, _, code = os.execute(cmd)
    if type(ok) == "number" then return ok end
    return code
  end
  local function loads(path) return pcall(wick.load, path) end

  it("a write that fails midway (file size limit, like a full disk) raises and keeps the previous file", function()
    local path = dir .. "/limited.wick"
    wick.save({ step = 1, v = wick.ones(4) }, path)
    local script = dir .. "/writer.lua"
    write(script, ([[
      local wick = require("wick")
      local ok, err = pcall(wick.save, { step = 2, v = wick.zeros(100000) }, %q)
      io.stderr:write(tostring(err))
      os.exit(ok and 0 or 3)
    ]]):format(path))
    -- SIGXFSZ ignored: the write fails with EFBIG instead of killing the writer
    local status = sh(("sh -c 'trap \"\" XFSZ; ulimit -f 64; %s %s 2>%s/err.txt'"):format(runner, script, dir))
    assert.is_not.equal(0, status)
    assert.is_truthy(read(dir .. "/err.txt"):find("limited.wick", 1, true))
    local ok, r = loads(path)
    assert.is_true(ok)
    assert.are.equal(1, r.step)
    assert.are.same({ 1, 1, 1, 1 }, r.v:totable())
    for name in io.popen("ls " .. dir):lines() do assert.is_falsy(name:find("tmp", 1, true), name) end
  end)

  it("a writer killed at any moment leaves the old file or the new one, never a broken one", function()
    local path = dir .. "/killed.wick"
    wick.save({ generation = 0, v = wick.zeros(200000) }, path)
    local script = dir .. "/loop.lua"
    write(script, ([[
      local wick = require("wick")
      local big = wick.randn(200000)
      for g = 1, 1e9 do wick.save({ generation = g, v = big }, %q) end
    ]]):format(path))
    for round = 1, 6 do
      -- start a writer, let it run a little (a different moment each round), kill -9 it
      sh(("%s %s & pid=$!; sleep 0.%d; kill -9 $pid; wait $pid 2>/dev/null"):format(runner, script, round + 1))
      local ok, r = loads(path)
      assert.is_true(ok, r)
      assert.are.equal(200000, r.v:numel())
    end
  end)
end)

describe("safetensors from writers that do not align entries", function()
  it("are read by copying instead of mapping", function()
    -- header with a 3-byte BOOL entry first, then an F32 entry at offset 3
    local h = '{"m":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]},"w":{"dtype":"F32","shape":[2],"data_offsets":[3,11]}}'
    local function f32(x) -- little-endian IEEE single for a few exact values
      local known = { [1] = "\0\0\128\63", [-2] = "\0\0\0\192" }
      return known[x]
    end
    local path = dir .. "/unaligned.safetensors"
    write(path, u64(#h) .. h .. "\1\0\1" .. f32(1) .. f32(-2))
    local r = wick.load(path)
    assert.are.same({ true, false, true }, r.m:totable())
    assert.are.same({ 1, -2 }, r.w:totable())
  end)
end)

describe("verify", function()
  it("checks every storage's CRC-32 on request and names the corrupt one", function()
    local path = dir .. "/verified.wick"
    wick.save({ a = wick.arange(1000), b = wick.ones(10, { dtype = "int64" }) }, path)
    assert.are.same({ 1, 1 }, wick.load(path, { verify = true }).b:narrow(1, 1, 2):totable())
    local bytes = read(path)
    -- flip one byte of the data (the last byte of the file belongs to a storage)
    local bad = dir .. "/flipped.wick"
    write(bad, bytes:sub(1, #bytes - 1) .. string.char((bytes:byte(#bytes) + 1) % 256))
    assert.is_true(pcall(wick.load, bad)) -- without verify the flip goes unnoticed
    assert_error_has(function() return wick.load(bad, { verify = true }) end, bad, "checksum mismatch in storage")
  end)

  it("says so when a checkpoint has no checksums to verify", function()
    local path = "spec/fixtures/saved_on_cuda.wick" -- written before checksums existed
    assert_error_has(function() return wick.load(path, { map_location = "cpu", verify = true }) end,
      path, "saved without a checksum")
  end)
end)
