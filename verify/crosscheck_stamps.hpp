// `pipesim crosscheck KERNEL.ptx --stamps FILE`: the GPU's own timeline of the kernel (the stamped
// launch of kernels/ptx_launch/stamps.hpp), read back: every stamp to FILE (CSV), and for the report
// each CTA's span and, per stamped instruction, when the warps that reach it first and last pass it,
// from their CTA's first stamp, beside the model's CTA ends.
#pragma once

#include <string>

#include "kernels/ptx_launch/stamps.hpp"
#include "sim/engine.hpp"
#include "verify/ptx/ast.hpp"

namespace pipesim::verify {

struct StampsReport {
  std::string text;   // for the human report
  std::string error;  // the CSV could not be written
};

StampsReport report_stamps(const ptx::Module& module, const ptx::Function& entry, const ptx_launch::StampedPtx& plan,
                           const std::vector<uint64_t>& buffer, uint32_t warps_per_cta, double stamped_ms, double median_ms,
                           const sim::RunResult& model, const std::string& csv_path);

}  // namespace pipesim::verify
