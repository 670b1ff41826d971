/* The NCCL backend of the process group: CUDA tensors moved by NCCL, which is
 * bootstrapped over the group's MPI communicator (rank 0's unique id is
 * broadcast with wk_dist_bootstrap_broadcast) and queues its kernels on
 * wick's one stream of the tensors' device, so a collective is ordered with
 * wick's kernels like any op and needs no wait of its own (dist.h).
 *
 * libnccl.so.2 is opened with dlopen on first use, each function resolved
 * once, as cuda_runtime.cu opens cuBLAS: nothing is linked, a CUDA build runs
 * where NCCL is missing, and init_process_group{backend = "nccl"} then says
 * why ("NCCL is not available: <dlerror>").
 *
 * Each rank's communicator lives on GPU local_rank % device_count, which init
 * makes the calling thread's current device (torch.cuda.set_device(local_rank)
 * in PyTorch's scripts). A collective's completion is a CUDA event recorded on
 * that stream after it (event_record); event_query also polls NCCL's
 * asynchronous error, so the watchdog sees a failed peer as a failure; the
 * watchdog's way out is wk_dist_nccl_abort (ncclCommAbort).
 *
 * A build without CUDA, or without NCCL's header, still defines the table and
 * the functions of nccl_backend.h: init then fails with the reason. */
#include "nccl_backend.h"

#include "../core/cuda_api.h"
#include "../core/internal.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(WICK_WITH_CUDA) && defined(__has_include)
#if __has_include(<nccl.h>)
#include <nccl.h>
#define WK_HAVE_NCCL 1
#endif
#endif

/* 2.10.0 (NCCL's version code): bfloat16 and ncclAvg; ncclSend/ncclRecv,
 * ncclCommAbort and ncclCommGetAsyncError are older. */
#define WK_NCCL_MIN_VERSION 21000
#define WK_NCCL_MIN_TEXT "2.10"
#define WK_NCCL_SONAME "libnccl.so.2"
/* the MPI tag of send's header (count and dtype), checked by recv */
#define WK_NCCL_P2P_TAG 0x4e43

#ifdef WK_HAVE_NCCL

/* "2.28.9" from a version code: X*10000+Y*100+Z since 2.9, X*1000+Y*100+Z before */
static void version_text(int code, char *buf, size_t size) {
    if (code >= 10000) snprintf(buf, size, "%d.%d.%d", code / 10000, code % 10000 / 100, code % 100);
    else snprintf(buf, size, "%d.%d.%d", code / 1000, code % 1000 / 100, code % 100);
}

/* ---- the library, loaded on first use ---- */

/* X(function, required): every NCCL function wick calls, resolved once */
#define WK_NCCL_FUNCTIONS(X)                                                                              \
    X(ncclGetVersion, 1) X(ncclGetErrorString, 1) X(ncclGetLastError, 0) X(ncclGetUniqueId, 1)            \
    X(ncclCommInitRank, 1) X(ncclCommDestroy, 1) X(ncclCommAbort, 1) X(ncclCommGetAsyncError, 1)          \
    X(ncclCommCuDevice, 1) X(ncclAllReduce, 1) X(ncclBroadcast, 1) X(ncclAllGather, 1)                    \
    X(ncclReduceScatter, 1) X(ncclSend, 1) X(ncclRecv, 1) X(ncclGroupStart, 1) X(ncclGroupEnd, 1)

typedef struct {
#define WK_NCCL_POINTER(name, required) __typeof__(name) *name;
    WK_NCCL_FUNCTIONS(WK_NCCL_POINTER)
#undef WK_NCCL_POINTER
} nccl_api;

/* Opens `path`, resolves the functions into *api and checks the version: 1
 * with *handle and *version set, else 0 with the reason in err (and nothing
 * left open). */
static int open_library(const char *path, nccl_api *api, void **handle, int *version, char *err, size_t size) {
    (void)dlerror();
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        snprintf(err, size, "NCCL is not available: %s", why ? why : path);
        return 0;
    }
    memset(api, 0, sizeof *api);
#define WK_NCCL_RESOLVE(name, required)                                                          \
    api->name = (__typeof__(name) *)dlsym(lib, #name);                                           \
    if (!api->name && (required)) {                                                              \
        snprintf(err, size, "NCCL is not available: %s has no function %s (NCCL %s or newer is needed)", \
                 path, #name, WK_NCCL_MIN_TEXT);                                                 \
        dlclose(lib);                                                                            \
        return 0;                                                                                \
    }
    WK_NCCL_FUNCTIONS(WK_NCCL_RESOLVE)
#undef WK_NCCL_RESOLVE
    int code = 0;
    ncclResult_t r = api->ncclGetVersion(&code);
    if (r != ncclSuccess || code < WK_NCCL_MIN_VERSION) {
        char have[32];
        version_text(code, have, sizeof have);
        if (r != ncclSuccess)
            snprintf(err, size, "NCCL is not available: ncclGetVersion of %s failed (%d)", path, (int)r);
        else snprintf(err, size, "NCCL is not available: %s is NCCL %s, wick needs %s or newer", path, have,
                      WK_NCCL_MIN_TEXT);
        dlclose(lib);
        return 0;
    }
    *handle = lib;
    *version = code;
    return 1;
}

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static nccl_api nccl;
static void *nccl_lib; /* set once by load_nccl */
static int nccl_code;
static char load_error[640];

/* $WICK_NCCL_LIBRARY alone when set; else the soname (LD_LIBRARY_PATH, the
 * run path, the system's cache), then the toolkit wick was built with. The
 * error kept is the first one's (the soname's dlerror). */
static void load_nccl(void) {
    const char *env = getenv("WICK_NCCL_LIBRARY");
    if (env && *env) {
        open_library(env, &nccl, &nccl_lib, &nccl_code, load_error, sizeof load_error);
        return;
    }
    const char *names[] = {WK_NCCL_SONAME,
#ifdef WICK_CUDA_LIBDIR
                           WICK_CUDA_LIBDIR "/" WK_NCCL_SONAME,
#endif
                           "/usr/local/cuda/lib64/" WK_NCCL_SONAME, "/usr/local/cuda/lib/" WK_NCCL_SONAME};
    char other[640];
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (open_library(names[i], &nccl, &nccl_lib, &nccl_code, i == 0 ? load_error : other,
                         i == 0 ? sizeof load_error : sizeof other))
            return;
}

const char *wk_dist_nccl_why(void) {
    pthread_once(&load_once, load_nccl);
    if (!nccl_lib) return load_error;
    if (wick_cuda_device_count() <= 0)
        return "NCCL is not available: no CUDA GPU is available (wick.cuda.is_available() is false)";
    return NULL;
}

int wk_dist_nccl_version(void) {
    pthread_once(&load_once, load_nccl);
    return nccl_lib ? nccl_code : 0;
}

int wk_dist_nccl_try_library(const char *path, int *version, char *err, size_t size) {
    nccl_api api;
    void *lib = NULL;
    *version = 0;
    if (!open_library(path, &api, &lib, version, err, size)) return 0;
    dlclose(lib); /* balanced: the process's own handle, if any, stays open */
    return 1;
}

/* ---- dtypes and reductions ---- */

WK_STATIC_ASSERT(WICK_NUM_DTYPES == 10, "a new dtype needs its NCCL type in wk_dist_nccl_types");
WK_STATIC_ASSERT(WICK_DIST_NUM_OPS == 5, "a new reduction needs its NCCL op in wk_dist_nccl_types");

wick_status wk_dist_nccl_types(const char *what, wick_dtype dtype, int op, int *nccl_type, int *nccl_op) {
    static const ncclDataType_t types[WICK_NUM_DTYPES] = {
        [WICK_FLOAT32] = ncclFloat32, [WICK_FLOAT64] = ncclFloat64, [WICK_FLOAT16] = ncclFloat16,
        [WICK_BFLOAT16] = ncclBfloat16, [WICK_INT64] = ncclInt64, [WICK_INT32] = ncclInt32,
        [WICK_UINT8] = ncclUint8,
        [WICK_BOOL] = ncclUint8, /* one byte, 0 or 1; reductions below keep it so */
    };
    *nccl_type = -1, *nccl_op = -1;
    /* (complex tensors never come: group.c refuses them) */
    if ((unsigned)dtype >= WICK_NUM_DTYPES || wick_dtype_is_complex(dtype))
        return wick_fail(WICK_ERR_DTYPE, "%s: NCCL has no type for dtype number %d", what, (int)dtype);
    *nccl_type = (int)types[dtype];
    if (op < 0) return WICK_OK;
    bool is_bool = dtype == WICK_BOOL, floating = wick_dtype_is_floating(dtype);
    switch ((wick_dist_op)op) {
    /* bool as PyTorch's NCCL backend: sum is a logical or, product a logical and */
    case WICK_DIST_SUM: *nccl_op = is_bool ? ncclMax : ncclSum; return WICK_OK;
    case WICK_DIST_PRODUCT: *nccl_op = is_bool ? ncclMin : ncclProd; return WICK_OK;
    case WICK_DIST_MAX: *nccl_op = ncclMax; return WICK_OK;
    case WICK_DIST_MIN: *nccl_op = ncclMin; return WICK_OK;
    case WICK_DIST_AVG:
        if (floating) {
            *nccl_op = ncclAvg;
            return WICK_OK;
        }
        return wick_fail(WICK_ERR_DTYPE, "%s: op \"avg\" needs a floating dtype, got %s", what,
                         wick_dtype_name(dtype));
    default: break;
    }
    return wick_fail(WICK_ERR_ARGUMENT, "%s: NCCL has no reduction for op number %d", what, op);
}

/* ---- the group's communicator ---- */

typedef struct {
    ncclComm_t comm;
    int device;          /* the GPU the communicator lives on */
    wick_tensor *scratch; /* one float32 on it: the barrier's all_reduce */
    int aborted;         /* set (atomically) by wk_dist_nccl_abort: comm is gone */
} nccl_state;

typedef struct {
    void *event; /* a cudaEvent_t on device's stream */
    int device;
} nccl_event;

/* "wick.distributed: ncclAllReduce on cuda:0 failed: <NCCL's text> (ncclResult N): <its last error>" */
static wick_status nccl_fail(ncclResult_t r, const char *call, const nccl_state *s, int device) {
    const char *text = nccl.ncclGetErrorString ? nccl.ncclGetErrorString(r) : "unknown NCCL error";
    /* NCCL's own detail: the communicator's, or the process's last (NULL comm) when there is none yet */
    const char *last = nccl.ncclGetLastError && !(s && __atomic_load_n(&s->aborted, __ATOMIC_ACQUIRE))
                           ? nccl.ncclGetLastError(s ? s->comm : NULL)
                           : NULL;
    bool more = last && *last;
    wick_status st = r == ncclInvalidArgument || r == ncclInvalidUsage ? WICK_ERR_ARGUMENT : WICK_ERR_DEVICE;
    return wick_fail(st, "wick.distributed: %s on cuda:%d failed: %s (ncclResult %d)%s%s", call, device,
                     text ? text : "?", (int)r, more ? ": " : "", more ? last : "");
}

/* The group's state, its device's stream made current, for an entry named
 * `what` on `device` (< 0: the communicator's own). */
static wick_status enter(wk_dist_group *g, int *device, const char *what, nccl_state **state, cudaStream_t *stream) {
    nccl_state *s = (nccl_state *)g->backend_state;
    if (!s || !s->comm || __atomic_load_n(&s->aborted, __ATOMIC_ACQUIRE))
        return wick_fail(WICK_ERR_DEVICE, "%s: the process group's NCCL communicator was aborted or destroyed", what);
    if (*device < 0) *device = s->device;
    if (*device != s->device)
        return wick_fail(WICK_ERR_DEVICE,
                         "%s: the tensor is on cuda:%d, but this rank's NCCL communicator is on cuda:%d "
                         "(init_process_group binds local rank %d to GPU local_rank %% device_count); "
                         "move the tensor there",
                         what, *device, s->device, g->local_rank);
    void *sp = NULL;
    wick_status st = wk_gpu_stream(s->device, what, &sp);
    if (st) return st;
    *state = s;
    *stream = (cudaStream_t)sp;
    return WICK_OK;
}

/* enter, after mapping dtype (and op; -1: none) to NCCL's types */
static wick_status enter_typed(wk_dist_group *g, int *device, const char *what, wick_dtype dtype, int op,
                               nccl_state **state, cudaStream_t *stream, int *type, int *rop) {
    wick_status st = wk_dist_nccl_types(what, dtype, op, type, rop);
    return st ? st : enter(g, device, what, state, stream);
}

static wick_status nccl_init(wk_dist_group *g) {
    const char *why = wk_dist_nccl_why();
    if (why) return wick_fail(WICK_ERR_DEVICE, "wick.distributed.init_process_group: backend 'nccl': %s", why);
    int count = wick_cuda_device_count();
    int device = (g->local_rank < 0 ? 0 : g->local_rank) % count;
    wick_status st = wick_cuda_set_device(device);
    if (st) return st;
    /* rank 0's unique id, with its status, so that every rank fails alike */
    struct {
        int32_t status;
        ncclUniqueId id;
    } boot;
    memset(&boot, 0, sizeof boot);
    if (g->rank == 0) boot.status = (int32_t)nccl.ncclGetUniqueId(&boot.id);
    if ((st = wk_dist_bootstrap_broadcast(g, &boot, sizeof boot, 0))) return st;
    if (boot.status != ncclSuccess)
        return wick_fail(WICK_ERR_DEVICE,
                         "wick.distributed.init_process_group: backend 'nccl': ncclGetUniqueId failed on rank 0: %s",
                         nccl.ncclGetErrorString((ncclResult_t)boot.status));
    void *stream;
    /* the device made CUDA's current one: ncclCommInitRank uses it */
    if ((st = wk_gpu_stream(device, "wick.distributed.init_process_group", &stream))) return st;
    nccl_state *s = (nccl_state *)calloc(1, sizeof *s);
    if (!s) return wick_fail(WICK_ERR_OOM, "wick.distributed.init_process_group: out of memory");
    s->device = device;
    ncclResult_t r = nccl.ncclCommInitRank(&s->comm, g->size, boot.id, g->rank);
    if (r != ncclSuccess) {
        s->comm = NULL;
        st = nccl_fail(r, "ncclCommInitRank (init_process_group)", s, device);
        free(s);
        return st;
    }
    int64_t one = 1;
    wick_options opt = wick_default_options();
    opt.device.type = WICK_CUDA, opt.device.index = device;
    if ((st = wick_full(&s->scratch, 1, &one, 0.0, opt))) {
        nccl.ncclCommDestroy(s->comm);
        free(s);
        return st;
    }
    g->backend_state = s;
    return WICK_OK;
}

static void nccl_destroy(wk_dist_group *g) {
    nccl_state *s = (nccl_state *)g->backend_state;
    if (!s) return;
    if (s->comm && !__atomic_load_n(&s->aborted, __ATOMIC_ACQUIRE)) nccl.ncclCommDestroy(s->comm);
    wick_tensor_release(s->scratch);
    free(s);
    g->backend_state = NULL;
}

void wk_dist_nccl_abort(wk_dist_group *g) {
    nccl_state *s = g && g->be == &wk_dist_nccl_backend ? (nccl_state *)g->backend_state : NULL;
    if (!s || !s->comm || __atomic_exchange_n(&s->aborted, 1, __ATOMIC_ACQ_REL)) return;
    nccl.ncclCommAbort(s->comm);
}

/* ---- the collectives: queued on the device's stream ---- */

static wick_status nccl_all_reduce(wk_dist_group *g, void *buf, int64_t count, wick_dtype dtype, wick_dist_op op,
                                   int device) {
    nccl_state *s = NULL;
    cudaStream_t stream = NULL;
    int type, rop;
    wick_status st = enter_typed(g, &device, "wick.distributed.all_reduce", dtype, (int)op, &s, &stream, &type, &rop);
    if (st) return st;
    ncclResult_t r = nccl.ncclAllReduce(buf, buf, (size_t)count, (ncclDataType_t)type, (ncclRedOp_t)rop, s->comm,
                                        stream);
    return r == ncclSuccess ? WICK_OK : nccl_fail(r, "ncclAllReduce", s, device);
}

static wick_status nccl_broadcast(wk_dist_group *g, void *buf, int64_t count, wick_dtype dtype, int root, int device) {
    nccl_state *s = NULL;
    cudaStream_t stream = NULL;
    int type, rop;
    wick_status st = enter_typed(g, &device, "wick.distributed.broadcast", dtype, -1, &s, &stream, &type, &rop);
    if (st) return st;
    ncclResult_t r = nccl.ncclBroadcast(buf, buf, (size_t)count, (ncclDataType_t)type, root, s->comm, stream);
    return r == ncclSuccess ? WICK_OK : nccl_fail(r, "ncclBroadcast", s, device);
}

static wick_status nccl_all_gather(wk_dist_group *g, const void *send, void *recv, int64_t count, wick_dtype dtype,
                                   int device) {
    nccl_state *s = NULL;
    cudaStream_t stream = NULL;
    int type, rop;
    wick_status st = enter_typed(g, &device, "wick.distributed.all_gather", dtype, -1, &s, &stream, &type, &rop);
    if (st) return st;
    ncclResult_t r = nccl.ncclAllGather(send, recv, (size_t)count, (ncclDataType_t)type, s->comm, stream);
    return r == ncclSuccess ? WICK_OK : nccl_fail(r, "ncclAllGather", s, device);
}

static wick_status nccl_reduce_scatter(wk_dist_group *g, const void *send, void *recv, int64_t count,
                                       wick_dtype dtype, wick_dist_op op, int device) {
    nccl_state *s = NULL;
    cudaStream_t stream = NULL;
    int type, rop;
    wick_status st = enter_typed(g, &device, "wick.distributed.reduce_scatter_tensor", dtype, (int)op, &s, &stream, &type, &rop);
    if (st) return st;
    ncclResult_t r = nccl.ncclReduceScatter(send, recv, (size_t)count, (ncclDataType_t)type, (ncclRedOp_t)rop,
                                            s->comm, stream);
    return r == ncclSuccess ? WICK_OK : nccl_fail(r, "ncclReduceScatter", s, device);
}

/* send's header, which recv checks before NCCL moves a byte: NCCL itself
 * cannot tell a receiver that the sizes differ (it would hang or truncate) */
typedef struct {
    int64_t count, dtype;
} p2p_header;

/* One ncclSend or ncclRecv, in a group of its own (NCCL's point-to-point form). */
static ncclResult_t nccl_p2p(nccl_state *s, int sending, void *buf, int64_t count, int type, int peer,
                             cudaStream_t stream) {
    ncclResult_t r = nccl.ncclGroupStart();
    if (r == ncclSuccess) {
        r = sending ? nccl.ncclSend(buf, (size_t)count, (ncclDataType_t)type, peer, s->comm, stream)
                    : nccl.ncclRecv(buf, (size_t)count, (ncclDataType_t)type, peer, s->comm, stream);
        ncclResult_t end = nccl.ncclGroupEnd();
        if (r == ncclSuccess) r = end;
    }
    return r;
}

/* The error of a receive whose sender sent another count or dtype (h). */
static bool header_known(const p2p_header *h) { return h->dtype >= 0 && h->dtype < WICK_NUM_DTYPES && h->count >= 0; }
static wick_status mismatch_fail(const p2p_header *h, int64_t count, wick_dtype dtype, int peer) {
    return wick_fail(WICK_ERR_SHAPE,
                     "wick.distributed.recv: rank %d sent %lld elements of %s, but the tensor holds %lld of %s "
                     "(send and recv need the same dtype and number of elements)",
                     peer, (long long)h->count, header_known(h) ? wick_dtype_name((wick_dtype)h->dtype) : "?",
                     (long long)count, wick_dtype_name(dtype));
}

/* Memory of the sender's shape for a mismatched message, received there and
 * dropped (so the sender's ncclSend completes and the group stays usable);
 * *sink stays NULL when the header is not a valid one (nothing to receive). */
static void mismatch_sink(const p2p_header *h, int device, wick_tensor **sink, int *type) {
    *sink = NULL;
    if (!header_known(h)) return;
    wick_options opt = wick_default_options();
    opt.dtype = (wick_dtype)h->dtype, opt.device.type = WICK_CUDA, opt.device.index = device;
    int rop = -1;
    if (wk_dist_nccl_types("wick.distributed.recv", opt.dtype, -1, type, &rop) || wick_empty(sink, 1, &h->count, opt))
        *sink = NULL;
}

static wick_status recv_mismatch(nccl_state *s, cudaStream_t stream, const p2p_header *h, int64_t count,
                                 wick_dtype dtype, int peer, int device) {
    wick_tensor *sink = NULL;
    int type = -1;
    mismatch_sink(h, device, &sink, &type);
    if (sink) {
        ncclResult_t r = nccl_p2p(s, 0, wick_tensor_data(sink), h->count, type, peer, stream);
        wick_tensor_release(sink); /* stream-ordered: reused only after the receive */
        if (r != ncclSuccess) return nccl_fail(r, "ncclRecv (dropping a mismatched message)", s, device);
    }
    return mismatch_fail(h, count, dtype, peer);
}

static wick_status nccl_send(wk_dist_group *g, const void *buf, int64_t count, wick_dtype dtype, int peer,
                             int device) {
    nccl_state *s = NULL;
    cudaStream_t stream = NULL;
    int type, rop;
    wick_status st = enter_typed(g, &device, "wick.distributed.send", dtype, -1, &s, &stream, &type, &rop);
    if (st) return st;
    p2p_header h = {count, (int64_t)dtype};
    if ((st = wk_mpi_send_bytes(wk_dist_group_comm(g), &h, sizeof h, peer, WK_NCCL_P2P_TAG))) return st;
    ncclResult_t r = nccl_p2p(s, 1, (void *)buf, count, type, peer, stream);
    return r == ncclSuccess ? WICK_OK : nccl_fail(r, "ncclSend", s, device);
}

static wick_status nccl_recv(wk_dist_group *g, void *buf, int64_t count, wick_dtype dtype, int peer, int device) {
    nccl_state *s = NULL;
    cudaStream_t stream = NULL;
    int type, rop;
    wick_status st = enter_typed(g, &device, "wick.distributed.recv", dtype, -1, &s, &stream, &type, &rop);
    if (st) return st;
    p2p_header h = {-1, -1};
    if ((st = wk_mpi_recv_bytes(wk_dist_group_comm(g), &h, sizeof h, peer, WK_NCCL_P2P_TAG))) return st;
    if (h.count != count || h.dtype != (int64_t)dtype) return recv_mismatch(s, stream, &h, count, dtype, peer, device);
    ncclResult_t r = nccl_p2p(s, 0, buf, count, type, peer, stream);
    return r == ncclSuccess ? WICK_OK : nccl_fail(r, "ncclRecv", s, device);
}

/* batch_isend_irecv: the headers first (every send's, then every receive's,
 * so ranks that all send before they receive never wait on each other), then
 * every transfer in one NCCL group. */
static wick_status nccl_p2p_batch(wk_dist_group *g, const wk_dist_p2p *ops, int n, int device) {
    const char *what = "wick.distributed.batch_isend_irecv";
    nccl_state *s = NULL;
    cudaStream_t stream = NULL;
    wick_status st = enter(g, &device, what, &s, &stream);
    if (st) return st;
    int *types = calloc((size_t)n, sizeof *types);
    p2p_header *h = calloc((size_t)n, sizeof *h);
    wick_tensor **sinks = calloc((size_t)n, sizeof *sinks);
    int bad = -1; /* the first receive whose message differs */
    int rop = -1;
    if (!types || !h || !sinks) st = wick_fail(WICK_ERR_OOM, "%s: out of memory", what);
    for (int i = 0; i < n && !st; i++) st = wk_dist_nccl_types(what, ops[i].dtype, -1, &types[i], &rop);
    for (int i = 0; i < n && !st; i++)
        if (!ops[i].is_recv) {
            h[i] = (p2p_header){ops[i].count, (int64_t)ops[i].dtype};
            st = wk_mpi_send_bytes(wk_dist_group_comm(g), &h[i], sizeof h[i], ops[i].peer, WK_NCCL_P2P_TAG);
        }
    for (int i = 0; i < n && !st; i++)
        if (ops[i].is_recv) {
            h[i] = (p2p_header){-1, -1};
            st = wk_mpi_recv_bytes(wk_dist_group_comm(g), &h[i], sizeof h[i], ops[i].peer, WK_NCCL_P2P_TAG);
            if (!st && (h[i].count != ops[i].count || h[i].dtype != (int64_t)ops[i].dtype)) {
                if (bad < 0) bad = i;
                mismatch_sink(&h[i], device, &sinks[i], &types[i]);
            }
        }
    if (!st) {
        ncclResult_t r = nccl.ncclGroupStart();
        if (r == ncclSuccess) {
            for (int i = 0; i < n && r == ncclSuccess; i++) {
                bool matched = h[i].count == ops[i].count && h[i].dtype == (int64_t)ops[i].dtype;
                void *buf = matched ? ops[i].buf : sinks[i] ? wick_tensor_data(sinks[i]) : NULL;
                size_t count = (size_t)(matched ? ops[i].count : h[i].count);
                if (!ops[i].is_recv)
                    r = nccl.ncclSend(buf, count, (ncclDataType_t)types[i], ops[i].peer, s->comm, stream);
                else if (buf)
                    r = nccl.ncclRecv(buf, count, (ncclDataType_t)types[i], ops[i].peer, s->comm, stream);
            }
            ncclResult_t end = nccl.ncclGroupEnd();
            if (r == ncclSuccess) r = end;
        }
        if (r != ncclSuccess) st = nccl_fail(r, "ncclSend/ncclRecv (batch_isend_irecv)", s, device);
    }
    for (int i = 0; sinks && i < n; i++) wick_tensor_release(sinks[i]); /* stream-ordered */
    if (!st && bad >= 0) st = mismatch_fail(&h[bad], ops[bad].count, ops[bad].dtype, ops[bad].peer);
    free(types);
    free(h);
    free(sinks);
    return st;
}

/* A one-element all_reduce, then the host waits for it: when barrier returns,
 * every rank has reached it (and this rank's earlier work on the GPU is done). */
static wick_status nccl_barrier(wk_dist_group *g, int device) {
    nccl_state *s = NULL;
    cudaStream_t stream = NULL;
    wick_status st = enter(g, &device, "wick.distributed.barrier", &s, &stream);
    if (st) return st;
    device = s->device; /* the scratch lives there */
    ncclResult_t r =
        nccl.ncclAllReduce(wick_tensor_data(s->scratch), wick_tensor_data(s->scratch), 1, ncclFloat32, ncclSum, s->comm,
                           stream);
    if (r != ncclSuccess) return nccl_fail(r, "ncclAllReduce (barrier)", s, device);
    void *ev = NULL;
    if ((st = wk_gpu_event_record(device, "wick.distributed.barrier", &ev))) return st;
    st = wk_gpu_event_synchronize(ev, device, "wick.distributed.barrier");
    wk_gpu_event_destroy(ev);
    return st;
}

/* ---- completion: an event after each collective ---- */

static wick_status nccl_event_record(wk_dist_group *g, int device, void **event) {
    *event = NULL;
    nccl_state *s = (nccl_state *)g->backend_state;
    if (device < 0) device = s ? s->device : 0;
    nccl_event *e = (nccl_event *)malloc(sizeof *e);
    if (!e) return wick_fail(WICK_ERR_OOM, "wick.distributed: out of memory");
    e->device = device;
    wick_status st = wk_gpu_event_record(device, "wick.distributed (nccl)", &e->event);
    if (st) {
        free(e);
        return st;
    }
    *event = e;
    return WICK_OK;
}

static int nccl_event_query(wk_dist_group *g, void *event) {
    nccl_event *e = (nccl_event *)event;
    int done = wk_gpu_event_query(e->event, e->device, "wick.distributed (nccl)");
    if (done != 0) return done;
    /* still running: an error NCCL found meanwhile (a lost peer, the network)
     * leaves its kernels waiting forever, so it is reported from here */
    nccl_state *s = (nccl_state *)g->backend_state;
    if (s && s->comm && !__atomic_load_n(&s->aborted, __ATOMIC_ACQUIRE)) {
        ncclResult_t async = ncclSuccess;
        if (nccl.ncclCommGetAsyncError(s->comm, &async) == ncclSuccess && async != ncclSuccess &&
            async != ncclInProgress) {
            nccl_fail(async, "a collective (asynchronous error)", s, e->device);
            return -1;
        }
    }
    return 0;
}

static wick_status nccl_event_wait(wk_dist_group *g, void *event) {
    nccl_event *e = (nccl_event *)event;
    return wk_gpu_event_synchronize(e->event, e->device, "work:wait (nccl)");
}

static void nccl_event_release(void *event) {
    nccl_event *e = (nccl_event *)event;
    if (!e) return;
    wk_gpu_event_destroy(e->event);
    free(e);
}

const wk_dist_backend wk_dist_nccl_backend = {
    .name = "nccl",
    .device_type = WICK_CUDA,
    .asynchronous = 1,
    .init = nccl_init,
    .destroy = nccl_destroy,
    .all_reduce = nccl_all_reduce,
    .broadcast = nccl_broadcast,
    .all_gather = nccl_all_gather,
    .reduce_scatter = nccl_reduce_scatter,
    .send = nccl_send,
    .recv = nccl_recv,
    .p2p_batch = nccl_p2p_batch,
    .barrier = nccl_barrier,
    .event_record = nccl_event_record,
    .event_query = nccl_event_query,
    .event_wait = nccl_event_wait,
    .event_release = nccl_event_release,
};

#else /* no NCCL header: the table exists, init says why */

#ifdef WICK_WITH_CUDA
#define WK_NO_NCCL "NCCL is not available: wick was built without NCCL's header (nccl.h was not found with CUDA's)"
#else
#define WK_NO_NCCL "NCCL is not available: wick was built without CUDA"
#endif

const char *wk_dist_nccl_why(void) { return WK_NO_NCCL; }
int wk_dist_nccl_version(void) { return 0; }
void wk_dist_nccl_abort(wk_dist_group *g) { (void)g; }

int wk_dist_nccl_try_library(const char *path, int *version, char *err, size_t size) {
    (void)path;
    *version = 0;
    snprintf(err, size, "%s", WK_NO_NCCL);
    return 0;
}

wick_status wk_dist_nccl_types(const char *what, wick_dtype dtype, int op, int *nccl_type, int *nccl_op) {
    (void)dtype, (void)op;
    *nccl_type = -1, *nccl_op = -1;
    return wick_fail(WICK_ERR_UNSUPPORTED, "%s: %s", what, WK_NO_NCCL);
}

static wick_status nccl_init(wk_dist_group *g) {
    (void)g;
    return wick_fail(WICK_ERR_DEVICE, "wick.distributed.init_process_group: backend 'nccl': %s", WK_NO_NCCL);
}
static void nccl_destroy(wk_dist_group *g) { (void)g; }

/* init always fails, so the engine never calls the collectives */
const wk_dist_backend wk_dist_nccl_backend = {
    .name = "nccl",
    .device_type = WICK_CUDA,
    .asynchronous = 1,
    .init = nccl_init,
    .destroy = nccl_destroy,
};

#endif

int wk_dist_nccl_usable(void) { return wk_dist_nccl_why() == NULL; }
