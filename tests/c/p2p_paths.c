/* The communicator info key `sluice_p2p_path` (docs/configuration.md): every path on the
 * sending side is read by every path on the receiving side. Even ranks set the key to
 * $PATH_EVEN, odd ranks to $PATH_ODD (auto, mpi, staged, pipelined, arena; unset: no key), on
 * three communicators: MPI_Comm_dup_with_info of MPI_COMM_WORLD, MPI_Comm_dup of that one (the
 * key is copied; with $PATH_REDUP, MPI_Comm_dup_with_info of it with that value), and
 * MPI_Comm_dup followed by MPI_Comm_set_info. Each rank exchanges messages
 * with rank ^ 1 in both directions: small-block and large-block (4 KiB) vectors of doubles and
 * a resized struct, received into another layout of the same signature, from 1 KiB to 4 MiB,
 * by Isend+Recv, Irecv+Send, Probe+Recv, Mprobe+Mrecv, persistent sends and receives, and
 * Sendrecv ($PATH_MAX_BYTES: up to that size); every byte of every receive allocation and every
 * status is checked.
 * The driver (tests/p2p_conformance.rs) also checks, from SLUICE_STATS, that each path moved
 * the messages the way it names. Runs on the bare MPI too (the key is then ignored). */
#define SLUICE_P2P_CONF
#include "check.h"

#include <string.h>

static int rank, peer;

enum { H_ISEND_RECV, H_IRECV_SEND, H_PROBE_RECV, H_MPROBE_MRECV, H_PERSISTENT, H_SENDRECV, H_COUNT };
static const char *HOW[H_COUNT] = {"Isend+Recv", "Irecv+Send", "Probe+Recv", "Mprobe+Mrecv", "Send_init+Recv_init", "Sendrecv"};

/* Both ranks of the pair send (stype, scount) to each other and receive into (rtype, rcount). */
static void exchange(MPI_Comm comm, MPI_Datatype stype, int scount, MPI_Datatype rtype, int rcount, int how, int tag,
                     const char *what) {
    conf_set_ctx("%s, %s", what, HOW[how]);
    uint64_t sseed = conf_seed(tag, rank, 7, 0), rseed = conf_seed(tag, peer, 7, 0);
    conf_buf s = conf_alloc(stype, scount, sseed);
    conf_buf r = conf_alloc(rtype, rcount, conf_seed(tag, rank, 8, 0));
    int ssize, rsize;
    MPI_Type_size(stype, &ssize);
    MPI_Type_size(rtype, &rsize);
    int want = (int)((size_t)ssize * scount / rsize);
    MPI_Request sq = MPI_REQUEST_NULL, rq = MPI_REQUEST_NULL;
    MPI_Status st;
    switch (how) {
    case H_ISEND_RECV:
        MPI_OK(MPI_Isend(s.p, scount, stype, peer, tag, comm, &sq));
        MPI_OK(MPI_Recv(r.p, rcount, rtype, peer, tag, comm, &st));
        MPI_OK(MPI_Wait(&sq, MPI_STATUS_IGNORE));
        break;
    case H_IRECV_SEND:
        MPI_OK(MPI_Irecv(r.p, rcount, rtype, peer, tag, comm, &rq));
        MPI_OK(MPI_Send(s.p, scount, stype, peer, tag, comm));
        MPI_OK(MPI_Wait(&rq, &st));
        break;
    case H_PROBE_RECV: {
        MPI_Status pst;
        int c = -1;
        MPI_OK(MPI_Isend(s.p, scount, stype, peer, tag, comm, &sq));
        MPI_OK(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &pst));
        MPI_Get_count(&pst, rtype, &c);
        CHECK(pst.MPI_SOURCE == peer && pst.MPI_TAG == tag && c == want, "probe: source %d tag %d count %d, expected %d %d %d",
              pst.MPI_SOURCE, pst.MPI_TAG, c, peer, tag, want);
        MPI_OK(MPI_Recv(r.p, rcount, rtype, pst.MPI_SOURCE, pst.MPI_TAG, comm, &st));
        MPI_OK(MPI_Wait(&sq, MPI_STATUS_IGNORE));
        break;
    }
    case H_MPROBE_MRECV: {
        MPI_Message m;
        MPI_Status pst;
        MPI_OK(MPI_Isend(s.p, scount, stype, peer, tag, comm, &sq));
        MPI_OK(MPI_Mprobe(peer, tag, comm, &m, &pst));
        MPI_OK(MPI_Mrecv(r.p, rcount, rtype, &m, &st));
        MPI_OK(MPI_Wait(&sq, MPI_STATUS_IGNORE));
        break;
    }
    case H_PERSISTENT:
        MPI_OK(MPI_Recv_init(r.p, rcount, rtype, peer, tag, comm, &rq));
        MPI_OK(MPI_Send_init(s.p, scount, stype, peer, tag, comm, &sq));
        for (int round = 0; round < 2; round++) {
            conf_refill(&r, conf_seed(tag, rank, 8, 0));
            MPI_OK(MPI_Start(&rq));
            MPI_OK(MPI_Start(&sq));
            MPI_OK(MPI_Wait(&sq, MPI_STATUS_IGNORE));
            MPI_OK(MPI_Wait(&rq, &st));
            if (round == 0) {
                CHECK_STATUS(&st, peer, tag, rtype, want, conf_elements_of(rtype, want));
                CHECK_DATA(&r, stype, scount, rseed);
            }
        }
        MPI_OK(MPI_Request_free(&rq));
        MPI_OK(MPI_Request_free(&sq));
        break;
    default:
        MPI_OK(MPI_Sendrecv(s.p, scount, stype, peer, tag, r.p, rcount, rtype, peer, tag, comm, &st));
    }
    CHECK_STATUS(&st, peer, tag, rtype, want, conf_elements_of(rtype, want));
    CHECK_DATA(&r, stype, scount, rseed);
    conf_free(&s);
    conf_free(&r);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    conf_name = "p2p_paths";
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    conf_rank = rank;
    if (size % 2) {
        if (rank == 0) fprintf(stderr, "p2p_paths needs an even number of ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    peer = rank ^ 1;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    const char *path = getenv(rank % 2 ? "PATH_ODD" : "PATH_EVEN");
    MPI_Info info;
    MPI_OK(MPI_Info_create(&info));
    if (path && *path) MPI_OK(MPI_Info_set(info, "sluice_p2p_path", path));
    MPI_Comm comms[3];
    const char *labels[3] = {"dup_with_info", "dup of it", "set_info"};
    MPI_OK(MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &comms[0]));
    /* $PATH_REDUP (set): the second communicator is MPI_Comm_dup_with_info of the first with
     * that value instead, which replaces the copied key (an unknown value leaves no key). */
    const char *redup = getenv("PATH_REDUP");
    if (redup && *redup) {
        MPI_Info again;
        MPI_OK(MPI_Info_create(&again));
        MPI_OK(MPI_Info_set(again, "sluice_p2p_path", redup));
        MPI_OK(MPI_Comm_dup_with_info(comms[0], again, &comms[1]));
        MPI_OK(MPI_Info_free(&again));
    } else {
        MPI_OK(MPI_Comm_dup(comms[0], &comms[1]));
    }
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &comms[2]));
    MPI_OK(MPI_Comm_set_info(comms[2], info));
    for (int i = 0; i < 3; i++) MPI_Comm_set_errhandler(comms[i], MPI_ERRORS_RETURN);
    MPI_OK(MPI_Info_free(&info));

    /* Layouts of one signature (doubles): every other double; pairs of doubles every three;
     * 4 KiB blocks every 8 KiB (the MPI's engine moves such blocks well: sluice's automatic
     * rules leave large messages of them to it). */
    MPI_Datatype every2, pairs3, blocks4k, contig_d;
    MPI_OK(MPI_Type_vector(64, 1, 2, MPI_DOUBLE, &every2));
    MPI_OK(MPI_Type_vector(32, 2, 3, MPI_DOUBLE, &pairs3));
    MPI_OK(MPI_Type_vector(1, 512, 1024, MPI_DOUBLE, &blocks4k));
    MPI_Datatype blocks4k_r;
    MPI_OK(MPI_Type_create_resized(blocks4k, 0, 8192, &blocks4k_r));
    MPI_OK(MPI_Type_free(&blocks4k));
    blocks4k = blocks4k_r;
    MPI_OK(MPI_Type_contiguous(64, MPI_DOUBLE, &contig_d));
    MPI_Datatype types[] = {every2, pairs3, blocks4k, contig_d};
    for (int i = 0; i < 4; i++) MPI_OK(MPI_Type_commit(&types[i]));
    conf_types_init();
    /* (send type, doubles per element, receive type, doubles per element) */
    struct { MPI_Datatype s; int su; MPI_Datatype r; int ru; const char *name; } shapes[] = {
        {every2, 64, pairs3, 64, "every other double -> pairs of three"},
        {every2, 64, contig_d, 64, "every other double -> contiguous"},
        {blocks4k, 512, every2, 64, "4 KiB blocks -> every other double"},
        {blocks4k, 512, blocks4k, 512, "4 KiB blocks -> 4 KiB blocks"},
        {CT[T_STRUCT].t, 1, CT[T_STRUCT_PACKED].t, 1, "resized struct -> packed struct"},
    };
    const size_t sizes[] = {1 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20};
    /* $PATH_MAX_BYTES (set): sizes above it are left out (the driver's runs of every pair of
     * paths, where 1 MiB already takes every path's pipelined form). */
    const char *max_env = getenv("PATH_MAX_BYTES");
    size_t max_bytes = max_env && *max_env ? (size_t)strtoull(max_env, NULL, 10) : (size_t)-1;
    int tag = 1;
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++)
        for (size_t z = 0; z < sizeof sizes / sizeof sizes[0] && sizes[z] <= max_bytes; z++)
            for (int how = 0; how < H_COUNT; how++) {
                int unit = shapes[sh].s == CT[T_STRUCT].t ? 17 : 8;
                size_t units = sizes[z] / unit / 512 * 512;
                if (units == 0) units = 512;
                int scount = (int)(units / shapes[sh].su), rcount = (int)(units / shapes[sh].ru);
                /* the receive is one element larger at every other step: a short message */
                if ((how + z) % 2) rcount += 1;
                char what[200];
                int c = (int)((sh + z + how) % 3);
                snprintf(what, sizeof what, "%s, %zu bytes, %s, path %s", shapes[sh].name, units * unit, labels[c],
                         path ? path : "(none)");
                exchange(comms[c], shapes[sh].s, scount, shapes[sh].r, rcount, how, tag++, what);
            }
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    for (int i = 0; i < 4; i++) MPI_OK(MPI_Type_free(&types[i]));
    conf_types_free();
    for (int i = 0; i < 3; i++) MPI_OK(MPI_Comm_free(&comms[i]));
    int rc = conf_finish(conf_name);
    MPI_Finalize();
    return rc;
}
