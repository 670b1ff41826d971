-- Train a character-level GPT, the nanoGPT way (github.com/karpathy/nanoGPT: the
-- model of model.py in examples/gpt_model.lua, the loop of train.py, the data of
-- data/shakespeare_char/prepare.py, the sampling of sample.py), on a text this
-- machine has: by default the files of /usr/share/common-licenses, concatenated
-- in sorted order; any text file as an argument.
--
--   build/wick examples/gpt.lua [text-file] [--max-iters N] [--eval-interval N] [--eval-iters N]
--       [--log-interval N] [--device cpu|cuda] [--out PATH] [--resume] [--seed N] [--threads N]
--       [--batch-size N] [--block-size N] [--n-layer N] [--n-head N] [--n-embd N] [--dropout X]
--       [--lr X] [--min-lr X] [--warmup-iters N] [--lr-decay-iters N] [--weight-decay X]
--       [--grad-clip X] [--sample-tokens N] [--temperature X] [--top-k N] [--start TEXT]
--       [--tensorboard DIR] [--profile [PATH]]
--
-- The defaults are nanoGPT's CPU run of its README (config/train_shakespeare_char.py
-- with --device=cpu --compile=False --eval_iters=20 --block_size=64 --batch_size=12
-- --n_layer=4 --n_head=4 --n_embd=128 --max_iters=2000 --lr_decay_iters=2000
-- --dropout=0.0). `make gpt` runs it; `make gpt ARGS="--max-iters 20"` is a short one.
--
-- Where this differs from nanoGPT's train.py / prepare.py / sample.py (besides Lua syntax):
--  * one script does prepare.py (vocabulary, 90/10 split), train.py and sample.py;
--    the text is read whole into memory (no train.bin/val.bin/meta.pkl files) and
--    the vocabulary travels in the checkpoint instead of meta.pkl;
--  * characters are bytes (Lua strings): a UTF-8 character of several bytes is
--    several tokens; token ids are 1-based (wick's class-index rule);
--  * get_batch: torch.randint gives 0-based offsets i and data[i:i+block_size] is
--    data[{{i + 1, i + block_size}}] (Torch7's inclusive 1-based range);
--  * no DDP, no gradient accumulation, no GradScaler/autocast (float32 only),
--    no torch.compile, no wandb, no MFU estimate;
--  * options are --kebab-case (--max-iters for --max_iters); --resume replaces
--    --init_from=resume; --out is the checkpoint file itself (nanoGPT: out_dir/ckpt.pt);
--    the loop runs exactly --max-iters iterations (train.py's runs max_iters + 1);
--    as in train.py a checkpoint is written at an evaluation whose val loss is the
--    best so far, and (unlike train.py) also once at the end of the run, so a short
--    run always leaves one;
--  * --profile [PATH] (not in nanoGPT: PyTorch's profiler tutorial): one warm-up
--    iteration, then 3 under wick.profiler.profile; prints the op table and writes
--    a Chrome trace to PATH (default profile.json), then stops (examples/profile_steps.lua;
--    give the text file before --profile, or use --profile=PATH);
--  * the sample at the end is sample.py's (start "\n", temperature 0.8, top_k 200),
--    one sample of --sample-tokens tokens;
--  * the log line shows the learning rate where train.py shows MFU; --log-interval
--    defaults to 10 (the README's CPU command: 1), with a progress bar on a
--    terminal between log lines.
local wick = require("wick")

local USAGE = [==[
usage: build/wick examples/gpt.lua [text-file] [--max-iters N] [--eval-interval N] [--eval-iters N]
    [--log-interval N] [--device cpu|cuda|cuda:N] [--out PATH] [--resume] [--seed N] [--threads N]
    [--batch-size N] [--block-size N] [--n-layer N] [--n-head N] [--n-embd N] [--dropout X]
    [--lr X] [--min-lr X] [--warmup-iters N] [--lr-decay-iters N] [--weight-decay X] [--beta1 X] [--beta2 X]
    [--grad-clip X] [--sample-tokens N] [--temperature X] [--top-k N] [--start TEXT] [--no-decay-lr]
    [--tensorboard DIR (TensorBoard logs: train/loss, val/loss and lr at each evaluation, iter/loss each iteration)]
    [--profile [PATH] (profile 3 iterations after a warm-up one, print the op table, write a Chrome trace
    to PATH, default profile.json, and stop)]]==]

-- option -> default; false: a flag
local DEFAULTS = {
  -- I/O
  out = (os.getenv("TMPDIR") or "/tmp") .. "/wick-gpt.ckpt",
  eval_interval = 250, log_interval = 10, eval_iters = 20, resume = false,
  -- data
  batch_size = 12, block_size = 64,
  -- model
  n_layer = 4, n_head = 4, n_embd = 128, dropout = 0.0, bias = false,
  -- AdamW
  lr = 1e-3, max_iters = 2000, weight_decay = 1e-1, beta1 = 0.9, beta2 = 0.99, grad_clip = 1.0,
  -- learning rate decay
  no_decay_lr = false, warmup_iters = 100, lr_decay_iters = 2000, min_lr = 1e-4,
  -- system
  device = false, seed = 1337, threads = false,
  -- sampling (sample.py)
  sample_tokens = 500, temperature = 0.8, top_k = 200, start = "\n",
  -- --profile [PATH] (examples/profile_steps.lua)
  profile = false,
  -- --tensorboard DIR: where train.py logs to wandb (wandb_log), wick.utils.tensorboard
  tensorboard = false,
}
local FLAGS = { resume = true, bias = true, no_decay_lr = true }
local STRINGS = { out = true, device = true, start = true, profile = true, tensorboard = true }
local OPTIONAL = { profile = "profile.json" } -- the value when the option comes alone

local function usage_error(message)
  io.stderr:write("gpt.lua: ", message, "\n", USAGE, "\n")
  os.exit(2)
end

-- a problem with the files given: a message, no traceback
local function die(message)
  io.stderr:write("gpt.lua: ", message, "\n")
  os.exit(1)
end

local function parse_args(argv)
  local opts, given = {}, {}
  for k, v in pairs(DEFAULTS) do opts[k] = v end
  local i = 1
  while argv[i] do
    local a = argv[i]
    if a == "--help" or a == "-h" then
      print(USAGE)
      os.exit(0)
    end
    local key, value = a:match("^%-%-([%w-]+)=?(.*)$")
    if not key then
      if opts.text then usage_error("unexpected argument " .. a) end
      opts.text = a
    else
      local has_value = a:find("=", 1, true) ~= nil
      key = key:gsub("-", "_")
      if DEFAULTS[key] == nil then usage_error("unknown option " .. a) end
      if FLAGS[key] then
        if has_value then usage_error("option --" .. key:gsub("_", "-") .. " takes no value") end
        opts[key] = true
      else
        if not has_value and OPTIONAL[key] and (argv[i + 1] == nil or argv[i + 1]:match("^%-%-")) then
          value = OPTIONAL[key]
        elseif not has_value then
          i = i + 1
          value = argv[i]
        end
        if value == nil then usage_error("option " .. a .. " needs a value") end
        if STRINGS[key] then
          opts[key] = value
        else
          opts[key] = tonumber(value)
          if opts[key] == nil then usage_error("option " .. a .. " needs a number, got " .. value) end
        end
      end
      given[key] = true
    end
    i = i + 1
  end
  for _, k in ipairs({ "max_iters", "eval_interval", "eval_iters", "log_interval", "batch_size", "block_size",
    "n_layer", "n_head", "n_embd", "warmup_iters", "lr_decay_iters", "sample_tokens", "top_k", "seed" }) do
    local v = opts[k]
    if v ~= math.floor(v) or v < 0 or ((k ~= "max_iters" and k ~= "warmup_iters" and k ~= "sample_tokens"
      and k ~= "seed") and v < 1) then
      usage_error(("--%s must be a whole number%s, got %s"):format(k:gsub("_", "-"),
        (k == "max_iters" or k == "warmup_iters" or k == "sample_tokens" or k == "seed") and " >= 0" or " >= 1", v))
    end
  end
  if opts.n_embd % opts.n_head ~= 0 then usage_error("--n-embd must be a multiple of --n-head") end
  return opts, given
end

local opts, given = parse_args(arg or {})
if opts.threads then wick.set_num_threads(opts.threads) end
local device = wick.device(opts.device or (wick.cuda.is_available() and "cuda" or "cpu"))
wick.manual_seed(opts.seed)

-- the model of nanoGPT's model.py, next to this script
local here = (arg and arg[0] or ""):match("^(.*)/") or "."
local gpt = dofile(here .. "/gpt_model.lua")
local profile_steps = dofile(here .. "/profile_steps.lua")

-- ---- data (nanoGPT's data/shakespeare_char/prepare.py) ----
local LICENSES = "/usr/share/common-licenses"
local function read_file(path)
  local f, err = io.open(path, "rb")
  if not f then die("cannot read " .. tostring(err)) end
  local s = f:read("*a")
  f:close()
  return s
end

local function read_text(path)
  if path then return read_file(path), path end
  local names = {}
  local ls = io.popen('ls -1 "' .. LICENSES .. '" 2>/dev/null')
  for name in ls:lines() do names[#names + 1] = name end
  ls:close()
  if #names == 0 then die("no files in " .. LICENSES .. "; give a text file as an argument") end
  table.sort(names)
  local parts = {}
  for _, name in ipairs(names) do parts[#parts + 1] = read_file(LICENSES .. "/" .. name) end
  return table.concat(parts), ("%s (%d files)"):format(LICENSES, #names)
end

local checkpoint
if opts.resume then
  local ok, loaded = pcall(wick.load, opts.out, { map_location = device })
  if not ok then die(("--resume: %s"):format(tostring(loaded))) end
  checkpoint = loaded
end

local data, source = read_text(opts.text)
print(("length of dataset in characters: %d (%s)"):format(#data, source))
-- get all the unique characters that occur in this text (from the checkpoint when resuming)
local chars
if checkpoint then
  chars = checkpoint.vocabulary
else
  local seen, list = {}, {}
  for i = 1, #data do
    local c = data:sub(i, i)
    if not seen[c] then seen[c] = true; list[#list + 1] = c end
  end
  table.sort(list)
  chars = table.concat(list)
end
local vocab_size = #chars
print(("vocab size: %d"):format(vocab_size))
-- create a mapping from characters to integers (1-based)
local stoi, itos = {}, {}
for i = 1, vocab_size do
  local c = chars:sub(i, i)
  stoi[c], itos[i] = i, c
end
local function encode(s)
  local ids = {}
  for i = 1, #s do
    local id = stoi[s:sub(i, i)]
    if id == nil then die(("character %q is not in the vocabulary"):format(s:sub(i, i))) end
    ids[i] = id
  end
  return ids
end
local function decode(ids)
  local out = {}
  for i = 1, #ids do out[i] = itos[ids[i]] end
  return table.concat(out)
end

local start_ids = opts.sample_tokens > 0 and encode(opts.start) or nil -- a bad --start fails now, not after training

-- create the train and test splits
local n = #data
local n_train = math.floor(n * 0.9)
local train_data = wick.tensor(encode(data:sub(1, n_train)), { dtype = "int64" })
local val_data = wick.tensor(encode(data:sub(n_train + 1)), { dtype = "int64" })
print(("train has %d tokens, val has %d tokens"):format(train_data:numel(), val_data:numel()))
data = nil

local block_size, batch_size = opts.block_size, opts.batch_size
if val_data:numel() <= block_size then
  die(("the text is too short for --block-size %d (val split: %d characters)"):format(block_size, val_data:numel()))
end

local function get_batch(split)
  local d = split == "train" and train_data or val_data
  local ix = wick.randint(d:numel() - block_size, { batch_size })
  local xs, ys = {}, {}
  for b = 1, batch_size do
    local i = ix[b]:item()
    xs[b] = d[{ { i + 1, i + block_size } }]
    ys[b] = d[{ { i + 2, i + 1 + block_size } }]
  end
  return wick.stack(xs):to(device), wick.stack(ys):to(device)
end

-- ---- model ----
local model_args = { n_layer = opts.n_layer, n_head = opts.n_head, n_embd = opts.n_embd, block_size = block_size,
  bias = opts.bias, vocab_size = vocab_size, dropout = opts.dropout }
local iter_num, best_val_loss = 0, 1e9
if checkpoint then
  -- force these config attributes to be equal otherwise we can't even resume training
  for _, k in ipairs({ "n_layer", "n_head", "n_embd", "block_size", "bias", "vocab_size" }) do
    if given[k] and checkpoint.model_args[k] ~= opts[k] then
      io.stderr:write(("gpt.lua: --%s %s differs from the checkpoint's %s; using the checkpoint's\n"):format(
        k:gsub("_", "-"), tostring(opts[k]), tostring(checkpoint.model_args[k])))
    end
    model_args[k] = checkpoint.model_args[k]
  end
  block_size = model_args.block_size
end
local model = gpt.GPT(gpt.GPTConfig(model_args))
if checkpoint then
  model:load_state_dict(checkpoint.model)
  iter_num = checkpoint.iter_num
  best_val_loss = checkpoint.best_val_loss
end
model:to(device)

local optimizer = model:configure_optimizers(opts.weight_decay, opts.lr, { opts.beta1, opts.beta2 }, device.type)
if checkpoint then
  optimizer:load_state_dict(checkpoint.optimizer)
  if checkpoint.rng_state then wick.set_rng_state(checkpoint.rng_state) end
  print(("resuming from %s at iteration %d (best val loss %.4f)"):format(opts.out, iter_num, best_val_loss))
  checkpoint = nil
end

-- helps estimate an arbitrarily accurate loss over either split using many batches
local function estimate_loss()
  local out = {}
  model:eval()
  wick.no_grad(function()
    for _, split in ipairs({ "train", "val" }) do
      local losses = wick.zeros(opts.eval_iters)
      for k = 1, opts.eval_iters do
        local X, Y = get_batch(split)
        local _, loss = model(X, Y)
        losses[k] = loss:item()
      end
      out[split] = losses:mean():item()
    end
  end)
  model:train()
  return out
end

-- learning rate decay scheduler (cosine with warmup)
local function get_lr(it)
  -- 1) linear warmup for warmup_iters steps
  if it < opts.warmup_iters then return opts.lr * (it + 1) / (opts.warmup_iters + 1) end
  -- 2) if it > lr_decay_iters, return min learning rate
  if it > opts.lr_decay_iters then return opts.min_lr end
  -- 3) in between, use cosine decay down to min learning rate
  local decay_ratio = (it - opts.warmup_iters) / math.max(opts.lr_decay_iters - opts.warmup_iters, 1)
  assert(0 <= decay_ratio and decay_ratio <= 1)
  local coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio)) -- coeff ranges 0..1
  return opts.min_lr + coeff * (opts.lr - opts.min_lr)
end

local saved_iter
local function save_checkpoint()
  if saved_iter == iter_num then return end
  saved_iter = iter_num
  local ckpt = {
    model = model:state_dict(),
    optimizer = optimizer:state_dict(),
    model_args = model_args,
    iter_num = iter_num,
    best_val_loss = best_val_loss,
    config = opts,
    vocabulary = chars,
  }
  wick.save(ckpt, opts.out)
  print(("saved checkpoint to %s (iteration %d)"):format(opts.out, iter_num))
end

-- forward, backward, update on the batch X, Y; fetches the next batch into X, Y
-- and returns the loss
local X, Y
local fetch_batch = get_batch -- under --profile: a "get_batch" range
local function train_step()
  local _, loss = model(X, Y)
  -- immediately fetch the next batch while the model is busy (here: in turn)
  X, Y = fetch_batch("train")
  loss:backward()
  -- clip the gradient
  if opts.grad_clip ~= 0.0 then wick.nn.utils.clip_grad_norm_(model:parameters(), opts.grad_clip) end
  optimizer:step()
  -- flush the gradients as soon as we can, no need for this memory anymore
  optimizer:zero_grad()
  return loss
end

if opts.profile then
  X, Y = get_batch("train")
  fetch_batch = function(split) return profile_steps.batch("get_batch", get_batch, split) end
  profile_steps.run(function(i)
    local lr = opts.no_decay_lr and opts.lr or get_lr(iter_num + i - 1)
    for _, param_group in ipairs(optimizer.param_groups) do param_group.lr = lr end
    train_step()
  end, opts.profile)
  return
end

-- ---- training loop (nanoGPT's train.py) ----
local tty = wick._core.isatty(1)
print(("training on %s: %d layers, %d heads, %d wide, block %d, batch %d, %d thread(s), %d iterations"):format(
  tostring(device), model_args.n_layer, model_args.n_head, model_args.n_embd, block_size, batch_size,
  wick.get_num_threads(), opts.max_iters))

-- --tensorboard: what train.py sends to wandb; an unwritable DIR fails here, before training
local writer = opts.tensorboard and wick.utils.tensorboard.SummaryWriter(opts.tensorboard) or nil

X, Y = get_batch("train") -- fetch the very first batch
local t_start, t0 = wick.clock(), wick.clock()
local timed_iters, timed_seconds = 0, 0
local last_loss
local start_iter = iter_num
while true do
  -- determine and set the learning rate for this iteration
  local lr = opts.no_decay_lr and opts.lr or get_lr(iter_num)
  for _, param_group in ipairs(optimizer.param_groups) do param_group.lr = lr end

  -- evaluate the loss on train/val sets and write checkpoints
  if iter_num % opts.eval_interval == 0 then
    if tty then io.write("\r" .. (" "):rep(79) .. "\r") end
    local losses = estimate_loss()
    print(("step %d: train loss %.4f, val loss %.4f"):format(iter_num, losses.train, losses.val))
    if writer then
      writer:add_scalar("train/loss", losses.train, iter_num)
      writer:add_scalar("val/loss", losses.val, iter_num)
      writer:add_scalar("lr", lr, iter_num)
      writer:flush()
    end
    if losses.val < best_val_loss then
      best_val_loss = losses.val
      if iter_num > start_iter then save_checkpoint() end
    end
  end
  if iter_num >= opts.max_iters then break end

  -- forward, backward, update
  local loss = train_step()

  -- timing and logging
  local t1 = wick.clock()
  local dt = t1 - t0
  t0 = t1
  if iter_num > start_iter then -- the first iteration warms up; leave it out of the average
    timed_iters, timed_seconds = timed_iters + 1, timed_seconds + dt
  end
  iter_num = iter_num + 1
  last_loss = loss:item()
  if writer then writer:add_scalar("iter/loss", last_loss, iter_num) end
  if iter_num % opts.log_interval == 0 or iter_num == opts.max_iters then
    if tty then io.write("\r" .. (" "):rep(79) .. "\r") end
    print(("iter %d: loss %.4f, time %.2fms, lr %.2e"):format(iter_num, last_loss, dt * 1000, lr))
  elseif tty then
    local width, since = 30, iter_num % opts.log_interval
    local done = math.floor(width * since / opts.log_interval)
    io.write(("\r[%s%s] iter %d/%d  loss %.4f  %.1f ms/iter "):format(("="):rep(done), (" "):rep(width - done),
      iter_num, opts.max_iters, last_loss, dt * 1000))
    io.flush()
  end
end
if tty then io.write("\r" .. (" "):rep(79) .. "\r") end
if timed_iters > 0 then
  print(("trained %d iterations in %.1f s: %.2f ms/iteration (after the first), final loss %.4f"):format(
    iter_num - start_iter, wick.clock() - t_start, 1000 * timed_seconds / timed_iters, last_loss))
end
save_checkpoint()
if writer then writer:close() end

-- ---- sample (nanoGPT's sample.py) ----
if opts.sample_tokens > 0 then
  model:eval()
  local x = wick.tensor({ start_ids }, { dtype = "int64", device = device })
  local y = model:generate(x, opts.sample_tokens, opts.temperature, opts.top_k)
  local ids = {}
  for i = 1, y:size(2) do ids[i] = y[1][i]:item() end
  print("---------------- sample ----------------")
  print(decode(ids))
  print("----------------------------------------")
end
