-- wick.utils.tensorboard.SummaryWriter: the bytes of TensorBoard's event files
-- (TFRecord framing with masked CRC-32C, protobuf messages, PNG images), the
-- writer's buffering and its hostile cases. The expected bytes were made by
-- TensorBoard's own protobuf classes (tensorboard.compat.proto) and its
-- masked_crc32c; ctest tensorboard_read (tests/tensorboard_read.py) reads a
-- whole log folder back with TensorBoard's reader.
local wick = require("wick")
local tb = wick.utils.tensorboard
local core = wick._core
local support = require("spec.support")

local function hex(s) return (s:gsub(".", function(c) return ("%02x"):format(c:byte()) end)) end
local function be32(s, i) return ((s:byte(i) * 256 + s:byte(i + 1)) * 256 + s:byte(i + 2)) * 256 + s:byte(i + 3) end

-- a PNG's width, height, channels and pixel bytes (rows without their filter byte)
local function decode_png(png)
  local pos, idat, w, h, ch = 9, "", nil, nil, nil
  while pos <= #png do
    local n, kind = be32(png, pos), png:sub(pos + 4, pos + 7)
    local body = png:sub(pos + 8, pos + 7 + n)
    assert.are.equal(core.png_crc(kind .. body), be32(png, pos + 8 + n))
    if kind == "IHDR" then
      w, h, ch = be32(body, 1), be32(body, 5), ({ [0] = 1, [2] = 3, [6] = 4 })[body:byte(10)]
    elseif kind == "IDAT" then
      idat = idat .. body
    end
    pos = pos + 12 + n
  end
  local raw, px = core.zlib_inflate(idat, h * (w * ch + 1)), {}
  for y = 0, h - 1 do
    assert.are.equal(0, raw:byte(y * (w * ch + 1) + 1))
    px[#px + 1] = raw:sub(y * (w * ch + 1) + 2, (y + 1) * (w * ch + 1))
  end
  return w, h, ch, table.concat(px)
end

-- the PNG inside an image Summary (tb._summary.image)
local function png_of_summary(s)
  local i = s:find("\137PNG", 1, true)
  return s:sub(i)
end

local records = support.tb_records

local function tmpdir()
  local p = os.tmpname()
  os.remove(p)
  return p .. "_tb"
end
local function ls(dir, pattern)
  local out = {}
  local p = io.popen("ls -1 '" .. dir .. "' 2>/dev/null")
  for line in p:lines() do if not pattern or line:match(pattern) then out[#out + 1] = line end end
  p:close()
  table.sort(out)
  return out
end
local function event_file(dir)
  local files = ls(dir, "^events%.out%.tfevents%.")
  assert.are.equal(1, #files)
  return dir .. "/" .. files[1]
end
local function rm(dir) os.execute("rm -rf '" .. dir .. "'") end

-- f raises an error at this file's line, matching pattern
local function fails(pattern, f)
  local ok, err = pcall(f)
  assert.is_false(ok)
  assert.truthy(tostring(err):match("tensorboard_spec.lua:%d+: " .. pattern), tostring(err))
end

-- runs f with stderr captured: pcall's results, then the lines written there
local function with_warnings(f)
  local real_stderr, warned = io.stderr, {}
  io.stderr = { write = function(_, text) warned[#warned + 1] = text end }
  local ok, err = pcall(f)
  io.stderr = real_stderr
  return ok, err, warned
end

describe("tensorboard bytes", function()
  it("CRC-32C and TFRecord's masked CRC of the test vector", function()
    assert.are.equal(0xE3069283, (core.crc32c("123456789")))
    assert.are.equal(0xc78ab0e5, core.tb_masked_crc("123456789"))
    assert.are.equal(0xCBF43926, core.png_crc("123456789")) -- PNG's CRC-32 (zlib)
  end)

  it("frames the file_version Event as TensorFlow does", function()
    local ev = tb._event(1.5, 0, tb._pb.bytes(3, "brain.Event:2"))
    assert.are.equal("09000000000000f83f1a0d627261696e2e4576656e743a32", hex(ev))
    assert.are.equal("1800000000000000a37f4b22" .. hex(ev) .. "2a28646c", hex(core.tb_record(ev)))
  end)

  it("encodes a scalar Event, negative steps as 10-byte varints", function()
    local s = tb._summary.scalar("loss", 0.5)
    assert.are.equal("09000000000000004010032a0d0a0b0a046c6f7373150000003f",
      hex(tb._event(2.0, 3, tb._pb.bytes(5, s))))
    assert.are.equal("09000000000000004010ffffffffffffffffff012a0d0a0b0a046c6f7373150000003f",
      hex(tb._event(2.0, -1, tb._pb.bytes(5, s))))
    assert.has_error(function() core.pb_varint(0.5) end)
  end)

  it("encodes a text summary as PyTorch's text() does", function()
    assert.are.equal("0a280a0e742f746578745f73756d6d617279420c0807120412020801420268694a080a060a0474657874",
      hex(tb._summary.text("t", "hi")))
  end)

  it("encodes a HistogramProto like PyTorch's make_histogram", function()
    -- bins = 1 over [-1, 3]: one bucket of 2, with the empty one on its left
    assert.are.equal("09000000000000f0bf1100000000000008401900000000000000402100000000000000402900000000000024403210"
      .. "000000000000f0bf00000000000008403a1000000000000000000000000000000040",
      hex(tb._summary.histogram(wick.tensor({ -1, 3 }), 1, "add_histogram")))
  end)

  it("writes PNGs that decode back to the pixels", function()
    local img = wick.tensor({ { { 1, 2, 3 }, { 4, 5, 6 } }, { { 7, 8, 9 }, { 250, 251, 252 } } }, { dtype = "uint8" })
    local png = core.png_encode(img) -- (H, W, C) = (2, 2, 3)
    assert.are.equal("\137PNG\r\n\26\n", png:sub(1, 8))
    local pos, idat, chunks = 9, "", {}
    while pos <= #png do
      local n, kind = be32(png, pos), png:sub(pos + 4, pos + 7)
      local body = png:sub(pos + 8, pos + 7 + n)
      assert.are.equal(core.png_crc(kind .. body), be32(png, pos + 8 + n))
      chunks[#chunks + 1] = kind
      if kind == "IHDR" then
        assert.are.same({ 2, 2, 8, 2 }, { be32(body, 1), be32(body, 5), body:byte(9), body:byte(10) })
      elseif kind == "IDAT" then
        idat = idat .. body
      end
      pos = pos + 12 + n
    end
    assert.are.same({ "IHDR", "IDAT", "IEND" }, chunks)
    local raw = core.zlib_inflate(idat, 14)
    assert.are.equal("\0\1\2\3\4\5\6\0\7\8\9\250\251\252", raw)
    assert.has_error(function() core.png_encode(wick.zeros(2, 2, 2, { dtype = "uint8" })) end)
    assert.has_error(function() core.png_encode(wick.zeros(2, 2, 3)) end)
  end)
  it("round-trips PNGs of many sizes and channel counts", function()
    wick.manual_seed(7)
    for _, c in ipairs({ 1, 3, 4 }) do
      for _, hw in ipairs({ { 1, 1 }, { 1, 37 }, { 29, 1 }, { 17, 33 }, { 64, 3 } }) do
        local img = (wick.rand(hw[1], hw[2], c) * 255):to("uint8")
        local w, h, ch, px = decode_png(core.png_encode(img))
        assert.are.same({ hw[2], hw[1], c }, { w, h, ch })
        local bytes = {}
        for i, v in ipairs(img:view(img:numel()):totable()) do bytes[i] = string.char(v) end
        assert.are.equal(table.concat(bytes), px)
      end
    end
  end)

  it("writes varints of the int64 range, refuses what is outside it", function()
    local function ref(n) -- the varint of n >= 0 (exact for these doubles: n / 128 loses nothing)
      local out = {}
      repeat
        local b = n % 128
        n = (n - b) / 128
        out[#out + 1] = string.char(n > 0 and b + 128 or b)
      until n == 0
      return table.concat(out)
    end
    for _, n in ipairs({ 0, 1, 127, 128, 300, 16383, 16384, 2 ^ 31, 2 ^ 32 + 5, 2 ^ 53 - 1, 2 ^ 62, 2 ^ 63 - 1024 }) do
      assert.are.equal(hex(ref(n)), hex(core.pb_varint(n)))
    end
    assert.are.equal("80808080808080808001", hex(core.pb_varint(-2 ^ 63)))
    assert.are.equal("ffffffffffffffffff01", hex(core.pb_varint(-1)))
    for _, bad in ipairs({ 2 ^ 63, -2 ^ 64, 0 / 0, math.huge, -math.huge, 1.5 }) do
      assert.has_error(function() core.pb_varint(bad) end)
    end
  end)

  it("encodes add_scalar's new_style as PyTorch's scalar(new_style = True) does", function()
    -- bytes from TensorBoard's Summary/TensorProto classes, as PyTorch builds them
    assert.are.equal("0a1d0a046c6f7373420808012a040000003f4a0b0a090a077363616c617273",
      hex(tb._summary.scalar_tensor("loss", 0.5, false)))
    assert.are.equal("0a210a046c6f7373420c08023208000000000000e03f4a0b0a090a077363616c617273",
      hex(tb._summary.scalar_tensor("loss", 0.5, true)))
  end)

  it("encodes hparam_domain_discrete as PyTorch's hparams() does", function()
    local s = tb._summary.hparams({ lr = 0.1, opt = "adam" }, { acc = 1 },
      { lr = { 0.1, 0.2 }, opt = { "adam", "sgd" } }, "add_hparams")
    assert.are.equal("0a6a0a145f68706172616d735f2f6578706572696d656e744a520a500a0768706172616d7312451243221e0a026c722003"
      .. "2a160a09119a9999999999b93f0a09119a9999999999c93f22180a036f707420012a0f0a061a046164616d0a051a037367642a070a05"
      .. "1203616363", hex(s[1]))
  end)

  it("converts images in any order of HW, CHW, NCHW; N images as a grid of 8 columns", function()
    local function hwc(t, df) return (tb._image_hwc(t, df, "add_image")) end
    local chw = wick.arange(0, 24, { dtype = "uint8" }):view(3, 2, 4)
    local want = chw:permute(2, 3, 1):contiguous()
    assert.are.same(want:totable(), hwc(chw, "CHW"):totable())
    assert.are.same(want:totable(), hwc(chw:permute(3, 2, 1), "wHc"):totable()) -- any order, any case
    assert.are.same(want:totable(), hwc(chw:permute(2, 3, 1), "HWC"):totable())
    assert.are.same(chw[1]:unsqueeze(3):totable(), hwc(chw[1], "HW"):totable())
    assert.are.same({ 2, 4, 1 }, hwc(chw[2]:t(), "WH").shape)
    assert.are.same(chw[2]:t():t():totable(), hwc(chw[2]:t(), "WH"):squeeze(3):totable())
    -- floats: * 255, clipped
    assert.are.same({ { { 0 }, { 127 } }, { { 255 }, { 255 } } },
      hwc(wick.tensor({ { -1, 0.5 }, { 1, 7 } }), "HW"):totable())
    -- 10 images of 1x2x3: 8 columns, 2 rows, the 6 missing tiles zeros
    local imgs = wick.arange(1, 61, { dtype = "uint8" }):view(10, 1, 2, 3)
    local g = hwc(imgs, "NCHW")
    assert.are.same({ 4, 24, 1 }, g.shape)
    for k = 0, 15 do
      local y, x = math.floor(k / 8), k % 8
      local tile = g:narrow(1, 2 * y + 1, 2):narrow(2, 3 * x + 1, 3):squeeze(3)
      local expect = k < 10 and imgs[k + 1][1] or wick.zeros(2, 3, { dtype = "uint8" })
      assert.are.same(expect:totable(), tile:totable(), "tile " .. k)
    end
    assert.are.same(g:totable(), hwc(imgs:permute(1, 3, 4, 2), "NHWC"):totable())
    -- 3 images: one row of 3
    assert.are.same({ 2, 9, 3 }, hwc(wick.rand(3, 3, 2, 3), "NCHW").shape)
    -- the PNG of a grid decodes to its pixels
    local w, h, ch, px = decode_png(png_of_summary(tb._summary.image("g", g, 1)))
    assert.are.same({ 24, 4, 1 }, { w, h, ch })
    local bytes = {}
    for _, v in ipairs(g:view(96):totable()) do bytes[#bytes + 1] = string.char(v) end
    assert.are.equal(table.concat(bytes), px)
  end)
end)

describe("SummaryWriter", function()
  it("writes the file_version record then scalars, flushed on close", function()
    local dir = tmpdir()
    local w = tb.SummaryWriter(dir)
    assert.are.equal(dir, w:get_logdir())
    assert.truthy(event_file(dir):match("events%.out%.tfevents%.%d%d%d%d%d%d%d%d%d%d%.[^/]+%.%d+%.%d+$"))
    w:add_scalar("loss", 0.5, 3, 2.0)
    assert.are.equal(1, #records(event_file(dir))) -- queued
    w:close()
    local r = records(event_file(dir))
    assert.are.equal(2, #r)
    assert.are.equal("1a0d627261696e2e4576656e743a32", hex(r[1]):sub(19))
    assert.are.equal("09000000000000004010032a0d0a0b0a046c6f7373150000003f", hex(r[2]))
    -- an add after close opens a new events file, as PyTorch's writer recreates itself
    -- (the TensorBoard tutorial closes, then goes on writing)
    w:add_scalar("loss", 1, 4)
    w:close()
    local files = ls(dir, "^events%.out%.tfevents%.")
    assert.is_true(#files >= 1)
    local n = 0
    for _, f in ipairs(files) do n = n + #records(dir .. "/" .. f) end
    assert.are.equal(4, n) -- two files, each a file_version record and a scalar (or both in one)
    rm(dir)
  end)

  it("flushes every max_queue records and on flush()", function()
    local dir = tmpdir()
    local w = tb.SummaryWriter(dir, { max_queue = 2 })
    w:add_scalar("a", 1, 1)
    assert.are.equal(1, #records(event_file(dir)))
    w:add_scalar("a", 2, 2)
    assert.are.equal(3, #records(event_file(dir)))
    w:add_text("note", "x", 3)
    w:flush()
    assert.are.equal(4, #records(event_file(dir)))
    w:close()
    rm(dir)
  end)

  it("keeps NaN and infinities, takes one-element tensors", function()
    local dir = tmpdir()
    local w = tb.SummaryWriter(dir)
    w:add_scalar("x", 0 / 0, 1, 1)
    w:add_scalar("x", -math.huge, 2, 1)
    w:add_scalar("x", wick.tensor({ 0.25 }), 3, 1)
    w:close()
    local r = records(event_file(dir))
    assert.truthy(hex(r[2]):sub(-8):match("0000c0[7f]f"), hex(r[2])) -- a float NaN, either sign
    assert.are.equal("000080ff", hex(r[3]):sub(-8))
    assert.are.equal("0000803e", hex(r[4]):sub(-8))
    rm(dir)
  end)

  it("closes its files when collected", function()
    local dir = tmpdir()
    do
      local w = tb.SummaryWriter(dir)
      w:add_scalar("a", 1, 1)
    end
    collectgarbage()
    collectgarbage()
    assert.are.equal(2, #records(event_file(dir)))
    rm(dir)
  end)

  it("puts add_scalars in subfolders and add_hparams in its own run", function()
    local dir = tmpdir()
    local w = tb.SummaryWriter(dir)
    w:add_scalars("loss/all", { train = 1, test = 2 }, 1)
    w:add_hparams({ lr = 0.1, opt = "adam", nesterov = false }, { acc = 0.5 }, { run_name = "run1" })
    w:add_hparams({ lr = 0.2 }, { acc = wick.tensor(0.6) })
    w:close()
    local subs = ls(dir, "^[^e]")
    assert.are.equal(4, #subs)
    assert.are.same({ "loss_all_test", "loss_all_train", "run1" }, { subs[2], subs[3], subs[4] })
    assert.truthy(subs[1]:match("^%d+%.%d+$")) -- the second run, named by the time
    assert.are.equal(2, #records(event_file(dir .. "/loss_all_train")))
    assert.are.equal(5, #records(event_file(dir .. "/run1"))) -- version, 3 hparams records, the metric
    rm(dir)
  end)

  it("writes histograms and images", function()
    local dir = tmpdir()
    local w = tb.SummaryWriter(dir)
    w:add_histogram("w", wick.randn(100), 1)
    w:add_histogram("w10", wick.randn(5, 5), 2, 10)
    w:add_image("img", wick.rand(3, 4, 5), 1)
    w:add_image("hwc", wick.rand(4, 5, 4), 1, nil, "HWC")
    w:add_image("u8", wick.zeros(1, 2, 2, { dtype = "uint8" }), 1)
    w:close()
    assert.are.equal(6, #records(event_file(dir)))
    rm(dir)
  end)

  it("takes PyTorch's later arguments by position or in an options table", function()
    local dir = tmpdir()
    local w = tb.SummaryWriter(dir)
    w:add_scalar("a", 0.5, { global_step = 3, walltime = 2.0 })
    w:add_scalar("b", 0.5, 3, 2.0, true)                           -- new_style
    w:add_scalar("b", 0.5, { global_step = 3, walltime = 2.0, new_style = true, double_precision = true })
    w:add_image("i", wick.rand(2, 3, 3), { global_step = 1, dataformats = "HWC" })
    w:add_images("n", wick.rand(5, 4, 4, 3), 2, nil, "NHWC")
    w:add_images("n", wick.rand(5, 3, 4, 4), { global_step = 3 })
    w:add_histogram("h", wick.randn(10), { bins = 4, global_step = 1 })
    w:add_text("t", "x", { global_step = 1 })
    w:add_scalars("s", { x = 1 }, { global_step = 2 })
    w:add_hparams({ lr = 0.1 }, { m = 1 }, { lr = { 0.1, 0.2 } }, "pos", 5)
    w:add_hparams({ lr = 0.1 }, { m = 1 }, { run_name = "opt", hparam_domain_discrete = { lr = { 0.1 } } })
    w:close()
    local r = records(event_file(dir))
    assert.are.equal(9, #r)
    assert.are.equal("09000000000000004010032a0a0a080a0161150000003f", hex(r[2]))
    assert.are.equal(hex(tb._event(2.0, 3, tb._pb.bytes(5, tb._summary.scalar_tensor("b", 0.5, false)))), hex(r[3]))
    assert.are.equal(hex(tb._event(2.0, 3, tb._pb.bytes(5, tb._summary.scalar_tensor("b", 0.5, true)))), hex(r[4]))
    assert.are.equal(5, #records(event_file(dir .. "/pos")))
    assert.are.equal(5, #records(event_file(dir .. "/opt")))
    rm(dir)
  end)

  it("warns once and goes on when a folder made during training cannot be written", function()
    local dir = tmpdir()
    local w = tb.SummaryWriter(dir)
    for _, name in ipairs({ "loss_train", "run" }) do -- files where the writer wants folders
      local f = assert(io.open(dir .. "/" .. name, "w"))
      f:close()
    end
    local ok, err, warned = with_warnings(function()
      for step = 1, 5 do w:add_scalars("loss", { train = step, test = step }, step) end
      w:add_hparams({ lr = 0.1 }, { acc = 1 }, { run_name = "run" })
      w:add_hparams({ lr = 0.1 }, { acc = 1 }, { run_name = ("r"):rep(5000) })
      w:add_scalar("still", 1, 1)
      w:close()
    end)
    assert.is_true(ok, tostring(err))
    assert.are.equal(3, #warned, table.concat(warned, "\n"))
    assert.truthy(warned[1]:match("loss_train' is not a folder"), warned[1])
    assert.truthy(warned[2]:match("run' is not a folder"), warned[2])
    assert.truthy(warned[3]:match("a path of %d+ bytes %(at most 4095%) cannot be made"), warned[3])
    assert.are.equal(6, #records(event_file(dir .. "/loss_test")))
    assert.are.equal(2, #records(event_file(dir)))
    rm(dir)
  end)

  it("refuses empty and huge images before copying them", function()
    local dir = tmpdir()
    local w = tb.SummaryWriter(dir)
    -- 3 x 100000 x 100000 (30 GB) as an expanded view of 3 bytes: refused, nothing allocated
    local huge = wick.zeros(3, 1, 1, { dtype = "uint8" }):expand(3, 100000, 100000)
    fails("add_image: an image of 100000x100000x3 is too large", function() w:add_image("i", huge, 1) end)
    fails("add_images: an image of 1250000x800x3 is too large",
      function() w:add_images("i", wick.zeros(1, 3, 10, 100):expand(1000000, 3, 10, 100), 1) end)
    fails("add_image: the image is empty %(1 image%(s%) of 0x5%)", function() w:add_image("i", wick.zeros(3, 0, 5), 1) end)
    fails("add_images: the image is empty %(0 image%(s%) of 2x2%)", function() w:add_images("i", wick.zeros(0, 3, 2, 2), 1) end)
    w:close()
    assert.are.equal(1, #records(event_file(dir)))
    rm(dir)
  end)

  it("raises clear errors at the caller's line", function()
    fails("SummaryWriter: cannot use log_dir '/dev/null/x'", function() tb.SummaryWriter("/dev/null/x") end)
    fails("SummaryWriter: unknown option 'flush'", function() tb.SummaryWriter(tmpdir(), { flush = 1 }) end)
    fails("SummaryWriter: cannot use log_dir '/tmp/x+%.%.%.x+': a path of 5001 bytes %(at most 4095%) cannot be made",
      function() tb.SummaryWriter("/tmp/" .. ("x"):rep(4996)) end)
    fails("SummaryWriter: cannot use log_dir '/tmp/a\\0b': a path of 8 bytes with a zero byte cannot be made",
      function() tb.SummaryWriter("/tmp/a\0b") end)
    fails("SummaryWriter: cannot write in log_dir '.*': a file name with a zero byte",
      function() tb.SummaryWriter(tmpdir(), { filename_suffix = "\0x" }) end)
    local dir = tmpdir()
    local w = tb.SummaryWriter(dir)
    fails("add_scalar: expected a string for argument 'tag'", function() w:add_scalar(1, 1, 1) end)
    fails("add_scalar: expected a number or a one%-element tensor", function() w:add_scalar("a", "1", 1) end)
    fails("add_scalar: expected a one%-element tensor", function() w:add_scalar("a", wick.zeros(2), 1) end)
    fails("add_scalar: expected an integer for argument 'global_step'", function() w:add_scalar("a", 1, 0.5) end)
    fails("add_histogram: the tensor has no element", function() w:add_histogram("h", wick.zeros(0), 1) end)
    fails("add_histogram: bins must be", function() w:add_histogram("h", wick.zeros(3), 1, "auto") end)
    fails("add_histogram: with bins = 4 the values must be finite",
      function() w:add_histogram("h", wick.tensor({ 1, math.huge }), 1, 4) end)
    fails("add_image: expected 1, 3 or 4 channels, got 2", function() w:add_image("i", wick.zeros(2, 3, 3), 1) end)
    fails("add_image: expected a 3%-D tensor", function() w:add_image("i", wick.zeros(3, 3), 1) end)
    fails("add_image: expected a 4%-D tensor for dataformats 'NCHW', got 2%-D",
      function() w:add_image("i", wick.zeros(3, 3), 1, nil, "NCHW") end)
    fails("add_image: dataformats must be an order of the letters HW, CHW or NCHW %(like 'CHW', 'HWC', 'NHWC'%), got 'CHC'",
      function() w:add_image("i", wick.zeros(3, 3, 3), 1, nil, "CHC") end)
    fails("add_images: dataformats must be .*, got 5", function() w:add_images("i", wick.zeros(3, 3), 1, nil, 5) end)
    fails("add_images: expected 1, 3 or 4 channels, got 2", function() w:add_images("i", wick.zeros(4, 2, 3, 3), 1) end)
    fails("add_images: unknown option 'dataformat'",
      function() w:add_images("i", wick.zeros(4, 2, 3, 3), { dataformat = "NCHW" }) end)
    fails("add_scalar: expected a boolean for argument 'new_style'", function() w:add_scalar("a", 1, 1, nil, 1) end)
    fails("add_scalar: expected at most 4 positional argument%(s%)", function() w:add_scalar("a", 1, 1, 1, true, true, 1) end)
    fails("add_hparams: hparam_domain_discrete%['lr'%] must be a non%-empty list of numbers, like hparam_dict%['lr'%]",
      function() w:add_hparams({ lr = 0.1 }, {}, { lr = { "a" } }, "r") end)
    fails("add_hparams: hparam_domain_discrete%['o'%] must be a non%-empty list of strings",
      function() w:add_hparams({ o = "x" }, {}, { o = {} }, "r") end)
    fails("add_hparams: hparam_domain_discrete has 'x', which is not a key of hparam_dict",
      function() w:add_hparams({ lr = 0.1 }, {}, { x = { 1 } }, "r") end)
    fails("add_hparams: unknown option 'lr'", function() w:add_hparams({ lr = 0.1 }, {}, { lr = { 0.1 } }) end)
    fails("add_hparams: expected a string for argument 'run_name'", function() w:add_hparams({}, {}, nil, 5) end)
    fails("add_text: expected a string for argument 'text_string'", function() w:add_text("t", 5, 1) end)
    fails("add_hparams: hparam 'f' must be", function() w:add_hparams({ f = {} }, {}) end)
    fails("add_hparams: metric 'm' must be a number", function() w:add_hparams({}, { m = "x" }) end)
    w:close()
    rm(dir)
  end)

  it("warns once when the disk is full and training goes on", function()
    local full = io.open("/dev/full", "wb")
    if not full then return pending("no /dev/full") end
    full:close()
    local dir = tmpdir()
    local w = tb.SummaryWriter(dir)
    w._writers[""].path = "/dev/full" -- every write now fails with ENOSPC
    local ok, err, warned = with_warnings(function()
      for step = 1, 30 do w:add_scalar("loss", step, step) end
      w:flush()
      w:close()
    end)
    assert.is_true(ok, tostring(err))
    assert.are.equal(1, #warned)
    assert.truthy(warned[1]:match("SummaryWriter: writing '/dev/full' failed %(/dev/full: No space left on device%)"),
      warned[1])
    rm(dir)
  end)
end)
