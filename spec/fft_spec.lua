-- wick.fft and wick.stft / istft: the CPU kernel (radix-2 and Bluestein,
-- src/cpu/cpu_fft.c) against a DFT summed here in Lua and against the core's
-- DFT matrix product, the torch.fft identities (inverses, one-sided spectra,
-- norms, Parseval), PyTorch 2.15's values for fixed signals, gradients
-- against finite differences, and the errors.
local wick = require("wick")
local F = wick.fft

local function signal(shape, s, dtype)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  local a = wick.arange(n, { dtype = "float64" }):reshape(shape)
  return ((a * (s or 0.37)):sin() + (a * 0.11):cos() * 0.3):to(dtype or "float64")
end
local function max_diff(a, b) return (a - b):abs():max():item() end
local function real_parts(z) return wick.view_as_real(z) end

-- the DFT of the rows of a complex matrix, summed term by term in Lua
local function lua_dft(z, sign)
  local rows = z:totable()
  local out = {}
  for r, row in ipairs(rows) do
    local n = #row
    out[r] = {}
    for k = 0, n - 1 do
      local re, im = 0, 0
      for j = 0, n - 1 do
        local a = sign * 2 * math.pi * ((j * k) % n) / n
        local x = row[j + 1]
        re = re + x[1] * math.cos(a) - x[2] * math.sin(a)
        im = im + x[1] * math.sin(a) + x[2] * math.cos(a)
      end
      out[r][k + 1] = { re, im }
    end
  end
  return wick.view_as_complex(wick.tensor(out, { dtype = "float64" }))
end

describe("wick.fft", function()
  it("fft and ifft equal the DFT summed term by term, any length (powers of two, primes, composites)", function()
    for _, n in ipairs({ 1, 2, 3, 4, 5, 8, 12, 17, 31, 64, 100 }) do
      local z = wick.complex(signal({ 2, n }), signal({ 2, n }, 0.53))
      assert.is_true(max_diff(real_parts(F.fft(z)), real_parts(lua_dft(z, -1))) < 1e-9 * n, "fft n=" .. n)
      assert.is_true(max_diff(real_parts(F.ifft(z) * n), real_parts(lua_dft(z, 1))) < 1e-9 * n, "ifft n=" .. n)
    end
  end)

  it("the CPU kernel agrees with the DFT matrix product along any dim, float32 and float64", function()
    -- (the kernel's passes: radix 4, 2, 3, 5, other primes up to 31 as small
    -- DFTs, Bluestein for a larger prime factor)
    for _, shape in ipairs({ { 3, 7 }, { 16, 5 }, { 2, 3, 97 }, { 4, 128 }, { 1, 1000 }, { 2, 9 }, { 2, 27, 25 },
      { 2, 49 }, { 1, 210 }, { 1, 962 }, { 2, 37 }, { 1, 74 }, { 1, 2 * 3 * 5 * 7 * 13 } }) do
      for _, dtype in ipairs({ "float32", "float64" }) do
        local z = wick.complex(signal(shape, 0.37, dtype), signal(shape, 0.71, dtype))
        for dim = 1, #shape do
          for _, sign in ipairs({ -1, 1 }) do
            local kernel = wick._core._fft_c2c(z, dim, sign)
            local matrix = wick._core._fft_c2c(z, dim, sign, true)
            local n = shape[dim]
            local tol = (dtype == "float32" and 2e-5 or 1e-11) * n
            assert.is_true(max_diff(real_parts(kernel), real_parts(matrix)) < tol,
              ("%s %s dim %d sign %d: %g"):format(dtype, table.concat(shape, "x"), dim, sign,
                max_diff(real_parts(kernel), real_parts(matrix))))
          end
        end
      end
    end
  end)

  it("inverts: ifft(fft(x)) = x, irfft(rfft(x), n) = x for even and odd n, every norm", function()
    for _, n in ipairs({ 6, 7, 1024, 1021, 65537 }) do
      local x = signal({ n })
      for _, norm in ipairs({ "backward", "ortho", "forward" }) do
        local o = { norm = norm }
        assert.is_true(max_diff(F.ifft(F.fft(x, o), o).real, x) < 1e-9, "fft n=" .. n)
        assert.is_true(max_diff(F.irfft(F.rfft(x, o), { n = n, norm = norm }), x) < 1e-9, "rfft n=" .. n)
      end
    end
  end)

  it("rfft is the first n // 2 + 1 points of fft; norms scale as PyTorch's; ortho keeps energy (Parseval)", function()
    -- (the real kernel packs even lengths into half as many complex points)
    for _, n in ipairs({ 1, 2, 3, 4, 6, 8, 10, 16, 18, 64, 74, 100, 400, 1000, 1022 }) do
      for _, dtype in ipairs({ "float32", "float64" }) do
        local s = signal({ 3, n }, 0.37, dtype)
        local want = F.fft(s):narrow(2, 1, math.floor(n / 2) + 1)
        assert.is_true(max_diff(real_parts(F.rfft(s)), real_parts(want)) < (dtype == "float32" and 1e-5 or 1e-12) * n,
          dtype .. " n=" .. n)
        assert.is_true(max_diff(real_parts(F.rfft(s:t(), { dim = 1 })), real_parts(want:t())) < (dtype == "float32" and 1e-5 or 1e-12) * n)
      end
    end
    local x = signal({ 3, 10 })
    local whole = F.fft(x)
    assert.is_true(max_diff(real_parts(F.rfft(x)), real_parts(whole:narrow(2, 1, 6))) < 1e-12)
    assert.is_true(max_diff(real_parts(F.fft(x, { norm = "forward" })), real_parts(whole / 10)) < 1e-12)
    assert.is_true(max_diff(real_parts(F.fft(x, { norm = "ortho" })), real_parts(whole / math.sqrt(10))) < 1e-12)
    local energy = (x * x):sum():item()
    local spectrum = F.fft(x, { norm = "ortho" }):abs()
    assert.is_true(math.abs((spectrum * spectrum):sum():item() - energy) < 1e-9)
  end)

  it("gives PyTorch 2.15's values for fixed signals", function()
    local x = signal({ 3, 10 })
    -- torch.fft.fft(x).real.sum(), (|.|^2).sum(); rfft(x, n=7) imag sum, |.| sum; ...
    local y = F.fft(x)
    assert.is_true(math.abs(y.real:sum():item() - 6.2840045615) < 1e-8)
    assert.is_true(math.abs((y:abs() ^ 2):sum():item() - 176.1667283676) < 1e-7)
    local r = F.rfft(x, 7)
    assert.is_true(math.abs(r.imag:sum():item() - -1.3472371458) < 1e-8)
    assert.is_true(math.abs(r:abs():sum():item() - 21.1847620129) < 1e-8)
    assert.is_true(math.abs(F.irfft(F.rfft(x, { norm = "ortho" }), { n = 16, norm = "ortho" }):sum():item() - 3.4897855437) < 1e-8)
    local x3 = signal({ 2, 6, 5 })
    assert.is_true(math.abs(F.fft2(x3):abs():sum():item() - 170.6520862368) < 1e-7)
    assert.are.same({ 2, 6, 3 }, F.rfft2(x3):size())
    assert.is_true(math.abs(F.rfft2(x3):abs():sum():item() - 128.6718196069) < 1e-7)
    assert.is_true(math.abs(F.fftn(x3, { dim = { 1, 3 } }):abs():sum():item() - 98.9305432189) < 1e-7)
    assert.is_true(math.abs(F.rfftn(x3, { 4, 8 }):abs():sum():item() - 98.6688841459) < 1e-7)
    assert.is_true(math.abs(F.irfftn(F.rfftn(x3), { 2, 6, 5 }):sum():item() - 6.2454732644) < 1e-8)
    assert.is_true(math.abs(F.hfft(F.rfft(x[1])):sum():item() - 77.1274428966) < 1e-7)
    assert.is_true(math.abs(F.ihfft(x[1]):abs():sum():item() - 1.1775238727) < 1e-8)
  end)

  it("n-dimensional transforms are the one-dimensional ones in turn", function()
    local x = signal({ 3, 4, 6 })
    local seq = F.fft(F.fft(F.fft(x, { dim = 1 }), { dim = 2 }), { dim = 3 })
    assert.is_true(max_diff(real_parts(F.fftn(x)), real_parts(seq)) < 1e-11)
    assert.is_true(max_diff(real_parts(F.fft2(x)), real_parts(F.fft(F.fft(x, { dim = 2 }), { dim = 3 }))) < 1e-11)
    assert.is_true(max_diff(F.irfft2(F.rfft2(x), { 4, 6 }), x) < 1e-12)
    assert.is_true(max_diff(F.ifftn(F.fftn(x, { s = { 5, 4, 8 } })).real:narrow(1, 1, 3):narrow(3, 1, 6), x) < 1e-12)
  end)

  it("fftfreq, rfftfreq, fftshift and ifftshift as PyTorch's", function()
    local f = F.fftfreq(5):totable()
    local want = { 0, 0.2, 0.4, -0.4, -0.2 }
    for i = 1, 5 do assert.is_true(math.abs(f[i] - want[i]) < 1e-7) end
    local r = F.rfftfreq(6, 0.5):totable()
    for i, v in ipairs({ 0, 1 / 3, 2 / 3, 1 }) do assert.is_true(math.abs(r[i] - v) < 1e-7) end
    local t = wick.arange(10, { dtype = "int64" }):reshape(2, 5)
    assert.are.same({ { 8, 9, 5, 6, 7 }, { 3, 4, 0, 1, 2 } }, F.fftshift(t):totable())
    assert.are.same({ { 2, 3, 4, 0, 1 }, { 7, 8, 9, 5, 6 } }, F.ifftshift(t, { dim = 2 }):totable())
    assert.are.same(t:totable(), F.ifftshift(F.fftshift(t)):totable())
  end)

  it("differentiates: the gradients of real losses through rfft, irfft and fft match finite differences", function()
    local w = signal({ 2, 5 }, 0.21)
    local function through_rfft(x) return (F.rfft(x):abs() * w):sum() end
    local function through_irfft(x) return (F.irfft(F.rfft(x) * w:to("complex128"), 8) ^ 2):sum() end
    local function through_fft(x)
      local z = F.ifft(F.fft(wick.complex(x, x * 0.5), { norm = "ortho" }) * wick.arange(8, { dtype = "float64" }))
      return z:abs():sum()
    end
    local function through_irfft_odd(x) return (F.irfft(F.rfft(x * x), 7) * wick.arange(7, { dtype = "float64" })):sum() end
    local function through_irfft_half(x) return F.irfft(wick.complex(x, x:flip(2)), 14):sin():sum() end
    for _, f in ipairs({ through_rfft, through_irfft, through_fft, through_irfft_odd, through_irfft_half }) do
      assert.is_true(wick.autograd.gradcheck(f, { signal({ 2, 8 }, 0.9):requires_grad_() }))
    end
  end)

  it("refuses what torch.fft refuses, naming the function", function()
    assert.has_error(function() F.rfft(wick.complex(wick.ones(4), wick.ones(4))) end,
      "fft.rfft: expects a real input tensor, but got complex64")
    assert.has_error(function() F.fft(wick.ones(4), 0) end, "fft.fft: Invalid number of data points (0) specified")
    assert.has_error(function() F.fft(wick.ones(4), { norm = "twice" }) end)
    assert.has_error(function() F.fft(wick.ones(4), { dim = 2 }) end)
    assert.has_error(function() F.fft2(wick.ones(4), { 2, 2 }) end)
    assert.has_error(function() return F.fft_shift end)
  end)
end)

describe("wick.stft and wick.istft", function()
  local x = signal({ 2, 50 }, 0.3, "float32")

  it("stft is the rfft of the windowed frames of the reflect-padded signal, (batch, freq, frames)", function()
    local w = wick.hann_window(16)
    local s = wick.stft(x, 16, { hop_length = 4, window = w, return_complex = true })
    assert.are.same({ 2, 9, 13 }, s:size())
    local padded = wick.nn.functional.pad(x:unsqueeze(2), { 8, 8 }, "reflect"):squeeze(2)
    local frames = padded:unfold(2, 16, 4) * w
    assert.is_true(max_diff(real_parts(s), real_parts(F.rfft(frames):transpose(2, 3))) < 1e-5)
    -- PyTorch 2.15: S.abs().sum() of the same call (its signal made the same way in float32)
    local torch_x = ((wick.arange(100):reshape(2, 50) * 0.3):sin() + (wick.arange(100):reshape(2, 50) * 0.07):cos())
    local ts = wick.stft(torch_x, 16, { hop_length = 4, window = w, return_complex = true })
    assert.is_true(math.abs(ts:abs():sum():item() - 320.477325) < 1e-3)
    local s2 = wick.stft(torch_x[1], 20, { hop_length = 5, win_length = 12, window = wick.hamming_window(12),
      center = false, normalized = true, return_complex = true })
    assert.are.same({ 11, 7 }, s2:size())
    assert.is_true(math.abs(s2:abs():sum():item() - 19.348087) < 1e-3)
  end)

  it("istft inverts stft (length given or not), and gradients flow through stft", function()
    local w = wick.hann_window(16)
    local s = wick.stft(x, 16, { hop_length = 4, window = w, return_complex = true })
    local y = wick.istft(s, 16, { hop_length = 4, window = w, length = 50 })
    assert.are.same({ 2, 50 }, y:size())
    assert.is_true(max_diff(y, x) < 1e-5)
    assert.are.same({ 2, 48 }, wick.istft(s, 16, { hop_length = 4, window = w }):size())
    local xr = x:clone():requires_grad_()
    local loss = wick.stft(xr, 16, { hop_length = 4, window = w, return_complex = true }):abs():pow(2):sum()
    loss:backward()
    assert.are.same({ 2, 50 }, xr.grad:size())
    assert.is_true(xr.grad:abs():sum():item() > 0)
  end)

  it("asks for return_complex as PyTorch does, and refuses a window that leaves samples without weight", function()
    assert.has_error(function() wick.stft(x, 16) end,
      "stft: stft requires the return_complex parameter be given for real inputs, and will further require that return_complex=True in a future PyTorch release.")
    assert.has_error(function() wick.istft(wick.zeros(9, 0, { dtype = "complex64" }), 16) end,
      "istft: expected at least one frame, got an input of shape [9, 0]")
    local s = wick.stft(x, 16, { hop_length = 16, window = wick.hann_window(16), return_complex = true })
    assert.has_error(function() wick.istft(s, 16, { hop_length = 16, window = wick.hann_window(16) }) end)
  end)
end)
