/* Point-to-point conformance, basics: every send mode (Send, Bsend, Ssend, Rsend and the
 * I-forms) with contiguous and non-contiguous types on both sides, including mismatched-but-legal
 * pairs (contiguous <-> derived, two layouts of one signature, count 3 of a type <-> count 1 of a
 * type 3x larger); statuses, MPI_Get_count / MPI_Get_elements in the receiver's type (MPI_UNDEFINED
 * when the data is not a whole number of elements), receives larger than the message,
 * MPI_STATUS_IGNORE, zero counts, MPI_PROC_NULL, and truncation (MPI_ERR_TRUNCATE under
 * MPI_ERRORS_RETURN, small and large, contiguous and not; the job goes on and later messages
 * match). Every byte of every receive allocation is checked (tests/c/check.h), and send buffers
 * must be left as they were. Runs on MPI_COMM_WORLD, a duplicate and a split (renumbered)
 * communicator, at any number of ranks >= 2 (ring: send right, receive left). */
#define SLUICE_P2P_CONF
#include <string.h>
#include "check.h"

#define BSEND_BYTES (16 << 20)

enum { M_SEND, M_BSEND, M_SSEND, M_RSEND, M_ISEND, M_IBSEND, M_ISSEND, M_IRSEND, M_COUNT };
static const char *MODE_NAME[M_COUNT] = {"Send", "Bsend", "Ssend", "Rsend", "Isend", "Ibsend", "Issend", "Irsend"};

/* Send type -> receive type, same signature family. */
static const int PAIRS[][2] = {
    {T_INT, T_INT},           {T_DOUBLE, T_DOUBLE},       {T_VEC_D, T_VEC_D},
    {T_INT, T_VEC_I4},        {T_VEC_I4, T_INT},          {T_VEC_D, T_VEC_D2},
    {T_VEC_D2, T_VEC_D},      {T_VECT84, T_VECT84X3},     {T_VECT84X3, T_VECT84},
    {T_VECT84, T_CHAR},       {T_CHAR, T_VECT84},         {T_STRUCT, T_STRUCT},
    {T_STRUCT, T_STRUCT_PACKED}, {T_STRUCT_PACKED, T_STRUCT}, {T_SUBARRAY, T_INDEXED},
    {T_INDEXED, T_SUBARRAY},  {T_DOUBLE, T_VEC_D},
    /* committed types the handlers leave to the MPI: the fast path's per-slot count bound */
    {T_CONTIG64, T_BLOCKS64}, {T_BLOCKS64, T_CHAR},       {T_CHAR, T_CONTIG64},
};
#define NPAIRS (int)(sizeof PAIRS / sizeof PAIRS[0])

static int tag_base = 0;
static int next_tag(void) { return 100 + (tag_base++ % 20000); }

/* One message around the ring in `mode`: (st, N units) -> (rt, N units + extra elements). */
static void transfer(conf_comm *c, int mode, int st, int rt, size_t bytes, int extra) {
    int fam = CT[st].family, tag = next_tag();
    int units = conf_units_for(fam, bytes);
    int scount = units / CT[st].units, rcount = units / CT[rt].units;
    conf_set_ctx("%s: %s %d x %s -> %d x %s (+%d)", c->label, MODE_NAME[mode], scount, CT[st].name, rcount,
                 CT[rt].name, extra);
    uint64_t sseed = conf_seed(c->id, tag, c->rank, c->right), rseed = conf_seed(c->id, tag, c->left, c->rank);
    conf_buf s = conf_alloc(CT[st].t, scount, sseed);
    conf_buf r = conf_alloc(CT[rt].t, rcount + extra, 7777 + tag);
    MPI_Request rq, sq = MPI_REQUEST_NULL;
    MPI_Status status, sstatus;
    MPI_OK(MPI_Irecv(r.p, rcount + extra, CT[rt].t, c->left, tag, c->comm, &rq));
    if (mode == M_RSEND || mode == M_IRSEND) MPI_OK(MPI_Barrier(c->comm)); /* receives are posted */
    switch (mode) {
    case M_SEND: MPI_OK(MPI_Send(s.p, scount, CT[st].t, c->right, tag, c->comm)); break;
    case M_BSEND: MPI_OK(MPI_Bsend(s.p, scount, CT[st].t, c->right, tag, c->comm)); break;
    case M_SSEND: MPI_OK(MPI_Ssend(s.p, scount, CT[st].t, c->right, tag, c->comm)); break;
    case M_RSEND: MPI_OK(MPI_Rsend(s.p, scount, CT[st].t, c->right, tag, c->comm)); break;
    case M_ISEND: MPI_OK(MPI_Isend(s.p, scount, CT[st].t, c->right, tag, c->comm, &sq)); break;
    case M_IBSEND: MPI_OK(MPI_Ibsend(s.p, scount, CT[st].t, c->right, tag, c->comm, &sq)); break;
    case M_ISSEND: MPI_OK(MPI_Issend(s.p, scount, CT[st].t, c->right, tag, c->comm, &sq)); break;
    case M_IRSEND: MPI_OK(MPI_Irsend(s.p, scount, CT[st].t, c->right, tag, c->comm, &sq)); break;
    }
    if (mode >= M_ISEND) {
        MPI_OK(MPI_Wait(&sq, &sstatus));
        CHECK(sq == MPI_REQUEST_NULL, "send request not freed by MPI_Wait");
    }
    MPI_OK(MPI_Wait(&rq, &status));
    CHECK(rq == MPI_REQUEST_NULL, "receive request not freed by MPI_Wait");
    CHECK_STATUS(&status, c->left, tag, CT[rt].t, rcount, units * conf_family_elements(fam));
    CHECK_DATA(&r, CT[st].t, scount, rseed);
    CHECK_UNTOUCHED(&s);
    conf_free(&s);
    conf_free(&r);
}

static void send_modes(conf_comm *c) {
    size_t sizes[2] = {100, 200 << 10};
    for (int m = 0; m < M_COUNT; m++) {
        if (!c->full && m != M_SEND && m != M_ISSEND && m != M_IRSEND) continue;
        for (int p = 0; p < NPAIRS; p++) {
            if (!c->full && p % 3 != 0) continue;
            for (int z = 0; z < 2; z++) {
#ifdef MPICH_VERSION
                /* MPICH 4.0 (ch4:ucx): a buffered send of more than ~1.7 KB of a struct type
                 * arrives as MPI_ERR_TRUNCATE with count 0 (bare MPI, no sluice involved). */
                if ((m == M_BSEND || m == M_IBSEND) && CT[PAIRS[p][0]].family == F_STRUCT && z == 1) {
                    if (c->id == 1 && m == M_BSEND && PAIRS[p][0] == T_STRUCT && PAIRS[p][1] == T_STRUCT)
                        conf_behavior("bsend.large-struct", "not tested (MPICH truncates it)");
                    continue;
                }
#endif
                transfer(c, m, PAIRS[p][0], PAIRS[p][1], sizes[z], 0);
            }
        }
    }
    /* Receive buffers larger than the message: only the message's bytes change. */
    for (int p = 0; p < NPAIRS; p += c->full ? 1 : 4) transfer(c, M_ISEND, PAIRS[p][0], PAIRS[p][1], 3000, 3);
}

/* A message whose size is not a whole number of receive elements; blocking MPI_Recv. */
static void partial(conf_comm *c, MPI_Datatype stype, int scount, MPI_Datatype rtype, int rcount, int elements,
                    const char *what) {
    int tag = next_tag();
    conf_set_ctx("%s: partial %s", c->label, what);
    uint64_t sseed = conf_seed(c->id, tag, c->rank, c->right), rseed = conf_seed(c->id, tag, c->left, c->rank);
    conf_buf s = conf_alloc(stype, scount, sseed), r = conf_alloc(rtype, rcount, 99 + tag);
    MPI_Request sq;
    MPI_Status st;
    MPI_OK(MPI_Isend(s.p, scount, stype, c->right, tag, c->comm, &sq));
    MPI_OK(MPI_Recv(r.p, rcount, rtype, c->left, tag, c->comm, &st));
    MPI_OK(MPI_Wait(&sq, MPI_STATUS_IGNORE));
    CHECK_STATUS(&st, c->left, tag, rtype, MPI_UNDEFINED, elements);
    MPI_Count ex = -1;
    MPI_OK(MPI_Get_elements_x(&st, rtype, &ex));
    CHECK(ex == elements, "MPI_Get_elements_x %lld, expected %d", (long long)ex, elements);
    CHECK_DATA(&r, stype, scount, rseed);
    conf_free(&s);
    conf_free(&r);
}

static void counts_and_status(conf_comm *c) {
    /* 5 ints into vectors of 4 ints. */
    partial(c, MPI_INT, 5, CT[T_VEC_I4].t, 3, 5, "5 ints -> 3 x vector(4,1,2,int)");
    /* 20 ints (5 vectors) into 2 subarrays of 16. */
    partial(c, CT[T_VEC_I4].t, 5, CT[T_SUBARRAY].t, 2, 20, "5 x vector(4 ints) -> 2 x subarray(16 ints)");
    /* 12 doubles (contiguous) into vectors of 8. */
    partial(c, MPI_DOUBLE, 12, CT[T_VEC_D2].t, 2, 12, "12 doubles -> 2 x vector(4,2,3,double)");
    /* 130 chars into the OSU vector (64 chars each). */
    partial(c, MPI_CHAR, 130, CT[T_VECT84].t, 3, 130, "130 chars -> 3 x vect:8:4");
    /* {int, double} is a prefix of the struct's signature: 2 basic elements of 7. */
    {
        MPI_Datatype id;
        int bl[2] = {1, 1};
        MPI_Aint d[2] = {0, 8};
        MPI_Datatype ty[2] = {MPI_INT, MPI_DOUBLE};
        MPI_OK(MPI_Type_create_struct(2, bl, d, ty, &id));
        MPI_OK(MPI_Type_commit(&id));
        partial(c, id, 1, CT[T_STRUCT].t, 2, 2, "{int,double} -> 2 x struct{int,double,char[5]}");
        MPI_OK(MPI_Type_free(&id));
    }
    /* Whole structs, received with a larger count: count and elements of whole structs. */
    {
        int tag = next_tag();
        conf_set_ctx("%s: 3 structs into 5 packed structs", c->label);
        uint64_t sseed = conf_seed(c->id, tag, c->rank, c->right), rseed = conf_seed(c->id, tag, c->left, c->rank);
        conf_buf s = conf_alloc(CT[T_STRUCT].t, 3, sseed), r = conf_alloc(CT[T_STRUCT_PACKED].t, 5, 5);
        MPI_Request sq;
        MPI_Status st;
        MPI_OK(MPI_Isend(s.p, 3, CT[T_STRUCT].t, c->right, tag, c->comm, &sq));
        MPI_OK(MPI_Recv(r.p, 5, CT[T_STRUCT_PACKED].t, c->left, tag, c->comm, &st));
        MPI_OK(MPI_Wait(&sq, MPI_STATUS_IGNORE));
        CHECK_STATUS(&st, c->left, tag, CT[T_STRUCT_PACKED].t, 3, 21);
        CHECK_DATA(&r, CT[T_STRUCT].t, 3, rseed);
        conf_free(&s);
        conf_free(&r);
    }
    /* MPI_STATUS_IGNORE on MPI_Recv and MPI_Wait; MPI_ANY_SOURCE / MPI_ANY_TAG on a blocking Recv. */
    for (int k = 0; k < 3; k++) {
        int tag = next_tag(), st_t = k == 1 ? T_VEC_D : T_DOUBLE, rt = k == 2 ? T_VEC_D2 : T_VEC_D;
        conf_set_ctx("%s: status variant %d", c->label, k);
        uint64_t sseed = conf_seed(c->id, tag, c->rank, c->right), rseed = conf_seed(c->id, tag, c->left, c->rank);
        int sc = 64 / CT[st_t].units, rc = 64 / CT[rt].units;
        conf_buf s = conf_alloc(CT[st_t].t, sc, sseed), r = conf_alloc(CT[rt].t, rc, 3);
        MPI_Request sq, rq;
        MPI_Status st;
        MPI_OK(MPI_Isend(s.p, sc, CT[st_t].t, c->right, tag, c->comm, &sq));
        if (k == 0) {
            MPI_OK(MPI_Recv(r.p, rc, CT[rt].t, c->left, tag, c->comm, MPI_STATUS_IGNORE));
        } else if (k == 1) {
            MPI_OK(MPI_Irecv(r.p, rc, CT[rt].t, c->left, tag, c->comm, &rq));
            MPI_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        } else {
            MPI_OK(MPI_Recv(r.p, rc, CT[rt].t, MPI_ANY_SOURCE, MPI_ANY_TAG, c->comm, &st));
            CHECK_STATUS(&st, c->left, tag, CT[rt].t, rc, 64);
        }
        MPI_OK(MPI_Wait(&sq, MPI_STATUS_IGNORE));
        CHECK_DATA(&r, CT[st_t].t, sc, rseed);
        conf_free(&s);
        conf_free(&r);
    }
}

static void zero_counts(conf_comm *c) {
    for (int k = 0; k < 4; k++) {
        int tag = next_tag(), rt = k % 2 ? T_VEC_D : T_DOUBLE, st_t = k < 2 ? T_VEC_D2 : T_DOUBLE;
        int rcount = k == 3 ? 0 : 5;
        conf_set_ctx("%s: zero count %d (%s -> %d x %s)", c->label, k, CT[st_t].name, rcount, CT[rt].name);
        conf_buf s = conf_alloc(CT[st_t].t, 1, 1), r = conf_alloc(CT[rt].t, rcount, 2);
        void *sp = k == 2 ? NULL : s.p; /* a count of 0 may come with any address */
        MPI_Request rq, sq;
        MPI_Status st;
        MPI_OK(MPI_Irecv(r.p, rcount, CT[rt].t, c->left, tag, c->comm, &rq));
        if (k % 2) MPI_OK(MPI_Send(sp, 0, CT[st_t].t, c->right, tag, c->comm));
        else {
            MPI_OK(MPI_Isend(sp, 0, CT[st_t].t, c->right, tag, c->comm, &sq));
            MPI_OK(MPI_Wait(&sq, MPI_STATUS_IGNORE));
        }
        MPI_OK(MPI_Wait(&rq, &st));
        CHECK_STATUS(&st, c->left, tag, CT[rt].t, 0, 0);
        CHECK_UNTOUCHED(&r);
        CHECK_UNTOUCHED(&s);
        conf_free(&s);
        conf_free(&r);
    }
    /* Zero-count Ssend / Sendrecv / blocking Recv with a derived type. */
    int tag = next_tag();
    conf_set_ctx("%s: zero-count Sendrecv", c->label);
    conf_buf r = conf_alloc(CT[T_STRUCT].t, 2, 4);
    MPI_Status st;
    MPI_OK(MPI_Sendrecv(NULL, 0, CT[T_STRUCT].t, c->right, tag, r.p, 2, CT[T_STRUCT].t, c->left, tag, c->comm, &st));
    CHECK_STATUS(&st, c->left, tag, CT[T_STRUCT].t, 0, 0);
    CHECK_UNTOUCHED(&r);
    conf_free(&r);
}

static void proc_null(conf_comm *c) {
    conf_buf s = conf_alloc(CT[T_VECT84].t, 3, 11), r = conf_alloc(CT[T_VEC_D].t, 3, 12);
    MPI_Status st;
    MPI_Request rq;
    int flag = 0;
    conf_set_ctx("%s: MPI_PROC_NULL sends", c->label);
    MPI_OK(MPI_Send(s.p, 3, CT[T_VECT84].t, MPI_PROC_NULL, 1, c->comm));
    MPI_OK(MPI_Ssend(s.p, 3, CT[T_VECT84].t, MPI_PROC_NULL, 1, c->comm));
    MPI_OK(MPI_Bsend(s.p, 3, CT[T_VECT84].t, MPI_PROC_NULL, 1, c->comm));
    MPI_OK(MPI_Rsend(s.p, 3, CT[T_VECT84].t, MPI_PROC_NULL, 1, c->comm));
    MPI_Request sq[4];
    MPI_OK(MPI_Isend(s.p, 3, CT[T_VECT84].t, MPI_PROC_NULL, 1, c->comm, &sq[0]));
    MPI_OK(MPI_Issend(s.p, 3, CT[T_VECT84].t, MPI_PROC_NULL, 1, c->comm, &sq[1]));
    MPI_OK(MPI_Ibsend(s.p, 3, CT[T_VECT84].t, MPI_PROC_NULL, 1, c->comm, &sq[2]));
    MPI_OK(MPI_Irsend(s.p, 3, CT[T_VECT84].t, MPI_PROC_NULL, 1, c->comm, &sq[3]));
    MPI_OK(MPI_Waitall(4, sq, MPI_STATUSES_IGNORE));
    CHECK_UNTOUCHED(&s);

    conf_set_ctx("%s: MPI_Recv from MPI_PROC_NULL", c->label);
    MPI_OK(MPI_Recv(r.p, 3, CT[T_VEC_D].t, MPI_PROC_NULL, 5, c->comm, &st));
    CHECK_EMPTY_STATUS(&st, MPI_PROC_NULL);
    int n = -7;
    MPI_Get_count(&st, CT[T_VEC_D].t, &n);
    CHECK(n == 0, "count in the vector type %d", n);
    CHECK_UNTOUCHED(&r);

    conf_set_ctx("%s: MPI_Irecv from MPI_PROC_NULL + MPI_Test", c->label);
    MPI_OK(MPI_Irecv(r.p, 3, CT[T_VEC_D].t, MPI_PROC_NULL, MPI_ANY_TAG, c->comm, &rq));
    CONF_POLL("MPI_Test on a MPI_PROC_NULL receive", MPI_OK(MPI_Test(&rq, &flag, &st)), flag);
    CHECK(rq == MPI_REQUEST_NULL, "request not freed");
    /* MPICH 4.0 reports source 0 and tag 0 for a nonblocking receive from MPI_PROC_NULL
     * (MPI_Recv is right): recorded, compared with the bare MPI by the driver. */
    for (int k = 0; k < 2; k++) {
        if (k == 1) {
            MPI_OK(MPI_Irecv(r.p, 3, CT[T_VEC_D].t, MPI_PROC_NULL, 77, c->comm, &rq));
            MPI_OK(MPI_Wait(&rq, &st));
        }
        n = -7;
        MPI_Get_count(&st, CT[T_VEC_D].t, &n);
        CHECK(n == 0, "count in the vector type %d", n);
        if (c->id == 1)
            conf_behavior(k ? "proc_null.irecv_wait.status" : "proc_null.irecv_test.status", "source=%s tag=%s",
                          st.MPI_SOURCE == MPI_PROC_NULL ? "MPI_PROC_NULL" : st.MPI_SOURCE == 0 ? "0" : "other",
                          st.MPI_TAG == MPI_ANY_TAG ? "MPI_ANY_TAG" : st.MPI_TAG == 0 ? "0" : "other");
        CHECK_UNTOUCHED(&r);
    }

    conf_set_ctx("%s: MPI_Sendrecv with MPI_PROC_NULL on one side", c->label);
    int tag = next_tag();
    MPI_OK(MPI_Sendrecv(s.p, 3, CT[T_VECT84].t, MPI_PROC_NULL, tag, r.p, 3, CT[T_VEC_D].t, MPI_PROC_NULL, tag, c->comm,
                        &st));
    CHECK_EMPTY_STATUS(&st, MPI_PROC_NULL);
    CHECK_UNTOUCHED(&r);
    /* Real send to the right, receive from MPI_PROC_NULL; then the reverse picks it up. */
    MPI_OK(MPI_Sendrecv(s.p, 3, CT[T_VECT84].t, c->right, tag, r.p, 3, CT[T_VEC_D].t, MPI_PROC_NULL, tag, c->comm,
                        &st));
    CHECK_EMPTY_STATUS(&st, MPI_PROC_NULL);
    CHECK_UNTOUCHED(&r);
    conf_buf r2 = conf_alloc(CT[T_VECT84X3].t, 1, 13);
    MPI_OK(MPI_Sendrecv(s.p, 3, CT[T_VECT84].t, MPI_PROC_NULL, tag, r2.p, 1, CT[T_VECT84X3].t, c->left, tag, c->comm,
                        &st));
    CHECK_STATUS(&st, c->left, tag, CT[T_VECT84X3].t, 1, 192);
    CHECK_DATA(&r2, CT[T_VECT84].t, 3, 11);
    conf_free(&r2);
    conf_free(&s);
    conf_free(&r);
}

/* Compares without reporting. */
static int same_image(const conf_buf *r, const unsigned char *img) { return memcmp(r->base, img, r->total) == 0; }

static const char *classify_truncated(const conf_buf *r, MPI_Datatype stype, int scount, uint64_t sseed) {
    size_t len;
    unsigned char *stream = conf_stream(stype, scount, sseed, &len);
    unsigned char *img = conf_malloc(r->total);
    conf_fill(img, r->total, r->seed);
    const char *what = "other";
    if (same_image(r, img)) what = "untouched";
    else {
        conf_place(img, r, stream, len);
        if (same_image(r, img)) what = "prefix";
    }
    free(img);
    free(stream);
    return what;
}

static const char *count_class(int bytes, size_t cap, size_t full) {
    static char s[32];
    if (bytes == (int)cap) return "capacity";
    if (bytes == (int)full) return "message-size";
    if (bytes == MPI_UNDEFINED) return "undefined";
    if (bytes == 12345) return "unset";
    if (bytes == 0) return "0";
    (void)s;
    return "unspecified"; /* MPICH 4.0 leaves an unrelated value: the driver accepts anything */
}

/* A message larger than the receive buffer: MPI_ERR_TRUNCATE; gaps never written; what the
 * type map and the status hold is implementation-defined and recorded as behaviour (the driver
 * compares it with the bare MPI's), and so is whether the MPI wrote past the buffer: Open MPI
 * 4.1 (ob1/vader) writes the whole message past a contiguous receive buffer once the message is
 * above the eager limit, so the receive allocation has slack for a whole message and the
 * overflow is recorded ("overflow=yes": sluice may do better, never worse). Then a follow-up
 * message on the same tag must arrive intact. how: 0 Recv, 1 Irecv+Wait, 2 Irecv+
 * Waitall with a second request (MPI_ERR_IN_STATUS), 3 Irecv + MPI_Test loop. */
static void truncation_case(conf_comm *c, const char *name, int st_t, int scount, int rt, int rcount, int how) {
    int tag = next_tag();
    conf_set_ctx("%s: truncation %s (%d x %s -> %d x %s, how %d)", c->label, name, scount, CT[st_t].name, rcount,
                 CT[rt].name, how);
    uint64_t sseed = conf_seed(c->id, tag, c->rank, c->right), rseed = conf_seed(c->id, tag, c->left, c->rank);
    conf_buf s = conf_alloc(CT[st_t].t, scount, sseed), r;
#ifdef OPEN_MPI
    /* A large non-contiguous send into a contiguous receive: bare Open MPI packs on the sender
     * and stays inside the receive buffer; under sluice the message travels as contiguous
     * packed bytes, so Open MPI's single-copy overrun (above) reaches this receive too
     * (docs/protocol.md, "Known differences"). Slack keeps the overrun inside the test's
     * allocation and the overflow is not compared for this case. */
    int may_overflow = strcmp(name, "large-noncontig-send") == 0;
    r = may_overflow ? conf_alloc_slack(CT[rt].t, rcount, 21 + tag, conf_size(CT[st_t].t, scount))
                     : conf_alloc(CT[rt].t, rcount, 21 + tag);
#else
    int may_overflow = 0;
    r = conf_alloc(CT[rt].t, rcount, 21 + tag);
#endif
    MPI_Request sq, rq[2];
    MPI_Status st, sts[2];
    int rc, src_ok, tag_ok, nbytes = -7;
    /* Statuses start with a known content: an MPI may leave fields unset after truncation. */
    st.MPI_SOURCE = st.MPI_TAG = -99;
    MPI_Status_set_elements(&st, MPI_BYTE, 12345);
    sts[0] = sts[1] = st;
    MPI_OK(MPI_Isend(s.p, scount, CT[st_t].t, c->right, tag, c->comm, &sq));
    if (how == 0) {
        rc = MPI_Recv(r.p, rcount, CT[rt].t, c->left, tag, c->comm, &st);
    } else if (how == 1) {
        MPI_OK(MPI_Irecv(r.p, rcount, CT[rt].t, c->left, tag, c->comm, &rq[0]));
        rc = MPI_Wait(&rq[0], &st);
        CHECK(rq[0] == MPI_REQUEST_NULL, "truncated request not freed by MPI_Wait");
    } else if (how == 3) {
        int flag = 0;
        MPI_OK(MPI_Irecv(r.p, rcount, CT[rt].t, c->left, tag, c->comm, &rq[0]));
        CONF_POLL("MPI_Test on a truncated receive", rc = MPI_Test(&rq[0], &flag, &st), flag || rc != MPI_SUCCESS);
        CHECK(flag, "MPI_Test returned an error without completing");
        CHECK(rq[0] == MPI_REQUEST_NULL, "truncated request not freed by MPI_Test");
    } else {
        /* The second request is a plain message on another tag that fits. */
        int tag2 = next_tag(), in = -1, out = c->rank;
        MPI_Request sq2;
        MPI_OK(MPI_Isend(&out, 1, MPI_INT, c->right, tag2, c->comm, &sq2));
        MPI_OK(MPI_Irecv(r.p, rcount, CT[rt].t, c->left, tag, c->comm, &rq[0]));
        MPI_OK(MPI_Irecv(&in, 1, MPI_INT, c->left, tag2, c->comm, &rq[1]));
        rc = MPI_Waitall(2, rq, sts);
        MPI_OK(MPI_Wait(&sq2, MPI_STATUS_IGNORE));
        CHECK_CLASS(rc, MPI_ERR_IN_STATUS);
        rc = sts[0].MPI_ERROR;
        CHECK(sts[1].MPI_ERROR == MPI_SUCCESS || sts[1].MPI_ERROR == MPI_ERR_PENDING,
              "MPI_ERROR of the good request %d", sts[1].MPI_ERROR);
        if (sts[1].MPI_ERROR == MPI_SUCCESS) {
            CHECK(in == c->left, "second request got %d", in);
            CHECK_STATUS(&sts[1], c->left, tag2, MPI_INT, 1, 1);
        } else {
            MPI_OK(MPI_Wait(&rq[1], MPI_STATUS_IGNORE));
        }
        if (c->id == 1)
            conf_behavior("truncation.waitall.good_request_error", "%s",
                      sts[1].MPI_ERROR == MPI_SUCCESS ? "MPI_SUCCESS" : "MPI_ERR_PENDING");
        st = sts[0];
    }
    CHECK_CLASS(rc, MPI_ERR_TRUNCATE);
    MPI_OK(MPI_Wait(&sq, MPI_STATUS_IGNORE));
    /* Open MPI 4.1 completes the send of a truncated large message before the receiver has
     * read it (single-copy): freeing the send buffer early crashes the receiver. */
    MPI_OK(MPI_Barrier(c->comm));
    size_t overflow = conf_overflow_reset(&r);
    CHECK_GAPS(&r);
    CHECK_UNTOUCHED(&s);
    src_ok = st.MPI_SOURCE == c->left;
    tag_ok = st.MPI_TAG == tag;
    MPI_Get_count(&st, MPI_BYTE, &nbytes);
    if (c->id == 1) {
        char key[96];
        snprintf(key, sizeof key, "truncation.%s.how%d", name, how);
        conf_behavior(key, "content=%s source=%s tag=%s count=%s overflow=%s",
                      classify_truncated(&r, CT[st_t].t, scount, rseed), src_ok ? "ok" : st.MPI_SOURCE == -99 ? "unset" : "wrong",
                      tag_ok ? "ok" : st.MPI_TAG == -99 ? "unset" : "wrong",
                      count_class(nbytes, conf_size(CT[rt].t, rcount), conf_size(CT[st_t].t, scount)),
                      may_overflow ? "not compared" : overflow ? "yes" : "no");
    }
    /* The job goes on: the next message on the same tag arrives intact. */
    conf_set_ctx("%s: message after truncation %s", c->label, name);
    conf_buf s2 = conf_alloc(CT[st_t].t, 2, sseed + 1), r2 = conf_alloc(CT[rt].t, scount + 8, 3);
    MPI_OK(MPI_Isend(s2.p, 2, CT[st_t].t, c->right, tag, c->comm, &sq));
    MPI_OK(MPI_Recv(r2.p, scount + 8, CT[rt].t, c->left, tag, c->comm, &st));
    MPI_OK(MPI_Wait(&sq, MPI_STATUS_IGNORE));
    CHECK(st.MPI_SOURCE == c->left && st.MPI_TAG == tag, "status %d/%d", st.MPI_SOURCE, st.MPI_TAG);
    CHECK(conf_size(CT[st_t].t, 2) == (size_t)(MPI_Get_count(&st, MPI_BYTE, &nbytes), nbytes), "count %d", nbytes);
    CHECK_DATA(&r2, CT[st_t].t, 2, rseed + 1);
    conf_free(&s2);
    conf_free(&r2);
    conf_free(&s);
    conf_free(&r);
}

static void truncation(conf_comm *c) {
    int big_d = (4 << 20) / 8; /* 4 MiB of doubles */
    truncation_case(c, "small-contig", T_INT, 8, T_INT, 4, 0);
    truncation_case(c, "small-contig", T_INT, 8, T_INT, 4, 1);
    truncation_case(c, "small-noncontig-recv", T_INT, 32, T_VEC_I4, 2, 1);
    truncation_case(c, "small-noncontig-both", T_SUBARRAY, 4, T_INDEXED, 1, 0);
    truncation_case(c, "small-noncontig-both", T_SUBARRAY, 4, T_INDEXED, 1, 3);
    truncation_case(c, "small-noncontig-waitall", T_VECT84, 4, T_VECT84X3, 1, 2);
    if (!c->full) return;
#ifdef OPEN_MPI
    /* Open MPI 4.1 writes the whole message past a truncated contiguous receive buffer above
     * the eager limit and then corrupts its heap ("Read -1, expected 4194304, errno = 14",
     * "malloc(): corrupted top size"): not testable there. */
    conf_behavior("truncation.large-contig", "not tested (Open MPI overflows the buffer)");
#else
    truncation_case(c, "large-contig", T_DOUBLE, big_d, T_DOUBLE, big_d / 4, 0);
    truncation_case(c, "large-contig", T_DOUBLE, big_d, T_DOUBLE, big_d / 4, 1);
#endif
    truncation_case(c, "large-noncontig-recv", T_DOUBLE, big_d, T_VEC_D2, big_d / 8 / 4, 1);
    truncation_case(c, "large-noncontig-both", T_VEC_D, big_d / 8, T_VEC_D2, big_d / 8 / 4, 0);
    truncation_case(c, "large-noncontig-send", T_VEC_D, big_d / 8, T_DOUBLE, big_d / 4 + 3, 1);
}

int main(int argc, char **argv) {
    MPI_OK(MPI_Init(&argc, &argv));
    conf_comm cs[3];
    MPI_Comm dup, split;
    int nc = conf_begin("p2p_conf_basic", cs, &dup, &split);
    char *bbuf = conf_malloc(BSEND_BYTES + MPI_BSEND_OVERHEAD * 64);
    MPI_OK(MPI_Buffer_attach(bbuf, BSEND_BYTES + MPI_BSEND_OVERHEAD * 64));
    for (int i = 0; i < nc; i++) {
        send_modes(&cs[i]);
        counts_and_status(&cs[i]);
        zero_counts(&cs[i]);
        proc_null(&cs[i]);
        truncation(&cs[i]);
    }
    void *b;
    int bs;
    MPI_OK(MPI_Buffer_detach(&b, &bs));
    free(bbuf);
    return conf_end(&dup, &split);
}
