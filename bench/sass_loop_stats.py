#!/usr/bin/env python3
"""Instructions per weight in the hottest loop of each kernel in a SASS dump.

usage: sass_loop_stats.py FILE.sass [--json OUT.json]

For every function in `cuobjdump --dump-sass` output, the decode loop and its
weights per lane as bench/decode_loop.py defines them (an IMMA counted as the
imma form's, 4 per lane); a CUDA-core form (reduce, gate_up, scatter) has no
MMA: its decode loop is the innermost loop with IDP4A, one per weight, and its
span the whole loop. Both the loop (which can hold the per-tile epilogue) and
the MMA span are reported, with their opcodes.
"""
import collections
import json
import re
import sys

from decode_loop import decode_loop_span, mma_span, weights_per_lane

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
        back = []
        for i, (a, op, args) in enumerate(ins):
            t = re.search(r"0x([0-9a-f]+)", args) if op.startswith("BRA") else None
            if t and int(t.group(1), 16) < a and int(t.group(1), 16) in addr_index:
                back.append((addr_index[int(t.group(1), 16)], i))
        best = decode_loop_span(back, lambda j, i: any(o.startswith(("HMMA", "IMMA")) for _, o, _ in ins[j:i + 1]),
                                lambda j, i: any(o.startswith("IDP") for _, o, _ in ins[j:i + 1]))
        if not best:
            continue
        body = ins[best[0]:best[1] + 1]
        ops = collections.Counter(op.split(".")[0] for _, op, _ in body)
        w = weights_per_lane(hmma=ops["HMMA"], imma=ops["IMMA"], idp4a=ops["IDP"])
        first, last = mma_span([op.startswith(("HMMA", "IMMA")) for _, op, _ in body]) or (0, len(body) - 1)
        span = body[first:last + 1]
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
