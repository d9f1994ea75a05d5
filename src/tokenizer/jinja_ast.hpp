// The syntax tree of a parsed chat template: expressions evaluate to Values,
// statements append to the output. Evaluation lives in jinja_eval.cpp;
// the parser (jinja_parser.cpp) builds the tree and rejects, with the line,
// every construct outside the supported subset.
#pragma once
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "jinja_value.hpp"

namespace trellis::tokenizer::jinja {

// Variables in nested scopes (a `for` body is a scope; `if` is not), the
// output so far and the line being evaluated (for error messages).
struct Context {
  std::vector<std::unordered_map<std::string, Value>> scopes;
  std::string out;
  int line = 0;
  Value lookup(const std::string& name) const;
  void assign(const std::string& name, Value v) { scopes.back()[name] = std::move(v); }
};

enum class Flow { Normal, Break, Continue };

struct Expr {
  int line = 0;
  virtual ~Expr() = default;
  virtual Value eval(Context& ctx) const = 0;
};
using ExprPtr = std::unique_ptr<Expr>;

struct Args {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> keyword;
};

struct Literal : Expr {
  Value value;
  Value eval(Context& ctx) const override;
};
struct Name : Expr {
  std::string name;
  Value eval(Context& ctx) const override;
};
struct ListLiteral : Expr {
  std::vector<ExprPtr> items;
  Value eval(Context& ctx) const override;
};
struct DictLiteral : Expr {
  std::vector<std::pair<ExprPtr, ExprPtr>> items;
  Value eval(Context& ctx) const override;
};
struct GetAttr : Expr {  // x.name
  ExprPtr object;
  std::string name;
  Value eval(Context& ctx) const override;
};
struct GetItem : Expr {  // x[i]
  ExprPtr object, index;
  Value eval(Context& ctx) const override;
};
struct Slice : Expr {  // x[a:b:c], any part optional
  ExprPtr object, start, stop, step;
  Value eval(Context& ctx) const override;
};
struct MethodCall : Expr {  // x.name(args)
  ExprPtr object;
  std::string method;
  Args args;
  Value eval(Context& ctx) const override;
};
struct FunctionCall : Expr {  // name(args), a global function
  std::string function;
  Args args;
  Value eval(Context& ctx) const override;
};
struct Filter : Expr {  // x | name(args)
  ExprPtr value;
  std::string filter;
  Args args;
  Value eval(Context& ctx) const override;
};
struct Test : Expr {  // x is [not] name(args)
  ExprPtr value;
  std::string test;
  Args args;
  bool negated = false;
  Value eval(Context& ctx) const override;
};
struct Unary : Expr {  // not x, -x, +x
  std::string op;
  ExprPtr operand;
  Value eval(Context& ctx) const override;
};
struct Binary : Expr {  // and/or short-circuit; the rest evaluate both sides
  std::string op;
  ExprPtr left, right;
  Value eval(Context& ctx) const override;
};
struct Conditional : Expr {  // a if cond else b (else optional)
  ExprPtr then, condition, otherwise;
  Value eval(Context& ctx) const override;
};

struct Stmt {
  int line = 0;
  virtual ~Stmt() = default;
  virtual Flow exec(Context& ctx) const = 0;
};
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

Flow exec_body(const Body& body, Context& ctx);

struct TextStmt : Stmt {
  std::string text;
  Flow exec(Context& ctx) const override;
};
struct OutputStmt : Stmt {  // {{ expr }}
  ExprPtr expr;
  Flow exec(Context& ctx) const override;
};
struct IfStmt : Stmt {
  std::vector<std::pair<ExprPtr, Body>> branches;  // if, elif...
  Body otherwise;
  Flow exec(Context& ctx) const override;
};
struct ForStmt : Stmt {  // for a[, b] in iterable [if filter] ... [else ...]
  std::vector<std::string> targets;
  ExprPtr iterable, filter;
  Body body, otherwise;
  Flow exec(Context& ctx) const override;
};
struct SetStmt : Stmt {  // set name = value / set name.attr = value
  std::string name, attr;
  ExprPtr value;
  Flow exec(Context& ctx) const override;
};
struct LoopControl : Stmt {  // break / continue
  Flow flow = Flow::Break;
  Flow exec(Context& ctx) const override;
};

}  // namespace trellis::tokenizer::jinja
