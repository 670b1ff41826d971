-- wick.nn.grad: PyTorch's torch.nn.grad, the gradients of a convolution with
-- respect to its input and to its weight, as functions: conv{1,2,3}d_input
-- and conv{1,2,3}d_weight. Each is the convolution's own backward (a
-- convolution is linear in each argument, so its gradient at zeros is the
-- gradient anywhere), differentiable again where the convolution is.
local wick = require("wick")
local check = require("wick.argcheck")

local G = {}
local ORDER = { "stride", "padding", "dilation", "groups" }
local SPEC = { stride = "integer|table", padding = "integer|table|string", dilation = "integer|table", groups = "integer" }

-- the gradient of F.convNd(x, w, nil, opts) with respect to `wrt` ("input" or "weight")
local function conv_grad(fn, conv, wrt, x, w, grad_output, ...)
  check.tensor(grad_output, fn, "grad_output")
  local opts = check.positional(fn, ORDER, SPEC, ...)
  local create = grad_output.requires_grad or (wick.is_tensor(x) and x.requires_grad) or
    (wick.is_tensor(w) and w.requires_grad)
  local t = { dtype = grad_output.dtype, device = grad_output.device, requires_grad = true }
  return wick.enable_grad(function()
    local leaf
    if wrt == "input" then
      check.table(x, fn, "input_size")
      leaf = wick.zeros(x, t)
      x = leaf
    else
      check.table(w, fn, "weight_size")
      leaf = wick.zeros(w, t)
      w = leaf
    end
    local y = conv(x, w, nil, opts)
    if y.shape ~= grad_output.shape then
      check.fail(fn, "grad_output of shape %s does not match the convolution's output %s", tostring(grad_output.shape),
        tostring(y.shape))
    end
    return wick.autograd.grad(y, leaf, grad_output, { create_graph = create })[1]
  end)
end

for _, d in ipairs({ 1, 2, 3 }) do
  local name = ("conv%dd"):format(d)
  --- nn.grad.convNd_input(input_size, weight, grad_output[, stride = 1[, padding = 0[, dilation = 1[, groups = 1]]]][, opts])
  G[name .. "_input"] = function(input_size, weight, grad_output, ...)
    local fn = "nn.grad." .. name .. "_input"
    check.tensor(weight, fn, "weight")
    return conv_grad(fn, require("wick.nn.functional")[name], "input", input_size, weight, grad_output, ...)
  end
  --- nn.grad.convNd_weight(input, weight_size, grad_output[, stride = 1[, padding = 0[, dilation = 1[, groups = 1]]]][, opts])
  G[name .. "_weight"] = function(input, weight_size, grad_output, ...)
    local fn = "nn.grad." .. name .. "_weight"
    check.tensor(input, fn, "input")
    return conv_grad(fn, require("wick.nn.functional")[name], "weight", input, weight_size, grad_output, ...)
  end
end

return G
