#!/usr/bin/python3
"""Summarise and plot scripts/bench-overhead.sh results.

Reads OUTDIR/raw.csv (mpi,config,block,metric,trial,value) and OUTDIR/meta.txt, prints a table,
writes OUTDIR/summary.csv, OUTDIR/overhead.md and OUTDIR/overhead.png (needs matplotlib; run it
with Debian's /usr/bin/python3). Only the standard library is needed for the tables.
"""
import argparse
import csv
import os
import statistics
import sys
from collections import defaultdict

MSG_BYTES = 4 * 1024 * 1024
MPIS = [("openmpi", "Open MPI"), ("mpich", "MPICH")]
CALLS = ["MPI_Test", "MPI_Get_count", "MPI_Iprobe"]
# The same from Fortran (`use mpi`, bench/overhead_f.f90), and an 8-byte send + receive to self.
FCALLS = ["F:MPI_Test", "F:MPI_Get_count", "F:MPI_Iprobe", "F:MPI_Sendrecv"]
# metric -> (label, unit, higher_is_better)
METRICS = {
    "lat": ("8 B half round trip", "us", False),
    "bw": ("4 MiB bandwidth", "GB/s", True),
    "MPI_Test": ("MPI_Test(REQUEST_NULL)", "ns/call", False),
    "MPI_Get_count": ("MPI_Get_count", "ns/call", False),
    "MPI_Iprobe": ("MPI_Iprobe(SELF, nothing pending)", "ns/call", False),
    "F:MPI_Test": ("Fortran MPI_Test(REQUEST_NULL)", "ns/call", False),
    "F:MPI_Get_count": ("Fortran MPI_Get_count", "ns/call", False),
    "F:MPI_Iprobe": ("Fortran MPI_Iprobe(SELF, nothing pending)", "ns/call", False),
    "F:MPI_Sendrecv": ("Fortran 8 B MPI_Sendrecv to self", "ns/call", False),
}
ORDER = ["lat", "bw"] + CALLS + FCALLS


def overhead_ns(metric, bare, sluice):
    """Extra time due to sluice, in ns, per unit of the metric (see overhead.md)."""
    if metric == "lat":
        return (sluice - bare) * 1e3  # per half round trip
    if metric == "bw":
        return MSG_BYTES / sluice - MSG_BYTES / bare  # per 4 MiB message (bytes / (1e9 B/s) = ns)
    return sluice - bare  # per call


def summarise(raw, noise_pct):
    rows = []
    for mpi, _ in MPIS:
        for metric in ORDER:
            label, unit, hib = METRICS[metric]
            st = {}
            for cfg in ("bare", "sluice"):
                v = raw.get((mpi, cfg, metric), [])
                if not v:
                    raise SystemExit(f"plot_overhead: no data for {mpi}/{cfg}/{metric}")
                med = statistics.median(v)
                best = max(v) if hib else min(v)
                spread = abs(med - best) / (med if hib else best) * 100.0
                st[cfg] = (len(v), med, best, spread)
            (nb, mb, bb, sb), (ns_, ms, bs, ss) = st["bare"], st["sluice"]
            d_med, d_best = overhead_ns(metric, mb, ms), overhead_ns(metric, bb, bs)
            # Absolute noise of each configuration in ns of overhead terms: |median - best|.
            noise_abs = max(abs(overhead_ns(metric, bb, mb)), abs(overhead_ns(metric, bs, ms)))
            flags = []
            if max(sb, ss) > noise_pct:
                flags.append(f"noisy (median-best spread {max(sb, ss):.0f}% > {noise_pct:g}%)")
            if abs(d_med) < noise_abs:
                flags.append("difference within noise")
            rows.append(dict(
                mpi=mpi, metric=metric, label=label, unit=unit, n=min(nb, ns_),
                bare_median=mb, bare_best=bb, sluice_median=ms, sluice_best=bs,
                ratio_median=ms / mb, ratio_best=bs / bb,
                overhead_ns_median=d_med, overhead_ns_best=d_best,
                spread_bare_pct=sb, spread_sluice_pct=ss,
                note="; ".join(flags) if flags else "ok",
            ))
    return rows


def fmt(x, unit):
    if unit == "us":
        return f"{x:.3f}"
    if unit == "GB/s":
        return f"{x:.2f}"
    return f"{x:.2f}"


HEAD = ["MPI", "benchmark", "unit", "bare median", "bare best", "sluice median", "sluice best",
        "ratio median", "ratio best", "overhead ns (median)", "overhead ns (best)", "note"]


def table_rows(rows):
    name = dict(MPIS)
    out = []
    for r in rows:
        u = r["unit"]
        out.append([name[r["mpi"]], r["label"], u, fmt(r["bare_median"], u), fmt(r["bare_best"], u),
                    fmt(r["sluice_median"], u), fmt(r["sluice_best"], u),
                    f"{r['ratio_median']:.3f}", f"{r['ratio_best']:.3f}",
                    f"{r['overhead_ns_median']:+.1f}", f"{r['overhead_ns_best']:+.1f}", r["note"]])
    return out


def verdicts(rows, target):
    name = dict(MPIS)
    lines = []
    for r in rows:
        if r["metric"] not in CALLS + FCALLS:
            continue
        worst = max(r["overhead_ns_median"], r["overhead_ns_best"])
        ok = worst <= target
        lines.append(f"{name[r['mpi']]:8} {r['metric']:16} overhead {r['overhead_ns_median']:+6.1f} ns (median), "
                     f"{r['overhead_ns_best']:+6.1f} ns (best): "
                     f"{'within' if ok else 'ABOVE'} the {target:g} ns/call target")
    return lines


def plot(raw, rows, path, meta):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_overhead: matplotlib not available, no PNG written (use /usr/bin/python3)",
              file=sys.stderr)
        return False
    colors = {"bare": "#7f7f7f", "sluice": "#1f77b4"}
    fig, axes = plt.subplots(1, 4, figsize=(20, 4.8), gridspec_kw={"width_ratios": [1, 1, 2.4, 3]})
    by = {(r["mpi"], r["metric"]): r for r in rows}

    def panel(ax, groups, title, ylabel, hib):
        w = 0.38
        meds = [statistics.median(raw[(m, c, k)]) for m, k, _ in groups for c in ("bare", "sluice")]
        allv = [x for m, k, _ in groups for c in ("bare", "sluice") for x in raw[(m, c, k)]]
        # Outliers from other tenants would squash the bars: clip the axis, count what is above.
        ytop = min(max(allv), 2.5 * max(meds)) * 1.05
        for gi, (mpi, metric, glabel) in enumerate(groups):
            clipped = 0
            for ci, cfg in enumerate(("bare", "sluice")):
                v = raw[(mpi, cfg, metric)]
                x = gi + (ci - 0.5) * w
                med = statistics.median(v)
                ax.bar(x, med, w * 0.95, color=colors[cfg], alpha=0.85,
                       label=cfg + " (median)" if gi == 0 else None)
                xs = [x + (i / max(len(v) - 1, 1) - 0.5) * w * 0.6 for i in range(len(v))]
                ax.scatter(xs, [min(y, ytop) for y in v], s=6, color="black", alpha=0.45, zorder=3,
                           label="trials" if gi == 0 and ci == 0 else None)
                clipped += sum(y > ytop for y in v)
            r = by[(mpi, metric)]
            if metric == "bw":
                text = f"x{r['ratio_median']:.3f}"
            else:
                text = f"x{r['ratio_median']:.3f}\n{r['overhead_ns_median']:+.1f} ns"
            if clipped:
                text += f"\n({clipped} trial{'s' if clipped > 1 else ''} above axis)"
            ax.annotate(text, (gi, ytop), textcoords="offset points", xytext=(0, 4), ha="center",
                        va="bottom", fontsize=8, annotation_clip=False)
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels([g[2] for g in groups], fontsize=8)
        ax.set_title(title, fontsize=10, pad=40)
        ax.set_ylabel(ylabel)
        ax.set_ylim(0, ytop)

    name = dict(MPIS)
    panel(axes[0], [(m, "lat", name[m]) for m, _ in MPIS],
          "8 B ping-pong, half round trip\n(lower is better; label: ns per half RTT)", "us", False)
    panel(axes[1], [(m, "bw", name[m]) for m, _ in MPIS],
          f"4 MiB bandwidth, window of {meta.get('window', '?')} Isend\n(higher is better)", "GB/s", True)
    panel(axes[2], [(m, c, f"{name[m]}\n{c}") for m, _ in MPIS for c in CALLS],
          "single-process cost per intercepted call (lower is better)\n"
          "labels: sluice/bare ratio, sluice - bare (medians)", "ns/call", False)
    panel(axes[3], [(m, c, f"{name[m]}\n{c[2:]}") for m, _ in MPIS for c in FCALLS],
          "the same from Fortran (use mpi), and an 8 B MPI_Sendrecv to self\n"
          "labels: sluice/bare ratio, sluice - bare (medians)", "ns/call", False)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8)
    fig.suptitle(f"sluice pass-through interception overhead ({meta.get('date', '')}, "
                 f"{meta.get('host_cpus', '?')} shared cores, load avg {meta.get('loadavg_start', '?')}"
                 f" -> {meta.get('loadavg_end', '?')})", fontsize=10)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(path, dpi=110)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("outdir")
    ap.add_argument("--noise-pct", type=float, default=10.0)
    ap.add_argument("--target-ns", type=float, default=20.0)
    a = ap.parse_args()

    raw = defaultdict(list)
    with open(os.path.join(a.outdir, "raw.csv"), newline="") as f:
        for r in csv.DictReader(f):
            raw[(r["mpi"], r["config"], r["metric"])].append(float(r["value"]))
    meta = {}
    mp = os.path.join(a.outdir, "meta.txt")
    if os.path.exists(mp):
        for line in open(mp):
            k, _, v = line.rstrip("\n").partition("=")
            meta[k] = v

    rows = summarise(raw, a.noise_pct)
    with open(os.path.join(a.outdir, "summary.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)

    trows = table_rows(rows)
    widths = [max(len(h), *(len(t[i]) for t in trows)) for i, h in enumerate(HEAD)]
    line = lambda cells: "  ".join(c.ljust(w) if i in (0, 1, 2, 11) else c.rjust(w)
                                   for i, (c, w) in enumerate(zip(cells, widths)))
    print()
    print(line(HEAD))
    print("  ".join("-" * w for w in widths))
    for t in trows:
        print(line(t))
    print()
    vl = verdicts(rows, a.target_ns)
    for v in vl:
        print(v)

    n = rows[0]["n"]
    md = [
        f"Run {meta.get('date', '?')}, commit {meta.get('commit', '?')}, {meta.get('host_cpus', '?')} cores, "
        f"load average {meta.get('loadavg_start', '?')} at start, {meta.get('loadavg_end', '?')} at end; "
        f"Open MPI {meta.get('openmpi', '?')}, MPICH {meta.get('mpich', '?')}.",
        f"{n} trials per configuration ({meta.get('blocks', '?')} interleaved blocks x "
        f"{meta.get('trials_per_block', '?')}); best = min time / max bandwidth.",
        "",
        "| " + " | ".join(HEAD) + " |",
        "|" + "|".join("---" if i in (0, 1, 2, 11) else "---:" for i in range(len(HEAD))) + "|",
    ]
    md += ["| " + " | ".join(t) + " |" for t in trows]
    md += [
        "",
        "Overhead column: 8 B latency: (sluice - bare) half round trip, i.e. extra ns per one-way "
        "message, during which the sender makes one intercepted MPI_Send and the receiver one "
        "intercepted MPI_Recv (so about twice the per-call cost if both were fully on the critical "
        "path). 4 MiB: extra ns per 4 MiB message implied by the bandwidth difference. Calls: "
        "(sluice - bare) ns per call in a single-process loop.",
        f"A configuration is flagged noisy when its (median - best) spread exceeds {a.noise_pct:g}%; "
        "'difference within noise' means |median difference| is smaller than the larger of the "
        "two configurations' median-best spreads.",
        "",
    ] + [f"- {v}" for v in vl]
    with open(os.path.join(a.outdir, "overhead.md"), "w") as f:
        f.write("\n".join(md) + "\n")

    png = os.path.join(a.outdir, "overhead.png")
    if plot(raw, rows, png, meta):
        print(f"\nwrote {png}")


if __name__ == "__main__":
    main()
