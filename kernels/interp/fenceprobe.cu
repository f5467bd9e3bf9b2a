// What a memory fence costs the warp that runs it (issue 21). CUTLASS's stream-K fixup publishes a
// partial tile with fp32 atomics to a workspace, then `fence.acq_rel.gpu` and a flag increment; its
// reader polls the flag. On the H100 that fence (SASS MEMBAR.ALL.GPU + ERRBAR) stalls ~1,300 warp-cycles
// per execution (Nsight Compute, 49 stream-K at 256x4096x8192), where the model charged nothing. And an
// `mbarrier.arrive.release.cluster` on a peer CTA's barrier held its thread ~700 ns (dramprobe).
//
// One warp per CTA runs a loop of one case, 256 iterations after 16 of warm-up; lane 0 reads clock64
// around it. Printed: SM cycles per iteration less the empty loop's, median over CTAs; 1 CTA alone and
// 132 CTAs x 4 warps at once (each warp its own 4 KiB of the workspace, so atomics do not collide).
//   nvcc -std=c++20 -O3 -I. -gencode arch=compute_90a,code=sm_90a kernels/interp/fenceprobe.cu -o fenceprobe && ./fenceprobe
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "kernels/interp/probe.cuh"

namespace {

constexpr int kIters = 256, kWarm = 16, kReds = 16;

enum Case {
  Empty, FenceCta, FenceCluster, FenceGpu, FenceScGpu, StoreFenceGpu, RedsFenceGpu, Reds, ArriveLocal, ArriveReleaseCluster,
  PollAcquire, ProxyAsync, kCases
};
const char* const kName[] = {"empty loop",
                             "fence.acq_rel.cta",
                             "fence.acq_rel.cluster",
                             "fence.acq_rel.gpu",
                             "fence.sc.gpu",
                             "st.global.u32 + fence.acq_rel.gpu",
                             "16 red.global.add.f32 + fence.acq_rel.gpu",
                             "16 red.global.add.f32",
                             "mbarrier.arrive (release.cta, own CTA)",
                             "mbarrier.arrive.release.cluster (own CTA)",
                             "ld.acquire.gpu.global.u32",
                             "fence.proxy.async.shared::cta"};

template <int C>
__device__ __forceinline__ void body(float* ws, uint32_t* flag, uint32_t bar, uint32_t& sink) {
  if constexpr (C == FenceCta) asm volatile("fence.acq_rel.cta;" ::: "memory");
  if constexpr (C == FenceCluster) asm volatile("fence.acq_rel.cluster;" ::: "memory");
  if constexpr (C == FenceGpu) asm volatile("fence.acq_rel.gpu;" ::: "memory");
  if constexpr (C == FenceScGpu) asm volatile("fence.sc.gpu;" ::: "memory");
  if constexpr (C == StoreFenceGpu) {
    asm volatile("st.global.u32 [%0], %1;" ::"l"(flag), "r"(sink) : "memory");
    asm volatile("fence.acq_rel.gpu;" ::: "memory");
  }
  if constexpr (C == RedsFenceGpu || C == Reds) {
#pragma unroll
    for (int k = 0; k < kReds; ++k) asm volatile("red.global.add.f32 [%0], %1;" ::"l"(ws + 32 * k), "f"(1.0f) : "memory");
    if constexpr (C == RedsFenceGpu) asm volatile("fence.acq_rel.gpu;" ::: "memory");
  }
  if constexpr (C == ArriveLocal) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
  if constexpr (C == ArriveReleaseCluster)
    asm volatile("mbarrier.arrive.release.cluster.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
  if constexpr (C == PollAcquire) {
    uint32_t v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(flag) : "memory");
    sink += v;
  }
  if constexpr (C == ProxyAsync) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

template <int C>
__global__ void __launch_bounds__(128) run(float* ws, unsigned long long* cycles) {
  __shared__ __align__(8) uint64_t bar;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(uint32_t(__cvta_generic_to_shared(&bar))), "r"((1u << 20) - 1));
  __syncthreads();
  const uint32_t b = uint32_t(__cvta_generic_to_shared(&bar));
  const size_t w = size_t(blockIdx.x) * blockDim.x / 32 + size_t(warp);
  float* mine = ws + w * 1024 + lane;  // 4 KiB per warp: 32 lanes x 32 floats
  uint32_t* flag = reinterpret_cast<uint32_t*>(ws + w * 1024 + 1023);
  uint32_t sink = 0;
  uint64_t c0 = 0;
  for (int i = 0; i < kWarm + kIters; ++i) {
    if (i == kWarm) {
      __syncwarp();
      c0 = clk();
    }
    body<C>(mine, flag, b, sink);
  }
  __syncwarp();
  const uint64_t c1 = clk();
  if (lane == 0) cycles[w] = (c1 - c0) + (sink == 0xdeadbeef);
}

template <int C>
double median_cycles(int ctas, int warps, float* ws, unsigned long long* cycles) {
  std::vector<double> per;
  for (int rep = 0; rep < 3; ++rep) {
    run<C><<<ctas, 32 * warps>>>(ws, cycles);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<unsigned long long> h(size_t(ctas) * size_t(warps));
    CK(cudaMemcpy(h.data(), cycles, h.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
    for (unsigned long long c : h) per.push_back(double(c) / kIters);
  }
  return median(per);
}

template <int... C>
void all(std::integer_sequence<int, C...>, int sms, float* ws, unsigned long long* cycles) {
  const double empty1 = median_cycles<Empty>(1, 1, ws, cycles), empty_all = median_cycles<Empty>(sms, 4, ws, cycles);
  std::printf("%-44s %14s %18s\n", "per iteration, SM cycles less the empty loop", "1 warp alone", "132 CTAs x 4 warps");
  std::printf("%-44s %14.1f %18.1f\n", "(empty loop itself)", empty1, empty_all);
  ((C == Empty ? void()
               : void(std::printf("%-44s %14.1f %18.1f\n", kName[C], median_cycles<C>(1, 1, ws, cycles) - empty1,
                                  median_cycles<C>(sms, 4, ws, cycles) - empty_all))),
   ...);
}

}  // namespace

int main() {
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  float* ws = nullptr;
  unsigned long long* cycles = nullptr;
  CK(cudaMalloc(&ws, size_t(sms) * 4 * 4096));
  CK(cudaMemset(ws, 0, size_t(sms) * 4 * 4096));
  CK(cudaMalloc(&cycles, size_t(sms) * 4 * sizeof(unsigned long long)));
  std::printf("== fenceprobe on %s, %d SMs\n", prop.name, sms);
  all(std::make_integer_sequence<int, kCases>{}, sms, ws, cycles);
  return 0;
}
