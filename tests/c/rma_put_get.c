/* One-sided puts and gets through firehoses (sluice_put, sluice_get; docs/firehose.md), linked
 * against sluice. Run with a small SLUICE_FIREHOSE_M so that operations split into pieces,
 * firehoses move and victims are evicted:
 *   - every rank puts patterns of many sizes (1 byte to several times F buckets, unaligned)
 *     into disjoint parts of every other rank's window buffer, and gets them back;
 *   - the target sits in MPI_Barrier, in MPI_Allreduce and in a blocking MPI_Recv while its
 *     memory is put to / read (move requests must be served there);
 *   - several threads put and get at once;
 *   - an unmapped remote range and a read-only one are refused with SLUICE_ERR_REMOTE and
 *     nothing is written; bad arguments are refused at once;
 *   - the pinned amount never exceeds M + MAXVICTIM (sluice_pin_state).
 * Argument "single": initialized without MPI_THREAD_MULTIPLE, sluice_rma_init must refuse. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "sluice.h"

#define REGION (1 << 20) /* bytes each writer owns in each target's buffer */

static int rank, size;
static unsigned char *buf;   /* size * REGION bytes: region w is written by rank w */
static uint64_t *bases;      /* every rank's buf */

static unsigned char pattern(int writer, int target, size_t i) {
    return (unsigned char)(writer * 37 + target * 11 + i * 7 + (i >> 9));
}

static void wait_ok(sluice_event_t *ev, const char *what) {
    int rc = sluice_event_wait(ev);
    EXPECT(rc == SLUICE_SUCCESS, "%s: event %d", what, rc);
    EXPECT(*ev == SLUICE_EVENT_NULL, "%s: event not reset", what);
}

/* Rank `rank` writes its region of target t: `len` bytes at offset `off`, from a local copy. */
static void put_piece(int t, size_t off, size_t len) {
    unsigned char *src = malloc(len + 1);
    for (size_t i = 0; i < len; i++) src[i] = pattern(rank, t, off + i);
    sluice_event_t ev;
    int rc = sluice_put(t, bases[t] + (uint64_t)rank * REGION + off, src, len, &ev);
    EXPECT(rc == SLUICE_SUCCESS, "put to %d: %d", t, rc);
    if (rc == SLUICE_SUCCESS) wait_ok(&ev, "put");
    free(src);
}

static void get_check(int t, int writer, size_t off, size_t len) {
    unsigned char *dst = malloc(len + 2);
    memset(dst, 0xEE, len + 2);
    sluice_event_t ev;
    int rc = sluice_get(t, bases[t] + (uint64_t)writer * REGION + off, dst + 1, len, &ev);
    EXPECT(rc == SLUICE_SUCCESS, "get from %d: %d", t, rc);
    if (rc == SLUICE_SUCCESS) wait_ok(&ev, "get");
    size_t bad = 0;
    for (size_t i = 0; i < len; i++) bad += dst[1 + i] != pattern(writer, t, off + i);
    EXPECT(bad == 0, "get from %d (writer %d, off %zu, len %zu): %zu bytes differ", t, writer, off, len, bad);
    EXPECT(dst[0] == 0xEE && dst[len + 1] == 0xEE, "get wrote outside its buffer");
    free(dst);
}

/* Sizes and offsets that cross pages and buckets, and span several times F buckets. */
static const size_t sizes[] = {1, 8, 100, 4095, 4096, 4097, 65536, 300000, 700001};
static const size_t offs[] = {0, 0, 4000, 8191, 12288, 20000, 100000, 140000, 300000};
#define NCASES (sizeof sizes / sizeof sizes[0])

static void check_own_buffer(void) {
    size_t bad = 0;
    for (int w = 0; w < size; w++) {
        if (w == rank) continue;
        for (size_t c = 0; c < NCASES; c++)
            for (size_t i = 0; i < sizes[c]; i++)
                bad += buf[(size_t)w * REGION + offs[c] + i] != pattern(w, rank, offs[c] + i);
    }
    EXPECT(bad == 0, "%zu bytes of this rank's buffer differ from what was put", bad);
}

struct thread_arg { int t; int id; };
static void *thread_main(void *p) {
    struct thread_arg *a = p;
    /* Each thread owns 64 KiB of this rank's region at the target, beyond the cases' range. */
    size_t off = REGION / 2 + (size_t)a->id * 65536;
    for (int rep = 0; rep < 4; rep++) {
        put_piece(a->t, off + rep * 1000, 9000);
        get_check(a->t, rank, off + rep * 1000, 9000);
    }
    return NULL;
}

static void refusals(void) {
    int t = (rank + 1) % size;
    sluice_event_t ev;
    char local[64] = {0};
    EXPECT(sluice_put(-1, bases[t], local, 8, &ev) == SLUICE_ERR_ARG && ev == SLUICE_EVENT_NULL, "bad rank accepted");
    EXPECT(sluice_put(size, bases[t], local, 8, &ev) == SLUICE_ERR_ARG, "rank = size accepted");
    EXPECT(sluice_put(t, bases[t], NULL, 8, &ev) == SLUICE_ERR_ARG, "null buffer accepted");
    EXPECT(sluice_get(t, UINT64_MAX - 4, local, 8, &ev) == SLUICE_ERR_ARG, "wrapping range accepted");
    EXPECT(sluice_put(t, bases[t], local, 8, NULL) == SLUICE_ERR_ARG, "null event accepted");
    EXPECT(sluice_put(t, bases[t], local, 0, &ev) == SLUICE_SUCCESS && sluice_event_wait(&ev) == SLUICE_SUCCESS, "empty put");

    /* Remote pages that are not mapped, and one that is read-only, announced by the target. */
    long page = sysconf(_SC_PAGESIZE);
    unsigned char *ro = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(ro, 0x42, 3 * page);
    mprotect(ro + page, page, PROT_READ);
    munmap(ro + 2 * page, page);
    uint64_t mine[2] = {(uint64_t)(uintptr_t)(ro + page), (uint64_t)(uintptr_t)(ro + 2 * page)}, theirs[2];
    int from = (rank + size - 1) % size;
    MPI_CHECK(MPI_Sendrecv(mine, 2, MPI_UINT64_T, from, 7, theirs, 2, MPI_UINT64_T, t, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    memset(local, 0x99, sizeof local);
    int rc = sluice_put(t, theirs[1], local, 16, &ev);
    EXPECT(rc == SLUICE_SUCCESS && sluice_event_wait(&ev) == SLUICE_ERR_REMOTE, "put to unmapped memory not refused (%d)", rc);
    rc = sluice_get(t, theirs[1] + 8, local, 16, &ev);
    EXPECT(rc == SLUICE_SUCCESS && sluice_event_wait(&ev) == SLUICE_ERR_REMOTE, "get from unmapped memory not refused");
    rc = sluice_put(t, theirs[0] + 100, local, 16, &ev);
    EXPECT(rc == SLUICE_SUCCESS && sluice_event_wait(&ev) == SLUICE_ERR_REMOTE, "put to read-only memory not refused");
    rc = sluice_get(t, theirs[0] + 100, local, 16, &ev);
    EXPECT(rc == SLUICE_SUCCESS && sluice_event_wait(&ev) == SLUICE_SUCCESS && local[0] == 0x42 && local[15] == 0x42, "get from read-only memory");
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    size_t changed = 0;
    for (long i = 0; i < 2 * page; i++) changed += ro[i] != 0x42;
    EXPECT(changed == 0, "a refused put wrote %zu bytes", changed);
}

int main(int argc, char **argv) {
    int single = argc > 1 && strcmp(argv[1], "single") == 0, provided;
    MPI_CHECK(MPI_Init_thread(&argc, &argv, single ? MPI_THREAD_SINGLE : MPI_THREAD_MULTIPLE, &provided));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (single) {
        int rc = sluice_rma_init();
        EXPECT(rc == SLUICE_ERR_THREAD, "sluice_rma_init without MPI_THREAD_MULTIPLE returned %d", rc);
        sluice_event_t ev;
        char c;
        EXPECT(sluice_put(0, 1, &c, 1, &ev) == SLUICE_ERR_NOT_INITIALIZED, "put before sluice_rma_init");
        int v = report_verdict("rma_single");
        MPI_Finalize();
        return v;
    }
    EXPECT(provided == MPI_THREAD_MULTIPLE, "thread level %d", provided);
    if (getenv("RMA_EXPECT_NO_WINDOW")) {
        /* An MPI that cannot create the window (Open MPI 4.1 across nodes over TCP at
         * MPI_THREAD_MULTIPLE): refused cleanly, nothing else breaks, puts are refused. */
        int rc = sluice_rma_init();
        EXPECT(rc == SLUICE_ERR_IO, "sluice_rma_init without a window returned %d", rc);
        sluice_event_t ev;
        char c;
        EXPECT(sluice_put(0, 1, &c, 1, &ev) == SLUICE_ERR_NOT_INITIALIZED, "put without the service");
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        int v = report_verdict("rma_put_get");
        MPI_Finalize();
        return v;
    }
    MPI_CHECK(sluice_rma_init() == SLUICE_SUCCESS ? MPI_SUCCESS : MPI_ERR_OTHER);
    MPI_CHECK(sluice_rma_init() == SLUICE_SUCCESS ? MPI_SUCCESS : MPI_ERR_OTHER);

    buf = aligned_alloc(4096, (size_t)size * REGION);
    memset(buf, 0, (size_t)size * REGION);
    bases = malloc(size * sizeof *bases);
    uint64_t me = (uint64_t)(uintptr_t)buf;
    MPI_CHECK(MPI_Allgather(&me, 1, MPI_UINT64_T, bases, 1, MPI_UINT64_T, MPI_COMM_WORLD));

    /* 1. Puts into every other rank, gets back. */
    for (int k = 1; k < size; k++) {
        int t = (rank + k) % size;
        for (size_t c = 0; c < NCASES; c++) put_piece(t, offs[c], sizes[c]);
    }
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    check_own_buffer();
    for (int k = 1; k < size; k++) {
        int t = (rank + k) % size;
        int w = (t + 1) % size; /* a writer's region at t (never t itself) */
        for (size_t c = 0; c < NCASES; c++) get_check(t, w, offs[c], sizes[c]);
    }

    /* 2. Targets inside blocking MPI calls: rank 1 enters a barrier, an allreduce, then a
     * receive, while rank 0 puts to and reads from fresh parts of its memory. */
    if (size >= 2 && rank <= 1) {
        MPI_Comm pair;
        MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &pair));
        for (int round = 0; round < 3; round++) {
            size_t off = REGION / 4 + round * 70000;
            if (rank == 0) {
                put_piece(1, off, 60000);
                get_check(1, 0, off, 60000);
            }
            if (round == 0) MPI_CHECK(MPI_Barrier(pair));
            if (round == 1) {
                int one = 1, sum = 0;
                MPI_CHECK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, pair));
                EXPECT(sum == 2, "allreduce");
            }
            if (round == 2) {
                int token = 5;
                if (rank == 0) MPI_CHECK(MPI_Send(&token, 1, MPI_INT, 1, 3, pair));
                else MPI_CHECK(MPI_Recv(&token, 1, MPI_INT, 0, 3, pair, MPI_STATUS_IGNORE));
            }
        }
        MPI_Comm_free(&pair);
    } else if (size >= 2) {
        MPI_Comm other;
        MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, 1, rank, &other));
        MPI_Comm_free(&other);
    }
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));

    /* 3. Threads. */
    {
        pthread_t th[4];
        struct thread_arg a[4];
        for (int i = 0; i < 4; i++) {
            a[i].t = (rank + 1 + i) % size;
            a[i].id = i;
            pthread_create(&th[i], NULL, thread_main, &a[i]);
        }
        for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    }
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));

    /* 4. The paper's baselines, for the benchmark: a handshake per operation, with and without
     * unpinning; the bytes must be the same. */
    for (int strategy = SLUICE_RMA_RENDEZVOUS; strategy <= SLUICE_RMA_RENDEZVOUS_KEEP; strategy++) {
        EXPECT(sluice_rma_strategy(strategy) >= 0, "strategy %d", strategy);
        int t = (rank + 1) % size;
        size_t base = REGION * 7 / 8 + (strategy - 1) * 60000;
        put_piece(t, base, 8);
        put_piece(t, base + 1000, 50000);
        get_check(t, rank, base, 8);
        get_check(t, rank, base + 1000, 50000);
    }
    EXPECT(sluice_rma_strategy(SLUICE_RMA_FIREHOSE) == SLUICE_RMA_RENDEZVOUS_KEEP, "previous strategy");
    EXPECT(sluice_rma_strategy(7) == SLUICE_ERR_ARG, "unknown strategy accepted");
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));

    /* 5. Refusals. */
    refusals();

    /* 6. The bound. */
    long pinned, victims, remote, high, hoses;
    sluice_pin_state(&pinned, &victims, &remote, &high, &hoses);
    long m = atol(getenv("SLUICE_FIREHOSE_M") ? getenv("SLUICE_FIREHOSE_M") : "0");
    long v = atol(getenv("SLUICE_FIREHOSE_MAXVICTIM") ? getenv("SLUICE_FIREHOSE_MAXVICTIM") : "0");
    if (m > 0) EXPECT(high <= m + v && pinned <= m + v && remote <= m, "pinned %ld, high %ld, remote %ld > M %ld + MAXVICTIM %ld", pinned, high, remote, m, v);
    EXPECT(high > 0 && hoses > 0, "nothing was pinned (high %ld, firehoses %ld)", high, hoses);

    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    int verdict = report_verdict("rma_put_get");
    free(bases);
    MPI_Finalize();
    free(buf);
    return verdict;
}
