/* Priorities of pipelined receives (`sluice_priority`, docs/protocol.md "Priorities"). On each
 * pair of ranks (r even sends to r + 1), the sender posts NLOW messages of a strided type on a
 * communicator without a priority, then one on a duplicate with sluice_priority=5; the receiver
 * probes every message (so all have arrived), posts the low receives first and the urgent one
 * last, and completes them with MPI_Waitany. With EXPECT_ORDER=1 (sluice, the arena between
 * ranks of one node, no progress thread: every byte is there and only the receiver's order of
 * work decides) the urgent message must complete first, although it was posted last; the bare
 * MPI completes in its own order. Every value, count, source and tag is checked, for the
 * communicators' paths `arena` and `pipelined` (every chunk through the MPI) and for blocking
 * receives of the low messages while the urgent one is under way. A bad priority value is
 * ignored, and MPI_Comm_get_info shows the key as given. A receive whose communicator was freed
 * before its message arrived lands. Rank 0 prints PASS or FAIL.
 * (Through the MPI the order is not asserted: chunks of one sender reach the receiver's MPI in
 * the order they were sent, so the urgent message's chunks arrive after the others', and once
 * it has waited longer than the stall bound for them the others move again.) */
#include "check.h"
#include <stdlib.h>
#include <string.h>

#define NLOW 8

static MPI_Comm with_info(const char *path, const char *priority) {
    MPI_Info info;
    MPI_Comm c;
    MPI_CHECK(MPI_Info_create(&info));
    MPI_CHECK(MPI_Info_set(info, "sluice_p2p_path", path));
    if (priority) MPI_CHECK(MPI_Info_set(info, "sluice_priority", priority));
    MPI_CHECK(MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &c));
    MPI_CHECK(MPI_Info_free(&info));
    return c;
}

static double value(int msg, long i) { return msg * 1e7 + (double)i; }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *eo = getenv("EXPECT_ORDER");
    int expect_order = eo && strcmp(eo, "1") == 0;
    long n = 65536; /* doubles per message: 512 KiB packed, pipelined at the default threshold */
    MPI_Datatype vec;
    MPI_CHECK(MPI_Type_vector((int)n, 1, 2, MPI_DOUBLE, &vec));
    MPI_CHECK(MPI_Type_commit(&vec));
    double *buf[NLOW + 1];
    for (int m = 0; m <= NLOW; m++) buf[m] = malloc(sizeof(double) * 2 * n);
    int peer = rank ^ 1, sender = rank % 2 == 0, urgent_first[2] = {0, 0}, rounds[2] = {0, 0};
    const char *paths[] = {"arena", "pipelined"};
    for (int p = 0; p < 2; p++) {
        for (int blocking = 0; blocking < 2; blocking++) {
            MPI_Comm low = with_info(paths[p], NULL), high = with_info(paths[p], "5");
            MPI_Comm comm_of[NLOW + 1];
            for (int m = 0; m <= NLOW; m++) comm_of[m] = m < NLOW ? low : high;
            MPI_Request req[NLOW + 1];
            if (peer < size && sender) {
                for (int m = 0; m <= NLOW; m++) {
                    for (long i = 0; i < 2 * n; i++) buf[m][i] = i % 2 ? -1.0 : value(m, i / 2);
                    MPI_CHECK(MPI_Isend(buf[m], 1, vec, peer, 100 + m, comm_of[m], &req[m]));
                }
                MPI_CHECK(MPI_Waitall(NLOW + 1, req, MPI_STATUSES_IGNORE));
            } else if (peer < size) {
                for (int m = 0; m <= NLOW; m++) {
                    MPI_CHECK(MPI_Probe(peer, 100 + m, comm_of[m], MPI_STATUS_IGNORE));
                    for (long i = 0; i < 2 * n; i++) buf[m][i] = -2.0;
                }
                MPI_Status st[NLOW + 1];
                if (!blocking) {
                    for (int m = 0; m <= NLOW; m++) MPI_CHECK(MPI_Irecv(buf[m], 1, vec, peer, 100 + m, comm_of[m], &req[m]));
                    int first = -1;
                    for (int k = 0; k <= NLOW; k++) {
                        int idx;
                        MPI_Status s;
                        MPI_CHECK(MPI_Waitany(NLOW + 1, req, &idx, &s));
                        if (k == 0) first = idx;
                        st[idx] = s;
                    }
                    urgent_first[p] += first == NLOW;
                    rounds[p]++;
                    if (expect_order && p == 0)
                        EXPECT(first == NLOW, "path %s: message %d completed first, not the urgent one", paths[p], first);
                } else {
                    /* The urgent receive is under way while the low ones are received blocking:
                     * they are not deferred (the application waits for them), and all land. */
                    MPI_CHECK(MPI_Irecv(buf[NLOW], 1, vec, peer, 100 + NLOW, high, &req[NLOW]));
                    for (int m = 0; m < NLOW; m++) MPI_CHECK(MPI_Recv(buf[m], 1, vec, peer, 100 + m, low, &st[m]));
                    MPI_CHECK(MPI_Wait(&req[NLOW], &st[NLOW]));
                }
                for (int m = 0; m <= NLOW; m++) {
                    int count = -1;
                    MPI_CHECK(MPI_Get_count(&st[m], vec, &count));
                    EXPECT(count == 1 && st[m].MPI_SOURCE == peer && st[m].MPI_TAG == 100 + m, "message %d: count %d source %d tag %d", m,
                           count, st[m].MPI_SOURCE, st[m].MPI_TAG);
                    long bad = 0;
                    for (long i = 0; i < 2 * n; i++) bad += buf[m][i] != (i % 2 ? -2.0 : value(m, i / 2));
                    EXPECT(bad == 0, "path %s, message %d: %ld wrong values", paths[p], m, bad);
                }
            }
            MPI_CHECK(MPI_Comm_free(&low));
            MPI_CHECK(MPI_Comm_free(&high));
        }
    }
    /* A communicator freed while a receive on it is pending (legal: MPI_Comm_free only marks it,
     * the pending operation completes): the message arrives after the free, so sluice must not
     * ask the MPI about that communicator's keys when the transfer starts. With and without a
     * path and a priority, every path. */
    const char *freed_paths[] = {"auto", "arena", "pipelined", "mpi"};
    for (int p = 0; p < 4; p++) {
        MPI_Comm c = with_info(freed_paths[p], p % 2 ? "3" : NULL);
        MPI_Request r = MPI_REQUEST_NULL;
        if (peer < size && !sender) {
            for (long i = 0; i < 2 * n; i++) buf[0][i] = -2.0;
            MPI_CHECK(MPI_Irecv(buf[0], 1, vec, peer, 7, c, &r));
            MPI_CHECK(MPI_Comm_free(&c));
        }
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        if (peer < size && sender) {
            for (long i = 0; i < 2 * n; i++) buf[0][i] = i % 2 ? -1.0 : value(p, i / 2);
            MPI_CHECK(MPI_Send(buf[0], 1, vec, peer, 7, c));
            MPI_CHECK(MPI_Comm_free(&c));
        } else if (peer < size) {
            MPI_Status s;
            MPI_CHECK(MPI_Wait(&r, &s));
            int count = -1;
            MPI_CHECK(MPI_Get_count(&s, vec, &count));
            EXPECT(count == 1 && s.MPI_SOURCE == peer && s.MPI_TAG == 7, "freed communicator, path %s: count %d source %d tag %d",
                   freed_paths[p], count, s.MPI_SOURCE, s.MPI_TAG);
            long bad = 0;
            for (long i = 0; i < 2 * n; i++) bad += buf[0][i] != (i % 2 ? -2.0 : value(p, i / 2));
            EXPECT(bad == 0, "freed communicator, path %s: %ld wrong values", freed_paths[p], bad);
        } else {
            MPI_CHECK(MPI_Comm_free(&c));
        }
    }
    /* The key as the MPI keeps it; a bad value is ignored by sluice (a warning). */
    MPI_Comm c = with_info("auto", "7");
    MPI_Info got;
    char v[MPI_MAX_INFO_VAL + 1] = "";
    int flag = 0;
    MPI_CHECK(MPI_Comm_get_info(c, &got));
    MPI_CHECK(MPI_Info_get(got, "sluice_priority", MPI_MAX_INFO_VAL, v, &flag));
    MPI_CHECK(MPI_Info_free(&got));
    /* MPI-4 lets an MPI drop keys it does not know; when it keeps them they are as given. */
    EXPECT(!flag || strcmp(v, "7") == 0, "sluice_priority read back as \"%s\"", v);
    MPI_Info bad;
    MPI_CHECK(MPI_Info_create(&bad));
    MPI_CHECK(MPI_Info_set(bad, "sluice_priority", "urgent"));
    MPI_CHECK(MPI_Comm_set_info(c, bad));
    MPI_CHECK(MPI_Info_free(&bad));
    MPI_CHECK(MPI_Comm_free(&c));
    if (rank % 2 == 1)
        printf("p2p_priority: rank %d urgent first in %d of %d arena rounds, %d of %d pipelined rounds\n", rank, urgent_first[0], rounds[0],
               urgent_first[1], rounds[1]);
    fflush(stdout);
    MPI_CHECK(MPI_Type_free(&vec));
    for (int m = 0; m <= NLOW; m++) free(buf[m]);
    return report_verdict("p2p_priority") + (MPI_Finalize() != MPI_SUCCESS);
}
