#!/usr/bin/python3
"""Plot of sluice-map --bench (embedded in the binary): improvement of the maximum link
congestion over the default mapping, per CPU-GPU combination, for Strategy 1, Strategy 2 and
MAGC (greedy phases 2 and 3, and Scotch's where the CSV has them), one panel per cluster (the
paper's Fig. 4 and 5, in congestion).

usage: plot_map_bench.py MAP.csv OUT.png"""
import csv
import sys


def main():
    rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["strategy1"]]
    clusters = list(dict.fromkeys(r["cluster"] for r in rows))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(len(clusters), 1, figsize=(15, 4.2 * len(clusters)), squeeze=False)
    for ax, cl in zip(axes[:, 0], clusters):
        rs = [r for r in rows if r["cluster"] == cl]
        names = [f'{r["cpu"]}-{r["gpu"]}' for r in rs]
        bars = [("strategy1", "Strategy 1"), ("strategy2", "Strategy 2"), ("magc", "MAGC")]
        if rs[0].get("magc_scotch"):
            bars.append(("magc_scotch", "MAGC, Scotch in phases 2-3"))
        w = 0.8 / len(bars)
        for k, (col, label) in enumerate(bars):
            imp = [100.0 * (1.0 - float(r[col]) / float(r["default"])) for r in rs]
            ax.bar([i + (k - (len(bars) - 1) / 2) * w for i in range(len(rs))], imp, w, label=label)
        ax.axhline(0, color="black", lw=0.8)
        ax.axhline(80, color="grey", ls="--", lw=0.8)
        ax.set_xticks(range(len(rs)))
        ax.set_xticklabels(names, rotation=60, fontsize=8)
        ax.set_ylabel("max congestion vs default (%)")
        ax.set_title(f"{cl}: improvement over the default mapping, 64 processes, 1 MiB (dashed: 80%)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=100)


if __name__ == "__main__":
    main()
