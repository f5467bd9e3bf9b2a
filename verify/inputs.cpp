#include "verify/inputs.hpp"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

namespace pipesim::verify {

std::vector<std::string> scenario_files(const std::vector<std::string>& args, std::string& error) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (const std::string& p : args) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> found;
      for (auto it = fs::recursive_directory_iterator(p, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
        if (it->is_regular_file() && it->path().extension() == ".scn") found.push_back(it->path().string());
      std::sort(found.begin(), found.end());
      if (found.empty()) error += fmt::format("{}: error: no .scn scenario files in this directory\n", p);
      out.insert(out.end(), found.begin(), found.end());
    } else if (fs::exists(p, ec)) {
      out.push_back(p);
    } else {
      error += fmt::format("{}: error: no such file or directory\n", p);
    }
  }
  return out;
}

CLI::Option* add_repeatable_option(CLI::App& cmd, const std::string& name, std::vector<std::string>& out,
                                   const std::string& help) {
  return cmd.add_option(name, out, help)
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

const CLI::Validator& not_negative() {
  static const CLI::Validator v(
      [](std::string& value) {
        const size_t at = value.find_first_not_of(" \t");
        return at != std::string::npos && value[at] == '-' ? "a negative value (" + value + "); this option takes a whole number >= 0"
                                                           : std::string();
      },
      "NUMBER >= 0");
  return v;
}

}  // namespace pipesim::verify
