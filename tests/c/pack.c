/* MPI_Pack / MPI_Unpack / MPI_Pack_size through sluice's datatype engine, checked byte for byte
 * against the MPI's own engine (PMPI_Pack / PMPI_Unpack / PMPI_Pack_size, which bypass sluice),
 * for many derived types; error classes for bad arguments must equal the MPI's own and reach the
 * communicator's error handler, with no byte written outside the caller's buffers; handles
 * reused after MPI_Type_free must use the new type's layout; data packed on one side by sluice
 * and unpacked by the bare MPI on the other (and the reverse) must agree. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
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

/* Bad arguments on a communicator with the application's own error handler: the handler runs
 * exactly once per failing call with the class the call returns, the class is the MPI's own
 * (where the bare MPI can be called with the same arguments without writing out of bounds), and
 * no byte outside the caller's buffers changes. */
static int handler_calls, handler_class;
static void count_errors(MPI_Comm *c, int *code, ...) {
    (void)c;
    handler_calls++;
    MPI_Error_class(*code, &handler_class);
}

/* Runs `call` (an expression assigning rc) and checks the handler saw exactly what it returned. */
#define VIA_HANDLER(what, call)                                                                   \
    do {                                                                                          \
        handler_calls = 0; handler_class = -1;                                                    \
        int rc = (call);                                                                          \
        int cls = err_class(rc);                                                                  \
        EXPECT(rc != MPI_SUCCESS && handler_calls == 1 && handler_class == cls,                   \
               "%s: rc class %d, handler called %d times with class %d", what, rc ? cls : 0,      \
               handler_calls, handler_class);                                                     \
        last_class = cls;                                                                          \
    } while (0)

/* VIA_HANDLER for sluice's `call`, then the bare MPI's `mpi_call`: the same class, and the
 * handler called once for it too. */
#define SAME_AS_MPI(what, call, mpi_call)                                                         \
    do {                                                                                          \
        VIA_HANDLER(what, call);                                                                  \
        handler_calls = 0;                                                                        \
        int cm_ = err_class(mpi_call);                                                            \
        EXPECT(last_class == cm_ && handler_calls == 1, "%s: %s: class %d vs MPI %d", name, what, \
               last_class, cm_);                                                                  \
    } while (0)

static int untouched(const unsigned char *p, int from, int to, unsigned char v) {
    for (int i = from; i < to; i++) if (p[i] != v) return 0;
    return 1;
}

static void errors_reach_the_handler(MPI_Datatype t, const char *name) {
    MPI_Comm ec;
    MPI_Errhandler eh;
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &ec));
    MPI_CHECK(MPI_Comm_create_errhandler(count_errors, &eh));
    MPI_CHECK(MPI_Comm_set_errhandler(ec, eh));
    int last_class = -1, psize = 0, pos, pm, cm;
    MPI_CHECK(PMPI_Pack_size(1, t, ec, &psize));
    /* Buffers live inside pk_a / dst_a at offset 4096, with 0xAA / 0x55 guards on both sides. */
    unsigned char *out = pk_a + 4096;
    memset(pk_a, 0xAA, BUF);
    /* A negative position: both MPIs write before the buffer and return success (measured), so
     * only sluice is called; it raises MPI_ERR_ARG and writes nothing. */
    pos = -4;
    VIA_HANDLER("negative position (pack)", MPI_Pack(src + 4096, 1, t, out, psize + 64, &pos, ec));
    EXPECT(last_class == MPI_ERR_ARG && pos == -4, "%s: negative position: class %d, position %d", name, last_class, pos);
    EXPECT(untouched(pk_a, 0, BUF, 0xAA), "%s: negative position: bytes written", name);
    pos = -1;
    memset(dst_a, 0x55, BUF);
    VIA_HANDLER("negative position (unpack)", MPI_Unpack(out, psize + 64, &pos, dst_a + 4096, 1, t, ec));
    EXPECT(last_class == MPI_ERR_ARG && untouched(dst_a, 0, BUF, 0x55), "%s: unpack at a negative position", name);
    /* A position past the end: MPICH writes past the buffer (measured), Open MPI raises
     * MPI_ERR_TRUNCATE; sluice raises MPI_ERR_TRUNCATE on both and writes nothing. */
    if (psize > 0) {
        pos = 64 + 1;
        VIA_HANDLER("position past the end (pack)", MPI_Pack(src + 4096, 1, t, out, 64, &pos, ec));
        EXPECT(last_class == MPI_ERR_TRUNCATE && pos == 65 && untouched(pk_a, 0, BUF, 0xAA), "%s: position past the end: class %d", name, last_class);
        pos = 64 + 1;
        VIA_HANDLER("position past the end (unpack)", MPI_Unpack(out, 64, &pos, dst_a + 4096, 1, t, ec));
        EXPECT(last_class == MPI_ERR_TRUNCATE && untouched(dst_a, 0, BUF, 0x55), "%s: unpack past the end: class %d", name, last_class);
    }
    /* A buffer one byte short: the MPI's own class (Open MPI: MPI_ERR_TRUNCATE; MPICH packs what
     * fits and returns success), and nothing at or past the buffer's end changes. */
    if (psize > 0) {
        int short_size = psize - 1;
        handler_calls = 0;
        pos = 0;
        int cs = err_class(MPI_Pack(src + 4096, 1, t, out, short_size, &pos, ec));
        int calls = handler_calls;
        EXPECT(untouched(pk_a, 4096 + short_size, BUF, 0xAA) && untouched(pk_a, 0, 4096, 0xAA), "%s: short buffer: bytes written outside it", name);
        memset(pk_b, 0xAA, BUF);
        handler_calls = 0;
        pm = 0;
        cm = err_class(PMPI_Pack(src + 4096, 1, t, pk_b + 4096, short_size, &pm, ec));
        EXPECT(cs == cm && calls == handler_calls && pos == pm, "%s: short buffer: class %d (handler %d, position %d) vs MPI %d (handler %d, position %d)",
               name, cs, calls, pos, cm, handler_calls, pm);
    }
    /* Type errors through the handler, against the MPI's class. */
    MPI_Datatype unc;
    MPI_CHECK(MPI_Type_vector(3, 1, 2, MPI_INT, &unc));
    pos = pm = 0;
    SAME_AS_MPI("uncommitted type", MPI_Pack(src, 1, unc, out, BUF / 2, &pos, ec), PMPI_Pack(src, 1, unc, pk_b, BUF / 2, &pm, ec));
    pos = pm = 0;
    SAME_AS_MPI("MPI_DATATYPE_NULL", MPI_Pack(src, 1, MPI_DATATYPE_NULL, out, BUF / 2, &pos, ec),
                PMPI_Pack(src, 1, MPI_DATATYPE_NULL, pk_b, BUF / 2, &pm, ec));
    MPI_CHECK(MPI_Type_free(&unc));
    MPI_CHECK(MPI_Comm_free(&ec));
    MPI_CHECK(MPI_Errhandler_free(&eh));
}


/* MPICH only, once: MPI_Pack_size's own checks (Open MPI 4.1 accepts a negative count and
 * crashes on an uncommitted type, with or without sluice), and a freed communicator. MPICH's
 * handles are table indices and it rejects a freed communicator with MPI_ERR_COMM; Open MPI's
 * are pointers, and passing a freed one makes the bare MPI read freed memory. A freed datatype
 * is not tested on either: Open MPI reads freed memory and MPICH aborts in Yaksa (for a type it
 * has packed before), with or without sluice; sluice drops its compiled form at MPI_Type_free,
 * so it forwards such a call (`handle_reuse` checks that no stale form is used). */
static void mpich_handle_checks(void) {
#ifdef MPICH_VERSION
    MPI_Comm ec;
    MPI_Errhandler eh;
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &ec));
    MPI_CHECK(MPI_Comm_create_errhandler(count_errors, &eh));
    MPI_CHECK(MPI_Comm_set_errhandler(ec, eh));
    int last_class = -1, pos, pm, cm;
    unsigned char *out = pk_a + 4096;
    MPI_Datatype t, unc;
    MPI_CHECK(MPI_Type_vector(8, 1, 2, MPI_INT, &t));
    MPI_CHECK(MPI_Type_commit(&t));
    MPI_CHECK(MPI_Type_vector(3, 1, 2, MPI_INT, &unc));
    const char *name = "vector";
    SAME_AS_MPI("uncommitted type (Pack_size)", MPI_Pack_size(1, unc, ec, &pos), PMPI_Pack_size(1, unc, ec, &pm));
    SAME_AS_MPI("negative count (Pack_size)", MPI_Pack_size(-1, t, ec, &pos), PMPI_Pack_size(-1, t, ec, &pm));
    /* A freed communicator: MPICH raises MPI_ERR_COMM on MPI_COMM_WORLD (whose handler here is
     * MPI_ERRORS_RETURN), so the class is compared with the bare MPI's, and nothing is written. */
    MPI_Comm fc, freed_comm;
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &fc));
    freed_comm = fc;
    MPI_CHECK(MPI_Comm_free(&fc));
    memset(pk_a, 0xAA, BUF);
    pos = 0;
    int cs = err_class(MPI_Pack(src + 4096, 1, t, out, BUF / 2, &pos, freed_comm));
    pm = 0;
    cm = err_class(PMPI_Pack(src + 4096, 1, t, pk_b, BUF / 2, &pm, freed_comm));
    EXPECT(cs == cm && cs == MPI_ERR_COMM && untouched(pk_a, 0, BUF, 0xAA), "%s: freed communicator (pack): class %d vs MPI %d", name, cs, cm);
    pos = 0;
    cs = err_class(MPI_Unpack(pk_b, BUF / 2, &pos, dst_a + 4096, 1, t, freed_comm));
    pm = 0;
    cm = err_class(PMPI_Unpack(pk_b, BUF / 2, &pm, dst_b + 4096, 1, t, freed_comm));
    EXPECT(cs == cm && cs == MPI_ERR_COMM, "%s: freed communicator (unpack): class %d vs MPI %d", name, cs, cm);
    cs = err_class(MPI_Pack_size(1, t, freed_comm, &pos));
    cm = err_class(PMPI_Pack_size(1, t, freed_comm, &pm));
    EXPECT(cs == cm && cs == MPI_ERR_COMM, "%s: freed communicator (Pack_size): class %d vs MPI %d", name, cs, cm);
    MPI_CHECK(MPI_Type_free(&t));
    MPI_CHECK(MPI_Type_free(&unc));
    MPI_CHECK(MPI_Comm_free(&ec));
    MPI_CHECK(MPI_Errhandler_free(&eh));
#endif
}


/* A handle reused across threads: a helper thread packs type `a` (sluice keeps the type each
 * thread used last), the main thread frees `a` and commits `b`, which the MPI often gives the
 * same handle, and the helper thread packs again under that handle: it must get `b`'s layout.
 * The calls are serialized (MPI_THREAD_SERIALIZED), each thread's in turn. */
static pthread_mutex_t turn_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn_cond = PTHREAD_COND_INITIALIZER;
static int turn; /* 0: main's turn, 1: the helper packs `shared_type`, 2: the helper exits */
static MPI_Datatype shared_type;
static int helper_pos, helper_rc;

static void *pack_helper(void *arg) {
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&turn_lock);
        while (turn == 0) pthread_cond_wait(&turn_cond, &turn_lock);
        int what = turn;
        pthread_mutex_unlock(&turn_lock);
        if (what == 2) return NULL;
        helper_pos = 0;
        helper_rc = MPI_Pack(src + 4096, 2, shared_type, pk_a, BUF, &helper_pos, MPI_COMM_WORLD);
        pthread_mutex_lock(&turn_lock);
        turn = 0;
        pthread_cond_broadcast(&turn_cond);
        pthread_mutex_unlock(&turn_lock);
    }
}

static void helper_turn(int what) {
    pthread_mutex_lock(&turn_lock);
    turn = what;
    pthread_cond_broadcast(&turn_cond);
    while (what != 2 && turn != 0) pthread_cond_wait(&turn_cond, &turn_lock);
    pthread_mutex_unlock(&turn_lock);
}

static void handle_reuse_across_threads(void) {
    pthread_t th;
    pthread_create(&th, NULL, pack_helper, NULL);
    int reused = 0;
    for (int i = 0; i < 20; i++) {
        MPI_Datatype a, b;
        MPI_CHECK(MPI_Type_vector(10 + i, 1, 3 + i % 4, MPI_INT, &a));
        MPI_CHECK(MPI_Type_commit(&a));
        shared_type = a;
        helper_turn(1);
        MPI_Datatype old = a;
        MPI_CHECK(MPI_Type_free(&a));
        int bl[2] = {2 + i, 1}, d[2] = {5, 40 + i};
        MPI_CHECK(MPI_Type_indexed(2, bl, d, MPI_DOUBLE, &b));
        MPI_CHECK(MPI_Type_commit(&b));
        reused += b == old;
        shared_type = b;
        memset(pk_a, 0xAA, BUF);
        helper_turn(1);
        int pm = 0;
        memset(pk_b, 0xAA, BUF);
        MPI_CHECK(PMPI_Pack(src + 4096, 2, b, pk_b, BUF, &pm, MPI_COMM_WORLD));
        EXPECT(helper_rc == MPI_SUCCESS && helper_pos == pm && memcmp(pk_a, pk_b, pm + 16) == 0,
               "handle reused across threads (round %d): rc %d, position %d vs MPI %d", i, helper_rc, helper_pos, pm);
        MPI_CHECK(MPI_Type_free(&b));
    }
    helper_turn(2);
    pthread_join(th, NULL);
    if (rank == 0) printf("handle reuse across threads: %d of 20 rounds reused the handle\n", reused);
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

/* With PACK_EXPECT_ENGINE=1 (set by tests/mpi_c.rs when the engine is on), every type must be
 * served by sluice's engine, not quietly left to the MPI: sluice_type_kernel, found with dlsym so
 * the program also runs without the shim. */
static void served_by_the_engine(MPI_Datatype t, const char *name) {
    const char *want = getenv("PACK_EXPECT_ENGINE");
    if (!want || strcmp(want, "1") != 0) return;
    int (*kernel_of)(MPI_Datatype, const char **) = (int (*)(MPI_Datatype, const char **))dlsym(RTLD_DEFAULT, "sluice_type_kernel");
    EXPECT(kernel_of != NULL, "sluice_type_kernel not found");
    if (!kernel_of) return;
    const char *k = NULL;
    EXPECT(kernel_of(t, &k) == 1 && k && *k, "%s: not compiled by sluice's engine", name);
    if (rank == 0 && k) printf("%s: kernel %s\n", name, k);
}

int main(int argc, char **argv) {
    int provided;
    MPI_CHECK(MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided));
    EXPECT(provided >= MPI_THREAD_SERIALIZED, "MPI_THREAD_SERIALIZED not provided (%d)", provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    src = malloc(BUF); dst_a = malloc(BUF); dst_b = malloc(BUF); pk_a = malloc(BUF); pk_b = malloc(BUF);
    for (int i = 0; i < BUF; i++) src[i] = (unsigned char)(i * 131 + 17);
    MPI_Datatype t[NTYPES];
    const char *name[NTYPES];
    build(t, name);
    for (int i = 0; i < NTYPES; i++) {
        served_by_the_engine(t[i], name[i]);
        for (int count = 0; count <= 3; count++) compare(t[i], name[i], count, 4096);
        errors_match_the_mpi(t[i]);
        errors_reach_the_handler(t[i], name[i]);
        interop(t[i], name[i]);
    }
    handle_reuse();
    handle_reuse_across_threads();
    mpich_handle_checks();
    for (int i = 0; i < NTYPES; i++) MPI_CHECK(MPI_Type_free(&t[i]));
    int rc = report_verdict("pack");
    MPI_CHECK(MPI_Finalize());
    return rc;
}
