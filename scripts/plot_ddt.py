#!/usr/bin/python3
"""Merge and plot scripts/bench-ddt.sh results.

Reads OUTDIR/{openmpi,mpich}.csv (mpi,case,kernel,count,packed_bytes,block,dir,engine,
median_gbs,best_gbs,samples) and OUTDIR/meta.txt; prints the combined table, writes
OUTDIR/summary.csv, OUTDIR/ddt.md and OUTDIR/ddt.png (needs matplotlib: run it with Debian's
/usr/bin/python3). Ratios sluice/MPI are taken within one process run (same minutes, same noise).
"""
import csv
import math
import os
import sys

MPIS = [("openmpi", "Open MPI"), ("mpich", "MPICH")]
DIRS = ["pack", "unpack"]
TARGET_OMPI = 2.0
TARGET_MPICH = 1.5
MEMCPY_FRACTION = 0.5
BIG_BLOCK = 64
PARITY = 0.95


def load(out):
    data = {}  # (mpi, case, dir, engine) -> (median, best)
    info = {}  # case -> dict(kernel, count, bytes, block)
    order = []
    for mpi, _ in MPIS:
        path = os.path.join(out, f"{mpi}.csv")
        if not os.path.exists(path):
            raise SystemExit(f"plot_ddt: {path} missing")
        with open(path) as f:
            for r in csv.DictReader(f):
                c = r["case"]
                if c not in info:
                    order.append(c)
                    info[c] = dict(kernel=r["kernel"], count=int(r["count"]), bytes=int(r["packed_bytes"]),
                                   block=int(r["block"]))
                data[(mpi, c, r["dir"], r["engine"])] = (float(r["median_gbs"]), float(r["best_gbs"]))
    for mpi, _ in MPIS:
        for c in order:
            for d in DIRS:
                for e in ("sluice", "mpi", "memcpy"):
                    if (mpi, c, d, e) not in data:
                        raise SystemExit(f"plot_ddt: no data for {mpi}/{c}/{d}/{e}")
    return data, info, order


def meta(out):
    m = {}
    try:
        with open(os.path.join(out, "meta.txt")) as f:
            for line in f:
                k, _, v = line.rstrip("\n").partition("=")
                m[k] = v
    except OSError:
        pass
    return m


def geomean(v):
    return math.exp(sum(math.log(x) for x in v) / len(v))


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: plot_ddt.py OUTDIR")
    out = sys.argv[1]
    data, info, order = load(out)
    m = meta(out)

    def med(mpi, c, d, e):
        return data[(mpi, c, d, e)][0]

    def best(mpi, c, d, e):
        return data[(mpi, c, d, e)][1]

    rows = []  # one per (case, dir)
    for c in order:
        for d in DIRS:
            r = dict(case=c, dir=d, **info[c])
            # sluice and memcpy were measured in both runs: report the mean of the two medians.
            r["sluice"] = (med("openmpi", c, d, "sluice") + med("mpich", c, d, "sluice")) / 2
            r["memcpy"] = (med("openmpi", c, d, "memcpy") + med("mpich", c, d, "memcpy")) / 2
            r["ompi"] = med("openmpi", c, d, "mpi")
            r["mpich"] = med("mpich", c, d, "mpi")
            r["r_ompi"] = med("openmpi", c, d, "sluice") / r["ompi"]
            r["r_mpich"] = med("mpich", c, d, "sluice") / r["mpich"]
            r["rb_ompi"] = best("openmpi", c, d, "sluice") / best("openmpi", c, d, "mpi")
            r["rb_mpich"] = best("mpich", c, d, "sluice") / best("mpich", c, d, "mpi")
            r["r_memcpy"] = r["sluice"] / r["memcpy"]
            rows.append(r)

    # summary.csv
    with open(os.path.join(out, "summary.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["case", "dir", "kernel", "count", "packed_bytes", "block", "sluice_gbs", "openmpi_gbs", "mpich_gbs",
                    "memcpy_gbs", "sluice_over_openmpi", "sluice_over_mpich", "sluice_over_openmpi_best",
                    "sluice_over_mpich_best", "sluice_over_memcpy"])
        for r in rows:
            w.writerow([r["case"], r["dir"], r["kernel"], r["count"], r["bytes"], r["block"],
                        *(f"{r[k]:.3f}" for k in ("sluice", "ompi", "mpich", "memcpy", "r_ompi", "r_mpich",
                                                   "rb_ompi", "rb_mpich", "r_memcpy"))])

    # Table (markdown, also printed).
    lines = []
    hdr = ("| case | kernel | block B | packed KiB | dir | sluice | Open MPI | MPICH | memcpy | "
           "sluice/OMPI | sluice/MPICH | sluice/memcpy |")
    lines.append(hdr)
    lines.append("|" + "---|" * 12)
    for r in rows:
        blk = str(r["block"]) if r["block"] else "-"
        lines.append(f"| {r['case']} | {r['kernel']} | {blk} | {r['bytes'] // 1024} | {r['dir']} | "
                     f"{r['sluice']:.2f} | {r['ompi']:.2f} | {r['mpich']:.2f} | {r['memcpy']:.2f} | "
                     f"{r['r_ompi']:.2f} ({r['rb_ompi']:.2f}) | {r['r_mpich']:.2f} ({r['rb_mpich']:.2f}) | "
                     f"{r['r_memcpy']:.2f} |")
    summary = []
    verdict = []
    for d in DIRS:
        rs = [r for r in rows if r["dir"] == d]
        go, gm = geomean([r["r_ompi"] for r in rs]), geomean([r["r_mpich"] for r in rs])
        gob, gmb = geomean([r["rb_ompi"] for r in rs]), geomean([r["rb_mpich"] for r in rs])
        summary.append(f"- {d}: geometric mean over the {len(rs)} cases of sluice/Open MPI **{go:.2f}x** "
                       f"(best-of: {gob:.2f}x), sluice/MPICH **{gm:.2f}x** (best-of: {gmb:.2f}x)")
        verdict.append((f"{d}: geomean >= {TARGET_OMPI}x Open MPI", go >= TARGET_OMPI, f"{go:.2f}x"))
        verdict.append((f"{d}: geomean >= {TARGET_MPICH}x MPICH", gm >= TARGET_MPICH, f"{gm:.2f}x"))
    slower = [r for r in rows if min(r["r_ompi"], r["r_mpich"]) < 1.0]
    if slower:
        summary.append("- slower than the faster MPI engine (median ratio < 1; best-of ratio in parentheses; "
                       f"'parity' when within {1 - PARITY:.0%}, about the run-to-run noise here):")
        for r in slower:
            which = []
            if r["r_ompi"] < 1.0:
                which.append(f"Open MPI {r['r_ompi']:.3f} ({r['rb_ompi']:.2f})")
            if r["r_mpich"] < 1.0:
                which.append(f"MPICH {r['r_mpich']:.3f} ({r['rb_mpich']:.2f})")
            tag = "parity" if min(r["r_ompi"], r["r_mpich"]) >= PARITY else "slower"
            summary.append(f"  - {r['case']} {r['dir']} ({tag}): " + ", ".join(which))
    else:
        summary.append("- sluice is at least as fast as both MPI engines on every case (medians)")
    clear = [r for r in slower if min(r["r_ompi"], r["r_mpich"]) < PARITY]
    verdict.append(("every case >= the faster MPI engine (medians)", not slower,
                    f"{len(slower)} of {len(rows)} below 1.0, {len(clear)} of them below {PARITY}"))
    big = [r for r in rows if r["block"] >= BIG_BLOCK]
    low = [r for r in big if r["r_memcpy"] < MEMCPY_FRACTION]
    summary.append(f"- blocks of {BIG_BLOCK} B or more ({', '.join(sorted({r['case'] for r in big}, key=order.index))}): "
                   f"sluice/memcpy {min(r['r_memcpy'] for r in big):.2f}-{max(r['r_memcpy'] for r in big):.2f}"
                   + (f"; below {MEMCPY_FRACTION:.0%}: " + ", ".join(f"{r['case']} {r['dir']} {r['r_memcpy']:.2f}" for r in low)
                      if low else f"; all >= {MEMCPY_FRACTION:.0%}"))
    verdict.append((f">= {MEMCPY_FRACTION:.0%} of memcpy for blocks >= {BIG_BLOCK} B", not low,
                    f"{len(low)} of {len(big)} miss"))
    summary.append("")
    summary.append("| target | met | measured |")
    summary.append("|---|---|---|")
    for name, met, val in verdict:
        summary.append(f"| {name} | {'yes' if met else 'no'} | {val} |")

    print()
    print("GB/s of packed bytes, median over samples (sluice, memcpy: mean of the two runs' medians);")
    print("ratios within one run, median (best-of in parentheses)")
    print("\n".join(lines))
    print()
    print("\n".join(summary))

    md = [
        f"Measured {m.get('date', '?')}, commit {m.get('commit', '?')}, {m.get('host_cpus', '?')} shared cores "
        f"({m.get('cpu', '?')}), load average {m.get('loadavg_start', '?')} -> {m.get('loadavg_end', '?')}; "
        f"Open MPI {m.get('openmpi', '?')}, MPICH {m.get('mpich', '?')}; {m.get('case_ms', '?')} ms per case and MPI.",
        "",
        "GB/s of packed bytes, median of the samples (sluice and memcpy: mean of the medians of the two runs); "
        "ratios are taken within one run, median (best-of in parentheses).",
        "",
        *lines,
        "",
        *summary,
        "",
    ]
    with open(os.path.join(out, "ddt.md"), "w") as f:
        f.write("\n".join(md))

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_ddt: matplotlib missing, no ddt.png", file=sys.stderr)
        return 1
    fig, axes = plt.subplots(2, 1, figsize=(14, 8.5), sharex=True)
    series = [("sluice", "sluice", "#1f77b4"), ("ompi", "Open MPI engine", "#ff7f0e"),
              ("mpich", "MPICH engine", "#2ca02c"), ("memcpy", "memcpy (same bytes)", "#999999")]
    x = list(range(len(order)))
    wdt = 0.2
    for ax, d in zip(axes, DIRS):
        rs = {r["case"]: r for r in rows if r["dir"] == d}
        for i, (key, label, color) in enumerate(series):
            ax.bar([xi + (i - 1.5) * wdt for xi in x], [rs[c][key] for c in order], wdt, label=label, color=color)
        ax.set_yscale("log")
        ax.set_ylabel(f"{d}: GB/s (log)")
        ax.grid(axis="y", which="both", alpha=0.3)
        ax.set_title(f"{d}: packed bytes per second, median")
    axes[1].set_xticks(x)
    axes[1].set_xticklabels([f"{c}\n{info[c]['kernel'].replace('block-indexed', 'blk-indexed')}" for c in order], fontsize=8)
    axes[0].legend(ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.02), fontsize=9, framealpha=0.9)
    fig.suptitle(f"sluice datatype engine vs Open MPI / MPICH MPI_Pack/MPI_Unpack ({m.get('date', '')[:10]}, "
                 f"{m.get('host_cpus', '?')} shared cores)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "ddt.png"), dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
