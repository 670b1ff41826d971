-- The wick side of bench/gpt.sh: nanoGPT's model (examples/gpt_model.lua) at
-- nanoGPT's CPU size, trained on the same text, the same batches and from the
-- same initial weights as bench/gpt_torch.py (its torch.save'd state_dict,
-- loaded through nn.utils.from_pytorch_names with strict = true).
--
--   build/wick bench/gpt.lua --init PATH [--iters N] [--warmup W] [--threads T] [--text FILE]
--       [--profile]   (phase times of an iteration, then its ops alone at the model's shapes)
--       [--autocast bfloat16|float16]   (the forward and the loss under wick.autocast on the CPU)
--
-- Prints one line: `wick ms_per_iter=<median CPU ms> wall_ms=<median wall ms> loss=<loss after
-- warmup+iters steps> ...`.
local wick = require("wick")
local nn = wick.nn

local opts = { iters = 50, warmup = 5, threads = 1, n_layer = 4, n_head = 4, n_embd = 128, block_size = 64,
  batch_size = 12, lr = 1e-3 }
local i = 1
while arg[i] do
  local key = arg[i]:match("^%-%-([%w-]+)$")
  if not key then error("bench/gpt.lua: unexpected argument " .. arg[i], 0) end
  key = key:gsub("-", "_")
  if key == "profile" or key == "manual" then
    opts[key] = true
  else
    i = i + 1
    opts[key] = tonumber(arg[i]) or arg[i]
  end
  i = i + 1
end
wick.set_num_threads(opts.threads)

local here = (arg and arg[0] or ""):match("^(.*)/") or "."
local gpt = dofile(here .. "/../examples/gpt_model.lua")

-- the text and its vocabulary, as bench/gpt_torch.py reads them (bytes, sorted)
local LICENSES = "/usr/share/common-licenses"
local function read(path) local f = assert(io.open(path, "rb")); local s = f:read("*a"); f:close(); return s end
local text
if opts.text then
  text = read(opts.text)
else
  local names, parts = {}, {}
  local ls = io.popen('ls -1 "' .. LICENSES .. '"')
  for name in ls:lines() do names[#names + 1] = name end
  ls:close()
  table.sort(names)
  for k, name in ipairs(names) do parts[k] = read(LICENSES .. "/" .. name) end
  text = table.concat(parts)
end
local seen, chars = {}, {}
for k = 1, #text do
  local c = text:byte(k)
  if not seen[c] then seen[c] = true; chars[#chars + 1] = c end
end
table.sort(chars)
local stoi = {}
for k, c in ipairs(chars) do stoi[c] = k end -- 1-based ids: PyTorch's id + 1
local n_train = math.floor(#text * 0.9)
local ids = {}
for k = 1, n_train do ids[k] = stoi[text:byte(k)] end
local data = wick.tensor(ids, { dtype = "int64" })
text, ids = nil, nil

local B, T = opts.batch_size, opts.block_size
local function get_batch(step)
  local n = data:numel() - T
  local xs, ys = {}, {}
  for b = 1, B do
    -- bench/gpt_torch.py's batch_offsets: the same integer hash, no RNG
    local off = ((step * B + b) * 2654435761) % 4294967296 % n
    xs[b] = data[{ { off + 1, off + T } }]
    ys[b] = data[{ { off + 2, off + T + 1 } }]
  end
  return wick.stack(xs), wick.stack(ys)
end

local config = gpt.GPTConfig({ n_layer = opts.n_layer, n_head = opts.n_head, n_embd = opts.n_embd, block_size = T,
  bias = false, vocab_size = #chars, dropout = 0.0, no_flash = opts.manual or false })
config.verbose = false
wick.manual_seed(1337)
local model = gpt.GPT(config)
if opts.init then
  model:load_state_dict(nn.utils.from_pytorch_names(wick.load(opts.init)), { strict = true })
end
local optimizer = model:configure_optimizers(1e-1, opts.lr, { 0.9, 0.99 }, "cpu")

-- CPU time of the process per iteration (os.clock; one thread: the work itself,
-- robust to other processes on a shared machine), and wall time
local function step_once(step)
  local X, Y = get_batch(step)
  local c0, t0 = os.clock(), wick.clock()
  local _, loss
  if opts.autocast then
    _, loss = wick.autocast({ device_type = "cpu", dtype = opts.autocast }, function() return model(X, Y) end)
  else
    _, loss = model(X, Y)
  end
  loss:backward()
  nn.utils.clip_grad_norm_(model:parameters(), 1.0)
  optimizer:step()
  optimizer:zero_grad()
  local l = loss:item()
  return os.clock() - c0, l, wick.clock() - t0
end

local times, walls, lossf = {}, {}, nil
for step = 0, opts.warmup + opts.iters - 1 do
  local dt, wall
  dt, lossf, wall = step_once(step)
  if step >= opts.warmup then times[#times + 1], walls[#walls + 1] = dt, wall end
end
table.sort(times)
table.sort(walls)
local mid = math.floor(#times / 2) + 1
print(("wick ms_per_iter=%.3f wall_ms=%.3f loss=%.6f steps=%d threads=%d attention=%s autocast=%s"):format(
  1000 * times[mid], 1000 * walls[mid], lossf, opts.warmup + opts.iters, wick.get_num_threads(),
  model.transformer.h[1].attn.flash and "fused" or "manual", opts.autocast or "off"))

if opts.profile then
  -- where an iteration goes: its phases, then the model's ops alone at the model's
  -- shapes (forward + backward of each, medians of 10)
  local function median_of(fn, n)
    local ts = {}
    for k = 1, n do
      local t0 = os.clock()
      fn(k)
      ts[k] = os.clock() - t0
    end
    table.sort(ts)
    return 1000 * ts[math.floor(n / 2) + 1]
  end
  local step = opts.warmup + opts.iters
  local phases = { forward = {}, backward = {}, clip = {}, ["optimizer step"] = {}, zero_grad = {} }
  for k = 1, 10 do
    local X, Y = get_batch(step + k)
    local t0 = os.clock()
    local _, loss = model(X, Y)
    loss:item()
    local t1 = os.clock()
    loss:backward()
    local t2 = os.clock()
    nn.utils.clip_grad_norm_(model:parameters(), 1.0)
    local t3 = os.clock()
    optimizer:step()
    local t4 = os.clock()
    optimizer:zero_grad()
    local t5 = os.clock()
    phases.forward[k], phases.backward[k], phases.clip[k] = t1 - t0, t2 - t1, t3 - t2
    phases["optimizer step"][k], phases.zero_grad[k] = t4 - t3, t5 - t4
  end
  for _, name in ipairs({ "forward", "backward", "clip", "optimizer step", "zero_grad" }) do
    table.sort(phases[name])
    print(("  phase %-16s %8.3f ms"):format(name, 1000 * phases[name][6]))
  end
  local F = nn.functional
  local C, H = opts.n_embd, opts.n_head
  local function leaf(...) return wick.randn(...):requires_grad_(true) end
  local x = leaf(B, T, C)
  local h4 = leaf(B, T, 4 * C)
  local hs = math.floor(C / H)
  local q, k, v = leaf(B, H, T, hs), leaf(B, H, T, hs), leaf(B, H, T, hs)
  local logits = leaf(B * T, #chars)
  local target = wick.randint(#chars, { B * T }) + 1
  local w, bias = leaf(C), leaf(C)
  local W = leaf(4 * C, C)
  local emb = leaf(#chars, C)
  local idx = wick.randint(#chars, { B, T }) + 1
  local ops = {
    { "gelu (B,T,4C)", function() F.gelu(h4):sum():backward() end, opts.n_layer },
    { "layer_norm (B,T,C)", function() F.layer_norm(x, { C }, w, bias, 1e-5):sum():backward() end, 2 * opts.n_layer + 1 },
    { "sdpa causal (B,H,T,hs)", function()
      F.scaled_dot_product_attention(q, k, v, { is_causal = true }):sum():backward() end, opts.n_layer },
    { "cross_entropy (B*T,V)", function() F.cross_entropy(logits, target):backward() end, 1 },
    { "linear C->4C (c_fc)", function() F.linear(x, W):sum():backward() end, opts.n_layer },
    { "linear 4C->C (mlp c_proj)", function() F.linear(h4, W:t()):sum():backward() end, opts.n_layer },
    { "linear C->V (lm_head)", function() F.linear(x, emb):sum():backward() end, 1 },
    { "embedding", function() F.embedding(idx, emb):sum():backward() end, 1 },
  }
  print("  op (fwd + bwd of a sum, CPU ms)   ms/call   calls/iter   ms/iter")
  for _, op in ipairs(ops) do
    local ms = median_of(op[2], 10)
    print(("  %-34s %8.3f   %6d   %8.3f"):format(op[1], ms, op[3], ms * op[3]))
  end
end
