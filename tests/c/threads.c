/* MPI_THREAD_MULTIPLE: THREADS threads per rank exchange around the ring concurrently (one tag
 * per thread) while sluice counts every call; the harness checks the exact total. */
#include <pthread.h>
#include "check.h"
#define THREADS 4
#define ROUNDS 50

static int rank, size;
static int thread_failures[THREADS];

static void *worker(void *arg) {
    int t = (int)(long)arg;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (int r = 0; r < ROUNDS; r++) {
        long out = rank * 1000000L + t * 1000 + r, in = -1;
        MPI_Request req[2];
        MPI_Irecv(&in, 1, MPI_LONG, left, t, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(&out, 1, MPI_LONG, right, t, MPI_COMM_WORLD, &req[1]);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
        if (in != left * 1000000L + t * 1000 + r) thread_failures[t]++;
    }
    return NULL;
}

int main(int argc, char **argv) {
    int provided;
    MPI_CHECK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    EXPECT(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, worker, (void *)t);
    for (int t = 0; t < THREADS; t++) {
        pthread_join(th[t], NULL);
        EXPECT(thread_failures[t] == 0, "thread %d saw %d wrong values", t, thread_failures[t]);
    }
    int rc = report_verdict("threads");
    MPI_CHECK(MPI_Finalize());
    return rc;
}
