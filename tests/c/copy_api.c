/* sluice_copy's C API under MPI (2 or more ranks, each on its own files): every error code for
 * bad arguments (nothing written, the event NULL), copies between host memory and files in
 * derived layouts checked byte for byte against MPI_Pack/MPI_Unpack of the same types (bytes
 * outside a file's layout kept), sluice_event_test polling, sluice_plan_explain, and a copy
 * before MPI_Init. Prints "copy_api: OK (N checks)" on rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SLUICE_P2P_CONF
#include "check.h"
#include "sluice.h"

static int temp_file(const unsigned char *image, size_t n) {
    char path[] = "/tmp/sluice-copy-api-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp failed");
    unlink(path);
    CHECK(pwrite(fd, image, n, 0) == (ssize_t)n, "pwrite of the file image failed");
    return fd;
}

static void fill(unsigned char *p, size_t n, int seed) {
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(i * 29 + seed * 7 + 1);
}

/* dst image after copying count_s of ts from src into count_d of td (reference: MPI_Pack/Unpack). */
static void reference(const void *src, int count_s, MPI_Datatype ts, void *dst, int count_d, MPI_Datatype td) {
    int size = 0, pos = 0;
    MPI_Pack_size(count_s, ts, MPI_COMM_WORLD, &size);
    char *packed = malloc(size + 1);
    MPI_Pack(src, count_s, ts, packed, size, &pos, MPI_COMM_WORLD);
    int out = 0;
    MPI_Unpack(packed, pos, &out, dst, count_d, td, MPI_COMM_WORLD);
    free(packed);
}

int main(int argc, char **argv) {
    /* Before MPI_Init: refused, nothing happens. */
    int early_buf[4] = {1, 2, 3, 4}, early_dst[4] = {0};
    sluice_event_t ev = (sluice_event_t)1;
    sluice_place_t es = {SLUICE_PLACE_HOST, early_buf, -1, 0, 16, 0}, ed = {SLUICE_PLACE_HOST, early_dst, -1, 0, 16, 0};
    int early_rc = sluice_copy(&es, &ed, 0, &ev);
    sluice_event_t early_ev = ev;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &conf_rank);
    CHECK(early_rc == SLUICE_ERR_NOT_INITIALIZED && early_ev == SLUICE_EVENT_NULL && early_dst[0] == 0,
          "copy before MPI_Init returned %d", early_rc);

    /* Layouts: contiguous ints, a strided vector (2 of every 3 ints), a resized column (every
     * 64th int), an indexed type with a negative displacement. */
    MPI_Datatype vec, col0, col, idx;
    MPI_Type_vector(100, 2, 3, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    MPI_Type_vector(50, 1, 64, MPI_INT, &col0);
    MPI_Type_create_resized(col0, 0, sizeof(int), &col);
    MPI_Type_commit(&col);
    int bl[3] = {3, 1, 4}, dp[3] = {-2, 5, 9};
    MPI_Type_indexed(3, bl, dp, MPI_INT, &idx);
    MPI_Type_commit(&idx);

    /* Pairs of (type, count) with the same bytes of data: 200 ints per element set. */
    struct { MPI_Datatype t; int count; size_t bytes; int lb; } L[] = {
        {MPI_INT, 6000, 6000 * 4, 0},
        {vec, 30, 30 * 299 * 4, 0},           /* 30 x 200 ints, extent 299 ints */
        {col, 120, 120 * 4 + 49 * 64 * 4 + 4, 0}, /* 120 columns of 50 ints */
        {idx, 750, 750 * 16 * 4 + 64, 8},     /* 8 ints per element, extent 13 ints from -2 */
    };
    int nl = sizeof L / sizeof L[0];
    for (int a = 0; a < nl; a++) {
        for (int b = 0; b < nl; b++) {
            conf_set_ctx("layouts %d -> %d", a, b);
            unsigned char *src = malloc(L[a].bytes + 64), *img = malloc(L[b].bytes + 200), *expect = malloc(L[b].bytes + 200);
            unsigned char *dst = malloc(L[b].bytes + 200);
            fill(src, L[a].bytes + 64, a + 10 * conf_rank);
            /* host -> host */
            fill(dst, L[b].bytes + 200, 3);
            memcpy(expect, dst, L[b].bytes + 200);
            reference(src + L[a].lb, L[a].count, L[a].t, expect + L[b].lb, L[b].count, L[b].t);
            sluice_place_t s = {SLUICE_PLACE_HOST, src + L[a].lb, -1, 0, L[a].count, L[a].t};
            sluice_place_t d = {SLUICE_PLACE_HOST, dst + L[b].lb, -1, 0, L[b].count, L[b].t};
            CHECK(sluice_copy(&s, &d, 0, &ev) == SLUICE_SUCCESS, "host -> host refused");
            int flag = 0;
            double t0 = MPI_Wtime();
            while (!flag && MPI_Wtime() - t0 < CONF_POLL_LIMIT) CHECK(sluice_event_test(&ev, &flag) == SLUICE_SUCCESS, "event test");
            CHECK(flag && ev == SLUICE_EVENT_NULL, "event not complete or not freed");
            CHECK(memcmp(dst, expect, L[b].bytes + 200) == 0, "host -> host data differ");
            /* file -> host */
            int fs = temp_file(src, L[a].bytes + 64);
            fill(dst, L[b].bytes + 200, 4);
            memcpy(expect, dst, L[b].bytes + 200);
            reference(src + L[a].lb, L[a].count, L[a].t, expect + L[b].lb, L[b].count, L[b].t);
            s = (sluice_place_t){SLUICE_PLACE_FILE, NULL, fs, L[a].lb, L[a].count, L[a].t};
            CHECK(sluice_copy(&s, &d, 1, &ev) == SLUICE_SUCCESS && sluice_event_wait(&ev) == SLUICE_SUCCESS, "file -> host failed");
            CHECK(memcmp(dst, expect, L[b].bytes + 200) == 0, "file -> host data differ");
            /* host -> file: bytes outside the layout stay */
            fill(img, L[b].bytes + 200, 5);
            int fd = temp_file(img, L[b].bytes + 200);
            memcpy(expect, img, L[b].bytes + 200);
            reference(src + L[a].lb, L[a].count, L[a].t, expect + L[b].lb, L[b].count, L[b].t);
            s = (sluice_place_t){SLUICE_PLACE_HOST, src + L[a].lb, -1, 0, L[a].count, L[a].t};
            d = (sluice_place_t){SLUICE_PLACE_FILE, NULL, fd, L[b].lb, L[b].count, L[b].t};
            CHECK(sluice_copy(&s, &d, 0, &ev) == SLUICE_SUCCESS && sluice_event_wait(&ev) == SLUICE_SUCCESS, "host -> file failed");
            CHECK(pread(fd, dst, L[b].bytes + 200, 0) == (ssize_t)(L[b].bytes + 200), "pread back");
            CHECK(memcmp(dst, expect, L[b].bytes + 200) == 0, "host -> file data differ");
            close(fs);
            close(fd);
            free(src);
            free(img);
            free(expect);
            free(dst);
        }
    }

    /* Errors: the code, no event, nothing written. */
    conf_set_ctx("errors");
    int a4[4] = {1, 2, 3, 4}, b4[4] = {0, 0, 0, 0};
    sluice_place_t s = {SLUICE_PLACE_HOST, a4, -1, 0, 4, MPI_INT}, d = {SLUICE_PLACE_HOST, b4, -1, 0, 4, MPI_INT};
    sluice_place_t bad;
    ev = (sluice_event_t)1;
    CHECK(sluice_copy(NULL, &d, 0, &ev) == SLUICE_ERR_ARG && ev == SLUICE_EVENT_NULL, "null source");
    CHECK(sluice_copy(&s, &d, 0, NULL) == SLUICE_ERR_ARG, "null event pointer");
    bad = s, bad.kind = 7;
    CHECK(sluice_copy(&bad, &d, 0, &ev) == SLUICE_ERR_ARG, "unknown kind");
    bad = s, bad.count = -1;
    CHECK(sluice_copy(&bad, &d, 0, &ev) == SLUICE_ERR_ARG, "negative count");
    bad = s, bad.base = NULL;
    CHECK(sluice_copy(&bad, &d, 0, &ev) == SLUICE_ERR_ARG, "null buffer");
    bad = (sluice_place_t){SLUICE_PLACE_FILE, NULL, 1000, 0, 4, MPI_INT};
    CHECK(sluice_copy(&bad, &d, 0, &ev) == SLUICE_ERR_ARG, "closed file descriptor");
    bad = s, bad.datatype = MPI_DATATYPE_NULL;
    CHECK(sluice_copy(&bad, &d, 0, &ev) == SLUICE_ERR_TYPE, "null datatype");
    bad = s, bad.count = 3;
    CHECK(sluice_copy(&bad, &d, 0, &ev) == SLUICE_ERR_SIZE && ev == SLUICE_EVENT_NULL, "size mismatch");
    CHECK(b4[0] == 0 && b4[3] == 0, "a refused copy wrote data");
    int fd = temp_file((const unsigned char *)a4, 8);
    bad = (sluice_place_t){SLUICE_PLACE_FILE, NULL, fd, 0, 4, MPI_INT}; /* the file holds 2 ints */
    CHECK(sluice_copy(&bad, &d, 0, &ev) == SLUICE_SUCCESS, "copy past the end of a file: refused at start");
    CHECK(sluice_event_wait(&ev) == SLUICE_ERR_IO && ev == SLUICE_EVENT_NULL, "copy past the end of a file did not fail");
    bad = (sluice_place_t){SLUICE_PLACE_FILE, NULL, fd, -4, 4, MPI_INT};
    CHECK(sluice_copy(&bad, &d, 0, &ev) == SLUICE_ERR_ARG, "layout before the start of the file");
    close(fd);
    sluice_event_t none = SLUICE_EVENT_NULL;
    int flag = 0;
    CHECK(sluice_event_wait(&none) == SLUICE_SUCCESS && sluice_event_test(&none, &flag) == SLUICE_SUCCESS && flag, "null events");
    CHECK(sluice_event_wait(NULL) == SLUICE_ERR_ARG, "null event pointer to wait");

    /* Explain. */
    conf_set_ctx("explain");
    char text[1024];
    sluice_place_t fsrc = {SLUICE_PLACE_FILE, NULL, 0, 0, 4, MPI_INT};
    int len = sluice_plan_explain(&fsrc, &d, text, sizeof text);
    CHECK(len > 0 && strstr(text, "DiskRead") && strstr(text, "GB/s"), "explain: %d %s", len, len > 0 ? text : "");
    char tiny[8];
    CHECK(sluice_plan_explain(&s, &d, tiny, sizeof tiny) > 7 && strlen(tiny) == 7, "explain truncates");
    CHECK(sluice_plan_explain(&s, &d, NULL, 0) > 0, "explain measures");

    MPI_Type_free(&vec);
    MPI_Type_free(&col0);
    MPI_Type_free(&col);
    MPI_Type_free(&idx);
    int rc = conf_finish("copy_api");
    MPI_Finalize();
    return rc;
}
