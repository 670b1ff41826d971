/* Storages, tensors and views. */
#include "autograd.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define WK_MAX_BYTES ((int64_t)1 << 56)
#define SMALL_STORAGE_BYTES 1024
/* inline data starts at a 64-byte offset, so it keeps malloc's alignment */
#define SMALL_STORAGE_HEADER ((sizeof(wick_storage) + 63) / 64 * 64)

/* Bytes of CPU tensors. Each thread batches its changes (a locked add per
 * tensor would cost more than the tiny tensor itself); the total is exact for
 * the calling thread and within ACCOUNT_BATCH for every other thread. */
#define ACCOUNT_BATCH (256 << 10)
static int64_t cpu_bytes_in_use;
static _Thread_local int64_t pending_bytes;

static void flush_account(void) {
    __atomic_add_fetch(&cpu_bytes_in_use, pending_bytes, __ATOMIC_RELAXED);
    pending_bytes = 0;
}

void wk_account_bytes(int64_t delta) {
    pending_bytes += delta;
    if (pending_bytes > ACCOUNT_BATCH || pending_bytes < -ACCOUNT_BATCH) flush_account();
}

int64_t wick_cpu_bytes_in_use(void) {
    flush_account();
    return __atomic_load_n(&cpu_bytes_in_use, __ATOMIC_RELAXED);
}

/* True when the caller dropped the last reference. A count of 1 means the caller
 * is the only holder, so no other thread can touch it: no locked instruction. */
static bool drop_ref(int *refcount) {
    if (__atomic_load_n(refcount, __ATOMIC_ACQUIRE) == 1) return true;
    return __atomic_sub_fetch(refcount, 1, __ATOMIC_ACQ_REL) == 0;
}

static const char *human_bytes(double n, char *buf, size_t size) {
    const char *units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    while (n >= 1024 && u < 5) n /= 1024, u++;
    snprintf(buf, size, u ? "%.2f %s" : "%.0f %s", n, units[u]);
    return buf;
}

/* ---- storage ---- */

static _Thread_local void (*oom_handler)(void *ctx);
static _Thread_local void *oom_ctx;

void wick_set_oom_handler(void (*handler)(void *ctx), void *ctx) {
    oom_handler = handler;
    oom_ctx = ctx;
}

void wk_host_collect(void) {
    if (oom_handler) oom_handler(oom_ctx); /* let the host free dead tensors */
}

void wk_oom_collect(const wick_backend *b) {
    wk_host_collect();
    if (b->empty_cache) b->empty_cache(); /* give back cached blocks */
}

void *wk_alloc_or_collect(const wick_backend *b, size_t nbytes, int device) {
    void *p = b->alloc(nbytes, device);
    if (!p) {
        if (b == &wk_cpu_backend) wk_memstat_retry();
        wk_oom_collect(b);
        p = b->alloc(nbytes, device);
        if (!p && b == &wk_cpu_backend) wk_memstat_oom();
    }
    return p;
}

/* A storage, with room for `extra` more bytes in its own block when the data is
 * small enough to live there too (then *extra_out points at them). Tiny tensors
 * so cost one allocation instead of three. */
static wick_status storage_new(wick_storage **out, wick_device dev, size_t nbytes, size_t extra, void **extra_out) {
    wick_status st = wk_check_device_usable(dev);
    if (st) return st;
    if (dev.type == WICK_CUDA && dev.index < 0 && (st = wick_cuda_current_device(&dev.index))) return st;
    bool small = dev.type == WICK_CPU && nbytes <= SMALL_STORAGE_BYTES;
    if (!small) extra = 0;
    size_t block = small ? SMALL_STORAGE_HEADER + extra + nbytes : sizeof(wick_storage);
    wick_storage *s = wk_malloc(block);
    if (!s) return wick_fail(WICK_ERR_OOM, "out of memory allocating a storage");
    s->block_size = block;
    s->refcount = 1;
    s->device = dev;
    s->nbytes = nbytes;
    s->data = small ? (char *)s + SMALL_STORAGE_HEADER + extra : NULL;
    s->inline_data = small;
    s->pinned = false;
    s->release = NULL;
    s->release_ctx = NULL;
    s->version = 0;
    s->data_writes = 0;
    s->aliases = 0;
    s->backend = wk_backend_for(dev);
    if (extra_out) *extra_out = extra ? (char *)s + SMALL_STORAGE_HEADER : NULL;
    if (small) wk_account_bytes((int64_t)nbytes);
    if (small) wk_memstat_alloc((int64_t)nbytes);
    if (s->backend && !small) {
        /* never a NULL pointer for a valid storage, even an empty one */
        s->data = wk_alloc_or_collect(s->backend, nbytes ? nbytes : 1, dev.index);
        if (!s->data) {
            wk_free(s, s->block_size);
            char name[32], amount[32];
            /* (on a GPU, PyTorch's words: YOLOX's `if "CUDA out of memory. " not in str(e): raise`) */
            bool gpu = dev.type == WICK_CUDA;
            return wick_fail(WICK_ERR_OOM, "%s %s %s on %s", gpu ? "CUDA out of memory." : "out of memory:",
                             gpu ? "Tried to allocate" : "tried to allocate",
                             human_bytes((double)nbytes, amount, sizeof amount),
                             wick_device_format(dev, name, sizeof name));
        }
        if (dev.type == WICK_CPU) wk_account_bytes((int64_t)nbytes);
        if (dev.type == WICK_CPU) wk_memstat_alloc((int64_t)nbytes);
    }
    wk_storage_born();
    *out = s;
    return WICK_OK;
}

static wick_tensor *tensor_alloc(void);

wick_status wk_tensor_wrap(wick_tensor **out, void *data, int64_t numel, wick_dtype dtype, void (*release)(void *),
                           void *ctx) {
    int64_t nbytes;
    if (numel < 0 || __builtin_mul_overflow(numel, (int64_t)wk_dtype_size(dtype), &nbytes) || !wk_dtype_size(dtype))
        return wick_fail(WICK_ERR_ARGUMENT, "a storage of %" PRId64 " elements of %s cannot exist", numel,
                         wick_dtype_name(dtype));
    wick_storage *s = wk_malloc(sizeof *s);
    wick_tensor *t = s ? tensor_alloc() : NULL;
    if (!s || !t) {
        wk_free(s, sizeof *s);
        return wick_fail(WICK_ERR_OOM, "out of memory allocating a tensor header");
    }
    s->block_size = sizeof *s;
    s->refcount = 1;
    s->device = wick_cpu();
    s->nbytes = (size_t)nbytes;
    s->data = data;
    s->inline_data = false;
    s->pinned = false;
    s->backend = &wk_cpu_backend;
    s->release = release;
    s->release_ctx = ctx;
    s->version = 0;
    s->data_writes = 0;
    s->aliases = 0;
    wk_account_bytes((int64_t)s->nbytes);
    wk_storage_born();
    t->storage = s;
    t->ndim = 1;
    t->dtype = dtype;
    t->offset = 0;
    t->sizes[0] = numel;
    t->strides[0] = 1;
    *out = t;
    return WICK_OK;
}

static void host_keeps_lifetime(void *ctx) { (void)ctx; }

static wick_status check_sizes(int ndim, const int64_t *sizes, wick_dtype dtype);

wick_status wick_from_host(wick_tensor **out, void *data, int ndim, const int64_t *sizes, wick_dtype dtype,
                           void (*release)(void *ctx), void *ctx) {
    if (!out) return wick_fail(WICK_ERR_ARGUMENT, "wick_from_host: out is NULL");
    if ((unsigned)dtype >= WICK_NUM_DTYPES) return wick_fail(WICK_ERR_DTYPE, "wick_from_host: invalid dtype %d", dtype);
    if (ndim && !sizes) return wick_fail(WICK_ERR_ARGUMENT, "wick_from_host: sizes is NULL");
    wick_status st = check_sizes(ndim, sizes, dtype);
    if (st) return st;
    int64_t numel = wk_numel(ndim, sizes);
    if (!data && numel > 0) return wick_fail(WICK_ERR_ARGUMENT, "wick_from_host: data is NULL");
    wick_tensor *t;
    /* never NULL data in a storage: an empty tensor gets a harmless address */
    static char empty;
    st = wk_tensor_wrap(&t, data ? data : &empty, numel, dtype, release ? release : host_keeps_lifetime, ctx);
    if (st) return st;
    t->ndim = ndim;
    if (ndim) memcpy(t->sizes, sizes, sizeof(int64_t) * ndim);
    wk_contiguous_strides(ndim, sizes, t->strides);
    *out = t;
    return WICK_OK;
}

wick_status wk_storage_new(wick_storage **out, wick_device dev, size_t nbytes) {
    return storage_new(out, dev, nbytes, 0, NULL);
}

static void storage_retain(wick_storage *s) { __atomic_add_fetch(&s->refcount, 1, __ATOMIC_RELAXED); }

void wk_storage_release(wick_storage *s) {
    if (!s || !drop_ref(&s->refcount)) return;
    if (s->release) s->release(s->release_ctx);
    else if (s->backend && s->data && !s->inline_data) s->backend->free(s->data, s->nbytes ? s->nbytes : 1, s->device.index);
    if (s->device.type == WICK_CPU) wk_account_bytes(-(int64_t)s->nbytes);
    if (s->device.type == WICK_CPU && !s->release) wk_memstat_free((int64_t)s->nbytes);
    wk_free(s, s->block_size);
    wk_storage_died();
}

/* ---- shapes ---- */

/* The product of the sizes; false (and *numel untouched) when a size is
 * negative or the product overflows. */
static bool checked_numel(int ndim, const int64_t *sizes, int64_t *numel) {
    int64_t n = 1;
    bool overflow = false, empty = false;
    for (int i = 0; i < ndim; i++) {
        if (sizes[i] < 0) return false;
        if (sizes[i] == 0) empty = true;
        else if (!overflow && __builtin_mul_overflow(n, sizes[i], &n)) overflow = true;
    }
    if (empty) n = 0;
    else if (overflow) return false;
    *numel = n;
    return true;
}

/* INT64_MAX for sizes that checked_numel refuses: never those of an existing
 * tensor (wk_tensor_new and check_view refuse them). */
int64_t wk_numel(int ndim, const int64_t *sizes) {
    int64_t n;
    return checked_numel(ndim, sizes, &n) ? n : INT64_MAX;
}

/* A size 0 counts as 1 (PyTorch's rule); the strides of a shape whose other
 * sizes overflow saturate (only empty views, where no stride is followed, can
 * have such a shape: check_view refuses the rest). */
void wk_contiguous_strides(int ndim, const int64_t *sizes, int64_t *strides) {
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        strides[i] = s;
        if (sizes[i] > 1 && __builtin_mul_overflow(s, sizes[i], &s)) s = INT64_MAX;
    }
}

const char *wk_shape_str(int ndim, const int64_t *sizes, char *buf, size_t size) {
    size_t len = 0;
    len += snprintf(buf, size, "[");
    for (int i = 0; i < ndim && len < size; i++)
        len += snprintf(buf + len, size - len, i ? ", %" PRId64 : "%" PRId64, sizes[i]);
    if (len < size) snprintf(buf + len, size - len, "]");
    return buf;
}

/* Sizes must be non-negative and their product must fit. */
static wick_status check_sizes(int ndim, const int64_t *sizes, wick_dtype dtype) {
    if (ndim < 0 || ndim > WICK_MAX_DIMS)
        return wick_fail(WICK_ERR_ARGUMENT, "a tensor has at most %d dimensions, got %d", WICK_MAX_DIMS,
                         ndim);
    int64_t bytes = (int64_t)wk_dtype_size(dtype);
    for (int i = 0; i < ndim; i++) {
        char buf[WK_SHAPE_BUF];
        if (sizes[i] < 0)
            return wick_fail(WICK_ERR_ARGUMENT, "negative dimension %" PRId64 " in size %s", sizes[i],
                             wk_shape_str(ndim, sizes, buf, sizeof buf));
        if (sizes[i] && (__builtin_mul_overflow(bytes, sizes[i], &bytes) || bytes > WK_MAX_BYTES))
            return wick_fail(WICK_ERR_OOM, "out of memory: size %s is too large to allocate",
                             wk_shape_str(ndim, sizes, buf, sizeof buf));
    }
    return WICK_OK;
}

wick_status wk_wrap_dim(const char *op, int *dim, int ndim) {
    int n = ndim > 0 ? ndim : 1; /* a 0-dim tensor accepts dim 0 and -1, like PyTorch */
    if (*dim < -n || *dim >= n)
        return wick_fail(WICK_ERR_INDEX,
                         "%s: dimension %d out of range (expected 1 to %d, or -%d to -1)", op,
                         *dim >= 0 ? *dim + 1 : *dim, n, n);
    if (*dim < 0) *dim += n;
    return WICK_OK;
}

/* ---- tensors ---- */

/* Headers are counted with the data, so the Lua binding's collector pacing
 * also sees many small views. */
static wick_tensor *tensor_alloc(void) {
    wick_tensor *t = wk_malloc(sizeof *t);
    if (t) {
        t->refcount = 1;
        t->in_storage_block = false;
        t->requires_grad = false;
        t->detached_alias = false;
        t->data_alias = false;
        t->learnt = false;
        t->grad_fn = NULL;
        t->grad = NULL;
        t->hook_id = 0;
        t->header_block = NULL;
        t->view_base = NULL;
        t->nograd_view = false;
        t->view_version = 0;
        wk_account_bytes((int64_t)sizeof *t);
    }
    return t;
}

/* A header that lives in its storage's block goes away with the storage. */
static void free_header(wick_tensor *t) {
    wk_account_bytes(-(int64_t)sizeof *t);
    if (!t->in_storage_block) wk_free(t, sizeof *t);
}

wick_status wk_tensor_new(wick_tensor **out, int ndim, const int64_t *sizes, wick_dtype dtype,
                          wick_device dev) {
    if ((unsigned)dtype >= WICK_NUM_DTYPES) return wick_fail(WICK_ERR_DTYPE, "invalid dtype %d", dtype);
    wick_status st = check_sizes(ndim, sizes, dtype);
    if (st) return st;
    wick_storage *storage = NULL;
    void *header = NULL;
    size_t header_size = (sizeof(wick_tensor) + 63) / 64 * 64;
    st = storage_new(&storage, dev, (size_t)wk_numel(ndim, sizes) * wk_dtype_size(dtype), header_size, &header);
    if (st) return st;
    wick_tensor *t = header ? header : wk_malloc(sizeof *t);
    if (!t) {
        wk_storage_release(storage);
        return wick_fail(WICK_ERR_OOM, "out of memory allocating a tensor header");
    }
    wk_account_bytes((int64_t)sizeof *t);
    t->refcount = 1;
    t->in_storage_block = header != NULL;
    t->requires_grad = false;
    t->detached_alias = false;
    t->data_alias = false;
    t->learnt = false;
    t->grad_fn = NULL;
    t->grad = NULL;
    t->hook_id = 0;
    t->header_block = NULL;
    t->view_base = NULL;
    t->nograd_view = false;
    t->view_version = 0;
    t->storage = storage;
    t->ndim = ndim;
    t->dtype = dtype;
    t->offset = 0;
    if (ndim) memcpy(t->sizes, sizes, sizeof(int64_t) * ndim);
    wk_contiguous_strides(ndim, sizes, t->strides);
    *out = t;
    return WICK_OK;
}

/* Offsets count elements; an offset never goes past this, so an address
 * computed from it (even of an empty view, which may point past its storage)
 * cannot wrap. */
#define WK_MAX_OFFSET WK_MAX_BYTES

/* The one check of every view's geometry (wk_tensor_view runs it): sizes >= 0
 * with an element count that fits, 0 <= offset <= WK_MAX_OFFSET and, unless the
 * view is empty, every element it reaches inside t's storage (overflow-checked). */
static wick_status check_view_as(const char *op, const wick_tensor *t, wick_dtype dtype, int ndim,
                                 const int64_t *sizes, const int64_t *strides, int64_t offset) {
    char a[WK_SHAPE_BUF], b[WK_SHAPE_BUF];
    if (ndim < 0 || ndim > WICK_MAX_DIMS)
        return wick_fail(WICK_ERR_ARGUMENT, "%s: a tensor has at most %d dimensions, got %d", op, WICK_MAX_DIMS, ndim);
    int64_t numel;
    if (!checked_numel(ndim, sizes, &numel))
        return wick_fail(WICK_ERR_SHAPE, "%s: invalid shape %s (a size is negative or the number of elements overflows)",
                         op, wk_shape_str(ndim, sizes, a, sizeof a));
    if (offset < 0 || offset > WK_MAX_OFFSET)
        return wick_fail(WICK_ERR_INDEX, "%s: storage offset %" PRId64 " is out of range", op, offset);
    if (numel == 0) return WICK_OK; /* no element is ever read: any strides do */
    /* the lowest and highest element the view reaches (a 0-dim view: its
     * offset alone, which must be inside the storage too) */
    int64_t lo = offset, hi = offset, storage = (int64_t)(t->storage->nbytes / wk_dtype_size(dtype));
    for (int i = 0; i <= ndim; i++) {
        int64_t span = 0;
        bool bad = i < ndim && (__builtin_mul_overflow(sizes[i] - 1, strides[i], &span) ||
                                __builtin_add_overflow(span < 0 ? lo : hi, span, span < 0 ? &lo : &hi));
        if (bad || lo < 0 || hi >= storage) {
            char reach[48];
            if (bad) snprintf(reach, sizeof reach, "an element past 2^63");
            else snprintf(reach, sizeof reach, "element %" PRId64, lo < 0 ? lo : hi);
            return wick_fail(WICK_ERR_INDEX,
                             "%s: a view of shape %s and strides %s at offset %" PRId64
                             " reaches %s, outside its storage of %" PRId64 " elements",
                             op, wk_shape_str(ndim, sizes, a, sizeof a), wk_shape_str(ndim, strides, b, sizeof b),
                             offset, reach, storage);
        }
    }
    return WICK_OK;
}

static wick_status check_view(const char *op, const wick_tensor *t, int ndim, const int64_t *sizes,
                              const int64_t *strides, int64_t offset) {
    return check_view_as(op, t, t->dtype, ndim, sizes, strides, offset);
}

wick_status wk_tensor_view(wick_tensor **out, const wick_tensor *t, int ndim, const int64_t *sizes,
                           const int64_t *strides, int64_t offset) {
    return wk_tensor_view_dtype(out, t, t->dtype, ndim, sizes, strides, offset);
}

wick_status wk_tensor_view_dtype(wick_tensor **out, const wick_tensor *t, wick_dtype dtype, int ndim,
                                 const int64_t *sizes, const int64_t *strides, int64_t offset) {
    wick_status st = check_view_as("view", t, dtype, ndim, sizes, strides, offset);
    if (st) return st;
    wick_tensor *v = tensor_alloc();
    if (!v) return wick_fail(WICK_ERR_OOM, "out of memory allocating a tensor header");
    v->ndim = ndim;
    v->dtype = dtype;
    v->storage = t->storage;
    storage_retain(t->storage);
    v->offset = offset;
    v->data_alias = t->data_alias; /* a view of a t.data writes as one */
    if (ndim) memcpy(v->sizes, sizes, sizeof(int64_t) * ndim);
    if (ndim) memcpy(v->strides, strides, sizeof(int64_t) * ndim);
    *out = v;
    return WICK_OK;
}

void wick_tensor_retain(wick_tensor *t) { __atomic_add_fetch(&t->refcount, 1, __ATOMIC_RELAXED); }

void wick_tensor_release(wick_tensor *t) {
    if (!t || !drop_ref(&t->refcount)) return;
    wick_storage *s = t->storage, *home = t->header_block;
    if (t->detached_alias) __atomic_sub_fetch(&s->aliases, 1, __ATOMIC_RELEASE);
    wk_hook_forget(t);
    wk_node_release(t->grad_fn);
    wick_tensor_release(t->grad);
    wick_tensor_release(t->view_base);
    free_header(t);
    wk_storage_release(s); /* after the header: it may hold the header's memory */
    wk_storage_release(home);
}

/* ---- taking other data in place (wick_tensor_set_, wick_tensors_to_) ---- */

/* dst takes src's data: storage (shared), dtype and geometry. Everything
 * else of dst stays (its address and references, requires_grad, grad). The
 * new storage's version moves past the old one's, so a graph that saved dst
 * before sees a write at backward instead of silently other data. No checks:
 * the callers have made them. */
static void take_data(wick_tensor *dst, const wick_tensor *src) {
    wick_storage *old = dst->storage;
    unsigned old_version = __atomic_load_n(&old->version, __ATOMIC_RELAXED), old_grad = wk_grad_version(old);
    if (dst->detached_alias) __atomic_sub_fetch(&old->aliases, 1, __ATOMIC_RELEASE);
    dst->detached_alias = false;
    dst->nograd_view = false;
    storage_retain(src->storage);
    dst->storage = src->storage;
    dst->dtype = src->dtype;
    dst->ndim = src->ndim;
    dst->offset = src->offset;
    if (src->ndim) memcpy(dst->sizes, src->sizes, sizeof(int64_t) * src->ndim);
    if (src->ndim) memcpy(dst->strides, src->strides, sizeof(int64_t) * src->ndim);
    unsigned *v = &dst->storage->version, now = __atomic_load_n(v, __ATOMIC_RELAXED);
    if (now <= old_version) __atomic_store_n(v, now = old_version + 1, __ATOMIC_RELAXED);
    unsigned writes = __atomic_load_n(&dst->storage->data_writes, __ATOMIC_RELAXED);
    if (now - writes <= old_grad) __atomic_store_n(v, old_grad + 1 + writes, __ATOMIC_RELAXED); /* autograd's too */
    /* a header living in its first storage's block keeps that block */
    if (dst->in_storage_block && !dst->header_block) dst->header_block = old;
    else wk_storage_release(old);
}

/* Whether `grad` could be the gradient of a tensor with t's shape, dtype and device. */
static bool grad_fits(const wick_tensor *grad, const wick_tensor *t) {
    return grad->ndim == t->ndim && memcmp(grad->sizes, t->sizes, sizeof(int64_t) * t->ndim) == 0 &&
           grad->dtype == t->dtype && wick_device_equal(grad->storage->device, t->storage->device);
}

wick_status wick_tensor_set_(wick_tensor *dst, wick_tensor *src) {
    if (!dst || !src) return wick_fail(WICK_ERR_ARGUMENT, "set_: %s is NULL", dst ? "src" : "dst");
    if (dst == src) return WICK_OK;
    /* a view of dst's own data with its history (t:unsqueeze_(1) is
     * t:set_(t:unsqueeze(1))): dst becomes that view, graph and all */
    bool own_view = dst->grad_fn && src->grad_fn && src->storage == dst->storage;
    if (dst->grad_fn && !own_view)
        return wick_fail(WICK_ERR_ARGUMENT,
                         "set_: the tensor has autograd history (grad_fn %s): only a leaf can take other data "
                         "(detach() it first)",
                         dst->grad_fn->name);
    if (dst->requires_grad && !wick_dtype_is_floating(src->dtype) && !wick_dtype_is_complex(src->dtype))
        return wick_fail(WICK_ERR_DTYPE, "set_: the tensor requires grad, so its data must be floating point (got %s)",
                         wick_dtype_name(src->dtype));
    if (dst->grad && !grad_fits(dst->grad, src)) {
        char gs[WK_SHAPE_BUF], ss[WK_SHAPE_BUF], gd[32], sd[32];
        return wick_fail(WICK_ERR_ARGUMENT,
                         "set_: the tensor's gradient (%s %s on %s) would not fit its new data (%s %s on %s): "
                         "move or clear the gradient first",
                         wick_dtype_name(dst->grad->dtype), wk_shape_str(dst->grad->ndim, dst->grad->sizes, gs, sizeof gs),
                         wick_device_format(dst->grad->storage->device, gd, sizeof gd), wick_dtype_name(src->dtype),
                         wk_shape_str(src->ndim, src->sizes, ss, sizeof ss),
                         wick_device_format(src->storage->device, sd, sizeof sd));
    }
    take_data(dst, src);
    if (own_view) {
        __atomic_add_fetch(&src->grad_fn->refcount, 1, __ATOMIC_RELAXED);
        wk_node_release(dst->grad_fn);
        dst->grad_fn = src->grad_fn;
    }
    return WICK_OK;
}

/* The tensors to move (each once, grads included), with their copies. */
#define MOVE_GRAD_DEPTH 8
typedef struct {
    wick_tensor *t, *copy;
} move_item;

static int compare_items(const void *a, const void *b) {
    uintptr_t x = (uintptr_t)((const move_item *)a)->t, y = (uintptr_t)((const move_item *)b)->t;
    return x < y ? -1 : x > y;
}

/* items[0..n) made distinct (sorted by address); returns the new count */
static int distinct_items(move_item *items, int n) {
    qsort(items, (size_t)n, sizeof *items, compare_items);
    int k = 0;
    for (int i = 0; i < n; i++)
        if (k == 0 || items[k - 1].t != items[i].t) items[k++] = items[i];
    return k;
}

/* The copy of one tensor to its target: NULL (and OK) when nothing changes. A
 * copy from a GPU to the CPU goes into fresh pageable memory, which the
 * backend has filled when its transfer returns even with non_blocking (see
 * wick_backend.transfer); asking for that leaves the wait to the batch's end. */
static wick_status copy_to_target(move_item *it, const wick_device *device, const wick_dtype *dtype, int non_blocking) {
    wick_tensor *t = it->t;
    wick_options opt = {t->dtype, t->storage->device, non_blocking};
    if (dtype && (wick_dtype_is_floating(t->dtype) || wick_dtype_is_complex(t->dtype))) opt.dtype = *dtype;
    if (device) opt.device = *device;
    it->copy = NULL;
    if (opt.dtype == t->dtype && wick_device_equal(opt.device, t->storage->device)) return WICK_OK;
    if (opt.device.type == WICK_CPU && t->storage->device.type == WICK_CUDA) opt.non_blocking = 1;
    wick_status st;
    WK_NO_GRAD(st = wick_to(&it->copy, t, opt));
    if (st) it->copy = NULL;
    return st;
}

wick_status wick_tensors_to_(int n, wick_tensor *const *tensors, const wick_device *device, const wick_dtype *dtype,
                             int non_blocking) {
    if (n < 0 || (n > 0 && !tensors)) return wick_fail(WICK_ERR_ARGUMENT, "tensors_to_: no array of %d tensors", n);
    if (dtype && (unsigned)*dtype >= WICK_NUM_DTYPES) return wick_fail(WICK_ERR_DTYPE, "tensors_to_: invalid dtype %d", *dtype);
    if (dtype && !wick_dtype_is_floating(*dtype) && !wick_dtype_is_complex(*dtype))
        return wick_fail(WICK_ERR_DTYPE, "nn.Module.to only accepts floating point or complex dtypes, but got desired "
                                         "dtype=%s", wick_dtype_name(*dtype));
    wick_device target;
    if (device) { /* "cuda" is the current device: a tensor already there stays */
        target = *device;
        int current;
        if (target.type == WICK_CUDA && target.index < 0 && wick_cuda_current_device(&current) == WICK_OK)
            target.index = current;
        device = &target;
    }
    /* each tensor and its grad (and a grad's grad, which a host may have set:
     * every gradient must keep fitting its tensor) */
    int cap = 0;
    for (int i = 0; i < n; i++) {
        if (!tensors[i]) return wick_fail(WICK_ERR_ARGUMENT, "tensors_to_: tensor %d is NULL", i + 1);
        const wick_tensor *g = tensors[i];
        int depth = 0;
        for (; g && depth < MOVE_GRAD_DEPTH; depth++) g = g->grad;
        if (g) return wick_fail(WICK_ERR_ARGUMENT, "tensors_to_: tensor %d has gradients of gradients nested deeper than %d", i + 1, MOVE_GRAD_DEPTH);
        if (cap > INT_MAX - depth) return wick_fail(WICK_ERR_ARGUMENT, "tensors_to_: too many tensors");
        cap += depth;
    }
    size_t items_bytes = sizeof(move_item) * (size_t)(cap ? cap : 1);
    move_item *items = wk_malloc(items_bytes);
    if (!items) return wick_fail(WICK_ERR_OOM, "out of memory listing %d tensors to move", n);
    int m = 0;
    for (int i = 0; i < n; i++)
        for (wick_tensor *g = tensors[i]; g; g = g->grad) {
            if (m < cap) items[m++].t = g; /* a cycle of grads ends at the depth counted above */
            else break;
        }
    m = distinct_items(items, m);
    /* 1. every copy, in one batch: no copy waits for a GPU, the end waits once
     * per GPU. A failure moves nothing. */
    wick_status st = WICK_OK;
    int made = 0;
    wick_cuda_begin_batch();
    for (; made < m && !st; made++) st = copy_to_target(&items[made], device, dtype, non_blocking);
    wick_status end = wick_cuda_end_batch();
    if (!st) st = end;
    /* 2. the swaps, which cannot fail: each tensor (and grad) takes its copy's
     * data. A tensor with autograd history is cut from its graph first (the
     * state of a module, like detach(); requires_grad stays). Param and grad
     * were converted alike, so each grad still fits its tensor. */
    for (int i = 0; i < made; i++) {
        move_item *it = &items[i];
        if (!st && it->copy) {
            if (it->t->grad_fn) {
                wk_node_release(it->t->grad_fn);
                it->t->grad_fn = NULL;
            }
            take_data(it->t, it->copy);
        }
        wick_tensor_release(it->copy);
    }
    wk_free(items, items_bytes);
    return st;
}

int wick_tensor_ndim(const wick_tensor *t) { return t->ndim; }
const int64_t *wick_tensor_sizes(const wick_tensor *t) { return t->sizes; }
const int64_t *wick_tensor_strides(const wick_tensor *t) { return t->strides; }
int64_t wick_tensor_offset(const wick_tensor *t) { return t->offset; }
int64_t wick_tensor_numel(const wick_tensor *t) { return wk_numel(t->ndim, t->sizes); }
wick_dtype wick_tensor_dtype(const wick_tensor *t) { return t->dtype; }
wick_device wick_tensor_device(const wick_tensor *t) { return t->storage->device; }
void *wick_tensor_data(const wick_tensor *t) { return wk_data(t); }
const void *wick_tensor_storage_id(const wick_tensor *t) { return t->storage; }
unsigned wick_tensor_version(const wick_tensor *t) { return wk_grad_version(t->storage); }

int wick_tensor_is_contiguous(const wick_tensor *t) {
    if (wick_tensor_numel(t) == 0) return 1; /* like PyTorch: no element is out of place */
    int64_t expected = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->sizes[i] == 1) continue;
        if (t->strides[i] != expected) return 0;
        expected *= t->sizes[i];
    }
    return 1;
}

/* ---- views ---- */

/* A view that autograd records when its input requires grad. */
static wick_status make_view(wick_tensor **out, const wick_tensor *t, int ndim, const int64_t *sizes,
                             const int64_t *strides, int64_t offset, int kind, int d0, int d1, int64_t start,
                             int64_t length, const int *perm) {
    wick_tensor *r = NULL;
    wick_status st = wk_tensor_view(&r, t, ndim, sizes, strides, offset);
    if (st) return st;
    wk_note_view_base(r, t);
    return wk_publish(out, r, wk_wants_grad(1, &t) ? wk_record_view(r, t, kind, d0, d1, start, length, perm) : WICK_OK);
}

/* t's offset moved `steps` along dim (checked: an empty view's strides can be huge). */
static wick_status step_offset(const char *op, const wick_tensor *t, int dim, int64_t steps, int64_t *offset) {
    if (__builtin_mul_overflow(steps, t->strides[dim], offset) || __builtin_add_overflow(*offset, t->offset, offset))
        return wick_fail(WICK_ERR_INDEX, "%s: the storage offset of position %" PRId64 " along dimension %d overflows",
                         op, (int64_t)((uint64_t)steps + 1), dim + 1);
    return WICK_OK;
}

/* Replaces one -1 in `sizes` by the size that keeps `numel` elements. */
static wick_status infer_size(const char *op, int ndim, int64_t *sizes, int64_t numel, int in_ndim,
                              const int64_t *in_sizes) {
    int infer = -1;
    int64_t nonzero = 1; /* the product of the non-zero known sizes: it gives an empty view its strides */
    bool fits = true, has_zero = false;
    char a[WK_SHAPE_BUF], b[WK_SHAPE_BUF];
    for (int i = 0; i < ndim; i++) {
        if (sizes[i] == -1) {
            if (infer >= 0) return wick_fail(WICK_ERR_SHAPE, "%s: only one dimension can be inferred", op);
            infer = i;
        } else if (sizes[i] < 0) {
            return wick_fail(WICK_ERR_SHAPE, "%s: invalid size %s", op, wk_shape_str(ndim, sizes, a, sizeof a));
        } else if (sizes[i] == 0) {
            has_zero = true;
        } else if (__builtin_mul_overflow(nonzero, sizes[i], &nonzero)) {
            fits = false;
        }
    }
    int64_t known = has_zero ? 0 : nonzero;
    if (fits && infer >= 0 && known != 0 && numel % known == 0) sizes[infer] = numel / known;
    if (!fits || (infer >= 0 && (known == 0 || numel % known != 0)) || (infer < 0 && known != numel))
        return wick_fail(WICK_ERR_SHAPE, "%s: shape %s is invalid for input of size %" PRId64 " (shape %s)",
                         op, wk_shape_str(ndim, sizes, a, sizeof a), numel,
                         wk_shape_str(in_ndim, in_sizes, b, sizeof b));
    return WICK_OK;
}

/* Strides for viewing t with new sizes without copying, or false when the memory
 * layout does not allow it. Works chunk by chunk of dims that are contiguous
 * with each other. */
static bool view_strides(const wick_tensor *t, int ndim, const int64_t *sizes, int64_t *strides) {
    if (wick_tensor_numel(t) == 0 || t->ndim == 0) {
        wk_contiguous_strides(ndim, sizes, strides);
        return true;
    }
    int vd = ndim - 1;
    int64_t chunk_stride = t->strides[t->ndim - 1], tensor_n = 1, view_n = 1;
    for (int td = t->ndim - 1; td >= 0; td--) {
        tensor_n *= t->sizes[td];
        bool chunk_ends = td == 0 || (t->sizes[td - 1] != 1 && t->strides[td - 1] != tensor_n * chunk_stride);
        if (!chunk_ends) continue;
        while (vd >= 0 && (view_n < tensor_n || sizes[vd] == 1)) {
            strides[vd] = view_n * chunk_stride;
            view_n *= sizes[vd];
            vd--;
        }
        if (view_n != tensor_n) return false;
        if (td > 0) {
            chunk_stride = t->strides[td - 1];
            tensor_n = view_n = 1;
        }
    }
    return vd == -1;
}

wick_status wick_view(wick_tensor **out, wick_tensor *t, int ndim, const int64_t *in_sizes) {
    int64_t sizes[WICK_MAX_DIMS], strides[WICK_MAX_DIMS];
    if (ndim < 0 || ndim > WICK_MAX_DIMS) return wick_fail(WICK_ERR_ARGUMENT, "view: too many dimensions");
    memcpy(sizes, in_sizes, sizeof(int64_t) * ndim);
    wick_status st = infer_size("view", ndim, sizes, wick_tensor_numel(t), t->ndim, t->sizes);
    if (st) return st;
    if (!view_strides(t, ndim, sizes, strides))
        return wick_fail(WICK_ERR_SHAPE,
                         "view size is not compatible with input tensor's size and stride (at least "
                         "one dimension spans across two contiguous subspaces). Use :reshape(...) "
                         "instead.");
    return make_view(out, t, ndim, sizes, strides, t->offset, WK_VIEW_RESHAPE, 0, 0, 0, 0, NULL);
}

/* t's memory read as `dtype` (PyTorch's t.view(dtype)): the same geometry
 * when the element sizes match, else the last dim (stride 1) rescaled and the
 * other strides and the offset converted, which must come out whole. Not
 * differentiable: the bits are reinterpreted. */
wick_status wick_view_dtype(wick_tensor **out, wick_tensor *t, wick_dtype dtype) {
    if ((unsigned)dtype >= WICK_NUM_DTYPES) return wick_fail(WICK_ERR_DTYPE, "view: invalid dtype");
    if (dtype == t->dtype) return wick_view(out, t, t->ndim, t->sizes); /* (an alias, recorded) */
    if (wick_is_grad_enabled() && t->requires_grad)
        return wick_fail(WICK_ERR_ARGUMENT, "view(dtype): reading a tensor that requires grad as %s is not "
                         "differentiable (detach it first)", wick_dtype_name(dtype));
    int64_t old = (int64_t)wick_dtype_size(t->dtype), now = (int64_t)wick_dtype_size(dtype);
    int64_t sizes[WICK_MAX_DIMS], strides[WICK_MAX_DIMS], offset = t->offset;
    int nd = t->ndim;
    memcpy(sizes, t->sizes, sizeof(int64_t) * (size_t)nd);
    memcpy(strides, t->strides, sizeof(int64_t) * (size_t)nd);
    if (old != now) {
        if (nd == 0)
            return wick_fail(WICK_ERR_SHAPE, "view: self cannot be 0-dim to view %s as %s (different element sizes)",
                             wick_dtype_name(t->dtype), wick_dtype_name(dtype));
        if (strides[nd - 1] != 1 && sizes[nd - 1] != 1)
            return wick_fail(WICK_ERR_SHAPE, "view: self.stride(-1) must be 1 to view %s as %s (different element "
                             "sizes), but got %" PRId64, wick_dtype_name(t->dtype), wick_dtype_name(dtype),
                             strides[nd - 1]);
        if ((sizes[nd - 1] * old) % now)
            return wick_fail(WICK_ERR_SHAPE, "view: self.size(-1) (%" PRId64 ") times the size of %s must be "
                             "divisible by the size of %s", sizes[nd - 1], wick_dtype_name(t->dtype),
                             wick_dtype_name(dtype));
        if ((offset * old) % now)
            return wick_fail(WICK_ERR_SHAPE, "view: self.storage_offset() times the size of %s must be divisible "
                             "by the size of %s", wick_dtype_name(t->dtype), wick_dtype_name(dtype));
        for (int d = 0; d < nd - 1; d++) {
            if ((strides[d] * old) % now)
                return wick_fail(WICK_ERR_SHAPE, "view: self.stride(%d) times the size of %s must be divisible by "
                                 "the size of %s", d + 1, wick_dtype_name(t->dtype), wick_dtype_name(dtype));
            strides[d] = strides[d] * old / now;
        }
        sizes[nd - 1] = sizes[nd - 1] * old / now;
        strides[nd - 1] = 1;
        offset = offset * old / now;
    }
    return wk_tensor_view_dtype(out, t, dtype, nd, sizes, strides, offset);
}

wick_status wick_reshape(wick_tensor **out, wick_tensor *t, int ndim, const int64_t *in_sizes) {
    int64_t sizes[WICK_MAX_DIMS], strides[WICK_MAX_DIMS];
    if (ndim < 0 || ndim > WICK_MAX_DIMS) return wick_fail(WICK_ERR_ARGUMENT, "reshape: too many dimensions");
    memcpy(sizes, in_sizes, sizeof(int64_t) * ndim);
    wick_status st = infer_size("reshape", ndim, sizes, wick_tensor_numel(t), t->ndim, t->sizes);
    if (st) return st;
    if (view_strides(t, ndim, sizes, strides)) return make_view(out, t, ndim, sizes, strides, t->offset, WK_VIEW_RESHAPE, 0, 0, 0, 0, NULL);
    wick_tensor *c;
    if ((st = wick_contiguous(&c, t))) return st;
    wk_contiguous_strides(ndim, sizes, strides);
    st = make_view(out, c, ndim, sizes, strides, c->offset, WK_VIEW_RESHAPE, 0, 0, 0, 0, NULL);
    wick_tensor_release(c);
    return st;
}

wick_status wick_transpose(wick_tensor **out, wick_tensor *t, int d0, int d1) {
    wick_status st;
    if ((st = wk_wrap_dim("transpose", &d0, t->ndim)) || (st = wk_wrap_dim("transpose", &d1, t->ndim)))
        return st;
    int64_t sizes[WICK_MAX_DIMS], strides[WICK_MAX_DIMS];
    memcpy(sizes, t->sizes, sizeof sizes);
    memcpy(strides, t->strides, sizeof strides);
    if (t->ndim > 0) {
        sizes[d0] = t->sizes[d1], sizes[d1] = t->sizes[d0];
        strides[d0] = t->strides[d1], strides[d1] = t->strides[d0];
    }
    return make_view(out, t, t->ndim, sizes, strides, t->offset, WK_VIEW_TRANSPOSE, d0, d1, 0, 0, NULL);
}

wick_status wick_permute(wick_tensor **out, wick_tensor *t, int ndim, const int *dims) {
    if (ndim != t->ndim)
        return wick_fail(WICK_ERR_SHAPE,
                         "permute: number of dims don't match (the tensor has %d dims, the permutation %d)",
                         t->ndim, ndim);
    int64_t sizes[WICK_MAX_DIMS], strides[WICK_MAX_DIMS];
    int wrapped[WICK_MAX_DIMS];
    bool seen[WICK_MAX_DIMS] = {0};
    for (int i = 0; i < ndim; i++) {
        int d = dims[i];
        wick_status st = wk_wrap_dim("permute", &d, ndim);
        if (st) return st;
        if (seen[d]) return wick_fail(WICK_ERR_ARGUMENT, "permute: repeated dim %d in the permutation", d + 1);
        seen[d] = true;
        wrapped[i] = d;
        sizes[i] = t->sizes[d];
        strides[i] = t->strides[d];
    }
    return make_view(out, t, ndim, sizes, strides, t->offset, WK_VIEW_PERMUTE, 0, 0, 0, 0, wrapped);
}

wick_status wick_narrow(wick_tensor **out, wick_tensor *t, int dim, int64_t start, int64_t length) {
    wick_status st = wk_wrap_dim("narrow", &dim, t->ndim);
    if (st) return st;
    if (t->ndim == 0) return wick_fail(WICK_ERR_SHAPE, "narrow: cannot be applied to a 0-dim tensor");
    int64_t offset;
    if (start < 0 || length < 0 || start > t->sizes[dim] || length > t->sizes[dim] - start)
        return wick_fail(WICK_ERR_INDEX,
                         "narrow: start %" PRId64 " and length %" PRId64
                         " exceed the size %" PRId64 " of dimension %d",
                         (int64_t)((uint64_t)start + 1), length, t->sizes[dim], dim + 1);
    if (step_offset("narrow", t, dim, start, &offset)) return WICK_ERR_INDEX;
    int64_t sizes[WICK_MAX_DIMS];
    memcpy(sizes, t->sizes, sizeof sizes);
    sizes[dim] = length;
    return make_view(out, t, t->ndim, sizes, t->strides, offset, WK_VIEW_SLICE, dim, 0, start, length, NULL);
}

wick_status wick_select(wick_tensor **out, wick_tensor *t, int dim, int64_t index) {
    if (t->ndim == 0) return wick_fail(WICK_ERR_INDEX, "select: cannot index a 0-dim tensor");
    wick_status st = wk_wrap_dim("select", &dim, t->ndim);
    if (st) return st;
    if (index < -t->sizes[dim] || index >= t->sizes[dim])
        return wick_fail(WICK_ERR_INDEX,
                         "index %" PRId64 " is out of bounds for dimension %d with size %" PRId64,
                         index >= 0 ? index + 1 : index, dim + 1, t->sizes[dim]);
    if (index < 0) index += t->sizes[dim];
    int64_t sizes[WICK_MAX_DIMS], strides[WICK_MAX_DIMS], offset;
    if (step_offset("select", t, dim, index, &offset)) return WICK_ERR_INDEX;
    int n = 0;
    for (int i = 0; i < t->ndim; i++)
        if (i != dim) sizes[n] = t->sizes[i], strides[n++] = t->strides[i];
    return make_view(out, t, n, sizes, strides, offset, WK_VIEW_SELECT, dim, 0, index, 1, NULL);
}

wick_status wick_squeeze(wick_tensor **out, wick_tensor *t, int dim) {
    int64_t sizes[WICK_MAX_DIMS], strides[WICK_MAX_DIMS];
    int n = 0;
    if (dim != -1 || t->ndim == 0) {
        /* PyTorch's squeeze(dim) leaves the tensor as it is when that dim is not 1 */
        if (dim != -1) {
            wick_status st = wk_wrap_dim("squeeze", &dim, t->ndim);
            if (st) return st;
        }
        for (int i = 0; i < t->ndim; i++)
            if (i != dim || t->sizes[i] != 1) sizes[n] = t->sizes[i], strides[n++] = t->strides[i];
    } else {
        for (int i = 0; i < t->ndim; i++)
            if (t->sizes[i] != 1) sizes[n] = t->sizes[i], strides[n++] = t->strides[i];
    }
    return make_view(out, t, n, sizes, strides, t->offset, WK_VIEW_RESHAPE, 0, 0, 0, 0, NULL);
}

wick_status wick_unsqueeze(wick_tensor **out, wick_tensor *t, int dim) {
    if (t->ndim >= WICK_MAX_DIMS) return wick_fail(WICK_ERR_SHAPE, "unsqueeze: too many dimensions");
    int n = t->ndim + 1;
    if (dim < -n || dim >= n)
        return wick_fail(WICK_ERR_INDEX,
                         "unsqueeze: dimension %d out of range (expected 1 to %d, or -%d to -1)",
                         dim >= 0 ? dim + 1 : dim, n, n);
    if (dim < 0) dim += n;
    int64_t sizes[WICK_MAX_DIMS], strides[WICK_MAX_DIMS];
    for (int i = 0, j = 0; i < n; i++) {
        if (i == dim) {
            sizes[i] = 1;
            /* PyTorch's stride for the new dim; any value does for a size 1 */
            if (j >= t->ndim || __builtin_mul_overflow(t->strides[j], t->sizes[j], &strides[i])) strides[i] = 1;
        } else {
            sizes[i] = t->sizes[j];
            strides[i] = t->strides[j++];
        }
    }
    return make_view(out, t, n, sizes, strides, t->offset, WK_VIEW_RESHAPE, 0, 0, 0, 0, NULL);
}

wick_status wick_expand(wick_tensor **out, wick_tensor *t, int ndim, const int64_t *want) {
    char a[WK_SHAPE_BUF], b[WK_SHAPE_BUF];
    if (ndim < t->ndim || ndim > WICK_MAX_DIMS)
        return wick_fail(WICK_ERR_SHAPE,
                         "expand: the number of sizes provided (%d) must be greater or equal to the "
                         "number of dimensions in the tensor (%d)",
                         ndim, t->ndim);
    int64_t sizes[WICK_MAX_DIMS], strides[WICK_MAX_DIMS];
    for (int i = ndim - 1, j = t->ndim - 1; i >= 0; i--, j--) {
        int64_t have = j >= 0 ? t->sizes[j] : 1;
        int64_t size = want[i] == -1 && j >= 0 ? have : want[i];
        if (size < 0 && j < 0) /* (a -1 where the tensor has no dim: a forgotten unsqueeze) */
            return wick_fail(WICK_ERR_SHAPE,
                             "expand: the expanded size of the tensor (%" PRId64 ") isn't allowed in a leading, "
                             "non-existing dimension %d (target %s, tensor %s)",
                             want[i], i + 1, wk_shape_str(ndim, want, a, sizeof a),
                             wk_shape_str(t->ndim, t->sizes, b, sizeof b));
        if (size < 0 || (have != size && have != 1))
            return wick_fail(WICK_ERR_SHAPE,
                             "expand: the expanded size %" PRId64 " must match the existing size %" PRId64
                             " at non-singleton dimension %d (target %s, tensor %s)",
                             want[i], have, i + 1, wk_shape_str(ndim, want, a, sizeof a),
                             wk_shape_str(t->ndim, t->sizes, b, sizeof b));
        sizes[i] = size;
        strides[i] = j >= 0 && have == size ? t->strides[j] : 0;
    }
    wick_status st = check_view("expand", t, ndim, sizes, strides, t->offset);
    if (st) return st;
    return make_view(out, t, ndim, sizes, strides, t->offset, WK_VIEW_EXPAND, 0, 0, 0, 0, NULL);
}

wick_status wick_flatten(wick_tensor **out, wick_tensor *t, int start, int end) {
    wick_status st;
    if ((st = wk_wrap_dim("flatten", &start, t->ndim)) || (st = wk_wrap_dim("flatten", &end, t->ndim)))
        return st;
    if (start > end)
        return wick_fail(WICK_ERR_ARGUMENT, "flatten: start_dim (%d) cannot come after end_dim (%d)", start + 1,
                         end + 1);
    if (t->ndim == 0) {
        int64_t one = 1;
        return wick_reshape(out, t, 1, &one);
    }
    int64_t sizes[WICK_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < t->ndim; i++) {
        if (i <= start || i > end) sizes[n++] = t->sizes[i];
        else if (__builtin_mul_overflow(sizes[n - 1], t->sizes[i], &sizes[n - 1]))
            return wick_fail(WICK_ERR_SHAPE, "flatten: the flattened size of dimensions %d to %d overflows",
                             start + 1, end + 1);
    }
    return wick_reshape(out, t, n, sizes);
}

int64_t wick_storage_numel(const wick_tensor *t) { return (int64_t)(t->storage->nbytes / wk_dtype_size(t->dtype)); }

/* Whether two positions of a (sizes, strides) view are one element: with the dims by stride, each
 * stride must pass the span of the dims below it (a 0 stride of a dim of more than one overlaps). */
static bool overlapping(int ndim, const int64_t *sizes, const int64_t *strides) {
    int order[WICK_MAX_DIMS], n = 0;
    for (int i = 0; i < ndim; i++) {
        if (sizes[i] == 0) return false; /* (no element at all) */
        if (sizes[i] > 1) order[n++] = i;
    }
    for (int i = 1; i < n; i++) /* insertion sort by stride, a handful of dims */
        for (int j = i; j > 0 && strides[order[j]] < strides[order[j - 1]]; j--) {
            int k = order[j];
            order[j] = order[j - 1], order[j - 1] = k;
        }
    int64_t span = 0; /* the largest offset the dims below reach */
    for (int i = 0; i < n; i++) {
        int d = order[i];
        if (strides[d] <= span) return true;
        span += strides[d] * (sizes[d] - 1);
    }
    return false;
}

wick_status wick_as_strided(wick_tensor **out, wick_tensor *t, int ndim, const int64_t *sizes,
                            const int64_t *strides, int64_t offset) {
    if (ndim < 0 || ndim > WICK_MAX_DIMS) return wick_fail(WICK_ERR_ARGUMENT, "as_strided: at most %d dimensions", WICK_MAX_DIMS);
    for (int i = 0; i < ndim; i++)
        if (sizes[i] < 0 || strides[i] < 0)
            return wick_fail(WICK_ERR_ARGUMENT, "as_strided: sizes and strides must be non-negative");
    wick_status st = check_view("as_strided", t, ndim, sizes, strides, offset);
    if (st) return st;
    wick_tensor *r;
    if ((st = wk_tensor_view(&r, t, ndim, sizes, strides, offset))) return st;
    /* a view whose elements are distinct ones of t's storage: a write through it reaches t's
     * history, as a narrow's does (fairseq's weight_expanded.as_strided(...).copy_(weight)) */
    if (!overlapping(ndim, sizes, strides)) wk_note_view_base(r, t);
    *out = r;
    return WICK_OK;
}

wick_status wick_contiguous(wick_tensor **out, wick_tensor *t) {
    if (wick_tensor_is_contiguous(t)) {
        wick_tensor_retain(t);
        *out = t;
        return WICK_OK;
    }
    return wick_clone(out, t);
}
