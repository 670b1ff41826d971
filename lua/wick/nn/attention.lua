-- The attention blocks of wick.nn: MultiheadAttention, the Transformer
-- encoder and decoder layers and stacks, and Transformer, composed in Lua from
-- ops with PyTorch's semantics (torch.nn.MultiheadAttention,
-- F.multi_head_attention_forward, torch.nn.Transformer*): the same parameter
-- names and order, masks (bool: true = not allowed; float: added), shapes
-- (seq, batch, feature) unless batch_first, unbatched inputs. Attention runs on
-- the fused F.scaled_dot_product_attention unless the weights are asked for.
local wick = require("wick")
local Module = require("wick.nn.module")
local F = require("wick.nn.functional")
local L = require("wick.nn.layers")
local init = require("wick.nn.initializers")
local check = require("wick.argcheck")
local common = require("wick.nn.common")

local A = {}
local NEG_INF = -math.huge
local rawequal = rawequal
local unpack = table.unpack or unpack -- luacheck: ignore

-- ---- masks ----

-- PyTorch's _canonical_mask: a bool mask (true = not allowed) becomes an
-- additive mask of `dtype` (-inf where true); a float mask stays as it is.
local function canonical_mask(mask, fn, name, dtype)
  if mask == nil then return nil end
  check.tensor(mask, fn, name)
  if mask.dtype == "bool" then
    return wick.zeros(mask.shape, { dtype = dtype, device = mask.device }):masked_fill(mask, NEG_INF)
  end
  if not mask:is_floating_point() then check.fail(fn, "only bool and floating types of %s are supported", name) end
  return mask
end

-- PyTorch's deprecation warning for a bool mask beside a float one (a float causal mask with a bool
-- padding mask: the decision transformer's)
local function warn_mismatched(a, b, name_a, name_b)
  if a ~= nil and b ~= nil and wick.is_tensor(a) and wick.is_tensor(b) and (a.dtype == "bool") ~= (b.dtype == "bool") then
    require("wick.nn.common").warn(("Support for mismatched %s and %s is deprecated. Use same type for both instead.")
      :format(name_a, name_b))
  end
end

-- an additive causal mask [sz, sz]: -inf above the diagonal, 0 elsewhere
local function square_subsequent_mask(sz, opts)
  return wick.full({ sz, sz }, NEG_INF, opts):triu(1)
end

-- PyTorch's _detect_is_causal_mask: is_causal when given, else whether `mask`
-- is exactly the causal mask of size `size`.
local function detect_is_causal(mask, is_causal, size)
  if is_causal ~= nil then return is_causal end
  if mask == nil or mask:dim() ~= 2 then return false end
  local sz = size or mask:size(-2)
  if mask:size(1) ~= sz or mask:size(2) ~= sz then return false end
  if mask.device.type == "meta" then return false end -- no values to compare
  return mask:equal(square_subsequent_mask(sz, { dtype = mask.dtype, device = mask.device }))
end

-- the mask with one more column (0: taking part) at the end of its last dimension
local function pad_column(mask)
  if mask == nil then return nil end
  local shape = mask:size()
  shape[#shape] = 1
  return wick.cat({ mask, wick.zeros(shape, { dtype = mask.dtype, device = mask.device }) }, -1)
end

-- f applied to q, k, v once per distinct tensor (so self-attention stays self-attention)
local function each(q, k, v, f)
  local q2 = f(q)
  local k2 = rawequal(k, q) and q2 or f(k)
  local v2 = rawequal(v, k) and k2 or (rawequal(v, q) and q2 or f(v))
  return q2, k2, v2
end

-- ---- MultiheadAttention ----

A.MultiheadAttention = Module:extend("MultiheadAttention", { "embed_dim", "num_heads" })
local MHA = { dropout = "number", bias = "boolean", add_bias_kv = "boolean", add_zero_attn = "boolean",
  kdim = "integer", vdim = "integer", batch_first = "boolean", device = "device", dtype = "dtype" }
local MHA_ORDER = { "dropout", "bias", "add_bias_kv", "add_zero_attn", "kdim", "vdim", "batch_first", "device", "dtype" }

--- nn.MultiheadAttention(embed_dim, num_heads[, dropout = 0[, bias = true[, add_bias_kv = false[,
--- add_zero_attn = false[, kdim[, vdim[, batch_first = false]]]]]]][, opts]), PyTorch's order.
function A.MultiheadAttention:init(embed_dim, num_heads, ...)
  local fn = "MultiheadAttention"
  check.int(embed_dim, fn, "embed_dim", 1)
  check.int(num_heads, fn, "num_heads", 1)
  local o = check.positional(fn, MHA_ORDER, MHA, ...)
  if embed_dim % num_heads ~= 0 then check.fail(fn, "embed_dim must be divisible by num_heads") end
  local E = embed_dim
  self.embed_dim, self.num_heads, self.head_dim = E, num_heads, E / num_heads
  self.kdim = check.opt_int(o.kdim, fn, "kdim", E, 1)
  self.vdim = check.opt_int(o.vdim, fn, "vdim", E, 1)
  self._qkv_same_embed_dim = self.kdim == E and self.vdim == E
  self.dropout = check.opt_number(o.dropout, fn, "dropout", 0, 0, 1)
  self.batch_first, self.add_zero_attn = o.batch_first == true, o.add_zero_attn == true
  local t = { device = o.device, dtype = o.dtype }
  -- PyTorch's order of registration (named_parameters, state_dict): the
  -- projections, in_proj_bias, bias_k, bias_v, then out_proj
  if self._qkv_same_embed_dim then
    self.in_proj_weight = L.Parameter(wick.empty({ 3 * E, E }, t))
  else
    self.q_proj_weight = L.Parameter(wick.empty({ E, E }, t))
    self.k_proj_weight = L.Parameter(wick.empty({ E, self.kdim }, t))
    self.v_proj_weight = L.Parameter(wick.empty({ E, self.vdim }, t))
  end
  if o.bias ~= false then self.in_proj_bias = L.Parameter(wick.empty({ 3 * E }, t)) end
  if o.add_bias_kv then
    self.bias_k = L.Parameter(wick.empty({ 1, 1, E }, t))
    self.bias_v = L.Parameter(wick.empty({ 1, 1, E }, t))
  end
  self.out_proj = L.NonDynamicallyQuantizableLinear(E, E, { bias = o.bias ~= false, device = o.device, dtype = o.dtype })
  self:_reset_parameters()
end
--- mha:_reset_parameters(): PyTorch's init again: xavier_uniform_ projections,
--- zero biases, xavier_normal_ bias_k and bias_v
function A.MultiheadAttention:_reset_parameters()
  wick.no_grad(function()
    for _, name in ipairs({ "in_proj_weight", "q_proj_weight", "k_proj_weight", "v_proj_weight" }) do
      if self[name] ~= nil then init.xavier_uniform_(self[name]) end
    end
    if self.in_proj_bias ~= nil then self.in_proj_bias:zero_() end
    if self.out_proj.bias ~= nil then self.out_proj.bias:zero_() end
    if self.bias_k ~= nil then
      init.xavier_normal_(self.bias_k)
      init.xavier_normal_(self.bias_v)
    end
  end)
end

-- The projections of query, key and value (each [seq, batch, E]): one GEMM
-- for self-attention, two when key is value.
local function in_projection(self, q, k, v)
  local E, b = self.embed_dim, self.in_proj_bias
  local function bias(i, n) return b and b:narrow(1, i * E + 1, n * E) end
  if not self._qkv_same_embed_dim then
    return F.linear(q, self.q_proj_weight, bias(0, 1)), F.linear(k, self.k_proj_weight, bias(1, 1)),
      F.linear(v, self.v_proj_weight, bias(2, 1))
  end
  local w = self.in_proj_weight
  if rawequal(q, k) and rawequal(k, v) then
    local p = F.linear(q, w, b):chunk(3, -1)
    return p[1], p[2], p[3]
  end
  local qp = F.linear(q, w:narrow(1, 1, E), bias(0, 1))
  if rawequal(k, v) then
    local p = F.linear(k, w:narrow(1, E + 1, 2 * E), bias(1, 2)):chunk(2, -1)
    return qp, p[1], p[2]
  end
  return qp, F.linear(k, w:narrow(1, E + 1, E), bias(1, 1)), F.linear(v, w:narrow(1, 2 * E + 1, E), bias(2, 1))
end

-- attn_mask as [1 or batch * heads, L, S] (checked against PyTorch's shapes)
local function shaped_attn_mask(fn, mask, bsz, heads, L, S)
  if mask:dim() == 2 then
    if mask:size(1) ~= L or mask:size(2) ~= S then
      check.fail(fn, "The shape of the 2D attn_mask is %s, but should be (%d, %d).", tostring(mask.shape), L, S)
    end
    return mask:unsqueeze(1)
  elseif mask:dim() == 3 then
    if mask:size(1) ~= bsz * heads or mask:size(2) ~= L or mask:size(3) ~= S then
      check.fail(fn, "The shape of the 3D attn_mask is %s, but should be (%d, %d, %d).", tostring(mask.shape),
        bsz * heads, L, S)
    end
    return mask
  end
  check.fail(fn, "attn_mask's dimension %d is not supported", mask:dim())
end

-- static_k / static_v of F.multi_head_attention_forward ([batch * heads, S, head_dim], already
-- projected, PyTorch's checks) as [batch, heads, S, head_dim]
local function static_heads(fn, t, name, bsz, H, hd, dtype)
  if t.dtype ~= dtype then
    check.fail(fn, "expected %s of the query's dtype %s, got %s", name, dtype, t.dtype)
  end
  if t:dim() ~= 3 then
    check.fail(fn, "expecting %s of 3 dims (batch * num_heads, source length, head_dim), got %d-D", name, t:dim())
  end
  if t:size(1) ~= bsz * H then check.fail(fn, "expecting %s:size(1) of %d (batch * num_heads), but got %d", name, bsz * H, t:size(1)) end
  if t:size(3) ~= hd then check.fail(fn, "expecting %s:size(3) of %d (head_dim), but got %d", name, hd, t:size(3)) end
  return t:reshape({ bsz, H, t:size(2), hd })
end

-- F.multi_head_attention_forward on [seq, batch, E] inputs; returns out and the weights (or nil);
-- static (F.multi_head_attention_forward's): { k = static_k, v = static_v }, either may be nil
local function attend(self, fn, q, k, v, kpm, need_weights, attn_mask, average, is_causal, static)
  local L, bsz, E = q:size(1), q:size(2), q:size(3)
  local H, hd = self.num_heads, self.head_dim
  if E ~= self.embed_dim then check.fail(fn, "was expecting embedding dimension of %d, but got %d", self.embed_dim, E) end
  if k:size(1) ~= v:size(1) or k:size(2) ~= v:size(2) then
    check.fail(fn, "key's sequence and batch dims %d, %d do not match value's %d, %d", k:size(1), k:size(2), v:size(1), v:size(2))
  end
  if k:size(2) ~= bsz then check.fail(fn, "key and query have different batch sizes (%d and %d)", k:size(2), bsz) end
  if k:size(3) ~= self.kdim or v:size(3) ~= self.vdim then
    check.fail(fn, "expected key of feature size %d and value of feature size %d, got %d and %d", self.kdim, self.vdim,
      k:size(3), v:size(3))
  end
  local S = k:size(1)
  warn_mismatched(kpm, attn_mask, "key_padding_mask", "attn_mask")
  kpm = canonical_mask(kpm, fn, "key_padding_mask", q.dtype)
  if is_causal and attn_mask == nil then
    check.fail(fn, "Need attn_mask if specifying the is_causal hint. You may use the Transformer module method "
      .. "`generate_square_subsequent_mask` to create this mask.")
  end
  if is_causal and kpm == nil and not need_weights then
    attn_mask = nil -- the fused attention's own causal masking
  else
    attn_mask = canonical_mask(attn_mask, fn, "attn_mask", q.dtype)
    if kpm ~= nil then is_causal = false end -- the merged mask is no longer causal
  end
  if attn_mask ~= nil then attn_mask = shaped_attn_mask(fn, attn_mask, bsz, H, L, S) end

  local qp, kp, vp = in_projection(self, q, k, v)
  local static_k, static_v = static and static.k, static and static.v
  if self.bias_k then
    if static_k ~= nil then check.fail(fn, "bias cannot be added to static key.") end
    if static_v ~= nil then check.fail(fn, "bias cannot be added to static value.") end
    kp = wick.cat({ kp, self.bias_k:expand({ 1, bsz, E }) }, 1)
    vp = wick.cat({ vp, self.bias_v:expand({ 1, bsz, E }) }, 1)
    attn_mask, kpm = pad_column(attn_mask), pad_column(kpm)
  end
  -- [seq, batch, E] -> [batch, heads, seq, head_dim] (views)
  local function heads(t) return t:reshape({ t:size(1), bsz, H, hd }):permute(2, 3, 1, 4) end
  qp = heads(qp)
  kp = static_k ~= nil and static_heads(fn, static_k, "static_k", bsz, H, hd, qp.dtype) or heads(kp)
  vp = static_v ~= nil and static_heads(fn, static_v, "static_v", bsz, H, hd, qp.dtype) or heads(vp)
  if kp:size(3) ~= vp:size(3) then -- (only a static_k or static_v of another length gets here)
    check.fail(fn, "the keys' source length %d (%s) does not match the values' %d (%s)", kp:size(3),
      static_k ~= nil and "static_k's" or "key's", vp:size(3), static_v ~= nil and "static_v's" or "value's")
  end
  if attn_mask ~= nil and attn_mask:size(-1) ~= kp:size(3) then -- (a static_k of another length than key's)
    check.fail(fn, "attn_mask's last dim %d does not match the source length %d of static_k", attn_mask:size(-1),
      kp:size(3))
  end
  if self.add_zero_attn then
    local zeros = wick.zeros({ bsz, H, 1, hd }, { dtype = kp.dtype, device = kp.device })
    kp, vp = wick.cat({ kp, zeros }, 3), wick.cat({ vp, zeros }, 3)
    attn_mask, kpm = pad_column(attn_mask), pad_column(kpm)
  end
  S = kp:size(3)
  if kpm ~= nil then
    if kpm:dim() ~= 2 or kpm:size(1) ~= bsz or kpm:size(2) ~= S then
      check.fail(fn, "expected shape of key_padding_mask to be (%d, %d), but got %s", bsz, S, tostring(kpm.shape))
    end
    kpm = kpm:reshape({ bsz, 1, 1, S }):expand({ bsz, H, 1, S }):reshape({ bsz * H, 1, S })
    attn_mask = attn_mask == nil and kpm or attn_mask + kpm
  end
  local p = self.training and self.dropout or 0

  if need_weights then
    local q3 = qp:reshape({ bsz * H, L, hd }) * math.sqrt(1 / hd)
    local w = q3:bmm(kp:reshape({ bsz * H, S, hd }):transpose(2, 3))
    if attn_mask ~= nil then w = w + attn_mask end
    w = w:softmax(-1)
    if p > 0 then w = F.dropout(w, p) end -- (the weights returned are the dropped ones too, as PyTorch's)
    local out = w:bmm(vp:reshape({ bsz * H, S, hd })):view({ bsz, H, L, hd }):permute(3, 1, 2, 4)
    -- (the output projection's own width: CLIP's AttentionPool2d projects E to output_dim)
    out = F.linear(out:reshape({ L * bsz, E }), self.out_proj.weight, self.out_proj.bias):view({ L, bsz, -1 })
    w = w:view({ bsz, H, L, S })
    if average ~= false then w = w:mean(2) end
    return out, w
  end
  if attn_mask ~= nil then
    attn_mask = attn_mask:size(1) == 1 and attn_mask:unsqueeze(1) or attn_mask:view({ bsz, H, -1, S })
  end
  local out = F.scaled_dot_product_attention(qp, kp, vp, { attn_mask = attn_mask, dropout_p = p, is_causal = is_causal })
  out = out:permute(3, 1, 2, 4):reshape({ L * bsz, E })
  return F.linear(out, self.out_proj.weight, self.out_proj.bias):view({ L, bsz, -1 }), nil
end

local MHA_FORWARD = { key_padding_mask = "tensor", need_weights = "boolean", attn_mask = "tensor",
  average_attn_weights = "boolean", is_causal = "boolean" }
local MHA_FORWARD_ORDER = { "key_padding_mask", "need_weights", "attn_mask", "average_attn_weights", "is_causal" }

--- mha(query, key, value[, key_padding_mask[, need_weights = true[, attn_mask[,
--- average_attn_weights = true[, is_causal = false]]]]][, opts]) -> out, weights (nil
--- when need_weights = false). Inputs [seq, batch, feature] (batch first with
--- batch_first), or unbatched [seq, feature].
local function mha_module_forward(self, query, key, value, ...)
  local fn = "MultiheadAttention"
  check.tensor(query, fn, "query")
  check.tensor(key, fn, "key")
  check.tensor(value, fn, "value")
  local o = check.positional(fn, MHA_FORWARD_ORDER, MHA_FORWARD, ...)
  local d = query:dim()
  if d ~= 2 and d ~= 3 then
    check.fail(fn, "query should be unbatched 2D or batched 3D tensor but received %d-D query tensor", d)
  end
  if key:dim() ~= d or value:dim() ~= d then
    check.fail(fn, "for %s (%d-D) `query`, expected `key` and `value` to be %d-D but found %d-D and %d-D tensors respectively",
      d == 3 and "batched" or "unbatched", d, d, key:dim(), value:dim())
  end
  local kpm = o.key_padding_mask
  if d == 2 then
    query, key, value = each(query, key, value, function(t) return t:unsqueeze(2) end)
    if kpm ~= nil then
      if kpm:dim() ~= 1 then check.fail(fn, "for unbatched (2-D) `query`, expected `key_padding_mask` to be 1-D, got %d-D", kpm:dim()) end
      kpm = kpm:unsqueeze(1)
    end
  elseif self.batch_first then
    query, key, value = each(query, key, value, function(t) return t:transpose(1, 2) end)
  end
  local need_weights = o.need_weights ~= false
  local out, w = attend(self, fn, query, key, value, kpm, need_weights, o.attn_mask, o.average_attn_weights,
    o.is_causal == true)
  if d == 2 then
    out = out:squeeze(2)
    if w then w = w:squeeze(1) end
  elseif self.batch_first then
    out = out:transpose(1, 2)
  end
  return out, w
end
function A.MultiheadAttention:forward(...)
  -- query, key and value by name too (DETR's self_attn(q, k, value=src, attn_mask=...))
  local out, w = mha_module_forward(self, common.required("MultiheadAttention", { "query", "key", "value" }, ...))
  return wick._first_of(out, "MultiheadAttention"), w
end

--- F.multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads,
--- in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p,
--- out_proj_weight, out_proj_bias[, training = true[, key_padding_mask[, need_weights = true[,
--- attn_mask[, use_separate_proj_weight = false[, q_proj_weight[, k_proj_weight[,
--- v_proj_weight[, static_k[, static_v[, average_attn_weights = true[, is_causal = false]]]]]]]]]]]])
--- (any of them by name in a trailing options table, as PyTorch's keywords):
--- what MultiheadAttention runs, over weights given as arguments (CLIP's
--- AttentionPool2d). Inputs [seq, batch, E] or unbatched [seq, E]; returns out, weights (nil
--- when need_weights is false). static_k / static_v: keys / values already projected and split into
--- heads, [batch * num_heads, S, head_dim] (head h of batch b at (b - 1) * num_heads + h), used in
--- place of the projected key / value (PyTorch's checks: no bias_k / bias_v beside them).
local MHA_F_ARGS = { "query", "key", "value", "embed_dim_to_check", "num_heads", "in_proj_weight?", "in_proj_bias?",
  "bias_k?", "bias_v?", "add_zero_attn", "dropout_p", "out_proj_weight", "out_proj_bias?" }
local MHA_F_ORDER = { "training", "key_padding_mask", "need_weights", "attn_mask", "use_separate_proj_weight",
  "q_proj_weight", "k_proj_weight", "v_proj_weight", "static_k", "static_v", "average_attn_weights", "is_causal" }
local MHA_F = { training = "boolean", key_padding_mask = "tensor", need_weights = "boolean", attn_mask = "tensor",
  use_separate_proj_weight = "boolean", q_proj_weight = "tensor", k_proj_weight = "tensor", v_proj_weight = "tensor",
  static_k = "tensor", static_v = "tensor", average_attn_weights = "boolean", is_causal = "boolean" }
local function mha_forward(q, k, v, E, H, w_in, b_in, bias_k, bias_v, add_zero_attn, dropout_p, w_out, b_out, ...)
  local fn = "multi_head_attention_forward"
  local o = check.positional(fn, MHA_F_ORDER, MHA_F, ...)
  for _, t in ipairs({ { q, "query" }, { k, "key" }, { v, "value" }, { w_out, "out_proj_weight" } }) do check.tensor(t[1], fn, t[2]) end
  check.int(E, fn, "embed_dim_to_check", 1)
  check.int(H, fn, "num_heads", 1)
  if q:dim() > 0 and q:size(-1) ~= E then
    check.fail(fn, "was expecting embedding dimension of %d, but got %d", E, q:size(-1))
  end
  check.number(dropout_p, fn, "dropout_p")
  if E % H ~= 0 then check.fail(fn, "embed_dim %d not divisible by num_heads %d", E, H) end
  if w_out:dim() ~= 2 or w_out:size(2) ~= E then
    check.fail(fn, "out_proj_weight must be [out_features, %d] (embed_dim inputs), got %s", E, tostring(w_out.shape))
  end
  local separate = o.use_separate_proj_weight == true
  if separate then
    if not (o.q_proj_weight and o.k_proj_weight and o.v_proj_weight) then
      check.fail(fn, "use_separate_proj_weight is true but q_proj_weight, k_proj_weight or v_proj_weight is missing")
    end
  elseif w_in == nil then
    check.fail(fn, "use_separate_proj_weight is false but in_proj_weight is missing")
  end
  local d = q:dim()
  if d ~= 2 and d ~= 3 then check.fail(fn, "query should be unbatched 2D or batched 3D tensor but received %d-D query tensor", d) end
  local kpm = o.key_padding_mask
  if d == 2 then
    q, k, v = each(q, k, v, function(t) return t:unsqueeze(2) end)
    if kpm ~= nil then kpm = kpm:unsqueeze(1) end
  end
  -- the fields attend reads, from the arguments
  local self = { embed_dim = E, num_heads = H, head_dim = E / H, kdim = k:size(3), vdim = v:size(3),
    _qkv_same_embed_dim = not separate, in_proj_weight = w_in, in_proj_bias = b_in,
    q_proj_weight = o.q_proj_weight, k_proj_weight = o.k_proj_weight, v_proj_weight = o.v_proj_weight,
    bias_k = bias_k, bias_v = bias_v, add_zero_attn = add_zero_attn == true, training = o.training ~= false,
    dropout = dropout_p, out_proj = { weight = w_out, bias = b_out } }
  if not separate then self.kdim, self.vdim = E, E end
  local out, w = attend(self, fn, q, k, v, kpm, o.need_weights ~= false, o.attn_mask, o.average_attn_weights,
    o.is_causal == true, { k = o.static_k, v = o.static_v })
  if d == 2 then
    out = out:squeeze(2)
    if w then w = w:squeeze(1) end
  end
  return out, w
end
function F.multi_head_attention_forward(...)
  return mha_forward(common.required("multi_head_attention_forward", MHA_F_ARGS, ...))
end

-- ---- the Transformer layers ----

-- an activation by name ("relu", "gelu") or a function or module
local function activation(v, fn)
  if v == nil or v == "relu" then return F.relu end
  if v == "gelu" then return F.gelu end
  if type(v) == "string" then check.one_of(v, fn, "activation", { "relu", "gelu" }) end
  return check.callable(v, fn, "activation")
end
--- nn.modules.transformer._get_activation_fn(name): PyTorch's private helper that
--- TabPFN's layers import: F.relu or F.gelu, an error for another name
function A._get_activation_fn(name)
  if name == "relu" or name == "gelu" then return F[name] end
  check.fail("_get_activation_fn", "activation should be relu/gelu, not %s", tostring(name))
end

local LAYER = { dim_feedforward = "integer", dropout = "number", activation = "string|function",
  layer_norm_eps = "number", batch_first = "boolean", norm_first = "boolean", bias = "boolean",
  device = "device", dtype = "dtype" }
local LAYER_ORDER = { "dim_feedforward", "dropout", "activation", "layer_norm_eps", "batch_first", "norm_first",
  "bias", "device", "dtype" }

-- the members both layers share, in PyTorch's order: attention (one or two), linear1, dropout, linear2, norms, dropouts
local function layer_init(self, fn, d_model, nhead, attentions, norms, ...)
  check.int(d_model, fn, "d_model", 1)
  check.int(nhead, fn, "nhead", 1)
  local o = check.positional(fn, LAYER_ORDER, LAYER, ...)
  local ff = check.opt_int(o.dim_feedforward, fn, "dim_feedforward", 2048, 1)
  local p = check.opt_number(o.dropout, fn, "dropout", 0.1, 0, 1)
  local eps = check.opt_number(o.layer_norm_eps, fn, "layer_norm_eps", 1e-5)
  local t = { device = o.device, dtype = o.dtype }
  local bias = o.bias ~= false
  for _, name in ipairs(attentions) do
    self[name] = A.MultiheadAttention(d_model, nhead,
      { dropout = p, bias = bias, batch_first = o.batch_first == true, device = o.device, dtype = o.dtype })
  end
  self.linear1 = L.Linear(d_model, ff, { bias = bias, device = t.device, dtype = t.dtype })
  self.dropout = L.Dropout(p)
  self.linear2 = L.Linear(ff, d_model, { bias = bias, device = t.device, dtype = t.dtype })
  self.norm_first = o.norm_first == true
  for i = 1, norms do
    self["norm" .. i] = L.LayerNorm(d_model, { eps = eps, bias = bias, device = t.device, dtype = t.dtype })
  end
  for i = 1, norms do self["dropout" .. i] = L.Dropout(p) end
  self.activation = activation(o.activation, fn)
end

A.TransformerEncoderLayer = Module:extend("TransformerEncoderLayer", { "d_model", "nhead" })

--- nn.TransformerEncoderLayer(d_model, nhead[, dim_feedforward = 2048[, dropout = 0.1[,
--- activation = "relu"[, layer_norm_eps = 1e-5[, batch_first = false[, norm_first = false[,
--- bias = true]]]]]]][, opts]); activation "relu", "gelu", a function or a module.
function A.TransformerEncoderLayer:init(d_model, nhead, ...)
  layer_init(self, "TransformerEncoderLayer", d_model, nhead, { "self_attn" }, 2, ...)
end

-- The blocks forward calls as methods, PyTorch's names and arguments, so a subclass's own
-- _sa_block or _ff_block (encodec's StreamingTransformerEncoderLayer) takes their place.
--- layer:_sa_block(x, attn_mask, key_padding_mask[, is_causal]): dropout1(self_attn(x, x, x))
local function sa_block(self, x, mask, kpm, is_causal)
  local y = self.self_attn(x, x, x, { attn_mask = mask, key_padding_mask = kpm, need_weights = false, is_causal = is_causal })
  return self.dropout1(y)
end
-- the feed-forward block: dropout_n(linear2(dropout(activation(linear1(x)))))
local function ff_block(self, x, out_dropout)
  return out_dropout(self.linear2(self.dropout(self.activation(self.linear1(x)))))
end
A.TransformerEncoderLayer._sa_block = sa_block
--- layer:_ff_block(x): dropout2(linear2(dropout(activation(linear1(x)))))
function A.TransformerEncoderLayer:_ff_block(x) return ff_block(self, x, self.dropout2) end

local ENC_FORWARD = { src_mask = "tensor", src_key_padding_mask = "tensor", is_causal = "boolean" }
local ENC_FORWARD_ORDER = { "src_mask", "src_key_padding_mask", "is_causal" }

--- layer(src[, src_mask[, src_key_padding_mask[, is_causal = false]]][, opts])
local function transformer_encoder_layer_forward(self, src, ...)
  local fn = "TransformerEncoderLayer"
  check.tensor(src, fn, "src")
  local o = check.positional(fn, ENC_FORWARD_ORDER, ENC_FORWARD, ...)
  warn_mismatched(o.src_key_padding_mask, o.src_mask, "src_key_padding_mask", "mask")
  local kpm = canonical_mask(o.src_key_padding_mask, fn, "src_key_padding_mask", src.dtype)
  local mask, causal = o.src_mask, o.is_causal == true
  local x = src
  if self.norm_first then
    x = x + self:_sa_block(self.norm1(x), mask, kpm, causal)
    return x + self:_ff_block(self.norm2(x))
  end
  x = self.norm1(x + self:_sa_block(x, mask, kpm, causal))
  return self.norm2(x + self:_ff_block(x))
end
function A.TransformerEncoderLayer:forward(...)
  return transformer_encoder_layer_forward(self, common.required("TransformerEncoderLayer", { "src" }, ...))
end

A.TransformerDecoderLayer = Module:extend("TransformerDecoderLayer", { "d_model", "nhead" })

--- nn.TransformerDecoderLayer(d_model, nhead[, ...]): the arguments of TransformerEncoderLayer.
function A.TransformerDecoderLayer:init(d_model, nhead, ...)
  layer_init(self, "TransformerDecoderLayer", d_model, nhead, { "self_attn", "multihead_attn" }, 3, ...)
end

local DEC_FORWARD = { tgt_mask = "tensor", memory_mask = "tensor", tgt_key_padding_mask = "tensor",
  memory_key_padding_mask = "tensor", tgt_is_causal = "boolean", memory_is_causal = "boolean" }
local DEC_FORWARD_ORDER = { "tgt_mask", "memory_mask", "tgt_key_padding_mask", "memory_key_padding_mask",
  "tgt_is_causal", "memory_is_causal" }

A.TransformerDecoderLayer._sa_block = sa_block
--- layer:_mha_block(x, mem, attn_mask, key_padding_mask[, is_causal]): dropout2(multihead_attn(x, mem, mem))
function A.TransformerDecoderLayer:_mha_block(x, mem, mask, kpm, is_causal)
  local y = self.multihead_attn(x, mem, mem, { attn_mask = mask, key_padding_mask = kpm, need_weights = false, is_causal = is_causal })
  return self.dropout2(y)
end
--- layer:_ff_block(x): dropout3(linear2(dropout(activation(linear1(x)))))
function A.TransformerDecoderLayer:_ff_block(x) return ff_block(self, x, self.dropout3) end

--- layer(tgt, memory[, tgt_mask[, memory_mask[, tgt_key_padding_mask[,
--- memory_key_padding_mask[, tgt_is_causal = false[, memory_is_causal = false]]]]]][, opts])
local function transformer_decoder_layer_forward(self, tgt, memory, ...)
  local fn = "TransformerDecoderLayer"
  check.tensor(tgt, fn, "tgt")
  check.tensor(memory, fn, "memory")
  local o = check.positional(fn, DEC_FORWARD_ORDER, DEC_FORWARD, ...)
  local tc, mc = o.tgt_is_causal == true, o.memory_is_causal == true
  local x = tgt
  if self.norm_first then
    x = x + self:_sa_block(self.norm1(x), o.tgt_mask, o.tgt_key_padding_mask, tc)
    x = x + self:_mha_block(self.norm2(x), memory, o.memory_mask, o.memory_key_padding_mask, mc)
    return x + self:_ff_block(self.norm3(x))
  end
  x = self.norm1(x + self:_sa_block(x, o.tgt_mask, o.tgt_key_padding_mask, tc))
  x = self.norm2(x + self:_mha_block(x, memory, o.memory_mask, o.memory_key_padding_mask, mc))
  return self.norm3(x + self:_ff_block(x))
end
function A.TransformerDecoderLayer:forward(...)
  return transformer_decoder_layer_forward(self, common.required("TransformerDecoderLayer", { "tgt", "memory" }, ...))
end

-- ---- the stacks ----

-- A deep copy of a module (PyTorch's copy.deepcopy in _get_clones)
local function deep_copy(v) return wick.deepcopy(v) end

-- a ModuleList of n independent copies of layer
local function clones(layer, n)
  local list = L.ModuleList()
  for _ = 1, n do list:append(deep_copy(layer)) end
  return list
end

-- the sequence length of src (for is_causal detection)
local function seq_len(src, batch_first)
  if src:dim() == 2 then return src:size(1) end
  return src:size(batch_first and 2 or 1)
end

local STACK = { norm = "function", enable_nested_tensor = "boolean", mask_check = "boolean" }

-- encoder/decoder stack construction: layers cloned n times, then an optional final norm
local function stack_init(self, fn, layer, num_layers, ...)
  check.module(layer, fn, fn == "TransformerEncoder" and "encoder_layer" or "decoder_layer")
  check.int(num_layers, fn, "num_layers", 0)
  local o = check.positional(fn, { "norm", "enable_nested_tensor", "mask_check" }, STACK, ...)
  if o.norm ~= nil then check.module(o.norm, fn, "norm") end
  self.layers = clones(layer, num_layers)
  self.num_layers = num_layers
  self.norm = o.norm
end

local function first_batch_first(self)
  local first = rawget(self.layers, 1)
  return first ~= nil and first.self_attn ~= nil and first.self_attn.batch_first
end

A.TransformerEncoder = Module:extend("TransformerEncoder", { "encoder_layer", "num_layers" })

--- nn.TransformerEncoder(encoder_layer, num_layers[, norm[, enable_nested_tensor[, mask_check]]][, opts]):
--- num_layers independent copies of encoder_layer (layers.1, layers.2, ...), then norm.
function A.TransformerEncoder:init(encoder_layer, num_layers, ...)
  stack_init(self, "TransformerEncoder", encoder_layer, num_layers, ...)
end

local STACK_FORWARD = { mask = "tensor", src_key_padding_mask = "tensor", is_causal = "boolean" }

--- encoder(src[, mask[, src_key_padding_mask[, is_causal]]][, opts])
local function transformer_encoder_forward(self, src, ...)
  local fn = "TransformerEncoder"
  check.tensor(src, fn, "src")
  local o = check.positional(fn, { "mask", "src_key_padding_mask", "is_causal" }, STACK_FORWARD, ...)
  warn_mismatched(o.src_key_padding_mask, o.mask, "src_key_padding_mask", "mask")
  local kpm = canonical_mask(o.src_key_padding_mask, fn, "src_key_padding_mask", src.dtype)
  local mask = canonical_mask(o.mask, fn, "mask", src.dtype)
  local causal = detect_is_causal(mask, o.is_causal, seq_len(src, first_batch_first(self)))
  local x = src
  for _, layer in ipairs(self.layers) do
    x = layer(x, { src_mask = mask, src_key_padding_mask = kpm, is_causal = causal })
  end
  if self.norm then x = self.norm(x) end
  return x
end
function A.TransformerEncoder:forward(...)
  return transformer_encoder_forward(self, common.required("TransformerEncoder", { "src" }, ...))
end

A.TransformerDecoder = Module:extend("TransformerDecoder", { "decoder_layer", "num_layers" })

--- nn.TransformerDecoder(decoder_layer, num_layers[, norm][, opts])
function A.TransformerDecoder:init(decoder_layer, num_layers, ...)
  stack_init(self, "TransformerDecoder", decoder_layer, num_layers, ...)
end

--- decoder(tgt, memory[, tgt_mask[, memory_mask[, tgt_key_padding_mask[,
--- memory_key_padding_mask[, tgt_is_causal[, memory_is_causal = false]]]]]][, opts])
local function transformer_decoder_forward(self, tgt, memory, ...)
  local fn = "TransformerDecoder"
  check.tensor(tgt, fn, "tgt")
  check.tensor(memory, fn, "memory")
  local o = check.positional(fn, DEC_FORWARD_ORDER, DEC_FORWARD, ...)
  local causal = detect_is_causal(o.tgt_mask, o.tgt_is_causal, seq_len(tgt, first_batch_first(self)))
  local x = tgt
  for _, layer in ipairs(self.layers) do
    x = layer(x, memory, { tgt_mask = o.tgt_mask, memory_mask = o.memory_mask,
      tgt_key_padding_mask = o.tgt_key_padding_mask, memory_key_padding_mask = o.memory_key_padding_mask,
      tgt_is_causal = causal, memory_is_causal = o.memory_is_causal })
  end
  if self.norm then x = self.norm(x) end
  return x
end
function A.TransformerDecoder:forward(...)
  return transformer_decoder_forward(self, common.required("TransformerDecoder", { "tgt", "memory" }, ...))
end

-- ---- Transformer ----

A.Transformer = Module:extend("Transformer")
local TRANSFORMER = { d_model = "integer", nhead = "integer", num_encoder_layers = "integer",
  num_decoder_layers = "integer", dim_feedforward = "integer", dropout = "number", activation = "string|function",
  custom_encoder = "function", custom_decoder = "function", layer_norm_eps = "number", batch_first = "boolean",
  norm_first = "boolean", bias = "boolean", device = "device", dtype = "dtype" }
local TRANSFORMER_ORDER = { "d_model", "nhead", "num_encoder_layers", "num_decoder_layers", "dim_feedforward",
  "dropout", "activation", "custom_encoder", "custom_decoder", "layer_norm_eps", "batch_first", "norm_first", "bias",
  "device", "dtype" }

--- nn.Transformer([d_model = 512[, nhead = 8[, num_encoder_layers = 6[, num_decoder_layers = 6[,
--- dim_feedforward = 2048[, dropout = 0.1[, activation = "relu"[, custom_encoder[, custom_decoder[,
--- layer_norm_eps = 1e-5[, batch_first = false[, norm_first = false[, bias = true]]]]]]]]]]]]][, opts])
function A.Transformer:init(...)
  local fn = "Transformer"
  local o = check.positional(fn, TRANSFORMER_ORDER, TRANSFORMER, ...)
  local d_model = check.opt_int(o.d_model, fn, "d_model", 512, 1)
  local nhead = check.opt_int(o.nhead, fn, "nhead", 8, 1)
  local layer = { dim_feedforward = o.dim_feedforward, dropout = o.dropout, activation = o.activation,
    layer_norm_eps = o.layer_norm_eps, batch_first = o.batch_first, norm_first = o.norm_first, bias = o.bias,
    device = o.device, dtype = o.dtype }
  local function final_norm()
    return L.LayerNorm(d_model, { eps = o.layer_norm_eps, bias = o.bias, device = o.device, dtype = o.dtype })
  end
  if o.custom_encoder ~= nil then
    self.encoder = check.module(o.custom_encoder, fn, "custom_encoder")
  else
    self.encoder = A.TransformerEncoder(A.TransformerEncoderLayer(d_model, nhead, layer),
      check.opt_int(o.num_encoder_layers, fn, "num_encoder_layers", 6, 0), final_norm())
  end
  if o.custom_decoder ~= nil then
    self.decoder = check.module(o.custom_decoder, fn, "custom_decoder")
  else
    self.decoder = A.TransformerDecoder(A.TransformerDecoderLayer(d_model, nhead, layer),
      check.opt_int(o.num_decoder_layers, fn, "num_decoder_layers", 6, 0), final_norm())
  end
  self:_reset_parameters()
  self.d_model, self.nhead, self.batch_first = d_model, nhead, o.batch_first == true
end
--- transformer:_reset_parameters(): PyTorch's: xavier_uniform_ on every matrix
function A.Transformer:_reset_parameters()
  for _, p in ipairs(self:parameters()) do
    if p:dim() > 1 then init.xavier_uniform_(p) end
  end
end

local TRANSFORMER_FORWARD = { src_mask = "tensor", tgt_mask = "tensor", memory_mask = "tensor",
  src_key_padding_mask = "tensor", tgt_key_padding_mask = "tensor", memory_key_padding_mask = "tensor",
  src_is_causal = "boolean", tgt_is_causal = "boolean", memory_is_causal = "boolean" }
local TRANSFORMER_FORWARD_ORDER = { "src_mask", "tgt_mask", "memory_mask", "src_key_padding_mask",
  "tgt_key_padding_mask", "memory_key_padding_mask", "src_is_causal", "tgt_is_causal", "memory_is_causal" }

--- model(src, tgt[, src_mask[, tgt_mask[, memory_mask[, src_key_padding_mask[,
--- tgt_key_padding_mask[, memory_key_padding_mask[, src_is_causal[, tgt_is_causal[,
--- memory_is_causal = false]]]]]]]]][, opts])
local function transformer_forward(self, src, tgt, ...)
  local fn = "Transformer"
  check.tensor(src, fn, "src")
  check.tensor(tgt, fn, "tgt")
  local o = check.positional(fn, TRANSFORMER_FORWARD_ORDER, TRANSFORMER_FORWARD, ...)
  local b = self.batch_first and 1 or 2
  if src:dim() == 3 and src:size(b) ~= tgt:size(b) then check.fail(fn, "the batch number of src and tgt must be equal") end
  if src:size(-1) ~= self.d_model or tgt:size(-1) ~= self.d_model then
    check.fail(fn, "the feature number of src and tgt must be equal to d_model")
  end
  local memory = self.encoder(src, { mask = o.src_mask, src_key_padding_mask = o.src_key_padding_mask,
    is_causal = o.src_is_causal })
  return self.decoder(tgt, memory, { tgt_mask = o.tgt_mask, memory_mask = o.memory_mask,
    tgt_key_padding_mask = o.tgt_key_padding_mask, memory_key_padding_mask = o.memory_key_padding_mask,
    tgt_is_causal = o.tgt_is_causal, memory_is_causal = o.memory_is_causal })
end
function A.Transformer:forward(...)
  return transformer_forward(self, common.required("Transformer", { "src", "tgt" }, ...))
end

local MASK_OPTIONS = { device = "device", dtype = "dtype" }

--- nn.Transformer.generate_square_subsequent_mask(sz[, device[, dtype]]): the
--- additive causal mask [sz, sz] (-inf above the diagonal, 0 elsewhere);
--- also callable on a model (model:generate_square_subsequent_mask(sz)).
function A.Transformer.generate_square_subsequent_mask(sz, ...)
  local fn = "generate_square_subsequent_mask"
  if check.is_module(sz) then return A.Transformer.generate_square_subsequent_mask(...) end
  check.int(sz, fn, "sz", 0)
  local o = check.positional(fn, { "device", "dtype" }, MASK_OPTIONS, ...)
  return square_subsequent_mask(sz, { device = o.device, dtype = o.dtype })
end

-- torch.nn.attention: SDPBackend and sdpa_kernel(backends, fn[, opts]), which
-- runs fn (PyTorch's context manager as a function). wick has one fused
-- scaled_dot_product_attention per device and the math backend (matmul and
-- softmax, differentiable twice): backends of MATH alone run fn with the math
-- one, any other choice with the fused one (set_priority is taken too).
local SDPBackend = { ERROR = "error", MATH = "math", FLASH_ATTENTION = "flash_attention",
  EFFICIENT_ATTENTION = "efficient_attention", CUDNN_ATTENTION = "cudnn_attention", OVERRIDEABLE = "overrideable" }
local backend_names = {}
for _, v in pairs(SDPBackend) do backend_names[v] = true end
local function sdpa_kernel(backends, fn, opts, ...)
  local list = type(backends) == "table" and backends or { backends }
  for i, b in ipairs(list) do
    if not backend_names[b] then
      check.fail("wick.nn.attention.sdpa_kernel", "backends[%d] is not an SDPBackend (wick.nn.attention.SDPBackend.MATH, ...): %s", i, tostring(b))
    end
  end
  if type(opts) == "table" then check.options(opts, "wick.nn.attention.sdpa_kernel", { set_priority = "boolean" })
  elseif opts ~= nil then return sdpa_kernel(backends, fn, nil, opts, ...) end
  check.callable(fn, "wick.nn.attention.sdpa_kernel", "fn")
  for _, b in ipairs(list) do
    if b ~= SDPBackend.MATH and b ~= SDPBackend.ERROR then return fn(...) end
  end
  return require("wick.nn.functional")._with_math_sdpa(fn, ...)
end
A.attention = check.strict({ SDPBackend = SDPBackend, sdpa_kernel = sdpa_kernel }, "wick.nn.attention")

return A
