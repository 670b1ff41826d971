-- wick.utils: PyTorch's torch.utils pieces that are not data loading
-- (wick.data) or module helpers (wick.nn.utils), and torchvision's
-- utils.make_grid. Loaded on first use of wick.utils (lua/wick/init.lua).
return {
  tensorboard = require("wick.utils.tensorboard"),
  make_grid = require("wick.utils.grid").make_grid,
}
