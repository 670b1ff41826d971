-- The attention blocks (lua/wick/nn/attention.lua) against PyTorch: every case
-- of tools/reference/attention.py (spec/fixtures/ref_attention.lua) repeated
-- here with the same constructor arguments, weights (formula), inputs and
-- forward call; outputs, attention weights and the gradients of every input
-- and parameter compared, float64 and float32. Then parameter names, cloning,
-- masks, modes, errors, and the other devices against the CPU.
local wick = require("wick")
local support = require("spec.support")
local nn = wick.nn
local assert_error_has, shape_of = support.assert_error_has, support.shape_of

local ref = support.reference("attention")
local TOL = { float64 = 1e-10, float32 = 3e-5 }
local L, S, N, E, FF = 3, 4, 2, 8, 16

-- input j: formula(shape, 30 + j), a leaf that requires grad
local function x(shape, j, dtype)
  return support.formula(shape, 30 + j, { dtype = dtype }):detach():requires_grad_(true)
end
local function bool_mask(rows) return wick.tensor(rows, { dtype = "bool" }) end
local function causal(n, dtype) return nn.Transformer.generate_square_subsequent_mask(n, { dtype = dtype }) end

local KPM = { { false, false, false, true }, { false, false, true, true } }
local AM_BOOL = { { false, true, false, false }, { false, false, true, true }, { true, false, false, true } }

-- each case: dtype -> module, inputs, call(module, inputs...) (as in attention.py)
local CASES = {}
local function mha(opts) return nn.MultiheadAttention(E, 2, 0.0, opts) end
local function enc_layer(opts) return nn.TransformerEncoderLayer(E, 2, FF, 0.0, opts) end
local function dec_layer(opts) return nn.TransformerDecoderLayer(E, 2, FF, 0.0, opts) end

function CASES.mha_self(d)
  return mha(), { x({ L, N, E }, 0, d) }, function(m, q) return m(q, q, q) end
end
function CASES.mha_cross_masks(d)
  return mha(), { x({ L, N, E }, 0, d), x({ S, N, E }, 1, d), x({ S, N, E }, 2, d) }, function(m, q, k, v)
    return m(q, k, v, { key_padding_mask = bool_mask(KPM), attn_mask = bool_mask(AM_BOOL), average_attn_weights = false })
  end
end
function CASES.mha_kv_float_mask(d)
  return mha(), { x({ L, N, E }, 0, d), x({ S, N, E }, 1, d) }, function(m, q, k)
    return m(q, k, k, { attn_mask = support.formula({ L, S }, 40, { dtype = d }), need_weights = false })
  end
end
function CASES.mha_batch_first(d)
  return mha({ batch_first = true, bias = false }), { x({ N, L, E }, 0, d), x({ N, S, E }, 1, d), x({ N, S, E }, 2, d) },
    function(m, q, k, v)
      return m(q, k, v, { attn_mask = support.formula({ N * 2, L, S }, 41, { dtype = d }),
        key_padding_mask = bool_mask(KPM), need_weights = false })
    end
end
function CASES.mha_kdim_bias_kv(d)
  local m = nn.MultiheadAttention(E, 4, { kdim = 5, vdim = 6, add_bias_kv = true, add_zero_attn = true })
  return m, { x({ L, N, E }, 0, d), x({ S, N, 5 }, 1, d), x({ S, N, 6 }, 2, d) }, function(mod, q, k, v)
    return mod(q, k, v, { key_padding_mask = bool_mask(KPM), attn_mask = support.formula({ L, S }, 40, { dtype = d }) })
  end
end
function CASES.mha_unbatched(d)
  return mha(), { x({ L, E }, 0, d), x({ S, E }, 1, d) }, function(m, q, k)
    return m(q, k, k, { key_padding_mask = bool_mask(KPM[2]), attn_mask = support.formula({ L, S }, 40, { dtype = d }) })
  end
end
function CASES.mha_causal(d)
  return mha(), { x({ S, N, E }, 0, d) }, function(m, q)
    return m(q, q, q, { attn_mask = causal(S, d), is_causal = true, need_weights = false })
  end
end
function CASES.enc_layer(d)
  return enc_layer(), { x({ S, N, E }, 0, d) }, function(m, s) return m(s) end
end
function CASES.enc_layer_masks(d)
  return enc_layer(), { x({ S, N, E }, 0, d) }, function(m, s)
    return m(s, { src_mask = causal(S, d), src_key_padding_mask = bool_mask(KPM) })
  end
end
function CASES.enc_layer_gelu_norm_first(d)
  local m = enc_layer({ activation = "gelu", norm_first = true, batch_first = true, layer_norm_eps = 1e-3 })
  return m, { x({ N, S, E }, 0, d) }, function(mod, s) return mod(s, { src_key_padding_mask = bool_mask(KPM) }) end
end
function CASES.enc_layer_causal(d)
  return enc_layer(), { x({ S, N, E }, 0, d) }, function(m, s) return m(s, causal(S, d), nil, true) end
end
function CASES.enc_layer_no_bias(d)
  return enc_layer({ bias = false }), { x({ S, N, E }, 0, d) }, function(m, s)
    return m(s, { src_key_padding_mask = support.formula({ N, S }, 42, { dtype = d }) })
  end
end
function CASES.mha_causal_weights(d)
  return mha(), { x({ S, N, E }, 0, d) }, function(m, q)
    return m(q, q, q, { attn_mask = causal(S, d), is_causal = true })
  end
end
function CASES.encoder(d)
  return nn.TransformerEncoder(enc_layer(), 2, { enable_nested_tensor = false }), { x({ S, N, E }, 0, d) },
    function(m, s) return m(s, { mask = causal(S, d) }) end
end
function CASES.encoder_norm(d)
  local m = nn.TransformerEncoder(enc_layer({ batch_first = true, norm_first = true }), 3, nn.LayerNorm(E))
  return m, { x({ N, S, E }, 0, d) }, function(mod, s) return mod(s, { src_key_padding_mask = bool_mask(KPM) }) end
end
function CASES.dec_layer(d)
  return dec_layer(), { x({ L, N, E }, 0, d), x({ S, N, E }, 1, d) }, function(m, t, mem)
    return m(t, mem, { tgt_mask = causal(L, d), memory_key_padding_mask = bool_mask(KPM) })
  end
end
function CASES.dec_layer_gelu_norm_first(d)
  local m = dec_layer({ activation = "gelu", norm_first = true, batch_first = true })
  return m, { x({ N, L, E }, 0, d), x({ N, S, E }, 1, d) }, function(mod, t, mem)
    return mod(t, mem, { memory_mask = bool_mask(AM_BOOL), tgt_is_causal = true, tgt_mask = causal(L, d) })
  end
end
function CASES.decoder(d)
  return nn.TransformerDecoder(dec_layer(), 2, nn.LayerNorm(E)), { x({ L, N, E }, 0, d), x({ S, N, E }, 1, d) },
    function(m, t, mem) return m(t, mem, { tgt_mask = causal(L, d), memory_key_padding_mask = bool_mask(KPM) }) end
end
function CASES.transformer(d)
  return nn.Transformer(E, 2, 2, 1, FF, 0.0), { x({ S, N, E }, 0, d), x({ L, N, E }, 1, d) }, function(m, s, t)
    return m(s, t, { tgt_mask = causal(L, d), src_key_padding_mask = bool_mask(KPM),
      memory_key_padding_mask = bool_mask(KPM) })
  end
end

-- PyTorch's 0-based child names (layers.0.) as wick's 1-based ones (layers.1.)
local function lua_name(name)
  return (name:gsub("%.(%d+)%.", function(i) return "." .. (tonumber(i) + 1) .. "." end))
end

-- builds the case, fills its parameters like PyTorch's side, runs forward and
-- backward; returns module, inputs, out, weights
local function run(name, dtype, call_override)
  local m, inputs, call = CASES[name](dtype)
  m:to(dtype)
  support.fill_parameters(m)
  local out, w = (call_override or call)(m, unpack(inputs))
  local loss = (out * support.formula(out:size(), 50, { dtype = dtype })):sum()
  if w then loss = loss + (w * support.formula(w:size(), 51, { dtype = dtype })):sum() end
  loss:backward()
  return m, inputs, out, w
end

local function check_case(name, dtype)
  local r = ref[dtype][name]
  local m, inputs, out, w = run(name, dtype)
  local names, grads = {}, {}
  for n, p in m:named_parameters() do names[#names + 1], grads[#grads + 1] = n, p.grad end
  local want = {}
  for i, n in ipairs(r.names) do want[i] = lua_name(n) end
  assert.are.same(want, names)
  local tol = TOL[dtype]
  local function close(actual, expected, what)
    assert(actual ~= nil, what .. ": missing")
    assert.are.equal(dtype, actual.dtype, what .. ": dtype")
    local ok, why = support.close(actual, support.ref_tensor(expected):totable(), tol, what)
    assert(ok, why)
  end
  close(out, r.out, "out")
  if r.weights then close(w, r.weights, "weights") else assert.is_nil(w) end
  for i, g in ipairs(r.input_grads) do close(inputs[i].grad, g, "grad of input " .. i) end
  for i, g in ipairs(r.param_grads) do close(grads[i], g, "grad of " .. names[i]) end
end

local ORDER = { "mha_self", "mha_cross_masks", "mha_kv_float_mask", "mha_batch_first", "mha_kdim_bias_kv",
  "mha_unbatched", "mha_causal", "enc_layer", "enc_layer_masks", "enc_layer_gelu_norm_first", "enc_layer_causal",
  "enc_layer_no_bias", "mha_causal_weights", "encoder", "encoder_norm", "dec_layer", "dec_layer_gelu_norm_first",
  "decoder", "transformer" }

describe("attention blocks against PyTorch", function()
  for _, dtype in ipairs({ "float64", "float32" }) do
    for _, name in ipairs(ORDER) do
      if ref[dtype][name] then
        it(name .. " (" .. dtype .. "): outputs, weights, input and parameter gradients", function()
          check_case(name, dtype)
        end)
      end
    end
  end

  it("every reference case is run", function()
    for dtype, cases in pairs(ref) do
      if type(cases) == "table" and dtype:match("^float") then
        for name in pairs(cases) do assert.is_truthy(CASES[name], name) end
      end
    end
  end)

  it("the comparison catches key and value swapped", function()
    local r = ref.float64.mha_cross_masks
    local _, _, out = run("mha_cross_masks", "float64", function(m, q, k, v)
      return m(q, v, k, { key_padding_mask = bool_mask(KPM), attn_mask = bool_mask(AM_BOOL), average_attn_weights = false })
    end)
    assert.is_false((support.close(out, support.ref_tensor(r.out):totable(), 1e-6)))
  end)

  it("the comparison catches an inverted bool mask and a post-norm layer run pre-norm", function()
    local r = ref.float64.mha_cross_masks
    local inverted = {}
    for i, row in ipairs(AM_BOOL) do
      inverted[i] = {}
      for j, v in ipairs(row) do inverted[i][j] = not v end
    end
    local _, _, out = run("mha_cross_masks", "float64", function(m, q, k, v)
      return m(q, k, v, { key_padding_mask = bool_mask(KPM), attn_mask = bool_mask(inverted), average_attn_weights = false })
    end)
    assert.is_false((support.close(out, support.ref_tensor(r.out):totable(), 1e-6)))
    local m, inputs = CASES.enc_layer("float64")
    support.fill_parameters(m:to("float64"))
    m.norm_first = true
    assert.is_false((support.close(m(inputs[1]), support.ref_tensor(ref.float64.enc_layer.out):totable(), 1e-6)))
  end)

  it("generate_square_subsequent_mask matches PyTorch's, also called on a model", function()
    local want = support.ref_tensor(ref.square_subsequent_mask_3):to("float32")
    local got = nn.Transformer.generate_square_subsequent_mask(3)
    assert.are.equal("float32", got.dtype)
    assert.are.same(want:totable(), got:totable())
    local model = nn.Transformer(8, 2, 1, 1, 16)
    assert.are.same(want:totable(), model:generate_square_subsequent_mask(3):totable())
    assert.are.equal("float64", nn.Transformer.generate_square_subsequent_mask(2, nil, "float64").dtype)
  end)
end)

describe("MultiheadAttention", function()
  it("names its parameters like PyTorch, in PyTorch's order", function()
    local m = nn.MultiheadAttention(8, 2)
    assert.are.equal("MultiheadAttention", getmetatable(m).__name)
    local names = {}
    for n, p in m:named_parameters() do names[#names + 1] = n .. ":" .. table.concat(shape_of(p), "x") end
    assert.are.same({ "in_proj_weight:24x8", "in_proj_bias:24", "out_proj.weight:8x8", "out_proj.bias:8" }, names)
    local sep = nn.MultiheadAttention(8, 2, 0, false, true, false, 3, 5)
    names = {}
    for n in sep:named_parameters() do names[#names + 1] = n end
    assert.are.same({ "q_proj_weight", "k_proj_weight", "v_proj_weight", "bias_k", "bias_v", "out_proj.weight" }, names)
    -- PyTorch's init: the biases start at zero
    assert.are.equal(0, m.in_proj_bias:abs():sum():item())
    assert.are.equal(0, m.out_proj.bias:abs():sum():item())
  end)

  it("returns nil weights when need_weights = false, and averages or keeps heads", function()
    local m = nn.MultiheadAttention(8, 2)
    local q = wick.randn({ 3, 2, 8 })
    local out, w = m(q, q, q)
    assert.are.same({ 3, 2, 8 }, shape_of(out))
    assert.are.same({ 2, 3, 3 }, shape_of(w))
    local _, w2 = m(q, q, q, nil, true, nil, false)
    assert.are.same({ 2, 2, 3, 3 }, shape_of(w2))
    local out3, w3 = m(q, q, q, { need_weights = false })
    assert.is_nil(w3)
    support.assert_close(out3, out:totable(), 1e-5)
  end)

  it("applies dropout to the weights in training mode only", function()
    local m = nn.MultiheadAttention(8, 2, 0.5)
    local q = wick.randn({ 5, 2, 8 })
    m:eval()
    local a = m(q, q, q)
    support.assert_close(m(q, q, q), a:totable(), 1e-6)
    m:train()
    assert.is_false((support.close(m(q, q, q, { need_weights = false }), a:totable(), 1e-3)))
  end)

  it("raises clear errors at the caller's line", function()
    assert_error_has(function() nn.MultiheadAttention(10, 3) end, "embed_dim must be divisible by num_heads")
    assert_error_has(function() nn.MultiheadAttention(8, 2, { heads = 2 }) end, "unknown option 'heads'")
    local m = nn.MultiheadAttention(8, 2)
    local q = wick.randn({ 3, 2, 8 })
    assert_error_has(function() m(q, q, q, { attn_mask = wick.zeros({ 2, 3 }) }) end,
      "The shape of the 2D attn_mask is", "should be (3, 3)")
    assert_error_has(function() m(q, q, q, { key_padding_mask = wick.zeros({ 2, 4 }, { dtype = "bool" }) }) end,
      "expected shape of key_padding_mask to be (2, 3)")
    assert_error_has(function() m(q, q, q, { is_causal = true }) end, "Need attn_mask if specifying the is_causal hint")
    assert_error_has(function() m(q, q, wick.randn({ 3, 8 })) end, "expected `key` and `value` to be 3-D")
    assert_error_has(function() m(wick.randn({ 3, 2, 6 }), q, q) end, "was expecting embedding dimension of 8, but got 6")
    assert_error_has(function() m(q, q, q, { attn_mask = wick.zeros({ 3, 3 }, { dtype = "int64" }) }) end,
      "only bool and floating types of attn_mask are supported")
    local err = support.error_of(function() m(q, q, q, { attn_mask = wick.zeros({ 2, 3 }) }) end)
    assert.is_truthy(err:find("transformer_spec.lua:%d+:"), err)
  end)
end)

describe("Transformer stacks", function()
  it("clones the layer into independent layers named layers.1, layers.2, ...", function()
    local layer = nn.TransformerEncoderLayer(8, 2, 16, 0.0)
    local enc = nn.TransformerEncoder(layer, 2)
    assert.are.equal("TransformerEncoder", getmetatable(enc).__name)
    assert.are.equal("TransformerEncoderLayer", getmetatable(enc.layers[1]).__name)
    local names = {}
    for n in enc:named_parameters() do names[#names + 1] = n end
    assert.are.equal("layers.1.self_attn.in_proj_weight", names[1])
    assert.are.equal("layers.2.norm2.bias", names[#names])
    assert.are.equal(24, #names)
    local w1, w2 = enc.layers[1].self_attn.in_proj_weight, enc.layers[2].self_attn.in_proj_weight
    assert.are.same(w1:totable(), w2:totable())
    assert.are.same(layer.self_attn.in_proj_weight:totable(), w1:totable())
    assert.is_true(w1.requires_grad)
    wick.no_grad(function() w1:fill_(1) end)
    assert.are_not.equal(1, w2[1][1]:item())
    assert.are_not.equal(1, layer.self_attn.in_proj_weight[1][1]:item())
    local sd = enc:state_dict()
    assert.is_truthy(sd["layers.2.self_attn.out_proj.weight"])
    assert.is_truthy(sd["layers.1.linear1.weight"])
  end)

  it("takes an activation function or module, and dropout follows the mode", function()
    local seen = 0
    local layer = nn.TransformerEncoderLayer(8, 2, 16, 0.0, function(t) seen = seen + 1; return t:relu() end)
    layer(wick.randn({ 3, 2, 8 }))
    assert.are.equal(1, seen)
    local gelu = nn.TransformerEncoderLayer(8, 2, 16, 0.0, nn.GELU())
    assert.are.equal("GELU", getmetatable(gelu.activation).__name)
    local dropping = nn.TransformerEncoderLayer(8, 2, 16, 0.5)
    local s = wick.randn({ 3, 2, 8 })
    dropping:eval()
    support.assert_close(dropping(s), dropping(s):totable(), 1e-6)
    assert_error_has(function() nn.TransformerEncoderLayer(8, 2, 16, 0.1, "tanh") end,
      "invalid value 'tanh' for argument 'activation'")
  end)

  it("detects a causal mask like PyTorch and runs unbatched input", function()
    local enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, 0.0), 2)
    local s = wick.randn({ 4, 8 })
    local mask = nn.Transformer.generate_square_subsequent_mask(4)
    local a = enc(s, mask)
    local b = enc(s, { mask = mask, is_causal = true })
    assert.are.same({ 4, 8 }, shape_of(a))
    support.assert_close(a, b:totable(), 1e-5)
    -- causal: the first position sees only itself, so later positions cannot change it
    local s2 = s:clone()
    s2[4]:fill_(3)
    support.assert_close(enc(s2, mask)[1], a[1]:totable(), 1e-5)
  end)

  it("Transformer takes a custom encoder and decoder, and checks batch and feature sizes", function()
    local calls = {}
    local Enc = nn.Module:extend("MyEncoder")
    function Enc:forward(src, opts) calls[#calls + 1] = "enc"; assert.is_table(opts); return src * 2 end
    local Dec = nn.Module:extend("MyDecoder")
    function Dec:forward(tgt, memory) calls[#calls + 1] = "dec"; return tgt + memory:sum() end
    local model = nn.Transformer(8, 2, { custom_encoder = Enc(), custom_decoder = Dec() })
    assert.are.equal("MyEncoder", getmetatable(model.encoder).__name)
    local out = model(wick.ones({ 4, 2, 8 }), wick.zeros({ 3, 2, 8 }))
    assert.are.same({ "enc", "dec" }, calls)
    assert.are.equal(128, out[1][1][1]:item())
    local real = nn.Transformer(8, 2, 1, 1, 16)
    assert_error_has(function() real(wick.randn({ 4, 2, 8 }), wick.randn({ 3, 3, 8 })) end,
      "the batch number of src and tgt must be equal")
    assert_error_has(function() real(wick.randn({ 4, 2, 6 }), wick.randn({ 3, 2, 6 })) end,
      "the feature number of src and tgt must be equal to d_model")
    -- every matrix initialised xavier_uniform_: within sqrt(6 / (fan_in + fan_out))
    local w = real.encoder.layers[1].linear1.weight
    assert.is_true(w:abs():max():item() <= math.sqrt(6 / (8 + 16)) + 1e-6)
  end)

  it("runs on the meta device (shapes only)", function()
    local model = nn.Transformer(8, 2, 1, 1, 16, 0.0, { device = "meta", batch_first = true })
    local out = model(wick.empty({ 2, 5, 8 }, { device = "meta" }), wick.empty({ 2, 3, 8 }, { device = "meta" }))
    assert.are.same({ 2, 3, 8 }, shape_of(out))
    assert.are.equal("meta", out.device.type)
  end)

  support.for_each_device(function(device)
    if device == "cpu" then return end
    it("gives the CPU's outputs and gradients on " .. device, function()
      support.assert_same_on(device, function(d)
        local m = nn.Transformer(8, 2, 2, 1, 16, 0.0):double():to(d)
        support.fill_parameters(m)
        local s = support.formula({ 4, 2, 8 }, 30, { device = d }):requires_grad_(true)
        local t = support.formula({ 3, 2, 8 }, 31, { device = d }):requires_grad_(true)
        local mask = nn.Transformer.generate_square_subsequent_mask(3, { device = d, dtype = "float64" })
        local out = m(s, t, { tgt_mask = mask })
        out:sum():backward()
        return out, s.grad, t.grad, m.encoder.layers[1].self_attn.in_proj_weight.grad
      end, { tol = 1e-9 })
    end)
  end)
end)

describe("the Transformer modules' tensors by name", function()
  it("layers, stacks and nn.Transformer take src/tgt/memory from the options table, as Python's keywords", function()
    wick.manual_seed(2)
    local nn = wick.nn
    local x = wick.randn(5, 3, 8)
    local m = nn.Transformer.generate_square_subsequent_mask(5)
    local enc = nn.TransformerEncoderLayer(8, 2, { dim_feedforward = 16, dropout = 0 })
    local a = enc(x, m)
    assert.is_true(wick.equal(a, enc({ src = x, src_mask = m })))
    assert.is_false(wick.equal(a, enc({ src = x }))) -- the mask taken, not dropped
    local dec = nn.TransformerDecoderLayer(8, 2, { dim_feedforward = 16, dropout = 0 })
    assert.is_true(wick.equal(dec(x, x, m), dec({ tgt = x, memory = x, tgt_mask = m })))
    local stack = nn.TransformerEncoder(enc, 2)
    assert.is_true(wick.equal(stack(x, m), stack({ src = x, mask = m })))
    local dstack = nn.TransformerDecoder(dec, 2)
    assert.is_true(wick.equal(dstack(x, x, m), dstack(x, { memory = x, tgt_mask = m })))
    local t = nn.Transformer({ d_model = 8, nhead = 2, num_encoder_layers = 1, num_decoder_layers = 1,
      dim_feedforward = 16, dropout = 0 })
    assert.is_true(wick.equal(t(x, x, nil, m), t({ src = x, tgt = x, tgt_mask = m })))
    assert_error_has(function() enc({ src_mask = m }) end, "missing required argument 'src'")
    assert_error_has(function() enc(x, { src = x }) end, "argument 'src' given both by position and as an option")
  end)
end)
