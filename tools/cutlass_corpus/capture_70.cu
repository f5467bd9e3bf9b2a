// Launch capture for CUTLASS example 70_blackwell_gemm (70_blackwell_fp16_gemm.cu: F16 x F16 -> F32,
// from the nvidia-cutlass wheel). See capture_common.hpp and capture_sm100.hpp.
//   2sm  the example's own kernel: MmaTileShape 256x128x64, cluster 2x2x1, KernelScheduleAuto (the
//        builder picks the 2-SM tcgen05 kernel, KernelTmaWarpSpecialized2SmSm100, and its epilogue)
//   1sm  ours: the same builder calls with MmaTileShape 128x128x64 and KernelTmaWarpSpecialized1SmSm100
//        / TmaWarpSpecialized1Sm (the example has no 1-SM kernel; this is the one KernelScheduleAuto
//        picks for a 128-row tile)
// The example's main() becomes an uninstantiated function template, so only the kernels this file
// references are compiled.
#define main cutlass_example_main_unused_; template <class CorpusUnused_ = void> int cutlass_example_main
#include "70_blackwell_gemm/70_blackwell_fp16_gemm.cu"
#undef main

#include "capture_sm100.hpp"

namespace corpus_70 {
using MmaTileShape1Sm = Shape<_128, _128, _64>;
using Epilogue1Sm = typename cutlass::epilogue::collective::CollectiveBuilder<
    ArchTag, OperatorClass, MmaTileShape1Sm, ClusterShape_MNK,
    cutlass::epilogue::collective::EpilogueTileAuto,
    ElementAccumulator, ElementAccumulator,
    ElementC, LayoutC, AlignmentC,
    ElementC, LayoutC, AlignmentC,
    cutlass::epilogue::TmaWarpSpecialized1Sm>::CollectiveOp;
using Mainloop1Sm = typename cutlass::gemm::collective::CollectiveBuilder<
    ArchTag, OperatorClass,
    ElementA, LayoutA, AlignmentA,
    ElementB, LayoutB, AlignmentB,
    ElementAccumulator, MmaTileShape1Sm, ClusterShape_MNK,
    cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epilogue1Sm::SharedStorage))>,
    cutlass::gemm::KernelTmaWarpSpecialized1SmSm100>::CollectiveOp;
using Gemm1Sm = cutlass::gemm::device::GemmUniversalAdapter<
    cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Mainloop1Sm, Epilogue1Sm, void>>;
}  // namespace corpus_70

int main(int argc, char** argv) {
  corpus::Options opt = corpus::parse(argc, argv);
  if (opt.list) { std::puts("2sm"); std::puts("1sm"); return 0; }
  ::Options options;  // the example's defaults: swizzle 0
  auto customize = [swizzle = options.swizzle](auto& arguments) { arguments.scheduler.max_swizzle_size = swizzle; };
  if (opt.variant == "2sm") return corpus::capture_dense_gemm<Gemm>(opt, "70_blackwell_gemm", "2sm", customize);
  if (opt.variant == "1sm")
    return corpus::capture_dense_gemm<corpus_70::Gemm1Sm>(opt, "70_blackwell_gemm", "1sm", customize);
  corpus::die("--variant must be 2sm or 1sm");
}
