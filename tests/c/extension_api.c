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
    int rc = report_verdict("extension_api");
    MPI_CHECK(MPI_Finalize());
    return rc;
}
