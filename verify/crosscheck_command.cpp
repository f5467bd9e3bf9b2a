#include "verify/crosscheck_command.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "sim/device_io.hpp"
#include "sim/rules.hpp"
#include "verify/check.hpp"
#include "verify/crosscheck_ptx.hpp"
#include "verify/explore.hpp"
#include "verify/inputs.hpp"
#include "verify/report.hpp"
#include "verify/trace.hpp"

#ifdef PIPESIM_HAVE_CUDA
#include "kernels/interp/runner.hpp"
#endif

namespace pipesim::verify {

namespace {

struct Options {
  std::vector<std::string> inputs;
  std::vector<std::string> defines;
  double timeout_ms = 200;
  int repeats = 3;
  bool l2_sources = false;
  bool free_occupancy = false;
  bool no_timestamps = false;
  double warmup_ms = 20;
  std::string trace;
  std::string markdown;
  bool verbose = false;
  int explore = 1024;  // on disagreement: model interleavings to try (0: none)
  std::string save_device;  // keep each device run here
  std::string from_device;  // compare with device runs kept there instead of running the GPU
  // PTX kernels (verify/crosscheck_ptx.cpp): the launch file, timed launches, JSON output.
  std::string launch;
  int runs = 10;
  bool back_to_back = false;
  bool cold_l2 = false;
  bool json = false;
  bool timeout_given = false;
  std::string stamps;  // --stamps FILE
  std::vector<uint32_t> stamp_lines;  // --stamp-lines L,...
};


// Where --save-device / --from-device keep one scenario's device run: the path with '/' -> '_', the
// -D values and --l2-sources in the name.
std::string saved_run_path(const std::string& dir, const std::string& file, const std::vector<std::string>& defines, bool l2) {
  std::string name = file;
  for (const std::string& d : defines) name += "_D" + d;
  if (l2) name += "_l2";
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '-' && ch != '=') ch = '_';
  return (std::filesystem::path(dir) / (name + ".pdev")).string();
}

int run_crosscheck(const Options& o) {
  if (std::any_of(o.inputs.begin(), o.inputs.end(), is_ptx_kernel))
    return run_crosscheck_ptx({o.inputs, o.launch, o.defines, o.runs, o.timeout_given ? std::optional(o.timeout_ms) : std::nullopt,
                               o.json, o.back_to_back, o.cold_l2, !o.trace.empty() || !o.markdown.empty() || !o.save_device.empty() || !o.from_device.empty() ||
                                           o.l2_sources || o.free_occupancy || o.no_timestamps,
                               o.stamps, o.stamp_lines});
  if (!o.launch.empty() || o.json || o.back_to_back || o.cold_l2 || !o.stamps.empty() || !o.stamp_lines.empty()) {
    std::cerr << "pipesim: error: --launch, --json, --back-to-back, --cold-l2, --stamps and --stamp-lines are for PTX kernels (FILE.ptx)\n";
    return 2;
  }
#ifndef PIPESIM_HAVE_CUDA
  if (o.from_device.empty()) {
    std::cerr << "pipesim crosscheck: this pipesim was built without CUDA (no nvcc at configure time), so it has no device "
                 "interpreter; build with nvcc on the PATH and run on a machine with an sm_90 GPU, or compare with saved "
                 "device runs (--from-device DIR)\n";
    return 2;
  }
#endif
  std::string error;
  const std::vector<std::string> files = scenario_files(o.inputs, error);
  if (!error.empty() || files.empty()) {
    std::cerr << (error.empty() ? std::string("pipesim crosscheck: no .scn scenario files given\n") : error);
    return 2;
  }
  if (!o.trace.empty() && files.size() != 1) {
    std::cerr << "pipesim: error: --trace writes one scenario's timelines; name exactly one file\n";
    return 2;
  }
  CheckOptions co;
  // The model times what the device runs (the interpreter runs only on sm_90 GPUs).
  co.run = sim::interpreter_run_options(model::interpreter_cost("sm_90a"), !o.no_timestamps);
  co.run.record_trace = true;
  if (std::string bad; !parse_defines(o.defines, co.defines, bad)) {
    std::cerr << fmt::format("pipesim: error: -D {}: expected NAME=INTEGER\n", bad);
    return 2;
  }
  if (!o.from_device.empty() && !std::filesystem::is_directory(o.from_device)) {
    std::cerr << fmt::format("pipesim crosscheck: --from-device {}: no such directory of saved device runs\n", o.from_device);
    return 2;
  }
  if (o.explore < 0 || o.explore > 100000) {
    std::cerr << "pipesim: error: --explore takes 0..100000 runs\n";
    return 2;
  }
  if (!o.save_device.empty() && !o.from_device.empty()) {
    std::cerr << "pipesim: error: --save-device and --from-device exclude each other\n";
    return 2;
  }
  if (!o.save_device.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.save_device, ec);
    if (ec) {
      std::cerr << fmt::format("pipesim crosscheck: cannot create {}: {}\n", o.save_device, ec.message());
      return 2;
    }
  }
#ifdef PIPESIM_HAVE_CUDA
  // The pool forks its worker before this process touches CUDA (it never does).
  std::optional<interp::DevicePool> pool;
  if (o.from_device.empty()) {
    pool.emplace();
    std::string why;
    if (!pool->available(why)) {
      std::cerr << "pipesim crosscheck: no GPU to run on: " << why << "\n";
      return 2;
    }
  }
#endif
  int exit_code = 0;
  std::map<Agreement, int> counts;
  std::string md;
  std::string device_name;
  for (const std::string& f : files) {
    CheckResult cr = check_file(f, co);
    if (cr.bad_input) {
      std::cerr << cr.diagnostic;
      exit_code = 2;
      continue;
    }
    std::string defines;
    for (const std::string& d : o.defines) defines += " -D " + d;
    if (o.l2_sources) defines += " --l2-sources";
    std::cout << fmt::format("== {}{}\n", f, defines);
    sim::OpStreams streams;
    sim::DeviceResult dev;
    try {
      streams = sim::materialise(cr.kernel);
    } catch (const sim::StreamUnavailable& e) {
      dev.outcome = sim::DeviceOutcome::Unavailable;
      dev.message = e.what();
    } catch (const sim::ScenarioError& e) {
      std::cerr << render_diagnostic(f, cr.kernel.lines, e.loc, "error", e.what());
      exit_code = 2;
      continue;
    }
    std::string skip_why;
    if (!dev.message.empty()) {
    } else if (!device_may_run(cr.result, skip_why)) {
      dev.outcome = sim::DeviceOutcome::Skipped;
      dev.message = skip_why;
    } else {
      sim::DeviceOptions dopt;
      dopt.timeout_ms = o.timeout_ms;
      dopt.repeats = o.repeats;
      dopt.stream_sources = !o.l2_sources;
      dopt.model_occupancy = !o.free_occupancy;
      dopt.timestamps = !o.no_timestamps;
      dopt.warmup_ms = o.warmup_ms;
      dopt.predicted_ns = cr.result.end_ns;
      const std::string saved = saved_run_path(o.from_device.empty() ? o.save_device : o.from_device, f, o.defines, o.l2_sources);
      if (!o.from_device.empty()) {
        std::string why;
        if (!sim::load_device_run(saved, streams, dev, why)) {
          // A missing or stale saved run is an error, not a pass: re-save it on a GPU.
          std::cerr << "pipesim crosscheck: " << why << "\n";
          exit_code = 2;
          continue;
        }
      } else {
#ifdef PIPESIM_HAVE_CUDA
        dev = pool->run(streams, dopt);
#endif
        std::string why;
        if (!o.save_device.empty() && !sim::save_device_run(saved, streams, dev, why)) {
          std::cerr << "pipesim crosscheck: " << why << "\n";
          exit_code = 2;
        }
      }
      if (!dev.device.empty()) device_name = dev.device;
    }
    Comparison c = compare(cr.kernel, cr.result, streams, dev);
    for (const sim::Finding& finding : cr.result.findings)
      if (sim::is_model_only(finding.kind))
        c.notes.push_back(fmt::format("`pipesim check` stops at `{}` (line {}), a rule the hardware does not check; this run went on as the hardware would",
                                      finding.kind, finding.site < cr.kernel.sites.size() ? cr.kernel.sites[finding.site].loc.line : 0));
    if (cr.result.verdict == sim::Verdict::Ok) {
      sim::RunOptions native = co.run;
      native.interp = nullptr;
      native.record_trace = false;
      c.model_native_ns = sim::run(cr.kernel, native).end_ns;
    }
    if (c.disagrees() && o.explore > 0) {
      try {
        c = reconcile(cr.kernel, std::move(c), explore(cr.kernel, co.run, o.explore, 0.5), streams, dev);
      } catch (const std::exception&) {
        // an explored run failing on bad input changes nothing: the disagreement stands
      }
    }
    if (c.disagrees()) c = replay_device_order(cr.kernel, std::move(c), co.run, streams, dev);
    if (c.disagrees() && o.explore > 0) c = search_parts(cr.kernel, std::move(c), co.run, streams, dev);
    ++counts[c.agreement];
    if (c.disagrees() && exit_code == 0) exit_code = 1;
    std::cout << render_comparison(cr.kernel, streams, dev, c);
    if (dev.outcome == sim::DeviceOutcome::Skipped && !dev.message.empty()) std::cout << "  device    " << dev.message << "\n";
    md += fmt::format("| `{}` | {} | {} | {} | {:.3f} | {:.3f} | {} |\n", f, c.model_verdict, c.device_verdict, agreement_name(c.agreement),
                      c.model_kernel_ns / 1e3, c.device_span_ns / 1e3,
                      c.model_verdict == "ok" && c.device_verdict == "ok" && c.device_span_ns > 0
                          ? fmt::format("{:+.1f} %", error_pct(c.model_kernel_ns, c.device_span_ns))
                          : "");
    if (!o.trace.empty()) {
      TraceWriter tw(TraceWriter::Stacking::ByTimeline);
      tw.add(cr.kernel, cr.result, "model");
      tw.add(cr.kernel, device_timeline(cr.kernel, streams, dev), device_name.empty() ? "device" : device_name + " measured");
      std::ofstream out(o.trace, std::ios::binary);
      out << tw.str();
      if (!out) {
        std::cerr << fmt::format("pipesim: error: cannot write trace {}\n", o.trace);
        exit_code = 2;
      }
    }
  }
  const int total = static_cast<int>(files.size());
  const std::string summary =
      fmt::format("{} scenario(s) on {}: {} agree, {} agree (timing-dependent), {} disagree, {} model-only rule, {} skipped, {} unavailable",
                  total, device_name.empty() ? "the device" : device_name, counts[Agreement::Agree],
                  counts[Agreement::AgreeTimingDependent], counts[Agreement::Disagree], counts[Agreement::NotComparable],
                  counts[Agreement::Skipped], counts[Agreement::Unavailable]);
  std::cout << summary << "\n";
  if (!o.markdown.empty()) {
    std::ofstream out(o.markdown, std::ios::binary | std::ios::app);
    out << "| scenario | model | device | agreement | model us | device us | model vs device |\n|---|---|---|---|---|---|---|\n"
        << md << "\n" << summary << "\n\n";
  }
  return exit_code;
}

}  // namespace

CLI::App* add_crosscheck_command(CLI::App& app, std::function<int()>& action) {
  auto o = std::make_shared<Options>();
  CLI::App* c = app.add_subcommand("crosscheck", "Run scenarios on the model and on the GPU (device interpreter) and compare");
  c->add_option("inputs", o->inputs, "scenario files or directories (every *.scn below), or a PTX kernel (FILE.ptx, with --launch)")
      ->required();
  c->add_option("--launch", o->launch, "PTX kernels: the launch file (docs/ptx.md)")->type_name("FILE.json");
  c->add_option("--runs", o->runs, "PTX kernels: timed launches on the GPU, after one warm-up")->capture_default_str();
  c->add_flag("--json", o->json, "PTX kernels: the result as a JSON object");
  c->add_flag("--back-to-back", o->back_to_back,
              "PTX kernels: time as a benchmark does: the buffers filled once, the timed launches queued back to back "
              "(only for kernels that keep no state in their buffers)");
  c->add_flag("--cold-l2", o->cold_l2,
              "PTX kernels: flush the L2 before each timed launch (outside its events), so that each starts as the model "
              "does, from an empty L2");
  c->add_option("--stamps", o->stamps,
                "PTX kernels: launch once more with each warp's waits and barriers stamped (%globaltimer) and report the GPU's "
                "timeline beside the model's; every stamp to FILE (CSV)")
      ->type_name("FILE.csv");
  c->add_option("--stamp-lines", o->stamp_lines,
                "PTX kernels, with --stamps: stamp these instruction lines of the .ptx too (after them), to bisect the time "
                "between two waits")
      ->delimiter(',')
      ->type_name("LINE,...");
  add_repeatable_option(*c, "-D", o->defines, "override a parameter: -D K=8192 (repeatable)")->type_name("NAME=INT");
  c->add_option("--timeout-ms", o->timeout_ms,
                "bound of every mbarrier wait on the device; PTX kernels: the watchdog per launch (default 2 s, or 100x "
                "the predicted time)")
      ->capture_default_str();
  c->add_option("--repeats", o->repeats, "launches per scenario; time from the fastest")->capture_default_str();
  c->add_flag("--l2-sources", o->l2_sources, "TMA loads re-read one small source (L2 hits) instead of streaming from DRAM");
  c->add_flag("--free-occupancy", o->free_occupancy, "let the GPU put as many CTAs on an SM as fit (default: the model's ctas_per_sm)");
  c->add_flag("--no-timestamps", o->no_timestamps, "no per-op timestamps on the device (calibration: nothing but the ops)");
  c->add_option("--warmup-ms", o->warmup_ms,
                "before each scenario's launches, keep every SM busy this long so that the SM clock is at its boost value (0: off)")
      ->capture_default_str();
  c->add_option("--explore", o->explore, "on a disagreement, try N model interleavings (jitter, issue cost) for the device's outcome")
      ->capture_default_str();
  c->add_option("--save-device", o->save_device, "keep every device run in DIR (re-judge them later with --from-device)")
      ->type_name("DIR");
  c->add_option("--from-device", o->from_device,
                "compare with the device runs saved in DIR instead of running a GPU (needs no GPU; give the same -D, "
                "--l2-sources and --no-timestamps as the saving run)")
      ->type_name("DIR");
  c->add_option("--trace", o->trace, "write the model's and the device's timelines into one Perfetto trace")->type_name("FILE");
  c->add_option("--markdown", o->markdown, "append a result table to FILE")->type_name("FILE");
  c->callback([o, c, &action] {
    o->timeout_given = c->count("--timeout-ms") > 0;
    action = [o] { return run_crosscheck(*o); };
  });
  return c;
}

}  // namespace pipesim::verify
