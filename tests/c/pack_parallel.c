/* MPI_Pack / MPI_Unpack of large counts, run by tests/mpi_c.rs with SLUICE_PARALLEL_MIN=0 and
 * SLUICE_THREADS > 1 so that sluice takes its parallel (RW-CP, worker pool) path: the packed
 * bytes and the unpacked memory must equal the MPI's own (PMPI_Pack / PMPI_Unpack), at a
 * non-zero position, followed by a small append. Per type and rank: one large pack and one
 * large unpack (the statistics row ddt-parallel counts them), the appends are small.
 *
 * With PACKPAR_THREADS=1 (and MPI_THREAD_MULTIPLE), two threads also pack and unpack large
 * buffers at the same time: one of them finds the pool busy and runs serially; both must be
 * right. */
#include <pthread.h>
#include <string.h>
#include "check.h"
#include "pack_types.h"

#define TARGET (256 << 10) /* packed bytes per large operation, about */

typedef struct {
    MPI_Datatype t;
    const char *name;
    int count, failures;
} job;

/* Bytes spanned by `count` elements and the offset of the buffer origin in that span. */
static void span(MPI_Datatype t, int count, size_t *len, size_t *origin) {
    MPI_Aint lb, ext, tlb, text;
    MPI_Type_get_extent(t, &lb, &ext);
    MPI_Type_get_true_extent(t, &tlb, &text);
    MPI_Aint reach = (MPI_Aint)(count - 1) * ext;
    MPI_Aint lo = tlb + (reach < 0 ? reach : 0), hi = tlb + text + (reach > 0 ? reach : 0);
    *len = (size_t)(hi - lo) + 64;
    *origin = (size_t)(-lo) + 32;
}

/* One large pack and unpack of j->count elements, compared with the MPI; returns failures. */
static int large(const job *j, int seed) {
    int size, fails = 0;
    MPI_Pack_size(j->count + 1, j->t, MPI_COMM_SELF, &size);
    size_t len, origin;
    span(j->t, j->count + 1, &len, &origin);
    unsigned char *src = malloc(len), *da = malloc(len), *db = malloc(len);
    unsigned char *pa = malloc(size + 16), *pb = malloc(size + 16);
    for (size_t i = 0; i < len; i++) src[i] = (unsigned char)(i * 131 + 17 + seed);
    memset(pa, 0xAA, size + 16); memset(pb, 0xAA, size + 16);
    int qa = 3, qb = 3;
    MPI_CHECK(MPI_Pack(src + origin, j->count, j->t, pa, size + 16, &qa, MPI_COMM_SELF));
    MPI_CHECK(PMPI_Pack(src + origin, j->count, j->t, pb, size + 16, &qb, MPI_COMM_SELF));
    MPI_CHECK(MPI_Pack(src + origin, 1, j->t, pa, size + 16, &qa, MPI_COMM_SELF)); /* small append */
    MPI_CHECK(PMPI_Pack(src + origin, 1, j->t, pb, size + 16, &qb, MPI_COMM_SELF));
    if (qa != qb || memcmp(pa, pb, size + 16) != 0) {
        fprintf(stderr, "%s x%d: packed bytes differ (pos %d vs %d)\n", j->name, j->count, qa, qb);
        fails++;
    }
    memset(da, 0x55, len); memset(db, 0x55, len);
    qa = qb = 3;
    MPI_CHECK(MPI_Unpack(pb, size + 16, &qa, da + origin, j->count, j->t, MPI_COMM_SELF));
    MPI_CHECK(PMPI_Unpack(pb, size + 16, &qb, db + origin, j->count, j->t, MPI_COMM_SELF));
    if (qa != qb || memcmp(da, db, len) != 0) {
        fprintf(stderr, "%s x%d: unpacked memory differs\n", j->name, j->count);
        fails++;
    }
    free(src); free(da); free(db); free(pa); free(pb);
    return fails;
}

static void *thread_main(void *arg) {
    job *j = arg;
    for (int round = 0; round < 8; round++) j->failures += large(j, round);
    return NULL;
}

int main(int argc, char **argv) {
    int provided;
    MPI_CHECK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Datatype t[NTYPES];
    const char *name[NTYPES];
    build(t, name);
    job jobs[NTYPES];
    for (int i = 0; i < NTYPES; i++) {
        int sz;
        MPI_Type_size(t[i], &sz);
        jobs[i] = (job){t[i], name[i], TARGET / sz + 1, 0};
        check_failures += large(&jobs[i], i);
    }
    const char *threads = getenv("PACKPAR_THREADS");
    if (threads && strcmp(threads, "1") == 0 && provided == MPI_THREAD_MULTIPLE) {
        pthread_t th[2];
        job tj[2] = {jobs[0], jobs[5]};
        for (int k = 0; k < 2; k++) pthread_create(&th[k], NULL, thread_main, &tj[k]);
        for (int k = 0; k < 2; k++) {
            pthread_join(th[k], NULL);
            check_failures += tj[k].failures;
        }
    }
    for (int i = 0; i < NTYPES; i++) MPI_CHECK(MPI_Type_free(&t[i]));
    int rc = report_verdict("pack_parallel");
    MPI_CHECK(MPI_Finalize());
    return rc;
}
