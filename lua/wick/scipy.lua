-- wick.scipy: the few SciPy calls that PyTorch programs make beside torch, so those lines port
-- as they are. Now scipy.optimize.linear_sum_assignment, the Hungarian matching of every DETR
-- family's loss (`from scipy.optimize import linear_sum_assignment`), scipy.optimize.fmin (Nelder-Mead:
-- RAVE's PQMF prototype), and scipy.signal's windows, Kaiser FIR design (firwin) and lfilter.
local wick = require("wick")
local check = require("wick.argcheck")

local optimize = {}

-- A shortest augmenting path from free row `i` over the columns (Crouse, "On implementing 2D
-- rectangular assignment algorithms", 2016: SciPy's algorithm, so ties resolve as SciPy's do).
-- Returns the sink column (nil: no path, the matrix is infeasible) and the path's length.
local function augmenting_path(nc, cost, u, v, path, row4col, spc, i, SR, SC)
  local remaining, num_remaining = {}, nc
  for it = 1, nc do remaining[it] = nc - it + 1 end
  for r in pairs(SR) do SR[r] = nil end
  for c = 1, nc do SC[c], spc[c] = false, math.huge end
  local min_val, sink = 0, nil
  while not sink do
    local index, lowest = nil, math.huge
    SR[i] = true
    local row = cost[i]
    for it = 1, num_remaining do
      local j = remaining[it]
      local r = min_val + row[j] - u[i] - v[j]
      if r < spc[j] then path[j], spc[j] = i, r end
      -- among equal lowest costs, one that gives a new sink (integer costs with small coefficients)
      if spc[j] < lowest or (spc[j] == lowest and row4col[j] == nil) then lowest, index = spc[j], it end
    end
    min_val = lowest
    if min_val == math.huge then return nil end
    local j = remaining[index]
    if row4col[j] == nil then sink = j else i = row4col[j] end
    SC[j] = true
    remaining[index] = remaining[num_remaining]
    num_remaining = num_remaining - 1
  end
  return sink, min_val
end

-- the rows of a cost matrix (a 2-D tensor or a nested table) as Lua arrays, transposed when it
-- has more rows than columns
local function rows_of(fn, cost_matrix, maximize)
  local m = cost_matrix
  if not wick.is_tensor(m) then
    if type(m) ~= "table" then check.expected(fn, "cost_matrix", "a 2-D tensor or a table of rows", m) end
    m = wick.tensor(m, { dtype = "float64" })
  end
  if m:dim() ~= 2 then check.fail(fn, "expected a matrix (2-D array), got a %d-D array", m:dim()) end
  if m.dtype == "bool" or m:is_complex() then check.fail(fn, "expected a real-valued cost matrix, got %s", m.dtype) end
  local nr, nc = m:size(1), m:size(2)
  local transpose = nc < nr
  local t = (transpose and m:t() or m):to({ dtype = "float64", device = "cpu" }):contiguous()
  local rows = t:totable()
  if maximize then
    for _, row in ipairs(rows) do for j = 1, #row do row[j] = -row[j] end end
  end
  for _, row in ipairs(rows) do
    for j = 1, #row do
      local c = row[j]
      if c ~= c or c == -math.huge then check.fail(fn, "matrix contains invalid numeric entries") end
    end
  end
  return rows, transpose, nr, nc
end

--- wick.scipy.optimize.linear_sum_assignment(cost_matrix[, maximize = false]) (or {maximize =}):
--- SciPy's: the rows and columns of an assignment of least total cost (greatest with maximize),
--- as two int64 tensors of 1-based indices, the rows ascending; min(rows, columns) pairs. An
--- infinite cost is a forbidden pair ("cost matrix is infeasible" when no assignment avoids
--- them); NaN and -inf are SciPy's "invalid numeric entries".
function optimize.linear_sum_assignment(cost_matrix, maximize)
  local fn = "linear_sum_assignment"
  if type(maximize) == "table" and getmetatable(maximize) == nil then
    maximize = check.options(maximize, fn, { maximize = "boolean" }).maximize
  end
  if maximize ~= nil and type(maximize) ~= "boolean" then check.expected(fn, "maximize", "a boolean", maximize) end
  local cost, transpose = rows_of(fn, cost_matrix, maximize)
  local nr, nc = #cost, cost[1] and #cost[1] or 0
  local rows, cols = {}, {}
  if nr > 0 and nc > 0 then
    local u, v, spc, path, col4row, row4col, SR, SC = {}, {}, {}, {}, {}, {}, {}, {}
    for i = 1, nr do u[i] = 0 end
    for j = 1, nc do v[j] = 0 end
    for cur = 1, nr do
      local sink, min_val = augmenting_path(nc, cost, u, v, path, row4col, spc, cur, SR, SC)
      if not sink then check.fail(fn, "cost matrix is infeasible") end
      -- the dual variables
      u[cur] = u[cur] + min_val
      for i in pairs(SR) do
        if i ~= cur then u[i] = u[i] + min_val - spc[col4row[i]] end
      end
      for j = 1, nc do
        if SC[j] then v[j] = v[j] - (min_val - spc[j]) end
      end
      -- the assignment along the path
      local j = sink
      while true do
        local i = path[j]
        row4col[j] = i
        col4row[i], j = j, col4row[i]
        if i == cur then break end
      end
    end
    if transpose then -- the original rows (the columns here) in ascending order
      local order = {}
      for i = 1, nr do order[i] = i end
      table.sort(order, function(a, b) return col4row[a] < col4row[b] end)
      for k, i in ipairs(order) do rows[k], cols[k] = col4row[i], i end
    else
      for i = 1, nr do rows[i], cols[i] = i, col4row[i] end
    end
  end
  return wick.tensor(rows, { dtype = "int64" }), wick.tensor(cols, { dtype = "int64" })
end

-- Python's repr of a value in a message (SciPy's f"{x=}"): 'text', True, 2, 2.5, ('kaiser', 8)
local function pyrepr(v)
  if v == nil then return "None" end
  if type(v) == "string" then return "'" .. v .. "'" end
  if type(v) == "boolean" then return v and "True" or "False" end
  if type(v) == "number" then
    if v ~= v then return "nan" elseif v == math.huge then return "inf" elseif v == -math.huge then return "-inf" end
    if v == math.floor(v) and math.abs(v) < 1e16 then return ("%d"):format(v) end
    return check.shortest(v)
  end
  if type(v) == "table" and getmetatable(v) == nil then
    local parts = {}
    for i = 1, #v do parts[i] = pyrepr(v[i]) end
    return "(" .. table.concat(parts, ", ") .. (#v == 1 and ",)" or ")")
  end
  return check.describe(v)
end

-- a number, a table of numbers or a tensor as a Lua array of float64 numbers (any dims flattened)
-- and its number of dims (0: a number)
local function floats_of(fn, arg, v)
  if type(v) == "number" then return { v }, 0 end
  if wick.is_tensor(v) then
    if v.dtype == "bool" or v:is_complex() then check.fail(fn, "expected a real tensor for argument '%s', got %s", arg, v.dtype) end
    return v:to({ dtype = "float64", device = "cpu" }):contiguous():reshape(-1):totable(), v:dim()
  end
  if type(v) == "table" and getmetatable(v) == nil then
    local out = {}
    for i = 1, #v do
      if type(v[i]) ~= "number" then check.expected(fn, arg, "a number, a table of numbers or a tensor", v) end
      out[i] = v[i]
    end
    return out, 1
  end
  check.expected(fn, arg, "a number, a table of numbers or a tensor", v)
end

local function f64(list) return wick.tensor(list, { dtype = "float64" }) end

-- NumPy's sum of a Lua array (np.sum's pairwise order over 8 accumulators, blocks of 128), from
-- its first entry i (1-based) for n entries
local function pairwise_sum(a, i, n)
  if n < 8 then
    local res = 0
    for k = i, i + n - 1 do res = res + a[k] end
    return res
  elseif n <= 128 then
    local r = {}
    for j = 0, 7 do r[j] = a[i + j] end
    local k = 8
    while k < n - n % 8 do
      for j = 0, 7 do r[j] = r[j] + a[i + k + j] end
      k = k + 8
    end
    local res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
    while k < n do res, k = res + a[i + k], k + 1 end
    return res
  end
  local n2 = math.floor(n / 2)
  n2 = n2 - n2 % 8
  return pairwise_sum(a, i, n2) + pairwise_sum(a, i + n2, n - n2)
end

-- ---- scipy.signal: windows and FIR design ----

local signal = {}

-- SciPy's windows (scipy.signal.windows), each a Lua array from M and its parameters, symmetric;
-- get_window makes the periodic ones (DFT-even) as the first M of M + 1.
local function general_cosine(M, a)
  local fac = {}
  local step = (math.pi - -math.pi) / (M - 1) -- np.linspace(-pi, pi, M)
  for n = 1, M do fac[n] = (n - 1) * step + -math.pi end
  fac[M] = math.pi
  local w = {}
  for n = 1, M do w[n] = 0 end
  for k = 1, #a do
    for n = 1, M do w[n] = w[n] + a[k] * math.cos((k - 1) * fac[n]) end
  end
  return w
end

local WINDOWS = {} -- name -> { make(M, ...), takes parameters: true, false or "optional" }
WINDOWS.boxcar = { function(M)
  local w = {}
  for n = 1, M do w[n] = 1 end
  return w
end, false }
WINDOWS.triang = { function(M)
  local w, half = {}, math.floor((M + 1) / 2)
  for n = 1, half do
    w[n] = M % 2 == 0 and (2 * n - 1.0) / M or 2 * n / (M + 1.0)
    w[M + 1 - n] = w[n]
  end
  return w
end, false }
WINDOWS.bartlett = { function(M)
  local w = {}
  for n = 0, M - 1 do
    w[n + 1] = n <= (M - 1) / 2.0 and 2.0 * n / (M - 1) or 2.0 - 2.0 * n / (M - 1)
  end
  return w
end, false }
WINDOWS.hann = { function(M) return general_cosine(M, { 0.5, 1 - 0.5 }) end, false }
WINDOWS.hamming = { function(M) return general_cosine(M, { 0.54, 1 - 0.54 }) end, false }
WINDOWS.general_hamming = { function(M, alpha) return general_cosine(M, { alpha, 1 - alpha }) end, true }
WINDOWS.blackman = { function(M) return general_cosine(M, { 0.42, 0.50, 0.08 }) end, false }
WINDOWS.nuttall = { function(M) return general_cosine(M, { 0.3635819, 0.4891775, 0.1365995, 0.0106411 }) end, false }
WINDOWS.blackmanharris = { function(M) return general_cosine(M, { 0.35875, 0.48829, 0.14128, 0.01168 }) end, false }
WINDOWS.flattop = { function(M)
  return general_cosine(M, { 0.21557895, 0.41663158, 0.277263158, 0.083578947, 0.006947368 })
end, false }
WINDOWS.general_cosine = { function(M, a)
  if type(a) ~= "table" or getmetatable(a) ~= nil then check.expected("get_window", "a", "a table of coefficients", a) end
  return general_cosine(M, a)
end, true }
-- Cephes' I0 (SciPy's special.i0): Chebyshev series for exp(-x) I0(x) on [0, 8] and for
-- exp(-x) sqrt(x) I0(x) in 8 / x beyond
local I0_A = { -4.41534164647933937950E-18, 3.33079451882223809783E-17, -2.43127984654795469359E-16,
  1.71539128555513303061E-15, -1.16853328779934516808E-14, 7.67618549860493561688E-14, -4.85644678311192946090E-13,
  2.95505266312963983461E-12, -1.72682629144155570723E-11, 9.67580903537323691224E-11, -5.18979560163526290666E-10,
  2.65982372468238665035E-9, -1.30002500998624804212E-8, 6.04699502254191894932E-8, -2.67079385394061173391E-7,
  1.11738753912010371815E-6, -4.41673835845875056359E-6, 1.64484480707288970893E-5, -5.75419501008210370398E-5,
  1.88502885095841655729E-4, -5.76375574538582365885E-4, 1.63947561694133579842E-3, -4.32430999505057594430E-3,
  1.05464603945949983183E-2, -2.37374148058994688156E-2, 4.93052842396707084878E-2, -9.49010970480476444210E-2,
  1.71620901522208775349E-1, -3.04682672343198398683E-1, 6.76795274409476084995E-1 }
local I0_B = { -7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17,
  3.46122286769746109310E-17, -2.82762398051658348494E-16, -3.42548561967721913462E-16, 1.77256013305652638360E-15,
  3.81168066935262242075E-15, -9.55484669882830764870E-15, -4.15056934728722208663E-14, 1.54008621752140982691E-14,
  3.85277838274214270114E-13, 7.18012445138366623367E-13, -1.79417853150680611778E-12, -1.32158118404477131188E-11,
  -3.14991652796324136454E-11, 1.18891471078464383424E-11, 4.94060238822496958910E-10, 3.39623202570838634515E-9,
  2.26666899049817806459E-8, 2.04891858946906374183E-7, 2.89137052083475648297E-6, 6.88975834691682398426E-5,
  3.36911647825569408990E-3, 8.04490411014108831608E-1 }
local function chbevl(x, coef)
  local b0, b1, b2 = coef[1], 0, 0
  for i = 2, #coef do b2, b1 = b1, b0; b0 = x * b1 - b2 + coef[i] end
  return 0.5 * (b0 - b2)
end
local function i0(x)
  x = math.abs(x)
  if x <= 8.0 then return math.exp(x) * chbevl(x / 2.0 - 2.0, I0_A) end
  return math.exp(x) * chbevl(32.0 / x - 2.0, I0_B) / math.sqrt(x)
end
WINDOWS.kaiser = { function(M, beta)
  local alpha, w, den = (M - 1) / 2.0, {}, i0(beta)
  for n = 0, M - 1 do
    local r = (n - alpha) / alpha
    w[n + 1] = i0(beta * math.sqrt(1 - r * r)) / den
  end
  return w
end, true }
WINDOWS.cosine = { function(M)
  local w = {}
  for n = 0, M - 1 do w[n + 1] = math.sin(math.pi / M * (n + .5)) end
  return w
end, false }
WINDOWS.gaussian = { function(M, std)
  local w, sig2 = {}, 2 * std * std
  for n = 0, M - 1 do
    local x = n - (M - 1.0) / 2.0
    w[n + 1] = math.exp(-(x * x) / sig2)
  end
  return w
end, true }
WINDOWS.tukey = { function(M, alpha)
  alpha = alpha == nil and 0.5 or alpha
  if alpha <= 0 then return WINDOWS.boxcar[1](M) end
  if alpha >= 1.0 then return WINDOWS.hann[1](M) end
  local w = {}
  local width = math.floor(alpha * (M - 1) / 2.0)
  for n = 0, M - 1 do
    if n <= width then
      w[n + 1] = 0.5 * (1 + math.cos(math.pi * (-1 + 2.0 * n / alpha / (M - 1))))
    elseif n < M - width - 1 then
      w[n + 1] = 1.0
    else
      w[n + 1] = 0.5 * (1 + math.cos(math.pi * (-2.0 / alpha + 1 + 2.0 * n / alpha / (M - 1))))
    end
  end
  return w
end, "optional" }
WINDOWS.barthann = { function(M)
  local w = {}
  for n = 0, M - 1 do
    local fac = math.abs(n / (M - 1.0) - 0.5)
    w[n + 1] = 0.62 - 0.48 * fac + 0.38 * math.cos(2 * math.pi * fac)
  end
  return w
end, false }
WINDOWS.bohman = { function(M)
  local w = { 0 }
  local step = (1 - -1) / (M - 1) -- np.linspace(-1, 1, M)[1:-1]
  for n = 1, M - 2 do
    local fac = math.abs(n * step + -1)
    w[n + 1] = (1 - fac) * math.cos(math.pi * fac) + 1.0 / math.pi * math.sin(math.pi * fac)
  end
  w[M] = 0
  return w
end, false }
local ALIASES = {
  bartlett = { "bart", "brt" }, blackman = { "black", "blk" }, blackmanharris = { "blackharr", "bkh" },
  bohman = { "bman", "bmn" }, boxcar = { "box", "ones", "rect", "rectangular" }, cosine = { "halfcosine" },
  flattop = { "flat", "flt" }, gaussian = { "gauss", "gss" }, general_cosine = { "general cosine" },
  general_hamming = { "general hamming" }, hamming = { "hamm", "ham" }, hann = { "han" }, kaiser = { "ksr" },
  nuttall = { "nutl", "nut" }, triang = { "triangle", "tri" }, tukey = { "tuk" }, barthann = { "brthan", "bth" },
}
for name, names in pairs(ALIASES) do
  for _, alias in ipairs(names) do WINDOWS[alias] = WINDOWS[name] end
end
-- SciPy's windows that wick lacks (an error that says so, not SciPy's "Invalid window name")
local ABSENT = { chebwin = true, cheb = true, dpss = true, exponential = true, poisson = true, ["general gaussian"] = true,
  general_gaussian = true, ["general gauss"] = true, general_gauss = true, ggs = true, ["kaiser bessel derived"] = true,
  kaiser_bessel_derived = true, kbd = true, lanczos = true, sinc = true, parzen = true, parz = true, par = true,
  taylor = true, taylorwin = true }

local function window_of(fn, window, Nx, fftbins)
  if not (type(Nx) == "number" and Nx > 0 and Nx == math.floor(Nx) and Nx <= 2 ^ 31) then
    check.fail(fn, "Parameter Nx=%s is not a positive integer", pyrepr(Nx))
  end
  if type(fftbins) ~= "boolean" then check.fail(fn, "Parameter fftbins=%s is not of type bool!", pyrepr(fftbins)) end
  local is_tuple = type(window) == "table" and getmetatable(window) == nil
  if type(window) ~= "string" and not is_tuple then
    -- a number is a Kaiser window's beta (a 0-dim tensor too, as Python's float(window))
    if wick.is_tensor(window) and window:numel() == 1 and not window:is_complex() then window = window:item() end
    if type(window) ~= "number" then
      check.fail(fn, "Parameter window=%s must be a tuple, a string or a float!", pyrepr(window))
    end
    window = { "kaiser", window }
    is_tuple = true
  end
  if is_tuple and type(window[1]) ~= "string" then
    check.fail(fn, "First tuple entry of parameter window=%s is not a str!", pyrepr(window))
  end
  local sym = not fftbins
  local name = is_tuple and window[1] or window
  if name:sub(-10) == "_symmetric" then sym, name = true, name:sub(1, -11)
  elseif name:sub(-9) == "_periodic" then sym, name = false, name:sub(1, -10) end
  local entry = WINDOWS[name]
  if not entry then
    if ABSENT[name] then check.fail(fn, "the window '%s' is not in this version of wick (see docs/api.md)", name) end
    check.fail(fn, "Invalid window name '%s' in parameter window=%s!", name, pyrepr(window))
  end
  local make, has_args = entry[1], entry[2]
  local args = {}
  if is_tuple then for i = 2, #window do args[i - 1] = window[i] end end
  if #args > 0 and has_args == false then
    check.fail(fn, "'%s' does not allow parameters, but window=%s!", name, pyrepr(window))
  end
  if #args == 0 and has_args == true then
    check.fail(fn, "'%s' must have parameters, but window=%s!", name, pyrepr(window))
  end
  if #args > 1 then check.fail(fn, "the window '%s' takes one parameter, got window=%s", name, pyrepr(window)) end
  if #args == 1 and name ~= "general_cosine" and name ~= "general cosine" then
    if type(args[1]) ~= "number" then check.fail(fn, "expected a number as the window's parameter, got window=%s", pyrepr(window)) end
  end
  if Nx <= 1 then return { 1 } end
  local M = sym and Nx or Nx + 1
  local w = make(M, args[1])
  w[M + 1] = nil
  if not sym then w[M] = nil end
  return w
end

--- wick.scipy.signal.get_window(window, Nx[, fftbins = true]) (or {fftbins =}): SciPy's window of
--- Nx samples as a float64 tensor, periodic (for spectra) unless fftbins is false (symmetric, for
--- filters); window a name ("hann", "hamming", "blackman", "boxcar", "kaiser", ...; a "_periodic"
--- or "_symmetric" suffix decides), a table {name, parameter} (SciPy's tuple: {"kaiser", 8.6}) or
--- a number (a Kaiser window's beta).
function signal.get_window(window, Nx, fftbins)
  local fn = "get_window"
  if type(fftbins) == "table" and getmetatable(fftbins) == nil then
    fftbins = check.options(fftbins, fn, { fftbins = "boolean" }).fftbins
  end
  if fftbins == nil then fftbins = true end
  return f64(window_of(fn, window, Nx, fftbins))
end

--- wick.scipy.signal.kaiser_beta(a): the Kaiser window's beta for an attenuation of a dB.
function signal.kaiser_beta(a)
  check.number(a, "kaiser_beta", "a")
  if a > 50 then return 0.1102 * (a - 8.7)
  elseif a > 21 then return 0.5842 * (a - 21) ^ 0.4 + 0.07886 * (a - 21) end
  return 0.0
end

--- wick.scipy.signal.kaiser_atten(numtaps, width): Kaiser's attenuation (dB) of a numtaps filter
--- with a transition of width (a fraction of the Nyquist frequency).
function signal.kaiser_atten(numtaps, width)
  check.number(numtaps, "kaiser_atten", "numtaps")
  check.number(width, "kaiser_atten", "width")
  return 2.285 * (numtaps - 1) * math.pi * width + 7.95
end

--- wick.scipy.signal.kaiserord(ripple, width): numtaps, beta of the Kaiser window method for a
--- ripple (dB) and a transition width (a fraction of the Nyquist frequency).
function signal.kaiserord(ripple, width)
  local fn = "kaiserord"
  check.number(ripple, fn, "ripple")
  check.number(width, fn, "width")
  local A = math.abs(ripple)
  if A < 8 then
    check.fail(fn, "Requested maximum ripple attenuation %f is too small for the Kaiser formula.", A)
  end
  local beta = signal.kaiser_beta(A)
  local numtaps = (A - 7.95) / 2.285 / (math.pi * width) + 1
  if numtaps ~= numtaps or math.abs(numtaps) == math.huge then
    check.fail(fn, "cannot convert float %s to integer", numtaps ~= numtaps and "NaN" or "infinity")
  end
  return math.ceil(numtaps), beta
end

-- np.sinc
local function sinc(x)
  x = math.pi * x
  local y = x ~= 0 and x or 2.220446049250313e-16
  return math.sin(y) / y
end

local PASS_ZERO = { [true] = true, [false] = false, bandstop = true, lowpass = true, bandpass = false, highpass = false }
--- wick.scipy.signal.firwin(numtaps, cutoff[, {width, window = "hamming", pass_zero = true,
--- scale = true, fs = 2}]): SciPy's FIR filter by the window method, numtaps coefficients as a
--- float64 tensor; cutoff a frequency or a list of band edges (in (0, fs/2), increasing).
function signal.firwin(numtaps, cutoff, opts)
  local fn = "firwin"
  local o = check.options(opts, fn, { width = "number", window = "any", pass_zero = "any", scale = "boolean",
    fs = "any" })
  check.int(numtaps, fn, "numtaps")
  local fs = o.fs
  if fs ~= nil and type(fs) ~= "number" then check.fail(fn, "Sampling frequency fs must be a single scalar.") end
  fs = fs == nil and 2 or fs
  local nyq = 0.5 * fs
  local cut, ndim = floats_of(fn, "cutoff", cutoff)
  if ndim > 1 then check.fail(fn, "The cutoff argument must be at most one-dimensional.") end
  if #cut == 0 then check.fail(fn, "At least one cutoff frequency must be given.") end
  local lo, hi = math.huge, -math.huge
  for i = 1, #cut do
    cut[i] = cut[i] / nyq
    -- (np.min / np.max: a NaN is both)
    if cut[i] ~= cut[i] then lo, hi = cut[i], cut[i] end
    if cut[i] < lo then lo = cut[i] end
    if cut[i] > hi then hi = cut[i] end
  end
  if lo <= 0 or hi >= 1 then
    check.fail(fn, "Invalid cutoff frequency: frequencies must be greater than 0 and less than fs/2.")
  end
  for i = 2, #cut do
    if cut[i] - cut[i - 1] <= 0 then
      check.fail(fn, "Invalid cutoff frequencies: the frequencies must be strictly increasing.")
    end
  end
  local window = o.window == nil and "hamming" or o.window
  if o.width ~= nil then
    window = { "kaiser", signal.kaiser_beta(signal.kaiser_atten(numtaps, o.width / nyq)) }
  end
  local pass_zero = o.pass_zero
  if pass_zero == nil then pass_zero = true end
  if PASS_ZERO[pass_zero] == nil then
    check.fail(fn, "Parameter pass_zero=%s not in (True, False, 'bandpass', 'lowpass', 'highpass', 'bandstop')",
      pyrepr(pass_zero))
  end
  if pass_zero == "lowpass" or pass_zero == "highpass" then
    if #cut ~= 1 then check.fail(fn, 'cutoff must have one element if pass_zero=="%s", got (%d,)', pass_zero, #cut) end
  elseif type(pass_zero) == "string" and #cut <= 1 then
    check.fail(fn, 'cutoff must have at least two elements if pass_zero=="%s", got (%d,)', pass_zero, #cut)
  end
  pass_zero = PASS_ZERO[pass_zero]
  local pass_nyquist = (#cut % 2 == 0) == pass_zero
  if pass_nyquist and numtaps % 2 == 0 then
    check.fail(fn, "A filter with an even number of coefficients must have zero response at the Nyquist frequency.")
  end
  -- the band edges, a passband a pair
  local edges = {}
  if pass_zero then edges[1] = 0 end
  for i = 1, #cut do edges[#edges + 1] = cut[i] end
  if pass_nyquist then edges[#edges + 1] = 1 end
  local alpha = 0.5 * (numtaps - 1)
  local m, h = {}, {}
  for n = 1, numtaps do m[n], h[n] = (n - 1) - alpha, 0 end
  local left, right
  for j = 1, #edges, 2 do
    left, right = edges[j], edges[j + 1]
    for n = 1, numtaps do
      h[n] = h[n] + right * sinc(right * m[n])
      h[n] = h[n] - left * sinc(left * m[n])
    end
  end
  local win = window_of(fn, window, numtaps, false)
  for n = 1, numtaps do h[n] = h[n] * win[n] end
  if o.scale ~= false then
    -- unit gain at the first passband's DC, Nyquist or centre
    left, right = edges[1], edges[2]
    local f = left == 0 and 0.0 or right == 1 and 1.0 or 0.5 * (left + right)
    local hc = {}
    for n = 1, numtaps do hc[n] = h[n] * math.cos(math.pi * m[n] * f) end
    local s = pairwise_sum(hc, 1, numtaps)
    for n = 1, numtaps do h[n] = h[n] / s end
  end
  return f64(h)
end

--- wick.scipy.signal.lfilter(b, a, x[, zi]) (or {zi =}): SciPy's IIR/FIR filter of a 1-D x by
--- the direct form II transposed (b and a divided by a[1]), as a float64 tensor; with zi (the
--- max(#a, #b) - 1 initial delays) also the final delays zf.
function signal.lfilter(b, a, x, zi)
  local fn = "lfilter"
  if type(zi) == "table" and getmetatable(zi) == nil and zi.zi ~= nil and #zi == 0 then
    zi = check.options(zi, fn, { zi = "any" }).zi
  end
  local B, bdim = floats_of(fn, "b", b)
  local A, adim = floats_of(fn, "a", a)
  if bdim > 1 or #B == 0 then check.fail(fn, "Parameter b is not a non-empty 1d array, since b.shape=(%d,)!", #B) end
  if adim > 1 or #A == 0 then check.fail(fn, "Parameter a is not a non-empty 1d array, since a.shape=(%d,)!", #A) end
  local X, xdim = floats_of(fn, "x", x)
  if xdim > 1 then check.fail(fn, "x must be 1-D here (SciPy's axis over an N-D x is not in this version of wick)") end
  local Z
  if zi ~= nil then
    local zdim
    Z, zdim = floats_of(fn, "zi", zi)
    local want = (#A == 1 and #B or math.max(#A, #B)) - 1
    if zdim > 1 or #Z ~= want then
      check.fail(fn, "Unexpected shape for zi: expected (%d,), found (%d,).", want, #Z)
    end
  end
  local y = {}
  if #A == 1 then
    -- SciPy's path for an FIR filter: np.convolve(b / a[0], x), its first #x entries
    local a0, L, n = A[1], #B, #X
    for k = 1, L do B[k] = B[k] / a0 end
    local full = {}
    for j = 1, n + L - 1 do
      local acc = 0
      for i = math.max(1, j - L + 1), math.min(j, n) do acc = acc + X[i] * B[j - i + 1] end
      full[j] = acc
    end
    if Z then for k = 1, #Z do full[k] = full[k] + Z[k] end end
    for j = 1, n do y[j] = full[j] end
    if Z then
      local zf = {}
      for k = 1, L - 1 do zf[k] = full[n + k] or 0 end
      return f64(y), f64(zf)
    end
    return f64(y)
  end
  if A[1] == 0 then check.fail(fn, "BUG: filter coefficient a[0] == 0 not supported yet") end
  local K = math.max(#A, #B)
  local a0 = A[1]
  for k = 1, K do
    B[k] = (B[k] or 0) / a0
    A[k] = (A[k] or 0) / a0
  end
  if not Z then
    Z = {}
    for k = 1, K - 1 do Z[k] = 0 end
  end
  for t = 1, #X do
    local xn = X[t]
    local yn = Z[1] + B[1] * xn
    for k = 1, K - 2 do Z[k] = Z[k + 1] + xn * B[k + 1] - yn * A[k + 1] end
    Z[K - 1] = xn * B[K] - yn * A[K]
    y[t] = yn
  end
  if zi ~= nil then return f64(y), f64(Z) end
  return f64(y)
end

-- ---- scipy.optimize.fmin: Nelder-Mead ----

-- the entries of a list's order, ascending, NaN last, equal ones in their order (np.argsort of a few)
local function argsort(f)
  local order = {}
  for i = 1, #f do
    local v, j = f[i], i - 1
    while j >= 1 do
      local u = f[order[j]]
      if not (u > v or (u ~= u and v == v)) then break end
      order[j + 1] = order[j]
      j = j - 1
    end
    order[j + 1] = i
  end
  return order
end

--- wick.scipy.optimize.fmin(func, x0[, {args, xtol = 1e-4, ftol = 1e-4, maxiter, maxfun,
--- full_output = false, disp = true, callback, initial_simplex}]): SciPy's downhill simplex
--- (Nelder-Mead, its initial simplex and steps), func called with a 1-D float64 tensor (and args'
--- entries) returning a number or a one-element tensor; returns the argmin as a 1-D float64
--- tensor (with full_output: x, fopt, iter, funcalls, warnflag).
function optimize.fmin(func, x0, opts)
  local fn = "fmin"
  if type(func) ~= "function" and not (type(func) == "table" and getmetatable(func) and getmetatable(func).__call) then
    check.expected(fn, "func", "a function", func)
  end
  local o = check.options(opts, fn, { args = "table", xtol = "number", ftol = "number", maxiter = "number",
    maxfun = "number", full_output = "truth", disp = "truth", callback = "any",
    initial_simplex = "any" })
  local extra = o.args or {}
  local xatol, fatol = o.xtol or 1e-4, o.ftol or 1e-4
  local disp = o.disp
  if disp == nil then disp = true end
  if disp == 0 then disp = false end
  local x = floats_of(fn, "x0", x0)
  local N = #x
  local sim = {}
  if o.initial_simplex == nil then
    sim[1] = x
    for k = 1, N do
      local y = {}
      for i = 1, N do y[i] = x[i] end
      if y[k] ~= 0 then y[k] = (1 + 0.05) * y[k] else y[k] = 0.00025 end
      sim[k + 1] = y
    end
  else
    local s = o.initial_simplex
    if not wick.is_tensor(s) then
      if type(s) ~= "table" then check.expected(fn, "initial_simplex", "a 2-D tensor or a table of rows", s) end
      s = f64(s)
    end
    if s:dim() ~= 2 or s:size(1) ~= s:size(2) + 1 then
      check.fail(fn, "`initial_simplex` should be an array of shape (N+1,N)")
    end
    if N ~= s:size(2) then check.fail(fn, "Size of `initial_simplex` is not consistent with `x0`") end
    sim = s:to({ dtype = "float64", device = "cpu" }):contiguous():totable()
  end
  local maxiter, maxfun = o.maxiter, o.maxfun
  if maxiter == nil and maxfun == nil then
    maxiter, maxfun = N * 200, N * 200
  elseif maxiter == nil then
    maxiter = maxfun == math.huge and N * 200 or math.huge
  elseif maxfun == nil then
    maxfun = maxiter == math.huge and N * 200 or math.huge
  end
  local fcalls = 0
  -- the objective at a point (a copy goes to func); nil past maxfun (SciPy's _MaxFuncCallError)
  local function f(point)
    if fcalls >= maxfun then return nil end
    fcalls = fcalls + 1
    local v = func(f64(point), unpack(extra))
    if wick.is_tensor(v) then
      if v:numel() ~= 1 or v:is_complex() then
        check.fail(fn, "The user-provided objective function must return a scalar value.")
      end
      v = v:item()
      if type(v) == "boolean" then v = v and 1 or 0 end
    elseif type(v) == "boolean" then
      v = v and 1 or 0
    end
    if type(v) ~= "number" then check.fail(fn, "The user-provided objective function must return a scalar value.") end
    return v
  end
  local fsim = {}
  for k = 1, N + 1 do fsim[k] = math.huge end
  for k = 1, N + 1 do
    local v = f(sim[k])
    if v == nil then break end
    fsim[k] = v
  end
  local function sort()
    local order = argsort(fsim)
    local s, fs = {}, {}
    for i, k in ipairs(order) do s[i], fs[i] = sim[k], fsim[k] end
    sim, fsim = s, fs
  end
  sort()
  local function combine(a, xa, b, xb) -- a * xa + b * xb, SciPy's (1 + rho) * xbar - rho * sim[-1] and kin
    local out = {}
    for i = 1, N do out[i] = a * xa[i] + b * xb[i] end
    return out
  end
  -- the largest of |values| (NaN if any is)
  local function maxabs(get, n)
    local m = -math.huge
    for i = 1, n do
      local v = math.abs(get(i))
      if v ~= v then return v end
      if v > m then m = v end
    end
    return m
  end
  local iterations = 1
  -- one step of the simplex; returns early (as SciPy's _MaxFuncCallError) when func may be called no more
  local function step()
    local xbar = {}
    for i = 1, N do
      local acc = sim[1][i]
      for k = 2, N do acc = acc + sim[k][i] end
      xbar[i] = acc / N
    end
    local worst = sim[N + 1]
    local xr = combine(2, xbar, -1, worst)
    local fxr = f(xr)
    if fxr == nil then return end
    if fxr < fsim[1] then
      local xe = combine(3, xbar, -2, worst)
      local fxe = f(xe)
      if fxe == nil then return end
      if fxe < fxr then sim[N + 1], fsim[N + 1] = xe, fxe else sim[N + 1], fsim[N + 1] = xr, fxr end
    elseif fxr < fsim[N] then
      sim[N + 1], fsim[N + 1] = xr, fxr
    else
      local doshrink = false
      if fxr < fsim[N + 1] then -- outside contraction
        local xc = combine(1.5, xbar, -0.5, worst)
        local fxc = f(xc)
        if fxc == nil then return end
        if fxc <= fxr then sim[N + 1], fsim[N + 1] = xc, fxc else doshrink = true end
      else -- inside contraction
        local xcc = combine(0.5, xbar, 0.5, worst)
        local fxcc = f(xcc)
        if fxcc == nil then return end
        if fxcc < fsim[N + 1] then sim[N + 1], fsim[N + 1] = xcc, fxcc else doshrink = true end
      end
      if doshrink then
        local best = sim[1]
        for j = 2, N + 1 do
          local p = {}
          for i = 1, N do p[i] = best[i] + 0.5 * (sim[j][i] - best[i]) end
          sim[j] = p
          local v = f(p)
          if v == nil then return end
          fsim[j] = v
        end
      end
    end
    iterations = iterations + 1
  end
  while fcalls < maxfun and iterations < maxiter do
    local xdiff = maxabs(function(i) local r = math.floor((i - 1) / N); local c = (i - 1) % N + 1
      return sim[r + 2][c] - sim[1][c] end, N * N)
    local fdiff = maxabs(function(i) return fsim[1] - fsim[i + 1] end, N)
    if xdiff <= xatol and fdiff <= fatol then break end
    step()
    sort()
    if o.callback ~= nil then o.callback(f64(sim[1])) end
  end
  local fval = math.huge
  for k = 1, N + 1 do if fsim[k] < fval or fsim[k] ~= fsim[k] then fval = fsim[k] end end
  local warnflag = 0
  if fcalls >= maxfun then
    warnflag = 1
    if disp then wick.warn("Maximum number of function evaluations has been exceeded.") end
  elseif iterations >= maxiter then
    warnflag = 2
    if disp then wick.warn("Maximum number of iterations has been exceeded.") end
  elseif disp then
    io.write("Optimization terminated successfully.\n",
      ("         Current function value: %f\n"):format(fval),
      ("         Iterations: %d\n"):format(iterations),
      ("         Function evaluations: %d\n"):format(fcalls))
  end
  local xmin = f64(sim[1])
  if o.full_output and o.full_output ~= 0 then return xmin, fval, iterations, fcalls, warnflag end
  return xmin
end

return check.strict({ optimize = check.strict(optimize, "wick.scipy.optimize"),
  signal = check.strict(signal, "wick.scipy.signal") }, "wick.scipy")
