-- nn.DataParallel: scatter, replicate and gather on lists of cpu and meta
-- devices (so every path runs without a GPU), gradients summed into the
-- original parameters, the `module.` prefix of state_dict, the pass-through
-- cases, PyTorch's error for parameters on the wrong device, and the same on
-- real GPUs where there are some (pending, i.e. skipped, where there are not).
local wick = require("wick")
local nn = wick.nn
local support = require("spec.support")
local assert_close, error_of, assert_contains = support.assert_close, support.error_of, support.assert_contains
local shape_of = support.shape_of

local HAS_CUDA = wick.cuda.is_available()
local GPUS = HAS_CUDA and wick.cuda.device_count() or 0
local F64 = { dtype = "float64" }

-- `it` for cases that need at least n GPUs: pending (skipped) without them.
local function it_gpus(n, name, fn)
  if GPUS >= n then it(name, fn) else pending(("needs %d CUDA GPU(s): %s"):format(n, name)) end
end

-- The same small MLP each time (float64 unless a dtype is given).
local function mlp(dtype)
  wick.manual_seed(7)
  return nn.Sequential(nn.Linear(4, 8, { dtype = dtype or "float64" }), nn.Tanh(),
    nn.Linear(8, 3, { dtype = dtype or "float64" }))
end

local function grads_of(model)
  local out = {}
  for i, p in ipairs(model:parameters()) do out[i] = p.grad and p.grad:cpu():totable() end
  return out
end

-- Runs loss(model(x)) through `run` and returns the output (on the CPU),
-- the gradients of the parameters and of x.
local function forward_backward(model, run, x)
  model:zero_grad()
  local xx = x:detach():clone():requires_grad_()
  local y = run(xx)
  local w = wick.arange(1, y:numel() + 1, { dtype = y.dtype, device = y.device }):view(y:size())
  ;(y * w):sum():backward()
  return y:detach():cpu():totable(), grads_of(model), xx.grad:cpu():totable()
end

-- the body of a wick error, without its "file:line: " position
local function body(err) return (err:gsub("^[^:]+:%d+: ", "", 1)) end

describe("nn.DataParallel on cpu device lists", function()
  it("gives the same outputs and gradients as the plain module (3 replicas)", function()
    local model = mlp()
    local x = wick.randn(7, 4, F64)
    local y0, g0, gx0 = forward_backward(model, function(v) return model(v) end, x)
    local dp = nn.DataParallel(model, { device_ids = { "cpu", "cpu", "cpu" } })
    local y1, g1, gx1 = forward_backward(model, function(v) return dp(v) end, x)
    assert_close(y1, y0, 1e-12)
    assert.are.equal(#g0, #g1)
    for i = 1, #g0 do assert_close(g1[i], g0[i], 1e-12) end
    assert_close(gx1, gx0, 1e-12)
  end)

  it("sums the replicas' gradients into the original parameters (the replicas are copies)", function()
    local model = mlp()
    local dp = nn.DataParallel(model, { device_ids = { "cpu", "cpu" } })
    local x = wick.randn(4, 4, F64)
    -- each half alone, through the plain module, adds up to the whole batch
    model:zero_grad()
    model(x:narrow(1, 1, 2)):sum():backward()
    local half1 = grads_of(model)
    model:zero_grad()
    model(x:narrow(1, 3, 2)):sum():backward()
    local half2 = grads_of(model)
    model:zero_grad()
    dp(x):sum():backward()
    local both = grads_of(model)
    for i = 1, #both do
      local expected = (wick.tensor(half1[i], F64) + wick.tensor(half2[i], F64)):totable()
      assert_close(both[i], expected, 1e-12)
    end
    -- a replica holds copies, not the originals
    local replica = nn.DataParallel._replicate(model, "cpu")
    assert.are_not.equal(model:parameters()[1], replica:parameters()[1])
    assert.are.same(model:parameters()[1]:totable(), replica:parameters()[1]:totable())
    assert.is_truthy(replica:parameters()[1].grad_fn)
  end)

  it("trains like the plain module: a few SGD steps end at the same weights", function()
    local function train(wrap)
      local model = mlp()
      local run = wrap(model)
      local opt = wick.optim.SGD(model:parameters(), { lr = 0.1, momentum = 0.9 })
      wick.manual_seed(3)
      local x, target = wick.randn(10, 4, F64), wick.randn(10, 3, F64)
      for _ = 1, 4 do
        opt:zero_grad()
        nn.MSELoss()(run(x), target):backward()
        opt:step()
      end
      return model:parameters()
    end
    local plain = train(function(m) return m end)
    local wrapped = train(function(m) return nn.DataParallel(m, { device_ids = { "cpu", "cpu", "cpu", "cpu" } }) end)
    for i = 1, #plain do assert_close(wrapped[i], plain[i]:totable(), 1e-12) end
  end)

  it("splits like torch.chunk: 5 rows on 4 devices are 2, 2 and 1; a smaller batch uses fewer devices", function()
    local parts = nn.DataParallel._scatter({ "cpu", "cpu", "cpu", "cpu" }, 1, wick.arange(10):view(5, 2))
    assert.are.equal(3, #parts)
    assert.are.same({ 2, 2 }, shape_of(parts[1][1]))
    assert.are.same({ 2, 2 }, shape_of(parts[2][1]))
    assert.are.same({ 1, 2 }, shape_of(parts[3][1]))
    assert.are.same({ { 8, 9 } }, parts[3][1]:totable())
    assert.are.equal(1, #nn.DataParallel._scatter({ "cpu", "cpu", "cpu" }, 1, wick.ones(1, 2)))
    -- a batch of 1 on 3 devices still gives the module's output, on output_device
    local model = mlp()
    local x = wick.randn(1, 4, F64)
    assert_close(nn.DataParallel(model, { device_ids = { "cpu", "cpu", "cpu" } })(x), model(x):totable(), 1e-12)
    -- an empty batch: one empty chunk
    local empty = nn.DataParallel(model, { device_ids = { "cpu", "cpu" } })(wick.zeros(0, 4, F64))
    assert.are.same({ 0, 3 }, shape_of(empty))
  end)

  it("splits tables of inputs entry by entry and shares values that hold no tensor", function()
    local parts = nn.DataParallel._scatter({ "cpu", "cpu" }, 1,
      { a = wick.ones(4, 1), list = { wick.zeros(4), "tag" } }, 2.5, "mode")
    assert.are.equal(2, #parts)
    for i = 1, 2 do
      local args = parts[i]
      assert.are.equal(3, args.n)
      assert.are.same({ 2, 1 }, shape_of(args[1].a))
      assert.are.same({ 2 }, shape_of(args[1].list[1]))
      assert.are.equal("tag", args[1].list[2])
      assert.are.equal(2.5, args[2])
      assert.are.equal("mode", args[3])
    end
  end)

  it("passes several inputs, nils and extra arguments to each replica and gathers several outputs", function()
    local Pair = nn.Module:extend("Pair")
    function Pair:init() self.lin = nn.Linear(3, 2, F64) end
    function Pair:forward(x, missing, y, scale)
      assert(missing == nil)
      local out = self.lin(x) * scale
      return out, { sum = out + y, count = x:size(1) }, nil, y:sum()
    end
    wick.manual_seed(5)
    local m = Pair()
    local dp = nn.DataParallel(m, { device_ids = { "cpu", "cpu" } })
    local x, y = wick.randn(6, 3, F64), wick.randn(6, 2, F64)
    -- (the warning about 0-dim outputs goes to io.stderr once; caught here)
    local real_stderr, warned = io.stderr, {}
    io.stderr = { write = function(_, text) warned[#warned + 1] = text end }
    local ok, a, t, none, s = pcall(dp, x, nil, y, 2)
    io.stderr = real_stderr
    assert(ok, a)
    local a0, t0 = m(x, nil, y, 2)
    assert_close(a, a0:totable(), 1e-12)
    assert_close(t.sum, t0.sum:totable(), 1e-12)
    assert.are.equal(3, t.count) -- a number comes from the first replica
    assert.is_nil(none)
    -- the 0-dim results of the replicas become a vector, one entry per replica
    assert.are.same({ 2 }, shape_of(s))
    assert.is_true(#warned <= 1) -- once per process
    if #warned == 1 then assert_contains(warned[1], "all input tensors were scalars") end
    assert_close(s, { y:narrow(1, 1, 3):sum():item(), y:narrow(1, 4, 3):sum():item() }, 1e-12)
  end)

  it("splits along another dim with dim = 2 or a negative dim", function()
    local Id = nn.Module:extend("Id")
    function Id:init() self.scale = nn.Linear(1, 1, { bias = false, dtype = "float64" }) end
    function Id:forward(x) return x * self.scale.weight:view(1) end
    local m = Id()
    wick.no_grad(function() m.scale.weight:fill_(2) end)
    local x = wick.arange(12, F64):view(2, 6)
    for _, dim in ipairs({ 2, -1 }) do
      local parts = nn.DataParallel._scatter({ "cpu", "cpu", "cpu" }, dim, x)
      assert.are.equal(3, #parts)
      assert.are.same({ 2, 2 }, shape_of(parts[1][1]))
      local y = nn.DataParallel(m, { device_ids = { "cpu", "cpu", "cpu" }, dim = dim })(x)
      assert.are.same((x * 2):totable(), y:totable())
    end
  end)

  it("keeps tied weights tied inside a replica and replicates tables of layers", function()
    local Tied = nn.Module:extend("Tied")
    function Tied:init()
      self.a = nn.Linear(3, 3, F64)
      self.b = self.a
      self.extra = { nn.Linear(3, 3, F64) }
    end
    function Tied:forward(x) return self.extra[1](self.b(self.a(x))) end
    wick.manual_seed(2)
    local m = Tied()
    local r = nn.DataParallel._replicate(m, "cpu")
    assert.is_true(rawequal(r.a, r.b))
    assert.is_false(rawequal(r.a, m.a))
    assert.is_false(rawequal(r.extra[1], m.extra[1]))
    assert.is_false(rawequal(r.extra[1].weight, m.extra[1].weight))
    local x = wick.randn(4, 3, F64)
    local y0, g0 = forward_backward(m, function(v) return m(v) end, x)
    local dp = nn.DataParallel(m, { device_ids = { "cpu", "cpu" } })
    local y1, g1 = forward_backward(m, function(v) return dp(v) end, x)
    assert_close(y1, y0, 1e-12)
    for i = 1, #g0 do assert_close(g1[i], g0[i], 1e-12) end
  end)

  it("replicates a Sequential so that the replica runs its own layers", function()
    local model = mlp()
    local r = nn.DataParallel._replicate(model, "cpu")
    local list = {}
    for i, m in ipairs(r) do list[i] = m end -- a Sequential's modules are its array part
    for i = 1, 3 do
      assert.is_true(rawequal(list[i], r:get(i)))
      assert.is_false(rawequal(list[i], model:get(i)))
    end
    -- a replica on the meta device has meta parameters and runs shape-only
    local meta = nn.DataParallel._replicate(model, "meta")
    for _, p in ipairs(meta:parameters()) do assert.are.equal("meta", p.device.type) end
    assert.are.same({ 5, 3 }, shape_of(meta(wick.ones(5, 4, { dtype = "float64", device = "meta" }))))
  end)

  it("keeps train/eval mode and BatchNorm statistics from the first chunk, like PyTorch", function()
    local model = nn.Sequential(nn.Linear(2, 2, F64), nn.BatchNorm1d(2, F64))
    local dp = nn.DataParallel(model, { device_ids = { "cpu", "cpu" } })
    dp:eval()
    assert.is_false(model.training)
    assert.is_false(model:get(2).training)
    dp:train()
    assert.is_true(model:get(2).training)
    local x = wick.randn(8, 2, F64)
    local expected = nn.BatchNorm1d(2, F64)
    expected(model:get(1)(x:narrow(1, 1, 4)):detach())
    dp(x)
    assert_close(model:get(2).running_mean, expected.running_mean:totable(), 1e-12)
    assert.are.equal(1, model:get(2).num_batches_tracked:item())
  end)
end)

describe("nn.DataParallel on meta device lists", function()
  it("scatters, replicates and gathers shapes", function()
    local model = mlp("float32"):to("meta")
    local dp = nn.DataParallel(model, { device_ids = { "meta", "meta", "meta" } })
    local y = dp(wick.randn(10, 4)) -- a cpu batch is moved to the devices
    assert.are.equal("meta", y.device.type)
    assert.are.same({ 10, 3 }, shape_of(y))
    local parts = nn.DataParallel._scatter({ "meta", "meta", "meta" }, 1, wick.randn(10, 4))
    assert.are.same({ 4, 4 }, shape_of(parts[1][1]))
    assert.are.same({ 2, 4 }, shape_of(parts[3][1]))
    assert.are.equal("meta", parts[2][1].device.type)
  end)

  it("runs replicas on another device than the original's (cpu and meta) and gathers on output_device", function()
    local model = mlp()
    local dp = nn.DataParallel(model, { device_ids = { "cpu", wick.device("meta") }, output_device = "meta" })
    local y = dp(wick.randn(6, 4, F64))
    assert.are.equal("meta", y.device.type)
    assert.are.same({ 6, 3 }, shape_of(y))
    assert.is_truthy(y.grad_fn)
    -- the parameters stay where they were
    for _, p in ipairs(model:parameters()) do assert.are.equal("cpu", p.device.type) end
  end)
end)

describe("nn.DataParallel as a module", function()
  it("is a module whose child is `module`: state_dict names carry the `module.` prefix", function()
    local model = mlp()
    local dp = nn.DataParallel(model, { device_ids = { "cpu", "cpu" } })
    local sd = dp:state_dict()
    local keys = {}
    for k in pairs(sd) do keys[#keys + 1] = k end
    table.sort(keys)
    assert.are.same({ "module.1.bias", "module.1.weight", "module.3.bias", "module.3.weight" }, keys)
    assert.is_true(rawequal(dp.module, model))
    assert.are.equal(#model:parameters(), #dp:parameters())
    for i, p in ipairs(model:parameters()) do assert.is_true(rawequal(p, dp:parameters()[i])) end
    -- loading back, into a DataParallel and (stripped) into a plain module
    local other = nn.DataParallel(nn.Sequential(nn.Linear(4, 8, F64), nn.Tanh(), nn.Linear(8, 3, F64)))
    other:load_state_dict(sd)
    assert.are.same(model:get(1).weight:totable(), other.module:get(1).weight:totable())
    local plain = nn.Sequential(nn.Linear(4, 8, F64), nn.Tanh(), nn.Linear(8, 3, F64))
    assert_contains(error_of(function() return plain:load_state_dict(sd) end), "strip_prefix")
    plain:load_state_dict(nn.utils.strip_prefix(sd, "module."))
    assert.are.same(model:get(3).bias:totable(), plain:get(3).bias:totable())
    assert_contains(tostring(dp), "device_ids=[cpu, cpu]")
    assert_contains(tostring(dp), "(module): Sequential(")
  end)

  it("to() moves the wrapped module and returns the wrapper", function()
    local model = mlp()
    local dp = nn.DataParallel(model)
    assert.is_true(rawequal(dp, dp:to("meta")))
    assert.are.equal("meta", model:parameters()[1].device.type)
  end)

  it("with no device (no GPU and no device_ids, or an empty list) is the module itself", function()
    local model = mlp()
    local x = wick.randn(3, 4, F64)
    local expected = model(x):totable()
    if not HAS_CUDA then
      local dp = nn.DataParallel(model)
      assert.are.same({}, dp.device_ids)
      assert.is_nil(dp.output_device)
      assert.are.same(expected, dp(x):totable())
      -- PyTorch ignores CUDA device_ids where CUDA is not available
      assert.are.same(expected, nn.DataParallel(model, { device_ids = { 0, 1 } })(x):totable())
      assert.are.same({}, nn.DataParallel(model, { device_ids = { "cuda:0" } }).device_ids)
    end
    local dp = nn.DataParallel(model, { device_ids = {} })
    assert.are.same(expected, dp(x):totable())
    -- a meta model with no devices runs on meta, with no device check
    local meta = nn.DataParallel(mlp():to("meta"), { device_ids = {} })
    assert.are.equal("meta", meta(wick.ones(2, 4, { dtype = "float64", device = "meta" })).device.type)
  end)

  it("with one device runs the module itself there, after moving the inputs", function()
    local model = mlp()
    local x = wick.randn(3, 4, F64)
    local dp = nn.DataParallel(model, { device_ids = { "cpu" } })
    assert.are.same(model(x):totable(), dp(x):totable())
    local meta = mlp():to("meta")
    local y = nn.DataParallel(meta, { device_ids = { "meta" } })(x) -- x moved to meta
    assert.are.equal("meta", y.device.type)
    assert.are.same({ 3, 3 }, shape_of(y))
  end)

  it("accepts integers, strings and device objects in device_ids and output_device", function()
    local model = mlp()
    local dp = nn.DataParallel(model, { device_ids = { "cpu", wick.device("cpu"), "meta" }, output_device = "meta" })
    assert.are.equal(3, #dp.device_ids)
    assert.is_true(rawequal(wick.device("cpu"), dp.device_ids[1]))
    assert.is_true(rawequal(wick.device("meta"), dp.device_ids[3]))
    assert.is_true(rawequal(wick.device("meta"), dp.output_device))
    assert.is_true(rawequal(wick.device("cpu"), nn.DataParallel(model, { device_ids = { "cpu", "cpu" } }).output_device))
    -- -1 as output_device is the CPU, as in PyTorch
    assert.is_true(rawequal(wick.device("cpu"),
      nn.DataParallel(model, { device_ids = { "meta", "meta" }, output_device = -1 }).output_device))
    if HAS_CUDA then
      local g = nn.DataParallel(model, { device_ids = { 0 } })
      assert.is_true(rawequal(wick.device("cuda:0"), g.device_ids[1]))
    end
  end)

  it("rejects bad options clearly", function()
    local model = mlp()
    assert_contains(error_of(function() return nn.DataParallel(model, { device_ids = { "gpu" } }) end), "'gpu'")
    assert_contains(error_of(function() return nn.DataParallel(model, { device_ids = { -2 } }) end), "CUDA ordinals")
    assert_contains(error_of(function() return nn.DataParallel(model, { device_ids = { 1.5 } }) end), "1.5")
    assert_contains(error_of(function() return nn.DataParallel(model, { device_ids = { true } }) end), "boolean")
    assert_contains(error_of(function() return nn.DataParallel(model, { devices = { "cpu" } }) end), "unknown option 'devices'")
    assert_contains(error_of(function() return nn.DataParallel(model, { dim = 0 }) end), "dim")
    assert_contains(error_of(function() return nn.DataParallel(42) end), "expected a module")
  end)

  it("raises PyTorch's error when parameters are not on device_ids[1]", function()
    local model = mlp()
    local err = error_of(function()
      local y = nn.DataParallel(model, { device_ids = { "meta", "cpu" } })(wick.ones(2, 4, F64))
      return y -- not a tail call, so the error names this line
    end)
    assert.are.equal("module must have its parameters and buffers on device meta (device_ids[1]) but found one of them on device: cpu", body(err))
    assert.is_truthy(err:find("^[^:]*data_parallel_spec%.lua:%d+: "), err)
    -- buffers count too
    local bn = nn.BatchNorm1d(4, F64)
    local Mixed = nn.Module:extend("Mixed")
    function Mixed:init() self.bn = bn end
    function Mixed:forward(x) return self.bn(x) end
    local m = Mixed()
    m.bn.weight:_replace(m.bn.weight:to("meta"))
    m.bn.bias:_replace(m.bn.bias:to("meta"))
    err = error_of(function() return nn.DataParallel(m, { device_ids = { "meta", "meta" } })(wick.ones(2, 4, F64)) end)
    assert.are.equal("module must have its parameters and buffers on device meta (device_ids[1]) but found one of them on device: cpu", body(err))
  end)

  it("raises clearly for inputs it cannot split", function()
    local model = mlp()
    local dp = nn.DataParallel(model, { device_ids = { "cpu", "cpu" } })
    assert_contains(error_of(function() return dp(wick.tensor(1, F64)) end), "0-dim")
    assert_contains(error_of(function() return nn.DataParallel(model, { device_ids = { "cpu", "cpu" }, dim = 3 })(wick.ones(4, 4, F64)) end),
      "dim 3 is out of range")
    local Two = nn.Module:extend("Two")
    function Two:forward(a, b) return a + b:sum() end
    assert_contains(error_of(function() return nn.DataParallel(Two(), { device_ids = { "cpu", "cpu", "cpu" } })(wick.ones(3), wick.ones(2)) end),
      "different numbers of chunks")
  end)
end)

describe("nn.DataParallel on CUDA", function()
  it("without CUDA, CUDA ordinals are ignored, as in PyTorch", function()
    if HAS_CUDA then return pending("only meaningful where wick.cuda.is_available() is false") end
    assert.are.same({}, nn.DataParallel(mlp(), { device_ids = { 0 } }).device_ids)
  end)

  it_gpus(1, "with one GPU: default device_ids are {cuda:0}, and the result matches the CPU", function()
    local cpu_model = mlp("float32")
    local x = wick.randn(6, 4)
    local expected = cpu_model(x):totable()
    local model = mlp("float32"):to("cuda")
    local dp = nn.DataParallel(model)
    assert.are.equal(GPUS, #dp.device_ids)
    assert.is_true(rawequal(wick.device("cuda:0"), dp.device_ids[1]))
    local y = dp(x:cuda())
    assert.are.equal("cuda:0", tostring(y.device))
    assert_close(y:cpu(), expected, 1e-5)
  end)

  it_gpus(1, "raises PyTorch's error when the model is still on the CPU", function()
    local err = error_of(function() return nn.DataParallel(mlp("float32"), { device_ids = { 0 } })(wick.ones(2, 4):cuda()) end)
    assert.are.equal("module must have its parameters and buffers on device cuda:0 (device_ids[1]) but found one of them on device: cpu", body(err))
  end)

  it_gpus(1, "moves a CPU batch to cuda:0 (one device) and backward fills the parameters' gradients there", function()
    local model = mlp("float32")
    local x = wick.randn(5, 4)
    local y0, g0 = forward_backward(model, function(v) return model(v) end, x)
    model:to("cuda:0")
    local dp = nn.DataParallel(model, { device_ids = { 0 } })
    local y1, g1 = forward_backward(model, function(v) return dp(v) end, x)
    assert_close(y1, y0, 1e-5)
    for i = 1, #g0 do assert_close(g1[i], g0[i], 1e-4) end
    assert.are.equal("cuda", model:parameters()[1].grad.device.type)
  end)

  it_gpus(1, "cpu and cuda:0 replicas: the scatter and gather cross the PCIe bus both ways", function()
    local model = mlp("float32")
    local x = wick.randn(8, 4)
    local y0, g0, gx0 = forward_backward(model, function(v) return model(v) end, x)
    local dp = nn.DataParallel(model, { device_ids = { "cpu", "cuda:0" } })
    local y1, g1, gx1 = forward_backward(model, function(v) return dp(v) end, x)
    assert_close(y1, y0, 1e-5)
    for i = 1, #g0 do assert_close(g1[i], g0[i], 1e-4) end
    assert_close(gx1, gx0, 1e-5)
  end)

  it_gpus(2, "splits across two GPUs: outputs on cuda:0 and gradients equal to the CPU's", function()
    local model = mlp("float32")
    local x = wick.randn(9, 4)
    local y0, g0, gx0 = forward_backward(model, function(v) return model(v) end, x)
    model:to("cuda:0")
    local dp = nn.DataParallel(model, { device_ids = { 0, 1 } })
    local seen = {}
    local Spy = nn.Module:extend("Spy")
    function Spy:forward(v) seen[#seen + 1] = { tostring(v.device), wick.cuda.current_device() }; return v end
    model:add(Spy())
    local y1, g1, gx1 = forward_backward(model, function(v)
      local out = dp(v:cuda())
      assert.are.equal("cuda:0", tostring(out.device))
      return out
    end, x)
    assert_close(y1, y0, 1e-5)
    for i = 1, #g0 do
      assert.are.equal("cuda:0", tostring(model:parameters()[i].grad.device))
      assert_close(g1[i], g0[i], 1e-4)
    end
    assert_close(gx1, gx0, 1e-5)
    -- each replica ran on its own device, with that device current
    assert.are.same({ { "cuda:0", 0 }, { "cuda:1", 1 } }, seen)
  end)

  it_gpus(2, "output_device = 1 and -1 (the CPU) gather there; training steps match the CPU", function()
    local model = mlp("float32"):to("cuda:0")
    local x = wick.randn(6, 4):cuda()
    assert.are.equal("cuda:1", tostring(nn.DataParallel(model, { device_ids = { 0, 1 }, output_device = 1 })(x).device))
    assert.are.equal("cpu", tostring(nn.DataParallel(model, { device_ids = { 0, 1 }, output_device = -1 })(x).device))
    local function train(device, wrap)
      local m = mlp("float32"):to(device)
      local run = wrap(m)
      local opt = wick.optim.SGD(m:parameters(), { lr = 0.1, momentum = 0.9 })
      wick.manual_seed(3)
      local xs, target = wick.randn(10, 4):to(device), wick.randn(10, 3):to(device)
      for _ = 1, 3 do
        opt:zero_grad()
        nn.MSELoss()(run(xs), target):backward()
        opt:step()
      end
      return m:parameters()
    end
    local plain = train("cpu", function(m) return m end)
    local wrapped = train("cuda:0", function(m) return nn.DataParallel(m, { device_ids = { 0, 1 } }) end)
    for i = 1, #plain do assert_close(wrapped[i]:cpu(), plain[i]:totable(), 1e-4) end
  end)

  it_gpus(2, "the default device_ids list every GPU", function()
    local dp = nn.DataParallel(mlp("float32"):cuda())
    assert.are.equal(GPUS, #dp.device_ids)
    for i = 1, GPUS do assert.are.equal("cuda:" .. (i - 1), tostring(dp.device_ids[i])) end
  end)
end)
