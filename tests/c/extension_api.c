/* sluice's own extension API (include/sluice.h), resolved with dlsym so the same program also
 * runs without the shim: version, flavor, disable/enable at run time, stats dump. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>
#include "check.h"
#include "../../include/sluice.h"

int main(int argc, char **argv) {
    MPI_CHECK(MPI_Init(&argc, &argv));
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int (*is_enabled)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "sluice_is_enabled");
    int (*disable)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "sluice_disable");
    int (*enable)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "sluice_enable");
    int (*dump)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "sluice_stats_dump");
    const char *(*flavor)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "sluice_mpi_flavor");
    int (*version)(int *, int *, int *) = (int (*)(int *, int *, int *))dlsym(RTLD_DEFAULT, "sluice_version");
    EXPECT(is_enabled && disable && enable && dump && flavor && version, "extension API not found");
    if (!is_enabled) return 1;
    int maj = -1, min = -1, pat = -1;
    version(&maj, &min, &pat);
    EXPECT(maj >= 0 && min >= 0 && pat >= 0, "version %d.%d.%d", maj, min, pat);
#ifdef MPICH_VERSION
    EXPECT(strcmp(flavor(), "mpich") == 0, "flavor %s", flavor());
#else
    EXPECT(strcmp(flavor(), "openmpi") == 0, "flavor %s", flavor());
#endif
    EXPECT(is_enabled() == 1, "not enabled after MPI_Init");
    int x = rank, y = -1, right = (rank + 1) % size, left = (rank + size - 1) % size;
    /* 3 Sendrecv counted, then 5 uncounted while disabled, then 2 counted again. */
    for (int i = 0; i < 3; i++)
        MPI_CHECK(MPI_Sendrecv(&x, 1, MPI_INT, right, i, &y, 1, MPI_INT, left, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    disable();
    EXPECT(is_enabled() == 0, "still enabled after sluice_disable");
    for (int i = 0; i < 5; i++)
        MPI_CHECK(MPI_Sendrecv(&x, 1, MPI_INT, right, i, &y, 1, MPI_INT, left, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    EXPECT(enable() == 1 && is_enabled() == 1, "enable failed");
    for (int i = 0; i < 2; i++)
        MPI_CHECK(MPI_Sendrecv(&x, 1, MPI_INT, right, i, &y, 1, MPI_INT, left, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    EXPECT(y == left, "sendrecv got %d", y);
    EXPECT(dump() == 0, "stats dump failed");

    /* A type freed while sluice is disabled: its handle may come back for a new type, which
     * MPI_Pack must then pack with the new layout once sluice is enabled again. */
    double src[64], a[64], b[64];
    for (int i = 0; i < 64; i++) src[i] = i;
    MPI_Datatype t, u;
    int pa = 0, pb = 0;
    MPI_CHECK(MPI_Type_vector(4, 1, 3, MPI_DOUBLE, &t));
    MPI_CHECK(MPI_Type_commit(&t));
    MPI_CHECK(MPI_Pack(src, 1, t, a, sizeof a, &pa, MPI_COMM_WORLD));
    disable();
    MPI_CHECK(MPI_Type_free(&t));
    int bl[2] = {2, 3}, d[2] = {7, 20};
    MPI_CHECK(MPI_Type_indexed(2, bl, d, MPI_DOUBLE, &u));
    MPI_CHECK(MPI_Type_commit(&u));
    enable();
    pa = pb = 0;
    MPI_CHECK(MPI_Pack(src, 1, u, a, sizeof a, &pa, MPI_COMM_WORLD));
    MPI_CHECK(PMPI_Pack(src, 1, u, b, sizeof b, &pb, MPI_COMM_WORLD));
    EXPECT(pa == pb && pa == 40 && memcmp(a, b, 40) == 0, "pack after disable/free/enable: %d vs %d", pa, pb);
    MPI_CHECK(MPI_Type_free(&u));
    int rc = report_verdict("extension_api");
    MPI_CHECK(MPI_Finalize());
    return rc;
}
