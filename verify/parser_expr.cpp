// Scenario expressions (folding, precedence, slots), range checks and statement operands.
// The Parser and its shared pieces: verify/parser_impl.hpp.
#include "verify/parser_impl.hpp"

namespace pipesim::verify::scenario {

int64_t Parser::fold(ExprCode op, int64_t a, int64_t b, const Token& at) const {
  int64_t r = 0;
  auto overflow = [&]() { fail(at, "integer overflow in constant expression"); };
  switch (op) {
    case ExprCode::Add: if (__builtin_add_overflow(a, b, &r)) overflow(); return r;
    case ExprCode::Sub: if (__builtin_sub_overflow(a, b, &r)) overflow(); return r;
    case ExprCode::Mul: if (__builtin_mul_overflow(a, b, &r)) overflow(); return r;
    case ExprCode::Div:
    case ExprCode::Mod:
      if (b == 0) fail(at, "division by zero");
      if (a == std::numeric_limits<int64_t>::min() && b == -1) overflow();
      return op == ExprCode::Div ? a / b : a % b;
    case ExprCode::Shl:
    case ExprCode::Shr:
      if (b < 0 || b > 63) fail(at, fmt::format("shift count {} out of range 0..63", b));
      return op == ExprCode::Shl
                 ? static_cast<int64_t>(static_cast<uint64_t>(a) << b)
                 : a >> b;
    case ExprCode::BitAnd: return a & b;
    case ExprCode::BitOr: return a | b;
    case ExprCode::BitXor: return a ^ b;
    case ExprCode::Lt: return a < b;
    case ExprCode::Le: return a <= b;
    case ExprCode::Gt: return a > b;
    case ExprCode::Ge: return a >= b;
    case ExprCode::Eq: return a == b;
    case ExprCode::Ne: return a != b;
    case ExprCode::And: return (a != 0) && (b != 0);
    case ExprCode::Or: return (a != 0) || (b != 0);
    case ExprCode::Min: return std::min(a, b);
    case ExprCode::Max: return std::max(a, b);
    case ExprCode::Neg:
      if (a == std::numeric_limits<int64_t>::min()) overflow();
      return -a;
    case ExprCode::Not: return a == 0;
    case ExprCode::BitNot: return ~a;
    case ExprCode::Popcount: return std::popcount(static_cast<uint64_t>(a));
    default: return 0;
  }
}

Val Parser::binary(ExprCode op, const Token& at, Val a, const Val& b) const {
  SourceLoc start = a.e.loc;
  uint32_t end = b.end_col();
  if (a.is_const() && b.is_const()) return make_const(fold(op, a.c(), b.c(), at), start, end - start.col);
  if ((op == ExprCode::Div || op == ExprCode::Mod) && b.is_const() && b.c() == 0)
    fail(at, "division by zero");
  if ((op == ExprCode::Shl || op == ExprCode::Shr) && b.is_const() && (b.c() < 0 || b.c() > 63))
    fail(at, fmt::format("shift count {} out of range 0..63", b.c()));
  append(a.e, b.e);
  a.e.code.push_back({op, 0});
  return span(std::move(a.e), start, end);
}

bool Parser::binary_op(Tok t, int level, ExprCode& op) {
  struct Entry { Tok t; int level; ExprCode op; };
  static constexpr Entry kOps[] = {
      {Tok::OrOr, 0, ExprCode::Or},    {Tok::AndAnd, 1, ExprCode::And},
      {Tok::Pipe, 2, ExprCode::BitOr}, {Tok::Caret, 3, ExprCode::BitXor},
      {Tok::Amp, 4, ExprCode::BitAnd}, {Tok::EqEq, 5, ExprCode::Eq},
      {Tok::Ne, 5, ExprCode::Ne},      {Tok::Lt, 6, ExprCode::Lt},
      {Tok::Le, 6, ExprCode::Le},      {Tok::Gt, 6, ExprCode::Gt},
      {Tok::Ge, 6, ExprCode::Ge},      {Tok::Shl, 7, ExprCode::Shl},
      {Tok::Shr, 7, ExprCode::Shr},    {Tok::Plus, 8, ExprCode::Add},
      {Tok::Minus, 8, ExprCode::Sub},  {Tok::Star, 9, ExprCode::Mul},
      {Tok::Slash, 9, ExprCode::Div},  {Tok::Percent, 9, ExprCode::Mod},
  };
  for (const Entry& e : kOps)
    if (e.t == t && e.level == level) {
      op = e.op;
      return true;
    }
  return false;
}

Val Parser::parse_binary(Cur& c, Ctx ctx, int level) {
  if (level == 10) return parse_unary(c, ctx);
  Val lhs = parse_binary(c, ctx, level + 1);
  ExprCode op{};
  while (binary_op(c.peek().kind, level, op)) {
    const Token& at = c.next();
    Val rhs = parse_binary(c, ctx, level + 1);
    lhs = binary(op, at, std::move(lhs), rhs);
  }
  return lhs;
}

Val Parser::parse_unary(Cur& c, Ctx ctx) {
  const Token& t = c.peek();
  ExprCode op{};
  if (t.kind == Tok::Minus) op = ExprCode::Neg;
  else if (t.kind == Tok::Bang) op = ExprCode::Not;
  else if (t.kind == Tok::Tilde) op = ExprCode::BitNot;
  else return parse_primary(c, ctx);
  enter(t);
  c.next();
  Val v = unary(op, t, parse_unary(c, ctx));
  --depth_;
  return v;
}

Val Parser::parse_primary(Cur& c, Ctx ctx) {
  const Token& t = c.peek();
  if (t.kind == Tok::Int) {
    c.next();
    return make_const(t.value, t.loc, t.len);
  }
  if (t.kind == Tok::LParen) {
    enter(t);
    c.next();
    Val v = parse_binary(c, ctx, 0);
    const Token& close = expect(c, Tok::RParen, "')'");
    --depth_;
    return span(std::move(v.e), t.loc, close.loc.col + 1);
  }
  if (t.kind == Tok::Ident) {
    c.next();
    if (c.at(Tok::LParen)) return parse_call(c, ctx, t);
    return name_value(t, ctx);
  }
  std::string note;
  if (t.kind == Tok::Assign) note = "use '==' to compare";
  fail(t, fmt::format("expected an expression, found {}", describe(t)), note);
}

Val Parser::parse_call(Cur& c, Ctx ctx, const Token& fn) {
  static constexpr std::string_view kFns[] = {"min", "max", "cdiv", "popcount"};
  size_t arity = fn.text == "popcount" ? 1 : 2;
  bool known = std::find(std::begin(kFns), std::end(kFns), fn.text) != std::end(kFns);
  if (!known)
    fail(fn, fmt::format("unknown function '{}'{}", fn.text,
                         suggest(fn.text, {std::begin(kFns), std::end(kFns)})),
         "functions: min(a, b), max(a, b), cdiv(a, b), popcount(a)");
  enter(c.peek());
  c.next();  // (
  std::vector<Val> args;
  std::vector<Token> commas;
  if (!c.at(Tok::RParen)) {
    for (;;) {
      args.push_back(parse_binary(c, ctx, 0));
      if (!c.at(Tok::Comma)) break;
      commas.push_back(c.next());
    }
  }
  const Token& close = expect(c, Tok::RParen, args.size() < arity ? "',' or ')'" : "')'");
  --depth_;
  if (args.size() != arity)
    fail(fn, fmt::format("'{}' takes {} argument{}, got {}", fn.text, arity,
                         arity == 1 ? "" : "s", args.size()));
  const uint32_t end = close.loc.col + 1;
  if (fn.text == "popcount") {
    Val v = unary(ExprCode::Popcount, fn, std::move(args[0]));
    return span(std::move(v.e), fn.loc, end);
  }
  if (fn.text == "min" || fn.text == "max") {
    Val v = binary(fn.text == "min" ? ExprCode::Min : ExprCode::Max, fn, std::move(args[0]), args[1]);
    return span(std::move(v.e), fn.loc, end);
  }
  // cdiv(a, b) = (a + b - 1) / b
  const Val& b = args[1];
  if (b.is_const() && b.c() == 0) fail(b, "division by zero");
  Val sum = binary(ExprCode::Add, commas[0], std::move(args[0]), b);
  Val less = binary(ExprCode::Sub, commas[0], std::move(sum), make_const(1, b.e.loc, b.len));
  Val v = binary(ExprCode::Div, commas[0], std::move(less), b);
  return span(std::move(v.e), fn.loc, end);
}

std::vector<std::string_view> Parser::visible_names(Ctx ctx) const {
  std::vector<std::string_view> out;
  for (const auto& p : k_.params) out.push_back(p.first);
  for (const Builtin& b : kBuiltins) out.push_back(b.name);
  if (ctx == Ctx::Role)
    for (const auto& s : scopes_)
      for (const Local& l : s) out.push_back(l.name);
  return out;
}

Val Parser::name_value(const Token& t, Ctx ctx) const {
  if (ctx == Ctx::Role)
    if (const Local* l = find_local(t.text)) return slot_value(l->slot, t);
  if (auto it = param_index_.find(std::string(t.text)); it != param_index_.end())
    return make_const(k_.params[it->second].second, t.loc, t.len);
  if (const Builtin* b = find_builtin(t.text)) {
    if (ctx == Ctx::Role) return slot_value(b->slot, t);
    // Declarations are the same for every CTA: fold what the arch and the launch fix.
    if (b->slot == sim::kSlotNumSms) {
      if (!k_.arch) fail(t, "'num_sms' needs the 'kernel NAME on ARCH' line first");
      return make_const(k_.arch->cap.sms, t.loc, t.len);
    }
    if (b->slot == sim::kSlotNumCtas || b->slot == sim::kSlotNumClusters ||
        b->slot == sim::kSlotClusterSize) {
      if (!have_launch_) fail(t, fmt::format("'{}' needs the 'launch' line first", t.text));
      int64_t v = b->slot == sim::kSlotNumCtas       ? k_.launch.ctas
                  : b->slot == sim::kSlotClusterSize ? k_.launch.cluster
                                                     : k_.launch.ctas / k_.launch.cluster;
      return make_const(v, t.loc, t.len);
    }
    if (b->slot == sim::kSlotNumTiles) {
      if (!have_launch_) fail(t, "'num_tiles' needs the 'launch' line first");
      return make_const(k_.launch.tiles, t.loc, t.len);
    }
    if (ctx == Ctx::Multicast) return slot_value(b->slot, t);
    fail(t, fmt::format("'{}' differs between CTAs and warps; a declaration needs a constant", t.text));
  }
  fail(t, fmt::format("unknown name '{}'{}", t.text, suggest(t.text, visible_names(ctx))));
}

std::vector<OGot> Parser::operands(Cur& c, const Token& head, std::span<const OSpec> specs, Ctx ctx) {
  std::vector<OGot> got(specs.size());
  std::vector<std::string_view> names;
  for (const OSpec& s : specs) names.push_back(s.name);
  while (!c.at(Tok::End)) {
    if (c.at(Tok::Comma)) {
      c.next();
      continue;
    }
    const Token& n = c.peek();
    if (n.kind != Tok::Ident) {
      if (specs.empty()) fail(n, fmt::format("expected end of line, found {}", describe(n)));
      fail(n, fmt::format("expected an operand of '{}' ({}), found {}", head.text, join(names), describe(n)));
    }
    size_t idx = specs.size();
    for (size_t i = 0; i < specs.size(); ++i)
      if (specs[i].name == n.text) idx = i;
    if (idx == specs.size()) {
      std::string note = specs.empty() ? fmt::format("'{}' takes no operands", head.text)
                                       : fmt::format("'{}' takes: {}", head.text, join(names));
      fail(n, fmt::format("unknown operand '{}' for '{}'{}", n.text, head.text, suggest(n.text, names)),
           note);
    }
    OGot& g = got[idx];
    if (g.present)
      fail(n, fmt::format("repeated operand '{}'", n.text), fmt::format("first given at column {}", g.name.loc.col));
    g.present = true;
    g.name = n;
    c.next();
    switch (specs[idx].type) {
      case OT::Flag:
        g.word = 1;
        break;
      case OT::Bool: {
        if (c.at(Tok::Assign)) c.next();
        const Token& w = c.peek();
        if (!(c.at_ident("true") || c.at_ident("false")))
          fail(w, fmt::format("expected 'true' or 'false' after '{}', found {}", n.text, describe(w)));
        g.word = w.text == "true" ? 1 : 0;
        g.v = make_const(g.word, w.loc, w.len);
        c.next();
        break;
      }
      case OT::StateKind: {
        expect(c, Tok::Assign, fmt::format("'=' after '{}'", n.text));
        g.word = parse_state_kind(c);
        break;
      }
      case OT::Expr:
        expect(c, Tok::Assign, fmt::format("'=' after '{}'", n.text));
        g.v = parse_expr(c, ctx);
        break;
      case OT::Word:
        expect(c, Tok::Assign, fmt::format("'=' after '{}'", n.text));
        g.tok = expect_ident(c, fmt::format("a name after '{} ='", n.text));
        break;
      case OT::ExprOrWord: {
        expect(c, Tok::Assign, fmt::format("'=' after '{}'", n.text));
        const Token& w = c.peek();
        // The word, unless a parameter has that name (names are not reserved).
        const bool name = w.kind == Tok::Ident && !param_index_.count(std::string(w.text));
        if (name && w.text == specs[idx].word) {
          g.word = 1;
          g.tok = w;
          g.v = make_const(0, w.loc, w.len);
          c.next();
        } else if (name && !find_builtin(w.text) && !suggest(w.text, {specs[idx].word}).empty()) {
          fail(w, fmt::format("unknown name '{}'{}", w.text, suggest(w.text, {specs[idx].word})));
        } else {
          g.v = parse_expr(c, ctx);
        }
        break;
      }
    }
  }
  for (size_t i = 0; i < specs.size(); ++i)
    if (specs[i].required && !got[i].present)
      fail(head, fmt::format("missing operand '{}' for '{}'", specs[i].name, head.text));
  return got;
}

int64_t Parser::parse_state_kind(Cur& c) {
  const Token& w = c.peek();
  if (c.at_ident("PipelineState")) {
    c.next();
    return static_cast<int64_t>(sim::StateKind::PipelineState);
  }
  if (c.at_ident("PipelineStateSimple")) {
    c.next();
    return static_cast<int64_t>(sim::StateKind::PipelineStateSimple);
  }
  fail(w, fmt::format("expected 'PipelineState' or 'PipelineStateSimple', found {}", describe(w)));
}

}  // namespace pipesim::verify::scenario
