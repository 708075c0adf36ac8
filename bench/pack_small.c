/*
 * pack_small.c - the cost of one MPI_Pack / MPI_Unpack of a small message: sluice (MPI_Pack,
 * preloaded libsluice.so) against the MPI's own engine (PMPI_Pack, which bypasses sluice) in one
 * process, paired round by round (scripts/bench-pack-small.sh runs it for both MPIs).
 *
 *   pack_small [ROUNDS [CALLS]]     (defaults 300 rounds of 2000 calls per operation)
 *
 * The ddt suite (sluice-ddt-bench) times the engine on 100 KiB-32 MiB messages, where the
 * per-call cost vanishes; applications that pack one particle or one small halo row per call
 * pay it on every call. Each round times CALLS back-to-back calls of each of the four operations
 * (sluice pack, MPI pack, sluice unpack, MPI unpack), the order of sluice and MPI alternating
 * between rounds; the round's ratio is MPI time / sluice time (> 1: sluice faster). Printed per
 * case and direction: the best and median ns per call of both, and the median ratio with its 95%
 * interval ("abci" lines, bench/ab_stats.h). Buffers are written before timing and stay in L1.
 * Then the life of a type, as applications that make one per message live it (BLACS builds,
 * commits and frees one for every submatrix it sends): construct + commit + free, through sluice
 * (MPI_Type_*) and past it (PMPI_Type_*), CALLS/4 lives per round, printed as direction "commit".
 * Prints "shim 1" when libsluice.so is loaded.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ab_stats.h"

#define BUF (1 << 16)
static unsigned char src[BUF], dst[BUF], packed[BUF], ref[BUF];

typedef struct {
    const char *name;
    MPI_Datatype t;
    int count;
    int shared; /* the previous case's type: committed and freed once */
} pcase;

static double now(void) { return MPI_Wtime(); }

/* ns per call of `calls` calls: dir 0 packs, 1 unpacks; mpi 1 calls the MPI's engine. */
static double run(const pcase *c, int dir, int mpi, int calls) {
    double t0 = now();
    for (int i = 0; i < calls; i++) {
        int pos = 0;
        if (dir == 0) {
            if (mpi) PMPI_Pack(src, c->count, c->t, packed, BUF, &pos, MPI_COMM_WORLD);
            else MPI_Pack(src, c->count, c->t, packed, BUF, &pos, MPI_COMM_WORLD);
        } else {
            if (mpi) PMPI_Unpack(ref, BUF, &pos, dst, c->count, c->t, MPI_COMM_WORLD);
            else MPI_Unpack(ref, BUF, &pos, dst, c->count, c->t, MPI_COMM_WORLD);
        }
    }
    return (now() - t0) / calls * 1e9;
}

/* A type's whole life as an application that makes one per message lives it (BLACS builds,
 * commits and frees a vector type for every submatrix it sends): construct, commit, free. */
typedef struct {
    const char *name;
    int kind; /* 0 vector, 1 indexed + resized, 2 struct, 3 subarray, 4 vector of 8-byte blocks */
    int held; /* other types kept committed meanwhile */
} lcase;

static void make(int kind, int i, int mpi, MPI_Datatype *t) {
    MPI_Datatype tmp;
    switch (kind) {
    case 0: /* an 8 x 3 submatrix of doubles in a column-major matrix of leading dimension 100 */
        if (mpi) PMPI_Type_vector(3, 8 + (i & 1), 100, MPI_DOUBLE, t);
        else MPI_Type_vector(3, 8 + (i & 1), 100, MPI_DOUBLE, t);
        break;
    case 1: {
        int bl[2] = {2, 3}, d[2] = {0, 40};
        if (mpi) { PMPI_Type_indexed(2, bl, d, MPI_DOUBLE_COMPLEX, &tmp); PMPI_Type_create_resized(tmp, 0, 8000, t); PMPI_Type_free(&tmp); }
        else { MPI_Type_indexed(2, bl, d, MPI_DOUBLE_COMPLEX, &tmp); MPI_Type_create_resized(tmp, 0, 8000, t); MPI_Type_free(&tmp); }
        break;
    }
    case 4: /* 3 single doubles, stride 100: a type sluice's engine serves (8-byte blocks) */
        if (mpi) PMPI_Type_vector(3, 1, 100, MPI_DOUBLE, t);
        else MPI_Type_vector(3, 1, 100, MPI_DOUBLE, t);
        break;
    case 2: {
        int bl[3] = {1, 1, 5};
        MPI_Aint d[3] = {0, 8, 16};
        MPI_Datatype ty[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
        if (mpi) PMPI_Type_create_struct(3, bl, d, ty, t);
        else MPI_Type_create_struct(3, bl, d, ty, t);
        break;
    }
    default: {
        int sz[3] = {16, 16, 16}, sub[3] = {16, 1, 16}, st[3] = {0, i & 7, 0};
        if (mpi) PMPI_Type_create_subarray(3, sz, sub, st, MPI_ORDER_C, MPI_DOUBLE, t);
        else MPI_Type_create_subarray(3, sz, sub, st, MPI_ORDER_C, MPI_DOUBLE, t);
    }
    }
}

/* ns per construct + commit + free of `calls` types of kind `kind`; mpi 1 bypasses sluice. */
static double run_life(int kind, int mpi, int calls) {
    double t0 = now();
    for (int i = 0; i < calls; i++) {
        MPI_Datatype t;
        make(kind, i, mpi, &t);
        if (mpi) { PMPI_Type_commit(&t); PMPI_Type_free(&t); }
        else { MPI_Type_commit(&t); MPI_Type_free(&t); }
    }
    return (now() - t0) / calls * 1e9;
}

static double minimum(const double *v, int n) {
    double m = v[0];
    for (int i = 1; i < n; i++) m = v[i] < m ? v[i] : m;
    return m;
}

static double median(const double *v, int n) {
    double *c = malloc(sizeof *c * (size_t)n), lo, hi;
    memcpy(c, v, sizeof *c * (size_t)n);
    double m = ab_median_ci(c, n, &lo, &hi);
    free(c);
    return m;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rounds = argc > 1 ? atoi(argv[1]) : 300, calls = argc > 2 ? atoi(argv[2]) : 2000;
    if (rounds < 10 || calls < 1) {
        fprintf(stderr, "usage: pack_small [ROUNDS>=10 [CALLS]]\n");
        return 2;
    }
    printf("shim %d\n", dlsym(RTLD_DEFAULT, "sluice_is_enabled") != NULL);
    for (int i = 0; i < BUF; i++) src[i] = (unsigned char)(i * 7 + 1);

    pcase cs[16] = {0};
    int n = 0;
    MPI_Datatype tmp;
    MPI_Type_contiguous(8, MPI_DOUBLE, &cs[n].t); cs[n].name = "contig-64B"; cs[n++].count = 1;
    MPI_Type_vector(1, 1, 2, MPI_DOUBLE, &cs[n].t); cs[n].name = "vec-1x8B"; cs[n++].count = 1;
    MPI_Type_vector(8, 1, 2, MPI_DOUBLE, &cs[n].t); cs[n].name = "vec-8x8B"; cs[n++].count = 1;
    MPI_Type_vector(64, 1, 2, MPI_DOUBLE, &cs[n].t); cs[n].name = "vec-64x8B"; cs[n++].count = 1;
    MPI_Type_vector(512, 1, 2, MPI_DOUBLE, &cs[n].t); cs[n].name = "vec-512x8B"; cs[n++].count = 1;
    MPI_Type_vector(4, 1, 2, MPI_DOUBLE, &cs[n].t); cs[n].name = "vec-4x8B*16"; cs[n++].count = 16;
    { int d[16]; for (int i = 0; i < 16; i++) d[i] = i * 5 + (i % 3);
      MPI_Type_create_indexed_block(16, 3, d, MPI_FLOAT, &cs[n].t); cs[n].name = "idxblock-16x12B"; cs[n++].count = 1; }
    { int bl[3] = {1, 1, 5}; MPI_Aint d[3] = {0, 8, 16}; MPI_Datatype ty[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
      MPI_Type_create_struct(3, bl, d, ty, &tmp); MPI_Type_create_resized(tmp, 0, 24, &cs[n].t); MPI_Type_free(&tmp);
      cs[n].name = "struct-17B"; cs[n++].count = 1; }
    cs[n] = cs[n - 1]; cs[n].name = "struct-17B*32"; cs[n].count = 32; cs[n++].shared = 1;
    { int sz[3] = {16, 16, 16}, sub[3] = {16, 1, 16}, st[3] = {0, 0, 0};
      MPI_Type_create_subarray(3, sz, sub, st, MPI_ORDER_C, MPI_DOUBLE, &cs[n].t); cs[n].name = "face-y-16^3"; cs[n++].count = 1; }
    for (int i = 0; i < n; i++)
        if (!cs[i].shared) MPI_Type_commit(&cs[i].t);

    printf("# case, dir, bytes: sluice best/median ns, MPI best/median ns, MPI/sluice median [95%%]\n");
    double *ts = malloc(sizeof(double) * (size_t)rounds), *tm = malloc(sizeof(double) * (size_t)rounds),
           *r = malloc(sizeof(double) * (size_t)rounds);
    for (int i = 0; i < n; i++) {
        pcase *c = &cs[i];
        int size = 0, pos = 0;
        MPI_Pack_size(c->count, c->t, MPI_COMM_WORLD, &size);
        /* Same bytes from both engines before anything is timed. */
        memset(packed, 0, BUF); memset(ref, 1, BUF);
        MPI_Pack(src, c->count, c->t, packed, BUF, &pos, MPI_COMM_WORLD);
        pos = 0;
        PMPI_Pack(src, c->count, c->t, ref, BUF, &pos, MPI_COMM_WORLD);
        if (memcmp(packed, ref, (size_t)size) != 0) {
            fprintf(stderr, "pack_small: %s: sluice's packed bytes differ from PMPI_Pack's\n", c->name);
            return 1;
        }
        for (int dir = 0; dir < 2; dir++) {
            run(c, dir, 0, calls); /* warm up both */
            run(c, dir, 1, calls);
            for (int k = 0; k < rounds; k++) {
                if (k % 2 == 0) { ts[k] = run(c, dir, 0, calls); tm[k] = run(c, dir, 1, calls); }
                else { tm[k] = run(c, dir, 1, calls); ts[k] = run(c, dir, 0, calls); }
                r[k] = tm[k] / ts[k];
            }
            double lo, hi, med = ab_median_ci(r, rounds, &lo, &hi);
            printf("abci %s %s %d %.1f %.1f %.1f %.1f %.3f %.3f %.3f\n", c->name, dir ? "unpack" : "pack", size,
                   minimum(ts, rounds), median(ts, rounds), minimum(tm, rounds), median(tm, rounds), med, lo, hi);
            fflush(stdout);
        }
    }
    /* Lives of types, paired the same way ("commit": construct + commit + free). */
    /* The last two: the same vector with no other type committed, and with 10,000 (codes that
     * keep a type per neighbour, field or block hold thousands). */
    const lcase ls[] = {{"life-vec-8x3", 0, 0},        {"life-indexed-resized", 1, 0}, {"life-struct-3", 2, 0},
                        {"life-subarray-3d", 3, 0},    {"life-vec-1x3", 4, 0},         {"life-vec-1x3-held-10k", 4, 10000}};
    for (size_t i = 0; i < sizeof ls / sizeof ls[0]; i++) {
        MPI_Datatype t, *held = malloc(sizeof(MPI_Datatype) * (size_t)(ls[i].held + 1));
        for (int h = 0; h < ls[i].held; h++) {
            MPI_Type_vector(2 + h % 50, 1, 3 + h % 7, MPI_DOUBLE, &held[h]);
            MPI_Type_commit(&held[h]);
        }
        int size = 0;
        make(ls[i].kind, 0, 1, &t);
        PMPI_Type_size(t, &size);
        PMPI_Type_free(&t);
        int lcalls = calls / 4 > 0 ? calls / 4 : 1;
        run_life(ls[i].kind, 0, lcalls); /* warm up both */
        run_life(ls[i].kind, 1, lcalls);
        for (int k = 0; k < rounds; k++) {
            if (k % 2 == 0) { ts[k] = run_life(ls[i].kind, 0, lcalls); tm[k] = run_life(ls[i].kind, 1, lcalls); }
            else { tm[k] = run_life(ls[i].kind, 1, lcalls); ts[k] = run_life(ls[i].kind, 0, lcalls); }
            r[k] = tm[k] / ts[k];
        }
        double lo, hi, med = ab_median_ci(r, rounds, &lo, &hi);
        printf("abci %s commit %d %.1f %.1f %.1f %.1f %.3f %.3f %.3f\n", ls[i].name, size, minimum(ts, rounds), median(ts, rounds),
               minimum(tm, rounds), median(tm, rounds), med, lo, hi);
        fflush(stdout);
        for (int h = 0; h < ls[i].held; h++) MPI_Type_free(&held[h]);
        free(held);
    }
    for (int i = 0; i < n; i++)
        if (!cs[i].shared) MPI_Type_free(&cs[i].t);
    free(ts); free(tm); free(r);
    MPI_Finalize();
    return 0;
}
