/* C tests of the NCCL backend's host logic (src/dist/nccl.c), which need no
 * GPU: the dtype and reduction tables, the loader's messages (a missing
 * library, a library that is not NCCL, $WICK_NCCL_LIBRARY), the reason init
 * gives where NCCL cannot be used, and the table's shape. Runs in every build:
 * without CUDA it checks that everything says so. The collectives themselves
 * run on a GPU: tests/dist/nccl.lua and tools/gpu-check.sh's nccl step. */
#include "../src/core/cuda_api.h"
#include "../src/cuda/cuda_host.h" /* WK_SYNC_COLLECTIVE */
#include "../src/dist/nccl_backend.h"

#include <string.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(WICK_WITH_CUDA) && defined(__has_include)
#if __has_include(<nccl.h>)
#include <nccl.h>
#define HAVE_NCCL_H 1
#endif
#endif

#include "check.h"

#define HAS(text) (strstr(wick_last_error(), text) != NULL)

static const char *const NOT_AVAILABLE = "NCCL is not available: ";

static int starts_with(const char *s, const char *prefix) { return s && strncmp(s, prefix, strlen(prefix)) == 0; }

/* Whether this build has NCCL's types (else every mapping fails, saying why). */
static int build_has_nccl(void) {
    int t, o;
    return wk_dist_nccl_types("probe", WICK_FLOAT32, -1, &t, &o) == WICK_OK;
}

static void test_types(void) {
    int t, o;
    if (!build_has_nccl()) {
        CHECK(wk_dist_nccl_types("all_reduce", WICK_FLOAT32, WICK_DIST_SUM, &t, &o) == WICK_ERR_UNSUPPORTED);
        CHECK(starts_with(wick_last_error(), "all_reduce: NCCL is not available: ") && t == -1 && o == -1);
        return;
    }
    /* every real dtype has a type; only bool and uint8 share one (a byte); the
     * complex ones none (the group refuses them before: they never come) */
    int types[WICK_NUM_DTYPES];
    for (int d = 0; d < WICK_NUM_DTYPES; d++) {
        if (wick_dtype_is_complex((wick_dtype)d)) {
            CHECK(wk_dist_nccl_types("broadcast", (wick_dtype)d, -1, &types[d], &o) == WICK_ERR_DTYPE &&
                  HAS("broadcast: NCCL has no type for dtype number"));
            types[d] = -1 - d;
            continue;
        }
        CHECK(wk_dist_nccl_types("broadcast", (wick_dtype)d, -1, &types[d], &o) == WICK_OK && o == -1);
        for (int e = 0; e < d; e++)
            CHECK(types[e] != types[d] || (e == WICK_UINT8 && d == WICK_BOOL));
    }
    CHECK(types[WICK_BOOL] == types[WICK_UINT8]);
#ifdef HAVE_NCCL_H
    /* against NCCL's own enum */
    const struct {
        wick_dtype dtype;
        ncclDataType_t type;
    } want[] = {{WICK_FLOAT32, ncclFloat32}, {WICK_FLOAT64, ncclFloat64}, {WICK_FLOAT16, ncclFloat16},
                {WICK_BFLOAT16, ncclBfloat16}, {WICK_INT64, ncclInt64}, {WICK_INT32, ncclInt32},
                {WICK_UINT8, ncclUint8}, {WICK_BOOL, ncclUint8}};
    CHECK(sizeof want / sizeof *want == WICK_NUM_DTYPES - 2); /* (all but the complex ones) */
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) CHECK(types[want[i].dtype] == (int)want[i].type);
    const struct {
        wick_dist_op op;
        ncclRedOp_t nccl, for_bool;
    } ops[] = {{WICK_DIST_SUM, ncclSum, ncclMax},
               {WICK_DIST_PRODUCT, ncclProd, ncclMin},
               {WICK_DIST_MAX, ncclMax, ncclMax},
               {WICK_DIST_MIN, ncclMin, ncclMin}};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        CHECK(wk_dist_nccl_types("all_reduce", WICK_FLOAT32, ops[i].op, &t, &o) == WICK_OK && o == (int)ops[i].nccl);
        CHECK(wk_dist_nccl_types("all_reduce", WICK_INT64, ops[i].op, &t, &o) == WICK_OK && o == (int)ops[i].nccl &&
              t == (int)ncclInt64);
        /* bool: sum is a logical or, product a logical and, so the result stays 0 or 1 */
        CHECK(wk_dist_nccl_types("all_reduce", WICK_BOOL, ops[i].op, &t, &o) == WICK_OK &&
              o == (int)ops[i].for_bool && t == (int)ncclUint8);
    }
    CHECK(wk_dist_nccl_types("all_reduce", WICK_BFLOAT16, WICK_DIST_AVG, &t, &o) == WICK_OK && o == (int)ncclAvg);
#endif
    /* avg: floating dtypes only */
    for (int d = 0; d < WICK_NUM_DTYPES; d++) {
        wick_status st = wk_dist_nccl_types("all_reduce", (wick_dtype)d, WICK_DIST_AVG, &t, &o);
        if (wick_dtype_is_floating((wick_dtype)d)) CHECK(st == WICK_OK && o >= 0);
        else if (wick_dtype_is_complex((wick_dtype)d)) CHECK(st == WICK_ERR_DTYPE);
        else {
            CHECK(st == WICK_ERR_DTYPE && HAS("all_reduce: op \"avg\" needs a floating dtype, got ") &&
                  HAS(wick_dtype_name((wick_dtype)d)));
        }
    }
    /* values outside the enums */
    CHECK(wk_dist_nccl_types("all_reduce", WICK_FLOAT32, WICK_DIST_NUM_OPS, &t, &o) == WICK_ERR_ARGUMENT &&
          HAS("all_reduce: NCCL has no reduction for op number"));
    CHECK(wk_dist_nccl_types("all_reduce", WICK_NUM_DTYPES, -1, &t, &o) == WICK_ERR_DTYPE &&
          HAS("all_reduce: NCCL has no type for dtype number 10") && t == -1);
    CHECK(wk_dist_nccl_types("all_reduce", (wick_dtype)-1, -1, &t, &o) == WICK_ERR_DTYPE);
}

static void test_loader_messages(void) {
    char err[700];
    int version = -1;
    /* a file that is not there: dlerror's text, which names it */
    CHECK(wk_dist_nccl_try_library("/nonexistent/libnccl.so.2", &version, err, sizeof err) == 0 && version == 0);
    CHECK(starts_with(err, NOT_AVAILABLE));
    if (build_has_nccl()) {
        CHECK(strstr(err, "/nonexistent/libnccl.so.2") != NULL);
        /* a library that loads but is not NCCL */
        CHECK(wk_dist_nccl_try_library("libc.so.6", &version, err, sizeof err) == 0 && version == 0);
        CHECK(starts_with(err, NOT_AVAILABLE) && strstr(err, "libc.so.6 has no function ncclGetVersion"));
        /* a message cut to a tiny buffer stays a string */
        char tiny[8];
        CHECK(wk_dist_nccl_try_library("/nonexistent/x.so", &version, tiny, sizeof tiny) == 0 &&
              strlen(tiny) == sizeof tiny - 1);
    }
    /* stand-ins (tests/fake_nccl.c, built next to this test; absent where
       only the test binary was carried, e.g. to a GPU machine) */
#if defined(FAKE_NCCL_GOOD) && defined(FAKE_NCCL_OLD) && defined(FAKE_NCCL_NOSEND)
    if (build_has_nccl() && access(FAKE_NCCL_GOOD, R_OK) == 0) {
        CHECK(wk_dist_nccl_try_library(FAKE_NCCL_GOOD, &version, err, sizeof err) == 1 && version == 22809);
        CHECK(wk_dist_nccl_try_library(FAKE_NCCL_OLD, &version, err, sizeof err) == 0 && version == 0);
        CHECK(starts_with(err, NOT_AVAILABLE) && strstr(err, FAKE_NCCL_OLD) &&
              strstr(err, " is NCCL 2.8.4, wick needs 2.10 or newer"));
        CHECK(wk_dist_nccl_try_library(FAKE_NCCL_NOSEND, &version, err, sizeof err) == 0 && version == 0);
        CHECK(starts_with(err, NOT_AVAILABLE) &&
              strstr(err, "has no function ncclSend (NCCL 2.10 or newer is needed)"));
    } else {
        printf("test_dist_nccl: the stand-in libraries are not here: their checks skipped\n");
    }
#endif
    /* the real library, where this machine has it: its version is what the process loads */
    int have = wk_dist_nccl_try_library("libnccl.so.2", &version, err, sizeof err);
    if (have) {
        CHECK(version >= 21000);
        int loaded = wk_dist_nccl_version();
        CHECK(loaded == 0 || loaded == version || getenv("WICK_NCCL_LIBRARY"));
        printf("test_dist_nccl: libnccl.so.2 loads here, version code %d\n", version);
    } else {
        CHECK(version == 0 && starts_with(err, NOT_AVAILABLE));
        printf("test_dist_nccl: libnccl.so.2 does not load here: %s\n", err);
    }
}

/* What init and the default backend's choice see: usable exactly when NCCL
 * loads and a GPU is present, and init fails with the reason otherwise. */
static void test_usable(void) {
    const char *why = wk_dist_nccl_why();
    int usable = wk_dist_nccl_usable();
    CHECK(usable == (why == NULL));
    CHECK(wk_dist_nccl_usable() == usable); /* the same answer again (loaded once) */
    if (usable) {
        CHECK(wick_cuda_device_count() > 0 && wk_dist_nccl_version() >= 21000);
        return; /* init would bootstrap over MPI: tests/dist/nccl.lua runs it */
    }
    CHECK(starts_with(why, NOT_AVAILABLE));
    if (wk_dist_nccl_version() > 0) CHECK(wick_cuda_device_count() == 0 && strstr(why, "no CUDA GPU"));
    wk_dist_group g;
    memset(&g, 0, sizeof g);
    g.be = &wk_dist_nccl_backend;
    g.size = 1;
    g.timeout_s = 60;
    CHECK(wk_dist_nccl_backend.init(&g) != WICK_OK);
    CHECK(starts_with(wick_last_error(),
                      "wick.distributed.init_process_group: backend 'nccl': NCCL is not available: "));
    CHECK(strstr(wick_last_error(), why) != NULL && g.backend_state == NULL);
    wk_dist_nccl_backend.destroy(&g); /* nothing to free: harmless */
    wk_dist_nccl_abort(&g);
    wk_dist_nccl_abort(NULL);
}

/* $WICK_NCCL_LIBRARY names the one file to load (read at the first load, so
 * in a child process forked before anything here loaded NCCL). */
static void test_env_library(void) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        setenv("WICK_NCCL_LIBRARY", "/nonexistent/wick-test-nccl.so", 1);
        const char *why = wk_dist_nccl_why();
        int ok = why && starts_with(why, NOT_AVAILABLE) && !wk_dist_nccl_usable() && wk_dist_nccl_version() == 0 &&
                 (!build_has_nccl() || strstr(why, "/nonexistent/wick-test-nccl.so"));
        if (!ok) fprintf(stderr, "child: WICK_NCCL_LIBRARY gave: %s\n", why ? why : "(usable)");
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* The core's stream and event functions that nccl.c uses (src/core/cuda_api.h):
 * clear errors without a GPU; on a GPU, an event recorded on the device's
 * stream completes after the host waits for it. */
static void test_gpu_helpers(void) {
    void *stream = (void *)1, *event = (void *)1;
    if (wick_cuda_device_count() == 0) {
        CHECK(wk_gpu_stream(0, "all_reduce", &stream) == WICK_ERR_DEVICE && stream == NULL && HAS("all_reduce"));
        CHECK(wk_gpu_event_record(0, "barrier", &event) == WICK_ERR_DEVICE && event == NULL && HAS("barrier"));
        CHECK(HAS("wick.cuda.is_available() is false"));
        wk_gpu_event_destroy(NULL);
        return;
    }
    CHECK(wk_gpu_stream(0, "test", &stream) == WICK_OK && stream != NULL);
    void *again = NULL;
    CHECK(wk_gpu_stream(0, "test", &again) == WICK_OK && again == stream); /* one stream per device */
    CHECK(wk_gpu_event_record(0, "test", &event) == WICK_OK && event != NULL);
    int64_t waits = wick_cuda_sync_count_for(0, WK_SYNC_COLLECTIVE);
    CHECK(wk_gpu_event_wait(event, 0, "test") == WICK_OK);
    CHECK(wk_gpu_event_synchronize(event, 0, "test") == WICK_OK);
    CHECK(wick_cuda_sync_count_for(0, WK_SYNC_COLLECTIVE) == waits + 1); /* counted as a wait */
    CHECK(wk_gpu_event_query(event, 0, "test") == 1);
    wk_gpu_event_destroy(event);
    CHECK(wk_gpu_stream(wick_cuda_device_count(), "test", &stream) == WICK_ERR_DEVICE && stream == NULL);
}

static void test_table(void) {
    const wk_dist_backend *be = &wk_dist_nccl_backend;
    CHECK(strcmp(be->name, "nccl") == 0 && be->device_type == WICK_CUDA && be->asynchronous == 1);
    CHECK(be->init && be->destroy);
    if (build_has_nccl()) {
        CHECK(be->all_reduce && be->broadcast && be->all_gather && be->reduce_scatter && be->send && be->recv &&
              be->barrier);
        CHECK(be->event_record && be->event_query && be->event_wait && be->event_release);
    }
}

int main(void) {
    test_env_library(); /* first: its child must be the first to load NCCL */
    test_table();
    test_types();
    test_loader_messages();
    test_gpu_helpers();
    test_usable();
    printf("test_dist_nccl: %d checks, %d failures\n", checks, failures);
    return failures != 0;
}
