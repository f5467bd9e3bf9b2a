// Launch capture for CUTLASS example 49_hopper_gemm_with_collective_builder (F16, tile 128x128x64,
// mainloop cluster 2x1x1), from the nvidia-cutlass wheel. See capture_common.hpp.
// The example runs seven ExampleRunner<...> instantiations one after another; this file captures the
// four persistent warp-specialized ones (the same template arguments as the example's main()):
//   coop          ExampleRunner<>                    KernelScheduleAuto -> cooperative, auto epilogue
//   pingpong      ExampleRunner<KernelTmaWarpSpecializedPingpong, epilogue::TmaWarpSpecialized>
//   coop_streamk  ExampleRunner<KernelTmaWarpSpecializedCooperative, TmaWarpSpecializedCooperative,
//                               StageCountAuto, StreamKScheduler>
//   coop_evt      ExampleRunner<KernelTmaWarpSpecializedCooperative, TmaWarpSpecializedCooperative,
//                               StageCountAuto, PersistentScheduler, true /* custom EVT */>
// The example's main() becomes an uninstantiated function template, so only these kernels are compiled.
#define main cutlass_example_main_unused_; template <class CorpusUnused_ = void> int cutlass_example_main
#include "49_hopper_gemm_with_collective_builder/49_collective_builder.cu"
#undef main

#include "capture_common.hpp"

using RunnerCoop = ExampleRunner<>;
using RunnerPingpong = ExampleRunner<
    cutlass::gemm::KernelTmaWarpSpecializedPingpong,
    cutlass::epilogue::TmaWarpSpecialized>;
using RunnerCoopStreamK = ExampleRunner<
    cutlass::gemm::KernelTmaWarpSpecializedCooperative,
    cutlass::epilogue::TmaWarpSpecializedCooperative,
    cutlass::gemm::collective::StageCountAuto,
    cutlass::gemm::StreamKScheduler>;
using RunnerCoopEvt = ExampleRunner<
    cutlass::gemm::KernelTmaWarpSpecializedCooperative,
    cutlass::epilogue::TmaWarpSpecializedCooperative,
    cutlass::gemm::collective::StageCountAuto,
    cutlass::gemm::PersistentScheduler,
    true>;

// As ExampleRunner::initialize() and run(), with the example's default alpha 1, beta 0.
template <class Runner, bool UseCustomEVT>
int capture(corpus::Options const& opt, const char* variant) {
  using Gemm = typename Runner::Gemm;
  using GemmKernel = typename Gemm::GemmKernel;
  using ProblemShapeType = typename Runner::ProblemShapeType;
  using ElementScalar = typename Runner::ElementScalar;
  ::Options options;  // the example's
  options.m = opt.m; options.n = opt.n; options.k = opt.k; options.l = opt.l;
  ProblemShapeType problem_size{options.m, options.n, options.k, options.l};
  int M = options.m, N = options.n, K = options.k, L = options.l;
  auto stride_A = cutlass::make_cute_packed_stride(typename Runner::StrideA{}, cute::make_shape(M, K, L));
  auto stride_B = cutlass::make_cute_packed_stride(typename Runner::StrideB{}, cute::make_shape(N, K, L));
  auto stride_C = cutlass::make_cute_packed_stride(typename Runner::StrideC{}, cute::make_shape(M, N, L));
  auto stride_D = cutlass::make_cute_packed_stride(typename Runner::StrideD{}, cute::make_shape(M, N, L));
  uint64_t mkl = uint64_t(M) * K * L, knl = uint64_t(K) * N * L, mnl = uint64_t(M) * N * L;
  auto* A = corpus::fake_buffer<typename Gemm::ElementA>("A", mkl * sizeof(typename Gemm::ElementA));
  auto* B = corpus::fake_buffer<typename Gemm::ElementB>("B", knl * sizeof(typename Gemm::ElementB));
  auto* C = corpus::fake_buffer<typename Gemm::ElementC>("C", mnl * sizeof(typename Gemm::ElementC));
  auto* D = corpus::fake_buffer<typename Gemm::ElementD>("D", mnl * sizeof(typename Gemm::ElementD));

  cutlass::KernelHardwareInfo hw_info;
  hw_info.device_id = 0;
  hw_info.sm_count = corpus::kSmCount;

  auto make_args = [=] {
    typename Gemm::Arguments arguments{
      cutlass::gemm::GemmUniversalMode::kGemm,
      problem_size,
      {A, stride_A, B, stride_B},
      {{}, C, stride_C, D, stride_D},
      hw_info
    };
    if constexpr (UseCustomEVT) {
      arguments.epilogue.thread =
        {
          {{options.beta}},
          {},
          {
            {{options.alpha}},
            {},
            {}
          },
          {}
        };
    }
    else {
      arguments.epilogue.thread.alpha = options.alpha;
      arguments.epilogue.thread.beta = options.beta;
    }
    return arguments;
  };

  corpus::Meta meta;
  meta.example = "49_hopper_gemm_with_collective_builder";
  meta.variant = variant;
  return corpus::emit<GemmKernel>(make_args, opt, meta);
}

// -DCORPUS_VARIANTS=MASK compiles only some kernels (1 coop, 2 pingpong, 4 coop_streamk, 8 coop_evt):
// the mutants build one kernel at a time.
#ifndef CORPUS_VARIANTS
#define CORPUS_VARIANTS 15
#endif

int main(int argc, char** argv) {
  corpus::Options opt = corpus::parse(argc, argv);
  if (opt.list) {
    if (CORPUS_VARIANTS & 1) std::puts("coop");
    if (CORPUS_VARIANTS & 2) std::puts("pingpong");
    if (CORPUS_VARIANTS & 4) std::puts("coop_streamk");
    if (CORPUS_VARIANTS & 8) std::puts("coop_evt");
    return 0;
  }
#if CORPUS_VARIANTS & 1
  if (opt.variant == "coop") return capture<RunnerCoop, false>(opt, "coop");
#endif
#if CORPUS_VARIANTS & 2
  if (opt.variant == "pingpong") return capture<RunnerPingpong, false>(opt, "pingpong");
#endif
#if CORPUS_VARIANTS & 4
  if (opt.variant == "coop_streamk") return capture<RunnerCoopStreamK, false>(opt, "coop_streamk");
#endif
#if CORPUS_VARIANTS & 8
  if (opt.variant == "coop_evt") return capture<RunnerCoopEvt, true>(opt, "coop_evt");
#endif
  corpus::die("--variant must be one of the kernels this build has (--list)");
}
