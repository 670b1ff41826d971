/* libFuzzer target for the readers of the C API (fuzz/README.md), built once
 * per reader with -DFUZZ_READER=FUZZ_FLAT or FUZZ_IDX:
 *
 *   fuzz_flat  wick_load_flat: safetensors files (src/io/safetensors.c)
 *   fuzz_idx   wick_read_idx: IDX files, plain or gzip (src/io/idx.c, zlib)
 *
 * Each input is written to an in-memory file (memfd, opened as
 * /proc/self/fd/N). An error status is the expected answer to a bad file; a
 * crash, a sanitizer report, a leak, a timeout, or an allocation of 1 GiB or
 * more (run.sh's malloc limit) is a finding. What loads is read in full: every
 * byte of every tensor goes through wick_crc32c, and its CRC-32C is computed
 * again by the table and the SSE4.2 path one by one; a disagreement aborts (a
 * differential test of src/io/crc32c.c on every loaded tensor). */
#define _GNU_SOURCE
#include "../src/io/crc.h"
#include <wick.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_input.h"

#define FUZZ_FLAT 1
#define FUZZ_IDX 2
#ifndef FUZZ_READER
#error "build with -DFUZZ_READER=FUZZ_FLAT or FUZZ_IDX"
#endif

/* Reads every byte of t (contiguous, CPU) three ways. */
static void touch(const wick_tensor *t) {
    if (!wick_tensor_is_contiguous(t)) {
        fprintf(stderr, "fuzz_c_reader: a loaded tensor is not contiguous\n");
        abort();
    }
    size_t n = (size_t)wick_tensor_numel(t) * wick_dtype_size(wick_tensor_dtype(t));
    const void *p = wick_tensor_data((wick_tensor *)t);
    uint32_t a = wick_crc32c(0, p, n), b = wk_crc32c_using(WK_CRC_PORTABLE, 0, p, n),
             c = wk_crc32c_using(WK_CRC_AUTO, 0, p, n);
    if (a != b || a != c) {
        fprintf(stderr, "fuzz_c_reader: CRC-32C paths disagree on %zu bytes: %08x %08x %08x\n", n, a, b, c);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_write_input(data, size);
#if FUZZ_READER == FUZZ_FLAT
    int n = 0;
    char **names = NULL;
    wick_tensor **tensors = NULL;
    if (wick_load_flat(fz_input_path(), &n, &names, &tensors) == WICK_OK) {
        for (int i = 0; i < n; i++) {
            if (!names[i]) abort();
            touch(tensors[i]);
        }
        wick_free_flat(n, names, tensors);
    }
#else
    wick_tensor *t = NULL;
    if (wick_read_idx(&t, fz_input_path()) == WICK_OK) {
        touch(t);
        wick_tensor_release(t);
    }
#endif
    return 0;
}
