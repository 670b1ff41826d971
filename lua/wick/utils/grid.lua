-- wick.utils.make_grid: torchvision.utils.make_grid, a batch of images laid
-- out as one image (rows of `nrow`, `padding` pixels of `pad_value` around
-- each). The tile placement is shared with the TensorBoard writer's
-- add_images (PyTorch's torch/utils/tensorboard/_utils.py make_grid: 8
-- columns, no padding, zeros). wick.utils.save_image: torchvision's
-- save_image, the grid written as a PNG, binary PPM or PGM file (wick has no JPEG
-- encoder; PNG is the TensorBoard writer's encoder, netpbm needs none).
local wick = require("wick")
local check = require("wick.argcheck")

local M = {}

-- the largest image made, in elements: the PNG encoder's limit too
M.MAX_ELEMENTS = 1e9

-- (rows, cols, height, width) of the grid of n images of h x w
function M.layout(n, h, w, nrow, padding)
  local cols = math.min(nrow, n)
  local rows = math.ceil(n / cols)
  return rows, cols, (h + padding) * rows + padding, (w + padding) * cols + padding
end

-- images (N, C, H, W): the (C, height, width) grid; the caller checked the size
function M.place(t, nrow, padding, pad_value)
  local n, c, h, w = t.shape[1], t.shape[2], t.shape[3], t.shape[4]
  local _, cols, height, width = M.layout(n, h, w, nrow, padding)
  local canvas = wick.full({ c, height, width }, pad_value, { dtype = t.dtype, device = t.device })
  for k = 0, n - 1 do
    local y, x = math.floor(k / cols), k % cols
    canvas:narrow(2, y * (h + padding) + padding + 1, h):narrow(3, x * (w + padding) + padding + 1, w):copy_(t[k + 1])
  end
  return canvas
end

-- torchvision's norm_ip: clamp to [low, high], then map it onto [0, 1]
local function normalize_(t, low, high)
  t:clamp_(low, high)
  t:sub_(low):div_(math.max(high - low, 1e-5))
end

local function normalize_range_(t, value_range)
  if value_range then normalize_(t, value_range[1], value_range[2])
  else normalize_(t, t:min():item(), t:max():item()) end
end

local function count(t) local n = 1 for i = 1, #t do n = n * t[i] end return n end

local GRID_ARGS = { "nrow", "padding", "normalize", "value_range", "scale_each", "pad_value" }
local GRID = { nrow = "integer", padding = "integer", normalize = "boolean", value_range = "table",
  scale_each = "boolean", pad_value = "number" }

local function make_grid(tensor, ...)
  local fn = "make_grid"
  local a = check.positional(fn, GRID_ARGS, GRID, ...)
  local nrow, padding, pad_value = a.nrow or 8, a.padding or 2, a.pad_value or 0
  if nrow < 1 then check.fail(fn, "nrow must be at least 1, got %d", nrow) end
  if padding < 0 then check.fail(fn, "padding must be >= 0, got %d", padding) end
  local vr = a.value_range
  if vr ~= nil and not (#vr == 2 and type(vr[1]) == "number" and type(vr[2]) == "number") then
    check.fail(fn, "value_range must be {min, max}, got %s", check.describe(vr))
  end
  if not check.is_tensor(tensor) then
    check.tensors(tensor, fn, "tensor")
    if #tensor == 0 then check.fail(fn, "expected a tensor or a non-empty list of tensors") end
    tensor = wick.stack(tensor, 1)
  end
  local d = tensor:dim()
  if d == 2 then tensor = tensor:unsqueeze(1); d = 3 end
  if d == 3 then
    if tensor.shape[1] == 1 then tensor = tensor:expand(3, tensor.shape[2], tensor.shape[3]) end
    tensor = tensor:unsqueeze(1)
  elseif d ~= 4 then
    check.fail(fn, "expected a 2-D, 3-D or 4-D tensor (or a list of 3-D ones), got %d-D", d)
  end
  local s = tensor.shape
  if s[2] == 1 then tensor = tensor:expand(s[1], 3, s[3], s[4]); s = tensor.shape end
  if count(s) == 0 then check.fail(fn, "the images are empty (shape %s)", table.concat(s, "x")) end
  local _, _, height, width = M.layout(s[1], s[3], s[4], nrow, padding)
  if s[1] > 1 and s[2] * height * width > M.MAX_ELEMENTS then
    check.fail(fn, "a grid of %d x %d x %d is too large (more than %g elements)", s[2], height, width, M.MAX_ELEMENTS)
  end
  if a.normalize then
    if not tensor:is_floating_point() then
      check.fail(fn, "normalize needs floating-point images, got %s", tensor.dtype)
    end
    tensor = tensor:contiguous():clone()
    if a.scale_each then
      for i = 1, s[1] do normalize_range_(tensor[i], vr) end
    else
      normalize_range_(tensor, vr)
    end
  end
  if s[1] == 1 then return tensor:squeeze(1) end
  return M.place(tensor, nrow, padding, pad_value)
end

--- make_grid(tensor[, nrow = 8[, padding = 2[, normalize = false[, value_range[, scale_each = false[, pad_value = 0]]]]]])
--- tensor: (B, C, H, W), (C, H, W), (H, W) or a list of same-size (C, H, W) tensors.
--- Runs without recording gradients, as torchvision's (a @torch.no_grad function):
--- the images may require grad (a generator's output), the grid never does.
function M.make_grid(tensor, ...) return wick.no_grad(make_grid, tensor, ...) end

-- the files save_image writes: extension (or format) -> netpbm magic number and channels
local NETPBM = { ppm = { magic = "P6", channels = 3 }, pgm = { magic = "P5", channels = 1 }, png = { png = true, channels = 3 } }
local FORMATS = "'png' (RGB), 'ppm' (P6, RGB) and 'pgm' (P5, grayscale)"

-- the channels of the images given to save_image (what make_grid makes RGB)
local function channels_of(tensor)
  if not check.is_tensor(tensor) then tensor = tensor[1] end
  if not check.is_tensor(tensor) or tensor:dim() < 2 then return nil end
  local d = tensor:dim()
  if d == 2 then return 1 end
  return tensor.shape[d == 4 and 2 or 1]
end

-- the bytes of a uint8 CPU tensor, in its row-major order, as a string
local unpack = table.unpack or unpack
local function bytes_of(t)
  local values = t:contiguous():reshape(-1):totable()
  local parts, CHUNK = {}, 4096 -- string.char takes its arguments from the stack: a chunk at a time
  for i = 1, #values, CHUNK do parts[#parts + 1] = string.char(unpack(values, i, math.min(i + CHUNK - 1, #values))) end
  return table.concat(parts)
end

local SAVE = { format = "string" }
for k, v in pairs(GRID) do SAVE[k] = v end

local function save_image(tensor, path, opts)
  local fn = "save_image"
  check.string(path, fn, "fp")
  opts = check.options(opts, fn, SAVE)
  local format = (opts.format or path:match("%.([^%./\\]+)$") or ""):lower()
  local kind = NETPBM[format]
  if not kind then
    check.fail(fn, "cannot write '%s': unknown format '%s'; wick writes %s (no JPEG: give the path a .png, .ppm or "
      .. ".pgm extension, or {format = 'png'})", path, opts.format or format, FORMATS)
  end
  local grid_opts = {}
  for k, v in pairs(opts) do if k ~= "format" then grid_opts[k] = v end end
  local channels = channels_of(tensor)
  if kind.channels == 1 and channels ~= nil and channels ~= 1 then
    check.fail(fn, "a .pgm file holds 1-channel images, got %d channels (write a .ppm)", channels)
  end
  local grid = make_grid(tensor, grid_opts) -- 3 channels from 1, as torchvision's
  if grid.shape[1] ~= 3 then check.fail(fn, "expected images of 1 or 3 channels, got %d", grid.shape[1]) end
  -- torchvision's rounding: mul(255).add_(0.5).clamp_(0, 255), then to uint8 (which truncates)
  grid = grid:detach():to("cpu")
  grid = grid:to(grid.dtype == "float64" and "float64" or "float32")
  local pixels = (grid * 255 + 0.5):clamp(0, 255):floor():to("uint8")
  pixels = kind.channels == 1 and pixels[1] or pixels:permute(2, 3, 1) -- (H, W) or (H, W, RGB)
  local f, err = io.open(path, "wb")
  if not f then check.fail(fn, "cannot open the file for writing: %s", tostring(err)) end
  local ok, werr
  if kind.png then ok, werr = f:write(wick._core.png_encode(pixels:contiguous()))
  else ok, werr = f:write(("%s\n%d %d\n255\n"):format(kind.magic, grid.shape[3], grid.shape[2]), bytes_of(pixels)) end
  f:close()
  if not ok then check.fail(fn, "cannot write '%s': %s", path, tostring(werr)) end
end

--- save_image(tensor, path[, {format =, and make_grid's options}]): torchvision's
--- save_image: make_grid's grid, values in [0, 1] scaled to bytes as torchvision
--- scales them, written as a PNG (.png, RGB), binary PPM (.ppm, RGB) or PGM (.pgm, 1 channel) file
function M.save_image(tensor, path, opts) return wick.no_grad(save_image, tensor, path, opts) end

return M
