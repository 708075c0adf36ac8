/* Point-to-point of a type sluice's kernels leave to the interpreter (100,000 blocks of 1-2
 * bytes: too many runs for an offset table, too small for the nested kernel), paired with a
 * signature-equal type that a kernel serves, in both directions, blocking, nonblocking and
 * probed, checked byte for byte with the status counts. On Open MPI the interpreted type's
 * messages go to the MPI's engine (faster than sluice's interpreter), on MPICH they stay with
 * sluice. Pairs ranks (0,1), (2,3), ...; an odd last rank only joins the verdict.
 *
 * T: indexed, block i of 1 + i % 2 bytes at byte 3i (N blocks, N * 3 / 2 bytes);
 * U: vector(N * 3 / 4, 2, 3, MPI_BYTE) (2-byte blocks: a kernel). Same signature. */
#include <string.h>
#include "check.h"

#define N 100000
#define BYTES (N / 2 * 3)
#define T_SPAN (3 * N)
#define U_SPAN (BYTES / 2 * 3)

static MPI_Datatype make_t(void) {
    static int bl[N], d[N];
    for (int i = 0; i < N; i++) {
        bl[i] = 1 + i % 2;
        d[i] = 3 * i;
    }
    MPI_Datatype t;
    MPI_CHECK(MPI_Type_indexed(N, bl, d, MPI_BYTE, &t));
    MPI_CHECK(MPI_Type_commit(&t));
    return t;
}

static MPI_Datatype make_u(void) {
    MPI_Datatype u;
    MPI_CHECK(MPI_Type_vector(BYTES / 2, 2, 3, MPI_BYTE, &u));
    MPI_CHECK(MPI_Type_commit(&u));
    return u;
}

/* Stream byte j of (rank, round). */
static unsigned char val(int rank, int round, int j) { return (unsigned char)(rank * 31 + round * 7 + j * 13 + j / 251); }

/* Where stream byte j of one element of T and of U lies (blocks of 1 and 2 bytes alternate:
 * 3 stream bytes per 6 memory bytes in T; 2 per 3 in U). */
static size_t t_at(int j) { int pair = j / 3, r = j % 3; return (size_t)pair * 6 + (r == 0 ? 0 : 3 + (r - 1)); }
static size_t u_at(int j) { return (size_t)(j / 2) * 3 + (size_t)(j % 2); }

static void fill(unsigned char *m, size_t span, size_t (*at)(int), int rank, int round) {
    memset(m, 0xEE, span);
    for (int j = 0; j < BYTES; j++) m[at(j)] = val(rank, round, j);
}

/* A received element: the typemap's bytes from the peer, every other byte still 0x77. */
static void check_elem(const unsigned char *m, size_t span, size_t (*at)(int), int peer, int round, const char *what) {
    unsigned char *seen = calloc(span, 1);
    for (int j = 0; j < BYTES && check_failures < 5; j++) {
        EXPECT(m[at(j)] == val(peer, round, j), "%s: stream byte %d", what, j);
        seen[at(j)] = 1;
    }
    for (size_t i = 0; i < span && check_failures < 5; i++)
        if (!seen[i]) EXPECT(m[i] == 0x77, "%s: gap byte %zu written", what, i);
    free(seen);
}

static void check_status(MPI_Status *st, MPI_Datatype t, int peer, int tag, const char *what) {
    int n = -1, bytes = -1;
    MPI_CHECK(MPI_Get_count(st, t, &n));
    MPI_CHECK(MPI_Get_count(st, MPI_BYTE, &bytes));
    EXPECT(n == 1 && bytes == BYTES, "%s: count %d, bytes %d", what, n, bytes);
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
    unsigned char *stb = malloc(T_SPAN), *rt = malloc(T_SPAN), *sub = malloc(U_SPAN), *ru = malloc(U_SPAN);
    MPI_Status s;
    for (int round = 0; round < 3 && active; round++) {
        /* T to T, blocking: even sends first. */
        fill(stb, T_SPAN, t_at, rank, round);
        memset(rt, 0x77, T_SPAN);
        for (int turn = 0; turn < 2; turn++) {
            if (even == (turn == 0)) {
                MPI_CHECK(MPI_Send(stb, 1, t, peer, 10 + round, MPI_COMM_WORLD));
            } else {
                MPI_CHECK(MPI_Recv(rt, 1, t, peer, 10 + round, MPI_COMM_WORLD, &s));
                check_status(&s, t, peer, 10 + round, "T->T");
            }
        }
        check_elem(rt, T_SPAN, t_at, peer, round, "T->T");
        /* T to U and U to T at once, nonblocking, by parity. */
        memset(rt, 0x77, T_SPAN);
        memset(ru, 0x77, U_SPAN);
        fill(stb, T_SPAN, t_at, rank, round);
        fill(sub, U_SPAN, u_at, rank, round);
        MPI_Request rq[2];
        MPI_Status ss[2];
        if (even) {
            MPI_CHECK(MPI_Irecv(ru, 1, u, peer, 20, MPI_COMM_WORLD, &rq[0]));
            MPI_CHECK(MPI_Isend(stb, 1, t, peer, 20, MPI_COMM_WORLD, &rq[1]));
        } else {
            MPI_CHECK(MPI_Irecv(rt, 1, t, peer, 20, MPI_COMM_WORLD, &rq[0]));
            MPI_CHECK(MPI_Isend(sub, 1, u, peer, 20, MPI_COMM_WORLD, &rq[1]));
        }
        MPI_CHECK(MPI_Waitall(2, rq, ss));
        if (even) {
            check_status(&ss[0], u, peer, 20, "T->U");
            check_elem(ru, U_SPAN, u_at, peer, round, "T->U");
        } else {
            check_status(&ss[0], t, peer, 20, "U->T");
            check_elem(rt, T_SPAN, t_at, peer, round, "U->T");
        }
        /* A receive of T probed first (any source, any tag), then taken. */
        if (even) {
            MPI_CHECK(MPI_Send(sub, 1, u, peer, 30 + round, MPI_COMM_WORLD));
        } else {
            memset(rt, 0x77, T_SPAN);
            MPI_CHECK(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &s));
            check_status(&s, t, peer, 30 + round, "probe U->T");
            MPI_CHECK(MPI_Recv(rt, 1, t, s.MPI_SOURCE, s.MPI_TAG, MPI_COMM_WORLD, &s));
            check_status(&s, t, peer, 30 + round, "U->T probed");
            check_elem(rt, T_SPAN, t_at, peer, round, "U->T probed");
        }
    }
    free(stb); free(rt); free(sub); free(ru);
    MPI_CHECK(MPI_Type_free(&t));
    MPI_CHECK(MPI_Type_free(&u));
    int rc = report_verdict("p2p_interp");
    MPI_Finalize();
    return rc;
}
