// `pipesim check KERNEL.ptx --launch L.json`: the kernel's own PTX on the engine (verify/ptx/).
// Bad input of every stage (the PTX text, the launch, an instruction the interpreter does not run)
// is a diagnostic with file:line:col and exit 2; what the kernel does is the run's verdict.
#include <chrono>
#include <fstream>
#include <memory>
#include <new>
#include <sstream>

#include "verify/check.hpp"
#include "verify/ptx_budget.hpp"
#include "verify/ptx/launch.hpp"
#include "verify/ptx/machine.hpp"
#include "verify/ptx/parser.hpp"
#include "verify/ptx/run_use.hpp"
#include "verify/ptx/source.hpp"

namespace pipesim::verify {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A launch problem: at its place in the launch file, or on the command line.
std::string launch_diagnostic(const ptx::LaunchError& e) {
  if (e.file.empty()) return "pipesim: error: launch: " + std::string(e.what()) + "\n";
  if (e.pos.line == 0) return e.file + ": error: " + e.what() + "\n";
  return ptx::format_error(e.file, read_text(e.file), e.pos, e.what());
}

}  // namespace

CheckResult check_ptx(const std::string& path, const CheckOptions& options) {
  CheckResult r;
  r.file = path;
  const auto t0 = std::chrono::steady_clock::now();
  auto fail = [&](std::string diagnostic) {
    r.bad_input = true;
    r.diagnostic = std::move(diagnostic);
    return r;
  };
  std::shared_ptr<const ptx::Module> module;
  try {
    module = std::make_shared<const ptx::Module>(ptx::parse_file(path));
  } catch (const ptx::ParseError& e) {
    return fail(ptx::format_error(e, read_text(path)));
  }
  ptx::Launch launch;
  auto use = std::make_shared<ptx::RunUse>();
  try {
    if (!options.launch.empty()) launch = ptx::read_launch(options.launch);
    else if (options.launch_sets.empty())
      return fail(path + ": error: a PTX kernel needs its launch: --launch FILE.json and/or -D grid=... -D block=... (docs/ptx.md)\n");
    for (const std::string& s : options.launch_sets) ptx::apply_short_form(launch, s);
    ptx::resolve_launch(launch, *module);
    r.kernel = ptx::make_kernel(module, launch, use);
  } catch (const ptx::LaunchError& e) {
    return fail(launch_diagnostic(e));
  } catch (const ptx::PtxError& e) {
    return fail(ptx::format_error(*module, e.pos, e.what()));
  }
  r.kernel.expect = options.expect;
  try {
    r.result = sim::run(r.kernel, options.run);
    // The budget from what the run used: its warnings join the run's.
    auto budget = std::make_shared<PtxBudget>(ptx_budget(r.kernel, static_cast<int64_t>(launch.static_smem),
                                                         static_cast<int64_t>(launch.dynamic_smem), *use, r.result));
    r.result.findings.insert(r.result.findings.end(), budget->findings.begin(), budget->findings.end());
    r.ptx_budget = std::move(budget);
  } catch (const ptx::PtxError& e) {
    return fail(ptx::format_error(*module, e.pos, e.what()));
  } catch (const std::bad_alloc&) {
    return fail(path + ": error: " + kOutOfMemory + "\n");
  } catch (const std::exception& e) {
    return fail(path + ": error: " + e.what() + "\n");
  }
  r.options_empty_commit_local = options.run.empty_commit_local;
  r.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  judge(r);
  return r;
}

}  // namespace pipesim::verify
