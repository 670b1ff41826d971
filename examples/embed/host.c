/* A C host that embeds wick: its own lua_State per session, wick opened with
 * luaopen_wick, a model loaded from a checkpoint, and a frame loop that hands
 * the host's own float arrays (wrapped with wick_from_host, not copied) to Lua.
 *
 *   wick_embed_host CHECKPOINT MODEL_LUA [FRAMES]
 *
 * It runs several sessions one after the other (open, frames, close: memory
 * must come back each time), then 4 threads at once, each with its own state,
 * while the main thread changes what is per process under them: the thread
 * count, the random seed, the log callback and its user data, and tries the
 * allocator (wick.h, "embedding in a host": each is safe to change while other
 * states run). All CPU tensor memory goes through the host's allocator
 * (wick_set_allocator) and wick's warnings through its log (wick_set_log); at
 * the end every byte must have been given back and every wrapped buffer
 * released. ctest `embed` runs it, and `make tsan` under ThreadSanitizer. */
#include "wick.h"
#include "wick_embed.h"

#include <lauxlib.h>
#include <lualib.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the host's allocator: malloc, counted ---- */
static int64_t bytes_out, blocks_out, allocations;

static void *host_alloc(size_t n, void *ud) {
    (void)ud;
    void *p = NULL;
    if (posix_memalign(&p, 64, n) != 0) return NULL;
    __atomic_add_fetch(&bytes_out, (int64_t)n, __ATOMIC_RELAXED);
    __atomic_add_fetch(&blocks_out, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&allocations, 1, __ATOMIC_RELAXED);
    return p;
}

static void host_free(void *p, size_t n, void *ud) {
    (void)ud;
    __atomic_sub_fetch(&bytes_out, (int64_t)n, __ATOMIC_RELAXED);
    __atomic_sub_fetch(&blocks_out, 1, __ATOMIC_RELAXED);
    free(p);
}

/* ---- the host's log ---- */
static int log_count, debug_count;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

/* ud: the name of the log, which the main thread changes while states run */
static void host_log(int level, const char *msg, void *ud) {
    pthread_mutex_lock(&log_lock);
    if (level == WICK_LOG_DEBUG) { /* the frames' own messages: counted only */
        debug_count++;
    } else {
        log_count++;
        fprintf(stdout, "[%s log, level %d] %s\n", (const char *)ud, level, msg);
    }
    pthread_mutex_unlock(&log_lock);
}

/* ---- wrapped frames: released exactly once each ---- */
typedef struct {
    int wrapped, released; /* atomic */
} frame_stats;

static void frame_released(void *ctx) { __atomic_add_fetch(&((frame_stats *)ctx)->released, 1, __ATOMIC_RELAXED); }

static const char *checkpoint, *model_path;
static int frames = 8;
/* the first session's answers: every later session and thread must agree */
#define MAX_FRAMES 1024
static int ref_class[MAX_FRAMES];
static double ref_prob[MAX_FRAMES];
static int have_ref;

/* A fake 28 x 28 image for frame f: a bright rectangle whose size moves. */
static void draw(float *img, int f) {
    int w = 4 + (f * 3) % 20, h = 6 + (f * 5) % 18;
    for (int y = 0; y < 28; y++)
        for (int x = 0; x < 28; x++) img[y * 28 + x] = (y >= 14 - h / 2 && y < 14 + h / 2 && x >= 14 - w / 2 && x < 14 + w / 2) ? 0.9f : 0.0f;
}

static int lua_failed(lua_State *L, const char *tag, const char *what) {
    fprintf(stderr, "host %s: %s: %s\n", tag, what, lua_tostring(L, -1) ? lua_tostring(L, -1) : "(no message)");
    return 1;
}

/* One session: open a state, load the model, run the frames, close. 0 = ok. */
static int session(const char *tag) {
    frame_stats stats = {0, 0};
    float *img = malloc(28 * 28 * sizeof *img); /* the host's buffer, reused by every frame */
    lua_State *L = luaL_newstate();
    if (!L || !img) {
        fprintf(stderr, "host %s: out of memory\n", tag);
        free(img);
        return 1;
    }
    int failed = 0;
    luaL_openlibs(L);
    lua_pushcfunction(L, luaopen_wick);
    if (lua_pcall(L, 0, 1, 0)) {
        failed = lua_failed(L, tag, "opening wick");
        goto done;
    }
    lua_setglobal(L, "wick");
    if (luaL_loadfile(L, model_path) || lua_pcall(L, 0, 1, 0)) {
        failed = lua_failed(L, tag, "loading the model script");
        goto done;
    }
    int M = lua_gettop(L);
    lua_getfield(L, M, "load");
    lua_pushstring(L, checkpoint);
    if (lua_pcall(L, 1, 0, 0)) {
        failed = lua_failed(L, tag, "loading the checkpoint");
        goto done;
    }
    for (int f = 0; f < frames && !failed; f++) {
        draw(img, f);
        wick_tensor *t = NULL;
        int64_t sizes[2] = {28, 28};
        if (wick_from_host(&t, img, 2, sizes, WICK_FLOAT32, frame_released, &stats) != WICK_OK) {
            fprintf(stderr, "host %s: wick_from_host: %s\n", tag, wick_last_error());
            failed = 1;
            break;
        }
        stats.wrapped++;
        if (wick_tensor_data(t) != (void *)img) { /* no copy */
            fprintf(stderr, "host %s: the tensor does not use the host's buffer\n", tag);
            failed = 1;
        }
        lua_getfield(L, M, "predict");
        wick_lua_push_tensor(L, t); /* Lua takes its own reference */
        wick_tensor_release(t);
        if (lua_pcall(L, 1, 2, 0)) {
            failed = lua_failed(L, tag, "predict");
            break;
        }
        int cls = (int)lua_tointeger(L, -2);
        double p = lua_tonumber(L, -1);
        lua_pop(L, 2);
        if (cls < 0 || cls > 9 || !(p > 0 && p <= 1)) {
            fprintf(stderr, "host %s: frame %d: bad prediction %d (p = %g)\n", tag, f, cls, p);
            failed = 1;
        }
        printf("%s frame %d: class %d, probability %.3f\n", tag, f, cls, p);
        /* the process-wide log and random generator, from every thread */
        wick_log(WICK_LOG_DEBUG, "frame done");
        wick_tensor *noise = NULL;
        int64_t n_noise = 1000;
        if (wick_rand(&noise, 1, &n_noise, wick_default_options()) != WICK_OK) {
            fprintf(stderr, "host %s: wick_rand: %s\n", tag, wick_last_error());
            failed = 1;
        }
        wick_tensor_release(noise);
        if (!have_ref) ref_class[f] = cls, ref_prob[f] = p;
        else if (cls != ref_class[f] || p - ref_prob[f] > 1e-6 || ref_prob[f] - p > 1e-6) {
            fprintf(stderr, "host %s: frame %d: class %d (p %g) differs from the first session's %d (p %g)\n", tag, f,
                    cls, p, ref_class[f], ref_prob[f]);
            failed = 1;
        }
    }
done:
    lua_close(L); /* collects every tensor: each wrapped frame is released now */
    if (stats.released != stats.wrapped) {
        fprintf(stderr, "host %s: %d frames wrapped, %d released\n", tag, stats.wrapped, stats.released);
        failed = 1;
    }
    free(img); /* only now: wick is done with it */
    return failed;
}

static int threads_done; /* atomic */

static void *thread_main(void *arg) {
    char tag[32];
    snprintf(tag, sizeof tag, "thread %d", (int)(intptr_t)arg);
    int failed = session(tag);
    __atomic_add_fetch(&threads_done, 1, __ATOMIC_RELEASE);
    return (void *)(intptr_t)failed;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s CHECKPOINT MODEL_LUA [FRAMES]\n", argv[0]);
        return 2;
    }
    checkpoint = argv[1];
    model_path = argv[2];
    if (argc > 3) frames = atoi(argv[3]);
    if (frames < 1 || frames > MAX_FRAMES) frames = 8;
    int failed = 0;

    /* per process, before the first tensor */
    if (wick_set_allocator(host_alloc, host_free, NULL) != WICK_OK) {
        fprintf(stderr, "host: wick_set_allocator: %s\n", wick_last_error());
        return 1;
    }
    wick_set_log(host_log, "host");
    wick_set_num_threads(2);

    /* the allocator cannot change under a live tensor */
    wick_tensor *t = NULL;
    int64_t n = 1000;
    if (wick_empty(&t, 1, &n, wick_default_options()) != WICK_OK) return 1;
    if (wick_set_allocator(NULL, NULL, NULL) == WICK_OK) {
        fprintf(stderr, "host: wick_set_allocator succeeded while a tensor was alive\n");
        failed = 1;
    } else {
        printf("host: wick_set_allocator with a live tensor: \"%s\" (as expected)\n", wick_last_error());
    }
    wick_tensor_release(t);

    /* warnings from Lua reach the host's log */
    {
        lua_State *L = luaL_newstate();
        luaL_openlibs(L);
        lua_pushcfunction(L, luaopen_wick);
        if (lua_pcall(L, 0, 1, 0) || luaL_dostring(L, "require('wick')._warn('hello from Lua')")) {
            failed |= lua_failed(L, "main", "log check");
        }
        lua_close(L);
        if (log_count != 1) {
            fprintf(stderr, "host: expected 1 log message, got %d\n", log_count);
            failed = 1;
        }
    }

    for (int i = 0; i < 3; i++) { /* open, run, close: again and again */
        char tag[32];
        snprintf(tag, sizeof tag, "session %d", i + 1);
        failed |= session(tag);
        have_ref = 1;
        printf("after %s: %lld bytes in %lld blocks held by wick\n", tag, (long long)bytes_out, (long long)blocks_out);
        if (bytes_out != 0) {
            fprintf(stderr, "host: %s left %lld bytes of tensor memory allocated\n", tag, (long long)bytes_out);
            failed = 1;
        }
    }

    debug_count = 0; /* the threads' frames only */
    pthread_t threads[4];
    for (int i = 0; i < 4; i++)
        if (pthread_create(&threads[i], NULL, thread_main, (void *)(intptr_t)(i + 1))) {
            fprintf(stderr, "host: cannot start a thread\n");
            return 1;
        }
    /* meanwhile, what is per process changes under the running states */
    int changes = 0, allocator_refused = 0;
    while (__atomic_load_n(&threads_done, __ATOMIC_ACQUIRE) < 4) {
        wick_set_num_threads(1 + changes % 3);
        wick_manual_seed((uint64_t)changes);
        wick_set_log(host_log, changes % 2 ? "host" : "host (again)");
        /* the same allocator again: refused while any tensor memory is out */
        if (wick_set_allocator(host_alloc, host_free, NULL) != WICK_OK) allocator_refused++;
        changes++;
        struct timespec pause = {0, 200000};
        nanosleep(&pause, NULL);
    }
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(threads[i], &r);
        failed |= (int)(intptr_t)r;
    }
    wick_set_log(host_log, "host");
    printf("host: %d changes of the thread count, seed and log while 4 states ran (allocator refused %d times); "
           "%d frame messages logged\n", changes, allocator_refused, debug_count);
    if (debug_count != 4 * frames) {
        fprintf(stderr, "host: expected %d frame messages, got %d\n", 4 * frames, debug_count);
        failed = 1;
    }
    printf("after 4 threads: %lld bytes in %lld blocks held by wick (%lld allocations in all)\n", (long long)bytes_out,
           (long long)blocks_out, (long long)allocations);
    if (bytes_out != 0 || blocks_out != 0) {
        fprintf(stderr, "host: tensor memory left allocated after every state closed\n");
        failed = 1;
    }
    /* with nothing alive, the default allocator can come back */
    if (wick_set_allocator(NULL, NULL, NULL) != WICK_OK) {
        fprintf(stderr, "host: wick_set_allocator(NULL...) failed with nothing alive: %s\n", wick_last_error());
        failed = 1;
    }
    wick_set_log(NULL, NULL);
    printf(failed ? "embed: FAILED\n" : "embed: ok\n");
    return failed;
}
