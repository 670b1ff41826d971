-- nanoGPT's model.py (github.com/karpathy/nanoGPT), ported line by line to wick.
-- Used by examples/gpt.lua, spec/port_nanogpt_spec.lua and bench/gpt.lua:
--   local gpt = dofile("examples/gpt_model.lua")   -- or require("gpt_model") with examples/ on the path
--   local model = gpt.GPT(gpt.GPTConfig{ n_layer = 4, n_head = 4, n_embd = 128, block_size = 64, vocab_size = 65 })
--
-- Where this port differs from model.py (besides Lua syntax):
--  * GPTConfig is a function filling a table with model.py's defaults, not a dataclass.
--  * Token indices and targets are 1-based (wick's class-index rule), so positions
--    are arange(1, t + 1) and a vocabulary maps characters to 1..vocab_size.
--    cross_entropy keeps ignore_index = -1 (never a valid 1-based class either).
--  * Dimensions are 1-based: split(n_embd, dim=2) is split(n_embd, 3), transpose(1, 2)
--    is transpose(2, 3), transpose(-2, -1) stays, softmax(att, dim=-1) stays.
--  * split returns an array of views (PyTorch: a tuple): `q, k, v = unpack(x:split(n, 3))`.
--  * `B, T, C = x.size()` is `B, T, C = x:size(1), x:size(2), x:size(3)` (x:size() is a table).
--  * Python slicing in Torch7/wick form: x[:, [-1], :] is x[{{}, {-1, -1}}],
--    bias[:,:,:T,:T] is bias[{{}, {}, {1, T}, {1, T}}], idx[:, -bs:] is idx[{{}, {-bs, -1}}],
--    logits[:, -1, :] is logits[{{}, -1}], v[:, [-1]] is v[{{}, {-1, -1}}].
--  * Operators: `q @ k.transpose(-2, -1)` is q:matmul(k:transpose(-2, -1)); `bias == 0`
--    is bias:eq(0) (Lua's == compares identity); float('-inf') is -math.huge;
--    `logits[logits < v[:, [-1]]] = -inf` is logits[logits:lt(v[{{}, {-1, -1}}])] = -math.huge;
--    torch.topk's (values, indices) are two return values (the port keeps the first).
--  * self.apply(self._init_weights) passes a closure (Lua has no bound methods);
--    pn.endswith(s) is pn:sub(-#s) == s.
--  * crop_block_size: nn.Parameter(w[{{1, block_size}}]:detach()): wick's nn.Parameter
--    of a view keeps the view's graph (PyTorch's makes a new leaf), so the port detaches.
--  * configure_optimizers walks parameters() (each tensor once, tied wte/lm_head
--    too, as model.py's named_parameters() dict does) and prints counts without
--    thousands separators.
--  * `isinstance(module, nn.Linear)` is `getmetatable(module) == nn.Linear`; keyword
--    arguments go in an options table (nn.Linear(a, b, {bias = ...}), AdamW's groups).
--  * forward returns two values (logits, loss), Lua's form of the tuple; loss is nil
--    without targets.
--  * @torch.no_grad() on generate is wick.no_grad(function() ... end) inside it.
--  * from_pretrained (Hugging Face download) and estimate_mfu (A100 figures) are
--    left out; configure_optimizers has no fused/device_type choice (wick's AdamW
--    has one implementation) and takes device_type only for the signature.
--  * GPTConfig has one field more, no_flash, to run the manual attention path
--    (model.py's flash = False branch) where the fused kernel exists.
--  * The prints of model.py ("number of parameters: ...") go through an optional
--    config.verbose = false switch so specs stay quiet; they print by default.
local wick = require("wick")
local nn = wick.nn
local F = nn.functional
local unpack = table.unpack or unpack

local M = {}

local function say(config, ...)
  if config.verbose ~= false then print(...) end
end

--- GPTConfig: model.py's dataclass defaults, overridden by the fields of `args`.
function M.GPTConfig(args)
  local config = {
    block_size = 1024,
    vocab_size = 50304, -- GPT-2 vocab_size of 50257, padded up to nearest multiple of 64 for efficiency
    n_layer = 12,
    n_head = 12,
    n_embd = 768,
    dropout = 0.0,
    bias = true, -- True: bias in Linears and LayerNorms, like GPT-2. False: a bit better and faster
    no_flash = false, -- wick's addition: true takes model.py's manual path (masked softmax) even with the fused kernel
  }
  for k, v in pairs(args or {}) do
    if config[k] == nil and k ~= "verbose" then error("GPTConfig: unknown field " .. tostring(k), 2) end
    config[k] = v
  end
  return config
end

--- LayerNorm but with an optional bias. PyTorch doesn't support simply bias=False
M.LayerNorm = nn.Module:extend("LayerNorm")
function M.LayerNorm:init(ndim, bias)
  self.weight = nn.Parameter(wick.ones(ndim))
  if bias then self.bias = nn.Parameter(wick.zeros(ndim)) end
end
function M.LayerNorm:forward(input)
  return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)
end

M.CausalSelfAttention = nn.Module:extend("CausalSelfAttention")
function M.CausalSelfAttention:init(config)
  assert(config.n_embd % config.n_head == 0)
  -- key, query, value projections for all heads, but in a batch
  self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, { bias = config.bias })
  -- output projection
  self.c_proj = nn.Linear(config.n_embd, config.n_embd, { bias = config.bias })
  -- regularization
  self.attn_dropout = nn.Dropout(config.dropout)
  self.resid_dropout = nn.Dropout(config.dropout)
  self.n_head = config.n_head
  self.n_embd = config.n_embd
  self.dropout = config.dropout
  -- flash attention make GPU go brrrrr but support is only in PyTorch >= 2.0
  self.flash = F.scaled_dot_product_attention ~= nil and not config.no_flash
  if not self.flash then
    if F.scaled_dot_product_attention == nil then
      say(config, "WARNING: using slow attention. Flash Attention requires PyTorch >= 2.0")
    end
    -- causal mask to ensure that attention is only applied to the left in the input sequence
    self:register_buffer("bias", wick.tril(wick.ones(config.block_size, config.block_size))
      :view(1, 1, config.block_size, config.block_size))
  end
end

function M.CausalSelfAttention:forward(x)
  local B, T, C = x:size(1), x:size(2), x:size(3) -- batch size, sequence length, embedding dimensionality (n_embd)

  local hs = math.floor(C / self.n_head)
  -- calculate query, key, values for all heads in batch and move head forward to be the batch dim
  local q, k, v = unpack(self.c_attn(x):split(self.n_embd, 3))
  k = k:view(B, T, self.n_head, hs):transpose(2, 3) -- (B, nh, T, hs)
  q = q:view(B, T, self.n_head, hs):transpose(2, 3) -- (B, nh, T, hs)
  v = v:view(B, T, self.n_head, hs):transpose(2, 3) -- (B, nh, T, hs)

  -- causal self-attention; Self-attend: (B, nh, T, hs) x (B, nh, hs, T) -> (B, nh, T, T)
  local y
  if self.flash then
    -- efficient attention using Flash Attention kernels
    y = F.scaled_dot_product_attention(q, k, v, { attn_mask = nil, dropout_p = self.training and self.dropout or 0,
      is_causal = true })
  else
    -- manual implementation of attention
    local att = (q:matmul(k:transpose(-2, -1))) * (1.0 / math.sqrt(k:size(-1)))
    att = att:masked_fill(self.bias[{ {}, {}, { 1, T }, { 1, T } }]:eq(0), -math.huge)
    att = F.softmax(att, -1)
    att = self.attn_dropout(att)
    y = att:matmul(v) -- (B, nh, T, T) x (B, nh, T, hs) -> (B, nh, T, hs)
  end
  y = y:transpose(2, 3):contiguous():view(B, T, C) -- re-assemble all head outputs side by side

  -- output projection
  y = self.resid_dropout(self.c_proj(y))
  return y
end

M.MLP = nn.Module:extend("MLP")
function M.MLP:init(config)
  self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, { bias = config.bias })
  self.gelu = nn.GELU()
  self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, { bias = config.bias })
  self.dropout = nn.Dropout(config.dropout)
end
function M.MLP:forward(x)
  x = self.c_fc(x)
  x = self.gelu(x)
  x = self.c_proj(x)
  x = self.dropout(x)
  return x
end

M.Block = nn.Module:extend("Block")
function M.Block:init(config)
  self.ln_1 = M.LayerNorm(config.n_embd, config.bias)
  self.attn = M.CausalSelfAttention(config)
  self.ln_2 = M.LayerNorm(config.n_embd, config.bias)
  self.mlp = M.MLP(config)
end
function M.Block:forward(x)
  x = x + self.attn(self.ln_1(x))
  x = x + self.mlp(self.ln_2(x))
  return x
end

M.GPT = nn.Module:extend("GPT")
function M.GPT:init(config)
  assert(config.vocab_size ~= nil)
  assert(config.block_size ~= nil)
  self.config = config

  local h = {}
  for i = 1, config.n_layer do h[i] = M.Block(config) end
  -- {name, module} pairs: nanoGPT's order (a Lua table constructor keeps none), so parameters()
  -- and a PyTorch optimizer state dict line up
  self.transformer = nn.ModuleDict({
    { "wte", nn.Embedding(config.vocab_size, config.n_embd) },
    { "wpe", nn.Embedding(config.block_size, config.n_embd) },
    { "drop", nn.Dropout(config.dropout) },
    { "h", nn.ModuleList(h) },
    { "ln_f", M.LayerNorm(config.n_embd, config.bias) },
  })
  self.lm_head = nn.Linear(config.n_embd, config.vocab_size, { bias = false })
  -- weight tying
  self.transformer.wte.weight = self.lm_head.weight -- https://paperswithcode.com/method/weight-tying

  -- init all weights
  self:apply(function(module) self:_init_weights(module) end)
  -- apply special scaled init to the residual projections, per GPT-2 paper
  for pn, p in self:named_parameters() do
    if pn:sub(-#"c_proj.weight") == "c_proj.weight" then
      nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * config.n_layer))
    end
  end

  -- report number of parameters
  say(config, ("number of parameters: %.2fM"):format(self:get_num_params() / 1e6))
end

--- Return the number of parameters in the model. For non-embedding count
--- (default), the position embeddings get subtracted. The token embeddings
--- would too, except due to the parameter sharing these params are actually
--- used as weights in the final layer, so we include them.
function M.GPT:get_num_params(non_embedding)
  if non_embedding == nil then non_embedding = true end
  local n_params = 0
  for _, p in ipairs(self:parameters()) do n_params = n_params + p:numel() end
  if non_embedding then n_params = n_params - self.transformer.wpe.weight:numel() end
  return n_params
end

function M.GPT:_init_weights(module)
  if getmetatable(module) == nn.Linear then
    nn.init.normal_(module.weight, 0.0, 0.02)
    if module.bias ~= nil then nn.init.zeros_(module.bias) end
  elseif getmetatable(module) == nn.Embedding then
    nn.init.normal_(module.weight, 0.0, 0.02)
  end
end

function M.GPT:forward(idx, targets)
  local device = idx.device
  local b, t = idx:size(1), idx:size(2)
  assert(t <= self.config.block_size,
    ("Cannot forward sequence of length %d, block size is only %d"):format(t, self.config.block_size))
  local pos = wick.arange(1, t + 1, { dtype = "int64", device = device }) -- shape (t)

  -- forward the GPT model itself
  local tok_emb = self.transformer.wte(idx) -- token embeddings of shape (b, t, n_embd)
  local pos_emb = self.transformer.wpe(pos) -- position embeddings of shape (t, n_embd)
  local x = self.transformer.drop(tok_emb + pos_emb)
  for _, block in ipairs(self.transformer.h) do
    x = block(x)
  end
  x = self.transformer.ln_f(x)

  local logits, loss
  if targets ~= nil then
    -- if we are given some desired targets also calculate the loss
    logits = self.lm_head(x)
    loss = F.cross_entropy(logits:view(-1, logits:size(-1)), targets:view(-1), { ignore_index = -1 })
  else
    -- inference-time mini-optimization: only forward the lm_head on the very last position
    logits = self.lm_head(x[{ {}, { -1, -1 } }]) -- note: using the range {-1, -1} to preserve the time dim
  end
  return logits, loss
end

--- model surgery to decrease the block size if necessary
function M.GPT:crop_block_size(block_size)
  assert(block_size <= self.config.block_size)
  self.config.block_size = block_size
  self.transformer.wpe.weight = nn.Parameter(self.transformer.wpe.weight[{ { 1, block_size } }]:detach())
  for _, block in ipairs(self.transformer.h) do
    if block.attn.bias ~= nil then
      block.attn.bias = block.attn.bias[{ {}, {}, { 1, block_size }, { 1, block_size } }]
    end
  end
end

function M.GPT:configure_optimizers(weight_decay, learning_rate, betas, device_type)
  -- start with all of the candidate parameters, filter out those that do not require grad
  local decay_params, nodecay_params = {}, {}
  local num_decay_params, num_nodecay_params = 0, 0
  -- create optim groups. Any parameters that is 2D will be weight decayed, otherwise no.
  -- i.e. all weight tensors in matmuls + embeddings decay, all biases and layernorms don't.
  for _, p in ipairs(self:parameters()) do
    if p.requires_grad then
      if p:dim() >= 2 then
        decay_params[#decay_params + 1] = p
        num_decay_params = num_decay_params + p:numel()
      else
        nodecay_params[#nodecay_params + 1] = p
        num_nodecay_params = num_nodecay_params + p:numel()
      end
    end
  end
  local optim_groups = {
    { params = decay_params, weight_decay = weight_decay },
    { params = nodecay_params, weight_decay = 0.0 },
  }
  say(self.config, ("num decayed parameter tensors: %d, with %d parameters"):format(#decay_params, num_decay_params))
  say(self.config, ("num non-decayed parameter tensors: %d, with %d parameters"):format(#nodecay_params,
    num_nodecay_params))
  local _ = device_type
  return wick.optim.AdamW(optim_groups, { lr = learning_rate, betas = betas })
end

--- Take a conditioning sequence of indices idx (int64 tensor of shape (b,t)) and
--- complete the sequence max_new_tokens times, feeding the predictions back into
--- the model each time. Most likely you'll want to make sure to be in
--- model:eval() mode of operation for this.
function M.GPT:generate(idx, max_new_tokens, temperature, top_k)
  temperature = temperature or 1.0
  return wick.no_grad(function()
    for _ = 1, max_new_tokens do
      -- if the sequence context is growing too long we must crop it at block_size
      local idx_cond = idx:size(2) <= self.config.block_size and idx
        or idx[{ {}, { -self.config.block_size, -1 } }]
      -- forward the model to get the logits for the index in the sequence
      local logits = self(idx_cond)
      -- pluck the logits at the final step and scale by desired temperature
      logits = logits[{ {}, -1 }] / temperature
      -- optionally crop the logits to only the top k options
      if top_k ~= nil then
        local v = wick.topk(logits, math.min(top_k, logits:size(-1)))
        logits[logits:lt(v[{ {}, { -1, -1 } }])] = -math.huge
      end
      -- apply softmax to convert logits to (normalized) probabilities
      local probs = F.softmax(logits, -1)
      -- sample from the distribution
      local idx_next = wick.multinomial(probs, 1)
      -- append sampled index to the running sequence and continue
      idx = wick.cat({ idx, idx_next }, 2)
    end
    return idx
  end)
end

return M
