-- pytorch/examples word_language_model/main.py, ported line by line (the model
-- of model.py and the corpus of data.py are in examples/word_language_model/):
-- a word-level language model (LSTM, GRU, RNN_TANH, RNN_RELU or Transformer)
-- trained by truncated backpropagation through time with plain SGD, gradient
-- clipping and a learning rate divided by 4 when the validation loss stops
-- improving.
--
--   build/wick examples/word_language_model.lua [--model LSTM|GRU|RNN_TANH|RNN_RELU|Transformer]
--       [--data DIR] [--emsize N] [--nhid N] [--nlayers N] [--lr X] [--clip X] [--epochs N]
--       [--batch_size N] [--bptt N] [--dropout X] [--tied] [--seed N] [--log-interval N]
--       [--save PATH] [--nhead N] [--dry-run] [--max-batches N] [--threads N] [--device cpu|cuda]
--       [--tensorboard DIR] [--profile [PATH]]
--
-- Where this differs from main.py / data.py / model.py (besides Lua syntax):
--  * the corpus: --data DIR with train.txt, valid.txt and test.txt as in main.py;
--    without --data (main.py's default is a download of Wikitext-2) the script
--    writes such a directory from Debian's /usr/share/common-licenses
--    (examples/word_language_model/data.lua's prepare: 8 lines in 10 to train,
--    1 to valid, 1 to test) and trains on it;
--  * word ids and dimensions are 1-based: `for i in range(0, n - 1, bptt)` is
--    `for i = 1, n - 1, bptt`, source[i:i+seq_len] is source:narrow(1, i, seq_len);
--    len(corpus.dictionary) is corpus.dictionary:len();
--  * an LSTM's hidden state is the table {h, c} (wick's recurrent API), not a tuple;
--  * `p.data.add_(p.grad, alpha=-lr)` is p.data:add_(p.grad, -lr); torch.no_grad
--    is wick.no_grad(function() ... end);
--  * torch.save(model) pickles the whole module; wick saves model:state_dict()
--    and the best model is rebuilt and loaded from it (no flatten_parameters);
--    no --onnx-export, no --accel/--cuda/--mps flags (--device instead); no
--    KeyboardInterrupt handling (Ctrl-C ends the run);
--  * added for short runs: --max-batches N (at most N batches an epoch), --threads;
--    --dry-run as in the current main.py (one batch an epoch); --profile [PATH]
--    profiles 3 steps after a warm-up one, prints the op table and writes a Chrome
--    trace (default profile.json), then stops (examples/profile_steps.lua);
--  * model.lua: TransformerModel extends nn.Transformer as model.py does; its
--    cached causal mask is a non-persistent buffer; PositionalEncoding takes
--    sin/cos of its angle table through Lua's math.sin/math.cos (wick has no
--    sin/cos tensor ops); generate.py is not ported.
local wick = require("wick")
local nn = wick.nn

local here = (arg and arg[0] or ""):match("^(.*)/") or "."
local argparse = dofile(here .. "/argparse.lua")
local data = dofile(here .. "/word_language_model/data.lua")
local model_lib = dofile(here .. "/word_language_model/model.lua")
local profile_steps = dofile(here .. "/profile_steps.lua")

local parser = argparse.ArgumentParser("word_language_model.lua", "wick Wikitext-2 RNN/LSTM/Transformer Language Model")
parser:add_argument("--data", { help = "location of the data corpus (default: made from /usr/share/common-licenses)" })
parser:add_argument("--model", { default = "LSTM", help = "type of network (RNN_TANH, RNN_RELU, LSTM, GRU, Transformer)" })
parser:add_argument("--emsize", { type = "int", default = 200, help = "size of word embeddings" })
parser:add_argument("--nhid", { type = "int", default = 200, help = "number of hidden units per layer" })
parser:add_argument("--nlayers", { type = "int", default = 2, help = "number of layers" })
parser:add_argument("--lr", { type = "float", default = 20, help = "initial learning rate" })
parser:add_argument("--clip", { type = "float", default = 0.25, help = "gradient clipping" })
parser:add_argument("--epochs", { type = "int", default = 40, help = "upper epoch limit" })
parser:add_argument("--batch_size", { type = "int", default = 20, help = "batch size" })
parser:add_argument("--bptt", { type = "int", default = 35, help = "sequence length" })
parser:add_argument("--dropout", { type = "float", default = 0.2, help = "dropout applied to layers (0 = no dropout)" })
parser:add_argument("--tied", { action = "store_true", help = "tie the word embedding and softmax weights" })
parser:add_argument("--seed", { type = "int", default = 1111, help = "random seed" })
parser:add_argument("--log-interval", { type = "int", default = 200, help = "report interval" })
parser:add_argument("--save", { default = (os.getenv("TMPDIR") or "/tmp") .. "/wick-wlm-model.wick",
  help = "path to save the final model" })
parser:add_argument("--nhead", { type = "int", default = 2,
  help = "the number of heads in the encoder/decoder of the transformer model" })
parser:add_argument("--dry-run", { action = "store_true", help = "verify the code and the model" })
parser:add_argument("--max-batches", { type = "int", help = "at most this many batches an epoch" })
parser:add_argument("--threads", { type = "int", help = "CPU threads" })
parser:add_argument("--device", { help = "cpu, cuda or cuda:N (default: cuda when available)" })
parser:add_argument("--tensorboard", { metavar = "DIR", help = "write TensorBoard logs to DIR (wick.utils.tensorboard)" })
parser:add_argument("--profile", { nargs = "?", const = profile_steps.DEFAULT_PATH, metavar = "PATH",
  help = profile_steps.HELP })
local args = parser:parse_args(arg)
for _, k in ipairs({ "emsize", "nhid", "nlayers", "batch_size", "bptt", "log_interval", "nhead" }) do
  if args[k] < 1 then parser:error(("argument --%s: must be at least 1"):format(k:gsub("_", "-"))) end
end

-- Set the random seed manually for reproducibility.
wick.manual_seed(args.seed)
if args.threads then wick.set_num_threads(args.threads) end

local device = wick.device(args.device or (wick.cuda.is_available() and "cuda" or "cpu"))

-------------------------------------------------------------------------------
-- Load data
-------------------------------------------------------------------------------

local corpus = data.Corpus(args.data or data.prepare((os.getenv("TMPDIR") or "/tmp") .. "/wick-wlm-corpus"))

-- Starting from sequential data, batchify arranges the dataset into columns.
-- For instance, with the alphabet as the sequence and batch size 4, we'd get
-- ┌ a g m s ┐
-- │ b h n t │
-- │ c i o u │
-- │ d j p v │
-- │ e k q w │
-- └ f l r x ┘.
-- These columns are treated as independent by the model, which means that the
-- dependence of e. g. 'g' on 'f' can not be learned, but allows more efficient
-- batch processing.
local function batchify(d, bsz)
  -- Work out how cleanly we can divide the dataset into bsz parts.
  local nbatch = math.floor(d:size(1) / bsz)
  -- Trim off any extra elements that wouldn't cleanly fit (remainders).
  d = d:narrow(1, 1, nbatch * bsz)
  -- Evenly divide the data across the bsz batches.
  d = d:view(bsz, -1):t():contiguous()
  return d:to(device)
end

local eval_batch_size = 10
local train_data = batchify(corpus.train, args.batch_size)
local val_data = batchify(corpus.valid, eval_batch_size)
local test_data = batchify(corpus.test, eval_batch_size)

-------------------------------------------------------------------------------
-- Build the model
-------------------------------------------------------------------------------

local ntokens = corpus.dictionary:len()
local function build()
  if args.model == "Transformer" then
    return model_lib.TransformerModel(ntokens, args.emsize, args.nhead, args.nhid, args.nlayers, args.dropout):to(device)
  end
  return model_lib.RNNModel(args.model, ntokens, args.emsize, args.nhid, args.nlayers, args.dropout, args.tied)
    :to(device)
end
local ok, model = pcall(build)
if not ok then parser:error(tostring(model):gsub("^.-:%d+: ", "")) end

local criterion = nn.CrossEntropyLoss()

-------------------------------------------------------------------------------
-- Training code
-------------------------------------------------------------------------------

-- Wraps hidden states in new Tensors, to detach them from their history.
local function repackage_hidden(h)
  if wick.is_tensor(h) then return h:detach() end
  local out = {}
  for i, v in ipairs(h) do out[i] = repackage_hidden(v) end
  return out
end

-- get_batch subdivides the source data into chunks of length args.bptt.
-- If source is equal to the example output of the batchify function, with
-- a bptt-limit of 2, we'd get the following two Variables for i = 1:
-- ┌ a g m s ┐ ┌ b h n t ┐
-- └ b h n t ┘ └ c i o u ┘
-- Note that despite the name of the function, the subdivison of data is not
-- done along the batch dimension (i.e. dimension 2), since that was handled
-- by the batchify function. The chunks are along dimension 1, corresponding
-- to the seq_len dimension in the LSTM.
local function get_batch(source, i)
  local seq_len = math.min(args.bptt, #source - i)
  local d = source:narrow(1, i, seq_len)
  local target = source:narrow(1, i + 1, seq_len):reshape(-1)
  return d, target
end

local function evaluate(data_source)
  -- Turn on evaluation mode which disables dropout.
  model:eval()
  local total_loss = 0.
  local hidden
  if args.model ~= "Transformer" then hidden = model:init_hidden(eval_batch_size) end
  wick.no_grad(function()
    for i = 1, data_source:size(1) - 1, args.bptt do
      local d, targets = get_batch(data_source, i)
      local output
      if args.model == "Transformer" then
        output = model(d)
      else
        output, hidden = model(d, hidden)
        hidden = repackage_hidden(hidden)
      end
      local output_flat = output:view(-1, ntokens)
      total_loss = total_loss + #d * criterion(output_flat, targets):item()
    end
  end)
  return total_loss / (#data_source - 1)
end

local lr = args.lr
local epoch

-- one training step on a batch; returns the loss and the new hidden state
local function train_step(d, targets, hidden)
  -- Starting each batch, we detach the hidden state from how it was previously produced.
  -- If we didn't, the model would try backpropagating all the way to start of the dataset.
  model:zero_grad()
  local output
  if args.model == "Transformer" then
    output = model(d)
  else
    hidden = repackage_hidden(hidden)
    output, hidden = model(d, hidden)
  end
  local loss = criterion(output:view(-1, ntokens), targets)
  loss:backward()

  -- `clip_grad_norm` helps prevent the exploding gradient problem in RNNs / LSTMs.
  nn.utils.clip_grad_norm_(model:parameters(), args.clip)
  for _, p in ipairs(model:parameters()) do p.data:add_(p.grad, -lr) end
  return loss, hidden
end

-- --tensorboard DIR (not in the original): train/loss per batch, valid/loss and lr per
-- epoch; an unwritable DIR fails here, before any training
local writer = args.tensorboard and wick.utils.tensorboard.SummaryWriter(args.tensorboard) or nil
local global_step = 0

local function train()
  -- Turn on training mode which enables dropout.
  model:train()
  local total_loss = 0.
  local start_time = wick.clock()
  local hidden
  if args.model ~= "Transformer" then hidden = model:init_hidden(args.batch_size) end
  local batch = -1
  for i = 1, train_data:size(1) - 1, args.bptt do
    batch = batch + 1
    if args.max_batches and batch >= args.max_batches then break end
    local d, targets = get_batch(train_data, i)
    local loss
    loss, hidden = train_step(d, targets, hidden)

    local loss_value = loss:item()
    total_loss = total_loss + loss_value
    global_step = global_step + 1
    if writer then writer:add_scalar("train/loss", loss_value, global_step) end

    if batch % args.log_interval == 0 and batch > 0 then
      local cur_loss = total_loss / args.log_interval
      local elapsed = wick.clock() - start_time
      print(("| epoch %3d | %5d/%5d batches | lr %02.2f | ms/batch %5.2f | loss %5.2f | ppl %8.2f"):format(
        epoch, batch, math.floor(#train_data / args.bptt), lr, elapsed * 1000 / args.log_interval, cur_loss, math.exp(cur_loss)))
      io.stdout:flush()
      total_loss = 0
      start_time = wick.clock()
    end
    if args.dry_run then break end
  end
end

if args.profile then
  model:train()
  local hidden
  if args.model ~= "Transformer" then hidden = model:init_hidden(args.batch_size) end
  profile_steps.run(function(step)
    local i = ((step - 1) * args.bptt) % math.max(1, train_data:size(1) - 1) + 1
    local d, targets = profile_steps.batch("get_batch", get_batch, train_data, i)
    local _
    _, hidden = train_step(d, targets, hidden)
  end, args.profile)
  return
end

-- Loop over epochs.
local best_val_loss = nil

for e = 1, args.epochs do
  epoch = e
  local epoch_start_time = wick.clock()
  train()
  local val_loss = evaluate(val_data)
  print(("-"):rep(89))
  print(("| end of epoch %3d | time: %5.2fs | valid loss %5.2f | valid ppl %8.2f"):format(epoch,
    wick.clock() - epoch_start_time, val_loss, math.exp(val_loss)))
  print(("-"):rep(89))
  io.stdout:flush()
  if writer then
    writer:add_scalar("valid/loss", val_loss, epoch)
    writer:add_scalar("lr", lr, epoch)
    writer:flush()
  end
  -- Save the model if the validation loss is the best we've seen so far.
  if not best_val_loss or val_loss < best_val_loss then
    wick.save(model:state_dict(), args.save)
    best_val_loss = val_loss
  else
    -- Anneal the learning rate if no improvement has been seen in the validation dataset.
    lr = lr / 4.0
  end
end

-- Load the best saved model.
if best_val_loss then
  model = build()
  model:load_state_dict(wick.load(args.save, { map_location = device }))
end

-- Run on test data.
local test_loss = evaluate(test_data)
if writer then
  writer:add_scalar("test/loss", test_loss, args.epochs)
  writer:close()
end
print(("="):rep(89))
print(("| End of training | test loss %5.2f | test ppl %8.2f"):format(test_loss, math.exp(test_loss)))
print(("="):rep(89))
