/*
 * coll_common.h - what bench/coll_fft.c and bench/coll_halo.c share: options, buffers, and the
 * sampling loop that times one collective operation per case.
 *
 * Output of a benchmark (rank 0, one line each, parsed by scripts/bench-coll.sh):
 *
 *   shim <0|1>                                whether sluice's symbols are in the process
 *   ranks <P> <layout>                        ranks and the decomposition (e.g. "dims=2x1x1")
 *   verify <case> <size> ok                   the case's result was checked element by element
 *   case <case> <size> <bytes> <iters>        before the case's samples: bytes = payload bytes one
 *                                             rank sends per operation (its self block included),
 *                                             iters = operations per sample
 *   sample <case> <size> <k> <s> <cpu>        seconds per operation (the slowest rank's time for
 *                                             `iters` operations / iters) and the smallest CPU
 *                                             share of any rank during the sample
 *
 * The CPU share (thread CPU time / wall time) is about 1.0 while a rank busy-polls undisturbed;
 * a sample during which another process took a rank's core is printed and then repeated (up to
 * `retries` times), and the scripts leave it out of the statistics.
 */
#ifndef COLL_COMMON_H
#define COLL_COMMON_H

#include <mpi.h>
#include <stddef.h>

#define COLL_MAX_ITEMS 16

extern int g_rank;

/* One timed case: `op` runs the collective `iters` times on `ctx`. */
typedef struct {
    char name[24];
    long size;    /* N for the transpose, n for the halo exchange */
    double bytes; /* payload bytes one rank sends per operation */
    void (*op)(void *ctx, long iters);
    void *ctx;
    long iters; /* operations per sample, from calibrate() */
} coll_case;

/* Options common to both benchmarks. */
typedef struct {
    long sizes[COLL_MAX_ITEMS];
    int nsizes;
    int samples;      /* -n: samples per case (7) */
    double target_s;  /* -m: milliseconds per sample (30), at least one operation */
    int retries;      /* -r: repeats of a sample with a low CPU share (2) */
    double min_share; /* -q: CPU share below which a sample is repeated (0.95) */
    int want_dt;      /* -k dt: the derived-datatype case */
    int want_contig;  /* -k contig: the contiguous baseline of the same bytes */
} coll_opts;

void coll_die(const char *msg);
void coll_check(int rc, const char *what);
/* Page-aligned, written once (pre-faulted) before anything is timed; never NULL. */
void *coll_alloc(size_t bytes);
/* Parses -s SIZES -n -m -r -q -k; returns 0, or -1 after printing usage (rank 0). */
int coll_parse(int argc, char **argv, coll_opts *o, const char *usage_sizes);
/* Prints "shim <0|1>" on rank 0. */
void coll_print_shim(void);
/* Calibrates every case (the untimed runs are the warm-up), then `samples` passes that each
 * time every case once, so one case's samples are spread over the whole run. */
void coll_run(coll_case *cases, int ncases, const coll_opts *o);

#endif
