/* The process-wide random generator. It is counter-based: draw number i of a
 * stream is a pure function of (seed, i), so any backend can produce a tensor's
 * numbers in parallel and get the same values as the CPU. */
#include "internal.h"

#include <pthread.h>

static pthread_mutex_t rng_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t rng_seed = 67280421310721ULL, rng_offset = 0;

void wick_manual_seed(uint64_t seed) {
    pthread_mutex_lock(&rng_lock);
    rng_seed = seed;
    rng_offset = 0;
    pthread_mutex_unlock(&rng_lock);
}

void wk_rng_reserve(uint64_t count, uint64_t *seed, uint64_t *offset) {
    pthread_mutex_lock(&rng_lock);
    *seed = rng_seed;
    *offset = rng_offset;
    rng_offset += count;
    pthread_mutex_unlock(&rng_lock);
}

void wick_rng_get_state(uint8_t state[WICK_RNG_STATE_SIZE]) {
    pthread_mutex_lock(&rng_lock);
    for (int i = 0; i < 8; i++) {
        state[i] = (uint8_t)(rng_seed >> (8 * i));
        state[8 + i] = (uint8_t)(rng_offset >> (8 * i));
    }
    pthread_mutex_unlock(&rng_lock);
}

void wick_rng_set_state(const uint8_t state[WICK_RNG_STATE_SIZE]) {
    uint64_t seed = 0, offset = 0;
    for (int i = 0; i < 8; i++) {
        seed |= (uint64_t)state[i] << (8 * i);
        offset |= (uint64_t)state[8 + i] << (8 * i);
    }
    pthread_mutex_lock(&rng_lock);
    rng_seed = seed;
    rng_offset = offset;
    pthread_mutex_unlock(&rng_lock);
}
