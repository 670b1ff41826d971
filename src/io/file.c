/* Atomic file writes: a temporary file in the same directory, written in full,
 * flushed to disk, then renamed over the target (and the directory flushed), so
 * a crash at any moment leaves either the old file or the new one. The
 * temporary's name is random, it is created exclusively and never through a
 * link, and the temporaries of crashed writers are removed by the next write of
 * the same path (include/wick.h, wick_write_file_atomic, and
 * docs/checkpoint-format.md, Writing). Mapped and read storages follow. */
#include "../core/internal.h"
#include "ckpt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
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

/* ---- the temporary file (wick.h, wick_write_file_atomic, says the contract) ---- */

#define TMP_TAG ".wick-tmp-"
#define TMP_RANDOM 12

/* The directory and last component of path; fails on a path that names no file. */
static wick_status split_path(const char *path, char **dir, const char **base) {
    const char *slash = strrchr(path, '/');
    *base = slash ? slash + 1 : path;
    if (!**base || !strcmp(*base, ".") || !strcmp(*base, ".."))
        return wick_fail(WICK_ERR_IO, "cannot write %s: not a file name", path);
    size_t dlen = slash ? (size_t)(slash - path) : 0;
    *dir = malloc(dlen + 2);
    if (!*dir) return wick_fail(WICK_ERR_OOM, "out of memory writing %s", path);
    if (!slash) strcpy(*dir, ".");
    else if (dlen == 0) strcpy(*dir, "/");
    else memcpy(*dir, path, dlen), (*dir)[dlen] = '\0';
    return WICK_OK;
}

/* ".<base>.wick-tmp-" with base cut so that a whole temporary name fits NAME_MAX */
static void tmp_prefix(char *out, size_t cap, const char *base) {
    size_t room = NAME_MAX - 1 - strlen(TMP_TAG) - TMP_RANDOM, blen = strlen(base);
    snprintf(out, cap, ".%.*s%s", (int)(blen < room ? blen : room), base, TMP_TAG);
}

static void random_suffix(char *out) {
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    unsigned char r[TMP_RANDOM];
    size_t got = 0;
    while (got < sizeof r) {
        ssize_t n = getrandom(r + got, sizeof r - got, 0);
        if (n > 0) got += (size_t)n;
        else if (n < 0 && errno != EINTR) break;
    }
    if (got < sizeof r) { /* no getrandom (old kernel, seccomp): weaker, and O_EXCL still holds */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        static uint64_t counter;
        uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ ((uint64_t)getpid() << 40) ^
                     __atomic_add_fetch(&counter, 0x9e3779b97f4a7c15ull, __ATOMIC_RELAXED);
        for (size_t i = got; i < sizeof r; i++) x = x * 6364136223846793005ull + 1442695040888963407ull, r[i] = (unsigned char)(x >> 56);
    }
    for (int i = 0; i < TMP_RANDOM; i++) out[i] = alphabet[r[i] % (sizeof alphabet - 1)];
    out[TMP_RANDOM] = '\0';
}

/* Whether name is prefix followed by exactly TMP_RANDOM letters and digits. */
static int is_our_tmp_name(const char *name, const char *prefix) {
    size_t plen = strlen(prefix);
    if (strncmp(name, prefix, plen) != 0 || strlen(name + plen) != TMP_RANDOM) return 0;
    for (const char *c = name + plen; *c; c++)
        if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9'))) return 0;
    return 1;
}

/* Removes the temporaries that crashed writers of this target left: our
 * name pattern, a regular file we own, and nobody holding its lock (a live
 * writer holds it from just after creating the file to just after its rename,
 * and gives up a file it finds unlinked). Errors just leave the file. */
static void remove_stale(int dfd, const char *prefix) {
    int lfd = dup(dfd);
    DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
    if (!d) {
        if (lfd >= 0) close(lfd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!is_our_tmp_name(e->d_name, prefix)) continue;
        int fd = openat(dfd, e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) continue;
        struct stat fsb, lsb;
        if (fstat(fd, &fsb) == 0 && S_ISREG(fsb.st_mode) && fsb.st_uid == geteuid() &&
            flock(fd, LOCK_EX | LOCK_NB) == 0 && fstatat(dfd, e->d_name, &lsb, AT_SYMLINK_NOFOLLOW) == 0 &&
            lsb.st_dev == fsb.st_dev && lsb.st_ino == fsb.st_ino)
            unlinkat(dfd, e->d_name, 0); /* still locked: no writer can adopt it meanwhile */
        close(fd);
    }
    closedir(d);
}

/* Creates and locks a new temporary in dfd; *name gets its name. */
static wick_status create_tmp(int dfd, const char *prefix, const char *path, char *name, size_t cap, int *out) {
    for (int attempt = 0; attempt < 100; attempt++) {
        char suffix[TMP_RANDOM + 1];
        random_suffix(suffix);
        snprintf(name, cap, "%s%s", prefix, suffix);
        int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0666);
        if (fd < 0 && errno == EEXIST) continue;
        if (fd < 0) return fail_errno("cannot write", path);
        struct stat sb;
        if (flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) { /* a cleaner has it: it goes */
            close(fd);
            continue;
        }
        if (fstat(fd, &sb) == 0 && sb.st_nlink == 0) { /* a cleaner removed it before we locked it */
            close(fd);
            continue;
        }
        *out = fd;
        return WICK_OK;
    }
    return wick_fail(WICK_ERR_IO, "cannot write %s: no free temporary name after 100 tries", path);
}

/* Writes the pieces into a path that is not a regular file (/dev/null, a
 * FIFO, a terminal): through it, as torch.save does; renaming a temporary
 * over it would replace the device node itself. */
static wick_status write_through(const char *path, const void *head, size_t head_size, int n,
                                 const wick_tensor *const *tensors) {
    int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return fail_errno("cannot write", path);
    wick_status st = write_all(fd, head, head_size, path);
    for (int i = 0; i < n && !st; i++)
        st = write_all(fd, tensors[i]->storage->data, tensors[i]->storage->nbytes, path);
    if (close(fd) != 0 && !st) st = fail_errno("cannot close", path);
    return st;
}

/* Writes the pieces (header, then each tensor's whole storage) atomically. */
static wick_status write_pieces(const char *path, const void *head, size_t head_size, int n,
                                const wick_tensor *const *tensors) {
    for (int i = 0; i < n; i++)
        if (tensors[i]->storage->device.type != WICK_CPU || !tensors[i]->storage->data)
            return wick_fail(WICK_ERR_DEVICE, "writing %s: storage %d is not in CPU memory", path, i + 1);
    struct stat target;
    if (stat(path, &target) == 0 && !S_ISREG(target.st_mode) && !S_ISDIR(target.st_mode))
        return write_through(path, head, head_size, n, tensors);
    char *dir;
    const char *base;
    wick_status st = split_path(path, &dir, &base);
    if (st) return st;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(dir);
    if (dfd < 0) return fail_errno("cannot write", path);
    char prefix[NAME_MAX + 1], name[NAME_MAX + 1];
    tmp_prefix(prefix, sizeof prefix, base);
    remove_stale(dfd, prefix);
    int fd = -1;
    st = create_tmp(dfd, prefix, path, name, sizeof name, &fd);
    if (st) {
        close(dfd);
        return st;
    }
    struct stat old;
    if (fstatat(dfd, base, &old, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(old.st_mode))
        fchmod(fd, old.st_mode & 07777 & ~(mode_t)(S_ISUID | S_ISGID)); /* best effort */
    st = write_all(fd, head, head_size, path);
    for (int i = 0; i < n && !st; i++)
        st = write_all(fd, tensors[i]->storage->data, tensors[i]->storage->nbytes, path);
    if (!st && fsync(fd) != 0) st = fail_errno("cannot flush", path);
    if (!st && renameat(dfd, name, dfd, base) != 0) st = fail_errno("cannot replace", path);
    if (st) unlinkat(dfd, name, 0); /* before the lock goes with close */
    if (close(fd) != 0 && !st) st = fail_errno("cannot close", path);
    if (!st) fsync(dfd); /* make the rename itself durable */
    close(dfd);
    return st;
}

wick_status wick_write_file_atomic(const char *path, const void *data, size_t size) {
    return write_pieces(path, data, size, 0, NULL);
}

wick_status wick_write_storages_atomic(const char *path, const void *head, size_t head_size, int n,
                                       const wick_tensor *const *tensors) {
    return write_pieces(path, head, head_size, n, tensors);
}

wick_status wk_io_read_fd(wick_tensor **out, int fd, int64_t size, const char *path, int64_t offset, wick_dtype dtype,
                          int64_t numel) {
    if (offset < 0 || numel < 0 || offset > size || numel > (size - offset) / (int64_t)wk_dtype_size(dtype))
        /* checked before allocating: a hostile size never becomes an allocation */
        return wick_fail(WICK_ERR_IO, "%s: truncated: an entry runs past the end of the file", path);
    wick_tensor *t;
    wick_status st = wk_tensor_new(&t, 1, &numel, dtype, wick_cpu());
    if (st) return st;
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
    if (st) {
        wick_tensor_release(t);
        return st;
    }
    *out = t;
    return WICK_OK;
}

wick_status wick_read_storage(wick_tensor **out, const char *path, int64_t offset, wick_dtype dtype, int64_t numel) {
    if (offset < 0 || numel < 0) return wick_fail(WICK_ERR_IO, "%s: bad entry offset or size", path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return fail_errno("cannot open", path);
    struct stat sb;
    wick_status st = fstat(fd, &sb) != 0 ? fail_errno("cannot stat", path)
                                         : wk_io_read_fd(out, fd, (int64_t)sb.st_size, path, offset, dtype, numel);
    close(fd);
    return st;
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

wick_status wk_io_map_fd(int fd, int64_t size, const char *path, int n, const int64_t *offsets,
                         const wick_dtype *dtypes, const int64_t *numels, wick_tensor **out, int *unaligned) {
    *unaligned = 0;
    for (int i = 0; i < n; i++) {
        int64_t esize = (int64_t)wk_dtype_size(dtypes[i]);
        if (offsets[i] < 0 || numels[i] < 0 || offsets[i] > size || numels[i] > (size - offsets[i]) / esize)
            return wick_fail(WICK_ERR_IO, "%s: truncated: an entry runs past the end of the file", path);
        if (offsets[i] % esize != 0) *unaligned = 1;
    }
    if (*unaligned) return wick_fail(WICK_ERR_IO, "%s: an entry is not aligned to its element size", path);
    if (n == 0) return WICK_OK;
    file_mapping *m = calloc(1, sizeof *m);
    if (!m) return wick_fail(WICK_ERR_OOM, "out of memory mapping %s", path);
    m->size = size > 0 ? (size_t)size : 1;
    /* private: writes into a loaded tensor never reach the file */
    m->base = mmap(NULL, m->size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
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

wick_status wick_map_storages(const char *path, int n, const int64_t *offsets, const wick_dtype *dtypes,
                              const int64_t *numels, wick_tensor **out) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return fail_errno("cannot open", path);
    struct stat sb;
    int unaligned;
    wick_status st = fstat(fd, &sb) != 0 ? fail_errno("cannot stat", path)
                                         : wk_io_map_fd(fd, (int64_t)sb.st_size, path, n, offsets, dtypes, numels, out,
                                                        &unaligned);
    close(fd);
    return st;
}
