// Launch capture for CUTLASS example 48_hopper_warp_specialized_gemm (TF32, KernelScheduleAuto (the
// builder picks the persistent cooperative kernel), tile 128x128x32, cluster 4x2x1), from the
// nvidia-cutlass wheel. See capture_common.hpp.
// The example's main() becomes an uninstantiated function template, so only the kernels this file
// references (and the example's non-template helpers) are compiled.
#define main cutlass_example_main_unused_; template <class CorpusUnused_ = void> int cutlass_example_main
#include "48_hopper_warp_specialized_gemm/48_hopper_warp_specialized_gemm.cu"
#undef main

#include "capture_common.hpp"

int main(int argc, char** argv) {
  corpus::Options opt = corpus::parse(argc, argv);
  if (opt.list) { std::puts("coop"); return 0; }
  if (!opt.variant.empty() && opt.variant != "coop") corpus::die("unknown variant " + opt.variant);
  if (opt.l != 1) corpus::die("example 48 has a rank-3 problem shape (no L)");

  // As the example's initialize() and args_from_options(), with its default Options (raster
  // Heuristic, swizzle 1, alpha 1, beta 0), fake pointers and a fixed SM count.
  Options options;
  options.m = opt.m; options.n = opt.n; options.k = opt.k;
  stride_A = cutlass::make_cute_packed_stride(StrideA{}, {options.m, options.k, 1});
  stride_B = cutlass::make_cute_packed_stride(StrideB{}, {options.n, options.k, 1});
  stride_C = cutlass::make_cute_packed_stride(StrideC{}, {options.m, options.n, 1});
  stride_D = cutlass::make_cute_packed_stride(StrideD{}, {options.m, options.n, 1});
  uint64_t mk = uint64_t(options.m) * options.k, kn = uint64_t(options.k) * options.n, mn = uint64_t(options.m) * options.n;
  auto* A = corpus::fake_buffer<typename Gemm::ElementA>("A", mk * sizeof(typename Gemm::ElementA));
  auto* B = corpus::fake_buffer<typename Gemm::ElementB>("B", kn * sizeof(typename Gemm::ElementB));
  auto* C = corpus::fake_buffer<typename Gemm::ElementC>("C", mn * sizeof(typename Gemm::ElementC));
  using ElementD = typename Gemm::EpilogueOutputOp::ElementOutput;
  auto* D = corpus::fake_buffer<ElementD>("D", mn * sizeof(ElementD));

  cutlass::KernelHardwareInfo hw_info;
  hw_info.device_id = 0;
  hw_info.sm_count = corpus::kSmCount;

  auto make_args = [=] {
    typename Gemm::Arguments arguments{
      cutlass::gemm::GemmUniversalMode::kGemm,
      {options.m, options.n, options.k},
      {A, stride_A, B, stride_B},
      {{options.alpha, options.beta}, C, stride_C, D, stride_D},
      hw_info
    };
    arguments.scheduler.raster_order = options.raster;
    arguments.scheduler.max_swizzle_size = options.swizzle;
    return arguments;
  };

  corpus::Meta meta;
  meta.example = "48_hopper_warp_specialized_gemm";
  meta.variant = "coop";  // KernelScheduleAuto resolves to KernelTmaWarpSpecializedCooperative
  return corpus::emit<GemmKernel>(make_args, opt, meta);
}
