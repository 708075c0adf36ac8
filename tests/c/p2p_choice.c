/* Point-to-point messages while sluice learns which engine packs and unpacks each type
 * (SLUICE_PACK_ENGINE): a program that never calls MPI_Pack teaches the choice with its sends
 * (packed inside the call) and blocking receives (unpacked inside the call), and a type whose
 * direction chose the MPI's engine then travels the MPI's own way on that side. Even ranks send
 * to the next odd rank, blocking and nonblocking in turn; every receive is checked byte for
 * byte, over the whole buffer, against what the MPI's own engine makes of the same elements
 * (PMPI_Pack of the sender's data, PMPI_Unpack into an equally prepared buffer), and its status
 * against the count sent. */
#include <string.h>
#include "check.h"
#include "pack_types.h"

#define BUF (8 << 20)
#define MID (4 << 20) /* where elements start: types with negative strides reach below */
#define ROUNDS 12 /* 6 blocking receives of a type at each count: enough to decide */
static int rank, size;
static unsigned char *src, *dst, *ref, *pk;

/* src[i] = i * 131 + 17 + round * 7 (mod 256): the pattern repeats every 256 bytes, so the first
 * 256 are computed and then doubled by copies (a byte loop over 8 MiB per round was most of this
 * program's time). */
static void fill(int round) {
    for (int i = 0; i < 256; i++) src[i] = (unsigned char)(i * 131 + 17 + round * 7);
    for (size_t n = 256; n < BUF; n *= 2) memcpy(src + n, src, n);
}

static int fits(MPI_Datatype t, int count) {
    MPI_Aint lb, extent, tlb, text;
    int sz;
    MPI_Type_get_extent(t, &lb, &extent);
    MPI_Type_get_true_extent(t, &tlb, &text);
    MPI_Type_size(t, &sz);
    return (MPI_Aint)sz * count <= BUF && MID + tlb + (count - 1) * extent + text <= BUF && MID + tlb >= 0;
}

static void exchange(MPI_Datatype t, const char *name, int count, int peer) {
    int sender = rank % 2 == 0;
    for (int round = 0; round < ROUNDS; round++) {
        fill(round);
        int tag = round;
        if (sender) {
            if (round % 2 == 0) {
                MPI_CHECK(MPI_Send(src + MID, count, t, peer, tag, MPI_COMM_WORLD));
            } else {
                MPI_Request r;
                MPI_CHECK(MPI_Isend(src + MID, count, t, peer, tag, MPI_COMM_WORLD, &r));
                MPI_CHECK(MPI_Wait(&r, MPI_STATUS_IGNORE));
            }
            continue;
        }
        memset(dst, 0x55, BUF);
        memset(ref, 0x55, BUF);
        MPI_Status st;
        if (round % 2 == 0) {
            MPI_CHECK(MPI_Recv(dst + MID, count, t, peer, tag, MPI_COMM_WORLD, &st));
        } else {
            MPI_Request r;
            MPI_CHECK(MPI_Irecv(dst + MID, count, t, peer, tag, MPI_COMM_WORLD, &r));
            MPI_CHECK(MPI_Wait(&r, &st));
        }
        int got = -1, pos = 0, upos = 0;
        MPI_Get_count(&st, t, &got);
        EXPECT(got == count && st.MPI_SOURCE == peer && st.MPI_TAG == tag, "%s x%d round %d: status count %d source %d tag %d",
               name, count, round, got, st.MPI_SOURCE, st.MPI_TAG);
        MPI_CHECK(PMPI_Pack(src + MID, count, t, pk, BUF, &pos, MPI_COMM_SELF));
        MPI_CHECK(PMPI_Unpack(pk, pos, &upos, ref + MID, count, t, MPI_COMM_SELF));
        EXPECT(memcmp(dst, ref, BUF) == 0, "%s x%d round %d: received memory differs from the MPI's unpack", name, count, round);
    }
}

int main(int argc, char **argv) {
    MPI_CHECK(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    src = malloc(BUF); dst = malloc(BUF); ref = malloc(BUF); pk = malloc(BUF);
    MPI_Datatype t[NTYPES + NLARGE];
    const char *name[NTYPES + NLARGE];
    build(t, name);
    build_large(t + NTYPES, name + NTYPES);
    int peer = rank % 2 == 0 ? rank + 1 : rank - 1;
    for (int i = 0; i < NTYPES + NLARGE && peer < size; i++) {
        int sz;
        MPI_Type_size(t[i], &sz);
        int counts[3] = {20000 / (sz ? sz : 1) + 40, 1, 2}; /* many elements (learned by piece), and whole calls */
        for (int c = 0; c < 3; c++)
            if (fits(t[i], counts[c])) exchange(t[i], name[i], counts[c], peer);
    }
    for (int i = 0; i < NTYPES + NLARGE; i++) MPI_CHECK(MPI_Type_free(&t[i]));
    free(src); free(dst); free(ref); free(pk);
    int rc = report_verdict("p2p_choice");
    MPI_CHECK(MPI_Finalize());
    return rc;
}
