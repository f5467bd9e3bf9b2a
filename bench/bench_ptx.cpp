// PTX kernels end to end (parse, launch, decode, interpret every warp on the engine): instructions
// and engine events per second of CPU time.
//
//   pipeline:  tests/data/ptx/pipeline.ptx, 4 CTAs (always available)
//   cutlass48: CUTLASS example 48 (TF32, cooperative, cluster 4x2) at 4096^3 from the test corpus,
//              when PIPESIM_BENCH_CORPUS names a built corpus (BUILD/cutlass_corpus; tools/cutlass_corpus)
//   cutlass49: example 49 ping-pong (F16) at 4096^3, likewise
//   exhaustive: `--search exhaustive` on pipeline.ptx at one CTA and 4 tiles (every interleaving,
//              untimed; the run copied and hashed with its memory and registers): states per second
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "verify/check.hpp"
#include "verify/search.hpp"

namespace {

namespace ps = pipesim;

void run_check(benchmark::State& state, const std::string& ptx, const std::string& launch) {
  if (!std::filesystem::exists(ptx) || !std::filesystem::exists(launch)) {
    state.SkipWithError(("not built: " + ptx).c_str());
    return;
  }
  ps::verify::CheckOptions o;
  o.launch = launch;
  uint64_t instructions = 0, events = 0;
  for (auto _ : state) {
    const ps::verify::CheckResult r = ps::verify::check_file(ptx, o);
    if (r.bad_input || r.result.verdict != ps::sim::Verdict::Ok) {
      state.SkipWithError(r.bad_input ? r.diagnostic.c_str() : "the kernel did not run to the end");
      return;
    }
    instructions = r.result.instructions;
    events = r.result.events;
  }
  state.counters["instructions"] = static_cast<double>(instructions);
  state.counters["events"] = static_cast<double>(events);
  state.counters["instructions/s"] = benchmark::Counter(static_cast<double>(instructions), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsIterationInvariantRate);
}

std::string corpus() {
  const char* c = std::getenv("PIPESIM_BENCH_CORPUS");
  return c ? c : "";
}

void BM_PtxPipeline(benchmark::State& state) {
  const std::string dir = std::string(PIPESIM_SOURCE_DIR) + "/tests/data/ptx/";
  state.SetLabel("pipeline.ptx, 4 CTAs");
  run_check(state, dir + "pipeline.ptx", dir + "pipeline.launch.json");
}
BENCHMARK(BM_PtxPipeline)->Unit(benchmark::kMillisecond);

void BM_PtxExhaustivePipeline(benchmark::State& state) {
  const std::string dir = std::string(PIPESIM_SOURCE_DIR) + "/tests/data/ptx/";
  state.SetLabel("pipeline.ptx, 1 CTA, 4 tiles, every interleaving");
  ps::verify::CheckOptions o;
  o.launch = dir + "pipeline.launch.json";
  o.launch_sets = {"grid=1", "param.1=4"};
  const ps::verify::CheckResult r = ps::verify::check_file(dir + "pipeline.ptx", o);
  if (r.bad_input) {
    state.SkipWithError(r.diagnostic.c_str());
    return;
  }
  uint64_t states = 0, transitions = 0;
  for (auto _ : state) {
    const ps::verify::ExhaustiveResult s = ps::verify::exhaustive_search(r.kernel, {}, {});
    if (!s.complete || !s.outcome.empty()) {
      state.SkipWithError("the search did not prove the kernel");
      return;
    }
    states = s.states;
    transitions = s.transitions;
  }
  state.counters["states"] = static_cast<double>(states);
  state.counters["states/s"] = benchmark::Counter(static_cast<double>(states), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["transitions/s"] = benchmark::Counter(static_cast<double>(transitions), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_PtxExhaustivePipeline)->Unit(benchmark::kMillisecond);

void BM_PtxCutlass48(benchmark::State& state) {
  const std::string d = corpus() + "/48_hopper_warp_specialized_gemm/48_hopper_warp_specialized_gemm";
  state.SetLabel("CUTLASS 48 TF32 4096^3, 112 CTAs");
  run_check(state, d + ".ptx", d + "_4096x4096x4096.launch.json");
}
BENCHMARK(BM_PtxCutlass48)->Unit(benchmark::kMillisecond)->Iterations(1);

void BM_PtxCutlass49Pingpong(benchmark::State& state) {
  const std::string d = corpus() + "/49_hopper_gemm_with_collective_builder/49_hopper_gemm_with_collective_builder";
  state.SetLabel("CUTLASS 49 ping-pong F16 4096^3");
  run_check(state, d + ".ptx", d + "_pingpong_4096x4096x4096.launch.json");
}
BENCHMARK(BM_PtxCutlass49Pingpong)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
