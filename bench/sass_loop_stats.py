#!/usr/bin/env python3
"""Instructions per weight in the hottest loop of each kernel in a SASS dump.

usage: sass_loop_stats.py FILE.sass [--json OUT.json]

For every function in `cuobjdump --dump-sass` output, the decode loop is the
innermost loop (the shortest backward-branch span) that contains tensor-core
MMAs (HMMA or IMMA); its instructions are counted by opcode. Every m16n8k16
HMMA consumes 16 x 16 decoded weights of the warp, 8 per lane; every m16n8k32
IMMA of the imma form 16 x 8 weights (four hash bytes each), 4 per lane. So
the loop decodes 8 x HMMA + 4 x IMMA weights per lane per iteration, however
the compiler unrolled or split it. A CUDA-core form (reduce, gate_up,
scatter) has no MMA: its decode loop is the innermost loop with IDP4A, one per
weight. The loop the branches delimit can hold the
per-tile epilogue too (taken once per tile), so the decode span, first to last
MMA of the loop, is reported as well: the per-weight work alone.
"""
import collections
import json
import re
import sys

FUNC = re.compile(r"Function : (\S+)")
INSTR = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)([^;]*);")


def parse(path):
    funcs, cur = {}, None
    for line in open(path, errors="replace"):
        f = FUNC.search(line)
        if f:
            cur = f.group(1)
            funcs[cur] = []
            continue
        m = INSTR.search(line)
        if m and cur:
            funcs[cur].append((int(m.group(1), 16), m.group(3), m.group(4)))
    return funcs


def main():
    path = sys.argv[1]
    out = {}
    for name, ins in parse(path).items():
        addr_index = {a: i for i, (a, _, _) in enumerate(ins)}
        best = None
        # Tensor-core loops first; a CUDA-core form's decode loop is the innermost one with IDP4A.
        for marks in (("HMMA", "IMMA"), ("IDP",)):
            for i, (a, op, args) in enumerate(ins):
                if op.startswith("BRA"):
                    t = re.search(r"0x([0-9a-f]+)", args)
                    if t and int(t.group(1), 16) < a and int(t.group(1), 16) in addr_index:
                        j = addr_index[int(t.group(1), 16)]
                        has_decode = any(o.startswith(marks) for _, o, _ in ins[j:i + 1])
                        if has_decode and (best is None or i - j < best[1] - best[0]):
                            best = (j, i)
            if best:
                break
        if not best:
            continue
        body = ins[best[0]:best[1] + 1]
        ops = collections.Counter(op.split(".")[0] for _, op, _ in body)
        w = 8 * ops["HMMA"] + 4 * ops["IMMA"] or ops["IDP"]
        # The decode span: first to last MMA of the loop (the per-weight work
        # without the loop's loads, bookkeeping and rarely taken epilogue); a
        # CUDA-core loop's span is the loop.
        mmas = [i for i, (_, op, _) in enumerate(body) if op.startswith(("HMMA", "IMMA"))] or [0, len(body) - 1]
        span = body[mmas[0]:mmas[-1] + 1]
        span_ops = collections.Counter(op.split(".")[0] for _, op, _ in span)
        entry = {"loop_instructions": len(body), "by_opcode": dict(ops.most_common()),
                 "decode_span_instructions": len(span), "decode_span_by_opcode": dict(span_ops.most_common())}
        if w:
            entry["weights_per_lane_per_iteration"] = w
            entry["instructions_per_weight"] = round(len(body) / w, 3)
            entry["decode_span_instructions_per_weight"] = round(len(span) / w, 3)
        out[name] = entry
        print(f"{name[:100]}: loop {len(body)} instr" + (f" ({len(body)/w:.2f} per weight), decode span "
                                                        f"{len(span)} ({len(span)/w:.2f} per weight)" if w else ""))
        print("    span:", ", ".join(f"{k} {v}" for k, v in span_ops.most_common(10)))
    if "--json" in sys.argv:
        json.dump(out, open(sys.argv[sys.argv.index("--json") + 1], "w"), indent=1)


if __name__ == "__main__":
    main()
