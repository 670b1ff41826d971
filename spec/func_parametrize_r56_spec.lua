-- Conformance fixes in wick.func, autograd.functional and nn.utils.parametrize (lua/wick/func.lua,
-- nn/parametrize.lua, nn/reparam.lua): errors and values checked against PyTorch 2.15's
-- (numbers printed by torch with float64).
local wick = require("wick")
local nn = wick.nn
local support = require("spec.support")
local AF = wick.autograd.functional
local P = nn.utils.parametrize

local F64 = { dtype = "float64" }
local function near(a, b, tol) return (a - b):abs():max():item() < (tol or 1e-13) end
local function W(n, k) return (wick.arange(n * k, F64):reshape(n, k) * 0.37):sin() * 0.5 end

describe("func.vjp's vjp_fn", function()
  it("refuses a cotangent of another shape, as PyTorch's (no broadcasting)", function()
    local x = wick.tensor({ 1, 2, 3 }, F64)
    local _, fn = wick.func.vjp(function(a) return a:sin() end, x)
    support.assert_error_has(function() fn(wick.ones(2, 3, F64)) end,
      "Mismatch in shape: grad_output[1] has a shape of [2, 3] and output[1] has a shape of [3].")
    support.assert_error_has(function() fn(wick.tensor({ 2 }, F64)) end, "grad_output[1] has a shape of [1]")
    support.assert_error_has(function() fn(wick.tensor(2, F64)) end, "grad_output[1] has a shape of [] and")
    assert.is_true(near(fn(wick.ones(3, F64)), wick.tensor({ 0.5403023058681398, -0.4161468365471424, -0.9899924966004454 }, F64)))
  end)
end)

describe("autograd.functional's strict mode", function()
  local x = wick.tensor({ 1, 2, 3 }, F64)
  local v = wick.ones(3, F64)
  it("jvp: PyTorch's checks", function()
    support.assert_error_has(function() AF.jvp(function() return wick.ones(3, F64) end, x, v, { strict = true }) end,
      "Output 0 of the user-provided function does not require gradients. The outputs must be computed in a "
        .. "differentiable manner from the input when running in strict mode.")
    support.assert_error_has(function() AF.jvp(function(a) return a * 2 end, { x, x }, { v, v }, { strict = true }) end,
      "The output of the user-provided function is independent of input 1. This is not allowed in strict mode.")
    support.assert_error_has(function() AF.jvp(function(a) return a * 2 end, x, v, { strict = true, create_graph = true }) end,
      "The jacobian of the user-provided function is independent of input 0. This is not allowed in strict mode when create_graph=True.")
    local out, jv = AF.jvp(function(a) return a:sin() end, x, v, { strict = true, create_graph = true })
    assert.is_true(jv.requires_grad)
    assert.is_true(near(jv, wick.tensor({ 0.5403023058681398, -0.4161468365471424, -0.9899924966004454 }, F64)))
    assert.is_true(near(out, x:sin()))
  end)
  it("hvp and vhp: PyTorch's checks", function()
    for _, name in ipairs({ "hvp", "vhp" }) do
      support.assert_error_has(function() AF[name](function(a) return (a * 2):sum() end, x, v, { strict = true }) end,
        "While computing the hessian, found that the jacobian of the user-provided function with respect to input 0 is "
          .. "independent of the input. This is not allowed in strict mode. You should ensure that your function is twice "
          .. "differentiable and that the jacobian depends on the inputs (this would be violated by a linear function for example).")
      support.assert_error_has(function()
        AF[name](function(a, b) return (a * a):sum() + b:sum() end, { x, x }, { v, v }, { strict = true })
      end, "with respect to input 1 is independent of the input")
      support.assert_error_has(function() AF[name](function() return wick.tensor(1, F64) end, x, v, { strict = true }) end,
        "Output 0 of the user-provided function does not require gradients")
      support.assert_error_has(function()
        AF[name](function(a) return (a * a):sum() end, x, v, { strict = true, create_graph = true })
      end, "The hessian of the user-provided function is independent of input 0. This is not allowed in strict mode when create_graph=True.")
      local out, hv = AF[name](function(a, b) return (a * a * b):sum() end, { x, x + 1 },
        { v, wick.tensor({ 1, -1, 2 }, F64) }, { strict = true })
      assert.are.equal(50, out:item())
      assert.is_true(near(hv[1], wick.tensor({ 6, 2, 20 }, F64)))
      assert.is_true(near(hv[2], wick.tensor({ 2, 4, 6 }, F64)))
    end
  end)
  it("vjp, jacobian and hessian: PyTorch's messages", function()
    support.assert_error_has(function() AF.vjp(function() return wick.ones(3, F64) end, x, v, { strict = true }) end,
      "Output 0 of the user-provided function does not require gradients")
    support.assert_error_has(function() AF.vjp(function(a) return a * 2 end, { x, x }, v, { strict = true }) end,
      "The output of the user-provided function is independent of input 1. This is not allowed in strict mode.")
    support.assert_error_has(function() AF.jacobian(function(a) return a * 2 end, x, { strict = true, create_graph = true }) end,
      "The jacobian of the user-provided function is independent of input 0. This is not allowed in strict mode when create_graph=True.")
    support.assert_error_has(function() AF.hessian(function(a) return (a * 2):sum() end, x, { strict = true }) end,
      "While computing the hessian, found that the jacobian of the user-provided function with respect to input 0 is "
        .. "independent of the input. This is not allowed in strict mode.")
    support.assert_error_has(function()
      AF.hessian(function(a, b) return (a * a):sum() + b:sum() end, { x, x }, { strict = true })
    end, "with respect to input 1 is independent of the input")
    support.assert_error_has(function() AF.hessian(function() return wick.tensor(1, F64) end, x, { strict = true }) end,
      "Output 0 of the user-provided function does not require gradients")
    assert.is_true(near(AF.hessian(function(a) return (a ^ 3):sum() end, x, { strict = true }), wick.diag(wick.tensor({ 6, 12, 18 }, F64))))
  end)
end)

describe("autograd.functional.jacobian's and hessian's options", function()
  local x = wick.tensor({ 1, 2, 3 }, F64)
  local function f(a) return a * 2 end
  local function g(a) return (a ^ 3):sum() end
  it("refuses PyTorch's refused combinations", function()
    support.assert_error_has(function() AF.jacobian(f, x, { strategy = "foo" }) end,
      'Expected strategy to be either "forward-mode" or "reverse-mode". Hint:')
    support.assert_error_has(function() AF.jacobian(f, x, { strict = true, vectorize = true }) end,
      "torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not supported together. "
        .. "Please either set `strict=False` or `vectorize=False`.")
    support.assert_error_has(function() AF.jacobian(f, x, { strategy = "forward-mode" }) end,
      "Computing Jacobian using forward-AD or forward-over-reverse Hessian isonly implemented for `vectorize=True`.")
    support.assert_error_has(function() AF.jacobian(f, x, { strategy = "forward-mode", vectorize = true, create_graph = true }) end,
      '`create_graph=True` and `strategy="forward-mode"` are not supported together (yet).')
    support.assert_error_has(function() AF.hessian(g, x, { outer_jacobian_strategy = "foo" }) end,
      'Expected strategy to be either "forward-mode" or "reverse-mode".')
    support.assert_error_has(function() AF.hessian(g, x, { outer_jacobian_strategy = "forward-mode" }) end,
      "isonly implemented for `vectorize=True`")
    support.assert_error_has(function() AF.hessian(g, x, { strict = true, vectorize = true }) end,
      "`strict=True` and `vectorized=True` are not supported together")
  end)
  it("computes the same values with vectorize and forward-mode", function()
    assert.is_true(AF.jacobian(f, x, { strategy = "forward-mode", vectorize = true }):equal(wick.eye(3, F64) * 2))
    assert.is_true(near(AF.hessian(g, x, { outer_jacobian_strategy = "forward-mode", vectorize = true }),
      wick.diag(wick.tensor({ 6, 12, 18 }, F64))))
  end)
end)

describe("func.grad's negative argnums and jacrev's chunk_size", function()
  local x = wick.tensor({ 1, 2, 3 }, F64)
  local function f(a, b) return (a * b):sum() end
  it("counts negative argnums from the end, as PyTorch's", function()
    assert.is_true(wick.func.grad(f, -1)(x, x * 2):equal(x))
    local gs = wick.func.grad(f, { -1, 1 })(x, x * 2)
    assert.is_true(gs[1]:equal(x))
    assert.is_true(gs[2]:equal(x * 2))
    support.assert_error_has(function() wick.func.grad(f, -3)(x, x * 2) end, "Got argnum=-3, but only 2 positional inputs")
    support.assert_error_has(function() wick.func.grad(f, 3)(x, x * 2) end, "Got argnum=3, but only 2 positional inputs")
    support.assert_error_has(function() wick.func.grad(f, 0)(x, x * 2) end, "argnums count from 1")
  end)
  it("takes jacrev's chunk_size (the same Jacobian)", function()
    local J = wick.func.jacrev(function(a) return a:sin() end, -1, { chunk_size = 2 })(x)
    assert.is_true(near(J, wick.diag(wick.tensor({ 0.5403023058681398, -0.4161468365471424, -0.9899924966004454 }, F64))))
    assert.is_true(wick.func.jacrev(function(a) return a * 2 end, 1, { chunk_size = 1 })(x):equal(wick.eye(3, F64) * 2))
    support.assert_error_has(function() wick.func.jacrev(function(a) return a end, 1, { chunk_size = 0 }) end,
      "jacrev: `chunk_size` should be greater than 0.")
    support.assert_error_has(function() wick.func.jacrev(function(a) return a end, 1, { chunk_size = -1 }) end,
      "`chunk_size` should be greater than 0.")
    support.assert_error_has(function() wick.func.jacrev(function(a) return a end, 1, { chunk_size = 1.5 }) end,
      "expected an integer for argument 'chunk_size'")
  end)
end)

describe("func.functional_call's keys", function()
  it("ignores an unexpected key unless strict, and lists both kinds strictly, as PyTorch's", function()
    local m = nn.Linear(2, 2):double()
    local y = wick.func.functional_call(m, { foo = wick.zeros(1, F64) }, { wick.ones(2, F64) })
    assert.is_true(near(y, m(wick.ones(2, F64))))
    support.assert_error_has(function()
      wick.func.functional_call(m, { foo = wick.zeros(1, F64) }, { wick.zeros(2, F64) }, { strict = true })
    end, "Error(s) in reparametrizing for Linear:\n\tUnexpected key(s): 'foo'.\n\tMissing key(s): 'bias', 'weight'.")
    support.assert_error_has(function()
      wick.func.functional_call(m, { weight = wick.zeros(2, 2, F64) }, { wick.zeros(2, F64) }, { strict = true })
    end, "Error(s) in reparametrizing for Linear:\n\tMissing key(s): 'bias'.")
    local z = wick.func.functional_call(m, { weight = wick.zeros(2, 2, F64), bias = wick.ones(2, F64) }, { wick.ones(2, F64) },
      { strict = true })
    assert.is_true(z:equal(wick.ones(2, F64)))
  end)
end)

describe("parametrize's right_inverse, as PyTorch's register_parametrization", function()
  it("takes orthogonal without the trivialization (matrix_exp, cayley): the weight is the original", function()
    local cases = {
      { 4, 4, "matrix_exp", { 0.7738971409813454, -0.5393315823844549, -0.18709118720951787, 0.27422900483375706,
        0.3257783677038275, 0.7663517774971698, -0.05388534786069456, 0.5510624080347798, -0.05452980296119101,
        -0.19281422610273186, 0.8994696806956064, 0.3883342224305784, -0.5403500447914694, -0.2909451350031705,
        -0.3912129221585207, 0.6858026006425134 } },
      { 4, 4, "cayley", { 0.800979689071752, -0.5079112091623158, -0.16542760281278315, 0.270354303700551,
        0.3210222854134729, 0.794376440963498, -0.045110274810463195, 0.5136884517064807, -0.046024549175027366,
        -0.17078634812857474, 0.9108732199872389, 0.3728588758179429, -0.5032474250661056, -0.286049465901172,
        -0.37537814060520347, 0.7238846481158229 } },
      { 5, 3, "cayley", { 0.7710564816420356, -0.4908428005458748, -0.330206090591621, 0.2134014247789006,
        0.777361579131397, -0.3987920283940634, 0.23064899172799563, 0.018598146260300225, 0.775949610645547,
        -0.15736255030820018, -0.21616727020649476, -0.2872008980188525, -0.5310082903265246, -0.32818918429737454,
        -0.21759297263867525 } },
      { 3, 5, "matrix_exp", { 0.7288344707705561, 0.1060010875033618, 0.502702918614009, 0.296878336918161,
        0.34163886247084324, -0.18037726630443612, 0.9453469745234109, 0.19548289924650156, -0.008933080952042436,
        -0.18838730245655466, -0.05421076605766461, -0.2477345315848961, 0.7132459309713925, -0.49399108155082283,
        -0.4277170186055883 } },
    }
    for _, c in ipairs(cases) do
      local m = nn.Linear(c[2], c[1]):double()
      wick.no_grad(function() m.weight:copy_(W(c[1], c[2])) end)
      nn.utils.parametrizations.orthogonal(m, "weight", c[3], { use_trivialization = false })
      assert.is_true(m.parametrizations.weight.original:equal(W(c[1], c[2])))
      assert.is_true(near(m.weight, wick.tensor(c[4], F64):reshape(c[1], c[2])), c[3])
      support.assert_error_has(function() m.weight = wick.eye(c[1], c[2], F64) end,
        "It is not possible to assign to the matrix exponential or the Cayley parametrizations when use_trivialization=False.")
    end
    local m = nn.Linear(4, 4):double()
    nn.utils.parametrizations.orthogonal(m, { use_trivialization = false })
    assert.is_true(near(m.weight:t():matmul(m.weight), wick.eye(4, F64), 1e-12))
  end)

  it("treats a right_inverse raising NotImplementedError as the identity at registration only", function()
    local NI = nn.Module:extend("NotInvertible")
    function NI:forward(X) return X * 2 end
    function NI:right_inverse() error("NotInvertible: no inverse (PyTorch's NotImplementedError)") end
    local m = nn.Linear(2, 2):double()
    wick.no_grad(function() m.weight:copy_(W(2, 2)) end)
    P.register_parametrization(m, "weight", NI())
    assert.is_true(near(m.weight, wick.tensor({ { 0.0, 0.361615431964962 }, { 0.674287911628145, 0.8956986856800476 } }, F64)))
    support.assert_error_has(function() m.weight = wick.ones(2, 2, F64) end, "no inverse")
    -- another error is raised
    local Boom = nn.Module:extend("Boom")
    function Boom:forward(X) return X end
    function Boom:right_inverse() error("boom") end
    support.assert_error_has(function() P.register_parametrization(nn.Linear(2, 2), "weight", Boom()) end, "boom")
    -- on a chain: NotImplementedError skipped, a wrong shape refused
    local Sym = nn.Module:extend("Sym")
    function Sym:forward(X) return X:triu() + X:triu(1):t() end
    m = nn.Linear(2, 2):double()
    wick.no_grad(function() m.weight:copy_(W(2, 2)) end)
    P.register_parametrization(m, "weight", Sym())
    P.register_parametrization(m, "weight", NI())
    assert.is_true(near(m.weight, wick.tensor({ { 0.0, 0.361615431964962 }, { 0.361615431964962, 0.8956986856800476 } }, F64)))
    local Bad = nn.Module:extend("Bad")
    function Bad:forward(X) return X * 2 end
    function Bad:right_inverse(X) return X[1] end
    support.assert_error_has(function() P.register_parametrization(m, "weight", Bad()) end,
      "The tensor returned by parametrization.right_inverse must have the same shape as module.weight")
    assert.are.equal(2, #m.parametrizations.weight)
  end)

  it("refuses an assignment through a parametrization without right_inverse, leaving the original", function()
    local Sym = nn.Module:extend("Sym")
    function Sym:forward(X) return X:triu() + X:triu(1):t() end
    local m = nn.Linear(2, 2):double()
    P.register_parametrization(m, "weight", Sym())
    local before = m.parametrizations.weight.original:clone()
    support.assert_error_has(function() m.weight = wick.ones(2, 2, F64) * 5 end,
      "parametrization Sym does not implement right_inverse.")
    assert.is_true(m.parametrizations.weight.original:equal(before))
  end)

  it("takes a right_inverse's two Lua results as two originals", function()
    local Split = nn.Module:extend("Split")
    function Split:forward(a, b) return a + b * 2 end
    function Split:right_inverse(X) return X * 0.25, X * 0.75 end
    local m = nn.Linear(2, 2):double()
    wick.no_grad(function() m.weight:copy_(W(2, 2)) end)
    P.register_parametrization(m, "weight", Split())
    assert.is_true(m.parametrizations.weight.original0:_is_parameter())
    assert.is_true(near(m.weight, wick.tensor({ 0.0, 0.31641350296934173, 0.5900019226746269, 0.7837363499700416 }, F64):reshape(2, 2)))
    assert.is_true(near(m.parametrizations.weight.original0,
      wick.tensor({ 0.0, 0.04520192899562025, 0.08428598895351813, 0.11196233571000595 }, F64):reshape(2, 2)))
    m.weight = wick.tensor({ { 1, 2 }, { 3, 4 } }, F64)
    assert.is_true(near(m.weight, wick.tensor({ { 1.75, 3.5 }, { 5.25, 7 } }, F64)))
    assert.is_true(near(m.parametrizations.weight.original1, wick.tensor({ { 0.75, 1.5 }, { 2.25, 3 } }, F64)))
  end)
end)
