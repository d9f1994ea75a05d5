// Tokenizer: loading a model directory's tokenizer files and the
// encode/decode pipeline (see include/trellis/tokenizer/tokenizer.hpp).
#include "trellis/tokenizer/tokenizer.hpp"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "added_tokens.hpp"
#include "bpe.hpp"
#include "byte_unicode.hpp"
#include "normalizer.hpp"
#include "pre_tokenizer.hpp"
#include "trellis/error.hpp"
#include "utf8.hpp"

namespace trellis::tokenizer {

using nlohmann::json;

namespace {

json parse(std::string_view text, const char* what) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw Error(std::string(what) + ": not valid JSON: " + e.what());
  }
}

// The field, or null when absent.
json field(const json& j, const char* key) { return j.contains(key) ? j[key] : json(); }

void require_byte_level_decoder(const json& tok) {
  const json d = field(tok, "decoder");
  const std::string type = d.is_object() ? d.value("type", "") : "null";
  if (type != "ByteLevel")
    throw Error("tokenizer.json: decoder '" + type + "' is not supported (byte-level BPE needs ByteLevel)");
}

// A special-token entry of tokenizer_config.json: "text", {"content": "text"} or null.
std::optional<std::string> token_text(const json& config, const char* key) {
  if (!config.contains(key) || config[key].is_null()) return std::nullopt;
  const json& v = config[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content")) return v["content"].get<std::string>();
  throw Error(std::string("tokenizer_config.json: ") + key + " is neither a string nor {\"content\": ...}");
}

std::optional<std::string> template_source(const json& config) {
  if (!config.contains("chat_template") || config["chat_template"].is_null()) return std::nullopt;
  const json& t = config["chat_template"];
  if (t.is_string()) return t.get<std::string>();
  if (t.is_array()) {
    for (const json& entry : t)
      if (entry.value("name", "") == "default") return entry.at("template").get<std::string>();
    throw Error("tokenizer_config.json: chat_template list has no entry named 'default'");
  }
  throw Error("tokenizer_config.json: chat_template is neither a string nor a list");
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot open");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string read_optional(const std::filesystem::path& path) {
  return std::filesystem::exists(path) ? read_file(path) : std::string();
}

}  // namespace

struct Tokenizer::Impl {
  Normalizer normalizer;
  PreTokenizer pre_tokenizer;
  BpeModel bpe;
  AddedTokens added;

  std::vector<std::string> text_of;   // id -> token as the vocabulary writes it
  std::vector<std::string> bytes_of;  // id -> raw bytes
  std::vector<bool> used, special;
  std::unordered_map<std::string, int32_t> added_ids;  // added tokens (the vocabulary is in bpe)

  std::optional<std::string> bos_token, eos_token, chat_template;
  std::optional<int32_t> bos_id;
  std::vector<int32_t> eos_ids;
  bool add_bos = false;

  explicit Impl(const json& tok)
      : normalizer(field(tok, "normalizer")),
        pre_tokenizer(field(tok, "pre_tokenizer")),
        bpe(tok.at("model")),
        added(field(tok, "added_tokens")) {
    for (const auto& [text, id] : bpe.vocab()) set(id, text, unicode_text_to_bytes(text), false);
    for (const AddedToken& a : added.tokens()) {
      set(a.id, a.content, a.content, a.special);
      added_ids[a.content] = a.id;
    }
  }

  std::optional<int32_t> find(const std::string& token) const {
    if (const auto it = added_ids.find(token); it != added_ids.end()) return it->second;
    if (const auto it = bpe.vocab().find(token); it != bpe.vocab().end()) return it->second;
    return std::nullopt;
  }

  void set(int32_t id, const std::string& text, std::string bytes, bool is_special) {
    if (id < 0) throw Error("tokenizer.json: token '" + text + "' has negative id " + std::to_string(id));
    const auto n = static_cast<std::size_t>(id) + 1;
    if (text_of.size() < n) {
      text_of.resize(n);
      bytes_of.resize(n);
      used.resize(n);
      special.resize(n);
    }
    text_of[id] = text;
    bytes_of[id] = std::move(bytes);
    used[id] = true;
    special[id] = is_special;
  }

  int32_t id_for(const std::string& text, const char* what) const {
    const auto id = find(text);
    if (!id) throw Error(std::string("tokenizer_config.json: ") + what + " '" + text + "' is not a token");
    return *id;
  }

  void read_config(const json& config, const json& generation) {
    bos_token = token_text(config, "bos_token");
    eos_token = token_text(config, "eos_token");
    add_bos = config.value("add_bos_token", false);
    chat_template = template_source(config);
    if (bos_token) bos_id = id_for(*bos_token, "bos_token");
    if (eos_token) eos_ids.push_back(id_for(*eos_token, "eos_token"));
    if (generation.contains("bos_token_id") && generation["bos_token_id"].is_number_integer())
      bos_id = generation["bos_token_id"].get<int32_t>();
    const json eos = field(generation, "eos_token_id");
    for (const json& e : eos.is_array() ? eos : json::array({eos})) {
      if (!e.is_number_integer()) continue;
      const auto id = e.get<int32_t>();
      if (std::find(eos_ids.begin(), eos_ids.end(), id) == eos_ids.end()) eos_ids.push_back(id);
    }
  }

  const std::string& checked(const std::vector<std::string>& table, int32_t id) const {
    if (id < 0 || id >= static_cast<int32_t>(used.size()) || !used[id])
      throw Error("tokenizer: token id " + std::to_string(id) + " is not in the vocabulary");
    return table[id];
  }
};

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::from_json(std::string_view tokenizer_json, std::string_view tokenizer_config_json,
                               std::string_view generation_config_json) {
  const json tok = parse(tokenizer_json, "tokenizer.json");
  require_byte_level_decoder(tok);
  auto impl = std::make_unique<Impl>(tok);
  impl->read_config(
      tokenizer_config_json.empty() ? json::object() : parse(tokenizer_config_json, "tokenizer_config.json"),
      generation_config_json.empty() ? json::object() : parse(generation_config_json, "generation_config.json"));
  return Tokenizer(std::move(impl));
}

Tokenizer Tokenizer::from_dir(const std::filesystem::path& dir) {
  try {
    Tokenizer t = from_json(read_file(dir / "tokenizer.json"), read_optional(dir / "tokenizer_config.json"),
                            read_optional(dir / "generation_config.json"));
    const std::string jinja = read_optional(dir / "chat_template.jinja");
    if (!jinja.empty()) t.impl_->chat_template = jinja;
    return t;
  } catch (const Error& e) {
    throw Error(dir.string() + ": " + e.what());
  }
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool allow_special) const {
  const std::size_t bad = utf8::first_invalid(text);
  if (bad != text.size()) throw Error("tokenizer: input is not valid UTF-8 (byte " + std::to_string(bad) + ")");
  std::vector<int32_t> ids;
  for (const Segment& seg : impl_->added.split(text, allow_special)) {
    if (seg.id >= 0) {
      ids.push_back(seg.id);
      continue;
    }
    for (const std::string& piece : impl_->pre_tokenizer.split(impl_->normalizer.apply(seg.text)))
      impl_->bpe.encode_piece(piece, ids);
  }
  return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string bytes;
  for (const int32_t id : ids) {
    const std::string& b = impl_->checked(impl_->bytes_of, id);
    if (!(skip_special && impl_->special[id])) bytes += b;
  }
  return utf8::repair(bytes);
}

int32_t Tokenizer::vocab_size() const { return static_cast<int32_t>(impl_->used.size()); }

bool Tokenizer::has_id(int32_t id) const {
  return id >= 0 && id < static_cast<int32_t>(impl_->used.size()) && impl_->used[id];
}

const std::string& Tokenizer::token(int32_t id) const { return impl_->checked(impl_->text_of, id); }
const std::string& Tokenizer::token_bytes(int32_t id) const { return impl_->checked(impl_->bytes_of, id); }

std::optional<int32_t> Tokenizer::id(std::string_view token) const {
  return impl_->find(std::string(token));
}

bool Tokenizer::is_special(int32_t id) const { return has_id(id) && impl_->special[id]; }
std::optional<int32_t> Tokenizer::bos_id() const { return impl_->bos_id; }
const std::vector<int32_t>& Tokenizer::eos_ids() const { return impl_->eos_ids; }
const std::optional<std::string>& Tokenizer::bos_token() const { return impl_->bos_token; }
const std::optional<std::string>& Tokenizer::eos_token() const { return impl_->eos_token; }
bool Tokenizer::add_bos() const { return impl_->add_bos; }
const std::optional<std::string>& Tokenizer::chat_template() const { return impl_->chat_template; }

}  // namespace trellis::tokenizer
