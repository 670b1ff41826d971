-- wick.nn.utils: gradient clipping and state-dict name helpers.
local wick = require("wick")
local check = require("wick.argcheck")
local ordered = require("wick.ordered")

local utils = {}

-- PyTorch's norm_type: a positive number, or "inf" (float("inf"))
local function norm_type_of(v, fn)
  local norm_type = v or 2
  if type(norm_type) == "string" then
    if norm_type ~= "inf" then check.fail(fn, "norm_type must be a number or 'inf', got '%s'", norm_type) end
    norm_type = math.huge
  end
  if norm_type <= 0 then check.fail(fn, "norm_type must be positive, got %s", norm_type) end
  return norm_type
end

-- the norm of all the tensors as one vector, or nil for none: as PyTorch's, each tensor's norm in its
-- own dtype, then the norm of those in their promoted dtype (float32 and float64 gradients: float64),
-- on the first tensor's device
local function total_norm(tensors, norm_type)
  if #tensors == 0 then return nil end
  return wick.no_grad(function()
    local norms, device = {}, tensors[1].device
    for i, g in ipairs(tensors) do norms[i] = g:norm(norm_type):to(device) end
    return wick.stack(norms):norm(norm_type)
  end)
end

local function grads_of(params)
  local grads = {}
  for _, p in ipairs(params) do
    if p.grad then grads[#grads + 1] = p.grad end
  end
  return grads
end

--- get_total_norm(tensors[, norm_type = 2[, error_if_nonfinite = false]][, opts]): the norm of the
--- tensors (gradients) as one vector, a 0-dim tensor (PyTorch 2.6's half of clip_grad_norm_)
local TOTAL = { norm_type = "number|string", error_if_nonfinite = "boolean", foreach = "boolean" }
function utils.get_total_norm(tensors, ...)
  tensors = check.tensors(tensors, "get_total_norm", "tensors")
  local opts = check.positional("get_total_norm", { "norm_type", "error_if_nonfinite", "foreach" }, TOTAL, ...)
  local total = total_norm(tensors, norm_type_of(opts.norm_type, "get_total_norm"))
  if not total then return wick.tensor(0) end
  local value = total:item()
  if opts.error_if_nonfinite and (value ~= value or value == math.huge) then
    check.fail("get_total_norm", "The total norm of order %s for gradients from `parameters` is non-finite, so it cannot be clipped. To disable this error and scale the gradients by the non-finite norm anyway, set `error_if_nonfinite=False`", opts.norm_type or 2)
  end
  return total
end

--- clip_grads_with_norm_(params, max_norm, total_norm[, opts]): scales the gradients by
--- max_norm / (total_norm + 1e-6) where that is below 1 (PyTorch 2.6's other half)
local WITH_NORM = { max_norm = "number", total_norm = "number|tensor", foreach = "boolean" }
function utils.clip_grads_with_norm_(params, ...)
  params = check.tensors(params, "clip_grads_with_norm_", "parameters")
  local opts = check.positional("clip_grads_with_norm_", { "max_norm", "total_norm", "foreach" }, WITH_NORM, ...)
  local max_norm = check.number(opts.max_norm, "clip_grads_with_norm_", "max_norm")
  local norm = opts.total_norm
  if norm == nil then check.fail("clip_grads_with_norm_", "missing required argument 'total_norm'") end
  -- (in the norm's dtype, as PyTorch's: a float32 norm's coefficient is rounded to float32)
  local coef = wick.is_tensor(norm) and wick.no_grad(function() return max_norm / (norm:detach() + 1e-6) end)
    or max_norm / (norm + 1e-6)
  local value = wick.is_tensor(coef) and coef:item() or coef
  if not (value >= 1) then -- (a NaN norm makes every gradient NaN, as PyTorch's)
    wick.no_grad(function()
      for _, g in ipairs(grads_of(params)) do g:mul_(wick.is_tensor(coef) and coef:to(g.device) or coef) end
    end)
  end
end

--- Scales the gradients of params in place so that their global norm is at most
--- max_norm; returns the norm before clipping (a 0-dim tensor), like PyTorch.
--- clip_grad_norm_(params, max_norm[, norm_type = 2[, error_if_nonfinite = false]][, opts]):
--- PyTorch's arguments, positionally or in the options table (foreach accepted): get_total_norm of the
--- gradients, then clip_grads_with_norm_
local CLIP = { max_norm = "number", norm_type = "number|string", error_if_nonfinite = "boolean", foreach = "boolean" }
function utils.clip_grad_norm_(params, ...)
  params = check.tensors(params, "clip_grad_norm_", "parameters")
  local opts = check.positional("clip_grad_norm_", { "max_norm", "norm_type", "error_if_nonfinite", "foreach" }, CLIP, ...)
  local max_norm = check.number(opts.max_norm, "clip_grad_norm_", "max_norm")
  local grads = grads_of(params)
  local norm_type = norm_type_of(opts.norm_type, "clip_grad_norm_")
  if #grads == 0 then return wick.tensor(0) end
  local total = total_norm(grads, norm_type)
  local value = total:item()
  if opts.error_if_nonfinite and (value ~= value or value == math.huge) then
    check.fail("clip_grad_norm_", "The total norm of order %s for gradients from `parameters` is non-finite, so it cannot be clipped. To disable this error and scale the gradients by the non-finite norm anyway, set `error_if_nonfinite=False`", norm_type)
  end
  utils.clip_grads_with_norm_(params, max_norm, total)
  return total
end

--- clip_grad_value_(params, clip_value): clamps every gradient into
--- [-clip_value, clip_value] in place, like PyTorch's
function utils.clip_grad_value_(params, ...)
  params = check.tensors(params, "clip_grad_value_", "parameters")
  local opts = check.positional("clip_grad_value_", { "clip_value", "foreach" }, { clip_value = "number", foreach = "boolean" }, ...)
  local clip_value = check.number(opts.clip_value, "clip_grad_value_", "clip_value")
  wick.no_grad(function()
    for _, p in ipairs(params) do
      if p.grad then p.grad:clamp_(-clip_value, clip_value) end
    end
  end)
end

--- parameters_to_vector(params): the parameters flattened into one vector
function utils.parameters_to_vector(params)
  params = check.tensors(params, "parameters_to_vector", "parameters")
  local flat = {}
  for i, p in ipairs(params) do
    if i > 1 and tostring(p.device) ~= tostring(params[1].device) then
      check.fail("parameters_to_vector", "Found two parameters on different devices, this is currently not supported.")
    end
    flat[i] = p:reshape(-1)
  end
  if #flat == 0 then return wick.tensor({}) end
  return wick.cat(flat)
end

--- vector_to_parameters(vec, params): copies the slices of vec into the
--- parameters' data, in order (PyTorch's replaces param.data the same way)
function utils.vector_to_parameters(vec, params)
  check.tensor(vec, "vector_to_parameters", "vec")
  params = check.tensors(params, "vector_to_parameters", "parameters")
  if vec:dim() ~= 1 then check.fail("vector_to_parameters", "expected a 1-D tensor for argument 'vec', got %dD", vec:dim()) end
  local n = 0
  for _, p in ipairs(params) do n = n + p:numel() end
  if n ~= vec:numel() then
    check.fail("vector_to_parameters", "vec has %d elements but the parameters hold %d", vec:numel(), n)
  end
  wick.no_grad(function()
    local at = 1
    for _, p in ipairs(params) do
      local k = p:numel()
      p:copy_(vec:narrow(1, at, k):view_as(p))
      at = at + k
    end
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

-- m is a container whose entries are positions (ModuleList, Sequential, ParameterList, and a parametrized
-- tensor's ParametrizationList: PyTorch's "parametrizations.weight.0._u")
local function indexes_by_position(m)
  local nn = require("wick.nn")
  return wick.isinstance(m, { nn.ModuleList, nn.Sequential, nn.ParameterList, nn.utils.parametrize.ParametrizationList })
end

-- A name with each purely numeric dotted component (a child index) moved by
-- delta: "h.0.ln_1.weight" -> "h.1.ln_1.weight" (ln_1 is a name, not an index).
-- With a model, the name is walked down its tree: a number moves only where it
-- indexes a ModuleList, Sequential or ParameterList, and stays a name elsewhere
-- (a ModuleDict's "0", TFT's MultiEmbedding); past the tree every number moves.
local function renumber(name, delta, fn, model)
  local parts, m = {}, model
  for part in (name .. "."):gmatch("(.-)%.") do
    local wick_name = part
    if part:match("^%d+$") and (m == nil or indexes_by_position(m)) then
      local n = #part <= 15 and tonumber(part) + delta
      if not n or n < 0 then
        check.fail(fn, "the name '%s' has the index %s, which has no %s form%s", name, part,
          delta > 0 and "1-based" or "0-based (wick's indices start at 1)",
          model == nil and " (a ModuleDict's numeric key: pass the model too, " .. fn .. "(sd, model))" or "")
      end
      part = tostring(n)
      if delta > 0 then wick_name = part end
    end
    parts[#parts + 1] = part
    if m ~= nil then -- (the child under wick's name; a tensor or a missing name ends the walk)
      local ok, child = pcall(function() return m[wick_name] end)
      m = ok and check.is_module(child) and child or nil
    end
  end
  return table.concat(parts, ".")
end

-- (an OrderedDict in the same order, as the state dict's: a plain table's names sorted)
local function renamed(sd, delta, fn, model)
  if model ~= nil then check.module(model, fn, "model") end
  if type(sd) == "string" then return renumber(sd, delta, fn, model) end -- one name: a named_parameters() key
  names_of(sd, fn)
  local keys = ordered.is(sd) and ordered.names(sd) or nil
  if not keys then
    keys = {}
    for k in pairs(sd) do keys[#keys + 1] = k end
    table.sort(keys)
  end
  local out, order, from = {}, {}, {}
  for _, k in ipairs(keys) do
    local name = renumber(k, delta, fn, model)
    if from[name] then check.fail(fn, "the names '%s' and '%s' both become '%s'", from[name], k, name) end
    from[name] = k
    out[name], order[#order + 1] = rawget(sd, k), name
  end
  return ordered.of(out, order)
end

--- from_pytorch_names(sd[, model]): with the model, only the numbers that index its lists move
function utils.from_pytorch_names(sd, model) return renamed(sd, 1, "from_pytorch_names", model) end

--- The reverse of from_pytorch_names: wick's 1-based child indices as PyTorch's 0-based ones.
function utils.to_pytorch_names(sd, model) return renamed(sd, -1, "to_pytorch_names", model) end

--- clip_grad_norm(...): PyTorch's deprecated name of clip_grad_norm_, with its warning (once per call site)
function utils.clip_grad_norm(...)
  require("wick.nn.common").warn("nn.utils.clip_grad_norm is now deprecated in favor of nn.utils.clip_grad_norm_.")
  return utils.clip_grad_norm_(...)
end

-- PyTorch's module paths: torch.nn.utils.clip_grad and torch.nn.utils.convert_parameters
utils.clip_grad = check.strict({ clip_grad_norm_ = utils.clip_grad_norm_, clip_grad_value_ = utils.clip_grad_value_,
  clip_grad_norm = utils.clip_grad_norm }, "wick.nn.utils.clip_grad")
utils.convert_parameters = check.strict({ parameters_to_vector = utils.parameters_to_vector,
  vector_to_parameters = utils.vector_to_parameters }, "wick.nn.utils.convert_parameters")

-- ---- fusion (one home: wick.nn.fusion, also nn.utils.fusion) ----
do
  local fusion = require("wick.nn.fusion")
  for _, name in ipairs({ "fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights" }) do
    utils[name] = fusion[name]
  end
end

-- ---- skip_init ----

--- skip_init(module_cls, ...[, {device =, ...}]): module_cls(...) built without initialising its parameters and
--- buffers (their memory is uninitialized, as wick.empty's): built on the meta device, then to_empty on the
--- device asked (default "cpu"). The class must take a device option and pass it to its tensors.
function utils.skip_init(module_cls, ...)
  local fn = "skip_init"
  local Module = require("wick.nn").Module
  if type(module_cls) ~= "table" or rawget(module_cls, "__name") == nil or not wick.issubclass(module_cls, Module) then
    check.fail(fn, "Expected a Module; got %s", type(module_cls) == "table" and rawget(module_cls, "__name") ~= nil
      and tostring(module_cls) or type(module_cls) == "string" and "'" .. module_cls .. "'" or check.describe(module_cls))
  end
  local n = select("#", ...)
  local args = { ... }
  while n > 0 and args[n] == nil do n = n - 1 end
  local opts = {}
  local last = args[n]
  if n > 0 and type(last) == "table" and getmetatable(last) == nil and #last == 0 then
    for k, v in pairs(last) do opts[k] = v end
  else
    n = n + 1
  end
  args[n] = opts
  local device = opts.device
  if device == nil then device = "cpu" end
  if not pcall(wick.device, device) then
    check.fail(fn, "expected a device for option 'device', got %s", type(device) == "string" and "'" .. device .. "'"
      or check.describe(device))
  end
  opts.device = "meta"
  local ok, m = pcall(module_cls, unpack(args, 1, n))
  if not ok then
    if type(m) == "string" and (m:find("unknown option 'device'", 1, true)
      or m:find("unexpected keyword argument 'device'", 1, true)) then
      check.fail(fn, "Module must support a 'device' arg to skip initialization")
    end
    if type(m) == "string" and m:find("device", 1, true) then -- (a constructor that took the option for something else)
      check.fail(fn, "Module must support a 'device' arg to skip initialization (%s)", (m:gsub("^[^\n]-:%d+: ", "")))
    end
    if type(m) ~= "string" then error(m, 0) end
    check.fail(fn, "%s", (m:gsub("^[^\n]-:%d+: ", ""))) -- (the constructor's own error, under skip_init's name)
  end
  for _, list in ipairs({ m:parameters(), m:buffers() }) do
    for _, t in ipairs(list) do
      if not t.is_meta then check.fail(fn, "Module must support a 'device' arg to skip initialization") end
    end
  end
  local made, err = pcall(m.to_empty, m, { device = device })
  if not made then check.fail(fn, "%s", type(err) == "string" and (err:gsub("^[^\n]-:%d+: ", "")) or tostring(err)) end
  return m
end

-- ---- memory format of the convolutions' weights ----

-- the weight of every module of classes in the tree laid out in fmt (in place: each keeps its identity)
local function convert_weights(fn, module, memory_format, classes)
  check.module(module, fn, "module")
  if memory_format == nil then check.fail(fn, "missing required argument 'memory_format'") end
  local fmt = wick._memory_format(memory_format, fn)
  local rank = fmt == "channels_last" and 4 or fmt == "channels_last_3d" and 5 or nil
  local function visit(m)
    if wick.isinstance(m, classes) then
      local w = m.weight
      if wick.is_tensor(w) then
        if fmt == "preserve_format" then check.fail(fn, "Unsupported memory format Preserve") end
        if rank and w:dim() ~= rank then check.fail(fn, "required rank %d tensor to use %s format", rank, fmt) end
        wick.no_grad(function()
          local d = w:detach()
          local laid = d:contiguous(fmt)
          if not rawequal(laid, d) then w:set_(laid) end
        end)
      end
    end
    for _, child in m:named_children() do visit(child) end
  end
  visit(module)
  return module
end

--- convert_conv2d_weight_memory_format(module, memory_format): the weight of every nn.Conv2d and
--- nn.ConvTranspose2d in module (itself included) laid out in memory_format (wick.channels_last or
--- wick.contiguous_format), in place; returns module
function utils.convert_conv2d_weight_memory_format(module, memory_format)
  local nn = require("wick.nn")
  return convert_weights("convert_conv2d_weight_memory_format", module, memory_format, { nn.Conv2d, nn.ConvTranspose2d })
end

--- convert_conv3d_weight_memory_format(module, memory_format): the same for nn.Conv3d and nn.ConvTranspose3d
--- (wick.channels_last_3d)
function utils.convert_conv3d_weight_memory_format(module, memory_format)
  local nn = require("wick.nn")
  return convert_weights("convert_conv3d_weight_memory_format", module, memory_format, { nn.Conv3d, nn.ConvTranspose3d })
end

return utils
