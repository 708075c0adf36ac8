"""Tables and plot for scripts/bench-levels.sh: OUTDIR/examples-<mpi>.txt, sgemm-<mpi>.txt,
ooc-<mpi>.txt and overhead-<mpi>-<composition>.txt -> runs.csv (one row per example run),
levels.csv (every median with its 95% interval), levels.md (the tables, with a verdict against
each of issue 26's targets; also on stdout) and levels.png."""
import os
import re
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plotlib import measured_line, median_ci, read_meta, write_csv  # noqa: E402

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MPI_NAME = {"openmpi": "Open MPI", "mpich": "MPICH"}
EXAMPLES = ["saxpy", "sgemv", "sgemm", "conv2d"]
LINE = re.compile(r"^(\S+) (\w+): OK (.*?) levels=(\S+) time=([\d.]+) s GFLOP/s=([\d.]+)(.*)$")
LEVEL = re.compile(r"L(\d+) (\S+): runtimes=(\d+) tasks=(\d+) xfers=(\d+) bytes=(\d+) elided=(\d+) busy=([\d.]+)%")
MAX_DEPTH = 3
SGEMM_TARGET = 0.80
BUSY_TARGET = 80.0


def parse_runs(out, group, mpis):
    """The example result lines of OUTDIR/<group>-<mpi>.txt ("TAG <line>") as dicts."""
    rows = []
    for mpi in mpis:
        p = os.path.join(out, f"{group}-{mpi}.txt")
        if not os.path.exists(p):
            continue
        for line in open(p):
            m = LINE.match(line.strip())
            if not m:
                continue
            tag, ex, what, levels, t, gf, rest = m.groups()
            r = {"group": group, "mpi": mpi, "run": tag, "example": ex, "size": what, "levels": levels,
                 "time_s": float(t), "gflops": float(gf), "lv": []}
            for lm in LEVEL.finditer(rest):
                d, text, inst, tasks, xfers, nbytes, elided, busy = lm.groups()
                r["lv"].append({"depth": int(d), "level": text, "runtimes": int(inst), "tasks": int(tasks),
                                "xfers": int(xfers), "bytes": int(nbytes), "elided": int(elided), "busy": float(busy)})
            rows.append(r)
    return rows


def parse_overhead(out, mpis):
    """{(mpi, composition): {"task": [...], ("xfer", dir, runs): [...], ("create", runs): [...],
    "aged": [(done, us)], "children": n}} from overhead-<mpi>-*.txt."""
    res = {}
    for mpi in mpis:
        for fn in sorted(os.listdir(out)):
            if not (fn.startswith(f"overhead-{mpi}-") and fn.endswith(".txt")):
                continue
            d = defaultdict(list)
            spec = None
            for line in open(os.path.join(out, fn)):
                f = line.split()
                if not f:
                    continue
                if f[0] == "task" and len(f) == 3:
                    d["task"].append(float(f[2]))
                elif f[0] == "xfer" and len(f) == 6:
                    d[("xfer", f[1], int(f[2]))].append(float(f[5]))
                elif f[0] == "create" and len(f) == 5:
                    d[("create", int(f[1]))].append(float(f[4]))
                elif f[0] == "aged" and len(f) == 4:
                    d["aged"].append((int(f[2]), float(f[3])))
                elif f[0] == "levels_overhead:" and f[1] == "OK":
                    kv = dict(x.split("=", 1) for x in f[2:] if "=" in x)
                    spec = kv.get("levels")
                    d["children"] = int(kv.get("children", "0"))
            if spec is not None:
                res[(mpi, spec)] = d
    return res


def ci(v):
    return median_ci(v) if v else (float("nan"),) * 3


def fmt(v, digits=2, scale=1.0):
    if not v:
        return "-"
    m, lo, hi = median_ci([x * scale for x in v])
    return f"{m:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def verdict_ge(lo, hi, target):
    if lo >= target:
        return "met"
    if hi < target:
        return "not met"
    return "inconclusive (interval spans the target)"


def main(out):
    meta = read_meta(out)
    mpis = [m for m in meta.get("mpis", "openmpi mpich").split() if m]
    comps = meta.get("comps", "").split()
    runs_n = int(meta.get("runs", "0") or 0)
    ex_rows = parse_runs(out, "examples", mpis)
    sg_rows = parse_runs(out, "sgemm", mpis)
    ooc_rows = parse_runs(out, "ooc", mpis)
    ovh = parse_overhead(out, mpis)
    if not comps:
        comps = list(dict.fromkeys(r["levels"] for r in ex_rows))

    # runs.csv: every run, flat.
    hdr = "group,mpi,run,example,size,levels,time_s,gflops" + "".join(
        f",L{d}_level,L{d}_xfers,L{d}_bytes,L{d}_elided,L{d}_busy_pct" for d in range(MAX_DEPTH))
    flat = []
    for r in ex_rows + sg_rows + ooc_rows:
        row = [r["group"], r["mpi"], r["run"], r["example"], r["size"].replace(",", ";"), r["levels"], r["time_s"], r["gflops"]]
        for d in range(MAX_DEPTH):
            lv = next((x for x in r["lv"] if x["depth"] == d), None)
            row += [lv["level"], lv["xfers"], lv["bytes"], lv["elided"], lv["busy"]] if lv else ["", "", "", "", ""]
        flat.append(row)
    write_csv(os.path.join(out, "runs.csv"), hdr, flat)

    summary = []  # section, mpi, example, levels, metric, n, median, lo, hi

    def add(section, mpi, ex, levels, metric, v):
        if v:
            m, lo, hi = median_ci(v)
            summary.append([section, mpi, ex, levels, metric, len(v), f"{m:.6g}", f"{lo:.6g}", f"{hi:.6g}"])

    md = []
    p = md.append
    p(measured_line(meta, f"{meta.get('host_cpus', '?')} cores, {meta.get('mem_total_gib', '?')} GiB, "
                          f"Open MPI {meta.get('openmpi', '?')}, MPICH {meta.get('mpich', '?')}, examples built with "
                          f"`{meta.get('cflags', '?')}`"))
    p("")
    p(f"Medians with 95% intervals (order statistics; with 7 or fewer runs the interval is the range). "
      f"Disk files in {meta.get('disk_dir', '?')}: the 'disk' is the page cache. Waited for quiet "
      f"{meta.get('waited_s', '?')} s; failed runs: {meta.get('failures', '?')} (failures.txt).")
    p("")

    # ---- 1. examples x compositions
    g = defaultdict(list)
    for r in ex_rows:
        g[(r["mpi"], r["example"], r["levels"])].append(r)
    p(f"### Examples on every composition ({runs_n} runs each; cluster compositions on {meta.get('ranks', '2')} ranks)")
    p("")
    p(f"Sizes: {meta.get('sizes', '?')}. time: the COMPUTE phase; busy: share of each level pair's lifetime "
      "(over COMPUTE) with a transfer in flight, L0 = the top pair, L1 = the pair below (summed over its runtimes).")
    p("")
    head = "| example | composition |"
    sep = "|---|---|"
    for mpi in mpis:
        n = MPI_NAME.get(mpi, mpi)
        head += f" {n} time ms | {n} GFLOP/s | {n} busy L0 / L1 % |"
        sep += "---:|---:|---:|"
    p(head + " verdict |")
    p(sep + "---|")
    for ex in EXAMPLES:
        for c in comps:
            line = f"| {ex} | `{c}` |"
            ok_all = True
            for mpi in mpis:
                rs = g.get((mpi, ex, c), [])
                if len(rs) < runs_n:
                    ok_all = False
                t = [r["time_s"] for r in rs]
                gf = [r["gflops"] for r in rs]
                busy = []
                for d in range(MAX_DEPTH):
                    b = [lv["busy"] for r in rs for lv in r["lv"] if lv["depth"] == d]
                    if b:
                        busy.append(b)
                        add("examples", mpi, ex, c, f"L{d}_busy_pct", b)
                add("examples", mpi, ex, c, "time_s", t)
                add("examples", mpi, ex, c, "gflops", gf)
                bt = " / ".join(f"{median_ci(b)[0]:.0f} [{median_ci(b)[1]:.0f}, {median_ci(b)[2]:.0f}]" for b in busy) or "-"
                line += f" {fmt(t, 1, 1e3)} | {fmt(gf, 2)} | {bt} |"
            got = sum(len(g.get((mpi, ex, c), [])) for mpi in mpis)
            line += f" {'reported' if ok_all else 'FAILED runs'} ({got}/{runs_n * len(mpis)}) |"
            p(line)
    p("")

    # ---- 2. SGEMM: runtime vs the kernel called directly
    sg = defaultdict(dict)  # (mpi, round) -> {levels: time}
    for r in sg_rows:
        sg[(r["mpi"], r["run"])][r["levels"]] = r["time_s"]
    n_sg = meta.get("sizes", "").split("sgemm ")[-1].split(";")[0] if "sgemm " in meta.get("sizes", "") else "?"
    p(f"### SGEMM on the SMP runtime vs the same blocked kernel called directly (n = {n_sg}, "
      f"{meta.get('pairs', '?')} rounds, order rotated)")
    p("")
    p("ratio = time(direct) / time(runtime) per round (= GFLOP/s runtime / GFLOP/s direct). Threads computing: "
      "`direct` 1 (the main thread), `smp:1` 1 (one worker; the main thread sleeps in sluice_task_wait), "
      "`smp:2` 2 (two workers).")
    p("")
    p("| MPI | runtime | threads | runtime ms | direct ms | runtime GFLOP/s | ratio | target | verdict |")
    p("|---|---|---:|---:|---:|---:|---:|---|---|")
    sg_plot = []
    for mpi in mpis:
        for lv, thr in (("smp:1", 1), ("smp:2", 2)):
            pairs = [(d[lv], d["none(direct)"]) for (m, _), d in sorted(sg.items()) if m == mpi and lv in d and "none(direct)" in d]
            if not pairs:
                continue
            ratio = [b / a for a, b in pairs]
            gfl = [r["gflops"] for r in sg_rows if r["mpi"] == mpi and r["levels"] == lv]
            m, lo, hi = median_ci(ratio)
            add("sgemm", mpi, "sgemm", lv, "ratio_direct_over_runtime", ratio)
            add("sgemm", mpi, "sgemm", lv, "time_s", [a for a, _ in pairs])
            add("sgemm", mpi, "sgemm", "none(direct)", "time_s", [b for _, b in pairs])
            if lv == "smp:1":
                tgt, vd = f">= {SGEMM_TARGET:.2f}", verdict_ge(lo, hi, SGEMM_TARGET)
            else:
                tgt, vd = "(information)", f"{m / 2:.2f} of direct per thread"
            p(f"| {MPI_NAME.get(mpi, mpi)} | `{lv}` | {thr} | {fmt([a for a, _ in pairs], 1, 1e3)} | "
              f"{fmt([b for _, b in pairs], 1, 1e3)} | {fmt(gfl, 1)} | {m:.3f} [{lo:.3f}, {hi:.3f}] | {tgt} | {vd} |")
            sg_plot.append((f"{MPI_NAME.get(mpi, mpi)}\n{lv}", m, lo, hi))
    p("")

    # ---- 3. out of core
    p(f"### Out of core: {meta.get('ooc', '?')} ({meta.get('ooc_runs', '?')} runs)")
    p("")
    p("disk busy: the top (disk) level pair's share of COMPUTE with a transfer in flight. "
      "traffic: bytes the disk level moved / COMPUTE time.")
    p("")
    p("| MPI | example | data | time ms | traffic GB/s | GFLOP/s | disk busy % | target | verdict |")
    p("|---|---|---|---:|---:|---:|---:|---|---|")
    ooc_plot = []
    og = defaultdict(list)
    for r in ooc_rows:
        og[(r["mpi"], r["example"])].append(r)
    for mpi in mpis:
        for ex in ("saxpy", "sgemv"):
            rs = og.get((mpi, ex), [])
            if not rs:
                p(f"| {MPI_NAME.get(mpi, mpi)} | {ex} | - | - | - | - | - | >= {BUSY_TARGET:.0f}% | no runs |")
                continue
            busy = [lv["busy"] for r in rs for lv in r["lv"] if lv["depth"] == 0]
            gbs = [lv["bytes"] / r["time_s"] * 1e-9 for r in rs for lv in r["lv"] if lv["depth"] == 0]
            m, lo, hi = median_ci(busy)
            add("ooc", mpi, ex, rs[0]["levels"], "L0_busy_pct", busy)
            add("ooc", mpi, ex, rs[0]["levels"], "time_s", [r["time_s"] for r in rs])
            add("ooc", mpi, ex, rs[0]["levels"], "disk_GBps", gbs)
            data_mib = max(lv["bytes"] for r in rs for lv in r["lv"] if lv["depth"] == 0) / 2**20
            p(f"| {MPI_NAME.get(mpi, mpi)} | {ex} ({rs[0]['size']}) | {data_mib:.0f} MiB moved | {fmt([r['time_s'] for r in rs], 1, 1e3)} | "
              f"{fmt(gbs, 2)} | {fmt([r['gflops'] for r in rs], 2)} | {m:.1f} [{lo:.1f}, {hi:.1f}] | >= {BUSY_TARGET:.0f}% | "
              f"{verdict_ge(lo, hi, BUSY_TARGET)} |")
            ooc_plot.append((f"{MPI_NAME.get(mpi, mpi)}\n{ex}", m, lo, hi))
    p("")

    # ---- 4. overhead
    args = meta.get("overhead_args", "? ? ? ? ?").split()
    p(f"### The runtime's own overhead (bench/levels_overhead.c: {args[0]} trials; per trial {args[1]} task calls, "
      f"{args[2]} transfers per list, {args[3]} list creations)")
    p("")
    p("Microseconds per call: an empty task on every child + wait; one transfer list (start + wait) of 1 run of "
      "8 bytes or 64 runs of 8 bytes (128 bytes apart at the top, packed locally), from (get) or to (put) the next "
      "child's share, through the child's own buffer (nothing elided; cluster: every piece on the other rank); "
      "creating a list of 1 or 1024 runs. Trials of every child pooled; each child on a fresh runtime.")
    p("")
    cols = [("task", "task call"), (("xfer", "get", 1), "get 1x8 B"), (("xfer", "get", 64), "get 64x8 B"),
            (("xfer", "put", 1), "put 1x8 B"), (("xfer", "put", 64), "put 64x8 B"), (("create", 1), "create 1 run"),
            (("create", 1024), "create 1024 runs")]
    p("| MPI | composition | children | " + " | ".join(c[1] for c in cols) + " | verdict |")
    p("|---|---|---:|" + "---:|" * len(cols) + "---|")
    ovh_plot = defaultdict(dict)
    for mpi in mpis:
        for (m_, spec), d in sorted(ovh.items(), key=lambda kv: (kv[0][0], ["smp:1", "smp:2", "disk", "cluster"].index(kv[0][1])
                                                                  if kv[0][1] in ["smp:1", "smp:2", "disk", "cluster"] else 9)):
            if m_ != mpi:
                continue
            cells = []
            for key, name in cols:
                v = d.get(key, [])
                cells.append(fmt(v, 2 if (v and median_ci(v)[0] < 10) else 1))
                if v:
                    add("overhead", mpi, "-", spec, name.replace(" ", "_"), v)
                    ovh_plot[name][(mpi, spec)] = median_ci(v)
            p(f"| {MPI_NAME.get(mpi, mpi)} | `{spec}` | {d.get('children', '?')} | " + " | ".join(cells) + " | reported |")
    p("")
    aged_rows = [(k, d["aged"]) for k, d in ovh.items() if d.get("aged")]
    if aged_rows:
        p("Aging: a 1-run get (8 bytes) on one runtime, microseconds per transfer (mean over a chunk of "
          f"{args[2]}) after the runtime ran N transfers:")
        p("")
        have = {x[0] for _, a in aged_rows for x in a}
        last = max(have)
        marks = [x for x in (0, 1000, 2000, 4000, 6000, 8000) if x in have and x < last] + [last]
        p("| MPI | composition | " + " | ".join(f"after {x}" for x in marks) + " |")
        p("|---|---|" + "---:|" * len(marks))
        for (mpi, spec), a in sorted(aged_rows):
            byn = dict(a)
            p(f"| {MPI_NAME.get(mpi, mpi)} | `{spec}` | " + " | ".join(f"{byn[x]:.2f}" if x in byn else "-" for x in marks) + " |")
        p("")

    write_csv(os.path.join(out, "levels.csv"), "section,mpi,example,levels,metric,n,median,lo,hi", summary)
    text = "\n".join(md) + "\n"
    open(os.path.join(out, "levels.md"), "w").write(text)
    sys.stdout.write(text)

    # ---- plot
    fig, ax = plt.subplots(2, 3, figsize=(21, 9))
    a = ax[0][0]
    nb = len(comps) * len(mpis)
    w = 0.8 / max(nb, 1)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ci_, c in enumerate(comps):
        for mi, mpi in enumerate(mpis):
            xs, ys, el, eh = [], [], [], []
            for xi, ex in enumerate(EXAMPLES):
                v = [r["gflops"] for r in g.get((mpi, ex, c), [])]
                if not v:
                    continue
                m, lo, hi = median_ci(v)
                xs.append(xi - 0.4 + w * (ci_ * len(mpis) + mi + 0.5))
                ys.append(m)
                el.append(m - lo)
                eh.append(hi - m)
            a.bar(xs, ys, w, yerr=[el, eh], color=colors[ci_ % len(colors)], hatch="//" if mi else None,
                  edgecolor="black" if mi else None, linewidth=0.3, label=f"{c}" if mi == 0 else None)
    a.set_xticks(range(len(EXAMPLES)), EXAMPLES)
    a.set_yscale("log")
    a.set_ylabel("GFLOP/s (median, 95% interval)")
    a.set_title("examples per composition (plain: " + MPI_NAME.get(mpis[0], mpis[0])
                + (", hatched: " + MPI_NAME.get(mpis[1], mpis[1]) if len(mpis) > 1 else "") + ")")
    a.legend(fontsize=8)

    a = ax[0][1]
    for ci_, c in enumerate(comps):
        for mi, mpi in enumerate(mpis):
            xs, ys, el, eh = [], [], [], []
            for xi, ex in enumerate(EXAMPLES):
                v = [lv["busy"] for r in g.get((mpi, ex, c), []) for lv in r["lv"] if lv["depth"] == 0]
                if not v:
                    continue
                m, lo, hi = median_ci(v)
                xs.append(xi - 0.4 + w * (ci_ * len(mpis) + mi + 0.5))
                ys.append(m)
                el.append(m - lo)
                eh.append(hi - m)
            a.bar(xs, ys, w, yerr=[el, eh], color=colors[ci_ % len(colors)], hatch="//" if mi else None,
                  edgecolor="black" if mi else None, linewidth=0.3, label=f"{c}" if mi == 0 else None)
    a.set_xticks(range(len(EXAMPLES)), EXAMPLES)
    a.set_ylim(0, 105)
    a.set_ylabel("top level pair busy % (L0)")
    a.set_title("how busy the top level pair's channel was")
    a.legend(fontsize=8)

    a = ax[1][0]
    if ooc_plot:
        xs = range(len(ooc_plot))
        a.bar(xs, [x[1] for x in ooc_plot], 0.6, yerr=[[x[1] - x[2] for x in ooc_plot], [x[3] - x[1] for x in ooc_plot]],
              color=colors[1])
        a.axhline(BUSY_TARGET, color="red", linestyle="--", label=f"target {BUSY_TARGET:.0f}%")
        a.set_xticks(list(xs), [x[0] for x in ooc_plot])
        a.set_ylim(0, 105)
        a.legend(loc="lower right")
    a.set_ylabel("disk busy % of COMPUTE")
    a.set_title(f"out of core: {meta.get('ooc', '')}")

    a = ax[1][1]
    if sg_plot:
        xs = range(len(sg_plot))
        a.bar(xs, [x[1] for x in sg_plot], 0.6, yerr=[[x[1] - x[2] for x in sg_plot], [x[3] - x[1] for x in sg_plot]],
              color=[colors[2] if "smp:1" in x[0] else colors[4] for x in sg_plot])
        a.axhline(SGEMM_TARGET, color="red", linestyle="--", label=f"target {SGEMM_TARGET:.2f} (smp:1)")
        a.set_xticks(list(xs), [x[0] for x in sg_plot])
        a.legend(loc="upper left")
    a.set_ylabel("time(direct) / time(runtime)")
    a.set_title(f"SGEMM n = {n_sg}: runtime vs the kernel called directly (direct: 1 thread)")
    a = ax[0][2]
    specs = [sp for sp in ("smp:1", "smp:2", "disk", "cluster") if any(k[1] == sp for k in ovh)]
    names = ["task call", "get 1x8 B", "get 64x8 B", "create 1024 runs"]
    bw = 0.8 / max(len(specs) * len(mpis), 1)
    for si, sp in enumerate(specs):
        for mi, mpi in enumerate(mpis):
            xs, ys, el, eh = [], [], [], []
            for ni, nm in enumerate(names):
                v = ovh_plot.get(nm, {}).get((mpi, sp))
                if v is None:
                    continue
                xs.append(ni - 0.4 + bw * (si * len(mpis) + mi + 0.5))
                ys.append(v[0])
                el.append(v[0] - v[1])
                eh.append(v[2] - v[0])
            a.bar(xs, ys, bw, yerr=[el, eh], color=colors[si % len(colors)], hatch="//" if mi else None,
                  edgecolor="black" if mi else None, linewidth=0.3, label=sp if mi == 0 else None)
    a.set_xticks(range(len(names)), names)
    a.set_yscale("log")
    a.set_ylabel("microseconds per call (median, 95% interval)")
    a.set_title("the runtime's own overhead (hatched: " + (MPI_NAME.get(mpis[1], mpis[1]) if len(mpis) > 1 else "-") + ")")
    a.legend(fontsize=8)

    a = ax[1][2]
    for i, ((mpi, sp), d) in enumerate(sorted((k, d) for k, d in ovh.items() if d.get("aged"))):
        xs = [x[0] for x in d["aged"]]
        a.plot(xs, [x[1] for x in d["aged"]], label=f"{MPI_NAME.get(mpi, mpi)} {sp}",
               color=colors[specs.index(sp) % len(colors)] if sp in specs else None, linestyle="-" if mpi == mpis[0] else "--")
    a.set_yscale("log")
    a.set_xlabel("transfers the runtime ran before")
    a.set_ylabel("microseconds per 8-byte get")
    a.set_title("cost of a transfer as a runtime's transfers accumulate")
    a.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "levels.png"), dpi=110)


if __name__ == "__main__":
    main(sys.argv[1])
