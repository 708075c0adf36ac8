/* A type per message, as BLACS lives: every thread of every rank builds, commits, uses and frees
 * fresh datatypes for each message. The constructions repeat (the same shapes on every thread
 * and rank, so that their handles share sluice's compiled forms, datatype::form_cache), and
 * neighbouring ones differ by one argument only (block length, stride, resized extent), so a
 * form served for the wrong construction would put data in the wrong place. Kinds:
 *
 *   0  vector(3, 3 or 4, 100, MPI_DOUBLE)              BLACS's submatrix
 *   1  vector(3, 3, 100 or 101, MPI_DOUBLE)            the same with another stride
 *   2  resized(vector(3, 3, 100), 0, 2400 or 2464) x 2 another extent
 *   3  struct {int; double; char[5]} resized to 24 x 4 (sender) / its MPI_Type_dup (receiver,
 *      the original freed before the receive)
 *   4  vector(2, 40000, 80000, MPI_DOUBLE)             640 KB of large blocks: pipelined or left
 *      to the MPI's engine, received on MPICH through a byte twin of the shared form
 *   5  vector(20000 or 20001, 2, 4, MPI_DOUBLE)        320 KB of 16-byte blocks: pipelined
 *
 * Blocks of kinds 0-3 and 5 are under 64 bytes, so sluice's engine moves them on both MPIs
 * (larger blocks go to the MPI's engine: SLUICE_P2P_MPI_BLOCK).
 * Each message goes to the partner rank (rank ^ 1) with MPI_Sendrecv and is received into a
 * type built separately by the receiver; every byte of the receive buffer (gaps included) must
 * equal PMPI_Pack of the sender's data unpacked by PMPI_Unpack into the same sentinel, and
 * MPI_Get_count must give the count. THREADS threads with MPI_THREAD_MULTIPLE (one thread
 * without it). Needs an even number of ranks. Prints "PASS type_per_message". */
#include <pthread.h>
#include <string.h>
#include "check.h"

#define THREADS 4
#define ITERS 40
#define KINDS 6
#define MAXBYTES (2 * 80000 * 8)

static int rank, nthreads = THREADS;
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;

/* The type of kind `kind` at iteration `i` and its count; `dup` makes the receiver's kind 3 a
 * duplicate whose original is freed at once. */
static int build(int kind, int i, int dup, MPI_Datatype *t) {
    MPI_Datatype tmp;
    int count = 1;
    switch (kind) {
    case 0: MPI_CHECK(MPI_Type_vector(3, 3 + (i & 1), 100, MPI_DOUBLE, t)); break;
    case 1: MPI_CHECK(MPI_Type_vector(3, 3, 100 + (i & 1), MPI_DOUBLE, t)); break;
    case 2:
        MPI_CHECK(MPI_Type_vector(3, 3, 100, MPI_DOUBLE, &tmp));
        MPI_CHECK(MPI_Type_create_resized(tmp, 0, 2400 + (i & 1) * 64, t));
        MPI_CHECK(MPI_Type_free(&tmp));
        count = 2;
        break;
    case 3: {
        int bl[3] = {1, 1, 5};
        MPI_Aint d[3] = {0, 8, 16};
        MPI_Datatype ty[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR}, st;
        MPI_CHECK(MPI_Type_create_struct(3, bl, d, ty, &st));
        MPI_CHECK(MPI_Type_create_resized(st, 0, 24, t));
        MPI_CHECK(MPI_Type_free(&st));
        count = 4;
        break;
    }
    case 4: MPI_CHECK(MPI_Type_vector(2, 40000, 80000, MPI_DOUBLE, t)); break;
    default: MPI_CHECK(MPI_Type_vector(20000 + (i & 1), 2, 4, MPI_DOUBLE, t)); break;
    }
    MPI_CHECK(MPI_Type_commit(t));
    if (dup && kind == 3) {
        MPI_CHECK(MPI_Type_dup(*t, &tmp));
        MPI_CHECK(MPI_Type_free(t));
        *t = tmp;
    }
    return count;
}

static void fill(unsigned char *p, size_t n, unsigned seed) {
    for (size_t j = 0; j < n; j++) p[j] = (unsigned char)((j * 131 + seed * 7919) >> 3);
}

static void fail(const char *what, int tid, int i, int kind) {
    pthread_mutex_lock(&fail_lock);
    EXPECT(0, "rank %d thread %d iteration %d kind %d: %s", rank, tid, i, kind, what);
    pthread_mutex_unlock(&fail_lock);
}

static void *run(void *arg) {
    int tid = (int)(long)arg, partner = rank ^ 1;
    unsigned char *sbuf = malloc(MAXBYTES), *rbuf = malloc(MAXBYTES), *want = malloc(MAXBYTES), *packed = malloc(MAXBYTES);
    for (int i = 0; i < ITERS; i++) {
        int kind = (i + tid) % KINDS;
        MPI_Datatype st, rt;
        int n = build(kind, i, 0, &st), m = build(kind, i, 1, &rt);
        MPI_Aint lb, extent;
        MPI_CHECK(MPI_Type_get_extent(rt, &lb, &extent));
        size_t span = (size_t)extent * (size_t)m;
        fill(sbuf, span, (unsigned)(rank * 1000 + tid * 100 + i));
        fill(rbuf, span, 7u + (unsigned)i); /* the sentinel the gaps must keep */
        memcpy(want, rbuf, span);
        MPI_Status status;
        MPI_CHECK(MPI_Sendrecv(sbuf, n, st, partner, tid, rbuf, m, rt, partner, tid, MPI_COMM_WORLD, &status));
        /* The partner filled its send buffer with its own seed: the expected bytes are its data
         * through the MPI's own engine. */
        fill(sbuf, span, (unsigned)(partner * 1000 + tid * 100 + i));
        int pos = 0;
        MPI_CHECK(PMPI_Pack(sbuf, n, st, packed, MAXBYTES, &pos, MPI_COMM_WORLD));
        int at = 0;
        MPI_CHECK(PMPI_Unpack(packed, pos, &at, want, m, rt, MPI_COMM_WORLD));
        if (memcmp(rbuf, want, span) != 0) fail("received bytes differ from the MPI's own engine", tid, i, kind);
        int got = -1;
        MPI_CHECK(MPI_Get_count(&status, rt, &got));
        if (got != m || status.MPI_SOURCE != partner || status.MPI_TAG != tid) fail("status", tid, i, kind);
        MPI_CHECK(MPI_Type_free(&st));
        MPI_CHECK(MPI_Type_free(&rt));
    }
    free(sbuf), free(rbuf), free(want), free(packed);
    return NULL;
}

int main(int argc, char **argv) {
    int provided, size;
    MPI_CHECK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size % 2) {
        if (rank == 0) fprintf(stderr, "type_per_message: needs an even number of ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (provided < MPI_THREAD_MULTIPLE) nthreads = 1;
    pthread_t th[THREADS];
    for (int t = 0; t < nthreads; t++) pthread_create(&th[t], NULL, run, (void *)(long)t);
    for (int t = 0; t < nthreads; t++) pthread_join(th[t], NULL);
    if (rank == 0) printf("type_per_message: %d threads x %d messages per rank\n", nthreads, ITERS);
    int rc = report_verdict("type_per_message");
    MPI_Finalize();
    return rc;
}
