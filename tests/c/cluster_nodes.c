/* Where the ranks of a job on the emulated cluster (scripts/cluster.sh) landed: every rank
 * prints "node RANK HOST NODE_SIZE" (NODE_SIZE from MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)),
 * then a pipelined-size message goes around the ring, rank 0 prints the fastest round trip
 * of one int to rank 1 ("rtt_us X"), and an Allreduce checks the sum; rank 0 prints
 * "PASS cluster_nodes". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, nsize, len;
    char host[MPI_MAX_PROCESSOR_NAME];
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(host, &len);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &nsize);
    printf("node %d %s %d\n", rank, host, nsize);
    fflush(stdout);

    /* 1 MiB of every other int (a vector: sluice's pipelined path) to the next rank. */
    const int n = 1 << 18;
    int *out = malloc(2 * n * sizeof(int)), *in = malloc(2 * n * sizeof(int));
    for (int i = 0; i < 2 * n; i++) { out[i] = rank * 7 + i; in[i] = -1; }
    MPI_Datatype every_other;
    MPI_Type_vector(n, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size, bad = 0;
    MPI_Request reqs[2];
    MPI_Irecv(in, 1, every_other, prev, 5, MPI_COMM_WORLD, &reqs[0]);
    MPI_Isend(out, 1, every_other, next, 5, MPI_COMM_WORLD, &reqs[1]);
    MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
    for (int i = 0; i < 2 * n; i++) bad += in[i] != (i % 2 ? -1 : prev * 7 + i);
    /* The link's round trip as the MPI sees it: rank 0 and rank 1 (on different nodes), the
     * fastest of 100 round trips of one int. */
    if (size > 1 && rank < 2) {
        double best = 1e9;
        int token = 0;
        for (int i = 0; i < 100; i++) {
            double t = MPI_Wtime();
            if (rank == 0) {
                MPI_Send(&token, 1, MPI_INT, 1, 9, MPI_COMM_WORLD);
                MPI_Recv(&token, 1, MPI_INT, 1, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(&token, 1, MPI_INT, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(&token, 1, MPI_INT, 0, 9, MPI_COMM_WORLD);
            }
            t = MPI_Wtime() - t;
            if (t < best) best = t;
        }
        if (rank == 0) printf("rtt_us %.1f\n", best * 1e6);
    }
    int sum = 0, one = 1, allbad = 0;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&bad, &allbad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        if (sum == size && allbad == 0) printf("PASS cluster_nodes\n");
        else printf("FAIL cluster_nodes: sum %d of %d, %d wrong ints\n", sum, size, allbad);
    }
    MPI_Type_free(&every_other);
    MPI_Comm_free(&node);
    free(out);
    free(in);
    MPI_Finalize();
    return 0;
}
