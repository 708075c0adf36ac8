/* Large FFT transposes through MPI_Alltoall, MPI_Ialltoall and MPI_Alltoallv: the paths where
 * sluice copies a rank's own block directly and keeps the MPI from copying its staged bytes
 * (a uniform call: the own slot's staging is backed by a small ring of pages, "hollow"
 * staging; a v-call: the own slot's counts become 0). The small blocks of coll_check.c never
 * reach the ring (it needs an own slot of at least 1 MiB), so this program moves matrices whose
 * own slot is 1.9-4 MiB per rank, its offset not page-aligned at 3 ranks.
 *
 * The matrix is N x N complex doubles (N = 1026 at 3 ranks, 1024 otherwise), m = N / P rows per
 * rank, row-major; the transpose is bench/coll_fft.c's (rows of a resized vector into columns of
 * a resized column type). Each call runs 3 times (the second and third reuse the cached
 * mappings) into an output prefilled with a sentinel, and every element is checked: output
 * (x, y) must hold (re = y, im = x) of the global input. The v-call moves the same blocks with
 * counts and displacements per peer. After the calls, rank 0 reports whether its address space
 * holds a ring mapping ("hollow 1": /proc/self/maps names the memfd), which the harness requires
 * with sluice at 2 ranks, and the leak counters must be zero. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>
#include "check.h"

typedef struct {
    double re, im;
} cplx;

static int rank, P;
static long N, m;
static cplx *in, *out;
static MPI_Datatype send_block, recv_column;

static void check_output(const char *what, int round) {
    long bad = 0;
    for (long k = 0; k < m * N; k++) {
        double re = (double)(k % N), im = (double)(rank * m + k / N); /* input (y, x) */
        if (out[k].re != re || out[k].im != im) {
            if (bad++ < 3)
                fprintf(stderr, "[rank %d] %s round %d: element %ld (row %ld, col %ld) is (%g, %g), expected (%g, %g)\n",
                        rank, what, round, k, k / N, k % N, out[k].re, out[k].im, re, im);
        }
    }
    EXPECT(bad == 0, "%s round %d: %ld wrong elements", what, round, bad);
}

static void fill_sentinel(void) {
    for (long k = 0; k < m * N; k++) out[k].re = out[k].im = -1.0;
}

/* Whether this process maps sluice's ring memfd. */
static int has_hollow_mapping(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int found = 0;
    if (!f) return 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, "sluice-hollow")) found = 1;
    fclose(f);
    return found;
}

int main(int argc, char **argv) {
    MPI_CHECK(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    N = P == 3 ? 1026 : 1024;
    m = N / P;
    in = malloc(sizeof(cplx) * (size_t)(m * N));
    out = malloc(sizeof(cplx) * (size_t)(m * N));
    if (!in || !out) MPI_Abort(MPI_COMM_WORLD, 2);
    for (long k = 0; k < m * N; k++) {
        in[k].re = (double)(rank * m + k / N); /* global row */
        in[k].im = (double)(k % N);            /* global column */
    }
    MPI_Datatype v;
    MPI_CHECK(MPI_Type_vector((int)m, (int)m, (int)N, MPI_C_DOUBLE_COMPLEX, &v));
    MPI_CHECK(MPI_Type_create_resized(v, 0, (MPI_Aint)(m * (long)sizeof(cplx)), &send_block));
    MPI_CHECK(MPI_Type_free(&v));
    MPI_CHECK(MPI_Type_commit(&send_block));
    MPI_CHECK(MPI_Type_vector((int)m, 1, (int)N, MPI_C_DOUBLE_COMPLEX, &v));
    MPI_CHECK(MPI_Type_create_resized(v, 0, (MPI_Aint)sizeof(cplx), &recv_column));
    MPI_CHECK(MPI_Type_free(&v));
    MPI_CHECK(MPI_Type_commit(&recv_column));

    int scounts[16], sdispls[16], rcounts[16], rdispls[16];
    if (P > 16) MPI_Abort(MPI_COMM_WORLD, 2);
    for (int i = 0; i < P; i++) {
        scounts[i] = 1, sdispls[i] = i;               /* in units of the send block's extent */
        rcounts[i] = (int)m, rdispls[i] = i * (int)m; /* in columns */
    }
    for (int round = 0; round < 3; round++) {
        fill_sentinel();
        MPI_CHECK(MPI_Alltoall(in, 1, send_block, out, (int)m, recv_column, MPI_COMM_WORLD));
        check_output("alltoall", round);
        fill_sentinel();
        MPI_Request req;
        MPI_CHECK(MPI_Ialltoall(in, 1, send_block, out, (int)m, recv_column, MPI_COMM_WORLD, &req));
        MPI_CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        check_output("ialltoall", round);
        fill_sentinel();
        MPI_CHECK(MPI_Alltoallv(in, scounts, sdispls, send_block, out, rcounts, rdispls, recv_column, MPI_COMM_WORLD));
        check_output("alltoallv", round);
    }
    if (rank == 0) printf("hollow %d\n", has_hollow_mapping());
    int (*outstanding)(long *, long *) = (int (*)(long *, long *))dlsym(RTLD_DEFAULT, "sluice_p2p_outstanding");
    if (outstanding) {
        long reqs = -1, staging = -1;
        outstanding(&reqs, &staging);
        EXPECT(reqs == 0 && staging == 0, "leak: %ld requests and %ld staging buffers still held", reqs, staging);
    }
    MPI_CHECK(MPI_Type_free(&send_block));
    MPI_CHECK(MPI_Type_free(&recv_column));
    free(in);
    free(out);
    int rc = report_verdict("coll_transpose");
    MPI_CHECK(MPI_Finalize());
    return rc;
}
