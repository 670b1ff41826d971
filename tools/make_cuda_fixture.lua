-- Regenerates spec/fixtures/saved_on_cuda.wick: a checkpoint holding
--   {weight = float32 [[1,2,3],[4,5,6]] saved from cuda:0,
--    bias   = float32 [7,8]             saved from cuda:1}
-- On a machine with two GPUs the tensors really live there; elsewhere the
-- `location` option of wick.save records those devices for CPU tensors, which
-- gives the same file.
--   build/wick tools/make_cuda_fixture.lua [path]
local wick = require("wick")
local path = arg[1] or "spec/fixtures/saved_on_cuda.wick"
local weight = wick.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })
local bias = wick.tensor({ 7, 8 })
local real = wick.cuda.is_available() and wick.cuda.device_count() >= 2
if real then
  wick.save({ weight = weight:to("cuda:0"), bias = bias:to("cuda:1") }, path)
else
  local where = { [weight:_storage_id()] = "cuda:0", [bias:_storage_id()] = "cuda:1" }
  wick.save({ weight = weight, bias = bias }, path, { location = function(t) return where[t:_storage_id()] end })
end
print(("wrote %s (%s devices)"):format(path, real and "real" or "recorded"))
