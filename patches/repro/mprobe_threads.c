/* Threads that MPI_Mprobe pipelined messages (each on its own tag) and call MPI_Mrecv a moment
 * later. Under sluice each probed M0 is received into the stash at once and keyed by the MPI's
 * message handle, which that receive has just freed: another thread's MPI_Mprobe may get the same
 * handle value, and the two stash entries then collide. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#define THREADS 4
#define ITERS 200
#define N 2048 /* doubles per message (every other one of 2N): 16 KiB packed */
static int rank, peer, fails;
static MPI_Datatype vec;
static void *worker(void *arg) {
    int t = (int)(long)arg;
    double *s = malloc(2 * N * sizeof(double)), *r = malloc(2 * N * sizeof(double));
    for (int it = 0; it < ITERS; it++) {
        for (int i = 0; i < 2 * N; i++) s[i] = rank * 1e6 + t * 1e4 + it + i * 1e-6;
        MPI_Request q;
        MPI_Status st;
        MPI_Message msg;
        MPI_Isend(s, 1, vec, peer, t, MPI_COMM_WORLD, &q);
        MPI_Mprobe(peer, t, MPI_COMM_WORLD, &msg, &st);
        usleep(50 + 37 * t);
        for (int i = 0; i < 2 * N; i++) r[i] = -1;
        int rc = MPI_Mrecv(r, 1, vec, &msg, &st);
        int bad = rc != MPI_SUCCESS || st.MPI_TAG != t || st.MPI_SOURCE != peer;
        for (int i = 0; i < 2 * N && !bad; i += 2) bad = r[i] != peer * 1e6 + t * 1e4 + it + i * 1e-6;
        if (bad) {
            __atomic_fetch_add(&fails, 1, __ATOMIC_RELAXED);
            fprintf(stderr, "rank %d thread %d iter %d: rc %d tag %d source %d r[0] %.6f\n", rank, t, it, rc, st.MPI_TAG,
                    st.MPI_SOURCE, r[0]);
        }
        MPI_Wait(&q, MPI_STATUS_IGNORE);
    }
    free(s);
    free(r);
    return NULL;
}
int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    peer = 1 - rank;
    MPI_Type_vector(N, 1, 2, MPI_DOUBLE, &vec);
    MPI_Type_commit(&vec);
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, worker, (void *)t);
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    int total;
    MPI_Allreduce(&fails, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf(total ? "mprobe_threads: FAIL (%d)\n" : "mprobe_threads: OK\n", total);
    MPI_Type_free(&vec);
    MPI_Finalize();
    return total != 0;
}
