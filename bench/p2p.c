/*
 * p2p.c - point-to-point latency and bandwidth with contiguous and derived datatypes.
 *
 * Built with each MPI's compiler wrapper by scripts/bench-p2p.sh and run at 2 ranks, bare and
 * with libsluice.so preloaded. Both ranks use the same datatype (the sender packs, the receiver
 * unpacks). One process run measures a list of types and message sizes; rank 0 prints:
 *
 *   shim <0|1>                              whether sluice's symbols are in the process
 *   point <type> <bytes> <count> <span> <window> <lat_iters> <bw_windows>
 *                                           one line per (type, size) before its trials
 *   verify <type> <bytes> ok <paths>        the payload arrived intact (see below)
 *   lat <type> <bytes> <trial> <us> <cpu>   ping-pong half round trip (MPI_Send / MPI_Recv)
 *   bw <type> <bytes> <trial> <GB/s> <cpu>  window of MPI_Isend / MPI_Irecv + MPI_Waitall, then a
 *                                           4-byte ack from the receiver; GB = 1e9 packed bytes
 *
 * <cpu> is the smaller of the two ranks' CPU share during the trial (thread CPU time / wall time).
 * Both MPIs busy-poll, so it is about 1.0 unless a rank was descheduled by other work on the
 * machine: a trial with a low share measured the machine's load, not the MPI. Such a trial
 * (share < min_cpu_share, default 0.95) is printed and then repeated, up to `retries` (2) times.
 *
 * <bytes> is the packed message size (MPI_Type_size x count), which is what GB/s counts.
 *
 * Types (-t, comma-separated):
 *   contig            MPI_CHAR x bytes
 *   vect:<S>:<B>      MPI_Type_vector(bytes / B, B, S, MPI_CHAR), count 1: blocks of B bytes at a
 *                     stride of S bytes (sizes that are not a multiple of B, or below B, are skipped)
 *   face-x, lammps, struct-mix
 *                     cases of shared/bench/ddt-suite.md at their natural size (-s is ignored):
 *                     face-x 512 KiB, lammps 768 KiB, struct-mix 2176 KiB packed
 *
 * Correctness, before anything of a (type, size) is timed: the sender fills its whole buffer
 * (data and gaps) with a position- and seed-dependent byte pattern, the receiver fills its buffer
 * with a sentinel; after the transfer every data byte must hold the pattern of its offset, every
 * gap byte the sentinel, and MPI_Get_count(status, type) must equal the count sent. The layout
 * used for this check is computed here, independently of any MPI or sluice datatype engine.
 * Always checked: MPI_Send/MPI_Recv in both directions. With -V also the windowed
 * MPI_Isend/MPI_Irecv path with every message of the window. A failure aborts the job.
 *
 * Timing: one send buffer and one receive arena, sized for the largest point and pre-faulted at
 * allocation, serve every point. Pass 0 verifies each (type, size) point and calibrates each
 * metric by untimed runs of 1, 4, 16, ... iterations (which are also the warm-up) until one takes
 * >= 1/8 of the target; a trial then runs target_ms worth of iterations (at least one). Rank 0
 * decides and broadcasts the iteration counts. Then `trials` passes each time every point once
 * (after an untimed 1/16 of its iterations), so one point's trials are spread over the whole run
 * instead of sharing one noisy moment. The receive window is min(window, cap / span) messages
 * into distinct page-aligned buffers of the arena (no two outstanding receives share memory);
 * the sender sends the window from one buffer.
 *
 * A/B mode (-A, for a process with libsluice.so preloaded): every trial is a pair, one trial
 * through the PMPI_* entry points (which reach the MPI directly: the bare MPI's own code for the
 * call) and one through the MPI_* ones (sluice's interception), back to back on both ranks, the
 * order alternating. Separate bare and preloaded processes (the default) see the machine's speed
 * drift between runs, which on a shared VM is larger than the few ns a pass-through call costs; a
 * pair sees the same moment. Rank 0 prints instead of lat/bw lines:
 *   ab <lat|bw> <type> <bytes> <pmpi> <mpi> <cpu>   (us or GB/s, as above; <cpu> of both trials)
 * What it cannot show is an effect of sluice on the MPI outside the calls (its set-up in MPI_Init);
 * the default mode covers that.
 *
 * Usage: p2p -t TYPES -s SIZES [-n trials (3)] [-m target_ms (20)] [-w window (64)]
 *            [-c cap_MiB (64)] [-r retries (2)] [-q min_cpu_share (0.95)] [-V] [-A]
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ab_stats.h"

#define SENTINEL 0xA5u
#define PAGE 4096u
#define MAX_ITEMS 64

static int g_rank;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(const char *msg) {
    fprintf(stderr, "p2p r%d: %s\n", g_rank, msg);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
    exit(3);
}

static void check(int rc, const char *what) {
    if (rc != MPI_SUCCESS) {
        char m[256];
        snprintf(m, sizeof m, "%s failed (%d)", what, rc);
        die(m);
    }
}

/* CPU time of the calling thread: below the wall time when the thread was descheduled. */
static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Share of the last measured interval that this thread was on a CPU (set by pingpong/bandwidth). */
static double g_share = 1.0;

static size_t round_page(size_t n) { return (n + PAGE - 1) / PAGE * PAGE; }

static unsigned char *xalloc(size_t n) {
    void *p = NULL;
    if (n == 0) n = PAGE;
    if (posix_memalign(&p, PAGE, round_page(n)) != 0) die("cannot allocate buffer");
    memset(p, SENTINEL, round_page(n)); /* first touch outside the timed region */
    return p;
}

/* ---------------------------------------------------------------------------------------------
 * Types and their layouts. A layout is a list of (offset, length) blocks in increasing offset
 * order, computed here independently of the MPI; `span` is the buffer size the type touches
 * (for face-x the whole subarray's extent).
 */
enum kind { K_CONTIG, K_VECT, K_FACEX, K_LAMMPS, K_STRUCTMIX };

typedef struct {
    char name[32];
    enum kind kind;
    long stride, block; /* K_VECT */
} tspec;

typedef struct {
    MPI_Datatype dt;
    int count;
    size_t bytes; /* packed bytes of count elements */
    size_t span;  /* bytes of memory from the buffer start that the type may touch */
} msgtype;

#define LAMMPS_N (1 << 15)
static MPI_Aint g_lammps_off[LAMMPS_N];

/* splitmix64 with the seed of src/bin/sluice-ddt-bench.rs, so lammps is the same type there. */
static uint64_t g_rng;
static uint64_t rng_next(void) {
    g_rng += 0x9e3779b97f4a7c15ull;
    uint64_t z = g_rng;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static long rng_range(long lo, long hi) { return lo + (long)(rng_next() % (uint64_t)(hi - lo)); }

static void init_lammps(void) {
    g_rng = 0x0dd75eedull;
    MPI_Aint at = 0;
    for (int i = 0; i < LAMMPS_N; i++) {
        g_lammps_off[i] = at;
        at += 24 + rng_range(24, 97);
    }
}

static int parse_type(const char *s, tspec *t) {
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", s);
    if (strcmp(s, "contig") == 0) t->kind = K_CONTIG;
    else if (strcmp(s, "face-x") == 0) t->kind = K_FACEX;
    else if (strcmp(s, "lammps") == 0) t->kind = K_LAMMPS;
    else if (strcmp(s, "struct-mix") == 0) t->kind = K_STRUCTMIX;
    else if (sscanf(s, "vect:%ld:%ld", &t->stride, &t->block) == 2 && t->block > 0 && t->stride >= t->block)
        t->kind = K_VECT;
    else return -1;
    return 0;
}

static int natural_size(const tspec *t) { return t->kind == K_FACEX || t->kind == K_LAMMPS || t->kind == K_STRUCTMIX; }

/* Whether `bytes` is a valid message size for the type (suite types: only their natural size). */
static int size_ok(const tspec *t, size_t bytes) {
    if (t->kind == K_VECT) return bytes >= (size_t)t->block && bytes % (size_t)t->block == 0;
    return t->kind == K_CONTIG ? bytes > 0 : 1;
}

/* Calls fn(off, len) for every block of the layout in increasing offset order. */
typedef void (*block_fn)(size_t off, size_t len, void *ctx);
static void for_blocks(const tspec *t, size_t bytes, block_fn fn, void *ctx) {
    switch (t->kind) {
    case K_CONTIG:
        fn(0, bytes, ctx);
        break;
    case K_VECT:
        for (size_t i = 0; i < bytes / (size_t)t->block; i++) fn(i * (size_t)t->stride, (size_t)t->block, ctx);
        break;
    case K_FACEX: /* {256,256,64} doubles, C order, sub {256,256,1} at 0: element (i,j,0) */
        for (size_t i = 0; i < 256 * 256; i++) fn(i * 64 * 8, 8, ctx);
        break;
    case K_LAMMPS:
        for (int i = 0; i < LAMMPS_N; i++) fn((size_t)g_lammps_off[i], 24, ctx);
        break;
    case K_STRUCTMIX: /* struct {int; double; char[5]}, extent 24, count 1<<17 */
        for (size_t e = 0; e < (1u << 17); e++) {
            fn(e * 24, 4, ctx);
            fn(e * 24 + 8, 8, ctx);
            fn(e * 24 + 16, 5, ctx);
        }
        break;
    }
}

struct layout_sum { size_t n, end; };
static void sum_block(size_t off, size_t len, void *c) {
    struct layout_sum *a = c;
    a->n += len;
    if (off + len > a->end) a->end = off + len;
}

static void build(const tspec *t, size_t bytes, msgtype *m) {
    MPI_Datatype d = MPI_DATATYPE_NULL;
    m->count = 1;
    switch (t->kind) {
    case K_CONTIG:
        d = MPI_CHAR;
        m->count = (int)bytes;
        m->span = bytes;
        break;
    case K_VECT: {
        long n = (long)(bytes / (size_t)t->block);
        check(MPI_Type_vector((int)n, (int)t->block, (int)t->stride, MPI_CHAR, &d), "MPI_Type_vector");
        m->span = (size_t)((n - 1) * t->stride + t->block);
        break;
    }
    case K_FACEX: {
        int sizes[3] = {256, 256, 64}, subs[3] = {256, 256, 1}, starts[3] = {0, 0, 0};
        check(MPI_Type_create_subarray(3, sizes, subs, starts, MPI_ORDER_C, MPI_DOUBLE, &d), "MPI_Type_create_subarray");
        m->span = (size_t)256 * 256 * 64 * 8;
        break;
    }
    case K_LAMMPS: {
        static int bls[LAMMPS_N];
        for (int i = 0; i < LAMMPS_N; i++) bls[i] = 3;
        check(MPI_Type_create_hindexed(LAMMPS_N, bls, g_lammps_off, MPI_DOUBLE, &d), "MPI_Type_create_hindexed");
        m->span = (size_t)g_lammps_off[LAMMPS_N - 1] + 24;
        break;
    }
    case K_STRUCTMIX: {
        int bl[3] = {1, 1, 5};
        MPI_Aint disp[3] = {0, 8, 16};
        MPI_Datatype ty[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR}, s;
        check(MPI_Type_create_struct(3, bl, disp, ty, &s), "MPI_Type_create_struct");
        check(MPI_Type_create_resized(s, 0, 24, &d), "MPI_Type_create_resized");
        check(MPI_Type_free(&s), "MPI_Type_free");
        m->count = 1 << 17;
        m->span = (size_t)24 << 17;
        break;
    }
    }
    if (t->kind != K_CONTIG) check(MPI_Type_commit(&d), "MPI_Type_commit");
    m->dt = d;
    int tsize = 0;
    check(MPI_Type_size(d, &tsize), "MPI_Type_size");
    m->bytes = (size_t)tsize * (size_t)m->count;
    if (!natural_size(t) && m->bytes != bytes) die("MPI_Type_size disagrees with the requested size");
    /* the independent layout must describe the same number of bytes */
    struct layout_sum acc = {0, 0};
    for_blocks(t, bytes, sum_block, &acc);
    if (acc.n != m->bytes || acc.end > m->span) die("layout table disagrees with the MPI type");
}

static void release(const tspec *t, msgtype *m) {
    if (t->kind != K_CONTIG) check(MPI_Type_free(&m->dt), "MPI_Type_free");
}

/* ---------------------------------------------------------------------------------------------
 * Payload check.
 */
static inline unsigned char pattern(size_t i, unsigned seed) {
    return (unsigned char)(((i ^ (i >> 8) ^ (i >> 16)) * 31u + seed * 97u + 1u) & 0xffu);
}

static void fill_pattern(unsigned char *b, size_t span, unsigned seed) {
    for (size_t i = 0; i < span; i++) b[i] = pattern(i, seed);
}

typedef struct {
    const unsigned char *buf;
    unsigned seed;
    size_t pos, bad, first_bad;
} vctx;

static void check_block(size_t off, size_t len, void *c) {
    vctx *v = c;
    for (size_t i = v->pos; i < off; i++) /* gap before this block */
        if (v->buf[i] != SENTINEL && v->bad++ == 0) v->first_bad = i;
    for (size_t i = off; i < off + len; i++)
        if (v->buf[i] != pattern(i, v->seed) && v->bad++ == 0) v->first_bad = i;
    v->pos = off + len;
}

static void verify_buf(const tspec *t, const msgtype *m, size_t bytes, const unsigned char *buf, unsigned seed,
                       MPI_Status *st, const char *path) {
    vctx v = {buf, seed, 0, 0, 0};
    for_blocks(t, bytes, check_block, &v);
    for (size_t i = v.pos; i < m->span; i++)
        if (buf[i] != SENTINEL && v.bad++ == 0) v.first_bad = i;
    int count = -1;
    check(MPI_Get_count(st, m->dt, &count), "MPI_Get_count");
    if (v.bad || count != m->count) {
        char msg[512];
        snprintf(msg, sizeof msg,
                 "verify %s %zu FAIL (%s): %zu wrong bytes (first at offset %zu), MPI_Get_count %d, expected %d",
                 t->name, m->bytes, path, v.bad, v.first_bad, count, m->count);
        die(msg);
    }
}

/* ---------------------------------------------------------------------------------------------
 * Entry points. The timed loops call the MPI through this table: normally the MPI_* names (which
 * LD_PRELOAD resolves to sluice when it is loaded), and with -A alternately the PMPI_* names too,
 * which always reach the MPI itself: the bare MPI and sluice measured in one process, trial next
 * to trial (see "A/B mode" in the header).
 */
typedef struct {
    const char *name;
    int (*send)(const void *, int, MPI_Datatype, int, int, MPI_Comm);
    int (*recv)(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status *);
    int (*isend)(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
    int (*irecv)(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
    int (*waitall)(int, MPI_Request *, MPI_Status *);
} entries;

static const entries g_mpi = {"MPI", MPI_Send, MPI_Recv, MPI_Isend, MPI_Irecv, MPI_Waitall};
static const entries g_pmpi = {"PMPI", PMPI_Send, PMPI_Recv, PMPI_Isend, PMPI_Irecv, PMPI_Waitall};
static const entries *g_e = &g_mpi; /* what pingpong and bandwidth call */

/* ---------------------------------------------------------------------------------------------
 * Measurements. Rank 0 times; the return value is meaningful on rank 0 only.
 */
typedef struct {
    tspec t;
    msgtype m;
    size_t bytes;
    unsigned char *sbuf;  /* span bytes */
    unsigned char *arena; /* window x stride bytes (rank 1); stride bytes (rank 0) */
    size_t stride;        /* page-rounded span */
    int window;
    MPI_Request *reqs;
    long lat_iters, bw_windows;
} point;

static double pingpong(point *p, long iters) {
    int peer = 1 - g_rank;
    MPI_Barrier(MPI_COMM_WORLD);
    double c0 = cpu_s(), t0 = now_s();
    for (long i = 0; i < iters; i++) {
        if (g_rank == 0) {
            check(g_e->send(p->sbuf, p->m.count, p->m.dt, peer, 1, MPI_COMM_WORLD), "MPI_Send");
            check(g_e->recv(p->arena, p->m.count, p->m.dt, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
        } else {
            check(g_e->recv(p->arena, p->m.count, p->m.dt, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
            check(g_e->send(p->sbuf, p->m.count, p->m.dt, peer, 1, MPI_COMM_WORLD), "MPI_Send");
        }
    }
    double dt = now_s() - t0;
    g_share = (cpu_s() - c0) / dt;
    return dt;
}

static double bandwidth(point *p, long windows) {
    int ack = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double c0 = cpu_s(), t0 = now_s();
    for (long w = 0; w < windows; w++) {
        if (g_rank == 0) {
            for (int j = 0; j < p->window; j++)
                check(g_e->isend(p->sbuf, p->m.count, p->m.dt, 1, 2, MPI_COMM_WORLD, &p->reqs[j]), "MPI_Isend");
            check(g_e->waitall(p->window, p->reqs, MPI_STATUSES_IGNORE), "MPI_Waitall");
            check(g_e->recv(&ack, 1, MPI_INT, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
        } else {
            for (int j = 0; j < p->window; j++)
                check(g_e->irecv(p->arena + (size_t)j * p->stride, p->m.count, p->m.dt, 0, 2, MPI_COMM_WORLD, &p->reqs[j]),
                      "MPI_Irecv");
            check(g_e->waitall(p->window, p->reqs, MPI_STATUSES_IGNORE), "MPI_Waitall");
            check(g_e->send(&ack, 1, MPI_INT, 0, 3, MPI_COMM_WORLD), "MPI_Send");
        }
    }
    double dt = now_s() - t0;
    g_share = (cpu_s() - c0) / dt;
    return dt;
}

/* The smaller CPU share of the two ranks over the last measurement (rank 0's view; untimed). */
static double both_share(void) {
    double other = 1.0;
    if (g_rank == 1) check(MPI_Send(&g_share, 1, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD), "MPI_Send");
    else check(MPI_Recv(&other, 1, MPI_DOUBLE, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
    return other < g_share ? other : g_share;
}

typedef double (*measure_fn)(point *, long);

/* Untimed runs of 1, 4, 16, ... iterations until one lasts >= target/8; returns the iteration
 * count for target seconds (rank 0 decides, both ranks get it). */
static long calibrate(point *p, measure_fn fn, double target) {
    long n = 1, msg[2] = {1, 0}; /* {iterations, done} */
    for (;;) {
        double dt = fn(p, n);
        if (g_rank == 0) {
            if (dt >= target / 8 || n >= (1L << 24)) {
                long it = (long)(target / (dt / (double)n) + 0.5);
                msg[0] = it < 1 ? 1 : it;
                msg[1] = 1;
            } else {
                msg[0] = n * 4;
            }
        }
        check(MPI_Bcast(msg, 2, MPI_LONG, 0, MPI_COMM_WORLD), "MPI_Bcast");
        if (msg[1]) return msg[0];
        n = msg[0];
    }
}

/* One timed trial of a metric after an untimed 1/16 of it: the half round trip in us (lat) or
 * GB/s (bw), and in *share the smaller CPU share of the two ranks (rank 0's values). */
static double trial(point *p, measure_fn fn, const char *metric, double *share) {
    int lat = metric[0] == 'l';
    long n = lat ? p->lat_iters : p->bw_windows;
    if (n >= 16) fn(p, n / 16);
    double dt = fn(p, n);
    *share = both_share();
    return lat ? dt * 1e6 / (2.0 * (double)n) : (double)p->m.bytes * p->window * (double)n / dt / 1e9;
}

/* Rank 0's decision whether to repeat a trial, on both ranks. */
static int again(int want) {
    long a = want;
    check(MPI_Bcast(&a, 1, MPI_LONG, 0, MPI_COMM_WORLD), "MPI_Bcast");
    return (int)a;
}

/* A/B: one trial through the PMPI_* entries (the bare MPI) and one through the MPI_* entries
 * (sluice), back to back, PMPI first unless `mpi_first`; the pair is repeated when either trial
 * ran with a rank descheduled. Prints "ab <metric> <type> <bytes> <pmpi> <mpi> <share>" and
 * returns sluice's cost relative to the bare MPI (time ratio: > 1 means sluice was slower). */
static double ab_pair(point *p, measure_fn fn, const char *metric, int mpi_first, int retries, double min_share) {
    const entries *order[2] = {mpi_first ? &g_mpi : &g_pmpi, mpi_first ? &g_pmpi : &g_mpi};
    double pm = 0, m = 0;
    for (int a = 0; a <= retries; a++) {
        double v[2], sh[2];
        for (int j = 0; j < 2; j++) {
            g_e = order[j];
            v[j] = trial(p, fn, metric, &sh[j]);
        }
        g_e = &g_mpi;
        double share = sh[0] < sh[1] ? sh[0] : sh[1];
        pm = v[mpi_first ? 1 : 0];
        m = v[mpi_first ? 0 : 1];
        if (g_rank == 0) printf("ab %s %s %zu %.5f %.5f %.3f\n", metric, p->t.name, p->m.bytes, pm, m, share);
        if (!again(share < min_share)) break;
    }
    return metric[0] == 'l' ? m / pm : pm / m;
}

/* The A/B passes: each pass adds `batch` pairs to every (point, metric) whose confidence
 * interval is still wider than +-tol, until at least `min_pairs` and at most `max_pairs` pairs;
 * points take turns, so a point's pairs are spread over the run. Rank 0 decides and prints
 * "abci <metric> <type> <bytes> <pairs> <median> <lo> <hi>" per (point, metric) at the end. */
static void ab_run(point *pts, int np, int min_pairs, int max_pairs, double tol, int retries, double min_share) {
    const int batch = 4;
    double *r = calloc((size_t)np * 2 * (size_t)(max_pairs + batch), sizeof(double)), *tmp = malloc(sizeof(double) * (size_t)(max_pairs + batch));
    int *n = calloc((size_t)np * 2, sizeof(int)), *done = calloc((size_t)np * 2, sizeof(int));
    if (!r || !tmp || !n || !done) die("malloc");
    for (int pass = 0, left = np * 2; left > 0; pass++) {
        for (int i = 0; i < np; i++) {
            for (int m = 0; m < 2; m++) {
                int s = i * 2 + m;
                if (done[s]) continue;
                double *rs = r + (size_t)s * (size_t)(max_pairs + batch);
                for (int b = 0; b < batch; b++)
                    rs[n[s]++] = ab_pair(&pts[i], m ? bandwidth : pingpong, m ? "bw" : "lat", (pass + i + m + b) % 2, retries, min_share);
                int stop = 0;
                if (g_rank == 0) {
                    double lo, hi;
                    memcpy(tmp, rs, sizeof(double) * (size_t)n[s]);
                    ab_median_ci(tmp, n[s], &lo, &hi);
                    stop = n[s] >= max_pairs || (n[s] >= min_pairs && (hi - lo) / 2 <= tol);
                }
                if (again(stop)) {
                    done[s] = 1;
                    left--;
                }
            }
        }
        if (g_rank == 0) fflush(stdout);
    }
    for (int s = 0; g_rank == 0 && s < np * 2; s++) {
        double lo, hi, med = ab_median_ci(r + (size_t)s * (size_t)(max_pairs + batch), n[s], &lo, &hi);
        printf("abci %s %s %zu %d %.5f %.5f %.5f\n", s % 2 ? "bw" : "lat", pts[s / 2].t.name, pts[s / 2].m.bytes, n[s], med, lo, hi);
    }
    free(r);
    free(tmp);
    free(n);
    free(done);
}

static unsigned g_seed = 1;

/* Blocking path in both directions; windowed path with every message when `window_too`. */
static void verify(point *p, int window_too) {
    MPI_Status st;
    for (int dir = 0; dir < 2; dir++) {
        int src = dir, dst = 1 - dir;
        unsigned seed = g_seed++;
        if (g_rank == src) fill_pattern(p->sbuf, p->m.span, seed);
        if (g_rank == dst) memset(p->arena, SENTINEL, p->m.span);
        MPI_Barrier(MPI_COMM_WORLD);
        if (g_rank == src) check(MPI_Send(p->sbuf, p->m.count, p->m.dt, dst, 5, MPI_COMM_WORLD), "MPI_Send");
        else {
            check(MPI_Recv(p->arena, p->m.count, p->m.dt, src, 5, MPI_COMM_WORLD, &st), "MPI_Recv");
            verify_buf(&p->t, &p->m, p->bytes, p->arena, seed, &st, dir ? "MPI_Send 1->0" : "MPI_Send 0->1");
        }
    }
    if (window_too) {
        unsigned seed = g_seed++;
        MPI_Status *sts = malloc(sizeof(MPI_Status) * (size_t)p->window);
        if (!sts) die("malloc");
        if (g_rank == 0) fill_pattern(p->sbuf, p->m.span, seed);
        else for (int j = 0; j < p->window; j++) memset(p->arena + (size_t)j * p->stride, SENTINEL, p->m.span);
        MPI_Barrier(MPI_COMM_WORLD);
        if (g_rank == 0) {
            for (int j = 0; j < p->window; j++)
                check(MPI_Isend(p->sbuf, p->m.count, p->m.dt, 1, 6, MPI_COMM_WORLD, &p->reqs[j]), "MPI_Isend");
            check(MPI_Waitall(p->window, p->reqs, sts), "MPI_Waitall");
        } else {
            for (int j = 0; j < p->window; j++)
                check(MPI_Irecv(p->arena + (size_t)j * p->stride, p->m.count, p->m.dt, 0, 6, MPI_COMM_WORLD, &p->reqs[j]),
                      "MPI_Irecv");
            check(MPI_Waitall(p->window, p->reqs, sts), "MPI_Waitall");
            for (int j = 0; j < p->window; j++)
                verify_buf(&p->t, &p->m, p->bytes, p->arena + (size_t)j * p->stride, seed, &sts[j], "MPI_Isend window");
        }
        free(sts);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static int parse_list(char *s, char **items, int max) {
    int n = 0;
    for (char *tok = strtok(s, ","); tok && n < max; tok = strtok(NULL, ",")) items[n++] = tok;
    return n;
}

int main(int argc, char **argv) {
    int size = 0, trials = 3, window_max = 64, verify_window = 0, retries = 2, ab = 0, max_pairs = 400, opt;
    double target_ms = 20.0, min_share = 0.95, tol = 0.01;
    long cap_mib = 64;
    char *types_arg = NULL, *sizes_arg = NULL;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    while ((opt = getopt(argc, argv, "t:s:n:m:w:c:r:q:VAN:e:")) != -1) {
        switch (opt) {
        case 't': types_arg = optarg; break;
        case 's': sizes_arg = optarg; break;
        case 'n': trials = atoi(optarg); break;
        case 'm': target_ms = atof(optarg); break;
        case 'w': window_max = atoi(optarg); break;
        case 'c': cap_mib = atol(optarg); break;
        case 'r': retries = atoi(optarg); break;
        case 'q': min_share = atof(optarg); break;
        case 'V': verify_window = 1; break;
        case 'A': ab = 1; break;
        case 'N': max_pairs = atoi(optarg); break;
        case 'e': tol = atof(optarg); break;
        default: types_arg = NULL; break;
        }
    }
    if (!types_arg || !sizes_arg || trials < 1 || retries < 0 || target_ms <= 0 || max_pairs < trials || tol <= 0 || window_max < 1 || cap_mib < 1 || size != 2) {
        if (g_rank == 0)
            fprintf(stderr, "usage: %s -t TYPES -s SIZES [-n trials] [-m target_ms] [-w window] [-c cap_MiB] [-r retries]"
                            " [-q min_cpu_share] [-V] [-A [-N max_pairs] [-e tol]]"
                            " (exactly 2 ranks)\n", argv[0]);
        MPI_Finalize();
        return 1;
    }
    if (g_rank == 0) printf("shim %d\n", dlsym(RTLD_DEFAULT, "sluice_version_string") != NULL);
    init_lammps();

    char *titems[MAX_ITEMS], *sitems[MAX_ITEMS];
    int nt = parse_list(types_arg, titems, MAX_ITEMS), ns = parse_list(sizes_arg, sitems, MAX_ITEMS);
    size_t sizes[MAX_ITEMS];
    for (int i = 0; i < ns; i++) sizes[i] = (size_t)strtoull(sitems[i], NULL, 0);
    double target = target_ms * 1e-3;
    size_t cap = (size_t)cap_mib << 20;

    /* all (type, size) points of this run; every type keeps its committed datatypes to the end */
    point *pts = calloc((size_t)nt * (size_t)ns, sizeof(point));
    int np = 0;
    size_t max_span = 0, max_arena = 0;
    if (!pts) die("malloc");
    for (int ti = 0; ti < nt; ti++) {
        tspec t;
        if (parse_type(titems[ti], &t) != 0) die("unknown type (contig, vect:S:B, face-x, lammps, struct-mix)");
        for (int si = 0; si < ns; si++) {
            if (!size_ok(&t, sizes[si])) continue;
            point *p = &pts[np++];
            p->t = t;
            p->bytes = sizes[si];
            build(&p->t, p->bytes, &p->m);
            p->stride = round_page(p->m.span);
            size_t w = cap / p->stride;
            p->window = (int)(w < 1 ? 1 : w > (size_t)window_max ? (size_t)window_max : w);
            if (p->m.span > max_span) max_span = p->m.span;
            if ((size_t)p->window * p->stride > max_arena) max_arena = (size_t)p->window * p->stride;
            if (natural_size(&t)) break;
        }
    }
    /* one send buffer and one receive arena for all points, pre-faulted here */
    unsigned char *sbuf = xalloc(max_span);
    unsigned char *arena = xalloc(g_rank == 1 ? max_arena : round_page(max_span));
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * (size_t)window_max);
    if (!reqs) die("malloc");
    for (int i = 0; i < np; i++) {
        pts[i].sbuf = sbuf;
        pts[i].arena = arena;
        pts[i].reqs = reqs;
    }

    /* pass 0: check the payload, calibrate (and warm up) every point */
    for (int i = 0; i < np; i++) {
        point *p = &pts[i];
        verify(p, verify_window);
        if (g_rank == 0)
            printf("verify %s %zu ok %s\n", p->t.name, p->m.bytes, verify_window ? "send,recv,window" : "send,recv");
        p->lat_iters = calibrate(p, pingpong, target);
        p->bw_windows = calibrate(p, bandwidth, target);
        if (g_rank == 0)
            printf("point %s %zu %d %zu %d %ld %ld\n", p->t.name, p->m.bytes, p->m.count, p->m.span, p->window,
                   p->lat_iters, p->bw_windows);
    }
    if (ab) ab_run(pts, np, trials, max_pairs, tol, retries, min_share);
    /* timed passes: one trial of every point per pass, so a point's trials are spread over the run */
    for (int k = 0; !ab && k < trials; k++) {
        for (int i = 0; i < np; i++) {
            point *p = &pts[i];
            /* a trial during which a rank was descheduled is printed, then repeated (up to `retries`) */
            for (int a = 0; a <= retries; a++) {
                double sh, v = trial(p, pingpong, "lat", &sh);
                if (g_rank == 0) printf("lat %s %zu %d %.5f %.3f\n", p->t.name, p->m.bytes, k, v, sh);
                if (!again(sh < min_share)) break;
            }
            for (int a = 0; a <= retries; a++) {
                double sh, v = trial(p, bandwidth, "bw", &sh);
                if (g_rank == 0) printf("bw %s %zu %d %.5f %.3f\n", p->t.name, p->m.bytes, k, v, sh);
                if (!again(sh < min_share)) break;
            }
        }
        if (g_rank == 0) fflush(stdout);
    }
    for (int i = 0; i < np; i++) release(&pts[i].t, &pts[i].m);
    free(sbuf);
    free(arena);
    free(reqs);
    free(pts);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
