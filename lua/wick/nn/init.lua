-- wick.nn: modules, layers, losses, and wick.nn.functional / wick.nn.utils.
local nn = {}
nn.Module = require("wick.nn.module")
for name, value in pairs(require("wick.nn.layers")) do nn[name] = value end
for name, value in pairs(require("wick.nn.attention")) do nn[name] = value end
for name, value in pairs(require("wick.nn.recurrent")) do nn[name] = value end
nn.DataParallel = require("wick.nn.data_parallel")
nn.parallel = require("wick.nn.parallel") -- DistributedDataParallel; nn.parallel.DataParallel is nn.DataParallel
nn.SyncBatchNorm = require("wick.nn.sync_batchnorm") -- and nn.SyncBatchNorm.convert_sync_batchnorm
nn.AdaptiveLogSoftmaxWithLoss = require("wick.nn.adaptive")
nn.functional = require("wick.nn.functional")
nn.utils = require("wick.nn.utils")
nn.utils.rnn = require("wick.nn.rnn_utils") -- pad_sequence, pack_padded_sequence, ...
nn.utils.parametrize = require("wick.nn.parametrize")
nn.utils.prune = require("wick.nn.prune")
nn.utils.fusion = require("wick.nn.fusion") -- fuse_conv_bn_eval, fuse_linear_bn_eval and their _weights forms
-- torch.nn.utils.stateless.functional_call: torch.func's (loaded on first call: wick.func requires wick.nn)
nn.utils.stateless = { functional_call = function(...) return require("wick.func").functional_call(...) end }
for name, value in pairs(require("wick.nn.reparam")) do nn.utils[name] = value end -- weight_norm, spectral_norm, parametrizations
nn.init = require("wick.nn.initializers")
nn.grad = require("wick.nn.grad") -- conv{1,2,3}d_input, conv{1,2,3}d_weight
nn.Parameter = nn.Parameter or require("wick.nn.layers").Parameter
-- PyTorch's paths to the classes, nn.modules.conv.Conv2d, nn.modules.module.Module:
-- every submodule of nn.modules is wick.nn itself
nn.modules = setmetatable({}, { __index = function() return nn end })
-- PyTorch's module-global hooks, torch.nn.modules.module.register_module_forward_hook and kin
for _, kind in ipairs({ "forward_pre_hook", "forward_hook", "full_backward_hook", "full_backward_pre_hook" }) do
  nn["register_module_" .. kind] = nn.Module["register_module_" .. kind]
end
-- and torch.nn.parameter.Parameter (deepxde's), nn.parameter.Buffer
nn.parameter = { Parameter = nn.Parameter, Buffer = nn.Buffer }
-- a name wick.nn (or wick.nn.functional, wick.nn.utils) does not have is an
-- error at the caller's line, as PyTorch's AttributeError, not a nil called further on
local strict = require("wick.argcheck").strict
strict(nn, "wick.nn")
strict(nn.functional, "wick.nn.functional")
strict(nn.utils, "wick.nn.utils")
strict(nn.grad, "wick.nn.grad")
return nn
