-- wick.amp: mixed-precision training, like torch.amp. wick.amp.autocast is
-- wick.autocast (lua/wick/init.lua; its state lives in the core). GradScaler
-- scales the loss so that small float16 gradients do not flush to zero, then
-- unscales the gradients before the optimizer's step and skips the step when
-- any gradient is inf or NaN, with PyTorch's torch.amp.GradScaler arithmetic:
-- the scale is a one-element float32 tensor on the device, the unscale one
-- fused C pass per gradient (wick_amp_unscale_), the step's inf check one read.
local wick = require("wick")
local check = require("wick.argcheck")
local core = wick._core

local amp = { autocast = wick.autocast }

-- The optimizer's stage since the last update(), as in PyTorch's OptState.
local READY, UNSCALED, STEPPED = "ready", "unscaled", "stepped"

local GradScaler = {}
GradScaler.__index = GradScaler
GradScaler.__name = "GradScaler"

local OPTIONS = { device = "device", init_scale = "number", growth_factor = "number", backoff_factor = "number",
  growth_interval = "integer", enabled = "boolean" }
local ORDER = { "device", "init_scale", "growth_factor", "backoff_factor", "growth_interval", "enabled" }

--- wick.amp.GradScaler([device = "cuda"[, init_scale = 65536[, growth_factor = 2[, backoff_factor = 0.5
--- [, growth_interval = 2000[, enabled = true]]]]]][, opts]): torch.amp.GradScaler's arguments.
--- With device "cuda" and no GPU it warns and stays disabled, like PyTorch's.
function amp.GradScaler(...)
  local o = check.positional("GradScaler", ORDER, OPTIONS, ...)
  local device = o.device or "cuda"
  if type(device) ~= "string" then device = device.type end -- a device object
  check.one_of(device, "GradScaler", "device", { "cpu", "cuda" })
  local enabled = o.enabled ~= false
  if enabled and device == "cuda" and not wick.cuda.is_available() then
    wick.warn("wick.amp.GradScaler is enabled, but CUDA is not available.  Disabling. "
      .. "(wick.amp.GradScaler(\"cpu\") scales on the CPU.)")
    enabled = false
  end
  local growth_factor, backoff_factor = o.growth_factor or 2.0, o.backoff_factor or 0.5
  if enabled then
    if not (growth_factor > 1) then check.fail("GradScaler", "The growth factor must be > 1.0.") end
    if not (backoff_factor < 1) then check.fail("GradScaler", "The backoff factor must be < 1.0.") end
  end
  local self = setmetatable({
    _device = device, _enabled = enabled, _init_scale = o.init_scale or 65536.0,
    _growth_factor = growth_factor, _backoff_factor = backoff_factor,
    _growth_interval = o.growth_interval or 2000, _init_growth_tracker = 0,
    _scale = nil, _growth_tracker = nil, _per_optimizer = {},
  }, GradScaler)
  return self
end

local function is_scaler(s) return getmetatable(s) == GradScaler end

function GradScaler:is_enabled() return self._enabled end

local function lazy_init(self, device)
  self._scale = wick.full({ 1 }, self._init_scale, { dtype = "float32", device = device })
  self._growth_tracker = self._init_growth_tracker
end

local function check_scale(self, fn)
  if self._scale == nil then
    check.fail("GradScaler:" .. fn, "Attempted %s but _scale is None.  This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration.", fn)
  end
  return self._scale
end

local function optimizer_state(self, optimizer)
  if type(optimizer) ~= "table" or type(optimizer.param_groups) ~= "table" then
    check.fail("GradScaler", "expected an optimizer (with param_groups), got %s", type(optimizer))
  end
  local st = self._per_optimizer[optimizer]
  if not st then
    st = { stage = READY, found_inf = nil }
    self._per_optimizer[optimizer] = st
  end
  return st
end

local function scale_value(self, v)
  if wick.is_tensor(v) then
    if v.device.type ~= self._device then
      check.fail("GradScaler:scale", "expected a tensor on device type '%s', got '%s'", self._device, v.device.type)
    end
    if self._scale == nil then lazy_init(self, v.device) end
    local s = self._scale
    if s.device ~= v.device then s = s:to(v.device) end
    return v * s
  end
  if type(v) == "table" then
    local out = {}
    for k, x in pairs(v) do out[k] = scale_value(self, x) end
    return out
  end
  check.fail("GradScaler:scale", "outputs must be a tensor or a table of tensors, got %s", type(v))
end

--- scaler:scale(outputs): outputs (a tensor, or a table of them) times the scale;
--- unchanged when disabled.
function GradScaler:scale(outputs)
  if not self._enabled then return outputs end
  return scale_value(self, outputs)
end

--- scaler:unscale_(optimizer): divides the optimizer's gradients by the scale in
--- place (once per step) and records whether any was inf or NaN.
function GradScaler:unscale_(optimizer)
  if not self._enabled then return end
  local scale = check_scale(self, "unscale_")
  local st = optimizer_state(self, optimizer)
  if st.stage == UNSCALED then
    check.fail("GradScaler:unscale_", "unscale_() has already been called on this optimizer since the last update().")
  elseif st.stage == STEPPED then
    check.fail("GradScaler:unscale_", "unscale_() is being called after step().")
  end
  -- 1 / scale in float32, as PyTorch's self._scale.double().reciprocal().float()
  local inv_scale = wick.full({ 1 }, 1 / scale:item(), { dtype = "float32", device = scale.device })
  local found = wick.zeros({ 1 }, { dtype = "float32", device = scale.device })
  local grads = {}
  for _, group in ipairs(optimizer.param_groups) do
    for _, p in ipairs(group.params) do
      local g = p.grad
      if g ~= nil then grads[#grads + 1] = g end
    end
  end
  -- one list per device (gradients on another device than the scale get their own flags)
  local by_device, order = {}, {}
  for _, g in ipairs(grads) do
    local key = tostring(g.device)
    if not by_device[key] then by_device[key] = {}; order[#order + 1] = key end
    local list = by_device[key]
    list[#list + 1] = g
  end
  for _, key in ipairs(order) do
    local list = by_device[key]
    local dev = list[1].device
    if dev == scale.device then
      core._amp_unscale_(list, found, inv_scale)
    else
      local f = wick.zeros({ 1 }, { dtype = "float32", device = dev })
      core._amp_unscale_(list, f, inv_scale:to(dev))
      found = found + f:to(scale.device)
    end
  end
  st.found_inf = found
  st.stage = UNSCALED
end

--- scaler:step(optimizer, ...): unscales (unless unscale_ ran) and calls
--- optimizer:step(...) unless a gradient was inf or NaN; returns its result.
function GradScaler:step(optimizer, ...)
  if not self._enabled then return optimizer:step(...) end
  check_scale(self, "step")
  local st = optimizer_state(self, optimizer)
  if select("#", ...) > 0 and type((...)) == "function" then
    check.fail("GradScaler:step", "Closure use is not currently supported if GradScaler is enabled.")
  end
  if st.stage == STEPPED then
    check.fail("GradScaler:step", "step() has already been called since the last update().")
  end
  if st.stage == READY then self:unscale_(optimizer) end
  local result
  if st.found_inf:item() == 0 then result = optimizer:step(...) end
  st.stage = STEPPED
  return result
end

-- A number rounded to float32, as the scale tensor holds it.
local function f32(x) return wick.full({ 1 }, x, { dtype = "float32" }):item() end

--- scaler:update([new_scale]): the next scale: new_scale when given; else
--- backoff_factor times it when a step found inf/NaN, growth_factor times it
--- after growth_interval clean steps in a row.
function GradScaler:update(new_scale)
  if not self._enabled then return end
  local scale = check_scale(self, "update")
  if new_scale ~= nil then
    if wick.is_tensor(new_scale) then
      if new_scale:numel() ~= 1 or new_scale.dtype ~= "float32" then
        check.fail("GradScaler:update", "new_scale should be a float32 tensor with a single element")
      end
      scale:copy_(new_scale:reshape({ 1 }))
    else
      check.number(new_scale, "GradScaler:update", "new_scale")
      scale:fill_(new_scale)
    end
  else
    local any, found = false, 0
    for _, st in pairs(self._per_optimizer) do
      if st.found_inf then any = true; found = found + st.found_inf:item() end
    end
    if not any then check.fail("GradScaler:update", "No inf checks were recorded prior to update.") end
    -- torch._amp_update_scale_
    local s = scale:item()
    if found > 0 then
      scale:fill_(s * self._backoff_factor)
      self._growth_tracker = 0
    else
      local successful = self._growth_tracker + 1
      if successful == self._growth_interval then
        local grown = f32(s * self._growth_factor)
        if grown == grown and grown ~= math.huge then scale:fill_(grown) end
        self._growth_tracker = 0
      else
        self._growth_tracker = successful
      end
    end
  end
  self._per_optimizer = {}
end

--- The current scale (a number); init_scale before the first scale(); 1 when disabled.
function GradScaler:get_scale()
  if not self._enabled then return 1.0 end
  if self._scale == nil then return self._init_scale end
  return self._scale:item()
end

function GradScaler:get_growth_factor() return self._growth_factor end
function GradScaler:set_growth_factor(v) check.number(v, "GradScaler:set_growth_factor", "new_factor"); self._growth_factor = v end
function GradScaler:get_backoff_factor() return self._backoff_factor end
function GradScaler:set_backoff_factor(v) check.number(v, "GradScaler:set_backoff_factor", "new_factor"); self._backoff_factor = v end
function GradScaler:get_growth_interval() return self._growth_interval end
function GradScaler:set_growth_interval(v) check.int(v, "GradScaler:set_growth_interval", "new_interval", 1); self._growth_interval = v end

--- PyTorch's state dict: scale, growth_factor, backoff_factor, growth_interval,
--- _growth_tracker; empty when disabled.
function GradScaler:state_dict()
  if not self._enabled then return {} end
  return { scale = self:get_scale(), growth_factor = self._growth_factor, backoff_factor = self._backoff_factor,
    growth_interval = self._growth_interval,
    _growth_tracker = self._growth_tracker or self._init_growth_tracker }
end

function GradScaler:load_state_dict(sd, ...)
  if select("#", ...) > 0 then
    check.fail("GradScaler:load_state_dict", "takes the state dict alone, got another argument: %s", check.describe((...)))
  end
  if not self._enabled then return end
  check.table(sd, "GradScaler:load_state_dict", "state_dict")
  if next(sd) == nil then
    check.fail("GradScaler:load_state_dict", "The source state dict is empty, possibly because it was saved from a disabled instance of GradScaler.")
  end
  for _, k in ipairs({ "scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker" }) do
    check.number(sd[k], "GradScaler:load_state_dict", k)
  end
  self._init_scale = sd.scale
  if self._scale then self._scale:fill_(sd.scale) end
  self._growth_factor, self._backoff_factor = sd.growth_factor, sd.backoff_factor
  self._growth_interval = sd.growth_interval
  self._init_growth_tracker = sd._growth_tracker
  if self._growth_tracker then self._growth_tracker = sd._growth_tracker end
end

function GradScaler:__tostring()
  return ("GradScaler(device='%s', scale=%s, enabled=%s)"):format(self._device, tostring(self:get_scale()),
    tostring(self._enabled))
end

check.receivers(GradScaler, "GradScaler")

return amp
