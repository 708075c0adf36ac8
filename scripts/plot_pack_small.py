#!/usr/bin/env python3
"""Summary of scripts/bench-pack-small.sh: OUTDIR/{openmpi,mpich}.txt ("abci CASE DIR BYTES
SLUICE_BEST SLUICE_MEDIAN MPI_BEST MPI_MEDIAN RATIO LO HI" lines, ns per call, ratio = MPI time /
sluice time) -> pack_small.csv, pack_small.md (table) and pack_small.png (ns per call of both
engines, per case, pack and unpack, both MPIs; and DIR "commit": construct + commit + free)."""
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from plotlib import measured_line, read_meta, write_csv  # noqa: E402

MPIS = [("openmpi", "Open MPI"), ("mpich", "MPICH")]


def main():
    out = sys.argv[1]
    rows = []
    for mpi, _ in MPIS:
        for line in open(os.path.join(out, mpi + ".txt")):
            f = line.split()
            if f and f[0] == "abci":
                rows.append([mpi, f[1], f[2], int(f[3])] + [float(x) for x in f[4:11]])
    write_csv(os.path.join(out, "pack_small.csv"), "mpi,case,dir,bytes,sluice_best_ns,sluice_median_ns,mpi_best_ns,mpi_median_ns,ratio,lo,hi", rows)
    meta = read_meta(out)
    md = [measured_line(meta, f"rounds={meta.get('rounds', '')}"),
          "",
          "ns per call (best / median of the rounds); speedup = MPI's time / sluice's time, median of the "
          "paired rounds [95% interval] (> 1: sluice faster).",
          "",
          "| MPI | case | dir | bytes | sluice ns | MPI engine ns | speedup [95%] |",
          "|---|---|---|---|---|---|---|"]
    slower = []
    for r in rows:
        mpi, case, d, b, sb, sm, mb, mm, ratio, lo, hi = r
        md.append(f"| {dict(MPIS)[mpi]} | {case} | {d} | {b} | {sb:.1f} / {sm:.1f} | {mb:.1f} / {mm:.1f} | "
                  f"{ratio:.2f} [{lo:.2f}, {hi:.2f}] |")
        if hi < 1.0:
            slower.append(f"{dict(MPIS)[mpi]} {case} {d} {ratio:.2f}")
    md += ["", "Slower than the MPI's engine (interval below 1): " + (", ".join(slower) if slower else "none")]
    open(os.path.join(out, "pack_small.md"), "w").write("\n".join(md) + "\n")
    print("\n".join(md))

    dirs = [d for d in ["pack", "unpack", "commit"] if any(r[2] == d for r in rows)]
    fig, axes = plt.subplots(len(dirs), 2, figsize=(13, 4 * len(dirs)), sharey=False, squeeze=False)
    for i, (mpi, label) in enumerate(MPIS):
        for j, d in enumerate(dirs):
            ax = axes[j][i]
            sel = [r for r in rows if r[0] == mpi and r[2] == d]
            xs = range(len(sel))
            ax.bar([x - 0.2 for x in xs], [r[5] for r in sel], 0.4, label="sluice")
            ax.bar([x + 0.2 for x in xs], [r[7] for r in sel], 0.4, label=f"{label}'s engine")
            ax.set_xticks(list(xs))
            ax.set_xticklabels([r[1] for r in sel], rotation=35, ha="right", fontsize=8)
            ax.set_ylabel("ns per call (median)")
            ax.set_title(f"{label}: construct + MPI_Type_commit + MPI_Type_free" if d == "commit" else f"{label}: MPI_{d.capitalize()}")
            for x, r in zip(xs, sel):
                ax.annotate(f"{r[8]:.1f}x", (x, max(r[5], r[7])), ha="center", va="bottom", fontsize=7)
            ax.legend(fontsize=8)
    fig.suptitle("Small MPI_Pack/MPI_Unpack and a type's life: ns per call (labels: speedup over the MPI)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "pack_small.png"), dpi=110)


if __name__ == "__main__":
    main()
