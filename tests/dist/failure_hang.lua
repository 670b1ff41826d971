-- ranks: 2
-- expect-failure: 20 wick\.distributed: rank 0: all_reduce #2 did not complete within 5 s
-- A rank that never calls the collective (it sleeps instead): rank 0's
-- watchdog ends the job after init_process_group's timeout with a message
-- naming the rank, the op and its number; never a hang.
-- (tests/dist/failure_expect.sh)
local wick = require("wick")
local dist = wick.distributed
dist.init_process_group{ timeout = 5 }
dist.barrier() -- #1
if dist.get_rank() == 1 then
  os.execute("sleep 40")
else
  dist.all_reduce(wick.ones(4)) -- #2: never joined
end
print("the job went on past the hang")
os.exit(0)
