#!/usr/bin/env python3
"""Instructions sluice itself spends per call of its exported MPI_* functions, from a callgrind
output file (see bench/fastpath_icount.c):

    python3 scripts/callgrind_own.py CALLGRIND_OUT [MPI_X ...]

For each exported function of libsluice.so that was called: calls, inclusive instructions per
call, and OWN per call = inclusive minus the forwarded call to the MPI's own MPI_X / PMPI_X
(inside sluice's helpers too, attributed in proportion to their inclusive cost), plus the
largest other external callees (extra MPI calls, libc). Functions of a run without sluice print
their PMPI_X inclusive cost per call instead, for comparison.
"""
import collections
import re
import sys


def parse(path):
    names = {}; obs = {}
    cur_ob = None; cur_fn = None; cfn = None; cob = None; pending_call = None
    self_cost = collections.Counter(); calls = collections.defaultdict(lambda: collections.Counter()); ncalls = collections.defaultdict(collections.Counter)
    fnob = {}
    def name(tbl, s):
        m = re.match(r'\((\d+)\)(?:\s+(.*))?', s)
        if not m: return s
        if m.group(2) is not None: tbl[m.group(1)] = m.group(2)
        return tbl[m.group(1)]
    for line in open(path):
        line = line.rstrip('\n')
        if line.startswith('ob='): cur_ob = name(obs, line[3:]); continue
        if line.startswith('fn='): cur_fn = (name(names, line[3:]), cur_ob); cob = None; continue
        if line.startswith('cob='): cob = name(obs, line[4:]); continue
        if line.startswith('cfn='): cfn = name(names, line[4:]); continue
        if line.startswith('calls='):
            pending_call = int(line[6:].split()[0]); continue
        if line and (line[0].isdigit() or line[0] in '+-*'):
            parts = line.split()
            if len(parts) < 2: continue
            cost = int(parts[1])
            if pending_call is not None:
                key = (cfn, cob or cur_ob)
                calls[cur_fn][key] += cost; ncalls[cur_fn][key] += pending_call
                pending_call = None; cob = None
            else:
                self_cost[cur_fn] += cost
    return self_cost, calls, ncalls
self_cost, calls, ncalls = parse(sys.argv[1])
fns = set(self_cost) | set(calls)
incl = {f: self_cost[f] + sum(calls[f].values()) for f in fns}
# call counts into each fn
into = collections.Counter()
for f in calls:
    for k, n in ncalls[f].items(): into[k] += n

want = sys.argv[2:] or ['MPI_Send','MPI_Recv','MPI_Isend','MPI_Irecv','MPI_Wait','MPI_Waitall','MPI_Test']
def own(f, fwd, depth=0, seen=()):
    tot = self_cost[f]
    for (cn, co), v in calls[f].items():
        g = (cn, co)
        if 'libsluice' not in (co or ''):
            if cn in fwd: continue
            tot += v
        elif g in seen or g not in incl or incl[g] == 0:
            tot += v
        else:
            tot += v * own(g, fwd, depth+1, seen + (f,)) / incl[g]
    return tot
def ext(f, fwd, scale, acc, seen=()):
    for (cn, co), v in calls[f].items():
        g = (cn, co)
        if 'libsluice' not in (co or ''):
            if cn not in fwd: acc[cn] += v*scale
        elif g not in seen and incl.get(g):
            ext(g, fwd, scale * v / incl[g], acc, seen + (f,))
    return acc
for f in sorted(fns, key=lambda x: x[0]):
    n, ob = f
    c = into[f]
    if not c: continue
    if 'libsluice' in (ob or ''):
        if n not in want: continue
        fwd = {n, 'P'+n}
        o = own(f, fwd)
        e = ext(f, fwd, 1.0, collections.Counter())
        print(f"{n:12s} sluice calls={c:7d} incl/call={incl[f]/c:9.1f} OWN/call={o/c:7.1f}  ext:", ' '.join(f"[{k}:{v/c:.1f}]" for k, v in e.most_common(6)))
    elif n.lstrip('P') in want and n.startswith('PMPI'):
        print(f"{n:12s} {ob.split('/')[-1]} calls={c:7d} incl/call={incl[f]/c:9.1f}")
