-- PyTorch checkpoints (torch.save's zip format) through wick.load: the fixtures
-- written by tools/make_pt_fixtures.py, and hostile or damaged files, which must
-- raise an error naming the file and never run anything.
local wick = require("wick")
local support = require("spec.support")
local assert_close, assert_error_has = support.assert_close, support.assert_error_has
local nn = wick.nn
local core = wick._core

local FIX = "spec/fixtures/"
local expected = dofile(FIX .. "pt_state_dict_expected.lua")
local dir = os.tmpname()
os.remove(dir)
os.execute("mkdir -p " .. dir)

local function read(path) local f = assert(io.open(path, "rb")); local s = f:read("*a"); f:close(); return s end
local function write(path, s) local f = assert(io.open(path, "wb")); f:write(s); f:close() end
local function le(n, k) local b = {} for i = 1, k do b[i] = string.char(n % 256); n = math.floor(n / 256) end return table.concat(b) end
local function crc(s) return core.storage_crc32(core.from_bytes(s, "uint8", { #s })) end

-- A stored (method 0) zip archive of {name, bytes} pairs, as torch.save writes;
-- with zip64, every size and offset goes through the zip64 extra field and end
-- records, as in archives over 4 GB.
local function zip(files, zip64)
  local FF, FFFF = le(0xFFFF, 2), le(0xFFFFFFFF, 4)
  local body, cd = {}, {}
  local offset = 0
  for _, f in ipairs(files) do
    local name, data = f[1], f[2]
    local c = crc(data)
    local sizes = zip64 and FFFF .. FFFF or le(#data, 4) .. le(#data, 4)
    local local_extra = zip64 and le(1, 2) .. le(16, 2) .. le(#data, 8) .. le(#data, 8) or ""
    local head = "PK\3\4" .. le(45, 2) .. le(0, 2) .. le(0, 2) .. le(0, 4) .. le(c, 4) .. sizes
      .. le(#name, 2) .. le(#local_extra, 2) .. name .. local_extra
    local cd_extra = zip64 and le(1, 2) .. le(24, 2) .. le(#data, 8) .. le(#data, 8) .. le(offset, 8) or ""
    cd[#cd + 1] = "PK\1\2" .. le(45, 2) .. le(45, 2) .. le(0, 2) .. le(0, 2) .. le(0, 4) .. le(c, 4) .. sizes
      .. le(#name, 2) .. le(#cd_extra, 2) .. le(0, 2) .. le(0, 2) .. le(0, 2) .. le(0, 4)
      .. (zip64 and FFFF or le(offset, 4)) .. name .. cd_extra
    body[#body + 1] = head .. data
    offset = offset + #head + #data
  end
  local cds = table.concat(cd)
  local tail = ""
  if zip64 then
    local record = "PK\6\6" .. le(44, 8) .. le(45, 2) .. le(45, 2) .. le(0, 4) .. le(0, 4) .. le(#files, 8)
      .. le(#files, 8) .. le(#cds, 8) .. le(offset, 8)
    tail = record .. "PK\6\7" .. le(0, 4) .. le(offset + #cds, 8) .. le(1, 4)
  end
  local count = zip64 and FF or le(#files, 2)
  return table.concat(body) .. cds .. tail .. "PK\5\6" .. le(0, 2) .. le(0, 2) .. count .. count
    .. (zip64 and FFFF .. FFFF or le(#cds, 4) .. le(offset, 4)) .. le(0, 2)
end

-- A checkpoint whose data.pkl is `pkl` (protocol 2 framing added).
local function pt_with(name, pkl, extra, zip64)
  local path = dir .. "/" .. name .. ".pt"
  local files = { { "archive/data.pkl", "\128\2" .. pkl .. "." } }
  for _, f in ipairs(extra or {}) do files[#files + 1] = f end
  write(path, zip(files, zip64))
  return path
end

describe("a PyTorch state dict", function()
  local sd = wick.load(FIX .. "pt_state_dict.pt")

  it("loads every tensor with PyTorch's values, shapes and dtype", function()
    local n = 0
    for k, v in pairs(expected.state) do
      n = n + 1
      assert.is_true(wick.is_tensor(sd[k]), k)
      assert.are.equal("float32", sd[k].dtype)
      assert.are.equal("cpu", sd[k].device.type)
      assert_close(sd[k], v, 1e-7)
    end
    local got = 0
    for _ in pairs(sd) do got = got + 1 end
    assert.are.equal(4, n)
    assert.are.equal(n, got)
  end)

  it("from_pytorch_names renumbers the children, and the model gives PyTorch's outputs", function()
    local renamed = nn.utils.from_pytorch_names(sd)
    assert.are.equal(sd["0.weight"], renamed["1.weight"])
    assert.are.equal(sd["2.bias"], renamed["3.bias"])
    assert.is_nil(renamed["0.weight"])
    local model = nn.Sequential(nn.Linear(3, 2), nn.ReLU(), nn.Linear(2, 1))
    model:load_state_dict(renamed)
    local y = model(wick.tensor(expected.input))
    assert_close(y, expected.output, 1e-6)
  end)

  it("honours map_location as a function, called once per storage with its saved location", function()
    local calls = {}
    local r = wick.load(FIX .. "pt_state_dict.pt", { map_location = function(s, loc)
      calls[#calls + 1] = loc
      return s * 2
    end })
    assert.are.equal(4, #calls)
    for _, loc in ipairs(calls) do assert.are.equal("cpu", loc) end
    assert_close(r["0.bias"], { expected.state["0.bias"][1] * 2, expected.state["0.bias"][2] * 2 }, 1e-7)
    r = wick.load(FIX .. "pt_state_dict.pt", { map_location = "cpu" })
    assert_close(r["2.weight"], expected.state["2.weight"], 1e-7)
  end)
end)

describe("a PyTorch checkpoint of mixed values", function()
  local m = wick.load(FIX .. "pt_mixed.pt")

  it("loads tensors of every dtype", function()
    assert.are.equal("int64", m.long.dtype)
    assert.are.same({ 1, -2, 3, 2 ^ 40 }, m.long:totable())
    assert.are.equal("float64", m.double.dtype)
    assert.are.same({ { 0.5, -1.25 }, { 3.0, 1e-3 } }, m.double:totable())
    assert.are.equal("int32", m.nested.b.c.dtype)
    assert.are.same({ 7, 8 }, m.nested.b.c:totable())
    assert.are.equal("uint8", m.bytes_t.dtype)
    assert.are.same({ 1, 255 }, m.bytes_t:totable())
    assert.are.equal("bool", m.bools.dtype)
    assert.are.same({ true, false }, m.bools:totable())
    assert.are.equal("float16", m.half.dtype)
    assert.are.same({ 1.5, -2.0 }, m.half:totable())
  end)

  it("keeps a transposed view sharing storage with its base", function()
    assert.are.same({ { 0, 1, 2 }, { 3, 4, 5 } }, m.base:totable())
    assert.are.same({ { 0, 3 }, { 1, 4 }, { 2, 5 } }, m.transposed:totable())
    assert.is_true(m.transposed:is_same_storage(m.base))
    assert.is_false(m.transposed:is_contiguous())
    wick.no_grad(function() m.base:fill_(9) end)
    assert.are.same({ { 9, 9 }, { 9, 9 }, { 9, 9 } }, m.transposed:totable())
  end)

  it("loads lists, tuples, nested dicts, numbers, strings, booleans and None", function()
    assert.are.same({ 1, 2.5, "three" }, m.list)
    assert.are.same({ 4, "five", true }, m.tuple)
    assert.are.equal(1, m.nested.a)
    assert.are.equal(42, m.int)
    assert.are.equal(-(2 ^ 40), m.big)
    assert.are.equal(0.125, m.float)
    assert.are.equal("hello", m.string)
    assert.are.equal(true, m.flag)
    assert.are.equal(false, m.off)
    assert.is_nil(m.nothing)
  end)
end)

describe("a hostile PyTorch checkpoint", function()
  it("is refused when its pickle calls os.system, and nothing runs", function()
    os.remove("/tmp/wick_pwned")
    local path = FIX .. "pt_malicious.pt"
    assert_error_has(function() return wick.load(path) end,
      "refusing to load posix.system from " .. path .. ": only tensors, containers, numbers and strings are loaded")
    assert.is_nil(io.open("/tmp/wick_pwned", "r"))
  end)

  it("is refused for any global outside the allowlist (GLOBAL and STACK_GLOBAL)", function()
    local p1 = pt_with("eval_global", "cbuiltins\neval\n(X\5\0\0\0" .. "1 + 1tR")
    assert_error_has(function() return wick.load(p1) end, "refusing to load builtins.eval from " .. p1)
    local p2 = pt_with("eval_stack", "\140\8builtins\140\4exec\147(X\1\0\0\0xtR")
    assert_error_has(function() return wick.load(p2) end, "refusing to load builtins.exec from " .. p2)
    local p3 = pt_with("torch_load", "ctorch\nload\n(X\1\0\0\0xtR")
    assert_error_has(function() return wick.load(p3) end, "refusing to load torch.load from " .. p3)
  end)

  it("loads other classes' instances as tables of their state with weights_only = false, running nothing", function()
    -- Swin's torch.save({'model': ..., 'config': config}): pickle.dumps({"cfg": yacs CfgNode(a=1, b={"c": 2}),
    -- "args": argparse.Namespace(lr=0.1, name="x"), "acc": np.float64(0.5), "i": np.int32(-3), "flag":
    -- np.bool_(True), "f": np.float32(0.25), "nt": namedtuple NT(1, 2), "s": {7}, "raw": b"\x00\xff"},
    -- protocol=2), less its PROTO and STOP
    local p = pt_with("objects",
      "}q\000(X\003\000\000\000cfgq\001cyacs.config\010CfgNode\010q\002)\129q\003(X\001\000\000\000aq" ..
      "\004K\001X\001\000\000\000bq\005}q\006X\001\000\000\000cq\007K\002su}q\008X\006\000\000\000froze" ..
      "nq\009\137sbX\004\000\000\000argsq\010cargparse\010Namespace\010q\011)\129q\012}q\013(X\002\000" ..
      "\000\000lrq\014G?\185\153\153\153\153\153\154X\004\000\000\000nameq\015X\001\000\000\000xq\016ub" ..
      "X\003\000\000\000accq\017cnumpy._core.multiarray\010scalar\010q\018cnumpy\010dtype\010q\019X\002" ..
      "\000\000\000f8q\020\137\136\135q\021Rq\022(K\003X\001\000\000\000<q\023NNNJ\255\255\255\255J\255" ..
      "\255\255\255K\000tq\024bc_codecs\010encode\010q\025X\009\000\000\000\000\000\000\000\000\000\195" ..
      "\160?q\026X\006\000\000\000latin1q\027\134q\028Rq\029\134q\030Rq\031X\001\000\000\000iq h\018h" ..
      "\019X\002\000\000\000i4q!\137\136\135q\034Rq#(K\003h\023NNNJ\255\255\255\255J\255\255\255\255K" ..
      "\000tq$bh\025X\008\000\000\000\195\189\195\191\195\191\195\191q%h\027\134q&Rq'\134q(Rq)X\004\000" ..
      "\000\000flagq*h\018h\019X\002\000\000\000b1q+\137\136\135q,Rq-(K\003X\001\000\000\000|q.NNNJ\255" ..
      "\255\255\255J\255\255\255\255K\000tq/bh\025X\001\000\000\000\001q0h\027\134q1Rq2\134q3Rq4X\001" ..
      "\000\000\000fq5h\018h\019X\002\000\000\000f4q6\137\136\135q7Rq8(K\003h\023NNNJ\255\255\255\255J" ..
      "\255\255\255\255K\000tq9bh\025X\005\000\000\000\000\000\194\128>q:h\027\134q;Rq<\134q=Rq>X\002" ..
      "\000\000\000ntq?cdemo\010NT\010q@K\001K\002\134qA\129qBX\001\000\000\000sqCc__builtin__\010set" ..
      "\010qD]qEK\007a\133qFRqGX\003\000\000\000rawqHh\025X\003\000\000\000\000\195\191qIh\027\134qJRqK" ..
      "u")
    assert_error_has(function() return wick.load(p) end, "refusing to load yacs.config.CfgNode from " .. p)
    assert_error_has(function() return wick.load(p) end, "{weights_only = false}")
    local o = wick.load(p, { weights_only = false })
    assert.are.same({ __class__ = "yacs.config.CfgNode", a = 1, b = { c = 2 }, frozen = false }, o.cfg)
    assert.are.same({ __class__ = "argparse.Namespace", lr = 0.1, name = "x" }, o.args)
    assert.are.same({ 0.5, -3, true, 0.25 }, { o.acc, o.i, o.flag, o.f })
    assert.are.same({ __class__ = "demo.NT", 1, 2 }, o.nt)
    assert.are.same({ 7 }, o.s)
    assert.are.equal("\0\255", o.raw)
    -- a torch.save'd training checkpoint (tools/make_pt_fixtures.py objects): numpy's arrays as tensors
    -- of their dtype (torch.from_numpy's), those of a dtype wick lacks as nested lists
    local ck = wick.load(FIX .. "pt_objects.pt", { weights_only = false })
    assert.are.same({ 0, 1, 2 }, ck.model.w:totable())
    assert.are.same({ 0.1, "x", 0.5, 7 }, { ck.args.lr, ck.args.name, ck.best_acc, ck.epoch })
    assert.are.same({ { 0, 1 }, "float64", { "a" } }, { ck.mean:tolist(), ck.mean.dtype, ck.tags })
    local a = ck.arrays
    assert.are.same({ "float32", { { 0, 1, 2 }, { 3, 4, 5 } } }, { a.f32_fortran.dtype, a.f32_fortran:tolist() })
    assert.are.same({ "int32", { 5, -6 } }, { a.i32.dtype, a.i32:tolist() })
    assert.are.same({ "bool", { true, false } }, { a.b.dtype, a.b:tolist() })
    assert.are.same({ "complex128", 1, 2 }, { a.c128.dtype, a.c128.real[1]:item(), a.c128.imag[1]:item() })
    assert.are.same({ "float64", { 0, 3 } }, { a.empty.dtype, a.empty:size():totable() })
    assert.are.same({ 0, 2.5 }, { a.zero_dim:dim(), a.zero_dim:item() })
    assert.are.same({ 7, -8 }, a.i16)
    assert.is_true(rawequal(ck.mean, wick.from_numpy(ck.mean))) -- (torch.from_numpy(arr): shares)
    assert_error_has(function() return wick.from_numpy({ 1, 2 }) end, "from_numpy: expected a numpy array", "Lua has no NumPy")
    assert_error_has(function() return wick.load(FIX .. "pt_objects.pt") end, "refusing to load argparse.Namespace")
    -- the hostile fixture's os.system('touch /tmp/wick_pwned') is data too: nothing runs
    os.remove("/tmp/wick_pwned")
    local m = wick.load(FIX .. "pt_malicious.pt", { weights_only = false })
    assert.is_nil(io.open("/tmp/wick_pwned", "r"))
    assert.is_truthy(next(m) ~= nil)
    local e = wick.load(pt_with("eval_data", "cbuiltins\neval\n(X\5\0\0\0" .. "1 + 1tR"), { weights_only = false })
    assert.are.same({ __class__ = "builtins.eval", "1 + 1" }, e)
    -- bytes that are not latin-1 text, and NEWOBJ on something that is not a class, are corrupt
    assert_error_has(function()
      return wick.load(pt_with("bad_latin1", "c_codecs\nencode\nX\2\0\0\0\226\130X\6\0\0\0latin1\134R"), { weights_only = false })
    end, "not latin-1")
    assert_error_has(function() return wick.load(pt_with("newobj_num", "K\1)\129"), { weights_only = false }) end,
      "NEWOBJ on something that is not a class")
  end)

  it("refuses unknown opcodes, bad lengths, missing memo entries and missing storages", function()
    local cases = {
      { "opcode", "}\255", "unsupported pickle opcode 0xff" },
      { "length", "X\255\255\0\0ab", "truncated pickle" },
      { "memo", "h\7", "memo entry 7 is missing" },
      { "stop", "}}", "STOP with 2 items" },
      { "nostop_empty", "", "STOP with 0 items" },
      { "pop", "s", "empty stack" },
      { "storage", "(X\7\0\0\0storagectorch\nFloatStorage\nX\1\0\0\0" .. "0X\3\0\0\0cpuK\2tQ",
        "lacks the storage 'archive/data/0'" },
      { "setitem", "]K\1K\2s", "not a dict" },
    }
    for _, c in ipairs(cases) do
      local p = pt_with(c[1], c[2])
      assert_error_has(function() return wick.load(p) end, p, c[3])
    end
  end)

  it("keeps what the pickle's memo shares, even a container that holds itself", function()
    local shared = wick.load(pt_with("shared", "}q\0h\0\134")) -- (d, d): one dict twice
    assert.are.equal(2, #shared)
    assert.is_true(rawequal(shared[1], shared[2]))
    local l = wick.load(pt_with("cycle", "]2a")) -- a list appended to itself
    assert.is_true(rawequal(l, l[1]))
    local d = wick.load(pt_with("dict_cycle", "}q\0X\1\0\0\0ah\0s"))
    assert.is_true(rawequal(d, d.a))
    -- x(i+1) = (x(i), x(i)): 41 values in 2^40 places, each made and converted once
    local x = wick.load(pt_with("chain", "}" .. ("q\0h\0\134"):rep(40)))
    for _ = 1, 40 do assert.is_true(rawequal(x[1], x[2])); x = x[1] end
    assert.are.same({}, x)
  end)

  it("loads a dict of int keys (an optimizer's state) as an OrderedDict in the file's order; a list stays a list", function()
    -- {1: {"step": 3}, 0: {"step": 4}}
    local d = wick.load(pt_with("int_keys", "}K\1}X\4\0\0\0stepK\3ssK\0}X\4\0\0\0stepK\4ss"))
    assert.is_true(wick.isinstance(d, wick.OrderedDict))
    assert.are.equal(2, d:len())
    local keys = {}
    for k, v in d:items() do keys[#keys + 1] = k .. "=" .. v.step end
    assert.are.same({ "1=3", "0=4" }, keys)
    local l = wick.load(pt_with("list", "](K\5K\6e")) -- [5, 6]
    assert.are.same({ 5, 6 }, l)
    assert.is_nil(getmetatable(l))
  end)

  it("loads boolean keys; a key whose last value is None is absent (Lua's nil), as before", function()
    assert.are.same({ [true] = 1, [false] = 2 }, wick.load(pt_with("bool_keys", "}\136K\1s\137K\2s")))
    assert.are.same({ b = 2 }, wick.load(pt_with("none_after", "}X\1\0\0\0aK\1sX\1\0\0\0bK\2sX\1\0\0\0aNs")))
  end)

  it("bounds the nesting, the marks and the memo's reach", function()
    local p = pt_with("deep", ("]"):rep(3000) .. ("a"):rep(2999))
    assert_error_has(function() return wick.load(p) end, p, "nested deeper than 1000 levels")
    p = pt_with("marks", ("("):rep(100001))
    assert_error_has(function() return wick.load(p) end, p, "more than 100000 open MARKs")
    p = pt_with("memo_far", "K\1r\255\255\255\255j\255\255\255\255j\0\0\0\0")
    assert_error_has(function() return wick.load(p) end, p, "memo entry 0 is missing")
  end)

  it("checks a storage's size and a view's bounds", function()
    local pid = "(X\7\0\0\0storagectorch\nFloatStorage\nX\1\0\0\0" .. "0X\3\0\0\0cpuK\2tQ"
    local four = string.rep("\0", 8)
    local p = pt_with("size", pid, { { "archive/data/0", four .. four } })
    assert_error_has(function() return wick.load(p) end, p, "holds 16 bytes, not 2 elements of float32")
    local view = "ctorch._utils\n_rebuild_tensor_v2\n(" .. pid .. "K\0K\5\133K\1\133\137ccollections\nOrderedDict\n)RtR"
    p = pt_with("bounds", view, { { "archive/data/0", four } })
    assert_error_has(function() return wick.load(p) end, p, "does not fit its storage")
    local ok_view = view:gsub("K\5\133", "K\2\133")
    p = pt_with("fits", ok_view, { { "archive/data/0", four } })
    assert.are.same({ 0, 0 }, wick.load(p):totable())
  end)

  it("reads zip64 archives (the layout torch.save uses past 4 GB)", function()
    local pid = "(X\7\0\0\0storagectorch\nFloatStorage\nX\1\0\0\0" .. "0X\3\0\0\0cpuK\2tQ"
    local view = "ctorch._utils\n_rebuild_tensor_v2\n(" .. pid .. "K\0K\2\133K\1\133\137ccollections\nOrderedDict\n)RtR"
    local bytes = "\0\0\192\63\0\0\0\192" -- 1.5, -2 as little-endian float32
    local p = pt_with("zip64", view, { { "archive/data/0", bytes } }, true)
    assert.are.same({ 1.5, -2 }, wick.load(p):totable())
    assert.are.same({ 1.5, -2 }, wick.load(p, { verify = true }):totable())
    local z = read(p)
    local loc = z:find("PK\6\7", 1, true)
    local q = dir .. "/zip64_badloc.pt"
    write(q, z:sub(1, loc + 7) .. le(#z * 2, 8) .. z:sub(loc + 16))
    assert_error_has(function() return wick.load(q) end, q, "zip64 end record is out of place")
    q = dir .. "/zip64_nolocator.pt"
    write(q, z:sub(1, loc - 1) .. "XXXX" .. z:sub(loc + 4))
    assert_error_has(function() return wick.load(q) end, q, "without a zip64 end record locator")
    q = dir .. "/zip64_noextra.pt"
    local cd = z:find("PK\1\2", 1, true)
    write(q, z:sub(1, cd + 29) .. le(0, 2) .. z:sub(cd + 32)) -- extra length 0: the fields vanish
    assert_error_has(function() return wick.load(q) end, q, "lacks its zip64 sizes")
  end)
end)

describe("a damaged PyTorch zip", function()
  local good = read(FIX .. "pt_state_dict.pt")

  it("raises an error naming the file when truncated", function()
    for _, n in ipairs({ 4, 30, math.floor(#good / 2), #good - 10 }) do
      local p = dir .. "/trunc" .. n .. ".pt"
      write(p, good:sub(1, n))
      assert_error_has(function() return wick.load(p) end, "wick.load: " .. p .. ":")
    end
  end)

  it("detects a flipped byte in the data through the zip's CRC-32 by default; verify = false skips the check", function()
    local at = good:find("pt_state_dict/data/0", 1, true)
    assert.is_truthy(at)
    -- the first storage's bytes start after its local header's name and extra field
    local name_len = good:byte(at - 4) + 256 * good:byte(at - 3)
    local extra_len = good:byte(at - 2) + 256 * good:byte(at - 1)
    local pos = at + name_len + extra_len
    local bad = good:sub(1, pos - 1) .. string.char((good:byte(pos) + 1) % 256) .. good:sub(pos + 1)
    local p = dir .. "/flipped.pt"
    write(p, bad)
    -- checked by default, like wick's own checkpoints
    for _, opts in ipairs({ {}, { verify = true }, { map_location = "cpu" } }) do
      assert_error_has(function() return wick.load(p, opts) end, p, "CRC-32 mismatch in storage 'pt_state_dict/data/0'",
        "the data is corrupt")
    end
    local r = wick.load(p, { verify = false })
    local ok_r = wick.load(FIX .. "pt_state_dict.pt")
    assert.is_true(wick.is_tensor(r["0.weight"]))
    assert.is_false(r["0.weight"]:equal(ok_r["0.weight"])) -- the flipped byte shows
    assert.is_true(wick.is_tensor(wick.load(FIX .. "pt_state_dict.pt", { verify = true })["0.weight"]))
  end)

  it("refuses compressed entries and archives without data.pkl", function()
    local z = zip({ { "archive/data.pkl", "\128\2}." } })
    local cd = z:find("PK\1\2", 1, true)
    local p = dir .. "/deflated.pt"
    write(p, z:sub(1, cd + 9) .. le(8, 2) .. z:sub(cd + 12))
    assert_error_has(function() return wick.load(p) end, p, "compression method 8")
    p = dir .. "/other.pt"
    write(p, zip({ { "readme.txt", "hello" } }))
    assert_error_has(function() return wick.load(p) end, p, "no <name>/data.pkl")
    p = pt_with("empty_dict", "}")
    assert.are.same({}, wick.load(p))
  end)

  it("raises an error when central directory offsets point outside the file", function()
    local eocd = good:find("PK\5\6", 1, true)
    local p = dir .. "/badcd.pt"
    write(p, good:sub(1, eocd + 15) .. le(#good * 4, 4) .. good:sub(eocd + 20))
    assert_error_has(function() return wick.load(p) end, p, "central directory")
  end)
end)
