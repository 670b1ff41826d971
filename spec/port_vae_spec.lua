-- A port test: pytorch/examples' vae/main.py, ported line by line (VAE with
-- encode/reparameterize/decode, loss_function, train, test and the sampling of
-- __main__) and run for a few steps on small synthetic images (specs never
-- download), checking that the loss goes down and the shapes are main.py's.
--
-- Where this port differs from vae/main.py (besides Lua syntax):
--  * the data: 28x28 images in [0, 1] made of a few random templates plus noise,
--    in a TensorDataset instead of datasets.MNIST + transforms.ToTensor(); two
--    epochs of a few batches, not 10 epochs;
--  * forward returns three values (recon, mu, logvar), Lua's form of the tuple;
--  * `for batch_idx, (data, _) in enumerate(train_loader)` is a counter around
--    `for data in train_loader:iter()`; len(train_loader.dataset) is
--    train_loader.dataset:len(); len(data) is data:size(1);
--  * F.binary_cross_entropy(..., reduction='sum') takes {reduction = "sum"};
--  * `with torch.no_grad():` is wick.no_grad(function() ... end);
--  * save_image (torchvision) is left out: the spec checks the shapes of the
--    comparison and sample grids instead of writing PNG files; the log lines go
--    to a table instead of stdout; no CUDA choice (the CPU).
local wick = require("wick")
local nn = wick.nn
local F = nn.functional
local optim = wick.optim

local VAE = nn.Module:extend("VAE")
function VAE:init()
  self.fc1 = nn.Linear(784, 400)
  self.fc21 = nn.Linear(400, 20)
  self.fc22 = nn.Linear(400, 20)
  self.fc3 = nn.Linear(20, 400)
  self.fc4 = nn.Linear(400, 784)
end

function VAE:encode(x)
  local h1 = F.relu(self.fc1(x))
  return self.fc21(h1), self.fc22(h1)
end

function VAE:reparameterize(mu, logvar)
  local std = wick.exp(0.5 * logvar)
  local eps = wick.randn_like(std)
  return mu + eps * std
end

function VAE:decode(z)
  local h3 = F.relu(self.fc3(z))
  return wick.sigmoid(self.fc4(h3))
end

function VAE:forward(x)
  local mu, logvar = self:encode(x:view(-1, 784))
  local z = self:reparameterize(mu, logvar)
  return self:decode(z), mu, logvar
end

-- Reconstruction + KL divergence losses summed over all elements and batch
local function loss_function(recon_x, x, mu, logvar)
  local BCE = F.binary_cross_entropy(recon_x, x:view(-1, 784), { reduction = "sum" })
  -- see Appendix B from VAE paper: Kingma and Welling. Auto-Encoding Variational Bayes. ICLR, 2014
  -- 0.5 * sum(1 + log(sigma^2) - mu^2 - sigma^2)
  local KLD = -0.5 * wick.sum(1 + logvar - mu:pow(2) - logvar:exp())
  return BCE + KLD
end

describe("pytorch/examples vae port", function()
  it("trains: the average loss of each epoch goes down; test and sampling give main.py's shapes", function()
    local args = { batch_size = 16, epochs = 3, seed = 1, log_interval = 2 }
    wick.manual_seed(args.seed)
    local device = wick.device("cpu")
    -- synthetic "digits": 4 templates in [0, 1] plus noise
    local templates = wick.rand(4, 1, 28, 28):gt(0.6):to("float32")
    local function images(n)
      local which = {}
      for i = 1, n do which[i] = (i % 4) + 1 end
      local t = templates:index_select(1, wick.tensor(which, { dtype = "int64" }))
      return (t * 0.8 + wick.rand(n, 1, 28, 28) * 0.2), wick.zeros(n)
    end
    local train_loader = wick.data.DataLoader(wick.data.TensorDataset(images(64)),
      { batch_size = args.batch_size, shuffle = true })
    local test_loader = wick.data.DataLoader(wick.data.TensorDataset(images(32)),
      { batch_size = args.batch_size, shuffle = true })

    local model = VAE():to(device)
    local optimizer = optim.Adam(model:parameters(), { lr = 1e-3 })
    local log = {}

    local function train(epoch)
      model:train()
      local train_loss = 0
      local batch_idx = -1
      for data in train_loader:iter() do
        batch_idx = batch_idx + 1
        data = data:to(device)
        optimizer:zero_grad()
        local recon_batch, mu, logvar = model(data)
        local loss = loss_function(recon_batch, data, mu, logvar)
        loss:backward()
        train_loss = train_loss + loss:item()
        optimizer:step()
        if batch_idx % args.log_interval == 0 then
          log[#log + 1] = ("Train Epoch: %d [%d/%d (%.0f%%)]\tLoss: %.6f"):format(epoch, batch_idx * data:size(1),
            train_loader.dataset:len(), 100. * batch_idx / train_loader:len(), loss:item() / data:size(1))
        end
      end
      log[#log + 1] = ("====> Epoch: %d Average loss: %.4f"):format(epoch, train_loss / train_loader.dataset:len())
      return train_loss / train_loader.dataset:len()
    end

    local comparison
    local function test(epoch)
      model:eval()
      local test_loss = 0
      wick.no_grad(function()
        local i = -1
        for data in test_loader:iter() do
          i = i + 1
          data = data:to(device)
          local recon_batch, mu, logvar = model(data)
          test_loss = test_loss + loss_function(recon_batch, data, mu, logvar):item()
          if i == 0 then
            local n = math.min(data:size(1), 8)
            comparison = wick.cat({ data[{ { 1, n } }], recon_batch:view(args.batch_size, 1, 28, 28)[{ { 1, n } }] })
          end
        end
      end)
      test_loss = test_loss / test_loader.dataset:len()
      log[#log + 1] = ("====> Test set loss: %.4f"):format(test_loss)
      return test_loss
    end

    local epoch_losses, test_losses = {}, {}
    local sample
    for epoch = 1, args.epochs do
      epoch_losses[epoch] = train(epoch)
      test_losses[epoch] = test(epoch)
      wick.no_grad(function()
        sample = wick.randn(64, 20):to(device)
        sample = model:decode(sample):cpu()
      end)
    end
    assert.is_true(epoch_losses[3] < epoch_losses[1], ("train %g -> %g"):format(epoch_losses[1], epoch_losses[3]))
    assert.is_true(test_losses[3] < 0.9 * test_losses[1], ("test %g -> %g"):format(test_losses[1], test_losses[3]))
    assert.are.same({ 16, 1, 28, 28 }, comparison.shape)
    assert.are.same({ 64, 1, 28, 28 }, sample:view(64, 1, 28, 28).shape)
    assert.is_true(sample:min():item() >= 0 and sample:max():item() <= 1)
    assert.truthy(log[1]:find("^Train Epoch: 1 %[0/64 %(0%%%)%]\tLoss: "))
    assert.truthy(log[#log]:find("^====> Test set loss: "))
  end)

  it("loss_function is BCE (sum) + KLD, by hand", function()
    local recon = wick.tensor({ { 0.2, 0.9 } })
    local x = wick.tensor({ { 0.0, 1.0 } })
    local mu, logvar = wick.tensor({ { 0.5 } }), wick.tensor({ { 0.1 } })
    -- F.binary_cross_entropy reshapes through x:view(-1, 784): use a 784-wide copy
    local r = wick.cat({ recon, wick.full({ 1, 782 }, 0.5) }, 2)
    local t = wick.cat({ x, wick.full({ 1, 782 }, 0.5) }, 2)
    local bce = -(math.log(0.8) + math.log(0.9)) - 782 * math.log(0.5)
    local kld = -0.5 * (1 + 0.1 - 0.25 - math.exp(0.1))
    assert.is_true(math.abs(loss_function(r, t, mu, logvar):item() - (bce + kld)) < 1e-3)
  end)
end)
