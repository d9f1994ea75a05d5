#!/usr/bin/env python3
"""Renders docs/PERFORMANCE.md from the committed result files.

usage: bench/perf_table.py > docs/PERFORMANCE.md
"""
import json
import os
import re
import statistics

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
RES = os.path.join(ROOT, "bench", "results")


def load(name):
    path = os.path.join(RES, name)
    return json.load(open(path)) if os.path.exists(path) else None


def kernels_section(doc):
    out = ["## CUDA trellis kernels (H200)", ""]
    out.append(f"GPU {doc['gpu']}, {doc['sm_count']} SMs, SM clock {doc['sm_clock_mhz']} MHz, memory clock "
               f"{doc['mem_clock_mhz']} MHz, CUDA {doc['runtime_version']}, measured copy bandwidth "
               f"{doc['copy_gbs']:.0f} GB/s, commit {doc['commit']} (`bench/results/h200_trellis_kernels.json`).")
    out.append(f"Method: {doc['method']}.")
    out.append("")
    ops = []
    for r in doc["results"]:
        if r["op"] not in ops:
            ops.append(r["op"])
    for op in ops:
        rows = [r for r in doc["results"] if r["op"] == op]
        r0 = rows[0]
        out.append(f"### {op}: {r0['out']}×{r0['in']}" + (" ×2 (gate and up)" if op == "gate_up" else ""))
        out.append("")
        out.append("| form | numerics | k | M | µs | T weights/s | GB/s | % copy BW | cuBLAS bf16 µs | speed-up |")
        out.append("|---|---|---|---|---|---|---|---|---|---|")
        for r in sorted(rows, key=lambda r: (r["form"], r["k"], r["M"])):
            out.append(f"| {r['form']} | {r['numerics']} | {r['k']} | {r['M']} | {r['median_us']:.1f} | "
                       f"{r['weights_per_s'] / 1e12:.2f} | {r['effective_gbs']:.0f} | {r['pct_of_copy_bw']:.0f} | "
                       f"{r['cublas_bf16_us']:.1f} | {r['speedup_vs_cublas_bf16']:.2f}× |")
        out.append("")
    return out


def kernels_confirmation(doc, full):
    """The quick re-run at a later commit: M = 1 and 8 of the tensor-core forms, next to the full table's."""
    base = {(r["op"], r["form"], r["k"], r["M"]): r["median_us"] for r in full["results"]}
    ms = sorted({r["M"] for r in doc["results"]})
    out = [f"Re-run at commit {doc['commit']} (`bench/results/h200_trellis_kernels_quick.json`, M = "
           f"{', '.join(map(str, ms))}, "
           f"same method) — the tensor-core forms, µs (mma: this commit / the table's commit {full['commit']}; "
           "imma, the integer form, serves M ≤ 4 and so has no M = 8 column; the M = 8 / M = 1 ratio is taken "
           "against the faster M = 1 form):", ""]
    out.append("| op | k | imma M = 1 | mma M = 1 | mma M = 8 | M = 8 / M = 1 | cuBLAS bf16 M = 1 | best M = 1 vs cuBLAS |")
    out.append("|---|---|---|---|---|---|---|---|")
    find = {(r["op"], r["form"], r["k"], r["M"]): r for r in doc["results"]}
    for r in doc["results"]:
        if r["form"] != "mma" or r["M"] != 1:
            continue
        r8 = find.get((r["op"], "mma", r["k"], 8))
        ri = find.get((r["op"], "imma", r["k"], 1))
        b1, b8 = base.get((r["op"], "mma", r["k"], 1)), base.get((r["op"], "mma", r["k"], 8))
        best = min(r["median_us"], ri["median_us"] if ri else float("inf"))
        out.append(f"| {r['op']} | {r['k']} | {ri['median_us']:.1f} | " if ri else f"| {r['op']} | {r['k']} | – | ")
        out[-1] += (f"{r['median_us']:.1f} / {b1:.1f} | {r8['median_us']:.1f} / {b8:.1f} | {r8['median_us'] / best:.2f} | "
                    f"{r['cublas_bf16_us']:.1f} | {r['cublas_bf16_us'] / best:.2f}× |")
    out.append("")
    return out


def runtime_section(doc):
    out = ["## Model runtime on the H200 (`trellis run --device cuda`)", ""]
    out.append(f"`bench/results/h200_runtime.json` (`bench/runtime_device.sh`): {doc['gpu']}, driver {doc['driver']}, "
               f"commit {doc['commit']}. Model: {doc['model']}. Method: {doc['method']}.")
    out += ["", "| CUDA graphs | prompt tok/s | generation tok/s |", "|---|---|---|"]
    for key, name in (("graphs_on", "on"), ("graphs_off", "off"),
                      ("graphs_on_no_programmatic_launch", "on, no programmatic launches (TRELLIS_PDL=0)"),
                      ("graphs_on_sampled", "on, sampled (--seed 1, trellis run's default sampling)")):
        r = doc.get(key)
        if r:
            out.append(f"| {name} | {r['prompt_tok_s']:.0f} | {r['generation_tok_s']:.1f} |")
    bars = doc["acceptance"]
    out += ["", f"Bars (issue 5): prompt ≥ {bars['prompt_tok_s']} tok/s, generation ≥ {bars['generation_tok_s']} "
            "tok/s.", ""]
    return out


def h100_runtime_section(docs):
    """The runtime runs of later commits that got an H100 (no H200 was lent): comparable with each other, not with
    the H200 table above."""
    out = ["### Later commits, measured on an H100", "",
           "The same command on an H100 (NVIDIA H100 80GB HBM3), where an H200 was asked for and not lent; "
           "compare these rows with each other, not with the H200 table above. The steps column: the one-token "
           "steps' host time before each launch and their wait for a result, per step (`model::step_report`).", "",
           "| file | commit | graphs on: prompt / generation tok/s | graphs off | TRELLIS_PDL=0 | sampled | steps (graphs on) |",
           "|---|---|---|---|---|---|---|"]
    for name, doc in docs:
        on, off, nopdl, sampled = (doc.get(k) or {} for k in ("graphs_on", "graphs_off",
                                                               "graphs_on_no_programmatic_launch", "graphs_on_sampled"))
        out.append(f"| `{name}` | {doc['commit']} | {on.get('prompt_tok_s', 0):.0f} / {on.get('generation_tok_s', 0):.1f} | "
                   f"{off.get('generation_tok_s', 0):.1f} | {nopdl.get('generation_tok_s', 0):.1f} | "
                   + (f"{sampled['generation_tok_s']:.1f} | " if 'generation_tok_s' in sampled else "– | ")
                   + f"{on.get('steps', '–')} |")
    out.append("")
    return out


def turns_section(title, text, docs, columns, change, build=True, prompt=()):
    """An A/B of `trellis run` arms that took turns: per file the generation tok/s of each arm's runs (columns:
    (arm, heading) pairs), the change of the median of arm change[0]'s runs against arm change[1]'s, and the prompt
    tok/s of the (arm, heading) pairs in `prompt`."""
    head = ["file", "commit"] + (["build"] if build else []) + ["GPU"] + [h for _, h in columns] + ["median change"]
    head += [h for _, h in prompt]
    out = [title, "", text, "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, doc in docs:
        gen = doc["generation_tok_s"]
        row = [f"`{name}`", doc["commit"]] + ([doc.get("build", "main")] if build else []) + [doc["gpu"]]
        row += [" ".join(f"{v:.1f}" for v in gen[arm]) if arm in gen else "–" for arm, _ in columns]
        row.append(f"{100 * (statistics.median(gen[change[0]]) / statistics.median(gen[change[1]]) - 1):+.1f} %")
        row += [" ".join(f"{v:.0f}" for v in doc["prompt_tok_s"][arm]) for arm, _ in prompt]
        out.append("| " + " | ".join(row) + " |")
    out.append("")
    return out


def norm_fusion_section(docs):
    """The fused residual norms against launched ones (runtime_device.sh norm_ab), one binary, runs taking turns."""
    return turns_section(
        "### Fused residual norms (`TRELLIS_NORM_FUSION`)",
        "One build, `trellis run --device cuda` on the synthetic Qwen3-14B at 3 bits (512-token prompt, 256 "
        "generated, CUDA graphs), the in-layer residual norms fused (default) and launched "
        "(`TRELLIS_NORM_FUSION=0`) taking turns; generation tok/s of each run.",
        docs, [("fused", "fused"), ("launched", "launched")], ("fused", "launched"), build=False)


def coded_head_section(docs):
    """A bf16 LM head against a coded one (runtime_device.sh head), one binary, the two models taking turns."""
    return turns_section(
        "### A coded LM head (`trellis synth --quantize-head`)",
        "One build, `trellis run --device cuda --temp 0` on the synthetic Qwen3-14B at 3 bits (512-token prompt, "
        "256 generated, CUDA graphs), with its LM head bf16 (the table above) and coded at 3 bits like the "
        "layers (`--quantize-head`, as `trellis quantize --quantize-head` writes it), the two models taking "
        "turns; tok/s of each run.",
        docs, [("bf16_head", "generation: bf16 head"), ("coded_head", "coded head")], ("coded_head", "bf16_head"),
        prompt=[("bf16_head", "prompt: bf16 head"), ("coded_head", "coded head")])


def sampled_ab_section(docs):
    """Greedy decoding against trellis run's default sampling (runtime_device.sh sampled), taking turns."""
    return turns_section(
        "### Sampling against greedy decoding",
        "`trellis run --device cuda` on the synthetic Qwen3-14B at 3 bits (512-token prompt, 256 generated, CUDA "
        "graphs), greedy (`--temp 0`) and with the default sampling (`--seed 1`: temperature 0.8, top-k 40, top-p "
        "0.95, min-p 0.05) taking turns; generation tok/s of each run. `build` says whose sampling loop ran: main's "
        "before the device choice (the host takes the step's largest logits, draws the token, then records and "
        "launches the next step), branch `pipelined-sampling`'s (the choice in a host function in the stream, the "
        "next step launched before it), branch `device-sampling`'s (the choice in a kernel inside the step, "
        "pipelined like greedy decoding; docs/KERNELS.md) or branch `sampling-warp-choice`'s (that choice on a warp, "
        "the top-logits sorts on the value words only). `main's build`: main of that time built in the same call "
        "and taking the same turns (the file's build note: at 13a8c1f main's synchronous loop, at cdadf8f main's "
        "one-thread choice kernel).",
        docs, [("greedy", "greedy"), ("sampled", "sampled"), ("sampled_base", "main's build")], ("sampled", "greedy"))


def profile_section(doc):
    out = ["### Where a forward's GPU time goes (`TRELLIS_PROFILE`)", "",
           f"`bench/results/h200_runtime_profile.json` (table: `h200_runtime_profile.txt`), commit "
           f"{doc.get('commit', 'not recorded')}: the same prompt with "
           f"64 tokens generated, under the op profiler. {doc['method']}.", ""]
    if any(p["held_forwards"] < p["forwards"] for p in doc["phases"].values()):
        out += ["Not every forward was held: the host filled CUDA's launch queue behind the hold and blocked, "
                "so the GPU times of the ops queued after that include launch gaps (they are upper bounds; "
                "the small ops, a few µs each, most of all). The hold is capped at 50 ms.", ""]
    for name, p in doc["phases"].items():
        out.append(f"{name}: {p['forwards']} forwards, GPU {p['gpu_us_per_forward']:.0f} µs per forward "
                   f"({p['gpu_us_per_token']:.1f} µs per token), host queueing {p['host_queue_us_per_forward']:.0f} µs, "
                   f"host between forwards {p['host_between_us_per_forward']:.0f} µs; "
                   f"held {p['held_forwards']}/{p['forwards']}.")
        out += ["", "| op | GPU µs per forward | share |", "|---|---|---|"]
        for r in p["by_op"]:
            out.append(f"| {r['op']} | {r['gpu_us_per_forward']:.1f} | {100 * r['share']:.1f} % |")
        out.append("")
    return out


def viterbi_section(doc):
    out = ["## Viterbi encoder (CPU)", "",
           f"`bench/results/viterbi_mse_cpu.json`: {doc['data']}, T = {doc['T']}, {doc['threads']} threads on "
           f"{doc['hardware_threads']} hardware threads ({doc['cpu']}), commit {doc['commit']}.", "",
           "| L | k | MSE | acceptance | weights/s (wall) | weights per CPU-second |", "|---|---|---|---|---|---|"]
    for r in doc["runs"]:
        q = r["quantizer"]
        out.append(f"| {r['L']} | {r['k']} | {q['mse']:.5f} | ≤ {r['acceptance_mse']} | {q['weights_per_s']:.0f} | "
                   f"{q['weights_per_cpu_s']:.0f} |")
    f = doc.get("fixture")
    if f:
        out += ["", f"Fixture-shaped run ({f['linears']} linears, {f['weights']} weights, k = {f['k']}, L = {f['L']}, "
                f"rotate = {f['rotate']}): {f['seconds']:.0f} s wall, {f['cpu_seconds']:.0f} CPU-s "
                f"(target ≤ {f['target_seconds_on_2_cores']} s on 2 cores)."]
    out.append("")
    return out


def viterbi_cuda_section(doc):
    out = ["## Viterbi encoder (CUDA, H200)", "",
           f"`bench/results/h200_viterbi.json` (`bench/viterbi_device.sh`): GPU {doc['gpu']}, {doc['sm_count']} SMs, "
           f"driver {doc['driver']}, CUDA {doc['runtime_version']}, {doc['host_threads']} host threads, "
           f"commit {doc['commit']}. {doc['data']}, T = {doc['T']}; quantize_tensor over the CUDA encoder "
           "(2 scale passes, 2 overlap candidates), MSE from the CPU decoder.", "",
           "| L | k | MSE | acceptance | seconds | weights/s | blocks = CPU encoder's | decode / circular failures |",
           "|---|---|---|---|---|---|---|---|"]
    for r in doc["runs"]:
        b = r["blocks_vs_cpu"]
        out.append(f"| {r['L']} | {r['k']} | {r['mse']:.5f} | ≤ {r['acceptance_mse']} | {r['seconds']:.2f} | "
                   f"{r['weights_per_s']:.3g} | {b['same_states_as_cpu']}/{b['blocks']} | "
                   f"{b['decode_mismatches']} / {b['not_circular']} |")
    out += ["", "The CUDA encoder mirrors the CPU one rounding for rounding, so these MSEs equal the CPU quantizer's "
            "(`viterbi_mse_cpu.json`). The first row's time includes the CUDA start-up. L = 16 keeps the path costs "
            "in device memory (2 × 2^16 floats per block in flight) instead of shared memory, hence its lower rate; "
            "the issue sets no speed bar there."]
    e = doc.get("encoder_only")
    if e:
        out += ["", f"Encoder alone (k = {e['k']}, L = {e['L']}, {e['weights']} targets, copies included): "
                f"{e['weights_per_s']:.3g} weights/s."]
    lay = doc.get("qwen3_14b_layer")
    if lay:
        out += ["", f"{lay['model']}, k = {lay['k']}, L = {lay['L']} ({lay['weights']} weights, scale search "
                f"included): **{lay['seconds']:.1f} s** (target ≤ {lay['target_seconds']} s).", "",
                "| module | shape | axis | seconds | rel error |", "|---|---|---|---|---|"]
        for t in lay["tensors"]:
            out.append(f"| {t['module']} | {t['shape'][0]}×{t['shape'][1]} | {t['axis']} | {t['seconds']:.2f} | "
                       f"{t['rel_error']:.4f} |")
    out.append("")
    return out


def quantize_section(doc):
    out = ["## `trellis quantize` on the fixture (CPU)", "",
           f"`bench/results/quantize_fixture_cpu.json`: {doc['command']}; {doc['build']}; "
           f"{doc['machine']['cores']} cores ({doc['machine']['cpu']}; {doc['machine']['note']}); commit {doc['commit']}.",
           "", "| bits | rotate | wall s | rel error | bits per weight |", "|---|---|---|---|---|"]
    for r in doc["runs"]:
        out.append(f"| {r['bits']} | {r['rotate']} | {r['wall_seconds']} | {r['rel_error']} | {r['bits_per_weight']} |")
    out += ["", f"Target: ≤ {doc['target_seconds_k3_on_2_cores']} s at 3 bits on 2 cores.", ""]
    return out


def cpu_decode_section(doc, file="cpu_decode.json", title="## `trellis run` on the CPU (generation)"):
    m = doc["machine"]
    out = [title, "",
           f"`bench/results/{file}` (`bench/cpu_decode.py`): {doc['command']}; {m['cores']} cores "
           f"({m['cpu']}; {m['backend']}); commit {doc['commit']}. Load average (1/5/15 min) "
           f"{' / '.join(str(v) for v in doc['load_average_before'])} before, "
           f"{' / '.join(str(v) for v in doc['load_average_after'])} after: other jobs shared the cores, "
           "so the median is the figure.", ""]
    out += ["| build | model | median tok/s | best tok/s | runs |", "|---|---|---|---|---|"]
    builds = [("this commit", doc["generation_tok_s"])]
    if "baseline" in doc:
        builds.append((doc["baseline"]["label"] or "baseline", doc["baseline"]["generation_tok_s"]))
    for build, models in builds:
        for name, r in models.items():
            out.append(f"| {build} | {name} | {r['median']:.1f} | {r['best']:.1f} | {len(r['runs'])} |")
    if file == "cpu_decode.json":
        out += ["", "Bar (issue 5): the shipped 3-bit model generates ≥ 100 tok/s on 2 cores.", ""]
    else:
        out.append("")
    return out


def cpu_sampling_section(doc):
    c = doc["context"]
    out = ["## Choosing the next token on the host (`cpu_sampling_bench`)", "",
           f"`bench/results/cpu_sampling.json` (`bench/cpu_sampling.cpp`): a Qwen3 vocabulary of 151936 logits, "
           f"{c['num_cpus']} cores at {c['mhz_per_cpu']} MHz, commit {c.get('commit', 'not recorded')}, build "
           f"{c.get('build', c.get('library_build_type', '?'))}; median CPU time of "
           f"{next(b['repetitions'] for b in doc['benchmarks'])} repetitions. Greedy decoding on CUDA takes the "
           "argmax on the GPU; sampling (and greedy decoding on the CPU) pays one of these per token.", "",
           "| what | µs |", "|---|---|"]
    for b in doc["benchmarks"]:
        if b.get("aggregate_name") == "median":
            out.append(f"| {b['run_name']} | {b['cpu_time']:.1f} |")
    out.append("")
    return out


def decode_kernels_section(path):
    """The first commit's table of h200_decode_kernels.txt (bench/ncu_step_table.py output)."""
    text = open(path).read().split("\n## commit ")
    commit, _, table = text[1].partition("\n")
    rows = [line.split(None, 3) for line in table.strip().splitlines()[2:]]
    out = ["### Every kernel of a decode step (Nsight Compute)", "",
           f"`bench/results/h200_decode_kernels.txt` (`bench/runtime_device.sh kernels`), commit {commit.strip()}: "
           "the second of four decode steps after the 512-token prompt, eager (a captured step replays the same "
           "kernels), each kernel's `gpu__time_duration` under `ncu --clock-control none`. Unlike the event profile "
           "above, no host gap is in these times. The kernel benchmark's event pairs can hold host gaps too when "
           "a call is shorter than the host's cost of queueing it (the queue then drains): its q_o and k_v rows "
           "are upper bounds. " + table.strip().splitlines()[0] + ".", "",
           "| kernel | calls | µs per call | µs per step |", "|---|---|---|---|"]
    for us, calls, per_call, name in rows:
        out.append(f"| `{name}` | {calls} | {per_call} | {us} |")
    return out + [""]


def step_timeline_section(names):
    """Each *_step_timeline_*.txt (bench/timeline/run.sh: its header, the GPU line, then step_timeline.py's table)."""
    row = re.compile(r"^(.*?grid\(\d+,\d+,\d+\))\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)$")
    out = ["### A decode step inside its CUDA graph (`bench/timeline`)", "",
           "`bench/timeline/run.sh`: `trellis run --device cuda --temp 0` on the synthetic Qwen3-14B at 3 bits "
           "(512-token prompt, 64 generated, CUDA graphs) with a CUPTI tracer loaded through "
           "`CUDA_INJECTION64_PATH`; `bench/timeline/step_timeline.py` over the graph replays. advance: how far a "
           "kernel pushes the step's end past every earlier kernel's end (a step's advances sum to its span); "
           "µs per call includes a programmatic launch's wait for its predecessor; overlap: how long it ran "
           "beside its predecessors. Medians over the replays.", ""]
    for name in names:
        lines = [l for l in open(os.path.join(RES, name)).read().splitlines() if not l.startswith("#")]
        gpu = lines[0].split(",")[0] if lines else "?"
        commit = name.rsplit("_", 1)[-1].removesuffix(".txt")
        def find(prefix, pattern):
            got = [re.search(pattern, l) for l in lines if l.startswith(prefix)]
            return got[0].group(1) if got and got[0] else "?"
        gen, span = r"generation: \d+ tokens, ([\d.]+) tok/s", r"median ([\d.]+) us"
        traced = find('traced:', gen)
        traced = f", {traced} traced" if traced != "?" else ""
        out.append(f"`bench/results/{name}`, commit {commit}, {gpu}: generation {find('plain:', gen)} tok/s "
                   f"untraced{traced}; step span median {find('step span', span)} µs.")
        out += ["", "| kernel | calls per step | µs per call | µs per step | advance µs per step | advance % | overlap µs |",
                "|---|---|---|---|---|---|---|"]
        for l in lines:
            m = row.match(l)
            if m:
                out.append(f"| `{m.group(1)}` | " + " | ".join(m.group(i) for i in range(2, 8)) + " |")
        out.append("")
    return out


def main():
    lines = ["# Performance", "",
             "Generated by `bench/perf_table.py` from the result files in `bench/results/`; every number",
             "here was measured on the machine named with it. Reproduce the GPU numbers with",
             "`bench/device.sh bench` on an H200 (it writes `trellis_kernels.json` under `$OUT`).", ""]
    k = load("h200_trellis_kernels.json")
    if k:
        lines += kernels_section(k)
        kq = load("h200_trellis_kernels_quick.json")
        if kq:
            lines += kernels_confirmation(kq, k)
    v = load("viterbi_mse_cpu.json")
    if v:
        lines += viterbi_section(v)
    c = load("h200_viterbi.json")
    if c:
        lines += viterbi_cuda_section(c)
    q = load("quantize_fixture_cpu.json")
    if q:
        lines += quantize_section(q)
    cd = load("cpu_decode.json")
    if cd:
        lines += cpu_decode_section(cd)
    cds = load("cpu_decode_sampled.json")
    if cds:
        lines += cpu_decode_section(cds, "cpu_decode_sampled.json",
                                    "### The same with sampling (`trellis run`'s default sampler, seeded)")
    cs = load("cpu_sampling.json")
    if cs:
        lines += cpu_sampling_section(cs)
    rt = load("h200_runtime.json")
    if rt:
        lines += runtime_section(rt)
    h100 = sorted(n for n in os.listdir(RES)
                  if n.startswith("h100_runtime_") and n.endswith(".json") and load(n).get("bench") == "runtime")
    if h100:
        lines += h100_runtime_section([(n, load(n)) for n in h100])
    nf = sorted(n for n in os.listdir(RES) if n.endswith(".json") and "_norm_fusion_ab_" in n)
    if nf:
        lines += norm_fusion_section([(n, load(n)) for n in nf])
    ch = sorted(n for n in os.listdir(RES) if n.endswith(".json") and "_runtime_coded_head" in n)
    if ch:
        lines += coded_head_section([(n, load(n)) for n in ch])
    sa = sorted(n for n in os.listdir(RES) if n.endswith(".json") and "_runtime_sampled_ab" in n)
    if sa:
        lines += sampled_ab_section([(n, load(n)) for n in sa])
    rp = load("h200_runtime_profile.json")
    if rp:
        lines += profile_section(rp)
    dk = os.path.join(RES, "h200_decode_kernels.txt")
    if os.path.exists(dk):
        lines += decode_kernels_section(dk)
    st = sorted(n for n in os.listdir(RES) if "_step_timeline_" in n and n.endswith(".txt"))
    if st:
        lines += step_timeline_section(st)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
