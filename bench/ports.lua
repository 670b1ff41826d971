-- wick's side of the port benchmarks (PyTorch's side is bench/ports_torch.py;
-- both print `name<TAB>value` lines, bench/ports.sh runs them side by side).
--   build/wick bench/ports.lua THREADS lm CORPUS_DIR   one epoch of the LSTM language model
--   build/wick bench/ports.lua THREADS resnet          ResNet-18 steps on Fashion-MNIST
--   build/wick bench/ports.lua 1 prepare CORPUS_DIR    writes the corpus (common-licenses)
-- lm: examples/word_language_model.lua's train() at main.py's defaults (LSTM,
--     emsize = nhid = 200, 2 layers, dropout 0.2, batch 20, bptt 35, lr 20, clip
--     0.25) over CORPUS_DIR/train.txt: the epoch time, ms per batch, mean loss.
-- Times are wall clock and this process's CPU time (os.clock; one thread, so the
-- CPU time is the work itself when other jobs share the cores).
-- resnet: RESNET_STEPS (21) SGD steps (lr 0.1, momentum 0.9, weight decay 5e-4)
--     of examples/resnet.lua's Fashion-MNIST ResNet-18 on batches of RESNET_BATCH
--     (64) training images in order; the first step is a warm-up, not timed.
local wick = require("wick")
local nn = wick.nn

local threads = tonumber(arg[1] or "1")
local what = arg[2] or "lm"
wick.set_num_threads(threads)

local function emit(name, value) io.write(("%s\t%.6g\n"):format(name, value)) io.flush() end

local data = dofile("examples/word_language_model/data.lua")

if what == "prepare" then
  local dir = assert(arg[3], "prepare needs a directory")
  data.prepare(dir)
elseif what == "lm" then
  wick.manual_seed(1111)
  local model_lib = dofile("examples/word_language_model/model.lua")
  local corpus = data.Corpus(assert(arg[3], "lm needs the corpus directory"))
  local ntokens, bsz, bptt, lr, clip = corpus.dictionary:len(), 20, 35, 20.0, 0.25
  local train = corpus.train
  local nbatch = math.floor(train:size(1) / bsz)
  local source = train:narrow(1, 1, nbatch * bsz):view(bsz, -1):t():contiguous()
  local model = model_lib.RNNModel("LSTM", ntokens, 200, 200, 2, 0.2)
  local criterion = nn.CrossEntropyLoss()
  model:train()
  local hidden = model:init_hidden(bsz)
  local params = model:parameters()
  local t0, c0 = wick.clock(), os.clock()
  local batches, total = 0, 0
  for i = 1, source:size(1) - 1, bptt do
    local seq_len = math.min(bptt, #source - i)
    local x, target = source:narrow(1, i, seq_len), source:narrow(1, i + 1, seq_len):reshape(-1)
    model:zero_grad()
    hidden = { hidden[1]:detach(), hidden[2]:detach() }
    local output
    output, hidden = model(x, hidden)
    local loss = criterion(output:view(-1, ntokens), target)
    loss:backward()
    nn.utils.clip_grad_norm_(params, clip)
    for _, p in ipairs(params) do p.data:add_(p.grad, -lr) end
    total = total + loss:item()
    batches = batches + 1
  end
  local epoch, cpu = wick.clock() - t0, os.clock() - c0
  emit("epoch_s", epoch)
  emit("epoch_cpu_s", cpu)
  emit("ms_per_batch", 1000 * epoch / batches)
  emit("batches", batches)
  emit("mean_loss", total / batches)
elseif what == "resnet" then
  wick.manual_seed(1)
  local resnet = dofile("examples/resnet_model.lua")
  local steps = tonumber(os.getenv("RESNET_STEPS") or "21")
  local batch = tonumber(os.getenv("RESNET_BATCH") or "64")
  local train = wick.data.FashionMNIST { train = true }
  local loader = wick.data.DataLoader(train, { batch_size = batch })
  local model = resnet.resnet18({ num_classes = 10 })
  model.conv1 = nn.Conv2d(1, 64, 7, { stride = 2, padding = 3, bias = false })
  local opt = wick.optim.SGD(model:parameters(), { lr = 0.1, momentum = 0.9, weight_decay = 5e-4 })
  local criterion = nn.CrossEntropyLoss()
  model:train()
  local it = loader:iter()
  local function step()
    local x, y = it()
    x = (x - 0.2860) / 0.3530
    opt:zero_grad()
    local loss = criterion(model(x), y)
    loss:backward()
    opt:step()
    return loss:item()
  end
  step() -- warm-up (not timed)
  local t0, c0 = wick.clock(), os.clock()
  local loss
  for _ = 2, steps do loss = step() end
  local elapsed, cpu = wick.clock() - t0, os.clock() - c0
  emit("steps_s", elapsed)
  emit("ms_per_step", 1000 * elapsed / (steps - 1))
  emit("cpu_ms_per_step", 1000 * cpu / (steps - 1))
  emit("images_per_s", (steps - 1) * batch / elapsed)
  emit("last_loss", loss)
else
  error("bench/ports.lua: what is lm, resnet or prepare")
end
