/* The per-type path contest (docs/protocol.md, "Learned per type"): on each pair of ranks (r
 * even sends to r + 1, then the other way), ROUNDS blocking sends of a strided vector of doubles
 * at three sizes (64 KiB below the pipeline's threshold, 1 MiB and 4 MiB above it), then as many
 * nonblocking ones, each checked value by value with its status: while the contest alternates
 * between the MPI's engine and sluice's path, and after it decided, every message must arrive
 * exactly, whichever path its sender took and whatever the receiver's rules are. Receives are
 * blocking, nonblocking and probed in turn; last, per size, a nonblocking receive whose
 * communicator is freed before its MPI_Wait. The shim's test checks the decisions in the
 * SLUICE_LOG=plan output. Rank 0 prints PASS or FAIL. */
#include "check.h"
#include <stdlib.h>

/* Rounds per size and direction (blocking, then as many nonblocking): enough for every size
 * class's contest to decide; P2P_CONTEST_ROUNDS sets fewer where no contest runs (across nodes,
 * without the arena), which then checks exactness only. */
static int ROUNDS = 200;

static double value(int round, int size, long i) { return round * 1e9 + size * 1e8 + (double)i; }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    const char *rounds = getenv("P2P_CONTEST_ROUNDS");
    if (rounds && atoi(rounds) > 0) ROUNDS = atoi(rounds);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const long bytes[3] = {64 << 10, 1 << 20, 4 << 20};
    int peer = rank ^ 1;
    for (int z = 0; z < 3 && peer < size; z++) {
        long n = bytes[z] / 8;
        MPI_Datatype vec;
        MPI_CHECK(MPI_Type_vector((int)n, 1, 2, MPI_DOUBLE, &vec));
        MPI_CHECK(MPI_Type_commit(&vec));
        double *buf = malloc(sizeof(double) * 2 * n);
        for (int dir = 0; dir < 2; dir++) {
            int sender = (rank % 2) == dir;
            for (int r = 0; r < 2 * ROUNDS; r++) {
                int nonblocking = r >= ROUNDS, tag = 1000 * z + r;
                if (sender) {
                    for (long i = 0; i < 2 * n; i++) buf[i] = i % 2 ? -1.0 : value(r, z, i / 2);
                    if (nonblocking) {
                        MPI_Request q;
                        MPI_CHECK(MPI_Isend(buf, 1, vec, peer, tag, MPI_COMM_WORLD, &q));
                        MPI_CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE));
                    } else {
                        MPI_CHECK(MPI_Send(buf, 1, vec, peer, tag, MPI_COMM_WORLD));
                    }
                } else {
                    for (long i = 0; i < 2 * n; i++) buf[i] = -2.0;
                    MPI_Status st;
                    if (r % 3 == 0) {
                        MPI_CHECK(MPI_Recv(buf, 1, vec, peer, tag, MPI_COMM_WORLD, &st));
                    } else if (r % 3 == 1) {
                        MPI_Request q;
                        MPI_CHECK(MPI_Irecv(buf, 1, vec, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &q));
                        MPI_CHECK(MPI_Wait(&q, &st));
                    } else {
                        MPI_CHECK(MPI_Probe(peer, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
                        EXPECT(st.MPI_TAG == tag, "probe: tag %d, expected %d", st.MPI_TAG, tag);
                        MPI_CHECK(MPI_Recv(buf, 1, vec, peer, st.MPI_TAG, MPI_COMM_WORLD, &st));
                    }
                    int count = -1;
                    MPI_CHECK(MPI_Get_count(&st, vec, &count));
                    EXPECT(count == 1 && st.MPI_SOURCE == peer && st.MPI_TAG == tag, "size %ld round %d: count %d source %d tag %d",
                           bytes[z], r, count, st.MPI_SOURCE, st.MPI_TAG);
                    long bad = 0;
                    for (long i = 0; i < 2 * n; i++) bad += buf[i] != (i % 2 ? -2.0 : value(r, z, i / 2));
                    EXPECT(bad == 0, "size %ld round %d: %ld wrong values", bytes[z], r, bad);
                }
            }
        }
        /* A nonblocking receive whose communicator the application frees before completing it
         * (legal: the free waits for pending operations); the sender's contest is decided. */
        if (peer < size) {
            MPI_Comm dup;
            MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
            if (rank % 2 == 0) {
                for (long i = 0; i < 2 * n; i++) buf[i] = i % 2 ? -1.0 : value(99, z, i / 2);
                MPI_CHECK(MPI_Send(buf, 1, vec, peer, 7, dup));
                MPI_CHECK(MPI_Comm_free(&dup));
            } else {
                for (long i = 0; i < 2 * n; i++) buf[i] = -2.0;
                MPI_Request q;
                MPI_Status st;
                MPI_CHECK(MPI_Irecv(buf, 1, vec, peer, 7, dup, &q));
                MPI_CHECK(MPI_Comm_free(&dup));
                MPI_CHECK(MPI_Wait(&q, &st));
                long bad = 0;
                for (long i = 0; i < 2 * n; i++) bad += buf[i] != (i % 2 ? -2.0 : value(99, z, i / 2));
                EXPECT(bad == 0 && st.MPI_SOURCE == peer && st.MPI_TAG == 7, "freed communicator, size %ld: %ld wrong values",
                       bytes[z], bad);
            }
        }
        free(buf);
        MPI_CHECK(MPI_Type_free(&vec));
    }
    return report_verdict("p2p_contest") + (MPI_Finalize() != MPI_SUCCESS);
}
