/*
 * coll_halo.c - the halo exchange of a 3-D 7-point stencil as one MPI_Neighbor_alltoallw with
 * subarray datatypes on a periodic Cartesian communicator.
 *
 * The P ranks form a periodic 3-D grid (MPI_Dims_create, MPI_Cart_create without reordering). Each
 * owns n^3 cells of doubles stored with a one-cell halo, an (n+2)^3 array in C order a[z][y][x]
 * (x fastest). Cartesian dimension 0 is x, 1 is y, 2 is z: MPI_Dims_create puts the most ranks in
 * dimension 0, so at 2 ranks (dims 2x1x1) the faces that cross between ranks are the x-faces, the
 * most strided ones (n^2 single doubles at a stride of (n+2) * 8 bytes); y-faces are n runs of n
 * doubles per z plane, z-faces n runs of n doubles in one plane. A 7-point stencil needs the faces
 * only (no edges or corners).
 *
 * For each dimension d the neighbours are, in MPI's order, the negative then the positive one
 * (MPI_Cart_shift(d, 1)); block 2d sends the low interior face (index 1 along d) and receives the
 * low halo (index 0), block 2d+1 sends the high face (index n) and receives the high halo (n+1).
 * Each face and halo is an MPI_Type_create_subarray of the whole array (n x n, 1 thick), count 1,
 * displacement 0; send and receive buffer are the same array (faces and halos are disjoint), as
 * in stencil codes. A dimension of 1 or 2 ranks exchanges with the same process in both
 * directions; MPI-4.1 Section 8.6 (an erratum to MPI-3.1, mpi-forum/mpi-issues#153) says the
 * block sent in the negative direction arrives in the positive-side block (2d+1) of the receiver
 * and vice versa, which is what the physics needs. Open MPI 4.1.4 does that; MPICH 4.0.2 does
 * not (pmodels/mpich#2194): its Neighbor_alltoallw delivers block s into block s, and its
 * Neighbor_alltoall at 1-3 ranks even crosses dimensions. So the check accepts, for each receive
 * block, any block its neighbour sends to this rank (each once), checks every element against it,
 * and prints the pairing it found ("pairing=" on the verify line, "mpi41" when it is MPI-4.1's),
 * so that a run under sluice can be compared with a bare one. Every pairing moves the same bytes
 * with the same types.
 *
 * Cases (for each n of -s):
 *   halo-dt      MPI_Neighbor_alltoallw with the 6 face and 6 halo subarray types
 *   halo-contig  MPI_Neighbor_alltoall of the same bytes from and into contiguous buffers
 *                (6 x n^2 MPI_DOUBLE): the baseline for "contiguous collectives"
 *
 * Correctness, once per case before any timing: every interior cell holds a value encoding its
 * global (x, y, z), every halo cell a sentinel (-1), the contiguous send blocks values encoding
 * (rank, block, element). After the exchange every element of every receive block must equal
 * the element its neighbour sent (see above for which block), every interior cell its own value,
 * every edge and corner halo cell the sentinel.
 *
 * Usage: coll_halo -s n[,n...] [common options, see coll_common.c].
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_common.h"

#define SENTINEL (-1.0)

typedef struct {
    long n, l; /* interior cells and array length (n + 2) per axis */
    double *a; /* l^3, a[(z * l + y) * l + x] */
    MPI_Datatype face[6], halo[6];
    double *sbuf, *rbuf; /* contiguous baseline: 6 blocks of n^2 */
} halo_ctx;

static MPI_Comm g_cart;
static int g_dims[3], g_coords[3], g_nbr[6]; /* per block 2d / 2d+1: negative / positive neighbour */
static int g_counts[6] = {1, 1, 1, 1, 1, 1};
static MPI_Aint g_displs[6];

static void op_dt(void *p, long iters) {
    halo_ctx *c = p;
    for (long it = 0; it < iters; it++)
        coll_check(COLL_MPI(MPI_Neighbor_alltoallw)(c->a, g_counts, g_displs, c->face, c->a, g_counts, g_displs, c->halo, g_cart),
                   "MPI_Neighbor_alltoallw");
}

static void op_contig(void *p, long iters) {
    halo_ctx *c = p;
    int count = (int)(c->n * c->n);
    for (long it = 0; it < iters; it++)
        coll_check(COLL_MPI(MPI_Neighbor_alltoall)(c->sbuf, count, MPI_DOUBLE, c->rbuf, count, MPI_DOUBLE, g_cart),
                   "MPI_Neighbor_alltoall");
}

/* Value of global cell (gx, gy, gz), coordinates wrapped periodically; exact in a double. */
static double cell_value(long gx, long gy, long gz, long n) {
    long G[3] = {g_dims[0] * n, g_dims[1] * n, g_dims[2] * n};
    gx = (gx + G[0]) % G[0];
    gy = (gy + G[1]) % G[1];
    gz = (gz + G[2]) % G[2];
    return (double)((gz * G[1] + gy) * G[0] + gx);
}

/* Subarray of the l^3 array (C order: sizes are z, y, x) that is 1 thick along Cartesian
 * dimension d at index `at` and covers the interior along the other two. */
static MPI_Datatype slab(long l, int d, long at) {
    int sizes[3] = {(int)l, (int)l, (int)l}, sub[3], start[3];
    MPI_Datatype t;
    for (int axis = 0; axis < 3; axis++) {
        int is_d = axis == 2 - d; /* array axis 2 (x) is dimension 0 */
        sub[axis] = is_d ? 1 : (int)(l - 2);
        start[axis] = is_d ? (int)at : 1;
    }
    coll_check(MPI_Type_create_subarray(3, sizes, sub, start, MPI_ORDER_C, MPI_DOUBLE, &t), "MPI_Type_create_subarray");
    coll_check(MPI_Type_commit(&t), "MPI_Type_commit");
    return t;
}

static void fill(halo_ctx *c) {
    long n = c->n, l = c->l;
    for (long z = 0; z < l; z++)
        for (long y = 0; y < l; y++)
            for (long x = 0; x < l; x++) {
                int interior = x >= 1 && x <= n && y >= 1 && y <= n && z >= 1 && z <= n;
                c->a[(z * l + y) * l + x] = interior ? cell_value(g_coords[0] * n + x - 1, g_coords[1] * n + y - 1,
                                                                  g_coords[2] * n + z - 1, n)
                                                     : SENTINEL;
            }
    size_t nn = (size_t)(n * n);
    for (int b = 0; b < 6; b++)
        for (size_t k = 0; k < nn; k++) {
            c->sbuf[b * nn + k] = (double)((g_rank * 6 + b) * (long)nn + (long)k);
            c->rbuf[b * nn + k] = SENTINEL;
        }
}

static void setup(halo_ctx *c, long n) {
    c->n = n;
    c->l = n + 2;
    size_t cells = (size_t)(c->l * c->l * c->l), nn = (size_t)(n * n);
    if (6 * nn > 0x7fffffffUL) coll_die("n too large");
    c->a = coll_alloc(cells * sizeof(double));
    c->sbuf = coll_alloc(6 * nn * sizeof(double));
    c->rbuf = coll_alloc(6 * nn * sizeof(double));
    for (int d = 0; d < 3; d++) {
        c->face[2 * d] = slab(c->l, d, 1);
        c->face[2 * d + 1] = slab(c->l, d, n);
        c->halo[2 * d] = slab(c->l, d, 0);
        c->halo[2 * d + 1] = slab(c->l, d, n + 1);
    }
}

static const char *const BLOCK[6] = {"x-", "x+", "y-", "y+", "z-", "z+"};

/* Local cell p = (x, y, z) of element k of the slab of block b (dimension b/2) at index `at`:
 * subarray elements come in C order, the slower of the two other dimensions first (z before y
 * before x). */
static void slab_cell(long n, int b, long at, long k, long *p) {
    int d = b / 2, slow = d == 2 ? 1 : 2, fast = d == 0 ? 1 : 0;
    p[d] = at;
    p[slow] = 1 + k / n;
    p[fast] = 1 + k % n;
}

static double cell(const halo_ctx *c, const long *p) { return c->a[(p[2] * c->l + p[1]) * c->l + p[0]]; }

/* The neighbour of the rank at coordinates rc across its block j. */
static int neighbour_of(const int *rc, int j) {
    int c[3] = {rc[0], rc[1], rc[2]}, d = j / 2, r;
    c[d] = (c[d] + ((j & 1) ? 1 : -1) + g_dims[d]) % g_dims[d];
    coll_check(MPI_Cart_rank(g_cart, c, &r), "MPI_Cart_rank");
    return r;
}

/* Element k of block j as the rank at coordinates rc (rank s) sends it: halo-dt its face,
 * halo-contig its send buffer. */
static double sent_value(int dt, long n, int s, const int *rc, int j, long k) {
    long p[3];
    if (!dt) return (double)((s * 6 + j) * n * n + k);
    slab_cell(n, j, (j & 1) ? n : 1, k, p);
    return cell_value(rc[0] * n + p[0] - 1, rc[1] * n + p[1] - 1, rc[2] * n + p[2] - 1, n);
}

/* Element k of this rank's receive block b. */
static double received_value(const halo_ctx *c, int dt, int b, long k) {
    long p[3];
    if (!dt) return c->rbuf[b * c->n * c->n + k];
    slab_cell(c->n, b, (b & 1) ? c->n + 1 : 0, k, p);
    return cell(c, p);
}

static int block_matches(const halo_ctx *c, int dt, int b, int s, const int *rc, int j) {
    for (long k = 0; k < c->n * c->n; k++)
        if (received_value(c, dt, b, k) != sent_value(dt, c->n, s, rc, j, k)) return 0;
    return 1;
}

/* Which of its neighbour's blocks arrived in receive block b: MPI-4.1 says b^1. Where a
 * neighbour is this rank's neighbour in several directions (a dimension of 1 or 2 ranks) MPIs
 * differ: MPICH 4.0.2 delivers block s into block s, and its Neighbor_alltoall at 1-3 ranks even
 * crosses dimensions. Any block the neighbour sends to this rank is accepted, each only once. */
static int find_source_block(const halo_ctx *c, int dt, int b, const int *from) {
    int s = g_nbr[b], rc[3];
    coll_check(MPI_Cart_coords(g_cart, s, 3, rc), "MPI_Cart_coords");
    for (int t = 0; t < 7; t++) {
        int j = t == 0 ? (b ^ 1) : t - 1, taken = 0;
        if (t > 0 && j == (b ^ 1)) continue;
        if (neighbour_of(rc, j) != g_rank) continue;
        for (int e = 0; e < b; e++) taken |= g_nbr[e] == s && from[e] == j;
        if (!taken && block_matches(c, dt, b, s, rc, j)) return j;
    }
    char msg[200];
    snprintf(msg, sizeof msg, "%s n=%ld: receive block %s (from rank %d): element 0 is %.0f, expected %.0f (MPI-4.1)",
             dt ? "halo-dt" : "halo-contig", c->n, BLOCK[b], s, received_value(c, dt, b, 0),
             sent_value(dt, c->n, s, rc, b ^ 1, 0));
    coll_die(msg);
    return -1;
}

/* Interior cells keep their values; edge and corner halo cells, which nothing sends, keep the
 * sentinel (the face halos are checked block by block). */
static void verify_untouched(const halo_ctx *c) {
    long n = c->n, p[3];
    for (p[2] = 0; p[2] < c->l; p[2]++)
        for (p[1] = 0; p[1] < c->l; p[1]++)
            for (p[0] = 0; p[0] < c->l; p[0]++) {
                int in_halo = 0;
                for (int d = 0; d < 3; d++) in_halo += p[d] == 0 || p[d] == n + 1;
                if (in_halo == 1) continue;
                double want = in_halo ? SENTINEL
                                      : cell_value(g_coords[0] * n + p[0] - 1, g_coords[1] * n + p[1] - 1,
                                                   g_coords[2] * n + p[2] - 1, n);
                if (cell(c, p) != want) {
                    char msg[200];
                    snprintf(msg, sizeof msg, "halo-dt n=%ld: cell (x %ld, y %ld, z %ld) is %.0f, expected %.0f", n,
                             p[0], p[1], p[2], cell(c, p), want);
                    coll_die(msg);
                }
            }
}

/* Runs the case once and checks every element; prints the block pairing found ("mpi41" or the
 * receive blocks that got another block than MPI-4.1's, as recv<sent). */
static void verify(halo_ctx *c, int dt) {
    int from[6];
    char text[80] = "";
    fill(c);
    (dt ? op_dt : op_contig)(c, 1);
    for (int b = 0; b < 6; b++) from[b] = find_source_block(c, dt, b, from);
    if (dt) verify_untouched(c);
    coll_check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    for (int b = 0; b < 6; b++)
        if (from[b] != (b ^ 1))
            snprintf(text + strlen(text), sizeof text - strlen(text), "%s%s<%s", text[0] ? "," : "", BLOCK[b],
                     BLOCK[from[b]]);
    if (g_rank == 0) printf("verify %s %ld ok pairing=%s\n", dt ? "halo-dt" : "halo-contig", c->n, text[0] ? text : "mpi41");
}

int main(int argc, char **argv) {
    coll_opts o;
    int nranks, periods[3] = {1, 1, 1};
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (coll_parse(argc, argv, &o, "n[,n...]") != 0) {
        MPI_Finalize();
        return 1;
    }
    coll_print_shim();
    coll_check(MPI_Dims_create(nranks, 3, g_dims), "MPI_Dims_create");
    coll_check(MPI_Cart_create(MPI_COMM_WORLD, 3, g_dims, periods, 0, &g_cart), "MPI_Cart_create");
    coll_check(MPI_Cart_coords(g_cart, g_rank, 3, g_coords), "MPI_Cart_coords");
    for (int d = 0; d < 3; d++)
        coll_check(MPI_Cart_shift(g_cart, d, 1, &g_nbr[2 * d], &g_nbr[2 * d + 1]), "MPI_Cart_shift");
    if (g_rank == 0) printf("ranks %d dims=%dx%dx%d\n", nranks, g_dims[0], g_dims[1], g_dims[2]);

    halo_ctx *ctx = calloc((size_t)o.nsizes, sizeof(halo_ctx));
    coll_case *cases = calloc(2 * (size_t)o.nsizes, sizeof(coll_case));
    int ncases = 0;
    if (!ctx || !cases) coll_die("malloc");
    for (int i = 0; i < o.nsizes; i++) {
        halo_ctx *c = &ctx[i];
        setup(c, o.sizes[i]);
        double bytes = 6.0 * (double)(c->n * c->n) * (double)sizeof(double);
        if (o.want_dt) {
            verify(c, 1);
            cases[ncases++] = (coll_case){"halo-dt", c->n, bytes, op_dt, c, 0};
        }
        if (o.want_contig) {
            verify(c, 0);
            cases[ncases++] = (coll_case){"halo-contig", c->n, bytes, op_contig, c, 0};
        }
    }
    coll_run(cases, ncases, &o);

    for (int i = 0; i < o.nsizes; i++) {
        for (int b = 0; b < 6; b++) {
            MPI_Type_free(&ctx[i].face[b]);
            MPI_Type_free(&ctx[i].halo[b]);
        }
        free(ctx[i].a);
        free(ctx[i].sbuf);
        free(ctx[i].rbuf);
    }
    free(ctx);
    free(cases);
    MPI_Comm_free(&g_cart);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
