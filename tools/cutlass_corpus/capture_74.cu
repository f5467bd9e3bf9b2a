// Launch capture for CUTLASS example 74_blackwell_gemm_streamk (F16 x F16 -> F32, 2-SM kernel
// KernelTmaWarpSpecialized2SmSm100, MmaTileShape 256x128x64, dynamic cluster, StreamKScheduler), from
// the nvidia-cutlass wheel. See capture_common.hpp and capture_sm100.hpp. One kernel, two launches:
//   heuristic  the example's defaults: decomposition Heuristic, reduction Deterministic, splits 1,
//              preferred cluster 4x4x1, fallback 2x1x1
//   streamk    the same with --decomposition=StreamK (the example's second command line): every
//              shape gets stream-K units and the workspace's reduction barriers
#define main cutlass_example_main_unused_; template <class CorpusUnused_ = void> int cutlass_example_main
#include "74_blackwell_gemm_streamk/blackwell_gemm_streamk.cu"
#undef main

#include "capture_sm100.hpp"

int main(int argc, char** argv) {
  corpus::Options opt = corpus::parse(argc, argv);
  if (opt.list) { std::puts("heuristic"); std::puts("streamk"); return 0; }
  ::Options options;  // the example's defaults
  if (opt.variant == "streamk") options.decomposition_mode = ::Options::DecompositionMode::StreamK;
  else if (opt.variant != "heuristic") corpus::die("--variant must be heuristic or streamk");
  auto customize = [options](auto& arguments) {
    arguments.hw_info.cluster_shape = dim3(options.preferred_cluster_m, options.preferred_cluster_n, 1);
    arguments.hw_info.cluster_shape_fallback = dim3(options.fallback_cluster_m, options.fallback_cluster_n, 1);
    arguments.scheduler.splits = options.splits;
    arguments.scheduler.decomposition_mode = options.decomposition_mode;
    arguments.scheduler.reduction_mode = options.reduction_mode;
  };
  return corpus::capture_dense_gemm<Gemm>(opt, "74_blackwell_gemm_streamk", opt.variant.c_str(), customize);
}
