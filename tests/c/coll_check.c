/* Collectives with derived datatypes, checked two ways: every receive allocation (guards and
 * gaps included) must equal (1) the image computed by this program from the senders' buffers
 * with the MPI's own PMPI_Pack/PMPI_Unpack (not intercepted) and (2) what the same call gives
 * with sluice switched off (sluice_disable(), resolved with dlsym; without the shim the
 * comparison is with the same MPI, so the program also validates itself on the bare MPI).
 *
 * Every intercepted collective (blocking, and nonblocking completed by MPI_Wait, by MPI_Waitall
 * mixed with non-contiguous point-to-point requests, and by an MPI_Test loop), with predefined,
 * contiguous, vector, FFT-column (resized vector), subarray and struct types, zero counts,
 * MPI_IN_PLACE, w-variants with a different type per peer, Cartesian (non-periodic: border
 * neighbors are MPI_PROC_NULL) and distributed-graph neighborhoods. Also: an intercommunicator
 * (left to the MPI), invalid arguments (the MPI's error class), and the leak counters.
 *
 * Rank 0 prints "coll_check: calls <n>": the collective calls made while sluice was enabled,
 * summed over ranks (the harness compares it with sluice's `coll` statistics). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>
#include "check.h"

#define GUARD 32
#define K 12 /* ints per block unit: every type's ints per element divides it */
#define MAXP 8

enum { C_BCAST, C_GATHER, C_GATHERV, C_SCATTER, C_SCATTERV, C_ALLGATHER, C_ALLGATHERV, C_ALLTOALL, C_ALLTOALLV,
       C_ALLTOALLW, C_NALLGATHER, C_NALLGATHERV, C_NALLTOALL, C_NALLTOALLV, C_NALLTOALLW, NCOLL };
static const char *coll_name[NCOLL] = {"bcast", "gather", "gatherv", "scatter", "scatterv", "allgather", "allgatherv",
                                       "alltoall", "alltoallv", "alltoallw", "neighbor_allgather", "neighbor_allgatherv",
                                       "neighbor_alltoall", "neighbor_alltoallv", "neighbor_alltoallw"};
enum { M_BLOCKING, M_WAIT, M_WAITALL_P2P, M_TEST, NMODE };
static const char *mode_name[NMODE] = {"blocking", "wait", "waitall+p2p", "test-loop"};

enum { T_INT, T_CONTIG, T_VEC, T_COL, T_SUB, T_STRUCT, NT };
static const char *type_name[NT] = {"int", "contig", "vector", "fft-column", "subarray", "struct"};
static const int type_ints[NT] = {1, 3, 3, 4, 6, 3};
static MPI_Datatype T[NT];

static int rank, P;
static int (*sl_disable)(void), (*sl_enable)(void);
static int (*sl_outstanding)(long *, long *);
static long calls_enabled = 0;
static MPI_Comm cart, graph;
static const char *ctx_coll, *ctx_mode;
static int ctx_st, ctx_rt, ctx_inplace, ctx_zero;

#define FAIL(...)                                                                                     \
    do {                                                                                              \
        if (check_failures++ < 20) {                                                                  \
            fprintf(stderr, "[rank %d] %s/%s send=%s recv=%s inplace=%d zero=%d: ", rank, ctx_coll,  \
                    ctx_mode, type_name[ctx_st], type_name[ctx_rt], ctx_inplace, ctx_zero);          \
            fprintf(stderr, __VA_ARGS__);                                                             \
            fprintf(stderr, "\n");                                                                    \
        }                                                                                             \
    } while (0)

static void make_types(void) {
    MPI_Datatype tmp;
    T[T_INT] = MPI_INT;
    MPI_CHECK(MPI_Type_contiguous(3, MPI_INT, &T[T_CONTIG]));
    MPI_CHECK(MPI_Type_vector(3, 1, 2, MPI_INT, &T[T_VEC]));
    /* The FFT transpose's column: one int of each of 4 rows, rows 8P ints apart, resized to
     * one int so that consecutive elements are consecutive columns. */
    MPI_CHECK(MPI_Type_vector(4, 1, 8 * P, MPI_INT, &tmp));
    MPI_CHECK(MPI_Type_create_resized(tmp, 0, sizeof(int), &T[T_COL]));
    MPI_CHECK(MPI_Type_free(&tmp));
    int sz[2] = {4, 6}, sub[2] = {2, 3}, st[2] = {1, 2};
    MPI_CHECK(MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_C, MPI_INT, &T[T_SUB]));
    int bl[2] = {2, 1};
    MPI_Aint d[2] = {0, 12};
    MPI_Datatype ty[2] = {MPI_INT, MPI_INT};
    MPI_CHECK(MPI_Type_create_struct(2, bl, d, ty, &tmp));
    MPI_CHECK(MPI_Type_create_resized(tmp, 0, 20, &T[T_STRUCT]));
    MPI_CHECK(MPI_Type_free(&tmp));
    for (int i = 1; i < NT; i++) MPI_CHECK(MPI_Type_commit(&T[i]));
}

static void free_types(void) {
    for (int i = 1; i < NT; i++) MPI_CHECK(MPI_Type_free(&T[i]));
}

static MPI_Aint extent_of(MPI_Datatype t) {
    MPI_Aint lb, ext;
    PMPI_Type_get_extent(t, &lb, &ext);
    return ext;
}

static size_t span_of(MPI_Datatype t, int count) {
    MPI_Aint tlb, text;
    PMPI_Type_get_true_extent(t, &tlb, &text);
    return count <= 0 ? 0 : (size_t)(tlb + text + (MPI_Aint)(count - 1) * extent_of(t));
}

/* ---- the collective as blocks: per peer (count, byte displacement, type) ------------------ */
typedef struct { int count; MPI_Aint disp; int type; } blk_t;
typedef struct { int n; blk_t b[2 * MAXP]; size_t bytes; } side_t;

static int is_neighbor(int c) { return c >= C_NALLGATHER; }
static int is_v(int c) {
    return c == C_GATHERV || c == C_SCATTERV || c == C_ALLGATHERV || c == C_ALLTOALLV || c == C_NALLGATHERV || c == C_NALLTOALLV;
}
static int is_w(int c) { return c == C_ALLTOALLW || c == C_NALLTOALLW; }

/* Neighbors of rank r: Cartesian 1-D non-periodic (slot 0: r-1, slot 1: r+1, MPI_PROC_NULL at
 * the borders) for the allgather/alltoall(v) forms; a distributed graph (out: r+1, r+2; in:
 * r-1, r-2; the second only with more than 2 ranks) for the others. */
static int use_cart(int c) { return c == C_NALLGATHER || c == C_NALLTOALL || c == C_NALLTOALLV; }
static int in_nb(int c, int r, int *nb) {
    if (use_cart(c)) {
        nb[0] = r > 0 ? r - 1 : MPI_PROC_NULL;
        nb[1] = r < P - 1 ? r + 1 : MPI_PROC_NULL;
        return 2;
    }
    nb[0] = (r + P - 1) % P;
    if (P > 2) nb[1] = (r + P - 2) % P;
    return P > 2 ? 2 : 1;
}
static int out_nb(int c, int r, int *nb) {
    if (use_cart(c)) return in_nb(c, r, nb);
    nb[0] = (r + 1) % P;
    if (P > 2) nb[1] = (r + 2) % P;
    return P > 2 ? 2 : 1;
}

/* Ints moved from sender s to receiver r. */
static int ints_sr(int c, int s, int r) {
    if (ctx_zero) return 0;
    if (!is_v(c) && !is_w(c)) return K;
    /* MPI_IN_PLACE sends the receive blocks: the pattern must be symmetric. */
    return ctx_inplace ? K * ((s + r) % 3) : K * ((s + 2 * r) % 3);
}

static int stype_of(int c, int s, int r, int st) { return is_w(c) ? (s + r) % NT : st; }
static int rtype_of(int c, int r, int s, int rt) { return is_w(c) ? (s + 2 * r + 1) % NT : rt; }

/* Lays blocks out: uniform calls at i * count * extent; v and w in reverse peer order, one
 * empty element apart (v: displacements are multiples of the extent). */
static void place(side_t *sd, int c) {
    size_t end = 0;
    if (!is_v(c) && !is_w(c)) {
        for (int i = 0; i < sd->n; i++) {
            MPI_Datatype t = T[sd->b[i].type];
            sd->b[i].disp = (MPI_Aint)i * sd->b[i].count * extent_of(t);
            size_t e = sd->b[i].disp + span_of(t, sd->b[i].count);
            if (e > end) end = e;
        }
    } else {
        size_t run = 0;
        for (int i = sd->n - 1; i >= 0; i--) {
            MPI_Datatype t = T[sd->b[i].type];
            MPI_Aint ext = extent_of(t);
            run = (run + ext - 1) / ext * ext;
            sd->b[i].disp = run;
            run += span_of(t, sd->b[i].count) + ext;
        }
        end = run;
    }
    sd->bytes = end;
}

/* The send side of rank s (n = 0: no send buffer is significant). */
static side_t send_side(int c, int s, int root, int st) {
    side_t sd = {0};
    int nb[2];
    if (c == C_BCAST || c == C_GATHER || c == C_GATHERV || c == C_ALLGATHER || c == C_ALLGATHERV || c == C_NALLGATHER ||
        c == C_NALLGATHERV) {
        if (c == C_BCAST && s != root) return sd;
        sd.n = 1;
        int nbytes_ints = ints_sr(c, s, c == C_BCAST ? root : s);
        if (c == C_GATHERV || c == C_ALLGATHERV || c == C_NALLGATHERV) nbytes_ints = K * (s % 3);
        if (ctx_zero) nbytes_ints = 0;
        sd.b[0] = (blk_t){nbytes_ints / type_ints[st], 0, st};
    } else if (c == C_SCATTER || c == C_SCATTERV) {
        if (s != root) return sd;
        sd.n = P;
        for (int r = 0; r < P; r++) sd.b[r] = (blk_t){ints_sr(c, s, r) / type_ints[st], 0, st};
    } else if (is_neighbor(c)) {
        sd.n = out_nb(c, s, nb);
        for (int i = 0; i < sd.n; i++) {
            int r = nb[i] == MPI_PROC_NULL ? 0 : nb[i];
            int t = stype_of(c, s, i, st);
            sd.b[i] = (blk_t){ints_sr(c, s, r) / type_ints[t], 0, t};
        }
    } else {
        sd.n = P;
        for (int r = 0; r < P; r++) {
            int t = stype_of(c, s, r, st);
            sd.b[r] = (blk_t){ints_sr(c, s, r) / type_ints[t], 0, t};
        }
    }
    place(&sd, c);
    return sd;
}

/* The receive side of rank r, and per block where its data comes from: (sender, sender's send
 * block), sender -1: nothing arrives. */
static side_t recv_side(int c, int r, int root, int rt, int *from, int *from_blk) {
    side_t sd = {0};
    int nb[2];
    if (c == C_BCAST) {
        sd.n = 1;
        sd.b[0] = (blk_t){ints_sr(c, root, root) / type_ints[rt], 0, rt};
        from[0] = r == root ? -1 : root, from_blk[0] = 0;
    } else if (c == C_SCATTER || c == C_SCATTERV) {
        sd.n = 1;
        sd.b[0] = (blk_t){ints_sr(c, root, r) / type_ints[rt], 0, rt};
        from[0] = root, from_blk[0] = r;
    } else if (c == C_GATHER || c == C_GATHERV || c == C_ALLGATHER || c == C_ALLGATHERV) {
        if ((c == C_GATHER || c == C_GATHERV) && r != root) return sd;
        sd.n = P;
        for (int s = 0; s < P; s++) {
            int ints = (c == C_GATHERV || c == C_ALLGATHERV) ? K * (s % 3) : K;
            if (ctx_zero) ints = 0;
            sd.b[s] = (blk_t){ints / type_ints[rt], 0, rt};
            from[s] = s, from_blk[s] = 0;
        }
    } else if (is_neighbor(c)) {
        sd.n = in_nb(c, r, nb);
        for (int j = 0; j < sd.n; j++) {
            int s = nb[j], t = rtype_of(c, r, j, rt);
            int ints = (c == C_NALLGATHERV) ? K * ((s == MPI_PROC_NULL ? 0 : s) % 3) : ints_sr(c, s == MPI_PROC_NULL ? 0 : s, r);
            if (ctx_zero) ints = 0;
            sd.b[j] = (blk_t){ints / type_ints[t], 0, t};
            from[j] = s == MPI_PROC_NULL ? -1 : s;
            if (s == MPI_PROC_NULL) continue;
            if (c == C_NALLGATHER || c == C_NALLGATHERV) {
                from_blk[j] = 0;
            } else { /* the sender's out-slot that points at r */
                int onb[2], n = out_nb(c, s, onb);
                from_blk[j] = -1;
                for (int k = 0; k < n; k++)
                    if (onb[k] == r) from_blk[j] = k;
            }
        }
    } else {
        sd.n = P;
        for (int s = 0; s < P; s++) {
            int t = rtype_of(c, r, s, rt);
            sd.b[s] = (blk_t){ints_sr(c, s, r) / type_ints[t], 0, t};
            from[s] = s, from_blk[s] = r;
        }
    }
    place(&sd, c);
    return sd;
}

/* ---- buffers: deterministic patterns any rank can rebuild ---------------------------------- */
static uint64_t mix(uint64_t x) {
    x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL; x ^= x >> 33;
    return x;
}
static unsigned char *alloc_fill(size_t bytes, uint64_t seed) {
    size_t n = bytes + 2 * GUARD;
    unsigned char *p = malloc(n);
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)mix(seed * 1000003 + i);
    return p;
}
static uint64_t seed_of(int casenum, int r, int which) { return (uint64_t)casenum * 1000 + r * 10 + which; }

/* Packs block b of a buffer image (allocation base) into a fresh stream. */
static unsigned char *pack_blk(const unsigned char *base, blk_t b, int *n) {
    int sz;
    PMPI_Type_size(T[b.type], &sz);
    *n = sz * b.count;
    unsigned char *out = malloc(*n ? *n : 1);
    int pos = 0;
    if (*n) PMPI_Pack(base + GUARD + b.disp, b.count, T[b.type], out, *n, &pos, MPI_COMM_SELF);
    return out;
}
static void unpack_blk(unsigned char *base, blk_t b, const unsigned char *in, int n) {
    int pos = 0;
    if (n) PMPI_Unpack(in, n, &pos, base + GUARD + b.disp, b.count, T[b.type], MPI_COMM_SELF);
}

/* ---- one call ------------------------------------------------------------------------------ */
static int ints_arr[4][2 * MAXP];
static MPI_Aint aint_arr[2][2 * MAXP];
static MPI_Datatype type_arr[2][2 * MAXP];

static void arrays(const side_t *sd, int which) {
    for (int i = 0; i < sd->n; i++) {
        ints_arr[2 * which][i] = sd->b[i].count;
        MPI_Datatype t = T[sd->b[i].type];
        ints_arr[2 * which + 1][i] = (int)(sd->b[i].disp / extent_of(t));
        aint_arr[which][i] = sd->b[i].disp;
        type_arr[which][i] = t;
    }
}

static MPI_Comm comm_of(int c) { return !is_neighbor(c) ? MPI_COMM_WORLD : use_cart(c) ? cart : graph; }

/* Starts (or runs) collective c; returns the MPI's code. */
static int start(int c, int mode, int root, const side_t *ss, const side_t *rs, void *sb, void *rb, int st, int rt,
                 MPI_Request *req) {
    MPI_Comm comm = comm_of(c);
    int nb = mode != M_BLOCKING;
    arrays(ss, 0);
    arrays(rs, 1);
    int sc = ss->n ? ss->b[0].count : 0, rc = rs->n ? rs->b[0].count : 0;
    MPI_Datatype sT = T[st], rT = T[rt];
    int *scs = ints_arr[0], *sds = ints_arr[1], *rcs = ints_arr[2], *rds = ints_arr[3];
    /* Byte displacements for alltoallw (int) */
    int sdb[2 * MAXP], rdb[2 * MAXP];
    for (int i = 0; i < 2 * MAXP; i++) sdb[i] = (int)aint_arr[0][i], rdb[i] = (int)aint_arr[1][i];
    switch (c) {
    case C_BCAST: {
        void *b = rank == root ? sb : rb;
        int cnt = rank == root ? sc : rc;
        MPI_Datatype t = rank == root ? sT : rT;
        return nb ? MPI_Ibcast(b, cnt, t, root, comm, req) : MPI_Bcast(b, cnt, t, root, comm);
    }
    case C_GATHER:
        return nb ? MPI_Igather(sb, sc, sT, rb, rc, rT, root, comm, req) : MPI_Gather(sb, sc, sT, rb, rc, rT, root, comm);
    case C_GATHERV:
        return nb ? MPI_Igatherv(sb, sc, sT, rb, rcs, rds, rT, root, comm, req)
                  : MPI_Gatherv(sb, sc, sT, rb, rcs, rds, rT, root, comm);
    case C_SCATTER:
        return nb ? MPI_Iscatter(sb, sc, sT, rb, rc, rT, root, comm, req) : MPI_Scatter(sb, sc, sT, rb, rc, rT, root, comm);
    case C_SCATTERV:
        return nb ? MPI_Iscatterv(sb, scs, sds, sT, rb, rc, rT, root, comm, req)
                  : MPI_Scatterv(sb, scs, sds, sT, rb, rc, rT, root, comm);
    case C_ALLGATHER:
        return nb ? MPI_Iallgather(sb, sc, sT, rb, rc, rT, comm, req) : MPI_Allgather(sb, sc, sT, rb, rc, rT, comm);
    case C_ALLGATHERV:
        return nb ? MPI_Iallgatherv(sb, sc, sT, rb, rcs, rds, rT, comm, req) : MPI_Allgatherv(sb, sc, sT, rb, rcs, rds, rT, comm);
    case C_ALLTOALL:
        return nb ? MPI_Ialltoall(sb, sc, sT, rb, rc, rT, comm, req) : MPI_Alltoall(sb, sc, sT, rb, rc, rT, comm);
    case C_ALLTOALLV:
        return nb ? MPI_Ialltoallv(sb, scs, sds, sT, rb, rcs, rds, rT, comm, req)
                  : MPI_Alltoallv(sb, scs, sds, sT, rb, rcs, rds, rT, comm);
    case C_ALLTOALLW:
        return nb ? MPI_Ialltoallw(sb, scs, sdb, type_arr[0], rb, rcs, rdb, type_arr[1], comm, req)
                  : MPI_Alltoallw(sb, scs, sdb, type_arr[0], rb, rcs, rdb, type_arr[1], comm);
    case C_NALLGATHER:
        return nb ? MPI_Ineighbor_allgather(sb, sc, sT, rb, rc, rT, comm, req) : MPI_Neighbor_allgather(sb, sc, sT, rb, rc, rT, comm);
    case C_NALLGATHERV:
        return nb ? MPI_Ineighbor_allgatherv(sb, sc, sT, rb, rcs, rds, rT, comm, req)
                  : MPI_Neighbor_allgatherv(sb, sc, sT, rb, rcs, rds, rT, comm);
    case C_NALLTOALL:
        return nb ? MPI_Ineighbor_alltoall(sb, sc, sT, rb, rc, rT, comm, req) : MPI_Neighbor_alltoall(sb, sc, sT, rb, rc, rT, comm);
    case C_NALLTOALLV:
        return nb ? MPI_Ineighbor_alltoallv(sb, scs, sds, sT, rb, rcs, rds, rT, comm, req)
                  : MPI_Neighbor_alltoallv(sb, scs, sds, sT, rb, rcs, rds, rT, comm);
    case C_NALLTOALLW:
        return nb ? MPI_Ineighbor_alltoallw(sb, scs, aint_arr[0], type_arr[0], rb, rcs, aint_arr[1], type_arr[1], comm, req)
                  : MPI_Neighbor_alltoallw(sb, scs, aint_arr[0], type_arr[0], rb, rcs, aint_arr[1], type_arr[1], comm);
    }
    return MPI_ERR_OTHER;
}

/* A non-contiguous point-to-point exchange around the ring, mixed into Waitall. */
static double p2p_out[16], p2p_in[16];
static MPI_Datatype p2p_vec;

static int complete(int mode, MPI_Request *req) {
    if (mode == M_BLOCKING) return MPI_SUCCESS;
    if (mode == M_WAIT) return MPI_Wait(req, MPI_STATUS_IGNORE);
    if (mode == M_TEST) {
        int flag = 0, rc = MPI_SUCCESS;
        double t0 = MPI_Wtime();
        while (!flag && rc == MPI_SUCCESS && MPI_Wtime() - t0 < 60) rc = MPI_Test(req, &flag, MPI_STATUS_IGNORE);
        if (!flag) FAIL("MPI_Test never completed");
        return rc;
    }
    MPI_Request rs[3];
    for (int i = 0; i < 16; i++) p2p_out[i] = rank * 100 + i, p2p_in[i] = -1;
    MPI_CHECK(MPI_Irecv(p2p_in, 1, p2p_vec, (rank + P - 1) % P, 77, MPI_COMM_WORLD, &rs[0]));
    rs[1] = *req;
    MPI_CHECK(MPI_Isend(p2p_out, 1, p2p_vec, (rank + 1) % P, 77, MPI_COMM_WORLD, &rs[2]));
    int rc = MPI_Waitall(3, rs, MPI_STATUSES_IGNORE);
    *req = rs[1];
    for (int i = 0; i < 16; i++) {
        double want = i % 2 == 0 ? ((rank + P - 1) % P) * 100 + i : -1;
        if (p2p_in[i] != want) {
            FAIL("p2p element %d = %g, expected %g", i, p2p_in[i], want);
            break;
        }
    }
    return rc;
}

/* One case: the call with sluice, then with sluice off, both checked against the image. */
static void run_case(int casenum, int c, int mode, int st, int rt, int in_place) {
    int root = P - 1 - casenum % P;
    ctx_coll = coll_name[c], ctx_mode = mode_name[mode], ctx_st = st, ctx_rt = rt, ctx_inplace = in_place;
    int from[2 * MAXP], from_blk[2 * MAXP];
    side_t ss = send_side(c, rank, root, st);
    side_t rs = recv_side(c, rank, root, rt, from, from_blk);
    /* MPI_IN_PLACE: alltoall(v,w) send what the receive blocks hold; allgather(v) the own
     * receive block; gather(v) at the root keeps its own block; scatter(v) at the root
     * receives nothing. */
    int ip_here = in_place && (c == C_ALLTOALL || c == C_ALLTOALLV || c == C_ALLTOALLW || c == C_ALLGATHER ||
                               c == C_ALLGATHERV || rank == root);
    /* The expected receive image. */
    unsigned char *img = alloc_fill(rs.bytes, seed_of(casenum, rank, 1));
    for (int j = 0; j < rs.n; j++) {
        int s = from[j];
        if (s < 0) continue;
        if (in_place && (c == C_GATHER || c == C_GATHERV || c == C_ALLGATHER || c == C_ALLGATHERV) && s == rank) continue;
        if (in_place && (c == C_SCATTER || c == C_SCATTERV) && rank == root) continue;
        int dummy[2 * MAXP], dummy2[2 * MAXP], n;
        unsigned char *stream;
        if (in_place && (c == C_ALLTOALL || c == C_ALLTOALLV || c == C_ALLTOALLW)) {
            side_t srs = recv_side(c, s, root, rt, dummy, dummy2);
            unsigned char *sbuf = alloc_fill(srs.bytes, seed_of(casenum, s, 1));
            stream = pack_blk(sbuf, srs.b[from_blk[j]], &n);
            free(sbuf);
        } else if (in_place && (c == C_ALLGATHER || c == C_ALLGATHERV)) {
            side_t srs = recv_side(c, s, root, rt, dummy, dummy2);
            unsigned char *sbuf = alloc_fill(srs.bytes, seed_of(casenum, s, 1));
            stream = pack_blk(sbuf, srs.b[s], &n);
            free(sbuf);
        } else {
            side_t sss = send_side(c, s, root, st);
            unsigned char *sbuf = alloc_fill(sss.bytes, seed_of(casenum, s, 0));
            stream = pack_blk(sbuf, sss.b[from_blk[j]], &n);
            free(sbuf);
        }
        unpack_blk(img, rs.b[j], stream, n);
        free(stream);
    }
    size_t total = rs.bytes + 2 * GUARD;
    unsigned char *got[2];
    for (int pass = 0; pass < 2; pass++) { /* 0: sluice, 1: sluice off (or the bare MPI again) */
        if (pass == 1 && sl_disable && sl_disable() != 0) FAIL("sluice_disable refused");
        unsigned char *sbuf = alloc_fill(ss.bytes, seed_of(casenum, rank, 0));
        unsigned char *rbuf = alloc_fill(rs.bytes, seed_of(casenum, rank, 1));
        void *sp = ss.n ? (void *)(sbuf + GUARD) : NULL, *rp = rs.n ? (void *)(rbuf + GUARD) : NULL;
        if (ip_here) {
            if (c == C_SCATTER || c == C_SCATTERV) rp = MPI_IN_PLACE;
            else sp = MPI_IN_PLACE;
        }
        MPI_Request req = MPI_REQUEST_NULL;
        int rc = start(c, mode, root, &ss, &rs, sp, rp, st, rt, &req);
        if (rc == MPI_SUCCESS) rc = complete(mode, &req);
        if (rc != MPI_SUCCESS) FAIL("pass %d: MPI returned %d", pass, rc);
        if (mode != M_BLOCKING && req != MPI_REQUEST_NULL) FAIL("pass %d: request not freed", pass);
        if (pass == 0 && sl_disable) calls_enabled += 1;
        got[pass] = rbuf;
        free(sbuf);
        if (memcmp(rbuf, img, total) != 0) {
            size_t i = 0;
            while (rbuf[i] == img[i]) i++;
            FAIL("pass %d: receive buffer differs from the expected image at byte %ld of %zu", pass, (long)i - GUARD, rs.bytes);
        }
        if (pass == 1 && sl_enable) sl_enable();
    }
    if (memcmp(got[0], got[1], total) != 0) FAIL("results with and without sluice differ");
    free(got[0]);
    free(got[1]);
    free(img);
}

/* ---- beyond data: intercommunicators, invalid arguments ------------------------------------- */
static void intercomm_case(void) {
    ctx_coll = "intercomm-alltoall", ctx_mode = "blocking", ctx_st = ctx_rt = T_VEC, ctx_inplace = ctx_zero = 0;
    MPI_Comm local, inter;
    int color = rank % 2;
    MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, color, rank, &local));
    MPI_CHECK(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, 1 - color, 5, &inter));
    int remote;
    MPI_Comm_remote_size(inter, &remote);
    int res[2][64];
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1 && sl_disable) sl_disable();
        int out[64];
        for (int i = 0; i < 64; i++) out[i] = rank * 1000 + i, res[pass][i] = -1;
        /* One vector element (3 ints, stride 2) per remote rank. */
        MPI_CHECK(MPI_Alltoall(out, 1, T[T_VEC], res[pass], 1, T[T_VEC], inter));
        if (pass == 0 && sl_disable) calls_enabled += 1;
        if (pass == 1 && sl_enable) sl_enable();
    }
    if (memcmp(res[0], res[1], sizeof res[0]) != 0) FAIL("intercommunicator results differ");
    MPI_CHECK(MPI_Comm_free(&inter));
    MPI_CHECK(MPI_Comm_free(&local));
}

static void invalid_args_case(void) {
    ctx_coll = "invalid-arguments", ctx_mode = "blocking", ctx_st = ctx_rt = T_VEC, ctx_inplace = ctx_zero = 0;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int buf[64] = {0}, cls[2][2];
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1 && sl_disable) sl_disable();
        int rc = MPI_Bcast(buf, 1, T[T_VEC], P + 3, MPI_COMM_WORLD); /* bad root */
        MPI_Error_class(rc, &cls[pass][0]);
        rc = MPI_Alltoall(buf, -1, T[T_VEC], buf, 1, T[T_VEC], MPI_COMM_WORLD); /* negative count */
        MPI_Error_class(rc, &cls[pass][1]);
        if (pass == 0 && sl_disable) calls_enabled += 2;
        if (pass == 1 && sl_enable) sl_enable();
    }
    for (int k = 0; k < 2; k++) {
        if (cls[0][k] == MPI_SUCCESS) FAIL("invalid call %d succeeded", k);
        if (cls[0][k] != cls[1][k]) FAIL("invalid call %d: class %d with sluice, %d without", k, cls[0][k], cls[1][k]);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv) {
    MPI_CHECK(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    if (P > MAXP) MPI_Abort(MPI_COMM_WORLD, 2);
    sl_disable = (int (*)(void))dlsym(RTLD_DEFAULT, "sluice_disable");
    sl_enable = (int (*)(void))dlsym(RTLD_DEFAULT, "sluice_enable");
    sl_outstanding = (int (*)(long *, long *))dlsym(RTLD_DEFAULT, "sluice_p2p_outstanding");
    int dims = P, periods = 0;
    MPI_CHECK(MPI_Cart_create(MPI_COMM_WORLD, 1, &dims, &periods, 0, &cart));
    {
        int src[2], dst[2], n = in_nb(C_NALLTOALLW, rank, src);
        out_nb(C_NALLTOALLW, rank, dst);
        MPI_CHECK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, n, src, MPI_UNWEIGHTED, n, dst, MPI_UNWEIGHTED,
                                                 MPI_INFO_NULL, 0, &graph));
    }
    /* (send, receive) type pairs: same layout, the FFT transpose (contiguous rows into
     * columns), mixed non-contiguous, and all-contiguous (left to the MPI). */
    static const int pairs[][2] = {{T_VEC, T_VEC}, {T_INT, T_COL}, {T_COL, T_SUB}, {T_STRUCT, T_INT},
                                   {T_SUB, T_STRUCT}, {T_CONTIG, T_INT}};
    const int npairs = sizeof pairs / sizeof pairs[0];
    int casenum = 0;
    for (int c = 0; c < NCOLL; c++) {
        for (int mode = 0; mode < NMODE; mode++) {
            for (int p = 0; p < npairs; p++) {
                /* Sluice forgets compiled types when disabled: fresh types for every case. */
                make_types();
                MPI_CHECK(MPI_Type_vector(8, 1, 2, MPI_DOUBLE, &p2p_vec));
                MPI_CHECK(MPI_Type_commit(&p2p_vec));
                ctx_zero = 0;
                run_case(casenum++, c, mode, pairs[p][0], pairs[p][1], 0);
                int ip = c == C_GATHER || c == C_GATHERV || c == C_SCATTER || c == C_SCATTERV || c == C_ALLGATHER ||
                         c == C_ALLGATHERV || c == C_ALLTOALL || c == C_ALLTOALLV || c == C_ALLTOALLW;
                /* MPI_IN_PLACE: the receive type describes both directions. */
#ifdef MPICH_VERSION
                /* MPICH 4.0.2's MPI_Ialltoallw with MPI_IN_PLACE delivers wrong data at 3 ranks and
                 * fails with MPI_ERR_TRUNCATE at 4, bare (found here; its blocking form is right). */
                if (c == C_ALLTOALLW && mode == M_WAIT) ip = 0;
#endif
                if (ip && mode <= M_WAIT && pairs[p][0] == pairs[p][1]) run_case(casenum++, c, mode, pairs[p][1], pairs[p][1], 1);
                if (ip && mode <= M_WAIT && p == 1) run_case(casenum++, c, mode, T_COL, T_COL, 1);
                if (mode == M_BLOCKING && p == 0) {
                    ctx_zero = 1;
                    run_case(casenum++, c, mode, pairs[p][0], pairs[p][1], 0);
                    ctx_zero = 0;
                }
                MPI_CHECK(MPI_Type_free(&p2p_vec));
                free_types();
            }
        }
    }
    make_types();
    intercomm_case();
    invalid_args_case();
    free_types();
    MPI_CHECK(MPI_Comm_free(&cart));
    MPI_CHECK(MPI_Comm_free(&graph));
    if (sl_outstanding) {
        long reqs = -1, staging = -1;
        sl_outstanding(&reqs, &staging);
        if (reqs != 0 || staging != 0) FAIL("leak: %ld requests and %ld staging buffers still held", reqs, staging);
    }
    long total = 0;
    MPI_Reduce(&calls_enabled, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("coll_check: calls %ld\n", total);
    int rc = report_verdict("coll_check");
    MPI_CHECK(MPI_Finalize());
    return rc;
}
