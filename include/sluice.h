/* sluice: public C header of sluice's own extension API.
 *
 * Applications never need this header: sluice works under unmodified MPI programs through
 * LD_PRELOAD. Include it (and link -lsluice, or resolve the symbols with dlsym) to query or
 * steer sluice at run time. Every function is safe to call from any thread; none of them
 * unwinds or aborts. */
#ifndef SLUICE_H
#define SLUICE_H

#include <stddef.h>
#include <stdint.h>

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
 * sluice's datatype worker threads are stopped (they start again when needed).
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

/* Whether sluice's datatype engine serves `type`: 1, with the name of the kernel compiled for it
 * in *kernel (when kernel is not NULL; a static string: "contig", "strided-1" .. "strided-3",
 * "strided-n", "block-indexed", "indexed", "small-runs", "nested" or "interp", followed by
 * "+mpi-pack", "+mpi-unpack" or "+mpi" once the type's calls showed the MPI's engine faster in
 * that direction and it was chosen: SLUICE_PACK_ENGINE), or 0 when the MPI's own engine does everything
 * (predefined, uncommitted or undecodable types; SLUICE_DATATYPE=0; before MPI_Init).
 * Declared when <mpi.h> is included first. */
#ifdef MPI_VERSION
int sluice_type_kernel(MPI_Datatype type, const char **kernel);
#endif

/* ---- Datatype hints for parallel (checkpointed) processing ---------------------------------
 *
 * sluice creates three datatype keyvals in MPI_Init and frees them in MPI_Finalize. Set a hint
 * with MPI_Type_set_attr(type, sluice_type_keyval(SLUICE_HINT_...), value); remove it with
 * MPI_Type_delete_attr. MPI_Type_dup copies the hints to the duplicate.
 *
 * The attribute value IS the hint: an integer carried in the void * itself (use the macros
 * below), never a pointer sluice dereferences, so there is nothing to keep alive. This is also
 * exactly what Fortran stores: CALL MPI_TYPE_SET_ATTR(type, keyval, 0_MPI_ADDRESS_KIND, ierror),
 * with keyval from an interface to sluice_type_keyval (BIND(C), INTEGER(C_INT), VALUE).
 *
 *   SLUICE_HINT_PARALLEL  0: never process this type on several workers; any other value:
 *                         allowed (the default; SLUICE_PARALLEL_MIN, off by default,
 *                         SLUICE_THREADS and epsilon still decide).
 *   SLUICE_HINT_EPSILON   epsilon in millionths, 1 to 10000000 (SLUICE_EPSILON(0.2) = 200000):
 *                         replaces SLUICE_CKPT_EPSILON for this type. Parallel processing is used
 *                         only when waking the workers costs at most epsilon of each worker's
 *                         share of the operation. Values out of range are ignored.
 *   SLUICE_HINT_PRIORITY  priority of this type's checkpoint tables in the SLUICE_CKPT_MEMORY
 *                         budget: higher is evicted later, and a table never evicts one of higher
 *                         priority. Default 0; any int.
 *
 * Hints are read at each MPI_Pack/MPI_Unpack large enough for parallel processing, so setting,
 * changing or deleting one takes effect at the next such call. SLUICE_STATS=1 shows their
 * effect: rows ddt-parallel (operations run on several workers) and ddt-ckpt (checkpoint tables
 * built). While sluice_disable() is in effect, hints are ignored. */
#define SLUICE_HINT_PARALLEL 0
#define SLUICE_HINT_EPSILON 1
#define SLUICE_HINT_PRIORITY 2

/* Attribute values. */
#define SLUICE_PARALLEL_OFF ((void *)(intptr_t)0)
#define SLUICE_PARALLEL_ON ((void *)(intptr_t)1)
#define SLUICE_EPSILON(e) ((void *)(intptr_t)((double)(e) * 1e6 + 0.5))
#define SLUICE_PRIORITY(p) ((void *)(intptr_t)(p))

/* The keyval of hint `which` (SLUICE_HINT_*), or MPI_KEYVAL_INVALID before MPI_Init, after
 * MPI_Finalize, with SLUICE_DISABLE=1 and for any other `which`: check before setting hints.
 * (After sluice_disable(), MPI_Finalize passes straight through and the keyvals are not freed
 * by sluice; the MPI releases them with everything else.) A function rather than exported variables: it can
 * be declared weak or found with dlsym by programs that must also run without sluice, and
 * called from Fortran through BIND(C). */
int sluice_type_keyval(int which);

/* ---- Copies between memories: the transfer runtime (docs/runtime.md) ------------------------
 *
 * sluice_copy moves the data of one place into another: host memory or a file, each laid out
 * as `count` elements of an MPI datatype (any committed or predefined type; the two type
 * signatures must hold the same number of bytes, as for a send and its receive). The layouts
 * may differ: the copy converts between them (a transpose, a gather into a contiguous buffer,
 * a scatter into a file). sluice plans a path over this host's machine model (SLUICE_CALIBRATION)
 * and runs it in the background, pipelined through bounded buffers, on worker threads that never
 * call MPI. A file place's bytes outside its layout are kept (read, modified, written back).
 *
 * Call between MPI_Init and MPI_Finalize, from any thread. The buffers and file ranges must stay
 * valid and untouched by the application until the event completes; the file descriptor open
 * (for reading a source, for writing a destination, reading too when its layout has gaps).
 *
 * Returns SLUICE_SUCCESS or one of the error codes below (nothing is written then, *event is
 * NULL, and a message is printed at warning level, SLUICE_LOG). */
#define SLUICE_SUCCESS 0
#define SLUICE_ERR_ARG (-2)             /* null pointer, unknown kind, negative count, closed fd */
#define SLUICE_ERR_TYPE (-3)            /* MPI_DATATYPE_NULL or a type sluice cannot decode */
#define SLUICE_ERR_SIZE (-4)            /* source and destination hold different amounts of data */
#define SLUICE_ERR_NOT_INITIALIZED (-5) /* before MPI_Init or after MPI_Finalize */
#define SLUICE_ERR_IO (-6)              /* the copy failed while running (from wait/test) */
#define SLUICE_ERR_PATH (-7)            /* the machine model has no path between the places */
#define SLUICE_ERR_THREAD (-8)          /* sluice_rma_init: the MPI is not at MPI_THREAD_MULTIPLE */
#define SLUICE_ERR_REMOTE (-9)          /* put/get: the target refused the range (from wait/test) */

#define SLUICE_PLACE_HOST 1
#define SLUICE_PLACE_FILE 2

typedef struct sluice_event_s *sluice_event_t;
#define SLUICE_EVENT_NULL ((sluice_event_t)0)

#ifdef MPI_VERSION
typedef struct {
    int kind;              /* SLUICE_PLACE_HOST or SLUICE_PLACE_FILE */
    void *base;            /* HOST: the buffer, as in an MPI call */
    int fd;                /* FILE: an open file descriptor */
    MPI_Offset offset;     /* FILE: the file position the datatype's displacements start from */
    MPI_Count count;       /* elements of datatype */
    MPI_Datatype datatype; /* its layout */
} sluice_place_t;

/* Starts the copy; *event receives its event (wait for it or test it). `priority`: a copy of
 * higher priority goes ahead of queued requests of lower ones on every channel they share. */
int sluice_copy(const sluice_place_t *src, const sluice_place_t *dst, int priority, sluice_event_t *event);

/* Writes the plan a copy from src to dst would run (EXPLAIN-style: one line per hop with its
 * channel, memories, request size and predicted throughput) into text, NUL-terminated and
 * truncated to size bytes. Returns the length of the whole text, or an error code. */
int sluice_plan_explain(const sluice_place_t *src, const sluice_place_t *dst, char *text, int size);
#endif

/* A file descriptor for a file place, for callers without one of their own (the Fortran module
 * `sluice`, include/sluice.f90, builds on it): flags SLUICE_FILE_READ, SLUICE_FILE_WRITE (reads
 * too: layouts with gaps are read, modified and written back) and SLUICE_FILE_CREATE (creates a
 * missing file, mode 0644, never truncates; implies WRITE). Returns the descriptor, or
 * SLUICE_ERR_ARG (null path, bad flags) or SLUICE_ERR_IO (the open failed; message printed).
 * sluice_file_close closes it: SLUICE_SUCCESS or SLUICE_ERR_IO. */
#define SLUICE_FILE_READ 1
#define SLUICE_FILE_WRITE 2
#define SLUICE_FILE_CREATE 4
int sluice_file_open(const char *path, int flags);
int sluice_file_close(int fd);

/* Waits for the copy, frees the event and sets *event to SLUICE_EVENT_NULL. Returns
 * SLUICE_SUCCESS, or SLUICE_ERR_IO if the copy failed (the message is printed). A null event
 * returns at once. */
int sluice_event_wait(sluice_event_t *event);

/* Sets *flag to 1 (and frees the event, as sluice_event_wait) if the copy completed, else 0. */
int sluice_event_test(sluice_event_t *event, int *flag);

/* ---- One-sided puts and gets through firehoses (docs/firehose.md) ---------------------------
 *
 * sluice_rma_init opens the service; collective over MPI_COMM_WORLD, after MPI_Init (again: no
 * effect). It needs the MPI at MPI_THREAD_MULTIPLE (MPI_Init_thread with it, or
 * SLUICE_PROGRESS_THREAD=1): a service thread serves other processes' move requests while this
 * one is inside any MPI call or computing. Returns SLUICE_SUCCESS, SLUICE_ERR_THREAD,
 * SLUICE_ERR_ARG (SLUICE_FIREHOSE_* differ between processes, or leave no firehose) or
 * SLUICE_ERR_NOT_INITIALIZED. MPI_Finalize closes it.
 *
 * sluice_put writes len bytes from local to address `remote` of world rank `rank`; sluice_get
 * reads them from there into local. The remote address is one of the target's own (sent to the
 * initiator by the application, e.g. in a message). The local buffer must stay valid until the
 * event completes; when sluice_event_wait/test report success the data is at the target (put)
 * or here (get). Refused at once (nothing moves, *event NULL, message printed): SLUICE_ERR_ARG
 * (bad rank, null buffer, range wrapping around), SLUICE_ERR_NOT_INITIALIZED (no sluice_rma_init).
 * From wait/test: SLUICE_ERR_REMOTE when the target refused the range (not mapped there, not
 * writable for a put, or its firehose memory is full) -- nothing was written -- or SLUICE_ERR_IO
 * when the MPI failed the transfer. */
int sluice_rma_init(void);
int sluice_put(int rank, uint64_t remote, const void *local, size_t len, sluice_event_t *event);
int sluice_get(int rank, uint64_t remote, void *local, size_t len, sluice_event_t *event);

/* Benchmarks: how this process's later puts and gets reach remote memory, the paper's two
 * baselines beside firehoses: RENDEZVOUS = a handshake per operation (the target pins and
 * attaches), the data, a second handshake (unpin, detach); RENDEZVOUS_KEEP = a handshake per
 * operation and the target keeps everything pinned for good (unbounded). Call with no
 * operation in flight. Returns the previous strategy or an error code. */
#define SLUICE_RMA_FIREHOSE 0
#define SLUICE_RMA_RENDEZVOUS 1
#define SLUICE_RMA_RENDEZVOUS_KEEP 2
int sluice_rma_strategy(int strategy);

/* Pieces of this process's puts and gets that found their firehoses mapped (moved one-sided at
 * once), and move requests plus handshakes it sent. Returns 0. */
int sluice_rma_counters(long *one_sided, long *moves);

/* This process's registration manager now (each pointer may be NULL): bytes pinned, bytes kept
 * pinned in the victim FIFO, bytes referenced by other processes' firehoses, the most bytes
 * pinned at once, and the firehoses other processes map onto this one. Returns 0. */
int sluice_pin_state(long *pinned, long *victims, long *remote, long *high, long *firehoses);

#ifdef __cplusplus
}
#endif
#endif /* SLUICE_H */
