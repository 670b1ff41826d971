/* Atomic file writes: a temporary file in the same directory, written in full,
 * flushed to disk, then renamed over the target (and the directory flushed), so
 * a crash at any moment leaves either the old file or the new one. */
#include "../core/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static wick_status fail_errno(const char *what, const char *path) {
    return wick_fail(WICK_ERR_IO, "%s %s: %s", what, path, strerror(errno));
}

static wick_status write_all(int fd, const char *p, size_t left, const char *path) {
    while (left > 0) {
        ssize_t n = write(fd, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return fail_errno("writing failed for", path);
        p += n, left -= (size_t)n;
    }
    return WICK_OK;
}

/* Writes the pieces (header, then each tensor's whole storage) atomically. */
static wick_status write_pieces(const char *path, const void *head, size_t head_size, int n,
                                const wick_tensor *const *tensors) {
    for (int i = 0; i < n; i++)
        if (tensors[i]->storage->device.type != WICK_CPU || !tensors[i]->storage->data)
            return wick_fail(WICK_ERR_DEVICE, "writing %s: storage %d is not in CPU memory", path, i + 1);
    size_t len = strlen(path);
    char *tmp = malloc(len + 32);
    if (!tmp) return wick_fail(WICK_ERR_OOM, "out of memory writing %s", path);
    snprintf(tmp, len + 32, "%s.tmp-%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        wick_status st = fail_errno("cannot write", path);
        free(tmp);
        return st;
    }
    wick_status st = write_all(fd, head, head_size, path);
    for (int i = 0; i < n && !st; i++)
        st = write_all(fd, tensors[i]->storage->data, tensors[i]->storage->nbytes, path);
    if (!st && fsync(fd) != 0) st = fail_errno("cannot flush", path);
    if (close(fd) != 0 && !st) st = fail_errno("cannot close", path);
    if (!st && rename(tmp, path) != 0) st = fail_errno("cannot replace", path);
    if (st) unlink(tmp);
    free(tmp);
    if (!st) { /* make the rename itself durable */
        char *dir = strdup(path);
        if (dir) {
            char *slash = strrchr(dir, '/');
            if (slash) *slash = '\0';
            int dfd = open(slash ? (slash == dir ? "/" : dir) : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (dfd >= 0) {
                fsync(dfd);
                close(dfd);
            }
            free(dir);
        }
    }
    return st;
}

wick_status wick_write_file_atomic(const char *path, const void *data, size_t size) {
    return write_pieces(path, data, size, 0, NULL);
}

wick_status wick_write_storages_atomic(const char *path, const void *head, size_t head_size, int n,
                                       const wick_tensor *const *tensors) {
    return write_pieces(path, head, head_size, n, tensors);
}

wick_status wick_read_storage(wick_tensor **out, const char *path, int64_t offset, wick_dtype dtype, int64_t numel) {
    if (offset < 0 || numel < 0) return wick_fail(WICK_ERR_IO, "%s: bad entry offset or size", path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return fail_errno("cannot open", path);
    struct stat sb;
    if (fstat(fd, &sb) != 0 || offset > (int64_t)sb.st_size ||
        numel > ((int64_t)sb.st_size - offset) / (int64_t)wk_dtype_size(dtype)) {
        close(fd); /* checked before allocating: a hostile size never becomes an allocation */
        return wick_fail(WICK_ERR_IO, "%s: truncated: an entry runs past the end of the file", path);
    }
    wick_tensor *t;
    wick_status st = wk_tensor_new(&t, 1, &numel, dtype, wick_cpu());
    if (st) {
        close(fd);
        return st;
    }
    char *p = wk_data(t);
    size_t left = (size_t)numel * wk_dtype_size(dtype);
    off_t at = (off_t)offset;
    while (left > 0 && !st) {
        ssize_t n = pread(fd, p, left, at);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) st = fail_errno("cannot read", path);
        else if (n == 0) st = wick_fail(WICK_ERR_IO, "%s: truncated: an entry runs past the end of the file", path);
        else p += n, left -= (size_t)n, at += n;
    }
    close(fd);
    if (st) {
        wick_tensor_release(t);
        return st;
    }
    *out = t;
    return WICK_OK;
}

/* ---- mapped files ---- */

typedef struct {
    int refcount; /* atomic: one per tensor over the mapping */
    void *base;
    size_t size;
} file_mapping;

static void mapping_release(void *ctx) {
    file_mapping *m = ctx;
    if (__atomic_sub_fetch(&m->refcount, 1, __ATOMIC_ACQ_REL) != 0) return;
    munmap(m->base, m->size);
    free(m);
}

wick_status wick_map_storages(const char *path, int n, const int64_t *offsets, const wick_dtype *dtypes,
                              const int64_t *numels, wick_tensor **out) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return fail_errno("cannot open", path);
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        wick_status st = fail_errno("cannot stat", path);
        close(fd);
        return st;
    }
    for (int i = 0; i < n; i++) {
        int64_t size = (int64_t)wk_dtype_size(dtypes[i]);
        if (offsets[i] < 0 || numels[i] < 0 || offsets[i] > (int64_t)sb.st_size ||
            numels[i] > ((int64_t)sb.st_size - offsets[i]) / size) {
            close(fd);
            return wick_fail(WICK_ERR_IO, "%s: truncated: an entry runs past the end of the file", path);
        }
        if (offsets[i] % (int64_t)wk_dtype_size(dtypes[i]) != 0) {
            close(fd);
            return wick_fail(WICK_ERR_IO, "%s: an entry is not aligned to its element size", path);
        }
    }
    file_mapping *m = calloc(1, sizeof *m);
    if (!m) {
        close(fd);
        return wick_fail(WICK_ERR_OOM, "out of memory mapping %s", path);
    }
    m->size = sb.st_size > 0 ? (size_t)sb.st_size : 1;
    /* private: writes into a loaded tensor never reach the file */
    m->base = mmap(NULL, m->size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m->base == MAP_FAILED) {
        free(m);
        return fail_errno("cannot map", path);
    }
    m->refcount = 1; /* held by this function until the end */
    wick_status st = WICK_OK;
    int made = 0;
    for (; made < n && !st; made++) {
        __atomic_add_fetch(&m->refcount, 1, __ATOMIC_RELAXED);
        st = wk_tensor_wrap(&out[made], (char *)m->base + offsets[made], numels[made], dtypes[made], mapping_release, m);
        if (st) __atomic_sub_fetch(&m->refcount, 1, __ATOMIC_RELAXED);
    }
    if (st) {
        for (int i = 0; i < made - 1; i++) wick_tensor_release(out[i]);
    }
    mapping_release(m);
    return st;
}
