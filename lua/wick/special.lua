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
    local fact = 1
    for i = 2, n do fact = fact * i end
    return special.zeta(wick.full_like(x, n + 1), x) * ((n % 2 == 1) and fact or -fact)
  end
  function Tensor.polygamma_(t, n) return check.tensor(t, "polygamma_", "self"):copy_(t:polygamma(n)) end
  function wick.polygamma(n, t) return Tensor.polygamma(check.tensor(t, "polygamma", "input"), n) end

  --- t:mvlgamma(p): the multivariate log-gamma, p (p - 1) / 4 log(pi) + sum_{i < p} lgamma(t - i / 2)
  function Tensor.mvlgamma(t, p)
    local x = floating(t, "mvlgamma")
    check.int(p, "mvlgamma", "p", 1)
    if x:le((p - 1) / 2):any() then
      check.fail("mvlgamma", "all elements must be greater than (p-1)/2 = %g", (p - 1) / 2)
    end
    -- the p terms side by side in a new last dim, in blocks of at most 2^22 (a
    -- large p costs time in proportion, never memory beyond a block)
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
  --- special.ndtri(p): the standard normal quantile, sqrt 2 erfinv(2p - 1)
  function special.ndtri(t)
    local p = floating(t, "special.ndtri")
    return (p * 2 - 1):erfinv() * math.sqrt(2)
  end
  --- special.log_ndtr(x): log of the normal CDF, accurate far into both tails
  function special.log_ndtr(t)
    local x = floating(t, "special.log_ndtr")
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
    return wick.where(far, tail, r)
  end
  --- special.entr(x): -x log x (0 at 0, -inf below 0)
  function special.entr(t)
    local x = floating(t, "special.entr")
    local pos = x:gt(0)
    local safe = wick.where(pos, x, 1)
    local r = wick.where(pos, -safe * safe:log(), wick.where(x:eq(0), 0, -math.huge))
    return wick.where(x:ne(x), x, r)
  end
  --- special.xlog1py(x, y): x log1p(y), 0 where x is 0 (and y not NaN)
  function special.xlog1py(t, u)
    local x
    x, u = wick.ops._float_operands("special.xlog1py", t, u)
    local zero = x:eq(0):logical_and(u:eq(u))
    return wick.where(zero, x * 0, x * wick.where(zero, 0, u):log1p())
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
  --- special.spherical_bessel_j0(t): sin(t) / t, 1 at 0 (with a zero gradient there)
  function special.spherical_bessel_j0(t)
    local x = floating(t, "special.spherical_bessel_j0")
    local zero = x:eq(0)
    local safe = wick.where(zero, 1, x)
    return wick.where(zero, 1, safe:sin() / safe)
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
    local n = (wick.maximum(ss, wick.full_like(ss, 9)) - qs):ceil():clamp(0, math.huge)
    local terms = n:numel() > 0 and n:max():item() or 0
    if terms > ZETA_MAX_TERMS then
      check.fail(fn, "q = %g needs %d terms before the asymptotic sum; q below -%d is not supported", qs:min():item(),
        terms, ZETA_MAX_TERMS - 10)
    end
    local sum = wick.zeros_like(ss)
    for k = 0, terms - 1 do sum = sum + wick.where(n:gt(k), (qs + k):pow(-ss), 0) end
    local w = qs + n
    local r = sum + w:pow(1 - ss) / (ss - 1) + w:pow(-ss) / 2
    local t, fact = ss * w:pow(-ss - 1), 2
    for j = 1, #BERNOULLI do
      if j > 1 then
        t = t * (ss + 2 * j - 3) * (ss + 2 * j - 2) / (w * w)
        fact = fact * (2 * j - 1) * (2 * j)
      end
      r = r + t * (BERNOULLI[j] / fact)
    end
    -- (s = inf: 1 at q = 1, 0 above, inf below; q = inf: 0)
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

  wick.special = check.strict(special, "wick.special")
  return special
end
