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
 *
 * A/B mode (-A, for a process with libsluice.so preloaded; scripts/bench-coll-ab.sh): instead of
 * samples, pairs of trials, one through the PMPI_* entry points (the bare MPI's own collective) and
 * one through the MPI_* ones (sluice), back to back on every rank, the order alternating, each
 * after an untimed eighth of its operations when there are 8 or more. Separate bare and preloaded
 * jobs see this machine's speed (and bare Open MPI's halo time) change by 1.5-2.8x from one job to
 * the next; the two halves of a pair see the same moment, the same buffers and the same pages.
 * Pairs are added to a case until the distribution-free 95% interval of the median speed-up
 * (bare time / sluice time) is within +-tol of it (-e, 0.02), at least -n and at most -N (100)
 * pairs; cases take turns in batches of 4 pairs. Rank 0 prints instead of sample lines:
 *
 *   ab <case> <size> <bare_s> <sluice_s> <cpu>   seconds per operation of both trials and the
 *                                                smallest CPU share of any rank in either
 *   abci <case> <size> <pairs> <median> <lo> <hi>  per case at the end: the speed-up's median and
 *                                                95% interval over the clean pairs
 *
 * What A/B cannot show is an effect of sluice outside the calls (its set-up in MPI_Init, type
 * commits); the default mode, bare and preloaded jobs, covers that.
 */
#ifndef COLL_COMMON_H
#define COLL_COMMON_H

#include <mpi.h>
#include <stddef.h>

#define COLL_MAX_ITEMS 16

extern int g_rank;
/* A/B mode: 1 while a trial runs through the PMPI_* entry points. COLL_MPI(MPI_Alltoall) is the
 * function a case's operation calls: PMPI_Alltoall then, MPI_Alltoall (sluice, when preloaded)
 * otherwise. */
extern int g_bare;
#define COLL_MPI(fn) (g_bare ? P##fn : fn)

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
    int ab;           /* -A: paired A/B trials, bare (PMPI_*) against sluice (MPI_*) */
    int max_pairs;    /* -N: A/B pairs per case at most (100); -n is the least */
    double tol;       /* -e: A/B stops when the 95% interval is within +-tol of the median (0.02) */
} coll_opts;

void coll_die(const char *msg);
void coll_check(int rc, const char *what);
/* Page-aligned, written once (pre-faulted) before anything is timed; never NULL. */
void *coll_alloc(size_t bytes);
/* Parses -s SIZES -n -m -r -q -k -A -N -e; returns 0, or -1 after printing usage (rank 0). */
int coll_parse(int argc, char **argv, coll_opts *o, const char *usage_sizes);
/* Prints "shim <0|1>" on rank 0. */
void coll_print_shim(void);
/* Calibrates every case (the untimed runs are the warm-up), then `samples` passes that each
 * time every case once, so one case's samples are spread over the whole run; with -A the A/B
 * passes instead (see above). */
void coll_run(coll_case *cases, int ncases, const coll_opts *o);

#endif
