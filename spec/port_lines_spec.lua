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
    assert.is_nil(keys.shape[-4])
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
