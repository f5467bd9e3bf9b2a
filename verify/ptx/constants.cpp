// PTX parser: numeric literals (integers in every base, 0f / 0d float bits, decimal floats) and
// integer constant expressions with C precedence.
#include <bit>
#include <charconv>

#include "verify/ptx/parser_impl.hpp"

namespace pipesim::ptx::detail {
namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Digits of `s` in `base` into `out`; false on a bad digit, no digits or more than 64 bits.
bool digits_value(std::string_view s, uint64_t base, uint64_t& out) {
  if (s.empty()) return false;
  out = 0;
  for (char c : s) {
    const int d = hex_digit(c);
    if (d < 0 || static_cast<uint64_t>(d) >= base) return false;
    if (out > (UINT64_MAX - static_cast<uint64_t>(d)) / base) return false;
    out = out * base + static_cast<uint64_t>(d);
  }
  return true;
}

int precedence(const Token& t) {
  if (t.kind == TokKind::Shl || t.kind == TokKind::Shr) return 4;
  if (t.kind != TokKind::Punct) return 0;
  switch (t.text[0]) {
    case '|': return 1;
    case '^': return 2;
    case '&': return 3;
    case '+': case '-': return 5;
    case '*': case '/': case '%': return 6;
    default: return 0;
  }
}

}  // namespace

Value ModuleParser::literal(const Token& t) const {
  std::string_view s = t.text;
  Value v;
  if (s.size() >= 2 && s[0] == '0' && (s[1] == 'f' || s[1] == 'F' || s[1] == 'd' || s[1] == 'D')) {
    const bool single = s[1] == 'f' || s[1] == 'F';
    if (s.size() != (single ? 10u : 18u) || !digits_value(s.substr(2), 16, v.bits))
      fail(t.pos, "'" + std::string(s) + "' is not a float literal: " +
                      (single ? "0f takes 8 hex digits" : "0d takes 16 hex digits"));
    v.fbits = single ? 32 : 64;
    return v;
  }
  const bool is_hex = s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  const bool is_bin = s.size() >= 2 && s[0] == '0' && (s[1] == 'b' || s[1] == 'B');
  if (!is_hex && !is_bin && s.find_first_of(".eE") != std::string_view::npos) {
    double d = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
    if (ec != std::errc() || end != s.data() + s.size())
      fail(t.pos, "'" + std::string(s) + "' is not a valid number");
    v.bits = std::bit_cast<uint64_t>(d);
    v.fbits = 64;
    return v;
  }
  std::string_view digits = s;
  if (digits.back() == 'U' || digits.back() == 'u') digits.remove_suffix(1);
  uint64_t base = 10;
  if (is_hex || is_bin) {
    base = is_hex ? 16 : 2;
    digits.remove_prefix(2);
  } else if (digits.size() > 1 && digits[0] == '0') {
    base = 8;
    digits.remove_prefix(1);
  }
  if (!digits_value(digits, base, v.bits)) {
    bool well_formed = !digits.empty();
    for (char c : digits) well_formed = well_formed && hex_digit(c) >= 0 && static_cast<uint64_t>(hex_digit(c)) < base;
    fail(t.pos, well_formed ? "the integer '" + std::string(s) + "' does not fit in 64 bits"
                            : "'" + std::string(s) + "' is not a valid number");
  }
  return v;
}

Value ModuleParser::expr(uint32_t depth) { return expr_binary(1, depth); }

Value ModuleParser::expr_binary(int min_prec, uint32_t depth) {
  Value lhs = expr_unary(depth);
  while (true) {
    const Token op = lex_.peek();
    const int prec = precedence(op);
    if (prec == 0 || prec < min_prec) return lhs;
    lex_.next();
    const Value rhs = expr_binary(prec + 1, depth);
    if (lhs.is_float() || rhs.is_float()) fail(op.pos, "float literals cannot be used in a constant expression");
    const int64_t a = static_cast<int64_t>(lhs.bits), b = static_cast<int64_t>(rhs.bits);
    if ((op.is('/') || op.is('%')) && b == 0) fail(op.pos, "division by zero in a constant expression");
    if ((op.kind == TokKind::Shl || op.kind == TokKind::Shr) && rhs.bits > 63)
      fail(op.pos, "shift by " + std::to_string(b) + " in a constant expression (0..63 allowed)");
    uint64_t r = 0;
    if (op.kind == TokKind::Shl) r = lhs.bits << rhs.bits;
    else if (op.kind == TokKind::Shr) r = static_cast<uint64_t>(a >> b);
    else switch (op.text[0]) {
      case '|': r = lhs.bits | rhs.bits; break;
      case '^': r = lhs.bits ^ rhs.bits; break;
      case '&': r = lhs.bits & rhs.bits; break;
      case '+': r = lhs.bits + rhs.bits; break;
      case '-': r = lhs.bits - rhs.bits; break;
      case '*': r = lhs.bits * rhs.bits; break;
      case '/': r = b == -1 ? 0 - lhs.bits : static_cast<uint64_t>(a / b); break;
      default: r = b == -1 ? 0 : static_cast<uint64_t>(a % b); break;
    }
    lhs = Value{r, 0};
  }
}

Value ModuleParser::expr_unary(uint32_t depth) {
  const Token t = lex_.peek();
  if (depth > kMaxExprDepth) fail(t.pos, "constant expression nested too deeply");
  if (t.is('-') || t.is('+') || t.is('~') || t.is('!')) {
    lex_.next();
    Value v = expr_unary(depth + 1);
    if (t.is('+')) return v;
    if (v.is_float()) {
      if (!t.is('-')) fail(t.pos, std::string("'") + t.text[0] + "' does not apply to a float literal");
      v.bits ^= 1ull << (v.fbits - 1);
      return v;
    }
    v.bits = t.is('-') ? 0 - v.bits : t.is('~') ? ~v.bits : static_cast<uint64_t>(v.bits == 0);
    return v;
  }
  if (t.is('(')) {
    lex_.next();
    const Value v = expr(depth + 1);
    expect(')', "to close the parenthesis");
    return v;
  }
  if (t.kind == TokKind::Number) return literal(lex_.next());
  fail(t.pos, "expected a constant, found " + describe(t));
}

int64_t ModuleParser::int_expr(const char* what) {
  const TextPos at = lex_.peek().pos;
  const Value v = expr();
  if (v.is_float()) fail(at, std::string("expected an integer ") + what + ", found a float");
  return static_cast<int64_t>(v.bits);
}

}  // namespace pipesim::ptx::detail
