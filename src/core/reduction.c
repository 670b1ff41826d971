/* Reductions over all elements or one dimension: dtype rules and shapes here,
 * the loops in the backend. */
#include "autocast.h"
#include "autograd.h"

#include <math.h>

#define NAME_OF(id, name) [WICK_##id] = name,
static const char *const reduce_names[] = {WICK_REDUCE_OPS(NAME_OF)};
#undef NAME_OF
_Static_assert(sizeof reduce_names / sizeof *reduce_names == WICK_NUM_REDUCE, "a name for every reduction");

const char *wick_reduce_name(wick_reduce_op op) {
    return (unsigned)op < WICK_NUM_REDUCE ? reduce_names[op] : "?";
}

static bool needs_float(wick_reduce_op op) { return op == WICK_MEAN || op == WICK_VAR || op == WICK_STD; }
static bool has_identity(wick_reduce_op op) { return op == WICK_SUM || op == WICK_PROD || needs_float(op); }

static wick_dtype result_dtype(wick_reduce_op op, wick_dtype in) {
    if (op == WICK_ARGMAX || op == WICK_ARGMIN) return WICK_INT64;
    if ((op == WICK_SUM || op == WICK_PROD) && !wick_dtype_is_floating(in)) return WICK_INT64;
    return in;
}

static wick_dtype compute_dtype(wick_dtype d) {
    if (d == WICK_FLOAT64) return WICK_FLOAT64;
    return wick_dtype_is_floating(d) ? WICK_FLOAT32 : WICK_INT64;
}

static const char *type_title(wick_dtype d) {
    static const char *titles[] = {"Float", "Double", "Half", "BFloat16", "Long", "Int", "Byte", "Bool"};
    return titles[d];
}

static wick_status reduce_forward(wick_tensor **out, wick_tensor **indices, wick_reduce_op op, const wick_tensor *a,
                                  int dim, int keepdim, int correction) {
    if ((unsigned)op >= WICK_NUM_REDUCE) return wick_fail(WICK_ERR_ARGUMENT, "invalid reduction %d", op);
    const char *name = reduce_names[op];
    wick_status st;
    if ((st = wk_check_interrupt(name))) return st; /* Ctrl-C in a JIT-compiled loop */
    if (needs_float(op) && !wick_dtype_is_floating(a->dtype))
        return wick_fail(WICK_ERR_DTYPE,
                         "%s(): could not infer output dtype. Input dtype must be a floating point dtype. "
                         "Got: %s (convert with :to('float32'))",
                         name, type_title(a->dtype));
    bool all = dim < 0;
    if (!all && (st = wk_wrap_dim(name, &dim, a->ndim))) return st;
    /* max/min along a dim return indices, also along the only "dim" of a 0-dim tensor */
    bool want_idx = indices && !all && (op == WICK_MAX || op == WICK_MIN);
    if (a->ndim == 0) all = true;
    int64_t reduced = all ? wick_tensor_numel(a) : a->sizes[dim];
    if (reduced == 0 && !has_identity(op))
        return wick_fail(WICK_ERR_SHAPE,
                         all ? "%s(): cannot reduce an empty tensor (it has no elements); specify a dim"
                             : "%s(): cannot reduce over dimension %d of size 0: it has no identity",
                         name, dim + 1);
    /* output shape */
    int64_t shape[WICK_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < a->ndim; i++) {
        bool is_reduced = all || i == dim;
        if (!is_reduced) shape[n++] = a->sizes[i];
        else if (keepdim) shape[n++] = 1;
    }
    wick_dtype rd = result_dtype(op, a->dtype), cd = compute_dtype(a->dtype);
    wick_dtype kernel_out = (op == WICK_ARGMAX || op == WICK_ARGMIN) ? WICK_INT64 : result_dtype(op, cd);
    wick_device dev = a->storage->device;
    wick_tensor *result = NULL, *idx = NULL, *kout = NULL, *in = NULL;
    if ((st = wk_tensor_new(&result, n, shape, rd, dev))) return st;
    if (want_idx && (st = wk_tensor_new(&idx, n, shape, WICK_INT64, dev))) goto fail;
    if (dev.type != WICK_META) {
        /* the kernel reads the compute dtype; an all-reduce reads a contiguous input */
        if ((st = wick_to(&in, (wick_tensor *)a, (wick_options){cd, dev}))) goto fail;
        if (all && !wick_tensor_is_contiguous(in)) {
            wick_tensor *c;
            if ((st = wick_contiguous(&c, in))) goto fail;
            wick_tensor_release(in);
            in = c;
        }
        if (kernel_out == rd) {
            kout = result;
            wick_tensor_retain(kout);
        } else if ((st = wk_tensor_new(&kout, n, shape, kernel_out, dev))) {
            goto fail;
        }
        wk_reduce_args args = {.device = in->storage->device.index, .op = op, .in_dtype = cd, .out_dtype = kernel_out, .correction = correction};
        args.in = wk_data(in);
        args.out = wk_data(kout);
        args.indices = idx ? wk_data(idx) : NULL;
        if (all) {
            args.outer_ndim = 0;
            args.inner_size = wick_tensor_numel(in);
            args.inner_stride = 1;
        } else {
            int k = 0, o = 0;
            for (int i = 0; i < in->ndim; i++) {
                if (i == dim) {
                    if (keepdim) o++;
                    continue;
                }
                args.outer_sizes[k] = in->sizes[i];
                args.in_outer_strides[k] = in->strides[i];
                args.out_outer_strides[k] = kout->strides[o];
                args.idx_outer_strides[k] = idx ? idx->strides[o] : 0;
                k++, o++;
            }
            args.outer_ndim = k;
            args.inner_size = in->sizes[dim];
            args.inner_stride = in->strides[dim];
        }
        if ((st = in->storage->backend->reduce(&args))) goto fail;
        if (kout != result && (st = wick_copy_(result, kout))) goto fail;
    }
    wick_tensor_release(kout);
    wick_tensor_release(in);
    *out = result;
    if (indices) *indices = idx;
    return WICK_OK;
fail:
    wick_tensor_release(kout);
    wick_tensor_release(in);
    wick_tensor_release(idx);
    wick_tensor_release(result);
    return st;
}

wick_status wick_reduce(wick_tensor **out, wick_tensor **indices, wick_reduce_op op, const wick_tensor *a,
                        int dim, int keepdim, int correction) {
    /* PyTorch's autocast lists: prod in float32 on both device types, sum on CUDA */
    WK_AUTOCAST(op == WICK_PROD ? WK_AC_FP32 : op == WICK_SUM ? WK_AC_FP32_CUDA : WK_AC_NONE, 1,
                wick_reduce(out, indices, op, c[0], dim, keepdim, correction), a);
    if (wick_dtype_is_complex(a->dtype)) return wk_complex_reduce(out, op, a, dim, keepdim); /* complex.c */
    wick_tensor *r = NULL, *idx = NULL;
    wick_status st;
    bool want_idx = indices || (op == WICK_MAX || op == WICK_MIN); /* backward of max(dim) needs them */
    WK_NO_GRAD(st = reduce_forward(&r, want_idx ? &idx : NULL, op, a, dim, keepdim, correction));
    if (st) return st;
    if (a->ndim == 0) dim = -1;
    st = wk_wants_grad(1, &a) ? wk_record_reduce(r, idx, op, a, dim, keepdim, correction) : WICK_OK;
    if (st) {
        wick_tensor_release(idx);
        return wk_publish(out, r, st);
    }
    *out = r;
    if (indices) *indices = idx;
    else wick_tensor_release(idx);
    return WICK_OK;
}
