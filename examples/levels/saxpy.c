/* saxpy: y = a*x + y over n floats (BLAS L1; Sequoia Table 1), on any composition of
 * sluice_levels runtimes, chosen by SLUICE_LEVELS alone.
 *
 * Usage: saxpy [n]          n: elements (K/M/G suffixes), default 4M
 *
 * The top allocates x and y (descriptors 1, 2), and runs on all its children
 *   INIT    (FILL)  x[i] = gen(F_X, i), y[i] = gen(F_Y, i);
 *   COMPUTE (SAXPY) timed;
 *   CHECK           y[i] against a*gen(F_X, i) + gen(F_Y, i), computed here from the formulas.
 * Every task is a row walk (common.h, rw_task) over elements: each child takes its share, and
 * either streams it through the runtime below in pipelined blocks (x in; y in and out) or,
 * as a leaf, computes on the parent's memory (smp) or on its own buffers (disk, cluster).
 * Prints one line "saxpy: OK ..." (or "saxpy: FAILED <n> mismatches", exit status 1). */
#include "common.h"

/* T_STAGE (common.h: staging through a level whose top is not addressable) comes first. */
enum { T_FILL = LV_APP_TASKS, T_SAXPY, T_CHECK, NTASKS };
enum { D_X = 1, D_Y = 2 };
/* Shares of 16 elements (64 bytes): children never write the same cache line of y. */
#define ALIGN 16

typedef struct {
    float alpha;
} saxpy_params_t;

static void saxpy_leaf(const rw_arg_t *a, const rw_view_t *v, size_t lo, size_t hi) {
    saxpy_params_t p;
    memcpy(&p, a->user, sizeof p);
    const float *restrict x = rw_row(&v[0], (int64_t)lo);
    float *restrict y = rw_row(&v[1], (int64_t)lo);
    for (size_t i = 0; i < hi - lo; i++) y[i] = p.alpha * x[i] + y[i];
}

static void check_leaf(const rw_arg_t *a, const rw_view_t *v, size_t lo, size_t hi) {
    saxpy_params_t p;
    memcpy(&p, a->user, sizeof p);
    const float *y = rw_row(&v[0], (int64_t)lo);
    for (size_t i = 0; i < hi - lo; i++) {
        uint64_t g = a->g0 + lo + i;
        check_value("y", g, y[i], (double)p.alpha * gen(F_X, g) + gen(F_Y, g));
    }
}

static void task_saxpy(sluice_level_t l, const void *arg, size_t len) { rw_task(l, arg, len, saxpy_leaf); }
static void task_check(sluice_level_t l, const void *arg, size_t len) { rw_task(l, arg, len, check_leaf); }

int main(int argc, char **argv) {
    lv_init(&argc, &argv);
    size_t n = argc > 1 ? lv_parse_size(argv[1]) : (size_t)4 << 20;
    const saxpy_params_t params = {.alpha = 3.0f};
    static const sluice_task_fn tasks[NTASKS] = {[T_STAGE] = lv_task_stage,
                                                 [T_FILL] = task_fill, [T_SAXPY] = task_saxpy, [T_CHECK] = task_check};

    sluice_level_t top = NULL;
    CK(sluice_levels_open(NULL, tasks, NTASKS, &top));
    lv_run_t run = {0};
    if (top != NULL) { /* the rest of a cluster's ranks served as children inside the open call */
        lv_top_array(top, D_X, n, 1);
        lv_top_array(top, D_Y, n, 1);

        rw_arg_t init = rw_arg(T_FILL, n, ALIGN);
        rw_add(&init, D_X, RW_OUT, 1, 0);
        rw_add(&init, D_Y, RW_OUT, 1, 0);
        const fill_params_t f = {{F_X, F_Y}};
        memcpy(init.user, &f, sizeof f);
        lv_call_all(top, T_FILL, &init, sizeof init);

        rw_arg_t compute = rw_arg(T_SAXPY, n, ALIGN);
        rw_add(&compute, D_X, RW_IN, 1, 0);
        rw_add(&compute, D_Y, RW_INOUT, 1, 0);
        memcpy(compute.user, &params, sizeof params);
        compute.measure = 1;
        lv_run_begin(&run, top);
        lv_call_all(top, T_SAXPY, &compute, sizeof compute);
        lv_run_end(&run, top);

        rw_arg_t check = rw_arg(T_CHECK, n, ALIGN);
        rw_add(&check, D_Y, RW_IN, 1, 0);
        memcpy(check.user, &params, sizeof params);
        lv_call_all(top, T_CHECK, &check, sizeof check);

        CK(sluice_level_close(&top)); /* frees x and y */
    }
    char what[64];
    snprintf(what, sizeof what, "n=%zu", n);
    return lv_finish("saxpy", &run, 2.0 * (double)n, what);
}
