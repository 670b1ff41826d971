-- ranks: 2 3
-- nn.SyncBatchNorm against nn.BatchNorm on the whole batch: each rank takes
-- its share of a deterministic global batch (float64), runs SyncBatchNorm
-- forward and backward (loss = sum(out * G), G a fixed upstream gradient), and
-- compares with BatchNorm1d/2d/3d on the whole batch, which every rank
-- computes itself: the output rows, the input gradient rows, the weight and
-- bias gradients (this rank's, summed over the ranks with all_reduce, as DDP
-- would average them) and the running statistics, to 1e-12. Shares are even,
-- uneven, and empty on one rank; momentum nil, affine = false and
-- track_running_stats = false, an input that needs no gradient, eval mode;
-- convert_sync_batchnorm on a small Sequential with BatchNorm2d; a converted
-- model trained under DistributedDataParallel. The same
-- checks run first before init_process_group (not distributed: BatchNorm
-- exactly), and the whole file also runs without mpirun (a world of one:
-- `build/wick tests/dist/sync_batchnorm.lua`, the ctest dist_sync_batchnorm_1).
local wick = require("wick")
local nn = wick.nn
local dist = wick.distributed
local FILE = "sync_batchnorm.lua"
local TOL = 1e-12

local rank, world = 0, 1
local failures, count = 0, 0
local function check(ok, what)
  count = count + 1
  if not ok then
    failures = failures + 1
    io.stderr:write(("[rank %d] FAILED: %s\n"):format(rank, what))
  end
end
local function errors_with(fn, pattern, what)
  local ok, err = pcall(fn)
  check(not ok and tostring(err):find(pattern, 1, true) ~= nil,
    ("%s: expected an error with '%s', got %s"):format(what, pattern, ok and "no error" or tostring(err)))
  if not ok then check(tostring(err):find(FILE .. ":", 1, true) ~= nil, what .. ": error at the user's line: " .. tostring(err)) end
end

-- |a - b| scaled by the reference's size (sums of many terms: weight gradients)
local function diff(a, b)
  if a == nil or b == nil then return (a == nil and b == nil) and 0 or math.huge end
  a, b = a:detach(), b:detach()
  if a:numel() == 0 and b:numel() == 0 then return 0 end
  if tostring(a:size()) ~= tostring(b:size()) then return math.huge end
  return (a - b):abs():max():item() / math.max(1, b:abs():max():item())
end
local function close(a, b, what, exact)
  local d = diff(a, b)
  local tol = (exact and world == 1) and 0 or TOL
  check(d <= tol, ("%s: differs by %g (tolerance %g)"):format(what, d, tol))
end

-- the global sum of this rank's tensor (weight and bias gradients)
local function summed(t)
  if t == nil then return nil end
  local s = t:detach():clone()
  if dist.is_initialized() and world > 1 then dist.all_reduce(s) end
  return s
end

-- rows first .. first + n - 1 of the global batch are this rank's (counts: one per rank)
local function share(counts)
  local first = 1
  for r = 0, rank - 1 do first = first + counts[r + 1] end
  return first, counts[rank + 1]
end
local function total(counts)
  local n = 0
  for i = 1, world do n = n + counts[i] end
  return n
end

local BN = { [2] = nn.BatchNorm1d, [3] = nn.BatchNorm1d, [4] = nn.BatchNorm2d, [5] = nn.BatchNorm3d }

-- one case: {name, counts = {per rank}, rest = {C, spatial...}, opts = SyncBatchNorm's options,
-- momentum_nil, x_grad (default true), steps}
local function run_case(case)
  local counts = case.counts(world)
  local N = total(counts)
  local first, n = share(counts)
  local rest = case.rest
  local C = rest[1]
  local shape = { N }
  for i = 1, #rest do shape[i + 1] = rest[i] end
  local opts = { dtype = "float64" }
  for k, v in pairs(case.opts or {}) do opts[k] = v end
  local ref = BN[#shape](C, opts)
  local sbn = nn.SyncBatchNorm(C, opts)
  check(tostring(sbn):find("^SyncBatchNorm%(" .. C .. ", eps=") ~= nil, case.name .. ": repr " .. tostring(sbn))
  wick.manual_seed(7)
  if ref.weight then
    wick.no_grad(function()
      ref.weight:copy_(wick.rand(C, { dtype = "float64" }) + 0.5)
      ref.bias:copy_(wick.randn(C, { dtype = "float64" }))
      sbn.weight:copy_(ref.weight)
      sbn.bias:copy_(ref.bias)
    end)
  end
  if case.momentum_nil then
    ref.momentum, sbn.momentum = nil, nil
  end
  local x_grad = case.x_grad ~= false
  for step = 1, case.steps or 2 do
    local what = ("%s, step %d, world %d, shares %s"):format(case.name, step, world, table.concat(counts, "+"))
    wick.manual_seed(1000 * step + #shape) -- the same global batch on every rank
    local scale = wick.rand(C, { dtype = "float64" }) * 3 + 0.5
    local shift = wick.randn(C, { dtype = "float64" }) * 4
    local view = { 1, C }
    for i = 3, #shape do view[i] = 1 end
    local X = wick.randn(shape, { dtype = "float64" }) * scale:view(view) + shift:view(view)
    local G = wick.randn(shape, { dtype = "float64" })
    -- BatchNorm on the whole batch
    local Xr = X:clone():requires_grad_(x_grad)
    local out_ref = ref(Xr)
    for _, p in ipairs(ref:parameters()) do p.grad = nil end
    if out_ref.requires_grad then (out_ref * G):sum():backward() end
    -- SyncBatchNorm on this rank's share
    local x = X:narrow(1, first, n):clone():requires_grad_(x_grad)
    for _, p in ipairs(sbn:parameters()) do p.grad = nil end
    local out = sbn(x)
    if out.requires_grad then (out * G:narrow(1, first, n)):sum():backward() end
    close(out, out_ref:narrow(1, first, n), what .. ": output", true)
    if x_grad then close(x.grad, Xr.grad:narrow(1, first, n), what .. ": input gradient", true) end
    if ref.weight then
      close(summed(sbn.weight.grad), ref.weight.grad, what .. ": weight gradient (summed over the ranks)", true)
      close(summed(sbn.bias.grad), ref.bias.grad, what .. ": bias gradient (summed over the ranks)", true)
    end
    if ref.running_mean then
      close(sbn.running_mean, ref.running_mean, what .. ": running_mean", true)
      close(sbn.running_var, ref.running_var, what .. ": running_var", true)
      check(sbn.num_batches_tracked:item() == step, what .. ": num_batches_tracked")
    else
      check(sbn.running_mean == nil and #sbn:buffers() == 0, what .. ": no running statistics")
    end
  end
  -- eval mode: the running statistics; untracked, the rank's own batch's (not synced, as PyTorch's)
  ref:eval()
  sbn:eval()
  wick.manual_seed(99)
  local X = wick.randn(shape, { dtype = "float64" }) * 2 + 1
  if ref.running_mean then
    close(sbn(X:narrow(1, first, n)), ref(X):narrow(1, first, n), case.name .. ": eval mode output", true)
  elseif n > 1 then
    local Xl = X:narrow(1, first, n)
    check(diff(sbn(Xl), ref(Xl)) == 0, case.name .. ": eval mode output without running statistics (local)")
  end
end

local CASES = {
  { name = "BatchNorm1d (N, C), even shares", rest = { 5 }, counts = function(w)
    local c = {}
    for r = 1, w do c[r] = 4 end
    return c
  end },
  { name = "BatchNorm1d (N, C, L), uneven shares", rest = { 3, 7 }, counts = function(w)
    local c = {}
    for r = 1, w do c[r] = 2 * r + 1 end
    return c
  end },
  { name = "BatchNorm2d (N, C, H, W), uneven shares", rest = { 4, 3, 5 }, counts = function(w)
    local c = {}
    for r = 1, w do c[r] = 5 - r end
    return c
  end, steps = 3 },
  { name = "BatchNorm3d (N, C, D, H, W), one sample on a rank", rest = { 2, 3, 2, 4 }, counts = function(w)
    local c = {}
    for r = 1, w do c[r] = r == 1 and 1 or 3 end
    return c
  end },
  { name = "BatchNorm2d, an empty share on the last rank", rest = { 3, 2, 2 }, counts = function(w)
    local c = {}
    for r = 1, w do c[r] = (r == w and w > 1) and 0 or 3 end
    return c
  end },
  { name = "momentum nil (cumulative average)", rest = { 3, 4 }, momentum_nil = true, steps = 3, counts = function(w)
    local c = {}
    for r = 1, w do c[r] = r + 1 end
    return c
  end },
  { name = "affine = false, track_running_stats = false", rest = { 3, 4, 4 }, opts = { affine = false,
    track_running_stats = false }, counts = function(w)
    local c = {}
    for r = 1, w do c[r] = 3 + (r % 2) end
    return c
  end },
  { name = "an input that needs no gradient", rest = { 4, 6 }, x_grad = false, counts = function(w)
    local c = {}
    for r = 1, w do c[r] = r end
    return c
  end },
  { name = "eps 1e-3, momentum 0.3", rest = { 2, 9 }, opts = { eps = 1e-3, momentum = 0.3 }, counts = function(w)
    local c = {}
    for r = 1, w do c[r] = 4 - (r % 3) end
    return c
  end },
}

local function run_cases()
  for _, case in ipairs(CASES) do run_case(case) end
end

-- convert_sync_batchnorm: the BatchNorms replaced, their tensors, flags and settings kept
local function make_model()
  wick.manual_seed(5)
  local model = nn.Sequential(nn.Conv2d(2, 4, 3), nn.BatchNorm2d(4), nn.ReLU(),
    nn.Sequential(nn.Conv2d(4, 3, 1), nn.BatchNorm2d(3, { momentum = 0.2, eps = 1e-4 })), nn.Flatten(), nn.Linear(48, 2))
  model:double()
  return model
end
local function run_convert()
  local ref, model = make_model(), make_model()
  local bn1, bn2 = model[2], model[4][2]
  bn1.weight:requires_grad_(false)
  ref[2].weight:requires_grad_(false)
  local weight, running_var = bn2.weight, bn2.running_var
  local converted = nn.SyncBatchNorm.convert_sync_batchnorm(model)
  check(rawequal(converted, model), "convert_sync_batchnorm returns the module it was given")
  local s1, s2 = model[2], model[4][2]
  check(getmetatable(s1) == nn.SyncBatchNorm and getmetatable(s2) == nn.SyncBatchNorm, "both BatchNorm2d replaced")
  check(getmetatable(model[1]) == nn.Conv2d and getmetatable(model[4][1]) == nn.Conv2d, "the rest kept")
  check(rawequal(s2.weight, weight) and rawequal(s2.running_var, running_var), "the same parameter and buffer tensors")
  check(rawequal(s1.weight, bn1.weight) and not s1.weight.requires_grad and s1.bias.requires_grad, "requires_grad kept")
  check(s2.momentum == 0.2 and s2.eps == 1e-4 and s2.num_features == 3, "momentum, eps and num_features kept")
  local names = {}
  for name in model:named_parameters() do names[#names + 1] = name end
  local ref_names = {}
  for name in ref:named_parameters() do ref_names[#ref_names + 1] = name end
  check(table.concat(names, " ") == table.concat(ref_names, " "), "the same parameter names: " .. table.concat(names, " "))
  check(#model:buffers() == #ref:buffers(), "the same buffers")
  -- a bare BatchNorm: the new module, its training flag kept
  local bare = nn.BatchNorm1d(6, { affine = false })
  bare:eval()
  local sb = nn.SyncBatchNorm.convert_sync_batchnorm(bare)
  check(getmetatable(sb) == nn.SyncBatchNorm and not rawequal(sb, bare), "a bare BatchNorm1d: a new SyncBatchNorm")
  check(sb.training == false and sb.weight == nil and rawequal(sb.running_mean, bare.running_mean),
    "a bare BatchNorm1d: training flag, affine and buffers kept")
  check(getmetatable(nn.SyncBatchNorm:convert_sync_batchnorm(nn.BatchNorm3d(2))) == nn.SyncBatchNorm,
    "SyncBatchNorm:convert_sync_batchnorm (a classmethod call) works too")
  errors_with(function() nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm2d(2), "group") end,
    "process_group must be nil", "convert_sync_batchnorm with a process group")
  -- the converted model on this rank's share against the original on the whole batch
  local counts = {}
  for r = 1, world do counts[r] = 2 + r end
  local first, n = share(counts)
  for step = 1, 2 do
    wick.manual_seed(300 + step)
    local X = wick.randn(total(counts), 2, 6, 6, { dtype = "float64" })
    local out_ref = ref(X)
    ref:zero_grad()
    out_ref:pow(2):sum():backward()
    model:zero_grad()
    local out = model(X:narrow(1, first, n))
    out:pow(2):sum():backward()
    local what = ("converted Sequential, step %d, world %d"):format(step, world)
    close(out, out_ref:narrow(1, first, n), what .. ": output", true)
    local rp = ref:parameters()
    for i, p in ipairs(model:parameters()) do
      close(summed(p.grad), rp[i].grad, what .. ": gradient of parameter " .. names[i] .. " (summed over the ranks)", true)
    end
    local rb = ref:buffers()
    for i, b in ipairs(model:buffers()) do close(b, rb[i], what .. ": buffer " .. i, true) end
  end
end

-- a converted model under DistributedDataParallel, uneven shares: the same
-- parameters and running statistics as one process on the whole batch after
-- three SGD steps (the loss: the rank's sum over the global count, times the
-- world size, which DDP's average turns into the global mean's gradient)
local function run_ddp()
  local function make()
    wick.manual_seed(11)
    return nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.Tanh(), nn.Linear(8, 3)):double()
  end
  local ref = make()
  local model = nn.SyncBatchNorm.convert_sync_batchnorm(make())
  local ddp = nn.parallel.DistributedDataParallel(model)
  local opt = wick.optim.SGD(ddp:parameters(), { lr = 0.1 })
  local ref_opt = wick.optim.SGD(ref:parameters(), { lr = 0.1 })
  local counts = {}
  for r = 1, world do counts[r] = 3 + r end
  local N = total(counts)
  local first, n = share(counts)
  for step = 1, 3 do
    wick.manual_seed(500 + step)
    local X, Y = wick.randn(N, 6, { dtype = "float64" }), wick.randn(N, 3, { dtype = "float64" })
    opt:zero_grad()
    local loss = (ddp(X:narrow(1, first, n)) - Y:narrow(1, first, n)):pow(2):sum() * (world / N)
    loss:backward()
    opt:step()
    ref_opt:zero_grad()
    local ref_loss = (ref(X) - Y):pow(2):sum() / N
    ref_loss:backward()
    ref_opt:step()
    local what = ("DistributedDataParallel, step %d, world %d"):format(step, world)
    local rp = ref:parameters()
    for i, p in ipairs(model:parameters()) do close(p, rp[i], what .. ": parameter " .. i) end
    local rb = ref:buffers()
    for i, b in ipairs(model:buffers()) do close(b, rb[i], what .. ": buffer " .. i) end
  end
end

local function run_errors()
  local sbn = nn.SyncBatchNorm(3)
  errors_with(function() sbn(wick.randn(3)) end, "SyncBatchNorm: expected at least 2D input (got 1D input)", "a 1-D input")
  errors_with(function() sbn(wick.randn(4, 0)) end, "SyncBatchNorm: number of input channels should be non-zero",
    "no channels")
  errors_with(function() nn.SyncBatchNorm(3, { process_group = "group" }) end, "process_group must be nil",
    "a process group")
  errors_with(function() nn.SyncBatchNorm("3") end, "num_features", "num_features a string")
  -- a single value per channel over the whole world: every rank raises
  errors_with(function()
    local x = rank == 0 and wick.randn(1, 3) or wick.randn(0, 3)
    return sbn(x)
  end, "Expected more than 1 value per channel when training", "one value per channel in all")
  if world > 1 then
    errors_with(function() sbn(wick.randn(4, 5)) end, "expected weight of shape [5]", "channels other than num_features")
  end
end

-- before init_process_group: not distributed, BatchNorm exactly
run_cases()
run_errors()
local before = count

if dist.is_available() then
  dist.init_process_group({ backend = "mpi" })
  rank, world = dist.get_rank(), dist.get_world_size()
  run_cases()
  run_convert()
  run_ddp()
  run_errors()
else
  print("wick.distributed is not available (" .. select(2, dist.is_available()) .. "): only the checks without a process group ran")
  run_convert()
end

print(("[rank %d] world %d: %d checks (%d before init_process_group), %d failed"):format(rank, world, count, before,
  failures))
if dist.is_initialized() then dist.destroy_process_group() end
if failures > 0 then error(("%d of %d checks failed on rank %d"):format(failures, count, rank)) end
