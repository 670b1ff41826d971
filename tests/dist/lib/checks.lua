-- Counted checks for a tests/dist/*.lua rank (a library file, not a test: the
-- harness globs tests/dist/*.lua only): a failed check is written with its
-- rank and counted, so every rank runs all of them; finish() raises at the end.
local M = {}

-- file: the test's name, which an expected error must name (the user's line)
function M.new(rank, file)
  local c = { failures = 0, count = 0 }

  function c.check(ok, what)
    c.count = c.count + 1
    if not ok then
      c.failures = c.failures + 1
      io.stderr:write(("[rank %d] FAILED: %s\n"):format(rank, what))
    end
  end

  function c.errors_with(fn, pattern, what)
    local ok, err = pcall(fn)
    c.check(not ok and tostring(err):find(pattern, 1, true) ~= nil,
      ("%s: expected an error with '%s', got %s"):format(what, pattern, ok and "no error" or tostring(err)))
    -- the error names the caller's line (the test's file), not wick's own files
    if not ok then
      c.check(tostring(err):find(file .. ":", 1, true) ~= nil, what .. ": error at the user's line: " .. tostring(err))
    end
  end

  -- raises when a check failed; else the number of checks
  function c.finish()
    if c.failures > 0 then error(("%d of %d checks failed on rank %d"):format(c.failures, c.count, rank)) end
    return c.count
  end

  return c
end

return M
