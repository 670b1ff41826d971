-- ranks: 2
-- expect-failure: 20 (signal 9|did not complete within)
-- A rank killed with SIGKILL while rank 0 waits in a collective: mpirun ends
-- the job (or, at the latest, rank 0's watchdog after the 5 s timeout); the
-- exit code is non-zero. (tests/dist/failure_expect.sh)
local wick = require("wick")
local dist = wick.distributed
dist.init_process_group{ timeout = 5 }
dist.barrier()
if dist.get_rank() == 1 then
  local pid = io.open("/proc/self/stat"):read("*l"):match("^(%d+)")
  os.execute("kill -9 " .. pid)
  os.execute("sleep 30") -- not reached
end
dist.all_reduce(wick.ones(4))
print("rank 0 passed a collective that rank 1 never joined")
os.exit(0)
