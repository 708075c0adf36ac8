/* sgemm: C = A*B, square n x n float matrices (BLAS L3; Sequoia Table 1), on any composition of
 * sluice_levels runtimes, chosen by SLUICE_LEVELS alone.
 *
 * Usage: sgemm [n] [direct]    n: order (K suffix allowed), default 512
 *   direct: no runtime: the same blocked kernel (common.h, sgemm_blocked) on the whole problem in
 *           this thread; the baseline of "SGEMM on the SMP runtime >= 80% of the kernel called
 *           directly".
 *
 * The top allocates A, B, C (descriptors 1, 2, 3) and runs on all children
 *   INIT    (FILL)  A[i][k] = gen(F_A, i*n + k), B[k][j] = gen(F_B, k*n + j);
 *   COMPUTE (SGEMM) timed;
 *   CHECK           rows of C against plain sums over k of gen(F_A, .) * gen(F_B, .): every row up
 *                   to n = 512, every s-th row above (s = n^3 / 2^27: the check costs at most
 *                   2^27 multiply-adds, not n^3).
 * COMPUTE is a tile walk (common.h, gemm_task): each child takes rows of C; going down a level it
 * tiles them (bi x bj, the largest that fit twice in the level's memory) and loops over blocks of
 * k: A blocks (bi runs of bk), B blocks (bk runs of bj) and C tiles (bi runs of bj, read only when
 * accumulating, written after the tile's last k block) are transfer lists of many runs; blocks are
 * pipelined. A leaf runs sgemm_blocked on the parent's memory (smp) or its own buffers. */
#include "common.h"

/* T_STAGE (common.h: staging through a level whose top is not addressable) comes first. */
enum { T_FILL = LV_APP_TASKS, T_SGEMM, T_CHECK, NTASKS };
enum { D_A = 1, D_B = 2, D_C = 3 };

typedef struct {
    size_t n;      /* order */
    size_t stride; /* CHECK: rows i with i % stride == 0 */
} sgemm_params_t;

static size_t check_stride(size_t n) {
    double s = (double)n * (double)n * (double)n / (double)((size_t)1 << 27);
    return s <= 1.0 ? 1 : (size_t)ceil(s);
}

/* Compares row i of C (n floats) with the plain reference sum, in double. */
static void check_row(const float *c, size_t i, size_t n, float *arow) {
    for (size_t k = 0; k < n; k++) arow[k] = gen(F_A, i * n + k);
    for (size_t j = 0; j < n; j++) {
        double want = 0.0;
        for (size_t k = 0; k < n; k++) want += (double)arow[k] * gen(F_B, k * n + j);
        check_value("C", i * n + j, c[j], want);
    }
}

static void check_leaf(const rw_arg_t *a, const rw_view_t *v, size_t lo, size_t hi) {
    sgemm_params_t p;
    memcpy(&p, a->user, sizeof p);
    float *arow = lv_malloc(p.n * sizeof(float));
    for (size_t r = lo; r < hi; r++)
        if ((a->g0 + r) % p.stride == 0) check_row(rw_row(&v[0], (int64_t)r), a->g0 + r, p.n, arow);
    free(arow);
}

static void task_check(sluice_level_t l, const void *arg, size_t len) { rw_task(l, arg, len, check_leaf); }

/* The baseline: no runtime, one thread, the same kernel on the whole problem. */
static void run_direct(size_t n, lv_run_t *run) {
    float *A = lv_malloc(n * n * sizeof(float)), *B = lv_malloc(n * n * sizeof(float)), *C = lv_malloc(n * n * sizeof(float));
    for (size_t i = 0; i < n * n; i++) {
        A[i] = gen(F_A, i);
        B[i] = gen(F_B, i);
    }
    memset(C, 0, n * n * sizeof(float)); /* touch C's pages before timing, as the runtimes' INIT does */
    run->have_top = 1;
    run->direct = 1;
    run->t0 = lv_now();
    sgemm_blocked(n, n, n, A, n, B, n, C, n, 0);
    run->seconds = lv_now() - run->t0;
    float *arow = lv_malloc(n * sizeof(float));
    size_t stride = check_stride(n);
    for (size_t i = 0; i < n; i += stride) check_row(C + i * n, i, n, arow);
    free(arow);
    free(A);
    free(B);
    free(C);
}

int main(int argc, char **argv) {
    lv_init(&argc, &argv);
    size_t n = 512;
    int direct = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "direct") == 0)
            direct = 1;
        else
            n = lv_parse_size(argv[i]);
    }
    const sgemm_params_t params = {.n = n, .stride = check_stride(n)};
    static const sluice_task_fn tasks[NTASKS] = {[T_STAGE] = lv_task_stage,
                                                 [T_FILL] = task_fill, [T_SGEMM] = gemm_task, [T_CHECK] = task_check};

    lv_run_t run = {0};
    if (direct) {
        run_direct(n, &run);
    } else {
        sluice_level_t top = NULL;
        CK(sluice_levels_open(NULL, tasks, NTASKS, &top));
        if (top != NULL) { /* the rest of a cluster's ranks served as children inside the open call */
            lv_top_array(top, D_A, n, n);
            lv_top_array(top, D_B, n, n);
            lv_top_array(top, D_C, n, n);

            rw_arg_t init = rw_arg(T_FILL, n * n, 16);
            rw_add(&init, D_A, RW_OUT, 1, 0);
            rw_add(&init, D_B, RW_OUT, 1, 0);
            const fill_params_t f = {{F_A, F_B}};
            memcpy(init.user, &f, sizeof f);
            lv_call_all(top, T_FILL, &init, sizeof init);

            const gemm_arg_t compute = {.task = T_SGEMM, .measure = 1, .beta = 0, .a = D_A, .b = D_B, .c = D_C, .lo = 0, .hi = n};
            lv_run_begin(&run, top);
            lv_call_all(top, T_SGEMM, &compute, sizeof compute);
            lv_run_end(&run, top);

            rw_arg_t check = rw_arg(T_CHECK, n, 1); /* units: rows of C */
            rw_add(&check, D_C, RW_IN, n, 0);
            memcpy(check.user, &params, sizeof params);
            lv_call_all(top, T_CHECK, &check, sizeof check);

            CK(sluice_level_close(&top));
        }
    }
    char what[96];
    snprintf(what, sizeof what, "n=%zu checked-rows=1/%zu", n, params.stride);
    return lv_finish("sgemm", &run, 2.0 * (double)n * (double)n * (double)n, what);
}
