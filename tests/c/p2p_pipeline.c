/* The pipelined protocol's own cases (docs/protocol.md, "Pipelined protocol"), on top of the
 * conformance suite (which also runs with every message pipelined):
 *  1. progress without sluice code on the sender: a receiver that posted its receive and sits
 *     in MPI_Barrier while the sender's blocking send must complete (legal MPI; a protocol where
 *     the sender waits for a clear-to-send deadlocks here), and the mirror case;
 *  2. a receiver that only polls MPI_Test, only polls MPI_Request_get_status, or computes for a
 *     while between MPI_Irecv and MPI_Wait;
 *  3. order: a small message sent after a pipelined one on the same tag never overtakes it;
 *  4. every pairing of a pipelined sender (vector type) with receives of other layouts
 *     (contiguous, the same vector, a vector of 3 x the stride), nonblocking and blocking;
 *  5. probes report the user-visible size; MPI_Get_count in the receive type;
 *  6. a receive the application frees while the transfer runs still gets its data;
 *  7. a persistent receive completed twice by pipelined messages; persistent sends (standard
 *     and synchronous mode) pipelined at every start;
 *  8. truncation by a receive at least as large as the first message (MPI_ERR_TRUNCATE, the
 *     prefix), and by a smaller one (the MPI's own MPI_ERR_TRUNCATE; its chunks are dropped at
 *     MPI_Finalize and nothing hangs);
 *  9. messages of exactly the reserved size that sluice's engine path does not serve
 *     (contiguous, and large blocks left to the MPI): they must be pipelined too.
 * Ranks work in pairs (0-1, 2-3, ...). Messages are `N` doubles sent as vector(N, 1, 2, double): with SLUICE_PIPELINE_THRESHOLD at
 * its default (256 KiB) the 2 MiB messages are pipelined. */
#define SLUICE_P2P_CONF
#include "check.h"
#include <stdlib.h>
#include <string.h>

#define N (256 * 1024) /* doubles: 2 MiB packed */

static MPI_Datatype vec1, vec3; /* every 2nd double; every 6th double, 3 x the extent */
static double *sbuf, *rbuf;
static int rank, peer;

static double val(int i, int round) { return 1000.0 * round + i; }

static void fill_send(int round) {
    for (int i = 0; i < 2 * N; i++) sbuf[i] = (i % 2) ? -1.0 : val(i / 2, round);
}

static void clear_recv(void) {
    for (int i = 0; i < 6 * N; i++) rbuf[i] = -7.0;
}

/* Checks `n` received doubles at stride `stride` (in doubles), gaps untouched. */
static int check_strided(int n, int stride, int round, const char *what) {
    int bad = 0;
    for (int i = 0; i < n * stride && bad < 3; i++) {
        double want = (i % stride) ? -7.0 : val(i / stride, round);
        if (rbuf[i] != want) {
            CHECK(0, "%s: element %d is %g, expected %g", what, i, rbuf[i], want);
            bad++;
        }
    }
    return bad == 0;
}

static void expect_count(MPI_Status *st, MPI_Datatype t, int want, const char *what) {
    int n = -1;
    MPI_Get_count(st, t, &n);
    CHECK(n == want, "%s: MPI_Get_count %d, expected %d", what, n, want);
    CHECK(st->MPI_SOURCE == peer, "%s: source %d, expected %d", what, st->MPI_SOURCE, peer);
}

static void spin(double seconds) {
    double t0 = MPI_Wtime();
    while (MPI_Wtime() - t0 < seconds) {
    }
}

int main(int argc, char **argv) {
    MPI_OK(MPI_Init(&argc, &argv));
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    conf_rank = rank;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Type_vector(N, 1, 2, MPI_DOUBLE, &vec1);
    MPI_Type_vector(N, 1, 6, MPI_DOUBLE, &vec3);
    MPI_Type_commit(&vec1);
    MPI_Type_commit(&vec3);
    sbuf = malloc(sizeof(double) * 2 * N);
    rbuf = malloc(sizeof(double) * 6 * N);
    /* Pairs of ranks (0-1, 2-3, ...); an odd last rank waits. */
    MPI_Comm pair;
    int psize;
    MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &pair));
    MPI_Comm_size(pair, &psize);
    MPI_Comm_set_errhandler(pair, MPI_ERRORS_RETURN);
    int active = psize == 2;
    rank = rank % 2;
    peer = rank ^ 1;
    MPI_Status st;
    MPI_Request rq;
    int flag;

    if (active) {
        /* 1. The receiver sits in a barrier (no sluice code runs there) while the sender sends. */
        conf_set_ctx("barrier while the sender's blocking send runs");
        fill_send(1);
        clear_recv();
        if (rank == 0) {
            MPI_OK(MPI_Irecv(rbuf, 1, vec1, peer, 1, pair, &rq));
            MPI_OK(MPI_Barrier(pair));
            MPI_OK(MPI_Wait(&rq, &st));
            expect_count(&st, vec1, 1, "after barrier");
            check_strided(N, 2, 1, "after barrier");
        } else {
            MPI_OK(MPI_Send(sbuf, 1, vec1, peer, 1, pair));
            MPI_OK(MPI_Barrier(pair));
        }
        /* The mirror: the sender's Isend, then a barrier, while the receiver blocks in Recv. */
        conf_set_ctx("blocking receive while the sender sits in a barrier");
        fill_send(2);
        clear_recv();
        if (rank == 1) {
            MPI_OK(MPI_Isend(sbuf, 1, vec1, peer, 2, pair, &rq));
            MPI_OK(MPI_Barrier(pair));
            MPI_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        } else {
            MPI_OK(MPI_Recv(rbuf, N, MPI_DOUBLE, peer, 2, pair, &st));
            expect_count(&st, MPI_DOUBLE, N, "recv during barrier");
            check_strided(N, 1, 2, "recv during barrier");
            MPI_OK(MPI_Barrier(pair));
        }

        /* 2. Completion by polling only, and a long computation before MPI_Wait. */
        for (int how = 0; how < 3; how++) {
            conf_set_ctx("receiver %s", how == 0 ? "polls MPI_Test" : how == 1 ? "polls MPI_Request_get_status" : "computes, then waits");
            fill_send(3 + how);
            clear_recv();
            if (rank == 0) {
                MPI_OK(MPI_Irecv(rbuf, 1, vec3, peer, 3, pair, &rq));
                if (how == 0) {
                    CONF_POLL("MPI_Test", MPI_OK(MPI_Test(&rq, &flag, &st)), flag);
                } else if (how == 1) {
                    CONF_POLL("MPI_Request_get_status", MPI_OK(MPI_Request_get_status(rq, &flag, &st)), flag);
                    expect_count(&st, vec3, 1, "get_status");
                    check_strided(N, 6, 3 + how, "get_status (before MPI_Wait)");
                    MPI_OK(MPI_Wait(&rq, &st));
                } else {
                    spin(0.2);
                    MPI_OK(MPI_Wait(&rq, &st));
                }
                expect_count(&st, vec3, 1, "polling");
                check_strided(N, 6, 3 + how, "polling");
            } else {
                MPI_OK(MPI_Send(sbuf, 1, vec1, peer, 3, pair));
            }
        }

        /* 3. A small message after a pipelined one, same tag: received in order. */
        conf_set_ctx("small message after a pipelined one");
        fill_send(7);
        clear_recv();
        if (rank == 1) {
            double small = 42.0;
            MPI_OK(MPI_Isend(sbuf, 1, vec1, peer, 4, pair, &rq));
            MPI_OK(MPI_Send(&small, 1, MPI_DOUBLE, peer, 4, pair));
            MPI_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        } else {
            MPI_Request r2[2];
            double small = 0;
            MPI_OK(MPI_Barrier(MPI_COMM_SELF));
            MPI_OK(MPI_Irecv(rbuf, 2 * N, MPI_DOUBLE, MPI_ANY_SOURCE, MPI_ANY_TAG, pair, &r2[0]));
            MPI_OK(MPI_Irecv(&small, 1, MPI_DOUBLE, peer, 4, pair, &r2[1]));
            MPI_Status sts[2];
            MPI_OK(MPI_Waitall(2, r2, sts));
            expect_count(&sts[0], MPI_DOUBLE, N, "first of the pair");
            CHECK(sts[0].MPI_TAG == 4, "tag %d", sts[0].MPI_TAG);
            check_strided(N, 1, 7, "first of the pair");
            CHECK(small == 42.0, "second message %g", small);
        }

        /* 4. Pairings, nonblocking with Waitany/Testsome mixed with a plain request. */
        MPI_Datatype rtypes[3] = {MPI_DOUBLE, vec1, vec3};
        int rcounts[3] = {N, 1, 1}, strides[3] = {1, 2, 6};
        for (int k = 0; k < 3; k++) {
            conf_set_ctx("pairing vector -> receive type %d", k);
            fill_send(10 + k);
            clear_recv();
            if (rank == 1) {
                MPI_OK(MPI_Ssend(sbuf, 1, vec1, peer, 5, pair));
            } else {
                MPI_Request q[2];
                int idx, dummy = 0, out, done = 0;
                int ids[2];
                MPI_Status sts[2];
                MPI_OK(MPI_Irecv(rbuf, rcounts[k], rtypes[k], peer, 5, pair, &q[0]));
                MPI_OK(MPI_Irecv(&dummy, 1, MPI_INT, MPI_PROC_NULL, 0, pair, &q[1]));
                if (k == 0) {
                    for (int j = 0; j < 2; j++) {
                        MPI_OK(MPI_Waitany(2, q, &idx, &st));
                        if (idx == 0) sts[0] = st;
                    }
                } else {
                    CONF_POLL("MPI_Testsome", MPI_OK(MPI_Testsome(2, q, &out, ids, sts));
                              for (int j = 0; j < out; j++) if (ids[j] == 0) { done = 1; st = sts[j]; }, done);
                    sts[0] = st;
                    MPI_Status ig[2];
                    MPI_OK(MPI_Waitall(2, q, ig));
                }
                expect_count(&sts[0], rtypes[k], rcounts[k], "pairing");
                check_strided(N, strides[k], 10 + k, "pairing");
            }
        }

        /* 5. Probes report the message's size. */
        conf_set_ctx("probe of a pipelined message");
        fill_send(20);
        clear_recv();
        if (rank == 1) {
            MPI_OK(MPI_Send(sbuf, 1, vec1, peer, 6, pair));
            MPI_OK(MPI_Send(sbuf, 1, vec1, peer, 7, pair));
        } else {
            MPI_OK(MPI_Probe(peer, 6, pair, &st));
            expect_count(&st, MPI_DOUBLE, N, "probe");
            MPI_OK(MPI_Recv(rbuf, N, MPI_DOUBLE, peer, 6, pair, &st));
            check_strided(N, 1, 20, "received after probe");
            clear_recv();
            CONF_POLL("MPI_Iprobe", MPI_OK(MPI_Iprobe(peer, 7, pair, &flag, &st)), flag);
            expect_count(&st, vec1, 1, "iprobe");
            MPI_Message msg;
            MPI_OK(MPI_Mprobe(peer, 7, pair, &msg, &st));
            expect_count(&st, MPI_DOUBLE, N, "mprobe");
            MPI_OK(MPI_Imrecv(rbuf, 1, vec3, &msg, &rq));
            MPI_OK(MPI_Wait(&rq, &st));
            expect_count(&st, vec3, 1, "imrecv");
            check_strided(N, 6, 20, "imrecv");
        }

        /* 6. A receive freed while its transfer runs still gets its data. */
        conf_set_ctx("receive freed while active");
        fill_send(30);
        clear_recv();
        if (rank == 0) {
            MPI_OK(MPI_Irecv(rbuf, 1, vec1, peer, 8, pair, &rq));
            MPI_OK(MPI_Request_free(&rq));
            MPI_OK(MPI_Barrier(pair));
            int got = 0;
            MPI_OK(MPI_Recv(&got, 1, MPI_INT, peer, 9, pair, MPI_STATUS_IGNORE));
            CONF_POLL("data of a freed receive", MPI_OK(MPI_Iprobe(peer, 99, pair, &flag, MPI_STATUS_IGNORE));
                      flag = rbuf[2 * (N - 1)] == val(N - 1, 30), flag);
            check_strided(N, 2, 30, "freed receive");
        } else {
            MPI_OK(MPI_Barrier(pair));
            int one = 1;
            MPI_OK(MPI_Send(sbuf, 1, vec1, peer, 8, pair));
            MPI_OK(MPI_Send(&one, 1, MPI_INT, peer, 9, pair));
        }

        /* 7. A persistent receive, twice. */
        conf_set_ctx("persistent receive");
        if (rank == 0) MPI_OK(MPI_Recv_init(rbuf, 1, vec1, peer, 10, pair, &rq));
        for (int round = 0; round < 2; round++) {
            fill_send(40 + round);
            if (rank == 0) {
                clear_recv();
                MPI_OK(MPI_Start(&rq));
                MPI_OK(MPI_Wait(&rq, &st));
                expect_count(&st, vec1, 1, "persistent");
                check_strided(N, 2, 40 + round, "persistent");
                MPI_OK(MPI_Send(&round, 1, MPI_INT, peer, 11, pair));
            } else {
                MPI_OK(MPI_Send(sbuf, 1, vec1, peer, 10, pair));
                MPI_OK(MPI_Recv(&flag, 1, MPI_INT, peer, 11, pair, MPI_STATUS_IGNORE));
            }
        }
        if (rank == 0) MPI_OK(MPI_Request_free(&rq));

        /* 7b. A persistent send (standard and synchronous mode), three starts each: pipelined
         * at every start, into a blocking and a persistent receive. */
        conf_set_ctx("persistent send");
        for (int mode = 0; mode < 2; mode++) {
            MPI_Request pq;
            if (rank == 1) {
                if (mode == 0) MPI_OK(MPI_Send_init(sbuf, 1, vec1, peer, 12, pair, &pq));
                else MPI_OK(MPI_Ssend_init(sbuf, 1, vec1, peer, 12, pair, &pq));
            } else if (mode == 1) {
                MPI_OK(MPI_Recv_init(rbuf, 1, vec1, peer, 12, pair, &pq));
            }
            for (int round = 0; round < 3; round++) {
                if (rank == 1) {
                    fill_send(50 + 3 * mode + round);
                    MPI_OK(MPI_Start(&pq));
                    MPI_OK(MPI_Wait(&pq, MPI_STATUS_IGNORE));
                    MPI_OK(MPI_Recv(&flag, 1, MPI_INT, peer, 13, pair, MPI_STATUS_IGNORE));
                } else {
                    clear_recv();
                    if (mode == 0) {
                        MPI_OK(MPI_Recv(rbuf, 1, vec1, peer, 12, pair, &st));
                    } else {
                        MPI_OK(MPI_Start(&pq));
                        MPI_OK(MPI_Wait(&pq, &st));
                    }
                    expect_count(&st, vec1, 1, "persistent send");
                    check_strided(N, 2, 50 + 3 * mode + round, "persistent send");
                    MPI_OK(MPI_Send(&round, 1, MPI_INT, peer, 13, pair));
                }
            }
            if (rank == 1 || mode == 1) MPI_OK(MPI_Request_free(&pq));
        }

        /* 9. Exactly the reserved size (SLUICE_PIPELINE_THRESHOLD rounded up to an odd number:
         * 262145 bytes by default), of types sluice's engine path does not serve: contiguous
         * chars, and 64-byte blocks (left to the MPI's engine by the large-block rule on Open
         * MPI: 4095 blocks of 64 chars at a stride of 128, then one of 65); into a contiguous
         * receive and into the block type. They must be pipelined too. */
        {
            enum { S = 262145, NB = 4095 };
            int bl[NB + 1], disp[NB + 1];
            for (int b = 0; b <= NB; b++) {
                bl[b] = b < NB ? 64 : 65;
                disp[b] = 128 * b;
            }
            MPI_Datatype big;
            MPI_Type_indexed(NB + 1, bl, disp, MPI_CHAR, &big);
            MPI_Type_commit(&big);
            unsigned char *sc = (unsigned char *)sbuf, *rc = (unsigned char *)rbuf;
            for (int k = 0; k < 4; k++) {
                int contig_send = k & 1, contig_recv = k >> 1;
                conf_set_ctx("reserved size, %s send, %s receive", contig_send ? "contiguous" : "block",
                             contig_recv ? "contiguous" : "block");
                for (int i = 0; i < 2 * S; i++) sc[i] = (unsigned char)(i * 7 + k);
                memset(rc, 0xEE, 2 * S);
                if (rank == 1) {
                    if (contig_send)
                        MPI_OK(MPI_Send(sc, S, MPI_CHAR, peer, 13, pair));
                    else
                        MPI_OK(MPI_Send(sc, 1, big, peer, 13, pair));
                } else {
                    if (contig_recv)
                        MPI_OK(MPI_Recv(rc, S, MPI_CHAR, peer, 13, pair, &st));
                    else
                        MPI_OK(MPI_Recv(rc, 1, big, peer, 13, pair, &st));
                    int bad = 0;
                    for (int j = 0; j < S && bad < 3; j++) {
                        int si = contig_send ? j : (j / 64 < NB ? (j / 64) * 128 + j % 64 : NB * 128 + (j - NB * 64));
                        int ri = contig_recv ? j : (j / 64 < NB ? (j / 64) * 128 + j % 64 : NB * 128 + (j - NB * 64));
                        if (rc[ri] != (unsigned char)(si * 7 + k)) {
                            CHECK(0, "stream byte %d is %d, expected %d", j, rc[ri], (unsigned char)(si * 7 + k));
                            bad++;
                        }
                    }
                    int n = -1;
                    MPI_Get_count(&st, MPI_CHAR, &n);
                    CHECK(n == S, "count %d", n);
                }
            }
            MPI_Type_free(&big);
        }

        /* 8. Truncation: capacity N/2 doubles (1 MiB, above the reserved size) and 100 doubles. */
        for (int small = 0; small < 2; small++) {
            conf_set_ctx("truncation, %s receive", small ? "tiny" : "large");
            fill_send(50 + small);
            clear_recv();
            int cap = small ? 100 : N / 2;
            if (rank == 0) {
                int rc = MPI_Recv(rbuf, cap, MPI_DOUBLE, peer, 12, pair, &st);
                CHECK_CLASS(rc, MPI_ERR_TRUNCATE);
                int bounded = 1;
#ifdef OPEN_MPI
                /* Open MPI 4.1 writes a whole truncated rendezvous message into a contiguous
                 * receive buffer (docs/protocol.md): rbuf is large enough to take it. Only the
                 * pipelined protocol bounds it, for receives of at least the reserved size. */
                const char *thr = getenv("SLUICE_PIPELINE_THRESHOLD");
                bounded = !small && !(thr && strcmp(thr, "off") == 0);
#endif
                if (bounded) CHECK(rbuf[cap] == -7.0, "written past the receive buffer");
#ifdef OPEN_MPI /* MPICH leaves a truncated buffer untouched */
                if (!small) check_strided(cap, 1, 50, "truncated prefix");
#endif
            } else {
                MPI_OK(MPI_Send(sbuf, 1, vec1, peer, 12, pair));
            }
        }
    }
    MPI_OK(MPI_Comm_free(&pair));
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_Type_free(&vec1);
    MPI_Type_free(&vec3);
    free(sbuf);
    free(rbuf);
    int rc = conf_finish("p2p_pipeline");
    MPI_Finalize();
    return rc;
}
