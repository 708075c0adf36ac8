#!/usr/bin/python3
"""Summarise and plot scripts/bench-coll-ab.sh results.

Reads OUTDIR/{openmpi,mpich}.txt (bench/coll_*.c -A output: "ab <case> <size> <bare_s> <sluice_s>
<cpu>" per pair of trials) and OUTDIR/meta.txt; writes OUTDIR/ab.csv (every pair), abci.csv,
ab.md (table and verdict) and ab.png (needs matplotlib: Debian's /usr/bin/python3), and prints the
table.

Speed-up of a pair = bare time / sluice time (> 1: sluice faster). Per (MPI, case, size): the
median of the clean pairs' speed-ups with its distribution-free 95% confidence interval (order
statistics, as bench/ab_stats.h computes it to decide when to stop), and the medians of both
sides' milliseconds. Verdict against issue 5's bound for the case (plot_coll.py: datatype cases
>= 1.5x bare Open MPI and >= 1x bare MPICH, contiguous cases >= 0.97x): pass when the interval's
lower end is >= the bound, FAIL when its upper end is below it, inconclusive otherwise.
"""
import csv
import os
import statistics
import sys

from plot_coll import CONTIG_BOUND, DT_TARGET, MPIS, NAME  # same directory
from plotlib import ab_args, ab_pairs, median_ci, read_meta

CASES = ["fft-dt", "fft-contig", "halo-dt", "halo-contig"]


def bound(mpi, case):
    if os.environ.get("AB_TARGETS") == "cluster":
        return 0.97  # issue 23: across nodes, no case slower than the bare MPI
    return CONTIG_BOUND if case.endswith("-contig") else DT_TARGET[mpi]


def load(outdir):
    # (mpi, case, size) -> [(bare_s, sluice_s, share)]
    return ab_pairs(outdir, [m for m, _ in MPIS], 2), read_meta(outdir)


def summarize(pairs, min_share):
    rows = []
    order = [m for m, _ in MPIS]
    for (mpi, case, size), ps in sorted(pairs.items(), key=lambda kv: (order.index(kv[0][0]), CASES.index(kv[0][1]), kv[0][2])):
        clean = [p for p in ps if p[2] >= min_share] or ps
        med, lo, hi = median_ci([b / s for b, s, _ in clean])
        bd = bound(mpi, case)
        verdict = "pass" if lo >= bd else "FAIL" if hi < bd else "inconclusive"
        rows.append(dict(mpi=mpi, case=case, size=size, pairs=len(clean), dropped=len(ps) - len(clean),
                         bare_ms=1e3 * statistics.median(b for b, _, _ in clean), sluice_ms=1e3 * statistics.median(s for _, s, _ in clean),
                         speedup=med, lo=lo, hi=hi, bound=bd, verdict=verdict))
    return rows


def write_csvs(outdir, pairs, rows):
    with open(os.path.join(outdir, "ab.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["mpi", "case", "size", "bare_s", "sluice_s", "cpu_share"])
        for (mpi, case, size), ps in sorted(pairs.items()):
            for b, s, sh in ps:
                w.writerow([mpi, case, size, b, s, sh])
    with open(os.path.join(outdir, "abci.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)


def table(rows, meta):
    out = [f"A/B in one process (bench/coll_*.c -A, 2 ranks), {meta.get('date', '?')}, commit {meta.get('commit', '?')}, "
           f"load {meta.get('loadavg_start', '?')} -> {meta.get('loadavg_end', '?')}, {meta.get('pairs', '')}.", "",
           "Speed-up = bare time / sluice time (> 1: sluice faster), median of the pairs [95% interval]; "
           "verdict against issue 5's bound for the case.", "",
           "| MPI | case | size | pairs | bare ms | sluice ms | speed-up [95% CI] | bound | verdict |",
           "|---|---|---:|---:|---:|---:|---|---:|---|"]
    for r in rows:
        size = f"N = {r['size']}" if r["case"].startswith("fft") else f"n = {r['size']}"
        out.append(f"| {NAME[r['mpi']]} | {r['case']} | {size} | {r['pairs']} | {r['bare_ms']:.4g} | {r['sluice_ms']:.4g} | "
                   f"{r['speedup']:.3f} [{r['lo']:.3f}, {r['hi']:.3f}] | {r['bound']:g} | {r['verdict']} |")
    out.append("")
    n_pass = sum(r["verdict"] == "pass" for r in rows)
    worst = min(rows, key=lambda r: r["lo"] / r["bound"])
    out.append(f"- {n_pass} of {len(rows)} cases pass; closest to its bound: {NAME[worst['mpi']]} {worst['case']} {worst['size']} "
               f"{worst['speedup']:.3f} [{worst['lo']:.3f}, {worst['hi']:.3f}] (bound {worst['bound']:g}).")
    return "\n".join(out) + "\n"


def plot(outdir, rows, meta):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_coll_ab: matplotlib not available, no PNG written (use /usr/bin/python3)", file=sys.stderr)
        return
    mpis = [m for m, _ in MPIS if any(r["mpi"] == m for r in rows)]
    fig, axes = plt.subplots(1, len(mpis), figsize=(8 * len(mpis), 4.5), squeeze=False)
    for ax, mpi in zip(axes[0], mpis):
        rs = [r for r in rows if r["mpi"] == mpi]
        xs = range(len(rs))
        color = ["#2ca02c" if r["verdict"] == "pass" else "#d62728" if r["verdict"] == "FAIL" else "#ff7f0e" for r in rs]
        ax.bar(xs, [r["speedup"] for r in rs], color=color,
               yerr=[[r["speedup"] - r["lo"] for r in rs], [r["hi"] - r["speedup"] for r in rs]], capsize=3)
        for i, r in enumerate(rs):
            ax.hlines(r["bound"], i - 0.4, i + 0.4, colors="k", linestyles="--", linewidth=1)
        ax.axhline(1.0, color="grey", linewidth=0.8)
        ax.set_xticks(list(xs))
        ax.set_xticklabels([f"{r['case']}\n{r['size']}" for r in rs], fontsize=7)
        ax.set_ylabel("speed-up = bare time / sluice time")
        ax.set_title(f"{NAME[mpi]}: median of pairs, 95% CI; dashed: issue 5's bound")
    fig.suptitle(f"Collectives A/B in one process (2 ranks), commit {meta.get('commit', '?')}, {meta.get('date', '?')}; "
                 "green pass, orange inconclusive, red fail", fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, "ab.png"), dpi=110)


def main():
    a = ab_args(__doc__)
    pairs, meta = load(a.outdir)
    if not pairs:
        sys.exit(f"plot_coll_ab: no 'ab' lines in {a.outdir}")
    rows = summarize(pairs, a.min_share)
    write_csvs(a.outdir, pairs, rows)
    text = table(rows, meta)
    with open(os.path.join(a.outdir, "ab.md"), "w") as f:
        f.write(text)
    print(text, end="")
    plot(a.outdir, rows, meta)


if __name__ == "__main__":
    main()
