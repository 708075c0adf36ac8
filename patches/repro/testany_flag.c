/* MPI_Testany must set *flag: 0 when nothing completed. Under sluice, while any pipelined
 * receive is tracked (here: a large non-contiguous Irecv nobody has sent to yet), a Testany over
 * untracked requests that completes nothing leaves *flag as it was. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, fails = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int peer = 1 - rank;
    MPI_Datatype vec;
    MPI_Type_vector(65536, 1, 2, MPI_DOUBLE, &vec); /* 512 KiB packed: pipelined */
    MPI_Type_commit(&vec);
    double *big = calloc(2 * 65536, sizeof(double));
    int small = 0, idx = -7, flag;
    MPI_Request big_rq, q[1];
    MPI_Irecv(big, 1, vec, peer, 1, MPI_COMM_WORLD, &big_rq); /* tracked by sluice */
    MPI_Irecv(&small, 1, MPI_INT, peer, 2, MPI_COMM_WORLD, &q[0]); /* not yet sent */
    flag = 1; /* e.g. left over from an earlier call */
    MPI_Testany(1, q, &idx, &flag, MPI_STATUS_IGNORE);
    if (flag != 0) { printf("rank %d: MPI_Testany: flag %d index %d with nothing complete\n", rank, flag, idx); fails++; }
    MPI_Barrier(MPI_COMM_WORLD);
    int one = 1;
    MPI_Send(&one, 1, MPI_INT, peer, 2, MPI_COMM_WORLD);
    MPI_Send(big, 1, vec, peer, 1, MPI_COMM_WORLD);
    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    MPI_Wait(&big_rq, MPI_STATUS_IGNORE);
    MPI_Type_free(&vec);
    int total;
    MPI_Allreduce(&fails, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf(total ? "testany_flag: FAIL\n" : "testany_flag: OK\n");
    MPI_Finalize();
    return total != 0;
}
