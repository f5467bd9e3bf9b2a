#include "tests/fuzz/fuzz_entries.hpp"

#include <memory>
#include <stdexcept>

#include "sim/engine.hpp"
#include "verify/check.hpp"
#include "verify/search.hpp"
#include "verify/ptx/launch.hpp"
#include "verify/ptx/machine.hpp"
#include "verify/ptx/parser.hpp"
#include "verify/ptx/source.hpp"

namespace pipesim::fuzz {
namespace {

sim::RunOptions fuzz_run_options() {
  sim::RunOptions o;
  o.max_events = kFuzzMaxEvents;
  o.max_instructions = kFuzzMaxInstructions;
  o.max_seconds = 0;
  return o;
}

// The module every fuzzed launch file resolves against: an entry with a scalar, a pointer, a
// tensor map and a struct parameter, .reqntid-free so any block shape is the launch's to give.
constexpr const char* kLaunchModule = R"(.version 8.4
.target sm_90a
.address_size 64

.visible .entry fuzz_entry(
  .param .u32 fuzz_entry_param_0,
  .param .u64 fuzz_entry_param_1,
  .param .align 64 .b8 fuzz_entry_param_2[128],
  .param .align 8 .b8 fuzz_entry_param_3[16]
)
{
  ret;
}
)";

const ptx::Module& launch_module() {
  static const ptx::Module m = ptx::parse_module("fuzz.ptx", kLaunchModule);
  return m;
}

}  // namespace

void scenario_front_end(const std::string& text) {
  verify::CheckOptions o;
  o.run = fuzz_run_options();
  const verify::CheckResult r = verify::check_text("fuzz.scn", text, o);
  if (r.bad_input && r.diagnostic.empty()) throw std::logic_error("bad input without a diagnostic");
}

void ptx_launch(const std::string& text) {
  try {
    ptx::Launch launch = ptx::parse_launch("fuzz.launch.json", text);
    ptx::resolve_launch(launch, launch_module());
  } catch (const ptx::LaunchError&) {
  }
}

void ptx_kernel(const std::string& text) {
  std::shared_ptr<const ptx::Module> module;
  try {
    module = std::make_shared<const ptx::Module>(ptx::parse_module("fuzz.ptx", text));
  } catch (const ptx::ParseError&) {
    return;
  }
  const ptx::Function* entry = nullptr;
  for (const ptx::Function& f : module->functions)
    if (f.is_entry) {
      entry = &f;
      break;
    }
  if (!entry) return;
  // Every parameter zeroed (a struct parameter with no fields), one buffer for what the kernel reads.
  std::string params;
  for (size_t i = 0; i < entry->params.size(); ++i)
    params += (i ? ", " : "") + std::string("{\"index\": ") + std::to_string(i) + ", \"fields\": []}";
  const std::string launch_text = "{\"entry\": \"" + entry->name + "\", \"grid\": 1, \"block\": 128, \"buffers\": [{\"name\": \"buf\", "
                                  "\"bytes\": 65536}], \"params\": [" + params + "]}";
  try {
    ptx::Launch launch = ptx::parse_launch("fuzz.launch.json", launch_text);
    ptx::resolve_launch(launch, *module);
    const sim::Kernel kernel = ptx::make_kernel(module, launch);
    const sim::RunResult plain = sim::run(kernel, fuzz_run_options());
    // A few states of the exhaustive search: the run copied with its memory and warps, and hashed.
    if (plain.verdict != sim::Verdict::Stopped) {
      verify::ExhaustiveBounds b;
      b.max_states = 16;
      b.max_seconds = 1;
      verify::exhaustive_search(kernel, fuzz_run_options(), b);
    }
  } catch (const ptx::LaunchError&) {
  } catch (const ptx::PtxError&) {
  } catch (const sim::ScenarioError&) {
  }
}

}  // namespace pipesim::fuzz
