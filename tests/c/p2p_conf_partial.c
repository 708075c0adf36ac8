/* Point-to-point conformance: a message that ends inside a predefined element of the receive
 * type (a type-signature mismatch, as in MPICH's test errors/pt2pt/truncmsg2: 3 chars received
 * as ints). MPICH's engine unpacks the whole elements only and fails the receive with
 * MPI_ERR_TRUNCATE for a non-contiguous receive type (a contiguous one takes any byte count);
 * Open MPI takes any byte count. Sluice, which unpacks non-contiguous receives itself, must do
 * the same as the bare MPI: return class, MPI_ERROR of a multiple completion, the class its
 * communicator's error handler is called with, and the bytes written to the receive buffer.
 *
 * Receive types: MPICH's indexed ints, a vector of a struct mixing char/int/double/short (small
 * messages only: bare MPICH 4.0 fails every message of more than 8 KiB into it, whole or not),
 * a strided vector of doubles, MPI_INT (contiguous), and a large-block type that sluice leaves
 * to the MPI's engine (its bytes written are not compared: sluice's byte-twin posting lets the
 * MPI write the partial element, docs/protocol.md). Sent as MPI_BYTE (contiguous) and as a
 * strided vector of chars (non-contiguous: pipelined when large), by Recv, Irecv+Wait,
 * Irecv+Waitall, Recv_init+Start+Wait, Sendrecv, Irecv+Waitany, Irecv+Test, Mprobe+Mrecv and
 * Mprobe+Imrecv+Wait. Also a 1 MiB message truncated by a 600,000-byte receive: which handler
 * each way of receiving raises the error through. Pairs are
 * rank ^ 1; rank 0 records behaviours, which the driver compares with the bare MPI's. */
#define SLUICE_P2P_CONF
#include "check.h"

enum { HOWS = 9 };
static const char *HOW[HOWS] = {"recv", "wait", "waitall", "start", "sendrecv", "waitany", "test", "mrecv", "imrecv"};

static int handler_calls, handler_class, world_calls, world_class;

/* The error handler of the pairs' communicator and of MPI_COMM_WORLD: counts the calls. */
static void count_errors(MPI_Comm *comm, int *code, ...) {
    int world = *comm == MPI_COMM_WORLD;
    ++*(world ? &world_calls : &handler_calls);
    MPI_Error_class(*code, world ? &world_class : &handler_class);
}

/* Receives `n` bytes sent as `stype` (n elements of one byte each) into `rcount` x `rtype` on
 * `comm` by kind `how` (rank `peer` sends); records the outcome under `key`. */
static void one(MPI_Comm comm, int peer, MPI_Datatype stype, int n, MPI_Datatype rtype, int rcount, int how, int tag,
                const char *key, int record_written) {
    int rank;
    MPI_Comm_rank(comm, &rank);
    conf_set_ctx("%s", key);
    if (rank & 1) {
        size_t span = (size_t)2 * n + 16;
        unsigned char *s = conf_malloc(span);
        for (size_t i = 0; i < span; i++) s[i] = (unsigned char)(i % 250 + 1) == 0xA5 ? 1 : (unsigned char)(i % 250 + 1);
        MPI_OK(MPI_Send(s, stype == MPI_BYTE ? n : 1, stype, peer, tag, comm));
        free(s);
        return;
    }
    MPI_Aint lb, ext;
    MPI_Type_get_extent(rtype, &lb, &ext);
    size_t span = (size_t)ext * rcount + 256;
    unsigned char *r = conf_malloc(span);
    memset(r, 0xA5, span);
    handler_calls = world_calls = 0;
    handler_class = world_class = -1;
    MPI_Status st;
    st.MPI_ERROR = -1;
    int rc = MPI_SUCCESS, flag = 0, idx = -1;
    MPI_Request q = MPI_REQUEST_NULL;
    switch (how) {
    case 0: rc = MPI_Recv(r, rcount, rtype, peer, tag, comm, &st); break;
    case 1:
        MPI_OK(MPI_Irecv(r, rcount, rtype, peer, tag, comm, &q));
        rc = MPI_Wait(&q, &st);
        break;
    case 2:
        MPI_OK(MPI_Irecv(r, rcount, rtype, peer, tag, comm, &q));
        rc = MPI_Waitall(1, &q, &st);
        break;
    case 3:
        MPI_OK(MPI_Recv_init(r, rcount, rtype, peer, tag, comm, &q));
        MPI_OK(MPI_Start(&q));
        rc = MPI_Wait(&q, &st);
        break; /* freed below */
    case 4: rc = MPI_Sendrecv(NULL, 0, MPI_BYTE, MPI_PROC_NULL, 0, r, rcount, rtype, peer, tag, comm, &st); break;
    case 5:
        MPI_OK(MPI_Irecv(r, rcount, rtype, peer, tag, comm, &q));
        rc = MPI_Waitany(1, &q, &idx, &st);
        CHECK(idx == 0, "Waitany index %d", idx);
        break;
    case 6:
        MPI_OK(MPI_Irecv(r, rcount, rtype, peer, tag, comm, &q));
        CONF_POLL("MPI_Test", rc = MPI_Test(&q, &flag, &st), flag || rc != MPI_SUCCESS);
        break;
    default: {
        MPI_Message m;
        MPI_OK(MPI_Mprobe(peer, tag, comm, &m, &st));
        if (how == 7) {
            rc = MPI_Mrecv(r, rcount, rtype, &m, &st);
        } else {
            MPI_OK(MPI_Imrecv(r, rcount, rtype, &m, &q));
            rc = MPI_Wait(&q, &st);
        }
        break;
    }
    }
    int cls = -1, ecls = -1, count = -1;
    MPI_Error_class(rc, &cls);
    if (how == 2) MPI_Error_class(st.MPI_ERROR, &ecls);
    MPI_Get_count(&st, MPI_BYTE, &count);
    size_t written = 0;
    for (size_t i = 0; i < span; i++) written += r[i] != 0xA5;
    CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == tag, "status source %d tag %d", st.MPI_SOURCE, st.MPI_TAG);
    /* Bare MPICH's own count of a failed receive is 0 or the whole elements' bytes, by timing. */
    /* (A failed receive's count is not compared: bare MPICH's depends on timing.) */
    CHECK(cls != MPI_SUCCESS || count == n, "count %d of a successful receive of %d bytes", count, n);
    char w[32] = "";
    if (record_written) snprintf(w, sizeof w, " written=%zu", written);
    conf_behavior(key, "class=%d status_error=%d handler=%d/%d world_handler=%d/%d%s", cls, ecls, handler_calls, handler_class,
                  world_calls, world_class, w);
    if (how == 3) MPI_OK(MPI_Request_free(&q));
    free(r);
}

int main(int argc, char **argv) {
    MPI_OK(MPI_Init(&argc, &argv));
    conf_comm cs[3];
    MPI_Comm dup, split, comm;
    conf_begin("p2p_conf_partial", cs, &dup, &split);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* Pairs (2k, 2k+1); an odd last rank sits out. */
    MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, rank / 2 * 2 + 1 < size ? 0 : MPI_UNDEFINED, rank, &comm));
    if (comm != MPI_COMM_NULL) {
        MPI_Errhandler eh;
        MPI_OK(MPI_Comm_create_errhandler(count_errors, &eh));
        MPI_OK(MPI_Comm_set_errhandler(comm, eh));
        MPI_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh));
        MPI_OK(MPI_Errhandler_free(&eh));
        MPI_Datatype rt[5];
        int ibl[3] = {1, 2, 1}, idx[3] = {4, 8, 16};
        MPI_OK(MPI_Type_indexed(3, ibl, idx, MPI_INT, &rt[0]));
        {
            int bl[4] = {1, 1, 2, 1};
            MPI_Aint d[4] = {0, 4, 8, 24};
            MPI_Datatype ty[4] = {MPI_CHAR, MPI_INT, MPI_DOUBLE, MPI_SHORT}, s;
            MPI_OK(MPI_Type_create_struct(4, bl, d, ty, &s));
            MPI_OK(MPI_Type_vector(2, 1, 2, s, &rt[1]));
            MPI_OK(MPI_Type_free(&s));
        }
        MPI_OK(MPI_Type_vector(4, 1, 2, MPI_DOUBLE, &rt[2]));
        rt[3] = MPI_INT;
        MPI_OK(MPI_Type_vector(2, 131072, 2 * 131072, MPI_INT, &rt[4])); /* 512 KiB blocks */
        static const char *RT[5] = {"indexed-int", "mixed-struct", "vector-double", "int", "large-blocks"};
        for (int i = 0; i < 5; i++)
            if (rt[i] != MPI_INT) MPI_OK(MPI_Type_commit(&rt[i]));
        static const int SIZES[] = {3, 6, 13, 1001, 20001, 300003};
        int tag = 0;
        for (int t = 0; t < 5; t++)
            for (int k = 0; k < (int)(sizeof SIZES / sizeof *SIZES); k++)
                for (int sender = 0; sender < 2; sender++)
                    for (int how = 0; how < HOWS; how++) {
                        int n = SIZES[k];
                        if (t == 1 && n > 8192) continue; /* bare MPICH fails every such message */
                        if (t == 4 && n < 8192) continue;
                        int rsize;
                        MPI_Type_size(rt[t], &rsize);
                        int rcount = n / rsize + 1;
                        MPI_Datatype stype = MPI_BYTE;
                        if (sender) {
                            MPI_OK(MPI_Type_vector(n, 1, 2, MPI_CHAR, &stype));
                            MPI_OK(MPI_Type_commit(&stype));
                        }
                        char key[96];
                        snprintf(key, sizeof key, "partial.%s.%d.%s.%s", RT[t], n, sender ? "sparse" : "bytes", HOW[how]);
                        one(comm, rank ^ 1, stype, n, rt[t], rcount, how, tag++, key, t != 4);
                        if (sender) MPI_OK(MPI_Type_free(&stype));
                    }
        /* Truncation of a message of 1 MiB into a receive of 600,000 bytes (one the pipelined
         * protocol watches for its first message): the handler and the codes, not the bytes
         * (docs/protocol.md, "Known differences"). Into the strided type only: Open MPI 4.1
         * overruns a contiguous receive that truncates a large message (same section). */
        for (int t = 2; t < 3; t++)
            for (int sender = 0; sender < 2; sender++)
                for (int how = 0; how < HOWS; how++) {
                    if (how == 3) continue; /* Open MPI 4.1 cannot free the truncated request */
                    int n = 1 << 20, rsize;
                    MPI_Type_size(rt[t], &rsize);
                    MPI_Datatype stype = MPI_BYTE;
                    if (sender) {
                        MPI_OK(MPI_Type_vector(n, 1, 2, MPI_CHAR, &stype));
                        MPI_OK(MPI_Type_commit(&stype));
                    }
                    char key[96];
                    snprintf(key, sizeof key, "truncation.overflow.%s.%s.%s", RT[t], sender ? "sparse" : "bytes", HOW[how]);
                    one(comm, rank ^ 1, stype, n, rt[t], 600000 / rsize, how, tag++, key, 0);
                    if (sender) MPI_OK(MPI_Type_free(&stype));
                }
        for (int i = 0; i < 5; i++)
            if (rt[i] != MPI_INT) MPI_OK(MPI_Type_free(&rt[i]));
        MPI_OK(MPI_Comm_free(&comm));
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    return conf_end(&dup, &split);
}
