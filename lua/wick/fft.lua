-- wick.fft: torch.fft's transforms. Each is composed of the core's one
-- differentiable transform, the unnormalised complex DFT along one dim
-- (wick_fft_c2c, src/core/fft.c; on the CPU any length in O(n log n)), and
-- tensor ops for the rest: lengths (cut or zero-padded), norms, the halves of
-- real signals' spectra. Arguments as PyTorch's, by position or in an options
-- table: fft(x, n, dim, norm), fftn(x, s, dim, norm); dims count from 1
-- (negative from the end), the default the last.
local core = require("wick.core")
local check = require("wick.argcheck")

local Tensor = core.Tensor
local fft_c2c = core._fft_c2c
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

  local function complex_of(x)
    if x:is_complex() then return x end
    return x:to(x.dtype == "float64" and "complex128" or "complex64")
  end
  local function real_input(x, fn)
    if x:is_complex() then
      check.fail(fn, "expects a real input tensor, but got %s", x.dtype)
    end
    if not x:is_floating_point() then return x:to(wick.get_default_dtype()) end
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
  local function points(n, default, fn)
    if n == nil then n = default end
    if n < 1 then check.fail(fn, "Invalid number of data points (%d) specified", n) end
    return n
  end
  local function one_dim(x, dim, fn)
    check.tensor(x, fn, "input")
    if x:dim() == 0 then check.fail(fn, "expected a tensor with at least one dimension") end
    dim = dim or -1
    if dim == 0 or dim > x:dim() or dim < -x:dim() then
      check.fail(fn, "dimension %d is out of range for a %d-dimensional tensor (dimensions count from 1)", dim, x:dim())
    end
    return dim
  end

  -- the one-dim transforms, on checked arguments
  local function c2c(x, n, dim, norm, inverse)
    n = points(n, x:size(dim), "fft")
    local y = fft_c2c(resized(complex_of(x), n, dim), dim, inverse and 1 or -1)
    return scaled(y, n, norm, inverse)
  end
  local function r2c(x, n, dim, norm, inverse, fn)
    x = real_input(x, fn)
    n = points(n, x:size(dim), fn)
    local y = fft_c2c(complex_of(resized(x, n, dim)), dim, inverse and 1 or -1)
    return scaled(y:narrow(dim, 1, floor(n / 2) + 1), n, norm, inverse)
  end
  -- a one-sided spectrum of n // 2 + 1 points made whole (X[n - k] = conj X[k]),
  -- transformed, its real part: the imaginary parts the whole one cannot have
  -- (at 0, and at n / 2 for an even n) drop out there, as in PyTorch's
  local function c2r(x, n, dim, norm, inverse, fn)
    n = points(n, 2 * (x:size(dim) - 1), fn)
    local half = resized(complex_of(x), floor(n / 2) + 1, dim)
    local whole = half
    local mirrored = n - (floor(n / 2) + 1)
    if mirrored > 0 then
      whole = wick.cat({ half, half:narrow(dim, 2, mirrored):flip(dim):conj() }, dim)
    end
    local y = fft_c2c(whole, dim, inverse and 1 or -1).real
    return scaled(y, n, norm, inverse):contiguous()
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
      if kind == "c2c" then
        local y = x
        for i = 1, last do y = c2c(y, sizes[i], dims[i], norm, inverse) end
        return y
      elseif kind == "r2c" then -- the last dim one-sided, then the others whole
        local y = r2c(x, sizes[last], dims[last], norm, inverse, fn)
        for i = 1, last - 1 do y = c2c(y, sizes[i], dims[i], norm, inverse) end
        return y
      end
      local y = x -- c2r: the others first, the last dim made real
      for i = 1, last - 1 do y = c2c(y, sizes[i], dims[i], norm, inverse) end
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

  local FREQ = { d = "number", dtype = "dtype", device = "device", requires_grad = "boolean" }
  local function frequencies(fn, values, n, d, o)
    local t = wick.tensor(values, { dtype = o.dtype or wick.get_default_dtype(), device = o.device }) / (d * n)
    if o.requires_grad then t:requires_grad_(true) end
    return t
  end
  --- fft.fftfreq(n, d = 1): the sample frequencies of an n-point DFT, [0, 1, ..., -2, -1] / (d n)
  function fft.fftfreq(n, ...)
    local o = check.positional("fft.fftfreq", { "d" }, FREQ, ...)
    check.int(n, "fft.fftfreq", "n", 1)
    local v = {}
    for i = 0, n - 1 do v[#v + 1] = i <= floor((n - 1) / 2) and i or i - n end
    return frequencies("fft.fftfreq", v, n, o.d or 1, o)
  end
  --- fft.rfftfreq(n, d = 1): those of rfft, [0, 1, ..., n // 2] / (d n)
  function fft.rfftfreq(n, ...)
    local o = check.positional("fft.rfftfreq", { "d" }, FREQ, ...)
    check.int(n, "fft.rfftfreq", "n", 1)
    local v = {}
    for i = 0, floor(n / 2) do v[#v + 1] = i end
    return frequencies("fft.rfftfreq", v, n, o.d or 1, o)
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

  return check.strict(fft, "wick.fft")
end
