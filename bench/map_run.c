/* Communication time of two patterns whose heavy edges a default placement can put between
 * nodes (scripts/bench-map-run.sh launches it with the launcher's default placement and with
 * sluice-map's, on the emulated cluster):
 *
 *   stencil   a weighted 2-D 5-point stencil on a 2 x (N/2) grid in row-major rank order,
 *             periodic along the rows: each rank exchanges BIG bytes with its column
 *             neighbour (the other row) and BIG/16 with its row neighbours (Isend/Irecv,
 *             Waitall). The block placement puts each row on a node: every heavy edge across.
 *   subcomm   MPI_Alltoall of BIG/4 bytes per pair inside the two strided sub-communicators
 *             of ranks of equal parity (MPI_Comm_split by rank mod 2, as a 2-D decomposition's
 *             column communicators): the block placement splits each across the nodes.
 *
 * With "cart" after BIG, each pattern runs on a Cartesian communicator made with reorder = true,
 * as a 2-D code would make it (stencil: the 2 x (N/2) grid, periodic along the rows;
 * subcomm: the (N/2) x 2 grid's column communicators from MPI_Cart_sub): where the processes
 * land is then the reordering's choice (scripts/bench-map-run.sh times SLUICE_REORDER=off
 * against reordering weighed by a profile, SLUICE_REORDER_MATRIX).
 *
 * Usage: map_run PATTERN ITERS [BIG [cart]]  (BIG default 262144). Rank 0 prints one line
 * "PATTERN seconds_per_iteration" (the slowest rank's time over ITERS iterations after two
 * warm-up iterations). The data are checked: every received byte carries its sender's rank. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size; /* in comm */
static MPI_Comm comm;
static int cart;

static int check(const unsigned char *b, size_t n, int from) {
    for (size_t i = 0; i < n; i++)
        if (b[i] != (unsigned char)(from * 7 + 1)) return 1;
    return 0;
}

static double stencil(int iters, size_t big) {
    int cols = size / 2, row = rank / cols, col = rank % cols;
    int peer[3] = {row * cols + (col + 1) % cols, row * cols + (col + cols - 1) % cols, (1 - row) * cols + col};
    size_t len[3] = {big / 16, big / 16, big};
    unsigned char *out[3], *in[3];
    for (int k = 0; k < 3; k++) {
        out[k] = malloc(len[k]);
        in[k] = malloc(len[k]);
        memset(out[k], rank * 7 + 1, len[k]);
    }
    int bad = 0;
    double t0 = 0;
    for (int it = -2; it < iters; it++) {
        if (it == 0) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
        }
        MPI_Request r[6];
        for (int k = 0; k < 3; k++) {
            /* Receive from the opposite direction of the send (row: left/right swapped). */
            int from = k == 0 ? peer[1] : k == 1 ? peer[0] : peer[2];
            MPI_Irecv(in[k], (int)len[k], MPI_BYTE, from, k, comm, &r[k]);
            MPI_Isend(out[k], (int)len[k], MPI_BYTE, peer[k], k, comm, &r[3 + k]);
        }
        MPI_Waitall(6, r, MPI_STATUSES_IGNORE);
        if (it == -1) bad += check(in[0], len[0], peer[1]) + check(in[1], len[1], peer[0]) + check(in[2], len[2], peer[2]);
    }
    double t = (MPI_Wtime() - t0) / iters;
    for (int k = 0; k < 3; k++) free(out[k]), free(in[k]);
    if (bad) fprintf(stderr, "rank %d: wrong data\n", rank), MPI_Abort(MPI_COMM_WORLD, 3);
    return t;
}

static double subcomm(int iters, size_t big) {
    MPI_Comm sub;
    int n, me;
    if (cart) {
        int keep[2] = {1, 0};
        MPI_Cart_sub(comm, keep, &sub); /* rank = row * 2 + column: the column's ranks */
    } else {
        MPI_Comm_split(comm, rank % 2, rank, &sub);
    }
    MPI_Comm_size(sub, &n);
    MPI_Comm_rank(sub, &me);
    size_t block = big / 4;
    unsigned char *out = malloc(block * n), *in = malloc(block * n);
    memset(out, rank * 7 + 1, block * n);
    int bad = 0;
    double t0 = 0;
    for (int it = -2; it < iters; it++) {
        if (it == 0) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
        }
        MPI_Alltoall(out, (int)block, MPI_BYTE, in, (int)block, MPI_BYTE, sub);
        if (it == -1)
            for (int p = 0; p < n; p++) bad += check(in + p * block, block, 2 * p + rank % 2);
    }
    double t = (MPI_Wtime() - t0) / iters;
    free(out);
    free(in);
    MPI_Comm_free(&sub);
    if (bad) fprintf(stderr, "rank %d: wrong data\n", rank), MPI_Abort(MPI_COMM_WORLD, 3);
    return t;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 3 || size < 4 || size % 2) {
        if (!rank) fprintf(stderr, "usage: map_run stencil|subcomm ITERS [BIG [cart]] (an even number of ranks >= 4)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int iters = atoi(argv[2]);
    size_t big = argc > 3 ? (size_t)atol(argv[3]) : 262144;
    cart = argc > 4 && !strcmp(argv[4], "cart");
    comm = MPI_COMM_WORLD;
    if (cart) {
        int stencil = !strcmp(argv[1], "stencil");
        int dims[2] = {stencil ? 2 : size / 2, stencil ? size / 2 : 2}, periods[2] = {0, stencil};
        MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 1, &comm);
        MPI_Comm_rank(comm, &rank);
    }
    double t = !strcmp(argv[1], "stencil") ? stencil(iters, big) : subcomm(iters, big), worst;
    MPI_Reduce(&t, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
    if (!rank) printf("%s %.9f\n", argv[1], worst);
    if (cart) MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
