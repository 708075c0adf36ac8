/* Point-to-point of a type sluice's kernels cannot table (more runs per element than they hold:
 * sluice's interpreter packs it, or the MPI's engine where that is faster), paired with a
 * signature-equal type that a kernel serves, in both directions, blocking and nonblocking,
 * checked byte for byte with the status counts. Pairs ranks (0,1), (2,3), ...; an odd last rank
 * only joins the verdict.
 *
 * T: struct { vector(N, 1, 2, MPI_BYTE) at 0, vector(N, 1, 2, MPI_SHORT) at 2N } (2N runs);
 * U: struct { N MPI_BYTE at 0, vector(N/2, 2, 3, MPI_SHORT) at N + 8 } (N/2 + 1 runs, small
 * blocks: sluice's engine on both MPIs). Same signature: N bytes, N shorts. */
#include <string.h>
#include "check.h"

#define N 100000

static MPI_Datatype make_t(void) {
    MPI_Datatype bytes, shorts, t;
    MPI_CHECK(MPI_Type_vector(N, 1, 2, MPI_BYTE, &bytes));
    MPI_CHECK(MPI_Type_vector(N, 1, 2, MPI_SHORT, &shorts));
    int bl[2] = {1, 1};
    MPI_Aint d[2] = {0, 2 * N};
    MPI_Datatype ty[2] = {bytes, shorts};
    MPI_CHECK(MPI_Type_create_struct(2, bl, d, ty, &t));
    MPI_CHECK(MPI_Type_commit(&t));
    MPI_CHECK(MPI_Type_free(&bytes));
    MPI_CHECK(MPI_Type_free(&shorts));
    return t;
}

static MPI_Datatype make_u(void) {
    MPI_Datatype shorts, u;
    MPI_CHECK(MPI_Type_vector(N / 2, 2, 3, MPI_SHORT, &shorts));
    int bl[2] = {N, 1};
    MPI_Aint d[2] = {0, N + 8};
    MPI_Datatype ty[2] = {MPI_BYTE, shorts};
    MPI_CHECK(MPI_Type_create_struct(2, bl, d, ty, &u));
    MPI_CHECK(MPI_Type_commit(&u));
    MPI_CHECK(MPI_Type_free(&shorts));
    return u;
}

/* Where U's short i lies. */
static size_t short_at_u(int i) { return (size_t)N + 8 + (size_t)(i / 2) * 6 + (size_t)(i % 2) * 2; }

/* Span of one element of T (2N bytes of chars, then 2N shorts) and of U. */
#define T_SPAN (2 * N + 4 * N)
#define U_SPAN (N + 8 + 3 * N)

/* Fills an element of T or U from (rank, round): byte i and short i. */
static unsigned char byte_of(int rank, int round, int i) { return (unsigned char)(rank * 31 + round * 7 + i * 13); }
static short short_of(int rank, int round, int i) { return (short)(rank * 1000 + round * 100 + i * 3); }

static void fill_t(unsigned char *m, int rank, int round) {
    memset(m, 0xEE, T_SPAN);
    for (int i = 0; i < N; i++) {
        m[2 * i] = byte_of(rank, round, i);
        short s = short_of(rank, round, i);
        memcpy(m + 2 * N + 4 * i, &s, 2);
    }
}

static void fill_u(unsigned char *m, int rank, int round) {
    memset(m, 0xEE, U_SPAN);
    for (int i = 0; i < N; i++) {
        m[i] = byte_of(rank, round, i);
        short s = short_of(rank, round, i);
        memcpy(m + short_at_u(i), &s, 2);
    }
}

/* Compares a received element with what the peer filled: the typemap's bytes, and the gaps
 * (0x77 before the receive) untouched. */
static void check_t(const unsigned char *m, int peer, int round, const char *what) {
    for (int i = 0; i < N && check_failures < 5; i++) {
        short s;
        memcpy(&s, m + 2 * N + 4 * i, 2);
        EXPECT(m[2 * i] == byte_of(peer, round, i) && s == short_of(peer, round, i), "%s: element %d", what, i);
        EXPECT(m[2 * i + 1] == 0x77 && m[2 * N + 4 * i + 2] == 0x77, "%s: gap %d written", what, i);
    }
}

static void check_u(const unsigned char *m, int peer, int round, const char *what) {
    for (int i = 0; i < N && check_failures < 5; i++) {
        short s;
        memcpy(&s, m + short_at_u(i), 2);
        EXPECT(m[i] == byte_of(peer, round, i) && s == short_of(peer, round, i), "%s: element %d", what, i);
        if (i % 2 == 1) EXPECT(m[short_at_u(i) + 2] == 0x77, "%s: gap after short %d written", what, i);
    }
    EXPECT(m[N] == 0x77 && m[N + 7] == 0x77, "%s: padding written", what);
}

static void check_status(MPI_Status *st, MPI_Datatype t, int peer, int tag, const char *what) {
    int n = -1, bytes = -1;
    MPI_CHECK(MPI_Get_count(st, t, &n));
    MPI_CHECK(MPI_Get_count(st, MPI_BYTE, &bytes));
    EXPECT(n == 1 && bytes == 3 * N, "%s: count %d, bytes %d", what, n, bytes);
    /* MPI_ERROR: only multiple completions with MPI_ERR_IN_STATUS set it. */
    EXPECT(st->MPI_SOURCE == peer && st->MPI_TAG == tag, "%s: status %d %d", what, st->MPI_SOURCE, st->MPI_TAG);
}

int main(int argc, char **argv) {
    MPI_CHECK(MPI_Init(&argc, &argv));
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int peer = rank ^ 1, active = peer < size, even = rank % 2 == 0;
    MPI_Datatype t = make_t(), u = make_u();
    unsigned char *st_ = malloc(T_SPAN), *rt = malloc(T_SPAN), *su = malloc(U_SPAN), *ru = malloc(U_SPAN);
    MPI_Status s;
    for (int round = 0; round < 3 && active; round++) {
        /* T to T, blocking: even sends first. */
        fill_t(st_, rank, round);
        memset(rt, 0x77, T_SPAN);
        for (int turn = 0; turn < 2; turn++) {
            if (even == (turn == 0)) {
                MPI_CHECK(MPI_Send(st_, 1, t, peer, 10 + round, MPI_COMM_WORLD));
            } else {
                MPI_CHECK(MPI_Recv(rt, 1, t, peer, 10 + round, MPI_COMM_WORLD, &s));
                check_status(&s, t, peer, 10 + round, "T->T");
            }
        }
        check_t(rt, peer, round, "T->T");
        /* T to U and U to T at once, nonblocking: each rank sends T and receives U, or the
         * reverse, by parity. */
        memset(rt, 0x77, T_SPAN);
        memset(ru, 0x77, U_SPAN);
        fill_t(st_, rank, round);
        fill_u(su, rank, round);
        MPI_Request rq[2];
        MPI_Status ss[2];
        if (even) {
            MPI_CHECK(MPI_Irecv(ru, 1, u, peer, 20, MPI_COMM_WORLD, &rq[0]));
            MPI_CHECK(MPI_Isend(st_, 1, t, peer, 20, MPI_COMM_WORLD, &rq[1]));
        } else {
            MPI_CHECK(MPI_Irecv(rt, 1, t, peer, 20, MPI_COMM_WORLD, &rq[0]));
            MPI_CHECK(MPI_Isend(su, 1, u, peer, 20, MPI_COMM_WORLD, &rq[1]));
        }
        MPI_CHECK(MPI_Waitall(2, rq, ss));
        if (even) {
            check_status(&ss[0], u, peer, 20, "T->U");
            check_u(ru, peer, round, "T->U");
        } else {
            check_status(&ss[0], t, peer, 20, "U->T");
            check_t(rt, peer, round, "U->T");
        }
        /* A receive of T probed first (any source, any tag), then taken. */
        if (even) {
            MPI_CHECK(MPI_Send(su, 1, u, peer, 30 + round, MPI_COMM_WORLD));
        } else {
            memset(rt, 0x77, T_SPAN);
            MPI_CHECK(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &s));
            check_status(&s, t, peer, 30 + round, "probe U->T");
            MPI_CHECK(MPI_Recv(rt, 1, t, s.MPI_SOURCE, s.MPI_TAG, MPI_COMM_WORLD, &s));
            check_status(&s, t, peer, 30 + round, "U->T probed");
            check_t(rt, peer, round, "U->T probed");
        }
    }
    free(st_); free(rt); free(su); free(ru);
    MPI_CHECK(MPI_Type_free(&t));
    MPI_CHECK(MPI_Type_free(&u));
    int rc = report_verdict("p2p_interp");
    MPI_Finalize();
    return rc;
}
