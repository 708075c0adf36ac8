#!/usr/bin/python3
"""Verdicts, table and plot of scripts/bench-ddt-sweep.sh.

Reads OUTDIR/{openmpi,mpich}.csv (sluice-ddt-bench's CSV) with their .shapes.tsv and
OUTDIR/meta.txt; writes OUTDIR/sweep.md and OUTDIR/sweep.png (matplotlib: Debian's
/usr/bin/python3). A ratio is sluice's speed over the MPI engine's, paired by round within one
process (median and 95% interval). Per shape and direction: "pass" when the median is at least
FLOOR, "fail" when the whole interval lies below FLOOR, else "inconclusive" (issue 28: every
shape >= 0.97x of the MPI's engine; the geometric mean >= 1.5x).
"""
import csv
import math
import os
import re
import sys

MPIS = [("openmpi", "Open MPI"), ("mpich", "MPICH")]
DIRS = ["pack", "unpack"]
FLOOR = 0.97
GEOMEAN_TARGET = 1.5
WORST = 15


def load(out):
    rows, shapes, meta, learn = {}, {}, {}, {}
    for mpi, _ in MPIS:
        path = os.path.join(out, f"{mpi}.csv")
        if not os.path.exists(path):
            raise SystemExit(f"plot_ddt_sweep: {path} missing")
        with open(path) as f:
            for r in csv.DictReader(f):
                if r["engine"] != "mpi":
                    continue
                rows[(mpi, r["case"], r["dir"])] = dict(
                    kernel=r["kernel"], bytes=int(r["packed_bytes"]), block=int(r["block"]), count=int(r["count"]),
                    med=float(r["pair_median"]), lo=float(r["pair_lo"]), hi=float(r["pair_hi"]))
        lt = path + ".learn.tsv"
        if os.path.exists(lt):
            with open(lt) as f:
                for r in csv.DictReader(f, delimiter="\t"):
                    learn[(mpi, r["case"], r["dir"])] = (int(r["learning_calls"]), float(r["cost_in_calls"]))
        tsv = path + ".shapes.tsv"
        if os.path.exists(tsv):
            with open(tsv) as f:
                for line in f:
                    c, _, d = line.rstrip("\n").partition("\t")
                    shapes[c] = d
    mp = os.path.join(out, "meta.txt")
    if os.path.exists(mp):
        for line in open(mp):
            k, _, v = line.strip().partition("=")
            meta[k] = v
    return rows, shapes, meta, learn


def is_shape(case):
    """A sweep shape ("s<seed>:<index>"), not a named case."""
    return re.fullmatch(r"s\d+:\d+", case) is not None


def split(r):
    """Whether the engine choice learns from pieces of this row's calls (datatype::choice)."""
    if not r or r["count"] < 32:
        return False
    size = max(r["bytes"] // r["count"], 1)
    piece = max(r["count"] // 64, -(-8192 // size), 1)
    return 4 * piece <= r["count"]


def verdict(r):
    if r["med"] >= FLOOR:
        return "pass"
    return "fail" if r["hi"] < FLOOR else "inconclusive"


def main(out):
    rows, shapes, meta, learn = load(out)
    lines = [f"# Datatype shape sweep (seed {meta.get('seed', '?')}, {meta.get('shapes', '?')} shapes, "
             f"{'engine choice on' if meta.get('chooser') == '1' else 'sluice kernel alone'})", ""]
    lines.append(f"{meta.get('cpu', '?')}, {meta.get('host_cpus', '?')} CPUs, Open MPI {meta.get('openmpi', '?')}, "
                 f"MPICH {meta.get('mpich', '?')}, commit {meta.get('commit', '?')}, {meta.get('date', '?')}, "
                 f"load {meta.get('loadavg_start', '?')} -> {meta.get('loadavg_end', '?')}")
    lines += ["", "| MPI | dir | shapes | pass | inconclusive | fail | geomean | min median | chose MPI's engine |",
              "|---|---|---|---|---|---|---|---|---|"]
    ok = True
    for mpi, name in MPIS:
        for d in DIRS:
            rs = [r for (m, c, dd), r in rows.items() if m == mpi and dd == d and is_shape(c)]
            if not rs:
                continue
            v = [verdict(r) for r in rs]
            g = math.exp(sum(math.log(r["med"]) for r in rs) / len(rs))
            chose = sum(1 for r in rs if "+mpi" in r["kernel"] and (r["kernel"].endswith("+mpi") or r["kernel"].endswith(f"-{d}")))
            ok &= v.count("fail") == 0 and g >= GEOMEAN_TARGET
            lines.append(f"| {name} | {d} | {len(rs)} | {v.count('pass')} | {v.count('inconclusive')} | {v.count('fail')} | "
                         f"{g:.2f} | {min(r['med'] for r in rs):.3f} | {chose} |")
    lines += ["", f"Targets: no shape fails (whole interval below {FLOOR}); geometric mean >= {GEOMEAN_TARGET}: "
              f"**{'met' if ok else 'not met'}**."]
    if learn:
        lines += ["", "## What learning the engine choice cost", "",
                  "Per shape and direction that learned (calls of at least 2 KiB): the learning calls' time beyond as many "
                  "calls on the decided engine, in decided calls (one pack or unpack = 1.0; noise makes some negative).", "",
                  "| MPI | dir | calls | learned | median cost | 90th percentile | max | < 0.05 of one call |",
                  "|---|---|---|---|---|---|---|---|"]
        for mpi, name in MPIS:
            for d in DIRS:
                for kind in ("split", "whole"):
                    cs = sorted(v[1] for (m, c, dd), v in learn.items()
                                if m == mpi and dd == d and v[0] > 0 and is_shape(c) and split(rows.get((m, c, dd))) == (kind == "split"))
                    if cs:
                        lines.append(f"| {name} | {d} | {kind} | {len(cs)} | {cs[len(cs) // 2]:.3f} | {cs[int(len(cs) * 0.9)]:.3f} | "
                                     f"{cs[-1]:.3f} | {sum(1 for c in cs if c < 0.05)} |")
    named = sorted(kv for kv in rows.items() if not is_shape(kv[0][1]))
    if named:
        lines += ["", "## The shapes issue 28 reported", "", "| MPI | case | dir | kernel | ratio [95%] | >= 1.0 |", "|---|---|---|---|---|---|"]
        for (mpi, c, d), r in named:
            lines.append(f"| {dict(MPIS)[mpi]} | {c} | {d} | {r['kernel']} | {r['med']:.3f} [{r['lo']:.3f}, {r['hi']:.3f}] | "
                         f"{'yes' if r['med'] >= 1.0 else 'no'} |")
    lines += ["", f"## The {WORST} lowest ratios", "",
              "| MPI | shape | dir | kernel | packed bytes | min block | ratio [95%] | verdict | type |", "|---|---|---|---|---|---|---|---|---|"]
    worst = sorted((kv for kv in rows.items() if is_shape(kv[0][1])), key=lambda kv: kv[1]["med"])[:WORST]
    for (mpi, c, d), r in worst:
        lines.append(f"| {dict(MPIS)[mpi]} | {c} | {d} | {r['kernel']} | {r['bytes']} | {r['block']} | "
                     f"{r['med']:.3f} [{r['lo']:.3f}, {r['hi']:.3f}] | {verdict(r)} | `{shapes.get(c, '?')}` |")
    text = "\n".join(lines) + "\n"
    open(os.path.join(out, "sweep.md"), "w").write(text)
    print(text)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_ddt_sweep: matplotlib missing, no PNG", file=sys.stderr)
        return
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.8), sharey=True)
    colors = {"openmpi": "tab:blue", "mpich": "tab:orange"}
    marks = {"pack": "o", "unpack": "^"}
    for ax, key, label in [(axes[0], "block", "smallest contiguous block (bytes)"), (axes[1], "bytes", "packed bytes")]:
        for mpi, name in MPIS:
            for d in DIRS:
                pts = [(max(r[key], 1), r["med"]) for (m, _, dd), r in rows.items() if m == mpi and dd == d]
                if pts:
                    ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=12, alpha=0.6, c=colors[mpi], marker=marks[d],
                               label=f"{name} {d}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.axhline(1.0, color="gray", lw=0.8)
        ax.axhline(FLOOR, color="red", lw=0.8, ls="--")
        ax.set_xlabel(label)
        ax.grid(True, which="both", alpha=0.2)
    axes[0].set_ylabel("sluice / MPI engine speed (median paired ratio)")
    axes[0].legend(fontsize=8)
    fig.suptitle(f"Shape sweep: sluice (MPI_Pack/MPI_Unpack) vs the MPI's engine, seed {meta.get('seed', '?')}")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "sweep.png"), dpi=110)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "bench-out/ddt-sweep")
