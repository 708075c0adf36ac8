/* A persistent receive whose completion fails (a truncated message, 20,000 bytes and 1 MiB into
 * a strided receive of 60% of that), completed by Wait, Test, Waitany, Waitsome and Waitall.
 * Open MPI 4.1 frees such a request itself (the handle becomes MPI_REQUEST_NULL); MPICH leaves
 * it inactive. Afterwards the same rank creates a persistent send and a persistent receive (the
 * MPI may give them the freed handle value) and both must carry their own messages: nothing of
 * the failed receive may stay attached to the handle. Rank 0 prints PASS or FAIL; the driver
 * also requires that sluice reports no stale or leaked request. Pairs are rank ^ 1. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { HOWS = 5 };
static const char *HOW[HOWS] = {"wait", "test", "waitany", "waitsome", "waitall"};

static int cls(int code) {
    int c = -1;
    MPI_Error_class(code, &c);
    return c;
}

int main(int argc, char **argv) {
    int rank, size, bad = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Datatype vd; /* every other double, 4 of them: a strided receive sluice unpacks itself */
    MPI_Type_vector(4, 1, 2, MPI_DOUBLE, &vd);
    MPI_Type_commit(&vd);
    int peer = rank ^ 1, tag = 0;
    const int sizes[2] = {20000, 1 << 20};
    unsigned char *s = malloc(1 << 20), *r = malloc(2 << 20);
    for (int i = 0; i < 1 << 20; i++) s[i] = (unsigned char)(i * 13 + 5);
    for (int k = 0; k < 2 && peer < size; k++)
        for (int how = 0; how < HOWS; how++, tag += 3) {
            int n = sizes[k];
            if (rank & 1) {
                MPI_Send(s, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
                int got[1000], c = -1;
                MPI_Status st;
                MPI_Recv(got, 1000, MPI_INT, peer, tag + 1, MPI_COMM_WORLD, &st);
                MPI_Get_count(&st, MPI_INT, &c);
                for (int i = 0; i < 1000; i++) bad += got[i] != tag * 1000 + i;
                bad += c != 1000;
                MPI_Send(s, 64 * 32, MPI_BYTE, peer, tag + 2, MPI_COMM_WORLD);
                continue;
            }
            MPI_Request q;
            MPI_Status st;
            int rc = MPI_SUCCESS, flag = 0, idx = -1, out = 0;
            MPI_Recv_init(r, n * 6 / 10 / 32, vd, peer, tag, MPI_COMM_WORLD, &q);
            MPI_Start(&q);
            switch (how) {
            case 0: rc = MPI_Wait(&q, &st); break;
            case 1:
                while (!flag && rc == MPI_SUCCESS) rc = MPI_Test(&q, &flag, &st);
                break;
            case 2: rc = MPI_Waitany(1, &q, &idx, &st); break;
            case 3: rc = MPI_Waitsome(1, &q, &out, &idx, &st); break;
            default: rc = MPI_Waitall(1, &q, &st); break;
            }
            /* Wait/Test/Waitany: MPI_ERR_TRUNCATE; Waitsome: MPI_ERR_IN_STATUS; Open MPI's
             * Waitall: MPI_ERR_IN_STATUS, or MPI_SUCCESS when the request completed before the
             * call (timing). */
            int c = cls(rc), ok = how < 3 ? c == MPI_ERR_TRUNCATE : how == 3 ? c == MPI_ERR_IN_STATUS
                                                                        : c == MPI_ERR_IN_STATUS || c == MPI_SUCCESS;
            if (!ok) {
                printf("%d bytes, %s: class %d\n", n, HOW[how], c);
                bad++;
            }
            if (q != MPI_REQUEST_NULL) MPI_Request_free(&q);
            /* New persistent requests, which may get the freed handle value. */
            int vals[1000];
            for (int i = 0; i < 1000; i++) vals[i] = tag * 1000 + i;
            MPI_Request p;
            if (MPI_Send_init(vals, 1000, MPI_INT, peer, tag + 1, MPI_COMM_WORLD, &p) != MPI_SUCCESS || MPI_Start(&p) != MPI_SUCCESS ||
                MPI_Wait(&p, MPI_STATUS_IGNORE) != MPI_SUCCESS || MPI_Request_free(&p) != MPI_SUCCESS) {
                printf("%d bytes, %s: the persistent send after it failed\n", n, HOW[how]);
                bad++;
            }
            memset(r, 0, 64 * 56);
            if (MPI_Recv_init(r, 64, vd, peer, tag + 2, MPI_COMM_WORLD, &p) != MPI_SUCCESS || MPI_Start(&p) != MPI_SUCCESS ||
                MPI_Wait(&p, &st) != MPI_SUCCESS || MPI_Request_free(&p) != MPI_SUCCESS) {
                printf("%d bytes, %s: the persistent receive after it failed\n", n, HOW[how]);
                bad++;
            }
            for (int e = 0; e < 64 * 4; e++) /* double e of the stream: element e / 4, its (e % 4)th */
                bad += memcmp(r + 56 * (e / 4) + 16 * (e % 4), s + 8 * e, 8) != 0;
        }
    int total = 0;
    MPI_Allreduce(&bad, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("%s p2p_persistent_failed (%d bad checks)\n", total ? "FAIL" : "PASS", total);
    MPI_Type_free(&vd);
    free(s);
    free(r);
    MPI_Finalize();
    return total != 0;
}
