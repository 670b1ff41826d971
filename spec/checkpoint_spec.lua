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
  it("without map_location raises docs/api.md's error where CUDA is unavailable", function()
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

describe("the checkpoint engine (src/io/ckpt*.c)", function()
  it("round-trips every kind of value: numbers, strings, booleans, nested tables, views of shared storages", function()
    local path = dir .. "/kinds.wick"
    local base = wick.arange(24, { dtype = "float64" }):view(2, 3, 4)
    local value = {
      nums = { 0 / 0, 1 / 0, -1 / 0, -0.0, 5e-324, 1 / 3, 2 ^ 60 }, text = "a\0b\1\127\"\\\n\226\130\172", yes = true, no = false,
      [1] = "one", [2.5] = { deep = { deeper = { "x" } } },
      base = base, t = base:transpose(1, 3), slice = base[2][3], scalar = base[1][1][2],
      every = {},
    }
    for _, dt in ipairs({ "float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool" }) do
      value.every[dt] = wick.ones(3, { dtype = dt })
    end
    wick.save(value, path)
    local r = wick.load(path)
    assert.is_true(r.nums[1] ~= r.nums[1])
    assert.are.same({ 1 / 0, -1 / 0, 5e-324, 1 / 3, 2 ^ 60 }, { r.nums[2], r.nums[3], r.nums[5], r.nums[6], r.nums[7] })
    assert.are.equal(1 / -0.0, 1 / r.nums[4])
    assert.are.equal(value.text, r.text)
    assert.are.equal(true, r.yes)
    assert.are.equal(false, r.no)
    assert.are.equal("one", r[1])
    assert.are.equal("x", r[2.5].deep.deeper[1])
    assert.is_true(r.t:equal(base:transpose(1, 3)) and r.slice:equal(base[2][3]) and r.scalar:item() == base[1][1][2]:item())
    r.base[1][1][1] = 100 -- the views still share their one storage
    assert.are.equal(100, r.t[1][1][1]:item())
    for dt, t in pairs(value.every) do
      assert.are.equal(dt, r.every[dt].dtype)
      assert.is_true(r.every[dt]:equal(t), dt)
    end
  end)

  it("a load calls into C twice however many tensors the file holds", function()
    local core = wick._core
    local names = {}
    for k, f in pairs(core) do if type(f) == "function" then names[f] = k end end
    local path = dir .. "/many.wick"
    local sd = {}
    for i = 1, 200 do sd["layer" .. i .. ".weight"] = wick.randn(2, 2) end
    wick.save(sd, path)
    local calls = {}
    debug.sethook(function()
      local f = debug.getinfo(2, "f").func
      if names[f] then calls[#calls + 1] = names[f] end
    end, "c")
    local r = wick.load(path)
    debug.sethook()
    assert.are.same({ "ckpt_load", "ckpt_tree" }, calls)
    for k, t in pairs(sd) do assert.is_true(r[k]:equal(t), k) end
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

  it("views whose size arithmetic overflows (the audit's crafted files) are errors, not reads outside the file", function()
    local bad_name = dir .. "/bad.wick"
    local function crafted(shape, strides)
      local h = header:gsub('\\"shape\\":%[4,4%]', '\\"shape\\":' .. shape):gsub('\\"strides\\":%[4,1%]', '\\"strides\\":' .. strides)
      assert.are_not.equal(header, h)
      return with_header(h)
    end
    -- 3 * 2^50 written out: JSON numbers beyond 2^53 still parse exactly as doubles here
    assert_error_has(function() return wick.load(crafted("[2049,2049]", "[3377699720527872,3377699720527872]")):sum() end,
      bad_name, "reaches")
    assert_error_has(function() return wick.load(crafted("[4294967296,4294967296]", "[1,1]")):sum() end,
      bad_name, "invalid shape")
    assert_error_has(function() return wick.load(crafted("[4294967296,4294967296]", "[0,0]")):sum() end,
      bad_name, "invalid shape")
  end)

  it("a view that reaches outside its storage", function()
    local bad_name = dir .. "/bad.wick"
    local h = header:gsub('\\"offset\\":0', '\\"offset\\":9') -- same length: the data stays aligned
    assert.are_not.equal(header, h)
    assert_error_has(function() return wick.load(with_header(h)) end, bad_name, "reaches")
  end)

  it("deep nesting and malformed JSON", function()
    local deep = '{"a":' .. ("["):rep(100000) .. ("]"):rep(100000) .. "}"
    assert_error_has(function() return wick.load(with_header(deep, "")) end, "nesting deeper")
    assert_error_has(function() return wick.load(with_header('{"a":', "")) end, "corrupt header")
  end)
end)

-- the runner that runs this spec, to start writers as separate processes
local runner = arg and arg[-1] or "build/wick"
-- the exit status as a number: LuaJIT (5.1) returns it, Lua 5.2+ returns
-- ok, "exit" or "signal", code
local function sh(cmd)
  local ok, _, code = os.execute(cmd)
  if type(ok) == "number" then return ok end
  return code
end

describe("atomic writes", function()
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
    for name in io.popen("ls -A " .. dir):lines() do assert.is_falsy(name:find("tmp", 1, true), name) end
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

describe("checksums (verified by default)", function()
  local core = wick._core
  -- the byte ranges of each storage in a saved file: name -> {first, last} (1-based)
  local function storage_bytes(bytes)
    local n = 0
    for i = 8, 1, -1 do n = n * 256 + bytes:byte(i) end
    local ranges = {}
    for name, a, b in bytes:sub(9, 8 + n):gmatch('"(s%d+)":{"data_offsets":%[(%d+),(%d+)%]') do
      ranges[name] = { 9 + n + tonumber(a), 8 + n + tonumber(b) }
    end
    return ranges
  end
  local function flip(bytes, at) return bytes:sub(1, at - 1) .. string.char((bytes:byte(at) + 1) % 256) .. bytes:sub(at + 1) end

  it("CRC-32C matches the standard test vectors on the SSE4.2 path and the table", function()
    local zeros, ff, up, down = ("\0"):rep(32), ("\255"):rep(32), {}, {}
    for i = 0, 31 do up[#up + 1] = string.char(i); down[#down + 1] = string.char(31 - i) end
    local vectors = { ["123456789"] = 0xe3069283, [""] = 0, [zeros] = 0x8a9136aa, [ff] = 0x62a8ab43,
      [table.concat(up)] = 0x46dd794e, [table.concat(down)] = 0x113fdb5c }
    local _, sse = core.crc32c("")
    for s, want in pairs(vectors) do
      assert.are.equal(want, (core.crc32c(s)), ("%q"):format(s))
      assert.are.equal(want, (core.crc32c(s, "portable")), ("%q"):format(s))
    end
    -- the SSE4.2 path where this CPU has it (x86-64 with SSE4.2: every CI machine)
    local cpu = io.open("/proc/cpuinfo") and io.open("/proc/cpuinfo"):read("*a") or ""
    if cpu:find("sse4_2", 1, true) then assert.is_true(sse) end
    -- long inputs at every alignment (three-stream blocks, tails) and split across
    -- the thread pool (from 2 MiB), against the table
    local chars, x = {}, 12345
    for i = 1, 3 * 1024 * 1024 + 13 do x = (x * 1103515245 + 12345) % 2147483648; chars[i] = string.char(x % 251) end
    local s = table.concat(chars)
    for _, cut in ipairs({ 0, 1, 5, 12288, 12289 }) do
      local piece = s:sub(cut + 1)
      assert.are.equal(core.crc32c(piece, "portable"), (core.crc32c(piece)), cut)
    end
    local t = core.from_bytes(s, "uint8", { #s })
    assert.are.equal(core.crc32c(s, "portable"), core.storage_crc32(t, "crc32c"))
  end)

  it("a flipped byte in any storage's data is an error by default naming the file and the storage", function()
    local path = dir .. "/verified.wick"
    wick.save({ a = wick.arange(1000), b = wick.ones(10, { dtype = "int64" }), c = wick.ones(3, { dtype = "uint8" }) }, path)
    local bytes = read(path)
    assert.is_truthy(bytes:find('\\"crc32c\\":{', 1, true)) -- new files carry CRC-32C, not zlib's CRC-32
    assert.is_falsy(bytes:find('\\"crc32\\":', 1, true))
    assert.are.same({ 1, 1 }, wick.load(path).b:narrow(1, 1, 2):totable())
    local ranges = storage_bytes(bytes)
    local count = 0
    for name, r in pairs(ranges) do
      for _, at in ipairs({ r[1], r[2], math.floor((r[1] + r[2]) / 2) }) do
        local bad = dir .. "/flipped.wick"
        write(bad, flip(bytes, at))
        for _, opts in ipairs({ {}, { verify = true }, { map_location = "cpu" } }) do
          assert_error_has(function() return wick.load(bad, opts) end, "wick.load: " .. bad .. ":",
            "checksum mismatch in storage '" .. name .. "'", "the data is corrupt")
        end
        -- verify = false loads it, and the damage shows in the values
        local r2 = wick.load(bad, { verify = false })
        assert.is_false(r2.a:equal(wick.arange(1000)) and r2.b:equal(wick.ones(10, { dtype = "int64" }))
          and r2.c:equal(wick.ones(3, { dtype = "uint8" })))
        count = count + 1
      end
    end
    assert.are.equal(9, count)
  end)

  it("a bad verify option or a malformed checksum is a clear error", function()
    local path = dir .. "/opt.wick"
    wick.save({ a = wick.ones(2) }, path)
    assert_error_has(function() return wick.load(path, { verify = "yes" }) end, "verify option must be true or false")
    assert_error_has(function() return wick.load(path, { veryfy = true }) end, "wick.load: unknown option 'veryfy'")
    assert_error_has(function() return wick.save({ a = wick.ones(2) }, path, { loc = 1 }) end, "wick.save: unknown option 'loc'")
    assert_error_has(function() return wick.load(path, { weights_only = 1 }) end, "option 'weights_only'")
    assert.are.same({ 1, 1 }, wick.load(path, { weights_only = true, mmap = true, map_location = "cpu" }).a:totable())
    local bytes = read(path)
    local h = bytes:gsub('(\\"crc32c\\":{\\"s1\\":\\")%x%x%x%x%x%x%x%x', "%1zzzzzzzz")
    assert.are_not.equal(bytes, h)
    write(dir .. "/badsum.wick", h)
    assert_error_has(function() return wick.load(dir .. "/badsum.wick") end, "storage 's1' has a bad crc32c")
  end)

  it("files of the earlier format (zlib CRC-32) are checked too, and load", function()
    local path = dir .. "/old.wick"
    wick.save({ w = wick.randn(100), i = wick.arange(7, { dtype = "int32" }) }, path)
    local bytes = read(path)
    local n = 0
    for i = 8, 1, -1 do n = n * 256 + bytes:byte(i) end
    -- rewrite the checksums as the earlier wick.save did: zlib's CRC-32 under "crc32"
    local loaded = wick.load(path, { verify = false, map_location = function(storage) return storage:clone() end })
    local zlib_of = {}
    for name, r in pairs(storage_bytes(bytes)) do
      zlib_of[name] = ("%08x"):format(core.storage_crc32(core.from_bytes(bytes:sub(r[1], r[2]), "uint8", { r[2] - r[1] + 1 })))
    end
    local header = bytes:sub(9, 8 + n):gsub('\\"crc32c\\":{(.-)}', function(body)
      return '\\"crc32\\":{' .. body:gsub('\\"(s%d+)\\":\\"%x+\\"', function(name) return '\\"' .. name .. '\\":\\"' .. zlib_of[name] .. '\\"' end) .. "}"
    end)
    header = header .. " " -- "crc32c" -> "crc32": the same length again, the data stays aligned
    assert.are.equal(n, #header)
    local old = header:find('\\"crc32\\":{', 1, true) and (bytes:sub(1, 8) .. header .. bytes:sub(9 + n))
    assert.is_truthy(old)
    write(path, old)
    local r = wick.load(path)
    assert.is_true(r.w:equal(loaded.w))
    assert.are.same({ 0, 1, 2, 3, 4, 5, 6 }, r.i:totable())
    local bad = dir .. "/old_flipped.wick"
    write(bad, flip(old, #old))
    assert_error_has(function() return wick.load(bad) end, bad, "checksum mismatch in storage", "crc32 expected")
    assert.is_true(wick.is_tensor(wick.load(bad, { verify = false }).w))
  end)

  it("files without checksums load; verify = true demands them", function()
    local path = "spec/fixtures/saved_on_cuda.wick" -- written before checksums existed
    assert.are.same({ 7, 8 }, wick.load(path, { map_location = "cpu" }).bias:totable())
    assert_error_has(function() return wick.load(path, { map_location = "cpu", verify = true }) end,
      path, "saved without a checksum")
    local st = "spec/fixtures/from_python.safetensors" -- plain safetensors: no checksums anywhere
    assert.are.same({ 1, -2, 3 }, wick.load(st).ids:totable())
    assert.are.same({ 1, -2, 3 }, wick.load(st, { verify = false }).ids:totable())
    assert_error_has(function() return wick.load(st, { verify = true }) end, st, "carries no checksums")
  end)
end)

describe("temporary files of wick.save", function()
  local function capture(cmd) local p = io.popen(cmd); local s = p:read("*a"); p:close(); return (s:gsub("%s+$", "")) end
  local function listing(d)
    local names = {}
    for name in io.popen("ls -A " .. d):lines() do names[#names + 1] = name end
    table.sort(names)
    return names
  end
  local function fresh(name) local d = dir .. "/" .. name; os.execute("rm -rf " .. d .. "; mkdir -p " .. d); return d end
  local function pid() -- this process's (opened by this process, /proc/self is this process)
    local f = assert(io.open("/proc/self/stat"))
    local id = f:read("*l"):match("^(%d+)")
    f:close()
    return id
  end

  it("never follows a link planted at any name it could have used", function()
    local d = fresh("planted")
    local victim = d .. "/victim"
    write(victim, "precious")
    local target = d .. "/model.wick"
    local me = pid()
    assert.is_truthy(me:match("^%d+$"))
    -- the old scheme's name, its variants, and names of the new pattern
    local planted = { target .. ".tmp-" .. me, target .. ".tmp", target .. "~", d .. "/.model.wick.tmp",
      d .. "/.model.wick.wick-tmp-AAAAAAAAAAAA", d .. "/.model.wick.wick-tmp-" .. me .. "00000000" }
    for _, link in ipairs(planted) do assert.are.equal(0, sh(("ln -s %s %s"):format(victim, link))) end
    for round = 1, 3 do
      wick.save({ round = round, w = wick.ones(1000) }, target)
      assert.are.equal(round, wick.load(target).round)
    end
    assert.are.equal("precious", read(victim))
    for _, link in ipairs(planted) do assert.are.equal(0, sh("test -L " .. link), link) end -- not removed either
    assert.are.equal(#planted + 2, #listing(d)) -- the links, the victim, the checkpoint: no temporary
  end)

  it("replaces a target that is a symbolic link with the file, leaving the link's target alone", function()
    local d = fresh("linked")
    write(d .. "/elsewhere", "precious")
    assert.are.equal(0, sh(("ln -s %s/elsewhere %s/model.wick"):format(d, d)))
    wick.save({ x = 1 }, d .. "/model.wick")
    assert.are.equal("precious", read(d .. "/elsewhere"))
    assert.are_not.equal(0, sh("test -L " .. d .. "/model.wick"))
    assert.are.equal(1, wick.load(d .. "/model.wick").x)
  end)

  it("creates a new file with mode 0666 & ~umask and keeps the mode of a file it replaces", function()
    local d = fresh("modes")
    local script = d .. "/writer.lua"
    write(script, 'require("wick").save({ x = 1 }, arg[1])')
    for umask, mode in pairs({ ["022"] = "644", ["077"] = "600", ["002"] = "664", ["027"] = "640" }) do
      local path = d .. "/u" .. umask .. ".wick"
      assert.are.equal(0, sh(("sh -c 'umask %s; %s %s %s'"):format(umask, runner, script, path)))
      assert.are.equal(mode, capture("stat -c %a " .. path), umask)
    end
    local kept = d .. "/kept.wick"
    wick.save({ x = 1 }, kept)
    os.execute("chmod 640 " .. kept)
    assert.are.equal(0, sh(("sh -c 'umask 000; %s %s %s'"):format(runner, script, kept)))
    assert.are.equal("640", capture("stat -c %a " .. kept))
  end)

  it("removes the temporaries of crashed writers of the same target, and only those", function()
    local d = fresh("stale")
    local target = d .. "/model.wick"
    local stale = { d .. "/.model.wick.wick-tmp-abcdefghijkl", d .. "/.model.wick.wick-tmp-0123456789AB" }
    local kept = {
      d .. "/.model.wick.wick-tmp-abcdefghijk", -- not our pattern: one letter short
      d .. "/.model.wick.wick-tmp-abcdefghijklm", -- one too many
      d .. "/.other.wick.wick-tmp-abcdefghijkl", -- another target's
      d .. "/model.wick.tmp-12345", -- the old scheme's: not ours to judge
      d .. "/.model.wick.wick-tmp-owned0000000", -- another user's
      d .. "/.model.wick.wick-tmp-lockedlocked", -- a live writer's (locked)
    }
    for _, f in ipairs(stale) do write(f, "old") end
    for _, f in ipairs(kept) do write(f, "keep") end
    os.execute("chown 65534 " .. kept[5] .. " 2>/dev/null")
    local foreign = capture("stat -c %u " .. kept[5]) ~= capture("id -u")
    -- a process holding the lock, as a writer does while it writes
    os.execute(("flock %s sleep 30 >/dev/null 2>&1 & echo $! > %s/holder.pid"):format(kept[6], d))
    local holder = read(d .. "/holder.pid"):match("%d+")
    for _ = 1, 50 do -- until the holder has its lock
      if sh("flock -n " .. kept[6] .. " true") ~= 0 then break end
      os.execute("sleep 0.05")
    end
    wick.save({ x = 1 }, target)
    os.execute("kill " .. holder)
    for _, f in ipairs(stale) do assert.are_not.equal(0, sh("test -e " .. f), f) end
    for i, f in ipairs(kept) do
      if i ~= 5 or foreign then assert.are.equal(0, sh("test -e " .. f), f) end
    end
    assert.are.equal(1, wick.load(target).x)
  end)

  it("a writer killed mid-save leaves a temporary that the next save removes", function()
    local d = fresh("crashed")
    local target = d .. "/model.wick"
    local script = d .. "/loop.lua"
    write(script, ([[
      local wick = require("wick")
      local big = wick.randn(3000000)
      for g = 1, 1e9 do wick.save({ generation = g, v = big }, %q) end
    ]]):format(target))
    local left = 0
    for round = 1, 5 do
      sh(("%s %s & pid=$!; sleep 0.%d; kill -9 $pid; wait $pid 2>/dev/null"):format(runner, script, round + 3))
      local now = 0
      for _, name in ipairs(listing(d)) do if name:find("tmp", 1, true) then now = now + 1 end end
      assert.is_true(now <= 1, now) -- each writer removed the ones before it
      left = left + now
    end
    io.stderr:write(("[%d of 5 kills left a temporary] "):format(left))
    wick.save({ generation = -1 }, target)
    for _, name in ipairs(listing(d)) do assert.is_falsy(name:find("tmp", 1, true), name) end
    assert.are.equal(-1, wick.load(target).generation)
  end)

  it("a failed save leaves no temporary", function()
    local d = fresh("failed")
    -- a meta tensor: refused before anything is written
    assert_error_has(function() wick.save({ m = wick.empty(4, { device = "meta" }) }, d .. "/m.wick") end, "meta tensor")
    -- a directory that does not exist
    assert_error_has(function() wick.save({ x = 1 }, d .. "/no/such/dir/m.wick") end, "no/such/dir/m.wick")
    -- the rename fails after the whole file was written: the target is a non-empty directory
    os.execute("mkdir -p " .. d .. "/dir.wick/inside")
    assert_error_has(function() wick.save({ v = wick.ones(100000) }, d .. "/dir.wick") end, "dir.wick", "cannot replace")
    -- a path that names no file
    assert_error_has(function() wick.save({ x = 1 }, d .. "/") end, "not a file name")
    assert.are.same({ "dir.wick" }, listing(d))
  end)
end)

describe("wick.load reads storages into memory unless mmap = true", function()
  it("a file cut short or rewritten after the load changes nothing (torch.load's default)", function()
    local path = dir .. "/cut.wick"
    wick.save({ w = wick.ones(100000) }, path)
    local r = wick.load(path)
    local f = assert(io.open(path, "w"))
    f:write("x")
    f:close()
    assert.are.equal(100000, r.w:sum():item()) -- a mapping would fault here (SIGBUS)
  end)

  it("with mmap = true the tensors map the file: a rewrite of the same size shows", function()
    local path = dir .. "/mapped.wick"
    wick.save({ w = wick.ones(1024) }, path)
    local r = wick.load(path, { mmap = true })
    local again = wick.load(path) -- read: keeps its values
    local f = assert(io.open(path, "r+b"))
    local size = f:seek("end")
    f:seek("set", size - 4096) -- the storage: the last 4 KiB (1024 float32 ones)
    f:write(string.rep("\0", 4096))
    f:close()
    assert.are.equal(0, r.w:sum():item())
    assert.are.equal(1024, again.w:sum():item())
  end)
end)

describe("wick.save into a path that is not a regular file", function()
  it("writes through /dev/null (torch.save's idiom) and leaves the device node in place", function()
    wick.save({ w = wick.ones(3) }, "/dev/null")
    wick.save_safetensors({ w = wick.ones(3) }, "/dev/null")
    local ok = os.execute("test -c /dev/null")
    assert.is_true(ok == true or ok == 0)
  end)
end)

describe("a crafted 0-dim view past its storage (found by the native fuzzer)", function()
  it("is refused by the view check, not read past the storage", function()
    local path = dir .. "/offset.wick"
    wick.save({ x = wick.ones(1) }, path)
    local bytes = read(path)
    local n = 0
    for i = 8, 1, -1 do n = n * 256 + bytes:byte(i) end
    local header, rest = bytes:sub(9, 8 + n), bytes:sub(9 + n)
    -- x: a 0-dim view of its 1-element storage at offset 1
    local crafted, count = header:gsub('\\"offset\\":0,\\"shape\\":%[%]', '\\"offset\\":1,\\"shape\\":[]')
    if count == 0 then -- x saved as a 1-D tensor: make its view 0-dim at offset 1
      crafted, count = header:gsub('\\"offset\\":0,\\"shape\\":%[1%],\\"storage\\":\\"s1\\",\\"strides\\":%[1%]',
        '\\"offset\\":1,\\"shape\\":[],\\"storage\\":\\"s1\\",\\"strides\\":[]')
    end
    assert.are.equal(1, count, "the header has the expected form: " .. header)
    write(path, u64(#crafted) .. crafted .. rest)
    assert_error_has(function() wick.load(path) end, "reaches element 1, outside its storage of 1 elements")
  end)
end)
