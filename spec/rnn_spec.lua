-- The recurrent layers and cells (lua/wick/nn/recurrent.lua over the fused
-- C op wick_rnn_layer, src/core/rnn.c) against PyTorch: outputs, final states
-- and the gradients of the input, the initial states and every parameter
-- (spec/fixtures/ref_rnn.lua, written by tools/reference/rnn.py), in float64
-- and float32; variable lengths against PyTorch's packed sequences.
local wick = require("wick")
local nn = wick.nn
local support = require("spec.support")

local REF = support.reference("rnn")
local TOL = { float64 = 1e-10, float32 = 2e-5 }

local function assert_tensor(actual, expected, tol, what)
  assert(actual ~= nil, what .. ": missing")
  assert.are.same(expected.shape, actual:size(), what .. ": shape")
  local ok, why = support.close(support.values_of(actual:double()), { unpack(expected) }, tol, what)
  assert(ok, why)
end

-- the module a case describes, its parameters from the shared formula
local function build(cfg)
  local opts = { bias = cfg.bias, nonlinearity = cfg.nonlinearity }
  if not cfg.kind:match("Cell$") then
    opts.num_layers, opts.batch_first, opts.bidirectional = cfg.num_layers, cfg.batch_first, cfg.bidirectional
  end
  local m = nn[cfg.kind](cfg.input_size, cfg.hidden_size, opts):to(cfg.dtype)
  return support.fill_parameters(m)
end

local function state_shape(cfg, m)
  if cfg.kind:match("Cell$") then
    return #cfg.x_shape == 1 and { cfg.hidden_size } or { cfg.x_shape[1], cfg.hidden_size }
  end
  local dirs = m.bidirectional and 2 or 1
  if #cfg.x_shape == 2 then return { dirs * m.num_layers, cfg.hidden_size } end
  return { dirs * m.num_layers, m.batch_first and cfg.x_shape[1] or cfg.x_shape[2], cfg.hidden_size }
end

-- runs a case like tools/reference/rnn.py: forward, the weighted loss, backward
-- (packed: the lengths go through nn.utils.rnn's pack_padded_sequence and
-- pad_packed_sequence instead of the lengths option)
local function run(cfg, mutate, packed)
  local m = build(cfg)
  if mutate then mutate(m) end
  local o = { dtype = cfg.dtype }
  local lstm = cfg.kind:match("^LSTM") ~= nil
  local x = support.inputs(cfg.x_shape, o):requires_grad_()
  local hs = state_shape(cfg, m)
  local h0, c0, hx
  if cfg.h0 then
    h0 = support.formula(hs, 77, o):requires_grad_()
    if lstm then c0 = support.formula(hs, 78, o):requires_grad_() end
    hx = lstm and { h0, c0 } or h0
  end
  local out, h, c
  if cfg.kind:match("Cell$") then
    local r = m(x, hx)
    if lstm then h, c = r[1], r[2] else h = r end
  else
    local hidden
    if packed then
      local R = nn.utils.rnn
      local T = x:size(m.batch_first and 2 or 1)
      out, hidden = m(R.pack_padded_sequence(x, cfg.lengths, m.batch_first, false), hx)
      out = R.pad_packed_sequence(out, { batch_first = m.batch_first, total_length = T })
    else
      out, hidden = m(x, hx, cfg.lengths and { lengths = cfg.lengths } or nil)
    end
    if lstm then h, c = hidden[1], hidden[2] else h = hidden end
  end
  local loss = (h * support.formula(h:size(), 91, o)):sum()
  if out then loss = loss + (out * support.formula(out:size(), 90, o)):sum() end
  if c then loss = loss + (c * support.formula(c:size(), 92, o)):sum() end
  loss:backward()
  return { m = m, x = x, h0 = h0, c0 = c0, out = out, h = h, c = c }
end

local function check_case(ref, r, tol)
  local names = {}
  for k in r.m:named_parameters() do names[#names + 1] = k end
  assert.are.same(ref.names, names)
  if ref.out then assert_tensor(r.out, ref.out, tol, "output") end
  assert_tensor(r.h, ref.h, tol, "h")
  if ref.c then assert_tensor(r.c, ref.c, tol, "c") end
  assert_tensor(r.x.grad, ref.grad_x, tol, "input's gradient")
  if ref.grad_h0 then assert_tensor(r.h0.grad, ref.grad_h0, tol, "h0's gradient") end
  if ref.grad_c0 then assert_tensor(r.c0.grad, ref.grad_c0, tol, "c0's gradient") end
  for name, p in r.m:named_parameters() do assert_tensor(p.grad, ref.grads[name], tol, name .. "'s gradient") end
end

describe("recurrent layers and cells against PyTorch", function()
  local names = {}
  for name in pairs(REF) do names[#names + 1] = name end
  table.sort(names)
  for _, name in ipairs(names) do
    local ref = REF[name]
    it(name, function() check_case(ref, run(ref.config), TOL[ref.config.dtype]) end)
    if ref.config.lengths then
      it(name .. " through pack_padded_sequence", function()
        check_case(ref, run(ref.config, nil, true), TOL[ref.config.dtype])
      end)
    end
  end

  -- the fixtures must tell a wrong gate order apart, and it must still look like a working layer
  local function swap_gates(m, suffix, a, b)
    wick.no_grad(function()
      for _, kind in ipairs({ "weight_ih", "weight_hh", "bias_ih", "bias_hh" }) do
        local p = m[kind .. suffix]
        if p then
          local H = m.hidden_size
          local ga, gb = p:narrow(1, (a - 1) * H + 1, H):clone(), p:narrow(1, (b - 1) * H + 1, H):clone()
          p:narrow(1, (a - 1) * H + 1, H):copy_(gb)
          p:narrow(1, (b - 1) * H + 1, H):copy_(ga)
        end
      end
    end)
  end
  for _, c in ipairs({ { "lstm_1_f64", "_l0", 1, 2 }, { "lstm_1_f64", "_l0", 3, 4 }, { "gru_bf_f64", "_l0", 1, 2 },
    { "lstmcell_h0_f64", "", 2, 4 }, { "grucell_h0_f64", "", 1, 3 } }) do
    it(("%s with gates %d and %d swapped fails the comparison"):format(c[1], c[3], c[4]), function()
      local ref = REF[c[1]]
      -- a layer whose weights are stored in another gate order computes another function
      local r = run(ref.config, function(m) swap_gates(m, c[2], c[3], c[4]) end)
      assert.has_error(function() check_case(ref, r, 1e-6) end)
    end)
  end
end)

describe("recurrent layers: lengths, devices, dtypes and errors", function()
  local F64 = { dtype = "float64" }

  it("lengths: a table, a number (unbatched) or an int64 tensor give the same, and rows past their length are 0", function()
    local m = nn.GRU(3, 4, { bidirectional = true }):double()
    local x = wick.randn(5, 2, 3, F64)
    local a, ha = m(x, nil, { lengths = { 5, 3 } })
    local b, hb = m(x, { lengths = wick.tensor({ 5, 3 }) })
    assert.are.same(support.values_of(a), support.values_of(b))
    assert.are.same(support.values_of(ha), support.values_of(hb))
    assert.are.same({ 2, 8 }, a:narrow(1, 4, 2):select(2, 2):size())
    for _, v in ipairs(support.values_of(a:narrow(1, 4, 2):select(2, 2))) do assert.are.equal(0, v) end
    -- the row of length 3 is what the layer gives on its first 3 steps alone
    local c, hc = m(x:narrow(1, 1, 3):narrow(2, 2, 1))
    support.assert_close(support.values_of(a:narrow(1, 1, 3):narrow(2, 2, 1)), support.values_of(c), 1e-12)
    support.assert_close(support.values_of(ha:narrow(2, 2, 1)), support.values_of(hc), 1e-12)
    local u = m(x:select(2, 2), nil, { lengths = 3 })
    support.assert_close(support.values_of(u), support.values_of(a:select(2, 2)), 1e-12)
  end)

  it("refuses bad lengths and unknown options", function()
    local m = nn.LSTM(3, 4):double()
    local x = wick.randn(5, 2, 3, F64)
    support.assert_error_has(function() m(x, nil, { lengths = { 5 } }) end, "one entry per sequence (2)")
    support.assert_error_has(function() m(x, nil, { lengths = { 5, 6 } }) end, "lengths[2] = 6 is outside [0, 5]")
    support.assert_error_has(function() m(x, nil, { lengths = { 5, -1 } }) end, "lengths[2]")
    support.assert_error_has(function() m(x, nil, { lengths = { 5, 2.5 } }) end, "lengths[2]")
    support.assert_error_has(function() m(x, nil, { length = { 5, 2 } }) end, "unknown option 'length'")
  end)

  it("the fused op checks its operands", function()
    local core = wick._core
    local gi, h, w = wick.zeros(5, 2, 16, F64), wick.zeros(2, 4, F64), wick.zeros(16, 4, F64)
    support.assert_error_has(function() core.rnn_layer("LSTM", gi, h, nil, w) end, "an LSTM needs c0")
    support.assert_error_has(function() core.rnn_layer("GRU", gi, h, nil, w) end, "needs 3 * 4 = 12 input projections, got 16")
    support.assert_error_has(function() core.rnn_layer("LSTM", gi, wick.zeros(3, 4, F64), h, w) end,
      "expected hx of shape [2, 4], got [3, 4]")
    support.assert_error_has(function() core.rnn_layer("LSTM", gi, h, h, w:float()) end, "expected weight_hh of dtype float64")
    support.assert_error_has(function() core.rnn_layer("LSTM", gi:long(), h, h, w) end, "expected float32 or float64")
    support.assert_error_has(function() core.rnn_layer("LSTM", gi, h, h, w, nil, wick.tensor({ 1, 9 }, { dtype = "int64" })) end,
      "lengths[2] = 9 is outside [0, 5]")
    support.assert_error_has(function() core.rnn_layer("TANH", gi, h, nil, w) end, "invalid mode 'TANH'")
  end)

  it("an empty sequence gives no outputs and the initial state", function()
    local m = nn.LSTM(3, 4):double()
    local h0, c0 = wick.randn(1, 2, 4, F64), wick.randn(1, 2, 4, F64)
    local out, hc = m(wick.zeros(0, 2, 3, F64), { h0, c0 })
    assert.are.same({ 0, 2, 4 }, out:size())
    assert.are.same(support.values_of(h0), support.values_of(hc[1]))
    assert.are.same(support.values_of(c0), support.values_of(hc[2]))
  end)

  it("runs on meta (shapes only)", function()
    local m = nn.LSTM(3, 4, 2, { bidirectional = true, device = "meta" })
    local out, hc = m(wick.zeros(5, 2, 3, { device = "meta" }))
    assert.are.same({ 5, 2, 8 }, out:size())
    assert.are.same({ 4, 2, 4 }, hc[1]:size())
    assert.are.equal("meta", tostring(out.device))
  end)

  it("float16 and bfloat16 run in float32", function()
    local m = nn.LSTM(3, 4)
    local x = wick.randn(5, 2, 3)
    local ref = m(x)
    for _, dt in ipairs({ "float16", "bfloat16" }) do
      local mh = nn.LSTM(3, 4):to(dt)
      mh:load_state_dict(m:state_dict())
      local out = mh(x:to(dt))
      assert.are.equal(dt, tostring(out.dtype))
      support.assert_close(support.values_of(out:float()), support.values_of(ref), 2e-2)
    end
  end)

  it("dropout between layers in training mode only", function()
    wick.manual_seed(1)
    local m = nn.LSTM(3, 4, 2, { dropout = 0.5 }):double()
    local x = wick.randn(5, 2, 3, F64)
    m:eval()
    local e1, e2 = m(x), m(x)
    assert.are.same(support.values_of(e1), support.values_of(e2))
    m:train()
    local t1 = m(x)
    assert.are_not.same(support.values_of(e1), support.values_of(t1))
  end)

  it("a weight changed in place after the forward makes the backward fail", function()
    local m = nn.GRU(3, 4):double()
    local out = m(wick.randn(5, 2, 3, F64))
    wick.no_grad(function() m.weight_hh_l0:mul_(2) end)
    support.assert_error_has(function() out:sum():backward() end, "modified by an inplace operation")
  end)

  it("cells check their inputs and print like PyTorch's", function()
    local c = nn.LSTMCell(3, 4)
    support.assert_error_has(function() c(wick.randn(2, 5)) end, "input has inconsistent input_size: got 5 expected 3")
    support.assert_error_has(function() c(wick.randn(2, 3), wick.randn(2, 4)) end, "a {h, c} table")
    support.assert_error_has(function() nn.GRUCell(3, 4)(wick.randn(2, 3), wick.randn(2, 5)) end,
      "hx has inconsistent hidden_size: got 5, expected 4")
    support.assert_error_has(function() nn.RNNCell(3, 4)(wick.randn(2, 3), wick.randn(3, 4)) end,
      "Input batch size 2 doesn't match hx batch size 3")
    assert.are.equal("RNNCell(3, 4, bias=False, nonlinearity=relu)", tostring(nn.RNNCell(3, 4, false, "relu")))
    assert.are.equal("LSTM(3, 4, num_layers=2, dropout=0.5)", tostring(nn.LSTM(3, 4, 2, { dropout = 0.5 })))
    assert.are.equal("GRUCell", getmetatable(nn.GRUCell(3, 4)).__name)
  end)

  it("the Python habit h, c = cell(x, (h, c)) gets a hint; dtype errors name the module", function()
    local cell = nn.LSTMCell(1, 4)
    local h, c = wick.zeros(2, 4), wick.zeros(2, 4)
    h, c = cell(wick.randn(2, 1), { h, c }) -- h is {h, c}, c nil
    support.assert_error_has(function() cell(wick.randn(2, 1), { h, c }) end,
      "LSTMCell: expected a tensor for argument 'hx[1]', got table (LSTMCell returns {h, c}: write local hc = cell(x, hc)")
    local hc = cell(wick.randn(2, 1), { wick.zeros(2, 4), wick.zeros(2, 4) })
    assert.are.same({ 2, 4 }, hc[1]:size())
    local lstm = nn.LSTM(1, 4)
    local _, state = lstm(wick.randn(3, 2, 1))
    support.assert_error_has(function() lstm(wick.randn(3, 2, 1), { state, nil }) end,
      "LSTM returns output, {h, c}: write local out, hc = lstm(x, hc)")
    local F64 = { dtype = "float64" }
    support.assert_error_has(function()
      nn.LSTMCell(1, 4):double()(wick.randn(2, 1, F64), { wick.zeros(2, 4), wick.zeros(2, 4) })
    end, "LSTMCell: expected the hidden state of dtype float64 (the input's), got float32")
    support.assert_error_has(function() nn.GRU(1, 4):double()(wick.randn(3, 2, 1, F64), wick.zeros(1, 2, 4)) end,
      "GRU: expected the hidden state of dtype float64 (the input's), got float32")
    support.assert_error_has(function() nn.RNNCell(1, 4)(wick.randn(2, 1), wick.zeros(2, 4, F64)) end,
      "RNNCell: expected the hidden state of dtype float32")
  end)
end)

describe("the recurrent time loop", function()
  it("gives the same states run at once (W_hh copied transposed) and one step at a time (read in place)", function()
    wick.manual_seed(7)
    for _, kind in ipairs({ "LSTM", "GRU", "RNN" }) do
      local m = wick.nn[kind](3, 5):double()
      local x = wick.randn(12, 2, 3, { dtype = "float64" })
      local whole, hw = m(x)
      local h, outs = nil, {}
      for t = 1, 12 do
        local o
        o, h = m(x[{ { t, t } }], h)
        outs[t] = o
      end
      assert.is_true((wick.cat(outs, 1) - whole):abs():max():item() < 1e-12, kind)
      local last = kind == "LSTM" and h[1] or h
      local last_whole = kind == "LSTM" and hw[1] or hw
      assert.is_true((last - last_whole):abs():max():item() < 1e-12, kind)
    end
  end)
end)


describe("an LSTM's state given as two arguments", function()
  it("is an error that shows the one-table form", function()
    local lstm = wick.nn.LSTM(3, 4)
    local x, h0 = wick.randn(5, 2, 3), wick.zeros(1, 2, 4)
    local ok, err = pcall(function() return lstm(x, h0, h0) end)
    assert.is_false(ok)
    assert.is_truthy(tostring(err):find("{h0, c0}", 1, true))
    assert.is_truthy(select(2, pcall(function() return wick.zeros(0, 3):median(1) end)):find("non-zero size", 1, true))
  end)
end)
