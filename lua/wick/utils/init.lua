-- wick.utils: PyTorch's torch.utils pieces that are not data loading
-- (wick.data) or module helpers (wick.nn.utils). Submodules load on first use.
local lazy = { tensorboard = "wick.utils.tensorboard" }
return setmetatable({}, {
  __index = function(t, k)
    local module = lazy[k]
    if module then
      local value = require(module)
      rawset(t, k, value)
      return value
    end
  end,
})
