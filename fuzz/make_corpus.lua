-- Writes the seed corpora of the fuzz targets (fuzz/README.md):
--   build/wick fuzz/make_corpus.lua
-- fuzz/corpus/native: wick.save outputs; fuzz/corpus/safetensors: wick.save_safetensors
-- outputs; both plus the checkpoints in spec/fixtures, and fuzz/corpus/pytorch:
-- spec/fixtures/pt_*.pt; fuzz/corpus/flat: the safetensors seeds again (for
-- wick_load_flat); fuzz/corpus/idx: small IDX files, plain and gzipped. Values
-- come from arange, so a rerun writes the same bytes. (native/old_crc32_*.wick
-- was written by wick.save before CRC-32C, with zlib CRC-32s; kept by hand.)
local wick = require("wick")

local root = (arg and arg[0] or "fuzz/make_corpus.lua"):gsub("[^/]*$", "") .. ".."
local corpus = root .. "/fuzz/corpus"
local fixtures = root .. "/spec/fixtures"
for _, d in ipairs({ "native", "safetensors", "pytorch", "numpy", "flat", "idx" }) do os.execute(("mkdir -p '%s/%s'"):format(corpus, d)) end

local function copy(from, to)
  local f = assert(io.open(from, "rb"))
  local data = f:read("*a")
  f:close()
  f = assert(io.open(to, "wb"))
  f:write(data)
  f:close()
end

local DTYPES = { "float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool" }
local function seq(n, dtype) return (wick.arange(n) - n / 3):to(dtype or "float32") end

-- ---- native: wick.save ----
local native = {}
native.scalars = { n = 1.5, i = 42, neg = -3, tiny = 1e-300, nan = 0 / 0, inf = math.huge, ninf = -math.huge,
  s = "hello", empty = "", utf8 = "h\195\169", b = true, f = false }
native.nested = { a = { b = { c = { 1, 2, 3 } } }, list = { "x", "y", { z = true } }, [1] = "one", [2.5] = "float key" }
native.bare_number = 3.25
native.bare_string = "just a string"
native.bare_tensor = seq(6):view(2, 3)
local all = {}
for _, d in ipairs(DTYPES) do
  all[d] = seq(5, d)
  native["dtype_" .. d] = { t = seq(4, d):view(2, 2) }
end
native.every_dtype = all
local base = seq(12):view(3, 4)
native.shared_views = { base = base, row = base:select(1, 2), cols = base:narrow(2, 2, 2), t = base:t(), again = base }
native.non_contiguous = base:t()
native.offset_view = { v = seq(10):narrow(1, 3, 4) }
native.zero_dim = { x = wick.tensor(3.5), i = wick.tensor(7, { dtype = "int64" }) }
native.empty = { e = wick.zeros(0), e3 = wick.zeros(2, 0, 3), i = wick.zeros(0, { dtype = "int32" }) }
native.expanded = { x = wick.ones(1):expand(5), y = seq(3):view(3, 1):expand(3, 4) }
native.state_dict = { ["fc1.weight"] = seq(12):view(4, 3), ["fc1.bias"] = seq(4), ["fc2.weight"] = seq(8):view(2, 4),
  ["fc2.bias"] = seq(2), epoch = 3, lr = 0.1, name = "mlp" }
for name, value in pairs(native) do wick.save(value, ("%s/native/%s.wick"):format(corpus, name)) end
wick.save({ w = seq(4), b = seq(2, "float64") }, corpus .. "/native/location_cuda.wick",
  { location = function() return "cuda:1" end })
copy(fixtures .. "/saved_on_cuda.wick", corpus .. "/native/saved_on_cuda.wick")

-- ---- plain safetensors: wick.save_safetensors ----
local st = {}
st.one = { weight = seq(6):view(2, 3) }
st.every_dtype = all
for _, d in ipairs(DTYPES) do st["dtype_" .. d] = { x = seq(3, d) } end
st.zero_dim = { s = wick.tensor(2.5) }
st.empty = { e = wick.zeros(0), e2 = wick.zeros(3, 0) }
st.non_contiguous = { t = base:t() }
st.several = { a = seq(2), b = seq(3, "int64"), c = seq(4, "uint8"), ["d.e.f"] = seq(2, "float16") }
for name, value in pairs(st) do wick.save_safetensors(value, ("%s/safetensors/%s.safetensors"):format(corpus, name)) end
copy(fixtures .. "/from_python.safetensors", corpus .. "/safetensors/from_python.safetensors")
for name in pairs(st) do
  copy(("%s/safetensors/%s.safetensors"):format(corpus, name), ("%s/flat/%s.safetensors"):format(corpus, name))
end
copy(fixtures .. "/from_python.safetensors", corpus .. "/flat/from_python.safetensors")

-- ---- IDX files (wick_read_idx): magic 0 0 8 ndim, big-endian sizes, bytes ----
local function be32(n) return string.char(math.floor(n / 16777216) % 256, math.floor(n / 65536) % 256, math.floor(n / 256) % 256, n % 256) end
local idx = {
  labels = "\0\0\8\1" .. be32(5) .. "\0\1\2\3\4",
  images = "\0\0\8\3" .. be32(2) .. be32(3) .. be32(2) .. ("\7"):rep(12),
  four_d = "\0\0\8\4" .. be32(1) .. be32(2) .. be32(1) .. be32(2) .. "abcd",
}
for name, bytes in pairs(idx) do
  local path = ("%s/idx/%s.idx"):format(corpus, name)
  local f = assert(io.open(path, "wb"))
  f:write(bytes)
  f:close()
  os.execute(("gzip -n -c '%s' > '%s.gz'"):format(path, path))
end

-- ---- PyTorch zip checkpoints (tools/make_pt_fixtures.py made them) ----
for _, name in ipairs({ "pt_state_dict", "pt_mixed", "pt_malicious", "pt_objects" }) do
  copy(("%s/%s.pt"):format(fixtures, name), ("%s/pytorch/%s.pt"):format(corpus, name))
end

-- ---- NumPy's .npy and .npz (np_arrays.py made the fixtures; these are written byte by byte) ----
local function u16(n) return string.char(n % 256, math.floor(n / 256) % 256) end
local function npy(descr, shape, fortran, data, version)
  version = version or 1
  local text = ("{'descr': '%s', 'fortran_order': %s, 'shape': %s, }"):format(descr, fortran and "True" or "False", shape)
  local lead = 6 + 2 + (version == 1 and 2 or 4)
  text = text .. (" "):rep((64 - (lead + #text + 1) % 64) % 64) .. "\n"
  return "\147NUMPY" .. string.char(version, 0) .. u16(#text) .. (version == 1 and "" or u16(0)) .. text .. data
end
local np = {
  f4 = npy("<f4", "(2, 3)", false, seq(6):tobytes()),
  f8_fortran = npy("<f8", "(3, 2)", true, seq(6, "float64"):tobytes()),
  i8_v2 = npy("<i8", "(4,)", false, seq(4, "int64"):tobytes(), 2),
  scalar = npy("<f2", "()", false, seq(1, "float16"):tobytes()),
  empty = npy("|b1", "(0, 5)", false, ""),
  c8 = npy("<c8", "(2,)", false, seq(4):tobytes()),
}
for name, bytes in pairs(np) do
  local f = assert(io.open(("%s/numpy/%s.npy"):format(corpus, name), "wb"))
  f:write(bytes)
  f:close()
end
copy(fixtures .. "/np_arrays.npy", corpus .. "/numpy/np_arrays.npy")
copy(fixtures .. "/np_arrays.npz", corpus .. "/numpy/np_arrays.npz")

print("wrote the seed corpora under " .. corpus)
