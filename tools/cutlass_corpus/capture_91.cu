// Launch capture for CUTLASS example 91_fp4_gemv (91_fp4_gemv.cu, from the nvidia-cutlass wheel): a
// CUTLASS 2.x-style SIMT GEMV, NVFP4 (e2m1) A (row-major, M x K) times an NVFP4 vector B, ue4m3 scale
// factors per 16 on both, D e2m1 with generated SFD (GemvEpilogueWithScalingFactor). No TMA, mbarrier or
// tcgen05: one CTA of 8 x 16 threads per 16 rows of A, a 4-stage x 2-buffer smem ring filled with
// cp.async. The example spells its types inside run_fp4_gemv_device(); corpus_91 spells the same ones.
//
// Not a GemmUniversal: device::GemvBlockScaled::run launches the plain __global__ cutlass::Kernel<
// GemvKernel>(Params) (not device_kernel), Params is Arguments (no to_underlying_arguments), grid and
// block come from the device adapter and the dynamic smem is sizeof(SharedStorage). So this TU writes
// its launch itself with capture_common.hpp's buffers, registration and JSON helpers (corpus::emit only
// knows device_kernel<GemmKernel>). Shape: M K L (L = the example's --batch).
#define main cutlass_example_main_unused_; template <class CorpusUnused_ = void> int cutlass_example_main
#include "91_fp4_gemv/91_fp4_gemv.cu"
#undef main

#include "capture_sm100.hpp"

namespace corpus_91 {
// run_fp4_gemv_device()'s types, verbatim
using ElementA = cutlass::float_e2m1_t;
using LayoutA = cutlass::layout::RowMajor;
using ElementB = cutlass::float_e2m1_t;
using ElementC = cutlass::float_e2m1_t;
using ElementD = cutlass::float_e2m1_t;
using LayoutD = cutlass::layout::ColumnMajor;
using ElementSFD = cutlass::float_e4m3_t;
using LayoutSFD = cutlass::layout::ColumnMajor;
using ElementAccumulatorMainloop = cutlass::half_t;
using ElementAccumulator = float;
using ElementCompute = float;
constexpr int kVectorSize = 16;
constexpr int kElementsPerAccess = 128 / cutlass::sizeof_bits<ElementA>::value;
using ThreadShape = cutlass::gemm::GemmShape<16, 8>;
using EpilogueOp = cutlass::epilogue::threadblock::GemvEpilogueWithScalingFactor<
    kVectorSize, ThreadShape, ElementCompute, ElementAccumulator, ElementC, ElementD, ElementSFD, LayoutD, LayoutSFD>;
using Gemv = cutlass::gemm::device::GemvBlockScaled<cutlass::gemm::kernel::GemvBlockScaled<
    ElementA, LayoutA, ElementB, ElementD, ElementAccumulatorMainloop, EpilogueOp, kElementsPerAccess>>;
using GemvKernel = Gemv::GemvKernel;
using Params = GemvKernel::Params;
using Testbed = TestbedGemvFp4SFD<Gemv>;

// The bytes of the Arguments the example's get_arguments() builds (Params is Arguments), with its
// buffers' sizes as initialize() allocates them. Built twice over storage filled with 0x00 and 0xff:
// bytes that differ are padding (written as 0 and counted, as corpus::emit does).
struct Built {
  std::vector<unsigned char> bytes;
  std::vector<size_t> indeterminate;
};

Built build_params(int M, int K, int L) {
  using SfAtom = Testbed::SfAtom_Input;
  using BlkMN = Testbed::Blk_MN_Input;
  using BlkSF = Testbed::Blk_SF_Input;
  const int N = 1;
  auto k_blks = cutlass::ceil_div(K, cute::size<1>(shape(SfAtom{})));
  auto m_blks = cutlass::ceil_div(M, BlkMN{});
  auto n_blks = cutlass::ceil_div(N, BlkMN{});
  int batch_stride_SFA = m_blks * BlkMN{} * k_blks * BlkSF{};
  int batch_stride_SFB = n_blks * BlkMN{} * k_blks * BlkSF{};
  auto sfd_layout = Testbed::Sm1xxBlockScaledOutputConfig::tile_atom_to_shape_SFD(cute::Shape<int, int, int, int>{M, N, K, L});
  int batch_stride_SFD = static_cast<int>(cute::get<1>(cute::stride<2>(sfd_layout)));
  uint64_t sfd_bytes = uint64_t(cute::size(cute::filter_zeros(sfd_layout)));

  auto fp4_bytes = [](uint64_t elements) { return cutlass::bits_to_bytes<uint64_t>(elements * 4); };
  auto* A = corpus::fake_buffer<ElementA>("A", fp4_bytes(uint64_t(L) * M * K));
  auto* B = corpus::fake_buffer<ElementB>("B", fp4_bytes(uint64_t(L) * K));
  auto* C = corpus::fake_buffer<ElementC>("C", fp4_bytes(uint64_t(L) * M));
  auto* D = corpus::fake_buffer<ElementD>("D", fp4_bytes(uint64_t(L) * M));
  auto* SFA = corpus::fake_buffer<GemvKernel::ElementSFA>("SFA", uint64_t(batch_stride_SFA) * L);
  auto* SFB = corpus::fake_buffer<GemvKernel::ElementSFB>("SFB", uint64_t(batch_stride_SFB) * L);
  auto* SFD = corpus::fake_buffer<ElementSFD>("SFD", sfd_bytes);

  ::Options options;  // the example's defaults: alpha 1, beta 0; epilogue_st is rand()-based there, 1 here
  auto make_args = [&] {
    return Gemv::Arguments{
        cutlass::MatrixCoord{M, K},
        L,
        EpilogueOp::Params{
            EpilogueOp::TensorRefD(D, LayoutD::packed({L * M, 1})),  // tensor_D.device_ref()
            SFD, options.alpha, options.beta, 1.0f, batch_stride_SFD, M},
        GemvKernel::TensorRefA(A, LayoutA::packed({L * M, K})),     // tensor_A.device_ref()
        B, C, D, SFA, SFB,
        K, int64_t(M) * K, K, M, M, batch_stride_SFA, batch_stride_SFB, batch_stride_SFD};
  };
  if (Gemv::can_implement(make_args()) != cutlass::Status::kSuccess)
    corpus::die("GemvBlockScaled::can_implement rejects this problem (K must be a multiple of 32)");
  alignas(Params) static unsigned char passes[2][sizeof(Params)];
  for (int pass = 0; pass < 2; ++pass) {
    std::memset(passes[pass], pass ? 0xff : 0x00, sizeof(Params));
    new (passes[pass]) Params(make_args());
  }
  Built built{std::vector<unsigned char>(passes[0], passes[0] + sizeof(Params)), {}};
  for (size_t i = 0; i < sizeof(Params); ++i)
    if (passes[0][i] != passes[1][i]) { built.bytes[i] = 0; built.indeterminate.push_back(i); }
  return built;
}

// The .entry nvcc registered for cutlass::Kernel<GemvKernel>'s host stub (corpus::find_entry's lookup,
// for the plain kernel template), checked against the PTX.
std::string find_gemv_entry(const std::string& ptx_path) {
  const void* stub = reinterpret_cast<const void*>(&cutlass::Kernel<GemvKernel>);
  std::string name;
  for (auto const& r : corpus::registered())
    if (r.host_fun == stub) name = r.device_name;
  if (name.empty()) corpus::die("cutlass::Kernel<GemvKernel> was not registered (capture must link -cudart shared)");
  if (!ptx_path.empty()) {
    std::ifstream in(ptx_path);
    std::stringstream text;
    text << in.rdbuf();
    if (!in || text.str().find(".entry " + name + "(") == std::string::npos)
      corpus::die(".entry " + name.substr(0, 80) + "... is not in " + ptx_path);
  }
  return name;
}

int capture(corpus::Options const& opt) {
  const int M = opt.dims[0], K = opt.dims[1], L = opt.dims[2];
  if (L > 65535) corpus::die("the grid's z is the batch count (at most 65535)");
  Built built = build_params(M, K, L);
  const dim3 block = Gemv::get_block_shape();
  Params const* params = reinterpret_cast<Params const*>(built.bytes.data());
  const dim3 grid = Gemv::get_grid_shape(*params, block);
  const uint64_t smem = sizeof(GemvKernel::SharedStorage);
  const std::string entry = find_gemv_entry(opt.ptx);

  std::ostringstream j;
  j << "{\n  \"entry\": " << corpus::json_str(entry) << ",\n  \"arch\": \"" << corpus::kArch << "\",\n";
  j << "  \"grid\": [" << grid.x << ", " << grid.y << ", " << grid.z << "],\n";
  j << "  \"block\": [" << block.x << ", " << block.y << ", " << block.z << "],\n";
  j << "  \"cluster\": [1, 1, 1],\n  \"dynamic_smem\": " << smem << ",\n  \"buffers\": [";
  auto const& bufs = corpus::buffers();
  for (size_t i = 0; i < bufs.size(); ++i)
    j << (i ? ",\n" : "\n") << "    {\"name\": " << corpus::json_str(bufs[i].name) << ", \"bytes\": " << bufs[i].bytes
      << ", \"address\": \"" << corpus::hex64(bufs[i].address) << "\"}";
  j << "\n  ],\n  \"tensormaps\": [],\n  \"params\": [{\"index\": 0, \"hex\": \"";
  static const char* digits = "0123456789abcdef";
  for (unsigned char b : built.bytes) j << digits[b >> 4] << digits[b & 15];
  j << "\"}]\n}\n";
  std::fwrite(j.str().data(), 1, j.str().size(), stdout);
  std::fflush(stdout);

  if (!opt.meta.empty()) {
    std::string indeterminate;
    for (size_t i = 0; i < built.indeterminate.size(); ++i)
      indeterminate += (i ? ", " : "") + std::to_string(built.indeterminate[i]);
    std::ofstream mf(opt.meta);
    // tile: rows of A per CTA (threadIdx.y) x 1 x K elements per CTA-wide step (threadIdx.x x 32)
    mf << "{\"example\": \"91_fp4_gemv\", \"variant\": \"nvfp4\", \"schedule\": \"SIMT GEMV (cutlass::Kernel, "
          "cp.async ring)\", \"tile_scheduler\": \"\", \"stages\": " << GemvKernel::kStageCount
       << ", \"tile\": [" << GemvKernel::kThreadsPerCol << ", 1, " << GemvKernel::kThreadsPerRow * kElementsPerAccess
       << "], \"problem\": [" << M << ", " << K << ", " << L << "], \"workspace_bytes\": 0, \"params_bytes\": "
       << sizeof(Params) << ", \"indeterminate_bytes\": " << built.indeterminate.size() << ", \"indeterminate\": ["
       << indeterminate << "], \"tensormaps\": 0, \"entry\": " << corpus::json_str(entry) << "}\n";
    if (!mf) corpus::die("cannot write " + opt.meta);
  }
  return 0;
}
}  // namespace corpus_91

int main(int argc, char** argv) {
  corpus::Options opt = corpus::parse(argc, argv, "M K L");
  if (opt.list) { std::puts("nvfp4"); return 0; }
  if (opt.variant != "nvfp4") corpus::die("--variant must be nvfp4");
  return corpus_91::capture(opt);
}
