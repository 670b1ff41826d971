-- tools/gpu-waits.lua SCRIPT [ARGS...]: runs a Lua script under the wick
-- runner and prints, for every wait for the GPU (wick.cuda.sync_count), the
-- Lua line that caused it, with its reason and a short traceback, on stderr:
--
--   build/wick tools/gpu-waits.lua my_training.lua --device cuda
--
-- Without arguments it runs one training step of the Fashion-MNIST MLP (SGD,
-- then Adam) on the GPU, the step that spec/cuda_spec.lua requires to wait at
-- most once (for loss:item()). A line hook looks at the wait count at every
-- line: a wait seen at one line was caused by the line before it in the same
-- or a called function (the JIT compiler is off while a hook is set, so run it
-- on short scripts).
local wick = require("wick")

local function counts()
  local n, by = wick.cuda.sync_count()
  return n, by
end

local function diff(before, after)
  local parts = {}
  for reason, k in pairs(after) do
    local d = k - (before[reason] or 0)
    if d > 0 then parts[#parts + 1] = ("%s: %d"):format(reason, d) end
  end
  table.sort(parts)
  return table.concat(parts, ", ")
end

local seen, by_seen = counts()
local last_where = "(start)"
local total = 0
local function hook()
  local n, by = counts()
  if n > seen then
    total = total + (n - seen)
    io.stderr:write(("gpu-waits: %d wait(s) (%s) at %s\n"):format(n - seen, diff(by_seen, by), last_where))
    seen, by_seen = n, by
  end
  -- where we are now: the line about to run, and three callers (skipping the hook)
  local where = {}
  for level = 2, 5 do
    local info = debug.getinfo(level, "Sl")
    if not info then break end
    where[#where + 1] = ("%s:%d"):format(info.short_src, info.currentline)
  end
  last_where = table.concat(where, " <- ")
end

local function default_script()
  if not wick.cuda.is_available() then
    io.stderr:write("gpu-waits: no GPU (wick.cuda.is_available() is false)\n")
    os.exit(77)
  end
  local F = wick.nn.functional
  local models = dofile("examples/fashion_mnist_models.lua")
  for _, name in ipairs({ "SGD", "Adam" }) do
    wick.manual_seed(5)
    local model = models.MLP():to("cuda")
    local opt = name == "SGD" and wick.optim.SGD(model:parameters(), { lr = 0.01, momentum = 0.9 })
      or wick.optim.Adam(model:parameters(), { lr = 1e-3 })
    local x = wick.randn(64, 1, 28, 28):cuda()
    local labels = {}
    for i = 1, 64 do labels[i] = (i * 7) % 10 + 1 end
    local y = wick.tensor(labels, { dtype = "int64" }):cuda()
    local function step()
      opt:zero_grad()
      local loss = F.cross_entropy(model(x), y)
      loss:backward()
      opt:step()
      return loss:item()
    end
    step()
    local before = total
    io.stderr:write("gpu-waits: one " .. name .. " step\n")
    debug.sethook(hook, "l")
    step()
    debug.sethook()
    hook()
    io.stderr:write(("gpu-waits: the %s step waited %d time(s)\n"):format(name, total - before))
  end
end

if arg[1] then
  local chunk = assert(loadfile(arg[1]))
  local args = { unpack(arg, 2) }
  arg = { [0] = arg[1], unpack(args) }
  debug.sethook(hook, "l")
  chunk(unpack(args))
  debug.sethook()
  hook()
  io.stderr:write(("gpu-waits: %d wait(s) in all\n"):format(total))
else
  default_script()
end
