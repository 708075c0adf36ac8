#!/usr/bin/python3
"""Combine several scripts/bench-ddt.sh runs into one verdict on issue 3's targets.

    combine_ddt.py OUTDIR RUNDIR...      (each RUNDIR holds a run's summary.csv, from plot_ddt.py)

One run's verdict can be moved by one disturbed moment: on this 2-core VM another tenant's
load comes and goes within a run, and each full run so far flagged one different memory-bound
pair just below the A/A floor, while the same pair measured at parity in the other runs
(docs/benchmarks.md). So every ratio is read over the runs. For each pair (case, direction,
engine), the combined interval is the median over the runs of the per-run median, of the lower
end and of the upper end. This is the interval of the typical run: one disturbed run out of
three cannot move it. The verdicts are then those of plot_ddt.py, applied to the combined
intervals. The script also counts, per pair, the runs that called it slower.

Writes OUTDIR/combined.csv, OUTDIR/combined.md and OUTDIR/combined.png (the ratio intervals
per case; needs matplotlib: Debian's /usr/bin/python3), and prints the table and the verdicts.
"""
import csv
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_ddt import AA_FLOOR, DIRS, fmt_ci, ratio_panel, side, targets
from plotlib import read_meta

# summary.csv column stems of the three paired ratios: name -> (median, lo, hi) columns.
RATIOS = {"p_ompi": "sluice_over_openmpi", "p_mpich": "sluice_over_mpich", "p_memcpy": "sluice_over_memcpy"}


def load_run(d):
    path = os.path.join(d, "summary.csv")
    if not os.path.exists(path):
        raise SystemExit(f"combine_ddt: {path} missing (run scripts/plot_ddt.py on that run first)")
    rows = {}
    order = []
    with open(path) as f:
        for r in csv.DictReader(f):
            key = (r["case"], r["dir"])
            order.append(key)
            rows[key] = dict(block=int(r["block"]), kernel=r["kernel"],
                             **{k: tuple(float(r[f"{c}{s}"]) for s in ("", "_lo", "_hi")) for k, c in RATIOS.items()})
    return rows, order


def combine(ivs):
    """The median over runs of each of (median, lo, hi)."""
    return tuple(statistics.median(iv[i] for iv in ivs) for i in range(3))


def vs_faster(p_ompi, p_mpich):
    s = (side(p_ompi), side(p_mpich))
    return "slower" if "slower" in s else ("faster" if s == ("faster", "faster") else "parity")


def main():
    if len(sys.argv) < 3:
        raise SystemExit("usage: combine_ddt.py OUTDIR RUNDIR...")
    out, dirs = sys.argv[1], sys.argv[2:]
    runs = [load_run(d) for d in dirs]
    order = runs[0][1]
    for rows, o in runs[1:]:
        if o != order:
            raise SystemExit("combine_ddt: the runs do not cover the same cases")
    rows = []
    for key in order:
        per = [r[key] for r, _ in runs]
        row = dict(case=key[0], dir=key[1], block=per[0]["block"], kernel=per[0]["kernel"])
        for k in RATIOS:
            row[k] = combine([p[k] for p in per])
        row["vs_faster"] = vs_faster(row["p_ompi"], row["p_mpich"])
        row["runs_slower"] = sum(vs_faster(p["p_ompi"], p["p_mpich"]) == "slower" for p in per)
        rows.append(row)

    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "combined.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["case", "dir", "block", *(f"{c}{s}" for c in RATIOS.values() for s in ("", "_lo", "_hi")),
                    "vs_faster_mpi", "runs_slower"])
        for r in rows:
            w.writerow([r["case"], r["dir"], r["block"], *(f"{x:.3f}" for k in RATIOS for x in r[k]), r["vs_faster"],
                        r["runs_slower"]])

    n = len(runs)
    lines = ["| case | dir | block B | sluice/OMPI [95%] | sluice/MPICH [95%] | vs faster MPI | runs slower | "
             "sluice/memcpy [95%] |", "|" + "---|" * 8]
    for r in rows:
        blk = str(r["block"]) if r["block"] else "-"
        lines.append(f"| {r['case']} | {r['dir']} | {blk} | {fmt_ci(r['p_ompi'])} | {fmt_ci(r['p_mpich'])} | "
                     f"{r['vs_faster']} | {r['runs_slower']} of {n} | {fmt_ci(r['p_memcpy'])} |")
    verdict, _, tally, _, _ = targets(rows)
    summary = [f"Combined over {n} runs: each interval is the median over the runs of the per-run median and ends.",
               ""]
    for k in ("parity", "slower"):
        for r in tally[k]:
            summary.append(f"- {r['case']} {r['dir']} ({k}): Open MPI {fmt_ci(r['p_ompi'], 3)}, MPICH "
                           f"{fmt_ci(r['p_mpich'], 3)}; slower in {r['runs_slower']} of {n} runs")
    summary += ["", "| target | met | combined (median [95% interval]) |", "|---|---|---|"]
    summary += [f"| {name} | {ok} | {val} |" for name, ok, val in verdict]
    metas = [read_meta(d) for d in dirs]
    head = [f"Runs: " + "; ".join(f"{os.path.basename(os.path.normpath(d))} ({m.get('date', '?')}, load "
                                  f"{m.get('loadavg_start', '?')} -> {m.get('loadavg_end', '?')})"
                                  for d, m in zip(dirs, metas)), ""]
    print("\n".join(head + lines + [""] + summary))
    with open(os.path.join(out, "combined.md"), "w") as f:
        f.write("\n".join(head + lines + [""] + summary + [""]))

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("combine_ddt: matplotlib missing, no combined.png", file=sys.stderr)
        return 0
    cases = [c for c, d in order if d == DIRS[0]]
    fig, ax = plt.subplots(figsize=(14, 5))
    ratio_panel(ax, rows, cases)
    ax.axhline(1.0, color="black", lw=0.8)
    ax.axhline(1.0 - AA_FLOOR, color="red", lw=0.6, ls="--", label=f"A/A floor {1 - AA_FLOOR:.2f}")
    ax.set_yscale("log")
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels(cases, fontsize=8)
    ax.set_ylabel("sluice speed / MPI engine (log)")
    ax.grid(axis="y", which="both", alpha=0.3)
    ax.legend(ncol=5, loc="upper left", fontsize=8)
    ax.set_title(f"sluice over each MPI's engine, combined over {n} runs (median of per-run medians and ends)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "combined.png"), dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
