// Chat-template parser: recursive descent with Jinja's precedence, lowest
// first: `x if c else y`, or, and, not, comparisons (== != < <= > >= in,
// not in; not chained), + -, ~, * / // %, **, unary - +, then postfix
// (.attr, [index], [a:b:c], calls), filters `|` and tests `is`.
#include "jinja_parser.hpp"

#include <set>

#include "jinja_builtins.hpp"
#include "jinja_lexer.hpp"

namespace trellis::tokenizer::jinja {
namespace {

[[noreturn]] void fail(int line, const std::string& what) {
  throw TemplateError("line " + std::to_string(line) + ": " + what);
}

// Nesting beyond this is rejected, so hostile templates cannot exhaust the
// stack while parsing or rendering.
constexpr int kMaxNesting = 200;

struct DepthGuard {
  int& depth;
  DepthGuard(int& d, int line) : depth(d) {
    if (++depth > kMaxNesting) fail(line, "nesting deeper than " + std::to_string(kMaxNesting));
  }
  ~DepthGuard() { --depth; }
  DepthGuard(const DepthGuard&) = delete;
  DepthGuard& operator=(const DepthGuard&) = delete;
};

template <typename T>
std::unique_ptr<T> node(int line) {
  auto n = std::make_unique<T>();
  n->line = line;
  return n;
}

// Parses the tokens of one tag.
class ExprParser {
 public:
  ExprParser(const std::string& text, int line) : tokens_(tokenize(text, line)), line_(line) {}

  const Token& peek(std::size_t ahead = 0) const { return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)]; }
  bool at_end() const { return peek().kind == Token::Kind::End; }
  bool is_op(const char* op, std::size_t ahead = 0) const {
    return peek(ahead).kind == Token::Kind::Op && peek(ahead).text == op;
  }
  bool is_name(const char* name, std::size_t ahead = 0) const {
    return peek(ahead).kind == Token::Kind::Name && peek(ahead).text == name;
  }
  bool accept_op(const char* op) { return is_op(op) ? (++pos_, true) : false; }
  bool accept_name(const char* name) { return is_name(name) ? (++pos_, true) : false; }
  void expect_op(const char* op) {
    if (!accept_op(op)) fail(line_, std::string("expected '") + op + "', found '" + peek().text + "'");
  }
  std::string expect_identifier() {
    if (peek().kind != Token::Kind::Name) fail(line_, "expected a name, found '" + peek().text + "'");
    return tokens_[pos_++].text;
  }
  void expect_end(const std::string& what) {
    if (!at_end()) fail(line_, "unexpected '" + peek().text + "' in " + what);
  }

  // An expression; with_conditional = false leaves a trailing `if` alone
  // (for the filter of a for loop).
  ExprPtr expression(bool with_conditional = true) {
    const DepthGuard guard(depth_, line_);
    ExprPtr e = or_expr();
    if (!with_conditional || !is_name("if")) return e;
    ++pos_;
    auto c = node<Conditional>(line_);
    c->then = std::move(e);
    c->condition = or_expr();
    if (accept_name("else")) c->otherwise = expression();
    return c;
  }

  // expression, or several separated by commas (a tuple, as a list)
  ExprPtr tuple(bool with_conditional = true) {
    ExprPtr first = expression(with_conditional);
    if (!is_op(",")) return first;
    auto list = node<ListLiteral>(line_);
    list->items.push_back(std::move(first));
    while (accept_op(",") && !at_end()) list->items.push_back(expression(with_conditional));
    return list;
  }

 private:
  ExprPtr binary(std::string op, ExprPtr l, ExprPtr r) {
    auto b = node<Binary>(line_);
    b->op = std::move(op);
    b->left = std::move(l);
    b->right = std::move(r);
    return b;
  }

  ExprPtr or_expr() {
    ExprPtr e = and_expr();
    while (accept_name("or")) e = binary("or", std::move(e), and_expr());
    return e;
  }
  ExprPtr and_expr() {
    ExprPtr e = not_expr();
    while (accept_name("and")) e = binary("and", std::move(e), not_expr());
    return e;
  }
  ExprPtr not_expr() {
    if (!accept_name("not")) return comparison();
    auto u = node<Unary>(line_);
    u->op = "not";
    u->operand = not_expr();
    return u;
  }
  ExprPtr comparison() {
    ExprPtr e = additive();
    std::string op;
    for (const char* o : {"==", "!=", "<", "<=", ">", ">="})
      if (is_op(o)) op = o;
    if (is_name("in")) op = "in";
    if (is_name("not") && is_name("in", 1)) op = "not in";
    if (op.empty()) return e;
    pos_ += op == "not in" ? 2 : 1;
    e = binary(op, std::move(e), additive());
    for (const char* o : {"==", "!=", "<", "<=", ">", ">="})
      if (is_op(o)) fail(line_, "chained comparisons are not supported");
    if (is_name("in")) fail(line_, "chained comparisons are not supported");
    return e;
  }
  ExprPtr additive() {
    ExprPtr e = concat();
    while (is_op("+") || is_op("-")) {
      const std::string op = tokens_[pos_++].text;
      e = binary(op, std::move(e), concat());
    }
    return e;
  }
  ExprPtr concat() {
    ExprPtr e = multiplicative();
    while (accept_op("~")) e = binary("~", std::move(e), multiplicative());
    return e;
  }
  ExprPtr multiplicative() {
    ExprPtr e = power();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const std::string op = tokens_[pos_++].text;
      e = binary(op, std::move(e), power());
    }
    return e;
  }
  ExprPtr power() {
    ExprPtr e = unary(true);
    while (accept_op("**")) e = binary("**", std::move(e), unary(true));
    return e;
  }
  ExprPtr unary(bool with_filters) {
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      auto u = node<Unary>(line_);
      u->op = tokens_[pos_++].text;
      u->operand = unary(false);
      e = std::move(u);
    } else {
      e = postfix(primary());
    }
    return with_filters ? filters(std::move(e)) : std::move(e);
  }

  Args call_args() {  // after '('
    Args a;
    while (!accept_op(")")) {
      if (peek().kind == Token::Kind::Name && is_op("=", 1)) {
        std::string key = tokens_[pos_].text;
        pos_ += 2;
        a.keyword.emplace_back(std::move(key), expression());
      } else {
        if (!a.keyword.empty()) fail(line_, "positional argument after keyword argument");
        a.positional.push_back(expression());
      }
      if (!is_op(")")) expect_op(",");
    }
    return a;
  }

  ExprPtr postfix(ExprPtr e) {
    while (true) {
      if (accept_op(".")) {
        std::string name = expect_identifier();
        if (accept_op("(")) {
          auto m = node<MethodCall>(line_);
          m->object = std::move(e);
          m->method = std::move(name);
          m->args = call_args();
          e = std::move(m);
        } else {
          auto g = node<GetAttr>(line_);
          g->object = std::move(e);
          g->name = std::move(name);
          e = std::move(g);
        }
      } else if (accept_op("[")) {
        e = subscript(std::move(e));
      } else if (is_op("(")) {
        fail(line_, "only global functions and methods can be called");
      } else {
        return e;
      }
    }
  }

  ExprPtr subscript(ExprPtr object) {  // after '['
    ExprPtr parts[3];
    int colons = 0;
    while (!accept_op("]")) {
      if (accept_op(":")) {
        if (++colons > 2) fail(line_, "too many ':' in a slice");
      } else if (parts[colons]) {
        fail(line_, "expected ':' or ']' in a subscript");
      } else {
        parts[colons] = expression();
      }
    }
    if (colons == 0) {
      if (!parts[0]) fail(line_, "empty subscript");
      auto g = node<GetItem>(line_);
      g->object = std::move(object);
      g->index = std::move(parts[0]);
      return g;
    }
    auto s = node<Slice>(line_);
    s->object = std::move(object);
    s->start = std::move(parts[0]);
    s->stop = std::move(parts[1]);
    s->step = std::move(parts[2]);
    return s;
  }

  ExprPtr filters(ExprPtr e) {
    while (true) {
      if (accept_op("|")) {
        auto f = node<Filter>(line_);
        f->filter = expect_identifier();
        if (!is_filter(f->filter)) fail(line_, "filter '" + f->filter + "' is not supported");
        if (accept_op("(")) f->args = call_args();
        f->value = std::move(e);
        e = std::move(f);
      } else if (accept_name("is")) {
        auto t = node<Test>(line_);
        t->negated = accept_name("not");
        t->test = expect_identifier();
        if (!is_test(t->test)) fail(line_, "test '" + t->test + "' is not supported");
        if (accept_op("(")) t->args = call_args();
        t->value = std::move(e);
        e = std::move(t);
      } else {
        return e;
      }
    }
  }

  ExprPtr primary() {
    const Token t = peek();
    auto literal = [&](Value v) {
      ++pos_;
      auto l = node<Literal>(line_);
      l->value = std::move(v);
      return l;
    };
    switch (t.kind) {
      case Token::Kind::String: {
        std::string s;
        while (peek().kind == Token::Kind::String) s += tokens_[pos_++].text;  // "a" "b" joins
        auto l = node<Literal>(line_);
        l->value = std::move(s);
        return l;
      }
      case Token::Kind::Int: return literal(Value(static_cast<int64_t>(std::stoll(t.text))));
      case Token::Kind::Float: return literal(Value(std::stod(t.text)));
      case Token::Kind::Name: {
        if (t.text == "true" || t.text == "True") return literal(Value(true));
        if (t.text == "false" || t.text == "False") return literal(Value(false));
        if (t.text == "none" || t.text == "None") return literal(Value::none());
        ++pos_;
        if (accept_op("(")) {
          if (!is_function(t.text)) fail(line_, "function '" + t.text + "' is not supported");
          auto f = node<FunctionCall>(line_);
          f->function = t.text;
          f->args = call_args();
          return f;
        }
        auto n = node<Name>(line_);
        n->name = t.text;
        return n;
      }
      case Token::Kind::Op:
        if (accept_op("(")) {
          if (accept_op(")")) return node<ListLiteral>(line_);
          ExprPtr e = tuple();
          expect_op(")");
          return e;
        }
        if (accept_op("[")) {
          auto l = node<ListLiteral>(line_);
          while (!accept_op("]")) {
            l->items.push_back(expression());
            if (!is_op("]")) expect_op(",");
          }
          return l;
        }
        if (accept_op("{")) {
          auto d = node<DictLiteral>(line_);
          while (!accept_op("}")) {
            ExprPtr k = expression();
            expect_op(":");
            d->items.emplace_back(std::move(k), expression());
            if (!is_op("}")) expect_op(",");
          }
          return d;
        }
        break;
      case Token::Kind::End: fail(line_, "unexpected end of expression");
    }
    fail(line_, "unexpected '" + t.text + "'");
  }

  std::vector<Token> tokens_;
  std::size_t pos_ = 0;
  int line_;
  int depth_ = 0;
};

// Builds statement trees from the chunk list.
class BlockParser {
 public:
  explicit BlockParser(std::vector<Chunk> chunks) : chunks_(std::move(chunks)) {}

  Body parse_all() { return parse_until({}); }

 private:
  static std::string keyword_of(const Chunk& c) { return ExprParser(c.text, c.line).peek().text; }

  // Statements up to (not including) a statement tag whose keyword is in `ends`.
  Body parse_until(const std::set<std::string>& ends) {
    const DepthGuard guard(depth_, pos_ < chunks_.size() ? chunks_[pos_].line : 1);
    Body body;
    while (pos_ < chunks_.size()) {
      const Chunk& c = chunks_[pos_];
      if (c.kind == Chunk::Kind::Text) {
        auto t = node<TextStmt>(c.line);
        t->text = c.text;
        body.push_back(std::move(t));
        ++pos_;
      } else if (c.kind == Chunk::Kind::Expression) {
        ExprParser p(c.text, c.line);
        auto o = node<OutputStmt>(c.line);
        o->expr = p.tuple();
        p.expect_end("{{ ... }}");
        body.push_back(std::move(o));
        ++pos_;
      } else {
        const std::string kw = keyword_of(c);
        if (ends.count(kw)) return body;
        body.push_back(statement(c, kw));
      }
    }
    if (!ends.empty()) fail(chunks_.empty() ? 1 : chunks_.back().line, "missing '{% " + *ends.rbegin() + " %}'");
    return body;
  }

  // Consumes the end tag at pos_, which must be `kw` with nothing after it.
  void end_tag(const char* kw) {
    ExprParser p(chunks_[pos_].text, chunks_[pos_].line);
    p.accept_name(kw);
    p.expect_end(std::string("{% ") + kw + " %}");
    ++pos_;
  }

  StmtPtr statement(const Chunk& c, const std::string& kw) {
    ExprParser p(c.text, c.line);
    if (kw == "elif" || kw == "else" || kw.starts_with("end")) fail(c.line, "unexpected '{% " + kw + " %}'");
    p.expect_identifier();
    ++pos_;
    if (kw == "if") {
      auto s = node<IfStmt>(c.line);
      ExprPtr cond = p.expression();
      p.expect_end("{% if %}");
      while (true) {
        Body body = parse_until({"elif", "else", "endif"});
        s->branches.emplace_back(std::move(cond), std::move(body));
        const Chunk& tag = chunks_[pos_];
        const std::string k = keyword_of(tag);
        if (k == "elif") {
          ExprParser q(tag.text, tag.line);
          q.expect_identifier();
          cond = q.expression();
          q.expect_end("{% elif %}");
          ++pos_;
          continue;
        }
        if (k == "else") {
          end_tag("else");
          s->otherwise = parse_until({"endif"});
        }
        end_tag("endif");
        return s;
      }
    }
    if (kw == "for") {
      auto s = node<ForStmt>(c.line);
      s->targets.push_back(p.expect_identifier());
      while (p.accept_op(",")) s->targets.push_back(p.expect_identifier());
      if (!p.accept_name("in")) fail(c.line, "expected 'in' in {% for %}");
      s->iterable = p.tuple(false);
      if (p.accept_name("if")) s->filter = p.expression();
      if (p.accept_name("recursive")) fail(c.line, "recursive for loops are not supported");
      p.expect_end("{% for %}");
      ++loop_depth_;
      s->body = parse_until({"else", "endfor"});
      --loop_depth_;
      if (keyword_of(chunks_[pos_]) == "else") {
        end_tag("else");
        s->otherwise = parse_until({"endfor"});
      }
      end_tag("endfor");
      return s;
    }
    if (kw == "set") {
      auto s = node<SetStmt>(c.line);
      s->name = p.expect_identifier();
      if (p.accept_op(".")) s->attr = p.expect_identifier();
      if (p.is_op(",")) fail(c.line, "{% set a, b = ... %} is not supported");
      if (!p.accept_op("=")) fail(c.line, "block {% set %}...{% endset %} is not supported");
      s->value = p.tuple();
      p.expect_end("{% set %}");
      return s;
    }
    if (kw == "break" || kw == "continue") {
      if (loop_depth_ == 0) fail(c.line, "{% " + kw + " %} outside a for loop");
      p.expect_end("{% " + kw + " %}");
      auto s = node<LoopControl>(c.line);
      s->flow = kw == "break" ? Flow::Break : Flow::Continue;
      return s;
    }
    fail(c.line, "'{% " + kw + " %}' is not supported");
  }

  std::vector<Chunk> chunks_;
  std::size_t pos_ = 0;
  int loop_depth_ = 0;
  int depth_ = 0;
};

}  // namespace

Body parse_template(std::string_view source) { return BlockParser(split_template(source)).parse_all(); }

}  // namespace trellis::tokenizer::jinja
