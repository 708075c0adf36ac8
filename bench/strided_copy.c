/*
 * strided_copy.c - the memory-system facts behind the datatype kernels' per-CPU choices
 * (src/datatype/kernel/prefetch.rs, stores.rs; docs/benchmarks.md, "An Intel
 * Sapphire-Rapids-class VM"). No MPI, no sluice: plain loops, so the numbers are the machine's.
 *
 *   cc -O2 -mavx2 -o strided_copy bench/strided_copy.c
 *   ./strided_copy bw                                   memcpy GB/s from 256 KiB to 128 MiB
 *   ./strided_copy rows STRIDE BLOCK N [AHEAD [unpack] [l1|l2|w] [nt] [read]]
 *       N blocks of BLOCK bytes STRIDE bytes apart, one memcpy each, packed into (or, with
 *       "unpack", unpacked from) a contiguous buffer, with every line of the block AHEAD blocks
 *       on prefetched (0: none) for reading into L1 (default) or L2, or with write intent;
 *       beside it one memcpy of the same N * BLOCK bytes. "nt" (unpack, BLOCK a multiple of
 *       32, STRIDE of 64): the blocks are written with non-temporal stores instead. "read":
 *       after each unpack the blocks are read (what an application does with received data),
 *       timed apart and together with the unpack.
 *
 * Every buffer is written before anything is timed; each figure is the best of many runs
 * (warm caches), in GB/s of the bytes copied.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <immintrin.h>

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static char *buffer(size_t len, int byte) {
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    memset(p, byte, len);
    return p;
}

static void bw(void) {
    for (size_t sz = 256 << 10; sz <= (size_t)128 << 20; sz *= 2) {
        char *a = buffer(sz, 1), *b = buffer(sz, 2);
        int reps = (int)(2e9 / (double)sz);
        double best = 1e9;
        for (int r = 0; r < (reps < 5 ? 5 : reps); r++) {
            double t = now_s();
            memcpy(b, a, sz);
            t = now_s() - t;
            if (t < best) best = t;
        }
        printf("%7zu KiB: memcpy %.1f GB/s\n", sz >> 10, (double)sz / best / 1e9);
        munmap(a, sz);
        munmap(b, sz);
    }
}

static void prefetch_block(const char *f, long block, int hint) {
    for (long o = 0; o < block; o += 64) {
        if (hint == 1)
            _mm_prefetch(f + o, _MM_HINT_T2);
        else if (hint == 2)
            __asm__ volatile("prefetchw (%0)" ::"r"(f + o));
        else
            _mm_prefetch(f + o, _MM_HINT_T0);
    }
}

/* One 32-byte vector loaded from `s` and stored to `d` (64-byte aligned line halves) past the
 * cache. */
static void stream_block(char *d, const char *s, long block) {
    for (long o = 0; o < block; o += 32)
        _mm256_stream_si256((__m256i *)(d + o), _mm256_loadu_si256((const __m256i *)(s + o)));
}

/* Reads the N blocks; returns a sum so the loads are kept. */
static long read_blocks(const char *mem, long stride, long block, long n) {
    long sum = 0;
    for (long i = 0; i < n; i++)
        for (long o = 0; o < block; o += 8) sum += *(const long *)(mem + i * stride + o);
    return sum;
}

static void rows(long stride, long block, long n, long ahead, int unpack, int hint, int nt, int read) {
    size_t span = (size_t)(stride * (n + ahead) + block);
    /* The packed buffers 2112 B past a page boundary, as in sluice-ddt-bench (no 4K aliasing
     * with the strided side). */
    char *mem = buffer(span, 1), *packed = buffer((size_t)(block * n) + 8192, 2) + 2112;
    char *c1 = buffer((size_t)(block * n) + 8192, 3), *c2 = buffer((size_t)(block * n) + 8192, 4) + 2112;
    double best = 1e9, best_memcpy = 1e9, best_read = 1e9, best_both = 1e9;
    volatile long sink = 0;
    for (int r = 0; r < 2000; r++) {
        double t = now_s();
        for (long i = 0; i < n; i++) {
            if (ahead) prefetch_block(mem + (i + ahead) * stride, block, hint);
            if (unpack && nt)
                stream_block(mem + i * stride, packed + i * block, block);
            else if (unpack)
                memcpy(mem + i * stride, packed + i * block, (size_t)block);
            else
                memcpy(packed + i * block, mem + i * stride, (size_t)block);
        }
        if (nt) _mm_sfence();
        double t1 = now_s();
        if (read) {
            sink += read_blocks(mem, stride, block, n);
            double t2 = now_s();
            if (t2 - t1 < best_read) best_read = t2 - t1;
            if (t2 - t < best_both) best_both = t2 - t;
        }
        t = t1 - t;
        if (t < best) best = t;
        t = now_s();
        memcpy(c2, c1, (size_t)(block * n));
        t = now_s() - t;
        if (t < best_memcpy) best_memcpy = t;
    }
    double bytes = (double)(block * n);
    printf("%s%s %ld blocks of %ld B, %ld B apart, prefetch %ld ahead (%s): %.1f GB/s; one memcpy: %.1f GB/s\n",
           unpack ? "unpack" : "pack", nt ? " (streaming)" : "", n, block, stride, ahead,
           hint == 1 ? "l2" : hint == 2 ? "w" : "l1", bytes / best / 1e9, bytes / best_memcpy / 1e9);
    if (read)
        printf("  then reading the blocks: %.3f ms; copy %.3f ms, copy and read %.3f ms\n", best_read * 1e3, best * 1e3,
               best_both * 1e3);
}

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "bw") == 0) {
        bw();
        return 0;
    }
    if (argc >= 5 && strcmp(argv[1], "rows") == 0) {
        int unpack = 0, hint = 0, nt = 0, read = 0;
        for (int i = 6; i < argc; i++) {
            if (strcmp(argv[i], "unpack") == 0) unpack = 1;
            if (strcmp(argv[i], "nt") == 0) nt = 1;
            if (strcmp(argv[i], "read") == 0) read = 1;
            if (strcmp(argv[i], "l2") == 0) hint = 1;
            if (strcmp(argv[i], "w") == 0) hint = 2;
        }
        if (nt && (!unpack || atol(argv[3]) % 32 != 0 || atol(argv[2]) % 64 != 0)) {
            fprintf(stderr, "strided_copy: nt needs unpack, BLOCK a multiple of 32 and STRIDE of 64\n");
            return 2;
        }
        rows(atol(argv[2]), atol(argv[3]), atol(argv[4]), argc >= 6 ? atol(argv[5]) : 0, unpack, hint, nt, read);
        return 0;
    }
    fprintf(stderr, "usage: strided_copy bw | rows STRIDE BLOCK N [AHEAD [unpack] [l1|l2|w] [nt] [read]]\n");
    return 2;
}
