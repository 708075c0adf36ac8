/* Priorities in sluice_copy: a high-priority copy started while eight low-priority copies occupy
 * the same channels. Each trial starts the eight low copies, then the ninth, and times the ninth
 * from its start to its completion: once with priority 0 like the others (FIFO order: its
 * requests queue behind theirs) and once with priority 10 (its requests go ahead of queued ones).
 * Two paths: direct (memory -> memory, converting a strided layout: one Memcpy hop) and
 * multi-hop (file -> memory, converting: DiskRead then Memcpy).
 *
 * Prints, per path, the median time of the ninth copy under FIFO, with priority, and alone (no
 * other copy: the floor), over TRIALS trials, and how much sooner it completes with priority;
 * checks every byte of every copy. With nine equal copies on one channel FIFO takes about nine
 * times the copy alone, so "sooner" cannot exceed 1 - 1/9 = 89% by construction; with
 * background copies B times the ninth's size (the third argument, PRIORITY_BACKGROUND) the bound
 * is 1 - 1/(8B + 1): bulk transfers in the background and a smaller urgent one, as when an
 * application's next step waits on one block while checkpoints stream out.
 *
 * Build: mpicc -I include examples/priority.c -L target/<mpi>/release -lsluice -o priority
 * Run:   mpirun -np 1 ./priority [MiB of the ninth copy] [trials] [background factor]
 *        (or PRIORITY_MIB, PRIORITY_TRIALS, PRIORITY_BACKGROUND) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sluice.h"

#define COPIES 9

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char *em = getenv("PRIORITY_MIB"), *et = getenv("PRIORITY_TRIALS"), *eb = getenv("PRIORITY_BACKGROUND");
    long mib = argc > 1 ? atol(argv[1]) : em ? atol(em) : 8;
    int trials = argc > 2 ? atoi(argv[2]) : et ? atoi(et) : 5;
    long bg = argc > 3 ? atol(argv[3]) : eb ? atol(eb) : 1;
    if (mib < 1 || bg < 1 || trials < 1) {
        fprintf(stderr, "priority: MiB, trials and background factor must be positive\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long ints[COPIES]; /* ints of data per copy: the ninth's, and B times that for the others */
    for (int c = 0; c < COPIES; c++) ints[c] = mib * (1 << 20) / 4 * (c == COPIES - 1 ? 1 : bg);

    /* The source layout: every other int (a strided vector), so each copy converts. */
    MPI_Datatype strided[COPIES];
    int *src[COPIES], *dst[COPIES], fds[COPIES];
    for (int c = 0; c < COPIES; c++) {
        MPI_Type_vector((int)(ints[c] / 1024), 1024, 2048, MPI_INT, &strided[c]);
        MPI_Type_commit(&strided[c]);
        src[c] = malloc(ints[c] * 8);
        dst[c] = malloc(ints[c] * 4);
        for (long i = 0; i < ints[c] * 2; i++) src[c][i] = (int)(i * 7 + c);
        memset(dst[c], 0, ints[c] * 4);
        char path[] = "/tmp/sluice-priority-XXXXXX";
        fds[c] = mkstemp(path);
        unlink(path);
        if (fds[c] < 0 || pwrite(fds[c], src[c], ints[c] * 8, 0) != (ssize_t)(ints[c] * 8)) {
            perror("temporary file");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    if (rank == 0) { /* the two paths, as planned */
        char text[2048];
        const int u = COPIES - 1; /* the ninth copy's plans */
        sluice_place_t s = {SLUICE_PLACE_HOST, src[u], -1, 0, 1, strided[u]}, d = {SLUICE_PLACE_HOST, dst[u], -1, 0, ints[u], MPI_INT};
        if (sluice_plan_explain(&s, &d, text, sizeof text) > 0) printf("direct: %s", text);
        s = (sluice_place_t){SLUICE_PLACE_FILE, NULL, fds[u], 0, 1, strided[u]};
        if (sluice_plan_explain(&s, &d, text, sizeof text) > 0) printf("multi-hop: %s", text);
    }
    int ok = 1;
    const char *names[2] = {"direct (memory -> memory)", "multi-hop (file -> memory)"};
    double result[2][3];
    for (int path = 0; path < 2; path++) {
        for (int prio = 0; prio < 3; prio++) { /* FIFO, priority, the ninth copy alone */
            double t[64];
            for (int k = 0; k < trials && k < 64; k++) {
                sluice_event_t ev[COPIES];
                double t0 = 0;
                for (int c = prio == 2 ? COPIES - 1 : 0; c < COPIES; c++) {
                    sluice_place_t s = {SLUICE_PLACE_HOST, src[c], -1, 0, 1, strided[c]};
                    if (path == 1) s = (sluice_place_t){SLUICE_PLACE_FILE, NULL, fds[c], 0, 1, strided[c]};
                    sluice_place_t d = {SLUICE_PLACE_HOST, dst[c], -1, 0, ints[c], MPI_INT};
                    if (c == COPIES - 1) t0 = MPI_Wtime();
                    if (sluice_copy(&s, &d, c == COPIES - 1 && prio ? 10 : 0, &ev[c]) != SLUICE_SUCCESS) ok = 0;
                }
                ok &= sluice_event_wait(&ev[COPIES - 1]) == SLUICE_SUCCESS;
                t[k] = MPI_Wtime() - t0;
                for (int c = 0; c < COPIES - 1 && prio < 2; c++) ok &= sluice_event_wait(&ev[c]) == SLUICE_SUCCESS;
                for (int c = prio == 2 ? COPIES - 1 : 0; c < COPIES; c++) {
                    for (long i = 0; i < ints[c]; i++) ok &= dst[c][i] == src[c][(i / 1024) * 2048 + i % 1024];
                    memset(dst[c], 0, ints[c] * 4);
                }
            }
            result[path][prio] = median(t, trials < 64 ? trials : 64);
        }
    }
    int all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("priority: 8 copies of %ld MiB, then a ninth of %ld MiB, timed, median of %d trials\n", mib * bg, mib, trials);
        printf("%-28s %12s %12s %10s %10s\n", "path", "FIFO ms", "priority ms", "sooner", "alone ms");
        for (int p = 0; p < 2; p++)
            printf("%-28s %12.2f %12.2f %9.0f%% %10.2f\n", names[p], result[p][0] * 1e3, result[p][1] * 1e3,
                   100 * (1 - result[p][1] / result[p][0]), result[p][2] * 1e3);
        printf("priority: %s\n", all_ok ? "OK" : "FAILED");
    }
    for (int c = 0; c < COPIES; c++) {
        free(src[c]);
        free(dst[c]);
        close(fds[c]);
        MPI_Type_free(&strided[c]);
    }
    MPI_Finalize();
    return all_ok ? 0 : 1;
}
