/* CPU kernels for index_select, gather and scatter. They move whole elements
 * of any dtype and check every index before using it. */
#include "cpu.h"

#include <inttypes.h>

static wick_status out_of_range(const char *op, int64_t value, int dim, int64_t size) {
    int64_t one_based = (int64_t)((uint64_t)value + 1); /* the 1-based value, wrapping as it did */
    return wick_fail(WICK_ERR_INDEX, "%s: index %" PRId64 " is out of bounds for dimension %d with size %" PRId64 "%s",
                     op, one_based, dim + 1, size,
                     one_based == 0 ? " (indices are 1-based: a 0-based index from PyTorch needs + 1)" : "");
}

/* Byte offset of element `linear` (row-major over sizes) of a strided view. */
static int64_t offset_of(int ndim, const int64_t *sizes, const int64_t *strides, int64_t linear, int skip_dim,
                         int64_t *coord_at_skip) {
    int64_t off = 0;
    for (int d = ndim - 1; d >= 0; d--) {
        int64_t i = linear % sizes[d];
        linear /= sizes[d];
        if (d == skip_dim) *coord_at_skip = i;
        else off += i * strides[d];
    }
    return off;
}

wick_status cpu_index_select(wick_tensor *out, const wick_tensor *in, int dim, const wick_tensor *index) {
    const int64_t *idx = (const int64_t *)wk_data(index);
    int64_t n = wick_tensor_numel(index), size = in->ndim ? in->sizes[dim] : 1;
    for (int64_t j = 0; j < n; j++)
        if (idx[j] < 0 || idx[j] >= size) return out_of_range("index_select", idx[j], dim, size);
    size_t es = wk_dtype_size(in->dtype);
    int64_t total = wick_tensor_numel(out);
    const char *src = wk_data(in);
    char *dst = wk_data(out);
    if (in->ndim && wick_tensor_is_contiguous(in) && wick_tensor_is_contiguous(out)) {
        /* rows of `inner` elements move as blocks (embeddings, batches of samples) */
        int64_t outer = 1, inner = 1;
        for (int d = 0; d < dim; d++) outer *= in->sizes[d];
        for (int d = dim + 1; d < in->ndim; d++) inner *= in->sizes[d];
        size_t block = (size_t)inner * es;
        for (int64_t o = 0; o < outer; o++)
            for (int64_t j = 0; j < n; j++)
                memcpy(dst + ((o * n + j) * inner) * (int64_t)es, src + ((o * size + idx[j]) * inner) * (int64_t)es, block);
        return WICK_OK;
    }
    for (int64_t e = 0; e < total; e++) {
        int64_t j = 0;
        int64_t oo = offset_of(out->ndim, out->sizes, out->strides, e, -1, &j);
        int64_t io = offset_of(in->ndim, out->sizes, in->strides, e, in->ndim ? dim : -1, &j);
        if (in->ndim) io += idx[j] * in->strides[dim];
        memcpy(dst + oo * (int64_t)es, src + io * (int64_t)es, es);
    }
    return WICK_OK;
}

wick_status cpu_gather(wick_tensor *out, const wick_tensor *in, int dim, const wick_tensor *index) {
    const int64_t *idx = (const int64_t *)wk_data(index);
    size_t es = wk_dtype_size(in->dtype);
    int64_t total = wick_tensor_numel(index), size = in->ndim ? in->sizes[dim] : 1, unused;
    for (int64_t e = 0; e < total; e++) {
        int64_t v = idx[e];
        if (v < 0 || v >= size) return out_of_range("gather", v, dim, size);
        int64_t io = offset_of(in->ndim, index->sizes, in->strides, e, in->ndim ? dim : -1, &unused);
        if (in->ndim) io += v * in->strides[dim];
        int64_t oo = offset_of(out->ndim, out->sizes, out->strides, e, -1, &unused);
        memcpy((char *)wk_data(out) + oo * (int64_t)es, (const char *)wk_data(in) + io * (int64_t)es, es);
    }
    return WICK_OK;
}

/* out[... index ...] = src (or += src): the shared loop of scatter and scatter_add. */
static wick_status scatter_impl(const char *op, wick_tensor *out, int dim, const wick_tensor *index,
                                const wick_tensor *src, bool add) {
    const int64_t *idx = (const int64_t *)wk_data(index);
    size_t es = wk_dtype_size(out->dtype);
    int64_t total = wick_tensor_numel(index), size = out->ndim ? out->sizes[dim] : 1, unused;
    for (int64_t e = 0; e < total; e++) /* check all first: nothing is written on error */
        if (idx[e] < 0 || idx[e] >= size) return out_of_range(op, idx[e], dim, size);
    for (int64_t e = 0; e < total; e++) {
        int64_t oo = offset_of(out->ndim, index->sizes, out->strides, e, out->ndim ? dim : -1, &unused);
        if (out->ndim) oo += idx[e] * out->strides[dim];
        int64_t so = offset_of(src->ndim, index->sizes, src->strides, e, -1, &unused);
        char *o = (char *)wk_data(out) + oo * (int64_t)es;
        const char *s = (const char *)wk_data(src) + so * (int64_t)es;
        if (add) wk_store_double(o, out->dtype, wk_load_double(o, out->dtype) + wk_load_double(s, src->dtype));
        else memcpy(o, s, es);
    }
    return WICK_OK;
}

wick_status cpu_scatter(wick_tensor *out, int dim, const wick_tensor *index, const wick_tensor *src) {
    return scatter_impl("scatter", out, dim, index, src, false);
}

wick_status cpu_scatter_add(wick_tensor *out, int dim, const wick_tensor *index, const wick_tensor *src) {
    return scatter_impl("scatter_add", out, dim, index, src, true);
}

/* index_add along dim 0 of contiguous float32 tensors: out row index[j] += src row j */
static wick_status index_add_rows_f32(wick_tensor *out, const int64_t *idx, int64_t n, const wick_tensor *src) {
    int64_t row = out->sizes[0] ? wick_tensor_numel(out) / out->sizes[0] : 0;
    float *o = (float *)wk_data(out);
    const float *s = (const float *)wk_data(src);
    for (int64_t j = 0; j < n; j++) {
        float *dst = o + idx[j] * row;
        const float *from = s + j * row;
        for (int64_t k = 0; k < row; k++) dst[k] += from[k];
    }
    return WICK_OK;
}

/* out.select(dim, index[j]) += src.select(dim, j) */
wick_status cpu_index_add(wick_tensor *out, int dim, const wick_tensor *index, const wick_tensor *src) {
    const int64_t *idx = (const int64_t *)wk_data(index);
    int64_t n = wick_tensor_numel(index), size = out->ndim ? out->sizes[dim] : 1;
    for (int64_t j = 0; j < n; j++)
        if (idx[j] < 0 || idx[j] >= size) return out_of_range("index_add", idx[j], dim, size);
    if (dim == 0 && out->ndim >= 1 && src->ndim == out->ndim && out->dtype == WICK_FLOAT32 &&
        src->dtype == WICK_FLOAT32 && wick_tensor_is_contiguous(out) && wick_tensor_is_contiguous(src))
        return index_add_rows_f32(out, idx, n, src); /* an embedding's backward: whole rows */
    size_t es = wk_dtype_size(out->dtype);
    int64_t total = wick_tensor_numel(src);
    for (int64_t e = 0; e < total; e++) {
        int64_t j = 0;
        int64_t so = offset_of(src->ndim, src->sizes, src->strides, e, src->ndim ? dim : -1, &j);
        if (src->ndim) so += j * src->strides[dim];
        int64_t oo = offset_of(out->ndim, src->sizes, out->strides, e, out->ndim ? dim : -1, &j);
        if (out->ndim) oo += idx[j] * out->strides[dim];
        char *o = (char *)wk_data(out) + oo * (int64_t)es;
        const char *s = (const char *)wk_data(src) + so * (int64_t)es;
        wk_store_double(o, out->dtype, wk_load_double(o, out->dtype) + wk_load_double(s, src->dtype));
    }
    return WICK_OK;
}

/* out = value where mask (operands out, mask of 1-byte elements): a select
 * per element without a branch, so random masks cost what causal ones do. */
#define MASKED_FILL_ROW(T)                                                                                           \
    do {                                                                                                             \
        T v;                                                                                                         \
        memcpy(&v, value_bytes, sizeof v);                                                                           \
        T *o = (T *)op;                                                                                              \
        if (so == 1 && sm == 1)                                                                                      \
            for (int64_t i = 0; i < n; i++) o[i] = mp[i] ? v : o[i];                                                 \
        else                                                                                                         \
            for (int64_t i = 0; i < n; i++) o[i * so] = mp[i * sm] ? v : o[i * so];                                  \
    } while (0)

wick_status cpu_masked_fill(const wk_iter *it, double value) {
    if (it->numel == 0) return WICK_OK;
    size_t es = wk_dtype_size(it->dtypes[0]);
    char value_bytes[16] = {0}; /* room for a complex128, which never comes here */
    wk_store_double(value_bytes, it->dtypes[0], value);
    int nd = it->ndim;
    int64_t n = nd ? it->sizes[nd - 1] : 1, so = nd ? it->strides[0][nd - 1] : 0, sm = nd ? it->strides[1][nd - 1] : 0;
    int64_t rows = it->numel / n, coord[WICK_MAX_DIMS] = {0};
    const unsigned char *mask = (const unsigned char *)wk_iter_operand(it, 1);
    for (int64_t r = 0; r < rows; r++) {
        int64_t oo = 0, mo = 0;
        for (int d = 0; d < nd - 1; d++) oo += coord[d] * it->strides[0][d], mo += coord[d] * it->strides[1][d];
        char *op = it->data[0] + oo * (int64_t)es;
        const unsigned char *mp = mask + mo;
        switch (es) {
        case 1: MASKED_FILL_ROW(uint8_t); break;
        case 2: MASKED_FILL_ROW(uint16_t); break;
        case 4: MASKED_FILL_ROW(uint32_t); break;
        default: MASKED_FILL_ROW(uint64_t); break;
        }
        for (int d = nd - 2; d >= 0; d--) { /* next row */
            if (++coord[d] < it->sizes[d]) break;
            coord[d] = 0;
        }
    }
    return WICK_OK;
}
