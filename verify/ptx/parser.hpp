// The PTX front end: the text of a .ptx file (nvcc, CuTe DSL / MLIR, Triton) into the resolved
// Module of ast.hpp. Every register, label and symbol is resolved here; instruction names are not
// checked (the interpreter decides which it runs).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "verify/ptx/ast.hpp"

namespace pipesim::ptx {

// Bad input: where (1-based line and column in `path`; 0:0 when the file could not be read) and one
// sentence saying what is wrong, which is also what().
struct ParseError : std::runtime_error {
  std::string path;
  TextPos pos;
  ParseError(std::string p, TextPos at, const std::string& message)
      : std::runtime_error(message), path(std::move(p)), pos(at) {}
};

// Parses a whole module. `path` is only used in messages and Module::path. Throws ParseError.
Module parse_module(std::string path, std::string text);

// Reads and parses a file; an unreadable file is a ParseError at 0:0.
Module parse_file(const std::string& path);

// "path:line:col: error: message\n  <the line>\n  ^\n" (just the first line when pos is 0:0 or
// outside `text`). Tabs of the line are kept in front of the caret so that it lines up.
std::string format_error(const std::string& path, std::string_view text, TextPos pos,
                         std::string_view message);
std::string format_error(const ParseError& e, std::string_view text);
// The same for a later stage that has the parsed module (its lines) and a position in it.
std::string format_error(const Module& module, TextPos pos, std::string_view message);

}  // namespace pipesim::ptx
