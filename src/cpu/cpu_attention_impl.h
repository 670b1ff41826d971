/* The tile loops of the fused attention, written once for both compute types:
 * cpu_attention.c includes this file with T (float or double) and SFX (the
 * copy's name suffix) defined, ATTN_T16 (1: transpose16_SFX, a 16 x 16 block
 * transpose, exists), after the helpers gemm_SFX (C += A B, row-major tiles), exprow_SFX (s = exp(s - sub), returns
 * the sum) and rowmax_SFX. */

#define WK_CAT_(a, b) a##_##b
#define WK_CAT(a, b) WK_CAT_(a, b)
#define FN(name) WK_CAT(name, SFX)

/* One row of scaled scores for query i against keys j0 .. j0 + cols, then
 * -inf where the mask, the causal rule or the padding up to npad say so. */
ATTN_INLINE void FN(prep_row)(const wk_attn_args *a, const char *mrow, int64_t i, int64_t j0, int64_t cols,
                              int64_t npad, T *s) {
    const T scale = (T)a->scale, ninf = (T)-INFINITY;
    for (int64_t c = 0; c < npad; c++) s[c] *= scale;
    if (a->mask_kind == WK_ATTN_MASK_BOOL) {
        const uint8_t *m = (const uint8_t *)mrow + j0 * a->m_cs;
        for (int64_t c = 0; c < cols; c++)
            if (!m[c * a->m_cs]) s[c] = ninf;
    } else if (a->mask_kind == WK_ATTN_MASK_FLOAT) {
        const T *m = (const T *)mrow + j0 * a->m_cs;
        for (int64_t c = 0; c < cols; c++) s[c] += m[c * a->m_cs];
    }
    int64_t end = cols;
    if (a->causal && i + 1 - j0 < end) end = i + 1 - j0 > 0 ? i + 1 - j0 : 0;
    for (int64_t c = end; c < npad; c++) s[c] = ninf;
}

/* The mask's row i of problem b (NULL without a mask). */
ATTN_INLINE const char *FN(mask_row)(const wk_attn_args *a, int64_t moff, int64_t i) {
    if (a->mask_kind == WK_ATTN_MASK_NONE) return NULL;
    size_t es = a->mask_kind == WK_ATTN_MASK_BOOL ? 1 : sizeof(T);
    return a->mask + (moff + i * a->m_rs) * (int64_t)es;
}

/* The dropout factors of row i (0 or 1 / (1 - p)) for keys j0 .. j0 + cols. */
ATTN_INLINE void FN(drop_row)(const wk_attn_args *a, int64_t b, int64_t i, int64_t j0, int64_t cols, T *z) {
    const double p = a->dropout_p;
    const T keep = p < 1 ? (T)(1.0 / (1.0 - p)) : 0;
    for (int64_t c = 0; c < cols; c++) z[c] = wk_uniform(a->seed, wk_attn_counter(a, b, i, j0 + c)) >= p ? keep : 0;
}

/* Transposes a rows x cols tile of src (row stride ld) into dst (row stride ldd),
 * zeroing dst's columns rows .. pad. */
ATTN_INLINE void FN(transpose)(const T *src, int64_t ld, int64_t rows, int64_t cols, T *dst, int64_t ldd,
                               int64_t pad) {
    int64_t rows_b = 0, cols_b = 0; /* the part done in 16 x 16 blocks */
#if ATTN_T16
    rows_b = rows & ~(int64_t)15, cols_b = cols & ~(int64_t)15;
    for (int64_t r0 = 0; r0 < rows_b; r0 += 16)
        for (int64_t c0 = 0; c0 < cols_b; c0 += 16) FN(transpose16)(src + r0 * ld + c0, ld, dst + c0 * ldd + r0, ldd);
#endif
    for (int64_t c = 0; c < cols; c++) {
        T *d = dst + c * ldd;
        for (int64_t r = c < cols_b ? rows_b : 0; r < rows; r++) d[r] = src[r * ld + c];
        for (int64_t r = rows; r < pad; r++) d[r] = 0;
    }
}

/* Scratch (elements of T) of one forward task. */
static inline int64_t FN(fwd_scratch)(const wk_attn_args *a) { return a->E * ATTN_BC + ATTN_BR * ATTN_BC + ATTN_BR * a->Ev + 2 * ATTN_BR + ATTN_BC; }

/* Rows i0 .. i0 + rows of problem b: out and lse. */
static void FN(fwd_task)(const wk_attn_args *a, int64_t b, int64_t i0, T *scratch) {
    const int64_t E = a->E, Ev = a->Ev, rows = a->L - i0 < ATTN_BR ? a->L - i0 : ATTN_BR;
    const T *q = (const T *)a->q + wk_attn_offset(a, a->q_bs, b, 0) + i0 * a->q_rs;
    const T *k = (const T *)a->k + wk_attn_offset(a, a->k_bs, b, 1);
    const T *v = (const T *)a->v + wk_attn_offset(a, a->v_bs, b, 1);
    const int64_t moff = a->mask_kind ? wk_attn_offset(a, a->m_bs, b, 0) : 0;
    T *kt = scratch, *sx = kt + E * ATTN_BC, *acc = sx + ATTN_BR * ATTN_BC, *m = acc + ATTN_BR * Ev, *l = m + ATTN_BR;
    T *z = l + ATTN_BR;
    for (int64_t r = 0; r < rows; r++) m[r] = (T)-INFINITY, l[r] = 0;
    for (int64_t x = 0; x < rows * Ev; x++) acc[x] = 0;
    const int64_t jend = wk_attn_key_end(a, i0, rows);
    for (int64_t j0 = 0; j0 < jend; j0 += ATTN_BC) {
        const int64_t cols = jend - j0 < ATTN_BC ? jend - j0 : ATTN_BC, npad = (cols + 15) & ~(int64_t)15;
        FN(transpose)(k + j0 * a->k_rs, a->k_rs, cols, E, kt, ATTN_BC, npad);
        FN(gemm)(rows, npad, E, q, a->q_rs, 1, kt, ATTN_BC, sx, ATTN_BC, 1);
        for (int64_t r = 0; r < rows; r++) {
            T *s = sx + r * ATTN_BC;
            const int64_t i = i0 + r;
            FN(prep_row)(a, FN(mask_row)(a, moff, i), i, j0, cols, npad, s);
            T mx = FN(rowmax)(s, npad), mnew = m[r] > mx ? m[r] : mx;
            if (mnew == (T)-INFINITY) { /* no key of this row so far (or NaN scores only) */
                for (int64_t c = 0; c < npad; c++) {
                    if (s[c] != s[c]) l[r] = s[c]; /* NaN in, NaN out */
                    s[c] = 0;
                }
                continue;
            }
            T alpha = m[r] == (T)-INFINITY ? 0 : FN(exp1)(m[r] - mnew);
            T sum = FN(exprow)(s, npad, mnew);
            l[r] = l[r] * alpha + sum;
            m[r] = mnew;
            if (alpha != 1)
                for (int64_t e = 0; e < Ev; e++) acc[r * Ev + e] *= alpha;
            if (a->dropout_p > 0) {
                FN(drop_row)(a, b, i, j0, cols, z);
                for (int64_t c = 0; c < cols; c++) s[c] *= z[c];
            }
        }
        FN(gemm)(rows, Ev, cols, sx, ATTN_BC, 1, v + j0 * a->v_rs, a->v_rs, acc, Ev, 0);
    }
    T *out = (T *)a->out + (b * a->L + i0) * Ev, *lse = (T *)a->lse + b * a->L + i0;
    for (int64_t r = 0; r < rows; r++) {
        T inv = l[r] > 0 ? 1 / l[r] : l[r] == 0 ? 0 : l[r]; /* 0: no key took part; NaN stays */
        for (int64_t e = 0; e < Ev; e++) out[r * Ev + e] = acc[r * Ev + e] * inv;
        lse[r] = l[r] > 0 ? m[r] + FN(log1)(l[r]) : l[r] == 0 ? (T)INFINITY : l[r];
    }
}

/* Scratch (elements of T) of one backward task. */
static inline int64_t FN(bwd_scratch)(const wk_attn_args *a) {
    return (a->E + a->Ev) * ATTN_BC + 3 * ATTN_BR * ATTN_BC + a->L;
}

/* Problem b's dq, dk and dv. */
static void FN(bwd_task)(const wk_attn_args *a, int64_t b, T *scratch) {
    const int64_t L = a->L, S = a->S, E = a->E, Ev = a->Ev;
    const T *q = (const T *)a->q + wk_attn_offset(a, a->q_bs, b, 0);
    const T *k = (const T *)a->k + wk_attn_offset(a, a->k_bs, b, 1);
    const T *v = (const T *)a->v + wk_attn_offset(a, a->v_bs, b, 1);
    const int64_t moff = a->mask_kind ? wk_attn_offset(a, a->m_bs, b, 0) : 0;
    const T *go = (const T *)a->grad_out + b * L * Ev, *o = (const T *)a->fwd_out + b * L * Ev;
    const T *lse = (const T *)a->lse + b * L;
    T *dq = (T *)a->dq + b * L * E, *dk = (T *)a->dk + b * S * E, *dv = (T *)a->dv + b * S * Ev;
    T *kt = scratch, *vt = kt + E * ATTN_BC, *p = vt + Ev * ATTN_BC, *dp = p + ATTN_BR * ATTN_BC;
    T *z = dp + ATTN_BR * ATTN_BC, *dsum = z + ATTN_BR * ATTN_BC;
    for (int64_t x = 0; x < L * E; x++) dq[x] = 0;
    for (int64_t x = 0; x < S * E; x++) dk[x] = 0;
    for (int64_t x = 0; x < S * Ev; x++) dv[x] = 0;
    for (int64_t i = 0; i < L; i++) { /* D_i = dO_i . O_i = sum_j P_ij dP_ij */
        T d = 0;
        for (int64_t e = 0; e < Ev; e++) d += go[i * Ev + e] * o[i * Ev + e];
        dsum[i] = d;
    }
    const T scale = (T)a->scale;
    for (int64_t j0 = 0; j0 < S; j0 += ATTN_BC) {
        const int64_t cols = S - j0 < ATTN_BC ? S - j0 : ATTN_BC, npad = (cols + 15) & ~(int64_t)15;
        FN(transpose)(k + j0 * a->k_rs, a->k_rs, cols, E, kt, ATTN_BC, npad);
        FN(transpose)(v + j0 * a->v_rs, a->v_rs, cols, Ev, vt, ATTN_BC, npad);
        for (int64_t i0 = a->causal ? j0 : 0; i0 < L; i0 += ATTN_BR) {
            const int64_t rows = L - i0 < ATTN_BR ? L - i0 : ATTN_BR;
            FN(gemm)(rows, npad, E, q + i0 * a->q_rs, a->q_rs, 1, kt, ATTN_BC, p, ATTN_BC, 1);
            FN(gemm)(rows, npad, Ev, go + i0 * Ev, Ev, 1, vt, ATTN_BC, dp, ATTN_BC, 1);
            for (int64_t r = 0; r < rows; r++) {
                const int64_t i = i0 + r;
                T *s = p + r * ATTN_BC, *ds = dp + r * ATTN_BC;
                if (lse[i] == (T)INFINITY) { /* a row no key takes part in: no gradient */
                    for (int64_t c = 0; c < npad; c++) s[c] = 0, ds[c] = 0;
                    continue;
                }
                FN(prep_row)(a, FN(mask_row)(a, moff, i), i, j0, cols, npad, s);
                FN(exprow)(s, npad, lse[i]);
                const T di = dsum[i];
                if (a->dropout_p > 0) {
                    T *zr = z + r * ATTN_BC;
                    FN(drop_row)(a, b, i, j0, cols, zr);
                    for (int64_t c = cols; c < npad; c++) zr[c] = 0;
                    for (int64_t c = 0; c < npad; c++) {
                        ds[c] = s[c] * (ds[c] * zr[c] - di) * scale;
                        s[c] *= zr[c];
                    }
                } else {
                    for (int64_t c = 0; c < npad; c++) ds[c] = s[c] * (ds[c] - di) * scale;
                }
            }
            /* dV += P^T dO, dQ += dS K, dK += dS^T Q */
            /* (P^T and dS^T are P and dS read with their strides swapped) */
            FN(gemm)(cols, Ev, rows, p, 1, ATTN_BC, go + i0 * Ev, Ev, dv + j0 * Ev, Ev, 0);
            FN(gemm)(rows, E, cols, dp, ATTN_BC, 1, k + j0 * a->k_rs, a->k_rs, dq + i0 * E, E, 0);
            FN(gemm)(cols, E, rows, dp, 1, ATTN_BC, q + i0 * a->q_rs, a->q_rs, dk + j0 * E, E, 0);
        }
    }
}

#undef FN
#undef WK_CAT
#undef WK_CAT_
