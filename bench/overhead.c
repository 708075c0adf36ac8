/*
 * overhead.c - what does sluice's pass-through interception cost?
 *
 * Built with each MPI's compiler wrapper by scripts/bench-overhead.sh and run bare and with
 * libsluice.so preloaded. One process run does `trials` timed trials of one benchmark and prints
 * one line per trial:
 *
 *   shim <0|1>                      whether sluice's symbols are present in the process
 *   lat <trial> <half_rtt_us>       8-byte MPI_Send/MPI_Recv ping-pong, half round trip (2 ranks)
 *   bw <trial> <GB/s>               4 MiB, window of W MPI_Isend / MPI_Irecv + MPI_Waitall,
 *                                   then a 4-byte ack; GB = 1e9 bytes (2 ranks)
 *   call <name> <trial> <ns/call>   tight loop of one cheap, local intercepted call (1 rank)
 *
 * Usage: overhead p2p  <trials> <lat_iters> <bw_windows> <window>
 *        overhead call <trials> <calls_per_trial>
 *
 * Buffers are memset (pre-faulted) and every trial is preceded by untimed warm-up iterations.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LAT_BYTES 8
#define BW_BYTES (4u << 20)

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *xalloc(size_t n) {
    void *p = NULL;
    if (posix_memalign(&p, 4096, n) != 0) {
        fprintf(stderr, "overhead: cannot allocate %zu bytes\n", n);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    memset(p, 1, n); /* first touch outside the timed region */
    return p;
}

static void check(int rc, const char *what) {
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "overhead: %s failed (%d)\n", what, rc);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
}

/* 8-byte ping-pong; returns the half round trip in microseconds (rank 0's view). */
static double pingpong(int rank, char *buf, long iters) {
    int peer = 1 - rank;
    double t0 = 0.0;
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = now_s();
    for (long i = 0; i < iters; i++) {
        if (rank == 0) {
            check(MPI_Send(buf, LAT_BYTES, MPI_BYTE, peer, 1, MPI_COMM_WORLD), "MPI_Send");
            check(MPI_Recv(buf, LAT_BYTES, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
        } else {
            check(MPI_Recv(buf, LAT_BYTES, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
            check(MPI_Send(buf, LAT_BYTES, MPI_BYTE, peer, 1, MPI_COMM_WORLD), "MPI_Send");
        }
    }
    return (now_s() - t0) * 1e6 / (2.0 * (double)iters);
}

/* Rank 0 sends `windows` windows of `window` 4 MiB messages to rank 1 (distinct receive buffers);
 * each window ends with MPI_Waitall on both sides and a 4-byte ack from rank 1. Returns GB/s. */
static double bandwidth(int rank, char *sbuf, char **rbufs, MPI_Request *reqs, int window, long windows) {
    int ack = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now_s();
    for (long w = 0; w < windows; w++) {
        if (rank == 0) {
            for (int j = 0; j < window; j++)
                check(MPI_Isend(sbuf, BW_BYTES, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &reqs[j]), "MPI_Isend");
            check(MPI_Waitall(window, reqs, MPI_STATUSES_IGNORE), "MPI_Waitall");
            check(MPI_Recv(&ack, 1, MPI_INT, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
        } else {
            for (int j = 0; j < window; j++)
                check(MPI_Irecv(rbufs[j], BW_BYTES, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &reqs[j]), "MPI_Irecv");
            check(MPI_Waitall(window, reqs, MPI_STATUSES_IGNORE), "MPI_Waitall");
            check(MPI_Send(&ack, 1, MPI_INT, 0, 3, MPI_COMM_WORLD), "MPI_Send");
        }
    }
    double dt = now_s() - t0;
    return (double)BW_BYTES * (double)window * (double)windows / dt / 1e9;
}

static int run_p2p(int rank, int size, int trials, long lat_iters, long bw_windows, int window) {
    if (size != 2) {
        if (rank == 0) fprintf(stderr, "overhead p2p: needs exactly 2 ranks, got %d\n", size);
        return 1;
    }
    char *lbuf = xalloc(4096);
    char *sbuf = xalloc(BW_BYTES);
    char **rbufs = malloc(sizeof(char *) * (size_t)window);
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * (size_t)window);
    for (int j = 0; j < window; j++) rbufs[j] = rank == 1 ? xalloc(BW_BYTES) : NULL;

    /* warm-up: connections, eager/rendezvous paths, caches, CPU frequency */
    pingpong(rank, lbuf, lat_iters / 4 + 100);
    bandwidth(rank, sbuf, rbufs, reqs, window, 2);

    for (int t = 0; t < trials; t++) {
        double us = pingpong(rank, lbuf, lat_iters);
        if (rank == 0) printf("lat %d %.5f\n", t, us);
    }
    for (int t = 0; t < trials; t++) {
        double gbs = bandwidth(rank, sbuf, rbufs, reqs, window, bw_windows);
        if (rank == 0) printf("bw %d %.4f\n", t, gbs);
    }
    return 0;
}

typedef int (*call_fn)(long n);

/* MPI_Test on MPI_REQUEST_NULL: returns flag=1 at once, no progress. */
static int loop_test(long n) {
    int flag = 0, acc = 0;
    for (long i = 0; i < n; i++) {
        MPI_Request r = MPI_REQUEST_NULL;
        MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
        acc += flag;
    }
    return acc;
}

/* MPI_Iprobe on MPI_COMM_SELF, any source/tag, nothing pending: one progress poll per call. */
static int loop_iprobe(long n) {
    int flag = 0, acc = 0;
    MPI_Status st;
    for (long i = 0; i < n; i++) {
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_SELF, &flag, &st);
        acc += flag;
    }
    return acc;
}

/* MPI_Get_count on a status filled by a completed self-message: pure local arithmetic. */
static MPI_Status g_status;
static int loop_get_count(long n) {
    int count = 0, acc = 0;
    for (long i = 0; i < n; i++) {
        MPI_Get_count(&g_status, MPI_BYTE, &count);
        acc += count;
    }
    return acc;
}

static int run_call(int rank, int trials, long calls) {
    if (rank != 0) return 0;
    struct { const char *name; call_fn fn; long scale; } calls_tab[] = {
        {"MPI_Test", loop_test, 1},
        {"MPI_Get_count", loop_get_count, 1},
        {"MPI_Iprobe", loop_iprobe, 4}, /* several times slower per call: fewer calls */
    };
    char b[8] = {0}, r[8];
    check(MPI_Sendrecv(b, 8, MPI_BYTE, 0, 9, r, 8, MPI_BYTE, 0, 9, MPI_COMM_SELF, &g_status), "MPI_Sendrecv");
    volatile int sink = 0;
    for (size_t c = 0; c < sizeof calls_tab / sizeof calls_tab[0]; c++) {
        long n = calls / calls_tab[c].scale;
        sink += calls_tab[c].fn(n / 4 + 1000); /* warm-up */
        for (int t = 0; t < trials; t++) {
            double t0 = now_s();
            sink += calls_tab[c].fn(n);
            double ns = (now_s() - t0) * 1e9 / (double)n;
            printf("call %s %d %.3f\n", calls_tab[c].name, t, ns);
        }
    }
    (void)sink;
    return 0;
}

int main(int argc, char **argv) {
    int rank = 0, size = 0, rc = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0) printf("shim %d\n", dlsym(RTLD_DEFAULT, "sluice_version_string") != NULL);
    if (argc >= 6 && strcmp(argv[1], "p2p") == 0) {
        rc = run_p2p(rank, size, atoi(argv[2]), atol(argv[3]), atol(argv[4]), atoi(argv[5]));
    } else if (argc >= 4 && strcmp(argv[1], "call") == 0) {
        rc = run_call(rank, atoi(argv[2]), atol(argv[3]));
    } else if (rank == 0) {
        fprintf(stderr, "usage: %s p2p <trials> <lat_iters> <bw_windows> <window>\n"
                        "       %s call <trials> <calls_per_trial>\n", argv[0], argv[0]);
    }
    fflush(stdout);
    MPI_Finalize();
    return rc;
}
