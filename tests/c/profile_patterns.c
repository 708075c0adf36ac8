/* Known communication patterns for SLUICE_PROFILE (tests/profile.rs computes the matrix they
 * must give, exactly, and compares). Every size depends on the sending rank (and peer), so a
 * count landing on the wrong pair shows. With n ranks, r this rank, right = (r+1)%n,
 * left = (r+n-1)%n, sends only (receives are not counted):
 *   1. ring:        MPI_Send of 100+r ints to right                  (+ a send to MPI_PROC_NULL)
 *   2. exchange:    MPI_Isend of 10*(r+1) doubles to right and to left
 *   3. persistent:  MPI_Send_init of 7*(r+1) chars to right, started K = 3 times
 *                   (Startall once, then MPI_Start twice)
 *   4. alltoallv:   1 + r*n + j ints to each j != r
 *   5. rooted:      MPI_Bcast of 33 doubles from n-1; MPI_Scatter of 3 ints per rank from n-1;
 *                   MPI_Gather of 6 shorts to 1; MPI_Gatherv of 5+r ints to 1
 *   6. sub-comm:    MPI_Comm_split(color 0, key n-r): sub rank s = n-1-r; MPI_Sendrecv of 50+r
 *                   bytes to sub rank (s+1)%n; MPI_Gather of 2 doubles to sub rank 0 (= world n-1)
 *   7. neighbours:  a non-periodic 1-D Cartesian communicator (no reordering): MPI_Neighbor_alltoallv
 *                   of 4+r ints to r-1 and r+1 where they exist (MPI_PROC_NULL slots at the ends)
 *   8. nonblocking: MPI_Ialltoall of 3 chars to each j != r
 *   9. threads:     MPI_THREAD_MULTIPLE, THREADS threads each MPI_Send ROUNDS messages of 1+t ints
 *                   to right concurrently (tag 100+t)
 */
#include "check.h"
#include <pthread.h>
#include <string.h>

#define K 3
#define THREADS 4
#define ROUNDS 20

static int g_right, g_left;

static void *worker(void *arg) {
    int t = (int)(long)arg, out[8], in[8];
    for (int i = 0; i < 8; i++) out[i] = t;
    for (int k = 0; k < ROUNDS; k++) {
        MPI_Request q;
        MPI_CHECK(MPI_Irecv(in, 8, MPI_INT, g_left, 100 + t, MPI_COMM_WORLD, &q));
        MPI_CHECK(MPI_Send(out, 1 + t, MPI_INT, g_right, 100 + t, MPI_COMM_WORLD));
        MPI_CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE));
        EXPECT(in[0] == t, "thread %d got %d", t, in[0]);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int provided;
    MPI_CHECK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    int r, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int right = (r + 1) % n, left = (r + n - 1) % n;
    EXPECT(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);

    /* 1. ring */
    {
        int out[200], in[200];
        for (int i = 0; i < 200; i++) out[i] = r * 1000 + i;
        MPI_Status st;
        if (r % 2 == 0) {
            MPI_CHECK(MPI_Send(out, 100 + r, MPI_INT, right, 1, MPI_COMM_WORLD));
            MPI_CHECK(MPI_Recv(in, 200, MPI_INT, left, 1, MPI_COMM_WORLD, &st));
        } else {
            MPI_CHECK(MPI_Recv(in, 200, MPI_INT, left, 1, MPI_COMM_WORLD, &st));
            MPI_CHECK(MPI_Send(out, 100 + r, MPI_INT, right, 1, MPI_COMM_WORLD));
        }
        int got;
        MPI_Get_count(&st, MPI_INT, &got);
        EXPECT(got == 100 + left && in[0] == left * 1000, "ring: %d ints, first %d", got, in[0]);
        MPI_CHECK(MPI_Send(out, 10, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD));
    }

    /* 2. Isend/Irecv exchange with both neighbours */
    {
        double to_r[64], to_l[64], from_l[64], from_r[64];
        for (int i = 0; i < 64; i++) to_r[i] = to_l[i] = r;
        MPI_Request q[4];
        MPI_CHECK(MPI_Irecv(from_l, 64, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &q[0]));
        MPI_CHECK(MPI_Irecv(from_r, 64, MPI_DOUBLE, right, 3, MPI_COMM_WORLD, &q[1]));
        MPI_CHECK(MPI_Isend(to_r, 10 * (r + 1), MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &q[2]));
        MPI_CHECK(MPI_Isend(to_l, 10 * (r + 1), MPI_DOUBLE, left, 3, MPI_COMM_WORLD, &q[3]));
        MPI_CHECK(MPI_Waitall(4, q, MPI_STATUSES_IGNORE));
        EXPECT(from_l[0] == left && from_r[0] == right, "exchange: %g %g", from_l[0], from_r[0]);
    }

    /* 3. persistent sends started K times */
    {
        char out[64], in[64];
        memset(out, 'a' + r, sizeof out);
        MPI_Request q[2];
        MPI_CHECK(MPI_Recv_init(in, 64, MPI_CHAR, left, 4, MPI_COMM_WORLD, &q[0]));
        MPI_CHECK(MPI_Send_init(out, 7 * (r + 1), MPI_CHAR, right, 4, MPI_COMM_WORLD, &q[1]));
        MPI_CHECK(MPI_Startall(2, q));
        MPI_CHECK(MPI_Waitall(2, q, MPI_STATUSES_IGNORE));
        for (int k = 1; k < K; k++) {
            MPI_CHECK(MPI_Start(&q[0]));
            MPI_CHECK(MPI_Start(&q[1]));
            MPI_CHECK(MPI_Waitall(2, q, MPI_STATUSES_IGNORE));
        }
        EXPECT(in[0] == 'a' + left, "persistent: %c", in[0]);
        MPI_CHECK(MPI_Request_free(&q[0]));
        MPI_CHECK(MPI_Request_free(&q[1]));
    }

    /* 4. alltoallv with distinct counts per pair */
    {
        int *sc = malloc(n * sizeof(int)), *sd = malloc(n * sizeof(int));
        int *rc = malloc(n * sizeof(int)), *rd = malloc(n * sizeof(int));
        int st = 0, rt = 0;
        for (int j = 0; j < n; j++) {
            sc[j] = 1 + r * n + j;
            rc[j] = 1 + j * n + r;
            sd[j] = st;
            rd[j] = rt;
            st += sc[j];
            rt += rc[j];
        }
        int *sb = malloc(st * sizeof(int)), *rb = malloc(rt * sizeof(int));
        for (int i = 0; i < st; i++) sb[i] = r;
        MPI_CHECK(MPI_Alltoallv(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, MPI_COMM_WORLD));
        for (int j = 0; j < n; j++) EXPECT(rb[rd[j]] == j, "alltoallv from %d: %d", j, rb[rd[j]]);
        free(sc), free(sd), free(rc), free(rd), free(sb), free(rb);
    }

    /* 5. rooted collectives from non-zero roots */
    {
        double b[33];
        for (int i = 0; i < 33; i++) b[i] = (r == n - 1) ? i : -1;
        MPI_CHECK(MPI_Bcast(b, 33, MPI_DOUBLE, n - 1, MPI_COMM_WORLD));
        EXPECT(b[32] == 32, "bcast: %g", b[32]);
        int *all = malloc(3 * n * sizeof(int)), mine[3];
        for (int i = 0; i < 3 * n; i++) all[i] = i;
        MPI_CHECK(MPI_Scatter(all, 3, MPI_INT, mine, 3, MPI_INT, n - 1, MPI_COMM_WORLD));
        EXPECT(mine[0] == 3 * r, "scatter: %d", mine[0]);
        short s6[6] = {(short)r}, *g6 = malloc(6 * n * sizeof(short));
        MPI_CHECK(MPI_Gather(s6, 6, MPI_SHORT, g6, 6, MPI_SHORT, 1, MPI_COMM_WORLD));
        int gv[8], *counts = malloc(n * sizeof(int)), *displs = malloc(n * sizeof(int));
        int total = 0;
        for (int j = 0; j < n; j++) {
            counts[j] = 5 + j;
            displs[j] = total;
            total += counts[j];
        }
        for (int i = 0; i < 8; i++) gv[i] = r;
        int *gvall = malloc(total * sizeof(int));
        MPI_CHECK(MPI_Gatherv(gv, 5 + r, MPI_INT, gvall, counts, displs, MPI_INT, 1, MPI_COMM_WORLD));
        if (r == 1)
            for (int j = 0; j < n; j++) EXPECT(gvall[displs[j]] == j && g6[6 * j] == j, "gather from %d", j);
        free(all), free(g6), free(counts), free(displs), free(gvall);
    }

    /* 6. a sub-communicator whose ranks are the world's reversed */
    {
        MPI_Comm sub;
        MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, 0, n - r, &sub));
        int s;
        MPI_Comm_rank(sub, &s);
        EXPECT(s == n - 1 - r, "sub rank %d", s);
        char out[64], in[64];
        memset(out, r, sizeof out);
        MPI_CHECK(MPI_Sendrecv(out, 50 + r, MPI_BYTE, (s + 1) % n, 5, in, 64, MPI_BYTE, (s + n - 1) % n, 5, sub,
                               MPI_STATUS_IGNORE));
        double d2[2] = {r, r}, *dall = malloc(2 * n * sizeof(double));
        MPI_CHECK(MPI_Gather(d2, 2, MPI_DOUBLE, dall, 2, MPI_DOUBLE, 0, sub));
        free(dall);
        MPI_CHECK(MPI_Comm_free(&sub));
    }

    /* 7. neighbourhood collective on a Cartesian line */
    {
        MPI_Comm line;
        int dims[1] = {n}, periods[1] = {0};
        MPI_CHECK(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &line));
        int out[2 * 8], in[2 * 8];
        for (int i = 0; i < 16; i++) out[i] = r, in[i] = -1;
        int sc[2] = {4 + r, 4 + r}, sd[2] = {0, 8};
        int rc[2] = {r > 0 ? 4 + r - 1 : 0, r + 1 < n ? 4 + r + 1 : 0}, rd[2] = {0, 8};
        MPI_CHECK(MPI_Neighbor_alltoallv(out, sc, sd, MPI_INT, in, rc, rd, MPI_INT, line));
        EXPECT((r == 0 || in[0] == r - 1) && (r + 1 == n || in[8] == r + 1), "neighbours: %d %d", in[0], in[8]);
        MPI_CHECK(MPI_Comm_free(&line));
    }

    /* 8. nonblocking alltoall */
    {
        char *sb = malloc(n * 8), *rb = malloc(n * 8);
        memset(sb, 'A' + r, n * 8);
        MPI_Request q;
        MPI_CHECK(MPI_Ialltoall(sb, 3, MPI_CHAR, rb, 3, MPI_CHAR, MPI_COMM_WORLD, &q));
        MPI_CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE));
        free(sb), free(rb);
    }

    /* 9. threads sending concurrently */
    {
        g_right = right, g_left = left;
        pthread_t th[THREADS];
        for (long t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, worker, (void *)t);
        for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    }

    int rc = report_verdict("profile_patterns");
    MPI_CHECK(MPI_Finalize());
    return rc;
}
