/*
 * coll_fft.c - the transpose of a distributed 2-D FFT as one MPI_Alltoall with derived datatypes.
 *
 * An N x N matrix of complex doubles is distributed by rows: each of the P ranks owns N/P = m
 * consecutive rows, stored row-major (m x N). A row-column 2-D FFT transforms the rows, transposes
 * the matrix, and transforms the rows again; this benchmark times the transpose (no FFT is computed).
 * It uses the zero-copy transpose of Hoefler & Gottlieb ("Parallel zero-copy algorithms for fast
 * Fourier transform and conjugate gradient using MPI datatypes", EuroMPI 2010), the FFT2D case of
 * shared/papers/spin-noncontiguous-transfers.md (Section 5.4): the local transpose is encoded in
 * the datatypes of a single MPI_Alltoall, from the row-major input to the row-major output, with
 * no copy by the application:
 *
 *   send: MPI_Type_vector(m, m, N, MPI_C_DOUBLE_COMPLEX) resized to extent m * 16 bytes, count 1:
 *         block q is the m x m sub-block of the local rows in columns q*m .. q*m+m-1 (m rows of
 *         m * 16 contiguous bytes, so block q starts m * 16 bytes after block q-1)
 *   recv: MPI_Type_vector(m, 1, N, MPI_C_DOUBLE_COMPLEX) resized to extent 16 bytes, count m:
 *         one column of the output rows; consecutive elements of the sent block (one sub-block
 *         row) land in consecutive columns, i.e. transposed, and block r starts at column r*m
 *
 * The receive side scatters single 16-byte elements at a stride of N * 16 bytes (the ddt suite's
 * fft-t case); the send side moves rows of m * 16 bytes (8 KiB or more in the default cases).
 *
 * Cases (for each N of -s):
 *   fft-dt      the transpose above
 *   fft-contig  MPI_Alltoall of the same bytes with contiguous types (m*m MPI_C_DOUBLE_COMPLEX
 *               per rank, same buffers): the baseline for "contiguous collectives"
 *
 * Correctness, once per case before any timing: element (i, j) of the global input holds
 * (re = i, im = j); after fft-dt, output element (x, y) of the transposed matrix must hold
 * (re = y, im = x), every element of every rank; after fft-contig, block r of the output must be
 * the bytes rank r sent. The output is filled with a sentinel (-1) before each check.
 *
 * Usage: coll_fft -s N[,N...] [common options, see coll_common.c]; N must be a multiple of P.
 */
#include <stdio.h>
#include <stdlib.h>

#include "coll_common.h"

typedef struct {
    double re, im;
} cplx;

typedef struct {
    long n, m; /* global order, rows per rank */
    int nranks;
    cplx *in, *out; /* m x N each, row-major */
    MPI_Datatype send_block, recv_column;
} fft_ctx;

static void op_dt(void *p, long iters) {
    fft_ctx *c = p;
    for (long it = 0; it < iters; it++)
        coll_check(COLL_MPI(MPI_Alltoall)(c->in, 1, c->send_block, c->out, (int)c->m, c->recv_column, MPI_COMM_WORLD),
                   "MPI_Alltoall (datatypes)");
}

static void op_contig(void *p, long iters) {
    fft_ctx *c = p;
    int count = (int)(c->m * c->m);
    for (long it = 0; it < iters; it++)
        coll_check(COLL_MPI(MPI_Alltoall)(c->in, count, MPI_C_DOUBLE_COMPLEX, c->out, count, MPI_C_DOUBLE_COMPLEX, MPI_COMM_WORLD),
                   "MPI_Alltoall (contiguous)");
}

static void setup(fft_ctx *c, long n, int nranks) {
    MPI_Datatype v;
    c->n = n;
    c->m = n / nranks;
    c->nranks = nranks;
    if (n % nranks != 0 || c->m * c->m > 0x7fffffffL) coll_die("N must be a multiple of the rank count (and N/P)^2 an int");
    size_t elems = (size_t)c->m * (size_t)n;
    c->in = coll_alloc(elems * sizeof(cplx));
    c->out = coll_alloc(elems * sizeof(cplx));
    for (size_t k = 0; k < elems; k++) {
        c->in[k].re = (double)(g_rank * c->m + (long)(k / (size_t)n)); /* global row */
        c->in[k].im = (double)(k % (size_t)n);                        /* global column */
    }
    coll_check(MPI_Type_vector((int)c->m, (int)c->m, (int)n, MPI_C_DOUBLE_COMPLEX, &v), "MPI_Type_vector");
    coll_check(MPI_Type_create_resized(v, 0, (MPI_Aint)(c->m * (long)sizeof(cplx)), &c->send_block), "MPI_Type_create_resized");
    coll_check(MPI_Type_free(&v), "MPI_Type_free");
    coll_check(MPI_Type_commit(&c->send_block), "MPI_Type_commit");
    coll_check(MPI_Type_vector((int)c->m, 1, (int)n, MPI_C_DOUBLE_COMPLEX, &v), "MPI_Type_vector");
    coll_check(MPI_Type_create_resized(v, 0, (MPI_Aint)sizeof(cplx), &c->recv_column), "MPI_Type_create_resized");
    coll_check(MPI_Type_free(&v), "MPI_Type_free");
    coll_check(MPI_Type_commit(&c->recv_column), "MPI_Type_commit");
}

static void fill_sentinel(fft_ctx *c) {
    size_t elems = (size_t)c->m * (size_t)c->n;
    for (size_t k = 0; k < elems; k++) c->out[k].re = c->out[k].im = -1.0;
}

static void report_mismatch(const char *what, fft_ctx *c, size_t k, double re, double im) {
    char msg[256];
    snprintf(msg, sizeof msg, "%s N=%ld: output element %zu (row %zu, col %zu) is (%g, %g), expected (%g, %g)", what,
             c->n, k, k / (size_t)c->n, k % (size_t)c->n, c->out[k].re, c->out[k].im, re, im);
    coll_die(msg);
}

/* Every rank checks its whole output; rank 0 reports once all agree. */
static void verify(fft_ctx *c, int dt) {
    size_t elems = (size_t)c->m * (size_t)c->n, block = (size_t)c->m * (size_t)c->m;
    fill_sentinel(c);
    (dt ? op_dt : op_contig)(c, 1);
    for (size_t k = 0; k < elems; k++) {
        double re, im;
        if (dt) { /* output row x = g_rank*m + k/N of the transpose, column y = k%N: input (y, x) */
            re = (double)(k % (size_t)c->n);
            im = (double)(g_rank * c->m + (long)(k / (size_t)c->n));
        } else { /* block r holds rank r's input elements g_rank*block .. +block (flat, row-major) */
            size_t r = k / block, f = (size_t)g_rank * block + k % block;
            re = (double)((long)r * c->m + (long)(f / (size_t)c->n));
            im = (double)(f % (size_t)c->n);
        }
        if (c->out[k].re != re || c->out[k].im != im) report_mismatch(dt ? "fft-dt" : "fft-contig", c, k, re, im);
    }
    coll_check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    if (g_rank == 0) printf("verify %s %ld ok\n", dt ? "fft-dt" : "fft-contig", c->n);
}

int main(int argc, char **argv) {
    coll_opts o;
    int nranks;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (coll_parse(argc, argv, &o, "N[,N...]") != 0) {
        MPI_Finalize();
        return 1;
    }
    coll_print_shim();
    if (g_rank == 0) printf("ranks %d rows=N/%d\n", nranks, nranks);

    fft_ctx *ctx = calloc((size_t)o.nsizes, sizeof(fft_ctx));
    coll_case *cases = calloc(2 * (size_t)o.nsizes, sizeof(coll_case));
    int ncases = 0;
    if (!ctx || !cases) coll_die("malloc");
    for (int i = 0; i < o.nsizes; i++) {
        fft_ctx *c = &ctx[i];
        setup(c, o.sizes[i], nranks);
        double bytes = (double)c->m * (double)c->n * (double)sizeof(cplx);
        if (o.want_dt) {
            verify(c, 1);
            cases[ncases++] = (coll_case){"fft-dt", c->n, bytes, op_dt, c, 0};
        }
        if (o.want_contig) {
            verify(c, 0);
            cases[ncases++] = (coll_case){"fft-contig", c->n, bytes, op_contig, c, 0};
        }
    }
    coll_run(cases, ncases, &o);

    for (int i = 0; i < o.nsizes; i++) {
        MPI_Type_free(&ctx[i].send_block);
        MPI_Type_free(&ctx[i].recv_column);
        free(ctx[i].in);
        free(ctx[i].out);
    }
    free(ctx);
    free(cases);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
