// Native probe (issue 21): what a kernel-parameter load through a register costs. CUTLASS's stream-K
// and FP8 kernels read their parameter block through a pointer (`ld.param [%rd2+off]`, SASS `LDC`
// with a register address) many times before their producer's first acquire, and on the H100 that
// prologue runs 0.6-2 us longer than the model's, which charges such a load nothing.
//   nvcc -std=c++20 -O3 -gencode arch=compute_90a,code=sm_90a kernels/interp/paramprobe.cu -o paramprobe && ./paramprobe
//
// Lane 0 of each CTA chases indices through a 2 KiB parameter block (each load's index is the previous
// load's value, so the loads are dependent) and times the chase with clock64: a first lap (the SM's
// constant cache cold for those lines), then the same lap again (warm). Strides of 16 words put every
// link on a new 64-byte line; a stride of 1 stays within lines. On 1 CTA and on 132 (one per SM).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "probe.cuh"

namespace {

constexpr int kWords = 512;  // 2 KiB of parameters
struct Block {
  unsigned v[kWords];
};

__global__ void chase(const __grid_constant__ Block p, unsigned start, int links, unsigned long long* out) {
  if (threadIdx.x != 0) return;
  unsigned i = start, j = start;
  const unsigned long long t0 = clock64();
  for (int k = 0; k < links; ++k) i = p.v[i & (kWords - 1)];
  const unsigned long long t1 = clock64();
  for (int k = 0; k < links; ++k) j = p.v[j & (kWords - 1)];
  const unsigned long long t2 = clock64();
  out[blockIdx.x * 3 + 0] = t1 - t0;
  out[blockIdx.x * 3 + 1] = t2 - t1;
  out[blockIdx.x * 3 + 2] = i + j;  // keeps the chains
}

}  // namespace

int main() {
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("== paramprobe on %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  unsigned long long* d_out = nullptr;
  CK(cudaMalloc(&d_out, sizeof(unsigned long long) * 3 * 1024));
  for (int stride : {16, 1}) {
    Block b{};
    for (int k = 0; k < kWords; ++k) b.v[k] = static_cast<unsigned>((k + stride) % kWords);
    const int links = stride == 16 ? kWords / 16 : 64;
    for (int grid : {1, prop.multiProcessorCount}) {
      for (int rep = 0; rep < 3; ++rep) {
        chase<<<grid, 32>>>(b, 0, links, d_out);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        std::vector<unsigned long long> h(static_cast<size_t>(grid) * 3);
        CK(cudaMemcpy(h.data(), d_out, h.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
        std::vector<double> cold, warm;
        for (int c = 0; c < grid; ++c) {
          cold.push_back(static_cast<double>(h[static_cast<size_t>(c) * 3]) / links);
          warm.push_back(static_cast<double>(h[static_cast<size_t>(c) * 3 + 1]) / links);
        }
        std::sort(cold.begin(), cold.end());
        std::sort(warm.begin(), warm.end());
        std::printf("PARAM stride_words=%d links=%d ctas=%d rep=%d cycles_per_link cold median=%.1f max=%.1f warm median=%.1f max=%.1f\n",
                    stride, links, grid, rep, cold[cold.size() / 2], cold.back(), warm[warm.size() / 2], warm.back());
      }
    }
  }
  CK(cudaFree(d_out));
  return 0;
}
