/* What wick keeps per lua_State: its interrupt flag and the collector's
 * pacing (wick.h "interrupts", wick_embed.h wick_lua_interrupt).
 *
 * The records live in a process-wide table of slots that is never freed:
 * chunks of SLOTS slots, linked, each added once and kept. A state takes a
 * slot when wick opens in it and gives it back when the state closes (the
 * registry's userdata is collected). So a signal handler looking a state up
 * (wick_lua_interrupt), or a thread that still watches the flag of a state
 * that has closed, only ever touches valid memory. */
#include "wick_lua.h"
#include "gc_pace.h"
#include "wick_embed.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#define SLOTS 64

struct wl_state {
    wick_interrupt_flag flag;
    lua_State *key;   /* atomic: the state wick_lua_interrupt finds it by; NULL when free */
    unsigned gen;     /* atomic: bumped when the slot is given back */
    bool used;        /* under slots_lock */
    wl_gc_pace gc; /* wl_account; touched only by the thread running the state */
    wick_dtype default_float; /* set_default_dtype's, for the core's promotions (wl_enter) */
};

typedef struct chunk {
    wl_state slot[SLOTS];
    struct chunk *next; /* atomic: set once */
} chunk;

static chunk first;
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;

static const char state_key = 0; /* registry: a userdata holding the state's wl_state * */


static wl_state *slot_take(lua_State *L) {
    pthread_mutex_lock(&slots_lock);
    wl_state *s = NULL;
    chunk *c = &first;
    for (;;) {
        for (int i = 0; i < SLOTS && !s; i++)
            if (!c->slot[i].used) s = &c->slot[i];
        if (s) break;
        chunk *next = __atomic_load_n(&c->next, __ATOMIC_ACQUIRE);
        if (!next) {
            next = calloc(1, sizeof *next);
            if (!next) break;
            __atomic_store_n(&c->next, next, __ATOMIC_RELEASE);
        }
        c = next;
    }
    if (s) {
        s->used = true;
        s->gc = wl_gc_pace_new();
        s->default_float = WICK_FLOAT32;
        wick_interrupt_take(&s->flag);
        __atomic_store_n(&s->key, L, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&slots_lock);
    return s;
}

static void slot_give_back(wl_state *s) {
    /* the closing thread (usually the one that ran the state) goes back to the
     * default flag; other threads that still watch it see a lowered flag */
    wick_interrupt_flag *watched = wick_interrupt_watch(NULL);
    if (watched != &s->flag) wick_interrupt_watch(watched);
    pthread_mutex_lock(&slots_lock);
    __atomic_store_n(&s->key, NULL, __ATOMIC_RELEASE);
    __atomic_add_fetch(&s->gen, 1, __ATOMIC_RELEASE);
    wick_interrupt_take(&s->flag);
    s->used = false;
    pthread_mutex_unlock(&slots_lock);
}

WL_FUNCTION(state_gc) {
    wl_state **p = lua_touserdata(L, 1);
    if (p && *p) slot_give_back(*p);
    if (p) *p = NULL;
    return 0;
}

/* The last state this thread looked up, by its registry's address, checked
 * against the slot's generation (a new state may reuse both the address and
 * the slot). Saves the registry lookup on every op. */
static _Thread_local const void *cached_registry;
static _Thread_local wl_state *cached_state;
static _Thread_local unsigned cached_gen;

static const void *registry_of(lua_State *L) {
    lua_pushvalue(L, LUA_REGISTRYINDEX);
    const void *r = lua_topointer(L, -1);
    lua_pop(L, 1);
    return r;
}

wl_state *wl_state_of(lua_State *L) {
    const void *reg = registry_of(L);
    if (reg == cached_registry && cached_state && __atomic_load_n(&cached_state->gen, __ATOMIC_ACQUIRE) == cached_gen)
        return cached_state;
    lua_pushlightuserdata(L, (void *)&state_key);
    lua_rawget(L, LUA_REGISTRYINDEX);
    wl_state **p = lua_touserdata(L, -1);
    wl_state *s = p ? *p : NULL;
    lua_pop(L, 1);
    if (s) {
        cached_registry = reg;
        cached_state = s;
        cached_gen = __atomic_load_n(&s->gen, __ATOMIC_ACQUIRE);
    }
    return s;
}

void wl_state_open(lua_State *L) {
    if (wl_state_of(L)) return;
    wl_state **p = lua_newuserdata(L, sizeof *p);
    *p = NULL;
    lua_newtable(L);
    lua_pushcfunction(L, state_gc);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    *p = slot_take(L);
    if (!*p) {
        lua_pop(L, 1);
        luaL_error(L, "wick: out of memory for the state's record");
    }
    lua_pushlightuserdata(L, (void *)&state_key);
    lua_insert(L, -2);
    lua_rawset(L, LUA_REGISTRYINDEX);
}

void wl_state_set_key(lua_State *L) {
    wl_state *s = wl_state_of(L);
    if (s) __atomic_store_n(&s->key, L, __ATOMIC_RELEASE);
}

void wl_enter(lua_State *L) {
    wl_state *s = wl_state_of(L);
    if (!s) return;
    wick_interrupt_watch(&s->flag);
    wick_set_default_float_dtype(s->default_float);
}

void wl_set_default_float(lua_State *L, wick_dtype dtype) {
    wl_state *s = wl_state_of(L);
    if (s) s->default_float = dtype;
    wick_set_default_float_dtype(dtype);
}

int wl_take_interrupt(lua_State *L) {
    wl_state *s = wl_state_of(L);
    return s && wick_interrupt_take(&s->flag);
}

wl_gc_pace *wl_gc_threshold(lua_State *L) {
    wl_state *s = wl_state_of(L);
    return s ? &s->gc : NULL;
}

WICK_API wick_interrupt_flag *wick_lua_interrupt_flag(lua_State *L) {
    wl_state *s = wl_state_of(L);
    return s ? &s->flag : NULL;
}

/* Async-signal-safe: atomic loads along the never-freed chunks, one store. */
WICK_API int wick_lua_interrupt(lua_State *L) {
    if (!L) return 0;
    for (chunk *c = &first; c; c = __atomic_load_n(&c->next, __ATOMIC_ACQUIRE))
        for (int i = 0; i < SLOTS; i++)
            if (__atomic_load_n(&c->slot[i].key, __ATOMIC_ACQUIRE) == L) {
                wick_interrupt_raise(&c->slot[i].flag);
                return 1;
            }
    return 0;
}
