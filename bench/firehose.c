/* The firehose paper's Figures 3 and 4 on this machine (docs/benchmarks.md, "Firehose"): rank 0
 * puts into rank 1's memory at uniformly random places of a working set that grows past
 * M + MAXVICTIM, with each of the three strategies in the same run:
 *   firehose        sluice_put as is (one-sided while the firehoses are mapped);
 *   rendezvous      a handshake that pins and attaches, the put, a handshake that unpins;
 *   rendezvous-keep a handshake per put, the target keeps every page pinned (unbounded).
 * Rounds alternate the strategies (paired: the same offsets for each in a round).
 *   mpirun -np 2 -x LD_PRELOAD=... firehose SIZE WS_LIST_MB ROUNDS OPS
 * SIZE: bytes per put (8: latency, Figure 3; 65536: bandwidth, Figure 4). WS_LIST_MB: the
 * working sets, comma-separated MiB. Prints one line per working set, round and strategy:
 *   fh <size> <ws_mb> <round> <strategy> <mean_us> <one_sided> <moves>
 * Rank 1 waits in a blocking MPI_Recv (its service thread serves) while a thread of its samples
 * its pinned amount (sluice_pin_state) every 200 us, and reports
 *   bound <ws_mb> <max_pinned> <limit> <violations>
 * (the firehose bound M + MAXVICTIM; the baseline without unpin pins outside it, as the paper's
 * does, and is not counted there). Needs MPI_THREAD_MULTIPLE (asked for). */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sluice.h"

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Samples this process's pinned amount until told to stop. */
struct watch {
    long limit, maxp, violations;
    int stop;
};
static void *watch_main(void *p) {
    struct watch *w = p;
    while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
        long pinned;
        sluice_pin_state(&pinned, NULL, NULL, NULL, NULL);
        if (pinned > w->maxp) w->maxp = pinned;
        w->violations += pinned > w->limit;
        usleep(200);
    }
    return NULL;
}

static const char *names[] = {"firehose", "rendezvous", "rendezvous-keep"};

int main(int argc, char **argv) {
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 5 || size != 2) {
        if (rank == 0) fprintf(stderr, "usage: mpirun -np 2 firehose SIZE WS_LIST_MB ROUNDS OPS\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    size_t len = strtoull(argv[1], NULL, 10);
    int rounds = atoi(argv[3]), ops = atoi(argv[4]);
    double ws[32];
    int nws = 0;
    for (char *t = strtok(argv[2], ","); t && nws < 32; t = strtok(NULL, ",")) ws[nws++] = atof(t);
    double ws_max = 0;
    for (int i = 0; i < nws; i++) ws_max = ws[i] > ws_max ? ws[i] : ws_max;
    if (sluice_rma_init() != SLUICE_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 3);
    long m = atol(getenv("SLUICE_FIREHOSE_M") ? getenv("SLUICE_FIREHOSE_M") : "268435456");
    long v = atol(getenv("SLUICE_FIREHOSE_MAXVICTIM") ? getenv("SLUICE_FIREHOSE_MAXVICTIM") : "67108864");
    size_t span = (size_t)(ws_max * 1048576.0) + len;
    unsigned char *mem = aligned_alloc(4096, (span + 4095) / 4096 * 4096);
    memset(mem, 1, span); /* pre-fault: first touches are not what is measured */
    uint64_t base = (uint64_t)(uintptr_t)mem;
    MPI_Bcast(&base, 1, MPI_UINT64_T, 1, MPI_COMM_WORLD);
    unsigned char *src = aligned_alloc(4096, len + 4096);
    memset(src, 7, len + 4096);
    for (int w_i = 0; w_i < nws; w_i++) {
        size_t bytes = (size_t)(ws[w_i] * 1048576.0);
        size_t slots = bytes / (len < 8 ? 8 : len);
        if (rank == 1) {
            /* Wait inside the MPI (a blocking receive: the MPI progresses there, the service
             * thread serves move requests) while a thread watches the bound. */
            struct watch w = {m + v, 0, 0, 0};
            pthread_t th;
            pthread_create(&th, NULL, watch_main, &w);
            int done;
            MPI_Recv(&done, 1, MPI_INT, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            __atomic_store_n(&w.stop, 1, __ATOMIC_RELEASE);
            pthread_join(th, NULL);
            printf("bound %.1f %ld %ld %ld\n", ws[w_i], w.maxp, m + v, w.violations);
            fflush(stdout);
            continue;
        }
        /* Warm the firehoses up to their steady state over this working set: one put per page
         * of the part that fits in M + MAXVICTIM, then random ones. */
        sluice_rma_strategy(SLUICE_RMA_FIREHOSE);
        size_t stride = len < 8 ? 8 : len, sweep = bytes < (size_t)(m + v) ? bytes : (size_t)(m + v);
        for (size_t off = 0; off + len <= sweep; off += stride > 4096 ? stride : 4096) {
            sluice_event_t ev;
            sluice_put(1, base + off, src, len, &ev);
            sluice_event_wait(&ev);
        }
        for (size_t i = 0; i < 2000; i++) {
            sluice_event_t ev;
            sluice_put(1, base + (next() % slots) * stride, src, len, &ev);
            sluice_event_wait(&ev);
        }
        for (int r = 0; r < rounds; r++) {
            uint64_t seed = rng;
            for (int s = 0; s < 3; s++) {
                rng = seed; /* the same offsets for each strategy of the round */
                sluice_rma_strategy(s);
                long h0, m0, h1, m1;
                sluice_rma_counters(&h0, &m0);
                double t0 = MPI_Wtime();
                for (int i = 0; i < ops; i++) {
                    sluice_event_t ev;
                    int rc = sluice_put(1, base + (next() % slots) * (len < 8 ? 8 : len), src, len, &ev);
                    if (rc != SLUICE_SUCCESS || sluice_event_wait(&ev) != SLUICE_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 4);
                }
                double us = (MPI_Wtime() - t0) * 1e6 / ops;
                sluice_rma_counters(&h1, &m1);
                printf("fh %zu %.1f %d %s %.3f %ld %ld\n", len, ws[w_i], r, names[s], us, h1 - h0, m1 - m0);
            }
            fflush(stdout);
        }
        sluice_rma_strategy(SLUICE_RMA_FIREHOSE);
        int done = 1;
        MPI_Send(&done, 1, MPI_INT, 1, 9, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    free(mem);
    free(src);
    return 0;
}
