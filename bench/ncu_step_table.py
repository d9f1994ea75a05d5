#!/usr/bin/env python3
"""Per-kernel GPU time of one forward from an Nsight Compute CSV.

Input: `ncu --metrics gpu__time_duration.sum --csv --print-units base trellis run ...`
(every kernel of a prompt and a few decode steps, eager). Forwards are split at
the embedding kernel; the table is the last complete forward (a decode step),
kernels grouped by name and grid, heaviest first, with the step's sum.
Usage: bench/ncu_step_table.py NCU.csv [--forward N]   (N: 0 = the prompt)
"""
import collections
import csv
import re
import sys


def main():
    path = sys.argv[1]
    rows = [r for r in csv.reader(open(path)) if len(r) == 15 and r[0] != "ID" and r[12] == "gpu__time_duration.sum"]
    kernels = [(r[4], r[8], float(r[14].replace(",", "")) / 1000.0) for r in rows]
    starts = [i for i, (name, _, _) in enumerate(kernels) if "embed" in name]
    if len(starts) < 2:
        sys.exit(f"{path}: fewer than two forwards (embed kernels) found")
    forward = int(sys.argv[sys.argv.index("--forward") + 1]) if "--forward" in sys.argv else len(starts) - 2
    lo, hi = starts[forward], starts[forward + 1] if forward + 1 < len(starts) else len(kernels)
    groups = collections.defaultdict(lambda: [0, 0.0])
    for name, grid, us in kernels[lo:hi]:
        short = re.sub(r"\(.*", "", name).replace("void ", "")
        short = re.sub(r"(model|detail)::<unnamed>::", "", short)
        g = groups[f"{short} grid {grid}"]
        g[0] += 1
        g[1] += us
    total = sum(us for _, _, us in kernels[lo:hi])
    print(f"forward {forward} of {len(starts)}: {hi - lo} kernels, {total:.1f} us of kernel time")
    print(f"{'us':>9} {'calls':>5} {'us/call':>8}  kernel")
    for key, (n, us) in sorted(groups.items(), key=lambda kv: -kv[1][1]):
        print(f"{us:9.1f} {n:5d} {us / n:8.2f}  {key}")


if __name__ == "__main__":
    main()
