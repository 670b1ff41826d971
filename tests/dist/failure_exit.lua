-- ranks: 2
-- expect-failure: 15 \[rank 1\] wick\.distributed: this process is exiting with status 3 while its process group is initialized
-- A rank that leaves with os.exit(3) (no error for the runner to see) while
-- rank 0 waits in a collective: the exit handler ends the whole job at once
-- (MPI_Abort) instead of waiting in MPI_Finalize until rank 0's watchdog
-- fires after the 60 s timeout. (tests/dist/failure_expect.sh)
local wick = require("wick")
local dist = wick.distributed
dist.init_process_group{ timeout = 60 }
if dist.get_rank() == 1 then os.exit(3) end
dist.all_reduce(wick.ones(4)) -- rank 0 waits here until the abort ends it
print("rank 0 passed a collective that rank 1 never joined")
os.exit(0)
