// Chat-template lexing (see jinja_lexer.hpp).
#include "jinja_lexer.hpp"

#include <algorithm>
#include <cctype>

#include "jinja_value.hpp"
#include "utf8.hpp"

namespace trellis::tokenizer::jinja {
namespace {

// Longer tags are rejected: real templates stay far below, and it bounds the
// depth of the expression trees that rendering recurses through.
constexpr std::size_t kMaxTokensPerTag = 1000;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

[[noreturn]] void fail(int line, const std::string& what) {
  throw TemplateError("line " + std::to_string(line) + ": " + what);
}

int line_at(std::string_view src, std::size_t pos) {
  return 1 + static_cast<int>(std::count(src.begin(), src.begin() + static_cast<std::ptrdiff_t>(pos), '\n'));
}

// End of the tag whose inside starts at `from`: the position of `close`,
// skipping string literals (which may contain the closing characters).
std::size_t find_close(std::string_view src, std::size_t from, std::string_view close, int line) {
  for (std::size_t i = from; i < src.size(); ++i) {
    if (src[i] == '\'' || src[i] == '"') {
      const char q = src[i];
      for (++i; i < src.size() && src[i] != q; ++i)
        if (src[i] == '\\') ++i;
      if (i >= src.size()) break;
    } else if (src.substr(i, close.size()) == close) {
      return i;
    }
  }
  fail(line, "tag is not closed with '" + std::string(close) + "'");
}

std::string unescape(std::string_view s, int line) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char e = s[++i];
    auto hex = [&](int digits) {
      const std::string h(s.substr(i + 1, digits));
      if (h.size() != static_cast<std::size_t>(digits) || h.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
        fail(line, "bad \\x/\\u escape in string");
      i += digits;
      return static_cast<char32_t>(std::stoul(h, nullptr, 16));
    };
    switch (e) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case '0': out += '\0'; break;
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case 'x': utf8::append(out, hex(2)); break;
      case 'u': utf8::append(out, hex(4)); break;
      case 'U': utf8::append(out, hex(8)); break;
      default:  // Python keeps unknown escapes as written
        out += '\\';
        out += e;
    }
  }
  return out;
}

}  // namespace

std::vector<Chunk> split_template(std::string_view src) {
  std::vector<Chunk> chunks;
  std::size_t pos = 0;
  bool line_start = true;   // the next text begins a line
  bool strip_next = false;  // the previous tag ended with '-'
  while (true) {
    std::size_t open = src.find('{', pos);
    while (open != std::string_view::npos && open + 1 < src.size() && src[open + 1] != '{' && src[open + 1] != '%' &&
           src[open + 1] != '#')
      open = src.find('{', open + 1);
    if (open != std::string_view::npos && open + 1 >= src.size()) open = std::string_view::npos;

    std::string text(src.substr(pos, open == std::string_view::npos ? std::string_view::npos : open - pos));
    if (strip_next) text.erase(0, std::find_if_not(text.begin(), text.end(), is_space) - text.begin());
    if (open == std::string_view::npos) {
      if (!text.empty()) chunks.push_back({Chunk::Kind::Text, std::move(text), line_at(src, pos)});
      return chunks;
    }

    const char type = src[open + 1];  // '{' expression, '%' statement, '#' comment
    const int line = line_at(src, open);
    const char mark = open + 2 < src.size() ? src[open + 2] : '\0';
    if (mark == '-') {
      while (!text.empty() && is_space(text.back())) text.pop_back();
    } else if (mark != '+' && type != '{') {  // lstrip_blocks
      const std::size_t nl = text.rfind('\n');
      const std::size_t from = nl == std::string::npos ? 0 : nl + 1;
      if ((nl != std::string::npos || line_start) &&
          std::all_of(text.begin() + static_cast<std::ptrdiff_t>(from), text.end(),
                      [](char c) { return c == ' ' || c == '\t'; }))
        text.erase(from);
    }
    if (!text.empty()) chunks.push_back({Chunk::Kind::Text, std::move(text), line_at(src, pos)});

    const std::string close = type == '{' ? "}}" : type == '%' ? "%}" : "#}";
    const std::size_t inside = open + 2 + (mark == '-' || mark == '+' ? 1 : 0);
    const std::size_t end = type == '#' ? src.find(close, inside) : find_close(src, inside, close, line);
    if (end == std::string_view::npos) fail(line, "comment is not closed with '#}'");
    const bool strip_after = end > inside && src[end - 1] == '-';
    if (type != '#') {
      std::string body(src.substr(inside, end - inside - (strip_after ? 1 : 0)));
      chunks.push_back({type == '{' ? Chunk::Kind::Expression : Chunk::Kind::Statement, std::move(body), line});
    }
    pos = end + 2;
    strip_next = strip_after;
    line_start = false;
    if (!strip_after && type != '{') {  // trim_blocks
      if (src.substr(pos, 1) == "\n") {
        pos += 1;
        line_start = true;
      } else if (src.substr(pos, 2) == "\r\n") {
        pos += 2;
        line_start = true;
      }
    }
  }
}

std::vector<Token> tokenize(std::string_view s, int line) {
  std::vector<Token> out;
  std::size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (is_space(c)) {
      ++i;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      std::size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      out.push_back({Token::Kind::Name, std::string(s.substr(i, j - i))});
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      std::size_t j = i;
      while (j < s.size() && (std::isdigit(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      bool is_float = false;
      if (j + 1 < s.size() && s[j] == '.' && std::isdigit(static_cast<unsigned char>(s[j + 1]))) {
        is_float = true;
        for (++j; j < s.size() && std::isdigit(static_cast<unsigned char>(s[j])); ++j) {
        }
      }
      if (j < s.size() && (s[j] == 'e' || s[j] == 'E')) {
        std::size_t k = j + 1;
        if (k < s.size() && (s[k] == '+' || s[k] == '-')) ++k;
        if (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k]))) {
          is_float = true;
          for (j = k; j < s.size() && std::isdigit(static_cast<unsigned char>(s[j])); ++j) {
          }
        }
      }
      std::string num(s.substr(i, j - i));
      num.erase(std::remove(num.begin(), num.end(), '_'), num.end());
      out.push_back({is_float ? Token::Kind::Float : Token::Kind::Int, num});
      i = j;
    } else if (c == '\'' || c == '"') {
      std::size_t j = i + 1;
      while (j < s.size() && s[j] != c) j += s[j] == '\\' ? 2 : 1;
      if (j >= s.size()) fail(line, "string literal is not closed");
      out.push_back({Token::Kind::String, unescape(s.substr(i + 1, j - i - 1), line)});
      i = j + 1;
    } else {
      static const char* const two[] = {"==", "!=", "<=", ">=", "//", "**"};
      std::string op(1, c);
      for (const char* t : two)
        if (s.substr(i, 2) == t) op = t;
      if (op.size() == 1 && std::string_view("+-*/%~<>=()[]{},.:|").find(c) == std::string_view::npos)
        fail(line, std::string("unexpected character '") + c + "'");
      out.push_back({Token::Kind::Op, op});
      i += op.size();
    }
  }
  if (out.size() > kMaxTokensPerTag)
    fail(line, "tag has more than " + std::to_string(kMaxTokensPerTag) + " tokens");
  out.push_back({Token::Kind::End, ""});
  return out;
}

}  // namespace trellis::tokenizer::jinja
