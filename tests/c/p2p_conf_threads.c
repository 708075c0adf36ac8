/* Point-to-point conformance, MPI_THREAD_MULTIPLE: 4 threads per rank exchange around the ring
 * at the same time, each on its own tags (thread 2 on a duplicate communicator), with
 * contiguous and non-contiguous types, 1 KiB and 300 KiB messages, and each thread completes its
 * requests its own way (Waitall, Wait, Waitany, Test loops, Mprobe + Mrecv). Every byte checked.
 * Skips cleanly (still prints OK) when the MPI does not provide MPI_THREAD_MULTIPLE. */
#define SLUICE_P2P_CONF
#include <pthread.h>
#include "check.h"

#define THREADS 4
#define ROUNDS 16

static conf_comm world, dupc;

/* Round r of thread t: send type -> receive type. */
static const int ST[4] = {T_VEC_D, T_INT, T_VECT84, T_STRUCT}, RT[4] = {T_DOUBLE, T_SUBARRAY, T_VECT84X3, T_STRUCT_PACKED};

static void *worker(void *arg) {
    int t = (int)(long)arg;
    conf_comm *c = t == 2 ? &dupc : &world;
    for (int round = 0; round < ROUNDS; round++) {
        int k = (t + round) % 4, tag = 8000 + 100 * t + round;
        size_t bytes = round % 5 == 4 ? 300 << 10 : 1024;
        int units = conf_units_for(CT[ST[k]].family, bytes), sc = units / CT[ST[k]].units, rc = units / CT[RT[k]].units;
        conf_buf s = conf_alloc(CT[ST[k]].t, sc, conf_seed(c->id, tag, c->rank, t));
        conf_buf r = conf_alloc(CT[RT[k]].t, rc, 40 + t);
        MPI_Request q[2];
        MPI_Status sts[2], st;
        int flag = 0, idx;
        if (t != 3) MPI_OK(MPI_Irecv(r.p, rc, CT[RT[k]].t, c->left, tag, c->comm, &q[0]));
        MPI_OK(MPI_Isend(s.p, sc, CT[ST[k]].t, c->right, tag, c->comm, &q[1]));
        switch (t) {
        case 0:
            MPI_OK(MPI_Waitall(2, q, sts));
            st = sts[0];
            break;
        case 1:
            if (round % 2) {
                MPI_OK(MPI_Wait(&q[1], MPI_STATUS_IGNORE));
                MPI_OK(MPI_Wait(&q[0], &st));
            } else {
                for (int n = 0; n < 2; n++) {
                    MPI_OK(MPI_Waitany(2, q, &idx, &sts[0]));
                    if (idx == 0) st = sts[0];
                }
            }
            break;
        case 2:
            CONF_POLL("MPI_Test in a thread", MPI_OK(MPI_Test(&q[0], &flag, &st)), flag);
            flag = 0;
            CONF_POLL("MPI_Testall in a thread", MPI_OK(MPI_Testall(1, &q[1], &flag, MPI_STATUSES_IGNORE)), flag);
            break;
        case 3: {
            MPI_Message msg;
            MPI_OK(MPI_Mprobe(c->left, tag, c->comm, &msg, &st));
            MPI_OK(MPI_Mrecv(r.p, rc, CT[RT[k]].t, &msg, &st));
            MPI_OK(MPI_Wait(&q[1], MPI_STATUS_IGNORE));
            break;
        }
        }
        int n = -1;
        MPI_Get_count(&st, CT[RT[k]].t, &n);
        CHECK(st.MPI_SOURCE == c->left && st.MPI_TAG == tag && n == rc,
              "thread %d round %d: source %d tag %d count %d, expected %d/%d/%d", t, round, st.MPI_SOURCE, st.MPI_TAG, n,
              c->left, tag, rc);
        if (!CHECK_DATA(&r, CT[ST[k]].t, sc, conf_seed(c->id, tag, c->left, t)))
            fprintf(stderr, "[rank %d] thread %d round %d: %d x %s -> %d x %s\n", conf_rank, t, round, sc,
                    CT[ST[k]].name, rc, CT[RT[k]].name);
        CHECK_UNTOUCHED(&s);
        conf_free(&s);
        conf_free(&r);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int provided = -1;
    MPI_OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    MPI_Comm_rank(MPI_COMM_WORLD, &conf_rank);
    conf_name = "p2p_conf_threads";
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) conf_die(__FILE__, __LINE__, "needs at least 2 ranks");
    if (provided < MPI_THREAD_MULTIPLE) {
        if (conf_rank == 0) printf("p2p_conf_threads: SKIP: the MPI provides thread level %d only\n", provided);
        int rc = conf_finish(conf_name);
        MPI_Finalize();
        return rc;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm dup;
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    world = conf_comm_make(MPI_COMM_WORLD, "world", 1, 1);
    dupc = conf_comm_make(dup, "dup", 2, 1);
    conf_types_init();
    conf_set_ctx("threads");
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, worker, (void *)t);
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    conf_types_free();
    MPI_OK(MPI_Comm_free(&dup));
    int rc = conf_finish(conf_name);
    MPI_Finalize();
    return rc;
}
