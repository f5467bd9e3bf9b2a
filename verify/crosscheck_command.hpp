// `pipesim crosscheck FILE|DIR...`: each scenario on the model and on the GPU (the device interpreter,
// kernels/interp/), side by side (the comparison: crosscheck_compare.hpp), or a PTX kernel as itself
// (crosscheck_ptx.hpp).
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

#include "verify/crosscheck_compare.hpp"

namespace pipesim::verify {

CLI::App* add_crosscheck_command(CLI::App& app, std::function<int()>& action);

}  // namespace pipesim::verify
