/* Interrupts reach only the state (or thread) they are aimed at, and an
 * interrupted op never returns a partial result (wick.h "interrupts").
 *
 *   test_interrupt [ROUNDS]
 *
 * Part 1, Lua: states A and B on two threads run `x + 1` over 4 Mi elements
 * (long enough to run in pieces) again and again. The main thread keeps
 * interrupting A (wick_lua_interrupt) and raising the process's default flag
 * (wick_interrupt), which no state watches. B must finish every round with
 * every element right; each of A's rounds either succeeds with every element
 * right or fails with "interrupted", and some must fail, some of them part way
 * through the kernel.
 * Part 2, C without Lua: the same with two threads watching flags of their own
 * (wick_interrupt_watch) and the C API's status: WICK_ERR_INTERRUPTED, *out
 * untouched. */
#include "check.h"
#include "wick_embed.h"

#include <lauxlib.h>
#include <lualib.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N ((int64_t)1 << 22)

static int rounds = 60;
static int done_a, done_b; /* atomic: the worker finished */

typedef struct {
    const char *name;
    lua_State *L;
    int ok, interrupted, in_kernel, wrong, other;
    int *done;
} lua_worker;

/* y[i] == i + 1 for every element: x is arange(N) */
static int64_t count_wrong(const wick_tensor *y) {
    if (!y || wick_tensor_numel(y) != N || wick_tensor_dtype(y) != WICK_FLOAT32) return N;
    const float *p = wick_tensor_data(y);
    int64_t wrong = 0;
    for (int64_t i = 0; i < N; i++) wrong += p[i] != (float)(i + 1);
    return wrong;
}

static lua_State *open_state(void) {
    lua_State *L = luaL_newstate();
    luaL_openlibs(L);
    lua_pushcfunction(L, luaopen_wick);
    if (lua_pcall(L, 0, 1, 0)) {
        fprintf(stderr, "opening wick: %s\n", lua_tostring(L, -1));
        exit(1);
    }
    lua_setglobal(L, "wick");
    wick_tensor *x = NULL;
    if (wick_arange(&x, 0, (double)N, 1, wick_default_options()) != WICK_OK) {
        fprintf(stderr, "arange: %s\n", wick_last_error());
        exit(1);
    }
    wick_lua_push_tensor(L, x);
    wick_tensor_release(x);
    lua_setglobal(L, "x");
    if (luaL_dostring(L, "function step() return x + 1 end")) exit(1);
    return L;
}

static void *lua_main(void *arg) {
    lua_worker *w = arg;
    for (int r = 0; r < rounds; r++) {
        lua_getglobal(w->L, "step");
        if (lua_pcall(w->L, 0, 1, 0) == 0) {
            int64_t wrong = count_wrong(wick_lua_to_tensor(w->L, -1));
            if (wrong) {
                fprintf(stderr, "%s round %d: success with %lld wrong elements\n", w->name, r, (long long)wrong);
                w->wrong++;
            } else {
                w->ok++;
            }
        } else {
            const char *msg = lua_tostring(w->L, -1);
            if (msg && strstr(msg, "interrupted")) {
                w->interrupted++;
                w->in_kernel += strstr(msg, "interrupted (in") == NULL; /* not the op's entry check */
            } else {
                fprintf(stderr, "%s round %d: %s\n", w->name, r, msg ? msg : "(no message)");
                w->other++;
            }
        }
        lua_pop(w->L, 1);
        lua_gc(w->L, LUA_GCCOLLECT, 0);
    }
    __atomic_store_n(w->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void pause_us(long us) {
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

static void lua_part(void) {
    lua_worker a = {"state A", open_state(), 0, 0, 0, 0, 0, &done_a};
    lua_worker b = {"state B", open_state(), 0, 0, 0, 0, 0, &done_b};
    CHECK(wick_lua_interrupt_flag(a.L) != wick_lua_interrupt_flag(b.L));
    CHECK(wick_lua_interrupt(NULL) == 0);
    pthread_t ta, tb;
    pthread_create(&ta, NULL, lua_main, &a);
    pthread_create(&tb, NULL, lua_main, &b);
    unsigned seed = 1;
    while (!__atomic_load_n(&done_a, __ATOMIC_ACQUIRE) || !__atomic_load_n(&done_b, __ATOMIC_ACQUIRE)) {
        seed = seed * 1103515245u + 12345u;
        pause_us(200 + (long)(seed >> 16) % 3000);
        if (!__atomic_load_n(&done_a, __ATOMIC_ACQUIRE)) CHECK(wick_lua_interrupt(a.L) == 1); /* main thread */
        wick_interrupt(); /* the default flag: no state watches it */
    }
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    printf("lua: A %d ok, %d interrupted (%d inside a kernel), %d wrong; B %d ok, %d interrupted, %d wrong\n", a.ok,
           a.interrupted, a.in_kernel, a.wrong, b.ok, b.interrupted, b.wrong);
    CHECK(b.ok == rounds && b.interrupted == 0 && b.wrong == 0 && b.other == 0);
    CHECK(a.wrong == 0 && a.other == 0 && a.ok + a.interrupted == rounds);
    CHECK(a.interrupted > 0);
    CHECK(a.in_kernel > 0);
    /* an interrupt that came after the state's last op is lowered by the next op's report */
    wick_lua_interrupt(a.L);
    CHECK(luaL_dostring(a.L, "return x + 1") != 0 && strstr(lua_tostring(a.L, -1), "interrupted"));
    lua_settop(a.L, 0);
    CHECK(luaL_dostring(a.L, "return x + 1") == 0 && count_wrong(wick_lua_to_tensor(a.L, -1)) == 0);
    lua_close(a.L);
    lua_close(b.L);
    CHECK(wick_lua_interrupt(a.L) == 0); /* closed: nothing to aim at */
    wick_take_interrupt();
    wick_interrupt_take(NULL);
}

/* ---- part 2: C threads with flags of their own ---- */

static wick_status add_one(wick_tensor **out, const wick_tensor *x) {
    wick_scalar one = {1, 1};
    return wick_binary_scalar(out, WICK_ADD, x, one, 0);
}

typedef struct {
    const char *name;
    wick_interrupt_flag flag;
    const wick_tensor *x;
    int ok, interrupted, wrong, other, untouched, watched_default;
    int *done;
} c_worker;

static void *c_main(void *arg) {
    c_worker *w = arg;
    w->watched_default = wick_interrupt_watch(&w->flag) == NULL; /* checked by the main thread */
    for (int r = 0; r < rounds; r++) {
        wick_tensor *y = (wick_tensor *)&y; /* must stay as it is when the op fails */
        wick_status st = add_one(&y, w->x);
        if (st == WICK_OK) {
            if (count_wrong(y)) w->wrong++;
            else w->ok++;
            wick_tensor_release(y);
        } else if (st == WICK_ERR_INTERRUPTED && strstr(wick_last_error(), "interrupted")) {
            w->interrupted++;
            w->untouched += y == (wick_tensor *)&y;
        } else {
            fprintf(stderr, "%s round %d: status %d: %s\n", w->name, r, st, wick_last_error());
            w->other++;
        }
    }
    __atomic_store_n(w->done, 1, __ATOMIC_RELEASE);
    wick_interrupt_watch(NULL);
    return NULL;
}

static void c_part(void) {
    wick_tensor *x = NULL;
    if (wick_arange(&x, 0, (double)N, 1, wick_default_options()) != WICK_OK) exit(1);
    done_a = done_b = 0;
    c_worker a = {"thread A", {0}, x, 0, 0, 0, 0, 0, 0, &done_a};
    c_worker b = {"thread B", {0}, x, 0, 0, 0, 0, 0, 0, &done_b};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, c_main, &a);
    pthread_create(&tb, NULL, c_main, &b);
    unsigned seed = 7;
    while (!__atomic_load_n(&done_a, __ATOMIC_ACQUIRE) || !__atomic_load_n(&done_b, __ATOMIC_ACQUIRE)) {
        seed = seed * 1103515245u + 12345u;
        pause_us(200 + (long)(seed >> 16) % 3000);
        wick_interrupt_raise(&a.flag);
        wick_interrupt();
    }
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    printf("c: A %d ok, %d interrupted, %d wrong; B %d ok, %d interrupted, %d wrong\n", a.ok, a.interrupted, a.wrong,
           b.ok, b.interrupted, b.wrong);
    CHECK(a.watched_default && b.watched_default);
    CHECK(b.ok == rounds && b.interrupted == 0 && b.wrong == 0 && b.other == 0);
    CHECK(a.wrong == 0 && a.other == 0 && a.interrupted > 0 && a.untouched == a.interrupted);
    /* this thread watches the default flag, raised above: its next op reports it once */
    wick_tensor *y = NULL;
    CHECK(add_one(&y, x) == WICK_ERR_INTERRUPTED && y == NULL);
    CHECK(add_one(&y, x) == WICK_OK && count_wrong(y) == 0);
    wick_tensor_release(y);
    /* watch / take */
    wick_interrupt_flag mine = {0};
    CHECK(wick_interrupt_watch(&mine) == NULL);
    wick_interrupt();
    CHECK(wick_take_interrupt() == 0); /* not the watched flag */
    wick_interrupt_raise(&mine);
    CHECK(wick_take_interrupt() == 1 && wick_take_interrupt() == 0);
    CHECK(wick_interrupt_watch(NULL) == &mine);
    CHECK(wick_take_interrupt() == 1);
    wick_tensor_release(x);
}

int main(int argc, char **argv) {
    if (argc > 1) rounds = atoi(argv[1]);
    if (rounds < 10) rounds = 10;
    wick_set_num_threads(2);
    lua_part();
    c_part();
    printf("%d checks, %d failures\n", checks, failures);
    return failures != 0;
}
