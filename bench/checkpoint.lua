-- Save and load of a 1 GiB state dict (64 float32 tensors of 4M elements),
-- then touching every element (a sum per tensor); bench/checkpoint.sh compares
-- it with cat, raw writes and torch.save/torch.load. Then the same for a state
-- dict of 4,000 small tensors (64 elements each), where the time is the
-- engine's own (header, tree, views) rather than the bytes.
--   build/wick bench/checkpoint.lua PATH           save, then load + touch
--   build/wick bench/checkpoint.lua --load PATH    load + touch only (e.g. torch.save's file)
local wick = require("wick")
local load_only = arg[1] == "--load"
local path = (load_only and arg[2]) or arg[1] or "/tmp/wick-bench.wick"
wick.set_num_threads(1)
local function emit(name, value) io.write(("%s\t%.6g\n"):format(name, value)) io.flush() end

local function load_touch(file, runs)
  local best = math.huge
  for _ = 1, runs or 3 do
    collectgarbage()
    local t0 = wick.clock()
    local loaded = wick.load(file or path, { mmap = true }) -- the mapped load (the README's table)
    local total = 0
    for _, t in pairs(loaded) do total = total + t:sum():item() end
    best = math.min(best, wick.clock() - t0)
    loaded = nil
  end
  return best
end

-- 4,000 small tensors: the per-tensor cost of save and load
local function small_rows()
  local small = {}
  for i = 1, 4000 do small[("block%04d.weight"):format(i)] = wick.rand(64) end
  local best = math.huge
  for _ = 1, 5 do
    local t0 = wick.clock()
    wick.save(small, path .. ".small")
    best = math.min(best, wick.clock() - t0)
  end
  emit("save_small_s", best)
  emit("load_small_s", load_touch(path .. ".small", 10))
  os.remove(path .. ".small")
end

if load_only then
  emit("load_touch_s", load_touch())
  small_rows()
  return
end
local sd = {}
for i = 1, 64 do sd[("layer%02d.weight"):format(i)] = wick.rand(4 * 1024 * 1024) end
local t0 = wick.clock()
wick.save(sd, path)
emit("save_s", wick.clock() - t0)
sd = nil
collectgarbage()
emit("load_touch_s", load_touch())
small_rows()
