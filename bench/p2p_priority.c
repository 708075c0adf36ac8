/* Priorities of pipelined receives (scripts/bench-p2p-priority.sh; the `sluice_priority`
 * communicator key, docs/protocol.md "Priorities").
 *
 * Ranks 0 and 1: rank 0 Isends NLOW messages on one communicator and then one urgent message on
 * another (a strided vector of doubles, every other one; BYTES packed each), rank 1 probes all
 * of them (they are there: what remains is the receiver's work, unpacking them), posts the low
 * receives and then the urgent one, and times MPI_Wait of the urgent one (T_urgent) and then
 * MPI_Waitall of the rest (T_all), from the first post. Every round is a pair: once with
 * sluice_priority=5 on the urgent communicator ("priority"), once with no priority on either
 * ("fifo": both communicators carry the same sluice_p2p_path key, PATH), in alternating order.
 * Output on rank 1: "round <mode> <t_urgent_us> <t_all_us>" per round, then
 * "priority <path> <bytes> <fifo_urgent_us> <prio_urgent_us> <sooner> <lo> <hi> <fifo_all_us> <prio_all_us>":
 * medians, and sooner = 1 - T_urgent(priority) / T_urgent(fifo), the median of the rounds'
 * ratios with its 95% interval.
 *
 * Usage: p2p_priority ROUNDS PATH BYTES
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ab_stats.h"

#define NLOW 8

static MPI_Comm with_info(const char *path, const char *priority) {
    MPI_Info info;
    MPI_Comm c;
    MPI_Info_create(&info);
    MPI_Info_set(info, "sluice_p2p_path", path);
    if (priority) MPI_Info_set(info, "sluice_priority", priority);
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &c);
    MPI_Info_free(&info);
    return c;
}

/* One round on (low, high); rank 1 returns T_urgent and T_all (s). */
static void round_once(int rank, double **buf, MPI_Datatype vec, MPI_Comm low, MPI_Comm high, double *tu, double *ta) {
    MPI_Request req[NLOW + 1];
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        for (int m = 0; m <= NLOW; m++) MPI_Isend(buf[m], 1, vec, 1, m, m < NLOW ? low : high, &req[m]);
        MPI_Waitall(NLOW + 1, req, MPI_STATUSES_IGNORE);
    } else if (rank == 1) {
        for (int m = 0; m <= NLOW; m++) MPI_Probe(0, m, m < NLOW ? low : high, MPI_STATUS_IGNORE);
        double t0 = MPI_Wtime();
        for (int m = 0; m <= NLOW; m++) MPI_Irecv(buf[m], 1, vec, 0, m, m < NLOW ? low : high, &req[m]);
        MPI_Wait(&req[NLOW], MPI_STATUS_IGNORE);
        *tu = MPI_Wtime() - t0;
        MPI_Waitall(NLOW, req, MPI_STATUSES_IGNORE);
        *ta = MPI_Wtime() - t0;
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int rounds = argc > 1 ? atoi(argv[1]) : 20;
    const char *path = argc > 2 ? argv[2] : "arena";
    long bytes = argc > 3 ? atol(argv[3]) : 4 << 20;
    long n = bytes / 8;
    MPI_Datatype vec;
    MPI_Type_vector((int)n, 1, 2, MPI_DOUBLE, &vec);
    MPI_Type_commit(&vec);
    double *buf[NLOW + 1];
    for (int m = 0; m <= NLOW; m++) {
        buf[m] = malloc(sizeof(double) * 2 * n);
        for (long i = 0; i < 2 * n; i++) buf[m][i] = m + i; /* pre-fault */
    }
    MPI_Comm fifo_low = with_info(path, NULL), fifo_high = with_info(path, NULL);
    MPI_Comm prio_low = with_info(path, NULL), prio_high = with_info(path, "5");
    double tu, ta, fu[1000], pu[1000], fa[1000], pa[1000], ratio[1000];
    if (rounds > 1000) rounds = 1000;
    for (int w = 0; w < 2; w++) { /* warm-up: arena regions, staging, the engine's first calls */
        round_once(rank, buf, vec, fifo_low, fifo_high, &tu, &ta);
        round_once(rank, buf, vec, prio_low, prio_high, &tu, &ta);
    }
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < 2; k++) {
            int prio = (r + k) % 2; /* alternating order */
            round_once(rank, buf, vec, prio ? prio_low : fifo_low, prio ? prio_high : fifo_high, &tu, &ta);
            if (rank == 1) {
                (prio ? pu : fu)[r] = tu * 1e6;
                (prio ? pa : fa)[r] = ta * 1e6;
                printf("round %s %.1f %.1f\n", prio ? "priority" : "fifo", tu * 1e6, ta * 1e6);
            }
        }
        if (rank == 1) ratio[r] = 1.0 - pu[r] / fu[r];
    }
    if (rank == 1) {
        double lo, hi, s = ab_median_ci(ratio, rounds, &lo, &hi), d0, d1;
        double mfu = ab_median_ci(fu, rounds, &d0, &d1), mpu = ab_median_ci(pu, rounds, &d0, &d1);
        double mfa = ab_median_ci(fa, rounds, &d0, &d1), mpa = ab_median_ci(pa, rounds, &d0, &d1);
        printf("priority %s %ld %.1f %.1f %.3f %.3f %.3f %.1f %.1f\n", path, bytes, mfu, mpu, s, lo, hi, mfa, mpa);
    }
    MPI_Comm_free(&fifo_low);
    MPI_Comm_free(&fifo_high);
    MPI_Comm_free(&prio_low);
    MPI_Comm_free(&prio_high);
    MPI_Type_free(&vec);
    for (int m = 0; m <= NLOW; m++) free(buf[m]);
    MPI_Finalize();
    return 0;
}
