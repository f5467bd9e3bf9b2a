#include "verify/lexer.hpp"

#include <fmt/format.h>

#include <limits>

namespace pipesim::verify {
namespace {

bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

// Digit value of c in `base`, or -1.
int digit_value(char c, int base) {
  int v = -1;
  if (c >= '0' && c <= '9') v = c - '0';
  else if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
  else if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
  return v < base ? v : -1;
}

uint32_t u32(size_t v) { return static_cast<uint32_t>(v); }

// Parses an integer literal: decimal, 0x hex or 0b binary, with '_' between digits.
int64_t parse_int(std::string_view lit, sim::SourceLoc loc) {
  auto bad = [&]() -> LexError {
    return LexError{loc, u32(lit.size()), fmt::format("invalid integer literal '{}'", lit)};
  };
  int base = 10;
  std::string_view digits = lit;
  if (lit.size() >= 2 && lit[0] == '0' && (lit[1] == 'x' || lit[1] == 'X')) {
    base = 16;
    digits = lit.substr(2);
  } else if (lit.size() >= 2 && lit[0] == '0' && (lit[1] == 'b' || lit[1] == 'B')) {
    base = 2;
    digits = lit.substr(2);
  }
  if (digits.empty() || digits.front() == '_' || digits.back() == '_' ||
      digits.find("__") != std::string_view::npos) {
    throw bad();
  }
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  int64_t value = 0;
  bool overflow = false;
  for (char c : digits) {
    if (c == '_') continue;
    int d = digit_value(c, base);
    if (d < 0) throw bad();
    if (value > (kMax - d) / base) overflow = true;
    if (!overflow) value = value * base + d;
  }
  if (overflow) throw LexError{loc, u32(lit.size()), "integer literal out of range"};
  return value;
}

}  // namespace

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    size_t stop = nl == std::string_view::npos ? text.size() : nl;
    std::string_view line = text.substr(start, stop - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.emplace_back(line);
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  return lines;
}

LineShape scan_line(std::string_view line) {
  LineShape s;
  size_t i = 0;
  while (i < line.size() && line[i] == ' ') ++i;
  s.indent = u32(i);
  size_t j = i;
  while (j < line.size() && (line[j] == ' ' || line[j] == '\t' || line[j] == '\r')) {
    if (line[j] == '\t' && s.tab_col == 0) s.tab_col = u32(j + 1);
    ++j;
  }
  s.blank = j == line.size() || line[j] == '#';
  return s;
}

std::vector<Token> lex_line(std::string_view s, uint32_t line_no) {
  std::vector<Token> out;
  size_t i = 0;
  size_t end_of_last = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
      continue;
    }
    if (c == '#') break;
    Token t;
    t.loc = {line_no, u32(i + 1)};
    size_t j = i + 1;
    if (is_ident_start(c)) {
      while (j < s.size() && is_ident_char(s[j])) ++j;
      t.kind = Tok::Ident;
    } else if (is_digit(c)) {
      while (j < s.size() && is_ident_char(s[j])) ++j;
      t.kind = Tok::Int;
      t.value = parse_int(s.substr(i, j - i), t.loc);
    } else {
      const char n = j < s.size() ? s[j] : '\0';
      auto two = [&](char second, Tok k) {
        if (n != second) return false;
        t.kind = k;
        j = i + 2;
        return true;
      };
      bool matched = false;
      switch (c) {
        case '.': matched = two('.', Tok::DotDot); break;
        case '-': matched = two('>', Tok::Arrow); break;
        case '<': matched = two('<', Tok::Shl) || two('=', Tok::Le); break;
        case '>': matched = two('>', Tok::Shr) || two('=', Tok::Ge); break;
        case '=': matched = two('=', Tok::EqEq); break;
        case '!': matched = two('=', Tok::Ne); break;
        case '&': matched = two('&', Tok::AndAnd); break;
        case '|': matched = two('|', Tok::OrOr); break;
        default: break;
      }
      if (!matched) {
        switch (c) {
          case '(': t.kind = Tok::LParen; break;
          case ')': t.kind = Tok::RParen; break;
          case '[': t.kind = Tok::LBracket; break;
          case ']': t.kind = Tok::RBracket; break;
          case ',': t.kind = Tok::Comma; break;
          case ':': t.kind = Tok::Colon; break;
          case '=': t.kind = Tok::Assign; break;
          case '.': t.kind = Tok::Dot; break;
          case '+': t.kind = Tok::Plus; break;
          case '-': t.kind = Tok::Minus; break;
          case '*': t.kind = Tok::Star; break;
          case '/': t.kind = Tok::Slash; break;
          case '%': t.kind = Tok::Percent; break;
          case '&': t.kind = Tok::Amp; break;
          case '|': t.kind = Tok::Pipe; break;
          case '^': t.kind = Tok::Caret; break;
          case '~': t.kind = Tok::Tilde; break;
          case '!': t.kind = Tok::Bang; break;
          case '<': t.kind = Tok::Lt; break;
          case '>': t.kind = Tok::Gt; break;
          default: {
            const auto uc = static_cast<unsigned char>(c);
            std::string shown = uc >= 0x21 && uc < 0x7f ? fmt::format("'{}'", c)
                                                         : fmt::format("byte 0x{:02x}", uc);
            throw LexError{t.loc, 1, fmt::format("unexpected character {}", shown)};
          }
        }
      }
    }
    t.text = s.substr(i, j - i);
    t.len = u32(j - i);
    out.push_back(t);
    end_of_last = j;
    i = j;
  }
  Token end;
  end.kind = Tok::End;
  if (out.empty()) {
    size_t k = 0;
    while (k < s.size() && s[k] == ' ') ++k;
    end_of_last = k;
  }
  end.loc = {line_no, u32(end_of_last + 1)};
  end.len = 1;
  out.push_back(end);
  return out;
}

std::string describe(const Token& t) {
  if (t.kind == Tok::End) return "end of line";
  return fmt::format("'{}'", t.text);
}

}  // namespace pipesim::verify
