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

int wick_take_interrupt(void) {
    if (!wk_interrupt_flag) return 0;
    wk_interrupt_flag = 0;
    return 1;
}

/* Called at the entry of ops (wk_check_same_device, reduce_forward): a loop of
 * ops compiled by the JIT never runs a Lua hook, so the flag is what stops it.
 * The flag is cleared so the op after the error (the prompt's next line) runs. */
wick_status wk_check_interrupt(const char *op) {
    if (!wk_interrupt_flag) return WICK_OK;
    wk_interrupt_flag = 0;
    return wick_fail(WICK_ERR_INTERRUPTED, "interrupted (in %s)", op);
}
