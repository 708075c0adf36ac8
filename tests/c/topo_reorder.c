/* Topology constructors with reorder = true (docs/mapping.md, "Reordering in the topology
 * constructors"): whatever ranks the processes get, the communicator must be exactly what the
 * standard promises — the topology as given, queries that agree with it, neighbourhood
 * collectives that deliver from the right neighbours, every rank with the neighbours its vertex
 * was given, MPI_COMM_NULL for processes left out, the MPI's error for a bad call — and
 * reordering must never put more of the topology's edges between nodes than reorder = false.
 *
 * Usage: topo_reorder [improve | improve-cart | error-only]. "improve": the ring topologies must
 * cross nodes strictly less often than with reorder = false; "improve-cart": the Cartesian and
 * graph rings must, the distributed graphs must not move (SLUICE_REORDER=cart); the test passes
 * them where the launch puts ring neighbours on different nodes. "error-only": only the refused
 * call. "profile X" (with SLUICE_REORDER_MATRIX naming a profile whose heavy pairs are the
 * world ranks v and v ^ X): a periodic Cartesian ring with reorder = true must put the
 * processes of ranks v and v ^ X on one node, whatever the ring's own edges suggest. Rank 0
 * prints "cart error class N" for the bad call. */
#include "check.h"
#include <string.h>

static int wrank, wsize;

/* The node of every rank of comm: the lowest rank of comm sharing its memory. */
static void nodes_of(MPI_Comm comm, int *node) {
    MPI_Comm shm;
    int r, leader;
    MPI_CHECK(MPI_Comm_rank(comm, &r));
    MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, r, MPI_INFO_NULL, &shm));
    leader = r;
    MPI_CHECK(MPI_Bcast(&leader, 1, MPI_INT, 0, shm));
    MPI_CHECK(MPI_Comm_free(&shm));
    MPI_CHECK(MPI_Allgather(&leader, 1, MPI_INT, node, 1, MPI_INT, comm));
}

/* In- and out-neighbours of this rank in comm's topology, in the order the neighbourhood
 * collectives use; MPI_PROC_NULL for a Cartesian border. Returns the counts. */
static void neighbours(MPI_Comm comm, int *in, int *nin, int *out, int *nout) {
    int kind, r;
    MPI_CHECK(MPI_Topo_test(comm, &kind));
    MPI_CHECK(MPI_Comm_rank(comm, &r));
    if (kind == MPI_CART) {
        int nd;
        MPI_CHECK(MPI_Cartdim_get(comm, &nd));
        for (int d = 0; d < nd; d++) {
            int s, t;
            MPI_CHECK(MPI_Cart_shift(comm, d, 1, &s, &t));
            in[2 * d] = s, in[2 * d + 1] = t;
            out[2 * d] = s, out[2 * d + 1] = t;
        }
        *nin = *nout = 2 * nd;
    } else if (kind == MPI_GRAPH) {
        int n;
        MPI_CHECK(MPI_Graph_neighbors_count(comm, r, &n));
        MPI_CHECK(MPI_Graph_neighbors(comm, r, n, in));
        memcpy(out, in, n * sizeof(int));
        *nin = *nout = n;
    } else {
        int weighted;
        MPI_CHECK(MPI_Dist_graph_neighbors_count(comm, nin, nout, &weighted));
        MPI_CHECK(MPI_Dist_graph_neighbors(comm, *nin, in, MPI_UNWEIGHTED, *nout, out, MPI_UNWEIGHTED));
    }
}

/* Directed edges of comm's topology between nodes (summed over comm). */
static int cut(MPI_Comm comm) {
    int n, r, nin, nout, in[64], out[64], mine = 0, total;
    MPI_CHECK(MPI_Comm_size(comm, &n));
    MPI_CHECK(MPI_Comm_rank(comm, &r));
    int *node = malloc(n * sizeof(int));
    nodes_of(comm, node);
    neighbours(comm, in, &nin, out, &nout);
    for (int i = 0; i < nout; i++)
        if (out[i] != MPI_PROC_NULL && node[out[i]] != node[r]) mine++;
    MPI_CHECK(MPI_Allreduce(&mine, &total, 1, MPI_INT, MPI_SUM, comm));
    free(node);
    return total;
}

/* Each rank sends its rank to its out-neighbours: every in-neighbour block must hold that
 * neighbour's rank (borders untouched). */
static void exchange(MPI_Comm comm, const char *what) {
    int r, nin, nout, in[64], out[64], got[64];
    MPI_CHECK(MPI_Comm_rank(comm, &r));
    neighbours(comm, in, &nin, out, &nout);
    for (int i = 0; i < nin; i++) got[i] = -7;
    MPI_CHECK(MPI_Neighbor_allgather(&r, 1, MPI_INT, got, 1, MPI_INT, comm));
    for (int i = 0; i < nin; i++) {
        int want = in[i] == MPI_PROC_NULL ? -7 : in[i];
        EXPECT(got[i] == want, "%s: rank %d block %d got %d, want %d", what, r, i, got[i], want);
    }
}

/* reorder = false keeps every rank; reorder = true gives a permutation (checked by the
 * world ranks gathered over the new communicator). */
static void same_processes(MPI_Comm oldc, MPI_Comm c, int reorder, const char *what) {
    int r, n, oldr;
    MPI_CHECK(MPI_Comm_rank(c, &r));
    MPI_CHECK(MPI_Comm_size(c, &n));
    MPI_CHECK(MPI_Comm_rank(oldc, &oldr));
    if (!reorder) EXPECT(r == oldr, "%s: reorder = false moved rank %d to %d", what, oldr, r);
    int *olds = malloc(n * sizeof(int)), *seen = calloc(wsize, sizeof(int));
    MPI_CHECK(MPI_Allgather(&oldr, 1, MPI_INT, olds, 1, MPI_INT, c));
    for (int i = 0; i < n; i++) {
        EXPECT(olds[i] >= 0 && olds[i] < wsize && !seen[olds[i]], "%s: rank %d is old rank %d twice or out of range", what, i, olds[i]);
        if (olds[i] >= 0 && olds[i] < wsize) seen[olds[i]] = 1;
    }
    free(olds);
    free(seen);
}

static void crossings(MPI_Comm c0, MPI_Comm c1, int improve, const char *what) {
    int k0 = cut(c0), k1 = cut(c1);
    EXPECT(k1 <= k0, "%s: reorder crosses nodes %d times, reorder = false %d", what, k1, k0);
    if (improve == 1) EXPECT(k1 < k0, "%s: reorder did not reduce crossings (%d vs %d)", what, k1, k0);
    if (improve == 2) EXPECT(k1 == k0, "%s: ranks moved where they should not (%d vs %d crossings)", what, k1, k0);
    if (wrank == 0) printf("%s: crossings %d with reorder, %d without\n", what, k1, k0);
}

static void cart_case(int ndims, const int *dims, const int *periods, int improve, const char *what) {
    MPI_Comm c[2];
    for (int reorder = 0; reorder < 2; reorder++) {
        MPI_CHECK(MPI_Cart_create(MPI_COMM_WORLD, ndims, dims, periods, reorder, &c[reorder]));
        int points = 1, inside;
        for (int d = 0; d < ndims; d++) points *= dims[d];
        int mine = c[reorder] != MPI_COMM_NULL, members;
        MPI_CHECK(MPI_Allreduce(&mine, &members, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        EXPECT(members == points, "%s reorder=%d: %d members, want %d", what, reorder, members, points);
        if (!reorder) EXPECT(mine == (wrank < points), "%s: reorder = false left out rank %d", what, wrank);
        if (!mine) continue;
        MPI_Comm cc = c[reorder];
        int r, nd, gd[8], gp[8], co[8], back;
        MPI_CHECK(MPI_Comm_rank(cc, &r));
        MPI_CHECK(MPI_Cartdim_get(cc, &nd));
        EXPECT(nd == ndims, "%s: %d dims", what, nd);
        MPI_CHECK(MPI_Cart_get(cc, ndims, gd, gp, co));
        MPI_CHECK(MPI_Cart_rank(cc, co, &back));
        EXPECT(back == r, "%s: Cart_rank(coords of %d) = %d", what, r, back);
        for (int d = 0; d < ndims; d++)
            EXPECT(gd[d] == dims[d] && !gp[d] == !periods[d], "%s: dim %d is %d/%d", what, d, gd[d], gp[d]);
        MPI_CHECK(MPI_Comm_size(cc, &inside));
        EXPECT(inside == points, "%s: size %d", what, inside);
        same_processes(MPI_COMM_WORLD, cc, reorder, what);
        exchange(cc, what);
    }
    /* Compare the crossings on the members of both (the same set only when nobody is left out;
     * then it is the whole world). */
    int points = 1;
    for (int d = 0; d < ndims; d++) points *= dims[d];
    if (points == wsize) crossings(c[0], c[1], improve, what);
    for (int i = 0; i < 2; i++)
        if (c[i] != MPI_COMM_NULL) MPI_CHECK(MPI_Comm_free(&c[i]));
}

static void graph_case(int improve) {
    /* A ring over all ranks (for 2 ranks: one edge). */
    int n = wsize, *index = malloc(n * sizeof(int)), *edges = malloc(2 * n * sizeof(int)), k = 0;
    for (int v = 0; v < n; v++) {
        edges[k++] = (v + 1) % n;
        if (n > 2) edges[k++] = (v + n - 1) % n;
        index[v] = k;
    }
    MPI_Comm c[2];
    for (int reorder = 0; reorder < 2; reorder++) {
        MPI_CHECK(MPI_Graph_create(MPI_COMM_WORLD, n, index, edges, reorder, &c[reorder]));
        int nn, ne, gi[64], ge[128];
        MPI_CHECK(MPI_Graphdims_get(c[reorder], &nn, &ne));
        EXPECT(nn == n && ne == k, "graph: dims %d %d", nn, ne);
        MPI_CHECK(MPI_Graph_get(c[reorder], n, k, gi, ge));
        EXPECT(!memcmp(gi, index, n * sizeof(int)) && !memcmp(ge, edges, k * sizeof(int)), "graph: Graph_get differs");
        same_processes(MPI_COMM_WORLD, c[reorder], reorder, "graph");
        exchange(c[reorder], "graph");
    }
    crossings(c[0], c[1], improve, "graph ring");
    for (int i = 0; i < 2; i++) MPI_CHECK(MPI_Comm_free(&c[i]));
    free(index);
    free(edges);
}

/* Ring neighbours of vertex v: both ways (weighted cases), or the next one only. */
static int ring(int v, int *nb) {
    int n = wsize, k = 0;
    nb[k++] = (v + 1) % n;
    if (n > 2) nb[k++] = (v + n - 1) % n;
    return k;
}

static int sorted_equal(int *a, int *b, int n) {
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            if (a[j] < a[i]) { int t = a[i]; a[i] = a[j]; a[j] = t; }
            if (b[j] < b[i]) { int t = b[i]; b[i] = b[j]; b[j] = t; }
        }
    return !memcmp(a, b, n * sizeof(int));
}

/* The process of rank v in c plays vertex v: its neighbours are the ones vertex v was given
 * (in the given order for the adjacent constructor, as a set for the general one). */
static void vertex_neighbours(MPI_Comm c, const int *want_in, int nin_want, const int *want_out, int nout_want, int ordered, const char *what) {
    int v, nin, nout, in[64], out[64], wi[64], wo[64];
    MPI_CHECK(MPI_Comm_rank(c, &v));
    neighbours(c, in, &nin, out, &nout);
    EXPECT(nin == nin_want && nout == nout_want, "%s: vertex %d degrees %d %d, want %d %d", what, v, nin, nout, nin_want, nout_want);
    if (nin != nin_want || nout != nout_want) return;
    memcpy(wi, want_in, nin * sizeof(int));
    memcpy(wo, want_out, nout * sizeof(int));
    int same = ordered ? !memcmp(in, wi, nin * sizeof(int)) && !memcmp(out, wo, nout * sizeof(int))
                       : sorted_equal(in, wi, nin) && sorted_equal(out, wo, nout);
    EXPECT(same, "%s: vertex %d has other neighbours than it was given (first in %d, want %d)", what, v, nin ? in[0] : -1, nin ? want_in[0] : -1);
}

static void dist_graph_cases(int improve) {
    int n = wsize, r = wrank, nb[2], w[2] = {3, 3}, deg = ring(r, nb), v, vnb[2];
    MPI_Comm c[2];
    /* Adjacent, weighted: every process gives its own vertex's ring edges. */
    for (int reorder = 0; reorder < 2; reorder++) {
        MPI_CHECK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, deg, nb, w, deg, nb, w, MPI_INFO_NULL, reorder, &c[reorder]));
        same_processes(MPI_COMM_WORLD, c[reorder], reorder, "adjacent");
        MPI_CHECK(MPI_Comm_rank(c[reorder], &v));
        int k = ring(v, vnb);
        vertex_neighbours(c[reorder], vnb, k, vnb, k, 1, "adjacent");
        int weighted, ni, no, sw[2], dw[2], s[2], d[2];
        MPI_CHECK(MPI_Dist_graph_neighbors_count(c[reorder], &ni, &no, &weighted));
        EXPECT(weighted, "adjacent: weights lost");
        MPI_CHECK(MPI_Dist_graph_neighbors(c[reorder], ni, s, sw, no, d, dw));
        EXPECT(sw[0] == 3 && dw[0] == 3, "adjacent: weights %d %d", sw[0], dw[0]);
        exchange(c[reorder], "adjacent");
    }
    crossings(c[0], c[1], improve, "dist graph adjacent ring");
    for (int i = 0; i < 2; i++) MPI_CHECK(MPI_Comm_free(&c[i]));

    /* Adjacent, unweighted, directed ring: in from v-1, out to v+1; a vertex with more edges:
     * vertex 0 also sends to every other vertex. */
    for (int reorder = 0; reorder < 2; reorder++) {
        int from[64], to[64], ni = 0, no = 0;
        from[ni++] = (r + n - 1) % n;
        to[no++] = (r + 1) % n;
        if (r == 0)
            for (int u = 2; u < n && no < 64; u++) to[no++] = u;
        else if (r >= 2)
            from[ni++] = 0;
        MPI_CHECK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, ni, from, MPI_UNWEIGHTED, no, to, MPI_UNWEIGHTED, MPI_INFO_NULL, reorder, &c[reorder]));
        same_processes(MPI_COMM_WORLD, c[reorder], reorder, "adjacent directed");
        MPI_CHECK(MPI_Comm_rank(c[reorder], &v));
        ni = no = 0;
        from[ni++] = (v + n - 1) % n;
        to[no++] = (v + 1) % n;
        if (v == 0)
            for (int u = 2; u < n && no < 64; u++) to[no++] = u;
        else if (v >= 2)
            from[ni++] = 0;
        vertex_neighbours(c[reorder], from, ni, to, no, 1, "adjacent directed");
        int weighted, a, b;
        MPI_CHECK(MPI_Dist_graph_neighbors_count(c[reorder], &a, &b, &weighted));
        EXPECT(!weighted, "adjacent directed: became weighted");
        exchange(c[reorder], "adjacent directed");
    }
    crossings(c[0], c[1], 0, "dist graph adjacent directed");
    for (int i = 0; i < 2; i++) MPI_CHECK(MPI_Comm_free(&c[i]));

    /* General, every rank its own vertex's out-edges, weighted. */
    for (int reorder = 0; reorder < 2; reorder++) {
        MPI_CHECK(MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &r, &deg, nb, w, MPI_INFO_NULL, reorder, &c[reorder]));
        same_processes(MPI_COMM_WORLD, c[reorder], reorder, "general");
        MPI_CHECK(MPI_Comm_rank(c[reorder], &v));
        int k = ring(v, vnb), in[2];
        /* In-edges of v: from v-1 (its +1 edge) and v+1 (its -1 edge). */
        for (int i = 0; i < k; i++) in[i] = vnb[i];
        vertex_neighbours(c[reorder], in, k, vnb, k, 0, "general");
        exchange(c[reorder], "general");
    }
    crossings(c[0], c[1], improve, "dist graph general ring");
    for (int i = 0; i < 2; i++) MPI_CHECK(MPI_Comm_free(&c[i]));

    /* General, rank 0 gives the whole directed ring, the others nothing, unweighted. */
    int *src = malloc(n * sizeof(int)), *degs = malloc(n * sizeof(int)), *dst = malloc(n * sizeof(int));
    for (int u = 0; u < n; u++) src[u] = u, degs[u] = 1, dst[u] = (u + 1) % n;
    for (int reorder = 0; reorder < 2; reorder++) {
        MPI_CHECK(MPI_Dist_graph_create(MPI_COMM_WORLD, r == 0 ? n : 0, src, degs, dst, MPI_UNWEIGHTED, MPI_INFO_NULL, reorder, &c[reorder]));
        same_processes(MPI_COMM_WORLD, c[reorder], reorder, "general from rank 0");
        MPI_CHECK(MPI_Comm_rank(c[reorder], &v));
        int from = (v + n - 1) % n, to = (v + 1) % n;
        vertex_neighbours(c[reorder], &from, 1, &to, 1, 1, "general from rank 0");
        exchange(c[reorder], "general from rank 0");
    }
    crossings(c[0], c[1], improve, "dist graph general from rank 0");
    for (int i = 0; i < 2; i++) MPI_CHECK(MPI_Comm_free(&c[i]));
    free(src);
    free(degs);
    free(dst);
}

/* improve: 1 the ring topologies must cross nodes strictly less often; 2 they must not change
 * (distributed graphs under SLUICE_REORDER=cart); 0 no more often. */
static void topologies(int improve, int dist_improve) {
    int ring[1] = {wsize}, periodic[1] = {1};
    cart_case(1, ring, periodic, improve, "cart ring");
    int grid[2] = {0, 0}, gp[2] = {1, 0};
    MPI_CHECK(MPI_Dims_create(wsize, 2, grid));
    cart_case(2, grid, gp, 0, "cart 2-d");
    int fewer[1] = {wsize - 1}, open[1] = {0};
    cart_case(1, fewer, open, 0, "cart leaving one out");
    graph_case(improve);
    dist_graph_cases(dist_improve);
}

/* The profile outweighs the topology's edges: the ranks of every heavy pair share a node. */
static void profile_case(int x) {
    int ring[1] = {wsize}, periodic[1] = {1}, v;
    MPI_Comm c;
    MPI_CHECK(MPI_Cart_create(MPI_COMM_WORLD, 1, ring, periodic, 1, &c));
    same_processes(MPI_COMM_WORLD, c, 1, "profile");
    exchange(c, "profile");
    int *node = malloc(wsize * sizeof(int));
    nodes_of(c, node);
    MPI_CHECK(MPI_Comm_rank(c, &v));
    EXPECT(node[v] == node[v ^ x], "profile: ranks %d and %d (a heavy pair) on different nodes", v, v ^ x);
    if (wrank == 0) {
        printf("profile %d: nodes", x);
        for (int i = 0; i < wsize; i++) printf(" %d", node[i]);
        printf("\n");
    }
    free(node);
    MPI_CHECK(MPI_Comm_free(&c));
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    const char *mode = argc > 1 ? argv[1] : "";
    int improve = !strcmp(mode, "improve") || !strcmp(mode, "improve-cart");
    int dist_improve = !strcmp(mode, "improve") ? 1 : !strcmp(mode, "improve-cart") ? 2 : 0;
    /* "error-only": the bare-MPI comparison across nodes, where Open MPI's treematch component
     * aborts on reorder = true (docs/mapping.md). */
    if (!strcmp(mode, "profile") && argc > 2)
        profile_case(atoi(argv[2]));
    else if (strcmp(mode, "error-only"))
        topologies(improve, dist_improve);

    /* A grid larger than the communicator: the MPI's error, through the error handler. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int big[1] = {wsize + 1}, open[1] = {0};
    MPI_Comm bad = MPI_COMM_NULL;
    int rc = MPI_Cart_create(MPI_COMM_WORLD, 1, big, open, 1, &bad);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    EXPECT(rc != MPI_SUCCESS, "oversized grid accepted");
    if (wrank == 0) printf("cart error class %d\n", cls);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);

    int fails = report_verdict("topo_reorder");
    MPI_Finalize();
    return fails;
}
