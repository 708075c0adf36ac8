/* Shared helpers for sluice's C test programs: every MPI return code is checked. */
#ifndef SLUICE_TEST_CHECK_H
#define SLUICE_TEST_CHECK_H
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int check_failures = 0;

#define MPI_CHECK(call)                                                              \
    do {                                                                             \
        int rc_ = (call);                                                            \
        if (rc_ != MPI_SUCCESS) {                                                    \
            fprintf(stderr, "%s:%d: %s returned %d\n", __FILE__, __LINE__, #call, rc_); \
            MPI_Abort(MPI_COMM_WORLD, 2);                                            \
        }                                                                            \
    } while (0)

#define EXPECT(cond, ...)                                                            \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: expected %s: ", __FILE__, __LINE__, #cond);      \
            fprintf(stderr, __VA_ARGS__);                                            \
            fprintf(stderr, "\n");                                                   \
            check_failures++;                                                        \
        }                                                                            \
    } while (0)

/* Collective verdict: rank 0 prints PASS when no rank saw a failure. */
__attribute__((unused)) static int report_verdict(const char *name) {
    int total = 0, rank;
    MPI_Allreduce(&check_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        if (total == 0) printf("PASS %s\n", name);
        else printf("FAIL %s: %d failed checks\n", name, total);
        fflush(stdout);
    }
    return total == 0 ? 0 : 1;
}

/* ------------------------------------------------------------------------------------------
 * Helpers of the point-to-point conformance suite (tests/c/p2p_conf_*.c). Only compiled when
 * the program defines SLUICE_P2P_CONF before including this header; other tests are unaffected.
 *
 * Data checks: a send buffer holds a pseudo-random pattern derived from a seed (sender, case,
 * message index...), a receive buffer starts with another seed's pattern (the "sentinel"), with
 * guard bytes on both sides. The expected receive buffer is computed with the MPI's own engine
 * (PMPI_Pack of the sender's layout, PMPI_Unpack into the receiver's layout, neither of which
 * sluice intercepts): every byte of the receive allocation is compared, so wrong data, data at
 * the wrong place, a write into a gap of a non-contiguous type or past the message all fail.
 * ------------------------------------------------------------------------------------------ */
#ifdef SLUICE_P2P_CONF
#include <stdarg.h>
#include <stdint.h>
#include <string.h>

/* Set by sluice (under LD_PRELOAD) once its point-to-point protocol tracks requests. */
extern int sluice_p2p_outstanding(long *requests, long *staging_buffers) __attribute__((weak));

#define CONF_UNUSED __attribute__((unused))
#define CONF_GUARD 64
#define CONF_POLL_LIMIT 30.0 /* seconds a polling loop may spin before the test fails */
#define CONF_MAX_PRINTED 40  /* failure messages printed per rank */

static int conf_rank = -1;          /* rank in MPI_COMM_WORLD, for messages */
static long conf_checks = 0;        /* checks made by this rank */
static int conf_printed = 0;
static char conf_ctx[160] = "";     /* what is being tested, printed with every failure */

static CONF_UNUSED void conf_set_ctx(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(conf_ctx, sizeof conf_ctx, fmt, ap);
    va_end(ap);
}

static CONF_UNUSED void conf_report(const char *file, int line, const char *cond, const char *fmt, ...) {
    __atomic_fetch_add(&check_failures, 1, __ATOMIC_RELAXED); /* threads may report */
    if (__atomic_fetch_add(&conf_printed, 1, __ATOMIC_RELAXED) >= CONF_MAX_PRINTED) return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "[rank %d] %s:%d: [%s] check failed: %s: %s\n", conf_rank, file, line, conf_ctx, cond, msg);
    fflush(stderr);
}

/* A counted check; the message says what differed. */
#define CHECK(cond, ...)                                                             \
    do {                                                                             \
        __atomic_fetch_add(&conf_checks, 1, __ATOMIC_RELAXED);                       \
        if (!(cond)) conf_report(__FILE__, __LINE__, #cond, __VA_ARGS__);            \
    } while (0)

/* Fatal: print and abort the job (used where going on could hang). */
static CONF_UNUSED void conf_die(const char *file, int line, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "[rank %d] %s:%d: [%s] FATAL: %s\n", conf_rank, file, line, conf_ctx, msg);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

static CONF_UNUSED const char *conf_errstr(int rc) {
    static char s[MPI_MAX_ERROR_STRING + 32];
    int len = 0, cls = -1;
    MPI_Error_class(rc, &cls);
    MPI_Error_string(rc, s, &len);
    snprintf(s + len, sizeof s - len, " (class %d)", cls);
    return s;
}

/* An MPI call that must succeed (the communicators use MPI_ERRORS_RETURN). */
#define MPI_OK(call)                                                                 \
    do {                                                                             \
        int rc_ = (call);                                                            \
        if (rc_ != MPI_SUCCESS)                                                      \
            conf_die(__FILE__, __LINE__, "%s returned %s", #call, conf_errstr(rc_)); \
    } while (0)

/* An MPI return code whose error class must be `cls`. */
#define CHECK_CLASS(rc, cls)                                                         \
    do {                                                                             \
        int c_ = -1;                                                                 \
        MPI_Error_class((rc), &c_);                                                  \
        CHECK(c_ == (cls), "error class %d (%s), expected %d (%s)", c_,              \
              (rc) == MPI_SUCCESS ? "MPI_SUCCESS" : conf_errstr(rc), (cls), #cls);   \
    } while (0)

/* Spins `body` until `done` holds; fails the job after CONF_POLL_LIMIT seconds. */
#define CONF_POLL(what, body, done)                                                  \
    do {                                                                             \
        double t0_ = MPI_Wtime();                                                    \
        for (;;) {                                                                   \
            body;                                                                    \
            if (done) break;                                                         \
            if (MPI_Wtime() - t0_ > CONF_POLL_LIMIT)                                 \
                conf_die(__FILE__, __LINE__, "no completion after %.0f s polling %s", \
                         CONF_POLL_LIMIT, what);                                     \
        }                                                                            \
    } while (0)

static inline uint64_t conf_mix(uint64_t x) {
    x ^= x >> 33; x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

/* A seed from up to four small numbers (case, sender, receiver, message index...). */
static inline uint64_t conf_seed(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
    return conf_mix(conf_mix(conf_mix(a * 1000003 + b) * 1000033 + c) * 1000037 + d) | 1;
}

/* Whole words in the loop, the tail apart: a copy of constant size is a single store (a
 * variable-size copy per word was a library call, most of the conformance programs' time). */
static CONF_UNUSED void conf_fill(unsigned char *p, size_t n, uint64_t seed) {
    size_t w = 0;
    for (; w + 8 <= n; w += 8) {
        uint64_t h = conf_mix(seed * 0x9E3779B97F4A7C15ULL + (w >> 3));
        memcpy(p + w, &h, 8);
    }
    if (w < n) {
        uint64_t h = conf_mix(seed * 0x9E3779B97F4A7C15ULL + (w >> 3));
        memcpy(p + w, &h, n - w);
    }
}

static CONF_UNUSED void *conf_malloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) conf_die(__FILE__, __LINE__, "out of memory (%zu bytes)", n);
    return p;
}

/* Bytes spanned by `count` elements of `t` from the buffer address (types here have lb >= 0). */
static CONF_UNUSED size_t conf_span(MPI_Datatype t, int count) {
    MPI_Aint lb, ext, tlb, text;
    MPI_Type_get_extent(t, &lb, &ext);
    MPI_Type_get_true_extent(t, &tlb, &text);
    if (lb < 0 || tlb < 0) conf_die(__FILE__, __LINE__, "conf_span: negative lower bound");
    if (count <= 0) return 0;
    return (size_t)(tlb + text + (MPI_Aint)(count - 1) * ext);
}

static CONF_UNUSED size_t conf_size(MPI_Datatype t, int count) {
    int s;
    MPI_Type_size(t, &s);
    return (size_t)s * (size_t)count;
}

/* A buffer for `count` x `type`, pattern `seed` everywhere (guards included). */
typedef struct {
    unsigned char *base, *p; /* allocation, and the address handed to MPI (base + CONF_GUARD) */
    size_t span, total;
    MPI_Datatype type;
    int count;
    uint64_t seed;
} conf_buf;

static CONF_UNUSED conf_buf conf_alloc(MPI_Datatype type, int count, uint64_t seed) {
    conf_buf b;
    b.type = type;
    b.count = count;
    b.seed = seed;
    b.span = conf_span(type, count);
    b.total = b.span + 2 * CONF_GUARD;
    b.base = conf_malloc(b.total);
    b.p = b.base + CONF_GUARD;
    conf_fill(b.base, b.total, seed);
    return b;
}

/* The same with `slack` extra bytes after the span (part of the checked allocation): for MPIs
 * that write past a truncated receive buffer (see p2p_conf_basic.c). */
static CONF_UNUSED conf_buf conf_alloc_slack(MPI_Datatype type, int count, uint64_t seed, size_t slack) {
    conf_buf b = conf_alloc(type, count, seed);
    free(b.base);
    b.total += slack;
    b.base = conf_malloc(b.total);
    b.p = b.base + CONF_GUARD;
    conf_fill(b.base, b.total, seed);
    return b;
}

/* Bytes written after the span (in the back guard and slack); those are reset to the initial
 * pattern so that the other checks look at the span only. Returns how many differed. */
static CONF_UNUSED size_t conf_overflow_reset(conf_buf *b) {
    unsigned char *img = conf_malloc(b->total);
    conf_fill(img, b->total, b->seed);
    size_t n = 0, from = CONF_GUARD + b->span;
    for (size_t i = from; i < b->total; i++) n += b->base[i] != img[i];
    memcpy(b->base + from, img + from, b->total - from);
    free(img);
    return n;
}

static CONF_UNUSED void conf_refill(conf_buf *b, uint64_t seed) {
    b->seed = seed;
    conf_fill(b->base, b->total, seed);
}

static CONF_UNUSED void conf_free(conf_buf *b) {
    free(b->base);
    b->base = b->p = NULL;
}

/* The packed byte stream a sender with (stype, scount, seed) sends; *n gets its size. */
static CONF_UNUSED unsigned char *conf_stream(MPI_Datatype stype, int scount, uint64_t seed, size_t *n) {
    conf_buf s = conf_alloc(stype, scount, seed);
    *n = conf_size(stype, scount);
    unsigned char *out = conf_malloc(*n);
    int pos = 0;
    if (*n && PMPI_Pack(s.p, scount, stype, out, (int)*n, &pos, MPI_COMM_SELF) != MPI_SUCCESS)
        conf_die(__FILE__, __LINE__, "reference PMPI_Pack failed");
    conf_free(&s);
    return out;
}

/* Writes the first `n` bytes of `stream` into buffer image `img` (the receive buffer's
 * allocation) the way a receive of (r->type, r->count) places them. */
static CONF_UNUSED void conf_place(unsigned char *img, const conf_buf *r, const unsigned char *stream, size_t n) {
    size_t cap = conf_size(r->type, r->count);
    if (n > cap) n = cap;
    if (n == 0) return;
    unsigned char *s = conf_malloc(cap);
    int pos = 0;
    PMPI_Pack(img + CONF_GUARD, r->count, r->type, s, (int)cap, &pos, MPI_COMM_SELF);
    memcpy(s, stream, n);
    pos = 0;
    if (PMPI_Unpack(s, (int)cap, &pos, img + CONF_GUARD, r->count, r->type, MPI_COMM_SELF) != MPI_SUCCESS)
        conf_die(__FILE__, __LINE__, "reference PMPI_Unpack failed");
    free(s);
}

/* Compares a whole receive allocation with an expected image; 1 when equal. */
static CONF_UNUSED int conf_compare(const char *file, int line, const char *what, const conf_buf *r, const unsigned char *img) {
    __atomic_fetch_add(&conf_checks, 1, __ATOMIC_RELAXED);
    if (memcmp(r->base, img, r->total) == 0) return 1;
    size_t first = (size_t)-1, ndiff = 0;
    for (size_t i = 0; i < r->total; i++)
        if (r->base[i] != img[i]) {
            if (first == (size_t)-1) first = i;
            ndiff++;
        }
    long off = (long)first - CONF_GUARD;
    conf_report(file, line, what,
                "%zu of %zu bytes differ; first at offset %ld from the buffer%s: got 0x%02x expected 0x%02x",
                ndiff, r->total, off, off < 0 ? " (front guard)" : (size_t)off >= r->span ? " (past the span)" : "",
                r->base[first], img[first]);
    return 0;
}

/* The receive buffer must hold exactly: its initial pattern, with the first `n` bytes of the
 * stream sent as (stype, scount, sseed) placed by (r->type, r->count). n = (size_t)-1: all. */
static CONF_UNUSED int conf_check_data_at(const char *file, int line, const char *what, const conf_buf *r,
                                          MPI_Datatype stype, int scount, uint64_t sseed, size_t n) {
    size_t len;
    unsigned char *stream = conf_stream(stype, scount, sseed, &len);
    if (n > len) n = len;
    unsigned char *img = conf_malloc(r->total);
    conf_fill(img, r->total, r->seed);
    conf_place(img, r, stream, n);
    int ok = conf_compare(file, line, what, r, img);
    free(img);
    free(stream);
    return ok;
}
#define CHECK_DATA(r, stype, scount, sseed) \
    conf_check_data_at(__FILE__, __LINE__, "received data", (r), (stype), (scount), (sseed), (size_t)-1)
#define CHECK_DATA_N(r, stype, scount, sseed, n) \
    conf_check_data_at(__FILE__, __LINE__, "received data", (r), (stype), (scount), (sseed), (n))

/* The buffer still holds its initial pattern (nothing was written anywhere). */
static CONF_UNUSED int conf_check_untouched_at(const char *file, int line, const conf_buf *r) {
    unsigned char *img = conf_malloc(r->total);
    conf_fill(img, r->total, r->seed);
    int ok = conf_compare(file, line, "buffer untouched", r, img);
    free(img);
    return ok;
}
#define CHECK_UNTOUCHED(r) conf_check_untouched_at(__FILE__, __LINE__, (r))

/* Only the type map of (r->type, r->count) may have changed: gaps, guards and the tail of the
 * allocation hold the initial pattern. */
static CONF_UNUSED int conf_check_gaps_at(const char *file, int line, const conf_buf *r) {
    size_t cap = conf_size(r->type, r->count);
    unsigned char *mask = calloc(r->total, 1), *ones = conf_malloc(cap ? cap : 1);
    memset(ones, 0xff, cap);
    int pos = 0;
    if (cap) PMPI_Unpack(ones, (int)cap, &pos, mask + CONF_GUARD, r->count, r->type, MPI_COMM_SELF);
    unsigned char *img = conf_malloc(r->total);
    conf_fill(img, r->total, r->seed);
    for (size_t i = 0; i < r->total; i++)
        if (mask[i]) img[i] = r->base[i]; /* anything may be in the type map */
    int ok = conf_compare(file, line, "gaps untouched", r, img);
    free(img); free(ones); free(mask);
    return ok;
}
#define CHECK_GAPS(r) conf_check_gaps_at(__FILE__, __LINE__, (r))

/* Status fields and counts in the user's type. count/elements: MPI_UNDEFINED allowed. */
#define CHECK_STATUS(st, src, tag, type, count, elements)                            \
    do {                                                                             \
        int c_ = -7, e_ = -7;                                                        \
        MPI_Get_count((st), (type), &c_);                                            \
        MPI_Get_elements((st), (type), &e_);                                         \
        CHECK((st)->MPI_SOURCE == (src), "status source %d, expected %d", (st)->MPI_SOURCE, (int)(src)); \
        CHECK((st)->MPI_TAG == (tag), "status tag %d, expected %d", (st)->MPI_TAG, (int)(tag)); \
        CHECK(c_ == (count), "MPI_Get_count %d, expected %d", c_, (int)(count));     \
        CHECK(e_ == (elements), "MPI_Get_elements %d, expected %d", e_, (int)(elements)); \
    } while (0)

/* The status of a null/inactive request or of MPI_PROC_NULL traffic (count 0). */
#define CHECK_EMPTY_STATUS(st, src)                                                  \
    do {                                                                             \
        int c_ = -7;                                                                 \
        MPI_Get_count((st), MPI_BYTE, &c_);                                          \
        CHECK((st)->MPI_SOURCE == (src), "empty status source %d, expected %d", (st)->MPI_SOURCE, (int)(src)); \
        CHECK((st)->MPI_TAG == MPI_ANY_TAG, "empty status tag %d", (st)->MPI_TAG);   \
        CHECK(c_ == 0, "empty status count %d", c_);                                 \
    } while (0)

/* Implementation-defined behaviour observed on rank 0: the driver compares these lines between
 * the bare MPI and sluice. */
static const char *conf_name = "p2p_conf";
static CONF_UNUSED void conf_behavior(const char *key, const char *fmt, ...) {
    if (conf_rank != 0) return;
    char v[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v, sizeof v, fmt, ap);
    va_end(ap);
    printf("%s: behavior %s=%s\n", conf_name, key, v);
    fflush(stdout);
}

/* ---- the datatype catalog ---------------------------------------------------------------- */
enum { F_INT, F_DOUBLE, F_CHAR, F_STRUCT }; /* signature families: types of one family mix */
enum {
    T_INT,          /* MPI_INT */
    T_DOUBLE,       /* MPI_DOUBLE */
    T_CHAR,         /* MPI_CHAR */
    T_VEC_D,        /* vector(8, 1, 2, MPI_DOUBLE): every other double */
    T_VEC_D2,       /* vector(4, 2, 3, MPI_DOUBLE): same signature, another layout */
    T_VECT84,       /* OSU vect:8:4: vector(16, 4, 8, MPI_CHAR) resized to extent 128 */
    T_VECT84X3,     /* vector(24, 8, 16, MPI_CHAR): 3x the signature of T_VECT84 */
    T_VEC_I4,       /* vector(4, 1, 2, MPI_INT) */
    T_SUBARRAY,     /* 4x4 ints at (2,3) of an 8x8 C array */
    T_INDEXED,      /* indexed ints, blocks {1,3,2,5,5} at {0,4,20,11,30}: out of order */
    T_STRUCT,       /* {int @0, double @8, char[5] @16} resized to 24 */
    T_STRUCT_PACKED,/* {int @0, double @4, char[5] @12}: same signature, packed layout */
    T_CONTIG64,     /* contiguous(64, MPI_CHAR): committed, contiguous in memory (left to the MPI) */
    T_BLOCKS64,     /* vector(3, 64, 128, MPI_CHAR): 64-byte blocks (left to Open MPI's engine) */
    T_COUNT
};
typedef struct {
    const char *name;
    MPI_Datatype t;
    int family;
    int units;    /* basic elements per type element (struct: 1 unit = one struct) */
    int contig;
} conf_type;
static conf_type CT[T_COUNT];

static CONF_UNUSED void conf_types_init(void) {
    MPI_Datatype tmp;
    CT[T_INT] = (conf_type){"MPI_INT", MPI_INT, F_INT, 1, 1};
    CT[T_DOUBLE] = (conf_type){"MPI_DOUBLE", MPI_DOUBLE, F_DOUBLE, 1, 1};
    CT[T_CHAR] = (conf_type){"MPI_CHAR", MPI_CHAR, F_CHAR, 1, 1};
    CT[T_VEC_D] = (conf_type){"vector(8,1,2,double)", 0, F_DOUBLE, 8, 0};
    MPI_Type_vector(8, 1, 2, MPI_DOUBLE, &CT[T_VEC_D].t);
    CT[T_VEC_D2] = (conf_type){"vector(4,2,3,double)", 0, F_DOUBLE, 8, 0};
    MPI_Type_vector(4, 2, 3, MPI_DOUBLE, &CT[T_VEC_D2].t);
    CT[T_VECT84] = (conf_type){"vect:8:4", 0, F_CHAR, 64, 0};
    MPI_Type_vector(16, 4, 8, MPI_CHAR, &tmp);
    MPI_Type_create_resized(tmp, 0, 128, &CT[T_VECT84].t);
    MPI_Type_free(&tmp);
    CT[T_VECT84X3] = (conf_type){"vector(24,8,16,char)", 0, F_CHAR, 192, 0};
    MPI_Type_vector(24, 8, 16, MPI_CHAR, &CT[T_VECT84X3].t);
    CT[T_VEC_I4] = (conf_type){"vector(4,1,2,int)", 0, F_INT, 4, 0};
    MPI_Type_vector(4, 1, 2, MPI_INT, &CT[T_VEC_I4].t);
    CT[T_SUBARRAY] = (conf_type){"subarray(8x8,4x4@2,3,int)", 0, F_INT, 16, 0};
    {
        int sz[2] = {8, 8}, sub[2] = {4, 4}, st[2] = {2, 3};
        MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_C, MPI_INT, &CT[T_SUBARRAY].t);
    }
    CT[T_INDEXED] = (conf_type){"indexed(int)", 0, F_INT, 16, 0};
    {
        int bl[5] = {1, 3, 2, 5, 5}, d[5] = {0, 4, 20, 11, 30};
        MPI_Type_indexed(5, bl, d, MPI_INT, &CT[T_INDEXED].t);
    }
    CT[T_STRUCT] = (conf_type){"struct-resized", 0, F_STRUCT, 1, 0};
    {
        int bl[3] = {1, 1, 5};
        MPI_Aint d[3] = {0, 8, 16};
        MPI_Datatype ty[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
        MPI_Type_create_struct(3, bl, d, ty, &tmp);
        MPI_Type_create_resized(tmp, 0, 24, &CT[T_STRUCT].t);
        MPI_Type_free(&tmp);
    }
    CT[T_STRUCT_PACKED] = (conf_type){"struct-packed", 0, F_STRUCT, 1, 0};
    {
        int bl[3] = {1, 1, 5};
        MPI_Aint d[3] = {0, 4, 12};
        MPI_Datatype ty[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
        MPI_Type_create_struct(3, bl, d, ty, &CT[T_STRUCT_PACKED].t);
    }
    CT[T_CONTIG64] = (conf_type){"contiguous(64,char)", 0, F_CHAR, 64, 0};
    MPI_Type_contiguous(64, MPI_CHAR, &CT[T_CONTIG64].t);
    CT[T_BLOCKS64] = (conf_type){"vector(3,64,128,char)", 0, F_CHAR, 192, 0};
    MPI_Type_vector(3, 64, 128, MPI_CHAR, &CT[T_BLOCKS64].t);
    for (int i = 0; i < T_COUNT; i++)
        if (!CT[i].contig) MPI_OK(MPI_Type_commit(&CT[i].t));
}

static CONF_UNUSED void conf_types_free(void) {
    for (int i = 0; i < T_COUNT; i++)
        if (!CT[i].contig) MPI_OK(MPI_Type_free(&CT[i].t));
}

/* Basic elements per unit of a family (for MPI_Get_elements). */
static CONF_UNUSED int conf_family_elements(int family) { return family == F_STRUCT ? 7 : 1; }

/* Bytes per unit of a family. */
static CONF_UNUSED int conf_family_bytes(int family) {
    return family == F_INT ? 4 : family == F_DOUBLE ? 8 : family == F_CHAR ? 1 : 17;
}

/* Units per message of about `bytes` bytes that every type of the family divides. */
static CONF_UNUSED int conf_units_for(int family, size_t bytes) {
    int lcm = family == F_INT ? 16 : family == F_DOUBLE ? 8 : family == F_CHAR ? 192 : 1;
    size_t u = bytes / (size_t)conf_family_bytes(family);
    u = (u + lcm - 1) / lcm * lcm;
    return (int)(u ? u : lcm);
}

/* MPI_Get_elements of a status that holds `count` whole elements of `t`. */
static CONF_UNUSED int conf_elements_of(MPI_Datatype t, int count) {
    MPI_Status st;
    int size, e = -1;
    MPI_Type_size(t, &size);
    MPI_Status_set_elements(&st, MPI_BYTE, size * count);
    MPI_Get_elements(&st, t, &e);
    return e;
}

/* Leak check and collective verdict: rank 0 prints "<name>: OK (N checks)". */
static CONF_UNUSED int conf_finish(const char *name) {
    MPI_Barrier(MPI_COMM_WORLD);
    if (sluice_p2p_outstanding) {
        long reqs = -1, staging = -1;
        int rc = sluice_p2p_outstanding(&reqs, &staging);
        conf_set_ctx("leak check before MPI_Finalize");
        CHECK(rc == 0 && reqs == 0 && staging == 0,
              "sluice_p2p_outstanding returned %d: %ld requests and %ld staging buffers still held", rc, reqs, staging);
    } else if (conf_rank == 0) {
        printf("%s: leak check skipped (sluice_p2p_outstanding not available)\n", name);
    }
    int failures = 0;
    long checks = 0;
    MPI_Allreduce(&check_failures, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&conf_checks, &checks, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (conf_rank == 0) {
        if (failures == 0) printf("%s: OK (%ld checks)\n", name, checks);
        else printf("%s: FAILED (%d of %ld checks failed; see stderr)\n", name, failures, checks);
        fflush(stdout);
    }
    return failures == 0 ? 0 : 1;
}

/* A ring inside `comm`: this rank sends to `right` and receives from `left`. */
typedef struct {
    MPI_Comm comm;
    const char *label;
    int rank, size, left, right;
    int id;   /* distinguishes the communicators in seeds */
    int full; /* run everything (world) or a subset (dup, split) */
} conf_comm;

static CONF_UNUSED conf_comm conf_comm_make(MPI_Comm comm, const char *label, int id, int full) {
    conf_comm c;
    c.comm = comm;
    c.label = label;
    c.id = id;
    c.full = full;
    MPI_Comm_rank(comm, &c.rank);
    MPI_Comm_size(comm, &c.size);
    c.right = (c.rank + 1) % c.size;
    c.left = (c.rank + c.size - 1) % c.size;
    return c;
}

/* MPI_COMM_WORLD, a duplicate, and a split with ranks renumbered in reverse (pairs of world
 * ranks {0,1}, {2,3}... when the size is a multiple of 4, else everyone). Errors return. */
static CONF_UNUSED int conf_comms(conf_comm *out, MPI_Comm *dup, MPI_Comm *split) {
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, dup));
    int color = size % 4 == 0 ? conf_rank / 2 : 0;
    MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, color, size - conf_rank, split));
    MPI_Comm_set_errhandler(*dup, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(*split, MPI_ERRORS_RETURN);
    out[0] = conf_comm_make(MPI_COMM_WORLD, "world", 1, 1);
    out[1] = conf_comm_make(*dup, "dup", 2, 0);
    out[2] = conf_comm_make(*split, "split", 3, 0);
    return 3;
}

/* The common start of a conformance program (after MPI_Init): names it, requires 2 ranks,
 * builds the communicators (world, dup, split) and the type catalog; returns how many
 * communicators `cs` holds. */
static CONF_UNUSED int conf_begin(const char *name, conf_comm *cs, MPI_Comm *dup, MPI_Comm *split) {
    MPI_Comm_rank(MPI_COMM_WORLD, &conf_rank);
    conf_name = name;
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) conf_die(__FILE__, __LINE__, "needs at least 2 ranks");
    int nc = conf_comms(cs, dup, split);
    conf_types_init();
    return nc;
}
/* The common end of a conformance program: frees what conf_begin made, runs conf_finish and
 * MPI_Finalize; the program's exit code. */
static CONF_UNUSED int conf_end(MPI_Comm *dup, MPI_Comm *split) {
    conf_types_free();
    MPI_OK(MPI_Comm_free(dup));
    MPI_OK(MPI_Comm_free(split));
    int rc = conf_finish(conf_name);
    MPI_Finalize();
    return rc;
}
#endif /* SLUICE_P2P_CONF */
#endif
