/* A multi-hop copy against its stages alone (issue 22's pipelining target: a multi-hop transfer
 * reaches >= 90% of its slowest channel's throughput). The copy: a file holding every other
 * block of 1024 ints (the source layout, a strided vector over MIB x 2 MiB of file) into
 * contiguous memory: DiskRead of each block's window, then Memcpy converting it. Its stages
 * alone, measured with the same channels in the same run:
 *   read:    the same file bytes (MIB x 2 MiB, contiguous) into memory: DiskRead only;
 *   convert: the same strided layout from memory into contiguous memory: Memcpy only.
 * Trials interleave the three; prints the plans, then per trial the three times, and the medians
 * with slowest-stage / multi-hop (1.0: the copy runs at its slowest channel's speed) and
 * (read + convert) / multi-hop (how much of the two stages overlaps). Checks every byte.
 *
 * Build: mpicc -I include bench/runtime/copy_stages.c -L target/openmpi/release -lsluice -o copy_stages
 * Run:   mpirun -np 1 ./copy_stages [MiB of data] [trials]   (defaults 8 and 21) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sluice.h"

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    double *c = malloc(n * sizeof *c);
    memcpy(c, v, n * sizeof *c);
    qsort(c, n, sizeof *c, cmp);
    double m = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
    free(c);
    return m;
}

/* One copy, timed; 0 on failure. */
static double timed(sluice_place_t s, sluice_place_t d, int *ok) {
    sluice_event_t ev;
    double t0 = MPI_Wtime();
    if (sluice_copy(&s, &d, 0, &ev) != SLUICE_SUCCESS || sluice_event_wait(&ev) != SLUICE_SUCCESS) *ok = 0;
    return MPI_Wtime() - t0;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    long mib = argc > 1 ? atol(argv[1]) : 8;
    int trials = argc > 2 ? atoi(argv[2]) : 21;
    if (trials > 256) trials = 256;
    long ints = mib * (1 << 20) / 4; /* ints of data */
    MPI_Datatype strided;
    MPI_Type_vector((int)(ints / 1024), 1024, 2048, MPI_INT, &strided);
    MPI_Type_commit(&strided);
    int *src = malloc(ints * 8), *dst = malloc(ints * 8);
    for (long i = 0; i < ints * 2; i++) src[i] = (int)(i * 7 + 3);
    char path[] = "/tmp/sluice-stages-XXXXXX";
    int fd = mkstemp(path);
    unlink(path);
    if (fd < 0 || pwrite(fd, src, ints * 8, 0) != (ssize_t)(ints * 8)) {
        perror("temporary file");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    sluice_place_t multi_s = {SLUICE_PLACE_FILE, NULL, fd, 0, 1, strided};
    sluice_place_t multi_d = {SLUICE_PLACE_HOST, dst, -1, 0, ints, MPI_INT};
    sluice_place_t read_s = {SLUICE_PLACE_FILE, NULL, fd, 0, 2 * ints, MPI_INT};
    sluice_place_t read_d = {SLUICE_PLACE_HOST, dst, -1, 0, 2 * ints, MPI_INT};
    sluice_place_t conv_s = {SLUICE_PLACE_HOST, src, -1, 0, 1, strided};
    sluice_place_t conv_d = {SLUICE_PLACE_HOST, dst, -1, 0, ints, MPI_INT};
    const char *names[3] = {"multi-hop", "read", "convert"};
    sluice_place_t ps[3][2] = {{multi_s, multi_d}, {read_s, read_d}, {conv_s, conv_d}};
    char text[4096];
    for (int k = 0; k < 3; k++)
        if (sluice_plan_explain(&ps[k][0], &ps[k][1], text, sizeof text) > 0) printf("%s: %s", names[k], text);
    int ok = 1;
    double t[3][256];
    for (int w = 0; w < 3; w++) /* warm-up: page cache, buffers, paths */
        for (int k = 0; k < 3; k++) timed(ps[k][0], ps[k][1], &ok);
    /* STAGES_ONLY=0, 1 or 2: time that one alone (its SLUICE_STATS rows are then its own) */
    const char *only = getenv("STAGES_ONLY");
    printf("trial,multi_ms,read_ms,convert_ms\n");
    for (int r = 0; r < trials; r++) {
        for (int k = 0; k < 3; k++) {
            int kk = (k + r) % 3; /* rotate the order */
            if (only && kk != atoi(only)) {
                t[kk][r] = 0;
                continue;
            }
            memset(dst, 0, ints * 8);
            t[kk][r] = timed(ps[kk][0], ps[kk][1], &ok);
            if (kk == 1) {
                for (long i = 0; i < 2 * ints; i++) ok &= dst[i] == src[i];
            } else {
                for (long i = 0; i < ints; i++) ok &= dst[i] == src[(i / 1024) * 2048 + i % 1024];
            }
        }
        printf("%d,%.4f,%.4f,%.4f\n", r, t[0][r] * 1e3, t[1][r] * 1e3, t[2][r] * 1e3);
    }
    double m = median(t[0], trials), rd = median(t[1], trials), cv = median(t[2], trials);
    double slow = rd > cv ? rd : cv;
    printf("stages: %ld MiB of data, median of %d trials: multi-hop %.3f ms, read alone %.3f ms, convert alone %.3f ms\n", mib, trials,
           m * 1e3, rd * 1e3, cv * 1e3);
    printf("stages: slowest stage / multi-hop = %.2f (1.00: the copy runs at its slowest channel's speed); "
           "(read + convert) / multi-hop = %.2f\n",
           slow / m, (rd + cv) / m);
    printf("stages: %s\n", ok ? "OK" : "FAILED");
    free(src);
    free(dst);
    close(fd);
    MPI_Type_free(&strided);
    MPI_Finalize();
    return ok ? 0 : 1;
}
