-- Runs examples/fashion_mnist.lua inside a tests/dist/*.lua rank, as mpirun
-- starts it, and keeps what it printed: the example tests' shared harness
-- (a library file, not a test: the harness globs tests/dist/*.lua only).
local M = {}

-- One checkpoint path for the whole job: the ranks share mpirun's process as
-- their parent.
function M.checkpoint_path(tag)
  local f = io.open("/proc/self/stat", "r")
  local stat = f and f:read("*l") or ""
  if f then f:close() end
  local ppid = stat:match("^%d+ %b() %S+ (%d+)") or "0"
  return ("%s/wick-dist-%s-%s.wick"):format(os.getenv("TMPDIR") or "/tmp", tag, ppid)
end

-- Runs the example with these arguments; returns the lines it printed.
function M.run(args)
  local lines = {}
  local real_print = print
  print = function(...) -- luacheck: ignore (the example's output, kept to be checked)
    local parts = {}
    for i = 1, select("#", ...) do parts[i] = tostring(select(i, ...)) end
    lines[#lines + 1] = table.concat(parts, "\t")
    real_print(...)
  end
  local script = "examples/fashion_mnist.lua"
  arg = { [0] = script } -- luacheck: ignore (the example reads the global arg, as under build/wick)
  for i, a in ipairs(args) do arg[i] = a end
  local ok, err = pcall(dofile, script)
  print = real_print
  if not ok then error(err, 0) end
  return lines
end

return M
