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

wick_status wick_write_file_atomic(const char *path, const void *data, size_t size) {
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
    const char *p = data;
    size_t left = size;
    wick_status st = WICK_OK;
    while (left > 0 && !st) {
        ssize_t n = write(fd, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) st = fail_errno("writing failed for", path);
        else p += n, left -= (size_t)n;
    }
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
