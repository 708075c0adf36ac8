/*
 * ab_stats.h - the statistics of the paired A/B benchmarks (bench/p2p.c -A, bench/coll_*.c -A):
 * the median of a sample of pair ratios and its distribution-free 95% confidence interval.
 * Header-only (static functions): each benchmark is one program built from its own sources.
 */
#ifndef AB_STATS_H
#define AB_STATS_H

#include <math.h>
#include <stdlib.h>

static int ab_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of r[0..n) and its 95% confidence interval by order statistics of the sorted sample:
 * the k-th smallest and largest with k = (n - 1.96 sqrt(n)) / 2, which needs no assumption about
 * the distribution (timings on a shared machine are skewed and often bimodal); sorts r. */
static double ab_median_ci(double *r, int n, double *lo, double *hi) {
    qsort(r, (size_t)n, sizeof *r, ab_cmp_double);
    int k = (int)((n - 1.96 * sqrt((double)n)) / 2);
    if (k < 0) k = 0;
    *lo = r[k];
    *hi = r[n - 1 - k];
    return n % 2 ? r[n / 2] : 0.5 * (r[n / 2 - 1] + r[n / 2]);
}

#endif
