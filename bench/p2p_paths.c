/*
 * p2p_paths.c - is sluice's automatic choice of a point-to-point path right in reality?
 *
 * For every case of shared/bench/ddt-suite.md scaled to about each size of -s (default 64 KiB,
 * 1 MiB, 16 MiB of packed data), ranks 0 and 1 ping-pong one message of the case's type on five
 * communicators that differ only in sluice's `sluice_p2p_path` info key: none (the automatic
 * choice) and the four forced alternatives: `mpi` (the MPI's own engine), `staged`,
 * `pipelined` and `arena` (docs/configuration.md). A round times one trial on each, in an
 * order shuffled per round (the same seed on both ranks), so the five see the same moment of
 * the machine and each follows every other about equally often; a trial starts with two
 * untimed round trips. Why both: a path's first messages after another path's run on what
 * that one left in the caches (Open MPI's single copy of face-z at 1 MiB: 1.3-2x its steady
 * time for the first, often 1.1-1.8x for the second and third), and with a rotated order the
 * automatic path always followed `arena` or `pipelined` while `mpi` followed the automatic
 * path, which had chosen the MPI's engine: the automatic path's trial paid the switch and its
 * rival's did not (a 1.045 median ratio between identical paths in 26 jobs). After each
 * round, the automatic choice's time is divided by the best forced alternative's of the same
 * round (the best being the alternative with the lowest median so far); rounds are added
 * until the distribution-free 95% interval of the median ratio is within +-tol, between -n
 * and -N rounds.
 *
 * Output, rank 0, one line per point:
 *   path CASE BYTES t_auto t_mpi t_staged t_pipelined t_arena BEST ratio lo hi rounds
 * times in microseconds per one-way message (medians), ratio = auto / best (> 1: auto slower).
 * Verdict (scripts/plot_paths.py): the target "auto >= 0.95x the best" passes when hi <= 1/0.95.
 * Under the bare MPI the key means nothing and all five are the MPI's own path.
 *
 *   mpirun -np 2 -x LD_PRELOAD=libsluice.so ./p2p_paths [-c CASES] [-s SIZES] [-n min] [-N max]
 *                                                        [-e tol] [-m trial_ms]
 *
 * Scaling: vec-k are vector(B/8k, k, 2k, double); face-x keeps its 256 x 64 planes and takes
 * B/2048 of them; face-y the same with its 64-double rows, with fewer planes between rows
 * when a buffer would pass 1 GiB (16 MiB: 64 instead of 256); face-z is one contiguous plane
 * of a two-plane array; lu-5 vector(B/40, 5, 40, double); milc takes B/98304 hvector
 * elements (at least one, with fewer inner rows); wrf count max(1, B/120 KiB) (the smallest is
 * a 120 KiB element); fft-t a sqrt(B/16)-square transpose; lammps and specfem B/24 and B/12
 * blocks; struct-mix B/17 structs.
 */
#define _GNU_SOURCE
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ab_stats.h"

#define NPATH 5
static const char *PATHS[NPATH] = {"", "mpi", "staged", "pipelined", "arena"};
static const char *LABELS[NPATH] = {"auto", "mpi", "staged", "pipelined", "arena"};
static int g_rank;

static void check(int rc, const char *what) {
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "p2p_paths: %s failed (%d)\n", what, rc);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

static uint64_t g_rng;
static uint64_t next_rand(void) {
    uint64_t z = (g_rng += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static MPI_Datatype commit(MPI_Datatype t) {
    check(MPI_Type_commit(&t), "MPI_Type_commit");
    return t;
}

/* The case's type scaled to about `b` packed bytes, and its count. */
static MPI_Datatype build(const char *c, size_t b, int *count) {
    MPI_Datatype t, u;
    *count = 1;
    int k;
    if (sscanf(c, "vec-%d", &k) == 1) {
        check(MPI_Type_vector((int)(b / 8 / k), k, 2 * k, MPI_DOUBLE, &t), "vector");
        return commit(t);
    }
    if (!strcmp(c, "face-x") || !strcmp(c, "face-y")) {
        int planes = (int)(b / 2048 > 0 ? b / 2048 : 1);
        if (!strcmp(c, "face-x")) {
            int sz[3] = {planes, 256, 64}, sub[3] = {planes, 256, 1}, st[3] = {0, 0, 0};
            check(MPI_Type_create_subarray(3, sz, sub, st, MPI_ORDER_C, MPI_DOUBLE, &t), "subarray");
        } else {
            int mid = 256;
            while ((size_t)planes * 4 * mid * 64 * 8 > ((size_t)1 << 30) && mid > 8) mid /= 2;
            int sz[3] = {planes * 4, mid, 64}, sub[3] = {planes * 4, 1, 64}, st[3] = {0, 0, 0};
            check(MPI_Type_create_subarray(3, sz, sub, st, MPI_ORDER_C, MPI_DOUBLE, &t), "subarray");
        }
        return commit(t);
    }
    if (!strcmp(c, "face-z")) {
        int rows = (int)(b / 512 > 0 ? b / 512 : 1);
        int sz[3] = {2, rows, 64}, sub[3] = {1, rows, 64}, st[3] = {0, 0, 0};
        check(MPI_Type_create_subarray(3, sz, sub, st, MPI_ORDER_C, MPI_DOUBLE, &t), "subarray");
        return commit(t);
    }
    if (!strcmp(c, "lu-5")) {
        check(MPI_Type_vector((int)(b / 40), 5, 40, MPI_DOUBLE, &t), "vector");
        return commit(t);
    }
    if (!strcmp(c, "milc")) {
        int h = (int)(b / 98304), v = 256;
        if (h < 1) h = 1, v = (int)(b / 384);
        check(MPI_Type_contiguous(6, MPI_FLOAT, &u), "contiguous");
        MPI_Datatype vv;
        check(MPI_Type_vector(v, 16, 16 * 16, u, &vv), "vector");
        check(MPI_Type_create_hvector(h, 1, (MPI_Aint)16 * 16 * 16 * 16 * 24, vv, &t), "hvector");
        MPI_Type_free(&u);
        MPI_Type_free(&vv);
        return commit(t);
    }
    if (!strcmp(c, "wrf")) {
        int n = (int)(b / 122880), s0 = 64;
        if (n < 1) n = 1;
        MPI_Datatype m[4];
        int bl[4] = {1, 1, 1, 1};
        MPI_Aint d[4];
        for (int i = 0; i < 4; i++) {
            int sz[3] = {64, 64, 40}, sub[3] = {s0, 3, 40}, st[3] = {0, 0, 0};
            check(MPI_Type_create_subarray(3, sz, sub, st, MPI_ORDER_C, MPI_FLOAT, &m[i]), "subarray");
            d[i] = (MPI_Aint)i * 64 * 64 * 40 * 4;
        }
        check(MPI_Type_create_struct(4, bl, d, m, &t), "struct");
        for (int i = 0; i < 4; i++) MPI_Type_free(&m[i]);
        *count = n;
        return commit(t);
    }
    if (!strcmp(c, "fft-t")) {
        int r = (int)sqrt((double)b / 16);
        check(MPI_Type_vector(r, 1, r, MPI_C_DOUBLE_COMPLEX, &u), "vector");
        check(MPI_Type_create_resized(u, 0, 16, &t), "resized");
        MPI_Type_free(&u);
        *count = r;
        return commit(t);
    }
    if (!strcmp(c, "lammps") || !strcmp(c, "specfem")) {
        int lam = !strcmp(c, "lammps");
        int n = (int)(b / (lam ? 24 : 12));
        int *bl = malloc(sizeof(int) * n), *di = malloc(sizeof(int) * n);
        MPI_Aint *ad = malloc(sizeof(MPI_Aint) * n);
        g_rng = lam ? 0x1a33ec5 : 0x5fec;
        MPI_Aint at = 0;
        for (int i = 0; i < n; i++) {
            bl[i] = 3;
            if (lam) {
                ad[i] = at;
                at += 24 + 8 * (MPI_Aint)(next_rand() % 10); /* gaps 24-96 bytes */
            } else {
                di[i] = (int)at;
                at += 3 + 3 + (MPI_Aint)(next_rand() % 10); /* gaps 3-12 floats */
            }
        }
        if (lam) check(MPI_Type_create_hindexed(n, bl, ad, MPI_DOUBLE, &t), "hindexed");
        else check(MPI_Type_create_indexed_block(n, 3, di, MPI_FLOAT, &t), "indexed_block");
        free(bl), free(di), free(ad);
        return commit(t);
    }
    if (!strcmp(c, "struct-mix")) {
        int bl[3] = {1, 1, 5};
        MPI_Aint d[3] = {0, 8, 16};
        MPI_Datatype ty[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
        check(MPI_Type_create_struct(3, bl, d, ty, &u), "struct");
        check(MPI_Type_create_resized(u, 0, 24, &t), "resized");
        MPI_Type_free(&u);
        *count = (int)(b / 17);
        return commit(t);
    }
    if (g_rank == 0) fprintf(stderr, "p2p_paths: unknown case %s\n", c);
    MPI_Abort(MPI_COMM_WORLD, 2);
    return MPI_DATATYPE_NULL;
}

/* One trial: `iters` round trips after two untimed ones; seconds per one-way message. */
static double trial(MPI_Comm comm, void *sbuf, void *rbuf, int count, MPI_Datatype t, int iters) {
    double t0 = 0;
    for (int i = -2; i < iters; i++) {
        if (i == 0) {
            MPI_Barrier(comm);
            t0 = MPI_Wtime();
        }
        if (g_rank == 0) {
            check(MPI_Send(sbuf, count, t, 1, 5, comm), "MPI_Send");
            check(MPI_Recv(rbuf, count, t, 1, 5, comm, MPI_STATUS_IGNORE), "MPI_Recv");
        } else {
            check(MPI_Recv(rbuf, count, t, 0, 5, comm, MPI_STATUS_IGNORE), "MPI_Recv");
            check(MPI_Send(sbuf, count, t, 0, 5, comm), "MPI_Send");
        }
    }
    double dt = (MPI_Wtime() - t0) / (2.0 * iters);
    MPI_Bcast(&dt, 1, MPI_DOUBLE, 0, comm);
    return dt;
}

static double median_of(const double *v, int n) {
    double *c = malloc(sizeof(double) * n), lo, hi;
    memcpy(c, v, sizeof(double) * n);
    double m = ab_median_ci(c, n, &lo, &hi);
    free(c);
    return m;
}

int main(int argc, char **argv) {
    const char *cases = "vec-1,vec-2,vec-8,vec-64,vec-256,face-x,face-y,face-z,lu-5,milc,wrf,fft-t,lammps,specfem,struct-mix";
    const char *sizes = "65536,1048576,16777216";
    int nmin = 9, nmax = 61, opt;
    double tol = 0.02, trial_ms = 10;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    while ((opt = getopt(argc, argv, "c:s:n:N:e:m:")) != -1) {
        switch (opt) {
        case 'c': cases = optarg; break;
        case 's': sizes = optarg; break;
        case 'n': nmin = atoi(optarg); break;
        case 'N': nmax = atoi(optarg); break;
        case 'e': tol = atof(optarg); break;
        case 'm': trial_ms = atof(optarg); break;
        default:
            if (g_rank == 0) fprintf(stderr, "usage: p2p_paths [-c CASES] [-s SIZES] [-n min] [-N max] [-e tol] [-m ms]\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (g_rank == 0) fprintf(stderr, "p2p_paths: run on 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm comms[NPATH];
    for (int p = 0; p < NPATH; p++) {
        MPI_Info info;
        MPI_Info_create(&info);
        if (*PATHS[p]) MPI_Info_set(info, "sluice_p2p_path", PATHS[p]);
        check(MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &comms[p]), "MPI_Comm_dup_with_info");
        MPI_Info_free(&info);
    }
    if (g_rank == 0) printf("# p2p_paths: case bytes t_auto t_mpi t_staged t_pipelined t_arena best ratio lo hi rounds (us)\n");
    char *cl = strdup(cases), *save1 = NULL;
    for (char *c = strtok_r(cl, ",", &save1); c; c = strtok_r(NULL, ",", &save1)) {
        char *sl = strdup(sizes), *save2 = NULL;
        for (char *s = strtok_r(sl, ",", &save2); s; s = strtok_r(NULL, ",", &save2)) {
            int count;
            MPI_Datatype t = build(c, (size_t)atol(s), &count);
            int tsize;
            MPI_Aint lb, ext, tlb, text;
            MPI_Type_size(t, &tsize);
            MPI_Type_get_extent(t, &lb, &ext);
            MPI_Type_get_true_extent(t, &tlb, &text);
            size_t span = (size_t)(tlb + (MPI_Aint)(count - 1) * ext + text);
            char *sb = malloc(span), *rb = malloc(span);
            memset(sb, g_rank + 1, span), memset(rb, 0, span); /* pre-fault */
            long bytes = (long)tsize * count;
            /* iterations per trial from a warm-up on the automatic path */
            double one = 0;
            for (int p = 0; p < NPATH; p++) one = trial(comms[p], sb, rb, count, t, 2);
            one = trial(comms[0], sb, rb, count, t, 3);
            int iters = (int)(trial_ms * 1e-3 / (2 * one));
            if (iters < 1) iters = 1;
            if (iters > 2000) iters = 2000;
            double *tm[NPATH], *ratio = malloc(sizeof(double) * nmax);
            for (int p = 0; p < NPATH; p++) tm[p] = malloc(sizeof(double) * nmax);
            int n = 0, best = 1;
            double med = 0, lo = 0, hi = 0;
            uint64_t order_rng = 0x0dde5eedULL; /* the same shuffles on both ranks */
            while (n < nmax) {
                int order[NPATH];
                for (int k = 0; k < NPATH; k++) order[k] = k;
                for (int k = NPATH - 1; k > 0; k--) {
                    uint64_t z = (order_rng += 0x9E3779B97F4A7C15ULL);
                    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
                    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
                    int j = (int)((z ^ (z >> 31)) % (uint64_t)(k + 1)), tmp = order[k];
                    order[k] = order[j], order[j] = tmp;
                }
                for (int k = 0; k < NPATH; k++) {
                    int p = order[k];
                    tm[p][n] = trial(comms[p], sb, rb, count, t, iters);
                }
                n++;
                best = 1;
                for (int p = 2; p < NPATH; p++)
                    if (median_of(tm[p], n) < median_of(tm[best], n)) best = p;
                for (int i = 0; i < n; i++) ratio[i] = tm[0][i] / tm[best][i];
                med = ab_median_ci(ratio, n, &lo, &hi);
                if (n >= nmin && hi - med <= tol * med && med - lo <= tol * med) break;
            }
            if (g_rank == 0) {
                printf("path %s %ld", c, bytes);
                for (int p = 0; p < NPATH; p++) printf(" %.2f", 1e6 * median_of(tm[p], n));
                printf(" %s %.4f %.4f %.4f %d\n", LABELS[best], med, lo, hi, n);
                fflush(stdout);
            }
            for (int p = 0; p < NPATH; p++) free(tm[p]);
            free(ratio), free(sb), free(rb);
            MPI_Type_free(&t);
        }
        free(sl);
    }
    free(cl);
    for (int p = 0; p < NPATH; p++) MPI_Comm_free(&comms[p]);
    MPI_Finalize();
    return 0;
}
