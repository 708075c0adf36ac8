/* Point-to-point conformance, matching: non-overtaking order per (sender, communicator, tag)
 * for sequences of messages of mixed sizes (8 B, 1 KiB, 300 KiB, 4 MiB: the large ones will take
 * sluice's pipelined path) with contiguous and non-contiguous types interleaved, received with
 * blocking receives after the sends (unexpected messages), with receives pre-posted before the
 * sends, with MPI_ANY_TAG (status tag in send order), with MPI_ANY_SOURCE + MPI_ANY_TAG;
 * MPI_ANY_SOURCE with two senders (per-sender order, status source); messages on different tags
 * received in the opposite order; a burst of tiny messages. Every byte checked. Runs on
 * MPI_COMM_WORLD, a duplicate and a split (renumbered) communicator, on any number of ranks >= 2. */
#define SLUICE_P2P_CONF
#include "check.h"

typedef struct {
    int st, rt;
    size_t bytes;
} msg_spec;

#define MiB (1 << 20)
static const msg_spec SEQ[] = {
    {T_INT, T_INT, 8},           {T_VEC_D, T_DOUBLE, 1024},      {T_VECT84, T_VECT84X3, 300 << 10},
    {T_DOUBLE, T_VEC_D2, 4 * MiB}, {T_STRUCT, T_STRUCT_PACKED, 8}, {T_SUBARRAY, T_INDEXED, 1024},
    {T_INT, T_VEC_I4, 300 << 10}, {T_VEC_D, T_VEC_D2, 4 * MiB},  {T_CHAR, T_VECT84, 8},
    {T_STRUCT, T_STRUCT, 300 << 10}, {T_VEC_I4, T_SUBARRAY, 1024}, {T_DOUBLE, T_DOUBLE, 8},
    {T_VEC_D2, T_DOUBLE, 300 << 10}, {T_INT, T_INT, 1024},
};
#define NSEQ (int)(sizeof SEQ / sizeof SEQ[0])

static size_t cap_bytes(const conf_comm *c, size_t b) { return !c->full && b > (300 << 10) ? 300 << 10 : b; }

/* mode 0: blocking receives after the sends; 1: receives pre-posted; 2: MPI_ANY_TAG with
 * varying tags; 3: MPI_ANY_SOURCE + MPI_ANY_TAG with varying tags. */
static void ordering(conf_comm *c, int mode) {
    static const char *NAMES[4] = {"unexpected", "pre-posted", "ANY_TAG", "ANY_SOURCE+ANY_TAG"};
    int base = 1000 + 100 * mode;
    conf_buf s[NSEQ], r[NSEQ];
    int sc[NSEQ], rc[NSEQ], tags[NSEQ];
    MPI_Request sq[NSEQ], rq[NSEQ];
    MPI_Status sts[NSEQ];
    for (int i = 0; i < NSEQ; i++) {
        int fam = CT[SEQ[i].st].family, units = conf_units_for(fam, cap_bytes(c, SEQ[i].bytes));
        sc[i] = units / CT[SEQ[i].st].units;
        rc[i] = units / CT[SEQ[i].rt].units;
        tags[i] = mode >= 2 ? base + i % 3 : base;
        s[i] = conf_alloc(CT[SEQ[i].st].t, sc[i], conf_seed(c->id, base + i, c->rank, c->right));
        r[i] = conf_alloc(CT[SEQ[i].rt].t, rc[i], 500 + i);
    }
    conf_set_ctx("%s: ordering, %s", c->label, NAMES[mode]);
    if (mode == 1) {
        for (int i = 0; i < NSEQ; i++)
            MPI_OK(MPI_Irecv(r[i].p, rc[i], CT[SEQ[i].rt].t, c->left, tags[i], c->comm, &rq[i]));
        MPI_OK(MPI_Barrier(c->comm));
    }
    for (int i = 0; i < NSEQ; i++) MPI_OK(MPI_Isend(s[i].p, sc[i], CT[SEQ[i].st].t, c->right, tags[i], c->comm, &sq[i]));
    if (mode == 0) MPI_OK(MPI_Barrier(c->comm)); /* let small messages arrive unexpected */
    if (mode == 1) {
        MPI_OK(MPI_Waitall(NSEQ, rq, sts));
    } else {
        for (int i = 0; i < NSEQ; i++) {
            conf_set_ctx("%s: ordering, %s, message %d (%d x %s -> %d x %s)", c->label, NAMES[mode], i, sc[i],
                         CT[SEQ[i].st].name, rc[i], CT[SEQ[i].rt].name);
            MPI_OK(MPI_Recv(r[i].p, rc[i], CT[SEQ[i].rt].t, mode == 3 ? MPI_ANY_SOURCE : c->left,
                            mode >= 2 ? MPI_ANY_TAG : tags[i], c->comm, &sts[i]));
        }
    }
    for (int i = 0; i < NSEQ; i++) {
        conf_set_ctx("%s: ordering, %s, message %d (%d x %s -> %d x %s)", c->label, NAMES[mode], i, sc[i],
                     CT[SEQ[i].st].name, rc[i], CT[SEQ[i].rt].name);
        int units = rc[i] * CT[SEQ[i].rt].units;
        CHECK_STATUS(&sts[i], c->left, tags[i], CT[SEQ[i].rt].t, rc[i],
                     units * conf_family_elements(CT[SEQ[i].rt].family));
        CHECK_DATA(&r[i], CT[SEQ[i].st].t, sc[i], conf_seed(c->id, base + i, c->left, c->rank));
    }
    MPI_OK(MPI_Waitall(NSEQ, sq, MPI_STATUSES_IGNORE));
    for (int i = 0; i < NSEQ; i++) {
        CHECK_UNTOUCHED(&s[i]);
        conf_free(&s[i]);
        conf_free(&r[i]);
    }
    MPI_OK(MPI_Barrier(c->comm)); /* nothing of this test is left for the wildcard receives */
}

/* Two messages to each neighbour; MPI_ANY_SOURCE receives keep each sender's order. */
static void any_source(conf_comm *c) {
    int tag = 3000;
    conf_set_ctx("%s: MPI_ANY_SOURCE from both neighbours", c->label);
    int dests[4] = {c->right, c->right, c->left, c->left};
    int kk[4];
    conf_buf s[4];
    MPI_Request sq[4];
    /* Message k of a sender to one destination: even k 1 KiB vector, odd k 300 KiB doubles. */
    int small = 1024 / 64, big = (300 << 10) / 8;
    for (int i = 0; i < 4; i++) {
        int k = 0;
        for (int j = 0; j < i; j++) k += dests[j] == dests[i];
        kk[i] = k;
        int vec = k % 2 == 0;
        s[i] = conf_alloc(vec ? CT[T_VEC_D].t : MPI_DOUBLE, vec ? small : big,
                          conf_seed(c->id, tag, c->rank * 16 + k, dests[i]));
        MPI_OK(MPI_Isend(s[i].p, vec ? small : big, vec ? CT[T_VEC_D].t : MPI_DOUBLE, dests[i], tag, c->comm, &sq[i]));
    }
    int seen[64] = {0};
    for (int i = 0; i < 4; i++) {
        int rt = i % 2 ? T_VEC_D2 : T_DOUBLE, rcount = i % 2 ? big / 8 : big;
        conf_buf r = conf_alloc(CT[rt].t, rcount, 40 + i);
        MPI_Status st;
        MPI_OK(MPI_Recv(r.p, rcount, CT[rt].t, MPI_ANY_SOURCE, tag, c->comm, &st));
        int src = st.MPI_SOURCE;
        CHECK(src == c->left || src == c->right, "source %d is no neighbour", src);
        if (src < 0 || src >= 64) conf_die(__FILE__, __LINE__, "bad source %d", src);
        int k = seen[src]++, vec = k % 2 == 0, n = vec ? small * 8 : big;
        CHECK_STATUS(&st, src, tag, CT[rt].t, n / CT[rt].units, n);
        CHECK_DATA(&r, vec ? CT[T_VEC_D].t : MPI_DOUBLE, vec ? small : big, conf_seed(c->id, tag, src * 16 + k, c->rank));
        conf_free(&r);
    }
    MPI_OK(MPI_Waitall(4, sq, MPI_STATUSES_IGNORE));
    for (int i = 0; i < 4; i++) conf_free(&s[i]);
    (void)kk;
    MPI_OK(MPI_Barrier(c->comm));
}

/* Different tags may be received in any order: the last one sent is received first. */
static void tags_out_of_order(conf_comm *c) {
    int base = 3100;
    conf_set_ctx("%s: tags received in reverse order", c->label);
    const int st[3] = {T_VEC_D, T_INT, T_VECT84}, rt[3] = {T_DOUBLE, T_VEC_I4, T_CHAR};
    size_t bytes[3] = {cap_bytes(c, 4 * MiB), 64, 1024};
    conf_buf s[3], r[3];
    int sc[3], rc[3];
    MPI_Request sq[3];
    for (int i = 0; i < 3; i++) {
        int units = conf_units_for(CT[st[i]].family, bytes[i]);
        sc[i] = units / CT[st[i]].units;
        rc[i] = units / CT[rt[i]].units;
        s[i] = conf_alloc(CT[st[i]].t, sc[i], conf_seed(c->id, base + i, c->rank, 0));
        r[i] = conf_alloc(CT[rt[i]].t, rc[i], 70 + i);
        MPI_OK(MPI_Isend(s[i].p, sc[i], CT[st[i]].t, c->right, base + i, c->comm, &sq[i]));
    }
    for (int i = 2; i >= 0; i--) {
        MPI_Status status;
        MPI_OK(MPI_Recv(r[i].p, rc[i], CT[rt[i]].t, c->left, base + i, c->comm, &status));
        CHECK_STATUS(&status, c->left, base + i, CT[rt[i]].t, rc[i], rc[i] * CT[rt[i]].units);
        CHECK_DATA(&r[i], CT[st[i]].t, sc[i], conf_seed(c->id, base + i, c->left, 0));
    }
    MPI_OK(MPI_Waitall(3, sq, MPI_STATUSES_IGNORE));
    for (int i = 0; i < 3; i++) {
        conf_free(&s[i]);
        conf_free(&r[i]);
    }
}

/* A burst of tiny messages, contiguous and not, on 7 tags, received with MPI_ANY_TAG. */
static void burst(conf_comm *c) {
    enum { N = 200 };
    conf_set_ctx("%s: burst of %d tiny messages", c->label, N);
    int out[N][8], in[8];
    MPI_Request sq[N];
    for (int i = 0; i < N; i++) {
        for (int j = 0; j < 8; j++) out[i][j] = c->rank * 100000 + i * 10 + j;
        /* even: 3 contiguous ints; odd: one vector(4,1,2,int) = elements 0, 2, 4, 6 */
        if (i % 2 == 0) MPI_OK(MPI_Isend(out[i], 3, MPI_INT, c->right, 4000 + i % 7, c->comm, &sq[i]));
        else MPI_OK(MPI_Isend(out[i], 1, CT[T_VEC_I4].t, c->right, 4000 + i % 7, c->comm, &sq[i]));
    }
    for (int i = 0; i < N; i++) {
        MPI_Status st;
        for (int j = 0; j < 8; j++) in[j] = -1;
        MPI_OK(MPI_Recv(in, 8, MPI_INT, c->left, MPI_ANY_TAG, c->comm, &st));
        int n = -1;
        MPI_Get_count(&st, MPI_INT, &n);
        CHECK(st.MPI_TAG == 4000 + i % 7, "message %d: tag %d", i, st.MPI_TAG);
        int want = i % 2 ? 4 : 3, ok = n == want && in[want] == -1;
        for (int j = 0; j < want && ok; j++) ok = in[j] == c->left * 100000 + i * 10 + (i % 2 ? 2 * j : j);
        CHECK(ok, "message %d: count %d (expected %d), values %d %d %d %d %d", i, n, want, in[0], in[1], in[2], in[3],
              in[4]);
    }
    MPI_OK(MPI_Waitall(N, sq, MPI_STATUSES_IGNORE));
    MPI_OK(MPI_Barrier(c->comm));
}

int main(int argc, char **argv) {
    MPI_OK(MPI_Init(&argc, &argv));
    conf_comm cs[3];
    MPI_Comm dup, split;
    int nc = conf_begin("p2p_conf_match", cs, &dup, &split);
    for (int i = 0; i < nc; i++) {
        for (int mode = 0; mode < 4; mode++)
            if (cs[i].full || mode % 2 == 0) ordering(&cs[i], mode);
        any_source(&cs[i]);
        tags_out_of_order(&cs[i]);
        burst(&cs[i]);
    }
    return conf_end(&dup, &split);
}
