-- wick.special (torch.special) and the special functions at module level and
-- as methods: the C kernels erfc, erfinv, lgamma, digamma and trigamma (src/core/
-- scalar_math.h, with their derivatives in src/core/derivatives.c), and what
-- PyTorch composes of them: polygamma, mvlgamma, the normal distribution's
-- ndtr/ndtri/log_ndtr, entr, sinc, xlog1py, copysign, signbit, sgn, heaviside.
local core = require("wick.core")
local check = require("wick.argcheck")

local Tensor = core.Tensor

return function(wick)
  local special = {}

  -- the internal kernel polygamma(1, x) is reached through polygamma only
  local trigamma = Tensor.trigamma
  Tensor.trigamma, Tensor.trigamma_ = nil, nil

  local function floating(t, fn)
    check.tensor(t, fn, "self")
    return t:is_floating_point() and t or t:to(wick.get_default_dtype())
  end

  --- t:polygamma(n) / wick.polygamma(n, t): the n-th derivative of digamma;
  --- n = 0 (digamma) and 1 (trigamma)
  function Tensor.polygamma(t, n)
    check.tensor(t, "polygamma", "self")
    check.int(n, "polygamma", "n", 0)
    if n == 0 then return t:digamma() end
    if n == 1 and not (t.requires_grad and wick.is_grad_enabled()) then return trigamma(t) end -- (the C kernel)
    -- (-1)^(n + 1) n! zeta(n + 1, t): its gradient, zeta's to q, is polygamma(n + 1, t)
    local x = floating(t, "polygamma")
    local fact = 1.0 -- (a float: past 20! Lua 5.4's integers wrap)
    for i = 2, math.min(n, 171) do fact = fact * i end -- (past 170! float64 holds inf: no 2^31-step loop)
    return special.zeta(wick.full_like(x, n + 1), x) * ((n % 2 == 1) and fact or -fact)
  end
  function Tensor.polygamma_(t, n) return check.tensor(t, "polygamma_", "self"):copy_(t:polygamma(n)) end
  function wick.polygamma(n, t) return Tensor.polygamma(check.tensor(t, "polygamma", "input"), n) end

  --- t:mvlgamma(p): the multivariate log-gamma, p (p - 1) / 4 log(pi) + sum_{i < p} lgamma(t - i / 2);
  --- as PyTorch 2.15's, defined everywhere (no domain error: at or below (p - 1) / 2 the log|Gamma|
  --- terms, inf at their poles)
  function Tensor.mvlgamma(t, p)
    local x = floating(t, "mvlgamma")
    check.int(p, "mvlgamma", "p")
    if p < 1 then check.fail("mvlgamma", "p has to be greater than or equal to 1") end
    -- the p terms side by side in a new last dim, in blocks of at most 2^22 (a
    -- large p costs time in proportion, never memory beyond a block; past 2^28 terms in all,
    -- where PyTorch's p by numel tensor would exhaust memory, an error rather than minutes)
    if p * math.max(x:numel(), 1) > 2 ^ 28 then
      check.fail("mvlgamma", "p = %d makes %.0f lgamma terms for %d elements, more than 2^28", p, p * x:numel(), x:numel())
    end
    local r = x * 0
    if x:numel() > 0 then
      local block = math.max(1, math.floor(2 ^ 22 / x:numel()))
      for first = 0, p - 1, block do
        local n = math.min(block, p - first)
        local half = (wick.arange(n, { dtype = x.dtype, device = x.device }) + first) * 0.5
        r = r + (x:unsqueeze(-1) - half):lgamma():sum(-1)
      end
    end
    return r + p * (p - 1) / 4 * math.log(math.pi)
  end

  --- t:sinc(): sin(pi t) / (pi t), 1 at 0
  function Tensor.sinc(t)
    local x = floating(t, "sinc")
    local zero = x:eq(0)
    local px = wick.where(zero, 1, x) * math.pi -- (the gradient at 0 is 0, not NaN)
    return wick.where(zero, 1, px:sin() / px)
  end

  --- t:signbit(): whether the sign bit is set (true for -0.0)
  function Tensor.signbit(t)
    check.tensor(t, "signbit", "self")
    if not t:is_floating_point() then return t:lt(0) end
    return t:lt(0):logical_or(t:eq(0):logical_and(t:reciprocal():lt(0)))
  end

  --- t:copysign(other): |t| with the sign of other (a tensor or a number)
  function Tensor.copysign(t, other)
    local x = wick.ops._float_operands("copysign", t, other) -- (copysign(float32, float64) is float64)
    local negative = wick.is_tensor(other) and other:signbit()
      or wick.tensor(check.number(other, "copysign", "other")):signbit()
    local a = x:abs()
    return wick.where(negative, -a, a)
  end

  --- t:sgn(): sign for real tensors; z / |z| (0 at 0) for complex ones
  function Tensor.sgn(t)
    check.tensor(t, "sgn", "self")
    if not t:is_complex() then return t:sign() end
    local a = t:abs()
    return wick.where(a:eq(0), wick.zeros_like(t), t / a)
  end

  --- t:heaviside(values): 0 below 0, 1 above, values where t is 0
  function Tensor.heaviside(t, values)
    check.tensor(t, "heaviside", "self")
    check.tensor(values, "heaviside", "values")
    local one, zero = wick.ones({}, { dtype = t.dtype, device = t.device }), wick.zeros({}, { dtype = t.dtype, device = t.device })
    return wick.where(t:eq(0), values:to(t.dtype), wick.where(t:gt(0), one, zero))
  end

  for _, name in ipairs({ "polygamma_", "mvlgamma", "sinc", "signbit", "copysign", "sgn", "heaviside" }) do
    local method = Tensor[name]
    if name ~= "polygamma_" then wick[name] = function(t, ...) return method(t, ...) end end
  end
  for _, name in ipairs({ "erfc", "erfinv", "lgamma", "digamma" }) do
    local method = Tensor[name]
    wick[name] = function(t, ...) return method(check.tensor(t, name, "input"), ...) end
  end

  -- ---- torch.special ----
  local function same(name, method)
    special[name] = function(t, ...) return Tensor[method or name](check.tensor(t, "special." .. name, "input"), ...) end
  end
  for _, name in ipairs({ "erf", "erfc", "erfinv", "digamma", "expm1", "exp2", "log1p", "logit", "xlogy", "sinc",
    "round", "logsumexp", "softmax", "log_softmax", "i0" }) do
    if Tensor[name] then same(name) end
  end
  same("gammaln", "lgamma")
  same("psi", "digamma")
  same("expit", "sigmoid")
  same("multigammaln", "mvlgamma")
  function special.polygamma(n, t) return wick.polygamma(n, t) end

  --- special.ndtr(x): the standard normal CDF, erfc(-x / sqrt 2) / 2 (no cancellation in the lower tail)
  function special.ndtr(t)
    return (floating(t, "special.ndtr") * -math.sqrt(0.5)):erfc() * 0.5
  end
  --- special.log_ndtr(x): log of the normal CDF, accurate far into both tails (in float64,
  --- rounded to x's dtype: float32's erfc would underflow below -13)
  function special.log_ndtr(t)
    local given = floating(t, "special.log_ndtr")
    local x = given:to("float64")
    -- log(erfc(-x / sqrt 2) / 2) while erfc stays a normal number (x >= -37);
    -- beyond, -x^2/2 - log(-x) - log(sqrt(2 pi)) + log(sum_k (-1)^k (2k-1)!! / x^2k)
    local far = x:lt(-37)
    local near = wick.where(far, 0, x)
    local r = ((-near * math.sqrt(0.5)):erfc() * 0.5):log()
    -- above 0, log1p(-Q(x)) with Q the upper tail erfc(x / sqrt 2) / 2: small where the CDF rounds to 1
    local up = x:gt(0)
    r = wick.where(up, (-(wick.where(up, x, 0) * math.sqrt(0.5)):erfc() * 0.5):log1p(), r)
    local xf = wick.where(far, x, -40)
    local y = 1 / (xf * xf)
    local p = y * 0 + 135135 -- 1 - 3y + 15y^2 - ... + 135135y^6, by Horner
    for _, c in ipairs({ -10395, 945, -105, 15, -3, 1 }) do p = p * y + c end
    local tail = -xf * xf * 0.5 - (-xf):log() - 0.5 * math.log(2 * math.pi) + (-y * p):log1p()
    return wick.where(far, tail, r):to(given.dtype)
  end

  -- The modified Bessel functions of the first kind of orders 0 and 1, I0(x)
  -- and I1(x), scaled by exp(-|x|) (scaled = true) or not, in float64: for
  -- |x| <= 30 the power series, the sum over k of (x/2)^(2k + nu) / (k! (k + nu)!)
  -- (positive terms, 100 of them: the last is below 1e-60 of the sum), beyond
  -- it the asymptotic series exp(|x|) / sqrt(2 pi |x|) times the sum of
  -- c_k / |x|^k, c_k = -c_(k-1) (4 nu^2 - (2k - 1)^2) / (8k) (30 terms, before
  -- the terms grow: the rest is below 1e-20). I1 is odd. Each branch sees only
  -- its own inputs, so the other's gradient stays finite; differentiable
  -- (I0' = I1) through the recorded ops.
  local BESSEL_SPLIT = 30
  local function bessel_i(t, fn, nu, scaled)
    local x = floating(t, fn)
    local a = x:to("float64"):abs()
    local near = a:le(BESSEL_SPLIT)
    local xs = wick.where(near, a, 0)
    local q = xs * xs / 4
    local term = nu == 0 and wick.ones_like(xs) or xs / 2
    local sum = term
    for k = 1, 100 do
      term = term * q / (k * (k + nu))
      sum = sum + term
    end
    local small = scaled and sum * (-xs):exp() or sum
    local xl = wick.where(near, BESSEL_SPLIT + 1, a)
    local c, series = wick.ones_like(xl), wick.ones_like(xl)
    for k = 1, 30 do
      c = c * (((2 * k - 1) ^ 2 - 4 * nu * nu) / (8 * k)) / xl
      series = series + c
    end
    local large = series / (2 * math.pi * xl):sqrt()
    if not scaled then large = large * xl:exp() end
    local r = wick.where(near, small, large)
    if nu == 1 then r = wick.where(x:to("float64"):lt(0), -r, r) end
    return r:to(x.dtype)
  end
  --- t:i0() / wick.i0(t) / special.i0(t): the modified Bessel function of the first
  --- kind of order 0 (torchaudio's kaiser window); special.i0e(t) is exp(-|t|) i0(t);
  --- special.i1(t) and special.i1e(t) the same of order 1
  function Tensor.i0(t) return bessel_i(t, "i0", 0, false) end
  function special.i0(t) return bessel_i(t, "special.i0", 0, false) end
  function special.i0e(t) return bessel_i(t, "special.i0e", 0, true) end
  function special.i1(t) return bessel_i(t, "special.i1", 1, false) end
  function special.i1e(t) return bessel_i(t, "special.i1e", 1, true) end
  --- special.modified_bessel_i0(t) and special.modified_bessel_i1(t): i0 and i1 by PyTorch's other names
  function special.modified_bessel_i0(t) return bessel_i(t, "special.modified_bessel_i0", 0, false) end
  function special.modified_bessel_i1(t) return bessel_i(t, "special.modified_bessel_i1", 1, false) end
  --- special.spherical_bessel_j0(t): sin(t) / t, 1 at 0 (with a zero gradient there), 0 at +-inf
  function special.spherical_bessel_j0(t)
    local x = floating(t, "special.spherical_bessel_j0")
    local zero, infinite = x:eq(0), x:abs():eq(math.huge)
    local safe = wick.where(zero:logical_or(infinite), 1, x)
    return wick.where(zero, 1, wick.where(infinite, 0, safe:sin() / safe))
  end
  wick.i0 = Tensor.i0

  -- Lazily made autograd Functions (autograd loads after this file): fns.forward and fns.backward
  -- become the Function `name` at its first apply.
  local function lazy_function(name, fns)
    local made
    return function(...)
      if not made then
        made = wick.autograd.Function:extend(name)
        made.forward, made.backward = fns.forward, fns.backward
      end
      return made.apply(...)
    end
  end
  -- two operands, numbers or tensors, as floating tensors of one dtype, broadcast (a number
  -- takes the tensor's floating dtype, as a Python scalar does)
  local function float_pair(fn, t, u, names)
    local function like(v, other, name)
      if check.is_tensor(v) then return v end
      check.number(v, fn, name)
      local dtype = check.is_tensor(other) and other:is_floating_point() and other.dtype or wick.get_default_dtype()
      return wick.tensor(v, { dtype = dtype, device = check.is_tensor(other) and other.device or nil })
    end
    t, u = like(t, u, names[1]), like(u, t, names[2])
    t, u = wick.ops._float_operands(fn, t, u)
    return wick.broadcast_tensors(t, u)
  end

  -- The standard normal quantile by Wichura's algorithm AS241 (PPND16, Applied Statistics 37,
  -- 1988), good to about 1e-16 relative, in float64: for |q| <= 0.425 (q = p - 1/2) a rational
  -- function of r = 0.180625 - q^2 times q; beyond, of s = sqrt(-log t) - 1.6 (s <= 5) or - 5,
  -- t = min(p, 1 - p), with q's sign. Its arguments are q and t, so that erfinv (q = y / 2,
  -- t = (1 - |y|) / 2, both exact where they are used) loses nothing near y = +-1 or 0.
  local AS241 = {
    { 2509.0809287301226727, 33430.575583588128105, 67265.770927008700853, 45921.953931549871457,
      13731.693765509461125, 1971.5909503065514427, 133.14166789178437745, 3.3871328727963666080 },
    { 5226.4952788528545610, 28729.085735721942674, 39307.895800092710610, 21213.794301586595867,
      5394.1960214247511077, 687.18700749205790830, 42.313330701600911252, 1 },
    { 7.74545014278341407640e-4, 2.27238449892691845833e-2, 2.41780725177450611770e-1,
      1.27045825245236838258, 3.64784832476320460504, 5.76949722146069140550, 4.63033784615654529590,
      1.42343711074968357734 },
    { 1.05075007164441684324e-9, 5.47593808499534494600e-4, 1.51986665636164571966e-2,
      1.48103976427480074590e-1, 6.89767334985100004550e-1, 1.67638483018380384940,
      2.05319162663775882187, 1 },
    { 2.01033439929228813265e-7, 2.71155556874348757815e-5, 1.24266094738807843860e-3,
      2.65321895265761230930e-2, 2.96560571828504891230e-1, 1.78482653991729133580,
      5.46378491116411436990, 6.65790464350110377720 },
    { 2.04426310338993978564e-15, 1.42151175831644588870e-7, 1.84631831751005468180e-5,
      7.86869131145613259100e-4, 1.48753612908506148525e-2, 1.36929880922735805310e-1,
      5.99832206555887937690e-1, 1 },
  }
  local function rational(r, num, den)
    local n, d = r * 0 + num[1], r * 0 + den[1]
    for i = 2, #num do n, d = n * r + num[i], d * r + den[i] end
    return n / d
  end
  local function normal_quantile(q, t)
    local central = q:abs():le(0.425)
    local qc = wick.where(central, q, 0)
    local mid = qc * rational(0.180625 - qc * qc, AS241[1], AS241[2])
    local s = (-wick.where(central, 0.5, t):log()):sqrt()
    local near = s:le(5)
    local tail = wick.where(near, rational(wick.where(near, s, 5) - 1.6, AS241[3], AS241[4]),
      rational(wick.where(near, 5, s) - 5, AS241[5], AS241[6]))
    return wick.where(central, mid, wick.where(q:lt(0), -tail, tail))
  end
  -- kind "ndtri": ndtri(p) (-inf at 0, inf at 1); kind "erfinv": erfinv(y) = ndtri((1 + y) / 2) / sqrt 2
  -- (+-inf at +-1); NaN outside the domain. The gradients: sqrt(2 pi) e^(x^2 / 2), sqrt(pi) / 2 e^(x^2).
  local quantile_fn = lazy_function("NormalQuantile", {
    forward = function(ctx, t, kind)
      local v = t:to("float64")
      local r
      if kind == "ndtri" then
        local q = v - 0.5
        r = normal_quantile(q, wick.where(q:le(0), v, 1 - v))
        r = wick.where(v:eq(0), -math.huge, wick.where(v:eq(1), math.huge, r))
        r = wick.where(v:ge(0):logical_and(v:le(1)), r, 0 / 0)
      else
        local a = v:abs()
        r = normal_quantile(v * 0.5, (1 - a) * 0.5) * math.sqrt(0.5)
        r = wick.where(a:eq(1), v * math.huge, r)
        r = wick.where(a:le(1), r, 0 / 0)
      end
      r = r:to(t.dtype)
      ctx:save_for_backward(r)
      ctx.kind = kind
      return r
    end,
    backward = function(ctx, g)
      local r = ctx.saved_tensors[1]
      if ctx.kind == "ndtri" then return g * (r * r * 0.5):exp() * math.sqrt(2 * math.pi) end
      return g * (r * r):exp() * (math.sqrt(math.pi) / 2)
    end,
  })
  --- special.ndtri(p): the standard normal quantile (the inverse of ndtr), accurate to the end of
  --- both tails (float64 inside); special.erfinv(y) the inverse error function by the same algorithm
  function special.ndtri(t) return quantile_fn(floating(t, "special.ndtri"), "ndtri") end
  function special.erfinv(t) return quantile_fn(floating(t, "special.erfinv"), "erfinv") end

  --- special.entr(x): -x log x (0 at 0, -inf below 0); the gradient -(log x + 1) everywhere, as
  --- PyTorch's (inf at 0, NaN below)
  local entr_fn = lazy_function("Entr", {
    forward = function(ctx, x)
      ctx:save_for_backward(x)
      local pos = x:gt(0)
      local safe = wick.where(pos, x, 1)
      local zero = wick.zeros_like(x)
      local r = wick.where(pos, -safe * safe:log(), wick.where(x:eq(0), zero, zero - math.huge))
      return wick.where(x:ne(x), x, r)
    end,
    backward = function(ctx, g) return g * -(ctx.saved_tensors[1]:log() + 1) end,
  })
  function special.entr(t) return entr_fn(floating(t, "special.entr")) end

  -- one of two operands a number: as a tensor of the other's floating dtype (the default one for an
  -- integer tensor), as PyTorch's Scalar overloads; two numbers are its error
  local function scalar_operand(fn, t, u)
    if check.is_tensor(t) or check.is_tensor(u) or type(t) ~= "number" or type(u) ~= "number" then return end
    check.fail(fn, "received an invalid combination of arguments - got (number, number), but expected one of "
      .. "(Tensor input, Tensor other), (Number self, Tensor other), (Tensor input, Number other)")
  end
  --- special.xlog1py(x, y): x log1p(y), 0 where x is 0 (and y not NaN); x or y may be a number. The
  --- gradients as PyTorch's: log1p(y) to x (0 where x is 0 and y <= -1), x / (1 + y) to y
  local xlog1py_fn = lazy_function("Xlog1py", {
    forward = function(ctx, x, u)
      ctx:save_for_backward(x, u)
      local zero = x:eq(0):logical_and(u:eq(u))
      return wick.where(zero, x * 0, x * wick.where(zero, 0, u):log1p())
    end,
    backward = function(ctx, g)
      local x, u = ctx.saved_tensors[1], ctx.saved_tensors[2]
      local gx, gu
      if ctx.needs_input_grad[1] then
        gx = wick.where(x:eq(0):logical_and(u:le(-1)), 0, special.xlog1py(g, u))
      end
      if ctx.needs_input_grad[2] then gu = g * x / (u + 1) end
      return gx, gu
    end,
  })
  function special.xlog1py(t, u)
    scalar_operand("special.xlog1py", t, u)
    t, u = float_pair("special.xlog1py", t, u, { "input", "other" })
    return xlog1py_fn(t, u)
  end
  --- special.xlogy(x, y): x log(y), 0 where x is 0 (and y not NaN); x or y may be a number
  function special.xlogy(t, u)
    scalar_operand("special.xlogy", t, u)
    if type(t) == "number" and check.is_tensor(u) then
      t = wick.tensor(t, { dtype = u:is_floating_point() and u.dtype or wick.get_default_dtype(), device = u.device })
    end
    return Tensor.xlogy(check.tensor(t, "special.xlogy", "input"), u)
  end

  -- The regularized incomplete gamma functions P(a, x) (gammainc) and Q(a, x) =
  -- 1 - P (gammaincc), in float64: below x = a + 1 the series
  -- P = x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a + 1) ... (a + n)), beyond it Q by
  -- Legendre's continued fraction, evaluated by the modified Lentz method; the
  -- other one as 1 minus it. Both run until every element's last step is below
  -- the float64 epsilon (checked every 16 steps), each element with stand-in
  -- arguments in the branch it does not take. PyTorch's edge values: NaN for a
  -- or x negative, a = 0 gives P = 1 for x > 0, x = 0 gives P = 0, x = inf 1.
  local INCGAMMA_MAX_STEPS = 20000
  local function incgamma_values(a, x)
    local eps, tiny = 2 ^ -53, 2 ^ -1000
    local finite = a:gt(0):logical_and(x:gt(0)):logical_and(a:lt(math.huge)):logical_and(x:lt(math.huge))
    local series = x:lt(a + 1):logical_and(finite) -- (the edge values, NaN among them, are incgamma_edges')
    local fraction = series:logical_not():logical_and(finite)
    local as, xs = wick.where(series, a, 1), wick.where(series, x, 0.5)
    local term, sum = wick.ones_like(xs), wick.ones_like(xs)
    for n = 1, INCGAMMA_MAX_STEPS do
      term = term * xs / (as + n)
      sum = sum + term
      if n % 16 == 0 and (term / sum):abs():max():item() < eps then break end
    end
    local p_series = (as * xs:log() - xs - (as + 1):lgamma()):exp() * sum
    local ac, xc = wick.where(fraction, a, 1), wick.where(fraction, x, 2)
    local b = xc + 1 - ac
    local c, d = wick.full_like(b, 1 / tiny), 1 / b
    local h, done = d, wick.zeros_like(b, { dtype = "bool" })
    for i = 1, INCGAMMA_MAX_STEPS do
      local an = -i * (i - ac)
      b = b + 2
      d = an * d + b
      d = wick.where(d:abs():lt(tiny), tiny, d)
      c = b + an / c
      c = wick.where(c:abs():lt(tiny), tiny, c)
      d = 1 / d
      local del = d * c
      h = wick.where(done, h, h * del) -- (an element stops where it converged: no drift of 1 +- eps factors)
      done = done:logical_or((del - 1):abs():lt(eps))
      if i % 16 == 0 and done:all():item() then break end
    end
    local q_fraction = (ac * xc:log() - xc - ac:lgamma()):exp() * h
    return wick.where(series, p_series, 1 - q_fraction), wick.where(series, 1 - p_series, q_fraction)
  end
  -- the edge values PyTorch gives (its calc_igamma), P's; Q's are 1 - them
  local function incgamma_edges(a, x, p)
    local nan = a:lt(0):logical_or(x:lt(0)):logical_or(a:ne(a)):logical_or(x:ne(x))
      :logical_or(a:eq(0):logical_and(x:eq(0))):logical_or(a:eq(math.huge):logical_and(x:eq(math.huge)))
    p = wick.where(a:eq(0):logical_and(x:gt(0)), 1, p)
    p = wick.where(x:eq(0):logical_and(a:gt(0)), 0, p)
    p = wick.where(x:eq(math.huge):logical_and(a:lt(math.huge)), 1, p)
    p = wick.where(a:eq(math.huge):logical_and(x:lt(math.huge)), 0, p)
    return wick.where(nan, 0 / 0, p)
  end
  local IncGamma = {}
  function IncGamma.forward(ctx, a, x, upper)
    local a64, x64 = a:to("float64"), x:to("float64")
    local p, q = incgamma_values(a64, x64)
    local edged = incgamma_edges(a64, x64, p)
    local r = upper and wick.where(edged:ne(p), 1 - edged, q) or edged
    ctx:save_for_backward(a, x)
    ctx.upper = upper
    return r:to(x.dtype)
  end
  function IncGamma.backward(ctx, g)
    local a, x = ctx.saved_tensors[1], ctx.saved_tensors[2]
    if ctx.needs_input_grad and ctx.needs_input_grad[1] then
      check.fail(ctx.upper and "special.gammaincc" or "special.gammainc",
        "the derivative with respect to the first argument (a) is not implemented, as in PyTorch")
    end
    local density = ((a - 1) * x:log() - x - a:lgamma()):exp() -- (dP/dx)
    return nil, g * (ctx.upper and -density or density)
  end
  local incgamma_fn = lazy_function("IncGamma", IncGamma)
  local function incgamma(fn, upper)
    return function(a, x)
      a, x = float_pair(fn, a, x, { "self", "other" })
      return incgamma_fn(a, x, upper)
    end
  end
  --- special.gammainc(a, x) / special.gammaincc(a, x) (wick.igamma / wick.igammac, t:igamma(x)):
  --- the regularized lower and upper incomplete gamma functions P(a, x) and Q(a, x) = 1 - P; the
  --- gradient flows to x only (PyTorch has none for a)
  special.gammainc, special.gammaincc = incgamma("special.gammainc", false), incgamma("special.gammaincc", true)
  wick.igamma, wick.igammac = incgamma("igamma", false), incgamma("igammac", true)
  Tensor.igamma, Tensor.igammac = wick.igamma, wick.igammac

  -- The Hurwitz zeta function zeta(s, q) = sum over k >= 0 of (q + k)^-s, in
  -- float64, by Euler-Maclaurin summation: the first N terms (N per element, so
  -- that w = q + N is at least 9 and s), then w^(1 - s) / (s - 1) + w^-s / 2 and
  -- twelve Bernoulli corrections B_2j / (2j)! s (s + 1) ... (s + 2j - 2) w^(-s - 2j + 1).
  -- PyTorch's values: inf at s = 1 and at q a non-positive integer, NaN for s < 1
  -- and for a negative q with a fractional s.
  local BERNOULLI = { 1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798,
    -174611 / 330, 854513 / 138, -236364091 / 2730 }
  local ZETA_MAX_TERMS = 2 ^ 16
  local function zeta_values(fn, s, q)
    local q_int = q:eq(q:floor())
    local nan = s:lt(1):logical_or(q:lt(0):logical_and(q_int:logical_not()):logical_and(s:ne(s:floor())))
      :logical_or(s:ne(s)):logical_or(q:ne(q))
    local pole = s:eq(1):logical_or(q:le(0):logical_and(q_int))
    local ok = nan:logical_or(pole):logical_not():logical_and(s:abs():lt(math.huge)):logical_and(q:abs():lt(math.huge))
    local ss, qs = wick.where(ok, s, 2), wick.where(ok, q, 1)
    -- (w at least 9 and s, s up to 64; past it 8 more terms than that: the corrections then carry
    -- (q / w)^s, nothing, where they would no longer converge, and no loop runs s times)
    local reach = ss:clamp(9, 64)
    local n = (reach - qs):ceil():clamp(0, math.huge)
    n = wick.where(ss:gt(64), n:clamp(8, math.huge), n)
    local terms = n:numel() > 0 and n:max():item() or 0
    if terms > ZETA_MAX_TERMS then
      check.fail(fn, "q = %g needs %d terms before the asymptotic sum; q below -%d is not supported", qs:min():item(),
        terms, ZETA_MAX_TERMS - 10)
    end
    local sum = wick.zeros_like(ss)
    for k = 0, terms - 1 do sum = sum + wick.where(n:gt(k), (qs + k):pow(-ss), 0) end
    local w = qs + n
    local r = sum + w:pow(1 - ss) / (ss - 1) + w:pow(-ss) / 2
    local t, fact = ss * w:pow(-ss - 1), 2.0 -- (a float: 24! overflows Lua 5.4's integers)
    for j = 1, #BERNOULLI do
      if j > 1 then
        t = t * (ss + 2 * j - 3) * (ss + 2 * j - 2) / (w * w)
        fact = fact * (2 * j - 1) * (2 * j)
      end
      r = r + t * (BERNOULLI[j] / fact)
    end
    -- (s = inf: 1 at q = 1, 0 above, inf below, the limits of the sum, where PyTorch 2.15 gives NaN; q = inf: 0)
    r = wick.where(s:eq(math.huge), wick.where(q:eq(1), 1, wick.where(q:gt(1), 0, math.huge)), r)
    r = wick.where(q:eq(math.huge):logical_and(s:gt(1)), 0, r)
    return wick.where(nan, 0 / 0, wick.where(pole, math.huge, r))
  end
  local zeta_fn = lazy_function("Zeta", {
    forward = function(ctx, s, q)
      ctx:save_for_backward(s, q)
      return zeta_values("special.zeta", s:to("float64"), q:to("float64")):to(s.dtype)
    end,
    backward = function(ctx, g)
      local s, q = ctx.saved_tensors[1], ctx.saved_tensors[2]
      if ctx.needs_input_grad[1] then
        check.fail("special.zeta", "the derivative with respect to the first argument (x) is not implemented, as in PyTorch")
      end
      return nil, g * -s * special.zeta(s + 1, q)
    end,
  })
  --- special.zeta(x, q) (wick.special.zeta: PyTorch's): the Hurwitz zeta function, the sum over
  --- k >= 0 of (q + k)^-x (the Riemann zeta at q = 1); numbers or tensors, broadcast; the
  --- gradient flows to q (-x zeta(x + 1, q)) only, as PyTorch's
  function special.zeta(x, q)
    x, q = float_pair("special.zeta", x, q, { "x", "q" })
    return zeta_fn(x, q)
  end

  -- erfcx(x) = exp(x^2) erfc(x) without its overflow: the product below x = 2, Laplace's
  -- continued fraction 1 / (sqrt(pi) (x + (1/2) / (x + 1 / (x + (3/2) / (x + ...))))) at 2 and
  -- above (100 levels: float64's epsilon at x = 2, fewer needed beyond)
  local function erfcx_values(x)
    local small = x:lt(2)
    local xs, xl = wick.where(small, x, 0), wick.where(small, 2, x)
    local direct = (xs * xs):exp() * xs:erfc()
    local t = xl
    for k = 100, 1, -1 do t = xl + (k / 2) / t end
    local fraction = 1 / (math.sqrt(math.pi) * t)
    return wick.where(x:ne(x), x, wick.where(small, direct, fraction))
  end
  local erfcx_fn = lazy_function("Erfcx", {
    forward = function(ctx, x)
      local r = erfcx_values(x:to("float64")):to(x.dtype)
      ctx:save_for_backward(x, r)
      return r
    end,
    backward = function(ctx, g) -- (erfcx' = 2 x erfcx(x) - 2 / sqrt(pi))
      local x = ctx.saved_tensors[1]
      return g * (2 * x * special.erfcx(x) - 2 / math.sqrt(math.pi))
    end,
  })
  --- special.erfcx(t): the scaled complementary error function exp(t^2) erfc(t), finite for large t
  function special.erfcx(t) return erfcx_fn(floating(t, "special.erfcx")) end

  -- ---- Bessel J, Y and K of orders 0 and 1, Airy's Ai, and the orthogonal polynomials ----
  -- As PyTorch's, these have no gradient: they compute under no_grad and return a
  -- tensor without grad_fn (float64 inside, the result in the input's floating dtype).
  local LN2, EULER = math.log(2), 0.57721566490153286061
  -- the small-|x| series (|x| <= 1), with z = -x^2/4 (J, Y) or x^2/4 (I, K): s = sum of
  -- z^k / (k! (k + nu)!), d = sum of (psi(k + 1) + psi(k + nu + 1)) z^k / (k! (k + nu)!),
  -- psi(k + 1) = H_k - gamma; 20 terms (the 21st is below 1e-40 of the first)
  local function bessel_series(z, nu)
    local term = wick.ones_like(z)
    local s, d = term, term * (nu == 0 and -2 * EULER or 1 - 2 * EULER)
    local h0, h1 = 0, nu == 0 and 0 or 1 -- H_k and H_(k + nu)
    for k = 1, 20 do
      term = term * z / (k * (k + nu))
      h0, h1 = h0 + 1 / k, h1 + 1 / (k + nu)
      s = s + term
      d = d + term * (h0 + h1 - 2 * EULER)
    end
    return s, d
  end
  -- The large-|x| side (|x| > 1), from the integral (DLMF 10.32.8, u = s^2)
  -- e^z K_nu(z) = sqrt(pi / 2z) c_nu int_0^inf s^2nu e^(-s^2) (1 + s^2 / 2z)^(nu - 1/2) ds,
  -- c_0 = 2 / sqrt(pi), c_1 = 4 / sqrt(pi): at z = x real its integrand is positive; at
  -- z = -ix it is the Hankel function H_nu(x) = J + iY = sqrt(2 / pi x) (P + iQ) e^(i chi),
  -- chi = x - (2 nu + 1) pi / 4. The trapezoidal rule with step 0.1 to s = 7 (the
  -- integrand is analytic within |Im s| < sqrt(|x|) >= 1 of the real line: the error is
  -- below e^-55); its result is relative to the value's own size, no cancellation.
  local HANKEL_STEP, HANKEL_NODES = 0.1, 70
  local function hankel_integral(x, nu, hankel)
    local p, q = wick.zeros_like(x), wick.zeros_like(x)
    for k = HANKEL_NODES, 0, -1 do -- (the small terms first)
      local s = k * HANKEL_STEP
      local w = math.exp(-s * s) * (k == 0 and 0.5 or 1) * (nu == 1 and s * s * 2 or 1)
      if w ~= 0 then
        local a = (s * s / 2) / x
        if hankel then
          -- (1 + ia)^(-+1/2) = r^(-+1/2) (cos phi -+ i sin phi), r = |1 + ia|, phi = atan(a) / 2
          local r = (a * a + 1):sqrt()
          local c = ((r + 1) / (r * 2)):sqrt()
          local sn = a / (r * c * 2)
          local m = nu == 0 and r:rsqrt() * w or r:sqrt() * w
          p = p + m * c
          q = nu == 0 and q - m * sn or q + m * sn
        else
          p = p + (nu == 0 and (a + 1):rsqrt() or (a + 1):sqrt()) * w
        end
      end
    end
    local scale = 2 / math.sqrt(math.pi) * HANKEL_STEP
    return p * scale, q * scale
  end
  local BESSEL_NEAR = 1
  -- J_nu(x) (kind "j") or Y_nu(x) (kind "y"), nu = 0 or 1, of a float64 tensor
  local function bessel_jy(x, nu, kind)
    local a = x:abs()
    local near = a:le(BESSEL_NEAR)
    local xs = wick.where(near, x, 0.5)
    local s, d = bessel_series(xs * xs * -0.25, nu)
    local small
    if kind == "j" then
      small = nu == 0 and s or s * xs * 0.5
    else
      local lg = xs:abs():log() - LN2
      if nu == 0 then
        small = (s * lg - d * 0.5) * (2 / math.pi)
      else
        small = (s * xs * 0.5 * lg - d * xs * 0.25) * (2 / math.pi) - (2 / math.pi) / xs
      end
    end
    local xl = wick.where(near, 2, a)
    local p, q = hankel_integral(xl, nu, true)
    -- cos and sin of chi from those of x (exact): chi = x - pi/4 rounded, as PyTorch's, is off by
    -- up to half an ulp of x, a relative error of 1e-6 in J0(1e10)
    local cx, sx = xl:cos(), xl:sin()
    local c, sn
    if nu == 0 then c, sn = cx + sx, sx - cx else c, sn = sx - cx, -sx - cx end
    local amp = (xl * math.pi):rsqrt()
    local large = kind == "j" and (p * c - q * sn) * amp or (p * sn + q * c) * amp
    if kind == "j" and nu == 1 then large = wick.where(x:lt(0), -large, large) end
    local r = wick.where(near, small, large)
    if kind == "y" then
      r = wick.where(x:lt(0), 0 / 0, wick.where(x:eq(0), -math.huge, r))
    end
    return wick.where(x:ne(x), x, r)
  end
  -- K_nu(x), scaled by e^x or not
  local function bessel_k(x, nu, scaled)
    local near = x:le(BESSEL_NEAR)
    local xs = wick.where(near, x, 0.5)
    local s, d = bessel_series(xs * xs * 0.25, nu)
    local lg = xs:log() - LN2
    local small = nu == 0 and d * 0.5 - s * lg or xs:reciprocal() + s * xs * 0.5 * lg - d * xs * 0.25
    if scaled then small = small * xs:exp() end
    local xl = wick.where(near, 2, x)
    local p = hankel_integral(xl, nu, false)
    local large = p * (xl * (2 / math.pi)):rsqrt()
    if not scaled then large = large * (-xl):exp() end
    local r = wick.where(near, small, large)
    r = wick.where(x:eq(0), math.huge, r)
    return wick.where(x:lt(0):logical_or(x:ne(x)), 0 / 0, r)
  end
  local function no_grad_unary(fn, compute)
    return function(t)
      local x = floating(check.tensor(t, fn, "input"), fn)
      return wick.no_grad(function() return compute(x:to("float64")):to(x.dtype) end)
    end
  end
  --- special.bessel_j0(t), special.bessel_j1(t), special.bessel_y0(t), special.bessel_y1(t): the
  --- Bessel functions of the first and second kinds of orders 0 and 1 (Y is NaN below 0, -inf at 0)
  special.bessel_j0 = no_grad_unary("special.bessel_j0", function(x) return bessel_jy(x, 0, "j") end)
  special.bessel_j1 = no_grad_unary("special.bessel_j1", function(x) return bessel_jy(x, 1, "j") end)
  special.bessel_y0 = no_grad_unary("special.bessel_y0", function(x) return bessel_jy(x, 0, "y") end)
  special.bessel_y1 = no_grad_unary("special.bessel_y1", function(x) return bessel_jy(x, 1, "y") end)
  --- special.modified_bessel_k0(t), special.modified_bessel_k1(t): the modified Bessel functions of
  --- the second kind; special.scaled_modified_bessel_k0(t) / _k1(t) are them times exp(t)
  special.modified_bessel_k0 = no_grad_unary("special.modified_bessel_k0", function(x) return bessel_k(x, 0, false) end)
  special.modified_bessel_k1 = no_grad_unary("special.modified_bessel_k1", function(x) return bessel_k(x, 1, false) end)
  special.scaled_modified_bessel_k0 = no_grad_unary("special.scaled_modified_bessel_k0",
    function(x) return bessel_k(x, 0, true) end)
  special.scaled_modified_bessel_k1 = no_grad_unary("special.scaled_modified_bessel_k1",
    function(x) return bessel_k(x, 1, true) end)

  -- Airy's Ai(x): for |x| <= 1 its Maclaurin series Ai(0) f(x) + Ai'(0) g(x) (f, g the sums of
  -- x^3k / (2 3 5 6 ... (3k - 1) 3k) and x^(3k + 1) / (3 4 6 7 ... 3k (3k + 1)), 16 terms); beyond,
  -- with zeta = 2 |x|^(3/2) / 3, Ai(x) = e^-zeta I / (2 sqrt(pi) x^(1/4)) (x > 1) and
  -- Ai(x) = Re(e^(i (zeta - pi/4)) I) / (sqrt(pi) |x|^(1/4)) (x < -1), where I is the integral
  -- (DLMF 10.32.8 at nu = 1/3, u = s^6) 6 / Gamma(5/6) int_0^inf s^4 e^(-s^6) (1 + s^6 / 2w)^(-1/6) ds
  -- at w = zeta (real) or w = -i zeta, by the trapezoidal rule with step 0.04 to s = 2 (the
  -- integrand is even and analytic near the real line). As PyTorch's: NaN at +-inf, 0 beyond x = 103.892.
  local AIRY_STEP, AIRY_NODES, GAMMA_5_6 = 0.04, 50, 1.1287870299081259
  -- Dekker's splitting and exact product: a * b = hi + lo exactly (for |a|, |b| below 1e299)
  local SPLIT = 2 ^ 27 + 1
  local function split(a)
    local t = a * SPLIT
    local hi = t - (t - a)
    return hi, a - hi
  end
  local function two_prod(a, b)
    local p = a * b
    local ahi, alo = split(a)
    local bhi, blo = split(b)
    return p, ((ahi * bhi - p) + ahi * blo + alo * bhi) + alo * blo
  end
  -- zeta = 2 y^(3/2) / 3 as hi + lo (the rounded zeta would cost e^-zeta and the phase an error
  -- of zeta ulps: 500 at |x| = 100)
  local function airy_zeta(y)
    local r = y:sqrt()
    local rr, rr_lo = two_prod(r, r)
    local r_lo = ((y - rr) - rr_lo) / (r * 2) -- (sqrt y = r + r_lo)
    local p, p_lo = two_prod(y, r)
    p_lo = p_lo + y * r_lo
    local hi = p * 2 / 3
    local m, m_lo = two_prod(hi, wick.full_like(hi, 3))
    local lo = (((p * 2 - m) - m_lo) + p_lo * 2) / 3
    return hi, wick.where(lo:isfinite(), lo, 0) -- (0 where the splitting overflows, zeta beyond 1e290)
  end
  local function airy_ai(x)
    local a = x:abs()
    local near = a:le(1)
    local xs = wick.where(near, x, 0)
    local x3 = xs * xs * xs
    local tf, tg = wick.ones_like(xs), xs
    local f, g = tf, tg
    for k = 1, 16 do
      tf = tf * x3 / ((3 * k - 1) * (3 * k))
      tg = tg * x3 / ((3 * k) * (3 * k + 1))
      f, g = f + tf, g + tg
    end
    local small = f * 0.35502805388781723926 - g * 0.25881940379280679840
    local y = wick.where(near, 2, a)
    local zeta, zeta_lo = airy_zeta(y)
    local up = x:gt(0)
    local p, q = wick.zeros_like(y), wick.zeros_like(y)
    for k = AIRY_NODES, 1, -1 do -- (the small terms first)
      local s = k * AIRY_STEP
      local s6 = s ^ 6
      local w = 6 * s ^ 4 * math.exp(-s6)
      local b = (s6 / 2) / zeta
      -- (1 + ib)^(-1/6) = (1 + b^2)^(-1/12) e^(-i atan(b) / 6) below 0, (1 + b)^(-1/6) above
      local phi = b:atan() / 6
      local m = wick.where(up, (b + 1):pow(-1 / 6), (b * b + 1):pow(-1 / 12)) * w
      p = p + wick.where(up, m, m * phi:cos())
      q = q - m * phi:sin()
    end
    p, q = p * (AIRY_STEP / GAMMA_5_6), q * (AIRY_STEP / GAMMA_5_6)
    local root4 = y:sqrt():sqrt()
    local above = (-zeta):exp() * (-zeta_lo):exp() * p / (root4 * 2 * math.sqrt(math.pi))
    -- cos and sin of zeta + zeta_lo, and of it - pi/4 from them, exactly
    local cz, sz = zeta:cos(), zeta:sin()
    local cl, sl = zeta_lo:cos(), zeta_lo:sin()
    cz, sz = cz * cl - sz * sl, sz * cl + cz * sl
    local below = (p * (cz + sz) - q * (sz - cz)) / (root4 * math.sqrt(2 * math.pi))
    local r = wick.where(near, small, wick.where(up, above, below))
    r = wick.where(x:gt(103.892), 0, r)
    return wick.where(a:eq(math.huge):logical_or(x:ne(x)), 0 / 0, r)
  end
  --- special.airy_ai(t): the Airy function Ai (NaN at +-inf, as PyTorch's)
  special.airy_ai = no_grad_unary("special.airy_ai", airy_ai)

  -- The orthogonal polynomials f(x, n), with PyTorch's conventions: n truncated toward 0 (a
  -- NaN, infinite or out-of-int64 n counts as negative), 0 for n < 0, its shortcuts at the
  -- ends of the interval, the trigonometric forms inside it for larger n, else the three-term
  -- recurrence, run to the largest n among the elements that need it (each element stops at its
  -- own n; the loop ends early once every one is done or NaN, checked every 64 steps).
  local POLY_MAX_STEPS = 100000
  local function poly_degree(n)
    return wick.where(n:abs():lt(2 ^ 63), n:trunc(), -1)
  end
  local function parity_odd(n) return (n - (n * 0.5):floor() * 2):eq(1) end
  -- a * b + c rounded once, as the fused multiply-add PyTorch's compiled recurrences use (so that
  -- the results agree to the bit): Dekker's exact product ph + pl, then Knuth's exact sum of ph and
  -- c; where that is not finite (|a| or |b| beyond 1e299, or infinite), the plain a * b + c
  local function fma(a, b, c)
    local ph, pl = two_prod(a, b)
    local sum = ph + c
    local bv = sum - ph
    local r = sum + (pl + ((ph - (sum - bv)) + (c - bv)))
    return wick.where(r:isfinite(), r, sum)
  end
  -- f_n where `need` (n >= 2), from f_0 = 1, f_1 = q1 and f_(j+1) = step(j, f_(j-1), f_j)
  local function poly_recurrence(fn, x, n, need, q1, step)
    local steps_n = wick.where(need, n, 1)
    local top = steps_n:numel() > 0 and steps_n:max():item() or 1
    local p, q = wick.ones_like(q1), q1
    for j = 1, top - 1 do
      local go = steps_n:gt(j)
      local r = step(j, p, q)
      p, q = wick.where(go, q, p), wick.where(go, r, q)
      if j % 64 == 0 then
        local active = steps_n:gt(j):logical_and(q:eq(q))
        if not active:any():item() then break end
        if j >= POLY_MAX_STEPS then
          local i = active:flatten():nonzero():flatten()[1]:item()
          check.fail(fn, "n = %d at x = %.17g needs more than %d recurrence steps; that is not supported",
            n:flatten()[i]:item(), x:flatten()[i]:item(), POLY_MAX_STEPS)
        end
      end
    end
    return q
  end
  local function polynomial(fn, body)
    return function(t, u)
      local x, n = float_pair(fn, t, u, { "input", "n" })
      return wick.no_grad(function()
        return body(fn, x:to("float64"), poly_degree(n:to("float64"))):to(x.dtype)
      end)
    end
  end
  -- The Chebyshev kinds: spec.shift (y = 2x - 1), spec.ends(n, odd, high) the value at the upper
  -- (high) or lower end of x, spec.above (beyond that n, spec.trig(theta, n, odd, y, x) where
  -- |y| < 1, theta = acos y), spec.first(y) the degree-1 value; f_(k+1) = 2y f_k - f_(k-1)
  local function chebyshev(fn, spec)
    return polynomial(fn, function(_, x, n)
      local y = spec.shift and x + x - 1 or x
      local odd = parity_odd(n)
      local high = x:eq(1)
      local low = spec.shift and x:eq(0) or x:eq(-1)
      local inside = n:gt(spec.above):logical_and(y:abs():lt(1))
      local theta = wick.where(inside, y, 0):acos()
      local first = spec.first(y)
      local need = n:ge(2):logical_and(inside:logical_or(high):logical_or(low):logical_not())
      local r = poly_recurrence(fn, x, n, need, first, function(_, p, q) return fma(y + y, q, -p) end)
      r = wick.where(n:eq(0), 1, wick.where(n:eq(1), first, r))
      r = wick.where(inside, spec.trig(theta, n, odd, y, x), r)
      r = wick.where(low, spec.ends(n, odd, false), wick.where(high, spec.ends(n, odd, true), r))
      return wick.where(n:lt(0), 0, r)
    end)
  end
  local function signed(odd, v) return wick.where(odd, -v, v) end
  local CHEBYSHEV = {
    t = { above = 6, first = function(y) return y end,
      ends = function(n, odd, high) return high and wick.ones_like(n) or signed(odd, wick.ones_like(n)) end,
      trig = function(theta, n) return (n * theta):cos() end },
    u = { above = 8, first = function(y) return y + y end,
      ends = function(n, odd, high) return high and n + 1 or signed(odd, n + 1) end,
      trig = function(theta, n, _, y)
        local s = theta:sin()
        local m = (n + 1) * theta
        return wick.where(s:ne(0), m:sin() / s, (n + 1) * m:cos() / y)
      end },
    v = { above = 8, first = function(y) return y + y - 1 end,
      ends = function(n, odd, high) return high and wick.ones_like(n) or signed(odd, n + n + 1) end,
      trig = function(theta, n, odd)
        local h = theta / 2
        return wick.where(h:sin():ne(1), ((n + 0.5) * theta):cos() / h:cos(), signed(odd, n + n + 1))
      end },
    w = { above = 8, first = function(y) return y + y + 1 end,
      ends = function(n, odd, high) return high and n + n + 1 or signed(odd, wick.ones_like(n)) end,
      trig = function(theta, n, odd, _, x, shift)
        local h = theta / 2
        local edge = signed(odd, wick.ones_like(n))
        if not shift then edge = wick.where(x:gt(0), n + n + 1, edge) end
        return wick.where(h:cos():ne(1), ((n + 0.5) * theta):sin() / h:sin(), edge)
      end },
  }
  --- special.chebyshev_polynomial_t(x, n) (and _u, _v, _w): the Chebyshev polynomials of the first
  --- to fourth kinds; special.shifted_chebyshev_polynomial_t(x, n) (and _u, _v, _w) are them at 2x - 1;
  --- x and n tensors or numbers, broadcast; n is truncated to an integer, and n < 0 gives 0
  for kind, spec in pairs(CHEBYSHEV) do
    special["chebyshev_polynomial_" .. kind] = chebyshev("special.chebyshev_polynomial_" .. kind, spec)
    local shifted = { shift = true, above = kind == "w" and 4 or 6, first = spec.first, ends = spec.ends,
      trig = function(theta, n, odd, y, x) return spec.trig(theta, n, odd, y, x, true) end }
    special["shifted_chebyshev_polynomial_" .. kind] = chebyshev("special.shifted_chebyshev_polynomial_" .. kind, shifted)
  end
  -- Hermite's (PyTorch's: NaN beyond n = 512), Laguerre's and Legendre's, by their recurrences
  local function hermite(fn, physicists)
    return polynomial(fn, function(_, x, n)
      local first = physicists and x + x or x
      local need = n:ge(2):logical_and(n:le(512))
      local r = poly_recurrence(fn, x, n, need, first, physicists
        and function(j, p, q) return fma(x + x, q, -(p * (2 * j))) end
        or function(j, p, q) return fma(x, q, -(p * j)) end)
      r = wick.where(n:eq(0), 1, wick.where(n:eq(1), first, r))
      return wick.where(n:lt(0), 0, wick.where(n:gt(512), 0 / 0, r))
    end)
  end
  --- special.hermite_polynomial_h(x, n) and special.hermite_polynomial_he(x, n): the physicists' and
  --- probabilists' Hermite polynomials (NaN for n > 512, as PyTorch's)
  special.hermite_polynomial_h = hermite("special.hermite_polynomial_h", true)
  special.hermite_polynomial_he = hermite("special.hermite_polynomial_he", false)
  --- special.laguerre_polynomial_l(x, n): the Laguerre polynomials (1 at x = 0)
  special.laguerre_polynomial_l = polynomial("special.laguerre_polynomial_l", function(fn, x, n)
    local first = 1 - x
    local zero = x:eq(0)
    local r = poly_recurrence(fn, x, n, n:ge(2):logical_and(zero:logical_not()), first,
      function(j, p, q) return fma(first + 2 * j, q, -(p * j)) / (j + 1) end)
    r = wick.where(n:eq(0), 1, wick.where(n:eq(1), first, r))
    return wick.where(n:lt(0), 0, wick.where(zero, 1, r))
  end)
  --- special.legendre_polynomial_p(x, n): the Legendre polynomials (+-1 at x = +-1)
  special.legendre_polynomial_p = polynomial("special.legendre_polynomial_p", function(fn, x, n)
    local ends = x:abs():eq(1)
    local r = poly_recurrence(fn, x, n, n:ge(2):logical_and(ends:logical_not()), x,
      function(j, p, q) return fma(x * (2 * j + 1), q, -(p * j)) / (j + 1) end)
    r = wick.where(n:eq(0), 1, wick.where(n:eq(1), x, r))
    r = wick.where(ends, wick.where(x:gt(0):logical_or(parity_odd(n):logical_not()), 1, -1), r)
    return wick.where(n:lt(0), 0, r)
  end)

  wick.special = check.strict(special, "wick.special")
  return special
end
