/* Device buffers in MPI calls, under sluice on an MPI that knows nothing of GPUs.
 *
 * Every case runs twice with the same ranks and the same sluice: once on host buffers, once on
 * device buffers (cuMemAlloc). Each run ends with a blob: every byte of every buffer of the case
 * (device ones copied back), the return codes and the status fields the case reads. The two
 * blobs must be equal: the application cannot tell a device buffer from a host one, data in the
 * gaps of non-contiguous types and past short messages included. Then the errors only device
 * buffers have (a datatype that reaches past the allocation).
 *
 * Needs >= 2 ranks (point-to-point cases between ranks 0 and 1; collectives on all). Prints
 * SKIP and exits 0 where no CUDA driver or device is present. */
#include "check.h"
#include "gpu_cuda.h"
#include <stdint.h>
#include <string.h>
#include <unistd.h>

static int rank, nprocs;
static int on_device; /* which run: buffers from cuMemAlloc (1) or malloc (0) */
/* GPU_MPI_HOST_TWICE=1 without a GPU: both runs on host memory, which checks that the cases
 * themselves are deterministic (the test of the test). */
static int host_twice;

/* ---- buffers ------------------------------------------------------------------------------ */
#define MAXB 16
static struct { void *p; size_t n, rec; int host; } bufs[MAXB];
static int nbufs;

static void pattern(unsigned char *p, size_t n, unsigned seed) {
    uint32_t x = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        p[i] = (unsigned char)(x >> 16);
    }
}

/* Whether `p` is a buffer of the case that lives on the device in this run. */
static int is_dev(const void *p) {
    if (!on_device || host_twice) return 0;
    for (int i = 0; i < nbufs; i++)
        if (bufs[i].p == p) return !bufs[i].host;
    return 1;
}

/* Writes a fresh pattern into a buffer of the case (host or device). */
static void bfill(void *p, size_t n, unsigned seed) {
    unsigned char *tmp = malloc(n);
    pattern(tmp, n, seed);
    if (is_dev(p)) {
        if (cu_MemcpyHtoD((CUdeviceptr)(uintptr_t)p, tmp, n) != 0) { fprintf(stderr, "HtoD failed\n"); MPI_Abort(MPI_COMM_WORLD, 3); }
    } else {
        memcpy(p, tmp, n);
    }
    free(tmp);
}

/* A buffer of n bytes holding the pattern of `seed` (the same bytes in both runs), of which the
 * first `rec` bytes go into the result. */
static void *alloc_in(size_t n, size_t rec, unsigned seed, int host) {
    void *p;
    if (on_device && !host_twice && !host) {
        CUdeviceptr d;
        if (cu_MemAlloc(&d, n) != 0) { fprintf(stderr, "cuMemAlloc(%zu) failed\n", n); MPI_Abort(MPI_COMM_WORLD, 3); }
        p = (void *)(uintptr_t)d;
    } else {
        p = malloc(n);
    }
    bufs[nbufs].p = p;
    bufs[nbufs].n = n;
    bufs[nbufs].rec = rec;
    bufs[nbufs].host = host;
    nbufs++;
    bfill(p, n, seed + 1000u * (unsigned)rank);
    return p;
}

static void *balloc_rec(size_t n, size_t rec, unsigned seed) { return alloc_in(n, rec, seed, 0); }
static void *balloc(size_t n, unsigned seed) { return balloc_rec(n, n, seed); }
/* A buffer in host memory in both runs (a device run's messages between device and host). */
static void *halloc(size_t n, unsigned seed) { return alloc_in(n, n, seed, 1); }

/* ---- the blob of one run ------------------------------------------------------------------ */
static unsigned char *blob;
static size_t blob_len, blob_cap;

static void put(const void *p, size_t n) {
    if (blob_len + n > blob_cap) {
        blob_cap = (blob_len + n) * 2;
        blob = realloc(blob, blob_cap);
    }
    memcpy(blob + blob_len, p, n);
    blob_len += n;
}

static void put_int(int v) { put(&v, sizeof v); }

/* The fields of a status an application reads (source, tag, error, count in bytes). */
static void put_status(const MPI_Status *st) {
    int count = -7;
    MPI_Get_count(st, MPI_BYTE, &count);
    put_int(st->MPI_SOURCE);
    put_int(st->MPI_TAG);
    put_int(count);
}

/* Appends a buffer's current bytes (host or device). */
static void snap(const void *p, size_t n) {
    unsigned char *tmp = malloc(n);
    if (is_dev(p)) {
        cu_CtxSynchronize();
        if (cu_MemcpyDtoH(tmp, (CUdeviceptr)(uintptr_t)p, n) != 0) { fprintf(stderr, "DtoH failed\n"); MPI_Abort(MPI_COMM_WORLD, 3); }
    } else {
        memcpy(tmp, p, n);
    }
    put(tmp, n);
    free(tmp);
}

/* Appends every buffer's bytes and frees them. */
static void finish_buffers(void) {
    for (int i = 0; i < nbufs; i++) {
        unsigned char *tmp = malloc(bufs[i].n);
        if (on_device && !host_twice && !bufs[i].host) {
            cu_CtxSynchronize();
            if (cu_MemcpyDtoH(tmp, (CUdeviceptr)(uintptr_t)bufs[i].p, bufs[i].n) != 0) { fprintf(stderr, "DtoH failed\n"); MPI_Abort(MPI_COMM_WORLD, 3); }
            cu_MemFree((CUdeviceptr)(uintptr_t)bufs[i].p);
        } else {
            memcpy(tmp, bufs[i].p, bufs[i].n);
            free(bufs[i].p);
        }
        put(tmp, bufs[i].rec);
        free(tmp);
    }
    nbufs = 0;
}

static void run_case(const char *name, void (*fn)(void)) {
    unsigned char *host_blob = NULL;
    size_t host_len = 0;
    for (on_device = 0; on_device < 2; on_device++) {
        blob_len = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        fn();
        finish_buffers();
        MPI_Barrier(MPI_COMM_WORLD);
        if (!on_device) {
            host_blob = malloc(blob_len ? blob_len : 1);
            memcpy(host_blob, blob, blob_len);
            host_len = blob_len;
        }
    }
    EXPECT(blob_len == host_len, "%s: rank %d: device run gave %zu result bytes, host run %zu", name, rank, blob_len, host_len);
    if (blob_len == host_len) {
        for (size_t i = 0; i < blob_len; i++) {
            if (blob[i] != host_blob[i]) {
                EXPECT(0, "%s: rank %d: result byte %zu differs (device %u, host %u)", name, rank, i, blob[i], host_blob[i]);
                break;
            }
        }
    }
    free(host_blob);
    if (rank == 0) printf("case %s done\n", name);
}

/* ---- types ---------------------------------------------------------------------------------- */
static MPI_Datatype vec8;  /* 4096 blocks of 8 doubles, stride 16: 256 KiB of data in 512 KiB */
static MPI_Datatype vec1;  /* 100000 single ints at stride 3 (1.2 MB span): pipelined */
static MPI_Datatype resized; /* struct {int; double} resized with a lower bound of -8 */

static void make_types(void) {
    MPI_Type_vector(4096, 8, 16, MPI_DOUBLE, &vec8);
    MPI_Type_commit(&vec8);
    MPI_Type_vector(100000, 1, 3, MPI_INT, &vec1);
    MPI_Type_commit(&vec1);
    int bl[2] = {1, 1};
    MPI_Aint d[2] = {0, 8};
    MPI_Datatype ts[2] = {MPI_INT, MPI_DOUBLE}, st;
    MPI_Type_create_struct(2, bl, d, ts, &st);
    MPI_Type_create_resized(st, -8, 32, &resized);
    MPI_Type_commit(&resized);
    MPI_Type_free(&st);
}

/* ---- point-to-point cases (ranks 0 and 1) ------------------------------------------------------ */
static void p2p_contiguous(void) {
    static const int counts[] = {1, 4096, 300000};
    for (int k = 0; k < 3; k++) {
        int n = counts[k];
        int *b = balloc((size_t)n * 4, 10 + k);
        MPI_Status st;
        if (rank == 0) put_int(MPI_Send(b, n, MPI_INT, 1, k, MPI_COMM_WORLD));
        if (rank == 1) {
            put_int(MPI_Recv(b, n, MPI_INT, 0, k, MPI_COMM_WORLD, &st));
            put_status(&st);
        }
    }
}

static void p2p_vector_both_ways(void) {
    size_t span = 4096 * 16 * 8;
    double *v = balloc(span, 20);
    double *c = balloc(4096 * 8 * 8, 21);
    MPI_Status st;
    if (rank == 0) {
        put_int(MPI_Send(v, 1, vec8, 1, 1, MPI_COMM_WORLD));
        put_int(MPI_Recv(v, 1, vec8, 1, 2, MPI_COMM_WORLD, &st)); /* gaps must stay */
        put_status(&st);
    } else if (rank == 1) {
        put_int(MPI_Recv(c, 4096 * 8, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD, &st));
        put_status(&st);
        put_int(MPI_Send(c, 4096 * 8, MPI_DOUBLE, 0, 2, MPI_COMM_WORLD));
    }
    /* a large strided type, pipelined by sluice */
    int *w = balloc(300000 * 4, 22);
    if (rank == 0) put_int(MPI_Send(w, 1, vec1, 1, 3, MPI_COMM_WORLD));
    if (rank == 1) {
        put_int(MPI_Recv(w, 1, vec1, 0, 3, MPI_COMM_WORLD, &st));
        put_status(&st);
    }
    /* a type with a negative lower bound: the buffer address is 8 bytes into the allocation */
    char *r = balloc(17 * 32 + 8, 23);
    if (rank == 0) put_int(MPI_Send(r + 8, 17, resized, 1, 4, MPI_COMM_WORLD));
    if (rank == 1) {
        put_int(MPI_Recv(r + 8, 17, resized, 0, 4, MPI_COMM_WORLD, &st));
        put_status(&st);
    }
}

static void p2p_nonblocking(void) {
    double *v = balloc(4096 * 16 * 8, 30);
    int *a = balloc(300000 * 4, 31);
    int *s = balloc(64, 32);
    MPI_Request rq[3];
    MPI_Status sts[3];
    if (rank == 0) {
        put_int(MPI_Isend(v, 1, vec8, 1, 5, MPI_COMM_WORLD, &rq[0]));
        put_int(MPI_Isend(a, 300000, MPI_INT, 1, 6, MPI_COMM_WORLD, &rq[1]));
        put_int(MPI_Issend(s, 16, MPI_INT, 1, 7, MPI_COMM_WORLD, &rq[2]));
        put_int(MPI_Waitall(3, rq, sts));
    } else if (rank == 1) {
        put_int(MPI_Irecv(s, 16, MPI_INT, 0, 7, MPI_COMM_WORLD, &rq[2]));
        put_int(MPI_Irecv(a, 300000, MPI_INT, 0, 6, MPI_COMM_WORLD, &rq[1]));
        put_int(MPI_Irecv(v, 1, vec8, 0, 5, MPI_COMM_WORLD, &rq[0]));
        /* completion order between the requests is timing, not semantics: results by index */
        int left = 3, trcs[3];
        MPI_Status done[3];
        while (left > 0) {
            int idx, flag = 0;
            MPI_Status st;
            int trc = MPI_Testany(3, rq, &idx, &flag, &st);
            if (flag && idx != MPI_UNDEFINED) {
                trcs[idx] = trc;
                done[idx] = st;
                left--;
            }
        }
        for (int i = 0; i < 3; i++) {
            put_int(trcs[i]);
            put_status(&done[i]);
        }
    }
    /* Request_get_status, then Wait */
    int *g = balloc(1000 * 4, 33);
    if (rank == 0) put_int(MPI_Send(g, 1000, MPI_INT, 1, 8, MPI_COMM_WORLD));
    if (rank == 1) {
        MPI_Request r;
        MPI_Status st;
        int flag = 0;
        put_int(MPI_Irecv(g, 1000, MPI_INT, 0, 8, MPI_COMM_WORLD, &r));
        while (!flag) MPI_Request_get_status(r, &flag, &st);
        put_status(&st);
        put_int(MPI_Wait(&r, &st));
    }
}

static void p2p_persistent(void) {
    double *v = balloc(4096 * 16 * 8, 40);
    MPI_Request r;
    MPI_Status st;
    if (rank == 0) MPI_Send_init(v, 1, vec8, 1, 9, MPI_COMM_WORLD, &r);
    if (rank == 1) MPI_Recv_init(v, 1, vec8, 0, 9, MPI_COMM_WORLD, &r);
    for (int round = 0; round < 3; round++) {
        if (rank == 0) bfill(v, 4096 * 16 * 8, 41 + round); /* new data every round */
        if (rank <= 1) {
            put_int(MPI_Start(&r));
            put_int(MPI_Wait(&r, &st));
            if (rank == 1) put_status(&st);
            if (rank == 1) snap(v, 4096 * 16 * 8); /* every round's data arrived */
        }
    }
    if (rank <= 1) MPI_Request_free(&r);
}

static void p2p_sendrecv_probe_truncate(void) {
    double *v = balloc(4096 * 16 * 8, 50);
    MPI_Status st;
    if (rank <= 1) {
        put_int(MPI_Sendrecv_replace(v, 1, vec8, 1 - rank, 10, 1 - rank, 10, MPI_COMM_WORLD, &st));
        put_status(&st);
    }
    int *m = balloc(5000 * 4, 51);
    if (rank == 0) MPI_Send(m, 5000, MPI_INT, 1, 11, MPI_COMM_WORLD);
    if (rank == 1) {
        MPI_Message msg;
        put_int(MPI_Mprobe(0, 11, MPI_COMM_WORLD, &msg, &st));
        put_status(&st);
        put_int(MPI_Mrecv(m, 5000, MPI_INT, &msg, &st));
        put_status(&st);
    }
    /* truncation: the class and what the MPI leaves in the receive buffer must be the host run's.
     * Only the receive's own 40 bytes are compared: Open MPI 4.1 writes the whole message into a
     * host buffer (past the receive's count, measured bare), sluice's device path writes nothing
     * past the receive's span. 80 bytes: below the smallest pipeline threshold (128), so that
     * no run pipelines it (a pipelined message leaves the prefix that fits on MPICH as well,
     * docs/protocol.md; p2p_pipelined checks its class). */
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    int *t = balloc_rec(20 * 4, 10 * 4, 52);
    if (rank == 0) MPI_Send(t, 20, MPI_INT, 1, 12, c);
    if (rank == 1) {
        int rc = MPI_Recv(t, 10, MPI_INT, 0, 12, c, &st), cls;
        MPI_Error_class(rc, &cls);
        put_int(cls);
    }
    MPI_Comm_free(&c);
}

/* Device messages the pipelined protocol moves as they cross PCIe (docs/gpu.md, "Pipelined"):
 * the send modes, a packed form received as contiguous elements, a short message into a large
 * receive (the tail must stay), wildcards and STATUS_IGNORE, a truncated large receive (its
 * class only: what a truncated receive leaves differs between the MPIs' own paths, protocol.md)
 * followed by a message that must still match, and Isend/Irecv. */
static void p2p_pipelined(void) {
    const int n = 300000; /* 1.2 MB of ints: above the pipeline threshold */
    MPI_Status st;
    int *a = balloc((size_t)n * 4, 60);
    int *b = balloc((size_t)n * 4, 61);
    int *c = balloc((size_t)n * 4, 62);
    if (rank == 0) {
        put_int(MPI_Ssend(a, n, MPI_INT, 1, 20, MPI_COMM_WORLD));
        int bsz = 4 * n + 4 * MPI_BSEND_OVERHEAD + (1 << 20);
        void *att = malloc((size_t)bsz);
        MPI_Buffer_attach(att, bsz);
        put_int(MPI_Bsend(b, n, MPI_INT, 1, 21, MPI_COMM_WORLD));
        MPI_Buffer_detach(&att, &bsz);
        free(att);
    } else if (rank == 1) {
        put_int(MPI_Recv(c, n, MPI_INT, 0, 20, MPI_COMM_WORLD, &st));
        put_status(&st);
        put_int(MPI_Recv(a, n, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        put_status(&st);
    }
    /* ready mode: the receive is posted before the barrier */
    MPI_Request r = MPI_REQUEST_NULL;
    if (rank == 1) put_int(MPI_Irecv(b, n, MPI_INT, 0, 22, MPI_COMM_WORLD, &r));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) put_int(MPI_Rsend(c, n, MPI_INT, 1, 22, MPI_COMM_WORLD));
    if (rank == 1) {
        put_int(MPI_Wait(&r, &st));
        put_status(&st);
    }
    /* the packed form (vec1: 100000 ints at stride 3) into contiguous ints, and back */
    int *w = balloc(300000 * 4, 63);
    int *d = balloc(100000 * 4, 64);
    if (rank == 0) {
        put_int(MPI_Send(w, 1, vec1, 1, 23, MPI_COMM_WORLD));
        put_int(MPI_Recv(w, 1, vec1, 1, 24, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    } else if (rank == 1) {
        put_int(MPI_Recv(d, 100000, MPI_INT, 0, 23, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        put_int(MPI_Send(d, 100000, MPI_INT, 0, 24, MPI_COMM_WORLD));
    }
    /* a short message (700,000 bytes) into the large receive: the tail stays */
    if (rank == 0) put_int(MPI_Send(a, 175000, MPI_INT, 1, 25, MPI_COMM_WORLD));
    if (rank == 1) {
        put_int(MPI_Recv(b, n, MPI_INT, 0, 25, MPI_COMM_WORLD, &st));
        put_status(&st);
    }
    /* truncation of a pipelined message, then the next message on the same tag */
    MPI_Comm tc;
    MPI_Comm_dup(MPI_COMM_WORLD, &tc);
    MPI_Comm_set_errhandler(tc, MPI_ERRORS_RETURN);
    int *t = balloc_rec((size_t)n * 4, 0, 65); /* Open MPI writes past a truncated host receive's count */
    if (rank == 0) {
        MPI_Send(a, n, MPI_INT, 1, 26, tc);
        put_int(MPI_Send(b, 200000, MPI_INT, 1, 26, tc));
    }
    if (rank == 1) {
        int rc = MPI_Recv(t, 200000, MPI_INT, 0, 26, tc, &st), cls;
        MPI_Error_class(rc, &cls);
        put_int(cls);
        put_int(MPI_Recv(c, 200000, MPI_INT, 0, 26, tc, &st));
        put_status(&st);
    }
    MPI_Comm_free(&tc);
    /* nonblocking both ways at once */
    if (rank <= 1) {
        MPI_Request q[2];
        put_int(MPI_Irecv(rank == 0 ? b : a, n, MPI_INT, 1 - rank, 27, MPI_COMM_WORLD, &q[0]));
        put_int(MPI_Isend(c, n, MPI_INT, 1 - rank, 27, MPI_COMM_WORLD, &q[1]));
        MPI_Status s2[2];
        put_int(MPI_Waitall(2, q, s2));
        put_status(&s2[0]);
    }
}

/* Messages of a contiguous type between device buffers of two ranks of one node: the device
 * route (docs/gpu.md, one copy on each side's device through CUDA IPC) once the first message
 * has let the receiver open the sender's memory; into device and host receives, blocking and
 * nonblocking, contiguous and not, truncated, buffered, several in flight, a non-contiguous send
 * (the packed form), and send buffers changed right after their sends completed. */
static void p2p_device_route(void) {
    const int n = 786432; /* 3 MiB of ints */
    MPI_Status st;
    int *a = balloc((size_t)n * 4, 70);
    int *b = balloc((size_t)n * 4, 71);
    int *h = halloc((size_t)n * 4, 72);
    int *hv = halloc((size_t)n * 8, 73);
    int *m[4];
    for (int i = 0; i < 4; i++) m[i] = balloc((size_t)n * 4, 74 + i);
    MPI_Datatype every_other;
    MPI_Type_vector(n, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    /* the first message offers the sender's memory; after the barrier the receiver has answered */
    if (rank == 0) put_int(MPI_Send(a, n, MPI_INT, 1, 30, MPI_COMM_WORLD));
    if (rank == 1) {
        put_int(MPI_Recv(b, n, MPI_INT, 0, 30, MPI_COMM_WORLD, &st));
        put_status(&st);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        bfill(a, (size_t)n * 4, 80);
        put_int(MPI_Send(a, n, MPI_INT, 1, 31, MPI_COMM_WORLD));     /* into a device buffer */
        put_int(MPI_Send(a, n / 2, MPI_INT, 1, 32, MPI_COMM_WORLD)); /* short, nonblocking receive */
        put_int(MPI_Send(a, n, MPI_INT, 1, 33, MPI_COMM_WORLD));     /* into host memory */
        put_int(MPI_Send(a, n, MPI_INT, 1, 34, MPI_COMM_WORLD));     /* into a strided host type */
    } else if (rank == 1) {
        put_int(MPI_Recv(b, n, MPI_INT, 0, 31, MPI_COMM_WORLD, &st));
        put_status(&st);
        MPI_Request r;
        put_int(MPI_Irecv(m[0], n, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &r));
        put_int(MPI_Wait(&r, &st));
        put_status(&st);
        put_int(MPI_Recv(h, n, MPI_INT, 0, 33, MPI_COMM_WORLD, &st));
        put_status(&st);
        put_int(MPI_Recv(hv, 1, every_other, 0, 34, MPI_COMM_WORLD, &st));
        put_status(&st);
    }
    /* truncated, then the next message on the same tag; a buffered send */
    MPI_Comm tc;
    MPI_Comm_dup(MPI_COMM_WORLD, &tc);
    MPI_Comm_set_errhandler(tc, MPI_ERRORS_RETURN);
    if (rank == 0) {
        MPI_Send(a, n, MPI_INT, 1, 35, tc);
        put_int(MPI_Send(m[1], n, MPI_INT, 1, 35, tc));
        int bsz = 4 * n + 4 * MPI_BSEND_OVERHEAD + (1 << 20);
        void *att = malloc((size_t)bsz);
        MPI_Buffer_attach(att, bsz);
        put_int(MPI_Bsend(m[2], n, MPI_INT, 1, 36, MPI_COMM_WORLD));
        MPI_Buffer_detach(&att, &bsz);
        free(att);
    } else if (rank == 1) {
        int rc = MPI_Recv(m[1], n / 2, MPI_INT, 0, 35, tc, &st), cls;
        MPI_Error_class(rc, &cls);
        put_int(cls);
        put_int(MPI_Recv(m[2], n, MPI_INT, 0, 35, tc, &st));
        put_status(&st);
        put_int(MPI_Recv(m[3], n, MPI_INT, 0, 36, MPI_COMM_WORLD, &st));
        put_status(&st);
    }
    MPI_Comm_free(&tc);
    /* the packed form (every other int: the GPU kernels pack into the exported slab), into a
     * contiguous device receive and into the same strided type on the device */
    int *dv = balloc((size_t)n * 8, 78);
    int *e = balloc((size_t)n * 8, 79);
    int *f = balloc((size_t)n * 8, 69);
    if (rank == 0) {
        put_int(MPI_Send(dv, 1, every_other, 1, 37, MPI_COMM_WORLD));
        put_int(MPI_Send(dv, 1, every_other, 1, 38, MPI_COMM_WORLD));
        put_int(MPI_Send(a, n, MPI_INT, 1, 39, MPI_COMM_WORLD));
    } else if (rank == 1) {
        put_int(MPI_Recv(e, n, MPI_INT, 0, 37, MPI_COMM_WORLD, &st));
        put_status(&st);
        put_int(MPI_Recv(e, 1, every_other, 0, 38, MPI_COMM_WORLD, &st));
        put_status(&st);
        /* nonblocking into the strided type on the device, completed by Test */
        MPI_Request r;
        int flag = 0;
        put_int(MPI_Irecv(f, 1, every_other, 0, 39, MPI_COMM_WORLD, &r));
        while (!flag) MPI_Test(&r, &flag, &st);
        put_status(&st);
    }
    /* truncated far past the receive (64 KiB and 3 MiB into 4 KiB): Open MPI 4.1 writes a whole
     * contiguous message past a truncated receive's count, so a device receive's host copy must
     * take that (the buffer is 4 MiB so that the host run's own buffer takes it too) */
    MPI_Comm oc;
    MPI_Comm_dup(MPI_COMM_WORLD, &oc);
    MPI_Comm_set_errhandler(oc, MPI_ERRORS_RETURN);
    int *o = balloc_rec((size_t)n * 4 + (1 << 20), 0, 68);
    if (rank == 0) {
        MPI_Send(a, 16384, MPI_INT, 1, 50, oc);
        MPI_Send(a, n, MPI_INT, 1, 51, oc);
        put_int(MPI_Send(a, 16, MPI_INT, 1, 52, oc));
    } else if (rank == 1) {
        for (int tag = 50; tag <= 51; tag++) {
            int rc = MPI_Recv(o, 4096, MPI_BYTE, 0, tag, oc, &st), cls;
            MPI_Error_class(rc, &cls);
            put_int(cls);
        }
        put_int(MPI_Recv(o, 16, MPI_INT, 0, 52, oc, &st));
        put_status(&st);
    }
    MPI_Comm_free(&oc);
    /* four in flight, received in reverse order; the send buffers rewritten once they completed */
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Request q[4];
        for (int i = 0; i < 4; i++) put_int(MPI_Isend(m[i], n, MPI_INT, 1, 40 + i, MPI_COMM_WORLD, &q[i]));
        put_int(MPI_Waitall(4, q, MPI_STATUSES_IGNORE));
        for (int i = 0; i < 4; i++) bfill(m[i], (size_t)n * 4, 90 + (unsigned)i);
    } else if (rank == 1) {
        for (int i = 3; i >= 0; i--) {
            put_int(MPI_Recv(m[i], n, MPI_INT, 0, 40 + i, MPI_COMM_WORLD, &st));
            put_status(&st);
        }
    }
    MPI_Type_free(&every_other);
}

/* Layouts the GPU move kernels take apart differently (docs/gpu.md): a leaf table (indexed),
 * nested levels (a 3-D subarray), more levels than the kernel has (a 5-deep nest), legal type-signature mismatches, short messages into a strided receive (the
 * rest of the buffer and every gap must stay), with blocking, nonblocking and STATUS_IGNORE
 * completions, and truncation. */
static void p2p_packed_layouts(void) {
    MPI_Status st;
    MPI_Request r;
    int bl[1000], dp[1000], nind = 0;
    for (int i = 0; i < 1000; i++) {
        bl[i] = i % 7 + 1;
        dp[i] = i * 13 + (i % 3);
        nind += bl[i];
    }
    MPI_Datatype ind, sub, deep, tmp;
    MPI_Type_indexed(1000, bl, dp, MPI_INT, &ind);
    MPI_Type_commit(&ind);
    int sizes[3] = {40, 40, 40}, subs[3] = {20, 20, 20}, starts[3] = {5, 5, 5};
    MPI_Type_create_subarray(3, sizes, subs, starts, MPI_ORDER_C, MPI_DOUBLE, &sub);
    MPI_Type_commit(&sub);
    /* 5 levels of vectors with gaps over an int: one more than the kernel's levels */
    deep = MPI_INT;
    for (int l = 0; l < 5; l++) { /* 2 blocks of 1 element at 3 extents */
        MPI_Type_vector(2, 1, 3, deep, &tmp);
        if (deep != MPI_INT) MPI_Type_free(&deep);
        deep = tmp;
    }
    MPI_Type_commit(&deep);
    MPI_Aint lb, ext;
    MPI_Type_get_extent(deep, &lb, &ext);
    /* indexed both ways (count 2), then received as plain ints */
    size_t ind_span = (size_t)(1000 * 13 + 2 + 7) * 4 * 2 + 64;
    int *a = balloc(ind_span, 60);
    int *ai = balloc((size_t)nind * 2 * 4, 61);
    if (rank == 0) {
        put_int(MPI_Send(a, 2, ind, 1, 20, MPI_COMM_WORLD));
        put_int(MPI_Send(a, 2, ind, 1, 21, MPI_COMM_WORLD));
    } else if (rank == 1) {
        put_int(MPI_Recv(a, 2, ind, 0, 20, MPI_COMM_WORLD, &st));
        put_status(&st);
        put_int(MPI_Recv(ai, nind * 2, MPI_INT, 0, 21, MPI_COMM_WORLD, &st));
        put_status(&st);
    }
    /* subarray to contiguous and back */
    double *cube = balloc(40 * 40 * 40 * 8, 62);
    double *flat = balloc(20 * 20 * 20 * 8, 63);
    if (rank == 0) {
        put_int(MPI_Send(cube, 1, sub, 1, 22, MPI_COMM_WORLD));
        put_int(MPI_Recv(cube, 1, sub, 1, 23, MPI_COMM_WORLD, &st));
        put_status(&st);
    } else if (rank == 1) {
        put_int(MPI_Recv(flat, 8000, MPI_DOUBLE, 0, 22, MPI_COMM_WORLD, &st));
        put_status(&st);
        put_int(MPI_Send(flat, 8000, MPI_DOUBLE, 0, 23, MPI_COMM_WORLD));
    }
    /* the deep nest, 3 elements, with Sendrecv */
    size_t dspan = (size_t)ext * 3 + 256;
    char *d0 = balloc(dspan, 64), *d1 = balloc(dspan, 65);
    if (rank <= 1) {
        put_int(MPI_Sendrecv(d0, 3, deep, 1 - rank, 24, d1, 3, deep, 1 - rank, 24, MPI_COMM_WORLD, &st));
        put_status(&st);
    }
    /* short messages into vec8: blocking, nonblocking with a status, and STATUS_IGNORE */
    double *v = balloc(4096 * 16 * 8, 66), *w = balloc(4096 * 16 * 8, 67), *x = balloc(4096 * 16 * 8, 68);
    double *src = balloc(1001 * 8, 69);
    if (rank == 0) {
        put_int(MPI_Send(src, 1000, MPI_DOUBLE, 1, 25, MPI_COMM_WORLD));
        put_int(MPI_Send(src, 1001, MPI_DOUBLE, 1, 26, MPI_COMM_WORLD));
        put_int(MPI_Send(src, 999, MPI_DOUBLE, 1, 27, MPI_COMM_WORLD));
    } else if (rank == 1) {
        put_int(MPI_Recv(v, 1, vec8, 0, 25, MPI_COMM_WORLD, &st));
        put_status(&st);
        put_int(MPI_Irecv(w, 1, vec8, 0, 26, MPI_COMM_WORLD, &r));
        put_int(MPI_Wait(&r, &st));
        put_status(&st);
        put_int(MPI_Irecv(x, 1, vec8, 0, 27, MPI_COMM_WORLD, &r));
        put_int(MPI_Wait(&r, MPI_STATUS_IGNORE));
    }
    /* truncation into vec8: the class (the buffer's contents are the MPI's choice) */
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    double *t = balloc_rec(4096 * 16 * 8, 0, 70);
    double *big = balloc(40000 * 8, 71);
    if (rank == 0) MPI_Send(big, 40000, MPI_DOUBLE, 1, 28, c);
    if (rank == 1) {
        int rc = MPI_Recv(t, 1, vec8, 0, 28, c, &st), cls;
        MPI_Error_class(rc, &cls);
        put_int(cls);
    }
    MPI_Comm_free(&c);
    MPI_Type_free(&ind);
    MPI_Type_free(&sub);
    MPI_Type_free(&deep);
}

/* ---- collectives (all ranks) ----------------------------------------------------------------- */
static void coll_rooted(void) {
    double *v = balloc(4096 * 16 * 8, 60);
    put_int(MPI_Bcast(v, 1, vec8, 0, MPI_COMM_WORLD));
    int *s = balloc(1000 * 4, 61);
    int *g = balloc((size_t)nprocs * 1100 * 4, 62);
    int counts[64], displs[64];
    for (int i = 0; i < nprocs; i++) {
        counts[i] = 1000 - 10 * i;
        displs[i] = 1100 * i + 7; /* gaps between the blocks must stay */
    }
    put_int(MPI_Gatherv(s, counts[rank], MPI_INT, g, counts, displs, MPI_INT, 1, MPI_COMM_WORLD));
    int *sc = balloc((size_t)nprocs * 500 * 4, 63);
    if (rank == 0) put_int(MPI_Scatter(sc, 500, MPI_INT, MPI_IN_PLACE, 500, MPI_INT, 0, MPI_COMM_WORLD));
    else put_int(MPI_Scatter(NULL, 500, MPI_INT, sc, 500, MPI_INT, 0, MPI_COMM_WORLD));
}

static void coll_alltoall(void) {
    int *s = balloc(3000 * 4, 70);
    int *r = balloc((size_t)nprocs * 3000 * 4, 71);
    put_int(MPI_Allgather(s, 3000, MPI_INT, r, 3000, MPI_INT, MPI_COMM_WORLD));
    /* each peer's block is one vec8 on the send side, contiguous doubles on the receive side */
    MPI_Datatype vblk;
    MPI_Type_vector(256, 8, 16, MPI_DOUBLE, &vblk);
    MPI_Datatype vres;
    MPI_Type_create_resized(vblk, 0, 256 * 16 * 8, &vres);
    MPI_Type_commit(&vres);
    double *vs = balloc((size_t)nprocs * 256 * 16 * 8, 72);
    double *vr = balloc((size_t)nprocs * 256 * 8 * 8, 73);
    put_int(MPI_Alltoall(vs, 1, vres, vr, 256 * 8, MPI_DOUBLE, MPI_COMM_WORLD));
    /* nonblocking, v-form */
    int sc[64], sd[64], rc[64], rd[64];
    for (int i = 0; i < nprocs; i++) {
        sc[i] = 100 + i;
        sd[i] = 400 * i;
        rc[i] = 100 + rank;
        rd[i] = 400 * i + 3;
    }
    int *a = balloc((size_t)nprocs * 400 * 4, 74);
    int *b = balloc((size_t)nprocs * 400 * 4, 75);
    MPI_Request q;
    put_int(MPI_Ialltoallv(a, sc, sd, MPI_INT, b, rc, rd, MPI_INT, MPI_COMM_WORLD, &q));
    put_int(MPI_Wait(&q, MPI_STATUS_IGNORE));
    MPI_Type_free(&vres);
    MPI_Type_free(&vblk);
}

/* The block collectives on a derived type on both sides (the packed form serves them block by
 * block where SLUICE_GPU_PACK_MIN allows), blocking and nonblocking, in place too. */
static void coll_packed(void) {
    MPI_Datatype vblk, vres;
    MPI_Type_vector(256, 8, 16, MPI_DOUBLE, &vblk);
    MPI_Type_create_resized(vblk, 0, 256 * 16 * 8, &vres);
    MPI_Type_commit(&vres);
    size_t blk = 256 * 16 * 8, n = (size_t)nprocs;
    double *s = balloc(blk, 90), *g = balloc(n * blk, 91), *a = balloc(n * blk, 92);
    double *sc = balloc(n * blk, 93), *r = balloc(256 * 8 * 8, 94);
    double *ts = balloc(n * blk, 95), *tr = balloc(n * blk, 96), *ip = balloc(n * blk, 97);
    MPI_Request q[2];
    put_int(MPI_Gather(s, 1, vres, g, 1, vres, 1 % nprocs, MPI_COMM_WORLD));
    put_int(MPI_Allgather(s, 1, vres, a, 1, vres, MPI_COMM_WORLD));
    put_int(MPI_Iscatter(sc, 1, vres, r, 256 * 8, MPI_DOUBLE, 0, MPI_COMM_WORLD, &q[0]));
    put_int(MPI_Ialltoall(ts, 1, vres, tr, 1, vres, MPI_COMM_WORLD, &q[1]));
    put_int(MPI_Waitall(2, q, MPI_STATUSES_IGNORE));
    put_int(MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ip, 1, vres, MPI_COMM_WORLD));
    MPI_Type_free(&vres);
    MPI_Type_free(&vblk);
}

static void coll_neighbor(void) {
    MPI_Comm ring;
    int dims[1] = {nprocs}, periods[1] = {1};
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
    double *s = balloc(2 * 4096 * 16 * 8, 80);
    double *r = balloc(2 * 4096 * 8 * 8, 81);
    MPI_Datatype vres;
    MPI_Type_create_resized(vec8, 0, 4096 * 16 * 8, &vres);
    MPI_Type_commit(&vres);
    put_int(MPI_Neighbor_alltoall(s, 1, vres, r, 4096 * 8, MPI_DOUBLE, ring));
    MPI_Type_free(&vres);
    MPI_Comm_free(&ring);
}

static void coll_reductions(void) {
    int *a = balloc(5000 * 4, 90), *b = balloc(5000 * 4, 91);
    put_int(MPI_Allreduce(a, b, 5000, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    put_int(MPI_Allreduce(MPI_IN_PLACE, a, 5000, MPI_INT, MPI_BXOR, MPI_COMM_WORLD));
    int *c = balloc(3000 * 4, 92), *d = balloc(3000 * 4, 93);
    put_int(MPI_Reduce(c, d, 3000, MPI_INT, MPI_MAX, 1, MPI_COMM_WORLD));
    if (rank == 0) put_int(MPI_Reduce(MPI_IN_PLACE, c, 3000, MPI_INT, MPI_MIN, 0, MPI_COMM_WORLD));
    else put_int(MPI_Reduce(c, NULL, 3000, MPI_INT, MPI_MIN, 0, MPI_COMM_WORLD));
    int *e = balloc((size_t)nprocs * 700 * 4, 94), *f = balloc(700 * 4, 95);
    put_int(MPI_Reduce_scatter_block(e, f, 700, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    int rcs[64];
    for (int i = 0; i < nprocs; i++) rcs[i] = 100 + 13 * i;
    int *g = balloc((size_t)nprocs * 1000 * 4, 96);
    put_int(MPI_Reduce_scatter(MPI_IN_PLACE, g, rcs, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    int *h = balloc(2000 * 4, 97), *k = balloc(2000 * 4, 98);
    put_int(MPI_Scan(h, k, 2000, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    put_int(MPI_Exscan(MPI_IN_PLACE, h, 2000, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    MPI_Request q;
    int *m = balloc(4000 * 4, 99);
    put_int(MPI_Iallreduce(MPI_IN_PLACE, m, 4000, MPI_INT, MPI_BOR, MPI_COMM_WORLD, &q));
    put_int(MPI_Wait(&q, MPI_STATUS_IGNORE));
    put_int(MPI_Reduce_local(a, m, 4000, MPI_INT, MPI_SUM));
}

/* ---- errors only device buffers have ------------------------------------------------------------- */
static void device_errors(void) {
    on_device = 1;
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    if (rank == 0) {
        CUdeviceptr d;
        cu_MemAlloc(&d, 4096);
        /* 2048 ints from a 4096-byte allocation: sluice refuses before the MPI reads past it */
        int rc = MPI_Send((void *)(uintptr_t)d, 2048, MPI_INT, 1, 13, c), cls = -1;
        MPI_Error_class(rc, &cls);
        EXPECT(cls == MPI_ERR_BUFFER, "send past the device allocation gave class %d, want MPI_ERR_BUFFER (%d)", cls, MPI_ERR_BUFFER);
        cu_MemFree(d);
    }
    /* one-sided and file calls are refused with device buffers, through their own handlers */
    CUdeviceptr d;
    cu_MemAlloc(&d, 4096);
    int *host = calloc(1024, sizeof(int)), rc, cls = -1;
    MPI_Win win;
    /* Open MPI 4.1 creates no window where its shared-memory transport has no single-copy
     * mechanism (the GPU machine's containers forbid CMA): bare, it fails the same way, and
     * there is then no window to refuse a Put on. */
    int wrc = MPI_Win_create(host, 4096, sizeof(int), MPI_INFO_NULL, c, &win), wok = wrc == MPI_SUCCESS, all_ok = 0;
    MPI_Allreduce(&wok, &all_ok, 1, MPI_INT, MPI_LAND, c);
    if (all_ok) {
        MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
        MPI_Win_fence(0, win);
        rc = MPI_Put((void *)(uintptr_t)d, 16, MPI_INT, (rank + 1) % nprocs, 0, 16, MPI_INT, win);
        MPI_Error_class(rc, &cls);
        EXPECT(cls == MPI_ERR_BUFFER, "MPI_Put from device memory gave class %d, want MPI_ERR_BUFFER", cls);
        MPI_Win_fence(0, win);
    } else if (rank == 0) {
        printf("note: MPI_Win_create failed here (the MPI creates no window in this environment); MPI_Put not checked\n");
    }
    if (wok) MPI_Win_free(&win);
    char path[256];
    if (rank == 0) snprintf(path, sizeof path, "/tmp/sluice_gpu_io_%d.bin", (int)getpid());
    MPI_Bcast(path, sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);
    MPI_File fh;
    MPI_File_open(c, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    MPI_Status st;
    cls = -1;
    rc = MPI_File_write_at(fh, rank * 64, (void *)(uintptr_t)d, 16, MPI_INT, &st); /* files return errors by default */
    MPI_Error_class(rc, &cls);
    EXPECT(cls == MPI_ERR_BUFFER, "MPI_File_write_at from device memory gave class %d, want MPI_ERR_BUFFER", cls);
    MPI_File_close(&fh);
    MPI_Barrier(c);
    if (rank == 0) MPI_File_delete(path, MPI_INFO_NULL);
    cu_MemFree(d);
    free(host);
    MPI_Comm_free(&c);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    MPI_Comm local;
    int local_rank;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &local_rank);
    const char *why = gpu_open(local_rank);
    host_twice = why != NULL && getenv("GPU_MPI_HOST_TWICE") != NULL;
    if (host_twice) why = NULL;
    int ok = why == NULL, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (!all_ok || nprocs < 2 || nprocs > 64) {
        if (rank == 0) printf("SKIP gpu_mpi: %s\n", why ? why : (nprocs < 2 ? "needs 2 ranks" : "no GPU on some rank"));
        MPI_Finalize();
        return 0;
    }
    make_types();
    run_case("p2p_contiguous", p2p_contiguous);
    run_case("p2p_vector_both_ways", p2p_vector_both_ways);
    run_case("p2p_nonblocking", p2p_nonblocking);
    run_case("p2p_persistent", p2p_persistent);
    run_case("p2p_sendrecv_probe_truncate", p2p_sendrecv_probe_truncate);
    run_case("p2p_packed_layouts", p2p_packed_layouts);
    run_case("p2p_pipelined", p2p_pipelined);
    run_case("p2p_device_route", p2p_device_route);
    run_case("coll_rooted", coll_rooted);
    run_case("coll_alltoall", coll_alltoall);
    run_case("coll_packed", coll_packed);
    run_case("coll_neighbor", coll_neighbor);
    run_case("coll_reductions", coll_reductions);
    if (!host_twice) device_errors();
    MPI_Type_free(&vec8);
    MPI_Type_free(&vec1);
    MPI_Type_free(&resized);
    MPI_Comm_free(&local);
    int rc = report_verdict("gpu_mpi");
    MPI_Finalize();
    return rc;
}
