/* A ping-ping of one MPI_INT (issue 21's "possible hang" at minimum thresholds on MPICH): each
 * rank sends to rank ^ 1 and then receives, 2000 rounds alternating Send+Recv and Sendrecv; every
 * value and count is checked on every rank; rank 0 prints PASS or FAIL. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int peer = rank ^ 1, bad = 0;
    for (int i = 0; peer < size && i < 2000; i++) {
        int s = rank * 100000 + i, r = -1, c = -1;
        MPI_Status st;
        if (i % 2) {
            MPI_Sendrecv(&s, 1, MPI_INT, peer, i, &r, 1, MPI_INT, peer, i, MPI_COMM_WORLD, &st);
        } else {
            MPI_Send(&s, 1, MPI_INT, peer, i, MPI_COMM_WORLD);
            MPI_Recv(&r, 1, MPI_INT, peer, i, MPI_COMM_WORLD, &st);
        }
        MPI_Get_count(&st, MPI_INT, &c);
        if (r != peer * 100000 + i || c != 1 || st.MPI_SOURCE != peer || st.MPI_TAG != i) bad++;
    }
    int total = 0;
    MPI_Allreduce(&bad, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("%s p2p_pingping (%d bad rounds)\n", total ? "FAIL" : "PASS", total);
    MPI_Finalize();
    return total != 0;
}
