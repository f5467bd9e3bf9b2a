// `pipesim calibrate --unstamped LOG --stamped LOG [--check LOG] [--rounds N]`: fits the device
// interpreter's per-op cost (model::InterpreterCost) to crosscheck logs (verify/calibrate.hpp).
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace pipesim::verify {

CLI::App* add_calibrate_command(CLI::App& app, std::function<int()>& action);

}  // namespace pipesim::verify
