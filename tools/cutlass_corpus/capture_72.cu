// Launch capture for CUTLASS example 72_blackwell_narrow_precision_gemm, 72b_blackwell_nvfp4_nvfp4_gemm.cu
// (the NVFP4 x NVFP4 one: A, B nv_float4_t<e2m1> with ue4m3 scale factors per 16 elements, D e2m1 with
// generated ue8m0 scale factors SFD, C f32; OpClassBlockScaledTensorOp, MmaTileShape 128x128x256,
// cluster 1x1x1, KernelScheduleAuto: the builder's 1-SM block-scaled kernel), from the nvidia-cutlass
// wheel. See capture_common.hpp and capture_sm100.hpp.
#define main cutlass_example_main_unused_; template <class CorpusUnused_ = void> int cutlass_example_main
#include "72_blackwell_narrow_precision_gemm/72b_blackwell_nvfp4_nvfp4_gemm.cu"
#undef main

#include "capture_sm100.hpp"

// Bytes of `count` elements of T (sub-byte types packed).
template <class T>
uint64_t bytes_of(uint64_t count) {
  return (count * cutlass::sizeof_bits<T>::value + 7) / 8;
}

int main(int argc, char** argv) {
  corpus::Options opt = corpus::parse(argc, argv);
  if (opt.list) { std::puts("nvfp4"); return 0; }
  if (!opt.variant.empty() && opt.variant != "nvfp4") corpus::die("unknown variant " + opt.variant);
  if (opt.l != 1) corpus::die("example 72b has a rank-3 problem (its L is 1)");

  // As the example's initialize() and args_from_options() with its default Options (alpha 1, beta 0,
  // swizzle 0; norm constant a device scalar).
  ::Options options;
  options.m = opt.m; options.n = opt.n; options.k = opt.k;
  using Sm1xxBlkScaledConfig = typename Gemm::GemmKernel::CollectiveMainloop::Sm1xxBlkScaledConfig;
  int M = options.m, N = options.n, K = options.k;
  auto sA = cutlass::make_cute_packed_stride(StrideA{}, {M, K, 1});
  auto sB = cutlass::make_cute_packed_stride(StrideB{}, {N, K, 1});
  auto sC = cutlass::make_cute_packed_stride(StrideC{}, {M, N, 1});
  auto sD = cutlass::make_cute_packed_stride(StrideD{}, {M, N, 1});
  auto lSFA = Sm1xxBlkScaledConfig::tile_atom_to_shape_SFA(cute::make_shape(M, N, K, 1));
  auto lSFB = Sm1xxBlkScaledConfig::tile_atom_to_shape_SFB(cute::make_shape(M, N, K, 1));
  auto lSFD = SfdOutputCfg::tile_atom_to_shape_SFD(cute::make_shape(M, N, K, 1));
  using DataA = ElementA::DataType;
  using DataB = ElementB::DataType;
  using ScaleA = ElementA::ScaleFactorType;
  using ScaleB = ElementB::ScaleFactorType;
  uint64_t mk = uint64_t(M) * K, kn = uint64_t(K) * N, mn = uint64_t(M) * N;
  auto* A = corpus::fake_buffer<DataA>("A", bytes_of<DataA>(mk));
  auto* B = corpus::fake_buffer<DataB>("B", bytes_of<DataB>(kn));
  auto* SFA = corpus::fake_buffer<ScaleA>("SFA", bytes_of<ScaleA>(size(filter_zeros(lSFA))));
  auto* SFB = corpus::fake_buffer<ScaleB>("SFB", bytes_of<ScaleB>(size(filter_zeros(lSFB))));
  auto* C = corpus::fake_buffer<ElementC>("C", bytes_of<ElementC>(mn));
  auto* D = corpus::fake_buffer<ElementD>("D", bytes_of<ElementD>(mn));
  auto* SFD = corpus::fake_buffer<ElementSFD>("SFD", bytes_of<ElementSFD>(size(filter_zeros(lSFD))));
  auto* norm = corpus::fake_buffer<ElementCompute>("norm_constant", sizeof(ElementCompute));

  auto make_args = [=] {
    typename Gemm::Arguments arguments {
      cutlass::gemm::GemmUniversalMode::kGemm,
      {M, N, K, 1},
      {A, sA, B, sB, SFA, lSFA, SFB, lSFB},
      {{options.alpha, options.beta}, C, sC, D, sD}
    };
    if constexpr (IsBlockScaleSupported) {
      arguments.epilogue.thread.block_scale_factor_ptr = SFD;
      arguments.epilogue.thread.norm_constant_ptr = norm;
    }
    arguments.scheduler.max_swizzle_size = options.swizzle;
    arguments.hw_info.device_id = 0;
    arguments.hw_info.sm_count = corpus::kSmCount;
    return arguments;
  };

  corpus::Meta meta;
  meta.example = "72_blackwell_narrow_precision_gemm";
  meta.variant = "nvfp4";
  return corpus::emit<GemmKernel>(make_args, opt, meta);
}
