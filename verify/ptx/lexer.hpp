// Tokens of PTX text, produced on demand with up to two tokens of lookahead. Tokens point into the text
// (no copies). Comments and whitespace (newlines included: PTX is not line based) are skipped.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "verify/ptx/ast.hpp"

namespace pipesim::ptx {

enum class TokKind : uint8_t {
  End,     // end of the text
  Word,    // identifiers, registers, opcodes: `ld.global.v4.u32`, `%tid.x`, `$L__BB0_3`, `shared::cta`
  Dir,     // a directive or type: `.reg`, `.b32`, `.shared::cluster` (one dotted part only)
  Number,  // starts with a digit: `42`, `0x1F`, `0f3F800000`, `1.5e-3`, `9.0` (checked by the parser)
  String,  // "..." (text holds the contents between the quotes, escapes as written)
  Punct,   // one character: , ; : ( ) [ ] { } < > + - * / % ! ~ & | ^ @ = ?  (text[0])
  Shl,     // <<
  Shr,     // >>
};

struct Token {
  TokKind kind = TokKind::End;
  std::string_view text;
  TextPos pos;
  bool is(char c) const { return kind == TokKind::Punct && text[0] == c; }
  bool is_word(std::string_view w) const { return kind == TokKind::Word && text == w; }
  bool is_dir(std::string_view d) const { return kind == TokKind::Dir && text == d; }
};

// How a message names a token: "'foo'", "'.reg'", "end of file", "a string".
std::string describe(const Token& t);

class Lexer {
 public:
  // Errors (unterminated comment or string, a character PTX has no use for) throw ParseError.
  Lexer(std::string_view text, const std::string& path);

  const Token& peek() const { return ahead_[0]; }
  const Token& peek2() {
    if (!have_second_) {
      ahead_[1] = scan();
      have_second_ = true;
    }
    return ahead_[1];
  }
  Token next();
  // Position of the end of the last token taken (for "missing ';'" style messages).
  TextPos last_end() const { return last_end_; }

 private:
  Token scan();
  void skip_space_and_comments();
  [[noreturn]] void fail(TextPos at, const std::string& message) const;
  TextPos here() const {
    return TextPos{line_, static_cast<uint32_t>(at_ - line_start_ + 1)};
  }

  std::string_view text_;
  const std::string& path_;
  size_t at_ = 0;
  size_t line_start_ = 0;
  uint32_t line_ = 1;
  Token ahead_[2];
  bool have_second_ = false;  // ahead_[1] is scanned only when asked for, so errors come in text order
  TextPos last_end_;
};

}  // namespace pipesim::ptx
