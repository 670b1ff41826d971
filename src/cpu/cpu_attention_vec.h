/* The float32 helpers of the fused attention on 16-wide vectors (GCC vector
 * extensions), included by cpu_attention.c once per instruction set, inside
 * `#pragma GCC target`, with SFX naming that copy; cpu_attention_impl.h then
 * builds that copy's tile loops on them. (Each copy is compiled whole for its
 * target: with target_clones and these helpers inlined from the baseline,
 * GCC 12 built some broadcasts element by element, 16 masked loads each, in
 * the AVX-512 clone; whole copies do not depend on how a form is lowered.) */

#define WK_VCAT_(a, b) a##_##b
#define WK_VCAT(a, b) WK_VCAT_(a, b)
#define VF(name) WK_VCAT(name, SFX)

/* unaligned loads and stores */
ATTN_INLINE v16 VF(vload)(const float *p) {
    v16 x;
    __builtin_memcpy(&x, p, sizeof x);
    return x;
}
ATTN_INLINE void VF(vstore)(float *p, v16 x) { __builtin_memcpy(p, &x, sizeof x); }
ATTN_INLINE v16 VF(vsplat)(float x) { return x - (v16){0}; } /* x - 0 is x: a broadcast */

/* dst (row stride ldd) = the transpose of the 16 x 16 block at src (row stride
 * ld), in registers: four stages, each swapping the off-diagonal s x s blocks
 * of every 2s x 2s block (s = 8, 4, 2, 1). */
#if ATTN_T16
ATTN_INLINE void VF(transpose16)(const float *src, int64_t ld, float *dst, int64_t ldd) {
    static const v16i lo8 = {0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23};
    static const v16i hi8 = {8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31};
    static const v16i lo4 = {0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27};
    static const v16i hi4 = {4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31};
    static const v16i lo2 = {0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29};
    static const v16i hi2 = {2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31};
    static const v16i lo1 = {0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30};
    static const v16i hi1 = {1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31};
    v16 r[16];
    for (int i = 0; i < 16; i++) r[i] = VF(vload)(src + i * ld);
#define ATTN_T16_STAGE(S, LO, HI)                                                                       \
    for (int i = 0; i < 16; i++)                                                                        \
        if (!(i & S)) {                                                                                 \
            v16 a = r[i], b = r[i + S];                                                                 \
            r[i] = __builtin_shuffle(a, b, LO);                                                         \
            r[i + S] = __builtin_shuffle(a, b, HI);                                                     \
        }
    ATTN_T16_STAGE(8, lo8, hi8)
    ATTN_T16_STAGE(4, lo4, hi4)
    ATTN_T16_STAGE(2, lo2, hi2)
    ATTN_T16_STAGE(1, lo1, hi1)
#undef ATTN_T16_STAGE
    for (int i = 0; i < 16; i++) VF(vstore)(dst + i * ldd, r[i]);
}
#endif

/* C[M x N] (+)= A[M x K] B[K x N] (A's element (r, k) at r lda + k ak): R rows and NV
 * vectors of 16 columns at a time. */
#define ATTN_MICRO(R, NV)                                                                               \
    ATTN_INLINE void VF(micro_##R##_##NV)(int64_t K, const float *A, int64_t lda, int64_t ak, const float *B, int64_t ldb, \
                                          float *C, int64_t ldc, int init) {                            \
        v16 acc[R][NV];                                                                                 \
        for (int r = 0; r < R; r++)                                                                     \
            for (int x = 0; x < NV; x++) acc[r][x] = init ? VF(vsplat)(0) : VF(vload)(C + r * ldc + 16 * x); \
        for (int64_t kk = 0; kk < K; kk++) {                                                            \
            v16 bv[NV];                                                                                 \
            for (int x = 0; x < NV; x++) bv[x] = VF(vload)(B + kk * ldb + 16 * x);                      \
            for (int r = 0; r < R; r++) {                                                               \
                v16 s = VF(vsplat)(A[r * lda + kk * ak]);                                               \
                for (int x = 0; x < NV; x++) acc[r][x] += s * bv[x];                                    \
            }                                                                                           \
        }                                                                                               \
        for (int r = 0; r < R; r++)                                                                     \
            for (int x = 0; x < NV; x++) VF(vstore)(C + r * ldc + 16 * x, acc[r][x]);                   \
    }
ATTN_MICRO(2, 4)
ATTN_MICRO(1, 4)
ATTN_MICRO(2, 3)
ATTN_MICRO(1, 3)
ATTN_MICRO(4, 2)
ATTN_MICRO(1, 2)
ATTN_MICRO(4, 1)
ATTN_MICRO(1, 1)
#if ATTN_WIDE
ATTN_MICRO(6, 4)
ATTN_MICRO(4, 4)
ATTN_MICRO(8, 3)
ATTN_MICRO(12, 2)
ATTN_MICRO(8, 1)
#endif
#undef ATTN_MICRO

/* One block of columns [n0, n0 + 16 nv) over all M rows: R rows at a time,
 * then R2, then one. */
#define ATTN_ROWS(R, R2, NV)                                                                            \
    do {                                                                                                \
        int64_t r = 0;                                                                                  \
        for (; r + R <= M; r += R)                                                                      \
            VF(micro_##R##_##NV)(K, A + r * lda, lda, ak, B + n0, ldb, C + r * ldc + n0, ldc, init);         \
        for (; r + R2 <= M; r += R2)                                                                    \
            VF(micro_##R2##_##NV)(K, A + r * lda, lda, ak, B + n0, ldb, C + r * ldc + n0, ldc, init);        \
        for (; r < M; r++) VF(micro_1_##NV)(K, A + r * lda, lda, ak, B + n0, ldb, C + r * ldc + n0, ldc, init); \
    } while (0)

/* C (+)= A B. With ATTN_WIDE (32 vector registers of 16 lanes: AVX-512) 24
 * accumulators a pass (6 x 64, 8 x 48, 12 x 32 columns): per step of k, 10-14
 * loads and broadcasts feed 24 multiply-adds, where 8 accumulators (what 16
 * AVX2 registers hold) took 6 for 8. */
ATTN_INLINE void VF(gemm)(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, int64_t ak, const float *B, int64_t ldb,
                          float *C, int64_t ldc, int init) {
    int64_t n0 = 0;
#if ATTN_WIDE
    for (; n0 + 64 <= N; n0 += 64) ATTN_ROWS(6, 4, 4);
    switch ((N - n0) / 16) {
    case 3: ATTN_ROWS(8, 2, 3); n0 += 48; break;
    case 2: ATTN_ROWS(12, 4, 2); n0 += 32; break;
    case 1: ATTN_ROWS(8, 4, 1); n0 += 16; break;
    default: break;
    }
#else
    for (; n0 + 64 <= N; n0 += 64) ATTN_ROWS(2, 2, 4);
    switch ((N - n0) / 16) {
    case 3: ATTN_ROWS(2, 2, 3); n0 += 48; break;
    case 2: ATTN_ROWS(4, 4, 2); n0 += 32; break;
    case 1: ATTN_ROWS(4, 4, 1); n0 += 16; break;
    default: break;
    }
#endif
    for (int64_t r = 0; r < M; r++) /* the last N % 16 columns */
        for (int64_t n = n0; n < N; n++) {
            float s = init ? 0 : C[r * ldc + n];
            for (int64_t kk = 0; kk < K; kk++) s += A[r * lda + kk * ak] * B[kk * ldb + n];
            C[r * ldc + n] = s;
        }
}
#undef ATTN_ROWS

/* s = exp(s - sub) over n (a multiple of 16) elements; returns their sum.
 * s - sub <= 0 (sub is the row's maximum or its log-sum-exp): cpu_vmath.h's
 * lean exp, inlined into this copy with its instruction set. */
ATTN_INLINE float VF(exprow)(float *s, int64_t n, float sub) {
    v16 sum = VF(vsplat)(0), m = VF(vsplat)(sub);
    for (int64_t c = 0; c < n; c += 16) {
        v16 e = wk_vexp_le0(VF(vload)(s + c) - m);
        VF(vstore)(s + c, e);
        sum += e;
    }
    float t = 0;
    for (int x = 0; x < 16; x++) t += sum[x];
    return t;
}

/* n is a multiple of 16; NaN is passed over (it reaches the sum anyway) */
ATTN_INLINE float VF(rowmax)(const float *s, int64_t n) {
    v16 m = VF(vsplat)(-INFINITY);
    for (int64_t c = 0; c < n; c += 16) {
        v16 x = VF(vload)(s + c);
        v16i gt = x > m;
        m = (v16)(((v16i)x & gt) | ((v16i)m & ~gt));
    }
    float r = -INFINITY;
    for (int x = 0; x < 16; x++) r = m[x] > r ? m[x] : r;
    return r;
}

ATTN_INLINE float VF(exp1)(float x) { return expf(x); }
ATTN_INLINE float VF(log1)(float x) { return logf(x); }

#undef VF
#undef WK_VCAT
#undef WK_VCAT_
