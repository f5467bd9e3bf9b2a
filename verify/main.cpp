// pipesim: a thin driver over the verify library's commands.
#include <functional>
#include <iostream>
#include <new>

#include <CLI/CLI.hpp>

#include "verify/budget_command.hpp"
#include "verify/calibrate_command.hpp"
#include "verify/check.hpp"
#include "verify/check_command.hpp"
#include "verify/crosscheck_command.hpp"
#include "verify/generate_command.hpp"

#include "pipesim_version.hpp"  // generated at build time (cmake/write_version.cmake)

int main(int argc, char** argv) {
  CLI::App app{"pipesim: find hangs, broken mbarrier rules and budget mistakes in warp-specialized kernels before a GPU run"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("pipesim ") + PIPESIM_VERSION, "print the version (CMake project and git describe of the tree built) and exit");
  std::function<int()> action;
  pipesim::verify::add_check_command(app, action);
  pipesim::verify::add_budget_command(app, action);
  pipesim::verify::add_crosscheck_command(app, action);
  pipesim::verify::add_generate_command(app, action);
  pipesim::verify::add_calibrate_command(app, action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  try {
    return action ? action() : 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "pipesim: error: " << pipesim::verify::kOutOfMemory << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "pipesim: error: " << e.what() << "\n";
    return 2;
  }
}
