/* conv2d: out = in (*) w, a 9x9 filter over an h x w float image, zero outside the image
 * (non-periodic boundaries; Sequoia Table 1), on any composition of sluice_levels runtimes,
 * chosen by SLUICE_LEVELS alone.
 *
 * Usage: conv2d [h [w]]     image rows and columns (K suffix allowed), default 1024 x 1024
 *
 *   out[i][j] = sum over di, dj in -4..4 of f[di+4][dj+4] * in[i+di][j+dj]   (in = 0 outside)
 *
 * The top allocates in and out (descriptors 1, 2) and runs on all children
 *   INIT    (FILL)   in[i][j] = gen(F_IMAGE, i*w + j); the filter f[t] = gen(F_FILTER, t) travels in
 *                    the COMPUTE task's argument block (81 floats);
 *   COMPUTE (CONV2D) timed;
 *   CHECK            rows of out against the plain 81-term sums of the formulas (every row while
 *                    that costs at most 2^27 terms, every s-th row beyond).
 * COMPUTE is a row walk (common.h, rw_task) over output rows: going down a level, a block of
 * output rows takes the input rows of the block plus a 4-row halo on each side, clipped at the
 * image's edges. Leaves treat rows outside the input they hold as zero, which is right at every
 * level: a block lacks a row only where its halo was clipped, i.e. outside the image. */
#include "common.h"

/* T_STAGE (common.h: staging through a level whose top is not addressable) comes first. */
enum { T_FILL = LV_APP_TASKS, T_CONV, T_CHECK, NTASKS };
enum { D_IN = 1, D_OUT = 2 };
#define R 4 /* filter radius: 9 x 9 */
#define TAPS ((2 * R + 1) * (2 * R + 1))

typedef struct {
    size_t h, w;   /* image */
    size_t stride; /* CHECK: rows i with i % stride == 0 */
    float f[TAPS]; /* COMPUTE: the filter */
} conv_params_t;

/* One output row: 81 shifted, scaled copies of input rows added up, each an independent loop
 * along the row (vectorizable); input rows missing from the view are zero. */
static void conv_leaf(const rw_arg_t *a, const rw_view_t *v, size_t lo, size_t hi) {
    conv_params_t p;
    memcpy(&p, a->user, sizeof p);
    size_t w = v[1].row_elems;
    for (size_t r = lo; r < hi; r++) {
        float *restrict o = rw_row(&v[1], (int64_t)r);
        memset(o, 0, w * sizeof(float));
        for (int di = -R; di <= R; di++) {
            const float *restrict in = rw_row(&v[0], (int64_t)r + di);
            if (in == NULL) continue;
            for (int dj = -R; dj <= R; dj++) {
                float f = p.f[(di + R) * (2 * R + 1) + dj + R];
                size_t shift = (size_t)(dj < 0 ? -dj : dj);
                if (shift >= w) continue;
                if (dj < 0) /* columns j >= -dj read in[j + dj] */
                    for (size_t j = shift; j < w; j++) o[j] += f * in[j - shift];
                else /* columns j < w - dj read in[j + dj] */
                    for (size_t j = 0; j < w - shift; j++) o[j] += f * in[j + shift];
            }
        }
    }
}

static size_t check_stride(size_t h, size_t w) {
    double s = (double)h * (double)w * TAPS / (double)((size_t)1 << 27);
    return s <= 1.0 ? 1 : (size_t)ceil(s);
}

static void check_leaf(const rw_arg_t *a, const rw_view_t *v, size_t lo, size_t hi) {
    conv_params_t p;
    memcpy(&p, a->user, sizeof p);
    for (size_t r = lo; r < hi; r++) {
        int64_t i = (int64_t)(a->g0 + r);
        if ((uint64_t)i % p.stride != 0) continue;
        const float *o = rw_row(&v[0], (int64_t)r);
        for (int64_t j = 0; j < (int64_t)p.w; j++) {
            double want = 0.0;
            for (int di = -R; di <= R; di++)
                for (int dj = -R; dj <= R; dj++) {
                    int64_t y = i + di, x = j + dj;
                    if (y < 0 || y >= (int64_t)p.h || x < 0 || x >= (int64_t)p.w) continue;
                    want += (double)gen(F_FILTER, (uint64_t)((di + R) * (2 * R + 1) + dj + R)) * gen(F_IMAGE, (uint64_t)(y * (int64_t)p.w + x));
                }
            check_value("out", (uint64_t)i * p.w + (uint64_t)j, o[j], want);
        }
    }
}

static void task_conv(sluice_level_t l, const void *arg, size_t len) { rw_task(l, arg, len, conv_leaf); }
static void task_check(sluice_level_t l, const void *arg, size_t len) { rw_task(l, arg, len, check_leaf); }

int main(int argc, char **argv) {
    lv_init(&argc, &argv);
    size_t h = argc > 1 ? lv_parse_size(argv[1]) : 1024;
    size_t w = argc > 2 ? lv_parse_size(argv[2]) : 1024;
    conv_params_t params = {.h = h, .w = w, .stride = check_stride(h, w)};
    for (int t = 0; t < TAPS; t++) params.f[t] = gen(F_FILTER, (uint64_t)t);
    _Static_assert(sizeof(conv_params_t) <= RW_USER_MAX, "filter does not fit the argument block");
    static const sluice_task_fn tasks[NTASKS] = {[T_STAGE] = lv_task_stage,
                                                 [T_FILL] = task_fill, [T_CONV] = task_conv, [T_CHECK] = task_check};

    sluice_level_t top = NULL;
    CK(sluice_levels_open(NULL, tasks, NTASKS, &top));
    lv_run_t run = {0};
    if (top != NULL) { /* the rest of a cluster's ranks served as children inside the open call */
        lv_top_array(top, D_IN, h, w);
        lv_top_array(top, D_OUT, h, w);

        rw_arg_t init = rw_arg(T_FILL, h * w, 16);
        rw_add(&init, D_IN, RW_OUT, 1, 0);
        const fill_params_t f = {{F_IMAGE}};
        memcpy(init.user, &f, sizeof f);
        lv_call_all(top, T_FILL, &init, sizeof init);

        rw_arg_t compute = rw_arg(T_CONV, h, 1); /* units: output rows */
        rw_add(&compute, D_IN, RW_IN, w, R);
        rw_add(&compute, D_OUT, RW_OUT, w, 0);
        memcpy(compute.user, &params, sizeof params);
        compute.measure = 1;
        lv_run_begin(&run, top);
        lv_call_all(top, T_CONV, &compute, sizeof compute);
        lv_run_end(&run, top);

        rw_arg_t check = rw_arg(T_CHECK, h, 1);
        rw_add(&check, D_OUT, RW_IN, w, 0);
        memcpy(check.user, &params, sizeof params);
        lv_call_all(top, T_CHECK, &check, sizeof check);

        CK(sluice_level_close(&top));
    }
    char what[96];
    snprintf(what, sizeof what, "h=%zu w=%zu checked-rows=1/%zu", h, w, params.stride);
    return lv_finish("conv2d", &run, 2.0 * TAPS * (double)h * (double)w, what);
}
