/* The host-side logic of the CUDA fused attention, on the CPU (no GPU needed):
 * the launch plan (src/cuda/cuda_attention_plan.h: tile size and shared memory
 * of the three kernels) and the index math every kernel shares with the CPU's
 * (src/core/attention.h: batch offsets with broadcasting and grouped heads,
 * dropout counters, the causal key range), against brute-force versions. */
#include "../src/core/attention.h"
#include "../src/cuda/cuda_attention_plan.h"
#include "check.h"

#include <stdbool.h>
#include <string.h>

#define LIMIT (48 * 1024)

static void check_plans(void) {
    static const int64_t dims[] = {0, 1, 3, 8, 16, 32, 33, 64, 100, 128, 256, 512, 1000, 3000, 6000};
    int n = (int)(sizeof dims / sizeof *dims);
    for (int x = 0; x < n; x++)
        for (int y = 0; y < n; y++)
            for (size_t elem = 4; elem <= 8; elem += 4) {
                int64_t E = dims[x], Ev = dims[y];
                wk_attn_cuda_plan p = {0};
                int ok = wk_attn_cuda_plan_make(E, Ev, elem, LIMIT, &p);
                /* brute force: the largest power-of-two tile whose three footprints fit */
                int best = 0;
                for (int t = 1; t <= WK_ATTN_CUDA_MAX_TILE; t *= 2) {
                    size_t kv = elem * (size_t)(3 * t * (E + Ev) + 2 * t);
                    size_t f = elem * (size_t)(t * Ev + t * (E + Ev)), q = elem * (size_t)(t * E + t * (E + Ev));
                    if (kv <= LIMIT && f <= LIMIT && q <= LIMIT) best = t;
                }
                CHECK(ok == (best > 0));
                if (!ok) continue;
                CHECK(p.tile == best);
                CHECK(p.smem_fwd <= LIMIT && p.smem_bwd_kv <= LIMIT && p.smem_bwd_q <= LIMIT);
                CHECK(p.smem_bwd_kv == wk_attn_cuda_smem_bwd_kv(p.tile, E, Ev, elem));
            }
    wk_attn_cuda_plan p = {0};
    CHECK(wk_attn_cuda_plan_make(32, 32, 4, LIMIT, &p) && p.tile == 32); /* GPT heads: 32 rows a block */
    CHECK(!wk_attn_cuda_plan_make(-1, 4, 4, LIMIT, &p));
    CHECK(!wk_attn_cuda_plan_make((int64_t)1 << 40, 4, 4, LIMIT, &p));
    CHECK(wk_attn_cuda_tiles(0, 64) == 0 && wk_attn_cuda_tiles(1, 64) == 1 && wk_attn_cuda_tiles(65, 64) == 2);
}

/* batch [2, 6, 3] broadcast from q [2, 6, 3, ...], k [1, 2 heads (groups of 3), 3, ...] */
static void check_offsets(void) {
    wk_attn_args a;
    memset(&a, 0, sizeof a);
    a.batch_ndim = 3;
    int64_t sizes[3] = {2, 6, 3};
    memcpy(a.batch_sizes, sizes, sizeof sizes);
    a.batch = 36;
    int64_t qs[3] = {1000, 100, 10}, ks[3] = {0, 7, 3}; /* k's dim 1 broadcast (stride 0) */
    memcpy(a.q_bs, qs, sizeof qs);
    memcpy(a.k_bs, ks, sizeof ks);
    /* grouping applies to the last batch dim: make that the heads */
    a.kv_group = 3;
    bool ok = true;
    for (int64_t b = 0; b < a.batch; b++) {
        int64_t i0 = b / 18, i1 = b / 3 % 6, i2 = b % 3;
        ok &= wk_attn_offset(&a, a.q_bs, b, 0) == i0 * 1000 + i1 * 100 + i2 * 10;
        ok &= wk_attn_offset(&a, a.k_bs, b, 1) == i1 * 7 + (i2 / 3) * 3;
    }
    CHECK(ok);
    a.L = 5, a.S = 7, a.offset = 11;
    CHECK(wk_attn_counter(&a, 2, 3, 4) == 11 + (2 * 5 + 3) * 7 + 4);
    a.causal = 0;
    CHECK(wk_attn_key_end(&a, 0, 2) == 7);
    a.causal = 1;
    CHECK(wk_attn_key_end(&a, 0, 2) == 2 && wk_attn_key_end(&a, 4, 64) == 7);
}

int main(void) {
    check_plans();
    check_offsets();
    printf("test_attention_plan: %d checks, %d failures\n", checks, failures);
    return failures != 0;
}
