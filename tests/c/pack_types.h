/* The derived datatypes the pack tests run over (tests/c/pack.c, tests/c/pack_parallel.c):
 * vectors with positive and negative strides, indexed and struct families (hindexed_block too),
 * subarrays in both orders, a darray, an FFT column (interleaved elements), pair types, an F90
 * parameterized real, nesting and a plain contiguous run; and a few of large elements. */
#ifndef SLUICE_TEST_PACK_TYPES_H
#define SLUICE_TEST_PACK_TYPES_H
#include "check.h"

#define NTYPES 15

/* Builds and commits the NTYPES types into t, with their names. */
static void build(MPI_Datatype *t, const char **name) {
    int n = 0;
    MPI_Datatype tmp, tmp2;
    name[n] = "vector"; MPI_Type_vector(100, 3, 7, MPI_DOUBLE, &t[n++]);
    name[n] = "hvector-neg"; MPI_Type_create_hvector(50, 2, -40, MPI_INT, &t[n++]);
    { int bl[4] = {1, 3, 2, 5}, d[4] = {0, 4, 20, 11}; name[n] = "indexed"; MPI_Type_indexed(4, bl, d, MPI_FLOAT, &t[n++]); }
    { MPI_Aint d[3] = {-64, 0, 200}; int bl[3] = {2, 1, 4}; name[n] = "hindexed-neg"; MPI_Type_create_hindexed(3, bl, d, MPI_SHORT, &t[n++]); }
    { int d[5] = {9, 1, 4, 16, 25}; name[n] = "indexed_block"; MPI_Type_create_indexed_block(5, 2, d, MPI_DOUBLE, &t[n++]); }
    { int bl[3] = {1, 1, 5}; MPI_Aint d[3] = {0, 8, 16}; MPI_Datatype ty[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
      MPI_Type_create_struct(3, bl, d, ty, &tmp); name[n] = "struct-resized"; MPI_Type_create_resized(tmp, 0, 24, &t[n++]); MPI_Type_free(&tmp); }
    { int sz[3] = {16, 12, 10}, sub[3] = {4, 3, 5}, st[3] = {2, 7, 1}; name[n] = "subarray-C";
      MPI_Type_create_subarray(3, sz, sub, st, MPI_ORDER_C, MPI_DOUBLE, &t[n++]); }
    { int sz[2] = {20, 30}, sub[2] = {5, 9}, st[2] = {3, 10}; name[n] = "subarray-F";
      MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_FORTRAN, MPI_INT, &t[n++]); }
    MPI_Type_vector(64, 1, 64, MPI_C_DOUBLE_COMPLEX, &tmp);
    name[n] = "fft-column"; MPI_Type_create_resized(tmp, 0, 16, &t[n++]); MPI_Type_free(&tmp);
    MPI_Type_contiguous(3, MPI_DOUBLE_INT, &tmp);
    name[n] = "pair-contig"; MPI_Type_vector(5, 1, 2, tmp, &t[n++]); MPI_Type_free(&tmp);
    MPI_Type_vector(4, 2, 3, MPI_LONG, &tmp); MPI_Type_create_hvector(3, 2, 512, tmp, &tmp2);
    name[n] = "nested"; MPI_Type_contiguous(2, tmp2, &t[n++]); MPI_Type_free(&tmp); MPI_Type_free(&tmp2);
    name[n] = "contig"; MPI_Type_contiguous(77, MPI_CHAR, &t[n++]);
    { MPI_Aint d[4] = {0, 40, 96, 200}; name[n] = "hindexed_block"; MPI_Type_create_hindexed_block(4, 3, d, MPI_INT, &t[n++]); }
    { int gs[2] = {16, 12}, di[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC}, da[2] = {MPI_DISTRIBUTE_DFLT_DARG, 2}, ps[2] = {2, 2};
      name[n] = "darray"; MPI_Type_create_darray(4, 1, 2, gs, di, da, ps, MPI_ORDER_C, MPI_DOUBLE, &t[n++]); }
    MPI_Type_create_f90_real(15, MPI_UNDEFINED, &tmp); /* a predefined handle: not freed */
    name[n] = "f90-real-vector"; MPI_Type_vector(10, 2, 3, tmp, &t[n++]);
    for (int i = 0; i < n; i++) MPI_CHECK(MPI_Type_commit(&t[i]));
}

#define NLARGE 11

/* Builds and commits NLARGE types of large elements (one or two of them make a call that the
 * engine choice learns from whole, or from a prefix of the first element where it is at least
 * 256 KiB: the last seven; the last two only have prefixes inside their first top-level block)
 * into t, with their names. */
static void build_large(MPI_Datatype *t, const char **name) {
    int n = 0;
    name[n] = "vector-large"; MPI_Type_vector(4096, 3, 7, MPI_DOUBLE, &t[n++]);
    { int sz[3] = {128, 128, 8}, sub[3] = {128, 128, 1}, st[3] = {0, 0, 3}; name[n] = "face";
      MPI_Type_create_subarray(3, sz, sub, st, MPI_ORDER_C, MPI_DOUBLE, &t[n++]); }
    { MPI_Datatype v, ty[2]; int bl[2] = {1, 1}; MPI_Aint d[2] = {0, 300000};
      MPI_Type_vector(1000, 5, 9, MPI_FLOAT, &v); ty[0] = v; ty[1] = MPI_INT;
      name[n] = "struct-large"; MPI_Type_create_struct(2, bl, d, ty, &t[n++]); MPI_Type_free(&v); }
    { MPI_Datatype b; MPI_Type_contiguous(24, MPI_CHAR, &b);
      name[n] = "hvector-192"; MPI_Type_create_hvector(400, 8, 24 * 32, b, &t[n++]); MPI_Type_free(&b); }
    name[n] = "vector-huge"; MPI_Type_vector(32768, 3, 7, MPI_DOUBLE, &t[n++]);
    { int sz[3] = {256, 256, 4}, sub[3] = {256, 256, 1}, st[3] = {0, 0, 2}; name[n] = "face-C-large";
      MPI_Type_create_subarray(3, sz, sub, st, MPI_ORDER_C, MPI_DOUBLE, &t[n++]); }
    { int sz[3] = {4, 256, 256}, sub[3] = {1, 256, 256}, st[3] = {1, 0, 0}; name[n] = "face-F-large";
      MPI_Type_create_subarray(3, sz, sub, st, MPI_ORDER_FORTRAN, MPI_DOUBLE, &t[n++]); }
    { int bl[64]; MPI_Aint d[64];
      for (int i = 0; i < 64; i++) { bl[i] = 1024 + 16 * i; d[i] = (MPI_Aint)i * 40000; }
      name[n] = "hindexed-large"; MPI_Type_create_hindexed(64, bl, d, MPI_FLOAT, &t[n++]); }
    { MPI_Datatype f, g, ty[20]; int bl[20]; MPI_Aint d[20];
      MPI_Type_contiguous(4096, MPI_FLOAT, &f); MPI_Type_contiguous(2048, MPI_DOUBLE, &g);
      for (int i = 0; i < 20; i++) { ty[i] = i % 2 ? g : f; bl[i] = 1; d[i] = (MPI_Aint)i * 20000; }
      name[n] = "struct-huge"; MPI_Type_create_struct(20, bl, d, ty, &t[n++]); MPI_Type_free(&f); MPI_Type_free(&g); }
    { int sz[3] = {256, 256, 2}, sub[3] = {256, 256, 1}, st[3] = {0, 0, 1}; MPI_Datatype face, v, ty[2];
      MPI_Aint d[2] = {8192, 1048576 + 16384}; int bl[2] = {1, 1};
      MPI_Type_create_subarray(3, sz, sub, st, MPI_ORDER_C, MPI_DOUBLE, &face);
      name[n] = "hindexed-of-faces"; MPI_Type_create_hindexed_block(2, 1, d, face, &t[n++]);
      MPI_Type_vector(16384, 3, 7, MPI_DOUBLE, &v); ty[0] = face; ty[1] = v; d[0] = 0; d[1] = 2 << 20;
      MPI_Datatype s; MPI_Type_create_struct(2, bl, d, ty, &s);
      name[n] = "contig-of-struct"; MPI_Type_contiguous(1, s, &t[n++]);
      MPI_Type_free(&face); MPI_Type_free(&v); MPI_Type_free(&s); }
    for (int i = 0; i < n; i++) MPI_CHECK(MPI_Type_commit(&t[i]));
}

#endif
