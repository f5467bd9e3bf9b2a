// The project's own CUDA kernels against the model (issue 4, "Proof"): compile the NVFP4 GEMV kernel
// with nvcc --resource-usage (ptxas -v) for sm_90a and sm_100a and compare the compiler's report with
// what model/gemv_plan says: the plan puts the whole shared-memory layout (ring, barriers, vectors,
// row sums) in dynamic shared memory, so every instantiation must have 0 bytes of static shared
// memory; the registers the compiler used, times the plan's threads, must fit the register file at
// the plan's residency (and within __launch_bounds__'s cap of 65536 / 576 threads); plan + static
// shared memory must fit the per-block limit. Registered with CTest only where nvcc exists.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <regex>
#include <string>

#include "model/arch.hpp"
#include "model/gemv_plan.hpp"

namespace {

struct Usage {
  int regs = -1;
  long smem = 0;  // static shared memory, bytes (absent from the report: 0)
};

// kernel (mangled) -> usage, for one architecture.
std::map<std::string, Usage> resource_usage(const std::string& arch, std::string& log) {
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
      const pipesim::model::GemvPlan plan = pipesim::model::plan_gemv(s, a->cap);
      ASSERT_TRUE(plan.ok) << plan.why;
      const long per_warp = (32L * u.regs + 255) / 256 * 256;
      const long per_cta = per_warp * (plan.threads / 32);
      EXPECT_LE(per_cta, a->cap.regs_per_sm) << name << " m=" << s.m << " k=" << s.k;
      EXPECT_LE(plan.smem_bytes + u.smem, a->cap.smem_per_block) << name;
      // At the residency shared memory allows, registers must allow it too.
      const long by_smem = a->cap.smem_per_sm / (plan.smem_bytes + a->smem_reserved_per_block);
      EXPECT_GE(a->cap.regs_per_sm / per_cta, std::min(by_smem, 1L)) << name;
    }
  }
  EXPECT_GT(tma_kernels, 0) << "no gemv_tma_kernel instantiation in the report:\n" << log;
}

INSTANTIATE_TEST_SUITE_P(Archs, KernelResources, testing::Values("sm_90a", "sm_100a"));

}  // namespace
