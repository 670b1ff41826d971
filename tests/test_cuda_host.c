/* C tests of the host logic of the GPU's waits (src/cuda/cuda_host.c), which
 * needs no GPU: the device error record that index kernels fill (simulated
 * here as a kernel would leave it), the message and clearing at the wait that
 * finds it, the counting of waits with its hook, and the per-thread batches of
 * copies. Runs in every build. */
#include "../src/cuda/cuda_host.h"
#include "../src/core/internal.h"

#include <pthread.h>
#include <string.h>

#include "check.h"

#define HAS(text) (strstr(wick_last_error(), text) != NULL)

/* A record as the first failing kernel thread leaves it. */
static wk_device_error record(int op, int dim, int64_t value, int64_t size) {
    wk_device_error r;
    memset(&r, 0, sizeof r);
    r.flag = 1, r.op = op, r.dim = dim, r.value = value, r.size = size;
    return r;
}

static int all_zero(const wk_device_error *r) {
    static const wk_device_error zero;
    return memcmp(r, &zero, sizeof zero) == 0;
}

static void test_error_record(void) {
    /* the layout the kernels write: fixed offsets, 32 bytes */
    CHECK(sizeof(wk_device_error) == 32);
    wk_device_error none;
    memset(&none, 0, sizeof none);
    CHECK(wk_device_error_take(&none, 0, "copy to the CPU") == WICK_OK && all_zero(&none));

    /* each op's name; value and dimension 1-based, as the CPU's error says */
    const struct {
        int op;
        const char *name;
    } ops[] = {{WK_DEVERR_INDEX_SELECT, "index_select: "}, {WK_DEVERR_GATHER, "gather: "},
               {WK_DEVERR_SCATTER, "scatter: "},           {WK_DEVERR_SCATTER_ADD, "scatter_add: "},
               {WK_DEVERR_INDEX_ADD, "index_add: "}};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        wk_device_error r = record(ops[i].op, (int)i, 10 + (int64_t)i, 7);
        char want[128];
        snprintf(want, sizeof want, "%sindex %d is out of bounds for dimension %d with size 7", ops[i].name,
                 11 + (int)i, 1 + (int)i);
        CHECK(wk_device_error_take(&r, 2, "copy to the CPU") == WICK_ERR_INDEX);
        CHECK(strncmp(wick_last_error(), want, strlen(want)) == 0);
        CHECK(HAS("cuda:2") && HAS("asynchronously") && HAS("copy to the CPU"));
        CHECK(all_zero(&r)); /* cleared: reported once */
        CHECK(wk_device_error_take(&r, 2, "copy to the CPU") == WICK_OK);
    }
    /* a negative index (as the kernel saw it: 0-based) and the largest ones */
    wk_device_error r = record(WK_DEVERR_GATHER, 0, -3, 5);
    CHECK(wk_device_error_take(&r, 0, "wick.cuda.synchronize") == WICK_ERR_INDEX && HAS("index -2 is out") &&
          HAS("wick.cuda.synchronize"));
    r = record(WK_DEVERR_GATHER, 0, INT64_MAX, INT64_MAX);
    CHECK(wk_device_error_take(&r, 0, NULL) == WICK_ERR_INDEX && HAS("index -9223372036854775808") &&
          HAS("size 9223372036854775807"));
    /* an op id the table does not know (a corrupt record) still reports */
    r = record(99, 0, 4, 4);
    CHECK(wk_device_error_take(&r, 0, "x") == WICK_ERR_INDEX && HAS("an indexing op: index 5"));
    r = record(-1, 0, 4, 4);
    CHECK(wk_device_error_take(&r, 0, "x") == WICK_ERR_INDEX && HAS("an indexing op"));
    CHECK(strcmp(wk_device_error_op_name(WK_DEVERR_SCATTER_ADD), "scatter_add") == 0);
}

/* ---- counting waits ---- */

typedef struct {
    int calls, last_device;
    char last_reason[64];
} hook_log;

static void log_hook(int device, const char *reason, void *ud) {
    hook_log *log = ud;
    log->calls++;
    log->last_device = device;
    snprintf(log->last_reason, sizeof log->last_reason, "%s", reason);
}

static void *note_many(void *arg) {
    (void)arg;
    for (int i = 0; i < 10000; i++) wk_sync_note(5, WK_SYNC_COPY_TO_HOST);
    return NULL;
}

static void test_sync_counting(void) {
    /* the names: one per reason, NULL past the last */
    int n = 0;
    while (wick_cuda_sync_reason_name(n)) n++;
    CHECK(n == WK_SYNC_REASON_COUNT && wick_cuda_sync_reason_name(-1) == NULL);
    CHECK(strcmp(wick_cuda_sync_reason_name(WK_SYNC_COPY_TO_HOST), "copy to the CPU") == 0);

    int64_t all0 = wick_cuda_sync_count(-1), d3 = wick_cuda_sync_count(3);
    hook_log log = {0, -1, ""};
    wick_cuda_set_sync_hook(log_hook, &log);
    wk_sync_note(3, WK_SYNC_BATCH_END);
    wk_sync_note(3, WK_SYNC_COPY_TO_HOST);
    wk_sync_note(7, WK_SYNC_SYNCHRONIZE);
    CHECK(log.calls == 3 && log.last_device == 7 && strcmp(log.last_reason, "wick.cuda.synchronize") == 0);
    CHECK(wick_cuda_sync_count(3) == d3 + 2);
    CHECK(wick_cuda_sync_count_for(3, WK_SYNC_BATCH_END) >= 1);
    CHECK(wick_cuda_sync_count(-1) == all0 + 3);
    /* out-of-range devices and reasons are ignored, and read as 0 */
    wk_sync_note(-1, WK_SYNC_SYNCHRONIZE);
    wk_sync_note(WK_SYNC_MAX_DEVICES, WK_SYNC_SYNCHRONIZE);
    wk_sync_note(0, (wk_sync_reason)WK_SYNC_REASON_COUNT);
    CHECK(log.calls == 3 && wick_cuda_sync_count(-1) == all0 + 3);
    CHECK(wick_cuda_sync_count(WK_SYNC_MAX_DEVICES) == 0 && wick_cuda_sync_count_for(0, WK_SYNC_REASON_COUNT) == 0);
    wick_cuda_set_sync_hook(NULL, &log);
    wk_sync_note(3, WK_SYNC_PEER);
    CHECK(log.calls == 3 && wick_cuda_sync_count(3) == d3 + 3);

    /* atomic: threads counting at once lose nothing */
    int64_t d5 = wick_cuda_sync_count_for(5, WK_SYNC_COPY_TO_HOST);
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, note_many, NULL);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    CHECK(wick_cuda_sync_count_for(5, WK_SYNC_COPY_TO_HOST) == d5 + 40000);
}

/* ---- batches ---- */

static void *other_thread_batch(void *arg) {
    int *seen = arg;
    seen[0] = wk_batch_depth();     /* batches are per thread: none here */
    seen[1] = wk_batch_defer(1);
    return NULL;
}

static void test_batches(void) {
    uint64_t devices = 99;
    CHECK(wk_batch_depth() == 0 && wk_batch_defer(0) == 0); /* outside a batch a copy waits */
    CHECK(wk_batch_close(&devices) == -1 && devices == 0);
    CHECK(wick_cuda_end_batch() == WICK_ERR_ARGUMENT && HAS("no batch is open"));

    wick_cuda_begin_batch();
    CHECK(wk_batch_depth() == 1);
    CHECK(wk_batch_defer(0) == 1 && wk_batch_defer(0) == 1 && wk_batch_defer(63) == 1);
    CHECK(wk_batch_defer(-1) == 0 && wk_batch_defer(WK_SYNC_MAX_DEVICES) == 0); /* not a device: waits itself */
    int seen[2] = {-1, -1};
    pthread_t t;
    pthread_create(&t, NULL, other_thread_batch, seen);
    pthread_join(t, NULL);
    CHECK(seen[0] == 0 && seen[1] == 0);

    wick_cuda_begin_batch(); /* nested: the inner end waits for nothing */
    CHECK(wk_batch_defer(2) == 1);
    CHECK(wk_batch_close(&devices) == 0 && devices == 0 && wk_batch_depth() == 1);
    /* the outermost end: each device once */
    CHECK(wk_batch_close(&devices) == 0 && devices == (((uint64_t)1 << 63) | 5u) && wk_batch_depth() == 0);
    /* a new batch starts empty */
    wick_cuda_begin_batch();
    CHECK(wk_batch_close(&devices) == 0 && devices == 0);
    /* the public end with nothing deferred succeeds (and waits for nothing) */
    int64_t before = wick_cuda_sync_count(-1);
    wick_cuda_begin_batch();
    CHECK(wick_cuda_end_batch() == WICK_OK && wick_cuda_sync_count(-1) == before);
}

int main(void) {
    test_error_record();
    test_sync_counting();
    test_batches();
    printf("test_cuda_host: %d checks, %d failures\n", checks, failures);
    return failures != 0;
}
