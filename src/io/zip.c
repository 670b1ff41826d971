/* Stored zip archives (src/io/zip.h): the end of central directory record (and
 * the zip64 end record and its locator when the 32-bit fields carry their
 * sentinels), the central directory, one local header per entry. Messages are
 * the ones the Lua reader this replaced gave (spec/pytorch_spec.lua checks them). */
#include "zip.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EOCD_SIZE 22
#define ZIP64_LOCATOR_SIZE 20
#define ZIP64_EOCD_SIZE 56
#define CD_ENTRY_SIZE 46
#define LOCAL_SIZE 30
#define U16 0xFFFFu
#define U32 0xFFFFFFFFu
#define MAX_EXACT ((int64_t)1 << 53)

static uint64_t le(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int k = n - 1; k >= 0; k--) v = v << 8 | p[k];
    return v;
}

/* A 64-bit size or offset, refused from 2^53 (where doubles stop being exact). */
static wick_status le64(const wk_zip *z, const unsigned char *p, int64_t *out) {
    uint64_t v = le(p, 8);
    if (v >= (uint64_t)MAX_EXACT)
        return wick_fail(WICK_ERR_IO, "%s: %s: corrupt zip archive (a 64-bit size or offset beyond 2^53)", z->who, z->path);
    *out = (int64_t)v;
    return WICK_OK;
}

wick_status wk_zip_read(const wk_zip *z, void *buf, int64_t offset, size_t n) {
    char *p = buf;
    while (n > 0) {
        ssize_t got = pread(z->fd, p, n, (off_t)offset);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) return wick_fail(WICK_ERR_IO, "%s: cannot read %s: %s", z->who, z->path, strerror(errno));
        if (got == 0) return wick_fail(WICK_ERR_IO, "%s: %s: truncated: the file ended while reading it", z->who, z->path);
        p += got, n -= (size_t)got, offset += got;
    }
    return WICK_OK;
}

static wick_status corrupt(const wk_zip *z, const char *what) {
    return wick_fail(WICK_ERR_IO, "%s: %s: %s", z->who, z->path, what);
}

/* ---- the end records ---- */

typedef struct {
    int64_t count, cd_offset, cd_size;
} directory;

static wick_status find_zip64(const wk_zip *z, int64_t eocd, directory *d, int64_t *limit) {
    unsigned char loc[ZIP64_LOCATOR_SIZE], rec[ZIP64_EOCD_SIZE];
    wick_status st;
    if (eocd < ZIP64_LOCATOR_SIZE || (st = wk_zip_read(z, loc, eocd - ZIP64_LOCATOR_SIZE, sizeof loc)) ||
        memcmp(loc, "PK\6\7", 4) != 0)
        return corrupt(z, "corrupt zip archive (zip64 sizes without a zip64 end record locator)");
    int64_t at = 0;
    if ((st = le64(z, loc + 8, &at))) return st;
    if (at + ZIP64_EOCD_SIZE > eocd - ZIP64_LOCATOR_SIZE)
        return corrupt(z, "corrupt zip archive (the zip64 end record is out of place)");
    if ((st = wk_zip_read(z, rec, at, sizeof rec))) return st;
    if (memcmp(rec, "PK\6\6", 4) != 0) return corrupt(z, "corrupt zip archive (the zip64 end record is damaged)");
    if ((st = le64(z, rec + 32, &d->count)) || (st = le64(z, rec + 40, &d->cd_size)) ||
        (st = le64(z, rec + 48, &d->cd_offset)))
        return st;
    *limit = at;
    return WICK_OK;
}

/* The central directory's place and entry count. */
static wick_status find_directory(const wk_zip *z, directory *d) {
    if (z->file_size < EOCD_SIZE) return corrupt(z, "truncated zip archive (no end of central directory record)");
    int64_t tail_start = z->file_size - EOCD_SIZE - 65535;
    if (tail_start < 0) tail_start = 0;
    size_t tail_len = (size_t)(z->file_size - tail_start);
    unsigned char *tail = malloc(tail_len);
    if (!tail) return wick_fail(WICK_ERR_OOM, "out of memory reading %s", z->path);
    wick_status st = wk_zip_read(z, tail, tail_start, tail_len);
    int64_t at = -1;
    for (int64_t i = (int64_t)tail_len - EOCD_SIZE; !st && i >= 0; i--)
        if (tail[i] == 'P' && memcmp(tail + i, "PK\5\6", 4) == 0) {
            at = i;
            break;
        }
    if (!st && at < 0) st = corrupt(z, "truncated or corrupt zip archive (no end of central directory record)");
    if (!st && (le(tail + at + 4, 2) != 0 || le(tail + at + 6, 2) != 0))
        st = corrupt(z, "multi-disk zip archives are not supported");
    if (st) {
        free(tail);
        return st;
    }
    const unsigned char *e = tail + at;
    d->count = (int64_t)le(e + 10, 2), d->cd_size = (int64_t)le(e + 12, 4), d->cd_offset = (int64_t)le(e + 16, 4);
    free(tail);
    int64_t eocd = tail_start + at, limit = eocd;
    if (d->count == U16 || d->cd_size == U32 || d->cd_offset == U32) {
        if ((st = find_zip64(z, eocd, d, &limit))) return st;
    }
    if (d->cd_offset + d->cd_size > limit)
        return wick_fail(WICK_ERR_IO,
                         "%s: %s: truncated or corrupt zip archive (the central directory at byte %lld, %lld bytes, "
                         "passes its end record at byte %lld)",
                         z->who, z->path, (long long)d->cd_offset, (long long)d->cd_size, (long long)limit);
    return WICK_OK;
}

/* ---- the entries ---- */

typedef struct {
    unsigned flags, method;
    uint32_t crc;
    int64_t csize, usize, local_offset;
    size_t name_len, extra_len, comment_len;
} cd_fields;

/* The zip64 extended information extra field holds, in this order, the sizes
 * and offset whose 32-bit fields carry the sentinel. */
static wick_status zip64_fields(const wk_zip *z, const unsigned char *extra, size_t len, cd_fields *f,
                                const char *name) {
    int64_t *wanted[3];
    int n = 0;
    if (f->usize == U32) wanted[n++] = &f->usize;
    if (f->csize == U32) wanted[n++] = &f->csize;
    if (f->local_offset == U32) wanted[n++] = &f->local_offset;
    size_t p = 0;
    while (p + 4 <= len) {
        size_t id = (size_t)le(extra + p, 2), flen = (size_t)le(extra + p + 2, 2);
        if (p + 4 + flen > len) break;
        if (id == 1) {
            int64_t got[3];
            int have = 0;
            for (; have < n && 8 * (size_t)(have + 1) <= flen; have++) {
                wick_status st = le64(z, extra + p + 4 + 8 * (size_t)have, &got[have]);
                if (st) return st;
            }
            if (have < n) break;
            for (int i = 0; i < n; i++) *wanted[i] = got[i];
            return WICK_OK;
        }
        p += 4 + flen;
    }
    return wick_fail(WICK_ERR_IO, "%s: %s: corrupt zip archive (entry '%s' lacks its zip64 sizes)", z->who, z->path, name);
}

static uint64_t name_hash(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static int64_t *slot_of(const wk_zip *z, const char *name, size_t len) {
    size_t mask = z->nslots - 1, i = (size_t)name_hash(name, len) & mask;
    for (;; i = (i + 1) & mask) {
        int64_t k = z->slots[i];
        if (k == 0) return &z->slots[i];
        const wk_zip_entry *e = &z->entries[k - 1];
        if (e->name_len == len && memcmp(e->name, name, len) == 0) return &z->slots[i];
    }
}

const wk_zip_entry *wk_zip_find(const wk_zip *z, const char *name, size_t len) {
    if (!z->nslots) return NULL;
    int64_t k = *slot_of(z, name, len);
    return k ? &z->entries[k - 1] : NULL;
}

/* The data's place: after the local header, its name and its extra field. */
static wick_status locate_data(const wk_zip *z, const cd_fields *f, const char *name, int64_t cd_offset,
                               int64_t *start) {
    unsigned char lh[LOCAL_SIZE];
    if (f->local_offset + LOCAL_SIZE > cd_offset || wk_zip_read(z, lh, f->local_offset, sizeof lh) ||
        memcmp(lh, "PK\3\4", 4) != 0)
        return wick_fail(WICK_ERR_IO, "%s: %s: corrupt zip archive (the local header of '%s' is damaged or out of place)",
                         z->who, z->path, name);
    *start = f->local_offset + LOCAL_SIZE + (int64_t)le(lh + 26, 2) + (int64_t)le(lh + 28, 2);
    if (*start + f->csize > cd_offset)
        return wick_fail(WICK_ERR_IO,
                         "%s: %s: truncated or corrupt zip archive (entry '%s' runs past the data: bytes %lld..%lld of "
                         "%lld)",
                         z->who, z->path, name, (long long)*start, (long long)(*start + f->csize), (long long)cd_offset);
    return WICK_OK;
}

static wick_status check_entry(const wk_zip *z, const cd_fields *f, const char *name) {
    if (f->flags & 1) return wick_fail(WICK_ERR_IO, "%s: %s: zip entry '%s' is encrypted", z->who, z->path, name);
    if (f->method != 0)
        return wick_fail(WICK_ERR_IO,
                         "%s: %s: zip entry '%s' uses compression method %u; only stored (uncompressed) entries, as "
                         "torch.save and np.savez write, are supported (not np.savez_compressed)",
                         z->who, z->path, name, f->method);
    if (f->csize != f->usize)
        return wick_fail(WICK_ERR_IO, "%s: %s: corrupt zip archive (stored entry '%s' has sizes %lld and %lld)", z->who, z->path,
                         name, (long long)f->csize, (long long)f->usize);
    return WICK_OK;
}

/* Entry k of the directory (its record at cd[p..]), appended to z. */
static wick_status read_entry(wk_zip *z, const unsigned char *cd, int64_t cd_size, int64_t *p, int64_t k,
                              int64_t cd_offset) {
    if (*p + CD_ENTRY_SIZE > cd_size || memcmp(cd + *p, "PK\1\2", 4) != 0)
        return wick_fail(WICK_ERR_IO, "%s: %s: corrupt zip archive (central directory entry %lld is damaged)", z->who, z->path,
                         (long long)k);
    const unsigned char *r = cd + *p;
    cd_fields f = {(unsigned)le(r + 8, 2), (unsigned)le(r + 10, 2), (uint32_t)le(r + 16, 4), (int64_t)le(r + 20, 4),
                   (int64_t)le(r + 24, 4), (int64_t)le(r + 42, 4), (size_t)le(r + 28, 2), (size_t)le(r + 30, 2),
                   (size_t)le(r + 32, 2)};
    if (*p + CD_ENTRY_SIZE + (int64_t)(f.name_len + f.extra_len + f.comment_len) > cd_size)
        return wick_fail(WICK_ERR_IO, "%s: %s: corrupt zip archive (central directory entry %lld runs past the directory)",
                         z->who, z->path, (long long)k);
    wk_zip_entry *e = &z->entries[z->n];
    e->name = malloc(f.name_len + 1);
    if (!e->name) return wick_fail(WICK_ERR_OOM, "out of memory reading %s", z->path);
    memcpy(e->name, r + CD_ENTRY_SIZE, f.name_len);
    e->name[f.name_len] = '\0';
    e->name_len = f.name_len;
    z->n++; /* owned by z from here: freed with it on failure */
    wick_status st = WICK_OK;
    if (f.usize == U32 || f.csize == U32 || f.local_offset == U32)
        st = zip64_fields(z, r + CD_ENTRY_SIZE + f.name_len, f.extra_len, &f, e->name);
    if (!st) st = check_entry(z, &f, e->name);
    int64_t start = 0;
    if (!st) st = locate_data(z, &f, e->name, cd_offset, &start);
    if (st) return st;
    int64_t *slot = slot_of(z, e->name, e->name_len);
    if (*slot) return wick_fail(WICK_ERR_IO, "%s: %s: corrupt zip archive (entry '%s' appears twice)", z->who, z->path, e->name);
    *slot = z->n;
    e->offset = start, e->size = f.csize, e->crc = f.crc;
    *p += CD_ENTRY_SIZE + (int64_t)(f.name_len + f.extra_len + f.comment_len);
    return WICK_OK;
}

/* Room for the entries a directory of cd_size bytes can hold, at most count. */
static wick_status alloc_entries(wk_zip *z, int64_t count, int64_t cd_size) {
    int64_t most = cd_size / CD_ENTRY_SIZE;
    int64_t n = count < most ? count : most;
    size_t nslots = 16;
    while ((int64_t)nslots < 2 * n + 2) nslots *= 2;
    z->entries = calloc((size_t)(n > 0 ? n : 1), sizeof *z->entries);
    z->slots = calloc(nslots, sizeof *z->slots);
    z->nslots = nslots;
    if (!z->entries || !z->slots) return wick_fail(WICK_ERR_OOM, "out of memory reading %s", z->path);
    return WICK_OK;
}

wick_status wk_zip_open(wk_zip *z, int fd, int64_t file_size, const char *who, const char *path) {
    memset(z, 0, sizeof *z);
    z->fd = fd, z->file_size = file_size, z->who = who, z->path = path;
    directory d = {0, 0, 0};
    wick_status st = find_directory(z, &d);
    if (st) return st;
    unsigned char *cd = malloc((size_t)(d.cd_size > 0 ? d.cd_size : 1));
    if (!cd) return wick_fail(WICK_ERR_OOM, "out of memory reading %s", path);
    st = wk_zip_read(z, cd, d.cd_offset, (size_t)d.cd_size);
    if (!st) st = alloc_entries(z, d.count, d.cd_size);
    int64_t p = 0;
    for (int64_t k = 1; !st && k <= d.count; k++) st = read_entry(z, cd, d.cd_size, &p, k, d.cd_offset);
    free(cd);
    if (st) wk_zip_close(z);
    return st;
}

void wk_zip_close(wk_zip *z) {
    for (int64_t i = 0; i < z->n; i++) free(z->entries[i].name);
    free(z->entries);
    free(z->slots);
    z->entries = NULL, z->slots = NULL, z->n = 0, z->nslots = 0;
}
