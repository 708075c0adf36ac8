#!/usr/bin/python3
"""Plot scripts/bench-rwcp.sh results (the paper's Fig. 8, 13a, 13b, 18 on this machine).

Reads OUTDIR/{fig8,fig13a,fig13b,suite,fig18}.csv written by sluice-rwcp-bench and writes
OUTDIR/rwcp.png (four panels; needs matplotlib: run it with Debian's /usr/bin/python3).
"""
import csv
import math
import os
import sys


def rows(out, name):
    path = os.path.join(out, f"{name}.csv")
    if not os.path.exists(path):
        raise SystemExit(f"plot_rwcp: {path} missing")
    with open(path) as f:
        return list(csv.DictReader(f))


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: plot_rwcp.py OUTDIR")
    out = sys.argv[1]
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    f8, f13a, f13b, f18 = rows(out, "fig8"), rows(out, "fig13a"), rows(out, "fig13b"), rows(out, "fig18")
    fig, ax = plt.subplots(2, 2, figsize=(12, 9))
    a = ax[0][0]
    x = [int(r["block"]) for r in f8]
    for col in [c for c in f8[0] if not c.endswith(("_best", "_catchup")) and c != "block"]:
        a.plot(x, [float(r[col]) for r in f8], marker="o", label=col)
    a.set(xscale="log", yscale="log", xlabel="block size (bytes)", ylabel="unpack GB/s (median)",
          title="Fig. 8: 4 MiB vector, stride 2 x block")
    a.legend()
    a = ax[0][1]
    x = [int(r["workers"]) for r in f13a]
    for col in ["specialized", "rwcp", "rocp", "local", "kernel"]:
        a.plot(x, [float(r[col]) for r in f13a], marker="o", label=col + (" (1 thread)" if col == "specialized" else ""))
    a.set(xlabel="workers", ylabel="unpack GB/s (median)", title="Fig. 13a: 2 KiB blocks vs workers", xticks=x)
    a.legend()
    a = ax[1][0]
    x = [int(r["block"]) for r in f13b]
    for col in [c for c in f13b[0] if c.startswith("bytes_")]:
        a.plot(x, [int(r[col]) for r in f13b], marker="o", label="RW-CP " + col.replace("bytes_p", "P = "))
    a.set(xscale="log", xlabel="block size (bytes)", ylabel="checkpoint bytes", title="Fig. 13b: checkpoint memory")
    a.legend()
    a = ax[1][1]
    names = [r["case"] for r in f18]
    vals = [float(r["reuses_vs_rwcp_p1"]) if r["reuses_vs_rwcp_p1"] != "never" else math.nan for r in f18]
    a.bar(names, [v if not math.isnan(v) else 0 for v in vals])
    for i, v in enumerate(vals):
        a.text(i, 0, "never" if math.isnan(v) else f"{v:.2g}", rotation=90, ha="center", va="bottom", fontsize=7)
    a.set(ylabel="reuses", title="Fig. 18: unpacks to amortize checkpoint creation (vs RW-CP 1 worker)")
    a.tick_params(axis="x", rotation=60)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "rwcp.png"), dpi=110)
    print(f"plot_rwcp: wrote {os.path.join(out, 'rwcp.png')}")


if __name__ == "__main__":
    main()
