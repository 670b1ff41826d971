-- wick.load of NumPy's files (docs/checkpoint-format.md, "NumPy arrays"): the
-- fixtures np_arrays.npy / .npz written by numpy itself (spec/fixtures/np_arrays.py),
-- and files written here byte by byte, good and damaged.
local wick = require("wick")
local support = require("spec.support")

local TMP = os.tmpname()

local function write(path, bytes)
  local f = assert(io.open(path, "wb"))
  f:write(bytes)
  f:close()
end

local function u16(n) return string.char(n % 256, math.floor(n / 256) % 256) end
-- an .npy file: version 1 header `dict` padded as numpy pads it, then `data`
local function npy(dict, data, version)
  version = version or 1
  local lead = 6 + 2 + (version == 1 and 2 or 4)
  local text = dict
  local total = lead + #text + 1
  text = text .. string.rep(" ", (64 - total % 64) % 64) .. "\n"
  local len = version == 1 and u16(#text) or (u16(#text) .. u16(0))
  return "\147NUMPY" .. string.char(version, 0) .. len .. text .. data
end
local function header(descr, shape, fortran)
  return ("{'descr': '%s', 'fortran_order': %s, 'shape': %s, }"):format(descr, fortran and "True" or "False", shape)
end

describe("wick.load of NumPy files", function()
  after_each(function() os.remove(TMP) end)

  it("reads np.save's Fortran-order float64 array", function()
    local t = wick.load("spec/fixtures/np_arrays.npy")
    assert.are.equal("float64", t.dtype)
    assert.are.same({ { 0, 0.25, 0.5 }, { 0.75, 1, 1.25 } }, t:totable())
  end)

  it("reads np.savez's archive as an OrderedDict of its arrays, in the archive's order", function()
    local d = wick.load("spec/fixtures/np_arrays.npz")
    local names = {}
    for k in d:keys() do names[#names + 1] = k end
    assert.are.same({ "x", "mask", "w" }, names)
    assert.are.equal("int64", d.x.dtype)
    assert.are.same({ -2, -1, 0, 1, 2 }, d.x:totable())
    assert.are.same({ { true, false }, { false, true } }, d.mask:totable())
    assert.are.equal("float32", d.w.dtype)
    assert.are.same({ 3, 2 }, d.w.shape)
    assert.is_true(math.abs(d.w[3][2]:item() - 1) < 1e-7)
    local m = wick.load("spec/fixtures/np_arrays.npz", { map_location = "meta" })
    assert.are.equal("meta", m.x.device.type)
  end)

  it("reads every supported dtype, 0-dim and empty arrays, and format version 2", function()
    local cases = {
      { "<f4", wick.tensor({ 1.5, -2 }) },
      { "<f2", wick.tensor({ 1.5, -2 }, { dtype = "float16" }) },
      { "<i4", wick.tensor({ 7, -8 }, { dtype = "int32" }) },
      { "|u1", wick.tensor({ 7, 200 }, { dtype = "uint8" }) },
      { "<c8", wick.complex(wick.tensor({ 1, 2 }), wick.tensor({ 3, -4 })) },
    }
    for _, c in ipairs(cases) do
      write(TMP, npy(header(c[1], "(2,)"), c[2]:tobytes()))
      local t = wick.load(TMP)
      assert.are.equal(c[2].dtype, t.dtype)
      assert.is_true(t:eq(c[2]):all())
    end
    write(TMP, npy(header("<f8", "()"), wick.tensor(3.25, { dtype = "float64" }):tobytes()))
    local s = wick.load(TMP)
    assert.are.equal(0, s:dim())
    assert.are.equal(3.25, s:item())
    write(TMP, npy(header("<i8", "(0, 3)"), ""))
    assert.are.same({ 0, 3 }, wick.load(TMP).shape)
    write(TMP, npy(header("<f8", "(2, 2)"), wick.tensor({ { 1, 2 }, { 3, 4 } }, { dtype = "float64" }):tobytes(), 2))
    assert.are.same({ { 1, 2 }, { 3, 4 } }, wick.load(TMP):totable())
  end)

  it("refuses what it cannot read with an error that says why", function()
    local four = string.rep("\0", 4)
    local cases = {
      { npy(header("<i2", "(2,)"), four), "dtype '<i2' has no wick dtype" },
      { npy(header(">f4", "(1,)"), four), "big-endian" },
      { npy(header("|O", "(1,)"), "\0\0\0\0\0\0\0\0"), "Python objects" },
      { npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", four), "structured array" },
      { npy(header("<f4", "(2,)"), four), "the data is 4 bytes, but the header's shape and dtype need 8" },
      { npy(header("<f4", "(1,)"), four .. "x"), "the data is 5 bytes" },
      { npy(header("<f4", "(99999999999, 99999999999, 99999999999)"), four), "sizes overflow" },
      { npy(header("<f4", "(0, 4611686018427387904, 4611686018427387904)"), ""), "sizes overflow" }, -- (no elements)
      { npy("{'descr': '<f4', 'shape': (1,), }", four), "descr, fortran_order and shape are required" },
      { npy("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,), }", four), "fortran_order" },
      { npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1}", four), "the key 'extra'" },
      { npy("[1, 2]", four), "not a dict" },
      { "\147NUMPY\1\0\255\255{", "its length runs past the file" },
      { "\147NUMPY\9\0\0\0", "unsupported .npy format version 9" },
    }
    for _, c in ipairs(cases) do
      write(TMP, c[1])
      support.assert_error_has(function() return wick.load(TMP) end, c[2])
    end
  end)

  it("checks an archive entry's CRC-32 unless verify is false", function()
    local f = assert(io.open("spec/fixtures/np_arrays.npz", "rb"))
    local bytes = f:read("*a")
    f:close()
    -- the first entry's data (x: 5 int64, -2..2) ends with 2 as int64; make it 3
    local at = bytes:find("\2\0\0\0\0\0\0\0", 1, true)
    assert.truthy(at)
    write(TMP, bytes:sub(1, at - 1) .. "\3" .. bytes:sub(at + 1))
    support.assert_error_has(function() return wick.load(TMP) end, "CRC-32 mismatch in 'x.npy'")
    assert.are.equal(3, wick.load(TMP, { verify = false }).x[5]:item())
  end)
end)
