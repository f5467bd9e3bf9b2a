// Launch capture for the seed's CUTLASS baseline (seed 001, section 4.2): NVFP4 x NVFP4 block-scaled GEMM
// (A, B nv_float4_t<e2m1> with ue4m3 scale factors per 16 elements, f32 accumulate, f16 D, no C) in the three
// tile configurations the seed timed on a B200 at its four production shapes: 1-SM 128x256, 2-SM 256x128
// and 2-SM 256x256 (cluster 2x1), K tile 256. The seed's numbers come from the CuTe DSL example
// dense_blockscaled_gemm_persistent.py; this is CUTLASS C++'s kernel for the same operation (the
// builder's Nvf4 schedules, as example 72 uses them), built from the nvidia-cutlass wheel's headers.
// See capture_common.hpp and capture_sm100.hpp.
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/detail/sm100_blockscaled_layout.hpp"

#include "capture_sm100.hpp"

using namespace cute;

namespace {

using ElementA = cutlass::nv_float4_t<cutlass::float_e2m1_t>;
using ElementB = cutlass::nv_float4_t<cutlass::float_e2m1_t>;
using ElementD = cutlass::half_t;

template <class MmaTile, class Cluster, class MainloopSchedule, class EpilogueSchedule>
struct SeedGemm {
  using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm100, cutlass::arch::OpClassBlockScaledTensorOp, MmaTile, Cluster,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float,
      void, cutlass::layout::RowMajor, 8,       // no C
      ElementD, cutlass::layout::RowMajor, 8,   // f16 D, 16-byte accesses
      EpilogueSchedule>::CollectiveOp;
  using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm100, cutlass::arch::OpClassBlockScaledTensorOp,
      ElementA, cutlass::layout::RowMajor, 32, ElementB, cutlass::layout::ColumnMajor, 32, float, MmaTile, Cluster,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epilogue::SharedStorage))>,
      MainloopSchedule>::CollectiveOp;
  using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Mainloop, Epilogue, void>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
};

using Gemm1Sm128x256 = SeedGemm<Shape<_128, _256, _256>, Shape<_1, _1, _1>, cutlass::gemm::KernelTmaWarpSpecialized1SmNvf4Sm100,
                                cutlass::epilogue::TmaWarpSpecialized1Sm>::Gemm;
using Gemm2Sm256x128 = SeedGemm<Shape<_256, _128, _256>, Shape<_2, _1, _1>, cutlass::gemm::KernelTmaWarpSpecialized2SmNvf4Sm100,
                                cutlass::epilogue::TmaWarpSpecialized2Sm>::Gemm;
using Gemm2Sm256x256 = SeedGemm<Shape<_256, _256, _256>, Shape<_2, _1, _1>, cutlass::gemm::KernelTmaWarpSpecialized2SmNvf4Sm100,
                                cutlass::epilogue::TmaWarpSpecialized2Sm>::Gemm;

// Bytes of `count` elements of T (sub-byte types packed).
template <class T>
uint64_t bytes_of(uint64_t count) {
  return (count * cutlass::sizeof_bits<T>::value + 7) / 8;
}

template <class Gemm>
int capture(corpus::Options const& opt, const char* variant) {
  using Kernel = typename Gemm::GemmKernel;
  using Config = typename Kernel::CollectiveMainloop::Sm1xxBlkScaledConfig;
  const int M = opt.m, N = opt.n, K = opt.k;
  auto sA = cutlass::make_cute_packed_stride(typename Kernel::StrideA{}, {M, K, 1});
  auto sB = cutlass::make_cute_packed_stride(typename Kernel::StrideB{}, {N, K, 1});
  auto sC = cutlass::make_cute_packed_stride(typename Kernel::StrideC{}, {M, N, 1});
  auto sD = cutlass::make_cute_packed_stride(typename Kernel::StrideD{}, {M, N, 1});
  auto lSFA = Config::tile_atom_to_shape_SFA(cute::make_shape(M, N, K, 1));
  auto lSFB = Config::tile_atom_to_shape_SFB(cute::make_shape(M, N, K, 1));
  using DataA = ElementA::DataType;
  using DataB = ElementB::DataType;
  using Scale = ElementA::ScaleFactorType;
  const uint64_t mk = uint64_t(M) * K, kn = uint64_t(K) * N, mn = uint64_t(M) * N;
  auto* A = corpus::fake_buffer<DataA>("A", bytes_of<DataA>(mk));
  auto* B = corpus::fake_buffer<DataB>("B", bytes_of<DataB>(kn));
  auto* SFA = corpus::fake_buffer<Scale>("SFA", bytes_of<Scale>(size(filter_zeros(lSFA))));
  auto* SFB = corpus::fake_buffer<Scale>("SFB", bytes_of<Scale>(size(filter_zeros(lSFB))));
  auto* D = corpus::fake_buffer<ElementD>("D", bytes_of<ElementD>(mn));
  auto make_args = [=] {
    typename Gemm::Arguments arguments{cutlass::gemm::GemmUniversalMode::kGemm,
                                       {M, N, K, 1},
                                       {A, sA, B, sB, SFA, lSFA, SFB, lSFB},
                                       {{1.f, 0.f}, nullptr, sC, D, sD}};
    arguments.hw_info.device_id = 0;
    arguments.hw_info.sm_count = corpus::kSmCount;
    return arguments;
  };
  corpus::Meta meta;
  meta.example = "72_blackwell_nvfp4_seed_tiles";
  meta.variant = variant;
  return corpus::emit<Kernel>(make_args, opt, meta);
}

}  // namespace

int main(int argc, char** argv) {
  corpus::Options opt = corpus::parse(argc, argv);
  if (opt.list) {
    std::puts("1sm_128x256 2sm_256x128 2sm_256x256");
    return 0;
  }
  if (opt.l != 1) corpus::die("the seed's GEMMs have a rank-3 problem (their L is 1)");
  if (opt.variant == "1sm_128x256") return capture<Gemm1Sm128x256>(opt, "1sm_128x256");
  if (opt.variant == "2sm_256x128") return capture<Gemm2Sm256x128>(opt, "2sm_256x128");
  if (opt.variant == "2sm_256x256") return capture<Gemm2Sm256x256>(opt, "2sm_256x256");
  corpus::die("unknown variant " + opt.variant);
}
