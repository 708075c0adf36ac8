/* sluice: public C header of sluice's own extension API.
 *
 * Applications never need this header: sluice works under unmodified MPI programs through
 * LD_PRELOAD. Include it (and link -lsluice, or resolve the symbols with dlsym) to query or
 * steer sluice at run time. Every function is safe to call from any thread; none of them
 * unwinds or aborts. */
#ifndef SLUICE_H
#define SLUICE_H

#ifdef __cplusplus
extern "C" {
#endif

/* Writes sluice's version (each pointer may be NULL). Returns 0. */
int sluice_version(int *major, int *minor, int *patch);

/* "MAJOR.MINOR.PATCH", static storage. */
const char *sluice_version_string(void);

/* The MPI ABI this libsluice.so was built for: "openmpi" or "mpich". */
const char *sluice_mpi_flavor(void);

/* Resumes interception after sluice_disable(). Has no effect when SLUICE_DISABLE=1 or before
 * MPI_Init. Returns 1 if calls now go through sluice, else 0. */
int sluice_enable(void);

/* Every MPI call made after this returns is a pure pass-through to the MPI. Returns 0, or -1
 * (nothing changes) while sluice still owns point-to-point requests: complete them first.
 * Datatypes compiled so far are forgotten (MPI_Type_free is not tracked while disabled); after
 * sluice_enable() they are packed by the MPI's engine until committed again. */
int sluice_disable(void);

/* 1 if calls currently go through sluice, else 0. */
int sluice_is_enabled(void);

/* Collective over MPI_COMM_WORLD: rank 0 prints the job-wide statistics gathered so far (as
 * SLUICE_STATS=1 does at MPI_Finalize). Returns 0, or -1 when MPI is not initialized. */
int sluice_stats_dump(void);

/* Point-to-point requests sluice still tracks and staging buffers in use (null pointers are
 * skipped). Both are 0 once every request of non-contiguous data completed or was freed and
 * every persistent request was freed: a leak check for tests. Returns 0. */
int sluice_p2p_outstanding(long *requests, long *staging_buffers);

#ifdef __cplusplus
}
#endif
#endif /* SLUICE_H */
