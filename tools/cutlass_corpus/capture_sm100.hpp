// Launch capture for the Blackwell (sm_100a) part of the CUTLASS acceptance corpus: capture_common.hpp
// with a 148-SM B200 and launch arch sm_100a, and the Arguments of the dense F16 GEMM examples
// (70, 73, 74 build theirs the same way; README "Blackwell").
#pragma once

#define PIPESIM_CORPUS_SM100 1
#include "capture_common.hpp"

#include "cutlass/util/packed_stride.hpp"

namespace corpus {

// As the examples' initialize() and args_from_options(): packed strides, alpha 1, beta 0 (their
// defaults), fake pointers, sm_count 148; `customize(arguments)` adds what one example sets besides
// (swizzle, preferred / fallback cluster, stream-K decomposition).
template <class Gemm, class Customize>
int capture_dense_gemm(Options const& opt, const char* example, const char* variant, Customize const& customize) {
  using GemmKernel = typename Gemm::GemmKernel;
  using ElementA = typename Gemm::ElementA;
  using ElementB = typename Gemm::ElementB;
  using ElementC = typename Gemm::ElementC;
  using ElementD = typename Gemm::EpilogueOutputOp::ElementOutput;
  if (opt.l != 1) die(std::string(example) + " has a rank-3 problem (its L is 1)");
  int M = opt.m, N = opt.n, K = opt.k;
  auto stride_A = cutlass::make_cute_packed_stride(typename GemmKernel::StrideA{}, {M, K, 1});
  auto stride_B = cutlass::make_cute_packed_stride(typename GemmKernel::StrideB{}, {N, K, 1});
  auto stride_C = cutlass::make_cute_packed_stride(typename GemmKernel::StrideC{}, {M, N, 1});
  auto stride_D = cutlass::make_cute_packed_stride(typename GemmKernel::StrideD{}, {M, N, 1});
  uint64_t mk = uint64_t(M) * K, kn = uint64_t(K) * N, mn = uint64_t(M) * N;
  auto* A = fake_buffer<ElementA>("A", mk * sizeof(ElementA));
  auto* B = fake_buffer<ElementB>("B", kn * sizeof(ElementB));
  auto* C = fake_buffer<ElementC>("C", mn * sizeof(ElementC));
  auto* D = fake_buffer<ElementD>("D", mn * sizeof(ElementD));

  auto make_args = [=] {
    typename Gemm::Arguments arguments{
      cutlass::gemm::GemmUniversalMode::kGemm,
      {M, N, K, 1},
      {A, stride_A, B, stride_B},
      {{1.f, 0.f}, C, stride_C, D, stride_D}
    };
    arguments.hw_info.device_id = 0;
    arguments.hw_info.sm_count = kSmCount;
    customize(arguments);
    return arguments;
  };

  Meta meta;
  meta.example = example;
  meta.variant = variant;
  return emit<GemmKernel>(make_args, opt, meta);
}

}  // namespace corpus
