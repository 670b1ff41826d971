-- nn.parallel.DistributedDataParallel in one process, over a stand-in process
-- group of world size 1 (parallel._dist), so it runs without MPI: the
-- options, the buckets, the hooks' reduction and its end-of-backward
-- callback, no_sync, find_unused_parameters and its error, the wrapper's
-- names. The real multi-rank runs are tests/dist/ddp_*.lua (mpirun).
local wick = require("wick")
local support = require("spec.support")
local assert_error_has = support.assert_error_has
local nn, F = wick.nn, wick.nn.functional
local parallel = nn.parallel

-- a world of one that records the collectives it is asked for
local calls
local Work = {}
Work.__index = Work
function Work:wait() self.waited = true end
function Work:is_completed() return true end
function Work:seconds() return 0.001 end
local fake = {
  is_initialized = function() return true end,
  get_rank = function() return 0 end,
  get_world_size = function() return 1 end,
  all_reduce = function(t, opts)
    calls[#calls + 1] = { "all_reduce", t:numel(), opts and opts.op, opts and opts.async_op }
    if opts and opts.async_op then return setmetatable({}, Work) end
  end,
  broadcast = function(t) calls[#calls + 1] = { "broadcast", t:numel() } end,
}

local function mlp()
  return nn.Sequential(nn.Linear(64, 128), nn.Tanh(), nn.Linear(128, 96), nn.Tanh(), nn.Linear(96, 4))
end
local function max_diff(a, b)
  local m = 0
  for i = 1, #a do m = math.max(m, (a[i]:detach() - b[i]:detach()):abs():max():item()) end
  return m
end
local function count(kind)
  local n = 0
  for _, c in ipairs(calls) do if c[1] == kind then n = n + 1 end end
  return n
end

describe("nn.parallel.DistributedDataParallel (world of one)", function()
  before_each(function()
    calls = {}
    parallel._dist = fake
  end)
  after_each(function() parallel._dist = nil end)

  it("is nn.parallel's, next to DataParallel", function()
    assert.equal(nn.DataParallel, parallel.DataParallel)
    assert.equal("DistributedDataParallel", parallel.DistributedDataParallel.__name)
  end)

  it("trains like the bare model, all-reducing every bucket (avg, async) once per step", function()
    wick.manual_seed(1)
    local model, ref = mlp(), mlp()
    ref:load_state_dict(model:state_dict())
    local ddp = parallel.DistributedDataParallel(model, { bucket_cap_mb = 0.02 })
    local nbuckets = #ddp:comm_stats().bucket_sizes
    assert.is_true(nbuckets >= 3, "a 0.02 MiB cap makes several buckets, got " .. nbuckets)
    local opt = wick.optim.SGD(ddp:parameters(), { lr = 0.1, momentum = 0.9 })
    local ref_opt = wick.optim.SGD(ref:parameters(), { lr = 0.1, momentum = 0.9 })
    local launched = 0
    for step = 1, 4 do
      calls = {}
      local x, y = wick.randn(8, 64), wick.randint(1, 5, { 8 })
      opt:zero_grad()
      F.cross_entropy(ddp(x), y):backward()
      opt:step()
      ref_opt:zero_grad()
      F.cross_entropy(ref(x), y):backward()
      ref_opt:step()
      assert.equal(#ddp:comm_stats().bucket_sizes, count("all_reduce"), "step " .. step)
      launched = launched + count("all_reduce")
      for _, c in ipairs(calls) do
        assert.same({ "all_reduce", c[2], "avg", true }, c)
      end
    end
    assert.equal(0, max_diff(model:parameters(), ref:parameters()))
    local stats = ddp:comm_stats()
    assert.equal(launched, stats.buckets)
    local total = 0
    for _, p in ipairs(model:parameters()) do total = total + p:numel() * 4 end
    assert.equal(4 * total, stats.bytes)
    assert.is_true(math.abs(stats.allreduce_s - 0.001 * stats.buckets) < 1e-9, "the works' own seconds")
    assert.is_true(stats.wait_s >= 0)
  end)

  it("rebuilds the buckets once, in the order gradients became ready", function()
    -- registered out: first, inp: second, but inp runs first: its gradients are ready last
    local Net = nn.Module:extend("Net")
    function Net:init()
      self.out = nn.Linear(16, 4) -- weight 256 bytes, bias 16
      self.inp = nn.Linear(32, 16) -- weight 2048 bytes, bias 64
    end
    function Net:forward(x) return self.out(self.inp(x):tanh()) end
    local ddp = parallel.DistributedDataParallel(Net(), { bucket_cap_mb = 2200 / 2 ^ 20 })
    -- reverse registration order: [inp.bias, inp.weight, out.bias], [out.weight]
    assert.same({ 2128, 256 }, ddp:comm_stats().bucket_sizes)
    ddp(wick.randn(2, 32)):sum():backward()
    assert.same({ 2128, 256 }, ddp:comm_stats().bucket_sizes)
    calls = {}
    ddp(wick.randn(2, 32)):sum():backward()
    -- ready order: [out.weight, out.bias], [inp.weight, inp.bias] (rank 0's, broadcast when world > 1)
    assert.same({ 272, 2112 }, ddp:comm_stats().bucket_sizes)
    assert.equal(2, count("all_reduce"))
    ddp(wick.randn(2, 32)):sum():backward()
    assert.same({ 272, 2112 }, ddp:comm_stats().bucket_sizes)
  end)

  it("wraps the module: names with 'module.', state_dict, train/eval, to, zero_grad", function()
    local model = mlp()
    local ddp = parallel.DistributedDataParallel(model)
    assert.equal(model, ddp.module)
    local names = {}
    for name in ddp:named_parameters() do names[#names + 1] = name end
    assert.equal("module.1.weight", names[1])
    assert.is_not_nil(ddp:state_dict()["module.1.weight"])
    assert.is_nil(ddp.module:state_dict()["module.1.weight"])
    assert.is_not_nil(ddp.module:state_dict()["1.weight"])
    assert.equal(#model:parameters(), #ddp:parameters())
    ddp:eval()
    assert.is_false(model.training)
    ddp:train()
    assert.is_true(model[1].training)
    ddp(wick.randn(2, 64)):sum():backward()
    assert.is_not_nil(model[1].weight.grad)
    ddp:zero_grad()
    assert.is_nil(model[1].weight.grad)
    -- a cast moves the buckets along at the next forward
    ddp:to("float64")
    ddp(wick.randn(2, 64, { dtype = "float64" })):sum():backward()
    assert.equal("float64", model[1].weight.grad.dtype)
  end)

  it("require_backward_grad_sync = false (build-nanogpt's accumulation): that backward reduces nothing", function()
    wick.manual_seed(3)
    local ddp = parallel.DistributedDataParallel(mlp())
    ddp.require_backward_grad_sync = false
    ddp(wick.randn(4, 64)):sum():backward()
    assert.equal(0, count("all_reduce"))
    ddp.require_backward_grad_sync = true
    ddp(wick.randn(4, 64)):sum():backward()
    assert.is_true(count("all_reduce") > 0)
  end)

  it("no_sync: no reduction inside; the next synced backward reduces the accumulated sum", function()
    wick.manual_seed(3)
    local model = mlp()
    local ddp = parallel.DistributedDataParallel(model)
    local x1, x2 = wick.randn(4, 64), wick.randn(4, 64)
    local out = ddp:no_sync(function(a) ddp(a):sum():backward(); return "result" end, x1)
    assert.equal("result", out)
    assert.equal(0, count("all_reduce"))
    local g1 = model[1].weight.grad:clone()
    ddp(x2):sum():backward()
    assert.is_true(count("all_reduce") > 0)
    local ref = mlp()
    ref:load_state_dict(model:state_dict())
    ref(x1):sum():backward()
    ref(x2):sum():backward()
    assert.is_true((ref[1].weight.grad - model[1].weight.grad):abs():max():item() < 1e-6)
    assert.is_true((model[1].weight.grad - g1):abs():max():item() > 0)
    -- an error inside no_sync restores syncing
    assert_error_has(function() ddp:no_sync(function() error("inside") end) end, "inside")
    calls = {}
    ddp(x1):sum():backward()
    assert.is_true(count("all_reduce") > 0)
  end)

  it("an unused parameter: PyTorch's error at the next forward, or zero with find_unused_parameters", function()
    local Two = nn.Module:extend("Two")
    function Two:init()
      self.a = nn.Linear(3, 3)
      self.b = nn.Linear(3, 3)
    end
    function Two:forward(x) return self.a(x) end
    local ddp = parallel.DistributedDataParallel(Two())
    ddp(wick.randn(2, 3)):sum():backward()
    assert_error_has(function() ddp(wick.randn(2, 3)) end,
      "Expected to have finished reduction in the prior iteration", "find_unused_parameters = true",
      "b.weight, b.bias (indices 3 4)")
    local m = Two()
    local ok = parallel.DistributedDataParallel(m, { find_unused_parameters = true })
    for _ = 1, 2 do ok(wick.randn(2, 3)):sum():backward() end
    assert.is_nil(m.b.weight.grad)
    assert.is_not_nil(m.a.weight.grad)
    assert.equal(2, count("all_reduce") - 2 * #ok:comm_stats().bucket_sizes) -- the used-flags, once a step
  end)

  it("a newer wrapper of the same model takes the hooks over", function()
    local model = mlp()
    local old = parallel.DistributedDataParallel(model)
    local new = parallel.DistributedDataParallel(model)
    calls = {}
    new(wick.randn(2, 64)):sum():backward()
    assert.equal(#new:comm_stats().bucket_sizes, count("all_reduce"))
    assert.equal(0, old:comm_stats().buckets)
    assert_error_has(function() old(wick.randn(2, 64)) end, "a newer DistributedDataParallel wraps")
  end)

  it("wraps a model without parameters", function()
    local ddp = parallel.DistributedDataParallel(nn.ReLU())
    assert.same({}, ddp:comm_stats().bucket_sizes)
    assert.equal(2, ddp(wick.tensor({ -1, 2 })):sum():item())
    local with_cpu = parallel.DistributedDataParallel(nn.Linear(2, 1), { device_ids = { "cpu" }, output_device = "cpu" })
    assert.equal("cpu", tostring(with_cpu(wick.randn(3, 2)).device))
  end)

  it("checks its arguments", function()
    assert_error_has(function() parallel.DistributedDataParallel(42) end, "expected a module")
    assert_error_has(function() parallel.DistributedDataParallel(mlp(), { bucket_cap = 1 }) end, "unknown option 'bucket_cap'")
    assert_error_has(function() parallel.DistributedDataParallel(mlp(), { bucket_cap_mb = 0 }) end, "positive number")
    assert_error_has(function() parallel.DistributedDataParallel(mlp(), { find_unused_parameters = 1 }) end,
      "find_unused_parameters must be a boolean")
    assert_error_has(function() parallel.DistributedDataParallel(mlp(), { device_ids = { 0, 1 } }) end,
      "exactly one device")
    assert_error_has(function() parallel.DistributedDataParallel(mlp(), { device_ids = { 0 } }) end,
      "device_ids {cuda:0} name the device the module runs on, but its parameters are on cpu")
    assert_error_has(function() parallel.DistributedDataParallel(mlp(), { output_device = "cpu" }) end,
      "output_device must be device_ids[1]")
    assert_error_has(function() parallel.DistributedDataParallel(mlp()):no_sync(5) end, "no_sync")
    parallel._dist = { is_initialized = function() return false end }
    assert_error_has(function() parallel.DistributedDataParallel(mlp()) end, "init_process_group first")
  end)
end)
