/* Atomic file writes: a temporary file in the same directory, written in full,
 * flushed to disk, then renamed over the target (and the directory flushed), so
 * a crash at any moment leaves either the old file or the new one. */
#include "../core/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
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
