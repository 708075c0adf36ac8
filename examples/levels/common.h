/* common.h: what the sluice_levels examples (saxpy.c, sgemv.c, sgemm.c, conv2d.c) share.
 *
 * Every example is one program that runs unchanged on every composition of runtimes named by
 * SLUICE_LEVELS ("smp:2", "disk", "disk/smp:2@8M", "smp:2/smp:2", "cluster/smp:2", ...): the
 * only place the composition enters is how deep the recursion below goes and whether an array
 * can be addressed directly, both of which a task learns at run time from its handle.
 *
 * Contents:
 *   - error checks (CK, FAIL) and size/time helpers;
 *   - the deterministic input formulas (gen) and the value check (check_value);
 *   - the level walkers: a task receives, in its argument block, a range of work and the
 *     descriptors of the arrays of the runtime above it; it takes its share of the range
 *     (sluice_level_id / sluice_level_siblings) and either
 *       - opens the runtime below (sluice_level_below) and streams its share through it in
 *         pipelined blocks (LV_PIPE_DEPTH in flight) sized to sluice_level_memory(below), calling the same task on
 *         every child below with the block's arrays (pipe_run), or
 *       - is a leaf: computes on the parent's memory where it is addressable (data != NULL,
 *         Sequoia's shared namespace), else streams its share through malloc'ed buffers.
 *     Where below's top is not addressable (a disk level under a child: files), blocks are staged
 *     through this child's own buffers and the STAGE task (T_STAGE, first in every example's task
 *     table) moves them between those buffers and below's arrays (see lv_walk_t).
 *     rw_task walks "row" work (1-D ranges, optional halo, optional whole read-only arrays):
 *     SAXPY, SGEMV, CONV2D and the generic FILL (inputs) and CHECK tasks; gemm_task walks C tiles
 *     with a loop over blocks of k (SGEMM);
 *   - sgemm_blocked, the blocked SGEMM kernel every SGEMM leaf and the "direct" baseline run;
 *   - the top's helpers (allocate and register, call on all children) and the final report,
 *     which combines error counts and statistics over MPI ranks.
 *
 * Include this header first: it sets _POSIX_C_SOURCE for clock_gettime under -std=c11.
 * Everything is static inline so that each example compiles warning-free using only a part. */
#ifndef SLUICE_LEVELS_EXAMPLES_COMMON_H
#define SLUICE_LEVELS_EXAMPLES_COMMON_H

#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <math.h>
#include <mpi.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sluice_levels.h"

/* ---- Errors ------------------------------------------------------------------------------------ */

static inline const char *lv_err_name(int rc) {
    switch (rc) {
    case SLUICE_ERR_ARG: return "SLUICE_ERR_ARG";
    case SLUICE_ERR_NOT_INITIALIZED: return "SLUICE_ERR_NOT_INITIALIZED";
    case SLUICE_ERR_IO: return "SLUICE_ERR_IO";
    case SLUICE_ERR_THREAD: return "SLUICE_ERR_THREAD";
    case SLUICE_LEVELS_ERR_DESC: return "SLUICE_LEVELS_ERR_DESC";
    case SLUICE_LEVELS_ERR_BOUNDS: return "SLUICE_LEVELS_ERR_BOUNDS";
    case SLUICE_LEVELS_ERR_CHILD: return "SLUICE_LEVELS_ERR_CHILD";
    case SLUICE_LEVELS_ERR_NOMEM: return "SLUICE_LEVELS_ERR_NOMEM";
    case SLUICE_LEVELS_ERR_SPEC: return "SLUICE_LEVELS_ERR_SPEC";
    case SLUICE_LEVELS_ERR_ROLE: return "SLUICE_LEVELS_ERR_ROLE";
    case SLUICE_LEVELS_ERR_TASK: return "SLUICE_LEVELS_ERR_TASK";
    case SLUICE_LEVELS_ERR_FREED: return "SLUICE_LEVELS_ERR_FREED";
    default: return "unknown";
    }
}

/* Ends the program: through MPI_Abort while MPI is up, so that the other ranks of a cluster
 * composition (blocked in sluice_levels_open or a collective) do not hang. */
static inline void lv_die(void) {
    int up = 0, down = 0;
    MPI_Initialized(&up);
    MPI_Finalized(&down);
    if (up && !down) MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

/* Checks a sluice_levels call: prints the call, the code and where, then ends the program. */
#define CK(call)                                                                                  \
    do {                                                                                          \
        int ck_rc_ = (call);                                                                      \
        if (ck_rc_ != SLUICE_SUCCESS) {                                                           \
            fprintf(stderr, "%s:%d: %s failed: %d (%s)\n", __FILE__, __LINE__, #call, ck_rc_,     \
                    lv_err_name(ck_rc_));                                                         \
            lv_die();                                                                             \
        }                                                                                         \
    } while (0)

/* Checks an MPI call (the default error handler aborts already; this covers a changed one). */
#define MPICK(call)                                                                               \
    do {                                                                                          \
        int mk_rc_ = (call);                                                                      \
        if (mk_rc_ != MPI_SUCCESS) {                                                              \
            fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, mk_rc_);         \
            lv_die();                                                                             \
        }                                                                                         \
    } while (0)

#define FAIL(...)                                                                                 \
    do {                                                                                          \
        fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                                           \
        fprintf(stderr, __VA_ARGS__);                                                             \
        fputc('\n', stderr);                                                                      \
        lv_die();                                                                                 \
    } while (0)

/* ---- Small helpers ------------------------------------------------------------------------------ */

static inline size_t lv_min(size_t a, size_t b) { return a < b ? a : b; }
static inline size_t lv_ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

static inline double lv_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* "4M" -> 4194304: a count with an optional K, M or G suffix (powers of 1024). */
static inline size_t lv_parse_size(const char *text) {
    char *end = NULL;
    unsigned long long v = strtoull(text, &end, 10);
    if (end == text) FAIL("\"%s\" is not a size (digits with an optional K, M or G)", text);
    switch (*end) {
    case 'k': case 'K': v <<= 10; end++; break;
    case 'm': case 'M': v <<= 20; end++; break;
    case 'g': case 'G': v <<= 30; end++; break;
    default: break;
    }
    if (*end != '\0' || v == 0) FAIL("\"%s\" is not a positive size (digits with an optional K, M or G)", text);
    return (size_t)v;
}

static inline void *lv_malloc(size_t bytes) {
    /* aligned_alloc wants a multiple of the alignment; 64: a cache line, and AVX-512 friendly. */
    size_t n = bytes == 0 ? 64 : (bytes + 63) / 64 * 64;
    void *p = aligned_alloc(64, n);
    if (p == NULL) FAIL("out of memory (%zu bytes)", n);
    return p;
}

/* The share of [lo, hi) of child `id` of `n`: contiguous, even, cut on multiples of `align`
 * units (so that children writing neighbouring shares of one array do not share cache lines). */
static inline void lv_split(size_t lo, size_t hi, int id, int n, size_t align, size_t *slo, size_t *shi) {
    if (id < 0 || n <= 0) FAIL("bad child id %d of %d", id, n);
    size_t chunk = lv_ceil_div(lv_ceil_div(hi - lo, (size_t)n), align) * align;
    size_t a = lo + lv_min(chunk * (size_t)id, hi - lo);
    *slo = a;
    *shi = a + lv_min(chunk, hi - a);
}

/* ---- Inputs and checking ----------------------------------------------------------------------- */

/* The input formulas: cheap, deterministic in the global flat index, different per array (so
 * that a transfer from the wrong array or offset shows), values in [0, 1) so that sums of
 * products do not cancel and a relative tolerance is meaningful. */
enum { F_X, F_Y, F_A, F_B, F_IMAGE, F_FILTER };
static inline float gen(int formula, uint64_t i) {
    switch (formula) {
    case F_X: return (float)((i * 7 + 3) % 101) / 101.0f;
    case F_Y: return (float)((i * 13 + 5) % 103) / 103.0f;
    case F_A: return (float)((i * 11 + 1) % 97) / 97.0f;
    case F_B: return (float)((i * 5 + 2) % 89) / 89.0f;
    case F_IMAGE: return (float)((i * 17 + 9) % 113) / 113.0f;
    default: return (float)((i * 3 + 1) % 11) / 11.0f;
    }
}

/* Mismatches found by CHECK leaves of this process. The children of smp and disk runtimes are
 * threads of this process, so one atomic counter sees all of them; for a cluster composition
 * every rank counts its own and lv_finish combines them with MPI_Allreduce. */
static _Atomic uint64_t lv_mismatches;

/* Float sums of up to a few thousand products drift by ~1e-6 relative; 1e-3 still catches a
 * missing or doubled term (each term is > 1e-4 of the sum here). */
#define LV_RTOL 1e-3
static inline void check_value(const char *what, uint64_t index, float got, double want) {
    if (fabs((double)got - want) <= LV_RTOL * fabs(want) + 1e-6) return; /* NaN fails too */
    uint64_t n = atomic_fetch_add(&lv_mismatches, 1);
    if (n < 10) fprintf(stderr, "MISMATCH %s[%llu]: got %.8g, want %.8g\n", what, (unsigned long long)index, (double)got, want);
}

/* ---- Statistics of the runtimes below ----------------------------------------------------------- */

/* The runtimes below the top are opened and closed inside tasks, where the top cannot see them;
 * the walkers add their counters here (only for the measured COMPUTE phase) before closing
 * them, per depth: [d] sums every runtime of level pair d (0 = the top pair, filled by the top). */
#define LV_MAX_DEPTH 8
enum { ST_INSTANCES, ST_TASKS, ST_XFERS, ST_BYTES, ST_ELIDED, ST_BUSY, ST_ALIVE, ST_N };
static _Atomic uint64_t lv_stats[LV_MAX_DEPTH][ST_N];

static inline void lv_stats_record(int depth, sluice_level_t below) {
    if (depth < 0 || depth >= LV_MAX_DEPTH) return;
    sluice_level_stats_t s;
    CK(sluice_level_stats(below, &s));
    atomic_fetch_add(&lv_stats[depth][ST_INSTANCES], 1);
    atomic_fetch_add(&lv_stats[depth][ST_TASKS], s.tasks);
    atomic_fetch_add(&lv_stats[depth][ST_XFERS], s.xfers);
    atomic_fetch_add(&lv_stats[depth][ST_BYTES], s.bytes);
    atomic_fetch_add(&lv_stats[depth][ST_ELIDED], s.elided_bytes);
    atomic_fetch_add(&lv_stats[depth][ST_BUSY], s.busy_ns);
    atomic_fetch_add(&lv_stats[depth][ST_ALIVE], s.alive_ns);
}

/* Closes a runtime a walker opened, first recording its counters if the phase is measured. */
static inline void lv_close_below(sluice_level_t *below, int depth, int measure) {
    if (measure) lv_stats_record(depth, *below);
    CK(sluice_level_close(below));
}

/* ---- Blocks: arrays of one step of a walk, at the top of the runtime below or in malloc'ed memory */

/* Where a walker puts its blocks: the top of the runtime below (`below` != NULL, children run
 * the task there) or this leaf's own buffers (`below` == NULL, the leaf computes itself).
 *
 * Staging. Only children of a runtime transfer, and only between their parent's arrays and their
 * own memory; so where below's top is not addressable (a disk level under a child: its arrays
 * are files), this child cannot move a block from its parent straight into below's array. It
 * stages it through its own memory instead: each block is a file array at below's top *and* a
 * malloc'ed staging buffer of the same shape. Inputs come from the parent into the staging
 * buffer (this child's transfer), then the STAGE task on below's children puts the buffer into
 * the file array (their transfer); outputs go the other way (STAGE gets the file array into the
 * buffer, then this child puts the buffer up to its parent). The task argument carries the
 * buffer's address, so below's children must run in this process (a disk level's one child is
 * this very thread); the STAGE task checks that. */
typedef struct {
    sluice_level_t child; /* this child's handle in the runtime above (transfers go through it) */
    sluice_level_t below; /* the runtime below, or NULL */
    int task;             /* the task to run on below's children */
    int staged;           /* below's top is not addressable: blocks go through staging buffers */
} lv_walk_t;

/* The task every example puts first in its table (common.h's own; the examples' tasks follow
 * from LV_APP_TASKS): moves a staging buffer into or out of an array of its parent. */
enum { T_STAGE = 0, LV_APP_TASKS };

/* The argument of a STAGE call: elements [0, elems) of array `desc` of the caller's below <->
 * the staging buffer at `buf` in process `pid`; below's children split the elements. */
typedef struct {
    int dir; /* LV_IN: buffer -> array (the block goes down); LV_OUT: array -> buffer */
    int pid;
    sluice_array_desc_t desc;
    uint64_t buf; /* the buffer's address */
    size_t elems, elem_size;
} lv_stage_arg_t;

enum { LV_IN, LV_OUT };

static inline void lv_task_stage(sluice_level_t child, const void *arg, size_t arg_len) {
    lv_stage_arg_t s;
    if (arg_len != sizeof s) FAIL("stage task: argument of %zu bytes, expected %zu", arg_len, sizeof s);
    memcpy(&s, arg, sizeof s);
    if (s.pid != (int)getpid())
        FAIL("stage task: the children of a level whose top is not addressable run in another process; "
             "this composition cannot be fed through a staging buffer");
    size_t lo, hi;
    lv_split(0, s.elems, sluice_level_id(child), sluice_level_siblings(child), 1, &lo, &hi);
    if (lo >= hi) return;
    sluice_array_t arr, local;
    CK(sluice_array_get(child, s.desc, &arr));
    size_t n = hi - lo, zero = 0;
    CK(sluice_array_local((unsigned char *)(uintptr_t)s.buf + lo * s.elem_size, s.elem_size, 1, &n, &local));
    sluice_xfer_list_t list;
    sluice_xfer_t x;
    if (s.dir == LV_IN)
        CK(sluice_xfer_list_create(child, &arr, &local, &lo, &zero, &n, 1, &list));
    else
        CK(sluice_xfer_list_create(child, &local, &arr, &zero, &lo, &n, 1, &list));
    CK(sluice_xfer(child, list, &x));
    CK(sluice_xfer_wait(child, &x));
    CK(sluice_xfer_list_free(&list));
}

/* Runs STAGE on all of below's children for the block `desc` (its staging buffer `buf`, `elems`
 * floats) and waits. */
static inline void lv_stage_call(const lv_walk_t *w, int dir, sluice_array_desc_t desc, void *buf, size_t elems) {
    lv_stage_arg_t s = {.dir = dir, .pid = (int)getpid(), .desc = desc, .buf = (uint64_t)(uintptr_t)buf,
                        .elems = elems, .elem_size = sizeof(float)};
    sluice_task_t h;
    CK(sluice_task_call(w->below, T_STAGE, 0, sluice_level_siblings(w->below), &s, sizeof s, &h));
    CK(sluice_task_wait(w->below, &h));
}

/* Descriptor of the one-element array lv_walk_open allocates to learn whether below's top is
 * addressable (never registered; far from the walkers' block descriptors). */
#define LV_PROBE_DESC ((sluice_array_desc_t)1 << 40)

/* Opens the runtime below this child (w->below = NULL at a leaf) and learns whether its arrays
 * are addressable here (an smp top) or must be staged (a disk top). */
static inline void lv_walk_open(sluice_level_t child, int task, lv_walk_t *w) {
    w->child = child;
    w->below = NULL;
    w->task = task;
    w->staged = 0;
    CK(sluice_level_below(child, &w->below));
    if (w->below == NULL) return;
    sluice_array_t probe;
    size_t one = 1;
    CK(sluice_array_alloc(w->below, sizeof(float), 1, &one, LV_PROBE_DESC, 0, &probe));
    w->staged = probe.data == NULL;
    CK(sluice_array_free(w->below, &probe));
}

/* A rows x cols float array of a block: registered at below's top under `desc` (with a staging
 * buffer in `data` where below's top is not addressable: what this child's transfers use), or
 * malloc'ed. */
static inline void blk_alloc(const lv_walk_t *w, sluice_array_desc_t desc, size_t rows, size_t cols, sluice_array_t *a) {
    size_t dims[2] = {rows, cols};
    if (rows == 0 || cols == 0) FAIL("empty block (%zu x %zu)", rows, cols);
    if (w->below != NULL) {
        CK(sluice_array_alloc(w->below, sizeof(float), 2, dims, desc, 64, a));
        CK(sluice_array_add(w->below, a));
        if (w->staged)
            a->data = lv_malloc(rows * cols * sizeof(float));
        else if (a->data == NULL)
            FAIL("an array of the level below (%s) is not addressable, unlike the probe", sluice_level_kind(w->below));
    } else {
        CK(sluice_array_local(lv_malloc(rows * cols * sizeof(float)), sizeof(float), 2, dims, a));
    }
}

static inline void blk_free(const lv_walk_t *w, sluice_array_t *a) {
    if (w->below != NULL) {
        if (w->staged) {
            free(a->data); /* the staging buffer */
            a->data = NULL;
        }
        CK(sluice_array_free(w->below, a));
    } else {
        free(a->data);
        a->data = NULL;
    }
}

/* One transfer list and its transfer in flight; for a staged block, what STAGE moves (the whole
 * block: before an input is complete, and before an output starts). */
typedef struct {
    sluice_xfer_list_t list;
    sluice_xfer_t xfer;
    int dir, staged;
    sluice_array_desc_t desc;
    void *buf;
    size_t elems;
} lv_xlist_t;

/* Describes a rectangle moved between the parent array `par` (registered above; rows of `pcols`
 * elements) at (pr, pc) and the block `blk` (rows of `bcols`) at (br, bc), nr x nc elements:
 * one run per row, or one run in all where both sides hold whole rows (the runtime would merge
 * them anyway; fewer indices to build). */
static inline void lv_rect(const lv_walk_t *w, int dir, const sluice_array_t *par, size_t pcols, size_t pr, size_t pc,
                           const sluice_array_t *blk, size_t bcols, size_t br, size_t bc, size_t nr, size_t nc,
                           lv_xlist_t *x) {
    sluice_level_t child = w->child;
    x->dir = dir;
    x->staged = w->below != NULL && w->staged;
    x->desc = blk->desc;
    x->buf = blk->data;
    x->elems = blk->dims[0] * blk->dims[1];
    sluice_array_t local;
    CK(sluice_array_local(blk->data, blk->elem_size, blk->ndims, blk->dims, &local));
    int whole_rows = nc == pcols && nc == bcols;
    size_t count = whole_rows ? 1 : nr;
    size_t *idx = lv_malloc(3 * count * sizeof(size_t)), *pidx = idx, *bidx = idx + count, *len = idx + 2 * count;
    for (size_t r = 0; r < count; r++) {
        pidx[r] = (pr + r) * pcols + pc;
        bidx[r] = (br + r) * bcols + bc;
        len[r] = whole_rows ? nr * nc : nc;
    }
    if (dir == LV_IN)
        CK(sluice_xfer_list_create(child, &local, par, bidx, pidx, len, count, &x->list));
    else
        CK(sluice_xfer_list_create(child, par, &local, pidx, bidx, len, count, &x->list));
    free(idx); /* the list holds its own copy of the runs */
    x->xfer = NULL;
}

/* ---- The pipeline -------------------------------------------------------------------------------- */

/* Steps whose arrays exist at once: the one computing, the one whose outputs drain, and the ones
 * whose inputs stream in. Three keeps a transfer queued behind the one in flight, so the channel
 * stays busy through the gap between one step's inputs landing and the next step's being
 * started (a task call, freeing a step, allocating one); two left that gap idle (SGEMV out of core:
 * disk busy 76-82% with two, see docs/benchmarks.md). Blocks are sized so LV_PIPE_DEPTH steps fit. */
#define LV_PIPE_DEPTH 3

#define LV_STAGE_ARRAYS 6
/* One step of a walk: its arrays, its transfers and the argument of its task call. */
typedef struct {
    sluice_array_t use[LV_STAGE_ARRAYS]; /* the arrays the step computes on (walker's order) */
    sluice_array_t own[LV_STAGE_ARRAYS]; /* the arrays freed when the step ends */
    int nown;
    lv_xlist_t in[LV_STAGE_ARRAYS], out[LV_STAGE_ARRAYS];
    int nin, nout;
    sluice_task_t call;
    unsigned char arg[SLUICE_TASK_ARG_MAX]; /* the task argument for below (or the leaf) */
    size_t arg_len;
} lv_stage_t;

typedef void (*lv_begin_fn)(const lv_walk_t *w, void *ctx, size_t step, lv_stage_t *st);
typedef void (*lv_compute_fn)(const lv_walk_t *w, void *ctx, lv_stage_t *st);

/* Starts transfer lists; an output of a staged block first comes out of below's array. */
static inline void lv_stage_start(const lv_walk_t *w, lv_xlist_t *x, int n) {
    for (int i = 0; i < n; i++) {
        if (x[i].staged && x[i].dir == LV_OUT) lv_stage_call(w, LV_OUT, x[i].desc, x[i].buf, x[i].elems);
        CK(sluice_xfer(w->child, x[i].list, &x[i].xfer));
    }
}

/* Waits for transfer lists; an input of a staged block then goes on into below's array. */
static inline void lv_stage_wait(const lv_walk_t *w, lv_xlist_t *x, int n) {
    for (int i = 0; i < n; i++) {
        CK(sluice_xfer_wait(w->child, &x[i].xfer));
        CK(sluice_xfer_list_free(&x[i].list));
        if (x[i].staged && x[i].dir == LV_IN) lv_stage_call(w, LV_IN, x[i].desc, x[i].buf, x[i].elems);
    }
}

/* Ends a step: waits for its outputs to land in the parent, frees its arrays. */
static inline void lv_stage_end(const lv_walk_t *w, lv_stage_t *st) {
    lv_stage_wait(w, st->out, st->nout);
    for (int i = 0; i < st->nown; i++) blk_free(w, &st->own[i]);
    st->nown = st->nout = st->nin = 0;
}

/* Runs `nsteps` steps, LV_PIPE_DEPTH in flight: while step k computes (on below's children, or
 * here), steps k+1 .. k+DEPTH-1's inputs stream in and step k-1's outputs stream out, so a slow
 * level (disk) keeps its channel busy. Step k+DEPTH-1 is allocated only after step k-1 is freed:
 * at most LV_PIPE_DEPTH steps' arrays exist at once, which is what the walkers size blocks for;
 * step s lives in slot s % LV_PIPE_DEPTH (its descriptors below too). */
static inline void lv_pipe_run(const lv_walk_t *w, size_t nsteps, lv_begin_fn begin, lv_compute_fn compute, void *ctx) {
    if (nsteps == 0) return;
    lv_stage_t *st = calloc(LV_PIPE_DEPTH, sizeof *st);
    if (st == NULL) FAIL("out of memory");
    int children = w->below != NULL ? sluice_level_siblings(w->below) : 0;
    if (w->below != NULL && children <= 0) FAIL("sluice_level_siblings(below) = %d", children);
    size_t begun = 0; /* steps begun so far */
    for (; begun < nsteps && begun + 1 < LV_PIPE_DEPTH; begun++) {
        begin(w, ctx, begun, &st[begun % LV_PIPE_DEPTH]);
        lv_stage_start(w, st[begun % LV_PIPE_DEPTH].in, st[begun % LV_PIPE_DEPTH].nin);
    }
    for (size_t k = 0; k < nsteps; k++) {
        lv_stage_t *cur = &st[k % LV_PIPE_DEPTH];
        lv_stage_wait(w, cur->in, cur->nin);
        /* Below's children start on step k first where they are other threads; where the call
         * runs on this thread (a disk level: staged walks) it returns when step k is done, so
         * the next step's inputs are started before it, to stream in meanwhile. Either way step
         * k-1 ends before step k+DEPTH-1 begins (in k-1's slot). */
        int on_this_thread = w->staged;
        if (w->below != NULL && !on_this_thread)
            CK(sluice_task_call(w->below, w->task, 0, children, cur->arg, cur->arg_len, &cur->call));
        if (k > 0) lv_stage_end(w, &st[(k - 1) % LV_PIPE_DEPTH]);
        if (begun < nsteps) {
            lv_stage_t *next = &st[begun % LV_PIPE_DEPTH];
            begin(w, ctx, begun++, next);
            lv_stage_start(w, next->in, next->nin);
        }
        if (w->below != NULL && on_this_thread)
            CK(sluice_task_call(w->below, w->task, 0, children, cur->arg, cur->arg_len, &cur->call));
        if (w->below != NULL)
            CK(sluice_task_wait(w->below, &cur->call));
        else
            compute(w, ctx, cur);
        lv_stage_start(w, cur->out, cur->nout);
    }
    lv_stage_end(w, &st[(nsteps - 1) % LV_PIPE_DEPTH]);
    free(st);
}

/* What a leaf without addressable parent memory may hold at once (its level has no bound of its
 * own: the leaf of "disk" or "cluster" is this process). */
#define LV_LOCAL_BUDGET ((size_t)64 << 20)
/* Slack per array for the runtime's alignment and bookkeeping when sizing blocks to a bound. */
#define LV_ARRAY_SLACK ((size_t)4096)

/* Bytes LV_PIPE_DEPTH steps' blocks may take: below's bound; a staged walk also holds every block in this
 * child's own memory (the staging buffers), so at most LV_LOCAL_BUDGET too; a leaf's own. */
static inline size_t lv_budget(const lv_walk_t *w) {
    if (w->below == NULL) return LV_LOCAL_BUDGET;
    size_t m = sluice_level_memory(w->below);
    return w->staged ? lv_min(m, LV_LOCAL_BUDGET) : m;
}

/* ---- Row walker: SAXPY, SGEMV, CONV2D, FILL, CHECK ----------------------------------------------- */

/* Work is a range of units (elements or rows); each array has row_elems elements per unit.
 * Roles: */
enum {
    RW_IN = 1,    /* read: transferred in (with `halo` units more on each side, clipped) */
    RW_OUT = 2,   /* written: transferred out, never read */
    RW_INOUT = 3, /* read and written */
    RW_WHOLE = 4  /* read, all of it by every unit (SGEMV's x): one copy per walk, not per block */
};
#define RW_MAX_ARRAYS 4
#define RW_USER_MAX 1024

typedef struct {
    sluice_array_desc_t desc;
    int role;
    size_t row_elems; /* elements per unit (for RW_WHOLE: ignored) */
    size_t halo;      /* units read beyond each end of the range (RW_IN only) */
    int64_t off;      /* unit u is row u + off of this array (halo blocks start before the range) */
} rw_array_t;

/* The argument block of every row task. */
typedef struct {
    int task;    /* this task's id: the walker calls it again below */
    int depth;   /* level pair whose child runs this call (0: the top pair) */
    int measure; /* record the statistics of the runtimes opened below (COMPUTE only) */
    int narrays;
    rw_array_t arr[RW_MAX_ARRAYS];
    size_t lo, hi; /* the units this call covers; the children split them */
    uint64_t g0;   /* global index of unit 0 (FILL and CHECK compute the formulas from it) */
    size_t align;  /* children's shares start on multiples of this many units */
    _Alignas(16) unsigned char user[RW_USER_MAX]; /* the application's parameters */
} rw_arg_t;

_Static_assert(sizeof(rw_arg_t) <= SLUICE_TASK_ARG_MAX, "rw_arg_t exceeds a task's argument block");

/* An array as a leaf sees it: unit u is row u + off; rows [0, rows) exist (others are outside
 * the array: CONV2D's zero boundary). For RW_WHOLE arrays, base holds all row_elems elements. */
typedef struct {
    float *base;
    size_t rows;
    int64_t off;
    size_t row_elems;
} rw_view_t;

static inline float *rw_row(const rw_view_t *v, int64_t u) {
    int64_t r = u + v->off;
    if (r < 0 || (uint64_t)r >= v->rows) return NULL;
    return v->base + (size_t)r * v->row_elems;
}

/* A leaf: computes units [lo, hi) of `a`'s frame on the views (in `a->arr` order). */
typedef void (*rw_leaf_fn)(const rw_arg_t *a, const rw_view_t *v, size_t lo, size_t hi);

static inline rw_arg_t rw_arg(int task, size_t units, size_t align) {
    rw_arg_t a;
    memset(&a, 0, sizeof a);
    a.task = task;
    a.lo = 0;
    a.hi = units;
    a.align = align;
    return a;
}

static inline void rw_add(rw_arg_t *a, sluice_array_desc_t desc, int role, size_t row_elems, size_t halo) {
    if (a->narrays == RW_MAX_ARRAYS) FAIL("more than %d arrays", RW_MAX_ARRAYS);
    rw_array_t *r = &a->arr[a->narrays++];
    r->desc = desc;
    r->role = role;
    r->row_elems = role == RW_WHOLE ? 0 : row_elems;
    r->halo = role == RW_IN ? halo : 0;
    r->off = 0;
}

static inline size_t lv_elements(const sluice_array_t *a) {
    size_t n = 1;
    for (int d = 0; d < a->ndims; d++) n *= a->dims[d];
    return n;
}

/* The walk of one child's share through blocks. */
typedef struct {
    const rw_arg_t *a;
    rw_leaf_fn leaf;
    sluice_array_t par[RW_MAX_ARRAYS];   /* the parent's arrays */
    sluice_array_t whole[RW_MAX_ARRAYS]; /* RW_WHOLE copies, one per walk */
    size_t lo, hi, block;                /* the share, and units per block */
} rw_walk_t;

/* Parent rows (of array i) a block of units [b0, b1) needs: the rows themselves, plus the halo
 * for inputs, clipped to the array. */
static inline void rw_rows(const rw_walk_t *rw, int i, size_t b0, size_t b1, size_t *r0, size_t *r1) {
    const rw_array_t *x = &rw->a->arr[i];
    int64_t prows = (int64_t)(lv_elements(&rw->par[i]) / x->row_elems);
    int64_t lo = (int64_t)b0 + x->off - (int64_t)x->halo, hi = (int64_t)b1 + x->off + (int64_t)x->halo;
    if (x->role != RW_IN && (lo < 0 || hi > prows))
        FAIL("units %zu..%zu reach outside array %lld (%lld rows)", b0, b1, (long long)x->desc, (long long)prows);
    *r0 = (size_t)(lo < 0 ? 0 : lo);
    *r1 = (size_t)(hi > prows ? prows : hi);
}

static inline void rw_begin(const lv_walk_t *w, void *ctx, size_t step, lv_stage_t *st) {
    rw_walk_t *rw = ctx;
    const rw_arg_t *a = rw->a;
    size_t b0 = rw->lo + step * rw->block, b1 = lv_min(b0 + rw->block, rw->hi);
    rw_arg_t d = *a; /* the block's argument: same task, block-local frame, one level deeper */
    d.lo = 0;
    d.hi = b1 - b0;
    d.g0 = a->g0 + b0;
    d.depth = a->depth + 1;
    for (int i = 0; i < a->narrays; i++) {
        const rw_array_t *x = &a->arr[i];
        if (x->role == RW_WHOLE) {
            st->use[i] = rw->whole[i];
            d.arr[i].desc = rw->whole[i].desc;
            continue;
        }
        size_t r0, r1, re = x->row_elems;
        rw_rows(rw, i, b0, b1, &r0, &r1);
        /* descriptors below: RW_MAX_ARRAYS per pipeline slot, from 1 */
        sluice_array_desc_t desc = 1 + (sluice_array_desc_t)((step % LV_PIPE_DEPTH) * RW_MAX_ARRAYS + (size_t)i);
        blk_alloc(w, desc, r1 - r0, re, &st->use[i]);
        st->own[st->nown++] = st->use[i];
        d.arr[i].desc = st->use[i].desc;
        d.arr[i].off = (int64_t)b0 + x->off - (int64_t)r0;
        if (x->role & RW_IN)
            lv_rect(w, LV_IN, &rw->par[i], re, r0, 0, &st->use[i], re, 0, 0, r1 - r0, re, &st->in[st->nin++]);
        if (x->role & RW_OUT)
            lv_rect(w, LV_OUT, &rw->par[i], re, (size_t)((int64_t)b0 + x->off), 0, &st->use[i], re,
                    (size_t)d.arr[i].off, 0, b1 - b0, re, &st->out[st->nout++]);
    }
    memcpy(st->arg, &d, sizeof d);
    st->arg_len = sizeof d;
}

static inline void rw_views(const rw_arg_t *a, const sluice_array_t *arrays, rw_view_t *v) {
    for (int i = 0; i < a->narrays; i++) {
        size_t n = lv_elements(&arrays[i]);
        v[i].base = arrays[i].data;
        v[i].off = a->arr[i].off;
        v[i].row_elems = a->arr[i].role == RW_WHOLE ? n : a->arr[i].row_elems;
        v[i].rows = a->arr[i].role == RW_WHOLE ? 1 : n / a->arr[i].row_elems;
    }
}

static inline void rw_compute(const lv_walk_t *w, void *ctx, lv_stage_t *st) {
    (void)w;
    rw_walk_t *rw = ctx;
    rw_arg_t d;
    memcpy(&d, st->arg, sizeof d);
    rw_view_t v[RW_MAX_ARRAYS];
    rw_views(&d, st->use, v);
    rw->leaf(&d, v, d.lo, d.hi);
}

/* A share is cut into at least this many blocks where each still moves LV_PIPE_MIN_BYTES or
 * more: with a single block nothing overlaps (disk over an unbounded smp would read everything,
 * then compute, then write everything). */
#define LV_PIPE_BLOCKS 8
#define LV_PIPE_MIN_BYTES ((size_t)1 << 20)

/* Units per block: LV_PIPE_DEPTH blocks (plus the whole arrays, once) fit `budget` bytes. */
static inline size_t rw_block(const rw_walk_t *rw, size_t budget) {
    const rw_arg_t *a = rw->a;
    size_t share = rw->hi - rw->lo;
    size_t per_unit = 0, fixed = 0, halo = 0;
    for (int i = 0; i < a->narrays; i++) {
        if (a->arr[i].role == RW_WHOLE) {
            fixed += lv_elements(&rw->par[i]) * sizeof(float) + LV_ARRAY_SLACK;
        } else {
            per_unit += a->arr[i].row_elems * sizeof(float);
            halo += 2 * a->arr[i].halo * a->arr[i].row_elems * sizeof(float) + LV_ARRAY_SLACK;
        }
    }
    fixed += LV_PIPE_DEPTH * halo;
    if (per_unit == 0) return share;
    size_t block = share;
    if (budget != SIZE_MAX) {
        if (budget <= fixed || (budget - fixed) / LV_PIPE_DEPTH / per_unit == 0)
            FAIL("a memory bound of %zu bytes holds no block (needs more than %zu + %d x %zu bytes)", budget, fixed, LV_PIPE_DEPTH, per_unit);
        block = lv_min((budget - fixed) / LV_PIPE_DEPTH / per_unit, share);
    }
    size_t pipelined = lv_ceil_div(share, LV_PIPE_BLOCKS);
    if (pipelined * per_unit >= LV_PIPE_MIN_BYTES) block = lv_min(block, pipelined);
    return lv_ceil_div(share, lv_ceil_div(share, block)); /* even blocks */
}

/* The row task: called by each of the four examples' tasks with its leaf. */
static inline void rw_task(sluice_level_t child, const void *arg, size_t arg_len, rw_leaf_fn leaf) {
    rw_arg_t a;
    if (arg_len != sizeof a) FAIL("row task: argument of %zu bytes, expected %zu", arg_len, sizeof a);
    memcpy(&a, arg, sizeof a); /* the runtime's copy need not be aligned for rw_arg_t */
    rw_walk_t rw = {.a = &a, .leaf = leaf};
    lv_split(a.lo, a.hi, sluice_level_id(child), sluice_level_siblings(child), a.align ? a.align : 1, &rw.lo, &rw.hi);
    if (rw.lo >= rw.hi) return;

    int addressable = 1;
    for (int i = 0; i < a.narrays; i++) {
        CK(sluice_array_get(child, a.arr[i].desc, &rw.par[i]));
        if (rw.par[i].elem_size != sizeof(float)) FAIL("array %lld: elements are not floats", (long long)a.arr[i].desc);
        if (a.arr[i].role != RW_WHOLE && lv_elements(&rw.par[i]) % a.arr[i].row_elems != 0)
            FAIL("array %lld: not whole rows of %zu", (long long)a.arr[i].desc, a.arr[i].row_elems);
        addressable &= rw.par[i].data != NULL;
    }

    lv_walk_t w;
    lv_walk_open(child, a.task, &w);
    if (w.below == NULL && addressable) { /* a leaf on the parent's memory: no copies at all */
        rw_view_t v[RW_MAX_ARRAYS];
        rw_views(&a, rw.par, v);
        leaf(&a, v, rw.lo, rw.hi);
        return;
    }
    /* Stream the share through blocks: at below's top, or (leaf over a file or a distributed
     * array) through this thread's own buffers. */
    rw.block = rw_block(&rw, lv_budget(&w));
    for (int i = 0; i < a.narrays; i++) {
        if (a.arr[i].role != RW_WHOLE) continue;
        size_t n = lv_elements(&rw.par[i]);
        lv_xlist_t x;
        blk_alloc(&w, 100 + i, 1, n, &rw.whole[i]);
        lv_rect(&w, LV_IN, &rw.par[i], n, 0, 0, &rw.whole[i], n, 0, 0, 1, n, &x);
        lv_stage_start(&w, &x, 1);
        lv_stage_wait(&w, &x, 1);
    }
    lv_pipe_run(&w, lv_ceil_div(rw.hi - rw.lo, rw.block), rw_begin, rw_compute, &rw);
    for (int i = 0; i < a.narrays; i++)
        if (a.arr[i].role == RW_WHOLE) blk_free(&w, &rw.whole[i]);
    if (w.below != NULL) lv_close_below(&w.below, a.depth + 1, a.measure);
}

/* ---- FILL: the generic INIT task ------------------------------------------------------------------ */

/* user area of a FILL call: the formula of each (RW_OUT) array */
typedef struct {
    int formula[RW_MAX_ARRAYS];
} fill_params_t;

static inline void fill_leaf(const rw_arg_t *a, const rw_view_t *v, size_t lo, size_t hi) {
    fill_params_t p;
    memcpy(&p, a->user, sizeof p);
    for (int i = 0; i < a->narrays; i++) {
        size_t re = v[i].row_elems;
        for (size_t u = lo; u < hi; u++) {
            float *row = rw_row(&v[i], (int64_t)u);
            uint64_t g = (a->g0 + u) * re;
            for (size_t e = 0; e < re; e++) row[e] = gen(p.formula[i], g + e);
        }
    }
}

static inline void task_fill(sluice_level_t child, const void *arg, size_t arg_len) {
    rw_task(child, arg, arg_len, fill_leaf);
}

/* ---- SGEMM: the blocked kernel and the tile walker ------------------------------------------------ */

/* sgemm_blocked: C[m x n] = (beta ? C : 0) + A[m x k] * B[k x n], row-major, leading dimensions
 * lda/ldb/ldc. Blocking: a KC x NC panel of B (128 x 256 floats = 128 KiB) stays in L2 while
 * MC rows of A stream past it; for one row of C, NC floats (1 KiB) stay in L1 while four rows of
 * the panel are added into them at a time (four k per pass: a quarter of the loads and stores
 * of C). The innermost loop runs along contiguous rows of B and C with restrict pointers, so
 * -O2 (GCC >= 12) / -O3 vectorize it. Every SGEMM leaf and the "direct" baseline run this. */
#define GEMM_MC 64
#define GEMM_KC 128
#define GEMM_NC 256
static inline void sgemm_blocked(size_t m, size_t n, size_t k, const float *restrict A, size_t lda,
                                 const float *restrict B, size_t ldb, float *restrict C, size_t ldc, int beta) {
    if (!beta)
        for (size_t i = 0; i < m; i++) memset(C + i * ldc, 0, n * sizeof(float));
    for (size_t j0 = 0; j0 < n; j0 += GEMM_NC) {
        size_t nj = lv_min(GEMM_NC, n - j0);
        for (size_t k0 = 0; k0 < k; k0 += GEMM_KC) {
            size_t nk = lv_min(GEMM_KC, k - k0);
            for (size_t i0 = 0; i0 < m; i0 += GEMM_MC) {
                size_t ni = lv_min(GEMM_MC, m - i0);
                for (size_t i = i0; i < i0 + ni; i++) {
                    float *restrict c = C + i * ldc + j0;
                    const float *a = A + i * lda + k0;
                    size_t kk = 0;
                    for (; kk + 4 <= nk; kk += 4) {
                        const float a0 = a[kk], a1 = a[kk + 1], a2 = a[kk + 2], a3 = a[kk + 3];
                        const float *restrict b0 = B + (k0 + kk) * ldb + j0;
                        const float *restrict b1 = b0 + ldb, *restrict b2 = b1 + ldb, *restrict b3 = b2 + ldb;
                        for (size_t j = 0; j < nj; j++) c[j] += a0 * b0[j] + a1 * b1[j] + a2 * b2[j] + a3 * b3[j];
                    }
                    for (; kk < nk; kk++) {
                        const float av = a[kk];
                        const float *restrict b = B + (k0 + kk) * ldb + j0;
                        for (size_t j = 0; j < nj; j++) c[j] += av * b[j];
                    }
                }
            }
        }
    }
}

/* The argument block of the SGEMM task: C (m x n) = A (m x k) * B (k x n), shapes taken from
 * the registered arrays; this call covers rows [lo, hi) of C, which the children split. */
typedef struct {
    int task, depth, measure;
    int beta; /* 0: C = A*B; 1: C += A*B (k blocks after the first one) */
    sluice_array_desc_t a, b, c;
    size_t lo, hi;
} gemm_arg_t;

typedef struct {
    const gemm_arg_t *g;
    sluice_array_t A, B, C;     /* the parent's arrays */
    size_t m, n, k;             /* their shapes */
    size_t r0, r1;              /* this child's rows of C */
    size_t bi, bj, bk;          /* tile sizes */
    size_t ntj, nkb;            /* tiles across, k blocks */
    sluice_array_t ctile[LV_PIPE_DEPTH]; /* C tiles live across the k blocks of a tile; one per slot */
} gemm_walk_t;

static inline int gemm_fits(size_t bi, size_t bj, size_t bk, size_t budget) {
    /* LV_PIPE_DEPTH steps' A and B blocks, as many C tiles (the steps in flight touch at most
     * that many tiles: a tile's last step overlaps the next ones' first) */
    double need = (double)sizeof(float) * LV_PIPE_DEPTH * ((double)bi * bk + (double)bk * bj + (double)bi * bj) +
                  3.0 * LV_PIPE_DEPTH * LV_ARRAY_SLACK;
    return need <= (double)budget;
}

static inline void gemm_begin(const lv_walk_t *w, void *ctx, size_t step, lv_stage_t *st) {
    gemm_walk_t *gw = ctx;
    size_t t = step / gw->nkb, kb = step % gw->nkb, ti = t / gw->ntj, tj = t % gw->ntj;
    size_t i0 = gw->r0 + ti * gw->bi, i1 = lv_min(i0 + gw->bi, gw->r1);
    size_t j0 = tj * gw->bj, j1 = lv_min(j0 + gw->bj, gw->n);
    size_t k0 = kb * gw->bk, k1 = lv_min(k0 + gw->bk, gw->k);
    size_t ni = i1 - i0, nj = j1 - j0, nk = k1 - k0;
    sluice_array_desc_t slot = (sluice_array_desc_t)(step % LV_PIPE_DEPTH), tslot = (sluice_array_desc_t)(t % LV_PIPE_DEPTH);
    /* A block: ni runs of nk (rows of A inside the k block); B block: nk runs of nj. Descriptors:
     * A 1.., B 1+DEPTH.., C tiles 1+2*DEPTH.. (by slot). */
    blk_alloc(w, 1 + slot, ni, nk, &st->use[0]);
    lv_rect(w, LV_IN, &gw->A, gw->k, i0, k0, &st->use[0], nk, 0, 0, ni, nk, &st->in[st->nin++]);
    blk_alloc(w, 1 + LV_PIPE_DEPTH + slot, nk, nj, &st->use[1]);
    lv_rect(w, LV_IN, &gw->B, gw->n, k0, j0, &st->use[1], nj, 0, 0, nk, nj, &st->in[st->nin++]);
    st->own[st->nown++] = st->use[0];
    st->own[st->nown++] = st->use[1];
    /* C tile: allocated by its first k block (read in only if the caller accumulates), written
     * out and freed by its last. */
    if (kb == 0) {
        blk_alloc(w, 1 + 2 * LV_PIPE_DEPTH + tslot, ni, nj, &gw->ctile[tslot]);
        if (gw->g->beta)
            lv_rect(w, LV_IN, &gw->C, gw->n, i0, j0, &gw->ctile[tslot], nj, 0, 0, ni, nj, &st->in[st->nin++]);
    }
    st->use[2] = gw->ctile[tslot];
    if (kb + 1 == gw->nkb) {
        lv_rect(w, LV_OUT, &gw->C, gw->n, i0, j0, &st->use[2], nj, 0, 0, ni, nj, &st->out[st->nout++]);
        st->own[st->nown++] = st->use[2];
    }
    gemm_arg_t d = *gw->g;
    d.depth++;
    d.beta = kb == 0 ? gw->g->beta : 1;
    d.a = st->use[0].desc;
    d.b = st->use[1].desc;
    d.c = st->use[2].desc;
    d.lo = 0;
    d.hi = ni;
    memcpy(st->arg, &d, sizeof d);
    st->arg_len = sizeof d;
}

static inline void gemm_compute(const lv_walk_t *w, void *ctx, lv_stage_t *st) {
    (void)w;
    (void)ctx;
    gemm_arg_t d;
    memcpy(&d, st->arg, sizeof d);
    const sluice_array_t *A = &st->use[0], *B = &st->use[1], *C = &st->use[2];
    sgemm_blocked(A->dims[0], B->dims[1], A->dims[1], A->data, A->dims[1], B->data, B->dims[1], C->data, C->dims[1], d.beta);
}

/* The SGEMM task's walk: the child's rows of C, tiled (bi x bj) with k in blocks of bk. */
static inline void gemm_task(sluice_level_t child, const void *arg, size_t arg_len) {
    gemm_arg_t g;
    if (arg_len != sizeof g) FAIL("sgemm task: argument of %zu bytes, expected %zu", arg_len, sizeof g);
    memcpy(&g, arg, sizeof g);
    gemm_walk_t gw = {.g = &g};
    lv_split(g.lo, g.hi, sluice_level_id(child), sluice_level_siblings(child), 1, &gw.r0, &gw.r1);
    if (gw.r0 >= gw.r1) return;
    CK(sluice_array_get(child, g.a, &gw.A));
    CK(sluice_array_get(child, g.b, &gw.B));
    CK(sluice_array_get(child, g.c, &gw.C));
    if (gw.A.ndims != 2 || gw.B.ndims != 2 || gw.C.ndims != 2) FAIL("sgemm: arrays must be 2-D");
    gw.m = gw.C.dims[0];
    gw.n = gw.C.dims[1];
    gw.k = gw.A.dims[1];
    if (gw.A.dims[0] != gw.m || gw.B.dims[0] != gw.k || gw.B.dims[1] != gw.n || gw.r1 > gw.m)
        FAIL("sgemm: shapes do not match");

    lv_walk_t w;
    lv_walk_open(child, g.task, &w);
    if (w.below == NULL && gw.A.data && gw.B.data && gw.C.data) { /* leaf on the parent's memory */
        const float *A = gw.A.data, *B = gw.B.data;
        float *C = gw.C.data;
        sgemm_blocked(gw.r1 - gw.r0, gw.n, gw.k, A + gw.r0 * gw.k, gw.k, B, gw.n, C + gw.r0 * gw.n, gw.n, g.beta);
        return;
    }
    /* Tiles: everything in one step where it fits, else the largest square-ish tiles that do
     * (bigger tiles: fewer re-reads of A and B, 2 N^3 (1/bi + 1/bj) bytes in all). */
    size_t budget = lv_budget(&w);
    size_t rows = gw.r1 - gw.r0;
    gw.bi = rows;
    gw.bj = gw.n;
    gw.bk = gw.k;
    if (!gemm_fits(gw.bi, gw.bj, gw.bk, budget)) {
        size_t t = 64;
        while (t * 2 <= rows || t * 2 <= gw.n || t * 2 <= gw.k) t *= 2;
        for (; t >= 16 && !gemm_fits(lv_min(rows, t), lv_min(gw.n, t), lv_min(gw.k, t), budget); t /= 2) {}
        if (t < 16) FAIL("sgemm: a memory bound of %zu bytes holds no 16 x 16 tiles", budget);
        gw.bi = lv_min(rows, t);
        gw.bj = lv_min(gw.n, t);
        gw.bk = lv_min(gw.k, t);
    }
    gw.ntj = lv_ceil_div(gw.n, gw.bj);
    gw.nkb = lv_ceil_div(gw.k, gw.bk);
    size_t steps = lv_ceil_div(rows, gw.bi) * gw.ntj * gw.nkb;
    lv_pipe_run(&w, steps, gemm_begin, gemm_compute, &gw);
    if (w.below != NULL) lv_close_below(&w.below, g.depth + 1, g.measure);
}

/* ---- The top ------------------------------------------------------------------------------------ */

/* MPI at MPI_THREAD_MULTIPLE: the cluster runtime needs it (smp and disk do not use MPI); with
 * less, only a cluster composition fails (sluice_levels_open says SLUICE_ERR_THREAD). */
static inline void lv_init(int *argc, char ***argv) {
    int provided = 0;
    MPICK(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
}

static inline const char *lv_spec(void) {
    const char *s = getenv("SLUICE_LEVELS");
    return s != NULL && *s != '\0' ? s : "smp";
}

/* Allocates a rows x cols float array at the top and registers it. */
static inline sluice_array_t lv_top_array(sluice_level_t top, sluice_array_desc_t desc, size_t rows, size_t cols) {
    sluice_array_t a;
    size_t dims[2] = {rows, cols};
    CK(sluice_array_alloc(top, sizeof(float), 2, dims, desc, 64, &a));
    CK(sluice_array_add(top, &a));
    return a;
}

/* Runs a task on every child of the top and waits for all of them. */
static inline void lv_call_all(sluice_level_t top, int task, const void *arg, size_t arg_len) {
    sluice_task_t h;
    CK(sluice_task_call(top, task, 0, sluice_level_siblings(top), arg, arg_len, &h));
    CK(sluice_task_wait(top, &h));
}

/* The measured phase (COMPUTE): its wall time and the top runtime's counters over it. */
typedef struct {
    int have_top;
    int direct; /* no runtime at all (SGEMM's baseline): no levels to report */
    double t0, seconds;
    sluice_level_stats_t s0, s1;
} lv_run_t;

static inline void lv_run_begin(lv_run_t *r, sluice_level_t top) {
    r->have_top = 1;
    CK(sluice_level_stats(top, &r->s0));
    r->t0 = lv_now();
}

static inline void lv_run_end(lv_run_t *r, sluice_level_t top) {
    r->seconds = lv_now() - r->t0;
    CK(sluice_level_stats(top, &r->s1));
}

/* Appends " | L<d> <level text>: tasks=... xfers=... bytes=... elided=... busy=..%" per level pair. */
static inline void lv_format_stats(char *out, size_t cap, const lv_run_t *r, const uint64_t (*acc)[ST_N]) {
    const char *spec = lv_spec();
    size_t used = strlen(out);
    for (int d = 0; d < LV_MAX_DEPTH && *spec != '\0'; d++) {
        size_t len = strcspn(spec, "/");
        uint64_t s[ST_N];
        if (d == 0) {
            s[ST_INSTANCES] = 1;
            s[ST_TASKS] = r->s1.tasks - r->s0.tasks;
            s[ST_XFERS] = r->s1.xfers - r->s0.xfers;
            s[ST_BYTES] = r->s1.bytes - r->s0.bytes;
            s[ST_ELIDED] = r->s1.elided_bytes - r->s0.elided_bytes;
            s[ST_BUSY] = r->s1.busy_ns - r->s0.busy_ns;
            s[ST_ALIVE] = r->s1.alive_ns - r->s0.alive_ns;
        } else {
            memcpy(s, acc[d], sizeof s);
        }
        /* busy: the share of the level's lifetime with a transfer in flight (summed over the
         * runtimes of that level: each child above opens its own) */
        double busy = s[ST_ALIVE] ? 100.0 * (double)s[ST_BUSY] / (double)s[ST_ALIVE] : 0.0;
        if (used < cap)
            used += (size_t)snprintf(out + used, cap - used,
                                     " | L%d %.*s: runtimes=%llu tasks=%llu xfers=%llu bytes=%llu elided=%llu busy=%.1f%%", d,
                                     (int)len, spec, (unsigned long long)s[ST_INSTANCES], (unsigned long long)s[ST_TASKS],
                                     (unsigned long long)s[ST_XFERS], (unsigned long long)s[ST_BYTES],
                                     (unsigned long long)s[ST_ELIDED], busy);
        spec += len;
        if (*spec == '/') spec++;
    }
}

/* Ends the program on every rank: combines the mismatch counts (MPI_Allreduce: on a cluster
 * composition the CHECK leaves ran on every rank; this runs after the top closed its runtime,
 * and on the other ranks after sluice_levels_open returned), and the statistics of the levels
 * below the top when one rank held the top; the rank with the top prints the one result line.
 * Returns the exit status. */
static inline int lv_finish(const char *name, const lv_run_t *r, double flops, const char *what) {
    uint64_t local = atomic_load(&lv_mismatches), total = 0;
    MPICK(MPI_Allreduce(&local, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD));
    int have = r->have_top, tops = 0;
    MPICK(MPI_Allreduce(&have, &tops, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    uint64_t mine[LV_MAX_DEPTH][ST_N], acc[LV_MAX_DEPTH][ST_N];
    for (int d = 0; d < LV_MAX_DEPTH; d++)
        for (int f = 0; f < ST_N; f++) acc[d][f] = mine[d][f] = atomic_load(&lv_stats[d][f]);
    if (tops == 1) /* one top (cluster: rank 0): the levels below ran on every rank */
        MPICK(MPI_Reduce(mine, acc, LV_MAX_DEPTH * ST_N, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD));
    if (have) {
        if (total == 0) {
            char line[4096];
            double gflops = r->seconds > 0 ? flops / r->seconds * 1e-9 : 0.0;
            snprintf(line, sizeof line, "%s: OK %s levels=%s time=%.4f s GFLOP/s=%.3f", name, what,
                     r->direct ? "none(direct)" : lv_spec(), r->seconds, gflops);
            if (!r->direct) lv_format_stats(line, sizeof line, r, (const uint64_t(*)[ST_N])acc);
            printf("%s\n", line);
        } else {
            printf("%s: FAILED %llu mismatches\n", name, (unsigned long long)total);
        }
        fflush(stdout);
    }
    MPICK(MPI_Finalize());
    return total == 0 ? 0 : 1;
}

#endif /* SLUICE_LEVELS_EXAMPLES_COMMON_H */
