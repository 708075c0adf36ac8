/* Randomized type-pair conformance generator (issue 21, scope item 2), in the spirit of MPICH's
 * DTPools: for each pair index, deterministically from (seed, index), it builds two random nested
 * derived datatypes of one base type with the same type signature but different shapes, a send
 * count and a receive count (the receive at least as large as the message), message sizes below,
 * on and above every protocol threshold of sluice (docs/protocol.md, docs/configuration.md), and
 * exercises the pair with one communication pattern (blocking, nonblocking with every completion
 * call, synchronous, buffered, ready, persistent, probes, matched probes, self-sends, Sendrecv(_replace),
 * several outstanding messages, wildcard receives).
 *
 * Usage:  p2p_typepairs SEED COUNT [FIRST] [-v] [-d]
 *   runs pairs FIRST .. FIRST+COUNT-1 (FIRST defaults to 0); `p2p_typepairs SEED 1 I` replays
 *   pair I. -v prints each pair's description ("# ..." lines), -d only describes the pairs (no
 *   communication; any number of ranks, rank 0 prints). Without arguments the environment
 *   variables TYPEPAIRS_SEED, TYPEPAIRS_COUNT, TYPEPAIRS_FIRST, TYPEPAIRS_VERBOSE are read (the
 *   test harness's launcher passes no arguments).
 *
 * Output (rank 0, stdout), per pair, every rank's lines gathered in rank order:
 *   D i=<pair> p=<pattern> r=<receiving rank> m=<message> rc=<post class>/<completion class>
 *     src= tag= err=<status.MPI_ERROR, prefilled with 24301> cnt=<MPI_Get_count, receive type>
 *     bytes=<MPI_Get_count, MPI_BYTE> elem=<MPI_Get_elements, receive type>
 *     [probe=<source>:<tag>:<MPI_ERROR>:<bytes>:<rc class>] sum=<FNV-1a 64 of the whole receive
 *     allocation: guards, gaps and the tail past the message included> ok=<self-check>
 *   S i= p= r=<sending rank> m= rc=<post>/<completion> ok=<send buffer unchanged, success>
 *   A i= r= <auxiliary call>=<class> ...   (Bsend attach/detach, barriers, Start, Request_free)
 *   typepairs: seed S pairs N failures F   (the closing line; F counts failed self-checks)
 * Digest lines are deterministic: the same on the bare MPI and under sluice unless sluice changes
 * something the application can see. Nothing timing-dependent is printed (Waitany/Waitsome
 * completion order, test-loop iterations).
 *
 * Self-check (bare or not): every receive allocation is compared with an image computed by
 * PMPI_Pack of the sender's buffer and PMPI_Unpack into the receive layout over the sentinel
 * (neither is intercepted by sluice), statuses and counts with their expected values, send
 * buffers must be unchanged. A failure prints, on stderr, what differed, the pair (both
 * constructor trees with every parameter) and a replay command line.
 *
 * Not generated, because the standard leaves the result to the implementation: truncation (the
 * receive always holds at least the message: the buffer contents and the count after
 * MPI_ERR_TRUNCATE are implementation-defined), overlapping receive types (undefined), and
 * heterogeneous signatures. status.MPI_ERROR after single-completion calls is not defined to be
 * written; it is printed and compared anyway (the bare MPI's behaviour is deterministic, and an
 * application can see it).
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MSG (4L << 20)    /* bytes per message */
#define MAX_SPAN (8L << 20)   /* bytes spanned by (type, count) on either side */
#define MAX_MULTI (12L << 20) /* bytes of receive allocations of one rank in one pair */
#define GUARD 64
#define ERR_SENTINEL 24301 /* status.MPI_ERROR before every call */

/* ------------------------------------------------------------------------------------------
 * Small utilities: die, string buffers, random numbers, fills, checksums.
 * ------------------------------------------------------------------------------------------ */
static int g_rank = 0, g_np = 1;
static uint64_t g_seed;
static long g_index = -1;
static int g_failures = 0;
static const char *g_argv0 = "p2p_typepairs";

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "[rank %d] p2p_typepairs: FATAL (seed %llu pair %ld): ", g_rank, (unsigned long long)g_seed, g_index);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
    exit(3);
}

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) die("out of memory (%zu bytes)", n);
    return p;
}

typedef struct {
    char *s;
    size_t len, cap;
} sbuf_t;

static void sb_printf(sbuf_t *b, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->len;
        int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? room : 0, fmt, ap);
        va_end(ap);
        if (n < 0) die("vsnprintf");
        if (b->s && (size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        b->cap = (b->cap + (size_t)n + 1) * 2;
        b->s = realloc(b->s, b->cap);
        if (!b->s) die("out of memory");
        b->s[b->len] = 0;
    }
}

static void sb_free(sbuf_t *b) {
    free(b->s);
    b->s = NULL;
    b->len = b->cap = 0;
}

static uint64_t mix64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

typedef struct {
    uint64_t s;
} rng_t;

static uint64_t rnext(rng_t *r) {
    r->s += 0x9E3779B97F4A7C15ULL;
    return mix64(r->s);
}
static long rbelow(rng_t *r, long n) { return n > 0 ? (long)(rnext(r) % (uint64_t)n) : 0; }
static long rrange(rng_t *r, long lo, long hi) { return hi <= lo ? lo : lo + rbelow(r, hi - lo + 1); } /* inclusive */
static int rchance(rng_t *r, int pct) { return rbelow(r, 100) < pct; }
static double runit(rng_t *r) { return (double)(rnext(r) >> 11) / 9007199254740992.0; }
static int rweighted(rng_t *r, const int *w, int n) {
    int tot = 0;
    for (int i = 0; i < n; i++) tot += w[i];
    long x = rbelow(r, tot);
    for (int i = 0; i < n; i++) {
        if (x < w[i]) return i;
        x -= w[i];
    }
    return n - 1;
}

static uint64_t seed_of(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e) {
    return mix64(mix64(mix64(mix64(a * 1000003 + b) * 1000033 + c) * 1000037 + d) ^ e) | 1;
}

static void fill(unsigned char *p, size_t n, uint64_t seed) {
    for (size_t w = 0; w < n; w += 8) {
        uint64_t h = mix64(seed * 0x9E3779B97F4A7C15ULL + (w >> 3));
        memcpy(p + w, &h, n - w < 8 ? n - w : 8);
    }
}

static uint64_t fnv1a(const unsigned char *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static int err_class(int rc) {
    int c = -1;
    if (MPI_Error_class(rc, &c) != MPI_SUCCESS) return -1000 - rc;
    return c;
}

/* Rough log2 / exp2 (no libm: the harness links without -lm); only shapes random draws. */
static double lg2(double x) {
    int e = 0;
    if (x <= 0) return -1e9;
    while (x >= 2.0) { x /= 2.0; e++; }
    while (x < 1.0) { x *= 2.0; e--; }
    return e + (x - 1.0);
}
static double ex2(double y) {
    long k = (long)y;
    if ((double)k > y) k--;
    double r = 1.0 + (y - (double)k);
    for (; k > 0; k--) r *= 2.0;
    for (; k < 0; k++) r /= 2.0;
    return r;
}
static double rpow(double x, double p) { return ex2(p * lg2(x)); }
static double rabs(double x) { return x < 0 ? -x : x; }

/* ------------------------------------------------------------------------------------------
 * Base types. A "unit" is one base element; two struct bases stand for user structs (their
 * layout differs between the two sides of a pair, their signature does not).
 * ------------------------------------------------------------------------------------------ */
enum { B_INT, B_DOUBLE, B_CHAR, B_SHORT, B_LONG_LONG, B_FLOAT, B_DCOMPLEX, B_S_ID, B_S_IID, NBASE };
static const struct {
    const char *name;
    int size, basics;
} BASES[NBASE] = {
    {"MPI_INT", 4, 1},   {"MPI_DOUBLE", 8, 1},    {"MPI_CHAR", 1, 1},
    {"MPI_SHORT", 2, 1}, {"MPI_LONG_LONG", 8, 1}, {"MPI_FLOAT", 4, 1},
    {"MPI_C_DOUBLE_COMPLEX", 16, 1},
    {"struct{int;double}", 12, 2},       /* blocklengths {1,1} */
    {"struct{int[3];double[2]}", 28, 5}, /* blocklengths {3,2} */
};
static const int BASE_WEIGHT[NBASE] = {16, 12, 12, 6, 6, 6, 6, 18, 10};
#define NLAYOUT 4
static const char *LAYOUT_NAME[NLAYOUT] = {"natural", "packed", "reversed", "negative"};
static const long LAYOUT_DISP[2][NLAYOUT][2] = {
    {{0, 8}, {0, 4}, {8, 0}, {-4, -16}},     /* int @, double @ */
    {{0, 16}, {0, 12}, {16, 0}, {-12, -32}}, /* int[3] @, double[2] @ */
};

static MPI_Datatype base_handle(int b) {
    switch (b) {
    case B_INT: return MPI_INT;
    case B_DOUBLE: return MPI_DOUBLE;
    case B_CHAR: return MPI_CHAR;
    case B_SHORT: return MPI_SHORT;
    case B_LONG_LONG: return MPI_LONG_LONG;
    case B_FLOAT: return MPI_FLOAT;
    case B_DCOMPLEX: return MPI_C_DOUBLE_COMPLEX;
    default: return MPI_DATATYPE_NULL;
    }
}

/* ------------------------------------------------------------------------------------------
 * Constructor trees.
 * ------------------------------------------------------------------------------------------ */
enum {
    K_BASE, K_CONTIG, K_VECTOR, K_HVECTOR, K_INDEXED, K_HINDEXED, K_INDEXED_BLOCK, K_HINDEXED_BLOCK,
    K_STRUCT, K_SUBARRAY, K_DARRAY, K_RESIZED, K_DUP, NKIND
};
static const char *KIND_NAME[NKIND] = {"base", "contiguous", "vector", "hvector", "indexed", "hindexed",
                                       "indexed_block", "hindexed_block", "struct", "subarray", "darray",
                                       "resized", "dup"};
/* Choice weights of the constructors above a leaf (K_BASE is never drawn). */
static const int KIND_WEIGHT[NKIND] = {0, 7, 12, 10, 9, 9, 8, 10, 10, 10, 6, 10, 3};

typedef struct node {
    int kind;
    int base, layout;          /* K_BASE */
    long count, blocklen;      /* contiguous, vector, hvector, *_block: count/blocklen */
    long stride;               /* vector: elements; hvector: bytes */
    int nblk;                  /* indexed, hindexed, *_block, struct: number of blocks/members */
    int *blens;                /* indexed, hindexed, struct */
    long *disps;               /* indexed, indexed_block: elements; h*, struct: bytes */
    struct node **kids;        /* struct: nblk children; others: kids[0] */
    int ndims, order;          /* subarray, darray */
    int sizes[3], subsizes[3], starts[3];
    int dsize, drank, distribs[3], dargs[3], psizes[3];
    long rlb, rext;            /* resized */
    long units;                /* base units per element */
    MPI_Datatype type;
    int owned;                 /* type must be freed */
    MPI_Aint lb, ext, tlb, text;
    int size;
} node;

typedef struct {
    node **v;
    int n, cap;
} nodelist;

static void nl_push(nodelist *l, node *n) {
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->v = realloc(l->v, (size_t)l->cap * sizeof *l->v);
        if (!l->v) die("out of memory");
    }
    l->v[l->n++] = n;
}

static void nl_free(nodelist *l) {
    for (int i = l->n - 1; i >= 0; i--) {
        node *n = l->v[i];
        if (n->owned && n->type != MPI_DATATYPE_NULL) MPI_Type_free(&n->type);
        free(n->blens);
        free(n->disps);
        free(n->kids);
        free(n);
    }
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

static void describe(const node *n, sbuf_t *b) {
    switch (n->kind) {
    case K_BASE:
        if (n->base >= B_S_ID) sb_printf(b, "%s[%s]", BASES[n->base].name, LAYOUT_NAME[n->layout]);
        else sb_printf(b, "%s", BASES[n->base].name);
        return;
    case K_CONTIG: sb_printf(b, "contiguous(%ld, ", n->count); break;
    case K_VECTOR: sb_printf(b, "vector(%ld, %ld, %ld, ", n->count, n->blocklen, n->stride); break;
    case K_HVECTOR: sb_printf(b, "hvector(%ld, %ld, %ldB, ", n->count, n->blocklen, n->stride); break;
    case K_INDEXED:
    case K_HINDEXED:
        sb_printf(b, "%s(%d, bl={", KIND_NAME[n->kind], n->nblk);
        for (int i = 0; i < n->nblk; i++) sb_printf(b, "%s%d", i ? "," : "", n->blens[i]);
        sb_printf(b, "}, d%s={", n->kind == K_HINDEXED ? "B" : "");
        for (int i = 0; i < n->nblk; i++) sb_printf(b, "%s%ld", i ? "," : "", n->disps[i]);
        sb_printf(b, "}, ");
        break;
    case K_INDEXED_BLOCK:
    case K_HINDEXED_BLOCK:
        sb_printf(b, "%s(%d, %ld, d%s={", KIND_NAME[n->kind], n->nblk, n->blocklen, n->kind == K_HINDEXED_BLOCK ? "B" : "");
        for (int i = 0; i < n->nblk; i++) sb_printf(b, "%s%ld", i ? "," : "", n->disps[i]);
        sb_printf(b, "}, ");
        break;
    case K_STRUCT:
        sb_printf(b, "struct(%d, {", n->nblk);
        for (int i = 0; i < n->nblk; i++) {
            sb_printf(b, "%s%d x ", i ? "; " : "", n->blens[i]);
            describe(n->kids[i], b);
            sb_printf(b, " @%ldB", n->disps[i]);
        }
        sb_printf(b, "})");
        goto bounds;
    case K_SUBARRAY:
        sb_printf(b, "subarray(%d, sizes={", n->ndims);
        for (int i = 0; i < n->ndims; i++) sb_printf(b, "%s%d", i ? "," : "", n->sizes[i]);
        sb_printf(b, "}, sub={");
        for (int i = 0; i < n->ndims; i++) sb_printf(b, "%s%d", i ? "," : "", n->subsizes[i]);
        sb_printf(b, "}, starts={");
        for (int i = 0; i < n->ndims; i++) sb_printf(b, "%s%d", i ? "," : "", n->starts[i]);
        sb_printf(b, "}, %s, ", n->order == MPI_ORDER_C ? "C" : "Fortran");
        break;
    case K_DARRAY:
        sb_printf(b, "darray(size=%d, rank=%d, %d, gsizes={", n->dsize, n->drank, n->ndims);
        for (int i = 0; i < n->ndims; i++) sb_printf(b, "%s%d", i ? "," : "", n->sizes[i]);
        sb_printf(b, "}, distribs={");
        for (int i = 0; i < n->ndims; i++)
            sb_printf(b, "%s%s", i ? "," : "",
                      n->distribs[i] == MPI_DISTRIBUTE_BLOCK ? "BLOCK" : n->distribs[i] == MPI_DISTRIBUTE_CYCLIC ? "CYCLIC" : "NONE");
        sb_printf(b, "}, dargs={");
        for (int i = 0; i < n->ndims; i++) {
            if (n->dargs[i] == MPI_DISTRIBUTE_DFLT_DARG) sb_printf(b, "%sDFLT", i ? "," : "");
            else sb_printf(b, "%s%d", i ? "," : "", n->dargs[i]);
        }
        sb_printf(b, "}, psizes={");
        for (int i = 0; i < n->ndims; i++) sb_printf(b, "%s%d", i ? "," : "", n->psizes[i]);
        sb_printf(b, "}, %s, ", n->order == MPI_ORDER_C ? "C" : "Fortran");
        break;
    case K_RESIZED: sb_printf(b, "resized(lb=%ld, extent=%ld, ", n->rlb, n->rext); break;
    case K_DUP: sb_printf(b, "dup("); break;
    }
    describe(n->kids[0], b);
    sb_printf(b, ")");
bounds:
    sb_printf(b, "[lb=%ld ext=%ld tlb=%ld text=%ld size=%d]", (long)n->lb, (long)n->ext, (long)n->tlb, (long)n->text, n->size);
}

/* Generation context of one side of a pair. */
typedef struct {
    rng_t *r;
    int base, layout;
    int recv;       /* receive type: blocks must not overlap */
    nodelist *nodes;
    int *fails;     /* MPI errors while building (the tree is then rejected) */
} gctx;

static node *new_node(gctx *g, int kind) {
    node *n = calloc(1, sizeof *n);
    if (!n) die("out of memory");
    n->kind = kind;
    n->type = MPI_DATATYPE_NULL;
    nl_push(g->nodes, n);
    return n;
}

static void set_kids1(node *n, node *k) {
    n->kids = xmalloc(sizeof(node *));
    n->kids[0] = k;
}

/* After the MPI constructor call: record bounds, or count a failure. */
static void finish(gctx *g, node *n, int rc, const char *what) {
    if (rc != MPI_SUCCESS) {
        sbuf_t b = {0};
        describe(n->kind == K_BASE ? n : n->kids[0], &b);
        fprintf(stderr, "[rank %d] p2p_typepairs: %s failed (class %d) building over %s\n", g_rank, what, err_class(rc), b.s);
        sb_free(&b);
        n->type = MPI_DATATYPE_NULL;
        (*g->fails)++;
        return;
    }
    n->owned = 1;
    if (MPI_Type_get_extent(n->type, &n->lb, &n->ext) != MPI_SUCCESS ||
        MPI_Type_get_true_extent(n->type, &n->tlb, &n->text) != MPI_SUCCESS || MPI_Type_size(n->type, &n->size) != MPI_SUCCESS)
        die("MPI_Type_get_extent/true_extent/size failed on a new %s", what);
}

/* Divisors of n in [lo, hi], ascending; returns how many (at most max). */
static int divisors(long n, long lo, long hi, long *out, int max) {
    int k = 0;
    long small[4096], large[4096];
    int ns = 0, nlg = 0;
    for (long d = 1; d * d <= n && ns < 4096; d++)
        if (n % d == 0) {
            small[ns++] = d;
            if (d != n / d) large[nlg++] = n / d;
        }
    for (int i = 0; i < ns && k < max; i++)
        if (small[i] >= lo && small[i] <= hi) out[k++] = small[i];
    for (int i = nlg - 1; i >= 0 && k < max; i--)
        if (large[i] >= lo && large[i] <= hi) out[k++] = large[i];
    return k;
}

/* A random divisor of n in [lo, hi] (1 if none), uniform over the divisors, which spreads
 * roughly log-uniformly for the composite sizes used here. */
static long pick_div(rng_t *r, long n, long lo, long hi) {
    long d[1024];
    int k = divisors(n, lo, hi, d, 1024);
    return k ? d[rbelow(r, k)] : 1;
}

/* The divisor of n nearest (in log) to `target` (ties: the smaller). */
static long near_div(long n, double target) {
    long d[1024];
    int k = divisors(n, 1, n, d, 1024);
    long best = 1;
    double bd = 1e300;
    for (int i = 0; i < k; i++) {
        double x = rabs(lg2((double)d[i]) - lg2(target));
        if (x < bd) {
            bd = x;
            best = d[i];
        }
    }
    return best;
}

/* The replication factor of a constructor `levels` levels above the leaves: a divisor of n > 1
 * when n > 1 (usually), about n^(1/levels) so that every level keeps something to replicate
 * (sometimes all of it, sometimes a uniform divisor). */
static long pick_factor(rng_t *r, long n, int levels) {
    if (n <= 1) return 1;
    int c = (int)rbelow(r, 100);
    if (c < 8) return pick_div(r, n, 1, n);
    if (c < 30 || levels <= 1) return pick_div(r, n, 2, n);
    double share = (0.4 + 1.2 * runit(r)) / levels;
    long k = near_div(n, rpow((double)n, share));
    return k > 1 ? k : pick_div(r, n, 2, n);
}

/* Gap ratio for one level, taken out of the budget. */
static double take_ratio(gctx *g, double *budget) {
    if (*budget <= 1.01 || rchance(g->r, 35)) return 1.0;
    double max = *budget < 4.0 ? *budget : 4.0;
    double x = 1.0 + runit(g->r) * (max - 1.0);
    *budget /= x;
    return x;
}

/* Random composition of total into n positive parts (n <= total). */
static void compose(rng_t *r, long total, int n, long *parts) {
    for (int i = 0; i < n; i++) parts[i] = 1;
    long rest = total - n;
    /* a few big moves then spread the remainder */
    for (int i = 0; i < n && rest > 0; i++) {
        long x = i == n - 1 ? rest : rbelow(r, rest + 1);
        parts[rbelow(r, n)] += x;
        rest -= x;
    }
}

static void shuffle(rng_t *r, int *v, int n) {
    for (int i = n - 1; i > 0; i--) {
        int j = (int)rbelow(r, i + 1), t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

static node *gen(gctx *g, long T, int depth, double budget);

static node *mk_base(gctx *g) {
    node *n = new_node(g, K_BASE);
    n->base = g->base;
    n->layout = g->layout;
    n->units = 1;
    if (g->base < B_S_ID) {
        n->type = base_handle(g->base);
        n->owned = 0;
        MPI_Type_get_extent(n->type, &n->lb, &n->ext);
        MPI_Type_get_true_extent(n->type, &n->tlb, &n->text);
        MPI_Type_size(n->type, &n->size);
        return n;
    }
    int s = g->base - B_S_ID;
    int bl[2] = {s ? 3 : 1, s ? 2 : 1};
    MPI_Aint d[2] = {LAYOUT_DISP[s][g->layout][0], LAYOUT_DISP[s][g->layout][1]};
    MPI_Datatype t[2] = {MPI_INT, MPI_DOUBLE};
    finish(g, n, MPI_Type_create_struct(2, bl, d, t, &n->type), "MPI_Type_create_struct (base)");
    return n;
}

static node *mk_contig(gctx *g, long k, node *child) {
    node *n = new_node(g, K_CONTIG);
    n->count = k;
    n->units = k * child->units;
    set_kids1(n, child);
    finish(g, n, MPI_Type_contiguous((int)k, child->type, &n->type), "MPI_Type_contiguous");
    return n;
}

/* Lays out nb blocks of sizes len[i] (in `unit`s of memory) without overlap (or, for a send type,
 * sometimes overlapping), in a random memory order, with gaps from a slack of `slack` units,
 * then shifted (often to negative displacements). Writes displacements in units. */
static void layout_blocks(gctx *g, int nb, const long *len, long slack, long *disp) {
    int *perm = xmalloc((size_t)nb * sizeof(int));
    for (int i = 0; i < nb; i++) perm[i] = i;
    if (!rchance(g->r, 25)) shuffle(g->r, perm, nb);
    long pos = 0;
    int overlap = !g->recv && rchance(g->r, 6);
    for (int i = 0; i < nb; i++) {
        int b = perm[i];
        disp[b] = pos;
        long gap = slack > 0 && rchance(g->r, 70) ? rbelow(g->r, 2 * slack / nb + 1) : 0;
        pos += len[b] + gap;
        if (overlap && rchance(g->r, 50)) pos -= rrange(g->r, 0, len[b]);
    }
    long shift = 0;
    int s = (int)rbelow(g->r, 10);
    if (s < 4) shift = -rrange(g->r, 0, pos);      /* negative displacements */
    else if (s < 6) shift = rrange(g->r, 0, pos / 2 + 1);
    for (int i = 0; i < nb; i++) disp[i] += shift;
    free(perm);
}

static node *gen_vector(gctx *g, long T, int depth, double budget, int h) {
    node *n = new_node(g, h ? K_HVECTOR : K_VECTOR);
    long k = pick_factor(g->r, T, depth);
    long b = pick_div(g->r, k, 1, k);
    if (rchance(g->r, 30)) b = 1;
    if (k % b) b = 1;
    long c = k / b;
    double ratio = take_ratio(g, &budget);
    node *child = gen(g, T / k, depth - 1, budget);
    set_kids1(n, child);
    n->count = c;
    n->blocklen = b;
    n->units = T;
    if (child->type == MPI_DATATYPE_NULL) return n;
    if (!h) {
        long stride;
        if (!g->recv && rchance(g->r, 6)) stride = rrange(g->r, 0, b - 1 > 0 ? b - 1 : 0);
        else {
            long gap = (long)((double)b * (ratio - 1.0));
            if (ratio > 1.0 && gap == 0 && rchance(g->r, 50)) gap = 1;
            stride = b + gap;
        }
        if (rchance(g->r, 25)) stride = -stride;
        n->stride = stride;
        finish(g, n, MPI_Type_vector((int)c, (int)b, (int)stride, child->type, &n->type), "MPI_Type_vector");
    } else {
        long span = b * (long)child->ext;
        long stride;
        if (!g->recv && rchance(g->r, 6)) stride = rrange(g->r, 0, span - 1 > 0 ? span - 1 : 0);
        else {
            long gap = (long)((double)span * (ratio - 1.0));
            if (ratio > 1.0) gap += rrange(g->r, 0, 7); /* unaligned strides too */
            stride = span + gap;
        }
        if (rchance(g->r, 25)) stride = -stride;
        n->stride = stride;
        finish(g, n, MPI_Type_create_hvector((int)c, (int)b, (MPI_Aint)stride, child->type, &n->type), "MPI_Type_create_hvector");
    }
    return n;
}

static int max_blocks(gctx *g) { return rchance(g->r, 8) ? 4096 : rchance(g->r, 30) ? 64 : 12; }

static node *gen_indexed(gctx *g, long T, int depth, double budget, int kind) {
    node *n = new_node(g, kind);
    int blockform = kind == K_INDEXED_BLOCK || kind == K_HINDEXED_BLOCK;
    int bytes = kind == K_HINDEXED || kind == K_HINDEXED_BLOCK;
    long k = pick_factor(g->r, T, depth);
    int cap = max_blocks(g);
    long nb, b = 0;
    long *len;
    if (blockform) {
        /* blocklen b with k / b <= cap blocks */
        long lo = (k + cap - 1) / cap;
        b = pick_div(g->r, k, lo < 1 ? 1 : lo, k);
        if (k % b) b = k;
        nb = k / b;
    } else {
        nb = rrange(g->r, 1, k < cap ? k : cap);
    }
    int zeros = !blockform && rchance(g->r, 8) ? (int)rrange(g->r, 1, 2) : 0; /* zero-length blocks */
    n->nblk = (int)nb + zeros;
    n->blens = xmalloc((size_t)n->nblk * sizeof(int));
    n->disps = xmalloc((size_t)n->nblk * sizeof(long));
    len = xmalloc((size_t)n->nblk * sizeof(long));
    if (blockform) {
        for (int i = 0; i < n->nblk; i++) len[i] = b;
        n->blocklen = b;
    } else {
        compose(g->r, k, (int)nb, len);
        for (int i = 0; i < zeros; i++) {
            int at = (int)rbelow(g->r, nb + i + 1);
            memmove(len + at + 1, len + at, (size_t)(nb + i - at) * sizeof(long));
            len[at] = 0;
        }
    }
    for (int i = 0; i < n->nblk; i++) n->blens[i] = (int)len[i];
    double ratio = take_ratio(g, &budget);
    node *child = gen(g, T / k, depth - 1, budget);
    set_kids1(n, child);
    n->units = T;
    if (child->type == MPI_DATATYPE_NULL) {
        free(len);
        return n;
    }
    if (bytes) {
        long *blen_b = xmalloc((size_t)n->nblk * sizeof(long));
        for (int i = 0; i < n->nblk; i++) blen_b[i] = len[i] * (long)child->ext;
        layout_blocks(g, n->nblk, blen_b, (long)((double)k * (double)child->ext * (ratio - 1.0)), n->disps);
        free(blen_b);
    } else {
        layout_blocks(g, n->nblk, len, (long)((double)k * (ratio - 1.0)), n->disps);
    }
    free(len);
    int rc;
    if (kind == K_INDEXED) {
        int *d = xmalloc((size_t)n->nblk * sizeof(int));
        for (int i = 0; i < n->nblk; i++) d[i] = (int)n->disps[i];
        rc = MPI_Type_indexed(n->nblk, n->blens, d, child->type, &n->type);
        free(d);
    } else if (kind == K_INDEXED_BLOCK) {
        int *d = xmalloc((size_t)n->nblk * sizeof(int));
        for (int i = 0; i < n->nblk; i++) d[i] = (int)n->disps[i];
        rc = MPI_Type_create_indexed_block(n->nblk, (int)b, d, child->type, &n->type);
        free(d);
    } else {
        MPI_Aint *d = xmalloc((size_t)n->nblk * sizeof(MPI_Aint));
        for (int i = 0; i < n->nblk; i++) d[i] = (MPI_Aint)n->disps[i];
        if (kind == K_HINDEXED) rc = MPI_Type_create_hindexed(n->nblk, n->blens, d, child->type, &n->type);
        else rc = MPI_Type_create_hindexed_block(n->nblk, (int)b, d, child->type, &n->type);
        free(d);
    }
    finish(g, n, rc, KIND_NAME[kind]);
    return n;
}

static node *gen_struct(gctx *g, long T, int depth, double budget) {
    node *n = new_node(g, K_STRUCT);
    int nm = (int)rrange(g->r, 1, T < 4 ? T : 4);
    long parts[4];
    compose(g->r, T, nm, parts);
    n->nblk = nm;
    n->blens = xmalloc((size_t)nm * sizeof(int));
    n->disps = xmalloc((size_t)nm * sizeof(long));
    n->kids = xmalloc((size_t)nm * sizeof(node *));
    n->units = T;
    double ratio = take_ratio(g, &budget);
    long len[4] = {0}, total = 0;
    int bad = 0;
    for (int i = 0; i < nm; i++) {
        long bl = rchance(g->r, 50) ? 1 : pick_div(g->r, parts[i], 1, parts[i]);
        n->blens[i] = (int)bl;
        n->kids[i] = gen(g, parts[i] / bl, depth - 1, budget);
        if (n->kids[i]->type == MPI_DATATYPE_NULL) bad = 1;
        len[i] = bl * (long)n->kids[i]->ext;
        total += len[i];
    }
    if (bad) return n;
    /* layout in bytes of the members' [lb, lb + bl * extent) ranges */
    long pos[4];
    layout_blocks(g, nm, len, (long)((double)total * (ratio - 1.0)), pos);
    MPI_Aint d[4];
    MPI_Datatype t[4];
    for (int i = 0; i < nm; i++) {
        n->disps[i] = pos[i] - (long)n->kids[i]->lb;
        d[i] = (MPI_Aint)n->disps[i];
        t[i] = n->kids[i]->type;
    }
    finish(g, n, MPI_Type_create_struct(nm, n->blens, d, t, &n->type), "MPI_Type_create_struct");
    return n;
}

/* Splits k into nd factors (random divisors). */
static void factor_dims(rng_t *r, long k, int nd, int *out) {
    for (int i = 0; i < nd - 1; i++) {
        long f = pick_div(r, k, 1, k);
        out[i] = (int)f;
        k /= f;
    }
    out[nd - 1] = (int)k;
    /* shuffle which dimension gets what */
    for (int i = nd - 1; i > 0; i--) {
        int j = (int)rbelow(r, i + 1), t = out[i];
        out[i] = out[j];
        out[j] = t;
    }
}

static node *gen_subarray(gctx *g, long T, int depth, double budget) {
    node *n = new_node(g, K_SUBARRAY);
    long k = pick_factor(g->r, T, depth);
    n->ndims = (int)rrange(g->r, 1, 3);
    n->order = rchance(g->r, 50) ? MPI_ORDER_C : MPI_ORDER_FORTRAN;
    factor_dims(g->r, k, n->ndims, n->subsizes);
    double ratio = take_ratio(g, &budget);
    double rd = rpow(ratio, 1.0 / n->ndims);
    for (int i = 0; i < n->ndims; i++) {
        long extra = (long)((double)n->subsizes[i] * (rd - 1.0));
        if (ratio > 1.0 && extra == 0 && rchance(g->r, 50)) extra = 1;
        n->sizes[i] = n->subsizes[i] + (int)extra;
        n->starts[i] = (int)rrange(g->r, 0, extra);
    }
    node *child = gen(g, T / k, depth - 1, budget);
    set_kids1(n, child);
    n->units = T;
    if (child->type == MPI_DATATYPE_NULL) return n;
    finish(g, n, MPI_Type_create_subarray(n->ndims, n->sizes, n->subsizes, n->starts, n->order, child->type, &n->type),
           "MPI_Type_create_subarray");
    return n;
}

/* darray: the local sizes are chosen first (a factorization of k), then each dimension's
 * global size and distribution so that the chosen process coordinate gets exactly that many. */
static node *gen_darray(gctx *g, long T, int depth, double budget) {
    node *n = new_node(g, K_DARRAY);
    long k = pick_factor(g->r, T, depth);
    int nd = (int)rrange(g->r, 1, 3), loc[3], coord[3];
    factor_dims(g->r, k, nd, loc);
    n->ndims = nd;
    n->order = rchance(g->r, 50) ? MPI_ORDER_C : MPI_ORDER_FORTRAN;
    double ratio = take_ratio(g, &budget);
    double spend = ratio; /* the global/local ratio may use this much */
    for (int i = 0; i < nd; i++) {
        int p = 1;
        if (spend >= 2.0 && rchance(g->r, 70)) {
            p = (int)rrange(g->r, 2, spend >= 3.0 ? 3 : 2);
            spend /= p;
        }
        n->psizes[i] = p;
        coord[i] = (int)rbelow(g->r, p);
        int l = loc[i];
        int which = (int)rbelow(g->r, 3);
        if (p == 1 && which == 0) { /* NONE */
            n->distribs[i] = MPI_DISTRIBUTE_NONE;
            n->dargs[i] = MPI_DISTRIBUTE_DFLT_DARG;
            n->sizes[i] = l;
        } else if (which == 1 || (p > 1 && which == 0)) { /* BLOCK */
            n->distribs[i] = MPI_DISTRIBUTE_BLOCK;
            if (rchance(g->r, 50)) {
                n->dargs[i] = MPI_DISTRIBUTE_DFLT_DARG;
                n->sizes[i] = p * l;
            } else { /* explicit block size d >= l; coordinate c is the last with data */
                int d = l + (int)rrange(g->r, 0, l);
                n->dargs[i] = d;
                n->sizes[i] = coord[i] * d + l;
            }
        } else { /* CYCLIC(d), d | l */
            n->distribs[i] = MPI_DISTRIBUTE_CYCLIC;
            int d = (int)pick_div(g->r, l, 1, l);
            n->dargs[i] = rchance(g->r, 30) ? MPI_DISTRIBUTE_DFLT_DARG : d;
            n->sizes[i] = p * l;
        }
    }
    n->dsize = 1;
    n->drank = 0;
    for (int i = 0; i < nd; i++) { /* process grid is row-major whatever the array order */
        n->dsize *= n->psizes[i];
        n->drank = n->drank * n->psizes[i] + coord[i];
    }
    node *child = gen(g, T / k, depth - 1, budget);
    set_kids1(n, child);
    n->units = T;
    if (child->type == MPI_DATATYPE_NULL) return n;
    finish(g, n,
           MPI_Type_create_darray(n->dsize, n->drank, nd, n->sizes, n->distribs, n->dargs, n->psizes, n->order, child->type,
                                  &n->type),
           "MPI_Type_create_darray");
    if (n->type != MPI_DATATYPE_NULL && (long)n->size != k * (long)child->size) {
        sbuf_t b = {0};
        describe(n, &b);
        die("generator bug: darray holds %d bytes, expected %ld x %d: %s", n->size, k, child->size, b.s);
    }
    return n;
}

static node *gen_resized(gctx *g, long T, int depth, double budget) {
    node *n = new_node(g, K_RESIZED);
    double ratio = take_ratio(g, &budget);
    node *child = gen(g, T, depth - 1, budget);
    set_kids1(n, child);
    n->units = T;
    if (child->type == MPI_DATATYPE_NULL) return n;
    long text = (long)child->text, tlb = (long)child->tlb;
    long pad = (long)((double)text * (ratio - 1.0));
    if (pad == 0 && rchance(g->r, 60)) pad = rrange(g->r, 1, 16);
    if (g->recv) {
        if (rchance(g->r, 88)) { /* [lb, lb + extent) covers the data: lb <= true lb */
            long delta = rrange(g->r, 0, pad);
            n->rlb = tlb - delta;
            n->rext = text + pad;
        } else { /* lb past the true lb; extent still >= true extent */
            n->rlb = tlb + rrange(g->r, 1, 16);
            n->rext = text + pad;
        }
    } else {
        n->rlb = tlb + rrange(g->r, -pad - 16, text);
        n->rext = rchance(g->r, 15) ? rrange(g->r, text / 2 > 0 ? text / 2 : 1, text) : text + pad;
    }
    finish(g, n, MPI_Type_create_resized(child->type, (MPI_Aint)n->rlb, (MPI_Aint)n->rext, &n->type), "MPI_Type_create_resized");
    return n;
}

static node *gen(gctx *g, long T, int depth, double budget) {
    if (depth <= 0) {
        node *b = mk_base(g);
        if (T == 1 || b->type == MPI_DATATYPE_NULL) return b;
        return mk_contig(g, T, b);
    }
    int kind = rweighted(g->r, KIND_WEIGHT, NKIND);
    switch (kind) {
    case K_CONTIG: {
        long k = pick_factor(g->r, T, depth);
        node *c = gen(g, T / k, depth - 1, budget);
        if (c->type == MPI_DATATYPE_NULL) return c;
        return mk_contig(g, k, c);
    }
    case K_VECTOR: return gen_vector(g, T, depth, budget, 0);
    case K_HVECTOR: return gen_vector(g, T, depth, budget, 1);
    case K_INDEXED:
    case K_HINDEXED:
    case K_INDEXED_BLOCK:
    case K_HINDEXED_BLOCK: return gen_indexed(g, T, depth, budget, kind);
    case K_STRUCT: return gen_struct(g, T, depth, budget);
    case K_SUBARRAY: return gen_subarray(g, T, depth, budget);
    case K_DARRAY: return gen_darray(g, T, depth, budget);
    case K_RESIZED: return gen_resized(g, T, depth, budget);
    default: { /* K_DUP */
        node *n = new_node(g, K_DUP);
        node *c = gen(g, T, depth - 1, budget);
        set_kids1(n, c);
        n->units = T;
        if (c->type == MPI_DATATYPE_NULL) return n;
        finish(g, n, MPI_Type_dup(c->type, &n->type), "MPI_Type_dup");
        return n;
    }
    }
}

/* ------------------------------------------------------------------------------------------
 * Buffers of (type, count).
 * ------------------------------------------------------------------------------------------ */
typedef struct {
    MPI_Datatype t;
    int count;
    long bytes;  /* count x size */
    MPI_Aint lo; /* lowest byte touched, relative to the buffer address */
    size_t span; /* bytes from lo to the highest byte touched */
    size_t total;
} spec_t;

static spec_t spec_of(MPI_Datatype t, int count) {
    spec_t s;
    MPI_Aint lb, ext, tlb, text;
    int size;
    if (MPI_Type_get_extent(t, &lb, &ext) != MPI_SUCCESS || MPI_Type_get_true_extent(t, &tlb, &text) != MPI_SUCCESS ||
        MPI_Type_size(t, &size) != MPI_SUCCESS)
        die("extent/size query failed");
    s.t = t;
    s.count = count;
    s.bytes = (long)size * count;
    MPI_Aint last = (MPI_Aint)(count - 1) * ext;
    MPI_Aint lo = tlb + (last < 0 ? last : 0), hi = tlb + text + (last > 0 ? last : 0);
    s.lo = lo;
    s.span = (size_t)(hi - lo);
    s.total = s.span + 2 * GUARD;
    return s;
}

typedef struct {
    unsigned char *base, *p;
    size_t total;
} mem_t;

static mem_t mem_alloc(const spec_t *s, uint64_t seed) {
    mem_t m;
    m.total = s->total;
    m.base = xmalloc(m.total);
    m.p = m.base + GUARD - s->lo;
    fill(m.base, m.total, seed);
    return m;
}

static void mem_free(mem_t *m) {
    free(m->base);
    m->base = m->p = NULL;
}

/* Whether (t, count) writes every byte of its type map once (no overlap). */
static int no_overlap(const spec_t *s) {
    unsigned char *mask = calloc(s->total, 1), *ones = xmalloc((size_t)s->bytes);
    if (!mask) die("out of memory");
    memset(ones, 1, (size_t)s->bytes);
    int pos = 0;
    if (PMPI_Unpack(ones, (int)s->bytes, &pos, mask + GUARD - s->lo, s->count, s->t, MPI_COMM_SELF) != MPI_SUCCESS)
        die("PMPI_Unpack (overlap check) failed");
    long set = 0;
    for (size_t i = 0; i < s->total; i++) set += mask[i];
    free(mask);
    free(ones);
    return set == s->bytes;
}

/* ------------------------------------------------------------------------------------------
 * Pairs.
 * ------------------------------------------------------------------------------------------ */
enum {
    P_SEND_RECV, P_SSEND, P_BSEND, P_RSEND, P_NONBLOCKING, P_MULTI, P_MULTI_RECV, P_PERSISTENT, P_PROBE, P_IPROBE,
    P_MPROBE, P_IMPROBE, P_SELF_ISEND, P_SELF_IRECV, P_SELF_MPROBE, P_SENDRECV, P_SENDRECV_REPLACE, NPAT
};
static const char *PAT_NAME[NPAT] = {"send-recv", "ssend", "bsend", "rsend", "nonblocking", "multi", "multi-recv",
                                     "persistent", "probe", "iprobe", "mprobe", "improbe", "self-isend", "self-irecv",
                                     "self-mprobe", "sendrecv", "sendrecv-replace"};
static const int PAT_WEIGHT[NPAT] = {8, 5, 5, 5, 14, 7, 5, 7, 5, 5, 6, 5, 5, 4, 3, 6, 5};
enum { CM_WAIT, CM_TEST, CM_WAITALL, CM_TESTALL, CM_WAITANY, CM_TESTANY, CM_WAITSOME, CM_TESTSOME, NCM };
static const char *CM_NAME[NCM] = {"wait", "test", "waitall", "testall", "waitany", "testany", "waitsome", "testsome"};
enum { TOPO_PAIRS, TOPO_RING, TOPO_SELF };

typedef struct {
    long index;
    int base, slayout, rlayout, sdepth, rdepth;
    long M, Mr; /* units in the message, and in the receive (count x units per element) */
    int scount, rcount;
    node *stree, *rtree;
    MPI_Datatype stype, rtype;
    spec_t ss, rs;
    int pattern, cm, cm2, topo, use_dup, any_src, any_tag, k, recv_first, tag, size_class;
    int sattempts, rattempts;
    nodelist nodes;
    sbuf_t desc;
} pair_t;

static const char *SIZE_NAME[] = {"tiny", "small", "around-129", "eager", "mid", "around-S*", "around-512K", "large"};

static long pick_units(rng_t *r, int usize, int *cls) {
    static const int w[8] = {12, 18, 14, 14, 10, 13, 9, 10};
    static const long around_min[] = {64, 65, 66, 127, 128, 129, 130, 131, 192, 193, 256, 257};
    static const long eager[] = {1024, 2048, 4095, 4096, 4097, 8192, 12288, 16384, 32768, 65535, 65536, 65537, 131072};
    static const long sstar[] = {262080, 262081, 262082, 262143, 262144, 262145, 262146, 262147, 262208, 262209};
    static const long above[] = {524287, 524288, 524289, 524290, 524352, 1048576};
    int c = rweighted(r, w, 8);
    *cls = c;
    long bytes, delta = 0;
    switch (c) {
    case 0: bytes = rrange(r, 1, 16) * usize; break;
    case 1: bytes = (long)ex2(4.0 + runit(r) * 8.0); break; /* 16 B .. 4 KiB */
    case 2: bytes = around_min[rbelow(r, sizeof around_min / sizeof *around_min)]; delta = rrange(r, -1, 1); break;
    case 3: bytes = eager[rbelow(r, sizeof eager / sizeof *eager)]; delta = rrange(r, -1, 1); break;
    case 4: bytes = (long)ex2(12.0 + runit(r) * 6.0); break; /* 4 KiB .. 256 KiB */
    case 5: bytes = sstar[rbelow(r, sizeof sstar / sizeof *sstar)]; delta = rrange(r, -1, 1); break;
    case 6: bytes = above[rbelow(r, sizeof above / sizeof *above)]; delta = rrange(r, -1, 1); break;
    default: bytes = (long)ex2(19.0 + runit(r) * (lg2((double)MAX_MSG) - 19.0)); break; /* 512 KiB .. MAX_MSG */
    }
    long u = (bytes + usize / 2) / usize + delta;
    if (u < 1) u = 1;
    if (u * usize > MAX_MSG) u = MAX_MSG / usize;
    return u;
}

/* count for one side; may adjust *M upwards or to a multiple (send side: *M is free to move;
 * receive side: only up, and equal stays equal when `keep`). */
static int pick_count(rng_t *r, long *M, int depth0, int keep, long minM) {
    if (depth0) return (int)*M;
    static const int menu[] = {2, 3, 4, 5, 7, 17, 31, 17};
    int k = (int)rbelow(r, 100);
    long c;
    if (k < 40) c = 1;
    else if (k < 70 || keep) c = pick_div(r, *M, 1, *M);
    else {
        c = menu[rbelow(r, sizeof menu / sizeof *menu)];
        long m = (*M + c - 1) / c * c;
        if (m < minM) m = (minM + c - 1) / c * c;
        *M = m;
    }
    return (int)c;
}

static int side_depth(rng_t *r) {
    static const int w[5] = {8, 24, 30, 22, 16};
    return rweighted(r, w, 5);
}

/* Builds one side; retries with a smaller gap budget while the span is too large or (receive) the
 * blocks overlap. Returns the tree; *attempts counts the tries. */
static node *build_side(pair_t *P, rng_t *r, int recv, int depth, long T, int count, int layout, spec_t *spec, int *attempts) {
    long bytes = T * count * (long)BASES[P->base].size;
    double budget = (double)MAX_SPAN / (double)(bytes > 0 ? bytes : 1) / 1.5;
    if (budget > 24.0) budget = 24.0;
    if (budget < 1.0) budget = 1.0;
    for (int a = 0;; a++) {
        int fails = 0;
        gctx g = {r, P->base, layout, recv, &P->nodes, &fails};
        int mark = P->nodes.n;
        node *t = gen(&g, T, a >= 6 ? 0 : depth, a >= 6 ? 1.0 : budget);
        *attempts = a + 1;
        if (!fails && t->type != MPI_DATATYPE_NULL) {
            if (MPI_Type_commit(&t->type) != MPI_SUCCESS) die("MPI_Type_commit failed");
            *spec = spec_of(t->type, count);
            if ((long)spec->span <= MAX_SPAN && spec->bytes == bytes && (!recv || no_overlap(spec))) return t;
            if (spec->bytes != bytes) {
                sbuf_t b = {0};
                describe(t, &b);
                die("generator bug: %ld bytes, expected %ld: %s", spec->bytes, bytes, b.s);
            }
        }
        if (a >= 6) die("could not build a %s type of %ld units (count %d)", recv ? "receive" : "send", T, count);
        /* drop this attempt's nodes */
        nodelist tail = {P->nodes.v + mark, P->nodes.n - mark, 0};
        for (int i = tail.n - 1; i >= 0; i--) {
            node *n = tail.v[i];
            if (n->owned && n->type != MPI_DATATYPE_NULL) MPI_Type_free(&n->type);
            free(n->blens);
            free(n->disps);
            free(n->kids);
            free(n);
        }
        P->nodes.n = mark;
        budget = budget / 2 < 1.0 ? 1.0 : budget / 2;
    }
}

static void make_pair(pair_t *P, uint64_t seed, long index) {
    memset(P, 0, sizeof *P);
    P->index = index;
    rng_t r = {seed_of(seed, (uint64_t)index, 0x7459, 0, 0)};
    P->base = rweighted(&r, BASE_WEIGHT, NBASE);
    P->slayout = (int)rbelow(&r, NLAYOUT);
    P->rlayout = rchance(&r, 25) ? P->slayout : (int)rbelow(&r, NLAYOUT);
    P->pattern = rweighted(&r, PAT_WEIGHT, NPAT);
    P->cm = (int)rbelow(&r, NCM);
    P->cm2 = (int)rbelow(&r, NCM);
    P->topo = rchance(&r, 50) ? TOPO_PAIRS : TOPO_RING;
    if (P->pattern == P_SELF_ISEND || P->pattern == P_SELF_IRECV || P->pattern == P_SELF_MPROBE) P->topo = TOPO_SELF;
    P->use_dup = rchance(&r, 30);
    P->any_src = rchance(&r, 20);
    P->any_tag = rchance(&r, 20);
    P->recv_first = rchance(&r, 50);
    P->tag = (int)rrange(&r, 1, 30000);
    P->k = (P->pattern == P_MULTI || P->pattern == P_MULTI_RECV) ? (int)rrange(&r, 2, 4) : 1;
    int usize = BASES[P->base].size;
    P->M = pick_units(&r, usize, &P->size_class);
    /* MPICH 4.0 (without sluice) fails to receive a message sent as MPI_PACKED or MPI_BYTE into
       a struct type of mixed basic elements above about 8 KiB: MPI_ERR_TRUNCATE with count 0
       (700 x struct{int;double}: 8400 bytes fail, 683 pass). Its own MPI_Sendrecv_replace and
       MPI_Bsend send packed bytes, so they fail on such types: those pairs use MPI_Sendrecv and
       MPI_Send instead (on both MPIs, so that a pair does not depend on the MPI) */
    if (P->base >= B_S_ID && P->M * usize > 4096) {
        if (P->pattern == P_SENDRECV_REPLACE) P->pattern = P_SENDRECV;
        if (P->pattern == P_BSEND) P->pattern = P_SEND_RECV;
    }
    P->sdepth = side_depth(&r);
    P->rdepth = side_depth(&r);
    P->scount = pick_count(&r, &P->M, P->sdepth == 0, 0, 1);
    int equal = P->pattern == P_SENDRECV_REPLACE || rchance(&r, 65);
    P->Mr = P->M;
    if (!equal) {
        P->Mr += rchance(&r, 30) ? 1 : rrange(&r, 1, P->M);
        if (P->Mr * usize > MAX_MSG + 64 * 1024) P->Mr = P->M;
    }
    P->rcount = pick_count(&r, &P->Mr, P->rdepth == 0, P->Mr == P->M, P->M);
    if (P->Mr * usize > MAX_MSG + 64 * 1024) die("generator bug: receive of %ld units", P->Mr);
    /* Sendrecv_replace receives into the send layout too: no overlap there either */
    P->stree = build_side(P, &r, P->pattern == P_SENDRECV_REPLACE, P->sdepth, P->M / P->scount, P->scount, P->slayout, &P->ss, &P->sattempts);
    P->rtree = build_side(P, &r, 1, P->rdepth, P->Mr / P->rcount, P->rcount, P->rlayout, &P->rs, &P->rattempts);
    P->stype = P->stree->type;
    P->rtype = P->rtree->type;
    /* debugging: replay the pair's types with another pattern (TYPEPAIRS_PATTERN=<name>) */
    const char *force = getenv("TYPEPAIRS_PATTERN");
    if (force)
        for (int i = 0; i < NPAT; i++)
            if (!strcmp(force, PAT_NAME[i])) {
                P->pattern = i;
                P->topo = i == P_SELF_ISEND || i == P_SELF_IRECV || i == P_SELF_MPROBE ? TOPO_SELF : P->topo == TOPO_SELF ? TOPO_PAIRS : P->topo;
                if (P->k == 1 && (i == P_MULTI || i == P_MULTI_RECV)) P->k = 2;
            }
    /* several receive allocations per rank stay bounded */
    size_t per = P->rs.total > P->ss.total ? P->rs.total : P->ss.total;
    while (P->k > 1 && (size_t)P->k * per > (size_t)MAX_MULTI) P->k--;
    sbuf_t *d = &P->desc;
    sb_printf(d, "pair %ld: base %s, pattern %s", index, BASES[P->base].name, PAT_NAME[P->pattern]);
    if (P->pattern == P_NONBLOCKING || P->pattern == P_MULTI || P->pattern == P_PERSISTENT || P->pattern == P_IMPROBE)
        sb_printf(d, " (completion %s/%s, %s first)", CM_NAME[P->cm], CM_NAME[P->cm2], P->recv_first ? "receive" : "send");
    sb_printf(d, ", %s, comm %s, source %s, tag %d%s, k=%d, size %s\n", P->topo == TOPO_PAIRS ? "pairs" : P->topo == TOPO_RING ? "ring" : "self",
              P->use_dup ? "dup" : "world", P->any_src ? "ANY" : "peer", P->tag, P->any_tag ? " (received with ANY_TAG)" : "", P->k,
              SIZE_NAME[P->size_class]);
    sb_printf(d, "  message: %ld units = %ld bytes; receive capacity %ld units = %ld bytes\n", P->M, P->M * usize, P->Mr, P->Mr * usize);
    sb_printf(d, "  send:    count %d x ", P->scount);
    describe(P->stree, d);
    sb_printf(d, "\n           span %zu, lowest byte %ld, depth %d, attempts %d\n", P->ss.span, (long)P->ss.lo, P->sdepth, P->sattempts);
    sb_printf(d, "  receive: count %d x ", P->rcount);
    describe(P->rtree, d);
    sb_printf(d, "\n           span %zu, lowest byte %ld, depth %d, attempts %d\n", P->rs.span, (long)P->rs.lo, P->rdepth, P->rattempts);
}

static void free_pair(pair_t *P) {
    nl_free(&P->nodes);
    sb_free(&P->desc);
}

/* ------------------------------------------------------------------------------------------
 * Running a pair.
 * ------------------------------------------------------------------------------------------ */
typedef struct {
    int done, rc, src, tag, err, bytes;
} probe_t;

/* What request i of a completion array stands for. */
typedef struct {
    int recv, msg, bi, post_rc;
    const probe_t *pr;
} slot_t;

typedef struct {
    pair_t *P;
    const slot_t *slots;   /* complete()'s array */
    uint64_t seed;
    MPI_Comm comm;
    int me, dst, src, rsrc, rtag, send_first;
    mem_t sb[4], rb[4];
    spec_t *myss, *myrs;   /* my send and receive specs */
    spec_t *peer_ss;       /* my source's send spec */
    sbuf_t out;            /* digest lines of this rank */
    sbuf_t *cur;           /* where records go: out, or a slot's own buffer inside complete() */
    sbuf_t aux;
    int described;         /* the pair description was printed on stderr */
    int skip_elements;     /* MPI_Get_elements not asked (see rec_recv) */
} run_t;

static uint64_t data_seed(run_t *R, int sender, int msg) { return seed_of(R->seed, (uint64_t)R->P->index, (uint64_t)sender, (uint64_t)msg, 0xda7a); }
static uint64_t sentinel_seed(run_t *R, int receiver, int msg) { return seed_of(R->seed, (uint64_t)R->P->index, (uint64_t)receiver, (uint64_t)msg, 0x5e17); }

static void replay_line(FILE *f) {
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(lib, &len);
    int ompi = strstr(lib, "Open MPI") != NULL;
    fprintf(f, "  replay: %s -np %d", ompi ? "mpirun.openmpi --oversubscribe --allow-run-as-root" : "mpiexec.mpich", g_np);
    extern char **environ;
    for (char **e = environ; *e; e++)
        if (!strncmp(*e, "SLUICE_", 7) || !strncmp(*e, "LD_PRELOAD=", 11)) {
            const char *eq = strchr(*e, '=');
            if (ompi) fprintf(f, " -x %s", *e);
            else fprintf(f, " -env %.*s %s", (int)(eq - *e), *e, eq + 1);
        }
    fprintf(f, " %s %llu 1 %ld\n", g_argv0, (unsigned long long)g_seed, g_index);
}

static void failure(run_t *R, const char *fmt, ...) {
    g_failures++;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "[rank %d] p2p_typepairs: FAIL seed %llu pair %ld (%s): %s\n", g_rank, (unsigned long long)g_seed, R->P->index,
            PAT_NAME[R->P->pattern], msg);
    if (!R->described) {
        R->described = 1;
        fprintf(stderr, "%s", R->P->desc.s);
        replay_line(stderr);
    }
    fflush(stderr);
}

static void status_init(MPI_Status *st) {
    memset(st, 0x5a, sizeof *st); /* hidden fields as in an uninitialized status */
    st->MPI_SOURCE = -77;
    st->MPI_TAG = -77;
    st->MPI_ERROR = ERR_SENTINEL;
}

static void aux(run_t *R, const char *what, int rc) {
    sb_printf(&R->aux, " %s=%d", what, err_class(rc));
    if (rc != MPI_SUCCESS) failure(R, "%s returned class %d", what, err_class(rc));
}

static void fmt_count(char *s, size_t n, int rc, int v) {
    if (rc != MPI_SUCCESS) snprintf(s, n, "E%d", err_class(rc));
    else if (v == MPI_UNDEFINED) snprintf(s, n, "undef");
    else snprintf(s, n, "%d", v);
}

/* Records and checks receive `msg` (buffer `bi`, message from R->src). */
static void rec_recv(run_t *R, int msg, int bi, int post_rc, int rc, const MPI_Status *st, const probe_t *pr) {
    pair_t *P = R->P;
    mem_t *m = &R->rb[bi];
    const spec_t *rs = R->myrs, *ss = R->peer_ss;
    int cnt = -7, bytes = -7, elem = -7;
    int crc = MPI_Get_count(st, rs->t, &cnt);
    int brc = MPI_Get_count(st, MPI_BYTE, &bytes);
    /* MPICH 4.0 asserts (aborts) in MPI_Get_elements on a darray over a type of mixed basic
       elements (MPIR_Type_get_elements has no darray case): not asked there, on either MPI */
    int erc = R->skip_elements ? MPI_SUCCESS : MPI_Get_elements(st, rs->t, &elem);
    char c1[32], c2[32], c3[32];
    fmt_count(c1, sizeof c1, crc, cnt);
    fmt_count(c2, sizeof c2, brc, bytes);
    fmt_count(c3, sizeof c3, erc, elem);
    if (R->skip_elements) snprintf(c3, sizeof c3, "skip");
    uint64_t sum = fnv1a(m->base, m->total);
    /* expected image: the sentinel, with the sender's packed stream placed by the receive type */
    int ok = 1;
    long nbytes = ss->bytes;
    mem_t sender = mem_alloc(ss, data_seed(R, R->src, msg));
    unsigned char *stream = xmalloc((size_t)nbytes), *cap = xmalloc((size_t)rs->bytes);
    int pos = 0;
    if (PMPI_Pack(sender.p, ss->count, ss->t, stream, (int)nbytes, &pos, MPI_COMM_SELF) != MPI_SUCCESS) die("reference PMPI_Pack failed");
    unsigned char *img = xmalloc(m->total);
    fill(img, m->total, R->P->pattern == P_SENDRECV_REPLACE ? data_seed(R, R->me, msg) : sentinel_seed(R, R->me, msg));
    pos = 0;
    if (PMPI_Pack(img + GUARD - rs->lo, rs->count, rs->t, cap, (int)rs->bytes, &pos, MPI_COMM_SELF) != MPI_SUCCESS) die("reference PMPI_Pack failed");
    memcpy(cap, stream, (size_t)nbytes);
    pos = 0;
    if (PMPI_Unpack(cap, (int)rs->bytes, &pos, img + GUARD - rs->lo, rs->count, rs->t, MPI_COMM_SELF) != MPI_SUCCESS)
        die("reference PMPI_Unpack failed");
    if (memcmp(img, m->base, m->total)) {
        size_t first = 0, nd = 0;
        for (size_t i = m->total; i-- > 0;)
            if (img[i] != m->base[i]) {
                first = i;
                nd++;
            }
        long off = (long)first - GUARD + (long)rs->lo;
        failure(R, "message %d: %zu of %zu bytes of the receive allocation differ, first at buffer offset %ld%s (got 0x%02x, expected 0x%02x)",
                msg, nd, m->total, off, first < GUARD ? " (front guard)" : first >= GUARD + rs->span ? " (back guard)" : "", m->base[first],
                img[first]);
        ok = 0;
    }
    free(img);
    free(cap);
    free(stream);
    mem_free(&sender);
    int usize = BASES[P->base].size;
    long msgbytes = P->M * usize;
    int tsize = (int)(rs->bytes / rs->count);
    int xcnt = msgbytes % tsize ? MPI_UNDEFINED : (int)(msgbytes / tsize);
    int xelem = (int)(P->M * BASES[P->base].basics);
    if (post_rc != MPI_SUCCESS || rc != MPI_SUCCESS) {
        failure(R, "message %d: receive returned classes %d/%d", msg, err_class(post_rc), err_class(rc));
        ok = 0;
    }
    if (st->MPI_SOURCE != R->src || st->MPI_TAG != P->tag) {
        failure(R, "message %d: status source %d tag %d, expected %d %d", msg, st->MPI_SOURCE, st->MPI_TAG, R->src, P->tag);
        ok = 0;
    }
    if (crc || brc || erc || cnt != xcnt || bytes != msgbytes || (elem != xelem && !R->skip_elements)) {
        failure(R, "message %d: MPI_Get_count %s (expected %d), in bytes %s (expected %ld), MPI_Get_elements %s (expected %d)", msg, c1, xcnt,
                c2, msgbytes, c3, xelem);
        ok = 0;
    }
    if (pr && (pr->rc != MPI_SUCCESS || pr->src != R->src || pr->tag != P->tag || pr->bytes != msgbytes)) {
        failure(R, "message %d: probe returned class %d, source %d tag %d bytes %d (expected %d %d %ld)", msg, err_class(pr->rc), pr->src,
                pr->tag, pr->bytes, R->src, P->tag, msgbytes);
        ok = 0;
    }
    sb_printf(R->cur, "D i=%ld p=%s r=%d m=%d rc=%d/%d src=%d tag=%d err=%d cnt=%s bytes=%s elem=%s", P->index, PAT_NAME[P->pattern], R->me,
              msg, err_class(post_rc), err_class(rc), st->MPI_SOURCE, st->MPI_TAG, st->MPI_ERROR, c1, c2, c3);
    if (pr) sb_printf(R->cur, " probe=%d:%d:%d:%d:%d", pr->src, pr->tag, pr->err, pr->bytes, err_class(pr->rc));
    sb_printf(R->cur, " sum=%016llx ok=%d\n", (unsigned long long)sum, ok);
}

/* Records and checks send `msg` (buffer `bi`). */
static void rec_send(run_t *R, int msg, int bi, int post_rc, int rc) {
    int ok = 1;
    mem_t *m = &R->sb[bi];
    unsigned char *img = xmalloc(m->total);
    fill(img, m->total, data_seed(R, R->me, msg));
    if (memcmp(img, m->base, m->total)) {
        failure(R, "send %d: the send buffer changed", msg);
        ok = 0;
    }
    free(img);
    if (post_rc != MPI_SUCCESS || rc != MPI_SUCCESS) {
        failure(R, "send %d: returned classes %d/%d", msg, err_class(post_rc), err_class(rc));
        ok = 0;
    }
    sb_printf(R->cur, "S i=%ld p=%s r=%d m=%d rc=%d/%d ok=%d\n", R->P->index, PAT_NAME[R->P->pattern], R->me, msg, err_class(post_rc),
              err_class(rc), ok);
}


static sbuf_t slot_out[16]; /* records of complete()'s slots, printed in slot order */

static void rec_slot(run_t *R, const slot_t *s, int rc, const MPI_Status *st) {
    R->cur = &slot_out[s - R->slots];
    if (s->recv) rec_recv(R, s->msg, s->bi, s->post_rc, rc, st, s->pr);
    else rec_send(R, s->msg, s->bi, s->post_rc, rc);
    R->cur = &R->out;
}

static void complete_any_order(run_t *R, int cm, MPI_Request *req, const slot_t *slot, int n);

/* Completes n requests with completion mode cm; records each (receives with their status) in
 * slot order, whatever order they completed in. */
static void complete(run_t *R, int cm, MPI_Request *req, const slot_t *slot, int n) {
    R->slots = slot;
    for (int i = 0; i < n; i++) slot_out[i].len = 0;
    complete_any_order(R, cm, req, slot, n);
    for (int i = 0; i < n; i++)
        if (slot_out[i].len) sb_printf(&R->out, "%s", slot_out[i].s);
}

static void complete_any_order(run_t *R, int cm, MPI_Request *req, const slot_t *slot, int n) {
    MPI_Status st[16];
    int done[16] = {0}, ndone = 0, rc;
    for (int i = 0; i < n; i++) status_init(&st[i]);
    switch (cm) {
    case CM_WAIT:
        for (int i = 0; i < n; i++) {
            rc = MPI_Wait(&req[i], &st[i]);
            rec_slot(R, &slot[i], rc, &st[i]);
            done[i] = 1;
        }
        return;
    case CM_TEST:
        for (int i = 0; i < n; i++) {
            int flag = 0;
            do rc = MPI_Test(&req[i], &flag, &st[i]);
            while (rc == MPI_SUCCESS && !flag);
            rec_slot(R, &slot[i], rc, &st[i]);
            if (rc != MPI_SUCCESS && req[i] != MPI_REQUEST_NULL) { /* finish it anyway */
                MPI_Status s2;
                aux(R, "wait-after-error", MPI_Wait(&req[i], &s2));
            }
        }
        return;
    case CM_WAITALL:
    case CM_TESTALL: {
        int flag = 0;
        if (cm == CM_WAITALL) rc = MPI_Waitall(n, req, st);
        else {
            do rc = MPI_Testall(n, req, &flag, st);
            while (rc == MPI_SUCCESS && !flag);
        }
        for (int i = 0; i < n; i++) {
            int r = rc == MPI_ERR_IN_STATUS ? st[i].MPI_ERROR : rc;
            rec_slot(R, &slot[i], r, &st[i]);
        }
        if (rc != MPI_SUCCESS)
            for (int i = 0; i < n; i++)
                if (req[i] != MPI_REQUEST_NULL) {
                    MPI_Status s2;
                    aux(R, "wait-after-error", MPI_Wait(&req[i], &s2));
                }
        return;
    }
    case CM_WAITANY:
    case CM_TESTANY:
        while (ndone < n) {
            int idx = MPI_UNDEFINED, flag = 1;
            MPI_Status s;
            status_init(&s);
            if (cm == CM_WAITANY) rc = MPI_Waitany(n, req, &idx, &s);
            else rc = MPI_Testany(n, req, &idx, &flag, &s);
            if (rc == MPI_SUCCESS && !flag) continue;
            if (idx == MPI_UNDEFINED || idx < 0 || idx >= n || done[idx]) {
                failure(R, "%s returned class %d, flag %d, index %d (%s) with %d of %d requests completed", CM_NAME[cm], err_class(rc), flag, idx,
                        idx == MPI_UNDEFINED ? "MPI_UNDEFINED" : idx >= 0 && idx < n && done[idx] ? "already completed" : "out of range", ndone, n);
                aux(R, cm == CM_WAITANY ? "waitany-index" : "testany-index", rc == MPI_SUCCESS ? MPI_ERR_OTHER : rc);
                break;
            }
            done[idx] = 1;
            ndone++;
            rec_slot(R, &slot[idx], rc, &s);
        }
        break;
    default: /* WAITSOME, TESTSOME */
        while (ndone < n) {
            int outc = 0, idx[16];
            MPI_Status s[16];
            for (int i = 0; i < n; i++) status_init(&s[i]);
            if (cm == CM_WAITSOME) rc = MPI_Waitsome(n, req, &outc, idx, s);
            else rc = MPI_Testsome(n, req, &outc, idx, s);
            if (outc == MPI_UNDEFINED || outc < 0 || outc > n || (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS && outc == 0)) {
                aux(R, cm == CM_WAITSOME ? "waitsome-outcount" : "testsome-outcount", rc == MPI_SUCCESS ? MPI_ERR_OTHER : rc);
                break;
            }
            for (int j = 0; j < outc; j++) {
                int i = idx[j];
                if (i < 0 || i >= n || done[i]) {
                    aux(R, "some-index", MPI_ERR_OTHER);
                    continue;
                }
                done[i] = 1;
                ndone++;
                rec_slot(R, &slot[i], rc == MPI_ERR_IN_STATUS ? s[j].MPI_ERROR : rc, &s[j]);
            }
        }
        break;
    }
    /* whatever an error left behind: complete it (records the slot if it was never reported) */
    for (int i = 0; i < n; i++)
        if (!done[i]) {
            MPI_Status s2;
            status_init(&s2);
            rc = MPI_Wait(&req[i], &s2);
            rec_slot(R, &slot[i], rc, &s2);
        }
}

static int isend(run_t *R, int bi, MPI_Request *q) {
    pair_t *P = R->P;
    return MPI_Isend(R->sb[bi].p, R->myss->count, R->myss->t, R->dst, P->tag, R->comm, q);
}
static int irecv(run_t *R, int bi, MPI_Request *q) {
    return MPI_Irecv(R->rb[bi].p, R->myrs->count, R->myrs->t, R->rsrc, R->rtag, R->comm, q);
}
static int do_send(run_t *R, int bi, int mode) {
    void *b = R->sb[bi].p;
    int c = R->myss->count, d = R->dst, t = R->P->tag;
    MPI_Datatype ty = R->myss->t;
    switch (mode) {
    case P_SSEND: return MPI_Ssend(b, c, ty, d, t, R->comm);
    case P_BSEND: return MPI_Bsend(b, c, ty, d, t, R->comm);
    case P_RSEND: return MPI_Rsend(b, c, ty, d, t, R->comm);
    default: return MPI_Send(b, c, ty, d, t, R->comm);
    }
}
static int do_recv(run_t *R, int bi, MPI_Status *st) {
    status_init(st);
    return MPI_Recv(R->rb[bi].p, R->myrs->count, R->myrs->t, R->rsrc, R->rtag, R->comm, st);
}

static void probe_record(probe_t *pr, int rc, const MPI_Status *st) {
    pr->done = 1;
    pr->rc = rc;
    pr->src = st->MPI_SOURCE;
    pr->tag = st->MPI_TAG;
    pr->err = st->MPI_ERROR;
    int b = -7;
    if (MPI_Get_count(st, MPI_BYTE, &b) != MPI_SUCCESS) b = -8;
    pr->bytes = b;
}

static void run_pattern(run_t *R) {
    pair_t *P = R->P;
    int pat = P->pattern, k = P->k, rc, prc;
    MPI_Status st;
    MPI_Request req[16];
    slot_t slot[16];
    switch (pat) {
    case P_SEND_RECV:
    case P_SSEND:
        if (R->send_first) {
            prc = do_send(R, 0, pat);
            rec_send(R, 0, 0, MPI_SUCCESS, prc);
            rc = do_recv(R, 0, &st);
            rec_recv(R, 0, 0, MPI_SUCCESS, rc, &st, NULL);
        } else {
            rc = do_recv(R, 0, &st);
            rec_recv(R, 0, 0, MPI_SUCCESS, rc, &st, NULL);
            prc = do_send(R, 0, pat);
            rec_send(R, 0, 0, MPI_SUCCESS, prc);
        }
        break;
    case P_BSEND: {
        int psz = 0;
        aux(R, "pack_size", MPI_Pack_size(R->myss->count, R->myss->t, R->comm, &psz));
        int bsz = psz + MPI_BSEND_OVERHEAD;
        void *bb = xmalloc((size_t)bsz);
        aux(R, "attach", MPI_Buffer_attach(bb, bsz));
        prc = do_send(R, 0, P_BSEND);
        rec_send(R, 0, 0, MPI_SUCCESS, prc);
        rc = do_recv(R, 0, &st);
        rec_recv(R, 0, 0, MPI_SUCCESS, rc, &st, NULL);
        void *got;
        int gsz;
        aux(R, "detach", MPI_Buffer_detach(&got, &gsz));
        if (got != bb || gsz != bsz) failure(R, "MPI_Buffer_detach returned %p/%d, attached %p/%d", got, gsz, bb, bsz);
        free(bb);
        break;
    }
    case P_RSEND: {
        int post = irecv(R, 0, &req[0]);
        aux(R, "barrier", MPI_Barrier(R->comm));
        prc = do_send(R, 0, P_RSEND);
        rec_send(R, 0, 0, MPI_SUCCESS, prc);
        status_init(&st);
        rc = MPI_Wait(&req[0], &st);
        rec_recv(R, 0, 0, post, rc, &st, NULL);
        break;
    }
    case P_NONBLOCKING:
    case P_MULTI: {
        int n = 0;
        for (int pass = 0; pass < 2; pass++) {
            int recvs = pass == 0 ? P->recv_first : !P->recv_first;
            for (int j = 0; j < k; j++) {
                slot[n] = (slot_t){recvs, j, j, 0, NULL};
                slot[n].post_rc = recvs ? irecv(R, j, &req[n]) : isend(R, j, &req[n]);
                n++;
            }
        }
        complete(R, P->cm, req, slot, n);
        break;
    }
    case P_MULTI_RECV: {
        for (int j = 0; j < k; j++) {
            slot[j] = (slot_t){0, j, j, 0, NULL};
            slot[j].post_rc = isend(R, j, &req[j]);
        }
        for (int j = 0; j < k; j++) {
            rc = do_recv(R, j, &st);
            rec_recv(R, j, j, MPI_SUCCESS, rc, &st, NULL);
        }
        complete(R, CM_WAITALL, req, slot, k);
        break;
    }
    case P_PERSISTENT: {
        int ri = P->recv_first ? 0 : 1, si = 1 - ri;
        int rpost = MPI_Recv_init(R->rb[0].p, R->myrs->count, R->myrs->t, R->rsrc, R->rtag, R->comm, &req[ri]);
        int spost = MPI_Send_init(R->sb[0].p, R->myss->count, R->myss->t, R->dst, P->tag, R->comm, &req[si]);
        for (int round = 0; round < 2; round++) {
            if (round == 1) { /* new data, new sentinel */
                fill(R->sb[0].base, R->sb[0].total, data_seed(R, R->me, 1));
                fill(R->rb[0].base, R->rb[0].total, sentinel_seed(R, R->me, 1));
            }
            if (round == 0) aux(R, "startall", MPI_Startall(2, req));
            else {
                aux(R, "start", MPI_Start(&req[0]));
                aux(R, "start", MPI_Start(&req[1]));
            }
            slot[ri] = (slot_t){1, round, 0, rpost, NULL};
            slot[si] = (slot_t){0, round, 0, spost, NULL};
            MPI_Request tmp[2] = {req[0], req[1]};
            complete(R, round == 0 ? P->cm : P->cm2, tmp, slot, 2);
            /* persistent requests stay allocated (inactive) */
            if (tmp[0] != req[0] || tmp[1] != req[1]) aux(R, "persistent-handle-kept", MPI_ERR_REQUEST);
        }
        aux(R, "request_free", MPI_Request_free(&req[0]));
        aux(R, "request_free", MPI_Request_free(&req[1]));
        break;
    }
    case P_PROBE:
    case P_IPROBE:
    case P_MPROBE:
    case P_IMPROBE:
    case P_SELF_MPROBE: {
        probe_t pr = {0};
        MPI_Request sq;
        int spost = isend(R, 0, &sq);
        MPI_Status ps;
        status_init(&ps);
        MPI_Message msg = MPI_MESSAGE_NULL;
        int flag = 0;
        if (pat == P_PROBE) rc = MPI_Probe(R->rsrc, R->rtag, R->comm, &ps);
        else if (pat == P_IPROBE) {
            do rc = MPI_Iprobe(R->rsrc, R->rtag, R->comm, &flag, &ps);
            while (rc == MPI_SUCCESS && !flag);
        } else if (pat == P_MPROBE || pat == P_SELF_MPROBE) rc = MPI_Mprobe(R->rsrc, R->rtag, R->comm, &msg, &ps);
        else {
            do rc = MPI_Improbe(R->rsrc, R->rtag, R->comm, &flag, &msg, &ps);
            while (rc == MPI_SUCCESS && !flag);
        }
        probe_record(&pr, rc, &ps);
        if (rc != MPI_SUCCESS) { /* receive it anyway, by envelope */
            rc = do_recv(R, 0, &st);
            rec_recv(R, 0, 0, MPI_SUCCESS, rc, &st, &pr);
        } else if (pat == P_PROBE || pat == P_IPROBE) {
            status_init(&st);
            rc = MPI_Recv(R->rb[0].p, R->myrs->count, R->myrs->t, ps.MPI_SOURCE, ps.MPI_TAG, R->comm, &st);
            rec_recv(R, 0, 0, MPI_SUCCESS, rc, &st, &pr);
        } else if (pat == P_MPROBE || pat == P_SELF_MPROBE) {
            status_init(&st);
            rc = MPI_Mrecv(R->rb[0].p, R->myrs->count, R->myrs->t, &msg, &st);
            rec_recv(R, 0, 0, MPI_SUCCESS, rc, &st, &pr);
        } else {
            MPI_Request q[2];
            int ri = P->recv_first ? 0 : 1;
            slot[ri] = (slot_t){1, 0, 0, MPI_Imrecv(R->rb[0].p, R->myrs->count, R->myrs->t, &msg, &q[ri]), &pr};
            slot[1 - ri] = (slot_t){0, 0, 0, spost, NULL};
            q[1 - ri] = sq;
            complete(R, P->cm, q, slot, 2);
            break;
        }
        status_init(&st);
        rc = MPI_Wait(&sq, &st);
        rec_send(R, 0, 0, spost, rc);
        break;
    }
    case P_SELF_ISEND: {
        MPI_Request sq;
        int spost = isend(R, 0, &sq);
        rc = do_recv(R, 0, &st);
        rec_recv(R, 0, 0, MPI_SUCCESS, rc, &st, NULL);
        status_init(&st);
        rc = MPI_Wait(&sq, &st);
        rec_send(R, 0, 0, spost, rc);
        break;
    }
    case P_SELF_IRECV: {
        MPI_Request rq;
        int rpost = irecv(R, 0, &rq);
        prc = do_send(R, 0, P_SEND_RECV);
        rec_send(R, 0, 0, MPI_SUCCESS, prc);
        status_init(&st);
        rc = MPI_Wait(&rq, &st);
        rec_recv(R, 0, 0, rpost, rc, &st, NULL);
        break;
    }
    case P_SENDRECV:
        status_init(&st);
        rc = MPI_Sendrecv(R->sb[0].p, R->myss->count, R->myss->t, R->dst, P->tag, R->rb[0].p, R->myrs->count, R->myrs->t, R->rsrc, R->rtag,
                          R->comm, &st);
        rec_recv(R, 0, 0, MPI_SUCCESS, rc, &st, NULL);
        rec_send(R, 0, 0, MPI_SUCCESS, rc);
        break;
    case P_SENDRECV_REPLACE:
        /* one buffer (my spec) holds my data and receives the peer's */
        status_init(&st);
        rc = MPI_Sendrecv_replace(R->rb[0].p, R->myrs->count, R->myrs->t, R->dst, P->tag, R->rsrc, R->rtag, R->comm, &st);
        rec_recv(R, 0, 0, MPI_SUCCESS, rc, &st, NULL);
        break;
    }
}

static int has_kind(const node *n, int kind) {
    if (n->kind == kind) return 1;
    if (n->kind == K_BASE) return 0;
    int nk = n->kind == K_STRUCT ? n->nblk : 1;
    for (int i = 0; i < nk; i++)
        if (has_kind(n->kids[i], kind)) return 1;
    return 0;
}

static void run_pair(pair_t *P, uint64_t seed, MPI_Comm dup) {
    run_t R;
    memset(&R, 0, sizeof R);
    R.P = P;
    R.seed = seed;
    R.comm = P->use_dup ? dup : MPI_COMM_WORLD;
    R.me = g_rank;
    R.cur = &R.out;
    int topo = P->topo;
    if (topo == TOPO_PAIRS && g_np % 2) topo = TOPO_RING;
    if (topo == TOPO_SELF) {
        R.dst = R.src = g_rank;
        R.send_first = 1;
    } else if (topo == TOPO_PAIRS) {
        R.dst = R.src = g_rank ^ 1;
        R.send_first = g_rank % 2 == 0;
    } else {
        R.dst = (g_rank + 1) % g_np;
        R.src = (g_rank + g_np - 1) % g_np;
        R.send_first = g_rank == 0;
    }
    R.skip_elements = P->base >= B_S_ID && (has_kind(P->stree, K_DARRAY) || has_kind(P->rtree, K_DARRAY));
    R.rsrc = P->any_src ? MPI_ANY_SOURCE : R.src;
    R.rtag = P->any_tag ? MPI_ANY_TAG : P->tag;
    R.myss = &P->ss;
    R.myrs = &P->rs;
    R.peer_ss = &P->ss;
    int nb = P->pattern == P_PERSISTENT ? 1 : P->k;
    if (P->pattern == P_SENDRECV_REPLACE) {
        /* even ranks use the send spec, odd ranks the receive spec (same message size) */
        R.myrs = g_rank % 2 ? &P->rs : &P->ss;
        R.myss = R.myrs;
        R.peer_ss = R.src % 2 ? &P->rs : &P->ss;
        R.rb[0] = mem_alloc(R.myrs, data_seed(&R, R.me, 0));
    } else {
        for (int j = 0; j < nb; j++) {
            R.sb[j] = mem_alloc(R.myss, data_seed(&R, R.me, j));
            R.rb[j] = mem_alloc(R.myrs, sentinel_seed(&R, R.me, j));
        }
    }
    run_pattern(&R);
    if (R.aux.len) sb_printf(&R.out, "A i=%ld r=%d%s\n", P->index, R.me, R.aux.s);
    for (int j = 0; j < 4; j++) {
        if (R.sb[j].base) mem_free(&R.sb[j]);
        if (R.rb[j].base) mem_free(&R.rb[j]);
    }
    /* gather the lines to rank 0 in rank order (PMPI: the harness's own traffic) */
    int len = (int)R.out.len, *lens = NULL, *displs = NULL, tot = 0;
    char *all = NULL;
    if (g_rank == 0) {
        lens = xmalloc((size_t)g_np * sizeof(int));
        displs = xmalloc((size_t)g_np * sizeof(int));
    }
    if (PMPI_Gather(&len, 1, MPI_INT, lens, 1, MPI_INT, 0, MPI_COMM_WORLD) != MPI_SUCCESS) die("PMPI_Gather failed");
    if (g_rank == 0) {
        for (int i = 0; i < g_np; i++) {
            displs[i] = tot;
            tot += lens[i];
        }
        all = xmalloc((size_t)tot + 1);
    }
    if (PMPI_Gatherv(R.out.s ? R.out.s : "", len, MPI_CHAR, all, lens, displs, MPI_CHAR, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
        die("PMPI_Gatherv failed");
    if (g_rank == 0) {
        fwrite(all, 1, (size_t)tot, stdout);
        fflush(stdout);
        free(all);
        free(lens);
        free(displs);
    }
    sb_free(&R.out);
    sb_free(&R.aux);
    /* nobody starts the next pair (whose wildcard receives could match this one's messages)
       before every rank finished this one */
    if (PMPI_Barrier(MPI_COMM_WORLD) != MPI_SUCCESS) die("PMPI_Barrier failed");
}

int main(int argc, char **argv) {
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
        fprintf(stderr, "MPI_Init failed\n");
        return 2;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_np);
    if (MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN) != MPI_SUCCESS) die("MPI_Comm_set_errhandler failed");
    g_argv0 = argv[0];
    int verbose = 0, describe_only = 0;
    const char *pos[3] = {getenv("TYPEPAIRS_SEED"), getenv("TYPEPAIRS_COUNT"), getenv("TYPEPAIRS_FIRST")};
    int np_args = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-v")) verbose = 1;
        else if (!strcmp(argv[i], "-d")) describe_only = 1;
        else if (np_args < 3) {
            if (np_args == 0) pos[1] = pos[2] = NULL;
            pos[np_args++] = argv[i];
        } else die("usage: p2p_typepairs SEED COUNT [FIRST] [-v] [-d]");
    }
    if (getenv("TYPEPAIRS_VERBOSE") && atoi(getenv("TYPEPAIRS_VERBOSE"))) verbose = 1;
    g_seed = pos[0] ? strtoull(pos[0], NULL, 0) : 1;
    long count = pos[1] ? atol(pos[1]) : 100, first = pos[2] ? atol(pos[2]) : 0;
    MPI_Comm dup;
    if (MPI_Comm_dup(MPI_COMM_WORLD, &dup) != MPI_SUCCESS) die("MPI_Comm_dup failed");
    if (MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN) != MPI_SUCCESS) die("MPI_Comm_set_errhandler failed");
    long pairs = 0;
    for (long i = first; i < first + count; i++) {
        g_index = i;
        if (describe_only && g_rank != 0) continue;
        pair_t P;
        make_pair(&P, g_seed, i);
        if (describe_only || (verbose && g_rank == 0)) {
            fputs("# ", stdout);
            for (char *c = P.desc.s; *c; c++) {
                fputc(*c, stdout);
                if (*c == '\n' && c[1]) fputs("# ", stdout);
            }
            fflush(stdout);
        }
        if (!describe_only) run_pair(&P, g_seed, dup);
        free_pair(&P);
        pairs++;
    }
    g_index = -1;
    /* leak check (sluice only): nothing tracked once every request completed */
    int (*outstanding)(long *, long *) = (int (*)(long *, long *))dlsym(RTLD_DEFAULT, "sluice_p2p_outstanding");
    if (outstanding && !describe_only) {
        long reqs = -1, bufs = -1;
        int rc = outstanding(&reqs, &bufs);
        if (rc != 0 || reqs != 0 || bufs != 0) {
            fprintf(stderr, "[rank %d] p2p_typepairs: LEAK sluice_p2p_outstanding returned %d: %ld requests, %ld staging buffers\n", g_rank, rc,
                    reqs, bufs);
            g_failures++;
        }
    }
    int total = 0;
    if (PMPI_Allreduce(&g_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS) die("PMPI_Allreduce failed");
    if (g_rank == 0) {
        printf("typepairs: seed %llu pairs %ld failures %d\n", (unsigned long long)g_seed, pairs, total);
        fflush(stdout);
    }
    if (MPI_Comm_free(&dup) != MPI_SUCCESS) die("MPI_Comm_free failed");
    if (MPI_Finalize() != MPI_SUCCESS) return 2;
    return total ? 1 : 0;
}
