#include "verify/ptx/lexer.hpp"

#include <cstdio>

#include "verify/ptx/parser.hpp"

namespace pipesim::ptx {
namespace {

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '$';
}
bool is_word_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }

constexpr std::string_view kPunct = ",;:()[]{}<>+-*/%!~&|^@=?";

}  // namespace

std::string describe(const Token& t) {
  switch (t.kind) {
    case TokKind::End: return "end of file";
    case TokKind::String: return "a string";
    default:  // a token of damaged input can be very long: its start is enough
      return "'" + std::string(t.text.substr(0, 48)) + (t.text.size() > 48 ? "...'" : "'");
  }
}

Lexer::Lexer(std::string_view text, const std::string& path) : text_(text), path_(path) {
  if (text_.starts_with("\xEF\xBB\xBF")) at_ = 3;  // a UTF-8 byte order mark (columns stay byte counts)
  ahead_[0] = scan();
}

Token Lexer::next() {
  Token t = ahead_[0];
  if (have_second_) {
    ahead_[0] = ahead_[1];
    have_second_ = false;
  } else {
    ahead_[0] = scan();  // at the end of the text this is End again, forever
  }
  const uint32_t width = static_cast<uint32_t>(t.text.size()) + (t.kind == TokKind::String ? 2 : 0);
  last_end_ = TextPos{t.pos.line, t.pos.col + width};
  return t;
}

void Lexer::fail(TextPos at, const std::string& message) const { throw ParseError(path_, at, message); }

void Lexer::skip_space_and_comments() {
  const size_t n = text_.size();
  while (at_ < n) {
    const char c = text_[at_];
    if (c == '\n') {
      ++at_;
      ++line_;
      line_start_ = at_;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      ++at_;
    } else if (c == '/' && at_ + 1 < n && text_[at_ + 1] == '/') {
      const size_t eol = text_.find('\n', at_);
      at_ = eol == std::string_view::npos ? n : eol;
    } else if (c == '/' && at_ + 1 < n && text_[at_ + 1] == '*') {
      const TextPos start = here();
      at_ += 2;
      while (true) {
        if (at_ + 1 >= n) {
          at_ = n;
          fail(start, "this comment is never closed with '*/'");
        }
        if (text_[at_] == '*' && text_[at_ + 1] == '/') {
          at_ += 2;
          break;
        }
        if (text_[at_] == '\n') {
          line_start_ = at_ + 1;
          ++line_;
        }
        ++at_;
      }
    } else {
      return;
    }
  }
}

Token Lexer::scan() {
  skip_space_and_comments();
  Token t;
  t.pos = here();
  const size_t n = text_.size();
  if (at_ >= n) {
    t.kind = TokKind::End;
    return t;
  }
  const size_t start = at_;
  const char c = text_[at_];
  const bool next_is_word = at_ + 1 < n && is_word_char(text_[at_ + 1]);

  if (is_word_start(c) || ((c == '%' || c == '.') && next_is_word)) {
    // A directive holds one dotted part (`.ptr.global.align` is three tokens); words run across
    // dots (`ld.global.u32`, `%tid.x`). Both run across `::` (`.shared::cluster`, `L2::cache_hint`).
    t.kind = c == '.' ? TokKind::Dir : TokKind::Word;
    ++at_;
    while (at_ < n) {
      const char d = text_[at_];
      if (is_word_char(d)) {
        ++at_;
      } else if (d == '.' && t.kind == TokKind::Word && at_ + 1 < n && is_word_char(text_[at_ + 1])) {
        at_ += 2;
      } else if (d == ':' && at_ + 2 < n && text_[at_ + 1] == ':' && is_word_char(text_[at_ + 2])) {
        at_ += 3;
      } else {
        break;
      }
    }
  } else if (is_digit(c)) {
    t.kind = TokKind::Number;
    // Hex forms (0x, 0f, 0d) may hold an 'e' that is a digit, not an exponent.
    const bool hex_form = c == '0' && next_is_word && !is_digit(text_[at_ + 1]);
    ++at_;
    while (at_ < n) {
      const char d = text_[at_];
      if (is_word_char(d) || d == '.') {
        ++at_;
      } else if ((d == '+' || d == '-') && !hex_form && (text_[at_ - 1] == 'e' || text_[at_ - 1] == 'E') &&
                 at_ + 1 < n && is_digit(text_[at_ + 1])) {
        ++at_;
      } else {
        break;
      }
    }
  } else if (c == '"') {
    t.kind = TokKind::String;
    ++at_;
    while (true) {
      if (at_ >= n || text_[at_] == '\n') fail(t.pos, "this string is never closed with '\"'");
      if (text_[at_] == '\\' && at_ + 1 < n && text_[at_ + 1] != '\n') {
        at_ += 2;
        continue;
      }
      if (text_[at_] == '"') break;
      ++at_;
    }
    t.text = text_.substr(start + 1, at_ - start - 1);
    ++at_;
    return t;
  } else if ((c == '<' || c == '>') && at_ + 1 < n && text_[at_ + 1] == c) {
    t.kind = c == '<' ? TokKind::Shl : TokKind::Shr;
    at_ += 2;
  } else if (kPunct.find(c) != std::string_view::npos) {
    t.kind = TokKind::Punct;
    ++at_;
  } else {
    char shown[32];
    const unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x21 && u < 0x7f)
      std::snprintf(shown, sizeof shown, "'%c'", c);
    else
      std::snprintf(shown, sizeof shown, "0x%02X", static_cast<unsigned>(u));
    fail(t.pos, std::string("unexpected character ") + shown);
  }
  t.text = text_.substr(start, at_ - start);
  return t;
}

}  // namespace pipesim::ptx
