#!/usr/bin/python3
"""Merge and plot scripts/bench-ddt.sh results.

Reads OUTDIR/{openmpi,mpich}.csv (mpi,case,kernel,count,packed_bytes,block,dir,engine,
median_gbs,best_gbs,samples,pair_median,pair_lo,pair_hi) and OUTDIR/meta.txt; prints the
combined table and the verdicts on issue 3's targets, writes OUTDIR/summary.csv, OUTDIR/ddt.md
and OUTDIR/ddt.png (needs matplotlib: run it with Debian's /usr/bin/python3).

Ratios are sluice's speed over the MPI's (or memcpy's), paired by round within one process run:
the median of the per-round ratios and its 95% interval (sluice-ddt-bench's pairs.rs). Verdicts
use the intervals: "faster" when the interval lies above 1, "slower" when it lies below
1 - AA_FLOOR (how far an A/A run measures two identical engines apart), else "parity". A
geometric mean's interval comes from the per-case intervals (delta method on the logarithms),
and a target counts as met when the interval's lower end clears it.
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
Z95 = 1.959964
# How far apart two identical engines measure: an A/A run (`sluice-ddt-bench --aa`, the MPI's
# engine in both columns, Open MPI, all 16 cases x 2 directions) gave medians of 0.970-1.019
# and intervals whose upper ends went down to 0.995. A pair is called slower only when its whole
# interval lies below 1 - AA_FLOOR, so two identical engines are never called slower.
AA_FLOOR = 0.03


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
                if "pair_median" not in r:
                    raise SystemExit(f"plot_ddt: {path} has no paired ratios (written by an older sluice-ddt-bench)")
                data[(mpi, c, r["dir"], r["engine"])] = (float(r["median_gbs"]), float(r["best_gbs"]),
                                                         (float(r["pair_median"]), float(r["pair_lo"]),
                                                          float(r["pair_hi"])))
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


def geomean_ci(iv):
    """Geometric mean of interval medians, with a 95% interval: each case's log-interval read as
    +-1.96 standard errors, the errors combined as independent (the cases ran at different times)."""
    n = len(iv)
    m = sum(math.log(x[0]) for x in iv) / n
    se = math.sqrt(sum(((math.log(x[2]) - math.log(x[1])) / (2 * Z95)) ** 2 for x in iv)) / n
    return (math.exp(m), math.exp(m - Z95 * se), math.exp(m + Z95 * se))


def side(iv):
    """'faster'/'parity'/'slower' of a ratio's interval against the other engine: faster when it
    lies above 1, slower when below 1 - AA_FLOOR (the A/A spread), else parity."""
    return "faster" if iv[1] > 1.0 else ("slower" if iv[2] < 1.0 - AA_FLOOR else "parity")


def fmt_ci(iv, digits=2):
    return f"{iv[0]:.{digits}f} [{iv[1]:.{digits}f}, {iv[2]:.{digits}f}]"


def met(iv, bound):
    """A target's verdict: 'yes' when the interval clears the bound, 'within noise' when only
    the median does, else 'no'."""
    return "yes" if iv[1] >= bound else ("within noise" if iv[0] >= bound else "no")


def targets(rows):
    """The verdicts on issue 3's targets from rows (one per case and direction) holding the
    paired intervals p_ompi, p_mpich, p_memcpy, the side vs_faster, dir and block. Returns
    ([(target, met, value)], {dir: (geomean vs Open MPI, vs MPICH, cases)}, rows by side,
    rows of large blocks, the large-block row lowest against memcpy)."""
    verdict, geo = [], {}
    for d in DIRS:
        rs = [r for r in rows if r["dir"] == d]
        go, gm = geomean_ci([r["p_ompi"] for r in rs]), geomean_ci([r["p_mpich"] for r in rs])
        geo[d] = (go, gm, len(rs))
        verdict.append((f"{d}: geomean >= {TARGET_OMPI}x Open MPI", met(go, TARGET_OMPI), fmt_ci(go)))
        verdict.append((f"{d}: geomean >= {TARGET_MPICH}x MPICH", met(gm, TARGET_MPICH), fmt_ci(gm)))
    tally = {k: [r for r in rows if r["vs_faster"] == k] for k in ("faster", "parity", "slower")}
    verdict.append((f"every case >= the faster MPI engine (no interval below {1 - AA_FLOOR:.2f})",
                    "yes" if not tally["slower"] else "no",
                    f"{len(tally['faster'])} faster, {len(tally['parity'])} parity, {len(tally['slower'])} slower "
                    f"of {len(rows)}"))
    big = [r for r in rows if r["block"] >= BIG_BLOCK]
    worst = min(big, key=lambda r: r["p_memcpy"][1])
    mv = min((met(r["p_memcpy"], MEMCPY_FRACTION) for r in big), key=["no", "within noise", "yes"].index)
    verdict.append((f">= {MEMCPY_FRACTION:.0%} of memcpy for blocks >= {BIG_BLOCK} B", mv,
                    f"lowest {worst['case']} {worst['dir']} {fmt_ci(worst['p_memcpy'])}"))
    return verdict, geo, tally, big, worst


def ratio_panel(ax, rows, cases):
    """Draws sluice's paired ratio against each MPI's engine, pack and unpack, with its interval,
    per case (the intervals the verdicts are read from)."""
    wdt = 0.2
    marks = [("pack", "p_ompi", "pack / Open MPI", "#ff7f0e", "o"), ("pack", "p_mpich", "pack / MPICH", "#2ca02c", "o"),
             ("unpack", "p_ompi", "unpack / Open MPI", "#ff7f0e", "s"),
             ("unpack", "p_mpich", "unpack / MPICH", "#2ca02c", "s")]
    for i, (d, key, label, color, mk) in enumerate(marks):
        rs = {r["case"]: r for r in rows if r["dir"] == d}
        iv = [rs[c][key] for c in cases]
        ax.errorbar([x + (i - 1.5) * wdt for x in range(len(cases))], [v[0] for v in iv],
                    yerr=[[v[0] - v[1] for v in iv], [v[2] - v[0] for v in iv]], fmt=mk, color=color,
                    mfc="white" if d == "unpack" else color, capsize=2, label=label)


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

    def pair(mpi, c, d, e):
        return data[(mpi, c, d, e)][2]

    rows = []  # one per (case, dir)
    for c in order:
        for d in DIRS:
            r = dict(case=c, dir=d, **info[c])
            # sluice and memcpy were measured in both runs: report the mean of the two medians.
            r["sluice"] = (med("openmpi", c, d, "sluice") + med("mpich", c, d, "sluice")) / 2
            r["memcpy"] = (med("openmpi", c, d, "memcpy") + med("mpich", c, d, "memcpy")) / 2
            r["ompi"] = med("openmpi", c, d, "mpi")
            r["mpich"] = med("mpich", c, d, "mpi")
            r["p_ompi"] = pair("openmpi", c, d, "mpi")
            r["p_mpich"] = pair("mpich", c, d, "mpi")
            # The memcpy ratio of the run where it came out lower (each process measured it).
            r["p_memcpy"] = min(pair("openmpi", c, d, "memcpy"), pair("mpich", c, d, "memcpy"))
            r["rb_ompi"] = best("openmpi", c, d, "sluice") / best("openmpi", c, d, "mpi")
            r["rb_mpich"] = best("mpich", c, d, "sluice") / best("mpich", c, d, "mpi")
            r["vs_faster"] = "slower" if "slower" in (side(r["p_ompi"]), side(r["p_mpich"])) else (
                "faster" if side(r["p_ompi"]) == side(r["p_mpich"]) == "faster" else "parity")
            rows.append(r)

    # summary.csv
    with open(os.path.join(out, "summary.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["case", "dir", "kernel", "count", "packed_bytes", "block", "sluice_gbs", "openmpi_gbs", "mpich_gbs",
                    "memcpy_gbs", "sluice_over_openmpi", "sluice_over_openmpi_lo", "sluice_over_openmpi_hi",
                    "sluice_over_mpich", "sluice_over_mpich_lo", "sluice_over_mpich_hi", "sluice_over_openmpi_best",
                    "sluice_over_mpich_best", "sluice_over_memcpy", "sluice_over_memcpy_lo", "sluice_over_memcpy_hi",
                    "vs_faster_mpi"])
        for r in rows:
            w.writerow([r["case"], r["dir"], r["kernel"], r["count"], r["bytes"], r["block"],
                        *(f"{r[k]:.3f}" for k in ("sluice", "ompi", "mpich", "memcpy")),
                        *(f"{x:.3f}" for x in r["p_ompi"]), *(f"{x:.3f}" for x in r["p_mpich"]),
                        f"{r['rb_ompi']:.3f}", f"{r['rb_mpich']:.3f}", *(f"{x:.3f}" for x in r["p_memcpy"]),
                        r["vs_faster"]])

    # Table (markdown, also printed).
    lines = []
    hdr = ("| case | kernel | block B | packed KiB | dir | sluice | Open MPI | MPICH | memcpy | "
           "sluice/OMPI [95%] | sluice/MPICH [95%] | vs faster MPI | sluice/memcpy [95%] |")
    lines.append(hdr)
    lines.append("|" + "---|" * 13)
    for r in rows:
        blk = str(r["block"]) if r["block"] else "-"
        lines.append(f"| {r['case']} | {r['kernel']} | {blk} | {r['bytes'] // 1024} | {r['dir']} | "
                     f"{r['sluice']:.2f} | {r['ompi']:.2f} | {r['mpich']:.2f} | {r['memcpy']:.2f} | "
                     f"{fmt_ci(r['p_ompi'])} | {fmt_ci(r['p_mpich'])} | {r['vs_faster']} | "
                     f"{fmt_ci(r['p_memcpy'])} |")
    verdict, geo, tally, big, worst = targets(rows)
    summary = [f"- {d}: geometric mean over the {n} cases of sluice/Open MPI **{fmt_ci(go)}**, "
               f"sluice/MPICH **{fmt_ci(gm)}**" for d, (go, gm, n) in geo.items()]
    summary.append(f"- against the faster MPI engine (both intervals): {len(tally['faster'])} faster, "
                   f"{len(tally['parity'])} at parity (interval not above 1, not below {1 - AA_FLOOR:.2f}), "
                   f"{len(tally['slower'])} slower")
    for k in ("parity", "slower"):
        for r in tally[k]:
            summary.append(f"  - {r['case']} {r['dir']} ({k}): Open MPI {fmt_ci(r['p_ompi'], 3)}, "
                           f"MPICH {fmt_ci(r['p_mpich'], 3)}")
    summary.append(f"- blocks of {BIG_BLOCK} B or more ({', '.join(sorted({r['case'] for r in big}, key=order.index))}): "
                   f"sluice/memcpy medians {min(r['p_memcpy'][0] for r in big):.2f}-"
                   f"{max(r['p_memcpy'][0] for r in big):.2f}; lowest interval {worst['case']} {worst['dir']} "
                   f"{fmt_ci(worst['p_memcpy'])}")
    summary.append("")
    summary.append("| target | met | measured (median [95% interval]) |")
    summary.append("|---|---|---|")
    for name, ok, val in verdict:
        summary.append(f"| {name} | {ok} | {val} |")

    print()
    print("GB/s of packed bytes, median over samples (sluice, memcpy: mean of the two runs' medians);")
    print("ratios: sluice's speed over the other's, median of the paired rounds [95% interval]")
    print("\n".join(lines))
    print()
    print("\n".join(summary))

    md = [
        f"Measured {m.get('date', '?')}, commit {m.get('commit', '?')}, {m.get('host_cpus', '?')} shared cores "
        f"({m.get('cpu', '?')}), load average {m.get('loadavg_start', '?')} -> {m.get('loadavg_end', '?')}; "
        f"Open MPI {m.get('openmpi', '?')}, MPICH {m.get('mpich', '?')}; {m.get('case_ms', '?')}-{m.get('max_ms', '?')} ms per case and MPI "
        f"(until the intervals against the MPI are within +-{m.get('tol', '?')}).",
        "",
        "GB/s of packed bytes, median of the samples (sluice and memcpy: mean of the medians of the two runs); "
        "ratios are sluice's speed over the other engine's, paired by round within one run: median of the rounds "
        "and its 95% interval (sluice/memcpy: the lower of the two runs).",
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
    fig, axes = plt.subplots(3, 1, figsize=(14, 12), sharex=True)
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
    # Paired ratios with their intervals: what the verdicts are read from.
    ax = axes[2]
    ratio_panel(ax, rows, order)
    ax.axhline(1.0, color="black", lw=0.8)
    ax.set_yscale("log")
    ax.set_ylabel("sluice speed / MPI engine (log)")
    ax.grid(axis="y", which="both", alpha=0.3)
    ax.set_title("sluice over each MPI's engine: median of paired rounds, 95% interval")
    ax.legend(ncol=4, loc="upper left", fontsize=8)
    axes[2].set_xticks(x)
    axes[2].set_xticklabels([f"{c}\n{info[c]['kernel'].replace('block-indexed', 'blk-indexed')}" for c in order], fontsize=8)
    axes[0].legend(ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.02), fontsize=9, framealpha=0.9)
    fig.suptitle(f"sluice datatype engine vs Open MPI / MPICH MPI_Pack/MPI_Unpack ({m.get('date', '')[:10]}, "
                 f"{m.get('host_cpus', '?')} shared cores)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "ddt.png"), dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
