// Writes tests/data/tokenizer/goldens.json: the token ids Hugging Face's
// tokenizers.js (npm @huggingface/tokenizers, pure JS) gives for every string
// of strings.json, with the fixture tokenizer and with each variant of
// variants.json. A provisional stand-in for make_goldens.py (the Rust
// `tokenizers` through Python), which writes the same format.
//
//   npm install @huggingface/tokenizers        (in a scratch dir outside the repo)
//   NODE_PATH=<scratch>/node_modules node tests/tokenizer/make_goldens.mjs \
//       models/shakespeare-qwen3-15m [tests/data/tokenizer/goldens.json]
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const data = path.join(here, "..", "data", "tokenizer");
const [modelDir, out = path.join(data, "goldens.json")] = process.argv.slice(2);
if (!modelDir) {
  console.error("usage: node make_goldens.mjs MODEL_DIR [OUT]");
  process.exit(2);
}
// Resolve the package from NODE_PATH or the working directory, not the repo.
const require = createRequire(path.join(process.cwd(), "noop.js"));
const searchPaths = [process.cwd(), ...(process.env.NODE_PATH || "").split(path.delimiter).filter(Boolean)];
const entry = require.resolve("@huggingface/tokenizers", { paths: searchPaths });
const { Tokenizer } = require(entry);
const pkgDir = entry.slice(0, entry.lastIndexOf(path.join("@huggingface", "tokenizers")) + "@huggingface/tokenizers".length);
const version = JSON.parse(fs.readFileSync(path.join(pkgDir, "package.json"))).version;

const readJson = (p) => JSON.parse(fs.readFileSync(p, "utf8"));
const strings = readJson(path.join(data, "strings.json")).strings;
const variants = readJson(path.join(data, "variants.json")).variants;
const base = readJson(path.join(modelDir, "tokenizer.json"));
const config = readJson(path.join(modelDir, "tokenizer_config.json"));

// RFC 7396 JSON merge patch.
function mergePatch(target, patch) {
  if (patch === null || typeof patch !== "object" || Array.isArray(patch)) return patch;
  const result = target !== null && typeof target === "object" && !Array.isArray(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete result[k];
    else result[k] = mergePatch(result[k], v);
  }
  return result;
}

function variantJson(v) {
  const t = mergePatch(structuredClone(base), v.patch);
  if (v.patch.normalizer === null) t.normalizer = null;  // null means "no normalizer", keep the key
  if (v.merges_as_strings) t.model.merges = t.model.merges.map((m) => (Array.isArray(m) ? m.join(" ") : m));
  return t;
}

const encodeAll = (tokenizerJson) => {
  const tok = new Tokenizer(tokenizerJson, config);
  return strings.map((s) => tok.encode(s, { add_special_tokens: false }).ids);
};

const rows = (ids) => "[\n" + ids.map((r) => "  " + JSON.stringify(r)).join(",\n") + "\n ]";
let text = "{\n";
text += ` "generator": ${JSON.stringify(`@huggingface/tokenizers ${version} (tokenizers.js) on node ${process.version}`)},\n`;
text += ` "model": ${JSON.stringify(path.basename(path.resolve(modelDir)))},\n`;
text += ` "strings": [\n${strings.map((s) => "  " + JSON.stringify(s)).join(",\n")}\n ],\n`;
text += ` "ids": ${rows(encodeAll(base))},\n`;
text += ` "variants": {\n${variants.map((v) => `  ${JSON.stringify(v.name)}: ${rows(encodeAll(variantJson(v)))}`).join(",\n")}\n }\n}\n`;
fs.writeFileSync(out, text);
console.log(`wrote ${out}: ${strings.length} strings x ${1 + variants.length} tokenizers`);
