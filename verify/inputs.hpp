// What a command's FILE|DIR... arguments name: files as given, and every *.scn below a
// directory, sorted. Shared by every command that takes scenarios.
#pragma once

#include <string>
#include <vector>

namespace pipesim::verify {

// Appends "path: error: ..." lines to `error` for paths that do not exist and directories
// without scenarios.
std::vector<std::string> scenario_files(const std::vector<std::string>& args, std::string& error);

}  // namespace pipesim::verify
