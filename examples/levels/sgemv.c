/* sgemv: y = A*x, A an m x n float matrix (BLAS L2; Sequoia Table 1), on any composition of
 * sluice_levels runtimes, chosen by SLUICE_LEVELS alone.
 *
 * Usage: sgemv [m [n]]      rows and columns (K/M/G suffixes), default 2048 x 2048
 *
 * The top allocates A (m x n), x (n) and y (m) (descriptors 1, 2, 3) and runs on all children
 *   INIT    (FILL, twice)  A[i][j] = gen(F_A, i*n + j), x[j] = gen(F_X, j);
 *   COMPUTE (SGEMV) timed;
 *   CHECK           y[i] against the plain sum over j of gen(F_A, i*n + j) * gen(F_X, j).
 * COMPUTE is a row walk (common.h, rw_task) over the rows of A and y: each child takes its rows;
 * going down a level it moves row blocks of A (and of y back out) per pipelined block and
 * all of x once (RW_WHOLE: every row needs it); a leaf computes on the parent's memory (smp) or
 * its own buffers (disk, cluster). Prints one line "sgemv: OK ..." or "sgemv: FAILED ...". */
#include "common.h"

/* T_STAGE (common.h: staging through a level whose top is not addressable) comes first. */
enum { T_FILL = LV_APP_TASKS, T_SGEMV, T_CHECK, NTASKS };
enum { D_A = 1, D_X = 2, D_Y = 3 };

typedef struct {
    size_t n; /* columns: CHECK's reference needs it (y's units are rows) */
} sgemv_params_t;

/* One row times x: eight partial sums, so the loop vectorizes without reassociation flags. */
static float dot(const float *restrict a, const float *restrict x, size_t n) {
    float s[8] = {0};
    size_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (int l = 0; l < 8; l++) s[l] += a[j + l] * x[j + l];
    float t = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
    for (; j < n; j++) t += a[j] * x[j];
    return t;
}

static void sgemv_leaf(const rw_arg_t *a, const rw_view_t *v, size_t lo, size_t hi) {
    (void)a;
    const float *x = v[1].base;
    for (size_t r = lo; r < hi; r++) *rw_row(&v[2], (int64_t)r) = dot(rw_row(&v[0], (int64_t)r), x, v[0].row_elems);
}

static void check_leaf(const rw_arg_t *a, const rw_view_t *v, size_t lo, size_t hi) {
    sgemv_params_t p;
    memcpy(&p, a->user, sizeof p);
    for (size_t r = lo; r < hi; r++) {
        uint64_t i = a->g0 + r;
        double want = 0.0;
        for (size_t j = 0; j < p.n; j++) want += (double)gen(F_A, i * p.n + j) * gen(F_X, j);
        check_value("y", i, *rw_row(&v[0], (int64_t)r), want);
    }
}

static void task_sgemv(sluice_level_t l, const void *arg, size_t len) { rw_task(l, arg, len, sgemv_leaf); }
static void task_check(sluice_level_t l, const void *arg, size_t len) { rw_task(l, arg, len, check_leaf); }

/* FILL of one array, as a flat run of elements. */
static void fill(sluice_level_t top, sluice_array_desc_t desc, size_t elements, int formula) {
    rw_arg_t f = rw_arg(T_FILL, elements, 16);
    rw_add(&f, desc, RW_OUT, 1, 0);
    const fill_params_t p = {{formula}};
    memcpy(f.user, &p, sizeof p);
    lv_call_all(top, T_FILL, &f, sizeof f);
}

int main(int argc, char **argv) {
    lv_init(&argc, &argv);
    size_t m = argc > 1 ? lv_parse_size(argv[1]) : 2048;
    size_t n = argc > 2 ? lv_parse_size(argv[2]) : 2048;
    const sgemv_params_t params = {.n = n};
    static const sluice_task_fn tasks[NTASKS] = {[T_STAGE] = lv_task_stage,
                                                 [T_FILL] = task_fill, [T_SGEMV] = task_sgemv, [T_CHECK] = task_check};

    sluice_level_t top = NULL;
    CK(sluice_levels_open(NULL, tasks, NTASKS, &top));
    lv_run_t run = {0};
    if (top != NULL) { /* the rest of a cluster's ranks served as children inside the open call */
        lv_top_array(top, D_A, m, n);
        lv_top_array(top, D_X, n, 1);
        lv_top_array(top, D_Y, m, 1);
        fill(top, D_A, m * n, F_A);
        fill(top, D_X, n, F_X);

        /* Rows of y in shares of 16 (one cache line of y per child boundary). */
        rw_arg_t compute = rw_arg(T_SGEMV, m, 16);
        rw_add(&compute, D_A, RW_IN, n, 0);
        rw_add(&compute, D_X, RW_WHOLE, 0, 0);
        rw_add(&compute, D_Y, RW_OUT, 1, 0);
        memcpy(compute.user, &params, sizeof params);
        compute.measure = 1;
        lv_run_begin(&run, top);
        lv_call_all(top, T_SGEMV, &compute, sizeof compute);
        lv_run_end(&run, top);

        rw_arg_t check = rw_arg(T_CHECK, m, 16);
        rw_add(&check, D_Y, RW_IN, 1, 0);
        memcpy(check.user, &params, sizeof params);
        lv_call_all(top, T_CHECK, &check, sizeof check);

        CK(sluice_level_close(&top));
    }
    char what[64];
    snprintf(what, sizeof what, "m=%zu n=%zu", m, n);
    return lv_finish("sgemv", &run, 2.0 * (double)m * (double)n, what);
}
