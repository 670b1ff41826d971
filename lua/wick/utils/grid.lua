-- wick.utils.make_grid: torchvision.utils.make_grid, a batch of images laid
-- out as one image (rows of `nrow`, `padding` pixels of `pad_value` around
-- each). The tile placement is shared with the TensorBoard writer's
-- add_images (PyTorch's torch/utils/tensorboard/_utils.py make_grid: 8
-- columns, no padding, zeros).
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

--- make_grid(tensor[, nrow = 8[, padding = 2[, normalize = false[, value_range[, scale_each = false[, pad_value = 0]]]]]])
--- tensor: (B, C, H, W), (C, H, W), (H, W) or a list of same-size (C, H, W) tensors.
function M.make_grid(tensor, ...)
  local fn = "make_grid"
  local a = check.positional(fn, { "nrow", "padding", "normalize", "value_range", "scale_each", "pad_value" },
    { nrow = "integer", padding = "integer", normalize = "boolean", value_range = "table", scale_each = "boolean",
      pad_value = "number" }, ...)
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

return M
