#!/usr/bin/python3
"""Table and plot of scripts/bench-plan.sh: planning time per transfer and planner against
issue 22's targets (full: 20 us 1-D, 50 us 2-D; simple: 2 us; cached: 0.1 us)."""
import argparse
import os
import shutil

TARGET = {"simple": 2.0, "cached": 0.1}


def target(planner, transfer):
    if planner == "full":
        return 20.0 if transfer.startswith("1-D") else 50.0
    return TARGET[planner]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("--img", default="")
    a = ap.parse_args()
    rows = []
    for line in open(os.path.join(a.outdir, "times.txt")):
        # The test harness may print its "test ... " prefix on the first line.
        f = line[line.find("plan "):].split() if "plan " in line else []
        if len(f) == 6 and f[0] == "plan":
            name, planner = f[1].replace("_", " "), f[2]
            med, lo, hi = map(float, f[3:])
            t = target(planner, name)
            verdict = "pass" if hi <= t else "FAIL" if lo > t else "inconclusive"
            rows.append((name, planner, med, lo, hi, t, verdict))
    md = ["| transfer | planner | median us | 95% interval | target us | verdict |", "|---|---|---:|---|---:|---|"]
    md += [f"| {n} | {p} | {m:.3f} | [{lo:.3f}, {hi:.3f}] | {t:g} | {v} |" for n, p, m, lo, hi, t, v in rows]
    n_pass = sum(r[6] == "pass" for r in rows)
    md.append("")
    md.append(f"{n_pass} of {len(rows)} points within their target.")
    text = "\n".join(md) + "\n"
    open(os.path.join(a.outdir, "plan.md"), "w").write(text)
    print(text)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_plan: matplotlib not available, no PNG")
        return
    names = list(dict.fromkeys(r[0] for r in rows))
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    for ax, planner in zip(axes, ["full", "simple", "cached"]):
        rs = [next(r for r in rows if r[0] == n and r[1] == planner) for n in names]
        y = range(len(rs))
        ax.barh(list(y), [r[2] for r in rs], xerr=[[r[2] - r[3] for r in rs], [r[4] - r[2] for r in rs]], color="#1f77b4")
        for r_i, r in zip(y, rs):
            ax.plot([r[5], r[5]], [r_i - 0.4, r_i + 0.4], color="black", ls="--", lw=1)
        ax.set_yticks(list(y))
        ax.set_yticklabels(names if planner == "full" else [""] * len(names), fontsize=8)
        ax.set_xlabel("us per plan (median, 95% CI; dashed: target)")
        ax.set_title(f"{planner} planner")
    fig.tight_layout()
    png = os.path.join(a.outdir, "plan.png")
    fig.savefig(png, dpi=110)
    if a.img:
        shutil.copy(png, a.img)


if __name__ == "__main__":
    main()
