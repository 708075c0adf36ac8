/*
 * fastpath_icount.c - instructions sluice adds to MPI_Send, MPI_Recv, MPI_Isend, MPI_Irecv,
 * MPI_Wait, MPI_Waitall and MPI_Test on 8-byte messages of predefined types (docs/benchmarks.md,
 * "The point-to-point fast path"), and on committed vector types the MPI moves well (loop_derived_*). One process, MPI_COMM_SELF; each loop is its own function so
 * that callgrind can collect only inside them:
 *
 *   mpicc -O2 -o icount bench/fastpath_icount.c
 *   LD_PRELOAD=$PWD/target/openmpi/release/libsluice.so valgrind --tool=callgrind \
 *       --toggle-collect='loop_*' --callgrind-out-file=cg.out ./icount 10000
 *   python3 scripts/callgrind_own.py cg.out
 *
 * (Open MPI as root also needs OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1.)
 * Blocking sends pair with a pre-posted receive: MPICH's ch4:ucx does not complete a blocking
 * send to self before its receive is posted.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char sbuf[512], rbuf[512];
static MPI_Datatype g_one_block, g_two_blocks; /* vector(1|2, 64, 128, MPI_CHAR): vect:128:64 */

__attribute__((noinline)) void loop_send_recv(long n) {
    for (long i = 0; i < n; i++) {
        MPI_Request r;
        MPI_Irecv(rbuf, 8, MPI_BYTE, 0, 1, MPI_COMM_SELF, &r);
        MPI_Send(sbuf, 8, MPI_BYTE, 0, 1, MPI_COMM_SELF);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        MPI_Isend(sbuf, 8, MPI_BYTE, 0, 1, MPI_COMM_SELF, &r);
        MPI_Recv(rbuf, 8, MPI_BYTE, 0, 1, MPI_COMM_SELF, MPI_STATUS_IGNORE);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
}
__attribute__((noinline)) void loop_isend_irecv_wait(long n) {
    MPI_Request r[2];
    for (long i = 0; i < n; i++) {
        MPI_Irecv(rbuf, 2, MPI_INT, 0, 2, MPI_COMM_SELF, &r[0]);
        MPI_Isend(sbuf, 2, MPI_INT, 0, 2, MPI_COMM_SELF, &r[1]);
        MPI_Wait(&r[1], MPI_STATUS_IGNORE);
        MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    }
}
/* Irecv + Isend + Waitall of `count` elements of `dt`, inlined into each loop_* function so that
 * callgrind attributes it to that loop. */
static inline __attribute__((always_inline)) void irecv_isend_waitall(long n, int count, MPI_Datatype dt, int tag) {
    MPI_Request r[2];
    MPI_Status st[2];
    for (long i = 0; i < n; i++) {
        MPI_Irecv(rbuf, count, dt, 0, tag, MPI_COMM_SELF, &r[0]);
        MPI_Isend(sbuf, count, dt, 0, tag, MPI_COMM_SELF, &r[1]);
        MPI_Waitall(2, r, st);
    }
}
__attribute__((noinline)) void loop_waitall(long n) { irecv_isend_waitall(n, 1, MPI_DOUBLE, 3); }
__attribute__((noinline)) void loop_test(long n) {
    MPI_Request r[2];
    int flag = 0;
    for (long i = 0; i < n; i++) {
        MPI_Irecv(rbuf, 8, MPI_CHAR, 0, 4, MPI_COMM_SELF, &r[0]);
        MPI_Isend(sbuf, 8, MPI_CHAR, 0, 4, MPI_COMM_SELF, &r[1]);
        do { MPI_Test(&r[1], &flag, MPI_STATUS_IGNORE); } while (!flag);
        do { MPI_Test(&r[0], &flag, MPI_STATUS_IGNORE); } while (!flag);
    }
}

/* Committed derived types the MPI moves well: one 64-byte block (contiguous in memory) and two
 * 64-byte blocks 128 bytes apart (large blocks, left to the MPI's engine on Open MPI). */
__attribute__((noinline)) void loop_derived_one_block(long n) { irecv_isend_waitall(n, 1, g_one_block, 5); }
__attribute__((noinline)) void loop_derived_two_blocks(long n) { irecv_isend_waitall(n, 1, g_two_blocks, 6); }

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 10000;
    MPI_Init(&argc, &argv);
    memset(sbuf, 1, sizeof sbuf);
    MPI_Type_vector(1, 64, 128, MPI_CHAR, &g_one_block);
    MPI_Type_vector(2, 64, 128, MPI_CHAR, &g_two_blocks);
    MPI_Type_commit(&g_one_block);
    MPI_Type_commit(&g_two_blocks);
    loop_send_recv(100); loop_isend_irecv_wait(100); loop_waitall(100); loop_test(100);
    loop_derived_one_block(100); loop_derived_two_blocks(100);
    loop_send_recv(n);
    loop_isend_irecv_wait(n);
    loop_waitall(n);
    loop_test(n);
    loop_derived_one_block(n);
    loop_derived_two_blocks(n);
    MPI_Type_free(&g_one_block);
    MPI_Type_free(&g_two_blocks);
    MPI_Finalize();
    return 0;
}
