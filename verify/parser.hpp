// The scenario front end: text -> sim::Kernel (docs/scenario-language.md).
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sim/program.hpp"

namespace pipesim::verify {

// -D NAME=INT on the command line: overrides the top-level `let NAME`.
struct Define {
  std::string name;
  int64_t value = 0;
};

// "NAME=INT" as given to -D (decimal, 0x, 0b... as std::stoll base 0 reads them). False when the
// text is not exactly that.
bool parse_define(std::string_view text, Define& out);

// Every text through parse_define, appended to `out`; false at the first bad one (left in `bad`).
bool parse_defines(const std::vector<std::string>& texts, std::vector<Define>& out, std::string& bad);

// Bad input. `what()` is the full rendered diagnostic (file:line:col: error: message, the source
// line, a caret under the offending text, and an optional note line).
struct ParseError : std::runtime_error {
  std::string file;
  sim::SourceLoc loc;
  std::string message;  // the bare message, without location or caret
  ParseError(std::string rendered, std::string f, sim::SourceLoc l, std::string msg)
      : std::runtime_error(std::move(rendered)), file(std::move(f)), loc(l), message(std::move(msg)) {}
};

// Parses and lowers one scenario. Throws ParseError on any bad input.
sim::Kernel parse_scenario(std::string_view path, std::string_view text,
                           std::span<const Define> defines = {});

// "file:line:col: error: msg\n  <line>\n  <caret>\n" (+ "  note: ..." when note is not empty).
std::string render_diagnostic(std::string_view file, const std::vector<std::string>& lines,
                              sim::SourceLoc loc, std::string_view severity, std::string_view msg,
                              std::string_view note = {}, uint32_t caret_len = 1);

}  // namespace pipesim::verify
