/* The last error of each thread, and interrupts: the flag each thread watches
 * (wick.h, "interrupts"). */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char last_error[1024];

const char *wick_last_error(void) { return last_error; }

wick_status wick_fail(wick_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return status;
}

/* ---- interrupts ---- */

static wick_interrupt_flag default_flag; /* wick_interrupt() */
static _Thread_local wick_interrupt_flag *watched; /* NULL: default_flag */

static wick_interrupt_flag *or_default(wick_interrupt_flag *flag) { return flag ? flag : &default_flag; }

wick_interrupt_flag *wk_interrupt_watched(void) { return or_default(watched); }

/* Lock-free atomics on an int: async-signal-safe. */
void wick_interrupt_raise(wick_interrupt_flag *flag) { __atomic_store_n(&or_default(flag)->raised, 1, __ATOMIC_RELAXED); }

void wick_interrupt(void) { wick_interrupt_raise(NULL); }

int wick_interrupt_take(wick_interrupt_flag *flag) {
    wick_interrupt_flag *f = or_default(flag);
    if (!__atomic_load_n(&f->raised, __ATOMIC_RELAXED)) return 0; /* the usual case: no write */
    return __atomic_exchange_n(&f->raised, 0, __ATOMIC_RELAXED) != 0;
}

wick_interrupt_flag *wick_interrupt_watch(wick_interrupt_flag *flag) {
    wick_interrupt_flag *before = watched;
    watched = flag;
    return before;
}

int wick_take_interrupt(void) { return wick_interrupt_take(watched); }

wick_status wk_interrupted(const char *op) {
    if (!op) return wick_fail(WICK_ERR_INTERRUPTED, "interrupted");
    return wick_fail(WICK_ERR_INTERRUPTED, "interrupted (in %s)", op);
}

/* Called at the entry of ops (wk_check_same_device, reduce_forward): a loop of
 * ops compiled by the JIT never runs a Lua hook, so the flag is what stops it.
 * The flag is lowered so the op after the error (the prompt's next line) runs. */
wick_status wk_check_interrupt(const char *op) {
    return wick_interrupt_take(watched) ? wk_interrupted(op) : WICK_OK;
}
