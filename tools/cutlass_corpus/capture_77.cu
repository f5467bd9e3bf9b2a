// Launch capture for CUTLASS example 77_blackwell_fmha, the forward kernel (77_blackwell_fmha.cu without
// FP8: F16 Q K V, F32 accumulation, F16 O, F32 LSE; head dim 128, TileShape 256x128x128, NoMask (the
// example's default --mask=no), IndividualTileScheduler (default: not --persistent)), from the
// nvidia-cutlass wheel. See capture_common.hpp and capture_sm100.hpp.
//
// Unlike the GEMM captures this file cannot include the example's .cu: its main() calls itself (the
// renaming trick of the others would put a template declaration inside a function body) and its
// main_single() is a plain function that instantiates every forward kernel of the example. So it
// includes the example's headers and spells FwdRunner<false, Shape<_256,_128,_128>, void, NoMask,
// Option<Tag::kIsPersistent, false_type>>'s Operation with the same template arguments, and builds
// the Arguments as FwdRunner::initialize() / get_arguments() do (non-varlen).
#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/kernel_hardware_info.h"
#include "device/fmha.hpp"
#include "collective/fmha_fusion.hpp"
#include "collective/sm100_fmha_fwd_mainloop_tma_warpspecialized.hpp"
#include "collective/sm100_fmha_fwd_epilogue_tma_warpspecialized.hpp"
#include "kernel/fmha_options.hpp"
#include "kernel/fmha_tile_scheduler.hpp"
#include "kernel/sm100_fmha_fwd_kernel_tma_warpspecialized.hpp"

#include "capture_sm100.hpp"

namespace corpus_77 {
using namespace cute;
using Element = cutlass::half_t;
using ElementAccumulatorQK = float;
using ElementAccumulatorPV = float;
using ElementOut = cutlass::half_t;
using TileShape = Shape<_256, _128, _128>;  // run_fwd_128: HeadDim _128
using ProblemShape = cute::tuple<int, int, int, cute::tuple<cute::tuple<int, int>, int>>;  // Q K D ((H_R, H_K) B)
using StrideQ = cute::tuple<int, _1, cute::tuple<cute::tuple<int, int>, int>>;
using StrideK = cute::tuple<int, _1, cute::tuple<cute::tuple<_0, int>, int>>;
using StrideV = StrideK;
using StrideO = StrideQ;
using StrideLSE = cute::tuple<_1, cute::tuple<cute::tuple<int, int>, int>>;
using TileScheduler = cutlass::fmha::kernel::IndividualTileScheduler;
using Mainloop = cutlass::fmha::collective::Sm100FmhaFwdMainloopTmaWarpspecialized<
    Element, ElementAccumulatorQK, ElementAccumulatorPV, TileShape, StrideQ, StrideK, StrideV,
    cutlass::fmha::collective::NoMask>;
using Operation = cutlass::fmha::device::FMHA<cutlass::fmha::kernel::Sm100FmhaFwdKernelTmaWarpspecialized<
    ProblemShape, Mainloop,
    cutlass::fmha::collective::Sm100FmhaFwdEpilogueTmaWarpspecialized<
        ElementOut, ElementAccumulatorPV, typename Mainloop::TileShapePV, StrideO, StrideLSE>,
    TileScheduler>>;
using Kernel = Operation::Kernel;
}  // namespace corpus_77

int main(int argc, char** argv) {
  using namespace corpus_77;
  corpus::Options opt = corpus::parse(argc, argv, "B H Q K");
  if (opt.list) { std::puts("fwd"); return 0; }
  if (!opt.variant.empty() && opt.variant != "fwd") corpus::die("unknown variant " + opt.variant);
  // h_k = h (no GQA: the example's default), d = 128 (this kernel's head dim)
  int B = opt.dims[0], H = opt.dims[1], SQ = opt.dims[2], SK = opt.dims[3], D = 128;
  int H_K = H, H_Q = H / H_K;
  ProblemShape problem_shape = cute::make_tuple(SQ, SK, D, cute::make_tuple(cute::make_tuple(H_Q, H_K), B));
  StrideQ stride_Q = make_stride(H * D, _1{}, make_stride(make_stride(D, H_Q * D), H * D * SQ));
  StrideO stride_O = stride_Q;
  StrideK stride_K = make_stride(H_K * D, _1{}, make_stride(make_stride(_0{}, D), H_K * D * SK));
  StrideV stride_V = stride_K;
  StrideLSE stride_LSE = make_stride(_1{}, make_stride(make_stride(SQ, SQ * H_Q), SQ * H));
  uint64_t qo = uint64_t(SQ) * D * H * B, kv = uint64_t(SK) * D * H_K * B, lse = uint64_t(SQ) * H * B;
  auto* Q = corpus::fake_buffer<Element>("Q", qo * sizeof(Element));
  auto* K = corpus::fake_buffer<Element>("K", kv * sizeof(Element));
  auto* V = corpus::fake_buffer<Element>("V", kv * sizeof(Element));
  auto* O = corpus::fake_buffer<ElementOut>("O", qo * sizeof(ElementOut));
  auto* LSE = corpus::fake_buffer<ElementAccumulatorPV>("LSE", lse * sizeof(ElementAccumulatorPV));

  cutlass::KernelHardwareInfo hw_info;
  hw_info.device_id = 0;
  hw_info.sm_count = corpus::kSmCount;

  auto make_args = [=] {
    typename Operation::Arguments arguments{
      problem_shape,
      {Q, stride_Q, K, stride_K, V, stride_V},
      {O, stride_O, LSE, stride_LSE},
      hw_info
    };
    return arguments;
  };

  corpus::Meta meta;
  meta.example = "77_blackwell_fmha";
  meta.variant = "fwd";
  meta.schedule = corpus::demangle(typeid(typename Kernel::WarpRole).name());
  meta.tile_scheduler = corpus::demangle(typeid(TileScheduler).name());
  return corpus::emit<Kernel>(make_args, opt, meta);
}
