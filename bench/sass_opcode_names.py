#!/usr/bin/env python3
"""Learn SASS mnemonics for the opcode numbers bench/cubin_loops.py reads.

usage: sass_opcode_names.py FILE.cubin SOURCE.csv [--into bench/sm90a_opcodes.json]

SOURCE.csv is Nsight Compute's source page of one kernel (bench/ncu_source.sh
writes one per kernel; its first line names the kernel) and FILE.cubin the same
source built locally with the same flags, so the kernel's instructions are the
same ones in the same order: the i-th instruction's opcode (the low 12 bits of
its first 8 bytes) is paired with the i-th row's mnemonic. Each opcode must
always meet the same mnemonic, and the instruction counts must agree, or the
script stops. The pairs are merged into the JSON file (default
bench/sm90a_opcodes.json, which also holds the two IDP4A codes that
cubin_loops.py documents), which cubin_loops.py --mix reads; this machine has
nvcc but no disassembler, and the GPU machine's cuobjdump cannot see a
kernel that was never sent there.
"""
import collections
import csv
import json
import os
import re
import sys

from cubin_loops import instructions, short_name, text_sections
from ncu_source_table import opcode

DEFAULT_MAP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sm90a_opcodes.json")


def demangled_args(kernel):
    """(kernel name, template arguments as integers) from ncu's demangled name, e.g.
    imma_axis0_kernel<(int)3, (int)12> → ('imma_axis0_kernel', [3, 12])."""
    head, _, args = kernel.replace("<unnamed>", "").partition("<")
    name = re.split(r"[\s:]+", head.split("(")[0])[-1]
    args = args[: args.index(">(")] if ">(" in args else ""
    return name, [int(a.split(")")[-1]) for a in args.split(",") if a.strip()]


def matching_section(sections, kernel):
    """The cubin section whose mangled name carries the kernel's name and template arguments."""
    name, values = demangled_args(kernel)
    hits = [sec for sec in sections if name in sec
            and [int(t) for t in re.findall(r"L[ib](\d+)E", short_name(sec).split("<", 1)[-1])] == values]
    if len(hits) != 1:
        sys.exit(f"{len(hits)} cubin kernels match {kernel} ({name} with arguments {values})")
    return hits[0]


def main():
    args = sys.argv[1:]
    if len(args) < 2 or args[0].startswith("-"):
        sys.exit(__doc__)
    into = args[args.index("--into") + 1] if "--into" in args else DEFAULT_MAP
    rows = list(csv.reader(open(args[1])))
    kernel, header, data = rows[0][1], rows[1], rows[2:]
    source = header.index("Source")
    sections = text_sections(args[0])
    section = matching_section(sections, kernel)
    _, ops = instructions(sections[section])
    if len(ops) != len(data):
        sys.exit(f"{args[0]}: {len(ops)} instructions, {args[1]}: {len(data)} rows: not the same build")
    seen = collections.defaultdict(set)
    for op, row in zip(ops, data):
        seen[op].add(opcode(row[source]))
    clashes = {hex(op): sorted(names) for op, names in seen.items() if len(names) > 1}
    if clashes:
        sys.exit(f"opcodes with more than one mnemonic: {clashes}")
    names = json.load(open(into)) if os.path.exists(into) else {}
    for op, (name,) in seen.items():
        key = f"0x{op:03x}"
        if names.get(key, name) != name:
            sys.exit(f"{key}: {names[key]} in {into}, {name} here")
        names[key] = name
    with open(into, "w") as f:
        json.dump(dict(sorted(names.items())), f, indent=1)
        f.write("\n")
    print(f"{into}: {len(names)} opcodes ({len(seen)} seen in {short_name(section)})")


if __name__ == "__main__":
    main()
