-- conv2d, max_pool2d and avg_pool2d (wick._core.*): forward against hand-computed
-- cases and naive Lua loops, gradients against central differences in float64,
-- PyTorch's error texts, the meta device and the same-device rule.
local wick = require("wick")
local support = require("spec.support")
local assert_close, assert_error_has, shape_of = support.assert_close, support.assert_error_has, support.shape_of

local C = wick._core
local F64 = { dtype = "float64" }

-- ---- data ----

-- deterministic values in [-1, 1] (an LCG of our own, independent of wick's RNG)
local function lcg_values(n, seed)
  local s, v = seed or 1, {}
  for i = 1, n do
    s = (1103515245 * s + 12345) % 2147483648
    v[i] = s / 1073741824 - 1
  end
  return v
end

local function numel_of(shape)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  return n
end

-- a nested Lua table of `shape` from flat values
local function nest(flat, shape)
  local function build(d, at)
    if d > #shape then return flat[at], at + 1 end
    local t = {}
    for i = 1, shape[d] do t[i], at = build(d + 1, at) end
    return t, at
  end
  return (build(1, 1))
end

local function flatten(t, out)
  out = out or {}
  if type(t) ~= "table" then
    out[#out + 1] = t
  else
    for i = 1, #t do flatten(t[i], out) end
  end
  return out
end

local function tensor_of(flat, shape, dtype)
  return wick.tensor(flat, { dtype = dtype or "float64" }):reshape(shape)
end

local function rand_tensor(shape, seed, dtype)
  return tensor_of(lcg_values(numel_of(shape), seed), shape, dtype)
end

-- ---- naive references over nested tables ----

local function ref_conv2d(x, w, b, o)
  local sh, sw = o.stride[1], o.stride[2]
  local ph, pw = o.padding[1], o.padding[2]
  local dh, dw = o.dilation[1], o.dilation[2]
  local groups = o.groups
  local N, Cin, H, W = #x, #x[1], #x[1][1], #x[1][1][1]
  local O, Cg, KH, KW = #w, #w[1], #w[1][1], #w[1][1][1]
  assert(Cin == Cg * groups)
  local OH = math.floor((H + 2 * ph - dh * (KH - 1) - 1) / sh) + 1
  local OW = math.floor((W + 2 * pw - dw * (KW - 1) - 1) / sw) + 1
  local og = O / groups
  local y = {}
  for n = 1, N do
    y[n] = {}
    for oc = 1, O do
      local g = math.floor((oc - 1) / og)
      y[n][oc] = {}
      for oy = 1, OH do
        local row = {}
        for ox = 1, OW do
          local acc = b and b[oc] or 0
          for c = 1, Cg do
            local plane = x[n][g * Cg + c]
            for i = 1, KH do
              local iy = (oy - 1) * sh - ph + (i - 1) * dh
              if iy >= 0 and iy < H then
                for j = 1, KW do
                  local ix = (ox - 1) * sw - pw + (j - 1) * dw
                  if ix >= 0 and ix < W then acc = acc + plane[iy + 1][ix + 1] * w[oc][c][i][j] end
                end
              end
            end
          end
          row[ox] = acc
        end
        y[n][oc][oy] = row
      end
    end
  end
  return y
end

-- PyTorch's output size rule for pooling (dilation 1)
local function pool_size(n, k, s, p, ceil_mode)
  local out = math.floor((n + 2 * p - k + (ceil_mode and s - 1 or 0)) / s) + 1
  if ceil_mode and (out - 1) * s >= n + p then out = out - 1 end
  return out
end

-- pooling of one [H][W] plane; kind "max" also returns 1-based flat indices
local function ref_pool_plane(plane, kind, k, s, p, ceil_mode, include_pad)
  local H, W = #plane, #plane[1]
  local OH, OW = pool_size(H, k[1], s[1], p[1], ceil_mode), pool_size(W, k[2], s[2], p[2], ceil_mode)
  local out, idx = {}, {}
  for oy = 1, OH do
    out[oy], idx[oy] = {}, {}
    for ox = 1, OW do
      local hs, ws = (oy - 1) * s[1] - p[1], (ox - 1) * s[2] - p[2]
      local he, we = math.min(hs + k[1], H + p[1]), math.min(ws + k[2], W + p[2])
      local padded = (he - hs) * (we - ws)
      hs, ws, he, we = math.max(hs, 0), math.max(ws, 0), math.min(he, H), math.min(we, W)
      if kind == "max" then
        local best, at = -math.huge, hs * W + ws
        for iy = hs, he - 1 do
          for ix = ws, we - 1 do
            local v = plane[iy + 1][ix + 1]
            if v > best or v ~= v then best, at = v, iy * W + ix end
          end
        end
        out[oy][ox], idx[oy][ox] = best, at + 1
      else
        local sum = 0
        for iy = hs, he - 1 do
          for ix = ws, we - 1 do sum = sum + plane[iy + 1][ix + 1] end
        end
        out[oy][ox] = sum / (include_pad and padded or (he - hs) * (we - ws))
      end
    end
  end
  return out, idx
end

-- over a [N][C][H][W] table
local function ref_pool(x, kind, k, s, p, ceil_mode, include_pad)
  local out, idx = {}, {}
  for n = 1, #x do
    out[n], idx[n] = {}, {}
    for c = 1, #x[n] do
      out[n][c], idx[n][c] = ref_pool_plane(x[n][c], kind, k, s, p, ceil_mode, include_pad)
    end
  end
  return out, idx
end

-- ---- a small gradcheck: float64 central differences against backward ----

-- gradcheck(fn, inputs): inputs are float64 tensors (or false for "no tensor",
-- passed to fn as nil). The loss is sum(fn(...) * W) with fixed weights W; the
-- gradient backward gives each input must match (f(x + h) - f(x - h)) / 2h.
local H_STEP, ATOL, RTOL = 1e-6, 1e-6, 1e-5
local function gradcheck(fn, inputs)
  local n = #inputs
  local shapes, vals = {}, {}
  for i = 1, n do
    if inputs[i] then shapes[i], vals[i] = shape_of(inputs[i]), flatten(inputs[i]:totable()) end
  end
  local function build(overrides, with_grad)
    local args = {}
    for i = 1, n do
      if inputs[i] then
        args[i] = tensor_of(overrides[i] or vals[i], shapes[i])
        if with_grad then args[i].requires_grad = true end
      end
    end
    return args
  end
  local leaves = build({}, true)
  local out = fn(unpack(leaves, 1, n))
  local out_shape = shape_of(out)
  local w = rand_tensor(out_shape, 777)
  ;(out * w):sum():backward()
  for i = 1, n do
    if inputs[i] then
      local g = leaves[i].grad
      assert.is_truthy(g, ("input %d got no gradient"):format(i))
      assert.are.same(shapes[i], shape_of(g))
      assert.are.equal("float64", g.dtype)
      local analytic = flatten(g:totable())
      for j = 1, #vals[i] do
        local v = {}
        for k = 1, #vals[i] do v[k] = vals[i][k] end
        local function loss_at(x)
          v[j] = x
          return wick.no_grad(function()
            return (fn(unpack(build({ [i] = v }, false), 1, n)) * w):sum():item()
          end)
        end
        local numeric = (loss_at(vals[i][j] + H_STEP) - loss_at(vals[i][j] - H_STEP)) / (2 * H_STEP)
        assert(math.abs(analytic[j] - numeric) <= ATOL + RTOL * math.abs(numeric),
          ("input %d, element %d: analytic %.10g, numeric %.10g"):format(i, j, analytic[j], numeric))
      end
    end
  end
  return true
end

-- runs fn on 2 threads, then on 1 (the conv kernels chunk differently), restoring the count
local function with_threads(fn)
  local before = wick.get_num_threads()
  for _, n in ipairs({ 2, 1 }) do
    wick.set_num_threads(n)
    local ok, err = pcall(fn)
    if not ok then
      wick.set_num_threads(before)
      error(err, 0)
    end
  end
  wick.set_num_threads(before)
end

-- ---- conv2d ----

local function pair(v) return type(v) == "table" and v or { v, v } end

-- a conv2d case: shapes and options; compares wick with the Lua reference
local function check_conv(case, dtype, tol)
  local xs, ws = case.x, case.w
  local x = rand_tensor(xs, 11, dtype)
  local w = rand_tensor(ws, 12, dtype)
  local b = case.bias and rand_tensor({ ws[1] }, 13, dtype) or nil
  local opts = { stride = case.stride, padding = case.padding, dilation = case.dilation, groups = case.groups }
  local y = C.conv2d(x, w, b, opts)
  local ref_opts = {
    stride = pair(case.stride or 1), padding = pair(case.padding or 0),
    dilation = pair(case.dilation or 1), groups = case.groups or 1,
  }
  local x64 = x:to("float64"):totable()
  local expected = ref_conv2d(x64, w:to("float64"):totable(), b and b:to("float64"):totable(), ref_opts)
  assert.are.equal(x.dtype, y.dtype)
  assert_close(y:to("float64"), expected, tol or 1e-12)
end

local CASES = {
  { x = { 2, 3, 7, 6 }, w = { 4, 3, 3, 3 }, bias = true },
  { x = { 1, 2, 5, 5 }, w = { 3, 2, 2, 2 } },
  { x = { 2, 3, 7, 6 }, w = { 4, 3, 3, 2 }, stride = 2, padding = 1, bias = true },
  { x = { 2, 2, 9, 8 }, w = { 2, 2, 3, 3 }, stride = { 2, 3 }, padding = { 1, 2 }, bias = true },
  { x = { 1, 3, 9, 9 }, w = { 2, 3, 3, 3 }, dilation = 2, padding = 2 },
  { x = { 1, 2, 10, 8 }, w = { 3, 2, 2, 3 }, dilation = { 3, 1 }, stride = { 1, 2 }, bias = true },
  { x = { 2, 4, 6, 6 }, w = { 6, 2, 3, 3 }, groups = 2, padding = 1, bias = true },
  { x = { 1, 6, 5, 7 }, w = { 6, 1, 3, 3 }, groups = 6, stride = 2, padding = 1, bias = true }, -- depthwise
  { x = { 3, 4, 5, 5 }, w = { 8, 4, 1, 1 }, bias = true },                                     -- 1x1, no columns
  { x = { 2, 4, 5, 5 }, w = { 4, 2, 1, 1 }, groups = 2 },
  { x = { 1, 1, 4, 4 }, w = { 1, 1, 4, 4 } },                                                   -- kernel = input
  { x = { 2, 3, 1, 1 }, w = { 2, 3, 3, 3 }, padding = 1, bias = true },                        -- taps cut: centre only
  -- kernels larger than what padding lets them reach: the unused taps are cut off
  { x = { 2, 3, 2, 2 }, w = { 4, 3, 3, 3 }, stride = 2, padding = 1, bias = true },           -- a 2x2 window
  { x = { 1, 2, 1, 4 }, w = { 3, 2, 3, 3 }, padding = { 1, 1 } },                             -- rows cut only
  { x = { 2, 2, 2, 3 }, w = { 2, 2, 5, 3 }, padding = { 4, 0 }, dilation = { 2, 1 } },         -- rows cut, dilated
  { x = { 1, 4, 1, 1 }, w = { 4, 2, 3, 3 }, padding = 1, groups = 2 },                         -- grouped, cut
  -- "same" size at stride 1: each tap's rows are copied as one run of the input
  { x = { 2, 3, 6, 7 }, w = { 4, 3, 5, 3 }, padding = { 2, 1 }, bias = true },
  { x = { 1, 2, 4, 9 }, w = { 2, 2, 1, 3 }, padding = { 0, 1 } },
  { x = { 3, 5, 7, 7 }, w = { 6, 5, 3, 3 }, padding = 1, bias = true },
  -- same size, but each tap's columns lie wholly in the padding (65 positions:
  -- past the small-map table); crashed in im2col's one-run copy
  { x = { 1, 1, 65, 1 }, w = { 1, 1, 1, 2 }, dilation = { 1, 200 }, padding = { 0, 100 } },
}

describe("conv2d forward", function()
  it("hand-computed: a 2x2 difference kernel, a bias, and a 3x3 box with padding 1", function()
    local x = wick.tensor({ { { { 1, 2, 3 }, { 4, 5, 6 }, { 7, 8, 9 } } } })
    local w = wick.tensor({ { { { 1, 0 }, { 0, -1 } } } })
    local y = C.conv2d(x, w)
    assert.are.same({ 1, 1, 2, 2 }, shape_of(y))
    assert_close(y, { { { { -4, -4 }, { -4, -4 } } } }, 0)
    assert_close(C.conv2d(x, w, wick.tensor({ 0.5 })), { { { { -3.5, -3.5 }, { -3.5, -3.5 } } } }, 0)
    local box = wick.ones(1, 1, 3, 3)
    assert_close(C.conv2d(x, box, nil, { padding = 1 }),
      { { { { 12, 21, 16 }, { 27, 45, 33 }, { 24, 39, 28 } } } }, 0)
    assert_close(C.conv2d(x, box, nil, { padding = 1, stride = 2 }), { { { { 12, 16 }, { 24, 28 } } } }, 0)
    -- dilation 2 over a 5x5 arange: the corners of each 5x5 window's 3x3 lattice
    local x5 = wick.arange(25):reshape(1, 1, 5, 5)
    assert_close(C.conv2d(x5, wick.ones(1, 1, 3, 3, F64):to("int64"):to("float32"), nil, { dilation = 2 }),
      { { { { 0 + 2 + 4 + 10 + 12 + 14 + 20 + 22 + 24 } } } }, 0)
  end)

  it("two output channels over two input channels", function()
    local x = wick.tensor({ { { { 1, 2 }, { 3, 4 } }, { { 10, 20 }, { 30, 40 } } } })
    local w = wick.tensor({ { { { 1 } }, { { 1 } } }, { { { 2 } }, { { -1 } } } })
    assert_close(C.conv2d(x, w, wick.tensor({ 0, 100 })),
      { { { { 11, 22 }, { 33, 44 } }, { { 92, 84 }, { 76, 68 } } } }, 0)
  end)

  it("matches nested Lua loops over strides, paddings, dilations and groups (float64)", function()
    for i, case in ipairs(CASES) do
      local ok, err = pcall(check_conv, case, "float64")
      assert(ok, ("case %d: %s"):format(i, tostring(err)))
    end
  end)

  it("float32 and the half types compute in float32 and keep their dtype", function()
    for i, case in ipairs(CASES) do
      local ok, err = pcall(check_conv, case, "float32", 1e-5)
      assert(ok, ("case %d float32: %s"):format(i, tostring(err)))
    end
    check_conv(CASES[3], "float16", 3e-2)
    check_conv(CASES[7], "bfloat16", 1e-1)
  end)

  it("takes unbatched [C, H, W] input like PyTorch", function()
    local x = rand_tensor({ 3, 6, 5 }, 21)
    local w = rand_tensor({ 2, 3, 3, 3 }, 22)
    local b = rand_tensor({ 2 }, 23)
    local y = C.conv2d(x, w, b, { padding = 1, stride = { 1, 2 } })
    assert.are.same({ 2, 6, 3 }, shape_of(y))
    assert_close(y, C.conv2d(x:reshape(1, 3, 6, 5), w, b, { padding = 1, stride = { 1, 2 } }):select(1, 1):totable(), 0)
  end)

  it("reads non-contiguous views", function()
    local base = rand_tensor({ 2, 3, 6, 7 }, 31)
    local x = base:transpose(3, 4) -- [2, 3, 7, 6]
    assert.is_false(x:is_contiguous())
    local w = rand_tensor({ 4, 3, 3, 3 }, 32):transpose(3, 4)
    local y = C.conv2d(x, w, nil, { padding = 1 })
    assert_close(y, C.conv2d(x:contiguous(), w:contiguous(), nil, { padding = 1 }):totable(), 1e-14)
  end)

  it("a large batch (split into chunks, with a one-image tail) agrees image by image", function()
    -- (54 column rows + 10 product rows) * 33 * 33 scratch elements per image: with
    -- cpu_conv.c's 2^20-element budget and several threads, chunks of 15, 15 and 1
    -- images; on one thread, one image at a time
    local x = wick.randn(31, 6, 33, 33)
    local w = wick.randn(10, 6, 3, 3)
    local b = wick.randn(10)
    with_threads(function()
      local y = C.conv2d(x, w, b, { padding = 1 })
      for _, n in ipairs({ 1, 12, 30, 31 }) do
        local one = C.conv2d(x:select(1, n), w, b, { padding = 1 })
        assert_close(y:select(1, n), one:totable(), 1e-5)
      end
    end)
  end)

  it("the option forms: bias omitted, options in third place, padding 'valid' and 'same'", function()
    local x = rand_tensor({ 1, 2, 5, 5 }, 41)
    local w = rand_tensor({ 3, 2, 3, 3 }, 42)
    local ref = C.conv2d(x, w, nil, { padding = 1 })
    assert_close(C.conv2d(x, w, { padding = 1 }), ref:totable(), 0)
    assert_close(C.conv2d(x, w, nil, { padding = "same" }), ref:totable(), 0)
    assert_close(C.conv2d(x, w, nil, { padding = "valid" }), C.conv2d(x, w):totable(), 0)
    assert.are.same({ 1, 3, 3, 3 }, shape_of(C.conv2d(x, w)))
  end)

  it("an empty batch gives an empty output", function()
    local y = C.conv2d(wick.zeros(0, 3, 5, 5), wick.ones(8, 3, 3, 3))
    assert.are.same({ 0, 8, 3, 3 }, shape_of(y))
  end)
end)

-- ---- pooling ----

local POOL_CASES = {
  { x = { 2, 3, 7, 6 }, k = { 3, 3 }, s = { 2, 2 }, p = { 1, 1 } },
  { x = { 2, 3, 7, 6 }, k = { 3, 2 }, s = { 2, 1 }, p = { 1, 1 }, ceil = true },
  { x = { 1, 2, 5, 5 }, k = { 2, 2 }, s = { 2, 2 }, p = { 1, 1 }, ceil = true },
  { x = { 1, 2, 6, 5 }, k = { 4, 3 }, s = { 3, 2 }, p = { 2, 1 }, ceil = true },
  { x = { 2, 1, 8, 8 }, k = { 2, 2 }, s = { 2, 2 }, p = { 0, 0 } },
  { x = { 1, 2, 5, 5 }, k = { 2, 2 }, s = { 2, 2 }, p = { 0, 0 }, ceil = true },
  { x = { 1, 1, 4, 7 }, k = { 1, 3 }, s = { 1, 3 }, p = { 0, 1 } },
  { x = { 2, 2, 7, 9 }, k = { 2, 2 }, s = { 2, 2 }, p = { 0, 0 } }, -- 2x2 fast path, odd sizes (last row/column unused)
}

describe("max_pool2d forward", function()
  it("hand-computed: 2x2 windows over a 4x4 arange, with 1-based indices", function()
    local x = wick.arange(16):reshape(1, 1, 4, 4)
    local y, idx = C.max_pool2d(x, 2, { return_indices = true })
    assert_close(y, { { { { 5, 7 }, { 13, 15 } } } }, 0)
    assert.are.equal("int64", idx.dtype)
    assert.are.same({ { { { 6, 8 }, { 14, 16 } } } }, idx:totable())
    -- one value without return_indices
    assert.are.equal(1, select("#", C.max_pool2d(x, 2)))
    -- padding counts as -inf; stride defaults to the kernel size
    assert_close(C.max_pool2d(x, 2, { stride = 1 }), { { { { 5, 6, 7 }, { 9, 10, 11 }, { 13, 14, 15 } } } }, 0)
    assert_close(C.max_pool2d(-x, 3, { stride = 2, padding = 1 }), { { { { 0, -1 }, { -4, -5 } } } }, 0)
  end)

  it("ceil_mode adds a last window only when it starts inside the input or its left padding", function()
    assert.are.same({ 1, 1, 3, 3 }, shape_of(C.max_pool2d(wick.zeros(1, 1, 5, 5), 2, { ceil_mode = true })))
    assert.are.same({ 1, 1, 2, 2 }, shape_of(C.max_pool2d(wick.zeros(1, 1, 5, 5), 2)))
    assert.are.same({ 1, 1, 3, 3 },
      shape_of(C.max_pool2d(wick.zeros(1, 1, 4, 4), 2, { stride = 2, padding = 1, ceil_mode = true })))
    assert.are.same({ 1, 1, 3, 3 },
      shape_of(C.max_pool2d(wick.zeros(1, 1, 5, 5), 2, { stride = 2, padding = 1, ceil_mode = true })))
  end)

  it("matches nested Lua loops (values and indices), float64 and float32, unbatched too", function()
    for i, c in ipairs(POOL_CASES) do
      for _, dtype in ipairs({ "float64", "float32" }) do
        local x = rand_tensor(c.x, 50 + i, dtype)
        local y, idx = C.max_pool2d(x, c.k, { stride = c.s, padding = c.p, ceil_mode = c.ceil, return_indices = true })
        local ry, ridx = ref_pool(x:to("float64"):totable(), "max", c.k, c.s, c.p, c.ceil)
        assert.are.equal(dtype, y.dtype)
        assert_close(y:to("float64"), ry, 0)
        assert.are.same(ridx, idx:totable())
      end
    end
    local x = rand_tensor({ 3, 5, 6 }, 60)
    local y = C.max_pool2d(x, 2, { padding = 1 })
    assert.are.same({ 3, 3, 4 }, shape_of(y))
    assert_close(y, C.max_pool2d(x:reshape(1, 3, 5, 6), 2, { padding = 1 }):select(1, 1):totable(), 0)
  end)

  it("propagates NaN and keeps the dtype of half inputs", function()
    local x = wick.tensor({ { { { 1, 0 / 0, 2, 3 }, { 4, 5, 6, 7 } } } })
    local y, idx = C.max_pool2d(x, 2, { return_indices = true })
    local v = y:totable()[1][1][1]
    assert.is_true(v[1] ~= v[1])
    assert.are.equal(7, v[2])
    assert.are.same({ { { { 2, 8 } } } }, idx:totable())
    -- ties keep the first maximum in window order; -inf windows report their first element
    local t = wick.tensor({ { { { 3, 3, -1 / 0, -1 / 0 }, { 3, 1, -1 / 0, -1 / 0 } } } })
    local ty, tidx = C.max_pool2d(t, 2, { return_indices = true })
    assert.are.same({ { { { 1, 3 } } } }, tidx:totable())
    assert.are.equal(-math.huge, ty:totable()[1][1][1][2])
    local h = C.max_pool2d(wick.arange(16, { dtype = "float16" }):reshape(1, 1, 4, 4), 2)
    assert.are.equal("float16", h.dtype)
    assert_close(h, { { { { 5, 7 }, { 13, 15 } } } }, 0)
  end)
end)

describe("avg_pool2d forward", function()
  it("hand-computed: 2x2 means, then padding with and without count_include_pad", function()
    local x = wick.arange(16):reshape(1, 1, 4, 4)
    assert_close(C.avg_pool2d(x, 2), { { { { 2.5, 4.5 }, { 10.5, 12.5 } } } }, 0)
    local x5 = wick.arange(25, F64):reshape(1, 1, 5, 5)
    -- PyTorch's values for kernel 3, stride 2, padding 1, ceil_mode
    assert_close(C.avg_pool2d(x5, 3, { stride = 2, padding = 1, ceil_mode = true }),
      { { { { 12 / 9, 27 / 9, 24 / 9 }, { 63 / 9, 108 / 9, 81 / 9 }, { 72 / 9, 117 / 9, 84 / 9 } } } }, 1e-15)
    assert_close(C.avg_pool2d(x5, 3, { stride = 2, padding = 1, ceil_mode = true, count_include_pad = false }),
      { { { { 3, 4.5, 6 }, { 10.5, 12, 13.5 }, { 18, 19.5, 21 } } } }, 1e-15)
    -- ceil_mode without padding: the last window is clipped and divides by what it covers
    assert_close(C.avg_pool2d(x5, 2, { ceil_mode = true }),
      { { { { 3, 5, 6.5 }, { 13, 15, 16.5 }, { 20.5, 22.5, 24 } } } }, 1e-15)
  end)

  it("matches nested Lua loops with and without count_include_pad", function()
    for i, c in ipairs(POOL_CASES) do
      for _, include_pad in ipairs({ true, false }) do
        local x = rand_tensor(c.x, 70 + i)
        local y = C.avg_pool2d(x, c.k, { stride = c.s, padding = c.p, ceil_mode = c.ceil, count_include_pad = include_pad })
        local ry = ref_pool(x:totable(), "avg", c.k, c.s, c.p, c.ceil, include_pad)
        assert_close(y, ry, 1e-14)
      end
    end
    local b = C.avg_pool2d(wick.arange(16, { dtype = "bfloat16" }):reshape(1, 4, 4), 2)
    assert.are.equal("bfloat16", b.dtype)
    assert_close(b, { { { 2.5, 4.5 }, { 10.5, 12.5 } } }, 0)
  end)
end)

-- ---- gradients ----

describe("conv2d gradients (float64 central differences)", function()
  it("the local gradcheck catches a wrong gradient", function()
    local ok, err = pcall(gradcheck, function(x) return x * x:detach() end, { rand_tensor({ 3 }, 99) })
    assert.is_false(ok)
    assert.is_truthy(tostring(err):find("analytic", 1, true))
  end)

  local function conv_fn(opts)
    return function(x, w, b) return C.conv2d(x, w, b, opts) end
  end

  it("input, weight and bias: plain, strided and padded", function()
    gradcheck(conv_fn({}), { rand_tensor({ 2, 2, 4, 5 }, 1), rand_tensor({ 3, 2, 2, 3 }, 2), rand_tensor({ 3 }, 3) })
    gradcheck(conv_fn({ stride = 2, padding = 1 }),
      { rand_tensor({ 1, 2, 5, 5 }, 4), rand_tensor({ 2, 2, 3, 3 }, 5), rand_tensor({ 2 }, 6) })
    gradcheck(conv_fn({ stride = { 1, 2 }, padding = { 2, 0 } }),
      { rand_tensor({ 2, 1, 4, 6 }, 7), rand_tensor({ 2, 1, 3, 2 }, 8), rand_tensor({ 2 }, 9) })
  end)

  it("dilation, groups, 1x1 kernels and unbatched input", function()
    gradcheck(conv_fn({ dilation = 2, padding = 1 }),
      { rand_tensor({ 1, 2, 6, 5 }, 10), rand_tensor({ 2, 2, 2, 2 }, 11), rand_tensor({ 2 }, 12) })
    gradcheck(conv_fn({ groups = 2, padding = 1 }),
      { rand_tensor({ 2, 4, 4, 4 }, 13), rand_tensor({ 4, 2, 3, 3 }, 14), rand_tensor({ 4 }, 15) })
    gradcheck(conv_fn({}), { rand_tensor({ 2, 3, 3, 4 }, 16), rand_tensor({ 4, 3, 1, 1 }, 17), rand_tensor({ 4 }, 18) })
    gradcheck(conv_fn({ padding = 1 }), { rand_tensor({ 2, 4, 5 }, 19), rand_tensor({ 2, 2, 3, 3 }, 20), false })
  end)

  it("same-size convolutions at stride 1 (a tap's rows as one run): square, wide and tall kernels", function()
    gradcheck(conv_fn({ padding = { 2, 1 } }),
      { rand_tensor({ 2, 2, 5, 4 }, 31), rand_tensor({ 3, 2, 5, 3 }, 32), rand_tensor({ 3 }, 33) })
    gradcheck(conv_fn({ padding = { 0, 1 } }), { rand_tensor({ 1, 2, 3, 6 }, 34), rand_tensor({ 2, 2, 1, 3 }, 35), false })
    gradcheck(conv_fn({ padding = 1 }), { rand_tensor({ 3, 2, 4, 4 }, 36), rand_tensor({ 2, 2, 3, 3 }, 37), false })
    gradcheck(conv_fn({ dilation = { 1, 200 }, padding = { 0, 100 } }),
      { rand_tensor({ 1, 1, 65, 1 }, 38), rand_tensor({ 1, 1, 1, 2 }, 39), false })
  end)

  it("kernels whose outer taps only ever read padding (cut off: their gradient is zero)", function()
    gradcheck(conv_fn({ padding = 1 }), { rand_tensor({ 2, 3, 1, 1 }, 21), rand_tensor({ 2, 3, 3, 3 }, 22), rand_tensor({ 2 }, 23) })
    gradcheck(conv_fn({ stride = 2, padding = 1 }),
      { rand_tensor({ 2, 2, 2, 2 }, 24), rand_tensor({ 3, 2, 3, 3 }, 25), rand_tensor({ 3 }, 26) })
    gradcheck(conv_fn({ padding = { 4, 0 }, dilation = { 2, 1 } }),
      { rand_tensor({ 1, 2, 2, 3 }, 27), rand_tensor({ 2, 2, 5, 3 }, 28), false })
    local x, w = rand_tensor({ 1, 1, 1, 1 }, 29), rand_tensor({ 1, 1, 3, 3 }, 30):requires_grad_()
    C.conv2d(x, w, nil, { padding = 1 }):sum():backward()
    local g = w.grad
    for i = 1, 3 do
      for j = 1, 3 do
        assert.are.equal((i == 2 and j == 2) and x:item() or 0, g[1][1][i][j]:item())
      end
    end
  end)

  it("a batch spread over several chunks", function() with_threads(function()
    -- the gradient of the batch equals the per-image gradients
    wick.manual_seed(3)
    local x = wick.randn(31, 6, 33, 33, F64)
    x.requires_grad = true
    local w = wick.randn(10, 6, 3, 3, F64)
    w.requires_grad = true
    local y = C.conv2d(x, w, nil, { padding = 1 })
    local g = wick.randn(31, 10, 33, 33, F64)
    y:backward(g)
    local gw = wick.zeros(10, 6, 3, 3, F64)
    for _, n in ipairs({ 1, 15, 16, 31 }) do
      local xi = x:select(1, n):detach()
      xi.requires_grad = true
      local wi = w:detach()
      wi.requires_grad = true
      C.conv2d(xi, wi, nil, { padding = 1 }):backward(g:select(1, n))
      assert_close(x.grad:select(1, n), xi.grad:totable(), 1e-12)
    end
    for n = 1, 31 do
      local wi = w:detach()
      wi.requires_grad = true
      C.conv2d(x:select(1, n):detach(), wi, nil, { padding = 1 }):backward(g:select(1, n))
      gw = gw + wi.grad
    end
    assert_close(w.grad, gw:totable(), 1e-10)
  end) end)

  it("a batch shared among threads (one share of the images each) gives the one-thread results", function()
    -- convolutions of at least 2^20 multiply-adds an image run a share of the
    -- batch per thread (src/cpu/cpu_conv.c, slots), weight gradients summed after
    local before = wick.get_num_threads()
    for _, case in ipairs({
      { x = { 7, 8, 34, 34 }, w = { 16, 8, 3, 3 }, opts = { padding = 1 } },
      { x = { 5, 16, 40, 40 }, w = { 32, 8, 3, 3 }, opts = { padding = 1, groups = 2 } },
      { x = { 5, 8, 64, 64 }, w = { 16, 8, 3, 3 }, opts = { stride = 2, padding = 1 } },
      { x = { 3, 64, 32, 32 }, w = { 64, 64, 1, 1 }, opts = {} },
    }) do
      wick.manual_seed(11)
      local x0, w0 = wick.randn(case.x, F64), wick.randn(case.w, F64)
      local b0, g = wick.randn(case.w[1], F64), nil
      local results = {}
      for _, threads in ipairs({ 1, 2, 3 }) do
        wick.set_num_threads(threads)
        local x, w, b = x0:clone():requires_grad_(), w0:clone():requires_grad_(), b0:clone():requires_grad_()
        local y = C.conv2d(x, w, b, case.opts)
        g = g or wick.randn(y:size(), F64)
        y:backward(g)
        results[threads] = { y = y:detach(), x = x.grad, w = w.grad, b = b.grad }
      end
      wick.set_num_threads(before)
      for _, threads in ipairs({ 2, 3 }) do
        for _, k in ipairs({ "y", "x", "w", "b" }) do
          local d = (results[threads][k] - results[1][k]):abs():max():item()
          local scale = results[1][k]:abs():max():item()
          assert(d <= 1e-12 * (1 + scale), ("%d threads, %s: differs by %g"):format(threads, k, d))
        end
      end
    end
  end)

  it("grad_fn, gradients only where asked, dtypes kept, and no graph under no_grad", function()
    local x = rand_tensor({ 1, 2, 4, 4 }, 30, "float32")
    local w = rand_tensor({ 3, 2, 3, 3 }, 31, "float32")
    w.requires_grad = true
    local y = C.conv2d(x, w)
    assert.are.equal("ConvolutionBackward", y.grad_fn)
    y:sum():backward()
    assert.is_nil(x.grad)
    assert.are.equal("float32", w.grad.dtype)
    assert.are.same({ 3, 2, 3, 3 }, shape_of(w.grad))
    local h = rand_tensor({ 1, 2, 4, 4 }, 32, "float16")
    h.requires_grad = true
    C.conv2d(h, rand_tensor({ 3, 2, 3, 3 }, 33, "float16"), nil, { padding = 1 }):sum():backward()
    assert.are.equal("float16", h.grad.dtype)
    local z = wick.no_grad(function() return C.conv2d(x, w) end)
    assert.is_false(z.requires_grad)
    assert.is_nil(z.grad_fn)
  end)
end)

describe("pooling gradients (float64 central differences)", function()
  -- values spread at least 0.01 apart, so no window has a tie that a step could flip
  local function distinct(shape, seed)
    local n = numel_of(shape)
    local v = lcg_values(n, seed)
    local order = {}
    for i = 1, n do order[i] = i end
    table.sort(order, function(a, b) return v[a] < v[b] end)
    local r = {}
    for rank, i in ipairs(order) do r[i] = rank * 0.01 - n * 0.005 end
    return tensor_of(r, shape)
  end

  it("max_pool2d, with padding, strides and ceil_mode", function()
    gradcheck(function(x) return C.max_pool2d(x, 2) end, { distinct({ 1, 2, 4, 4 }, 1) })
    gradcheck(function(x) return C.max_pool2d(x, 3, { stride = 2, padding = 1, ceil_mode = true }) end,
      { distinct({ 2, 1, 6, 5 }, 2) })
    -- overlapping windows: one input can be the maximum of several
    gradcheck(function(x) return C.max_pool2d(x, { 3, 2 }, { stride = 1 }) end, { distinct({ 1, 1, 5, 4 }, 3) })
    gradcheck(function(x) return C.max_pool2d(x, 2, { padding = 1 }) end, { distinct({ 2, 3, 3 }, 4) })
  end)

  it("avg_pool2d, with and without count_include_pad", function()
    gradcheck(function(x) return C.avg_pool2d(x, 2) end, { rand_tensor({ 1, 2, 4, 4 }, 5) })
    gradcheck(function(x) return C.avg_pool2d(x, 3, { stride = 2, padding = 1, ceil_mode = true }) end,
      { rand_tensor({ 2, 1, 5, 6 }, 6) })
    gradcheck(function(x)
      return C.avg_pool2d(x, 3, { stride = 2, padding = 1, ceil_mode = true, count_include_pad = false })
    end, { rand_tensor({ 1, 2, 5, 5 }, 7) })
    gradcheck(function(x) return C.avg_pool2d(x, { 2, 3 }, { stride = 1, padding = { 1, 1 } }) end,
      { rand_tensor({ 2, 4, 4 }, 8) })
  end)

  it("grad_fn names, and returned indices stay valid for backward", function()
    local x = distinct({ 1, 1, 4, 4 }, 9)
    x.requires_grad = true
    local y, idx = C.max_pool2d(x, 2, { return_indices = true })
    assert.are.equal("MaxPool2DWithIndicesBackward", y.grad_fn)
    idx:fill_(1) -- the caller's indices are its own
    y:sum():backward()
    assert.are.equal(4, x.grad:sum():item())
    assert.are.equal("AvgPool2DBackward", C.avg_pool2d(x, 2).grad_fn)
  end)
end)

-- ---- errors ----

describe("conv2d and pooling errors", function()
  it("conv2d: channels, kernel size, bias, dims, dtypes and parameters, in PyTorch's words", function()
    assert_error_has(function() C.conv2d(wick.zeros(2, 4, 28, 28), wick.zeros(8, 3, 3, 3)) end,
      "Given groups=1, weight of size [8, 3, 3, 3], expected input[2, 4, 28, 28] to have 3 channels, "
      .. "but got 4 channels instead")
    assert_error_has(function() C.conv2d(wick.zeros(4, 28, 28), wick.zeros(8, 3, 3, 3)) end,
      "expected input[1, 4, 28, 28] to have 3 channels, but got 4 channels instead")
    assert_error_has(function() C.conv2d(wick.zeros(1, 3, 2, 2), wick.zeros(8, 3, 3, 3)) end,
      "Calculated padded input size per channel: (2 x 2). Kernel size: (3 x 3). "
      .. "Kernel size can't be greater than actual input size")
    assert_error_has(function() C.conv2d(wick.zeros(1, 3, 2, 2), wick.zeros(8, 3, 3, 3), nil, { padding = 1, dilation = 2 }) end,
      "Calculated padded input size per channel: (4 x 4). Kernel size: (5 x 5).")
    assert_error_has(function() C.conv2d(wick.zeros(1, 3, 5, 5), wick.zeros(8, 3, 3, 3), wick.zeros(7)) end,
      "Given weight of size [8, 3, 3, 3], expected bias to be 1-dimensional with 8 elements, but got bias of size [7] instead")
    assert_error_has(function() C.conv2d(wick.zeros(3, 5), wick.zeros(8, 3, 3, 3)) end,
      "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [3, 5]")
    assert_error_has(function() C.conv2d(wick.zeros(1, 3, 5, 5), wick.zeros(8, 3, 3)) end, "4D weight")
    assert_error_has(function() C.conv2d(wick.zeros(1, 3, 5, 5), wick.zeros(8, 3, 0, 3)) end,
      "kernel size should be greater than zero, but got kernel_height: 0 kernel_width: 3")
    assert_error_has(function() C.conv2d(wick.zeros(1, 4, 5, 5), wick.zeros(9, 2, 3, 3), nil, { groups = 2 }) end,
      "Given groups=2, expected weight to be divisible by 2 at dimension 1, but got weight of size [9, 2, 3, 3] instead")
    assert_error_has(function() C.conv2d(wick.zeros(1, 3, 5, 5), wick.zeros(8, 3, 3, 3, F64)) end,
      "Input type (float32) and weight type (float64) should be the same")
    assert_error_has(function() C.conv2d(wick.zeros(1, 3, 5, 5), wick.zeros(8, 3, 3, 3), wick.zeros(8, F64)) end,
      "Input type (float32) and bias type (float64) should be the same")
    assert_error_has(function()
      C.conv2d(wick.zeros(1, 3, 5, 5, { dtype = "int64" }), wick.zeros(8, 3, 3, 3, { dtype = "int64" }))
    end, "conv2d: expected a floating-point input, but got int64")
    local x, w = wick.zeros(1, 3, 5, 5), wick.zeros(8, 3, 3, 3)
    assert_error_has(function() C.conv2d(x, w, nil, { stride = 0 }) end, "non-positive stride is not supported")
    assert_error_has(function() C.conv2d(x, w, nil, { padding = -1 }) end, "negative padding is not supported")
    assert_error_has(function() C.conv2d(x, w, nil, { dilation = 0 }) end,
      "dilation should be greater than zero, but got [0, 0]")
    assert_error_has(function() C.conv2d(x, w, nil, { groups = 0 }) end, "non-positive groups is not supported")
  end)

  it("conv2d: the binding's option errors", function()
    local x, w = wick.zeros(1, 3, 5, 5), wick.zeros(8, 3, 3, 3)
    assert_error_has(function() C.conv2d(x, w, nil, { strides = 2 }) end, "conv2d: unknown option 'strides'")
    assert_error_has(function() C.conv2d(x, w, nil, { stride = "2" }) end,
      "conv2d: stride must be a number or a table of two numbers {h, w}, got string")
    assert_error_has(function() C.conv2d(x, w, nil, { stride = { 1, 2, 3 } }) end, "table of two numbers")
    assert_error_has(function() C.conv2d(x, w, nil, { padding = 1.5 }) end, "conv2d: padding must be an integer, got 1.5")
    assert_error_has(function() C.conv2d(x, w, nil, { padding = "full" }) end,
      "Invalid padding string 'full', should be one of {'valid', 'same'}")
    assert_error_has(function() C.conv2d(x, w, nil, { padding = "same", stride = 2 }) end,
      "padding='same' is not supported for strided convolutions")
    assert_error_has(function() C.conv2d(x, w, 3) end, "bias")
    assert_error_has(function() C.conv2d(x) end, "weight")
  end)

  it("pooling: padding, kernel, stride, output size, dims and dtypes", function()
    local x = wick.zeros(1, 2, 5, 5)
    for _, fn in ipairs({ "max_pool2d", "avg_pool2d" }) do
      local f = C[fn]
      assert_error_has(function() f(x, 3, { padding = 2 }) end,
        fn .. ": pad should be at most half of kernel size, but got pad=2 and kernel_size=3")
      assert_error_has(function() f(x, 0) end, "kernel size should be greater than zero, but got kH: 0 kW: 0")
      assert_error_has(function() f(x, 2, { stride = 0 }) end, "stride should be greater than zero, but got dH: 0 dW: 0")
      assert_error_has(function() f(x, 2, { padding = -1 }) end, "pad must be non-negative, but got pad: -1")
      assert_error_has(function() f(wick.zeros(1, 2, 1, 1), 2) end,
        "Given input size: (2x1x1). Calculated output size: (2x0x0). Output size is too small")
      assert_error_has(function() f(wick.zeros(2, 5), 2) end,
        "expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got: [2, 5]")
      assert_error_has(function() f(wick.zeros(1, 0, 4, 4), 2) end, "but got: [1, 0, 4, 4]")
      assert_error_has(function() f(wick.zeros(1, 2, 4, 4, { dtype = "int64" }), 2) end,
        fn .. ": not implemented for int64 tensors")
      assert_error_has(function() f(x, 2, { bogus = 1 }) end, fn .. ": unknown option 'bogus'")
      assert_error_has(function() f(x, "2") end, fn .. ": kernel_size must be a number or a table of two numbers")
    end
    assert.are.same({ 0, 2, 2, 2 }, shape_of(C.max_pool2d(wick.zeros(0, 2, 4, 4), 2)))
    assert_error_has(function() C.max_pool2d(x, 2, { dilation = 2 }) end, "dilation other than 1 is not supported")
    assert_error_has(function() C.max_pool2d(x, 2, { ceil_mode = 1 }) end, "ceil_mode must be a boolean, got number")
    assert_error_has(function() C.avg_pool2d(x, 2, { divisor_override = 3 }) end, "divisor_override is not supported")
  end)
end)

-- ---- devices ----

describe("conv2d and pooling on the meta device", function()
  local META = { device = "meta" }

  it("give shapes and dtypes, no data", function()
    local x = wick.zeros(2, 3, 28, 28, META)
    local y = C.conv2d(x, wick.zeros(8, 3, 5, 5, META), wick.zeros(8, META), { stride = 2, padding = 1 })
    assert.are.equal("meta", y.device.type)
    assert.are.equal("float32", y.dtype)
    assert.are.same({ 2, 8, 13, 13 }, shape_of(y))
    assert.are.same({ 4, 26, 26 }, shape_of(C.conv2d(wick.zeros(3, 28, 28, META), wick.zeros(4, 3, 3, 3, META))))
    local h = C.conv2d(wick.zeros(1, 4, 9, 9, { device = "meta", dtype = "float16" }),
      wick.zeros(6, 2, 3, 3, { device = "meta", dtype = "float16" }), nil, { groups = 2, dilation = 2 })
    assert.are.equal("float16", h.dtype)
    assert.are.same({ 1, 6, 5, 5 }, shape_of(h))
    local p, idx = C.max_pool2d(x, 3, { stride = 2, padding = 1, ceil_mode = true, return_indices = true })
    assert.are.same({ 2, 3, 15, 15 }, shape_of(p))
    assert.are.equal("meta", idx.device.type)
    assert.are.equal("int64", idx.dtype)
    assert.are.same({ 2, 3, 14, 14 }, shape_of(C.avg_pool2d(x, 2)))
  end)

  it("run the same checks", function()
    assert_error_has(function() C.conv2d(wick.zeros(2, 4, 28, 28, META), wick.zeros(8, 3, 3, 3, META)) end,
      "expected input[2, 4, 28, 28] to have 3 channels, but got 4 channels instead")
    assert_error_has(function() C.max_pool2d(wick.zeros(1, 2, 5, 5, META), 3, { padding = 2 }) end,
      "pad should be at most half of kernel size")
  end)

  it("backward gives gradients of the right shapes", function()
    local x = wick.zeros(2, 3, 8, 8, META)
    x.requires_grad = true
    local w = wick.zeros(4, 3, 3, 3, META)
    w.requires_grad = true
    local b = wick.zeros(4, META)
    b.requires_grad = true
    local y = C.avg_pool2d(C.max_pool2d(C.conv2d(x, w, b, { padding = 1 }), 2), 2, { ceil_mode = true })
    y:backward(wick.zeros(2, 4, 2, 2, META))
    assert.are.same({ 2, 3, 8, 8 }, shape_of(x.grad))
    assert.are.equal("meta", x.grad.device.type)
    assert.are.same({ 4, 3, 3, 3 }, shape_of(w.grad))
    assert.are.same({ 4 }, shape_of(b.grad))
  end)

  it("cpu and meta operands break the same-device rule", function()
    local err = assert_error_has(function() C.conv2d(wick.zeros(1, 3, 5, 5), wick.zeros(8, 3, 3, 3, META)) end,
      "Expected all tensors to be on the same device, but found at least two devices, cpu and meta!",
      "argument weight in method conv2d")
    assert.is_truthy(err)
    assert_error_has(function()
      C.conv2d(wick.zeros(1, 3, 5, 5), wick.zeros(8, 3, 3, 3), wick.zeros(8, META))
    end, "argument bias in method conv2d")
    assert_error_has(function()
      C.conv2d(wick.zeros(1, 3, 5, 5, META), wick.zeros(8, 3, 3, 3))
    end, "meta and cpu! (when checking argument for argument weight in method conv2d)")
  end)
end)
