/* Dense decompositions in float64 (wick_linalg_*: solve, inv, det, cholesky,
 * qr, eigh, svd): LU with partial pivoting, Cholesky, Householder QR, cyclic
 * Jacobi for symmetric eigenproblems and one-sided (Hestenes) Jacobi for the
 * SVD. Plain loops over row-major matrices, one matrix of the batch per task;
 * the sizes these serve (a model's statistics, a solver's small systems) are
 * far from where blocked LAPACK pays. */
#include "cpu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define AT(a, ld, i, j) ((a)[(int64_t)(i) * (ld) + (j)])

/* ---- LU: a = P L U in place ---- */

static int lu(double *a, int64_t m, int64_t n, int64_t *piv) {
    int info = 0;
    for (int64_t k = 0; k < (m < n ? m : n); k++) {
        int64_t p = k;
        double best = fabs(AT(a, n, k, k));
        for (int64_t i = k + 1; i < m; i++)
            if (fabs(AT(a, n, i, k)) > best) best = fabs(AT(a, n, i, k)), p = i;
        piv[k] = p;
        if (p != k)
            for (int64_t j = 0; j < n; j++) {
                double t = AT(a, n, k, j);
                AT(a, n, k, j) = AT(a, n, p, j);
                AT(a, n, p, j) = t;
            }
        double d = AT(a, n, k, k);
        if (d == 0) {
            if (!info) info = (int)(k + 1);
            continue;
        }
        for (int64_t i = k + 1; i < m; i++) {
            double f = AT(a, n, i, k) /= d;
            if (f != 0)
                for (int64_t j = k + 1; j < n; j++) AT(a, n, i, j) -= f * AT(a, n, k, j);
        }
    }
    return info;
}

/* x (n x k) = A^-1 x from A's LU (P A = L U; the swaps in piv) */
static void lu_solve(const double *lu_, int64_t n, const int64_t *piv, double *x, int64_t k) {
    for (int64_t i = 0; i < n; i++) /* the row swaps, in order */
        if (piv[i] != i)
            for (int64_t c = 0; c < k; c++) {
                double t = AT(x, k, i, c);
                AT(x, k, i, c) = AT(x, k, piv[i], c);
                AT(x, k, piv[i], c) = t;
            }
    for (int64_t i = 0; i < n; i++) /* L y = P x */
        for (int64_t j = 0; j < i; j++) {
            double l = AT(lu_, n, i, j);
            if (l != 0)
                for (int64_t c = 0; c < k; c++) AT(x, k, i, c) -= l * AT(x, k, j, c);
        }
    for (int64_t i = n - 1; i >= 0; i--) { /* U x = y */
        for (int64_t j = i + 1; j < n; j++) {
            double u = AT(lu_, n, i, j);
            if (u != 0)
                for (int64_t c = 0; c < k; c++) AT(x, k, i, c) -= u * AT(x, k, j, c);
        }
        double d = AT(lu_, n, i, i);
        for (int64_t c = 0; c < k; c++) AT(x, k, i, c) /= d;
    }
}

/* sign and log |det| from A's LU */
static void lu_det(const double *lu_, int64_t n, const int64_t *piv, double *sign, double *logabs) {
    double s = 1, l = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = AT(lu_, n, i, i);
        if (piv[i] != i) s = -s;
        if (d < 0) s = -s;
        if (d == 0) s = 0;
        l += log(fabs(d));
    }
    *sign = s, *logabs = l;
}

/* ---- Cholesky: a = L L^T, L in the lower part ---- */

static int cholesky(double *a, int64_t n) {
    for (int64_t j = 0; j < n; j++) {
        double d = AT(a, n, j, j);
        for (int64_t k = 0; k < j; k++) d -= AT(a, n, j, k) * AT(a, n, j, k);
        if (!(d > 0)) return (int)(j + 1);
        d = sqrt(d);
        AT(a, n, j, j) = d;
        for (int64_t i = j + 1; i < n; i++) {
            double s = AT(a, n, i, j);
            for (int64_t k = 0; k < j; k++) s -= AT(a, n, i, k) * AT(a, n, j, k);
            AT(a, n, i, j) = s / d;
        }
        for (int64_t k = j + 1; k < n; k++) AT(a, n, j, k) = 0;
    }
    return 0;
}

/* ---- Householder QR ---- */

/* a (m x n) becomes R in its upper part; q (m x kq) gets the first kq columns
 * of Q = H_1 ... H_k. v: m doubles of scratch. */
static void qr(double *a, int64_t m, int64_t n, double *q, int64_t kq, double *r, double *v) {
    int64_t k = m < n ? m : n;
    double *taus = v + m; /* k more, then k * m for the reflectors */
    double *vs = taus + k;
    for (int64_t j = 0; j < k; j++) {
        double below = 0; /* the column under the diagonal */
        for (int64_t i = j + 1; i < m; i++) below += AT(a, n, i, j) * AT(a, n, i, j);
        double *vj = vs + j * m;
        memset(vj, 0, sizeof(double) * (size_t)m);
        if (below == 0) { /* LAPACK's dlarfg: nothing to annihilate, H = I (R keeps the diagonal's sign) */
            taus[j] = 0;
            continue;
        }
        double norm = sqrt(below + AT(a, n, j, j) * AT(a, n, j, j));
        double alpha = AT(a, n, j, j) >= 0 ? -norm : norm; /* R's diagonal: -sign(a_jj) norm, sign(0) = + */
        for (int64_t i = j; i < m; i++) vj[i] = AT(a, n, i, j);
        vj[j] -= alpha;
        double vv = 0;
        for (int64_t i = j; i < m; i++) vv += vj[i] * vj[i];
        taus[j] = vv > 0 ? 2 / vv : 0;
        for (int64_t c = j; c < n; c++) { /* a -= tau v (v^T a) */
            double s = 0;
            for (int64_t i = j; i < m; i++) s += vj[i] * AT(a, n, i, c);
            s *= taus[j];
            for (int64_t i = j; i < m; i++) AT(a, n, i, c) -= s * vj[i];
        }
    }
    /* Q's first kq columns: H_1 ... H_k applied to the identity's */
    for (int64_t i = 0; i < m; i++)
        for (int64_t c = 0; c < kq; c++) AT(q, kq, i, c) = i == c;
    for (int64_t j = k - 1; j >= 0; j--) {
        double *vj = vs + j * m;
        if (taus[j] == 0) continue;
        for (int64_t c = 0; c < kq; c++) {
            double s = 0;
            for (int64_t i = j; i < m; i++) s += vj[i] * AT(q, kq, i, c);
            s *= taus[j];
            for (int64_t i = j; i < m; i++) AT(q, kq, i, c) -= s * vj[i];
        }
    }
    for (int64_t i = 0; i < kq; i++)
        for (int64_t c = 0; c < n; c++) AT(r, n, i, c) = i < m && c >= i ? AT(a, n, i, c) : 0;
    /* R's diagonal made non-negative is not LAPACK's convention; PyTorch keeps LAPACK's signs */
}

/* ---- Jacobi rotations ---- */

/* Columns p and q of x (rows x ld, row-major) rotated: (c x_p - s x_q, s x_p + c x_q). */
static void rotate_columns(double *x, int64_t ld, int64_t rows, int64_t p, int64_t q, double c, double s) {
    for (int64_t k = 0; k < rows; k++) {
        double xp = AT(x, ld, k, p), xq = AT(x, ld, k, q);
        AT(x, ld, k, p) = c * xp - s * xq;
        AT(x, ld, k, q) = s * xp + c * xq;
    }
}

/* ---- symmetric eigenproblem: cyclic Jacobi ---- */

static int eigh(double *a, int64_t n, double *w, double *vecs) {
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) AT(vecs, n, i, j) = i == j;
    int converged = 0;
    for (int sweep = 0; sweep < 100 && !converged; sweep++) {
        double off = 0, total = 0;
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                double x = AT(a, n, i, j) * AT(a, n, i, j);
                total += x;
                if (i != j) off += x;
            }
        if (off <= 1e-30 * total || off == 0) {
            converged = 1;
            break;
        }
        for (int64_t p = 0; p < n; p++)
            for (int64_t q = p + 1; q < n; q++) {
                double apq = AT(a, n, p, q);
                if (apq == 0) continue;
                double theta = (AT(a, n, q, q) - AT(a, n, p, p)) / (2 * apq);
                double t = (theta >= 0 ? 1 : -1) / (fabs(theta) + sqrt(theta * theta + 1));
                double c = 1 / sqrt(t * t + 1), s = t * c;
                rotate_columns(a, n, n, p, q, c, s); /* a = J^T a J */
                for (int64_t k = 0; k < n; k++) {   /* rows p, q */
                    double apk = AT(a, n, p, k), aqk = AT(a, n, q, k);
                    AT(a, n, p, k) = c * apk - s * aqk;
                    AT(a, n, q, k) = s * apk + c * aqk;
                }
                rotate_columns(vecs, n, n, p, q, c, s);
            }
    }
    for (int64_t i = 0; i < n; i++) w[i] = AT(a, n, i, i);
    for (int64_t i = 1; i < n; i++) /* ascending, columns along (insertion sort: n is small) */
        for (int64_t j = i; j > 0 && w[j - 1] > w[j]; j--) {
            double t = w[j];
            w[j] = w[j - 1], w[j - 1] = t;
            for (int64_t k = 0; k < n; k++) {
                t = AT(vecs, n, k, j);
                AT(vecs, n, k, j) = AT(vecs, n, k, j - 1);
                AT(vecs, n, k, j - 1) = t;
            }
        }
    return !converged;
}

/* ---- SVD: one-sided Jacobi on the columns ---- */

/* Columns of x (rows x cols, row-major) from column `from` on made orthonormal
 * to the earlier ones, drawing on the unit vectors where a column vanishes. */
static void complete_basis(double *x, int64_t rows, int64_t cols, int64_t from) {
    int64_t unit = 0;
    for (int64_t c = from; c < cols; c++) {
        for (int tries = 0; tries <= rows; tries++) {
            double norm = 0;
            for (int pass = 0; pass < 2; pass++) /* Gram-Schmidt twice: orthogonal to rounding */
                for (int64_t d = 0; d < c; d++) {
                    double s = 0;
                    for (int64_t i = 0; i < rows; i++) s += AT(x, cols, i, d) * AT(x, cols, i, c);
                    for (int64_t i = 0; i < rows; i++) AT(x, cols, i, c) -= s * AT(x, cols, i, d);
                }
            for (int64_t i = 0; i < rows; i++) norm += AT(x, cols, i, c) * AT(x, cols, i, c);
            norm = sqrt(norm);
            if (norm > 1e-10) {
                for (int64_t i = 0; i < rows; i++) AT(x, cols, i, c) /= norm;
                break;
            }
            for (int64_t i = 0; i < rows; i++) AT(x, cols, i, c) = i == unit % rows;
            unit++;
        }
    }
}

/* a: m x n with m >= n. u: m x ku, s: n, v: n x n (columns: right vectors). */
static int svd_tall(double *a, int64_t m, int64_t n, double *u, int64_t ku, double *s, double *v) {
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) AT(v, n, i, j) = i == j;
    /* A column whose squared norm falls below this is rounding noise of a rank-deficient
     * matrix: the relative test below can never pass for it (each rotation shrinks it
     * towards underflow), so pairs with it count as converged; it becomes a zero value. */
    double fro2 = 0;
    for (int64_t i = 0; i < m * n; i++) fro2 += a[i] * a[i];
    double noise2 = fro2 * 1e-30;
    int converged = 0;
    for (int sweep = 0; sweep < 100 && !converged; sweep++) {
        converged = 1;
        for (int64_t p = 0; p < n; p++)
            for (int64_t q = p + 1; q < n; q++) {
                double alpha = 0, beta = 0, gamma = 0;
                for (int64_t i = 0; i < m; i++) {
                    double x = AT(a, n, i, p), y = AT(a, n, i, q);
                    alpha += x * x, beta += y * y, gamma += x * y;
                }
                if (gamma == 0 || fabs(gamma) <= 1e-15 * sqrt(alpha * beta)) continue;
                if (alpha <= noise2 || beta <= noise2) continue;
                converged = 0;
                double zeta = (beta - alpha) / (2 * gamma);
                double t = (zeta >= 0 ? 1 : -1) / (fabs(zeta) + sqrt(1 + zeta * zeta));
                double c = 1 / sqrt(1 + t * t), sn = c * t;
                rotate_columns(a, n, m, p, q, c, sn);
                rotate_columns(v, n, n, p, q, c, sn);
            }
    }
    int64_t *order = malloc(sizeof *order * (size_t)n);
    double *norms = malloc(sizeof *norms * (size_t)n);
    if (!order || !norms) {
        free(order);
        free(norms);
        return -1;
    }
    for (int64_t j = 0; j < n; j++) {
        double x = 0;
        for (int64_t i = 0; i < m; i++) x += AT(a, n, i, j) * AT(a, n, i, j);
        norms[j] = sqrt(x);
        order[j] = j;
    }
    for (int64_t i = 1; i < n; i++) /* descending */
        for (int64_t j = i; j > 0 && norms[order[j - 1]] < norms[order[j]]; j--) {
            int64_t t = order[j];
            order[j] = order[j - 1], order[j - 1] = t;
        }
    double *vs = malloc(sizeof *vs * (size_t)(n * n));
    if (!vs) {
        free(order);
        free(norms);
        return -1;
    }
    memcpy(vs, v, sizeof *vs * (size_t)(n * n));
    double tiny = (norms[order[0]] > 0 ? norms[order[0]] : 1) * 1e-13 * (double)(m > n ? m : n);
    int64_t rank = 0;
    for (int64_t j = 0; j < n; j++) {
        int64_t o = order[j];
        s[j] = norms[o];
        for (int64_t i = 0; i < n; i++) AT(v, n, i, j) = AT(vs, n, i, o);
        if (norms[o] > tiny) rank = j + 1;
        for (int64_t i = 0; i < m; i++) AT(u, ku, i, j) = norms[o] > tiny ? AT(a, n, i, o) / norms[o] : 0;
    }
    for (int64_t j = n; j < ku; j++)
        for (int64_t i = 0; i < m; i++) AT(u, ku, i, j) = 0;
    complete_basis(u, m, ku, rank);
    free(vs);
    free(order);
    free(norms);
    return !converged;
}

static wick_status svd(const wk_decomp_args *g, int64_t b) {
    int64_t m = g->m, n = g->n, k = m < n ? m : n;
    int64_t ku = g->full ? m : k, kv = g->full ? n : k;
    double *a = g->a + b * m * n, *u = g->q + b * m * ku, *s = g->w + b * k, *vh = g->r + b * kv * n;
    int tall = m >= n;
    int64_t rows = tall ? m : n, cols = tall ? n : m; /* the work on A or A^T */
    int64_t kl = tall ? ku : kv;                      /* the left factor's columns there */
    double *x = malloc(sizeof *x * (size_t)(rows * cols + rows * kl + cols * cols));
    if (!x) return WICK_ERR_OOM; /* the caller's thread says it */
    double *left = x + rows * cols, *right = left + rows * kl;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) AT(x, cols, i, j) = tall ? AT(a, n, i, j) : AT(a, n, j, i);
    int r = svd_tall(x, rows, cols, left, kl, s, right);
    if (r < 0) {
        free(x);
        return WICK_ERR_OOM;
    }
    g->info[b] = r;
    /* A = left S right^T; for A^T the factors swap: A = right S left^T */
    double *uu = tall ? left : right, *vv = tall ? right : left;
    int64_t uu_ld = tall ? kl : cols, vv_ld = tall ? cols : kl;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < ku; j++) AT(u, ku, i, j) = j < (tall ? kl : cols) ? AT(uu, uu_ld, i, j) : 0;
    for (int64_t i = 0; i < kv; i++)
        for (int64_t j = 0; j < n; j++) AT(vh, n, i, j) = i < (tall ? cols : kl) ? AT(vv, vv_ld, j, i) : 0;
    free(x);
    return WICK_OK;
}

/* ---- the entry: one matrix per task ---- */

static wick_status decompose_one(const wk_decomp_args *g, int64_t b, double *scratch) {
    int64_t m = g->m, n = g->n, k = m < n ? m : n;
    double *a = g->a + b * m * n;
    switch (g->kind) {
    case WK_DECOMP_LU: g->info[b] = lu(a, m, n, g->pivots + b * k); return WICK_OK;
    case WK_DECOMP_CHOLESKY: g->info[b] = cholesky(a, n); return WICK_OK;
    case WK_DECOMP_QR: {
        int64_t kq = g->full ? m : k;
        qr(a, m, n, g->q + b * m * kq, kq, g->r + b * kq * n, scratch);
        g->info[b] = 0;
        return WICK_OK;
    }
    case WK_DECOMP_EIGH: g->info[b] = eigh(a, n, g->w + b * n, g->q + b * n * n); return WICK_OK;
    case WK_DECOMP_SVD: return svd(g, b);
    case WK_DECOMP_SOLVE:
        g->info[b] = lu(a, n, n, g->pivots + b * n);
        if (!g->info[b]) lu_solve(a, n, g->pivots + b * n, g->r + b * n * g->k, g->k);
        return WICK_OK;
    case WK_DECOMP_DET:
        lu(a, n, n, g->pivots + b * n);
        lu_det(a, n, g->pivots + b * n, g->w + 2 * b, g->w + 2 * b + 1);
        g->info[b] = 0; /* a singular matrix has det 0, log |det| -inf */
        return WICK_OK;
    }
    return WICK_ERR_ARGUMENT;
}

typedef struct {
    const wk_decomp_args *args;
    wick_status st;
} decomp_job;

static void decomp_range(void *ud, int64_t begin, int64_t end) {
    decomp_job *j = ud;
    const wk_decomp_args *g = j->args;
    int64_t k = g->m < g->n ? g->m : g->n;
    double *scratch = NULL;
    if (g->kind == WK_DECOMP_QR && !(scratch = malloc(sizeof *scratch * (size_t)(g->m + k + k * g->m)))) {
        __atomic_store_n(&j->st, WICK_ERR_OOM, __ATOMIC_RELAXED);
        return;
    }
    for (int64_t b = begin; b < end; b++) {
        wick_status st = decompose_one(g, b, scratch);
        if (st) __atomic_store_n(&j->st, st, __ATOMIC_RELAXED);
    }
    free(scratch);
}

wick_status cpu_decompose(const wk_decomp_args *a) {
    decomp_job j = {a, WICK_OK};
    int64_t work = a->m * a->n * (a->m > a->n ? a->m : a->n);
    wick_status st = wk_parallel_for(a->batch, work > 4096 ? 2 : 4096 / (work + 1) + 2, decomp_range, &j);
    if (st) return st;
    st = __atomic_load_n(&j.st, __ATOMIC_RELAXED);
    return st ? wick_fail(st, "linalg: out of memory in a decomposition") : WICK_OK;
}
