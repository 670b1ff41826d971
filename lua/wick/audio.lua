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

-- ---- torchaudio's feature transforms: spectrograms, mel filter banks, the DCT, decibels, resampling ----
-- Each is composed of recorded ops (wick.stft, matmuls, elementwise ops), so gradients flow through them as
-- through torchaudio's; the constant matrices (filter banks, DCT, resampling kernels) are computed by
-- torchaudio's steps in the same dtype, so float32 results have its roundings.

local floor = math.floor
local function log10(v) return math.log(v) / math.log(10) end
if math.log10 then log10 = math.log10 end
local function warn(msg) require("wick.nn.common").warn(msg) end

-- torchaudio's None for a power (power = false too, where nil is a default)
local function opt_power(fn, p)
  if p == nil or p == false then return nil end
  if type(p) ~= "number" or p ~= p then check.expected(fn, "power", "a number or nil (false)", p) end
  return p
end
-- normalized: true or "window" divides by the window's L2 norm, "frame_length" by sqrt(n_fft) (stft's own)
local function spec_norms(fn, normalized)
  if type(normalized) == "string" then
    if normalized ~= "frame_length" and normalized ~= "window" then
      check.fail(fn, "Invalid normalized parameter: %s (expected 'window' or 'frame_length')", normalized)
    end
    return normalized == "frame_length", normalized == "window"
  end
  if type(normalized) ~= "boolean" then check.expected(fn, "normalized", "a boolean or a string", normalized) end
  return false, normalized
end
local function required(fn, o, names)
  for _, name in ipairs(names) do
    if o[name] == nil then check.fail(fn, "missing required argument '%s'", name) end
  end
end
local function frame_args(fn, o)
  check.int(o.n_fft, fn, "n_fft", 1)
  check.int(o.hop_length, fn, "hop_length", 1)
  check.int(o.win_length, fn, "win_length", 1)
  check.int(o.pad, fn, "pad", 0)
  if o.win_length > o.n_fft then
    check.fail(fn, "expected 0 < win_length <= n_fft, but got win_length=%d", o.win_length)
  end
  if o.window:dim() ~= 1 or o.window:size(1) ~= o.win_length then
    check.fail(fn, "expected a 1D window tensor of size equal to win_length=%d, but got window with size %s", o.win_length,
      tostring(o.window.shape))
  end
end

local SPEC = { waveform = "tensor", pad = "integer", window = "tensor", n_fft = "integer", hop_length = "integer",
  win_length = "integer", power = "number|boolean", normalized = "boolean|string", center = "boolean", pad_mode = "string",
  onesided = "boolean", return_complex = "boolean" }
--- wick.audio.functional.spectrogram(waveform, pad, window, n_fft, hop_length, win_length, power, normalized[,
--- center = true][, pad_mode = "reflect"][, onesided = true]): torchaudio's spectrogram of a waveform (..., time):
--- (..., freq, frames), |stft| ^ power, the complex stft where power is nil (or false)
function M.functional.spectrogram(...)
  local fn = "spectrogram"
  local o = check.positional(fn, { "waveform", "pad", "window", "n_fft", "hop_length", "win_length", "power", "normalized",
    "center", "pad_mode", "onesided", "return_complex" }, SPEC, ...)
  required(fn, o, { "waveform", "pad", "window", "n_fft", "hop_length", "win_length", "normalized" })
  local waveform, window = o.waveform, o.window
  if o.return_complex ~= nil then
    warn("spectrogram: `return_complex` argument is now deprecated and is not effective. spectrogram(power = nil) always "
      .. "returns a tensor with complex dtype. Please remove the argument in the function call.")
  end
  frame_args(fn, o)
  local power = opt_power(fn, o.power)
  local frame_norm, window_norm = spec_norms(fn, o.normalized)
  if waveform:dim() < 1 then check.fail(fn, "expected a waveform of at least 1 dim (..., time), got a 0-dim tensor") end
  if waveform:is_complex() or waveform.dtype == "bool" then
    check.fail(fn, "expected a real waveform, got a %s tensor", waveform.dtype)
  end
  local x = waveform
  if o.pad > 0 then x = wick.nn.functional.pad(x, { o.pad, o.pad }, "constant") end
  local shape = x.shape
  local L = x:size(-1)
  if x:numel() == 0 then check.fail(fn, "expected a non-empty waveform, got shape %s", tostring(waveform.shape)) end
  local y = wick.stft(x:reshape(-1, L), { n_fft = o.n_fft, hop_length = o.hop_length, win_length = o.win_length,
    window = window, center = o.center ~= false, pad_mode = o.pad_mode or "reflect", normalized = frame_norm,
    onesided = o.onesided ~= false, return_complex = true })
  local out = {}
  for i = 1, x:dim() - 1 do out[i] = shape[i] end
  out[#out + 1], out[#out + 2] = y:size(2), y:size(3)
  y = y:reshape(out)
  if window_norm then y = y / window:pow(2):sum():sqrt() end
  if power == nil then return y end
  if power == 1 then return y:abs() end
  return y:abs():pow(power)
end

local ISPEC = { spectrogram = "tensor", length = "integer", pad = "integer", window = "tensor", n_fft = "integer",
  hop_length = "integer", win_length = "integer", normalized = "boolean|string", center = "boolean", pad_mode = "string",
  onesided = "boolean" }
--- wick.audio.functional.inverse_spectrogram(spectrogram, length, pad, window, n_fft, hop_length, win_length,
--- normalized[, center = true][, pad_mode][, onesided = true]): the waveform (..., time) of a complex spectrogram
--- (..., freq, frames), by istft; length nil for the frames' own
function M.functional.inverse_spectrogram(...)
  local fn = "inverse_spectrogram"
  local o = check.positional(fn, { "spectrogram", "length", "pad", "window", "n_fft", "hop_length", "win_length", "normalized",
    "center", "pad_mode", "onesided" }, ISPEC, ...)
  required(fn, o, { "spectrogram", "pad", "window", "n_fft", "hop_length", "win_length", "normalized" })
  local spec, window = o.spectrogram, o.window
  frame_args(fn, o)
  if o.length ~= nil then check.int(o.length, fn, "length", 0) end
  local frame_norm, window_norm = spec_norms(fn, o.normalized)
  if not spec:is_complex() then check.fail(fn, "Expected `spectrogram` to be complex dtype.") end
  if spec:dim() < 2 then check.fail(fn, "expected a spectrogram of at least 2 dims (..., freq, time), got %d", spec:dim()) end
  if spec:numel() == 0 then check.fail(fn, "expected a non-empty spectrogram, got shape %s", tostring(spec.shape)) end
  if window_norm then spec = spec * window:pow(2):sum():sqrt() end
  local shape = spec.shape
  local y = wick.istft(spec:reshape(-1, spec:size(-2), spec:size(-1)), { n_fft = o.n_fft, hop_length = o.hop_length,
    win_length = o.win_length, window = window, center = o.center ~= false, normalized = frame_norm,
    onesided = o.onesided ~= false, length = o.length and o.length + 2 * o.pad or nil, return_complex = false })
  if o.length ~= nil and o.pad > 0 then y = y:narrow(2, o.pad + 1, y:size(2) - 2 * o.pad) end
  local out = {}
  for i = 1, #shape - 2 do out[i] = shape[i] end
  out[#out + 1] = y:size(2)
  return y:reshape(out)
end

--- wick.audio.functional.griffinlim(specgram, window, n_fft, hop_length, win_length, power, n_iter, momentum, length,
--- rand_init): torchaudio's Griffin-Lim phase recovery of a magnitude spectrogram (..., freq, frames)
local GL = { specgram = "tensor", window = "tensor", n_fft = "integer", hop_length = "integer", win_length = "integer",
  power = "number", n_iter = "integer", momentum = "number", length = "integer", rand_init = "boolean" }
function M.functional.griffinlim(...)
  local fn = "griffinlim"
  local o = check.positional(fn, { "specgram", "window", "n_fft", "hop_length", "win_length", "power", "n_iter", "momentum",
    "length", "rand_init" }, GL, ...)
  required(fn, o, { "specgram", "window", "n_fft", "hop_length", "win_length", "power", "n_iter", "momentum" })
  o.pad = 0
  frame_args(fn, o)
  check.int(o.n_iter, fn, "n_iter", 0)
  if o.length ~= nil then check.int(o.length, fn, "length", 0) end
  local specgram = o.specgram
  if not (o.momentum >= 0 and o.momentum < 1) then check.fail(fn, "momentum must be in range [0, 1). Found: %s", o.momentum) end
  if not (o.power > 0) then check.fail(fn, "power must be > 0, got %s", o.power) end
  if not specgram:is_floating_point() then check.fail(fn, "expected a real floating specgram, got %s", specgram.dtype) end
  if specgram:dim() < 2 or specgram:numel() == 0 then
    check.fail(fn, "expected a non-empty specgram of at least 2 dims (..., freq, time), got shape %s", tostring(specgram.shape))
  end
  local momentum = o.momentum / (1 + o.momentum)
  local shape = specgram.shape
  local S = specgram:reshape(-1, specgram:size(-2), specgram:size(-1)):pow(1 / o.power)
  local cdtype = S.dtype == "float64" and "complex128" or "complex64"
  local angles
  if o.rand_init ~= false then
    angles = wick.complex(wick.rand(S.shape, { dtype = S.dtype, device = S.device }),
      wick.rand(S.shape, { dtype = S.dtype, device = S.device }))
  else
    angles = wick.ones(S.shape, { dtype = cdtype, device = S.device })
  end
  local st = { n_fft = o.n_fft, hop_length = o.hop_length, win_length = o.win_length, window = o.window }
  local function inverse(a)
    return wick.istft(S * a, { n_fft = o.n_fft, hop_length = o.hop_length, win_length = o.win_length, window = o.window,
      length = o.length })
  end
  local tprev
  for _ = 1, o.n_iter do
    local rebuilt = wick.stft(inverse(angles), { n_fft = st.n_fft, hop_length = st.hop_length, win_length = st.win_length,
      window = st.window, center = true, pad_mode = "reflect", normalized = false, onesided = true, return_complex = true })
    angles = rebuilt
    if momentum ~= 0 and tprev ~= nil then angles = angles - tprev * momentum end
    angles = angles / (angles:abs() + 1e-16)
    tprev = rebuilt
  end
  local y = inverse(angles)
  local out = {}
  for i = 1, #shape - 2 do out[i] = shape[i] end
  out[#out + 1] = y:size(2)
  return y:reshape(out)
end

local DB = { x = "tensor", multiplier = "number", amin = "number", db_multiplier = "number", top_db = "number" }
--- wick.audio.functional.amplitude_to_DB(x, multiplier, amin, db_multiplier[, top_db]): multiplier * log10(max(x, amin))
--- - multiplier * db_multiplier, floored at each spectrogram's (the last 3 dims') maximum - top_db
function M.functional.amplitude_to_DB(...)
  local fn = "amplitude_to_DB"
  local o = check.positional(fn, { "x", "multiplier", "amin", "db_multiplier", "top_db" }, DB, ...)
  required(fn, o, { "x", "multiplier", "amin", "db_multiplier" })
  local x = o.x
  if not x:is_floating_point() then check.fail(fn, "expected a real floating tensor, got %s", x.dtype) end
  local x_db = wick.log10(x:clamp({ min = o.amin })) * o.multiplier - o.multiplier * o.db_multiplier
  if o.top_db ~= nil then
    if x_db:dim() < 2 then check.fail(fn, "expected x of at least 2 dims (freq, time) where top_db is given, got %d", x_db:dim()) end
    if x_db:numel() == 0 then check.fail(fn, "expected a non-empty x where top_db is given, got shape %s", tostring(x.shape)) end
    local shape = x_db.shape
    local channels = x_db:dim() > 2 and x_db:size(-3) or 1
    x_db = x_db:reshape(-1, channels, x_db:size(-2), x_db:size(-1))
    x_db = wick.maximum(x_db, (x_db:amax({ -3, -2, -1 }) - o.top_db):view(-1, 1, 1, 1)):reshape(shape)
  end
  return x_db
end

--- wick.audio.functional.DB_to_amplitude(x, ref, power): ref * (10 ^ (0.1 x)) ^ power
function M.functional.DB_to_amplitude(...)
  local fn = "DB_to_amplitude"
  local o = check.positional(fn, { "x", "ref", "power" }, { x = "tensor", ref = "number", power = "number" }, ...)
  required(fn, o, { "x", "ref", "power" })
  if not o.x:is_floating_point() then check.fail(fn, "expected a real floating tensor, got %s", o.x.dtype) end
  return wick.pow(wick.pow(10.0, o.x * 0.1), o.power) * o.ref
end

local function hz_to_mel(freq, scale)
  if scale == "htk" then return 2595.0 * log10(1.0 + freq / 700.0) end
  local f_sp = 200.0 / 3
  if freq >= 1000.0 then return 1000.0 / f_sp + math.log(freq / 1000.0) / (math.log(6.4) / 27.0) end
  return freq / f_sp
end
local function mel_to_hz(mels, scale)
  if scale == "htk" then return (wick.pow(10.0, mels / 2595.0) - 1.0) * 700.0 end
  local f_sp = 200.0 / 3
  local min_log_mel = 1000.0 / f_sp
  local logstep = math.log(6.4) / 27.0
  local linear = mels * f_sp
  return wick.where(mels:ge(min_log_mel), ((mels - min_log_mel) * logstep):exp() * 1000.0, linear)
end

local FB = { n_freqs = "integer", f_min = "number", f_max = "number", n_mels = "integer", sample_rate = "number",
  norm = "string|boolean", mel_scale = "string" }
--- wick.audio.functional.melscale_fbanks(n_freqs, f_min, f_max, n_mels, sample_rate[, norm][, mel_scale = "htk"]):
--- torchaudio's triangular mel filter banks (n_freqs, n_mels), in the default dtype; norm "slaney" divides each by
--- its band's width, mel_scale "htk" or "slaney"
function M.functional.melscale_fbanks(...)
  local fn = "melscale_fbanks"
  local o = check.positional(fn, { "n_freqs", "f_min", "f_max", "n_mels", "sample_rate", "norm", "mel_scale" }, FB, ...)
  required(fn, o, { "n_freqs", "f_min", "f_max", "n_mels", "sample_rate" })
  check.int(o.n_freqs, fn, "n_freqs", 1)
  check.int(o.n_mels, fn, "n_mels", 1)
  local norm = o.norm or nil
  if norm == true or (norm ~= nil and norm ~= "slaney") then check.fail(fn, 'norm must be one of None or "slaney"') end
  local scale = o.mel_scale or "htk"
  if scale ~= "htk" and scale ~= "slaney" then check.fail(fn, 'mel_scale should be one of "htk" or "slaney".') end
  for _, k in ipairs({ "f_min", "f_max", "sample_rate" }) do
    if o[k] == math.huge or o[k] == -math.huge then check.fail(fn, "expected a finite %s, got %s", k, tostring(o[k])) end
  end
  if o.f_min < 0 or o.f_max < 0 or o.sample_rate <= 0 then
    check.fail(fn, "expected f_min, f_max >= 0 and sample_rate > 0, got %s, %s and %s", o.f_min, o.f_max, o.sample_rate)
  end
  if o.n_freqs * (o.n_mels + 2) > 2 ^ 31 then
    check.fail(fn, "a filter bank of %d x %d is too large", o.n_freqs, o.n_mels)
  end
  local opts = { dtype = wick.get_default_dtype() }
  local all_freqs = wick.linspace(0, floor(o.sample_rate / 2), o.n_freqs, opts)
  local m_pts = wick.linspace(hz_to_mel(o.f_min, scale), hz_to_mel(o.f_max, scale), o.n_mels + 2, opts)
  local f_pts = mel_to_hz(m_pts, scale)
  -- the triangles: rising from f_pts[m] to f_pts[m + 1], falling to f_pts[m + 2]
  local n = o.n_mels
  local f_diff = f_pts:narrow(1, 2, n + 1) - f_pts:narrow(1, 1, n + 1)
  local slopes = f_pts:unsqueeze(1) - all_freqs:unsqueeze(2)
  local down = (slopes:narrow(2, 1, n) * -1.0) / f_diff:narrow(1, 1, n)
  local up = slopes:narrow(2, 3, n) / f_diff:narrow(1, 2, n)
  local fb = wick.maximum(wick.zeros(1, opts), wick.minimum(down, up))
  if norm == "slaney" then
    local enorm = (f_pts:narrow(1, 3, n) - f_pts:narrow(1, 1, n)):reciprocal() * 2.0
    fb = fb * enorm:unsqueeze(1)
  end
  if fb:amax(1):eq(0):any():item() then
    warn(("melscale_fbanks: At least one mel filterbank has all zero values. The value for `n_mels` (%d) may be set too "
      .. "high. Or, the value for `n_freqs` (%d) may be set too low."):format(n, o.n_freqs))
  end
  return fb
end

--- wick.audio.functional.create_dct(n_mfcc, n_mels, norm): the DCT-II matrix (n_mels, n_mfcc), in the default dtype,
--- orthonormal for norm "ortho", scaled by 2 for nil (or false)
function M.functional.create_dct(...)
  local fn = "create_dct"
  local o = check.positional(fn, { "n_mfcc", "n_mels", "norm" }, { n_mfcc = "integer", n_mels = "integer",
    norm = "string|boolean" }, ...)
  required(fn, o, { "n_mfcc", "n_mels" })
  check.int(o.n_mfcc, fn, "n_mfcc", 1)
  check.int(o.n_mels, fn, "n_mels", 1)
  local norm = o.norm or nil
  if norm ~= nil and norm ~= "ortho" then check.fail(fn, 'norm must be either "ortho" or None') end
  if o.n_mfcc * o.n_mels > 2 ^ 31 then check.fail(fn, "a DCT matrix of %d x %d is too large", o.n_mels, o.n_mfcc) end
  local opts = { dtype = wick.get_default_dtype() }
  local n = wick.arange(o.n_mels, opts)
  local k = wick.arange(o.n_mfcc, opts):unsqueeze(2)
  local dct = ((n + 0.5) * (math.pi / o.n_mels) * k):cos()
  if norm == nil then
    dct = dct * 2.0
  else
    local first = wick.ones(o.n_mfcc, 1, opts)
    first[1] = 1.0 / math.sqrt(2.0)
    dct = dct * first * math.sqrt(2.0 / o.n_mels)
  end
  return dct:t()
end

-- torchaudio's sinc resampling kernel (new, 1, 2 width + orig) of the reduced frequencies and its width; dtype nil
-- computes in float64 and gives float32, as torchaudio's
local function sinc_kernel(fn, orig, new, width_zeros, rolloff, method, beta, device, dtype)
  local base = math.min(orig, new) * rolloff
  local width = math.ceil(width_zeros * orig / base)
  if (2 * width + orig) * new > 2 ^ 28 then
    check.fail(fn, "the resampling kernel (%d x %d) is too large: reduce the frequencies' ratio (%d / %d after their gcd)", new,
      2 * width + orig, orig, new)
  end
  local idx = wick.arange(-width, width + orig, { dtype = dtype or "float64", device = device }):view(1, 1, -1) / orig
  local j = wick.arange(0, -new, -1, { dtype = dtype or wick.get_default_dtype(), device = device }):view(-1, 1, 1) / new
  local t = (j + idx) * base
  t = t:clamp(-width_zeros, width_zeros)
  local window
  if method == "sinc_interp_hann" then
    window = (t * math.pi / width_zeros / 2):cos():pow(2)
  else
    local b = wick.tensor(beta or 14.769656459379492, { device = device })
    window = wick.i0(((t / width_zeros):pow(2) * -1 + 1):sqrt() * b) / wick.i0(b)
  end
  t = t * math.pi
  local kernels = wick.where(t:eq(0), wick.ones({}, { dtype = t.dtype, device = device }), t:sin() / t)
  kernels = kernels * (window * (base / orig))
  if dtype == nil then kernels = kernels:to("float32") end
  return kernels, width
end
local function gcd(a, b)
  while b ~= 0 do a, b = b, a % b end
  return a
end
local RS = { waveform = "tensor", orig_freq = "number", new_freq = "number", lowpass_filter_width = "integer", rolloff = "number",
  resampling_method = "string", beta = "number", dtype = "dtype" }
local function resample_args(fn, o)
  local orig, new = o.orig_freq or 16000, o.new_freq or 16000
  check.number(orig, fn, "orig_freq")
  check.number(new, fn, "new_freq")
  if orig <= 0 or new <= 0 then check.fail(fn, "Original frequency and desired frequency should be positive") end
  if orig ~= floor(orig) or new ~= floor(new) or orig > 2 ^ 53 or new > 2 ^ 53 then
    check.fail(fn, "Frequencies must be of integer type to ensure quality resampling computation (got %s and %s): convert "
      .. "both to integers of the same ratio (orig_freq = 8 and new_freq = 1 to downsample 44100 Hz by 8)", orig, new)
  end
  local method = o.resampling_method or "sinc_interp_hann"
  if method == "sinc_interpolation" or method == "kaiser_window" then
    local to = method == "sinc_interpolation" and "sinc_interp_hann" or "sinc_interp_kaiser"
    warn(('%s: "%s" resampling method name is being deprecated and replaced by "%s" in the next release. The default '
      .. "behavior remains unchanged."):format(fn, method, to))
    method = to
  elseif method ~= "sinc_interp_hann" and method ~= "sinc_interp_kaiser" then
    check.fail(fn, "Invalid resampling method: %s", method)
  end
  local width = o.lowpass_filter_width or 6
  if width <= 0 then check.fail(fn, "Low pass filter width should be positive.") end
  local rolloff = o.rolloff or 0.99
  if not (rolloff > 0 and rolloff < math.huge) then check.fail(fn, "rolloff must be a positive number, got %s", rolloff) end
  local g = gcd(orig, new)
  return orig, new, g, width, rolloff, method
end
local function apply_kernel(fn, waveform, orig, new, kernel, width)
  if not waveform:is_floating_point() then
    check.fail(fn, "Expected floating point type for waveform tensor, but received %s.", waveform.dtype)
  end
  if waveform:dim() < 1 or waveform:numel() == 0 then
    check.fail(fn, "expected a non-empty waveform (..., time), got shape %s", tostring(waveform.shape))
  end
  local shape = waveform.shape
  local length = waveform:size(-1)
  local x = waveform:reshape(-1, length)
  local count = x:size(1)
  x = wick.nn.functional.pad(x, { width, width + orig })
  local y = wick.nn.functional.conv1d(x:unsqueeze(2), kernel, nil, orig) -- (count, new, frames)
  y = y:transpose(2, 3):reshape(count, -1)
  local target = math.ceil(new * length / orig)
  y = y:narrow(2, 1, math.min(target, y:size(2)))
  local out = {}
  for i = 1, #shape - 1 do out[i] = shape[i] end
  out[#out + 1] = y:size(2)
  return y:reshape(out)
end

--- wick.audio.functional.resample(waveform, orig_freq, new_freq[, lowpass_filter_width = 6][, rolloff = 0.99][,
--- resampling_method = "sinc_interp_hann"][, beta]): torchaudio's band-limited sinc resampling of (..., time) along
--- time, the kernel computed in the waveform's dtype
function M.functional.resample(...)
  local fn = "resample"
  local o = check.positional(fn, { "waveform", "orig_freq", "new_freq", "lowpass_filter_width", "rolloff",
    "resampling_method", "beta" }, RS, ...)
  required(fn, o, { "waveform", "orig_freq", "new_freq" })
  local orig, new, g, width_zeros, rolloff, method = resample_args(fn, o)
  local waveform = o.waveform
  if orig == new then return waveform end
  if not waveform:is_floating_point() then
    check.fail(fn, "Expected floating point type for waveform tensor, but received %s.", waveform.dtype)
  end
  local kernel, width = sinc_kernel(fn, orig / g, new / g, width_zeros, rolloff, method, o.beta, waveform.device,
    waveform.dtype)
  return apply_kernel(fn, waveform, orig / g, new / g, kernel, width)
end

-- ---- the modules ----
local T = M.transforms
local Module = wick.nn.Module

-- a window_fn(win_length[, wkwargs]) as a tensor
local function make_window(fn, window_fn, win_length, wkwargs)
  local w
  if wkwargs ~= nil then w = window_fn(win_length, wkwargs) else w = window_fn(win_length) end
  if not check.is_tensor(w) then check.fail(fn, "window_fn must give a tensor, got %s", check.describe(w)) end
  return w
end
local function frame_opts(fn, o)
  local n_fft = o.n_fft or 400
  check.int(n_fft, fn, "n_fft", 1)
  local win = o.win_length or n_fft
  check.int(win, fn, "win_length", 1)
  local hop = o.hop_length or floor(win / 2)
  check.int(hop, fn, "hop_length", 1)
  local pad = o.pad or 0
  check.int(pad, fn, "pad", 0)
  if win > n_fft then check.fail(fn, "expected 0 < win_length <= n_fft, but got win_length=%d", win) end
  return n_fft, win, hop, pad
end

local SPECTROGRAM = { n_fft = "integer", win_length = "integer", hop_length = "integer", pad = "integer",
  window_fn = "function", power = "number|boolean", normalized = "boolean|string", wkwargs = "table", center = "boolean",
  pad_mode = "string", onesided = "boolean", return_complex = "boolean" }
--- wick.audio.transforms.Spectrogram([n_fft = 400][, win_length][, hop_length][, pad = 0][, window_fn =
--- wick.hann_window][, power = 2][, normalized = false][, wkwargs][, center = true][, pad_mode = "reflect"][,
--- onesided = true]): the module of spectrogram, its window the buffer `window`; power = false is torchaudio's None
T.Spectrogram = Module:extend("Spectrogram")
function T.Spectrogram:init(...)
  local fn = "Spectrogram"
  local o = check.positional(fn, { "n_fft", "win_length", "hop_length", "pad", "window_fn", "power", "normalized", "wkwargs",
    "center", "pad_mode", "onesided", "return_complex" }, SPECTROGRAM, ...)
  self.n_fft, self.win_length, self.hop_length, self.pad = frame_opts(fn, o)
  self:register_buffer("window", make_window(fn, o.window_fn or wick.hann_window, self.win_length, o.wkwargs))
  if o.power == true then check.expected(fn, "power", "a number or false", true) end
  if o.power == nil then self.power = 2.0 else self.power = o.power end
  self.normalized = o.normalized or false
  spec_norms(fn, self.normalized)
  self.center = o.center ~= false
  self.pad_mode = o.pad_mode or "reflect"
  self.onesided = o.onesided ~= false
  if o.return_complex ~= nil then
    warn("Spectrogram: `return_complex` argument is now deprecated and is not effective. Spectrogram(power = false) "
      .. "always returns a tensor with complex dtype. Please remove the argument in the function call.")
  end
end
function T.Spectrogram:forward(waveform)
  return M.functional.spectrogram(waveform, self.pad, self.window, self.n_fft, self.hop_length, self.win_length,
    self.power or nil, self.normalized, self.center, self.pad_mode, self.onesided)
end

local INVERSE = { n_fft = "integer", win_length = "integer", hop_length = "integer", pad = "integer", window_fn = "function",
  normalized = "boolean|string", wkwargs = "table", center = "boolean", pad_mode = "string", onesided = "boolean" }
--- wick.audio.transforms.InverseSpectrogram([n_fft = 400][, win_length][, hop_length][, pad = 0][, window_fn][,
--- normalized][, wkwargs][, center][, pad_mode][, onesided]): the module of inverse_spectrogram, called as
--- m(spectrogram[, length])
T.InverseSpectrogram = Module:extend("InverseSpectrogram")
function T.InverseSpectrogram:init(...)
  local fn = "InverseSpectrogram"
  local o = check.positional(fn, { "n_fft", "win_length", "hop_length", "pad", "window_fn", "normalized", "wkwargs", "center",
    "pad_mode", "onesided" }, INVERSE, ...)
  self.n_fft, self.win_length, self.hop_length, self.pad = frame_opts(fn, o)
  self:register_buffer("window", make_window(fn, o.window_fn or wick.hann_window, self.win_length, o.wkwargs))
  self.normalized = o.normalized or false
  spec_norms(fn, self.normalized)
  self.center = o.center ~= false
  self.pad_mode = o.pad_mode or "reflect"
  self.onesided = o.onesided ~= false
end
function T.InverseSpectrogram:forward(spectrogram, length)
  return M.functional.inverse_spectrogram(spectrogram, length, self.pad, self.window, self.n_fft, self.hop_length,
    self.win_length, self.normalized, self.center, self.pad_mode, self.onesided)
end

--- wick.audio.transforms.GriffinLim([n_fft = 400][, n_iter = 32][, win_length][, hop_length][, window_fn][, power = 2][,
--- wkwargs][, momentum = 0.99][, length][, rand_init = true]): the module of griffinlim, its window the buffer `window`
T.GriffinLim = Module:extend("GriffinLim")
function T.GriffinLim:init(...)
  local fn = "GriffinLim"
  local o = check.positional(fn, { "n_fft", "n_iter", "win_length", "hop_length", "window_fn", "power", "wkwargs", "momentum",
    "length", "rand_init" }, { n_fft = "integer", n_iter = "integer", win_length = "integer", hop_length = "integer",
    window_fn = "function", power = "number", wkwargs = "table", momentum = "number", length = "integer",
    rand_init = "boolean" }, ...)
  self.n_fft, self.win_length, self.hop_length = frame_opts(fn, o)
  self.n_iter = o.n_iter or 32
  check.int(self.n_iter, fn, "n_iter", 0)
  self.momentum = o.momentum or 0.99
  if not (self.momentum >= 0 and self.momentum < 1) then
    check.fail(fn, "momentum must be in the range [0, 1). Found: %s", self.momentum)
  end
  self:register_buffer("window", make_window(fn, o.window_fn or wick.hann_window, self.win_length, o.wkwargs))
  self.length, self.power, self.rand_init = o.length, o.power or 2.0, o.rand_init ~= false
end
function T.GriffinLim:forward(specgram)
  return M.functional.griffinlim(specgram, self.window, self.n_fft, self.hop_length, self.win_length, self.power, self.n_iter,
    self.momentum, self.length, self.rand_init)
end

--- wick.audio.transforms.AmplitudeToDB([stype = "power"][, top_db]): amplitude_to_DB with multiplier 10 ("power") or 20
--- ("magnitude"), amin 1e-10, reference 1
T.AmplitudeToDB = Module:extend("AmplitudeToDB")
function T.AmplitudeToDB:init(...)
  local fn = "AmplitudeToDB"
  local o = check.positional(fn, { "stype", "top_db" }, { stype = "string", top_db = "number" }, ...)
  self.stype = o.stype or "power"
  if o.top_db ~= nil and o.top_db < 0 then check.fail(fn, "top_db must be positive value") end
  self.top_db = o.top_db
  self.multiplier = self.stype == "power" and 10.0 or 20.0
  self.amin = 1e-10
  self.ref_value = 1.0
  self.db_multiplier = log10(math.max(self.amin, self.ref_value))
end
function T.AmplitudeToDB:forward(x)
  return M.functional.amplitude_to_DB(x, self.multiplier, self.amin, self.db_multiplier, self.top_db)
end

local MEL = { n_mels = "integer", sample_rate = "number", f_min = "number", f_max = "number", n_stft = "integer",
  norm = "string|boolean", mel_scale = "string" }
local function mel_init(self, fn, n_mels, sample_rate, f_min, f_max, n_stft, norm, mel_scale)
  self.n_mels, self.sample_rate = n_mels or 128, sample_rate or 16000
  check.number(self.sample_rate, fn, "sample_rate")
  self.f_max = f_max or floor(self.sample_rate / 2)
  self.f_min = f_min or 0.0
  self.n_stft = n_stft or 201
  self.norm = norm or nil
  self.mel_scale = mel_scale or "htk"
  if self.f_min > self.f_max then
    check.fail(fn, "Require f_min: %s <= f_max: %s", tostring(self.f_min), tostring(self.f_max))
  end
  self:register_buffer("fb", M.functional.melscale_fbanks(self.n_stft, self.f_min, self.f_max, self.n_mels, self.sample_rate,
    self.norm, self.mel_scale))
end
--- wick.audio.transforms.MelScale([n_mels = 128][, sample_rate = 16000][, f_min = 0][, f_max][, n_stft = 201][, norm][,
--- mel_scale = "htk"]): a spectrogram (..., freq, time) to (..., n_mels, time) by the filter banks, the buffer `fb`
T.MelScale = Module:extend("MelScale")
function T.MelScale:init(...)
  local fn = "MelScale"
  local o = check.positional(fn, { "n_mels", "sample_rate", "f_min", "f_max", "n_stft", "norm", "mel_scale" }, MEL, ...)
  mel_init(self, fn, o.n_mels, o.sample_rate, o.f_min, o.f_max, o.n_stft, o.norm, o.mel_scale)
end
function T.MelScale:forward(specgram)
  check.tensor(specgram, "MelScale", "specgram")
  if specgram:dim() < 2 or specgram:size(-2) ~= self.fb:size(1) then
    check.fail("MelScale", "expected a spectrogram (..., %d, time) of n_stft = %d frequencies, got shape %s", self.fb:size(1),
      self.fb:size(1), tostring(specgram.shape))
  end
  return wick.matmul(specgram:transpose(-1, -2), self.fb):transpose(-1, -2)
end

local MELSPEC = { sample_rate = "number", n_fft = "integer", win_length = "integer", hop_length = "integer", f_min = "number",
  f_max = "number", pad = "integer", n_mels = "integer", window_fn = "function", power = "number", normalized = "boolean|string",
  wkwargs = "table", center = "boolean", pad_mode = "string", onesided = "boolean", norm = "string|boolean",
  mel_scale = "string" }
local MELSPEC_NAMES = { "sample_rate", "n_fft", "win_length", "hop_length", "f_min", "f_max", "pad", "n_mels", "window_fn",
  "power", "normalized", "wkwargs", "center", "pad_mode", "onesided", "norm", "mel_scale" }
--- wick.audio.transforms.MelSpectrogram([sample_rate = 16000][, n_fft = 400][, win_length][, hop_length][, f_min = 0][,
--- f_max][, pad = 0][, n_mels = 128][, window_fn][, power = 2][, normalized][, wkwargs][, center][, pad_mode][,
--- onesided][, norm][, mel_scale = "htk"]): Spectrogram then MelScale, the children `spectrogram` and `mel_scale`
T.MelSpectrogram = Module:extend("MelSpectrogram")
function T.MelSpectrogram:init(...)
  local fn = "MelSpectrogram"
  local o = check.positional(fn, MELSPEC_NAMES, MELSPEC, ...)
  if o.onesided ~= nil then
    warn("MelSpectrogram: Argument 'onesided' has been deprecated and has no influence on the behavior of this module.")
  end
  self.sample_rate = o.sample_rate or 16000
  self.n_fft, self.win_length, self.hop_length, self.pad = frame_opts(fn, o)
  self.power = o.power or 2.0
  self.normalized = o.normalized or false
  self.n_mels = o.n_mels or 128
  self.f_max, self.f_min = o.f_max, o.f_min or 0.0
  self.spectrogram = T.Spectrogram({ n_fft = self.n_fft, win_length = self.win_length, hop_length = self.hop_length,
    pad = self.pad, window_fn = o.window_fn, power = self.power, normalized = self.normalized, wkwargs = o.wkwargs,
    center = o.center, pad_mode = o.pad_mode, onesided = true })
  self.mel_scale = T.MelScale({ n_mels = self.n_mels, sample_rate = self.sample_rate, f_min = self.f_min, f_max = self.f_max,
    n_stft = floor(self.n_fft / 2) + 1, norm = o.norm, mel_scale = o.mel_scale })
end
function T.MelSpectrogram:forward(waveform)
  return self.mel_scale(self.spectrogram(waveform))
end

--- wick.audio.transforms.MFCC([sample_rate = 16000][, n_mfcc = 40][, dct_type = 2][, norm = "ortho"][, log_mels =
--- false][, melkwargs]): the DCT (the buffer `dct_mat`) of the decibels (AmplitudeToDB("power", 80)) or the logs
--- (log_mels) of a MelSpectrogram(sample_rate, melkwargs) (the child `MelSpectrogram`); norm = false is torchaudio's None
T.MFCC = Module:extend("MFCC")
function T.MFCC:init(...)
  local fn = "MFCC"
  local o = check.positional(fn, { "sample_rate", "n_mfcc", "dct_type", "norm", "log_mels", "melkwargs" },
    { sample_rate = "number", n_mfcc = "integer", dct_type = "integer", norm = "string|boolean", log_mels = "boolean",
      melkwargs = "table" }, ...)
  local dct_type = o.dct_type or 2
  if dct_type ~= 2 then check.fail(fn, "DCT type not supported: %d", dct_type) end
  self.sample_rate = o.sample_rate or 16000
  self.n_mfcc = o.n_mfcc or 40
  check.int(self.n_mfcc, fn, "n_mfcc", 1)
  self.dct_type = dct_type
  if o.norm == nil then self.norm = "ortho" else self.norm = o.norm or nil end
  self.top_db = 80.0
  self.amplitude_to_DB = T.AmplitudeToDB("power", self.top_db)
  local melkwargs = {}
  for k, v in pairs(o.melkwargs or {}) do melkwargs[k] = v end
  if melkwargs.sample_rate ~= nil then check.fail(fn, "got multiple values for keyword argument 'sample_rate' (in melkwargs)") end
  melkwargs.sample_rate = self.sample_rate
  self.MelSpectrogram = T.MelSpectrogram(melkwargs)
  if self.n_mfcc > self.MelSpectrogram.n_mels then check.fail(fn, "Cannot select more MFCC coefficients than # mel bins") end
  self:register_buffer("dct_mat", M.functional.create_dct(self.n_mfcc, self.MelSpectrogram.n_mels, self.norm or false))
  self.log_mels = o.log_mels == true
end
function T.MFCC:forward(waveform)
  local mel = self.MelSpectrogram(waveform)
  if self.log_mels then mel = (mel + 1e-6):log() else mel = self.amplitude_to_DB(mel) end
  return wick.matmul(mel:transpose(-1, -2), self.dct_mat):transpose(-1, -2)
end

--- wick.audio.transforms.Resample([orig_freq = 16000][, new_freq = 16000][, resampling_method = "sinc_interp_hann"][,
--- lowpass_filter_width = 6][, rolloff = 0.99][, beta][, {dtype}]): resample with its kernel computed once, the buffer
--- `kernel` (float32 computed in float64, or in dtype), none where the frequencies are equal
T.Resample = Module:extend("Resample")
function T.Resample:init(...)
  local fn = "Resample"
  local o = check.positional(fn, { "orig_freq", "new_freq", "resampling_method", "lowpass_filter_width", "rolloff", "beta" },
    RS, ...)
  local orig, new, g, width_zeros, rolloff, method = resample_args(fn, o)
  self.orig_freq, self.new_freq, self.gcd = orig, new, g
  self.resampling_method, self.lowpass_filter_width, self.rolloff, self.beta = method, width_zeros, rolloff, o.beta
  if o.dtype ~= nil and o.dtype ~= "float32" and o.dtype ~= "float64" and o.dtype ~= "float16" and o.dtype ~= "bfloat16" then
    check.fail(fn, "expected a floating dtype, got %s", o.dtype)
  end
  if orig ~= new then
    local kernel, width = sinc_kernel(fn, orig / g, new / g, width_zeros, rolloff, method, o.beta, nil, o.dtype)
    self.width = width
    self:register_buffer("kernel", kernel)
  end
end
function T.Resample:forward(waveform)
  check.tensor(waveform, "Resample", "waveform")
  if self.orig_freq == self.new_freq then return waveform end
  return apply_kernel("Resample", waveform, self.orig_freq / self.gcd, self.new_freq / self.gcd, self.kernel, self.width)
end

M.functional = check.strict(M.functional, "wick.audio.functional")
M.transforms = check.strict(M.transforms, "wick.audio.transforms")
return check.strict(M, "wick.audio")
