-- --profile [PATH] for the training examples (fashion_mnist.lua, gpt.lua,
-- resnet.lua, dcgan.lua, word_language_model.lua), the way PyTorch's profiler
-- tutorial does it: one warm-up step, then a few steps recorded by
-- wick.profiler.profile, each a "ProfilerStep#N" range (PyTorch's name for a
-- profiler step); the table of the ops sorted by their own CPU time, and a
-- Chrome trace at PATH to open in https://ui.perfetto.dev (or chrome://tracing).
--   local profile_steps = dofile(here .. "/profile_steps.lua")
--   if args.profile then profile_steps.run(function() ...one training step... end, args.profile) return end
local wick = require("wick")

local profile_steps = {
  DEFAULT_PATH = "profile.json", -- --profile without a path
  WARMUP = 1, -- steps run before the profile (first-call costs: allocator, JIT)
  ACTIVE = 3, -- steps recorded
  ROW_LIMIT = 15,
}

-- The help line of the option, for the examples' usage texts.
profile_steps.HELP = ("profile %d training steps after %d warm-up step, print the op table, write a Chrome"
  .. " trace to PATH (default %s) and stop"):format(profile_steps.ACTIVE, profile_steps.WARMUP,
  profile_steps.DEFAULT_PATH)

--- profile_steps.batch(name, fn, ...): fn(...) (the next batch) as a range named
--- name: the data loading's time in the table
function profile_steps.batch(name, fn, ...)
  return wick.profiler.record_function(name, fn, ...)
end

--- profile_steps.run(step, path[, {warmup = 1, active = 3, row_limit = 15}]):
--- step(i) runs training step i (its batch included); returns the profile
function profile_steps.run(step, path, opts)
  opts = opts or {}
  local warmup, active = opts.warmup or profile_steps.WARMUP, opts.active or profile_steps.ACTIVE
  path = path or profile_steps.DEFAULT_PATH
  for i = 1, warmup do step(i) end
  if wick.cuda.is_available() then wick.cuda.synchronize() end
  local prof = wick.profiler.profile(function()
    for i = warmup + 1, warmup + active do
      wick.profiler.record_function("ProfilerStep#" .. i, step, i)
    end
    if wick.cuda.is_available() then wick.cuda.synchronize() end
  end, { record_shapes = true })
  print(prof:key_averages():table({ sort_by = "self_cpu_time_total", row_limit = opts.row_limit or
    profile_steps.ROW_LIMIT }))
  prof:export_chrome_trace(path)
  print(("profiled steps %d-%d (after %d warm-up step%s): Chrome trace written to %s (open it in"
    .. " https://ui.perfetto.dev or chrome://tracing)"):format(warmup + 1, warmup + active, warmup,
    warmup == 1 and "" or "s", path))
  io.stdout:flush()
  return prof
end

return profile_steps
