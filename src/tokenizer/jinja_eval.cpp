// Evaluation of the chat-template syntax tree (see jinja_ast.hpp).
#include "jinja_ast.hpp"
#include "jinja_builtins.hpp"
#include "jinja_ops.hpp"

namespace trellis::tokenizer::jinja {
namespace {

CallArgs eval_args(const Args& args, Context& ctx) {
  CallArgs out;
  for (const auto& e : args.positional) out.positional.push_back(e->eval(ctx));
  for (const auto& [k, e] : args.keyword) out.keyword.emplace_back(k, e->eval(ctx));
  return out;
}

std::optional<int64_t> slice_bound(const ExprPtr& e, Context& ctx) {
  if (!e) return std::nullopt;
  const Value v = e->eval(ctx);
  if (v.kind() == Value::Kind::None) return std::nullopt;
  if (v.kind() != Value::Kind::Int) throw TemplateError(std::string("slice bounds must be integers, not ") + v.type_name());
  return v.as_int();
}

// Binds `for a` or `for a, b` to one item in the innermost scope.
void bind_targets(const std::vector<std::string>& targets, const Value& item, Context& ctx) {
  if (targets.size() == 1) {
    ctx.assign(targets[0], item);
    return;
  }
  if (item.kind() != Value::Kind::List || item.as_list().size() != targets.size())
    throw TemplateError("cannot unpack " + item.repr() + " into " + std::to_string(targets.size()) + " names");
  for (std::size_t k = 0; k < targets.size(); ++k) ctx.assign(targets[k], item.as_list()[k]);
}

// The `loop` variable of iteration i over items.
Value loop_info(const std::vector<Value>& items, std::size_t i) {
  const auto idx = static_cast<int64_t>(i), len = static_cast<int64_t>(items.size());
  Dict d;
  d.items = {{"index0", Value(idx)},
             {"index", Value(idx + 1)},
             {"first", Value(i == 0)},
             {"last", Value(idx + 1 == len)},
             {"length", Value(len)},
             {"revindex", Value(len - idx)},
             {"revindex0", Value(len - idx - 1)},
             {"previtem", i > 0 ? items[i - 1] : Value()},
             {"nextitem", idx + 1 < len ? items[i + 1] : Value()}};
  return Value(std::move(d));
}

}  // namespace

Value Context::lookup(const std::string& name) const {
  for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
    const auto hit = it->find(name);
    if (hit != it->end()) return hit->second;
  }
  return Value();
}

Value Literal::eval(Context&) const { return value; }

Value Name::eval(Context& ctx) const { return ctx.lookup(name); }

Value ListLiteral::eval(Context& ctx) const {
  List out;
  for (const auto& e : items) out.push_back(e->eval(ctx));
  return out;
}

Value DictLiteral::eval(Context& ctx) const {
  Dict d;
  for (const auto& [k, v] : items) {
    ctx.line = line;
    const Value key = k->eval(ctx);
    if (!key.is_string()) throw TemplateError(std::string("dict keys must be strings, not ") + key.type_name());
    d.set(key.as_string(), v->eval(ctx));
  }
  return d;
}

Value GetAttr::eval(Context& ctx) const {
  const Value obj = object->eval(ctx);
  ctx.line = line;
  if (obj.is_undefined()) throw TemplateError("cannot read attribute '" + name + "' of an undefined value");
  return subscript(obj, Value(name));
}

Value GetItem::eval(Context& ctx) const {
  const Value obj = object->eval(ctx);
  const Value idx = index->eval(ctx);
  ctx.line = line;
  return subscript(obj, idx);
}

Value Slice::eval(Context& ctx) const {
  const Value obj = object->eval(ctx);
  const auto b = slice_bound(start, ctx), e = slice_bound(stop, ctx), s = slice_bound(step, ctx);
  ctx.line = line;
  return slice(obj, b, e, s);
}

Value MethodCall::eval(Context& ctx) const {
  const Value obj = object->eval(ctx);
  const CallArgs a = eval_args(args, ctx);
  ctx.line = line;
  return call_method(obj, method, a);
}

Value FunctionCall::eval(Context& ctx) const {
  const CallArgs a = eval_args(args, ctx);
  ctx.line = line;
  return call_function(function, a);
}

Value Filter::eval(Context& ctx) const {
  const Value v = value->eval(ctx);
  const CallArgs a = eval_args(args, ctx);
  ctx.line = line;
  return apply_filter(filter, v, a);
}

Value Test::eval(Context& ctx) const {
  const Value v = value->eval(ctx);
  const CallArgs a = eval_args(args, ctx);
  ctx.line = line;
  return apply_test(test, v, a) != negated;
}

Value Unary::eval(Context& ctx) const {
  const Value v = operand->eval(ctx);
  ctx.line = line;
  if (op == "not") return !v.truthy();
  return binary(op == "-" ? "-" : "+", Value(0), v);
}

Value Binary::eval(Context& ctx) const {
  if (op == "and" || op == "or") {  // Python returns the deciding operand
    Value l = left->eval(ctx);
    if (l.truthy() == (op == "or")) return l;
    return right->eval(ctx);
  }
  const Value l = left->eval(ctx);
  const Value r = right->eval(ctx);
  ctx.line = line;
  if (op == "in") return contains(r, l);
  if (op == "not in") return !contains(r, l);
  return binary(op, l, r);
}

Value Conditional::eval(Context& ctx) const {
  if (condition->eval(ctx).truthy()) return then->eval(ctx);
  return otherwise ? otherwise->eval(ctx) : Value();
}

Flow exec_body(const Body& body, Context& ctx) {
  for (const auto& s : body) {
    const Flow f = s->exec(ctx);
    if (f != Flow::Normal) return f;
  }
  return Flow::Normal;
}

Flow TextStmt::exec(Context& ctx) const {
  ctx.out += text;
  return Flow::Normal;
}

Flow OutputStmt::exec(Context& ctx) const {
  ctx.line = line;
  ctx.out += expr->eval(ctx).str();
  return Flow::Normal;
}

Flow IfStmt::exec(Context& ctx) const {
  for (const auto& [cond, body] : branches) {
    ctx.line = cond->line;
    if (cond->eval(ctx).truthy()) return exec_body(body, ctx);
  }
  return exec_body(otherwise, ctx);
}

Flow ForStmt::exec(Context& ctx) const {
  ctx.line = line;
  std::vector<Value> items = iterate(iterable->eval(ctx));
  if (filter) {  // `for x in xs if cond`: loop.* counts only kept items
    std::vector<Value> kept;
    for (Value& item : items) {
      ctx.scopes.emplace_back();
      bind_targets(targets, item, ctx);
      const bool keep = filter->eval(ctx).truthy();
      ctx.scopes.pop_back();
      if (keep) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  for (std::size_t i = 0; i < items.size(); ++i) {
    ctx.scopes.emplace_back();
    bind_targets(targets, items[i], ctx);
    ctx.assign("loop", loop_info(items, i));
    const Flow f = exec_body(body, ctx);
    ctx.scopes.pop_back();
    if (f == Flow::Break) break;
  }
  if (items.empty()) return exec_body(otherwise, ctx);
  return Flow::Normal;
}

Flow SetStmt::exec(Context& ctx) const {
  Value v = value->eval(ctx);
  ctx.line = line;
  if (attr.empty()) {
    ctx.assign(name, std::move(v));
    return Flow::Normal;
  }
  const Value ns = ctx.lookup(name);
  if (ns.kind() != Value::Kind::Namespace)
    throw TemplateError("cannot set '" + name + "." + attr + "': '" + name + "' is a " + ns.type_name() +
                        ", not a namespace()");
  ns.namespace_dict().set(attr, std::move(v));
  return Flow::Normal;
}

Flow LoopControl::exec(Context&) const { return flow; }

}  // namespace trellis::tokenizer::jinja
