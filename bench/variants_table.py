#!/usr/bin/env python3
"""Side-by-side table of kernel_variants.sh's benchmark results.

usage: variants_table.py OUT_DIR NAME...

Reads OUT_DIR/bench_NAME.json (trellis_kernels_bench output) for each variant
name in the order given and prints one row per (op, form, M, k) with each
variant's median µs and, past the first, its change against the first.
Variants that did not run (no file) are left out; a row a variant lacks shows "-".
Then, where OUT_DIR/runtime_NAME.txt exists (kernel_variants.sh RUNTIME=1),
one line per variant: its runs' generation tok/s in run order and their mean,
and where the runs reported it, their host time per one-token step before
the step's launch (from trellis run's stats line).
"""
import json
import os
import re
import sys


def runtime_lines(out, names):
    for name in names:
        path = os.path.join(out, f"runtime_{name}.txt")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            text = f.read()
        tps = [float(m[1]) for m in re.finditer(r"generation: \d+ tokens, ([\d.]+) tok/s", text)]
        mean = f"mean {sum(tps) / len(tps):.1f}" if tps else "no run finished"
        yield f"generation tok/s {name:>18}: " + " ".join(f"{t:.1f}" for t in tps) + f"  ({mean})"
        host = [float(m[1]) for m in re.finditer(r"per step ([\d.]+) us on the host", text)]
        if host:
            yield f"host us per step {name:>18}: " + " ".join(f"{h:.0f}" for h in host)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out, names = sys.argv[1], sys.argv[2:]
    for line in runtime_lines(out, names):
        print(line)
    runs = {}
    for name in names:
        path = os.path.join(out, f"bench_{name}.json")
        if os.path.exists(path):
            with open(path) as f:
                runs[name] = {(r["op"], r["form"], r["M"], r["k"]): r["median_us"] for r in json.load(f)["results"]}
    if not runs:
        print("no benchmark results")
        return
    names = list(runs)
    first = names[0]
    keys = sorted({k for r in runs.values() for k in r}, key=lambda k: (k[0], k[1], k[2], k[3]))
    print(f"{'op':8} {'form':8} {'M':>2} {'k':>2}  " + "  ".join(f"{n:>18}" for n in names))
    for key in keys:
        cells = []
        base = runs[first].get(key)
        for n in names:
            v = runs[n].get(key)
            if v is None:
                cells.append(f"{'-':>18}")
            elif n == first or base is None:
                cells.append(f"{v:>18.1f}")
            else:
                cells.append(f"{v:>9.1f} ({(v / base - 1) * 100:+5.1f}%)")
        print(f"{key[0]:8} {key[1]:8} {key[2]:>2} {key[3]:>2}  " + "  ".join(cells))


if __name__ == "__main__":
    main()
