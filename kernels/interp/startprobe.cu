// What the first stages of a GEMM cost when every SM starts at once (issue 21). The CUTLASS rows at
// M=N=2048 on 132 CTAs spend 1.7-2.3 us between the producer's first copy and the consumers' first
// wgmma (docs/runs/stamps-h100-2026-11-27.txt), where the model spends 0.72; on 16 CTAs 0.96. Two
// questions, asked apart:
//   tma: each CTA's lane 0 issues `stages` stages of an A box and a B box (2-D tensor maps, fp16,
//        64 x 128 elements, 128-byte swizzle: CUTLASS 49's boxes) back to back, then the warp waits
//        for each stage. Printed per configuration (medians and maxima over CTAs, ns of %globaltimer):
//        issue (the lane's time to issue every stage), stage 0 and the last stage landed, from the
//        first issue. Configurations: grid 16 / 66 / 132; which boxes (gemm: tile t = blockIdx.x,
//        m = t % 16, n = t / 16, so several CTAs read each box as a 2048 x 2048 GEMM's do; distinct:
//        no two CTAs read the same box; same: every CTA reads box (0, 0)); the L2 warm (the same
//        launch ran just before) or cold (256 MiB written in between); the tensor maps the kernel's
//        parameters (one copy for all) or a copy per CTA in global memory; with or without
//        prefetch.tensormap first (CUTLASS prefetches its descriptors at the kernel's start); the L2
//        promotion 256 B or none. Then on 132 CTAs with CUTLASS's 128-byte promotion, rows 768, 4096
//        (CUTLASS's 2048 x 2048 x 2048) and 4224 B apart. Then 132 CTAs whose boxes are each read by
//        1, 2, 4 ... 132 of them at once (how the L2's rate grows with the readers of a line).
//   mma: each CTA's warpgroup issues one k-block of wgmma (4 x m64n256k16) from shared memory,
//        commits and waits, three times; printed per grid: each round's issue-to-wait time (is the
//        tensor pipe's first use slower, and more so when every SM starts at once?).
//   fence (`startprobe fence` runs these three alone): in CUTLASS 49 and 54 the consumers' first
//        wgmma.fence returns 1.0-1.3 us after their first stage lands (crosscheck --stamps), later
//        ones within 0.1 us. Three reductions of that moment:
//        consume: a producer warp issues 1, 2 or 6 stages at once; one or two warpgroups wait for each,
//                 fence, run its wgmma; stamps kept in registers or stored as taken;
//        regs: three warpgroups with and without CUTLASS's setmaxnreg hand-over, then fence and wgmma;
//        overlap: a warpgroup's wgmma rounds while another warp loads stages into the same shared
//                 memory, each alone and both together (does the landing slow the tensor pipe?).
//   nvcc -std=c++20 -O3 -I. -gencode arch=compute_90a,code=sm_90a kernels/interp/startprobe.cu -lcuda -o startprobe && ./startprobe [fence]
#include <cuda.h>
#include <cuda/ptx>

#include <chrono>
#include <string_view>

#include "kernels/interp/probe.cuh"
#include "kernels/interp/wgmma.cuh"

namespace ptx = cuda::ptx;
using namespace wgmma_probe;

namespace {

constexpr int kBoxRows = 128, kBoxCols = 64;                        // fp16: 128 B x 128 rows
constexpr uint32_t kBoxBytes = kBoxRows * kBoxCols * 2;             // 16 KiB
constexpr int kMaxStages = 6;                                       // 6 x 32 KiB
constexpr int kMaxCtas = 132;
constexpr int kRows = kMaxCtas * kBoxRows;                          // A and B: 16896 rows of fp16
constexpr int kCols = kMaxStages * kBoxCols;                        // 384 (768-byte rows), unless a row says
constexpr int kMaxCols = 2112;                                      // the widest row stride asked (4224 B)
constexpr int kTmaStamps = 3 + kMaxStages;                          // start, first issue, issued, landings

// kShared: CTA t reads box t / share (its A and its B): each box read by `share` CTAs at once.
enum Boxes { kGemm = 0, kDistinct = 1, kSame = 2, kShared = 3 };
constexpr const char* kBoxesName[] = {"gemm", "distinct", "same", "shared"};

__device__ __forceinline__ void prefetch_map(const CUtensorMap* m) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(m) : "memory");
}

__global__ void __launch_bounds__(32) first_stages(const __grid_constant__ CUtensorMap a_param,
                                                   const __grid_constant__ CUtensorMap b_param,
                                                   const CUtensorMap* per_cta_maps, int boxes, int stages, int prefetch,
                                                   int share, uint64_t* out) {
  extern __shared__ __align__(1024) uint8_t smem[];
  __shared__ __align__(8) uint64_t full[kMaxStages];
  const int lane = threadIdx.x & 31;
  uint64_t* o = out + size_t(blockIdx.x) * kTmaStamps;
  const CUtensorMap* a = per_cta_maps ? per_cta_maps + 2 * blockIdx.x : &a_param;
  const CUtensorMap* b = per_cta_maps ? per_cta_maps + 2 * blockIdx.x + 1 : &b_param;
  if (lane == 0) {
    o[0] = gt();
    if (prefetch) prefetch_map(a), prefetch_map(b);
    for (int s = 0; s < stages; ++s) ptx::mbarrier_init(&full[s], 1u);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
    const int t = int(blockIdx.x);
    const int m = boxes == kGemm ? t % 16 : boxes == kDistinct ? t : boxes == kShared ? t / share : 0;
    const int n = boxes == kGemm ? t / 16 : boxes == kDistinct ? t : boxes == kShared ? t / share : 0;
    o[1] = gt();
    for (int s = 0; s < stages; ++s) {
      (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full[s], 2 * kBoxBytes);
      const int32_t a_at[2] = {s * kBoxCols, m * kBoxRows}, b_at[2] = {s * kBoxCols, n * kBoxRows};
      ptx::cp_async_bulk_tensor(ptx::space_cluster, ptx::space_global, smem + size_t(s) * 2 * kBoxBytes, a, a_at, &full[s]);
      ptx::cp_async_bulk_tensor(ptx::space_cluster, ptx::space_global, smem + size_t(s) * 2 * kBoxBytes + kBoxBytes, b, b_at,
                                &full[s]);
    }
    o[2] = gt();
  }
  __syncwarp();
  for (int s = 0; s < stages; ++s) {
    while (!ptx::mbarrier_try_wait_parity(&full[s], 0u)) {
    }
    if (lane == 0) o[3 + s] = gt();
  }
}

// --- mma: one k-block of a 128 x 256 tile's half (4 x m64n256k16), three rounds, thread 0's %globaltimer.
constexpr int kMmaRounds = 3;
__global__ void __launch_bounds__(128) first_mma(uint64_t* out) {
  extern __shared__ __align__(1024) uint8_t smem[];
  uint32_t d[64] = {};
  const uint64_t da = desc(smem), db = desc(smem + 8192);
  uint64_t t[kMmaRounds + 1];
  __syncthreads();
  t[0] = gt();
#pragma unroll
  for (int r = 0; r < kMmaRounds; ++r) {
    kblock_n256(d, da, db);
    t[r + 1] = gt();
  }
  if (threadIdx.x == 0)
    for (int r = 0; r <= kMmaRounds; ++r) out[size_t(blockIdx.x) * (kMmaRounds + 1) + r] = t[r];
  keep_live(d, out);
}

// --- overlap: does the TMA's landing slow the tensor pipe (and the other way round)? Warps 0-3 (a
// warpgroup) run kOverlapRounds k-blocks of wgmma as first_mma does, out of the first 64 KiB of shared
// memory; warp 4's lane 0 meanwhile loads kOverlapBatches batches of 4 stages (an A and a B box each,
// 128 KiB a batch, GEMM-shared boxes as `gemm` above) into the next 128 KiB and waits for each batch.
// `what`: 1 wgmma only, 2 TMA only, 3 both. Stamps per CTA: wgmma start and rounds, TMA start and batches.
constexpr int kOverlapRounds = 8, kOverlapBatches = 4, kOverlapStamps = 2 + kOverlapRounds + kOverlapBatches;
__global__ void __launch_bounds__(160) overlap(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                                               int what, uint64_t* out) {
  extern __shared__ __align__(1024) uint8_t smem[];
  __shared__ __align__(8) uint64_t full[4];
  uint64_t* o = out + size_t(blockIdx.x) * kOverlapStamps;
  if (threadIdx.x == 128) {
    for (int s = 0; s < 4; ++s) ptx::mbarrier_init(&full[s], 1u);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncthreads();
  if (threadIdx.x < 128) {
    if (!(what & 1)) return;
    uint32_t d[64] = {};
    const uint64_t da = desc(smem), db = desc(smem + 8192);
    uint64_t t[kOverlapRounds + 1];
    t[0] = gt();
#pragma unroll 1
    for (int r = 0; r < kOverlapRounds; ++r) {
      kblock_n256(d, da, db);
      t[r + 1] = gt();
    }
    if (threadIdx.x == 0)
      for (int r = 0; r <= kOverlapRounds; ++r) o[r] = t[r];
    keep_live(d, o);
    return;
  }
  if (!(what & 2) || (threadIdx.x & 31) != 0) return;
  const int t = int(blockIdx.x), m = t % 16, n = t / 16;
  uint8_t* stage = smem + 64 * 1024;
  o[kOverlapRounds + 1] = gt();
  for (int b = 0; b < kOverlapBatches; ++b) {
    for (int s = 0; s < 4; ++s) {
      (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full[s], 2 * kBoxBytes);
      const int32_t a_at[2] = {((b * 4 + s) % kMaxStages) * kBoxCols, m * kBoxRows}, b_at[2] = {((b * 4 + s) % kMaxStages) * kBoxCols, n * kBoxRows};
      ptx::cp_async_bulk_tensor(ptx::space_cluster, ptx::space_global, stage + size_t(s) * 2 * kBoxBytes, &a_map, a_at, &full[s]);
      ptx::cp_async_bulk_tensor(ptx::space_cluster, ptx::space_global, stage + size_t(s) * 2 * kBoxBytes + kBoxBytes, &b_map, b_at, &full[s]);
    }
    for (int s = 0; s < 4; ++s)
      while (!ptx::mbarrier_try_wait_parity(&full[s], uint32_t(b & 1))) {
      }
    o[kOverlapRounds + 2 + b] = gt();
  }
}

// --- regs: the first wgmma.fence after CUTLASS's register hand-over. Three warpgroups, as CUTLASS's
// cooperative kernels run: with `handover`, warpgroup 0 gives registers back (setmaxnreg.dec 40) and
// warpgroups 1 and 2 take them (setmaxnreg.inc 232); then each of 1 and 2 stamps its way through two
// k-blocks of wgmma: before and after the fence, after the wait. Stamps per CTA: 2 warpgroups x 6.
constexpr int kRegsStamps = 12;
__global__ void __launch_bounds__(384, 1) regs(int handover, uint64_t* out) {
  extern __shared__ __align__(1024) uint8_t smem[];
  const int wg = int(threadIdx.x / 128);
  if (wg == 0) {
    if (handover) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
    return;
  }
  if (handover) asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
  uint32_t d[64] = {};
  const uint64_t da = desc(smem), db = desc(smem + 8192);
  uint64_t t[6];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    t[3 * r] = gt();
    pin(d);
    fence();
    t[3 * r + 1] = gt();
#pragma unroll
    for (int k = 0; k < 4; ++k) mma_n256_f16(d, da + 2 * k, db + 2 * k);
    commit();
    wait<0>();
    pin(d);
    t[3 * r + 2] = gt();
  }
  if (threadIdx.x % 128 == 0)
    for (int i = 0; i < 6; ++i) out[size_t(blockIdx.x) * kRegsStamps + (wg - 1) * 6 + i] = t[i];
  keep_live(d, out);
}

// --- consume: CUTLASS's first k-blocks, reduced. `wgs` consumer warpgroups (1, or 2 as CUTLASS's
// cooperative kernels run, both on the same stages) and a producer warp after them, whose lane 0
// issues `stages` stages (an A and a B box each, GEMM-shared boxes, warm L2) at once; the warpgroups
// then, per stage, wait for it, fence, run 4 x wgmma m64n128k16 out of it, commit and wait. `variant`:
// kInOrder as said; kAllFirst, the warpgroups first wait for every stage to land; kStampsStored, each
// warp's lane 0 stores its pass stamp to global memory at once (as crosscheck --stamps does). Stamps
// per CTA and stage: the wait passed, the fence returned, the wgmma done.
// `preload` (CUTLASS's consumers load the epilogue's alpha and beta before their mainloop, from the
// kernel's parameters or through a pointer, and use them only after it): 1, the warpgroup reads a float
// of a large parameter block first; 2, a float from global memory.
constexpr int kConsumeStages = 6, kConsumeStamps = 3 * kConsumeStages;
enum ConsumeVariant { kInOrder = 0, kAllFirst = 1, kStampsStored = 2 };  // printed as these numbers
struct BigParams {
  float f[512];  // 2 KiB, as CUTLASS's Params
};
__global__ void __launch_bounds__(288) consume(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                                               int stages, int variant, int wgs, int preload, const __grid_constant__ BigParams big,
                                               const float* scalar, uint64_t* out) {
  extern __shared__ __align__(1024) uint8_t smem[];
  __shared__ __align__(8) uint64_t full[kConsumeStages];
  uint64_t* o = out + size_t(blockIdx.x) * kConsumeStamps;
  const unsigned producer = 128u * unsigned(wgs);
  if (threadIdx.x == producer) {
    for (int st = 0; st < kConsumeStages; ++st) ptx::mbarrier_init(&full[st], 1u);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncthreads();
  if (threadIdx.x >= producer) {
    if (threadIdx.x != producer) return;
    const int t = int(blockIdx.x), m = t % 16, n = t / 16;
    for (int st = 0; st < stages; ++st) {
      (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full[st], 2 * kBoxBytes);
      const int32_t a_at[2] = {st * kBoxCols, m * kBoxRows}, b_at[2] = {st * kBoxCols, n * kBoxRows};
      ptx::cp_async_bulk_tensor(ptx::space_cluster, ptx::space_global, smem + size_t(st) * 2 * kBoxBytes, &a_map, a_at, &full[st]);
      ptx::cp_async_bulk_tensor(ptx::space_cluster, ptx::space_global, smem + size_t(st) * 2 * kBoxBytes + kBoxBytes, &b_map, b_at, &full[st]);
    }
    return;
  }
  float alpha = 1.0f;
  // In asm, so that the load stays where CUTLASS has it (before the waits), not sunk to its use.
  if (preload == 1) asm volatile("ld.f32 %0, [%1];" : "=f"(alpha) : "l"(&big.f[400]));
  if (preload == 2) asm volatile("ld.global.f32 %0, [%1];" : "=f"(alpha) : "l"(scalar));
  if (variant == kAllFirst)
    for (int st = 0; st < stages; ++st)
      while (!ptx::mbarrier_try_wait_parity(&full[st], 0u)) {
      }
  uint32_t d[64] = {};
  uint64_t t[kConsumeStamps];
#pragma unroll 1
  for (int st = 0; st < stages; ++st) {
    while (!ptx::mbarrier_try_wait_parity(&full[st], 0u)) {
    }
    t[3 * st] = gt();
    if (variant == kStampsStored && threadIdx.x % 32 == 0) o[3 * st] = t[3 * st];  // stored as taken, as crosscheck --stamps does
    pin(d);
    fence();
    t[3 * st + 1] = gt();
    const uint64_t da = desc(smem + size_t(st) * 2 * kBoxBytes), db = desc(smem + size_t(st) * 2 * kBoxBytes + kBoxBytes);
#pragma unroll
    for (int k = 0; k < 4; ++k) mma_n128_f16(d, da + 2 * k, db + 2 * k);
    commit();
    wait<0>();
    pin(d);
    t[3 * st + 2] = gt();
  }
  if (threadIdx.x == 0)
    for (int i = 0; i < 3 * stages; ++i) o[i] = t[i];
  keep_live(d, o);
  if (alpha == 3.5f) o[0] = 0;  // keeps the preloaded value live
}

CUtensorMap encode(void* base, CUtensorMapL2promotion promotion, int cols = kCols) {
  CUtensorMap map;
  const cuuint64_t dims[2] = {cuuint64_t(cols), kRows}, strides[1] = {cuuint64_t(cols) * 2};
  const cuuint32_t box[2] = {kBoxCols, kBoxRows}, elem[2] = {1, 1};
  CU(cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, base, dims, strides, box, elem,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, promotion,
                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  return map;
}

struct Stat {
  double med, max;
};
Stat stat(std::vector<double> v) { return {median(v), v.empty() ? 0 : *std::max_element(v.begin(), v.end())}; }

}  // namespace

int main(int argc, char** argv) {
  // `startprobe fence`: the sections about the first wgmma (consume, regs, overlap) alone.
  const bool only_first_mma = argc > 1 && std::string_view(argv[1]) == "fence";
  uint8_t *a = nullptr, *b = nullptr, *scratch = nullptr;
  uint64_t* out = nullptr;
  CUtensorMap* maps = nullptr;
  const size_t bytes = size_t(kRows) * kMaxCols * 2;
  const size_t scratch_bytes = size_t(256) << 20;
  CK(cudaMalloc(&a, bytes));
  CK(cudaMalloc(&b, bytes));
  CK(cudaMalloc(&scratch, scratch_bytes));
  CK(cudaMemset(a, 1, bytes));
  CK(cudaMemset(b, 2, bytes));
  CK(cudaMalloc(&out, sizeof(uint64_t) * kMaxCtas * std::max({kTmaStamps, kOverlapStamps, kRegsStamps, kConsumeStamps})));
  CK(cudaMalloc(&maps, sizeof(CUtensorMap) * 2 * kMaxCtas));
  // L2 promotion: what the L2 fetches from the DRAM per request (256 B: a box row here is 128 B, so a
  // miss also brings in the next k-block's row; CUTLASS's maps ask for 128 B, the row-stride rows).
  const CUtensorMap a256 = encode(a, CU_TENSOR_MAP_L2_PROMOTION_L2_256B), b256 = encode(b, CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
  const CUtensorMap a_none = encode(a, CU_TENSOR_MAP_L2_PROMOTION_NONE), b_none = encode(b, CU_TENSOR_MAP_L2_PROMOTION_NONE);
  std::vector<CUtensorMap> host_maps(2 * kMaxCtas);
  for (int i = 0; i < kMaxCtas; ++i) host_maps[2 * size_t(i)] = a256, host_maps[2 * size_t(i) + 1] = b256;
  CK(cudaMemcpy(maps, host_maps.data(), sizeof(CUtensorMap) * host_maps.size(), cudaMemcpyHostToDevice));
  const int smem = kMaxStages * 2 * kBoxBytes;
  CK(cudaFuncSetAttribute(first_stages, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CK(cudaFuncSetAttribute(first_mma, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024));

  // One configuration: 5 launches after a warm-up (which, for a warm L2, is what fills it), one row.
  auto measure = [&](int ctas, int boxes, int cold, int per_cta, int prefetch, const char* promo, int stages, const CUtensorMap& a_map,
                     const CUtensorMap& b_map, const char* label = "", int share = 1) {
    std::vector<double> pre, issue, first, last;
    for (int rep = 0; rep < 6; ++rep) {
      if (cold) CK(cudaMemset(scratch, rep, scratch_bytes));
      CK(cudaMemset(out, 0, sizeof(uint64_t) * kMaxCtas * kTmaStamps));
      first_stages<<<ctas, 32, smem>>>(a_map, b_map, per_cta ? maps : nullptr, boxes, stages, prefetch, share, out);
      CK(cudaGetLastError());
      CK(cudaDeviceSynchronize());
      if (rep == 0) continue;
      std::vector<uint64_t> h(size_t(ctas) * kTmaStamps);
      CK(cudaMemcpy(h.data(), out, h.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost));
      for (int c = 0; c < ctas; ++c) {
        const uint64_t* t = h.data() + size_t(c) * kTmaStamps;
        pre.push_back(double(t[1] - t[0]));
        issue.push_back(double(t[2] - t[1]));
        first.push_back(double(t[3] - t[1]));
        last.push_back(double(t[2 + stages] - t[1]));
      }
    }
    const Stat p = stat(pre), i = stat(issue), f = stat(first), l = stat(last);
    std::printf("%5d %9s %5s %8s %8d %5s %6d %6.0f / %5.0f %6.0f / %5.0f %6.0f / %5.0f %6.0f / %5.0f%s\n", ctas, kBoxesName[boxes],
                cold ? "cold" : "warm", per_cta ? "per-CTA" : "param", prefetch, promo, stages, p.med, p.max, i.med, i.max, f.med, f.max,
                l.med, l.max, label);
  };
  if (!only_first_mma) {
    std::printf("== startprobe tma: lane 0 issues `stages` x (A box + B box, 16 KiB each, tensor maps), the warp waits each;\n"
                "   ns of %%globaltimer from the CTA's first issue, median / max over CTAs (5 launches pooled)\n");
    std::printf("%5s %9s %5s %8s %8s %5s %6s %14s %14s %14s %14s\n", "CTAs", "boxes", "L2", "maps", "prefetch", "promo", "stages",
                "start->issue", "issue", "stage 0", "last stage");
    for (int stages : {1, 4})
      for (int ctas : {16, 66, 132})
        for (int boxes : {kGemm, kDistinct, kSame})
          for (int cold : {0, 1})
            for (int per_cta : {0, 1})
              for (int prefetch : {0, 1})
                for (int promote : {1, 0}) {
                // the descriptor questions on the GEMM's boxes with CUTLASS's promotion only
                if ((boxes != kGemm || !promote) && (per_cta || prefetch)) continue;
                const CUtensorMap& a_map = promote ? a256 : a_none;
                const CUtensorMap& b_map = promote ? b256 : b_none;
                measure(ctas, boxes, cold, per_cta, prefetch, promote ? "256" : "none", stages, a_map, b_map);
              }

    // Row strides: CUTLASS's 2048 x 2048 x 2048 rows are 4096 B apart (128-byte promotion, its maps'),
    // these probes' 768 B; 4224 B is 4096 padded by one 128-byte line.
    std::printf("\n== startprobe tma, row strides: 132 CTAs, 128-byte promotion (CUTLASS's maps), the L2 cold or warm\n");
    for (int cols : {kCols, 2048, 2112}) {
      const CUtensorMap a128 = encode(a, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, cols), b128 = encode(b, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, cols);
      char label[64];
      std::snprintf(label, sizeof label, "   rows %d B apart", cols * 2);
      for (int stages : {1, 4})
        for (int boxes : {kGemm, kDistinct})
          for (int cold : {0, 1}) measure(132, boxes, cold, 0, 0, "128", stages, a128, b128, label);
    }

    // How the L2's rate grows with the readers of each line: 132 CTAs, each box read by `share` of them
    // at once (CTA t reads box t / share), 4 stages, no promotion; `last stage` over 132 x 128 KiB.
    std::printf("\n== startprobe tma, readers per box: 132 CTAs, 4 stages, CTA t reads box t / share\n");
    for (int share : {1, 2, 4, 8, 16, 33, 66, 132}) {
      char label[64];
      std::snprintf(label, sizeof label, "   %3d readers a box", share);
      for (int cold : {0, 1}) measure(132, kShared, cold, 0, 0, "none", 4, a_none, b_none, label, share);
    }

    std::printf("\n== startprobe mma: one warpgroup per CTA, rounds of one k-block (4 x wgmma m64n256k16, commit, wait 0);\n"
                "   ns of %%globaltimer per round, median / max over CTAs (5 launches pooled; 'idle' rows: 200 ms of no work before each launch)\n");
    std::printf("%5s %5s %14s %14s %14s\n", "CTAs", "idle", "round 1", "round 2", "round 3");
    for (int idle : {0, 1})
      for (int ctas : {1, 16, 66, 132}) {
        std::vector<double> r[kMmaRounds];
        for (int rep = 0; rep < 6; ++rep) {
          if (idle) {
            CK(cudaDeviceSynchronize());
            const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
            while (std::chrono::steady_clock::now() < until) {
            }
          }
          first_mma<<<ctas, 128, 64 * 1024>>>(out);
          CK(cudaGetLastError());
          CK(cudaDeviceSynchronize());
          if (rep == 0) continue;
          std::vector<uint64_t> h(size_t(ctas) * (kMmaRounds + 1));
          CK(cudaMemcpy(h.data(), out, h.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost));
          for (int c = 0; c < ctas; ++c)
            for (int k = 0; k < kMmaRounds; ++k) r[k].push_back(double(h[size_t(c) * (kMmaRounds + 1) + k + 1] - h[size_t(c) * (kMmaRounds + 1) + k]));
        }
        const Stat s1 = stat(r[0]), s2 = stat(r[1]), s3 = stat(r[2]);
        std::printf("%5d %5d %6.0f / %5.0f %6.0f / %5.0f %6.0f / %5.0f\n", ctas, idle, s1.med, s1.max, s2.med, s2.max, s3.med, s3.max);
      }

  }
  std::printf("\n== startprobe consume: a producer warp issues `stages` stages of GEMM boxes at once (warm L2); WGs warpgroups wait\n"
              "   for each, fence, run 4 x wgmma m64n128k16 out of it, waits; variant 1: they first wait for every stage, 2: stamps stored as taken. ns of %%globaltimer\n"
              "   from the first stage's pass, median / max over CTAs (5 launches pooled)\n");
  std::printf("%7s %3s %5s %6s %9s %14s %14s %14s %14s %14s\n", "preload", "WGs", "CTAs", "stages", "variant", "fence 1", "wgmma 1", "pass 2", "fence 2", "last done");
  CK(cudaFuncSetAttribute(consume, cudaFuncAttributeMaxDynamicSharedMemorySize, kConsumeStages * 2 * kBoxBytes));
  BigParams big{};
  float* scalar = nullptr;
  CK(cudaMalloc(&scalar, sizeof(float)));
  CK(cudaMemset(scalar, 0, sizeof(float)));
  for (int preload : {0, 1, 2})
  for (int wgs : {1, 2})
    for (int ctas : {16, 132})
      for (int stages : {1, 2, 6})
        for (int variant : {kInOrder, kAllFirst, kStampsStored}) {
          if (stages == 1 && variant == kAllFirst) continue;
          if (preload && (stages != 6 || variant != kInOrder)) continue;
          std::vector<double> f1, w1, p2, f2, last;
          for (int rep = 0; rep < 6; ++rep) {
            CK(cudaMemset(out, 0, sizeof(uint64_t) * kMaxCtas * kConsumeStamps));
            consume<<<ctas, 128 * wgs + 32, kConsumeStages * 2 * kBoxBytes>>>(a_none, b_none, stages, variant, wgs, preload, big, scalar, out);
            CK(cudaGetLastError());
            CK(cudaDeviceSynchronize());
            if (rep == 0) continue;
            std::vector<uint64_t> h(size_t(ctas) * kConsumeStamps);
            CK(cudaMemcpy(h.data(), out, h.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost));
            for (int c = 0; c < ctas; ++c) {
              const uint64_t* t = h.data() + size_t(c) * kConsumeStamps;
              f1.push_back(double(t[1] - t[0])), w1.push_back(double(t[2] - t[0]));
              if (stages > 1) p2.push_back(double(t[3] - t[0])), f2.push_back(double(t[4] - t[0]));
              last.push_back(double(t[3 * stages - 1] - t[0]));
            }
          }
          const Stat a = stat(f1), b = stat(w1), c = stat(p2), e = stat(f2), g = stat(last);
          std::printf("%7d %3d %5d %6d %9d %6.0f / %5.0f %6.0f / %5.0f %6.0f / %5.0f %6.0f / %5.0f %6.0f / %5.0f\n", preload, wgs, ctas, stages, variant, a.med, a.max, b.med,
                      b.max, c.med, c.max, e.med, e.max, g.med, g.max);
        }

  std::printf("\n== startprobe regs: 3 warpgroups; with hand-over, warpgroup 0 setmaxnreg.dec 40, 1 and 2 setmaxnreg.inc 232;\n"
              "   then 1 and 2 each run two k-blocks of wgmma (fence, 4 x m64n256k16, commit, wait 0); ns of %%globaltimer,\n"
              "   median / max over warpgroups (5 launches pooled)\n");
  std::printf("%5s %9s %14s %14s %14s %14s\n", "CTAs", "hand-over", "fence 1", "k-block 1", "fence 2", "k-block 2");
  CK(cudaFuncSetAttribute(regs, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024));
  for (int ctas : {1, 16, 132})
    for (int handover : {0, 1}) {
      std::vector<double> f1, m1, f2, m2;
      for (int rep = 0; rep < 6; ++rep) {
        CK(cudaMemset(out, 0, sizeof(uint64_t) * kMaxCtas * kRegsStamps));
        regs<<<ctas, 384, 64 * 1024>>>(handover, out);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        if (rep == 0) continue;
        std::vector<uint64_t> h(size_t(ctas) * kRegsStamps);
        CK(cudaMemcpy(h.data(), out, h.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost));
        for (int c = 0; c < ctas; ++c)
          for (int g = 0; g < 2; ++g) {
            const uint64_t* t = h.data() + size_t(c) * kRegsStamps + g * 6;
            f1.push_back(double(t[1] - t[0])), m1.push_back(double(t[2] - t[1]));
            f2.push_back(double(t[4] - t[3])), m2.push_back(double(t[5] - t[4]));
          }
      }
      const Stat a = stat(f1), b = stat(m1), c = stat(f2), e = stat(m2);
      std::printf("%5d %9d %6.0f / %5.0f %6.0f / %5.0f %6.0f / %5.0f %6.0f / %5.0f\n", ctas, handover, a.med, a.max, b.med, b.max, c.med, c.max, e.med, e.max);
    }

  std::printf("\n== startprobe overlap: a warpgroup's wgmma rounds (4 x m64n256k16, 40 KiB of shared memory read a round) while\n"
              "   warp 4 loads %d batches of 4 stages (128 KiB each, gemm boxes, warm L2) into the same SM's shared memory;\n"
              "   ns of %%globaltimer, median / max over CTAs (5 launches pooled)\n", kOverlapBatches);
  std::printf("%5s %10s %14s %14s %14s %14s %14s\n", "CTAs", "what", "wgmma round 1", "rounds 2-8", "all 8 rounds", "TMA batch 1", "all 4 batches");
  const int overlap_smem = 64 * 1024 + 4 * 2 * kBoxBytes;
  CK(cudaFuncSetAttribute(overlap, cudaFuncAttributeMaxDynamicSharedMemorySize, overlap_smem));
  for (int ctas : {1, 16, 132})
    for (int what : {1, 2, 3}) {
      std::vector<double> r1, rest, rounds, b1, batches;
      for (int rep = 0; rep < 6; ++rep) {
        CK(cudaMemset(out, 0, sizeof(uint64_t) * kMaxCtas * kOverlapStamps));
        overlap<<<ctas, 160, overlap_smem>>>(a_none, b_none, what, out);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        if (rep == 0) continue;
        std::vector<uint64_t> h(size_t(ctas) * kOverlapStamps);
        CK(cudaMemcpy(h.data(), out, h.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost));
        for (int c = 0; c < ctas; ++c) {
          const uint64_t* t = h.data() + size_t(c) * kOverlapStamps;
          if (what & 1) {
            r1.push_back(double(t[1] - t[0]));
            for (int r = 2; r <= kOverlapRounds; ++r) rest.push_back(double(t[r] - t[r - 1]));
            rounds.push_back(double(t[kOverlapRounds] - t[0]));
          }
          if (what & 2) {
            const uint64_t* u = t + kOverlapRounds + 1;
            b1.push_back(double(u[1] - u[0]));
            batches.push_back(double(u[kOverlapBatches] - u[0]));
          }
        }
      }
      const char* name = what == 1 ? "wgmma" : what == 2 ? "TMA" : "both";
      const Stat s1 = stat(r1), s2 = stat(rest), s3 = stat(rounds), s4 = stat(b1), s5 = stat(batches);
      std::printf("%5d %10s %6.0f / %5.0f %6.0f / %5.0f %6.0f / %5.0f %6.0f / %5.0f %6.0f / %5.0f\n", ctas, name, s1.med, s1.max, s2.med, s2.max,
                  s3.med, s3.max, s4.med, s4.max, s5.med, s5.max);
    }
  return 0;
}
