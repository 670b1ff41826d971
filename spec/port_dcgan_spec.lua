-- A port test: pytorch/examples dcgan/main.py, ported line by line in
-- examples/dcgan.lua (the networks and weights_init in examples/dcgan_model.lua;
-- the header of dcgan.lua lists where the port differs):
--  * Generator and Discriminator have main.py's layers and shapes (nz -> 64 x 64),
--    weights_init draws the conv weights from N(0, 0.02), BN weights from N(1, 0.02);
--  * on PyTorch's formula weights (tools/reference/ports.py, float64, training
--    mode) G(z), D(x), D(G(z)), the generator's loss and both networks'
--    gradients match PyTorch's;
--  * D's loss on real vs fake images falls in a few of main.py's Adam steps, and
--    then G's loss against that D;
--  * the script's --dry-run on --dataset fake runs one cycle and writes the
--    image grids and the checkpoints.
local wick = require("wick")
local nn = wick.nn
local support = require("spec.support")
local unpack = table.unpack or unpack -- luacheck: ignore (5.1)

local have = rawget(nn, "ConvTranspose2d") ~= nil
local test = have and it or pending
local dcgan = dofile("examples/dcgan_model.lua")
local ref = support.reference("ports")

local function projections(m)
  local out, j = {}, 0
  for _, p in m:named_parameters() do
    out[#out + 1] = (p.grad * support.formula(p:size(), 100 + j)):sum():item()
    j = j + 1
  end
  return out
end

describe("dcgan port (examples/dcgan_model.lua)", function()
  test("builds main.py's networks and initialises them like weights_init", function()
    wick.manual_seed(1)
    local netG = dcgan.Generator(1, 100, 64, 3)
    local netD = dcgan.Discriminator(1, 3, 64)
    netG:apply(dcgan.weights_init)
    netD:apply(dcgan.weights_init)
    local fake = netG(wick.randn(2, 100, 1, 1))
    assert.are.same({ 2, 3, 64, 64 }, fake:size())
    assert.are.same({ 2 }, netD(fake):size())
    local w = netG.main[1].weight
    assert.are.same({ 100, 512, 4, 4 }, w:size()) -- ConvTranspose2d: (in, out, kH, kW)
    assert(math.abs(w:std():item() - 0.02) < 0.002, "conv std " .. w:std():item())
    local bn = netD.main[4] -- Conv2d, LeakyReLU, Conv2d, BatchNorm2d (main.3 in PyTorch's 0-based names)
    assert(math.abs(bn.weight:mean():item() - 1) < 0.01 and bn.bias:abs():max():item() == 0)
    assert.is_nil(netG.main[1].bias)
  end)

  test("matches PyTorch on formula weights: G(z), D, the generator's loss, the gradients", function()
    local r = ref.dcgan
    local G = dcgan.Generator(1, 8, 4, 1):double()
    local D = dcgan.Discriminator(1, 1, 4):double()
    support.fill_parameters(G)
    support.fill_parameters(D)
    local fake = G(support.inputs({ 2, 8, 1, 1 }))
    assert.are.same(r.fake_shape, fake:size())
    support.assert_close((fake * support.formula(fake:size(), 11)):sum():item(), r.fake_proj, 1e-9)
    support.assert_close(support.values_of(fake[1][1][32]), { unpack(r.fake_row) }, 1e-9)
    support.assert_close(support.values_of(D(support.inputs({ 2, 1, 64, 64 }))), { unpack(r.d_real) }, 1e-9)
    local out = D(fake)
    support.assert_close(support.values_of(out), { unpack(r.d_fake) }, 1e-9)
    local errG = nn.BCELoss()(out, wick.ones(2, { dtype = "float64" }))
    support.assert_close(errG:item(), r.errG, 1e-9)
    errG:backward()
    support.assert_close(projections(G), r.gradsG, 1e-7)
    support.assert_close(projections(D), r.gradsD, 1e-7)
  end)

  test("main.py's Adam steps lower D's loss, then G's against that D", function()
    wick.manual_seed(2)
    local nz = 8
    local netG = dcgan.Generator(1, nz, 4, 1)
    local netD = dcgan.Discriminator(1, 1, 4)
    netG:apply(dcgan.weights_init)
    netD:apply(dcgan.weights_init)
    local criterion = nn.BCELoss()
    local optimizerD = wick.optim.Adam(netD:parameters(), { lr = 0.0002 * 10, betas = { 0.5, 0.999 } })
    local optimizerG = wick.optim.Adam(netG:parameters(), { lr = 0.0002 * 10, betas = { 0.5, 0.999 } })
    -- "real" images: a bright square on a dark background, normalised to [-1, 1]
    local real = wick.full({ 8, 1, 64, 64 }, -1)
    real[{ {}, {}, { 17, 48 }, { 17, 48 } }] = 1
    local noise = wick.randn(8, nz, 1, 1)
    local function errD()
      netD:zero_grad()
      local e = criterion(netD(real), wick.ones(8)) + criterion(netD(netG(noise):detach()), wick.zeros(8))
      e:backward()
      return e:item()
    end
    local d = {}
    for k = 1, 5 do d[k] = errD(); optimizerD:step() end
    assert(d[5] < 0.8 * d[1], ("errD %.4f -> %.4f"):format(d[1], d[5]))
    netD:eval() -- a fixed D for G's steps
    local g = {}
    for k = 1, 5 do
      netG:zero_grad()
      local e = criterion(netD(netG(noise)), wick.ones(8))
      e:backward()
      optimizerG:step()
      g[k] = e:item()
    end
    assert(g[5] < g[1], ("errG %.4f -> %.4f"):format(g[1], g[5]))
  end)
end)

describe("examples/dcgan.lua, CI-sized", function()
  local runner = arg and arg[-1] or "build/wick"
  local function read(path) local f = assert(io.open(path, "rb")); local s = f:read("*a"); f:close(); return s end

  test("--dry-run on fake data: one cycle, the image grids, the checkpoints", function()
    local dir = os.tmpname()
    os.remove(dir)
    local ok = os.execute(("%s examples/dcgan.lua --dataset fake --dry-run --batchSize 4 --nz 8 --ngf 4 --ndf 4"
      .. " --manualSeed 3 --threads 1 --outf %s > %s.log 2>&1"):format(runner, dir, dir))
    local text = read(dir .. ".log")
    assert(ok == true or ok == 0, text)
    assert.truthy(text:find("Random Seed: \t3", 1, true), text)
    assert.truthy(text:find("[0/1][0/", 1, true), text)
    assert.truthy(text:find("Loss_D: ", 1, true), text)
    local grid = read(dir .. "/fake_samples_epoch_000.ppm")
    -- 4 images of 3 x 64 x 64 in one row, 2 pixels of padding
    assert.truthy(grid:find("^P6\n266 68\n255\n"), grid:sub(1, 20))
    assert.are.equal(#"P6\n266 68\n255\n" + 266 * 68 * 3, #grid)
    assert.are.same({ 8, 32, 4, 4 }, wick.load(dir .. "/netG_epoch_0.wick")["main.1.weight"]:size()) -- (nz, ngf * 8, kH, kW)
    assert.is_not_nil(wick.load(dir .. "/netD_epoch_0.wick")["main.4.running_mean"])
    -- --dataset is required, as in main.py
    local bad = os.execute(runner .. " examples/dcgan.lua > /dev/null 2>&1")
    assert.is_true(bad ~= true and bad ~= 0)
    os.execute("rm -rf '" .. dir .. "' '" .. dir .. ".log'")
  end)
end)
