/* Latency of one host<->device copy by size and mechanism (one rank; run under the MPI launcher
 * only so that the device kit runs it like the others):
 *
 *   d2h_pinned / h2d_pinned      cuMemcpyDtoH / cuMemcpyHtoD with cuMemHostAlloc memory
 *   d2h_pageable / h2d_pageable  the same with malloc'ed memory
 *   d2h_async_sync               cuMemcpyAsync on a created stream, then cuStreamSynchronize
 *                                (what sluice does), pinned memory
 *   d2h_spin                     d2h_pinned after cuCtxSetFlags(CU_CTX_SCHED_SPIN)
 *
 * It tells how small device messages should be staged. Output: CSV, median and quartiles of 201
 * copies after 50 warm-up copies, microseconds. SKIP without a CUDA device. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <mpi.h>
#include "../../tests/c/gpu_cuda.h"

#define N 201

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static CUresult (*cu_StreamCreate)(CUstream *, unsigned);
static CUresult (*cu_StreamSynchronize)(CUstream);
static CUresult (*cu_MemcpyAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
static CUresult (*cu_CtxSetFlags)(unsigned);

enum { D2H_PINNED, H2D_PINNED, D2H_PAGEABLE, H2D_PAGEABLE, D2H_ASYNC, D2H_SPIN, NM };
static const char *names[] = {"d2h_pinned", "h2d_pinned", "d2h_pageable", "h2d_pageable", "d2h_async_sync", "d2h_spin"};

static void one(int m, CUdeviceptr d, char *pinned, char *pageable, size_t n, CUstream s) {
    switch (m) {
    case D2H_PINNED:
    case D2H_SPIN: cu_MemcpyDtoH(pinned, d, n); break;
    case H2D_PINNED: cu_MemcpyHtoD(d, pinned, n); break;
    case D2H_PAGEABLE: cu_MemcpyDtoH(pageable, d, n); break;
    case H2D_PAGEABLE: cu_MemcpyHtoD(d, pageable, n); break;
    case D2H_ASYNC:
        cu_MemcpyAsync((CUdeviceptr)(uintptr_t)pinned, d, n, s);
        cu_StreamSynchronize(s);
        break;
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    const char *why = gpu_open(0);
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    if (why || !h) {
        printf("SKIP gpu_copy: %s\n", why ? why : "no driver");
        MPI_Finalize();
        return 0;
    }
    *(void **)&cu_StreamCreate = dlsym(h, "cuStreamCreate");
    *(void **)&cu_StreamSynchronize = dlsym(h, "cuStreamSynchronize");
    *(void **)&cu_MemcpyAsync = dlsym(h, "cuMemcpyAsync");
    *(void **)&cu_CtxSetFlags = dlsym(h, "cuCtxSetFlags");
    size_t max = 1 << 20;
    CUdeviceptr d;
    char *pinned, *pageable = malloc(max);
    memset(pageable, 1, max);
    CUstream s;
    cu_MemAlloc(&d, max);
    cu_MemHostAlloc((void **)&pinned, max, 0);
    cu_StreamCreate(&s, 0);
    printf("mode,bytes,median_us,q1_us,q3_us\n");
    static const size_t sizes[] = {8, 64, 512, 4096, 16384, 65536, 262144, 1 << 20};
    for (int m = 0; m < NM; m++) {
        if (m == D2H_SPIN) {
            int rc = cu_CtxSetFlags ? cu_CtxSetFlags(1 /* CU_CTX_SCHED_SPIN */) : -1;
            printf("# cuCtxSetFlags(SPIN) rc=%d\n", rc);
        }
        for (int i = 0; i < 8; i++) {
            size_t n = sizes[i];
            double t[N];
            for (int k = 0; k < 50; k++) one(m, d, pinned, pageable, n, s);
            for (int k = 0; k < N; k++) {
                double t0 = now_us();
                one(m, d, pinned, pageable, n, s);
                t[k] = now_us() - t0;
            }
            qsort(t, N, sizeof(double), cmp);
            printf("%s,%zu,%.2f,%.2f,%.2f\n", names[m], n, t[N / 2], t[N / 4], t[3 * N / 4]);
        }
        fflush(stdout);
    }
    MPI_Finalize();
    return 0;
}
