-- Lines of public PyTorch programs ported in the fifty-seventh round (each worked
-- differently, or not at all, before), one describe per program or sweep; the
-- earlier rounds are spec/port_lines_spec.lua.
local wick = require("wick")
local nn = wick.nn
local F = nn.functional
local support = require("spec.support")

describe("the fifty-seventh round's lines, part 1 (functional_call)", function()
  it("functional_call(module, params, args, kwargs) calls module(args..., kwargs), as torch.func's", function()
    local M = nn.Module:extend("ScaledLinear")
    function M:init() M.super.init(self); self.lin = nn.Linear(3, 2) end
    function M:forward(x, opts) local y = self.lin(x); return opts and opts.scale and y * opts.scale or y end
    local m = M()
    local p = { ["lin.weight"] = wick.ones(2, 3), ["lin.bias"] = wick.zeros(2) }
    local x = wick.ones(1, 3)
    assert.are.same({ { 6, 6 } }, wick.func.functional_call(m, p, { x }, { scale = 2 }):tolist())
    assert.are.same({ { 9, 9 } }, wick.func.functional_call(m, p, x, { scale = 3 }, { strict = true }):tolist())
    assert.are.same({ { 3, 3 } }, wick.func.functional_call(m, p, x, { strict = true }):tolist())
    assert.are.same({ { 3, 3 } }, wick.func.functional_call(m, p, x, {}):tolist())
    support.assert_error_has(function() wick.func.functional_call(m, p, x, 5) end,
      "expected a table of keyword arguments for argument 'kwargs'")
  end)
end)

describe("the fifty-seventh round's lines, part 2 (vmap's trees of in_dims)", function()
  it("in_dims = {1, {a = 1, b = false}} is PyTorch's in_dims=(0, {'a': 0, 'b': None})", function()
    local f = function(x, p) return x * p.a + p.b end
    local x = wick.arange(6):view(2, 3):double()
    local p = { a = wick.tensor({ 1, 2 }, { dtype = "float64" }), b = wick.tensor({ 10, 20, 30 }, { dtype = "float64" }) }
    -- torch: vmap(f, (0, {'a': 0, 'b': None}))(x, p)
    assert.are.same({ { 10, 21, 32 }, { 16, 28, 40 } }, wick.func.vmap(f, { 1, { a = 1, b = false } })(x, p):tolist())
    local g = function(l) return l[1] + l[2] end
    assert.are.same({ { 1, 1, 1 }, { 1, 1, 1 } },
      wick.func.vmap(g, { { 1, 2 } })({ wick.ones(2, 3), wick.zeros(3, 2) }):tolist())
    support.assert_error_has(function() wick.func.vmap(f, { 1, { a = 1, c = false } })(x, p) end,
      "in_dims is not compatible with the structure of argument 2")
    support.assert_error_has(function() wick.func.vmap(f, { 1, { a = "x", b = false } })(x, p) end,
      "a tree of dims holds")
  end)
end)

describe("the fifty-seventh round's lines, part 3 (the R2D2 port)", function()
  it("wick.float_power(number, t): Ape-X's epsilon ladder, np.power(0.4, np.linspace(1, 8, n))", function()
    local eps = wick.float_power(0.4, wick.linspace(1, 8, 4))
    assert.are.equal("float64", eps.dtype)
    -- torch.float_power(0.4, torch.linspace(1, 8, 4))
    support.assert_close(eps, { 0.4, 0.04715560661647965, 0.00555912565951857, 0.0006553600000000003 }, 1e-14)
    local t = wick.tensor({ 1, 2 }, { dtype = "float64", requires_grad = true })
    wick.float_power(2, t):sum():backward()
    support.assert_close(t.grad, { 2 * math.log(2), 4 * math.log(2) }, 1e-15)
  end)
end)

describe("the fifty-seventh round's lines, part 4 (the preference-loss, NeuS and MACE ports)", function()
  it("a list of tensors read for a tensor's field (.shape, .dtype) says the list is one table", function()
    local chosen = wick.randn(4, 3):chunk(2, 1)
    support.assert_error_has(function() return chosen.shape end, "a table of 2 tensors has no field 'shape'")
    support.assert_error_has(function() return chosen.dtype end, "x:chunk(2):unpack()")
    assert.are.equal(2, #chosen)
    assert.is_nil(wick.list({ 1, 2 }).shape)
  end)
  it("F.binary_cross_entropy refuses a target of another float dtype, as PyTorch's", function()
    local p64, y32 = wick.tensor({ 0.3, 0.6 }, { dtype = "float64" }), wick.tensor({ 0.0, 1.0 })
    -- torch: Found dtype Float but expected Double
    support.assert_error_has(function() F.binary_cross_entropy(p64, y32) end, "Found dtype float32 but expected float64")
    support.assert_error_has(function() nn.BCELoss()(p64:float(), y32:double()) end, "Found dtype float64 but expected float32")
    support.assert_close(F.binary_cross_entropy(p64, y32:double()), -(math.log(0.7) + math.log(0.6)) / 2, 1e-15)
  end)
  it("s[-1] = v writes a Size's last entry (MACE's scatter_sum: size[dim] = dim_size with dim = -1)", function()
    local s = wick.zeros(4, 3):size()
    s[-1] = 7
    assert.are.same({ 4, 7 }, s:tolist())
    assert.are.same({ 4, 7 }, wick.zeros(s):size():tolist())
    support.assert_error_has(function() s[0] = 1 end, "index 0 is invalid")
    support.assert_error_has(function() s[-3] = 1 end, "assignment index -3 out of range for a Size of 2 dims")
    support.assert_error_has(function() wick.zeros({ 4, 3, [-1] = 2 }) end, "got the key -1")
  end)
end)

describe("the fifty-seventh round's lines, part 5 (the VQ-Diffusion port)", function()
  it("nn.Parameter(nil) is PyTorch's Parameter(None): an empty parameter of the default dtype", function()
    local m = nn.Module()
    m.embeddings = nn.Parameter(nil) -- diffusers' LearnedClassifierFreeSamplingEmbeddings(learnable=False)
    assert.are.same({ 0 }, m.embeddings:size():totable())
    assert.are.equal(wick.get_default_dtype(), m.embeddings.dtype)
    assert.is_true(m.embeddings.requires_grad)
    assert.are.same({ "embeddings" }, m:state_dict():keys())
    support.assert_error_has(function() nn.Parameter(5) end, "expected a tensor for argument 'data'")
  end)
end)

describe("the fifty-seventh round's lines, part 6 (the optim and recurrent sweeps)", function()
  it("ReduceLROnPlateau's min_lrs and in_cooldown; LBFGS keeps PyTorch's 'al' list", function()
    local p = wick.zeros(2, { requires_grad = true })
    local o = wick.optim.SGD({ p }, { lr = 0.1 })
    local s = wick.optim.lr_scheduler.ReduceLROnPlateau(o, { min_lr = { 0.01 }, cooldown = 2, patience = 0 })
    o:step()
    s:step(1.0)
    assert.is_false(s.in_cooldown)
    s:step(2.0) -- torch: lr 0.01 (floored), in_cooldown True
    assert.are.same({ 0.01 }, s.min_lrs)
    assert.is_true(s.in_cooldown)
    assert.are.equal(0.1 * 0.1, o.param_groups[1].lr) -- (0.1 * 0.1 is above the floor 0.01, as in PyTorch)
    local x = wick.tensor({ 1.5, -0.5 }, { dtype = "float64", requires_grad = true })
    local lb = wick.optim.LBFGS({ x }, { history_size = 3 })
    lb:step(function() lb:zero_grad(); local l = ((x - 1) ^ 2):sum() + (x[1] * x[2]) ^ 2; l:backward(); return l end)
    local keys = {}
    for k in pairs(lb.state[x]) do keys[#keys + 1] = k end
    table.sort(keys)
    -- sorted(torch's LBFGS state keys)
    assert.are.same({ "H_diag", "al", "d", "func_evals", "n_iter", "old_dirs", "old_stps", "prev_flat_grad",
      "prev_loss", "ro", "t" }, keys)
  end)
  it("the recurrent layers name a dtype mismatch and an LSTM's c_0; unpad_sequence takes a length 0", function()
    support.assert_error_has(function() nn.GRU(4, 5)(wick.randn(3, 2, 4, { dtype = "float64" })) end,
      "RNN input dtype (float64) does not match weight dtype (float32)")
    support.assert_error_has(function() nn.LSTMCell(4, 5)(wick.randn(2, 4, { dtype = "float64" })) end,
      "convert model: model:to(\"float64\")")
    support.assert_error_has(function()
      nn.LSTM(4, 5)(wick.randn(3, 2, 4), { wick.zeros(1, 2, 5), wick.zeros(1, 2, 6) })
    end, "Expected hidden[2] (c_0) size (1, 2, 5), got [1, 2, 6]")
    local r = nn.utils.rnn.unpad_sequence(wick.zeros(2, 3, 4), wick.tensor({ 3, 0 }, { dtype = "int64" }), true)
    assert.are.same({ 3, 4 }, r[1]:size():totable())
    assert.are.same({ 0, 4 }, r[2]:size():totable())
  end)
end)

describe("the fifty-seventh round's lines, part 7 (the FFJORD port)", function()
  it("wick.tensor of a table holding a tensor that requires grad warns as PyTorch's (the graph is cut)", function()
    local p = nn.Parameter(wick.tensor(0.7071, { dtype = "float64" }))
    local it
    local w = support.warnings_of(function() it = wick.tensor({ 0.0, p * p }) end)
    assert.is_false(it.requires_grad)
    assert.are.equal(1, #w)
    assert.is_truthy(w[1]:find("Converting a tensor with requires_grad=True to a scalar", 1, true))
    assert.are.equal(0, #support.warnings_of(function() wick.tensor({ 0.0, (p * p):detach() }) end))
  end)
end)

describe("the fifty-seventh round's lines, part 8 (the Bria port)", function()
  it("wick.iter and wick.enumerate of an OrderedDict give its keys, as Python's (inspect.signature's parameters)", function()
    local od = wick.OrderedDict()
    od["x"] = 1
    od["y"] = 2
    local keys = {}
    for k in wick.iter(od) do keys[#keys + 1] = k end
    assert.are.same({ "x", "y" }, keys)
    local pairs_seen = {}
    for i, k in wick.enumerate(od) do pairs_seen[#pairs_seen + 1] = { i, k } end
    assert.are.same({ { 0, "x" }, { 1, "y" } }, pairs_seen)
    local params = wick.inspect.signature(function(a, b) return a, b end).parameters
    assert.are.equal("a", wick.next(wick.iter(params), "EMPTY"))
  end)
end)

describe("the fifty-seventh round's lines, part 9 (the FNet port)", function()
  it("t.real of a real tensor is t itself, as PyTorch's x.real is x", function()
    local x = wick.randn(3, { dtype = "float64" })
    assert.is_true(rawequal(x.real, x))
    assert.is_true(rawequal(wick.real(x), x))
    local z = wick.complex(x, x * 2)
    assert.are.equal(0, (z.real - x):abs():max():item())
    assert.are.equal(0, (z.imag - x * 2):abs():max():item())
  end)
end)

describe("the fifty-seventh round's lines, part 10 (the HGRN2 and Samba ports)", function()
  it("a loss object carries PyTorch's defaults: criterion.ignore_index is -100", function()
    local criterion = nn.CrossEntropyLoss()
    assert.are.same({ "mean", -100, 0 }, { criterion.reduction, criterion.ignore_index, criterion.label_smoothing })
    assert.are.equal(-100, nn.NLLLoss().ignore_index)
    assert.are.same({ 1, 1, false }, { nn.SmoothL1Loss().beta, nn.HuberLoss().delta, nn.KLDivLoss().log_target })
    assert.are.equal(3, nn.CrossEntropyLoss({ ignore_index = 3 }).ignore_index)
    -- fla's shift: torch.cat((labels[..., 1:], torch.full_like(labels[:, :1], criterion.ignore_index)), dim=1)
    local labels = wick.tensor({ { 1, 2, 3 } }, { dtype = "int64" })
    local shifted = wick.cat({ labels[{ {}, { 2, -1 } }], wick.full_like(labels[{ {}, { 1, 1 } }], criterion.ignore_index) }, 2)
    assert.are.same({ { 2, 3, -100 } }, shifted:tolist())
    local x = wick.randn(3, 4)
    local y = wick.tensor({ 1, 2, 3 }, { dtype = "int64" })
    assert.are.equal(F.cross_entropy(x, y):item(), criterion(x, y):item())
  end)
end)

describe("the fifty-seventh round's lines, part 11 (the GraphGPS port)", function()
  it("F.pad and ConstantPad take a NaN value, as PyTorch's (get_lap_decomp_stats' padding)", function()
    local p = F.pad(wick.zeros(2, 2), { 0, 1 }, "constant", wick.nan)
    assert.are.same({ 2, 3 }, p:size():totable())
    assert.is_true(p[{ {}, 3 }]:isnan():all():item())
    assert.are.equal(0, p[{ {}, { 1, 2 } }]:abs():sum():item())
    local q = nn.ConstantPad1d(1, wick.nan)(wick.zeros(1, 2))
    assert.are.same({ true, false, false, true }, q:isnan()[1]:tolist())
    support.assert_error_has(function() nn.ConstantPad1d(1, "x") end, "expected a number for argument 'value'")
  end)
end)

describe("the fifty-seventh round's lines, part 12 (the MeshGraphNets port)", function()
  it("a dtype cast leaves a tensor attribute assigned in init as it is (PyTorch casts parameters and buffers)", function()
    local Norm = nn.Module:extend("Norm57")
    function Norm:init()
      self._acc_count = wick.tensor(0, { dtype = "float32" }) -- echowve's Normalizer
      self.lin = nn.Linear(2, 2)
      self:register_buffer("rb", wick.zeros(2))
    end
    local m = Norm()
    m:half()
    assert.are.same({ "float32", "float16", "float16" }, { m._acc_count.dtype, m.lin.weight.dtype, m.rb.dtype })
    m._acc_count:add_(70000)
    assert.are.equal(70000, m._acc_count:item()) -- (float16 would be inf)
    m:to("float64")
    assert.are.same({ "float32", "float64" }, { m._acc_count.dtype, m.rb.dtype })
    m:to("meta")
    assert.are.equal("meta", m._acc_count.device.type) -- (a device move still takes it along)
  end)
end)

describe("the fifty-seventh round's lines, part 13 (the autograd sweep, Z-Image and ACE-Step)", function()
  it("a tensor's hooks run when it is an input of autograd.grad or backward{inputs =}, as PyTorch's", function()
    local x = wick.tensor({ 1, 2 }, { requires_grad = true })
    x:register_hook(function(g) return g * 5 end)
    local w = wick.tensor({ 3, 4 }, { requires_grad = true })
    ;(x * w):sum():backward({ inputs = { x } })
    assert.are.same({ 15, 20 }, x.grad:tolist()) -- torch: x.grad = [15, 20]
    local h = x * 3
    h:register_hook(function(g) return g * 7 end)
    assert.are.same({ 42, 84 }, wick.autograd.grad((h * h):sum(), h)[1]:tolist())
    local x2 = wick.tensor({ 1, 2 }, { requires_grad = true })
    x2:register_hook(function(g) return g * 2 end)
    assert.are.same({ 4, 8 }, wick.autograd.grad((x2 * x2):sum(), x2)[1]:tolist())
    assert.is_nil(x2.grad)
  end)
  it("forward_ad.unpack_dual(t).tangent is nil for a t without one, PyTorch's None", function()
    local fwAD = wick.autograd.forward_ad
    fwAD.dual_level(function()
      local p = wick.ones(2)
      local d = fwAD.make_dual(p, wick.ones(2))
      assert.are.same({ 2, 2 }, fwAD.unpack_dual(d * 2).tangent:tolist())
      assert.is_nil(fwAD.unpack_dual(p * 3).tangent)
      assert.are.same({ 3, 3 }, fwAD.unpack_dual(p * 3).primal:tolist())
    end)
  end)
  it("F.normalize over several dims (APG's normalized_guidance: dim=(1, 2)); t:len() points to #t", function()
    local x = wick.arange(24, { dtype = "float64" }):view(2, 3, 4)
    support.assert_close(F.normalize(x, { dim = { 2, 3 } }):norm(2, { 2, 3 }), { 1, 1 }, 1e-15)
    assert.are.equal(0, (F.normalize(x, 2, { 3 }) - F.normalize(x, 2, 3)):abs():max():item())
    support.assert_error_has(function() return wick.ones(5, 2):len() end, "Python's len(t) is #t")
  end)
end)
