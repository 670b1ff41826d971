-- A port test: nanoGPT's model.py (github.com/karpathy/nanoGPT), ported line by
-- line in examples/gpt_model.lua (its header lists where the port differs from
-- the original), checked the way a user would check a port:
--  * the model builds with nanoGPT's structure (ModuleDict transformer with a
--    ModuleList h that ipairs walks, lm_head tied to wte) and counts its
--    parameters as model.py's get_num_params does;
--  * a state_dict written by PyTorch's nanoGPT (tools/make_gpt_fixture.py:
--    spec/fixtures/gpt_state_dict.pt, tied weights under both names) loads with
--    strict = true and gives PyTorch's logits and loss (gpt_expected.pt) within 1e-4,
--    through the fused attention and through the masked manual path alike;
--  * configure_optimizers' decay/no-decay groups, a few AdamW steps reduce the loss,
--    generate (temperature, top_k) and crop_block_size run.
local wick = require("wick")
local nn = wick.nn
local support = require("spec.support")
local assert_close = support.assert_close

local gpt = dofile("examples/gpt_model.lua")
local FIX = "spec/fixtures/"

local function quiet(args)
  local c = gpt.GPTConfig(args)
  c.verbose = false
  return c
end

-- the tiny config of tools/make_gpt_fixture.py
local TINY = { block_size = 8, vocab_size = 11, n_layer = 2, n_head = 2, n_embd = 16, dropout = 0.0, bias = true }

-- model.py's count, by hand: what each Linear and LayerNorm holds, wpe left out,
-- the tied wte/lm_head counted once
local function expected_num_params(c)
  local b = c.bias and 1 or 0
  local ln = c.n_embd * (1 + b)
  local E = c.n_embd
  local block = 2 * ln + (E * 3 * E + 3 * E * b) + (E * E + E * b) + (E * 4 * E + 4 * E * b) + (4 * E * E + E * b)
  return c.n_layer * block + ln + c.vocab_size * E
end

local function pytorch_model(args, strict)
  local model = gpt.GPT(quiet(args or TINY))
  local sd = nn.utils.from_pytorch_names(wick.load(FIX .. "gpt_state_dict.pt"))
  local result = model:load_state_dict(sd, { strict = strict ~= false })
  return model, result
end

describe("nanoGPT port (examples/gpt_model.lua)", function()
  it("builds nanoGPT's structure: ModuleDict transformer, ModuleList h walked by ipairs, tied lm_head", function()
    wick.manual_seed(0)
    local model = gpt.GPT(quiet(TINY))
    assert.are.equal("ModuleDict", getmetatable(model.transformer).__name)
    assert.are.equal("ModuleList", getmetatable(model.transformer.h).__name)
    local blocks = 0
    for i, block in ipairs(model.transformer.h) do
      blocks = blocks + 1
      assert.are.equal(i, blocks)
      assert.are.equal("Block", getmetatable(block).__name)
    end
    assert.are.equal(TINY.n_layer, blocks)
    -- weight tying: the same tensor object under both names, counted once by parameters()
    assert.are.equal(model.lm_head.weight, model.transformer.wte.weight)
    local seen = {}
    for _, p in ipairs(model:parameters()) do
      assert.is_nil(seen[p], "a parameter listed twice")
      seen[p] = true
    end
    local sd = model:state_dict()
    assert.is_not_nil(sd["lm_head.weight"])
    assert.is_not_nil(sd["transformer.wte.weight"])
    assert.is_not_nil(sd["transformer.h.1.attn.c_attn.weight"])
    assert.is_not_nil(sd["transformer.h.2.mlp.c_proj.bias"])
    assert.is_nil(sd["transformer.h.3.ln_1.weight"])
    -- crop_block_size: the new wpe is a parameter of the model that trains
    model:crop_block_size(4)
    local found = false
    for _, p in ipairs(model:parameters()) do found = found or p == model.transformer.wpe.weight end
    assert.is_true(found)
    local idx = wick.tensor({ { 1, 2, 3, 4 } }, { dtype = "int64" })
    local _, loss = model(idx, idx)
    loss:backward()
    assert.are.same({ 4, TINY.n_embd }, support.shape_of(model.transformer.wpe.weight.grad))
  end)

  it("counts parameters as model.py does (PyTorch's count for the fixture, 0.80M for nanoGPT's CPU config)", function()
    wick.manual_seed(0)
    local tiny = gpt.GPT(quiet(TINY))
    local expected = wick.load(FIX .. "gpt_expected.pt")
    assert.are.equal(expected.num_params:item(), tiny:get_num_params())
    assert.are.equal(expected_num_params(TINY), tiny:get_num_params())
    assert.are.equal(expected_num_params(TINY) + TINY.block_size * TINY.n_embd, tiny:get_num_params(false))
    local cpu = { n_layer = 4, n_head = 4, n_embd = 128, block_size = 64, vocab_size = 65, bias = false, dropout = 0 }
    local model = gpt.GPT(quiet(cpu))
    assert.are.equal(expected_num_params(cpu), model:get_num_params())
    assert.are.equal("0.80M", ("%.2fM"):format(model:get_num_params() / 1e6))
  end)

  it("initialises like _init_weights: normal(0, 0.02), zero biases, c_proj scaled by 1/sqrt(2 n_layer)", function()
    wick.manual_seed(0)
    local c = { n_layer = 4, n_head = 4, n_embd = 128, block_size = 64, vocab_size = 65, bias = true, dropout = 0 }
    local model = gpt.GPT(quiet(c))
    local function std(t) return t:std():item() end
    local h1 = model.transformer.h[1]
    assert.is_true(math.abs(std(h1.attn.c_attn.weight) - 0.02) < 0.002)
    assert.is_true(math.abs(std(h1.mlp.c_fc.weight) - 0.02) < 0.002)
    assert.is_true(math.abs(std(model.transformer.wpe.weight) - 0.02) < 0.002)
    local scaled = 0.02 / math.sqrt(2 * c.n_layer)
    assert.is_true(math.abs(std(h1.attn.c_proj.weight) - scaled) < 0.1 * scaled)
    assert.is_true(math.abs(std(h1.mlp.c_proj.weight) - scaled) < 0.1 * scaled)
    assert.are.equal(0, h1.attn.c_attn.bias:abs():max():item())
    assert.are.equal(1, h1.ln_1.weight:min():item())
  end)

  it("loads PyTorch's nanoGPT state_dict with strict = true and gives PyTorch's logits and loss", function()
    local model, result = pytorch_model()
    assert.are.same({}, result.missing_keys)
    assert.are.same({}, result.unexpected_keys)
    model:eval()
    local e = wick.load(FIX .. "gpt_expected.pt")
    local idx, targets = e.idx + 1, e.targets + 1 -- PyTorch's 0-based token ids, wick's 1-based ones
    local logits, loss = model(idx, targets)
    assert.are.same(support.shape_of(e.logits), support.shape_of(logits))
    assert_close(logits, e.logits:totable(), 1e-4)
    assert_close(loss, e.loss:item(), 1e-4)
    -- the inference path: lm_head on the last position only, the time dim kept
    local last, none = model(idx)
    assert.is_nil(none)
    assert.are.same({ 2, 1, TINY.vocab_size }, support.shape_of(last))
    assert_close(last, e.last_logits:totable(), 1e-4)
  end)

  it("the masked manual attention (model.py's flash = False) gives the fused path's logits", function()
    local e = wick.load(FIX .. "gpt_expected.pt")
    local args = {}
    for k, v in pairs(TINY) do args[k] = v end
    args.no_flash = true
    -- the manual path registers the causal mask as the buffer attn.bias (persistent,
    -- as in model.py), which PyTorch's flash model did not save: non-strict, and
    -- those are the only keys missing
    local model, result = pytorch_model(args, false)
    assert.are.same({ "transformer.h.1.attn.bias", "transformer.h.2.attn.bias" }, result.missing_keys)
    assert.are.same({}, result.unexpected_keys)
    assert.is_false(model.transformer.h[1].attn.flash)
    model:eval()
    local logits, loss = model(e.idx + 1, e.targets + 1)
    assert_close(logits, e.logits:totable(), 1e-4)
    assert_close(loss, e.loss:item(), 1e-4)
  end)

  it("the token embedding's backward adds the gradient rows of repeated tokens (float32 and float64 alike)", function()
    local e32 = wick.randn(10, 4):requires_grad_(true)
    local e64 = e32:detach():to("float64"):requires_grad_(true)
    local idx = wick.tensor({ { 1, 2, 2 }, { 10, 1, 1 } }, { dtype = "int64" })
    local g = wick.randn(2, 3, 4)
    nn.functional.embedding(idx, e32):backward(g)
    nn.functional.embedding(idx, e64):backward(g:to("float64"))
    local want = {}
    for r = 1, 10 do want[r] = { 0, 0, 0, 0 } end
    for b = 1, 2 do
      for t = 1, 3 do
        local r = idx[b][t]:item()
        for c = 1, 4 do want[r][c] = want[r][c] + g[b][t][c]:item() end
      end
    end
    assert_close(e32.grad, want, 1e-6)
    assert_close(e64.grad, want, 1e-6)
  end)

  it("configure_optimizers makes AdamW's decay / no-decay groups, and a few steps reduce the loss", function()
    wick.manual_seed(1)
    local c = { block_size = 16, vocab_size = 13, n_layer = 2, n_head = 2, n_embd = 32, dropout = 0.0, bias = false }
    local model = gpt.GPT(quiet(c))
    local opt = model:configure_optimizers(0.1, 3e-3, { 0.9, 0.99 }, "cpu")
    assert.are.equal(2, #opt.param_groups)
    -- decayed: wte (= lm_head), wpe, and four matrices per block; not: the LayerNorm weights
    assert.are.equal(2 + 4 * c.n_layer, #opt.param_groups[1].params)
    assert.are.equal(2 * c.n_layer + 1, #opt.param_groups[2].params)
    assert.are.equal(0.1, opt.param_groups[1].weight_decay)
    assert.are.equal(0, opt.param_groups[2].weight_decay)
    -- a repeating sequence: easy to learn
    local rows = {}
    for b = 1, 4 do
      rows[b] = {}
      for t = 1, c.block_size + 1 do rows[b][t] = (b + t) % c.vocab_size + 1 end
    end
    local data = wick.tensor(rows, { dtype = "int64" })
    local x, y = data[{ {}, { 1, c.block_size } }]:contiguous(), data[{ {}, { 2, c.block_size + 1 } }]:contiguous()
    local first, last
    for step = 1, 15 do
      local _, loss = model(x, y)
      loss:backward()
      nn.utils.clip_grad_norm_(model:parameters(), 1.0)
      opt:step()
      opt:zero_grad()
      if step == 1 then first = loss:item() end
      last = loss:item()
    end
    assert.is_true(math.abs(first - math.log(c.vocab_size)) < 0.2) -- starts near uniform, as a 0.02-init GPT does
    assert.is_true(last < 0.7 * first, ("loss %g -> %g"):format(first, last))
  end)

  it("generate samples max_new_tokens tokens of the vocabulary (temperature, top_k), cropping to block_size", function()
    local model = pytorch_model()
    model:eval()
    wick.manual_seed(3)
    local start = wick.tensor({ { 1, 2, 3 } }, { dtype = "int64" })
    local out = model:generate(start, 12, 0.8, 3)
    assert.are.same({ 1, 15 }, support.shape_of(out))
    assert.are.equal("int64", out.dtype)
    assert.are.same({ 1, 2, 3 }, support.values_of(out[{ {}, { 1, 3 } }]:reshape(-1)))
    assert.is_true(out:min():item() >= 1 and out:max():item() <= TINY.vocab_size)
    -- top_k = 1 is greedy: each new token is the argmax of the logits of what came before
    local greedy = model:generate(start, 4, 1.0, 1)
    for t = 4, 7 do
      local ctx = greedy[{ {}, { math.max(1, t - TINY.block_size), t - 1 } }]
      local logits = model(ctx)
      assert.are.equal(logits:reshape(-1):argmax():item(), greedy[1][t]:item())
    end
    -- crop_block_size: a smaller wpe and the model still runs at the new size
    model:crop_block_size(4)
    assert.are.same({ 4, TINY.n_embd }, support.shape_of(model.transformer.wpe.weight))
    local logits = model(wick.tensor({ { 1, 2, 3, 4 } }, { dtype = "int64" }))
    assert.are.same({ 1, 1, TINY.vocab_size }, support.shape_of(logits))
    assert.has_error(function() model(wick.tensor({ { 1, 2, 3, 4, 5 } }, { dtype = "int64" })) end)
  end)
end)

-- examples/gpt.lua, the second main job, in a CI-sized run: a small text, a tiny
-- model, a few iterations; it checkpoints, resumes from the checkpoint, samples.
describe("examples/gpt.lua (nanoGPT's train.py + sample.py), CI-sized", function()
  local runner = arg and arg[-1] or "build/wick"
  local function sh(cmd)
    local ok, _, code = os.execute(cmd)
    if type(ok) == "number" then return ok >= 256 and math.floor(ok / 256) or ok end -- LuaJIT: the wait status
    return code
  end
  local function read(path) local f = assert(io.open(path, "rb")); local s = f:read("*a"); f:close(); return s end

  it("trains, evaluates, writes a checkpoint, resumes from it and samples", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert.are.equal(0, sh("mkdir -p " .. dir))
    local text = dir .. "/text.txt"
    local f = assert(io.open(text, "wb"))
    for i = 1, 60 do f:write(("line %d: the quick brown fox jumps over the lazy dog.\n"):format(i)) end
    f:close()
    local common = ("%s examples/gpt.lua %s --block-size 16 --batch-size 4 --n-layer 1 --n-head 2 --n-embd 16"
      .. " --eval-interval 2 --eval-iters 1 --log-interval 1 --warmup-iters 2 --lr-decay-iters 6 --out %s/ckpt"
      .. " --sample-tokens 20 --top-k 5"):format(runner, text, dir)
    assert.are.equal(0, sh(common .. " --max-iters 4 > " .. dir .. "/out1.txt 2>&1"), read(dir .. "/out1.txt"))
    local out1 = read(dir .. "/out1.txt")
    assert.truthy(out1:find("step 0: train loss", 1, true), out1)
    assert.truthy(out1:find("iter 4: loss", 1, true), out1)
    assert.truthy(out1:find("---------------- sample ----------------\n", 1, true), out1)
    local ckpt = wick.load(dir .. "/ckpt")
    assert.are.equal(4, ckpt.iter_num)
    -- the vocabulary: the text's distinct bytes, sorted (prepare.py's sorted(list(set(data))))
    local seen, chars = {}, {}
    for c in read(text):gmatch(".") do
      if not seen[c] then seen[c] = true; chars[#chars + 1] = c end
    end
    table.sort(chars)
    assert.are.equal(table.concat(chars), ckpt.vocabulary)
    assert.is_not_nil(ckpt.model["lm_head.weight"])
    assert.is_not_nil(ckpt.optimizer.state)
    assert.are.equal(1, ckpt.model_args.n_layer)
    -- the sample: 20 new characters of the vocabulary after the start "\n"
    local sample = out1:match("%-%-%-%- sample %-+\n(.-)\n%-%-%-%-%-")
    assert.is_not_nil(sample, out1)
    assert.are.equal(21, #sample)
    assert.is_nil(sample:find("[^%s%.:%w]"))

    assert.are.equal(0, sh(common .. " --max-iters 6 --resume > " .. dir .. "/out2.txt 2>&1"), read(dir .. "/out2.txt"))
    local out2 = read(dir .. "/out2.txt")
    assert.truthy(out2:find("resuming from " .. dir .. "/ckpt at iteration 4", 1, true), out2)
    assert.is_nil(out2:find("iter 4: loss", 1, true), out2)
    assert.truthy(out2:find("iter 6: loss", 1, true), out2)
    assert.are.equal(6, wick.load(dir .. "/ckpt").iter_num)
    -- a bad option is a usage error (exit 2), not a traceback
    assert.are.equal(2, sh(runner .. " examples/gpt.lua --max-iter 3 > /dev/null 2>&1"))
    os.execute("rm -rf " .. dir)
  end)
end)
