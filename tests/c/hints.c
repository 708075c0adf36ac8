/* Datatype hints (include/sluice.h): MPI_Type_set_attr on sluice's keyvals steers parallel
 * processing. Every pack and unpack is checked byte for byte against the MPI (PMPI_Pack /
 * PMPI_Unpack); tests/mpi_c.rs checks the effect of the hints on the statistics rows
 * ddt-parallel (operations run on several workers) and ddt-ckpt (checkpoint tables built), run
 * with SLUICE_THREADS=2 and SLUICE_PARALLEL_MIN=1M. HINTS_CASE selects the sequence:
 *
 *   parallel (default)  on/off and epsilon hints, set before and after first use, copied by
 *                       MPI_Type_dup, deleted: 5 parallel operations per rank (see main).
 *   priority / lru      two types of the same shape packed alternately, 3 times each, with a
 *                       checkpoint budget (SLUICE_CKPT_MEMORY) that holds one table: with a
 *                       higher priority on the first, its table stays and only the second's is
 *                       rebuilt (4 tables built per rank); without (lru), each evicts the other
 *                       (6 tables built per rank). Only types without a compiled kernel use
 *                       checkpoints (the others run ranges directly), so these are structs of
 *                       two vectors with more runs than sluice's run tables take.
 *
 * sluice_type_keyval is found with dlsym, so the program also runs (without hints) on the
 * bare MPI. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>
#include "check.h"
#include "../../include/sluice.h"

#define COUNT 256 /* elements of 8 KiB packed, 16 KiB extent: 2 MiB per operation */
#define SMALL 1

static int (*type_keyval)(int);
static unsigned char *src, *da, *db, *pa, *pb;
static size_t len, packed;

static void set_hint(MPI_Datatype t, int which, void *value) {
    if (type_keyval) MPI_CHECK(MPI_Type_set_attr(t, type_keyval(which), value));
}

static void delete_hint(MPI_Datatype t, int which) {
    if (type_keyval) MPI_CHECK(MPI_Type_delete_attr(t, type_keyval(which)));
}

static MPI_Datatype make_type(void) {
    MPI_Datatype t;
    MPI_CHECK(MPI_Type_vector(1024, 1, 2, MPI_DOUBLE, &t));
    MPI_CHECK(MPI_Type_commit(&t));
    return t;
}

/* 1.2 MB packed, 2.4 MB extent, 800000 runs of 1-2 bytes: sluice's interpreter, not a kernel
 * (too many runs for an offset table, too small for the nested kernel). */
static MPI_Datatype make_interp_type(void) {
    enum { BLOCKS = 800000 };
    int *bl = malloc(BLOCKS * sizeof(int)), *d = malloc(BLOCKS * sizeof(int));
    for (int i = 0; i < BLOCKS; i++) {
        bl[i] = 1 + i % 2;
        d[i] = 3 * i;
    }
    MPI_Datatype t;
    MPI_CHECK(MPI_Type_indexed(BLOCKS, bl, d, MPI_BYTE, &t));
    MPI_CHECK(MPI_Type_commit(&t));
    free(bl);
    free(d);
    return t;
}

static void pack(MPI_Datatype t, int count, const char *what) {
    int qa = 0, qb = 0;
    memset(pa, 0xAA, packed); memset(pb, 0xAA, packed);
    MPI_CHECK(MPI_Pack(src, count, t, pa, (int)packed, &qa, MPI_COMM_SELF));
    MPI_CHECK(PMPI_Pack(src, count, t, pb, (int)packed, &qb, MPI_COMM_SELF));
    EXPECT(qa == qb && memcmp(pa, pb, packed) == 0, "%s: packed bytes differ", what);
}

static void unpack(MPI_Datatype t, int count, const char *what) {
    int qa = 0, qb = 0;
    memset(da, 0x55, len); memset(db, 0x55, len);
    MPI_CHECK(MPI_Unpack(pb, (int)packed, &qa, da, count, t, MPI_COMM_SELF));
    MPI_CHECK(PMPI_Unpack(pb, (int)packed, &qb, db, count, t, MPI_COMM_SELF));
    EXPECT(qa == qb && memcmp(da, db, len) == 0, "%s: unpacked memory differs", what);
}

static void parallel_case(void) {
    MPI_Datatype a = make_type(), d;
    pack(a, COUNT, "a");                              /* parallel: 1 */
    unpack(a, COUNT, "a");                            /* 2 */
    set_hint(a, SLUICE_HINT_PARALLEL, SLUICE_PARALLEL_OFF);
    pack(a, COUNT, "a off");                          /* serial: set after first use, honoured */
    unpack(a, COUNT, "a off");
    MPI_CHECK(MPI_Type_dup(a, &d));
    if (type_keyval) {
        void *v = (void *)1;
        int flag = 0;
        MPI_CHECK(MPI_Type_get_attr(d, type_keyval(SLUICE_HINT_PARALLEL), &v, &flag));
        EXPECT(flag && v == SLUICE_PARALLEL_OFF, "MPI_Type_dup did not copy the hint (flag %d)", flag);
    }
    pack(d, COUNT, "dup of a, off");                  /* serial: copied */
    delete_hint(a, SLUICE_HINT_PARALLEL);
    pack(a, COUNT, "a, hint deleted");                /* 3 */
    set_hint(d, SLUICE_HINT_PARALLEL, SLUICE_PARALLEL_ON);
    pack(d, COUNT, "dup on");                         /* 4 */
    pack(a, SMALL, "a small");                        /* serial: below SLUICE_PARALLEL_MIN */
    set_hint(a, SLUICE_HINT_EPSILON, SLUICE_EPSILON(0.000001));
    pack(a, COUNT, "a epsilon 1e-6");                 /* serial: waking workers exceeds epsilon */
    set_hint(a, SLUICE_HINT_EPSILON, SLUICE_EPSILON(10));
    pack(a, COUNT, "a epsilon 10");                   /* 5 */
    delete_hint(a, SLUICE_HINT_EPSILON);
    MPI_CHECK(MPI_Type_free(&d));
    MPI_CHECK(MPI_Type_free(&a));
}

static void budget_case(int with_priority) {
    MPI_Datatype e = make_interp_type(), f = make_interp_type();
    if (with_priority) set_hint(e, SLUICE_HINT_PRIORITY, SLUICE_PRIORITY(5));
    for (int i = 0; i < 3; i++) {
        pack(e, 1, "e");
        pack(f, 1, "f");
    }
    MPI_CHECK(MPI_Type_free(&e));
    MPI_CHECK(MPI_Type_free(&f));
}

int main(int argc, char **argv) {
    MPI_CHECK(MPI_Init(&argc, &argv));
    type_keyval = (int (*)(int))dlsym(RTLD_DEFAULT, "sluice_type_keyval");
    if (type_keyval && type_keyval(SLUICE_HINT_PARALLEL) == MPI_KEYVAL_INVALID) {
        int rank;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        if (rank == 0) printf("hints unavailable (SLUICE_DISABLE=1)\n");
        type_keyval = NULL;
    }
    if (type_keyval) {
        int p = type_keyval(SLUICE_HINT_PARALLEL), e = type_keyval(SLUICE_HINT_EPSILON);
        int q = type_keyval(SLUICE_HINT_PRIORITY);
        EXPECT(p != MPI_KEYVAL_INVALID && e != MPI_KEYVAL_INVALID && q != MPI_KEYVAL_INVALID, "keyvals missing");
        EXPECT(p != e && e != q && p != q, "keyvals not distinct: %d %d %d", p, e, q);
        EXPECT(type_keyval(3) == MPI_KEYVAL_INVALID && type_keyval(-1) == MPI_KEYVAL_INVALID, "bad which accepted");
    }
    MPI_Aint lb, ext;
    MPI_Datatype probe = make_type();
    MPI_Type_get_extent(probe, &lb, &ext);
    MPI_Type_free(&probe);
    len = (size_t)ext * COUNT;
    packed = (size_t)8192 * COUNT;
    src = malloc(len); da = malloc(len); db = malloc(len); pa = malloc(packed); pb = malloc(packed);
    for (size_t i = 0; i < len; i++) src[i] = (unsigned char)(i * 7 + 3);
    const char *c = getenv("HINTS_CASE");
    if (!c || strcmp(c, "parallel") == 0) parallel_case();
    else if (strcmp(c, "priority") == 0) budget_case(1);
    else if (strcmp(c, "lru") == 0) budget_case(0);
    else EXPECT(0, "unknown HINTS_CASE %s", c);
    int rc = report_verdict("hints");
    MPI_CHECK(MPI_Finalize());
    if (type_keyval && type_keyval(SLUICE_HINT_PARALLEL) != MPI_KEYVAL_INVALID) printf("keyval not freed at MPI_Finalize\n");
    return rc;
}
