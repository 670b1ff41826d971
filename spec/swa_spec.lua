-- wick.optim.swa_utils: AveragedModel's running average and EMA against the
-- averages computed directly, SWALR against its closed form, update_bn
-- against the statistics of the whole pass.
local wick = require("wick")
local nn = wick.nn
local swa = wick.optim.swa_utils
local support = require("spec.support")
local assert_close, assert_error_has = support.assert_close, support.assert_error_has

local F64 = { dtype = "float64" }

describe("swa_utils.AveragedModel", function()
  local function net()
    wick.manual_seed(3)
    return nn.Sequential(nn.Linear(3, 4, F64), nn.BatchNorm1d(4, F64), nn.Linear(4, 2, F64))
  end
  -- the model's parameters after update k: p0 * 1.1^k + 0.01 k
  local function step(m, k)
    wick.no_grad(function() for _, p in ipairs(m:parameters()) do p:mul_(1.1):add_(0.01 * k) end end)
  end

  it("averages the parameters it is given (equal weights), the buffers follow the model", function()
    local m = net()
    local avg = swa.AveragedModel(m)
    local seen = {}
    for k = 1, 4 do
      step(m, k)
      wick.no_grad(function() m[2].running_mean:add_(k) end)
      avg:update_parameters(m)
      seen[k] = m[1].weight:clone()
    end
    assert_close(avg.module[1].weight, ((seen[1] + seen[2] + seen[3] + seen[4]) / 4):totable(), 1e-12)
    assert_close(avg.module[2].running_mean, m[2].running_mean:totable(), 0)
    assert.are.equal(4, avg.n_averaged:item())
    assert.are.equal("int64", avg.n_averaged.dtype)
    -- PyTorch's names: the count first, then the copy under module.
    local sd = avg:state_dict()
    assert.is_truthy(sd.n_averaged and sd["module.1.weight"] and sd["module.2.running_mean"])
    -- it runs the averaged copy
    local x = wick.randn(5, 3, F64)
    avg:eval()
    assert_close(avg(x), avg.module(x):totable(), 0)
  end)

  it("takes an EMA (multi_avg_fn or avg_fn) and, with use_buffers, averages the buffers too", function()
    local m = net()
    local ema = swa.AveragedModel(m, { multi_avg_fn = swa.get_ema_multi_avg_fn(0.9) })
    local ema2 = swa.AveragedModel(m, nil, swa.get_ema_avg_fn(0.9), nil, true)
    local expect, buf
    for k = 1, 3 do
      step(m, k)
      wick.no_grad(function() m[2].running_var:add_(k) end)
      ema:update_parameters(m)
      ema2:update_parameters(m)
      local w, v = m[3].bias:clone(), m[2].running_var:clone()
      expect = expect and expect * 0.9 + w * 0.1 or w
      buf = buf and buf * 0.9 + v * 0.1 or v
    end
    assert_close(ema.module[3].bias, expect:totable(), 1e-12)
    assert_close(ema2.module[3].bias, expect:totable(), 1e-12)
    assert_close(ema2.module[2].running_var, buf:totable(), 1e-12)
    assert_error_has(function() swa.get_ema_multi_avg_fn(1.5) end, "Invalid decay value")
    assert_error_has(function() swa.AveragedModel(5) end, "a module")
  end)
end)

describe("swa_utils.SWALR", function()
  it("anneals each group's lr to swa_lr over anneal_epochs, cos or linear, then holds it", function()
    for _, case in ipairs({ { "cos", 5 }, { "linear", 3 }, { "cos", 0 } }) do
      local p = nn.Parameter(wick.zeros(1))
      local opt = wick.optim.SGD({ { params = { p } }, { params = { nn.Parameter(wick.zeros(1)) }, lr = 0.2 } }, { lr = 0.5 })
      local s = swa.SWALR(opt, { 0.05, 0.1 }, case[2], case[1])
      for t = 0, 8 do
        for i, base in ipairs({ 0.5, 0.2 }) do
          local target = i == 1 and 0.05 or 0.1
          local u = case[2] == 0 and 1 or math.min(1, t / case[2])
          local a = case[1] == "linear" and u or (1 - math.cos(math.pi * u)) / 2
          assert_close(opt.param_groups[i].lr, target * a + base * (1 - a), 1e-12)
        end
        opt:step()
        s:step()
      end
      assert.are.equal(0.05, opt.param_groups[1].swa_lr)
    end
    local opt = wick.optim.SGD({ nn.Parameter(wick.zeros(1)) }, { lr = 0.1 })
    assert_error_has(function() swa.SWALR(opt) end, "swa_lr is required")
    assert_error_has(function() swa.SWALR(opt, 0.1, 5, "step") end, "anneal_strategy")
    assert_error_has(function() swa.SWALR(opt, { 0.1, 0.2 }) end, "same length")
  end)
end)

describe("swa_utils.update_bn", function()
  it("recomputes the batch norms' statistics as the average over the pass, restoring mode and momentum", function()
    wick.manual_seed(5)
    local m = nn.Sequential(nn.Linear(3, 4, F64), nn.BatchNorm1d(4, F64), nn.ReLU(), nn.Linear(4, 2, F64), nn.BatchNorm1d(2, F64))
    local batches = {}
    for i = 1, 3 do batches[i] = { wick.randn({ 5, 3 }, F64), i } end
    m:eval()
    wick.optim.swa_utils.update_bn(batches, m)
    assert.is_false(m.training)
    assert.are.equal(0.1, m[2].momentum)
    assert.are.equal(3, m[2].num_batches_tracked:item())
    local h = {}
    for i, b in ipairs(batches) do h[i] = m[1](b[1]) end
    local mean = (h[1]:mean(1) + h[2]:mean(1) + h[3]:mean(1)) / 3
    local var = (h[1]:var(1) + h[2]:var(1) + h[3]:var(1)) / 3 -- (running variances are unbiased)
    assert_close(m[2].running_mean, mean:totable(), 1e-12)
    assert_close(m[2].running_var, var:totable(), 1e-12)
    -- a model without batch norm is left alone; a bad loader is an error
    local plain = nn.Linear(2, 2)
    wick.optim.swa_utils.update_bn(batches, plain)
    assert_error_has(function() wick.optim.swa_utils.update_bn(5, m) end, "DataLoader")
  end)
end)
