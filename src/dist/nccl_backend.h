/* The NCCL backend of the process group (nccl.c; not named nccl.h, which is
 * NCCL's own header): what the engine and the
 * tests call besides its table, wk_dist_nccl_backend (dist.h).
 *
 * libnccl.so.2 is opened with dlopen on first use, never linked, like cuBLAS
 * (src/cuda/cuda_runtime.cu): a CUDA build runs where NCCL is missing, and
 * says so only when NCCL is asked for. The library is searched as
 * $WICK_NCCL_LIBRARY when set (that file only), else by its soname (the
 * loader's path), else in the CUDA toolkit wick was built with. */
#ifndef WK_DIST_NCCL_BACKEND_H
#define WK_DIST_NCCL_BACKEND_H

#include <stddef.h>

#include "dist.h"

/* Why NCCL cannot be used here ("NCCL is not available: ..."), or NULL when
 * it can (the library loads and a GPU is present). Loads NCCL on first call. */
const char *wk_dist_nccl_why(void);
/* 1 when wk_dist_nccl_why() is NULL (also declared in dist.h). */
int wk_dist_nccl_usable(void);
/* The loaded NCCL's version code (ncclGetVersion: 22809 for 2.28.9), 0 when
 * it did not load. */
int wk_dist_nccl_version(void);
/* ncclCommAbort of the group's communicator (the watchdog, before it ends the
 * job): later NCCL calls of the group fail instead of waiting. Safe from any
 * thread; does nothing for a group without one. */
void wk_dist_nccl_abort(wk_dist_group *g);

/* ---- host logic, exposed for tests/test_dist_nccl.c ---- */

/* Opens `path` as NCCL, resolves every function wick calls and checks the
 * version, then closes it again: 1 when it would do (*version set), else 0
 * with the reason in err ("NCCL is not available: <dlerror>", a missing
 * function, a version too old). Does not touch the process's loaded NCCL. */
int wk_dist_nccl_try_library(const char *path, int *version, char *err, size_t size);
/* The NCCL data type and reduction (ncclDataType_t, ncclRedOp_t values) for
 * a wick dtype and op (op < 0: no reduction, a plain move); WICK_OK, else
 * WICK_ERR_DTYPE or WICK_ERR_ARGUMENT naming `what` ("all_reduce"), the
 * dtype and the op. Without NCCL's header (a build without CUDA) every call
 * fails with WICK_ERR_UNSUPPORTED. */
wick_status wk_dist_nccl_types(const char *what, wick_dtype dtype, int op, int *nccl_type, int *nccl_op);

#endif
