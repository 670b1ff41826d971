-- wick.scipy.signal (get_window, kaiser_beta, kaiser_atten, kaiserord, firwin, lfilter) and
-- wick.scipy.optimize.fmin, against SciPy 1.17.1's values (float64, printed with 17 digits).
local wick = require("wick")
local support = require("spec.support")
local signal, optimize = wick.scipy.signal, wick.scipy.optimize

-- every entry of a float64 tensor within 1e-15 of SciPy's (relative; absolute near zero)
local function close(got, want, tol)
  tol = tol or 1e-15
  assert.are.equal("float64", got.dtype)
  assert.are.equal(1, got:dim())
  local g = got:totable()
  assert.are.equal(#want, #g)
  for i = 1, #want do
    local d = math.abs(g[i] - want[i])
    assert(d <= tol * math.max(math.abs(want[i]), 1e-2),
      ("entry %d: %.17g, SciPy's %.17g"):format(i, g[i], want[i]))
  end
end

describe("wick.scipy.signal windows", function()
  it("get_window: symmetric (fftbins = false) and periodic windows as SciPy's", function()
    close(signal.get_window("hamming", 7, false), { 0.080000000000000071, 0.30999999999999994, 0.77000000000000002, 1,
      0.77000000000000024, 0.31000000000000033, 0.080000000000000071 })
    close(signal.get_window("hann", 8), { 0, 0.14644660940672627, 0.5, 0.85355339059327373, 1, 0.85355339059327373, 0.5,
      0.14644660940672627 })
    close(signal.get_window("blackman", 9, { fftbins = false }), { -1.3877787807814457e-17, 0.06644660940672624,
      0.34000000000000002, 0.77355339059327377, 0.99999999999999989, 0.77355339059327377, 0.34000000000000002,
      0.06644660940672624, -1.3877787807814457e-17 })
    close(signal.get_window({ "kaiser", 8.6 }, 9, false), { 0.0013325139979024198, 0.06747207920440855,
      0.34039362244018856, 0.7738293810170912, 1, 0.7738293810170912, 0.34039362244018856, 0.06747207920440855,
      0.0013325139979024198 })
    -- a number is a Kaiser window's beta
    close(signal.get_window(5.0, 6), { 0.036710892271286676, 0.32820195737232122, 0.77532210444540672, 1,
      0.77532210444540672, 0.32820195737232122 })
    close(signal.get_window("triang", 6, false), { 0.16666666666666666, 0.5, 0.83333333333333337, 0.83333333333333337,
      0.5, 0.16666666666666666 })
    close(signal.get_window("tukey", 7, false), { 0, 0.75, 1, 1, 1, 0.74999999999999989, 0 })
    -- the suffixes decide over fftbins; one sample is a one
    close(signal.get_window("hann_periodic", 8, false), signal.get_window("hann", 8):totable())
    close(signal.get_window("boxcar", 1), { 1 })
  end)

  it("get_window: SciPy's errors", function()
    support.assert_error_has(function() signal.get_window("hann", 0) end, "Parameter Nx=0 is not a positive integer")
    support.assert_error_has(function() signal.get_window("hann", 2.5) end, "Parameter Nx=2.5 is not a positive integer")
    support.assert_error_has(function() signal.get_window("foo", 5) end,
      "Invalid window name 'foo' in parameter window='foo'!")
    support.assert_error_has(function() signal.get_window({ "kaiser" }, 5) end,
      "'kaiser' must have parameters, but window=('kaiser',)!")
    support.assert_error_has(function() signal.get_window({ "hann", 2 }, 5) end,
      "'hann' does not allow parameters, but window=('hann', 2)!")
    support.assert_error_has(function() signal.get_window({ 3, 2 }, 5) end, "First tuple entry of parameter window=")
    support.assert_error_has(function() signal.get_window(true, 5) end, "must be a tuple, a string or a float!")
    support.assert_error_has(function() signal.get_window("hann", 5, "yes") end, "Parameter fftbins='yes' is not of type bool!")
    support.assert_error_has(function() signal.get_window("dpss", 5) end, "not in this version of wick")
    support.assert_error_has(function() return signal.remez end, "wick.scipy.signal has no 'remez'")
  end)
end)

describe("wick.scipy.signal Kaiser design", function()
  it("kaiser_beta, kaiser_atten, kaiserord", function()
    assert.are.equal(0, signal.kaiser_beta(10))
    assert.are.equal(2.1166248611409806, signal.kaiser_beta(30))
    assert.are.equal(6.2042599999999997, signal.kaiser_beta(65))
    assert.are.equal(64.480996305939826, signal.kaiser_atten(211, 0.0375))
    local n, beta = signal.kaiserord(65, 24 / 500)
    assert.are.equal(167, n)
    assert.are.equal(6.20426, beta)
    n, beta = signal.kaiserord(120, 0.001)
    assert.are.equal(15611, n)
    assert.are.equal(12.26526, beta)
    n, beta = signal.kaiserord(-40, 0.05) -- |ripple|
    assert.are.equal(91, n)
    assert.are.equal(3.3953210522614574, beta)
  end)

  it("kaiserord's errors", function()
    support.assert_error_has(function() signal.kaiserord(5, 0.1) end,
      "Requested maximum ripple attenuation 5.000000 is too small for the Kaiser formula.")
    support.assert_error_has(function() signal.kaiserord(0 / 0, 0.1) end, "kaiserord: expected a number for argument 'ripple'")
    support.assert_error_has(function() signal.kaiserord(60, 0) end, "cannot convert float infinity to integer")
  end)
end)

describe("wick.scipy.signal.firwin", function()
  it("a lowpass (hamming), and a multiband filter", function()
    close(signal.firwin(11, 0.3), { -0.0052155375788057561, -0.0080401616967706244, 0.013358630903322724,
      0.10573868864477395, 0.2405481183953142, 0.30722052266433086, 0.2405481183953142, 0.10573868864477395,
      0.013358630903322724, -0.0080401616967706244, -0.0052155375788057561 })
    close(signal.firwin(31, { 0.1, 0.3, 0.6 }, { pass_zero = false }), { 0.0034669558035672881, 0.0012288647706920578,
      0.0032573478865772403, 0.001020724956392455, -0.0099557341767591446, -2.4678691154314566e-18,
      0.020848899940588687, -0.0044870896725983144, -0.029703211133870068, -0.021720284553461765, -0.10010834882800514,
      -0.17152785201414542, 0.0086753121832744157, 0.14841288032193498, -0.1451318997650892, 0.6126616621579194,
      -0.1451318997650892, 0.14841288032193498, 0.0086753121832744157, -0.17152785201414542, -0.10010834882800516,
      -0.021720284553461765, -0.029703211133870078, -0.0044870896725983161, 0.020848899940588687,
      -2.4678691154314601e-18, -0.0099557341767591515, 0.001020724956392455, 0.003257347886577242,
      0.0012288647706920578, 0.0034669558035672881 })
  end)

  it("width (a Kaiser window) with fs, a nuttall bandpass, no scaling", function()
    local h = signal.firwin(301, 3000.0, { fs = 44100.0, width = 500.0 })
    assert.are.equal(301, h:numel())
    close(wick.stack({ h[1], h[50], h[151] }), { 5.713341409625165e-05, -0.00067622204914152427, 0.13606557101693101 })
    h = signal.firwin(513, wick.tensor({ 0.1, 0.7 }, { dtype = "float64" }), { pass_zero = "bandpass", window = "nuttall" })
    close(wick.stack({ h[1], h[200], h[257] }), { 1.6387324637745614e-07, 0.0021105589249775236, 0.59999940851819111 })
    h = signal.firwin(64, 0.5, { window = "boxcar", scale = false })
    close(wick.stack({ h[1], h[32] }), { -0.0071453675885484553, 0.45015815807855303 })
  end)

  it("SciPy's errors", function()
    support.assert_error_has(function() signal.firwin(5, 1.0) end,
      "Invalid cutoff frequency: frequencies must be greater than 0 and less than fs/2.")
    support.assert_error_has(function() signal.firwin(5, 0) end, "Invalid cutoff frequency")
    support.assert_error_has(function() signal.firwin(5, 20, { fs = 40 }) end, "Invalid cutoff frequency")
    support.assert_error_has(function() signal.firwin(5, { 0.5, 0.3 }) end,
      "Invalid cutoff frequencies: the frequencies must be strictly increasing.")
    support.assert_error_has(function() signal.firwin(4, 0.5, { pass_zero = false }) end,
      "A filter with an even number of coefficients must have zero response at the Nyquist frequency.")
    support.assert_error_has(function() signal.firwin(5, {}) end, "At least one cutoff frequency must be given.")
    support.assert_error_has(function() signal.firwin(5, 0.5, { pass_zero = "lowpass2" }) end,
      "Parameter pass_zero='lowpass2' not in (True, False, 'bandpass', 'lowpass', 'highpass', 'bandstop')")
    support.assert_error_has(function() signal.firwin(5, { 0.2, 0.5 }, { pass_zero = "lowpass" }) end,
      'cutoff must have one element if pass_zero=="lowpass", got (2,)')
    support.assert_error_has(function() signal.firwin(5, 0.2, { pass_zero = "bandstop" }) end,
      'cutoff must have at least two elements if pass_zero=="bandstop", got (1,)')
    support.assert_error_has(function() signal.firwin(0, 0.5) end, "Parameter Nx=0 is not a positive integer")
    support.assert_error_has(function() signal.firwin(5, wick.zeros(2, 2):add(0.5)) end,
      "The cutoff argument must be at most one-dimensional.")
    support.assert_error_has(function() signal.firwin(5, 0.5, { fs = "x" }) end, "Sampling frequency fs must be a single scalar.")
    support.assert_error_has(function() signal.firwin(5, "x") end, "firwin: expected a number, a table of numbers or a tensor")
    support.assert_error_has(function() signal.firwin(5, 0.5, { nyq = 3 }) end, "unknown option 'nyq'")
  end)
end)

describe("wick.scipy.signal.lfilter", function()
  local x = { 0.1257302210933933, -0.13210486329130189, 0.64042265044328206, 0.10490011715303971,
    -0.53566937316111096, 0.36159505490948474, 1.3040000451301372, 0.94708096312924217, -0.7037352358069926,
    -1.2654214710460525, -0.62327446253735219, 0.041325979347243601 }

  it("an IIR filter (butter(4, 0.2)'s coefficients), with and without zi", function()
    local b = { 0.0048243433577162282, 0.019297373430864913, 0.028946060146297369, 0.019297373430864913,
      0.0048243433577162282 }
    local a = { 1, -2.3695130071820381, 2.3139884144158809, -1.0546654058785681, 0.18737949236818502 }
    close(signal.lfilter(b, a, wick.tensor(x, { dtype = "float64" })), { 0.00060656575699610479, 0.0032262092591565064,
      0.010420695092000172, 0.029333182568632578, 0.064715948427609915, 0.10201950580694961, 0.12384583581033747,
      0.1505082335526689, 0.22254374995161888, 0.3251829846817243, 0.36786186603137866, 0.26822250201806414 })
    local y, zf = signal.lfilter({ 0.3, 0.2, 0.1, 0.05 }, { 1.0, -0.7, 0.2 }, x, { zi = { 0.1, 0.2, 0.3 } })
    close(y, { 0.137719066328018, 0.28191793166090068, 0.64807758348109035, 0.54990131206469084, 0.17303163511110323,
      0.054997668242925346, 0.4190891338103061, 0.83666319481632223, 0.62862178875160291, -0.087762776742925652,
      -0.65024440986502186, -0.7116045391551824 })
    close(zf, { -0.48540761937221244, 0.11528978263889324, 0.0020662989673621802 })
  end)

  it("an FIR filter (a of one entry), and SciPy's errors", function()
    close(signal.lfilter({ 1, 2, 3 }, { 2.0 }, x), { 0.062865110546696648, 0.059677789447742352, 0.3767017935704291,
      0.49471541408284908, 0.79769940623740743, -0.19752166997680903, 0.21009101773288685, 2.3199331090589852,
      2.5512134129209518, 0.084175473363844344, -2.6326615560252171, -2.5007436794328091 })
    assert.are.equal(0, signal.lfilter({ 1, 2 }, { 1, 0.5 }, {}):numel())
    support.assert_error_has(function() signal.lfilter({}, { 1 }, x) end,
      "Parameter b is not a non-empty 1d array, since b.shape=(0,)!")
    support.assert_error_has(function() signal.lfilter({ 1, 2 }, { 0, 1 }, x) end,
      "BUG: filter coefficient a[0] == 0 not supported yet")
    support.assert_error_has(function() signal.lfilter({ 1, 2 }, { 1, 0.5 }, x, { 1, 2 }) end,
      "Unexpected shape for zi: expected (1,), found (2,).")
    support.assert_error_has(function() signal.lfilter({ 1 }, { 1 }, wick.zeros(2, 2)) end, "x must be 1-D here")
  end)
end)

describe("wick.scipy.optimize.fmin", function()
  local function rosen(x)
    local a, b = x[1]:item(), x[2]:item()
    return 100 * (b - a ^ 2) ^ 2 + (1 - a) ^ 2
  end

  it("Rosenbrock from (-1.2, 1): SciPy's iterates, result and counts", function()
    local xmin, fopt, iter, funcalls, warnflag = optimize.fmin(rosen, { -1.2, 1 }, { full_output = true, disp = false })
    close(xmin, { 1.0000220217835696, 1.0000422197517715 })
    assert.are.equal(8.177661197416674e-10, fopt)
    assert.are.same({ 85, 159, 0 }, { iter, funcalls, warnflag })
    -- maxiter stops it where SciPy's stops
    close(optimize.fmin(rosen, wick.tensor({ -1.2, 1 }, { dtype = "float64" }), { maxiter = 30, disp = 0 }),
      { 0.095874867439278103, -0.016508173942577191 })
  end)

  it("a 1-D quadratic from a number (RAVE's PQMF call), a 0-dim tensor returned; 3-D", function()
    local seen
    local x = optimize.fmin(function(w)
      seen = w
      return (w[1] - 0.3) ^ 2 + 2.0
    end, 1 / 16, { disp = 0 })
    assert.are.equal("float64", seen.dtype)
    assert.are.same({ 1 }, seen.shape:totable())
    close(x, { 0.30000000000000049 })
    close(optimize.fmin(function(v)
      local a, b, c = v[1]:item(), v[2]:item(), v[3]:item()
      return (a - 1) ^ 2 + 3 * (b + 2) ^ 2 + 0.5 * (c - 0.25) ^ 2 + a * b * 0.1
    end, { 0, 0, 0 }, { disp = false }), { 1.1127229207598131, -2.0154627609449705, 0.28473795858434825 })
  end)

  it("errors", function()
    support.assert_error_has(function() optimize.fmin(function() return "x" end, { 1 }, { disp = false }) end,
      "The user-provided objective function must return a scalar value.")
    support.assert_error_has(function() optimize.fmin(function(w) return w end, { 1, 2 }, { disp = false }) end,
      "must return a scalar value")
    support.assert_error_has(function() optimize.fmin(nil, { 1 }) end, "fmin: expected a function for argument 'func'")
    support.assert_error_has(function() optimize.fmin(rosen, { 1, 2 }, { xtl = 1 }) end, "unknown option 'xtl'")
    support.assert_error_has(function() optimize.fmin(rosen, "a") end, "expected a number, a table of numbers or a tensor")
  end)
end)
