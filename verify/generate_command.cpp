#include "verify/generate_command.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "verify/generate.hpp"
#include "verify/inputs.hpp"

namespace pipesim::verify {
namespace {

struct Options {
  uint64_t seed = 1;
  uint64_t count = 1;
  std::string out;
  double mistake_rate = 0.0;
  int max_trip = 5;
};

// Scenario i of batch S is generated from seed S * 2^20 + i and written to DIR/gen_<S>_<i>.scn, so
// batches of different S share no scenario. (Until 2026-11-21 it was S + i: consecutive batches
// were the same protocols shifted by one; the saved H100 batches carry their scenario texts.)
constexpr uint64_t kBatchBits = 20;
uint64_t scenario_seed(uint64_t batch, uint64_t i) { return (batch << kBatchBits) + i; }

int run_generate(const Options& o) {
  namespace fs = std::filesystem;
  if (o.mistake_rate < 0 || o.mistake_rate > 1) {
    std::cerr << "pipesim: error: --mistake-rate must be in [0, 1]\n";
    return 2;
  }
  if (o.max_trip < 1 || o.max_trip > 8) {
    std::cerr << "pipesim: error: --max-trip must be in 1..8\n";
    return 2;
  }
  if (o.count > (uint64_t{1} << kBatchBits)) {
    std::cerr << fmt::format("pipesim: error: --count must be at most {} (one batch's seeds)\n", uint64_t{1} << kBatchBits);
    return 2;
  }
  if (o.seed >= (uint64_t{1} << (64 - kBatchBits))) {
    std::cerr << fmt::format("pipesim: error: --seed must be below 2^{}\n", 64 - kBatchBits);
    return 2;
  }
  std::error_code ec;
  fs::create_directories(o.out, ec);
  if (ec || !fs::is_directory(o.out)) {
    std::cerr << fmt::format("pipesim: error: cannot create the directory {}\n", o.out);
    return 2;
  }
  GenOptions go;
  go.mistake_rate = o.mistake_rate;
  go.max_trip = o.max_trip;
  uint64_t mistakes = 0;
  for (uint64_t i = 0; i < o.count; ++i) {
    const GeneratedScenario g = generate(go, scenario_seed(o.seed, i));
    const fs::path p = fs::path(o.out) / fmt::format("gen_{}_{}.scn", o.seed, i);
    std::ofstream f(p, std::ios::binary);
    f << g.text;
    if (!f) {
      std::cerr << fmt::format("pipesim: error: cannot write {}\n", p.string());
      return 2;
    }
    if (g.mistake != "none") ++mistakes;
  }
  std::cout << fmt::format("wrote {} scenarios to {} (seeds {}..{}), {} with a deliberate mistake\n", o.count, o.out,
                           scenario_seed(o.seed, 0), scenario_seed(o.seed, o.count ? o.count - 1 : 0), mistakes);
  return 0;
}

}  // namespace

CLI::App* add_generate_command(CLI::App& app, std::function<int()>& action) {
  auto o = std::make_shared<Options>();
  CLI::App* c = app.add_subcommand("generate", "Write random well-formed Hopper protocols (optionally with deliberate mistakes) as scenarios");
  c->add_option("--seed", o->seed, "batch seed; scenario i uses seed * 2^20 + i (batches share no scenario)")->check(not_negative())->capture_default_str();
  c->add_option("--count", o->count, "number of scenarios")->check(not_negative())->capture_default_str();
  c->add_option("--out", o->out, "output directory (created if missing)")->required();
  c->add_option("--mistake-rate", o->mistake_rate, "share of scenarios with one deliberate mistake, in [0, 1]")->capture_default_str();
  c->add_option("--max-trip", o->max_trip, "largest inner loop trip count, 1..8")->capture_default_str();
  c->callback([o, &action] { action = [o] { return run_generate(*o); }; });
  return c;
}

}  // namespace pipesim::verify
