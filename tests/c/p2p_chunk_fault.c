/* A pipelined receive whose chunk fails in the MPI (SLUICE_TEST_CHUNK_FAULT posts one chunk
 * receive a byte short, which the MPI fails with a truncation) completes with an error through
 * the communicator's handler (MPI_ERRORS_RETURN here) and its status, and nothing hangs: the
 * rest of the stream is taken, so the messages after it still match and arrive intact.
 * EXPECT_FAULT=R: the large receive of round R (1: blocking, 2: nonblocking, 3: blocking) must
 * fail; unset: every receive must succeed (the bare MPI, or sluice without the fault). Each
 * round's 1 MiB message travels as M0 and 6 chunks at the default settings. Rank 0 prints
 * "PASS p2p_chunk_fault". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define N (1 << 18) /* 262144 ints at stride 2: 1 MiB packed, pipelined */

static void fill(int *b, int seed) {
    for (int i = 0; i < 2 * N; i++) b[i] = seed * 1000003 + i;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, fails = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const char *e = getenv("EXPECT_FAULT");
    int expect = e ? atoi(e) : 0; /* 1-based round whose receive must fail; 0: none */
    MPI_Datatype v;
    MPI_Type_vector(N, 1, 2, MPI_INT, &v);
    MPI_Type_commit(&v);
    int *buf = malloc(2 * N * sizeof(int));
    int peer = rank ^ 1;
    if (peer < size) {
        for (int round = 0; round < 3; round++) {
            if (rank % 2 == 0) {
                fill(buf, round);
                MPI_Send(buf, 1, v, peer, round, MPI_COMM_WORLD);
                int tail = 100 + round;
                MPI_Send(&tail, 1, MPI_INT, peer, 50 + round, MPI_COMM_WORLD);
            } else {
                for (int i = 0; i < 2 * N; i++) buf[i] = -1;
                MPI_Status st;
                st.MPI_ERROR = -7;
                int rc;
                if (round == 1) {
                    /* Nonblocking: the error shows in Wait's return code. */
                    MPI_Request r;
                    MPI_Irecv(buf, 1, v, peer, round, MPI_COMM_WORLD, &r);
                    rc = MPI_Wait(&r, &st);
                } else {
                    rc = MPI_Recv(buf, 1, v, peer, round, MPI_COMM_WORLD, &st);
                }
                int want_fail = expect == round + 1;
                if (want_fail) {
                    int cls = MPI_SUCCESS;
                    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
                    if (rc == MPI_SUCCESS) {
                        printf("FAIL round %d: the receive succeeded although a chunk failed\n", round);
                        fails++;
                    } else {
                        printf("round %d: receive failed as expected, class %d\n", round, cls);
                    }
                } else if (rc != MPI_SUCCESS) {
                    printf("FAIL round %d: receive returned %d\n", round, rc);
                    fails++;
                } else {
                    int bad = 0;
                    for (int i = 0; i < 2 * N; i++) bad += buf[i] != (i % 2 ? -1 : round * 1000003 + i);
                    if (bad) {
                        printf("FAIL round %d: %d wrong ints\n", round, bad);
                        fails++;
                    }
                }
                int tail = 0;
                rc = MPI_Recv(&tail, 1, MPI_INT, peer, 50 + round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                if (rc != MPI_SUCCESS || tail != 100 + round) {
                    printf("FAIL round %d: the message after it: rc %d, value %d\n", round, rc, tail);
                    fails++;
                }
            }
        }
    }
    int all = 0;
    MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf(all ? "FAIL p2p_chunk_fault\n" : "PASS p2p_chunk_fault\n");
    MPI_Type_free(&v);
    free(buf);
    MPI_Finalize();
    return 0;
}
