#!/usr/bin/env python3
"""Summary of scripts/bench-overlap.sh: OUTDIR/{openmpi,mpich}.txt ("config NAME" then
"overlap BYTES T_COMM_US T_TOTAL_US C_US OVERLAP Q1 Q3" lines) -> overlap.csv, overlap.md
(table) and overlap.png (hidden share of the transfer per configuration, size and MPI)."""
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from plotlib import measured_line, read_meta, write_csv  # noqa: E402

MPIS = [("openmpi", "Open MPI"), ("mpich", "MPICH")]
CONFIGS = ["bare", "sluice", "sluice+thread"]


def main():
    out = sys.argv[1]
    rows = []
    for mpi, _ in MPIS:
        cfg = None
        for line in open(os.path.join(out, mpi + ".txt")):
            f = line.split()
            if f and f[0] == "config":
                cfg = f[1]
            elif f and f[0] == "overlap":
                rows.append([mpi, cfg, int(f[1])] + [float(x) for x in f[2:8]])
    write_csv(os.path.join(out, "overlap.csv"), "mpi,config,bytes,t_comm_us,t_total_us,compute_us,overlap,q1,q3", rows)
    meta = read_meta(out)
    md = [measured_line(meta, f"rounds={meta.get('rounds', '')}"),
          "",
          "Medians over the rounds; overlap = hidden share of the shorter of transfer and computation "
          "[interquartile range] (1: fully hidden).",
          "",
          "| MPI | configuration | packed bytes | transfer alone us | transfer + compute us | compute us | overlap [IQR] |",
          "|---|---|---|---|---|---|---|"]
    for mpi, cfg, b, tc, tt, cu, o, q1, q3 in rows:
        md.append(f"| {dict(MPIS)[mpi]} | {cfg} | {b >> 20} MiB | {tc:.0f} | {tt:.0f} | {cu:.0f} | {o:.2f} [{q1:.2f}, {q3:.2f}] |")
    open(os.path.join(out, "overlap.md"), "w").write("\n".join(md) + "\n")
    print("\n".join(md))
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    sizes = sorted({r[2] for r in rows})
    width = 0.8 / len(CONFIGS)
    for ax, (mpi, name) in zip(axes, MPIS):
        for k, cfg in enumerate(CONFIGS):
            pts = {r[2]: r for r in rows if r[0] == mpi and r[1] == cfg}
            xs = [i + (k - 1) * width for i in range(len(sizes))]
            ys = [pts[s][6] if s in pts else 0 for s in sizes]
            lo = [max(0.0, y - (pts[s][7] if s in pts else 0)) for s, y in zip(sizes, ys)]
            hi = [max(0.0, (pts[s][8] if s in pts else 0) - y) for s, y in zip(sizes, ys)]
            ax.bar(xs, ys, width, yerr=[lo, hi], capsize=3, label=cfg)
        ax.set_xticks(range(len(sizes)))
        ax.set_xticklabels([f"{s >> 20} MiB" for s in sizes])
        ax.set_title(name)
        ax.set_ylim(0, 1.05)
        ax.set_xlabel("pipelined message (packed)")
    axes[0].set_ylabel("share of the transfer hidden behind computation")
    axes[0].legend()
    fig.suptitle("Overlap of a pipelined transfer with computation (2 ranks)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "overlap.png"), dpi=110)


if __name__ == "__main__":
    main()
