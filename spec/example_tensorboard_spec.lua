-- The training examples' --tensorboard DIR: on a tiny setting each writes an
-- event file there whose records carry the tags it documents (framing and CRCs
-- checked; ctest tensorboard_read reads fashion_mnist's logs with TensorBoard's
-- own reader, tests/tensorboard_write.lua the rest of the writer).
local support = require("spec.support")
local runner = arg and arg[-1] or "build/wick"

local function read(path) local f = assert(io.open(path, "rb")); local s = f:read("*a"); f:close(); return s end

-- Runs the example with --tensorboard in a fresh folder; returns every record
-- of every event file under it (subfolders too: add_scalars writes there).
local function run(script, args)
  local dir = os.tmpname()
  os.remove(dir)
  os.execute("mkdir -p " .. dir)
  local logs = dir .. "/runs"
  local cmd = ("%s examples/%s %s --threads 1 --tensorboard %s > %s/out.txt 2>&1"):format(runner, script, args, logs, dir)
  local ok = os.execute(cmd)
  assert(ok == true or ok == 0, read(dir .. "/out.txt"))
  local all = {}
  local p = io.popen("find '" .. logs .. "' -name 'events.out.tfevents.*'")
  for path in p:lines() do
    for _, r in ipairs(support.tb_records(path)) do all[#all + 1] = r end
  end
  p:close()
  os.execute("rm -rf " .. dir)
  return all
end

-- how many records name `tag` (a protobuf string: its bytes appear as they are)
local function count(records, tag)
  local n = 0
  for _, r in ipairs(records) do
    if r:find(tag, 1, true) then n = n + 1 end
  end
  return n
end

describe("the examples' --tensorboard DIR", function()
  it("gpt.lua: train/loss, val/loss and lr at each evaluation, iter/loss each iteration", function()
    local r = run("gpt.lua", "--block-size 8 --batch-size 2 --n-layer 1 --n-head 2 --n-embd 8 --max-iters 4"
      .. " --eval-interval 2 --eval-iters 1 --sample-tokens 0 --out " .. os.tmpname())
    assert.is_true(#r > 0)
    assert.are.equal(3, count(r, "val/loss")) -- iterations 0, 2 and 4
    assert.are.equal(3, count(r, "train/loss"))
    assert.are.equal(4, count(r, "iter/loss"))
  end)

  it("dcgan.lua: the losses and D's outputs per batch, fake samples per epoch", function()
    local r = run("dcgan.lua", "--dataset fake --batchSize 2 --nz 4 --ngf 2 --ndf 2 --niter 1 --max-batches 2"
      .. " --manualSeed 1 --outf " .. (os.getenv("TMPDIR") or "/tmp"))
    -- add_scalars: one record per value (in its own subfolder, tagged with the main tag), 2 batches
    assert.are.equal(4, count(r, "loss")) -- D and G
    assert.are.equal(6, count(r, "D_output")) -- real, fake_before_G, fake_after_G
    assert.are.equal(1, count(r, "fake_samples"))
    assert.are.equal(1, count(r, "\137PNG"))
  end)

  it("word_language_model.lua: train/loss per batch, valid/loss, lr and test/loss", function()
    local r = run("word_language_model.lua", "--emsize 4 --nhid 4 --bptt 4 --batch_size 2 --epochs 1"
      .. " --max-batches 3 --save " .. os.tmpname())
    assert.are.equal(3, count(r, "train/loss"))
    assert.are.equal(1, count(r, "valid/loss"))
    assert.are.equal(1, count(r, "test/loss"))
  end)

  local have_data = io.open((os.getenv("FASHION_MNIST_DIR") or "/usr/share/datasets/fashion-mnist")
    .. "/t10k-labels-idx1-ubyte.gz")
  if have_data then have_data:close() end
  local fm = have_data and it or pending
  fm("resnet.lua: train/loss and train/lr per step, epoch/loss and epoch/test_accuracy (needs Debian's Fashion-MNIST)",
    function()
      local r = run("resnet.lua", "--epochs 1 --max-steps 2 --batch-size 4 --test-limit 8 --save " .. os.tmpname())
      assert.are.equal(2, count(r, "train/loss"))
      assert.are.equal(2, count(r, "train/lr"))
      assert.are.equal(1, count(r, "epoch/test_accuracy"))
    end)
end)
