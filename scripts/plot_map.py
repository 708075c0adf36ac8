#!/usr/bin/python3
"""Link loads of sluice-map's strategies (sluice-map --plot; embedded in the binary).

usage: plot_map.py DATA.csv OUT.png CLUSTER
DATA.csv: strategy,kind,link,congestion_s (one row per link of the machine and strategy).
Left: each strategy's busiest link of each kind. Right: every network link, per strategy."""
import csv
import sys
from collections import defaultdict


def main():
    data, png, cluster = sys.argv[1], sys.argv[2], sys.argv[3]
    rows = list(csv.DictReader(open(data)))
    strategies = list(dict.fromkeys(r["strategy"] for r in rows))
    kinds = list(dict.fromkeys(r["kind"] for r in rows))
    worst = defaultdict(float)
    net = defaultdict(dict)
    for r in rows:
        c = float(r["congestion_s"]) * 1e3
        worst[(r["strategy"], r["kind"])] = max(worst[(r["strategy"], r["kind"])], c)
        if r["kind"] == "network":
            net[r["strategy"]][r["link"]] = c
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (a, b) = plt.subplots(1, 2, figsize=(13, 4.5), gridspec_kw={"width_ratios": [1, 2]})
    w = 0.8 / max(1, len(kinds))
    for k, kind in enumerate(kinds):
        xs = [i + (k - (len(kinds) - 1) / 2) * w for i in range(len(strategies))]
        a.bar(xs, [worst[(s, kind)] for s in strategies], w, label=kind)
    a.set_xticks(range(len(strategies)))
    a.set_xticklabels(strategies)
    a.set_ylabel("busiest link: bytes / bandwidth (ms)")
    a.set_title(f"{cluster}: maximum congestion by link kind")
    a.legend()
    links = list(dict.fromkeys(r["link"] for r in rows if r["kind"] == "network"))
    w = 0.8 / max(1, len(strategies))
    for k, s in enumerate(strategies):
        xs = [i + (k - (len(strategies) - 1) / 2) * w for i in range(len(links))]
        b.bar(xs, [net[s].get(l, 0.0) for l in links], w, label=s)
    b.set_xticks(range(len(links)))
    b.set_xticklabels(links, rotation=90 if len(links) > 16 else 0, fontsize=7 if len(links) > 16 else 9)
    b.set_ylabel("congestion (ms)")
    b.set_title("network links (node uplinks)")
    b.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=110)


if __name__ == "__main__":
    main()
