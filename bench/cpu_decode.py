#!/usr/bin/env python3
"""CPU decode speed of `trellis run` on the shipped models (issue 5: the 3-bit
model must generate >= 100 tok/s on this machine's CPU cores).

Runs `TRELLIS run -m MODEL -p PROMPT -n 256 --temp 0` (or, with --sampling
OPTIONS, those sampling options instead of `--temp 0`) REPEAT times for the bf16
fixture and the shipped 3-bit model, parses the stats line's generation tok/s,
and writes best and median per model together with the machine, the commit and
the load average before and after (other jobs on a shared machine lower and
scatter the numbers; the median is the figure). With --baseline, a second
binary (an older build) runs interleaved with the first, so both see the
same load.

    bench/cpu_decode.py --trellis build/cpu-speed/trellis --out bench/results/cpu_decode.json \
        [--baseline OLD_BUILD/trellis --baseline-label "commit abc1234"] [--sampling "--temp 0.8 --seed 1"]
"""
import argparse
import json
import os
import platform
import re
import statistics
import subprocess

MODELS = {"bf16": "models/shakespeare-qwen3-15m", "3bit": "models/shakespeare-qwen3-15m-3bit"}
PROMPT = "ROMEO:"


def cpu_name():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(v) for v in f.read().split()[:3]]


def generation_tps(trellis, model, tokens, sampling):
    cmd = [trellis, "run", "-m", model, "-p", PROMPT, "-n", str(tokens)] + sampling
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    m = re.search(r"generation: (\d+) tokens, ([\d.]+) tok/s \| (.*)", out.stdout + out.stderr)
    if not m:
        raise SystemExit("no stats line from: " + " ".join(cmd))
    return float(m.group(2)), m.group(3).strip()


def summary(runs):
    return {name: {"runs": v, "best": max(v), "median": statistics.median(v)} for name, v in runs.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trellis", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--baseline", help="an older trellis binary, run interleaved with --trellis")
    ap.add_argument("--baseline-label", default="", help="what the baseline is (recorded as given)")
    ap.add_argument("--sampling", default="--temp 0", help="trellis run's sampling options (default: greedy)")
    a = ap.parse_args()
    sampling = a.sampling.split()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    binaries = {"current": a.trellis}
    if a.baseline:
        binaries["baseline"] = a.baseline
    load_before = loadavg()
    runs = {b: {name: [] for name in MODELS} for b in binaries}
    backend = ""
    for _ in range(a.repeat):
        for b, path in binaries.items():
            for name, model in MODELS.items():
                tps, backend = generation_tps(path, model, a.tokens, sampling)
                runs[b][name].append(tps)
    result = {
        "machine": {"cpu": cpu_name(), "cores": os.cpu_count(), "backend": backend},
        "commit": commit,
        "command": f"{a.trellis} run -m MODEL -p {PROMPT!r} -n {a.tokens} {a.sampling}",
        "load_average_before": load_before,
        "load_average_after": loadavg(),
        "generation_tok_s": summary(runs["current"]),
    }
    if a.baseline:
        result["baseline"] = {"binary": a.baseline, "label": a.baseline_label,
                              "generation_tok_s": summary(runs["baseline"])}
    with open(a.out, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    for b in binaries:
        for name, r in summary(runs[b]).items():
            print(f"{b} {name}: median {r['median']:.1f} tok/s, best {r['best']:.1f} ({len(r['runs'])} runs)")
    print("load average before/after:", load_before, result["load_average_after"])


if __name__ == "__main__":
    main()
