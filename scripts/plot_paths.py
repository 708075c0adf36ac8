#!/usr/bin/env python3
"""Summary of scripts/bench-p2p-paths.sh: OUTDIR/{openmpi,mpich}.txt ("path CASE BYTES t_auto
t_mpi t_staged t_pipelined t_arena BEST ratio lo hi rounds" lines) -> paths.csv, paths.md (a
table per MPI with the verdict against "auto >= 0.95x the best forced path") and paths.png
(speed of the automatic choice relative to the best alternative, per case and size)."""
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from plotlib import measured_line, read_meta, write_csv  # noqa: E402

MPIS = [("openmpi", "Open MPI"), ("mpich", "MPICH")]
PATHS = ["auto", "mpi", "staged", "pipelined", "arena"]
BOUND = 1 / 0.95  # auto's time over the best's


def verdict(lo, hi):
    return "pass" if hi <= BOUND else ("FAIL" if lo > BOUND else "inconclusive")


def size_label(b):
    return f"{b / (1 << 20):.0f} MiB" if b >= 1 << 20 else f"{b / 1024:.0f} KiB"


def main():
    out = sys.argv[1]
    rows = []
    for mpi, _ in MPIS:
        path = os.path.join(out, mpi + ".txt")
        if not os.path.exists(path):
            continue
        for line in open(path):
            f = line.split()
            if f and f[0] == "path":
                t = [float(x) for x in f[3:8]]
                rows.append([mpi, f[1], int(f[2])] + t + [f[8], float(f[9]), float(f[10]), float(f[11]), int(f[12])])
    write_csv(os.path.join(out, "paths.csv"),
              "mpi,case,bytes,t_auto_us,t_mpi_us,t_staged_us,t_pipelined_us,t_arena_us,best,ratio,lo,hi,rounds", rows)
    meta = read_meta(out)
    md = [measured_line(meta, f"sizes={meta.get('sizes', '')}"), "",
          "Median one-way time per message (us) on each path; ratio = automatic / best forced "
          "alternative, median of per-round ratios [95% interval] (> 1: the automatic choice is "
          "slower). Pass: the interval's upper end <= 1/0.95.", ""]
    counts = {}
    for mpi, name in MPIS:
        mine = [r for r in rows if r[0] == mpi]
        if not mine:
            continue
        md += [f"**{name}**", "", "| case | bytes | auto | mpi | staged | pipelined | arena | best | ratio [95% CI] | verdict |",
               "|---|---|---|---|---|---|---|---|---|---|"]
        for r in mine:
            v = verdict(r[10], r[11])
            counts[(mpi, v)] = counts.get((mpi, v), 0) + 1
            times = " | ".join(f"{x:.0f}" for x in r[3:8])
            md.append(f"| {r[1]} | {size_label(r[2])} | {times} | {r[8]} | {r[9]:.2f} [{r[10]:.2f}, {r[11]:.2f}] | {v} |")
        md.append("")
        md.append(f"{name}: " + ", ".join(f"{counts.get((mpi, v), 0)} {v}" for v in ("pass", "inconclusive", "FAIL")))
        md.append("")
    open(os.path.join(out, "paths.md"), "w").write("\n".join(md) + "\n")

    sizes_req = [x for x in meta.get("sizes", "").split(",") if x]
    fig, axes = plt.subplots(1, 2, figsize=(13, 5), sharey=True)
    for ax, (mpi, name) in zip(axes, MPIS):
        mine = [r for r in rows if r[0] == mpi]
        cases = list(dict.fromkeys(r[1] for r in mine))
        # The i-th size of each case is the i-th requested size (some cases land near it).
        nth = {}
        for r in mine:
            nth.setdefault(r[1], []).append(r)
        if not nth:
            ax.set_title(f"{name}: not measured in this run")
            continue
        nsizes = max(len(v) for v in nth.values())
        width = 0.8 / nsizes
        for j in range(nsizes):
            xs, ys, errs = [], [], [[], []]
            for i, c in enumerate(cases):
                if j < len(nth[c]):
                    r = nth[c][j]
                    speed = 1 / r[9]
                    xs.append(i + (j - (nsizes - 1) / 2) * width)
                    ys.append(speed)
                    errs[0].append(max(0, speed - 1 / r[11]))
                    errs[1].append(max(0, 1 / r[10] - speed))
            label = size_label(sorted(int(x) for x in sizes_req)[j]) if j < len(sizes_req) else f"size {j}"
            ax.bar(xs, ys, width, yerr=errs, capsize=2, label=f"~{label}")
        ax.axhline(0.95, color="red", linestyle="--", linewidth=1, label="target 0.95")
        ax.axhline(1.0, color="gray", linewidth=0.8)
        ax.set_xticks(range(len(cases)))
        ax.set_xticklabels(cases, rotation=60, ha="right", fontsize=8)
        ax.set_title(f"{name}: automatic path vs best forced path")
        ax.set_ylim(0, 1.5)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("speed relative to the best alternative (median, 95% CI)")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "paths.png"), dpi=110)


if __name__ == "__main__":
    main()
