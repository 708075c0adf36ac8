/* MPI_Waitall over a request that is already complete with an error (a truncated 1 MiB message,
 * watched with MPI_Request_get_status until complete), at MPI_THREAD_MULTIPLE: Open MPI 4.1's own
 * Waitall spins forever there (docs/protocol.md, "Known differences"); under sluice, which
 * reaches that state by itself (its watch of pipelined receives, its progress thread), the call
 * must return MPI_ERR_IN_STATUS with MPI_ERR_TRUNCATE in the entry. Rounds: statuses or
 * MPI_STATUSES_IGNORE, alone or with a second, good receive (completed, or MPI_ERR_PENDING and
 * then waited for). Rank 0 prints PASS or FAIL; ranks past 1 sit out. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cls(int code) {
    int c = -1;
    MPI_Error_class(code, &c);
    return c;
}

int main(int argc, char **argv) {
    int provided, rank, size, bad = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Datatype vd; /* every other double, 4 of them: a strided receive sluice unpacks itself */
    MPI_Type_vector(4, 1, 2, MPI_DOUBLE, &vd);
    MPI_Type_commit(&vd);
    MPI_Aint lb, ext;
    MPI_Type_get_extent(vd, &lb, &ext);
    const int n = 1 << 20, rcount = 600000 / 32, small = 100;
    unsigned char *s = malloc(n), *r = malloc((size_t)ext * rcount + 64), g[100];
    for (int i = 0; i < n; i++) s[i] = (unsigned char)(i * 7 + 3);
    for (int round = 0; round < 4 && size >= 2 && rank < 2; round++) {
        int tag = 10 * round, ignore = round & 1, nq = round & 2 ? 2 : 1;
        if (rank == 1) {
            MPI_Send(s, n, MPI_BYTE, 0, tag, MPI_COMM_WORLD);
            if (nq == 2) MPI_Send(s, small, MPI_BYTE, 0, tag + 1, MPI_COMM_WORLD);
            continue;
        }
        MPI_Request q[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
        MPI_Status st[2], one;
        memset(g, 0, sizeof g);
        MPI_Irecv(r, rcount, vd, 1, tag, MPI_COMM_WORLD, &q[0]);
        if (nq == 2) MPI_Irecv(g, small, MPI_BYTE, 1, tag + 1, MPI_COMM_WORLD, &q[1]);
        for (int flag = 0; !flag;) MPI_Request_get_status(q[0], &flag, &one);
        st[0].MPI_ERROR = st[1].MPI_ERROR = -1;
        int rc = MPI_Waitall(nq, q, ignore ? MPI_STATUSES_IGNORE : st);
        if (cls(rc) != MPI_ERR_IN_STATUS) {
            printf("round %d: Waitall class %d, expected MPI_ERR_IN_STATUS\n", round, cls(rc));
            bad++;
        }
        if (!ignore && cls(st[0].MPI_ERROR) != MPI_ERR_TRUNCATE) {
            printf("round %d: entry 0 MPI_ERROR class %d, expected MPI_ERR_TRUNCATE\n", round, cls(st[0].MPI_ERROR));
            bad++;
        }
        if (nq == 2) {
            int pending = q[1] != MPI_REQUEST_NULL;
            if (!ignore && st[1].MPI_ERROR != (pending ? MPI_ERR_PENDING : MPI_SUCCESS)) {
                printf("round %d: entry 1 MPI_ERROR %d with the request %s\n", round, st[1].MPI_ERROR, pending ? "live" : "freed");
                bad++;
            }
            if (pending) MPI_Wait(&q[1], MPI_STATUS_IGNORE);
            if (memcmp(g, s, small) != 0) {
                printf("round %d: the good receive's bytes differ\n", round);
                bad++;
            }
        }
        if (q[0] != MPI_REQUEST_NULL) MPI_Request_free(&q[0]);
    }
    int total = 0;
    MPI_Allreduce(&bad, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("%s p2p_waitall_failed (%d bad checks)\n", total ? "FAIL" : "PASS", total);
    MPI_Type_free(&vd);
    free(s);
    free(r);
    MPI_Finalize();
    return total != 0;
}
