/* Device-buffer ping-pong between ranks 0 and 1 (run it with libsluice.so preloaded):
 *
 *   sluice   device pointers straight into MPI_Send/MPI_Recv (sluice stages them)
 *   staged   staging by hand: cuMemcpyDtoH into pinned memory, MPI on host, cuMemcpyHtoD
 *   blocks   (vector types) one cuMemcpy per contiguous block into a packed pinned buffer, MPI
 *            on the packed bytes, one cuMemcpy per block back: the per-block-copy baseline
 *            (GPU_P2P_SKIP_BLOCKS=1 leaves it out: it takes most of the run's time)
 *   host     host buffers only: the MPI's own hop, for the "slowest hop" of the path
 *   pcie     cuMemcpyDtoH + cuMemcpyHtoD of the same bytes with pinned memory: the copy hop
 *   irecv    device pointers into MPI_Irecv + MPI_Wait (the receiver) and MPI_Send: sluice's
 *            nonblocking device receives (a halo exchange's usual form)
 *   d2d      (contiguous) one cuMemcpyDtoD of the same bytes per leg, on the receiving rank's
 *            device: the hop of sluice's device route between ranks of one node (docs/gpu.md)
 *   kernel   (vector types) a hand-written pack kernel (one thread per double, vec_pack_ptx.h)
 *            into a device buffer, cuMemcpyDtoH of the packed bytes, MPI on them, cuMemcpyHtoD,
 *            the unpack kernel: the "pack kernel + cudaMemcpy + MPI" baseline
 *
 * Run it twice to compare sluice's two forms for vector types: by default sluice packs with its
 * GPU move kernels; SLUICE_GPU_PACK_MIN=off makes it copy each message's whole span.
 *
 * GPU_P2P_CONTIG_ONLY=1 runs the contiguous sizes only.
 *
 * Modes are interleaved rep by rep (paired), each rep timing `iters` round trips. Output: one
 * CSV row per (mode, type, bytes): median one-way time in microseconds with a 95% interval of
 * the median (order statistics), and bandwidth at the median. SKIP without a CUDA device. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include "../../tests/c/gpu_cuda.h"
#include "vec_pack_ptx.h"

static int rank;
#define REPS 15

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

enum { SLUICE, STAGED, BLOCKS, HOST, PCIE, KERNEL, D2D, IRECV, NMODES };
static const char *mode_name[] = {"sluice", "staged", "blocks", "host", "pcie", "kernel", "d2d", "irecv"};
static CUdeviceptr dbuf; /* the d2d mode's second device buffer */
static CUfunction vec_pack;
static CUdeviceptr kbuf; /* the kernel mode's packed device buffer */

/* The hand-written kernel over a vector of doubles: `unpack` 0 gathers into kbuf, 1 scatters. */
static void run_vec_kernel(CUdeviceptr strided, size_t data, size_t block, size_t stride, unsigned unpack) {
    unsigned long long nwords = data / 8, blen = block / 8, st = stride;
    CUdeviceptr a = strided, b = kbuf;
    void *args[] = {&a, &b, &nwords, &blen, &st, &unpack};
    unsigned blocks = (unsigned)((nwords + 255) / 256);
    if (blocks > 65535) blocks = 65535;
    if (cu_LaunchKernel(vec_pack, blocks, 1, 1, 256, 1, 1, 0, NULL, args, NULL)) {
        fprintf(stderr, "gpu_p2p: cuLaunchKernel failed\n");
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
}

typedef struct {
    const char *name;
    MPI_Datatype type; /* of one message (count 1) */
    size_t data;       /* packed bytes */
    size_t span;       /* bytes of memory it covers */
    size_t block;      /* contiguous block (== data for contiguous) */
    size_t stride;     /* distance between blocks */
} Shape;

static void die(const char *what) {
    fprintf(stderr, "gpu_p2p: %s failed\n", what);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

/* One round trip (rank 0 sends first) in `mode`. */
static void round_trip(int mode, const Shape *s, CUdeviceptr dev, char *pinned, char *packed, char *host) {
    int peer = 1 - rank;
    MPI_Status st;
    size_t nblocks = s->data / s->block;
    for (int leg = 0; leg < 2; leg++) {
        int sending = (leg == 0) == (rank == 0);
        switch (mode) {
        case SLUICE:
            if (sending) MPI_Send((void *)(uintptr_t)dev, 1, s->type, peer, 0, MPI_COMM_WORLD);
            else MPI_Recv((void *)(uintptr_t)dev, 1, s->type, peer, 0, MPI_COMM_WORLD, &st);
            break;
        case IRECV:
            if (sending) {
                MPI_Send((void *)(uintptr_t)dev, 1, s->type, peer, 0, MPI_COMM_WORLD);
            } else {
                MPI_Request r;
                MPI_Irecv((void *)(uintptr_t)dev, 1, s->type, peer, 0, MPI_COMM_WORLD, &r);
                MPI_Wait(&r, &st);
            }
            break;
        case STAGED:
            if (sending) {
                if (cu_MemcpyDtoH(pinned, dev, s->span)) die("cuMemcpyDtoH");
                MPI_Send(pinned, 1, s->type, peer, 0, MPI_COMM_WORLD);
            } else {
                MPI_Recv(pinned, 1, s->type, peer, 0, MPI_COMM_WORLD, &st);
                if (cu_MemcpyHtoD(dev, pinned, s->span)) die("cuMemcpyHtoD");
            }
            break;
        case BLOCKS:
            if (sending) {
                for (size_t b = 0; b < nblocks; b++)
                    if (cu_MemcpyDtoH(packed + b * s->block, dev + b * s->stride, s->block)) die("cuMemcpyDtoH");
                MPI_Send(packed, (int)s->data, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
            } else {
                MPI_Recv(packed, (int)s->data, MPI_BYTE, peer, 0, MPI_COMM_WORLD, &st);
                for (size_t b = 0; b < nblocks; b++)
                    if (cu_MemcpyHtoD(dev + b * s->stride, packed + b * s->block, s->block)) die("cuMemcpyHtoD");
            }
            break;
        case HOST:
            if (sending) MPI_Send(host, 1, s->type, peer, 0, MPI_COMM_WORLD);
            else MPI_Recv(host, 1, s->type, peer, 0, MPI_COMM_WORLD, &st);
            break;
        case KERNEL:
            if (sending) {
                run_vec_kernel(dev, s->data, s->block, s->stride, 0);
                if (cu_MemcpyDtoH(packed, kbuf, s->data)) die("cuMemcpyDtoH");
                MPI_Send(packed, (int)s->data, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
            } else {
                MPI_Recv(packed, (int)s->data, MPI_BYTE, peer, 0, MPI_COMM_WORLD, &st);
                if (cu_MemcpyHtoD(kbuf, packed, s->data)) die("cuMemcpyHtoD");
                run_vec_kernel(dev, s->data, s->block, s->stride, 1);
                if (cu_CtxSynchronize()) die("cuCtxSynchronize");
            }
            break;
        case D2D:
            /* a zero-byte message keeps the ranks in step, then one device copy of the bytes */
            if (sending) {
                MPI_Send(NULL, 0, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
            } else {
                MPI_Recv(NULL, 0, MPI_BYTE, peer, 0, MPI_COMM_WORLD, &st);
                if (cu_MemcpyDtoD(dev, dbuf, s->data) || cu_CtxSynchronize()) die("cuMemcpyDtoD"); /* async on the host otherwise */
            }
            break;
        case PCIE:
            /* both ranks copy one way per leg, then a zero-byte message keeps them in step */
            if (sending) {
                if (cu_MemcpyDtoH(packed, dev, s->data)) die("cuMemcpyDtoH");
                MPI_Send(NULL, 0, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
            } else {
                MPI_Recv(NULL, 0, MPI_BYTE, peer, 0, MPI_COMM_WORLD, &st);
                if (cu_MemcpyHtoD(dev, packed, s->data)) die("cuMemcpyHtoD");
            }
            break;
        }
    }
}

static void bench(const Shape *s) {
    CUdeviceptr dev;
    char *pinned, *packed;
    char *host = malloc(s->span);
    memset(host, 1, s->span);
    if (cu_MemAlloc(&dev, s->span)) die("cuMemAlloc");
    if (cu_MemHostAlloc((void **)&pinned, s->span, 0)) die("cuMemHostAlloc");
    if (cu_MemHostAlloc((void **)&packed, s->data, 0)) die("cuMemHostAlloc");
    if (cu_MemAlloc(&kbuf, s->data)) die("cuMemAlloc");
    if (cu_MemAlloc(&dbuf, s->data)) die("cuMemAlloc");
    memset(pinned, 2, s->span);
    memset(packed, 3, s->data);
    cu_MemcpyHtoD(dev, pinned, s->span);
    size_t per_leg = s->data;
    int iters = (int)(64.0 * 1024 * 1024 / (double)(per_leg + 4096));
    if (iters < 3) iters = 3;
    if (iters > 200) iters = 200;
    int contiguous = s->block == s->data;
    double t[NMODES][REPS];
    for (int m = 0; m < NMODES; m++) round_trip(((m == BLOCKS || m == KERNEL) && contiguous) || (m == D2D && !contiguous) ? STAGED : m, s, dev, pinned, packed, host); /* warm-up */
    for (int r = 0; r < REPS; r++) {
        for (int m = 0; m < NMODES; m++) {
            if ((m == BLOCKS && (contiguous || s->data / s->block > 65536 || getenv("GPU_P2P_SKIP_BLOCKS"))) || (m == KERNEL && contiguous) || (m == D2D && !contiguous)) {
                t[m][r] = NAN;
                continue;
            }
            int it = m == BLOCKS ? (iters + 9) / 10 : iters;
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int i = 0; i < it; i++) round_trip(m, s, dev, pinned, packed, host);
            t[m][r] = (MPI_Wtime() - t0) / it / 2 * 1e6; /* one way, microseconds */
        }
    }
    if (rank == 0) {
        /* 95% interval of the median of REPS=15 samples: order statistics 4 and 12 (1-based) */
        for (int m = 0; m < NMODES; m++) {
            if (isnan(t[m][0])) continue;
            qsort(t[m], REPS, sizeof(double), cmp);
            double med = t[m][REPS / 2];
            printf("%s,%s,%zu,%.2f,%.2f,%.2f,%.3f\n", mode_name[m], s->name, s->data, med, t[m][3], t[m][11], per_leg / med / 1e3);
        }
        fflush(stdout);
    }
    cu_MemFree(dev);
    cu_MemFree(kbuf);
    cu_MemFree(dbuf);
    cu_MemFreeHost(pinned);
    cu_MemFreeHost(packed);
    free(host);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    const char *why = gpu_open(rank);
    int ok = why == NULL && n == 2, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (!all) {
        if (rank == 0) printf("SKIP gpu_p2p: %s\n", why ? why : "needs exactly 2 ranks with a GPU each");
        MPI_Finalize();
        return 0;
    }
    /* Wake the GPU and its link first: idle clocks and link power states made the first
     * small copies ~10x slower than later ones in the first run on the H100 machine. */
    {
        CUdeviceptr d;
        char *h;
        cu_MemAlloc(&d, 1 << 20);
        cu_MemHostAlloc((void **)&h, 1 << 20, 0);
        double t0 = MPI_Wtime();
        while (MPI_Wtime() - t0 < 1.0) {
            cu_MemcpyHtoD(d, h, 1 << 20);
            cu_MemcpyDtoH(h, d, 8);
        }
        cu_MemFree(d);
        cu_MemFreeHost(h);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    CUmodule mod;
    if (cu_ModuleLoadData(&mod, vec_pack_ptx) || cu_ModuleGetFunction(&vec_pack, mod, "vec_pack_w8")) die("loading the pack kernel");
    if (rank == 0) printf("mode,type,bytes,median_us,lo_us,hi_us,GBps\n");
    static const size_t sizes[] = {8, 1024, 65536, 262144, 1 << 20, 4 << 20, 16 << 20, 64 << 20};
    for (int i = 0; i < 8; i++) {
        Shape s = {"contig", MPI_DATATYPE_NULL, sizes[i], sizes[i], sizes[i], sizes[i]};
        MPI_Type_contiguous((int)sizes[i], MPI_BYTE, &s.type);
        MPI_Type_commit(&s.type);
        bench(&s);
        MPI_Type_free(&s.type);
    }
    /* vec-8 of the ddt suite (blocks of 8 doubles at stride 16 doubles) and vec-1 (single
     * doubles at stride 2) */
    static const size_t vdata[] = {4096, 16384, 65536, 131072, 262144, 1 << 20, 16 << 20};
    static const int vblock[] = {8, 1};
    for (int v = 0; v < 2 && !getenv("GPU_P2P_CONTIG_ONLY"); v++) {
        for (int i = 0; i < 7; i++) {
            int bd = vblock[v];
            int blocks = (int)(vdata[i] / (8 * (size_t)bd));
            Shape s = {bd == 8 ? "vec-8" : "vec-1", MPI_DATATYPE_NULL, vdata[i], vdata[i] * 2, 8 * (size_t)bd, 16 * (size_t)bd};
            MPI_Type_vector(blocks, bd, 2 * bd, MPI_DOUBLE, &s.type);
            MPI_Type_commit(&s.type);
            bench(&s);
            MPI_Type_free(&s.type);
        }
    }
    MPI_Finalize();
    return 0;
}
