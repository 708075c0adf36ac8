/*
 * levels_overhead.c - what the multi-level runtime (include/sluice_levels.h) itself costs, on the
 * composition named by SLUICE_LEVELS (its top level pair only):
 *
 *   task <trial> <us>                       an empty task called on every child and waited for
 *                                           (sluice_task_call + sluice_task_wait), per call
 *   xfer <get|put> <runs> <child> <trial> <us>
 *                                           one transfer list started and waited for
 *                                           (sluice_xfer + sluice_xfer_wait), per transfer: 1 run
 *                                           of 8 bytes, or 64 runs of 8 bytes (128 bytes apart
 *                                           in the parent's array, packed in the child's)
 *   create <runs> <child> <trial> <us>      sluice_xfer_list_create of 1 or 1024 runs, per list
 *                                           (the lists are freed after the timed loop)
 *   aged <child> <done> <us>                1-run gets on one runtime, per transfer, after `done`
 *                                           transfers of that runtime (the busy-time record
 *                                           grows with every transfer)
 *   levels_overhead: OK levels=<spec> kind=<kind> children=<n>
 *
 * The transfers run in a task on one child at a time (child c, then c+1, ...): the child reads
 * from (get) and writes to (put) the share of child c+1 (mod the children) of a top array of
 * children x 64 Ki floats, through a malloc'ed buffer of its own, so that nothing is elided on an
 * smp top (whose array the child could address). On a cluster top with 2 ranks, child 0 (rank 0)
 * moves rank 1's share and child 1 (rank 1) rank 0's: every transfer is remote. On a disk top the
 * array is a file. Each child prints its own lines (on a cluster, rank 1 prints on its rank).
 * Each child's transfers run on a runtime of their own (opened for it, closed after), as does
 * the "aged" series (child 0, `aged` transfers in chunks of `xfers`).
 *
 * Usage: levels_overhead <trials> <task_calls> <xfers> <creates> <aged>
 *        (per trial: task_calls calls, xfers transfers per list, creates lists per size; the
 *        same counts untimed first as warm-up; aged: 0 for no aging series)
 *
 * Built with an MPI compiler wrapper and linked with -lsluice by scripts/bench-levels.sh.
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sluice_levels.h"

enum { T_EMPTY, T_XFER, NTASKS };
#define D_ARR 1
#define SHARE ((size_t)64 << 10) /* floats per child's share of the top array */
#define LOCAL_FLOATS 8192
#define RUNS_SMALL 64
#define RUNS_CREATE 1024

enum { MODE_MEASURE, MODE_AGED };
typedef struct {
    int trials, xfers, creates, aged, mode;
} xfer_arg_t;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(void) {
    int up = 0, down = 0;
    MPI_Initialized(&up);
    MPI_Finalized(&down);
    if (up && !down) MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

#define CK(call)                                                                                  \
    do {                                                                                          \
        int ck_rc_ = (call);                                                                      \
        if (ck_rc_ != SLUICE_SUCCESS) {                                                           \
            fprintf(stderr, "levels_overhead:%d: %s failed: %d\n", __LINE__, #call, ck_rc_);     \
            die();                                                                                \
        }                                                                                         \
    } while (0)

static void task_empty(sluice_level_t child, const void *arg, size_t len) {
    (void)child;
    (void)arg;
    (void)len;
}

/* Runs `n` transfers of `list` (start + wait) and returns the seconds. */
static double run_xfers(sluice_level_t child, sluice_xfer_list_t list, int n) {
    double t0 = now_s();
    for (int i = 0; i < n; i++) {
        sluice_xfer_t x;
        CK(sluice_xfer(child, list, &x));
        CK(sluice_xfer_wait(child, &x));
    }
    return now_s() - t0;
}

static void task_xfer(sluice_level_t child, const void *arg, size_t len) {
    xfer_arg_t a;
    if (len != sizeof a) {
        fprintf(stderr, "levels_overhead: bad argument\n");
        die();
    }
    memcpy(&a, arg, sizeof a);
    int id = sluice_level_id(child), n = sluice_level_siblings(child);
    sluice_array_t par, loc;
    CK(sluice_array_get(child, D_ARR, &par));
    float *buf = malloc(LOCAL_FLOATS * sizeof(float));
    size_t *pidx = malloc(RUNS_CREATE * sizeof(size_t)), *lidx = malloc(RUNS_CREATE * sizeof(size_t));
    size_t *lens = malloc(RUNS_CREATE * sizeof(size_t));
    sluice_xfer_list_t *made = malloc((size_t)a.creates * sizeof *made);
    if (!buf || !pidx || !lidx || !lens || !made) {
        fprintf(stderr, "levels_overhead: out of memory\n");
        die();
    }
    for (int i = 0; i < LOCAL_FLOATS; i++) buf[i] = (float)i;
    size_t ldims[1] = {LOCAL_FLOATS};
    CK(sluice_array_local(buf, sizeof(float), 1, ldims, &loc));
    size_t base = (size_t)((id + 1) % n) * SHARE; /* the next child's share */

    /* Runs of 2 floats (8 bytes): the parent's 32 floats (128 bytes) apart, packed locally. */
    for (int i = 0; i < RUNS_CREATE; i++) {
        pidx[i] = base + (size_t)i * 32;
        lidx[i] = (size_t)i * 2;
        lens[i] = 2;
    }
    if (a.mode == MODE_AGED) { /* 1-run gets in chunks of `xfers`, timed, until `aged` ran */
        sluice_xfer_list_t l;
        CK(sluice_xfer_list_create(child, &loc, &par, lidx, pidx, lens, 1, &l));
        int done = 0;
        while (done < a.aged) {
            double s = run_xfers(child, l, a.xfers);
            printf("aged %d %d %.3f\n", id, done, 1e6 * s / a.xfers);
            done += a.xfers;
        }
        fflush(stdout);
        CK(sluice_xfer_list_free(&l));
        free(made);
        free(lens);
        free(lidx);
        free(pidx);
        free(buf);
        return;
    }
    static const int runs[2] = {1, RUNS_SMALL};
    sluice_xfer_list_t get[2], put[2];
    for (int r = 0; r < 2; r++) {
        CK(sluice_xfer_list_create(child, &loc, &par, lidx, pidx, lens, (size_t)runs[r], &get[r]));
        CK(sluice_xfer_list_create(child, &par, &loc, pidx, lidx, lens, (size_t)runs[r], &put[r]));
    }
    for (int r = 0; r < 2; r++) { /* warm-up: first touches, connections, registrations */
        run_xfers(child, get[r], a.xfers);
        run_xfers(child, put[r], a.xfers);
    }
    char out[4096];
    for (int t = 0; t < a.trials; t++) {
        size_t used = 0;
        for (int r = 0; r < 2; r++) {
            double g = run_xfers(child, get[r], a.xfers), p = run_xfers(child, put[r], a.xfers);
            used += (size_t)snprintf(out + used, sizeof out - used, "xfer get %d %d %d %.3f\nxfer put %d %d %d %.3f\n", runs[r], id,
                                     t, 1e6 * g / a.xfers, runs[r], id, t, 1e6 * p / a.xfers);
        }
        fputs(out, stdout);
    }
    for (int r = 0; r < 2; r++) {
        CK(sluice_xfer_list_free(&get[r]));
        CK(sluice_xfer_list_free(&put[r]));
    }

    static const int cruns[2] = {1, RUNS_CREATE};
    for (int t = -1; t < a.trials; t++) { /* trial -1: warm-up */
        size_t used = 0;
        for (int r = 0; r < 2; r++) {
            double t0 = now_s();
            for (int i = 0; i < a.creates; i++)
                CK(sluice_xfer_list_create(child, &loc, &par, lidx, pidx, lens, (size_t)cruns[r], &made[i]));
            double s = now_s() - t0;
            for (int i = 0; i < a.creates; i++) CK(sluice_xfer_list_free(&made[i]));
            if (t >= 0) used += (size_t)snprintf(out + used, sizeof out - used, "create %d %d %d %.3f\n", cruns[r], id, t, 1e6 * s / a.creates);
        }
        if (t >= 0) fputs(out, stdout);
    }
    fflush(stdout);
    free(made);
    free(lens);
    free(lidx);
    free(pidx);
    free(buf);
}

/* Opens a runtime of the composition with one array of children x SHARE floats (the top; NULL
 * on the other ranks of a cluster, which served until the top closed it). */
static sluice_level_t open_top(sluice_array_t *arr) {
    static const sluice_task_fn tasks[NTASKS] = {[T_EMPTY] = task_empty, [T_XFER] = task_xfer};
    sluice_level_t top = NULL;
    CK(sluice_levels_open(NULL, tasks, NTASKS, &top));
    if (top != NULL) {
        size_t dims[1] = {(size_t)sluice_level_siblings(top) * SHARE};
        CK(sluice_array_alloc(top, sizeof(float), 1, dims, D_ARR, 64, arr));
        CK(sluice_array_add(top, arr));
    }
    return top;
}

static void call_one(sluice_level_t top, int task, int c, const void *arg, size_t len) {
    sluice_task_t h;
    CK(sluice_task_call(top, task, c, c + 1, arg, len, &h));
    CK(sluice_task_wait(top, &h));
}

int main(int argc, char **argv) {
    int provided = 0, rank = 0, ranks = 1;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    if (argc != 6) {
        fprintf(stderr, "usage: levels_overhead <trials> <task_calls> <xfers> <creates> <aged>\n");
        die();
    }
    int trials = atoi(argv[1]), calls = atoi(argv[2]);
    xfer_arg_t xa = {.trials = trials, .xfers = atoi(argv[3]), .creates = atoi(argv[4]), .aged = atoi(argv[5])};
    if (trials < 1 || calls < 1 || xa.xfers < 1 || xa.creates < 1 || xa.aged < 0) {
        fprintf(stderr, "levels_overhead: counts must be positive\n");
        die();
    }
    const char *spec = getenv("SLUICE_LEVELS");
    char kind[16] = "";
    sluice_array_t arr;
    /* The children: every process learns it from the first runtime (rank 0 has the top). */
    sluice_level_t top = open_top(&arr);
    int n = top != NULL ? sluice_level_siblings(top) : 0;
    if (top != NULL) {
        snprintf(kind, sizeof kind, "%s", sluice_level_kind(top));
        int payload = 0;
        for (int t = -1; t < trials; t++) { /* trial -1: warm-up */
            double t0 = now_s();
            for (int i = 0; i < calls; i++) {
                sluice_task_t h;
                CK(sluice_task_call(top, T_EMPTY, 0, n, &payload, sizeof payload, &h));
                CK(sluice_task_wait(top, &h));
            }
            double s = now_s() - t0;
            if (t >= 0) printf("task %d %.3f\n", t, 1e6 * s / calls);
        }
        fflush(stdout);
        CK(sluice_level_close(&top));
    }
    if (ranks > 1) MPI_Bcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD); /* after the close: rank 1 served until then */
    /* Transfers: a fresh runtime per child (a runtime's cost per transfer grows with the
     * transfers it ran: see "aged"), then the aging run on child 0. */
    for (int c = 0; c <= n; c++) {
        if (c == n && xa.aged == 0) break;
        top = open_top(&arr);
        if (top != NULL) {
            xfer_arg_t a = xa;
            a.mode = c == n ? MODE_AGED : MODE_MEASURE;
            call_one(top, T_XFER, c == n ? 0 : c, &a, sizeof a);
            CK(sluice_level_close(&top));
        }
    }
    if (rank == 0) {
        printf("levels_overhead: OK levels=%s kind=%s children=%d\n", spec ? spec : "smp", kind, n);
        fflush(stdout);
    }
    MPI_Finalize();
    return 0;
}
