/*
 * coll_common.c - options, buffers and the sampling loop of the collective benchmarks
 * (see coll_common.h for the output format).
 */
#define _GNU_SOURCE
#include "coll_common.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ab_stats.h"

#define PAGE 4096u

int g_rank;
int g_bare;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CPU time of the calling thread: below the wall time when the thread was descheduled. */
static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void coll_die(const char *msg) {
    fprintf(stderr, "coll r%d: %s\n", g_rank, msg);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
    exit(3);
}

void coll_check(int rc, const char *what) {
    if (rc != MPI_SUCCESS) {
        char m[256];
        snprintf(m, sizeof m, "%s failed (%d)", what, rc);
        coll_die(m);
    }
}

void *coll_alloc(size_t bytes) {
    size_t n = (bytes + PAGE - 1) / PAGE * PAGE;
    void *p = NULL;
    if (n == 0) n = PAGE;
    if (posix_memalign(&p, PAGE, n) != 0) coll_die("cannot allocate buffer");
    memset(p, 0, n); /* first touch of a page costs 2-4 us here: never inside a timed region */
    return p;
}

int coll_parse(int argc, char **argv, coll_opts *o, const char *usage_sizes) {
    int opt, ok = 1;
    char *sizes = NULL, *kinds = NULL;
    memset(o, 0, sizeof *o);
    o->samples = 7;
    o->target_s = 0.030;
    o->retries = 2;
    o->min_share = 0.95;
    o->max_pairs = 100;
    o->tol = 0.02;
    while ((opt = getopt(argc, argv, "s:n:m:r:q:k:AN:e:")) != -1) {
        switch (opt) {
        case 's': sizes = optarg; break;
        case 'n': o->samples = atoi(optarg); break;
        case 'm': o->target_s = atof(optarg) * 1e-3; break;
        case 'r': o->retries = atoi(optarg); break;
        case 'q': o->min_share = atof(optarg); break;
        case 'k': kinds = optarg; break;
        case 'A': o->ab = 1; break;
        case 'N': o->max_pairs = atoi(optarg); break;
        case 'e': o->tol = atof(optarg); break;
        default: ok = 0; break;
        }
    }
    for (char *tok = sizes ? strtok(sizes, ",") : NULL; tok && o->nsizes < COLL_MAX_ITEMS; tok = strtok(NULL, ","))
        o->sizes[o->nsizes++] = atol(tok);
    for (char *tok = kinds ? strtok(kinds, ",") : NULL; tok; tok = strtok(NULL, ",")) {
        if (strcmp(tok, "dt") == 0) o->want_dt = 1;
        else if (strcmp(tok, "contig") == 0) o->want_contig = 1;
        else ok = 0;
    }
    if (!kinds) o->want_dt = o->want_contig = 1;
    for (int i = 0; i < o->nsizes; i++) ok &= o->sizes[i] > 0;
    if (o->max_pairs < o->samples) o->max_pairs = o->samples;
    if (!ok || o->nsizes == 0 || o->samples < 1 || o->target_s <= 0 || o->retries < 0 || o->tol <= 0) {
        if (g_rank == 0)
            fprintf(stderr, "usage: %s -s %s [-n samples (7)] [-m ms_per_sample (30)] [-r retries (2)]"
                            " [-q min_cpu_share (0.95)] [-k dt,contig] [-A [-N max_pairs (100)] [-e tol (0.02)]]\n",
                    argv[0], usage_sizes);
        return -1;
    }
    return 0;
}

void coll_print_shim(void) {
    if (g_rank == 0) printf("shim %d\n", dlsym(RTLD_DEFAULT, "sluice_version_string") != NULL);
}

/* Seconds per operation of `iters` operations (the slowest rank's) and the smallest CPU share. */
static double time_case(coll_case *c, long iters, double *share) {
    double t[2], r[2];
    coll_check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    double t0 = now_s(), c0 = cpu_s();
    c->op(c->ctx, iters);
    double t1 = now_s(), c1 = cpu_s();
    t[0] = t1 - t0;
    t[1] = -(c1 - c0) / (t1 - t0 > 0 ? t1 - t0 : 1e-9); /* max of -share = -(min share) */
    coll_check(MPI_Allreduce(t, r, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
    *share = -r[1];
    return r[0] / (double)iters;
}

/* Untimed runs of 1, 4, 16, ... operations until one lasts >= target/8; every rank gets the same
 * times (reduced), so every rank picks the same count. */
static void calibrate(coll_case *c, double target) {
    double share, per_op;
    long n = 1;
    for (;;) {
        per_op = time_case(c, n, &share);
        if (per_op * (double)n >= target / 8 || n >= (1L << 24)) break;
        n *= 4;
    }
    long iters = (long)(target / per_op + 0.5);
    c->iters = iters < 1 ? 1 : iters;
}

/* One A/B pair of a case: a trial through PMPI_* (bare) and one through MPI_* (sluice), sluice
 * first when `sluice_first`, each after an untimed eighth of its operations (when >= 8); repeated
 * when a rank was descheduled. Prints the "ab" line; returns the speed-up bare / sluice, or -1
 * when even the last repeat was unclean. Every rank gets the same times, so the same result. */
static double ab_pair(coll_case *c, int sluice_first, const coll_opts *o) {
    double t[2], share = 0;
    for (int a = 0; a <= o->retries; a++) {
        share = 1;
        for (int j = 0; j < 2; j++) {
            double sh;
            g_bare = (j == 0) != (sluice_first != 0);
            if (c->iters >= 8) c->op(c->ctx, c->iters / 8);
            t[g_bare ? 0 : 1] = time_case(c, c->iters, &sh);
            if (sh < share) share = sh;
        }
        g_bare = 0;
        if (g_rank == 0) printf("ab %s %ld %.9f %.9f %.3f\n", c->name, c->size, t[0], t[1], share);
        if (share >= o->min_share) break;
    }
    return share >= o->min_share ? t[0] / t[1] : -1;
}

/* The A/B passes: each adds a batch of pairs to every case whose interval is still wider than
 * +-tol (relative to the median), until at least `samples` and at most `max_pairs` clean pairs;
 * a case that keeps getting unclean pairs stops after 3 * max_pairs. */
static void ab_run(coll_case *cases, int ncases, const coll_opts *o) {
    const int batch = 4;
    int cap = o->max_pairs + batch;
    double *r = calloc((size_t)ncases * (size_t)cap, sizeof(double)), *tmp = malloc(sizeof(double) * (size_t)cap);
    int *n = calloc((size_t)ncases, sizeof(int)), *tries = calloc((size_t)ncases, sizeof(int));
    int *done = calloc((size_t)ncases, sizeof(int));
    if (!r || !tmp || !n || !tries || !done) coll_die("malloc");
    for (int pass = 0, left = ncases; left > 0; pass++) {
        for (int i = 0; i < ncases; i++) {
            if (done[i]) continue;
            double *ri = r + (size_t)i * (size_t)cap, lo, hi, med;
            for (int b = 0; b < batch; b++, tries[i]++) {
                double s = ab_pair(&cases[i], (pass + i + b) % 2, o);
                if (s > 0) ri[n[i]++] = s;
            }
            int stop = tries[i] >= 3 * o->max_pairs || n[i] >= o->max_pairs;
            if (!stop && n[i] >= o->samples) {
                memcpy(tmp, ri, sizeof(double) * (size_t)n[i]);
                med = ab_median_ci(tmp, n[i], &lo, &hi);
                stop = (hi - lo) / 2 <= o->tol * med;
            }
            if (stop) {
                done[i] = 1;
                left--;
            }
        }
        if (g_rank == 0) fflush(stdout);
    }
    for (int i = 0; g_rank == 0 && i < ncases; i++) {
        double lo = 0, hi = 0, med = n[i] ? ab_median_ci(r + (size_t)i * (size_t)cap, n[i], &lo, &hi) : 0;
        printf("abci %s %ld %d %.5f %.5f %.5f\n", cases[i].name, cases[i].size, n[i], med, lo, hi);
    }
    free(r);
    free(tmp);
    free(n);
    free(tries);
    free(done);
}

void coll_run(coll_case *cases, int ncases, const coll_opts *o) {
    for (int i = 0; i < ncases; i++) {
        calibrate(&cases[i], o->target_s);
        if (g_rank == 0)
            printf("case %s %ld %.0f %ld\n", cases[i].name, cases[i].size, cases[i].bytes, cases[i].iters);
    }
    if (g_rank == 0) fflush(stdout);
    if (o->ab) {
        ab_run(cases, ncases, o);
        return;
    }
    for (int k = 0; k < o->samples; k++) {
        for (int i = 0; i < ncases; i++) {
            coll_case *c = &cases[i];
            for (int a = 0; a <= o->retries; a++) {
                double share, per_op = time_case(c, c->iters, &share);
                if (g_rank == 0) printf("sample %s %ld %d %.9f %.3f\n", c->name, c->size, k, per_op, share);
                if (share >= o->min_share) break; /* every rank has the same share: same decision */
            }
        }
        if (g_rank == 0) fflush(stdout);
    }
}
