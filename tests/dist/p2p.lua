-- ranks: 2 3
-- Point to point and the rooted collectives, as PyTorch's tutorial "Writing
-- Distributed Applications with PyTorch" uses them, ported line by line:
-- blocking send/recv, isend/irecv, a ring all-reduce of its own over isend
-- and recv (every rank sends before it receives: with tensors above MPI's
-- eager size this deadlocked while async sends waited in the collectives'
-- queue), reduce, gather, scatter, all_reduce with a positional op; then
-- async receives of the wrong dtype or size (a clear error at wait(), and the
-- group still works), and is_completed() polling.
local wick = require("wick")
local dist = wick.distributed

dist.init_process_group{ backend = "mpi", timeout = 60 }
local rank, size = dist.get_rank(), dist.get_world_size()
local checks = dofile("tests/dist/lib/checks.lua").new(rank, "p2p.lua")
local check, errors_with = checks.check, checks.errors_with

-- torchrun's variables, which build/wick sets from mpirun's (PyTorch scripts read them before init)
check(os.getenv("RANK") == tostring(rank) and os.getenv("WORLD_SIZE") == tostring(size)
  and os.getenv("LOCAL_RANK") == tostring(dist.get_local_rank()) and os.getenv("LOCAL_WORLD_SIZE") == tostring(size),
  "RANK, WORLD_SIZE, LOCAL_RANK and LOCAL_WORLD_SIZE from the launcher")
-- PyTorch's CPU backend name and init_method are taken
check(dist.get_default_backend_for_device("cpu") == "mpi", "the CPU's backend")

-- """Blocking point-to-point communication."""
do
  local tensor = wick.zeros(1)
  if rank == 0 then
    tensor = tensor + 1
    for r = 1, size - 1 do dist.send(tensor, r) end
  else
    dist.recv(tensor, 0)
  end
  check(tensor[1]:item() == 1, "blocking send/recv: rank 0's value")
end

-- """Non-blocking point-to-point communication."""
do
  local tensor = wick.zeros(1)
  local reqs = {}
  if rank == 0 then
    tensor = tensor + 1
    for r = 1, size - 1 do reqs[#reqs + 1] = dist.isend(tensor, r) end
  else
    reqs[1] = dist.irecv(tensor, 0)
  end
  for _, req in ipairs(reqs) do req:wait() end
  check(tensor[1]:item() == 1, "isend/irecv: rank 0's value")
end

-- """ Implementation of a ring-reduce with addition. """ (the tutorial's allreduce)
local function ring_allreduce(send, recv)
  local send_buff, recv_buff, accum = send:clone(), send:clone(), send:clone()
  local left, right = (rank - 1 + size) % size, (rank + 1) % size
  for i = 0, size - 2 do
    local send_req
    if i % 2 == 0 then
      send_req = dist.isend(send_buff, right)
      dist.recv(recv_buff, left)
      accum:add_(recv_buff)
    else
      send_req = dist.isend(recv_buff, right)
      dist.recv(send_buff, left)
      accum:add_(send_buff)
    end
    send_req:wait()
  end
  recv:copy_(accum)
end
for _, n in ipairs({ 1, 1000, 1000000 }) do -- 4 MB: past any eager limit
  local t = wick.full({ n }, rank + 1)
  local out = wick.zeros(n)
  ring_allreduce(t, out)
  local want = size * (size + 1) / 2
  check(out[1]:item() == want and out[n]:item() == want, ("ring all-reduce of %d elements: %s"):format(n, out[1]:item()))
end

-- all_reduce with PyTorch's positional op, and every rank's values
do
  local t = wick.tensor({ rank + 1.0, -rank })
  dist.all_reduce(t, dist.ReduceOp.MAX)
  check(t:equal(wick.tensor({ size + 0.0, 0 })), "all_reduce(t, ReduceOp.MAX)")
  local p = wick.tensor({ rank + 1 }, { dtype = "int64" })
  dist.all_reduce(p, "product")
  local fact = 1
  for r = 1, size do fact = fact * r end
  check(p[1]:item() == fact, "all_reduce(t, 'product')")
end

-- reduce: only dst gets the sum; the others keep their values
for dst = 0, size - 1 do
  local t = wick.full({ 2, 3 }, rank + 1):t() -- non-contiguous
  dist.reduce(t, dst, { op = "sum" })
  local want = rank == dst and size * (size + 1) / 2 or rank + 1
  check(t:equal(wick.full({ 3, 2 }, want)), ("reduce to %d"):format(dst))
  local h = dist.reduce(wick.tensor({ rank + 1.0 }), dst, { op = "min", async_op = true })
  h:wait()
end

-- gather: dst receives every rank's tensor, in rank order
for dst = 0, size - 1 do
  local t = wick.tensor({ rank * 10.0, rank * 10.0 + 1 })
  local list = nil
  if rank == dst then
    list = {}
    for i = 1, size do list[i] = wick.zeros(2) end
  end
  dist.gather(t, list, dst)
  if rank == dst then
    for r = 0, size - 1 do
      check(list[r + 1]:equal(wick.tensor({ r * 10.0, r * 10.0 + 1 })), ("gather to %d: rank %d's"):format(dst, r))
    end
  end
end

-- scatter: rank r receives scatter_list[r + 1] of src
for src = 0, size - 1 do
  local list = nil
  if rank == src then
    list = {}
    for r = 0, size - 1 do list[r + 1] = wick.full({ 2, 2 }, 100 * src + r, { dtype = "int64" }) end
  end
  local t = wick.zeros({ 2, 2 }, { dtype = "int64" })
  dist.scatter(t, list, src)
  check(t:equal(wick.full({ 2, 2 }, 100 * src + rank, { dtype = "int64" })), ("scatter from %d"):format(src))
  local u = wick.zeros({ 2, 2 }, { dtype = "int64" })
  local h = dist.scatter(u, list, src, { async_op = true })
  h:wait()
  check(h:is_completed() and u:equal(t), ("async scatter from %d"):format(src))
end

-- an async receive of the wrong dtype, of too few and of too many elements:
-- an error at wait() naming both sides, and the group still works
if rank <= 1 then
  local peer = 1 - rank
  local cases = {
    { send = wick.ones(4, { dtype = "float64" }), recv = wick.zeros(4), want = "sent 4 elements of float64" },
    { send = wick.ones(3), recv = wick.zeros(4), want = "sent 3 elements of float32, but the tensor holds 4" },
    { send = wick.ones(50000), recv = wick.zeros(4), want = "sent 50000 elements of float32, but the tensor holds 4" },
  }
  for _, c in ipairs(cases) do
    if rank == 0 then
      dist.send(c.send, peer)
    else
      local h = dist.irecv(c.recv, peer)
      errors_with(function() h:wait() end, c.want, "async recv mismatch")
    end
  end
end
dist.barrier()

-- is_completed() polls an irecv whose sender is late; non-contiguous receive
if rank <= 1 then
  local t = wick.zeros(3, 2):t()
  if rank == 1 then
    local h = dist.irecv(t, 0)
    check(not h:is_completed(), "an irecv before its send is not completed")
    dist.send(wick.tensor({ 1.0 }), 0) -- tells rank 0 to send
    while not h:is_completed() do end
    check(t:equal(wick.arange(6):reshape(2, 3):to("float32")), "non-contiguous irecv")
  else
    dist.recv(wick.zeros(1), 1)
    dist.isend(wick.arange(6):reshape(2, 3):to("float32"), 1):wait()
  end
end

-- batch_isend_irecv, as PyTorch's docs show it: every rank sends right and
-- receives from the left in one batch, the receive listed first on odd
-- ranks; past the eager size too, into a non-contiguous tensor
for _, n in ipairs({ 1, 1000, 1000000 }) do
  local left, right = (rank - 1 + size) % size, (rank + 1) % size
  local send_tensor = wick.full({ n }, rank + 1)
  local buf = wick.zeros(n, 2)
  local recv_tensor = buf:select(2, 1) -- non-contiguous
  local send_op = dist.P2POp(dist.isend, send_tensor, right)
  local recv_op = dist.P2POp(dist.irecv, recv_tensor, left)
  local reqs = dist.batch_isend_irecv(rank % 2 == 1 and { recv_op, send_op } or { send_op, recv_op })
  check(#reqs == 2, "a handle per op")
  for _, req in ipairs(reqs) do req:wait() end
  check(recv_tensor:eq(left + 1):all() and buf:select(2, 2):eq(0):all(),
    ("batch ring of %d elements: left's values"):format(n))
end
if rank <= 1 then -- a batch receive of the wrong size: an error at its wait()
  local peer = 1 - rank
  if rank == 0 then
    dist.batch_isend_irecv({ dist.P2POp(dist.isend, wick.ones(5), peer) })[1]:wait()
  else
    local reqs = dist.batch_isend_irecv({ dist.P2POp(dist.irecv, wick.zeros(4), peer) })
    errors_with(function() reqs[1]:wait() end, "sent 5 elements of float32, but the tensor holds 4", "batch mismatch")
  end
end
dist.barrier()
errors_with(function() dist.batch_isend_irecv({}) end, "expected a non-empty list of P2POp", "empty batch")
errors_with(function() dist.batch_isend_irecv({ wick.ones(1) }) end, "list[1] is not a P2POp", "batch of tensors")
errors_with(function() dist.P2POp(dist.send, wick.ones(1), 0) end, "op must be wick.distributed.isend", "P2POp op")
errors_with(function() dist.batch_isend_irecv({ dist.P2POp(dist.isend, wick.ones(1), rank) }) end,
  "is this process's own rank", "batch to self")

-- argument errors at the caller's line
errors_with(function() dist.isend(7, 0) end, "isend: expected a tensor", "isend args")
errors_with(function() dist.irecv(wick.ones(1), 0.5) end, "expected an integer for argument 'src'", "irecv args")
errors_with(function() dist.scatter(wick.ones(1), {}, rank) end, "scatter_list must hold world_size", "scatter list")
errors_with(function() dist.all_reduce(wick.ones(1), "mean") end, "invalid value 'mean' for argument 'op'", "op")

dist.barrier()
checks.finish()
dist.destroy_process_group()
