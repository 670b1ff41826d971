-- The 3-D convolutions and pooling and conv_transpose1d (wick.nn.volumetric,
-- composed from the 2-D ops): each against a direct loop over its definition
-- on small float64 inputs, the transposed convolutions as the adjoints of the
-- convolutions, gradients by gradcheck, the modules, and bad arguments.
local wick = require("wick")
local nn = wick.nn
local F = nn.functional
local support = require("spec.support")
local assert_error_has = support.assert_error_has
local function assert_close(actual, expected, tol) -- (expected may be a tensor too)
  if wick.is_tensor(expected) then expected = expected:totable() end
  support.assert_close(actual, expected, tol)
end

local F64 = { dtype = "float64" }
local function randn(shape) return wick.randn(shape, F64) end

-- conv3d by its definition: y[n, o, z, y, x] = b[o] + sum over the group's
-- channels and the kernel of w * x at (z s - p + kz d, ...), zero outside
local function conv3d_loops(x, w, b, s, p, d, g)
  local X, W = x:totable(), w:totable()
  local N, C, D, H, Wd = x:size(1), x:size(2), x:size(3), x:size(4), x:size(5)
  local O, Cg, k = w:size(1), w:size(2), { w:size(3), w:size(4), w:size(5) }
  local size = { D, H, Wd }
  local out = {}
  for i = 1, 3 do out[i] = math.floor((size[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) / s[i]) + 1 end
  local y = {}
  for n = 1, N do
    y[n] = {}
    for o = 1, O do
      local grp = math.floor((o - 1) / (O / g))
      y[n][o] = {}
      for oz = 0, out[1] - 1 do
        y[n][o][oz + 1] = {}
        for oy = 0, out[2] - 1 do
          y[n][o][oz + 1][oy + 1] = {}
          for ox = 0, out[3] - 1 do
            local acc = b and b[o] or 0
            for c = 1, Cg do
              for kz = 0, k[1] - 1 do
                for ky = 0, k[2] - 1 do
                  for kx = 0, k[3] - 1 do
                    local iz, iy, ix = oz * s[1] - p[1] + kz * d[1], oy * s[2] - p[2] + ky * d[2], ox * s[3] - p[3] + kx * d[3]
                    if iz >= 0 and iz < D and iy >= 0 and iy < H and ix >= 0 and ix < Wd then
                      acc = acc + W[o][c][kz + 1][ky + 1][kx + 1] * X[n][grp * Cg + c][iz + 1][iy + 1][ix + 1]
                    end
                  end
                end
              end
            end
            y[n][o][oz + 1][oy + 1][ox + 1] = acc
          end
        end
      end
    end
  end
  return y
end

-- pooling by its definition, each window's cells in PyTorch's scan order;
-- reduce(cells) gives the value (and the 1-based flat index for max)
local function pool3d_loops(x, k, s, p, out, reduce)
  local X = x:totable()
  local D, H, W = x:size(3), x:size(4), x:size(5)
  local y, idx = {}, {}
  for n = 1, x:size(1) do
    y[n], idx[n] = {}, {}
    for c = 1, x:size(2) do
      y[n][c], idx[n][c] = {}, {}
      for oz = 0, out[1] - 1 do
        y[n][c][oz + 1], idx[n][c][oz + 1] = {}, {}
        for oy = 0, out[2] - 1 do
          y[n][c][oz + 1][oy + 1], idx[n][c][oz + 1][oy + 1] = {}, {}
          for ox = 0, out[3] - 1 do
            local cells = {}
            for kz = 0, k[1] - 1 do
              for ky = 0, k[2] - 1 do
                for kx = 0, k[3] - 1 do
                  local iz, iy, ix = oz * s[1] - p[1] + kz, oy * s[2] - p[2] + ky, ox * s[3] - p[3] + kx
                  cells[#cells + 1] = { iz, iy, ix, iz >= 0 and iz < D and iy >= 0 and iy < H and ix >= 0 and ix < W
                    and X[n][c][iz + 1][iy + 1][ix + 1] or nil }
                end
              end
            end
            local v, i = reduce(cells, D, H, W)
            y[n][c][oz + 1][oy + 1][ox + 1], idx[n][c][oz + 1][oy + 1][ox + 1] = v, i
          end
        end
      end
    end
  end
  return y, idx
end

local function max_cells(cells, _, H, W)
  local best, at
  for _, c in ipairs(cells) do
    if c[4] and (best == nil or c[4] > best) then best, at = c[4], c[1] * H * W + c[2] * W + c[3] + 1 end
  end
  return best, at
end

describe("F.conv3d", function()
  it("is the convolution's definition: strides, padding, dilation, groups, bias", function()
    local x, w, b = randn({ 2, 4, 5, 6, 5 }), randn({ 6, 2, 3, 2, 3 }), randn({ 6 })
    local y = F.conv3d(x, w, b, { 2, 1, 2 }, { 1, 0, 2 }, { 2, 1, 1 }, 2)
    assert_close(y, conv3d_loops(x, w, b:totable(), { 2, 1, 2 }, { 1, 0, 2 }, { 2, 1, 1 }, 2), 1e-12)
    local w1 = randn({ 3, 4, 1, 3, 3 })
    assert_close(F.conv3d(x, w1, nil, { padding = 1 }), conv3d_loops(x, w1, nil, { 1, 1, 1 }, { 1, 1, 1 }, { 1, 1, 1 }, 1), 1e-12)
  end)

  it("pads 'same' as PyTorch (the odd one after) and takes an unbatched input", function()
    local x, w = randn({ 1, 2, 4, 5, 4 }), randn({ 3, 2, 2, 3, 4 })
    local y = F.conv3d(x, w, nil, { padding = "same" })
    assert.are.same({ 1, 3, 4, 5, 4 }, y:size())
    -- total padding k - 1: before floor((k - 1) / 2), after the rest
    local padded = F.pad(x, { 1, 2, 1, 1, 0, 1 })
    assert_close(y, F.conv3d(padded, w), 1e-12)
    assert_close(F.conv3d(x[1], w), F.conv3d(x, w)[1], 1e-12)
  end)

  it("has gradients (gradcheck) for input, weight and bias", function()
    support.gradcheck(function(x, w, b) return F.conv3d(x, w, b, { stride = { 1, 2, 1 }, padding = 1, groups = 2 }) end,
      { randn({ 1, 4, 3, 4, 3 }), randn({ 2, 2, 2, 2, 2 }), randn({ 2 }) })
  end)

  it("refuses bad shapes at the caller's line", function()
    assert_error_has(function() F.conv3d(randn({ 2, 3, 4, 4 }), randn({ 2, 3, 1, 1 })) end, "weight must be 5-D")
    assert_error_has(function() F.conv3d(randn({ 3, 4, 4 }), randn({ 2, 3, 1, 1, 1 })) end, "4-D (unbatched) or 5-D")
    assert_error_has(function() F.conv3d(randn({ 1, 3, 4, 4, 4 }), randn({ 2, 2, 1, 1, 1 })) end, "to have 2 channels")
    assert_error_has(function() F.conv3d(randn({ 1, 2, 2, 4, 4 }), randn({ 2, 2, 3, 1, 1 })) end, "smaller than the kernel")
    assert_error_has(function() F.conv3d(randn({ 1, 2, 4, 4, 4 }), randn({ 2, 2, 3, 1, 1 }), nil, { stride = 2, padding = "same" }) end,
      "strided")
    assert_error_has(function() F.conv3d(randn({ 1, 2, 4, 4, 4 }), randn({ 2, 2, 1, 1, 1 }), nil, { stride = { 1, 2 } }) end,
      "{d, h, w} table")
  end)
end)

describe("F.conv_transpose3d and F.conv_transpose1d", function()
  it("are the adjoints of conv3d and conv1d: <conv(x), y> = <x, conv_transpose(y)>", function()
    local x, w = randn({ 2, 4, 6, 5, 7 }), randn({ 6, 2, 3, 2, 3 })
    local o = { stride = { 2, 1, 3 }, padding = { 1, 0, 1 }, dilation = { 1, 2, 1 }, groups = 2 }
    local y = F.conv3d(x, w, nil, o)
    local r = randn(y:size())
    -- the output_padding that gives back x's size
    local op = {}
    for i = 1, 3 do
      local k = w:size(2 + i)
      op[i] = x:size(2 + i) - ((y:size(2 + i) - 1) * o.stride[i] - 2 * o.padding[i] + o.dilation[i] * (k - 1) + 1)
    end
    local back = F.conv_transpose3d(r, w, nil, { stride = o.stride, padding = o.padding, output_padding = op,
      groups = 2, dilation = o.dilation })
    assert.are.same(x:size(), back:size())
    assert_close((y * r):sum():item(), (x * back):sum():item(), 1e-10)
    local b = randn({ 4 })
    assert_close(F.conv_transpose3d(r, w, b, o.stride, o.padding, op, 2, o.dilation), back + b:view(1, 4, 1, 1, 1), 1e-12)

    local x1, w1 = randn({ 2, 4, 11 }), randn({ 6, 2, 3 })
    local y1 = F.conv1d(x1, w1, nil, 2, 1, 2, 2)
    local r1 = randn(y1:size())
    local back1 = F.conv_transpose1d(r1, w1, nil, 2, 1, 0, 2, 2) -- (5 - 1) 2 - 2 + 2 (3 - 1) + 1 = 11
    assert.are.same({ 2, 4, 11 }, back1:size())
    assert_close((y1 * r1):sum():item(), (x1 * back1):sum():item(), 1e-10)
  end)

  it("have gradients (gradcheck)", function()
    support.gradcheck(function(x, w, b)
      return F.conv_transpose3d(x, w, b, { stride = { 2, 1, 2 }, padding = { 1, 0, 0 }, output_padding = { 1, 0, 1 }, groups = 2 })
    end, { randn({ 1, 2, 3, 2, 3 }), randn({ 2, 1, 3, 2, 2 }), randn({ 2 }) })
    support.gradcheck(function(x, w) return F.conv_transpose1d(x, w, nil, { stride = 2, padding = 1 }) end,
      { randn({ 2, 3, 4 }), randn({ 3, 2, 3 }) })
  end)

  it("refuses an output_padding not below stride or dilation", function()
    assert_error_has(function() F.conv_transpose3d(randn({ 1, 2, 3, 3, 3 }), randn({ 2, 2, 2, 2, 2 }), nil, { output_padding = 1 }) end,
      "output padding must be smaller")
    assert_error_has(function() F.conv_transpose1d(randn({ 1, 2, 3 }), randn({ 3, 2, 2 })) end, "conv_transpose1d")
  end)
end)

describe("3-D pooling", function()
  it("max_pool3d is the window maximum, with PyTorch's flat D*H*W indices (1-based), ceil_mode", function()
    local x = randn({ 2, 3, 5, 6, 7 })
    local y, i = F.max_pool3d(x, { 3, 2, 3 }, { stride = { 2, 2, 1 }, padding = { 1, 1, 0 }, ceil_mode = true,
      return_indices = true })
    -- ceil_mode: (5 + 2 - 3) / 2 rounded up + 1 = 3 (the last window starts inside), 4, 5
    assert.are.same({ 2, 3, 3, 4, 5 }, y:size())
    local ry, ri = pool3d_loops(x, { 3, 2, 3 }, { 2, 2, 1 }, { 1, 1, 0 }, { 3, 4, 5 }, max_cells)
    assert_close(y, ry, 0)
    assert.are.same(ri, i:totable())
    assert.are.equal("int64", i.dtype)
    assert_close(F.max_pool3d(x, 2), (pool3d_loops(x, { 2, 2, 2 }, { 2, 2, 2 }, { 0, 0, 0 }, { 2, 3, 3 }, max_cells)), 0)
  end)

  it("avg_pool3d divides as PyTorch: padding counted or not, divisor_override, ceil_mode", function()
    local x = randn({ 1, 2, 5, 4, 6 })
    local function avg(include, override)
      return function(cells, D, H, W)
        local sum, inside, padded = 0, 0, 0
        for _, c in ipairs(cells) do
          if c[4] then sum, inside = sum + c[4], inside + 1 end
          -- PyTorch's count_include_pad divisor: the window cut at the padded end (padding 1 here)
          if c[1] < D + 1 and c[2] < H + 1 and c[3] < W + 1 then padded = padded + 1 end
        end
        return sum / (override or (include and padded or inside))
      end
    end
    local o = { stride = 2, padding = 1, ceil_mode = true }
    local out = { 3, 3, 4 }
    assert_close(F.avg_pool3d(x, 3, o), (pool3d_loops(x, { 3, 3, 3 }, { 2, 2, 2 }, { 1, 1, 1 }, out, avg(true))), 1e-12)
    o.count_include_pad = false
    assert_close(F.avg_pool3d(x, 3, o), (pool3d_loops(x, { 3, 3, 3 }, { 2, 2, 2 }, { 1, 1, 1 }, out, avg(false))), 1e-12)
    assert_close(F.avg_pool3d(x, 2, { divisor_override = 3 }),
      (pool3d_loops(x, { 2, 2, 2 }, { 2, 2, 2 }, { 0, 0, 0 }, { 2, 2, 3 }, avg(true, 3))), 1e-12)
  end)

  it("adaptive pooling is separable into PyTorch's bins; nil keeps a size", function()
    local x = randn({ 2, 3, 5, 7, 6 })
    local y = F.adaptive_avg_pool3d(x, { 3, nil, 4 })
    assert.are.same({ 2, 3, 3, 7, 4 }, y:size())
    -- bin i of n over L: floor(i L / n) .. ceil((i + 1) L / n)
    local function bins(L, n, i) return math.floor(i * L / n), math.ceil((i + 1) * L / n) end
    local z0, z1 = bins(5, 3, 1)
    local x0, x1 = bins(6, 4, 2)
    local ref = x[{ {}, {}, { z0 + 1, z1 }, 3, { x0 + 1, x1 } }]:mean({ 3, 4 })
    assert_close(y[{ {}, {}, 2, 3, 3 }], ref, 1e-12)
    local m, i = F.adaptive_max_pool3d(x, 2, true)
    assert.are.same({ 2, 3, 2, 2, 2 }, m:size())
    assert_close(m, x:reshape(2, 3, -1):gather(3, i:reshape(2, 3, -1)):reshape(2, 3, 2, 2, 2), 0)
    local y0, y1 = bins(7, 2, 1)
    assert_close(m[{ {}, {}, 1, 2, 1 }], x[{ {}, {}, { 1, 3 }, { y0 + 1, y1 }, { 1, 3 } }]:amax({ 3, 4, 5 }), 0)
  end)

  it("have gradients (gradcheck)", function()
    local x = randn({ 1, 2, 4, 3, 5 })
    support.gradcheck(function(t) return F.max_pool3d(t, 2, { stride = 1, padding = 1 }) end, { x })
    support.gradcheck(function(t) return F.avg_pool3d(t, 3, { stride = 2, padding = 1, count_include_pad = false }) end, { x })
    support.gradcheck(function(t) return F.adaptive_avg_pool3d(t, { 3, 2, 2 }) end, { x })
  end)

  it("refuses bad input at the caller's line", function()
    assert_error_has(function() F.max_pool3d(randn({ 2, 3, 4 }), 2) end, "4-D (unbatched) or 5-D")
    assert_error_has(function() F.max_pool3d(randn({ 1, 1, 4, 4, 4 })) end, "kernel_size")
    assert_error_has(function() F.avg_pool3d(randn({ 1, 1, 4, 4, 4 }), { 2, 2 }) end, "{d, h, w} table")
    assert_error_has(function() F.max_pool3d(randn({ 1, 1, 4, 4, 4 }), 2, { padding = 2 }) end, "max_pool3d")
    assert_error_has(function() F.adaptive_avg_pool3d(randn({ 1, 1, 4, 4, 4 }), { 0, 1, 1 }) end, "output_size")
  end)
end)

describe("the 3-D layers", function()
  it("Conv3d, ConvTranspose3d/1d, the pools and norms take PyTorch's arguments, shapes and names", function()
    wick.manual_seed(1)
    local m = nn.Sequential(nn.Conv3d(2, 4, 3, { padding = 1 }), nn.BatchNorm3d(4), nn.ReLU(), nn.MaxPool3d(2),
      nn.ConvTranspose3d(4, 2, 2, { stride = 2 }), nn.InstanceNorm3d(2, { affine = true }), nn.AvgPool3d(3, 1, 1),
      nn.AdaptiveAvgPool3d({ 2, nil, 3 }))
    assert.are.same({ 4, 2, 3, 3, 3 }, m[1].weight:size())
    assert.are.same({ 4, 2, 2, 2, 2 }, m[5].weight:size())
    local x = wick.randn(2, 2, 8, 8, 8)
    local y = m(x)
    assert.are.same({ 2, 2, 2, 8, 3 }, y:size())
    y:sum():backward()
    assert.are.same({ 4, 2, 3, 3, 3 }, m[1].weight.grad:size())
    assert.is_truthy(tostring(m):find("Conv3d(2, 4, kernel_size=(3, 3, 3), stride=(1, 1, 1), padding=(1, 1, 1))", 1, true))
    assert.is_truthy(tostring(m):find("MaxPool3d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)", 1, true))
    assert.are.same({ 2, 3, 8, 8, 8 }, nn.Conv3d(2, 3, 3, { padding = 1, padding_mode = "circular" })(x):size())
    local t = nn.ConvTranspose3d(2, 3, 3, 2, 1)
    assert.are.same({ 2, 3, 16, 15, 16 }, t(x, { 16, 15, 16 }):size())
    assert_error_has(function() t(x, { 18, 15, 16 }) end, "valid sizes range from [15, 15, 15] to [16, 16, 16]")
    assert.are.same({ 1, 3, 12 }, nn.ConvTranspose1d(2, 3, 4, 2)(wick.randn(1, 2, 5)):size())
    assert.are.same({ 2, 3, 7, 7, 7 }, nn.LazyConv3d(3, 2)(x):size())
    assert.are.same({ 2, 2, 10, 10, 10 }, nn.ReplicationPad3d(1)(x):size())
    local v, i = nn.AdaptiveMaxPool3d(2, true)(x)
    assert.are.same({ 2, 2, 2, 2, 2 }, i:size())
    assert_close(v, F.adaptive_max_pool3d(x, 2), 0)
  end)

  it("BatchNorm3d normalises over (N, D, H, W); momentum nil averages all batches", function()
    local bn = nn.BatchNorm3d(3, { dtype = "float64" })
    local x = wick.randn({ 4, 3, 2, 3, 2 }, F64)
    local y = bn(x)
    local flat = x:transpose(1, 2):reshape(3, -1)
    local mean, var = flat:mean(2), flat:var(2, { correction = 0 })
    assert_close(y[{ {}, 2 }], ((x[{ {}, 2 }] - mean[2]) / (var[2] + 1e-5):sqrt()), 1e-12)
    bn:reset_running_stats()
    bn.momentum = nil
    local xs = { wick.randn({ 2, 3, 2, 2, 2 }, F64), wick.randn({ 2, 3, 2, 2, 2 }, F64) }
    bn(xs[1]); bn(xs[2])
    local m1 = xs[1]:transpose(1, 2):reshape(3, -1):mean(2)
    local m2 = xs[2]:transpose(1, 2):reshape(3, -1):mean(2)
    assert_close(bn.running_mean, ((m1 + m2) / 2), 1e-12)
    assert.are.equal(2, bn.num_batches_tracked:item())
  end)

  it("F.interpolate runs trilinear and nearest on 5-D inputs, separably", function()
    local x = randn({ 1, 2, 3, 4, 5 })
    local y = F.interpolate(x, { size = { 5, 4, 5 }, mode = "trilinear", align_corners = true })
    -- the (H, W) sizes kept: only the depth is interpolated, linearly with align_corners
    assert_close(y[{ {}, {}, 2 }], (x[{ {}, {}, 1 }] * 0.5 + x[{ {}, {}, 2 }] * 0.5), 1e-12)
    assert_close(y[{ {}, {}, 5 }], x[{ {}, {}, 3 }], 1e-12)
    local n = F.interpolate(x, { scale_factor = 2 })
    assert.are.same({ 1, 2, 6, 8, 10 }, n:size())
    assert_close(n[{ {}, {}, { 2, 6, 2 }, { 2, 8, 2 }, { 1, 10, 2 } }], x, 0)
    assert_error_has(function() F.interpolate(randn({ 1, 2, 3, 4 }), { size = 2, mode = "trilinear" }) end, "needs 5D input")
  end)
end)
