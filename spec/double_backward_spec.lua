-- wick.autograd.grad and wick.autograd.backward (PyTorch's torch.autograd.grad
-- and torch.autograd.backward), create_graph (gradients that have a graph of
-- their own: second derivatives, gradient penalties, Laplacians) and
-- backward's inputs. Second derivatives are checked against finite
-- differences of first derivatives (support.gradgradcheck).
local wick = require("wick")
local support = require("spec.support")
local assert_error_has = support.assert_error_has
local gradgradcheck = support.gradgradcheck

local F64 = { dtype = "float64" }
local function leaf(values) return wick.tensor(values, F64):requires_grad_() end
local randn = support.randn64

describe("autograd.grad", function()
  it("gives d(outputs)/d(inputs) without touching any .grad", function()
    local x, w = leaf({ 1, 2, 3 }), leaf({ 0.5, -1, 2 })
    local y = (x * w):sum()
    local gx, gw = unpack(wick.autograd.grad(y, { x, w }))
    assert.same({ 0.5, -1, 2 }, gx:totable())
    assert.same({ 1, 2, 3 }, gw:totable())
    assert.is_nil(x.grad)
    assert.is_nil(w.grad)
    assert.is_nil(gx.grad_fn) -- no create_graph: plain tensors
    assert.is_false(gx.requires_grad)
  end)

  it("takes PyTorch's keywords as one table, and grad_outputs for non-scalar outputs", function()
    local x = leaf({ 1, 2, 3 })
    local y = x * x
    local g = wick.autograd.grad{ outputs = y, inputs = x, grad_outputs = wick.tensor({ 1, 0, 2 }, F64),
      retain_graph = true }[1]
    assert.same({ 2, 0, 12 }, g:totable())
    local g2 = wick.autograd.grad({ y }, { x }, { wick.ones_like(y) })[1]
    assert.same({ 2, 4, 6 }, g2:totable())
    assert_error_has(function() wick.autograd.grad(y, x) end, "only for scalar outputs")
  end)

  it("differentiates with respect to non-leaf tensors and sums over several outputs", function()
    local x = leaf({ 1, 2 })
    local h = x * 3
    local a, b = (h * h):sum(), h:sum()
    local g = wick.autograd.grad({ a, b }, h, { retain_graph = true })[1]
    assert.same({ 2 * 3 + 1, 2 * 6 + 1 }, g:totable())
    local g2 = wick.autograd.grad({ a, b }, { h }, { wick.tensor(2.0, F64), nil })[1] -- a nil entry: ones
    assert.same({ 2 * 6 + 1, 2 * 12 + 1 }, g2:totable())
  end)

  it("says which input did not take part, or gives nil or zeros as asked", function()
    local x, z = leaf({ 1, 2 }), leaf({ 5 })
    local y = (x * 2):sum()
    assert_error_has(function() wick.autograd.grad(y, { x, z }, { retain_graph = true }) end,
      "appears to not have been used in the graph (input 2). Set allow_unused = true")
    local gs = wick.autograd.grad(y, { x, z }, { allow_unused = true, retain_graph = true })
    assert.same({ 2, 2 }, gs[1]:totable())
    assert.is_nil(gs[2])
    assert.equal(2, gs.n)
    local gm = wick.autograd.grad(y, { x, z }, { materialize_grads = true })
    assert.same({ 0 }, gm[2]:totable())
    assert_error_has(function() wick.autograd.grad((x * 2):sum(), wick.tensor({ 1.0 })) end,
      "does not require grad")
    assert_error_has(function() wick.autograd.grad((x * 2):sum(), x, { create_grpah = true }) end,
      "unknown option 'create_grpah'")
    assert_error_has(function() wick.autograd.grad((x * 2):sum(), "x") end, "inputs")
  end)

  it("frees the graph unless retain_graph (create_graph implies it)", function()
    local x = leaf({ 1, 2 })
    local y = (x:exp()):sum()
    wick.autograd.grad(y, x)
    assert_error_has(function() wick.autograd.grad(y, x) end, "backward through the graph a second time")
    local y2 = (x:exp()):sum()
    wick.autograd.grad(y2, x, { create_graph = true })
    wick.autograd.grad(y2, x) -- still there
  end)

  it("runs the hooks of non-leaf tensors and autograd.Function backwards", function()
    local x = leaf({ 1, 2 })
    local h = x * 2
    local seen
    h:register_hook(function(g) seen = g:clone(); return g * 10 end)
    local g = wick.autograd.grad((h * h):sum(), x)[1]
    assert.same({ 4, 8 }, seen:totable())
    assert.same({ 80, 160 }, g:totable())
  end)
end)

describe("create_graph", function()
  it("gives derivatives of any order", function()
    local x = wick.tensor(2.0, { requires_grad = true })
    local y = x ^ 3
    local d1 = wick.autograd.grad(y, x, { create_graph = true })[1]
    assert.equal(12, d1:item())
    assert.is_truthy(d1.grad_fn)
    local d2 = wick.autograd.grad(d1, x, { create_graph = true })[1]
    assert.equal(12, d2:item())
    local d3 = wick.autograd.grad(d2, x)[1]
    assert.equal(6, d3:item())
  end)

  it("differentiates elementwise ops, reductions and views twice", function()
    local x, y = randn(3, 4), randn(3, 4)
    gradgradcheck(function(a, b) return (a * b):exp() + a:tanh() * b:sigmoid() - (a / (b:abs() + 1)) end, { x, y })
    gradgradcheck(function(a) return (a:sin() * a:cos() + a:pow(2) * 0.5 + (a * a + 1):sqrt():log()) end, { x })
    gradgradcheck(function(a) return a:mean(2) * a:sum(1):unsqueeze(1):mean() + a:var(1):sum() end, { x })
    gradgradcheck(function(a) return a[{ {}, { 2, 3 } }] * a[{ 2, { 1, 2 } }] + a:t():reshape(2, 6):sum(1):reshape(3, 2) end, { x })
    gradgradcheck(function(a, b) return wick.where(a:gt(0), a * b, b * b) + a:clamp(-0.5, 0.5) * b end, { x, y })
    gradgradcheck(function(a) return wick.cat({ a * a, a:exp() }, 1):prod(1) end, { randn(2, 3) })
    gradgradcheck(function(a) return a:masked_fill(a:lt(0), 0) * a end, { x })
  end)

  it("differentiates index_select, embedding, gather and max along a dim twice", function()
    local x, I = randn(4, 3), support.I
    gradgradcheck(function(a) return a:index_select(1, I({ 3, 1, 3 })) * a:index_select(1, I({ 3, 1, 3 })) end, { x })
    gradgradcheck(function(a) return wick.nn.functional.embedding(I({ { 1, 2 }, { 4, 4 } }), a):exp() end, { x })
    gradgradcheck(function(a) return a:gather(2, I({ { 1, 3 }, { 2, 2 }, { 3, 1 }, { 1, 1 } })):pow(2) end, { x })
    gradgradcheck(function(a) local v = a:max(2); return v * v end, { x })
    gradgradcheck(function(a) local v = a:min(1, true); return (v * a):sin() end, { x })
  end)

  it("differentiates matrix products, linear, softmax and MSE twice", function()
    local F = wick.nn.functional
    local x, w, b = randn(4, 3), randn(5, 3), randn(5)
    gradgradcheck(function(a, ww, bb) return F.linear(a, ww, bb):tanh() end, { x, w, b })
    gradgradcheck(function(a, ww) return (a:mm(ww:t()) * a:sum()):relu() + F.gelu(a:mm(ww:t())) end, { x, w })
    gradgradcheck(function(a, ww) return wick.bmm(a:reshape(2, 2, 3), ww:t():unsqueeze(1):expand(2, 3, 5)) end, { x, w })
    gradgradcheck(function(a) return F.softmax(a * a, 2) + F.log_softmax(a:exp(), 1) end, { x })
    gradgradcheck(function(a, t) return F.mse_loss(a:sin(), t) end, { x, randn(4, 3) })
    gradgradcheck(function(a) return F.leaky_relu(a, 0.2) * F.elu(a) + F.silu(a) end, { x })
  end)

  it("differentiates an autograd.Function's backward when it is written with ops", function()
    local Cube = wick.autograd.Function:extend("Cube")
    function Cube.forward(ctx, x) ctx:save_for_backward(x); return x ^ 3 end
    function Cube.backward(ctx, grad) return grad * 3 * ctx.saved_tensors[1] ^ 2 end
    local x = leaf({ 1, -2 })
    local g = wick.autograd.grad(Cube.apply(x):sum(), x, { create_graph = true })[1]
    assert.same({ 3, 12 }, g:totable())
    local gg = wick.autograd.grad(g:sum(), x)[1]
    assert.same({ 6, -12 }, gg:totable())
  end)

  it("computes a Laplacian of a tanh MLP (a PINN's residual) that finite differences confirm", function()
    wick.manual_seed(1)
    local net = wick.nn.Sequential(wick.nn.Linear(2, 8), wick.nn.Tanh(), wick.nn.Linear(8, 1)):double()
    local p = randn(6, 2):requires_grad_()
    local u = net(p)
    local du = wick.autograd.grad(u, p, { grad_outputs = wick.ones_like(u), create_graph = true })[1]
    local lap = 0
    for d = 1, 2 do
      local ud = du[{ {}, { d, d } }]
      lap = lap + wick.autograd.grad(ud, p, { grad_outputs = wick.ones_like(ud), create_graph = true })[1][{ {}, { d, d } }]
    end
    local h, fd = 1e-4, 0
    for d = 1, 2 do
      local e = wick.zeros(6, 2, F64)
      e[{ {}, d }] = h
      local q = p:detach()
      fd = fd + wick.no_grad(function() return (net(q + e) - 2 * net(q) + net(q - e)) / (h * h) end)
    end
    support.assert_close((lap - fd):abs():max():item(), 0, 1e-5)
    -- the residual's gradient reaches the parameters
    local loss = (lap ^ 2):mean()
    loss:backward()
    assert.is_truthy(net[1].weight.grad)
    assert.is_true(net[1].weight.grad:abs():sum():item() > 0)
  end)

  it("trains with a WGAN-GP gradient penalty whose parameter gradients match finite differences", function()
    local F = wick.nn.functional
    local x = randn(3, 4)
    local w1, b1, w2 = randn(5, 4), randn(5), randn(1, 5)
    local function penalty(xx, ww1, bb1, ww2)
      local xi = xx:detach():requires_grad_()
      local d = F.linear(F.linear(xi, ww1, bb1):tanh(), ww2)
      local g = wick.autograd.grad{ outputs = d, inputs = xi, grad_outputs = wick.ones_like(d), create_graph = true,
        retain_graph = true }[1]
      return ((g:norm(2, 2) - 1) ^ 2):mean()
    end
    -- (with leaky_relu, as the original, the bias gets no gradient: a piecewise linear D's input
    -- gradient does not depend on it)
    support.gradcheck(penalty, { x, w1, b1, w2 }, { enable_grad = true, constant = { [1] = true } })
  end)

  it("leaves a gradient with a graph in .grad with backward{create_graph = true}", function()
    local x = leaf({ 1, 2 })
    ;(x ^ 3):sum():backward({ create_graph = true })
    assert.is_truthy(x.grad.grad_fn)
    assert.same({ 3, 12 }, x.grad:totable())
    local gg = wick.autograd.grad(x.grad:sum(), x)[1]
    assert.same({ 6, 12 }, gg:totable())
    x.grad = nil -- x.grad's graph holds x: a reference cycle, as in PyTorch, until .grad is cleared
  end)

  it("raises at the second backward through an op whose backward is a fused kernel, naming it", function()
    local x = randn(1, 2, 4, 8):requires_grad_()
    local att = function(a) return wick.nn.functional.scaled_dot_product_attention(a, a, a):pow(2) end
    local g = wick.autograd.grad(att(x):sum(), x, { create_graph = true })[1] -- first order works
    assert.is_truthy(g.grad_fn)
    assert_error_has(function() (g ^ 2):sum():backward() end, "Backward: a gradient of a gradient")
    -- without create_graph nothing is recorded and nothing raises
    local g2 = wick.autograd.grad(att(x):sum(), x)[1]
    assert.is_nil(g2.grad_fn)
  end)

  it("differentiates upsampling twice: its gradient's backward is the forward (MAML's upsample layer)", function()
    local F = wick.nn.functional
    local x = randn(1, 2, 3, 3):requires_grad_()
    local cases = {
      function(a) return F.interpolate(a, { scale_factor = 1.7, mode = "nearest" }) ^ 3 end,
      function(a) return F.interpolate(a, { size = { 5, 4 }, mode = "bilinear" }) ^ 3 end,
      function(a) return F.upsample_bilinear(a, { scale_factor = 2 }) ^ 3 end, -- align_corners = true
      function(a) return F.upsample_nearest(a, { scale_factor = 2 }) ^ 3 end,
    }
    for _, f in ipairs(cases) do assert.is_true(wick.autograd.gradgradcheck(f, { x })) end
    -- the gradient's graph reaches a weight through the upsampled gradient
    local w = randn(1, 2, 3, 3):requires_grad_()
    local g = wick.autograd.grad((F.upsample_nearest(w, nil, 2) ^ 3):sum(), { w }, { create_graph = true })[1]
    g:sum():backward()
    -- d/dw of sum_out 3 (w up)^2 = 6 w per output copy, 4 copies per input
    assert.is_true((w.grad - w:detach() * 24):abs():max():item() < 1e-12)
  end)

  it("differentiates cross_entropy twice, with weights, ignore_index, smoothing and every reduction", function()
    local F = wick.nn.functional
    local tg, w = support.I({ 2, 1, 3, 3 }), wick.tensor({ 0.5, 2, 1 }, F64)
    local cases = {
      function(a) return F.cross_entropy(a * a, tg) end,
      function(a) return F.cross_entropy(a:sin(), tg, { weight = w }) end,
      function(a) return F.cross_entropy(a:exp(), tg, { ignore_index = 3 }) end,
      function(a) return F.cross_entropy(a * 2, tg, { label_smoothing = 0.2, weight = w }) end,
      function(a) return F.cross_entropy(a:tanh(), tg, { reduction = "none", label_smoothing = 0.1 }) end,
      function(a) return F.cross_entropy(a, tg, { reduction = "sum", weight = w, ignore_index = 1 }) end,
    }
    for _, f in ipairs(cases) do
      local x = randn(4, 3)
      gradgradcheck(f, { x })
      -- the recorded first derivative is the fused kernel's
      local xr = x:clone():requires_grad_()
      local out = f(xr)
      local seed = wick.ones_like(out)
      local fused = wick.autograd.grad(out, xr, seed, { retain_graph = true })[1]
      local recorded = wick.autograd.grad(out, xr, seed, { create_graph = true })[1]
      assert.is_true((fused - recorded):abs():max():item() < 1e-12)
    end
  end)

  it("differentiates layer_norm twice (a critic with LayerNorm), its first derivative the fused kernel's", function()
    local F = wick.nn.functional
    gradgradcheck(function(a, w, b) return F.layer_norm(a, { 3 }, w, b):pow(2) end, { randn(4, 3), randn(3), randn(3) })
    gradgradcheck(function(a) return F.layer_norm(a, { 2, 3 }):sin() end, { randn(2, 2, 3) })
    gradgradcheck(function(a, w) return F.layer_norm(a * a, { 3 }, w, nil, 1e-3):exp() end, { randn(4, 3), randn(3) })
    local x, w = randn(3, 5):requires_grad_(), randn(5):requires_grad_()
    local y = F.layer_norm(x, { 5 }, w):pow(3):sum()
    local fused = wick.autograd.grad(y, { x, w }, { retain_graph = true })
    local recorded = wick.autograd.grad(y, { x, w }, { create_graph = true })
    for i = 1, 2 do assert.is_true((fused[i] - recorded[i]):abs():max():item() < 1e-12) end
  end)

  it("differentiates batch norm, max and average pooling twice (MAML's inner loop through a conv block)", function()
    local F = wick.nn.functional
    local rm, rv = randn(3), randn(3):abs() + 0.5
    gradgradcheck(function(a, w, b) return F.batch_norm(a, nil, nil, w, b, { training = true }):pow(3) end,
      { randn(4, 3, 2), randn(3), randn(3) })
    gradgradcheck(function(a) return F.batch_norm(a * a, nil, nil, nil, nil, true, 0.1, 1e-3):sin() end, { randn(3, 3) })
    gradgradcheck(function(a, w, b) return F.batch_norm(a, rm, rv, w, b):pow(2) end, -- evaluation: running statistics
      { randn(2, 3, 2, 2), randn(3), randn(3) })
    gradgradcheck(function(a) return F.max_pool2d(a, 2):pow(2) end, { randn(2, 2, 4, 4) })
    gradgradcheck(function(a) return F.max_pool2d(a * a, 3, { stride = 2, padding = 1 }):sin() end, { randn(2, 5, 5) })
    gradgradcheck(function(a) return F.avg_pool2d(a, 2):pow(2) end, { randn(1, 2, 4, 4) })
    gradgradcheck(function(a)
      return F.avg_pool2d(a:exp(), 3, { stride = 2, padding = 1, ceil_mode = true, count_include_pad = false }):pow(2)
    end, { randn(1, 1, 6, 5) })
    -- the recorded first derivatives are the fused kernels'
    for _, training in ipairs({ true, false }) do
      local x, w, b = randn(4, 3, 3):requires_grad_(), randn(3):requires_grad_(), randn(3):requires_grad_()
      local y = F.max_pool1d(F.batch_norm(x, rm:clone(), rv:clone(), w, b, { training = training }), 2):pow(3):sum()
      local fused = wick.autograd.grad(y, { x, w, b }, { retain_graph = true })
      local recorded = wick.autograd.grad(y, { x, w, b }, { create_graph = true })
      for i = 1, 3 do assert.is_true((fused[i] - recorded[i]):abs():max():item() < 1e-12) end
    end
  end)

  it("differentiates conv2d twice (a WGAN-GP penalty through a convolutional critic)", function()
    local F = wick.nn.functional
    gradgradcheck(function(a, w, b) return F.conv2d(a, w, b):tanh() end, { randn(2, 2, 5, 5), randn(3, 2, 3, 3), randn(3) })
    gradgradcheck(function(a, w) return F.conv2d(a, w, nil, { stride = 2, padding = 1 }):pow(2) end,
      { randn(1, 2, 6, 5), randn(2, 2, 3, 2) })
    gradgradcheck(function(a, w) return F.conv2d(a, w, nil, { padding = 2, dilation = 2 }):sin() end,
      { randn(1, 1, 7, 7), randn(2, 1, 3, 3) })
    gradgradcheck(function(a, w) return F.conv2d(a, w, nil, { stride = { 2, 1 }, padding = { 0, 1 } }):exp() end,
      { randn(2, 5, 5), randn(2, 2, 2, 3) }) -- unbatched
  end)

  it("differentiates grouped and transposed convolutions twice (StyleGAN2's path-length penalty)", function()
    local F = wick.nn.functional
    gradgradcheck(function(a, w, b) return F.conv2d(a, w, b, { groups = 2, stride = 2, padding = 1 }):tanh() end,
      { randn(2, 4, 5, 5), randn(4, 2, 3, 3), randn(4) })
    gradgradcheck(function(a, w) return F.conv2d(a, w, nil, { groups = 3, dilation = 2, padding = 1 }):pow(2) end,
      { randn(6, 6, 6), randn(3, 2, 2, 3) }) -- unbatched, two channels per group
    gradgradcheck(function(a, w, b)
      return F.conv_transpose2d(a, w, b, { stride = 2, padding = 1, output_padding = 1 }):sin()
    end, { randn(1, 2, 3, 3), randn(2, 3, 3, 3), randn(3) })
    gradgradcheck(function(a, w) return F.conv_transpose2d(a, w, nil, { groups = 2, dilation = 2 }):pow(2) end,
      { randn(4, 3, 2), randn(4, 1, 2, 2) }) -- unbatched, grouped
  end)
end)

describe("backward's inputs and autograd.backward", function()
  it("accumulates only into the inputs named", function()
    local x, w = leaf({ 1, 2 }), leaf({ 3, 4 })
    ;(x * w):sum():backward({ inputs = { w } })
    assert.is_nil(x.grad)
    assert.same({ 1, 2 }, w.grad:totable())
    wick.autograd.backward((x * w):sum(), { inputs = x })
    assert.same({ 3, 4 }, x.grad:totable())
    assert.same({ 1, 2 }, w.grad:totable())
    assert_error_has(function() (x * w):sum():backward({ inputs = {} }) end, "should not be empty")
  end)

  it("backpropagates several outputs with their gradients at once", function()
    local x = leaf({ 1, 2 })
    local a, b = x * 2, x * x
    wick.autograd.backward({ a, b }, { wick.ones(2, F64), wick.tensor({ 1, 10 }, F64) })
    assert.same({ 2 + 2, 2 + 40 }, x.grad:totable())
    assert_error_has(function() wick.autograd.backward({ x * 2 }, { wick.ones(3, F64) }) end, "gradient has shape")
  end)
end)

describe("grad_outputs with a leading nil", function()
  it("is a list ({nil, g}: the scalar output's gradient implied), not an options table", function()
    local x = wick.tensor({ 1, 2 }):requires_grad_()
    local a, b = (x * 2):sum(), x * 3
    local g = wick.autograd.grad({ a, b }, x, { nil, wick.ones(2) })
    assert.are.same({ 5, 5 }, g[1]:totable())
  end)
end)

describe("double backward through cumsum", function()
  it("differentiates the reverse scan again (gradgradcheck)", function()
    local x = wick.randn({ 2, 5 }, { dtype = "float64" }):requires_grad_(true)
    assert.is_true(wick.autograd.gradgradcheck(function(t) return t:cumsum(2):pow(2) end, { x }))
    local y = wick.arange(1, 6, { dtype = "float64" }):requires_grad_(true)
    local g = wick.autograd.grad(y:cumsum(1):pow(2):sum(), { y }, nil, { create_graph = true })[1]
    g:sum():backward()
    -- d/dy_j sum_i sum_{k >= i} 2 S_k with S = cumsum(y): sum_k 2 k [j <= k] ... PyTorch's [30, 28, 24, 18, 10] for y = 1..5
    assert.are.same({ 30, 28, 24, 18, 10 }, y.grad:totable())
  end)
end)

describe("double backward through strided slices", function()
  it("diagonal and x[{{a, b, step}}]: the spread is index_add, differentiable again (PyTorch's hessian 315)", function()
    local A = wick.tensor({ { 2, 1 }, { 1, 3 } }, { dtype = "float64" })
    local h = wick.autograd.functional.hessian(function(t) return wick.diagonal(A * t):pow(3):sum() end,
      wick.tensor(1.5, { dtype = "float64" }))
    assert.are.equal(315, h:item()) -- d^2/dt^2 (8 + 27) t^3 = 6 * 35 * 1.5
    local x = wick.tensor({ 1, 2, 3, 4, 5, 6, 7 }, { dtype = "float64" }):requires_grad_()
    local z = x[{ { 1, 7, 3 } }] -- elements 1, 4, 7
    local g = wick.autograd.grad((z * z * z):sum(), x, { create_graph = true })[1]
    assert.are.same({ 3, 0, 0, 48, 0, 0, 147 }, g:totable())
    g:sum():backward()
    assert.are.same({ 6, 0, 0, 24, 0, 0, 42 }, x.grad:totable())
  end)
end)

describe("a gradient penalty alone through relu and leaky_relu (WGAN-GP's critic)", function()
  it("gives the biases reached only through the masks zeros, as PyTorch's, and the last bias none", function()
    for _, act in ipairs({ wick.nn.ReLU(), wick.nn.LeakyReLU(0.2) }) do
      wick.manual_seed(0)
      local D = wick.nn.Sequential(wick.nn.Linear(3, 4), act, wick.nn.Linear(4, 1))
      local x = wick.randn(5, 3, { requires_grad = true })
      local g = wick.autograd.grad(D(x):sum(), x, { create_graph = true })[1]
      ;((g:norm(2, 2) - 1) ^ 2):mean():backward()
      assert.is_not_nil(D[1].bias.grad)
      assert.are.equal(0, D[1].bias.grad:abs():sum():item())
      assert.is_true(D[1].weight.grad:abs():sum():item() > 0)
      assert.is_nil(D[3].bias.grad)
      local inf = wick.tensor({ math.huge, -1 }, { requires_grad = true }) -- the zero edge stays 0 at inf
      local gi = wick.autograd.grad(act(inf):sum(), inf, { create_graph = true })[1]
      assert.is_false(gi:isnan():any())
    end
    local F = wick.nn.functional
    assert.is_true(wick.autograd.gradgradcheck(function(a) return F.leaky_relu(a, 0.1):pow(3) end,
      { wick.randn(6, { dtype = "float64", requires_grad = true }) }))
  end)
end)

describe("gradients of gradients through in-place writes to views (CopySlices, AsStrided)", function()
  it("match the numerical ones: mul_ by a tensor, an in-place activation, exp_, a copy_", function()
    local F = wick.nn.functional
    local a = wick.randn(6, { dtype = "float64", requires_grad = true })
    local cases = {
      function(x) local b = x * 2; b:narrow(1, 2, 3):mul_(x:narrow(1, 1, 3)); return b ^ 3 end,
      function(x) local b = (x * 2):reshape(2, 3); F.leaky_relu(b[2], 0.1, true); return b ^ 3 end,
      function(x) local b = (x * 2):view(2, 3); local v = b:select(1, 2); v:exp_(); return v ^ 2 end,
      function(x) local b = x * 2; b:narrow(1, 2, 3):mul_(3); return b ^ 3 end,
      function(x) local b = x * 2; b:narrow(1, 2, 3):copy_(x:narrow(1, 1, 3) ^ 2); return b ^ 3 end,
    }
    for i, f in ipairs(cases) do
      local ok, err = pcall(wick.autograd.gradgradcheck, f, { a })
      assert.is_true(ok and err, ("case %d: %s"):format(i, tostring(err)))
    end
    local x = wick.randn(2, 3, 4, 4, { dtype = "float64", requires_grad = true })
    assert.is_true(wick.autograd.gradgradcheck(function(t)
      local y = F.instance_norm(t):reshape(2, 3, 16) -- a view: the in-place relu writes through it
      F.relu(y, true)
      return y:pow(2)
    end, { x }))
  end)
end)
