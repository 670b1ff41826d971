-- pytorch/examples word_language_model/model.py, ported line by line:
--   local model = dofile("examples/word_language_model/model.lua")
--   local m = model.RNNModel("LSTM", ntoken, ninp, nhid, nlayers, dropout, tie_weights)
--   local output, hidden = m(input, hidden)      -- input (seq, batch) int64, 1-based ids
--   local t = model.TransformerModel(ntoken, ninp, nhead, nhid, nlayers, dropout)
--   local output = t(input[, has_mask = true])
-- Where this differs from model.py (besides Lua syntax): see the header of
-- examples/word_language_model.lua. In short: F.log_softmax(x, dim=1) is
-- F.log_softmax(x, 2); TransformerModel extends nn.Transformer as model.py does
-- (its decoder stack, built by nn.Transformer, is replaced by the Linear, so the
-- parameters are encoder.layers.1..., encoder.norm, decoder, input_emb); the
-- mask it caches (src_mask) is a non-persistent buffer (PyTorch: a plain
-- attribute), so it moves with to() and stays out of state_dict().
local wick = require("wick")
local nn = wick.nn
local F = nn.functional

local model = {}

-- Container module with an encoder, a recurrent module, and a decoder.
local RNNModel = nn.Module:extend("RNNModel")
model.RNNModel = RNNModel

function RNNModel:init(rnn_type, ntoken, ninp, nhid, nlayers, dropout, tie_weights)
  dropout = dropout or 0.5
  self.ntoken = ntoken
  self.drop = nn.Dropout(dropout)
  self.encoder = nn.Embedding(ntoken, ninp)
  if rnn_type == "LSTM" or rnn_type == "GRU" then
    self.rnn = nn[rnn_type](ninp, nhid, nlayers, { dropout = dropout })
  else
    local nonlinearity = ({ RNN_TANH = "tanh", RNN_RELU = "relu" })[rnn_type]
    if not nonlinearity then
      error("An invalid option for `--model` was supplied, options are ['LSTM', 'GRU', 'RNN_TANH' or 'RNN_RELU']", 2)
    end
    self.rnn = nn.RNN(ninp, nhid, nlayers, { nonlinearity = nonlinearity, dropout = dropout })
  end
  self.decoder = nn.Linear(nhid, ntoken)

  -- Optionally tie weights as in:
  -- "Using the Output Embedding to Improve Language Models" (Press & Wolf 2016)
  -- https://arxiv.org/abs/1608.05859
  -- and
  -- "Tying Word Vectors and Word Classifiers: A Loss Framework for Language Modeling" (Inan et al. 2016)
  -- https://arxiv.org/abs/1611.01462
  if tie_weights then
    if nhid ~= ninp then error("When using the tied flag, nhid must be equal to emsize", 2) end
    self.decoder.weight = self.encoder.weight
  end

  self:init_weights()

  self.rnn_type = rnn_type
  self.nhid = nhid
  self.nlayers = nlayers
end

function RNNModel:init_weights()
  local initrange = 0.1
  nn.init.uniform_(self.encoder.weight, -initrange, initrange)
  nn.init.zeros_(self.decoder.bias)
  nn.init.uniform_(self.decoder.weight, -initrange, initrange)
end

function RNNModel:forward(input, hidden)
  local emb = self.drop(self.encoder(input))
  local output
  output, hidden = self.rnn(emb, hidden)
  output = self.drop(output)
  local decoded = self.decoder(output)
  decoded = decoded:view(-1, self.ntoken)
  return F.log_softmax(decoded, 2), hidden
end

function RNNModel:init_hidden(bsz)
  local weight = self:parameters()[1]
  if self.rnn_type == "LSTM" then
    return { weight:new_zeros(self.nlayers, bsz, self.nhid), weight:new_zeros(self.nlayers, bsz, self.nhid) }
  else
    return weight:new_zeros(self.nlayers, bsz, self.nhid)
  end
end

-- Inject some information about the relative or absolute position of the tokens
-- in the sequence: sines and cosines of different frequencies, the same size as
-- the embeddings, added to them.
--   PosEncoder(pos, 2i) = sin(pos/10000^(2i/d_model))
--   PosEncoder(pos, 2i+1) = cos(pos/10000^(2i/d_model))
local PositionalEncoding = nn.Module:extend("PositionalEncoding")
model.PositionalEncoding = PositionalEncoding

-- torch.sin / torch.cos of a tensor: wick has no sin and cos ops, so the values
-- go through Lua's math.sin / math.cos (once, when the table is built)
local function map(t, f)
  local values = t:contiguous():view(-1):totable()
  for i, v in ipairs(values) do values[i] = f(v) end
  return wick.tensor(values, { dtype = t.dtype }):view(t:size())
end

function PositionalEncoding:init(d_model, dropout, max_len)
  dropout, max_len = dropout or 0.1, max_len or 5000
  self.dropout = nn.Dropout(dropout)

  local pe = wick.zeros(max_len, d_model)
  local position = wick.arange(0, max_len):unsqueeze(2)
  local div_term = (wick.arange(0, d_model, 2) * (-math.log(10000.0) / d_model)):exp()
  local angles = position * div_term
  pe[{ {}, { 1, -1, 2 } }] = map(angles, math.sin)
  pe[{ {}, { 2, -1, 2 } }] = map(angles, math.cos)
  pe = pe:unsqueeze(1):transpose(1, 2)
  self:register_buffer("pe", pe)
end

-- x: [sequence length, batch size, embed dim] -> the same
function PositionalEncoding:forward(x)
  x = x + self.pe[{ { 1, x:size(1) } }]
  return self.dropout(x)
end

-- Container module with an encoder, a recurrent or transformer module, and a decoder.
local TransformerModel = nn.Transformer:extend("TransformerModel")
model.TransformerModel = TransformerModel

function TransformerModel:init(ntoken, ninp, nhead, nhid, nlayers, dropout)
  dropout = dropout or 0.5
  TransformerModel.super.init(self, { d_model = ninp, nhead = nhead, dim_feedforward = nhid,
    num_encoder_layers = nlayers })
  self.model_type = "Transformer"
  self.src_mask = nil
  self.pos_encoder = PositionalEncoding(ninp, dropout)

  self.input_emb = nn.Embedding(ntoken, ninp)
  self.ninp = ninp
  self.decoder = nn.Linear(ninp, ntoken)

  self:init_weights()
end

function TransformerModel:_generate_square_subsequent_mask(sz)
  -- 0 on and below the diagonal, -inf above it
  return wick.full({ sz, sz }, -math.huge):triu(1)
end

function TransformerModel:init_weights()
  local initrange = 0.1
  nn.init.uniform_(self.input_emb.weight, -initrange, initrange)
  nn.init.zeros_(self.decoder.bias)
  nn.init.uniform_(self.decoder.weight, -initrange, initrange)
end

function TransformerModel:forward(src, has_mask)
  if has_mask == nil then has_mask = true end
  if has_mask then
    local device = src.device
    if self.src_mask == nil or self.src_mask:size(1) ~= #src then
      local mask = self:_generate_square_subsequent_mask(#src):to(device)
      self:register_buffer("src_mask", mask, false) -- self.src_mask = mask, kept out of state_dict()
    end
  else
    self.src_mask = nil
  end

  src = self.input_emb(src) * math.sqrt(self.ninp)
  src = self.pos_encoder(src)
  local output = self.encoder(src, { mask = self.src_mask })
  output = self.decoder(output)
  return F.log_softmax(output, -1)
end

return model
