-- The special functions (src/core/scalar_math.h's erfc, erfinv, lgamma,
-- digamma, trigamma; lua/wick/special.lua): values against references that do
-- not come from wick (Python's math module, closed forms), identities, the
-- poles as PyTorch has them, and gradients against finite differences.
local wick = require("wick")
local support = require("spec.support")

local F64 = { dtype = "float64" }
local function t64(v) return wick.tensor(v, F64) end
local function close(got, want, tol, what)
  local ok, why = support.close(got, want, tol)
  assert(ok, (what or "") .. ": " .. tostring(why))
end

describe("special functions", function()
  it("lgamma, erfc: libm's values; lgamma(n) = log((n-1)!)", function()
    close(wick.lgamma(t64({ 1, 2, 5, 11, 0.5 })):totable(),
      { 0, 0, math.log(24), math.log(3628800), 0.5 * math.log(math.pi) }, 1e-14, "lgamma")
    close(t64({ -2.5 }):lgamma():item(), -0.05624371649767405, 1e-14, "lgamma(-2.5)") -- log(|Gamma(-2.5)|) = log(16 sqrt(pi) / 15)
    assert.are.equal(math.huge, t64({ 0 }):lgamma():item())
    assert.are.equal(math.huge, t64({ -3 }):lgamma():item())
    close(wick.erfc(t64({ 0, 1, 5, -2 })):totable(), { 1, 0.15729920705028513, 1.5374597944280349e-12,
      1.9953222650189528 }, 1e-15, "erfc")
    assert.are.equal("float32", wick.erfc(wick.tensor({ 1, 2 }, { dtype = "int64" })).dtype)
  end)

  it("digamma: -euler at 1, the recurrence, the reflection, PyTorch's poles", function()
    local euler = 0.57721566490153286
    close(t64({ 1 }):digamma():item(), -euler, 1e-15)
    close(t64({ 0.5 }):digamma():item(), -euler - 2 * math.log(2), 1e-15)
    local x = t64({ 0.3, 1.7, 4.2, 9.5, 10.5, 37 })
    close((x + 1):digamma():totable(), (x:digamma() + 1 / x):totable(), 1e-14, "psi(x+1) = psi(x) + 1/x")
    local neg = t64({ -0.3, -2.6 })
    close(neg:digamma():totable(), ((1 - neg):digamma() - math.pi / (neg * math.pi):tan()):totable(), 1e-13, "reflection")
    local poles = wick.digamma(t64({ 0, -0.0, -1, -4 })):totable()
    assert.are.equal(-math.huge, poles[1])
    assert.are.equal(math.huge, poles[2])
    assert.is_true(poles[3] ~= poles[3] and poles[4] ~= poles[4])
  end)

  it("polygamma(1, x): pi^2/6 at 1, the recurrence; polygamma(2, x) the same recurrence", function()
    close(wick.polygamma(1, t64({ 1 })):item(), math.pi ^ 2 / 6, 1e-15)
    local x = t64({ 0.2, 3.3, 12 })
    close(wick.polygamma(1, x + 1):totable(), (wick.polygamma(1, x) - 1 / (x * x)):totable(), 1e-13)
    assert.are.same(t64({ 0.7 }):digamma():totable(), t64({ 0.7 }):polygamma(0):totable())
    -- (psi2(x + 1) = psi2(x) + 2 / x^3; psi2(1) = -2 zeta(3))
    close(wick.polygamma(2, x + 1):totable(), (wick.polygamma(2, x) + 2 / (x * x * x)):totable(), 1e-13)
    close(wick.polygamma(2, t64({ 1 })):item(), -2 * 1.2020569031595942, 1e-15)
    assert.is_nil(rawget(wick.Tensor or {}, "trigamma"))
    assert.has_error(function() return x:trigamma() end)
  end)

  it("erfinv inverts erf to a few ulp, in the tails too; +-inf at +-1, NaN outside", function()
    local y = t64({ -0.999999, -0.5, 1e-12, 0.3, 0.9, 0.99999 })
    close(y:erfinv():erf():totable(), y:totable(), 1e-15, "erf(erfinv(y))")
    -- the far tail, where 1 - y is what erfc must give back
    local x = t64({ 1 - 1e-12 }):erfinv()
    close(x:erfc():item(), 1 - (1 - 1e-12), 1e-13, "erfc(erfinv(1 - 1e-12))")
    local edges = wick.erfinv(t64({ 1, -1, 1.5, 0 })):totable()
    assert.are.same({ math.huge, -math.huge }, { edges[1], edges[2] })
    assert.is_true(edges[3] ~= edges[3])
    assert.are.equal(0, edges[4])
    -- float32 rounds the double result
    close(wick.tensor({ 0.5 }):erfinv():item(), 0.47693627620446987, 1e-7)
  end)

  it("gradients: digamma, trigamma, sqrt(pi)/2 exp(y^2), -2/sqrt(pi) exp(-x^2) against finite differences", function()
    for _, case in ipairs({ { "lgamma", { 0.4, 2.5, 7 } }, { "digamma", { 0.4, 2.5, 7 } },
      { "erfinv", { -0.8, 0.1, 0.95 } }, { "erfc", { -1, 0.2, 2 } } }) do
      local name, vals = case[1], case[2]
      local x = t64(vals):requires_grad_()
      x[name](x):sum():backward()
      local h = 1e-6
      local fd = ((t64(vals) + h)[name](t64(vals) + h) - (t64(vals) - h)[name](t64(vals) - h)) / (2 * h)
      close(x.grad:totable(), fd:totable(), 1e-7, name .. "'")
    end
    local x = t64({ 1.5 }):requires_grad_()
    local g = wick.autograd.grad(x:digamma():sum(), x, { create_graph = true })
    assert.is_truthy(tostring(select(2, pcall(function() g[1]:sum():backward() end))):find("polygamma", 1, true))
  end)

  it("wick.special: torch.special's names; the normal CDF and its inverse; entr; an unknown name is an error", function()
    local s = wick.special
    local x = t64({ -40, -3, 0, 2 })
    close(s.ndtr(x):totable(), { 0, 0.0013498980316300945, 0.5, 0.97724986805182079 }, 1e-15, "ndtr")
    close(s.ndtri(t64({ 0.025, 0.5, 0.975 })):totable(), { -1.959963984540054, 0, 1.959963984540054 }, 1e-14, "ndtri")
    -- (references by mpmath at 30 digits)
    close(s.log_ndtr(t64({ -100, -40, -36.9, -20.5, 0 })):totable(), { -5005.52420869420508, -804.608442013753788,
      -685.332883165350612, -214.066728963263800, math.log(0.5) }, 1e-15, "log_ndtr")
    close(s.entr(t64({ 0, 0.5, 2 })):totable(), { 0, 0.5 * math.log(2), -2 * math.log(2) }, 1e-15, "entr")
    assert.are.equal(-math.huge, s.entr(t64({ -1 })):item())
    close(s.gammaln(t64({ 5 })):item(), math.log(24), 1e-15)
    close(s.expit(t64({ 0 })):item(), 0.5, 0)
    close(s.xlog1py(t64({ 0, 2 }), t64({ -1, 1 })):totable(), { 0, 2 * math.log(2) }, 1e-15, "xlog1py")
    -- p (p - 1) / 4 log(pi) + log Gamma(3) + log Gamma(2.5), Gamma(2.5) = 0.75 sqrt(pi)
    close(s.multigammaln(t64({ 3 }), 2):item(), 0.5 * math.log(math.pi) + math.log(2) + math.log(0.75 * math.sqrt(math.pi)), 1e-14)
    assert.has_error(function() return s.no_such_function end)
  end)

  it("sinc, signbit, copysign, heaviside", function()
    close(wick.sinc(t64({ 0, 0.5, 1 })):totable(), { 1, 2 / math.pi, 0 }, 1e-15, "sinc")
    assert.are.same({ true, false, true, false }, wick.signbit(t64({ -1, 0, -0.0, 2 })):totable())
    assert.are.same({ -2, 3, -0.5 }, wick.copysign(t64({ 2, -3, 0.5 }), t64({ -1, 1, -0.0 })):totable())
    assert.are.same({ 0, 0.5, 1 }, wick.heaviside(t64({ -2, 0, 3 }), t64({ 0.5 })):totable())
  end)
end)
