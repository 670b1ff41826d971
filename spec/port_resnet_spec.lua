-- A port test: torchvision's models/resnet.py, ported line by line in
-- examples/resnet_model.lua (its header lists where the port differs), and the
-- Fashion-MNIST training script examples/resnet.lua:
--  * resnet18/resnet50 have torchvision's parameter counts and names (1-based
--    indices), its initialisation (kaiming_normal_ fan_out, BN 1/0,
--    zero_init_residual);
--  * on PyTorch's formula weights (tools/reference/ports.py, float64, training
--    mode) ResNet (one block a stage) gives PyTorch's logits and gradients;
--  * the Fashion-MNIST variant (1-channel stem, 10 classes) lowers the loss on
--    a synthetic batch in a few SGD steps;
--  * the script runs a CI-sized epoch when Debian's Fashion-MNIST is installed.
local wick = require("wick")
local nn = wick.nn
local support = require("spec.support")
local unpack = table.unpack or unpack -- luacheck: ignore (5.1)

local resnet = dofile("examples/resnet_model.lua")
local ref = support.reference("ports")

local function count(m)
  local n = 0
  for _, p in ipairs(m:parameters()) do n = n + p:numel() end
  return n
end

describe("torchvision resnet.py port", function()
  it("has torchvision's structure, sizes and initialisation", function()
    local m = resnet.resnet18()
    assert.are.equal(11689512, count(m))
    assert.are.equal(25557032, count(resnet.resnet50()))
    -- PyTorch's names, 0-based Sequential indices made 1-based
    local names = {}
    for name in resnet.ResNet(resnet.BasicBlock, { 1, 1, 1, 1 }):named_parameters() do names[#names + 1] = name end
    local expected = {}
    for i, name in ipairs(ref.resnet.names) do
      expected[i] = name:gsub("%.(%d+)%.", function(d) return "." .. (tonumber(d) + 1) .. "." end)
    end
    assert.are.same(expected, names)
    assert.are.same({ 64, 3, 7, 7 }, m.conv1.weight:size())
    assert.are.same({ 2, 1000 }, m(wick.randn(2, 3, 32, 32)):size())
    -- kaiming_normal_(fan_out, relu): std sqrt(2 / (512 * 3 * 3)) for layer4's convolutions
    local std = m.layer4[2].conv2.weight:std():item()
    assert(math.abs(std - math.sqrt(2 / (512 * 9))) < 0.05 * std, "layer4 conv std " .. std)
    assert.are.equal(1, m.layer2[1].bn1.weight:min():item())
    assert.are.equal(0, m.layer2[1].bn1.bias:abs():max():item())
    assert.are.equal("BasicBlock", getmetatable(m.layer1[1]).__name)
    local z = resnet.resnet18({ zero_init_residual = true })
    assert.are.equal(0, z.layer3[2].bn2.weight:abs():max():item())
    assert.are.equal(1, z.layer3[2].bn1.weight:min():item())
    assert.has_error(function() resnet.resnet18({ pretrained = true }) end)
  end)

  it("gives PyTorch's logits and gradients on formula weights (float64, one block a stage)", function()
    local r = ref.resnet
    local m = resnet.ResNet(resnet.BasicBlock, { 1, 1, 1, 1 }, { num_classes = 10 }):double()
    support.fill_parameters(m)
    m:train()
    local out = m(support.inputs({ 2, 3, 64, 64 }))
    assert.are.same(r.output.shape, out:size())
    support.assert_close(support.values_of(out), { unpack(r.output) }, 1e-9)
    local objective = (out * support.formula(out:size(), 7)):sum()
    objective:backward()
    local j = 0
    for name, p in m:named_parameters() do
      local got = (p.grad * support.formula(p:size(), 100 + j)):sum():item()
      j = j + 1
      assert(math.abs(got - r.grads[j]) <= 1e-7 * (1 + math.abs(r.grads[j])),
        ("%s: gradient projection %.12g, PyTorch %.12g"):format(name, got, r.grads[j]))
    end
  end)

  it("trains the Fashion-MNIST variant: the loss falls on a synthetic batch", function()
    wick.manual_seed(5)
    local m = resnet.resnet18({ num_classes = 10 })
    m.conv1 = nn.Conv2d(1, 64, 7, { stride = 2, padding = 3, bias = false })
    -- ten class templates and noise: 10 images, labels 1..10
    local templates = wick.rand(10, 1, 28, 28)
    local y = wick.tensor({ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }, { dtype = "int64" })
    local x = templates:index_select(1, y) + 0.1 * wick.randn(10, 1, 28, 28)
    local opt = wick.optim.SGD(m:parameters(), { lr = 0.05, momentum = 0.9, weight_decay = 5e-4 })
    local criterion = nn.CrossEntropyLoss()
    local losses = {}
    for k = 1, 4 do
      opt:zero_grad()
      local loss = criterion(m(x), y)
      loss:backward()
      opt:step()
      losses[k] = loss:item()
    end
    assert(losses[4] < 0.5 * losses[1], ("loss %.3f -> %.3f"):format(losses[1], losses[4]))
  end)
end)

describe("examples/resnet.lua, CI-sized", function()
  local runner = arg and arg[-1] or "build/wick"
  local have_data = io.open((os.getenv("FASHION_MNIST_DIR") or "/usr/share/datasets/fashion-mnist")
    .. "/t10k-labels-idx1-ubyte.gz")
  if have_data then have_data:close() end
  local function read(path) local f = assert(io.open(path, "rb")); local s = f:read("*a"); f:close(); return s end

  local test = have_data and it or pending
  test("trains two steps, scores 40 test images, saves and reloads (needs Debian's Fashion-MNIST)", function()
    local out = os.tmpname()
    local ok = os.execute(("%s examples/resnet.lua --epochs 1 --max-steps 2 --batch-size 4 --test-limit 40"
      .. " --threads 1 --save %s.wick > %s 2>&1"):format(runner, out, out))
    local text = read(out)
    assert(ok == true or ok == 0, text)
    assert.truthy(text:find("Epoch: [1][2/2]", 1, true), text)
    assert.truthy(text:find("Epoch 1: train loss", 1, true), text)
    assert.are.same({ 64, 1, 7, 7 }, wick.load(out .. ".wick")["conv1.weight"]:size())
    os.remove(out)
    os.remove(out .. ".wick")
  end)
end)
