/* A minimal third-party PMPI tool: counts MPI_Send calls and reports them at MPI_Finalize.
 * Preloaded after sluice (LD_PRELOAD=libsluice.so:libcountertool.so) it must still see every
 * send the application made, because sluice forwards to the next definition. */
#include <mpi.h>
#include <stdio.h>

static long sends = 0;

int MPI_Send(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm) {
    sends++;
    return PMPI_Send(buf, count, dt, dest, tag, comm);
}

int MPI_Finalize(void) {
    int rank;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    printf("countertool: rank %d saw %ld MPI_Send\n", rank, sends);
    fflush(stdout);
    return PMPI_Finalize();
}
