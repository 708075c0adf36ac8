"""What the plot_*.py scripts share: reading a benchmark's meta.txt, the A/B statistics and the
command line of the A/B summaries."""
import argparse
import math
import os
import statistics
from collections import defaultdict


def read_meta(outdir):
    """OUTDIR/meta.txt (key=value lines, written by scripts/lib.sh's bench_meta_common and the
    script) as a dict; empty when missing."""
    meta = {}
    p = os.path.join(outdir, "meta.txt")
    if os.path.exists(p):
        for line in open(p):
            k, _, v = line.rstrip("\n").partition("=")
            meta[k] = v
    return meta


def write_csv(path, header, rows):
    """`rows` (sequences) under the comma-separated `header` line."""
    with open(path, "w") as c:
        c.write(header + "\n")
        for r in rows:
            c.write(",".join(str(x) for x in r) + "\n")


def measured_line(meta, extra):
    """The first line of a summary: when, at which commit, under which load, `extra`, which CPU."""
    return (f"Measured {meta.get('date', '?')}, commit {meta.get('commit', '?')}, load {meta.get('loadavg_start', '?')} -> "
            f"{meta.get('loadavg_end', '?')}; {extra}; {meta.get('cpu', '')}.")


def median_ci(rs):
    """Median and 95% interval by order statistics, as ab_median_ci() in bench/ab_stats.h."""
    rs = sorted(rs)
    n = len(rs)
    k = max(0, int((n - 1.96 * math.sqrt(n)) / 2))
    return statistics.median(rs), rs[k], rs[n - 1 - k]


def ab_args(doc):
    """The A/B summaries' command line: OUTDIR [--min-share S]."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("--min-share", type=float, default=0.95)
    return ap.parse_args()


def ab_pairs(outdir, mpis, nkey):
    """The "ab" lines of OUTDIR/<mpi>.txt for each of `mpis` ("ab KEY... BARE SLUICE SHARE", `nkey`
    key fields; integer fields become ints) as {(mpi, *key): [(bare, sluice, share)]}."""
    pairs = defaultdict(list)
    for mpi in mpis:
        p = os.path.join(outdir, f"{mpi}.txt")
        if not os.path.exists(p):
            continue
        for line in open(p):
            f = line.split()
            if len(f) == nkey + 4 and f[0] == "ab":
                key = tuple(int(x) if x.isdigit() else x for x in f[1:nkey + 1])
                pairs[(mpi, *key)].append(tuple(float(x) for x in f[nkey + 1:]))
    return pairs
