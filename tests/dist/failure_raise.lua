-- ranks: 2
-- expect-failure: 15 \[rank 1\] wick: .*failure_raise\.lua:[0-9]+: rank 1 gives up
-- A rank whose script raises: build/wick prints "[rank R] <error>" and ends
-- the whole job (MPI_Abort), so rank 0, waiting in a collective, does not
-- hang; the job's exit code is non-zero. (tests/dist/failure_expect.sh)
local wick = require("wick")
local dist = wick.distributed
dist.init_process_group{ timeout = 60 }
if dist.get_rank() == 1 then error("rank 1 gives up") end
dist.all_reduce(wick.ones(4)) -- rank 0 waits here until the abort ends it
print("rank 0 passed a collective that rank 1 never joined")
os.exit(0)
