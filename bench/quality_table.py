#!/usr/bin/env python3
"""Renders docs/QUALITY.md from bench/results/quality_fixture.json (written by
bench/quality_sweep.sh).

usage: bench/quality_table.py > docs/QUALITY.md
"""
import json
import os

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
RESULT = os.path.join(ROOT, "bench", "results", "quality_fixture.json")
EVAL_PPL = os.path.join(ROOT, "bench", "results", "h200_eval_ppl.json")
KL_GATES = os.path.join(ROOT, "bench", "results", "h200_kl_gates.json")

# Round-to-nearest affine g64 (MLX's default scheme), measured with transformers
# on the same split and windows: ../shared/models/README.md.
AFFINE = [("bf16", 16, 173.05, 0.0, 1.0), ("affine 8-bit g64", 8.5, 173.02, 0.00007, 0.992),
          ("affine 4-bit g64", 4.5, 173.44, 0.0224, 0.866), ("affine 3-bit g64", 3.5, 177.14, 0.0994, 0.740),
          ("affine 2-bit g64", 2.5, 220.48, 0.5595, 0.444)]
TARGET_KLD = {4: 0.02, 3: 0.06, 2: 0.25}


def quantize_time(r):
    """The quantizer's wall seconds, naming the device when it was not the CPU."""
    dev = r.get("quantize_device", "cpu")
    return f"{r['quantize_seconds']:.0f}" + ("" if dev == "cpu" else f" ({dev})")


def kld(r):
    kl = r["eval"]["kl"]
    return f"{kl['mean_kld']:.4f} ± {kl['kld_err']:.4f}"


def diff(a, b):
    ka, kb = a["eval"]["kl"], b["eval"]["kl"]
    d, se = kb["mean_kld"] - ka["mean_kld"], (ka["kld_err"] ** 2 + kb["kld_err"] ** 2) ** 0.5
    return f"Δ {d:+.4f} ± {se:.4f}, {(kb['mean_kld'] / ka['mean_kld'] - 1) * 100:+.1f}%"


def verdict(a, b, lower, higher):
    ka, kb = a["eval"]["kl"], b["eval"]["kl"]
    d, se = kb["mean_kld"] - ka["mean_kld"], (ka["kld_err"] ** 2 + kb["kld_err"] ** 2) ** 0.5
    return "within noise" if abs(d) < 2 * se else (lower if d < 0 else higher)


def dppl(a, b):
    ka, kb = a["eval"]["kl"], b["eval"]["kl"]
    d, se = kb["delta_ppl"] - ka["delta_ppl"], (ka["delta_ppl_err"] ** 2 + kb["delta_ppl_err"] ** 2) ** 0.5
    return f"Δ {d:+.2f} ± {se:.2f}"


def cuda_sections():
    """The H200 rows: the bf16 fixture's first-window PPL on CPU and CUDA, and the
    KL gates (every CUDA numerics mode and SwiGLU tail vs the CPU fp32 path)."""
    out = []
    if os.path.exists(EVAL_PPL):
        e = json.load(open(EVAL_PPL))
        out += ["", "## bf16 fixture PPL, CPU and CUDA (H200)", "",
                f"`bench/results/h200_eval_ppl.json` (`bench/runtime_device.sh eval`): `{e['command']}`; "
                f"transformers' reference {e['reference_ppl']:.2f}; bound: {e['bound']}.", "",
                "| device | backend | predictions | PPL | vs reference | within 1% |", "|---|---|---|---|---|---|"]
        for dev in ("cpu", "cuda"):
            r = e[dev]
            if "ppl" not in r:
                out.append(f"| {dev} | error: {r.get('error', '?')[:200]} | | | | no |")
                continue
            rel = (r["ppl"] / e["reference_ppl"] - 1) * 100
            out.append(f"| {dev} | {r['backend']} | {r['predictions']} | {r['ppl']:.4f} ± {r['ppl_err']:.2f} | "
                       f"{rel:+.4f}% | {'yes' if r['within_1pct'] else 'no'} |")
    if os.path.exists(KL_GATES):
        g = json.load(open(KL_GATES))
        out += ["", "## CUDA numerics modes vs the CPU fp32 path (H200 KL gates)", "",
                "`bench/results/h200_kl_gates.json`: `tests/cuda/model_kl_test.cpp` on the H200 "
                f"({g['tests']} tests, {g['failures']} failures). Each row runs the fixture's forward on the CUDA "
                "backend with the numerics mode and SwiGLU tail pinned, at M = 1 (decode) and M = 4 (and 8 where "
                "the mode serves it) rows per batch, and compares its log-probs with the CPU backend's on the same tokens: mean KLD "
                "KL(CPU ‖ CUDA) over the 128 positions of the fixture's reference text, in nats; gate ≤ 1e-3. "
                "The bf16 fixture has no trellis layers: its rows gate the dense path (the pin must change "
                "nothing). Values recorded with 6 decimals (this run) show 0 where the divergence is below 5e-7.", "",
                "| model | numerics | tail | mean KLD, M = 1 | mean KLD, M = 4 | mean KLD, M = 8 | gate ≤ 1e-3 |",
                "|---|---|---|---|---|---|---|"]
        for suite in g["testsuites"]:
            for case in suite["testsuite"]:
                if "mean_kld_m1" not in case:
                    continue
                model, numerics, tail = case["name"].split("/")[-1].split("_")
                ok = case.get("result") == "COMPLETED" and not case.get("failures")
                shown = ["–" if f"mean_kld_m{M}" not in case else
                         f"{float(case[f'mean_kld_m{M}']):.2e}" if abs(float(case[f"mean_kld_m{M}"])) >= 5e-7 else "0"
                         for M in (1, 4, 8)]
                out.append(f"| {model} | {numerics} | {tail} | {' | '.join(shown)} | {'pass' if ok else 'FAIL'} |")
    return out


def main():
    doc = json.load(open(RESULT))
    bf16 = doc["bf16"]
    runs = doc["runs"]
    out = ["# Quality", "",
           "Generated by `bench/quality_table.py` from `bench/results/quality_fixture.json` "
           "(written by `bench/quality_sweep.sh`); do not edit by hand.", "",
           "## Trellis-coded fixture vs bf16", "",
           f"Model `{doc['model']}` (28 decoder linears coded by `trellis quantize`, embedding and LM head bf16), "
           f"scored with `trellis eval` on {doc['text']}: {bf16['tokens']} tokens in {bf16['windows']} non-overlapping "
           f"windows of {bf16['context']} tokens, all {bf16['context'] - 1} predictions of each "
           f"({bf16['predictions']} predictions); KLD is KL(bf16 ‖ quantized) per prediction, in nats, against the "
           f"bf16 model's cached fp32 log-probs. CPU backend (fp32 activations); checkout {doc['commit']} at the last merge, "
           "each run's own under Provenance. "
           "Uncertainties are one standard error (llama-perplexity's conventions). "
           "`quantize s` is the quantizer's wall time (see the notes for the load it ran under).", "",
           "| weights | L | rotate | bits/weight | rel. error | PPL | ΔPPL vs bf16 | mean KLD | KLD p99 | same top-1 | KLD target | met | quantize s |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
           f"| bf16 | – | – | 16 | 0 | {bf16['ppl']:.2f} ± {bf16['ppl_err']:.2f} | 0 | 0 | 0 | 1 | – | – | – |"]
    for r in sorted(runs, key=lambda r: (-r["k"], r["L"], r["rotate"])):
        e, kl = r["eval"], r["eval"]["kl"]
        target = TARGET_KLD.get(r["k"])
        met = "yes" if target is not None and kl["mean_kld"] <= target else "no"
        out.append(f"| trellis {r['k']}-bit | {r['L']} | {'yes' if r['rotate'] else 'no'} | {r['bits_per_weight']:.3f} | "
                   f"{r['rel_error']:.3f} | {e['ppl']:.2f} ± {e['ppl_err']:.2f} | {kl['delta_ppl']:+.2f} ± {kl['delta_ppl_err']:.2f} | "
                   f"{kl['mean_kld']:.4f} ± {kl['kld_err']:.4f} | {kl['kld_p99']:.3f} | {kl['same_top']:.3f} | "
                   f"≤ {target} | {met} | {quantize_time(r)} |")
    out += ["", "## Affine baseline (transformers, same split)", "",
            "From `../shared/models/README.md` (round-to-nearest affine, group 64, per-group scale and bias).", "",
            "| weights | bits/weight | PPL | mean KLD vs bf16 | same top-1 |", "|---|---|---|---|---|"]
    out += [f"| {n} | {b} | {p:.2f} | {k:g} | {s:g} |" for n, b, p, k, s in AFFINE]
    out += ["", "## --rotate", "",
            "Differences with a conservative standard error (the two runs' errors added in quadrature, as if "
            "uncorrelated; both score the same predictions, so the true error of the difference is smaller). "
            "A difference within 2 such errors is called noise.", ""]
    for L in sorted({r["L"] for r in runs}):
        for k in sorted({r["k"] for r in runs}, reverse=True):
            pair = {r["rotate"]: r for r in runs if r["L"] == L and r["k"] == k}
            if len(pair) == 2:
                a, b = pair[False], pair[True]
                out.append(f"- k = {k}, L = {L}: mean KLD {kld(a)} without, {kld(b)} with "
                           f"({diff(a, b)}: {verdict(a, b, 'helps', 'hurts')}); "
                           f"PPL {a['eval']['ppl']:.2f} → {b['eval']['ppl']:.2f} ({dppl(a, b)}); "
                           f"rel. error {a['rel_error']:.4f} → {b['rel_error']:.4f}.")
    out += ["", "## L = 16 vs L = 12", "",
            "Same k and --rotate, L = 12 → L = 16 (same bits per weight; the Viterbi search has 16× the states; "
            "see the notes for the CPU-time ratio). Errors as in the --rotate section.", ""]
    for rot in (False, True):
        for k in sorted({r["k"] for r in runs}, reverse=True):
            pair = {r["L"]: r for r in runs if r["k"] == k and r["rotate"] == rot}
            if 12 in pair and 16 in pair:
                a, b = pair[12], pair[16]
                out.append(f"- k = {k}, {'with' if rot else 'no'} --rotate: mean KLD {kld(a)} → {kld(b)} "
                           f"({diff(a, b)}: {verdict(a, b, 'better', 'worse')}); "
                           f"PPL {a['eval']['ppl']:.2f} → {b['eval']['ppl']:.2f} ({dppl(a, b)}); "
                           f"same top-1 {a['eval']['kl']['same_top']:.3f} → {b['eval']['kl']['same_top']:.3f}; "
                           f"rel. error {a['rel_error']:.4f} → {b['rel_error']:.4f}; "
                           f"quantize {quantize_time(a)} s → {quantize_time(b)} s wall"
                           + (f" ({b['quantize_cpu_seconds']:.0f} CPU s, {b['quantize_weights_per_cpu_s'] / 1e3:.1f}k weights "
                              f"per CPU second, nice {b['niceness']})"
                              if "quantize_cpu_seconds" in b and b.get("quantize_device", "cpu") == "cpu" else "") + ".")
    grid = [(L, k, rot) for L in (12, 16) for k in (4, 3, 2) for rot in (False, True)]
    have = {(r["L"], r["k"], r["rotate"]) for r in runs}
    missing = [f"k = {k}, L = {L}{', --rotate' if rot else ''}" for L, k, rot in grid if (L, k, rot) not in have]
    if missing:
        out += ["", "Not yet measured: " + "; ".join(missing) + "."]
    out += ["", "## Best setting per k", ""]
    for k in sorted({r["k"] for r in runs}, reverse=True):
        best = min((r for r in runs if r["k"] == k), key=lambda r: r["eval"]["kl"]["mean_kld"])
        target = TARGET_KLD.get(k)
        out.append(f"- k = {k}: lowest mean KLD {kld(best)} at L = {best['L']}, "
                   f"{'with' if best['rotate'] else 'without'} --rotate "
                   f"(target ≤ {target}: {'met' if best['eval']['kl']['mean_kld'] <= target else 'missed'}); "
                   f"PPL {best['eval']['ppl']:.2f}, same top-1 {best['eval']['kl']['same_top']:.3f}.")
    out += cuda_sections()
    out += ["", "## Provenance", ""]
    by_commit = {}
    for r in runs:
        key = (r.get("commit"), r.get("binary_built"), r.get("niceness"), r.get("quantize_device", "cpu"),
               r.get("machine", {}).get("cpu"))
        by_commit.setdefault(key, []).append(f"k{r['k']} L{r['L']}{' rot' if r['rotate'] else ''}")
    for (c, built, nice, dev, cpu), names in sorted(by_commit.items(), key=lambda x: str(x[0])):
        out.append(f"- {', '.join(names)}: " + (
            f"trellis built from {c}" + (f" at {built}" if built else "") + (f", run at nice {nice}" if nice is not None else "")
            + (f", quantized on {dev}" if dev != "cpu" else "") + (f", machine {cpu}" if cpu else "")
            if c else "no commit recorded in the run (see notes)"))
    out += ["", "## Notes", ""] + [f"- {n}" for n in doc.get("notes", [])]
    out += ["", "## Reproduce", "", "```",
            "cmake -S . -B build/eval -G Ninja -DTRELLIS_CUDA=OFF && cmake --build build/eval --target trellis",
            "nice -n 19 bench/quality_sweep.sh -b build/eval    # L = 12 and 16; -L 12 for the fast half",
            "bench/quality_table.py > docs/QUALITY.md", "```", ""]
    print("\n".join(out))


if __name__ == "__main__":
    main()
