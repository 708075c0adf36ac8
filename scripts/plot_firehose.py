#!/usr/bin/env python3
"""Summary of scripts/bench-firehose.sh: OUTDIR/{openmpi,mpich}.txt ("fh SIZE WS_MB ROUND STRATEGY
US ONE_SIDED MOVES" and "bound WS_MB MAX_PINNED LIMIT VIOLATIONS" lines) and micro.txt ->
firehose.csv, firehose.md (tables) and firehose.png (latency and bandwidth against the working
set, the paper's Figures 3 and 4)."""
import os
import statistics
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from plotlib import measured_line, median_ci, read_meta, write_csv  # noqa: E402

MPIS = [("openmpi", "Open MPI"), ("mpich", "MPICH")]
STRATS = ["firehose", "rendezvous", "rendezvous-keep"]
LABEL = {"firehose": "Firehose", "rendezvous": "rendezvous with unpin", "rendezvous-keep": "rendezvous without unpin"}


def main():
    out = sys.argv[1]
    meta = read_meta(out)
    m, v = int(meta.get("m", 0)) / 1048576, int(meta.get("maxvictim", 0)) / 1048576
    us = defaultdict(list)          # (mpi, size, ws, strat) -> [per-round mean us]
    ratio = defaultdict(list)       # (mpi, size, ws, baseline) -> [paired baseline/firehose]
    hits = defaultdict(lambda: [0, 0])
    bound = {}
    mpis = []
    for mpi, name in MPIS:
        p = os.path.join(out, mpi + ".txt")
        if not os.path.exists(p):
            continue
        mpis.append((mpi, name))
        rounds = defaultdict(dict)
        for line in open(p):
            f = line.split()
            if f and f[0] == "fh":
                size, ws, r, s, t, one, mv = int(f[1]), float(f[2]), int(f[3]), f[4], float(f[5]), int(f[6]), int(f[7])
                us[(mpi, size, ws, s)].append(t)
                rounds[(size, ws, r)][s] = t
                if s == "firehose":
                    hits[(mpi, size, ws)][0] += one
                    hits[(mpi, size, ws)][1] += one + mv
            elif f and f[0] == "bound":
                key = (mpi, float(f[1]))
                prev = bound.get(key, (0, int(f[3]), 0))
                bound[key] = (max(prev[0], int(f[2])), int(f[3]), prev[2] + int(f[4]))
        for (size, ws, _), d in rounds.items():
            for b in STRATS[1:]:
                if "firehose" in d and b in d:
                    ratio[(mpi, size, ws, b)].append(d[b] / d["firehose"])
    rows, md = [], [measured_line(meta, f"M = {m:g} MiB, MAXVICTIM = {v:g} MiB, {meta.get('rounds', '?')} rounds of "
                                        f"{meta.get('ops', '?')} puts (64 KiB: a third) per strategy, strategies alternating")]
    for mpi, name in mpis:
        for size in sorted({k[1] for k in us if k[0] == mpi}):
            unit = "us per 8-byte put" if size == 8 else "MB/s of 64 KiB puts"
            md += ["", f"**{name}, {unit}** (median of the rounds; x = baseline / Firehose, paired per round, "
                   "median [95% interval]; hit rate = pieces moved one-sided)", "",
                   "| working set (MiB) | Firehose | with unpin | without unpin | x with unpin | x without unpin | hit rate | max pinned / limit |",
                   "| --- | --- | --- | --- | --- | --- | --- | --- |"]
            for ws in sorted({k[2] for k in us if k[0] == mpi and k[1] == size}):
                med = {s: statistics.median(us[(mpi, size, ws, s)]) for s in STRATS if us[(mpi, size, ws, s)]}
                show = {s: (f"{x:.1f}" if size == 8 else f"{size / x:.0f}") for s, x in med.items()}
                rs = {b: median_ci(ratio[(mpi, size, ws, b)]) for b in STRATS[1:] if ratio[(mpi, size, ws, b)]}
                h = hits[(mpi, size, ws)]
                hr = h[0] / h[1] if h[1] else float("nan")
                bd = bound.get((mpi, ws))
                bd_s = f"{bd[0] / 1048576:.1f} / {bd[1] / 1048576:.0f} MiB{' VIOLATED' if bd[2] else ''}" if bd and size == 8 else ""
                md.append(f"| {ws:g} | {show.get('firehose', '')} | {show.get('rendezvous', '')} | {show.get('rendezvous-keep', '')} | "
                          + " | ".join(f"{r[0]:.1f} [{r[1]:.1f}, {r[2]:.1f}]" if r else "" for r in (rs.get("rendezvous"), rs.get("rendezvous-keep")))
                          + f" | {hr:.1%} | {bd_s} |")
                rows.append([mpi, size, ws] + [f"{med.get(s, float('nan')):.3f}" for s in STRATS] + [f"{hr:.4f}"])
    micro = [line.split() for line in open(os.path.join(out, "micro.txt"))] if os.path.exists(os.path.join(out, "micro.txt")) else []
    hit_ns = [float(f[1]) for f in micro if f[0] == "hit"]
    hook = [(float(f[2]), float(f[3])) for f in micro if f[0] == "munmap"]
    if hit_ns:
        d = median_ci([a - b for a, b in hook])
        md += ["", f"Cache hit (pin + unpin of a pinned bucket): median {statistics.median(hit_ns):.1f} ns over {len(hit_ns)} rounds "
               f"(range {min(hit_ns):.1f}-{max(hit_ns):.1f}). munmap of a 4 KiB mapping holding no registration: hooked "
               f"{statistics.median([a for a, _ in hook]):.0f} ns, raw system call {statistics.median([b for _, b in hook]):.0f} ns, "
               f"difference median {d[0]:.0f} ns [{d[1]:.0f}, {d[2]:.0f}] (alternating, same round)."]
    write_csv(os.path.join(out, "firehose.csv"), "mpi,size,ws_mib,firehose_us,rendezvous_us,rendezvous_keep_us,hit_rate", rows)
    open(os.path.join(out, "firehose.md"), "w").write("\n".join(md) + "\n")

    fig, axes = plt.subplots(len(mpis), 2, figsize=(12, 4.2 * len(mpis)), squeeze=False)
    for i, (mpi, name) in enumerate(mpis):
        for j, size in enumerate([8, 65536]):
            ax = axes[i][j]
            wss = sorted({k[2] for k in us if k[0] == mpi and k[1] == size})
            for s, style in zip(STRATS, ["o-", "s--", "^:"]):
                ys = [statistics.median(us[(mpi, size, w, s)]) for w in wss]
                if size != 8:
                    ys = [size / y for y in ys]
                ax.plot(wss, ys, style, label=LABEL[s])
            for x, txt in [(m, "M"), (m + v, "M+MAXVICTIM")]:
                ax.axvline(x, color="grey", lw=0.8, ls="--")
                ax.text(x, 0.97, " " + txt, rotation=90, va="top", ha="right", fontsize=8, transform=ax.get_xaxis_transform())
            ax.set_xlabel("working set (MiB, uniform random targets)")
            if size == 8:
                ax.set_yscale("log")
                ax.set_ylabel("us per 8-byte put (log)")
                ax.set_title(f"{name}: 8-byte put latency (Figure 3)")
            else:
                ax.set_ylabel("MB/s")
                ax.set_title(f"{name}: 64 KiB put bandwidth (Figure 4)")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "firehose.png"), dpi=110)


if __name__ == "__main__":
    main()
