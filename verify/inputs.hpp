// What a command's FILE|DIR... arguments name: files as given, and every *.scn below a
// directory, sorted. Shared by every command that takes scenarios.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace pipesim::verify {

// Appends "path: error: ..." lines to `error` for paths that do not exist and directories
// without scenarios.
std::vector<std::string> scenario_files(const std::vector<std::string>& args, std::string& error);

// A repeatable option that takes exactly one value each time (`-D K=1 -D N=2 FILE`): a plain
// vector option would swallow the FILE after it.
CLI::Option* add_repeatable_option(CLI::App& cmd, const std::string& name, std::vector<std::string>& out,
                                   const std::string& help);

// A count or bound kept unsigned (`--max-events 1000`): refuses a negative value, which the
// conversion would otherwise wrap to a huge one (a bound of "-5" read as no limit).
const CLI::Validator& not_negative();

}  // namespace pipesim::verify
