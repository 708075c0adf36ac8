/* Shared helpers for sluice's C test programs: every MPI return code is checked. */
#ifndef SLUICE_TEST_CHECK_H
#define SLUICE_TEST_CHECK_H
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int check_failures = 0;

#define MPI_CHECK(call)                                                              \
    do {                                                                             \
        int rc_ = (call);                                                            \
        if (rc_ != MPI_SUCCESS) {                                                    \
            fprintf(stderr, "%s:%d: %s returned %d\n", __FILE__, __LINE__, #call, rc_); \
            MPI_Abort(MPI_COMM_WORLD, 2);                                            \
        }                                                                            \
    } while (0)

#define EXPECT(cond, ...)                                                            \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: expected %s: ", __FILE__, __LINE__, #cond);      \
            fprintf(stderr, __VA_ARGS__);                                            \
            fprintf(stderr, "\n");                                                   \
            check_failures++;                                                        \
        }                                                                            \
    } while (0)

/* Collective verdict: rank 0 prints PASS when no rank saw a failure. */
static int report_verdict(const char *name) {
    int total = 0, rank;
    MPI_Allreduce(&check_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        if (total == 0) printf("PASS %s\n", name);
        else printf("FAIL %s: %d failed checks\n", name, total);
        fflush(stdout);
    }
    return total == 0 ? 0 : 1;
}
#endif
