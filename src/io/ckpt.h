/* Internal to wick: the checkpoint engine's value tree (src/io/ckpt*.c).
 *
 * One checkpoint, whatever its file format (the wick format, plain safetensors,
 * a torch.save zip), read or to be written, is a wk_ckpt: a tree of values
 * (tables, numbers, strings, booleans, None, tensors) and an array of storages.
 * A tensor in the tree is a view (dtype, sizes, strides, offset in elements) of
 * one storage, named by its index; several views may share a storage. Each
 * storage is a flat run of elements with the device string it was saved from.
 *
 * Memory: every value, string and array of a checkpoint lives in its arena and
 * goes with wk_ckpt_free; the constructors below return NULL when out of memory
 * (the caller then fails with WICK_ERR_OOM). Storage data (wick_tensor) is held
 * by reference and released by wk_ckpt_free.
 *
 * Readers (wk_ckpt_read) fill the tree and storages and check everything:
 * every size and offset against the file, each view against its storage
 * (the core's view check), the checksums the format carries. A tree from a
 * reader is therefore safe to convert without further checks. */
#ifndef WICK_IO_CKPT_H
#define WICK_IO_CKPT_H
#include "wick.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum wk_ckpt_kind {
    WK_CKPT_NIL = 0,  /* pickle's None; a table entry whose value is nil is left out in Lua */
    WK_CKPT_NUMBER,   /* a double (nan and +-inf included; integers exact below 2^53) */
    WK_CKPT_STRING,   /* bytes with a length (may hold NULs), NUL-terminated as well */
    WK_CKPT_BOOLEAN,
    WK_CKPT_TABLE,    /* ordered (key, value) pairs; keys NUMBER, STRING or BOOLEAN */
    WK_CKPT_TENSOR,   /* a view of storage `storage` */
} wk_ckpt_kind;

typedef struct wk_ckpt_value wk_ckpt_value;

typedef struct wk_ckpt_pair {
    wk_ckpt_value *key, *value;
} wk_ckpt_pair;

struct wk_ckpt_value {
    wk_ckpt_kind kind;
    union {
        double number;
        int boolean;
        struct {
            const char *bytes;
            size_t len;
        } string;
        /* A Lua array {a, b} is the pairs (1, a), (2, b); a PyTorch list or
         * tuple the same; a dict its keys in insertion order. Pairs are
         * assigned in order (the last of equal keys wins; a NIL value removes
         * the key). A TABLE value may be reached from several places, even
         * from inside itself (a pickle's memo): walks mark what they visited. */
        struct {
            wk_ckpt_pair *pairs;
            int n, cap;
            unsigned mark; /* the walk that last visited it (wk_ckpt.marks) */
            bool dict;     /* a dict (Python's, an OrderedDict): its keys are names, even when it has none */
        } table;
        struct {
            int storage; /* index into wk_ckpt.storages */
            wick_dtype dtype;
            int ndim;
            int64_t *sizes, *strides; /* ndim each, in the arena */
            int64_t offset;           /* in elements, into the storage */
            /* set by readers: the view over the storage's data as read (NULL
             * when not yet made); owned by the checkpoint */
            wick_tensor *view;
        } tensor;
    } as;
};

typedef enum wk_ckpt_crc {
    WK_CKPT_CRC_NONE = 0, /* the file carries no checksum for it */
    WK_CKPT_CRC32C,       /* Castagnoli (wick.save) */
    WK_CKPT_CRC32,        /* zlib's (older wick.save, PyTorch zip entries) */
} wk_ckpt_crc;

typedef struct wk_ckpt_storage {
    const char *name;   /* entry name: "s1", a safetensors key, a PyTorch storage key */
    const char *device; /* the device it was saved from, as written ("cpu", "cuda:0") */
    wick_dtype dtype;
    int64_t numel;
    int64_t file_offset; /* reading: byte offset of its data in the file */
    wk_ckpt_crc crc_kind;
    uint32_t crc;        /* the checksum written for it (crc_kind says which) */
    /* reading: a 1-D CPU tensor of numel elements over the file's mapping (or
     * a copy where the file is not aligned); writing: any CPU tensor whose whole
     * storage is these numel elements. Owned (released by wk_ckpt_free). */
    wick_tensor *data;
} wk_ckpt_storage;

typedef enum wk_ckpt_format {
    WK_CKPT_WICK = 0,        /* wick.save: safetensors + the tree in __metadata__ */
    WK_CKPT_SAFETENSORS,     /* plain safetensors: the root is a table name -> tensor */
    WK_CKPT_PYTORCH,         /* torch.save's zip (data-only unpickler) */
    WK_CKPT_NUMPY,           /* np.save's .npy (the root is a tensor), np.savez's .npz (a dict) */
} wk_ckpt_format;

typedef struct wk_ckpt_arena wk_ckpt_arena;

typedef struct wk_ckpt {
    wk_ckpt_format format;
    wk_ckpt_value *root;
    wk_ckpt_storage *storages;
    int nstorages, cap;
    wk_ckpt_arena *arena;
    wick_tensor **views; /* every view made by wk_ckpt_make_views, released by wk_ckpt_free */
    int nviews, views_cap;
    unsigned marks;      /* walks so far (TABLE.mark) */
} wk_ckpt;

/* ---- building a tree (readers, and the binding before a write) ---- */

wk_ckpt *wk_ckpt_new(wk_ckpt_format format); /* NULL when out of memory */
void wk_ckpt_free(wk_ckpt *c);               /* NULL is fine */
void *wk_ckpt_alloc(wk_ckpt *c, size_t size); /* arena memory, 16-aligned, zeroed */
char *wk_ckpt_strdup(wk_ckpt *c, const char *s, size_t len); /* copy + NUL */

wk_ckpt_value *wk_ckpt_nil(wk_ckpt *c);
wk_ckpt_value *wk_ckpt_number(wk_ckpt *c, double v);
wk_ckpt_value *wk_ckpt_boolean(wk_ckpt *c, int v);
wk_ckpt_value *wk_ckpt_string(wk_ckpt *c, const char *bytes, size_t len); /* copies */
wk_ckpt_value *wk_ckpt_table(wk_ckpt *c);
/* Appends (key, value) to table (which keeps the order); 0, or -1 when out of memory. */
int wk_ckpt_table_add(wk_ckpt *c, wk_ckpt_value *table, wk_ckpt_value *key, wk_ckpt_value *value);
/* A view of storage `storage` (sizes and strides copied; nothing checked yet). */
wk_ckpt_value *wk_ckpt_tensor(wk_ckpt *c, int storage, wick_dtype dtype, int ndim, const int64_t *sizes,
                              const int64_t *strides, int64_t offset);
/* Adds a storage (name and device copied); its index, or -1 when out of memory. */
int wk_ckpt_add_storage(wk_ckpt *c, const char *name, const char *device, wick_dtype dtype, int64_t numel);

/* ---- reading ---- */

typedef struct wk_ckpt_read_options {
    const char *who; /* the error prefix: "wick.load", "wick_load_flat" */
    int verify;      /* -1: check the checksums the file has; 0: skip; 1: require them */
    int flat;        /* 1: the container only (wick_load_flat): every entry as a root
                        table name -> tensor, __metadata__ not interpreted, no zip */
    int mmap;        /* 1: storages map the file (torch.load's mmap=True: a file changed
                        later changes them, and one cut short faults); 0: read */
    int objects;     /* 1: a PyTorch pickle's instances of classes outside the allowlist load
                        as tables of their state (torch.load's weights_only=False; nothing
                        is imported or run); 0: they are refused */
} wk_ckpt_read_options;

/* The file being read, opened once: readers for each format get it. */
typedef struct wk_ckpt_source {
    const char *path, *who;
    int fd;
    int64_t size;
    int verify;
    int mmap;    /* wk_ckpt_read_options.mmap */
    int objects; /* wk_ckpt_read_options.objects */
} wk_ckpt_source;

/* Reads the checkpoint at path (format by its first bytes), all checked, the
 * storages mapped (or read where unaligned) and verified: *out, or an error
 * "<who>: <path>: what is wrong" (texts: docs/checkpoint-format.md). */
/* A WICK_ERR_IO error "who: path: <message>", the form of every error the
 * engine's readers raise about a file. */
wick_status wk_ckpt_failv(const char *who, const char *path, const char *fmt, va_list ap);
wick_status wk_ckpt_read(wk_ckpt **out, const char *path, const wk_ckpt_read_options *opts);

/* For format readers: maps every storage's [file_offset, + numel * size) of the
 * source (one mapping of the whole file; bounds checked against the file; a
 * copy read from the file when an offset is not aligned to its element size),
 * setting storages[i].data. */
wick_status wk_ckpt_map_storages(wk_ckpt *c, const wk_ckpt_source *src);
/* Checks storage i's data against its checksum per src->verify; the error
 * names the file, the storage and both values. */
wick_status wk_ckpt_verify_storage(const wk_ckpt *c, int i, const wk_ckpt_source *src);
/* Checks every TENSOR value in the tree against its storage (dtype, the core's
 * view check) and makes its view over storages[].data. Each TABLE is walked
 * once; nesting deeper than WK_CKPT_MAX_DEPTH is an error (readers should
 * refuse such trees first, with their own text). */
#define WK_CKPT_MAX_DEPTH 10000
wick_status wk_ckpt_make_views(wk_ckpt *c, const wk_ckpt_source *src);

/* The PyTorch zip reader (src/io/pytorch*.c): fills c (format WK_CKPT_PYTORCH)
 * from src, a file starting with "PK\3\4"; a zip holding .npy entries and no
 * data.pkl goes to the npz reader instead. */
wick_status wk_ckpt_read_pytorch(wk_ckpt *c, const wk_ckpt_source *src);

/* NumPy's files (src/io/numpy.c), format WK_CKPT_NUMPY: an .npy file (starting
 * with "\x93NUMPY") as one tensor; an .npz archive (z, opened on src) as a dict
 * of its .npy entries by name less ".npy". wk_zip_is_npz(z): whether z is one
 * (.npy entries, no data.pkl). */
typedef struct wk_zip wk_zip;
wick_status wk_ckpt_read_npy(wk_ckpt *c, const wk_ckpt_source *src);
wick_status wk_ckpt_read_npz(wk_ckpt *c, const wk_ckpt_source *src, const wk_zip *z);
bool wk_zip_is_npz(const wk_zip *z);
/* numpy's kind ('f', 'i', 'u', 'b', 'c') and element size as the wick dtype: 1, or 0 where wick has none
 * (int8, int16, the wider unsigned) */
int wk_numpy_dtype(char kind, int size, wick_dtype *out);

/* ---- file helpers (src/io/file.c) ---- */

/* 1-D CPU tensors over one private mapping of fd (size bytes), one per
 * (offset, dtype, numel), each range checked against size; WICK_ERR_IO naming
 * path when a range runs past the end; *unaligned set (and nothing made) when
 * an offset is not a multiple of its element size. */
wick_status wk_io_map_fd(int fd, int64_t size, const char *path, int n, const int64_t *offsets,
                         const wick_dtype *dtypes, const int64_t *numels, wick_tensor **out, int *unaligned);
/* A CPU tensor holding a copy of numel elements read from fd at offset. */
wick_status wk_io_read_fd(wick_tensor **out, int fd, int64_t size, const char *path, int64_t offset, wick_dtype dtype,
                          int64_t numel);

/* ---- writing ---- */

/* Writes c atomically (wick_write_storages_atomic): WK_CKPT_WICK with its tree,
 * device strings and CRC-32C checksums; WK_CKPT_SAFETENSORS as plain safetensors
 * whose entries are the root table's (name -> contiguous tensor) pairs. The data
 * goes largest element size first so that each entry is aligned. The header's
 * keys: sorted_keys 1 as wick.save and wick.save_safetensors have always written
 * them (entries by name with __metadata__ among them, fields data_offsets, dtype,
 * shape), 0 as wick_save_flat has (entries in data order; dtype, shape,
 * data_offsets). Storage data: CPU tensors whose storage is exactly numel
 * elements of dtype. */
wick_status wk_ckpt_write(const char *path, const wk_ckpt *c, const char *who, int sorted_keys);

#endif
