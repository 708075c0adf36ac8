/* Asynchronous progress (SLUICE_PROGRESS_THREAD, issue 22): a pipelined message moves while
 * both ranks compute without calling MPI.
 *
 * Pairs of ranks (0-1, 2-3, ...): the even rank Isends a strided vector of doubles (large and
 * non-contiguous: sluice pipelines it), the odd rank Irecvs it; then neither calls MPI for up
 * to LIMIT seconds ("compute"), while the receiver watches its buffer with volatile reads. With
 * a progress thread the whole message lands before either rank calls MPI again; without one,
 * the pipelined chunks wait for the next MPI call (only what the MPI itself moves can land).
 * Afterwards both wait, and every element is checked.
 *
 * Prints on rank 0: "progress_thread: landed during compute <n>/<pairs> (max <ms> ms)", then
 * "PASS progress_thread" when the data is right, and, when EXPECT_ASYNC=1, every pair's
 * message landed during the compute phase. Whether MPI_Init_thread and MPI_Query_thread
 * answered MPI_THREAD_SINGLE, the level asked for, is reported too ("level_as_asked=<0/1>":
 * sluice raises the MPI's level for its thread without the application seeing it). Reading a receive buffer before the receive completes is not allowed
 * to an MPI program; this test does it only to observe progress and does not rely on it. */
#include "check.h"

#include <stdint.h>
#include <string.h>
#include <time.h>

#define N (1 << 20) /* doubles received: 8 MiB packed, 16 MiB of extent */
#define LIMIT 3.0

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static double value(int i) { return 0.5 * i + 3.0; }

int main(int argc, char **argv) {
    int provided = -1, rank, size;
    MPI_CHECK(MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided));
    MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    const char *expect = getenv("EXPECT_ASYNC");
    int expect_async = expect && expect[0] == '1';
    MPI_Datatype vec;
    MPI_CHECK(MPI_Type_vector(N, 1, 2, MPI_DOUBLE, &vec));
    MPI_CHECK(MPI_Type_commit(&vec));
    double *buf = malloc(sizeof(double) * 2 * N);
    if (!buf) MPI_Abort(MPI_COMM_WORLD, 3);
    for (int i = 0; i < 2 * N; i++) buf[i] = (rank % 2 == 0) ? value(i / 2) * (i % 2 == 0) : -1.0;
    int peer = rank ^ 1, active = peer < size;
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    if (active) {
        if (rank % 2 == 0) MPI_CHECK(MPI_Isend(buf, 1, vec, peer, 7, MPI_COMM_WORLD, &req));
        else MPI_CHECK(MPI_Irecv(buf, 1, vec, peer, 7, MPI_COMM_WORLD, &req));
    }
    /* Compute: no MPI call. The receiver polls the first and last elements it expects. */
    int landed = 0;
    double t0 = now(), waited = 0;
    if (active && rank % 2 == 1) {
        volatile double *v = buf;
        while ((waited = now() - t0) < LIMIT) {
            if (v[0] == value(0) && v[2 * (N - 1)] == value(N - 1)) {
                /* the last chunk is there; check that every element is */
                int all = 1;
                for (int i = 0; i < N && all; i += 4096) all = v[2 * i] == value(i);
                if (all) {
                    landed = 1;
                    break;
                }
            }
            struct timespec nap = {0, 200000};
            nanosleep(&nap, NULL);
        }
    } else {
        /* The sender computes as long as the receiver may watch: its chunks get no help from
         * its own MPI calls either. */
        struct timespec nap = {0, 1000000};
        while (now() - t0 < LIMIT) nanosleep(&nap, NULL);
    }
    MPI_CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    if (active && rank % 2 == 1) {
        int bad = 0;
        for (int i = 0; i < N; i++) bad += buf[2 * i] != value(i) || buf[2 * i + 1] != -1.0;
        EXPECT(bad == 0, "rank %d: %d wrong elements", rank, bad);
        if (expect_async) EXPECT(landed, "rank %d: the message did not land during %.0f s of computation", rank, LIMIT);
    }
    int counts[2] = {landed, active && rank % 2 == 1}, sums[2];
    double ms = landed ? waited * 1e3 : 0, max_ms;
    MPI_CHECK(MPI_Reduce(counts, sums, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD));
    MPI_CHECK(MPI_Reduce(&ms, &max_ms, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
    if (rank == 0) {
        int query = -1;
        MPI_Query_thread(&query);
        /* sluice raises the MPI's level for its thread, yet answers as the bare MPI does */
        printf("progress_thread: level_as_asked=%d\n", provided == MPI_THREAD_SINGLE && query == MPI_THREAD_SINGLE);
        printf("progress_thread: landed during compute %d/%d (max %.1f ms)\n", sums[0], sums[1], max_ms);
        fflush(stdout);
    }
    MPI_CHECK(MPI_Type_free(&vec));
    free(buf);
    int rc = report_verdict("progress_thread");
    MPI_Finalize();
    return rc;
}
