#!/usr/bin/env python3
"""Summarise an Nsight Compute source-page CSV (bench/ncu_source.sh): where a
kernel's warps were sampled, by stall reason, over windows of consecutive SASS
instructions, and the opcode mix of the main loop per warp (the longest run of instructions that
each executed at least 4x the most common count, which is the number of warps
that ran straight-line code once).

  bench/ncu_source_table.py FILE.csv [WINDOW]   (WINDOW: instructions per row, default 50)
"""
import collections
import csv
import sys


def opcode(source):
    parts = source.split()
    return (parts[1] if parts[0].startswith("@") else parts[0]).split(".")[0]


def main():
    rows = list(csv.reader(open(sys.argv[1])))
    window = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    kernel, header, data = rows[0][1], rows[1], rows[2:]
    col = {h: i for i, h in enumerate(header)}
    samples = [int(r[col["Warp Stall Sampling (All Samples)"]] or 0) for r in data]
    executed = [int(r[col["Instructions Executed"]] or 0) for r in data]
    reasons = [h for h in header if h.startswith("stall_") and "Not Issued" not in h]
    total = sum(samples)
    print(f"{kernel}\n{len(data)} SASS instructions, {sum(executed)} warp instructions executed, {total} samples")
    by_reason = collections.Counter({h[6:]: sum(int(r[col[h]] or 0) for r in data) for h in reasons})
    print("stall reasons: " + "  ".join(f"{k} {v / total:.1%}" for k, v in by_reason.most_common(10)))
    print(f"{'first':>6} {'samples':>8} {'cum':>6} {'executed':>10}  top reasons | top opcodes")
    cum = 0
    for i in range(0, len(data), window):
        s = sum(samples[i:i + window])
        cum += s
        if s < 0.004 * total:
            continue
        top = collections.Counter()
        for r in data[i:i + window]:
            for h in reasons:
                top[h[6:]] += int(r[col[h]] or 0)
        ops = collections.Counter(opcode(r[col["Source"]].strip()) for r in data[i:i + window])
        print(f"{i:6d} {s / total:8.1%} {cum / total:6.1%} {sum(executed[i:i + window]):10d}  " +
              " ".join(f"{k}:{v / s:.0%}" for k, v in top.most_common(3)) + " | " +
              " ".join(k for k, _ in ops.most_common(5)))
    # The main loop: the longest stretch whose instructions each executed at least
    # 4x the most common count (the warps that ran straight-line code once).
    warps = collections.Counter(e for e in executed if e).most_common(1)[0][0]
    peak = 8 * warps
    best, start = (0, 0), None
    for i, e in enumerate(executed + [0]):
        if e >= peak // 2 and start is None:
            start = i
        elif e < peak // 2 and start is not None:
            best = max(best, (i - start, start))
            start = None
    length, first = best
    mix = collections.Counter()
    for r, e in zip(data[first:first + length], executed[first:first + length]):
        mix[opcode(r[col["Source"]].strip())] += e
    print(f"main loop: instructions {first}..{first + length - 1} ({length}), {sum(mix.values()) / warps:.0f} "
          f"executed per warp ({warps} warps): " + " ".join(f"{k} {v / warps:.0f}" for k, v in mix.most_common(12)))
    print(f"main loop share of samples: {sum(samples[first:first + length]) / total:.1%}")


if __name__ == "__main__":
    main()
