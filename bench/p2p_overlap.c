/* Communication/computation overlap of a pipelined message (scripts/bench-overlap.sh).
 *
 * Ranks 0 and 1: rank 0 Isends a strided vector of doubles (every other one; N packed bytes),
 * rank 1 Irecvs it. Per size, rounds alternate two patterns:
 *   comm:    post, Wait at once                    -> T_comm
 *   overlap: post, compute C = T_comm without MPI calls, Wait -> T_total
 * (both ranks compute, so neither side's MPI calls move the message). Overlap is the share of
 * the shorter of communication and computation that was hidden:
 *   (T_comm + C - T_total) / min(T_comm, C), clipped to [0, 1].
 * Rank 1's clock; medians over ROUNDS rounds after a warm-up, with the interquartile range.
 * Output on rank 0: "overlap <bytes> <t_comm_us> <t_total_us> <c_us> <overlap> <q1> <q3>".
 *
 * Usage: p2p_overlap ROUNDS
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double spin(double seconds) {
    double t0 = MPI_Wtime(), x = 0;
    while (MPI_Wtime() - t0 < seconds) x += 1e-9; /* compute: no MPI call but the clock */
    return x;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double quantile(double *v, int n, double q) {
    qsort(v, n, sizeof *v, cmp);
    return v[(int)(q * (n - 1) + 0.5)];
}

/* One round of `pattern` (0: comm, 1: overlap with `c` s of compute); returns its time. */
static double round_once(int rank, double *buf, MPI_Datatype vec, int pattern, double c) {
    MPI_Request r;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (rank == 0) MPI_Isend(buf, 1, vec, 1, 5, MPI_COMM_WORLD, &r);
    else MPI_Irecv(buf, 1, vec, 0, 5, MPI_COMM_WORLD, &r);
    if (pattern == 1) spin(c);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    return MPI_Wtime() - t0;
}

int main(int argc, char **argv) {
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int rounds = argc > 1 ? atoi(argv[1]) : 30;
    if (size != 2 || rounds < 3) {
        if (rank == 0) fprintf(stderr, "usage: mpirun -np 2 p2p_overlap ROUNDS(>=3)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *shim = getenv("LD_PRELOAD");
    const char *pt = getenv("SLUICE_PROGRESS_THREAD");
    if (rank == 0) printf("config %s%s\n", shim && strstr(shim, "sluice") ? "sluice" : "bare", pt && pt[0] == '1' ? "+thread" : "");
    const long sizes[] = {1 << 20, 4 << 20, 16 << 20};
    for (int s = 0; s < 3; s++) {
        long n = sizes[s] / 8; /* doubles sent */
        MPI_Datatype vec;
        MPI_Type_vector((int)n, 1, 2, MPI_DOUBLE, &vec);
        MPI_Type_commit(&vec);
        double *buf = malloc(sizeof(double) * 2 * n);
        for (long i = 0; i < 2 * n; i++) buf[i] = (double)i; /* pre-fault */
        double *tc = malloc(sizeof(double) * rounds), *tt = malloc(sizeof(double) * rounds), *ov = malloc(sizeof(double) * rounds);
        for (int w = 0; w < 3; w++) round_once(rank, buf, vec, 0, 0); /* warm-up */
        double c = 0;
        for (int i = 0; i < rounds; i++) {
            tc[i] = round_once(rank, buf, vec, 0, 0);
            /* compute as long as rank 1's communication took (the median so far) */
            double copy[rounds];
            memcpy(copy, tc, sizeof(double) * (i + 1));
            c = quantile(copy, i + 1, 0.5);
            MPI_Bcast(&c, 1, MPI_DOUBLE, 1, MPI_COMM_WORLD);
            tt[i] = round_once(rank, buf, vec, 1, c);
            double hidden = tc[i] + c - tt[i], shorter = tc[i] < c ? tc[i] : c;
            double o = shorter > 0 ? hidden / shorter : 0;
            ov[i] = o < 0 ? 0 : o > 1 ? 1 : o;
        }
        if (rank == 1) {
            double res[7] = {(double)sizes[s], 1e6 * quantile(tc, rounds, 0.5), 1e6 * quantile(tt, rounds, 0.5), 1e6 * c,
                             quantile(ov, rounds, 0.5), quantile(ov, rounds, 0.25), quantile(ov, rounds, 0.75)};
            MPI_Send(res, 7, MPI_DOUBLE, 0, 9, MPI_COMM_WORLD);
        } else {
            double res[7];
            MPI_Recv(res, 7, MPI_DOUBLE, 1, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            printf("overlap %.0f %.1f %.1f %.1f %.3f %.3f %.3f\n", res[0], res[1], res[2], res[3], res[4], res[5], res[6]);
            fflush(stdout);
        }
        free(tc), free(tt), free(ov), free(buf);
        MPI_Type_free(&vec);
    }
    MPI_Finalize();
    return 0;
}
