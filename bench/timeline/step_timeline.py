#!/usr/bin/env python3
"""Where a decode step's time goes inside its CUDA graph, from a kernel trace
(bench/timeline/kernel_trace.cpp: every kernel's GPU start and end).

A step is one graph replay: the graph-launched kernels in start order, a new
step beginning when a graph node repeats. For each kernel of a step, with
F = the latest end of the step's kernels before it (its frontier):
  duration  end - start (a programmatic launch starts when its first block
            does, so this includes the wait for its predecessor)
  advance   max(0, end - F), F starting at the step's first start: how far
            it pushes the step's end; a step's advances sum to its span
  overlap   F - start when positive: how long it ran beside its predecessors
Kernels are grouped by name and grid (a layer's q+k+v and o reduce launches
differ by grid) and reported per step: calls, median duration per call, and
the medians over steps of the summed duration and advance, sorted by advance.

  step_timeline.py TRACE.csv[.gz] [--skip N] [--steps N]
    --skip: steps dropped at the start (default 3; the first replays warm up)
    --steps: steps analysed after those (default: all but the last)
"""
import argparse
import csv
import gzip
import re
import shutil
import statistics
import subprocess
import sys


def demangle(names):
    if not names or not shutil.which("c++filt"):
        return {n: n for n in names}
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True).stdout.split("\n")
    return {n: (out[i] if i < len(out) and out[i] else n) for i, n in enumerate(names)}


def short(name):
    """kernel<args> from a demangled signature: no return type, parameter
    list, namespaces or enum casts."""
    name = name.replace("(anonymous namespace)::", "")
    if name.endswith(")"):  # the parameter list: back to its matching "("
        depth = 0
        for i in range(len(name) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(name[i], 0)
            if depth == 0:
                name = name[:i]
                break
    name = re.sub(r"^void\s+", "", name)
    name = re.sub(r"\b[A-Za-z_]\w*::", "", name)
    name = re.sub(r"\([A-Za-z_][\w:]*\)(?=-?\d)", "", name)
    return re.sub(r"\s+", "", name)[:60]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("--skip", type=int, default=3)
    ap.add_argument("--steps", type=int, default=0)
    a = ap.parse_args()
    with (gzip.open(a.trace, "rt") if a.trace.endswith(".gz") else open(a.trace)) as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"step_timeline: {a.trace} holds no kernels")
    names = demangle(sorted({r["name"] for r in rows}))
    kernels = [dict(start=int(r["start_ns"]), end=int(r["end_ns"]), graph=int(r["graph_id"]), node=int(r["graph_node_id"]),
                    label=f'{short(names[r["name"]])} grid({r["grid_x"]},{r["grid_y"]},{r["grid_z"]})')
               for r in rows]
    kernels.sort(key=lambda k: k["start"])
    steps, cur, seen = [], [], set()
    for k in kernels:
        if k["graph"] == 0:
            continue
        key = (k["graph"], k["node"])
        if key in seen or (cur and cur[-1]["graph"] != k["graph"]):
            steps.append(cur)
            cur, seen = [], set()
        cur.append(k)
        seen.add(key)
    if cur:
        steps.append(cur)
    eager = sum(1 for k in kernels if k["graph"] == 0)
    body = steps[a.skip:-1] if len(steps) > a.skip + 1 else []
    if a.steps:
        body = body[:a.steps]
    if not body:
        sys.exit(f"step_timeline: {len(steps)} graph replays in {a.trace}, too few after skipping {a.skip}")
    spans, gaps = [], []
    per = {}  # label -> list over steps of (calls, [durations], advance sum)
    for i, st in enumerate(body):
        t0 = st[0]["start"]
        frontier = st[0]["start"]
        acc = {}
        for k in st:
            dur = k["end"] - k["start"]
            adv = max(0, k["end"] - frontier)
            ovl = max(0, frontier - k["start"])
            frontier = max(frontier, k["end"])
            e = acc.setdefault(k["label"], [0, [], 0, 0])
            e[0] += 1
            e[1].append(dur)
            e[2] += adv
            e[3] += ovl
        spans.append(frontier - t0)
        nxt = steps[a.skip + i + 1] if a.skip + i + 1 < len(steps) else None
        if nxt:
            gaps.append(nxt[0]["start"] - frontier)
        for label, e in acc.items():
            per.setdefault(label, []).append(e)
    span = statistics.median(spans) / 1e3
    print(f"{len(body)} graph replays analysed (of {len(steps)}; {eager} kernels outside graphs); "
          f"kernels per step {statistics.median(len(s) for s in body):.0f}")
    print(f"step span (first kernel's start to last kernel's end): median {span:.1f} us, "
          f"min {min(spans) / 1e3:.1f}, max {max(spans) / 1e3:.1f}")
    if gaps:
        print(f"gap from a step's last end to the next step's first start: median {statistics.median(gaps) / 1e3:.1f} us")
    print(f"{'kernel':62} {'calls':>5} {'us/call':>8} {'dur us':>9} {'adv us':>9} {'adv %':>6} {'ovl us':>8}")
    table = []
    for label, es in per.items():
        calls = statistics.median(e[0] for e in es)
        durs = [d for e in es for d in e[1]]
        table.append((statistics.median(e[2] for e in es) / 1e3, label, calls, statistics.median(durs) / 1e3,
                      statistics.median(sum(e[1]) for e in es) / 1e3, statistics.median(e[3] for e in es) / 1e3))
    table.sort(reverse=True)
    for adv, label, calls, per_call, dur, ovl in table:
        print(f"{label:62} {calls:5.0f} {per_call:8.2f} {dur:9.1f} {adv:9.1f} {100 * adv / span:6.1f} {ovl:8.1f}")


if __name__ == "__main__":
    main()
