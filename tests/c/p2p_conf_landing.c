/* Point-to-point conformance, receives that sluice leaves to the MPI but that a pipelined
 * message can match (issue 21's reports): the pipeline's first message is S* bytes, an odd
 * number, and must be accepted by any legal receive of the whole message.
 * - large-block receive types (MPICH keeps receives of >= 512 KiB with blocks of >= 64 B in
 *   its own engine): a 1 MiB block-indexed send (16-byte blocks, pipelined) received into
 *   hvector(2 x contiguous(131072 ints)), receive count 1 and 2, by Recv, Irecv+Wait,
 *   Recv_init+Start+Wait, Sendrecv and Sendrecv_replace;
 * - contiguous receive types whose element is not a byte: MPI_INT, MPI_C_DOUBLE_COMPLEX, and a
 *   resized struct of MPI_INT and MPI_DOUBLE members with a nonzero lower bound (contiguous in
 *   memory), count 17 (received by Sendrecv);
 * - self-sends: a receive of a basic type pre-posted and matched by a pipelined Isend to self;
 * - MPI_ERROR of statuses filled by probes and matched probes of pipelined messages (recorded
 *   as behaviours: the harness compares them with the bare MPI's);
 * - a persistent receive created before, and one created after, MPI_Probe found a pipelined
 *   message: Start must receive that message, not the next one;
 * - MPI_Cancel of a persistent receive that MPI_Start served from a probed message;
 * - MPI_Sendrecv_replace of a message MPI_Probe found;
 * - MPI_Testany's flag when a tracked receive completed and a send is still active;
 * - receive types whose layout the MPI decides unusually: (h)vectors of MPI_CHAR with a byte
 *   stride of -1 (an array reversed by the standard; Open MPI 4.1 lays them out forward), and on
 *   MPI-4 MPIs a type built by a large-count constructor (MPI_Type_vector_c), whose arguments
 *   only MPI_Type_get_contents_c returns: a pipelined send into each, by every receive kind;
 * - ping-ping of one MPI_INT, repeated (small messages next to the pipeline).
 * Every byte of every receive allocation is checked (guards and gaps included), every status. */
#define SLUICE_P2P_CONF
#include "check.h"

#define N_INTS 262144 /* 1 MiB of MPI_INT */

static int rank, peer;

/* Sends `scount` x `stype` from a fresh pattern and receives into (rtype, rcount) by `how`:
 * 0 Recv, 1 Irecv+Wait, 2 Recv_init+Start+Wait (two rounds), 3 Sendrecv. */
static void pair(MPI_Datatype stype, int scount, MPI_Datatype rtype, int rcount, int how, int tag, const char *what) {
    static const char *HOW[4] = {"Recv", "Irecv+Wait", "Recv_init+Start+Wait", "Sendrecv"};
    conf_set_ctx("%s, %s, receive count %d", what, HOW[how], rcount);
    int rounds = how == 2 ? 2 : 1;
    MPI_Request pr = MPI_REQUEST_NULL;
    conf_buf r = conf_alloc(rtype, rcount, conf_seed(tag, rank, 1, 0));
    if (how == 2) MPI_OK(MPI_Recv_init(r.p, rcount, rtype, peer, tag, MPI_COMM_WORLD, &pr));
    int ssize, rsize;
    MPI_Type_size(stype, &ssize);
    MPI_Type_size(rtype, &rsize);
    int want = (int)((size_t)ssize * scount / rsize);
    for (int round = 0; round < rounds; round++) {
        uint64_t sseed = conf_seed(tag, rank, 2, round), rseed = conf_seed(tag, peer, 2, round);
        conf_buf s = conf_alloc(stype, scount, sseed);
        conf_refill(&r, conf_seed(tag, rank, 1, round));
        MPI_Request sq;
        MPI_Status st;
        switch (how) {
        case 0:
            MPI_OK(MPI_Isend(s.p, scount, stype, peer, tag, MPI_COMM_WORLD, &sq));
            MPI_OK(MPI_Recv(r.p, rcount, rtype, peer, tag, MPI_COMM_WORLD, &st));
            MPI_OK(MPI_Wait(&sq, MPI_STATUS_IGNORE));
            break;
        case 1: {
            MPI_Request rq;
            MPI_OK(MPI_Irecv(r.p, rcount, rtype, peer, tag, MPI_COMM_WORLD, &rq));
            MPI_OK(MPI_Send(s.p, scount, stype, peer, tag, MPI_COMM_WORLD));
            MPI_OK(MPI_Wait(&rq, &st));
            break;
        }
        case 2:
            MPI_OK(MPI_Start(&pr));
            MPI_OK(MPI_Send(s.p, scount, stype, peer, tag, MPI_COMM_WORLD));
            MPI_OK(MPI_Wait(&pr, &st));
            break;
        default:
            MPI_OK(MPI_Sendrecv(s.p, scount, stype, peer, tag, r.p, rcount, rtype, peer, tag, MPI_COMM_WORLD, &st));
        }
        CHECK_STATUS(&st, peer, tag, rtype, want, conf_elements_of(rtype, want));
        /* the peer sent the same shape from its own pattern */
        CHECK_DATA(&r, stype, scount, rseed);
        conf_free(&s);
    }
    if (how == 2) MPI_OK(MPI_Request_free(&pr));
    conf_free(&r);
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
}

/* MPI_Sendrecv_replace of a large-block type (MPICH's engine receives it in place). */
static void replace(MPI_Datatype t, int count, int tag) {
    conf_set_ctx("Sendrecv_replace, %d x hvector(2 x contiguous(131072 ints))", count);
    uint64_t seed = conf_seed(tag, rank, 3, 0), pseed = conf_seed(tag, peer, 3, 0);
    conf_buf r = conf_alloc(t, count, seed);
    MPI_Status st;
    MPI_OK(MPI_Sendrecv_replace(r.p, count, t, peer, tag, peer, tag, MPI_COMM_WORLD, &st));
    CHECK_STATUS(&st, peer, tag, t, count, conf_elements_of(t, count));
    /* the peer's pattern in the type map, this rank's own pattern elsewhere */
    CHECK_DATA(&r, t, count, pseed);
    conf_free(&r);
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
}

/* A pipelined Isend to self matched by a pre-posted receive of a basic type. */
static void self_send(MPI_Datatype basic, int basic_bytes, MPI_Datatype vec, int tag, const char *name) {
    conf_set_ctx("self-send, vector -> pre-posted %s", name);
    int vsize;
    MPI_Type_size(vec, &vsize);
    int n = vsize / basic_bytes;
    uint64_t sseed = conf_seed(tag, rank, 4, 0);
    conf_buf s = conf_alloc(vec, 1, sseed), r = conf_alloc(basic, n, conf_seed(tag, rank, 5, 0));
    MPI_Request q[2];
    MPI_Status st[2];
    MPI_OK(MPI_Irecv(r.p, n, basic, rank, tag, MPI_COMM_WORLD, &q[0]));
    MPI_OK(MPI_Isend(s.p, 1, vec, rank, tag, MPI_COMM_WORLD, &q[1]));
    MPI_OK(MPI_Waitall(2, q, st));
    CHECK_STATUS(&st[0], rank, tag, basic, n, conf_elements_of(basic, n));
    CHECK_DATA(&r, vec, 1, sseed);
    conf_free(&s);
    conf_free(&r);
}

/* MPI_ERROR after each probe of a pipelined message (implementation-defined for MPI_Probe:
 * MPICH writes it, Open MPI leaves it): recorded for the harness to compare. */
static void probe_error_field(MPI_Datatype vec, int tag) {
    static const char *HOW[4] = {"probe", "iprobe", "mprobe", "improbe"};
    for (int how = 0; how < 4; how++) {
        conf_set_ctx("MPI_ERROR after %s of a pipelined message", HOW[how]);
        int tg = tag + how;
        uint64_t sseed = conf_seed(tg, rank, 6, 0);
        conf_buf s = conf_alloc(vec, 1, sseed), r = conf_alloc(vec, 1, conf_seed(tg, rank, 7, 0));
        MPI_Request sq;
        MPI_Status st;
        MPI_Message m = MPI_MESSAGE_NULL;
        int flag = 0;
        MPI_OK(MPI_Isend(s.p, 1, vec, peer, tg, MPI_COMM_WORLD, &sq));
        st.MPI_ERROR = 12345;
        switch (how) {
        case 0: MPI_OK(MPI_Probe(peer, tg, MPI_COMM_WORLD, &st)); break;
        case 1: CONF_POLL("MPI_Iprobe", { st.MPI_ERROR = 12345; MPI_OK(MPI_Iprobe(peer, tg, MPI_COMM_WORLD, &flag, &st)); }, flag); break;
        case 2: MPI_OK(MPI_Mprobe(peer, tg, MPI_COMM_WORLD, &m, &st)); break;
        default:
            CONF_POLL("MPI_Improbe", { st.MPI_ERROR = 12345; MPI_OK(MPI_Improbe(peer, tg, MPI_COMM_WORLD, &flag, &m, &st)); }, flag);
        }
        conf_behavior(HOW[how], "error_field=%s", st.MPI_ERROR == 12345 ? "kept" : st.MPI_ERROR == 0 ? "zero" : "other");
        CHECK(st.MPI_ERROR == 12345 || st.MPI_ERROR == MPI_SUCCESS, "MPI_ERROR %d", st.MPI_ERROR);
        int size;
        MPI_Type_size(vec, &size);
        CHECK_STATUS(&st, peer, tg, MPI_BYTE, size, size);
        st.MPI_ERROR = 12345;
        if (how < 2) MPI_OK(MPI_Recv(r.p, 1, vec, peer, tg, MPI_COMM_WORLD, &st));
        else MPI_OK(MPI_Mrecv(r.p, 1, vec, &m, &st));
        char key[32];
        snprintf(key, sizeof key, "%s.receive", HOW[how]);
        conf_behavior(key, "error_field=%s", st.MPI_ERROR == 12345 ? "kept" : "other");
        CHECK_DATA(&r, vec, 1, conf_seed(tg, peer, 6, 0));
        MPI_OK(MPI_Wait(&sq, MPI_STATUS_IGNORE));
        conf_free(&s);
        conf_free(&r);
        MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    }
}

/* A persistent receive created before (when = 0) or after (1) MPI_Probe reported a pipelined
 * message; the peer then sends a second message on the same envelope. Start must get the
 * probed (first) message, a second Start the second. */
static void persistent_after_probe(MPI_Datatype vec, MPI_Datatype rtype, int when, int any, int tag) {
    conf_set_ctx("Recv_init %s MPI_Probe of a pipelined message, receive type %s%s", when ? "after" : "before",
                 rtype == vec ? "vector" : "MPI_INT", any ? ", wildcards" : "");
    int vsize;
    MPI_Type_size(vec, &vsize);
    int rcount = rtype == vec ? 1 : vsize / 4;
    int src = any ? MPI_ANY_SOURCE : peer, tg = any ? MPI_ANY_TAG : tag;
    conf_buf r = conf_alloc(rtype, rcount, conf_seed(tag, rank, 8, 0));
    conf_buf s0 = conf_alloc(vec, 1, conf_seed(tag, rank, 9, 0)), s1 = conf_alloc(vec, 1, conf_seed(tag, rank, 9, 1));
    MPI_Request pr = MPI_REQUEST_NULL, sq[2];
    MPI_Status st;
    if (!when) MPI_OK(MPI_Recv_init(r.p, rcount, rtype, src, tg, MPI_COMM_WORLD, &pr));
    MPI_OK(MPI_Isend(s0.p, 1, vec, peer, tag, MPI_COMM_WORLD, &sq[0]));
    MPI_OK(MPI_Isend(s1.p, 1, vec, peer, tag, MPI_COMM_WORLD, &sq[1]));
    MPI_OK(MPI_Probe(peer, tag, MPI_COMM_WORLD, &st));
    if (when) MPI_OK(MPI_Recv_init(r.p, rcount, rtype, src, tg, MPI_COMM_WORLD, &pr));
    for (int k = 0; k < 2; k++) {
        conf_refill(&r, conf_seed(tag, rank, 8, k));
        MPI_OK(MPI_Start(&pr));
        MPI_OK(MPI_Wait(&pr, &st));
        CHECK_STATUS(&st, peer, tag, rtype, rcount, conf_elements_of(rtype, rcount));
        CHECK_DATA(&r, vec, 1, conf_seed(tag, peer, 9, k));
    }
    MPI_OK(MPI_Waitall(2, sq, MPI_STATUSES_IGNORE));
    MPI_OK(MPI_Request_free(&pr));
    conf_free(&r);
    conf_free(&s0);
    conf_free(&s1);
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
}

/* MPI_Cancel of a persistent receive started after MPI_Probe found a pipelined message: the
 * message is there when the receive starts, so it matches at once and the cancel fails (both
 * MPIs, measured bare); recorded for the harness, and the data must then be complete. */
static void cancel_after_probe(MPI_Datatype vec, int tag) {
    conf_set_ctx("MPI_Cancel of a persistent receive started after MPI_Probe");
    conf_buf r = conf_alloc(vec, 1, conf_seed(tag, rank, 10, 0)), s = conf_alloc(vec, 1, conf_seed(tag, rank, 11, 0));
    MPI_Request pr, sq;
    MPI_Status st;
    int cancelled = -1;
    MPI_OK(MPI_Isend(s.p, 1, vec, peer, tag, MPI_COMM_WORLD, &sq));
    MPI_OK(MPI_Probe(peer, tag, MPI_COMM_WORLD, &st));
    MPI_OK(MPI_Recv_init(r.p, 1, vec, peer, tag, MPI_COMM_WORLD, &pr));
    MPI_OK(MPI_Start(&pr));
    MPI_OK(MPI_Cancel(&pr));
    MPI_OK(MPI_Wait(&pr, &st));
    MPI_OK(MPI_Test_cancelled(&st, &cancelled));
    conf_behavior("cancel_after_probe", "cancelled=%d", cancelled);
    if (!cancelled) {
        CHECK_STATUS(&st, peer, tag, vec, 1, conf_elements_of(vec, 1));
        CHECK_DATA(&r, vec, 1, conf_seed(tag, peer, 11, 0));
    } else {
        /* a cancelled receive leaves the message for the next one */
        MPI_OK(MPI_Recv(r.p, 1, vec, peer, tag, MPI_COMM_WORLD, &st));
    }
    MPI_OK(MPI_Wait(&sq, MPI_STATUS_IGNORE));
    MPI_OK(MPI_Request_free(&pr));
    conf_free(&r);
    conf_free(&s);
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
}

/* MPI_Testany over a pipelined receive (tracked by sluice) and a synchronous send: after the
 * receive completed, the send cannot complete until the peer posts its receive, which it does
 * only after a "go" message sent here after that completion. Testany must then say flag 0 (the
 * send is active), whatever the flag held before the call. The receive is persistent, so it
 * stays tracked after it completed. Even ranks test, odd ranks serve. */
static void testany_flag(MPI_Datatype vec, int tag) {
    conf_set_ctx("MPI_Testany: flag after a tracked receive completed, the send still active");
    int small = 7, got = 0;
    if (rank % 2 == 0) {
        conf_buf r = conf_alloc(vec, 1, conf_seed(tag, rank, 12, 0));
        MPI_Request q[2];
        /* persistent: it stays tracked after it completed */
        MPI_OK(MPI_Recv_init(r.p, 1, vec, peer, tag, MPI_COMM_WORLD, &q[0]));
        MPI_OK(MPI_Start(&q[0]));
        MPI_Request pr = q[0];
        MPI_OK(MPI_Issend(&small, 1, MPI_INT, peer, tag + 1, MPI_COMM_WORLD, &q[1]));
        int done = 0, first = -1, go = 1;
        while (done < 2) {
            int idx = -5, flag = 1; /* a stale 1 must be overwritten */
            MPI_Status st;
            MPI_OK(MPI_Testany(2, q, &idx, &flag, &st));
            if (!flag) continue;
            CHECK(idx == 0 || idx == 1, "flag 1 with index %d after %d completions", idx, done);
            if (idx != 0 && idx != 1) break;
            if (done++ == 0) {
                first = idx;
                if (idx == 0) MPI_OK(MPI_Send(&go, 1, MPI_INT, peer, tag + 2, MPI_COMM_WORLD));
            }
        }
        CHECK(first == 0, "the synchronous send completed before its receive was posted");
        CHECK_DATA(&r, vec, 1, conf_seed(tag, peer, 13, 0));
        MPI_OK(MPI_Request_free(&pr));
        conf_free(&r);
    } else {
        conf_buf s = conf_alloc(vec, 1, conf_seed(tag, rank, 13, 0));
        MPI_OK(MPI_Send(s.p, 1, vec, peer, tag, MPI_COMM_WORLD));
        int go = 0;
        MPI_OK(MPI_Recv(&go, 1, MPI_INT, peer, tag + 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        MPI_OK(MPI_Recv(&got, 1, MPI_INT, peer, tag + 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(got == 7, "got %d", got);
        conf_free(&s);
    }
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
}

/* MPI_Sendrecv_replace whose receive side takes a message MPI_Probe found (pipelined): the
 * probed message is received, and the buffer's previous contents are what is sent. */
static void replace_after_probe(MPI_Datatype vec, int tag) {
    conf_set_ctx("MPI_Sendrecv_replace of a probed pipelined message");
    uint64_t rseed = conf_seed(tag, rank, 14, 0);
    conf_buf s = conf_alloc(vec, 1, conf_seed(tag, rank, 15, 0)), r = conf_alloc(vec, 1, rseed);
    conf_buf back = conf_alloc(vec, 1, conf_seed(tag, rank, 16, 0));
    MPI_Request sq, bq;
    MPI_Status st;
    MPI_OK(MPI_Irecv(back.p, 1, vec, peer, tag + 1, MPI_COMM_WORLD, &bq)); /* the replace's send */
    MPI_OK(MPI_Isend(s.p, 1, vec, peer, tag, MPI_COMM_WORLD, &sq));
    MPI_OK(MPI_Probe(peer, tag, MPI_COMM_WORLD, &st));
    MPI_OK(MPI_Sendrecv_replace(r.p, 1, vec, peer, tag + 1, peer, tag, MPI_COMM_WORLD, &st));
    CHECK_STATUS(&st, peer, tag, vec, 1, conf_elements_of(vec, 1));
    CHECK_DATA(&r, vec, 1, conf_seed(tag, peer, 15, 0));
    MPI_OK(MPI_Wait(&bq, &st));
    CHECK_DATA(&back, vec, 1, conf_seed(tag, peer, 14, 0));
    MPI_OK(MPI_Wait(&sq, MPI_STATUS_IGNORE));
    conf_free(&s);
    conf_free(&r);
    conf_free(&back);
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
}

/* Ping-ping of one MPI_INT: both ranks send, then receive. */
static void ping_ping(int rounds, int tag) {
    conf_set_ctx("ping-ping of 1 MPI_INT");
    for (int k = 0; k < rounds; k++) {
        int out = rank * 100000 + k, in = -1;
        MPI_Request q;
        MPI_Status st;
        MPI_OK(MPI_Isend(&out, 1, MPI_INT, peer, tag, MPI_COMM_WORLD, &q));
        MPI_OK(MPI_Recv(&in, 1, MPI_INT, peer, tag, MPI_COMM_WORLD, &st));
        MPI_OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
        CHECK(in == peer * 100000 + k, "got %d", in);
        CHECK_STATUS(&st, peer, tag, MPI_INT, 1, 1);
    }
}

int main(int argc, char **argv) {
    MPI_OK(MPI_Init(&argc, &argv));
    conf_comm cs[3];
    MPI_Comm dup, split;
    conf_begin("p2p_conf_landing", cs, &dup, &split);
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    rank = conf_rank;
    peer = rank ^ 1;
    if (peer >= size) peer = rank; /* odd sizes: the last rank talks to itself */

    /* send: 1 MiB of ints in 16-byte blocks (block-indexed, every other 16 bytes) */
    int nb = N_INTS / 4;
    int *displs = conf_malloc(sizeof(int) * nb);
    for (int i = 0; i < nb; i++) displs[i] = 8 * i;
    MPI_Datatype blocks, half, large, vec, rs_struct, st_members;
    MPI_OK(MPI_Type_create_indexed_block(nb, 4, displs, MPI_INT, &blocks));
    MPI_OK(MPI_Type_commit(&blocks));
    free(displs);
    /* receive: two 512 KiB blocks, 64 bytes apart */
    MPI_OK(MPI_Type_contiguous(N_INTS / 2, MPI_INT, &half));
    MPI_OK(MPI_Type_create_hvector(2, 1, (MPI_Aint)N_INTS * 2 + 64, half, &large));
    MPI_OK(MPI_Type_commit(&large));
    /* 512 KiB: every other int */
    MPI_OK(MPI_Type_vector(N_INTS / 2, 1, 2, MPI_INT, &vec));
    MPI_OK(MPI_Type_commit(&vec));
    /* contiguous in memory, not bytes: {int, double} packed (12 bytes), lower bound 16 */
    int bl[2] = {1, 1};
    MPI_Aint dp[2] = {16, 20};
    MPI_Datatype ty[2] = {MPI_INT, MPI_DOUBLE};
    MPI_OK(MPI_Type_create_struct(2, bl, dp, ty, &st_members));
    MPI_OK(MPI_Type_create_resized(st_members, 16, 12, &rs_struct));
    MPI_OK(MPI_Type_commit(&rs_struct));
    /* the same signature as 17 x rs_struct, as a strided send */
    MPI_Datatype rs_sparse;
    MPI_OK(MPI_Type_create_resized(st_members, 0, 40, &rs_sparse));
    MPI_OK(MPI_Type_commit(&rs_sparse));
    /* a predefined pair type with padding, strided: sluice packs the send */
    MPI_Datatype pair_vec;
    MPI_OK(MPI_Type_vector(1000, 1, 2, MPI_DOUBLE_INT, &pair_vec));
    MPI_OK(MPI_Type_commit(&pair_vec));
    /* 300,000 chars reversed (byte stride -1), and the same chars every other byte (pipelined) */
    enum { N_CHARS = 300000 };
    MPI_Datatype rev_vec, rev_hvec, sparse_chars, large_count;
    /* (placed at their last byte, so that the lower bound is not negative on any MPI) */
    MPI_Datatype reversed;
    int one = 1;
    MPI_Aint last = N_CHARS - 1;
    MPI_OK(MPI_Type_vector(N_CHARS, 1, -1, MPI_CHAR, &reversed));
    MPI_OK(MPI_Type_create_hindexed(1, &one, &last, reversed, &rev_vec));
    MPI_OK(MPI_Type_commit(&rev_vec));
    MPI_Type_free(&reversed);
    last = N_CHARS / 2 - 1;
    MPI_OK(MPI_Type_create_hvector(N_CHARS / 2, 1, -1, MPI_CHAR, &reversed));
    MPI_OK(MPI_Type_create_hindexed(1, &one, &last, reversed, &rev_hvec));
    MPI_OK(MPI_Type_commit(&rev_hvec));
    MPI_Type_free(&reversed);
    MPI_OK(MPI_Type_vector(N_CHARS, 1, 2, MPI_CHAR, &sparse_chars));
    MPI_OK(MPI_Type_commit(&sparse_chars));
#if MPI_VERSION >= 4
    /* 512 KiB: every other int, built by the large-count constructor */
    MPI_OK(MPI_Type_vector_c(N_INTS / 2, 1, 2, MPI_INT, &large_count));
#else
    MPI_OK(MPI_Type_vector(N_INTS / 2, 1, 2, MPI_INT, &large_count));
#endif
    MPI_OK(MPI_Type_commit(&large_count));

    int tag = 100;
    for (int how = 0; how < 4; how++)
        for (int rc = 1; rc <= 2; rc++) pair(blocks, 1, large, rc, how, tag++, "block-indexed 16 B -> hvector(2 x 512 KiB)");
    replace(large, 1, tag++);
    for (int how = 0; how < 4; how++) {
        pair(blocks, 1, MPI_INT, N_INTS, how, tag++, "block-indexed 16 B -> MPI_INT");
        pair(vec, 2, MPI_C_DOUBLE_COMPLEX, N_INTS / 4, how, tag++, "2 x vector -> MPI_C_DOUBLE_COMPLEX");
        pair(rs_sparse, 17, rs_struct, 17, how, tag++, "17 x struct{int,double} (extent 40) -> resized (lb 16, extent 12)");
        pair(rs_sparse, 1000, rs_struct, 1000, how, tag++, "1000 x struct{int,double} -> resized (lb 16, extent 12)");
        pair(pair_vec, 1, MPI_DOUBLE_INT, 1000, how, tag++, "vector of 1000 MPI_DOUBLE_INT -> MPI_DOUBLE_INT");
        pair(pair_vec, 300, MPI_DOUBLE_INT, 300000, how, tag++, "300 x vector of 1000 MPI_DOUBLE_INT -> MPI_DOUBLE_INT");
        pair(rs_sparse, 30000, rs_struct, 30000, how, tag++, "30000 x struct{int,double} -> resized (lb 16, extent 12)");
        for (int rc = 1; rc <= 2; rc++) {
            pair(sparse_chars, 1, rev_vec, rc, how, tag++, "vector(300000 chars, stride 2) -> vector(300000, 1, -1, MPI_CHAR)");
            pair(sparse_chars, 1, rev_hvec, 2 * rc, how, tag++, "vector(300000 chars, stride 2) -> hvector(150000, 1, -1, MPI_CHAR)");
        }
        pair(blocks, 1, large_count, 2, how, tag++, "block-indexed 16 B -> 2 x vector_c(131072, 1, 2, MPI_INT)");
    }
    self_send(MPI_INT, 4, vec, tag++, "MPI_INT");
    self_send(MPI_C_DOUBLE_COMPLEX, 16, vec, tag++, "MPI_C_DOUBLE_COMPLEX");
    probe_error_field(vec, tag);
    tag += 4;
    for (int when = 0; when < 2; when++)
        for (int any = 0; any < 2; any++) {
            persistent_after_probe(vec, vec, when, any, tag++);
            persistent_after_probe(vec, MPI_INT, when, any, tag++);
        }
    cancel_after_probe(vec, tag++);
    testany_flag(vec, tag);
    tag += 3;
    replace_after_probe(vec, tag);
    replace_after_probe(blocks, tag + 2);
    tag += 4;
    ping_ping(200, tag++);

    MPI_Type_free(&blocks);
    MPI_Type_free(&half);
    MPI_Type_free(&large);
    MPI_Type_free(&vec);
    MPI_Type_free(&st_members);
    MPI_Type_free(&rs_struct);
    MPI_Type_free(&rs_sparse);
    MPI_Type_free(&pair_vec);
    MPI_Type_free(&rev_vec);
    MPI_Type_free(&rev_hvec);
    MPI_Type_free(&sparse_chars);
    MPI_Type_free(&large_count);
    return conf_end(&dup, &split);
}
