-- bench/fft.lua — the wick side of the FFT benchmark (bench/fft_torch.py is the
-- PyTorch side: same cases, counts and timing).
--   build/wick bench/fft.lua [threads]      (default: $THREADS, else 1)
-- Prints one `name<TAB>milliseconds` line per case: the median over REPEATS
-- loops of the per-call CPU time.
local wick = require("wick")
local F = wick.fft
local timing = dofile("bench/timing.lua")

local threads = tonumber(arg and arg[1] or os.getenv("THREADS") or "1")
wick.set_num_threads(threads)
local REPEATS = 7

wick.manual_seed(0)
local x1024 = wick.randn(256, 1024)
local x1000 = wick.randn(256, 1000)
local z4096 = wick.complex(wick.randn(32, 4096), wick.randn(32, 4096))
local img = wick.randn(8, 128, 128)
local audio = wick.randn(16000)
local window = wick.hann_window(400)
local xg = wick.randn(64, 1024, { requires_grad = true })

-- name, calls per loop, the call
local CASES = {
  { "rfft_256x1024", 20, function() return F.rfft(x1024) end },
  { "rfft_256x1000", 10, function() return F.rfft(x1000) end },       -- Bluestein here
  { "irfft_256x1024", 20, function() return F.irfft(F.rfft(x1024)) end },
  { "fft_c64_32x4096", 20, function() return F.fft(z4096) end },
  { "rfft2_8x128x128", 20, function() return F.rfft2(img) end },
  { "stft_16000_400_160", 20, function()
    return wick.stft(audio, 400, { hop_length = 160, window = window, return_complex = true })
  end },
  { "rfft_abs_backward_64x1024", 10, function()
    xg.grad = nil
    F.rfft(xg):abs():sum():backward()
  end },
}
for _, c in ipairs(CASES) do
  print(("%s\t%.4f"):format(c[1], timing.time(c[2], c[3], REPEATS) * 1e3))
end
