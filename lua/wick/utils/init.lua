-- wick.utils: PyTorch's torch.utils pieces that are not data loading
-- (wick.data) or module helpers (wick.nn.utils), and torchvision's
-- utils.make_grid and utils.save_image. Loaded on first use of wick.utils
-- (lua/wick/init.lua).
local grid = require("wick.utils.grid")
return require("wick.argcheck").strict({
  tensorboard = require("wick.utils.tensorboard"),
  checkpoint = require("wick.utils.checkpoint"), -- torch.utils.checkpoint: .checkpoint, .checkpoint_sequential
  data = require("wick.data"), -- torch.utils.data is wick.data
  _pytree = require("wick.utils.pytree"), -- torch.utils._pytree: tree_flatten, tree_unflatten, tree_map, ...
  make_grid = grid.make_grid,
  save_image = grid.save_image,
}, "wick.utils")
