/* The dist layer's C API (include/wick_dist.h) without Lua, in one process:
 * op names, errors before init and for bad arguments (NULL tensors, ranks out
 * of range, wrong devices, shapes), and, in an MPI build, a world of one
 * (MPI's singleton start): every collective synchronous and async, work
 * handles, destroy and a second group. Without MPI: every call is the
 * "not available" error. The multi-rank tests are the Lua files of tests/dist. */
#include <wick.h>

#include "../src/dist/dist.h" /* wk_dist_init_backend: the stand-in asynchronous backend */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures, checks;

#define CHECK(cond, what)                                                     \
    do {                                                                      \
        checks++;                                                             \
        if (!(cond)) {                                                        \
            failures++;                                                       \
            fprintf(stderr, "FAILED line %d: %s (last error: %s)\n", __LINE__, what, wick_last_error()); \
        }                                                                     \
    } while (0)

/* st failed, and the message holds `text` */
static int fails_with(wick_status st, const char *text) {
    return st != WICK_OK && strstr(wick_last_error(), text) != NULL;
}

static wick_tensor *filled(int64_t n, double v) {
    wick_tensor *t = NULL;
    if (wick_full(&t, 1, &n, v, wick_default_options())) return NULL;
    return t;
}

static int all_equal(wick_tensor *t, double v) {
    for (int64_t i = 0; i < wick_tensor_numel(t); i++)
        if (wick_get_double(t, i) != v) return 0;
    return 1;
}

static void test_names(void) {
    wick_dist_op op;
    CHECK(strcmp(wick_dist_op_name(WICK_DIST_PRODUCT), "product") == 0, "op name");
    CHECK(wick_dist_op_name(WICK_DIST_NUM_OPS) == NULL, "op name out of range");
    CHECK(wick_dist_op_parse("avg", &op) == WICK_OK && op == WICK_DIST_AVG, "parse avg");
    CHECK(fails_with(wick_dist_op_parse("mean", &op), "unknown reduce op 'mean'"), "parse mean");
    CHECK(fails_with(wick_dist_op_parse(NULL, &op), "unknown reduce op"), "parse NULL");
}

static void test_before_init(void) {
    const char *want = wick_dist_is_available() ? "not initialized" : "not available";
    int r;
    wick_tensor *t = filled(2, 1);
    CHECK(!wick_dist_is_initialized(), "not initialized");
    CHECK(fails_with(wick_dist_rank(&r), want), "rank before init");
    CHECK(fails_with(wick_dist_all_reduce(t, WICK_DIST_SUM, NULL), want), "all_reduce before init");
    CHECK(fails_with(wick_dist_barrier(NULL), want), "barrier before init");
    uint64_t predicted = 0, full = 0;
    CHECK(fails_with(wick_dist_check_counts(&predicted, &full), want), "check_counts before init");
    CHECK(fails_with(wick_dist_check_counts(NULL, &full), "must not be NULL"), "check_counts with NULL");
    CHECK(wick_dist_try_all_reduce(t, WICK_DIST_SUM) == 1, "the FFI path declines before init");
    CHECK(fails_with(wick_dist_destroy(), want), "destroy before init");
    CHECK(fails_with(wick_dist_work_wait(NULL), "NULL work"), "wait on NULL");
    CHECK(wick_dist_work_is_completed(NULL) == 0, "is_completed(NULL)");
    CHECK(wick_dist_work_seconds(NULL) < 0, "seconds(NULL)");
    wick_dist_work_release(NULL);
    CHECK(fails_with(wick_dist_init("gloo", 0), wick_dist_is_available() ? "unknown backend 'gloo'" : want),
          "unknown backend");
    if (wick_dist_is_available())
        CHECK(fails_with(wick_dist_init("mpi", -1), "timeout must be a positive number"), "negative timeout");
    else
        CHECK(strstr(wick_dist_unavailable_reason(), "MPI") != NULL, "the reason names MPI");
    wick_tensor_release(t);
}

static void test_world_of_one(void) {
    int r = -1, n = -1, local = -1;
    const char *backend = NULL;
    double timeout = 0;
    CHECK(wick_dist_init("mpi", 20) == WICK_OK, "init");
    CHECK(wick_dist_rank(&r) == WICK_OK && r == 0, "rank 0");
    CHECK(wick_dist_world_size(&n) == WICK_OK && n == 1, "world of 1");
    CHECK(wick_dist_local_rank(&local) == WICK_OK && local == 0, "local rank 0");
    CHECK(wick_dist_backend(&backend) == WICK_OK && strcmp(backend, "mpi") == 0, "backend");
    CHECK(wick_dist_timeout(&timeout) == WICK_OK && timeout == 20, "timeout");
    CHECK(fails_with(wick_dist_init(NULL, 0), "already initialized"), "init twice");

    wick_tensor *t = filled(5, 3), *out = filled(5, 0), *meta = NULL;
    int64_t four = 4;
    wick_options mo = wick_default_options();
    mo.device.type = WICK_META;
    CHECK(wick_empty(&meta, 1, &four, mo) == WICK_OK, "meta tensor");
    /* bad arguments */
    CHECK(fails_with(wick_dist_all_reduce(NULL, WICK_DIST_SUM, NULL), "the tensor is NULL"), "NULL tensor");
    CHECK(fails_with(wick_dist_all_reduce(t, (wick_dist_op)42, NULL), "unknown reduce op 42"), "bad op");
    CHECK(fails_with(wick_dist_all_reduce(meta, WICK_DIST_SUM, NULL), "is on meta, but the mpi backend moves cpu"),
          "meta tensor");
    CHECK(fails_with(wick_dist_broadcast(t, 1, NULL), "src must be a rank from 0 to 0, got 1"), "src range");
    CHECK(fails_with(wick_dist_send(t, 0, NULL), "own rank"), "send to self");
    CHECK(fails_with(wick_dist_all_gather(NULL, 1, t, NULL), "the list must hold world size (1) tensors, got 0"),
          "NULL list");
    wick_tensor *list2[2] = {out, out};
    CHECK(fails_with(wick_dist_all_gather(list2, 2, t, NULL), "got 2"), "long list");
    wick_tensor *nulls[1] = {NULL};
    CHECK(fails_with(wick_dist_all_gather(nulls, 1, t, NULL), "list[1] is NULL"), "NULL in the list");
    wick_tensor *short4 = filled(4, 0);
    CHECK(fails_with(wick_dist_reduce_scatter_tensor(short4, t, WICK_DIST_SUM, NULL),
                     "the tensor must hold world size (1) x out's 4 elements, got 5"),
          "reduce_scatter sizes");
    CHECK(fails_with(wick_dist_all_gather_into_tensor(short4, t, NULL), "out must hold world size (1)"),
          "all_gather_into_tensor sizes");
    wick_tensor_release(short4);
    /* collectives */
    CHECK(wick_dist_all_reduce(t, WICK_DIST_AVG, NULL) == WICK_OK && all_equal(t, 3), "avg");
    CHECK(wick_dist_broadcast(t, 0, NULL) == WICK_OK && all_equal(t, 3), "broadcast");
    CHECK(wick_dist_all_gather_into_tensor(out, t, NULL) == WICK_OK && all_equal(out, 3), "gather into");
    wick_fill_(out, 0);
    CHECK(wick_dist_reduce_scatter_tensor(out, t, WICK_DIST_AVG, NULL) == WICK_OK && all_equal(out, 3),
          "reduce_scatter avg");
    wick_tensor *list1[1] = {out};
    wick_fill_(out, 0);
    CHECK(wick_dist_all_gather(list1, 1, t, NULL) == WICK_OK && all_equal(out, 3), "all_gather");
    wick_dist_work *w = NULL;
    CHECK(wick_dist_all_reduce(t, WICK_DIST_MAX, &w) == WICK_OK && w, "async all_reduce");
    CHECK(wick_dist_work_wait(w) == WICK_OK && wick_dist_work_is_completed(w), "wait");
    CHECK(wick_dist_work_seconds(w) >= 0, "seconds after completion");
    wick_dist_work_release(w);
    w = NULL;
    CHECK(wick_dist_barrier(&w) == WICK_OK && wick_dist_work_wait(w) == WICK_OK, "async barrier");
    wick_dist_work_release(w);
    /* handles released before completion, tensors released right after the call */
    for (int i = 0; i < 10; i++) {
        wick_tensor *x = filled(1000, i);
        w = NULL;
        CHECK(wick_dist_all_reduce(x, WICK_DIST_SUM, &w) == WICK_OK, "async, released at once");
        wick_tensor_release(x);
        wick_dist_work_release(w);
    }
    CHECK(wick_dist_all_reduce(t, WICK_DIST_SUM, NULL) == WICK_OK && all_equal(t, 3), "sync after async");
    CHECK(wick_dist_destroy() == WICK_OK && !wick_dist_is_initialized(), "destroy");
    CHECK(wick_dist_init(NULL, 0) == WICK_OK, "a second group");
    CHECK(wick_dist_timeout(&timeout) == WICK_OK && timeout == 60, "default timeout 60 s");
    CHECK(wick_dist_destroy() == WICK_OK, "destroy the second group");
    wick_tensor_release(t);
    wick_tensor_release(out);
    wick_tensor_release(meta);
}

/* ---- the engine's paths for asynchronous backends (NCCL's), on a stand-in:
 * the mpi backend's entries, with events that complete after three polls ---- */
typedef struct fake_event {
    int polls;
} fake_event;
static int fake_records, fake_releases, fake_waits;

static wick_status fake_record(wk_dist_group *g, int device, void **event) {
    fake_event *e = malloc(sizeof *e);
    if (!e) return wick_fail(WICK_ERR_OOM, "fake: out of memory");
    e->polls = 3;
    *event = e;
    __atomic_add_fetch(&fake_records, 1, __ATOMIC_RELAXED);
    return WICK_OK;
}
static int fake_query(wk_dist_group *g, void *event) {
    fake_event *e = event;
    return __atomic_sub_fetch(&e->polls, 1, __ATOMIC_ACQ_REL) <= 0;
}
static wick_status fake_wait(wk_dist_group *g, void *event) {
    __atomic_store_n(&((fake_event *)event)->polls, 0, __ATOMIC_RELEASE);
    __atomic_add_fetch(&fake_waits, 1, __ATOMIC_RELAXED);
    return WICK_OK;
}
static void fake_release(void *event) {
    free(event);
    __atomic_add_fetch(&fake_releases, 1, __ATOMIC_RELAXED);
}

static void test_asynchronous_backend(void) {
    wk_dist_backend fake = wk_dist_mpi_backend;
    fake.name = "fake-async";
    fake.asynchronous = 1;
    fake.event_record = fake_record;
    fake.event_query = fake_query;
    fake.event_wait = fake_wait;
    fake.event_release = fake_release;
    CHECK(wk_dist_init_backend(&fake, 2) == WICK_OK, "init with an asynchronous backend");
    const char *name = NULL;
    CHECK(wick_dist_backend(&name) == WICK_OK && strcmp(name, "fake-async") == 0, "its name");
    /* synchronous calls: queued, staged and written back on the calling thread */
    wick_tensor *t = filled(6, 2), *v = NULL, *tt = NULL;
    int64_t sizes[2] = {2, 3};
    CHECK(wick_view(&v, t, 2, sizes) == WICK_OK && wick_transpose(&tt, v, 0, 1) == WICK_OK, "a transposed view");
    CHECK(wick_dist_all_reduce(tt, WICK_DIST_AVG, NULL) == WICK_OK && all_equal(t, 2), "avg, staged");
    CHECK(wick_dist_broadcast(t, 0, NULL) == WICK_OK && all_equal(t, 2), "broadcast");
    /* an async handle: completes when the event does */
    wick_dist_work *w = NULL;
    CHECK(wick_dist_all_reduce(t, WICK_DIST_SUM, &w) == WICK_OK && w, "async");
    int polls = 0;
    while (!wick_dist_work_is_completed(w) && polls < 100) polls++;
    CHECK(wick_dist_work_is_completed(w), "completed once its event is");
    CHECK(wick_dist_work_wait(w) == WICK_OK, "wait");
    CHECK(wick_dist_work_seconds(w) >= 0, "seconds after wait");
    wick_dist_work_release(w);
    /* handles dropped at once; the watchdog's list keeps the work until its event is done */
    for (int i = 0; i < 5; i++) {
        w = NULL;
        CHECK(wick_dist_all_reduce(t, WICK_DIST_MAX, &w) == WICK_OK, "async, dropped");
        wick_dist_work_release(w);
    }
    CHECK(fails_with(wick_dist_all_reduce(NULL, WICK_DIST_SUM, NULL), "NULL"), "errors as before");
    /* a handle still held when the group is destroyed (a Lua handle collected
     * at lua_close, after destroy_process_group): released afterwards, without
     * the group (the first GPU run crashed here, reading the freed group) */
    wick_dist_work *held = NULL;
    CHECK(wick_dist_all_reduce(t, WICK_DIST_SUM, &held) == WICK_OK && held, "async, held past destroy");
    CHECK(wick_dist_work_wait(held) == WICK_OK, "its wait");
    CHECK(wick_dist_destroy() == WICK_OK, "destroy drains the pending events");
    CHECK(fake_releases == fake_records - 1, "the held handle keeps its event");
    CHECK(wick_dist_work_is_completed(held) && wick_dist_work_wait(held) == WICK_OK, "and stays complete");
    wick_dist_work_release(held);
    CHECK(fake_records == 9 && fake_releases == fake_records,
          "every op recorded one event, and every event was released");
    wick_tensor_release(tt);
    wick_tensor_release(v);
    wick_tensor_release(t);
}

int main(void) {
    test_names();
    test_before_init();
    if (wick_dist_is_available()) {
        test_world_of_one();
        test_asynchronous_backend();
    }
    printf("test_dist: %d checks, %d failed%s\n", checks, failures,
           wick_dist_is_available() ? "" : " (built without MPI: no world of one)");
    return failures ? 1 : 0;
}
