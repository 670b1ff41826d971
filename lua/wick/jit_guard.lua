-- wick.jit_guard: discards machine code that LuaJIT 2.1 snapshots from
-- 2021-09 to 2022-04-04 miscompile (LuaJIT issue #829, fixed upstream on
-- 2022-04-05; Debian 12's libluajit-5.1-2, 2.1.0~beta3+git20220320, has it).
--
-- The bug: a compiled pairs()/next() loop calls the VM helper lj_vm_next,
-- which returns a pointer in rax and an index in edx. When the register
-- allocator wants the two the other way round, x64 with 64-bit GC references
-- swaps them with a 32-bit `xchg eax, edx` (one byte, 0x92), which clears the
-- pointer's upper half: the trace then reads through a truncated pointer and
-- the process dies with a segfault inside compiled code. Which traces get the
-- swap depends on register pressure, so it comes and goes with table order,
-- address layout and load (spec/optim_shelf_spec.lua crashed in about 1 run
-- in 30 with nothing else wrong).
--
-- The guard: on every compiled trace (LuaJIT's "trace" event, sent after the
-- trace is assembled and before it first runs) it looks through the trace's
-- machine code for a call to one of LuaJIT's IR helpers followed by that
-- one-byte swap (only the pointer/index pair of lj_vm_next is swapped that way
-- on x64; a fixed LuaJIT emits the 64-bit `48 92`). When a trace has it, the
-- function the trace started in is no longer compiled (jit.off(fn)) and all
-- traces are flushed (jit.flush()): that function runs interpreted, the rest
-- is compiled again as it gets hot. Traces compiled before
-- the guard was installed are checked once at install. Only x64 with 64-bit GC
-- references can have the bug; elsewhere, or under Lua 5.4, this does nothing.
-- WICK_NO_JIT_GUARD=1 leaves it out (to reproduce the crash).
--
-- LuaJIT keeps one handler per event: a later jit.attach(f, "trace") (jit.v,
-- jit.dump) replaces the guard's, which is then off; one attached before
-- (luajit -jv / -jdump) is kept, and the guard does not install itself.
-- The handler reads no global and calls no metamethod: on these LuaJIT
-- versions a handler that does (e.g. one defined in a busted spec, whose
-- globals go through an __index function) can corrupt the recorder's state.
-- One guard per Lua state: a second load of this module (busted's insulated
-- spec files reload every module) returns the first one's table, which holds
-- the installed handler's state.
local registry = debug.getregistry()
local guard = registry.wick_jit_guard
  or { installed = false, traces_checked = 0, traces_discarded = 0, functions_off = 0 }
registry.wick_jit_guard = guard

-- The addresses LuaJIT's compiled code calls as IR helpers (a set).
local function helper_addresses(util)
  local set, i = {}, 0
  while true do
    local ok, addr = pcall(util.ircalladdr, i)
    if not ok or addr == nil then break end
    if addr ~= 0 then set[addr] = true end
    i = i + 1
  end
  return set
end

--- True when machine code `mc` (a string, as jit.util.tracemc gives it) that
--- starts at address `addr` calls one of `helpers` (a set of addresses) with
--- a rel32 call (0xE8) followed at once by the 32-bit `xchg eax, edx` (0x92).
--- The trace event looks it up here at each trace, passing as well the trace
--- number (a test may replace it; guard.started_in(tr) gives the function a
--- trace started in).
function guard.miscompiled(mc, addr, helpers)
  local i = 1
  while true do
    i = mc:find("\232....\146", i)
    if not i then return false end
    local b1, b2, b3, b4 = mc:byte(i + 1, i + 4)
    local rel = b1 + b2 * 0x100 + b3 * 0x10000 + b4 * 0x1000000
    if rel >= 0x80000000 then rel = rel - 0x100000000 end
    if helpers[addr + (i - 1) + 5 + rel] then return true end
    i = i + 1
  end
end

-- Whether this LuaJIT can have the bug: x64 with 64-bit GC references.
local function affected_build()
  if not jit or jit.arch ~= "x64" then return false end
  local ok, ffi = pcall(require, "ffi")
  return ok and ffi.abi("gc64")
end

function guard.install()
  if guard.installed or os.getenv("WICK_NO_JIT_GUARD") or not affected_build() then return guard end
  local ok, util = pcall(require, "jit.util")
  if not ok or not util.tracemc or not util.ircalladdr then return guard end
  local helpers = helper_addresses(util)
  local tracemc, jit_off, jit_flush = util.tracemc, jit.off, jit.flush
  -- per trace number: the function it started in (weak: a closure held here
  -- would keep what it captures alive)
  local function fresh() return setmetatable({}, { __mode = "v" }) end
  local start_fn = fresh()

  -- (the start function is not handed down: a function left in a dead stack
  -- slot by this handler can be kept alive by a later trace's GC step, and
  -- with it what it captures)
  local function bad(tr)
    local mc, addr = tracemc(tr)
    guard.traces_checked = guard.traces_checked + 1
    return mc ~= nil and addr ~= nil and guard.miscompiled(mc, addr, helpers, tr)
  end
  function guard.started_in(tr) return start_fn[tr] end

  -- Flushing all traces (not only this one's root) is what makes it safe:
  -- other traces may jump straight into this one's code (a link, a stitch).
  local function discard(fn)
    guard.traces_discarded = guard.traces_discarded + 1
    if fn then
      jit_off(fn)
      guard.functions_off = guard.functions_off + 1
    end
    start_fn = fresh()
    jit_flush()
  end

  local function handler(what, tr, fn)
    if what == "start" then
      start_fn[tr] = fn
    elseif what == "stop" then
      if bad(tr) then discard(start_fn[tr]) end
    elseif what == "flush" then
      start_fn = fresh()
    end
  end
  -- LuaJIT keeps one handler per event: one attached before (luajit -jv,
  -- -jdump) is left in place, and the guard stays off
  local events = debug.getregistry()._VMEVENTS
  local before = {}
  for k, v in pairs(events or {}) do before[k] = v end
  jit.attach(handler, "trace")
  for k, v in pairs(debug.getregistry()._VMEVENTS or {}) do
    if v == handler and type(before[k]) == "function" then
      jit.attach(before[k], "trace")
      guard.skipped = "another handler of LuaJIT's trace event was attached first"
      return guard
    end
  end
  guard.installed = true

  -- traces compiled before the guard (where each started is unknown)
  local empty = 0
  for tr = 1, 65535 do
    if util.traceinfo(tr) then
      empty = 0
      if bad(tr) then discard(nil); break end
    else
      empty = empty + 1
      if empty > 256 then break end
    end
  end
  return guard
end

return guard
