/* IDX files (the MNIST family's format), plain or gzip-compressed, read through
 * zlib. Every size in the header is checked against the data actually present. */
#include "../core/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <zlib.h>

static wick_status read_exact(gzFile f, void *buf, size_t n, const char *path, const char *what) {
    size_t done = 0;
    while (done < n) {
        unsigned chunk = n - done > (1u << 30) ? (1u << 30) : (unsigned)(n - done);
        int got = gzread(f, (char *)buf + done, chunk);
        if (got <= 0) {
            int zerr;
            const char *msg = gzerror(f, &zerr);
            return wick_fail(WICK_ERR_IO, "%s: truncated or corrupt IDX file: %s (%s)", path, what,
                             zerr != Z_OK && zerr != Z_STREAM_END ? msg : "unexpected end of data");
        }
        done += (size_t)got;
    }
    return WICK_OK;
}

/* The n data bytes, into memory that grows (doubling from 1 MiB) only as the
 * bytes arrive: a header claiming gigabytes over a short file (the gzip stream
 * gives no size to check first) costs no more than the data present. */
static wick_status read_data(gzFile f, size_t n, unsigned char **out, const char *path) {
    size_t cap = n < ((size_t)1 << 20) ? n : (size_t)1 << 20, have = 0;
    unsigned char *buf = malloc(cap ? cap : 1);
    if (!buf) return wick_fail(WICK_ERR_OOM, "%s: out of memory reading an IDX file", path);
    wick_status st = WICK_OK;
    while (!st && have < n) {
        if (have == cap) {
            size_t grown = cap > n / 2 ? n : cap * 2;
            unsigned char *bigger = realloc(buf, grown);
            if (!bigger) {
                st = wick_fail(WICK_ERR_OOM, "%s: out of memory reading an IDX file", path);
                break;
            }
            buf = bigger, cap = grown;
        }
        st = read_exact(f, buf + have, cap - have, path, "data");
        have = cap;
    }
    if (st) {
        free(buf);
        return st;
    }
    *out = buf;
    return WICK_OK;
}

wick_status wick_read_idx(wick_tensor **out, const char *path) {
    gzFile f = gzopen(path, "rb");
    if (!f) return wick_fail(WICK_ERR_IO, "%s: cannot open: %s", path, strerror(errno ? errno : ENOENT));
    unsigned char header[4];
    wick_status st = read_exact(f, header, 4, path, "header");
    if (!st && (header[0] != 0 || header[1] != 0 || header[2] != 0x08 || header[3] < 1 || header[3] > 4))
        st = wick_fail(WICK_ERR_IO, "%s: not an IDX file of unsigned bytes (magic %02x %02x %02x %02x)", path,
                       header[0], header[1], header[2], header[3]);
    int ndim = st ? 0 : header[3];
    int64_t sizes[4];
    for (int i = 0; i < ndim && !st; i++) {
        unsigned char b[4];
        if (!(st = read_exact(f, b, 4, path, "dimension sizes")))
            sizes[i] = ((int64_t)b[0] << 24) | ((int64_t)b[1] << 16) | ((int64_t)b[2] << 8) | b[3];
        if (!st && (sizes[i] <= 0 || sizes[i] > (1LL << 28)))
            st = wick_fail(WICK_ERR_IO, "%s: implausible dimension size %lld", path, (long long)sizes[i]);
    }
    wick_tensor *t = NULL;
    if (!st && wk_numel(ndim, sizes) > (1LL << 33))
        st = wick_fail(WICK_ERR_IO, "%s: header claims %lld elements", path, (long long)wk_numel(ndim, sizes));
    unsigned char *bytes = NULL;
    if (!st) st = read_data(f, (size_t)wk_numel(ndim, sizes), &bytes, path);
    gzclose(f);
    if (!st) st = wk_tensor_new(&t, ndim, sizes, WICK_UINT8, wick_cpu());
    if (!st) memcpy(wk_data(t), bytes, (size_t)wk_numel(ndim, sizes));
    free(bytes);
    if (st) {
        wick_tensor_release(t);
        return st;
    }
    *out = t;
    return WICK_OK;
}
