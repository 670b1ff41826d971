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
local function run(cfg, mutate)
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
    out, hidden = m(x, hx, cfg.lengths and { lengths = cfg.lengths } or nil)
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
