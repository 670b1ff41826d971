-- wick.fft: torch.fft's transforms, and wick.stft / wick.istft. Each is
-- composed of the core's differentiable transforms along one dim, all
-- unnormalised (src/core/fft.c: complex to complex, a real signal to its
-- non-negative frequencies, and back; on the CPU any length in O(n log n)),
-- and tensor ops for the rest: lengths (cut or zero-padded), norms, several
-- dims, frames. Arguments as PyTorch's, by position or in an options table:
-- fft(x, n, dim, norm), fftn(x, s, dim, norm); dims count from 1 (negative
-- from the end), the default the last.
local core = require("wick.core")
local check = require("wick.argcheck")

local fft_c2c, fft_r2c, fft_c2r = core._fft_c2c, core._fft_r2c, core._fft_c2r
local floor = math.floor

return function(wick)
  local fft = {}

  local ONE = { n = "integer", dim = "integer", norm = "string" }
  local MANY = { s = "table", dim = "integer|table", norm = "string" }
  local NORMS = { "backward", "ortho", "forward" }

  local function norm_of(norm, fn)
    if norm == nil then return "backward" end
    return check.one_of(norm, fn, "norm", NORMS)
  end
  -- the factor of a transform of n points: "backward" scales the inverse by
  -- 1/n, "forward" the forward one, "ortho" both by 1/sqrt(n)
  local function scaled(y, n, norm, inverse)
    local f = 1
    if norm == "ortho" then f = 1 / math.sqrt(n)
    elseif (norm == "backward") == inverse then f = 1 / n end
    if f == 1 then return y end
    return y * f
  end

  -- (integers and bool: the default dtype's complex one, as PyTorch's)
  local function complex_of(x)
    if x:is_complex() then return x end
    local real = x:is_floating_point() and x.dtype or wick.get_default_dtype()
    return x:to(real == "float64" and "complex128" or "complex64")
  end
  -- a real signal as float32 or float64 (integers: the default dtype; the
  -- 16-bit ones: float32)
  local function real_input(x, fn)
    if x:is_complex() then
      check.fail(fn, "expects a real input tensor, but got %s", x.dtype)
    end
    if not x:is_floating_point() then return x:to(wick.get_default_dtype()) end
    if x.dtype == "float16" or x.dtype == "bfloat16" then return x:to("float32") end
    return x
  end
  -- x with n points along dim: cut, or padded with zeros at the end
  local function resized(x, n, dim)
    local size = x:size(dim)
    if n == size then return x end
    if n < size then return x:narrow(dim, 1, n) end
    local shape = x:size()
    shape[dim < 0 and #shape + dim + 1 or dim] = n - size
    return wick.cat({ x, wick.zeros(shape, { dtype = x.dtype, device = x.device }) }, dim)
  end
  local function is_int(v) return type(v) == "number" and v == floor(v) and v == v end
  local function points(n, default, fn)
    if n == nil then n = default end
    if not is_int(n) then check.fail(fn, "expected an integer number of points, got %s", check.describe(n)) end
    if n < 1 then check.fail(fn, "Invalid number of data points (%.0f) specified", n) end
    return n
  end
  local function one_dim(x, dim, fn)
    check.tensor(x, fn, "input")
    if x:dim() == 0 then check.fail(fn, "expected a tensor with at least one dimension") end
    dim = dim or -1
    if not is_int(dim) then check.fail(fn, "expected an integer dimension, got %s", check.describe(dim)) end
    if dim == 0 or dim > x:dim() or dim < -x:dim() then
      check.fail(fn, "dimension %.0f is out of range for a %d-dimensional tensor (dimensions count from 1)", dim, x:dim())
    end
    return dim
  end

  -- the one-dim transforms, on checked arguments
  local function c2c(x, n, dim, norm, inverse, fn)
    n = points(n, x:size(dim), fn or "fft")
    local y = fft_c2c(resized(complex_of(x), n, dim), dim, inverse and 1 or -1)
    return scaled(y, n, norm, inverse)
  end
  -- (always the forward transform: ihfft is the conjugate of rfft with the
  -- norm swapped; the `inverse` argument of the other two is not used)
  local function r2c(x, n, dim, norm, _, fn)
    x = real_input(x, fn)
    n = points(n, x:size(dim), fn)
    return scaled(fft_r2c(resized(x, n, dim), dim), n, norm, false)
  end
  -- the real signal of n points of a one-sided spectrum of n // 2 + 1 (the
  -- imaginary parts at 0 and n / 2, which no real signal has, are ignored, as
  -- in PyTorch's): the core's wick_fft_c2r
  local function c2r(x, n, dim, norm, inverse, fn)
    n = points(n, 2 * (x:size(dim) - 1), fn)
    local y = fft_c2r(resized(complex_of(x), floor(n / 2) + 1, dim), dim, n)
    return scaled(y, n, norm, inverse)
  end

  local function define(name, fn, inverse)
    fft[name] = function(x, ...)
      local o = check.positional("fft." .. name, { "n", "dim", "norm" }, ONE, ...)
      local dim = one_dim(x, o.dim, "fft." .. name)
      return fn(x, o.n, dim, norm_of(o.norm, "fft." .. name), inverse, "fft." .. name)
    end
  end
  --- fft.fft / fft.ifft(x, n, dim, norm): the DFT and its inverse
  define("fft", c2c, false)
  define("ifft", c2c, true)
  --- fft.rfft(x, n, dim, norm): of a real signal, the n // 2 + 1 non-negative frequencies
  define("rfft", r2c, false)
  --- fft.irfft(X, n, dim, norm): the real signal of n points (default 2 (m - 1)) of a one-sided spectrum
  define("irfft", c2r, true)
  local swapped = { backward = "forward", forward = "backward", ortho = "ortho" }
  --- fft.hfft(x, n, dim, norm): the (real) spectrum of a Hermitian signal given by its first half
  fft.hfft = function(x, ...)
    local o = check.positional("fft.hfft", { "n", "dim", "norm" }, ONE, ...)
    local dim = one_dim(x, o.dim, "fft.hfft")
    return c2r(complex_of(x):conj(), o.n, dim, swapped[norm_of(o.norm, "fft.hfft")], true, "fft.hfft")
  end
  --- fft.ihfft(x, n, dim, norm): the inverse of hfft, of a real signal (one-sided)
  fft.ihfft = function(x, ...)
    local o = check.positional("fft.ihfft", { "n", "dim", "norm" }, ONE, ...)
    local dim = one_dim(x, o.dim, "fft.ihfft")
    return r2c(x, o.n, dim, swapped[norm_of(o.norm, "fft.ihfft")], false, "fft.ihfft"):conj()
  end

  -- the dims and lengths of an n-dimensional transform: dim given, or the
  -- last #s dims, or (default_dims) the last two, or every dim
  local function dims_and_sizes(x, o, fn, default_dims)
    check.tensor(x, fn, "input")
    if x:dim() == 0 then check.fail(fn, "expected a tensor with at least one dimension") end
    local dims = o.dim
    if type(dims) == "number" then dims = { dims } end
    local s = o.s
    if dims == nil then
      local count = s and #s or default_dims or x:dim()
      if count > x:dim() then check.fail(fn, "got %d sizes for a %d-dimensional tensor", count, x:dim()) end
      dims = {}
      for i = 1, count do dims[i] = x:dim() - count + i end
    end
    if s ~= nil and #s ~= #dims then
      check.fail(fn, "when given, dim and s must have the same length (got %d and %d)", #dims, #s)
    end
    if #dims == 0 then check.fail(fn, "expected at least one dimension to transform") end
    for i = 1, s and #s or 0 do
      if not is_int(s[i]) or (s[i] < 1 and s[i] ~= -1) then
        check.fail(fn, "s[%d] must be a positive number of points (or -1: the input's), got %s", i, check.describe(s[i]))
      end
    end
    local seen = {}
    for i, d in ipairs(dims) do
      d = one_dim(x, d, fn)
      if d < 0 then d = x:dim() + d + 1 end
      if seen[d] then check.fail(fn, "dims must be unique (dimension %d is given twice)", d) end
      seen[d], dims[i] = true, d
    end
    local sizes = {}
    for i = 1, #dims do
      local n = s and s[i]
      if n == -1 then n = nil end
      sizes[i] = n
    end
    return dims, sizes
  end

  local function define_n(name, kind, inverse, default_dims)
    fft[name] = function(x, ...)
      local fn = "fft." .. name
      local o = check.positional(fn, { "s", "dim", "norm" }, MANY, ...)
      local norm = norm_of(o.norm, fn)
      local dims, sizes = dims_and_sizes(x, o, fn, default_dims)
      local last = #dims
      if kind == "hc2r" then -- hfftn: irfftn of the conjugate, the norm swapped
        local y = complex_of(x):conj()
        norm = swapped[norm]
        for i = 1, last - 1 do y = c2c(y, sizes[i], dims[i], norm, true, fn) end
        return c2r(y, sizes[last], dims[last], norm, true, fn)
      elseif kind == "hr2c" then -- ihfftn: the conjugate of rfftn, the norm swapped
        norm = swapped[norm]
        local y = r2c(x, sizes[last], dims[last], norm, false, fn)
        for i = 1, last - 1 do y = c2c(y, sizes[i], dims[i], norm, false, fn) end
        return y:conj()
      elseif kind == "c2c" then
        local y = x
        for i = 1, last do y = c2c(y, sizes[i], dims[i], norm, inverse, fn) end
        return y
      elseif kind == "r2c" then -- the last dim one-sided, then the others whole
        local y = r2c(x, sizes[last], dims[last], norm, inverse, fn)
        for i = 1, last - 1 do y = c2c(y, sizes[i], dims[i], norm, inverse, fn) end
        return y
      end
      local y = x -- c2r: the others first, the last dim made real
      for i = 1, last - 1 do y = c2c(y, sizes[i], dims[i], norm, inverse, fn) end
      return c2r(y, sizes[last], dims[last], norm, inverse, fn)
    end
  end
  --- fft.fft2 / ifft2 / rfft2 / irfft2(x, s, dim, norm): over the last two dims (or dim)
  define_n("fft2", "c2c", false, 2)
  define_n("ifft2", "c2c", true, 2)
  define_n("rfft2", "r2c", false, 2)
  define_n("irfft2", "c2r", true, 2)
  --- fft.fftn / ifftn / rfftn / irfftn(x, s, dim, norm): over every dim (or the last #s, or dim)
  define_n("fftn", "c2c", false)
  define_n("ifftn", "c2c", true)
  define_n("rfftn", "r2c", false)
  define_n("irfftn", "c2r", true)
  --- fft.hfft2 / hfftn(x, s, dim, norm): the real n-dimensional spectrum of a Hermitian signal given
  --- by its half along the last transformed dim (its length there s[#s], default 2 (m - 1));
  --- fft.ihfft2 / ihfftn(x, s, dim, norm): their inverses, of a real signal (one-sided in the last dim)
  define_n("hfft2", "hc2r", false, 2)
  define_n("ihfft2", "hr2c", true, 2)
  define_n("hfftn", "hc2r", false)
  define_n("ihfftn", "hr2c", true)

  local FREQ = { d = "number", dtype = "dtype", device = "device", requires_grad = "boolean" }
  -- the integers [first, last] (a range of indices, made as a tensor) / (d n)
  local function frequencies(first, last, n, o)
    local opts = { dtype = o.dtype or wick.get_default_dtype(), device = o.device }
    return wick.arange(first, last + 1, opts) / ((o.d or 1) * n)
  end
  local function leaf(t, o)
    if o.requires_grad then t:requires_grad_(true) end
    return t
  end
  --- fft.fftfreq(n, d = 1): the sample frequencies of an n-point DFT, [0, 1, ..., -2, -1] / (d n)
  function fft.fftfreq(n, ...)
    local o = check.positional("fft.fftfreq", { "d" }, FREQ, ...)
    check.int(n, "fft.fftfreq", "n", 1)
    local up = frequencies(0, floor((n - 1) / 2), n, o)
    if n < 2 then return leaf(up, o) end
    return leaf(wick.cat({ up, frequencies(-floor(n / 2), -1, n, o) }), o)
  end
  --- fft.rfftfreq(n, d = 1): those of rfft, [0, 1, ..., n // 2] / (d n)
  function fft.rfftfreq(n, ...)
    local o = check.positional("fft.rfftfreq", { "d" }, FREQ, ...)
    check.int(n, "fft.rfftfreq", "n", 1)
    return leaf(frequencies(0, floor(n / 2), n, o), o)
  end

  local SHIFT = { dim = "integer|table" }
  local function shift(name, sign)
    fft[name] = function(x, ...)
      local fn = "fft." .. name
      check.tensor(x, fn, "input")
      local o = check.positional(fn, { "dim" }, SHIFT, ...)
      local dims = o.dim
      if dims == nil then
        dims = {}
        for i = 1, x:dim() do dims[i] = i end
      elseif type(dims) == "number" then
        dims = { dims }
      end
      if #dims == 0 then return x:clone() end
      local shifts = {}
      for i, d in ipairs(dims) do shifts[i] = sign * floor(x:size(one_dim(x, d, fn)) / 2) end
      return x:roll(shifts, dims)
    end
  end
  --- fft.fftshift(x, dim): the zero frequency moved to the middle (of every dim, or dim)
  shift("fftshift", 1)
  --- fft.ifftshift(x, dim): its inverse
  shift("ifftshift", -1)

  -- ---- short-time transforms (torch.stft, torch.istft) ----

  local STFT = { n_fft = "integer", hop_length = "integer", win_length = "integer", window = "tensor",
    center = "boolean", pad_mode = "string", normalized = "boolean", onesided = "boolean",
    return_complex = "boolean", length = "integer" }
  -- the window of win_length points (ones by default) centred in n_fft points
  local function full_window(fn, window, n_fft, win_length, like)
    win_length = win_length or n_fft -- (PyTorch's default; a window of another length is its error)
    if win_length < 1 or win_length > n_fft then
      check.fail(fn, "expected 0 < win_length <= n_fft, but got win_length=%d", win_length)
    end
    if window == nil then
      window = wick.ones(win_length, { dtype = like.dtype, device = like.device })
    elseif window:dim() ~= 1 or window:size(1) ~= win_length then
      check.fail(fn, "expected a 1D window tensor of size equal to win_length=%d, but got window with size %s",
        win_length, tostring(window.shape))
    end
    if win_length == n_fft then return window end
    local left = floor((n_fft - win_length) / 2)
    return wick.nn.functional.pad(window, { left, n_fft - win_length - left })
  end
  local function stft_args(fn, input, ...)
    check.tensor(input, fn, "input")
    local o = check.positional(fn, { "n_fft", "hop_length", "win_length", "window", "center", "pad_mode",
      "normalized", "onesided", "return_complex" }, STFT, ...)
    local n_fft = o.n_fft
    if n_fft == nil then check.fail(fn, "missing argument 'n_fft'") end
    local hop = o.hop_length or floor(n_fft / 4)
    if n_fft < 1 or hop < 1 then check.fail(fn, "expected n_fft > 0 and hop_length > 0, got %d and %d", n_fft, hop) end
    return o, n_fft, hop
  end

  --- wick.stft(input, n_fft, hop_length, win_length, window, center = true,
  --- pad_mode = "reflect", normalized = false, onesided, return_complex):
  --- the DFTs of the windowed frames of a 1-D signal or a batch of them,
  --- (..., n_fft // 2 + 1 or n_fft, frames) as torch.stft's
  -- input by name too (torch.stft(input=waveform, n_fft=...)): from the options table
  local function input_by_name(fn, ...)
    return check.required(fn, { "input" }, ...)
  end
  local stft, istft
  function wick.stft(...) return stft(input_by_name("stft", ...)) end
  function wick.istft(...) return istft(input_by_name("istft", ...)) end
  function stft(input, ...)
    local fn = "stft"
    local o, n_fft, hop = stft_args(fn, input, ...)
    if o.return_complex == nil and not input:is_complex() and not (o.window and o.window:is_complex()) then
      check.fail(fn, "stft requires the return_complex parameter be given for real inputs, and will further "
        .. "require that return_complex=True in a future PyTorch release.")
    end
    if input:dim() ~= 1 and input:dim() ~= 2 then check.fail(fn, "expected a 1D or 2D tensor, got %dD", input:dim()) end
    local x = input:dim() == 1 and input:unsqueeze(1) or input
    if not x:is_floating_point() and not x:is_complex() then x = x:to(wick.get_default_dtype()) end
    if o.center ~= false then
      local pad = floor(n_fft / 2)
      x = wick.nn.functional.pad(x:unsqueeze(2), { pad, pad }, o.pad_mode or "reflect"):squeeze(2)
    end
    local length = x:size(2)
    if n_fft > length then check.fail(fn, "expected 0 < n_fft < %d, but got n_fft=%d", length, n_fft) end
    if o.window == nil then -- (PyTorch's warning, once in all)
      require("wick.nn.common").warn("stft: a window was not provided. A rectangular window will be applied, which is "
        .. "known to cause spectral leakage. Other windows such as wick.hann_window or wick.hamming_window are "
        .. "recommended to reduce spectral leakage. To suppress this warning and use a rectangular window, explicitly "
        .. "set `window = wick.ones(n_fft, {device = ...})`.", true)
    end
    local window = full_window(fn, o.window, n_fft, o.win_length, x)
    local frames = x:unfold(2, n_fft, hop) * window -- (batch, frames, n_fft)
    local onesided = o.onesided
    if onesided == nil then onesided = not frames:is_complex() end
    local y = onesided and fft.rfft(frames, { dim = -1 }) or fft.fft(frames, { dim = -1 })
    if o.normalized then y = y * (1 / math.sqrt(n_fft)) end
    y = y:transpose(2, 3)
    if input:dim() == 1 then y = y:squeeze(1) end
    if o.return_complex == false then return wick.view_as_real(y) end
    return y
  end

  --- wick.istft(input, n_fft, hop_length, win_length, window, center = true,
  --- normalized = false, onesided, length, return_complex = false): the signal
  --- whose stft is input, by overlap-add of the frames' inverse DFTs divided
  --- by the sum of the squared windows there
  function istft(input, ...)
    local fn = "istft"
    local o, n_fft, hop = stft_args(fn, input, ...)
    if not input:is_complex() then check.fail(fn, "expected a complex input tensor (the output of stft)") end
    if input:dim() ~= 2 and input:dim() ~= 3 then check.fail(fn, "expected a 2D or 3D tensor, got %dD", input:dim()) end
    local spec = input:dim() == 2 and input:unsqueeze(1) or input
    if spec:size(3) == 0 then check.fail(fn, "expected at least one frame, got an input of shape %s", tostring(input.shape)) end
    local onesided = o.onesided
    if onesided == nil then onesided = spec:size(2) ~= n_fft end
    if onesided and spec:size(2) ~= floor(n_fft / 2) + 1 then
      check.fail(fn, "expected the frequency dimension (%d) of the input to be n_fft // 2 + 1 = %d (a one-sided stft)",
        spec:size(2), floor(n_fft / 2) + 1)
    end
    if o.normalized then spec = spec * math.sqrt(n_fft) end
    spec = spec:transpose(2, 3) -- (batch, frames, freq)
    local frames
    if onesided then frames = fft.irfft(spec, { n = n_fft, dim = -1 })
    else
      frames = fft.ifft(spec, { n = n_fft, dim = -1 })
      if not o.return_complex then frames = frames.real end
    end
    local window = full_window(fn, o.window, n_fft, o.win_length, frames.real or frames)
    frames = frames * window
    local batch, count = frames:size(1), frames:size(2)
    local total = n_fft + hop * (count - 1)
    -- every frame's samples at their places: index t * hop + k (1-based)
    local place = (wick.arange(count, { dtype = "int64" }) * hop):unsqueeze(2) + wick.arange(1, n_fft + 1, { dtype = "int64" })
    place = place:reshape(-1):to(frames.device)
    local y = wick.zeros(batch, total, { dtype = frames.dtype, device = frames.device })
    y = y:index_add(2, place, frames:reshape(batch, -1))
    local envelope = wick.zeros(total, { dtype = window.dtype, device = window.device })
    local squared = window * window
    envelope = envelope:index_add(1, place, squared["repeat"](squared, count))
    local start = o.center ~= false and floor(n_fft / 2) or 0
    local stop = o.length and start + o.length or (o.center ~= false and total - floor(n_fft / 2) or total)
    local have = math.min(stop, total) - start
    y = y:narrow(2, start + 1, have)
    envelope = envelope:narrow(1, start + 1, have)
    if envelope:abs():lt(1e-11):any() then
      check.fail(fn, "window overlap add min: %g (the window does not satisfy NOLA: some samples get no weight)",
        envelope:abs():min():item())
    end
    y = y / envelope
    if stop > total then -- a length beyond the frames: zeros
      y = wick.cat({ y, wick.zeros(batch, stop - total, { dtype = y.dtype, device = y.device }) }, 2)
    end
    if input:dim() == 2 then y = y:squeeze(1) end
    return y
  end

  return check.strict(fft, "wick.fft")
end
