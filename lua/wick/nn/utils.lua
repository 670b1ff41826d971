-- wick.nn.utils: gradient clipping and state-dict name helpers.
local wick = require("wick")
local check = require("wick.argcheck")

local utils = {}

--- Scales the gradients of params in place so that their global norm is at most
--- max_norm; returns the norm before clipping (a 0-dim tensor), like PyTorch.
function utils.clip_grad_norm_(params, max_norm, norm_type)
  params = check.tensors(params, "clip_grad_norm_", "parameters")
  check.number(max_norm, "clip_grad_norm_", "max_norm")
  norm_type = check.opt_number(norm_type, "clip_grad_norm_", "norm_type", 2)
  if norm_type <= 0 then check.fail("clip_grad_norm_", "norm_type must be positive, got %s", norm_type) end
  local grads = {}
  for _, p in ipairs(params) do
    local g = p.grad
    if g then grads[#grads + 1] = g end
  end
  if #grads == 0 then return wick.tensor(0) end
  return wick.no_grad(function()
    -- the norm stays on the gradients' device; only its value is read back
    local total
    if norm_type == math.huge then
      for _, g in ipairs(grads) do
        local m = g:abs():max():to("float64")
        total = total and total:maximum(m) or m
      end
    else
      for _, g in ipairs(grads) do
        local s = (g:abs() ^ norm_type):sum():to("float64")
        total = total and total + s or s
      end
      total = total ^ (1 / norm_type)
    end
    local coef = max_norm / (total:item() + 1e-6)
    if coef < 1 then
      for _, g in ipairs(grads) do g:mul_(coef) end
    end
    return total:to(grads[1].dtype)
  end)
end

--- A copy of a state dict with `prefix` removed from every key that has it
--- (e.g. "module." from a DataParallel checkpoint).
function utils.strip_prefix(sd, prefix)
  check.table(sd, "strip_prefix", "state_dict")
  check.string(prefix, "strip_prefix", "prefix")
  local out = {}
  for k, v in pairs(sd) do
    if type(k) == "string" and k:sub(1, #prefix) == prefix then out[k:sub(#prefix + 1)] = v
    else out[k] = v end
  end
  return out
end

--- PyTorch's 0-based child indices in state-dict names ("0.weight",
--- "layers.2.bias") as wick's 1-based ones ("1.weight", "layers.3.bias").
-- the keys must be strings (a state dict's names)
local function names_of(sd, fn)
  check.table(sd, fn, "state_dict")
  for k in pairs(sd) do
    if type(k) ~= "string" then check.fail(fn, "expected string keys in the state dict, got a %s key", type(k)) end
  end
  return sd
end

function utils.from_pytorch_names(sd)
  local out = {}
  for k, v in pairs(names_of(sd, "from_pytorch_names")) do
    local name = k:gsub("%f[%w](%d+)%f[%.%z]", function(d) return tostring(tonumber(d) + 1) end)
    out[name] = v
  end
  return out
end

--- The reverse of from_pytorch_names.
function utils.to_pytorch_names(sd)
  local out = {}
  for k, v in pairs(names_of(sd, "to_pytorch_names")) do
    local name = k:gsub("%f[%w](%d+)%f[%.%z]", function(d) return tostring(tonumber(d) - 1) end)
    out[name] = v
  end
  return out
end

return utils
