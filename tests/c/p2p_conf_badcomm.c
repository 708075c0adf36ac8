/* Point-to-point conformance: calls on a communicator that is not one. The MPI raises
 * MPI_ERR_COMM through MPI_COMM_WORLD's error handler, once per call; sluice asks the MPI about
 * a communicator before large operations (is it an intercommunicator, its ranks' world ranks),
 * and those questions must not run the handler again (protocol/comm_cache.rs). Records, per
 * call, size (100 bytes, 1 MiB), send type (contiguous bytes, a strided vector) and handle, the
 * returned class and how many times the world handler ran.
 *
 * Handles: MPI_COMM_NULL (both MPIs), and on MPICH, which detects them, the handle of a freed
 * communicator that carried a large exchange first (sluice had attached its facts) and of one
 * that never did. (Open MPI 4.1 crashes on a freed handle, bare: not a legal program; and its
 * probes on MPI_COMM_NULL raise through that handle's handler, MPI_ERRORS_ARE_FATAL.) */
#define SLUICE_P2P_CONF
#include "check.h"

static int world_calls;

static void count_errors(MPI_Comm *comm, int *code, ...) {
    (void)comm;
    (void)code;
    world_calls++;
}

enum { OPS = 10 };
static const char *OP[OPS] = {"send", "ssend", "isend", "send_init", "recv", "irecv", "recv_init", "sendrecv", "probe", "iprobe"};

static int call(int op, MPI_Comm c, void *buf, int count, MPI_Datatype t, int peer) {
    MPI_Request q = MPI_REQUEST_NULL;
    MPI_Status st;
    int flag = 0;
    switch (op) {
    case 0: return MPI_Send(buf, count, t, peer, 7, c);
    case 1: return MPI_Ssend(buf, count, t, peer, 7, c);
    case 2: return MPI_Isend(buf, count, t, peer, 7, c, &q);
    case 3: return MPI_Send_init(buf, count, t, peer, 7, c, &q);
    case 4: return MPI_Recv(buf, count, t, peer, 7, c, &st);
    case 5: return MPI_Irecv(buf, count, t, peer, 7, c, &q);
    case 6: return MPI_Recv_init(buf, count, t, peer, 7, c, &q);
    case 7: return MPI_Sendrecv(buf, count, t, peer, 7, buf, count, t, peer, 7, c, &st);
    case 8: return MPI_Probe(peer, 7, c, &st);
    default: return MPI_Iprobe(peer, 7, c, &flag, &st);
    }
}

/* One large exchange of the strided type on `c` (sluice attaches the communicator's facts). */
static void exchange(MPI_Comm c, MPI_Datatype vec, unsigned char *buf, int peer) {
    MPI_OK(MPI_Sendrecv(buf, 1, vec, peer, 1, buf + 1, 1, vec, peer, 1, c, MPI_STATUS_IGNORE));
}

int main(int argc, char **argv) {
    MPI_OK(MPI_Init(&argc, &argv));
    conf_comm cs[3];
    MPI_Comm dup, split;
    conf_begin("p2p_conf_badcomm", cs, &dup, &split);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int peer = (rank ^ 1) < size ? (rank ^ 1) : rank;
    const int big = 1 << 20;
    unsigned char *buf = conf_malloc((size_t)2 * big + 16);
    memset(buf, 1, (size_t)2 * big + 16);
    MPI_Datatype vec;
    MPI_OK(MPI_Type_vector(big, 1, 2, MPI_CHAR, &vec));
    MPI_OK(MPI_Type_commit(&vec));
    /* sluice's own lazy set-up happens here, before any handle is freed, so that no object it
     * creates later takes a freed handle's place. */
    exchange(MPI_COMM_WORLD, vec, buf, peer);
    exchange(dup, vec, buf, peer);

    enum { HANDLES = 3 };
    const char *HANDLE[HANDLES] = {"null", "freed_used", "freed_unused"};
    MPI_Comm bad[HANDLES] = {MPI_COMM_NULL, MPI_COMM_NULL, MPI_COMM_NULL};
    int handles = 1;
#ifdef MPICH_VERSION
    {
        MPI_Comm used, unused;
        MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &used));
        MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &unused));
        exchange(used, vec, buf, peer);
        bad[1] = used;
        bad[2] = unused;
        MPI_OK(MPI_Comm_free(&used));
        MPI_OK(MPI_Comm_free(&unused));
        handles = 3;
    }
#endif
    MPI_Errhandler eh;
    MPI_OK(MPI_Comm_create_errhandler(count_errors, &eh));
    MPI_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh));
    MPI_OK(MPI_Errhandler_free(&eh));
    for (int h = 0; h < handles; h++)
        for (int large = 0; large < 2; large++)
            for (int strided = 0; strided < 2; strided++)
                for (int op = 0; op < OPS; op++) {
#ifdef OPEN_MPI
                    if (op >= 8) continue;
#endif
                    char key[96];
                    snprintf(key, sizeof key, "%s.%s.%s.%s", HANDLE[h], large ? "1MiB" : "100B", strided ? "strided" : "bytes",
                             OP[op]);
                    conf_set_ctx("%s", key);
                    MPI_Datatype t = MPI_BYTE;
                    int count = large ? big : 100;
                    if (strided) {
                        MPI_OK(MPI_Type_vector(count, 1, 2, MPI_CHAR, &t));
                        MPI_OK(MPI_Type_commit(&t));
                        count = 1;
                    }
                    world_calls = 0;
                    int rc = call(op, bad[h], buf, count, t, peer), cls = rc;
                    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
                    CHECK(rc != MPI_SUCCESS, "a call on an invalid communicator succeeded");
                    conf_behavior(key, "class=%d world_handler=%d", cls, world_calls);
                    if (strided) MPI_OK(MPI_Type_free(&t));
                }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_OK(MPI_Type_free(&vec));
    free(buf);
    return conf_end(&dup, &split);
}
