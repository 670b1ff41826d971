-- wick.autograd.functional and wick.func (lua/wick/func.lua) against closed
-- forms: the Jacobian of x -> A x is A, the Hessian of x'Ax is A + A', and
-- vjp / jvp / hvp are those matrices times the vector; vmap of grad gives
-- each sample's own gradient; functional_call leaves the module as it was.
local wick = require("wick")
local nn = wick.nn
local AF = wick.autograd.functional
local func = wick.func
local support = require("spec.support")

local F64 = { dtype = "float64" }
local function near(a, b, tol) return (a - b):abs():max():item() < (tol or 1e-10) end

describe("autograd.functional", function()
  wick.manual_seed(4)
  local A = wick.randn(3, 4, F64)
  local S = wick.randn(4, 4, F64)
  local x = wick.randn(4, F64)
  local function lin(v) return A:mv(v) end
  local function quad(v) return v:dot(S:mv(v)) end

  it("jacobian, hessian", function()
    assert.is_true(near(AF.jacobian(lin, x), A))
    assert.is_true(near(AF.hessian(quad, x), S + S:t()))
    -- several inputs: one Jacobian per input
    local J = AF.jacobian(function(a, b) return a * b end, { x, x * 2 })
    assert.is_true(near(J[1], wick.diag(x * 2)))
    assert.is_true(near(J[2], wick.diag(x)))
  end)

  it("vjp, jvp, hvp, vhp", function()
    local u, v = wick.randn(3, F64), wick.randn(4, F64)
    local out, g = AF.vjp(lin, x, u)
    assert.is_true(near(out, A:mv(x)))
    assert.is_true(near(g, A:t():mv(u)))
    local _, jv = AF.jvp(lin, x, v)
    assert.is_true(near(jv, A:mv(v)))
    local _, hv = AF.hvp(quad, x, v)
    assert.is_true(near(hv, (S + S:t()):mv(v)))
    local _, vh = AF.vhp(quad, x, v)
    assert.is_true(near(vh, (S + S:t()):mv(v)))
    assert.is_false(g.requires_grad) -- without create_graph, plain tensors
  end)

  it("refuses what PyTorch refuses", function()
    support.assert_error_has(function() AF.vjp(lin, x) end, "v can only be None")
    support.assert_error_has(function() AF.hessian(lin, x) end, "single Tensor with one element")
    support.assert_error_has(function() AF.jvp(lin, x, wick.zeros(3, F64)) end, "Mismatch in shape")
  end)
end)

describe("wick.func", function()
  it("grad, grad_and_value, jacrev, hessian", function()
    local x = wick.randn(5, F64)
    local function f(v) return (v * v):sum() end
    assert.is_true(near(func.grad(f)(x), x * 2))
    local g, value = func.grad_and_value(f)(x)
    assert.is_true(near(g, x * 2))
    assert.is_true(math.abs(value:item() - (x * x):sum():item()) < 1e-12)
    assert.is_true(near(func.hessian(f)(x), wick.eye(5, F64) * 2))
    -- argnums (1-based) and has_aux
    local h = function(a, b) return (a * b):sum(), "aux" end
    local gb, aux = func.grad(h, { argnums = 2, has_aux = true })(x, x * 3)
    assert.is_true(near(gb, x))
    assert.are.equal("aux", aux)
    assert.is_true(near(func.jacrev(function(v) return v:sin() end)(x), wick.diag(x:cos())))
  end)

  it("per-sample gradients: vmap(grad(loss)) with functional_call equals one backward per sample", function()
    wick.manual_seed(5)
    local model = nn.Linear(3, 2):double()
    local params = {}
    for name, p in model:named_parameters() do params[name] = p:detach() end
    local data, target = wick.randn(4, 3, F64), wick.randn(4, 2, F64)
    local function loss(p, d, t)
      local pred = func.functional_call(model, p, { d:unsqueeze(1) })
      return ((pred - t:unsqueeze(1)) ^ 2):mean()
    end
    local per = func.vmap(func.grad(loss), { false, 1, 1 })(params, data, target)
    assert.are.same({ 4, 2, 3 }, per.weight:size())
    for b = 1, 4 do
      model:zero_grad()
      local l = ((model(data[b]:unsqueeze(1)) - target[b]:unsqueeze(1)) ^ 2):mean()
      l:backward()
      assert.is_true(near(per.weight[b], model.weight.grad))
      assert.is_true(near(per.bias[b], model.bias.grad))
    end
    -- the module keeps its own parameters
    assert.is_true(rawequal(model:parameters()[1], model.weight))
    assert.is_true(model.weight.requires_grad)
  end)

  it("vmap maps over in_dims and stacks along out_dims; stack_module_state stacks an ensemble", function()
    local x = wick.randn(3, 4)
    local y = func.vmap(function(r) return r:sum() end)(x)
    assert.is_true(near(y, x:sum(2), 1e-6))
    local z = func.vmap(function(c) return c * 2 end, 2, 2)(x) -- over columns, stacked as columns
    assert.is_true(near(z, x * 2, 1e-6))
    support.assert_error_has(function() func.vmap(function(a, b) return a + b end)(wick.zeros(2), wick.zeros(3)) end,
      "same size in the mapped dimension")
    local models = { nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 2) }
    local params = func.stack_module_state(models)
    assert.are.same({ 3, 2, 2 }, params.weight:size())
    assert.is_true(params.weight.requires_grad)
  end)
end)

describe("wick.func on trees, and the rest of the tutorials' forms", function()
  it("jacrev and hessian of a dict of parameters, func.jvp, a nested vjp, zeros for unused inputs", function()
    local f = function(p, x) return (p.w * x):sum(1) end
    local x = wick.randn(3, 2, F64)
    local J = func.jacrev(f)({ w = wick.randn(3, 2, F64) }, x)
    assert.are.same({ 2, 3, 2 }, J.w:size())
    assert.is_true(near(J.w[1]:select(2, 1), x:select(2, 1))) -- d out[1] / d w[:, 1] = x[:, 1]
    local H = func.hessian(function(p) return (p.a * p.a * p.b):sum() end)({ a = wick.ones(2, F64), b = wick.ones(2, F64) * 3 })
    assert.is_true(near(H.a.a, wick.eye(2, F64) * 6))
    assert.is_true(near(H.a.b, wick.eye(2, F64) * 2))
    local out, jv = func.jvp(function(v) return v:sin() end, { x }, { wick.ones(3, 2, F64) })
    assert.is_true(near(out, x:sin()))
    assert.is_true(near(jv, x:cos()))
    local p = wick.randn(3, F64)
    local function g(u) local _, fn = func.vjp(function(q) return q:sin() end, p); return fn(u) end
    local _, gfn = func.vjp(g, wick.zeros(3, F64))
    assert.is_true(near(gfn(wick.ones(3, F64)), p:cos()))
    assert.are.same({ 0, 0 }, func.grad(function(_, y) return y:sum() end)(wick.ones(2), wick.ones(2)):tolist())
    support.assert_error_has(function() func.vmap(function(c) return c:sum():item() end)(wick.randn(2, 3)) end,
      "vmap stacks tensors")
  end)

  it("a function of several Lua results has one Jacobian per result; v by keyword", function()
    local x, y = wick.rand(3, F64), wick.rand(2, 2, F64)
    local J = AF.jacobian(function(a, b) return a:sin() * b:sum(), b:matmul(b) end, { x, y })
    assert.are.equal(2, #J)
    assert.are.same({ 2, 2, 2, 2 }, J[2][2]:size())
    local _, g = AF.vjp(function(v) return v * 2 end, x, { v = wick.ones(3, F64) })
    assert.are.same({ 2, 2, 2 }, g:tolist())
  end)
end)

describe("autograd.gradcheck and gradgradcheck", function()
  local A = wick.autograd
  it("pass for correct gradients and catch a wrong backward or a detached second derivative", function()
    local x = wick.randn(3, { dtype = "float64", requires_grad = true })
    local y = wick.randn(3, { dtype = "float64", requires_grad = true })
    assert.is_true(A.gradcheck(function(a, b) return (a:sin() * b):sum(), a * b end, { x, y }))
    assert.is_true(A.gradgradcheck(function(a, b) return a:sin() * b end, { x, y }))
    local Wrong = A.Function:extend("Wrong")
    function Wrong.forward(ctx, a) ctx:save_for_backward(a); return a * a end
    function Wrong.backward(ctx, g) return g * ctx.saved_tensors[1] end -- should be 2 a
    local ok, why = A.gradcheck(Wrong.apply, { x }, { raise_exception = false })
    assert.is_false(ok)
    assert.is_truthy(why:find("Jacobian mismatch", 1, true))
    support.assert_error_has(function() A.gradcheck(Wrong.apply, { x }) end, "Jacobian mismatch")
    local Flat = A.Function:extend("Flat") -- right once, but its backward is cut from the graph
    function Flat.forward(ctx, a) ctx:save_for_backward(a); return a * a end
    function Flat.backward(ctx, g) return g * 2 * ctx.saved_tensors[1]:detach() end
    assert.is_true(A.gradcheck(Flat.apply, { x }))
    assert.is_false((A.gradgradcheck(Flat.apply, { x }, { raise_exception = false })))
    -- the inputs are left as they were
    local before = x:clone()
    A.gradcheck(function(a) return a:exp() end, { x })
    assert.is_true(x:equal(before))
  end)
end)

describe("func.jvp over trees", function()
  it("jvp(grad(f), {params}, {v}) with lists and dicts of tensors: Hessian-vector products", function()
    local func = wick.func
    local x, v = wick.randn(3, { dtype = "float64" }), wick.randn(3, { dtype = "float64" })
    local _, want = wick.autograd.functional.hvp(function(a, b) return (a:sin() * b):sum() end, { x, x }, { v, v })
    local _, hv = func.jvp(func.grad(function(ps) return (ps[1]:sin() * ps[2]):sum() end), { { x, x } }, { { v, v } })
    local _, hd = func.jvp(func.grad(function(ps) return (ps.a:sin() * ps.b):sum() end), { { a = x, b = x } }, { { a = v, b = v } })
    for i, k in ipairs({ "a", "b" }) do
      assert.is_true((hv[i] - want[i]):abs():max():item() < 1e-14)
      assert.is_true((hd[k] - want[i]):abs():max():item() < 1e-14)
    end
    support.assert_error_has(function() func.jvp(function(t) return t end, { x, x }, { v }) end, "primals hold 2 tensor(s) but tangents 1")
  end)
end)

describe("func transforms nested with outer derivatives (torch.func's levels)", function()
  it("keep a result differentiable in what the function closes over or does not differentiate", function()
    wick.manual_seed(0)
    local model = wick.nn.Sequential(wick.nn.Linear(2, 4, { dtype = "float64" }), wick.nn.Tanh(),
      wick.nn.Linear(4, 1, { dtype = "float64" }))
    local x = wick.randn({ 3, 2 }, { dtype = "float64" })
    -- grad over x, then backward to the parameters: d/dW sum (du/dx)^2, against autograd.grad with create_graph
    local du = wick.func.grad(function(xx) return model(xx):sum() end)(x)
    assert.is_true(du.requires_grad)
    du:pow(2):sum():backward()
    local xr = x:clone():requires_grad_(true)
    local g = wick.autograd.grad(model(xr):sum(), { xr }, nil, { create_graph = true })[1]
    local want = wick.autograd.grad(g:pow(2):sum(), { model[1].weight })[1]
    assert.is_true((model[1].weight.grad - want):abs():max():item() < 1e-12)
    -- an argument not differentiated here, differentiated by an enclosing grad
    local params = {}
    for k, v in model:named_parameters() do params[k] = v:detach() end
    local function f(p, xx) return wick.func.functional_call(model, p, { xx }):sum() end
    local gp = wick.func.grad(function(p) return wick.func.grad(f, 2)(p, x):pow(2):sum() end)(params)
    assert.is_true((gp["1.weight"] - want):abs():max():item() < 1e-12)
    -- without anything outside to reach, results stay plain tensors
    local plain = wick.func.grad(function(xx) return xx:pow(3):sum() end)(x)
    assert.is_false(plain.requires_grad)
  end)
end)

describe("func.jacrev and func.jacfwd of several results", function()
  it("give one Jacobian per result, as PyTorch's tuple output", function()
    local x, y = wick.tensor({ 1, 2, 3 }, F64), wick.tensor({ 1, -1 }, F64)
    local function f(a) return (a * a):sum() * y, a:sin() end
    for _, jac in ipairs({ func.jacrev, func.jacfwd }) do
      local J = jac(f)(x)
      assert.are.same({ 2, 3 }, J[1]:size())
      assert.are.same({ 3, 3 }, J[2]:size())
      assert.is_true(near(J[2], wick.diag(x:cos()), 1e-12))
    end
    assert.has_error(function() func.grad(function(a) return a:sum(), a end)(x) end)
  end)
  it("vmap's randomness: 'error' (the default) refuses a draw, 'same' replays one, 'different' draws per sample", function()
    local f = function(x) return x + wick.rand(4) end
    local same = func.vmap(f, { randomness = "same" })(wick.zeros(3, 4))
    assert.are.equal(0, (same[1] - same[3]):abs():max():item())
    local diff = func.vmap(f, { randomness = "different" })(wick.zeros(3, 4))
    assert.is_true((diff[1] - diff[3]):abs():max():item() > 0)
    local ok, err = pcall(function() return func.vmap(f)(wick.zeros(3, 4)) end)
    assert.is_false(ok)
    assert.matches("randomness = 'error'", err, 1, true)
    -- a tree of in_dims (PyTorch's in_dims=({'x': 1},)): the columns
    local cols = func.vmap(function(d) return d.x end, { { x = 2 } })({ x = wick.arange(12):view(3, 4) })
    assert.are.same({ 4, 3 }, cols:size():totable())
    assert.are.same({ 0, 4, 8 }, cols[1]:tolist())
    ok, err = pcall(function() return func.vmap(function(d) return d end, { "x" })(wick.ones(3)) end)
    assert.is_false(ok)
    assert.matches("in_dims of argument 1 must be a dim, false, or a tree of them", err, 1, true)
  end)
  it("replace_all_batch_norm_modules_: batch norms stop tracking running statistics", function()
    local nn = wick.nn
    local net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU())
    assert.is_true(rawequal(net, func.replace_all_batch_norm_modules_(net)))
    assert.is_nil(net[2].running_mean)
    assert.is_false(net[2].track_running_stats)
    assert.is_nil(net:state_dict()["2.running_var"])
    net:eval() -- batch statistics even in eval mode: the normalised features have mean 0
    local h = net[2](net[1](wick.randn(6, 3, { dtype = "float32" })))
    assert.is_true(h:mean(1):abs():max():item() < 1e-5)
  end)
end)
