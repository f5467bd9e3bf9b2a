// `pipesim generate --seed S --count N --out DIR [--mistake-rate R]`
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace pipesim::verify {

CLI::App* add_generate_command(CLI::App& app, std::function<int()>& action);

}  // namespace pipesim::verify
