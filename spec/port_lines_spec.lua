-- Lines of public PyTorch programs (the annotated transformer, word_language_model,
-- LLMs-from-scratch, torchvision's models, d2l, bentrevett's seq2seq) as a
-- user ports them: each worked differently, or not at all, before.
local wick = require("wick")
local nn = wick.nn
local F = nn.functional
local support = require("spec.support")

describe("ported lines", function()
  it("keys.shape[-1] and torch.inf / torch.pi", function()
    local keys = wick.randn(2, 6, 8)
    assert.are.equal(8, keys.shape[-1])
    assert.are.equal(6, keys:size()[-2])
    support.assert_error_has(function() return keys.shape[-4] end, "out of range for a Size of 3 dims")
    support.assert_error_has(function() return keys.shape[0] end, "dims count from 1")
    support.assert_error_has(function() return keys:size()[5] end, "out of range")
    local n = 0
    for _, v in ipairs(keys.shape) do n = n + v end -- ends at the last dim (Lua 5.4's ipairs reads __index)
    assert.are.equal(16, n)
    assert.are.equal(math.huge, wick.inf)
    assert.are.equal(math.pi, wick.pi)
    assert.is_true(wick.nan ~= wick.nan)
    local s = wick.zeros(2, 2):masked_fill(wick.eye(2):bool(), -wick.inf)
    assert.are.equal(-math.huge, s[1][1]:item())
  end)

  it("copy.deepcopy(layer) is wick.deepcopy: new tensors, same values, parameters stay parameters", function()
    local l = nn.Linear(3, 2)
    local c = wick.deepcopy(l)
    assert.are.equal("Linear", getmetatable(c).__name)
    assert.are.equal(2, #c:parameters())
    assert.is_false(rawequal(c.weight, l.weight))
    assert.is_true(c.weight:equal(l.weight))
    wick.no_grad(function() c.weight:fill_(0) end)
    assert.is_false(l.weight:eq(0):all())
  end)

  it("ys.fill_(next_word) with a 0-dim tensor, and rnn.flatten_parameters()", function()
    local _, i = wick.tensor({ { 1, 5, 2 } }):max(2)
    assert.are.equal(2, wick.zeros(1, 1):fill_(i[1]):item())
    support.assert_error_has(function() wick.zeros(1):fill_(wick.ones(2)) end, "only supports 0-dimension value tensor")
    local lstm = nn.LSTM(2, 3)
    assert.has_no_error(function() lstm:flatten_parameters() end)
  end)

  it("F.relu(x, inplace=True) writes into x; options it does not take are errors", function()
    local x = wick.tensor({ -1, 2 })
    assert.is_true(rawequal(x, F.relu(x, true)))
    assert.are.same({ 0, 2 }, x:tolist())
    local y = wick.tensor({ -1, 2 })
    F.relu(y)
    assert.are.same({ -1, 2 }, y:tolist())
    support.assert_error_has(function() F.relu(y, { bogus = 1 }) end, "unknown option 'bogus'")
    support.assert_error_has(function() F.sigmoid(y, 1) end, "takes 1 argument")
    support.assert_error_has(function() F.adaptive_avg_pool2d(wick.zeros(1, 1, 4, 4), 2, 3) end, "takes 2 arguments")
    assert.are.same({ 0, 2 }, F.relu_(wick.tensor({ -3, 2 })):tolist())
  end)

  it("torch.pow(10000, t), torch.normal(mean), repeat_interleave(x, repeats=, dim=)", function()
    assert.are.same({ 1, 10, 100 }, wick.pow(10, wick.tensor({ 0, 1, 2 })):tolist())
    assert.are.same({ 3 }, wick.normal(wick.zeros(3)):size())
    assert.are.same({ 1, 1, 2, 2 }, wick.repeat_interleave(wick.tensor({ 1, 2 }), { repeats = 2, dim = 1 }):tolist())
    assert.are.same({ 1, 1, 2, 2 }, wick.tensor({ 1, 2 }):repeat_interleave(2, { dim = 1 }):tolist())
  end)

  it("nn.Sequential(OrderedDict([...])) as {name, module} pairs, and for m in model:modules()", function()
    local s = nn.Sequential({ { "conv0", nn.Linear(2, 3) }, { "relu0", nn.ReLU() } })
    local keys = {}
    for k in pairs(s:state_dict()) do keys[#keys + 1] = k end
    table.sort(keys)
    assert.are.same({ "conv0.bias", "conv0.weight" }, keys)
    assert.are.equal("Linear", getmetatable(s.conv0).__name)
    local names = {}
    for m in s:modules() do names[#names + 1] = getmetatable(m).__name end
    assert.are.same({ "Sequential", "Linear", "ReLU" }, names)
    names = {}
    for m in s:children() do names[#names + 1] = getmetatable(m).__name end
    assert.are.same({ "Linear", "ReLU" }, names)
    assert.are.equal(3, #s:modules())
  end)

  it("LambdaLR(optimizer=opt, lr_lambda=f), autocast('cpu', enabled=False), torch.cuda.amp.GradScaler", function()
    local o = wick.optim.SGD({ wick.zeros(2, { requires_grad = true }) }, { lr = 1 })
    wick.optim.lr_scheduler.LambdaLR({ optimizer = o, lr_lambda = function() return 0.5 end })
    assert.are.equal(0.5, o.param_groups[1].lr)
    assert.are.equal(5, wick.autocast("cpu", { enabled = false }, function() return 5 end))
    local scaler
    support.warnings_of(function() scaler = wick.cuda.amp.GradScaler() end) -- (no GPU: warns, disabled)
    assert.are.equal("cuda", scaler._device)
    assert.are.equal("cpu", wick.amp.GradScaler(wick.device("cpu"))._device)
  end)

  it("modules print floats as PyTorch does", function()
    assert.are.equal("Dropout(p=0.0, inplace=False)", tostring(nn.Dropout(0.0)))
    assert.are.equal("ELU(alpha=1.0)", tostring(nn.ELU()))
    assert.are.equal("ReLU6(inplace=True)", tostring(nn.ReLU6(true)))
    assert.are.equal("SiLU(inplace=True)", tostring(nn.SiLU(true)))
  end)
end)

describe("optimizer state for parameters in another order", function()
  it("is an error at load_state_dict, naming the shapes", function()
    local a, b = wick.zeros(3, 2, { requires_grad = true }), wick.zeros(4, { requires_grad = true })
    local o1 = wick.optim.AdamW({ a, b })
    ;(a:sum() + b:sum()):backward()
    o1:step()
    local o2 = wick.optim.AdamW({ b, a })
    support.assert_error_has(function() o2:load_state_dict(o1:state_dict()) end,
      "has shape [3, 2], but that parameter has shape [4]")
    local o3 = wick.optim.AdamW({ a, b })
    assert.has_no_error(function() o3:load_state_dict(o1:state_dict()) end)
  end)
end)

describe("lazy modules (d2l's nn.LazyLinear and the rest)", function()
  it("take their input size from the first forward and become the base layer", function()
    local net = nn.Sequential(nn.LazyConv2d(6, 5, { padding = 2 }), nn.ReLU(), nn.Flatten(), nn.LazyLinear(10),
      nn.LazyBatchNorm1d())
    assert.are.equal(6, #net:parameters()) -- uninitialized placeholders, as PyTorch's
    for _, p in ipairs(net:parameters()) do assert.are.equal(0, p:numel()) end
    local held = net:parameters()
    local y = net(wick.randn(2, 1, 8, 8))
    for i, p in ipairs(net:parameters()) do assert.are.equal(held[i], p) end -- the same objects, now filled
    assert.are.same({ 2, 10 }, y:size())
    assert.are.equal("Conv2d", getmetatable(net[1]).__name)
    assert.are.same({ 6, 1, 5, 5 }, net[1].weight:size())
    assert.are.same({ 10, 384 }, net[4].weight:size())
    assert.are.equal(6, #net:parameters())
    local l = nn.LazyLinear(3, false)
    l(wick.randn(2, 4, { dtype = "float64" }))
    assert.are.equal("float64", l.weight.dtype)
    assert.is_nil(l.bias)
    support.assert_error_has(function() nn.LazyLinear(3)(wick.tensor(1)) end, "cannot infer the input size")
  end)
end)

describe("keywords and torch.Size (llama2.c, litgpt, GAT)", function()
  it("torch.topk(x, k=1, dim=-1), torch.empty(size=(3, 4)), shape == torch.Size(...)", function()
    local v, i = wick.topk(wick.tensor({ 1, 5, 3 }), { k = 2, dim = -1 })
    assert.are.same({ 5, 3 }, v:tolist())
    assert.are.same({ 2, 3 }, i:tolist())
    assert.are.same({ 3, 4 }, wick.empty({ size = { 3, 4 } }):size())
    assert.are.equal("int64", wick.zeros({ size = { 2 }, dtype = "int64" }).dtype)
    assert.is_true(wick.zeros(2, 3).shape == wick.Size({ 2, 3 }))
    assert.is_false(wick.zeros(2, 3).shape == wick.Size(3, 2))
    assert.are.equal("[2, 3]", tostring(wick.Size(2, 3)))
  end)

  it("x.shape[1:] == pe.shape and x.view(*x.shape[:2], h, -1) (whisper) as Size ranges", function()
    local x = wick.zeros(2, 6, 3)
    assert.is_true(x.shape[{ 2, -1 }] == wick.zeros(6, 3).shape)
    assert.are.same({ 2, 6 }, x:size()[{ { 1, 2 } }])
    assert.are.equal("[6, 3]", tostring(x.shape[{ 2 }]))
    assert.are.same({}, x.shape[{ 4 }]) -- Python's shape[3:]
    local unpack = table.unpack or unpack -- luacheck: ignore
    local B, T = unpack(x.shape[{ 1, 2 }])
    assert.are.same({ 2, 6, 3, 1 }, x:view(B, T, 3, -1):size())
    assert.are.same({ 2, 6, 3 }, x.shape[{ 1, 5 }]) -- clamped, as Python's shape[0:5]
    assert.are.same({}, wick.zeros(1).shape[{ 3, 4 }]) -- YOLOv3's grid.shape[2:4] of a 1-D grid
  end)
end)

describe("the transfer-learning and style-transfer tutorials' lines", function()
  it("with torch.set_grad_enabled(phase == 'train'): runs the function in that mode and restores", function()
    local ran
    local r = wick.set_grad_enabled(false, function(a) ran = wick.is_grad_enabled(); return a + 1 end, 1)
    assert.are.equal(2, r)
    assert.is_false(ran)
    assert.is_true(wick.is_grad_enabled())
    assert.has_error(function() wick.set_grad_enabled(false, function() error("boom") end) end)
    assert.is_true(wick.is_grad_enabled())
  end)

  it("model[:i + 1] is model[{{1, i + 1}}]: a new Sequential of the same modules", function()
    local m = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 2))
    local head = m[{ { 1, 2 } }]
    assert.are.equal("Sequential", getmetatable(head).__name)
    assert.are.equal(2, #head)
    assert.is_true(rawequal(head[1], m[1]))
    assert.are.equal(1, #m[{ { -1, -1 } }])
    support.assert_error_has(function() return m[{ 1, 2 }] end, "is sliced with {{first, last[, step]}}")
    support.assert_error_has(function() return m[{ { 2, 5 } }] end, "reaches past the 3 entries")
    -- the entries keep their names, as PyTorch's slice keeps its keys
    local tail = m[{ { 2, 3 } }]
    local keys = {}
    for k in pairs(tail:state_dict()) do keys[#keys + 1] = k end
    table.sort(keys)
    assert.are.same({ "3.bias", "3.weight" }, keys) -- PyTorch's "2.weight", 0-based
    local style = nn.Sequential(nn.Identity()) -- the style-transfer tutorial's model[:(i + 1)]
    style:add_module("conv_1", nn.Linear(2, 2))
    style:add_module("relu_1", nn.ReLU())
    local sub = style[{ { 1, 2 } }]
    assert.is_true(rawequal(sub.conv_1, style.conv_1))
    assert.is_not_nil(sub:state_dict()["conv_1.weight"])
  end)

  it("a loss's options set after construction count (d2l's MaskedSoftmaxCELoss sets reduction in forward)", function()
    local loss = nn.CrossEntropyLoss()
    loss.reduction = "none"
    local x = wick.tensor({ { 2, 0 }, { 0, 2 } }, { dtype = "float64" })
    local y = wick.tensor({ 1, 1 }, { dtype = "int64" })
    local per = loss(x, y)
    assert.are.same({ 2 }, per:size())
    assert.is_true(math.abs(per[2]:item() - 2.1269280110429727) < 1e-12) -- PyTorch 2.15
    loss.reduction = "sum"
    loss.ignore_index = 1
    assert.are.equal(0, loss(x, y):item())
    local h = nn.HuberLoss({ delta = 0.5 })
    h.delta = 2
    assert.are.equal(1.125, h(wick.tensor({ 1.5 }), wick.tensor({ 0.0 })):item())
  end)

  it("torch.jit.script(net) runs the net as it is; every scheduler is an LRScheduler (d2l 12.11, 13.1)", function()
    local net = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    assert.is_true(rawequal(net, wick.jit.script(net)))
    assert.is_true(rawequal(net, wick.jit.trace(net, wick.ones(1, 2))))
    assert.is_false(wick.jit.is_scripting())
    support.assert_error_has(function() return wick.jit.save end, "wick.jit has no 'save'")
    local opt = wick.optim.SGD(net:parameters(), { lr = 0.1 })
    local LRScheduler = wick.optim.lr_scheduler.LRScheduler
    assert.is_true(wick.isinstance(wick.optim.lr_scheduler.MultiStepLR(opt, { milestones = { 3 } }), LRScheduler))
    assert.is_true(wick.isinstance(wick.optim.lr_scheduler.ReduceLROnPlateau(opt), LRScheduler))
    assert.is_false(wick.isinstance(opt, LRScheduler))
    support.assert_error_has(function() return nn.parallel.scatter end, "wick.nn.parallel has no 'scatter'")
  end)

  it("d2l's xavier_init_weights walks rnn._flat_weights_names; float indices name their usual cause", function()
    local g = nn.GRU(4, 3, 2)
    assert.are.same({ "weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_ih_l1", "weight_hh_l1",
      "bias_ih_l1", "bias_hh_l1" }, g._flat_weights_names)
    for _, name in ipairs(g._flat_weights_names) do
      if name:find("weight") then nn.init.zeros_(g[name]) end
    end
    assert.are.equal(0, g.weight_hh_l1:abs():sum():item())
    assert.are.equal(4, #nn.LSTM(2, 2, { bias = false, bidirectional = true })._flat_weights_names)
    support.assert_error_has(function() return nn.Embedding(5, 2)(wick.arange(0, 4)) end, "wick.arange give float32")
  end)

  it("PyTorch's keyword booleans as options tables: never read as true", function()
    local p = nn.Parameter(wick.zeros(1, 4), { requires_grad = false })
    assert.is_false(p.requires_grad)
    assert.is_true(nn.Parameter(wick.zeros(2), {}).requires_grad)
    support.assert_error_has(function() nn.Parameter(wick.zeros(2), "no") end, "expected a boolean")
    wick.set_grad_enabled({ mode = false })
    local off = wick.is_grad_enabled()
    wick.set_grad_enabled(true)
    assert.is_false(off)
  end)

  it("model.train(mode=...), CosineEmbeddingLoss()(a, b, target=y)", function()
    local l = nn.Linear(2, 2)
    l:train({ mode = false })
    assert.is_false(l.training)
    local a = wick.randn(4, 3)
    assert.are.equal(0, nn.CosineEmbeddingLoss()(a, a, { target = wick.ones(4) }):item())
    assert.is_true(F.cosine_embedding_loss(a, -a, { target = wick.ones(4), reduction = "sum" }):item() > 7.9)
  end)
end)

describe("UNet's F.pad(x, [diffX // 2, ...]) and dcgan's nn.parallel.data_parallel", function()
  it("takes one-element integer tensors in the pad list, and the function form of DataParallel", function()
    local d = wick.tensor({ 1 }, { dtype = "int64" })
    assert.are.same({ 1, 1, 2, 4 }, F.pad(wick.zeros(1, 1, 2, 2), { d, 1, 0, 0 }):size())
    local m = nn.Linear(2, 3)
    local y = nn.parallel.data_parallel(m, wick.randn(4, 2), { device_ids = { "cpu", "cpu" } })
    assert.are.same({ 4, 3 }, y:size())
    assert.are.equal(2, wick.cuda.with_device(-1, function(a) return a + 1 end, 1))
  end)
end)

describe("the RL, flow and MDN ports' lines", function()
  it("Sequential returns every result of its last module (pi, sigma, mu = model(x))", function()
    local Head = nn.Module:extend("Head")
    function Head:forward(x) return x, x * 2, x * 3 end
    local a, b, c = nn.Sequential(nn.Identity(), Head())(wick.ones(1, 2))
    assert.are.same({ { 1, 1 } }, a:totable())
    assert.are.same({ { 3, 3 } }, c:totable())
    assert.is_truthy(b)
  end)

  it("wick.tensor of one-element tensors keeps their dtype, promoted (torch.tensor([t0, t1]))", function()
    local a = wick.tensor(1.123456789012, { dtype = "float64" })
    assert.are.equal("float64", wick.tensor({ a, a }).dtype)
    assert.are.equal(a:item(), wick.tensor({ a })[1]:item())
    assert.are.equal("int64", wick.tensor({ wick.tensor(3, { dtype = "int64" }) }).dtype)
    assert.are.equal("float32", wick.tensor({ wick.tensor(3, { dtype = "int64" }), 2.5 }).dtype)
  end)

  it("FloatTensor(x.shape) and x:new(...) make tensors of that shape, x's dtype and device for new", function()
    local x = wick.randn(2, 3, { dtype = "float64" })
    assert.are.same({ 2, 3 }, wick.FloatTensor(x.shape):size())
    assert.are.same({ 2, 3 }, wick.Tensor(x:size()):size())
    assert.are.same({ 2, 3 }, wick.FloatTensor({ 2, 3 }):totable()) -- a plain table is data
    assert.are.equal("float64", x:new(4, 5).dtype)
    assert.are.same({ 1, 2 }, x:new({ 1, 2 }):totable())
  end)

  it("nn.Linear(0, n) has a zero bias, not NaN; amax/amin split the gradient among ties, as PyTorch", function()
    assert.are.same({ 0, 0, 0 }, nn.Linear(0, 3).bias:totable())
    local x = wick.tensor({ { 1, 3, 3 }, { 2, 2, 0 } }):requires_grad_()
    x:amax(2):sum():backward()
    assert.are.same({ { 0, 0.5, 0.5 }, { 0.5, 0.5, 0 } }, x.grad:totable())
    local y = wick.tensor({ { 1, 3, 3 }, { 2, 2, 0 } }):requires_grad_()
    local m = y:amax({ 1, 2 }, true)
    assert.are.same({ { 3 } }, m:totable())
    m:sum():backward()
    assert.are.same({ { 0, 0.5, 0.5 }, { 0, 0, 0 } }, y.grad:totable())
  end)
end)

describe("the detection and token-MLP ports' lines", function()
  it("x[i] = f(x[i]) on a tensor with history, loss gains (ultralytics)", function()
    local a = wick.tensor(2.0, { dtype = "float64" }):requires_grad_()
    local l = wick.zeros(3, { dtype = "float64" })
    l[1] = a * a
    l[1] = l[1] * 7.5
    local x = a * wick.ones(3, { dtype = "float64" })
    x[1] = x[1] * 2
    local s = l:sum() + x:sum()
    s:backward()
    assert.are.equal(34, a.grad:item()) -- PyTorch's: 2a * 7.5 + (2 + 1 + 1)
  end)

  it("an in-place ReLU after a Linear on [B, T, C] tokens (Swin-V2's cpb_mlp)", function()
    local lin = nn.Linear(2, 5)
    local x = wick.randn(4, 3, 2):requires_grad_()
    local y = nn.ReLU(true)(lin(x))
    assert.are.same({ 4, 3, 5 }, y:size())
    y:sum():backward()
    local x2 = x:detach():clone():requires_grad_()
    local gw = lin.weight.grad:clone()
    lin:zero_grad()
    lin(x2):relu():sum():backward()
    assert.are.equal(0, (x2.grad - x.grad):abs():max():item())
    assert.are.equal(0, (gw - lin.weight.grad):abs():max():item())
  end)
end)

describe("the transfer-learning idiom nn.Sequential(*list(model.children())[:-1])", function()
  it("slices m:children() as a tensor's range and builds a Sequential of it", function()
    local m = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 4))
    local body = m:children()[{ { 1, -2 } }]
    assert.are.equal(2, #body)
    assert.are.equal("ReLU", getmetatable(body[-1]).__name)
    local trunk = nn.Sequential(body)
    assert.are.same({ 5, 3 }, trunk(wick.randn(5, 2)):size())
    assert.are.equal(1, #m:children()[{ 3 }])
  end)
end)

describe("the evaluation-loop and whisper lines", function()
  it("cat skips PyTorch's legacy empty tensor (out = torch.tensor([]); out = torch.cat([out, batch]))", function()
    local out = wick.tensor({})
    for i = 1, 3 do out = wick.cat({ out, wick.ones(1, 2) * i }) end
    assert.are.same({ { 1, 1 }, { 2, 2 }, { 3, 3 } }, out:totable())
    assert.are.same({ 0 }, wick.cat({ wick.empty(0), wick.empty(0) }):size())
  end)
  it("Conv1d and F.conv1d take PyTorch's one-element tuples ((3,), as Conv1d prints them)", function()
    assert.are.same({ 1, 16, 5 }, nn.Conv1d(8, 16, { 3 }, { stride = { 2 }, padding = { 1 } })(wick.randn(1, 8, 10)):size())
    assert.are.same({ 1, 4, 5 },
      nn.functional.conv1d(wick.randn(1, 8, 10), wick.randn(4, 8, 3), nil, { stride = { 2 }, padding = { 1 } }):size())
    support.assert_error_has(function() nn.Conv1d(8, 16, { 3, 3 }) end, "a table of one")
  end)
end)

describe("nn.utils.stateless.functional_call", function()
  it("is torch.func's, with strict", function()
    local m = nn.Linear(2, 1)
    local p = { weight = wick.ones(1, 2), bias = wick.zeros(1) }
    assert.are.same({ { 2 }, { 2 } }, nn.utils.stateless.functional_call(m, p, wick.ones(2, 2)):totable())
    support.assert_error_has(function() wick.func.functional_call(m, { weight = wick.ones(1, 2) }, wick.ones(1, 2), { strict = true }) end,
      "Missing key(s): 'bias'")
  end)
end)

describe("0-dim integer tensors as sizes (Python's __index__)", function()
  it("torch.zeros(b, counts.max(), 5), narrow by a tensor length", function()
    local counts = wick.tensor({ 1, 3, 2 }, { dtype = "int64" })
    assert.are.same({ 2, 3, 5 }, wick.zeros(2, counts:max(), 5):size())
    assert.are.same({ 2, 3 }, wick.zeros({ 2, counts:max() }):size())
    assert.are.same({ 0, 1, 2 }, wick.arange(10):narrow(1, 1, counts:max()):totable())
    support.assert_error_has(function() wick.zeros(wick.tensor(2.5)) end, "wick.zeros")
  end)
end)

describe("the regression, forward-forward, pygcn and GCN lines", function()
  it("for i, w in enumerate(W) and for row in t: a tensor's slices along dim 1", function()
    local W = wick.tensor({ 1.5, 2, 3 })
    local seen = {}
    for i, w in wick.enumerate(W) do seen[#seen + 1] = ("%d=%g"):format(i, w:item()) end
    assert.are.equal("0=1.5 1=2 2=3", table.concat(seen, " "))
    local rows = {}
    for row in wick.tensor({ { 1, 2 }, { 3, 4 } }):iter() do rows[#rows + 1] = row:sum():item() end
    assert.are.same({ 3, 7 }, rows)
    local items = {}
    for i, v in wick.enumerate({ "a", "b" }, 1) do items[#items + 1] = i .. v end
    assert.are.equal("1a2b", table.concat(items))
    support.assert_error_has(function() wick.tensor(3):iter() end, "iteration over a 0-d tensor")
    support.assert_error_has(function() wick.enumerate(42) end, "a tensor, an array")
  end)

  it("sparse_coo_tensor(i, v, size=..., requires_grad=True), nested-list indices, torch.sparse.FloatTensor", function()
    local idx = wick.tensor({ { 1, 2, 2 }, { 2, 1, 1 } }, { dtype = "int64" })
    local a = wick.sparse_coo_tensor(idx, wick.ones(3), { size = { 2, 3 }, requires_grad = true })
    assert.is_true(a.requires_grad and a.is_leaf)
    assert.are.same({ { 0, 1, 0 }, { 2, 0, 0 } }, a:detach():totable()) -- duplicates summed
    assert.are.same({ { 0, 1 }, { 1, 0 } }, wick.sparse_coo_tensor({ { 1, 2 }, { 2, 1 } }, { 1, 1 }, { 2, 2 }):totable())
    local f = wick.sparse.FloatTensor(idx, wick.tensor({ 1, 2, 3 }, { dtype = "float64" }), { 2, 2 })
    assert.are.equal("float64", f.dtype) -- (the values' dtype, as PyTorch's)
    assert.are.same({ { 0, 1 }, { 5, 0 } }, f:totable())
    support.assert_error_has(function() wick.sparse_coo_tensor(idx, wick.ones(3), { 2, 2 }, { size = { 2, 2 } }) end,
      "size given twice")
    support.assert_error_has(function() wick.sparse_coo_tensor(idx, wick.ones(3), { sze = 1 }) end, "unknown option 'sze'")
  end)

  it("a dense tensor read as sparse: indices() and values() are its nonzeros, coalesced", function()
    local d = wick.tensor({ { 0, 2 }, { 3, 0 } }):to_sparse():coalesce()
    assert.are.same({ { 1, 2 }, { 2, 1 } }, d:indices():totable())
    assert.are.same({ 2, 3 }, d:values():totable())
    assert.are.equal(2, d:_nnz())
    assert.is_true(d:is_coalesced())
    -- rebuilt from its own entries
    assert.are.same(d:totable(), wick.sparse_coo_tensor(d:indices(), d:values(), d:size()):totable())
  end)

  it("torch.xpu and torch.mps probes say there is none", function()
    assert.is_false(wick.xpu.is_available())
    assert.are.equal(0, wick.xpu.device_count())
    assert.are.equal(0, wick.mps.device_count())
  end)
end)

describe("the tutorials' lines (pytorch/tutorials, yunjey's pytorch-tutorial, nanochat)", function()
  local function quiet(fn, ...)
    local saved = io.stderr
    io.stderr = { write = function() end }
    local ok, r = pcall(fn, ...)
    io.stderr = saved
    assert(ok, r)
    return r
  end

  it("p.data.add_(-lr, p.grad.data) and addcmul_(value, t1, t2): PyTorch's deprecated number-first overloads", function()
    local g = wick.tensor({ 1, 2, 3 })
    assert.are.same({ 0.5, 0, -0.5 }, quiet(function() return wick.ones(3):add_(-0.5, g):totable() end))
    assert.are.same({ -1, -3, -5 }, quiet(function() return wick.ones(3):sub(2, g):totable() end))
    assert.are.same({ 1.5, 3, 5.5 }, quiet(function() return wick.ones(3):addcmul_(0.5, g, g):totable() end))
    assert.are.same({ 3, 3, 3 }, quiet(function() return wick.ones(3):addcdiv(2, g, g):totable() end))
    -- the current forms are untouched
    assert.are.same({ 3, 5, 7 }, wick.ones(3):add(g, 2):totable())
    assert.are.same({ 3, 5, 7 }, wick.ones(3):add(g, { alpha = 2 }):totable())
    local warned
    local saved = io.stderr
    io.stderr = { write = function(_, s) warned = s end }
    wick.ones(3):add_(-0.5, g)
    io.stderr = saved
    assert.is_truthy(warned and warned:find("This overload of add_ is deprecated", 1, true))
  end)

  it("tensor_split, hsplit, vsplit, dsplit as PyTorch's (np.array_split)", function()
    local x = wick.arange(10)
    local function sizes(parts)
      local out = {}
      for i, p in ipairs(parts) do out[i] = p:numel() end
      return out
    end
    assert.are.same({ 4, 3, 3 }, sizes(x:tensor_split(3)))
    assert.are.same({ { 0, 1 }, { 2 }, { 3, 4, 5, 6, 7, 8, 9 } }, (function()
      local o = {}
      for i, p in ipairs(wick.tensor_split(x, { 2, 3 })) do o[i] = p:totable() end
      return o
    end)())
    assert.are.same({ 1, 3, 0, 6, 0 }, sizes(x:tensor_split({ 1, 4, 4, 20 })))
    assert.are.same({ 7, 3 }, sizes(x:tensor_split({ -3 })))
    assert.are.same({ 3, 3, 2, 2 }, sizes(x:tensor_split(wick.tensor(4, { dtype = "int64" }))))
    local m = wick.arange(24):reshape(2, 4, 3)
    assert.are.same({ 2, 2, 3 }, m:hsplit(2)[1]:size())
    assert.are.same({ 1, 4, 3 }, m:vsplit(2)[2]:size())
    assert.are.same({ 2, 4, 1 }, m:dsplit(3)[3]:size())
    assert.are.same({ 2, 1, 3 }, m:tensor_split(4, 2)[4]:size())
    support.assert_error_has(function() m:hsplit(3) end, "not divisible by the split_size 3")
    support.assert_error_has(function() x:vsplit(2) end, "at least 2 dimensions")
    support.assert_error_has(function() x:tensor_split(0) end, "tensor_split")
  end)

  it("arange(0, 1.1, step=0.1); Variable(x, volatile=True) warns; unknown Variable options are errors", function()
    assert.are.equal(11, wick.arange(0, 1.1, { step = 0.1 }):numel())
    assert.are.same({ 0, 0.25, 0.5, 0.75 }, wick.arange(0, 1, { step = 0.25 }):totable())
    local x = wick.ones(2)
    assert.are.equal(x, quiet(wick.autograd.Variable, x, { volatile = true }))
    support.assert_error_has(function() wick.autograd.Variable(x, { foo = 1 }) end, "unknown option 'foo'")
  end)

  it("loss.data[0] and confusion.numpy() say what to write instead", function()
    support.assert_error_has(function() return wick.tensor(1.5)[1] end, "cannot index a 0-dim tensor", "t:item()")
    support.assert_error_has(function() return wick.ones(2):numpy() end, "t:tolist()")
  end)
end)

describe("the llama2.c and torch.func tutorials' lines", function()
  it("xq.shape[:-1] + (-1, 2): a Size joined with a table", function()
    local x = wick.zeros(2, 3, 4)
    assert.are.same({ 2, 3, 2, 2 }, x:reshape(x.shape[{ 1, -2 }] + { -1, 2 }):size())
    assert.is_true(x.shape .. { 1 } == wick.Size({ 2, 3, 4, 1 }))
    support.assert_error_has(function() return x.shape + 3 end, "can only join a Size with a table")
  end)

  it("allclose(a, b, atol=..., rtol=...), torch.dist, torch.vmap", function()
    local a = wick.ones(3)
    assert.is_true(wick.allclose(a, a + 1e-4, { atol = 3e-3, rtol = 1e-5 }))
    assert.is_false(wick.allclose(a, a + 1e-4))
    assert.is_true(a:allclose(a + 1e-2, 1e-5, { atol = 1e-1 }))
    local nan = wick.tensor({ 0 / 0 })
    assert.is_false(nan:allclose(nan))
    assert.is_true(nan:allclose(nan, { equal_nan = true }))
    support.assert_error_has(function() a:allclose(a, 1e-5, { rtol = 1e-3 }) end, "both by position and as an option")
    assert.is_true(math.abs(wick.dist(a, wick.zeros(3)):item() - math.sqrt(3)) < 1e-6)
    assert.are.equal(3, a:dist(wick.zeros(3), 1):item())
    assert.are.same({ 2, 3 }, wick.vmap(function(v) return v * 2 end)(wick.ones(2, 3)):size())
  end)

  it("@once_differentiable: the backward runs without recording", function()
    local Sq = wick.autograd.Function:extend("SqOnce")
    function Sq.forward(ctx, x) ctx:save_for_backward(x) return x * x end
    Sq.backward = wick.autograd.once_differentiable(function(ctx, g) return 2 * ctx.saved_tensors[1] * g end)
    local x = wick.tensor({ 3 }, { requires_grad = true })
    local g = wick.autograd.grad(Sq.apply(x):sum(), x, { create_graph = true })
    g = g[1] or g
    assert.are.same({ 6 }, g:totable())
    assert.is_false(g.requires_grad)
    assert.are.equal(wick.autograd.once_differentiable, wick.autograd["function"].once_differentiable)
  end)

  it("jacfwd takes PyTorch's randomness", function()
    local J = wick.func.jacfwd(function(v) return v * 2 end, { randomness = "same" })(wick.ones(2))
    assert.are.same({ { 2, 0 }, { 0, 2 } }, J:totable())
    support.assert_error_has(function() wick.func.jacfwd(function(v) return v end, { randomness = "sometimes" }) end,
      "randomness")
  end)
end)

describe("llm.c's binary writers and readers: tobytes, frombuffer, view(dtype)", function()
  it("round-trips a tensor's bytes and reads bits as another dtype", function()
    local x = wick.tensor({ 1.5, -2, 3 })
    local bytes = x:tobytes()
    assert.are.equal(12, #bytes)
    assert.are.same(x:totable(), wick.frombuffer(bytes, { dtype = "float32" }):totable())
    assert.are.same({ -2 }, wick.frombuffer(bytes, { dtype = "float32", count = 1, offset = 4 }):totable())
    assert.are.same({ 1, 2, 3 }, wick.frombuffer(wick.tensor({ 1, 2, 3 }, { dtype = "int32" }):tobytes(), { dtype = "int32" }):totable())
    assert.are.equal(24, #wick.ones(2, 3):t():tobytes()) -- (non-contiguous: its elements in order)
    support.assert_error_has(function() wick.frombuffer(bytes, { dtype = "float64" }) end, "multiple of element size (8)")
    support.assert_error_has(function() wick.frombuffer(bytes, { dtype = "float32", count = 4 }) end, "must not be greater")
    -- IEEE bits: 1.0f is 0x3f800000
    assert.are.same({ 1065353216 }, wick.tensor({ 1 }):view("int32"):totable())
    assert.is_true(x:view("bfloat16"):size() == wick.Size({ 6 }))
    assert.are.same(x:totable(), x:view("float16"):view("float32"):totable())
    support.assert_error_has(function() wick.ones(2, 3):t():view("bfloat16") end, "stride(-1) must be 1")
    support.assert_error_has(function() wick.ones(3, { requires_grad = true }):view("int32") end, "not differentiable")
    assert.is_true(wick.ones(3, { requires_grad = true }):view("float32").requires_grad) -- (the same dtype: an alias)
  end)
end)


describe("ported lines (third round: gpt-fast, Whisper, PyTorch-GAN)", function()
  it("torch.aminmax(x, dim=1), p.numel() * p.dtype.itemsize, t.element_size(), t.nbytes", function()
    local x = wick.tensor({ { 1, 5, 3 }, { -2, 0, 9 } })
    local lo, hi = wick.aminmax(x)
    assert.are.same({ -2, 9 }, { lo:item(), hi:item() })
    lo, hi = x:aminmax({ dim = 2 })
    assert.are.same({ { 1, -2 }, { 5, 9 } }, { lo:totable(), hi:totable() })
    lo, hi = wick.aminmax(x, { dim = 1, keepdim = true })
    assert.are.same({ { { -2, 0, 3 } }, { { 1, 5, 9 } } }, { lo:totable(), hi:totable() })
    assert.are.same({ 4, 24, 4 }, { x.itemsize, x.nbytes, x:element_size() })
    assert.are.equal(2, wick.ones(3, { dtype = "bfloat16" }).itemsize)
    assert.are.equal(8, wick.ones(1, { dtype = "int64" }):element_size())
  end)

  it("batch.type(torch.Tensor) (CycleGAN's Tensor = torch.Tensor)", function()
    local t = wick.zeros(2, { dtype = "float64" }):type(wick.Tensor)
    assert.are.equal(wick.get_default_dtype(), t.dtype)
  end)
end)

describe("PyTorch's dtypes wick does not have (int8, int16)", function()
  it("are named as such: .to(torch.int8), dtype = int16, CharTensor, a checkpoint with int8 weights", function()
    support.assert_error_has(function() return wick.zeros(2):to("int8") end, "'int8' is one of PyTorch's dtypes that wick does not have")
    support.assert_error_has(function() return wick.zeros(2, { dtype = "int16" }) end, "dtype 'int16' is one of PyTorch's that wick does not have")
    support.assert_error_has(function() return wick.CharTensor(2) end, "int8")
    support.assert_error_has(function() return wick.zeros(2, { dtype = "int9" }) end, "unknown dtype 'int9'")
    support.assert_error_has(function() return wick.load("spec/fixtures/pt_int8.pt") end, "holds int8 tensors, a dtype wick does not have")
  end)
end)

describe("ported lines (gpt-fast's generate.py)", function()
  it("with torch.device('meta'): model = Transformer(...) as wick.device(d, fn)", function()
    local before = tostring(wick.get_default_device())
    local m = wick.device("meta", function() return nn.Linear(2, 3) end)
    assert.is_true(m.weight.is_meta)
    assert.are.equal(before, tostring(wick.get_default_device()))
    support.assert_error_has(function() wick.device("meta", function() error("boom") end) end, "boom")
    assert.are.equal(before, tostring(wick.get_default_device())) -- restored after an error too
    assert.are.equal("cuda:1", tostring(wick.device("cuda", 1)))
    local z = wick.device("meta", function(n) return wick.zeros(n) end, 4) -- arguments pass through
    assert.is_true(z.is_meta)
    assert.are.equal(4, z:numel())
  end)

  it("torch.backends.cuda.sdp_kernel(...) and torch.nn.attention.sdpa_kernel(...) contexts run their body", function()
    assert.are.equal(5, wick.backends.cuda.sdp_kernel({ enable_flash = false, enable_math = true }, function() return 5 end))
    support.assert_error_has(function() wick.backends.cuda.sdp_kernel({ enable_flsh = false }, function() end) end, "enable_flsh")
    local attn = nn.attention
    assert.are.equal(6, attn.sdpa_kernel({ attn.SDPBackend.MATH, attn.SDPBackend.FLASH_ATTENTION }, function() return 6 end))
    assert.are.equal(7, attn.sdpa_kernel(attn.SDPBackend.MATH, function(x) return x end, 7))
    support.assert_error_has(function() attn.sdpa_kernel("bogus", function() end) end, "is not an SDPBackend")
    assert.is_true(wick.backends.cuda.math_sdp_enabled())
    wick.backends.cuda.enable_flash_sdp(false)
    assert.is_false(wick.backends.cuda.flash_sdp_enabled())
    wick.backends.cuda.enable_flash_sdp(true)
  end)

  it("torch.cuda.max_memory_reserved(); an unknown torch.cuda name is an error at the caller's line", function()
    if not wick.cuda.is_available() then assert.are.equal(0, wick.cuda.max_memory_reserved()) end
    assert.is_true(wick.cuda.max_memory_reserved() >= wick.cuda.memory_reserved())
    support.assert_error_has(function() return wick.cuda.max_memory_reservd() end, "wick.cuda has no 'max_memory_reservd'")
  end)
end)

describe("ported lines (k-diffusion, torchvision)", function()
  it("linspace(t_start, t_end, n), logspace, arange and full take 0-dim tensors as numbers", function()
    local lin = wick.linspace(wick.tensor(-2), wick.tensor(4), 4)
    assert.are.same({ -2, 0, 2, 4 }, lin:totable())
    local lg = wick.logspace(wick.tensor(0), wick.tensor(2), 3, { dtype = "float64" })
    assert.are.same({ 1, 10, 100 }, lg:totable())
    assert.are.same({ 0, 1, 2 }, wick.arange(wick.tensor(0), wick.tensor(3)):totable())
    assert.are.same({ 1, 3 }, wick.arange(wick.tensor(1), 5, { step = wick.tensor(2) }):totable())
    assert.are.same({ 3, 3 }, wick.full({ 2 }, wick.tensor(3)):totable())
    assert.are.same({ 4, 4 }, wick.full_like(wick.zeros(2), wick.tensor(4)):totable())
    support.assert_error_has(function() wick.logspace("a", 1, 3) end, "logspace: expected a number for argument 'start'")
    support.assert_error_has(function() wick.linspace(wick.ones(2), 1, 3) end, "linspace: expected a number")
  end)

  it("torch.jit.annotate(Optional[Tensor], None) is the value", function()
    assert.is_nil(wick.jit.annotate("Optional[Tensor]", nil))
    local t = wick.ones(2)
    assert.are.equal(t, wick.jit.annotate("Tensor", t))
  end)
end)

describe("ported lines (BERT-pytorch)", function()
  it("pe.require_grad = False: a tensor takes attributes of its own (a near-miss of a field warns)", function()
    local pe = wick.zeros(4, 2)
    local warned = {}
    local old = wick._warn
    wick._warn = function(msg) warned[#warned + 1] = msg end
    pe.require_grad = false
    wick._warn = old
    assert.is_false(pe.require_grad)
    assert.is_false(pe.requires_grad)
    assert.are.equal(1, #warned)
    assert.is_truthy(warned[1]:find("it is not 'requires_grad'", 1, true))
    local p = nn.Parameter(wick.ones(2))
    p._no_weight_decay = true
    assert.is_true(p._no_weight_decay)
    support.assert_error_has(function() return pe.foo end, "tensor has no field or method 'foo'")
  end)
end)

describe("ported lines (InfoGAN, U-Net, CycleGAN, the annotated transformer, cleanrl)", function()
  it("nn.Softmax() without a dim: PyTorch's implicit dim (1 of 3-D input, 2 of 4-D) and its warning", function()
    local x = wick.randn(2, 3, 4)
    assert.is_true(wick.allclose(nn.Softmax()(x), x:softmax(1)))
    local y = wick.randn(2, 3, 4, 5)
    assert.is_true(wick.allclose(nn.LogSoftmax()(y), y:log_softmax(2)))
    assert.is_true(wick.allclose(nn.Softmin()(y), (-y):softmax(2)))
  end)

  it("F.pad with a float tensor in the pads says which dtype it got", function()
    support.assert_error_has(function() F.pad(wick.randn(1, 2, 4, 4), { wick.tensor({ 2 }), 0, 0, 0 }) end,
      "got a float32 tensor of 1 element(s) (use :item()")
  end)

  it("Adam(itertools.chain(G.parameters(), D.parameters())) as an array of arrays says how to chain", function()
    local a, b = nn.Linear(2, 2), nn.Linear(2, 2)
    support.assert_error_has(function() wick.optim.Adam({ a:parameters(), b:parameters() }) end, "itertools.chain")
  end)

  it("from torch.distributions.categorical import Categorical", function()
    local D = wick.distributions
    assert.are.equal(D.Categorical, D.categorical.Categorical)
    assert.are.equal(D.Normal, D.normal.Normal)
    assert.are.equal(D.OneHotCategorical, D.one_hot_categorical.OneHotCategorical)
    assert.are.equal(D.StudentT, D.studentT.StudentT)
    assert.are.equal(D.Distribution, D.distribution.Distribution)
    support.assert_error_has(function() return D.normal.Norml end, "wick.distributions.normal has no 'Norml'")
  end)

  it("samplers, Subset and random_split over a plain list of samples (DistributedSampler(train_iter_map))", function()
    local l = { { "a b", "b a" }, { "c d", "d c" }, { "e", "f" } }
    local seen = {}
    for i in wick.data.DistributedSampler(l, { num_replicas = 2, rank = 0, shuffle = false }):iter() do seen[#seen + 1] = i end
    assert.are.same({ 1, 3 }, seen)
    assert.are.equal(3, wick.data.RandomSampler(l):len())
    assert.are.equal(3, wick.data.SequentialSampler(l):len())
    local a, b = wick.data.random_split(l, { 2, 1 })
    assert.are.same({ 2, 1 }, { a:len(), b:len() })
    assert.are.same({ "e", "f" }, { wick.data.Subset(l, { 3 }):get(1) })
    local loader = wick.data.DataLoader(l, { batch_size = 2, sampler = wick.data.SequentialSampler(l),
      collate_fn = function(batch) return #batch end })
    assert.are.equal(2, loader:len())
  end)
end)

describe("memory_format (Pytorch-UNet's train.py)", function()
  it("t:to({memory_format = wick.channels_last}) lays out N, H, W, C; contiguous/is_contiguous/clone take it", function()
    local x = wick.randn(2, 3, 4, 5)
    local y = x:to({ device = "cpu", dtype = "float32", memory_format = wick.channels_last })
    assert.are.same({ 60, 1, 15, 3 }, { y:stride(1), y:stride(2), y:stride(3), y:stride(4) })
    assert.is_true(wick.equal(x, y))
    assert.is_false(y:is_contiguous())
    assert.is_true(y:is_contiguous(wick.channels_last))
    assert.is_true(y:is_contiguous({ memory_format = wick.channels_last }))
    assert.is_false(x:is_contiguous({ memory_format = wick.channels_last }))
    assert.is_true(x:contiguous({ memory_format = wick.channels_last }):is_contiguous(wick.channels_last))
    local c = y:clone({ memory_format = wick.channels_last })
    assert.is_true(c:is_contiguous(wick.channels_last))
    assert.is_false(c:is_same_storage(y))
    assert.is_true(y:contiguous():is_contiguous())
    local conv = nn.Conv2d(3, 4, 3)
    assert.is_true(wick.allclose(conv(y), conv(x), { atol = 1e-6 }))
    local v = wick.randn(1, 2, 3, 4, 5):contiguous(wick.channels_last_3d)
    assert.are.equal(1, v:stride(2))
    support.assert_error_has(function() wick.randn(2, 3):contiguous(wick.channels_last) end, "required rank 4 tensor")
    support.assert_error_has(function() x:to({ memory_format = "bogus" }) end, "memory_format must be")
    -- a module's: taken as a hint
    local m = nn.Conv2d(3, 4, 3):to({ memory_format = wick.channels_last })
    assert.is_true(m.weight:is_contiguous())
    support.assert_error_has(function() nn.Conv2d(3, 4, 3):to({ memory_format = "nchw" }) end, "memory_format must be")
  end)
end)

describe("ported lines (fourth round: minimalRL, DiT, DETR, build-nanogpt)", function()
  it("loss.backward(None, True): retain_graph by position", function()
    local x = wick.tensor({ 1, 2 }, { requires_grad = true })
    local l = (x * x):sum()
    l:backward(nil, true)
    l:backward()
    assert.are.same({ 4, 8 }, x.grad:totable())
    support.assert_error_has(function() l:backward(nil, 3) end, "argument 'retain_graph'")
  end)

  it("freqs[None] as t[wick.newaxis], reading and writing", function()
    local f = wick.arange(3)
    assert.are.same({ 1, 3 }, { f[wick.newaxis]:size(1), f[wick.newaxis]:size(2) })
    local z = wick.zeros(2, 3)
    z[wick.newaxis] = 1
    assert.are.equal(6, z:sum():item())
  end)

  it("stack of one tensor is an error (a meshgrid cut to its first result), several tensors still stack", function()
    local a, b = wick.arange(2), wick.arange(3)
    support.assert_error_has(function() wick.stack(wick.meshgrid(a, b, { indexing = "xy" }), { dim = 1 }) end,
      "must be an array of tensors, not a tensor")
    assert.are.same({ 2, 3, 2 }, support.shape_of(wick.stack({ wick.meshgrid(a, b, { indexing = "xy" }) })))
    assert.are.same({ 2, 2, 3 }, support.shape_of(wick.stack(wick.meshgrid(a, b))))
  end)
end)

describe("ported lines (eleventh round)", function()
  it("layer.reset_parameters() draws PyTorch's init again, and a subclass's override runs at construction (loralib)", function()
    wick.manual_seed(3)
    for _, m in ipairs({ nn.Linear(30, 20), nn.Conv2d(3, 8, 3), nn.Conv1d(3, 4, 5), nn.Conv3d(2, 3, 2),
      nn.ConvTranspose2d(4, 6, 3, { groups = 2 }), nn.Bilinear(5, 6, 3) }) do
      local w, before = m.weight, m.weight:clone()
      local fan = w:numel() / w:size(1)
      if getmetatable(m).__name == "Bilinear" then fan = 5 end
      m:reset_parameters()
      assert.are.equal(w, m.weight) -- in place: the same parameter
      assert.is_false(wick.equal(before, m.weight))
      assert.is_true(m.weight:abs():max():item() <= 1 / math.sqrt(fan))
      assert.is_true(m.bias:abs():max():item() <= 1 / math.sqrt(fan))
    end
    local e = nn.Embedding(6, 3, 2)
    e:reset_parameters()
    assert.are.same({ 0, 0, 0 }, e.weight[2]:totable())
    assert.are.equal(2, e.norm_type)
    local ln = nn.LayerNorm(4)
    wick.no_grad(function() ln.weight:fill_(3) end)
    ln:reset_parameters()
    assert.are.same({ 1, 1, 1, 1 }, ln.weight:totable())
    local rnn = nn.LSTM(3, 4)
    rnn:reset_parameters()
    for _, p in ipairs(rnn:parameters()) do assert.is_true(p:abs():max():item() <= 0.5) end
    local mha = nn.MultiheadAttention(8, 2)
    wick.no_grad(function() mha.in_proj_bias:fill_(1) end)
    mha:_reset_parameters()
    assert.are.equal(0, mha.in_proj_bias:abs():sum():item())
    -- PyTorch's Linear.__init__ ends with self.reset_parameters(): an override runs there
    local Zero = nn.Linear:extend("ZeroLinear")
    function Zero:reset_parameters() nn.init.zeros_(self.weight) end
    assert.is_true(Zero(3, 2).weight:eq(0):all())
  end)

  it("convs[::2] and convs[1::2]: a container slice with a step (StyleGAN2's generator)", function()
    local l = nn.ModuleList({ nn.ReLU(), nn.Tanh(), nn.ReLU(), nn.Tanh(), nn.ReLU() })
    local odd, even = l[{ { 1, -1, 2 } }], l[{ { 2, -1, 2 } }]
    assert.are.equal(3, #odd)
    assert.are.equal(2, #even)
    assert.are.equal(l[4], even[2])
    assert.is_true(odd:state_dict() ~= nil and #odd == 3)
    local s = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 2))
    assert.is_not_nil(s[{ { 1, -1, 2 } }]:state_dict()["3.weight"]) -- a Sequential's slice keeps its names
    support.assert_error_has(function() return l[{ { 1, 4, 0 } }] end, "slice step cannot be zero")
  end)

  it("enumerate(self.pts_linears) and enumerate over a ModuleDict's keys; t.to(None)", function()
    local ml = nn.ModuleList({ nn.Linear(2, 2), nn.ReLU() })
    local seen = {}
    for i, m in wick.enumerate(ml) do seen[#seen + 1] = { i, m } end
    assert.are.equal(2, #seen)
    assert.are.equal(0, seen[1][1])
    assert.are.equal(ml[2], seen[2][2])
    local keys = {}
    for _, k in wick.enumerate(nn.ModuleDict({ a = nn.ReLU(), b = nn.Tanh() })) do keys[#keys + 1] = k end
    table.sort(keys)
    assert.are.same({ "a", "b" }, keys)
    local t, device = wick.ones(2), nil
    assert.are.equal(t, t:to(device))
  end)
end)

describe("ported lines (eleventh round, continued)", function()
  it("param_group['lr'] = lr_schedule[it]: a 0-dim tensor hyper-parameter is the number it holds (DINO)", function()
    for _, case in ipairs({ { wick.optim.AdamW, 0.85 }, { wick.optim.Adam, 0.9 }, { wick.optim.SGD, 0.85 } }) do
      local p = wick.ones(3, { requires_grad = true })
      local opt = case[1]({ p }, { lr = 0.5 })
      opt.param_groups[1].lr = wick.tensor(0.1, { dtype = "float64" })
      opt.param_groups[1].weight_decay = wick.tensor(0.5, { dtype = "float64" })
      p.grad = wick.ones(3)
      opt:step()
      assert.is_true(math.abs(p[1]:item() - case[2]) < 1e-6) -- PyTorch's values
    end
  end)

  it("scheduler.get_lr() warns and gives PyTorch's value; an optimizer's load_state_dict takes the state alone", function()
    local p = wick.ones(3, { requires_grad = true })
    local opt = wick.optim.SGD({ p }, { lr = 0.1 })
    local s = wick.optim.lr_scheduler.CosineAnnealingLR(opt, 10)
    opt:step()
    s:step()
    assert.is_true(math.abs(s:get_lr()[1] - 0.09516553824444453) < 1e-12) -- PyTorch 2.15's
    assert.is_true(math.abs(s:get_last_lr()[1] - 0.09755282581475769) < 1e-12)
    support.assert_error_has(function() opt:load_state_dict(opt:state_dict(), { strict = false }) end,
      "takes the state dict alone")
  end)

  it("set_default_tensor_type of a CPU type undoes a CUDA type's device; linspace/logspace by name", function()
    local dtype = wick.get_default_dtype()
    wick.set_default_tensor_type("torch.cuda.FloatTensor")
    assert.are.equal("cuda", tostring(wick.get_default_device()):match("^cuda") and "cuda")
    wick.set_default_tensor_type("torch.FloatTensor")
    assert.are.equal("cpu", tostring(wick.get_default_device()))
    wick.set_default_dtype(dtype)
    assert.is_true(wick.equal(wick.linspace(0, 1, 3), wick.linspace({ start = 0, ["end"] = 1, steps = 3 })))
    assert.is_true(wick.equal(wick.logspace(0, 2, 3, 2), wick.logspace({ start = 0, ["end"] = 2, steps = 3, base = 2 })))
    support.assert_error_has(function() return wick.linspace({ steps = 3 }) end, "missing required argument 'start'")
  end)
end)

describe("ported lines (eleventh round, gathers and scientific ML)", function()
  it("torch.nextafter as C's, torch.gather(v, dim=-1, index=d), roll by a 0-dim index, take_along_dim", function()
    for _, dt in ipairs({ "float32", "float64" }) do
      local x = wick.tensor({ 0.5, 0.5, -0.5, 0, 0, 1 }, { dtype = dt })
      local y = wick.tensor({ 1.5, -1, -2, 1, -1, 1 }, { dtype = dt })
      local r = wick.nextafter(x, y)
      local eps = dt == "float32" and 2 ^ -24 or 2 ^ -53
      local tiny = dt == "float32" and 2 ^ -149 or 2 ^ -1074
      local want = { 0.5 + eps, 0.5 - eps / 2, -0.5 - eps, tiny, -tiny, 1 }
      for i = 1, 6 do assert.are.equal(want[i], r[i]:item()) end
      assert.is_true(wick.nextafter(wick.tensor({ 0 / 0 }, { dtype = dt }), wick.ones(1, { dtype = dt }))[1]:isnan():item())
    end
    local t = wick.tensor({ { 1, 2 }, { 3, 4 } })
    local idx = wick.tensor({ { 2, 1 }, { 1, 2 } }, { dtype = "int64" })
    assert.is_true(wick.equal(wick.gather(t, 2, idx), wick.gather(t, { dim = -1, index = idx })))
    assert.is_true(wick.equal(t:gather(2, idx), t:gather(2, { index = idx })))
    support.assert_error_has(function() return t:gather({ dim = 1 }) end, "missing required argument 'index'")
    local _, top = wick.topk(wick.tensor({ 1, 5, 2 }), 1)
    assert.are.same({ 5, 2, 1 }, wick.roll(wick.tensor({ 1, 5, 2 }), top[1], -1):totable()) -- (by 2: the 1-based index)
    assert.are.same({ 5, 2, 1 }, wick.roll(wick.tensor({ 1, 5, 2 }), { shifts = top[1], dims = -1 }):totable())
    local s = wick.tensor({ { 10, 30, 20 }, { 60, 40, 50 } })
    assert.are.same({ { 10, 20, 30 }, { 40, 50, 60 } }, wick.take_along_dim(s, wick.argsort(s, 2), 2):totable())
    assert.are.same({ 60 }, wick.take_along_dim(s, wick.argmax(s):view(1)):totable())
    assert.are.same({ 1, 0 }, wick.concatenate({ wick.ones(1), wick.zeros(1) }, { dim = 1 }):totable())
  end)

  it("autograd.grad(u, x, ones, True, True): retain_graph and create_graph by position (PINNs)", function()
    local x = wick.rand(3, 1, { requires_grad = true })
    local u = x ^ 3
    local g = wick.autograd.grad(u, x, wick.ones_like(u), true, true)[1]
    assert.is_true(g.requires_grad)
    local gg = wick.autograd.grad(g, x, wick.ones_like(g))[1]
    assert.is_true(wick.allclose(gg, x * 6))
    support.assert_error_has(function() wick.autograd.grad(u, x, nil, true, true, true, true, false, false, 1) end,
      "takes at most 9 positional arguments")
  end)

  it("torch.jit.ScriptModule and script_method, torch.__version__ checks, torch._assert", function()
    local R = wick.jit.ScriptModule:extend("RWKV_RNN")
    function R:init() self.l = nn.Linear(2, 2) end
    R.forward = wick.jit.script_method(function(self, x) return self.l(x) end)
    assert.are.same({ 1, 2 }, R()(wick.ones(1, 2)).shape)
    assert.is_true(wick.__version__ >= "1.5.0")
    support.assert_error_has(function() wick._assert(wick.tensor(false), "cell_anchors should not be None") end,
      "cell_anchors should not be None")
    wick._assert(true, "not raised")
  end)
end)

describe("PyTorch's keywords for a method's leading arguments", function()
  it("scatter(dim=, index=, src= | value=), narrow, transpose, masked_fill, index_add, reshape(shape=), view(size=), permute(dims=)", function()
    local i = wick.tensor({ { 1, 2, 3 } }, { dtype = "int64" })
    assert.is_true(wick.equal(wick.eye(3), wick.zeros(3, 3):scatter({ dim = 1, index = i, src = wick.ones(1, 3) })))
    assert.is_true(wick.equal(wick.eye(3) * 2, wick.zeros(3, 3):scatter(1, i, { value = 2 })))
    assert.is_true(wick.equal(wick.eye(3) * 3, wick.zeros(3, 3):scatter({ dim = 1, index = i, value = 3 })))
    assert.are.same({ 1, 2 }, wick.arange(0, 3):narrow({ dim = 1, start = 2, length = 2 }):totable())
    assert.are.same({ 1, 2 }, wick.narrow(wick.arange(0, 3), { dim = 1, start = 2, length = 2 }):totable())
    assert.are.same({ 2, 3 }, wick.zeros(3, 2):transpose({ dim0 = 1, dim1 = 2 }).shape)
    assert.are.same({ 1, 0 }, wick.zeros(2):masked_fill({ mask = wick.tensor({ true, false }), value = 1 }):totable())
    assert.are.same({ 0, 3, 0 }, wick.zeros(3):index_add({ dim = 1, index = wick.tensor({ 2 }):long(), source = wick.ones(1),
      alpha = 3 }):totable())
    assert.are.same({ 2, 3 }, wick.arange(0, 6):reshape({ shape = { 2, 3 } }).shape)
    assert.are.same({ 3, 2 }, wick.arange(0, 6):view({ size = { 3, 2 } }).shape)
    assert.are.same({ 3, 2 }, wick.zeros(2, 3):permute({ dims = { 2, 1 } }).shape)
    assert.are.same({}, wick.zeros(1):reshape({}).shape) -- an empty shape stays a shape
    support.assert_error_has(function() return wick.zeros(3):narrow(1, { dim = 1, start = 1, length = 1 }) end,
      "given both by position and as an option")
  end)
end)

describe("autograd.Function with an integer output (entmax's loss, support_size)", function()
  it("gets zeros of the output's dtype for it in backward, as PyTorch's", function()
    local Fn = wick.autograd.Function:extend("WithCount")
    local seen
    function Fn.forward(_, x) return x * 2, x:gt(0):sum(2) end
    function Fn.backward(_, g, counts)
      seen = counts
      return g * 2
    end
    local x = wick.randn(3, 2, { requires_grad = true })
    local y = Fn.apply(x)
    y:sum():backward()
    assert.are.equal("int64", seen.dtype)
    assert.are.same({ 0, 0, 0 }, seen:totable())
    assert.is_true(wick.equal(x.grad, wick.full({ 3, 2 }, 2)))
  end)
end)

describe("torch.ByteTensor(size=(n,)) and named keys in data", function()
  it("gives zeros of that size; a named key in wick.tensor's data is an error, not an empty tensor", function()
    assert.are.same({ 4 }, wick.ByteTensor({ size = { 4 } }).shape)
    assert.are.equal("uint8", wick.ByteTensor({ size = { 4 } }).dtype)
    assert.are.same({ 2, 3 }, wick.FloatTensor({ size = { 2, 3 } }).shape)
    support.assert_error_has(function() return wick.tensor({ size = { 4 } }) end, "has the key 'size'")
    support.assert_error_has(function() return wick.tensor({ { 1 }, { 2, x = 1 } }) end, "the table at [2] has the key 'x'")
    assert.are.same({ 0 }, wick.tensor({}).shape)
  end)
end)

describe("float32 scans and integer sums (NeRF's sample_pdf, HF's _get_unpad_data)", function()
  it("cumsum/cumprod accumulate float32 in double on the CPU, as PyTorch's; sum{dtype = int32} is int32", function()
    local w = wick.tensor({ 0.073, 0.877, 0.518, 0.628, 0.320 })
    assert.are.equal(1, wick.cumsum(w / w:sum(), 1)[-1]:item())
    assert.are.equal(10000, wick.cumsum(wick.full({ 100000 }, 0.1), 1)[-1]:item()) -- float32 steps: 9998.56
    local p = wick.cumprod(wick.full({ 100000 }, 1.0001), 1)[-1]:item()
    assert.is_true(math.abs(p - 22052.015625) < 0.01) -- PyTorch's 22052.02 (float32 steps: 22051.88)
    local cols = wick.cumsum(wick.full({ 3, 300 }, 0.1), 1) -- along a strided dim, more positions than one block
    assert.is_true(math.abs(cols[3][300]:item() - 0.3) < 1e-7)
    local m = wick.tensor({ { 0, 1, 1 }, { 1, 1, 1 } }, { dtype = "int64" })
    local s = m:sum({ dim = -1, dtype = wick.int32 })
    assert.are.equal("int32", s.dtype)
    assert.are.same({ 2, 3 }, s:totable())
    assert.are.equal("int32", m:bool():prod({ dtype = "int32" }).dtype)
  end)
end)

describe("masks inside keys (loralib, torchvision's RetinaNet)", function()
  it("a Lua list of booleans is a mask; a 1-D mask beside index tensors is the positions it selects", function()
    local x = wick.arange(0, 12):view(4, 3)
    local m = wick.tensor({ true, false, true, false })
    local c = wick.tensor({ 3, 1 }, { dtype = "int64" })
    assert.are.same({ 2, 6 }, x[{ m, c }]:totable()) -- PyTorch's x[m, c]
    assert.are.same({ 6, 2 }, x[{ c, wick.tensor({ true, false, true }) }]:totable())
    local y = wick.zeros(4, 3)
    y[{ m, c }] = 1
    assert.are.same({ { 0, 0, 1 }, { 0, 0, 0 }, { 1, 0, 0 }, { 0, 0, 0 } }, y:totable())
    local ind = wick.zeros(3, 2, { dtype = "bool" })
    ind[{ { true, false, true }, {} }] = true
    assert.are.same({ { true, true }, { false, false }, { true, true } }, ind:totable())
    assert.are.same({ { 0, 1, 2 }, { 6, 7, 8 } }, x[{ { true, false, true, false } }]:totable())
    local g = wick.randn(4, 3, { requires_grad = true })
    g[{ m, c }]:sum():backward()
    assert.are.equal(2, g.grad:sum():item())
    assert.are.equal(1, g.grad[1][3]:item())
  end)

  it("isinstance with a plain table that is no class is an error, not a silent false", function()
    assert.is_false(wick.isinstance(nn.Linear(2, 2), {})) -- an empty tuple
    assert.is_true(wick.isinstance(nn.Linear(2, 2), { nn.Conv2d, nn.Linear }))
    support.assert_error_has(function() return wick.isinstance(nn.Linear(2, 2), { merge = function() end }) end,
      "not a class")
  end)
end)

describe("lazy layers' uninitialized parameters (d2l's Trainer builds the optimizer first)", function()
  it("an optimizer built before the first forward trains them; a checkpoint loaded first is kept", function()
    wick.manual_seed(4)
    local net = nn.LazyLinear(1)
    assert.are.equal(2, #net:parameters())
    wick.no_grad(function() net.weight.data:normal_(0, 0.01); net.bias.data:fill_(0) end) -- no-ops, as PyTorch's
    local opt = wick.optim.SGD(net:parameters(), 0.03)
    local X = wick.randn(64, 2)
    local y = X:matmul(wick.tensor({ { 2 }, { -3.4 } })) + 4.2
    for _ = 1, 300 do
      opt:zero_grad()
      local loss = ((net(X) - y) ^ 2):mean()
      loss:backward()
      opt:step()
    end
    assert.is_true(wick.allclose(net.weight, wick.tensor({ { 2, -3.4 } }), { atol = 1e-3 }))
    assert.is_true(math.abs(net.bias:item() - 4.2) < 1e-3)
    assert.are.equal(1, #nn.LazyLinear(1, false):parameters())
    local src, dst = nn.Linear(3, 2), nn.LazyLinear(2)
    dst:load_state_dict(src:state_dict())
    assert.is_true(wick.equal(src(wick.ones(1, 3)), dst(wick.ones(1, 3))))
    local d2 = nn.LazyLinear(2)
    d2:load_state_dict(nn.Linear(3, 2):state_dict())
    support.assert_error_has(function() d2(wick.ones(1, 4)) end, "does not fit an input of size 4")
  end)
end)

describe("checkpoint(..., use_reentrant=False) with only closed-over parameters requiring grad (HF + LoRA)", function()
  it("gives the parameters their gradients, as PyTorch's non-reentrant form", function()
    local ckpt = wick.utils.checkpoint.checkpoint
    local w = wick.randn(4, 4, { requires_grad = true })
    local x = wick.randn(2, 4)
    ckpt(function(h) return h:matmul(w):sum() end, x, { use_reentrant = false }):backward()
    assert.is_true(wick.allclose(w.grad, x:sum(1):view(4, 1):expand(4, 4)))
    w.grad = nil
    local y = ckpt(function(h) return h:matmul(w):sum() end, x) -- the reentrant form: no input requires grad
    assert.is_false(y.requires_grad)
  end)
end)

describe("torch.nn.grad (StyleGAN2's conv2d_gradfix)", function()
  it("conv2d_input and conv2d_weight are the convolution's own gradients; 1-D and 3-D too", function()
    local F = nn.functional
    local x, w = wick.randn(2, 4, 7, 7, { dtype = "float64" }), wick.randn(6, 2, 3, 3, { dtype = "float64" })
    local opts = { stride = 2, padding = 1, groups = 2 }
    local go = wick.randn(F.conv2d(x, w, nil, opts).shape, { dtype = "float64" })
    local xx, ww = x:clone():requires_grad_(), w:clone():requires_grad_()
    F.conv2d(xx, ww, nil, opts):backward(go)
    assert.is_true(wick.allclose(nn.grad.conv2d_input(x.shape, w, go, 2, 1, 1, 2), xx.grad))
    assert.is_true(wick.allclose(nn.grad.conv2d_weight(x, w.shape, go, opts), ww.grad))
    local x1, w1 = wick.randn(2, 3, 10), wick.randn(5, 3, 4)
    local g1 = wick.randn(F.conv1d(x1, w1, nil, { dilation = 2 }).shape)
    assert.are.same({ 5, 3, 4 }, nn.grad.conv1d_weight(x1, w1.shape, g1, 1, 0, 2).shape)
    local x3, w3 = wick.randn(1, 2, 4, 4, 4), wick.randn(3, 2, 2, 2, 2)
    assert.are.same({ 1, 2, 4, 4, 4 }, nn.grad.conv3d_input(x3.shape, w3, wick.randn(F.conv3d(x3, w3).shape)).shape)
    support.assert_error_has(function() nn.grad.conv2d_input({ 1, 1, 5, 5 }, wick.randn(1, 1, 3, 3), wick.randn(1, 1, 2, 2)) end,
      "does not match the convolution's output [1, 1, 3, 3]")
  end)
end)

describe("torch.linalg.lstsq as PyTorch's (efficient-kan's curve2coeff)", function()
  it("takes rcond and driver, gives rank/residuals/singular_values, names bad shapes, and differentiates", function()
    local L = wick.linalg
    local A, B = wick.randn(6, 4, { dtype = "float64" }), wick.randn(6, 2, { dtype = "float64" })
    local r = L.lstsq(A, B, { driver = "gelsd" })
    assert.are.equal(4, r.rank:item())
    assert.are.equal(4, r.singular_values:numel())
    assert.is_true(wick.allclose(r.residuals, (A:matmul(r.solution) - B):pow(2):sum(1)))
    assert.are.equal(0, L.lstsq(A, B).residuals:numel()) -- gelsy: none, as PyTorch's
    assert.are.equal(0, L.lstsq(A, B, { driver = "gels" }).rank:numel())
    local A2, B2 = wick.tensor({ { 1, 0 }, { 0, 1e-3 }, { 0, 0 } }), wick.tensor({ { 1 }, { 1 }, { 0 } })
    assert.are.same({ { 1 }, { 0 } }, L.lstsq(A2, B2, { rcond = 1e-2 }).solution:totable()) -- rank 1, PyTorch's
    support.assert_error_has(function() L.lstsq(wick.randn(3, 2), wick.randn(4, 1)) end,
      "input.size(-2) should match other.size(-2)")
    support.assert_error_has(function() L.lstsq(A, B, { driver = "foo" }) end, "should be one of (gels, gelsy, gelsd, gelss)")
    support.assert_error_has(function() L.lstsq(A, B, { bogus = 1 }) end, "unknown option 'bogus'")
    for _, shape in ipairs({ { 5, 3 }, { 3, 5 } }) do
      local a = wick.randn(shape[1], shape[2], { dtype = "float64", requires_grad = true })
      local b = wick.randn(shape[1], 2, { dtype = "float64", requires_grad = true })
      assert.is_true(wick.autograd.gradcheck(function(x, y) return L.lstsq(x, y).solution end, { a, b }))
    end
  end)
end)

describe("copy.deepcopy of a module whose hook is a bound method (BYOL's target encoder)", function()
  it("binds the copy's hook to the copy; a hook over nothing copied stays shared", function()
    local W = nn.Module:extend("HookedWrapper")
    function W:init()
      self.net = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
      self.hidden = {}
      self.net[1]:register_forward_hook(function(m, i, o) return self:_hook(m, i, o) end)
    end
    function W:_hook(_, _, o) self.hidden.out = o end
    function W:forward(x)
      self.net(x)
      return self.hidden.out
    end
    local w = W()
    local c = wick.deepcopy(w)
    assert.is_not_nil(c(wick.ones(1, 2)))
    assert.is_nil(w.hidden.out) -- the original's dict untouched, as PyTorch's
    local count = 0
    local l = nn.Linear(2, 2)
    l:register_forward_hook(function() count = count + 1 end)
    wick.deepcopy(l)(wick.ones(1, 2))
    l(wick.ones(1, 2))
    assert.are.equal(2, count)
  end)
end)

describe("module state as PyTorch keeps it (YOLOv3, ddpm, SD's scripts)", function()
  it("a plain table of modules registered below is not named twice; an init tensor is no state, as PyTorch's", function()
    local D = nn.Module:extend("YoloLike")
    function D:init()
      self.module_list = nn.ModuleList({ nn.Sequential(nn.Linear(2, 2)) })
      self.heads = { self.module_list[1][1] }
      self.grid = wick.zeros(1)
    end
    local keys = {}
    for k in pairs(D():state_dict()) do keys[#keys + 1] = k end
    table.sort(keys)
    assert.are.same({ "module_list.1.1.bias", "module_list.1.1.weight" }, keys)
    local m = D()
    m.grid = wick.ones(1, 1, 4, 4, 2)
    local fresh = D()
    fresh:load_state_dict(m:state_dict()) -- strict: the grid is in neither
    assert.are.equal(1, fresh.grid:numel())
    -- an older checkpoint that has it (or CLIP's attn_mask) still loads, the saved tensor taken
    local sd = m:state_dict()
    sd.grid = wick.ones(1, 1, 4, 4, 2)
    fresh:load_state_dict(sd)
    assert.are.equal(32, fresh.grid:sum():item())
  end)

  it("missing, unexpected = load_state_dict(sd, strict=False); an nn.Parameter over an init tensor is a parameter", function()
    local l = nn.Linear(2, 2)
    local sd = l:state_dict()
    sd.bias, sd.extra = nil, wick.zeros(1)
    local missing, unexpected = l:load_state_dict(sd, false)
    assert.are.same({ "bias" }, { missing[1] })
    assert.are.equal(1, #missing)
    assert.are.same({ "extra" }, unexpected)
    assert.are.same({ "bias" }, missing.missing_keys)
    local M = nn.Module:extend("LogvarLike")
    function M:init()
      self.logvar = wick.full({ size = { 4 }, fill_value = 0 })
      self.logvar = nn.Parameter(self.logvar, true)
    end
    assert.are.equal(1, #M():parameters())
    assert.are.equal(0, #M():buffers())
    local TB = nn.Module:extend("TimestepBlock")
    support.assert_error_has(function() return nn.Sequential:extend("TES", TB) end, "a class has one base")
  end)

  it("t:data_ptr() and sizes made of 0-dim tensors (SAM's size=(h, w)); two masks to a power is an error", function()
    local e = nn.Embedding(4, 2)
    local l = nn.Linear(2, 4, false)
    l.weight = e.weight
    assert.are.equal(e.weight:data_ptr(), l.weight:data_ptr())
    assert.are.equal(8, e.weight[2]:data_ptr() - e.weight:data_ptr())
    local F = nn.functional
    local sz = wick.tensor({ 6, 5 }, { dtype = "int64" })
    assert.are.same({ 1, 2, 6, 5 }, F.interpolate(wick.randn(1, 2, 4, 4), { size = { sz[1], sz[2] }, mode = "bilinear",
      align_corners = false }).shape)
    assert.are.same({ 1, 2, 6, 5 }, F.adaptive_avg_pool2d(wick.randn(1, 2, 8, 8), { sz[1], sz[2] }).shape)
    local b = wick.tensor({ true, false })
    support.assert_error_has(function() return b ^ b end, "Python's ^ is xor") -- (the operator, round 31)
    support.assert_error_has(function() return b:pow(b) end, "not implemented for two bool tensors")
    assert.are.same({ 1, 0 }, b:pow(2):totable())
  end)
end)

describe("HF lines: checkpointed layers returning tuples, where(t.any(), ...), torch.min(x, other=y)", function()
  it("tracks a checkpointed function's table of outputs; takes a Lua boolean condition; min/max take other by name", function()
    local lin = nn.Linear(4, 4)
    local h = wick.randn(2, 4, { requires_grad = true })
    local out = wick.utils.checkpoint.checkpoint(function(x) return { lin(x), nil, x:sum() } end, h)
    assert.is_true(out[1].requires_grad)
    assert.is_nil(out[2])
    local loss = out[1]:sum() + out[3]
    loss:backward()
    assert.is_not_nil(lin.weight.grad)
    -- the tuple as table.pack's {n = 3, a, nil, c} (T5Stack's checkpointed branch): tracked, n kept
    lin:zero_grad()
    local packed = wick.utils.checkpoint.checkpoint(function(x) return { n = 3, lin(x), nil, x * 2 } end, h)
    assert.is_true(packed[1].requires_grad)
    assert.are.equal(3, packed.n)
    assert.is_nil(packed[2])
    ;(packed[1]:sum() + packed[3]:sum()):backward()
    assert.is_not_nil(lin.weight.grad)
    local hf = wick.tensor({ 1, math.huge })
    assert.are.equal(1, wick.where(wick.isinf(hf):any(), wick.ones({}), wick.zeros({})):item())
    -- beside tensors of values a boolean is a ported comparison gone wrong (round 36): an error
    support.assert_error_has(function() return wick.where(false, wick.ones(2), wick.zeros(2)) end,
      "the condition is a Lua boolean (false), not a tensor")
    assert.are.same({ 1, 3 }, wick.min(wick.tensor({ 1, 5 }), { other = wick.tensor({ 3, 3 }) }):totable())
    assert.are.same({ 3, 5 }, wick.tensor({ 1, 5 }):max({ other = wick.tensor({ 3, 3 }) }):totable())
    local p = wick.ones(1, { requires_grad = true })
    local plateau = wick.optim.lr_scheduler.ReduceLROnPlateau(wick.optim.SGD({ p }, { lr = 0.1 }))
    support.assert_error_has(function() plateau:get_lr() end, "use get_last_lr()")
  end)
end)

describe("index_add_/index_copy_ indices and take (cleanrl's C51)", function()
  it("refuses negative or float indices naming the op, as PyTorch; take counts negatives from the end", function()
    local neg = wick.tensor({ -1 }, { dtype = "int64" })
    support.assert_error_has(function() return wick.zeros(5):index_add_(1, neg, wick.ones(1)) end,
      "index_add_: index -1 is out of bounds for dimension 1 with size 5")
    support.assert_error_has(function() return wick.zeros(5):index_copy_(1, neg, wick.ones(1)) end,
      "index_copy_: index -1 is out of bounds")
    support.assert_error_has(function() return wick.zeros(5):index_add_(1, wick.tensor({ 1 }), wick.ones(1)) end,
      "index_add_: expected dtype int32/int64 for index, got float32")
    assert.are.same({ 0, 2, 0 }, wick.zeros(3):index_add_(1, wick.tensor({ 2, 2 }):long(), wick.ones(2)):totable())
    assert.are.same({ 4, 0 }, wick.arange(0, 5):take(wick.tensor({ -1, 1 }, { dtype = "int64" })):totable())
  end)
end)

describe("an integer tensor's clamp_ with a float bound (PyTorch-YOLOv3's gj.clamp_(0, gain[3] - 1))", function()
  it("is refused, as PyTorch refuses it, where an integer bound works", function()
    local t = wick.tensor({ -1, 5, 9 }, { dtype = "int64" })
    support.assert_error_has(function() t:clamp_(0, wick.tensor(6.5)) end, "can't be cast to the desired output type int64")
    support.assert_error_has(function() t:clamp_(0, 6.5) end, "can't be cast to the desired output type int64")
    assert.are.same({ 0, 5, 6 }, t:clamp_(0, wick.tensor(6):long()):totable())
  end)
end)

describe("GNN lines in plain PyTorch (scatter_reduce, degree powers, index_add dtypes)", function()
  it("takes reduce= by name; refuses an integer to a negative power and mixed dtypes, as PyTorch; loads from a tensor", function()
    local i = wick.tensor({ 1, 1, 3 }, { dtype = "int64" })
    local v = wick.tensor({ 1, 5, 2 })
    assert.are.same({ 5, 0, 2 }, wick.zeros(3):scatter_reduce(1, i, v, { reduce = "amax", include_self = false }):totable())
    assert.are.same({ 5, 0, 2 }, wick.zeros(3):index_reduce(1, i, v, { reduce = "amax" }):totable())
    local deg = wick.bincount(wick.tensor({ 1, 1, 2 }, { dtype = "int64" }), { minlength = 3 })
    support.assert_error_has(function() return deg:pow(-1) end, "Integers to negative integer powers are not allowed")
    support.assert_error_has(function() return deg ^ -1 end, "Integers to negative integer powers are not allowed")
    assert.are.same({ 0.5, 1, math.huge }, deg:float():pow(-1):totable())
    support.assert_error_has(function() return wick.zeros(3, { dtype = "int64" }):index_add_(1, i, v) end,
      "self (int64) and source (float32) must have the same scalar type")
    support.assert_error_has(function() return wick.zeros(3):scatter_add(1, i, wick.ones(3, { dtype = "int64" })) end,
      "Expected self.dtype to be equal to src.dtype")
    support.assert_error_has(function() return wick.zeros(3):index_put_({ i }, wick.ones(3, { dtype = "float64" })) end,
      "Index put requires the source and destination dtypes match")
    local seen = {}
    for b in wick.data.DataLoader(wick.arange(1, 8, { dtype = "int64" }), { batch_size = 3 }) do seen[#seen + 1] = b:totable() end
    assert.are.same({ { 1, 2, 3 }, { 4, 5, 6 }, { 7 } }, seen)
  end)
end)

describe("state_dict() as PyTorch's OrderedDict (timm's ModelEmaV2)", function()
  it("iterates keys/values/items in registration order and has pop/get/update/copy; pairs and saving still see a table", function()
    local sd = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2)):state_dict()
    local keys = {}
    for k in sd:keys() do keys[#keys + 1] = k end
    assert.are.same({ "1.weight", "1.bias", "2.weight", "2.bias", "2.running_mean", "2.running_var",
      "2.num_batches_tracked" }, keys)
    local values = {}
    for v in sd:values() do values[#values + 1] = v end
    assert.are.equal(sd["1.weight"], values[1])
    assert.are.same({ 2, 2 }, sd:pop("1.weight").shape)
    assert.is_nil(sd["1.weight"])
    assert.are.equal(5, sd:get("1.weight", 5))
    sd.extra = wick.zeros(1)
    local after = {}
    for k in sd:copy():keys() do after[#after + 1] = k end
    assert.are.equal("1.bias", after[1])
    assert.are.equal("extra", after[#after])
    local n = 0
    for _ in pairs(sd) do n = n + 1 end
    assert.are.equal(7, n)
    local m = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    m:load_state_dict(nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2)):state_dict())
  end)
end)

describe("timm's and torchaudio's lines (EMA, conv attributes, i0, keywords)", function()
  it("lerp_(x, weight=), _foreach_lerp_/_foreach_mul_(scalar=), conv tuples, i0, stft(input=), nn.modules paths", function()
    local a = wick.zeros(3)
    a:lerp_(wick.ones(3), { weight = 0.25 })
    assert.are.same({ 0.25, 0.25, 0.25 }, a:totable())
    local l = { wick.zeros(2) }
    wick._foreach_lerp_(l, { wick.ones(2) }, { weight = 0.5 })
    assert.are.same({ 0.5, 0.5 }, l[1]:totable())
    local m = { wick.ones(2) }
    wick._foreach_mul_(m, { scalar = 0.5 })
    assert.are.same({ 0.5, 0.5 }, m[1]:totable())
    local c = nn.Conv2d(1, 32, { kernel_size = { 41, 11 }, stride = { 2, 2 }, padding = { 20, 5 } })
    assert.are.same({ 1, 1 }, c.dilation)
    assert.are.same({ 20, 5 }, c.padding)
    assert.are.same({ 3 }, nn.Conv1d(1, 2, 3).kernel_size)
    assert.are.equal("same", nn.Conv1d(1, 2, 3, { padding = "same" }).padding)
    assert.are.same({ 1, 2, 5 }, nn.Conv1d(2, 2, 3, { padding = 1, padding_mode = "circular" })(wick.randn(1, 2, 5)):size())
    local x = wick.tensor({ 0, 1, 5, 30, -3 }, { dtype = "float64" })
    local want = { 1, 1.2660658777520082, 27.239871823604442, 781672297823.97748, 4.8807925858650245 } -- PyTorch 2.15's
    for i = 1, 5 do assert.is_true(math.abs(wick.i0(x)[i]:item() / want[i] - 1) < 1e-11) end
    assert.is_true(math.abs(wick.special.i0e(x)[4]:item() - 0.0731459464822373) < 1e-13)
    assert.are.same({ 33, 26 }, wick.stft({ input = wick.randn(400), n_fft = 64, return_complex = true }).shape)
    assert.are.same({ 8 }, wick.hann_window({ window_length = 8 }).shape)
    assert.are.equal(nn.Conv2d, nn.modules.conv.Conv2d)
    support.assert_error_has(function() return wick.randn(2, 3):amax({ dim = 1 }, true) end, "options go last")
  end)
end)

describe("unique_consecutive(dim=)", function()
  it("keeps the first of each run of equal slices, with inverse and counts", function()
    local v, i, c = wick.tensor({ { 1, 2 }, { 1, 2 }, { 3, 4 }, { 1, 2 } }):unique_consecutive({ dim = 1,
      return_inverse = true, return_counts = true })
    assert.are.same({ { 1, 2 }, { 3, 4 }, { 1, 2 } }, v:totable())
    assert.are.same({ 1, 1, 2, 3 }, i:totable())
    assert.are.same({ 2, 1, 1 }, c:totable())
    assert.are.same({ { 1, 2 }, { 1, 2 } }, wick.tensor({ { 1, 1, 2 }, { 1, 1, 2 } }):unique_consecutive({ dim = 2 }):totable())
  end)
end)

describe("user-written optimizers and schedulers (SAM, Lion, Adafactor, DLRM's LRPolicyScheduler)", function()
  it("isinstance(m, _BatchNorm), _LRScheduler, an own optimizer's options and state kept as given, print(opt)", function()
    assert.is_true(wick.isinstance(nn.BatchNorm2d(3), nn.modules.batchnorm._BatchNorm))
    assert.is_true(wick.isinstance(nn.SyncBatchNorm(3), nn._BatchNorm))
    assert.is_true(wick.isinstance(nn.Conv1d(1, 1, 1), nn.modules.conv._ConvNd))
    assert.is_false(wick.isinstance(nn.Linear(1, 1), nn._ConvNd))
    support.assert_error_has(function() return wick.isinstance(nn.Linear(1, 1), nil) end, "the class is nil")
    assert.are.equal(wick.optim.lr_scheduler.LRScheduler, wick.optim.lr_scheduler._LRScheduler)
    local Adan = wick.optim.Optimizer:extend("Adan")
    function Adan:init(p, b) Adan.super.init(self, p, { lr = 1e-3, betas = b }) end
    local w = nn.Parameter(wick.randn(4, 5))
    assert.are.same({ 0.98, 0.92, 0.99 }, Adan({ w }, { 0.98, 0.92, 0.99 }).param_groups[1].betas)
    local o = Adan({ w }, { 0.9, 1.0 })
    o.state[w].row = wick.zeros(4) -- a factored moment, not the parameter's shape
    Adan({ w }, { 0.9, 0.9 }):load_state_dict(o:state_dict())
    support.assert_error_has(function() wick.optim.Adam({ w }, { betas = { 0.9, 1.5 } }) end, "got {0.9, 1.5}")
    local text = tostring(wick.optim.SGD({ w }, { lr = 0.1, momentum = 0.9 }))
    assert.is_truthy(text:find("SGD (\nParameter Group 0\n", 1, true))
    assert.is_truthy(text:find("    momentum: 0.9\n", 1, true))
    assert.are.equal(6, wick.tril_indices(4, 4, { offset = -1 }):size(2)) -- DLRM's interaction pairs
    assert.are.equal("int32", wick.tril_indices(3, 3, -1, { dtype = "int32" }).dtype)
    support.assert_error_has(function() wick.tril_indices(3, 3, -1, { bogus = true }) end, "unknown option 'bogus'")
  end)
end)

describe("torch.distributions forms (MDNs, Gumbel-softmax)", function()
  it("positional validate_args and (probs, logits); rsample/sample_n on every distribution; gumbel_softmax's order", function()
    local D, F = wick.distributions, nn.functional
    assert.are.equal(0, D.Normal(0, 1, false).loc:item())
    assert.is_true(wick.allclose(D.Categorical(nil, wick.zeros(3)).probs, wick.full({ 3 }, 1 / 3)))
    support.assert_error_has(function() D.OneHotCategorical({ logits = wick.zeros(3) }):rsample() end,
      "OneHotCategorical:rsample: has no reparameterised draws")
    assert.are.same({ 2 }, D.Normal(0, 1):sample_n(2).shape)
    assert.are.same({ 1, 1 }, F.gumbel_softmax(wick.zeros(2, 3), 1, true):sum(2):totable())
    assert.are.same({ 2, 3 }, F.gumbel_softmax(wick.zeros(2, 3), { tau = wick.tensor(0.5) }).shape)
  end)
end)

describe("loss tensors by name, hx by name, sparse embeddings, len(state_dict)", function()
  it("F.kl_div(input=, target=), gru(x, hx=h), Embedding(sparse=True) with dense gradients, sd:len()", function()
    local F = nn.functional
    assert.are.same({ 2, 3 }, F.kl_div({ input = wick.randn(2, 3), target = wick.rand(2, 3), reduction = "none" }).shape)
    assert.are.equal(1, F.mse_loss({ input = wick.ones(2), target = wick.zeros(2) }):item())
    support.assert_error_has(function() F.mse_loss({ target = wick.zeros(2) }) end, "missing required argument 'input'")
    assert.are.same({ 2, 4 }, nn.GRUCell(3, 4)(wick.randn(2, 3), { hx = wick.zeros(2, 4) }).shape)
    local _, h = nn.GRU(3, 4)(wick.randn(5, 2, 3), { hx = wick.zeros(1, 2, 4) })
    assert.are.same({ 1, 2, 4 }, h.shape)
    local e = nn.Embedding(5, 2, { sparse = true })
    assert.is_true(e.sparse)
    e(wick.tensor({ 1, 2 }):long()):sum():backward()
    assert.are.equal(0, e.weight.grad[5]:abs():sum():item())
    assert.are.equal(2, nn.Linear(2, 2):state_dict():len())
    assert.are.equal("LayerNorm((8,), eps=1e-05, elementwise_affine=True, bias=False)", tostring(nn.LayerNorm(8, { bias = false })))
  end)
end)

describe("forward hooks' options (PyTorch's module hooks recipe)", function()
  it("prepend, with_kwargs and always_call as PyTorch's; another option is an error", function()
    local m = nn.Linear(3, 2)
    local seen = {}
    m:register_forward_hook(function(_, _, kwargs, output) seen.kwargs, seen.output = kwargs, output end, { with_kwargs = true })
    m:register_forward_pre_hook(function(_, args, kwargs) seen.pre = { #args, type(kwargs) } end, { with_kwargs = true })
    local order = {}
    m:register_forward_hook(function() order[#order + 1] = "first" end)
    m:register_forward_hook(function() order[#order + 1] = "prepended" end, { prepend = true })
    m(wick.ones(1, 3))
    assert.are.same({}, seen.kwargs)
    assert.are.same({ 1, 2 }, seen.output.shape)
    assert.are.same({ 1, "table" }, seen.pre)
    assert.are.equal("prepended", order[1])
    support.assert_error_has(function() m:register_forward_hook(function() end, { bogus = 1 }) end, "unknown option 'bogus'")
    local bad, called = nn.Linear(3, 2), false
    bad:register_forward_hook(function(_, _, out) called = out == nil end, { always_call = true })
    assert.is_false(pcall(bad, wick.ones(1, 4)))
    assert.is_true(called)
  end)
end)

describe("minGRU's and the TensorBoard tutorial's lines", function()
  it("logcumsumexp(dim=), a one-element index as a slice start, deepcopy of a state dict, a closed writer", function()
    local x = wick.randn(2, 5, 3)
    assert.are.equal(0, (x:logcumsumexp(2) - x:logcumsumexp({ dim = 2 })):abs():max():item())
    assert.are.same({ 2, 5, 3 }, x:cummax({ dim = 2 }).shape)
    local d = wick.arange(0, 20)
    local rs = wick.randint(0, 10, { 1 })
    assert.are.equal(rs[1]:item(), d[{ { rs + 1, rs + 5 } }][1]:item())
    local m = nn.Linear(2, 2)
    local sd = m:state_dict()
    local c = wick.deepcopy(sd)
    assert.is_false(rawequal(c, sd))
    wick.no_grad(function() m.bias:add_(1) end)
    assert.is_true((c.bias - m.bias):abs():max():item() > 0) -- a copy, not the live tensors
    local keys = {}
    for k in c:keys() do keys[#keys + 1] = k end
    assert.are.same({ "weight", "bias" }, keys)
    assert.is_truthy(tostring(sd):find("^OrderedDict%(%[%('weight', "))
    local prof = wick.profiler.profile(function(p) for _ = 1, 3 do wick.ones(2):add(1); p:step() end end)
    assert.are.equal(3, prof.step_num)
  end)
end)

describe("nn.Module from the meta device and a subclass's super().__init__ by name", function()
  it("to_empty makes a meta model real in place; super.init takes required arguments by name", function()
    local m = wick.device("meta", function() return nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2)) end)
    local w = m[1].weight
    m:to_empty({ device = "cpu" })
    assert.are.equal("cpu", tostring(m[1].weight.device))
    assert.are.equal(w, m[1].weight)
    m:load_state_dict(nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2)):state_dict())
    assert.are.same({ 4, 2 }, m(wick.ones(4, 3)).shape)
    local C = nn.Conv1d:extend("CausalConv1d")
    function C:init(i, o, k) C.super.init(self, i, o, { kernel_size = k, padding = k - 1 }) end
    assert.are.same({ 1, 1, 13 }, C(1, 1, 4)(wick.randn(1, 1, 10)).shape)
  end)
end)

describe("statistics lines: cov, corrcoef, mode, pdist (values from PyTorch 2.15)", function()
  local function near(want, got, tol)
    local g = got:tolist()
    for i = 1, #want do
      if type(want[i]) == "table" then
        for j = 1, #want[i] do assert.is_true(math.abs(want[i][j] - g[i][j]) < tol, i .. "," .. j) end
      else
        assert.is_true(math.abs(want[i] - g[i]) < tol, tostring(i))
      end
    end
  end
  local x = wick.tensor({ { 1, 2, 4, 7 }, { 0, 3, 3, 1 }, { 2, 2, 5, 0 } })
  it("cov with correction, fweights and aweights; corrcoef", function()
    near({ { 7, 1 / 6, -11 / 6 }, { 1 / 6, 2.25, 1.75 }, { -11 / 6, 1.75, 4.25 } }, wick.cov(x), 1e-5)
    near({ { 3.7024794, -0.5619835, -0.7603306 }, { -0.5619835, 1.1404958, 1.1900827 }, { -0.7603306, 1.1900827, 3.4710741 } },
      x:cov({ correction = 0, fweights = wick.tensor({ 1, 2, 1, 1 }), aweights = wick.tensor({ 0.5, 1, 2, 1 }) }), 1e-5)
    near({ { 1, 0.0419961, -0.3361228 }, { 0.0419961, 1, 0.5659165 }, { -0.3361228, 0.5659165, 1 } }, x:corrcoef(), 1e-5)
  end)
  it("mode keeps the smallest of a tie and the index of its last occurrence; pdist", function()
    local v, i = wick.mode(wick.tensor({ { 3, 1, 3, 1, 2 }, { 5, 5, 4, 4, 4 } }, { dtype = wick.int64 }), 2)
    assert.are.same({ 1, 4 }, v:tolist())
    assert.are.same({ 4, 5 }, i:tolist()) -- PyTorch's 3, 4 counted from 1
    near({ 6.2449980, 7.1414285, 3.1622777 }, wick.pdist(x), 1e-5)
    near({ 9, 9, 6 }, wick.pdist(x, 1), 1e-5)
    assert.has_error(function() wick.pdist(x, -1) end, "pdist: only supports non-negative p values, got -1")
    assert.has_error(function() wick.mode(wick.zeros(3, 0), 2) end,
      "mode: Expected reduction dim 2 to have non-zero size (shape [3, 0])")
    assert.are.equal(0, wick.flip(x, { dims = { 2 } })[1][1]:item() - 7)
    assert.are.equal(-1, x:get_device())
  end)
end)

describe("svd_lowrank and pca_lowrank", function()
  it("give the leading singular triplets (PyTorch's svdvals) and refuse a q past min(m, n)", function()
    local A = wick.tensor({ { 1, 2, 4, 7 }, { 0, 3, 3, 1 }, { 2, 2, 5, 0 }, { 1, 1, 1, 1 }, { 3, 0, 2, 5 } })
    local U, S, V = wick.svd_lowrank(A, 3)
    assert.are.same({ 5, 3 }, U.shape)
    assert.are.same({ 4, 3 }, V.shape)
    local want = { 11.2998629, 5.2654524, 2.7655571 }
    for i = 1, 3 do assert.is_true(math.abs(S[i]:item() - want[i]) < 1e-4) end
    local _, S2, V2 = A:pca_lowrank()
    assert.are.same({ 4, 4 }, V2.shape)
    want = { 6.1558384, 3.5338993, 2.5970705, 0.2691341 }
    for i = 1, 4 do assert.is_true(math.abs(S2[i]:item() - want[i]) < 1e-4) end
    assert.has_error(function() wick.svd_lowrank(A, 7) end, "svd_lowrank: q must be at most min(m, n) = 4, got 7")
  end)
end)

describe("searchsorted's sorter and out_int32, and large inputs", function()
  it("takes sorter and out_int32, and the merge path agrees with comparing every pair", function()
    local seq = wick.tensor({ 5, 1, 3, 9 })
    local at = wick.searchsorted(seq, wick.tensor({ 2, 6 }), { sorter = seq:argsort(), out_int32 = true })
    assert.are.equal("int32", at.dtype)
    assert.are.same({ 2, 4 }, at:tolist())
    wick.manual_seed(3)
    for _, case in ipairs({ { 40, 5000 }, { 5000, 40 } }) do
      local s = wick.randint(0, 20, { case[1] }):float():sort()
      local v = wick.randint(-1, 22, { case[2] }):float()
      v[2] = 0 / 0
      for _, right in ipairs({ false, true }) do
        local want = (right and s:unsqueeze(1):le(v:unsqueeze(2)) or s:unsqueeze(1):lt(v:unsqueeze(2))):long():sum(2) + 1
        want[2] = case[1] + 1 -- NaN goes last
        assert.are.equal(0, (wick.searchsorted(s, v, { right = right }) - want):abs():max():item())
      end
    end
    local s2, v2 = wick.randn(3, 300):sort(-1), wick.randn(3, 400)
    local want = s2:unsqueeze(-2):lt(v2:unsqueeze(-1)):long():sum(-1) + 1
    assert.are.equal(0, (wick.searchsorted(s2, v2) - want):abs():max():item())
    assert.has_error(function() wick.searchsorted(wick.ones(2, 3), 2) end)
  end)
end)

describe("histogram over a tensor of edges", function()
  it("counts [e_i, e_i+1) with the last bin closed, weights and density as PyTorch's", function()
    local x = wick.tensor({ 0.1, 0.5, 1.0, 1.5, 2.0, 3.0, 2.5, -1 })
    local h, e = wick.histogram(x, wick.tensor({ 0, 1, 2.5 }))
    assert.are.same({ 2, 4 }, h:tolist())
    assert.are.same({ 0, 1, 2.5 }, e:tolist())
    h = wick.histogram(x, { bins = wick.tensor({ 0, 1, 2.5 }), density = true, weight = wick.ones(8) * 2 })
    assert.is_true(math.abs(h[1]:item() - 1 / 3) < 1e-6 and math.abs(h[2]:item() - 4 / 9) < 1e-6)
    assert.has_error(function() wick.histogram(x, wick.tensor({ 1, 0 })) end, "histogram: bin edges must be increasing")
  end)
end)

describe("a twelfth round of ported lines", function()
  local unpack = table.unpack or unpack -- luacheck: ignore
  it("NumPy's names (insightface's logits.arccos_()), combinations, gcd/lcm, trapezoid, vander", function()
    local t = wick.tensor({ 0.5, 0.25 }, { dtype = "float64" })
    support.assert_close(t:arccos():totable(), t:acos():totable(), 0)
    support.assert_close(t:clone():arccos_():totable(), t:acos():totable(), 0)
    support.assert_close(wick.arctan2(t, t * 2):totable(), wick.atan2(t, t * 2):totable(), 0)
    support.assert_close(t:clone():arctanh_():totable(), t:atanh():totable(), 0)
    assert.are.same({ 1, 0.5 }, wick.multiply(t, 2):totable())
    assert.are.same({ true, false }, wick.greater(t, 0.3):totable())
    assert.are.same({ -1, 2 }, wick.fix(wick.tensor({ -1.5, 2.7 })):totable())
    assert.are.same({ 4, 3 }, wick.rsub(wick.tensor({ 1, 2 }), 5):totable())
    -- itertools.combinations / torch.combinations, with and without replacement
    local c = wick.combinations(wick.tensor({ 10, 20, 30, 40 }), 2)
    assert.are.same({ { 10, 20 }, { 10, 30 }, { 10, 40 }, { 20, 30 }, { 20, 40 }, { 30, 40 } }, c:totable())
    assert.are.equal(6, wick.combinations(wick.tensor({ 1, 2, 3 }), { r = 2, with_replacement = true }):size(1))
    assert.are.equal(4, wick.combinations(wick.tensor({ 1, 2, 3, 4 }), 3):size(1))
    local i64 = { dtype = "int64" }
    assert.are.same({ 4, 9, 5, 2 }, wick.gcd(wick.tensor({ 12, 18, 0, -4 }, i64), wick.tensor({ 8, 27, 5, 6 }, i64)):totable())
    assert.are.same({ 12, 12, 0 }, wick.lcm(wick.tensor({ 4, 6, 0 }, i64), wick.tensor({ 6, 4, 3 }, i64)):totable())
    local y = wick.tensor({ 1, 4, 9, 16 })
    assert.are.equal(21.5, wick.trapezoid(y):item())
    assert.are.equal(53, wick.trapz(y, wick.tensor({ 0, 1, 3, 6 })):item())
    assert.are.same({ 2.5, 9, 21.5 }, wick.cumulative_trapezoid(y):totable())
    assert.are.same({ { 1, 1, 1 }, { 4, 2, 1 }, { 9, 3, 1 } }, wick.vander(wick.tensor({ 1, 2, 3 })):totable())
    assert.are.same({ 1, 1 }, { unpack(wick.atleast_2d(wick.tensor(3)):size()) })
  end)

  it("center loss's distmat.addmm_(1, -2, x, centers.t()), with PyTorch's deprecation warning", function()
    local x, centers = wick.randn(3, 4), wick.randn(5, 4)
    local want = wick.zeros(3, 5):addmm_(x, centers:t(), { beta = 1, alpha = -2 })
    local got
    local warned = support.warnings_of(function() got = wick.zeros(3, 5):addmm_(1, -2, x, centers:t()) end)
    support.assert_close(got:totable(), want:totable(), 1e-6)
    assert.is_truthy(warned[1] and warned[1]:find("This overload of addmm_ is deprecated", 1, true))
  end)

  it("torch.cuda.amp.autocast(False) by position, and F.multi_head_attention_forward's embed_dim_to_check", function()
    assert.are.equal(7, wick.cuda.amp.autocast(false, function() return 7 end))
    local x = wick.randn(5, 2, 8)
    support.assert_error_has(function()
      F.multi_head_attention_forward(x, x, x, 6, 2, wick.randn(24, 8), wick.zeros(24), nil, nil, false, 0.0,
        wick.randn(8, 8), wick.zeros(8), { need_weights = false })
    end, "was expecting embedding dimension of 6, but got 8")
  end)

  it("warns when scheduler.step() comes before optimizer.step(), and on step(epoch), as PyTorch", function()
    local opt = wick.optim.SGD({ nn.Parameter(wick.zeros(1)) }, { lr = 0.1 })
    local s = wick.optim.lr_scheduler.StepLR(opt, 2)
    local w = support.warnings_of(function() s:step() end)
    assert.is_truthy(w[1] and w[1]:find("Detected call of `lr_scheduler.step()` before `optimizer.step()`", 1, true))
    opt:step()
    w = support.warnings_of(function() s:step(5) end)
    assert.is_truthy(w[1] and w[1]:find("The epoch parameter in `scheduler.step()` was not necessary", 1, true))
    local opt2 = wick.optim.Adam({ nn.Parameter(wick.zeros(1)) })
    local s2 = wick.optim.lr_scheduler.ExponentialLR(opt2, 0.5)
    w = support.warnings_of(function() for _ = 1, 3 do opt2:step(); s2:step() end end)
    assert.are.same({}, w)
  end)

  it("self:apply(self._init_weights) calls the method on the module (nanoGPT's bound method)", function()
    local G = nn.Module:extend("G")
    function G:init()
      self.l = nn.Linear(3, 3)
      self.seen = 0
      self:apply(self._init_weights)
    end
    function G:_init_weights(module)
      if wick.isinstance(module, nn.Linear) then
        self.seen = self.seen + 1
        nn.init.zeros_(module.weight)
      end
    end
    local g = G()
    assert.are.equal(1, g.seen)
    assert.are.equal(0, g.l.weight:abs():sum():item())
  end)

  it("getattr(p, '_optim', None): an unset attribute starting with '_' reads nil; another still raises", function()
    local p = nn.Parameter(wick.zeros(2))
    assert.is_nil(p._optim)
    p._optim = { lr = 0.1 }
    assert.are.equal(0.1, p._optim.lr)
    support.assert_error_has(function() return p.optim_hp end, "tensor has no field or method 'optim_hp'")
  end)

  it("a WGAN-GP penalty through InstanceNorm2d and an in-place LeakyReLU (pix2pix's) differentiates twice", function()
    wick.manual_seed(0)
    local act = nn.LeakyReLU(0.2, true)
    local net = nn.Sequential(nn.Conv2d(4, 3, 1), nn.InstanceNorm2d(3), act, nn.Conv2d(3, 1, 1))
    local x = wick.randn(2, 4, 5, 5):requires_grad_(true)
    local function penalty()
      net:zero_grad()
      local y = net(x)
      local g = wick.autograd.grad({ outputs = y, inputs = x, grad_outputs = wick.ones(y:size()), create_graph = true })
      g[1]:pow(2):sum():backward()
      return net[1].weight.grad:clone()
    end
    local inplace = penalty()
    act.inplace = false
    support.assert_close(inplace:totable(), penalty():totable(), 1e-6)
    assert.is_true(inplace:abs():sum():item() > 0)
  end)

  it("dropout of a complex tensor (complexPyTorch's complex_dropout): one real mask for both parts", function()
    wick.manual_seed(1)
    local z = wick.complex(wick.ones(64), wick.ones(64) * 2)
    local d = F.dropout(z, 0.5)
    assert.are.equal("complex64", d.dtype)
    local re, im = d.real, d.imag
    assert.is_true(im:eq(re * 2):all())
    assert.is_true(re:eq(0):logical_or(re:eq(2)):all() and re:eq(0):any() and re:eq(2):any())
  end)

  it("enumerate(loader, start=1) by name", function()
    local loader = wick.data.DataLoader(wick.data.TensorDataset(wick.arange(4)), { batch_size = 2 })
    local seen = {}
    for i, x in wick.enumerate(loader, { start = 1 }) do seen[#seen + 1] = { i, x:sum():item() } end
    assert.are.same({ { 1, 1 }, { 2, 5 } }, seen)
  end)

  it("Glow's self.flows[::-1]: a container sliced with a negative step", function()
    local l = nn.ModuleList({ nn.Linear(1, 1), nn.ReLU(), nn.Tanh() })
    local r = l[{ { -1, 1, -1 } }]
    assert.are.equal(3, #r)
    assert.are.equal(l[3], r[1])
    assert.are.equal(l[1], r[3])
    assert.are.equal(2, #l[{ { 3, 1, -2 } }])
    local s = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    local x = wick.randn(3, 2)
    support.assert_close(s[{ { -1, 1, -1 } }](x):totable(), s[1](x:relu()):totable(), 1e-6)
    support.assert_error_has(function() return l[{ { 1, 3, 0 } }] end, "slice step cannot be zero")
  end)

  it("a built-in layer called with an argument its forward does not take is PyTorch's TypeError", function()
    local x = wick.rand(1, 4)
    support.assert_error_has(function() nn.Linear(4, 2)(x, x) end, "Linear.forward: takes 2 positional argument(s) but 3 were given")
    support.assert_error_has(function() nn.MSELoss()(x, x, x) end, "takes 3 positional argument(s) but 4 were given")
    assert.are.same({ 1, 2 }, { unpack(nn.Linear(4, 2)(x, nil):size()) }) -- a trailing nil is no argument
    local Own = nn.Module:extend("Own")
    function Own:forward(a) return a end
    assert.are.equal(x, Own()(x, x)) -- a forward of one's own keeps Lua's rule
  end)

  it("wick.broadcast_shapes as torch.broadcast_shapes", function()
    assert.are.same({ 2, 3 }, { unpack(wick.broadcast_shapes({ 2, 1 }, { 3 }, 1)) })
    assert.are.same({}, { unpack(wick.broadcast_shapes()) })
    support.assert_error_has(function() wick.broadcast_shapes({ 2, 1 }, { 3, 4 }) end, "cannot be broadcast")
  end)
end)

describe("a thirteenth round of ported lines", function()
  local unpack = table.unpack or unpack -- luacheck: ignore
  it("model surgery: set_submodule, get_submodule's 1-based hint, ModuleDict attributes, state_dict:update", function()
    local m = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU(), nn.Linear(2, 3)))
    m:set_submodule("2.2", nn.Linear(2, 4))
    assert.are.equal(4, m[2][2].out_features)
    m:set_submodule("1", nn.Identity())
    assert.is_true(wick.isinstance(m[1], nn.Identity))
    support.assert_error_has(function() m:get_submodule("1.0") end, "(indices count from 1: '2.1')")
    local d = nn.ModuleDict({ { "a", nn.ReLU() } })
    d.return_layers = { a = "feat" } -- torchvision's IntermediateLayerGetter
    assert.are.equal("feat", d.return_layers.a)
    assert.are.equal(1, d:len())
    support.assert_error_has(function() d.b = wick.ones(1) end, "ModuleDict")
    local sd = nn.Linear(2, 2):state_dict()
    sd:update({ bias = wick.zeros(2) })
    assert.are.same({ 0, 0 }, sd.bias:totable())
    assert.are.same({ 2, 3 }, wick.zeros(2, 3):size():tolist())
  end)

  it("a class's own _load_from_state_dict runs before the copy (torchvision's FrozenBatchNorm2d)", function()
    local Fr = nn.Module:extend("Fr")
    function Fr:init() self:register_buffer("running_mean", wick.zeros(2)) end
    function Fr:_load_from_state_dict(sd, prefix, ...)
      sd[prefix .. "num_batches_tracked"] = nil
      Fr.super._load_from_state_dict(self, sd, prefix, ...)
    end
    local m = nn.Sequential(Fr())
    m:load_state_dict({ ["1.running_mean"] = wick.ones(2), ["1.num_batches_tracked"] = wick.tensor(0) })
    assert.are.same({ 1, 1 }, m[1].running_mean:totable())
  end)

  it("nn.utils.fusion folds a batch norm into the conv or linear before it (eval mode)", function()
    wick.manual_seed(0)
    local conv, bn = nn.Conv2d(3, 4, 3, { bias = false }), nn.BatchNorm2d(4)
    bn.running_mean:normal_(); bn.running_var:uniform_(0.5, 2); bn.weight.data:normal_(); bn.bias.data:normal_()
    conv:eval(); bn:eval()
    local x = wick.randn(2, 3, 8, 8)
    local fused = nn.utils.fusion.fuse_conv_bn_eval(conv, bn)
    assert.is_true((fused(x) - bn(conv(x))):abs():max():item() < 1e-5)
    assert.is_nil(conv.bias) -- the original is untouched
    local lin, bn1 = nn.Linear(5, 4), nn.BatchNorm1d(4)
    bn1.running_mean:normal_(); bn1.running_var:uniform_(0.5, 2)
    lin:eval(); bn1:eval()
    local y = wick.randn(3, 5)
    assert.is_true((nn.utils.fusion.fuse_linear_bn_eval(lin, bn1)(y) - bn1(lin(y))):abs():max():item() < 1e-5)
    local ct, bn2 = nn.ConvTranspose2d(3, 4, 3), nn.BatchNorm2d(4)
    bn2.running_var:uniform_(0.5, 2); ct:eval(); bn2:eval()
    assert.is_true((nn.utils.fusion.fuse_conv_bn_eval(ct, bn2, true)(x) - bn2(ct(x))):abs():max():item() < 1e-5)
    support.assert_error_has(function() nn.utils.fusion.fuse_conv_bn_eval(nn.Conv2d(1, 1, 1), nn.BatchNorm2d(1)) end,
      "Fusion only for eval!")
  end)

  it("padding='same' with an even kernel pads the extra one after, and a stride is refused when built", function()
    local c = nn.Conv1d(1, 1, 2, { padding = "same", bias = false })
    c.weight.data:fill_(1)
    assert.are.same({ { { 3, 5, 7, 4 } } }, c(wick.tensor({ { { 1, 2, 3, 4 } } })):detach():totable()) -- PyTorch's
    local c2 = nn.Conv2d(1, 1, 4, { padding = "same", bias = false })
    local x = wick.randn(1, 1, 6, 6)
    assert.are.same({ 1, 1, 6, 6 }, { unpack(c2(x):size()) })
    local want = F.conv2d(F.pad(x, { 1, 2, 1, 2 }), c2.weight)
    support.assert_close(c2(x):detach():totable(), want:detach():totable(), 1e-6)
    support.assert_error_has(function() nn.Conv2d(2, 2, 3, { padding = "same", stride = 2 }) end,
      "padding='same' is not supported for strided convolutions")
  end)

  it("EmbeddingBag.from_pretrained, pack_padded_sequence(x, lengths=..., batch_first=True), F.pad(value=True)", function()
    local w = wick.randn(5, 3)
    local bag = nn.EmbeddingBag.from_pretrained(w, { mode = "max" })
    assert.is_false(bag.weight.requires_grad)
    local out = bag(wick.tensor({ 1, 2, 4, 5 }, { dtype = "int64" }), wick.tensor({ 1, 3 }, { dtype = "int64" }))
    support.assert_close(out[1]:totable(), w:narrow(1, 1, 2):amax(1):totable(), 0)
    assert.is_true(nn.EmbeddingBag.from_pretrained(w, false).weight.requires_grad)
    local p = nn.utils.rnn.pack_padded_sequence(wick.randn(2, 3, 4), { lengths = { 3, 2 }, batch_first = true })
    assert.are.same({ 2, 2, 1 }, p.batch_sizes:totable())
    assert.are.same({ { true, false, true, true } }, F.pad(wick.tensor({ { true, false } }), { 0, 2 }, { value = true }):totable())
    assert.are.same({ 1, 0, 0, 1 }, F.pad(wick.zeros(2), { 1, 1 }, "constant", true):totable())
  end)

  it("linalg.cholesky_ex's info: the failing minor's order per matrix (a GP's jitter-retry loop)", function()
    local bad = wick.tensor({ { 1.0, 2.0 }, { 2.0, 1.0 } })
    local A = wick.stack({ wick.eye(2), bad, wick.tensor({ { -1.0, 0 }, { 0, 1.0 } }) })
    local L, info = wick.linalg.cholesky_ex(A)
    assert.are.same({ 0, 2, 1 }, info:totable()) -- PyTorch's
    assert.are.equal("int32", info.dtype)
    assert.are.same({ { 1, 0 }, { 0, 1 } }, L[1]:totable())
    local jitter, Lj = 1e-6, nil
    repeat
      local i
      Lj, i = wick.linalg.cholesky_ex(bad + jitter * wick.eye(2))
      jitter = jitter * 10
    until not i:any() or jitter > 1e3
    assert.is_true(jitter > 1 and Lj:isfinite():all())
    support.assert_error_has(function() wick.linalg.cholesky_ex(A, { check_errors = true }) end, "not positive-definite")
  end)

  it("random fills take 0-dim tensors for their numbers (Rainbow's uniform_(0, segment_length))", function()
    local u = wick.empty(1000):uniform_(0, wick.tensor(2.0))
    assert.is_true(u:ge(0):all() and u:lt(2):all() and u:max():item() > 1.5)
    local n = wick.empty(1000):normal_(wick.tensor(3.0), wick.tensor(0.01))
    assert.is_true((n:mean() - 3):abs():item() < 0.01)
    support.assert_error_has(function() wick.empty(2):uniform_(0, wick.ones(2)) end, "expected a number for argument 'to'")
  end)

  it("torch.random.fork_rng, cuda.is_initialized, checkpoint's device states, a param group's update", function()
    wick.manual_seed(1)
    local a = wick.random.fork_rng(function() return wick.rand(2) end)
    local b = wick.rand(2)
    assert.are.same(a:totable(), b:totable())
    assert.is_false(pcall(wick.random.fork_rng, function() wick.rand(3); error("inside") end))
    assert.are.equal(wick.cuda.is_available(), wick.cuda.is_initialized())
    local devices, states = wick.utils.checkpoint.get_device_states(wick.ones(1))
    assert.are.same({}, devices)
    wick.utils.checkpoint.set_device_states(devices, states)
    local opt = wick.optim.AdamW(nn.Linear(2, 2):parameters(), { lr = 0.01 })
    opt.param_groups[1]:update({ lr = 0.005 })
    assert.are.equal(0.005, opt.param_groups[1].lr)
    assert.is_nil(opt:state_dict().param_groups[1].update)
  end)
end)

describe("a fourteenth round of ported lines", function()
  local unpack = table.unpack or unpack -- luacheck: ignore
  it("t[mask] = number of t's own shape is masked_fill_, with autograd", function()
    local g = wick.zeros(4, 5, { dtype = "int64" })
    local m = wick.rand(4, 5):gt(0.5)
    g[m] = 7
    assert.are.equal(m:sum():item() * 7, g:sum():item())
    local x = wick.randn(4, 3, { requires_grad = true })
    local y = x * 2
    y[y:gt(0)] = 0
    y:sum():backward()
    assert.are.same(wick.where(x:gt(0), 0, 2):totable(), x.grad:totable())
  end)

  it("enumerate(m:modules()), reduction='elementwise_mean', torch.add(0, x), param_groups[-1]", function()
    local s = nn.Sequential(nn.Conv2d(2, 2, 1), nn.ReLU())
    local seen = {}
    for i, m in wick.enumerate(s:modules()) do seen[#seen + 1] = i .. getmetatable(m).__name end
    assert.are.same({ "0Sequential", "1Conv2d", "2ReLU" }, seen)
    local w = support.warnings_of(function()
      assert.are.equal(1, F.l1_loss(wick.ones(3), wick.zeros(3), { reduction = "elementwise_mean" }):item())
    end)
    assert.is_truthy(w[1] and w[1]:find("reduction='elementwise_mean' is deprecated", 1, true))
    local t = wick.tensor({ 1, 2 })
    assert.are.same({ 1, 2 }, wick.add(0, t):totable())
    assert.are.same({ 4, 3 }, wick.sub(5, t):totable())
    assert.are.same({ 2, 1 }, wick.true_divide(2, t):totable())
    assert.are.same({ 2.5, 3.5 }, wick.add(1.5, wick.tensor({ 1, 2 }, { dtype = "int64" })):totable())
    local opt = wick.optim.Adam(nn.Linear(2, 2):parameters(), { lr = 0.02 })
    assert.are.equal(0.02, opt.param_groups[-1].lr)
    support.assert_error_has(function() return opt.param_groups[0].lr end, "PyTorch's param_groups[0] is param_groups[1]")
  end)

  it("one-element stride lists (EfficientNet's [s]), F.conv2d's stride table last, ctx.saved_variables", function()
    local c = nn.Conv2d(3, 4, 3, { 2 })
    assert.are.same({ 2, 2 }, c.stride)
    local x = wick.randn(1, 3, 8, 8)
    assert.are.same({ 1, 4, 3, 3 }, { unpack(F.conv2d(x, c.weight, nil, { 2 }, { 0, 0 }, { 1, 1 }, 1):size()) })
    assert.are.same({ 1, 4, 3, 3 }, { unpack(F.conv2d(x, c.weight, nil, { 2, 2 }):size()) })
    assert.are.same({ 1, 3, 3, 3 }, { unpack(nn.MaxPool2d(3, { 2 })(x):size()) })
    local S = wick.autograd.Function:extend("S")
    function S.forward(ctx, i) ctx:save_for_backward(i); return i * i end
    function S.backward(ctx, g) return g * 2 * ctx.saved_variables[1] end
    local v = wick.tensor({ 1, 2 }, { requires_grad = true })
    local w = support.warnings_of(function() S.apply(v):sum():backward() end)
    assert.are.same({ 2, 4 }, v.grad:totable())
    assert.is_truthy(w[1] and w[1]:find("'saved_variables' is deprecated", 1, true))
  end)

  it("a gradient penalty through nn.LeakyReLU(0.2, true) gives the bias zeros, not nil (ESRGAN's r1)", function()
    wick.manual_seed(0)
    local conv, act = nn.Conv2d(1, 2, 3, 1, 1), nn.LeakyReLU(0.2, true)
    local x = wick.randn(1, 1, 4, 4, { requires_grad = true })
    local g = wick.autograd.grad({ outputs = act(conv(x)):sum(), inputs = x, create_graph = true })[1]
    g:pow(2):sum():backward()
    assert.are.same({ 0, 0 }, conv.bias.grad:totable())
  end)

  it("randint's high up to 2^63 (k-diffusion's seed = torch.randint(0, 2 ** 63 - 1, []))", function()
    local r = wick.randint(0, 2 ^ 62, { 100 })
    assert.is_true(r:ge(0):all() and r:gt(2 ^ 55):any())
    assert.are.equal("int64", r.dtype)
    support.assert_error_has(function() wick.randint(0, 2 ^ 64, {}) end, "expected an integer for argument 'high'")
  end)

  it("init gets no empty options table when every option was a declared argument", function()
    local got
    local Net = nn.Module:extend("NetOpts", { "a", "b?" })
    function Net:init(a, b, c) got = { a, b, c } end
    Net(1, { b = 2 })
    assert.are.same({ 1, 2 }, got)
    assert.is_nil(got[3])
  end)
end)

describe("a fifteenth round of ported lines", function()
  it("clamp of an integer tensor with a fractional bound promotes (x-transformers' mask.sum().clamp(min=1e-5))", function()
    local i = wick.tensor({ 0, 1, 2, 3 }, { dtype = "int64" })
    local c = i:clamp({ min = 1e-5 })
    assert.are.equal("float32", c.dtype)
    support.assert_close(c:totable(), { 1e-5, 1, 2, 3 }, 1e-9)
    assert.are.same({ 0.5, 1, 2, 2.5 }, i:clamp(0.5, 2.5):totable())
    assert.are.same({ 1, 1, 2, 2 }, i:clamp(1, 2):totable())
    assert.are.equal("int64", i:clamp(1, 2).dtype)
    support.assert_error_has(function() i:clone():clamp_(0.5, 2) end, "result type Float can't be cast")
  end)

  it("sort/topk with a positional dim and trailing options, ndimension, number-first bitwise and floor_divide", function()
    local e = wick.tensor({ 1, 3, 2 })
    local v, idx = wick.sort(e, 1, { descending = true })
    assert.are.same({ 3, 2, 1 }, v:totable())
    assert.are.same({ 2, 3, 1 }, idx:totable())
    local tv = e:topk(2, 1, { largest = false })
    assert.are.same({ 1, 2 }, tv:totable())
    support.assert_error_has(function() wick.sort(e, 1, { foo = 1 }) end, "unknown option 'foo'")
    assert.are.equal(2, wick.ones(2, 3):ndimension())
    local i64 = { dtype = "int64" }
    assert.are.same({ 5, 475712, 524281 }, wick.bitwise_and(524287, wick.tensor({ 5, 1000000, -7 }, i64)):totable())
    assert.are.same({ 8, 4 }, wick.floor_divide(24, wick.tensor({ 3, 5 }, i64)):totable())
    assert.are.same({ 3 }, { wick.randint(0, wick.tensor(7, i64), { 3 }):size(1) })
    support.assert_error_has(function() wick.dot(wick.ones(3), wick.ones(3, { dtype = "float64" })) end,
      "dot: expected both vectors to have same dtype")
  end)

  it("nanoGPT's infrastructure lines: autocast(float32), cuda rng states, is_bf16_supported, compile knobs, load(path, 'cpu')", function()
    local w = support.warnings_of(function()
      assert.is_false(wick.autocast({ device_type = "cpu", dtype = wick.float32 }, function()
        return wick.is_autocast_enabled("cpu")
      end))
    end)
    assert.is_truthy(w[1] and w[1]:find("the target dtype is not supported. Disabling autocast", 1, true))
    assert.are.equal(wick.cuda.is_available(), wick.cuda.is_bf16_supported())
    assert.are.equal(wick.cuda.device_count(), #wick.cuda.get_rng_state_all())
    wick.cuda.set_rng_state_all(wick.cuda.get_rng_state_all())
    local s = wick.cuda.get_rng_state()
    local a = wick.rand(2)
    wick.cuda.set_rng_state(s)
    assert.are.same(a:totable(), wick.rand(2):totable())
    wick._dynamo.config.cache_size_limit = 64
    wick._inductor.config.coordinate_descent_tuning = true
    assert.is_nil(nn.Linear(2, 2):compile())
    local path = os.tmpname()
    wick.save({ x = wick.ones(2) }, path)
    assert.are.same({ 1, 1 }, wick.load(path, "cpu").x:totable())
    os.remove(path)
    if not wick.cuda.is_available() then assert.are.equal(0, wick.cuda.max_memory_allocated("cuda")) end
  end)
end)

describe("the fifteenth round's last lines", function()
  it("hifi-gan's op._get_name() and ConvTranspose1d's tuple attributes; airbench's LambdaLR over a tensor and cuda.Event", function()
    local m = nn.ConvTranspose1d(2, 2, 4, 2, { padding = 1 })
    assert.are.equal("ConvTranspose1d", m:_get_name())
    assert.are.same({ 4 }, m.kernel_size)
    assert.are.same({ 0 }, m.output_padding)
    assert.are.equal(10, m(wick.randn(1, 2, 5)):size(3))
    assert.are.equal(11, m(wick.randn(1, 2, 5), { 1, 2, 11 }):size(3))
    local p = nn.Parameter(wick.zeros(2))
    local opt = wick.optim.SGD({ p }, { lr = 0.1 })
    local sched = wick.tensor({ 0.5, 0.25 }, { dtype = "float64" })
    wick.optim.lr_scheduler.LambdaLR(opt, function(i) return sched[i + 1] end)
    assert.are.equal(0.05, opt.param_groups[1].lr)
    local a, b = wick.cuda.Event({ enable_timing = true }), wick.cuda.Event({ enable_timing = true })
    a:record()
    b:record()
    assert.is_true(a:elapsed_time(b) >= 0)
    support.assert_error_has(function() wick.cuda.Event():elapsed_time(b) end, "enable_timing=True")
    support.assert_error_has(function() wick.tensor({ 1, 5 }, { dtype = "int64" }):lerp(wick.zeros(2), 0.5) end,
      "not implemented for 'int64'")
  end)
end)

describe("the sixteenth round's lines", function()
  it("ParameterList and ParameterDict print their entries as PyTorch's; a named tuple's field read from a tensor says why", function()
    assert.are.equal("ParameterList(  (1): Parameter containing: [torch.float32 of size 3x2])",
      tostring(nn.ParameterList({ nn.Parameter(wick.zeros(3, 2)) })))
    assert.are.equal("ParameterDict(  (a): Parameter containing: [torch.FloatTensor of size 2])",
      tostring(nn.ParameterDict({ { "a", nn.Parameter(wick.zeros(2)) } })))
    -- (a named result's fields: wick.linalg.eigh(A).eigenvalues; a plain tensor says how to write it)
    assert.are.same({ 1, 1 }, wick.linalg.eigh(wick.eye(2)).eigenvalues:totable())
    support.assert_error_has(function() return wick.eye(2).eigenvalues end, "gives its fields as several values")
  end)

  it("warns, as PyTorch, when a bool padding mask meets a float attention mask", function()
    local enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, 0.0, { batch_first = true }), 1)
    local w = support.warnings_of(function()
      enc(wick.randn(1, 4, 8), nn.Transformer.generate_square_subsequent_mask(4), wick.tensor({ { true, false, false, false } }))
    end)
    assert.is_truthy(w[1] and w[1]:find("Support for mismatched src_key_padding_mask and mask is deprecated", 1, true))
    w = support.warnings_of(function()
      enc(wick.randn(1, 4, 8), nn.Transformer.generate_square_subsequent_mask(4), wick.zeros(1, 4))
    end)
    assert.are.same({}, w)
  end)
end)

describe("the sixteenth round's last lines", function()
  it("a module of one's own called with its forward's arguments by name (ConvLSTM's cell(input_tensor=, cur_state=))", function()
    local Cell = nn.Module:extend("KwCell")
    function Cell:init() end
    function Cell:forward(input_tensor, cur_state) return input_tensor + cur_state[1] end
    local cell, x = Cell(), wick.ones(2)
    assert.are.same({ 2, 2 }, cell({ input_tensor = x, cur_state = { x } }):totable())
    assert.are.same({ 2, 2 }, cell(x, { x }):totable())
    local Dict = nn.Module:extend("DictIn") -- a dict input whose keys are no parameter names stays one argument
    function Dict:forward(batch) return batch.a * 2 end
    assert.are.same({ 2, 2 }, Dict()({ a = x }):totable())
  end)

  it("isinstance of the legacy types (AdaIN's isinstance(feat, torch.FloatTensor)), samplers of index tensors", function()
    assert.is_true(wick.isinstance(wick.rand(2), wick.FloatTensor))
    assert.is_false(wick.isinstance(wick.rand(2):double(), wick.FloatTensor))
    assert.is_true(wick.isinstance(wick.rand(2):long(), wick.LongTensor))
    assert.is_false(wick.isinstance(wick.rand(2), wick.cuda.FloatTensor))
    local ds = wick.data.TensorDataset(wick.arange(5))
    local total = 0
    for xb in wick.data.DataLoader(ds, { batch_size = 2, sampler = wick.randperm(5):unbind() }) do total = total + xb:sum():item() end
    assert.are.equal(10, total)
    local x = wick.randn(2, 3)
    local r = wick.randint_like(x, { low = 0, high = 2 })
    assert.is_true(r:ge(0):all() and r:lt(2):all() and r.dtype == "float32")
    local d = wick.randint({ low = 0, high = 5, size = { 1 } })[1]
    assert.are.equal(1, wick.randint({ low = 0, high = 20 - d, size = { 1 } }):numel())
  end)
end)

describe("the sixteenth round's MoE and SSL lines", function()
  it("a cast to bool or an integer dtype carries no gradient (DeepSpeed's combine_weights.bool()), as PyTorch's", function()
    local w = wick.tensor({ 0.5, 0.0, 2.0 }, { requires_grad = true })
    local m = (w * 3):bool()
    assert.is_false(m.requires_grad)
    assert.is_false((w * 3):long().requires_grad)
    assert.is_true((w * 3):double().requires_grad)
    local L = (m:float() * w):sum()
    L:backward()
    assert.are.same({ 1, 0, 1 }, w.grad:totable()) -- only through the product, not the mask
  end)

  it("topk's k, a ModuleList's index: one-element int tensors; distributions.utils; LARS's function options and save", function()
    local t, k = wick.rand(4, 3), wick.tensor(2, { dtype = "int64" })
    assert.are.equal(2, wick.topk(t, { k = k, dim = 1 }):size(1))
    assert.are.equal(2, t:topk(k, 1):size(1))
    local ml = nn.ModuleList({ nn.Linear(2, 2), nn.Linear(2, 3) })
    assert.are.equal(ml[2], ml[wick.tensor({ 2 }, { dtype = "int64" })])
    local U = wick.distributions.utils
    support.assert_close(U.probs_to_logits(wick.tensor({ 0.25, 0.75 })):totable(), { math.log(0.25), math.log(0.75) }, 1e-6)
    support.assert_close(U.probs_to_logits(wick.tensor({ 0.25 }), true):totable(), { math.log(1 / 3) }, 1e-6)
    local LARS = wick.optim.Optimizer:extend("LARSLike")
    function LARS:init(params, o)
      LARS.super.init(self, params, { lr = o.lr, weight_decay_filter = o.weight_decay_filter })
    end
    function LARS:step() end
    local filter = function(p) return p.ndim == 1 end
    local opt = LARS({ wick.zeros(2, { requires_grad = true }) }, { lr = 0.1, weight_decay_filter = filter })
    local sd = opt:state_dict()
    assert.is_nil(sd.param_groups[1].weight_decay_filter)
    local path = os.tmpname()
    wick.save({ optimizer = sd }, path)
    opt:load_state_dict(wick.load(path).optimizer)
    os.remove(path)
    assert.are.equal(filter, opt.param_groups[1].weight_decay_filter)
  end)
end)

describe("a seventeenth round of ported lines", function()
  local unpack = table.unpack or unpack -- luacheck: ignore
  it("round(decimals=), unravel_index, diag_embed's dim1/dim2, apply_ and map_", function()
    support.assert_close(wick.round(wick.tensor({ 0.12345, 2.5, 0.125 }), { decimals = 2 }):totable(), { 0.12, 2.5, 0.12 }, 1e-6)
    support.assert_close(wick.tensor({ 0.12345 }):round(3):totable(), { 0.123 }, 1e-6)
    assert.are.same({ 2, 2 }, wick.tensor({ 1.5, 2.5 }):round():totable())
    local r, c = wick.unravel_index(wick.tensor({ 1, 4, 6 }, { dtype = "int64" }), { 2, 3 }) -- PyTorch's (0..) + 1
    assert.are.same({ 1, 2, 2 }, r:totable())
    assert.are.same({ 1, 1, 3 }, c:totable())
    local x = wick.tensor({ { 1, 2 }, { 3, 4 } })
    assert.are.same({ { { 1, 0 }, { 3, 0 } }, { { 0, 2 }, { 0, 4 } } }, x:diag_embed(0, 1, 3):totable()) -- PyTorch's (x, 0, 0, 2)
    assert.is_true(wick.diag_embed(x, { dim1 = 1, dim2 = 3 }):equal(x:diag_embed(0, 1, 3)))
    local t = wick.tensor({ 0.2, 0.7 })
    t:apply_(function(v) if v < 0.5 then return 0 else return 1 end end)
    assert.are.same({ 0, 1 }, t:totable())
    support.assert_close(wick.tensor({ 1, 2 }):map_(wick.tensor({ 0.5, 0.25 }), function(a, b) return a + b end):totable(), { 1.5, 2.25 }, 0)
  end)

  it("linalg refuses unknown options and a positional upper (was the lower factor in silence)", function()
    local S = wick.tensor({ { 4, 2 }, { 2, 3 } }, { dtype = "float64" })
    support.assert_error_has(function() wick.linalg.cholesky(S, { uper = true }) end, "unknown option 'uper'")
    support.assert_error_has(function() wick.linalg.cholesky(S, true) end, "expected an options table")
    support.assert_error_has(function() wick.linalg.inv(S, { bogus = 1 }) end, "takes one argument")
    assert.are.equal(0, wick.linalg.cholesky(S, { upper = true })[2][1]:item())
  end)

  it("nn.RNNBase and issubclass (awd-lstm's WeightDrop), ModuleList + list, conv_transpose2d(x, w, stride=2)", function()
    assert.is_true(wick.isinstance(nn.LSTM(3, 2), nn.RNNBase))
    assert.is_true(wick.isinstance(nn.GRUCell(3, 2), nn.RNNCellBase))
    assert.is_true(wick.issubclass(nn.LSTM, nn.RNNBase))
    assert.is_false(wick.issubclass(nn.Linear, nn.RNNBase))
    assert.is_true(wick.issubclass(nn.Linear, { nn.RNNBase, nn.Module }))
    local h = nn.ModuleList({ nn.ReLU() })
    local h2 = h + { nn.Linear(1, 1) }
    assert.are.equal(1, #h)
    assert.are.equal(2, #h2)
    assert.are.equal(h[1], h2[1])
    local x, w = wick.randn(1, 4, 2, 2), wick.randn(4, 1, 2, 2)
    assert.are.same({ 1, 1, 4, 4 }, { unpack(F.conv_transpose2d(x, w, { stride = 2 }):size()) })
    support.assert_close(F.conv_transpose2d(x, w, { stride = 2, bias = wick.ones(1) }):totable(),
      (F.conv_transpose2d(x, w, nil, 2) + 1):totable(), 1e-6)
  end)
end)

describe("an eighteenth round of ported lines", function()
  local unpack = table.unpack or unpack -- luacheck: ignore
  it("autograd.functional's strict mode refuses an output independent of an input, as PyTorch's", function()
    local AF = wick.autograd.functional
    local x, y = wick.randn(3), wick.randn(3)
    local function f(a, b) return a * 2 + b:sum() * 0 + 1, a:sum() end
    support.assert_error_has(function() AF.jacobian(function(a, b) return a * 2 end, { x, y }, { strict = true }) end,
      "Output 0 of the user-provided function is independent of input 1")
    support.assert_error_has(function() AF.vjp(function(a, b) return a * 2 end, { x, y }, wick.ones(3), { strict = true }) end,
      "independent of input 1. This is not allowed in strict mode")
    local J = AF.jacobian(f, { x, y }, { strict = false }) -- (zeros where unused)
    assert.are.equal(0, J[2][2]:abs():sum():item())
    assert.is_true(AF.jacobian(function(a) return a * 3 end, x, { strict = true }):equal(wick.eye(3) * 3))
  end)

  it("block_diag promotes, squeeze takes a list of dims, unflatten/narrow_copy/can_cast", function()
    local b = wick.block_diag(wick.tensor({ { 1 } }, { dtype = "int64" }), wick.tensor({ { 0.5 } }))
    assert.are.equal("float32", b.dtype)
    assert.are.same({ { 1, 0 }, { 0, 0.5 } }, b:totable())
    local x = wick.zeros(1, 3, 1, 2)
    assert.are.same({ 3, 2 }, { unpack(x:squeeze({ 1, 3 }):size()) })
    assert.are.same({ 3, 1, 2 }, { unpack(wick.squeeze(x, { 1, 2 }):size()) }) -- (dim 2 has size 3: kept)
    support.assert_error_has(function() x:squeeze({ 1, 1 }) end, "appears multiple times")
    support.assert_error_has(function() x:squeeze({ 5 }) end, "Dimension out of range")
    local y = wick.zeros(1, 3, 1)
    assert.are.equal(y, y:squeeze_({ 1, 3 }))
    assert.are.same({ 3 }, { unpack(y:size()) })
    assert.are.same({ 2, 3, 4 }, { unpack(wick.unflatten(wick.zeros(2, 12), 2, { 3, 4 }):size()) })
    local a = wick.arange(6)
    local n = a:narrow_copy(1, 2, 3)
    n:fill_(0)
    assert.are.same({ 0, 1, 2, 3, 4, 5 }, a:totable()) -- (a copy, not a view)
    assert.are.same({ 1, 2 }, wick.narrow_copy(a, 1, 2, 2):totable())
    assert.is_false(wick.can_cast("float32", "int64"))
    assert.is_true(wick.can_cast("int64", "float32"))
    assert.is_false(wick.can_cast("complex64", "float64"))
    assert.is_false(wick.can_cast("int32", "bool"))
    assert.is_true(wick.can_cast(wick.long, wick.double))
  end)

  it("inference_mode's forms, is_inference_mode_enabled, and set_grad_enabled as a decorator", function()
    local w = wick.ones(2, { requires_grad = true })
    assert.is_false(wick.is_inference_mode_enabled())
    local inside
    local y = wick.inference_mode(function() inside = wick.is_inference_mode_enabled(); return w * 2 end)
    assert.is_true(inside)
    assert.is_false(y.requires_grad)
    assert.is_false(wick.is_inference_mode_enabled())
    assert.is_true(wick.inference_mode(false, function() return w * 2 end).requires_grad)
    local decorated = wick.inference_mode()(function(v) return v * 3 end)
    assert.is_false(decorated(w).requires_grad)
    assert.is_false(wick.inference_mode(true)(function(v) return v * 3 end)(w).requires_grad)
    pcall(wick.inference_mode, function() error("boom") end)
    assert.is_false(wick.is_inference_mode_enabled()) -- (restored after an error)
    -- @torch.set_grad_enabled(False) def f(...): the mode switched back at once, f runs without grad
    local g = wick.set_grad_enabled(false)(function(v) return v * 2 end)
    assert.is_true(wick.is_grad_enabled())
    assert.is_false(g(w).requires_grad)
    assert.is_true(wick.is_grad_enabled())
    wick.set_grad_enabled(false) -- (a plain call switches, as PyTorch's)
    assert.is_false(wick.is_grad_enabled())
    wick.set_grad_enabled(true)
    assert.is_true(wick.is_grad_enabled())
  end)

  it("the tutorials' torch.matmul(input=..., other=...) and the functions' input by name", function()
    local a, b = wick.randn(3, 4), wick.randn(4, 2)
    assert.is_true(wick.matmul({ input = a, other = b }):equal(a:matmul(b)))
    assert.is_true(wick.matmul(a, { other = b }):equal(a:matmul(b)))
    assert.is_true(a:matmul({ other = b }):equal(a:matmul(b)))
    assert.is_true(wick.mm({ input = a, mat2 = b }):equal(a:mm(b)))
    assert.is_true(wick.pow({ input = a, exponent = 2 }):equal(a:pow(2)))
    assert.is_true(wick.sum({ input = a, dim = 2 }):equal(a:sum(2)))
    assert.is_true(wick.sin({ input = a }):equal(a:sin()))
    assert.is_true(wick.add(a, { other = a, alpha = 2 }):equal(a + a * 2))
    assert.is_true(wick.gather({ input = a, dim = 2, index = wick.ones(3, 1, { dtype = "int64" }) }):equal(a:narrow(2, 1, 1)))
    support.assert_error_has(function() wick.matmul({ input = a }) end, "other")
  end)

  it("linspace gives PyTorch's float32 and float64 values bit for bit", function()
    local x = wick.linspace(-math.pi, math.pi, 2000) -- (the tutorials' input: 604 elements were 1 ulp away)
    assert.are.equal(-0.0015715761110186577, x[1000]:item())
    assert.are.equal(0.0015715761110186577, x[1001]:item())
    assert.are.equal(1.5700105428695679, x[1500]:item())
    assert.are.equal(0, x:double():sum():item())
    local d = wick.linspace(-math.pi, math.pi, 2000, { dtype = "float64" })
    assert.are.equal(1.5700105357359697, d[1500]:item())
    assert.are.equal(-0.0015715821178538454, d[1000]:item())
    assert.are.same({ -2, 0, 1, 3 }, wick.linspace(-2.5, 3.7, 4, { dtype = "int64" }):totable())
    assert.are.same({ 0, 0.25, 0.5, 0.75, 1 }, wick.linspace(0, 1, 5):totable())
  end)
end)

describe("nn.functional's coverage round", function()
  local unpack = table.unpack or unpack -- luacheck: ignore
  it("cross_entropy's label smoothing leaves the default ignore_index out on (N, C, d) input", function()
    local x = wick.arange(6, { dtype = "float64" }):reshape(1, 3, 2):sin()
    local t = wick.tensor({ { 2, -100 } }, { dtype = "int64" })
    local none = F.cross_entropy(x, t, { label_smoothing = 0.1, reduction = "none" })
    assert.are.equal(0, none[1][2]:item())
    local w = wick.tensor({ 1, 2, 3 }, { dtype = "float64" })
    -- PyTorch 2.15: F.cross_entropy(x, t, weight=w, label_smoothing=0.1) (its class 1, ignoring -100)
    support.assert_close(F.cross_entropy(x, t, { weight = w, label_smoothing = 0.1 }):item(), 0.5633189990, 1e-9)
  end)

  it("cosine_similarity broadcasts, and PyTorch's keywords and positional margins", function()
    local a, b = wick.randn(3, 4), wick.randn(4)
    local c = F.cosine_similarity(a, b)
    assert.are.same({ 3 }, { unpack(c:size()) })
    support.assert_close(c:totable(), F.cosine_similarity(a, b:expand(3, 4)):totable(), 1e-6)
    local v, i = F.max_pool2d(wick.randn(1, 1, 4, 4), 2, { return_indices = true })
    assert.is_true(F.max_unpool2d(v, i, { kernel_size = 2 }):equal(F.max_unpool2d(v, i, 2)))
    local p = wick.randn(1, 4, 2, 2)
    assert.is_true(F.pixel_shuffle(p, { upscale_factor = 2 }):equal(F.pixel_shuffle(p, 2)))
    assert.is_true(F.pixel_unshuffle(F.pixel_shuffle(p, 2), { downscale_factor = 2 }):equal(p))
    local r = wick.tensor({ -1, 0.5, 2 })
    assert.are.same({ 9, 9, 2 }, F.threshold(r, { threshold = 1, value = 9 }):totable())
    F.threshold(r, 1, 9, true)
    assert.are.same({ 9, 9, 2 }, r:totable()) -- (inplace)
    local q = wick.arange(6, { dtype = "float64" }):reshape(2, 3) / 7
    -- PyTorch 2.15: F.triplet_margin_loss(a, p, n, 2.0, 2, 1e-6, True) and F.margin_ranking_loss(.., 0.3)
    support.assert_close(F.triplet_margin_loss(q, (q * 1.3):cos(), (q * 0.7):sin(), 2.0, 2, 1e-6, true):item(), 2.7501683487, 1e-9)
    support.assert_close(F.margin_ranking_loss(q[1], q[2] * 0.5, wick.tensor({ 1, -1, 1 }, { dtype = "float64" }), 0.3):item(),
      0.3476190476, 1e-9)
    support.assert_error_has(function() F.margin_ranking_loss(q[1], q[2], q[1], "sum") end, "margin")
  end)

  it("softmin's implicit dim and adaptive pooling's false for None", function()
    local x = wick.randn(2, 3)
    local s
    local warned = support.warnings_of(function() s = F.softmin(x) end)
    assert.are.equal(1, #warned)
    support.assert_contains(warned[1], "Implicit dimension choice for softmin")
    assert.is_true(s:equal(F.softmin(x, 2)))
    local y = wick.randn(1, 1, 4, 5)
    assert.is_true(F.adaptive_max_pool2d(y, { false, 3 }):equal(F.adaptive_max_pool2d(y, { 4, 3 })))
  end)
end)

describe("the eighteenth round's last lines", function()
  it("unique's positional flags and set_detect_anomaly's context form", function()
    local x = wick.tensor({ 3, 1, 3, 2 })
    local v, inv, counts = wick.unique(x, true, true, true) -- torch.unique(x, True, True, True)
    assert.are.same({ 1, 2, 3 }, v:totable())
    assert.are.same({ 3, 1, 3, 2 }, inv:totable())
    assert.are.same({ 1, 1, 2 }, counts:totable())
    local _, c2 = x:unique({ return_counts = true })
    assert.are.same({ 1, 1, 2 }, c2:totable())
    local _, runs = wick.unique_consecutive(wick.tensor({ 1, 1, 2, 1 }), true)
    assert.are.same({ 1, 1, 2, 3 }, runs:totable())
    support.assert_error_has(function() x:unique("a") end, "'sorted'")
    local A = wick.autograd
    local w = wick.tensor({ -1.0 }, { requires_grad = true })
    support.assert_error_has(function()
      A.set_detect_anomaly(true, function() w:sqrt():sum():backward() end)
    end, "SqrtBackward")
    assert.is_false(A.is_anomaly_enabled())
    assert.are.equal(7, A.set_detect_anomaly(true, function(a) return a + 1 end, 6))
    assert.is_false(A.is_anomaly_enabled())
  end)
end)

describe("the eighteenth round's autograd and median lines", function()
  it("nanmedian, and median propagates NaN as PyTorch's", function()
    local n = wick.nan
    local x = wick.tensor({ { 3, n, 1, 2 }, { n, n, 5, 4 } })
    local v, i = x:median(2)
    assert.is_true(v:isnan():all())
    assert.are.same({ 2, 1 }, i:totable()) -- (the first NaN)
    v, i = x:nanmedian(2)
    assert.are.same({ 2, 4 }, v:totable())
    assert.are.same({ 4, 4 }, i:totable())
    assert.is_true(x:median():isnan():item())
    assert.are.equal(3, x:nanmedian():item())
    assert.are.equal(1, wick.nanmedian(wick.tensor({ 1, n, 3 })):item())
    assert.is_true(wick.tensor({ { n, n } }):nanmedian(2):isnan():all())
    v, i = wick.tensor({ 4, 1, 3, 2 }, { dtype = "int64" }):median(1, true)
    assert.are.same({ { 2 }, { 4 } }, { v:totable(), i:totable() })
  end)

  it("autograd.grad's is_grads_batched, and materialize_grads with allow_unused = false", function()
    local x = wick.randn(3, { requires_grad = true })
    local y = x * x
    local g = wick.autograd.grad(y, x, wick.eye(3), { is_grads_batched = true })
    support.assert_close(g[1]:totable(), (x * 2):detach():diag():totable(), 1e-6) -- (the Jacobian's rows)
    support.assert_error_has(function()
      wick.autograd.grad((x * 2):sum(), { x }, { materialize_grads = true, allow_unused = false })
    end, "Expected allow_unused to be True or not passed when materialize_grads=True")
  end)
end)

describe("the nineteenth round's lines", function()
  local unpack = table.unpack or unpack -- luacheck: ignore

  it("Tacotron 2's outputs.data:masked_fill_() after the postnet saved them: backward uses the new values", function()
    local w = wick.tensor({ 1.0, 2.0, 3.0 }, { requires_grad = true })
    local x = w * 2
    local y = (x * x):sum()
    x.data:masked_fill_(wick.tensor({ true, false, false }), 0.0)
    y:backward()
    assert.are.same({ 0, 16, 24 }, w.grad:totable()) -- (PyTorch 2.15's numbers)
    local w2 = wick.tensor({ 1.0, 2.0, 3.0 }, { requires_grad = true })
    local x2 = w2 * 2
    local y2 = (x2 * x2):sum()
    x2.data[1]:fill_(0) -- (a view of .data writes as .data)
    x2:detach()[2]:fill_(0) -- (detach shares the version counter: the backward sees it)
    support.assert_error_has(function() y2:backward() end, "modified by an inplace operation")
  end)

  it("layers take PyTorch's integer flags and 0-dim integer tensors as sizes; Size takes -1", function()
    assert.is_false(nn.LSTMCell(4, 3, 0).bias)
    assert.is_nil(nn.Linear(3, 2, 0).bias)
    assert.is_not_nil(nn.Linear(3, 2, { bias = 1 }).bias)
    assert.is_nil(nn.Conv1d(3, 4, 3, 1, 0, 1, 1, 0).bias)
    support.assert_error_has(function() nn.LSTM(3, 4, 1, 1) end, "expected a boolean for option 'bias'") -- (as PyTorch's)
    local n = wick.tensor({ 4 }, { dtype = "int64" }):prod() -- np.array(shape).prod()
    assert.are.same({ 64, 4 }, { unpack(nn.Linear(n, 64).weight:size()) })
    local s = wick.Size({ -1 }) + wick.Size({ 4 })
    assert.are.same({ 6, 4 }, { unpack(wick.zeros(6, 4):reshape(s):size()) })
  end)

  it("a class of one's own takes init's arguments by name (GCN(nfeat=..., nhid=...))", function()
    local M = nn.Module:extend("KwInit")
    function M:init(nin, nout, dropout) self.l = nn.Linear(nin, nout); self.p = dropout end
    local m = M({ nin = 3, nout = 2 })
    assert.are.same({ 2, 3 }, { unpack(m.l.weight:size()) })
    assert.are.equal(0.5, M(3, 2, { dropout = 0.5 }).p)
    assert.are.equal(0.1, M(3, { nout = 4, dropout = 0.1 }).p)
    local C = nn.Module:extend("CfgInit")
    function C:init(cfg) self.cfg = cfg end
    assert.are.equal(2, C({ n_layer = 2 }).cfg.n_layer) -- (not init's names: the table as it is)
  end)

  it("for m in list:iter() gives the entries; unfold by PyTorch's names", function()
    local l = nn.ModuleList({ nn.Linear(2, 2), nn.ReLU() })
    local x = wick.ones(1, 2)
    for layer in l:iter() do x = layer(x) end
    assert.are.same({ 1, 2 }, { unpack(x:size()) })
    local z = wick.arange(10):float():reshape(1, 1, 10)
    assert.is_true(z:unfold({ dimension = -1, size = 4, step = 2 }):equal(z:unfold(-1, 4, 2)))
    assert.is_true(z:unfold(-1, { size = 4, step = 2 }):equal(z:unfold(3, 4, 2)))
  end)
end)

describe("the twentieth round's lines", function()
  it("whisper's self.attn(x, mask=mask, kv_cache=kv_cache): the trailing keywords bound to forward's names", function()
    local M = nn.Module:extend("MixedCall")
    function M:init() self.l = nn.Linear(4, 4) end
    function M:forward(x, xa, mask, kv_cache) return self.l(x), xa, mask, kv_cache end
    local m, x, cache = M(), wick.randn(1, 4), {}
    local _, xa, mask, kv = m(x, { mask = wick.zeros(2), kv_cache = cache })
    assert.is_nil(xa)
    assert.are.same({ 0, 0 }, mask:totable())
    assert.are.equal(cache, kv)
    local _, xa2 = m(x, wick.ones(1), { kv_cache = cache })
    assert.are.same({ 1 }, xa2:totable())
    local P = nn.Module:extend("OptsForward")
    function P:forward(x, opts) return opts end
    local o = P()(x, { scale = 2 }) -- (not forward's names: an options table of its own)
    assert.are.equal(2, o.scale)
  end)

  it("h[:, [-1], :] is h[{{}, {-1}}] (Torch7's {i}); repeat_ names the spelling", function()
    local h = wick.arange(24):reshape(2, 3, 4)
    assert.are.same({ 2, 1, 4 }, { (table.unpack or unpack)(h[{ {}, { -1 }, {} }]:size()) })
    assert.is_true(h[{ {}, { -1 } }]:equal(h[{ {}, { 3, 3 } }]))
    support.assert_error_has(function() return h:repeat_(1, 2) end, "t:repeat_tensor(...)")
  end)

  it("optimizers as research code writes them: SAM's shared groups, Lookahead's wrapper, LARS's required", function()
    local p = nn.Parameter(wick.ones(2))
    local base = wick.optim.SGD({ p }, { lr = 0.1 })
    local sam_base = wick.optim.Adam(base.param_groups) -- base_optimizer(self.param_groups)
    assert.is_true(rawequal(base.param_groups[1], sam_base.param_groups[1]))
    local g = { params = { p }, lr = 0.1 }
    local o = wick.optim.SGD({ g })
    g.lr = 0.5
    assert.are.equal(0.5, o.param_groups[1].lr)
    local O = wick.optim.optimizer
    local L = O.Optimizer:extend("LarsLike")
    function L:init(params, lr) L.super.init(self, params, { lr = lr or O.required }) end
    support.assert_error_has(function() L({ p }) end, "required optimization parameter lr")
    assert.are.equal(0.3, L({ p }, 0.3).param_groups[1].lr)
    local W = wick.optim.Optimizer:extend("NoSuper")
    function W:init(inner) self.optimizer = inner end
    support.assert_error_has(function() W(base) end, "self.param_groups = inner.param_groups")
    local Look = wick.optim.Optimizer:extend("Lookahead")
    function Look:init(inner) self.optimizer, self.param_groups, self.state = inner, inner.param_groups, inner.state end
    assert.are.equal(base.param_groups, Look(base).param_groups)
  end)

  it("zeros_like(p, memory_format=preserve_format) and backends.cudnn.version()", function()
    local x = wick.randn(2, 3, 4, 5):contiguous(wick.channels_last)
    assert.is_true(wick.zeros_like(x, { memory_format = wick.preserve_format }):is_contiguous(wick.channels_last))
    local z = wick.zeros_like(wick.ones(2), { memory_format = wick.preserve_format, requires_grad = true })
    assert.is_true(z.is_leaf and z.requires_grad)
    assert.is_true(wick.ones_like(wick.ones(2, 3), { memory_format = wick.contiguous_format }):is_contiguous())
    support.assert_error_has(function() wick.zeros_like(x, { memory_format = "bogus" }) end, "memory_format must be")
    assert.is_nil(wick.backends.cudnn.version())
  end)
end)

describe("the twentieth round's module lines", function()
  it("DLA's self.__setattr__('level_%d' % i, tree) and self.__getattr__", function()
    local m = nn.Module()
    m:__setattr__("level_1", nn.Linear(2, 2))
    assert.are.equal(m.level_1, m:__getattr__("level_1"))
    assert.are.equal(2, #m:parameters())
    support.assert_error_has(function() m:__getattr__("level_2") end, "'Module' object has no attribute 'level_2'")
  end)
end)

describe("the twenty-first round's lines", function()
  it("lerp and quantile give PyTorch's bits (ATen's formula with fused multiply-adds; ranks in float64)", function()
    -- PyTorch 2.15: torch.lerp of these float32 values (t + (end - t) * w is one float32 step off each)
    local a = wick.tensor({ 0.8487103581428528, -1.152360200881958 })
    local b = wick.tensor({ -0.8483231663703918, 1.0990885496139526 })
    local w = wick.tensor({ 0.6915837526321411, 0.4945240020751953 })
    assert.are.same({ -0.32493045926094055, -0.03896481171250343 }, a:lerp(b, w):totable())
    assert.are_not.same((a + (b - a) * w):totable(), a:lerp(b, w):totable())
    local x = wick.tensor({ 1.0, 2.0 }, { requires_grad = true })
    local y = wick.tensor({ 3.0, 5.0 }, { requires_grad = true })
    local ww = wick.tensor({ 0.25, 0.75 }, { requires_grad = true })
    x:lerp(y, ww):sum():backward()
    assert.are.same({ 0.75, 0.25 }, x.grad:totable())
    assert.are.same({ 0.25, 0.75 }, y.grad:totable())
    assert.are.same({ 2, 3 }, ww.grad:totable())
    -- rtdl's quantile bins: 39 * 0.33333334f is 13.0000004 in float64 (PyTorch 2.15: 3.8743019104003906e-07)
    local q = wick.quantile(wick.arange(40) % 3, wick.linspace(0, 1, 7))
    assert.are.equal(3.8743019104003906e-07, q[3]:item())
    assert.are.equal(4, q:unique():size(1))
  end)

  it("self.forward(x, mode='inverse') binds; isinstance(p, nn.Parameter); a Subset of a list gives its items", function()
    local M = nn.Module:extend("FlowLike")
    function M:forward(x, cond, mode) return mode or "direct" end
    assert.are.equal("inverse", M():forward(wick.zeros(1), { mode = "inverse" }))
    assert.is_true(wick.isinstance(nn.Linear(2, 2).weight, nn.Parameter))
    assert.is_false(wick.isinstance(wick.zeros(2), nn.Parameter))
    local a = wick.data.random_split({ 10, 11, 12, 13 }, { 2, 2 })
    assert.are.equal("number", type(a[1]))
    assert.are.equal(11, wick.data.Subset({ 10, 11, 12 }, { 2, 3 })[1])
  end)

  it("get_total_norm and clip_grads_with_norm_, cudnn.flags, warn_only, the plateau's epoch warning", function()
    local g1, g2 = nn.Parameter(wick.zeros(2)), nn.Parameter(wick.zeros(2))
    g1.grad, g2.grad = wick.tensor({ 3.0, 0.0 }), wick.tensor({ 0.0, 4.0 })
    local total = nn.utils.get_total_norm({ g1.grad, g2.grad })
    assert.are.equal(5, total:item())
    nn.utils.clip_grads_with_norm_({ g1, g2 }, 1.0, total)
    support.assert_close(g1.grad:totable(), { 0.6, 0 }, 1e-6)
    assert.is_true(wick.backends.cudnn.flags({ enabled = false }, function() return not wick.backends.cudnn.enabled end))
    assert.is_true(wick.backends.cudnn.enabled)
    wick.use_deterministic_algorithms(true, { warn_only = true })
    assert.is_true(wick.is_deterministic_algorithms_warn_only_enabled())
    wick.use_deterministic_algorithms(false)
    assert.is_false(wick.is_deterministic_algorithms_warn_only_enabled())
    local opt = wick.optim.SGD(nn.Linear(2, 2):parameters(), { lr = 0.1 })
    local s = wick.optim.lr_scheduler.ReduceLROnPlateau(opt, "max", { patience = 0 })
    local warned = support.warnings_of(function() s:step(1.0, 4) end)
    assert.are.equal(1, #warned)
    support.assert_contains(warned[1], "The epoch parameter in `scheduler.step()`")
    assert.are.equal(4, s.last_epoch)
  end)
end)

describe("the twenty-first round's parametrizations", function()
  it("parametrizations.orthogonal (three maps), geqrf and householder_product give PyTorch's values", function()
    local F64 = { dtype = "float64" }
    local B = wick.arange(16, F64):reshape(4, 4):sin() + wick.eye(4, F64) * 2
    local a, tau = wick.geqrf(B)
    local Q = wick.linalg.householder_product(a, tau)
    support.assert_close(Q:matmul(a:triu()):totable(), B:totable(), 1e-12) -- (B = QR)
    support.assert_close(Q:t():matmul(Q):totable(), wick.eye(4, F64):totable(), 1e-12)
    for _, map in ipairs({ "matrix_exp", "cayley", "householder" }) do
      local l = nn.Linear(4, 4):double()
      wick.no_grad(function() l.weight:copy_(B) end)
      nn.utils.parametrizations.orthogonal(l, { orthogonal_map = map })
      local W = l.weight
      support.assert_close(W:t():matmul(W):totable(), wick.eye(4, F64):totable(), 1e-12)
      assert.is_not_nil(l:state_dict()["parametrizations.weight.1.base"])
      -- (B has R's diagonal positive here, so the orthogonalized weight is B's Q factor)
      support.assert_close(W:totable(), (Q * a:diagonal():sign():unsqueeze(1)):totable(), 1e-12)
    end
    local l = nn.Linear(4, 4)
    nn.utils.parametrizations.orthogonal(l)
    local opt = wick.optim.SGD(l:parameters(), { lr = 0.1 })
    for _ = 1, 3 do
      opt:zero_grad()
      l(wick.randn(8, 4)):pow(2):sum():backward()
      opt:step()
    end
    support.assert_close(l.weight:t():matmul(l.weight):totable(), wick.eye(4):totable(), 1e-5) -- (still orthogonal)
    support.assert_error_has(function() nn.utils.parametrizations.orthogonal(nn.Linear(3, 3), { orthogonal_map = "qr" }) end,
      'orthogonal_map has to be one of "matrix_exp", "cayley", "householder"')
  end)
end)

describe("the twenty-second round's lines", function()
  it("neural style's layer.__class__.__name__", function()
    assert.are.equal("Conv2d", nn.Conv2d(1, 1, 3).__class__.__name__)
    local Mine = nn.Module:extend("MineClass")
    assert.are.equal(Mine, Mine().__class__)
    assert.are.equal("MineClass", Mine().__class__.__name__)
  end)
end)

describe("the twenty-second round's error lines", function()
  it("F.linear of a 0-dim input names PyTorch's rule", function()
    support.assert_error_has(function() F.linear(wick.tensor(1.0), wick.randn(3, 4)) end,
      "both arguments to linear need to be at least 1D, but they are 0D and 2D")
  end)
end)

describe("the twenty-third round's lines (torchdiffeq)", function()
  it("unique's counts of nothing, nextafter's promotion and detached bits, t[:-1] of one element", function()
    local e = wick.tensor({}, { dtype = "float64" })
    -- torch.cat([step_locations, jump_locations]).unique(return_counts=True)[1] of two empty lists
    local values, counts = e:unique({ return_counts = true })
    assert.are.same({ 0 }, values:size())
    assert.are.equal("int64", counts.dtype)
    assert.are.equal(2, select("#", e:unique({ return_counts = true })))
    assert.are.equal(1, select("#", e:unique()))
    -- torch.nextafter(t, _inf) with t float64 and _inf = torch.tensor(math.inf) float32
    local t = wick.tensor(0.5, { dtype = "float64" })
    local up = wick.nextafter(t, wick.tensor(math.huge))
    assert.are.equal("float64", up.dtype)
    assert.is_true(up:item() > 0.5 and up:item() - 0.5 < 1e-15)
    -- PyTorch 2's gradient: x's passes through (torchdiffeq's nextafter under no_grad stays detached)
    local x = wick.tensor({ 0.5, 1.0 }, { requires_grad = true, dtype = "float64" })
    local g = wick.nextafter(x, wick.tensor(math.huge))
    assert.is_true(g.requires_grad)
    local l = (g * wick.tensor({ 3.0, 5.0 }, { dtype = "float64" })):sum() + x:sum()
    l:backward()
    assert.are.same({ 4, 6 }, x.grad:totable())
    assert.is_false(wick.no_grad(function() return wick.nextafter(x, wick.tensor(math.huge)) end).requires_grad)
    -- (timelike[1:] > timelike[:-1]).all() of a one-element time grid
    local one = wick.tensor({ 0.5 })
    assert.are.same({ 0 }, one[{ { 1, -2 } }]:size())
    assert.are.same({ 0 }, one[{ { 2, -1 } }]:size())
    assert.is_true(one[{ { 2, -1 } }]:gt(one[{ { 1, -2 } }]):all())
    support.assert_error_has(function() return wick.tensor({ 1, 2, 3 })[{ { 1, -5 } }] end, "reaches past")
    -- _assert_floating's torch.is_floating_point(t); adjoint's torch.as_strided(t, (), ())
    assert.is_true(wick.is_floating_point(t))
    assert.is_false(wick.is_floating_point(wick.ones(1, { dtype = "int64" })))
    assert.are.equal(0.5, wick.as_strided(t, {}, {}):item())
  end)

  it("as_strided: a view of the storage, and a gradient inside a contiguous tensor", function()
    local x = wick.arange(12, { dtype = "float64" })
    local v = x:as_strided({ 3, 2 }, { 2, 1 })
    assert.are.same({ { 0, 1 }, { 2, 3 }, { 4, 5 } }, v:totable())
    v[{ 1, 1 }] = 100 -- a view: the write reaches x
    assert.are.equal(100, x[1]:item())
    assert.are.same({ { 3, 4 }, { 4, 5 } }, x:as_strided({ 2, 2 }, { 1, 1 }, 3):totable())
    assert.are.same({ 4, 5 }, x:narrow(1, 4, 6):as_strided({ 2 }, { 1 }, 4):totable()) -- the offset is the storage's
    -- overlapping windows of a leaf: the gradient counts each use (PyTorch's as_strided backward)
    local p = wick.arange(6, { dtype = "float64" }):requires_grad_()
    wick.as_strided(p, { 3, 2 }, { 1, 1 }):sum():backward()
    assert.are.same({ 1, 2, 2, 1, 0, 0 }, p.grad:totable())
    support.assert_error_has(function() return p:as_strided({ 3 }, { 5 }) end, "outside its storage")
    support.assert_error_has(function() return p:as_strided({ 3 }, { -1 }) end, "non-negative")
    -- of a strided view too (Longformer's _chunk of a transposed reshape): its elements by their storage places
    p.grad = nil
    local pt = p:view(2, 3):t() -- strides (1, 3)
    local chunk = pt:as_strided({ 2, 2 }, { 3, 1 }) -- storage {0, 1}, {3, 4}
    assert.are.same({ { 0, 1 }, { 3, 4 } }, chunk:totable())
    chunk:backward(wick.tensor({ { 1, 2 }, { 3, 4 } }, { dtype = "float64" }))
    assert.are.same({ 1, 2, 0, 3, 4, 0 }, p.grad:totable())
    support.assert_error_has(function() return p:expand(2, 6):as_strided({ 2 }, { 1 }) end, "whose elements overlap")
    support.assert_error_has(function() return p:narrow(1, 1, 3):view(3, 1):t():as_strided({ 2 }, { 4 }) end,
      "only elements of the tensor itself")
    -- Longformer's hidden_states.as_strided(size=chunk_size, stride=chunk_stride)
    assert.are.same({ { 0, 1 }, { 2, 3 } }, wick.arange(6, { dtype = "float64" }):as_strided({ size = { 2, 2 }, stride = { 2, 1 } }):totable())
    assert.are.same({ { 1, 2 } }, wick.arange(6, { dtype = "float64" }):as_strided({ 1, 2 }, { stride = { 2, 1 }, storage_offset = 1 }):totable())
  end)
end)

describe("the twenty-third round's lines (Llama in bfloat16)", function()
  it("low-precision activations compute in float32 and round once, as PyTorch's kernels", function()
    local x = wick.tensor({ 1.234375, -0.43359375 }, { dtype = "bfloat16" })
    -- PyTorch 2.15: [0.9570, -0.1709] (x * sigmoid(x) rounded twice gave [0.9531, -0.1699])
    assert.are.same({ 0.95703125, -0.1708984375 }, F.silu(x):to("float64"):totable())
    assert.are.same({ 0.95703125, -0.1708984375 }, nn.SiLU()(x):to("float64"):totable())
    assert.are.equal("bfloat16", F.silu(x).dtype)
    -- float16's exp overflowed from 11 on: softplus and logsigmoid gave inf
    local h = wick.tensor({ 12, 15, 25 }, { dtype = "float16" })
    assert.are.same({ 12, 15, 25 }, F.softplus(h):to("float64"):totable())
    assert.are.same({ -12, -15 }, F.logsigmoid(-h:narrow(1, 1, 2)):to("float64"):totable())
    -- the gradient still reaches a bfloat16 leaf, in its dtype
    local p = x:clone():requires_grad_()
    F.silu(p):sum():backward()
    assert.are.equal("bfloat16", p.grad.dtype)
    local y = x:clone()
    F.silu(y, true) -- in place keeps the dtype and the once-rounded values
    assert.are.same({ 0.95703125, -0.1708984375 }, y:to("float64"):totable())
  end)
end)

describe("the twenty-third round's lines (HF's **kwargs)", function()
  it("a vararg forward takes the names it lacks as one table where its ... starts", function()
    local Attn = nn.Module:extend("Attn")
    function Attn:init() self.proj = nn.Linear(2, 2) end
    function Attn:forward(hidden_states, attention_mask, ...)
      local kwargs = ...
      return self.proj(hidden_states), attention_mask, kwargs
    end
    local a, h = Attn(), wick.randn(1, 2)
    -- LlamaDecoderLayer's self.self_attn(hidden_states=..., position_ids=..., use_cache=...)
    local y, mask, kwargs = a{ hidden_states = h, position_ids = wick.zeros(1), use_cache = true }
    assert.are.same({ 1, 2 }, y:size())
    assert.is_nil(mask)
    assert.is_true(kwargs.use_cache)
    assert.is_true(wick.is_tensor(kwargs.position_ids))
    local _, m2, k2 = a(h, { attention_mask = 5, output_attentions = false })
    assert.are.equal(5, m2)
    assert.is_false(k2.output_attentions)
    -- no key naming a parameter: still keywords, all for the ... (diffusers' attn(h, temb=temb)),
    -- and so is {}, HF's keywords that were all None
    local _, m3, k3 = a(h, { foo = 1 })
    assert.is_nil(m3)
    assert.are.equal(1, k3.foo)
    local _, m4, k4 = a(h, {})
    assert.is_nil(m4)
    assert.are.same({}, k4)
    -- at the ... or after it, a table is a value there, as before
    local _, m5, k5 = a(h, 7, { foo = 1 })
    assert.are.equal(7, m5)
    assert.are.same({ foo = 1 }, k5)
    -- a forward without ...: a name it lacks beside one it has is PyTorch's TypeError
    -- (perceiver's m(x, {mask = m, quries = q}) bound the whole table to mask)
    local B = nn.Module:extend("B")
    function B:forward(x, mask, queries) return mask, queries end -- luacheck: ignore x
    support.assert_error_has(function() return B()(h, { mask = 1, quries = 2 }) end,
      "B.forward: got an unexpected keyword argument 'quries' (did you mean 'queries'? its parameters: x, mask, queries)")
    assert.are.same({ 1, 2 }, { B()(h, { mask = 1, queries = 2 }) })
    assert.are.same({ other = 2 }, B()(h, { other = 2 })) -- (no name it has: a positional table)
    -- and init's: a class with its names declared, or without
    local Attention = nn.Module:extend("Attention", { "query_dim", "context_dim?", "heads?", "dim_head?" })
    function Attention:init(query_dim, context_dim, heads, dim_head) self.inner = (dim_head or 64) * (heads or 8) end
    assert.are.equal(16, Attention(16, { heads = 2, dim_head = 8 }).inner)
    support.assert_error_has(function() return Attention(16, { heads = 2, dim_heads = 8 }) end,
      "Attention.init: got an unexpected keyword argument 'dim_heads'")
    local A2 = nn.Module:extend("A2")
    function A2:init(query_dim, context_dim, heads, dim_head) self.inner = (dim_head or 64) * (heads or 8) end
    assert.are.equal(16, A2(16, { heads = 2, dim_head = 8 }).inner)
    support.assert_error_has(function() return A2(16, { heads = 2, dim_heads = 8 }) end,
      "A2.init: got an unexpected keyword argument 'dim_heads'")
  end)

  it("t.topk(k).indices inside an index key is the named result's indices (round 43); another tensor's, an error", function()
    local x = wick.tensor({ { 10, 20, 30 }, { 40, 50, 60 } })
    local rows = wick.tensor({ { 1 }, { 2 } }, { dtype = "int64" })
    assert.are.same({ { 30 }, { 60 } }, x[{ rows, x:topk(1, { dim = 2 }).indices }]:totable())
    x[{ rows, x:topk(1, { dim = 2 }).indices }] = -1
    assert.are.same({ { 10, 20, -1 }, { 40, 50, -1 } }, x:totable())
    support.assert_error_has(function() return x[{ rows, x.indices }] end, "tensor has no field 'indices'")
    support.assert_error_has(function() return x[x.values] end, "tensor has no field 'values'")
    local _, idx = x:topk(1, { dim = 2 })
    assert.are.same({ { 20 }, { 50 } }, x[{ rows, idx }]:totable())
  end)
end)

describe("the twenty-fourth round's lines", function()
  it("pyGAT's sparse_coo_tensor keeps its entries as given (explicit zeros, duplicates) until coalesce", function()
    local I64 = { dtype = "int64" }
    -- a dropout zero among the edge values: _indices() still lists the edge (SpGAT's backward)
    local a = wick.sparse_coo_tensor(wick.tensor({ { 1, 1, 2 }, { 1, 2, 2 } }, I64), wick.tensor({ 0.5, 0.0, 2.0 }), { 2, 2 })
    assert.are.same({ { 1, 1, 2 }, { 1, 2, 2 } }, a:_indices():totable())
    assert.are.same({ 0.5, 0, 2 }, a:_values():totable())
    assert.are.equal(3, a:_nnz())
    assert.is_false(a:is_coalesced())
    -- duplicates: summed in the dense values, kept in _values(), summed by coalesce()
    local d = wick.sparse_coo_tensor(wick.tensor({ { 2, 1, 2 }, { 2, 2, 2 } }, I64), wick.tensor({ 1, 2, 3 }), { 2, 2 })
    assert.are.same({ { 0, 2 }, { 0, 4 } }, d:totable())
    assert.are.same({ 1, 2, 3 }, d:_values():totable())
    local c = d:coalesce()
    assert.is_true(c:is_coalesced())
    assert.are.same({ { 1, 2 }, { 2, 2 } }, c:indices():totable())
    assert.are.same({ 2, 4 }, c:values():totable())
    assert.are.same({ 2, 4 }, d:values():totable()) -- (values() reads the coalesced entries)
    -- a dense tensor read as sparse: its nonzeros, as before
    local x = wick.tensor({ { 0, 3 }, { 4, 0 } })
    assert.are.same({ { 1, 2 }, { 2, 1 } }, x:_indices():totable())
    assert.are.same({ 3, 4 }, x:_values():totable())
    -- the gradient reaches the values through the dense tensor
    local v = wick.tensor({ 1, 2, 3 }, { requires_grad = true })
    local s = wick.sparse_coo_tensor(wick.tensor({ { 1, 2, 2 }, { 1, 1, 2 } }, I64), v, { 2, 2 })
    ;(s * wick.tensor({ { 1, 2 }, { 3, 4 } })):sum():backward()
    assert.are.same({ 1, 3, 4 }, v.grad:totable())
  end)

  it("pygcn's __repr__ prints the layer; lerp_ on a leaf names itself", function()
    local GC = nn.Module:extend("GraphConvolution")
    function GC:init(i, o) self.in_features, self.out_features = i, o end
    function GC:__repr__() return self.__class__.__name__ .. " (" .. self.in_features .. " -> " .. self.out_features .. ")" end
    local GCN = nn.Module:extend("GCN")
    function GCN:init() self.gc1 = GC(10, 16) end
    assert.are.equal("GCN(\n  (gc1): GraphConvolution (10 -> 16)\n)", tostring(GCN()))
    local w = wick.zeros(2, { requires_grad = true })
    support.assert_error_has(function() w:lerp_(wick.ones(2), 0.05) end, "lerp_: a leaf tensor that requires grad")
  end)
end)

describe("the twenty-fourth round's detection lines (YOLOv3)", function()
  it("wick.vision.ops: torchvision's box_iou, nms and batched_nms, 1-based", function()
    local vops = wick.vision.ops
    local boxes = wick.tensor({ { 0, 0, 10, 10 }, { 1, 1, 11, 11 }, { 20, 20, 30, 30 }, { 0, 0, 10, 10 } })
    local scores = wick.tensor({ 0.9, 0.8, 0.7, 0.95 })
    assert.is_true(math.abs(vops.box_iou(boxes:narrow(1, 1, 1), boxes:narrow(1, 2, 1)):item() - 81 / 119) < 1e-6)
    assert.are.same({ 100, 100, 100, 100 }, vops.box_area(boxes):totable())
    local keep = vops.nms(boxes, scores, 0.5)
    assert.are.equal("int64", keep.dtype)
    assert.are.same({ 4, 3 }, keep:totable())
    assert.are.same({ 4, 2, 3 }, vops.nms(boxes, scores, 0.99):totable()) -- (A and D: IoU 1, above 0.99)
    assert.are.same({ 4, 1, 3 }, vops.batched_nms(boxes, scores, wick.tensor({ 1, 1, 1, 2 }, { dtype = "int64" }), 0.5):totable())
    assert.are.same({ 0 }, vops.nms(wick.zeros(0, 4), wick.zeros(0), 0.5):size())
    support.assert_error_has(function() return vops.nms(boxes, scores:narrow(1, 1, 3), 0.5) end, "one per box")
    support.assert_error_has(function() return vops.box_iou(wick.zeros(2, 3), boxes) end, "(N, 4)")
    support.assert_error_has(function() return vops.batched_nms(boxes, scores, wick.ones(3), 0.5) end,
      "batched_nms: expected idxs of shape (4), a category per box, got [3]")
  end)

  it("a[k]:div_(y) with a tensor key changes a copy, as PyTorch's a[k]; a[k] = a[k] / y writes back", function()
    local b = wick.tensor({ { 0, 10, 8, 6, 4 } })
    local cols = wick.tensor({ 2, 4 }, { dtype = "int64" })
    b[{ {}, cols }] = b[{ {}, cols }] / 2
    assert.are.same({ { 0, 5, 8, 3, 4 } }, b:totable())
    support.assert_error_has(function() return wick.tensor({ 1, 2, 3, 4 })[{ 4, 3, 4, 3 }] end,
      "Python's list of indices t[[i, j, ...]] is an int64 tensor key")
  end)
end)

describe("the twenty-fourth round's lines (HF GPT-2 and masks)", function()
  it("beta = 0 ignores the input's NaN and inf (baddbmm into torch.empty), keeping its gradient path", function()
    local nan = wick.full({ 1, 2, 2 }, 0 / 0)
    assert.are.same({ { { 2, 2 }, { 2, 2 } } }, wick.baddbmm(nan, wick.ones(1, 2, 2), wick.ones(1, 2, 2), { beta = 0 }):totable())
    assert.are.same({ { 2, 2 }, { 2, 2 } }, wick.addbmm(wick.full({ 2, 2 }, math.huge), wick.ones(1, 2, 2), wick.ones(1, 2, 2),
      { beta = 0 }):totable())
    assert.are.same({ 2, 2 }, wick.addmv(wick.full({ 2 }, 0 / 0), wick.ones(2, 2), wick.ones(2), { beta = 0 }):totable())
    assert.are.same({ { 1, 1 }, { 1, 1 } }, wick.addr(wick.full({ 2, 2 }, 0 / 0), wick.ones(2), wick.ones(2), { beta = 0 }):totable())
    local t = wick.full({ 2 }, 0 / 0):requires_grad_()
    wick.addmv(t, wick.ones(2, 2), wick.ones(2), { beta = 0 }):sum():backward()
    assert.are.same({ 0, 0 }, t.grad:totable())
  end)

  it("where's number beside a float64 tensor keeps its value (eager_mask's finfo(float64).min)", function()
    local m = wick.tensor({ true, false })
    local min64 = wick.finfo("float64").min
    local mask = wick.where(m, wick.tensor(0.0, { dtype = "float64" }), min64)
    assert.are.equal(min64, mask[2]:item())
    assert.are.equal(0.1, wick.where(m, wick.zeros(2, { dtype = "float64" }), 0.1)[2]:item())
    assert.are.equal(-math.huge, wick.where(m, wick.zeros(2, { dtype = "float16" }), -1e10)[2]:item())
    assert.are.equal("float16", wick.where(m, wick.zeros(2, { dtype = "float16" }), 0.5).dtype)
    assert.are.equal("float32", wick.where(m, wick.zeros(2, { dtype = "int32" }), 0.5).dtype)
    assert.are.equal("int32", wick.where(m, wick.zeros(2, { dtype = "int32" }), 3).dtype)
  end)
end)

describe("the twenty-fifth round's lines", function()
  it("cdist's clamp(min=0).sqrt() at a zero distance: clamp and maximum give 0, not NaN, where they cut", function()
    local x = wick.tensor({ { 1.0, 2.0 }, { 3.0, 0.5 } }, { requires_grad = true })
    local y = wick.tensor({ { 1.0, 2.0 }, { 0.0, 1.0 } })
    local d = ((x ^ 2):sum(-1):unsqueeze(2) + (y ^ 2):sum(-1):unsqueeze(1) - 2 * x:matmul(y:t())):clamp({ min = 0 }):sqrt()
    d:sum():backward()
    assert.is_false(x.grad:isnan():any())
    -- PyTorch 2.15's gradients of an infinite upstream gradient, per op
    local z = wick.tensor({ -1e-7, 0, 1e-7, 4 }, { requires_grad = true })
    local inf = math.huge
    local g = wick.tensor({ inf, inf, 1, 1 })
    local cases = {
      { function(v) return v:clamp({ min = 0 }) end, { 0, 0, 1, 1 } },
      { function(v) return v:clamp(0, 1) end, { 0, 0, 1, 0 } },
      { function(v) return v:clamp_max(1) end, { inf, inf, 1, 0 } },
      { function(v) return wick.maximum(v, wick.zeros(4)) end, { 0, inf, 1, 1 } },
      { function(v) return F.hardtanh(v) end, { inf, inf, 1, 0 } },
      { function(v) return wick.minimum(v, wick.ones(4)) end, { inf, inf, 1, 0 } },
    }
    for _, c in ipairs(cases) do
      z.grad = nil
      c[1](z):backward(g)
      assert.are.same(c[2], z.grad:totable())
    end
    local a, b = wick.tensor({ 1, 2, 3 }, { requires_grad = true }), wick.tensor({ 3, 2, 1 }, { requires_grad = true })
    wick.maximum(a, b):sum():backward()
    assert.are.same({ 0, 0.5, 1 }, a.grad:totable())
    assert.are.same({ 1, 0.5, 0 }, b.grad:totable())
  end)

  it("a decorated forward keeps its names for keywords (vector-quantize's @autocast(enabled=False) forward)", function()
    local C = nn.Module:extend("Codebook")
    C.forward = wick.cuda.amp.autocast({ enabled = false })(function(self, x, temp, mask, freeze) -- luacheck: ignore
      return temp, freeze
    end)
    local temp, freeze = C()(wick.zeros(2), { freeze = true })
    assert.is_nil(temp)
    assert.is_true(freeze)
    local D = nn.Module:extend("D")
    D.forward = wick.no_grad()(function(self, x, scale) return scale, wick.is_grad_enabled() end) -- luacheck: ignore
    function D:twice(x) return self:forward(x, { scale = 5 }) end
    local s, grad_on = D()(wick.zeros(1), { scale = 3 })
    assert.are.equal(3, s)
    assert.is_false(grad_on)
    assert.are.equal(5, D():twice(wick.zeros(1)))
    -- torch.detach as a function (maybe_detach = torch.detach if ... else identity)
    local p = wick.ones(2, { requires_grad = true })
    assert.is_false(wick.detach(p * 2).requires_grad)
  end)

  it("wick.load gives a state dict back as an OrderedDict in the saved order (SAM's torch.load(p).keys())", function()
    local m = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1), nn.Linear(1, 2))
    local path = os.tmpname()
    wick.save({ net = m:state_dict(), acc = 0.5 }, path)
    local c = wick.load(path)
    os.remove(path)
    assert.are.equal(0.5, c.acc)
    local names = {}
    for k, v in c.net:items() do names[#names + 1] = k; assert.is_true(wick.is_tensor(v)) end
    assert.are.same({ "1.weight", "1.bias", "2.weight", "2.bias", "3.weight", "3.bias" }, names)
    local fresh = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1), nn.Linear(1, 2))
    fresh:load_state_dict(c.net)
    assert.is_true(fresh[1].weight:equal(m[1].weight))
  end)
end)

describe("the twenty-fifth round's state dict names", function()
  it("to_pytorch_names keeps the state dict's order and its OrderedDict methods", function()
    local sd = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 2)):state_dict()
    local names = {}
    for k in nn.utils.to_pytorch_names(sd):keys() do names[#names + 1] = k end
    assert.are.same({ "0.weight", "0.bias", "1.weight", "1.bias" }, names)
    local back = {}
    for k in nn.utils.from_pytorch_names(nn.utils.to_pytorch_names(sd)):keys() do back[#back + 1] = k end
    assert.are.same({ "1.weight", "1.bias", "2.weight", "2.bias" }, back)
  end)
end)

describe("the twenty-sixth round's lines", function()
  it("a param group has a Python dict's get, setdefault, pop, keys, items (Adan's __setstate__)", function()
    local o = wick.optim.Adam({ nn.Parameter(wick.ones(2)) }, 1e-2)
    local g = o.param_groups[1]
    assert.are.equal(0.01, g:get("lr"))
    assert.are.equal(7, g:get("nope", 7))
    assert.is_false(g:setdefault("no_prox", false))
    assert.are.equal(0.01, g:setdefault("lr", 5))
    local names = {}
    for k in g:keys() do names[#names + 1] = k end
    assert.is_true(#names >= 3)
    assert.is_false(g:pop("no_prox"))
    assert.is_nil(g.no_prox)
    support.assert_error_has(function() g:pop("nope") end, "no key 'nope'")
    o:step() -- (the methods are not options: the step still runs)
  end)

  it("a Size equals a Size (BART's attn_weights.size() != (...)): a plain table never does", function()
    local x = wick.zeros(8, 7, 7)
    assert.is_true(x:size() == wick.Size({ 8, 7, 7 }))
    assert.is_false(x:size() ~= wick.Size({ 8, 7, 7 }))
  end)
end)

describe("the twenty-sixth round's lines (HF's config objects)", function()
  it("a class with declared names takes a config table as a value; its own names still bind", function()
    local A = nn.Module:extend("BartAttention", { "embed_dim", "num_heads", "dropout?", "is_decoder?", "config?" })
    function A:init(e, h, d, dec, config) self.e, self.h, self.d, self.dec, self.config = e, h, d, dec, config end
    local config = { d_model = 16, dropout = 0.1 }
    local a = A(16, 4, 0.0, true, config) -- (config.dropout names an earlier argument: a value)
    assert.are.equal(config, a.config)
    assert.are.equal(0, a.d)
    local b = A({ embed_dim = 16, num_heads = 4, dropout = 0.5, config = config })
    assert.are.same({ 16, 4, 0.5 }, { b.e, b.h, b.d })
    assert.are.equal(config, b.config)
    local L = nn.Module:extend("Layer", { "config" })
    function L:init(cfg) self.cfg = cfg end
    assert.are.equal(config, L(config).cfg)
    support.assert_error_has(function() return A(16) end, "BartAttention: missing required argument 'num_heads'")
  end)
end)

describe("the twenty-seventh round's lines", function()
  it("a Parameter assigned over a number is registered (x-transformers' self.q_scale = 1, then a Parameter)", function()
    local A = nn.Module:extend("A")
    function A:init(scale)
      self.q_scale = 1
      if scale then self.q_scale = nn.Parameter(wick.ones(2)) end
    end
    assert.are.equal(1, #A(true):parameters())
    assert.are.equal(0, #A(false):parameters())
    local names = {}
    for k in A(true):state_dict():keys() do names[#names + 1] = k end
    assert.are.same({ "q_scale" }, names)
  end)

  it("a number over a tensor is PyTorch's reciprocal(t) * number, to the bit (timm's drop_block normalize_scale)", function()
    local t = wick.tensor(100, { dtype = "float32" })
    -- PyTorch 2.15: 147 / torch.tensor(100.) is 1.469999909, torch.tensor(147.) / it 1.470000029
    assert.are.equal("1.469999909", ("%.10g"):format((147 / t):item()))
    assert.are.equal("1.470000029", ("%.10g"):format((wick.tensor(147, { dtype = "float32" }) / t):item()))
    local x = wick.tensor({ 2.0, 4.0 }, { requires_grad = true })
    ;(3 / x):sum():backward()
    assert.are.same({ -0.75, -0.1875 }, x.grad:totable())
    assert.are.same({ 2.5, 1.25 }, (5 / wick.tensor({ 2, 4 }, { dtype = "int64" })):totable())
  end)
end)

describe("the twenty-eighth round's lines (pytorch-tutorial's captioning)", function()
  it("a PackedSequence indexes as PyTorch's namedtuple, 1-based; p[0] and unknown names are errors", function()
    local p = nn.utils.rnn.pack_padded_sequence(wick.randn(3, 4, 2), { 4, 3, 1 }, true)
    assert.are.same({ 8, 2 }, p[1]:size())
    assert.are.same({ 3, 2, 2, 1 }, p[2]:totable())
    assert.is_nil(p.sorted_indices)
    support.assert_error_has(function() return p[0] end, "PyTorch's p[0] is p[1], p.data")
    support.assert_error_has(function() return p[5] end, "index 5 is out of range")
    support.assert_error_has(function() return p.foo end, "has no field 'foo'")
  end)
end)

describe("the twenty-ninth round's lines (GPT-NeoX, Falcon, Bloom, diffusers, encodec, dreamer)", function()
  it("addmm, baddbmm, addcmul and F's functions take their tensors by PyTorch's names", function()
    local a, b1, b2 = wick.zeros(2, 3, 3), wick.ones(2, 3, 4), wick.ones(2, 4, 3)
    -- Bloom's torch.baddbmm(input=alibi, batch1=q, batch2=k, beta=self.beta, alpha=self.inv_norm_factor)
    local r = wick.baddbmm{ input = a, batch1 = b1, batch2 = b2, beta = 1.0, alpha = 0.5 }
    assert.are.same(wick.full({ 2, 3, 3 }, 2.0):totable(), r:totable())
    assert.are.same(r:totable(), wick.baddbmm(a, { batch1 = b1, batch2 = b2, alpha = 0.5 }):totable())
    local m = wick.addmm{ input = wick.zeros(3, 3), mat1 = wick.ones(3, 4), mat2 = wick.ones(4, 3) }
    assert.are.same(wick.full({ 3, 3 }, 4.0):totable(), m:totable())
    assert.are.same({ 2, 2, 2 }, wick.addcmul(wick.zeros(3), { tensor1 = wick.ones(3), tensor2 = wick.ones(3), value = 2 }):totable())
    -- GPTNeoXSdpaAttention's scaled_dot_product_attention(query=q, key=k, value=v, is_causal=True)
    local q, k, v = wick.randn(1, 2, 3, 4), wick.randn(1, 2, 3, 4), wick.randn(1, 2, 3, 4)
    local want = F.scaled_dot_product_attention(q, k, v, { is_causal = true })
    local got = F.scaled_dot_product_attention{ query = q, key = k, value = v, is_causal = true }
    assert.are.same(want:totable(), got:totable())
    local w, x = wick.randn(5, 4), wick.randn(2, 4)
    assert.are.same(F.linear(x, w):totable(), F.linear{ input = x, weight = w }:totable())
    assert.are.same(F.softmax(x, -1):totable(), F.softmax{ input = x, dim = -1 }:totable())
    assert.are.same({ { 1, 0, 0 }, { 0, 1, 0 } }, F.one_hot{ tensor = wick.tensor({ 1, 2 }, { dtype = wick.int64 }), num_classes = 3 }:totable())
  end)

  it("quantile and requires_grad_ take their keywords (dreamer's RewardEMA and RequiresGrad)", function()
    local x, q = wick.tensor({ 1, 2, 3, 4, 5 }), wick.tensor({ 0.05, 0.95 })
    local want = wick.quantile(x, q):totable()
    support.assert_close(want, { 1.2, 4.8 }, 1e-6)
    assert.are.same(want, wick.quantile{ input = x, q = q }:totable())
    assert.are.same(want, wick.quantile(x, { q = q }):totable())
    local lin = nn.Linear(2, 2)
    assert.are.equal(lin, lin:requires_grad_({ requires_grad = false }))
    assert.is_false(lin.weight.requires_grad)
    lin:requires_grad_()
    assert.is_true(lin.weight.requires_grad)
    support.assert_error_has(function() return lin:requires_grad_({ requires_grad = 3 }) end,
      "requires_grad_: expected a boolean for option 'requires_grad', got 3")
    assert.is_true(wick.zeros(3):requires_grad_({ requires_grad = true }).requires_grad)
  end)

  it("a transformer layer's _sa_block, _mha_block and _ff_block are methods a subclass overrides", function()
    wick.manual_seed(0)
    -- encodec's StreamingTransformerEncoderLayer: x = self.norm2(x + self._ff_block(x))
    local L = nn.TransformerEncoderLayer:extend("L")
    function L:_sa_block(x) return wick.zeros_like(x) end
    local l = L(8, 2, 16, { dropout = 0.0, batch_first = true })
    local r = nn.TransformerEncoderLayer(8, 2, 16, { dropout = 0.0, batch_first = true })
    r:load_state_dict(l:state_dict())
    local x = wick.randn(2, 5, 8)
    -- the override runs: norm2(x' + ff(x')) with x' = norm1(x + 0)
    local x1 = r.norm1(x)
    support.assert_close(l(x):totable(), r.norm2(x1 + r:_ff_block(x1)):totable(), 1e-6)
    assert.is_true((l(x) - r(x)):abs():max():item() > 1e-3)
    local d = nn.TransformerDecoderLayer(8, 2, 16, { dropout = 0.0, batch_first = true })
    local mem = wick.randn(2, 3, 8)
    local y = d.norm1(x + d:_sa_block(x, nil, nil))
    y = d.norm2(y + d:_mha_block(y, mem, nil, nil))
    support.assert_close(d(x, mem):totable(), d.norm3(y + d:_ff_block(y)):totable(), 1e-6)
  end)

  it("pow with a tensor exponent is pow itself, a number exponent keeps PyTorch's products", function()
    -- Bloom's build_alibi_tensor: torch.pow(base, powers) with int32 powers, base 2^-0.5
    local base = wick.tensor(2 ^ -0.5, { dtype = wick.float32 })
    local p = wick.pow(base, wick.tensor({ 3 }, { dtype = wick.int32 }))
    assert.are.equal(0.35355338454246521, p[1]:item()) -- powf's, correctly rounded (x*x*x: ...35474)
    assert.are.equal(0.35355335474014282, base:pow(3):item()) -- PyTorch's pow_tensor_scalar: x*x*x
  end)
end)

describe("the twenty-ninth round's distributions (dreamerv3's OneHotDist)", function()
  it("a distribution class extends another, its init reaching the base's through super", function()
    local D = wick.distributions
    local OneHotDist = D.OneHotCategorical:extend("OneHotDist")
    function OneHotDist:init(logits, unimix_ratio)
      local probs = F.softmax(logits, -1)
      probs = probs * (1 - unimix_ratio) + unimix_ratio / probs.shape[-1]
      OneHotDist.super.init(self, { logits = wick.log(probs) })
    end
    function OneHotDist:mode() -- a method for the base's property, as dreamer's
      local m = F.one_hot(wick.argmax(self.logits, -1), self.logits.shape[-1])
      return m:detach() + self.logits - self.logits:detach()
    end
    local logits = wick.tensor({ { 2.0, 0.5, -1.0 } }, { requires_grad = true })
    local d = OneHotDist(logits, 0.01)
    assert.are.equal("OneHotDist(probs: Size([1, 3]))", tostring(d))
    local p = F.softmax(logits, -1):detach() * 0.99 + 0.01 / 3
    support.assert_close(d.probs:totable(), p:totable(), 1e-6)
    assert.are.same({ { 1, 0, 0 } }, d:mode():detach():totable())
    d:mode():sum():backward() -- the straight-through gradient reaches the logits
    assert.is_not_nil(logits.grad)
    support.assert_close(d:log_prob(wick.tensor({ { 0, 1, 0 } })):totable(), { math.log(p[1][2]:item()) }, 1e-6)
    local ind = D.Independent(d, 1)
    assert.are.same({ { 1, 0, 0 } }, ind:mode():detach():totable()) -- bound to the base, as Python's
    local q = OneHotDist(wick.zeros(1, 3), 0.0)
    support.assert_close(D.kl_divergence(d, q):totable(), D.kl_divergence(D.OneHotCategorical{ logits = d.logits },
      D.OneHotCategorical{ logits = q.logits }):totable(), 1e-6)
    support.assert_error_has(function() return d.mode() end, "OneHotDist") -- (no receiver: its own method's error)
    -- one of one's own, from Distribution
    local Huber = D.Distribution:extend("UnnormalizedHuber")
    function Huber:init(loc) self.loc = loc; D.Distribution.init(self, loc.shape, {}) end
    function Huber:log_prob(x) return -(((x - self.loc):pow(2) + 1):sqrt() - 1) end
    local h = Huber(wick.zeros(3))
    assert.are.same({ 3 }, h.batch_shape)
    support.assert_close(D.Independent(h, 1):log_prob(wick.ones(3)):item(), -3 * (math.sqrt(2) - 1), 1e-6)
    support.assert_error_has(function() return h:rsample() end, "UnnormalizedHuber:rsample: has no reparameterised draws")
  end)
end)

describe("the thirtieth round's lines (RETRO, diffusers' mid-block, PyG)", function()
  it("a ModuleList holds Python's None as false, in its place", function()
    -- RETRO: nn.ModuleList([Attention(...), ChunkedCrossAttention(...) if has_cross_attn else None, FeedForward(...)])
    local has_cross_attn = false
    local l = nn.ModuleList({ nn.Linear(2, 2), has_cross_attn and nn.Linear(2, 2) or nil, nn.Linear(2, 3) })
    assert.are.equal(3, #l)
    assert.is_false(l[2])
    assert.are.equal(4, #l:parameters())
    local keys = {}
    for k in l:state_dict():keys() do keys[#keys + 1] = k end
    assert.are.same({ "1.weight", "1.bias", "3.weight", "3.bias" }, keys)
    assert.is_truthy(tostring(l):find("(2): None", 1, true))
    l:append(false)
    assert.are.equal(4, #l)
    l[2] = nn.Linear(3, 3)
    assert.are.equal(6, #l:parameters())
    assert.are.equal(4, #wick.deepcopy(l))
    support.assert_error_has(function() return nn.ModuleList({ nn.ReLU(), 3 }) end, "expected a module (or false for None)")
    support.assert_error_has(function() return nn.Sequential(nn.ReLU(), false) end, "Sequential")
  end)
end)

describe("the thirtieth round's segment_reduce (PyG's _segment_reduce(src, reduce, offsets=ptr))", function()
  it("reduces consecutive segments, empty ones to the identity or initial, as PyTorch's", function()
    local src = wick.tensor({ 1, 4, 2, 3, 5 })
    local lengths = wick.tensor({ 2, 0, 3 }, { dtype = wick.int64 })
    local want = { sum = { 5, 0, 10 }, max = { 4, -math.huge, 5 }, min = { 1, math.huge, 2 }, prod = { 4, 1, 30 } }
    for r, v in pairs(want) do
      assert.are.same(v, wick.segment_reduce(src, r, { lengths = lengths }):totable())
      assert.are.same(v, wick._segment_reduce(src, r, { offsets = wick.tensor({ 0, 2, 2, 5 }, { dtype = wick.int64 }) }):totable())
    end
    local mean = wick.segment_reduce(src, "mean", { lengths = lengths }):totable()
    assert.are.equal(2.5, mean[1])
    assert.is_true(mean[2] ~= mean[2])
    -- initial joins every segment: PyTorch's [12, 7, 17], [7, 7, 7], and mean (sum + initial) / count
    assert.are.same({ 12, 7, 17 }, wick.segment_reduce(src, "sum", { lengths = { 2, 0, 3 }, initial = 7 }):totable())
    assert.are.same({ 7, 7, 7 }, wick.segment_reduce(src, "max", { lengths = { 2, 0, 3 }, initial = 7 }):totable())
    support.assert_close(wick.segment_reduce(src, "mean", { lengths = { 2, 0, 3 }, initial = 7 }):totable(), { 6, 7, 17 / 3 }, 1e-6)
    local x = wick.arange(10.0):reshape(5, 2)
    assert.are.same({ { 2, 4 }, { 18, 21 } }, wick.segment_reduce(x, "sum", { lengths = { 2, 3 } }):totable())
    assert.are.same({ { 2, 18 }, { 4, 21 } }, wick.segment_reduce(x:t(), "sum", { lengths = { 2, 3 }, axis = 2 }):totable())
    local s = src:clone():requires_grad_()
    wick.segment_reduce(s, "max", { lengths = lengths }):sum():backward()
    assert.are.same({ 0, 1, 0, 0, 1 }, s.grad:totable())
    support.assert_error_has(function() return wick.segment_reduce(src, "sum", { lengths = { 2, 2 } }) end,
      "Expected all rows of lengths along axis to sum to data.size")
    support.assert_error_has(function() return wick.segment_reduce(src, "sum") end, "Either lengths or offsets must be defined")
  end)
end)

describe("the thirtieth round's datasets (PaLM's train_dataset[3][None, :])", function()
  it("ds[i] is the one value get returns; a TensorDataset's sample stays a tuple", function()
    local TextSamplerDataset = wick.data.Dataset:extend("TextSamplerDataset")
    function TextSamplerDataset:init(d, seq_len) self.data, self.seq_len = d, seq_len end
    function TextSamplerDataset:len() return self.data:size(1) - self.seq_len end
    function TextSamplerDataset:get(i) return self.data:narrow(1, i, self.seq_len + 1) end
    local ds = TextSamplerDataset(wick.arange(10.0), 3)
    local first = ds[4][{ wick.newaxis, {} }]
    assert.are.same({ { 3, 4, 5, 6 } }, first:totable())
    assert.are.same({ 2, 3, 4, 5 }, wick.data.Subset(ds, { 3 })[1]:totable())
    local td = wick.data.TensorDataset(wick.arange(5.0))
    assert.are.equal("table", type(td[2]))
    assert.are.equal(1, td[2][1]:item())
    assert.are.equal("table", type(wick.data.Subset(td, { 2 })[1]))
  end)

  it("register_buffer(name, nil) keeps the name's place (PaLM's mask and pos_emb)", function()
    local PaLMLike = nn.Module:extend("PaLMLike")
    function PaLMLike:init()
      self:register_buffer("mask", nil, false)
      self:register_buffer("pos_emb", nil, false)
    end
    local m = PaLMLike()
    m:register_buffer("pos_emb", wick.ones(1), false) -- filled first in forward
    m:register_buffer("mask", wick.zeros(1), false)
    local names = {}
    for name in m:named_buffers() do names[#names + 1] = name end
    assert.are.same({ "mask", "pos_emb" }, names)
  end)

  it("register_buffer takes the tensor by name, t:to copy = true (HF's Gemma2 and its _sample loop)", function()
    local Rotary = nn.Module:extend("Rotary")
    function Rotary:init() self:register_buffer("inv_freq", { tensor = wick.ones(4), persistent = false }) end
    local r = Rotary()
    assert.are.same({ 1, 1, 1, 1 }, r.inv_freq:totable())
    assert.is_nil(next(r:state_dict()))
    local logits = wick.ones(2, 3)
    local copy = logits:to({ copy = true, dtype = wick.float32 })
    assert.is_false(rawequal(copy, logits))
    copy[1][1] = 5
    assert.are.equal(1, logits[1][1]:item())
    assert.is_true(rawequal(logits, logits:to({ dtype = wick.float32 })))
  end)
end)

describe("the thirty-first round's lines (Informer's ProbAttention)", function()
  it("a method of one's own takes PyTorch's keywords, as forward does", function()
    local ProbAttention = nn.Module:extend("ProbAttention")
    function ProbAttention:_prob_QK(Q, K, sample_k, n_top) return sample_k, n_top end -- luacheck: ignore Q K
    function ProbAttention:forward(queries, keys)
      -- self._prob_QK(queries, keys, sample_k=U_part, n_top=u)
      return self:_prob_QK(queries, keys, { sample_k = 3, n_top = 2 })
    end
    function ProbAttention.helper(x) return x end -- a static function: left as it is
    local p = ProbAttention()
    assert.are.same({ 3, 2 }, { p(1, 2) })
    assert.are.same({ nil, 5 }, { p:_prob_QK(1, 2, { n_top = 5 }) })
    support.assert_error_has(function() return p:_prob_QK(1, 2, { n_tops = 5, sample_k = 1 }) end,
      "ProbAttention._prob_QK: got an unexpected keyword argument 'n_tops'")
    local t = { foo = 1 }
    assert.are.equal(t, ProbAttention.helper(t))
  end)

  it("an all-nil keyword table before the last parameter is an empty keyword call (HF's Whisper)", function()
    local L = nn.Module:extend("WhisperEncoderLayer")
    function L:forward(h, attention_mask, layer_head_mask, output_attentions)
      if layer_head_mask ~= nil then return layer_head_mask:view(1, -1, 1, 1) * h end
      return h, attention_mask, output_attentions
    end
    local head_mask, output_attentions -- (both nil: Lua builds {})
    local h = wick.ones(2)
    assert.are.equal(h, L()(h, nil, { layer_head_mask = head_mask, output_attentions = output_attentions }))
    -- on the last parameter, an empty table is that argument (whisper's kv_cache = {})
    local W = nn.Module:extend("TextDecoder")
    function W:forward(x, xa, kv_cache) return kv_cache end -- luacheck: ignore x xa
    local cache = {}
    assert.are.equal(cache, W()(1, 2, cache))
  end)
end)

describe("the thirty-first round's masks (pytorch-metric-learning's diffs = matches ^ 1)", function()
  it("the ^ operator on a mask is an error naming bitwise_xor, never a silent power", function()
    local labels = wick.tensor({ 1, 2, 1 })
    local matches = labels:unsqueeze(2):eq(labels:unsqueeze(1)):byte()
    support.assert_error_has(function() return matches ^ 1 end, "write mask:bitwise_xor(x)")
    support.assert_error_has(function() return matches:bool() ^ true end, "Python's ^ is xor")
    support.assert_error_has(function() return 1 ^ matches end, "Python's ^ is xor")
    assert.are.same({ { 0, 1, 0 }, { 1, 0, 1 }, { 0, 1, 0 } }, matches:bitwise_xor(1):totable())
    assert.are.same(matches:totable(), matches:pow(1):totable()) -- the method stays a power
    assert.are.same({ 4 }, (wick.tensor({ 2 }) ^ 2):totable())
    -- HashNeRF's xor_result ^= coords[..., i] * primes[i]: two integer tensors
    local coords = wick.tensor({ 5, 6 }, { dtype = wick.int64 })
    support.assert_error_has(function() return coords ^ wick.tensor({ 3, 3 }, { dtype = wick.int64 }) end,
      "write a:bitwise_xor(b)")
    assert.are.same({ 6, 5 }, coords:bitwise_xor(wick.tensor({ 3, 3 }, { dtype = wick.int64 })):totable())
    assert.are.same({ 25, 36 }, (coords ^ 2):totable())
  end)
end)

describe("the thirty-second round's lines (S4's complex diag_embed)", function()
  it("diag and diag_embed take complex tensors, part by part, with gradients", function()
    local W = wick.complex(wick.tensor({ -0.5, -0.5 }, { dtype = wick.float64 }), wick.tensor({ 1.0, 2.0 }, { dtype = wick.float64 }))
    local D = wick.diag_embed(W)
    assert.are.same({ { { -0.5, 1 }, { 0, 0 } }, { { 0, 0 }, { -0.5, 2 } } }, D:totable())
    assert.are.same(D:totable(), wick.diag(W):totable())
    assert.are.same(W:totable(), wick.diag(D):totable())
    local r = wick.tensor({ 1.0, 2.0 }, { requires_grad = true })
    wick.diag_embed(wick.complex(r, r * 2)).imag:sum():backward()
    assert.are.same({ 2, 2 }, r.grad:totable())
  end)
end)

describe("the thirty-third round's lines (speechbrain's ECAPA-TDNN)", function()
  it("keywords past a forward's last parameter are PyTorch's TypeError; legacy constructors take device", function()
    local x = wick.ones(2, 3)
    local TDNNBlock = nn.Module:extend("TDNNBlock")
    function TDNNBlock:forward(x) return x end -- luacheck: ignore
    -- try: x = layer(x, lengths=lengths) except TypeError: x = layer(x)
    local ok, err = pcall(function() return TDNNBlock()(x, { lengths = wick.ones(2) }) end)
    assert.is_false(ok)
    assert.is_truthy(tostring(err):find("TDNNBlock.forward: got an unexpected keyword argument 'lengths'", 1, true))
    assert.are.equal(x, TDNNBlock()(x))
    -- self.weight = nn.Parameter(torch.FloatTensor(out_neurons, input_size, device=device))
    local w = nn.Parameter(wick.FloatTensor(5, 12, { device = "cpu" }))
    assert.are.same({ 5, 12 }, w:size())
    assert.are.equal("float32", w.dtype)
    assert.are.same({ 5, 12 }, wick.FloatTensor({ size = { 5, 12 }, device = "cpu" }):size())
    support.assert_error_has(function() return wick.FloatTensor(2, { bogus = 1 }) end, "unknown option 'bogus'")
  end)
end)

describe("the thirty-fifth round's lines (Deformable DETR)", function()
  it("split takes a list of 0-dim integer tensors as sizes", function()
    -- value.split([H_ * W_ for H_, W_ in value_spatial_shapes], dim=1)
    local shapes = wick.as_tensor({ { 6, 6 }, { 3, 3 } }, { dtype = "int64" })
    local sizes = {}
    for _, hw in ipairs(shapes:unbind()) do sizes[#sizes + 1] = hw[1] * hw[2] end
    local parts = wick.zeros(2, 45):split(sizes, { dim = 2 })
    assert.are.same({ 2, 36 }, parts[1]:size())
    assert.are.same({ 2, 9 }, parts[2]:size())
    support.assert_error_has(function() return wick.zeros(2, 45):split({ wick.tensor(2.5), 1 }, 2) end,
      "expected an integer for argument 'split_size_or_sections[1]'")
  end)
end)

describe("the thirty-sixth round's lines (nflows, guided-diffusion)", function()
  it("super().__init__ and classmethods take keywords; where refuses a Lua boolean beside tensors", function()
    local Base = nn.Module:extend("Coupling")
    function Base:init(mask, fn, unconditional_transform) self.ut = unconditional_transform; self.fn = type(fn) end
    local Sub = Base:extend("PRQCoupling")
    -- super().__init__(mask, transform_net_create_fn, unconditional_transform=unconditional_transform)
    function Sub:init(mask, fn) Sub.super.init(self, mask, fn, { unconditional_transform = "UT" }) end
    assert.are.equal("UT", Sub({ 1, 0 }, print).ut)
    local M = nn.Module:extend("MaskedLinear")
    function M._get_mask_and_degrees(cls, in_degrees, out_features) return in_degrees, out_features end -- luacheck: ignore cls
    assert.are.same({ 3, 5 }, { M():_get_mask_and_degrees({ in_degrees = 3, out_features = 5 }) })
    -- th.where((t == 0), decoder_nll, kl): Lua's t == 0 is false
    local t = wick.tensor({ 0, 5 }, { dtype = wick.int64 })
    local a, b = wick.tensor({ 1.0, 2.0 }), wick.tensor({ 3.0, 4.0 })
    support.assert_error_has(function() return wick.where(t == 0, a, b) end, "write t:eq(x) or t:ne(x)")
    assert.are.same({ 1, 4 }, wick.where(t:eq(0), a, b):totable())
  end)
end)

describe("the thirty-seventh round's lines (Hyena, Swin, Decision Transformer, taming's VQGAN, demucs)", function()
  it("an init's ... takes a table naming none of its parameters as **kwargs, but for its first argument", function()
    -- Hyena: self.modulation = ExponentialModulation(d_model, **kwargs) with kwargs = {channels: 1}
    local E = nn.Module:extend("ExponentialModulation")
    function E:init(d_model, fast_decay_pct, ...)
      self.fast = fast_decay_pct or 0.3
      self.kwargs = ...
    end
    local e = E(4, { channels = 1 })
    assert.are.equal(0.3, e.fast)
    assert.are.same({ channels = 1 }, e.kwargs)
    local e2 = E(4, { channels = 1, fast_decay_pct = 0.5 })
    assert.are.same({ 0.5, 1 }, { e2.fast, e2.kwargs.channels })
    -- HF's Model(config) with `...`: the table first stays the value
    local C = nn.Module:extend("C")
    function C:init(config, ...) self.n = config.n_embd end
    assert.are.equal(5, C({ n_embd = 5 }).n)
  end)

  it("a keyword call whose every name is a misspelt parameter is PyTorch's TypeError, not a value", function()
    local Block = nn.Module:extend("Block")
    function Block:init(n_ctx, config, scale) self.scale = scale end -- luacheck: ignore n_ctx config
    function Block:forward(hidden_states, layer_past, attention_mask) return attention_mask end -- luacheck: ignore
    support.assert_error_has(function() return Block(2048, { n_head = 1 }, { scal = false }) end,
      "Block.init: got an unexpected keyword argument 'scal' (did you mean 'scale'?)")
    local b = Block(2048, { n_head = 1 })
    support.assert_error_has(function() return b(wick.ones(2), { attention_mak = wick.zeros(2) }) end,
      "got an unexpected keyword argument 'attention_mak' (did you mean 'attention_mask'?)")
    assert.are.equal(1, b(wick.ones(2), { attention_mask = 1 }))
    -- a config table with keys of its own stays a value
    local seen = nil
    function Block:forward(hidden_states, config) seen = config end -- luacheck: ignore hidden_states
    b(wick.ones(2), { n_embd = 4, n_head = 2 })
    assert.are.same({ n_embd = 4, n_head = 2 }, seen)
  end)

  it("a nil size names its place among the sizes (Swin's unpack of a 3-D shape into B, H, W, C)", function()
    local x = wick.randn(2, 3)
    support.assert_error_has(function() return x:view(6, nil) end, "got nil for size 2")
    support.assert_error_has(function() return x:reshape(nil, 6) end, "got nil for size 1")
  end)

  it("wick.slice is Python's slice: 0-based, stop excluded, clamped (states[:, -max_length:])", function()
    local states = wick.arange(6):view(1, 3, 2)
    assert.are.same({ 1, 3, 2 }, states[{ {}, wick.slice(-20, nil) }]:size():totable())
    assert.are.same({ { { 2, 3 }, { 4, 5 } } }, states[{ {}, wick.slice(-2, nil) }]:totable())
    local x = wick.arange(10)
    assert.are.same({ 8, 9 }, x[{ wick.slice(8, 8 + 5) }]:totable())
    assert.are.same({ 0, 1, 2 }, x[wick.slice(3)]:totable())
    assert.are.same({ 1, 4, 7 }, x[{ wick.slice(1, 9, 3) }]:totable())
    assert.are.equal(0, x[{ wick.slice(5, 2) }]:numel())
    assert.are.same({ 2, 3 }, x[{ wick.slice(wick.tensor(2, { dtype = "int64" }), 4) }]:totable())
    local out = wick.zeros(2, 10)
    out[{ "...", wick.slice(8, 8 + 4) }] = 1 -- demucs' out[..., offset:offset + segment] += of the last chunk
    assert.are.equal(4, out:sum():item())
    local z = wick.randn(4, 3, { requires_grad = true })
    z[{ wick.slice(1, nil, 2) }]:sum():backward()
    assert.are.same({ 0, 3, 0, 3 }, z.grad:sum(2):totable())
    assert.are.equal("slice(1, None, 2)", tostring(wick.slice(1, nil, 2)))
    assert.are.equal(4, wick.slice(4).stop)
    support.assert_error_has(function() return wick.slice(1, 2, 0) end, "slice step cannot be zero")
    support.assert_error_has(function() return z[{ wick.slice(nil, nil, -1) }] end, "step must be greater than zero")
    support.assert_error_has(function() return wick.slice(1.5) end, "expected an integer or nil for stop, got a fraction")
    -- a field set after wick.slice is checked when the slice is used (1e300 was cast to int64)
    local s = wick.slice(1)
    s.start = 1e300
    assert.are.equal(0, x[{ s }]:numel())
    s.start = "a"
    support.assert_error_has(function() return x[{ s }] end, "expected an integer or nil for start, got string")
  end)

  it("MAML's upsample_nearest(x, scale_factor=2), LBFGS([non-leaf]), PointNet's norm(inf, dim=(1,2)), conv1d's shapes", function()
    local F = nn.functional
    local x = wick.randn(1, 1, 2, 2)
    assert.are.same({ 1, 1, 4, 4 }, F.upsample_nearest(x, { scale_factor = 2 }):size():totable())
    assert.are.same({ 1, 1, 4, 4 }, F.upsample_bilinear(x, { scale_factor = 2 }):size():totable())
    assert.are.same({ 1, 1, 3, 3 }, F.upsample_nearest(x, { 3, 3 }):size():totable())
    -- optim.LBFGS([input_img.requires_grad_()]) with a computed tensor: PyTorch's ValueError
    local leaf = wick.rand(3):requires_grad_()
    support.assert_error_has(function() return wick.optim.LBFGS({ leaf * 2 }) end, "can't optimize a non-leaf Tensor")
    -- torch.norm(u, inf, dim=(1, 2))
    local u = wick.tensor({ { { 1, -2 }, { 3, 0 } } })
    assert.are.same({ 3 }, wick.norm(u, math.huge, { dim = { 2, 3 } }):totable())
    assert.are.same({ 0 }, wick.linalg.vector_norm(u, -math.huge, { 2, 3 }):totable())
    local t = wick.tensor({ 2, -2, 1 }, { requires_grad = true })
    t:norm(math.huge, 1):backward() -- PyTorch shares the gradient among the ties
    assert.are.same({ 0.5, -0.5, 0 }, t.grad:totable())
    -- nn.Conv1d(3, 64, 1)(x of 4 channels): PyTorch's message in the 1-D shapes
    support.assert_error_has(function() return nn.Conv1d(3, 64, 1)(wick.rand(2, 4, 16)) end,
      "conv1d: Given groups=1, weight of size [64, 3, 1], expected input[2, 4, 16] to have 3 channels, but got 4 channels instead")
    -- dgcnn's idx_base = torch.arange(0, batch_size).view(-1, 1, 1) * num_points: arange is float32 here
    local idx = wick.tensor({ { { 1, 2 } }, { { 1, 2 } } }, { dtype = "int64" })
    support.assert_error_has(function() return wick.randn(6, 4)[{ (idx + wick.arange(0, 2):view(-1, 1, 1) * 3):view(-1), {} }] end,
      "and so does wick.arange")
  end)

  it("a torch.save'd checkpoint dict of mixed values loads as an OrderedDict (for k, v in ckpt.items())", function()
    local path = os.tmpname()
    wick.save({ model = { w = wick.ones(2) }, epoch = 3 }, path)
    local ck = wick.load(path)
    os.remove(path)
    local keys = {}
    for k in ck:items() do keys[#keys + 1] = k end
    table.sort(keys)
    assert.are.same({ "epoch", "model" }, keys)
    assert.are.equal(3, ck.epoch)
  end)

  it("TCN and siren: weight_norm's old checkpoints, OrderedDict(named_parameters()), popitem, str(cls)", function()
    wick.manual_seed(0)
    local old
    support.warnings_of(function() old = nn.utils.weight_norm(nn.Conv1d(2, 3, 2)) end)
    local new = nn.utils.parametrizations.weight_norm(nn.Conv1d(2, 3, 2))
    new:load_state_dict(old:state_dict()) -- weight_g, weight_v: PyTorch's _weight_norm_compat_hook
    local x = wick.randn(1, 2, 5)
    assert.are.equal(0, (old(x) - new(x)):abs():max():item())
    local lin = nn.Linear(2, 3)
    local params = wick.OrderedDict(lin:named_parameters())
    local names = {}
    for name in params:keys() do names[#names + 1] = name end
    assert.are.same({ "weight", "bias" }, names)
    local k, v = params:popitem()
    assert.are.equal("bias", k)
    assert.is_true(rawequal(v, lin.bias))
    assert.are.equal(1, params:len())
    local od = wick.OrderedDict()
    od.a = 1
    od.b = 2
    assert.are.same({ "a", 1 }, { od:popitem({ last = false }) })
    support.assert_error_has(function() return wick.OrderedDict():popitem() end, "dictionary is empty")
    local SineLayer = nn.Module:extend("SineLayer")
    assert.are.equal("<class 'SineLayer'>", tostring(SineLayer))
    assert.are.equal("<class 'Linear'>", tostring(lin.__class__))
    support.assert_error_has(function() return nn.Conv1d(2, 3, 5)(wick.randn(2, 2, 3)) end,
      "Calculated padded input size per channel: (3). Kernel size: (5)")
  end)

  it("transformer-xl and pix2pix: index_copy_ of a 0-dim index, a ParameterList holding None, __call__, InstanceNorm", function()
    -- emb_flat.index_copy_(0, mask_i.nonzero().squeeze(), emb_i) with one token in the cluster
    local idx = wick.tensor({ { 3 } }, { dtype = "int64" }):squeeze()
    local flat = wick.zeros(5, 3):index_copy_(1, idx, wick.ones(1, 3))
    assert.are.same({ 0, 0, 3, 0, 0 }, flat:sum(2):totable())
    support.assert_error_has(function() return wick.zeros(5, 3):index_copy_(1, idx, wick.ones(3)) end, "does not match the indexed shape [1, 3]")
    -- self.out_projs.append(None)
    local projs = nn.ParameterList()
    projs:append(false)
    projs:append(nn.Parameter(wick.zeros(2)))
    assert.are.same({ false, 1 }, { projs[1], #projs:parameters() })
    assert.is_truthy(tostring(projs):find("(1): Object of type: NoneType", 1, true))
    -- class GANLoss(nn.Module): def __call__(self, prediction, target_is_real)
    local GANLoss = nn.Module:extend("GANLoss")
    function GANLoss:init() self.loss = nn.MSELoss() end
    function GANLoss:__call__(prediction, target_is_real)
      return self.loss(prediction, target_is_real and wick.ones_like(prediction) or wick.zeros_like(prediction))
    end
    local crit = GANLoss()
    assert.are.equal(1, crit(wick.zeros(2), true):item())
    assert.are.equal(0, crit(wick.zeros(2), { target_is_real = false }):item())
    -- InstanceNorm2d(track_running_stats=True) counts no batches, and momentum = None freezes the stats (PyTorch's)
    local m = nn.InstanceNorm2d(2, { track_running_stats = true })
    m(wick.rand(2, 2, 3, 3))
    m(wick.rand(2, 2, 3, 3))
    assert.are.equal(0, m.num_batches_tracked:item())
    m.momentum = nil
    local before = m.running_mean:clone()
    m(wick.rand(2, 2, 3, 3) + 5)
    assert.is_true(m.running_mean:equal(before))
    -- transformer-xl's .byte() masks: PyTorch 2 refuses them in masked_fill and masked_select
    support.assert_error_has(function() return wick.zeros(3):masked_fill(wick.tensor({ 0, 1, 1 }):byte(), 1) end,
      "masked_fill: only supports boolean masks, but got mask with dtype uint8")
    -- stylegan2's closed_form_factorization: torch.svd(W).V
    assert.are.same({ 3, 3 }, wick.svd(wick.randn(4, 3)).V.shape:totable())
    assert.are.same({ 3, 3 }, wick.linalg.qr(wick.randn(3, 3)).Q.shape:totable())
    support.assert_error_has(function() return wick.randn(3, 3).Q end, "local Q, R = wick.linalg.qr(A)")
    -- getattr(module, "0") walking a PyTorch checkpoint's names
    support.assert_error_has(function() return nn.Sequential(nn.ReLU())["0"] end, "entries are named from '1'")
  end)

  it("ModuleList:insert(0, m) and pop(0) say indices count from 1", function()
    local up = nn.ModuleList()
    support.assert_error_has(function() up:insert(0, nn.ReLU()) end, "PyTorch's insert(0, m), which prepends, is insert(1, m)")
    up:insert(1, nn.ReLU())
    up:insert(1, nn.Tanh())
    assert.are.equal("Tanh", getmetatable(up[1]).__name)
    support.assert_error_has(function() nn.Sequential(nn.ReLU()):pop(0) end, "PyTorch's pop(0) is pop(1)")
  end)
end)

describe("the thirty-ninth round's lines (Muon, Lion, schedule-free, Adan, reformer, set transformer, imagen)", function()
  it("an optimizer of one's own: keywords, step hooks, state dict hooks, __setstate__", function()
    local log = {}
    local Adan = wick.optim.Optimizer:extend("Adan")
    function Adan:init(params, lr, weight_decay)
      Adan.super.init(self, params, { lr = lr or 1e-3, weight_decay = weight_decay or 0 })
    end
    function Adan:step(closure) log[#log + 1] = "step"; return closure and closure() end -- luacheck: ignore
    local params = nn.Linear(2, 2):parameters()
    local opt = Adan(params, { weight_decay = 0.02 }) -- Adan(params, weight_decay=0.02)
    assert.are.same({ 1e-3, 0.02 }, { opt.param_groups[1].lr, opt.param_groups[1].weight_decay })
    support.assert_error_has(function() return Adan(params, { weight_dcay = 0.02 }) end, "did you mean 'weight_decay'?")
    local h = opt:register_step_pre_hook(function(o, args) log[#log + 1] = "pre" .. #args end)
    opt:register_step_post_hook(function() log[#log + 1] = "post" end)
    local g = wick.optim.optimizer.register_optimizer_step_pre_hook(function() log[#log + 1] = "global" end)
    assert.are.equal(7, opt:step(function() return 7 end))
    assert.are.same({ "global", "pre1", "step", "post" }, log)
    h:remove()
    g:remove()
    log = {}
    opt:step()
    assert.are.same({ "step", "post" }, log)
    -- the built-ins run them too; a pre hook may replace the arguments
    local sgd = wick.optim.SGD(params, 0.1)
    local seen
    sgd:register_step_pre_hook(function() return { function() seen = "replaced"; return 1 end }, {} end)
    sgd:step(function() return 0 end)
    assert.are.equal("replaced", seen)
    opt:register_state_dict_post_hook(function(_, sd) sd.extra = 1; return sd end)
    assert.are.equal(1, opt:state_dict().extra)
    opt:__setstate__({ defaults = { lr = 5 } })
    assert.are.equal(5, opt.defaults.lr)
  end)

  it("Muon's b * A in bfloat16 is A * b, and a bfloat16 norm sums in float32", function()
    local A = wick.linspace(1, 2, 129):bfloat16()
    assert.are.equal(0, (-4.775 * A):ne(A * -4.775):sum():item())
    assert.are.equal(65, wick.ones(4198, { dtype = "bfloat16" }):norm():item()) -- sqrt(4198) = 64.79
    -- PyTorch's Adam: torch._foreach_pow(beta1, steps); addcdiv_ with a tensor of values
    assert.are.same({ 8, 8 }, wick._foreach_pow(2.0, { wick.full({ 2 }, 3) })[1]:totable())
    local l = { wick.ones(2), wick.ones(2) }
    wick._foreach_addcdiv_(l, { wick.ones(2), wick.ones(2) }, { wick.ones(2), wick.ones(2) }, wick.tensor({ 0.5, 0.25 }))
    assert.are.same({ { 1.5, 1.5 }, { 1.25, 1.25 } }, { l[1]:totable(), l[2]:totable() })
    -- hasattr(torch, "_foreach_mul_"): a name made on first use
    assert.is_true(wick.hasattr(wick, "_foreach_mul_"))
    assert.is_false(wick.hasattr(wick, "_foreach_no_such_op_"))
    assert.is_true(wick.hasattr(nn.functional, "scaled_dot_product_attention"))
    assert.is_false(wick.hasattr(nn.Linear(2, 2), "no_such_field"))
  end)

  it("reformer's helper pointing back at its module, and a forward's **kwargs a new table each call", function()
    local Helper = {}
    Helper.__index = Helper
    local M = nn.Module:extend("AxialPositionalEmbedding")
    function M:init()
      self.weights = setmetatable({ kls = self }, Helper) -- ParameterList(self, 'weights', n)
      self.weights_0 = nn.Parameter(wick.zeros(3))
    end
    assert.are.equal(1, #M():parameters())
    local C = nn.Module:extend("Child")
    function C:init(parent) self.refs = { parent = parent }; self.w = nn.Parameter(wick.zeros(2)) end
    local P = nn.Module:extend("Parent")
    function P:init() self.child = C(self); self.v = nn.Parameter(wick.zeros(1)) end
    local p = P()
    assert.are.equal(2, #p:parameters())
    assert.are.equal(2, p:state_dict():len())
    assert.is_truthy(tostring(p):find("Parent(...)", 1, true))
    -- def forward(self, qk, v, query_len=None, **kwargs): kwargs.pop('_reverse', False)
    local A = nn.Module:extend("LSHAttention")
    function A:forward(x, query_len, ...) -- luacheck: ignore
      local kwargs = ...
      local r = kwargs._reverse
      kwargs._reverse = nil
      return r
    end
    local a, f_args = A(), { _reverse = true, _depth = 0 }
    assert.are.same({ true, true, true }, { a(wick.ones(1), f_args), a(wick.ones(1), f_args), f_args._reverse })
  end)

  it("wavenet's incremental conv runs weight norm's hook by hand through self._forward_pre_hooks.values()", function()
    local m
    support.warnings_of(function() m = nn.utils.weight_norm(nn.Conv1d(2, 2, 3)) end)
    assert.are.equal(0, nn.Conv1d(2, 2, 3)._forward_pre_hooks:len())
    wick.no_grad(function() m.weight_g:mul_(2) end)
    local n = 0
    for hook in m._forward_pre_hooks:values() do n = n + 1; hook(m, wick.randn(1, 2, 5)) end
    assert.are.equal(1, n)
    -- the hook recomputed weight from g and v
    local v = m.weight_v:detach()
    local expected = v * (m.weight_g:detach() / v:pow(2):sum({ 2, 3 }, true):sqrt())
    assert.is_true((m.weight:detach() - expected):abs():max():item() < 1e-6)
    local l = nn.Linear(2, 2)
    local h = l:register_forward_hook(function() end)
    local ids = {}
    for id, fn in l._forward_hooks:items() do ids[#ids + 1] = type(id) .. " " .. type(fn) end
    assert.are.same({ "number function" }, ids)
    h:remove()
    assert.are.equal(0, l._forward_hooks:len())
    -- a float tensor as a size is named as a tensor, not as Lua's userdata
    support.assert_error_has(function() return wick.zeros(2, 3):expand(2, wick.tensor(3.)) end, "got a float32 tensor of 0 dims")
  end)

  it("torchvision's segmentation criterion on a crop of ignored pixels: NaN loss, zero gradient (PyTorch's)", function()
    local F = nn.functional
    local x = wick.randn(2, 5, 4, 4, { requires_grad = true })
    local target = wick.full({ 2, 4, 4 }, 255, { dtype = "int64" })
    local loss = F.cross_entropy(x, target, { ignore_index = 255 })
    assert.is_true(loss:isnan():item())
    loss:backward()
    assert.are.equal(0, x.grad:abs():sum():item())
    x.grad = nil
    F.nll_loss(F.log_softmax(x, 2), target, { ignore_index = 255, weight = wick.ones(5) }):backward()
    assert.are.equal(0, x.grad:abs():sum():item())
    support.assert_error_has(function() return F.cross_entropy(x, wick.full({ 2, 4, 4 }, 9, { dtype = "int64" })) end,
      "cross_entropy: Target 9 is out of bounds")
    -- N-BEATS' t.einsum('bp,pt->bt', theta, self.backcast_time) with float64 theta and float32 templates,
    -- GPT-J's einsum("i , j -> i j", arange(n, dtype=float), inv_freq): in the promoted dtype
    local theta, times = wick.randn(2, 3, { dtype = "float64" }), wick.randn(3, 4)
    local bt = wick.einsum("bp,pt->bt", theta, times)
    assert.are.equal("float64", bt.dtype)
    assert.is_true((bt - theta:mm(times:double())):abs():max():item() < 1e-12)
    assert.are.equal("float64", wick.einsum("i , j -> i j", wick.arange(4, { dtype = "float32" }), wick.ones(2, { dtype = "float64" })).dtype)
    -- Rainbow: (u > 0) * done with a Lua boolean stays a mask; TD3's randint(0, size, batch_size)
    local x = wick.tensor({ 10, 20, 30 })
    local mask = x:gt(5)
    assert.are.equal("bool", (mask * true).dtype)
    assert.are.same({ 10, 20, 30 }, x[mask * true]:totable())
    assert.are.equal("bool", wick.where(mask, true, false).dtype)
    assert.are.equal("int64", (mask * 2).dtype)
    support.assert_error_has(function() return wick.randint(0, 5, 4) end, "size must be a table of sizes")
    -- torch.save({'device': args.device}): refused here rather than loaded back as an empty table
    support.assert_error_has(function() return wick.save({ device = wick.device("cpu") }, os.tmpname()) end, "cannot save the device cpu")
    -- st-moe's experts = self.experts[slice(0, num_experts)]
    local experts = nn.ModuleList({ nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 2) })
    assert.are.same({ 3, 2, 0, 2 }, { #experts[wick.slice(0, 3)], #experts[wick.slice(1, nil)], #experts[wick.slice(5, 9)],
      #experts[wick.slice(0, nil, 2)] })
    assert.is_true(rawequal(experts[3], experts[wick.slice(-1, nil)][1]))
    -- a field set after wick.slice is checked again (a string start compared with a number inside wick's file)
    local s = wick.slice(0, 3)
    s.start = 1e300
    assert.are.equal(0, #experts[s])
    s.start, s.step = 0, 1e300
    assert.are.equal(1, #experts[s])
    s.start = "a"
    support.assert_error_has(function() return experts[s] end, "expected an integer or nil for a slice's start, got string")
    s.start, s.step = 0, -1 -- (Python's [0:3:-1]: none; [0::-1]: the first entry)
    assert.are.equal(0, #experts[s])
    s.stop = nil
    assert.are.equal(1, #experts[s])
    s.start, s.step = nil, -1e300
    assert.are.equal(1, #experts[s])
    s.step = 0
    support.assert_error_has(function() return experts[s] end, "slice step cannot be zero")
    -- basicsr: a scheduler of one's own keeps its milestones Counter through load_state_dict;
    -- F._Reduction.get_enum; DiffJPEG's torch.tensordot(image, matrix, dims=1)
    local S = wick.optim.lr_scheduler.LRScheduler:extend("MultiStepRestartLR")
    function S:init(opt) self.milestones = { [2] = 1 }; S.super.init(self, opt) end
    function S:get_lr() return { self.base_lrs[1] * 0.5 ^ (self.milestones[self.last_epoch] or 0) } end
    local sched = S(wick.optim.SGD({ wick.zeros(1, { requires_grad = true }) }, { lr = 1 }))
    sched:load_state_dict(sched:state_dict())
    assert.are.same({ 1, nil }, { sched.milestones[2], sched.milestones[1] })
    assert.are.same({ 0, 1, 2 }, { nn.functional._Reduction.get_enum("none"), nn.functional._Reduction.get_enum("mean"),
      nn.functional._Reduction.get_enum("sum") })
    assert.are.same({ 2, 4 }, wick.tensordot(wick.ones(2, 3), wick.ones(3, 4), { dims = 1 }):size():totable())
    -- rtdl's warnings.warn(...)
    local warned = support.warnings_of(function() wick.warn("first_prenormalization is not recommended") end)
    assert.are.equal(1, #warned)
    support.assert_contains(warned[1], "first_prenormalization is not recommended")
  end)

  it("imagen's sim.softmax(-1, torch.float32); masked_fill's and clamp's broadcast errors name them", function()
    local x = wick.randn(2, 3, { dtype = "float64" })
    assert.are.equal("float32", x:softmax(-1, "float32").dtype)
    assert.are.equal("float32", wick.log_softmax(x, -1, wick.float32).dtype)
    local t = wick.randn(2, 3, 4)
    support.assert_error_has(function() return t:masked_fill(wick.ones(3, 3, { dtype = "bool" }), 0) end, "masked_fill: size mismatch")
    support.assert_error_has(function() return t:clamp(-wick.ones(3), wick.ones(3)) end, "clamp: size mismatch")
  end)
end)

describe("the forty-third round's lines (DeepSpeech2, Marian, TFT, MEGABYTE, Mask R-CNN)", function()
  it("deepspeech's SequenceWise.__repr__ calls self.module.__repr__()", function()
    local SequenceWise = nn.Module:extend("SequenceWise")
    function SequenceWise:init(module) self.module = module end
    function SequenceWise:__repr__()
      return self.__class__.__name .. " (\n" .. self.module:__repr__() .. ")"
    end
    local s = SequenceWise(nn.Linear(2, 3))
    assert.are.equal("Linear(in_features=2, out_features=3, bias=True)", nn.Linear(2, 3):__repr__())
    assert.are.equal("SequenceWise (\nLinear(in_features=2, out_features=3, bias=True))", tostring(s))
    assert.are.equal(tostring(nn.Sequential(nn.ReLU())), nn.Sequential(nn.ReLU()):__repr__())
    support.assert_error_has(function() return nn.Module.__repr__(3) end, "expected a module for argument 'self'")
  end)

  it("MEGABYTE's printed ModuleList folds a run of equal blocks, as PyTorch's", function()
    local l = nn.ModuleList({ nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 2), nn.ReLU(),
      nn.Sequential(nn.Tanh()), nn.Sequential(nn.Tanh()), false })
    assert.are.equal(table.concat({ "ModuleList(",
      "  (1-3): 3 x Linear(in_features=2, out_features=2, bias=True)",
      "  (4): ReLU()",
      "  (5-6): 2 x Sequential(",
      "    (1): Tanh()",
      "  )",
      "  (7): None",
      ")" }, "\n"), tostring(l))
    assert.are.equal("ModuleList()", tostring(nn.ModuleList()))
    l = nn.ModuleList({ nn.ReLU(), nn.ReLU() })
    l.extra = nn.Tanh() -- a named member beside the entries: the whole tree, unfolded
    assert.are.equal("ModuleList(\n  (1): ReLU()\n  (2): ReLU()\n  (extra): Tanh()\n)", tostring(l))
  end)

  it("TFT's input_vectors.update(other OrderedDict) and isinstance(embedding_sizes, dict)", function()
    local a = wick.OrderedDict({ { "x", 1 }, { "z", 3 } })
    a:update(wick.OrderedDict({ { "y", 2 }, { "x", 4 } }))
    local keys = {}
    for k, v in a:items() do keys[#keys + 1] = k .. "=" .. v end
    assert.are.same({ "x=4", "z=3", "y=2" }, keys)
    local sd = nn.Linear(2, 2):state_dict()
    sd:update(nn.Linear(2, 3):state_dict())
    assert.are.same({ 3, 2 }, sd.weight:size():totable())
    assert.is_true(wick.isinstance(a, wick.OrderedDict))
    assert.is_true(wick.isinstance(sd, { wick.Tensor, wick.OrderedDict }))
    assert.is_false(wick.isinstance({ x = 1 }, wick.OrderedDict))
    assert.is_false(wick.isinstance(nn.Linear(1, 1), wick.OrderedDict))
  end)

  it("TFT's clip_grad_norm_ over float32 and float64 gradients: each norm in its dtype, the total in the promoted", function()
    local a = nn.Parameter(wick.zeros(3, { dtype = "float32" }))
    a.grad = wick.tensor({ 1e-3, 2, 3 }, { dtype = "float32" })
    local b = nn.Parameter(wick.zeros(2, { dtype = "float64" }))
    b.grad = wick.tensor({ 0.1, 0.2 }, { dtype = "float64" })
    local norm = nn.utils.clip_grad_norm_({ a, b }, 1.0)
    assert.are.equal("float64", norm.dtype)
    -- PyTorch: the float32 norm of a's gradient, then the float64 norm of the two
    local na = math.sqrt(1e-6 + 4 + 9)
    na = wick.tensor(na, { dtype = "float32" }):item()
    local nb = math.sqrt(0.01 + 0.04)
    assert.are.equal(math.sqrt(na * na + nb * nb), norm:item())
    assert.are.equal("float32", a.grad.dtype)
    assert.is_true(math.abs(b.grad[2]:item() - 0.2 / (norm:item() + 1e-6)) < 1e-15)
    local c = nn.Parameter(wick.zeros(2, { dtype = "bfloat16" }))
    c.grad = wick.tensor({ 3, 4 }, { dtype = "bfloat16" })
    assert.are.equal("bfloat16", nn.utils.clip_grad_norm_({ c }, 1.0).dtype)
    assert.are.equal("bfloat16", nn.utils.get_total_norm({ c.grad }).dtype)
  end)

  it("TFT's MultiEmbedding: a ModuleDict's '0' stays a name when a PyTorch state dict is renamed", function()
    local M = nn.Module:extend("M")
    function M:init()
      self.layers = nn.ModuleList({ nn.Linear(2, 2) })
      self.heads = nn.ModuleDict({ { "0", nn.Linear(2, 3) } })
      self.pl = nn.ParameterList({ nn.Parameter(wick.ones(1)) })
    end
    local m = M()
    local sd = wick.OrderedDict({ { "layers.0.weight", wick.full({ 2, 2 }, 5) }, { "layers.0.bias", wick.zeros(2) },
      { "heads.0.weight", wick.full({ 3, 2 }, 7) }, { "heads.0.bias", wick.zeros(3) }, { "pl.0", wick.zeros(1) } })
    m:load_state_dict(sd)
    assert.are.equal(7, m.heads["0"].weight[1][1]:item())
    assert.are.equal(5, m.layers[1].weight[1][1]:item())
    assert.are.equal(0, m.pl[1]:item())
    local names = {}
    for k in nn.utils.to_pytorch_names(m:state_dict(), m):keys() do names[#names + 1] = k end
    assert.are.same({ "layers.0.weight", "layers.0.bias", "heads.0.weight", "heads.0.bias", "pl.0" }, names)
    names = {}
    for k in nn.utils.from_pytorch_names(sd, m):keys() do names[#names + 1] = k end
    assert.are.same({ "layers.1.weight", "layers.1.bias", "heads.0.weight", "heads.0.bias", "pl.1" }, names)
    support.assert_error_has(function() return nn.utils.to_pytorch_names(m:state_dict()) end,
      "a ModuleDict's numeric key: pass the model too")
    support.assert_error_has(function() return nn.utils.from_pytorch_names(sd, 3) end, "expected a module for argument 'model'")
  end)
end)

describe("the forty-third round's lines, part 2 (Mask R-CNN)", function()
  it("a mask head's BatchNorm2d on no positive box: an empty result in the graph, the statistics untouched", function()
    local bn = nn.BatchNorm2d(4)
    local x = wick.randn(0, 4, 14, 14, { requires_grad = true })
    local y = bn(x)
    assert.are.same({ 0, 4, 14, 14 }, y:size():totable())
    assert.are.same({ 0, 0, 0, 0 }, bn.running_mean:totable())
    assert.are.same({ 1, 1, 1, 1 }, bn.running_var:totable())
    assert.are.equal(1, bn.num_batches_tracked:item())
    y:sum():backward()
    assert.are.same({ 0, 0, 0, 0 }, bn.weight.grad:totable())
    assert.are.same({ 0, 0, 0, 0 }, bn.bias.grad:totable())
    assert.are.same({ 0, 3 }, nn.BatchNorm1d(3)(wick.randn(0, 3)):size():totable())
    assert.are.same({ 2, 8, 0 }, nn.BatchNorm1d(8)(wick.randn(2, 8, 0)):size():totable())
    support.assert_error_has(function() return bn(wick.randn(1, 4, 1, 1)) end, "Expected more than 1 value per channel")
    local inorm = nn.InstanceNorm2d(4, { affine = true, track_running_stats = true })
    assert.are.same({ 0, 4, 3, 3 }, inorm(wick.randn(0, 4, 3, 3)):size():totable())
    assert.are.same({ 0, 0, 0, 0 }, inorm.running_mean:totable())
    assert.are.same({ 2, 8, 0 }, nn.InstanceNorm1d(8)(wick.randn(2, 8, 0)):size():totable())
    support.assert_error_has(function() return nn.InstanceNorm1d(8)(wick.randn(2, 8, 1)) end,
      "Expected more than 1 spatial element")
  end)

  it("MultiScaleRoIAlign: a level without boxes gets a zero gradient, not none", function()
    local ops = wick.vision.ops
    local f0 = wick.randn(1, 2, 8, 8, { requires_grad = true })
    local f1 = wick.randn(1, 2, 4, 4, { requires_grad = true })
    local m = ops.MultiScaleRoIAlign({ "0", "1" }, 2, 2)
    local feats = wick.OrderedDict({ { "0", f0 }, { "1", f1 } })
    m(feats, { wick.tensor({ { 1.0, 1.0, 9.0, 9.0 } }) }, { { 32, 32 } }):sum():backward()
    assert.is_true(f0.grad:abs():sum():item() > 0)
    assert.are.equal(0, f1.grad:abs():sum():item())
    f0.grad, f1.grad = nil, nil
    local none = m(feats, { wick.zeros(0, 4) }, { { 32, 32 } })
    assert.are.same({ 0, 2, 2, 2 }, none:size():totable())
    none:sum():backward()
    assert.are.same({ 0, 0 }, { f0.grad:abs():sum():item(), f1.grad:abs():sum():item() })
  end)

  it("roi_align of a reversed aligned box with adaptive sampling is zeros, as torchvision's (no arange error)", function()
    local ops = wick.vision.ops
    local x = wick.randn(1, 2, 6, 6)
    local out = ops.roi_align(x, wick.tensor({ { 1, 4.0, 1.0, 1.0, 4.0 } }), { 2, 2 }, 1.0, -1, true)
    assert.are.same({ 1, 2, 2, 2 }, out:size():totable())
    assert.are.equal(0, out:abs():sum():item())
    support.assert_error_has(function() return ops.roi_align(x, { wick.tensor({ { 1, 1.0, 1.0, 4.0, 4.0 } }) }, { 2, 2 }) end,
      "boxes[1] must be a tensor of shape [L, 4] as (x1, y1, x2, y2), got a tensor of [1, 5]")
  end)

  it("paste_masks_in_image's torch.scalar_tensor(im_h, dtype=torch.int64) and torch.tensor(image.shape[-2:])", function()
    local t = wick.scalar_tensor(18, { dtype = "int64" })
    assert.are.same({ "int64", 0, 18 }, { t.dtype, t:dim(), t:item() })
    assert.are.equal(wick.get_default_dtype(), wick.scalar_tensor(3).dtype)
    assert.are.equal(1, wick.scalar_tensor(true):item())
    support.assert_error_has(function() return wick.scalar_tensor("x") end, "expected a number for argument 's'")
    support.assert_error_has(function() return wick.scalar_tensor(1, { bogus = 1 }) end, "scalar_tensor: unknown option 'bogus'")
    local size = wick.tensor(wick.zeros(3, 50, 60).shape[{ -2, -1 }])
    assert.are.same({ "int64", { 50, 60 } }, { size.dtype, size:totable() })
    assert.are.equal("float64", wick.tensor(wick.zeros(2).shape, { dtype = "float64" }).dtype)
  end)
end)

describe("the forty-third round's lines, part 3 (voxceleb_trainer, Marian)", function()
  it("angleproto's 0-dim nn.Parameter resumes PyTorch's Adam and SGD state: its moments stay tensors", function()
    local w = nn.Parameter(wick.tensor(10.0, { dtype = "float64" }))
    local opt = wick.optim.Adam({ w }, { lr = 0.1 })
    opt:load_state_dict({ state = { [0] = { step = wick.tensor(1.0), exp_avg = wick.tensor(0.2, { dtype = "float64" }),
      exp_avg_sq = wick.tensor(0.004, { dtype = "float64" }) } },
      param_groups = { { params = { 0 }, lr = 0.1, betas = { 0.9, 0.999 }, eps = 1e-8, weight_decay = 0, amsgrad = false,
        maximize = false } } })
    assert.is_true(wick.is_tensor(opt.state[w].exp_avg))
    assert.are.equal("number", type(opt.state[w].step))
    ;(w * 2):backward()
    opt:step()
    -- PyTorch: exp_avg 0.38, exp_avg_sq 0.007996, step 2, bias-corrected
    local m, v = 0.9 * 0.2 + 0.1 * 2, 0.999 * 0.004 + 0.001 * 4
    local expected = 10 - 0.1 * (m / (1 - 0.9 ^ 2)) / (math.sqrt(v / (1 - 0.999 ^ 2)) + 1e-8)
    assert.is_true(math.abs(w:item() - expected) < 1e-12)
    local s = nn.Parameter(wick.tensor(1.0))
    local sgd = wick.optim.SGD({ s }, { lr = 0.1, momentum = 0.9 })
    sgd:load_state_dict({ state = { [0] = { momentum_buffer = wick.tensor(0.5) } },
      param_groups = { { params = { 0 }, lr = 0.1, momentum = 0.9, dampening = 0, weight_decay = 0, nesterov = false } } })
    ;(s * 1):backward()
    sgd:step()
    assert.is_true(math.abs(s:item() - (1 - 0.1 * (0.9 * 0.5 + 1))) < 1e-6)
  end)

  it("ResNetSE(block, layers, filters, nOut, **kwargs) given the whole config: PyTorch's multiple-values TypeError", function()
    local R = nn.Module:extend("R")
    function R:init(block, nOut, encoder_type, n_mels, ...)
      self.encoder_type, self.n_mels = encoder_type, n_mels
    end
    local r = R("blk", 8, { encoder_type = "ASP", n_mels = 16, lr = 0.1 })
    assert.are.same({ "ASP", 16 }, { r.encoder_type, r.n_mels })
    support.assert_error_has(function() return R("blk", 8, { encoder_type = "ASP", n_mels = 16, nOut = 8 }) end,
      "R.init: got multiple values for argument 'nOut'")
    -- a table naming only earlier parameters is a value (a config object whose keys happen to be names)
    assert.are.equal(8, R("blk", 8, { nOut = 8 }).encoder_type.nOut)
  end)

  it("HF's BeamHypotheses and a LogitsProcessor as wick.Object classes", function()
    local BeamHypotheses = wick.Object:extend("BeamHypotheses")
    function BeamHypotheses:init(num_beams, length_penalty, early_stopping, max_length)
      self.num_beams, self.length_penalty, self.early_stopping = num_beams, length_penalty, early_stopping
      self.max_length, self.beams, self.worst_score = max_length, {}, 1e9
    end
    function BeamHypotheses:add(hyp, sum_logprobs, beam_indices)
      local score = sum_logprobs / ((#hyp) ^ self.length_penalty)
      self.beams[#self.beams + 1] = { score, hyp, beam_indices }
      self.worst_score = math.min(score, self.worst_score)
    end
    local h = BeamHypotheses({ num_beams = 2, length_penalty = 1.0, early_stopping = false })
    assert.are.same({ 2, 1.0, false }, { h.num_beams, h.length_penalty, h.early_stopping })
    h:add({ 1, 2 }, { sum_logprobs = -1, beam_indices = 3 })
    assert.are.same({ -0.5, 3 }, { h.worst_score, h.beams[1][3] })
    assert.is_true(wick.isinstance(h, BeamHypotheses) and wick.isinstance(h, wick.Object))
    assert.are.equal("<BeamHypotheses object>", tostring(h))
    support.assert_error_has(function() return BeamHypotheses({ num_beam = 2 }) end,
      "got an unexpected keyword argument 'num_beam' (did you mean 'num_beams'?)")
    support.assert_error_has(function() return h(1) end, "'BeamHypotheses' object is not callable")
    local LogitsProcessor = wick.Object:extend("LogitsProcessor")
    local Min = LogitsProcessor:extend("MinLengthLogitsProcessor")
    function Min:init(min_length, eos_token_id) self.min_length, self.eos_token_id = min_length, eos_token_id end
    function Min:__call__(input_ids, scores)
      if input_ids:size(-1) < self.min_length then scores[{ {}, self.eos_token_id }] = -math.huge end
      return scores
    end
    function Min:__repr__() return ("MinLengthLogitsProcessor(%d)"):format(self.min_length) end
    local p = Min({ min_length = 3, eos_token_id = 2 })
    local scores = p(wick.ones(1, 1), wick.zeros(1, 3))
    assert.are.same({ { 0, -math.huge, 0 } }, scores:totable())
    assert.are.equal("MinLengthLogitsProcessor(3)", tostring(p))
    assert.are.equal(LogitsProcessor, Min.super)
    assert.are.equal("<class 'MinLengthLogitsProcessor'>", tostring(Min))
    support.assert_error_has(function() return wick.Object.extend(3, "x") end, "expected wick.Object or a class made from it")
  end)
end)

describe("the forty-third round's lines, part 4 (SAC, alpha-zero-general)", function()
  it("SAC's self.noise.normal_(0., std=0.1): positional arguments, then keywords", function()
    local t = wick.zeros(4000)
    wick.manual_seed(1)
    t:normal_(0., { std = 0.1 })
    assert.is_true(math.abs(t:std():item() - 0.1) < 0.01 and math.abs(t:mean():item()) < 0.01)
    t:uniform_(-1, { to = -0.5 })
    assert.is_true(t:min():item() >= -1 and t:max():item() <= -0.5)
    local i = wick.zeros(200, { dtype = "int64" }):random_(2, { to = 5 })
    assert.are.same({ 2, 4 }, { i:min():item(), i:max():item() })
    t:normal_({ mean = 3, std = 0 })
    assert.are.equal(3, t[1]:item())
    support.assert_error_has(function() return t:normal_(0., { mean = 1 }) end, "normal_: argument 'mean' given both by position and as an option")
    support.assert_error_has(function() return t:normal_(0., { sd = 1 }) end, "unknown option 'sd'")
    assert.are.same({ -1, 0, 1 }, wick.clamp(wick.tensor({ -3, 0, 3 }), -1, { max = 1 }):totable())
    assert.are.same({ -1, 2 }, wick.tensor({ -3, 3 }):clamp(-1, { max = wick.tensor(2.) }):totable())
    support.assert_error_has(function() return wick.clamp(t, -1, { min = 1 }) end, "clamp: argument 'min' given both by position and as an option")
  end)
end)

describe("the forty-third round's lines, part 5 (DeBERTa-v2)", function()
  it("XSoftmax.backward's _softmax_backward_data(grad_output, output, dim, dtype)", function()
    local x = wick.randn(2, 3, { dtype = "float64", requires_grad = true })
    local g = wick.randn(2, 3, { dtype = "float64" })
    local y = x:softmax(-1)
    y:backward(g)
    local mine = wick._softmax_backward_data(g, y:detach(), -1, "float64")
    assert.is_true((mine - x.grad):abs():max():item() < 1e-15)
    x.grad = nil
    local ly = x:log_softmax(2)
    ly:backward(g)
    assert.is_true((wick._log_softmax_backward_data(g, ly:detach(), 2, "float64") - x.grad):abs():max():item() < 1e-15)
    assert.are.equal("float32", wick._softmax_backward_data(g, y:detach(), -1, "float32").dtype)
    support.assert_error_has(function() return wick._softmax_backward_data(g, y, 0) end, "expected a dimension")
  end)
end)

describe("the forty-third round's lines, part 6 (FastSpeech2, Longformer)", function()
  it("FastSpeech2's test harness replaces F.dropout, and nn.Dropout calls the replacement, as PyTorch's", function()
    local saved = F.dropout
    F.dropout = function(x) return x * 0 end
    local ok, out = pcall(function() return nn.Dropout(0.5)(wick.ones(4)) end)
    F.dropout = saved
    assert.is_true(ok)
    assert.are.same({ 0, 0, 0, 0 }, out:totable())
    assert.are.equal(0, nn.Dropout(0.5):eval()(wick.ones(4)):sum():item() - 4)
  end)

  it("TFT's (lengths < lengths.max()).any().item() and FastSpeech2's mask.all().item()", function()
    local lengths = wick.tensor({ 4, 2, 3 })
    assert.is_true(lengths:lt(lengths:max()):any():item())
    assert.is_false(lengths:gt(10):all():item())
    assert.are.equal(true, (true):tolist())
    support.assert_error_has(function() return lengths:any():float() end,
      "attempt to index a boolean value (field 'float'): t:any(), t:all() and t:equal(u) give Lua booleans")
  end)

  it("narrow's start and a Size's entries take a 0-dim integer tensor (max_num_global_attn_indices)", function()
    local n = wick.tensor({ 1, 2 }, { dtype = "int64" }):max()
    local p = wick.arange(14):view(2, 7)
    assert.are.same({ { 2, 3, 4, 5, 6 }, { 9, 10, 11, 12, 13 } }, p:narrow(-1, n + 1, 7 - n):totable())
    assert.are.same({ 1, 8 }, p:select(2, n):totable())
    assert.is_true(wick.Size({ 2, n, 16 }) == wick.zeros(2, 2, 16).shape)
    support.assert_error_has(function() return p:narrow(2, wick.tensor(1.5), 1) end, "narrow: expected a number for an index")
    support.assert_error_has(function() return p:narrow(2, 1.5, 1) end, "expected an integer for an index, got 1.5")
    support.assert_error_has(function() return p:narrow(2, 9, 1) end, "index 9 is out of bounds for dimension 2 with size 7")
  end)
end)

describe("the forty-third round's lines, part 7 (DLRM)", function()
  it("BCELoss of a saturated sigmoid: log1p(-p) and PyTorch's float32 epsilon in the backward", function()
    local F64 = { dtype = "float64" }
    assert.is_true(math.abs(nn.BCELoss()(wick.tensor({ 1e-8 }, F64), wick.tensor({ 0.0 }, F64)):item() - 1.0000000050000001e-08) < 1e-24)
    assert.is_true(nn.BCELoss()(wick.tensor({ 1e-8 }), wick.tensor({ 0.0 })):item() > 9e-9) -- (float32: was 0)
    local p = wick.tensor({ 1.0 }, { dtype = "float64", requires_grad = true })
    nn.BCELoss()(p, wick.tensor({ 0.3 }, F64)):backward()
    assert.are.equal(700000002797.06189, p.grad:item()) -- 0.7 / float32(1e-12), as PyTorch's kernel
    local q = wick.tensor({ 0.2, 0.7 }, { dtype = "float64", requires_grad = true })
    local t = wick.tensor({ 0.3, 0.9 }, { dtype = "float64", requires_grad = true })
    nn.BCELoss()(q, t):backward()
    -- the target's gradient: -logit(q) / n
    assert.is_true(math.abs(t.grad[1]:item() - (math.log(0.8) - math.log(0.2)) / 2) < 1e-15)
  end)

  it("RWSAdagrad's grad.new(indices, values, size) on a dense tensor: PyTorch's TypeError, not the first argument", function()
    support.assert_error_has(function() return wick.zeros(4, 2):new(wick.tensor({ { 1, 3 } }), wick.ones(2, 2), { 4, 2 }) end,
      "new: received an invalid combination of arguments: data (a tensor) takes no further arguments, got 2 more")
    support.assert_error_has(function() return wick.FloatTensor({ 1, 3 }, wick.ones(2)) end, "takes no further arguments")
    assert.are.same({ 3, 4 }, wick.zeros(2):new({ 3, 4 }):totable())
    assert.are.same({ 2, 3 }, wick.FloatTensor(2, 3):size():totable())
  end)
end)

describe("the forty-third round's lines, part 8 (PatchTST)", function()
  it("PatchTST_backbone(c_in=c_in, ..., **kwargs) with kwargs nil: a trailing nil leaves the keywords bound", function()
    local A = nn.Module:extend("A")
    function A:init(c_in, d_model, ...) self.c_in, self.d_model = c_in, d_model end
    function A:forward(x, mask, prev) return { x, mask, prev } end
    local kwargs = nil
    local a = A({ c_in = 3, d_model = 8 }, kwargs)
    assert.are.same({ 3, 8 }, { a.c_in, a.d_model })
    local r = a(1, { prev = 5 }, nil)
    assert.are.same({ 1, nil, 5 }, { r[1], r[2], r[3] })
  end)
end)

describe("the forty-third round's lines, part 9 (VITS)", function()
  it("a parametrized module's __class__.__name__ (init_weights' classname) and ConvTranspose1d's channel error in 1-D", function()
    local c = nn.Linear(2, 2)
    nn.utils.parametrize.register_parametrization(c, "weight", nn.Identity())
    assert.are.equal("ParametrizedLinear", c.__class__.__name__)
    assert.are.equal("ParametrizedConv1d", nn.utils.parametrizations.weight_norm(nn.Conv1d(4, 2, 3)).__class__.__name__)
    local ct = nn.ConvTranspose1d(16, 8, 8, 4, { padding = 2 })
    support.assert_error_has(function() return ct(wick.randn(2, 4, 5)) end,
      "conv_transpose1d: Given transposed=1, weight of size [16, 8, 8], expected input[2, 4, 5] to have 16 channels, but got 4")
  end)
end)

describe("the forty-third round's lines, part 10 (Graph WaveNet)", function()
  it("masked_mape's abs(preds - labels) / labels: an infinite gradient through abs stays infinite; sign as PyTorch's", function()
    local p = wick.tensor({ 0 / 0, 3.0, -2.0, 0.0 }, { requires_grad = true })
    wick.abs(p):backward(wick.tensor({ 1.0, 1 / 0, 1 / 0, 1 / 0 }))
    local g = p.grad:totable()
    assert.are.same({ 0, math.huge, -math.huge }, { g[1], g[2], g[3] })
    assert.is_true(g[4] ~= g[4]) -- inf * sign(0) = NaN, as PyTorch's
    -- sign: 0 of NaN and of -0 (+0), as PyTorch's
    local s = wick.tensor({ -0.0, 0 / 0, 2, -3 }):sign()
    assert.are.same({ 0, 0, 1, -1 }, s:totable())
    assert.are.equal(math.huge, 1 / s[1]:item())
  end)
end)

describe("the forty-third round's lines, part 11 (DARTS, flamingo, torchvision video)", function()
  it("DARTS' self._alphas = [(n, p) for n, p in self.named_parameters()]: a plain list does not rename them", function()
    local M = nn.Module:extend("M")
    function M:init()
      self.alpha = nn.ParameterList({ nn.Parameter(wick.zeros(2)) })
      self.lin = nn.Linear(2, 2)
      self.own = nn.Parameter(wick.ones(1))
      self._alphas = {}
      for n, p in self:named_parameters() do table.insert(self._alphas, { n, p }) end
      self.extra = { nn.Parameter(wick.ones(3)) } -- held only here: registered, as before
    end
    local m = M()
    local names = {}
    for n in m:named_parameters() do names[#names + 1] = n end
    assert.are.same({ "own", "extra.1", "alpha.1", "lin.weight", "lin.bias" }, names)
    local keys = {}
    for k in m:state_dict():keys() do keys[#keys + 1] = k end
    assert.are.same(names, keys)
    m:load_state_dict({ ["alpha.0"] = wick.ones(2), ["lin.weight"] = wick.ones(2, 2), ["lin.bias"] = wick.ones(2),
      own = wick.ones(1), ["extra.0"] = wick.ones(3) }) -- (PyTorch's 0-based names, renamed)
    assert.are.equal(2, m.alpha[1]:sum():item())
  end)

  it("Architect's v_net = copy.deepcopy(net) copies a wick.Object too; w_optim.state[w].get('momentum_buffer', 0.)", function()
    local O = wick.Object:extend("Holder")
    local M = nn.Module:extend("M")
    function M:init()
      self.lin = nn.Linear(2, 2)
      self.helper = O()
      self.helper.w = self.lin.weight
      self.kind = O -- a class stays itself
    end
    local m = M()
    local c = wick.deepcopy(m)
    assert.is_false(rawequal(c.helper, m.helper))
    assert.is_true(rawequal(c.helper.w, c.lin.weight))
    assert.are.equal(O, c.kind)
    assert.are.equal(O, getmetatable(c.helper))
    local w = nn.Parameter(wick.ones(2))
    local opt = wick.optim.SGD({ w }, 0.1, { momentum = 0.9 })
    assert.are.equal(0, opt.state[w]:get("momentum_buffer", 0.))
    w.grad = wick.ones(2)
    opt:step()
    assert.are.same({ 1, 1 }, opt.state[w]:get("momentum_buffer", 0.):totable())
    local again = wick.optim.SGD({ w }, 0.1, { momentum = 0.9 })
    again:load_state_dict(opt:state_dict())
    assert.are.same({ 1, 1 }, again.state[w]:get("momentum_buffer"):totable())
  end)

  it("flamingo's masked_fill(~mask, ...): Lua 5.4's bitwise operators on tensors (LuaJIT has none)", function()
    if _VERSION ~= "Lua 5.4" then return end
    local chunk = assert(load([[
      local wick = ...
      local m = wick.tensor({ true, false })
      local i = wick.tensor({ 5, 6 }, { dtype = "int64" })
      return (~m):totable(), (m & m):totable(), (true & m):totable(), (m | ~m):totable(), (i & 3):totable(),
        (i >> 1):totable(), (wick.tensor({ 7.5, -7.5 }) // 2):totable()
    ]]))
    local nm, both, first, any, masked, shifted, floored = chunk(wick)
    assert.are.same({ false, true }, nm)
    assert.are.same({ true, false }, both)
    assert.are.same({ true, false }, first)
    assert.are.same({ true, true }, any)
    assert.are.same({ 1, 2 }, masked)
    assert.are.same({ 2, 3 }, shifted)
    assert.are.same({ 3, -4 }, floored)
  end)

  it("S3D's pools on a small clip: the error in the input's own 3-D sizes", function()
    support.assert_error_has(function() return F.max_pool3d(wick.randn(1, 2, 1, 4, 4), { 2, 2, 2 }, { 2, 2, 2 }) end,
      "max_pool3d: Given input size: (2x1x4x4). Calculated output size: (2x0x2x2). Output size is too small")
    support.assert_error_has(function() return F.avg_pool3d(wick.randn(1, 8, 1, 1, 1), { 2, 7, 7 }, 1) end,
      "avg_pool3d: Given input size: (8x1x1x1). Calculated output size: (8x0x-5x-5)")
    assert.are.same({ 1, 2, 2, 3, 3 }, F.max_pool3d(wick.randn(1, 2, 3, 5, 5), 2, { ceil_mode = true }):size():totable())
  end)
end)

describe("the forty-third round's lines, part 12 (score_sde)", function()
  it("class RSDE(self.__class__) and sde.__class__.__name__ of a wick.Object; a keywords table in stride's place", function()
    local SDE = wick.Object:extend("SDE")
    local VPSDE = SDE:extend("VPSDE")
    local sde = VPSDE()
    assert.are.equal(VPSDE, sde.__class__)
    assert.are.equal("VPSDE", sde.__class__.__name__)
    local RSDE = sde.__class__:extend("RSDE")
    assert.is_true(wick.isinstance(RSDE(), VPSDE) and wick.isinstance(RSDE(), SDE))
    support.assert_error_has(function() return nn.Conv2d(3, 3, 3, { init_scale = 0 }) end, "unknown")
    support.assert_error_has(function() return nn.Conv2d(3, 3, 3, { stride = { init_scale = 0 } }) end,
      "stride must be an integer or a {h, w} table, got a table with the keys {init_scale}")
  end)
end)

describe("the forty-third round's lines, part 13 (RetNet)", function()
  it("kv.max(dim=-1, keepdim=True).values and torch.topk(x, k).indices: PyTorch's named tuples", function()
    local t = wick.tensor({ { 1, 5, 3 }, { 4, 2, 6 } })
    assert.are.same({ 5, 6 }, t:max(2).values:totable())
    assert.are.same({ 2, 3 }, t:max(2).indices:totable())
    assert.are.same({ { 9 } }, t:abs():sum(-2, true):max(-1, true).values:clamp({ min = 1 }):totable())
    assert.are.same({ { 2, 3 }, { 3, 1 } }, wick.topk(t, 2).indices:totable())
    assert.are.same({ { 5, 3, 1 }, { 6, 4, 2 } }, t:sort(2, true).values:totable())
    assert.are.same({ 2, 1, 2 }, wick.max(t, 1).indices:totable())
    assert.are.same({ { 1, 2, 2 }, { 1, 1, 3 } }, t:cummax(2).indices:totable())
    local v = t:min(2) -- (Lua keeps the first result: it answers .indices still)
    assert.are.same({ 1, 2 }, v.indices:totable())
    -- one result stays one (wick.max(t) and the elementwise wick.max(a, b))
    assert.are.equal(1, select("#", wick.max(t)))
    assert.are.equal(1, select("#", wick.max(t, t)))
    -- another tensor's .values is the sparse reader's method, an error when used as a tensor
    assert.are.same({ 1, 5, 3, 4, 2, 6 }, t:values():totable())
    support.assert_error_has(function() return t.values:clamp(1) end, "the first tensor of t:max(dim)")
  end)
end)

describe("the forty-third round's lines, part 14 (fairseq, pykan)", function()
  it("fairseq's m(x, incremental_state=incremental_state) with the state {} on the first step: kept", function()
    local A = nn.Module:extend("A")
    function A:forward(x, incremental_state, flag) return incremental_state end
    local state = {}
    assert.are.equal(state, A()(1, { incremental_state = state }))
    assert.are.equal(state, A():forward(1, { incremental_state = state }))
    assert.are.equal(state, A()(1, { incremental_state = state, flag = true }))
  end)

  it("L-BFGS' p.add_(d, alpha=step_size) with a 0-dim tensor; lstsq's gels on a rank-deficient matrix", function()
    local q = wick.ones(3)
    assert.are.same({ 3, 3, 3 }, q:add_(wick.ones(3), { alpha = wick.tensor(2.0) }):totable())
    assert.are.same({ 1, 1, 1 }, q:sub(wick.ones(3), { alpha = wick.tensor(2.0) }):totable())
    assert.are.same({ 5, 5, 5 }, q:clone():addcmul_(wick.ones(3), wick.ones(3), { value = wick.tensor(2.0) }):totable())
    support.assert_error_has(function() return q:add(q, { alpha = wick.ones(2) }) end, "expected a number for option 'alpha'")
    support.assert_error_has(function() return wick.zeros(2, 3):expand(2, wick.tensor(3.)) end, "got a float32 tensor of 0 dims")
    local A = wick.tensor({ { 1., 0. }, { 2., 0. }, { 3., 0. } }, { dtype = "float64" })
    local b = wick.ones(3, 1, { dtype = "float64" })
    support.assert_error_has(function() return wick.linalg.lstsq(A, b, { driver = "gels" }) end,
      "does not have full rank (error code: 2)")
    assert.is_true(math.abs(wick.linalg.lstsq(A, b).solution[1][1]:item() - 6 / 14) < 1e-12) -- gelsy: minimum norm
  end)
end)

describe("the forty-third round's lines, part 15 (fairseq, MobileViT)", function()
  it("fairseq's weight_expanded.as_strided((B, T, K), (T*(T+K-1), T+K, 1)).copy_(weight): the gradient reaches weight", function()
    local B, T, K = 2, 3, 3
    local w = wick.randn(B, T, K, { dtype = "float64", requires_grad = true })
    local we = w:new_zeros(B, T, T + K - 1)
    we:as_strided({ B, T, K }, { T * (T + K - 1), T + K, 1 }):copy_(w)
    local x = wick.randn(B, T, 4, { dtype = "float64" })
    wick.bmm(we:narrow(3, 2, T), x):sum():backward()
    -- the same band built row by row
    local w2 = w:detach():clone():requires_grad_()
    local rows = {}
    for b = 1, B do
      local m = wick.zeros(T, T + K - 1, { dtype = "float64" })
      for t = 1, T do m[{ t, { t, t + K - 1 } }] = w2[{ b, t }] end
      rows[b] = m
    end
    wick.bmm(wick.stack(rows):narrow(3, 2, T), x):sum():backward()
    assert.is_true((w.grad - w2.grad):abs():max():item() < 1e-15)
    -- a view whose elements overlap takes no tracked write
    local base = wick.zeros(6)
    support.assert_error_has(function()
      base:as_strided({ 2, 3 }, { 1, 1 }):copy_(wick.ones(2, 3, { requires_grad = true }))
    end, "in-place operation on a tensor that autograd tracks")
  end)

  it("MobileViT's class AdamWOptimizer(BaseOptim, AdamW) calling AdamW.__init__(self, params=..., lr=...)", function()
    local AdamWOptimizer = wick.optim.AdamW:extend("AdamWOptimizer")
    function AdamWOptimizer:init(params, opts)
      self.marker = true
      wick.optim.AdamW.init(self, { params = params, lr = opts.lr, betas = { 0.9, 0.99 }, weight_decay = opts.wd })
    end
    local w = nn.Parameter(wick.ones(3))
    local o = AdamWOptimizer({ w }, { lr = 0.1, wd = 0.01 })
    local w2 = nn.Parameter(wick.ones(3))
    local o2 = wick.optim.AdamW({ w2 }, { lr = 0.1, betas = { 0.9, 0.99 }, weight_decay = 0.01 })
    w.grad, w2.grad = wick.ones(3), wick.ones(3)
    o:step()
    o2:step()
    assert.are.same(w2:totable(), w:totable())
    assert.is_true(o.marker and wick.isinstance(o, wick.optim.AdamW))
    local S = wick.optim.SGD:extend("MySGD")
    assert.are.equal(0.9, S({ w }, 0.1, { momentum = 0.9 }).param_groups[1].momentum)
    support.assert_error_has(function() return wick.optim.LBFGS:extend("X") end, "LBFGS cannot be extended here")
  end)
end)

describe("the forty-third round's lines, part 16 (WaveGlow)", function()
  it("z.type() == 'torch.cuda.HalfTensor' and torch.slogdet(W)[1]", function()
    assert.are.equal("torch.HalfTensor", wick.zeros(2, { dtype = "float16" }):type())
    assert.are.equal("torch.DoubleTensor", wick.zeros(2, { dtype = "float64" }):type())
    assert.are.equal("torch.BoolTensor", wick.zeros(2):gt(0):type())
    assert.are.equal("float64", wick.zeros(2):type("torch.DoubleTensor").dtype)
    support.assert_error_has(function() return wick.slogdet(wick.eye(3))[2] end,
      "a function that returns several tensors gives them as several values: local sign, logabsdet = wick.slogdet(W)")
    local _, logabsdet = wick.slogdet(wick.eye(3) * 2)
    assert.is_true(math.abs(logabsdet:item() - 3 * math.log(2)) < 1e-6)
  end)
end)

describe("the forty-third round's lines, part 17 (loralib, invariant point attention)", function()
  it("loralib's F.conv1d(lora_A, lora_B, groups=g): an options table where the bias goes, for conv1d and conv3d", function()
    assert.are.same({ 1, 6, 5 }, F.conv1d(wick.randn(1, 4, 5), wick.randn(6, 2, 1), { groups = 2 }):size():totable())
    local x, k = wick.randn(1, 2, 7), wick.randn(3, 2, 3)
    assert.are.same({ 1, 3, 7 }, F.conv1d(x, k, { padding = 1 }):size():totable())
    local b = F.conv1d(x, k, { padding = 1, bias = wick.ones(3) }) - F.conv1d(x, k, { padding = 1 })
    assert.is_true((b - 1):abs():max():item() < 1e-6)
    local x3 = wick.randn(1, 4, 5, 5, 5)
    assert.are.same({ 1, 6, 5, 5, 5 }, F.conv3d(x3, wick.randn(6, 4, 3, 3, 3), { padding = 1 }):size():totable())
    assert.are.same({ 1, 6, 2, 2, 2 }, F.conv3d(x3, wick.randn(6, 4, 3, 3, 3), { stride = 2 }):size():totable())
    assert.are.same({ 1, 6, 3, 3, 3 }, F.conv3d(x3, wick.randn(6, 2, 3, 3, 3), { groups = 2 }):size():totable())
  end)

  it("IPABlock(dim = dim, **kwargs): a table naming none of the declared names goes to the options parameter", function()
    local Block = nn.Module:extend("Block", { "dim", "ff_mult?" })
    function Block:init(dim, ff_mult, kwargs) self.got = { dim, ff_mult, kwargs and kwargs.heads } end
    assert.are.same({ 16, 2, 4 }, Block(16, { heads = 4, ff_mult = 2 }).got)
    assert.are.same({ 16, nil, 4 }, Block(16, { heads = 4 }).got)
    assert.are.same({ 16, 3, 4 }, Block(16, 3, { heads = 4 }).got)
  end)
end)

describe("the forty-third round's lines, part 18 (ConvNeXt-V2)", function()
  it("BEiT/ConvNeXt's utils.load_state_dict calls module._load_from_state_dict on each module", function()
    local net = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    local sd = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)):state_dict()
    sd["3.bias"] = nil
    sd["head.weight"] = wick.ones(1)
    local missing, unexpected, errors = {}, {}, {}
    local function load(module, prefix)
      module:_load_from_state_dict(sd, prefix, {}, true, missing, unexpected, errors)
      for name, child in module:named_children() do load(child, prefix .. name .. ".") end
    end
    load(net, "")
    assert.are.equal(0, (net[1].weight - sd["1.weight"]):abs():max():item())
    assert.are.same({ "3.bias" }, missing)
    assert.are.same({ "head.weight" }, unexpected)
    sd["1.bias"] = wick.ones(5)
    missing, unexpected, errors = {}, {}, {}
    net[1]:_load_from_state_dict(sd, "1.", {}, true, missing, unexpected, errors)
    assert.are.equal(1, #errors)
    -- an override's super call inside load_state_dict still leaves the copy to load_state_dict
    local Fixed = nn.Module:extend("Fixed")
    function Fixed:init() self.lin = nn.Linear(2, 2) end
    function Fixed:_load_from_state_dict(state_dict, prefix, ...)
      state_dict[prefix .. "lin.bias"] = state_dict[prefix .. "lin.bias"] or wick.zeros(2)
      return nn.Module._load_from_state_dict(self, state_dict, prefix, ...)
    end
    local f = Fixed()
    f:load_state_dict({ ["lin.weight"] = wick.ones(2, 2) })
    assert.are.same({ 0, 0 }, f.lin.bias:totable())
  end)

  it("upsample_mask's repeat_interleave(scale, axis=1); list(checkpoint_model.keys())", function()
    local m = wick.ones(2, 4):reshape(-1, 2, 2):repeat_interleave(2, { axis = 2 }):repeat_interleave(2, { axis = 3 })
    assert.are.same({ 2, 4, 4 }, m:size():totable())
    support.assert_error_has(function() return wick.ones(2):repeat_interleave(2, { axis = 1, dim = 1 }) end, "got both dim and axis")
    local sd = nn.Linear(2, 2):state_dict()
    assert.are.same({ "weight", "bias" }, wick.list(sd:keys()))
    assert.are.same({ "weight", "bias" }, wick.list(sd))
    assert.are.equal(3, #wick.list(wick.zeros(3, 2)))
  end)
end)

describe("the forty-third round's lines, part 19 (RAFT)", function()
  it("copy.deepcopy(model) after a forward that cached activations in a plain list: no new parameters", function()
    local Net = nn.Module:extend("Net")
    function Net:init() self.fc = nn.Linear(2, 2); self.cache = { wick.tensor(0) } end
    function Net:forward(x)
      local y = self.fc(x)
      self.cache = { y }
      return y
    end
    local m = Net()
    m(wick.randn(3, 2))
    local c = wick.deepcopy(m)
    assert.are.equal(#m:parameters(), #c:parameters())
    assert.are.same({ "fc.weight", "fc.bias" }, wick.list(c:state_dict():keys()))
    assert.is_true(c.fc.weight.requires_grad)
    assert.is_false(c.cache[1].requires_grad)
    assert.are.same(m.cache[1]:detach():totable(), c.cache[1]:totable())
  end)
end)

describe("the forty-third round's lines, part 20 (tab-transformer's hyper-connections)", function()
  it("Reduce(pattern = 'b ... -> (b s) ...', reduction = 'repeat', s = n) and its all-keyword form", function()
    local einops = wick.einops
    local x = wick.arange(6):view(2, 3)
    assert.are.same({ { 0, 1, 2 }, { 0, 1, 2 }, { 3, 4, 5 }, { 3, 4, 5 } },
      einops.reduce(x, "b ... -> (b s) ...", "repeat", { s = 2 }):totable())
    local expand = einops.layers.torch.Reduce({ pattern = "b ... -> (b s) ...", reduction = "repeat", s = 2 })
    local reduce = einops.layers.torch.Reduce({ pattern = "(b s) ... -> b ...", reduction = "sum", s = 2 })
    assert.are.same((x * 2):totable(), reduce(expand(x)):totable())
    assert.are.equal("Reduce('(b s) ... -> b ...', 'sum', s=2)", tostring(reduce))
    assert.are.same({ 2, 1, 3 }, einops.layers.torch.Rearrange({ pattern = "b ... (f d) -> b ... f d", f = 1 })(x):size():totable())
    assert.are.same({ 2, 3 }, einops.reduce(x, "b d -> b d", "rearrange"):size():totable())
    support.assert_error_has(function() return einops.reduce(x, "b d -> b", "median") end, "unknown reduction 'median'")
  end)
end)

describe("the forty-third round's lines, part 21 (SSD)", function()
  it("compute_loss's for targets, bbox_regression, ... in zip(...)", function()
    local seen = {}
    for t, row, n in wick.zip({ "a", "b", "c" }, wick.tensor({ { 1, 2 }, { 3, 4 } }), { 10, 20, 30 }) do
      seen[#seen + 1] = { t, row:sum():item(), n }
    end
    assert.are.same({ { "a", 3, 10 }, { "b", 7, 20 } }, seen)
    local none = 0
    for _ in wick.zip() do none = none + 1 end
    assert.are.equal(0, none)
    support.assert_error_has(function() for _ in wick.zip({ 1 }, 3) do end end, "zip: expected a loader")
    support.assert_error_has(function() return wick.list(3) end, "list: expected a loader")
  end)
end)

describe("the forty-third round's lines, part 22 (Switch Transformers)", function()
  it("a Function with several outputs runs its backward once, with every output's gradient", function()
    local calls = 0
    local Two = wick.autograd.Function:extend("Two")
    function Two.forward(_, x) return x * 2, (x * 3):double() end
    function Two.backward(_, g1, g2)
      calls = calls + 1
      return g1 * 2 + g2:float() * 3
    end
    local x = wick.tensor({ 1.0, 2.0 }, { requires_grad = true })
    local a, b = Two.apply(x)
    assert.are.same({ "TwoBackward", "TwoBackward", "float64" }, { a.grad_fn, b.grad_fn, b.dtype })
    ;(a:sum() + b:sum() * 10):backward()
    assert.are.equal(1, calls)
    assert.are.same({ 32, 32 }, x.grad:totable())
    -- set_materialize_grads(false): an output without a gradient is nil
    local N = wick.autograd.Function:extend("N")
    local seen
    function N.forward(ctx, x)
      ctx:set_materialize_grads(false)
      return x * 2, x * 3
    end
    function N.backward(_, g1, g2)
      seen = { g1 ~= nil, g2 ~= nil }
      return g1 * 2
    end
    local y = wick.tensor({ 1.0 }, { requires_grad = true })
    local p = N.apply(y)
    p:sum():backward()
    assert.are.same({ true, false }, seen)
    -- a checkpointed block's BatchNorm counts one recomputation
    local bn = nn.BatchNorm1d(2)
    local out = wick.utils.checkpoint.checkpoint(function(v)
      local h = bn(v)
      return { h * 2, h:sin() }
    end, wick.tensor({ { 1, 2 }, { 3, 5 }, { -1, .5 } }, { requires_grad = true }), { use_reentrant = false })
    ;(out[1]:sum() + out[2]:sum()):backward()
    assert.are.equal(2, bn.num_batches_tracked:item())
  end)

  it("checkpoint(use_reentrant=False) of a block returning (hidden, (router_logits, ...)); super().__call__", function()
    local w = wick.tensor({ 2.0 }, { requires_grad = true })
    local x = wick.tensor({ 3.0 }, { requires_grad = true })
    local o = wick.utils.checkpoint.checkpoint(function(v) return { v * w, { v * w * 10 } } end, x, { use_reentrant = false })
    ;(o[1]:sum() + o[2][1]:sum()):backward()
    assert.are.same({ 22, 33 }, { x.grad:item(), w.grad:item() })
    local L = nn.Module:extend("L")
    function L:__call__(...) return L.super.__call__(self, ...) end
    function L:forward(v) return v * 2 end
    assert.are.same({ 2 }, L()(wick.ones(1)):totable())
    support.assert_error_has(function() return nn.Module.__call__(3) end, "expected a module for argument 'self'")
  end)
end)

describe("the forty-fourth round's lines, part 1 (FEDformer's complex tanh)", function()
  local function close(a, b, tol)
    local d = (wick.view_as_real(a) - wick.view_as_real(b)):abs():max():item()
    assert.is_true(d < (tol or 1e-12), "differs by " .. d)
  end
  it("xqk_ft.tanh() and its kin on complex tensors agree with their exp forms, gradients too", function()
    wick.set_default_dtype("float64")
    local ok, err = pcall(function()
      local re, im = wick.tensor({ 0.5, -1.0, 3.0, -2.5 }), wick.tensor({ 0.25, 2.0, -1.2, 0.7 })
      local i = wick.complex(wick.zeros(4), wick.ones(4))
      local function fresh() return wick.complex(re, im):requires_grad_() end
      local forms = {
        tanh = function(z) local e = (z * 2):exp(); return (e - 1) / (e + 1) end,
        sigmoid = function(z) return ((-z):exp() + 1):reciprocal() end,
        sinh = function(z) return (z:exp() - (-z):exp()) / 2 end,
        cosh = function(z) return (z:exp() + (-z):exp()) / 2 end,
        sin = function(z) return ((i * z):exp() - (-(i * z)):exp()) / (i * 2) end,
        cos = function(z) return ((i * z):exp() + (-(i * z)):exp()) / 2 end,
        tan = function(z) local a, b = (i * z):exp(), (-(i * z)):exp(); return (a - b) / ((a + b) * i) end,
      }
      for name, form in pairs(forms) do
        local z1, z2 = fresh(), fresh()
        local y1, y2 = wick[name](z1), form(z2)
        close(y1:detach(), y2:detach())
        local l1 = y1.real:sum() * 0.3 + y1.imag:sum() * 0.7
        local l2 = y2.real:sum() * 0.3 + y2.imag:sum() * 0.7
        l1:backward(); l2:backward()
        close(z1.grad, z2.grad, 1e-11)
      end
      -- far from 0, where e^2z overflows: tanh is +-1 with a zero gradient, not NaN
      local z = wick.complex(wick.tensor({ 800.0, -800.0 }), wick.tensor({ 0.3, 0.1 })):requires_grad_()
      local y = z:tanh()
      assert.are.same({ { 1, 0 }, { -1, 0 } }, wick.view_as_real(y:detach()):totable())
      y.real:sum():backward()
      assert.are.same({ { 0, 0 }, { 0, 0 } }, wick.view_as_real(z.grad):totable())
    end)
    wick.set_default_dtype("float32")
    assert(ok, err)
  end)

  it("p.grad[p.grad.abs() < 1e-12] = 0, masked_fill, scatter_, index_copy_ on complex tensors", function()
    local function z0() return wick.complex(wick.tensor({ 1e-20, 1.0, 3.0 }), wick.tensor({ 0.0, 2.0, 1.0 })) end
    local z = z0()
    z[z:abs():lt(1e-12)] = 0
    assert.are.same({ { 0, 0 }, { 1, 2 }, { 3, 1 } }, wick.view_as_real(z):totable())
    z = z0()
    z[wick.tensor({ 2 }, { dtype = "int64" })] = wick.complex(wick.tensor({ 7.0 }), wick.tensor({ 8.0 }))
    assert.are.same({ 7, 8 }, wick.view_as_real(z)[2]:totable())
    assert.are.same({ { 5, 0 }, { 1, 2 }, { 5, 0 } },
      wick.view_as_real(z0():masked_fill(wick.tensor({ true, false, true }), 5)):totable())
    z = z0()
    z:masked_fill_(wick.tensor({ false, true, false }), -1)
    assert.are.same({ -1, 0 }, wick.view_as_real(z)[2]:totable())
    assert.are.same({ 2, 0 }, wick.view_as_real(z0():index_fill(1, wick.tensor({ 3 }, { dtype = "int64" }), 2))[3]:totable())
    local a = wick.complex(wick.tensor({ { 1.0, 2.0 }, { 3.0, 4.0 } }), wick.tensor({ { 5.0, 6.0 }, { 7.0, 8.0 } }))
    local idx = wick.tensor({ { 2, 1 }, { 1, 2 } }, { dtype = "int64" })
    local s = a:clone():scatter_(2, idx, a)
    assert.are.same({ { { 2, 6 }, { 1, 5 } }, { { 3, 7 }, { 4, 8 } } }, wick.view_as_real(s):totable())
    s = a:clone():scatter_add_(2, idx, a)
    assert.are.same({ { { 3, 11 }, { 3, 11 } }, { { 6, 14 }, { 8, 16 } } }, wick.view_as_real(s):totable())
    s = a:clone():index_copy_(1, wick.tensor({ 2, 1 }, { dtype = "int64" }), a)
    assert.are.same({ { 3, 7 }, { 4, 8 } }, wick.view_as_real(s)[1]:totable())
    s = a:clone():masked_scatter_(wick.tensor({ { false, true }, { false, false } }), a)
    assert.are.same({ 1, 5 }, wick.view_as_real(s)[1][2]:totable())
    -- a tracked write: the gradient flows to the value and past the region
    local p = a:clone():requires_grad_()
    local v = wick.complex(wick.tensor({ 1.0 }), wick.tensor({ 1.0 })):requires_grad_()
    local q = p * 1
    q[wick.tensor({ 2 }, { dtype = "int64" })] = v:expand(1, 2)
    local l = (q * q:conj()).real:sum()
    l:backward()
    assert.are.same({ { { 2, 10 }, { 4, 12 } }, { { 0, 0 }, { 0, 0 } } }, wick.view_as_real(p.grad):totable())
    assert.are.same({ { 4, 4 } }, wick.view_as_real(v.grad):totable())
  end)
end)

describe("the forty-fourth round's lines, part 2 (ALBERT and ELECTRA)", function()
  it("ElectraAttention(config) with a config whose position_embedding_type names a later parameter", function()
    local S = nn.Module:extend("S")
    function S:init(config, position_embedding_type)
      self.config, self.pet = config, position_embedding_type
    end
    local s = S({ hidden_size = 32, position_embedding_type = "relative_key" })
    assert.are.equal(32, s.config.hidden_size)
    assert.is_nil(s.pet)
    s = S({ hidden_size = 32 }, { position_embedding_type = "absolute" })
    assert.are.equal("absolute", s.pet)
    -- a keywords table after the first argument still refuses a name it does not know
    support.assert_error_has(function() return S({}, { position_embedding_type = "x", typo = 1 }) end,
      "unexpected keyword argument 'typo'")
  end)

  it("a class's own `to` (ELECTRAModel's, returning None) is not what model:double() runs", function()
    local M = nn.Module:extend("M")
    local calls = 0
    function M:init() self.l = nn.Linear(2, 2) end
    function M:to(...) calls = calls + 1; M.super.to(self, ...) end
    local m = M()
    assert.are.equal(m, m:double())
    assert.are.equal("float64", m.l.weight.dtype)
    assert.are.equal(m, m:float())
    assert.are.equal(m, m:cpu())
    assert.are.equal(0, calls)
    assert.is_nil(m:to("float64"))
    assert.are.equal(1, calls)
  end)

  it("nn.Embedding(100, 16, {padding_idx = 0}) names the value it got", function()
    support.assert_error_has(function() return nn.Embedding(100, 16, { padding_idx = 0 }) end,
      "1 to 100, or -100 to -1 from the end (got 0;")
  end)
end)

describe("the forty-fourth round's lines, part 3 (YOLOX, consistency models, bbo's GP)", function()
  it("grid.type(dtype) with dtype = xin[0].type(), for every type name t:type() gives", function()
    for _, dtype in ipairs({ "bfloat16", "float16", "float64", "int32", "complex64", "bool" }) do
      local x = wick.zeros(2, { dtype = dtype })
      assert.are.equal(dtype, wick.zeros(2):type(x:type()).dtype)
    end
    support.assert_error_has(function() return wick.zeros(2):type("torch.Foo16Tensor") end,
      "unknown tensor type 'torch.Foo16Tensor'")
  end)

  it("th.norm(p, p=2, dtype=th.float32) and linalg's norms with dtype; a misspelt option is an error", function()
    local p = wick.tensor({ { 3, 4 }, { 0, 0 } })
    for _, r in ipairs({ wick.norm(p, { p = 2, dtype = "float64" }), p:norm(2, { dtype = "float64" }),
      p:norm(2, 1, { keepdim = true, dtype = "float64" }), wick.linalg.vector_norm(p, 2, { dtype = "float64" }),
      wick.linalg.norm(p, { dtype = "float64" }), wick.linalg.matrix_norm(p, { dtype = "float64" }) }) do
      assert.are.equal("float64", r.dtype)
    end
    assert.are.equal(5, wick.linalg.matrix_norm(p, { dtype = "float64" }):item())
    assert.are.same({ 5, 0 }, wick.linalg.norm(p, { ord = 2, dim = 2 }):totable())
    assert.are.same({ 7, 0 }, wick.linalg.vector_norm(p, 1, 2, { dtype = "float64" }):totable())
    support.assert_error_has(function() return wick.linalg.norm(p, { dtyp = "float64" }) end,
      "linalg.norm: unknown option 'dtyp'")
    support.assert_error_has(function() return wick.linalg.matrix_norm(p, "fro", { dtyp = 1 }) end,
      "linalg.matrix_norm: unknown option 'dtyp'")
  end)

  it("cov.T of a batch warns as PyTorch's does", function()
    local warned, saved = {}, io.stderr
    io.stderr = { write = function(_, text) warned[#warned + 1] = text end }
    local ok, err = pcall(function()
      assert.are.same({ 3, 2 }, wick.randn(2, 3).T.shape:totable())
      assert.are.equal(0, #warned)
      assert.are.same({ 4, 3, 2 }, wick.randn(2, 3, 4).T.shape:totable())
    end)
    io.stderr = saved
    assert(ok, err)
    assert.are.equal(1, #warned)
    assert.is_truthy(warned[1]:find("The use of `x.T` on tensors of dimension other than 2", 1, true))
  end)
end)

describe("the forty-fourth round's lines, part 4 (DALLE-pytorch)", function()
  it("@eval_decorator with functools.wraps: generate_images(text, clip=clip, filter_thres=0.9)", function()
    local function eval_decorator(fn)
      return wick.wraps(fn)(function(model, ...)
        local was_training = model.training
        model:eval()
        local out = fn(model, ...)
        model:train(was_training)
        return out
      end)
    end
    local Net = nn.Module:extend("Net")
    function Net:init() end
    Net.gen = wick.no_grad()(eval_decorator(function(self, text, clip, temperature)
      return { text = text, clip = clip, temperature = temperature, training = self.training, grad = wick.is_grad_enabled() }
    end))
    local r = Net():gen(1, { temperature = 0.5 })
    assert.are.same({ text = 1, temperature = 0.5, training = false, grad = false }, r)
    support.assert_error_has(function() return wick.wraps(3) end, "wraps: expected")
  end)
end)

describe("the forty-fourth round's lines, part 5 (torchdiffeq, TabNet)", function()
  it("solution[i] = y under a gradient penalty: t[i] = v differentiates twice", function()
    local x = wick.tensor({ 0.5, -1.0, 2.0 }, { requires_grad = true, dtype = "float64" })
    for _, form in ipairs({ "int", "index", "mask" }) do
      x.grad = nil
      local sol = wick.empty(2, 3, { dtype = "float64" })
      if form == "int" then
        sol[1] = x ^ 2; sol[2] = x ^ 3
      elseif form == "index" then
        sol[wick.tensor({ 1 }, { dtype = "int64" })] = (x ^ 2):unsqueeze(1)
        sol[wick.tensor({ 2 }, { dtype = "int64" })] = (x ^ 3):unsqueeze(1)
      else
        sol[wick.tensor({ true, false })] = (x ^ 2):unsqueeze(1)
        sol[wick.tensor({ false, true })] = (x ^ 3):unsqueeze(1)
      end
      local g = wick.autograd.grad((sol ^ 2):sum(), x, { create_graph = true })[1]
      g:sum():backward()
      assert.are.same({ 4.875, 42, 528 }, x.grad:totable()) -- 12 x^2 + 30 x^4
    end
    -- the written tensor's own gradient (the region zeroed) differentiates twice too
    local y, v = wick.randn(3, 4, { dtype = "float64", requires_grad = true }), wick.randn(4, { dtype = "float64", requires_grad = true })
    assert.is_true(wick.autograd.gradgradcheck(function(a, b)
      local c = a * 1
      c[2] = b:sin()
      c[wick.tensor({ 3 }, { dtype = "int64" })] = (b * 2):unsqueeze(1)
      return (c ^ 3):sum(1)
    end, { y, v }))
  end)

  it("grad_input[output == 0] = 0 ported with Lua's == says to write :eq()", function()
    local g, out = wick.randn(2, 3), wick.randn(2, 3):relu()
    support.assert_error_has(function() g[out == 0] = 0 end, "write t:eq(x)")
    support.assert_error_has(function() return g[out ~= 0] end, "write t:eq(x)")
  end)
end)

describe("the forty-fourth round's lines, part 6 (Glow)", function()
  it("self.flows[::-1] and the other negative steps of Python's slices over a ModuleList", function()
    local ml = nn.ModuleList({ nn.Linear(1, 1), nn.Linear(1, 2), nn.Linear(1, 3) })
    local function outs(l)
      local r = {}
      for _, m in ipairs(l) do r[#r + 1] = m.out_features end
      return r
    end
    -- expected: Python's [1, 2, 3][slice(...)]
    for _, c in ipairs({ { { nil, nil, -1 }, { 3, 2, 1 } }, { { 1, nil, -1 }, { 2, 1 } }, { { nil, 0, -1 }, { 3, 2 } },
      { { 0, 2, -1 }, {} }, { { -10, nil, -1 }, {} }, { { nil, nil, -2 }, { 3, 1 } }, { { nil, nil, -5 }, { 3 } },
      { { -1, -3, -1 }, { 3, 2 } } }) do
      assert.are.same(c[2], outs(ml[wick.slice(c[1][1], c[1][2], c[1][3])]))
    end
  end)

  it("torch.linalg.slogdet(W).logabsdet, qr(A).Q and the other named results; torch.slogdet(input=A); diag(diagonal=)", function()
    local A = wick.tensor({ { 2.0, 1.0 }, { 1.0, 3.0 } }, { dtype = "float64" })
    local sign, logabsdet = wick.linalg.slogdet(A)
    assert.are.equal(logabsdet, sign.logabsdet) -- (the first tensor answers the fields)
    assert.are.equal(1, sign:item())
    assert.is_true(math.abs(wick.slogdet({ input = A }).logabsdet:item() - math.log(5)) < 1e-12)
    assert.is_true(math.abs(wick.det({ input = A }):item() - 5) < 1e-12)
    local r = wick.linalg.qr(A)
    assert.is_true((r.Q:matmul(r.R) - A):abs():max():item() < 1e-12)
    local e = wick.linalg.eigh(A)
    assert.is_true((A:matmul(e.eigenvectors) - e.eigenvectors * e.eigenvalues):abs():max():item() < 1e-12)
    local s = wick.linalg.svd(A)
    assert.is_true((s.U:matmul(wick.diag(s.S)):matmul(s.Vh) - A):abs():max():item() < 1e-12)
    assert.are.same({ 2, 2 }, wick.svd(A).V.shape:totable())
    local lu = wick.linalg.lu(A)
    assert.is_true((lu.P:matmul(lu.L):matmul(lu.U) - A):abs():max():item() < 1e-12)
    assert.are.equal("int32", wick.linalg.lu_factor(A).pivots.dtype)
    -- a field named like a tensor method stays the method; a plain tensor keeps the error that says what to write
    assert.are.equal("function", type(wick.linalg.slogdet(A).sign))
    support.assert_error_has(function() return A.logabsdet end, "local sign, logabsdet = wick.linalg.slogdet(A)")
    assert.are.same({ 1 }, wick.diag(A, { diagonal = 1 }):totable())
    assert.are.same({ 3, 3 }, wick.tensor({ 1.0, 2.0 }):diag({ diagonal = -1 }).shape:totable())
  end)
end)

describe("the forty-fourth round's lines, part 7 (Tacotron2)", function()
  it("class Tacotron2Logger(SummaryWriter) with super().__init__(logdir)", function()
    local SummaryWriter = wick.utils.tensorboard.SummaryWriter
    local Logger = SummaryWriter:extend("Tacotron2Logger")
    function Logger:init(logdir) Logger.super.init(self, logdir) end
    function Logger:log_training(reduced_loss, iteration) self:add_scalar("training.loss", reduced_loss, iteration) end
    local dir = os.tmpname()
    os.remove(dir)
    local l = Logger(dir)
    l:log_training(1.5, 1)
    assert.is_true(wick.isinstance(l, SummaryWriter))
    assert.are.equal(dir, l:get_logdir())
    l:close()
    local f = io.popen("ls " .. dir)
    local listed = f:read("*a")
    f:close()
    assert.is_truthy(listed:find("events.out.tfevents", 1, true))
    os.execute("rm -rf " .. dir)
    support.assert_error_has(function() return l:add_graph() end, "SummaryWriter:add_graph is not implemented in wick")
    support.assert_error_has(function() return l.add_scalar("x", 1) end, "expected a SummaryWriter as self")
  end)
end)

describe("the forty-fourth round's lines, part 8 (Tacotron2's warm start)", function()
  it("a PyTorch checkpoint merged into model:state_dict() says to rename it first", function()
    local m = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    local pt = wick.OrderedDict()
    pt["0.weight"], pt["0.bias"] = wick.ones(2, 2), wick.ones(2)
    pt["1.weight"], pt["1.bias"] = wick.full({ 2, 2 }, 20.0), wick.ones(2)
    local sd = m:state_dict()
    sd:update(pt)
    support.assert_error_has(function() m:load_state_dict(sd) end, "Rename the PyTorch one first, nn.utils.from_pytorch_names(sd, model)")
    sd = m:state_dict()
    sd:update(nn.utils.from_pytorch_names(pt, m))
    m:load_state_dict(sd)
    assert.are.equal(20, m[2].weight[1][1]:item())
  end)

  it("cell(x, h, c) says the state is one {h, c} argument", function()
    support.assert_error_has(function() return nn.LSTMCell(3, 4)(wick.randn(2, 3), wick.zeros(2, 4), wick.zeros(2, 4)) end,
      "LSTMCell: takes its state as one argument: cell(x, {h, c})")
  end)
end)

describe("the forty-fourth round's lines, part 9 (ESPnet's positional tables)", function()
  it("exp2 in float32 is 2^x correctly rounded, and differentiable", function()
    local x = wick.tensor({ 18.0156002, 10.3, -20.7, 0.5 })
    local want = {}
    for i, v in ipairs(x:totable()) do want[i] = 2 ^ v end -- (x's float32 values, in double)
    assert.are.same(wick.tensor(want):totable(), x:exp2():totable()) -- (each rounded once to float32)
    local d = wick.tensor({ 0.5, -2.0, 3.0 }, { dtype = "float64", requires_grad = true })
    d:exp2():sum():backward()
    assert.is_true((d.grad - d:detach():exp2() * math.log(2)):abs():max():item() < 1e-15)
  end)
end)

describe("the forty-fourth round's lines, part 10 (HF BLIP's generation)", function()
  it("for key in model_kwargs over a plain table gives its keys; torch.isin(elements=, test_elements=)", function()
    assert.are.same({ "attention_mask", "encoder_hidden_states" },
      wick.list({ encoder_hidden_states = 2, attention_mask = 1 }))
    assert.are.same({ 3, 4 }, wick.list({ 3, 4 }))
    assert.are.same({}, wick.list({}))
    local ids = wick.tensor({ { 4, 1, 5 } }, { dtype = "int64" })
    assert.are.same({ { false, true, false } }, wick.isin({ elements = ids, test_elements = 1 }):totable())
    assert.are.same({ { false, true, false } },
      wick.isin(ids, { test_elements = wick.tensor({ 4, 5 }, { dtype = "int64" }), invert = true }):totable())
    support.assert_error_has(function() return wick.isin({ elements = ids }) end, "isin: missing required argument 'test_elements'")
  end)

  it("class BlipTextLMHeadModel(BlipTextPreTrainedModel, GenerationMixin): Class:include(Mixin)", function()
    local GenerationMixin = wick.Object:extend("GenerationMixin")
    function GenerationMixin:generate(input_ids, max_length) return { input_ids, max_length, self:name() } end
    local Pre = nn.Module:extend("BlipTextPreTrainedModel")
    function Pre:name() return "pre" end
    local LM = Pre:extend("BlipTextLMHeadModel"):include(GenerationMixin)
    function LM:init() self.l = nn.Linear(2, 2) end
    function LM:forward(x) return self.l(x) end
    local m = LM()
    assert.are.same({ 1, 5, "pre" }, m:generate(1, { max_length = 5 }))
    assert.is_true(wick.isinstance(m, GenerationMixin))
    assert.is_true(wick.isinstance(m, Pre))
    assert.is_true(wick.issubclass(LM:extend("Sub"), GenerationMixin))
    assert.is_false(wick.isinstance(Pre(), GenerationMixin))
    -- the first base's method wins over the mixin's (Python's order), and the class's own
    function GenerationMixin:name() return "mixin" end
    assert.are.equal("pre", Pre:extend("Again"):include(GenerationMixin)():name())
    local Own = nn.Module:extend("Own")
    function Own:generate() return "own" end
    Own:include(GenerationMixin)
    assert.are.equal("own", Own():generate())
    support.assert_error_has(function() return m:include(GenerationMixin) end, "include: expected a class made by extend")
    support.assert_error_has(function() return LM:include({}) end, "for argument 'mixin'")
  end)
end)

describe("the forty-fourth round's lines, part 11 (HF wav2vec2)", function()
  it("torch.div(390 - 10, 5, rounding_mode='floor') + 1 of Python ints, and the other arithmetic of two numbers", function()
    local r = wick.div(390 - 10, 5, { rounding_mode = "floor" }) + 1
    assert.are.same({ "int64", 77 }, { r.dtype, r:item() })
    assert.are.same({ "float32", 78 }, { wick.div(390, 5).dtype, wick.div(390, 5):item() })
    assert.are.same({ "int64", 3 }, { wick.add(1, 2).dtype, wick.add(1, 2):item() })
    assert.are.same({ "float32", -0.5 }, { wick.sub(1.5, 2).dtype, wick.sub(1.5, 2):item() })
    assert.are.same({ "int64", 3 }, { wick.floor_divide(7, 2).dtype, wick.floor_divide(7, 2):item() })
    assert.are.equal(0, wick.mul(3, 4):dim())
  end)
end)

describe("the forty-fourth round's lines, part 12 (stable-baselines3)", function()
  it("th.tensor(y) of a tensor is a new leaf without y's history, as PyTorch's", function()
    local w = wick.ones(2, { requires_grad = true })
    local y = w * 3
    local target = wick.tensor(y)
    assert.are.same({ false, true }, { target.requires_grad, target.is_leaf })
    ;(y * target):sum():backward()
    assert.are.same({ 9, 9 }, w.grad:totable())
    assert.is_false(y:new_tensor(y).requires_grad)
    assert.is_false(wick.tensor(y, { dtype = "float64" }).requires_grad)
    local leaf = wick.tensor(y, { requires_grad = true })
    assert.are.same({ true, true }, { leaf.requires_grad, leaf.is_leaf })
    target:add_(1) -- (a copy: y stays)
    assert.are.same({ 3, 3 }, y:detach():totable())
  end)

  it("features_extractor_class(space, **kwargs) binds a table that an earlier call passed as a value", function()
    local E = wick.Object:extend("E")
    function E:init(space, features_dim) self.fd = features_dim end
    local H = wick.Object:extend("H")
    function H:init(space, ekw) self.ekw = ekw end
    local kw = { features_dim = 16 }
    assert.are.equal(16, E("s", kw).fd)
    assert.are.equal(kw, H("s", { ekw = kw }).ekw)
    assert.are.equal(16, E("s", kw).fd)
    -- (the method the table went to keeps it a value when it binds again: fairseq's empty state)
    local M = nn.Module:extend("M")
    function M:forward(x, incremental_state) return incremental_state end
    local st = {}
    assert.are.equal(st, M()(1, { incremental_state = st }))
  end)
end)

describe("the forty-fourth round's lines, part 13 (HF ViLT)", function()
  it("torch.multinomial(torch.ones(v).float(), max_image_length) with a 0-dim int64 count; randperm too", function()
    local n = wick.tensor({ 4, 3 }, { dtype = "int64" }):max()
    local d = wick.multinomial(wick.ones(5), n)
    assert.are.equal(4, d:numel())
    assert.are.equal(4, d:unique():numel()) -- (without replacement)
    assert.are.equal(4, wick.ones(5):multinomial(n):numel())
    assert.are.same({ 1, 2, 3, 4 }, wick.randperm(n):sort():totable())
    support.assert_error_has(function() return wick.randperm(wick.tensor(3.0)) end, "expected an integer for argument 'n'")
  end)
end)

describe("the forty-fourth round's lines, part 14 (pytorch-fm's AnovaKernel)", function()
  it("a[:, t+1:, :] += x[:, t:, :] * a_prev[:, t:-1, :] with an empty slice, under autograd", function()
    local x = wick.randn(3, { requires_grad = true })
    local a = wick.zeros(4)
    a[{ { 5, -1 } }]:add_(x[{ { 4, -1 } }] * 2) -- (Python's a[4:] += x[3:] * 2: nothing)
    a:sum():backward()
    assert.are.same({ 0, 0, 0 }, x.grad:totable())
    local y = wick.randn(2, 3, { requires_grad = true })
    local b = y * 1
    b:narrow(2, 2, 0):mul_(3)
    b:sum():backward()
    assert.are.same({ { 1, 1, 1 }, { 1, 1, 1 } }, y.grad:totable())
  end)
end)

describe("the forty-fourth round's lines, part 15 (MuZero, Perceiver)", function()
  it("visit_counts ** (1 / temperature): a Lua float is Python's float under Lua 5.4; a whole number keeps ints under LuaJIT", function()
    local v = wick.tensor({ 9, 8, 1 }, { dtype = "int32" })
    local d = v ^ (1 / 0.1)
    if math.type then -- (Lua 5.3+: 1 / 0.1 is a float)
      assert.are.same({ "float32", "float32", "int32" }, { d.dtype, (v * 2.0).dtype, (v * 2).dtype })
      assert.are.equal("float32", (wick.eye(3):gt(0) + 0.).dtype)
      assert.are.equal("float32", wick.add(2.0, v).dtype)
    else -- (LuaJIT: 10 and 10.0 are one number, an int: PyTorch's int ** 10 wraps too)
      assert.are.same({ "int32", "int32" }, { d.dtype, (v * 2.0).dtype })
      assert.are.equal("float32", (v:float() ^ (1 / 0.1)).dtype)
    end
    assert.are.equal("float32", (v * 2.5).dtype)
  end)

  it("a forward(x, ...) gets a new **kwargs table: kwargs.update(context = ...) leaves the caller's", function()
    local A = nn.Module:extend("A")
    function A:forward(x, ...)
      local kwargs = ...
      kwargs.tag = "changed"
      return kwargs.mask
    end
    local kw = { tag = "orig", mask = 1 }
    assert.are.equal(1, A()(wick.ones(1), kw))
    assert.are.equal("orig", kw.tag)
  end)

  it("a in root.children of an OrderedDict; an integer remainder by zero is PyTorch's ZeroDivisionError", function()
    local d = wick.OrderedDict()
    d[0], d[2] = "a", "b"
    assert.are.same({ true, false, 2 }, { d:contains(2), d:contains(1), d:len() })
    local a = wick.tensor({ 5, 3 }, { dtype = "int64" })
    for _, f in ipairs({ function() return a % 0 end, function() return wick.remainder(a, 0) end,
      function() return a:fmod(0) end, function() return a % wick.tensor({ 1, 0 }, { dtype = "int64" }) end }) do
      support.assert_error_has(f, "ZeroDivisionError")
    end
    assert.are.same({ 1, 1 }, (a % 2):totable())
    assert.is_true(((wick.tensor({ 5.0 }) % 0)[1]:item()) ~= ((wick.tensor({ 5.0 }) % 0)[1]:item())) -- (NaN, as PyTorch's)
  end)
end)

describe("the forty-fourth round's lines, part 16 (Deformable DETR, SB3's static methods)", function()
  it("a @staticmethod called with keywords: get_reference_points(shapes, ratios, device=src.device)", function()
    local Enc = nn.Module:extend("Enc")
    function Enc.get_reference_points(shapes, ratios, device) return { shapes, ratios, device } end
    local e = Enc()
    assert.are.same({ 1, 2, "cpu" }, e.get_reference_points(1, 2, { device = "cpu" }))
    assert.are.same({ 1, 2, "x" }, Enc.get_reference_points(1, 2, "x"))
    -- a table naming something else, or coming first, is a value
    assert.are.same({ 1, 2, { other = 1 } }, e.get_reference_points(1, 2, { other = 1 }))
    assert.are.same({ { ratios = 2 } }, Enc.get_reference_points({ ratios = 2 }))
    local P = wick.Object:extend("Policy")
    function P.init_weights(module, gain) module.gain = gain end
    local m = nn.Linear(2, 2)
    m:apply(function(mod) P.init_weights(mod, { gain = 0.01 }) end)
    assert.are.equal(0.01, m.gain)
  end)
end)

describe("the forty-fourth round's lines, part 17 (mamba.py)", function()
  it("ctx.save_for_backward(x, None, w): the saved tensors' count reaches past the hole", function()
    local Fn = wick.autograd.Function:extend("Fn")
    function Fn.forward(ctx, x, w)
      ctx:save_for_backward(x, nil, w)
      return x * w
    end
    function Fn.backward(ctx, g)
      local x, b, w = unpack(ctx.saved_tensors, 1, ctx.saved_tensors.n)
      assert(b == nil)
      return g * w, g * x
    end
    local x, w = wick.ones(2):requires_grad_(), wick.full({ 2 }, 3.0):requires_grad_()
    Fn.apply(x, w):sum():backward()
    assert.are.same({ { 3, 3 }, { 1, 1 } }, { x.grad:totable(), w.grad:totable() })
  end)
end)

describe("the forty-fourth round's lines, part 18 (EfficientDet)", function()
  it("nn.init._no_grad_normal_(tensor, 0., std) and a dict sample passed to Compose as one value", function()
    local w = nn.Parameter(wick.zeros(2000))
    assert.are.equal(w, nn.init._no_grad_normal_(w, 0., 0.5))
    assert.is_true(math.abs(w:std():item() - 0.5) < 0.05)
    assert.are.equal(3, nn.init._no_grad_fill_(wick.zeros(2), 3)[1]:item())
    local Compose = wick.Object:extend("Compose")
    function Compose:init(t) self.transforms = t end
    function Compose:__call__(img)
      for _, t in ipairs(self.transforms) do img = t(img) end
      return img
    end
    local seen
    local c = Compose({ function(s) seen = s; return s end })
    support.assert_error_has(function() return c({ img = wick.zeros(2), annot = wick.zeros(0, 5) }) end,
      "a dict meant as one value goes as wick.OrderedDict(t)")
    local sample = wick.OrderedDict({ img = wick.zeros(2), annot = wick.zeros(0, 5) })
    c(sample)
    assert.are.equal(sample, seen)
  end)
end)

describe("the forty-fourth round's lines, part 19 (TimesNet's and ESPnet's float32 tables)", function()
  it("float32 sin and cos are their double values rounded once, as PyTorch's", function()
    local x = ((wick.rand(20000, { dtype = "float64" }) * 2 - 1) * 5000):to("float32")
    local xd = x:to("float64")
    for _, f in ipairs({ "sin", "cos" }) do
      local want = xd[f](xd):to("float32")
      assert.are.equal(0, x[f](x):ne(want):sum():item(), f)
    end
    -- pe[:, 0::2] = torch.sin(position * div_term): PyTorch's 0.720369279 (the old polynomial gave ...339)
    assert.are.equal(wick.tensor({ math.sin(wick.tensor({ 27.47 })[1]:item()) })[1]:item(),
      wick.sin(wick.tensor({ 27.47 }))[1]:item())
  end)
end)

describe("the forty-fifth round's lines, part 1 (performer's shape[:2], vqvae's misspelt alpha)", function()
  it("a Size takes a wick.slice with Python's clamping", function()
    local s = wick.zeros(2, 3, 4).shape
    assert.are.same({ 2, 3 }, { unpack(s[wick.slice(nil, 2)]) })  -- shape[:2]
    assert.are.same({ 3, 4 }, { unpack(s[wick.slice(1, nil)]) })   -- shape[1:]
    assert.are.same({ 4, 3, 2 }, { unpack(s[wick.slice(nil, nil, -1)]) })
    assert.are.same({ 2, 4 }, { unpack(s[wick.slice(nil, nil, 2)]) })
    assert.are.equal(0, #s[wick.slice(5, 9)])
    assert.are.equal("Size", getmetatable(s[wick.slice(nil, 2)]).__name or "Size")
    assert.are.same({ 2, 3 }, { unpack(wick.full(s[wick.slice(nil, 2)], true, { dtype = "bool" }).shape) })
    support.assert_error_has(function() return s[wick.slice(1, 2, 0)] end, "slice step cannot be zero")
  end)
  it("an option a binary op does not know is an error, not alpha = 1", function()
    local a, b = wick.zeros(3), wick.ones(3)
    support.assert_error_has(function() return a:clone():add_(b, { alhpa = 0.01 }) end, "add_: unknown option 'alhpa'")
    support.assert_error_has(function() return wick.add(a, b, { alhpa = 0.01 }) end, "unknown option 'alhpa'")
    support.assert_error_has(function() return a:sub(b, { alhpa = 0.01 }) end, "sub: unknown option 'alhpa'")
    assert.are.equal(0.5, a:clone():add_(b, { alpha = 0.5 })[1]:item())
    assert.are.equal(-2, a:sub(b, { alpha = 2 })[1]:item())
  end)
  it("no method drops an argument it does not take", function()
    local a, b = wick.rand(2, 3), wick.rand(2, 3)
    local bogus = { bogus = 1 }
    local calls = {
      lerp = function() return a:lerp(b, 0.5, bogus) end, lerp_ = function() return a:clone():lerp_(b, 0.5, bogus) end,
      where = function() return wick.where(a:gt(0.5), a, 0, bogus) end,
      exp = function() return a:exp(bogus) end, mm = function() return a:mm(b:t(), bogus) end,
      matmul = function() return a:matmul(b:t(), bogus) end, clamp = function() return a:clamp(0, 1, bogus) end,
      masked_fill = function() return a:masked_fill(a:gt(0.5), 0, bogus) end, t = function() return a:t(bogus) end,
      transpose = function() return a:transpose(1, 2, bogus) end, detach = function() return a:detach(bogus) end,
      unsqueeze = function() return a:unsqueeze(1, bogus) end, fill_ = function() return a:clone():fill_(1, bogus) end,
      equal = function() return wick.equal(a, b, bogus) end, float = function() return a:float(bogus) end,
      cross = function() return wick.rand(3):cross(wick.rand(3), bogus) end,
      addmm = function() return a:addmm(a, wick.rand(3, 3), { beta = 1, gamma = 2 }) end,
      index_select = function() return a:index_select(2, wick.tensor({ 1 }, { dtype = "int64" }), bogus) end,
    }
    for name, f in pairs(calls) do
      local ok, err = pcall(f)
      assert.is_false(ok, name)
      assert.truthy(tostring(err):find("unknown option '", 1, true), name .. ": " .. tostring(err))
    end
    support.assert_error_has(function() return a:exp({ 2 }) end, "exp: got an unexpected extra argument (a table)")
    -- a call's further results are Lua's to drop (values and indices of sort)
    assert.is_true(a:sort(2):equal(a:sort(2)))
    assert.is_true(a:lerp(b, 0.5, a:max(1)):equal(a:lerp(b, 0.5)))
    -- what they do take still works: keywords, empty tables, non_blocking, sparse_grad
    assert.are.equal(0.25, wick.zeros(1):lerp(wick.ones(1), { weight = 0.25 })[1]:item())
    assert.are.equal(1, a:clamp({ min = 1 }):min():item())
    local c = wick.zeros(2, 3)
    c:copy_(b, { non_blocking = true })
    assert.is_true(c:equal(b))
    assert.is_true(a:gather(2, wick.ones(2, 1, { dtype = "int64" }), { sparse_grad = false }):equal(a[{ {}, { 1 } }]))
    assert.is_true(a:exp({}):equal(a:exp()))
  end)
end)

describe("the forty-fifth round's lines, part 2 (vector-quantize's cross entropy over a sequence)", function()
  it("cross_entropy and nll_loss check the target's shape as PyTorch does", function()
    local logits = wick.randn(2, 8, 9)
    support.assert_error_has(function() return F.cross_entropy(logits, wick.randint(1, 9, { 2, 5 })) end,
      "cross_entropy: Expected target size [2, 9], got [2, 5]")
    support.assert_error_has(function() return F.nll_loss(logits:log_softmax(2), wick.randint(1, 9, { 2, 1 })) end,
      "nll_loss: Expected target size [2, 9], got [2, 1]")
    support.assert_error_has(function() return F.cross_entropy(wick.randn(4, 8), wick.ones(4, 1, { dtype = "int64" })) end,
      "0D or 1D target tensor expected, multi-target not supported")
    support.assert_error_has(function() return F.cross_entropy(logits, wick.ones(3, 9, { dtype = "int64" })) end,
      "Expected input batch_size (2) to match target batch_size (3).")
    support.assert_error_has(function()
      return F.cross_entropy(wick.randn(2, 8, 9, 2), wick.ones(2, 3, 3, 2, { dtype = "int64" }))
    end, "expected a target of shape [2, 9, 2] (the input [2, 8, 9, 2] without its class dim 2)")
    local t = wick.randint(1, 9, { 2, 9 })
    assert.is_true(math.abs(F.cross_entropy(logits, t):item() - F.nll_loss(logits:log_softmax(2), t):item()) < 1e-6)
  end)
  it("a loss of sizes that do not broadcast names itself, not the sub inside", function()
    local ok, err = pcall(function() return nn.L1Loss()(wick.rand(2, 3), wick.rand(3, 2)) end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("l1_loss: The size of tensor a (3) must match the size of tensor b (2) at "
      .. "non-singleton dimension 2", 1, true), tostring(err))
  end)
end)

describe("the forty-fifth round's lines, part 3 (SwinIR's in-place ops and their versions)", function()
  it("t._version counts one per in-place op, as PyTorch's", function()
    local x = wick.zeros(3)
    assert.are.equal(0, x._version)
    x:add_(1); x:mul_(2); x[1] = 5; x:zero_()
    x[{ { 1, 2 } }] = wick.ones(2)
    x:masked_fill_(x:gt(0), 3); x:copy_(wick.ones(3)); x:clamp_(0, 1)
    assert.are.equal(8, x._version)
    x.data:add_(1) -- (a write through .data is not one autograd sees)
    assert.are.equal(8, x._version)
    local a = wick.randn(3, { requires_grad = true })
    local y = a * 1
    y[1] = 0; y:add_(1); y:masked_fill_(y:gt(0), 1); y:copy_(a); y:relu_()
    assert.are.equal(5, y._version)
  end)
  it("the saved-tensor error says the version one in-place op gives", function()
    local a = wick.randn(3, { requires_grad = true })
    local c = (a * 2):sigmoid()
    c:add_(1)
    support.assert_error_has(function() c:sum():backward() end, "is at version 1; expected version 0 instead")
  end)
end)

describe("the forty-fifth round's lines, part 4 (vit-pytorch's class DistillableViT(DistillMixin, ViT))", function()
  it("include(Mixin, {first = true}) puts the mixin before the base line", function()
    local Mixin = wick.Object:extend("Mixin")
    function Mixin:forward(x, scale) return x * (scale or 2) end
    function Mixin:name() return "mixin" end
    local Base = nn.Module:extend("Base")
    function Base:forward(x) return x end
    function Base:name() return "base" end
    local C = Base:extend("C"):include(Mixin, { first = true })
    function C:name() return "own" end
    assert.are.equal(2, C()(wick.ones(1))[1]:item())
    assert.are.equal(3, C()(wick.ones(1), { scale = 3 })[1]:item())
    assert.are.equal("own", C():name())
    assert.is_true(wick.isinstance(C(), Mixin))
    local D = Base:extend("D"):include(Mixin) -- class D(Base, Mixin)
    assert.are.equal(1, D()(wick.ones(1))[1]:item())
    assert.are.equal("base", D():name())
    support.assert_error_has(function() Base:extend("E"):include(Mixin, { frist = true }) end,
      "include: unknown option 'frist'")
  end)
end)

describe("the forty-fifth round's lines, part 5 (HF MusicGen's and SigLIP's nn.Buffer)", function()
  it("a field assigned an nn.Buffer is a buffer of its persistence", function()
    local E = nn.Module:extend("E")
    function E:init()
      self.weights = nn.Buffer(wick.ones(4, 2), { persistent = false })
      self.position_ids = nn.Buffer(wick.arange(3, { dtype = "int64" }):expand(1, -1))
    end
    local e = E()
    local sd, bufs = e:state_dict(), {}
    for k in e:named_buffers() do bufs[#bufs + 1] = k end
    assert.are.same({ "weights", "position_ids" }, bufs)
    assert.is_nil(sd.weights)
    assert.is_not_nil(sd.position_ids)
    e:double()
    assert.are.equal("float64", e.weights.dtype)
    local late = E()
    late.extra = nn.Buffer(wick.zeros(2)) -- after init too (a plain tensor then is an attribute)
    assert.is_not_nil(late:state_dict().extra)
    local w = wick.ones(2, { requires_grad = true })
    local b = nn.Buffer(w * 2)
    assert.is_true(b.requires_grad and b.is_leaf)
    assert.are.same({ 0 }, { unpack(nn.Buffer().shape) })
    support.assert_error_has(function() return nn.Buffer(wick.ones(1), { persistant = false }) end,
      "Buffer: unknown option 'persistant'")
  end)
end)

describe("the forty-fifth round's lines, part 6 (PyG's scatter over a graph without edges)", function()
  it("scatter_add and scatter_reduce of an empty src keep src in the graph", function()
    local x = wick.randn(3, 4, { requires_grad = true })
    local idx = wick.zeros(0, { dtype = "int64" })
    local src = x:index_select(1, idx)
    local index = idx:view(-1, 1):expand_as(src)
    local out = wick.zeros(3, 4):scatter_add_(1, index, src)
    assert.is_true(out.requires_grad)
    assert.is_true(wick.zeros(3, 4):scatter_reduce(1, index, src, "sum").requires_grad)
    assert.is_true(wick.zeros(3, 4):scatter_add(1, index, src).requires_grad)
    out:sum():backward()
    assert.are.equal(0, x.grad:abs():sum():item())
    -- the values stay as they were, -0.0 too
    local z = wick.tensor({ -0.0, 0.0 }):scatter_add(1, idx, wick.zeros(0, { requires_grad = true }))
    assert.are.same({ -math.huge, math.huge }, { 1 / z[1]:item(), 1 / z[2]:item() })
  end)
end)

describe("the forty-fifth round's lines, part 7 (denoising-diffusion's float32 0-dim maths)", function()
  it("float32 transcendental ops give the same bits for a 0-dim tensor, a view and a contiguous run", function()
    local x = ((wick.rand(4096, { dtype = "float64" }) * 2 - 1) * 20):to("float32")
    local strided = x:view(64, 64):t() -- (its elements in another order: compared through the same view)
    for _, f in ipairs({ "exp", "log", "tanh", "sigmoid", "erf", "sin", "cos" }) do
      local v = f == "log" and x:abs() + 1e-3 or x
      local want = v[f](v)
      local sv = f == "log" and strided:abs() + 1e-3 or strided
      assert.is_true(sv[f](sv):equal(want:view(64, 64):t()), f .. " strided")
      for i = 1, 64 do
        local one = v[i]:clone() -- a 0-dim tensor
        assert.are.equal(want[i]:item(), one[f](one):item(), f .. " 0-dim")
      end
    end
    -- sin(0.327435017f) is 0.321615368 (the double's rounding), as a 0-dim tensor too
    local s = wick.tensor(0.327435017, { dtype = "float32" })
    assert.are.equal(wick.tensor(math.sin(s:item()), { dtype = "float32" }):item(), s:sin():item())
  end)
end)

describe("the forty-fifth round's lines, part 8 (TabPFN, Mamba, ema_pytorch)", function()
  it("nn.Embedding(n, d, max_norm=True) renormalises the rows it looks up, as PyTorch's", function()
    local w = wick.randn(10, 4, { dtype = "float64" }) * 2
    local e = nn.Embedding(10, 4, { max_norm = true, _weight = w:clone(), dtype = "float64" })
    assert.truthy(tostring(e):find("max_norm=1.0", 1, true))
    local idx = wick.tensor({ { 1, 3, 3 }, { 5, 1, 2 } }, { dtype = "int64" })
    local out = e(idx)
    for _, r in ipairs({ 1, 2, 3, 5 }) do
      local n = w[r]:norm():item()
      local want = n > 1 and w[r] * (1 / (n + 1e-7)) or w[r]
      assert.is_true((e.weight[r] - want):abs():max():item() < 1e-15, "row " .. r)
    end
    assert.is_true(e.weight[4]:equal(w[4])) -- (not looked up: as it was)
    assert.is_true(out[1][2]:equal(e.weight[3]))
    out:sum():backward()
    assert.are.same({ 2, 2, 2, 2 }, e.weight.grad[1]:totable()) -- (row 1 looked up twice; the lookup's gradient)
    local w2 = wick.randn(6, 3) * 3
    F.embedding(wick.tensor({ 2, 4 }, { dtype = "int64" }), w2, { max_norm = 1.5, norm_type = 1 })
    assert.is_true(w2[2]:norm(1):item() <= 1.5 + 1e-5)
  end)
  it("nn.modules.transformer._get_activation_fn and F.conv1d(x, weight=w, bias=b)", function()
    assert.are.equal(F.gelu, nn.modules.transformer._get_activation_fn("gelu"))
    support.assert_error_has(function() nn.modules.transformer._get_activation_fn("tanh") end,
      "activation should be relu/gelu, not tanh")
    local x, w, b = wick.randn(2, 6, 5), wick.randn(6, 1, 4), wick.randn(6)
    local r = F.conv1d(x, w, b, { padding = 3, groups = 6 })
    assert.is_true(F.conv1d(x, { weight = w, bias = b, padding = 3, groups = 6 }):equal(r))
    assert.is_true(F.conv1d({ input = x, weight = w, bias = b, padding = 3, groups = 6 }):equal(r))
    assert.are.same({ 1, 3, 2, 2, 2 }, { unpack(F.conv3d(wick.randn(1, 2, 4, 4, 4), { weight = wick.randn(3, 2, 3, 3, 3) }).shape) })
    assert.are.same({ 1, 3, 7 }, { unpack(F.conv_transpose1d(wick.randn(1, 2, 5), { weight = wick.randn(2, 3, 3) }).shape) })
  end)
  it("wick.list of an iterator of several values gives Python's tuples", function()
    local l = wick.list(wick.zip({ "a", "b" }, { 1, 2 }))
    assert.are.same({ { "a", 1 }, { "b", 2 } }, l)
    local m = nn.Linear(2, 3)
    local named = wick.list(m:named_parameters())
    assert.are.same({ "weight", "bias" }, { named[1][1], named[2][1] })
    assert.are.equal(m.weight, named[1][2])
    assert.are.same({ "weight", "bias" }, wick.list(m:state_dict()))
    assert.are.equal(2, #wick.list(m:parameters()))
    local ema, cur = {}, {}
    for pair, other in wick.zip(wick.list(m:named_parameters()), wick.list(m:named_parameters())) do
      ema[#ema + 1], cur[#cur + 1] = pair[1], other[2]
    end
    assert.are.same({ "weight", "bias" }, ema)
    assert.are.equal(m.bias, cur[2])
  end)
end)

describe("the forty-fifth round's lines, part 9 (kornia's warps and timm's reparameterize)", function()
  it("grid_sample's reflection padding, bicubic mode and 5-D inputs", function()
    local x = wick.randn(1, 2, 5, 6, { dtype = "float64" })
    local function at(gx, gy, o)
      local g = wick.tensor({ { { { gx, gy } } } }, { dtype = "float64" })
      return F.grid_sample(x, g, o):view(2)
    end
    -- reflection about the edge pixels' centres (align_corners) and about the image's edges (not)
    local ra = { padding_mode = "reflection", align_corners = true }
    assert.is_true((at(1.3, -0.2, ra) - at(0.7, -0.2, ra)):abs():max():item() < 1e-12)
    assert.is_true((at(-1.25, 0.4, ra) - at(-0.75, 0.4, ra)):abs():max():item() < 1e-12)
    local rn = { padding_mode = "reflection", align_corners = false }
    assert.is_true((at(1.1, 0.3, rn) - at(0.9, 0.3, rn)):abs():max():item() < 1e-12)
    -- bicubic passes through the pixels (align_corners: pixel j at -1 + 2j / (W - 1))
    local b = at(-1 + 2 * 2 / 5, -1 + 2 * 3 / 4, { mode = "bicubic", align_corners = true })
    assert.is_true((b - x[{ 1, {}, 4, 3 }]):abs():max():item() < 1e-12)
    -- 5-D: the identity grid reads the volume back (trilinear and nearest)
    local v = wick.randn(2, 3, 4, 5, 3, { dtype = "float64" })
    local function lin(n) return wick.linspace(-1, 1, n, { dtype = "float64" }) end
    local zz, yy, xx = wick.meshgrid(lin(4), lin(5), lin(3), { indexing = "ij" })
    local grid = wick.stack({ xx, yy, zz }, -1):unsqueeze(1):expand(2, 4, 5, 3, 3)
    for _, mode in ipairs({ "bilinear", "nearest" }) do
      local y = F.grid_sample(v, grid, { mode = mode, align_corners = true })
      assert.is_true((y - v):abs():max():item() < 1e-12, mode)
    end
    -- nearest: the grid is in the graph, with a zero gradient (PyTorch's)
    local g = grid:clone():requires_grad_()
    local gg = wick.autograd.grad(F.grid_sample(v, g, { mode = "nearest", align_corners = true }):sum(), { g })[1]
    assert.are.equal(0, gg:abs():sum():item())
    support.assert_error_has(function() return F.grid_sample(x, wick.zeros(1, 2, 2, 2)) end,
      "expected grid to have the input's dtype float64, got float32")
    support.assert_error_has(function() return F.grid_sample(v, grid:narrow(-1, 1, 2)) end,
      "a 5-D input takes a grid of shape (N, D_out, H_out, W_out, 3)")
    support.assert_error_has(function() return F.grid_sample(v, grid, { mode = "bicubic" }) end,
      "bicubic interpolation only supports 4D input")
  end)
  it("t.mH and t.H; m:__delattr__(name)", function()
    local z = wick.complex(wick.randn(2, 3), wick.randn(2, 3))
    assert.is_true(z.H:equal(z:transpose(1, 2):conj()))
    assert.is_true(wick.randn(2, 3, 4).mH:equal(wick.zeros(2, 4, 3)) == false)
    local a = wick.randn(2, 3, 4)
    assert.is_true(a.mH:equal(a.mT))
    support.assert_error_has(function() return a.H end, "tensor.H is only supported on matrices")
    local m = nn.Module()
    m.conv_kxk = nn.Linear(2, 2)
    m.keep = nn.Linear(2, 2)
    m:__delattr__("conv_kxk")
    assert.is_nil(m.conv_kxk)
    local keys = {}
    for k in pairs(m:state_dict()) do keys[#keys + 1] = k end
    table.sort(keys)
    assert.are.same({ "keep.bias", "keep.weight" }, keys)
    support.assert_error_has(function() m:__delattr__("conv_kxk") end, "'Module' object has no attribute 'conv_kxk'")
  end)
  it("normal with a tensor std refuses a negative or NaN one; autocast's warning once per line", function()
    support.assert_error_has(function() return wick.normal(0, wick.tensor({ -1.0, 0.5 })) end,
      "normal expects all elements of std >= 0.0")
    support.assert_error_has(function() return wick.normal(wick.zeros(1), wick.tensor({ 0 / 0 })) end,
      "normal expects all elements of std >= 0.0")
    assert.are.equal(0, wick.normal(wick.zeros(2), wick.zeros(2)):abs():sum():item())
    if not wick.cuda.is_available() then
      local saved, said = io.stderr, {}
      io.stderr = { write = function(_, s) said[#said + 1] = s end }
      for _ = 1, 3 do wick.cuda.amp.autocast(function() end) end
      io.stderr = saved
      assert.are.equal(1, #said)
      assert.truthy(said[1]:find("port_lines_spec.lua:%d+: User provided device_type of 'cuda'"))
    end
  end)
end)

describe("the forty-fifth round's lines, part 10 (timm's _apply, kornia's inverse, SwAV's optimizer)", function()
  it("a class's _apply override runs under to(), float(), double(), and super()._apply converts", function()
    local M = nn.Module:extend("M")
    function M:init() self.w = nn.Parameter(wick.ones(3)); self.attention_bias_cache = {} end
    function M:_apply(fn, ...)
      self.attention_bias_cache = {}
      self.applied = (self.applied or 0) + 1
      return M.super._apply(self, fn, ...)
    end
    function M:forward(x)
      if self.attention_bias_cache.b == nil then self.attention_bias_cache.b = self.w * 2 end
      return x * self.attention_bias_cache.b
    end
    local outer = nn.Sequential(M(), nn.Linear(3, 3))
    local m, w = outer[1], outer[1].w
    m(wick.ones(3))
    outer:double()
    assert.is_nil(next(m.attention_bias_cache))
    assert.are.same({ 1, "float64", "float64" }, { m.applied, m.w.dtype, outer[2].weight.dtype })
    assert.are.equal("float64", m(wick.ones(3, { dtype = "float64" })).dtype)
    assert.is_true(rawequal(w, m.w))
    -- the default _apply of a function that makes new tensors: each parameter and its grad take them
    local l = nn.Linear(2, 2)
    l(wick.ones(2)):sum():backward()
    local lw = l.weight
    l:_apply(function(t) return t:double() end)
    assert.are.same({ "float64", "float64" }, { l.weight.dtype, l.weight.grad.dtype })
    assert.is_true(rawequal(lw, l.weight))
    support.assert_error_has(function() l:_apply(3) end, "_apply: expected a function for argument 'fn'")
  end)
  it("linalg.inv of a singular matrix names itself; SGD(m:named_parameters()) records the names", function()
    support.assert_error_has(function() return wick.linalg.inv(wick.zeros(3, 3)) end,
      "linalg.inv: The diagonal element 1 is zero, the inversion could not be completed because the input matrix is singular.")
    local A = wick.randn(2, 3, 3, { dtype = "float64" }) + wick.eye(3, { dtype = "float64" }) * 3
    assert.is_true((wick.linalg.inv(A):matmul(A) - wick.eye(3, { dtype = "float64" })):abs():max():item() < 1e-12)
    assert.is_true(wick.autograd.gradcheck(function(a) return wick.linalg.inv(a) end, { A:clone():requires_grad_() }))
    local m = nn.Sequential(nn.Linear(2, 3))
    local o = wick.optim.SGD(m:named_parameters(), { lr = 0.1 })
    assert.are.same({ "1.weight", "1.bias" }, o.param_groups[1].param_names)
    assert.are.equal(m[1].weight, o.param_groups[1].params[1])
    m(wick.ones(2)):sum():backward()
    o:step()
    assert.are.same({ "1.weight", "1.bias" }, o:state_dict().param_groups[1].param_names)
  end)
end)

describe("the forty-fifth round's lines, part 11 (descript-audio-codec)", function()
  it("zip and list of a ModuleList give its modules (MRD's zip(x_bands, self.band_convs))", function()
    local layers = nn.ModuleList({ nn.Linear(2, 2), nn.Linear(2, 2) })
    assert.is_true(wick.isinstance(wick.list(layers)[2], nn.Linear))
    assert.is_true(wick.isinstance(wick.list(nn.Sequential(nn.ReLU()))[1], nn.ReLU))
    local n = 0
    for x, layer in wick.zip({ wick.randn(1, 2), wick.randn(1, 2) }, layers) do
      n = n + 1
      assert.are.same({ 1, 2 }, { unpack(layer(x).shape) })
    end
    assert.are.equal(2, n)
    local seen = {}
    for i, l in wick.enumerate(layers) do seen[#seen + 1] = { i, l } end
    assert.are.equal(layers[2], seen[2][2])
    assert.is_nil(seen[2][3])
  end)
  it("the loss classes take PyTorch's positional arguments, nil ones too", function()
    assert.are.equal("mean", nn.L1Loss(nil).reduction)
    assert.are.equal("sum", nn.L1Loss(nil, nil, "sum").reduction)
    assert.are.equal(3, nn.CrossEntropyLoss(nil, nil, 3).ignore_index)
    assert.are.same({ "sum", 2 }, { nn.HuberLoss("sum", 2).reduction, nn.HuberLoss("sum", 2).delta })
    support.assert_error_has(function() return nn.L1Loss("sum") end, "options such as reduction go in the options table")
  end)
  it("stft refuses a window whose length is not win_length (n_fft by default)", function()
    support.assert_error_has(function()
      return wick.stft(wick.randn(2, 50), { n_fft = 16, hop_length = 4, window = wick.hann_window(8), return_complex = true })
    end, "expected a 1D window tensor of size equal to win_length=16, but got window with size [8]")
    local s = wick.stft(wick.randn(2, 50), { n_fft = 16, hop_length = 4, win_length = 8, window = wick.hann_window(8),
      return_complex = true })
    assert.are.same({ 2, 9, 13 }, { unpack(s.shape) })
  end)
  it("weight_norm's deprecation warns once, though a wrapper tail-calls it from many lines", function()
    local saved, said = io.stderr, {}
    io.stderr = { write = function(_, s) said[#said + 1] = s end }
    local function WNConv1d(...) return nn.utils.weight_norm(nn.Conv1d(...)) end
    local a = WNConv1d(1, 2, 3)
    local b = WNConv1d(2, 2, 3)
    io.stderr = saved
    assert.is_true(#said <= 1) -- (none where an earlier spec warned already)
    assert.is_not_nil(a.weight_g)
    assert.is_not_nil(b.weight_v)
  end)
end)

describe("the forty-fifth round's lines, part 12 (torchvision's tensor transforms)", function()
  it("logical_and_, logical_or_, logical_xor_; rot90 by keyword; nearest interpolate of uint8", function()
    local a = wick.tensor({ true, false })
    assert.are.same({ true, false }, a:clone():logical_and_(wick.tensor({ true, true })):totable())
    assert.are.same({ 1, 0 }, wick.tensor({ 1.0, 0.0 }):logical_or_(wick.tensor({ 0.0, 0.0 })):totable())
    assert.are.same({ false, false }, a:clone():logical_xor_(a):totable())
    local m = wick.arange(6):view(2, 3)
    assert.is_true(wick.rot90(m, { k = 1, dims = { -2, -1 } }):equal(wick.rot90(m, 1, { -2, -1 })))
    assert.is_true(m:rot90({ k = 2 }):equal(m:flip(1, 2)))
    local u8 = wick.randint(0, 256, { 1, 3, 8, 8 }, { dtype = "uint8" })
    local r = F.interpolate(u8, { size = { 4, 4 }, mode = "nearest" })
    assert.are.equal("uint8", r.dtype)
    assert.is_true(r:equal(u8[{ {}, {}, { 1, 8, 2 }, { 1, 8, 2 } }]))
    support.assert_error_has(function() return wick.vision.no_such_name end, "wick.vision has no 'no_such_name'")
  end)
  it("an in-place op on a view with its sibling view expanded: the base's gradient (rotate's fill blend)", function()
    local x = wick.rand(1, 4, 2, 2, { requires_grad = true, dtype = "float64" })
    local img, mask = unpack(wick.tensor_split(x * 1, { -1 }, 2))
    img:mul_(mask:expand_as(img))
    img:sum():backward()
    local x2 = x:detach():clone():requires_grad_()
    local y2 = x2 * 1
    (y2[{ {}, { 1, 3 } }] * y2[{ {}, { 4, 4 } }]:expand(1, 3, 2, 2)):sum():backward()
    assert.is_true((x.grad - x2.grad):abs():max():item() < 1e-15)
  end)
end)

describe("the forty-fifth round's lines, part 13 (HF Qwen2-MoE's and RT-DETR's helpers)", function()
  it("torch._dynamo.is_compiling, torch.fx.Proxy and wrap, the deprecated autocast getters", function()
    assert.is_false(wick._dynamo.is_compiling())
    assert.is_false(wick.compiler.is_dynamo_compiling())
    assert.is_false(wick.isinstance(wick.zeros(1), wick.fx.Proxy))
    local f = function() end
    assert.are.equal(f, wick.fx.wrap(f))
    assert.are.equal(wick.get_autocast_dtype("cuda"), wick.get_autocast_gpu_dtype())
    assert.are.equal(wick.get_autocast_dtype("cpu"), wick.get_autocast_cpu_dtype())
    assert.is_false(wick.is_autocast_cpu_enabled())
    support.assert_error_has(function() return wick.fx.symbolic_trace end, "wick.fx has no 'symbolic_trace'")
    support.assert_error_has(function() return wick.fx.wrap(nil) end, "fx.wrap: expected")
  end)
  it("binary cross entropy refuses class labels as its target, as PyTorch; full names itself", function()
    local x = wick.randn(2, 3)
    local t = wick.tensor({ { 1, 0, 1 }, { 0, 0, 1 } }, { dtype = "int64" })
    support.assert_error_has(function() return F.binary_cross_entropy_with_logits(x, t) end,
      "result type float32 can't be cast to the desired output type int64")
    support.assert_error_has(function() return F.binary_cross_entropy(x:sigmoid(), t) end,
      "Found dtype int64 but expected float32")
    assert.is_true(F.binary_cross_entropy_with_logits(x, t:float()):item() > 0)
    support.assert_error_has(function() return wick.full({ 2 }, wick.finfo("float64").min, { dtype = "float32" }) end,
      "full: value cannot be converted to type float without overflow")
  end)
end)

describe("the forty-fifth round's lines, part 14 (sentence-transformers)", function()
  it("fork_rng without a function is a context object entered and left by hand (RandContext)", function()
    local f = wick.random.fork_rng({ enabled = true })
    assert.are.equal(f, f:__enter__())
    local a = wick.rand(3)
    assert.is_false(f:__exit__(nil, nil, nil))
    assert.is_true(a:equal(wick.rand(3)))
    local off = wick.random.fork_rng({ enabled = false })
    off:__enter__()
    local c = wick.rand(3)
    off:__exit__()
    assert.is_false(c:equal(wick.rand(3)))
  end)
  it("normalize, cosine_similarity and pairwise_distance name themselves in their errors", function()
    support.assert_error_has(function() return F.normalize(wick.randn(4, 8), { p = 2, dim = 3 }) end,
      "normalize: dimension 3 out of range")
    support.assert_error_has(function() return F.cosine_similarity(wick.randn(4, 8), wick.randn(4, 8), { dim = 3 }) end,
      "cosine_similarity: dimension 3 out of range")
    support.assert_error_has(function() return F.pairwise_distance(wick.randn(4, 8), wick.randn(3, 8)) end,
      "pairwise_distance: The size of tensor a (4) must match the size of tensor b (3) at non-singleton dimension 1")
    local x = wick.randn(4, 8)
    assert.is_true((F.normalize(x, { dim = -1 }):norm(2, 2) - 1):abs():max():item() < 1e-6)
  end)
end)

describe("the forty-fifth round's lines, part 15 (Meta's llama, HashNeRF)", function()
  it("a decorated method of a wick.Object class binds keywords (@torch.inference_mode() def generate)", function()
    local L = wick.Object:extend("Llama")
    function L:init() end
    L.generate = wick.inference_mode()(function(self, prompt_tokens, max_gen_len, temperature, top_p)
      return temperature, top_p, wick.is_grad_enabled()
    end)
    assert.are.same({ 0, 0.5, false }, { L():generate({ { 1 } }, 8, { temperature = 0.0, top_p = 0.5 }) })
    support.assert_error_has(function() L():generate({ { 1 } }, 8, { temperatur = 0.0 }) end,
      "got an unexpected keyword argument 'temperatur'")
  end)
  it("arange of an integer tensor is int64, as PyTorch's", function()
    local cube_size = wick.floor(wick.tensor(3.2)):int()
    local r = wick.arange(cube_size + 1)
    assert.are.same({ "int64", { 0, 1, 2, 3 } }, { r.dtype, r:totable() })
    assert.are.equal("int64", wick.arange({ ["end"] = wick.tensor(3, { dtype = "int64" }) }).dtype)
    assert.are.equal("float32", wick.arange(0, wick.tensor(4, { dtype = "int64" }), 0.5).dtype)
    assert.are.equal("float32", wick.arange(wick.tensor(4.0)).dtype)
    assert.are.equal("float64", wick.arange(wick.tensor(3, { dtype = "int64" }), { dtype = "float64" }).dtype)
    assert.are.equal("float32", wick.arange(5).dtype)
  end)
end)

describe("the forty-fifth round's lines, part 16 (HF DPT's dump with extra tensors)", function()
  it("a stray key beside PyTorch's 0-based names is only unexpected (no merge hint)", function()
    local m = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    local sd = { ["0.weight"] = wick.zeros(2, 2), ["0.bias"] = wick.zeros(2), ["1.weight"] = wick.zeros(2, 2),
      ["1.bias"] = wick.zeros(2), pix = wick.zeros(3) }
    local ok, err = pcall(function() return m:load_state_dict(sd) end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find('Unexpected key(s) in state_dict: "pix".', 1, true))
    assert.is_nil(tostring(err):find("merged into model:state_dict", 1, true))
    m:load_state_dict(sd, { strict = false })
    assert.are.equal(0, m[2].weight:abs():sum():item())
  end)
end)

describe("the forty-fifth round's lines, part 17 (DPT's hidden_states[::-1])", function()
  it("wick.reversed is Python's reversed", function()
    assert.are.same({ 3, 2, 1 }, wick.list(wick.reversed({ 1, 2, 3 })))
    local l = nn.ModuleList({ nn.ReLU(), nn.Tanh() })
    local seen = {}
    for m in wick.reversed(l) do seen[#seen + 1] = m end
    assert.are.same({ l[2], l[1] }, seen)
    support.assert_error_has(function() return wick.reversed(3) end, "reversed: expected")
  end)
end)

describe("the forty-fifth round's lines, part 18 (HF SpeechT5's eager mask)", function()
  it("where(mask, 0-dim tensor, number): the number is PyTorch's wrapped number", function()
    local m = wick.tensor({ true, false })
    local mask = wick.where(m, wick.zeros({}, { dtype = "float32" }), wick.finfo("float32").min)
    assert.are.equal("float32", mask.dtype)
    assert.are.equal(wick.finfo("float32").min, mask[2]:item())
    assert.are.equal("float16", wick.where(m, wick.zeros({}, { dtype = "float16" }), -1.5).dtype)
    assert.are.equal(wick.get_default_dtype(), wick.where(m, 0.5, -1.5).dtype)
    assert.are.equal("int64", wick.where(m, 1, 0).dtype)
    assert.are.equal("float32", wick.where(m, wick.zeros(2, { dtype = "int64" }), 0.5).dtype)
    -- finfo(float64).min into float32 is -inf, as PyTorch's (the number rounded once)
    assert.are.equal(-math.huge, wick.where(m, wick.zeros({}, { dtype = "float32" }), wick.finfo("float64").min)[2]:item())
    local attn = wick.randn(2, 2, 2)
    local em = wick.where(m:view(1, 1, 2):expand(2, 2, 2), wick.zeros({}, { dtype = attn.dtype }), wick.finfo(attn.dtype).min)
    assert.are.same({ 2, 2, 3 }, { unpack(wick.bmm((attn + em):softmax(-1), wick.randn(2, 2, 3)).shape) })
  end)
end)

describe("the forty-fifth round's lines, part 19 (torchmetrics' binary_auroc with max_fpr)", function()
  it("lerp's dtypes are PyTorch's: a 0-dim weight of another dtype beside 0-dim ends, else one dtype", function()
    local r = wick.lerp(wick.tensor(0.0, { dtype = "float32" }), wick.tensor(1.0, { dtype = "float32" }),
      wick.tensor(0.3, { dtype = "float64" }))
    assert.are.same({ "float64", 0.3 }, { r.dtype, r:item() })
    assert.are.equal("float32", wick.lerp(wick.zeros(3), wick.ones(3), wick.tensor(0.3, { dtype = "float64" })).dtype)
    support.assert_error_has(function() return wick.lerp(wick.zeros(3), wick.ones(3), wick.full({ 3 }, 0.3, { dtype = "float64" })) end,
      "expected dtype float32 for `weight` but got dtype float64")
    support.assert_error_has(function() return wick.lerp(wick.zeros(3), wick.ones(3, { dtype = "float64" }), 0.3) end,
      "expected dtype float32 for `end` but got dtype float64")
  end)
end)

describe("the forty-fifth round's lines, part 20 (smp's DiceLoss(_Loss), pytorch-metric-learning's kwargs)", function()
  it("nn.modules.loss._Loss and _WeightedLoss are the losses' bases", function()
    local DiceLoss = nn.modules.loss._Loss:extend("DiceLoss")
    function DiceLoss:init(mode) DiceLoss.super.init(self); self.mode = mode end
    local d = DiceLoss("binary")
    assert.are.same({ "mean", "binary" }, { d.reduction, d.mode })
    assert.is_true(wick.isinstance(d, nn._Loss))
    assert.is_true(wick.isinstance(nn.MSELoss(), nn.modules.loss._Loss))
    assert.is_true(wick.isinstance(nn.CrossEntropyLoss(), nn._WeightedLoss))
    assert.is_false(wick.isinstance(nn.MSELoss(), nn._WeightedLoss))
    local W = nn._WeightedLoss:extend("W")
    function W:init(w) W.super.init(self, w, nil, nil, "sum") end
    local w = W(wick.ones(3))
    assert.are.equal("sum", w.reduction)
    assert.is_not_nil(w:state_dict().weight)
    assert.are.equal("none", nn._Loss({ reduction = "none" }).reduction)
  end)
  it("a first table naming none of the declared names goes to the options when the first is optional", function()
    local Base = nn.Module:extend("Base", { "distance?" })
    function Base:init(distance) self.distance = distance end
    local Loss = Base:extend("Loss", { "margin?", "swap?" })
    function Loss:init(margin, swap, kwargs)
      Loss.super.init(self, kwargs)
      self.margin = margin == nil and 0.05 or margin
    end
    local l = Loss({ distance = "cos" })
    assert.are.same({ 0.05, "cos" }, { l.margin, l.distance })
    assert.are.same({ 0.2, "cos" }, { Loss({ margin = 0.2, distance = "cos" }).margin, Loss({ margin = 0.2, distance = "cos" }).distance })
    -- a required first argument still takes a table as its value (HF's config)
    local M = nn.Module:extend("M", { "config" })
    function M:init(config, kwargs) self.config = config end
    local cfg = { hidden = 4 }
    assert.are.equal(cfg, M(cfg).config)
  end)
end)

describe("the forty-fifth round's lines, part 21 (float32 sin beside a large neighbour)", function()
  it("an element's sin and cos never depend on the other lanes of its vector", function()
    local x = wick.tensor({ 0.327435017, 1e5, 0 / 0, 1 / 0, -3.5 }, { dtype = "float32" })
    for _, f in ipairs({ "sin", "cos" }) do
      local y = x[f](x)
      for i = 1, 5 do
        local one = x[i]:clone()
        local a, b = y[i]:item(), one[f](one):item()
        assert.is_true(a == b or (a ~= a and b ~= b), f .. " " .. i)
      end
    end
  end)
end)

describe("the forty-fifth round's lines, part 22 (rotary-embedding-torch's tests)", function()
  it("torch.testing.assert_close", function()
    wick.testing.assert_close(wick.ones(2), wick.ones(2) + 1e-7)
    wick.testing.assert_close(wick.ones(2), wick.ones(2) * 1.001, { atol = 1e-2, rtol = 0 })
    wick.testing.assert_close(wick.tensor({ 0 / 0, 1 / 0 }), wick.tensor({ 0 / 0, 1 / 0 }), { equal_nan = true })
    support.assert_error_has(function() wick.testing.assert_close(wick.ones(2, 3), wick.ones(2, 3) * 1.001) end,
      "Mismatched elements: 6 / 6 (100.0%)")
    support.assert_error_has(function() wick.testing.assert_close(wick.ones(2), wick.ones(2, { dtype = "float64" })) end,
      "The values for attribute 'dtype' do not match: float32 != float64.")
    support.assert_error_has(function() wick.testing.assert_close(wick.ones(2), wick.ones(3)) end,
      "The values for attribute 'shape' do not match")
    support.assert_error_has(function() wick.testing.assert_close(1.0, 1.1) end, "Scalars are not close!")
    support.assert_error_has(function() wick.testing.assert_close(wick.tensor({ 0 / 0 }), wick.tensor({ 0 / 0 })) end,
      "Tensor-likes are not close!")
    support.assert_error_has(function() wick.testing.assert_close(wick.ones(2), wick.ones(2), { atol = 1 }) end,
      "Both 'rtol' and 'atol' must be either specified or omitted")
    wick.testing.assert_allclose(wick.ones(2), wick.ones(2, { dtype = "float64" }))
  end)
end)

describe("the forty-fifth round's lines, part 23 (nanochat's Muon)", function()
  it("an optimizer of one's own with a nesterov option takes no SGD rule", function()
    local Opt = wick.optim.Optimizer:extend("Muon")
    function Opt:init(params) Opt.super.init(self, params, { lr = 0.02, momentum = 0.95, nesterov = true, ns_steps = 5 }) end
    local o = Opt({ nn.Parameter(wick.randn(2, 2)) })
    assert.is_true(o.param_groups[1].nesterov)
    support.assert_error_has(function() return wick.optim.SGD({ nn.Parameter(wick.randn(2)) }, { lr = 0.1, nesterov = true }) end,
      "Nesterov momentum requires a momentum and zero dampening")
  end)
end)

describe("the forty-fifth round's lines, part 24 (titans' neural memory)", function()
  it("torch.func.grad under no_grad differentiates a parameter (forward_inference's store)", function()
    local p = nn.Parameter(wick.tensor({ 1., 2., 3. }))
    local sq = function(w) return (w * w):sum() end
    local g = wick.no_grad(function() return wick.func.grad(sq)(p) end)
    assert.are.same({ 2, 4, 6 }, g:totable())
    local v = wick.no_grad(function() return wick.func.vmap(wick.func.grad(sq))(wick.ones(2, 3):requires_grad_()) end)
    assert.are.same({ { 2, 2, 2 }, { 2, 2, 2 } }, v:totable())
  end)
  it("an OrderedDict is a tree for torch.func; einops repeats to a 0 length", function()
    local lin = nn.Linear(3, 2, { bias = false })
    local od = wick.OrderedDict(lin:named_parameters())
    local f = function(params, x) return wick.func.functional_call(lin, params, x):sum() end
    local g = wick.func.grad(f)(od, wick.ones(4, 3))
    assert.are.same({ "weight" }, wick.list(g:keys()))
    assert.are.same({ { 4, 4, 4 }, { 4, 4, 4 } }, g.weight:totable())
    assert.are.same({ 2, 0, 3 }, { unpack(wick.einops.repeat_(wick.zeros(3), "d -> b n d", { b = 2, n = 0 }).shape) })
  end)
end)

describe("the forty-seventh round's lines, part 1 (normflows' TwoMoons)", function()
  it("a bad dim of a norm or argsort names the function called", function()
    local z = wick.randn(8, 2)
    support.assert_error_has(function() return wick.norm(z, { dim = 0 }) end, "norm: expected a dimension")
    support.assert_error_has(function() return wick.linalg.vector_norm(z, { dim = 3 }) end,
      "linalg.vector_norm: dimension 3 out of range")
    support.assert_error_has(function() return wick.linalg.norm(z, 2, { 1, 3 }) end, "linalg.norm: dimension 3 out of range")
    support.assert_error_has(function() return z:argsort(0) end, "argsort: expected a dimension")
    support.assert_error_has(function() return z:argsort({ dim = 3 }) end, "argsort: dimension 3 out of range")
    assert.are.same({ 1, 3, 2 }, wick.tensor({ 3, 1, 2 }):argsort({ descending = true }):totable())
    assert.is_true(math.abs(z:norm(2, { 1, 2 }):item() - z:norm():item()) < 1e-6)
  end)
end)

describe("the forty-seventh round's lines, part 2 (neuraloperator, deepxde, s4)", function()
  it("rfft's bins at 0 and n/2 are real; complex tensors take normal_, uniform_ and nn.init fills", function()
    local X = wick.fft.rfft(wick.arange(8):double())
    assert.are.equal(0, X.imag[1]:item())
    assert.are.equal(0, X.imag[5]:item())
    assert.are.equal(math.pi, X:angle()[5]:item())
    wick.manual_seed(3)
    local c = wick.empty(3, { dtype = "complex128" }):normal_(1, 2)
    wick.manual_seed(3)
    local d = wick.empty(6, { dtype = "float64" }):normal_(1, 2 / math.sqrt(2))
    assert.are.same(d:totable(), c:view_as_real():flatten():totable())
    local u = wick.empty(1000, { dtype = "complex64" }):uniform_(-1, 3)
    assert.is_true(u.imag:min():item() >= -1 and u.imag:max():item() < 3 and u.imag:std():item() > 0.5)
    local w = nn.init.kaiming_uniform_(wick.zeros(3, 4, { dtype = "complex64" }))
    assert.is_true(w.imag:abs():max():item() > 0)
    nn.init.xavier_normal_(w)
    support.assert_error_has(function() return nn.init.trunc_normal_(w) end, "expected a floating-point tensor")
    support.assert_error_has(function() return nn.Parameter(wick.zeros(2, { dtype = "complex64" })):normal_() end,
      "a leaf tensor that requires grad")
  end)
  it("nn.parameter.Parameter, wick.getattr / setattr, and autograd.grad's hint", function()
    local p = nn.parameter.Parameter(wick.tensor(0.0))
    assert.is_true(wick.isinstance(p, nn.Parameter))
    assert.is_nil(wick.getattr(p, "_optim", nil))
    wick.setattr(p, "_optim", { weight_decay = 0 })
    assert.are.equal(0, wick.getattr(p, "_optim", nil).weight_decay)
    support.assert_error_has(function() return wick.getattr(p, "_nope") end, "getattr: Tensor has no attribute '_nope'")
    local M = nn.Module:extend("M")
    function M:init() wick.setattr(self, "lin", nn.Linear(2, 2)) end
    assert.are.equal(2, #M():parameters())
    local x = wick.randn(3, { requires_grad = true })
    support.assert_error_has(function() return wick.autograd.grad(x * 2, x) end, "autograd.grad's grad_outputs")
  end)
end)

describe("the forty-seventh round's lines, part 3 (diffusers' ControlNet)", function()
  it("repeat_interleave checks its output_size hint", function()
    local m = wick.ones(2, 1, 3)
    assert.are.same({ 4, 1, 3 }, { unpack(m:repeat_interleave(2, { dim = 1, output_size = 4 }).shape) })
    support.assert_error_has(function() return m:repeat_interleave(2, { dim = 1, output_size = 5 }) end,
      "Invalid output_size, expected 4 but got 5")
    support.assert_error_has(function()
      return m:repeat_interleave(wick.tensor({ 2, 2 }, { dtype = "int64" }), { dim = 1, output_size = 3 })
    end, "expected 4 but got 3")
  end)
end)

describe("the forty-seventh round's lines, part 4 (Grounding DINO)", function()
  it("max(dim)'s input may change in place before backward; logit takes eps by name", function()
    local x = wick.tensor({ { 1., 3., 2. }, { 5., 4., 0. } }, { requires_grad = true })
    local y = x * 1
    local m = y:max(2, true)
    y:masked_fill_(y:gt(2), -math.huge)
    local n = y:min(1)
    m:sum():backward()
    assert.are.same({ { 0, 1, 0 }, { 1, 0, 0 } }, x.grad:totable())
    local z = x * 1
    local top = z:max()
    z:add_(1)
    support.assert_error_has(function() top:backward() end, "modified by an inplace operation")
    local p = wick.tensor({ 0, 0.5, 1 })
    assert.are.same(p:logit(1e-5):totable(), wick.special.logit(p, { eps = 1e-5 }):totable())
    assert.is_true(math.abs(p:logit({ eps = 1e-5 })[1]:item() + 11.5129) < 1e-3)
    support.assert_error_has(function() return p:logit({ ep = 1 }) end, "logit: unknown option 'ep'")
    assert.are.equal(3, n:numel())
  end)
  it("wick's own draws do not go through a replaced wick.rand / wick.randn", function()
    local rand, randn = wick.rand, wick.randn
    wick.rand = function() error("replaced") end
    wick.randn = function() error("replaced") end
    local ok, err = pcall(function()
      nn.Linear(2, 2)
      wick.empty(3):uniform_()
      wick.empty(3):normal_()
      F.dropout(wick.ones(4), { p = 0.5, training = true })
      nn.init.trunc_normal_(wick.empty(2, 2))
    end)
    wick.rand, wick.randn = rand, randn
    assert.is_true(ok, err)
  end)
end)

describe("the forty-seventh round's lines, part 5 (HF time-series heads)", function()
  it("Embedding(n, d, _freeze=True) makes a frozen table", function()
    local e = nn.Embedding(4, 3, { _freeze = true })
    assert.is_false(e.weight.requires_grad)
    assert.are.equal(1, #e:parameters())
    assert.is_true(nn.Embedding(4, 3).weight.requires_grad)
  end)
  it("a distribution subclass's _lazy functions are its properties, also through Independent", function()
    local D = wick.distributions
    local AT = D.TransformedDistribution:extend("AffineTransformed")
    function AT:init(b, loc, scale)
      self.loc, self.scale = loc, scale
      AT.super.init(self, b, { D.AffineTransform(loc, scale) })
    end
    function AT._lazy.mean(d) return d.base_dist.mean * d.scale + d.loc end
    local d = AT(D.Normal(wick.zeros(3), wick.ones(3)), wick.ones(3), wick.ones(3) * 2)
    assert.are.same({ 1, 1, 1 }, d.mean:totable())
    assert.are.same({ 1, 1, 1 }, D.Independent(d, 1).mean:totable())
    assert.is_nil(rawget(D.TransformedDistribution._lazy, "mean"))
  end)
end)

describe("the forty-seventh round's lines, part 6 (KGE, PyKEEN, pytorch3d)", function()
  it("an empty dict in a file loads as an OrderedDict, and a loaded checkpoint prints as Python's", function()
    local path = os.tmpname()
    wick.save({ a = wick.OrderedDict(), b = {}, c = { 1, 2 }, d = wick.OrderedDict({ { "lr", 0.1 }, { "name", "x" } }) }, path)
    local r = wick.load(path)
    os.remove(path)
    assert.is_true(wick.isinstance(r.a, wick.OrderedDict))
    local n = 0
    for _ in r.a:items() do n = n + 1 end
    assert.are.equal(0, n)
    assert.is_nil(getmetatable(r.b))
    assert.are.equal("OrderedDict([('a', OrderedDict([])), ('b', {}), ('c', [1, 2]), ('d', OrderedDict([('lr', 0.1), ('name', 'x')]))])",
      tostring(r))
    assert.are.equal("OrderedDict([('o', {'k': [1, {'z': true}]})])", tostring(wick.OrderedDict({ { "o", { k = { 1, { z = true } } } } })))
  end)
  it("nn.init takes the tensor by name; wick.complex takes real and imag by name", function()
    local w = wick.zeros(2, 3)
    nn.init.uniform_({ tensor = w, a = 1, b = 2 })
    assert.is_true(w:min():item() >= 1)
    nn.init.constant_{ tensor = w, val = 3 }
    assert.are.equal(18, w:sum():item())
    support.assert_error_has(function() return nn.init.normal_({ tensor = w, mu = 1 }) end, "unknown option 'mu'")
    local z = wick.complex({ real = wick.zeros(2), imag = wick.ones(2) })
    assert.are.same({ 1, 1 }, z.imag:totable())
    assert.are.same({ 1, 1 }, wick.complex(wick.zeros(2), { imag = wick.ones(2) }).imag:totable())
    support.assert_error_has(function() return wick.complex(wick.zeros(2)) end, "argument 'imag'")
  end)
  it("sparse.FloatTensor keeps a values tensor's dtype; Object:extend takes a name only", function()
    local idx = wick.tensor({ { 1, 2 }, { 2, 1 } }, { dtype = "int64" })
    local L = wick.sparse.FloatTensor(idx, wick.tensor({ 0.1, 0.2 }, { dtype = "float64" }), { 2, 2 })
    assert.are.equal("float64", L.dtype)
    assert.are.equal(0.1, L[1][2]:item())
    assert.are.equal("float64", wick.sparse.DoubleTensor(idx, { 1, 2 }, { 2, 2 }).dtype)
    assert.are.same({ 2, 3 }, { unpack(wick.sparse.FloatTensor(2, 3).shape) })
    support.assert_error_has(function() return wick.Object:extend("T", { "x" }) end, "takes the class name only")
  end)
end)

describe("the forty-seventh round's lines, part 7 (torchsde, Informer, StyleGAN3, BLIP-2)", function()
  it("an autograd.Function's gradient for a non-tensor argument must be nil", function()
    local x = wick.ones(3, { requires_grad = true })
    local G = wick.autograd.Function:extend("G")
    function G.forward(ctx, obj, v) return v * 2 end
    function G.backward(ctx, g) return g * 100, g * 2 end
    support.assert_error_has(function() G.apply({ a = 1 }, x):sum():backward() end,
      "GBackward returned a gradient different than nil at position 1")
    local H = wick.autograd.Function:extend("H")
    function H.forward(ctx, obj, v) return v * 2 end
    function H.backward(ctx, g) return nil, g * 2 end
    H.apply("s", x):sum():backward()
    assert.are.same({ 2, 2, 2 }, x.grad:totable())
  end)
  it("cumsum and cumprod with a dtype differentiate in the input's dtype", function()
    local x = wick.tensor({ 0.1, 0.2, 0.3, 0.7 }, { dtype = "float64", requires_grad = true })
    local g = wick.tensor({ 1 / 3, 1 / 7, 1 / 11, 1 / 13 }, { dtype = "float64" })
    x:cumsum(1, { dtype = "float32" }):backward(g:float())
    local want = g:flip(1):cumsum(1):flip(1) -- the reverse sum, in float64 from the float32 gradient's values
    local g32 = g:float():double()
    assert.are.equal(g32:flip(1):cumsum(1):flip(1)[1]:item(), x.grad[1]:item())
    assert.is_true(math.abs(want[1]:item() - x.grad[1]:item()) < 1e-7)
    local y = wick.tensor({ 0.1, 0.2, 0.3, 0.7 }, { dtype = "float64", requires_grad = true })
    y:cumprod(1, { dtype = "float32" }):backward(g:float())
    assert.are.equal("float64", y.grad.dtype)
  end)
  it("kaiser_window; repeat takes an integer tensor as a size; zip of one list gives 1-tuples; NegativeBinomial by name", function()
    local w = wick.kaiser_window(12, { periodic = false, beta = 3.0, dtype = "float64" })
    assert.is_true(math.abs(w[1]:item() - 0.2048847564) < 1e-9 and math.abs(w[6]:item() - 0.9899941443) < 1e-9)
    assert.is_true(math.abs(wick.kaiser_window(6, { dtype = "float64" })[1]:item() - 5.2773441320e-05) < 1e-13)
    local G = wick.min(wick.as_tensor(4, { dtype = "int64" }), wick.as_tensor(2, { dtype = "int64" }))
    local y = wick.randn(2, 1, 1, 1)
    assert.are.same({ 4, 1, 4, 4 }, { unpack(y["repeat"](y, G, 1, 4, 4).shape) })
    local l1 = wick.list(wick.zip({ "a", "b" }))
    assert.are.same({ { "a" }, { "b" } }, l1)
    local D = wick.distributions
    local nb = D.NegativeBinomial({ total_count = wick.tensor({ 2.0 }), logits = wick.tensor({ 0.1 }) })
    assert.is_true(math.abs(nb.mean:item() - 2 * math.exp(0.1)) < 1e-6)
  end)
end)

describe("the forty-seventh round's lines, part 8 (GPT-OSS under gradient checkpointing)", function()
  local ckpt = wick.utils.checkpoint.checkpoint
  it("use_reentrant=False records fn whole: a tensor it keeps elsewhere has its history", function()
    local w = nn.Parameter(wick.tensor({ 1.0, 2.0, 3.0 }, { dtype = "float64" }))
    local x = wick.tensor({ 0.5, -1.0, 2.0 }, { dtype = "float64", requires_grad = true })
    local rec, calls = nil, 0
    local function f(h)
      calls = calls + 1
      local y = (h * w):sin()
      rec = y:sum() -- (HF's OutputRecorder keeping the router logits)
      return y:exp() * 2
    end
    local out = ckpt(f, x, { use_reentrant = false })
    assert.is_true(rec.requires_grad)
    assert.are.equal(1, calls);
    (out:sum() + rec):backward()
    assert.are.equal(2, calls) -- run again once, by the backward
    local w2 = nn.Parameter(wick.tensor({ 1.0, 2.0, 3.0 }, { dtype = "float64" }))
    local x2 = wick.tensor({ 0.5, -1.0, 2.0 }, { dtype = "float64", requires_grad = true })
    local y = (x2 * w2):sin();
    ((y:exp() * 2):sum() + y:sum()):backward()
    assert.are.same(w2.grad:totable(), w.grad:totable())
    assert.are.same(x2.grad:totable(), x.grad:totable())
    local g = wick.autograd.grad(ckpt(f, x, { use_reentrant = false }):sum(), x)[1]
    assert.is_true((g - (x2 * w2):cos():mul((x2 * w2):sin():exp() * 2) * w2):abs():max():item() < 1e-12)
  end)
  it("keeps no activations; dropout draws the same again; other work when run again is an error", function()
    local w = nn.Parameter(wick.randn(200, 200))
    local x = wick.randn(16, 200, { requires_grad = true })
    local function f(h) return h:matmul(w):tanh():matmul(w):tanh():sum() end
    collectgarbage(); collectgarbage()
    local base = wick.memory_stats()["allocated_bytes.all.current"]
    local o = ckpt(f, x, { use_reentrant = false })
    collectgarbage(); collectgarbage()
    assert.is_true(wick.memory_stats()["allocated_bytes.all.current"] - base < 16 * 200 * 4) -- (f itself keeps two)
    o:backward()
    local model = nn.Sequential(nn.Linear(3, 8), nn.Dropout(0.5), nn.Tanh(), nn.Linear(8, 2))
    local inp = wick.randn(4, 3)
    wick.manual_seed(1)
    ckpt(model, inp, { use_reentrant = false }):sum():backward()
    local g1 = model[1].weight.grad:clone()
    model:zero_grad()
    wick.manual_seed(1)
    model(inp):sum():backward()
    assert.are.same(model[1].weight.grad:totable(), g1:totable())
    local k = 0
    local function g(h) k = k + 1; if k == 1 then return (h * h):exp() end return h:exp() end
    local o3 = ckpt(g, x, { use_reentrant = false })
    support.assert_error_has(function() o3:sum():backward() end, "saved 1 tensors for backward when run again, 3 the first time")
    local o4 = ckpt(f, x, { use_reentrant = false })
    support.assert_error_has(function() return wick.autograd.grad(o4, x, { create_graph = true }) end,
      "create_graph through a checkpoint with use_reentrant = false")
  end)
end)

describe("the forty-seventh round's lines, part 9 (Florence-2)", function()
  it("a static function takes every argument by name, the first's too", function()
    local P = nn.Module:extend("P")
    function P.get_sinusoid_embeddings(max_positions, embed_dim) return max_positions, embed_dim end
    function P:init() end
    local p = P()
    assert.are.same({ 3, 4 }, { p.get_sinusoid_embeddings({ max_positions = 3, embed_dim = 4 }) })
    assert.are.same({ 3, 4 }, { p.get_sinusoid_embeddings(3, { embed_dim = 4 }) })
    local t = { max_positions = 3, other = 4 }
    assert.are.equal(t, (p.get_sinusoid_embeddings(t))) -- (a table with another name is a value)
  end)
end)

describe("the forty-seventh round's lines, part 10 (GRU4Rec, F5-TTS)", function()
  it("set_ keeps the dtype (t.data = src takes it); share_memory_ is t", function()
    local lin = nn.Linear(3, 2, { dtype = "float64" })
    support.assert_error_has(function()
      wick.no_grad(function() lin.weight:set_(wick.ones(2, 3, { dtype = "float32" })) end)
    end, "Could not set tensor of type float32 to a tensor of type float64")
    lin.weight.data = wick.ones(2, 3, { dtype = "float32" })
    assert.are.equal("float32", lin.weight.dtype)
    local m = nn.Linear(2, 2)
    m:load_state_dict({ weight = wick.ones(2, 2, { dtype = "float64" }), bias = wick.zeros(2, { dtype = "float64" }) },
      { assign = true })
    assert.are.equal("float64", m.weight.dtype)
    local t = wick.zeros(3)
    assert.is_false(t:is_shared())
    assert.are.equal(t, t:share_memory_())
    assert.is_true(t:is_shared())
    support.assert_error_has(function() return t:share_memory_({ copy = true }) end, "share_memory_: unknown option 'copy'")
  end)
  it("a misspelt keyword beside good ones gets the near name too", function()
    local Net = nn.Module:extend("Net")
    function Net:init() end
    function Net:forward(x, mask, drop_text) return x end
    local net = Net()
    support.assert_error_has(function() return net(wick.zeros(1), { mask = wick.ones(1), drop_txt = true }) end,
      "unexpected keyword argument 'drop_txt' (did you mean 'drop_text'? its parameters: x, mask, drop_text)")
  end)
end)

describe("the forty-seventh round's lines, part 11 (Gemma3's GradientCheckpointingLayer)", function()
  it("a class's own __call__ calling its base's with keywords runs once", function()
    local entered = 0
    local Base = nn.Module:extend("Base")
    function Base:__call__(...) entered = entered + 1; return Base.super.__call__(self, ...) end
    local L = Base:extend("L")
    function L:forward(x, scale) return x * scale end
    assert.are.same({ 3, 3 }, L()(wick.ones(2), { scale = 3 }):totable())
    assert.are.equal(1, entered)
  end)
end)

describe("the forty-seventh round's lines, part 12 (SoundStream's complex STFT discriminator)", function()
  it("F.conv2d and F.conv1d of complex tensors: (a + bi)(c + di) as four real convolutions", function()
    local x = wick.randn(2, 3, 5, 6, { dtype = "complex128" })
    local w = wick.randn(4, 3, 3, 3, { dtype = "complex128" })
    local b = wick.randn(4, { dtype = "complex128" })
    local y = F.conv2d(x, w, b, { padding = 1 })
    assert.are.same({ 2, 4, 5, 6 }, { unpack(y.shape) })
    -- one output by hand: the sum over channels and the 3x3 window at the centre
    local acc = b[2]
    for c = 1, 3 do for i = 1, 3 do for j = 1, 3 do acc = acc + x[1][c][1 + i][2 + j] * w[2][c][i][j] end end end
    local got = y[1][2][3][4]
    assert.is_true((got - acc):abs():item() < 1e-12)
    local xr = wick.randn(1, 1, 4, 4, { dtype = "float64" })
    assert.are.equal(0, (F.conv2d(xr, w[{ { 1, 1 }, { 1, 1 } }]).real - F.conv2d(xr, w[{ { 1, 1 }, { 1, 1 } }].real)):abs():max():item())
    assert.are.same({ 2, 4, 8 }, { unpack(F.conv1d(wick.randn(2, 3, 10, { dtype = "complex128" }), w[{ {}, {}, 1 }]).shape) })
  end)
end)

describe("the forty-seventh round's lines, part 13 (TGN)", function()
  it("a 0-dim bool mask that other entries follow is a new dim of size 1 or 0", function()
    local m = wick.tensor({ { true, true, true } })
    local invalid = m:all({ dim = 2, keepdim = true })
    m[{ invalid:squeeze(), 1 }] = false
    assert.are.same({ { false, false, false } }, m:totable())
    local x = wick.ones(2, 3)
    assert.are.same({ 1, 3 }, { unpack(x[{ wick.tensor(true), 1 }].shape) })
    assert.are.same({ 0, 3 }, { unpack(x[{ wick.tensor(false), 1 }].shape) })
    assert.are.same({ 1, 2 }, { unpack(x[{ wick.tensor(true), {}, 2 }].shape) })
    x[{ wick.tensor(true), 2 }] = 5
    assert.are.same({ { 1, 1, 1 }, { 5, 5, 5 } }, x:totable())
  end)
  it("BCELoss refuses inputs outside [0, 1]; MultiheadAttention returns its dropped weights", function()
    support.assert_error_has(function() return nn.BCELoss()(wick.tensor({ 1.5, 0.3 }), wick.tensor({ 1.0, 0.0 })) end,
      "all elements of input should be between 0 and 1")
    support.assert_error_has(function() return F.binary_cross_entropy(wick.tensor({ 0 / 0 }), wick.tensor({ 1.0 })) end,
      "between 0 and 1")
    wick.manual_seed(0)
    local mha = nn.MultiheadAttention(4, 2, { dropout = 0.5 })
    mha:train()
    local x = wick.randn(5, 3, 4)
    local _, w = mha(x, x, x)
    assert.is_true((w:sum(-1) - 1):abs():max():item() > 1e-3) -- (rows of dropped weights: no longer sums of 1)
    mha:eval()
    _, w = mha(x, x, x)
    assert.is_true((w:sum(-1) - 1):abs():max():item() < 1e-6)
  end)
end)

describe("the forty-seventh round's lines, part 14 (checkpoint's inputs changed afterwards)", function()
  it("an argument written in place after a non-reentrant checkpoint ran is an error at backward", function()
    local x = wick.randn(3, { requires_grad = true })
    local h = x * 1
    local o = wick.utils.checkpoint.checkpoint(function(a) return a:exp() end, h, { use_reentrant = false })
    h:add_(1)
    support.assert_error_has(function() o:sum():backward() end, "argument 1 of the checkpointed function was modified in place")
  end)
end)

describe("the forty-seventh round's lines, part 15 (a checkpoint's second backward)", function()
  it("create_graph through a non-reentrant checkpoint is an error also after a first backward recomputed it", function()
    local x = wick.randn(3, { requires_grad = true, dtype = "float64" })
    local o = wick.utils.checkpoint.checkpoint(function(a) return a:exp() end, x, { use_reentrant = false })
    o:sum():backward({ retain_graph = true })
    support.assert_error_has(function() return wick.autograd.grad(o:sum(), x, { create_graph = true }) end,
      "create_graph through a checkpoint")
    x.grad = nil
    o:sum():backward()
    assert.is_true((x.grad - x:detach():exp()):abs():max():item() < 1e-15)
  end)
end)

describe("the forty-eighth round's lines, part 1 (embedding_bag's weights dtype)", function()
  it("per_sample_weights of another dtype than the table is an error that names both", function()
    local w = wick.randn(6, 3, { dtype = "float64" })
    local idx, off = wick.tensor({ 1, 2 }, { dtype = "int64" }), wick.tensor({ 1 }, { dtype = "int64" })
    support.assert_error_has(function()
      return wick.nn.functional.embedding_bag(idx, w, off, { mode = "sum", per_sample_weights = wick.tensor({ 1, 2 }) })
    end, "per_sample_weights is float32 but weight is float64")
    local out = wick.nn.functional.embedding_bag(idx, w, off,
      { mode = "sum", per_sample_weights = wick.tensor({ 1, 2 }, { dtype = "float64" }) })
    assert.is_true((out[1] - (w[1] + 2 * w[2])):abs():max():item() < 1e-15)
  end)
end)

describe("the forty-eighth round's lines, part 2 (subclasses of the private bases)", function()
  it("_BatchNorm's init makes the parameters and buffers, and its forward asks _check_input_dim", function()
    local BNSwish = nn._BatchNorm:extend("BNSwish")
    function BNSwish:init(n) BNSwish.super.init(self, n, 1e-5, 0.05, true, true) end
    local m = BNSwish(4)
    assert.are.equal(2, #m:parameters())
    local names = {}
    for name in pairs(m:state_dict()) do names[#names + 1] = name end
    table.sort(names)
    assert.are.same({ "bias", "num_batches_tracked", "running_mean", "running_var", "weight" }, names)
    assert.are.equal(0.05, m.momentum)
    support.assert_error_has(function() return m(wick.randn(2, 4)) end, "BNSwish:_check_input_dim(input)")
    function BNSwish:_check_input_dim() end
    m:double()
    local x = wick.randn(8, 4, { dtype = "float64" })
    local y = m(x)
    assert.are.equal(1, m.num_batches_tracked:item())
    local z = (x - x:mean(1)) / (x:var(1, { unbiased = false }) + 1e-5):sqrt()
    assert.is_true((y - z):abs():max():item() < 1e-12)
    assert.is_true((m.running_mean - x:mean(1) * 0.05):abs():max():item() < 1e-15)
  end)
  it("_InstanceNorm's forward asks _get_no_batch_dim, and _ConvNd's init makes the weight", function()
    local I = nn._InstanceNorm:extend("I")
    function I._get_no_batch_dim() return 2 end
    local m = I(3, { affine = true })
    assert.are.equal(2, #m:parameters())
    assert.are.same({ 2, 3, 4 }, m(wick.randn(2, 3, 4)).shape)
    local C = nn._ConvNd:extend("C")
    function C:init(i, o, k) C.super.init(self, i, o, { k, k }, { 1, 1 }, { 0, 0 }, { 1, 1 }, true, { 0, 0 }, 1, false, "zeros") end
    local c = C(3, 4, 2)
    assert.are.same({ 3, 4, 2, 2 }, c.weight.shape)
    assert.is_nil(c.bias)
    assert.is_true(c.weight:abs():max():item() <= 1 / math.sqrt(16) + 1e-7)
    support.assert_error_has(function() return nn._ConvNd(3, 4, 2, { 1 }, { 0 }, { 1 }, false, { 0 }, 1, true, "zeros") end,
      "kernel_size must be a table of sizes")
  end)
end)

describe("the forty-eighth round's lines, part 3 (half-precision norms)", function()
  it("group_norm of a bfloat16 or float16 input is computed in float32 and rounded once", function()
    wick.manual_seed(0)
    for _, dt in ipairs({ "bfloat16", "float16" }) do
      local x = (wick.randn(2, 32, 8, 8) * 2 + 0.5):to(dt)
      local got = F.group_norm(x, 32, nil, nil, 1e-6)
      assert.are.equal(dt, got.dtype)
      assert.are.equal(0, got:ne(F.group_norm(x:float(), 32, nil, nil, 1e-6):to(dt)):sum():item())
    end
  end)
  it("float32 parameters on a bfloat16 input give bfloat16 from group_norm, instance_norm and layer_norm", function()
    local x = wick.randn(2, 32, 4, 4):to("bfloat16")
    assert.are.equal("bfloat16", F.group_norm(x, 8, wick.ones(32), wick.zeros(32)).dtype)
    assert.are.equal("bfloat16", F.instance_norm(x, nil, nil, wick.ones(32), wick.zeros(32)).dtype)
    assert.are.equal("bfloat16", nn.Conv2d(32, 8, 1):to("bfloat16")(nn.GroupNorm(32, 32)(x)).dtype)
    local h = wick.randn(2, 4):to("bfloat16"):requires_grad_()
    local ln = nn.LayerNorm(4)
    local y = ln(h)
    assert.are.equal("bfloat16", y.dtype)
    assert.is_true((y:float() - F.layer_norm(h:float(), { 4 })):abs():max():item() < 1e-2)
    y:float():sum():backward()
    assert.are.equal("bfloat16", h.grad.dtype)
    assert.are.equal("float32", ln.weight.grad.dtype)
    support.assert_error_has(function() return F.layer_norm(wick.randn(2, 4), { 4 }, wick.ones(4, { dtype = "float64" })) end,
      "expected weight of dtype float32")
  end)
end)

describe("the forty-eighth round's lines, part 4 (complex constants and powers)", function()
  it("wick.complex takes numbers, and small integer powers are exact as PyTorch's", function()
    local mj = wick.complex(0, -1)
    assert.are.equal("complex64", mj.dtype)
    assert.are.equal("complex128", wick.complex(wick.randn(2, { dtype = "float64" }), 1).dtype)
    local z = wick.complex(wick.tensor(0, { dtype = "float64" }), -1)
    local want = { [-2] = { -1, 0 }, [-1] = { 0, 1 }, [1] = { 0, -1 }, [2] = { -1, 0 }, [3] = { 0, 1 } }
    for l, v in pairs(want) do
      local p = z ^ l
      assert.are.equal(v[1], p.real:item())
      assert.are.equal(v[2], p.imag:item())
    end
    local x = wick.complex(wick.tensor({ 1, 2, 0.3 }, { dtype = "float64" }), wick.tensor({ 0.5, -1, 0.7 }, { dtype = "float64" }))
    x:requires_grad_()
    local y = x ^ 3
    assert.are.same((x * x * x):detach():totable(), y:detach():totable())
    local g = wick.autograd.grad((y * y:conj()).real:sum(), x)[1]
    -- d|x^3|^2 = 6 |x|^4 x (PyTorch's conjugate convention: dL/d re + i dL/d im)
    local a2 = (x * x:conj()).real:detach()
    local want_g = x:detach() * (a2 * a2 * 6)
    assert.is_true((g - want_g):abs():max():item() < 1e-12)
  end)
  it("complex values into a real tensor warn that the imaginary part is dropped", function()
    local real_stderr, messages = io.stderr, {}
    io.stderr = { write = function(_, text) messages[#messages + 1] = text end }
    local ok, err = pcall(function()
      local q = wick.zeros(2)
      q[1] = wick.complex(0, 1)
      q:copy_(wick.complex(wick.ones(2), wick.ones(2)))
      assert.are.same({ 1, 1 }, q:totable())
      local _ = wick.complex(wick.ones(2), wick.ones(2)):to("float64")
      q:copy_(wick.ones(2)) -- (a real source: no warning)
    end)
    io.stderr = real_stderr
    assert(ok, err)
    assert.are.equal(3, #messages)
    for _, m in ipairs(messages) do assert.truthy(m:find("discards the imaginary part", 1, true)) end
  end)
end)

describe("the forty-eighth round's lines, part 5 (in-place shape changes, numbered names)", function()
  it("unsqueeze_ on a leaf that requires grad is PyTorch's in-place error; on a non-leaf it works", function()
    local x = wick.randn(2, 3, { requires_grad = true })
    support.assert_error_has(function() return x:unsqueeze_(1) end, "a leaf tensor that requires grad")
    wick.no_grad(function() x:t_() end)
    assert.are.same({ 3, 2 }, x.shape)
    local y = x * 2
    y:unsqueeze_(1)
    assert.are.same({ 1, 3, 2 }, y.shape)
    y:sum():backward()
    assert.are.same({ 3, 2 }, x.grad.shape)
  end)
  it("a number name past a Sequential's entries is an error, and getattr's default", function()
    local s = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    assert.are.equal(s[2], s["2"])
    support.assert_error_has(function() return s["25"] end, "no entry named '25'")
    assert.are.equal("none", wick.getattr(s, "25", "none"))
  end)
end)

describe("the forty-eighth round's lines, part 6 (a dataset's keywords)", function()
  it("a Dataset or Sampler subclass's init takes PyTorch's keywords", function()
    local DS = wick.data.Dataset:extend("DS")
    function DS:init(data_root, split) self.path = data_root .. "/" .. split end
    function DS:len() return 1 end
    function DS:get(i) return i end
    assert.are.equal("data/train", DS({ data_root = "data", split = "train" }).path)
    assert.are.equal("data/valid", DS("data", { split = "valid" }).path)
    support.assert_error_has(function() return DS({ data_root = "data", splt = "train" }) end,
      "unexpected keyword argument 'splt'")
    local S = wick.data.Sampler:extend("S")
    function S:init(n, shuffle) self.n, self.shuffle = n, shuffle end
    assert.is_true(S({ n = 3, shuffle = true }).shuffle)
  end)
end)

describe("the forty-eighth round's lines, part 7 (cached properties of a plain class)", function()
  it("a function in a wick.Object class's _lazy table runs once at the first read, and subclasses inherit it", function()
    local C = wick.Object:extend("C")
    function C:init(n) self.n = n end
    local calls = 0
    C._lazy = { sq = function(self) calls = calls + 1; return self.n * self.n end }
    function C:double() return 2 * self.n end
    local c = C(3)
    assert.are.equal(9, c.sq)
    assert.are.equal(9, c.sq)
    assert.are.equal(1, calls)
    assert.are.equal(6, c:double())
    assert.is_nil(c.missing)
    local D = C:extend("D")
    D._lazy = { cube = function(self) return self.n ^ 3 end }
    local d = D(2)
    assert.are.equal(4, d.sq)
    assert.are.equal(8, d.cube)
  end)
end)

describe("the forty-eighth round's lines, part 8 (functools.partial)", function()
  it("wick.partial stores arguments and keywords, merges the call's keywords, and is a class for isinstance", function()
    local norm_layer = wick.partial(nn.InstanceNorm2d, { affine = false, track_running_stats = false })
    assert.is_true(wick.isinstance(norm_layer, wick.partial))
    assert.are.equal(nn.InstanceNorm2d, norm_layer.func)
    local m = norm_layer(8, { eps = 1e-3 })
    assert.is_false(m.affine)
    assert.are.equal(1e-3, m.eps)
    assert.are.equal(8, m.num_features)
    local bn = wick.partial(nn.BatchNorm2d, { affine = false })
    assert.is_false(bn(4, { affine = true }).affine == false) -- (the call's keyword wins, as Python's)
    local f = wick.partial(function(a, b, c) return a * 100 + b * 10 + (c or 0) end, 1)
    assert.are.equal(120, f(2))
    assert.are.equal(123, f(2, 3))
    assert.are.same({ n = 1, 1 }, f.args)
    support.assert_error_has(function() return wick.partial(3) end, "expected a function for argument 'func'")
  end)
end)

describe("the forty-eighth round's lines, part 9 (PyTorch's names looked up in a module's state dict)", function()
  it("a 0-based name looked up in m:state_dict() warns once per line; other dicts stay quiet", function()
    local M = nn.Module:extend("M")
    function M:init() self.l = nn.ModuleList({ nn.Linear(2, 2), nn.Linear(2, 2) }) end
    local m = M()
    local real_stderr, messages = io.stderr, {}
    io.stderr = { write = function(_, text) messages[#messages + 1] = text end }
    local ok, err = pcall(function()
      local sd = m:state_dict()
      for _, name in ipairs({ "l.0.weight", "l.0.bias" }) do assert.is_nil(sd[name]) end
      assert.is_false(sd:contains("l.0.weight"))
      assert.is_not_nil(sd["l.1.weight"])
      local other = wick.OrderedDict()
      assert.is_nil(other["l.0.weight"])
    end)
    io.stderr = real_stderr
    assert(ok, err)
    assert.are.equal(2, #messages) -- (the loop's line once, the contains line once)
    assert.truthy(messages[1]:find("state_dict has no 'l.0.weight': wick's module names count from 1", 1, true))
  end)
end)

describe("the forty-eighth round's lines, part 10 (gradients at a NaN input)", function()
  it("relu, relu6, hardtanh, elu, celu, selu, maximum and minimum pass the gradient on at a NaN input, as PyTorch's", function()
    local nan = 0 / 0
    local function grad_of(f, xs)
      local x = wick.tensor(xs, { requires_grad = true, dtype = "float64" })
      f(x):sum():backward()
      return x.grad:totable()
    end
    assert.are.same({ 1, 1, 0, 0 }, grad_of(F.relu, { nan, 1, -1, 0 }))
    assert.are.same({ 1, 1, 0, 0, 0 }, grad_of(F.relu6, { nan, 1, -1, 0, 7 }))
    assert.are.same({ 1, 0, 0, 1, 0 }, grad_of(F.hardtanh, { nan, 1, -1, 0, 7 }))
    assert.are.same({ 1, 1, 1 }, grad_of(F.elu, { nan, 1, 0 }))
    assert.are.same({ 1, 1 }, grad_of(F.celu, { nan, 1 }))
    assert.is_true(math.abs(grad_of(F.selu, { nan })[1] - 1.0507009873554805) < 1e-15)
    -- clamp keeps PyTorch's 0 there (its backward keeps g inside the bounds only)
    assert.are.same({ 0, 1 }, grad_of(function(x) return x:clamp(-1, 1) end, { nan, 0.5 }))
    local a = wick.tensor({ nan, 1, -1, 2 }, { requires_grad = true, dtype = "float64" })
    local b = wick.tensor({ 0, 0, 0, 2 }, { requires_grad = true, dtype = "float64" })
    wick.maximum(a, b):sum():backward()
    assert.are.same({ 1, 1, 0, 0.5 }, a.grad:totable())
    assert.are.same({ 1, 0, 1, 0.5 }, b.grad:totable())
    a.grad, b.grad = nil, nil
    wick.minimum(a, b):sum():backward()
    assert.are.same({ 1, 0, 1, 0.5 }, a.grad:totable())
    assert.are.same({ 1, 1, 0, 0.5 }, b.grad:totable())
  end)
end)

describe("the forty-eighth round's lines, part 11 (an init's all-nil keywords)", function()
  it("a {} after an init's first argument and before its last parameter is an empty keyword call", function()
    local E = nn.Module:extend("E")
    function E:init(a, b, padding_idx, device, dtype) self.a, self.padding_idx = a, padding_idx end
    local factory_kwargs = { device = nil, dtype = nil }
    local e = E(1, 2, factory_kwargs)
    assert.is_nil(e.padding_idx)
    assert.are.equal(1, e.a)
    local F1 = nn.Module:extend("F1")
    function F1:init(cfg) self.cfg = cfg end
    assert.are.same({}, F1({}).cfg) -- (a first argument stays a value: a config)
  end)
end)

describe("the forty-eighth round's lines, part 12 (linspace's steps)", function()
  it("a table given as steps is named as a wrong steps, not read as options", function()
    support.assert_error_has(function() return wick.linspace({ start = 1, ["end"] = 2, steps = { num_bands = 4 } }) end,
      "expected an integer for argument 'steps', got table")
    assert.are.same({ 0, 0.5, 1 }, wick.linspace(0, 1, { steps = 3 }):totable())
  end)
end)

describe("the forty-eighth round's lines, part 13 (complex abs at 0, expand by a 0-dim size)", function()
  it("the gradient of |z| at 0 is g sgn(z): 0 for a finite g, NaN for an infinite one, as PyTorch's", function()
    local re = wick.tensor({ 0, 3 }, { requires_grad = true, dtype = "float64" })
    local im = wick.tensor({ 0, 4 }, { requires_grad = true, dtype = "float64" })
    wick.complex(re, im):abs():sum():backward()
    assert.are.equal(0, re.grad[1]:item())
    assert.is_true(math.abs(re.grad[2]:item() - 0.6) < 1e-15)
    re.grad, im.grad = nil, nil
    wick.complex(re, im):abs():backward(wick.tensor({ math.huge, 1 }, { dtype = "float64" }))
    local g = re.grad:totable()
    assert.is_true(g[1] ~= g[1])
    assert.is_true(math.abs(im.grad[2]:item() - 0.8) < 1e-15)
  end)
  it("expand and broadcast_to take a 0-dim integer tensor as their first size", function()
    local h = wick.tensor(4, { dtype = "int64" })
    assert.are.same({ 4, 6 }, wick.arange(6):unsqueeze(1):expand(h, -1).shape)
    assert.are.same({ 4, 3 }, wick.zeros(1, 3):broadcast_to(h, 3).shape)
    assert.are.same({ 2, 3 }, wick.zeros(3):expand(wick.zeros(2, 3)).shape)
  end)
end)

describe("the forty-eighth round's lines, part 14 (.data of another dtype with a gradient)", function()
  it("p.data = p.data:float() after a float16 step keeps training, the gradient converted", function()
    local c = nn.Conv2d(1, 1, 1)
    c.weight.data = c.weight.data:half()
    c.bias.data = c.bias.data:half()
    c(wick.randn(1, 1, 2, 2):half()):sum():backward()
    local g = c.bias.grad:float()
    c.weight.data = c.weight.data:float()
    c.bias.data = c.bias.data:float()
    assert.are.equal("float32", c.bias.grad.dtype)
    assert.are.equal(g:item(), c.bias.grad:item())
    c(wick.randn(1, 1, 2, 2)):sum():backward()
    assert.are.equal(g:item() + 4, c.bias.grad:item())
    support.assert_error_has(function() c.weight.data = wick.zeros(2) end, "would not fit its new data")
  end)
end)

describe("the forty-eighth round's lines, part 15 (polar's dtypes)", function()
  it("polar refuses integer and mixed dtypes, as PyTorch does", function()
    support.assert_error_has(function() return wick.polar(wick.ones(3, { dtype = "int64" }), wick.ones(3, { dtype = "int64" })) end,
      "expected abs and angle of one dtype, float32 or float64")
    support.assert_error_has(function() return wick.polar(wick.ones(3), wick.ones(3, { dtype = "float64" })) end,
      "got float32 and float64")
    local z = wick.polar(wick.full({ 2 }, 2, { dtype = "float64" }), wick.tensor({ 0, math.pi / 2 }, { dtype = "float64" }))
    assert.are.equal("complex128", z.dtype)
    assert.is_true(math.abs(z.imag[2]:item() - 2) < 1e-15)
  end)
end)

describe("the forty-eighth round's lines, part 16 (a split's table where a tensor goes)", function()
  it("an op given the table split returns says it is one and how to unpack it", function()
    local stats = wick.randn(2, 8, 5)
    local mean = wick.split(stats, 4, { dim = 2 })
    support.assert_error_has(function() return wick.exp(mean) end, "got a table of 2 tensors (split, chunk, unbind and LSTMCell")
    support.assert_error_has(function() return wick.randn_like(mean) end, "got a table of 2 tensors")
    local a, b = unpack(wick.split(stats, 4, { dim = 2 }))
    assert.are.same({ 2, 4, 5 }, b.shape)
    assert.is_true(a:equal(stats:narrow(2, 1, 4)))
  end)
end)

describe("the forty-eighth round's lines, part 17 (compressed sparse rows)", function()
  it("sparse_csr_tensor builds the dense tensor from PyTorch's row offsets; to_sparse_coo and to_sparse_csr return it", function()
    local A = wick.sparse_csr_tensor({ crow_indices = wick.tensor({ 0, 2, 2, 3 }, { dtype = "int64" }),
      col_indices = wick.tensor({ 1, 3, 2 }, { dtype = "int64" }), values = wick.tensor({ 1, 2, 3 }), size = { 3, 3 } })
    assert.are.same({ { 1, 0, 2 }, { 0, 0, 0 }, { 0, 3, 0 } }, A:totable())
    assert.are.equal(A, A:to_sparse_coo())
    assert.are.equal(A, A:to_sparse_csr())
    support.assert_error_has(function()
      return wick.sparse_csr_tensor(wick.tensor({ 0, 3 }, { dtype = "int64" }), wick.tensor({ 1 }, { dtype = "int64" }), wick.tensor({ 1 }))
    end, "crow_indices must rise from 0 to the number of entries (1)")
  end)
end)

describe("the forty-eighth round's lines, part 18 (a static function's **kwargs)", function()
  it("keys naming no parameter of a static function with ... go there, when another key names one", function()
    local M = nn.Module:extend("M")
    function M.f(a, b, c, ...)
      local kw = ...
      return a, b, c, kw and kw.device
    end
    local a, b, c, d = M.f(1, { b = 2, c = 3, device = "cpu" })
    assert.are.same({ 1, 2, 3, "cpu" }, { a, b, c, d })
    local _, value = M.f(1, { device = "cpu" }) -- (no key names a parameter: a value, as before)
    assert.are.equal("cpu", value.device)
  end)
end)

describe("the forty-eighth round's lines, part 19 (a 2-D mask beside an index tensor)", function()
  it("x[{mask2d, idx}] reads and writes the mask's positions with the index along the next dim, as PyTorch's x[m, idx]", function()
    local m = wick.tensor({ { true, false, true }, { false, true, false } })
    local idx = wick.tensor({ 1, 2, 3 }, { dtype = "int64" })
    local y = wick.arange(24):view(2, 3, 4)
    assert.are.same({ 0, 9, 18 }, y[{ m, idx }]:totable())
    local z = wick.arange(24):view(4, 2, 3)
    assert.are.same({ 0, 8, 22 }, z[{ wick.tensor({ 1, 2, 4 }, { dtype = "int64" }), m }]:totable())
    local x = wick.zeros(2, 3, 4)
    x[{ m, idx }] = 1
    assert.are.same({ { 1, 1, 1 }, { 1, 3, 2 }, { 2, 2, 3 } }, x:nonzero():totable())
    local w = wick.randn(2, 3, 4, { requires_grad = true })
    w[{ m, idx }]:sum():backward()
    assert.are.equal(3, w.grad:sum():item())
    support.assert_error_has(function() return x[{ wick.tensor({ { true, false }, { true, true } }), idx }] end,
      "the mask's size 2 at its dim 2 does not match the tensor's 3 at dim 2")
  end)
end)

describe("the forty-ninth round's lines, part 1 (functools.partialmethod)", function()
  it("a class's init or method made with wick.partialmethod puts self first, then the stored arguments and keywords", function()
    local Dropout = nn.Module:extend("Dropout")
    function Dropout:init(r, batch_dim) self.r, self.batch_dim = r, batch_dim end
    local DropoutRowwise = Dropout:extend("DropoutRowwise")
    DropoutRowwise.init = wick.partialmethod(Dropout.init, { batch_dim = -3 })
    local d = DropoutRowwise(0.25)
    assert.are.same({ 0.25, -3 }, { d.r, d.batch_dim })
    assert.is_true(wick.isinstance(d, Dropout))
    local k = DropoutRowwise({ r = 0.5 })
    assert.are.same({ 0.5, -3 }, { k.r, k.batch_dim })
    local over = DropoutRowwise(0.1, { batch_dim = -2 }) -- (the call's keywords over the stored ones, as Python's)
    assert.are.equal(-2, over.batch_dim)
    local T = nn.Module:extend("T")
    function T:scale(a, b, c) return a * 100 + b * 10 + c end
    T.scale12 = wick.partialmethod(T.scale, 1, 2)
    assert.are.equal(123, T():scale12(3))
    support.assert_error_has(function() return wick.partialmethod(42) end, "partialmethod")
  end)
end)

describe("the forty-ninth round's lines, part 2 (repeat_interleave's counts, amax over nothing)", function()
  it("repeat_interleave refuses a float or bool tensor of counts, as PyTorch, rather than truncating it", function()
    support.assert_error_has(function() return wick.tensor({ 4., 8. }):repeat_interleave(wick.tensor({ 1.9, 0.5 })) end,
      "repeats must be an integer tensor, got float32")
    support.assert_error_has(function() return wick.repeat_interleave(wick.tensor({ 4., 8. }), wick.tensor({ true, false })) end,
      "got bool")
    local counts = wick.tensor({ 1, 2 }, { dtype = "int32" })
    assert.are.same({ 4, 8, 8 }, wick.tensor({ 4., 8. }):repeat_interleave(counts):totable())
  end)
  it("amax/amin over an empty dim or an empty tensor name themselves", function()
    support.assert_error_has(function() return wick.zeros(2, 0):amax(2) end, "amax: cannot reduce over dimension 2 of size 0")
    support.assert_error_has(function() return wick.zeros(2, 0, { requires_grad = true }):amin(-1) end, "amin: cannot reduce over dimension 2")
    support.assert_error_has(function() return wick.zeros(0):amin() end, "amin: cannot reduce an empty tensor")
    assert.are.same({ 0 }, wick.zeros(2, 0):amax(1):size())
  end)
end)

describe("the forty-ninth round's lines, part 3 (grid_sample's 2-D kernels)", function()
  local F = nn.functional
  local D = { dtype = "float64" }
  -- the 5-D form (still composed of other ops) with depth 1 reads the same plane: the kernels' reference
  local function through_3d(x, g, o)
    local g3 = wick.cat({ g, wick.zeros(g:size(1), g:size(2), g:size(3), 1, D) }, -1):unsqueeze(2)
    return F.grid_sample(x:unsqueeze(3), g3, o):squeeze(3)
  end
  it("bilinear and nearest, every padding and align_corners: values and both gradients as the composed form", function()
    wick.manual_seed(3)
    for _, mode in ipairs({ "bilinear", "nearest" }) do
      for _, pad in ipairs({ "zeros", "border", "reflection" }) do
        for _, ac in ipairs({ false, true }) do
          local x, g = wick.randn(2, 3, 5, 7, D), wick.rand(2, 4, 6, 2, D) * 3.4 - 1.7
          local o = { mode = mode, padding_mode = pad, align_corners = ac }
          local w = wick.randn(2, 3, 4, 6, D)
          local x1, g1, x2, g2 = x:clone():requires_grad_(), g:clone():requires_grad_(), x:clone():requires_grad_(), g:clone():requires_grad_()
          local y1, y2 = F.grid_sample(x1, g1, o), through_3d(x2, g2, o)
          assert.are.equal("GridSampler2DBackward", tostring(y1.grad_fn))
          ;(y1 * w):sum():backward()
          ;(y2 * w):sum():backward()
          local what = mode .. " " .. pad .. " " .. tostring(ac)
          assert.is_true((y1 - y2):abs():max():item() < 1e-13, what)
          assert.is_true((x1.grad - x2.grad):abs():max():item() < 1e-13, what)
          assert.is_true((g1.grad - g2.grad):abs():max():item() < 1e-12, what)
        end
      end
    end
  end)
  it("gradients of gradients, as PyTorch's GridSampler2DBackwardBackward", function()
    wick.manual_seed(4)
    local x0, g0 = wick.randn(1, 2, 4, 5, D), wick.rand(1, 3, 3, 2, D) * 2.4 - 1.2
    local function run(sample)
      local x, g = x0:clone():requires_grad_(), g0:clone():requires_grad_()
      local y = sample(x, g, { padding_mode = "reflection" })
      local gx, gg = unpack(wick.autograd.grad((y * y):sum(), { x, g }, { create_graph = true }))
      ;(gx:pow(2):sum() + gg:sin():sum()):backward()
      return x.grad, g.grad
    end
    local a1, b1 = run(F.grid_sample)
    local a2, b2 = run(through_3d)
    assert.is_true(a1:abs():sum():item() > 1)
    assert.is_true((a1 - a2):abs():max():item() < 1e-12)
    assert.is_true((b1 - b2):abs():max():item() < 1e-12)
  end)
  it("NaN, infinite and huge grid values read zero, or the edge under border padding; empty sizes; dtypes", function()
    local x = wick.arange(1, 10):view(1, 1, 3, 3)
    local g = wick.tensor({ { { { 0 / 0, 0 }, { 1 / 0, 0 }, { -1e30, 0 }, { 1e10, 1e10 } } } })
    for _, pad in ipairs({ "zeros", "border", "reflection" }) do
      local gg = g:clone():requires_grad_()
      local y = F.grid_sample(x, gg, { padding_mode = pad, align_corners = true })
      y:sum():backward()
      assert.is_false(gg.grad:isnan():any():item(), pad)
      if pad == "zeros" then assert.are.same({ 0, 0, 0, 0 }, y:view(-1):totable()) end
      if pad == "border" then assert.are.same({ 0, 6, 4, 9 }, y:view(-1):totable()) end
    end
    assert.are.same({ 0, 2, 2, 2 }, F.grid_sample(wick.randn(0, 2, 3, 3), wick.zeros(0, 2, 2, 2)):size())
    assert.are.same({ 1, 0, 2, 2 }, F.grid_sample(wick.randn(1, 0, 3, 3), wick.zeros(1, 2, 2, 2)):size())
    assert.are.same({ 1, 2, 0, 2 }, F.grid_sample(wick.randn(1, 2, 3, 3), wick.zeros(1, 0, 2, 2)):size())
    support.assert_error_has(function() return F.grid_sample(wick.randn(1, 2, 0, 3), wick.zeros(1, 2, 2, 2)) end,
      "non-empty spatial dims")
    local h = F.grid_sample(x:to("bfloat16"), wick.zeros(1, 1, 1, 2, { dtype = "bfloat16" }))
    assert.are.equal("bfloat16", h.dtype)
    assert.are.equal(5, h:item())
  end)
end)

describe("the forty-ninth round's lines, part 4 (var of too few elements)", function()
  it("var/std with n - correction <= 0 give NaN and PyTorch's warning, once per line; enough elements do not warn", function()
    local said = {}
    local old = io.stderr
    io.stderr = { write = function(_, s) said[#said + 1] = s end }
    local ok, err = pcall(function()
      for _ = 1, 2 do assert.is_true(wick.var(wick.tensor({ 1.5 })):isnan():item()) end
      assert.is_true(wick.randn(3, 1):std(2)[1]:isnan():item())
      assert.are.equal(0, wick.tensor({ 1.5 }):var({ correction = 0 }):item())
      assert.are.equal(0, wick.randn(3, 1):var(2, false):sum():item())
      assert.is_false(wick.tensor({ 1.5, 2 }):var():isnan():item())
    end)
    io.stderr = old
    assert(ok, err)
    assert.are.equal(2, #said)
    assert.is_truthy(said[1]:find("var(): degrees of freedom is <= 0", 1, true))
    assert.is_truthy(said[2]:find("std(): degrees of freedom is <= 0", 1, true))
  end)
end)

describe("the forty-ninth round's lines, part 5 (a mixin's methods defined after include)", function()
  it("reach the classes that included it, their subclasses, and through a mixin's base; never over a class's own", function()
    local Mix = wick.Object:extend("Mix")
    local C = nn.Module:extend("C"):include(Mix)
    function C:init() end
    local D = C:extend("D")
    function Mix:late(x) return "late " .. tostring(x) end
    assert.are.equal("late 1", C():late(1))
    assert.are.equal("late 2", D():late({ x = 2 }))
    function C:own() return "C's" end
    function Mix:own() return "Mix's" end
    assert.are.equal("C's", C():own())
    local Base = wick.Object:extend("Base")
    local Sub = Base:extend("Sub")
    local E = wick.Object:extend("E"):include(Sub)
    function Base:b(v) return v end
    assert.are.equal(5, E():b(5))
    local First = wick.Object:extend("First")
    local L = nn.Linear:extend("L"):include(First, { first = true })
    function First:extra_repr() return "first" end
    assert.are.equal("first", L(2, 2):extra_repr())
  end)
end)

describe("the forty-ninth round's lines, part 6 (an attn_mask that requires grad; trailing nils after options)", function()
  local F = nn.functional
  it("scaled_dot_product_attention gives a float attn_mask requiring grad its gradient, as PyTorch's math backend", function()
    local D = { dtype = "float64" }
    local q, k, v = wick.randn(1, 4, 4, 8, D), wick.randn(1, 2, 5, 8, D), wick.randn(1, 2, 5, 8, D)
    local bias = wick.randn(1, 4, 4, 5, { dtype = "float64", requires_grad = true })
    local out = F.scaled_dot_product_attention(q, k, v, { attn_mask = bias, enable_gqa = true, scale = 0.3 })
    local fused = F.scaled_dot_product_attention(q, k, v, bias:detach(), 0, false, 0.3, true)
    assert.is_true((out - fused):abs():max():item() < 1e-14)
    local w = wick.randn(1, 4, 4, 8, D)
    ;(out * w):sum():backward()
    local b2 = bias:detach():clone():requires_grad_()
    local kk, vv = k:repeat_interleave(2, 2), v:repeat_interleave(2, 2)
    ;((q:matmul(kk:transpose(-2, -1)) * 0.3 + b2):softmax(-1):matmul(vv) * w):sum():backward()
    assert.is_true((bias.grad - b2.grad):abs():max():item() < 1e-14)
    assert.is_true(bias.grad:abs():sum():item() > 0.1)
    support.assert_error_has(function()
      return F.scaled_dot_product_attention(q, k, v, { attn_mask = bias, is_causal = true, enable_gqa = true })
    end, "Explicit attn_mask should not be set when is_causal=True")
  end)
  it("a nil after the options table (a port's empty **kwargs) is no argument, for layers, functions and factories", function()
    local kwargs = nil
    assert.are.equal(1e-6, nn.LayerNorm(16, { eps = 1e-6 }, kwargs).eps)
    assert.is_nil(nn.Linear(4, 5, { bias = false }, kwargs).bias)
    assert.are.same({ 1, 1, 8, 8 }, F.interpolate(wick.randn(1, 1, 4, 4), { size = { 8, 8 }, mode = "bilinear" }, kwargs):size())
    assert.are.equal("float64", wick.zeros(2, 3, { dtype = "float64" }, kwargs).dtype)
    assert.are.equal("float64", wick.eye(2, { dtype = "float64" }, kwargs).dtype)
    assert.are.same({ 1, 2 }, F.layer_norm(wick.randn(1, 2), { 2 }, { eps = 1e-3 }, kwargs):size())
  end)
end)

describe("the forty-ninth round's lines, part 7 (partial's keywords by name; inspect.signature)", function()
  it("wick.partial binds keywords to a plain function's parameters by name, as Python's", function()
    local function cosine_warmup_lr(i, warmup, max_iter)
      if i < warmup then return (i + 1) / (warmup + 1) end
      return 0.5 + 0.5 * math.cos(math.pi * ((i - warmup) / (max_iter - warmup)))
    end
    assert.are.equal(1 / 3, wick.partial(cosine_warmup_lr, { max_iter = 5, warmup = 2 })(0))
    assert.is_true(math.abs(wick.partial(cosine_warmup_lr, { max_iter = 5 })(3, 2) - 0.75) < 1e-15)
    local opt = wick.optim.SGD(nn.Linear(2, 2):parameters(), { lr = 1 })
    local sched = wick.optim.lr_scheduler.LambdaLR(opt, wick.partial(cosine_warmup_lr, { max_iter = 5, warmup = 2 }))
    assert.are.equal(1 / 3, sched:get_last_lr()[1])
    -- a key naming no parameter: the table goes as before (an options table)
    local function f(x, opts) return opts.scale * x end
    assert.are.equal(6, wick.partial(f, { scale = 3 })(2))
  end)
  it("wick.inspect.signature lists a function's parameters, also through a class's method wrapper", function()
    local P = wick.Object:extend("P")
    function P:__call__(attn, hidden_states, image_rotary_emb) end
    local Blk = nn.Module:extend("Blk")
    function Blk:forward(x, temb, ...) end
    local function keys(f) return table.concat(wick.list(wick.inspect.signature(f).parameters:keys()), ",") end
    assert.are.equal("self,attn,hidden_states,image_rotary_emb", keys(P.__call__))
    assert.are.equal("attn,hidden_states,image_rotary_emb", keys(P()))
    assert.are.equal("self,x,temb,...", keys(Blk.forward))
    assert.are.equal("VAR_POSITIONAL", wick.inspect.signature(Blk.forward).parameters["..."].kind)
    assert.is_true(wick.inspect.signature(P.__call__).parameters:contains("image_rotary_emb"))
    support.assert_error_has(function() return wick.inspect.signature(print) end, "no signature found for builtin")
  end)
end)

describe("the forty-ninth round's lines, part 8 (split_with_sizes)", function()
  it("t:split_with_sizes and wick.split_with_sizes split into the listed sizes, as split does", function()
    local x = wick.arange(15):view(5, 3)
    local parts = wick.split_with_sizes(x, { 2, 3 })
    assert.are.same({ { 2, 3 }, { 3, 3 } }, { parts[1]:size(), parts[2]:size() })
    assert.are.same({ { 5, 1 }, { 5, 2 } }, { x:split_with_sizes({ 1, 2 }, 2)[1]:size(), x:split_with_sizes({ split_sizes = { 1, 2 }, dim = -1 })[2]:size() })
    support.assert_error_has(function() return x:split_with_sizes({ 2, 2 }) end, "split_with_sizes expects split_sizes to sum exactly to 5")
    support.assert_error_has(function() return x:split_with_sizes(2) end, "split_sizes")
  end)
end)

describe("the forty-ninth round's lines, part 9 (a scheduler's get_lr within step)", function()
  it("self._get_lr_called_within_step is true while the constructor and step call get_lr, as PyTorch's", function()
    local seen = {}
    local Half = wick.optim.lr_scheduler.LRScheduler:extend("Half")
    function Half:get_lr()
      seen[#seen + 1] = self._get_lr_called_within_step
      local out = {}
      for i, b in ipairs(self.base_lrs) do out[i] = b * 0.5 ^ self.last_epoch end
      return out
    end
    local opt = wick.optim.SGD({ wick.zeros(1, { requires_grad = true }) }, { lr = 1 })
    local s = Half(opt)
    opt:step()
    s:step()
    s:get_lr()
    assert.are.same({ true, true, false }, seen)
    assert.are.equal(0.5, s:get_last_lr()[1])
  end)
end)

describe("the forty-ninth round's lines, part 10 (errors that name a tensor and the default dtype)", function()
  it("an arithmetic op with a table names the tensor as a tensor; Embedding's float-index hint names the default dtype", function()
    local ids = wick.ones(2, 3, { dtype = "int64" })
    support.assert_error_has(function() return ids:ne({ padding_idx = 1 }) end, "expected tensors or numbers, got tensor and table")
    wick.set_default_dtype("float64")
    local ok, err = pcall(function() return nn.Embedding(5, 4)(wick.arange(1, 4)) end)
    wick.set_default_dtype("float32")
    assert.is_false(ok)
    assert.is_truthy(err:find("wick.arange give float64, the default dtype", 1, true), err)
  end)
end)

describe("the forty-ninth round's lines, part 11 (legacy_contiguous_format)", function()
  it("zeros_like(logits, {memory_format = wick.legacy_contiguous_format}) is the contiguous layout (gumbel_softmax's line)", function()
    local x = wick.randn(2, 3):t()
    local y = wick.zeros_like(x, { memory_format = wick.legacy_contiguous_format }):scatter_(2, wick.tensor({ { 1 }, { 2 }, { 1 } }, { dtype = "int64" }), 1.0)
    assert.is_true(y:is_contiguous())
    assert.are.same({ { 1, 0 }, { 0, 1 }, { 1, 0 } }, y:totable())
  end)
end)

describe("the forty-ninth round's lines, part 12 (torch.empty's memory_format)", function()
  it("wick.empty takes memory_format as torch.empty does, the layout real; preserve_format refused", function()
    assert.are.same({ 2, 3 }, wick.empty({ 2, 3 }, { memory_format = wick.contiguous_format }):size())
    local c = wick.empty(2, 3, 4, 5, { memory_format = wick.channels_last, dtype = "float64" })
    assert.is_true(c:is_contiguous(wick.channels_last))
    assert.are.same({ 60, 1, 15, 3 }, c:stride())
    assert.are.equal("float64", c.dtype)
    assert.is_true(wick.empty(2, 2, { memory_format = wick.contiguous_format, requires_grad = true }).requires_grad)
    assert.are.same({ 2, 3 }, wick.empty({ size = { 2, 3 }, memory_format = wick.contiguous_format }):size())
    support.assert_error_has(function() return wick.empty(2, { memory_format = wick.preserve_format }) end,
      "preserve memory format is unsupported")
  end)
end)

describe("the forty-ninth round's lines, part 13 (var's unbiased and correction together)", function()
  it("var/std refuse unbiased and correction given together, as PyTorch's TypeError", function()
    local x = wick.tensor({ 1, 2, 3, 4 })
    support.assert_error_has(function() return x:var({ unbiased = true, correction = 0 }) end, "got both unbiased and correction")
    support.assert_error_has(function() return x:std(1, { unbiased = false, correction = 1 }) end, "got both unbiased and correction")
    assert.are.equal(1.25, x:var({ unbiased = false }):item())
    assert.are.equal(1.25, x:var({ correction = 0 }):item())
  end)
end)

describe("the forty-ninth round's lines, part 14 (nn.utils.parametrizations is strict)", function()
  it("a name nn.utils.parametrizations lacks is an error at the caller's line, as the other namespaces", function()
    support.assert_error_has(function() return nn.utils.parametrizations.weight_nrom end,
      "wick.nn.utils.parametrizations has no 'weight_nrom'")
    assert.is_true(wick.hasattr(nn.utils.parametrizations, "weight_norm"))
    assert.is_false(wick.hasattr(nn.utils.parametrizations, "weight_nrom"))
  end)
end)

describe("the forty-ninth round's lines, part 15 (logsigmoid's zero)", function()
  it("F.logsigmoid of a large input is +0, as PyTorch's (SigLIP's loss line), and keeps its values and gradient", function()
    local x = wick.tensor({ 800, 0, -3 }, { dtype = "float64", requires_grad = true })
    local y = F.logsigmoid(x)
    assert.are.same({ false, true, true }, y:signbit():totable())
    assert.are.equal(math.huge, (1 / y)[1]:item())
    assert.is_true(math.abs(y[2]:item() + math.log(2)) < 1e-15)
    y:sum():backward()
    assert.is_true(math.abs(x.grad[2]:item() - 0.5) < 1e-15)
  end)
end)

describe("the forty-ninth round's lines, part 16 (scatter_add's index dtype)", function()
  it("scatter_add, scatter_reduce and index_reduce refuse a floating index as scatter does, never truncating it", function()
    local idx = wick.tensor({ 1.5, 2, 2 })
    support.assert_error_has(function() return wick.zeros(4):scatter_add_(1, idx, wick.ones(3)) end, "expected the index to be an int64 tensor, but got float32")
    support.assert_error_has(function() return wick.zeros(4):scatter_reduce(1, idx, wick.ones(3), "sum") end, "int64")
    assert.are.same({ 1, 2, 0, 0 }, wick.zeros(4):scatter_add_(1, wick.tensor({ 1, 2, 2 }, { dtype = "int32" }), wick.ones(3)):totable())
  end)
end)

describe("the fiftieth round's lines, part 1 (for p in model:parameters())", function()
  it("parameters() and buffers() are loops as PyTorch's generators, and arrays wherever an array is taken", function()
    local m = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    local n = 0
    for p in m:parameters() do n = n + p:numel(); p:requires_grad_(false) end -- HF's freeze loop
    assert.are.equal(6 + 3 + 3 + 3, n)
    for _, p in ipairs(m:parameters()) do assert.is_false(p.requires_grad); p:requires_grad_(true) end
    local names = {}
    for b in m:buffers() do names[#names + 1] = b:dim() end
    assert.are.same({ 1, 1, 0 }, names)
    -- the same list looped inside itself, as a Python list (never a spent generator)
    local ps, pairs_seen = m:parameters(), 0
    for _ in ps do for _ in ps do pairs_seen = pairs_seen + 1 end end
    assert.are.equal(16, pairs_seen)
    assert.are.equal(ps[4], ps[-1])
    -- taken as an array: optimizers, clipping, autograd.grad, wick.save
    local opt = wick.optim.AdamW(m:parameters(), { lr = 1e-2 })
    local loss = m(wick.randn(4, 2)):pow(2):sum()
    local grads = wick.autograd.grad(loss, m:parameters(), { retain_graph = true })
    assert.are.equal(4, #grads)
    loss:backward()
    assert.is_true(nn.utils.clip_grad_norm_(m:parameters(), 1.0):item() > 0)
    opt:step()
    local path = os.tmpname()
    wick.save({ params = m:parameters() }, path)
    local back = wick.load(path)
    os.remove(path)
    assert.are.equal(0, (back.params[1] - m[1].weight):abs():max():item())
  end)
end)

describe("the fiftieth round's lines, part 2 (D-FINE's float32 mask, 1-D linear weight, axis)", function()
  it("F.scaled_dot_product_attention takes a float32 attn_mask with float64 queries, as PyTorch's math path", function()
    local q = wick.randn(2, 2, 5, 4, { dtype = "float64" })
    local m = wick.zeros(5, 5)
    m[{ { 3, 5 }, { 1, 2 } }] = -math.huge
    local got = F.scaled_dot_product_attention(q, q, q, { attn_mask = m })
    local want = F.scaled_dot_product_attention(q, q, q, { attn_mask = m:to("float64") })
    assert.are.equal("float64", got.dtype)
    assert.are.equal(0, (got - want):abs():max():item())
    support.assert_error_has(function() return F.scaled_dot_product_attention(q, q, q, { attn_mask = m:to("int64") }) end,
      "bool or float or to match query dtype")
  end)
  it("F.linear takes a 1-D weight (D-FINE's Integral: F.linear(corners, project)) and refuses a bias with it", function()
    local x, w = wick.randn(3, 5, { dtype = "float64", requires_grad = true }), wick.randn(5, { dtype = "float64" })
    local y = F.linear(x, w)
    assert.are.same({ 3 }, y:size():totable())
    assert.is_true((y - x:matmul(w)):abs():max():item() < 1e-15)
    y:sum():backward()
    assert.is_true((x.grad - w:expand(3, 5)):abs():max():item() == 0)
    assert.are.same({ 2, 3 }, F.linear(wick.randn(2, 3, 5, { dtype = "float64" }), w):size():totable())
    support.assert_error_has(function() return F.linear(x, w, wick.tensor(1.0)) end, "mat2 must be a matrix")
  end)
  it("axis is dim's other name for topk, argsort and gather too (post_process's torch.topk(s, k, axis=-1))", function()
    local x = wick.tensor({ { 3, 1, 2 }, { 0, 5, 4 } })
    assert.are.same({ { 3, 2 }, { 5, 4 } }, (wick.topk(x, 2, { axis = -1 })):totable())
    assert.are.same({ { 3, 2 }, { 5, 4 } }, (x:topk(2, { axis = -1 })):totable())
    assert.are.same({ { 2, 3, 1 }, { 1, 3, 2 } }, wick.argsort(x, { axis = -1 }):totable())
    assert.are.same({ { 1 }, { 5 } }, wick.gather(x, { axis = 2, index = wick.tensor({ { 2 }, { 2 } }, { dtype = "int64" }) }):totable())
    support.assert_error_has(function() return x:topk(1, { axis = 1, dim = 2 }) end, "got both dim and axis")
  end)
end)

describe("the fiftieth round's lines, part 3 (dict keys as arrays, copy.copy)", function()
  it("keys() and values() of a state dict, a ModuleDict and the module dicts are arrays a for also takes (len(sd.keys()))", function()
    local m = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    local sd = m:state_dict()
    assert.are.equal(2, #sd:keys())
    assert.are.equal("1.bias", sd:keys()[2])
    assert.are.equal(sd["1.weight"], sd:values()[1])
    local seen = {}
    for k in sd:keys() do seen[#seen + 1] = k end
    assert.are.same({ "1.weight", "1.bias" }, seen)
    local d = nn.ModuleDict({ a = nn.Linear(1, 1), b = nn.ReLU() })
    assert.are.same({ "a", "b" }, { unpack(d:keys()) })
    assert.are.equal(d.b, d:values()[-1])
    assert.are.equal(2, #m[1]._parameters:keys())
    assert.are.same({ "a", "b" }, wick.list(d))
    local opt = wick.optim.SGD(m:parameters(), { lr = 0.1 })
    local names = opt.param_groups[1]:keys()
    assert.is_true(#names > 3 and names[1] < names[2])
  end)
  it("wick.copy is Python's copy.copy: a config table, a module, a tensor sharing its data", function()
    local Config = wick.Object:extend("Config")
    function Config:init(width) self.width, self.layers = width, { 1, 2 } end
    local vision_config = Config(8)
    local mit_config = wick.copy(vision_config)
    mit_config.width = 4
    assert.are.equal(8, vision_config.width)
    assert.is_true(wick.isinstance(mit_config, Config))
    assert.are.equal(vision_config.layers, mit_config.layers)
    local lin = nn.Linear(2, 2)
    local lin2 = wick.copy(lin)
    assert.are.equal(lin.weight, lin2.weight)
    lin2.extra = nn.ReLU()
    assert.are.equal(0, #lin:children())
    local t = wick.ones(2, { requires_grad = true })
    local c = wick.copy(t)
    assert.is_true(c.requires_grad and c.is_leaf and not rawequal(c, t))
    wick.no_grad(function() c[1] = 5 end)
    assert.are.equal(5, t[1]:item())
  end)
end)

describe("the fiftieth round's lines, part 4 (t:type by keyword)", function()
  it("t:type({dtype = preds:type()}) converts as the positional form does (ViTMatte's Sobel kernels)", function()
    local preds = wick.zeros(1, 1, 4, 4, { dtype = "float64" })
    local k = wick.tensor({ { -1, 0, 1 } })
    assert.are.equal("float64", k:type({ dtype = preds:type() }).dtype)
    assert.are.equal("int64", k:type({ dtype = wick.LongTensor }).dtype)
    assert.are.equal("torch.FloatTensor", k:type({ non_blocking = true }))
    support.assert_error_has(function() return k:type({ dtyp = "float64" }) end, "unknown option 'dtyp'")
  end)
end)

describe("the fiftieth round's lines, part 5 (keywords then **kwargs, in-place forms, renorm)", function()
  it("m(x, {mask =, position_bias =}, kwargs) binds as Python's f(x, mask=, position_bias=, **kwargs) (HF's layers)", function()
    local A = nn.Module:extend("A")
    function A:forward(x, mask, position_bias, ...) return mask, position_bias, ... end
    local a = A()
    local m, pb, kw = a(1, { mask = 7, position_bias = 2 }, { output_attentions = true })
    assert.are.same({ 7, 2, true }, { m, pb, kw.output_attentions })
    m, pb, kw = a(1, { mask = 7 }, {})
    assert.are.same({ 7 }, { m, pb })
    support.assert_error_has(function() return a(1, { mask = 7 }, { mask = 3 }) end, "got multiple values for keyword argument 'mask'")
    local B = nn.Module:extend("B") -- (a table whose keys name no parameter stays a value)
    function B:forward(x, cfg, opts) return cfg, opts end
    local cfg, opts = B()(1, { depth = 3 }, { z = 1 })
    assert.are.same({ 3, 1 }, { cfg.depth, opts.z })
  end)
  it("floor_divide_ and the other in-place forms (DAB-DETR's dim_tx //= 2), refusing a result the dtype cannot hold", function()
    local t = wick.arange(0, 8, { dtype = "float32" })
    assert.are.same({ 0, 0, 1, 1, 2, 2, 3, 3 }, t:floor_divide_(2):totable())
    local i = wick.tensor({ 7, 8 }, { dtype = "int64" })
    support.assert_error_has(function() return i:true_divide_(2) end, "result type float32 can't be cast to the desired output type int64")
    assert.are.same({ 2, 2 }, i:floor_divide_(3):totable())
    local x = wick.tensor({ 3, -4 })
    assert.are.same({ 5, 5 }, x:hypot_(wick.tensor({ 4, 3 })):totable())
    assert.are.same({ -5, -5 }, x:copysign_(-1):totable())
    support.assert_error_has(function() return wick.ones(2):float_power_(2) end, "requires dtype float64")
    support.assert_error_has(function() return wick.ones(2, { requires_grad = true }):sgn_() end, "sgn_: a leaf tensor that requires grad")
  end)
  it("t:renorm(p, dim, maxnorm) as PyTorch's, its gradient through the scale too", function()
    local x = wick.tensor({ { 3, 4 }, { 0.3, 0.4 } }, { dtype = "float64", requires_grad = true })
    local y = x:renorm(2, 1, 1.0)
    assert.is_true((y - wick.tensor({ { 0.6, 0.8 }, { 0.3, 0.4 } }, { dtype = "float64" })):abs():max():item() < 1e-7)
    ;(y * wick.tensor({ { 1, 2 }, { 3, 4 } }, { dtype = "float64" })):sum():backward()
    -- PyTorch 2.11: x.grad = [[-0.0640, 0.0480], [3, 4]]
    assert.is_true((x.grad - wick.tensor({ { -0.064, 0.048 }, { 3, 4 } }, { dtype = "float64" })):abs():max():item() < 1e-7)
    support.assert_error_has(function() return wick.randn(3):renorm(2, 1, 1) end, "at least 2 dimensions")
    support.assert_error_has(function() return wick.randn(2, 2):renorm(0, 1, 1) end, "non-positive-norm")
  end)
end)

describe("the fiftieth round's lines, part 6 (a class's own method over a mixin's)", function()
  it("a method the class defines over its mixin's binds keywords (BLIP's generate over GenerationMixin's)", function()
    local Mixin = wick.Object:extend("Mixin")
    function Mixin:generate(inputs, generation_config, ...) return "mixin" end
    function Mixin:greet() return "hello" end
    local B = nn.Module:extend("B"):include(Mixin)
    function B:init() end
    function B:generate(x, input_ids, attention_mask, ...) return input_ids, attention_mask, ... end
    local ids, mask, kw = B():generate(1, { attention_mask = 5, max_new_tokens = 7 })
    assert.are.same({ nil, 5, 7 }, { ids, mask, kw.max_new_tokens })
    assert.are.equal("hello", B():greet())
    assert.is_true(wick.isinstance(B(), Mixin))
  end)
  it("a mixin's method replaced after classes included it is the one they find (a patched GenerationMixin)", function()
    local Mixin = wick.Object:extend("Mixin")
    function Mixin:generate() return "old" end
    local Base = wick.Object:extend("Base")
    function Base:forward() return "base" end
    local C = Base:extend("C"):include(Mixin)
    local D = Base:extend("D"):include(C) -- (a mixin's own mixins come along)
    assert.are.same({ "old", "old" }, { C():generate(), D():generate() })
    Mixin.generate = function() return "new" end
    assert.are.same({ "new", "new" }, { C():generate(), D():generate() })
    function Mixin:late() return "late" end
    assert.are.same({ "late", "late" }, { C():late(), D():late() })
    assert.are.equal("base", C():forward()) -- (the base line before the mixin, as Python's order)
  end)
end)

describe("the fiftieth round's lines, part 7 (a Size keyed by a table holding a slice)", function()
  it("x.shape[{wick.slice(nil, -1)}] is shape[:-1], as a tensor's key reads it (HF's input_shape = h.shape[:-1])", function()
    local x = wick.randn(2, 3, 8)
    assert.are.same({ 2, 3 }, x.shape[{ wick.slice(nil, -1) }]:totable())
    assert.are.same({ 3, 8 }, x.shape[{ wick.slice(1, nil) }]:totable())
    assert.are.same({ 2, 3 }, x.shape[wick.slice(nil, -1)]:totable())
    support.assert_error_has(function() return x.shape[{ wick.slice(nil, -1), 2 }] end, "Size: a range is {first, last}")
  end)
end)

describe("the fiftieth round's lines, part 8 (transforms by keyword)", function()
  it("AffineTransform(loc=, scale=, event_dim=) and the other transforms take PyTorch's keywords (HF's AffineTransformed)", function()
    local D = wick.distributions
    local t = D.AffineTransform({ loc = wick.zeros(2), scale = wick.full({ 2 }, 2), event_dim = 1 })
    assert.are.equal(1, t.event_dim)
    assert.are.same({ 2, 2 }, t(wick.ones(2)):totable())
    assert.are.equal(1, D.AffineTransform(wick.zeros(2), { scale = wick.ones(2), event_dim = 1 }).event_dim)
    assert.are.same({ 9 }, D.PowerTransform({ exponent = 2 })(wick.tensor({ 3 })):totable())
    assert.are.same({ 2, 2 }, D.ReshapeTransform({ in_shape = { 4 }, out_shape = { 2, 2 } })(wick.ones(4)):size():totable())
    support.assert_error_has(function() return D.AffineTransform({ loc = 1 }) end, "missing required argument 'scale'")
    support.assert_error_has(function() return D.AffineTransform("a", 2) end, "expected a number or a tensor for argument 'loc'")
  end)
end)

describe("the fiftieth round's lines, part 9 (an init's config whose fields name later parameters)", function()
  it("Model(config) keeps config one value when its fields name init's later parameters (MusicGen)", function()
    local M = nn.Module:extend("M")
    function M:init(config, text_encoder, decoder) self.cfg, self.te, self.dec = config, text_encoder, decoder end
    local config = { text_encoder = { hidden_size = 16 }, decoder = { hidden_size = 24 } }
    local m = M(config)
    assert.are.equal(config, m.cfg)
    assert.is_nil(m.te)
    local m2 = M(nil, { decoder = nn.Linear(1, 1) }) -- (Python's M(decoder=d))
    assert.is_nil(m2.cfg)
    assert.is_true(wick.isinstance(m2.dec, nn.Linear))
    local m3 = M({ config = config, decoder = 3 }) -- (all by keyword: M(config=c, decoder=3))
    assert.are.same({ config, 3 }, { m3.cfg, m3.dec })
  end)
end)

describe("the fiftieth round's lines, part 10 (partial's empty kwargs, a batch's failed matrix)", function()
  it("wick.partial(f, self, {}) is Python's partial(f, self, **{}): no extra argument (HF's checkpointing layer)", function()
    local function f(a, b, c) return a, b, c end
    local p = wick.partial(f, "self", {})
    assert.are.same({ "self", "h", false }, { p("h", false) })
    assert.are.equal(1, p.args.n)
    assert.are.same({ 3, 4 }, { wick.partial(nn.Linear, {})(3, 4).weight:size(2), wick.partial(nn.Linear, {})(3, 4).weight:size(1) })
  end)
  it("linalg.inv of a batch names its singular matrix from 1, as wick's indices", function()
    local A = wick.eye(2):expand(3, 2, 2):clone()
    A[2] = wick.zeros(2, 2)
    support.assert_error_has(function() return wick.linalg.inv(A) end, "(batch element 2)")
  end)
end)

describe("the fiftieth round's lines, part 11 (expand's -1 on a new leading dim)", function()
  it("a -1 where the tensor has no dim is PyTorch's leading, non-existing dimension error (a forgotten [:, :, None])", function()
    support.assert_error_has(function() return wick.randn(2, 1, 5):expand(-1, -1, 3, -1) end,
      "isn't allowed in a leading, non-existing dimension 1")
    assert.are.same({ 2, 3, 5 }, wick.randn(2, 1, 5):expand(-1, 3, -1):size():totable())
    support.assert_error_has(function() return wick.randn(2, 2):expand(3, 2) end, "must match the existing size 2")
  end)
end)

describe("the fiftieth round's lines, part 12 (**kwargs names beside keywords, masked_scatter's own form)", function()
  it("a keywords table whose other names go to the forward's ... binds with the kwargs table after it (LFM2's self_attn)", function()
    local M = nn.Module:extend("M")
    function M:forward(x, y, ...) local kw = ... return x, y, kw end
    local m = M()
    local x, y, kw = m({ x = 1, y = 2, w = 5 }, { z = 3 })
    assert.are.same({ 1, 2, 5, 3 }, { x, y, kw.w, kw.z })
    x, y, kw = m(1, { y = 2, w = 5 }, {})
    assert.are.same({ 1, 2, 5 }, { x, y, kw.w })
  end)
  it("wick.partial of one's own function: names it lacks go to its ..., or are Python's TypeError", function()
    local function g(config, input_embeds, ...) local kw = ... return config, input_embeds, kw and kw.position_ids end
    assert.are.same({ "c", "e", 7 }, { wick.partial(g, { config = "c", input_embeds = "e", position_ids = 7 })() })
    local function f(config, input_embeds) return config, input_embeds end
    support.assert_error_has(function() return wick.partial(f, { config = "c", imput_embeds = 7 })() end,
      "unexpected keyword argument 'imput_embeds'")
    assert.are.equal("float64", wick.partial(F.softmax, { dim = -1, dtype = "float64" })(wick.randn(2, 3)).dtype)
  end)
  it("t:masked_scatter broadcasts t and the mask, as PyTorch's out-of-place form, and names itself", function()
    local y = wick.zeros(3)
    local m = wick.tensor({ { true, false, true }, { false, true, false } })
    assert.are.same({ { 1, 0, 2 }, { 0, 3, 0 } }, y:masked_scatter(m, wick.arange(1, 6)):totable())
    support.assert_error_has(function() return wick.zeros(2, 3, 4):masked_scatter(wick.ones(2, 3, 1):bool(), wick.randn(5, 4)) end,
      "masked_scatter: the mask selects 24 elements but source has only 20")
    support.assert_error_has(function() return y:clone():masked_scatter_(m, wick.arange(1, 6)) end, "masked_scatter_:")
  end)
end)

describe("the fiftieth round's lines, part 13 (more leading arguments by name, full of a 0-dim integer)", function()
  it("take_along_dim, where, cat and movedim take PyTorch's names (HF's _gather_beams, Gemma3n's movedim)", function()
    local t = wick.tensor({ { 0.1, 0.5, 0.3 }, { 0.9, 0.2, 0.4 } }, { dtype = "float64" })
    local i = wick.tensor({ { 1 }, { 2 } }, { dtype = "int64" })
    assert.are.same({ { 0.1 }, { 0.2 } }, wick.take_along_dim({ input = t, indices = i, dim = 2 }):totable())
    assert.are.same({ { 0.1 }, { 0.2 } }, t:take_along_dim({ indices = i, dim = 2 }):totable())
    assert.are.same({ 1, 0 }, wick.where({ condition = wick.tensor({ true, false }), input = wick.ones(2), other = wick.zeros(2) }):totable())
    assert.are.same({ 1, 3 }, wick.where(wick.tensor({ true, false, true })):totable())
    assert.are.same({ 1, 0 }, wick.cat({ tensors = { wick.ones(1), wick.zeros(1) }, dim = 1 }):totable())
    assert.are.same({ 2, 4, 3 }, wick.movedim(wick.zeros(2, 3, 4), { source = -1, destination = 2 }):size():totable())
    assert.are.same({ 3, 4, 2 }, wick.zeros(2, 3, 4):moveaxis({ source = 1, destination = 3 }):size():totable())
  end)
  it("wick.full of a 0-dim integer tensor is int64, as PyTorch's and as wick.arange of one (Qwen3-VL)", function()
    local n = wick.tensor({ 3, 4 }, { dtype = "int64" }):sum()
    assert.are.equal("int64", wick.full({ 2 }, n).dtype)
    assert.are.equal("bool", wick.full({ 2 }, wick.tensor(true)).dtype)
    assert.are.equal("float32", wick.full({ 2 }, n, { dtype = "float32" }).dtype)
    assert.are.equal("float32", wick.full({ 2 }, 7).dtype)
  end)
end)

describe("the fiftieth round's lines, part 14 (ParameterList entries, vmap of none, replayable draws, isinstance)", function()
  it("ParameterList makes an expanded (non-leaf) tensor a parameter and takes a nested list as a child (titans)", function()
    local p = nn.Parameter(wick.randn(3, 2))
    local pl = nn.ParameterList({ p:unsqueeze(1):expand(2, 3, 2), p * 2 })
    assert.are.same({ 2, 2, 2 }, { #pl, #pl:parameters(), pl:state_dict():len() })
    assert.is_true(pl[1].is_leaf and pl[1].requires_grad)
    local nested = nn.ParameterList({ nn.ParameterList({ nn.Parameter(wick.randn(2, 3)), nn.Parameter(wick.randn(3, 2)) }) })
    assert.are.same({ "1.1", "1.2" }, { unpack(nested:state_dict():keys()) })
  end)
  it("func.vmap over a dim of size 0 gives empty results of f's shapes; in_dims 0 names the 1-based count", function()
    local f = function(w, x) return (x:matmul(w) ^ 2):sum() end
    assert.are.same({ 0, 3, 2 }, wick.func.vmap(wick.func.grad(f), { in_dims = { 1, 1 } })(wick.randn(0, 3, 2), wick.randn(0, 5, 3)):size():totable())
    assert.are.same({ 0, 4 }, wick.func.vmap(function(x) return x * 2 end)(wick.randn(0, 4)):size():totable())
    support.assert_error_has(function() return wick.func.vmap(function(x) return x end, { in_dims = 0 })(wick.randn(2)) end,
      "PyTorch's in_dims=0 is 1")
  end)
  it("OrderedDict:move_to_end (an LRU cache's), and Gamma/NegativeBinomial drawing through wick._standard_gamma and wick.poisson", function()
    local d = wick.OrderedDict()
    d.a = 1
    d.b = 2
    d.c = 3
    d:move_to_end("a")
    assert.are.same({ "b", "c", "a" }, { unpack(d:keys()) })
    d:move_to_end("c", { last = false })
    assert.are.same({ "c", "b", "a" }, { unpack(d:keys()) })
    local D, real_gamma, real_poisson = wick.distributions, wick._standard_gamma, wick.poisson
    local gammas, poissons = 0, 0
    wick._standard_gamma = function(a) gammas = gammas + 1 return real_gamma(a) end
    wick.poisson = function(r) poissons = poissons + 1 return real_poisson(r) end
    local ok, err = pcall(function()
      D.StudentT(3.0):sample({ 2 })
      D.NegativeBinomial({ total_count = wick.ones(3), logits = wick.zeros(3) }):sample()
    end)
    wick._standard_gamma, wick.poisson = real_gamma, real_poisson
    assert(ok, err)
    assert.is_true(gammas >= 2 and poissons == 1)
  end)
  it("wick.isinstance knows slices, devices and generators (st-moe's isinstance(selection, slice))", function()
    assert.is_true(wick.isinstance(wick.slice(0, 2), wick.slice))
    assert.is_true(wick.isinstance(wick.device("cpu"), wick.device))
    assert.is_true(wick.isinstance(wick.Generator(), wick.Generator))
    assert.is_false(wick.isinstance({ 1, 2 }, wick.slice))
  end)
end)

describe("the fiftieth round's lines, part 15 (options then **kwargs for F, lru_cache, namedtuple)", function()
  it("F.grid_sample(d, k, {mode =}, kwargs) takes the two tables as one (SuperPoint's **kwargs)", function()
    local x, g = wick.randn(1, 3, 4, 4), wick.zeros(1, 1, 5, 2)
    local want = F.grid_sample(x, g, { mode = "bilinear", align_corners = true })
    assert.are.equal(0, (F.grid_sample(x, g, { mode = "bilinear" }, { align_corners = true }) - want):abs():max():item())
    assert.are.same({ 1, 3, 8, 8 }, F.interpolate(x, { scale_factor = 2 }, { mode = "nearest" }):size():totable())
    support.assert_error_has(function() return F.grid_sample(x, g, { mode = "bilinear" }, { mode = "nearest" }) end,
      "got multiple values for keyword argument 'mode'")
  end)
  it("wick.lru_cache keeps results by value for plain arguments, by identity for objects (RT-DETR's anchors)", function()
    local calls = 0
    local f = wick.lru_cache({ maxsize = 2 })(function(shape) calls = calls + 1 return wick.zeros(shape) end)
    local a = f({ 2, 3 })
    assert.is_true(rawequal(a, f({ 2, 3 })))
    assert.are.equal(1, calls)
    f({ 4 })
    f({ 5 })
    assert.is_false(rawequal(a, f({ 2, 3 }))) -- (dropped past maxsize)
    local C = wick.Object:extend("C")
    C.anchors = wick.lru_cache({ maxsize = 32 })(function(self, shapes) calls = calls + 1 return shapes end)
    local o, before = C(), calls
    o:anchors({ 1 })
    o:anchors({ 1 })
    assert.are.equal(before + 1, calls)
    assert.are.same({ 7 }, o:anchors({ shapes = { 7 } }))
  end)
  it("wick.namedtuple reads fields by name and by index (st-moe's MixtureOfExpertsReturn)", function()
    local R = wick.namedtuple("MixtureOfExpertsReturn", { "outputs", "total_aux_loss" })
    local r = R(1, 2)
    assert.are.same({ 1, 2, 2 }, { r.outputs, r[2], #r })
    local a, b = unpack(r)
    assert.are.same({ 1, 2 }, { a, b })
    assert.are.equal(5, R({ total_aux_loss = 5, outputs = 4 }).total_aux_loss)
    assert.are.equal("MixtureOfExpertsReturn(outputs=1, total_aux_loss=2)", tostring(r))
    support.assert_error_has(function() r.outputs = 3 end, "can't set attribute")
  end)
end)

describe("the fifty-first round's lines, part 1 (BS-RoFormer, Parakeet, Zamba2, Voxtral)", function()
  it("a float32 window is computed in float32 by PyTorch's steps, so its values are PyTorch's", function()
    -- torch.hann_window(8), torch.hamming_window(7, periodic=False), torch.blackman_window(6) (PyTorch 2.15)
    local want = {
      { wick.hann_window(8), { 0, 0.146446615, 0.5, 0.853553414, 1, 0.853553295, 0.5, 0.146446496 } },
      { wick.hamming_window(7, false), { 0.0800000131, 0.310000032, 0.770000041, 1, 0.769999981, 0.310000062, 0.0800000131 } },
      { wick.blackman_window(6), { -2.98023224e-08, 0.129999995, 0.629999995, 1, 0.629999936, 0.130000025 } },
    }
    for _, case in ipairs(want) do
      local w, values = case[1], case[2]
      assert.are.equal("float32", w.dtype)
      assert.is_true(wick.equal(w, wick.tensor(values, { dtype = "float32" })), tostring(w))
    end
    support.assert_error_has(function() wick.hann_window(5, { dtype = "int64" }) end, "hann_window expects floating point dtypes")
    -- the float64 window is the float64 formula's
    local k = wick.arange(9, { dtype = "float64" })
    assert.is_true(wick.allclose(wick.hann_window(8, { dtype = "float64" }),
      (0.5 - (k * (2 * math.pi / 8)):cos() * 0.5):narrow(1, 1, 8), { rtol = 0, atol = 1e-15 }))
  end)
  it("stft without a window warns once in all, as PyTorch's", function()
    local runner = arg and arg[-1] or "build/wick"
    local code = [[
      local wick = require("wick")
      local x = wick.randn(64)
      for _ = 1, 2 do wick.stft(x, 16, { return_complex = true }) end
      wick.stft(x, 16, { return_complex = true })
      wick.stft(x, 16, { window = wick.hann_window(16), return_complex = true })
    ]]
    local p = assert(io.popen(("%s -e %q 2>&1"):format(runner, code)))
    local out = p:read("*a")
    p:close()
    local _, n = out:gsub("A rectangular window will be applied", "")
    assert.are.equal(1, n, out)
  end)
  it("view of a Size and more sizes is Python's view(*size, -1, 4), as is the Size + {...} spelling", function()
    local t = wick.zeros(2, 3, 8)
    local s = t.shape[{ wick.slice(nil, -1) }]
    assert.are.same({ 2, 3, 2, 4 }, t:view(s, -1, 4):size():totable())
    support.assert_error_has(function() t:view(s, "x") end, "view: expected sizes as numbers or tables of numbers, got string for size 3")
    assert.are.same({ 2, 3, 2, 4 }, t:view(s + { -1, 4 }):size():totable())
  end)
end)

describe("the fifty-first round's lines, part 2 (transfusion, equiformer)", function()
  local P = wick.utils._pytree
  it("wick.utils._pytree flattens and rebuilds tables, OrderedDicts and namedtuples (transfusion's AdaptiveWrapper)", function()
    local out, values, cache = wick.ones(2), wick.zeros(3), wick.full({ 1 }, 7)
    local tree = { { out, values }, { kv = cache, n = 4 } }
    local leaves, spec = P.tree_flatten(tree)
    assert.are.equal(4, #leaves)
    assert.are.equal(4, spec.num_leaves)
    assert.is_true(rawequal(out, leaves[1]) and rawequal(values, leaves[2]) and rawequal(cache, leaves[3]))
    assert.are.equal(4, leaves[4])
    local back = P.tree_unflatten({ "a", "b", "c", "d" }, spec)
    assert.are.same({ { "a", "b" }, { kv = "c", n = "d" } }, back)
    assert.is_true(spec == P.tree_structure({ { 1, 2 }, { kv = 3, n = 4 } }))
    assert.is_false(spec == P.tree_structure({ { 1, 2 }, { kv = 3 } }))
    support.assert_error_has(function() P.tree_unflatten({ 1 }, spec) end, "`leaves` has length 1 but the spec refers to a pytree that holds 4 items")
    -- tree_map with a second tree of the same structure; tree_map_only on tensors
    local m = P.tree_map(function(x, y) return wick.is_tensor(x) and x:sum():item() + y or x end, tree,
      { { 10, 20 }, { kv = 30, n = 40 } })
    assert.are.same({ { 12, 20 }, { kv = 37, n = 4 } }, m)
    support.assert_error_has(function() P.tree_map(function(x) return x end, { 1, 2 }, { 1 }) end, "Node arity mismatch; expected 2, but got 1")
    local doubled = P.tree_map_only(wick.Tensor, function(t) return t * 2 end, tree)
    assert.are.equal(4, doubled[1][1]:sum():item())
    assert.are.equal(4, doubled[2].n)
    local od = wick.OrderedDict()
    od.z = out
    od.a = values
    local sizes = P.tree_map_only("tensor", function(t) return t:numel() end, od)
    assert.are.same({ "z", "a" }, { unpack(sizes:keys()) })
    assert.are.same({ 2, 3 }, { sizes.z, sizes.a })
    assert.is_true(P.tree_all(wick.is_tensor, { out, values }))
    assert.is_false(P.tree_any(function(x) return x == 5 end, tree))
  end)
  it("a namedtuple's nil field reads as nil by index and is a pytree None (equiformer's Return(type0, None))", function()
    local Return = wick.namedtuple("Return", { "type0", "type1", "edges" })
    local r = Return(wick.ones(2), nil, wick.zeros(1))
    assert.is_nil(r[2])
    assert.is_nil(r.type1)
    assert.is_true(rawequal(r[-1], r.edges))
    local a, b, c = unpack(r, 1, #Return._fields)
    assert.is_true(a ~= nil and b == nil and c ~= nil)
    support.assert_error_has(function() return r[4] end, "'Return' object has no attribute '4'")
    assert.are.equal(2, #P.tree_leaves(r))
    local r2 = P.tree_map_only("tensor", function(t) return t + 1 end, r)
    assert.are.equal("Return", getmetatable(r2).__name)
    assert.is_nil(r2.type1)
    assert.are.equal(1, r2.edges:item())
  end)
  it("einx.get_at names the bracketed axis of an index out of range", function()
    local x, idx = wick.randn(2, 4), wick.full({ 2, 3 }, 9, { dtype = "int64" })
    support.assert_error_has(function() wick.einx.get_at("b [i], b k -> b k", x, idx) end,
      "einx.get_at: index 9 is out of bounds for the bracketed axis 'i' of size 4")
    support.assert_error_has(function() wick.einx.get_at("b [i], b k -> b k", x, idx:zero_()) end,
      "a 0-based index from PyTorch needs + 1")
  end)
end)

describe("the fifty-first round's lines, part 3 (magvit2)", function()
  it("t:unpack() gives the slices along dim 1 as several results, Python's q, k, v = t", function()
    local t = wick.arange(6, { dtype = "float64" }):view(3, 2)
    local q, k, v = t:unpack()
    assert.are.same({ { 0, 1 }, { 2, 3 }, { 4, 5 } }, { q:totable(), k:totable(), v:totable() })
    local a, b = t:unpack(2)
    assert.are.same({ { 0, 2, 4 }, { 1, 3, 5 } }, { a:totable(), b:totable() })
    assert.are.equal(3, select("#", t:unpack()))
    q:add_(10) -- (views, as unbind's)
    assert.are.equal(10, t[1][1]:item())
    support.assert_error_has(function() wick.tensor(1):unpack() end, "cannot unpack a 0-dim tensor")
  end)
end)

describe("the fifty-first round's lines, part 4 (titans' memory attention, BS-RoFormer's sdp_kernel)", function()
  local F, A = wick.nn.functional, wick.nn.attention
  local q = wick.randn(1, 4, 5, 8, { dtype = "float64" })
  local k = wick.randn(1, 2, 6, 8, { dtype = "float64" })
  local v = wick.randn(1, 2, 6, 8, { dtype = "float64" })
  it("the math form of scaled_dot_product_attention gives the fused one's values, every mask kind", function()
    local bm = wick.rand(5, 6):gt(0.3)
    bm[{ {}, 1 }] = true
    for _, opts in ipairs({ { enable_gqa = true }, { attn_mask = bm, enable_gqa = true },
      { attn_mask = wick.randn(5, 6, { dtype = "float64" }), enable_gqa = true, scale = 0.3 }, { is_causal = true, enable_gqa = true } }) do
      local x = q:clone():requires_grad_(true)
      local fused = F.scaled_dot_product_attention(x, k, v, opts)
      local composed = A.sdpa_kernel(A.SDPBackend.MATH, function() return F.scaled_dot_product_attention(x, k, v, opts) end)
      assert.is_true(wick.allclose(fused, composed, { rtol = 0, atol = 1e-13 }))
      assert.is_falsy(tostring(composed.grad_fn):find("ScaledDotProduct", 1, true))
      assert.is_truthy(tostring(fused.grad_fn):find("ScaledDotProduct", 1, true))
    end
  end)
  it("a gradient of a gradient through attention: inside wick.func's transforms and under the math backend", function()
    local function f(x) return F.scaled_dot_product_attention(x, k, v, { enable_gqa = true }):pow(2):sum() end
    local g = wick.func.grad(f)
    local x = q:clone()
    local hv = wick.func.grad(function(y) return g(y):sum() end)(x)
    -- central differences of sum(grad f) at one entry
    local eps = 1e-5
    local xp, xm = x:clone(), x:clone()
    xp[1][1][1][1] = x[1][1][1][1]:item() + eps
    xm[1][1][1][1] = x[1][1][1][1]:item() - eps
    local fd = (g(xp):sum():item() - g(xm):sum():item()) / (2 * eps)
    assert.is_true(math.abs(hv[1][1][1][1]:item() - fd) < 1e-7, tostring(hv[1][1][1][1]:item()) .. " vs " .. fd)
    -- autograd.grad with create_graph: the fused backward says to use the math backend, which works
    local y = x:clone():requires_grad_(true)
    local gy = wick.autograd.grad(f(y), { y }, { create_graph = true })[1]
    support.assert_error_has(function() wick.autograd.grad(gy:sum(), { y }) end, "sdpa_kernel(SDPBackend.MATH, fn)")
    local z = x:clone():requires_grad_(true)
    local gz = A.sdpa_kernel(A.SDPBackend.MATH, function() return wick.autograd.grad(f(z), { z }, { create_graph = true })[1] end)
    local hz = wick.autograd.grad(gz:sum(), { z })[1]
    assert.is_true(wick.allclose(hz, hv, { rtol = 1e-10, atol = 1e-12 }))
    -- BS-RoFormer's sdp_kernel(enable_flash=False, enable_math=True, enable_mem_efficient=False)
    local w = x:clone():requires_grad_(true)
    local out = wick.backends.cuda.sdp_kernel({ enable_flash = false, enable_math = true, enable_mem_efficient = false },
      function() return F.scaled_dot_product_attention(w, k, v, { enable_gqa = true }) end)
    assert.is_falsy(tostring(out.grad_fn):find("ScaledDotProduct", 1, true))
    -- an error inside leaves the fused form on
    assert.is_false(pcall(A.sdpa_kernel, A.SDPBackend.MATH, function() error("boom") end))
    assert.is_truthy(tostring(F.scaled_dot_product_attention(w, k, v, { enable_gqa = true }).grad_fn):find("ScaledDotProduct", 1, true))
  end)
end)

describe("the fifty-first round's lines, part 5 (soundstorm's EinMix)", function()
  local EinMix = wick.einops.layers.torch.EinMix
  it("EinMix is einsum with a weight of weight_shape and a bias over bias_shape's output axes, as einops'", function()
    local m = EinMix("b n g d -> b n g l", { weight_shape = "g d l", bias_shape = "g l", g = 2, d = 4, l = 3 })
    assert.are.same({ 2, 4, 3 }, m.weight:size():totable())
    assert.are.same({ 1, 1, 2, 3 }, m.bias:size():totable()) -- (size 1 on b and n, as einops' _bias_shape)
    -- einops' uniform He bounds: fan_in is d (g is an output axis)
    assert.is_true(m.weight:abs():max():item() <= math.sqrt(3 / 4) and m.bias:abs():max():item() <= math.sqrt(1 / 4))
    assert.are.same({ "bias", "weight" }, (function() local k = m:state_dict():keys(); table.sort(k); return k end)())
    local x = wick.randn(2, 5, 2, 4)
    assert.is_true(wick.allclose(m(x), wick.einsum("bngd,gdl->bngl", x, m.weight) + m.bias))
    assert.are.equal("EinMix('b n g d -> b n g l', 'g d l', 'g l', d=4, g=2, l=3)", tostring(m))
    -- groups rearranged before and after: a multi-head linear layer; positions, then lengths by name
    local h = EinMix("t b (head cin) -> t b (head cout)", "head cin cout", "head cout", { head = 2, cin = 3, cout = 5 })
    local y = wick.randn(4, 2, 6)
    local want = wick.einsum("tbhc,hcd->tbhd", y:view(4, 2, 2, 3), h.weight) + h.bias
    assert.is_true(wick.allclose(h(y), want:reshape(4, 2, 10)))
    -- "..." on both sides; no bias
    local e = EinMix("b ... c -> b ... d", { weight_shape = "c d", c = 4, d = 2 })
    assert.is_nil(e.bias)
    assert.are.same({ 2, 3, 5, 2 }, e(wick.randn(2, 3, 5, 4)):size():totable())
  end)
  it("EinMix's errors are einops', and wick.einops names what it lacks", function()
    support.assert_error_has(function() EinMix("b n d -> b n l", { weight_shape = "d l", d = 4 }) end, "Dimension l of weight should be specified")
    support.assert_error_has(function() EinMix("b n d -> b n l", { weight_shape = "d l", d = 4, l = 3, q = 2 }) end, "Axes {q} are not used in pattern")
    support.assert_error_has(function() EinMix("b n d -> b n l", { weight_shape = "d l", bias_shape = "n", d = 4, l = 3 }) end,
      "Sizes not provided for bias axes {n}")
    support.assert_error_has(function() EinMix("b ... d -> b l", { weight_shape = "d l", d = 4, l = 3 }) end, "Ellipsis in EinMix should be on both sides")
    support.assert_error_has(function() return wick.einops.nosuch end, "wick.einops has no 'nosuch'")
    support.assert_error_has(function() return wick.einops.layers.torch.Nope end, "wick.einops.layers has no 'Nope'")
  end)
end)

describe("the fifty-first round's lines, part 6 (pytorch/examples' siamese network)", function()
  it("print(model:load_state_dict(sd)) shows PyTorch's result; lists print as Python's", function()
    local m = wick.nn.Linear(2, 2)
    local r, unexpected = m:load_state_dict(m:state_dict())
    assert.are.equal("<All keys matched successfully>", tostring(r))
    assert.are.equal("[]", tostring(unexpected))
    local sd = m:state_dict()
    sd.bias = nil
    sd.x = wick.ones(1)
    local r2, u2 = m:load_state_dict(sd, false)
    assert.are.equal("_IncompatibleKeys(missing_keys=['bias'], unexpected_keys=['x'])", tostring(r2))
    assert.are.equal("['x']", tostring(u2))
    assert.are.equal("['bias']", tostring(r2.missing_keys))
    assert.are.equal("['weight', 'bias']", tostring(m:state_dict():keys()))
  end)
end)

describe("the fifty-first round's lines, part 7 (CLVP's checkpointed conditioning encoder)", function()
  it("the reentrant checkpoint warns, as PyTorch's, when no input requires grad", function()
    local warned, old = {}, wick._warn
    wick._warn = function(msg) warned[#warned + 1] = msg end
    local lin = wick.nn.Linear(3, 2)
    local ok, err = pcall(function()
      local y = wick.utils.checkpoint.checkpoint(lin, wick.randn(4, 3))
      assert.is_false(y.requires_grad)
      local z = wick.utils.checkpoint.checkpoint(lin, wick.randn(4, 3):requires_grad_(true))
      assert.is_true(z.requires_grad)
    end)
    wick._warn = old
    assert(ok, err)
    assert.are.equal(1, #warned)
    assert.is_truthy(warned[1]:find("None of the inputs have requires_grad=True. Gradients will be None", 1, true))
  end)
end)

describe("the fifty-first round's lines, part 8 (Mask2Former's and every DETR's Hungarian matcher)", function()
  local L = wick.scipy.optimize.linear_sum_assignment
  it("wick.scipy.optimize.linear_sum_assignment gives SciPy's assignment, ties too, 1-based", function()
    -- scipy 1.17 (+ 1 on its indices)
    local cases = {
      { { { 1, 1, 0 }, { 0, 1, 1 }, { 1, 0, 1 }, { 0, 0, 0 } }, false, { 1, 2, 3 }, { 3, 1, 2 } },
      { { { 2, 2, 1, 2 }, { 1, 2, 2, 2 }, { 2, 1, 2, 1 } }, false, { 1, 2, 3 }, { 3, 1, 2 } },
      { { { 0.5, 0.1, 0.9 }, { 0.4, 0.8, 0.2 } }, true, { 1, 2 }, { 3, 2 } },
      { { { 1, math.huge }, { math.huge, 2 }, { 3, 4 } }, false, { 1, 2 }, { 1, 2 } },
    }
    for _, c in ipairs(cases) do
      local rows, cols = L(wick.tensor(c[1], { dtype = "float64" }), c[2])
      assert.are.equal("int64", rows.dtype)
      assert.are.same({ c[3], c[4] }, { rows:totable(), cols:totable() })
    end
    -- a DETR matcher's cost block: a float32 tensor, the least total cost
    local C = wick.tensor({ { 0.9, 0.2, 0.5 }, { 0.1, 0.8, 0.7 } })
    local r, k = L(C, { maximize = false })
    assert.are.same({ { 1, 2 }, { 2, 1 } }, { r:totable(), k:totable() })
    local e1, e2 = L(wick.zeros(0, 3))
    assert.are.same({ 0, 0 }, { e1:numel(), e2:numel() })
  end)
  it("linear_sum_assignment's errors are SciPy's", function()
    support.assert_error_has(function() L({ { math.huge, math.huge }, { 1, 2 } }) end, "linear_sum_assignment: cost matrix is infeasible")
    support.assert_error_has(function() L({ { 0 / 0, 1 } }) end, "matrix contains invalid numeric entries")
    support.assert_error_has(function() L({ { math.huge, 1 } }, true) end, "matrix contains invalid numeric entries")
    support.assert_error_has(function() L(wick.zeros(2, 2, 2)) end, "expected a matrix (2-D array), got a 3-D array")
    support.assert_error_has(function() return wick.scipy.optimize.minimize end, "wick.scipy.optimize has no 'minimize'")
  end)
end)

describe("the fifty-first round's lines, part 9 (MAML's Learner, learn2learn's update_module)", function()
  it("ParameterList keeps a frozen nn.Parameter frozen (MAML's vars_bn running statistics)", function()
    local p = nn.Parameter(wick.zeros(2), false)
    local pl = nn.ParameterList()
    pl:extend({ p })
    pl:append(nn.Parameter(wick.ones(3), false))
    assert.is_false(p.requires_grad)
    assert.is_false(pl[2].requires_grad)
    assert.are.equal(2, #pl:parameters())
    local plain = wick.zeros(4)
    pl:append(plain)
    assert.is_true(pl[3].requires_grad)
    assert.is_false(nn.ParameterDict({ a = nn.Parameter(wick.zeros(1), false) }).a.requires_grad)
  end)
  it("module._parameters takes a tensor of the graph, which parameters() gives and the forward reads", function()
    local l = nn.Linear(2, 2)
    local x = wick.randn(3, 2)
    local grads = wick.autograd.grad(l(x):pow(2):sum(), l:parameters(), { create_graph = true })
    local clone = wick.deepcopy(l)
    clone._parameters.weight = l.weight - 0.1 * grads[1]
    clone._parameters.bias = l.bias - 0.1 * grads[2]
    local params = clone:parameters()
    assert.are.equal(2, #params)
    assert.is_false(params[1].is_leaf)
    clone(x):pow(2):sum():backward() -- the second-order path reaches the original weights
    assert.is_true(l.weight.grad:abs():sum():item() > 0)
    assert.are.same({ "weight", "bias" }, { unpack(clone:state_dict():keys()) })
  end)
end)

describe("the fifty-first round's lines, part 10 (the implicit-layers tutorial's DEQ and Newton layers)", function()
  it("gradcheck runs the function with grad mode on and its inputs requiring grad, as PyTorch's", function()
    local x = wick.randn(3, { dtype = "float64", requires_grad = true })
    -- TanhNewtonImplicitLayer registers a hook on its output
    assert.is_true(wick.autograd.gradcheck(function(v)
      assert.is_true(wick.is_grad_enabled() and v.requires_grad)
      local y = v:sin() * 2
      y:register_hook(function(g) return g end)
      return y
    end, { x }))
    assert.is_true(wick.autograd.gradgradcheck(function(v) return v:sin() * v end, { x }))
  end)
  it("a hook's result of another shape is an error naming both shapes", function()
    local W = wick.randn(3, 3, { requires_grad = true })
    local z = wick.tanh(W:mv(wick.randn(3)))
    z:register_hook(function(g) return g:view(1, 3) end)
    support.assert_error_has(function() z:sum():backward() end,
      "a hook returned a tensor of shape [1, 3], float32, on cpu, where the gradient is [3], float32, on cpu")
  end)
end)

describe("the fifty-first round's lines, part 11 (PEFT's wrappers)", function()
  it("a class's own __getattr__ is the fallback for names the lookup misses, as Python's", function()
    local W = nn.Module:extend("W")
    function W:init(m) self.model = m end
    function W:__getattr__(name) -- PEFT's PeftModel.__getattr__
      local ok, v = pcall(nn.Module.__getattr__, self, name)
      if ok then return v end
      if name == "model" then error(v, 0) end
      return self.model[name]
    end
    function W:forward(x) return self.model(x) end
    local w = W(nn.Linear(2, 3))
    assert.are.equal(2, w.in_features)
    assert.are.same({ 3, 2 }, w.weight:size():totable())
    assert.is_nil(w.nosuch) -- (Linear's own miss: nil)
    assert.are.same({ "model.weight", "model.bias" }, { unpack(w:state_dict():keys()) })
    assert.are.same({ 4, 3 }, w(wick.randn(4, 2)):size():totable())
    -- inherited by a subclass, whose own methods still come first
    local W2 = W:extend("W2")
    function W2:hello() return "hi" end
    local w2 = W2(nn.Linear(2, 5))
    assert.are.same({ "hi", 5 }, { w2:hello(), w2.out_features })
    -- a __getattr__ that defers to Module's raises for a missing name, as PyTorch's AttributeError
    local R = nn.Module:extend("R")
    function R:init() self.lin = nn.Linear(1, 1) end
    function R:__getattr__(name) return nn.Module.__getattr__(self, name) end
    local r = R()
    support.assert_error_has(function() return r.missing end, "'R' object has no attribute 'missing'")
    assert.is_truthy(tostring(r):find("(lin): Linear", 1, true))
  end)
end)

describe("the fifty-first round's lines, part 12 (InternVL)", function()
  it("x:size(a, b) is an error, as PyTorch's TypeError, not the first dim's size", function()
    local x = wick.zeros(2, 3, 4)
    support.assert_error_has(function() return x:size(1, 2) end, "size: takes one dim, got 2 arguments")
    assert.are.equal(3, x:size(2, nil))
    assert.are.same({ 2, 3, 4 }, { unpack(x:size()) })
  end)
end)

describe("the fifty-first round's lines, part 13 (TRL's DPO collator)", function()
  it("a Lua boolean where a mask goes names the == pitfall (TRL's masked_fill(completion_mask == 0, -100))", function()
    local ids = wick.tensor({ 5, 6, 7 }, { dtype = "int64" })
    local cm = wick.tensor({ 0, 1, 1 }, { dtype = "int64" })
    support.assert_error_has(function() return ids:masked_fill(cm == 0, -100) end,
      "masked_fill: expected a tensor for argument 'mask', got a boolean (false): Lua's == and ~= give one boolean")
    support.assert_error_has(function() return ids:masked_select(cm == 0) end, "write t:eq(x) or t:ne(x)")
    assert.are.same({ -100, 6, 7 }, ids:masked_fill(cm:eq(0), -100):totable())
  end)
end)

describe("the fifty-first round's lines, part 14 (UperNet's segmentation loss)", function()
  it("a target of ignore_index + 1 says the 1-based shift moved the ignored value too", function()
    local labels = wick.tensor({ { { 0, 255 }, { 3, 4 } } }, { dtype = "int64" })
    local loss = nn.CrossEntropyLoss({ ignore_index = 255 })
    support.assert_error_has(function() return loss(wick.randn(1, 5, 2, 2), labels + 1) end,
      "Target 256 is out of bounds (classes are 1 to 5). It is ignore_index + 1")
    support.assert_error_has(function() return loss(wick.randn(4, 5), wick.tensor({ 1, 256, 2, 3 }, { dtype = "int64" })) end,
      "It is ignore_index + 1")
    local shifted = wick.where(labels:eq(255), labels, labels + 1)
    assert.is_true(loss(wick.randn(1, 5, 2, 2), shifted):item() > 0)
  end)
end)

describe("the fifty-first round's lines, part 15 (BYOL's learner)", function()
  it("deepcopy binds a hook's closure to the copy of its owner in whatever order it meets them", function()
    local W = nn.Module:extend("W")
    function W:init(net)
      self.net = net
      self.hidden = {}
      net[2]:register_forward_hook(function(m, i, o) return self:_hook(m, i, o) end)
    end
    function W:_hook(_, _, o) self.hidden.v = o end
    for _, order in ipairs({ "net first", "owner first" }) do
      local net = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
      local enc = W(net)
      local c = wick.deepcopy(order == "net first" and { net, enc } or { enc, net })
      local copy = order == "net first" and c[2] or c[1]
      copy.net(wick.randn(1, 2))
      assert.is_not_nil(copy.hidden.v, order)
      assert.is_nil(enc.hidden.v, order)
    end
  end)
  it("a list's index 0 is an error: lists count from 1", function()
    local m = nn.Sequential(nn.Linear(1, 1), nn.ReLU())
    assert.are.equal("Linear", getmetatable(m:children()[-2]).__name)
    support.assert_error_has(function() return m:children()[0] end, "a list's index 0: lists count from 1")
  end)
end)

describe("the fifty-second round's lines, part 1 (Idefics3's pixel values)", function()
  it("view(n, size) is Python's f(a, *size), as f({a} + size) is", function()
    local x = wick.randn(2, 3, 4, 5)
    assert.are.same({ 6, 4, 5 }, x:view(6, x.shape[{ 3 }]).shape:totable())
    assert.are.same({ 6, 4, 5 }, x:view({ 6 } + x.shape[{ 3 }]).shape:totable())
  end)
end)

describe("the fifty-second round's lines, part 2 (timm's EVA, PyG's radius_graph, OneFormer's gradients)", function()
  it("checkpoint takes its own options out of fn's keyword table, as timm's checkpoint(blk, x, rope=, use_reentrant=)", function()
    local B = nn.Module:extend("B")
    function B:init() self.l = nn.Linear(2, 2) end
    function B:forward(x, scale) self.got = scale; return self.l(x) * (scale or 1) end
    local b, x = B(), wick.randn(3, 2, { requires_grad = true })
    for _, re in ipairs({ true, false }) do
      local y = wick.utils.checkpoint.checkpoint(b, x, { scale = 2, use_reentrant = re })
      assert.are.equal(2, b.got)
      y:sum():backward()
      local g = x.grad:clone()
      x.grad = nil
      b(x, 2):sum():backward()
      assert.is_true(wick.allclose(g, x.grad))
      x.grad = nil
    end
    wick.utils.checkpoint.checkpoint(b, x, { use_reentrant = false })
    assert.is_nil(b.got) -- a table of options only is no argument of fn
    support.assert_error_has(function() wick.utils.checkpoint.checkpoint(b, x, { scale = 2, use_reentrant = 3 }) end,
      "expected a boolean for option 'use_reentrant'")
  end)
  it("fill_diagonal_ takes a boolean, as radius_graph's adj.fill_diagonal_(False)", function()
    local adj = wick.ones(3, 3, { dtype = "bool" }):fill_diagonal_(false)
    assert.are.same({ { false, true, true }, { true, false, true }, { true, true, false } }, adj:tolist())
    assert.are.same({ { 1, 0 }, { 0, 1 } }, wick.zeros(2, 2):fill_diagonal_(true):tolist())
  end)
  it("to_pytorch_names takes one name with the model: a named_parameters() key as PyTorch's", function()
    local m = nn.Sequential(nn.Linear(2, 2), nn.ModuleDict({ ["0"] = nn.Linear(1, 1) }))
    assert.are.equal("0.weight", nn.utils.to_pytorch_names("1.weight", m))
    assert.are.equal("1.0.bias", nn.utils.to_pytorch_names("2.0.bias", m))
    assert.are.equal("layers.0.w", nn.utils.from_pytorch_names("layers.0.w", m) and nn.utils.to_pytorch_names("layers.1.w"))
  end)
end)

describe("the fifty-second round's lines, part 3 (Pop2Piano's labels)", function()
  it("HF's -100 moved to -99 by labels + 1 is named as ignore_index + 1", function()
    local logits = wick.randn(3, 5)
    local labels = wick.tensor({ 2, 4, -100 }, { dtype = wick.long })
    support.assert_error_has(function() return F.cross_entropy(logits, labels + 1) end,
      "Target -99 is out of bounds (classes are 1 to 5). It is ignore_index + 1")
    support.assert_error_has(function() return F.cross_entropy(logits, labels + 1, { ignore_index = -100 }) end,
      "where(labels:eq(-100), labels, labels + 1)")
    local shifted = wick.where(labels:eq(-100), labels, labels + 1)
    assert.is_true(F.cross_entropy(logits, shifted):item() > 0)
  end)
end)

describe("the fifty-second round's lines, part 4 (V-JEPA 2's target encoder EMA)", function()
  it("_foreach_ ops take model:parameters() as a list argument; lists of other lengths are an error", function()
    local lin = nn.Linear(2, 2)
    local t = { wick.zeros(2, 2), wick.zeros(2) }
    wick._foreach_add_(t, lin:parameters(), { alpha = 0.5 })
    assert.is_true(wick.allclose(t[1], lin.weight * 0.5))
    wick._foreach_lerp_(t, lin:parameters(), 0.5)
    assert.is_true(wick.allclose(t[2], lin.bias * 0.75))
    support.assert_error_has(function() wick._foreach_add_(t, { wick.zeros(2, 2) }) end,
      "expected lists of the same length: the first has 2 tensors, argument 2 has 1")
  end)
end)

describe("the fifty-second round's lines, part 5 (PyG's GraphGPS example)", function()
  it("a helper object holding modules the owner registers itself is a plain attribute (RedrawProjection(self.convs))", function()
    local H = wick.Object:extend("H")
    local Net = nn.Module:extend("Net")
    function Net:init()
      self.convs = nn.ModuleList({ nn.Linear(2, 2) })
      self.redraw = H()
      self.redraw.model, self.redraw.first = self.convs, self.convs[1]
    end
    local net = Net()
    assert.are.equal(2, #net:parameters())
    local keys = {}
    for k in pairs(net:state_dict()) do keys[#keys + 1] = k end
    table.sort(keys)
    assert.are.same({ "convs.1.bias", "convs.1.weight" }, keys)
    local Loose = nn.Module:extend("Loose")
    function Loose:init() self.redraw = H(); self.redraw.model = nn.Linear(2, 2) end
    support.assert_error_has(function() return Loose():parameters() end, "holding a Linear at 'model'")
  end)
end)

describe("the fifty-second round's lines, part 6 (gigagan's gradient penalty)", function()
  it("autograd.grad's grad_outputs of another length than outputs is PyTorch's error", function()
    local x = wick.randn(3, { requires_grad = true })
    support.assert_error_has(function()
      return wick.autograd.grad({ outputs = { (x * 3):sum(), x * 2 }, inputs = x, grad_outputs = { wick.ones(3) } })
    end, "got 2 tensors and 1 gradients")
    support.assert_error_has(function()
      return wick.autograd.grad({ outputs = { x * 2 }, inputs = x, grad_outputs = { wick.ones(3), wick.ones(3) } })
    end, "got 1 tensors and 2 gradients")
    local g = wick.autograd.grad({ outputs = { (x * 3):sum(), x * 2 }, inputs = x, grad_outputs = { nil, wick.ones(3) } })
    assert.are.same({ 5, 5, 5 }, g[1]:tolist())
  end)
end)

describe("the fifty-second round's lines, part 7 (perceiver-ar's pad id)", function()
  it("ignore_index = 0 with no target 0 warns that it ignores nothing; a 0 among the targets is a sentinel", function()
    local logits, y = wick.randn(3, 5), wick.tensor({ 1, 2, 3 }, { dtype = "int64" })
    local got = support.warnings_of(function() F.cross_entropy(logits, y, { ignore_index = 0 }) end)
    assert.are.equal(1, #got)
    support.assert_contains(got[1], "ignore_index = 0 ignores nothing here, classes count from 1")
    got = support.warnings_of(function() F.nll_loss(logits:log_softmax(2), y, { ignore_index = 0 }) end)
    assert.are.equal(1, #got)
    local zero = wick.tensor({ 0, 2, 3 }, { dtype = "int64" })
    got = support.warnings_of(function() F.cross_entropy(logits, zero, { ignore_index = 0 }) end)
    assert.are.equal(0, #got)
    assert.is_true(wick.allclose(F.cross_entropy(logits, zero, { ignore_index = 0 }),
      F.cross_entropy(logits[{ { 2, 3 } }], zero[{ { 2, 3 } }])))
  end)
end)

describe("the fifty-second round's lines, part 8 (ultralytics' YOLOv8 loss)", function()
  it("a helper object holding modules without tensors is a plain attribute (self.criterion = v8DetectionLoss(self))", function()
    local Loss = wick.Object:extend("Loss")
    function Loss:init(m) self.bce, self.model = nn.BCEWithLogitsLoss({ reduction = "none" }), m end
    local Net = nn.Module:extend("Net")
    function Net:init() self.fc = nn.Linear(2, 2) end
    local net = Net()
    net.criterion = Loss(net)
    assert.are.equal(2, #net:parameters())
    assert.are.equal("float64", net:to("float64").fc.weight.dtype)
    local Holder = wick.Object:extend("Holder")
    function Holder:init() self.proj = nn.Linear(2, 2) end
    net.holder = Holder()
    support.assert_error_has(function() return net:parameters() end, "holding a Linear at 'proj'")
  end)
  it("t:new_full takes a 0-dim tensor as the value (make_anchors' new_full((h * w, 1), strides[i]))", function()
    local strides = wick.tensor({ 8, 16, 32 })
    local t = wick.zeros(3, { dtype = "float64" }):new_full({ 2, 1 }, strides[2])
    assert.are.same({ { 16 }, { 16 } }, t:tolist())
    assert.are.equal("float64", t.dtype)
  end)
end)

describe("the fifty-second round's lines, part 9 (Qwen3-ASR's cu_seqlens)", function()
  it("wick.tensor of integer Lua numbers beside int64 tensors is int64; a fraction makes it the default float", function()
    local l = wick.tensor({ 250, 150 }, { dtype = wick.int64 })
    local cu = wick.tensor({ 0, l[1], l[2] % 26 })
    assert.are.equal("int64", cu.dtype)
    assert.are.same({ 0, 250, 20 }, cu:tolist())
    assert.are.equal("float32", wick.tensor({ 0.5, l[1] }).dtype)
    assert.are.equal("float64", wick.tensor({ 0, wick.tensor(1.5, { dtype = "float64" }) }).dtype)
    assert.are.equal("float32", wick.tensor({ 1 / 0, l[1] }).dtype)
    assert.are.equal("float32", wick.tensor({ 0, 1 }).dtype) -- Lua numbers alone: the default dtype, as API.md says
  end)
end)

describe("the fifty-second round's lines, part 10 (the Karras U-Net's sampler, Molmo2's shapes)", function()
  it("comparisons beside float16 and bfloat16 round the other operand to that dtype first, as PyTorch's", function()
    local h = wick.tensor({ 0.1, 1 / 3 }, { dtype = "float16" })
    assert.are.same({ true, false }, h:eq(0.1):tolist())
    assert.are.same({ false, true }, h:eq(1 / 3):tolist())
    assert.are.same({ false, true }, h:ne(0.1):tolist())
    assert.are.same({ false, false }, h:lt(0.1):tolist())
    local b = wick.tensor({ 0.1 }, { dtype = "bfloat16" })
    assert.are.same({ true }, b:eq(0.1):tolist())
    assert.are.same({ true }, b:eq(wick.tensor(0.1)):tolist())
    -- an int64 tensor beside float16: 2049 is float16's 2048
    local i = wick.tensor({ 2049, 2049 }, { dtype = "int64" })
    assert.are.same({ true, true }, wick.tensor({ 2049, 2048 }, { dtype = "float16" }):eq(i):tolist())
    local x = h:clone()
    x:eq_(0.1)
    assert.are.same({ 1, 0 }, x:tolist())
    assert.are.same({ false }, wick.tensor({ 0.1 }):eq(wick.tensor({ 0.1 }, { dtype = "float64" })):tolist())
  end)
  it("a Size has :unpack(), Python's b, c, h, w = x.shape", function()
    local b, c = wick.randn(2, 3).shape:unpack()
    assert.are.same({ 2, 3 }, { b, c })
  end)
end)

describe("the fifty-second round's lines, part 11 (the Karras U-Net's convolutions)", function()
  it("F.conv2d's options in the bias slot take padding = 'same' with an even kernel too", function()
    local x, w = wick.randn(1, 1, 5, 5), wick.randn(1, 1, 2, 2)
    local y = F.conv2d(x, w, { padding = "same" })
    assert.are.same({ 1, 1, 5, 5 }, y.shape:totable())
    assert.is_true(wick.equal(y, F.conv2d(x, w, nil, { padding = "same" })))
    local x1, w1 = wick.randn(1, 1, 5), wick.randn(1, 1, 2)
    assert.is_true(wick.equal(F.conv1d(x1, w1, { padding = "same" }), F.conv1d(x1, w1, nil, { padding = "same" })))
  end)
end)

describe("the fifty-second round's lines, part 12 (torchvision's RandomMixup)", function()
  it("wick._sample_dirichlet draws on the simplex, and Dirichlet samples through it", function()
    local d = wick._sample_dirichlet(wick.tensor({ 0.2, 0.2 }, { dtype = "float64" }))
    assert.are.same({ 2 }, d.shape:totable())
    assert.is_true(math.abs(d:sum():item() - 1) < 1e-12 and d:min():item() > 0)
    local saved = wick._sample_dirichlet
    wick._sample_dirichlet = function(c) return wick.full(c.shape, 1 / c:size(-1), { dtype = c.dtype }) end
    local ok, s = pcall(function() return wick.distributions.Dirichlet(wick.tensor({ 1.0, 2.0, 3.0 })):sample() end)
    wick._sample_dirichlet = saved
    assert.is_true(ok)
    assert.is_true(wick.allclose(s, wick.full({ 3 }, 1 / 3)))
    support.assert_error_has(function() wick._sample_dirichlet(wick.tensor(1.0)) end, "at least 1 dim")
  end)
end)

describe("the fifty-second round's lines, part 13 (Qwen3.5's gate, up = x.chunk(2, -1))", function()
  it("arithmetic and cat with a chunk's table say that chunk gives one table", function()
    local x = wick.randn(2, 8)
    local gate = x:chunk(2, -1)
    local hint = "a table of 2 tensors (split, chunk, unbind and LSTMCell give one table: unpack(...) it, or index it)"
    support.assert_error_has(function() return gate * x end, "arithmetic on a list of 2 tensors: split, chunk, unbind")
    support.assert_error_has(function() return x + gate end, "add: expected tensors or numbers, got tensor and " .. hint)
    support.assert_error_has(function() return wick.cat({ gate, x }) end, "expected a tensor at position 1, got " .. hint)
    support.assert_error_has(function() return x * {} end, "got tensor and table")
  end)
end)

describe("the fifty-second round's lines, part 14 (enformer's gamma pdf)", function()
  it("xlogy, xlog1py, hypot, logaddexp2 and copysign work in the operands' result type, as PyTorch's", function()
    local a = wick.tensor({ 3.3 }, { dtype = "float64" })
    local y = wick.tensor({ 9.1 }, { dtype = "float32" })
    local y64 = y:double()
    assert.are.equal(0, (wick.xlogy(a, y) - wick.xlogy(a, y64)):item())
    assert.are.equal(0, (wick.special.xlog1py(a, y) - wick.special.xlog1py(a, y64)):item())
    assert.are.equal(0, (wick.hypot(a, y) - wick.hypot(a, y64)):item())
    assert.are.equal(0, (wick.logaddexp2(a, y) - wick.logaddexp2(a, y64)):item())
    assert.are.equal("float64", wick.copysign(y, a).dtype)
    assert.are.equal("float32", wick.xlogy(wick.ones(2), wick.tensor(2.0, { dtype = "float64" })).dtype)
    assert.are.equal("float32", wick.result_type(wick.ones(2), wick.tensor(1, { dtype = "float64" })))
    assert.are.equal("float64", wick.result_type(wick.ones(2, { dtype = "int32" }), wick.tensor(1.5, { dtype = "float64" })))
  end)
end)

describe("the fifty-second round's lines, part 15 (RecurrentGemma's RG-LRU gates)", function()
  it("baddbmm in bfloat16 rounds once, as PyTorch's", function()
    wick.manual_seed(0)
    local inp, a, b = wick.randn(2, 1, 16):bfloat16(), wick.randn(2, 20, 16):bfloat16(), wick.randn(2, 16, 16):bfloat16()
    local got = wick.baddbmm(inp, a, b, { beta = 0.5, alpha = 2 })
    assert.are.equal("bfloat16", got.dtype)
    local once = (inp:float() * 0.5 + wick.bmm(a:float(), b:float()) * 2):bfloat16()
    assert.are.equal(0, got:ne(once):sum():item())
  end)
  it("the bitwise ops' dtype error shows mask code that runs", function()
    support.assert_error_has(function() return wick.bitwise_not(wick.zeros(2)) end, "x:gt(0):logical_and(y:gt(0))")
  end)
end)

describe("the fifty-second round's lines, part 16 (Pixtral's patch grid)", function()
  it("a slice bound of a one-element float tensor says integer tensors of one element are indices", function()
    support.assert_error_has(function() return wick.zeros(6)[{ wick.slice(nil, wick.tensor(2.5)) }] end,
      "got a float32 tensor of 1 element (only integer tensors of one element are indices)")
  end)
end)

describe("the fifty-second round's lines, part 17 (PaLM-rlhf, MEGABYTE, TimesFM)", function()
  it("detach_ of a view is PyTorch's error", function()
    local a = wick.randn(3, { requires_grad = true })
    local r = (a * 2):view(3, 1)
    support.assert_error_has(function() r:detach_() end, "Can't detach views in-place. Use detach() instead")
    local q = a * 2
    q:detach_()
    assert.is_false(q.requires_grad)
  end)
  it("wick.zip_longest fills the shorter iterables with false or fillvalue", function()
    local got = {}
    for x, y in wick.zip_longest({ 1, 2, 3 }, { 4 }) do got[#got + 1] = { x, y } end
    assert.are.same({ { 1, 4 }, { 2, false }, { 3, false } }, got)
    got = {}
    for x, y in wick.zip_longest({ 1 }, { 4, 5 }, { fillvalue = 0 }) do got[#got + 1] = { x, y } end
    assert.are.same({ { 1, 4 }, { 0, 5 } }, got)
  end)
  it("wick.is_floating_point, is_complex and is_signed take a dtype", function()
    assert.is_true(wick.is_floating_point(wick.float64))
    assert.is_false(wick.is_floating_point("int64"))
    assert.is_true(wick.is_complex("complex64"))
    assert.is_false(wick.is_signed("uint8"))
    support.assert_error_has(function() wick.is_floating_point("floaty") end, "unknown dtype 'floaty'")
  end)
end)

describe("the fifty-second round's lines, part 18 (HRM's softmax)", function()
  it("F.softmax and F.log_softmax take PyTorch's positional (dim, _stacklevel, dtype)", function()
    local x = wick.randn(2, 3)
    assert.are.equal("float64", F.softmax(x, -1, nil, wick.float64).dtype)
    assert.is_true(wick.allclose(F.log_softmax(x, 2, 3, "float64"), x:double():log_softmax(2)))
  end)
end)

describe("the fifty-second round's lines, part 19 (Reformer's reversible backward)", function()
  it("t.requires_grad = true of a computed tensor is PyTorch's error; requires_grad_() of it is allowed", function()
    local a = wick.ones(2, { requires_grad = true })
    local b = a * 2
    support.assert_error_has(function() b.requires_grad = true end, "you can only change requires_grad flags of leaf tensors")
    assert.is_true(rawequal(b, b:requires_grad_()))
    local c = wick.ones(2)
    c.requires_grad = true
    assert.is_true(c.requires_grad)
  end)
end)

describe("the fifty-second round's lines, part 20 (Nystromformer's masks)", function()
  it("comparing tensors of several elements with > names both forms Lua turned it into", function()
    local x = wick.randn(3)
    support.assert_error_has(function() return x > wick.zeros(3) end, "elements with < (or >): Lua's comparisons give one boolean")
  end)
end)

describe("the fifty-second round's lines, part 21 (diffusers' attention processors)", function()
  it("an empty keywords table then **kwargs binds the kwargs alone: f(h, {}, kwargs)", function()
    local M = nn.Module:extend("M")
    function M:forward(h, enc, mask, ...) return { enc = enc, mask = mask, n = select("#", ...), kw = (...) } end
    local m = M()
    local r = m(1, {}, {})
    assert.is_nil(r.enc)
    assert.is_nil(r.mask)
    r = m(1, {}, { scale = 3 })
    assert.is_nil(r.enc)
    assert.are.equal(3, r.kw.scale)
    r = m(1, {}, { mask = 5 })
    assert.is_nil(r.enc)
    assert.are.equal(5, r.mask)
    r = m(1, { mask = 2 }, {})
    assert.are.equal(2, r.mask)
  end)
end)

describe("the fifty-second round's lines, part 22 (FNet's DFT matrices)", function()
  it("m:to(dtype) casts complex buffers as PyTorch's; m:double() leaves them; m:to(complex64) is taken", function()
    local m = nn.Module()
    m.d = nn.Buffer(wick.complex(wick.ones(2), wick.ones(2)))
    m.l = nn.Linear(2, 2)
    m:double()
    assert.are.equal("complex64", m.d.dtype)
    assert.are.equal("float64", m.l.weight.dtype)
    local got = support.warnings_of(function() m:to(wick.float64) end)
    assert.are.equal("float64", m.d.dtype)
    assert.are.same({ 1, 1 }, m.d:tolist())
    support.assert_contains(got[1], "Casting complex values to real discards the imaginary part")
    local l = nn.Linear(2, 2)
    got = support.warnings_of(function() l:to(wick.complex64) end)
    assert.are.equal("complex64", l.weight.dtype)
    support.assert_contains(got[1], "Complex modules are a new feature")
    support.assert_error_has(function() nn.Linear(2, 2):to("int64") end,
      "nn.Module.to only accepts floating point or complex dtypes, but got desired dtype=int64")
  end)
end)

describe("the fifty-second round's lines, part 23 (FNet's complex products)", function()
  it("a complex64 by float64 product names the dtypes as given", function()
    local z = wick.complex(wick.randn(2, 3), wick.randn(2, 3))
    support.assert_error_has(function() return wick.matmul(z, wick.randn(3, 2, { dtype = wick.float64 })) end,
      "got complex64 and float64")
    assert.are.equal("complex64", wick.matmul(z, wick.randn(3, 2)).dtype)
  end)
end)

describe("the fifty-second round's lines, part 24 (FLAVA's ITM pairs)", function()
  it("a Lua boolean given to a logical op says t:any() is one and names the tensor form", function()
    local p = wick.tensor({ false, true })
    support.assert_error_has(function() return p:logical_or(not p:any()) end,
      "t:any() / t:all() are Lua booleans: t:flatten():any(1) is the 0-dim tensor")
    assert.are.same({ false, true }, p:logical_or(p:flatten():any(1):logical_not()):tolist())
    assert.are.same({ true, true }, wick.tensor({ false, false }):logical_or(wick.tensor({ false, false }):flatten():any(1):logical_not()):tolist())
  end)
end)

describe("the fifty-second round's lines, part 25 (TAPAS' relaxed draws)", function()
  it("the relaxed distributions take every argument by name and PyTorch's positional (temperature, nil, logits)", function()
    local D = wick.distributions
    local l = wick.tensor({ 0.5, -1, 2 })
    for _, C in ipairs({ D.RelaxedBernoulli, D.LogitRelaxedBernoulli, D.RelaxedOneHotCategorical, D.ExpRelaxedCategorical }) do
      local by_name = C({ temperature = 0.5, logits = l })
      local positional = C(0.5, nil, l)
      local usual = C(0.5, { logits = l })
      assert.is_true(wick.allclose(by_name.logits, usual.logits))
      assert.is_true(wick.allclose(positional.logits, usual.logits))
      assert.are.same({ 3 }, by_name:sample().shape:totable())
    end
  end)
end)

describe("the fifty-second round's lines, part 26 (Jamba's cache)", function()
  it("new_zeros(a, size) is Python's new_zeros(a, *size), as the {a} + size form is", function()
    local A = wick.ones(3, 4)
    assert.are.same({ 2, 3, 4 }, A:new_zeros(2, A.shape).shape:totable())
    support.assert_error_has(function() return A:new_zeros(2, { "x" }) end, "new_zeros: expected an integer for argument 'size', got string")
    assert.are.same({ 2, 3, 4 }, A:new_zeros({ 2 } + A.shape).shape:totable())
  end)
end)

describe("the fifty-second round's lines, part 27 (CSM's top-k sampling)", function()
  it("[0] of a named result's values says PyTorch's [0] is .values and [1] .indices", function()
    local s = wick.tensor({ { 3, 1, 2 }, { 0, 5, 4 } })
    support.assert_error_has(function() return wick.topk(s, 2)[0] end, "PyTorch's r[0] is r.values and r[1] is r.indices")
    support.assert_error_has(function() return s[0] end, "index 0 is invalid: indices count from 1")
    assert.are.same({ { 2 }, { 4 } }, wick.topk(s, 2).values[{ "...", -1, wick.newaxis }]:tolist())
  end)
end)

describe("the fifty-second round's lines, part 28 (the STN tutorial, time_sequence_prediction)", function()
  it("3-D affine grids, NaN positions in 5-D sampling reading zero, and the align_corners warning", function()
    local th = wick.tensor({ { { 1, 0, 0, 0.1 }, { 0, 1, 0, 0 }, { 0, 0, 1, 0 } } }, { dtype = "float64" })
    local g = F.affine_grid(th, { 1, 1, 2, 3, 4 }, { align_corners = true })
    assert.are.same({ 1, 2, 3, 4, 3 }, g.shape:totable())
    assert.is_true(math.abs(g[{ 1, 1, 1, 1, 1 }]:item() - (-0.9)) < 1e-12) -- x = -1 + 0.1
    assert.is_true(math.abs(g[{ 1, 2, 3, 4, 3 }]:item() - 1) < 1e-12)      -- z = 1
    support.assert_error_has(function() F.affine_grid(wick.randn(1, 2, 3), { 1, 1, 2, 3, 4 }) end,
      "Expected a batch of 3D affine matrices of shape Nx3x4")
    local x = wick.arange(24, { dtype = "float64" }):view(1, 1, 2, 3, 4):requires_grad_()
    local y = F.grid_sample(x, wick.tensor({ { { { { 0 / 0, 0, 0 }, { 0.1, 0.2, 0.1 } } } } }, { dtype = "float64" }),
      { align_corners = true })
    assert.are.equal(0, y:flatten()[1]:item())
    y:sum():backward()
    assert.is_false(x.grad:isnan():any())
    local got = support.warnings_of(function() F.grid_sample(x:detach(), g:to("float64")) end)
    support.assert_contains(got[1], "align_corners=False since 1.3.0")
  end)
  it("LBFGS resumes PyTorch's saved state, whose ro list holds 0-dim tensors", function()
    local w = wick.tensor({ 1.0, 2.0 }, { dtype = "float64" }):requires_grad_()
    local opt = wick.optim.LBFGS({ w }, { lr = 0.8, max_iter = 3 })
    local function closure() opt:zero_grad(); local l = ((w - 3) ^ 2):sum(); l:backward(); return l end
    opt:step(closure)
    local sd = opt:state_dict()
    local st = sd.state[0] or sd.state[1]
    for i, r in ipairs(st.ro) do st.ro[i] = wick.tensor(r, { dtype = "float64" }) end
    local group = {}
    for k, v in pairs(sd.param_groups[1]) do group[k] = v end
    group.params = { 0 } -- PyTorch's numbering
    opt:load_state_dict({ state = { [0] = st }, param_groups = { group } })
    assert.is_true(opt:step(closure):item() >= 0)
  end)
  it("a class method named __init__ or __init says the constructor is init", function()
    local M = nn.Module:extend("M")
    support.assert_error_has(function() function M:__init__() end end, "the constructor is init here, not __init__")
    local O = wick.Object:extend("O")
    support.assert_error_has(function() function O:__init() end end, "the constructor is init here, not __init")
  end)
end)

describe("the fifty-second round's lines, part 29 (affine_grid's sizes)", function()
  it("a size entry that is no integer is an error naming the size", function()
    support.assert_error_has(function() F.affine_grid(wick.randn(1, 2, 3), { {} }, { align_corners = true }) end,
      "affine_grid: expected an integer for argument 'size'")
  end)
end)

describe("the fifty-third round's lines, part 1 (split's list, a Size's repetition, pickled modules)", function()
  it("a ported `a, b = x.split(...)` that kept the whole list says to unpack it at the method or arithmetic", function()
    local x = wick.randn(2, 6)
    local a, b = x:split({ 2, 4 }, -1)
    assert.is_nil(b)
    support.assert_error_has(function() return a:transpose(1, 2) end, "a table of 2 tensors has no method 'transpose'")
    support.assert_error_has(function() return a * 2 end, "arithmetic on a list of 2 tensors")
    support.assert_error_has(function() return 2 - a end, "x:chunk(2):unpack()")
    local q = wick.randn(3, 4, 6, 8):unbind(1)
    support.assert_error_has(function() return (q * 0.5):matmul(q) end, "arithmetic on a list of 3 tensors")
    support.assert_error_has(function() return wick.matmul(q, q) end, "got a table of 3 tensors")
    support.assert_error_has(function() return x:chunk(2)[0] end, "lists count from 1")
    local parts = x:tensor_split(3, 2)
    assert.are.equal(3, #parts)
    assert.is_true(parts[-1]:equal(x[{ {}, { 5, 6 } }]))
    assert.is_true(wick.cat(x:chunk(3, 2), 2):equal(x))
    assert.are.equal(4, #(x:chunk(2, 2) + x:unbind(1)))
    local l1, l2 = nn.Linear(2, 2), nn.Linear(2, 3)
    local ps = l1:parameters() + l2:parameters()
    assert.are.equal(4, #ps)
    assert.are.equal(l2.bias, ps[-1])
    local s, c = unpack(x:chunk(2, 2))
    assert.are.same({ 2, 3 }, s:size():tolist())
    assert.are.same({ 2, 3 }, c:size():tolist())
  end)
  it("a Size repeats as Python's tuple: (x.shape[0],) + (1,) * (x.ndim - 1)", function()
    local x = wick.randn(4, 3, 5)
    local shape = wick.Size({ x.shape[1] }) + wick.Size({ 1 }) * (x:dim() - 1)
    assert.are.equal(wick.Size({ 4, 1, 1 }), shape)
    assert.are.equal(wick.Size({ 2, 3, 2, 3 }), 2 * wick.Size({ 2, 3 }))
    assert.are.equal(0, #(wick.Size({ 2 }) * 0))
    support.assert_error_has(function() return wick.Size({ 1 }) * 1.5 end, "an integer number of times")
  end)
  it("clip_boxes_to_image given an image's whole shape names the Size", function()
    local img = wick.rand(3, 40, 48)
    support.assert_error_has(function() wick.vision.ops.clip_boxes_to_image(wick.zeros(1, 4), img.shape) end,
      "got a Size [3, 40, 48]")
  end)
  it("a recurrent layer of one layer with dropout warns as PyTorch's", function()
    local got = support.warnings_of(function() nn.LSTM(4, 4, 1, { dropout = 0.2 }) end)
    support.assert_contains(got[1], "non-zero dropout expects num_layers greater than 1")
    assert.are.equal(0, #support.warnings_of(function() nn.GRU(4, 4, 2, { dropout = 0.2 }) end))
  end)
  it("load_state_dict takes a whole module that torch.save pickled", function()
    local path = support.fixture and nil
    local M = nn.Module:extend("PickledM")
    function M:init()
      M.super.init(self)
      self.l = nn.Linear(2, 2)
      self:register_buffer("np", wick.zeros(2), { persistent = false })
      self:register_buffer("p", wick.zeros(1))
    end
    local m = M()
    local ordered = require("wick.ordered")
    local function od(pairs_list)
      local d = ordered.new()
      for _, kv in ipairs(pairs_list) do d[kv[1]] = kv[2] end
      return d
    end
    local w, bias = wick.randn(2, 2), wick.randn(2)
    -- what wick.load gives for torch.save(model) with weights_only = false
    local pickled = od({ { "__class__", "__main__.M" }, { "training", true }, { "_parameters", od({}) },
      { "_buffers", od({ { "np", wick.ones(2) }, { "p", wick.full({ 1 }, 7) } }) },
      { "_non_persistent_buffers_set", { "np" } },
      { "_modules", od({ { "l", od({ { "__class__", "torch.nn.modules.linear.Linear" }, { "_parameters",
        od({ { "weight", w }, { "bias", bias } }) }, { "_buffers", od({}) }, { "_modules", od({}) } }) } }) } })
    assert.is_nil(path)
    local r = m:load_state_dict(pickled)
    assert.are.equal(0, #r.missing_keys + #r.unexpected_keys)
    assert.is_true(m.l.weight:equal(w))
    assert.are.equal(7, m.p:item())
    assert.are.equal(0, m.np:sum():item()) -- (not persistent: not loaded)
  end)
end)

describe("the fifty-third round's lines, part 2 (SoundStream's complex STFT discriminator)", function()
  it("a complex 0-dim tensor beside a floating tensor keeps the tensor's width, as PyTorch's", function()
    local a = wick.ones(2, { dtype = "float64" })
    assert.are.equal("complex128", (wick.complex(0, 1) * a).dtype)
    assert.are.equal("complex128", (a * wick.complex(0, 1)).dtype)
    assert.are.equal("complex128", wick.result_type(wick.complex(0, 1), a))
    local c128 = wick.tensor(1, { dtype = "complex128" })
    assert.are.equal("complex64", (c128 * wick.ones(2)).dtype)
    assert.are.equal("complex64", wick.result_type(wick.ones(2), c128))
    assert.are.equal("complex64", (wick.ones(2, { dtype = "int64" }) * wick.complex(0, 1)).dtype)
    assert.are.equal("complex128", wick.where(wick.tensor({ true, false }), a, wick.complex(0, 1)).dtype)
    local w = wick.tensor({ 0.3 }, { dtype = "float64" })
    local z = wick.exp(wick.complex(0, 1) * w) -- exp(1j * angle), no float32 rounding on the way
    assert.is_true(math.abs(z.real:item() - math.cos(0.3)) < 1e-15)
  end)
  it("gradients of gradients go through complex views and the FFTs (its gradient penalty)", function()
    -- values from PyTorch 2.15
    local x = wick.arange(16, { dtype = "float64" }):sin():view(8, 2):requires_grad_()
    local g = wick.autograd.grad({ outputs = wick.view_as_complex(x):abs():pow(3):sum(), inputs = x, create_graph = true })[1]
    local gg = wick.autograd.grad({ outputs = (g ^ 2):sum(), inputs = x })[1]:flatten()
    assert.is_true(math.abs(gg[2]:item() - 21.4496) < 1e-3 and math.abs(gg[5]:item() + 40.6572) < 1e-3)
    local s = wick.arange(32, { dtype = "float64" }):cos():requires_grad_()
    local spec = wick.stft(s, 8, { window = wick.hann_window(8, { dtype = "float64" }), return_complex = true })
    local gs = wick.autograd.grad({ outputs = (spec:abs() ^ 3):sum(), inputs = s, create_graph = true })[1]
    local gg2 = wick.autograd.grad({ outputs = (gs ^ 2):sum(), inputs = s })[1]
    assert.is_true(math.abs(gg2[1]:item() - 3728.1409) < 1e-3 and math.abs(gg2[4]:item() + 3762.3088) < 1e-3)
    local u = wick.arange(10, { dtype = "float64" }):sin():requires_grad_()
    local y = wick.fft.irfft(wick.fft.rfft(u) * wick.fft.fft(u:to("complex128")):narrow(1, 1, 6))
    local gu = wick.autograd.grad({ outputs = (y ^ 2):sum(), inputs = u, create_graph = true })[1]
    local gg3 = wick.autograd.grad({ outputs = (gu ^ 2):sum(), inputs = u })[1]
    assert.is_true(math.abs(gg3[3]:item() - 8012.3322) < 1e-3 and math.abs(gg3[6]:item() + 12877.4473) < 1e-3)
  end)
end)

describe("the fifty-third round's lines, part 3 (Falcon-H1's scan, LightGlue's masks, Dia's splits)", function()
  it("an options table after positional arguments is read, or refused, never dropped", function()
    local x = wick.randn(2, 3)
    support.assert_error_has(function() x:repeat_interleave(2, 2, { output_size = 5 }) end,
      "Invalid output_size, expected 6 but got 5")
    assert.are.same({ 2, 6 }, x:repeat_interleave(2, 2, { output_size = 6 }):size():totable())
    support.assert_error_has(function() x:repeat_interleave(2, 2, { bogus = 1 }) end, "unknown option 'bogus'")
    local y = wick.ones(3, 3)
    support.assert_error_has(function() wick.tril(y, 0, { diagonal = -1 }) end, "got diagonal both by position")
    support.assert_error_has(function() y:tril(-1, { bogus = 1 }) end, "unknown option 'bogus'")
    assert.are.equal(3, wick.tril(y, { diagonal = -1 }):sum():item())
    assert.are.equal(8, y:tril(nil, { diagonal = 1 }):sum():item())
    support.assert_error_has(function() y:expand(3, 3, { bogus = 1 }) end, "expand: unknown option 'bogus'")
  end)
  it("`not mask` (Python's ~mask) used as a mask names logical_not", function()
    local x, m = wick.randn(4, 3), wick.tensor({ true, false, true, false })
    support.assert_error_has(function() return x[not m] end, "Python's ~mask is mask:logical_not()")
    support.assert_error_has(function() return x:masked_fill((not m):view(4, 1), 0) end, "Python's ~mask is mask:logical_not()")
    support.assert_error_has(function() return wick.where(not m, x:sum(2), 0) end, "Python's ~mask is mask:logical_not()")
    assert.are.equal(6, x[m:logical_not()]:numel())
  end)
  it("a list of parts unpacks as a tensor does: x:chunk(2, -1):unpack()", function()
    local x = wick.randn(2, 4)
    local gate, up = x:chunk(2, -1):unpack()
    assert.is_true(gate:equal(x[{ {}, { 1, 2 } }]) and up:equal(x[{ {}, { 3, 4 } }]))
    local w, b = nn.Linear(2, 2):parameters():unpack()
    assert.are.same({ 2, 2 }, w:size():totable())
    assert.are.same({ 2 }, b:size():totable())
  end)
end)

describe("the fifty-third round's lines, part 4 (torchvision's MaskRCNNHeads)", function()
  it("_load_from_state_dict gets the module's version from its state_dict(), {} from a plain table", function()
    local H = nn.Sequential:extend("VersionedHeads")
    H._version = 2
    local seen
    function H:_load_from_state_dict(sd, prefix, md, ...)
      seen = md.version
      H.super._load_from_state_dict(self, sd, prefix, md, ...)
    end
    local h = H(nn.Linear(2, 2))
    h:load_state_dict(h:state_dict())
    assert.are.equal(2, seen)
    h:load_state_dict({ ["1.weight"] = wick.ones(2, 2), ["1.bias"] = wick.ones(2) })
    assert.is_nil(seen)
    local got
    local s = nn.Sequential(nn.Linear(2, 2))
    s:register_state_dict_post_hook(function(_, _, _, lm) got = lm.version end)
    s:state_dict()
    assert.are.equal(1, got)
  end)
  it("keys a load hook writes under PyTorch's 0-based names are renamed", function()
    local H = nn.Sequential:extend("RemappedHeads")
    function H:_load_from_state_dict(sd, prefix, md, ...)
      for _, t in ipairs({ "weight", "bias" }) do
        local old = prefix .. "fc1." .. t
        if sd[old] ~= nil then sd[prefix .. "0." .. t] = sd[old]; sd[old] = nil end
      end
      H.super._load_from_state_dict(self, sd, prefix, md, ...)
    end
    local h = H(nn.Linear(2, 2))
    local r = h:load_state_dict({ ["fc1.weight"] = wick.ones(2, 2), ["fc1.bias"] = wick.full({ 2 }, 3) })
    assert.are.equal(0, #r.missing_keys + #r.unexpected_keys)
    assert.are.equal(6, h[1].bias:sum():item())
  end)
end)

describe("the fifty-third round's lines, part 5 (pytorch/examples' dcgan and vae)", function()
  it("resize_ keeps the storage while it holds the elements, so views see the writes", function()
    local input = wick.zeros(2, 3)
    input.data:resize_(2, 3):copy_(wick.ones(2, 3))
    assert.are.equal(6, input:sum():item())
    local t = wick.zeros(4)
    local v = t:view(4)
    v:resize_(2)
    v:fill_(1)
    assert.are.same({ 1, 1, 0, 0 }, t:tolist())
    local tr = wick.arange(6):view(2, 3):t()
    tr:resize_(6) -- the storage's order, as PyTorch's
    assert.are.same({ 0, 1, 2, 3, 4, 5 }, tr:tolist())
    local g = wick.arange(3)
    g:resize_(5) -- a larger one: a new storage
    assert.are.same({ 0, 1, 2, 0, 0 }, g:tolist())
  end)
  it("torchvision.utils's save_image and make_grid are wick.vision.utils's too", function()
    assert.are.equal(wick.utils.save_image, wick.vision.utils.save_image)
    assert.are.same({ 3, 12, 42 }, wick.vision.utils.make_grid(wick.rand(4, 3, 8, 8)):size():totable())
  end)
end)

describe("the fifty-third round's lines, part 6 (Aria's grouped experts)", function()
  it("F.grouped_mm multiplies each group of rows by its expert, differentiably", function()
    local x = wick.randn(6, 8, { dtype = "float64" }):requires_grad_()
    local w = wick.randn(3, 8, 5, { dtype = "float64" }):requires_grad_()
    local o = F.grouped_mm(x, w, { offs = wick.tensor({ 2, 2, 6 }, { dtype = "int32" }) })
    assert.are.same({ 6, 5 }, o:size():totable())
    assert.is_true(o[{ { 1, 2 } }]:allclose(x[{ { 1, 2 } }]:mm(w[1])))
    assert.is_true(o[{ { 3, 6 } }]:allclose(x[{ { 3, 6 } }]:mm(w[3])))
    o:sum():backward()
    assert.are.equal(0, w.grad[2]:abs():sum():item()) -- (an expert without rows)
    assert.is_true(x.grad[1]:allclose(w[1]:sum(2)))
    local tail = F.grouped_mm(x:detach(), w:detach(), { offs = wick.tensor({ 2, 2, 4 }, { dtype = "int32" }) })
    assert.are.equal(0, tail[{ { 5, 6 } }]:abs():sum():item())
    local a, b = wick.randn(4, 6), wick.randn(6, 5)
    local k = F.grouped_mm(a, b, { offs = wick.tensor({ 2, 6 }, { dtype = "int32" }) })
    assert.are.same({ 2, 4, 5 }, k:size():totable())
    assert.is_true(k[2]:allclose(a[{ {}, { 3, 6 } }]:mm(b[{ { 3, 6 } }]), 1e-5, 1e-5))
    assert.are.same({ 2, 4, 7 }, F.grouped_mm(wick.randn(2, 4, 6), wick.randn(2, 6, 7)):size():totable())
    support.assert_error_has(function() F.grouped_mm(x, w, { offs = wick.tensor({ 2, 1, 6 }, { dtype = "int32" }) }) end,
      "offs must be non-decreasing")
    support.assert_error_has(function() F.grouped_mm(x, w) end, "offs is required")
    support.assert_error_has(function() F.grouped_mm(a, b, { offs = wick.zeros(0, { dtype = "int32" }) }) end,
      "offs must hold at least one group's end")
    support.assert_error_has(function() F.grouped_mm(a, wick.randn(5, 5), { offs = wick.tensor({ 2, 6 }, { dtype = "int32" }) }) end,
      "contraction dimension of mat_a and mat_b must match, got 6 and 5")
  end)
end)

describe("the fifty-third round's lines, part 7 (transformers' grouped_mm_fallback)", function()
  it("torch.library.custom_op with register_autograd, called as torch.ops.ns.op", function()
    local function fallback(x, w, offs)
      local out, at = x:new_zeros(x:size(1), w:size(3)), 0
      for g, e in ipairs(offs:tolist()) do
        if e > at then out[{ { at + 1, e } }] = x[{ { at + 1, e } }]:mm(w[g]) end
        at = e
      end
      return out
    end
    local op = wick.library.custom_op("spec53::grouped_mm_fallback", fallback, { mutates_args = {} })
    local x = wick.randn(6, 4, { dtype = "float64" }):requires_grad_()
    local w = wick.randn(3, 4, 5, { dtype = "float64" }):requires_grad_()
    local offs = wick.tensor({ 2, 2, 6 }, { dtype = "int32" })
    support.assert_error_has(function() op(x, w, offs):sum():backward() end,
      "Autograd has not been implemented for operator spec53::grouped_mm_fallback")
    op:register_autograd(function(ctx, g)
      local xs, ws = unpack(ctx.saved_tensors)
      return F.grouped_mm(g, ws:transpose(-2, -1), { offs = ctx.offs }), F.grouped_mm(xs:t(), g, { offs = ctx.offs }), nil
    end, { setup_context = function(ctx, inputs) ctx:save_for_backward(inputs[1], inputs[2]); ctx.offs = inputs[3] end })
    x.grad, w.grad = nil, nil
    wick.ops.spec53.grouped_mm_fallback(x, w, offs):sum():backward()
    local x2, w2 = x:detach():requires_grad_(), w:detach():requires_grad_()
    F.grouped_mm(x2, w2, { offs = offs }):sum():backward()
    assert.is_true(x.grad:allclose(x2.grad) and w.grad:allclose(w2.grad))
    local double = wick.library.custom_op("spec53::double", { mutates_args = {} })(function(t) return t * 2 end)
    assert.are.same({ 2, 2 }, double(wick.ones(2)):tolist())
    support.assert_error_has(function() wick.library.custom_op("nonamespace", fallback) end, "'namespace::op'")
  end)
end)

describe("the fifty-third round's lines, part 8 (GOT-OCR2's target ratios, PaddleOCR-VL's groupby)", function()
  it("wick.sorted is Python's sorted: stable, with a key and reverse", function()
    local r = { { 1, 4 }, { 2, 2 }, { 4, 1 }, { 1, 1 }, { 3, 1 }, { 1, 3 } }
    local function area(x) return x[1] * x[2] end
    local function flat(l)
      local out = {}
      for _, v in ipairs(l) do out[#out + 1] = v[1] .. "x" .. v[2] end
      return table.concat(out, " ")
    end
    -- Python: sorted(r, key=lambda x: x[0] * x[1]) and with reverse=True
    assert.are.equal("1x1 3x1 1x3 1x4 2x2 4x1", flat(wick.sorted(r, { key = area })))
    assert.are.equal("1x4 2x2 4x1 3x1 1x3 1x1", flat(wick.sorted(r, { key = area, reverse = true })))
    assert.are.same({ 1, 2, 3 }, { unpack(wick.sorted({ 3, 1, 2 })) })
    assert.are.same({ 1, 2 }, wick.sorted({ { 2, 1 }, { 1, 5 }, { 1, 2 } })[1])
    support.assert_error_has(function() wick.sorted({ 1, "a" }) end, "'<' not supported between a string and a number")
  end)
  it("wick.groupby is itertools.groupby: runs of equal keys", function()
    local got = {}
    for k, g in wick.groupby({ 1, 1, 2, 3, 3, 3, 1 }) do got[#got + 1] = k .. ":" .. #g end
    assert.are.equal("1:2 2:1 3:3 1:1", table.concat(got, " "))
    got = {}
    for k, g in wick.groupby({ "a", "ab", "b" }, function(x) return x:sub(1, 1) end) do got[#got + 1] = k .. ":" .. g[-1] end
    assert.are.equal("a:ab b:b", table.concat(got, " "))
  end)
end)

describe("the fifty-third round's lines, part 9 (Phi-4-multimodal's checkpoint, a child short)", function()
  it("a model with fewer children than a PyTorch checkpoint gives no merge hint, and says the keys were renamed", function()
    local Top = nn.Module:extend("ChildShort")
    function Top:init()
      self.layers = nn.ModuleList({ nn.Linear(2, 2), nn.Linear(2, 2) })
      self.conv = nn.Sequential(nn.Linear(2, 2))
    end
    local sd = wick.OrderedDict({ { "layers.0.weight", wick.zeros(2, 2) }, { "layers.0.bias", wick.zeros(2) },
      { "layers.1.weight", wick.zeros(2, 2) }, { "layers.1.bias", wick.zeros(2) },
      { "conv.0.weight", wick.zeros(2, 2) }, { "conv.0.bias", wick.zeros(2) },
      { "conv.2.weight", wick.zeros(2, 2) }, { "conv.2.bias", wick.zeros(2) } })
    local ok, err = pcall(function() return Top():load_state_dict(sd) end)
    assert.is_false(ok)
    support.assert_contains(tostring(err), 'Unexpected key(s) in state_dict: "conv.3.bias", "conv.3.weight".')
    support.assert_contains(tostring(err), "renamed from the checkpoint's 0-based child indices")
    assert.is_nil(tostring(err):find("merged into model:state_dict", 1, true))
  end)
end)

describe("the fifty-third round's lines, part 10 (the vision_transformer example's attention(x, x, x)[0])", function()
  it("[0] of a MultiheadAttention's or an RNN's output says it is the first of several values", function()
    local mha, x = nn.MultiheadAttention(4, 2), wick.randn(5, 2, 4)
    support.assert_error_has(function() return mha(x, x, x)[0] end,
      "this tensor is the first of the several values MultiheadAttention returns")
    support.assert_error_has(function() return nn.LSTM(4, 3)(x)[0] end, "the several values LSTM returns")
    assert.are.same({ 5, 2, 4 }, (mha(x, x, x)):size():totable())
    support.assert_error_has(function() return wick.randn(3)[0] end, "index 0 is invalid")
  end)
end)

describe("the fifty-third round's lines, part 11 (Hiera's mask resize)", function()
  it("interpolate of a bool mask names the dtype and the float() it needs", function()
    local m = wick.ones({ 1, 1, 2 }, { dtype = "bool" })
    support.assert_error_has(function() F.interpolate(m, { size = 4 }) end,
      "mode 'nearest' is not implemented for bool tensors, as PyTorch's; a mask resizes as x:float()")
    support.assert_error_has(function() F.interpolate(m, { size = 4, mode = "linear" }) end, "not implemented for bool tensors")
    assert.are.same({ 1, 1, 1, 1 }, F.interpolate(m:float(), { size = 4 }):flatten():tolist())
  end)
end)

describe("the fifty-third round's lines, part 12 (IDEFICS's `for attn, ff in self.blocks`)", function()
  it("a ModuleList unpacks as a list of parts does", function()
    local l = nn.ModuleList({ nn.Linear(2, 2), nn.ReLU() })
    local attn, ff = l:unpack()
    assert.are.equal(l[1], attn)
    assert.are.equal(l[2], ff)
    assert.are.equal(1, select("#", nn.Sequential(nn.ReLU()):unpack()))
  end)
end)

describe("the fifty-third round's lines, part 13 (the Decision Transformer's reward buffer)", function()
  it("cat counts a skipped empty tensor's dtype, as PyTorch's", function()
    assert.are.equal("float64", wick.cat({ wick.zeros(0, { dtype = "float64" }), wick.zeros(1) }).dtype)
    assert.are.equal("float32", wick.cat({ wick.zeros(1, { dtype = "int64" }), wick.zeros(0) }).dtype)
    assert.are.equal("float64", wick.cat({ wick.zeros(0, { dtype = "float64" }), wick.zeros(1, 3) }).dtype)
    local rewards = wick.zeros(0, { dtype = "float64" })
    rewards = wick.cat({ rewards, wick.zeros(1) })
    rewards[-1] = 0.1
    assert.are.equal(0.1, rewards[1]:item())
  end)
end)

describe("the fifty-third round's lines, part 14 (makemore's InfiniteDataLoader and B, T, C = x.size())", function()
  it("wick.iter and wick.next are Python's iter and next", function()
    local it = wick.iter({ 1, 2 })
    assert.are.equal(1, wick.next(it))
    assert.are.equal(2, wick.next(it))
    assert.are.equal("done", wick.next(it, "done"))
    support.assert_error_has(function() wick.next(it) end, "StopIteration")
    local loader = wick.data.DataLoader(wick.data.TensorDataset(wick.randn(5, 2)), { batch_size = 2 })
    local batches, li = 0, wick.iter(loader)
    while wick.next(li, false) do batches = batches + 1 end
    assert.are.equal(3, batches)
  end)
  it("a Size where a size number goes names x:size():unpack()", function()
    local x = wick.randn(2, 3, 4)
    local B, T = x:size()
    support.assert_error_has(function() wick.zeros({ B, T, T }) end, "local B, T, C = x:size():unpack()")
  end)
end)

describe("the fifty-third round's lines, part 15 (PatchTSMixer's AffineTransformed)", function()
  it("AffineTransform takes event_dim by position, as PyTorch's", function()
    local D = wick.distributions
    assert.are.equal(1, D.AffineTransform(wick.zeros(3), wick.ones(3), 1).domain.event_dim)
    assert.are.equal(1, D.AffineTransform(wick.zeros(3), wick.ones(3), { event_dim = 1 }).domain.event_dim)
    assert.are.equal(0, D.AffineTransform(0, 2).event_dim)
  end)
end)

describe("the fifty-third round's lines, part 16 (Qwen2-Audio's bsz, tgt_len, _ = x.size())", function()
  it("a nil after a Size among sizes names x:size():unpack()", function()
    local t = wick.zeros(2, 3, 5)
    local b, s = t:size()
    support.assert_error_has(function() t:view(b, s, -1) end, "local b, s = x:size():unpack()")
  end)
end)

describe("the fifty-third round's lines, part 17 (Zamba's shared block and cache length)", function()
  it("tril, triu and diagonal take a 0-dim integer tensor, Python's __index__", function()
    local t = wick.tensor(2, { dtype = "int64" })
    assert.are.equal(9, wick.ones(3, 3):tril(t):sum():item())
    assert.are.same({ 1 }, wick.ones(2, 3):diagonal(t):tolist())
    support.assert_error_has(function() wick.ones(3, 3):tril(wick.tensor(1.5)) end, "expected an integer for argument 'diagonal'")
  end)
  it("apply calls fn once per place a shared module holds, as PyTorch's recursion", function()
    local P = nn.Module:extend("SharedApply")
    function P:init()
      self.shared = nn.Linear(2, 2)
      self.a = nn.Sequential(self.shared)
      self.b = nn.ModuleList({ self.shared, nn.Linear(2, 2) })
    end
    local n = 0
    P():apply(function() n = n + 1 end)
    assert.are.equal(7, n) -- PyTorch's count
  end)
end)

describe("the fifty-fourth round's lines, part 1 (reinforce's Categorical)", function()
  local D = wick.distributions
  it("Categorical, Bernoulli and OneHotCategorical enumerate their support, as PyTorch's", function()
    local c = D.Categorical(wick.tensor({ { 0.3, 0.7 }, { 0.5, 0.5 }, { 0.1, 0.9 } }))
    assert.is_true(c.has_enumerate_support)
    assert.are.same({ { 1, 1, 1 }, { 2, 2, 2 } }, c:enumerate_support():tolist())
    assert.are.same({ 2, 1 }, c:enumerate_support(false):size():totable())
    assert.are.same({ 0, 1 }, D.Bernoulli(wick.tensor({ 0.2, 0.4 })):enumerate_support(false):view(-1):tolist())
    local o = D.OneHotCategorical(wick.tensor({ { 0.3, 0.7 }, { 0.5, 0.5 }, { 0.1, 0.9 } }))
    assert.are.same({ 2, 3, 2 }, o:enumerate_support():size():totable())
    assert.are.same({ { 0, 1 } }, o:enumerate_support(false)[2]:tolist())
    -- the whole support's probabilities sum to one
    assert.is_true(c:log_prob(c:enumerate_support()):exp():sum(1):sub(1):abs():max():item() < 1e-6)
    assert.is_false(D.Normal(0, 1).has_enumerate_support)
  end)
  it("a Categorical's mean and variance are NaN of its batch shape, not nil", function()
    local c = D.Categorical(wick.tensor({ { 0.3, 0.7 }, { 0.5, 0.5 } }))
    assert.are.same({ 2 }, c.mean:size():totable())
    assert.is_true(c.mean:isnan():all():item() and c.variance:isnan():all():item())
  end)
end)

describe("the fifty-fourth round's lines, part 2 (siamese's self.resnet.apply(self.init_weights))", function()
  it("a method passed to a child's apply is bound to the caller's self, as Python's bound method", function()
    local Net = nn.Module:extend("SiameseApply")
    function Net:init()
      self.std = 0.5
      self.resnet = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
      self.seen = {}
      self.resnet:apply(self.init_weights)
    end
    function Net:init_weights(m)
      self.seen[#self.seen + 1] = m
      if wick.isinstance(m, nn.Linear) then nn.init.constant_(m.weight, self.std) end
    end
    local net = Net()
    assert.are.equal(3, #net.seen)
    assert.are.equal(0.5, net.resnet[1].weight[1][1]:item())
    assert.is_nil(rawget(net.resnet, "seen"))
  end)
  it("a method of the module's own class called from outside binds that module", function()
    local M = nn.Module:extend("OwnApply")
    function M:init() self.l = nn.Linear(2, 2); self.v = 0.25 end
    function M:fill(m) if m == self.l then nn.init.constant_(m.weight, self.v) end end
    local m = M()
    m:apply(m.fill)
    assert.are.equal(0.25, m.l.weight[2][2]:item())
  end)
end)

describe("the fifty-fourth round's lines, part 3 (VisualBERT's (image_text_alignment != -1).long())", function()
  it("a Lua comparison's boolean indexed like a tensor names t:ne(x) and t:eq(x)", function()
    local m = wick.tensor({ 0, 1, 2 })
    support.assert_error_has(function() return (m ~= -1):long() end, "attempt to index a boolean value (field 'long')",
      "(t != -1).long() is t:ne(-1):long()")
  end)
end)

describe("the fifty-fourth round's lines, part 4 (TTT's tile(dims=), GPyTorch's diagonal, DETR's class weight, Chronos' bucketize)", function()
  it("tile and repeat take PyTorch's dims= and repeats=, and mixed sizes; another key is an error", function()
    local x = wick.tensor({ { 1, 2 } })
    assert.are.same({ 2, 2 }, wick.tile(x, { dims = { 2, 1 } }):size():totable())
    assert.are.same({ 2, 2 }, x:repeat_tensor({ repeats = { 2, 1 } }):size():totable())
    assert.are.same({ 1, 2, 4 }, x:repeat_tensor(x:size(), 2):size():totable())
    support.assert_error_has(function() return x:tile({ bogus = 3 }) end, "tile: unknown option 'bogus'")
    support.assert_error_has(function() return x:repeat_tensor({ repeats = { 2, 1 }, 3 }) end, "got sizes beside its option 'repeats'")
  end)
  it("broadcast_to, expand, view and reshape take their sizes by PyTorch's keyword", function()
    assert.are.same({ 2, 3 }, wick.broadcast_to(wick.ones(1, 3), { size = { 2, 3 } }):size():totable())
    assert.are.same({ 3, 2 }, wick.ones(6):reshape({ shape = { 3, 2 } }):size():totable())
    assert.are.same({ 4, 3 }, wick.ones(1, 3):expand({ size = wick.Size({ 4, 3 }) }):size():totable())
    support.assert_error_has(function() return wick.ones(6):view({ 2, size = { 2, 3 } }) end, "got sizes beside its option 'size'")
  end)
  it("diagonal with dim1 after dim2 is a view of a contiguous matrix, as PyTorch's", function()
    local A = wick.zeros(3, 3, { dtype = "float64" })
    A:diagonal(0, -1, -2):add_(0.5)
    assert.are.same({ 0.5, 0, 0.5 }, { A[1][1]:item(), A[1][2]:item(), A[3][3]:item() })
    local B = wick.arange(24, { dtype = "int64" }):view(2, 3, 4)
    assert.are.same(B:diagonal(-1, 2, 3):tolist(), B:diagonal(1, 3, 2):tolist())
    assert.are.same({ { 4, 9 }, { 16, 21 } }, B:diagonal({ offset = 1, dim1 = 3, dim2 = 2 }):tolist())
  end)
  it("a class weight of another dtype than the logits is PyTorch's error, not weights rounded", function()
    local x = wick.randn(2, 4, 5, { dtype = "float64" })
    local t = wick.ones(2, 5, { dtype = "int64" })
    local w = wick.ones(4)
    support.assert_error_has(function() return F.cross_entropy(x, t, w) end, "cross_entropy: expected scalar type float64 but found float32")
    support.assert_error_has(function() return F.nll_loss(x:select(3, 1), t:select(2, 1), w) end, "nll_loss: expected scalar type float64")
    assert.are.equal("float64", F.cross_entropy(x, t, w:double()).dtype)
  end)
  it("bucketize and searchsorted take every argument by PyTorch's name, errors naming bucketize's own", function()
    local x, b = wick.tensor({ 0.5, 2.0 }), wick.tensor({ 0, 1, 2 })
    assert.are.same({ 2, 4 }, wick.bucketize({ input = x, boundaries = b, right = true }):tolist())
    assert.are.same({ 2, 4 }, wick.bucketize(x, { boundaries = b, right = true }):tolist())
    assert.are.same({ 2, 3 }, wick.searchsorted({ sorted_sequence = b, input = x }):tolist())
    support.assert_error_has(function() return wick.bucketize(x, { 0, 1, 2 }) end, "bucketize: expected a tensor for option 'boundaries'")
  end)
end)

describe("the fifty-fourth round's lines, part 5 (EfficientFormer's attention_biases[:, attention_bias_idxs])", function()
  it("a 0 in an index tensor names the dimension and the + 1 a PyTorch index needs", function()
    local b = wick.zeros(2, 3)
    local idxs = wick.tensor({ { 0, 1 }, { 1, 2 } }, { dtype = "int64" })
    support.assert_error_has(function() return b[{ {}, idxs }] end,
      "index 0 is invalid (in an index tensor for dimension 2, of size 3)", "needs + 1")
  end)
end)

describe("the fifty-fourth round's lines, part 6 (hflayers' xi.masked_select(mask=...))", function()
  it("masked_select and masked_scatter take their arguments by PyTorch's names", function()
    local x = wick.arange(1, 7):view(3, 2)
    local m = wick.tensor({ { true }, { false }, { true } })
    assert.are.same({ 1, 2, 5, 6 }, x:masked_select({ mask = m }):tolist())
    local y = wick.masked_scatter({ input = x, mask = m, source = wick.zeros(6) })
    assert.are.same({ { 0, 0 }, { 3, 4 }, { 0, 0 } }, y:tolist())
    assert.are.same({ { 0, 0 }, { 3, 4 }, { 0, 0 } }, x:clone():masked_scatter_({ mask = m, source = wick.zeros(6) }):tolist())
  end)
end)

describe("the fifty-fourth round's lines, part 7 (torchvision reference's t.sum(None, None, dtype=...))", function()
  it("a nil in keepdim's place leaves the options after it read, and anything else after is an error", function()
    local t = wick.ones(2, 3, { dtype = "bool" })
    assert.are.equal("float32", t:sum(nil, nil, { dtype = "float32" }).dtype)
    assert.are.same({ 2, 1 }, t:sum(2, nil, { keepdim = true }):size():totable())
    assert.are.same({ 2, 1 }, wick.ones(2, 3):var(2, nil, { keepdim = true }):size():totable())
    support.assert_error_has(function() return t:sum(2, nil, { bogus = 1 }) end, "bogus")
    support.assert_error_has(function() return t:sum(2, nil, "junk") end, "sum: expected a dimension")
    support.assert_error_has(function() return t:sum(2, true, {}, "junk") end, "sum: expected a dimension")
  end)
end)

describe("the fifty-fourth round's lines, part 8 (kornia's safe_inverse_with_mask)", function()
  it("inv_ex and solve_ex give info and NaN for a singular matrix, the rest of the batch as usual", function()
    local A = wick.zeros(2, 3, 3, { dtype = "float64" })
    A[2] = wick.eye(3, { dtype = "float64" }) * 2
    local inv, info = wick.linalg.inv_ex(A)
    assert.are.same({ 1, 0 }, info:tolist())
    assert.are.equal("int32", info.dtype)
    assert.is_true(inv[1]:isnan():all())
    assert.are.same({ 0.5, 0, 0 }, inv[2][1]:tolist())
    local X, info2 = wick.linalg.solve_ex(A, wick.ones(2, 3, { dtype = "float64" }))
    assert.are.same({ 1, 0 }, info2:tolist())
    assert.are.same({ 0.5, 0.5, 0.5 }, X[2]:tolist())
    local B = wick.randn(3, 3, { dtype = "float64" })
    B[2] = B[1]
    assert.are.equal(3, select(2, wick.linalg.inv_ex(B)):item()) -- (PyTorch's order of the zero pivot)
    support.assert_error_has(function() return wick.linalg.inv_ex(A, { check_errors = true }) end, "singular")
  end)
end)

describe("the fifty-fourth round's lines, part 9 (PE audio's torch.masked.mean / var)", function()
  local Mk = wick.masked
  local x = wick.tensor({ { 1, 2, 3, 10 }, { 4, 6, 8, 20 } }, { dtype = "float64" })
  local m = wick.tensor({ { true, true, true, false }, { false, false, false, false } })
  it("reduces over the kept elements only, NaN where none is kept", function()
    local mean = Mk.mean(x, 2, { mask = m })
    assert.are.equal(2, mean[1]:item())
    assert.is_true(mean[2]:isnan():item())
    assert.are.same({ { 6 }, { 0 } }, Mk.sum(x, { 2 }, { keepdim = true, mask = m }):tolist())
    assert.are.equal(2 / 3, Mk.var({ input = x, dim = 2, unbiased = false, mask = m })[1]:item())
    assert.are.equal(1, Mk.var(x, 2, { mask = m })[1]:item())
    assert.are.same({ 3, -math.huge }, Mk.amax(x, 2, { mask = m }):tolist())
    assert.are.same({ 3, 1 }, Mk.argmax(x, 2, { mask = m }):tolist()) -- (an all-masked row: the first -inf)
    assert.are.equal(6, Mk.sum(x, { mask = m }):item())
  end)
  it("the softmax family gives the masked-out elements no weight, and a mask broadcasts", function()
    local p = Mk.softmax(x, 2, { mask = wick.tensor({ true, false, true, false }) })
    assert.are.equal(0, p[1][2]:item())
    assert.is_true(math.abs(p[1]:sum():item() - 1) < 1e-15)
    assert.are.equal(-math.huge, Mk.log_softmax(x, 2, { mask = m })[1][4]:item())
  end)
  it("integer inputs keep their range's ends as identities, int64's largest too", function()
    local i = wick.tensor({ { 5, -3 }, { 7, 2 } }, { dtype = "int64" })
    local keep = wick.tensor({ { false, true }, { false, false } })
    local mn = Mk.amin(i, 2, { mask = keep })
    assert.are.equal(-3, mn[1]:item())
    assert.is_true(mn[2]:eq(wick.iinfo("int64").min):logical_not():item() and (mn[2] + 1):lt(0):item()) -- (2^63 - 1 wraps to negative)
  end)
  it("refuses a mask of more dims than the input, and unknown options", function()
    support.assert_error_has(function() return Mk.sum(wick.ones(3), 1, { mask = wick.ones(2, 3):bool() }) end, "masked.sum: expected a mask broadcastable")
    support.assert_error_has(function() return Mk.mean(x, 2, { bogus = 1 }) end, "masked.mean: unknown option 'bogus'")
  end)
end)

describe("the fifty-fourth round's lines, part 10 (s5-pytorch's torch.ops.aten.slice)", function()
  it("wick.ops.aten.slice slices along a 1-based dim with 0-based start and excluded stop", function()
    local t = wick.arange(12, { dtype = "int64" }):view(3, 4)
    assert.are.same({ 0, 2, 4 }, wick.ops.aten.slice(wick.arange(6, { dtype = "int64" }), 1, 0, -1, 2):tolist())
    assert.are.same({ { 1, 2, 3 }, { 5, 6, 7 }, { 9, 10, 11 } }, wick.ops.aten.slice(t, 2, 1):tolist())
    assert.are.same({ { 4, 5, 6, 7 }, { 8, 9, 10, 11 } }, wick.ops.aten.slice(t, 1, 1, 9223372036854775807):tolist())
    local v = wick.ops.aten.slice(t, 2, 0, 1)
    v:fill_(-1)
    assert.are.equal(-1, t[2][1]:item()) -- (a view)
    assert.are.same({ { 2 } }, wick.ops.aten.mm(wick.ones(1, 2), wick.ones(2, 1)):tolist())
    support.assert_error_has(function() return wick.ops.aten.bogus_op end, "wick.ops.aten has no 'bogus_op'")
  end)
end)

describe("the fifty-fourth round's lines, part 11 (torchaudio's Conformer RNN-T recipe)", function()
  local A = wick.audio.functional
  local function I(v) return wick.tensor(v, { dtype = "int64" }) end
  -- the RNN-T cost by enumerating every alignment of a tiny lattice (T = 2 frames, U = 1 label)
  it("rnnt_loss is -log of the sum over the alignments, with its gradient", function()
    local logits = wick.randn(1, 2, 2, 3, { dtype = "float64" }):requires_grad_()
    local lp = logits:detach():log_softmax(4)
    local blank, y = 3, 2
    -- the paths: emit y at t=1 then blank, blank; or blank at t=1, then y and blank at t=2
    local p1 = lp[1][1][1][y]:item() + lp[1][1][2][blank]:item() + lp[1][2][2][blank]:item()
    local p2 = lp[1][1][1][blank]:item() + lp[1][2][1][y]:item() + lp[1][2][2][blank]:item()
    local want = -math.log(math.exp(p1) + math.exp(p2))
    local got = A.rnnt_loss(logits, I({ { y } }, { dtype = "int32" }), I({ 2 }, { dtype = "int32" }),
      I({ 1 }, { dtype = "int32" }))
    assert.is_true(math.abs(got:item() - want) < 1e-12)
    got:backward()
    assert.is_true(math.abs(logits.grad:sum():item()) < 1e-12) -- (each log-softmax row's gradient sums to 0)
    local clamped = logits:detach():clone():requires_grad_()
    A.rnnt_loss(clamped, I({ { y } }), I({ 2 }), I({ 1 }), { clamp = 0.05 }):backward()
    assert.is_true(clamped.grad:abs():max():item() <= 0.05 + 1e-15)
  end)
  it("sequences of several lengths in one batch cost what each costs alone", function()
    local logits = wick.randn(2, 3, 3, 4, { dtype = "float64" })
    local targets = I({ { 1, 2 }, { 3, 1 } })
    local costs = A.rnnt_loss(logits, targets, I({ 3, 2 }), I({ 2, 1 }), { reduction = "none" })
    local alone = A.rnnt_loss(logits:narrow(1, 2, 1):narrow(2, 1, 2):narrow(3, 1, 2), targets:narrow(1, 2, 1):narrow(2, 1, 1),
      I({ 2 }), I({ 1 }), { reduction = "none" })
    assert.is_true(math.abs(costs[2]:item() - alone[1]:item()) < 1e-12)
    local m = wick.audio.transforms.RNNTLoss({ reduction = "sum" })
    assert.is_true(math.abs(m(logits, targets, I({ 3, 2 }), I({ 2, 1 })):item() - costs:sum():item()) < 1e-12)
  end)
  it("says what is wrong with the shapes and the targets", function()
    local logits = wick.randn(1, 2, 2, 3)
    support.assert_error_has(function() return A.rnnt_loss(logits, I({ { 0 } }), I({ 2 }), I({ 1 })) end,
      "targets must be 1-based classes 1 .. 3", "needs + 1")
    support.assert_error_has(function() return A.rnnt_loss(logits, I({ { 1 } }), I({ 1 }), I({ 1 })) end,
      "input length mismatch")
    support.assert_error_has(function() return A.rnnt_loss(logits, I({ { 1, 1 } }), I({ 2 }), I({ 1 })) end,
      "must be the targets' length + 1")
  end)
end)

describe("the fifty-fourth round's lines, part 12 (Transformer-XL's adaptive softmax)", function()
  it("AdaptiveLogSoftmaxWithLoss's output is the log-probability its log_prob gives, 1-based", function()
    local m = nn.AdaptiveLogSoftmaxWithLoss(8, 20, { 6, 12 }, { div_value = 2.0 }):double()
    local keys = {}
    for k in pairs(m:state_dict()) do keys[#keys + 1] = k end
    table.sort(keys)
    assert.are.same({ "head.weight", "tail.1.1.weight", "tail.1.2.weight", "tail.2.1.weight", "tail.2.2.weight" }, keys)
    local x = wick.randn(5, 8, { dtype = "float64" }):requires_grad_()
    local y = wick.tensor({ 1, 6, 7, 13, 20 }, { dtype = "int64" })
    local out = m(x, y)
    local all = m:log_prob(x)
    assert.is_true((all:exp():sum(2) - 1):abs():max():item() < 1e-12)
    assert.is_true((out.output - all:gather(2, y:unsqueeze(2)):squeeze(2)):abs():max():item() < 1e-12)
    assert.is_true(math.abs(out.loss:item() + out.output:mean():item()) < 1e-12)
    out.loss:backward()
    assert.are.same({ 5, 8 }, x.grad:size():totable())
    assert.are.same(all:argmax(2):tolist(), m:predict(x):tolist())
    support.assert_error_has(function() return m(x, y - 1) end, "Target values should be in [1, 20]")
  end)
end)

describe("the fifty-fourth round's lines, part 13 (NTXent's torch.max(pos, torch.max(neg, dim=1, keepdim=True)[0]), torchmetrics)", function()
  it("the max of two tensors refuses a third argument, naming the values-and-indices pitfall", function()
    local a, b = wick.tensor({ 1, 5 }), wick.tensor({ 3, 2 })
    support.assert_error_has(function() return wick.max(a, b, 7) end, "max: the max of two tensors takes no third argument")
    support.assert_error_has(function() return wick.min(a, wick.ones(2, 2):min(2, true)) end, "write min(a, (x:min(dim)))")
    assert.are.same({ 3, 5 }, wick.max(a, (wick.stack({ a, b }):max(1))):tolist())
  end)
  it("cdist's product path gives a zero distance exactly 0, with a zero gradient there", function()
    local x = wick.tensor({ { 0.6, 0.8 }, { 0, 1 }, { 3, 4 } }, { dtype = "float64", requires_grad = true })
    local m = wick.cdist(x, x, 2, "use_mm_for_euclid_dist")
    assert.are.equal(3, m:eq(0):sum():item())
    m:sum():backward()
    assert.is_false(x.grad:isnan():any())
  end)
  it("t.is_cpu and t.is_mps answer, as PyTorch's", function()
    local x = wick.ones(2)
    assert.is_true(x.is_cpu)
    assert.is_false(x.is_mps)
  end)
end)

describe("the fifty-fourth round's lines, part 14 (uni2ts' Moirai mixture)", function()
  local D = wick.distributions
  local My = D.Distribution:extend("MyLocDist")
  function My:init(loc) self.loc = loc; D.Distribution.init(self, loc:size(), {}) end
  function My:log_prob(x) return -(x - self.loc) ^ 2 end
  it("TransformedDistribution and MixtureSameFamily take a distribution class of one's own", function()
    local t = D.TransformedDistribution(My(wick.zeros(3)), { D.AffineTransform(1.0, 2.0) })
    assert.is_true(math.abs(t:log_prob(wick.ones(3))[1]:item() + math.log(2)) < 1e-6)
    local m = D.MixtureSameFamily(D.Categorical({ logits = wick.zeros(3) }), My(wick.zeros(3)))
    assert.is_true(math.abs(m:log_prob(wick.tensor(0.5)):item() + 0.25) < 1e-6)
  end)
  it("expand broadcasts a distribution to a larger batch", function()
    local n = D.Normal(wick.zeros(3), 1):expand({ 2, 3 })
    assert.are.same({ 2, 3 }, n.batch_shape:totable())
    assert.are.same({ 2, 3 }, n:sample():size():totable())
    local i = D.Independent(D.Normal(wick.zeros(3), wick.ones(3)), 1):expand({ 5 })
    assert.are.same({ 5 }, i:log_prob(wick.zeros(5, 3)):size():totable())
    support.assert_error_has(function() return D.Normal(wick.zeros(3), 1):expand({ 4 }) end, "Normal:expand: the new batch shape [4] does not broadcast")
  end)
  it("support and arg_constraints are PyTorch's constraints, c.check(v) as c:check(v)", function()
    local C = D.constraints
    local d = D.LogNormal(wick.zeros(3), wick.ones(3))
    assert.are.equal("GreaterThan(lower_bound=0.0)", tostring(d.support))
    assert.are.same({ false, false, true }, d.support.check(wick.tensor({ -1, 0, 1 })):tolist())
    assert.are.same({ true }, d.support:check(wick.tensor({ 2 })):tolist())
    assert.are.equal(C.positive, D.Normal(0, 1).arg_constraints.scale)
    assert.are.equal("IntegerInterval(lower_bound=1, upper_bound=2)", tostring(D.Categorical(wick.tensor({ 0.2, 0.8 })).support))
    assert.is_true(C.simplex.check(wick.tensor({ 0.3, 0.7 })):item())
    assert.are.equal(1, C.independent(C.real, 1).event_dim)
    support.assert_error_has(function() return C.dependent.check(wick.ones(1)) end, "Cannot determine validity of dependent constraint")
  end)
  it("a distribution takes its parameters by name from an OrderedDict too (Python's Normal(**params))", function()
    local od = wick.OrderedDict()
    od.loc, od.scale = wick.zeros(2), wick.ones(2)
    assert.is_true(math.abs(D.Normal(od):log_prob(wick.zeros(2))[1]:item() + 0.9189385) < 1e-6)
  end)
  it("a module class's _lazy is a cached property", function()
    local QK = nn.Module:extend("LazyQK")
    local calls = 0
    QK._lazy = { proj_width = function(self) calls = calls + 1; return self.d * 2 end }
    function QK:init(d) self.d = d end
    local q = QK(16)
    assert.are.equal(32, q.proj_width)
    assert.are.equal(32, q.proj_width)
    assert.are.equal(1, calls)
    local Sub = QK:extend("LazySub")
    assert.are.equal(8, Sub(4).proj_width)
  end)
end)

describe("the fifty-fourth round's lines, part 15 (GPT-OSS's view((*input_shape, -1, head_dim)))", function()
  it("a Size inside a size table stands for its sizes", function()
    local x = wick.zeros(2, 3, 8)
    local s = x.shape[{ 1, -2 }]
    assert.are.same({ 2, 3, 2, 4 }, x:view({ s, -1, 4 }):size():totable())
    assert.are.same({ 2, 3, 5 }, wick.zeros({ s, 5 }):size():totable())
    local B, T = x:size()
    support.assert_error_has(function() return wick.zeros({ B, T, T }) end, "x:size():unpack()") -- (a Size alone)
  end)
  it("options split over two tables name the mistake", function()
    support.assert_error_has(function() return wick.randn(2, 3, { dtype = "float64" }, { requires_grad = true }) end,
      "unknown option 'dtype' among the sizes (options go in one table, the last argument)")
  end)
end)

describe("the fifty-fourth round's lines, part 16 (the torch.optim conformance port)", function()
  local optim, LS = wick.optim, wick.optim.lr_scheduler
  local function O() return optim.SGD({ wick.zeros(1):requires_grad_() }, { lr = 0.1 }) end
  it("MultiStepLR takes its milestones in any order, as PyTorch's Counter", function()
    local o = O()
    local s = LS.MultiStepLR(o, { 8, 3 }, 0.5)
    local lrs = {}
    for _ = 1, 9 do o:step(); s:step(); lrs[#lrs + 1] = s:get_last_lr()[1] end
    assert.are.same({ 0.1, 0.1, 0.05, 0.05, 0.05, 0.05, 0.05, 0.025, 0.025 }, lrs)
  end)
  it("ExponentialLR's gamma and CosineAnnealingLR's T_max are required", function()
    support.assert_error_has(function() return LS.ExponentialLR(O()) end, "missing 1 required positional argument: 'gamma'")
    support.assert_error_has(function() return LS.CosineAnnealingLR(O()) end, "missing 1 required positional argument: 'T_max'")
  end)
  it("Adadelta's rho is in [0, 1], Rprop's errors show the values, AdamW's groups say decoupled", function()
    support.assert_error_has(function() return optim.Adadelta({ wick.zeros(1):requires_grad_() }, { rho = 1.5 }) end, "Invalid rho value: 1.5")
    support.assert_error_has(function() return optim.Rprop({ wick.zeros(1):requires_grad_() }, { etas = { 1.5, 1.2 } }) end,
      "Invalid eta values: {1.5, 1.2}")
    assert.is_true(optim.AdamW({ wick.zeros(1):requires_grad_() }).param_groups[1].decoupled_weight_decay)
  end)
end)

describe("the fifty-fourth round's lines, part 17 (the indexing conformance port)", function()
  local function I(t) return wick.tensor(t, { dtype = "int64" }) end
  it("numbers between index tensors are taken first, the tensors keeping their place (PyTorch's x[:, i, 1, j])", function()
    local x = wick.arange(120, { dtype = "int64" }):reshape(2, 3, 4, 5)
    local i, j = I({ 1, 3 }), I({ 2, 4 })
    assert.are.same({ { 6, 48 }, { 66, 108 } }, x[{ {}, i, 2, j }]:tolist())
    local z = wick.zeros(2, 3, 4, 5, { dtype = "int64" })
    z[{ {}, i, 2, j }] = I({ { 1, 2 }, { 3, 4 } })
    assert.are.equal(2, z[1][3][2][4]:item())
    assert.are.same({ 2, 4 }, x[{ 2, i, {}, j }]:size():totable()) -- (a slice between: the broadcast dims first)
    assert.are.same({ 2, 3, 4 }, x[{ {}, I({ 1, 3, 2 }), {}, 2 }]:size():totable())
  end)
  it("index_put_ accumulates through a mask and takes PyTorch's keywords", function()
    local m = wick.tensor({ { true, false, true }, { false, true, false } })
    assert.are.same({ { 1, 0, 2 }, { 0, 3, 0 } }, wick.zeros(2, 3):index_put_({ m }, wick.tensor({ 1, 2, 3 }), true):tolist())
    local z = wick.zeros(2, 3):index_put_({ indices = { I({ 1, 1 }) }, values = wick.tensor({ 1, 2 }):view(2, 1), accumulate = true })
    assert.are.same({ 3, 3, 3 }, z[1]:tolist())
  end)
  it("index tensors that do not broadcast together name the indexing", function()
    support.assert_error_has(function() return wick.zeros(3, 3)[{ I({ 1, 2 }), I({ 1, 2, 3 }) }] end,
      "the indexing tensors could not be broadcast together")
  end)
end)

describe("the fifty-fourth round's lines, part 18 (the functional conformance port)", function()
  it("circular padding crops a negative side first and wraps from what is left", function()
    local x = wick.arange(5):view(1, 1, 5)
    assert.are.same({ 1, 2, 3, 4, 1, 2 }, F.pad(x, { -1, 2 }, "circular"):view(-1):tolist())
    assert.are.same({ 2, 3, 0, 1, 2, 3 }, F.pad(x, { 2, -1 }, "circular"):view(-1):tolist())
  end)
  it("the adaptive pools take output_size (and return_indices) by name, and false in a 3-D size", function()
    local x = wick.randn(2, 3, 7, 9)
    assert.are.same({ 2, 3, 3, 4 }, F.adaptive_avg_pool2d(x, { output_size = { 3, 4 } }):size():totable())
    assert.are.equal(2, select("#", F.adaptive_max_pool2d(x, { output_size = { 3, 4 }, return_indices = true })))
    assert.are.same({ 1, 2, 5, 3, 7 }, F.adaptive_avg_pool3d(wick.randn(1, 2, 5, 6, 7), { false, 3, false }):size():totable())
    assert.are.same({ 2, 3, 4 }, F.adaptive_avg_pool1d(wick.randn(2, 3, 8), { output_size = 4 }):size():totable())
  end)
  it("avg_pool2d's divisor_override, max_pool1d's indices, the _with_indices names, channel_shuffle, lp_pool3d", function()
    local x = wick.arange(16, { dtype = "float64" }):view(1, 1, 4, 4)
    assert.are.same({ { { { 10, 18 }, { 42, 50 } } } }, F.avg_pool2d(x, 2, { divisor_override = 1 }):tolist())
    assert.are.same({ { { { 5, 9 }, { 21, 25 } } } }, nn.AvgPool2d(2, { divisor_override = 2 })(x):tolist())
    local v, i = F.max_pool1d(wick.tensor({ { { 1, 5, 2, 7 } } }), 2, { return_indices = true })
    assert.are.same({ { { 5, 7 } } }, v:tolist())
    assert.are.same({ { { 2, 4 } } }, i:tolist())
    local _, i2 = F.max_pool2d_with_indices(x, 2)
    assert.are.same({ { { { 6, 8 }, { 14, 16 } } } }, i2:tolist())
    assert.are.same({ 1, 3, 2, 4 }, F.channel_shuffle(wick.arange(1, 5):view(1, 4, 1), 2):view(-1):tolist())
    assert.is_true(math.abs(F.lp_pool3d(wick.ones(1, 1, 2, 2, 2), 2, 2):item() - math.sqrt(8)) < 1e-6)
  end)
end)

describe("the fifty-fourth round's lines, part 19 (the autograd conformance port)", function()
  it("functional_call replaces a tied weight under all its names, as PyTorch's tie_weights", function()
    local M = nn.Module:extend("TiedFunctionalCall")
    function M:init()
      self.a = nn.Linear(2, 2, { bias = false })
      self.b = nn.Linear(2, 2, { bias = false })
      self.b.weight = self.a.weight
    end
    function M:forward(x) return self.b(self.a(x)) end
    local m = M()
    assert.are.same({ { 4, 4 } }, wick.func.functional_call(m, { ["a.weight"] = wick.eye(2) * 2 }, wick.ones(1, 2)):tolist())
    support.assert_error_has(function()
      return wick.func.functional_call(m, { ["a.weight"] = wick.eye(2) * 2, ["b.weight"] = wick.eye(2) }, wick.ones(1, 2))
    end, "which are tied")
  end)
  it("inference_mode(false) runs with grad on; anomaly mode keeps its NaN check apart and runs fn", function()
    local x = wick.ones(2):requires_grad_()
    local rg
    wick.no_grad(function() wick.inference_mode(false, function() rg = (x * 2).requires_grad end) end)
    assert.is_true(rg)
    local A, ran = wick.autograd, false
    A.set_detect_anomaly(true, false, function() ran = A.is_anomaly_enabled() and not A.is_anomaly_check_nan_enabled() end)
    assert.is_true(ran)
    assert.is_false(A.is_anomaly_enabled())
    assert.are.equal(wick.no_grad, A.no_grad)
    support.assert_error_has(function() return A.graph end, "wick.autograd has no 'graph'")
  end)
  it("func.vjp and jvp take has_aux; aux comes back outside the graph", function()
    local x = wick.tensor({ 1, 2 }, { dtype = "float64" })
    local _, vjp_fn, aux = wick.func.vjp(function(t) return t:sin(), t:cos() end, x, { has_aux = true })
    assert.is_false(aux.requires_grad)
    assert.is_true((vjp_fn(wick.ones(2, { dtype = "float64" })) - x:cos()):abs():max():item() < 1e-15)
    local _, jv, a2 = wick.func.jvp(function(t) return t:sin(), t * 3 end, { x }, { wick.ones(2, { dtype = "float64" }) }, { has_aux = true })
    assert.are.same({ 3, 6 }, a2:tolist())
    assert.is_true((jv - x:cos()):abs():max():item() < 1e-15)
    local _, a3 = wick.func.grad(function(t) return t:sin():sum(), t:cos() end, { has_aux = true })(x)
    assert.is_false(a3.requires_grad)
  end)
end)

describe("the fifty-fourth round's lines, part 20 (the sequence layers conformance port)", function()
  it("a PackedSequence unpacks into its four fields; an RNN prints a whole dropout as PyTorch's float", function()
    local R = nn.utils.rnn
    local p = R.pack_padded_sequence(wick.randn(3, 4, 2), { 3, 4, 2 }, { batch_first = true, enforce_sorted = false })
    local data, batch_sizes, sorted, unsorted = p:unpack()
    assert.are.same({ 9, 2 }, data:size():totable())
    assert.are.same({ 3, 3, 2, 1 }, batch_sizes:tolist())
    assert.are.same({ 2, 1, 3 }, sorted:tolist())
    assert.are.same({ 2, 1, 3 }, unsorted:tolist())
    assert.are.equal("LSTM(5, 8, num_layers=2, dropout=1.0)", tostring(nn.LSTM(5, 8, 2, { dropout = 1.0 })))
    assert.are.same({ "LSTM", 0 }, { nn.LSTM(5, 8).mode, nn.LSTM(5, 8).proj_size })
  end)
end)

describe("the fifty-fourth round's lines, part 21 (the tensor math conformance port)", function()
  local function D(t) return wick.tensor(t, { dtype = "float64" }) end
  it("an infinity is close only to itself; isclose names an unknown option", function()
    assert.are.same({ false, false, true }, D({ -math.huge, 1e300, math.huge }):isclose(D({ math.huge, math.huge, math.huge })):tolist())
    assert.is_true(D({ math.huge }):allclose(D({ math.huge })))
    support.assert_error_has(function() return D({ 1 }):isclose(D({ 1 }), { rtl = 1 }) end, "isclose: unknown option 'rtl'")
  end)
  it("xlogy's gradient in x is log(y) also where x is 0 (0 where y <= 0), as PyTorch's", function()
    local x = D({ 0, 0, 0, 1 }):requires_grad_()
    local z = wick.xlogy(x, D({ 2, 0.5, 0, 3 }))
    assert.are.same({ 0, 0, 0 }, { z[1]:item(), z[2]:item(), z[3]:item() })
    z:sum():backward()
    assert.is_true(math.abs(x.grad[1]:item() - math.log(2)) < 1e-15 and x.grad[3]:item() == 0)
  end)
  it("a number beside a float16 tensor in add and fmod is rounded to float16 first", function()
    local h = wick.tensor({ 0.2, 1000 }, { dtype = "float16" })
    assert.are.equal(0.2998046875, (h + 0.1)[1]:item())
    assert.are.equal(0.2373046875, h:fmod(0.3)[2]:item())
  end)
  it("log_ndtr keeps its upper tail", function()
    local r = wick.special.log_ndtr(D({ 5, 10 }))
    assert.is_true(math.abs(r[1]:item() / -2.8665161296376e-07 - 1) < 1e-9)
    assert.is_true(math.abs(r[2]:item() / -7.6198530241605e-24 - 1) < 1e-6)
  end)
end)

describe("the fifty-fourth round's lines, part 22 (the linalg conformance port)", function()
  local LA = wick.linalg
  local function T(t) return wick.tensor(t, { dtype = "float64" }) end
  it("norm with a number ord and two dims is a matrix norm; ord without dim needs 1-D or 2-D", function()
    local x = wick.arange(24, { dtype = "float64" }):reshape(2, 3, 4)
    assert.are.same({ 38, 86 }, LA.norm(x, math.huge, { 2, 3 }):tolist())
    assert.are.same({ 38, 86 }, LA.matrix_norm(x, 1, { 3, 2 }):tolist())
    assert.is_true(math.abs(LA.norm(x, 2, { 2, 3 })[1]:item() - 22.4093) < 1e-4)
    support.assert_error_has(function() return LA.norm(x, 2) end, "the input must be 1D or 2D")
  end)
  it("matrix_rank and pinv: both tolerances together, hermitian through eigh, unknown options refused", function()
    assert.are.equal(2, LA.matrix_rank(T({ { 1, 2, 3 }, { 2, 4, 6.001 }, { 1, 0, 1 } }), { atol = 1e-4, rtol = 0.01 }):item())
    assert.are.equal(2, LA.matrix_rank(T({ { 1, 0 }, { 5, 0 } }), { hermitian = true }):item())
    local p = LA.pinv(T({ { 2, 0 }, { 1, 3 } }), { hermitian = true })
    assert.is_true((p - T({ { 0.6, -0.2 }, { -0.2, 0.4 } })):abs():max():item() < 1e-15)
    support.assert_error_has(function() return LA.pinv(T({ { 1 } }), { hermitan = true }) end, "unknown option 'hermitan'")
  end)
  it("solve broadcasts a matrix B, matrix_power takes a negative n, cond of a singular matrix is inf", function()
    assert.are.same({ 2, 4, 4 }, LA.solve(wick.eye(4, { dtype = "float64" }):expand(2, 4, 4), wick.ones(4, 4, { dtype = "float64" })):size():totable())
    assert.are.same({ { 0.25, 0 }, { 0, 0.0625 } }, LA.matrix_power(T({ { 2, 0 }, { 0, 4 } }), -2):tolist())
    assert.are.equal(math.huge, LA.cond(T({ { 1, 0 }, { 0, 0 } }), 1):item())
  end)
end)

describe("the fifty-fourth round's lines, part 23 (an LSTM with projections; the distributions conformance port)", function()
  it("proj_size projects the hidden state, with PyTorch's weight_hr and shapes", function()
    local m = nn.LSTM(5, 8, { num_layers = 2, proj_size = 3, bidirectional = true })
    assert.are.same({ 3, 8 }, m.weight_hr_l1_reverse:size():totable())
    assert.are.same({ 32, 3 }, m.weight_hh_l0:size():totable())
    assert.are.same({ 32, 6 }, m.weight_ih_l1:size():totable())
    local out, hc = m(wick.randn(4, 2, 5))
    assert.are.same({ 4, 2, 6 }, out:size():totable())
    assert.are.same({ 4, 2, 3 }, hc[1]:size():totable())
    assert.are.same({ 4, 2, 8 }, hc[2]:size():totable())
    assert.are.equal("LSTM(5, 8, proj_size=3, num_layers=2, bidirectional=True)", tostring(m))
    -- one step by hand: h = W_hr (o * tanh(c))
    local one = nn.LSTM(2, 4, { proj_size = 1, bias = false })
    local x = wick.randn(1, 1, 2)
    local _, s = one(x)
    local g = (x[1]:matmul(one.weight_ih_l0:t()))
    local i, f, gg, o = g:chunk(4, 2):unpack()
    local c = i:sigmoid() * gg:tanh()
    local h = (o:sigmoid() * c:tanh()):matmul(one.weight_hr_l0:t())
    assert.is_true((s[1][1] - h):abs():max():item() < 1e-6 and (s[2][1] - c):abs():max():item() < 1e-6)
    support.assert_error_has(function() return nn.GRU(5, 8, { proj_size = 3 }) end, "only supported for LSTM")
    support.assert_error_has(function() return nn.LSTM(5, 8, { proj_size = 8 }) end, "smaller than hidden_size")
  end)
  it("expand keeps a MultivariateNormal's unbatched matrix beside a batched loc", function()
    local m = wick.distributions.MultivariateNormal(wick.zeros(2, 3), wick.eye(3)):expand({ 5, 2 })
    assert.are.same({ 5, 2 }, m:log_prob(wick.zeros(5, 2, 3)):size():totable())
  end)
end)

describe("the fifty-fourth round's lines, part 24 (the module utilities conformance port)", function()
  it("a parametrized module loads PyTorch's 0-based parametrization keys", function()
    local m = nn.utils.parametrizations.orthogonal(nn.Linear(3, 3))
    local sd = wick.OrderedDict({ { "bias", wick.zeros(3) }, { "parametrizations.weight.original", wick.eye(3) },
      { "parametrizations.weight.0.base", wick.eye(3) } })
    assert.are.same({ "bias", "parametrizations.weight.original", "parametrizations.weight.1.base" },
      nn.utils.from_pytorch_names(sd, m):keys())
    m:load_state_dict(sd)
  end)
  it("registering names: no '.', not empty, not another kind already", function()
    local k = nn.Linear(2, 2)
    k:register_buffer("foo", wick.zeros(1))
    support.assert_error_has(function() k:register_parameter("foo", nn.Parameter(wick.ones(1))) end, "attribute 'foo' already exists")
    support.assert_error_has(function() k:register_buffer("weight", wick.zeros(2, 2)) end, "attribute 'weight' already exists")
    support.assert_error_has(function() k:add_module("x.y", nn.ReLU()) end, "module name can't contain \".\"")
    support.assert_error_has(function() k:register_buffer("", wick.zeros(1)) end, "buffer name can't be empty string")
    k:register_buffer("foo", wick.ones(1)) -- (a buffer again: fine)
  end)
  it("named_modules(remove_duplicate), get_buffer, set_submodule(strict), state_dict pre hooks, sd:pop in load hooks", function()
    local l = nn.Linear(2, 2)
    local s = nn.Sequential(l, nn.ReLU())
    s.alias = l
    local n = 0
    for _ in s:named_modules({ remove_duplicate = false }) do n = n + 1 end
    assert.are.equal(4, n)
    assert.are.same({ 3 }, nn.Sequential(nn.BatchNorm1d(3)):get_buffer("1.running_var"):size():totable())
    support.assert_error_has(function() s:set_submodule("zz", nn.ReLU(), true) end, "strict")
    local seen
    l:register_state_dict_pre_hook(function(_, prefix, keep_vars) seen = { prefix, keep_vars } end)
    l:state_dict()
    assert.are.same({ "", false }, seen)
    local m = nn.Linear(2, 2)
    m:register_load_state_dict_pre_hook(function(_, sd, prefix) sd[prefix .. "weight"] = sd:pop(prefix .. "old_weight") end)
    m:load_state_dict({ old_weight = wick.ones(2, 2), bias = wick.zeros(2) })
    assert.are.equal(4, m.weight:sum():item())
  end)
end)

describe("the fifty-fourth round's lines, part 25 (the distributions conformance port)", function()
  local D = wick.distributions
  it("Chi2 checks its values and has PyTorch's support", function()
    support.assert_error_has(function() return D.Chi2(wick.tensor({ 3.0 })):log_prob(wick.tensor({ -1.0 })) end,
      "Chi2:log_prob: expected value argument")
    assert.are.equal("GreaterThanEq(lower_bound=0.0)", tostring(D.Chi2(wick.tensor({ 2.0 })).support))
  end)
  it("the moments and quantiles PyTorch has: Bernoulli's mode and stddev, Uniform's mode, cdf, icdf, and more icdfs", function()
    local b = D.Bernoulli(wick.tensor({ 0.3, 0.7, 0.5 }))
    assert.are.same({ 0, 1 }, { b.mode[1]:item(), b.mode[2]:item() })
    assert.is_true(b.mode[3]:isnan():item())
    local u = D.Uniform(wick.tensor({ 0.0 }), wick.tensor({ 2.0 }))
    assert.are.same({ 0.25, 0.5 }, { u:cdf(wick.tensor({ 0.5 })):item(), u:icdf(wick.tensor({ 0.25 })):item() })
    assert.is_true(u.mode:isnan():all())
    assert.is_true(math.abs(D.LogNormal(0.0, 1.0):icdf(wick.tensor({ 0.5 })):item() - 1) < 1e-6)
    assert.is_true(math.abs(D.Gumbel(0.0, 1.0):icdf(wick.tensor({ 0.5 })):item() - 0.3665129) < 1e-6)
    assert.is_true(math.abs(D.Weibull(2.0, 3.0):icdf(wick.tensor({ 0.5 })):item() - 1.7699941) < 1e-6)
    assert.is_true(D.Normal(0.0, 1.0):icdf(wick.tensor({ 1.5 })):isnan():all())
  end)
end)

describe("the fifty-fourth round's lines, part 26 (with_kwargs hooks)", function()
  it("a with_kwargs hook gets the call's options table as kwargs, and a pre hook may replace them", function()
    local M = nn.Module:extend("KwargsHooked")
    function M:init() end
    function M:forward(x, opts) return x * ((opts and opts.scale) or 1) end
    local m = M()
    local seen
    m:register_forward_pre_hook(function(_, args, kwargs)
      seen = kwargs.scale
      return args, { scale = kwargs.scale * 2 }
    end, { with_kwargs = true })
    assert.are.equal(6, m(wick.ones(1), { scale = 3 }):item())
    assert.are.equal(3, seen)
    local m2, post = M(), nil
    m2:register_forward_hook(function(_, args, kwargs) post = { #args, kwargs.scale } end, { with_kwargs = true })
    m2(wick.ones(1), { scale = 5 })
    assert.are.same({ 1, 5 }, post)
  end)
end)

describe("the fifty-fourth round's lines, part 27 (the data utilities conformance port)", function()
  local D = wick.data
  it("default_collate refuses a missing dict key, other values and an empty batch", function()
    support.assert_error_has(function() return D.default_collate({ { a = wick.zeros(2), b = wick.ones(2) }, { a = wick.ones(2) } }) end,
      "sample 2 has no key 'b'")
    support.assert_error_has(function() return D.default_collate({ print, print }) end, "batch must contain tensors")
    support.assert_error_has(function() return D.default_collate({}) end, "the batch is empty")
    assert.are.same({ "a", "b" }, D.default_collate({ "a", "b" }))
  end)
  it("ConcatDataset and Subset refuse an IterableDataset", function()
    local It = D.IterableDataset:extend("CollateIt")
    function It:iter() local i = 0; return function() i = i + 1; if i <= 3 then return i end end end
    function It:len() return 3 end
    support.assert_error_has(function() return D.ConcatDataset({ It() }) end, "does not support IterableDataset")
    support.assert_error_has(function() return D.Subset(It(), { 1 }) end, "not an IterableDataset")
  end)
end)

describe("the fifty-fourth round's lines, part 28 (the shape ops conformance port)", function()
  it("chunk of an empty dim gives chunks parts; diagflat; keyword forms of combinations, squeeze, unflatten, swapaxes, select", function()
    local parts = wick.zeros(0, 3):chunk(2)
    assert.are.equal(2, #parts)
    assert.are.same({ 0, 3 }, parts[2]:size():totable())
    assert.are.same({ { 1, 0 }, { 0, 2 } }, wick.diagflat(wick.tensor({ 1, 2 }, { dtype = "int64" })):tolist())
    assert.are.same({ 4, 4 }, wick.ones(3):diagflat(1):size():totable())
    assert.are.same({ 6, 2 }, wick.combinations(wick.arange(3), 2, { with_replacement = true }):size():totable())
    assert.are.same({ 2, 3 }, wick.zeros(2, 1, 3, 1):squeeze({ dim = { 2, 4 } }):size():totable())
    assert.are.same({ 2, 3, 4 }, wick.zeros(2, 12):unflatten({ dim = -1, sizes = { 3, -1 } }):size():totable())
    assert.are.same({ 3, 2 }, wick.zeros(2, 3):swapaxes({ axis0 = 1, axis1 = 2 }):size():totable())
    assert.are.same({ 2 }, wick.zeros(2, 3):select({ dim = 2, index = 1 }):size():totable())
    support.assert_error_has(function() return wick.zeros(3).mT end, "tensor.mT is only supported on matrices")
  end)
end)

describe("the fifty-fourth round's lines, part 29 (the creation conformance port)", function()
  it("an integer arange truncates start and step first, as PyTorch's", function()
    assert.are.same({ -2, -1, 0, 1, 2 }, wick.arange(-2.5, 2, 1, { dtype = "int64" }):tolist())
    assert.are.same({ 0, 1, 2 }, wick.arange(0, 3.5, 1.5, { dtype = "int64" }):tolist())
    support.assert_error_has(function() return wick.arange(0, 5, -1) end, "upper bound and lower bound inconsistent")
  end)
end)

describe("the fifty-fourth round's lines, part 30 (the layers and losses conformance port)", function()
  it("a class weight of the wrong size is PyTorch's error; triplet margin must be positive; momentum = false is None", function()
    local lp = F.log_softmax(wick.randn(2, 4), 2)
    support.assert_error_has(function() return F.nll_loss(lp, wick.tensor({ 1, 3 }):long(), { weight = wick.ones(3) }) end,
      "weight tensor should be defined either for all 4 classes or no classes")
    support.assert_error_has(function() return F.cross_entropy(wick.randn(3, 4), F.softmax(wick.randn(3, 4), 2), { weight = wick.ones(3) }) end,
      "either for all 4 classes")
    support.assert_error_has(function() return F.triplet_margin_loss(wick.randn(2, 3), wick.randn(2, 3), wick.randn(2, 3), { margin = -1 }) end,
      "margin must be greater than 0")
    local bn = nn.BatchNorm1d(2, { momentum = false })
    assert.is_nil(bn.momentum)
    bn(wick.tensor({ { 0, 0 }, { 2, 2 } }))
    bn(wick.tensor({ { 4, 4 }, { 6, 6 } }))
    assert.are.equal(3, bn.running_mean[1]:item()) -- (the cumulative average of the batch means 1 and 5)
  end)
end)

describe("the fifty-fourth round's lines, part 31 (the tensor math known gaps)", function()
  it("wick.gradient is torch.gradient: steps, coordinates, dims, both edge orders", function()
    local f = wick.tensor({ { 1, 2, 4 }, { 3, 7, 8 } })
    local g = wick.gradient(f, { spacing = 2 })
    assert.are.same({ { 1, 2.5, 2 }, { 1, 2.5, 2 } }, g[1]:tolist())
    assert.are.same({ { 0.5, 0.75, 1 }, { 2, 1.25, 0.5 } }, g[2]:tolist())
    local gy, gx = wick.gradient(f, { spacing = { wick.tensor({ 0, 1 }), wick.tensor({ 0, 1, 3 }) } }):unpack()
    assert.are.same({ { 2, 5, 4 }, { 2, 5, 4 } }, gy:tolist())
    assert.is_true((gx - wick.tensor({ { 1, 1, 1 }, { 4, 17 / 6, 0.5 } })):abs():max():item() < 1e-6)
    local e2 = wick.gradient(wick.tensor({ 1, 2, 4, 9 }, { dtype = "float64" }),
      { spacing = { wick.tensor({ 0, 1, 1.5, 3.5 }) }, edge_order = 2 })[1]
    assert.is_true((e2 - wick.tensor({ -1, 3, 3.7, 1.3 }, { dtype = "float64" })):abs():max():item() < 1e-12)
    assert.are.same({ 0.25, 0.75, 1.75, 3.25 }, wick.gradient(wick.tensor({ 1, 2, 4, 9 }), { spacing = 2, edge_order = 2 })[1]:tolist())
    assert.are.same({ { 1, 1.5, 2 }, { 4, 2.5, 1 } }, wick.gradient(f, { dim = 2 })[1]:tolist())
    assert.are.equal(1, #wick.gradient(f, { dim = 2 }))
    assert.are.same({ 3, 4, 6, 7 }, wick.gradient(wick.tensor({ 1, 4, 9, 16 }):long())[1]:tolist())
    support.assert_error_has(function() return wick.gradient(wick.tensor({ 1, 2 }), { edge_order = 2 }) end,
      "at least edge_order+1")
    support.assert_error_has(function() return wick.gradient(f, { spacing = { 1, 2, 3 } }) end, "but got a list of length 3")
    support.assert_error_has(function() return wick.gradient(wick.tensor({ 1, 2, 3 }), { spacing = { wick.tensor({ 0, 1 }) } }) end,
      "give a 1-D tensor of 3")
  end)
  it("special.i1 and i1e; i0 and i0e exact past 15; diff of bools; the median of nothing is NaN", function()
    local x = wick.tensor({ -3, 1, 16, 40 }, { dtype = "float64" })
    local want = { -- (PyTorch's values)
      i0 = { 4.880792585865024, 1.2660658777520082, 893446.227920105, 1.48947747934199e+16 },
      i0e = { 0.24300035416182536, 0.46575960759364043, 0.10054412736125203, 0.06327827987523532 },
      i1 = { -3.9533702174026093, 0.5651591039924851, 865059.4358548394, 1.4707396163259354e+16 },
      i1e = { -0.19682671329730084, 0.2079104153497085, 0.09734961475646808, 0.06248222907444206 },
    }
    for name, w in pairs(want) do
      local got = wick.special[name](x):tolist()
      for i = 1, 4 do assert.is_true(math.abs(got[i] - w[i]) <= 2e-15 * math.abs(w[i]), name .. " " .. i) end
    end
    assert.are.same({ true, false }, wick.tensor({ true, false, false }):diff():tolist())
    assert.is_true(wick.tensor({}):median():item() ~= wick.tensor({}):median():item())
    assert.is_true(wick.tensor({}):nanmedian():item() ~= wick.tensor({}):nanmedian():item())
  end)
end)

describe("the fifty-fourth round's lines, part 32 (the incomplete gamma)", function()
  it("special.gammainc/gammaincc against high-precision values, PyTorch's edge values, the gradient to x only", function()
    local a = wick.tensor({ 1, 100, 1000, 10, 0, 3, 3, -1 }, { dtype = "float64" })
    local x = wick.tensor({ 2, 90, 1010, 30, 1, 0, math.huge, 1 }, { dtype = "float64" })
    -- (P(1, 2) = 1 - e^-2; the others by a 60-digit series, Python's decimal)
    local want = { 1 - math.exp(-2), 0.15822098918643016810, 0.62767894473699472753, 0.99999287824913718442, 1, 0, 1 }
    local p, q = wick.special.gammainc(a, x):tolist(), wick.special.gammaincc(a, x):tolist()
    for i = 1, 7 do
      assert.is_true(math.abs(p[i] - want[i]) <= 1e-12 * want[i], "P " .. i)
      assert.is_true(math.abs(q[i] - (1 - want[i])) <= 1e-12, "Q " .. i)
    end
    assert.is_true(p[8] ~= p[8] and q[8] ~= q[8]) -- (a negative a: NaN)
    local xr = wick.tensor({ 0.3, 2, 7 }, { dtype = "float64", requires_grad = true })
    local ar = wick.tensor({ 0.5, 1, 2.5 }, { dtype = "float64" })
    wick.special.gammainc(ar, xr):sum():backward()
    local density = ((ar - 1) * xr:detach():log() - xr:detach() - ar:lgamma()):exp()
    assert.is_true((xr.grad - density):abs():max():item() < 1e-15)
    local ag = ar:clone():requires_grad_()
    support.assert_error_has(function() wick.special.gammainc(ag, xr):sum():backward() end, "with respect to the first argument")
    local g = wick.distributions.Gamma(wick.tensor({ 2.5 }, { dtype = "float64" }), wick.tensor({ 1.5 }, { dtype = "float64" }))
    assert.is_true(math.abs(g:cdf(wick.tensor({ 1.2 }, { dtype = "float64" })):item() - 0.3916867079185312) < 1e-15)
    local c = wick.distributions.Chi2(wick.tensor({ 3 }, { dtype = "float64" }))
    assert.is_true(math.abs(c:cdf(wick.tensor({ 2 }, { dtype = "float64" })):item() - 0.42759329552912023) < 1e-15)
  end)
end)

describe("the fifty-fourth round's lines, part 33 (zeta, polygamma of any order, erfcx)", function()
  local function close(got, want, tol, what)
    for i = 1, #want do
      local ok = (got[i] ~= got[i] and want[i] ~= want[i]) or got[i] == want[i]
        or math.abs(got[i] - want[i]) <= tol * math.abs(want[i])
      assert.is_true(ok, ("%s %d: %.17g, want %.17g"):format(what, i, got[i], want[i]))
    end
  end
  it("special.zeta, polygamma(n >= 2) and special.erfcx are PyTorch's values", function()
    local f64 = { dtype = "float64" }
    close(wick.special.zeta(wick.tensor({ 2, 3, 1, 0.5, 2.5, 4, 2, 3 }, f64), wick.tensor({ 1, 0.5, 2, 1, -1.5, -2, 1e-3, 100 }, f64)):tolist(),
      { math.pi ^ 2 / 6, 8.414398322117158, math.huge, 0 / 0, 0 / 0, math.huge, 1000001.6425331959, 5.0502499916675004e-05 }, 4e-16, "zeta")
    local x = wick.tensor({ 0.1, 1, 5.5, -1.5, 100 }, f64)
    close(wick.polygamma(2, x):tolist(), { -2001.8614573783439, -2.404113806319188, -0.03960894752130204, -0.23620405164172825,
      -0.00010100499983335001 }, 4e-16, "polygamma 2")
    close(x:polygamma(5):tolist(), { 120000069.30751088, 122.08116743813383, 0.007318980739550783, 15381.648528026304,
      2.4605999440119957e-09 }, 1e-15, "polygamma 5")
    close(wick.special.erfcx(wick.tensor({ -26, -3, 0, 0.3, 1.9, 2.1, 5, 30, 1e5, 1e200 }, f64)):tolist(),
      { 7.657724931490568e+293, 16205.988853999586, 1, 0.7345993345676554, 0.26650937366167254, 0.24511912334517244,
        0.11070463773306861, 0.018795888861416754, 5.6418958351954685e-06, 5.641895835477563e-201 }, 1e-15, "erfcx")
  end)
  it("their gradients: polygamma(n)' is polygamma(n + 1), zeta's flows to q only, erfcx' = 2x erfcx - 2/sqrt(pi)", function()
    local x = wick.tensor({ 0.7, 2.5 }, { dtype = "float64", requires_grad = true })
    wick.polygamma(3, x):sum():backward()
    assert.is_true((x.grad - wick.polygamma(4, x:detach())):abs():max():item() < 1e-12)
    x.grad = nil
    wick.special.erfcx(x):sum():backward()
    local xd = x:detach()
    assert.is_true((x.grad - (2 * xd * wick.special.erfcx(xd) - 2 / math.sqrt(math.pi))):abs():max():item() < 1e-15)
    local s = wick.tensor({ 2.5 }, { dtype = "float64", requires_grad = true })
    support.assert_error_has(function() wick.special.zeta(s, 2):sum():backward() end, "with respect to the first argument")
    support.assert_error_has(function() return wick.special.zeta(2, -1e6 - 0.5) end, "is not supported")
  end)
end)

describe("the fifty-fifth round's lines, part 1 (Prodigy, SophiaG, MelGAN)", function()
  it("an optimizer of one's own keeps PyTorch's 0-dim state tensors, load_state_dict calls __setstate__, step takes keywords", function()
    local O = wick.optim.Optimizer:extend("Mine")
    function O:init(params) O.super.init(self, params, { lr = 1 }) end
    local set = 0
    function O:__setstate__(s)
      set = set + 1
      O.super.__setstate__(self, s)
      for _, g in ipairs(self.param_groups) do g.maximize = g.maximize or false end
    end
    function O:step(closure, bs) return closure, bs end
    local w = nn.Parameter(wick.zeros(3))
    local o = O({ w })
    o:load_state_dict({ state = { [0] = { step = wick.tensor(5.0), p0 = wick.tensor(0.0) } },
      param_groups = { { lr = 1, params = { 0 } } } })
    assert.is_true(wick.is_tensor(o.state[w].step) and wick.is_tensor(o.state[w].p0))
    assert.are.equal(5, o.state[w].step:item())
    assert.are.equal(1, set)
    assert.is_false(o.param_groups[1].maximize)
    local closure, bs = o:step({ bs = 8 })
    assert.is_nil(closure)
    assert.are.equal(8, bs)
    local adam = wick.optim.Adam({ w })
    adam:load_state_dict({ state = { [0] = { step = wick.tensor(5.0), exp_avg = wick.zeros(3), exp_avg_sq = wick.zeros(3) } },
      param_groups = { { lr = 1, params = { 0 }, betas = { 0.9, 0.999 }, eps = 1e-8, weight_decay = 0, amsgrad = false } } })
    assert.are.equal("number", type(adam.state[w].step)) -- (the built-ins keep numbers)
  end)
  it("nn.AvgPool1d prints PyTorch's 1-tuples", function()
    assert.are.equal("AvgPool1d(kernel_size=(4,), stride=(2,), padding=(1,))",
      tostring(nn.AvgPool1d(4, { stride = 2, padding = 1, count_include_pad = false })))
  end)
end)

describe("the fifty-fifth round's lines, part 2 (tensor math known gaps)", function()
  it("all and any over a dim of a uint8 tensor are uint8, as PyTorch's", function()
    local u = wick.tensor({ { 1, 0 }, { 3, 4 } }, { dtype = "uint8" })
    assert.are.equal("uint8", u:all(2).dtype)
    assert.are.same({ 0, 1 }, u:all(2):tolist())
    assert.are.same({ 1, 1 }, wick.any(u, 1):tolist())
    assert.are.equal("bool", wick.tensor({ { 1, 0 } }):all(2).dtype)
  end)
end)

describe("the fifty-fifth round's lines, part 3 (layers' known gaps)", function()
  it("MultiheadAttention's out_proj is PyTorch's NonDynamicallyQuantizableLinear, a Linear", function()
    local m = nn.MultiheadAttention(4, 2)
    assert.is_truthy(tostring(m):find("(out_proj): NonDynamicallyQuantizableLinear(in_features=4, out_features=4, bias=True)", 1, true))
    assert.is_true(wick.isinstance(m.out_proj, nn.Linear))
  end)
end)

describe("the fifty-fifth round's lines, part 4 (recurrent layers' known gaps)", function()
  it("rnn.all_weights and rnn:get_expected_hidden_size are PyTorch's", function()
    local l = nn.LSTM(2, 3, { num_layers = 2, bidirectional = true, proj_size = 2 })
    local aw = l.all_weights
    assert.are.equal(4, #aw)
    assert.are.equal(5, #aw[1])
    assert.are.equal(l.weight_hr_l1_reverse, aw[4][5])
    assert.are.equal(l.weight_ih_l0, aw[1][1])
    assert.are.same({ 4, 4, 2 }, l:get_expected_hidden_size(wick.zeros(5, 4, 2)))
    local g = nn.GRU(2, 3, { batch_first = true, bias = false })
    assert.are.equal(2, #g.all_weights[1])
    assert.are.same({ 1, 4, 3 }, g:get_expected_hidden_size(wick.zeros(4, 5, 2)))
    assert.are.same({ 1, 7, 3 }, g:get_expected_hidden_size(wick.zeros(4, 5, 2), wick.tensor({ 7, 3 })))
  end)
end)

describe("the fifty-fifth round's lines, part 5 (torch.optim.Muon and Adafactor)", function()
  local P = { { { 0.5, -1.0, 0.25 }, { 1.5, 0.75, -0.5 } }, { 0.3, -0.2, 0.9 } }
  local T = { { { 1.0, 2.0, -1.0 }, { 0.5, -1.5, 1.0 } }, { 2.0, 1.0, -3.0 } }
  local function run(make, n)
    local ps, ts = {}, {}
    for i = 1, n do
      ps[i] = nn.Parameter(wick.tensor(P[i], { dtype = "float64" }))
      ts[i] = wick.tensor(T[i], { dtype = "float64" })
    end
    local opt = make(ps)
    for _ = 1, 3 do
      opt:zero_grad()
      local loss = 0
      for i = 1, n do loss = loss + (ps[i] * ts[i]):sin():sum() end
      loss:backward()
      opt:step()
    end
    return ps, opt
  end
  local function near(p, want, tol)
    local got = p:detach():reshape(-1):tolist()
    for i = 1, #want do assert.is_true(math.abs(got[i] - want[i]) <= tol, ("%d: %.17g, want %.17g"):format(i, got[i], want[i])) end
  end
  it("Muon's steps are PyTorch's (bfloat16 Newton-Schulz, nesterov, the lr adjustments)", function()
    local ps = run(function(ps) return wick.optim.Muon(ps, { lr = 0.1 }) end, 1)
    near(ps[1], { 0.28515090624999995, -0.823755796875, 0.45956228906249996, 1.3862988222656247, 0.84315393749999989,
      -0.65422891406250006 }, 1e-12)
    ps = run(function(ps) return wick.optim.Muon(ps, { lr = 0.1, nesterov = false, adjust_lr_fn = "match_rms_adamw", weight_decay = 0 }) end, 1)
    near(ps[1], { 0.43288303120670596, -0.93991948761245447, 0.32361215932167725, 1.4766579090386227, 0.7902566496290423,
      -0.55575038536862331 }, 1e-12)
    support.assert_error_has(function() return wick.optim.Muon({ nn.Parameter(wick.zeros(3)) }) end,
      "Muon only supports 2D parameters")
    support.assert_error_has(function() return wick.optim.Muon({ nn.Parameter(wick.zeros(2, 2)) }, { adjust_lr_fn = "x" }) end,
      "Adjust learning rate function")
  end)
  it("Adafactor's steps are PyTorch's (factored and vector moments, weight decay, d, maximize); its state loads back", function()
    local ps, opt = run(function(ps) return wick.optim.Adafactor(ps, { lr = 0.05 }) end, 2)
    near(ps[1], { 0.35265377398472436, -0.88844025585812059, 0.36697438271825639, 1.4175447173020113, 0.87428630416902275,
      -0.64145782147421937 }, 1e-14)
    near(ps[2], { 0.21726096284322499, -0.28140059821301128, 0.81999537548666923 }, 1e-14)
    assert.are.same({ 2, 1 }, opt.state[ps[1]].row_var:size():totable())
    opt:load_state_dict(opt:state_dict()) -- (the factored moments are not of the parameter's shape)
    assert.is_truthy(tostring(opt):find("eps: (None, 0.001)", 1, true))
    ps = run(function(ps) return wick.optim.Adafactor(ps, { lr = 0.05, weight_decay = 0.1, d = 2, maximize = true }) end, 2)
    near(ps[1], { 0.63849241660442535, -1.1191143384735551, 0.12754080389999334, 1.5602940810769785, 0.60141401757431889,
      -0.34672155890976403 }, 1e-14)
    near(ps[2], { 0.37976823817222305, -0.1110747523137578, 0.97334135582657122 }, 1e-14)
    support.assert_error_has(function() return wick.optim.Adafactor({ nn.Parameter(wick.zeros(3)) }, { beta2_decay = 0.5 }) end,
      "beta2_decay should be <= 0")
    support.assert_error_has(function() return wick.optim.Adafactor({ nn.Parameter(wick.zeros(3)) }, { d = 0.5 }) end,
      "Clipping threshold d should be >= 1")
  end)
end)

describe("the fifty-fifth round's lines, part 6 (the Mochi, AuraFlow and Sana ports)", function()
  it("wick.meshgrid(...):unpack() is an error naming the several values, not the first grid's rows", function()
    support.assert_error_has(function()
      local gx, gy = wick.meshgrid(wick.arange(2), wick.arange(3), { indexing = "ij" }):unpack()
      return gx, gy
    end, "first of wick.meshgrid's 2 grids")
    local gx, gy = wick.meshgrid(wick.arange(2), wick.arange(3), { indexing = "ij" })
    assert.are.same({ 2, 3 }, gy:size():totable())
    assert.are.equal(2, select("#", gx:unpack(1)))
  end)
end)

describe("the fifty-fifth round's lines, part 7 (the RWKV-7 port)", function()
  it("`local B, T, C = x:size()` (the whole Size in B) gets the unpack hint from *, + and size tables", function()
    local x = wick.randn(2, 8, 32)
    local B, T, C = x:size()
    support.assert_error_has(function() return x:view(B * T, C) end, "x:size():unpack()")
    support.assert_error_has(function() return wick.zeros({ B, T, 2, 16 }) end, "got nil after a Size", "x:size():unpack()")
    support.assert_error_has(function() return B + 1 end, "x:size():unpack()")
    assert.are.same({ 2, 8, 32, 2, 8, 32 }, (B * 2):totable()) -- (Python's tuple repetition stays)
  end)
end)

describe("the fifty-fifth round's lines, part 8 (the modded-nanogpt port's bfloat16 roundings)", function()
  it("a broadcast bfloat16 gradient is summed in float32 and rounded once", function()
    wick.manual_seed(3)
    local x, g = wick.randn(2, 16, 32):bfloat16(), wick.randn(2, 16, 32):bfloat16()
    local lam = wick.tensor(0.7, { dtype = "bfloat16" }):requires_grad_(true)
    ;(lam * x):backward(g)
    -- (PyTorch's: the bfloat16 products g x, summed in float32, rounded once: 0.777, where a sum per dim gave 0.738)
    assert.are.equal((g * x):float():sum():bfloat16():item(), lam.grad:item())
  end)
  it("bfloat16 tanh and sigmoid gradients are computed in float32 and rounded once", function()
    wick.manual_seed(0)
    local a = (wick.randn(1000) * 1.5):bfloat16():requires_grad_(true)
    local g = wick.randn(1000):bfloat16()
    local t = wick.tanh(a)
    t:backward(g)
    assert.are.equal(0, a.grad:ne((g:float() * (1 - t:float() ^ 2)):bfloat16()):sum():item())
    local b = a:detach():requires_grad_(true)
    local s = b:sigmoid()
    s:backward(g)
    assert.are.equal(0, b.grad:ne((g:float() * s:float() * (1 - s:float())):bfloat16()):sum():item())
  end)
  it("addcmul and addcdiv round as PyTorch's kernels: value * t1 first, one rounding at the end", function()
    wick.manual_seed(0)
    local s, a, b = wick.randn(1000), wick.randn(1000), wick.randn(1000) + 3
    -- (float32: the product of two float32 values is exact in float64, so this is the fma)
    local want = (s:double() + (a * 0.37):double() * b:double()):float()
    assert.are.equal(0, wick.addcmul(s, a, b, { value = 0.37 }):ne(want):sum():item())
    assert.are.equal(0, wick.addcdiv(s, a, b, { value = 0.37 }):ne(s + a * 0.37 / b):sum():item())
    local sb, ab, bb = s:bfloat16(), a:bfloat16(), b:bfloat16()
    local wantb = (sb:double() + (ab:float() * 0.37):double() * bb:double()):bfloat16()
    assert.are.equal(0, sb:clone():addcmul_(ab, bb, { value = 0.37 }):ne(wantb):sum():item())
  end)
end)

describe("the fifty-fifth round's lines, part 9 (PyTorch's names a scan of torch's namespaces found missing)", function()
  it("nn.functional's ops by their torch.* names, torch.batch_norm's own order", function()
    local x, w = wick.randn(1, 2, 5, 5), wick.randn(3, 2, 3, 3)
    assert.are.equal(0, (wick.conv2d(x, w, nil, 1, 1) - F.conv2d(x, w, nil, 1, 1)):abs():max():item())
    assert.are.same({ 1, 8, 2, 2 }, wick.pixel_unshuffle(wick.randn(1, 2, 4, 4), 2):size():totable())
    local y = wick.batch_norm(x, wick.ones(2) * 2, nil, wick.zeros(2), wick.ones(2), false, 0.1, 0)
    assert.is_true((y - x * 2):abs():max():item() < 1e-6)
    local v, i = wick.adaptive_max_pool1d(wick.tensor({ { { 1, 5, 2, 0 } } }), 2)
    assert.are.same({ 5, 2 }, v:reshape(-1):tolist())
    assert.are.same({ 2, 3 }, i:reshape(-1):tolist())
    assert.are.same({ 0, 0, 1, 2, 0 }, wick.constant_pad_nd(wick.tensor({ 1, 2 }), { 2, 1 }):tolist())
  end)
  it("F's in-place activations, the adaptive pools with indices, max_unpool3d, LPPool3d, TripletMarginWithDistanceLoss", function()
    local x = wick.tensor({ -2, -0.5, 0.5, 3 }, { dtype = "float64" })
    local y = x:clone()
    assert.are.equal(y, F.leaky_relu_(y, 0.1))
    assert.are.same({ -0.2, -0.05, 0.5, 3 }, y:tolist())
    y = x:clone()
    F.threshold_(y, 0.6, -9)
    assert.are.same({ -9, -9, -9, 3 }, y:tolist())
    y = x:clone()
    F.hardtanh_(y)
    assert.are.same({ -1, -0.5, 0.5, 1 }, y:tolist())
    local inp = wick.randn(1, 2, 4, 4, 4)
    local p, idx = F.max_pool3d(inp, 2, { return_indices = true })
    local u = nn.MaxUnpool3d(2)(p, idx)
    assert.are.equal(16, u:ne(0):sum():item())
    assert.are.equal(0, (F.max_pool3d(u, 2) - p):abs():max():item())
    assert.are.equal("MaxUnpool3d(kernel_size=(2, 2, 2), stride=(2, 2, 2), padding=(0, 0, 0))", tostring(nn.MaxUnpool3d(2)))
    assert.is_true(math.abs(nn.LPPool3d(2, 2)(wick.ones(1, 1, 2, 2, 2)):item() - math.sqrt(8)) < 1e-6)
    local _, ai = F.adaptive_max_pool2d_with_indices(wick.arange(16.0):view(1, 1, 4, 4), 2)
    assert.are.same({ 6, 8, 14, 16 }, ai:reshape(-1):tolist())
    local a, pos, neg = wick.tensor({ { 1, 2 }, { 0, 1 } }), wick.tensor({ { 1.5, 2 }, { 1, 1 } }), wick.tensor({ { 0, 0 }, { 0, 3 } })
    local cos = function(s, t) return 1 - F.cosine_similarity(s, t) end
    local l = F.triplet_margin_with_distance_loss(a, pos, neg, { distance_function = cos, swap = true, margin = 0.5, reduction = "none" })
    assert.is_true(math.abs(l[1]:item()) < 1e-6 and math.abs(l[2]:item() - 0.7929) < 1e-4)
    assert.is_true(math.abs(nn.TripletMarginWithDistanceLoss({ margin = 2 })(a, pos, neg):item() - 0.6320) < 1e-4)
  end)
  it("frexp, nonzero_static, put_, slice_scatter, empty_strided, range, cauchy_ and the small names", function()
    local m, e = wick.frexp(wick.tensor({ 8, -0.3, 0, 1e-310, math.huge }, { dtype = "float64" }))
    assert.are.same({ 0.5, -0.6, 0 }, { m[1]:item(), m[2]:item(), m[3]:item() })
    assert.are.same({ 4, -1, 0, -1029, 0 }, e:tolist())
    assert.are.equal("int32", e.dtype)
    assert.are.same({ { 2 }, { 4 }, { -1 } }, wick.tensor({ 0, 1, 0, 2 }):nonzero_static({ size = 3 }):tolist())
    local t = wick.zeros(2, 3)
    t:put_(wick.tensor({ 1, 6, -2 }):long(), wick.tensor({ 9, 8, 7 }))
    assert.are.same({ { 9, 0, 0 }, { 0, 7, 8 } }, t:tolist())
    support.assert_error_has(function() return wick.zeros(3):put_(wick.tensor({ 4 }):long(), wick.tensor({ 1 })) end, "out of range")
    assert.are.same({ { 1, 1 }, { 0, 0 }, { 1, 1 }, { 0, 0 } }, wick.slice_scatter(wick.zeros(4, 2), wick.ones(2, 2), 1, 1, 3, 2):tolist())
    local es = wick.empty_strided({ 2, 3 }, { 1, 2 })
    assert.are.same({ 1, 2 }, { es:stride(1), es:stride(2) })
    assert.are.same({ 0, 0.25, 0.5, 0.75, 1 }, wick.range(0, 1, 0.25):tolist())
    local c = wick.zeros(4000):cauchy_(2, 0.5)
    assert.is_true(math.abs(c:median():item() - 2) < 0.1)
    assert.are.equal(1, wick.special.spherical_bessel_j0(wick.zeros(1)):item())
    assert.is_true(wick.isreal(wick.ones(2)):all())
    assert.is_false(wick.ones(1):is_inference())
    assert.is_true(math.abs(wick.nuclear_norm(wick.tensor({ { 1, 2 }, { 3, 4 } })):item() - 5.8309519) < 1e-5)
  end)
end)

describe("the fifty-fifth round's lines, part 10 (linalg's known gaps)", function()
  it("linalg.tensorsolve's dims move those dims of A last first", function()
    wick.manual_seed(0)
    local A = wick.randn(6, 4, 2, 3, { dtype = "float64" })
    local B = wick.randn(4, 3, { dtype = "float64" })
    local X = wick.linalg.tensorsolve(A, B, { 1, 3 })
    assert.are.same({ 6, 2 }, X:size():totable())
    assert.is_true((wick.tensordot(A:movedim({ 1, 3 }, { 3, 4 }), X, 2) - B):abs():max():item() < 1e-12)
    assert.are.same({ 6, 2 }, wick.linalg.tensorsolve(A, B, { dims = { 1, 3 } }):size():totable())
  end)
end)

describe("the fifty-fifth round's lines, part 11 (the MeanFlow port)", function()
  it("func.jvp keeps the graph to f's parameters and returns several results as lists", function()
    local lin = nn.Linear(2, 2)
    local u, du = wick.func.jvp(function(z) return wick.tanh(lin(z)) end, { wick.randn(3, 2) }, { wick.ones(3, 2) })
    assert.is_true(u.requires_grad and du.requires_grad)
    ;(u:sum() + du:sum()):backward()
    assert.is_not_nil(lin.weight.grad)
    local outs, jvps = wick.func.jvp(function(z) return z * 2, z ^ 2 end, { wick.tensor({ 1, 2 }) }, { wick.tensor({ 1, 1 }) })
    assert.are.same({ 1, 4 }, outs[2]:tolist())
    assert.are.same({ 2, 2 }, jvps[1]:tolist())
    assert.are.same({ 2, 4 }, jvps[2]:tolist())
  end)
  it("clone({memory_format = channels_last}) of another rank is PyTorch's error", function()
    support.assert_error_has(function() return wick.randn(2, 3):clone({ memory_format = wick.channels_last }) end,
      "required rank 4 tensor to use channels_last format")
    assert.is_true(wick.randn(2, 3):t():clone({ memory_format = wick.contiguous_format }):is_contiguous())
  end)
end)

describe("the fifty-fifth round's lines, part 12 (tensor math known gaps)", function()
  it("a NaN clamp bound makes every value NaN with a zero gradient, as PyTorch's", function()
    local x = wick.tensor({ 1, 2 }, { dtype = "float64", requires_grad = true })
    local y = x:clamp(0 / 0)
    assert.is_true(y[1]:item() ~= y[1]:item() and y[2]:item() ~= y[2]:item())
    y:sum():backward()
    assert.are.same({ 0, 0 }, x.grad:tolist())
    local z = wick.tensor({ 1, 5 }):clamp({ max = 0 / 0 })
    assert.is_true(z[2]:item() ~= z[2]:item())
  end)
end)

describe("the fifty-fifth round's lines, part 13 (autograd's known gaps)", function()
  it("vmap's out_dims false (PyTorch's None) returns a result that every sample shares, unbatched", function()
    local f = wick.func.vmap(function(x, w) return x * w, w * 2 end, { 1, false }, { 1, false })
    local a, b = f(wick.randn(3, 2), wick.tensor({ 1, 2 }))
    assert.are.same({ 3, 2 }, a:size():totable())
    assert.are.same({ 2, 4 }, b:tolist())
    support.assert_error_has(function() return wick.func.vmap(function(x) return x * 2 end, 1, false)(wick.randn(3, 2)) end,
      "differs between samples")
  end)
end)

describe("the fifty-fifth round's lines, part 14 (forward-mode AD)", function()
  it("autograd.forward_ad: make_dual, unpack_dual's tangent is the jvp, outside a level is PyTorch's error", function()
    local fwAD = wick.autograd.forward_ad
    local lin = nn.Linear(3, 2)
    local x, v = wick.randn(4, 3), wick.randn(4, 3)
    local tangent, primal
    fwAD.dual_level(function()
      local y = wick.tanh(lin(fwAD.make_dual(x, v)))
      local r = fwAD.unpack_dual(y)
      primal, tangent = r.primal, r.tangent
      assert.is_nil(select(2, fwAD.unpack_dual(lin.weight * 1)))
    end)
    local _, ref = wick.func.jvp(function(z) return wick.tanh(lin(z)) end, { x }, { v })
    assert.is_true((tangent - ref):abs():max():item() < 1e-6)
    assert.are.same({ 4, 2 }, primal:size():totable())
    support.assert_error_has(function() return fwAD.make_dual(x, v) end, "inside a dual_level context")
    support.assert_error_has(function() fwAD.dual_level(function() return fwAD.make_dual(x, wick.zeros(2)) end) end,
      "different size")
    local m = wick.frexp(wick.tensor({ 8 }))
    assert.are.equal(4, m.exponent:item())
  end)
end)

describe("the fifty-fifth round's lines, part 15 (round's decimals)", function()
  it("round(decimals) of float16 computes in float32 (no overflow near 65504) and divides for a negative one", function()
    local x = wick.tensor({ 1000.125, 65000, -3.14159 }, { dtype = "float16" })
    assert.are.same({ 1000, 64992, -3.140625 }, x:round(2):tolist()) -- (PyTorch's values)
    assert.are.same({ 1000, 64992, -0 }, x:round(-2):tolist())
  end)
end)

describe("the fifty-fifth round's lines, part 16 (the nanoVLM port)", function()
  it("two lists join with .. as with +", function()
    local a, b = nn.Linear(2, 2), nn.Linear(2, 3)
    local both = a:parameters() .. b:parameters()
    assert.are.equal(4, #both)
    assert.are.equal(b.bias, both[-1])
  end)
end)

describe("the fifty-fifth round's lines, part 17 (the CleanRL ports)", function()
  it("a Tensor lr stays a tensor in its group, annealed in place; a scheduler fills it", function()
    local p = nn.Parameter(wick.tensor({ 1, 2 }, { dtype = "float64" }))
    local o = wick.optim.SGD({ p }, { lr = wick.tensor(0.1, { dtype = "float64" }) })
    assert.is_true(wick.is_tensor(o.param_groups[1].lr))
    o.param_groups[1].lr:copy_(wick.tensor(0.5))
    p.grad = wick.ones(2, { dtype = "float64" })
    o:step()
    assert.are.same({ 0.5, 1.5 }, p:tolist())
    local s = wick.optim.lr_scheduler.StepLR(o, 1, 0.5)
    o:step()
    s:step()
    assert.is_true(wick.is_tensor(o.param_groups[1].lr))
    assert.are.equal(0.25, o.param_groups[1].lr:item())
    support.assert_error_has(function() return wick.optim.SGD({ p }, { lr = wick.tensor({ 0.1, 0.2 }) }) end, "Tensor lr must be 1-element")
  end)
end)

describe("the fifty-fifth round's lines, part 18 (a scan of nn.Module's methods)", function()
  it("get_extra_state / set_extra_state go through state_dict and load_state_dict, as PyTorch's", function()
    local C = nn.Module:extend("WithExtra")
    function C:init() self.lin = nn.Linear(2, 2); self.count = 3 end
    function C:get_extra_state() return { count = self.count } end
    function C:set_extra_state(s) self.count = s.count end
    local M = nn.Module:extend("HoldsExtra")
    function M:init() self.c = C() end
    local m = M()
    m.c.count = 7
    local sd = m:state_dict()
    assert.are.equal(7, sd["c._extra_state"].count)
    local m2 = M()
    assert.are.equal("<All keys matched successfully>", tostring(m2:load_state_dict(sd)))
    assert.are.equal(7, m2.c.count)
    sd["c._extra_state"] = nil
    support.assert_error_has(function() return m2:load_state_dict(sd) end, 'Missing key(s) in state_dict: "c._extra_state"')
    local plain = nn.Linear(2, 2)
    local psd = plain:state_dict()
    psd._extra_state = 1
    support.assert_error_has(function() return plain:load_state_dict(psd) end, 'Unexpected key(s) in state_dict: "_extra_state"')
  end)
end)

describe("the fifty-fifth round's lines, part 19 (the RT-DETRv2 port)", function()
  it("matmul of two dtypes names matmul, not the mm it reaches", function()
    support.assert_error_has(function() return wick.randn(2, 2, { dtype = "float64" }):matmul(wick.randn(2, 2)) end,
      "matmul: expected both operands to have the same dtype, but got float64 and float32")
    support.assert_error_has(function() return wick.randn(3, 2, 2, { dtype = "float64" }):matmul(wick.randn(3, 2, 2)) end,
      "matmul: expected both operands")
  end)
end)

describe("the fifty-fifth round's lines, part 20 (the Cosmos port)", function()
  it("vector_norm and matrix_norm refuse a narrowing dtype, as PyTorch's", function()
    local x = wick.arange(1, 7, { dtype = "float64" }):view(2, 3)
    support.assert_error_has(function() return wick.linalg.vector_norm(x, { dim = -1, dtype = "float32" }) end,
      "should be convertible without narrowing to the specified dtype (float32)")
    assert.are.equal("float64", wick.linalg.vector_norm(x:float(), { dim = -1, dtype = "float64" }).dtype)
  end)
end)

describe("the fifty-fifth round's lines, part 21 (the AnimateDiff port)", function()
  it("a float32 linspace's step is PyTorch's (difference and quotient in float32): diffusers' beta schedules", function()
    local w = wick.linspace(0.00085, 0.012, 1000, { dtype = "float32" })
    local want = { [2] = 0.0008611611556261778, [500] = 0.006419419310986996, [501] = 0.006430580746382475,
      [778] = 0.009522221982479095 } -- (PyTorch's values)
    for i, v in pairs(want) do assert.are.equal(v, w[i]:item(), "entry " .. i) end
  end)
end)

describe("the fifty-fifth round's lines, part 22 (the titans port)", function()
  it("functional_call's unknown 0-based name says entries count from 1", function()
    local M = nn.Module:extend("HoldsList")
    function M:init() self.weights = nn.ParameterList({ nn.Parameter(wick.ones(2)) }) end
    function M:forward(x) return x * self.weights[1] end
    support.assert_error_has(function() return wick.func.functional_call(M(), { ["weights.0"] = wick.zeros(2) }, wick.ones(2)) end,
      "count from 1 here")
    assert.are.same({ 0, 0 }, wick.func.functional_call(M(), { ["weights.1"] = wick.zeros(2) }, wick.ones(2)):tolist())
  end)
end)

describe("the fifty-fifth round's lines, part 23 (the data and utilities conformance port)", function()
  it("wick.load reads torch.dtype, torch.Size and torch.device values, as torch.load's weights_only allowlist", function()
    local d = wick.load("spec/fixtures/pt_meta.pt")
    assert.are.equal("float32", d.dtype)
    assert.are.equal("int64", d.long)
    assert.are.same({ 2, 3 }, { d.size[1], d.size[2] })
    assert.are.equal("cpu", d.cpu)
    assert.are.equal("cuda:1", d.cuda1)
    assert.are.same({ 2, 3 }, wick.zeros(d.size, { dtype = d.dtype }):size():totable())
  end)
  it("AveragedModel averages an integer buffer and calls multi_avg_fn per dtype, as PyTorch's", function()
    local m = nn.BatchNorm1d(2)
    local sw = wick.optim.swa_utils.AveragedModel(m, { use_buffers = true })
    sw:update_parameters(m)
    m(wick.randn(4, 2))
    sw:update_parameters(m)
    assert.are.equal(0, sw.module.num_batches_tracked:item()) -- (0 + trunc((1 - 0) / 2), PyTorch's)
    local calls = {}
    local m2 = nn.BatchNorm1d(2)
    local sw2 = wick.optim.swa_utils.AveragedModel(m2, { use_buffers = true, multi_avg_fn = function(a, c)
      calls[#calls + 1] = #a
      for i = 1, #a do a[i]:copy_(c[i]) end
    end })
    sw2:update_parameters(m2)
    sw2:update_parameters(m2)
    assert.are.same({ 1, 4 }, calls) -- (the int64 group, then the float32 one)
  end)
end)

describe("the fifty-fifth round's lines, part 24 (the tensor-ops and nn-layers conformance ports)", function()
  it("searchsorted of a fractional number among integers, vander of integers, flip's repeated dim, floor division", function()
    local s = wick.tensor({ -1, 0, 0, 1 }, { dtype = "int64" })
    assert.are.equal(4, wick.searchsorted(s, 0.5):item())
    assert.are.equal(4, wick.bucketize(0.5, s):item())
    assert.are.same({ { 1, 1, 1 }, { 4, 2, 1 }, { 9, 3, 1 } }, wick.vander(wick.tensor({ 1, 2, 3 }, { dtype = "int64" })):tolist())
    support.assert_error_has(function() return wick.tensor({ { 1, 2 }, { 3, 4 } }):flip(1, 1) end, "appears multiple times")
    -- (PyTorch's float32 floor division, from fmod: -3 // -0.3 is 9; in float64 10)
    assert.are.equal(9, wick.floor_divide(wick.tensor({ -3 }, { dtype = "int64" }), -0.3):item())
    assert.are.equal(9, wick.tensor({ -3 }):div(-0.3, { rounding_mode = "floor" }):item())
    assert.are.equal(10, wick.tensor({ -3 }, { dtype = "float64" }):div(-0.3, { rounding_mode = "floor" }):item())
    assert.is_true(math.abs(wick.tensor({ { 1, 2 }, { 3, 4 } }):norm("nuc"):item() - 5.8309518948453) < 1e-5)
  end)
  it("RReLU's gradient at 0 is its slope; the pair losses take PyTorch's positional margin; reprs as PyTorch's", function()
    local x = wick.zeros(1, { dtype = "float64", requires_grad = true })
    local m = nn.RReLU()
    m:eval()
    m(x):sum():backward()
    assert.is_true(math.abs(x.grad[1]:item() - (1 / 8 + 1 / 3) / 2) < 1e-15)
    assert.is_true(math.abs(nn.MarginRankingLoss(0.3)(wick.tensor({ 1, 2 }), wick.tensor({ 2, 1 }), wick.tensor({ 1, 1 })):item() - 0.65) < 1e-6)
    local t = nn.TripletMarginLoss(0.7, 3)
    assert.are.equal(0.7, t._opts.margin)
    assert.are.equal("sum", nn.CosineEmbeddingLoss(0.2, { reduction = "sum" })._opts.reduction)
    assert.are.equal("Embedding(10, 4, max_norm=1.0, norm_type=1.5)", tostring(nn.Embedding(10, 4, { max_norm = 1.0, norm_type = 1.5 })))
    assert.are.equal("LocalResponseNorm(3, alpha=0.0001, beta=0.75, k=1.0)", tostring(nn.LocalResponseNorm(3)))
    assert.are.equal("Hardshrink(0.5)", tostring(nn.Hardshrink()))
    assert.are.equal("CTCLoss()", tostring(nn.CTCLoss({ blank = 2 })))
  end)
end)

describe("the fifty-sixth round's lines, part 1 (the consistency-models, slot-attention and linalg-sweep ports)", function()
  it("wick.deepcopy of a parameters() list copies the tensors (Python's copy.deepcopy(list(m.parameters())))", function()
    local lin = nn.Linear(2, 2)
    local ema = wick.deepcopy(lin:parameters())
    assert.is_false(rawequal(ema[1], lin.weight))
    assert.is_true(ema[1].requires_grad)
    assert.are.equal(lin.weight:sum():item(), ema[1]:sum():item())
    ema[1]:detach():zero_()
    assert.is_true(lin.weight:abs():sum():item() > 0)
    for p in ema do assert.is_true(wick.is_tensor(p)) end -- (still a list a generic for takes)
    local P = wick.namedtuple("P", { "a", "b" })
    local x = P(wick.ones(2), 3)
    local y = wick.deepcopy(x)
    assert.is_false(rawequal(y.a, x.a))
    assert.are.equal(3, y.b)
  end)
  it("wick.normal(mean, std) of tensors that require grad: a result in the graph whose gradients are zero", function()
    local mu = wick.zeros(3):requires_grad_()
    local sd = wick.ones(3):requires_grad_()
    local r = wick.normal(mu, sd)
    assert.is_true(r.requires_grad)
    r:sum():backward()
    assert.are.same({ 0, 0, 0 }, mu.grad:tolist())
    assert.are.same({ 0, 0, 0 }, sd.grad:tolist())
    local g = wick.autograd.grad(wick.normal(0.0, sd:view(3, 1):expand(3, 2)):sum(), { sd })[1]
    assert.are.same({ 0, 0, 0 }, g:tolist())
    assert.is_false(wick.normal(wick.zeros(2), 1).requires_grad)
  end)
  it("cov's weights checked as PyTorch's, one variable's cov a 0-dim tensor; histc's range finite; cdist's p >= 0", function()
    local x = wick.tensor({ { 1, 2, 4 } })
    support.assert_error_has(function() return wick.cov(x, { fweights = wick.tensor({ 1, -1, 2 }, { dtype = "int64" }) }) end,
      "fweights cannot be negative")
    support.assert_error_has(function() return wick.cov(x, { fweights = wick.tensor({ 1, 1.5, 2 }) }) end, "integral dtype")
    assert.is_true(math.abs(wick.cov(x, { fweights = wick.tensor({ 1, 1, 2 }) }):item() - 2.25) < 1e-6) -- (PyTorch's, int64 weights)
    support.assert_error_has(function() return wick.cov(x, { aweights = wick.tensor({ 1, 1, 2 }, { dtype = "int64" }) }) end,
      "floating point dtype")
    support.assert_error_has(function() return wick.cov(x, { aweights = wick.tensor({ 1, -1, 2 }) }) end, "aweights cannot be negative")
    support.assert_error_has(function() return wick.cov(x, { aweights = wick.tensor({ 1, 2 }) }) end, "2 != 3")
    local c = wick.cov(x)
    assert.are.equal(0, c:dim())
    assert.is_true(math.abs(c:item() - 7 / 3) < 1e-6)
    assert.are.equal(0, wick.corrcoef(x):dim())
    local w = wick.cov(wick.tensor({ { 1, 2, 4 }, { 0, 1, 1 } }, { dtype = "float64" }),
      { fweights = wick.tensor({ 1, 2, 2 }, { dtype = "int64" }), aweights = wick.tensor({ 0.5, 1, 2 }, { dtype = "float64" }) })
    assert.is_true(math.abs(w[1][1]:item() - 1.59375) < 1e-12) -- (PyTorch's)
    support.assert_error_has(function() return wick.histc(wick.tensor({ 1, math.huge, 2 }), 3) end, "range of [1, inf] is not finite")
    support.assert_error_has(function() return wick.cdist(wick.randn(2, 2), wick.randn(2, 2), -1) end, "non-negative p")
  end)
  it("diff with more steps than values: an empty result still in the graph (zero gradients)", function()
    local x = wick.randn(3, { requires_grad = true })
    local y = wick.diff(x, 5)
    assert.are.same({ 0 }, y:size())
    assert.is_true(y.requires_grad)
    assert.are.same({ 0, 0, 0 }, wick.autograd.grad(y:sum(), { x })[1]:tolist())
  end)
end)

describe("the fifty-sixth round's lines, part 2 (the CPC and GRPO ports)", function()
  it("an RNN's _all_weights names its parameters by layer; rnn:__getattr__(name) is the parameter", function()
    local g = nn.GRU(4, 3, 2, { bidirectional = true })
    assert.are.same({ "weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0" }, g._all_weights[1])
    assert.are.same({ "weight_ih_l1_reverse", "weight_hh_l1_reverse", "bias_ih_l1_reverse", "bias_hh_l1_reverse" }, g._all_weights[4])
    for _, layer_p in ipairs(g._all_weights) do
      for _, p in ipairs(layer_p) do
        if p:find("weight") then nn.init.kaiming_normal_(g:__getattr__(p), { mode = "fan_out", nonlinearity = "relu" }) end
      end
    end
    assert.are.equal(g.weight_ih_l0, g:__getattr__("weight_ih_l0"))
    assert.is_nil(g.no_such_name)
  end)
  it("stack's node is StackBackward, as PyTorch's", function()
    local a = wick.ones(1, { requires_grad = true })
    assert.are.equal("StackBackward", wick.stack({ a, a }).grad_fn)
    assert.are.equal("CatBackward", wick.cat({ a, a }).grad_fn)
  end)
end)

describe("the fifty-sixth round's lines, part 3 (the few-shot, NTM and loss-sweep ports)", function()
  it("for row in t do iterates over the first dim; calling a tensor otherwise, or joining two with .., is an error", function()
    local t = wick.arange(6):view(3, 2)
    local rows = {}
    for row in t do rows[#rows + 1] = row:tolist() end
    assert.are.same({ { 0, 1 }, { 2, 3 }, { 4, 5 } }, rows)
    local n = 0
    for _ in t do for _ in t do n = n + 1 end end
    assert.are.equal(9, n)
    for _ in wick.zeros(0, 2) do n = n + 1 end
    assert.are.equal(9, n)
    support.assert_error_has(function() return t(wick.ones(2)) end, "attempt to call a tensor")
    support.assert_error_has(function() for _ in wick.tensor(1.0) do end end, "iteration over a 0-d tensor")
    support.assert_error_has(function() return wick.ones(2, 3) .. wick.ones(3, 2) end, "a:matmul(b)")
    assert.is_false(require("wick.argcheck").is_callable(t))
  end)
  it("cosine_embedding_loss puts eps in each squared norm, as PyTorch's (a zero vector's gradient is finite)", function()
    local a = wick.tensor({ { 1e-6, 0 } }, { dtype = "float64" })
    local one = wick.tensor({ 1 }, { dtype = "float64" })
    assert.is_true(math.abs(F.cosine_embedding_loss(a, a:clone(), one):item() - 0.5) < 1e-12)
    local b = wick.zeros(1, 2, { dtype = "float64", requires_grad = true })
    F.cosine_embedding_loss(wick.tensor({ { 1.0, 2.0 } }, { dtype = "float64" }), b, one, { reduction = "sum" }):backward()
    assert.is_true(math.abs(b.grad[1][1]:item() + 447213.5954999579) < 1e-6) -- (PyTorch's)
    support.assert_error_has(function() return F.cosine_embedding_loss(wick.randn(4, 3), wick.randn(4, 3), wick.ones(5)) end,
      "expected a target of shape [4]")
  end)
  it("losses name themselves on shape errors; probability targets refuse ignore_index; kl_div's negative target is NaN", function()
    local x = wick.randn(2, 3)
    support.assert_error_has(function() return F.cross_entropy(x, F.softmax(x, 2), { ignore_index = 2 }) end,
      "ignore_index is not supported for floating point target")
    support.assert_error_has(function() return F.cross_entropy(x, wick.rand(2, 4)) end, "must have the input's shape [2, 3]")
    support.assert_error_has(function() return F.binary_cross_entropy(wick.rand(4, 5), wick.rand(4, 5), { weight = wick.rand(6) }) end,
      "binary_cross_entropy: The size of tensor a (5) must match the size of tensor b (6)")
    support.assert_error_has(function() return F.margin_ranking_loss(wick.randn(4), wick.randn(5), wick.ones(4)) end,
      "margin_ranking_loss: The size")
    support.assert_error_has(function() return F.soft_margin_loss(wick.randn(4, 3), wick.ones(4, 2)) end, "soft_margin_loss: The size")
    support.assert_error_has(function() return F.hinge_embedding_loss(wick.randn(4, 3), wick.ones(5)) end, "hinge_embedding_loss: The size")
    local kl = F.kl_div(wick.tensor({ { -1.0, -2.0 } }, { dtype = "float64" }), wick.tensor({ { -0.1, 0.5 } }, { dtype = "float64" }),
      { reduction = "none" })
    assert.is_true(kl[1][1]:item() ~= kl[1][1]:item())
    assert.is_true(math.abs(kl[1][2]:item() - 0.6534264097200273) < 1e-12)
  end)
end)

describe("the fifty-sixth round's lines, part 4 (the MoE ports)", function()
  it("einops of a list whose stacked rank misses the pattern names the list and :unpack()", function()
    local q = wick.randn(2, 8, 48):chunk(3, -1)
    support.assert_error_has(function() return wick.einops.rearrange(q, "b n (h d) -> b h n d", { h = 2 }) end,
      "a list of 3 tensors, stacked")
    assert.are.same({ 2, 2 }, wick.einops.rearrange({ wick.ones(2), wick.ones(2) }, "n d -> d n"):size())
  end)
end)

describe("the fifty-sixth round's lines, part 5 (the YOLACT port)", function()
  it("wick.product is itertools.product: the last iterable fastest, repeat, an empty one gives nothing", function()
    local seen = {}
    for a, b in wick.product({ 1, 2 }, { 1, 2, 3 }) do seen[#seen + 1] = a * 10 + b end
    assert.are.same({ 11, 12, 13, 21, 22, 23 }, seen)
    seen = {}
    for a, b in wick.product({ "x", "y" }, { ["repeat"] = 2 }) do seen[#seen + 1] = a .. b end
    assert.are.same({ "xx", "xy", "yx", "yy" }, seen)
    for _ in wick.product({}, { 1 }) do error("an empty iterable gives no combination") end
    seen = {}
    for j, i in wick.product(wick.arange(2), wick.arange(2)) do seen[#seen + 1] = j:item() * 2 + i:item() end
    assert.are.same({ 0, 1, 2, 3 }, seen)
    support.assert_error_has(function() return wick.product({ 1 }, { ["repeat"] = -1 }) end, "cannot be negative")
  end)
end)

describe("the fifty-sixth round's lines, part 6 (the views sweep, RepVGG and ACT ports)", function()
  it("clone's _version starts at 0; set_ takes a storage window; a Sequential's named entry can be deleted", function()
    local c = wick.zeros(3):clone()
    assert.are.equal(0, c._version)
    c:add_(1)
    assert.are.equal(1, c._version)
    local z, src = wick.zeros(2), wick.arange(12)
    z:set_(src, 2, { 2, 3 }, { 1, 2 })
    assert.are.same({ { 2, 4, 6 }, { 3, 5, 7 } }, z:tolist())
    src:add_(100)
    assert.are.equal(102, z[1][1]:item()) -- (the storage is shared)
    local y = wick.zeros(2)
    y:set_(wick.arange(12), 3, { 2, 2 })
    assert.are.same({ { 3, 4 }, { 5, 6 } }, y:tolist())
    support.assert_error_has(function() y:set_(wick.arange(12), 3) end, "needs a size")
    local s = nn.Sequential()
    s:add_module("conv", nn.Linear(2, 2))
    s:add_module("act", nn.ReLU())
    s:__delattr__("conv")
    assert.are.equal(1, #s)
    assert.are.equal(0, #s:parameters())
    local s2 = nn.Sequential()
    s2:add_module("conv", nn.Linear(2, 2))
    s2.conv = nil
    assert.is_nil(s2.conv)
    assert.are.equal(0, #s2)
    support.assert_error_has(function() s:__delattr__("nope") end, "has no attribute 'nope'")
  end)
  it("wick.None names wick.newaxis", function()
    support.assert_error_has(function() return wick.None end, "wick.newaxis")
  end)
end)

describe("the fifty-sixth round's lines, part 7 (the Medusa port)", function()
  it("a view made under no_grad refuses a tracked in-place write, as PyTorch's; an untracked one goes through", function()
    local data = wick.zeros(2, 5)
    local row = wick.no_grad(function() return data[1] end)
    local w = wick.ones(3, { requires_grad = true })
    support.assert_error_has(function() row:narrow(1, 1, 3):copy_(w * 2) end,
      "A view was created in no_grad mode and is being modified inplace with grad mode enabled")
    support.assert_error_has(function() row:add_(w:sum()) end, "created in no_grad mode")
    row:narrow(1, 1, 3):copy_(wick.ones(3))
    wick.no_grad(function() row:narrow(1, 4, 2):copy_(w:sum():expand(2)) end)
    assert.are.same({ 1, 1, 1, 3, 3 }, data[1]:tolist())
    local d2 = wick.zeros(2, 5)
    d2[1]:narrow(1, 1, 3):copy_(w * 2)
    d2:sum():backward()
    assert.are.same({ 2, 2, 2 }, w.grad:tolist())
  end)
end)

describe("the fifty-sixth round's lines, part 8 (the Hymba port)", function()
  it("einops.unpack gives a list as split's: :unpack() and [-1]", function()
    local a, b = wick.randn(2, 3, 4), wick.randn(2, 5, 4)
    local packed, ps = wick.einops.pack({ a, b }, "b * d")
    local mem, h = wick.einops.unpack(packed, ps, "b * d"):unpack()
    assert.are.same({ 2, 3, 4 }, mem:size())
    assert.are.same({ 2, 5, 4 }, h:size())
    assert.are.same({ 2, 5, 4 }, wick.einops.unpack(packed, ps, "b * d")[-1]:size())
  end)
end)

describe("the fifty-sixth round's lines, part 9 (the PonderNet and imitation ports)", function()
  it("bernoulli of a p that requires grad is in the graph with zero gradients, as PyTorch's", function()
    local p = wick.full({ 3 }, 0.5, { requires_grad = true })
    local b = wick.bernoulli(p)
    assert.is_true(b.requires_grad)
    b:sum():backward()
    assert.are.same({ 0, 0, 0 }, p.grad:tolist())
    assert.is_false(wick.bernoulli(wick.full({ 2 }, 0.5)).requires_grad)
  end)
  it("Sequential of a plain table of names points to wick.OrderedDict", function()
    support.assert_error_has(function() return nn.Sequential({ dense0 = nn.Linear(2, 2) }) end, "wick.OrderedDict")
  end)
end)

describe("the fifty-sixth round's lines, part 10 (the views sweep)", function()
  it("t:as_strided_ makes t itself a view of its storage, as PyTorch's", function()
    local t = wick.arange(12)
    assert.is_true(rawequal(t, t:as_strided_({ 2, 3 }, { 1, 2 }, 2)))
    assert.are.same({ { 2, 4, 6 }, { 3, 5, 7 } }, t:tolist())
    assert.are.equal(2, t:storage_offset())
    local u = wick.arange(6)
    u:as_strided_({ 3 }, { 2 })
    assert.are.same({ 0, 2, 4 }, u:tolist())
    support.assert_error_has(function() wick.ones(4, { requires_grad = true }):as_strided_({ 2 }, { 1 }) end,
      "a leaf Variable that requires grad")
  end)
end)
