/* libFuzzer target for the checkpoint engine's PyTorch zip reader, without Lua
 * (src/io/zip.c, src/io/pytorch.c; fuzz/README.md): fuzz_pytorch_c.
 *
 * Each input is written to an in-memory file (memfd) and read by
 * wk_ckpt_read_pytorch on that descriptor, as wk_ckpt_read calls it for a file
 * starting with "PK\3\4". An error status is the expected answer to a bad
 * file; a crash, a sanitizer report, a leak, a timeout or an allocation of
 * 1 GiB or more (run.sh's malloc limit) is a finding. What loads is read in
 * full: every storage's bytes, and every element every view of the tree
 * reaches (a view past its storage is a finding for ASan). The tree itself may
 * share values, even cyclically (a pickle's memo); the engine's walks mark
 * them, and this target reads the views from c->views. The corpus is
 * fuzz/corpus/pytorch (the same inputs as fuzz_pytorch, which goes through
 * wick.load). */
#define _GNU_SOURCE
#include "../src/io/ckpt.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_input.h"

static volatile uint32_t sink;

/* Every element a view reaches, read (in index order, recursively by dim). */
static void touch_view(const char *base, int ndim, const int64_t *sizes, const int64_t *strides, size_t es) {
    if (ndim == 0) {
        uint32_t x = 0;
        memcpy(&x, base, es < sizeof x ? es : sizeof x);
        sink ^= x;
        return;
    }
    for (int64_t i = 0; i < sizes[0]; i++)
        touch_view(base + i * strides[0] * (int64_t)es, ndim - 1, sizes + 1, strides + 1, es);
}

/* Every view the tree holds (c->views: each made once, however often the tree
 * reaches it), read element by element. */
static void touch_views(const wk_ckpt *c) {
    int64_t budget = (int64_t)1 << 24; /* elements per input: many views of one big storage stay fast */
    for (int i = 0; i < c->nviews; i++) {
        const wick_tensor *t = c->views[i];
        int64_t numel = wick_tensor_numel(t);
        if (numel > budget) break;
        budget -= numel;
        if (numel > 0)
            touch_view(wick_tensor_data((wick_tensor *)t), wick_tensor_ndim(t), wick_tensor_sizes(t),
                       wick_tensor_strides(t), wick_dtype_size(wick_tensor_dtype(t)));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_write_input(data, size);
    /* the reader itself on the open file, as wk_ckpt_read calls it for "PK\3\4": refusing
     * other classes, then loading their instances as data (weights_only=False) */
    for (int objects = 0; objects < 2; objects++) {
        wk_ckpt_source src = {fz_input_path(), "fuzz", fz_input_fd, (int64_t)size, -1, 0, objects};
        wk_ckpt *c = wk_ckpt_new(WK_CKPT_PYTORCH);
        if (!c) abort();
        if (wk_ckpt_read_pytorch(c, &src) == WICK_OK) {
            for (int i = 0; i < c->nstorages; i++) {
                const wk_ckpt_storage *s = &c->storages[i];
                sink ^= wick_crc32c(0, wick_tensor_data(s->data), (size_t)s->numel * wick_dtype_size(s->dtype));
            }
            touch_views(c);
        }
        wk_ckpt_free(c);
    }
    return 0;
}
