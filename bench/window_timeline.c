/* When does each message of a window arrive? (issue 23: why a window of staged messages could
 * not be unpacked while it was on the wire.) Rank 0 posts a window of W MPI_Isend of one
 * vect:8:4 element of 64 KiB packed (vector(8192, 2, 4, MPI_FLOAT)), then MPI_Waitall; rank 1
 * posts the W MPI_Irecv and completes them in order with MPI_Wait, noting the time of each.
 * "p" runs through the PMPI_* names (the bare MPI even with libsluice.so preloaded), "s"
 * through the MPI_* names (sluice when preloaded). Prints the last repetition's arrival times
 * (every 8th message) and the window's best and mean time over 12 repetitions.
 *
 *   mpicc -O2 -o window_timeline bench/window_timeline.c
 *   scripts/cluster.sh up 2 --boot-ids --rate 1gbit --delay 50us
 *   scripts/cluster.sh run -- mpiexec.mpich -np 2 -env LD_PRELOAD $PWD/target/mpich/release/libsluice.so ./window_timeline s
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define W 64
#define REPS 12

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    int bytes = 65536, blocks = bytes / 8, bare = argc > 1 && argv[1][0] == 'p';
    MPI_Datatype t;
    MPI_Type_vector(blocks, 2, 4, MPI_FLOAT, &t);
    MPI_Type_commit(&t);
    size_t ext = (size_t)blocks * 16;
    char *buf = malloc(ext * W);
    memset(buf, 1, ext * W);
    double best = 1e9, sum = 0, arr[W];
    MPI_Request q[W];
    for (int rep = 0; rep < REPS; rep++) {
        PMPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (r == 0) {
            for (int i = 0; i < W; i++)
                (bare ? PMPI_Isend : MPI_Isend)(buf, 1, t, 1, 7, MPI_COMM_WORLD, &q[i]);
            (bare ? PMPI_Waitall : MPI_Waitall)(W, q, MPI_STATUSES_IGNORE);
            char a;
            PMPI_Recv(&a, 1, MPI_BYTE, 1, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            double dt = MPI_Wtime() - t0;
            sum += dt;
            if (dt < best) best = dt;
        } else if (r == 1) {
            for (int i = 0; i < W; i++)
                (bare ? PMPI_Irecv : MPI_Irecv)(buf + i * ext, 1, t, 0, 7, MPI_COMM_WORLD, &q[i]);
            for (int i = 0; i < W; i++) {
                (bare ? PMPI_Wait : MPI_Wait)(&q[i], MPI_STATUS_IGNORE);
                arr[i] = MPI_Wtime() - t0;
            }
            char a = 0;
            PMPI_Send(&a, 1, MPI_BYTE, 0, 8, MPI_COMM_WORLD);
        }
    }
    if (r == 1) {
        printf("%s arrivals (us):", bare ? "bare" : "sluice");
        for (int i = 0; i < W; i += 8) printf(" %.0f", arr[i] * 1e6);
        printf(" last %.0f\n", arr[W - 1] * 1e6);
    }
    if (r == 0) printf("%s window: best %.0f us, mean %.0f us\n", bare ? "bare" : "sluice", best * 1e6, sum / REPS * 1e6);
    MPI_Type_free(&t);
    free(buf);
    MPI_Finalize();
    return 0;
}
