-- bench/load_verify.sh's wick side: a 1 GiB checkpoint (64 float32 tensors of
-- 4M elements), and one timed load + touch of every element (a sum per tensor).
--   build/wick bench/load_verify.lua --save PATH
--   build/wick bench/load_verify.lua --load PATH [--no-verify]
-- --load prints the seconds from the call of wick.load to the last sum.
local wick = require("wick")
local mode, path = arg[1], arg[2]
if mode == "--save" then
  local sd = {}
  for i = 1, 64 do sd[("layer%02d.weight"):format(i)] = wick.rand(4 * 1024 * 1024) end
  wick.save(sd, path)
elseif mode == "--load" then
  local opts = { mmap = true } -- the mapped load (the README's table)
  if arg[3] == "--no-verify" then opts.verify = false end
  local t0 = wick.clock()
  local loaded = wick.load(path, opts)
  local total = 0
  for _, t in pairs(loaded) do total = total + t:sum():item() end
  local dt = wick.clock() - t0
  assert(total == total, "the sum is NaN")
  io.write(("%.6f\n"):format(dt))
else
  error("usage: bench/load_verify.lua --save PATH | --load PATH [--no-verify]")
end
