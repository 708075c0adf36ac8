#!/usr/bin/python3
"""Summarise and plot scripts/bench-p2p.sh results.

Reads OUTDIR/{openmpi,mpich}.csv (mpi,config,rep,type,bytes,metric,trial,value; metric lat = half
round trip in us, bw = GB/s of packed bytes), OUTDIR/points.csv and OUTDIR/meta.txt; prints the
summary and the verdict on the issue's targets, writes OUTDIR/summary.csv, OUTDIR/verdict.csv,
OUTDIR/p2p.md and OUTDIR/p2p.png (needs matplotlib; run it with Debian's /usr/bin/python3). Only
the standard library is needed for the tables.

Statistics per (MPI, type, size, metric, bare|sluice): median and best (min latency, max
bandwidth) over all trials of all reps. Ratios are sluice/bare: latency ratio > 1 and bandwidth
ratio < 1 mean sluice is slower. Noise: each rep runs a bare and a sluice job back to back, so a
rep gives one paired ratio (of the two jobs' medians); the spread of the paired ratios over the
reps is the noise band of that ratio.
"""
import argparse
import csv
import math
import os
import statistics
import sys
from collections import defaultdict

from plotlib import read_meta  # same directory

MPIS = [("openmpi", "Open MPI"), ("mpich", "MPICH")]
SUITE = ["face-x", "lammps", "struct-mix"]
SMALL_MAX = 1024  # "small non-contiguous" = packed size <= 1 KiB (one eager packet on both MPIs)
KEY_SIZES = [1, 128, 4096, 65536, 1 << 20, 16 << 20]


def human(n):
    n = int(n)
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{n >> 20} MiB"
    if n >= 1 << 10 and n % (1 << 10) == 0:
        return f"{n >> 10} KiB"
    return f"{n} B"


def load(outdir):
    raw = defaultdict(list)  # (mpi, cfg, type, bytes, metric) -> [values]
    per_rep = defaultdict(list)  # (mpi, cfg, type, bytes, metric, rep) -> [values]
    types, mpis = [], []
    for mpi, _ in MPIS:
        p = os.path.join(outdir, f"{mpi}.csv")
        if not os.path.exists(p):
            continue
        with open(p, newline="") as f:
            for r in csv.DictReader(f):
                k = (r["mpi"], r["config"], r["type"], int(r["bytes"]), r["metric"])
                v = (float(r["value"]), float(r.get("cpu_share") or 1.0))
                raw[k].append(v)
                per_rep[k + (int(r["rep"]),)].append(v)
                if r["type"] not in types:
                    types.append(r["type"])
                if r["mpi"] not in mpis:
                    mpis.append(r["mpi"])
    return raw, per_rep, types, mpis, read_meta(outdir)


def clean(samples, min_share):
    """Values of the trials during which both ranks had their CPU; all values if there is none."""
    c = [v for v, sh in samples if sh >= min_share]
    return c if c else [v for v, _ in samples]


def summarise(raw, per_rep, types, mpis, min_share):
    rows = []
    for mpi in mpis:
        for t in types:
            sizes = sorted({k[3] for k in raw if k[0] == mpi and k[2] == t})
            for b in sizes:
                row = dict(mpi=mpi, type=t, bytes=b)
                for metric, hib in (("lat", False), ("bw", True)):
                    sb, ss = raw.get((mpi, "bare", t, b, metric)), raw.get((mpi, "sluice", t, b, metric))
                    if not sb or not ss:
                        raise SystemExit(f"plot_p2p: missing data for {mpi}/{t}/{b}/{metric}")
                    nclean = sum(sh >= min_share for _, sh in sb + ss)
                    vb, vs = clean(sb, min_share), clean(ss, min_share)
                    best = max if hib else min
                    mb, ms = statistics.median(vb), statistics.median(vs)
                    bb, bs = best(vb), best(vs)
                    reps = sorted({k[5] for k in per_rep if k[:5] == (mpi, "bare", t, b, metric)})
                    paired = []
                    for r in reps:
                        pb = per_rep.get((mpi, "bare", t, b, metric, r))
                        ps = per_rep.get((mpi, "sluice", t, b, metric, r))
                        if pb and ps:
                            paired.append(statistics.median(clean(ps, min_share)) /
                                          statistics.median(clean(pb, min_share)))
                    row.update({
                        f"{metric}_n": min(len(vb), len(vs)),
                        f"{metric}_clean_pct": 100.0 * nclean / (len(sb) + len(ss)),
                        f"{metric}_bare_median": mb, f"{metric}_bare_best": bb,
                        f"{metric}_sluice_median": ms, f"{metric}_sluice_best": bs,
                        f"{metric}_ratio_median": ms / mb, f"{metric}_ratio_best": bs / bb,
                        f"{metric}_paired_median": statistics.median(paired),
                        f"{metric}_paired_lo": min(paired), f"{metric}_paired_hi": max(paired),
                    })
                rows.append(row)
    return rows


def verdicts(rows, mpis):
    """One row per (target, MPI): status, the worst point and its noise band."""
    name = dict(MPIS)
    by = {(r["mpi"], r["type"], r["bytes"]): r for r in rows}
    out = []

    def add(target, mpi, pts, metric, ok, worst_key, bound):
        # pts: rows to check; ok(ratio) -> bool; worst_key: sort key giving the worst first
        if not pts:
            out.append(dict(target=target, mpi=name[mpi], status="no data", worst="", ratio="", band="", failing=""))
            return
        fails = [r for r in pts if not ok(r[f"{metric}_ratio_median"])]
        w = sorted(pts, key=lambda r: worst_key(r[f"{metric}_ratio_median"]))[0]
        lo, hi = w[f"{metric}_paired_lo"], w[f"{metric}_paired_hi"]
        crosses = lo <= bound <= hi
        status = ("pass" if not fails else "FAIL") + (" (within noise)" if crosses else "")
        out.append(dict(
            target=target, mpi=name[mpi], status=status,
            worst=f"{w['type']} {human(w['bytes'])}", ratio=f"{w[f'{metric}_ratio_median']:.3f}",
            band=f"{lo:.3f}-{hi:.3f}",
            failing=f"{len(fails)}/{len(pts)}"))

    for mpi in mpis:
        contig = [r for r in rows if r["mpi"] == mpi and r["type"] == "contig"]
        add("contig latency within 3% of bare (ratio <= 1.03), every size (separate jobs; paired: bench-p2p-ab.sh)", mpi, contig, "lat",
            lambda x: x <= 1.03, lambda x: -x, 1.03)
        add("contig bandwidth within 3% of bare (ratio >= 0.97), every size (separate jobs; paired: bench-p2p-ab.sh)", mpi, contig, "bw",
            lambda x: x >= 0.97, lambda x: x, 0.97)
        small = [r for r in rows if r["mpi"] == mpi and r["type"].startswith("vect:") and r["bytes"] <= SMALL_MAX]
        add(f"small non-contig (vect:*, <= {human(SMALL_MAX)}) latency <= 1.3x bare", mpi, small, "lat",
            lambda x: x <= 1.3, lambda x: -x, 1.3)
        v128 = [r for r in small if r["bytes"] == 128]
        add("128 B non-contig (vect:*) latency <= 1.3x bare", mpi, v128, "lat", lambda x: x <= 1.3, lambda x: -x, 1.3)
        big84 = [r for r in rows if r["mpi"] == mpi and r["type"] == "vect:8:4" and r["bytes"] >= 1 << 20]
        add("vect:8:4 >= 1 MiB bandwidth >= 2x bare", mpi, big84, "bw", lambda x: x >= 2.0, lambda x: x, 2.0)
        # ideal: sluice's vect:8:4 bandwidth >= 50% of sluice's contiguous bandwidth at the same size
        frac = []
        for r in big84:
            c = by.get((mpi, "contig", r["bytes"]))
            if c:
                frac.append((r["bw_sluice_median"] / c["bw_sluice_median"], r))
        if frac:
            f, r = min(frac, key=lambda x: x[0])
            fails = sum(x < 0.5 for x, _ in frac)
            out.append(dict(target="(ideal) vect:8:4 >= 1 MiB bandwidth >= 50% of contig (sluice)", mpi=name[mpi],
                            status="pass" if fails == 0 else "FAIL", worst=f"vect:8:4 {human(r['bytes'])}",
                            ratio=f"{f:.3f}", band="", failing=f"{fails}/{len(frac)}"))
        v12864 = [r for r in rows if r["mpi"] == mpi and r["type"] == "vect:128:64"]
        add("vect:128:64 bandwidth >= 0.95x bare, every size", mpi, v12864, "bw", lambda x: x >= 0.95, lambda x: x, 0.95)
        add("vect:128:64 latency <= 1/0.95x bare, every size", mpi, v12864, "lat",
            lambda x: x <= 1 / 0.95, lambda x: -x, 1 / 0.95)
    return out


def noise_report(rows, mpis):
    """How far from 1.0 the ratios of identical code paths are (for a pass-through shim)."""
    lines = []
    name = dict(MPIS)
    for mpi in mpis:
        sel = [r for r in rows if r["mpi"] == mpi]
        allc = [r[f"{m}_clean_pct"] for r in sel for m in ("lat", "bw")]
        dirty = [f"{r['type']} {human(r['bytes'])} {m}" for r in sel for m in ("lat", "bw") if r[f"{m}_clean_pct"] == 0]
        lines.append(f"{name[mpi]:8} clean trials (both ranks' CPU share >= min share): {statistics.mean(allc):.0f}% "
                     f"on average, lowest point {min(allc):.0f}%"
                     + (f"; no clean trial (all trials used): {', '.join(dirty)}" if dirty else ""))
    for mpi in mpis:
        for t in ("contig", None):
            sel = [r for r in rows if r["mpi"] == mpi and (r["type"] == "contig" if t else True)]
            if not sel:
                continue
            for metric in ("lat", "bw"):
                dev = [abs(r[f"{metric}_ratio_median"] - 1) for r in sel]
                devb = [abs(r[f"{metric}_ratio_best"] - 1) for r in sel]
                band = [(r[f"{metric}_paired_hi"] - r[f"{metric}_paired_lo"]) / 2 for r in sel]
                lines.append(
                    f"{name[mpi]:8} {('contig' if t else 'all types'):9} {metric:3}: |ratio-1| median "
                    f"{100 * statistics.median(dev):.1f}%, max {100 * max(dev):.1f}% (best-of: median "
                    f"{100 * statistics.median(devb):.1f}%, max {100 * max(devb):.1f}%); paired-ratio "
                    f"half-range over reps median {100 * statistics.median(band):.1f}%, max {100 * max(band):.1f}% "
                    f"({len(sel)} points)")
    return lines


HEAD = ["MPI", "type", "size", "lat bare med", "lat bare min", "lat sluice med", "lat sluice min",
        "lat ratio med", "lat ratio min", "lat paired range",
        "bw bare med", "bw bare best", "bw sluice med", "bw sluice best", "bw ratio med",
        "bw ratio best", "bw paired range"]


def table_row(r):
    name = dict(MPIS)
    return [name[r["mpi"]], r["type"], human(r["bytes"]),
            f"{r['lat_bare_median']:.3f}", f"{r['lat_bare_best']:.3f}",
            f"{r['lat_sluice_median']:.3f}", f"{r['lat_sluice_best']:.3f}",
            f"{r['lat_ratio_median']:.3f}", f"{r['lat_ratio_best']:.3f}",
            f"{r['lat_paired_lo']:.2f}-{r['lat_paired_hi']:.2f}",
            f"{r['bw_bare_median']:.3f}", f"{r['bw_bare_best']:.3f}",
            f"{r['bw_sluice_median']:.3f}", f"{r['bw_sluice_best']:.3f}",
            f"{r['bw_ratio_median']:.3f}", f"{r['bw_ratio_best']:.3f}",
            f"{r['bw_paired_lo']:.2f}-{r['bw_paired_hi']:.2f}"]


def md_table(head, rows, left):
    md = ["| " + " | ".join(head) + " |",
          "|" + "|".join("---" if i in left else "---:" for i in range(len(head))) + "|"]
    md += ["| " + " | ".join(t) + " |" for t in rows]
    return md


def print_table(head, rows, left):
    widths = [max([len(h), *(len(t[i]) for t in rows)]) for i, h in enumerate(head)]
    fmt = lambda cells: "  ".join(c.ljust(w) if i in left else c.rjust(w)
                                  for i, (c, w) in enumerate(zip(cells, widths)))
    print(fmt(head))
    print("  ".join("-" * w for w in widths))
    for t in rows:
        print(fmt(t))


def plot(rows, types, mpis, path, meta):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_p2p: matplotlib not available, no PNG written (use /usr/bin/python3)", file=sys.stderr)
        return False
    name = dict(MPIS)
    color = {"openmpi": "#1f77b4", "mpich": "#d62728"}
    scanned = [t for t in types if t not in SUITE]
    suite = [t for t in types if t in SUITE]
    ncol = len(scanned) + (1 if suite else 0)
    fig, axes = plt.subplots(3, ncol, figsize=(4.2 * ncol, 11), squeeze=False)
    for ci, t in enumerate(scanned):
        for mpi in mpis:
            sel = sorted((r for r in rows if r["mpi"] == mpi and r["type"] == t), key=lambda r: r["bytes"])
            if not sel:
                continue
            x = [r["bytes"] for r in sel]
            for ri, metric in enumerate(("lat", "bw")):
                ax = axes[ri][ci]
                ax.plot(x, [r[f"{metric}_bare_median"] for r in sel], "o--", ms=3, lw=1, color=color[mpi],
                        alpha=0.55, mfc="none", label=f"{name[mpi]} bare")
                ax.plot(x, [r[f"{metric}_sluice_median"] for r in sel], "x-", ms=4, lw=1.2, color=color[mpi],
                        label=f"{name[mpi]} sluice")
            ax = axes[2][ci]
            for metric, mk in (("lat", "o"), ("bw", "s")):
                # speed-up: > 1 = sluice faster (latency: bare/sluice, bandwidth: sluice/bare)
                inv = metric == "lat"
                y = [1 / r[f"{metric}_ratio_median"] if inv else r[f"{metric}_ratio_median"] for r in sel]
                lo = [1 / r[f"{metric}_paired_hi"] if inv else r[f"{metric}_paired_lo"] for r in sel]
                hi = [1 / r[f"{metric}_paired_lo"] if inv else r[f"{metric}_paired_hi"] for r in sel]
                ax.errorbar(x, y, yerr=[[max(a - b, 0) for a, b in zip(y, lo)], [max(b - a, 0) for a, b in zip(y, hi)]],
                            fmt=mk + ("--" if inv else "-"), ms=3, lw=1, capsize=2, color=color[mpi],
                            alpha=0.8, label=f"{name[mpi]} {'latency' if inv else 'bandwidth'}")
        axes[0][ci].set_title(t, fontsize=10)
        for ri in range(3):
            axes[ri][ci].set_xscale("log", base=2)
            axes[ri][ci].grid(True, which="major", alpha=0.3)
        axes[0][ci].set_yscale("log")
        axes[1][ci].set_yscale("log")
        axes[2][ci].set_yscale("log")
        axes[2][ci].set_ylim(0.2, 5)
        axes[2][ci].axhspan(0.97, 1.03, color="#2ca02c", alpha=0.12, lw=0)
        axes[2][ci].axhline(1.0, color="black", lw=0.6)
        axes[2][ci].set_xlabel("message size, packed bytes")
    if suite:
        ci = ncol - 1
        w = 0.2
        for ri, metric in enumerate(("lat", "bw")):
            ax = axes[ri][ci]
            k = 0
            for mpi in mpis:
                for cfg in ("bare", "sluice"):
                    vals = [next((r[f"{metric}_{cfg}_median"] for r in rows if r["mpi"] == mpi and r["type"] == t), 0)
                            for t in suite]
                    ax.bar([i + (k - 1.5) * w for i in range(len(suite))], vals, w * 0.95, color=color[mpi],
                           alpha=0.45 if cfg == "bare" else 0.9, hatch="//" if cfg == "bare" else None,
                           label=f"{name[mpi]} {cfg}")
                    k += 1
            ax.set_yscale("log")
            ax.set_xticks(range(len(suite)))
            ax.set_xticklabels([f"{t}\n{human(next(r['bytes'] for r in rows if r['type'] == t))}" for t in suite],
                               fontsize=8)
            ax.grid(True, axis="y", alpha=0.3)
        axes[0][ci].set_title("ddt-suite cases (natural size)", fontsize=10)
        ax = axes[2][ci]
        for mi, mpi in enumerate(mpis):
            for metric, mk in (("lat", "o"), ("bw", "s")):
                inv = metric == "lat"
                for i, t in enumerate(suite):
                    r = next((r for r in rows if r["mpi"] == mpi and r["type"] == t), None)
                    if not r:
                        continue
                    y = 1 / r[f"{metric}_ratio_median"] if inv else r[f"{metric}_ratio_median"]
                    lo = 1 / r[f"{metric}_paired_hi"] if inv else r[f"{metric}_paired_lo"]
                    hi = 1 / r[f"{metric}_paired_lo"] if inv else r[f"{metric}_paired_hi"]
                    ax.errorbar([i + (mi * 2 + (0 if inv else 1) - 1.5) * 0.15], [y],
                                yerr=[[max(y - lo, 0)], [max(hi - y, 0)]], fmt=mk, ms=4, capsize=2,
                                color=color[mpi], mfc="none" if inv else color[mpi])
        ax.set_xticks(range(len(suite)))
        ax.set_xticklabels(suite, fontsize=8)
        ax.set_xlim(-0.6, len(suite) - 0.4)
        ax.set_yscale("log")
        ax.set_ylim(0.2, 5)
        ax.axhspan(0.97, 1.03, color="#2ca02c", alpha=0.12, lw=0)
        ax.axhline(1.0, color="black", lw=0.6)
        ax.grid(True, axis="y", alpha=0.3)
    axes[0][0].set_ylabel("half round trip, us (median)")
    axes[1][0].set_ylabel("bandwidth, GB/s of packed bytes (median)")
    axes[2][0].set_ylabel("sluice speed-up over bare (>1 = faster, axis 0.2-5)\nlatency o--, bandwidth s-; bars: range over reps")
    axes[0][0].legend(fontsize=7)
    axes[2][0].legend(fontsize=7)
    fig.suptitle(f"sluice point-to-point vs bare MPI, 2 ranks ({meta.get('date', '')}, commit "
                 f"{meta.get('commit', '?')}, {meta.get('host_cpus', '?')} shared cores, load avg "
                 f"{meta.get('loadavg_start', '?')} -> {meta.get('loadavg_end', '?')}, "
                 f"{meta.get('reps', '?')} reps x {meta.get('trials', '?')} trials; green band: +-3%)", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.savefig(path, dpi=100)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("--min-share", type=float, default=0.95,
                    help="trials with a smaller CPU share of either rank are left out (default 0.95)")
    a = ap.parse_args()
    raw, per_rep, types, mpis, meta = load(a.outdir)
    if not raw:
        raise SystemExit("plot_p2p: no data (openmpi.csv / mpich.csv)")
    rows = summarise(raw, per_rep, types, mpis, a.min_share)
    with open(os.path.join(a.outdir, "summary.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    vd = verdicts(rows, mpis)
    with open(os.path.join(a.outdir, "verdict.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(vd[0].keys()))
        w.writeheader()
        w.writerows(vd)
    noise = noise_report(rows, mpis)

    left = (0, 1, 2)
    trows = [table_row(r) for r in rows]
    key = [table_row(r) for r in rows if r["bytes"] in KEY_SIZES or r["type"] in SUITE]
    print()
    print_table(HEAD, key, left)
    print("\n(latency in us, bandwidth in GB/s of packed bytes; ratio = sluice/bare; paired range = min-max over reps "
          "of the ratio of back-to-back jobs; full table in p2p.md / summary.csv)\n")
    print("noise (how far ratios are from each other and from 1.0):")
    for line in noise:
        print("  " + line)
    VHEAD = ["target", "MPI", "status", "worst point", "its ratio", "its paired range", "points failing"]
    vrows = [[v["target"], v["mpi"], v["status"], v["worst"], v["ratio"], v["band"], v["failing"]] for v in vd]
    print("\nverdict (ratios sluice/bare, medians):")
    print_table(VHEAD, vrows, (0, 1, 2, 3))

    md = [
        f"Run {meta.get('date', '?')}, commit {meta.get('commit', '?')}, {meta.get('host_cpus', '?')} cores "
        f"({meta.get('cpu', '?')}), load average {meta.get('loadavg_start', '?')} at start, "
        f"{meta.get('loadavg_end', '?')} at end, {meta.get('seconds', '?')} s; Open MPI {meta.get('openmpi', '?')}, "
        f"MPICH {meta.get('mpich', '?')}; quick={meta.get('quick', '?')}, {meta.get('reps', '?')} reps x "
        f"{meta.get('trials', '?')} trials per configuration, {meta.get('target_ms', '?')} ms per trial, window "
        f"{meta.get('window', '?')} (cap {meta.get('cap_mib', '?')} MiB in flight).",
        "",
        "Latency: half round trip in us; bandwidth: GB/s of packed bytes. ratio = sluice/bare (latency > 1 or "
        "bandwidth < 1: sluice slower); min/best = min latency / max bandwidth over all trials; paired range = "
        "min-max over reps of the ratio of a rep's back-to-back bare and sluice jobs (their medians). Only clean "
        f"trials (both ranks' CPU share >= {a.min_share:g}) count, unless a point has none; "
        f"{meta.get('waited_s', '?')} s were spent waiting for a quiet machine.",
        "",
        "### Verdict",
        "",
    ] + md_table(VHEAD, vrows, (0, 1, 2, 3)) + [
        "",
        "### Noise",
        "",
    ] + [f"- {line}" for line in noise] + [
        "",
        "### Key sizes",
        "",
    ] + md_table(HEAD, key, left) + [
        "",
        "### All points",
        "",
    ] + md_table(HEAD, trows, left)
    with open(os.path.join(a.outdir, "p2p.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    png = os.path.join(a.outdir, "p2p.png")
    if plot(rows, types, mpis, png, meta):
        print(f"\nwrote {png}")


if __name__ == "__main__":
    main()
