#!/usr/bin/env python3
"""Plots and tables of the GPU machine's results (docs/data/gpu/, written by the device kit:
scripts/device-check.sh, scripts/device-run.sh):

  gpu-p2p.png    contiguous device-buffer ping-pong bandwidth by size, per MPI: sluice at its
                 defaults (the device route between ranks of one node), sluice with the route
                 off, staging by hand, the MPI's host hop, the PCIe hop and the device-to-device
                 copy hop (bench/gpu/gpu_p2p.c)
  gpu-packed.png non-contiguous device buffers (vec-8, vec-1) by size, per MPI: sluice with its
                 GPU move kernels, a hand-written pack kernel + cuMemcpy + MPI, staging by hand,
                 the host MPI
  rwcp-16.png    RW-CP pack/unpack speedup over 1 worker vs workers on 16 cores, the suite's
                 median and range, with parallel memcpy's speedup for scale

Usage: scripts/plot_gpu.py [DATA_DIR] [IMG_DIR]   (defaults docs/data/gpu, docs/img)
Prints the markdown tables docs/benchmarks.md quotes."""
import csv
import os
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

data = sys.argv[1] if len(sys.argv) > 1 else "docs/data/gpu"
img = sys.argv[2] if len(sys.argv) > 2 else "docs/img"


def bandwidth_axes(ax, xlabel, title, legend_size):
    """The log-size x axis and GB/s y axis every bandwidth panel here uses."""
    ax.set_xscale("log", base=2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("GB/s one way (median)")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=legend_size)


def rows(name):
    with open(os.path.join(data, name)) as f:
        return [r for r in csv.DictReader(line for line in f if not line.startswith("#"))]


# The current defaults' runs, per MPI (H200, 2026-11-27): device sends between ranks of one
# node take the device route (CUDA IPC); -ipc-off is the same session with the route off
# (MPICH then pipelines device sends from 1 MiB in 1 MiB pieces, Open MPI copies them whole).
DEFAULT = {"mpich": "gpu_p2p-h200-mps-mpich-ipc.csv", "openmpi": "gpu_p2p-h200-mps-openmpi-ipc.csv"}
ROUTE_OFF = {"mpich": "gpu_p2p-h200-mps-mpich-ipc-off.csv", "openmpi": "gpu_p2p-h200-mps-openmpi-ipc-off.csv"}
VARIANTS = [("pipelined, 128 KiB chunks, arena", "pipelined-128k"), ("pipelined, 128 KiB chunks, MPI messages", "pipelined-128k-noarena"),
            ("pipelined, 1 MiB chunks, arena", "pipelined-1m")]


def p2p_plot_and_table():
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, mpi in zip(axes, ["mpich", "openmpi"]):
        rs = rows(DEFAULT[mpi])
        for mode, style, label in [("sluice", "o-", "sluice (defaults: device route)"), ("staged", "s--", "staged by hand"), ("host", "^:", "host MPI"),
                                   ("pcie", "x:", "PCIe copies alone"), ("d2d", "v:", "one device-to-device copy")]:
            pts = [(int(r["bytes"]), float(r["GBps"])) for r in rs if r["type"] == "contig" and r["mode"] == mode]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=label)
        off = rows(ROUTE_OFF[mpi])
        pts = [(int(r["bytes"]), float(r["GBps"])) for r in off if r["type"] == "contig" and r["mode"] == "sluice"]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "o:", color="grey", label="sluice, route off (SLUICE_GPU_IPC_POOL=off)")
        ax.set_yscale("log")
        bandwidth_axes(ax, "message bytes", f"contiguous, {'MPICH 4.0.2' if mpi == 'mpich' else 'Open MPI 4.1.4'}", 8)
    fig.suptitle("device-buffer ping-pong, 2 ranks, one H200 (MPS)")
    fig.tight_layout()
    fig.savefig(os.path.join(img, "gpu-p2p.png"), dpi=110)
    print("| MPI | bytes | sluice us [95% CI] | route off us | staged by hand us | staged / sluice | sluice GB/s | one D2D copy GB/s | sluice / D2D copy | host MPI GB/s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for mpi in ["mpich", "openmpi"]:
        rs = rows(DEFAULT[mpi])
        by = {(r["mode"], r["type"], r["bytes"]): r for r in rs}
        offb = {r["bytes"]: r for r in rows(ROUTE_OFF[mpi]) if r["mode"] == "sluice" and r["type"] == "contig"}
        for r in rs:
            if r["mode"] != "sluice" or r["type"] != "contig" or int(r["bytes"]) < 65536:
                continue
            k = (r["type"], r["bytes"])
            st, h, d = by[("staged",) + k], by[("host",) + k], by[("d2d",) + k]
            print(
                f"| {mpi} | {r['bytes']} | {float(r['median_us']):.1f} [{float(r['lo_us']):.1f}, {float(r['hi_us']):.1f}] "
                f"| {float(offb[r['bytes']]['median_us']):.1f} | {float(st['median_us']):.1f} | {float(st['median_us']) / float(r['median_us']):.1f} "
                f"| {float(r['GBps']):.1f} | {float(d['GBps']):.1f} | {float(r['GBps']) / float(d['GBps']):.2f} | {float(h['GBps']):.2f} |"
            )
    print()
    print("| MPI | bytes | " + " | ".join(f"{label}: sluice / staged" for label, _ in VARIANTS) + " |")
    print("|---|---:|" + "---:|" * len(VARIANTS))
    for mpi in ["mpich", "openmpi"]:
        runs = []
        for _, suffix in VARIANTS:
            rs = rows(f"gpu_p2p-h200-mps-{mpi}-{suffix}.csv")
            runs.append({(r["mode"], r["bytes"]): float(r["median_us"]) for r in rs if r["type"] == "contig"})
        for b in ["1048576", "4194304", "16777216", "67108864"]:
            cells = [f"{run[('sluice', b)] / run[('staged', b)]:.3f}" if ("sluice", b) in run else "-" for run in runs]
            print(f"| {mpi} | {b} | " + " | ".join(cells) + " |")


def rwcp_plot_and_table():
    ws = [1, 2, 4, 8, 16]
    med, lo, hi, mem = {}, {}, {}, {}
    for kind in ["pack", "unpack"]:
        med[kind], lo[kind], hi[kind] = [], [], []
    print()
    print("| workers | pack speedup median [min, max] | unpack speedup median [min, max] | memcpy speedup median |")
    print("|---:|---:|---:|---:|")
    for w in ws:
        rs = rows(f"rwcp-suite-w{w}.csv")
        line = [str(w)]
        for kind in ["pack", "unpack"]:
            col = f"{kind}_speedup"
            v = [float(r[col]) for r in rs] if w > 1 else [1.0]
            med[kind].append(statistics.median(v))
            lo[kind].append(min(v))
            hi[kind].append(max(v))
            line.append(f"{statistics.median(v):.2f} [{min(v):.2f}, {max(v):.2f}]")
        mrs = rows(f"rwcp-memcpy-w{w}.csv") if w > 1 else []
        m = statistics.median(float(r["memcpy_speedup"]) for r in mrs) if mrs else 1.0
        mem[w] = m
        line.append(f"{m:.2f}")
        print("| " + " | ".join(line) + " |")
    fig, ax = plt.subplots(figsize=(6, 4))
    for kind, style in [("pack", "o-"), ("unpack", "s-")]:
        ax.plot(ws, med[kind], style, label=f"RW-CP {kind} (suite median)")
        ax.fill_between(ws, lo[kind], hi[kind], alpha=0.12)
    ax.plot(ws, [mem[w] for w in ws], "k:", label="parallel memcpy")
    ax.plot(ws, ws, color="grey", lw=0.5, label="linear")
    ax.axhline(6, color="red", lw=0.6, ls="--", label="target at 8 workers")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("workers")
    ax.set_ylabel("speedup over 1 worker")
    ax.set_title("RW-CP on 16 cores (H100 machine), ddt suite")
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(img, "rwcp-16.png"), dpi=110)


def packed_plot_and_table():
    """The move kernels against the hand-written pack kernel, H200, both MPIs at sluice's
    defaults (the packed form takes the device route from the pipeline threshold up)."""
    files = DEFAULT
    shapes = ["vec-8", "vec-1"]
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    print()
    print("| MPI | type | bytes | sluice us [95% CI] | hand-written kernel + copy + MPI us | staged by hand us | sluice / kernel | staged / sluice |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for row, mpi in zip(axes, ["mpich", "openmpi"]):
        rs = rows(files[mpi])
        by = {(r["mode"], r["type"], r["bytes"]): r for r in rs}
        for ax, shape in zip(row, shapes):
            sizes = sorted({int(r["bytes"]) for r in rs if r["type"] == shape})
            for mode, style, label in [("sluice", "o-", "sluice (GPU move kernels)"), ("kernel", "d-.", "pack kernel + copy + MPI"),
                                       ("staged", "s:", "staged by hand (spans)"), ("host", "^:", "host MPI")]:
                ax.plot(sizes, [float(by[(mode, shape, str(b))]["GBps"]) for b in sizes], style, label=label)
            bandwidth_axes(ax, "message bytes (data)", f"{shape}, {'MPICH' if mpi == 'mpich' else 'Open MPI'}", 7)
            for b in sizes:
                r = by[("sluice", shape, str(b))]
                s_us, kn, st = float(r["median_us"]), float(by[("kernel", shape, str(b))]["median_us"]), float(by[("staged", shape, str(b))]["median_us"])
                print(f"| {mpi} | {shape} | {b} | {s_us:.1f} [{float(r['lo_us']):.1f}, {float(r['hi_us']):.1f}] | {kn:.1f} | {st:.1f} "
                      f"| {s_us / kn:.3f} | {st / s_us:.2f} |")
    fig.suptitle("non-contiguous device buffers, 2 ranks, one H200 (MPS)")
    fig.tight_layout()
    fig.savefig(os.path.join(img, "gpu-packed.png"), dpi=110)


def threshold_table(packed, span):
    """Why SLUICE_GPU_PACK_MIN is 128K: the kernels for every size against span copies only (H100)."""
    pk, sp = rows(packed), rows(span)
    by = {(r["mode"], r["type"], r["bytes"]): r for r in pk}
    spb = {(r["type"], r["bytes"]): r for r in sp if r["mode"] == "sluice"}
    print()
    print("| type | bytes | sluice, kernels us [95% CI] | sluice, span copies us | pack kernel + copy + MPI us | staged by hand us | kernels / hand-written kernel | span / kernels |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in pk:
        if r["mode"] != "sluice" or r["type"] not in ("vec-8", "vec-1"):
            continue
        k = (r["type"], r["bytes"])
        s_us, sp_us = float(r["median_us"]), float(spb[k]["median_us"])
        kn, st = float(by[("kernel",) + k]["median_us"]), float(by[("staged",) + k]["median_us"])
        print(f"| {k[0]} | {k[1]} | {s_us:.1f} [{float(r['lo_us']):.1f}, {float(r['hi_us']):.1f}] | {sp_us:.1f} | {kn:.1f} | {st:.1f} "
              f"| {s_us / kn:.3f} | {sp_us / s_us:.2f} |")


p2p_plot_and_table()
rwcp_plot_and_table()
packed_plot_and_table()
threshold_table("gpu_p2p-h100-mps-mpich-packed.csv", "gpu_p2p-h100-mps-mpich-span.csv")
