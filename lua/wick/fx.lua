-- wick.fx: PyTorch's torch.fx without symbolic tracing. Nothing is ever a
-- Proxy here (HF's isinstance(inputs_embeds, torch.fx.Proxy) is false), and
-- fx.wrap(fn_or_name) (timm's register_notrace_function) returns its
-- argument. Loaded on first use of wick.fx (lua/wick/init.lua).
local check = require("wick.argcheck")
local Object = require("wick.object")

local function wrap(f)
  if type(f) ~= "string" then check.callable(f, "fx.wrap", "fn_or_name") end
  return f
end
return check.strict({ Proxy = Object:extend("Proxy"), wrap = wrap }, "wick.fx")
