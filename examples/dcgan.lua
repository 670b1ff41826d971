-- pytorch/examples dcgan/main.py, ported line by line (the networks and
-- weights_init are in examples/dcgan_model.lua): a DCGAN, trained with Adam
-- (lr 0.0002, beta1 0.5) on BCELoss, D on real then fake images, then G.
--
--   build/wick examples/dcgan.lua --dataset fashion-mnist|fake [--dataroot DIR] [--batchSize N]
--       [--imageSize 64] [--nz N] [--ngf N] [--ndf N] [--niter N] [--lr X] [--beta1 X]
--       [--dry-run] [--netG PATH] [--netD PATH] [--outf DIR] [--manualSeed N]
--       [--max-batches N] [--threads N] [--device cpu|cuda] [--tensorboard DIR] [--profile [PATH]]
--
-- Where this differs from main.py (besides Lua syntax):
--  * datasets: "fashion-mnist" (Debian's dataset-fashion-mnist package, or
--    --dataroot / FASHION_MNIST_DIR; 1 channel like main.py's "mnist") and "fake"
--    (uniform random 3-channel images, main.py's FakeData); no cifar10, lsun,
--    imagenet, folder or lfw (no torchvision, no download). transforms.Resize to
--    --imageSize is F.interpolate(bilinear), Normalize((0.5,), (0.5,)) is
--    (x - 0.5) / 0.5, both applied to each batch; no --workers;
--  * the networks take nz, ngf, ndf and nc as arguments (main.py: globals);
--    --ngpu is accepted and ignored (no data_parallel over GPUs); --cuda/--mps
--    are --device;
--  * vutils.save_image(..., normalize=True) writes a binary PGM/PPM grid (8 a
--    row, 2 pixels of padding, scaled from min..max as make_grid's normalize
--    does) instead of a PNG; the checkpoints are state dicts in wick's format
--    (netG_epoch_%d.wick);
--  * labels: torch.full((batch_size,), real_label, dtype=real_cpu.dtype) is
--    wick.full({batch_size}, real_label, {dtype = real_cpu.dtype, device = device});
--  * added for short runs: --max-batches N (at most N batches an epoch), --threads;
--    the progress line is printed every --log-every batches (main.py: each one);
--    --profile [PATH] profiles 3 steps after a warm-up one, prints the op table and
--    writes a Chrome trace (default profile.json), then stops (examples/profile_steps.lua).
local wick = require("wick")
local nn = wick.nn
local F = nn.functional
local optim = wick.optim

local here = (arg and arg[0] or ""):match("^(.*)/") or "."
local argparse = dofile(here .. "/argparse.lua")
local dcgan = dofile(here .. "/dcgan_model.lua")
local profile_steps = dofile(here .. "/profile_steps.lua")

local parser = argparse.ArgumentParser("dcgan.lua", "DCGAN")
parser:add_argument("--dataset", { required = true, help = "fashion-mnist | fake" })
parser:add_argument("--dataroot", { help = "path to dataset" })
parser:add_argument("--batchSize", { type = "int", default = 64, help = "input batch size" })
parser:add_argument("--imageSize", { type = "int", default = 64, help = "the height / width of the input image to network" })
parser:add_argument("--nz", { type = "int", default = 100, help = "size of the latent z vector" })
parser:add_argument("--ngf", { type = "int", default = 64 })
parser:add_argument("--ndf", { type = "int", default = 64 })
parser:add_argument("--niter", { type = "int", default = 25, help = "number of epochs to train for" })
parser:add_argument("--lr", { type = "float", default = 0.0002, help = "learning rate, default=0.0002" })
parser:add_argument("--beta1", { type = "float", default = 0.5, help = "beta1 for adam. default=0.5" })
parser:add_argument("--dry-run", { action = "store_true", help = "check a single training cycle works" })
parser:add_argument("--ngpu", { type = "int", default = 1, help = "number of GPUs to use (ignored)" })
parser:add_argument("--netG", { default = "", help = "path to netG (to continue training)" })
parser:add_argument("--netD", { default = "", help = "path to netD (to continue training)" })
parser:add_argument("--outf", { default = ".", help = "folder to output images and model checkpoints" })
parser:add_argument("--manualSeed", { type = "int", help = "manual seed" })
parser:add_argument("--max-batches", { type = "int", help = "at most this many batches an epoch" })
parser:add_argument("--log-every", { type = "int", default = 1, help = "print the losses every N batches" })
parser:add_argument("--threads", { type = "int", help = "CPU threads" })
parser:add_argument("--device", { help = "cpu, cuda or cuda:N (default: cuda when available)" })
parser:add_argument("--tensorboard", { metavar = "DIR", help = "write TensorBoard logs to DIR (wick.utils.tensorboard)" })
parser:add_argument("--profile", { nargs = "?", const = profile_steps.DEFAULT_PATH, metavar = "PATH",
  help = profile_steps.HELP })
local opt = parser:parse_args(arg)
if opt.imageSize ~= 64 then parser:error("argument --imageSize: the networks are made for 64 x 64 images") end

os.execute("mkdir -p '" .. opt.outf .. "'")

if opt.manualSeed == nil then opt.manualSeed = math.random(1, 10000) end
print("Random Seed: ", opt.manualSeed)
math.randomseed(opt.manualSeed)
wick.manual_seed(opt.manualSeed)
if opt.threads then wick.set_num_threads(opt.threads) end

local dataset, nc
if opt.dataset == "fashion-mnist" then
  dataset = wick.data.FashionMNIST { train = true, root = opt.dataroot }
  nc = 1
elseif opt.dataset == "fake" then
  -- FakeData: 1000 random images (its default size), labels 1
  local n = 1000
  dataset = wick.data.TensorDataset(wick.rand(n, 3, opt.imageSize, opt.imageSize), wick.ones(n, { dtype = "int64" }))
  nc = 3
else
  parser:error("argument --dataset: fashion-mnist or fake, got " .. opt.dataset)
end

local device = wick.device(opt.device or (wick.cuda.is_available() and "cuda" or "cpu"))
local dataloader = wick.data.DataLoader(dataset, { batch_size = opt.batchSize, shuffle = true, device = device })

-- transforms.Resize(imageSize) and transforms.Normalize((0.5,...), (0.5,...)), on a batch
local function transform(images)
  if images:size(3) ~= opt.imageSize or images:size(4) ~= opt.imageSize then
    images = F.interpolate(images, { size = { opt.imageSize, opt.imageSize }, mode = "bilinear", align_corners = false })
  end
  return (images - 0.5) / 0.5
end

local ngpu = opt.ngpu
local nz = opt.nz
local ngf = opt.ngf
local ndf = opt.ndf

local netG = dcgan.Generator(ngpu, nz, ngf, nc):to(device)
netG:apply(dcgan.weights_init)
if opt.netG ~= "" then netG:load_state_dict(wick.load(opt.netG, { map_location = device })) end
print(netG)

local netD = dcgan.Discriminator(ngpu, nc, ndf):to(device)
netD:apply(dcgan.weights_init)
if opt.netD ~= "" then netD:load_state_dict(wick.load(opt.netD, { map_location = device })) end
print(netD)

local criterion = nn.BCELoss()

local fixed_noise = wick.randn(opt.batchSize, nz, 1, 1, { device = device })
local real_label = 1
local fake_label = 0

-- setup optimizer
local optimizerD = optim.Adam(netD:parameters(), { lr = opt.lr, betas = { opt.beta1, 0.999 } })
local optimizerG = optim.Adam(netG:parameters(), { lr = opt.lr, betas = { opt.beta1, 0.999 } })

-- vutils.save_image(t, path, normalize=True): a grid of 8 images a row, 2 pixels
-- of padding, values scaled from the batch's min..max to 0..255; PGM (1 channel)
-- or PPM (3 channels)
local function save_image(t, path)
  t = t:detach():float():cpu()
  local n, c, h, w = t:size(1), t:size(2), t:size(3), t:size(4)
  local lo, hi = t:min():item(), t:max():item()
  t = ((t - lo) / math.max(hi - lo, 1e-5) * 255):clamp(0, 255)
  local ncol = math.min(8, n)
  local nrow = math.ceil(n / ncol)
  local H, W = nrow * (h + 2) + 2, ncol * (w + 2) + 2
  local grid = wick.zeros(c, H, W)
  for k = 0, n - 1 do
    local r, q = math.floor(k / ncol), k % ncol
    grid[{ {}, { r * (h + 2) + 3, r * (h + 2) + 2 + h }, { q * (w + 2) + 3, q * (w + 2) + 2 + w } }] = t[k + 1]
  end
  local chars = {}
  for i, v in ipairs(grid:permute(2, 3, 1):contiguous():view(-1):totable()) do chars[i] = string.char(math.floor(v + 0.5)) end
  local f = assert(io.open(path, "wb"))
  f:write(("%s\n%d %d\n255\n"):format(c == 1 and "P5" or "P6", W, H), table.concat(chars))
  f:close()
end
local ext = nc == 1 and "pgm" or "ppm"

-- one training step on a batch of real images: D, then G
local function train_step(images)
  ----------------------------------------------------------------------------
  -- (1) Update D network: maximize log(D(x)) + log(1 - D(G(z)))
  ----------------------------------------------------------------------------
  -- train with real
  netD:zero_grad()
  local real_cpu = transform(images:to(device))
  local batch_size = real_cpu:size(1)
  local label = wick.full({ batch_size }, real_label, { dtype = real_cpu.dtype, device = device })

  local output = netD(real_cpu)
  local errD_real = criterion(output, label)
  errD_real:backward()
  local D_x = output:mean():item()

  -- train with fake
  local noise = wick.randn(batch_size, nz, 1, 1, { device = device })
  local fake = netG(noise)
  label:fill_(fake_label)
  output = netD(fake:detach())
  local errD_fake = criterion(output, label)
  errD_fake:backward()
  local D_G_z1 = output:mean():item()
  local errD = errD_real + errD_fake
  optimizerD:step()

  ----------------------------------------------------------------------------
  -- (2) Update G network: maximize log(D(G(z)))
  ----------------------------------------------------------------------------
  netG:zero_grad()
  label:fill_(real_label) -- fake labels are real for generator cost
  output = netD(fake)
  local errG = criterion(output, label)
  errG:backward()
  local D_G_z2 = output:mean():item()
  optimizerG:step()
  return real_cpu, fake, errD, errG, D_x, D_G_z1, D_G_z2
end

if opt.profile then
  local batches = dataloader:iter()
  profile_steps.run(function() train_step(profile_steps.batch("enumerate(DataLoader)", batches)) end, opt.profile)
  return
end

if opt.dry_run then opt.niter = 1 end

-- --tensorboard DIR (not in the original): Loss_D, Loss_G, D(x), D(G(z)) per batch
-- and the fixed-noise samples per epoch; an unwritable DIR fails here
local writer = opt.tensorboard and wick.utils.tensorboard.SummaryWriter(opt.tensorboard) or nil
local nbatches = math.min(dataloader:len(), opt.max_batches or math.huge)
local global_step = 0
for epoch = 0, opt.niter - 1 do
  local i = -1
  for images in dataloader:iter() do
    i = i + 1
    if i >= nbatches then break end
    local real_cpu, fake, errD, errG, D_x, D_G_z1, D_G_z2 = train_step(images)
    global_step = global_step + 1
    if writer then
      writer:add_scalars("loss", { D = errD:item(), G = errG:item() }, global_step)
      writer:add_scalars("D_output", { real = D_x, fake_before_G = D_G_z1, fake_after_G = D_G_z2 }, global_step)
    end

    if i % opt.log_every == 0 or opt.dry_run then
      print(("[%d/%d][%d/%d] Loss_D: %.4f Loss_G: %.4f D(x): %.4f D(G(z)): %.4f / %.4f"):format(epoch, opt.niter, i,
        nbatches, errD:item(), errG:item(), D_x, D_G_z1, D_G_z2))
      io.stdout:flush()
    end
    if i % 100 == 0 then
      save_image(real_cpu, ("%s/real_samples.%s"):format(opt.outf, ext))
      fake = netG(fixed_noise)
      save_image(fake:detach(), ("%s/fake_samples_epoch_%03d.%s"):format(opt.outf, epoch, ext))
    end

    if opt.dry_run then break end
  end
  -- do checkpointing
  wick.save(netG:state_dict(), ("%s/netG_epoch_%d.wick"):format(opt.outf, epoch))
  wick.save(netD:state_dict(), ("%s/netD_epoch_%d.wick"):format(opt.outf, epoch))
  if writer then
    local samples = wick.no_grad(function() return netG(fixed_noise) end)
    writer:add_images("fake_samples", (samples:narrow(1, 1, math.min(16, samples:size(1))) + 1) / 2, epoch)
    writer:flush()
  end
end
if writer then writer:close() end
