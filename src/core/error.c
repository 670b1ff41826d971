/* The last error of each thread, and the interrupt flag. */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char last_error[1024];

volatile int wk_interrupt_flag = 0;

const char *wick_last_error(void) { return last_error; }

wick_status wick_fail(wick_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return status;
}

void wick_interrupt(void) { wk_interrupt_flag = 1; }
