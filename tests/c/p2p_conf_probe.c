/* Point-to-point conformance, probes: MPI_Probe / MPI_Iprobe report source, tag and the size in
 * the receiver's type (MPI_Get_count, MPI_Get_elements, MPI_UNDEFINED for partial elements) for
 * contiguous and non-contiguous senders, small and 4 MiB messages, with and without wildcards;
 * probing does not consume (probe twice, then the receive gets the probed message; two queued
 * messages are probed and received in order); MPI_Iprobe on nothing; MPI_Mprobe + MPI_Mrecv and
 * MPI_Improbe + MPI_Imrecv with non-contiguous receive types; a matched message leaves the queue
 * (a plain receive after MPI_Mprobe gets the next message); MPI_PROC_NULL for all probes
 * (MPI_MESSAGE_NO_PROC); two probed messages received by two nonblocking receives in flight at
 * once; a persistent receive started after a probe gets the probed message, with every
 * completion call. Every byte checked. Runs on MPI_COMM_WORLD, a duplicate and a split
 * (renumbered) communicator, any ranks >= 2. */
#define SLUICE_P2P_CONF
#include "check.h"

#define MiB (1 << 20)

typedef struct {
    int st, rt;
    size_t bytes;
    int partial; /* the sender sends one basic element less: MPI_UNDEFINED counts */
} pspec;

static const pspec SPECS[] = {
    {T_INT, T_INT, 64, 0},          {T_VEC_D, T_DOUBLE, 1024, 0},      {T_DOUBLE, T_VEC_D2, 4 * MiB, 0},
    {T_VECT84, T_VECT84X3, 4 * MiB, 0}, {T_STRUCT, T_STRUCT_PACKED, 1024, 0}, {T_INT, T_VEC_I4, 64, 1},
    {T_DOUBLE, T_VEC_D, 300 << 10, 1}, {T_SUBARRAY, T_INDEXED, 4096, 0},
};
#define NSPECS (int)(sizeof SPECS / sizeof SPECS[0])

/* One message per spec. how: 0 Probe + Recv, 1 Iprobe loop + Irecv/Wait, 2 Probe with wildcards
 * + Recv from the probed source/tag, 3 Mprobe + Mrecv, 4 Improbe loop + Imrecv + Test loop,
 * 5 Mprobe with wildcards + Imrecv + Wait. */
static void probe_case(conf_comm *c, int k, int how) {
    static const char *HOW[6] = {"Probe+Recv", "Iprobe+Irecv", "Probe(ANY)+Recv", "Mprobe+Mrecv", "Improbe+Imrecv",
                                 "Mprobe(ANY)+Imrecv"};
    const pspec *p = &SPECS[k];
    size_t bytes = !c->full && p->bytes > 4096 ? 4096 : p->bytes;
    int tag = 7000 + 10 * how + k, fam = CT[p->st].family;
    int units = conf_units_for(fam, bytes);
    /* partial: a contiguous sender of units-1 basic elements */
    MPI_Datatype stype = CT[p->st].t;
    int scount = units / CT[p->st].units, sunits = units;
    if (p->partial) {
        stype = CT[p->st].contig ? CT[p->st].t : MPI_DATATYPE_NULL;
        scount = sunits = units - 1;
    }
    int rcap = units / CT[p->rt].units;
    int want_count = p->partial ? MPI_UNDEFINED : sunits / CT[p->rt].units;
    int want_elems = sunits * conf_family_elements(fam);
    conf_set_ctx("%s: %s, %d x %s -> %s", c->label, HOW[how], scount, CT[p->st].name, CT[p->rt].name);
    uint64_t sseed = conf_seed(c->id, tag, c->rank, c->right), rseed = conf_seed(c->id, tag, c->left, c->rank);
    conf_buf s = conf_alloc(stype, scount, sseed), r = conf_alloc(CT[p->rt].t, rcap, 20 + k);
    MPI_Request sq, rq;
    MPI_Status st, st2;
    MPI_Message msg = MPI_MESSAGE_NULL;
    int flag = 0;
    MPI_OK(MPI_Isend(s.p, scount, stype, c->right, tag, c->comm, &sq));
    int any = how == 2 || how == 5;
    int src = any ? MPI_ANY_SOURCE : c->left, tg = any ? MPI_ANY_TAG : tag;
    switch (how) {
    case 0:
    case 2:
        MPI_OK(MPI_Probe(src, tg, c->comm, &st));
        CHECK_STATUS(&st, c->left, tag, CT[p->rt].t, want_count, want_elems);
        MPI_OK(MPI_Probe(src, tg, c->comm, &st2)); /* still there */
        CHECK_STATUS(&st2, c->left, tag, CT[p->rt].t, want_count, want_elems);
        MPI_OK(MPI_Recv(r.p, rcap, CT[p->rt].t, st.MPI_SOURCE, st.MPI_TAG, c->comm, &st));
        break;
    case 1:
        CONF_POLL("MPI_Iprobe", MPI_OK(MPI_Iprobe(src, tg, c->comm, &flag, &st)), flag);
        CHECK_STATUS(&st, c->left, tag, CT[p->rt].t, want_count, want_elems);
        MPI_OK(MPI_Irecv(r.p, rcap, CT[p->rt].t, src, tg, c->comm, &rq));
        MPI_OK(MPI_Wait(&rq, &st));
        break;
    case 3:
    case 5:
        MPI_OK(MPI_Mprobe(src, tg, c->comm, &msg, &st));
        CHECK(msg != MPI_MESSAGE_NULL && msg != MPI_MESSAGE_NO_PROC, "no message handle");
        CHECK_STATUS(&st, c->left, tag, CT[p->rt].t, want_count, want_elems);
        if (how == 3) {
            MPI_OK(MPI_Mrecv(r.p, rcap, CT[p->rt].t, &msg, &st));
        } else {
            MPI_OK(MPI_Imrecv(r.p, rcap, CT[p->rt].t, &msg, &rq));
            CHECK(msg == MPI_MESSAGE_NULL, "MPI_Imrecv did not null the message handle");
            MPI_OK(MPI_Wait(&rq, &st));
        }
        CHECK(msg == MPI_MESSAGE_NULL, "the message handle is not MPI_MESSAGE_NULL after the receive");
        break;
    case 4:
        CONF_POLL("MPI_Improbe", MPI_OK(MPI_Improbe(src, tg, c->comm, &flag, &msg, &st)), flag);
        CHECK_STATUS(&st, c->left, tag, CT[p->rt].t, want_count, want_elems);
        MPI_OK(MPI_Imrecv(r.p, rcap, CT[p->rt].t, &msg, &rq));
        CHECK(msg == MPI_MESSAGE_NULL, "MPI_Imrecv did not null the message handle");
        flag = 0;
        CONF_POLL("MPI_Test after MPI_Imrecv", MPI_OK(MPI_Test(&rq, &flag, &st)), flag);
        break;
    }
    CHECK_STATUS(&st, c->left, tag, CT[p->rt].t, want_count, want_elems);
    CHECK_DATA(&r, stype, scount, rseed);
    MPI_OK(MPI_Wait(&sq, MPI_STATUS_IGNORE));
    conf_free(&s);
    conf_free(&r);
    MPI_OK(MPI_Barrier(c->comm)); /* no message left for the next wildcard probe */
}

/* Two queued messages on one tag (4 MiB non-contiguous, then 8 bytes): probed and received in
 * order; a MPI_Mprobe'd message leaves the queue for plain receives. */
static void queued(conf_comm *c) {
    int tag = 7100;
    size_t big = c->full ? 4 * MiB : 4096;
    int u1 = conf_units_for(F_DOUBLE, big), u2 = 1;
    conf_set_ctx("%s: two queued messages probed in order", c->label);
    conf_buf s1 = conf_alloc(CT[T_VEC_D].t, u1 / 8, conf_seed(c->id, tag, c->rank, 1));
    conf_buf s2 = conf_alloc(MPI_DOUBLE, u2, conf_seed(c->id, tag, c->rank, 2));
    MPI_Request sq[2];
    MPI_Status st;
    MPI_OK(MPI_Isend(s1.p, u1 / 8, CT[T_VEC_D].t, c->right, tag, c->comm, &sq[0]));
    MPI_OK(MPI_Isend(s2.p, u2, MPI_DOUBLE, c->right, tag, c->comm, &sq[1]));
    for (int m = 0; m < 2; m++) {
        int n = m ? u2 : u1, flag = 0;
        conf_buf r = conf_alloc(CT[T_VEC_D2].t, u1 / 8, 30 + m);
        if (m == 0) MPI_OK(MPI_Probe(c->left, tag, c->comm, &st));
        else CONF_POLL("MPI_Iprobe", MPI_OK(MPI_Iprobe(c->left, tag, c->comm, &flag, &st)), flag);
        CHECK_STATUS(&st, c->left, tag, MPI_DOUBLE, n, n);
        MPI_OK(MPI_Recv(r.p, u1 / 8, CT[T_VEC_D2].t, c->left, tag, c->comm, &st));
        CHECK_STATUS(&st, c->left, tag, CT[T_VEC_D2].t, m ? MPI_UNDEFINED : n / 8, n);
        CHECK_DATA(&r, m ? MPI_DOUBLE : CT[T_VEC_D].t, m ? u2 : u1 / 8, conf_seed(c->id, tag, c->left, m + 1));
        conf_free(&r);
    }
    MPI_OK(MPI_Waitall(2, sq, MPI_STATUSES_IGNORE));

    tag = 7101;
    conf_set_ctx("%s: MPI_Mprobe removes the message from matching", c->label);
    conf_refill(&s1, conf_seed(c->id, tag, c->rank, 1));
    conf_refill(&s2, conf_seed(c->id, tag, c->rank, 2));
    MPI_OK(MPI_Isend(s1.p, u1 / 8, CT[T_VEC_D].t, c->right, tag, c->comm, &sq[0]));
    MPI_OK(MPI_Isend(s2.p, u2, MPI_DOUBLE, c->right, tag, c->comm, &sq[1]));
    MPI_Message msg;
    MPI_OK(MPI_Mprobe(c->left, tag, c->comm, &msg, &st));
    CHECK_STATUS(&st, c->left, tag, MPI_DOUBLE, u1, u1);
    conf_buf r2 = conf_alloc(CT[T_VEC_D].t, 1, 32), r1 = conf_alloc(MPI_DOUBLE, u1, 33);
    MPI_OK(MPI_Recv(r2.p, 1, CT[T_VEC_D].t, c->left, tag, c->comm, &st)); /* the second message */
    CHECK_STATUS(&st, c->left, tag, CT[T_VEC_D].t, MPI_UNDEFINED, u2);
    CHECK_DATA(&r2, MPI_DOUBLE, u2, conf_seed(c->id, tag, c->left, 2));
    MPI_OK(MPI_Mrecv(r1.p, u1, MPI_DOUBLE, &msg, &st));
    CHECK_STATUS(&st, c->left, tag, MPI_DOUBLE, u1, u1);
    CHECK_DATA(&r1, CT[T_VEC_D].t, u1 / 8, conf_seed(c->id, tag, c->left, 1));
    MPI_OK(MPI_Waitall(2, sq, MPI_STATUSES_IGNORE));
    conf_free(&r1);
    conf_free(&r2);
    conf_free(&s1);
    conf_free(&s2);
    MPI_OK(MPI_Barrier(c->comm));
}

/* Two probed messages, then two nonblocking receives in flight at once: each gets its own
 * message, status and request (sluice serves probed pipelined messages from its stash under a
 * placeholder request per receive; a shared pre-completed handle mixed them up). how 0:
 * Waitall; 1: Wait for the second receive first; 2: Testall loop. */
static void served_in_flight(conf_comm *c, int how) {
    int tag = 7200 + 2 * how;
    size_t big = c->full ? 4 * MiB : (300 << 10);
    int u = conf_units_for(F_DOUBLE, big);
    conf_set_ctx("%s: two probed messages, two receives in flight (%d)", c->label, how);
    conf_buf s[2], r[2];
    MPI_Request sq[2], rq[2];
    MPI_Status st, sts[2];
    for (int m = 0; m < 2; m++) {
        s[m] = conf_alloc(CT[T_VEC_D].t, u / 8, conf_seed(c->id, tag + m, c->rank, m));
        MPI_OK(MPI_Isend(s[m].p, u / 8, CT[T_VEC_D].t, c->right, tag + m, c->comm, &sq[m]));
    }
    for (int m = 0; m < 2; m++) {
        MPI_OK(MPI_Probe(c->left, tag + m, c->comm, &st));
        CHECK_STATUS(&st, c->left, tag + m, MPI_DOUBLE, u, u);
    }
    r[0] = conf_alloc(MPI_DOUBLE, u, 40);
    r[1] = conf_alloc(CT[T_VEC_D2].t, u / 8, 41);
    MPI_OK(MPI_Irecv(r[0].p, u, MPI_DOUBLE, c->left, tag, c->comm, &rq[0]));
    MPI_OK(MPI_Irecv(r[1].p, u / 8, CT[T_VEC_D2].t, c->left, tag + 1, c->comm, &rq[1]));
    CHECK(rq[0] != rq[1], "two receives in flight share the request handle %#lx", (unsigned long)(uintptr_t)rq[0]);
    if (how == 0) {
        MPI_OK(MPI_Waitall(2, rq, sts));
    } else if (how == 1) {
        MPI_OK(MPI_Wait(&rq[1], &sts[1]));
        MPI_OK(MPI_Wait(&rq[0], &sts[0]));
    } else {
        int flag = 0;
        CONF_POLL("MPI_Testall", MPI_OK(MPI_Testall(2, rq, &flag, sts)), flag);
    }
    CHECK_STATUS(&sts[0], c->left, tag, MPI_DOUBLE, u, u);
    CHECK_STATUS(&sts[1], c->left, tag + 1, CT[T_VEC_D2].t, u / 8, u);
    CHECK_DATA(&r[0], CT[T_VEC_D].t, u / 8, conf_seed(c->id, tag, c->left, 0));
    CHECK_DATA(&r[1], CT[T_VEC_D].t, u / 8, conf_seed(c->id, tag + 1, c->left, 1));
    MPI_OK(MPI_Waitall(2, sq, MPI_STATUSES_IGNORE));
    for (int m = 0; m < 2; m++) {
        conf_free(&s[m]);
        conf_free(&r[m]);
    }
    MPI_OK(MPI_Barrier(c->comm));
}

/* A persistent receive started after a probe found its message gets that message (a probe may
 * have taken a pipelined message out of the MPI: sluice must serve it to MPI_Start), then the
 * next message on the next start. Every completion call: how 0 Wait, 1 Test loop, 2 Waitany,
 * 3 Testsome loop, 4 Waitall, 5 Startall + Waitsome, 6 Request_get_status loop + Wait,
 * 7 Testany loop. The receive type alternates between a vector (sluice's engine) and
 * contiguous doubles. */
static void probed_persistent(conf_comm *c, int how) {
    static const char *HOW[8] = {"Wait", "Test", "Waitany", "Testsome", "Waitall", "Startall+Waitsome",
                                 "Request_get_status", "Testany"};
    int tag = 7300 + how, vec = how % 2 == 0;
    size_t big = c->full ? 4 * MiB : 4096;
    int u1 = conf_units_for(F_DOUBLE, big), u2 = u1 / 2;
    MPI_Datatype rt = vec ? CT[T_VEC_D2].t : MPI_DOUBLE;
    int per = vec ? 8 : 1; /* doubles per receive element */
    conf_set_ctx("%s: Probe, then a persistent receive (%s, %s)", c->label, HOW[how], vec ? "vector" : "contiguous");
    conf_buf s1 = conf_alloc(CT[T_VEC_D].t, u1 / 8, conf_seed(c->id, tag, c->rank, 1));
    conf_buf s2 = conf_alloc(CT[T_VEC_D].t, u2 / 8, conf_seed(c->id, tag, c->rank, 2));
    conf_buf r = conf_alloc(rt, u1 / per, 40 + how);
    MPI_Request sq[2], pq, arr[2];
    MPI_Status st, sts[2];
    MPI_OK(MPI_Isend(s1.p, u1 / 8, CT[T_VEC_D].t, c->right, tag, c->comm, &sq[0]));
    MPI_OK(MPI_Isend(s2.p, u2 / 8, CT[T_VEC_D].t, c->right, tag, c->comm, &sq[1]));
    MPI_OK(MPI_Probe(c->left, tag, c->comm, &st));
    CHECK_STATUS(&st, c->left, tag, rt, u1 / per, u1);
    MPI_OK(MPI_Recv_init(r.p, u1 / per, rt, c->left, tag, c->comm, &pq));
    for (int m = 0; m < 2; m++) {
        int n = m ? u2 : u1, flag = 0, idx = -1, out = 0, ids[2] = {-1, -1};
        conf_refill(&r, 50 + m);
        if (how == 5) MPI_OK(MPI_Startall(1, &pq));
        else MPI_OK(MPI_Start(&pq));
        switch (m ? 0 : how) {
        case 0:
            MPI_OK(MPI_Wait(&pq, &st));
            break;
        case 1:
            CONF_POLL("MPI_Test", MPI_OK(MPI_Test(&pq, &flag, &st)), flag);
            break;
        case 2:
            arr[0] = MPI_REQUEST_NULL;
            arr[1] = pq;
            MPI_OK(MPI_Waitany(2, arr, &idx, &st));
            CHECK(idx == 1 && arr[1] == pq, "MPI_Waitany returned index %d", idx);
            break;
        case 3:
            CONF_POLL("MPI_Testsome", MPI_OK(MPI_Testsome(1, &pq, &out, ids, sts)), out != 0);
            CHECK(out == 1 && ids[0] == 0, "MPI_Testsome returned %d indices", out);
            st = sts[0];
            break;
        case 4:
            MPI_OK(MPI_Waitall(1, &pq, sts));
            st = sts[0];
            break;
        case 5:
            MPI_OK(MPI_Waitsome(1, &pq, &out, ids, sts));
            CHECK(out == 1 && ids[0] == 0, "MPI_Waitsome returned %d indices", out);
            st = sts[0];
            break;
        case 6:
            CONF_POLL("MPI_Request_get_status", MPI_OK(MPI_Request_get_status(pq, &flag, &st)), flag);
            CHECK_STATUS(&st, c->left, tag, rt, n / per, n);
            MPI_OK(MPI_Wait(&pq, &st));
            break;
        case 7:
            arr[0] = pq;
            arr[1] = MPI_REQUEST_NULL;
            CONF_POLL("MPI_Testany", MPI_OK(MPI_Testany(2, arr, &idx, &flag, &st)), flag);
            CHECK(idx == 0 && arr[0] == pq, "MPI_Testany returned index %d", idx);
            break;
        }
        CHECK(pq != MPI_REQUEST_NULL, "the persistent request was freed by its completion");
        CHECK_STATUS(&st, c->left, tag, rt, n / per, n);
        CHECK_DATA(&r, CT[T_VEC_D].t, n / 8, conf_seed(c->id, tag, c->left, m + 1));
    }
    MPI_OK(MPI_Request_free(&pq));
    MPI_OK(MPI_Waitall(2, sq, MPI_STATUSES_IGNORE));
    conf_free(&r);
    conf_free(&s1);
    conf_free(&s2);
    MPI_OK(MPI_Barrier(c->comm));
}

static void nothing_and_proc_null(conf_comm *c) {
    MPI_Status st;
    MPI_Message msg;
    int flag = -1;
    conf_set_ctx("%s: probes that find nothing", c->label);
    MPI_OK(MPI_Iprobe(c->left, 7200, c->comm, &flag, &st));
    CHECK(flag == 0, "MPI_Iprobe found a message that was never sent");
    flag = -1;
    msg = MPI_MESSAGE_NULL;
    MPI_OK(MPI_Improbe(MPI_ANY_SOURCE, 7200, c->comm, &flag, &msg, &st));
    CHECK(flag == 0 && msg == MPI_MESSAGE_NULL, "MPI_Improbe found a message that was never sent");

    conf_set_ctx("%s: probes of MPI_PROC_NULL", c->label);
    MPI_OK(MPI_Probe(MPI_PROC_NULL, 7201, c->comm, &st));
    CHECK_EMPTY_STATUS(&st, MPI_PROC_NULL);
    flag = 0;
    MPI_OK(MPI_Iprobe(MPI_PROC_NULL, MPI_ANY_TAG, c->comm, &flag, &st));
    CHECK(flag, "MPI_Iprobe(MPI_PROC_NULL) flag %d", flag);
    CHECK_EMPTY_STATUS(&st, MPI_PROC_NULL);
    MPI_OK(MPI_Mprobe(MPI_PROC_NULL, 7201, c->comm, &msg, &st));
    CHECK(msg == MPI_MESSAGE_NO_PROC, "MPI_Mprobe(MPI_PROC_NULL) did not return MPI_MESSAGE_NO_PROC");
    CHECK_EMPTY_STATUS(&st, MPI_PROC_NULL);
    conf_buf r = conf_alloc(CT[T_VEC_D].t, 2, 34);
    MPI_OK(MPI_Mrecv(r.p, 2, CT[T_VEC_D].t, &msg, &st));
    CHECK(msg == MPI_MESSAGE_NULL, "MPI_Mrecv(MPI_MESSAGE_NO_PROC) left the handle");
    CHECK_EMPTY_STATUS(&st, MPI_PROC_NULL);
    CHECK_UNTOUCHED(&r);
    flag = 0;
    MPI_OK(MPI_Improbe(MPI_PROC_NULL, 7201, c->comm, &flag, &msg, &st));
    CHECK(flag && msg == MPI_MESSAGE_NO_PROC, "MPI_Improbe(MPI_PROC_NULL): flag %d", flag);
    MPI_Request rq;
    MPI_OK(MPI_Imrecv(r.p, 2, CT[T_VEC_D].t, &msg, &rq));
    MPI_OK(MPI_Wait(&rq, &st));
    CHECK_EMPTY_STATUS(&st, MPI_PROC_NULL);
    CHECK_UNTOUCHED(&r);
    conf_free(&r);
}

int main(int argc, char **argv) {
    MPI_OK(MPI_Init(&argc, &argv));
    conf_comm cs[3];
    MPI_Comm dup, split;
    int nc = conf_begin("p2p_conf_probe", cs, &dup, &split);
    for (int i = 0; i < nc; i++) {
        for (int how = 0; how < 6; how++)
            for (int k = 0; k < NSPECS; k++)
                if (cs[i].full || (k + how) % 3 == 0) probe_case(&cs[i], k, how);
        queued(&cs[i]);
        for (int how = 0; how < 3; how++) served_in_flight(&cs[i], how);
        for (int how = 0; how < 8; how++)
            if (cs[i].full || how % 3 == i) probed_persistent(&cs[i], how);
        nothing_and_proc_null(&cs[i]);
    }
    return conf_end(&dup, &split);
}
