-- Per-call times of the transformer kernels (GELU both forms, softmax,
-- log_softmax, layer_norm, cross entropy), forward and forward+backward, at
-- nanoGPT's CPU shapes (batch 12, block 64, n_embd 128, vocab 65) and a larger
-- set. Prints one line per case: "name shape fwd_us=... fwdbwd_us=...".
-- bench/kernels_torch.py prints the same lines for PyTorch; bench/kernels.sh
-- runs both alternately and compares.
--   wick bench/kernels.lua [--threads 1] [--dtype float32] [--min-time 0.2] [--sets 2] [--only NAME]
-- (--sets 1: the nanoGPT shapes only; --only gelu: that case only)
local wick = require("wick")
local unpack = table.unpack or unpack
local F = require("wick.nn.functional")
local ffi = require("ffi")
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } wick_kb_timespec;
int clock_gettime(int clk_id, wick_kb_timespec *tp);
]]
local ts = ffi.new("wick_kb_timespec")
local function now()
  ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

local threads, dtype, min_time, sets, only = 1, "float32", 0.2, 2, nil
local i = 1
while i <= #arg do
  if arg[i] == "--threads" then threads = tonumber(arg[i + 1]); i = i + 2
  elseif arg[i] == "--dtype" then dtype = arg[i + 1]; i = i + 2
  elseif arg[i] == "--min-time" then min_time = tonumber(arg[i + 1]); i = i + 2
  elseif arg[i] == "--sets" then sets = tonumber(arg[i + 1]); i = i + 2
  elseif arg[i] == "--only" then only = arg[i + 1]; i = i + 2
  else error("unknown argument " .. arg[i]) end
end
wick.set_num_threads(threads)
wick.manual_seed(0)
local opt = { dtype = dtype }

-- The fastest of many single calls, in microseconds: the machine may be shared
-- (other processes preempt some calls; the minimum is the undisturbed time).
local function time(fn, big)
  fn(); fn()
  local best, t_end = math.huge, now() + min_time
  local calls = 0
  while calls < 20 or now() < t_end do
    local t0 = now()
    fn()
    local dt = now() - t0
    if dt < best then best = dt end
    calls = calls + 1
    -- untimed: frees dead results soon (PyTorch frees them at once); large ones
    -- at once, or fresh memory each call (page faults) would be what is timed
    if big then collectgarbage() else collectgarbage("step", 0) end
  end
  return best * 1e6
end

local function case(name, shape, fwd, make_inputs)
  if only and name ~= only then return end
  local inputs = make_inputs()
  -- results of 256 KiB and more are freed after every call (untimed): left to the
  -- incremental collector, several stay alive and each call's output is fresh
  -- memory from the system, whose page faults were timed (layer_norm 4x256x768:
  -- 2.0 ms a call instead of 0.23)
  local big = inputs[1]:numel() >= 65536
  time(function() return fwd(unpack(inputs)) end, big) -- warm-up (allocator, caches)
  -- autograd off around the whole timing, as bench/kernels_torch.py's `with torch.no_grad()`
  local f = wick.no_grad(function() return time(function() return fwd(unpack(inputs)) end, big) end)
  local leaves = {}
  for k, t in ipairs(inputs) do
    leaves[k] = (wick.is_tensor(t) and t:is_floating_point()) and t:detach():requires_grad_() or t
  end
  local gy
  local fb = time(function()
    for _, l in ipairs(leaves) do if wick.is_tensor(l) and l.requires_grad then l.grad = nil end end
    local y = fwd(unpack(leaves))
    if y:dim() == 0 then y:backward() else
      gy = gy or wick.ones(y.shape, { dtype = y.dtype })
      y:backward(gy)
    end
  end, big)
  print(("%-14s %-14s fwd_us=%.1f fwdbwd_us=%.1f"):format(name, shape, f, fb))
end

local function shapes(sets)
  for _, s in ipairs(sets) do
    local B, T, C, H, V = s[1], s[2], s[3], s[4], s[5]
    local tag = ("%dx%dx%d"):format(B, T, C)
    case("gelu", ("%dx%dx%d"):format(B, T, 4 * C), function(x) return F.gelu(x) end,
      function() return { wick.randn({ B, T, 4 * C }, opt) } end)
    case("gelu_tanh", ("%dx%dx%d"):format(B, T, 4 * C), function(x) return F.gelu(x, { approximate = "tanh" }) end,
      function() return { wick.randn({ B, T, 4 * C }, opt) } end)
    case("softmax", ("%dx%dx%dx%d"):format(B, H, T, T), function(x) return F.softmax(x, -1) end,
      function() return { wick.randn({ B, H, T, T }, opt) } end)
    case("log_softmax", ("%dx%d"):format(B * T, V), function(x) return F.log_softmax(x, -1) end,
      function() return { wick.randn({ B * T, V }, opt) } end)
    case("layer_norm", tag, function(x, w, b) return F.layer_norm(x, { C }, w, b) end,
      function() return { wick.randn({ B, T, C }, opt), wick.randn({ C }, opt), wick.randn({ C }, opt) } end)
    case("cross_entropy", ("%dx%d"):format(B * T, V), function(x, t) return F.cross_entropy(x, t) end,
      function() return { wick.randn({ B * T, V }, opt), wick.randint(1, V + 1, { B * T }) } end)
  end
end

print(("wick kernels: %d thread(s), %s"):format(threads, dtype))
-- nanoGPT CPU size, then a larger layer (GPT-2-small width, block 256, an 8192-token vocabulary)
local all = { { 12, 64, 128, 4, 65 }, { 4, 256, 768, 12, 8192 } }
-- warm-up: the first timed case would otherwise pay for the allocator's and the CPU's start
do
  local x = wick.randn({ 12, 64, 512 }, opt)
  time(function() return F.gelu(x) end)
end
shapes({ unpack(all, 1, sets) })
