/* Exactly ROUNDS blocking sends and ROUNDS blocking receives per rank around a ring, so the
 * test harness can assert the exact p2p call count sluice reports (2 * ROUNDS * ranks). */
#include "check.h"
#define ROUNDS 25

int main(int argc, char **argv) {
    MPI_CHECK(MPI_Init(&argc, &argv));
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (int r = 0; r < ROUNDS; r++) {
        double out[4] = {rank, r, rank * r, -1}, in[4] = {0};
        MPI_Status st;
        if (rank % 2 == 0) {
            MPI_CHECK(MPI_Send(out, 4, MPI_DOUBLE, right, r, MPI_COMM_WORLD));
            MPI_CHECK(MPI_Recv(in, 4, MPI_DOUBLE, left, r, MPI_COMM_WORLD, &st));
        } else {
            MPI_CHECK(MPI_Recv(in, 4, MPI_DOUBLE, left, r, MPI_COMM_WORLD, &st));
            MPI_CHECK(MPI_Send(out, 4, MPI_DOUBLE, right, r, MPI_COMM_WORLD));
        }
        EXPECT(in[0] == left && in[1] == r && in[2] == left * r, "round %d got %g %g %g", r, in[0], in[1], in[2]);
        EXPECT(st.MPI_SOURCE == left && st.MPI_TAG == r, "status %d/%d", st.MPI_SOURCE, st.MPI_TAG);
    }
    int rc = report_verdict("ring");
    MPI_CHECK(MPI_Finalize());
    return rc;
}
