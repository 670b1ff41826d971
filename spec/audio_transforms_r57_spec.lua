-- wick.audio's feature transforms (torchaudio's functional and transforms): spectrogram and its inverse, mel
-- filter banks, the DCT, decibels, resampling, Griffin-Lim and their modules. The numbers are torchaudio 2.11's
-- (on torch 2.15, CPU), for the same signals; W(t) is a weighted sum of every entry (weights 1 .. 7 in turn),
-- so a single wrong entry changes it.
local wick = require("wick")
local support = require("spec.support")
local A = wick.audio
local F, T = A.functional, A.transforms

local D = { dtype = "float64" }
-- the two test signals, (2, 200)
local function signal()
  local k = wick.arange(200, D)
  return wick.stack({ (k * 0.3):sin() + (k * 1.7):cos() * 0.5, (k * 0.05):sin() * (k * 0.9):cos() })
end
local function W(t)
  t = t:detach()
  if t:is_complex() then t = wick.view_as_real(t) end
  local w = (wick.arange(t:numel(), D) % 7 + 1):reshape(t.shape)
  return (t:to("float64") * w):sum():item()
end
local function near(got, want, rtol)
  rtol = rtol or 1e-12
  assert(math.abs(got - want) <= rtol * math.max(1, math.abs(want)),
    ("expected %.17g, got %.17g (rel %.3g)"):format(want, got, math.abs(got - want) / math.max(1, math.abs(want))))
end
local function same_shape(t, s) assert.are.same(s, support.shape_of(t)) end
-- f with the default dtype set to dtype (restored after)
local function with_default(dtype, f)
  local saved = wick.get_default_dtype()
  wick.set_default_dtype(dtype)
  local ok, err = pcall(f)
  wick.set_default_dtype(saved)
  if not ok then error(err, 0) end
end
local function quiet(f) return support.warnings_of(f) end

describe("wick.audio.functional: spectrograms", function()
  local x = signal()
  local h32, h24 = wick.hann_window(32, D), wick.hann_window(24, D)

  it("spectrogram is torchaudio's power spectrogram, also batched over leading dims", function()
    local s = F.spectrogram(x, 0, h32, 32, 8, 32, 2.0, false)
    same_shape(s, { 2, 17, 26 })
    near(W(s), 17862.20060960423)
    near(s[1][1][1]:item(), 87.04306671947145)
    near(s[2][5][7]:item(), 18.466248355227307)
    local s3 = F.spectrogram(x:view(1, 2, 200), 0, h32, 32, 8, 32, 2.0, false)
    same_shape(s3, { 1, 2, 17, 26 })
    near(W(s3), 17862.20060960423)
    same_shape(F.spectrogram(x[1], 0, h32, 32, 8, 32, 2.0, false), { 17, 26 })
  end)

  it("pad, a shorter window, power 1 and normalized = 'window' (options by name too)", function()
    local s1 = F.spectrogram(x, 3, h24, 32, 10, 24, 1.0, "window", false, "reflect", true)
    same_shape(s1, { 2, 17, 18 })
    near(W(s1), 861.3607070124666)
    near(s1[1][3][2]:item(), 1.8556795817288445)
    local byname = F.spectrogram({ waveform = x, pad = 3, window = h24, n_fft = 32, hop_length = 10, win_length = 24,
      power = 1.0, normalized = "window", center = false })
    near(W(byname), 861.3607070124666)
    -- normalized = true is "window"
    near(W(F.spectrogram(x, 3, h24, 32, 10, 24, 1.0, true, { center = false })), 861.3607070124666)
  end)

  it("power nil gives the complex spectrum; frame_length normalization, constant padding, two-sided", function()
    local c = F.spectrogram(x, 0, h32, 32, 8, 32, nil, false)
    assert.are.equal("complex128", c.dtype)
    near(c[2][4][3].real:item(), 0.8557683068205164)
    near(c[2][4][3].imag:item(), -0.6708197162843259)
    near(W(c), -61.46226757306613)
    local sf = F.spectrogram(x, 0, h32, 32, 8, 32, 2.0, "frame_length", true, "constant", false)
    same_shape(sf, { 2, 32, 26 })
    near(W(sf), 1044.8306932907396)
  end)

  it("inverse_spectrogram gives the waveform back (pad and length as torchaudio's)", function()
    local cp = F.spectrogram(x, 4, h32, 32, 8, 32, nil, "window")
    local inv = F.inverse_spectrogram(cp, 200, 4, h32, 32, 8, 32, "window")
    same_shape(inv, { 2, 200 })
    assert(((inv - x):abs():max():item()) < 1e-14)
    local c = F.spectrogram(x, 0, h32, 32, 8, 32, nil, false)
    same_shape(F.inverse_spectrogram(c, nil, 0, h32, 32, 8, 32, false), { 2, 200 })
    support.assert_error_has(function() return F.inverse_spectrogram(x, 200, 0, h32, 32, 8, 32, false) end,
      "inverse_spectrogram: Expected `spectrogram` to be complex dtype.")
  end)

  it("griffinlim (zero phases to start) is torchaudio's", function()
    local s = F.spectrogram(x, 0, h32, 32, 8, 32, 2.0, false)
    local gl = F.griffinlim(s, h32, 32, 8, 32, 2.0, 3, 0.99, 200, false)
    same_shape(gl, { 2, 200 })
    near(W(gl), -119.63148753661153, 1e-10)
    support.assert_error_has(function() return F.griffinlim(s, h32, 32, 8, 32, 2.0, 3, 1.0, 200, false) end,
      "griffinlim: momentum must be in range [0, 1). Found: 1")
  end)

  it("gradients flow through spectrogram as through torchaudio's", function()
    local xg = x:clone():requires_grad_()
    F.spectrogram(xg, 0, h24, 32, 10, 24, 1.0, true):sum():backward()
    near(W(xg.grad), 98.95751471088616, 1e-11)
  end)
end)

describe("wick.audio.functional: filter banks, DCT, decibels", function()
  it("melscale_fbanks (htk; slaney scale and norm) in float64 and in float32 as torchaudio's", function()
    with_default("float64", function()
      local fb = F.melscale_fbanks(17, 0.0, 4000.0, 6, 8000)
      same_shape(fb, { 17, 6 })
      near(fb:sum():item(), 13.233326450081503)
      near(W(fb), 62.71034228632483)
      near(fb[2][1]:item(), 0.891533665161865)
      near(fb[2][2]:item(), 0.10846633483813489)
      local sl = F.melscale_fbanks(33, 40.0, 7000.0, 8, 16000, "slaney", "slaney")
      near(sl:sum():item(), 0.03187944963063187)
      near(W(sl), 0.12868765842443045)
      near(sl[3][2]:item(), 0.0014359317245966467)
    end)
    local fb = F.melscale_fbanks(17, 0.0, 4000.0, 6, 8000)
    assert.are.equal("float32", fb.dtype)
    near(fb[2][1]:item(), 0.8915335536003113, 1e-7)
    near(fb[3][1]:item(), 0.021238824352622032, 1e-7)
    near(W(fb), 62.71034196019173, 1e-6)
    local sl = F.melscale_fbanks({ n_freqs = 33, f_min = 40.0, f_max = 7000.0, n_mels = 8, sample_rate = 16000,
      norm = "slaney", mel_scale = "slaney" })
    near(sl[2][1]:item(), 0.002098754048347473, 1e-8)
  end)

  it("melscale_fbanks warns of an all-zero filter, as torchaudio", function()
    local got = quiet(function() F.melscale_fbanks(9, 0, 8000, 20, 16000) end)
    assert.are.equal(1, #got)
    support.assert_contains(got[1], "At least one mel filterbank has all zero values")
  end)

  it("create_dct: orthonormal, or scaled by 2 for nil", function()
    with_default("float64", function()
      local d = F.create_dct(5, 8, "ortho")
      same_shape(d, { 8, 5 })
      near(W(d), 9.445294241843147)
      near(d[2][3]:item(), 0.19134171618254492)
      near(d[1][1]:item(), 0.35355339059327373)
      local n = F.create_dct(4, 6, nil)
      near(W(n), 54.93236710362345)
      near(n[3][2]:item(), 0.5176380902050419)
    end)
    near(F.create_dct(5, 8, "ortho")[2][3]:item(), 0.19134171307086945, 1e-9)
  end)

  it("amplitude_to_DB (top_db per spectrogram) and DB_to_amplitude", function()
    local x = signal()
    local s = F.spectrogram(x, 0, wick.hann_window(32, D), 32, 8, 32, 2.0, false)
    local db = F.amplitude_to_DB(s, 10.0, 1e-10, 0.0, 40.0)
    near(W(db), -35793.34263758181)
    near(db:min():item(), -20.60265816222624)
    near(db[1][9][3]:item(), 9.537584351460813)
    near(W(F.amplitude_to_DB(s:view(2, 1, 17, 26), 20.0, 1e-5, math.log10(2.0), 30.0)), 13015.538064537104)
    near(W(F.DB_to_amplitude(db, 2.0, 0.5)), 8151.003772606566)
  end)
end)

describe("wick.audio.functional.resample", function()
  local x = signal()
  it("downsamples by torchaudio's windowed sinc (16000 -> 8000, 44100 -> 16000)", function()
    local r1 = F.resample(x, 16000, 8000)
    same_shape(r1, { 2, 100 })
    near(W(r1), 28.922252498105237)
    near(r1[1][10]:item(), -0.6907500414034278)
    local r2 = F.resample(x, 44100, 16000)
    same_shape(r2, { 2, 73 })
    near(W(r2), 25.4489674990765)
    near(r2[2][40]:item(), 0.5756039342818846)
  end)

  it("upsamples with the Kaiser window; equal frequencies give the waveform itself", function()
    with_default("float64", function() -- (torchaudio's i0(beta) is of the default dtype)
      local r3 = F.resample(x, 8000, 12000, 4, 0.9, "sinc_interp_kaiser", 6.0)
      same_shape(r3, { 2, 300 })
      near(W(r3), 39.3493459676132, 1e-11)
    end)
    assert.are.equal(x, F.resample(x, 16000, 16000))
  end)

  it("gradients flow through resample", function()
    local xg = x:clone():requires_grad_()
    F.resample(xg, 44100, 16000):pow(2):sum():backward()
    near(W(xg.grad), 37.93017046192368)
  end)

  it("says what is wrong with the frequencies, the method and the waveform", function()
    support.assert_error_has(function() return F.resample(x, 0, 8000) end,
      "resample: Original frequency and desired frequency should be positive")
    support.assert_error_has(function() return F.resample(x, 16000.5, 8000) end,
      "resample: Frequencies must be of integer type")
    support.assert_error_has(function() return F.resample(x, 16000, 8000, 6, 0.99, "linear") end,
      "resample: Invalid resampling method: linear")
    support.assert_error_has(function() return F.resample(x, 16000, 8000, 0) end,
      "resample: Low pass filter width should be positive.")
    support.assert_error_has(function() return F.resample(wick.ones(2, 10, { dtype = "int64" }), 16000, 8000) end,
      "resample: Expected floating point type for waveform tensor, but received int64.")
    support.assert_error_has(function() return F.resample(x, 1e9 + 7, 1) end, "resample: the resampling kernel")
    support.assert_error_has(function() return F.resample(wick.ones(2, 0), 16000, 8000) end, "expected a non-empty waveform")
  end)
end)

describe("wick.audio.transforms (built with the default dtype float64, as torchaudio's numbers here)", function()
  local x = signal()
  local saved
  setup(function() saved = wick.get_default_dtype(); wick.set_default_dtype("float64") end)
  teardown(function() wick.set_default_dtype(saved) end)
  it("MelSpectrogram: state_dict keys as torchaudio's, values of its float32 filters in float64", function()
    local ms = T.MelSpectrogram(8000, 64, { hop_length = 16, n_mels = 10 }):double()
    assert.are.same({ "mel_scale.fb", "spectrogram.window" }, support.sorted(ms:state_dict():keys()))
    near(W(ms(x)), 31905.46594452167)
  end)

  it("MFCC (decibels, and log_mels with norm = false), its dct_mat buffer, and its gradient", function()
    local mf = T.MFCC(8000, 6, { melkwargs = { n_fft = 64, hop_length = 16, n_mels = 10 } }):double()
    assert.are.same({ "MelSpectrogram.mel_scale.fb", "MelSpectrogram.spectrogram.window", "dct_mat" },
      support.sorted(mf:state_dict():keys()))
    local y = mf(x)
    same_shape(y, { 2, 6, 13 })
    near(W(y), -4083.6968242807125)
    near(y[1][2][3]:item(), 28.75716375546043)
    local xg = x:clone():requires_grad_()
    mf(xg):pow(2):sum():backward()
    near(W(xg.grad), -16105993.844166402, 1e-11)
    near(xg.grad[1][50]:item(), -10525.910980912386, 1e-11)
    local mf2 = T.MFCC(8000, 6, { norm = false, log_mels = true, melkwargs = { n_fft = 64, n_mels = 10, mel_scale = "slaney",
      center = false } }):double()
    near(W(mf2(x)), -2193.982040719748)
  end)

  it("Spectrogram (power = false: complex) and InverseSpectrogram, each with its window buffer", function()
    local sp = T.Spectrogram(32, { hop_length = 8, power = false }):double()
    local isp = T.InverseSpectrogram(32, { hop_length = 8 }):double()
    assert.are.same({ "window" }, sp:state_dict():keys())
    assert.are.same({ "window" }, isp:state_dict():keys())
    local c = sp(x)
    assert.is_true(c:is_complex())
    assert((isp(c, 200) - x):abs():max():item() < 1e-14)
    local p = T.Spectrogram(32, { hop_length = 8 }):double()
    near(W(p(x)), 17862.20060960423)
  end)

  it("Resample: its float32 kernel (computed in float64), as torchaudio's", function()
    local rs = T.Resample(44100, 16000)
    same_shape(rs.kernel, { 160, 1, 475 })
    assert.are.equal("float32", rs.kernel.dtype)
    near(rs.kernel:double():sum():item(), 160.0746878461572)
    near(W(rs(x:float())), 25.448971414589323, 1e-6)
    assert.are.same({ "kernel" }, rs:state_dict():keys())
    assert.are.same({}, T.Resample(16000, 16000):state_dict():keys())
  end)

  it("in float32 (the default dtype's filters and kernel), as torchaudio's to float32's precision", function()
    with_default("float32", function()
      local mf = T.MFCC(8000, 6, { melkwargs = { n_fft = 64, hop_length = 16, n_mels = 10 } })
      assert.are.equal("float32", mf.dct_mat.dtype)
      near(W(mf(x:float())), -4083.678882598877, 1e-5) -- (torchaudio's float32 FFT is the less exact here)
      near(T.Resample(44100, 16000).kernel:double():sum():item(), 160.07468764131602)
    end)
  end)

  it("AmplitudeToDB, MelScale and GriffinLim", function()
    local s = F.spectrogram(x, 0, wick.hann_window(32, D), 32, 8, 32, 2.0, false)
    near(W(T.AmplitudeToDB("power", 40.0)(s)), -35793.34263758181)
    local mel = T.MelScale(6, 8000, 0.0, 4000.0, 17)
    same_shape(mel(s), { 2, 6, 26 })
    near(W(mel(s)), W(wick.matmul(s:transpose(2, 3), F.melscale_fbanks(17, 0.0, 4000.0, 6, 8000)):transpose(2, 3)))
    local gl = T.GriffinLim(32, 3, { hop_length = 8, length = 200, rand_init = false }):double()
    near(W(gl(s)), -119.63148753661153, 1e-10)
  end)

  it("says what is wrong with the arguments, in torchaudio's words", function()
    support.assert_error_has(function() return T.MelScale(10, 16000, 9000) end, "MelScale: Require f_min: 9000 <= f_max: 8000")
    support.assert_error_has(function() return T.MFCC(16000, 13, 3) end, "MFCC: DCT type not supported: 3")
    support.assert_error_has(function() return quiet(function() return T.MFCC(16000, 200) end) end, "MFCC: Cannot select more MFCC coefficients than # mel bins")
    support.assert_error_has(function() return T.AmplitudeToDB("power", -1) end, "AmplitudeToDB: top_db must be positive value")
    support.assert_error_has(function() return T.Spectrogram(0) end, "Spectrogram: argument 'n_fft' must be a positive integer")
    support.assert_error_has(function() return T.MFCC({ melkwargs = { foo = 1 } }) end, "MelSpectrogram: unknown option 'foo'")
    support.assert_error_has(function() return T.MelScale(10, 16000, 0, nil, 33)(wick.ones(5, 4)) end,
      "MelScale: expected a spectrogram (..., 33, time)")
  end)
end)

describe("wick.audio's functional errors and missing names", function()
  local x = signal()
  local h = wick.hann_window(32, D)
  it("bad arguments are clean errors naming the function", function()
    support.assert_error_has(function() return F.spectrogram() end, "spectrogram: missing required argument 'waveform'")
    support.assert_error_has(function() return F.spectrogram(x, 0, h, 32, 8, 32, 2, "foo") end,
      "spectrogram: Invalid normalized parameter: foo")
    support.assert_error_has(function() return F.spectrogram(x, 0, h, 32, 8, 16, 2, false) end,
      "spectrogram: expected a 1D window tensor of size equal to win_length=16")
    support.assert_error_has(function() return F.spectrogram(x, 0, h, 32, 0, 32, 2, false) end,
      "spectrogram: argument 'hop_length' must be a positive integer")
    support.assert_error_has(function() return F.spectrogram(wick.zeros(2, 0), 0, h, 32, 8, 32, 2, false) end,
      "spectrogram: expected a non-empty waveform")
    support.assert_error_has(function() return F.melscale_fbanks(10, 0, 8000, 4, 16000, "x") end,
      'melscale_fbanks: norm must be one of None or "slaney"')
    support.assert_error_has(function() return F.melscale_fbanks(10, 0, 8000, 4, 16000, nil, "x") end,
      'melscale_fbanks: mel_scale should be one of "htk" or "slaney".')
    support.assert_error_has(function() return F.melscale_fbanks(2 ^ 30, 0, 8000, 2 ^ 30, 16000) end, "is too large")
    support.assert_error_has(function() return F.create_dct(3, 4, "x") end, 'create_dct: norm must be either "ortho" or None')
    support.assert_error_has(function() return F.amplitude_to_DB(wick.ones(4), 10, 1e-10, 0, 80) end,
      "amplitude_to_DB: expected x of at least 2 dims")
  end)

  it("a name wick.audio lacks is an error, not nil", function()
    support.assert_error_has(function() return F.phase_vocoder end,
      "wick.audio.functional has no 'phase_vocoder' (not in this version of wick: see docs/api.md)")
    support.assert_error_has(function() return T.LFCC end,
      "wick.audio.transforms has no 'LFCC' (not in this version of wick: see docs/api.md)")
    support.assert_error_has(function() return A.models end, "wick.audio has no 'models'")
    assert.is_function(F.rnnt_loss)
    assert.is_table(T.RNNTLoss)
  end)
end)
