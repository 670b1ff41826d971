-- wick.optim.swa_utils: PyTorch's stochastic weight averaging and EMA
-- helpers. AveragedModel keeps a copy of a model whose parameters are a
-- running average (or an EMA) of the model's; update_bn recomputes batch-norm
-- statistics for the averaged weights. SWALR, the scheduler, lives with the
-- other schedulers in wick.optim.
local wick = require("wick")
local nn = require("wick.nn")
local check = require("wick.argcheck")

local swa = {}

--- swa_utils.get_swa_avg_fn(): f(averaged, current, n) = averaged + (current - averaged) / (n + 1)
function swa.get_swa_avg_fn()
  return function(averaged, current, n) return averaged + (current - averaged) / (n + 1) end
end

local function check_decay(fn, decay)
  check.number(decay, fn, "decay")
  if decay < 0 or decay > 1 then
    check.fail(fn, "Invalid decay value %s provided. Please provide a value in [0,1] range.", tostring(decay))
  end
  return decay
end

--- swa_utils.get_ema_avg_fn([decay = 0.999]): f(ema, current, n) = decay ema + (1 - decay) current
function swa.get_ema_avg_fn(decay)
  decay = check_decay("get_ema_avg_fn", decay == nil and 0.999 or decay)
  return function(ema, current) return ema * decay + current * (1 - decay) end
end

local function number_of(n) return wick.is_tensor(n) and n:item() or n end
local groups_of -- (below, with AveragedModel)

--- swa_utils.get_swa_multi_avg_fn(): f(averaged_list, current_list, n) updating the averages in place
function swa.get_swa_multi_avg_fn()
  return function(averaged, current, n)
    local w = 1 / (number_of(n) + 1)
    wick.no_grad(function()
      for i, a in ipairs(averaged) do
        -- (an integer buffer, BatchNorm's num_batches_tracked, moves by the truncated step, as PyTorch's)
        if a:is_floating_point() then a:lerp_(current[i], w)
        else a:add_(((current[i] - a):double() * w):trunc():to(a.dtype)) end
      end
    end)
  end
end

--- swa_utils.get_ema_multi_avg_fn([decay = 0.999]): f(ema_list, current_list, n) updating in place
function swa.get_ema_multi_avg_fn(decay)
  decay = check_decay("get_ema_multi_avg_fn", decay == nil and 0.999 or decay)
  return function(ema, current)
    wick.no_grad(function()
      for i, a in ipairs(ema) do
        if a:is_floating_point() then a:lerp_(current[i], 1 - decay) else a:copy_(a * decay + current[i] * (1 - decay)) end
      end
    end)
  end
end

--- swa_utils.AveragedModel(model[, device[, avg_fn[, multi_avg_fn[, use_buffers = false]]]][, opts]):
--- a deep copy of model (m.module) and the count of averages taken (the buffer
--- n_averaged); m(...) runs the copy. m:update_parameters(model) folds model's
--- current parameters (and buffers, with use_buffers) into the average.
local AveragedModel = nn.Module:extend("AveragedModel", { "model" })
swa.AveragedModel = AveragedModel
local AVERAGED = { device = "device", avg_fn = "function", multi_avg_fn = "function", use_buffers = "boolean" }
function AveragedModel:init(model, ...)
  local o = check.positional("AveragedModel", { "device", "avg_fn", "multi_avg_fn", "use_buffers" }, AVERAGED, ...)
  if not check.is_module(model) then check.expected("AveragedModel", "model", "a module", model) end
  self.module = wick.deepcopy(model)
  if o.device ~= nil then self.module:to(o.device) end
  self:register_buffer("n_averaged", wick.tensor(0, { dtype = "int64", device = o.device }))
  self.avg_fn, self.multi_avg_fn, self.use_buffers = o.avg_fn, o.multi_avg_fn, o.use_buffers == true
end

function AveragedModel:forward(...) return self.module(...) end

local function tensors(m, with_buffers)
  local list = m:parameters()
  if with_buffers then
    for _, b in ipairs(m:buffers()) do list[#list + 1] = b end
  end
  return list
end

-- the pairs (averaged, current) grouped by device and dtype, the groups in PyTorch's ScalarType order
local DTYPE_ORDER = { uint8 = 0, int8 = 1, int16 = 2, int32 = 3, int64 = 4, float16 = 5, float32 = 6, float64 = 7,
  complex64 = 9, complex128 = 10, bool = 11, bfloat16 = 15 }
function groups_of(averaged, current)
  local by, list = {}, {}
  for i, a in ipairs(averaged) do
    local key = tostring(a.device) .. "/" .. a.dtype
    local g = by[key]
    if not g then
      g = { averaged = {}, current = {}, device = tostring(a.device), order = DTYPE_ORDER[a.dtype] or 99 }
      by[key], list[#list + 1] = g, g
    end
    g.averaged[#g.averaged + 1], g.current[#g.current + 1] = a, current[i]
  end
  table.sort(list, function(x, y)
    if x.device ~= y.device then return x.device < y.device end
    return x.order < y.order
  end)
  return list
end

function AveragedModel:update_parameters(model)
  if not check.is_module(model) then check.expected("AveragedModel:update_parameters", "model", "a module", model) end
  local mine, theirs = tensors(self.module, self.use_buffers), tensors(model, self.use_buffers)
  if #mine ~= #theirs then
    check.fail("AveragedModel:update_parameters", "the model has %d parameters%s, the averaged copy %d", #theirs,
      self.use_buffers and " and buffers" or "", #mine)
  end
  wick.no_grad(function()
    local averaged, current = {}, {}
    for i, p in ipairs(mine) do
      averaged[i] = p:detach()
      current[i] = theirs[i]:detach():to(p.device)
    end
    local n = self.n_averaged:item()
    if n == 0 then
      for i, a in ipairs(averaged) do a:copy_(current[i]) end
    elseif self.multi_avg_fn or not self.avg_fn then
      -- one call per device and dtype, as PyTorch's foreach grouping (in its dtype order: int64 before float32)
      local f = self.multi_avg_fn or swa.get_swa_multi_avg_fn()
      for _, g in ipairs(groups_of(averaged, current)) do f(g.averaged, g.current, self.n_averaged) end
    else
      for i, a in ipairs(averaged) do a:copy_(self.avg_fn(a, current[i], self.n_averaged:to(a.device))) end
    end
    if not self.use_buffers then -- the buffers follow the model's
      local bs, theirs_b = self.module:buffers(), model:buffers()
      for i, b in ipairs(bs) do
        if theirs_b[i] then b:detach():copy_(theirs_b[i]:detach():to(b.device)) end
      end
    end
    self.n_averaged:add_(1)
  end)
end

-- the inputs of a loader's batches: a DataLoader (its iter()), or an array of
-- batches; a batch that is a table gives its first element (PyTorch's input[0])
local function each_input(loader, fn)
  local function input(b)
    if type(b) == "table" and not wick.is_tensor(b) then return b[1] end
    return b
  end
  if type(loader) == "table" and type(loader.iter) == "function" then
    for b in loader:iter() do fn(input(b)) end
  elseif type(loader) == "table" then
    for _, b in ipairs(loader) do fn(input(b)) end
  else
    check.expected("update_bn", "loader", "a DataLoader or an array of batches", loader)
  end
end

--- swa_utils.update_bn(loader, model[, device]): one pass over loader in
--- training mode with every batch norm's running statistics reset and
--- averaged over the pass (momentum nil), as PyTorch's; the momenta and the
--- mode are restored after.
function swa.update_bn(loader, model, device)
  if not check.is_module(model) then check.expected("update_bn", "model", "a module", model) end
  local momenta, norms = {}, {}
  for _, m in ipairs(model:modules()) do
    if m._batch_norm and m.running_mean ~= nil then
      m:reset_running_stats()
      norms[#norms + 1] = m
      momenta[#norms] = m.momentum
    end
  end
  if #norms == 0 then return end
  local was_training = model.training
  model:train()
  for _, m in ipairs(norms) do m.momentum = nil end
  local ok, err = pcall(each_input, loader, function(x)
    if device ~= nil then x = x:to(device) end
    model(x)
  end)
  for i, m in ipairs(norms) do m.momentum = momenta[i] end
  model:train(was_training)
  if not ok then error(err, 0) end
end

return swa
