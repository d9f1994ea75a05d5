#!/usr/bin/env python3
"""The decode loop of each kernel in an sm_90a cubin, read without a disassembler.

usage: cubin_loops.py FILE.cubin [--json OUT.json] [--mix]
  make the cubin with the build's flags, e.g.
  nvcc -I src/cuda/trellis -I include -O3 -DNDEBUG -std=c++17 -x cu \\
       -gencode=arch=compute_90a,code=sm_90a -cubin src/cuda/trellis/imma_axis0.cu -o imma_axis0.cubin

For machines with nvcc but no cuobjdump/nvdisasm (bench/sass_loop_stats.py
reads cuobjdump's text on the GPU machine). Each `.text.KERNEL` section of the
ELF is a run of 16-byte instructions; the opcode is the low 12 bits of the
first 8 bytes. The codes below were read from test kernels compiled by nvcc
13.0 for sm_90a, one instruction kind at a time (they are not a documented
interface: check a new toolkit the same way):
  BRA 0x947 (signed offset in bytes from the next instruction:
  int32(bits 32..63)·256 + bits 16..23 ·4), IMMA 0x237, HMMA 0x23c,
  wgmma (IGMMA) 0xdf1, WARPGROUP.ARRIVE / DEPBAR 0x9c5 (a DEPBAR, i.e.
  wgmma.wait_group, has bit 47 set; its group count is bits 8..15 of the
  second 8 bytes), LDL 0x983, STL 0x387, LDG 0x981 (its width in bits 9..11
  of the second 8 bytes: 2 = 16-bit, 4 = 32, 5 = 64, 6 = 128), IDP4A 0x226
  (register operands) and 0xc26 (an operand from the constant bank, also
  what ptxas makes of an immediate byte mask).
The decode loop, its weights per lane and its MMA span are as
bench/decode_loop.py defines them (a CUDA-core form's loop: the innermost one
with IDP4A, one per weight, where no loop holds an MMA). Also reported: local-memory spill
instructions, wgmma waits and global loads by width inside the loop (static
counts: both sides of a branch in the loop are counted). --mix adds each
loop's instruction mix by mnemonic, from bench/sm90a_opcodes.json (learnt by
bench/sass_opcode_names.py; an opcode it does not hold prints as its number).
"""
import collections
import json
import os
import re
import struct
import sys

from decode_loop import decode_loop_span, mma_span, weights_per_lane

BRA, IMMA, HMMA, WGMMA, WARPGROUP, LDL, STL, LDG = 0x947, 0x237, 0x23C, 0xDF1, 0x9C5, 0x983, 0x387, 0x981
IDP4A = (0x226, 0xC26)
LDG_BITS = {2: 16, 4: 32, 5: 64, 6: 128}


def text_sections(path):
    """{section name: bytes} for the ELF64 file's .text.* sections."""
    b = open(path, "rb").read()
    if b[:4] != b"\x7fELF" or b[4] != 2:
        sys.exit(f"{path}: not an ELF64 file (a cubin from nvcc -cubin)")
    shoff = struct.unpack_from("<Q", b, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", b, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", b, shoff + i * shentsize) for i in range(shnum)]
    names_at = headers[shstrndx][4]
    out = {}
    for h in headers:
        name = b[names_at + h[0]: b.index(b"\0", names_at + h[0])].decode()
        if name.startswith(".text."):
            out[name[len(".text."):]] = b[h[4]: h[4] + h[5]]
    return out


def int32(x):
    return x - (1 << 32) if x & 0x80000000 else x


def instructions(code):
    """A .text section's 16-byte instructions as (low, high) 64-bit words, and their opcodes (low 12 bits)."""
    ins = [struct.unpack_from("<QQ", code, i) for i in range(0, len(code), 16)]
    return ins, [lo & 0xFFF for lo, _ in ins]


def decode_loop(code):
    ins, ops = instructions(code)
    back = [(i + 1 + (int32(lo >> 32) * 256 + ((lo >> 16) & 0xFF) * 4) // 16, i)
            for i, (lo, _) in enumerate(ins) if ops[i] == BRA and lo >> 63]
    best = decode_loop_span([(t, i) for t, i in back if 0 <= t <= i],
                            lambda t, i: any(o in (IMMA, HMMA, WGMMA) for o in ops[t:i + 1]),
                            lambda t, i: any(o in IDP4A for o in ops[t:i + 1]))
    if best is None:
        return None
    first, last = best
    body = ops[first: last + 1]
    imma, hmma = body.count(IMMA), body.count(HMMA)
    weights = weights_per_lane(hmma=hmma, imma=imma, wgmma=body.count(WGMMA), idp4a=sum(o in IDP4A for o in body))
    span_at = mma_span([o in (IMMA, HMMA, WGMMA) for o in body])
    span = span_at[1] - span_at[0] + 1 if span_at else None
    waits = [(ins[j][1] >> 8) & 0xFF for j in range(first, last + 1)
             if ops[j] == WARPGROUP and (ins[j][0] >> 47) & 1]
    loads = collections.Counter(LDG_BITS.get((ins[j][1] >> 9) & 7, 0) for j in range(first, last + 1) if ops[j] == LDG)
    return {
        "loop_opcodes": dict(collections.Counter(f"0x{o:03x}" for o in body).most_common()),
        "loop_instructions": len(body),
        "imma": imma,
        "hmma": hmma,
        "wgmma": body.count(WGMMA),
        "weights_per_lane": weights,
        "instructions_per_weight": round(len(body) / weights, 3) if weights else None,
        "mma_span_instructions": span,
        "mma_span_instructions_per_weight": round(span / weights, 3) if weights and span else None,
        "spill_instructions": body.count(LDL) + body.count(STL),
        "wgmma_waits": waits,
        "global_loads_by_bits": dict(sorted(loads.items())),
    }


def short_name(mangled):
    """imma_axis0_kernel<Li3ELi12E> from the mangled name (the identifier whose length prefix fits)."""
    end = mangled.find("_kernelI")
    if end < 0:
        return mangled
    end += len("_kernel")
    for start in range(end - 1, 0, -1):
        digits = re.search(r"(\d+)$", mangled[:start])
        if digits and any(int(digits.group(1)[i:]) == end - start for i in range(len(digits.group(1)))):
            args = re.match(r"I(.*?)EEv", mangled[end:])
            return f"{mangled[start:end]}<{args.group(1) if args else ''}>"
    return mangled


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        sys.exit(__doc__)
    names = {}
    if "--mix" in args:
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "sm90a_opcodes.json")) as f:
            names = json.load(f)
    stats = {}
    for name, code in text_sections(args[0]).items():
        loop = decode_loop(code)
        if loop:
            stats[name] = loop
            per, span = loop["instructions_per_weight"], loop["mma_span_instructions_per_weight"]
            detail = [f"{per} per weight"] * bool(per) + [f"MMA span {span}"] * bool(span)
            print(f"{short_name(name)}: loop {loop['loop_instructions']} instr"
                  + (f" ({', '.join(detail)})" if detail else "")
                  + f", spills {loop['spill_instructions']}, wgmma waits {loop['wgmma_waits']}"
                  + f", loads by bits {loop['global_loads_by_bits']}")
            if names:
                mix = collections.Counter()
                for op, n in loop["loop_opcodes"].items():
                    mix[names.get(op, op)] += n
                print("  mix: " + " ".join(f"{m} {n}" for m, n in mix.most_common()))
    if "--json" in args:
        with open(args[args.index("--json") + 1], "w") as f:
            json.dump(stats, f, indent=1)


if __name__ == "__main__":
    main()
