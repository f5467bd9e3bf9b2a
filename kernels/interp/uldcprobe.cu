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

// The crowd table: W warps at once (one CTA), each lane 0 reading 8 lines 64 bytes apart, all warps
// the same 8 lines or each its own 8 (warp w lines 8w .. 8w+7): do an SM's first misses on distinct
// lines overlap, or queue?
template <int kBase, int... kLines>
__device__ __forceinline__ void read_lines(const Block& p, unsigned* sink, std::integer_sequence<int, kLines...>) {
  int k = 0;
  ((sink[k++] = p.v[(kBase + kLines) * 16]), ...);
}

__global__ void crowd(const __grid_constant__ Block p, int distinct, unsigned* sink, unsigned long long* out) {
  const int warp = int(threadIdx.x / 32);
  __syncthreads();
  if (threadIdx.x % 32 != 0) return;
  unsigned* mine = sink + (blockIdx.x * 32 + warp) * kReads;
  const unsigned long long t0 = clk();
  constexpr auto lines = std::make_integer_sequence<int, kReads>{};
  switch (distinct ? warp : 0) {
    case 0: read_lines<0>(p, mine, lines); break;
    case 1: read_lines<8>(p, mine, lines); break;
    case 2: read_lines<16>(p, mine, lines); break;
    case 3: read_lines<24>(p, mine, lines); break;
    case 4: read_lines<32>(p, mine, lines); break;
    case 5: read_lines<40>(p, mine, lines); break;
    case 6: read_lines<48>(p, mine, lines); break;
    default: read_lines<56>(p, mine, lines); break;
  }
  // The stores above issue once their values are there; a load of the last one orders the clock.
  out[blockIdx.x * 32 + warp] = clk() - t0 + (*(volatile unsigned*)&mine[kReads - 1] & 0);
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
  std::printf("\n== crowd: W warps of one CTA, each reading 8 parameter lines 64 B apart: the same 8 or 8 of its own; SM cycles\n");
  std::printf("   for a warp's 8 reads (median over warps / the slowest warp), one CTA and one per SM\n");
  std::printf(" CTAs  W  lines    median    slowest\n");
  CK(cudaFree(sink));
  CK(cudaFree(out));
  CK(cudaMalloc(&sink, sizeof(unsigned) * size_t(sms) * 32 * kReads));
  CK(cudaMalloc(&out, sizeof(unsigned long long) * size_t(sms) * 32));
  for (int ctas : {1, sms})
    for (int warps : {1, 4, 8})
      for (int distinct : {0, 1}) {
        if (warps == 1 && distinct) continue;
        std::vector<double> v;
        for (int launch = 0; launch < 3; ++launch) {
          crowd<<<ctas, 32 * warps>>>(p, distinct, sink, out);
          CK(cudaGetLastError());
          CK(cudaDeviceSynchronize());
          std::vector<unsigned long long> h(size_t(ctas) * 32);
          CK(cudaMemcpy(h.data(), out, h.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
          for (int c = 0; c < ctas; ++c)
            for (int w = 0; w < warps; ++w) v.push_back(double(h[size_t(c) * 32 + size_t(w)]));
        }
        std::printf(" %4d %2d %6s %9.0f %10.0f\n", ctas, warps, distinct ? "own" : "same", median(v), *std::max_element(v.begin(), v.end()));
      }
  return 0;
}
