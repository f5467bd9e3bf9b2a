// Lexer of the scenario language (docs/scenario-language.md, "Lexical structure").
// The language is line based: the parser asks for one source line at a time, so that errors
// come out in source order. A line's tokens end with one Tok::End token.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/program.hpp"

namespace pipesim::verify {

enum class Tok : uint8_t {
  End, Ident, Int,
  LParen, RParen, LBracket, RBracket, Comma, Colon, Assign, Dot, DotDot, Arrow,
  Plus, Minus, Star, Slash, Percent, Shl, Shr, Amp, Pipe, Caret, Tilde, Bang,
  AndAnd, OrOr, Lt, Le, Gt, Ge, EqEq, Ne,
};

struct Token {
  Tok kind = Tok::End;
  std::string_view text;  // the token's characters, inside the source line
  int64_t value = 0;      // Tok::Int: the literal's value
  sim::SourceLoc loc;
  uint32_t len = 1;       // characters the token spans (1 for End)
};

// A lexical error; the parser renders it as a diagnostic.
struct LexError {
  sim::SourceLoc loc;
  uint32_t len = 1;
  std::string message;
};

// The shape of a line before it is lexed: its indentation, whether it holds nothing but
// spaces and a comment, and where a tab in its indentation is (0: none).
struct LineShape {
  uint32_t indent = 0;
  bool blank = true;
  uint32_t tab_col = 0;
};

// Splits source text into lines: "\n" or "\r\n" ends a line; a final newline adds no line.
std::vector<std::string> split_lines(std::string_view text);

LineShape scan_line(std::string_view line);

// Tokens of one line (comment stripped), ending in Tok::End. Throws LexError.
std::vector<Token> lex_line(std::string_view line, uint32_t line_no);

// "'('", "end of line", "'foo'" ...: how an error message names a token.
std::string describe(const Token& t);

}  // namespace pipesim::verify
