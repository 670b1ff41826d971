/* The C tests' one assertion: counts checks and failures, prints each failure
 * with wick's last error, and lets the test run on to report them all. */
#ifndef WICK_TEST_CHECK_H
#define WICK_TEST_CHECK_H

#include <stdio.h>

#include "wick.h"

static int failures = 0, checks = 0;

#define CHECK(cond)                                                                                  \
    do {                                                                                             \
        checks++;                                                                                    \
        if (!(cond)) {                                                                               \
            failures++;                                                                              \
            fprintf(stderr, "%s:%d: check failed: %s (last error: %s)\n", __FILE__, __LINE__, #cond, \
                    wick_last_error());                                                              \
        }                                                                                            \
    } while (0)

#endif
