-- No module of lua/wick writes a global variable: a missing `local` (eleven losses' `opts, p, target = ...`
-- did, stop 57) leaks state between calls and threads. Each file is compiled, not run, and every function
-- in it is scanned for the bytecode that stores a global (LuaJIT's GSET); Lua 5.4 has no jit.util, so
-- the spec checks there that it can say so.
local ok_util, util = pcall(require, "jit.util")
local ok_vmdef, vmdef = pcall(require, "jit.vmdef")

-- the names of the globals a function and the functions inside it store, with their lines (jit/bc.lua's
-- reading: an instruction's opcode in its low byte, a GSET's D operand the string constant's index)
local function global_writes(fn, out)
  for pc = 1, math.huge do
    local ins = util.funcbc(fn, pc)
    if not ins then break end
    local op = ins % 256
    if vmdef.bcnames:sub(op * 6 + 1, op * 6 + 6):match("^%S+") == "GSET" then
      local name = util.funck(fn, -math.floor(ins / 65536) - 1)
      out[#out + 1] = ("%s (line %s)"):format(tostring(name), tostring(util.funcinfo(fn, pc).currentline))
    end
  end
  for i = 1, math.huge do -- (the functions defined inside are among its constants)
    local k = util.funck(fn, -i)
    if k == nil then break end
    if type(k) == "proto" then global_writes(k, out) end
  end
  return out
end

describe("the Lua modules", function()
  it("write no global variable", function()
    if not (ok_util and ok_vmdef) then
      pending("jit.util is LuaJIT's: the Lua 5.4 build has none")
      return
    end
    -- (the scan itself finds a global write: a chunk with two, one in a nested function)
    local probe = assert(loadstring("local M = {}\nfunction M.f(a)\n  local function g() leak = 1 end\n  opts, a = 1, 2\nend"))
    local w = global_writes(probe, {})
    table.sort(w)
    assert.are.same({ "leak (line 3)", "opts (line 4)" }, w)
    local files = {}
    local p = io.popen("find lua -name '*.lua' | sort")
    for f in p:lines() do files[#files + 1] = f end
    p:close()
    assert.is_true(#files > 40)
    local found = {}
    for _, f in ipairs(files) do
      local chunk = assert(loadfile(f))
      for _, w in ipairs(global_writes(chunk, {})) do found[#found + 1] = f .. ": " .. w end
    end
    assert.are.same({}, found)
  end)
end)
