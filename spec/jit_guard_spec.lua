-- wick.jit_guard (lua/wick/jit_guard.lua): traces that LuaJIT issue #829
-- miscompiles (a 32-bit `xchg eax, edx` right after a call to an IR helper:
-- lj_vm_next's pointer loses its upper half) are found in the machine code and
-- discarded before they run; the function they started in stays interpreted.
local wick = require("wick")
local guard = require("wick.jit_guard")

-- little-endian rel32
local function rel32(n)
  if n < 0 then n = n + 0x100000000 end
  local b = {}
  for i = 1, 4 do b[i] = n % 256; n = (n - b[i]) / 256 end
  return string.char(b[1], b[2], b[3], b[4])
end

describe("wick.jit_guard", function()
  local helper = 0x7f0000001000
  local helpers = { [helper] = true }
  local base = 0x7f0000400000
  -- code at `base`: `pad` filler bytes, then `call helper`, then `after`
  local function code(pad, after, target)
    local call_end = base + pad + 5
    return ("\144"):rep(pad) .. "\232" .. rel32((target or helper) - call_end) .. after
  end

  it("finds a helper call followed by the 32-bit xchg eax, edx", function()
    assert.is_true(guard.miscompiled(code(0, "\146"), base, helpers))
    assert.is_true(guard.miscompiled(code(37, "\146\72\139\2"), base, helpers))
    -- a forward call (positive rel32) as well
    local fwd = base + 0x100000
    assert.is_true(guard.miscompiled(code(3, "\146", fwd), base, { [fwd] = true }))
  end)

  it("leaves alone the 64-bit swap a fixed LuaJIT emits, other calls and other bytes", function()
    assert.is_false(guard.miscompiled(code(0, "\72\146"), base, helpers)) -- xchg rax, rdx
    assert.is_false(guard.miscompiled(code(0, "\146", helper + 16), base, helpers)) -- not a helper (an FFI call)
    assert.is_false(guard.miscompiled(code(5, "\137\194"), base, helpers)) -- mov edx, eax
    assert.is_false(guard.miscompiled("", base, helpers))
    assert.is_false(guard.miscompiled("\232\0\0\0", base, helpers)) -- cut short
    -- an 0xE8 byte inside another instruction, 0x92 five bytes on, not a call to a helper
    assert.is_false(guard.miscompiled("\72\129\232\1\2\3\4\146", base, helpers))
  end)

  it("is installed under LuaJIT on x64 with 64-bit GC references, and checks each trace", function()
    if not jit then return pending("LuaJIT only") end
    local affected = jit.arch == "x64" and require("ffi").abi("gc64")
    if os.getenv("WICK_NO_JIT_GUARD") or not affected then return pending("not an affected LuaJIT build") end
    assert.are.equal(guard, wick._jit_guard)
    assert.is_true(guard.installed)
    local before = guard.traces_checked
    local sum = 0
    for i = 1, 500 do
      local t = { a = i, b = 2 }
      for _, v in pairs(t) do sum = sum + v end
    end
    assert.are.equal(500 * 501 / 2 + 1000, sum)
    assert.is_true(guard.traces_checked > before)
  end)

  it("discards a trace it finds and keeps the function it started in interpreted", function()
    if not jit then return pending("LuaJIT only") end
    if not guard.installed then return pending("the guard is not installed here") end
    -- A fresh function with a hot pairs() loop (loaded, so it shares no
    -- prototype with other code). The guard's detector is swapped for one that
    -- calls every trace starting in f miscompiled. (No jit.attach here: LuaJIT
    -- keeps one handler per event, so that would replace the guard's.)
    local f = assert(loadstring([[
      local t, n = ...
      for _, v in pairs(t) do n = n + v end
      return n
    ]]))
    local t, want = {}, 0
    for i = 1, 500 do t["k" .. i] = i; want = want + i end
    local real, seen = guard.miscompiled, 0
    guard.miscompiled = function(mc, addr, helpers, tr)
      if guard.started_in(tr) == f then seen = seen + 1; return true end
      return real(mc, addr, helpers, tr)
    end
    local discarded, off = guard.traces_discarded, guard.functions_off
    local ok, err = pcall(function()
      for _ = 1, 5 do assert.are.equal(want, f(t, 0)) end
      assert.is_true(seen >= 1, "no trace of the test function was checked")
      assert.are.equal(discarded + seen, guard.traces_discarded)
      assert.are.equal(off + seen, guard.functions_off)
      -- f is compiled no more: hot again, none of its traces reaches the check
      local before = seen
      for _ = 1, 5 do assert.are.equal(want, f(t, 0)) end
      assert.are.equal(before, seen)
    end)
    guard.miscompiled = real
    jit.on(f)
    assert(ok, err)
  end)

  it("leaves a trace handler attached before it (luajit -jv, -jdump) in place and stays off", function()
    if not jit then return pending("LuaJIT only") end
    if not guard.installed then return pending("the guard is not installed here") end
    local runner = arg and arg[-1] or "build/wick"
    local code = [[
      local n = 0
      jit.attach(function(what) if what == "stop" then n = n + 1 end end, "trace")
      local g = require("wick")._jit_guard
      local before, x = n, 0
      for i = 1, 1000 do x = x + i end
      io.write(tostring(g.installed), " ", tostring(g.skipped ~= nil), " ", tostring(n > before))
    ]]
    local p = assert(io.popen(("%s -e %q 2>&1"):format(runner, code)))
    local out = p:read("*a")
    p:close()
    -- not installed, says why, and the earlier handler still sees traces compiled after require
    assert.are.equal("false true true", out)
  end)
end)
