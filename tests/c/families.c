/* Calls every intercepted C function at least once, between neighbours in a ring, and checks
 * every result: the harness runs it with the shim preloaded and asserts both PASS and that each
 * call family shows up in sluice's statistics. */
#include <string.h>
#include "check.h"

static int rank, size, right, left;

static void blocking_modes(void) {
    int out[8], in[8];
    for (int i = 0; i < 8; i++) out[i] = rank * 100 + i;
    int bufsize = 8 * (int)sizeof(int) + MPI_BSEND_OVERHEAD;
    char *bbuf = malloc(bufsize);
    MPI_CHECK(MPI_Buffer_attach(bbuf, bufsize));
    /* Standard, synchronous, buffered: each matched by a blocking receive from the left. */
    for (int mode = 0; mode < 3; mode++) {
        MPI_Request rr;
        MPI_CHECK(MPI_Irecv(in, 8, MPI_INT, left, 10 + mode, MPI_COMM_WORLD, &rr));
        if (mode == 0) MPI_CHECK(MPI_Send(out, 8, MPI_INT, right, 10, MPI_COMM_WORLD));
        if (mode == 1) MPI_CHECK(MPI_Ssend(out, 8, MPI_INT, right, 11, MPI_COMM_WORLD));
        if (mode == 2) MPI_CHECK(MPI_Bsend(out, 8, MPI_INT, right, 12, MPI_COMM_WORLD));
        MPI_Status st;
        MPI_CHECK(MPI_Wait(&rr, &st));
        int n = -1;
        MPI_CHECK(MPI_Get_count(&st, MPI_INT, &n));
        EXPECT(n == 8 && in[7] == left * 100 + 7, "mode %d count %d val %d", mode, n, in[7]);
    }
    void *b; int bs;
    MPI_CHECK(MPI_Buffer_detach(&b, &bs));
    free(bbuf);
    /* Ready send: the receive is posted before the barrier that precedes the send. */
    MPI_Request rr;
    MPI_CHECK(MPI_Irecv(in, 8, MPI_INT, left, 13, MPI_COMM_WORLD, &rr));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_CHECK(MPI_Rsend(out, 8, MPI_INT, right, 13, MPI_COMM_WORLD));
    MPI_CHECK(MPI_Wait(&rr, MPI_STATUS_IGNORE));
    EXPECT(in[0] == left * 100, "rsend got %d", in[0]);
    /* Blocking receive with MPI_ANY_SOURCE / MPI_ANY_TAG. */
    MPI_CHECK(MPI_Send(out, 8, MPI_INT, right, 14, MPI_COMM_WORLD));
    MPI_Status st;
    MPI_CHECK(MPI_Recv(in, 8, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
    EXPECT(st.MPI_SOURCE == left && st.MPI_TAG == 14, "any: %d/%d", st.MPI_SOURCE, st.MPI_TAG);
}

static void nonblocking_modes(void) {
    int out[4][3], in[4][3];
    MPI_Request req[8];
    for (int m = 0; m < 4; m++) {
        for (int i = 0; i < 3; i++) out[m][i] = rank + m * 10 + i;
        MPI_CHECK(MPI_Irecv(in[m], 3, MPI_INT, left, 20 + m, MPI_COMM_WORLD, &req[4 + m]));
    }
    int bufsize = 3 * (int)sizeof(int) + MPI_BSEND_OVERHEAD;
    char *bbuf = malloc(bufsize);
    MPI_CHECK(MPI_Buffer_attach(bbuf, bufsize));
    MPI_Barrier(MPI_COMM_WORLD); /* receives are posted everywhere: Irsend is legal */
    MPI_CHECK(MPI_Isend(out[0], 3, MPI_INT, right, 20, MPI_COMM_WORLD, &req[0]));
    MPI_CHECK(MPI_Issend(out[1], 3, MPI_INT, right, 21, MPI_COMM_WORLD, &req[1]));
    MPI_CHECK(MPI_Ibsend(out[2], 3, MPI_INT, right, 22, MPI_COMM_WORLD, &req[2]));
    MPI_CHECK(MPI_Irsend(out[3], 3, MPI_INT, right, 23, MPI_COMM_WORLD, &req[3]));
    /* Complete with a mix of the completion family. */
    int idx = -1, done = 0;
    MPI_Status st;
    MPI_CHECK(MPI_Waitany(8, req, &idx, &st));
    EXPECT(idx >= 0 && idx < 8, "waitany index %d", idx);
    int outcount = 0, indices[8];
    MPI_Status sts[8];
    MPI_CHECK(MPI_Waitsome(8, req, &outcount, indices, sts));
    EXPECT(outcount >= 1 || outcount == MPI_UNDEFINED, "waitsome outcount %d", outcount);
    int flag = 0;
    while (!flag) MPI_CHECK(MPI_Testany(8, req, &idx, &flag, &st));
    while (!done) {
        MPI_CHECK(MPI_Testsome(8, req, &outcount, indices, sts));
        if (outcount == MPI_UNDEFINED) break;
        MPI_CHECK(MPI_Testall(8, req, &done, MPI_STATUSES_IGNORE));
    }
    MPI_CHECK(MPI_Waitall(8, req, MPI_STATUSES_IGNORE));
    for (int m = 0; m < 4; m++)
        EXPECT(in[m][2] == left + m * 10 + 2, "mode %d got %d", m, in[m][2]);
    void *b; int bs;
    MPI_CHECK(MPI_Buffer_detach(&b, &bs));
    free(bbuf);

    /* MPI_Test loop and MPI_Request_get_status on a single request. */
    int x = rank, y = -1;
    MPI_Request r2[2];
    MPI_CHECK(MPI_Irecv(&y, 1, MPI_INT, left, 30, MPI_COMM_WORLD, &r2[0]));
    MPI_CHECK(MPI_Isend(&x, 1, MPI_INT, right, 30, MPI_COMM_WORLD, &r2[1]));
    flag = 0;
    while (!flag) MPI_CHECK(MPI_Request_get_status(r2[0], &flag, &st));
    flag = 0;
    while (!flag) MPI_CHECK(MPI_Test(&r2[0], &flag, &st));
    EXPECT(r2[0] == MPI_REQUEST_NULL && y == left, "test: y=%d", y);
    MPI_CHECK(MPI_Wait(&r2[1], MPI_STATUS_IGNORE));
}

static void sendrecv_and_persistent(void) {
    double s[5], r[5];
    for (int i = 0; i < 5; i++) s[i] = rank + i * 0.5;
    MPI_Status st;
    MPI_CHECK(MPI_Sendrecv(s, 5, MPI_DOUBLE, right, 40, r, 5, MPI_DOUBLE, left, 40, MPI_COMM_WORLD, &st));
    EXPECT(r[4] == left + 2.0 && st.MPI_SOURCE == left, "sendrecv %g", r[4]);
    MPI_CHECK(MPI_Sendrecv_replace(s, 5, MPI_DOUBLE, right, 41, left, 41, MPI_COMM_WORLD, &st));
    EXPECT(s[1] == left + 0.5, "replace %g", s[1]);

    int out = 0, in = -1;
    MPI_Request req[2];
    MPI_CHECK(MPI_Recv_init(&in, 1, MPI_INT, left, 42, MPI_COMM_WORLD, &req[0]));
    MPI_CHECK(MPI_Send_init(&out, 1, MPI_INT, right, 42, MPI_COMM_WORLD, &req[1]));
    for (int it = 0; it < 3; it++) {
        out = rank * 10 + it;
        MPI_CHECK(MPI_Startall(2, req));
        MPI_CHECK(MPI_Waitall(2, req, MPI_STATUSES_IGNORE));
        EXPECT(in == left * 10 + it, "persistent it %d got %d", it, in);
    }
    MPI_CHECK(MPI_Request_free(&req[0]));
    MPI_CHECK(MPI_Request_free(&req[1]));
    /* The other persistent send modes, started one at a time. */
    MPI_Request sreq[3], rreq;
    int bufsize = (int)sizeof(int) + MPI_BSEND_OVERHEAD;
    char *bbuf = malloc(bufsize);
    MPI_CHECK(MPI_Buffer_attach(bbuf, bufsize));
    MPI_CHECK(MPI_Ssend_init(&out, 1, MPI_INT, right, 43, MPI_COMM_WORLD, &sreq[0]));
    MPI_CHECK(MPI_Bsend_init(&out, 1, MPI_INT, right, 43, MPI_COMM_WORLD, &sreq[1]));
    MPI_CHECK(MPI_Rsend_init(&out, 1, MPI_INT, right, 43, MPI_COMM_WORLD, &sreq[2]));
    for (int m = 0; m < 3; m++) {
        MPI_CHECK(MPI_Irecv(&in, 1, MPI_INT, left, 43, MPI_COMM_WORLD, &rreq));
        MPI_Barrier(MPI_COMM_WORLD);
        out = 1000 + m;
        MPI_CHECK(MPI_Start(&sreq[m]));
        MPI_CHECK(MPI_Wait(&sreq[m], MPI_STATUS_IGNORE));
        MPI_CHECK(MPI_Wait(&rreq, MPI_STATUS_IGNORE));
        EXPECT(in == 1000 + m, "persistent mode %d got %d", m, in);
        MPI_CHECK(MPI_Request_free(&sreq[m]));
    }
    void *b; int bs;
    MPI_CHECK(MPI_Buffer_detach(&b, &bs));
    free(bbuf);
}

static void probes_and_cancel(void) {
    int v[6] = {rank, 1, 2, 3, 4, 5}, w[6];
    MPI_Status st;
    MPI_Message msg;
    int flag = 0, n;
    /* Probe + Recv */
    MPI_CHECK(MPI_Send(v, 6, MPI_INT, right, 50, MPI_COMM_WORLD));
    MPI_CHECK(MPI_Probe(left, 50, MPI_COMM_WORLD, &st));
    MPI_CHECK(MPI_Get_count(&st, MPI_INT, &n));
    EXPECT(n == 6, "probe count %d", n);
    MPI_CHECK(MPI_Recv(w, 6, MPI_INT, left, 50, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    /* Iprobe loop + Mprobe/Mrecv */
    MPI_CHECK(MPI_Send(v, 5, MPI_INT, right, 51, MPI_COMM_WORLD));
    while (!flag) MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, 51, MPI_COMM_WORLD, &flag, &st));
    MPI_CHECK(MPI_Mprobe(left, 51, MPI_COMM_WORLD, &msg, &st));
    MPI_CHECK(MPI_Get_elements(&st, MPI_INT, &n));
    EXPECT(n == 5, "mprobe elements %d", n);
    MPI_CHECK(MPI_Mrecv(w, 5, MPI_INT, &msg, &st));
    EXPECT(w[0] == left && msg == MPI_MESSAGE_NULL, "mrecv %d", w[0]);
    /* Improbe/Imrecv */
    MPI_CHECK(MPI_Send(v, 4, MPI_INT, right, 52, MPI_COMM_WORLD));
    flag = 0;
    while (!flag) MPI_CHECK(MPI_Improbe(left, 52, MPI_COMM_WORLD, &flag, &msg, &st));
    MPI_Request r;
    MPI_CHECK(MPI_Imrecv(w, 4, MPI_INT, &msg, &r));
    MPI_CHECK(MPI_Wait(&r, &st));
    MPI_Count big = -1;
    MPI_CHECK(MPI_Get_elements_x(&st, MPI_INT, &big));
    EXPECT(big == 4 && w[3] == 3, "imrecv %lld %d", (long long)big, w[3]);
    /* Cancel a receive that never matches. */
    MPI_CHECK(MPI_Irecv(w, 1, MPI_INT, left, 999, MPI_COMM_WORLD, &r));
    MPI_CHECK(MPI_Cancel(&r));
    MPI_CHECK(MPI_Wait(&r, &st));
    int cancelled = 0;
    MPI_CHECK(MPI_Test_cancelled(&st, &cancelled));
    EXPECT(cancelled, "receive not cancelled");
}

static void datatypes_pack_comms(void) {
    MPI_Datatype vec, dup;
    MPI_CHECK(MPI_Type_vector(4, 1, 2, MPI_DOUBLE, &vec));
    MPI_CHECK(MPI_Type_commit(&vec));
    MPI_CHECK(MPI_Type_dup(vec, &dup));
    MPI_CHECK(MPI_Type_commit(&dup));
    double src[8], dst[8] = {0};
    for (int i = 0; i < 8; i++) src[i] = rank * 10 + i;
    MPI_CHECK(MPI_Sendrecv(src, 1, vec, right, 60, dst, 1, dup, left, 60, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    EXPECT(dst[6] == left * 10 + 6 && dst[1] == 0, "vector %g %g", dst[6], dst[1]);
    int psize = 0, pos = 0;
    MPI_CHECK(MPI_Pack_size(2, vec, MPI_COMM_WORLD, &psize));
    EXPECT(psize >= 64, "pack size %d", psize);
    char *packed = malloc(psize);
    MPI_CHECK(MPI_Pack(src, 1, vec, packed, psize, &pos, MPI_COMM_WORLD));
    EXPECT(pos == 32, "pack position %d", pos);
    double out[8] = {0};
    pos = 0;
    MPI_CHECK(MPI_Unpack(packed, psize, &pos, out, 1, dup, MPI_COMM_WORLD));
    EXPECT(out[2] == src[2] && out[3] == 0, "unpack %g", out[2]);
    free(packed);
    MPI_CHECK(MPI_Type_free(&dup));
    MPI_CHECK(MPI_Type_free(&vec));
    EXPECT(vec == MPI_DATATYPE_NULL, "type_free did not null the handle");

    MPI_Comm c;
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    int crank;
    MPI_Comm_rank(c, &crank);
    int token = crank;
    MPI_CHECK(MPI_Sendrecv_replace(&token, 1, MPI_INT, right, 70, left, 70, c, MPI_STATUS_IGNORE));
    EXPECT(token == left, "dup comm token %d", token);
    MPI_CHECK(MPI_Comm_free(&c));
    EXPECT(c == MPI_COMM_NULL, "comm_free did not null the handle");
}

#if defined(MPICH_VERSION) && MPI_VERSION >= 4
/* MPI-4 large-count variants (MPICH 4.0 provides them; Open MPI 4.1 does not). */
static void large_count(void) {
    int v[3] = {rank, 7, 8}, w[3];
    MPI_Status st;
    MPI_Count n = 0, sz = 0, pos = 0;
    MPI_CHECK(MPI_Sendrecv_c(v, 3, MPI_INT, right, 80, w, 3, MPI_INT, left, 80, MPI_COMM_WORLD, &st));
    MPI_CHECK(MPI_Get_count_c(&st, MPI_INT, &n));
    EXPECT(n == 3 && w[0] == left, "sendrecv_c %lld", (long long)n);
    MPI_Request r;
    MPI_CHECK(MPI_Irecv_c(w, 3, MPI_INT, left, 81, MPI_COMM_WORLD, &r));
    MPI_CHECK(MPI_Send_c(v, 3, MPI_INT, right, 81, MPI_COMM_WORLD));
    MPI_CHECK(MPI_Wait(&r, &st));
    MPI_CHECK(MPI_Get_elements_c(&st, MPI_INT, &n));
    EXPECT(n == 3, "elements_c %lld", (long long)n);
    MPI_CHECK(MPI_Pack_size_c(3, MPI_INT, MPI_COMM_WORLD, &sz));
    char buf[64];
    MPI_CHECK(MPI_Pack_c(v, 3, MPI_INT, buf, sizeof buf, &pos, MPI_COMM_WORLD));
    pos = 0;
    MPI_CHECK(MPI_Unpack_c(buf, sizeof buf, &pos, w, 3, MPI_INT, MPI_COMM_WORLD));
    EXPECT(w[0] == rank && w[2] == 8 && sz >= 12, "pack_c");

    /* Non-contiguous Sendrecv_c / Sendrecv_replace_c (sluice's engine path). */
    MPI_Datatype vec;
    MPI_CHECK(MPI_Type_vector(4, 2, 3, MPI_INT, &vec));
    MPI_CHECK(MPI_Type_commit(&vec));
    int sv[12], rv[12];
    for (int i = 0; i < 12; i++) { sv[i] = 100 * rank + i; rv[i] = -1; }
    MPI_CHECK(MPI_Sendrecv_c(sv, 1, vec, right, 82, rv, 1, vec, left, 82, MPI_COMM_WORLD, &st));
    MPI_CHECK(MPI_Get_count_c(&st, MPI_INT, &n));
    EXPECT(n == 8, "sendrecv_c vector count %lld", (long long)n);
    for (int i = 0; i < 12; i++) {
        int want = (i % 3 == 2) ? -1 : 100 * left + i;
        EXPECT(rv[i] == want, "sendrecv_c vector [%d] = %d, want %d", i, rv[i], want);
    }
    MPI_CHECK(MPI_Sendrecv_replace_c(sv, 1, vec, right, 83, left, 83, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (int i = 0; i < 12; i++) {
        int want = (i % 3 == 2) ? 100 * rank + i : 100 * left + i;
        EXPECT(sv[i] == want, "sendrecv_replace_c vector [%d] = %d, want %d", i, sv[i], want);
    }
    MPI_CHECK(MPI_Type_free(&vec));
}
#endif

int main(int argc, char **argv) {
    int provided;
    MPI_CHECK(MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    right = (rank + 1) % size;
    left = (rank + size - 1) % size;
    blocking_modes();
    nonblocking_modes();
    sendrecv_and_persistent();
    probes_and_cancel();
    datatypes_pack_comms();
#if defined(MPICH_VERSION) && MPI_VERSION >= 4
    large_count();
#endif
    int rc = report_verdict("families");
    MPI_CHECK(MPI_Finalize());
    return rc;
}
