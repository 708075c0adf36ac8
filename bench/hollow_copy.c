/*
 * hollow_copy.c - what the hollow staging of a converted MPI_Alltoall saves (src/transfer/hollow.rs):
 * the time of a memcpy of one own slot between two ordinary buffers, against the same memcpy
 * between two buffers whose pages all map one small ring of a memfd (as sluice maps the own
 * slot of its send and receive staging). No MPI: the MPI's copy of the own slot is a memcpy.
 *
 *   cc -O2 -o hollow_copy bench/hollow_copy.c && ./hollow_copy [MiB (16)] [ring KiB (256)] [rounds (5)]
 *
 * Prints per round the milliseconds of one copy (mean of 10) for both; buffers are written
 * once before anything is timed.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* `len` bytes of address space whose pages map a fresh ring of `ring` bytes over and over. */
static char *ring_map(size_t len, size_t ring) {
    int fd = memfd_create("hollow-copy", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t)ring) != 0) return NULL;
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return NULL;
    for (size_t o = 0; o < len; o += ring) {
        size_t n = len - o < ring ? len - o : ring;
        if (mmap(p + o, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED | MAP_POPULATE, fd, 0) == MAP_FAILED) return NULL;
    }
    close(fd);
    return p;
}

int main(int argc, char **argv) {
    size_t len = (size_t)(argc > 1 ? atol(argv[1]) : 16) << 20, ring = (size_t)(argc > 2 ? atol(argv[2]) : 256) << 10;
    int rounds = argc > 3 ? atoi(argv[3]) : 5;
    if (len == 0 || ring == 0 || ring % 4096 != 0) {
        fprintf(stderr, "usage: %s [MiB] [ring KiB, a multiple of 4] [rounds]\n", argv[0]);
        return 1;
    }
    char *a = malloc(len), *b = malloc(len), *ra = ring_map(len, ring), *rb = ring_map(len, ring);
    if (!a || !b || !ra || !rb) {
        perror("allocation");
        return 1;
    }
    memset(a, 1, len), memset(b, 2, len), memset(ra, 3, len), memset(rb, 4, len);
    volatile char sink = 0;
    printf("copy of %zu MiB, ring of %zu KiB: ms per copy (mean of 10)\n", len >> 20, ring >> 10);
    for (int k = 0; k < rounds; k++) {
        double t0 = now_s();
        for (int i = 0; i < 10; i++) memcpy(b, a, len), sink += b[i];
        double t1 = now_s();
        for (int i = 0; i < 10; i++) memcpy(rb, ra, len), sink += rb[i];
        double t2 = now_s();
        printf("round %d: ordinary %.3f ms  ring %.3f ms\n", k, (t1 - t0) * 100, (t2 - t1) * 100);
    }
    return 0;
}
