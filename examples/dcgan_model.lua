-- The two networks of pytorch/examples dcgan/main.py, ported line by line, and
-- its weights_init:
--   local dcgan = dofile("examples/dcgan_model.lua")
--   local netG = dcgan.Generator(ngpu, nz, ngf, nc)      -- (N, nz, 1, 1) -> (N, nc, 64, 64)
--   local netD = dcgan.Discriminator(ngpu, nc, ndf)      -- (N, nc, 64, 64) -> (N)
--   netG:apply(dcgan.weights_init)
-- main.py reads nz, ngf, ndf and nc from its globals; here they are arguments
-- after ngpu. ngpu > 1 (nn.parallel.data_parallel over several GPUs) is not
-- ported: the networks run on one device.
local wick = require("wick")
local nn = wick.nn

local dcgan = {}

-- custom weights initialization called on netG and netD
function dcgan.weights_init(m)
  local classname = getmetatable(m).__name
  if classname:find("Conv") then
    nn.init.normal_(m.weight, 0.0, 0.02)
  elseif classname:find("BatchNorm") then
    nn.init.normal_(m.weight, 1.0, 0.02)
    nn.init.zeros_(m.bias)
  end
end

local Generator = nn.Module:extend("Generator")
dcgan.Generator = Generator

function Generator:init(ngpu, nz, ngf, nc)
  self.ngpu = ngpu
  self.main = nn.Sequential(
    -- input is Z, going into a convolution
    nn.ConvTranspose2d(nz, ngf * 8, 4, 1, 0, { bias = false }),
    nn.BatchNorm2d(ngf * 8),
    nn.ReLU(true),
    -- state size. (ngf*8) x 4 x 4
    nn.ConvTranspose2d(ngf * 8, ngf * 4, 4, 2, 1, { bias = false }),
    nn.BatchNorm2d(ngf * 4),
    nn.ReLU(true),
    -- state size. (ngf*4) x 8 x 8
    nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, { bias = false }),
    nn.BatchNorm2d(ngf * 2),
    nn.ReLU(true),
    -- state size. (ngf*2) x 16 x 16
    nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, { bias = false }),
    nn.BatchNorm2d(ngf),
    nn.ReLU(true),
    -- state size. (ngf) x 32 x 32
    nn.ConvTranspose2d(ngf, nc, 4, 2, 1, { bias = false }),
    nn.Tanh()
    -- state size. (nc) x 64 x 64
  )
end

function Generator:forward(input)
  return self.main(input)
end

local Discriminator = nn.Module:extend("Discriminator")
dcgan.Discriminator = Discriminator

function Discriminator:init(ngpu, nc, ndf)
  self.ngpu = ngpu
  self.main = nn.Sequential(
    -- input is (nc) x 64 x 64
    nn.Conv2d(nc, ndf, 4, 2, 1, { bias = false }),
    nn.LeakyReLU(0.2, true),
    -- state size. (ndf) x 32 x 32
    nn.Conv2d(ndf, ndf * 2, 4, 2, 1, { bias = false }),
    nn.BatchNorm2d(ndf * 2),
    nn.LeakyReLU(0.2, true),
    -- state size. (ndf*2) x 16 x 16
    nn.Conv2d(ndf * 2, ndf * 4, 4, 2, 1, { bias = false }),
    nn.BatchNorm2d(ndf * 4),
    nn.LeakyReLU(0.2, true),
    -- state size. (ndf*4) x 8 x 8
    nn.Conv2d(ndf * 4, ndf * 8, 4, 2, 1, { bias = false }),
    nn.BatchNorm2d(ndf * 8),
    nn.LeakyReLU(0.2, true),
    -- state size. (ndf*8) x 4 x 4
    nn.Conv2d(ndf * 8, 1, 4, 1, 0, { bias = false }),
    nn.Sigmoid()
  )
end

function Discriminator:forward(input)
  local output = self.main(input)
  return output:view(-1, 1):squeeze(2)
end

return dcgan
