-- wick.audio: torchaudio's loss for transducers, which speech programs train with (torchaudio's
-- Conformer RNN-T recipe): functional.rnnt_loss and the module transforms.RNNTLoss. Composed of
-- recorded ops (log_softmax, gather, logaddexp over the anti-diagonals of the T x U lattice), so
-- it runs on every backend; the gradient clamp is a Function around them, as torchaudio's kernel.
local wick = require("wick")
local check = require("wick.argcheck")

local M = { functional = {}, transforms = {} }
local NEG = -math.huge

-- logaddexp, -inf with zero gradients where both are -inf (where logaddexp's own gradient is NaN)
local function lse(a, b)
  local none = a:eq(NEG):logical_and(b:eq(NEG))
  local zero = wick.zeros({}, { dtype = a.dtype, device = a.device })
  return wick.where(none, NEG, wick.logaddexp(wick.where(none, zero, a), wick.where(none, zero, b)))
end

-- x (B, T, U1) read along the lattice's anti-diagonals: (B, N, U1), N = T + U1 - 1, entry [m][u]
-- being x[m - u][u] (0-based), -inf where m - u is outside 0 .. T - 1
local function diagonals(x)
  local B, T, U1 = x:size(1), x:size(2), x:size(3)
  local N = T + U1 - 1
  local opts = { dtype = "int64", device = x.device }
  local m = wick.arange(N, opts):view(N, 1)
  local u = wick.arange(U1, opts):view(1, U1)
  local t = m - u
  local valid = t:ge(0):logical_and(t:lt(T))
  local flat = (t:clamp(0, T - 1) * U1 + u + 1):view(-1) -- (1-based positions in x's T x U1 plane)
  local d = x:reshape(B, T * U1):index_select(2, flat):view(B, N, U1)
  return wick.where(valid, d, NEG)
end

-- the costs (B) of the sequences: -log of the sum over alignments, by the forward variables
-- alpha(t, u) = lse(alpha(t - 1, u) + blank(t - 1, u), alpha(t, u - 1) + emit(t, u - 1)),
-- computed one anti-diagonal at a time
local function costs_of(logits, targets, T, U, blank, fused)
  local B, Tm, U1, D = logits:size(1), logits:size(2), logits:size(3), logits:size(4)
  local lp = fused and logits:log_softmax(4) or logits
  local blank_lp = lp:select(4, blank)
  local emit = wick.full({ B, Tm, U1 }, NEG, { dtype = lp.dtype, device = lp.device })
  if U1 > 1 then
    local idx = targets:to("int64"):clamp(1, D):view(B, 1, U1 - 1, 1):expand(B, Tm, U1 - 1, 1)
    emit = wick.cat({ lp:narrow(3, 1, U1 - 1):gather(4, idx):squeeze(4), emit:narrow(3, 1, 1) }, 3)
  end
  local Bd, Ed = diagonals(blank_lp), diagonals(emit)
  local first = wick.full({ B, U1 }, NEG, { dtype = lp.dtype, device = lp.device })
  first:narrow(2, 1, 1):fill_(0)
  local alphas, prev = { first }, first
  local edge = wick.full({ B, 1 }, NEG, { dtype = lp.dtype, device = lp.device })
  for n = 2, Tm + U1 - 1 do
    local stay = prev + Bd:select(2, n - 1)
    local step = prev + Ed:select(2, n - 1)
    if U1 > 1 then step = wick.cat({ edge, step:narrow(2, 1, U1 - 1) }, 2) else step = edge end
    prev = lse(stay, step)
    alphas[n] = prev
  end
  local all = wick.stack(alphas, 2) -- (B, N, U1)
  local opts = { dtype = "int64", device = lp.device }
  local rows = wick.arange(1, B + 1, opts)
  local t_end = wick.tensor(T, opts) -- (1-based: the last frame)
  local u_end = wick.tensor(U, opts) + 1
  local final = all[{ rows, t_end + u_end - 1, u_end }] + blank_lp[{ rows, t_end, u_end }]
  return -final
end

-- the costs with torchaudio's gradient: that of the costs' graph, clamped to [-clamp, clamp]
local Clamped = wick.autograd.Function:extend("RnntLoss")
function Clamped.forward(ctx, logits, targets, T, U, blank, fused, clamp)
  local leaf = logits:detach():requires_grad_()
  local costs, grad
  wick.enable_grad(function()
    costs = costs_of(leaf, targets, T, U, blank, fused)
    grad = wick.autograd.grad(costs:sum(), leaf)
  end)
  if type(grad) == "table" then grad = grad[1] end
  if clamp > 0 then grad = grad:clamp(-clamp, clamp) end
  ctx:save_for_backward(grad)
  return costs:detach()
end
function Clamped.backward(ctx, g)
  return ctx.saved_tensors[1] * g:view(-1, 1, 1, 1)
end

local RNNT = { blank = "integer", clamp = "number", reduction = "string", fused_log_softmax = "boolean" }
local function lengths(fn, v, what, n, max)
  check.tensor(v, fn, what)
  if v:is_floating_point() or v.dtype == "bool" or v:is_complex() or v:dim() ~= 1 or v:size(1) ~= n then
    check.fail(fn, "expected %s as a 1-D integer tensor of the batch size %d, got a %s tensor of shape %s", what, n, v.dtype,
      tostring(v.shape))
  end
  local list = v:to("float64"):totable()
  for i = 1, n do
    if list[i] < 0 or list[i] > max then
      check.fail(fn, "%s must be in 0 .. %d, got %s at %d", what, max, tostring(list[i]), i)
    end
  end
  return list
end

--- wick.audio.functional.rnnt_loss(logits, targets, logit_lengths, target_lengths[, {blank = -1,
--- clamp = -1, reduction = "mean", fused_log_softmax = true}]): torchaudio's RNN-T loss. logits
--- (B, T, U + 1, D), targets (B, U) of 1-based classes, the lengths (B) integers; blank a 1-based class
--- (negative from the end: -1 is D); clamp > 0 clamps the gradient of the logits; reduction "none"
--- gives the B costs
function M.functional.rnnt_loss(...)
  local fn = "rnnt_loss"
  local o = check.positional(fn, { "logits", "targets", "logit_lengths", "target_lengths", "blank", "clamp", "reduction",
    "fused_log_softmax" }, setmetatable({ logits = "tensor", targets = "tensor", logit_lengths = "tensor",
    target_lengths = "tensor" }, { __index = RNNT }), ...)
  local logits, targets = o.logits, o.targets
  check.tensor(logits, fn, "logits")
  check.tensor(targets, fn, "targets")
  local reduction = o.reduction or "mean"
  check.one_of(reduction, fn, "reduction", { "none", "mean", "sum" })
  if not logits:is_floating_point() then check.fail(fn, "logits must be a floating tensor, got %s", logits.dtype) end
  if logits:dim() ~= 4 then check.fail(fn, "logits must be 4-D (batch, time, target + 1, classes), got %d-D", logits:dim()) end
  if targets:dim() ~= 2 or (targets.dtype ~= "int32" and targets.dtype ~= "int64") then
    check.fail(fn, "targets must be a 2-D int32 or int64 tensor of 1-based classes, got a %s tensor of %d dims", targets.dtype,
      targets:dim())
  end
  local B, Tm, U1, D = logits:size(1), logits:size(2), logits:size(3), logits:size(4)
  if targets:size(1) ~= B then check.fail(fn, "batch dimension mismatch between logits (%d) and targets (%d)", B, targets:size(1)) end
  if targets:size(2) ~= U1 - 1 then
    check.fail(fn, "logits' third dim (%d) must be the targets' length + 1 (%d)", U1, targets:size(2) + 1)
  end
  if B == 0 or Tm == 0 or D == 0 then check.fail(fn, "logits must not be empty, got shape %s", tostring(logits.shape)) end
  if targets.device ~= logits.device then check.fail(fn, "logits and targets must be on the same device") end
  local T = lengths(fn, o.logit_lengths, "logit_lengths", B, Tm)
  local U = lengths(fn, o.target_lengths, "target_lengths", B, U1 - 1)
  local tmax, umax = 0, 0
  for i = 1, B do
    if T[i] < 1 then check.fail(fn, "logit_lengths must be positive, got 0 at %d", i) end
    tmax, umax = math.max(tmax, T[i]), math.max(umax, U[i])
  end
  if tmax ~= Tm then check.fail(fn, "input length mismatch: logits' time dim is %d, the longest logit_lengths %d", Tm, tmax) end
  if umax ~= U1 - 1 then
    check.fail(fn, "output length mismatch: logits' third dim is %d, the longest target_lengths + 1 is %d", U1, umax + 1)
  end
  local blank = o.blank or -1
  if blank < 0 then blank = D + blank + 1 end
  if blank < 1 or blank > D then check.fail(fn, "blank must be a class 1 .. %d (or counted from the end), got %d", D, o.blank) end
  if U1 > 1 then -- the targets within their lengths are classes
    local keep = wick.arange(1, U1, { dtype = "int64", device = targets.device }):view(1, -1)
      :le(wick.tensor(U, { dtype = "int64", device = targets.device }):view(-1, 1))
    local t = targets:to("int64")
    if t:lt(1):logical_or(t:gt(D)):logical_and(keep):any() then
      check.fail(fn, "targets must be 1-based classes 1 .. %d within target_lengths (a 0-based target from torchaudio needs + 1)", D)
    end
  end
  local fused = o.fused_log_softmax ~= false
  local clamp = o.clamp or -1
  local costs
  if clamp > 0 and logits.requires_grad and wick.is_grad_enabled() then
    costs = Clamped.apply(logits, targets, T, U, blank, fused, clamp)
  else
    costs = costs_of(logits, targets, T, U, blank, fused)
  end
  if reduction == "mean" then return costs:mean() end
  if reduction == "sum" then return costs:sum() end
  return costs
end

--- wick.audio.transforms.RNNTLoss([{blank = -1, clamp = -1, reduction = "mean", fused_log_softmax = true}]):
--- the module, called as loss(logits, targets, logit_lengths, target_lengths)
M.transforms.RNNTLoss = wick.nn.Module:extend("RNNTLoss")
function M.transforms.RNNTLoss:init(opts)
  if opts ~= nil then check.options(opts, "RNNTLoss", RNNT) end
  opts = opts or {}
  self.blank, self.clamp, self.reduction = opts.blank or -1, opts.clamp or -1, opts.reduction or "mean"
  self.fused_log_softmax = opts.fused_log_softmax ~= false
end
function M.transforms.RNNTLoss:forward(logits, targets, logit_lengths, target_lengths)
  return M.functional.rnnt_loss(logits, targets, logit_lengths, target_lengths, { blank = self.blank, clamp = self.clamp,
    reduction = self.reduction, fused_log_softmax = self.fused_log_softmax })
end

return M
