#include "verify/crosscheck_ptx.hpp"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kernels/ptx_launch/relocate.hpp"
#include "kernels/ptx_launch/stamps.hpp"
#include "sim/rules.hpp"
#include "verify/check.hpp"
#include "verify/crosscheck_stamps.hpp"
#include "verify/ptx/launch.hpp"
#include "verify/ptx/parser.hpp"
#include "verify/report.hpp"

namespace pipesim::verify {
namespace {

using ptx_launch::GpuOutcome;

std::string fatal_kind(const sim::RunResult& r) {
  for (const sim::Finding& f : r.findings)
    if (f.fatal) return f.kind;
  return {};
}

std::string verdict_text(const sim::RunResult& r) {
  std::string t(verdict_name(r.verdict));
  if (r.verdict == sim::Verdict::Error) t += " " + fatal_kind(r);
  return t;
}

// nvcc's `<mangled entry>_param_N` as `param_N`: the entry is named once, above.
std::string param_label(const std::string& name) {
  const size_t at = name.rfind("_param_");
  return at == std::string::npos || at == 0 ? name : name.substr(at + 1);
}

std::string dims_text(const std::array<uint32_t, 3>& d) { return fmt::format("{}x{}x{}", d[0], d[1], d[2]); }

// Both sides of one crosscheck, for the human block and --json.
struct Outcome {
  std::string file, entry;
  ptx::Launch launch;
  sim::RunResult model;                  // pipesim check's run
  std::optional<sim::RunResult> hardware;  // the same past model-only rules (hardware_only), when it stopped at one
  GpuExpectation expect;
  ptx_launch::RelocatedLaunch moved;     // the relocation as the model's own addresses show it
  ptx_launch::GpuRun gpu;
  double watchdog_ms = 0;
  bool back_to_back = false;             // how the GPU's launches were timed (--back-to-back)
  bool cold_l2 = false;                  // and whether each found an empty L2 (--cold-l2)
  bool agree = false;
  std::optional<double> time_error_pct;  // (model's event time - GPU median) / GPU median, both ok
  const sim::RunResult& compared() const { return hardware ? *hardware : model; }
  double compared_ns() const { return compared().end_ns; }
  // What CUDA events around the launch would read on the model: the GPU's times are event times, so
  // the error compares these, not the body alone (the launch floor is the architecture's, model/arch.cpp).
  double compared_event_ns() const { return compared().end_ns + compared().launch_floor_ns; }
};

std::string gpu_verdict_text(const ptx_launch::GpuRun& g) {
  std::string t(ptx_launch::gpu_outcome_name(g.outcome));
  if (g.outcome == GpuOutcome::Hang || g.outcome == GpuOutcome::Fault) t += " (" + g.message + ")";
  return t;
}

std::string timing_text(bool back_to_back, bool cold_l2) {
  return std::string(back_to_back ? "back to back, the buffers filled once" : "each from freshly filled buffers") +
         (cold_l2 ? ", each after the L2 was flushed" : "");
}

std::string render(const Outcome& o) {
  std::string s = fmt::format("crosscheck {}  entry {}\n  launch: grid {} block {} cluster {} dynamic smem {} B, {}\n", o.file,
                              o.entry.size() > 60 ? o.entry.substr(0, 57) + "..." : o.entry, dims_text(o.launch.grid),
                              dims_text(o.launch.block), dims_text(o.launch.cluster), o.launch.dynamic_smem, o.launch.arch);
  s += fmt::format("  model: {:<28} {} {:.3f} us\n", verdict_text(o.model), o.model.verdict == sim::Verdict::Ok ? "predicted" : "at",
                   o.model.end_ns * 1e-3);
  if (o.hardware)
    s += fmt::format("  model, on past `{}` as the hardware does (a rule it does not check): {:<10} at {:.3f} us\n",
                     fatal_kind(o.model), verdict_text(*o.hardware), o.hardware->end_ns * 1e-3);
  s += fmt::format("  GPU:   {}\n", gpu_verdict_text(o.gpu));
  if (!o.gpu.device.empty()) s += fmt::format("         on {}\n", o.gpu.device);
  if (!o.gpu.times_ms.empty())
    s += fmt::format("         measured: median {:.3f} us, min {:.3f} us over {} timed launches (after {} warm-up; {})\n",
                     o.gpu.median_ms() * 1e3, o.gpu.min_ms() * 1e3, o.gpu.times_ms.size(),
                     o.gpu.launches_total - static_cast<int>(o.gpu.times_ms.size()), timing_text(o.back_to_back, o.cold_l2));
  s += fmt::format("  verdicts {}: the model's `{}` means `{}` on the GPU{}{}\n", o.agree ? "agree" : "DISAGREE",
                   verdict_text(o.hardware ? *o.hardware : o.model), o.expect.text, o.expect.reason.empty() ? "" : " (",
                   o.expect.reason.empty() ? "" : o.expect.reason + ")");
  if (o.time_error_pct)
    s += fmt::format("  time: model {:.3f} us ({:.3f} us body + {:.1f} us launch floor) vs GPU median {:.3f} us: {:+.1f} %\n",
                     o.compared_event_ns() * 1e-3, o.compared_ns() * 1e-3, o.compared().launch_floor_ns * 1e-3,
                     o.gpu.median_ms() * 1e3, *o.time_error_pct);
  s += fmt::format("  watchdog: {:.0f} ms per launch\n", o.watchdog_ms);
  if (!o.moved.relocations.empty()) {
    s += fmt::format("  relocation: {} pointer(s) in the parameters rewritten to the real buffers (assumption: {})\n",
                     o.moved.relocations.size(), ptx_launch::kRelocationAssumption);
    for (const ptx_launch::Relocation& r : o.moved.relocations)
      s += fmt::format("    byte {} ({} +{}): {:#x} = buffer {} +{}\n", r.offset, param_label(r.param), r.param_offset, r.model_address,
                       r.buffer, r.buffer_offset);
  }
  for (const ptx_launch::TensorMapSlot& t : o.moved.tensormap_slots)
    s += fmt::format("  tensor map {} encoded at byte {} ({}) with cuTensorMapEncodeTiled\n", o.launch.tensormaps[t.index].name,
                     t.offset, param_label(t.param));
  for (const std::string& n : o.moved.notes) s += "  note: " + n + "\n";
  return s;
}

nlohmann::json to_json(const Outcome& o) {
  nlohmann::json j;
  j["schema"] = "pipesim.crosscheck-ptx/1";
  j["file"] = o.file;
  j["entry"] = o.entry;
  j["launch"] = {{"grid", o.launch.grid}, {"block", o.launch.block}, {"cluster", o.launch.cluster},
                 {"dynamic_smem", o.launch.dynamic_smem}, {"arch", o.launch.arch}};
  j["model"] = {{"verdict", verdict_text(o.model)}, {"predicted_us", o.model.end_ns * 1e-3},
                {"predicted_event_us", (o.model.end_ns + o.model.launch_floor_ns) * 1e-3}};
  if (o.hardware) j["model"]["hardware_only"] = {{"verdict", verdict_text(*o.hardware)}, {"predicted_us", o.hardware->end_ns * 1e-3}};
  nlohmann::json g = {{"verdict", std::string(ptx_launch::gpu_outcome_name(o.gpu.outcome))},
                      {"message", o.gpu.message},
                      {"device", o.gpu.device},
                      {"launches_done", o.gpu.launches_done},
                      {"launches", o.gpu.launches_total},
                      {"watchdog_ms", o.watchdog_ms}};
  if (!o.gpu.times_ms.empty()) {
    std::vector<double> us;
    for (double ms : o.gpu.times_ms) us.push_back(ms * 1e3);
    g["median_us"] = o.gpu.median_ms() * 1e3;
    g["min_us"] = o.gpu.min_ms() * 1e3;
    g["times_us"] = us;
    g["timing"] = o.back_to_back ? "back_to_back" : "each_refilled";
    g["l2_flushed"] = o.cold_l2;
  }
  j["gpu"] = g;
  j["expected_gpu"] = o.expect.text;
  j["agree"] = o.agree;
  j["time_error_pct"] = o.time_error_pct ? nlohmann::json(*o.time_error_pct) : nlohmann::json();
  nlohmann::json rel = nlohmann::json::array();
  for (const ptx_launch::Relocation& r : o.moved.relocations)
    rel.push_back({{"offset", r.offset}, {"param", r.param}, {"param_offset", r.param_offset}, {"buffer", r.buffer},
                   {"buffer_offset", r.buffer_offset}, {"model_address", r.model_address}});
  nlohmann::json maps = nlohmann::json::array();
  for (const ptx_launch::TensorMapSlot& t : o.moved.tensormap_slots)
    maps.push_back({{"offset", t.offset}, {"tensormap", o.launch.tensormaps[t.index].name}, {"param", t.param}});
  j["relocation"] = {{"assumption", ptx_launch::kRelocationAssumption}, {"pointers", rel}, {"tensormaps", maps},
                     {"notes", o.moved.notes}};
  return j;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

double default_watchdog_ms(double predicted_ns) { return std::max(2000.0, 100.0 * predicted_ns * 1e-6); }

GpuExpectation expected_gpu_outcome(const sim::RunResult& m) {
  GpuExpectation e;
  switch (m.verdict) {
    case sim::Verdict::Ok: e.ok = true, e.text = "ok"; return e;
    case sim::Verdict::Hang: e.hang = true, e.text = "hang"; return e;
    case sim::Verdict::Stopped:  // the model's run outlasted its budget: it predicts nothing
      e.ok = e.hang = e.fault = true, e.text = "anything (the model's run was stopped by its budget)";
      return e;
    case sim::Verdict::Error: break;
  }
  const std::string k = fatal_kind(m);
  e.fault = true, e.text = "fault";
  // What the H100 did for these (probes U1/U2; docs/runs/cutlass-h100-2026-11-25.txt): it stops the
  // kernel with a launch failure.
  if (k == "pending_underflow") e.reason = "the H100 traps on a pending-count underflow: unspecified launch failure";
  else if (k == "named_count_mismatch") e.reason = "the H100 stops a named barrier used with two thread counts: illegal instruction";
  else if (k == "kernel_fault") e.reason = "an access outside every buffer, a misaligned access or a trap";
  else if (k == "assertion") e.reason = "a failed device assertion traps";
  else {
    // A rule whose hardware behaviour PTX leaves undefined: the GPU may stop or stick, not finish.
    e.hang = true, e.text = "hang or fault";
    e.reason = "`" + k + "` is undefined behaviour on the hardware";
  }
  return e;
}

int run_crosscheck_ptx(const PtxCrosscheckOptions& opt) {
  if (opt.inputs.size() != 1) {
    std::cerr << "pipesim: error: crosscheck takes one PTX kernel at a time (and no scenarios beside it)\n";
    return 2;
  }
  if (opt.scenario_options) {
    std::cerr << "pipesim: error: --trace, --markdown, --save-device, --from-device, --l2-sources, --free-occupancy and "
                 "--no-timestamps are for scenarios, not PTX kernels\n";
    return 2;
  }
  if (!opt.stamp_lines.empty() && opt.stamps.empty()) {
    std::cerr << "pipesim: error: --stamp-lines adds sites to --stamps FILE, which is not given\n";
    return 2;
  }
  const std::string& ptx_path = opt.inputs.front();
  if (opt.runs < 1 || opt.runs > 10000) {
    std::cerr << "pipesim: error: --runs takes 1..10000 timed launches\n";
    return 2;
  }
  if (opt.timeout_ms && !(*opt.timeout_ms > 0)) {
    std::cerr << "pipesim: error: --timeout-ms must be above 0\n";
    return 2;
  }
  Outcome o;
  o.file = ptx_path;
  CheckOptions co;
  co.launch = opt.launch;
  co.launch_sets = opt.launch_sets;
  const CheckResult checked = check_ptx(ptx_path, co);
  if (checked.bad_input) {
    std::cerr << checked.diagnostic;
    return 2;
  }
  o.model = checked.result;
  if (o.model.verdict == sim::Verdict::Error && sim::is_model_only(fatal_kind(o.model))) {
    co.run.hardware_only = true;
    const CheckResult hw = check_ptx(ptx_path, co);
    if (hw.bad_input) {
      std::cerr << hw.diagnostic;
      return 2;
    }
    o.hardware = hw.result;
  }
  o.expect = expected_gpu_outcome(o.hardware ? *o.hardware : o.model);

  // The launch as the model ran it (check_ptx checked all of it: nothing below fails on bad input).
  ptx::Module module;
  try {
    module = ptx::parse_file(ptx_path);
    if (!opt.launch.empty()) o.launch = ptx::read_launch(opt.launch);
    for (const std::string& s : opt.launch_sets) ptx::apply_short_form(o.launch, s);
    ptx::resolve_launch(o.launch, module);
  } catch (const std::exception& e) {
    std::cerr << "pipesim: error: " << ptx_path << ": " << e.what() << "\n";
    return 2;
  }
  o.entry = module.functions.at(static_cast<size_t>(o.launch.function_index)).name;
  // The relocation checked before any GPU work, on the model's own addresses (what the GPU run
  // rewrites is the same list, onto its allocations).
  std::vector<uint64_t> model_addresses;
  for (const ptx::BufferDesc& b : o.launch.buffers) model_addresses.push_back(b.address);
  try {
    o.moved = ptx_launch::relocate_launch(o.launch, model_addresses);
  } catch (const ptx::LaunchError& e) {
    std::cerr << fmt::format("pipesim crosscheck: {}: {}\n", opt.launch.empty() ? ptx_path : opt.launch, e.what());
    return 2;
  }
  o.watchdog_ms = opt.timeout_ms ? *opt.timeout_ms : default_watchdog_ms(o.compared_ns());
  o.back_to_back = opt.back_to_back;
  o.cold_l2 = opt.cold_l2;
  // --stamps: the same entry with stamps, launched once more after the timed launches. A warp's slice
  // holds up to 4096 stamps, fewer where the grid is large (about 256 MiB in all), at least 64.
  const uint32_t warps_per_cta = static_cast<uint32_t>((o.launch.threads() + 31) / 32);
  const std::string ptx_text = read_text(ptx_path);
  std::optional<ptx_launch::StampedPtx> stamped;
  if (!opt.stamps.empty()) {
    const uint64_t ctas = uint64_t{o.launch.grid[0]} * o.launch.grid[1] * o.launch.grid[2];
    const uint64_t per_warp = std::clamp<uint64_t>((uint64_t{256} << 20) / std::max<uint64_t>(1, warps_per_cta * ctas * 8), 64, 4096);
    try {
      stamped = ptx_launch::add_stamps(ptx_text, o.entry, warps_per_cta, ctas, static_cast<uint32_t>(per_warp), opt.stamp_lines);
    } catch (const std::exception& e) {
      std::cerr << fmt::format("pipesim crosscheck: {}: {}\n", ptx_path, e.what());
      return 2;
    }
  }

#ifdef PIPESIM_HAVE_CUDA
  ptx_launch::GpuRunOptions go;
  go.runs = opt.runs;
  go.back_to_back = o.back_to_back;
  go.cold_l2 = o.cold_l2;
  go.timeout_ms = o.watchdog_ms;
  go.stamps = stamped ? &*stamped : nullptr;
  o.gpu = ptx_launch::run_on_gpu(ptx_text, o.entry, o.launch, go);
#else
  o.gpu.outcome = GpuOutcome::Unavailable;
  o.gpu.message = "this pipesim was built without CUDA (-DPIPESIM_CUDA=ON)";
#endif
  if (o.gpu.outcome == GpuOutcome::Unavailable) {
    std::cerr << "pipesim crosscheck: crosscheck needs a GPU: " << o.gpu.message << "\n";
    return 2;
  }
  if (o.gpu.outcome == GpuOutcome::NotRun) {
    std::cerr << fmt::format("pipesim crosscheck: {}: the GPU could not run entry {}: {}\n", ptx_path, o.entry, o.gpu.message);
    return 2;
  }
  o.agree = o.expect.accepts(o.gpu.outcome);
  if (o.gpu.outcome == GpuOutcome::Ok && !o.gpu.times_ms.empty() && o.gpu.median_ms() > 0 && o.expect.ok)
    o.time_error_pct = 100.0 * (o.compared_event_ns() * 1e-6 - o.gpu.median_ms()) / o.gpu.median_ms();
  StampsReport stamps;
  if (stamped && o.gpu.outcome == GpuOutcome::Ok)
    stamps = report_stamps(module, module.functions.at(static_cast<size_t>(o.launch.function_index)), *stamped, o.gpu.stamps, warps_per_cta,
                           o.gpu.stamped_ms, o.gpu.median_ms(), o.compared(), opt.stamps);
  if (opt.json) {
    nlohmann::json j = to_json(o);
    if (stamped) j["gpu"]["stamps"] = {{"file", opt.stamps}, {"stamped_launch_ms", o.gpu.stamped_ms}, {"count", o.gpu.stamps.size()}};
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << render(o) << stamps.text;
  }
  if (!stamps.error.empty()) {
    std::cerr << "pipesim crosscheck: --stamps: " << stamps.error << "\n";
    return 2;
  }
  return o.agree ? 0 : 1;
}

}  // namespace pipesim::verify
