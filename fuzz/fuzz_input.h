/* The fuzz input as a file, for readers that take a path: one in-memory file
 * (memfd; an unlinked temporary where there is none) reached through
 * /proc/self/fd, rewritten for each input. Shared by the fuzz targets. */
#ifndef WICK_FUZZ_INPUT_H
#define WICK_FUZZ_INPUT_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static char fz_input_path_buf[64];
static int fz_input_fd = -1;

static void fz_die(const char *what) {
    fprintf(stderr, "fuzz: %s: %s\n", what, strerror(errno));
    abort();
}

/* The path of the input file (made on first use). */
static const char *fz_input_path(void) {
    if (fz_input_fd >= 0) return fz_input_path_buf;
    fz_input_fd = memfd_create("wick-fuzz-input", MFD_CLOEXEC);
    if (fz_input_fd < 0) {
        const char *dir = getenv("TMPDIR");
        char tmpl[4096];
        snprintf(tmpl, sizeof tmpl, "%s/wick-fuzz-XXXXXX", dir && *dir ? dir : "/tmp");
        fz_input_fd = mkstemp(tmpl);
        if (fz_input_fd < 0) fz_die("cannot create the input file");
        unlink(tmpl);
    }
    snprintf(fz_input_path_buf, sizeof fz_input_path_buf, "/proc/self/fd/%d", fz_input_fd);
    return fz_input_path_buf;
}

/* Replaces the input file's contents with size bytes of data. */
static void fz_write_input(const uint8_t *data, size_t size) {
    fz_input_path();
    if (ftruncate(fz_input_fd, 0) != 0) fz_die("cannot truncate the input file");
    for (size_t done = 0; done < size;) {
        ssize_t n = pwrite(fz_input_fd, data + done, size - done, (off_t)done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) fz_die("cannot write the input file");
        done += (size_t)n;
    }
}

#endif
