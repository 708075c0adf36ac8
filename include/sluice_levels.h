/* sluice_levels: one portable interface that moves data and work down a memory hierarchy
 * (the Sequoia runtime interface, ../shared/papers/sequoia-multilevel-runtime.md, Figure 2;
 * docs/levels.md).
 *
 * A *runtime* straddles two memory levels: a parent (the top: one memory) and its children (the
 * bottom: one or more memories, each with its own processor). The top allocates arrays and
 * registers them under descriptors the application chooses; children see registered arrays only
 * through their descriptors and read or write them only with transfer lists (bulk, asynchronous
 * copies between a parent array and an array in the child's own memory). The top launches tasks
 * on ranges of children; a child may open the runtime of the next level pair below it, whose top
 * is the child's own memory. Runtimes know nothing of each other, so one program runs unchanged on
 * every composition of them; the composition is a string, not code:
 *
 *   "smp:4"              host memory over 4 worker threads
 *   "disk/smp:2@64M"     files over this process's memory (out of core: at most 64 MiB of it for
 *                        the arrays of the level below), over 2 threads
 *   "cluster/smp:2"      the ranks of MPI_COMM_WORLD (arrays distributed over them) over 2
 *                        threads per rank
 *
 * Grammar: LEVEL ('/' LEVEL)*, top first; LEVEL = KIND [':' CHILDREN] ['@' MEMORY] with KIND one
 * of smp (children: threads, default the CPUs this process may run on), disk (one child: this
 * process; files in SLUICE_LEVELS_DIR or $TMPDIR or /tmp) and cluster (children: the ranks; the
 * top is rank 0); MEMORY (bytes, K/M/G suffixes) bounds what the top of that runtime may allocate:
 * an allocation past it fails with SLUICE_LEVELS_ERR_NOMEM (an array counts its elements' bytes,
 * exactly). The spec comes from sluice_levels_open's argument, else the environment variable
 * SLUICE_LEVELS, else "smp". With a composition whose top is not `cluster`, every process that
 * opens it has a top of its own (ranks of an MPI job run independently).
 *
 * Every function returns SLUICE_SUCCESS (0) or an error code (a message is printed at warning
 * level, SLUICE_LOG); on an error nothing is allocated, registered, written or started. None of
 * them unwinds or aborts. */
#ifndef SLUICE_LEVELS_H
#define SLUICE_LEVELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef SLUICE_SUCCESS
#define SLUICE_SUCCESS 0
#define SLUICE_ERR_ARG (-2)             /* null pointer, negative or zero size, bad range */
#define SLUICE_ERR_NOT_INITIALIZED (-5) /* cluster: before MPI_Init or after MPI_Finalize */
#define SLUICE_ERR_IO (-6)              /* a file could not be created, read or written */
#define SLUICE_ERR_THREAD (-8)          /* cluster: the MPI is not at MPI_THREAD_MULTIPLE */
#endif
#define SLUICE_LEVELS_ERR_DESC (-20)   /* unknown descriptor, or one already in use */
#define SLUICE_LEVELS_ERR_BOUNDS (-21) /* a transfer reaches past the end of an array */
#define SLUICE_LEVELS_ERR_CHILD (-22)  /* a child id or range outside 0 .. children-1 */
#define SLUICE_LEVELS_ERR_NOMEM (-23)  /* past the level's memory bound, or no space on disk */
#define SLUICE_LEVELS_ERR_SPEC (-24)   /* the composition string cannot be parsed */
#define SLUICE_LEVELS_ERR_ROLE (-25)   /* a top call on a child's handle, or the reverse */
#define SLUICE_LEVELS_ERR_TASK (-26)   /* unknown task id, or arguments too large */
#define SLUICE_LEVELS_ERR_FREED (-27)  /* the array was freed already (double free) */

#define SLUICE_LEVELS_MAX_DIMS 4
/* The descriptor of an array in a child's own memory (sluice_array_local). */
#define SLUICE_ARRAY_LOCAL ((sluice_array_desc_t)-1)
/* Largest argument block a task call copies to its children. */
#define SLUICE_TASK_ARG_MAX 4096

/* A runtime as seen from its top (sluice_levels_open, sluice_level_below) or from one of its
 * children (the handle a task receives). */
typedef struct sluice_level_s *sluice_level_t;
typedef int64_t sluice_array_desc_t;
typedef struct sluice_xfer_list_s *sluice_xfer_list_t;
typedef struct sluice_xfer_s *sluice_xfer_t;
typedef struct sluice_task_s *sluice_task_t;

/* An array: `ndims` extents (row-major, the last varies fastest) of `elem_size`-byte elements.
 * `data` is element 0's address where this process can address the whole array (an array at the
 * top of an smp runtime, a local array), NULL where it cannot (a file, a distributed array):
 * a child that finds `data` set may compute on the parent's memory directly, and transfers whose
 * two sides are the same memory are elided (Sequoia's shared-namespace copy elimination). */
typedef struct {
    sluice_array_desc_t desc;
    void *data;
    size_t elem_size;
    int ndims;
    size_t dims[SLUICE_LEVELS_MAX_DIMS];
} sluice_array_t;

/* A task: runs on one child, `level` being that child's handle (valid until the task returns);
 * `arg` points to a copy of the block given to sluice_task_call (aligned to 8 bytes, valid until
 * the task returns). Tasks are named by their index in the table given to sluice_levels_open, so
 * that every process of a cluster means the same. A task returns nothing: it reports results
 * through arrays. */
typedef void (*sluice_task_fn)(sluice_level_t level, const void *arg, size_t arg_len);

/* What a runtime did so far (sluice_level_stats). */
typedef struct {
    uint64_t tasks;        /* child tasks started by this top (a cluster rank: run there) */
    uint64_t xfers;        /* transfer lists run (sluice_xfer calls) */
    uint64_t bytes;        /* bytes moved by them */
    uint64_t elided_bytes; /* bytes not moved: both sides were the same memory */
    uint64_t busy_ns;      /* time at least one transfer of this runtime was in flight (a cluster
                              top: the longest of any rank's) */
    uint64_t alive_ns;     /* time since the runtime was opened */
    uint64_t peak_bytes;   /* most bytes allocated at the top at once */
} sluice_level_stats_t;

/* ---- Creating and closing ------------------------------------------------------------------ */

/* Opens the runtime of the composition's top level pair; *top receives its top handle. For a
 * `cluster` top, collective over MPI_COMM_WORLD (after MPI_Init at MPI_THREAD_MULTIPLE): rank 0
 * receives the top handle, every other rank serves as a child until rank 0 closes the runtime and
 * then returns SLUICE_SUCCESS with *top = NULL. Other kinds need no MPI. */
int sluice_levels_open(const char *spec, const sluice_task_fn *tasks, int ntasks, sluice_level_t *top);

/* From a child's handle: opens the runtime of the next level pair of the same composition, whose
 * top is this child's memory (same task table); *below = NULL when this child is a leaf. */
int sluice_level_below(sluice_level_t child, sluice_level_t *below);

/* From the top: waits for running tasks, frees every array still allocated, stops the children
 * and frees the runtime; *top becomes NULL. Close a cluster runtime before MPI_Finalize (its
 * other ranks wait inside sluice_levels_open until it is closed). */
int sluice_level_close(sluice_level_t *top);

/* ---- Queries (either side) ------------------------------------------------------------------ */

/* This child's id, 0 .. siblings-1, or -1 on a top handle. */
int sluice_level_id(sluice_level_t level);
/* Number of children of the runtime. */
int sluice_level_siblings(sluice_level_t level);
/* "smp", "disk" or "cluster" (static storage); "" for a bad handle. */
const char *sluice_level_kind(sluice_level_t level);
/* Bytes the top of this runtime may still allocate (SIZE_MAX: no bound). */
size_t sluice_level_memory(sluice_level_t level);
/* Counters of the runtime. From a top handle: the whole runtime's (a cluster top adds every
 * rank's transfers; call it while no task runs there, it waits for them); from a child's: this
 * process's. */
int sluice_level_stats(sluice_level_t level, sluice_level_stats_t *stats);

/* ---- Top interface -------------------------------------------------------------------------- */

/* Allocates an array at the top (`alignment`: a power of two, 0 for the default) and describes it
 * in *array under descriptor `desc` (>= 0). Not yet visible to children: sluice_array_add. */
int sluice_array_alloc(sluice_level_t top, size_t elem_size, int ndims, const size_t *dims,
                       sluice_array_desc_t desc, size_t alignment, sluice_array_t *array);
/* As sluice_array_alloc, choosing how a top spread over its children (a cluster: the ranks'
 * memories) distributes the array: blocks of `block_rows` rows (rows: the first extent; a block
 * larger than the array is the whole array), block k in the memory of child k mod children
 * (block-cyclic; Sequoia 3.4), so that a task can work where its data is (sluice_array_home).
 * 0: one block per child, dims[0]/children rows rounded up (what sluice_array_alloc does). A
 * top of one memory (smp, disk) has nothing to distribute and ignores `block_rows`. */
int sluice_array_alloc_cyclic(sluice_level_t top, size_t elem_size, int ndims, const size_t *dims,
                              sluice_array_desc_t desc, size_t alignment, size_t block_rows,
                              sluice_array_t *array);
/* Frees an array of this top (removing its registration if any); array->data becomes NULL.
 * Freeing twice returns SLUICE_LEVELS_ERR_FREED. */
int sluice_array_free(sluice_level_t top, sluice_array_t *array);
/* Registers an array this top allocated, under its descriptor. */
int sluice_array_add(sluice_level_t top, const sluice_array_t *array);
/* Unregisters the array of descriptor `desc` (it stays allocated). */
int sluice_array_remove(sluice_level_t top, sluice_array_desc_t desc);

/* Runs task `task` on children start .. end-1 (0 <= start < end <= siblings), each with a copy
 * of arg[0 .. arg_len) (at most SLUICE_TASK_ARG_MAX bytes); asynchronous: *handle completes when
 * every one of them returned. */
int sluice_task_call(sluice_level_t top, int task, int start, int end, const void *arg,
                     size_t arg_len, sluice_task_t *handle);
/* Waits for a task call, frees the handle and sets it to NULL. */
int sluice_task_wait(sluice_level_t top, sluice_task_t *handle);

/* ---- Either side ---------------------------------------------------------------------------- */

/* The registered array of descriptor `desc`. */
int sluice_array_get(sluice_level_t level, sluice_array_desc_t desc, sluice_array_t *array);
/* *child = the child whose memory holds element `index` (of the flattened array) of the
 * registered array `desc` (a cluster top's: the rank), or -1 where the whole array is in the
 * top's one memory (smp, disk). SLUICE_LEVELS_ERR_BOUNDS if `index` is past the end. */
int sluice_array_home(sluice_level_t level, sluice_array_desc_t desc, size_t index, int *child);

/* ---- Bottom interface ----------------------------------------------------------------------- */

/* Describes memory of this child (an array of the level below's top, or the child's own buffer)
 * as an array with descriptor SLUICE_ARRAY_LOCAL. */
int sluice_array_local(void *data, size_t elem_size, int ndims, const size_t *dims, sluice_array_t *array);

/* A transfer list: `count` runs of lengths[i] elements, from src at element src_idx[i] to dst at
 * element dst_idx[i] (indices into the flattened, row-major array). One of dst and src is a
 * registered array of this runtime's top (named by its descriptor), the other a local array;
 * both have the same element size. Checked here: every run inside both arrays. The index and
 * length arrays are copied: they may be freed or reused once this returns. */
int sluice_xfer_list_create(sluice_level_t child, const sluice_array_t *dst, const sluice_array_t *src,
                            const size_t *dst_idx, const size_t *src_idx, const size_t *lengths,
                            size_t count, sluice_xfer_list_t *list);
int sluice_xfer_list_free(sluice_xfer_list_t *list);
/* Starts a transfer list (asynchronous; the local array must stay valid until it completes). */
int sluice_xfer(sluice_level_t child, sluice_xfer_list_t list, sluice_xfer_t *xfer);
/* Waits for a transfer, frees the handle and sets it to NULL; SLUICE_ERR_IO if it failed. */
int sluice_xfer_wait(sluice_level_t child, sluice_xfer_t *xfer);

/* Barrier among children start .. end-1; the calling child must be one of them, and every one of
 * them must call it with the same range. */
int sluice_level_barrier(sluice_level_t child, int start, int end);

#ifdef __cplusplus
}
#endif
#endif /* SLUICE_LEVELS_H */
