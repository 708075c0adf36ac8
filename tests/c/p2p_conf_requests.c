/* Point-to-point conformance, requests: nonblocking transfers completed by each of MPI_Wait,
 * Waitall, Waitany, Waitsome, Test, Testall, Testany, Testsome on arrays that mix non-contiguous
 * and contiguous transfers, send and receive requests and MPI_REQUEST_NULL entries (returned
 * indices checked exactly: the sender releases one message at a time, so only one request can
 * complete; outcount, per-index statuses, MPI_UNDEFINED once nothing is active, empty statuses);
 * receivers that poll MPI_Test / MPI_Request_get_status until completion, and one that computes
 * for 0.2 s between MPI_Irecv and MPI_Wait; MPI_Request_free on send requests and on a receive;
 * MPI_Cancel of a receive that never matches and of one that already completed; persistent
 * requests (Send_init / Recv_init / Ssend_init / Bsend_init / Rsend_init with derived types,
 * Start / Startall over several iterations with changing data, MPI_Wait on an inactive request,
 * MPI_Request_free); a window of staged receives completed by one MPI_Waitall (one truncated);
 * the completion calls on a NULL request array (an error reported, nothing
 * else changed); MPI_Sendrecv and MPI_Sendrecv_replace with derived types. Every byte checked.
 * Runs on MPI_COMM_WORLD, a duplicate and a split (renumbered) communicator, any ranks >= 2. */
#define SLUICE_P2P_CONF
#include <time.h>
#include "check.h"

#define MiB (1 << 20)
#define ACK_TAG 9999

enum { C_WAIT, C_WAITALL, C_WAITALL_IGNORE, C_WAITANY, C_WAITSOME, C_TEST, C_TESTALL, C_TESTANY, C_TESTSOME, C_COUNT };
static const char *CNAME[C_COUNT] = {"Wait", "Waitall", "Waitall(STATUSES_IGNORE)", "Waitany", "Waitsome",
                                     "Test", "Testall", "Testany", "Testsome"};

/* The receive array: -1 entries are MPI_REQUEST_NULL. */
#define NR 6
static const int RS_ST[NR] = {T_DOUBLE, -1, T_INT, T_STRUCT, -1, T_VECT84};
static const int RS_RT[NR] = {T_VEC_D, -1, T_INT, T_STRUCT_PACKED, -1, T_VECT84X3};
static const size_t RS_BYTES[NR] = {1024, 0, 64, 300 << 10, 0, 1024};
static const int ORDER[4] = {3, 0, 5, 2}; /* the order the sender releases the messages in */

typedef struct {
    conf_buf s[NR], r[NR];
    int sc[NR], rc[NR];
} rset;

static void rset_make(conf_comm *c, rset *x, int base) {
    for (int i = 0; i < NR; i++) {
        if (RS_ST[i] < 0) continue;
        size_t b = !c->full && RS_BYTES[i] > 4096 ? 4096 : RS_BYTES[i];
        int units = conf_units_for(CT[RS_ST[i]].family, b);
        x->sc[i] = units / CT[RS_ST[i]].units;
        x->rc[i] = units / CT[RS_RT[i]].units;
        x->s[i] = conf_alloc(CT[RS_ST[i]].t, x->sc[i], conf_seed(c->id, base + i, c->rank, c->right));
        x->r[i] = conf_alloc(CT[RS_RT[i]].t, x->rc[i], 300 + i);
    }
}

static void rset_check(conf_comm *c, rset *x, int base, int i, MPI_Status *st) {
    if (st) {
        int units = x->rc[i] * CT[RS_RT[i]].units;
        CHECK_STATUS(st, c->left, base + i, CT[RS_RT[i]].t, x->rc[i], units * conf_family_elements(CT[RS_RT[i]].family));
    }
    CHECK_DATA(&x->r[i], CT[RS_ST[i]].t, x->sc[i], conf_seed(c->id, base + i, c->left, c->rank));
}

static void rset_free(rset *x) {
    for (int i = 0; i < NR; i++)
        if (RS_ST[i] >= 0) {
            CHECK_UNTOUCHED(&x->s[i]);
            conf_free(&x->s[i]);
            conf_free(&x->r[i]);
        }
}

/* Once nothing is active, every member of the family says so. */
static void all_inactive(MPI_Request *rq, int n) {
    int idx = -7, flag = 0, outcount = -7, indices[NR + 4];
    MPI_Status st, sts[NR + 4];
    MPI_OK(MPI_Waitany(n, rq, &idx, &st));
    CHECK(idx == MPI_UNDEFINED, "Waitany on inactive requests: index %d", idx);
    CHECK_EMPTY_STATUS(&st, MPI_ANY_SOURCE);
    MPI_OK(MPI_Testany(n, rq, &idx, &flag, &st));
    CHECK(flag && idx == MPI_UNDEFINED, "Testany on inactive requests: flag %d index %d", flag, idx);
    MPI_OK(MPI_Waitsome(n, rq, &outcount, indices, sts));
    CHECK(outcount == MPI_UNDEFINED, "Waitsome on inactive requests: outcount %d", outcount);
    MPI_OK(MPI_Testsome(n, rq, &outcount, indices, sts));
    CHECK(outcount == MPI_UNDEFINED, "Testsome on inactive requests: outcount %d", outcount);
    flag = 0;
    MPI_OK(MPI_Testall(n, rq, &flag, sts));
    CHECK(flag, "Testall on inactive requests: flag %d", flag);
    for (int i = 0; i < n; i++) CHECK_EMPTY_STATUS(&sts[i], MPI_ANY_SOURCE);
    MPI_OK(MPI_Waitall(n, rq, MPI_STATUSES_IGNORE));
    MPI_OK(MPI_Wait(&rq[0], &st));
    CHECK_EMPTY_STATUS(&st, MPI_ANY_SOURCE);
    flag = 0;
    MPI_OK(MPI_Test(&rq[0], &flag, &st));
    CHECK(flag, "Test on MPI_REQUEST_NULL: flag %d", flag);
    CHECK_EMPTY_STATUS(&st, MPI_ANY_SOURCE);
}

static void completion(conf_comm *c, int fn) {
    int base = 5000 + 10 * fn;
    rset x;
    rset_make(c, &x, base);
    MPI_Request rq[NR + 4], sq[NR];
    MPI_Status sts[NR + 4];
    conf_set_ctx("%s: completion by MPI_%s", c->label, CNAME[fn]);
    for (int i = 0; i < NR; i++) {
        rq[i] = MPI_REQUEST_NULL;
        if (RS_ST[i] >= 0) MPI_OK(MPI_Irecv(x.r[i].p, x.rc[i], CT[RS_RT[i]].t, c->left, base + i, c->comm, &rq[i]));
    }
    if (fn == C_WAITALL || fn == C_WAITALL_IGNORE || fn == C_TESTALL) {
        /* All sends at once; the send requests join the array after the receives. */
        int n = NR;
        for (int k = 0; k < 4; k++) {
            int i = ORDER[k];
            MPI_OK(MPI_Isend(x.s[i].p, x.sc[i], CT[RS_ST[i]].t, c->right, base + i, c->comm, &rq[n++]));
        }
        if (fn == C_WAITALL) MPI_OK(MPI_Waitall(n, rq, sts));
        else if (fn == C_WAITALL_IGNORE) MPI_OK(MPI_Waitall(n, rq, MPI_STATUSES_IGNORE));
        else {
            int flag = 0;
            CONF_POLL("MPI_Testall", MPI_OK(MPI_Testall(n, rq, &flag, sts)), flag);
        }
        for (int i = 0; i < n; i++) CHECK(rq[i] == MPI_REQUEST_NULL, "request %d not freed", i);
        for (int i = 0; i < NR; i++) {
            if (RS_ST[i] >= 0) rset_check(c, &x, base, i, fn == C_WAITALL_IGNORE ? NULL : &sts[i]);
            else if (fn != C_WAITALL_IGNORE) CHECK_EMPTY_STATUS(&sts[i], MPI_ANY_SOURCE);
        }
    } else {
        /* One message at a time: the completion call must name exactly its request. */
        for (int k = 0; k < 4; k++) {
            int want = ORDER[k], idx = -7, flag = 0, outcount = -7, indices[NR];
            MPI_Status st;
            conf_set_ctx("%s: completion by MPI_%s, step %d (index %d)", c->label, CNAME[fn], k, want);
            MPI_OK(MPI_Isend(x.s[want].p, x.sc[want], CT[RS_ST[want]].t, c->right, base + want, c->comm, &sq[k]));
            switch (fn) {
            case C_WAIT:
                MPI_OK(MPI_Wait(&rq[want], &st));
                idx = want;
                break;
            case C_TEST:
                CONF_POLL("MPI_Test", MPI_OK(MPI_Test(&rq[want], &flag, &st)), flag);
                idx = want;
                break;
            case C_WAITANY:
                MPI_OK(MPI_Waitany(NR, rq, &idx, &st));
                break;
            case C_TESTANY:
                CONF_POLL("MPI_Testany", MPI_OK(MPI_Testany(NR, rq, &idx, &flag, &st)), flag);
                break;
            case C_WAITSOME:
            case C_TESTSOME:
                if (fn == C_WAITSOME) MPI_OK(MPI_Waitsome(NR, rq, &outcount, indices, sts));
                else CONF_POLL("MPI_Testsome", MPI_OK(MPI_Testsome(NR, rq, &outcount, indices, sts)), outcount != 0);
                CHECK(outcount == 1, "outcount %d", outcount);
                idx = indices[0];
                st = sts[0];
                break;
            }
            CHECK(idx == want, "completed index %d, expected %d", idx, want);
            if (idx == want) {
                CHECK(rq[want] == MPI_REQUEST_NULL, "completed request not freed");
                rset_check(c, &x, base, want, &st);
            }
            MPI_OK(MPI_Wait(&sq[k], MPI_STATUS_IGNORE));
            /* Acknowledge to the left, wait for the right's acknowledgement. */
            MPI_OK(MPI_Sendrecv(NULL, 0, MPI_INT, c->left, ACK_TAG, NULL, 0, MPI_INT, c->right, ACK_TAG, c->comm,
                                MPI_STATUS_IGNORE));
        }
        /* The null entries of the array stay null and return empty statuses. */
        MPI_Status st;
        MPI_OK(MPI_Wait(&rq[1], &st));
        CHECK_EMPTY_STATUS(&st, MPI_ANY_SOURCE);
    }
    conf_set_ctx("%s: completion by MPI_%s, all inactive", c->label, CNAME[fn]);
    all_inactive(rq, NR);
    rset_free(&x);
    MPI_OK(MPI_Barrier(c->comm));
}

/* The receiver polls MPI_Test, or MPI_Request_get_status, until completion. */
static void polling(conf_comm *c, int use_get_status, size_t bytes) {
    int tag = 6000 + use_get_status;
    int units = conf_units_for(F_DOUBLE, bytes), sc = units / 8, rc = units;
    conf_set_ctx("%s: polling %s, %zu bytes", c->label, use_get_status ? "MPI_Request_get_status" : "MPI_Test", bytes);
    conf_buf s = conf_alloc(CT[T_VEC_D].t, sc, conf_seed(c->id, tag, c->rank, 0));
    conf_buf r = conf_alloc(CT[T_VEC_D2].t, rc / 8, 9);
    MPI_Request rq, sq;
    MPI_Status st;
    int flag = 0;
    long spins = 0;
    MPI_OK(MPI_Irecv(r.p, rc / 8, CT[T_VEC_D2].t, c->left, tag, c->comm, &rq));
    MPI_OK(MPI_Isend(s.p, sc, CT[T_VEC_D].t, c->right, tag, c->comm, &sq));
    if (use_get_status) {
        CONF_POLL("MPI_Request_get_status", { spins++; MPI_OK(MPI_Request_get_status(rq, &flag, &st)); }, flag);
        CHECK(rq != MPI_REQUEST_NULL, "MPI_Request_get_status freed the request");
        CHECK_STATUS(&st, c->left, tag, CT[T_VEC_D2].t, rc / 8, units);
        CHECK_DATA(&r, CT[T_VEC_D].t, sc, conf_seed(c->id, tag, c->left, 0));
        flag = 0;
        MPI_OK(MPI_Request_get_status(rq, &flag, MPI_STATUS_IGNORE));
        CHECK(flag, "second MPI_Request_get_status: flag %d", flag);
        MPI_OK(MPI_Wait(&rq, &st));
    } else {
        CONF_POLL("MPI_Test", { spins++; MPI_OK(MPI_Test(&rq, &flag, &st)); }, flag);
        CHECK(rq == MPI_REQUEST_NULL, "MPI_Test did not free the request");
    }
    CHECK_STATUS(&st, c->left, tag, CT[T_VEC_D2].t, rc / 8, units);
    CHECK_DATA(&r, CT[T_VEC_D].t, sc, conf_seed(c->id, tag, c->left, 0));
    /* The send is completed by polling too. */
    flag = 0;
    CONF_POLL("MPI_Test on the send", MPI_OK(MPI_Test(&sq, &flag, MPI_STATUS_IGNORE)), flag);
    CHECK_UNTOUCHED(&s);
    conf_free(&s);
    conf_free(&r);
    MPI_OK(MPI_Barrier(c->comm));
}

/* No MPI call for 0.2 s between MPI_Irecv/MPI_Isend and MPI_Wait. */
static void compute_between(conf_comm *c) {
    int tag = 6100, units = conf_units_for(F_CHAR, 4 * MiB);
    conf_set_ctx("%s: 0.2 s of computation between MPI_Irecv and MPI_Wait", c->label);
    conf_buf s = conf_alloc(CT[T_VECT84].t, units / 64, conf_seed(c->id, tag, c->rank, 0));
    conf_buf r = conf_alloc(CT[T_VECT84X3].t, units / 192, 10);
    MPI_Request rq, sq;
    MPI_Status st;
    MPI_OK(MPI_Irecv(r.p, units / 192, CT[T_VECT84X3].t, c->left, tag, c->comm, &rq));
    MPI_OK(MPI_Isend(s.p, units / 64, CT[T_VECT84].t, c->right, tag, c->comm, &sq));
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    volatile double acc = 0;
    do {
        for (int i = 0; i < 10000; i++) acc += i * 1e-9;
        clock_gettime(CLOCK_MONOTONIC, &t1);
    } while ((t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9 < 0.2);
    MPI_OK(MPI_Wait(&rq, &st));
    MPI_OK(MPI_Wait(&sq, MPI_STATUS_IGNORE));
    CHECK_STATUS(&st, c->left, tag, CT[T_VECT84X3].t, units / 192, units);
    CHECK_DATA(&r, CT[T_VECT84].t, units / 64, conf_seed(c->id, tag, c->left, 0));
    CHECK_UNTOUCHED(&s);
    conf_free(&s);
    conf_free(&r);
}

/* MPI_Request_free on send requests (small and large, derived types) and on a receive. */
static void request_free(conf_comm *c) {
    size_t sizes[2] = {256, c->full ? 300 << 10 : 8192};
    for (int z = 0; z < 2; z++) {
        int tag = 6200 + z, units = conf_units_for(F_DOUBLE, sizes[z]);
        conf_set_ctx("%s: MPI_Request_free on a send of %zu bytes", c->label, sizes[z]);
        conf_buf s = conf_alloc(CT[T_VEC_D].t, units / 8, conf_seed(c->id, tag, c->rank, 0));
        conf_buf r = conf_alloc(MPI_DOUBLE, units, 11);
        MPI_Request sq;
        MPI_Status st;
        MPI_OK(MPI_Isend(s.p, units / 8, CT[T_VEC_D].t, c->right, tag, c->comm, &sq));
        MPI_OK(MPI_Request_free(&sq));
        CHECK(sq == MPI_REQUEST_NULL, "MPI_Request_free did not null the handle");
        MPI_OK(MPI_Recv(r.p, units, MPI_DOUBLE, c->left, tag, c->comm, &st));
        CHECK_STATUS(&st, c->left, tag, MPI_DOUBLE, units, units);
        CHECK_DATA(&r, CT[T_VEC_D].t, units / 8, conf_seed(c->id, tag, c->left, 0));
        /* The right neighbour has the data: only now may the send buffer go. */
        MPI_OK(MPI_Sendrecv(NULL, 0, MPI_INT, c->left, ACK_TAG, NULL, 0, MPI_INT, c->right, ACK_TAG, c->comm,
                            MPI_STATUS_IGNORE));
        CHECK_UNTOUCHED(&s);
        conf_free(&s);
        conf_free(&r);
    }
    /* A freed receive still receives: a later message from the same sender (same tag, so
     * matched after it) tells the data was sent; then poll (with MPI calls) until it is there. */
    int tag = 6210;
    conf_set_ctx("%s: MPI_Request_free on a receive", c->label);
    conf_buf s = conf_alloc(MPI_INT, 8, conf_seed(c->id, tag, c->rank, 0));
    conf_buf r = conf_alloc(CT[T_VEC_I4].t, 2, 12);
    MPI_Request rq;
    int marker = -1, one = 1;
    MPI_OK(MPI_Irecv(r.p, 2, CT[T_VEC_I4].t, c->left, tag, c->comm, &rq));
    MPI_OK(MPI_Request_free(&rq));
    CHECK(rq == MPI_REQUEST_NULL, "MPI_Request_free did not null the handle");
    MPI_OK(MPI_Barrier(c->comm)); /* the receive is posted everywhere */
    MPI_OK(MPI_Send(s.p, 8, MPI_INT, c->right, tag, c->comm));
    MPI_OK(MPI_Sendrecv(&one, 1, MPI_INT, c->right, tag, &marker, 1, MPI_INT, c->left, tag, c->comm, MPI_STATUS_IGNORE));
    CHECK(marker == 1, "marker %d", marker);
    size_t len;
    unsigned char *stream = conf_stream(MPI_INT, 8, conf_seed(c->id, tag, c->left, 0), &len);
    unsigned char *img = conf_malloc(r.total);
    conf_fill(img, r.total, r.seed);
    conf_place(img, &r, stream, len);
    double t0 = MPI_Wtime();
    int flag;
    while (memcmp(img, r.base, r.total) != 0 && MPI_Wtime() - t0 < 5.0)
        MPI_OK(MPI_Iprobe(c->left, 12345, c->comm, &flag, MPI_STATUS_IGNORE));
    CHECK_DATA(&r, MPI_INT, 8, conf_seed(c->id, tag, c->left, 0));
    free(img);
    free(stream);
    conf_free(&s);
    conf_free(&r);
    MPI_OK(MPI_Barrier(c->comm));
}

static void cancel(conf_comm *c) {
    /* A receive that never matches: cancelled. */
    for (int k = 0; k < 2; k++) {
        conf_set_ctx("%s: MPI_Cancel of a pending %s receive", c->label, k ? "contiguous" : "non-contiguous");
        conf_buf r = conf_alloc(k ? MPI_DOUBLE : CT[T_VEC_D].t, 4, 13);
        MPI_Request rq;
        MPI_Status st;
        int cancelled = -1, flag = 0;
        MPI_OK(MPI_Irecv(r.p, 4, k ? MPI_DOUBLE : CT[T_VEC_D].t, c->left, 6300, c->comm, &rq));
        MPI_OK(MPI_Cancel(&rq));
        if (k == 0) MPI_OK(MPI_Wait(&rq, &st));
        else CONF_POLL("MPI_Test on a cancelled receive", MPI_OK(MPI_Test(&rq, &flag, &st)), flag);
        CHECK(rq == MPI_REQUEST_NULL, "cancelled request not freed");
        MPI_OK(MPI_Test_cancelled(&st, &cancelled));
        CHECK(cancelled, "MPI_Test_cancelled %d", cancelled);
        CHECK_UNTOUCHED(&r);
        conf_free(&r);
    }
    /* A receive that already completed: cancel has no effect. */
    int tag = 6301;
    conf_set_ctx("%s: MPI_Cancel of a completed receive", c->label);
    conf_buf s = conf_alloc(CT[T_STRUCT].t, 5, conf_seed(c->id, tag, c->rank, 0));
    conf_buf r = conf_alloc(CT[T_STRUCT_PACKED].t, 5, 14);
    MPI_Request rq, sq;
    MPI_Status st;
    int flag = 0, cancelled = -1;
    MPI_OK(MPI_Irecv(r.p, 5, CT[T_STRUCT_PACKED].t, c->left, tag, c->comm, &rq));
    MPI_OK(MPI_Isend(s.p, 5, CT[T_STRUCT].t, c->right, tag, c->comm, &sq));
    CONF_POLL("MPI_Request_get_status", MPI_OK(MPI_Request_get_status(rq, &flag, MPI_STATUS_IGNORE)), flag);
    MPI_OK(MPI_Cancel(&rq));
    MPI_OK(MPI_Wait(&rq, &st));
    MPI_OK(MPI_Test_cancelled(&st, &cancelled));
    CHECK(!cancelled, "a completed receive reports cancelled");
    CHECK_STATUS(&st, c->left, tag, CT[T_STRUCT_PACKED].t, 5, 35);
    CHECK_DATA(&r, CT[T_STRUCT].t, 5, conf_seed(c->id, tag, c->left, 0));
    MPI_OK(MPI_Wait(&sq, MPI_STATUS_IGNORE));
    conf_free(&s);
    conf_free(&r);
    MPI_OK(MPI_Barrier(c->comm));
}

/* The completion calls with count 1 and a NULL request array (erroneous) while a large receive
 * is pending (1 MiB: under the pipelined protocol a tracked receive, so the calls take sluice's
 * full path, not the fast one). Each reports an error; its class is recorded (MPICH 4.0 says
 * MPI_ERR_ARG, Open MPI 4.1 MPI_ERR_REQUEST). Both raise it on MPI_COMM_WORLD (measured);
 * MPI-4 allows MPI_COMM_SELF for errors without a communicator, so both return here. Nothing
 * else may change: the pending receive is then cancelled, and the next case (persistent)
 * receives its own messages.
 * The receive's tag is one no case sends. With the tag of the next case's messages (6400, from
 * the same neighbour on the same communicator) the receive may legally match the neighbour's
 * first persistent message when the neighbour gets there first (nothing orders its send after
 * this rank's cancel): the cancel then fails and every persistent receive gets the next
 * iteration's data, with the bare MPI too (one progress call before MPI_Cancel suffices). */
static void null_array(conf_comm *c) {
    const char *names[6] = {"waitall", "testall", "waitany", "testany", "waitsome", "testsome"};
    int tag = 6390, n = 1 << 17;
    conf_set_ctx("%s: completion calls on a NULL request array", c->label);
    MPI_Errhandler self_eh;
    MPI_OK(MPI_Comm_get_errhandler(MPI_COMM_SELF, &self_eh));
    MPI_OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    conf_buf r = conf_alloc(MPI_DOUBLE, n, 18);
    MPI_Request rq;
    MPI_OK(MPI_Irecv(r.p, n, MPI_DOUBLE, c->left, tag, c->comm, &rq));
    for (int k = 0; k < 6; k++) {
        int idx = -7, flag = -7, outcount = -7, indices[1] = {-7}, rc = MPI_SUCCESS, cls = -1;
        MPI_Status st[1];
        switch (k) {
        case 0: rc = MPI_Waitall(1, NULL, st); break;
        case 1: rc = MPI_Testall(1, NULL, &flag, st); break;
        case 2: rc = MPI_Waitany(1, NULL, &idx, st); break;
        case 3: rc = MPI_Testany(1, NULL, &idx, &flag, st); break;
        case 4: rc = MPI_Waitsome(1, NULL, &outcount, indices, st); break;
        case 5: rc = MPI_Testsome(1, NULL, &outcount, indices, st); break;
        }
        CHECK(rc != MPI_SUCCESS, "MPI_%s with a NULL array returned MPI_SUCCESS", names[k]);
        MPI_Error_class(rc, &cls);
        char key[64];
        snprintf(key, sizeof key, "null_array.%s", names[k]);
        conf_behavior(key, "class=%d", cls);
    }
    MPI_Status st;
    int cancelled = -1;
    MPI_OK(MPI_Cancel(&rq));
    MPI_OK(MPI_Wait(&rq, &st));
    CHECK(rq == MPI_REQUEST_NULL, "cancelled request not freed");
    MPI_OK(MPI_Test_cancelled(&st, &cancelled));
    CHECK(cancelled, "MPI_Test_cancelled %d", cancelled);
    CHECK_UNTOUCHED(&r);
    conf_free(&r);
    MPI_OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, self_eh));
    MPI_OK(MPI_Errhandler_free(&self_eh));
    MPI_OK(MPI_Barrier(c->comm));
}

/* Persistent requests with derived types, several iterations with changing data. */
static void persistent(conf_comm *c) {
    enum { NP = 3, ITERS = 5 };
    const int st_t[NP] = {T_VEC_D, T_INT, T_VECT84}, rt[NP] = {T_VEC_D2, T_SUBARRAY, T_CHAR};
    size_t bytes[NP] = {c->full ? 300 << 10 : 4096, 1024, 8};
    int sc[NP], rc[NP];
    conf_buf s[NP], r[NP];
    MPI_Request rq[2 * NP];
    for (int i = 0; i < NP; i++) {
        int units = conf_units_for(CT[st_t[i]].family, bytes[i]);
        sc[i] = units / CT[st_t[i]].units;
        rc[i] = units / CT[rt[i]].units;
        s[i] = conf_alloc(CT[st_t[i]].t, sc[i], 1);
        r[i] = conf_alloc(CT[rt[i]].t, rc[i], 15 + i);
        MPI_OK(MPI_Recv_init(r[i].p, rc[i], CT[rt[i]].t, c->left, 6400 + i, c->comm, &rq[i]));
        MPI_OK(MPI_Send_init(s[i].p, sc[i], CT[st_t[i]].t, c->right, 6400 + i, c->comm, &rq[NP + i]));
    }
    conf_set_ctx("%s: MPI_Wait on inactive persistent requests", c->label);
    {
        MPI_Status st;
        int flag = 0;
        MPI_OK(MPI_Wait(&rq[0], &st));
        CHECK(rq[0] != MPI_REQUEST_NULL, "MPI_Wait freed an inactive persistent request");
        CHECK_EMPTY_STATUS(&st, MPI_ANY_SOURCE);
        MPI_OK(MPI_Test(&rq[NP], &flag, &st));
        CHECK(flag && rq[NP] != MPI_REQUEST_NULL, "MPI_Test on an inactive persistent request: flag %d", flag);
    }
    for (int it = 0; it < ITERS; it++) {
        conf_set_ctx("%s: persistent iteration %d", c->label, it);
        for (int i = 0; i < NP; i++) conf_refill(&s[i], conf_seed(c->id, 6400 + i, c->rank, it));
        if (it % 2 == 0) MPI_OK(MPI_Startall(2 * NP, rq));
        else
            for (int i = 2 * NP - 1; i >= 0; i--) MPI_OK(MPI_Start(&rq[i]));
        MPI_Status sts[2 * NP];
        if (it % 3 == 0) {
            MPI_OK(MPI_Waitall(2 * NP, rq, sts));
        } else if (it % 3 == 1) {
            int seen = 0;
            for (int k = 0; k < 2 * NP; k++) {
                int idx = -1;
                MPI_Status st;
                MPI_OK(MPI_Waitany(2 * NP, rq, &idx, &st));
                CHECK(idx >= 0 && idx < 2 * NP && !(seen & (1 << idx)), "Waitany index %d (seen 0x%x)", idx, seen);
                if (idx >= 0 && idx < 2 * NP) {
                    seen |= 1 << idx;
                    sts[idx] = st;
                }
            }
            int idx = -1;
            MPI_Status st;
            MPI_OK(MPI_Waitany(2 * NP, rq, &idx, &st));
            CHECK(idx == MPI_UNDEFINED, "Waitany on inactive persistent requests: %d", idx);
        } else {
            int flag = 0;
            CONF_POLL("MPI_Testall on persistent requests", MPI_OK(MPI_Testall(2 * NP, rq, &flag, sts)), flag);
        }
        for (int i = 0; i < 2 * NP; i++) CHECK(rq[i] != MPI_REQUEST_NULL, "persistent request %d freed by completion", i);
        for (int i = 0; i < NP; i++) {
            int units = rc[i] * CT[rt[i]].units;
            CHECK_STATUS(&sts[i], c->left, 6400 + i, CT[rt[i]].t, rc[i], units);
            CHECK_DATA(&r[i], CT[st_t[i]].t, sc[i], conf_seed(c->id, 6400 + i, c->left, it));
        }
    }
    for (int i = 0; i < 2 * NP; i++) {
        MPI_OK(MPI_Request_free(&rq[i]));
        CHECK(rq[i] == MPI_REQUEST_NULL, "MPI_Request_free did not null persistent request %d", i);
    }
    for (int i = 0; i < NP; i++) {
        conf_free(&s[i]);
        conf_free(&r[i]);
    }
    /* The other persistent send modes with a derived type, two starts each. */
    const char *mn[3] = {"Ssend_init", "Bsend_init", "Rsend_init"};
    for (int m = 0; m < 3; m++) {
        int tag = 6410 + m;
        conf_set_ctx("%s: persistent MPI_%s", c->label, mn[m]);
        conf_buf ss = conf_alloc(CT[T_VECT84].t, 6, 1), rr = conf_alloc(CT[T_VECT84X3].t, 2, 16);
        MPI_Request q, rr_q;
        if (m == 0) MPI_OK(MPI_Ssend_init(ss.p, 6, CT[T_VECT84].t, c->right, tag, c->comm, &q));
        if (m == 1) MPI_OK(MPI_Bsend_init(ss.p, 6, CT[T_VECT84].t, c->right, tag, c->comm, &q));
        if (m == 2) MPI_OK(MPI_Rsend_init(ss.p, 6, CT[T_VECT84].t, c->right, tag, c->comm, &q));
        MPI_OK(MPI_Recv_init(rr.p, 2, CT[T_VECT84X3].t, c->left, tag, c->comm, &rr_q));
        for (int it = 0; it < 2; it++) {
            conf_refill(&ss, conf_seed(c->id, tag, c->rank, it));
            MPI_OK(MPI_Start(&rr_q));
            MPI_OK(MPI_Barrier(c->comm)); /* receives posted: MPI_Rsend_init's start is legal */
            MPI_OK(MPI_Start(&q));
            MPI_Status st;
            MPI_OK(MPI_Wait(&rr_q, &st));
            MPI_OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
            CHECK_STATUS(&st, c->left, tag, CT[T_VECT84X3].t, 2, 384);
            CHECK_DATA(&rr, CT[T_VECT84].t, 6, conf_seed(c->id, tag, c->left, it));
        }
        MPI_OK(MPI_Request_free(&q));
        MPI_OK(MPI_Request_free(&rr_q));
        conf_free(&ss);
        conf_free(&rr);
    }
    MPI_OK(MPI_Barrier(c->comm));
}

/* A window of staged receives (16-200 KiB, below the pipelined size) completed by one
 * MPI_Waitall, which may unpack each one as it lands while the others are still on the wire:
 * the messages sent in reverse order (the array's last receives complete first), a receive
 * longer than its message, an MPI_ANY_SOURCE receive, a persistent receive, a cancelled receive,
 * a pipelined receive and the send requests in the same array; statuses or MPI_STATUSES_IGNORE; then a truncated
 * receive among them (MPI_ERR_IN_STATUS, the others intact). Every byte checked. */
#define NW 7
static void staged_window(conf_comm *c) {
    /* The last one is pipelined (above the pipeline's 256 KiB threshold): sluice finishes it
     * before the MPI waits on the rest. */
    const size_t wbytes[NW] = {16 << 10, 64 << 10, 200 << 10, 40 << 10, 100 << 10, 24 << 10, 600 << 10};
    const int tu = CT[T_VECT84].units, ru = CT[T_VECT84X3].units;
    for (int variant = 0; variant < 3; variant++) {
        int base = 6600 + 20 * variant, trunc = variant == 2 ? 4 : -1;
        conf_set_ctx("%s: a window of staged receives, %s", c->label,
                     variant == 0 ? "statuses" : variant == 1 ? "MPI_STATUSES_IGNORE" : "one truncated");
        conf_buf s[NW], r[NW], rx;
        int sc[NW], rcap[NW], rcnt[NW];
        MPI_Request rq[2 * NW + 1], prq = MPI_REQUEST_NULL;
        MPI_Status sts[2 * NW + 1];
        for (int i = 0; i < NW; i++) {
            int units = conf_units_for(F_CHAR, wbytes[i]);
            sc[i] = units / tu;
            rcnt[i] = units / ru;
            rcap[i] = i == 1 ? rcnt[i] + 3 : i == trunc ? rcnt[i] - 1 : rcnt[i];
            s[i] = conf_alloc(CT[T_VECT84].t, sc[i], conf_seed(c->id, base + i, c->rank, variant));
            r[i] = conf_alloc_slack(CT[T_VECT84X3].t, rcap[i], 40 + i, conf_size(CT[T_VECT84].t, sc[i]));
            int src = i == 2 ? MPI_ANY_SOURCE : c->left;
            if (i == 3) {
                MPI_OK(MPI_Recv_init(r[i].p, rcap[i], CT[T_VECT84X3].t, src, base + i, c->comm, &prq));
                MPI_OK(MPI_Start(&prq));
                rq[i] = prq;
            } else {
                MPI_OK(MPI_Irecv(r[i].p, rcap[i], CT[T_VECT84X3].t, src, base + i, c->comm, &rq[i]));
            }
        }
        /* Never sent: cancelled before the wait. */
        rx = conf_alloc(CT[T_VECT84X3].t, conf_units_for(F_CHAR, 32 << 10) / ru, 47);
        MPI_OK(MPI_Irecv(rx.p, conf_units_for(F_CHAR, 32 << 10) / ru, CT[T_VECT84X3].t, c->left, base + 19, c->comm, &rq[NW]));
        MPI_OK(MPI_Cancel(&rq[NW]));
        for (int k = 0; k < NW; k++) {
            int i = NW - 1 - k;
            MPI_OK(MPI_Isend(s[i].p, sc[i], CT[T_VECT84].t, c->right, base + i, c->comm, &rq[NW + 1 + k]));
        }
        int n = 2 * NW + 1, rc;
        for (int i = 0; i < n; i++) sts[i].MPI_ERROR = -7;
        rc = MPI_Waitall(n, rq, variant == 1 ? MPI_STATUSES_IGNORE : sts);
        if (trunc < 0) {
            CHECK_CLASS(rc, MPI_SUCCESS);
        } else {
            CHECK_CLASS(rc, MPI_ERR_IN_STATUS);
            CHECK_CLASS(sts[trunc].MPI_ERROR, MPI_ERR_TRUNCATE);
            /* Which others are still pending depends on timing, in the bare MPI too. */
            for (int i = 0; i < n; i++) {
                if (i == trunc) continue;
                CHECK(sts[i].MPI_ERROR == MPI_SUCCESS || sts[i].MPI_ERROR == MPI_ERR_PENDING,
                      "MPI_ERROR of request %d: %d", i, sts[i].MPI_ERROR);
                if (sts[i].MPI_ERROR == MPI_ERR_PENDING) MPI_OK(MPI_Wait(&rq[i], &sts[i]));
            }
            CHECK_GAPS(&r[trunc]);
            conf_overflow_reset(&r[trunc]);
        }
        for (int i = 0; i < n; i++)
            if (i != 3) CHECK(rq[i] == MPI_REQUEST_NULL, "request %d not freed", i);
        CHECK(rq[3] == prq && prq != MPI_REQUEST_NULL, "persistent request freed by MPI_Waitall");
        for (int i = 0; i < NW; i++) {
            if (i == trunc) continue;
            if (variant != 1) CHECK_STATUS(&sts[i], c->left, base + i, CT[T_VECT84X3].t, rcnt[i], rcnt[i] * ru);
            CHECK_DATA(&r[i], CT[T_VECT84].t, sc[i], conf_seed(c->id, base + i, c->left, variant));
            CHECK_UNTOUCHED(&s[i]);
        }
        if (variant != 1) {
            int cancelled = -1;
            MPI_OK(MPI_Test_cancelled(&sts[NW], &cancelled));
            CHECK(cancelled, "the cancelled receive: MPI_Test_cancelled %d", cancelled);
        }
        CHECK_UNTOUCHED(&rx);
        MPI_OK(MPI_Request_free(&prq));
        for (int i = 0; i < NW; i++) {
            conf_free(&s[i]);
            conf_free(&r[i]);
        }
        conf_free(&rx);
        MPI_OK(MPI_Barrier(c->comm));
    }
}

static void sendrecv(conf_comm *c) {
    const int st_t[3] = {T_VEC_D, T_STRUCT, T_DOUBLE}, rt[3] = {T_VEC_D2, T_STRUCT_PACKED, T_VEC_D};
    size_t bytes[3] = {1024, 300 << 10, c->full ? 4 * MiB : 4096};
    for (int i = 0; i < 3; i++) {
        int tag = 6500 + i, units = conf_units_for(CT[st_t[i]].family, bytes[i]);
        int sc = units / CT[st_t[i]].units, rc = units / CT[rt[i]].units;
        conf_set_ctx("%s: MPI_Sendrecv %d x %s -> %d x %s", c->label, sc, CT[st_t[i]].name, rc, CT[rt[i]].name);
        conf_buf s = conf_alloc(CT[st_t[i]].t, sc, conf_seed(c->id, tag, c->rank, 0));
        conf_buf r = conf_alloc(CT[rt[i]].t, rc, 17);
        MPI_Status st;
        MPI_OK(MPI_Sendrecv(s.p, sc, CT[st_t[i]].t, c->right, tag, r.p, rc, CT[rt[i]].t, c->left, tag, c->comm, &st));
        CHECK_STATUS(&st, c->left, tag, CT[rt[i]].t, rc, units * conf_family_elements(CT[rt[i]].family));
        CHECK_DATA(&r, CT[st_t[i]].t, sc, conf_seed(c->id, tag, c->left, 0));
        CHECK_UNTOUCHED(&s);
        conf_free(&s);
        conf_free(&r);
    }
    /* Sendrecv_replace: the type map gets the left neighbour's data, the gaps keep ours. */
    const int rp[3] = {T_VECT84, T_VEC_D, T_STRUCT};
    const int rpc[3] = {3, c->full ? (300 << 10) / 64 : 64, 7};
    for (int i = 0; i < 3; i++) {
        int tag = 6510 + i;
        conf_set_ctx("%s: MPI_Sendrecv_replace %d x %s", c->label, rpc[i], CT[rp[i]].name);
        conf_buf b = conf_alloc(CT[rp[i]].t, rpc[i], conf_seed(c->id, tag, c->rank, 0));
        MPI_Status st;
        MPI_OK(MPI_Sendrecv_replace(b.p, rpc[i], CT[rp[i]].t, c->right, tag, c->left, tag, c->comm, &st));
        int units = rpc[i] * CT[rp[i]].units;
        CHECK_STATUS(&st, c->left, tag, CT[rp[i]].t, rpc[i], units * conf_family_elements(CT[rp[i]].family));
        CHECK_DATA(&b, CT[rp[i]].t, rpc[i], conf_seed(c->id, tag, c->left, 0));
        conf_free(&b);
    }
}

int main(int argc, char **argv) {
    MPI_OK(MPI_Init(&argc, &argv));
    conf_comm cs[3];
    MPI_Comm dup, split;
    int nc = conf_begin("p2p_conf_requests", cs, &dup, &split);
    int bsize = (1 << 20) + 16 * MPI_BSEND_OVERHEAD;
    char *bbuf = conf_malloc(bsize);
    MPI_OK(MPI_Buffer_attach(bbuf, bsize));
    for (int i = 0; i < nc; i++) {
        conf_comm *c = &cs[i];
        for (int fn = 0; fn < C_COUNT; fn++)
            if (c->full || fn == C_WAITANY || fn == C_TESTSOME || fn == C_WAITALL) completion(c, fn);
        polling(c, 0, 64);
        polling(c, 1, 64);
        if (c->full) {
            polling(c, 0, 4 * MiB);
            polling(c, 1, 4 * MiB);
            compute_between(c);
        }
        request_free(c);
        cancel(c);
        if (c->full) null_array(c);
        persistent(c);
        staged_window(c);
        sendrecv(c);
    }
    void *b;
    int bs;
    MPI_OK(MPI_Buffer_detach(&b, &bs));
    free(bbuf);
    return conf_end(&dup, &split);
}
