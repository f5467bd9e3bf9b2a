// The project's own CUDA kernels against the model (issue 4, "Proof"): compile the NVFP4 GEMV kernel
// with nvcc --resource-usage (ptxas -v) for sm_90a and sm_100a and compare the compiler's report with
// what model/gemv_plan says: the plan puts the whole shared-memory layout (ring, barriers, vectors,
// row sums) in dynamic shared memory, so every instantiation must have 0 bytes of static shared
// memory; the registers the compiler used, times the plan's threads, must fit the register file at
// the plan's residency (and within __launch_bounds__'s cap of 65536 / 576 threads); plan + static
// shared memory must fit the per-block limit. `pipesim budget --gemv` (model/gemv_budget.hpp) with the
// compiler's register count must pass for every benchmark shape, and the shipped GEMV scenarios must
// state the count of the instantiation they describe. Registered with CTest only where nvcc exists.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <map>
#include <regex>
#include <string>

#include "model/arch.hpp"
#include "model/gemv_budget.hpp"
#include "model/gemv_plan.hpp"
#include "verify/parser.hpp"
#include "verify/scenario_budget.hpp"

namespace {

struct Usage {
  int regs = -1;
  long smem = 0;  // static shared memory, bytes (absent from the report: 0)
};

// kernel (mangled) -> usage, for one architecture.
std::map<std::string, Usage> compile_and_read(const std::string& arch, std::string& log) {
  const std::string cmd = std::string(PIPESIM_NVCC) + " -std=c++20 -I" + PIPESIM_SOURCE_DIR +
                          " --resource-usage -arch=" + arch + " -c " + PIPESIM_SOURCE_DIR +
                          "/kernels/gemv_nvfp4/gemv_nvfp4.cu -o /dev/null 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {};
  char buf[4096];
  while (fgets(buf, sizeof buf, p)) log += buf;
  const int rc = pclose(p);
  if (rc != 0) return {};
  std::map<std::string, Usage> out;
  const std::regex entry(R"(Compiling entry function '([^']+)')");
  const std::regex used(R"(Used (\d+) registers)");
  const std::regex smem(R"((\d+) bytes smem)");
  std::string current;
  size_t start = 0;
  while (start < log.size()) {
    size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    const std::string line = log.substr(start, end - start);
    start = end + 1;
    std::smatch m;
    if (std::regex_search(line, m, entry)) current = m[1];
    if (!current.empty() && std::regex_search(line, m, used)) {
      Usage u;
      u.regs = std::stoi(m[1]);
      if (std::smatch s; std::regex_search(line, s, smem)) u.smem = std::stol(s[1]);
      out[current] = u;
      current.clear();
    }
  }
  return out;
}

// One nvcc run per architecture for all tests (each takes ~10 s).
std::map<std::string, Usage> resource_usage(const std::string& arch, std::string& log) {
  static std::map<std::string, std::pair<std::map<std::string, Usage>, std::string>> cache;
  auto it = cache.find(arch);
  if (it == cache.end()) {
    std::string l;
    auto u = compile_and_read(arch, l);
    it = cache.emplace(arch, std::make_pair(std::move(u), std::move(l))).first;
  }
  log = it->second.second;
  return it->second.first;
}

// The usage of the instantiation gemv_tma_kernel<kPhase, kWatchdog, kUnits> (mangled ILi<p>ELb<w>ELi<u>EE).
const Usage* instantiation(const std::map<std::string, Usage>& usage, int phase, bool watchdog, int units) {
  const std::string tag = "gemv_tma_kernelILi" + std::to_string(phase) + "ELb" + (watchdog ? "1" : "0") + "ELi" +
                          std::to_string(units) + "EE";
  for (const auto& [name, u] : usage)
    if (name.find(tag) != std::string::npos) return &u;
  return nullptr;
}

class KernelResources : public testing::TestWithParam<std::string> {};

TEST_P(KernelResources, GemvKernelMatchesThePlan) {
  const std::string arch = GetParam();
  std::string log;
  const auto usage = resource_usage(arch, log);
  ASSERT_FALSE(usage.empty()) << "nvcc --resource-usage failed or reported nothing:\n" << log;
  const pipesim::model::Arch* a = pipesim::model::find_arch(arch);
  ASSERT_NE(a, nullptr);
  int tma_kernels = 0;
  for (const auto& [name, u] : usage) {
    if (name.find("gemv_tma_kernel") == std::string::npos) continue;
    ++tma_kernels;
    // The plan's layout is all dynamic shared memory (extern __shared__): no static part.
    EXPECT_EQ(u.smem, 0) << name << ": static shared memory the plan does not know about";
    // __launch_bounds__(kMaxThreads = 576, 1): registers per thread ≤ 65536 / 576, rounded down to 8.
    EXPECT_LE(u.regs, 65536 / 576 / 8 * 8) << name;
    // Every benchmark shape's plan: threads × registers (allocated per warp in units of 256) fit
    // the SM at the plan's residency, and the dynamic layout fits the per-block limit.
    for (const pipesim::model::GemvShape s : {pipesim::model::GemvShape{7168, 16384, 1},
                                              pipesim::model::GemvShape{4096, 7168, 8},
                                              pipesim::model::GemvShape{7168, 2048, 4}}) {
      // The plan the kernel makes there: the decoded vector is int8 on sm_90a, f16 on sm_100a.
      pipesim::model::GemvHints hints;
      hints.vector_elem_bytes = pipesim::model::gemv_vector_elem_bytes(arch == "sm_90a" ? 9 : 10);
      const pipesim::model::GemvPlan plan = pipesim::model::plan_gemv(s, a->cap, hints);
      ASSERT_TRUE(plan.ok) << plan.why;
      const long per_warp = (32L * u.regs + 255) / 256 * 256;
      const long per_cta = per_warp * (plan.threads / 32);
      EXPECT_LE(per_cta, a->cap.regs_per_sm) << name << " m=" << s.m << " k=" << s.k;
      EXPECT_LE(plan.smem_bytes + u.smem, a->cap.smem_per_block) << name;
      // At the residency shared memory allows, registers must allow it too.
      const long by_smem = a->cap.smem_per_sm / (plan.smem_bytes + a->smem_reserved_per_block);
      EXPECT_GE(a->cap.regs_per_sm / per_cta, std::min(by_smem, 1L)) << name;
      // `pipesim budget --gemv MxKxL --arch ARCH --regs R` passes with the compiler's count and states
      // the plan's request.
      pipesim::model::GemvBudgetConfig bc;
      bc.shape = s;
      bc.arch = arch;
      bc.regs_per_thread = u.regs;
      const pipesim::model::GemvBudget b = pipesim::model::check_gemv_budget(bc);
      EXPECT_EQ(b.exit_code(), 0) << name << "\n" << pipesim::model::format_gemv_budget(b);
      EXPECT_EQ(b.total, plan.smem_bytes + u.smem) << name;
      EXPECT_EQ(b.regs.regs_per_cta, per_cta) << name;
    }
  }
  EXPECT_GT(tma_kernels, 0) << "no gemv_tma_kernel instantiation in the report:\n" << log;
}

INSTANTIATE_TEST_SUITE_P(Archs, KernelResources, testing::Values("sm_90a", "sm_100a"));

// scenarios/gemv_nvfp4 state the sm_90a kernel's launch: `regs` is ptxas's count for the instantiation
// each describes (the plan's kernel <1, false, 2>; the broken twins the watchdog build <0, true, 2>),
// `smem` the plan's layout, and `pipesim check` finds nothing to say about the budget.
TEST(KernelResources, GemvScenariosStateTheCompiledKernel) {
  std::string log;
  const auto usage = resource_usage("sm_90a", log);
  ASSERT_FALSE(usage.empty()) << log;
  for (const char* shape : {"7168x16384x1", "4096x7168x8", "7168x2048x4"})
    for (const bool broken : {false, true}) {
      const std::string file = std::string(PIPESIM_SOURCE_DIR) + "/scenarios/gemv_nvfp4/" + shape +
                               (broken ? "_broken_producer_phase.scn" : ".scn");
      std::ifstream in(file);
      ASSERT_TRUE(in) << file;
      std::stringstream text;
      text << in.rdbuf();
      pipesim::sim::Kernel k = pipesim::verify::parse_scenario(file, text.str());
      const Usage* u = instantiation(usage, broken ? 0 : 1, broken, 2);
      ASSERT_NE(u, nullptr) << log;
      EXPECT_EQ(k.launch.regs, u->regs) << file;
      const pipesim::verify::ScenarioBudget b = pipesim::verify::check_scenario_budget(k);
      ASSERT_TRUE(b.gemv_declared.has_value()) << file;
      EXPECT_EQ(k.launch.smem, b.gemv_declared->total + u->smem) << file;
      EXPECT_EQ(b.exit_code(), 0) << file << "\n" << pipesim::verify::format_scenario_budget(k, b);
    }
}

}  // namespace
