/* MPI_Pack / MPI_Unpack / MPI_Pack_size through sluice's datatype engine, checked byte for byte
 * against the MPI's own engine (PMPI_Pack / PMPI_Unpack / PMPI_Pack_size, which bypass sluice),
 * for many derived types; error classes for bad arguments must equal the MPI's own; handles
 * reused after MPI_Type_free must use the new type's layout; data packed on one side by sluice
 * and unpacked by the bare MPI on the other (and the reverse) must agree. */
#include <string.h>
#include "check.h"
#include "pack_types.h"

#define BUF (1 << 20)
static int rank, size;
static unsigned char *src, *dst_a, *dst_b, *pk_a, *pk_b;

/* Pack `count` elements at src+off through sluice and through the MPI, at two positions. */
static void compare(MPI_Datatype t, const char *name, int count, MPI_Aint off) {
    int sz_s = -1, sz_m = -2;
    MPI_CHECK(MPI_Pack_size(count, t, MPI_COMM_WORLD, &sz_s));
    MPI_CHECK(PMPI_Pack_size(count, t, MPI_COMM_WORLD, &sz_m));
    EXPECT(sz_s == sz_m, "%s: Pack_size %d vs MPI %d", name, sz_s, sz_m);
    memset(pk_a, 0xAA, BUF); memset(pk_b, 0xAA, BUF);
    int pa = 3, pb = 3;
    MPI_CHECK(MPI_Pack(src + off, count, t, pk_a, BUF, &pa, MPI_COMM_WORLD));
    MPI_CHECK(PMPI_Pack(src + off, count, t, pk_b, BUF, &pb, MPI_COMM_WORLD));
    MPI_CHECK(MPI_Pack(src + off, 1, t, pk_a, BUF, &pa, MPI_COMM_WORLD)); /* append at the new position */
    MPI_CHECK(PMPI_Pack(src + off, 1, t, pk_b, BUF, &pb, MPI_COMM_WORLD));
    EXPECT(pa == pb && memcmp(pk_a, pk_b, pb + 16) == 0, "%s x%d: packed bytes differ (pos %d vs %d)", name, count, pa, pb);
    memset(dst_a, 0x55, BUF); memset(dst_b, 0x55, BUF);
    pa = 3; pb = 3;
    MPI_CHECK(MPI_Unpack(pk_b, BUF, &pa, dst_a + off, count, t, MPI_COMM_WORLD));
    MPI_CHECK(PMPI_Unpack(pk_b, BUF, &pb, dst_b + off, count, t, MPI_COMM_WORLD));
    EXPECT(pa == pb && memcmp(dst_a, dst_b, BUF) == 0, "%s x%d: unpacked memory differs", name, count);
}

static int err_class(int rc) { int c = -1; MPI_Error_class(rc, &c); return c; }

static void errors_match_the_mpi(MPI_Datatype t) {
    int small = 8, ps = 0, pm = 0;
    int cs = err_class(MPI_Pack(src + 4096, 1, t, pk_a, small, &ps, MPI_COMM_WORLD));
    int cm = err_class(PMPI_Pack(src + 4096, 1, t, pk_b, small, &pm, MPI_COMM_WORLD));
    EXPECT(cs == cm, "short pack buffer: class %d vs MPI %d", cs, cm);
    ps = pm = 0;
    cs = err_class(MPI_Pack(src + 4096, -1, t, pk_a, BUF, &ps, MPI_COMM_WORLD));
    cm = err_class(PMPI_Pack(src + 4096, -1, t, pk_b, BUF, &pm, MPI_COMM_WORLD));
    EXPECT(cs == cm, "negative count: class %d vs MPI %d", cs, cm);
    ps = pm = 0;
    cs = err_class(MPI_Unpack(pk_a, small, &ps, dst_a + 4096, 1, t, MPI_COMM_WORLD));
    cm = err_class(PMPI_Unpack(pk_b, small, &pm, dst_b + 4096, 1, t, MPI_COMM_WORLD));
    EXPECT(cs == cm, "short unpack input: class %d vs MPI %d", cs, cm);
    MPI_Datatype uncommitted;
    MPI_Type_vector(3, 1, 2, MPI_INT, &uncommitted);
    ps = pm = 0;
    cs = err_class(MPI_Pack(src, 1, uncommitted, pk_a, BUF, &ps, MPI_COMM_WORLD));
    cm = err_class(PMPI_Pack(src, 1, uncommitted, pk_b, BUF, &pm, MPI_COMM_WORLD));
    EXPECT(cs == cm, "uncommitted type: class %d vs MPI %d", cs, cm);
    MPI_Type_free(&uncommitted);
}

static void handle_reuse(void) {
    for (int i = 0; i < 20; i++) {
        MPI_Datatype a, b;
        MPI_Type_vector(10 + i, 1, 3 + i % 4, MPI_INT, &a);
        MPI_CHECK(MPI_Type_commit(&a));
        compare(a, "reuse-a", 2, 4096);
        MPI_CHECK(MPI_Type_free(&a));
        int bl[2] = {2 + i, 1}, d[2] = {5, 40 + i};
        MPI_Type_indexed(2, bl, d, MPI_DOUBLE, &b); /* often gets a's old handle */
        MPI_CHECK(MPI_Type_commit(&b));
        compare(b, "reuse-b", 3, 4096);
        MPI_Datatype c;
        MPI_CHECK(MPI_Type_dup(b, &c));
        MPI_CHECK(MPI_Type_free(&b));
        compare(c, "reuse-dup", 2, 4096);
        MPI_CHECK(MPI_Type_free(&c));
    }
}

/* Rank r packs with sluice, its neighbour unpacks with the bare MPI, and the reverse. */
static void interop(MPI_Datatype t, const char *name) {
    int right = (rank + 1) % size, left = (rank + size - 1) % size, n = 4, psize, pos = 0, pos2 = 0;
    MPI_Pack_size(n, t, MPI_COMM_WORLD, &psize);
    for (int i = 0; i < BUF; i++) src[i] = (unsigned char)(i * 7 + rank);
    MPI_CHECK(MPI_Pack(src + 8192, n, t, pk_a, BUF, &pos, MPI_COMM_WORLD));
    MPI_CHECK(PMPI_Pack(src + 8192, n, t, pk_a + pos, BUF - pos, &pos2, MPI_COMM_WORLD));
    MPI_CHECK(MPI_Sendrecv(pk_a, pos + pos2, MPI_PACKED, right, 5, pk_b, BUF, MPI_PACKED, left, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    memset(dst_a, 0, BUF); memset(dst_b, 0, BUF);
    int q = 0, q2 = 0;
    MPI_CHECK(PMPI_Unpack(pk_b, BUF, &q, dst_a + 8192, n, t, MPI_COMM_WORLD)); /* sluice-packed */
    MPI_CHECK(MPI_Unpack(pk_b + q, BUF - q, &q2, dst_b + 8192, n, t, MPI_COMM_WORLD)); /* MPI-packed */
    EXPECT(memcmp(dst_a, dst_b, BUF) == 0, "%s: interop mismatch", name);
    /* Spot check against the sender's pattern (rank `left` filled with i*7+left). */
    int any = 0;
    for (int i = 0; i < BUF; i++) if (dst_a[i]) { any = 1; EXPECT(dst_a[i] == (unsigned char)(i * 7 + left), "%s: byte %d", name, i); break; }
    EXPECT(any, "%s: nothing unpacked", name);
}

int main(int argc, char **argv) {
    MPI_CHECK(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    src = malloc(BUF); dst_a = malloc(BUF); dst_b = malloc(BUF); pk_a = malloc(BUF); pk_b = malloc(BUF);
    for (int i = 0; i < BUF; i++) src[i] = (unsigned char)(i * 131 + 17);
    MPI_Datatype t[NTYPES];
    const char *name[NTYPES];
    build(t, name);
    for (int i = 0; i < NTYPES; i++) {
        for (int count = 0; count <= 3; count++) compare(t[i], name[i], count, 4096);
        errors_match_the_mpi(t[i]);
        interop(t[i], name[i]);
    }
    handle_reuse();
    for (int i = 0; i < NTYPES; i++) MPI_CHECK(MPI_Type_free(&t[i]));
    int rc = report_verdict("pack");
    MPI_CHECK(MPI_Finalize());
    return rc;
}
