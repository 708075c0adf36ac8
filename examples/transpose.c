/* Out-of-core transpose with sluice_copy: a matrix stored row by row in a file lands in memory
 * column by column, in one call, without a staging copy of the whole matrix in the program.
 *
 * Each rank writes its own N x M matrix of doubles (row-major) to a temporary file, then copies
 * it into B, the M x N transpose (B[j][i] = A[i][j]), twice:
 *   - by hand: pread the whole file into a buffer, then a transposing loop;
 *   - with sluice_copy: source = the file, N*M MPI_DOUBLEs; destination = memory, N elements of
 *     a column type (M doubles N apart, resized to one double), so element i is column i of B.
 * It prints the plan sluice chose and both times, and checks every element.
 *
 * Build: mpicc -I include examples/transpose.c -L target/<mpi>/release -lsluice -o transpose
 * Run:   mpirun -np 2 ./transpose [N M]    (LD_PRELOAD=libsluice.so works as well) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sluice.h"

static double now(void) { return MPI_Wtime(); }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    long n = argc > 2 ? atol(argv[1]) : 1024, m = argc > 2 ? atol(argv[2]) : 768;

    char path[] = "/tmp/sluice-transpose-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) { perror("mkstemp"); MPI_Abort(MPI_COMM_WORLD, 1); }
    unlink(path);
    double *a = malloc(sizeof(double) * n * m), *b = malloc(sizeof(double) * n * m), *bounce = malloc(sizeof(double) * n * m);
    for (long i = 0; i < n; i++)
        for (long j = 0; j < m; j++) a[i * m + j] = rank * 1e9 + i * 1e4 + j;
    if (pwrite(fd, a, sizeof(double) * n * m, 0) != (ssize_t)(sizeof(double) * n * m)) { perror("pwrite"); MPI_Abort(MPI_COMM_WORLD, 1); }

    /* By hand. */
    memset(b, 0, sizeof(double) * n * m);
    double t0 = now();
    if (pread(fd, bounce, sizeof(double) * n * m, 0) != (ssize_t)(sizeof(double) * n * m)) { perror("pread"); MPI_Abort(MPI_COMM_WORLD, 1); }
    for (long i = 0; i < n; i++)
        for (long j = 0; j < m; j++) b[j * n + i] = bounce[i * m + j];
    double t_hand = now() - t0;

    /* With sluice_copy. */
    MPI_Datatype col, column;
    MPI_Type_vector((int)m, 1, (int)n, MPI_DOUBLE, &col);
    MPI_Type_create_resized(col, 0, sizeof(double), &column);
    MPI_Type_commit(&column);
    sluice_place_t src = {SLUICE_PLACE_FILE, NULL, fd, 0, n * m, MPI_DOUBLE};
    sluice_place_t dst = {SLUICE_PLACE_HOST, b, -1, 0, n, column};
    char plan[2048];
    int len = sluice_plan_explain(&src, &dst, plan, sizeof plan);
    if (rank == 0 && len > 0) printf("%s", plan);
    memset(b, 0, sizeof(double) * n * m);
    sluice_event_t ev;
    t0 = now();
    int rc = sluice_copy(&src, &dst, 0, &ev);
    if (rc == SLUICE_SUCCESS) rc = sluice_event_wait(&ev);
    double t_sluice = now() - t0;

    long bad = 0;
    for (long i = 0; i < n && rc == SLUICE_SUCCESS; i++)
        for (long j = 0; j < m; j++) bad += b[j * n + i] != a[i * m + j];
    int ok = rc == SLUICE_SUCCESS && bad == 0, all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (!ok) fprintf(stderr, "rank %d: sluice_copy returned %d, %ld elements wrong\n", rank, rc, bad);
    if (rank == 0) {
        printf("transpose %ld x %ld doubles (%.1f MiB) file -> memory: by hand (pread + loop) %.2f ms, sluice_copy %.2f ms\n", n, m,
               n * m * 8.0 / (1 << 20), t_hand * 1e3, t_sluice * 1e3);
        printf("transpose: %s\n", all_ok ? "OK" : "FAILED");
    }
    MPI_Type_free(&col);
    MPI_Type_free(&column);
    close(fd);
    free(a);
    free(b);
    free(bounce);
    MPI_Finalize();
    return all_ok ? 0 : 1;
}
