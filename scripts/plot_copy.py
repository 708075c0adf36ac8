"""Tables and plot for scripts/bench-copy.sh: OUTDIR/transpose.csv and priority.csv ->
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
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
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
    ax[1].set_xticks(list(x), p_order)
    ax[1].set_ylabel("ms until the ninth copy completes")
    ax[1].set_title("priority: 1 copy among 9 of 8 MiB")
    ax[1].legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "copy.png"), dpi=110)


if __name__ == "__main__":
    main(sys.argv[1])
