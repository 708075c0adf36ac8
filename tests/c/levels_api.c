/* Every call of include/sluice_levels.h, its error cases and the compositions: run under the
 * composition in SLUICE_LEVELS (the test runs it with several). Prints "levels_api: OK" or
 * the first failure and exits 1. MPI is initialized (as an application would) but the smp and
 * disk levels do not use it. */
#include <mpi.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../include/sluice_levels.h"

static atomic_int failures;

#define CHECK(cond, ...)                                                                          \
    do {                                                                                          \
        if (!(cond)) {                                                                            \
            fprintf(stderr, "levels_api: %s:%d: ", __FILE__, __LINE__);                            \
            fprintf(stderr, __VA_ARGS__);                                                         \
            fputc('\n', stderr);                                                                  \
            atomic_fetch_add(&failures, 1);                                                       \
        }                                                                                         \
    } while (0)
#define EXPECT(call, code) CHECK((call) == (code), "%s != %s", #call, #code)

enum { T_FILL, T_ERRORS, T_BARRIER, T_NESTED, T_CYCLIC, NTASKS };
enum { D_A = 1, D_B = 2, D_F = 3, D_C = 4 };
#define BLOCK_ROWS 7 /* rows (here: elements) per block of the block-cyclic array D_C */
#define N 100000 /* elements of array A (doubles) */

struct range { size_t n, base; };

/* Value of element i after T_FILL. */
static double value(size_t i) { return (double)(i % 1000) * 0.5 + (double)(i / 1000); }

/* Each child writes its share of A through a local buffer (put), then reads it back (get) and
 * reads a strided list (every 7th element, several runs) into a second buffer. */
static void fill(sluice_level_t lv, const void *arg, size_t len) {
    CHECK(len == sizeof(struct range), "arg length %zu", len);
    const struct range *r = arg;
    int id = sluice_level_id(lv), n = sluice_level_siblings(lv);
    size_t lo = r->n * (size_t)id / (size_t)n, hi = r->n * (size_t)(id + 1) / (size_t)n, m = hi - lo;
    double *buf = malloc(m * sizeof *buf), *back = calloc(m, sizeof *back);
    for (size_t i = 0; i < m; i++) buf[i] = value(lo + i);
    sluice_array_t a, local, lback;
    EXPECT(sluice_array_get(lv, D_A, &a), SLUICE_SUCCESS);
    EXPECT(sluice_array_local(buf, sizeof(double), 1, &m, &local), SLUICE_SUCCESS);
    EXPECT(sluice_array_local(back, sizeof(double), 1, &m, &lback), SLUICE_SUCCESS);
    size_t zero = 0, at = lo;
    sluice_xfer_list_t put, get;
    sluice_xfer_t x;
    EXPECT(sluice_xfer_list_create(lv, &a, &local, &at, &zero, &m, 1, &put), SLUICE_SUCCESS);
    EXPECT(sluice_xfer(lv, put, &x), SLUICE_SUCCESS);
    EXPECT(sluice_xfer_wait(lv, &x), SLUICE_SUCCESS);
    CHECK(x == NULL, "handle not reset");
    EXPECT(sluice_xfer_list_create(lv, &lback, &a, &zero, &at, &m, 1, &get), SLUICE_SUCCESS);
    EXPECT(sluice_xfer(lv, get, &x), SLUICE_SUCCESS);
    EXPECT(sluice_xfer_wait(lv, &x), SLUICE_SUCCESS);
    for (size_t i = 0; i < m; i++) CHECK(back[i] == value(lo + i), "child %d: element %zu is %g", id, lo + i, back[i]);
    /* Strided: element lo + 7k (k < m/7) into back[k], runs of one element, dense locally. */
    size_t k = m / 7, *di = malloc((k + 1) * sizeof *di), *si = malloc((k + 1) * sizeof *si), *ln = malloc((k + 1) * sizeof *ln);
    for (size_t i = 0; i < k; i++) { di[i] = i; si[i] = lo + 7 * i; ln[i] = 1; }
    memset(back, 0, m * sizeof *back);
    sluice_xfer_list_t strided;
    EXPECT(sluice_xfer_list_create(lv, &lback, &a, di, si, ln, k, &strided), SLUICE_SUCCESS);
    EXPECT(sluice_xfer(lv, strided, &x), SLUICE_SUCCESS);
    EXPECT(sluice_xfer_wait(lv, &x), SLUICE_SUCCESS);
    for (size_t i = 0; i < k; i++) CHECK(back[i] == value(lo + 7 * i), "child %d: strided %zu is %g", id, i, back[i]);
    /* The same scattered into every other local element (not dense locally). */
    for (size_t i = 0; i < k; i++) di[i] = 2 * i;
    memset(back, 0, m * sizeof *back);
    sluice_xfer_list_t scattered;
    if (2 * k <= m) {
        EXPECT(sluice_xfer_list_create(lv, &lback, &a, di, si, ln, k, &scattered), SLUICE_SUCCESS);
        EXPECT(sluice_xfer(lv, scattered, &x), SLUICE_SUCCESS);
        EXPECT(sluice_xfer_wait(lv, &x), SLUICE_SUCCESS);
        for (size_t i = 0; i < k; i++) CHECK(back[2 * i] == value(lo + 7 * i) && back[2 * i + 1] == 0, "child %d: scattered %zu", id, i);
        EXPECT(sluice_xfer_list_free(&scattered), SLUICE_SUCCESS);
    }
    /* Shared namespace: a list whose local side is the top's own memory is elided. */
    if (a.data) {
        sluice_array_t self;
        size_t whole = r->n;
        EXPECT(sluice_array_local(a.data, sizeof(double), 1, &whole, &self), SLUICE_SUCCESS);
        sluice_xfer_list_t same;
        EXPECT(sluice_xfer_list_create(lv, &self, &a, &at, &at, &m, 1, &same), SLUICE_SUCCESS);
        EXPECT(sluice_xfer(lv, same, &x), SLUICE_SUCCESS);
        EXPECT(sluice_xfer_wait(lv, &x), SLUICE_SUCCESS);
        EXPECT(sluice_xfer_list_free(&same), SLUICE_SUCCESS);
    }
    EXPECT(sluice_xfer_list_free(&put), SLUICE_SUCCESS);
    EXPECT(sluice_xfer_list_free(&get), SLUICE_SUCCESS);
    EXPECT(sluice_xfer_list_free(&strided), SLUICE_SUCCESS);
    CHECK(put == NULL, "list not reset");
    EXPECT(sluice_xfer_list_free(&put), SLUICE_SUCCESS); /* NULL: no effect */
    free(buf), free(back), free(di), free(si), free(ln);
}

/* A child's error cases: nothing is written, every code as documented. */
static void errors(sluice_level_t lv, const void *arg, size_t len) {
    (void)arg, (void)len;
    double buf[16] = {0};
    size_t sixteen = 16, zero = 0, one = 1, big = N, past = N - 8, eight = 8;
    sluice_array_t a, local, other;
    sluice_xfer_list_t l = NULL;
    sluice_xfer_t x = NULL;
    EXPECT(sluice_array_get(lv, D_A, &a), SLUICE_SUCCESS);
    EXPECT(sluice_array_get(lv, 999, &other), SLUICE_LEVELS_ERR_DESC);
    EXPECT(sluice_array_get(lv, D_B, &other), SLUICE_LEVELS_ERR_DESC); /* allocated, not added */
    EXPECT(sluice_array_local(buf, sizeof(double), 1, &sixteen, &local), SLUICE_SUCCESS);
    EXPECT(sluice_array_local(NULL, sizeof(double), 1, &sixteen, &local), SLUICE_ERR_ARG);
    EXPECT(sluice_array_local(buf, sizeof(double), 5, &sixteen, &other), SLUICE_ERR_ARG);
    /* Out of bounds: past the top array, past the local array. */
    EXPECT(sluice_xfer_list_create(lv, &local, &a, &zero, &big, &one, 1, &l), SLUICE_LEVELS_ERR_BOUNDS);
    EXPECT(sluice_xfer_list_create(lv, &local, &a, &zero, &past, &sixteen, 1, &l), SLUICE_LEVELS_ERR_BOUNDS);
    EXPECT(sluice_xfer_list_create(lv, &local, &a, &eight, &zero, &sixteen, 1, &l), SLUICE_LEVELS_ERR_BOUNDS);
    CHECK(l == NULL, "list set on error");
    /* Both local, neither local, element sizes differ. */
    EXPECT(sluice_xfer_list_create(lv, &local, &local, &zero, &zero, &one, 1, &l), SLUICE_LEVELS_ERR_DESC);
    EXPECT(sluice_xfer_list_create(lv, &a, &a, &zero, &zero, &one, 1, &l), SLUICE_LEVELS_ERR_DESC);
    sluice_array_t bytes;
    EXPECT(sluice_array_local(buf, 1, 1, &sixteen, &bytes), SLUICE_SUCCESS);
    EXPECT(sluice_xfer_list_create(lv, &bytes, &a, &zero, &zero, &one, 1, &l), SLUICE_ERR_ARG);
    EXPECT(sluice_xfer_list_create(lv, &local, &a, NULL, &zero, &one, 1, &l), SLUICE_ERR_ARG);
    EXPECT(sluice_xfer(lv, NULL, &x), SLUICE_ERR_ARG);
    EXPECT(sluice_xfer_wait(lv, &x), SLUICE_SUCCESS); /* NULL handle: no effect */
    /* Top calls on a child's handle. */
    sluice_array_t c;
    EXPECT(sluice_array_alloc(lv, 8, 1, &sixteen, 50, 0, &c), SLUICE_LEVELS_ERR_ROLE);
    EXPECT(sluice_array_alloc_cyclic(lv, 8, 1, &sixteen, 50, 0, 1, &c), SLUICE_LEVELS_ERR_ROLE);
    EXPECT(sluice_array_remove(lv, D_A), SLUICE_LEVELS_ERR_ROLE);
    sluice_task_t t;
    EXPECT(sluice_task_call(lv, T_FILL, 0, 1, NULL, 0, &t), SLUICE_LEVELS_ERR_ROLE);
    /* Barrier ranges: outside the children, not containing the caller. */
    int n = sluice_level_siblings(lv), id = sluice_level_id(lv);
    EXPECT(sluice_level_barrier(lv, 0, n + 1), SLUICE_LEVELS_ERR_CHILD);
    EXPECT(sluice_level_barrier(lv, 1, 1), SLUICE_LEVELS_ERR_CHILD);
    if (n > 1) EXPECT(sluice_level_barrier(lv, id == 0 ? 1 : 0, id == 0 ? 2 : 1), SLUICE_LEVELS_ERR_CHILD);
    for (int i = 0; i < 16; i++) CHECK(buf[i] == 0, "buffer written by a refused call");
}

/* Each child marks its slot of D_F, waits at the barrier, then finds every slot marked (the
 * marks travel through the top's memory, so this holds for children in other processes too). */
static void barrier(sluice_level_t lv, const void *arg, size_t len) {
    (void)arg, (void)len;
    int n = sluice_level_siblings(lv), id = sluice_level_id(lv), one = id + 1;
    int *marks = calloc((size_t)n, sizeof *marks);
    size_t zero = 0, at = (size_t)id, single = 1, all = (size_t)n, cnt = 1;
    sluice_array_t f, mine, every;
    sluice_xfer_list_t put, get;
    sluice_xfer_t x;
    EXPECT(sluice_array_get(lv, D_F, &f), SLUICE_SUCCESS);
    EXPECT(sluice_array_local(&one, sizeof(int), 1, &single, &mine), SLUICE_SUCCESS);
    EXPECT(sluice_array_local(marks, sizeof(int), 1, &all, &every), SLUICE_SUCCESS);
    EXPECT(sluice_xfer_list_create(lv, &f, &mine, &at, &zero, &cnt, 1, &put), SLUICE_SUCCESS);
    EXPECT(sluice_xfer_list_create(lv, &every, &f, &zero, &zero, &all, 1, &get), SLUICE_SUCCESS);
    EXPECT(sluice_xfer(lv, put, &x), SLUICE_SUCCESS);
    EXPECT(sluice_xfer_wait(lv, &x), SLUICE_SUCCESS);
    EXPECT(sluice_level_barrier(lv, 0, n), SLUICE_SUCCESS);
    EXPECT(sluice_xfer(lv, get, &x), SLUICE_SUCCESS);
    EXPECT(sluice_xfer_wait(lv, &x), SLUICE_SUCCESS);
    for (int i = 0; i < n; i++) CHECK(marks[i] == i + 1, "child %d: after the barrier slot %d holds %d", id, i, marks[i]);
    /* A gets every 5th element of the whole array A, written by every child (other processes'
     * shares on a cluster: runs close together in their memory are read as spans). */
    size_t k = N / 5, *di = malloc(k * sizeof *di), *si = malloc(k * sizeof *si), *ln = malloc(k * sizeof *ln);
    double *sel = calloc(k, sizeof *sel);
    for (size_t i = 0; i < k; i++) { di[i] = i; si[i] = 5 * i + (size_t)id % 5; ln[i] = 1; }
    sluice_array_t a, lsel;
    sluice_xfer_list_t gather;
    EXPECT(sluice_array_get(lv, D_A, &a), SLUICE_SUCCESS);
    EXPECT(sluice_array_local(sel, sizeof(double), 1, &k, &lsel), SLUICE_SUCCESS);
    EXPECT(sluice_xfer_list_create(lv, &lsel, &a, di, si, ln, k, &gather), SLUICE_SUCCESS);
    EXPECT(sluice_xfer(lv, gather, &x), SLUICE_SUCCESS);
    EXPECT(sluice_xfer_wait(lv, &x), SLUICE_SUCCESS);
    for (size_t i = 0; i < k; i++) CHECK(sel[i] == value(si[i]), "child %d: gathered element %zu is %g", id, si[i], sel[i]);
    EXPECT(sluice_xfer_list_free(&gather), SLUICE_SUCCESS);
    free(di), free(si), free(ln), free(sel);
    EXPECT(sluice_level_barrier(lv, 0, n), SLUICE_SUCCESS);
    if (n > 1 && id < 2) EXPECT(sluice_level_barrier(lv, 0, 2), SLUICE_SUCCESS); /* a sub-range */
    EXPECT(sluice_xfer_list_free(&put), SLUICE_SUCCESS);
    EXPECT(sluice_xfer_list_free(&get), SLUICE_SUCCESS);
    free(marks);
}

/* D_C (N doubles in blocks of BLOCK_ROWS, block-cyclic where the top is spread over the
 * children): each child learns from sluice_array_home which blocks its memory holds and puts
 * exactly those (one list of many runs); after a barrier every child gets runs of 5 elements
 * every 11th element, which cross blocks of every child, and checks them. */
static void cyclic(sluice_level_t lv, const void *arg, size_t len) {
    (void)arg, (void)len;
    int n = sluice_level_siblings(lv), id = sluice_level_id(lv), home = -2;
    int spread = strcmp(sluice_level_kind(lv), "cluster") == 0;
    sluice_array_t c;
    EXPECT(sluice_array_get(lv, D_C, &c), SLUICE_SUCCESS);
    EXPECT(sluice_array_home(lv, D_C, N, &home), SLUICE_LEVELS_ERR_BOUNDS);
    EXPECT(sluice_array_home(lv, 999, 0, &home), SLUICE_LEVELS_ERR_DESC);
    EXPECT(sluice_array_home(lv, D_C, 0, NULL), SLUICE_ERR_ARG);
    CHECK(home == -2, "home written by a refused call");
    size_t blocks = (N + BLOCK_ROWS - 1) / BLOCK_ROWS, runs = 0;
    size_t *di = malloc(blocks * sizeof *di), *si = malloc(blocks * sizeof *si), *ln = malloc(blocks * sizeof *ln);
    for (size_t k = 0; k < blocks; k++) {
        size_t at = k * BLOCK_ROWS, in = at + BLOCK_ROWS <= N ? BLOCK_ROWS : N - at; /* the last is short */
        EXPECT(sluice_array_home(lv, D_C, at + k % in, &home), SLUICE_SUCCESS);
        int want = spread ? (int)(k % (size_t)n) : -1;
        CHECK(home == want, "child %d: block %zu is at %d, not %d", id, k, home, want);
        /* Who writes the block: its home, or (one memory) child k mod n. */
        if ((int)(k % (size_t)n) != id) continue;
        di[runs] = si[runs] = at;
        ln[runs++] = in;
    }
    double *buf = calloc(N, sizeof *buf);
    for (size_t r = 0; r < runs; r++)
        for (size_t i = si[r]; i < si[r] + ln[r]; i++) buf[i] = value(i) + 1;
    size_t whole = N;
    sluice_array_t local;
    sluice_xfer_list_t put, get;
    sluice_xfer_t x;
    EXPECT(sluice_array_local(buf, sizeof(double), 1, &whole, &local), SLUICE_SUCCESS);
    if (runs > 0) {
        EXPECT(sluice_xfer_list_create(lv, &c, &local, di, si, ln, runs, &put), SLUICE_SUCCESS);
        EXPECT(sluice_xfer(lv, put, &x), SLUICE_SUCCESS);
        EXPECT(sluice_xfer_wait(lv, &x), SLUICE_SUCCESS);
        EXPECT(sluice_xfer_list_free(&put), SLUICE_SUCCESS);
    }
    EXPECT(sluice_level_barrier(lv, 0, n), SLUICE_SUCCESS);
    size_t k = (N - 5) / 11 + 1;
    size_t *gi = malloc(k * sizeof *gi), *gl = malloc(k * sizeof *gl), *li = malloc(k * sizeof *li);
    for (size_t i = 0; i < k; i++) { gi[i] = 11 * i; li[i] = 5 * i; gl[i] = 5; }
    memset(buf, 0, N * sizeof *buf);
    EXPECT(sluice_xfer_list_create(lv, &local, &c, li, gi, gl, k, &get), SLUICE_SUCCESS);
    EXPECT(sluice_xfer(lv, get, &x), SLUICE_SUCCESS);
    EXPECT(sluice_xfer_wait(lv, &x), SLUICE_SUCCESS);
    EXPECT(sluice_xfer_list_free(&get), SLUICE_SUCCESS);
    for (size_t i = 0; i < k; i++)
        for (size_t j = 0; j < 5; j++)
            CHECK(buf[5 * i + j] == value(11 * i + j) + 1, "child %d: cyclic element %zu is %g", id, 11 * i + j, buf[5 * i + j]);
    EXPECT(sluice_level_barrier(lv, 0, n), SLUICE_SUCCESS); /* nobody frees D_C while others read */
    free(di), free(si), free(ln), free(gi), free(gl), free(li), free(buf);
}

/* Composition: each child opens the level below (if any), allocates its share there, pulls it
 * from the level above, has the children below check it, and closes. */
static atomic_long nested_checked;
static void nested(sluice_level_t lv, const void *arg, size_t len) {
    (void)len;
    const struct range *r = arg;
    sluice_level_t below = NULL;
    EXPECT(sluice_level_below(lv, &below), SLUICE_SUCCESS);
    int id = sluice_level_id(lv), n = sluice_level_siblings(lv);
    size_t lo = r->n * (size_t)id / (size_t)n, hi = r->n * (size_t)(id + 1) / (size_t)n, m = hi - lo;
    sluice_array_t a;
    EXPECT(sluice_array_get(lv, D_A, &a), SLUICE_SUCCESS);
    sluice_array_t part = {0};
    if (below) {
        CHECK(sluice_level_memory(below) > 0, "no memory below");
        EXPECT(sluice_array_alloc(below, sizeof(double), 1, &m, D_A, 0, &part), SLUICE_SUCCESS);
        if (part.data == NULL) {
            /* A file level below this child: its arrays are reached only by its own children,
             * so this child checks its share itself (as a leaf) and leaves the level unused. */
            EXPECT(sluice_array_free(below, &part), SLUICE_SUCCESS);
            EXPECT(sluice_level_close(&below), SLUICE_SUCCESS);
        }
    }
    if (below == NULL) { /* leaf: check the share */
        double *buf = malloc(m * sizeof *buf);
        sluice_array_t local;
        size_t zero = 0;
        sluice_xfer_list_t get;
        sluice_xfer_t x;
        EXPECT(sluice_array_local(buf, sizeof(double), 1, &m, &local), SLUICE_SUCCESS);
        EXPECT(sluice_xfer_list_create(lv, &local, &a, &zero, &lo, &m, 1, &get), SLUICE_SUCCESS);
        EXPECT(sluice_xfer(lv, get, &x), SLUICE_SUCCESS);
        EXPECT(sluice_xfer_wait(lv, &x), SLUICE_SUCCESS);
        /* Element i of this level's array is element r->base + i of the top's. */
        for (size_t i = 0; i < m; i++) CHECK(buf[i] == value(r->base + lo + i), "leaf element %zu is %g", r->base + lo + i, buf[i]);
        atomic_fetch_add(&nested_checked, (long)m);
        EXPECT(sluice_xfer_list_free(&get), SLUICE_SUCCESS);
        free(buf);
        return;
    }
    sluice_array_t local;
    size_t zero = 0;
    sluice_xfer_list_t get;
    sluice_xfer_t x;
    EXPECT(sluice_array_local(part.data, sizeof(double), 1, &m, &local), SLUICE_SUCCESS);
    EXPECT(sluice_xfer_list_create(lv, &local, &a, &zero, &lo, &m, 1, &get), SLUICE_SUCCESS);
    EXPECT(sluice_xfer(lv, get, &x), SLUICE_SUCCESS);
    EXPECT(sluice_xfer_wait(lv, &x), SLUICE_SUCCESS);
    for (size_t i = 0; i < m; i++) CHECK(((double *)part.data)[i] == value(r->base + lo + i), "share element %zu", r->base + lo + i);
    EXPECT(sluice_array_add(below, &part), SLUICE_SUCCESS);
    struct range sub = {m, r->base + lo};
    sluice_task_t t;
    EXPECT(sluice_task_call(below, T_NESTED, 0, sluice_level_siblings(below), &sub, sizeof sub, &t), SLUICE_SUCCESS);
    EXPECT(sluice_task_wait(below, &t), SLUICE_SUCCESS);
    EXPECT(sluice_array_free(below, &part), SLUICE_SUCCESS);
    sluice_level_stats_t st;
    EXPECT(sluice_level_stats(below, &st), SLUICE_SUCCESS);
    CHECK(st.tasks == (uint64_t)sluice_level_siblings(below), "below ran %llu tasks", (unsigned long long)st.tasks);
    EXPECT(sluice_xfer_list_free(&get), SLUICE_SUCCESS);
    EXPECT(sluice_level_close(&below), SLUICE_SUCCESS);
    CHECK(below == NULL, "close did not reset the handle");
}

static void top_level(sluice_level_t top) {
    int n = sluice_level_siblings(top);
    CHECK(n >= 1, "%d children", n);
    CHECK(sluice_level_id(top) == -1, "top id %d", sluice_level_id(top));
    size_t dims[1] = {N}, two[2] = {10, 10}, huge = SIZE_MAX / 2;
    sluice_array_t a, b, c;
    EXPECT(sluice_array_alloc(top, sizeof(double), 1, dims, D_A, 0, &a), SLUICE_SUCCESS);
    EXPECT(sluice_array_alloc(top, sizeof(double), 1, dims, D_A, 0, &c), SLUICE_LEVELS_ERR_DESC);
    EXPECT(sluice_array_alloc(top, sizeof(double), 1, dims, -5, 0, &c), SLUICE_LEVELS_ERR_DESC);
    EXPECT(sluice_array_alloc(top, 0, 1, dims, 7, 0, &c), SLUICE_ERR_ARG);
    EXPECT(sluice_array_alloc(top, 8, 0, dims, 7, 0, &c), SLUICE_ERR_ARG);
    EXPECT(sluice_array_alloc(top, 8, 1, dims, 7, 3, &c), SLUICE_ERR_ARG);
    EXPECT(sluice_array_alloc(top, 8, 1, &huge, 7, 0, &c), SLUICE_ERR_ARG);
    EXPECT(sluice_array_alloc(top, 4, 2, two, D_B, 4096, &b), SLUICE_SUCCESS);
    CHECK(b.ndims == 2 && b.dims[0] == 10 && b.dims[1] == 10 && b.desc == D_B, "shape not described");
    if (b.data) CHECK(((uintptr_t)b.data & 4095) == 0, "alignment not kept");
    EXPECT(sluice_array_add(top, &a), SLUICE_SUCCESS);
    EXPECT(sluice_array_add(top, &a), SLUICE_LEVELS_ERR_DESC);
    sluice_array_t fake = a;
    fake.desc = 77;
    EXPECT(sluice_array_add(top, &fake), SLUICE_LEVELS_ERR_DESC);
    sluice_array_t got;
    EXPECT(sluice_array_get(top, D_A, &got), SLUICE_SUCCESS);
    CHECK(got.desc == D_A && got.dims[0] == N && got.data == a.data, "get differs from alloc");
    /* Task calls: bad ranges, unknown task, oversized argument. */
    sluice_task_t t = NULL;
    struct range r = {N, 0};
    static char big[SLUICE_TASK_ARG_MAX + 1];
    EXPECT(sluice_task_call(top, T_FILL, 0, n + 1, &r, sizeof r, &t), SLUICE_LEVELS_ERR_CHILD);
    EXPECT(sluice_task_call(top, T_FILL, 1, 1, &r, sizeof r, &t), SLUICE_LEVELS_ERR_CHILD);
    EXPECT(sluice_task_call(top, T_FILL, -1, 1, &r, sizeof r, &t), SLUICE_LEVELS_ERR_CHILD);
    EXPECT(sluice_task_call(top, NTASKS, 0, n, &r, sizeof r, &t), SLUICE_LEVELS_ERR_TASK);
    EXPECT(sluice_task_call(top, T_FILL, 0, n, big, sizeof big, &t), SLUICE_LEVELS_ERR_TASK);
    CHECK(t == NULL, "task handle set on error");
    /* Child calls on the top's handle. */
    EXPECT(sluice_level_barrier(top, 0, n), SLUICE_LEVELS_ERR_ROLE);
    sluice_level_t below;
    EXPECT(sluice_level_below(top, &below), SLUICE_LEVELS_ERR_ROLE);
    /* The work. */
    EXPECT(sluice_task_call(top, T_FILL, 0, n, &r, sizeof r, &t), SLUICE_SUCCESS);
    EXPECT(sluice_task_wait(top, &t), SLUICE_SUCCESS);
    CHECK(t == NULL, "wait did not reset the handle");
    EXPECT(sluice_task_call(top, T_ERRORS, 0, n, NULL, 0, &t), SLUICE_SUCCESS);
    EXPECT(sluice_task_wait(top, &t), SLUICE_SUCCESS);
    size_t nf = (size_t)n;
    sluice_array_t f;
    EXPECT(sluice_array_alloc(top, sizeof(int), 1, &nf, D_F, 0, &f), SLUICE_SUCCESS);
    EXPECT(sluice_array_add(top, &f), SLUICE_SUCCESS);
    EXPECT(sluice_task_call(top, T_BARRIER, 0, n, NULL, 0, &t), SLUICE_SUCCESS);
    EXPECT(sluice_task_wait(top, &t), SLUICE_SUCCESS);
    EXPECT(sluice_task_call(top, T_NESTED, 0, n, &r, sizeof r, &t), SLUICE_SUCCESS);
    EXPECT(sluice_task_wait(top, &t), SLUICE_SUCCESS);
    /* A block-cyclic array (refusals first: they change nothing). */
    sluice_array_t cy;
    EXPECT(sluice_array_alloc_cyclic(top, sizeof(double), 1, dims, D_A, 0, BLOCK_ROWS, &cy), SLUICE_LEVELS_ERR_DESC);
    EXPECT(sluice_array_alloc_cyclic(top, sizeof(double), 1, dims, D_C, 3, BLOCK_ROWS, &cy), SLUICE_ERR_ARG);
    EXPECT(sluice_array_alloc_cyclic(top, sizeof(double), 1, dims, D_C, 0, BLOCK_ROWS, &cy), SLUICE_SUCCESS);
    int home = -2;
    EXPECT(sluice_array_home(top, D_C, 0, &home), SLUICE_LEVELS_ERR_DESC); /* not registered yet */
    EXPECT(sluice_array_add(top, &cy), SLUICE_SUCCESS);
    EXPECT(sluice_task_call(top, T_CYCLIC, 0, n, NULL, 0, &t), SLUICE_SUCCESS);
    EXPECT(sluice_task_wait(top, &t), SLUICE_SUCCESS);
    if (cy.data) for (size_t i = 0; i < N; i += 991) CHECK(((double *)cy.data)[i] == value(i) + 1, "cyclic top element %zu", i);
    EXPECT(sluice_array_home(top, D_C, N - 1, &home), SLUICE_SUCCESS);
    int spread = strcmp(sluice_level_kind(top), "cluster") == 0;
    CHECK(home == (spread ? (int)(((N - 1) / BLOCK_ROWS) % (size_t)n) : -1), "top: last element at %d", home);
    EXPECT(sluice_array_free(top, &cy), SLUICE_SUCCESS);
    if (a.data) for (size_t i = 0; i < N; i += 997) CHECK(((double *)a.data)[i] == value(i), "top element %zu", i);
    sluice_level_stats_t st;
    EXPECT(sluice_level_stats(top, &st), SLUICE_SUCCESS);
    CHECK(st.tasks == (uint64_t)(5 * n), "%llu tasks run", (unsigned long long)st.tasks);
    CHECK(st.xfers > 0 && st.peak_bytes >= N * sizeof(double), "stats %llu xfers, peak %llu",
          (unsigned long long)st.xfers, (unsigned long long)st.peak_bytes);
    if (a.data) CHECK(st.elided_bytes > 0, "nothing elided in a shared namespace");
    /* Remove, free, double free. */
    EXPECT(sluice_array_remove(top, D_A), SLUICE_SUCCESS);
    EXPECT(sluice_array_remove(top, D_A), SLUICE_LEVELS_ERR_DESC);
    EXPECT(sluice_array_get(top, D_A, &got), SLUICE_LEVELS_ERR_DESC);
    EXPECT(sluice_array_free(top, &a), SLUICE_SUCCESS);
    CHECK(a.data == NULL, "free did not reset data");
    EXPECT(sluice_array_free(top, &a), SLUICE_LEVELS_ERR_FREED);
    EXPECT(sluice_array_add(top, &a), SLUICE_LEVELS_ERR_FREED);
    /* b stays allocated: close frees it. */
}

int main(int argc, char **argv) {
    int provided, rank;
    int single = getenv("LEVELS_THREAD_SINGLE") != NULL;
    MPI_Init_thread(&argc, &argv, single ? MPI_THREAD_SINGLE : MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const sluice_task_fn tasks[NTASKS] = {fill, errors, barrier, nested, cyclic};
    sluice_level_t top = NULL;
    if (single) {
        /* A cluster level needs MPI_THREAD_MULTIPLE: refused on every rank, with no handle. */
        EXPECT(sluice_levels_open(NULL, tasks, NTASKS, &top), SLUICE_ERR_THREAD);
        CHECK(top == NULL, "a handle despite the refusal");
        int bad = atomic_load(&failures), all = bad;
        MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (rank == 0) printf(all ? "levels_api: FAILED %d checks\n" : "levels_api: OK\n", all);
        MPI_Finalize();
        return all != 0;
    }
    /* Bad compositions. */
    EXPECT(sluice_levels_open("", tasks, NTASKS, &top), SLUICE_LEVELS_ERR_SPEC);
    EXPECT(sluice_levels_open("tape", tasks, NTASKS, &top), SLUICE_LEVELS_ERR_SPEC);
    EXPECT(sluice_levels_open("smp:0", tasks, NTASKS, &top), SLUICE_LEVELS_ERR_SPEC);
    EXPECT(sluice_levels_open("disk:2", tasks, NTASKS, &top), SLUICE_LEVELS_ERR_SPEC);
    EXPECT(sluice_levels_open("smp/cluster", tasks, NTASKS, &top), SLUICE_LEVELS_ERR_SPEC);
    EXPECT(sluice_levels_open("smp@lots", tasks, NTASKS, &top), SLUICE_LEVELS_ERR_SPEC);
    EXPECT(sluice_levels_open("smp", NULL, 2, &top), SLUICE_ERR_ARG);
    EXPECT(sluice_levels_open("smp", tasks, NTASKS, NULL), SLUICE_ERR_ARG);
    CHECK(top == NULL, "top set on error");
    /* A memory bound refuses what does not fit. */
    EXPECT(sluice_levels_open("smp:1@1K", tasks, NTASKS, &top), SLUICE_SUCCESS);
    size_t d = 100, d2 = 100;
    sluice_array_t a, b;
    EXPECT(sluice_array_alloc(top, 8, 1, &d, 1, 0, &a), SLUICE_SUCCESS);
    CHECK(sluice_level_memory(top) == 1024 - 800, "memory left %zu", sluice_level_memory(top));
    EXPECT(sluice_array_alloc(top, 8, 1, &d2, 2, 0, &b), SLUICE_LEVELS_ERR_NOMEM);
    EXPECT(sluice_array_free(top, &a), SLUICE_SUCCESS);
    EXPECT(sluice_array_alloc(top, 8, 1, &d2, 2, 0, &b), SLUICE_SUCCESS);
    CHECK(strcmp(sluice_level_kind(top), "smp") == 0, "kind %s", sluice_level_kind(top));
    EXPECT(sluice_level_close(&top), SLUICE_SUCCESS);
    /* The composition under test. */
    EXPECT(sluice_levels_open(NULL, tasks, NTASKS, &top), SLUICE_SUCCESS);
    if (top) {
        top_level(top);
        EXPECT(sluice_level_close(&top), SLUICE_SUCCESS);
        EXPECT(sluice_level_close(&top), SLUICE_ERR_ARG);
    }
    /* Every element reached a leaf once (leaves of a cluster are in every rank). */
    const char *spec = getenv("SLUICE_LEVELS");
    long checked = atomic_load(&nested_checked), total = checked;
    if (spec && strncmp(spec, "cluster", 7) == 0) MPI_Allreduce(&checked, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    CHECK(total == N, "leaves checked %ld of %d elements", total, N);
    int bad = atomic_load(&failures), all = bad;
    MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf(all ? "levels_api: FAILED %d checks\n" : "levels_api: OK\n", all);
    MPI_Finalize();
    return all != 0;
}
