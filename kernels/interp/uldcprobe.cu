// What a kernel parameter read costs the first time an SM reads its line, as CUTLASS's kernels read
// theirs: a uniform load of a constant offset (SASS ULDC c[0x0][off]) used right away. One warp reads
// `reads` parameters 256 bytes apart in turn (each on a line of its own), each stored to global
// memory before the clock is read again (the store waits for the value), then reads the first again
// (its line now held). Cycles per read, medians over CTAs; 1 CTA and one per SM. Each launch finds
// the SM's constant cache cold for the block (the first reads miss), which this probe checks by
// launching twice.
//   nvcc -std=c++20 -O3 -I. -gencode arch=compute_90a,code=sm_90a kernels/interp/uldcprobe.cu -o uldcprobe && ./uldcprobe
#include <utility>

#include "kernels/interp/probe.cuh"

namespace {

constexpr int kWords = 1024;  // 4 KiB of parameters
constexpr int kReads = 8;
struct Block {
  unsigned v[kWords];
};

template <int... kOffsets>
__device__ __forceinline__ void read_all(const Block& p, unsigned* sink, unsigned long long* t, std::integer_sequence<int, kOffsets...>) {
  int k = 0;
  // Each read: its value is stored (the store issues once the value is there), then the clock.
  ((sink[k] = p.v[kOffsets * 64], t[++k] = clk()), ...);
}

__global__ void reads(const __grid_constant__ Block p, unsigned* sink, unsigned long long* out) {
  if (threadIdx.x != 0) return;
  unsigned long long t[kReads + 2];
  unsigned* mine = sink + blockIdx.x * (kReads + 1);
  t[0] = clk();
  read_all(p, mine, t, std::make_integer_sequence<int, kReads>{});
  mine[kReads] = p.v[0];  // the first line again: held now
  t[kReads + 1] = clk();
  for (int k = 0; k <= kReads; ++k) out[blockIdx.x * (kReads + 1) + k] = t[k + 1] - t[k];
}

}  // namespace

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  Block p{};
  for (int i = 0; i < kWords; ++i) p.v[i] = unsigned(i);
  unsigned* sink = nullptr;
  unsigned long long* out = nullptr;
  CK(cudaMalloc(&sink, sizeof(unsigned) * size_t(sms) * (kReads + 1)));
  CK(cudaMalloc(&out, sizeof(unsigned long long) * size_t(sms) * (kReads + 1)));
  std::printf("== uldcprobe: one warp reads %d parameters 256 B apart, then the first again; SM cycles per read (median over CTAs)\n", kReads);
  std::printf(" CTAs launch ");
  for (int k = 0; k < kReads; ++k) std::printf("  read %d", k + 1);
  std::printf("   again\n");
  for (int ctas : {1, sms})
    for (int launch = 0; launch < 3; ++launch) {
      reads<<<ctas, 32>>>(p, sink, out);
      CK(cudaGetLastError());
      CK(cudaDeviceSynchronize());
      std::vector<unsigned long long> h(size_t(ctas) * (kReads + 1));
      CK(cudaMemcpy(h.data(), out, h.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
      std::printf(" %4d %6d ", ctas, launch + 1);
      for (int k = 0; k <= kReads; ++k) {
        std::vector<double> v;
        for (int c = 0; c < ctas; ++c) v.push_back(double(h[size_t(c) * (kReads + 1) + k]));
        std::printf(" %7.0f", median(v));
      }
      std::printf("\n");
    }
  return 0;
}
