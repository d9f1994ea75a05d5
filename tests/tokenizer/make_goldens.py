#!/usr/bin/env python3
"""Writes tests/data/tokenizer/goldens.json: the token ids Hugging Face's
`tokenizers` (the Rust library transformers uses) gives for every string of
strings.json, with the fixture tokenizer and with each variant of
variants.json. Same format as make_goldens.mjs, whose provisional output this
replaces; the "generator" field records which one ran.

    pip install tokenizers
    python3 tests/tokenizer/make_goldens.py models/shakespeare-qwen3-15m [OUT]
"""
import copy
import json
import os
import sys

import tokenizers
from tokenizers import Tokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "tokenizer")


def merge_patch(target, patch):
    """RFC 7396 JSON merge patch."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def variant_json(base, variant):
    t = merge_patch(copy.deepcopy(base), variant["patch"])
    if "normalizer" in variant["patch"] and variant["patch"]["normalizer"] is None:
        t["normalizer"] = None  # null means "no normalizer", keep the key
    if variant.get("merges_as_strings"):
        t["model"]["merges"] = [" ".join(m) if isinstance(m, list) else m for m in t["model"]["merges"]]
    return t


def encode_all(tokenizer_json, strings):
    tok = Tokenizer.from_str(json.dumps(tokenizer_json))
    return [tok.encode(s, add_special_tokens=False).ids for s in strings]


def rows(ids):
    return "[\n" + ",\n".join("  " + json.dumps(r) for r in ids) + "\n ]"


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: make_goldens.py MODEL_DIR [OUT]")
    model_dir = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) == 3 else os.path.join(DATA, "goldens.json")
    with open(os.path.join(DATA, "strings.json"), encoding="utf-8") as f:
        strings = json.load(f)["strings"]
    with open(os.path.join(DATA, "variants.json"), encoding="utf-8") as f:
        variants = json.load(f)["variants"]
    with open(os.path.join(model_dir, "tokenizer.json"), encoding="utf-8") as f:
        base = json.load(f)

    generator = f"tokenizers {tokenizers.__version__} (Python) on Python {sys.version.split()[0]}"
    text = "{\n"
    text += f' "generator": {json.dumps(generator)},\n'
    text += f' "model": {json.dumps(os.path.basename(os.path.abspath(model_dir)))},\n'
    text += ' "strings": [\n' + ",\n".join("  " + json.dumps(s, ensure_ascii=False) for s in strings) + "\n ],\n"
    text += f' "ids": {rows(encode_all(base, strings))},\n'
    text += ' "variants": {\n'
    text += ",\n".join(f"  {json.dumps(v['name'])}: {rows(encode_all(variant_json(base, v), strings))}"
                       for v in variants)
    text += "\n }\n}\n"
    with open(out, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {out}: {len(strings)} strings x {1 + len(variants)} tokenizers")


if __name__ == "__main__":
    main()
