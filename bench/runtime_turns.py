#!/usr/bin/env python3
"""The JSON of an A/B of `trellis run` arms that took turns (runtime_device.sh's
`turns`): per arm the prompt and generation tok/s of each run and their medians.

usage: runtime_turns.py LOG OUT.json BENCH METHOD ARM=DESCRIPTION...
  LOG holds one line per run, as `turns` writes them:
    arm=LABEL run R exit E: <trellis run's stats line>
  A run whose line has no stats (a failed run) is listed under "failed" and
  left out of the tok/s lists. The GPU, driver and clock come from
  nvidia-smi, the commit from $COMMIT.
"""
import json
import os
import re
import statistics
import subprocess
import sys

LINE = re.compile(r"arm=(\S+) run (\d+) exit (\d+): (.*)$")
STATS = re.compile(r"prompt: \d+ tokens, ([\d.]+) tok/s \| generation: \d+ tokens, ([\d.]+) tok/s")


def main():
    log, out, bench, method, *arm_args = sys.argv[1:]
    arms = dict(a.split("=", 1) for a in arm_args)
    gen = {a: [] for a in arms}
    prompt = {a: [] for a in arms}
    failed = []
    for line in open(log):
        m = LINE.match(line.strip())
        if not m or m[1] not in arms:
            continue
        s = STATS.search(m[4])
        if m[3] != "0" or not s:
            failed.append({"arm": m[1], "run": int(m[2]), "exit": int(m[3]), "line": m[4]})
            continue
        prompt[m[1]].append(float(s[1]))
        gen[m[1]].append(float(s[2]))
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm", "--format=csv,noheader"],
                             capture_output=True, text=True).stdout.strip().split(", ")
    except FileNotFoundError:
        smi = []
    smi += ["unknown"] * (3 - len(smi))
    doc = {"bench": bench, "gpu": smi[0], "driver": smi[1], "max_sm_clock": smi[2],
           "commit": os.environ.get("COMMIT", "unknown"), "arms": arms, "method": method,
           "generation_tok_s": gen, "prompt_tok_s": prompt,
           "median_generation": {a: statistics.median(v) for a, v in gen.items() if v},
           "median_prompt": {a: statistics.median(v) for a, v in prompt.items() if v},
           "failed": failed}
    json.dump(doc, open(out, "w"), indent=1)
    print(json.dumps({k: doc[k] for k in ("bench", "median_generation", "failed")}))


if __name__ == "__main__":
    main()
