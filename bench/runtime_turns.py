#!/usr/bin/env python3
"""The JSON of an A/B of `trellis run` arms that took turns (runtime_device.sh's
`turns`): per arm the prompt and generation tok/s of each run and their medians.
Also the one reader of `trellis run`'s stats line (run_stats) and of the GPU's
name, driver and clocks (gpu_info) for runtime_device.sh's other results.

usage: runtime_turns.py LOG OUT.json BENCH METHOD ARM=DESCRIPTION... [--same-output]
  LOG holds one line per run, as `turns` writes them:
    arm=LABEL run R exit E: <trellis run's stats line>
  A run whose line has no stats (a failed run) is listed under "failed" and
  left out of the tok/s lists. The GPU, driver and clock come from
  nvidia-smi, the commit from $COMMIT. --same-output adds
  "same_generated_text": whether every arm's last run printed the same text
  (/tmp/turn_ARM.out, as `turns` keeps it).
"""
import argparse
import json
import os
import re
import statistics
import subprocess

LINE = re.compile(r"arm=(\S+) run (\d+) exit (\d+): (.*)$")
STATS = re.compile(r"prompt: (\d+) tokens, ([\d.]+) tok/s \| generation: (\d+) tokens, ([\d.]+) tok/s \| "
                   r"([^|]*?)\s*(?:\| (.*))?$")


def run_stats(line):
    """`trellis run`'s stats line as a dict, or None when the line is not one."""
    m = STATS.search(line)
    if not m:
        return None
    doc = {"prompt_tokens": int(m[1]), "prompt_tok_s": float(m[2]), "generated_tokens": int(m[3]),
           "generation_tok_s": float(m[4]), "backend": m[5]}
    if m[6]:
        doc["steps"] = m[6]
    return doc


def gpu_info():
    """name, driver, max SM clock and memory clock of the first GPU (each "unknown" without nvidia-smi)."""
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm,clocks.mem",
                              "--format=csv,noheader"], capture_output=True, text=True).stdout
        fields = smi.strip().splitlines()[0].split(", ") if smi.strip() else []
    except FileNotFoundError:
        fields = []
    fields += ["unknown"] * (4 - len(fields))
    return dict(zip(("gpu", "driver", "max_sm_clock", "mem_clock"), fields))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log")
    ap.add_argument("out")
    ap.add_argument("bench")
    ap.add_argument("method")
    ap.add_argument("arms", nargs="+", metavar="ARM=DESCRIPTION")
    ap.add_argument("--same-output", action="store_true")
    a = ap.parse_args()
    arms = dict(x.split("=", 1) for x in a.arms)
    gen = {arm: [] for arm in arms}
    prompt = {arm: [] for arm in arms}
    failed = []
    for line in open(a.log):
        m = LINE.match(line.strip())
        if not m or m[1] not in arms:
            continue
        s = run_stats(m[4])
        if m[3] != "0" or not s:
            failed.append({"arm": m[1], "run": int(m[2]), "exit": int(m[3]), "line": m[4]})
            continue
        prompt[m[1]].append(s["prompt_tok_s"])
        gen[m[1]].append(s["generation_tok_s"])
    doc = {"bench": a.bench, **gpu_info(), "commit": os.environ.get("COMMIT", "unknown"), "arms": arms,
           "method": a.method, "generation_tok_s": gen, "prompt_tok_s": prompt,
           "median_generation": {arm: statistics.median(v) for arm, v in gen.items() if v},
           "median_prompt": {arm: statistics.median(v) for arm, v in prompt.items() if v},
           "failed": failed}
    if a.same_output:
        texts = {open(f"/tmp/turn_{arm}.out").read() for arm in arms}
        doc["same_generated_text"] = len(texts) == 1
    json.dump(doc, open(a.out, "w"), indent=1)
    print(json.dumps({k: doc[k] for k in ("bench", "median_generation", "failed")}))


if __name__ == "__main__":
    main()
