// Launch capture for CUTLASS example 73_blackwell_gemm_preferred_cluster (F16 x F16 -> F32, 2-SM kernel
// KernelTmaWarpSpecialized2SmSm100, MmaTileShape 256x128x64, dynamic cluster Shape<int,int,_1>), from
// the nvidia-cutlass wheel. See capture_common.hpp and capture_sm100.hpp.
// The example's defaults: preferred cluster 4x4x1, fallback 2x1x1 (hw_info.cluster_shape{,_fallback}).
// The launch file has the preferred cluster (its grid is get_grid_shape's for it); the meta file
// records both. On a GPU, clusters the preferred shape cannot place run with the fallback one: one
// grid, two cluster shapes; the launch file describes the all-preferred case.
#define main cutlass_example_main_unused_; template <class CorpusUnused_ = void> int cutlass_example_main
#include "73_blackwell_gemm_preferred_cluster/blackwell_gemm_preferred_cluster.cu"
#undef main

#include "capture_sm100.hpp"

int main(int argc, char** argv) {
  corpus::Options opt = corpus::parse(argc, argv);
  if (opt.list) { std::puts("2sm"); return 0; }
  if (!opt.variant.empty() && opt.variant != "2sm") corpus::die("unknown variant " + opt.variant);
  ::Options options;  // the example's defaults
  auto customize = [options](auto& arguments) {
    arguments.hw_info.cluster_shape = dim3(options.preferred_cluster_m, options.preferred_cluster_n, 1);
    arguments.hw_info.cluster_shape_fallback = dim3(options.fallback_cluster_m, options.fallback_cluster_n, 1);
    arguments.scheduler.max_swizzle_size = options.swizzle;
  };
  return corpus::capture_dense_gemm<Gemm>(opt, "73_blackwell_gemm_preferred_cluster", "2sm", customize);
}
