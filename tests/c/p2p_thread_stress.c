/* Point-to-point thread stress (issue 21, scope 4), MPI_THREAD_MULTIPLE.
 *
 * THREADS threads per rank exchange around the ring at the same time, each on its own tag range
 * (odd threads on a duplicate of MPI_COMM_WORLD). Every round a thread runs one "kind" of
 * exchange on a batch of messages with its left and right neighbours (the same thread index on
 * the other ranks, which run the same kind in the same round):
 *
 *   blocking Send/Ssend + Recv, Sendrecv, Rsend after a ready handshake,
 *   Isend/Issend + Irecv completed by Waitall, Waitany, Waitsome (with a cancelled receive in the
 *   array), Testsome, Test/Testany/Testall loops, Wait in reverse order,
 *   Iprobe + Recv, Improbe + Imrecv, Probe + Recv, Mprobe + Mrecv (each on its own tags),
 *   persistent Send_init/Ssend_init/Recv_init started with Start/Startall several times (and a
 *   variant whose message is probed before its receive is started: served from sluice's stash),
 *   MPI_Request_free of sends after start (the receiver's acknowledgement frees the buffer) and
 *   of receives (the data must still land: a marker sent after it on the same tag tells it was
 *   matched, then the buffer is polled until the data is there),
 *   MPI_Cancel of receives on a tag nobody sends (MPI_Test_cancelled must say so, the buffer
 *   stays untouched).
 *
 * Message sizes cycle through small (below sluice's minimum pipeline threshold too), medium and
 * large ones (above the default SLUICE_PIPELINE_THRESHOLD of 256 KiB), with contiguous, vector,
 * indexed, subarray and struct types on both sides (send and receive types differ but share the
 * type signature). Every received byte (the whole receive allocation, guards and gaps included)
 * is compared with an image computed with PMPI_Pack/PMPI_Unpack, and every status (source, tag,
 * MPI_Get_count, MPI_Get_elements, cancelled) and returned index is checked. Ends with
 * sluice_p2p_outstanding() == 0 (when preloaded) and prints "p2p_thread_stress: OK (<n> checks)".
 *
 * Needs an even number of ranks (blocking Send/Recv pairs order themselves by rank parity).
 * STRESS_ROUNDS (environment) overrides the rounds per thread; every thread runs every kind at
 * least once per NKINDS rounds. Skips cleanly when the MPI lacks MPI_THREAD_MULTIPLE. */
#define SLUICE_P2P_CONF
#include <pthread.h>
#include "check.h"

#define THREADS 4
#define BATCH 3          /* messages per round */
#define TAG_SPAN 4000    /* tags per thread */
#define TAG_ROUNDS 480   /* round tags wrap after this many rounds (8 tags per round) */
#define TAG_HANDSHAKE 3980
#define TAG_NEVER 3990   /* nobody ever sends on this tag */

static conf_comm world, dupc;
static int nranks;

/* Send type -> receive type pairs of one signature family. */
static const int PAIR_S[] = {T_VEC_D, T_INT, T_VECT84, T_STRUCT, T_INDEXED, T_DOUBLE, T_CHAR, T_STRUCT_PACKED, T_INDEXED, T_BLOCKS64, T_SUBARRAY};
static const int PAIR_R[] = {T_DOUBLE, T_SUBARRAY, T_VECT84X3, T_STRUCT_PACKED, T_VEC_I4, T_VEC_D2, T_CHAR, T_STRUCT, T_INDEXED, T_CONTIG64, T_INDEXED};
#define NPAIRS ((int)(sizeof PAIR_S / sizeof PAIR_S[0]))
/* Approximate message sizes (rounded up to whole units of both types). */
static const size_t SIZES[] = {48, 1024, 300 << 10, 8192, 100, 600 << 10, 2000};
#define NSIZES ((int)(sizeof SIZES / sizeof SIZES[0]))

enum {
    K_SEND_RECV, K_SENDRECV, K_RSEND, K_WAITALL, K_WAITANY, K_WAITSOME, K_TESTSOME, K_TEST, K_WAIT_REV,
    K_IPROBE, K_IMPROBE, K_PROBE, K_MPROBE, K_PERSISTENT, K_PERSISTENT_PROBED, K_FREE_SEND, K_FREE_RECV,
    K_CANCEL, K_ISSEND_TESTALL, NKINDS
};
static const char *KIND_NAME[NKINDS] = {
    "Send/Recv", "Sendrecv", "Rsend", "Waitall", "Waitany", "Waitsome+cancel", "Testsome", "Test/Testany",
    "Wait reversed", "Iprobe+Recv", "Improbe+Imrecv", "Probe+Recv", "Mprobe+Mrecv", "persistent",
    "persistent probed", "Request_free send", "Request_free recv", "cancel", "Issend+Testall"};

/* One message of a batch: this thread sends `s` to the right and receives `r` from the left. */
typedef struct {
    int pair, tag, sc, rc, units;
    conf_buf s, r;
    uint64_t sseed;     /* seed of the left neighbour's send buffer (what `r` must receive) */
} msg_t;

typedef struct {
    int t;
    conf_comm *c;
    int round, kind;
    int base;           /* first tag of this thread */
} ctx_t;

static __thread char where[160];

#define TCHECK(cond, ...)                                                            \
    do {                                                                             \
        if (!(cond)) fprintf(stderr, "[rank %d] %s: ", conf_rank, where);          \
        CHECK(cond, __VA_ARGS__);                                                    \
    } while (0)

/* Polls `call` until it sets `flag`; `flag` is preset to -1 before each call, so a call that
 * leaves it unwritten (it must always write 0 or 1) ends the poll and fails the check. */
#define POLL_FLAG(what, call, flag)                                                  \
    do {                                                                             \
        CONF_POLL(what, { (flag) = -1; MPI_OK(call); }, (flag) != 0);               \
        TCHECK((flag) == 1, "%s: flag %d (never written?)", what, (flag));           \
    } while (0)

static void msg_init(ctx_t *x, msg_t *m, int i, int iteration) {
    int pair = (x->round * BATCH + i + x->t) % NPAIRS;
    size_t bytes = SIZES[(x->round + i * 3 + x->t) % NSIZES];
    int st = PAIR_S[pair], rt = PAIR_R[pair];
    m->pair = pair;
    m->tag = x->base + (x->round % TAG_ROUNDS) * 8 + i;
    m->units = conf_units_for(CT[st].family, bytes);
    m->sc = m->units / CT[st].units;
    m->rc = m->units / CT[rt].units;
    m->s = conf_alloc(CT[st].t, m->sc, conf_seed(x->c->id, m->tag, x->c->rank, 1000 * x->round + iteration));
    m->r = conf_alloc(CT[rt].t, m->rc, conf_seed(77, x->t, x->round, iteration));
    m->sseed = conf_seed(x->c->id, m->tag, x->c->left, 1000 * x->round + iteration);
}

/* New contents for another iteration of a persistent exchange (same buffers). */
static void msg_refill(ctx_t *x, msg_t *m, int iteration) {
    conf_refill(&m->s, conf_seed(x->c->id, m->tag, x->c->rank, 1000 * x->round + iteration));
    conf_refill(&m->r, conf_seed(77, x->t, x->round, iteration));
    m->sseed = conf_seed(x->c->id, m->tag, x->c->left, 1000 * x->round + iteration);
}

static void msg_free(msg_t *m) {
    conf_free(&m->s);
    conf_free(&m->r);
}

static void describe(ctx_t *x, msg_t *m) {
    int st = PAIR_S[m->pair], rt = PAIR_R[m->pair];
    fprintf(stderr, "[rank %d] %s: tag %d: %d x %s -> %d x %s (%zu bytes)\n", conf_rank, where, m->tag, m->sc, CT[st].name,
            m->rc, CT[rt].name, conf_size(CT[st].t, m->sc));
}

/* The status of a receive of `m`, and its data. */
static void check_recv(ctx_t *x, msg_t *m, MPI_Status *st) {
    int rt = PAIR_R[m->pair], st_t = PAIR_S[m->pair];
    if (st) {
        int c = -7, e = -7, cancelled = -1;
        MPI_OK(MPI_Get_count(st, CT[rt].t, &c));
        MPI_OK(MPI_Get_elements(st, CT[rt].t, &e));
        MPI_OK(MPI_Test_cancelled(st, &cancelled));
        int el = m->units * conf_family_elements(CT[rt].family);
        TCHECK(st->MPI_SOURCE == x->c->left && st->MPI_TAG == m->tag && c == m->rc && e == el && !cancelled,
               "tag %d: status source %d tag %d count %d elements %d cancelled %d, expected %d/%d/%d/%d/0", m->tag,
               st->MPI_SOURCE, st->MPI_TAG, c, e, cancelled, x->c->left, m->tag, m->rc, el);
    }
    if (!CHECK_DATA(&m->r, CT[st_t].t, m->sc, m->sseed)) describe(x, m);
}

/* A probe's status: source, tag and size of the message (in the receive type). */
static void check_probe(ctx_t *x, msg_t *m, MPI_Status *st) {
    int rt = PAIR_R[m->pair], c = -7;
    MPI_OK(MPI_Get_count(st, CT[rt].t, &c));
    TCHECK(st->MPI_SOURCE == x->c->left && st->MPI_TAG == m->tag && c == m->rc,
           "probe of tag %d: source %d tag %d count %d, expected %d/%d/%d", m->tag, st->MPI_SOURCE, st->MPI_TAG, c,
           x->c->left, m->tag, m->rc);
}

static void isend(ctx_t *x, msg_t *m, MPI_Request *q, int sync) {
    int st = PAIR_S[m->pair];
    if (sync) MPI_OK(MPI_Issend(m->s.p, m->sc, CT[st].t, x->c->right, m->tag, x->c->comm, q));
    else MPI_OK(MPI_Isend(m->s.p, m->sc, CT[st].t, x->c->right, m->tag, x->c->comm, q));
}

static void irecv(ctx_t *x, msg_t *m, MPI_Request *q) {
    int rt = PAIR_R[m->pair];
    MPI_OK(MPI_Irecv(m->r.p, m->rc, CT[rt].t, x->c->left, m->tag, x->c->comm, q));
}

/* Zero-byte token on the thread's handshake tag: to `to`, then from `from`. */
static void token(ctx_t *x, int to, int from, int sub) {
    MPI_Status st;
    int tag = x->base + TAG_HANDSHAKE + sub;
    MPI_OK(MPI_Sendrecv(NULL, 0, MPI_INT, to, tag, NULL, 0, MPI_INT, from, tag, x->c->comm, &st));
    TCHECK(st.MPI_SOURCE == from && st.MPI_TAG == tag, "token status %d/%d", st.MPI_SOURCE, st.MPI_TAG);
}

/* Receives that are never matched (tag TAG_NEVER): posted, cancelled, completed. */
static void post_never(ctx_t *x, conf_buf *b, int which, MPI_Request *q) {
    /* Large non-contiguous (a tracked pipelined receive under sluice), small contiguous, small
     * non-contiguous. */
    MPI_Datatype t = which == 0 ? CT[T_VEC_D].t : which == 1 ? MPI_INT : CT[T_STRUCT].t;
    int n = which == 0 ? 8192 : which == 1 ? 100 : 10;
    *b = conf_alloc(t, n, conf_seed(99, x->t, x->round, which));
    MPI_OK(MPI_Irecv(b->p, n, t, x->c->left, x->base + TAG_NEVER, x->c->comm, q));
}

static void check_cancelled(ctx_t *x, conf_buf *b, MPI_Status *st) {
    int cancelled = -1;
    MPI_OK(MPI_Test_cancelled(st, &cancelled));
    TCHECK(cancelled, "MPI_Test_cancelled %d for a receive on a tag nobody sends", cancelled);
    CHECK_UNTOUCHED(b);
    conf_free(b);
}

/* Whether `buf` holds `img`, reading each byte once. The poll below reads a buffer that another
 * thread's progress may still be writing (a freed receive's data). memcmp must not be used there:
 * glibc's vector memcmp (__memcmp_evex_movbe here) finds the first differing block, then loads the
 * differing byte again to compute its result, so a writer that stores the right value in between
 * makes it return 0 for a buffer that is not complete yet. The data check after the poll then
 * failed with the tail of the message missing, or with "0 of N bytes differ" when the writer
 * finished during the check (found with delays injected into sluice, 2026-11-26). */
static int same_bytes(const unsigned char *img, const unsigned char *buf, size_t n) {
    const volatile unsigned char *b = buf;
    for (size_t k = 0; k < n; k++)
        if (img[k] != b[k]) return 0;
    return 1;
}

static void kind_run(ctx_t *x) {
    msg_t m[BATCH];
    MPI_Request q[2 * BATCH + 1];
    MPI_Status sts[2 * BATCH + 1], st;
    int n = BATCH;
    conf_comm *c = x->c;
    for (int i = 0; i < n; i++) msg_init(x, &m[i], i, 0);
    switch (x->kind) {
    case K_SEND_RECV: /* blocking, ordered by rank parity (even ranks send first) */
        for (int i = 0; i < n; i++) {
            int st_t = PAIR_S[m[i].pair], rt = PAIR_R[m[i].pair];
            for (int step = 0; step < 2; step++) {
                if ((step == 0) == (c->rank % 2 == 0)) {
                    if (i == 1) MPI_OK(MPI_Ssend(m[i].s.p, m[i].sc, CT[st_t].t, c->right, m[i].tag, c->comm));
                    else MPI_OK(MPI_Send(m[i].s.p, m[i].sc, CT[st_t].t, c->right, m[i].tag, c->comm));
                } else {
                    MPI_OK(MPI_Recv(m[i].r.p, m[i].rc, CT[rt].t, c->left, m[i].tag, c->comm, &st));
                    check_recv(x, &m[i], &st);
                }
            }
        }
        break;
    case K_SENDRECV:
        for (int i = 0; i < n; i++) {
            int st_t = PAIR_S[m[i].pair], rt = PAIR_R[m[i].pair];
            MPI_OK(MPI_Sendrecv(m[i].s.p, m[i].sc, CT[st_t].t, c->right, m[i].tag, m[i].r.p, m[i].rc, CT[rt].t, c->left,
                                m[i].tag, c->comm, &st));
            check_recv(x, &m[i], &st);
        }
        break;
    case K_RSEND: /* receives posted, then "ready" to the left; Rsend once the right is ready */
        for (int i = 0; i < n; i++) irecv(x, &m[i], &q[i]);
        token(x, c->left, c->right, 0);
        for (int i = 0; i < n; i++) {
            int st_t = PAIR_S[m[i].pair];
            MPI_OK(MPI_Rsend(m[i].s.p, m[i].sc, CT[st_t].t, c->right, m[i].tag, c->comm));
        }
        MPI_OK(MPI_Waitall(n, q, sts));
        for (int i = 0; i < n; i++) check_recv(x, &m[i], &sts[i]);
        break;
    case K_WAITALL:
    case K_ISSEND_TESTALL: {
        /* receives and sends interleaved in one array */
        for (int i = 0; i < n; i++) {
            irecv(x, &m[i], &q[2 * i]);
            isend(x, &m[i], &q[2 * i + 1], x->kind == K_ISSEND_TESTALL);
        }
        if (x->kind == K_WAITALL) {
            MPI_OK(MPI_Waitall(2 * n, q, sts));
        } else {
            int flag = 0;
            POLL_FLAG("MPI_Testall", MPI_Testall(2 * n, q, &flag, sts), flag);
        }
        for (int i = 0; i < 2 * n; i++) TCHECK(q[i] == MPI_REQUEST_NULL, "request %d not freed", i);
        for (int i = 0; i < n; i++) check_recv(x, &m[i], &sts[2 * i]);
        break;
    }
    case K_WAITANY:
    case K_TEST: {
        /* sends first, then receives */
        for (int i = 0; i < n; i++) isend(x, &m[i], &q[i], 0);
        for (int i = 0; i < n; i++) irecv(x, &m[i], &q[n + i]);
        int seen[2 * BATCH] = {0};
        for (int done = 0; done < 2 * n; done++) {
            int idx = -1;
            if (x->kind == K_WAITANY) {
                MPI_OK(MPI_Waitany(2 * n, q, &idx, &st));
            } else if (done % 2) {
                int flag = 0;
                POLL_FLAG("MPI_Testany", MPI_Testany(2 * n, q, &idx, &flag, &st), flag);
                TCHECK(idx != MPI_UNDEFINED, "MPI_Testany: flag set with index MPI_UNDEFINED");
            } else {
                /* MPI_Test on each live request in turn until one completes */
                int flag = 0, k = 0;
                CONF_POLL("MPI_Test", {
                    while (q[k % (2 * n)] == MPI_REQUEST_NULL) k++;
                    idx = k % (2 * n);
                    flag = -1;
                    MPI_OK(MPI_Test(&q[idx], &flag, &st));
                    k++;
                }, flag != 0);
                TCHECK(flag == 1, "MPI_Test: flag %d (never written?)", flag);
            }
            if (idx < 0 || idx >= 2 * n || seen[idx]) {
                TCHECK(0, "completion index %d (already seen %d)", idx, idx >= 0 && idx < 2 * n ? seen[idx] : -1);
                conf_die(__FILE__, __LINE__, "bad completion index");
            }
            seen[idx] = 1;
            TCHECK(q[idx] == MPI_REQUEST_NULL, "completed request %d not freed", idx);
            if (idx >= n) check_recv(x, &m[idx - n], &st);
        }
        break;
    }
    case K_WAITSOME:
    case K_TESTSOME: {
        /* receives, sends, and (Waitsome) a receive cancelled before the call */
        conf_buf never;
        int total = 2 * n;
        for (int i = 0; i < n; i++) irecv(x, &m[i], &q[i]);
        if (x->kind == K_WAITSOME) {
            post_never(x, &never, x->round % 3, &q[total]);
            MPI_OK(MPI_Cancel(&q[total]));
            total++;
        }
        for (int i = 0; i < n; i++) isend(x, &m[i], &q[n + i], 0);
        int seen[2 * BATCH + 1] = {0}, left = total;
        while (left > 0) {
            int outcount = -1, idx[2 * BATCH + 1];
            if (x->kind == K_WAITSOME) {
                MPI_OK(MPI_Waitsome(total, q, &outcount, idx, sts));
                TCHECK(outcount >= 1 && outcount <= left, "MPI_Waitsome outcount %d with %d pending", outcount, left);
            } else {
                CONF_POLL("MPI_Testsome", { outcount = -7; MPI_OK(MPI_Testsome(total, q, &outcount, idx, sts)); }, outcount != 0);
                TCHECK(outcount >= 1 && outcount <= left, "MPI_Testsome outcount %d with %d pending", outcount, left);
            }
            if (outcount < 1 || outcount > left) conf_die(__FILE__, __LINE__, "bad outcount %d", outcount);
            for (int k = 0; k < outcount; k++) {
                int i = idx[k];
                if (i < 0 || i >= total || seen[i]) conf_die(__FILE__, __LINE__, "bad completion index %d", i);
                seen[i] = 1;
                TCHECK(q[i] == MPI_REQUEST_NULL, "completed request %d not freed", i);
                if (i < n) check_recv(x, &m[i], &sts[k]);
                else if (i == 2 * n) check_cancelled(x, &never, &sts[k]);
            }
            left -= outcount;
        }
        break;
    }
    case K_WAIT_REV:
        for (int i = 0; i < n; i++) {
            irecv(x, &m[i], &q[i]);
            isend(x, &m[i], &q[n + i], 0);
        }
        for (int i = n - 1; i >= 0; i--) {
            MPI_OK(MPI_Wait(&q[i], &st));
            check_recv(x, &m[i], &st);
            MPI_OK(MPI_Wait(&q[n + i], MPI_STATUS_IGNORE));
        }
        break;
    case K_IPROBE:
    case K_IMPROBE:
    case K_PROBE:
    case K_MPROBE:
        for (int i = 0; i < n; i++) isend(x, &m[i], &q[i], 0);
        /* Matched probes: every message of the batch is probed first (in order), and received
         * afterwards, in reverse order; several matched messages are held at once. */
        MPI_Message msgs[BATCH];
        for (int i = 0; i < n && (x->kind == K_IMPROBE || x->kind == K_MPROBE); i++) {
            int flag = 0;
            if (x->kind == K_IMPROBE)
                POLL_FLAG("MPI_Improbe", MPI_Improbe(c->left, m[i].tag, c->comm, &flag, &msgs[i], &st), flag);
            else
                MPI_OK(MPI_Mprobe(c->left, m[i].tag, c->comm, &msgs[i], &st));
            check_probe(x, &m[i], &st);
            for (int k = 0; k < i; k++) TCHECK(msgs[k] != msgs[i], "matched messages %d and %d share a handle", k, i);
        }
        /* received in reverse order: each probe names its own tag */
        for (int i = n - 1; i >= 0; i--) {
            int rt = PAIR_R[m[i].pair], flag = 0;
            MPI_Message msg = MPI_MESSAGE_NULL;
            MPI_Request rq;
            if (x->kind == K_IPROBE) {
                POLL_FLAG("MPI_Iprobe", MPI_Iprobe(c->left, m[i].tag, c->comm, &flag, &st), flag);
                check_probe(x, &m[i], &st);
                /* probing again finds the same message */
                MPI_OK(MPI_Iprobe(c->left, m[i].tag, c->comm, &flag, &st));
                TCHECK(flag, "second MPI_Iprobe of tag %d found nothing", m[i].tag);
                if (flag) check_probe(x, &m[i], &st);
                MPI_OK(MPI_Recv(m[i].r.p, m[i].rc, CT[rt].t, c->left, m[i].tag, c->comm, &st));
                check_recv(x, &m[i], &st);
            } else if (x->kind == K_IMPROBE) {
                msg = msgs[i];
                MPI_OK(MPI_Imrecv(m[i].r.p, m[i].rc, CT[rt].t, &msg, &rq));
                TCHECK(msg == MPI_MESSAGE_NULL, "MPI_Imrecv left the message handle");
                if (i % 2) {
                    MPI_OK(MPI_Wait(&rq, &st));
                } else {
                    flag = 0;
                    POLL_FLAG("MPI_Test of an Imrecv", MPI_Test(&rq, &flag, &st), flag);
                }
                check_recv(x, &m[i], &st);
            } else if (x->kind == K_PROBE) {
                MPI_OK(MPI_Probe(c->left, m[i].tag, c->comm, &st));
                check_probe(x, &m[i], &st);
                MPI_OK(MPI_Recv(m[i].r.p, m[i].rc, CT[rt].t, c->left, m[i].tag, c->comm, &st));
                check_recv(x, &m[i], &st);
            } else {
                msg = msgs[i];
                MPI_OK(MPI_Mrecv(m[i].r.p, m[i].rc, CT[rt].t, &msg, &st));
                TCHECK(msg == MPI_MESSAGE_NULL, "MPI_Mrecv left the message handle");
                check_recv(x, &m[i], &st);
            }
        }
        MPI_OK(MPI_Waitall(n, q, MPI_STATUSES_IGNORE));
        break;
    case K_PERSISTENT:
    case K_PERSISTENT_PROBED: {
        for (int i = 0; i < n; i++) {
            int st_t = PAIR_S[m[i].pair], rt = PAIR_R[m[i].pair];
            MPI_OK(MPI_Recv_init(m[i].r.p, m[i].rc, CT[rt].t, c->left, m[i].tag, c->comm, &q[i]));
            if (i == 1) MPI_OK(MPI_Ssend_init(m[i].s.p, m[i].sc, CT[st_t].t, c->right, m[i].tag, c->comm, &q[n + i]));
            else MPI_OK(MPI_Send_init(m[i].s.p, m[i].sc, CT[st_t].t, c->right, m[i].tag, c->comm, &q[n + i]));
        }
        for (int it = 0; it < 3; it++) {
            if (it) for (int i = 0; i < n; i++) msg_refill(x, &m[i], it);
            if (x->kind == K_PERSISTENT) {
                if (it == 1) {
                    for (int i = 0; i < 2 * n; i++) MPI_OK(MPI_Start(&q[i]));
                } else {
                    MPI_OK(MPI_Startall(2 * n, q));
                }
                if (it == 2) {
                    int flag = 0;
                    POLL_FLAG("MPI_Testall (persistent)", MPI_Testall(2 * n, q, &flag, sts), flag);
                } else {
                    MPI_OK(MPI_Waitall(2 * n, q, sts));
                }
                for (int i = 0; i < n; i++) check_recv(x, &m[i], &sts[i]);
            } else {
                /* sends first; each receive is started after its message was probed */
                int seen = 0;
                MPI_OK(MPI_Startall(n, &q[n]));
                for (int i = 0; i < n; i++) {
                    MPI_OK(MPI_Probe(c->left, m[i].tag, c->comm, &st));
                    check_probe(x, &m[i], &st);
                    MPI_OK(MPI_Start(&q[i]));
                }
                for (int i = 0; i < n; i++) {
                    if (it == 1) {
                        int idx = -1;
                        MPI_OK(MPI_Waitany(n, q, &idx, &st));
                        if (idx < 0 || idx >= n || (seen >> idx & 1))
                            conf_die(__FILE__, __LINE__, "Waitany index %d (seen %#x)", idx, seen);
                        seen |= 1 << idx;
                        check_recv(x, &m[idx], &st);
                    } else {
                        MPI_OK(MPI_Wait(&q[i], &st));
                        check_recv(x, &m[i], &st);
                    }
                }
                MPI_OK(MPI_Waitall(n, &q[n], MPI_STATUSES_IGNORE));
            }
            for (int i = 0; i < 2 * n; i++) TCHECK(q[i] != MPI_REQUEST_NULL, "persistent request %d freed", i);
        }
        for (int i = 0; i < 2 * n; i++) {
            MPI_OK(MPI_Request_free(&q[i]));
            TCHECK(q[i] == MPI_REQUEST_NULL, "MPI_Request_free did not null request %d", i);
        }
        break;
    }
    case K_FREE_SEND: {
        /* Isend, free at once; the right neighbour's acknowledgement releases the buffers */
        for (int i = 0; i < n; i++) {
            isend(x, &m[i], &q[i], 0);
            MPI_OK(MPI_Request_free(&q[i]));
            TCHECK(q[i] == MPI_REQUEST_NULL, "MPI_Request_free did not null the handle");
        }
        for (int i = 0; i < n; i++) {
            int rt = PAIR_R[m[i].pair];
            MPI_OK(MPI_Recv(m[i].r.p, m[i].rc, CT[rt].t, c->left, m[i].tag, c->comm, &st));
            check_recv(x, &m[i], &st);
        }
        token(x, c->left, c->right, 1); /* "got yours" to the left, from the right */
        for (int i = 0; i < n; i++) CHECK_UNTOUCHED(&m[i].s);
        break;
    }
    case K_FREE_RECV: {
        /* receives posted and freed; then everyone sends the data and a marker on the same tag
         * (matched after the data); once the marker is in, the data must land */
        for (int i = 0; i < n; i++) {
            irecv(x, &m[i], &q[i]);
            MPI_OK(MPI_Request_free(&q[i]));
            TCHECK(q[i] == MPI_REQUEST_NULL, "MPI_Request_free did not null the handle");
        }
        token(x, c->left, c->right, 2); /* mine are posted (to the left); the right's are */
        int one = 1, marker[BATCH];
        for (int i = 0; i < n; i++) {
            int st_t = PAIR_S[m[i].pair];
            MPI_OK(MPI_Isend(m[i].s.p, m[i].sc, CT[st_t].t, c->right, m[i].tag, c->comm, &q[i]));
            MPI_OK(MPI_Isend(&one, 1, MPI_INT, c->right, m[i].tag, c->comm, &q[n + i]));
        }
        for (int i = 0; i < n; i++) {
            marker[i] = -1;
            MPI_OK(MPI_Recv(&marker[i], 1, MPI_INT, c->left, m[i].tag, c->comm, &st));
            TCHECK(marker[i] == 1 && st.MPI_SOURCE == c->left && st.MPI_TAG == m[i].tag, "marker %d from %d tag %d",
                   marker[i], st.MPI_SOURCE, st.MPI_TAG);
        }
        MPI_OK(MPI_Waitall(2 * n, q, MPI_STATUSES_IGNORE));
        for (int i = 0; i < n; i++) {
            /* poll (with MPI calls that progress) until the freed receive's data is there */
            int st_t = PAIR_S[m[i].pair];
            size_t len;
            unsigned char *stream = conf_stream(CT[st_t].t, m[i].sc, m[i].sseed, &len);
            unsigned char *img = conf_malloc(m[i].r.total);
            conf_fill(img, m[i].r.total, m[i].r.seed);
            conf_place(img, &m[i].r, stream, len);
            int flag;
            CONF_POLL("a freed receive's data", {
                flag = -1;
                MPI_OK(MPI_Iprobe(c->left, x->base + TAG_NEVER, c->comm, &flag, &st));
                if (flag != 0) TCHECK(flag == 0, "MPI_Iprobe on a tag nobody sends: flag %d", flag);
            }, same_bytes(img, m[i].r.base, m[i].r.total));
            if (!CHECK_DATA(&m[i].r, CT[st_t].t, m[i].sc, m[i].sseed)) describe(x, &m[i]);
            free(img);
            free(stream);
        }
        break;
    }
    case K_CANCEL: {
        conf_buf b[3];
        for (int k = 0; k < 3; k++) post_never(x, &b[k], k, &q[k]);
        int flag = -1;
        MPI_OK(MPI_Iprobe(c->left, x->base + TAG_NEVER, c->comm, &flag, &st));
        TCHECK(flag == 0, "MPI_Iprobe found a message on a tag nobody sends");
        /* The test calls on receives that cannot complete (the first one, large, is a tracked
         * pipelined receive under sluice; the calls over the others alone do not include it):
         * each writes "not complete"; over null requests only, "complete, MPI_UNDEFINED". */
        {
            int idx = -7, out = -7, ids[3];
            MPI_Request nulls[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
            for (int from = 0; from < 2; from++) {
                flag = -1;
                MPI_OK(MPI_Testany(3 - from, &q[from], &idx, &flag, &st));
                TCHECK(flag == 0 && idx == MPI_UNDEFINED, "MPI_Testany over %d pending receives: flag %d index %d",
                       3 - from, flag, idx);
                flag = -1;
                MPI_OK(MPI_Testall(3 - from, &q[from], &flag, MPI_STATUSES_IGNORE));
                TCHECK(flag == 0, "MPI_Testall over %d pending receives: flag %d", 3 - from, flag);
                out = -7;
                MPI_OK(MPI_Testsome(3 - from, &q[from], &out, ids, MPI_STATUSES_IGNORE));
                TCHECK(out == 0, "MPI_Testsome over %d pending receives: outcount %d", 3 - from, out);
                flag = -1;
                MPI_OK(MPI_Test(&q[from], &flag, &st));
                TCHECK(flag == 0, "MPI_Test of a pending receive: flag %d", flag);
            }
            flag = -1, idx = -7;
            MPI_OK(MPI_Testany(2, nulls, &idx, &flag, &st));
            TCHECK(flag == 1 && idx == MPI_UNDEFINED, "MPI_Testany over null requests: flag %d index %d", flag, idx);
            out = -7;
            MPI_OK(MPI_Testsome(2, nulls, &out, ids, MPI_STATUSES_IGNORE));
            TCHECK(out == MPI_UNDEFINED, "MPI_Testsome over null requests: outcount %d", out);
        }
        for (int k = 0; k < 3; k++) MPI_OK(MPI_Cancel(&q[k]));
        switch (x->round % 3) {
        case 0:
            for (int k = 0; k < 3; k++) MPI_OK(MPI_Wait(&q[k], &sts[k]));
            break;
        case 1:
            MPI_OK(MPI_Waitall(3, q, sts));
            break;
        default:
            for (int k = 0; k < 3; k++) {
                flag = 0;
                POLL_FLAG("MPI_Test of a cancelled receive", MPI_Test(&q[k], &flag, &sts[k]), flag);
            }
        }
        for (int k = 0; k < 3; k++) {
            TCHECK(q[k] == MPI_REQUEST_NULL, "cancelled request %d not freed", k);
            check_cancelled(x, &b[k], &sts[k]);
        }
        /* the batch itself: plain exchange completed by Waitall */
        for (int i = 0; i < n; i++) {
            irecv(x, &m[i], &q[2 * i]);
            isend(x, &m[i], &q[2 * i + 1], 0);
        }
        MPI_OK(MPI_Waitall(2 * n, q, sts));
        for (int i = 0; i < n; i++) check_recv(x, &m[i], &sts[2 * i]);
        break;
    }
    }
    for (int i = 0; i < n; i++) {
        if (x->kind != K_FREE_SEND && !CHECK_UNTOUCHED(&m[i].s)) describe(x, &m[i]);
        msg_free(&m[i]);
    }
}

static int rounds = 2 * NKINDS;

static void *worker(void *arg) {
    ctx_t x;
    x.t = (int)(long)arg;
    x.c = x.t % 2 ? &dupc : &world;
    x.base = 100 + x.t * TAG_SPAN;
    for (int round = 0; round < rounds; round++) {
        x.round = round;
        /* Even rounds: all threads start the same kind (the same code paths at once); odd
         * rounds: another kind in each thread. Every thread runs every kind once per NKINDS
         * even rounds and once per NKINDS odd rounds. */
        x.kind = round % 2 ? (round / 2 * 7 + x.t * 5 + 3) % NKINDS : (round / 2 * 7) % NKINDS;
        snprintf(where, sizeof where, "thread %d round %d (%s, %s)", x.t, round, KIND_NAME[x.kind], x.c->label);
        kind_run(&x);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int provided = -1;
    MPI_OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    MPI_Comm_rank(MPI_COMM_WORLD, &conf_rank);
    conf_name = "p2p_thread_stress";
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (nranks < 2 || nranks % 2) conf_die(__FILE__, __LINE__, "needs an even number of ranks");
    if (provided < MPI_THREAD_MULTIPLE) {
        if (conf_rank == 0) printf("p2p_thread_stress: SKIP: the MPI provides thread level %d only\n", provided);
        int rc = conf_finish(conf_name);
        MPI_Finalize();
        return rc;
    }
    const char *r = getenv("STRESS_ROUNDS");
    if (r && atoi(r) > 0) rounds = atoi(r);
    MPI_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_Comm dup;
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MPI_OK(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN));
    world = conf_comm_make(MPI_COMM_WORLD, "world", 1, 1);
    dupc = conf_comm_make(dup, "dup", 2, 1);
    conf_types_init();
    conf_set_ctx("thread stress");
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++)
        if (pthread_create(&th[t], NULL, worker, (void *)t) != 0) conf_die(__FILE__, __LINE__, "pthread_create");
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    conf_types_free();
    MPI_OK(MPI_Comm_free(&dup));
    int rc = conf_finish(conf_name);
    MPI_OK(MPI_Finalize());
    return rc;
}
