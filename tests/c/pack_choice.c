/* MPI_Pack / MPI_Unpack while sluice learns which engine serves each type (SLUICE_PACK_ENGINE):
 * every call of a type's first ones is split between sluice's kernel and the MPI's engine (by
 * piece for many elements, whole calls alternating for few), then one engine serves the type.
 * Each call here, through learning and after the decision, is checked byte for byte against the
 * MPI's own engine (PMPI_Pack / PMPI_Unpack) at an odd position after a prefix, and no byte
 * outside the packed range or the typemap may change. Rank 0 prints each type's kernel as
 * sluice_type_kernel reports it ("+mpi..." where the MPI's engine was chosen). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>
#include "check.h"
#include "pack_types.h"

#define BUF (8 << 20)
#define MID (4 << 20) /* where elements start: types with negative strides reach below */
#define CALLS 10
static int rank;
static unsigned char *src, *dst_a, *dst_b, *pk_a, *pk_b;

static void check_calls(MPI_Datatype t, const char *name, int count) {
    MPI_Aint lb, extent, tlb, text;
    MPI_Type_get_extent(t, &lb, &extent);
    MPI_Type_get_true_extent(t, &tlb, &text);
    int size;
    MPI_Type_size(t, &size);
    if ((MPI_Aint)size * count + 64 > BUF || MID + tlb + (count - 1) * extent + text > BUF || MID + tlb < 0) return;
    for (int call = 0; call < CALLS; call++) {
        for (int i = 0; i < BUF; i += 4096) src[i] = (unsigned char)(i / 4096 + call); /* data moves between calls */
        memset(pk_a, 0xAA, (size_t)size * count + 64); memset(pk_b, 0xAA, (size_t)size * count + 64);
        int pa = 7, pb = 7;
        MPI_CHECK(MPI_Pack(src + MID, count, t, pk_a, BUF, &pa, MPI_COMM_WORLD));
        MPI_CHECK(PMPI_Pack(src + MID, count, t, pk_b, BUF, &pb, MPI_COMM_WORLD));
        EXPECT(pa == pb && memcmp(pk_a, pk_b, (size_t)size * count + 64) == 0, "%s x%d call %d: packed bytes differ (pos %d vs %d)",
               name, count, call, pa, pb);
        memset(dst_a, 0x55, BUF); memset(dst_b, 0x55, BUF);
        pa = pb = 7;
        MPI_CHECK(MPI_Unpack(pk_b, BUF, &pa, dst_a + MID, count, t, MPI_COMM_WORLD));
        MPI_CHECK(PMPI_Unpack(pk_b, BUF, &pb, dst_b + MID, count, t, MPI_COMM_WORLD));
        EXPECT(pa == pb && memcmp(dst_a, dst_b, BUF) == 0, "%s x%d call %d: unpacked memory differs", name, count, call);
    }
}

static void report(MPI_Datatype t, const char *name) {
    int (*kernel_of)(MPI_Datatype, const char **) = (int (*)(MPI_Datatype, const char **))dlsym(RTLD_DEFAULT, "sluice_type_kernel");
    const char *k = "(no sluice)";
    if (kernel_of && !kernel_of(t, &k)) k = "(MPI)";
    if (rank == 0) printf("%s: kernel %s\n", name, k);
}

int main(int argc, char **argv) {
    MPI_CHECK(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    src = malloc(BUF); dst_a = malloc(BUF); dst_b = malloc(BUF); pk_a = malloc(BUF); pk_b = malloc(BUF);
    for (int i = 0; i < BUF; i++) src[i] = (unsigned char)(i * 131 + 17);
    MPI_Datatype t[NTYPES + NLARGE];
    const char *name[NTYPES + NLARGE];
    build(t, name);
    build_large(t + NTYPES, name + NTYPES); /* one call of one or two elements is learned from whole */
    int n = NTYPES + NLARGE;
    for (int i = 0; i < n; i++) {
        int size;
        MPI_Type_size(t[i], &size);
        int many = 20000 / (size ? size : 1) + 40; /* >= 20 KB and >= 40 elements: learned (by piece where pieces fit) */
        check_calls(t[i], name[i], many);
        check_calls(t[i], name[i], 1);
        check_calls(t[i], name[i], 2);
        check_calls(t[i], name[i], 3);
        report(t[i], name[i]);
    }
    for (int i = 0; i < n; i++) MPI_CHECK(MPI_Type_free(&t[i]));
    int rc = report_verdict("pack_choice");
    MPI_CHECK(MPI_Finalize());
    return rc;
}
