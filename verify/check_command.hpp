// `pipesim check FILE|DIR...`
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace pipesim::verify {

CLI::App* add_check_command(CLI::App& app, std::function<int()>& action);

}  // namespace pipesim::verify
