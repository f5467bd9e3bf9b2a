// Launch capture for CUTLASS example 54_hopper_fp8_warp_specialized_gemm (FP8 e4m3, cooperative,
// tile 128x128x128, cluster 1x2x1, epilogue ScaledLinCombPerRowBiasEltActAmaxAux with ReLU), from the
// nvidia-cutlass wheel. See capture_common.hpp.
// The example's main() becomes an uninstantiated function template, so only the kernels this file
// references (and the example's non-template helpers) are compiled.
#define main cutlass_example_main_unused_; template <class CorpusUnused_ = void> int cutlass_example_main
#include "54_hopper_fp8_warp_specialized_gemm/54_hopper_fp8_warp_specialized_gemm.cu"
#undef main

#include "capture_common.hpp"

int main(int argc, char** argv) {
  corpus::Options opt = corpus::parse(argc, argv);
  if (opt.list) { std::puts("coop"); return 0; }
  if (!opt.variant.empty() && opt.variant != "coop") corpus::die("unknown variant " + opt.variant);

  // As the example's initialize() and args_from_options() with its default Options: host scalars
  // (device_scale false: every *_ptr scale is null), save_aux and save_amax on (an Aux tensor and two
  // amax floats), no bias; raster Heuristic, swizzle 1 (the example leaves them unset unless parsed).
  Options<RasterOrderOptions> options;
  options.m = opt.m; options.n = opt.n; options.k = opt.k; options.l = opt.l;
  options.raster = RasterOrderOptions::Heuristic;
  options.swizzle = 1;
  int M = options.m, N = options.n, K = options.k, L = options.l;
  stride_A = cutlass::make_cute_packed_stride(StrideA{}, cute::make_shape(M, K, L));
  stride_B = cutlass::make_cute_packed_stride(StrideB{}, cute::make_shape(N, K, L));
  stride_C = cutlass::make_cute_packed_stride(StrideC{}, cute::make_shape(M, N, L));
  stride_D = cutlass::make_cute_packed_stride(StrideD{}, cute::make_shape(M, N, L));
  stride_aux = stride_D;
  uint64_t mkl = uint64_t(M) * K * L, knl = uint64_t(K) * N * L, mnl = uint64_t(M) * N * L;
  auto* A = corpus::fake_buffer<ElementA>("A", mkl * sizeof(ElementA));
  auto* B = corpus::fake_buffer<ElementB>("B", knl * sizeof(ElementB));
  auto* C = corpus::fake_buffer<ElementC>("C", mnl * sizeof(ElementC));
  auto* D = corpus::fake_buffer<ElementD>("D", mnl * sizeof(ElementD));

  ElementAux* aux = nullptr;
  ElementAmax* amax_aux = nullptr;
  ElementAmax* amax_D = nullptr;
  if (options.save_aux) {
    aux = corpus::fake_buffer<ElementAux>("Aux", mnl * sizeof(ElementAux));
    if (options.save_amax) amax_aux = corpus::fake_buffer<ElementAmax>("amax_aux", sizeof(ElementAmax));
  }
  if (options.save_amax) amax_D = corpus::fake_buffer<ElementAmax>("amax_D", sizeof(ElementAmax));

  auto make_args = [=] {
    typename Gemm::Arguments arguments{
      cutlass::gemm::GemmUniversalMode::kGemm,
      {options.m, options.n, options.k, options.l},
      {A, stride_A, B, stride_B},
      {
        {},
        C, stride_C,
        D, stride_D
      }
    };
    arguments.hw_info.device_id = 0;
    arguments.hw_info.sm_count = corpus::kSmCount;

    auto &fusion_args = arguments.epilogue.thread;
    fusion_args.alpha = options.alpha;
    fusion_args.beta = options.beta;
    fusion_args.alpha_ptr = nullptr;   // scalar_alpha.device_data() without device_scale
    fusion_args.beta_ptr = nullptr;
    fusion_args.scale_a = options.scale_a;
    fusion_args.scale_b = options.scale_b;
    fusion_args.scale_c = options.scale_c;
    fusion_args.scale_a_ptr = nullptr;
    fusion_args.scale_b_ptr = nullptr;
    fusion_args.scale_c_ptr = nullptr;
    fusion_args.scale_d = options.scale_d;
    fusion_args.scale_aux = options.scale_aux;
    fusion_args.scale_d_ptr = nullptr;
    fusion_args.scale_aux_ptr = nullptr;
    fusion_args.bias_ptr = nullptr;
    if (options.save_aux) {
      fusion_args.aux_ptr = aux;
      fusion_args.dAux = stride_aux;
      if (options.save_amax) {
        fusion_args.amax_aux_ptr = amax_aux;
      }
    }
    if (options.save_amax) {
      fusion_args.amax_D_ptr = amax_D;
    }
    arguments.scheduler.raster_order = options.raster;
    arguments.scheduler.max_swizzle_size = options.swizzle;
    return arguments;
  };

  corpus::Meta meta;
  meta.example = "54_hopper_fp8_warp_specialized_gemm";
  meta.variant = "coop";
  return corpus::emit<GemmKernel>(make_args, opt, meta);
}
