-- wick.distributed in one process: availability, errors before init, bad
-- arguments, and a world of one (MPI's singleton start: a program started
-- without mpirun). The multi-process tests are tests/dist/*.lua under mpirun.
local wick = require("wick")
local dist = wick.distributed

local function raises(fn, text)
  local ok, err = pcall(fn)
  assert.is_false(ok, "expected an error with: " .. text)
  assert.is_truthy(tostring(err):find(text, 1, true), "expected '" .. text .. "' in: " .. tostring(err))
  -- at the caller's line (this file), not inside wick's files
  assert.is_truthy(tostring(err):find("distributed_spec.lua:", 1, true), "not at the user's line: " .. tostring(err))
end

describe("wick.distributed", function()
  it("says whether it is available, and why not", function()
    local ok, why = dist.is_available()
    assert.is_boolean(ok)
    if ok then
      assert.is_nil(why)
    else
      assert.is_truthy(why:find("MPI", 1, true), why)
      raises(function() dist.init_process_group() end, "not available: wick was built without MPI")
    end
  end)

  it("refuses every call before init_process_group", function()
    assert.is_false(dist.is_initialized())
    local want = dist.is_available() and "the default process group is not initialized" or "not available"
    raises(function() dist.get_rank() end, want)
    raises(function() dist.get_world_size() end, want)
    raises(function() dist.get_local_rank() end, want)
    raises(function() dist.all_reduce(wick.ones(2)) end, want)
    raises(function() dist.broadcast(wick.ones(2), 0) end, want)
    raises(function() dist.all_gather({ wick.ones(2) }, wick.ones(2)) end, want)
    raises(function() dist.all_gather_into_tensor(wick.ones(2), wick.ones(2)) end, want)
    raises(function() dist.reduce_scatter_tensor(wick.ones(2), wick.ones(2)) end, want)
    raises(function() dist.barrier() end, want)
    raises(function() dist.send(wick.ones(2), 1) end, want)
    raises(function() dist.recv(wick.ones(2), 1) end, want)
    raises(function() dist.isend(wick.ones(2), 1) end, want)
    raises(function() dist.irecv(wick.ones(2), 1) end, want)
    raises(function() dist.reduce(wick.ones(2), 0) end, want)
    raises(function() dist.gather(wick.ones(2), nil, 0) end, want)
    raises(function() dist.scatter(wick.ones(2), nil, 0) end, want)
    raises(function() dist.all_gather_object({}, 1) end, want)
    raises(function() dist.gather_object(1, {}, 0) end, want)
    raises(function() dist.broadcast_object_list({ 1 }, 0) end, want)
    raises(function() dist.scatter_object_list({}, { 1 }, 0) end, want)
    raises(function() dist.destroy_process_group() end, want)
  end)

  it("checks its arguments before anything else", function()
    raises(function() dist.init_process_group{ backend = "tcp" } end, "invalid value 'tcp' for argument 'backend'")
    raises(function() dist.init_process_group{ timeout = -1 } end, "timeout must be a positive number of seconds")
    raises(function() dist.init_process_group{ timeout = 0 / 0 } end, "expected a number for option 'timeout', got nan")
    raises(function() dist.init_process_group{ timout = 3 } end, "unknown option 'timout'")
    raises(function() dist.init_process_group(42) end, "expected an options table")
    raises(function() dist.init_process_group("ucc") end, "invalid value 'ucc' for argument 'backend'")
    raises(function() dist.init_process_group{ init_method = 5 } end, "expected a string for option 'init_method'")
    raises(function() dist.init_process_group("mpi", { backend = "nccl" }) end, "unknown option 'backend'")
    raises(function() dist.all_reduce(7) end, "all_reduce: expected a tensor for argument 'tensor', got 7")
    raises(function() dist.all_reduce(wick.ones(2), { op = "mean" }) end, "invalid value 'mean' for argument 'op'")
    raises(function() dist.all_reduce(wick.ones(2), { async_op = 1 }) end, "expected a boolean for option 'async_op'")
    raises(function() dist.broadcast(wick.ones(2), 1.5) end, "expected an integer for argument 'src'")
    raises(function() dist.broadcast(wick.ones(2), -1) end, "broadcast")
    raises(function() dist.send(wick.ones(2)) end, "expected an integer for argument 'dst'")
    raises(function() dist.all_gather(wick.ones(2), wick.ones(2)) end, "expected a table of tensors")
    raises(function() dist.all_gather({ 1 }, wick.ones(2)) end, "expected a tensor for argument 'tensor_list[1]'")
    assert.is_false(dist.is_initialized())
  end)

  it("takes PyTorch's gloo (the CPU backend: mpi here) and init_method", function()
    if not dist.is_available() then return pending("built without MPI") end
    dist.init_process_group{ backend = "gloo", init_method = "env://" }
    assert.are.equal("mpi", dist.get_backend())
    assert.are.equal(0, dist.get_rank())
    dist.destroy_process_group()
    dist.init_process_group("gloo", { init_method = "tcp://127.0.0.1:29500", rank = 0, world_size = 1 })
    assert.are.equal(1, dist.get_world_size())
    dist.destroy_process_group()
    assert.are.equal("nccl", dist.get_default_backend_for_device("cuda:0"))
  end)

  it("runs every collective in a world of one", function()
    if not dist.is_available() then return pending("built without MPI") end
    if not require("wick.core").built_with_cuda then
      raises(function() dist.init_process_group{ backend = "nccl" } end, "backend 'nccl' needs a CUDA build of wick")
    elseif not wick.cuda.is_available() then
      raises(function() dist.init_process_group{ backend = "nccl" } end, "backend 'nccl': NCCL is not available: ")
    end
    dist.init_process_group{ backend = "mpi", timeout = 30 }
    assert.is_true(dist.is_initialized())
    assert.are.equal(0, dist.get_rank())
    assert.are.equal(1, dist.get_world_size())
    assert.are.equal(0, dist.get_local_rank())
    assert.are.equal("mpi", dist.get_backend())
    raises(function() dist.init_process_group() end, "already initialized")

    local x = wick.arange(0, 6):reshape(2, 3)
    for _, op in ipairs({ "sum", "avg", "max", "min", "product" }) do
      local t = x:clone()
      dist.all_reduce(t, { op = op })
      assert.is_true(t:equal(x), op)
    end
    local tt = x:t():clone():t() -- not contiguous
    local w = dist.all_reduce(tt, { async_op = true })
    assert.are.equal(true, w:wait())
    assert.is_true(w:is_completed())
    assert.is_true(w:seconds() >= 0 and w:seconds() < 30)
    assert.is_truthy(tostring(w):find("Work(completed)", 1, true))
    assert.is_true(tt:equal(x))
    local b = x:clone()
    dist.broadcast(b, 0)
    assert.is_true(b:equal(x))
    -- the peer rank by name, as PyTorch's keywords (stylegan2's dist.reduce(losses, dst=0))
    dist.broadcast(b, { src = 0 })
    local r = x:clone()
    dist.reduce(r, { dst = 0, op = "max" })
    assert.is_true(r:equal(x) and b:equal(x))
    local list = { wick.zeros(2, 3) }
    dist.all_gather(list, x)
    assert.is_true(list[1]:equal(x))
    local out = wick.zeros(2, 3)
    dist.all_gather_into_tensor(out, x)
    assert.is_true(out:equal(x))
    local rs = wick.zeros(3, 2)
    dist.reduce_scatter_tensor(rs, x, { op = "max" })
    assert.is_true(rs:equal(x:reshape(3, 2)))
    dist.barrier()
    assert.is_nil(dist.barrier())
    dist.barrier({ async_op = true }):wait()

    raises(function() dist.all_reduce(wick.ones(2, { dtype = "int64" }), { op = "avg" }) end,
      "op 'avg' needs a floating point tensor, got int64")
    raises(function() dist.all_reduce(wick.empty({ 2 }, { device = "meta" })) end,
      "all_reduce: the tensor is on meta, but the mpi backend moves cpu tensors")
    raises(function() dist.send(wick.ones(2), 0) end, "dst is this process's own rank (0)")
    raises(function() dist.recv(wick.ones(2), 1) end, "src must be a rank from 0 to 0, got 1")
    raises(function() dist.broadcast(wick.ones(2), 3) end, "src must be a rank from 0 to 0, got 3")
    raises(function() dist.all_gather({ wick.ones(2), wick.ones(2) }, wick.ones(2)) end,
      "the list must hold world size (1) tensors, got 2")
    raises(function() dist.all_gather({ wick.ones(3) }, wick.ones(2)) end, "list[1] must have the tensor's shape")
    raises(function() dist.all_gather({ wick.ones(2, { dtype = "int64" }) }, wick.ones(2)) end,
      "list[1] is int64, but the tensor is float32")
    raises(function() dist.all_gather_into_tensor(wick.ones(3), wick.ones(2)) end,
      "out must hold world size (1) x the tensor's 2 elements, got 3")
    raises(function() dist.reduce_scatter_tensor(wick.ones(3), wick.ones(2)) end,
      "the tensor must hold world size (1) x out's 3 elements, got 2")

    -- dropped handles are safe: the work keeps its tensors
    for _ = 1, 20 do dist.all_reduce(wick.ones(100), { async_op = true }) end
    collectgarbage()
    dist.destroy_process_group()
    assert.is_false(dist.is_initialized())
    raises(function() dist.get_rank() end, "not initialized")
    -- a new group after destroy, started as PyTorch's positional backend;
    -- dist.ReduceOp names the op strings
    raises(function() dist.init_process_group{ backend = "mpi", rank = 1, world_size = 2 } end,
      "rank = 1 was passed, but the launcher (mpirun, srun) started this process with rank 0")
    assert.is_false(dist.is_initialized())
    raises(function() dist.init_process_group("mpi", { world_size = 4 }) end, "world_size = 4 was passed")
    dist.init_process_group("mpi", { timeout = 30, rank = 0, world_size = 1 })
    assert.are.equal(1, dist.get_world_size())
    assert.are.equal("mpi", dist.get_backend())
    local m = wick.tensor({ 1, 5, 3 })
    dist.all_reduce(m, { op = dist.ReduceOp.MAX })
    assert.is_true(m:equal(wick.tensor({ 1, 5, 3 })))
    assert.are.same({ "sum", "avg", "max", "min", "product" }, { dist.ReduceOp.SUM, dist.ReduceOp.AVG,
      dist.ReduceOp.MAX, dist.ReduceOp.MIN, dist.ReduceOp.PRODUCT })
    dist.destroy_process_group()
  end)
end)
