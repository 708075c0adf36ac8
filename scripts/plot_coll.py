#!/usr/bin/python3
"""Summarise and plot scripts/bench-coll.sh results.

Reads OUTDIR/{openmpi,mpich}.csv (mpi,config,ranks,rep,case,size,sample,seconds,cpu_share:
seconds per collective operation, the slowest rank's), cases.csv (bytes per rank and operation),
pairing.csv and meta.txt; prints the table and the verdict on issue 5's targets, and writes
OUTDIR/summary.csv, verdict.csv, coll.md and coll.png (needs matplotlib; run it with Debian's
/usr/bin/python3). Only the standard library is needed for the tables.

Statistics per (MPI, ranks, case, size, bare|sluice): median and min over the clean samples of all
reps (a sample is clean when every rank had >= --min-share of its core; all samples if none is).
Speed-up = bare time / sluice time: > 1 means sluice is faster. Noise: each rep runs a bare and a
sluice job back to back, so a rep gives one paired speed-up (of the two jobs' medians); the range
of the paired speed-ups over the reps is the noise band of the speed-up.
"""
import argparse
import csv
import os
import statistics
import sys
from collections import defaultdict

from plotlib import read_meta  # same directory

MPIS = [("openmpi", "Open MPI"), ("mpich", "MPICH")]
NAME = dict(MPIS)
# issue 5's targets: datatype cases' speed-up over bare, per MPI; contiguous cases within 3%
DT_TARGET = {"openmpi": 1.5, "mpich": 1.0}
CONTIG_BOUND = 0.97


def load(outdir):
    samples = defaultdict(list)  # (mpi, ranks, case, size, cfg) -> [(seconds, share, rep)]
    for mpi, _ in MPIS:
        p = os.path.join(outdir, f"{mpi}.csv")
        if not os.path.exists(p):
            continue
        with open(p, newline="") as f:
            for r in csv.DictReader(f):
                k = (r["mpi"], int(r["ranks"]), r["case"], int(r["size"]), r["config"])
                samples[k].append((float(r["seconds"]), float(r["cpu_share"]), int(r["rep"])))
    nbytes = {}
    p = os.path.join(outdir, "cases.csv")
    if os.path.exists(p):
        with open(p, newline="") as f:
            for r in csv.DictReader(f):
                nbytes[(r["mpi"], int(r["ranks"]), r["case"], int(r["size"]))] = float(r["bytes"])
    pairing = defaultdict(dict)  # (mpi, ranks, case, size) -> {cfg: pairing}
    p = os.path.join(outdir, "pairing.csv")
    if os.path.exists(p):
        with open(p, newline="") as f:
            for r in csv.DictReader(f):
                pairing[(r["mpi"], int(r["ranks"]), r["case"], int(r["size"]))][r["config"]] = r["pairing"]
    return samples, nbytes, pairing, read_meta(outdir)


def clean(vals, min_share):
    c = [v for v, sh, _ in vals if sh >= min_share]
    return c if c else [v for v, _, _ in vals]


def summarise(samples, nbytes, min_share):
    rows = []
    keys = sorted({k[:4] for k in samples}, key=lambda k: ([m for m, _ in MPIS].index(k[0]), k[1], k[2], k[3]))
    for mpi, ranks, case, size in keys:
        sb, ss = samples.get((mpi, ranks, case, size, "bare")), samples.get((mpi, ranks, case, size, "sluice"))
        if not sb or not ss:
            raise SystemExit(f"plot_coll: missing bare or sluice data for {mpi}/{ranks}/{case}/{size}")
        vb, vs = clean(sb, min_share), clean(ss, min_share)
        paired = []
        for rep in sorted({r for _, _, r in sb} & {r for _, _, r in ss}):
            pb = clean([x for x in sb if x[2] == rep], min_share)
            ps = clean([x for x in ss if x[2] == rep], min_share)
            paired.append(statistics.median(pb) / statistics.median(ps))
        mb, ms = statistics.median(vb), statistics.median(vs)
        b = nbytes.get((mpi, ranks, case, size), 0.0)
        rows.append(dict(
            mpi=mpi, ranks=ranks, case=case, size=size, bytes=b,
            n=min(len(vb), len(vs)),
            clean_pct=100.0 * sum(sh >= min_share for _, sh, _ in sb + ss) / len(sb + ss),
            bare_med_ms=1e3 * mb, bare_min_ms=1e3 * min(vb), sluice_med_ms=1e3 * ms, sluice_min_ms=1e3 * min(vs),
            bare_gbs=b / mb / 1e9, sluice_gbs=b / ms / 1e9,
            speedup_med=mb / ms, speedup_min=min(vb) / min(vs),
            paired_lo=min(paired), paired_hi=max(paired)))
    return rows


def verdicts(rows, cores):
    out = []
    for mpi in [m for m, _ in MPIS if any(r["mpi"] == m for r in rows)]:
        for bench, what in (("fft", "FFT transpose (fft-dt)"), ("halo", "halo exchange (halo-dt)")):
            bound = DT_TARGET[mpi]
            goal = f">= {bound:g}x bare" if bound > 1 else "not slower than bare"
            pts = [r for r in rows if r["mpi"] == mpi and r["case"] == f"{bench}-dt"]
            out.append(verdict(f"{what} {goal}", mpi, pts, bound, cores))
        pts = [r for r in rows if r["mpi"] == mpi and r["case"].endswith("-contig")]
        out.append(verdict("contiguous collectives (*-contig) within 3% (>= 0.97x)", mpi, pts, CONTIG_BOUND, cores))
    return out


def verdict(target, mpi, pts, bound, cores):
    """Over the rank counts that fit the machine's cores; over all only when there are no others."""
    if not pts:
        return dict(target=target, mpi=NAME[mpi], status="no data", worst="", speedup="", band="", failing="")
    pts = [r for r in pts if r["ranks"] <= cores] or pts
    fails = [r for r in pts if r["speedup_med"] < bound]
    w = min(pts, key=lambda r: r["speedup_med"])
    crosses = w["paired_lo"] <= bound <= w["paired_hi"]
    over = any(r["ranks"] > cores for r in pts)
    return dict(target=target, mpi=NAME[mpi],
                status=("pass" if not fails else "FAIL") + (" (within noise)" if crosses else "")
                + (" (oversubscribed runs only)" if over else ""),
                worst=f"{w['case']} {w['size']} @{w['ranks']}", speedup=f"{w['speedup_med']:.3f}",
                band=f"{w['paired_lo']:.2f}-{w['paired_hi']:.2f}", failing=f"{len(fails)}/{len(pts)}")


def noise_report(rows):
    lines = []
    for mpi in [m for m, _ in MPIS if any(r["mpi"] == m for r in rows)]:
        sel = [r for r in rows if r["mpi"] == mpi]
        cp = [r["clean_pct"] for r in sel]
        dirty = [f"{r['case']} {r['size']} @{r['ranks']}" for r in sel if r["clean_pct"] == 0]
        lines.append(f"{NAME[mpi]}: clean samples {statistics.mean(cp):.0f}% on average, lowest case {min(cp):.0f}%"
                     + (f"; no clean sample (all used): {', '.join(dirty)}" if dirty else ""))
        for label, pick in (("contiguous", lambda r: r["case"].endswith("-contig")), ("all cases", lambda r: True)):
            s = [r for r in sel if pick(r)]
            if not s:
                continue
            dev = [abs(r["speedup_med"] - 1) for r in s]
            band = [(r["paired_hi"] - r["paired_lo"]) / 2 for r in s]
            lines.append(f"{NAME[mpi]} {label}: |speed-up - 1| median {100 * statistics.median(dev):.1f}%, max "
                         f"{100 * max(dev):.1f}%; paired half-range over reps median {100 * statistics.median(band):.1f}%, "
                         f"max {100 * max(band):.1f}% ({len(s)} cases)")
    return lines


def pairing_report(pairing):
    """Halo block pairings: which neighbour block landed in which receive block, bare vs sluice."""
    lines = []
    for (mpi, ranks, case, size), by in sorted(pairing.items()):
        b, s = by.get("bare", "?"), by.get("sluice", "?")
        if b == "-" and s == "-":
            continue
        if b != s:
            lines.append(f"DIFFERENT: {NAME.get(mpi, mpi)} {case} {size} @{ranks}: bare {b}, sluice {s}")
        elif b != "mpi41":
            lines.append(f"{NAME.get(mpi, mpi)} {case} {size} @{ranks}: bare and sluice both {b} (not MPI-4.1's pairing)")
    return lines


HEAD = ["MPI", "ranks", "case", "size", "MB/rank", "bare med ms", "bare min ms", "sluice med ms", "sluice min ms",
        "speed-up med", "speed-up min", "paired range", "bare GB/s", "sluice GB/s", "clean %"]


def table_row(r):
    return [NAME[r["mpi"]], str(r["ranks"]), r["case"], str(r["size"]), f"{r['bytes'] / 1e6:.1f}",
            f"{r['bare_med_ms']:.3f}", f"{r['bare_min_ms']:.3f}", f"{r['sluice_med_ms']:.3f}",
            f"{r['sluice_min_ms']:.3f}", f"{r['speedup_med']:.3f}", f"{r['speedup_min']:.3f}",
            f"{r['paired_lo']:.2f}-{r['paired_hi']:.2f}", f"{r['bare_gbs']:.2f}", f"{r['sluice_gbs']:.2f}",
            f"{r['clean_pct']:.0f}"]


def md_table(head, rows, left):
    md = ["| " + " | ".join(head) + " |",
          "|" + "|".join("---" if i in left else "---:" for i in range(len(head))) + "|"]
    return md + ["| " + " | ".join(t) + " |" for t in rows]


def print_table(head, rows, left):
    widths = [max(len(h), *(len(t[i]) for t in rows)) for i, h in enumerate(head)]
    fmt = lambda cells: "  ".join(c.ljust(w) if i in left else c.rjust(w)
                                  for i, (c, w) in enumerate(zip(cells, widths)))
    print(fmt(head))
    print("  ".join("-" * w for w in widths))
    for t in rows:
        print(fmt(t))


def passthrough_note(meta):
    ops = [v for k, v in meta.items() if k.startswith("engine_ops_")]
    if ops and all(v in ("", "0") for v in ops):
        return "sluice's engine did no work in the check runs: collectives passed through sluice"
    return ""


def plot(rows, meta, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_coll: matplotlib not available, no PNG written (use /usr/bin/python3)", file=sys.stderr)
        return False
    color = {"openmpi": "#1f77b4", "mpich": "#d62728"}
    cols = sorted({(r["case"].split("-")[0], r["ranks"]) for r in rows}, key=lambda c: (c[1], c[0]))
    mpis = [m for m, _ in MPIS if any(r["mpi"] == m for r in rows)]
    fig, axes = plt.subplots(3, len(cols), figsize=(5.5 * len(cols), 11), squeeze=False)
    for ci, (bench, ranks) in enumerate(cols):
        sel = [r for r in rows if r["ranks"] == ranks and r["case"].startswith(bench + "-")]
        sizes = sorted({r["size"] for r in sel})
        for ri, variant in enumerate(("dt", "contig")):
            ax = axes[ri][ci]
            w, k = 0.2, 0
            for mpi in mpis:
                for cfg in ("bare", "sluice"):
                    vals, lo, hi = [], [], []
                    for s in sizes:
                        r = next((r for r in sel if r["mpi"] == mpi and r["size"] == s
                                  and r["case"] == f"{bench}-{variant}"), None)
                        med = r[f"{cfg}_med_ms"] if r else 0
                        vals.append(med)
                        lo.append(med - (r[f"{cfg}_min_ms"] if r else 0))
                        hi.append(0)
                    ax.bar([i + (k - 1.5) * w for i in range(len(sizes))], vals, w * 0.95, yerr=[lo, hi],
                           capsize=2, color=color[mpi], alpha=0.45 if cfg == "bare" else 0.9,
                           hatch="//" if cfg == "bare" else None, label=f"{NAME[mpi]} {cfg}")
                    k += 1
            ax.set_yscale("log")
            ax.set_xticks(range(len(sizes)))
            ax.set_xticklabels([f"{'N' if bench == 'fft' else 'n'} = {s}" for s in sizes])
            ax.grid(True, axis="y", alpha=0.3)
            over = " (more ranks than cores)" if ranks > int(meta.get("host_cpus") or ranks) else ""
            ax.set_title(f"{bench}-{variant}, {ranks} ranks{over}", fontsize=10)
        ax = axes[2][ci]
        for mi, mpi in enumerate(mpis):
            for vi, variant in enumerate(("dt", "contig")):
                for i, s in enumerate(sizes):
                    r = next((r for r in sel if r["mpi"] == mpi and r["size"] == s
                              and r["case"] == f"{bench}-{variant}"), None)
                    if not r:
                        continue
                    y = r["speedup_med"]
                    ax.errorbar([i + (mi * 2 + vi - 1.5) * 0.12], [y],
                                yerr=[[max(y - r["paired_lo"], 0)], [max(r["paired_hi"] - y, 0)]],
                                fmt="o" if variant == "dt" else "s", ms=5, capsize=2, color=color[mpi],
                                mfc=color[mpi] if variant == "dt" else "none",
                                label=f"{NAME[mpi]} {bench}-{variant}" if i == 0 else None)
        ax.axhspan(0.97, 1.03, color="#2ca02c", alpha=0.12, lw=0)
        ax.axhline(1.0, color="black", lw=0.6)
        ax.axhline(DT_TARGET["openmpi"], color=color["openmpi"], lw=0.8, ls="--")
        ax.set_yscale("log")
        ax.set_ylim(0.3, 5)
        ax.set_xticks(range(len(sizes)))
        ax.set_xticklabels([f"{'N' if bench == 'fft' else 'n'} = {s}" for s in sizes])
        ax.set_xlim(-0.6, len(sizes) - 0.4)
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("datatype case: ms per operation\n(median; whisker down to min)")
    axes[1][0].set_ylabel("contiguous baseline: ms per operation\n(median; whisker down to min)")
    axes[2][0].set_ylabel("speed-up bare/sluice (>1 = sluice faster)\nbars: range over reps; dashed: 1.5x target")
    axes[0][0].legend(fontsize=7)
    note = passthrough_note(meta)
    fig.suptitle(f"sluice collectives vs bare MPI ({meta.get('date', '')}, commit {meta.get('commit', '?')})\n"
                 f"{meta.get('host_cpus', '?')} shared cores, load avg {meta.get('loadavg_start', '?')} -> "
                 f"{meta.get('loadavg_end', '?')}, {meta.get('reps', '?')} reps x {meta.get('samples', '?')} samples"
                 f"{', QUICK' if meta.get('quick') == '1' else ''}; green band: +-3%" + (f"\n{note}" if note else ""),
                 fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    fig.savefig(path, dpi=100)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("--min-share", type=float, default=0.95,
                    help="samples with a smaller CPU share of any rank are left out (default 0.95)")
    a = ap.parse_args()
    samples, nbytes, pairing, meta = load(a.outdir)
    if not samples:
        raise SystemExit("plot_coll: no data (openmpi.csv / mpich.csv)")
    cores = int(meta.get("host_cpus") or os.cpu_count() or 1)
    rows = summarise(samples, nbytes, a.min_share)
    with open(os.path.join(a.outdir, "summary.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    vd = verdicts(rows, cores)
    with open(os.path.join(a.outdir, "verdict.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(vd[0].keys()))
        w.writeheader()
        w.writerows(vd)
    noise, pairs, note = noise_report(rows), pairing_report(pairing), passthrough_note(meta)

    left = (0, 1, 2)
    trows = [table_row(r) for r in rows]
    print()
    print_table(HEAD, trows, left)
    print("\n(ms per collective operation, the slowest rank's; MB/rank = payload one rank sends per operation; "
          "speed-up = bare/sluice, > 1: sluice faster; paired range = min-max over reps of the speed-up of "
          "back-to-back jobs)\n")
    if note:
        print(f"NOTE: {note}\n")
    print("noise:")
    for line in noise:
        print("  " + line)
    if pairs:
        print("halo block pairing (see bench/coll_halo.c):")
        for line in pairs:
            print("  " + line)
    VHEAD = ["target", "MPI", "status", "worst case", "its speed-up", "its paired range", "cases failing"]
    vrows = [[v["target"], v["mpi"], v["status"], v["worst"], v["speedup"], v["band"], v["failing"]] for v in vd]
    print("\nverdict (speed-up bare/sluice, medians):")
    print_table(VHEAD, vrows, (0, 1, 2, 3))

    md = [
        f"Run {meta.get('date', '?')}, commit {meta.get('commit', '?')}, {meta.get('host_cpus', '?')} cores "
        f"({meta.get('cpu', '?')}), load average {meta.get('loadavg_start', '?')} at start, "
        f"{meta.get('loadavg_end', '?')} at end, {meta.get('seconds', '?')} s ({meta.get('waited_s', '?')} s waiting "
        f"for a quiet machine); Open MPI {meta.get('openmpi', '?')}, MPICH {meta.get('mpich', '?')}; "
        f"quick={meta.get('quick', '?')}, ranks {meta.get('ranks', '?')}, {meta.get('reps', '?')} reps x "
        f"{meta.get('samples', '?')} samples per case and job, {meta.get('sample_ms', '?')} ms per sample.",
        "",
        "Times: ms per collective operation (the slowest rank's); MB/rank: payload one rank sends per "
        "operation, its own block included; speed-up = bare/sluice (> 1: sluice faster); min = best sample; "
        "paired range = min-max over reps of the speed-up of a rep's back-to-back bare and sluice jobs. Only "
        f"clean samples (every rank's CPU share >= {a.min_share:g}) count, unless a case has none.",
        "",
    ] + ([f"**{note}.**", ""] if note else []) + [
        "### Verdict",
        "",
    ] + md_table(VHEAD, vrows, (0, 1, 2, 3)) + [
        "",
        "### Noise",
        "",
    ] + [f"- {line}" for line in noise] + ([
        "",
        "### Halo block pairing",
        "",
    ] + [f"- {line}" for line in pairs] if pairs else []) + [
        "",
        "### All cases",
        "",
    ] + md_table(HEAD, trows, left)
    with open(os.path.join(a.outdir, "coll.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    png = os.path.join(a.outdir, "coll.png")
    if plot(rows, meta, png):
        print(f"\nwrote {png}")


if __name__ == "__main__":
    main()
