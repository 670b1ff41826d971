-- The recurrent layers of wick.nn: RNN, LSTM, GRU and their cells, as
-- PyTorch's, each layer's time loop fused in C (wick._core.rnn_layer,
-- src/core/rnn.c): one product for the input projections of all steps
-- (F.linear over T * B rows), then per step one product h W_hh^T and the
-- gates in one pass; the backward (through time) in C as well.
local wick = require("wick")
local core = wick._core
local Module = require("wick.nn.module")
local F = require("wick.nn.functional")
local check = require("wick.argcheck")
local layers = require("wick.nn.layers")
local rnn_utils = require("wick.nn.rnn_utils")

local R = {}
local Parameter, uniform = layers.Parameter, layers._uniform
local py = Module._py
local function options(opts) return { device = opts and opts.device, dtype = opts and opts.dtype } end

local GATES = { RNN_TANH = 1, RNN_RELU = 1, LSTM = 4, GRU = 3 }
local FUSED_DTYPES = { float32 = true, float64 = true }

-- One layer in one direction: output [T, B, H], final h [B, H] (and c). Other
-- floating dtypes run in float32 and come back in theirs. (name: the module, for errors)
local function run_layer(name, mode, gi, h0, c0, w_hh, b_hh, lengths, reverse)
  local dt = gi.dtype
  if not FUSED_DTYPES[tostring(dt)] then
    local function f(t) return t and t:float() end
    local o, h, c = run_layer(name, mode, f(gi), f(h0), f(c0), f(w_hh), f(b_hh), lengths, reverse)
    return o:to(dt), h:to(dt), c and c:to(dt)
  end
  for _, t in ipairs({ h0, c0 }) do
    if t.dtype ~= dt then check.fail(name, "expected the hidden state of dtype %s (the input's), got %s", dt, t.dtype) end
  end
  local T = gi:size(1)
  local packed = core.rnn_layer(mode, gi, h0, c0, w_hh, b_hh, lengths, reverse)
  return packed:narrow(1, 1, T), packed:select(1, T + 1), c0 and packed:select(1, T + 2) or nil
end

-- One LSTM layer with projections (proj_size P > 0) in one direction, step by step in ops: h_t =
-- W_hr (o * tanh(c_t)), of size P, fed back through w_hh [4H, P]. gi [T, B, 4H]; h0 [B, P], c0 [B, H];
-- lengths (an int64 CPU tensor or nil): a sequence's state stops at its end, its outputs past it 0.
-- Returns output [T, B, P], final h and c.
local function run_projected(gi, h0, c0, w_hh, b_hh, w_hr, lengths, reverse)
  local T, B = gi:size(1), gi:size(2)
  local h, c = h0, c0
  local outs = {}
  local len = lengths and lengths:to(gi.device):view(B, 1)
  for s = 1, T do
    local t = reverse and T - s + 1 or s
    local gates = gi[t] + F.linear(h, w_hh, b_hh)
    local i, f, g, o = gates:chunk(4, 2):unpack()
    local c_new = f:sigmoid() * c + i:sigmoid() * g:tanh()
    local h_new = F.linear(o:sigmoid() * c_new:tanh(), w_hr)
    if len then
      local live = len:ge(t)
      c, h = wick.where(live, c_new, c), wick.where(live, h_new, h)
      outs[t] = wick.where(live, h_new, 0)
    else
      c, h = c_new, h_new
      outs[t] = h_new
    end
  end
  return wick.stack(outs, 1), h, c
end

-- lengths (a table of integers, a number for an unbatched input, or an int64
-- tensor) as an int64 CPU tensor of B elements; nil stays nil.
local function lengths_tensor(name, lengths, B, T)
  if lengths == nil then return nil end
  local t
  if type(lengths) == "number" then t = wick.tensor({ lengths }, { dtype = wick.int64 })
  elseif type(lengths) == "table" and not wick.is_tensor(lengths) then
    for i, v in ipairs(lengths) do check.int(v, name, ("lengths[%d]"):format(i), 0) end
    t = wick.tensor(lengths, { dtype = wick.int64 })
  elseif wick.is_tensor(lengths) then t = lengths:to({ dtype = wick.int64, device = "cpu" })
  else check.expected(name, "lengths", "a table of integers or a tensor", lengths) end
  if t:dim() ~= 1 or t:size(1) ~= B then
    check.fail(name, "lengths must have one entry per sequence (%d), got %d", B, t:dim() == 1 and t:size(1) or t:numel())
  end
  for i = 1, B do
    local v = t[i]:item()
    if v < 0 or v > T then check.fail(name, "lengths[%d] = %d is outside [0, %d] (the sequence length)", i, v, T) end
  end
  return t
end

-- ---- RNN, LSTM, GRU ----
-- Input (seq, batch, feature), or (batch, seq, feature) with batch_first, or
-- unbatched (seq, feature); parameters named and ordered as PyTorch's
-- (weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0, then the _reverse
-- direction), initialised U(-1/sqrt(hidden), 1/sqrt(hidden)).
-- forward(x[, hidden][, {lengths = ...}]) returns output, hidden: an LSTM's
-- hidden is {h, c}.
local RNN_OPTIONS = { num_layers = "integer", nonlinearity = "string", bias = "boolean", batch_first = "boolean",
  dropout = "number", bidirectional = "boolean", proj_size = "integer", device = "device", dtype = "dtype" }
local RNN_ORDER = { num_layers = { "num_layers", "nonlinearity", "bias", "batch_first", "dropout", "bidirectional",
  "device", "dtype" }, other = { "num_layers", "bias", "batch_first", "dropout", "bidirectional", "proj_size", "device",
  "dtype" } }

-- "tanh" or "relu" as the fused op's mode
local function rnn_mode(name, nonlinearity)
  local nl = check.one_of(nonlinearity or "tanh", name, "nonlinearity", { "tanh", "relu" })
  return nl == "tanh" and "RNN_TANH" or "RNN_RELU", nl
end

-- forward's optional arguments: (hx), (hx, opts), (opts) when hx is a plain
-- table without entries (an LSTM's {h, c} has two)
local function forward_args(name, hx, opts)
  if opts == nil and type(hx) == "table" and not wick.is_tensor(hx) and hx[1] == nil and next(hx) ~= nil then
    hx, opts = nil, hx
  end
  opts = check.options(opts, name .. ":forward", { lengths = "table|number|tensor", hx = "tensor|table" })
  if opts.hx ~= nil then -- PyTorch's keyword: gru(x, hx=h)
    if hx ~= nil then check.fail(name, "argument 'hx' given both by position and as an option") end
    hx = opts.hx
  end
  return hx, opts.lengths
end

-- an initial state: a tensor; a table where an LSTM's state tensor is expected
-- gets a hint (the Python habit h, c = cell(x, (h, c)) leaves h a table)
local HINT = { LSTMCell = "LSTMCell returns {h, c}: write local hc = cell(x, hc), or local h, c = unpack(cell(x, {h, c}))",
  LSTM = "LSTM returns output, {h, c}: write local out, hc = lstm(x, hc)" }
local function state_tensor(name, t, what)
  if HINT[name] and type(t) == "table" then
    check.fail(name, "expected a tensor for argument '%s', got table (%s)", what, HINT[name])
  end
  return check.tensor(t, name, what)
end

-- the input's dtype must be the weights' (PyTorch's message, which says what to convert)
local function check_dtype(name, x, w)
  if w ~= nil and x.dtype ~= w.dtype then
    check.fail(name, "RNN input dtype (%s) does not match weight dtype (%s). Convert input: input:to(\"%s\"), or "
      .. "convert model: model:to(\"%s\")", x.dtype, w.dtype, w.dtype, x.dtype)
  end
end

-- RNNBase.extra_repr / RNNCellBase.extra_repr
local function rnn_repr(self)
  local s = ("%d, %d"):format(self.input_size, self.hidden_size)
  if (self.proj_size or 0) ~= 0 then s = s .. ", proj_size=" .. self.proj_size end
  if (self.num_layers or 1) ~= 1 then s = s .. ", num_layers=" .. self.num_layers end
  if not self.bias then s = s .. ", bias=False" end
  if self.batch_first then s = s .. ", batch_first=True" end
  if (self.dropout or 0) ~= 0 then -- (PyTorch keeps float(dropout): 1.0, not 1)
    local text = py(self.dropout)
    if self.dropout == math.floor(self.dropout) and not text:find("[.eEn]") then text = text .. ".0" end
    s = s .. ", dropout=" .. text
  end
  if self.bidirectional then s = s .. ", bidirectional=True" end
  if self.num_layers == nil and (self.nonlinearity or "tanh") ~= "tanh" then -- (a cell's only)
    s = s .. ", nonlinearity=" .. self.nonlinearity
  end
  return s
end

--- m:reset_parameters() (RNN, LSTM, GRU and their cells): every weight and bias from
--- U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)) again, as PyTorch's
local function reset_parameters(self)
  local bound = 1 / math.sqrt(self.hidden_size)
  wick.no_grad(function()
    for _, p in ipairs(self:parameters()) do p:uniform_(-bound, bound) end
  end)
end

-- PyTorch's bases, for isinstance(m, nn.RNNBase) (awd-lstm's WeightDrop)
R.RNNBase = Module:extend("RNNBase")
R.RNNCellBase = Module:extend("RNNCellBase")
-- PyTorch's RNNBase.all_weights: each layer and direction's parameters, a list of lists in
-- _flat_weights_names' order, read from the module as it is now (a WeightDrop's replaced weight shows)
-- (called by hand, rnn:__getattr__("weight_ih_l0") is the parameter, as Module's; as the fallback of a
-- missing name, the lookup it makes finds nothing again: nil)
local function by_layer(self, names, value)
  local out = {}
  local per = #names / (self.num_layers * (self.bidirectional and 2 or 1))
  for i, n in ipairs(names) do
    local g = math.floor((i - 1) / per) + 1
    out[g] = out[g] or {}
    out[g][#out[g] + 1] = value(n)
  end
  return out
end
function R.RNNBase:__getattr__(key)
  local names = rawget(self, "_flat_weights_names")
  if names and key == "all_weights" then return by_layer(self, names, function(n) return self[n] end) end
  if names and key == "_all_weights" then return by_layer(self, names, function(n) return n end) end
  return self[key]
end
--- rnn:get_expected_hidden_size(input[, batch_sizes]): PyTorch's {layers * directions, batch,
--- hidden size (proj_size with one)}, the batch from batch_sizes[1] when given
function R.RNNBase:get_expected_hidden_size(input, batch_sizes)
  local name = getmetatable(self).__name
  local batch
  if batch_sizes ~= nil then
    batch = wick.is_tensor(batch_sizes) and batch_sizes[1]:item() or check.table(batch_sizes, name, "batch_sizes")[1]
  else
    batch = check.tensor(input, name, "input"):size(self.batch_first and 1 or 2)
  end
  local size = (self.proj_size or 0) > 0 and self.proj_size or self.hidden_size
  return { self.num_layers * (self.bidirectional and 2 or 1), batch, size }
end

local function recurrent_class(name)
  local C = R.RNNBase:extend(name, { "input_size", "hidden_size" })
  C.reset_parameters = reset_parameters
  function C:init(input_size, hidden_size, ...)
    check.int(input_size, name, "input_size", 0)
    check.int(hidden_size, name, "hidden_size", 1)
    local spec = {}
    for k, v in pairs(RNN_OPTIONS) do spec[k] = v end
    if name ~= "RNN" then spec.nonlinearity = nil end
    local opts = check.positional(name, name == "RNN" and RNN_ORDER.num_layers or RNN_ORDER.other, spec, ...)
    local layers_n = check.opt_int(opts.num_layers, name, "num_layers", 1, 1)
    -- (four tensors a layer are made one by one: a count no network has would
    -- take minutes before any allocation could fail)
    if layers_n > 65536 then check.fail(name, "num_layers must be at most 65536, got %d", layers_n) end
    local mode = name
    if name == "RNN" then mode, self.nonlinearity = rnn_mode(name, opts.nonlinearity) end
    local P = check.opt_int(opts.proj_size, name, "proj_size", 0, 0)
    if P > 0 and name ~= "LSTM" then check.fail(name, "proj_size argument is only supported for LSTM, not RNN or GRU") end
    if P >= hidden_size then check.fail(name, "proj_size has to be smaller than hidden_size") end
    local dropout = check.opt_number(opts.dropout, name, "dropout", 0, 0, 1)
    if dropout > 0 and layers_n == 1 then -- (PyTorch's UserWarning, word_language_model's 1-layer runs)
      wick.warn(("dropout option adds dropout after all but last recurrent layer, so non-zero dropout expects "
        .. "num_layers greater than 1, but got dropout=%s and num_layers=1"):format(py(dropout)))
    end
    self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, layers_n
    self.bias, self.batch_first = opts.bias ~= false, opts.batch_first == true
    self.dropout, self.bidirectional = dropout, opts.bidirectional == true
    rawset(self, "_mode", mode)
    self.mode, self.proj_size = mode, P -- (PyTorch's fields: "LSTM", "GRU", "RNN_TANH", "RNN_RELU")
    local dirs = self.bidirectional and 2 or 1
    local G, H = GATES[mode] * hidden_size, hidden_size
    local bound = 1 / math.sqrt(hidden_size)
    local o = options(opts)
    local names = {} -- PyTorch's _flat_weights_names, in its order
    for l = 0, layers_n - 1 do
      for d = 1, dirs do
        local suffix = ("_l%d%s"):format(l, d == 2 and "_reverse" or "")
        local out_h = P > 0 and P or H -- (what a layer puts out and feeds back)
        local in_l = l == 0 and input_size or out_h * dirs
        self["weight_ih" .. suffix] = Parameter(uniform({ G, in_l }, bound, o))
        self["weight_hh" .. suffix] = Parameter(uniform({ G, out_h }, bound, o))
        names[#names + 1], names[#names + 2] = "weight_ih" .. suffix, "weight_hh" .. suffix
        if self.bias then
          self["bias_ih" .. suffix] = Parameter(uniform({ G }, bound, o))
          self["bias_hh" .. suffix] = Parameter(uniform({ G }, bound, o))
          names[#names + 1], names[#names + 2] = "bias_ih" .. suffix, "bias_hh" .. suffix
        end
        if P > 0 then -- (PyTorch's weight_hr, after the biases)
          self["weight_hr" .. suffix] = Parameter(uniform({ P, H }, bound, o))
          names[#names + 1] = "weight_hr" .. suffix
        end
      end
    end
    rawset(self, "_flat_weights_names", names)
    rawset(self, "_all_weights", by_layer(self, names, function(n) return n end)) -- (PyTorch's names by layer)
  end

  function C:forward(x, hx, opts)
    local lengths
    if wick.is_tensor(hx) and wick.is_tensor(opts) then -- lstm(x, h0, c0): PyTorch's is lstm(x, (h0, c0))
      check.fail(name, "the state goes in one argument: %s(x, {h0, c0}), not %s(x, h0, c0)", name, name)
    end
    hx, lengths = forward_args(name, hx, opts)
    -- a PackedSequence: its padded batch [T, B, *] and lengths (batch_first
    -- does not apply); the output is packed the same way
    local packed = rnn_utils._is_packed(x) and x or nil
    if packed then
      if lengths ~= nil then check.fail(name, "a PackedSequence carries its lengths: the 'lengths' option is not taken with one") end
      x, lengths = rawget(packed, "_padded"), rawget(packed, "_lengths")
    end
    check.tensor(x, name, "input")
    local mode, H, layers_n = rawget(self, "_mode"), self.hidden_size, self.num_layers
    local dirs = self.bidirectional and 2 or 1
    local unbatched = x:dim() == 2 and not packed
    if x:dim() ~= 2 and x:dim() ~= 3 then check.fail(name, "Expected input to be 2D or 3D, got %dD instead", x:dim()) end
    check_dtype(name, x, rawget(self, "weight_ih_l0"))
    if unbatched then x = x:unsqueeze(2)
    elseif self.batch_first and not packed then x = x:transpose(1, 2) end
    if x:size(3) ~= self.input_size then
      check.fail(name, "input.size(-1) must be equal to input_size. Expected %d, got %d", self.input_size, x:size(3))
    end
    local T, B = x:size(1), x:size(2)
    local lstm = mode == "LSTM"
    local len = lengths_tensor(name, lengths, B, T)
    -- the initial states, [dirs * layers, B, H] each (h's last size the projection's with proj_size)
    local h0, c0
    local P = self.proj_size or 0
    local Hh = P > 0 and P or H
    local function state(t, what, size)
      local want = unbatched and { dirs * layers_n, size } or { dirs * layers_n, B, size }
      state_tensor(name, t, what)
      local shape = t:size()
      local ok = #shape == #want
      for i = 1, #want do ok = ok and shape[i] == want[i] end
      if not ok then
        -- (PyTorch numbers an LSTM's states: hidden[0] is h_0, hidden[1] c_0; wick's {h, c} from 1)
        check.fail(name, "Expected hidden%s size (%s), got [%s]", what == "c_0" and "[2] (c_0)" or what == "h_0" and "[1] (h_0)"
          or "", table.concat(want, ", "), table.concat(shape, ", "))
      end
      return unbatched and t:unsqueeze(2) or t
    end
    if hx ~= nil then
      if lstm then
        if type(hx) ~= "table" or wick.is_tensor(hx) then check.expected(name, "hx", "a {h, c} table", hx) end
        h0, c0 = state(hx[1], "h_0", Hh), state(hx[2], "c_0", H)
      else
        h0 = state(hx, "hx", H)
      end
    end
    h0 = h0 or wick.zeros({ dirs * layers_n, B, Hh }, { dtype = x.dtype, device = x.device })
    if lstm then c0 = c0 or wick.zeros({ dirs * layers_n, B, H }, { dtype = x.dtype, device = x.device }) end
    local h_n, c_n = {}, {}
    local input = x
    for l = 0, layers_n - 1 do
      local outs = {}
      for d = 1, dirs do
        local suffix = ("_l%d%s"):format(l, d == 2 and "_reverse" or "")
        local k = l * dirs + d
        local gi = F.linear(input, self["weight_ih" .. suffix], self["bias_ih" .. suffix])
        if P > 0 then
          outs[d], h_n[k], c_n[k] = run_projected(gi, h0:select(1, k), c0:select(1, k), self["weight_hh" .. suffix],
            self["bias_hh" .. suffix], self["weight_hr" .. suffix], len, d == 2)
        else
          outs[d], h_n[k], c_n[k] = run_layer(name, mode, gi, h0:select(1, k), lstm and c0:select(1, k) or nil,
            self["weight_hh" .. suffix], self["bias_hh" .. suffix], len, d == 2)
        end
      end
      input = dirs == 2 and wick.cat(outs, 3) or outs[1]
      if self.dropout > 0 and self.training and l < layers_n - 1 then input = F.dropout(input, self.dropout, true) end
    end
    local out, hn = input, wick.stack(h_n, 1)
    local cn = lstm and wick.stack(c_n, 1) or nil
    if packed then
      out = rnn_utils._from_padded(out, lengths, rawget(packed, "_order"))
    elseif unbatched then
      out, hn = out:squeeze(2), hn:squeeze(2)
      if cn then cn = cn:squeeze(2) end
    elseif self.batch_first then
      out = out:transpose(1, 2)
    end
    wick._first_of(out, name)
    if lstm then return out, { hn, cn } end
    return out, hn
  end

  C.extra_repr = rnn_repr
  -- PyTorch's cuDNN weight compaction: wick's layers read the weights as they are
  function C:flatten_parameters() end
  return C
end
R.RNN = recurrent_class("RNN")
R.LSTM = recurrent_class("LSTM")
R.GRU = recurrent_class("GRU")

-- ---- RNNCell, LSTMCell, GRUCell ----
-- One step: cell(input[, hx]) with input [B, input_size] or unbatched
-- [input_size]; returns h' (an LSTMCell: {h', c'}, PyTorch's tuple). Parameters
-- weight_ih [G, input_size], weight_hh [G, H], bias_ih, bias_hh [G].
local CELL_OPTIONS = { bias = "truth", nonlinearity = "string", device = "device", dtype = "dtype" }
local CELL_ORDER = { RNNCell = { "bias", "nonlinearity", "device", "dtype" }, other = { "bias", "device", "dtype" } }

local function cell_class(name, base_mode)
  local C = R.RNNCellBase:extend(name, { "input_size", "hidden_size" })
  C.reset_parameters = reset_parameters
  function C:init(input_size, hidden_size, ...)
    check.int(input_size, name, "input_size", 0)
    check.int(hidden_size, name, "hidden_size", 1)
    local spec = {}
    for k, v in pairs(CELL_OPTIONS) do spec[k] = v end
    if name ~= "RNNCell" then spec.nonlinearity = nil end
    local opts = check.positional(name, CELL_ORDER[name] or CELL_ORDER.other, spec, ...)
    local mode = base_mode
    if name == "RNNCell" then mode, self.nonlinearity = rnn_mode(name, opts.nonlinearity) end
    rawset(self, "_mode", mode)
    self.input_size, self.hidden_size, self.bias = input_size, hidden_size, opts.bias ~= false
    local G, bound, o = GATES[mode] * hidden_size, 1 / math.sqrt(hidden_size), options(opts)
    self.weight_ih = Parameter(uniform({ G, input_size }, bound, o))
    self.weight_hh = Parameter(uniform({ G, hidden_size }, bound, o))
    if self.bias then
      self.bias_ih = Parameter(uniform({ G }, bound, o))
      self.bias_hh = Parameter(uniform({ G }, bound, o))
    end
  end

  function C:forward(x, hx, opts)
    -- PyTorch's keyword: cell(x, hx=h) (an LSTMCell's {h, c} is an array: no name)
    if type(hx) == "table" and not wick.is_tensor(hx) and hx[1] == nil and hx.hx ~= nil then hx, opts = hx.hx, nil end
    if wick.is_tensor(opts) then -- (cell(x, h, c): PyTorch's state is one tuple)
      check.fail(name, "takes its state as one argument: %s", name == "LSTMCell" and "cell(x, {h, c}), PyTorch's "
        .. "cell(x, (h, c)), which returns {h, c}" or "cell(x, h)")
    end
    if opts ~= nil then check.options(opts, name, { hx = "tensor|table" }); hx = opts.hx end
    check.tensor(x, name, "input")
    if x:dim() ~= 1 and x:dim() ~= 2 then check.fail(name, "Expected input to be 1D or 2D, got %dD instead", x:dim()) end
    check_dtype(name, x, rawget(self, "weight_ih"))
    local unbatched = x:dim() == 1
    if unbatched then x = x:unsqueeze(1) end
    if x:size(2) ~= self.input_size then
      check.fail(name, "input has inconsistent input_size: got %d expected %d", x:size(2), self.input_size)
    end
    local mode, B, H = rawget(self, "_mode"), x:size(1), self.hidden_size
    local lstm = mode == "LSTM"
    local function state(t, what)
      state_tensor(name, t, what)
      if unbatched then
        if t:dim() ~= 1 then check.fail(name, "Expected %s to be 1D, got %dD instead", what, t:dim()) end
        t = t:unsqueeze(1)
      elseif t:dim() ~= 2 then
        check.fail(name, "Expected %s to be 2D, got %dD instead", what, t:dim())
      end
      if t:size(1) ~= B then check.fail(name, "Input batch size %d doesn't match %s batch size %d", B, what, t:size(1)) end
      if t:size(2) ~= H then check.fail(name, "%s has inconsistent hidden_size: got %d, expected %d", what, t:size(2), H) end
      return t
    end
    local h0, c0
    if hx ~= nil then
      if lstm then
        if type(hx) ~= "table" or wick.is_tensor(hx) then check.expected(name, "hx", "a {h, c} table", hx) end
        h0, c0 = state(hx[1], "hx[1]"), state(hx[2], "hx[2]")
      else
        h0 = state(hx, "hx")
      end
    else
      h0 = wick.zeros({ B, H }, { dtype = x.dtype, device = x.device })
      if lstm then c0 = h0 end
    end
    local gi = F.linear(x, self.weight_ih, self.bias_ih):unsqueeze(1)
    local _, h, c = run_layer(name, mode, gi, h0, c0, self.weight_hh, self.bias_hh, nil, false)
    if unbatched then
      h = h:squeeze(1)
      if c then c = c:squeeze(1) end
    end
    if lstm then return { h, c } end
    return h
  end

  C.extra_repr = rnn_repr
  return C
end
R.RNNCell = cell_class("RNNCell", "RNN_TANH")
R.LSTMCell = cell_class("LSTMCell", "LSTM")
R.GRUCell = cell_class("GRUCell", "GRU")

return R
