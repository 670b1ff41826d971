-- wick.nn: each layer's forward against hand-computed values or PyTorch's, each
-- layer's backward by gradcheck in float64, PyTorch's default initialisation,
-- BatchNorm and Dropout in train and eval mode, every loss against PyTorch,
-- the Module system (order of first assignment, names, buffers, train/eval,
-- state_dict and load_state_dict, to()), and whole models on the meta device.
--
-- Reference numbers marked "PyTorch" were computed with PyTorch 1.13 in float64
-- (torch.nn.functional / torch.nn with the same weights and inputs, targets
-- shifted to PyTorch's 0-based classes) and pasted here; the specs never run Python.
local wick = require("wick")
local nn = wick.nn
local support = require("spec.support")
local assert_close, assert_error_has, shape_of = support.assert_close, support.assert_error_has, support.shape_of

local F64 = { dtype = "float64" }
local I = support.I

local seq = support.seq -- deterministic float64 values, the references' formula

-- Sets a module's parameter to the given values, in place (same tensor object).
local function set(t, values)
  wick.no_grad(function() t:copy_(wick.is_tensor(values) and values or wick.tensor(values, { dtype = t.dtype })) end)
end

-- gradcheck of module m (float64) with respect to its input x and the named
-- parameters: each gradcheck leaf is put in place of the parameter.
local function module_gradcheck(m, x, names, extra)
  local inputs = { x }
  for i, name in ipairs(names or {}) do inputs[i + 1] = m[name]:detach():clone() end
  return support.gradcheck(function(xx, ...)
    local ps = { ... }
    for i, name in ipairs(names or {}) do rawset(m, name, ps[i]) end
    return m(xx, extra)
  end, inputs)
end

local function names_of(iter)
  local out = {}
  for name in iter do out[#out + 1] = name end
  return out
end

local sorted = support.sorted

-- ======================================================================
describe("nn layers: forward", function()
  it("Linear computes x W^T + b (2-D and 3-D input, without bias)", function()
    local m = nn.Linear(3, 2):to("float64")
    set(m.weight, { { 0.1, -0.2, 0.3 }, { 0.4, 0.5, -0.6 } })
    set(m.bias, { 0.01, -0.02 })
    local x = wick.tensor({ { 1, 2, 3 }, { -1, 0.5, 2 } }, F64)
    -- by hand: 0.1 - 0.4 + 0.9 + 0.01 = 0.61, 0.4 + 1.0 - 1.8 - 0.02 = -0.42, ...
    local expected = { { 0.61, -0.42 }, { 0.41, -1.37 } }
    assert_close(m(x), expected, 1e-12)
    assert_close(m(x:view(2, 1, 3)), { { expected[1] }, { expected[2] } }, 1e-12)
    local nb = nn.Linear(3, 2, { bias = false }):to("float64")
    assert.is_nil(nb.bias)
    set(nb.weight, { { 0.1, -0.2, 0.3 }, { 0.4, 0.5, -0.6 } })
    assert_close(nb(x), { { 0.6, -0.4 }, { 0.4, -1.35 } }, 1e-12)
    assert.are.same({ "weight" }, names_of(nb:named_parameters()))
  end)

  it("Conv2d with padding, stride and groups (PyTorch)", function()
    local x = seq({ 1, 2, 3, 3 }, 7, 17, 8, 10)
    local m = nn.Conv2d(2, 3, 2, { padding = 1 }):to("float64")
    set(m.weight, seq({ 3, 2, 2, 2 }, 5, 13, 6, 10))
    set(m.bias, seq({ 3 }, 3, 7, 3, 10))
    assert_close(m(x), { { { { 0.14, -0.84, -0.43, -0.08 }, { 0.42, -0.63, 0.29, -1.03 }, { 0.07, -0.25, -0.01, 0.21 }, { -0.6, -0.3, -1.15, -0.2 } },
      { { 0.4, -0.65, -0.13, 0.29 }, { 0.2, 0.39, 0.45, -0.68 }, { -0.68, 0.4, -0.39, 0.38 }, { 0.3, -0.22, 0.17, -0.01 } },
      { { 0.66, -0.46, 0.17, 0.66 }, { 0.5, 0.63, 0.74, -0.33 }, { -0.39, 0.79, -0.12, 0.55 }, { 0.55, 0.12, 0.45, 0.18 } } } }, 1e-12)
    local s2 = nn.Conv2d(2, 3, 2, { stride = 2 }):to("float64")
    set(s2.weight, m.weight); set(s2.bias, m.bias)
    assert_close(s2(x), { { { { -0.63 } }, { { 0.39 } }, { { 0.63 } } } }, 1e-12)
    local g = nn.Conv2d(2, 2, 2, { groups = 2, bias = false }):to("float64")
    assert.are.same({ 2, 1, 2, 2 }, shape_of(g.weight))
    set(g.weight, seq({ 2, 1, 2, 2 }, 5, 13, 6, 10))
    assert_close(g(x), { { { { 0.21, 0.4 }, { -0.07, 0.29 } }, { { -0.54, 0.19 }, { 0.12, 0 } } } }, 1e-12)
  end)

  it("MaxPool2d and AvgPool2d (PyTorch)", function()
    local x = seq({ 1, 1, 4, 4 }, 7, 17, 8, 10)
    assert_close(x, { { { { -0.8, -0.1, 0.6, -0.4 }, { 0.3, -0.7, 0.0, 0.7 }, { -0.3, 0.4, -0.6, 0.1 }, { 0.8, -0.2, 0.5, -0.5 } } } })
    assert_close(nn.MaxPool2d(2)(x), { { { { 0.3, 0.7 }, { 0.8, 0.5 } } } }, 1e-12)
    assert_close(nn.MaxPool2d(3, { stride = 1 })(x), { { { { 0.6, 0.7 }, { 0.8, 0.7 } } } }, 1e-12)
    assert_close(nn.AvgPool2d(2)(x), { { { { -0.325, 0.225 }, { 0.175, -0.125 } } } }, 1e-12)
    assert_close(nn.AvgPool2d(3, { stride = 1, padding = 1 })(x), { { {
      { -0.14444444444444446, -0.07777777777777778, 0.011111111111111108, 0.1 },
      { -0.13333333333333336, -0.13333333333333333, 0, 0.04444444444444443 },
      { 0.03333333333333335, 0.022222222222222237, -0.033333333333333326, 0.022222222222222216 },
      { 0.07777777777777779, 0.06666666666666668, -0.033333333333333326, -0.05555555555555555 } } } }, 1e-12)
  end)

  it("Flatten keeps the batch dimension by default", function()
    local x = wick.zeros(2, 3, 4, 5)
    assert.are.same({ 2, 60 }, shape_of(nn.Flatten()(x)))
    assert.are.same({ 2, 3, 20 }, shape_of(nn.Flatten(3)(x)))
    assert.are.same({ 6, 4, 5 }, shape_of(nn.Flatten(1, 2)(x)))
    local v = wick.arange(24):reshape(2, 3, 4)
    assert_close(nn.Flatten()(v)[2], { 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23 })
  end)

  it("BatchNorm2d in training and eval mode (PyTorch: F.batch_norm in float64)", function()
    local x = seq({ 2, 3, 2, 2 }, 7, 17, 8, 10)
    local bn = nn.BatchNorm2d(3):to("float64")
    set(bn.weight, { 1.5, -0.5, 2.0 }); set(bn.bias, { 0.1, 0.2, -0.3 })
    assert_close(bn(x), { { { { -2.0800227330423517, -0.14222474811581687 }, { 1.795573236810718, -0.9727095987986176 } },
      { { -0.06741409365034878, 0.9050007923509196 }, { 0.22431037215003172, -0.4563800480508561 } },
      { { -1.0811069881307236, 2.56405895647932 }, { -2.6433209643921707, 1.0018449802178726 } } },
      { { { 2.349229803932585, -0.41905303167675045 }, { 1.5187449532497845, -1.249537882359551 } },
        { { 0.029827394949778034, 1.0022422809510465 }, { 0.32155186075015857, -0.35913855945072926 } },
        { { -1.6018449802178727, 2.0433209643921706 }, { -3.1640589564793196, 0.48110698813072356 } } } }, 1e-10)
    assert_close(bn.running_mean, { -0.00125, 0.0025, -0.015 }, 1e-12)
    assert_close(bn.running_var, { 0.9335535714285714, 0.9302142857142858, 0.9168571428571429 }, 1e-12)
    bn:eval()
    assert_close(bn(x), { { { { -1.140024259991975, -0.05330503370792805 }, { 1.0334141925761189, -0.5190418449725197 } },
      { { 0.04577203166945559, 0.5641853705956553 }, { 0.20129603334731552, -0.16159330390102433 } },
      { { -0.8952804926187361, 0.5668119453921949 }, { -1.521891537480564, -0.059799099469632716 } } },
      { { { 1.3439054000858466, -0.20855063746279193 }, { 0.878168588821255, -0.6742874487273834 } },
        { { 0.09761336556207555, 0.6160267044882753 }, { 0.2531373672399355, -0.10975197000840436 } },
        { { -1.1041508409060121, 0.3579415971049191 }, { -1.7307618857678397, -0.2686694477569086 } } } }, 1e-10)
  end)

  it("BatchNorm1d on 3-D input [N, C, L] (PyTorch)", function()
    local x = seq({ 2, 2, 3 }, 5, 11, 5, 4)
    local bn = nn.BatchNorm1d(2):to("float64")
    assert_close(bn(x), { { { -1.5467679743497478, -0.09667299839685924, 1.3534219775560294 }, { 0.05513130203575123, 1.709070363108287, -0.2756565101787559 } },
      { { 0.7733839871748739, -0.9667299839685924, 0.4833649919842962 }, { -0.9372321346077702, 0.7167069264647655, -1.2680199468222773 } } }, 1e-10)
    assert_close(bn.running_mean, { 0.008333333333333333, -0.02916666666666667 }, 1e-12)
    assert_close(bn.running_var, { 0.9891666666666667, 0.9685416666666666 }, 1e-12)
  end)

  it("LayerNorm over the last dims, with and without affine weights (PyTorch)", function()
    local x = seq({ 2, 2, 3 }, 7, 17, 8, 10)
    local ln = nn.LayerNorm(3):to("float64")
    set(ln.weight, { 1.0, 2.0, -1.0 }); set(ln.bias, { 0.0, 0.5, 0.25 })
    assert_close(ln(x), { { { -1.224726125727003, 0.5, -0.9747261257270028 }, { -0.31821385074663966, 3.2048177313464374, 1.2841950149265788 } },
      { { -0.31821385074663966, 3.204817731346437, 1.2841950149265788 }, { 1.034195014926579, -2.204817731346437, -0.06821385074663966 } } }, 1e-10)
    local ln23 = nn.LayerNorm({ 2, 3 }):to("float64")
    assert_close(ln23(x), { { { -1.2139071025719235, 0.16404150034755713, 1.5419901032670376 }, { -0.4265079009036488, 0.9514407020158316, -1.0170573021548546 } },
      { { -0.11703794072113041, 1.5214932293746952, -0.8192655850479128 }, { 0.8192655850479129, -1.5214932293746952, 0.11703794072113041 } } }, 1e-10)
    assert_close(ln23.weight, { { 1, 1, 1 }, { 1, 1, 1 } })
    assert_close(ln23.bias, { { 0, 0, 0 }, { 0, 0, 0 } })
  end)

  it("LayerNorm: an empty batch gives an empty result; trailing dims that differ from normalized_shape are an error", function()
    local y = nn.LayerNorm(4)(wick.zeros(0, 4))
    assert.are.same({ 0, 4 }, y:size())
    local ok, err = pcall(nn.functional.layer_norm, wick.zeros(2, 6), { 3 })
    assert.is_false(ok)
    assert.is_truthy(tostring(err):find("expected input with shape [*, 3], but got input of size[2, 6]", 1, true), err)
  end)

  it("Embedding picks rows by 1-based index", function()
    local e = nn.Embedding(4, 2):to("float64")
    set(e.weight, { { 1, 2 }, { 3, 4 }, { 5, 6 }, { 7, 8 } })
    assert_close(e(I({ 4, 1, 1 })), { { 7, 8 }, { 1, 2 }, { 1, 2 } })
    local out = e(I({ { 2, 3 }, { 4, 1 } }))
    assert.are.same({ 2, 2, 2 }, shape_of(out))
    assert_close(out, { { { 3, 4 }, { 5, 6 } }, { { 7, 8 }, { 1, 2 } } })
    assert_error_has(function() e(wick.tensor({ 1, 2 })) end, "int64")
  end)

  it("activations: ReLU, GELU, Sigmoid, Tanh, Softmax, LogSoftmax (PyTorch)", function()
    local x = seq({ 2, 3 }, 7, 17, 8, 4)
    assert_close(x, { { -2.0, -0.25, 1.5 }, { -1.0, 0.75, -1.75 } })
    assert_close(nn.ReLU()(x), { { 0, 0, 1.5 }, { 0, 0.75, 0 } })
    assert_close(nn.GELU()(x), { { -0.04550026389635842, -0.10032341857926907, 1.399789198096713 }, { -0.15865525393145702, 0.5800294857173489, -0.07010352451167995 } }, 1e-10)
    assert_close(nn.Sigmoid()(x), { { 0.11920292202211755, 0.43782349911420193, 0.8175744761936437 }, { 0.2689414213699951, 0.679178699175393, 0.14804719803168948 } }, 1e-12)
    assert_close(nn.Tanh()(x), { { -0.9640275800758169, -0.24491866240370913, 0.9051482536448664 }, { -0.7615941559557649, 0.6351489523872873, -0.9413755384972874 } }, 1e-12)
    assert_close(nn.Softmax(-1)(x), { { 0.025081480553822005, 0.1443339551132098, 0.8305845643329681 }, { 0.13837059054054027, 0.7962677706050864, 0.06536163885437347 } }, 1e-12)
    assert_close(nn.Softmax(1)(x), { { 0.2689414213699951, 0.2689414213699951, 0.9626731126558706 }, { 0.7310585786300049, 0.7310585786300049, 0.037326887344129464 } }, 1e-12)
    assert_close(nn.LogSoftmax(2)(x), { { -3.685625531713319, -1.935625531713319, -0.1856255317133191 }, { -1.977819754473424, -0.22781975447342392, -2.727819754473424 } }, 1e-12)
  end)

  it("Sequential runs its modules in order; ModuleList holds them", function()
    local s = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1)):to("float64")
    set(s:get(1).weight, { { 1, -1 }, { 2, 1 } }); set(s:get(1).bias, { 0, -1 })
    set(s:get(3).weight, { { 3, -2 } }); set(s:get(3).bias, { 0.5 })
    -- x = (1, 2): hidden (-1, 3) -> relu (0, 3) -> 3*0 - 2*3 + 0.5 = -5.5
    -- x = (3, 1): hidden (2, 6) -> 3*2 - 2*6 + 0.5 = -5.5; x = (2, -3): (5, 0) -> 15.5
    assert_close(s(wick.tensor({ { 1, 2 }, { 3, 1 }, { 2, -3 } }, F64)), { { -5.5 }, { -5.5 }, { 15.5 } })
    assert.are.equal(3, s:len())
    local l = nn.ModuleList({ nn.ReLU(), nn.Tanh() })
    l:append(nn.Linear(1, 1))
    assert.are.equal(3, l:len())
    assert.are.same({ "3.weight", "3.bias" }, names_of(l:named_parameters()))
    local seen = {}
    for m, i in l:iter() do seen[i] = getmetatable(m).__name end -- (Python's `for m in l`: the entry first)
    assert.are.same({ "ReLU", "Tanh", "Linear" }, seen)
  end)
end)

-- ======================================================================
describe("nn layers: backward (gradcheck in float64)", function()
  before_each(function() wick.manual_seed(11) end)

  it("Linear: input, weight and bias; 3-D input", function()
    local m = nn.Linear(3, 2):to("float64")
    module_gradcheck(m, seq({ 4, 3 }, 7, 17, 8, 10), { "weight", "bias" })
    module_gradcheck(nn.Linear(3, 2):to("float64"), seq({ 2, 2, 3 }, 5, 13, 6, 10), { "weight", "bias" })
    module_gradcheck(nn.Linear(3, 2, { bias = false }):to("float64"), seq({ 4, 3 }, 7, 17, 8, 10), { "weight" })
  end)

  it("Conv2d: input, weight and bias, with stride, padding and groups", function()
    local x = seq({ 2, 2, 4, 4 }, 7, 17, 8, 10)
    module_gradcheck(nn.Conv2d(2, 3, 3, { padding = 1, stride = 2 }):to("float64"), x, { "weight", "bias" })
    module_gradcheck(nn.Conv2d(2, 4, 2, { groups = 2 }):to("float64"), x, { "weight", "bias" })
  end)

  it("MaxPool2d and AvgPool2d", function()
    -- distinct values, so no max is tied
    local x = seq({ 1, 2, 4, 4 }, 37, 101, 50, 50)
    module_gradcheck(nn.MaxPool2d(2), x)
    module_gradcheck(nn.MaxPool2d(3, { stride = 1, padding = 1 }), x)
    module_gradcheck(nn.AvgPool2d(2), x)
    module_gradcheck(nn.AvgPool2d(3, { stride = 2, padding = 1 }), x)
  end)

  it("BatchNorm1d and BatchNorm2d in training mode and in eval mode", function()
    local bn1 = nn.BatchNorm1d(3):to("float64")
    set(bn1.weight, { 1.5, -0.5, 2 }); set(bn1.bias, { 0.1, 0.2, 0.3 })
    module_gradcheck(bn1, seq({ 4, 3 }, 7, 17, 8, 10), { "weight", "bias" })
    local bn2 = nn.BatchNorm2d(2):to("float64")
    module_gradcheck(bn2, seq({ 2, 2, 2, 3 }, 7, 17, 8, 10), { "weight", "bias" })
    bn2:eval()
    set(bn2.running_mean, { 0.3, -0.2 }); set(bn2.running_var, { 0.5, 2.0 })
    module_gradcheck(bn2, seq({ 2, 2, 2, 3 }, 7, 17, 8, 10), { "weight", "bias" })
  end)

  it("LayerNorm", function()
    local ln = nn.LayerNorm(4):to("float64")
    set(ln.weight, { 1, 2, -1, 0.5 }); set(ln.bias, { 0, 0.1, 0.2, 0.3 })
    module_gradcheck(ln, seq({ 3, 4 }, 7, 17, 8, 10), { "weight", "bias" })
  end)

  it("Embedding (weight; the indices are constant)", function()
    local e = nn.Embedding(5, 3):to("float64")
    local idx = I({ { 2, 5 }, { 2, 1 } })
    support.gradcheck(function(w)
      rawset(e, "weight", w)
      return e(idx)
    end, { e.weight:detach():clone() })
  end)

  it("activations", function()
    local x = seq({ 3, 4 }, 7, 17, 8.5, 5) -- no element at the kink of ReLU (x = 0)
    for _, m in ipairs({ nn.ReLU(), nn.GELU(), nn.Sigmoid(), nn.Tanh(), nn.Softmax(2), nn.Softmax(1), nn.LogSoftmax(-1) }) do
      module_gradcheck(m, x)
    end
  end)

  it("Dropout in training mode (same mask for every evaluation)", function()
    local d = nn.Dropout(0.4)
    support.gradcheck(function(x)
      wick.manual_seed(5)
      return d(x)
    end, { seq({ 4, 5 }, 7, 17, 8, 10) })
  end)

  it("Sequential of several layers, through every parameter", function()
    local s = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)):to("float64")
    local w1, b1, w2, b2 = s:get(1).weight:detach():clone(), s:get(1).bias:detach():clone(),
      s:get(3).weight:detach():clone(), s:get(3).bias:detach():clone()
    support.gradcheck(function(x, a, b, c, d)
      rawset(s:get(1), "weight", a); rawset(s:get(1), "bias", b)
      rawset(s:get(3), "weight", c); rawset(s:get(3), "bias", d)
      return s(x)
    end, { seq({ 2, 3 }, 7, 17, 8, 10), w1, b1, w2, b2 })
  end)

  it("the losses, with respect to their input", function()
    local logits = seq({ 4, 3 }, 7, 17, 8, 5)
    local t = I({ 1, 3, 2, 3 })
    local w = wick.tensor({ 0.2, 1.0, 3.0 }, F64)
    module_gradcheck(nn.CrossEntropyLoss(), logits, nil, t)
    module_gradcheck(nn.CrossEntropyLoss({ weight = w, ignore_index = 3, label_smoothing = 0.2 }), logits, nil, t)
    module_gradcheck(nn.CrossEntropyLoss({ reduction = "none", label_smoothing = 0.1 }), logits, nil, t)
    module_gradcheck(nn.NLLLoss({ weight = w }), logits, nil, t)
    local y = wick.tensor({ { 1, 0, 1 }, { 0, 1, 0.3 } }, F64)
    local p = wick.tensor({ { 0.9, 0.2, 0.6 }, { 0.05, 0.5, 0.9 } }, F64)
    module_gradcheck(nn.BCELoss(), p, nil, y)
    module_gradcheck(nn.BCEWithLogitsLoss({ pos_weight = wick.tensor({ 3, 0.5, 2 }, F64) }), seq({ 2, 3 }, 7, 17, 8, 4), nil, y)
    module_gradcheck(nn.MSELoss(), seq({ 2, 3 }, 7, 17, 8, 4), nil, y)
    module_gradcheck(nn.L1Loss({ reduction = "sum" }), seq({ 2, 3 }, 7, 17, 8, 4), nil, y)
  end)
end)

-- ======================================================================
describe("nn initialisation (PyTorch's defaults)", function()
  before_each(function() wick.manual_seed(3) end)

  local function within(t, bound)
    local lo, hi = t:min():item(), t:max():item()
    assert.is_true(lo >= -bound and hi <= bound, ("values in [%g, %g], bound %g"):format(lo, hi, bound))
    -- and they fill the range: not all tiny, both signs
    assert.is_true(hi > 0.5 * bound and lo < -0.5 * bound, ("values in [%g, %g] do not fill +-%g"):format(lo, hi, bound))
  end

  it("Linear: weight and bias uniform within +-1/sqrt(in_features)", function()
    local m = nn.Linear(50, 40)
    within(m.weight, 1 / math.sqrt(50))
    within(m.bias, 1 / math.sqrt(50))
    assert.is_true(m.weight.requires_grad and m.bias.requires_grad)
    assert.are.equal("float32", m.weight.dtype)
    -- uniform: the mean of |w| is about bound / 2
    local mean_abs = m.weight:abs():mean():item()
    assert_close(mean_abs, 0.5 / math.sqrt(50), 0.05)
  end)

  it("Conv2d: within +-1/sqrt(in_channels / groups * kh * kw)", function()
    local c = nn.Conv2d(6, 8, 3)
    within(c.weight, 1 / math.sqrt(6 * 9))
    within(c.bias, 1 / math.sqrt(6 * 9))
    local g = nn.Conv2d(6, 8, { 3, 2 }, { groups = 2 })
    assert.are.same({ 8, 3, 3, 2 }, shape_of(g.weight))
    within(g.weight, 1 / math.sqrt(3 * 6))
  end)

  it("BatchNorm: weight 1, bias 0, running_mean 0, running_var 1, num_batches_tracked 0", function()
    local bn = nn.BatchNorm2d(4)
    assert_close(bn.weight, { 1, 1, 1, 1 }); assert_close(bn.bias, { 0, 0, 0, 0 })
    assert_close(bn.running_mean, { 0, 0, 0, 0 }); assert_close(bn.running_var, { 1, 1, 1, 1 })
    assert.are.equal(0, bn.num_batches_tracked:item())
    assert.are.equal("int64", bn.num_batches_tracked.dtype)
    assert.is_false(bn.running_mean.requires_grad)
    assert.are.same({ "weight", "bias" }, names_of(bn:named_parameters()))
    assert.are.same({ "running_mean", "running_var", "num_batches_tracked" }, names_of(bn:named_buffers()))
    assert.are.equal(1e-5, bn.eps); assert.are.equal(0.1, bn.momentum)
  end)

  it("LayerNorm weight 1 and bias 0; Embedding N(0, 1)", function()
    local ln = nn.LayerNorm(3)
    assert_close(ln.weight, { 1, 1, 1 }); assert_close(ln.bias, { 0, 0, 0 })
    local e = nn.Embedding(100, 50)
    assert_close(e.weight:mean():item(), 0, 0.05)
    assert_close(e.weight:std():item(), 1, 0.05)
  end)

  it("the dtype and device options", function()
    local m = nn.Linear(3, 2, { dtype = "float64", device = "meta" })
    assert.are.equal("float64", m.weight.dtype)
    assert.are.equal("meta", m.bias.device.type)
    local bn = nn.BatchNorm1d(2, { device = "meta" })
    assert.are.equal("meta", bn.running_var.device.type)
    assert.are.equal("meta", bn.num_batches_tracked.device.type)
  end)
end)

-- ======================================================================
describe("BatchNorm train vs eval", function()
  -- x [3, 2]: channel 1 = (1, 3, 5): mean 3, biased var 8/3, unbiased var 4;
  --           channel 2 = (2, 6, 10): mean 6, biased var 32/3, unbiased var 16
  local x = wick.tensor({ { 1, 2 }, { 3, 6 }, { 5, 10 } }, F64)

  it("training normalises with the batch statistics (biased variance)", function()
    local bn = nn.BatchNorm1d(2):to("float64")
    local s1, s2 = math.sqrt(8 / 3 + 1e-5), math.sqrt(32 / 3 + 1e-5)
    assert_close(bn(x), { { -2 / s1, -4 / s2 }, { 0, 0 }, { 2 / s1, 4 / s2 } }, 1e-12)
  end)

  it("training updates the running statistics with momentum and the unbiased variance", function()
    local bn = nn.BatchNorm1d(2):to("float64")
    bn(x)
    assert_close(bn.running_mean, { 0.3, 0.6 }, 1e-12)           -- 0.9 * 0 + 0.1 * mean
    assert_close(bn.running_var, { 0.9 + 0.4, 0.9 + 1.6 }, 1e-12) -- 0.9 * 1 + 0.1 * unbiased var
    assert.are.equal(1, bn.num_batches_tracked:item())
    bn(x)
    assert_close(bn.running_mean, { 0.9 * 0.3 + 0.3, 0.9 * 0.6 + 0.6 }, 1e-12)
    assert_close(bn.running_var, { 0.9 * 1.3 + 0.4, 0.9 * 2.5 + 1.6 }, 1e-12)
    assert.are.equal(2, bn.num_batches_tracked:item())
    local fast = nn.BatchNorm1d(2, { momentum = 0.5 }):to("float64")
    fast(x)
    assert_close(fast.running_mean, { 1.5, 3 }, 1e-12)
    assert_close(fast.running_var, { 2.5, 8.5 }, 1e-12)
  end)

  it("eval normalises with the running statistics and leaves them alone", function()
    local bn = nn.BatchNorm1d(2):to("float64")
    set(bn.weight, { 2, 3 }); set(bn.bias, { 1, -1 })
    bn(x) -- running_mean (0.3, 0.6), running_var (1.3, 2.5)
    bn:eval()
    assert.is_false(bn.training)
    local y = bn(x)
    local r1, r2 = math.sqrt(1.3 + 1e-5), math.sqrt(2.5 + 1e-5)
    local expected = {}
    for i, row in ipairs({ { 1, 2 }, { 3, 6 }, { 5, 10 } }) do
      expected[i] = { (row[1] - 0.3) / r1 * 2 + 1, (row[2] - 0.6) / r2 * 3 - 1 }
    end
    assert_close(y, expected, 1e-12)
    assert_close(bn.running_mean, { 0.3, 0.6 }, 1e-12)
    assert_close(bn.running_var, { 1.3, 2.5 }, 1e-12)
    assert.are.equal(1, bn.num_batches_tracked:item())
    -- a batch of one works in eval mode (not in training mode: one value per channel)
    assert.are.same({ 1, 2 }, shape_of(bn(x[1]:view(1, 2))))
    bn:train()
    assert.has_error(function() bn(x[1]:view(1, 2)) end)
  end)

  it("raises on input of the wrong rank", function()
    assert_error_has(function() nn.BatchNorm2d(2)(wick.zeros(3, 2)) end, "BatchNorm2d", "4-D")
    assert_error_has(function() nn.BatchNorm1d(2)(wick.zeros(3, 2, 2, 2)) end, "BatchNorm1d")
  end)
end)

-- ======================================================================
describe("Dropout", function()
  it("eval mode is the identity", function()
    local d = nn.Dropout(0.5)
    d:eval()
    local x = wick.randn(100)
    local y = d(x)
    assert.is_true(y:equal(x))
  end)

  it("training zeroes about p of the elements and scales the rest by 1/(1-p)", function()
    wick.manual_seed(1)
    local d = nn.Dropout(0.3)
    assert.is_true(d.training)
    local n = 20000
    local y = d(wick.ones(n))
    local zeros = y:eq(0):to("float64"):sum():item()
    assert_close(zeros / n, 0.3, 0.02)
    local kept = y:ne(0)
    assert_close(y:sum():item(), (n - zeros) / 0.7, 1e-4)
    -- every kept value is exactly 1/(1-p)
    local kept_values = y:max():item()
    assert_close(kept_values, 1 / 0.7, 1e-6)
    assert_close(wick.where(kept, y, 1 / 0.7):min():item(), 1 / 0.7, 1e-6)
    -- the mean is preserved in expectation
    assert_close(y:mean():item(), 1, 0.03)
  end)

  it("masks differ between calls and repeat under manual_seed", function()
    local d = nn.Dropout(0.5)
    wick.manual_seed(9)
    local a = d(wick.ones(64))
    local b = d(wick.ones(64))
    wick.manual_seed(9)
    local c = d(wick.ones(64))
    assert.is_false(a:equal(b))
    assert.is_true(a:equal(c))
  end)

  it("p = 0 keeps everything and p = 1 zeroes everything; a bad p raises", function()
    local x = wick.randn(50)
    assert.is_true(nn.Dropout(0)(x):equal(x))
    assert.are.equal(0, nn.Dropout(1)(x):abs():sum():item())
    assert_error_has(function() nn.Dropout(1.5)(x) end, "between 0 and 1")
  end)
end)

-- ======================================================================
describe("losses against PyTorch", function()
  -- logits [4, 3], targets 1-based {1, 3, 2, 3} (PyTorch: [0, 2, 1, 2]), class weight
  local logits = wick.tensor({ { 1.0, -0.5, 2.0 }, { 0.3, 0.8, -1.2 }, { -2.0, 1.5, 0.5 }, { 0.0, 0.25, -0.75 } }, F64)
  local t = I({ 1, 3, 2, 3 })
  local w = wick.tensor({ 0.2, 1.0, 3.0 }, F64)
  local TOL = 1e-10

  local function ce(opts, target) return nn.CrossEntropyLoss(opts)(logits, target or t) end

  it("CrossEntropyLoss: mean, sum, none", function()
    assert_close(ce(), 1.506379028520032, TOL)
    assert_close(ce({ reduction = "sum" }), 6.025516114080128, TOL)
    assert_close(ce({ reduction = "none" }), { 1.3715390318526828, 2.554956919641991, 0.3350975955161672, 1.763922567069287 }, TOL)
    assert.are.equal(0, ce():dim())
  end)

  it("CrossEntropyLoss with weight (the mean divides by the summed weights)", function()
    assert_close(ce({ weight = w }), 1.8841727586139636, TOL)
    assert_close(ce({ weight = w, reduction = "sum" }), 13.566043862020539, TOL)
    assert_close(ce({ weight = w, reduction = "none" }), { 0.2743078063705366, 7.664870758925972, 0.3350975955161672, 5.291767701207862 }, TOL)
  end)

  it("CrossEntropyLoss with ignore_index (a 1-based class, or -100)", function()
    -- wick's ignore_index 3 is PyTorch's ignore_index 2
    assert_close(ce({ ignore_index = 3 }), 0.853318313684425, TOL)
    assert_close(ce({ ignore_index = 3, reduction = "none" }), { 1.3715390318526828, 0, 0.3350975955161672, 0 }, TOL)
    assert_close(ce({ ignore_index = -100 }, I({ 1, -100, 2, 3 })), 1.1568530648127124, TOL)
  end)

  it("CrossEntropyLoss with label_smoothing", function()
    assert_close(ce({ label_smoothing = 0.1 }), 1.5042956951866988, TOL)
    assert_close(ce({ label_smoothing = 0.1, reduction = "sum" }), 6.017182780746795, TOL)
    assert_close(ce({ label_smoothing = 0.1, reduction = "none" }), { 1.3882056985193496, 2.438290252975324, 0.48509759551616716, 1.7055892337359537 }, TOL)
    assert_close(ce({ weight = w, label_smoothing = 0.3 }), 1.653048259906671, TOL)
  end)

  it("CrossEntropyLoss with weight, ignore_index and label_smoothing together", function()
    local opts = { weight = w, ignore_index = 3, label_smoothing = 0.2 }
    assert_close(ce(opts), 0.9267077031994231, TOL)
    opts.reduction = "sum"
    assert_close(ce(opts), 1.1120492438393077, TOL)
    opts.reduction = "none"
    assert_close(ce(opts), { 0.5034771740151804, 0, 0.6085720698241273, 0 }, TOL)
  end)

  it("CrossEntropyLoss with class probabilities as the target", function()
    local probs = wick.tensor({ { 0.7, 0.2, 0.1 }, { 0.0, 0.5, 0.5 }, { 0.1, 0.1, 0.8 }, { 1.0, 0.0, 0.0 } }, F64)
    assert_close(nn.CrossEntropyLoss()(logits, probs), 1.406379028520032, TOL)
    assert_close(nn.CrossEntropyLoss({ weight = w, label_smoothing = 0.1 })(logits, probs), 2.1140854839276044, TOL)
  end)

  it("CrossEntropyLoss over extra dims [N, C, d]", function()
    local lk = wick.tensor({ { { 1.0, 0.3 }, { -0.5, 0.8 }, { 2.0, -1.2 } }, { { -2.0, 0.0 }, { 1.5, 0.25 }, { 0.5, -0.75 } } }, F64)
    local tk = I({ { 1, 3 }, { 2, 3 } })
    assert_close(nn.CrossEntropyLoss()(lk, tk), 1.506379028520032, TOL)
    assert_close(nn.CrossEntropyLoss({ weight = w, label_smoothing = 0.1 })(lk, tk), 1.807131259044866, TOL)
  end)

  it("CrossEntropyLoss rejects bad targets and options", function()
    assert.has_error(function() ce({}, I({ 1, 4, 2, 3 })) end)  -- class 4 of 3
    assert.has_error(function() ce({}, I({ 0, 1, 2, 3 })) end)  -- classes are 1-based
    assert_error_has(function() ce({ reduction = "avg" }) end, "avg")
  end)

  it("NLLLoss", function()
    local lp = logits:log_softmax(2)
    assert_close(nn.NLLLoss()(lp, t), 1.506379028520032, TOL)
    assert_close(nn.NLLLoss({ weight = w })(lp, t), 1.8841727586139636, TOL)
    assert_close(nn.NLLLoss({ weight = w, reduction = "sum" })(lp, t), 13.566043862020539, TOL)
    assert_close(nn.NLLLoss({ weight = w, ignore_index = 1 })(lp, t), 1.8988194365214288, TOL)
    assert_close(nn.NLLLoss({ reduction = "none" })(lp, t), { 1.3715390318526828, 2.554956919641991, 0.3350975955161672, 1.763922567069287 }, TOL)
    assert_error_has(function() nn.NLLLoss()(lp, wick.tensor({ 1, 3, 2, 3 })) end, "int64")
  end)

  it("MSELoss and L1Loss", function()
    local a = wick.tensor({ { 0.5, -1.0, 2.0 }, { 3.0, 0.0, -0.25 } }, F64)
    local b = wick.tensor({ { 1.0, 1.0, 1.5 }, { -1.0, 0.5, 0.0 } }, F64)
    assert_close(nn.MSELoss()(a, b), 3.46875, TOL)
    assert_close(nn.MSELoss({ reduction = "sum" })(a, b), 20.8125, TOL)
    assert_close(nn.MSELoss({ reduction = "none" })(a, b), { { 0.25, 4.0, 0.25 }, { 16.0, 0.25, 0.0625 } }, TOL)
    assert_close(nn.L1Loss()(a, b), 1.2916666666666667, TOL)
    assert_close(nn.L1Loss({ reduction = "sum" })(a, b), 7.75, TOL)
    assert_close(nn.L1Loss({ reduction = "none" })(a, b), { { 0.5, 2.0, 0.5 }, { 4.0, 0.5, 0.25 } }, TOL)
  end)

  local y = wick.tensor({ { 1.0, 0.0, 1.0 }, { 0.0, 1.0, 0.3 } }, F64)
  local bw = wick.tensor({ 1.0, 2.0, 0.5 }, F64)

  it("BCELoss, with weight, and log clamped at -100", function()
    local p = wick.tensor({ { 0.9, 0.2, 0.6 }, { 0.05, 0.5, 0.99 } }, F64)
    assert_close(nn.BCELoss()(p, y), 0.8017340661055393, TOL)
    assert_close(nn.BCELoss({ reduction = "sum" })(p, y), 4.810404396633236, TOL)
    assert_close(nn.BCELoss({ reduction = "none" })(p, y), { { 0.10536051565782628, 0.2231435513142097, 0.5108256237659907 },
      { 0.05129329438755058, 0.6931471805599453, 3.226634230947714 } }, TOL)
    assert_close(nn.BCELoss({ weight = bw })(p, y), 0.6429942001917565, TOL)
    local p01 = wick.tensor({ 0, 1, 0, 1 }, F64)
    assert_close(nn.BCELoss({ reduction = "none" })(p01, wick.tensor({ 1, 0, 0, 1 }, F64)), { 100, 100, 0, 0 }, TOL)
  end)

  it("BCEWithLogitsLoss, with pos_weight and weight, stable for large logits", function()
    local x = wick.tensor({ { 2.0, -1.0, 0.5 }, { -3.0, 0.0, 4.0 } }, F64)
    local pw = wick.tensor({ 3.0, 0.5, 2.0 }, F64)
    assert_close(nn.BCEWithLogitsLoss()(x, y), 0.7456918571321333, TOL)
    assert_close(nn.BCEWithLogitsLoss({ reduction = "none" })(x, y), { { 0.1269280110429726, 0.31326168751822286, 0.4740769841801067 },
      { 0.048587351573741965, 0.6931471805599453, 2.8181499279178097 } }, TOL)
    assert_close(nn.BCEWithLogitsLoss({ pos_weight = pw })(x, y), 0.8101592561923701, TOL)
    assert_close(nn.BCEWithLogitsLoss({ pos_weight = pw, weight = bw, reduction = "sum" })(x, y), 3.634916377625734, TOL)
    local big = wick.tensor({ 100, -100, 50 }, F64)
    assert_close(nn.BCEWithLogitsLoss({ reduction = "none" })(big, wick.tensor({ 0, 1, 1 }, F64)), { 100, 100, 0 }, TOL)
  end)

  it("losses work in float32 too", function()
    local l = nn.CrossEntropyLoss({ weight = w:to("float32"), label_smoothing = 0.1 })(logits:to("float32"), t)
    assert.are.equal("float32", l.dtype)
    local ref = nn.CrossEntropyLoss({ weight = w, label_smoothing = 0.1 })(logits, t):item()
    assert_close(l:item(), ref, 1e-5)
  end)
end)

-- ======================================================================
describe("nn.Module", function()
  -- fields assigned in an order that is neither alphabetical nor any hash order
  local Net = nn.Module:extend("Net")
  function Net:init(hidden)
    self.zeta = nn.Linear(2, hidden)
    self.alpha = nn.Linear(hidden, hidden)
    self.scale = wick.ones(hidden):requires_grad_()       -- a bare parameter tensor
    self.layers = { nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 3) }
    self.mid = nn.BatchNorm1d(3)
    self.beta = nn.Dropout(0.5)
    self.hidden = hidden                                  -- plain values are not state
    self:register_buffer("counter", wick.zeros(1))
  end
  function Net:forward(x)
    x = self.alpha(self.zeta(x):relu()) * self.scale
    for _, l in ipairs(self.layers) do x = l(x) end
    return self.beta(self.mid(x))
  end

  -- PyTorch's order: a module's own parameters (then buffers) before its children's
  local PARAMS = { "scale", "zeta.weight", "zeta.bias", "alpha.weight", "alpha.bias",
    "layers.1.weight", "layers.1.bias", "layers.3.weight", "layers.3.bias", "mid.weight", "mid.bias" }
  local BUFFERS = { "counter", "mid.running_mean", "mid.running_var", "mid.num_batches_tracked" }

  before_each(function() wick.manual_seed(21) end)

  it("a custom Net: Net(args) calls init; model(x) calls forward", function()
    local net = Net(4)
    assert.are.equal(4, net.hidden)
    assert.are.equal("Net", getmetatable(net).__name)
    local out = net(wick.randn(5, 2))
    assert.are.same({ 5, 3 }, shape_of(out))
    assert.is_truthy(out.grad_fn)
    local Bare = nn.Module:extend("Bare")
    assert_error_has(function() Bare()(wick.zeros(1)) end, "forward")
  end)

  it("parameters() follow PyTorch's order: own ones first, each in the order of first assignment, never pairs order", function()
    local net = Net(4)
    local names = names_of(net:named_parameters())
    assert.are.same(PARAMS, names)
    assert.are_not.same(sorted(names), names)
    -- (pairs() order over these fields changes from run to run, since LuaJIT
    -- seeds its string hashes at random: an order taken from pairs would fail
    -- the fixed list above in nearly every run.)
    -- the tensors of parameters() are those of named_parameters(), in order
    local ps = net:parameters()
    assert.are.equal(#PARAMS, #ps)
    assert.is_true(rawequal(ps[2], net.zeta.weight))
    assert.is_true(rawequal(ps[1], net.scale))
    assert.is_true(rawequal(ps[6], net.layers[1].weight))
    assert.is_true(rawequal(ps[11], net.mid.bias))
    -- every model built the same way has the same order
    for _ = 1, 5 do assert.are.same(PARAMS, names_of(Net(3):named_parameters())) end
  end)

  it("reassigning a field keeps its place; a field set to nil disappears", function()
    local net = Net(4)
    net.zeta = nn.Linear(2, 4, { bias = false })
    local names = names_of(net:named_parameters())
    assert.are.same({ "scale", "zeta.weight", "alpha.weight" }, { names[1], names[2], names[3] })
    net.alpha = nil
    names = names_of(net:named_parameters())
    assert.are.equal("layers.1.weight", names[3])
  end)

  it("Sequential names children 1, 2, 3 ...", function()
    local s = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert.are.same({ "1.weight", "1.bias", "3.weight", "3.bias" }, names_of(s:named_parameters()))
    local sd = s:state_dict()
    assert.is_truthy(sd["1.weight"]); assert.is_truthy(sd["3.bias"])
    local nested = nn.Sequential(nn.Sequential(nn.Linear(1, 1)), nn.Linear(1, 2))
    assert.are.same({ "1.1.weight", "1.1.bias", "2.weight", "2.bias" }, names_of(nested:named_parameters()))
  end)

  it("buffers, children and modules", function()
    local net = Net(4)
    assert.are.same(BUFFERS, names_of(net:named_buffers()))
    local bufs = net:buffers()
    assert.is_true(rawequal(bufs[2], net.mid.running_mean))
    local child_names = names_of(net:named_children())
    assert.are.same({ "zeta", "alpha", "layers.1", "layers.2", "layers.3", "mid", "beta" }, child_names)
    local children = net:children()
    assert.is_true(rawequal(children[1], net.zeta))
    assert.is_true(rawequal(children[4], net.layers[2]))
    local mods = net:modules()
    assert.is_true(rawequal(mods[1], net))
    assert.are.equal(8, #mods)
    -- a module's own parameters are not found twice when it is shared
    local Shared = nn.Module:extend("Shared")
    function Shared:init() self.a = nn.Linear(2, 2); self.b = self.a end
    assert.are.equal(2, #Shared():parameters())
  end)

  it("train() and eval() reach every module, tables of modules included", function()
    local net = Net(4)
    for _, m in ipairs(net:modules()) do assert.is_true(m.training) end
    assert.is_true(rawequal(net:eval(), net))
    for _, m in ipairs(net:modules()) do assert.is_false(m.training) end
    assert.is_false(net.layers[3].training)
    assert.is_false(net.beta.training)
    -- eval: dropout is the identity and batch norm uses running stats: repeatable
    local x = wick.randn(6, 2)
    assert.is_true(net(x):equal(net(x)))
    net:train()
    for _, m in ipairs(net:modules()) do assert.is_true(m.training) end
    net:train(false)
    assert.is_false(net.mid.training)
  end)

  it("zero_grad clears the gradients of every parameter", function()
    local net = Net(4)
    net(wick.randn(6, 2)):sum():backward()
    for name, p in net:named_parameters() do assert.is_truthy(p.grad, name) end
    net:zero_grad()
    for name, p in net:named_parameters() do assert.is_nil(p.grad, name) end
  end)

  it("state_dict: parameters and buffers by dotted name, detached, sharing storage", function()
    local net = Net(4)
    local sd = net:state_dict()
    local keys = {}
    for k in pairs(sd) do keys[#keys + 1] = k end
    local expected = {}
    for _, n in ipairs(PARAMS) do expected[#expected + 1] = n end
    for _, n in ipairs(BUFFERS) do expected[#expected + 1] = n end
    assert.are.same(sorted(expected), sorted(keys))
    assert.is_false(sd["zeta.weight"].requires_grad)
    assert.is_true(sd["zeta.weight"]:equal(net.zeta.weight))
    wick.no_grad(function() net.zeta.weight:fill_(7) end)
    assert.are.equal(7, sd["zeta.weight"][1][1]:item())
  end)

  it("load_state_dict copies values into the existing tensors", function()
    local a, b = Net(4), Net(4)
    assert.is_false(a.zeta.weight:equal(b.zeta.weight))
    local w_before = b.zeta.weight
    local r = b:load_state_dict(a:state_dict())
    assert.are.same({ missing_keys = {}, unexpected_keys = {} }, r)
    assert.is_true(rawequal(w_before, b.zeta.weight))
    for name, p in b:named_parameters() do
      assert.is_true(p:equal(a:state_dict()[name]), name)
      assert.is_true(p.requires_grad, name)
    end
    local x = wick.randn(3, 2)
    a:eval(); b:eval()
    assert.is_true(a(x):equal(b(x)))
  end)

  it("load_state_dict keeps each tensor's device and dtype", function()
    local a = nn.Linear(2, 2)
    local b = nn.Linear(2, 2):to("float64")
    b:load_state_dict(a:state_dict())
    assert.are.equal("float64", b.weight.dtype)
    assert_close(b.weight, a.weight:to("float64"):totable(), 1e-7)
    local m = nn.Linear(2, 2):to("meta")
    m:load_state_dict(a:state_dict())
    assert.are.equal("meta", m.weight.device.type)
  end)

  it("strict load_state_dict raises naming every missing and unexpected key", function()
    local net = Net(4)
    local sd = net:state_dict()
    sd["zeta.bias"] = nil
    sd["mid.running_var"] = nil
    sd["extra.weight"] = wick.zeros(1)
    sd["zeta.gamma"] = wick.zeros(1)
    local err = assert_error_has(function() net:load_state_dict(sd) end,
      "Missing key(s)", "zeta.bias", "mid.running_var", "Unexpected key(s)", "extra.weight", "zeta.gamma")
    assert.is_truthy(err:find("nn_spec.lua", 1, true), err)
    assert.has_error(function() net:load_state_dict(sd, { strict = true }) end)
  end)

  it("strict = false returns {missing_keys, unexpected_keys} and loads the rest", function()
    local src, dst = Net(4), Net(4)
    local sd = src:state_dict()
    sd["zeta.bias"] = nil
    sd["extra.weight"] = wick.zeros(1)
    local bias_before = dst.zeta.bias:clone()
    local r = dst:load_state_dict(sd, { strict = false })
    assert.are.same({ "zeta.bias" }, r.missing_keys)
    assert.are.same({ "extra.weight" }, r.unexpected_keys)
    assert.is_true(dst.zeta.weight:equal(src.zeta.weight))
    assert.is_true(dst.zeta.bias:equal(bias_before))
  end)

  it("a shape mismatch raises naming the key and both shapes, even with strict = false", function()
    local net = Net(4)
    local sd = net:state_dict()
    sd["alpha.weight"] = wick.zeros(4, 5)
    local before = net.zeta.weight:clone()
    sd["zeta.weight"] = wick.full({ 4, 2 }, 3)
    for _, opts in ipairs({ {}, { strict = false } }) do
      assert_error_has(function() net:load_state_dict(sd, opts) end, "alpha.weight", "[4, 5]", "[4, 4]")
    end
    -- nothing was copied
    assert.is_true(net.zeta.weight:equal(before))
  end)

  it("hints at the 'module.' prefix; utils.strip_prefix removes it", function()
    local net = nn.Sequential(nn.Linear(2, 2))
    local sd = {}
    for k, v in pairs(net:state_dict()) do sd["module." .. k] = v end
    assert_error_has(function() net:load_state_dict(sd) end, "module.", "strip_prefix")
    local stripped = nn.utils.strip_prefix(sd, "module.")
    assert.is_truthy(stripped["1.weight"])
    assert.is_nil(stripped["module.1.weight"])
    local r = net:load_state_dict(stripped)
    assert.are.same({}, r.missing_keys)
    -- keys without the prefix pass unchanged
    assert.are.same({ a = 1, ["x.module.b"] = 2, b = 3 }, nn.utils.strip_prefix({ a = 1, ["x.module.b"] = 2, ["module.b"] = 3 }, "module."))
  end)

  it("utils.from_pytorch_names shifts PyTorch's 0-based child indices", function()
    local r = nn.utils.from_pytorch_names({ ["0.weight"] = 1, ["layers.2.bias"] = 2, ["fc1.weight"] = 3,
      ["layers.10.weight"] = 4, ["layer1.0.conv1.weight"] = 5, ["bn.num_batches_tracked"] = 6 })
    assert.are.same({ ["1.weight"] = 1, ["layers.3.bias"] = 2, ["fc1.weight"] = 3, ["layers.11.weight"] = 4,
      ["layer1.1.conv1.weight"] = 5, ["bn.num_batches_tracked"] = 6 }, r)
    -- a PyTorch Sequential's state dict loads into wick's
    local s = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    local torch_sd = { ["0.weight"] = wick.ones(3, 2), ["0.bias"] = wick.zeros(3), ["2.weight"] = wick.ones(1, 3), ["2.bias"] = wick.zeros(1) }
    s:load_state_dict(nn.utils.from_pytorch_names(torch_sd))
    assert_close(s(wick.tensor({ { 1, 2 } })), { { 9 } })
    assert.are.same({ ["0.weight"] = 1, ["layers.2.bias"] = 2 }, nn.utils.to_pytorch_names({ ["1.weight"] = 1, ["layers.3.bias"] = 2 }))
  end)

  it("model:to(dtype) returns the model, keeps parameter objects and converts gradients", function()
    local net = Net(4)
    net(wick.randn(6, 2)):sum():backward()
    local ps = net:parameters()
    local w, g = ps[2], ps[2].grad -- zeta.weight (scale is first, as PyTorch orders it)
    local gvals = g:to("float64"):totable()
    assert.is_true(rawequal(net:to("float64"), net))
    local after = net:parameters()
    for i = 1, #ps do
      assert.is_true(rawequal(ps[i], after[i]))
      assert.are.equal("float64", ps[i].dtype)
      assert.are.equal("float64", ps[i].grad.dtype)
      assert.is_true(ps[i].requires_grad)
    end
    assert.is_true(rawequal(w, net.zeta.weight))
    assert_close(w.grad, gvals, 1e-7)
    assert.are.equal("float64", net.mid.running_mean.dtype)
    assert.are.equal("int64", net.mid.num_batches_tracked.dtype) -- a dtype converts floating-point tensors only
    -- the model still trains: a new backward accumulates into float64 grads
    net:zero_grad()
    net(wick.randn(6, 2, F64)):sum():backward()
    assert.are.equal("float64", w.grad.dtype)
    -- nothing to change: the same storage
    assert.is_true(rawequal(net:to("float64"), net))
    assert.is_true(rawequal(net:to({ dtype = "float64", device = "cpu" }), net))
  end)

  it("an optimizer built before model:to keeps working", function()
    local m = nn.Linear(2, 1)
    local opt = wick.optim.SGD(m:parameters(), { lr = 0.1 })
    m:to("float64")
    local x = wick.tensor({ { 1, 2 } }, F64)
    local before = m.weight:clone()
    opt:zero_grad()
    m(x):sum():backward()
    opt:step()
    assert_close(m.weight, { { before[1][1]:item() - 0.1, before[1][2]:item() - 0.2 } }, 1e-12)
  end)

  it("tostring(model) shows the tree", function()
    local s = tostring(nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Sequential(nn.Dropout(0.25))))
    assert.are.equal("Sequential(\n  (1): Linear(in_features=2, out_features=3, bias=True)\n  (2): ReLU()\n"
      .. "  (3): Sequential(\n    (1): Dropout(p=0.25, inplace=False)\n  )\n)", s)
    local t = tostring(Net(4))
    support.assert_contains(t, "Net(")
    support.assert_contains(t, "(zeta): Linear(in_features=2, out_features=4, bias=True)")
    support.assert_contains(t, "(layers.3): Linear(in_features=4, out_features=3, bias=True)")
    support.assert_contains(t, "(mid): BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)")
    assert.is_true(t:find("zeta", 1, true) < t:find("alpha", 1, true))
  end)

  it("wick.save(model) raises and points to state_dict", function()
    local path = os.tmpname()
    assert_error_has(function() wick.save(Net(2), path) end, "state_dict")
    assert_error_has(function() wick.save({ model = nn.Linear(1, 1) }, path) end, "state_dict")
    os.remove(path)
  end)
end)

-- ======================================================================
describe("models on the meta device", function()
  local function model()
    wick.manual_seed(2)
    return nn.Sequential(nn.Conv2d(1, 4, 3, { padding = 1 }), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
      nn.Flatten(), nn.Dropout(0.2), nn.Linear(4 * 4 * 4, 10))
  end

  it("model:to('meta'), forward, loss and backward give the right shapes with no data", function()
    local m = model()
    assert.is_true(rawequal(m:to("meta"), m))
    for name, p in m:named_parameters() do
      assert.are.equal("meta", p.device.type, name)
      assert.is_true(p.requires_grad, name)
    end
    for name, b in m:named_buffers() do assert.are.equal("meta", b.device.type, name) end
    local x = wick.randn(8, 1, 8, 8, { device = "meta" })
    local y = wick.zeros(8, { dtype = "int64", device = "meta" })
    local out = m(x)
    assert.are.same({ 8, 10 }, shape_of(out))
    assert.are.equal("meta", out.device.type)
    local loss = nn.CrossEntropyLoss({ label_smoothing = 0.1 })(out, y)
    assert.are.same({}, shape_of(loss))
    assert.are.equal("meta", loss.device.type)
    loss:backward()
    for name, p in m:named_parameters() do
      assert.is_truthy(p.grad, name)
      assert.are.same(shape_of(p), shape_of(p.grad), name)
      assert.are.equal("meta", p.grad.device.type, name)
    end
    -- and an optimizer step
    local opt = wick.optim.Adam(m:parameters(), { lr = 1e-3 })
    opt:step()
    assert.are.equal("meta", m:parameters()[1].device.type)
  end)

  it("model:to{device =, dtype =} moves parameters, buffers and gradients together", function()
    local m = model()
    m(wick.randn(2, 1, 8, 8)):sum():backward()
    local ps = m:parameters()
    assert.is_true(rawequal(m:to({ device = wick.device("meta"), dtype = "float64" }), m))
    for i, p in ipairs(m:parameters()) do
      assert.is_true(rawequal(ps[i], p))
      assert.are.equal("meta", p.device.type)
      assert.are.equal("float64", p.dtype)
      assert.are.equal("meta", p.grad.device.type)
      assert.are.equal("float64", p.grad.dtype)
    end
    assert.are.equal("meta", m:get(2).running_mean.device.type)
    assert.are.equal("int64", m:get(2).num_batches_tracked.dtype)
  end)

  it("a model on meta and a batch on cpu raise the same-device error", function()
    local m = model():to("meta")
    local x = wick.randn(2, 1, 8, 8)
    local err = assert_error_has(function() m(x) end, "Expected all tensors to be on the same device")
    support.assert_contains(err, "meta")
    support.assert_contains(err, "cpu")
    local lin = nn.Linear(3, 2):to("meta")
    err = assert_error_has(function() lin(wick.randn(4, 3)) end, "Expected all tensors to be on the same device", "meta", "cpu")
    support.assert_contains(err, "nn_spec.lua")
    -- a loss whose target is on another device
    local out = wick.randn(4, 3, { device = "meta" })
    assert_error_has(function() nn.CrossEntropyLoss()(out, I({ 1, 2, 3, 1 })) end, "Expected all tensors to be on the same device", "meta", "cpu")
    assert_error_has(function() nn.MSELoss()(out, wick.zeros(4, 3)) end, "Expected all tensors to be on the same device", "meta", "cpu")
    -- a meta model has no values to move back: like PyTorch, copying out of meta raises
    assert.has_error(function() m:to("cpu") end)
  end)
end)

describe("cross entropy targets", function()
  local wick = require("wick")
  local nn = wick.nn
  it("ignores targets of -100 by default, like PyTorch", function()
    local logits = wick.tensor({ { 1, 2, 3 }, { 1, 0, 0 }, { 0, 0, 5 } }, { dtype = "float64" })
    local all = nn.CrossEntropyLoss()(logits:narrow(1, 1, 2), wick.tensor({ 3, 1 }, { dtype = "int64" }))
    local ignored = nn.CrossEntropyLoss()(logits, wick.tensor({ 3, 1, -100 }, { dtype = "int64" }))
    assert.is_true(math.abs(all:item() - ignored:item()) < 1e-12)
  end)
  it("explains float targets that are not class probabilities", function()
    local ok, err = pcall(function() return nn.CrossEntropyLoss()(wick.randn(4, 3), wick.tensor({ 1, 2, 3, 1 })) end)
    assert.is_false(ok)
    assert.is_truthy(err:find("class indices (int64, 1-based", 1, true))
  end)
end)

describe("Module extras PyTorch scripts use", function()
  it("register_buffer(name, t, false): moved by to(), in buffers(), not in state_dict()", function()
    local M = nn.Module:extend("WithMask")
    function M:init()
      self.proj = nn.Linear(2, 2)
      self:register_buffer("mask", wick.ones(2, 2), false)
      self:register_buffer("running", wick.zeros(2), { persistent = true })
    end
    local m = M()
    local keys = {}
    for k in pairs(m:state_dict()) do keys[#keys + 1] = k end
    table.sort(keys)
    assert.are.same({ "proj.bias", "proj.weight", "running" }, keys)
    assert.are.equal(2, #m:buffers())
    m:to("float64")
    assert.are.equal("float64", m.mask.dtype)
    -- loading a state dict without the non-persistent buffer is strict-clean
    local r = M():load_state_dict(m:state_dict(), { strict = true })
    assert.are.same({}, r.missing_keys)
    assert_error_has(function() m:register_buffer("x", wick.ones(1), "no") end, "option 'persistent'")
  end)

  it("requires_grad_(false) freezes every parameter, requires_grad_() unfreezes them, buffers stay", function()
    local bn = nn.BatchNorm1d(3)
    assert.is_true(rawequal(bn, bn:requires_grad_(false)))
    assert.is_false(bn.weight.requires_grad)
    assert.are.equal(2, #bn:parameters()) -- frozen parameters are still parameters, as PyTorch's
    assert.are.equal(3, #bn:buffers()) -- running_mean, running_var, num_batches_tracked
    bn:requires_grad_()
    assert.are.equal(2, #bn:parameters())
    assert.is_false(bn.running_mean.requires_grad)
  end)

  it("tied weights stay one tensor through to(), listed once by parameters()", function()
    local M = nn.Module:extend("Tied")
    function M:init()
      self.emb = nn.Embedding(5, 3)
      self.head = nn.Linear(3, 5, false)
      self.emb.weight = self.head.weight
    end
    local m = M():to("float64")
    assert.is_true(rawequal(m.emb.weight, m.head.weight))
    assert.are.equal("float64", m.head.weight.dtype)
    assert.are.equal(1, #m:parameters())
    local n = 0
    for _ in pairs(m:state_dict()) do n = n + 1 end
    assert.are.equal(2, n)
  end)

  it("F.dropout takes p, training, inplace by position or in the options table", function()
    local F = nn.functional
    local x = wick.ones(4, F64)
    assert.is_true(F.dropout(x, 0.5, false):equal(x))
    assert.is_true(F.dropout(x, { p = 0.5, training = false }):equal(x))
    assert.are.equal(0, F.dropout(x, { p = 1 }):sum():item())
    assert_error_has(function() F.dropout(x, { prob = 1 }) end, "dropout: unknown option 'prob'")
    assert_error_has(function() F.dropout(x, "0.5") end, "option 'p'")
  end)
end)

describe("recurrent layers against PyTorch (float64, weights from a formula)", function()
  local REF = dofile("spec/fixtures/pt_rnn_expected.lua")
  local function build(m, shape)
    local j = 0
    wick.no_grad(function()
      for _, p in m:named_parameters() do
        local vals = {}
        for i = 0, p:numel() - 1 do vals[#vals + 1] = 0.5 * math.sin(0.37 * i + j) end
        p:copy_(wick.tensor(vals, F64):view(p.shape))
        j = j + 1
      end
    end)
    local n = 1
    for _, d in ipairs(shape) do n = n * d end
    local vals = {}
    for i = 0, n - 1 do vals[#vals + 1] = math.cos(0.23 * i) end
    return wick.tensor(vals, F64):view(shape):requires_grad_()
  end
  local function flat(v)
    local out = {}
    local function go(t) if type(t) == "table" then for _, e in ipairs(t) do go(e) end else out[#out + 1] = t end end
    go(v)
    return out
  end
  local function check(name, m, shape)
    local ref = REF[name]
    m = m:double()
    local names = {}
    for k in m:named_parameters() do names[#names + 1] = k end
    assert.are.same(ref.names, names)
    local x = build(m, shape)
    local out, h = m(x)
    local hs = wick.is_tensor(h) and { h } or h
    assert_close(support.values_of(out), flat(ref.out), 1e-10)
    for i, t in ipairs(hs) do assert_close(support.values_of(t), flat(ref.h[i]), 1e-10) end
    local loss = (out * out):sum()
    for _, t in ipairs(hs) do loss = loss + (t * 1.5):sum() end
    loss:backward()
    assert_close(support.values_of(x.grad), flat(ref.grad_x), 1e-9)
    assert_close(support.values_of(m.weight_hh_l0.grad), flat(ref.grad_whh), 1e-9)
  end

  it("LSTM, 2 layers, bidirectional: output, {h, c} and gradients", function()
    check("lstm_bi2", nn.LSTM(3, 4, 2, { bidirectional = true }), { 5, 2, 3 })
  end)
  it("GRU with batch_first", function() check("gru_bf", nn.GRU(3, 4, { batch_first = true }), { 2, 5, 3 }) end)
  it("RNN with relu, 2 layers (PyTorch's positional nonlinearity)", function()
    check("rnn_relu", nn.RNN(3, 4, 2, "relu"), { 5, 2, 3 })
  end)
  it("RNN without bias on an unbatched input", function()
    check("rnn_unbatched", nn.RNN(3, 4, { bias = false }), { 5, 3 })
  end)
  it("GRU bidirectional", function() check("gru_bi", nn.GRU(3, 2, 1, true, false, 0, true), { 4, 1, 3 }) end)

  it("takes an initial hidden state, checks shapes and options", function()
    local lstm = nn.LSTM(3, 4):double()
    local x = wick.randn(6, 2, 3, F64)
    local out1, hc = lstm(x:narrow(1, 1, 3))
    local out2 = lstm(x:narrow(1, 4, 3), hc)
    local whole = lstm(x)
    assert_close(support.values_of(wick.cat({ out1, out2 }, 1)), support.values_of(whole), 1e-12)
    assert_error_has(function() lstm(x, wick.zeros(1, 2, 4, F64)) end, "expected a {h, c} table")
    assert_error_has(function() lstm(x, { wick.zeros(1, 3, 4, F64), wick.zeros(1, 3, 4, F64) }) end, "Expected hidden[1] (h_0) size (1, 2, 4)")
    assert_error_has(function() lstm(wick.randn(6, 2, 5, F64)) end, "input.size(-1) must be equal to input_size")
    assert_error_has(function() nn.GRU(3, 4, { nonlinearity = "relu" }) end, "GRU: unknown option 'nonlinearity'")
    assert_error_has(function() nn.RNN(3, 4, 1, "sigmoid") end, "invalid value 'sigmoid'")
    assert_error_has(function() nn.GRU(3, 4, { proj_size = 2 }) end, "proj_size argument is only supported for LSTM")
  end)
end)

describe("more activations against PyTorch (float64: outputs and the gradient of sum(y^2))", function()
  -- computed with PyTorch 2.x on x = {-3, -0.5, 0, 0.7, 25}
  local REF = {
    { "LeakyReLU(0.2)", function() return nn.LeakyReLU(0.2) end, { -0.6000000000000001, -0.1, 0.0, 0.7, 25.0 }, { -0.24000000000000005, -0.04000000000000001, 0.0, 1.4, 50.0 } },
    { "SiLU", function() return nn.SiLU() end, { -0.14227761953270035, -0.1887703343990727, 0.0, 0.46773144051771626, 24.9999999996528 }, { 0.02507048494979, -0.09817522725923249, 0.0, 0.7702477726744708, 50.0000000159712 } },
    { "ELU", function() return nn.ELU() end, { -0.950212931632136, -0.3934693402873666, 0.0, 0.7, 25.0 }, { -0.09461663238239518, -0.4773024370823822, 0.0, 1.4, 50.0 } },
    { "Softplus", function() return nn.Softplus() end, { 0.04858735157374206, 0.4740769841801067, 0.6931471805599453, 1.103186048885458, 25.0 }, { 0.004608595147540282, 0.35796668333833054, 0.6931471805599453, 1.4742708565835516, 50.0 } },
    { "Softplus(2, 1)", function() return nn.Softplus(2, 1) end, { 0.0012378425688652247, 0.15663084375911143, 0.34657359027997264, 0.7, 25.0 }, { 6.121436400088861e-06, 0.08424904350191412, 0.34657359027997264, 1.4, 50.0 } },
    { "Mish", function() return nn.Mish() end, { -0.1456474612756246, -0.22074377465173, 0.0, 0.5611483776438518, 25.0 }, { 0.027204940064512347, -0.12781535968921987, 0.0, 1.087275337120447, 50.0 } },
    { "Hardtanh(-0.6, 0.6)", function() return nn.Hardtanh(-0.6, 0.6) end, { -0.6, -0.5, 0.0, 0.6, 0.6 }, { 0.0, -1.0, 0.0, 0.0, 0.0 } },
  }
  for _, case in ipairs(REF) do
    it(case[1], function()
      local x = wick.tensor({ -3, -0.5, 0, 0.7, 25 }, F64):requires_grad_()
      local y = case[2]()(x)
      assert_close(y, case[3], 1e-12)
      ;(y * y):sum():backward()
      assert_close(x.grad, case[4], 1e-9)
    end)
  end

  it("check their options", function()
    assert_error_has(function() nn.LeakyReLU({ slope = 0.1 }) end, "LeakyReLU: unknown option 'slope'")
    assert_error_has(function() nn.ELU("1") end, "option 'alpha'")
    assert_error_has(function() nn.Hardtanh(1, -1) end, "min_val cannot be greater than max_val")
    assert_error_has(function() nn.Softplus(0) end, "beta must not be 0")
  end)
end)

describe("nn.Conv1d", function()
  it("matches PyTorch's Conv1d(4, 6, 3, 2, 1, dilation = 2, groups = 2): output and weight gradient", function()
    -- PyTorch 2.x, float64; parameter j, element i: 0.5 sin(0.37 i + j); input element i: cos(0.23 i)
    local out = {0.07897041699090868, -0.5417753483974945, -0.8433081708633964, -0.4603194571543914, 1.3627653423661352, 1.8240794127703905, 1.595334157099151, 0.9631767129075139, -0.22069545651564587, -0.15772662899498283, 0.42038312109046805, 0.801738844485924, 1.1647547334511383, 1.7237788528470692, 1.6704090231170718, 1.074552117467701, -0.5243766325308314, -0.6440571585131555, -0.1240836057614256, 0.3829012008162226, 0.41349070854595826, -0.0008271432819301899, -0.5761596979641689, -0.5933004247315626, -0.17210790514632102, -0.005229186338428254, 0.5941141185922691, 0.8847598678339486, 0.3381814292412195, -0.2461133467263131, -0.6717245176855478, -0.4054473945560211, 1.2692119287597599, 1.8088066775087792, 1.7240717725601415, 1.1114691442810074, 0.5458190304352084, 0.06060084762828555, -0.45807295846898444, -0.376151239082139, 0.9490522926334466, 1.56402785860599, 1.6439229327266638, 1.0947171236834587, -0.7491031943391276, -1.0074547616398772, -0.585382452554598, -0.0032569336708892956}
    local gw = {-5.562453854934253, -3.885096100123329, -0.9969592227944196, 4.117266937538529, 5.539039077712618, 3.3376972872909123, 9.117795574695807, 8.793015313595488, 4.552501391905989, -7.565141924941782, -11.646947057083867, -10.217513199094125, -6.53090855912289, -10.62551619018368, -9.481892913928709, -2.4016583512069594, 1.0010429388464488, 4.696865484367054, -0.659466934196095, 3.9162798470523565, 5.934268022049151, 8.62466673162442, 7.673932602122972, 3.431076203053379, 7.9287417451330535, 7.294098047573097, 2.6165520559306525, -7.8578420947669425, -11.228686446799795, -9.273555767280891, -3.795921595148952, -5.776017813696056, -3.386181266664722, 0.6226163095344641, 3.9680455307663944, 5.021058098496088}
    local c = nn.Conv1d(4, 6, 3, 2, 1, 2, 2):double()
    local j = 0
    wick.no_grad(function()
      for _, p in c:named_parameters() do
        local v = {}
        for i = 0, p:numel() - 1 do v[#v + 1] = 0.5 * math.sin(0.37 * i + j) end
        p:copy_(wick.tensor(v, F64):view(p.shape))
        j = j + 1
      end
    end)
    local xv = {}
    for i = 0, 2 * 4 * 9 - 1 do xv[#xv + 1] = math.cos(0.23 * i) end
    local y = c(wick.tensor(xv, F64):view(2, 4, 9))
    assert.are.same({ 2, 6, 4 }, shape_of(y))
    assert_close(support.values_of(y), out, 1e-12)
    ;(y * y):sum():backward()
    assert_close(support.values_of(c.weight.grad), gw, 1e-10)
    assert.are.same({ 6, 2, 3 }, shape_of(c.weight))
  end)

  it("takes options, unbatched input, and padding = 'same'", function()
    assert.are.same({ 1, 2, 7 }, shape_of(nn.Conv1d(2, 2, 3, { padding = "same" })(wick.randn(1, 2, 7))))
    assert.are.same({ 2, 5 }, shape_of(nn.Conv1d(3, 2, 3)(wick.randn(3, 7))))
    assert_error_has(function() nn.Conv1d(2, 2, 3, { strid = 2 }) end, "Conv1d: unknown option 'strid'")
    assert_error_has(function() nn.Conv1d(2, 2, 3)(wick.randn(2, 2, 2, 7)) end, "expected 2-D (unbatched) or 3-D input")
  end)
end)

describe("nn.Embedding's padding_idx and from_pretrained", function()
  it("padding_idx (1-based, negative from the end) starts at zero and gets no gradient", function()
    local e = nn.Embedding(5, 3, 2)
    assert.are.equal(0, e.weight:select(1, 2):abs():sum():item())
    local idx = wick.tensor({ { 1, 2, 2, 3 } }, { dtype = "int64" })
    e(idx):sum():backward()
    assert.are.same({ { 1, 1, 1 }, { 0, 0, 0 }, { 1, 1, 1 }, { 0, 0, 0 }, { 0, 0, 0 } }, e.weight.grad:totable())
    -- a loaded row is returned as it is (only its gradient is blocked)
    wick.no_grad(function() e.weight:select(1, 2):fill_(7) end)
    assert.are.equal(7, e(idx)[1][2][1]:item())
    assert.are.equal(5, nn.Embedding(5, 3, { padding_idx = -1 }).padding_idx)
    assert_error_has(function() nn.Embedding(5, 3, 6) end, "padding_idx must be within num_embeddings")
    assert.is_true(nn.Embedding(5, 3, { scale_grad_by_freq = true }).scale_grad_by_freq) -- (spec/pooling_r55_spec.lua checks it)
  end)

  it("from_pretrained copies the weights, frozen unless freeze = false", function()
    local w = wick.tensor({ { 1, 2 }, { 3, 4 }, { 5, 6 } })
    local e = nn.Embedding.from_pretrained(w)
    assert.are.same({ { 3, 4 } }, e(wick.tensor({ 2 }, { dtype = "int64" })):totable())
    -- frozen: still a parameter (PyTorch's), one that requires no grad
    assert.are.equal(1, #e:parameters())
    assert.is_false(e.weight.requires_grad)
    assert.is_not_nil(e:state_dict().weight)
    local t = nn.Embedding.from_pretrained(w, false)
    assert.are.equal(1, #t:parameters())
    assert.is_false(rawequal(t.weight, w))
    assert_error_has(function() nn.Embedding.from_pretrained(wick.ones(3)) end, "expected to be 2-dimensional")
  end)
end)

describe("GroupNorm, AdaptiveAvgPool2d, Unflatten, Dropout2d", function()
  -- PyTorch 2.x, float64, input element i = cos(0.23 i), shape (2, 4, 6, 5)
  local function input()
    local v = {}
    for i = 0, 2 * 4 * 6 * 5 - 1 do v[#v + 1] = math.cos(0.23 * i) end
    return wick.tensor(v, F64):view(2, 4, 6, 5):requires_grad_()
  end

  it("AdaptiveAvgPool2d((4, 3)) with unequal bins, against PyTorch; 1 and divisible sizes", function()
    local ap = {0.6429486667968416, 0.4209080385739788, 0.15809393796821722, -0.22172058709380374, -0.4751426343997074, -0.6825374897629959, -0.45153927692387624, -0.1858616414725144, 0.097820460064348, 0.4551925698447691, 0.6572433435684929, 0.7956267817653758, 0.21752102851878036, -0.06672332379516278, -0.3445041701868283, -0.645710956298369, -0.7773242239461378, -0.8336378896071996, 0.03702328086391318, 0.3130120379731239, 0.5586792366510647, 0.7752977512036163, 0.824054014874032, 0.7929839494220168, -0.2880739412611361, -0.5297638185409902, -0.7201353354067239, -0.83172468186325, -0.7930231264169496, -0.6775012121732532, 0.5119409159032464, 0.6965251935046514, 0.8136368924459473, 0.8096671016102994, 0.687159744015151, 0.4980870413147745, -0.6874993176762723, -0.7975599640491181, -0.8303607669700868, -0.711206442480892, -0.5164535144502418, -0.2716715986629544, 0.7981828289029721, 0.8233341284497065, 0.7687288344612436, 0.5456338038549212, 0.2970128871037161, 0.01962025387325847, -0.8335469582340491, -0.7714155445188967, -0.6345569041469603, -0.3285732111417982, -0.0495450631530824, 0.23428252813214345, 0.790254620147188, 0.6467034352278697, 0.44050591847434706, 0.08050727695237145, -0.20259800987275092, -0.4660775742042776, -0.6723910342530396, -0.46096608053274796, -0.2048872213709439, 0.1751556113665845, 0.4356232112477116, 0.6538918760993843, 0.49107822938521095, 0.23173032045562672, -0.05006536555464501, -0.4142901907493355, -0.6275414508810114, -0.7800026056411933, -0.2634255292448567, 0.019372340124957792, 0.30029360581252007, 0.6143308683808494, 0.7602426383770204, 0.8325095040725106, 0.010915055522078082, -0.26864695751637735, -0.5221850691340982, -0.756401091612282, -0.8212046158326998, -0.8064578329651272, 0.2426254018153675, 0.49257108870893535, 0.6948012847077891, 0.8270946068735459, 0.8046747933716091, 0.7043059210303373, -0.47327085986796724, -0.6700144530924644, -0.8018535700521134, -0.81974052163138, -0.7122129840660555, -0.5356931874435202}
    local x = input()
    local y = nn.AdaptiveAvgPool2d({ 4, 3 })(x)
    assert.are.same({ 2, 4, 4, 3 }, shape_of(y))
    assert_close(support.values_of(y), ap, 1e-12)
    ;(y * y):sum():backward()
    assert_close(x.grad:abs():sum():item(), 92.55002645870944, 1e-10)
    local g = nn.AdaptiveAvgPool2d(1)(x)
    assert.are.same({ 2, 4, 1, 1 }, shape_of(g))
    assert_close(g[1][2][1][1]:item(), x[1][2]:mean():item(), 1e-12)
    assert.are.same({ 2, 4, 3, 5 }, shape_of(nn.AdaptiveAvgPool2d({ 3, nil })(x)))
    assert_error_has(function() nn.AdaptiveAvgPool2d(0) end, "output_size")
  end)

  it("GroupNorm(2, 4) with an affine transform, against PyTorch", function()
    local x = input()
    local gn = nn.GroupNorm(2, 4):double()
    wick.no_grad(function()
      gn.weight:copy_(wick.tensor({ 0.5, 1.5, -1.0, 2.0 }, F64))
      gn.bias:copy_(wick.tensor({ 0.1, 0.2, 0.3, -0.4 }, F64))
    end)
    local y = gn(x)
    assert_close(y:sum():item(), 10.82820964273863, 1e-10)
    assert_close((y * y):sum():item(), 464.27873381318597, 1e-10)
    assert_close(support.values_of(y:reshape(-1):narrow(1, 1, 6)), { 0.7465959599383527, 0.7282148297105994,
      0.6740395218728843, 0.5869232987393287, 0.47145432872717796, 0.3337140403273044 }, 1e-10)
    ;(y * y):sum():backward()
    assert_close(support.values_of(gn.weight.grad), { 60.811235023763444, 177.7052272313969, -121.35018580815037,
      237.23049832574426 }, 1e-9)
    assert_error_has(function() nn.GroupNorm(3, 4) end, "divisible by num_groups")
    assert_error_has(function() gn(wick.randn(2, 3, 4, F64)) end, "expected an input of shape (N, 4, ...)")
  end)

  it("Unflatten and Dropout2d", function()
    assert.are.same({ 2, 2, 2, 6, 5 }, shape_of(nn.Unflatten(2, { 2, 2 })(input())))
    assert.are.same({ 2, 4, 6, 5, 1 }, shape_of(nn.Unflatten(-1, { 5, 1 })(input())))
    local d = nn.Dropout2d(0.5)
    local y = d(wick.ones(8, 16, 3, 3, F64))
    -- each channel is all zero or all 2
    local ch = y:reshape(8 * 16, 9)
    local mx, mn = ch:max(2), ch:min(2)
    assert.are.equal(0, (mx - mn):abs():sum():item())
    d:eval()
    assert.are.equal(8 * 16 * 9, d(wick.ones(8, 16, 3, 3, F64)):sum():item())
    assert_error_has(function() nn.Dropout2d({ q = 1 }) end, "unknown option 'q'")
  end)
end)

describe("F's activations, distances, one_hot and losses against their formulas", function()
  local F = nn.functional
  local xs = { -25, -3, -0.5, 0, 0.5, 3, 25 }
  local x = wick.tensor(xs, F64)
  local function sig(v) return 1 / (1 + math.exp(-v)) end
  local function sp(v, beta, th) beta, th = beta or 1, th or 20; return v * beta > th and v or math.log(1 + math.exp(beta * v)) / beta end
  local function clamp(v, lo, hi) return math.min(math.max(v, lo), hi) end
  local function map(f) local out = {} for i, v in ipairs(xs) do out[i] = f(v) end return out end
  local function tanh(v) local e = math.exp(2 * v) return (e - 1) / (e + 1) end

  it("activations, positional arguments and option tables alike", function()
    assert_close(F.silu(x), map(function(v) return v * sig(v) end), 1e-12)
    assert_close(F.softplus(x), map(function(v) return sp(v) end), 1e-12)
    assert_close(F.softplus(x, 2, 1), map(function(v) return sp(v, 2, 1) end), 1e-12)
    assert_close(F.softplus(x, { beta = 2, threshold = 1 }), map(function(v) return sp(v, 2, 1) end), 1e-12)
    assert_close(F.leaky_relu(x, 0.2), map(function(v) return v > 0 and v or 0.2 * v end), 1e-12)
    assert_close(F.leaky_relu(x), map(function(v) return v > 0 and v or 0.01 * v end), 1e-12)
    assert_close(F.elu(x, { alpha = 2 }), map(function(v) return v > 0 and v or 2 * (math.exp(v) - 1) end), 1e-12)
    assert_close(F.hardtanh(x, -2, 2), map(function(v) return clamp(v, -2, 2) end), 0)
    assert_close(F.relu6(x), map(function(v) return clamp(v, 0, 6) end), 0)
    assert_close(F.hardsigmoid(x), map(function(v) return clamp(v + 3, 0, 6) / 6 end), 1e-15)
    assert_close(F.hardswish(x), map(function(v) return v * clamp(v + 3, 0, 6) / 6 end), 1e-14)
    assert_close(F.mish(x), map(function(v) return v * tanh(sp(v)) end), 1e-12)
    assert_close(F.logsigmoid(x), map(function(v) return -sp(-v) end), 1e-12)
    assert.is_true(F.logsigmoid(wick.tensor({ -1000, 1000 })):isfinite():all()) -- no log(0)
    assert_close(F.softsign(x), map(function(v) return v / (1 + math.abs(v)) end), 1e-15)
    assert_close(F.glu(wick.tensor({ { 1, 2, 0, 100 } }, F64)), { { 0.5, 2 } }, 1e-12)
    assert_error_has(function() F.glu(wick.ones(2, 3)) end, "Halving dimension must be even")
    assert_error_has(function() F.leaky_relu(x, "a") end, "negative_slope")
    for name, cls in pairs({ relu6 = nn.ReLU6, hardsigmoid = nn.Hardsigmoid, hardswish = nn.Hardswish,
      logsigmoid = nn.LogSigmoid, softsign = nn.Softsign }) do
      assert_close(cls()(x), F[name](x):totable(), 0)
    end
  end)

  it("gradients (gradcheck)", function()
    local v = wick.tensor({ -2.1, -0.7, 0.3, 1.9 }, F64)
    for _, name in ipairs({ "silu", "softplus", "elu", "mish", "logsigmoid", "softsign" }) do
      support.gradcheck(function(t) return F[name](t) end, { v })
    end
    support.gradcheck(function(t) return F.normalize(t) end, { wick.tensor({ { 0.3, -1.2, 2 }, { 1, 1, -0.5 } }, F64) })
    support.gradcheck(function(a, b) return F.cosine_similarity(a, b) end,
      { wick.tensor({ { 0.3, -1.2, 2 } }, F64), wick.tensor({ { 1, 1, -0.5 } }, F64) })
  end)

  it("inplace writes the result into x outside autograd", function()
    local t = wick.tensor({ -1, 2 }, F64)
    assert.are.equal(t, F.leaky_relu(t, 0.5, true))
    assert_close(t, { -0.5, 2 }, 0)
  end)

  it("normalize, cosine_similarity, pairwise_distance, norm", function()
    local m = wick.tensor({ { 3, 4 }, { 0, 0 } }, F64)
    assert_close(F.normalize(m), { { 0.6, 0.8 }, { 0, 0 } }, 1e-15) -- a zero row stays zero (eps)
    assert_close(F.normalize(m, 1), { { 3 / 7, 4 / 7 }, { 0, 0 } }, 1e-15)
    assert_close(F.normalize(m, { dim = 1 }), { { 1, 1 }, { 0, 0 } }, 1e-15)
    assert_close(F.cosine_similarity(wick.tensor({ { 1, 0 }, { 2, 2 } }, F64), wick.tensor({ { 0, 3 }, { 1, 1 } }, F64)), { 0, 1 }, 1e-15)
    assert_close(nn.CosineSimilarity(1)(wick.tensor({ { 1 }, { 0 } }, F64), wick.tensor({ { 1 }, { 1 } }, F64)), { math.sqrt(0.5) }, 1e-15)
    assert_close(F.pairwise_distance(wick.tensor({ { 0, 0 } }, F64), wick.tensor({ { 3, 4 } }, F64)),
      { math.sqrt((3 - 1e-6) ^ 2 + (4 - 1e-6) ^ 2) }, 1e-12)
    assert_close(nn.PairwiseDistance(1, 0)(wick.tensor({ { 0, 0 } }, F64), wick.tensor({ { 3, -4 } }, F64)), { 7 }, 0)
    assert.are.equal(5, wick.tensor({ 3, 4 }):norm():item())
    assert_close(wick.tensor({ { 3, -4 }, { 1, 1 } }):norm(1, 2), { 7, 2 }, 0)
    assert.are.equal(4, wick.tensor({ -3, 4 }):norm(math.huge):item())
    assert.are.same({ 2, 1 }, wick.tensor({ { 3, 4 }, { 1, 1 } }):norm(2, 2, true):size())
  end)

  it("one_hot with wick's 1-based classes", function()
    local oh = F.one_hot(wick.tensor({ 1, 3, 2 }, { dtype = "int64" }))
    assert.are.equal("int64", oh.dtype)
    assert.are.same({ { 1, 0, 0 }, { 0, 0, 1 }, { 0, 1, 0 } }, oh:totable())
    assert.are.same({ 2, 1, 4 }, F.one_hot(wick.tensor({ { 1 }, { 4 } }, { dtype = "int64" }), 4):size())
    assert_error_has(function() F.one_hot(wick.tensor({ 0, 1 }, { dtype = "int64" })) end, "1-based")
    assert_error_has(function() F.one_hot(wick.tensor({ 5 }, { dtype = "int64" }), 3) end, "at most num_classes (3)")
    assert_error_has(function() F.one_hot(wick.tensor({ 1.5 })) end, "index tensor")
  end)

  it("smooth_l1_loss, huber_loss, kl_div and their modules", function()
    local a, b = wick.tensor({ 0, 2, -1 }, F64), wick.tensor({ 0.5, 0, 1.2 }, F64)
    local function sl1(d, beta) d = math.abs(d); return d < beta and 0.5 * d * d / beta or d - 0.5 * beta end
    local function hub(d, delta) d = math.abs(d); return d < delta and 0.5 * d * d or delta * (d - 0.5 * delta) end
    local ds = { -0.5, 2, -2.2 }
    for _, beta in ipairs({ 1, 0.5 }) do
      local want = (sl1(ds[1], beta) + sl1(ds[2], beta) + sl1(ds[3], beta)) / 3
      assert_close(F.smooth_l1_loss(a, b, { beta = beta }), want, 1e-15)
      assert_close(nn.SmoothL1Loss({ beta = beta })(a, b), want, 1e-15)
      local hw = hub(ds[1], beta) + hub(ds[2], beta) + hub(ds[3], beta)
      assert_close(F.huber_loss(a, b, { delta = beta, reduction = "sum" }), hw, 1e-15)
      assert_close(nn.HuberLoss({ delta = beta, reduction = "sum" })(a, b), hw, 1e-15)
    end
    local lp = wick.tensor({ { 0.2, 0.8 }, { 0.5, 0.5 } }, F64):log()
    local t = wick.tensor({ { 0.5, 0.5 }, { 0, 1 } }, F64)
    local terms = 0.5 * (math.log(0.5) - math.log(0.2)) + 0.5 * (math.log(0.5) - math.log(0.8)) + (0 - math.log(0.5))
    assert_close(F.kl_div(lp, t, { reduction = "sum" }), terms, 1e-14)
    assert_close(F.kl_div(lp, t, { reduction = "batchmean" }), terms / 2, 1e-14)
    assert_close(nn.KLDivLoss({ reduction = "batchmean" })(lp, t), terms / 2, 1e-14)
    assert_close(F.kl_div(lp, t), terms / 4, 1e-14)
    assert_close(F.kl_div(lp, wick.tensor({ { 0.5, 0.5 } }, F64):log(), { reduction = "sum", log_target = true }),
      0.5 * (math.log(0.5) - math.log(0.2)) + 0.5 * (math.log(0.5) - math.log(0.8)) + 0, 1e-14)
    assert_error_has(function() F.smooth_l1_loss(a, b, { reduction = "batchmean" }) end, "reduction")
  end)
end)

describe("1-D convolution and pooling, adaptive pooling, group norm, pixel shuffle, threshold, pair losses", function()
  local F = nn.functional
  local function same(x, want) assert.are.same(want, x:totable()) end

  it("conv1d, max_pool1d, avg_pool1d, adaptive pools (functional and modules agree)", function()
    local x = wick.arange(8):reshape(1, 2, 4)
    local w = wick.ones(3, 2, 2)
    same(F.conv1d(x, w), { { { 10, 14, 18 }, { 10, 14, 18 }, { 10, 14, 18 } } })
    same(F.conv1d(x, w, nil, 2), { { { 10, 18 }, { 10, 18 }, { 10, 18 } } })
    same(F.conv1d(x, w, wick.ones(3), { padding = 1 }):select(2, 1), { { 5, 11, 15, 19, 11 } })
    same(F.conv1d(x[1], w), { { 10, 14, 18 }, { 10, 14, 18 }, { 10, 14, 18 } }) -- unbatched
    local conv = nn.Conv1d(2, 3, 2)
    assert_close(conv(x), F.conv1d(x, conv.weight, conv.bias):totable(), 1e-6)
    same(F.max_pool1d(x, 2), { { { 1, 3 }, { 5, 7 } } })
    same(F.avg_pool1d(x, 2, 1), { { { 0.5, 1.5, 2.5 }, { 4.5, 5.5, 6.5 } } })
    same(F.adaptive_avg_pool1d(x, 2), { { { 0.5, 2.5 }, { 4.5, 6.5 } } })
    same(nn.AdaptiveAvgPool1d(1)(x), { { { 1.5 }, { 5.5 } } })
    local img = wick.arange(16):reshape(1, 1, 4, 4)
    same(F.adaptive_avg_pool2d(img, 2), { { { { 2.5, 4.5 }, { 10.5, 12.5 } } } })
    assert.are.same({ 1, 1, 3, 3 }, nn.AdaptiveAvgPool2d({ 3, 3 })(img):size())
  end)

  it("F.max_pool2d and F.avg_pool2d take PyTorch's positional arguments (MAML's learner.py)", function()
    local img = wick.arange(16):reshape(1, 1, 4, 4)
    same(F.max_pool2d(img, 2, 2, 0), { { { { 5, 7 }, { 13, 15 } } } })
    same(F.max_pool2d(img, 2, 1), F.max_pool2d(img, 2, { stride = 1 }):totable())
    local v, i = F.max_pool2d(img, 2, 2, 0, 1, false, true)
    same(i, { { { { 6, 8 }, { 14, 16 } } } })
    same(v, { { { { 5, 7 }, { 13, 15 } } } })
    same(F.avg_pool2d(img, 2, 2, 1, false, false), { { { { 0, 1.5, 3 }, { 6, 7.5, 9 }, { 12, 13.5, 15 } } } })
    assert_error_has(function() F.max_pool2d(img, 2, 2, 0, 1, false, true, 9) end, "at most 5 positional")
    assert_error_has(function() F.max_pool2d(img, 2, 2, { stride = 2 }) end, "given both by position and as an option")
  end)

  it("adaptive max pooling: each bin's first maximum and its 1-based flat index (functional and modules)", function()
    local img = wick.arange(20):reshape(1, 1, 5, 4) -- rows [1, 3] and [3, 5], columns [1, 2], [2, 3], [3, 4]
    local v, i = F.adaptive_max_pool2d(img, { 2, 3 }, true)
    same(v, { { { { 9, 10, 11 }, { 17, 18, 19 } } } })
    same(i, { { { { 10, 11, 12 }, { 18, 19, 20 } } } })
    local _, zi = F.adaptive_max_pool2d(wick.zeros(1, 5, 4), { 2, 3 }, { return_indices = true }) -- ties: the first
    same(zi, { { { 1, 2, 3 }, { 9, 10, 11 } } })
    local _, ei = nn.AdaptiveMaxPool2d(2, true)(wick.zeros(1, 1, 4, 4)) -- equal bins (one max_pool2d)
    same(ei, { { { { 1, 3 }, { 9, 11 } } } })
    same(F.adaptive_max_pool2d(img, { nil, 2 }), { { { { 1, 3 }, { 5, 7 }, { 9, 11 }, { 13, 15 }, { 17, 19 } } } })
    local x = wick.arange(8):reshape(1, 2, 4)
    local v1, i1 = nn.AdaptiveMaxPool1d(3, true)(x)
    same(v1, { { { 1, 2, 3 }, { 5, 6, 7 } } })
    same(i1, { { { 2, 3, 4 }, { 2, 3, 4 } } })
    -- the gradient goes to the maxima only
    local xr = wick.randn(2, 3, 7, 5):requires_grad_()
    F.adaptive_max_pool2d(xr, 3):sum():backward()
    assert.are.equal(2 * 3 * 9, xr.grad:sum():item())
    assert_error_has(function() nn.AdaptiveMaxPool2d(0) end, "output_size")
  end)

  it("embedding_bag and nn.EmbeddingBag: sum, mean, max, weights, padding, 1-based offsets (PyTorch's values)", function()
    local w = (wick.arange(30, { dtype = "float64" }):view(10, 3) - 14):sin()
    local I = function(t) return wick.tensor(t, { dtype = "int64" }) end
    local inp, off = I({ 1, 2, 4, 5, 4, 3, 2, 9 }) + 1, I({ 1, 5, 5, 7 }) -- PyTorch's offsets [0, 4, 4, 6]
    local function near(got, want) assert_close(got, want, 1e-12) end
    near(F.embedding_bag(inp, w, off, { mode = "sum" }), { { -0.057194482090463516, -0.04513904581163408, 0.00841702101703648 },
      { 0, 0, 0 }, { 0.049626847837456745, -0.0846684894999683, -0.1411200080598672 },
      { -0.5691912097967409, 0.3336207569760813, 0.9297033383560427 } })
    near(F.embedding_bag(inp, w, off)[3], { 0.024813423918728372, -0.04233424474998415, -0.0705600040299336 }) -- mean
    near(F.embedding_bag(inp, w, off, { mode = "max" })[1], { 0.9999902065507035, 0.9092974268256817, 0.27941549819892586 })
    local psw = wick.arange(8, { dtype = "float64" }) / 8
    near(F.embedding_bag(inp, w, off, { mode = "sum", per_sample_weights = psw })[4],
      { -0.3743725277442255, 0.3740414871939197, 0.7785634837866716 })
    near(F.embedding_bag(inp, w, off, { padding_idx = 5 })[3], { 0.9589242746631385, 0.7568024953079282, -0.1411200080598672 })
    near(F.embedding_bag(inp:view(2, 4), w, { mode = "max" }), { { 0.9999902065507035, 0.9092974268256817, 0.27941549819892586 },
      { 0.9589242746631385, 0.9906073556948704, 0.6502878401571168 } })
    near(F.embedding_bag(inp, w, I({ 1, 5, 7, 9 }), { include_last_offset = true })[2], -- PyTorch's [0, 4, 6, 8]
      { 0.024813423918728372, -0.04233424474998415, -0.0705600040299336 })
    local wr = w:clone():requires_grad_()
    F.embedding_bag(inp, wr, off, { mode = "max" }):pow(2):sum():backward()
    assert.is_true(math.abs(wr.grad:abs():sum():item() - 11.930984268450011) < 1e-12)
    local m = nn.EmbeddingBag(10, 3, { mode = "sum" })
    assert.are.same({ 4, 3 }, m(inp, off):size())
    assert.are.equal("EmbeddingBag(10, 3, mode='sum')", tostring(m))
    assert_error_has(function() F.embedding_bag(inp, w, off - 1) end, "the first offset must be 1")
    assert_error_has(function() F.embedding_bag(inp, w) end, "offsets")
    assert_error_has(function() F.embedding_bag(inp, w, off, { mode = "mean", per_sample_weights = psw }) end, "mode='sum'")
    assert.are.same({ 0, 2, 1 }, wick.bincount(I({ 2, 3, 2 })):totable())
    assert.are.same({ 0, 1.5, 0, 0 }, wick.bincount(I({ 2, 2 }), wick.tensor({ 0.5, 1 }), 4):totable())
    assert_error_has(function() wick.bincount(I({ 0, 1 })) end, "count from 1")
  end)

  it("group_norm: F and nn.GroupNorm", function()
    local x = wick.arange(8):reshape(1, 4, 2)
    local y = F.group_norm(x, 2)
    local s = 1 / math.sqrt(1.25 + 1e-5) -- each group 0..3 (shifted): variance 1.25
    assert_close(y, { { { -1.5 * s, -0.5 * s }, { 0.5 * s, 1.5 * s }, { -1.5 * s, -0.5 * s }, { 0.5 * s, 1.5 * s } } }, 1e-5)
    local gn = nn.GroupNorm(2, 4)
    gn.weight:detach():fill_(2)
    assert_close(gn(x), F.group_norm(x, 2, gn.weight, gn.bias):totable(), 1e-6)
    assert_error_has(function() F.group_norm(wick.ones(1, 3, 2), 2) end, "divisible by num_groups")
  end)

  it("pixel_shuffle and pixel_unshuffle invert each other", function()
    local t = wick.arange(32):reshape(2, 4, 2, 2)
    local up = F.pixel_shuffle(t, 2)
    assert.are.same({ 2, 1, 4, 4 }, up:size())
    same(up[1][1][1], { 0, 4, 1, 5 }) -- channel c*4 + i*2 + j goes to (h*2 + i, w*2 + j)
    assert.is_true(F.pixel_unshuffle(up, 2):equal(t))
    assert.is_true(nn.PixelUnshuffle(2)(nn.PixelShuffle(2)(t)):equal(t))
    assert_error_has(function() F.pixel_shuffle(wick.ones(1, 3, 2, 2), 2) end, "divisible by the square")
  end)

  it("threshold, tanhshrink", function()
    same(F.threshold(wick.tensor({ -1, 0.5, 2 }), 0.6, -5), { -5, -5, 2 })
    same(nn.Threshold(0, 9)(wick.tensor({ -1, 1 })), { 9, 1 })
    assert_close(nn.Tanhshrink()(wick.tensor({ 1 }, F64)), { 1 - math.tanh(1) }, 1e-15)
  end)

  it("margin_ranking_loss, cosine_embedding_loss, triplet_margin_loss and their modules", function()
    assert.are.equal(0.75, F.margin_ranking_loss(wick.tensor({ 1, 2 }), wick.tensor({ 2, 1 }), wick.tensor({ 1, 1 }), { margin = 0.5 }):item())
    assert.are.equal(1.5, nn.MarginRankingLoss({ margin = 0.5, reduction = "sum" })(wick.tensor({ 1, 2 }), wick.tensor({ 2, 1 }), wick.tensor({ 1, 1 })):item())
    assert_close(F.cosine_embedding_loss(wick.tensor({ { 1, 0 }, { 1, 0 } }), wick.tensor({ { 0, 1 }, { 1, 0 } }), wick.tensor({ 1, -1 })), 1, 1e-6)
    assert_close(nn.CosineEmbeddingLoss({ margin = 0.5, reduction = "none" })(wick.tensor({ { 1, 0 } }), wick.tensor({ { 1, 1 } }), wick.tensor({ -1 })),
      { math.sqrt(0.5) - 0.5 }, 1e-6)
    local a, p, n = wick.tensor({ { 0, 0 } }), wick.tensor({ { 3, 4 } }), wick.tensor({ { 1, 0 } })
    assert_close(F.triplet_margin_loss(a, p, n), 5, 1e-5)
    assert_close(nn.TripletMarginLoss({ margin = 2 })(a, p, n), 6, 1e-5)
    assert_close(F.triplet_margin_loss(a, p, n, { swap = true }), 5, 1e-5) -- d(p, n) is larger: no swap
    assert_error_has(function() F.margin_ranking_loss(a, p, n, "sum") end, "option 'margin'")
  end)
end)

describe("soft margin and Poisson losses, gumbel_softmax, bilinear", function()
  local F = nn.functional
  it("against their formulas", function()
    assert_close(F.soft_margin_loss(wick.tensor({ 1, -2 }, F64), wick.tensor({ 1, 1 }, F64)),
      (math.log(1 + math.exp(-1)) + math.log(1 + math.exp(2))) / 2, 1e-14)
    assert_close(F.poisson_nll_loss(wick.tensor({ 0.5 }, F64), wick.tensor({ 2 }, F64)), math.exp(0.5) - 1, 1e-14)
    local stirling = 3 * math.log(3) - 3 + 0.5 * math.log(2 * math.pi * 3)
    assert_close(F.poisson_nll_loss(wick.tensor({ 2 }, F64), wick.tensor({ 3 }, F64), { log_input = false, full = true }),
      2 - 3 * math.log(2 + 1e-8) + stirling, 1e-12)
  end)
  it("gumbel_softmax: soft samples sum to 1; hard ones are one-hot with the soft gradient", function()
    wick.manual_seed(3)
    local logits = wick.randn(4, 5, F64):requires_grad_()
    local soft = F.gumbel_softmax(logits, { tau = 0.5 })
    assert_close(soft:sum(2), { 1, 1, 1, 1 }, 1e-12)
    local hard = F.gumbel_softmax(logits, { hard = true })
    assert_close(hard:sum(2), { 1, 1, 1, 1 }, 1e-12)
    assert.are.equal(4, hard:eq(1):to("int64"):sum():item())
    hard:sum():backward()
    assert.is_not_nil(logits.grad)
    assert_error_has(function() F.gumbel_softmax(logits, { tau = 0 }) end, "tau must be positive")
  end)
  it("nn.Bilinear is x1^T A x2 + b", function()
    local b = nn.Bilinear(3, 2, 4)
    local x1, x2 = wick.randn(5, 3), wick.randn(5, 2)
    local ref = wick.einsum("bi,oij,bj->bo", x1, b.weight, x2) + b.bias
    assert_close(b(x1, x2), ref:totable(), 1e-5)
    assert.are.same({ 4, 3, 2 }, b.weight:size())
    assert_error_has(function() F.bilinear(x1, x2, wick.ones(4, 2, 2)) end, "expected weight")
  end)
end)

describe("F.unfold and nn.Unfold (im2col)", function()
  local F = nn.functional
  it("a convolution is the weight times the unfolded input", function()
    local x = wick.randn(2, 3, 4, 5, F64)
    local w = wick.randn(6, 3, 2, 3, F64)
    local u = F.unfold(x, { 2, 3 }, { padding = 1 })
    local y = F.conv2d(x, w, nil, { padding = 1 })
    assert.are.same({ 2, 18, y:size(3) * y:size(4) }, u:size())
    assert_close(w:reshape(6, -1):matmul(u):reshape(y.shape), y:totable(), 1e-12)
    local s = F.unfold(x, 2, 2, 0, 2) -- dilation 2, stride 2, positionally
    assert.are.same({ 2, 12, 1 * 2 }, s:size())
  end)
  it("PyTorch's column order; unbatched input; bad sizes", function()
    local t = wick.arange(16):reshape(1, 1, 4, 4)
    assert.are.same({ { { 0, 2, 8, 10 }, { 1, 3, 9, 11 }, { 4, 6, 12, 14 }, { 5, 7, 13, 15 } } },
      nn.Unfold(2, { stride = 2 })(t):totable())
    assert.are.same({ 4, 4 }, F.unfold(t[1], 2, { stride = 2 }):size())
    assert_error_has(function() F.unfold(t, 5) end, "does not fit")
    assert_error_has(function() F.unfold(t, { 1, 2, 3 }) end, "kernel_size must be an integer or a {h, w} table")
  end)
end)

local warnings_of = support.warnings_of

describe("what PyTorch programs ported line by line expect", function()
  local F = nn.functional

  it("required arguments by PyTorch's names in the options table; a missing one is named", function()
    local c = nn.Conv2d(1, 16, { kernel_size = 3, stride = 2, padding = 1 })
    assert.are.same({ 3, 3 }, c.kernel_size)
    assert.are.same({ 1, 16, 4, 4 }, shape_of(c(wick.randn(1, 1, 8, 8))))
    local c7 = nn.Conv2d(1, 64, { kernel_size = { 7, 7 }, bias = false })
    assert.is_nil(c7.bias)
    assert.are.same({ 64, 1, 7, 7 }, c7.weight:size())
    local lstm = nn.LSTM({ input_size = 28, hidden_size = 64, batch_first = true })
    assert.are.same({ 28, 64, true }, { lstm.input_size, lstm.hidden_size, lstm.batch_first })
    assert.are.equal(64, nn.LSTM(28, { hidden_size = 64 }).hidden_size)
    assert.are.same({ 4, 3 }, nn.Linear(3, { out_features = 4 }).weight:size())
    assert.are.same({ 4, 3 }, nn.Linear({ in_features = 3, out_features = 4, bias = false }).weight:size())
    assert.are.same({ 1, 2, 2, 2 }, shape_of(nn.MaxPool2d({ kernel_size = 2 })(wick.randn(1, 2, 4, 4))))
    assert.is_true(nn.InstanceNorm2d({ num_features = 4, affine = true }).affine)
    assert.are.equal(2, nn.TransformerEncoderLayer(8, { nhead = 2 }).self_attn.num_heads)
    local x = wick.randn(1, 2, 8, 8)
    assert.are.same({ 1, 2, 2, 2 }, shape_of(F.avg_pool2d(x, { kernel_size = 4 })))
    assert.are.same({ 1, 2, 4, 4 }, shape_of(F.max_pool2d(x, { kernel_size = 2 })))
    assert.are.same({ 1, 2, 2, 2 }, shape_of(F.max_pool2d(x, { kernel_size = 3, stride = 3 })))
    assert.are.same({ 1, 2, 4 }, shape_of(F.avg_pool1d(wick.randn(1, 2, 8), { kernel_size = 2 })))
    assert.are.same({ 1, 8, 49 }, shape_of(F.unfold(x, { kernel_size = 2 })))
    assert.are.same({ 1, 2, 12, 10 }, shape_of(F.pad(x, { pad = { 1, 1, 2, 2 }, mode = "reflect" })))
    -- a user's class declares its own
    local Net = nn.Module:extend("ArgsNet", { "n_in", "n_out" })
    function Net:init(n_in, n_out, opts) self.fc = nn.Linear(n_in, n_out, opts) end
    assert.are.same({ 5, 2 }, Net(2, { n_out = 5, bias = false }).fc.weight:size())
    -- errors: a missing argument by its name, never "table: 0x..."
    assert_error_has(function() nn.Conv2d(1, 16, { stride = 2 }) end, "Conv2d: missing required argument 'kernel_size'")
    assert_error_has(function() nn.Linear(3) end, "Linear: missing required argument 'out_features'")
    assert_error_has(function() nn.MaxPool2d({ stride = 2 }) end, "MaxPool2d: missing required argument 'kernel_size'")
    assert_error_has(function() nn.Linear(3, { n_components = 4 }) end, "missing required argument 'out_features' (the options table holds 'n_components')")
    assert_error_has(function() F.max_pool2d(x, { stride = 2 }) end, "max_pool2d: missing required argument 'kernel_size'")
    assert_error_has(function() nn.Linear(3, 4, { out_features = 4 }) end,
      "argument 'out_features' given both by position and as an option")
    assert_error_has(function() Net(2) end, "ArgsNet: missing required argument 'n_out'")
    local err = support.error_of(function() nn.Conv2d(1, 16, { 1, 2, 3 }) end)
    support.assert_contains(err, "Conv2d: kernel_size must be an integer or a {h, w} table, got a table of 3 entries")
    assert.is_nil(err:find("0x", 1, true))
  end)

  it("F.dropout1d/2d/3d and nn.Dropout2d follow PyTorch 2.x: other dims warn once, eval mode is the identity", function()
    local x2 = wick.ones(64, 32, F64)
    local d = nn.Dropout2d(0.5)
    local y
    local w = warnings_of(function()
      for _ = 1, 3 do y = d(x2) end -- one call site: one warning
    end)
    assert.are.equal(1, #w)
    support.assert_contains(w[1], "dropout2d: Received a 2-D input to dropout2d, which is deprecated")
    -- a 2-D input is dropped element by element (PyTorch's feature dropout of (N, C))
    local zeros = y:eq(0):sum():item()
    assert.is_true(zeros > 64 * 32 * 0.35 and zeros < 64 * 32 * 0.65)
    assert.are.equal(0, y:ne(0):logical_and(y:ne(2)):sum():item())
    d:eval()
    warnings_of(function() assert.is_true(d(x2):equal(x2)) end)
    -- 3-D: (N, C, L) channel by channel, with PyTorch's warning
    local y3
    w = warnings_of(function() y3 = F.dropout2d(wick.ones(16, 8, 5, F64), 0.5) end)
    support.assert_contains(w[1], "input is interpreted as shape (N, C, L)")
    assert.are.equal(0, (y3:max(3) - y3:min(3)):abs():sum():item())
    -- dropout1d on (C, L) and dropout3d on (N, C, D, H, W): whole channels
    local y1 = F.dropout1d(wick.ones(32, 6, F64), 0.5)
    assert.are.equal(0, (y1:max(2) - y1:min(2)):abs():sum():item())
    local v3 = F.dropout3d(wick.ones(2, 16, 2, 2, 2, F64), 0.5):reshape(32, 8)
    assert.are.equal(0, (v3:max(2) - v3:min(2)):abs():sum():item())
    warnings_of(function() assert.is_true(F.dropout2d(x2, 0.5, false):equal(x2)) end)
    assert.is_true(F.dropout1d(wick.ones(3, 4), { p = 0.5, training = false }):equal(wick.ones(3, 4)))
    assert_error_has(function() F.dropout1d(wick.ones(3)) end, "Expected 2D or 3D input")
    assert_error_has(function() F.dropout3d(wick.ones(2, 2, 2, 2), 1.5) end, "between 0 and 1")
    assert.are.equal("Dropout3d(p=0.5, inplace=False)", tostring(nn.Dropout3d()))
    assert.are.same({ 4, 8 }, shape_of(nn.Dropout1d(0.2)(wick.ones(4, 8))))
  end)

  it("a target whose size differs from the input's: BCE raises, the regression losses warn once", function()
    local p, t = wick.tensor({ { 0.9 }, { 0.1 }, { 0.9 }, { 0.1 } }), wick.tensor({ 1, 0, 1, 0 })
    assert_error_has(function() nn.BCELoss()(p, t) end,
      "binary_cross_entropy: Using a target size ([4]) that is different to the input size ([4, 1]) is deprecated")
    assert_error_has(function() F.binary_cross_entropy_with_logits(p, t) end,
      "Target size ([4]) must be the same as input size ([4, 1])")
    assert_close(nn.BCELoss()(p:squeeze(2), t):item(), 0.1054, 1e-4)
    for _, loss in ipairs({ nn.MSELoss(), nn.L1Loss(), nn.SmoothL1Loss(), nn.HuberLoss() }) do
      local w = warnings_of(function()
        for _ = 1, 2 do loss(wick.zeros(4, 1), wick.arange(4)) end
      end)
      assert.are.equal(1, #w)
      support.assert_contains(w[1], "Using a target size ([4]) that is different to the input size ([4, 1]). "
        .. "This will likely lead to incorrect results due to broadcasting.")
      support.assert_contains(w[1], "nn_spec.lua:") -- the user's line
    end
    assert.are.same({}, warnings_of(function() F.mse_loss(wick.zeros(4), wick.arange(4)) end))
  end)

  it("0-based indices name the layer and the 1-based rule", function()
    local e = nn.Embedding(5, 2)
    assert_error_has(function() e(I({ 0 })) end, "Embedding: index 0 is out of range (indices are 1-based: 1 to 5)")
    assert_error_has(function() e(I({ 1, 6 })) end, "Embedding: index 6 is out of range")
    assert_error_has(function() F.embedding(I({ 0 }), e.weight) end, "embedding: index 0 is out of range")
    assert.are.same({ 2, 2 }, shape_of(e(I({ 1, 5 }))))
    local logp = wick.randn(2, 3):log_softmax(2)
    assert_error_has(function() nn.NLLLoss()(logp, I({ 0, 1 })) end,
      "nll_loss: Target 0 is out of bounds (classes are 1 to 3).")
    assert_error_has(function() F.nll_loss(logp, I({ 1, 4 })) end, "nll_loss: Target 4 is out of bounds")
  end)

  it("PyTorch's deprecated nn.init names work and warn", function()
    local t = wick.empty(3, 4)
    for _, name in ipairs({ "xavier_uniform", "xavier_normal", "kaiming_uniform", "kaiming_normal", "orthogonal",
      "normal", "uniform" }) do
      local w = warnings_of(function() assert.is_true(rawequal(t, nn.init[name](t))) end)
      support.assert_contains(w[1], ("nn.init.%s is now deprecated in favor of nn.init.%s_."):format(name, name))
    end
    warnings_of(function() nn.init.constant(t, 0.5) end)
    assert.are.equal(6, t:sum():item())
  end)

  it("modules print like PyTorch's (wick's 1-based dims as written)", function()
    for _, case in ipairs({
      { nn.Conv2d(3, 64, 7, { stride = 2, padding = 3, bias = false }),
        "Conv2d(3, 64, kernel_size=(7, 7), stride=(2, 2), padding=(3, 3), bias=False)" },
      { nn.Conv2d(3, 8, 3, { padding = "same", dilation = 2, padding_mode = "reflect" }),
        "Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), padding=same, dilation=(2, 2), padding_mode=reflect)" },
      { nn.Conv1d(3, 4, 3, { stride = 2, padding = 1 }), "Conv1d(3, 4, kernel_size=(3,), stride=(2,), padding=(1,))" },
      { nn.MaxPool2d(3, { stride = 2, padding = 1 }), "MaxPool2d(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=False)" },
      { nn.AvgPool2d({ 2, 2 }), "AvgPool2d(kernel_size=(2, 2), stride=(2, 2), padding=0)" },
      { nn.AdaptiveAvgPool2d({ 1, 1 }), "AdaptiveAvgPool2d(output_size=(1, 1))" },
      { nn.AdaptiveAvgPool2d(1), "AdaptiveAvgPool2d(output_size=1)" },
      { nn.Linear(3, 4), "Linear(in_features=3, out_features=4, bias=True)" },
      { nn.Flatten(1, 2), "Flatten(start_dim=1, end_dim=2)" },
      { nn.LogSoftmax(2), "LogSoftmax(dim=2)" },
      { nn.Softmax(), "Softmax(dim=None)" },
      { nn.Dropout(0.2), "Dropout(p=0.2, inplace=False)" },
      { nn.LayerNorm(4), "LayerNorm((4,), eps=1e-05, elementwise_affine=True, bias=True)" },
      { nn.Unflatten(2, { 2, 5 }), "Unflatten(dim=2, unflattened_size=(2, 5))" },
      { nn.ConstantPad1d(2, 3.5), "ConstantPad1d(padding=(2, 2), value=3.5)" },
      { nn.ZeroPad2d(1), "ZeroPad2d((1, 1, 1, 1))" },
      { nn.Hardtanh({ inplace = true }), "Hardtanh(min_val=-1.0, max_val=1.0, inplace=True)" },
      { nn.LSTM(28, 64, { batch_first = true, bias = false }), "LSTM(28, 64, bias=False, batch_first=True)" },
    }) do
      assert.are.equal(case[2], tostring(case[1]))
    end
  end)
end)

describe("sampling grids and the last of the ports' functions", function()
  local F = nn.functional
  local theta = wick.tensor({ { { 0.9, 0.2, 0.1 }, { -0.1, 1.1, -0.2 } }, { { 1.0, 0.0, 0.3 }, { 0.0, 0.8, 0.0 } } }, F64)
  local x = wick.arange(2 * 3 * 5 * 6, F64):reshape(2, 3, 5, 6):sin()

  it("F.affine_grid and F.grid_sample give PyTorch's values and gradients", function()
    -- (sum of outputs, sum of input's gradient, sum of |grid's gradient|) of (y * y):sum() from PyTorch 2.15
    local want = {
      [false] = { bilinear = { zeros = { 1.724369084, 5.349385563, 125.142416 }, border = { -7.533679409, -15.067358818, 94.436691 } },
        nearest = { zeros = { -3.356886696, -6.713773391 }, border = { -12.774194608, -25.548389216 } } },
      [true] = { bilinear = { zeros = { 1.905894915, 6.238156938, 141.687263 }, border = { -5.844442189, -11.688884378, 80.188354 } },
        nearest = { zeros = { 6.023448826, 12.046897651 }, border = { -5.384492629, -10.768985258 } } },
    }
    for _, ac in ipairs({ false, true }) do
      local g = F.affine_grid(theta, { 2, 3, 4, 7 }, { align_corners = ac })
      assert.are.same({ 2, 4, 7, 2 }, g:size())
      assert.is_true(math.abs(g:sum():item() - 5.6) < 1e-12)
      for mode, pads in pairs(want[ac]) do
        for pad, w in pairs(pads) do
          local xx, gg = x:clone():requires_grad_(), (g * 1.3):clone():requires_grad_()
          local y = F.grid_sample(xx, gg, { mode = mode, padding_mode = pad, align_corners = ac })
          local loss = (y * y):sum()
          loss:backward()
          assert.is_true(math.abs(y:sum():item() - w[1]) < 1e-8, mode .. " " .. pad)
          assert.is_true(math.abs(xx.grad:sum():item() - w[2]) < 1e-8, mode .. " " .. pad)
          if w[3] then assert.is_true(math.abs(gg.grad:abs():sum():item() - w[3]) < 1e-5, mode .. " " .. pad) end
        end
      end
    end
    -- the identity map reads the input back
    local id = wick.tensor({ { { 1, 0, 0 }, { 0, 1, 0 } } }, F64):expand(2, 2, 3)
    local same = F.grid_sample(x, F.affine_grid(id, x:size(), { align_corners = false }), { align_corners = false })
    assert.is_true((same - x):abs():max():item() < 1e-12)
    assert_error_has(function() F.affine_grid(theta, { 2, 3, 4 }) end, "affine_grid only supports 4D and 5D sizes")
    assert_error_has(function() F.affine_grid(theta, { 3, 3, 4, 4 }) end, "Nx2x3")
    assert_error_has(function() F.grid_sample(x, wick.zeros(2, 4, 4, 3)) end, "grid of shape (N, H_out, W_out, 2)")
    assert_error_has(function() F.grid_sample(x, wick.zeros(2, 4, 4, 2, F64), { mode = "cubic" }) end, "mode")
  end)

  it("nn.utils.clip_grad_value_ clamps every gradient", function()
    local a, b = wick.tensor({ 1, 2 }, F64):requires_grad_(), wick.tensor({ 3 }, F64):requires_grad_()
    local loss = (a * wick.tensor({ 5, -0.5 }, F64)):sum() + (b * -7):sum()
    loss:backward()
    nn.utils.clip_grad_value_({ a, b }, 1)
    assert.are.same({ 1, -0.5 }, a.grad:totable())
    assert.are.same({ -1 }, b.grad:totable())
  end)

  it("F.softmax and F.log_softmax without a dim pick PyTorch's, with its warning", function()
    local m = wick.tensor({ { 1, 2 }, { 3, 5 } }, F64)
    local warned = warnings_of(function()
      assert.is_true(F.log_softmax(m):equal(m:log_softmax(2)))
      assert.is_true(F.softmax(wick.tensor({ 1, 2 }, F64)):equal(wick.tensor({ 1, 2 }, F64):softmax(1)))
    end)
    assert.truthy(table.concat(warned, "\n"):find("Implicit dimension choice for log_softmax", 1, true))
  end)
end)

describe("more of torch.nn's layers (PyTorch's values)", function()
  local F = wick.nn.functional
  local nn = wick.nn
  it("SELU, CELU, softshrink, hardshrink, softmin, rms_norm, local_response_norm: values and gradients", function()
    local w = wick.arange(7, { dtype = "float64" })
    local cases = {
      { F.selu, 22.038387241870, 46.750492993559 },
      { function(v) return F.celu(v, 2.0) end, 21.555893225126, 43.886277079889 },
      { F.softshrink, 15, 30 }, { F.hardshrink, 20, 40 },
      { function(v) return F.softmin(v, 1) end, 0.490663943120, 0.549560173534 },
      { function(v) return F.rms_norm(v:view(1, 7), { 7 }) end, 13.301370696118, 0 },
      { function(v) return F.local_response_norm(v:view(1, 7, 1), 3) end, 21.296141994480, 42.569143692306 },
    }
    for _, c in ipairs(cases) do
      local x = wick.tensor({ -3, -1, -0.3, 0.1, 0.4, 1.2, 2.5 }, { dtype = "float64" }):requires_grad_()
      local y = c[1](x)
      local g = wick.autograd.grad(y:pow(2):sum(), x)[1]
      assert.is_true(math.abs((y:detach():flatten() * w):sum():item() - c[2]) < 1e-9)
      assert.is_true(math.abs((g * w):sum():item() - c[3]) < 1e-9)
    end
  end)
  it("the modules: pooling 1-D, RMSNorm, ChannelShuffle, Softmax2d, SELU and friends", function()
    local x = wick.randn(2, 4, 6)
    assert.are.same({ 2, 4, 3 }, nn.MaxPool1d(2)(x):size())
    assert.are.same({ 2, 4, 6 }, nn.AvgPool1d(3, 1, 1)(x):size())
    assert_close(nn.RMSNorm(6)(x), F.rms_norm(x, { 6 }):totable(), 1e-6)
    -- bfloat16 / float16 as PyTorch's (nanochat's norm): in float32, float32's eps, one rounding at the end
    for _, low in ipairs({ "bfloat16", "float16" }) do
      local xl, wl = x:to(low), wick.randn(6):to(low)
      local want = F.rms_norm(xl:float(), { 6 }, wl:float()):to(low)
      assert.are.equal(0, (F.rms_norm(xl, { 6 }, wl):float() - want:float()):abs():max():item())
      -- (with the low dtype's own eps, 0.11 in bfloat16 and 0.30 in float16)
      assert.is_true(math.abs(F.rms_norm(wick.full({ 1, 4 }, 0.01, { dtype = low }), { 4 })[1][1]:item() - 1) < 1e-3)
    end
    assert.are.same({ 0, 2, 1, 3 }, nn.ChannelShuffle(2)(wick.arange(4):view(1, 4, 1)):flatten():totable())
    assert.is_true(math.abs(nn.Softmax2d()(wick.randn(1, 3, 2, 2)):sum(2)[1][1][1]:item() - 1) < 1e-6)
    assert.are.equal("CELU(alpha=2.0, inplace=True)", tostring(nn.CELU(2.0, true)))
    assert.are.equal("Softshrink(0.3)", tostring(nn.Softshrink(0.3))) -- (PyTorch's repr)
    assert_error_has(function() nn.ChannelShuffle(3)(wick.zeros(1, 4, 1)) end, "divisible by groups")
  end)
end)

describe("the 1-D forms' errors", function()
  it("name the 1-D op the user called", function()
    local F = wick.nn.functional
    assert_error_has(function() F.max_pool1d(wick.randn(1, 2, 5), 9) end, "max_pool1d (as max_pool2d):")
    assert_error_has(function() F.conv1d(wick.randn(1, 2, 5), wick.randn(3, 3, 2)) end,
      "conv1d: Given groups=1, weight of size [3, 3, 2], expected input[1, 2, 5] to have 3 channels")
    assert_error_has(function() F.conv1d(wick.randn(1, 2, 5), wick.randn(3, 2, 2), nil, { padding = -1 }) end, "conv1d (as conv2d):")
  end)
end)

describe("nn.init: dirac_, sparse_, keywords", function()
  it("dirac_ is the identity convolution; sparse_ zeroes ceil(sparsity rows) per column", function()
    local w = wick.empty(4, 2, 3, 3, F64)
    nn.init.dirac_(w)
    local x = wick.randn(1, 2, 5, 5, F64)
    local y = nn.functional.conv2d(x, w, nil, { padding = 1 })
    assert_close(y[{ {}, { 1, 2 } }], x:totable(), 1e-15)
    assert_close(y[{ {}, { 3, 4 } }], wick.zeros(1, 2, 5, 5):totable(), 0)
    local s = wick.empty(10, 4)
    nn.init.sparse_(s, 0.3, 0.5)
    for c = 1, 4 do assert.are.equal(3, s[{ {}, c }]:eq(0):sum():item()) end
    assert_error_has(function() nn.init.dirac_(wick.empty(3, 3)) end, "3, 4, or 5 dimensions")
    assert.are.equal(7, nn.init.constant_(wick.empty(2), { val = 7 })[1]:item())
    assert_close(nn.init.calculate_gain("leaky_relu", { param = 0.2 }), math.sqrt(2 / 1.04), 1e-15)
  end)
end)

describe("activations far from 0 and at their kinks", function()
  it("softplus, logsigmoid, mish and ELU keep tiny values (log1p, expm1); softplus and prelu kinks as PyTorch", function()
    local F = nn.functional
    local sp = F.softplus(wick.tensor({ -40, -100 }, F64)):totable()
    assert_close(sp, { math.exp(-40), math.exp(-100) }, 1e-12)
    assert_close(F.logsigmoid(wick.tensor({ 40 }))[1]:item(), -math.exp(-40), 1e-5)
    assert_close(F.elu(wick.tensor({ -1e-8 }))[1]:item(), -1e-8, 1e-6)
    local x = wick.tensor({ 19.9, 20, 20.1 }):requires_grad_(true)
    F.softplus(x):sum():backward()
    assert_close(x.grad, { 1, 1, 1 }, 1e-7)
    local p = wick.tensor({ -1, 0, 1 }):requires_grad_(true)
    F.prelu(p, wick.tensor({ 0.25 })):sum():backward()
    assert_close(p.grad, { 0.25, 0.25, 1 }, 0)
  end)
end)

describe("small forms the ported programs wrote", function()
  it("repeat_interleave(counts), clip_grad_norm with 'inf' and its old name, EmbeddingBag's keyword options", function()
    assert.are.same({ 1, 1, 3, 3, 3 }, wick.repeat_interleave(wick.tensor({ 2, 0, 3 }, { dtype = "int64" })):totable())
    local p = nn.Parameter(wick.ones(2))
    p.grad = wick.tensor({ 3, -4 })
    assert.are.equal(4, nn.utils.clip_grad_norm_({ p }, 100, "inf"):item())
    assert_close(nn.utils.clip_grad_norm({ p }, 100):item(), 5, 1e-6)
    -- a NaN total norm scales every gradient by NaN, as PyTorch's (no error_if_nonfinite)
    local a, b = nn.Parameter(wick.zeros(2)), nn.Parameter(wick.zeros(2))
    a.grad, b.grad = wick.tensor({ 0 / 0, 1 }), wick.tensor({ 10, 10 })
    nn.utils.clip_grad_norm_({ a, b }, 1)
    for _, v in ipairs(b.grad:totable()) do assert.is_true(v ~= v) end
    local E = nn.EmbeddingBag(10, 3, { mode = "sum" })
    local idx, off = wick.tensor({ 1, 2, 3, 4 }, { dtype = "int64" }), wick.tensor({ 1, 3 }, { dtype = "int64" })
    local plain = E(idx, off)
    assert_close(E(idx, off, {}), plain:totable(), 0)
    assert_close(E(idx, { offsets = off }), plain:totable(), 0)
  end)
end)
