"""Tables and plot for scripts/bench-copy.sh: OUTDIR/transpose.csv, priority.csv and stages.csv ->
copy.png, and the markdown tables on stdout (medians with 95% intervals over the runs)."""
import csv
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plotlib import median_ci, read_meta  # noqa: E402

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(path, key, *cols):
    rows = defaultdict(lambda: tuple([] for _ in cols))
    order = []
    for r in csv.DictReader(open(path)):
        if r[key] not in rows:
            order.append(r[key])
        for i, c in enumerate(cols):
            rows[r[key]][i].append(float(r[c]))
    return order, rows


def fmt(v):
    m, lo, hi = median_ci(v)
    return m, f"{m:.2f} [{lo:.2f}, {hi:.2f}]"


def main(out):
    meta = read_meta(out)
    t_order, t = load(os.path.join(out, "transpose.csv"), "size", "hand_ms", "sluice_ms")
    p_order, p = load(os.path.join(out, "priority.csv"), "path", "fifo_ms", "priority_ms", "alone_ms")
    print(f"Runs: {meta.get('runs', '?')}; load {meta.get('loadavg_start', '?')} -> {meta.get('loadavg_end', '?')}\n")
    print("| transpose (doubles) | by hand ms | sluice_copy ms | speed-up |")
    print("|---|---:|---:|---:|")
    for s in t_order:
        mh, h = fmt(t[s][0])
        ms, sl = fmt(t[s][1])
        print(f"| {s} | {h} | {sl} | {mh / ms:.2f}x |")
    print("\n| priority: the ninth copy | FIFO ms | priority ms | sooner | alone ms | best possible |")
    print("|---|---:|---:|---:|---:|---:|")
    for s in p_order:
        mf, f = fmt(p[s][0])
        mp, pr = fmt(p[s][1])
        ma, al = fmt(p[s][2])
        print(f"| {s} | {f} | {pr} | {100 * (1 - mp / mf):.0f}% | {al} | {100 * (1 - ma / mf):.0f}% |")
    s_order, st = [], {}
    spath = os.path.join(out, "stages.csv")
    if os.path.exists(spath):
        s_order, st = load(spath, "bind", "multi_ms", "read_ms", "convert_ms")
        print("\n| stages (8 MiB, file -> converted memory) | multi-hop ms | DiskRead alone ms | Memcpy alone ms "
              "| slowest / multi-hop | (sum) / multi-hop |")
        print("|---|---:|---:|---:|---:|---:|")
        for b in s_order:
            mm, m = fmt(st[b][0])
            mr, r = fmt(st[b][1])
            mc, c = fmt(st[b][2])
            print(f"| rank bound to {'one core' if b == 'core' else 'no core'} ({b}) | {m} | {r} | {c} "
                  f"| {max(mr, mc) / mm:.2f} | {(mr + mc) / mm:.2f} |")
    fig, ax = plt.subplots(1, 3 if s_order else 2, figsize=(15 if s_order else 10, 4))
    x = range(len(t_order))
    ax[0].bar([i - 0.2 for i in x], [median_ci(t[s][0])[0] for s in t_order], 0.4, label="by hand (pread + loop)")
    ax[0].bar([i + 0.2 for i in x], [median_ci(t[s][1])[0] for s in t_order], 0.4, label="sluice_copy")
    ax[0].set_xticks(list(x), t_order)
    ax[0].set_ylabel("ms (median)")
    ax[0].set_title("out-of-core transpose: file rows -> memory columns")
    ax[0].legend()
    x = range(len(p_order))
    ax[1].bar([i - 0.27 for i in x], [median_ci(p[s][0])[0] for s in p_order], 0.27, label="FIFO (same priority)")
    ax[1].bar([i for i in x], [median_ci(p[s][1])[0] for s in p_order], 0.27, label="priority 10")
    ax[1].bar([i + 0.27 for i in x], [median_ci(p[s][2])[0] for s in p_order], 0.27, label="alone (floor)")
    ax[1].set_xticks(list(x), [s.replace(" (", "\n(") for s in p_order], fontsize=8)
    ax[1].set_yscale("log")
    ax[1].set_ylabel("ms until the ninth copy completes (log)")
    ax[1].set_title("priority: an 8 MiB copy after 8 others")
    ax[1].legend()
    if s_order:
        x = range(len(s_order))
        ax[2].bar([i - 0.27 for i in x], [median_ci(st[b][0])[0] for b in s_order], 0.27, label="multi-hop copy")
        ax[2].bar([i for i in x], [median_ci(st[b][1])[0] for b in s_order], 0.27, label="DiskRead alone")
        ax[2].bar([i + 0.27 for i in x], [median_ci(st[b][2])[0] for b in s_order], 0.27, label="Memcpy alone")
        ax[2].set_xticks(list(x), [f"--bind-to {b}" for b in s_order])
        ax[2].set_ylabel("ms (median)")
        ax[2].set_title("pipelining: a 2-hop copy vs its stages")
        ax[2].legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "copy.png"), dpi=110)


if __name__ == "__main__":
    main(sys.argv[1])
