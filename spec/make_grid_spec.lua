-- wick.utils.make_grid: torchvision.utils.make_grid's layout (rows of nrow,
-- padding of pad_value around every image), its 1-channel -> RGB rule, the
-- single-image shortcut and normalize / value_range / scale_each. The expected
-- grids are built here pixel by pixel from torchvision's definition.
local wick = require("wick")
local make_grid = wick.utils.make_grid

-- the grid torchvision makes, as nested lists: imgs is a list of C x H x W lists
local function expected(imgs, nrow, padding, pad_value)
  local n, c, h, w = #imgs, #imgs[1], #imgs[1][1], #imgs[1][1][1]
  local cols = math.min(nrow, n)
  local rows = math.ceil(n / cols)
  local H, W = (h + padding) * rows + padding, (w + padding) * cols + padding
  local g = {}
  for ch = 1, c do
    g[ch] = {}
    for y = 1, H do
      g[ch][y] = {}
      for x = 1, W do g[ch][y][x] = pad_value end
    end
  end
  for k = 0, n - 1 do
    local oy, ox = math.floor(k / cols) * (h + padding) + padding, (k % cols) * (w + padding) + padding
    for ch = 1, c do
      for y = 1, h do
        for x = 1, w do g[ch][oy + y][ox + x] = imgs[k + 1][ch][y][x] end
      end
    end
  end
  return g
end

local function close(a, b)
  assert.are.same(a.shape, b.shape)
  assert.is_true(wick.allclose(a, b, 1e-6, 1e-6), tostring(a) .. "\n" .. tostring(b))
end

describe("wick.utils.make_grid", function()
  it("lays the images out in rows of nrow with padding of pad_value", function()
    local t = wick.rand(3, 3, 2, 2)
    local g = make_grid(t, 2, 1, false, nil, false, 0.5)
    assert.are.same({ 3, 7, 7 }, g.shape)
    assert.are.same(expected(t:totable(), 2, 1, 0.5), g:totable())
    -- torchvision's defaults: nrow = 8, padding = 2, pad_value = 0
    local t10 = wick.rand(10, 3, 4, 5)
    local d = make_grid(t10)
    assert.are.same({ 3, 2 * 6 + 2, 8 * 7 + 2 }, d.shape)
    assert.are.same(expected(t10:totable(), 8, 2, 0), d:totable())
    assert.are.same(d:totable(), make_grid(t10, { nrow = 8, padding = 2 }):totable())
    -- padding 0, one row
    local t4 = wick.arange(0, 4 * 2 * 3 * 3, { dtype = "float64" }):view(4, 2, 3, 3):narrow(2, 1, 1)
    assert.are.same(expected(t4:expand(4, 3, 3, 3):totable(), 8, 0, 0), make_grid(t4, { padding = 0 }):totable())
    assert.are.equal("float64", make_grid(t4).dtype)
  end)

  it("repeats one channel into three, returns a single image as it is", function()
    local gray = wick.rand(5, 1, 2, 3)
    local g = make_grid(gray, 3)
    assert.are.same(expected(gray:expand(5, 3, 2, 3):totable(), 3, 2, 0), g:totable())
    local img = wick.rand(3, 4, 5)
    assert.are.same(img:totable(), make_grid(img):totable())
    assert.are.same(img:totable(), make_grid(img:unsqueeze(1)):totable())
    assert.are.same(img[2]:unsqueeze(1):expand(3, 4, 5):totable(), make_grid(img[2]):totable()) -- (H, W)
    assert.are.same(img[2]:unsqueeze(1):expand(3, 4, 5):totable(), make_grid(img:narrow(1, 2, 1)):totable())
    local rgba = wick.rand(2, 4, 2, 2) -- any channel count but 1 is kept
    assert.are.same({ 4, 6, 10 }, make_grid(rgba).shape)
  end)

  it("takes a list of images", function()
    local a, b = wick.rand(3, 2, 2), wick.rand(3, 2, 2)
    assert.are.same(make_grid(wick.stack({ a, b })):totable(), make_grid({ a, b }):totable())
  end)

  it("normalizes over the batch, a value_range, or each image", function()
    local t = wick.tensor({ { { { 0, 2 } } }, { { { 4, 8 } } } }) -- 2 x 1 x 1 x 2
    local function grid_of(list) return make_grid(wick.tensor(list), { padding = 0 }) end
    close(grid_of({ { { { 0, 0.25 } } }, { { { 0.5, 1 } } } }), make_grid(t, { padding = 0, normalize = true }))
    close(grid_of({ { { { 0, 0 } } }, { { { 1, 1 } } } }),
      make_grid(t, { padding = 0, normalize = true, value_range = { 2, 4 } }))
    close(grid_of({ { { { 0, 1 } } }, { { { 0, 1 } } } }), make_grid(t, { padding = 0, normalize = true, scale_each = true }))
    close(grid_of({ { { { 0, 0 } } }, { { { 1, 1 } } } }),
      make_grid(t, { padding = 0, normalize = true, scale_each = true, value_range = { 2, 4 } }))
    assert.are.same({ { { { 0, 2 } } }, { { { 4, 8 } } } }, t:totable()) -- the input is left alone
    -- a constant image: divided by 1e-5, not by zero
    close(wick.zeros(3, 1, 2), make_grid(wick.full({ 1, 1, 2 }, 3), { normalize = true }))
  end)

  it("raises clear errors, also for hostile sizes", function()
    local function fails(pattern, f)
      local ok, err = pcall(f)
      assert.is_false(ok)
      assert.truthy(tostring(err):match("make_grid_spec.lua:%d+: make_grid: " .. pattern), tostring(err))
    end
    fails("nrow must be at least 1, got 0", function() make_grid(wick.rand(2, 3, 2, 2), 0) end)
    fails("padding must be >= 0, got %-1", function() make_grid(wick.rand(2, 3, 2, 2), 8, -1) end)
    fails("expected a 2%-D, 3%-D or 4%-D tensor", function() make_grid(wick.rand(2, 2, 3, 2, 2)) end)
    fails("expected a 2%-D, 3%-D or 4%-D tensor", function() make_grid(wick.rand(5)) end)
    fails("normalize needs floating%-point images, got uint8",
      function() make_grid(wick.zeros(2, 3, 2, 2, { dtype = "uint8" }), { normalize = true }) end)
    fails("value_range must be {min, max}", function() make_grid(wick.rand(2, 3, 2, 2), { value_range = { 1 } }) end)
    fails("unknown option 'range'", function() make_grid(wick.rand(2, 3, 2, 2), { range = { 0, 1 } }) end)
    fails("expected a tensor or a non%-empty list of tensors", function() make_grid({}) end)
    fails("the images are empty", function() make_grid(wick.rand(2, 3, 0, 2)) end)
    local huge = wick.zeros(1, 3, 1, 1):expand(1000000, 3, 100, 100)
    fails("a grid of 3 x 12750002 x 818 is too large", function() make_grid(huge) end)
  end)
end)
