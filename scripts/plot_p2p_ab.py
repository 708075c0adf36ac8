#!/usr/bin/python3
"""Summarise and plot scripts/bench-p2p-ab.sh results.

Reads OUTDIR/{openmpi,mpich}.txt (bench/p2p.c -A output: "ab" lines, one per pair of trials, and
"abci" lines, one per point) and OUTDIR/meta.txt; writes OUTDIR/ab.csv (every pair), abci.csv,
ab.md (table and verdict) and ab.png (needs matplotlib: Debian's /usr/bin/python3), and prints the
table.

The ratio of a pair is sluice's time over the bare MPI's: latency sluice / bare, bandwidth
bare / sluice, so > 1 means sluice was slower either way. Per point: the median of the pairs'
ratios with its distribution-free 95% confidence interval (order statistics, as bench/p2p.c
computes it to decide when to stop), and the medians of the raw values of both sides.
Verdict against issue 6's bound B for the point (`bound`): pass when the interval's upper end is
<= B, fail when its lower end is > B, inconclusive otherwise; "-" where the issue sets none.
Across the emulated cluster (AB_TARGETS=cluster), a speed-up bound (vect:8:4 bandwidth >= 1.5x)
that the link makes impossible gets the verdict "link-bound" instead of FAIL or inconclusive
(issue 23: "report what you measure where the link, not the packing, bounds both"): the link's
rate is what contiguous messages of the same size reach in the same run (the bare MPI's median;
else AB_LINK_GBS, the shaped rate in GB/s that bench-cluster.sh sets), the bare MPI already runs
at more than 1/1.5 of it, and sluice at 90% of it or more; the table gives both shares.
"""
import csv
import os
import statistics
import sys

from plot_p2p import MPIS, SMALL_MAX, human  # same directory: the separate-job benchmark's script
from plotlib import ab_args, ab_pairs, median_ci, read_meta

WELL_HANDLED = {"vect:128:64"}  # large blocks, left to the MPI's own engine


def bound(typ, nbytes, metric):
    """Issue 6's target for a point as a bound on sluice's time ratio, or None (issue 23's across
    the emulated cluster when AB_TARGETS=cluster: never slower than 0.97x the bare MPI, and
    vect:8:4 bandwidth at >= 1 MiB at least 1.5x)."""
    if os.environ.get("AB_TARGETS") == "cluster":
        if typ == "vect:8:4" and metric == "bw" and nbytes >= 1 << 20:
            return round(1 / 1.5, 4)
        return round(1 / 0.97, 4)
    if typ == "contig":
        return 1.03  # within 3% of the bare MPI at every size
    if typ in WELL_HANDLED:
        return round(1 / 0.95, 4)  # at least 0.95x the bare MPI
    if metric == "lat" and nbytes <= SMALL_MAX:
        return 1.3  # small non-contiguous latency within 1.3x
    if typ == "vect:8:4" and metric == "bw" and nbytes >= 1 << 20:
        return 0.5  # at least 2x the bare MPI's bandwidth
    return None


def link_rate(pairs, mpi, nbytes):
    """The link's rate for a bandwidth point in GB/s (see the module doc), 0 if unknown."""
    contig = pairs.get((mpi, "bw", "contig", nbytes))
    if contig:
        return statistics.median(b for b, _, _ in contig)
    return float(os.environ.get("AB_LINK_GBS") or 0)


def link_bound(metric, b, bare_gbs, sluice_gbs, link):
    """Whether bound `b` (< 1: a speed-up) on a bandwidth point is out of reach on a link of
    `link` GB/s: the bare MPI above link * b, so even sluice at the link's rate is not the
    speed-up faster; sluice must run at the link's rate for the verdict (>= 90% of it)."""
    return link > 0 and metric == "bw" and b < 1 and bare_gbs > link * b and sluice_gbs >= 0.9 * link


def load(outdir):
    # (mpi, metric, type, bytes) -> [(pmpi, mpi, share)]
    return ab_pairs(outdir, [m for m, _ in MPIS], 3)


def summarize(pairs, min_share):
    rows = []
    for (mpi, metric, typ, nbytes), ps in sorted(pairs.items(), key=lambda kv: (kv[0][0], kv[0][2], kv[0][1] != "lat", kv[0][3])):
        clean = [p for p in ps if p[2] >= min_share] or ps
        ratios = [(m / b) if metric == "lat" else (b / m) for b, m, _ in clean]
        med, lo, hi = median_ci(ratios)
        b = bound(typ, nbytes, metric)
        verdict = "-" if b is None else "pass" if hi <= b else "FAIL" if lo > b else "inconclusive"
        bare, sluice = statistics.median(b for b, _, _ in clean), statistics.median(m for _, m, _ in clean)
        link = link_rate(pairs, mpi, nbytes) if os.environ.get("AB_TARGETS") == "cluster" else 0
        if verdict != "pass" and link_bound(metric, b, bare, sluice, link):
            verdict = f"link-bound (bare {bare / link:.0%}, sluice {sluice / link:.0%} of the link's {link:.3g} GB/s)"
        rows.append(dict(mpi=mpi, metric=metric, type=typ, bytes=nbytes, pairs=len(clean), dropped=len(ps) - len(clean), bound=b,
                         bare=bare, sluice=sluice,
                         ratio=med, lo=lo, hi=hi, verdict=verdict))
    return rows


def write_csvs(outdir, pairs, rows):
    with open(os.path.join(outdir, "ab.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["mpi", "metric", "type", "bytes", "bare", "sluice", "cpu_share"])
        for (mpi, metric, typ, nbytes), ps in sorted(pairs.items()):
            for b, m, s in ps:
                w.writerow([mpi, metric, typ, nbytes, b, m, s])
    with open(os.path.join(outdir, "abci.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)


def table(rows, meta):
    name = dict(MPIS)
    out = [f"A/B in one process (bench/p2p.c -A), {meta.get('date', '?')}, commit {meta.get('commit', '?')}, "
           f"load {meta.get('loadavg_start', '?')} -> {meta.get('loadavg_end', '?')}, {meta.get('pairs', '')}.",
           "", "Ratio = sluice time / bare time (latency: sluice/bare us; bandwidth: bare/sluice GB/s): > 1 means sluice "
           "is slower. Median of the pairs' ratios [95% interval]; verdict against the issue's bound for the point.", "",
           "| MPI | type | size | metric | pairs | bare | sluice | ratio [95% CI] | bound | verdict |",
           "|---|---|---:|---|---:|---:|---:|---|---:|---|"]
    for r in rows:
        unit = "us" if r["metric"] == "lat" else "GB/s"
        out.append(f"| {name[r['mpi']]} | {r['type']} | {human(r['bytes'])} | {r['metric']} | {r['pairs']} | "
                   f"{r['bare']:.4g} {unit} | {r['sluice']:.4g} {unit} | {r['ratio']:.3f} [{r['lo']:.3f}, {r['hi']:.3f}] | "
                   f"{'' if r['bound'] is None else r['bound']} | {r['verdict']} |")
    out.append("")
    for typ in sorted({r["type"] for r in rows}):
        rs = [r for r in rows if r["type"] == typ and r["bound"] is not None]
        if not rs:
            continue
        worst = max([r for r in rs if not r["verdict"].startswith("link-bound")] or rs, key=lambda r: r["hi"] / r["bound"])
        n_pass = sum(r["verdict"] == "pass" for r in rs)
        n_link = sum(r["verdict"].startswith("link-bound") for r in rs)
        links = f" ({n_link} more link-bound)" if n_link else ""
        out.append(f"- {typ}: {n_pass} of {len(rs)} points with a bound pass{links}; closest to its bound: {name[worst['mpi']]} "
                   f"{human(worst['bytes'])} {worst['metric']} {worst['ratio']:.3f} [{worst['lo']:.3f}, {worst['hi']:.3f}] "
                   f"(bound {worst['bound']}); highest median {max(r['ratio'] for r in rs):.3f}.")
    return "\n".join(out) + "\n"


def matrix(rows):
    """One row per (type, size), one column per (MPI, metric): "ratio [lo, hi]"."""
    name = dict(MPIS)
    cols = [(m, k) for m, _ in MPIS for k in ("lat", "bw") if any(r["mpi"] == m and r["metric"] == k for r in rows)]
    cell = {(r["mpi"], r["metric"], r["type"], r["bytes"]): r for r in rows}
    out = ["| type | size | " + " | ".join(f"{name[m]} {'latency' if k == 'lat' else 'bandwidth'}" for m, k in cols) + " |",
           "|---|---:|" + "---|" * len(cols)]
    for typ, nbytes in sorted({(r["type"], r["bytes"]) for r in rows}):
        cells = []
        for m, k in cols:
            r = cell.get((m, k, typ, nbytes))
            mark = "" if r is None or r["verdict"] in ("pass", "-") else f" ({r['verdict']})"
            cells.append("" if r is None else f"{r['ratio']:.3f} [{r['lo']:.3f}, {r['hi']:.3f}]{mark}")
        out.append(f"| {typ} | {human(nbytes)} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def plot(outdir, rows):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_p2p_ab: matplotlib not available, no PNG written (use /usr/bin/python3)", file=sys.stderr)
        return
    name = dict(MPIS)
    color = {"openmpi": "#1f77b4", "mpich": "#d62728"}
    types = sorted({r["type"] for r in rows})
    fig, axes = plt.subplots(len(types), 2, figsize=(12, 4 * len(types)), squeeze=False)
    for ti, typ in enumerate(types):
        for mi, (metric, title) in enumerate([("lat", "ping-pong latency"), ("bw", "windowed bandwidth")]):
            ax = axes[ti][mi]
            for k, (mpi, _) in enumerate(MPIS):
                rs = [r for r in rows if r["mpi"] == mpi and r["type"] == typ and r["metric"] == metric]
                if not rs:
                    continue
                x = [r["bytes"] * (1.08 if k else 1 / 1.08) for r in rs]
                y = [r["ratio"] for r in rs]
                err = [[r["ratio"] - r["lo"] for r in rs], [r["hi"] - r["ratio"] for r in rs]]
                ax.errorbar(x, y, yerr=err, fmt="o", ms=4, capsize=2, color=color[mpi], label=name[mpi])
            ax.axhline(1.0, color="gray", lw=0.8)
            for b in sorted({r["bound"] for r in rows if r["type"] == typ and r["metric"] == metric and r["bound"]}):
                ax.axhline(b, color="black", ls="--", lw=0.8, label=f"bound {b}")
            ax.set_xscale("log", base=2)
            ax.set_xlabel("message size (bytes)")
            ax.set_ylabel("sluice time / bare time")
            ax.set_title(f"{typ}: {title}, median ratio and 95% interval")
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, "ab.png"), dpi=110)


def main():
    a = ab_args(__doc__)
    pairs = load(a.outdir)
    if not pairs:
        sys.exit("plot_p2p_ab: no 'ab' lines in OUTDIR/{openmpi,mpich}.txt")
    meta = read_meta(a.outdir)
    rows = summarize(pairs, a.min_share)
    write_csvs(a.outdir, pairs, rows)
    md = table(rows, meta) + "\nBy size (ratio [95% interval]):\n\n" + matrix(rows)
    open(os.path.join(a.outdir, "ab.md"), "w").write(md)
    print(md)
    plot(a.outdir, rows)


if __name__ == "__main__":
    main()
