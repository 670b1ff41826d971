/* The directory of a stored (uncompressed) zip archive, as torch.save writes
 * them (zip64 included), read through an open file: the end records, the
 * central directory and one local header per entry; the entries' data stay on
 * disk. Every size and offset is checked against the file before use; a bad
 * archive is WICK_ERR_IO with a message "<who>: <path>: <what>". Internal to
 * src/io. */
#ifndef WICK_IO_ZIP_H
#define WICK_IO_ZIP_H

#include "wick.h"

#include <stddef.h>
#include <stdint.h>

typedef struct wk_zip_entry {
    char *name; /* NUL-terminated copy (name_len bytes; a name may hold NULs) */
    size_t name_len;
    int64_t offset; /* byte offset of the data in the file */
    int64_t size;
    uint32_t crc; /* the directory's CRC-32 of the data */
} wk_zip_entry;

typedef struct wk_zip {
    int fd;
    int64_t file_size;
    const char *who, *path; /* for messages; not owned */
    int64_t n;
    wk_zip_entry *entries; /* in directory order */
    int64_t *slots;        /* hash of names -> index + 1 (0: empty), nslots a power of two */
    size_t nslots;
} wk_zip;

/* Reads the directory of the archive open as fd (file_size bytes). On failure
 * z holds nothing to free. */
wick_status wk_zip_open(wk_zip *z, int fd, int64_t file_size, const char *who, const char *path);
/* The entry named exactly name[0..len), or NULL. */
const wk_zip_entry *wk_zip_find(const wk_zip *z, const char *name, size_t len);
void wk_zip_close(wk_zip *z);
/* n bytes at offset of z's file into buf; fails on a short read. */
wick_status wk_zip_read(const wk_zip *z, void *buf, int64_t offset, size_t n);

#endif
