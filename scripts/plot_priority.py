#!/usr/bin/env python3
"""Summary of scripts/bench-p2p-priority.sh: OUTDIR/{openmpi,mpich}.txt ("priority PATH BYTES
FIFO_URGENT_US PRIO_URGENT_US SOONER LO HI FIFO_ALL_US PRIO_ALL_US" lines) -> priority.csv,
priority.md (table) and priority.png (how much sooner the urgent message completes)."""
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from plotlib import measured_line, read_meta, write_csv  # noqa: E402

MPIS = [("openmpi", "Open MPI"), ("mpich", "MPICH")]
PATHS = ["arena", "pipelined"]


def main():
    out = sys.argv[1]
    rows = []
    for mpi, _ in MPIS:
        for line in open(os.path.join(out, mpi + ".txt")):
            f = line.split()
            if f and f[0] == "priority":
                rows.append([mpi, f[1], int(f[2])] + [float(x) for x in f[3:10]])
    write_csv(os.path.join(out, "priority.csv"),
              "mpi,path,bytes,fifo_urgent_us,prio_urgent_us,sooner,lo,hi,fifo_all_us,prio_all_us", rows)
    meta = read_meta(out)
    md = [measured_line(meta, f"rounds={meta.get('rounds', '')}"),
          "",
          "8 messages and then an urgent one, all there before the receives are posted; medians over the "
          "rounds. Sooner = 1 - urgent time with `sluice_priority=5` / urgent time under FIFO, median of "
          "the paired rounds [95% interval]; all = until every message completed.",
          "",
          "| MPI | path | bytes each | urgent, FIFO us | urgent, priority us | sooner [95% CI] | all, FIFO us | all, priority us |",
          "|---|---|---|---|---|---|---|---|"]
    for mpi, path, b, fu, pu, s, lo, hi, fa, pa in rows:
        md.append(f"| {dict(MPIS)[mpi]} | {path} | {b >> 20} MiB | {fu:.0f} | {pu:.0f} | {s:.2f} [{lo:.2f}, {hi:.2f}] | "
                  f"{fa:.0f} | {pa:.0f} |")
    open(os.path.join(out, "priority.md"), "w").write("\n".join(md) + "\n")
    print("\n".join(md))
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    sizes = sorted({r[2] for r in rows})
    width = 0.8 / len(PATHS)
    for ax, (mpi, name) in zip(axes, MPIS):
        for k, path in enumerate(PATHS):
            pts = {r[2]: r for r in rows if r[0] == mpi and r[1] == path}
            xs = [i + (k - 0.5) * width for i in range(len(sizes))]
            ys = [pts[s][5] if s in pts else 0 for s in sizes]
            lo = [max(0.0, y - pts[s][6]) if s in pts else 0 for s, y in zip(sizes, ys)]
            hi = [max(0.0, pts[s][7] - y) if s in pts else 0 for s, y in zip(sizes, ys)]
            ax.bar(xs, ys, width, yerr=[lo, hi], capsize=3, label=path)
        ax.axhline(1 - 1 / 9, color="grey", linestyle=":", linewidth=1, label="bound (1 of 9 messages' work)")
        ax.set_xticks(range(len(sizes)))
        ax.set_xticklabels([f"{s >> 20} MiB" for s in sizes])
        ax.set_title(name)
        ax.set_ylim(min(0.0, min((r[6] for r in rows), default=0)) - 0.05, 1.0)
        ax.set_xlabel("message size (packed)")
    axes[0].set_ylabel("urgent message completes this much sooner than FIFO")
    axes[0].legend(fontsize=8)
    fig.suptitle("sluice_priority: an urgent pipelined receive among 8 others (2 ranks)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "priority.png"), dpi=110)


if __name__ == "__main__":
    main()
