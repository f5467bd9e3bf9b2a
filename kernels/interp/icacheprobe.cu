// What an SM pays the first time it runs a stretch of code (issue 21). In CUTLASS 49 and 54 at
// M = N = 2048 on 132 CTAs the first tile's first k-blocks run 1-2 us late, the second tile's not
// (docs/runs/stamps-h100-2026-11-27.txt: 54's first wgmma wait returns 1.2-2.0 us after its data, the
// second tile's 0.4), and startprobe's small wgmma loop shows no warm-up. A cold instruction cache
// would do that: the mainloop's and the epilogue's code, thousands of instructions straight, is
// fetched the first time each SM runs it.
//   Each warp runs a straight stretch of N independent-enough integer multiply-adds (four chains over
// eight registers loaded from memory, so that ptxas folds nothing: N SASS instructions, 16 bytes each)
// three times, and stamps %clock64 before each pass. Printed per configuration: the passes' cycles per
// instruction, median / max over warps (5 launches after one, pooled; 'launch 1' rows: the module's
// first launch alone). Configurations: N = 1024 .. 16384 (16 .. 256 KiB of code); 1, 16, 132 CTAs;
// 1 or 4 warps per CTA (4: one per SM sub-partition, running the same code together).
//   Then a jump into code not run yet: a branch over GAP instructions (32 .. 8192) the warp skips,
// stamped around, twice (`icacheprobe jump`: that section alone); GAP 0 (nothing to skip) is the
// stamps' own cost.
//   Last (`icacheprobe share` alone): two warps per sub-partition, running the same straight code or
// each its own (code KiB counts one of the two), as a persistent GEMM's producer and consumers do.
//   nvcc -std=c++20 -O3 -I. -gencode arch=compute_90a,code=sm_90a kernels/interp/icacheprobe.cu -o icacheprobe && ./icacheprobe [jump|share]
#include <string_view>
#include <vector>

#include "kernels/interp/probe.cuh"

namespace {

constexpr int kPasses = 3;
constexpr int kMaxCtas = 132, kMaxWarps = 4;

// N multiply-adds in a row. Past 4096 nvcc stops unrolling one loop, so longer stretches are made of
// inlined halves (each a copy of its own). S shifts the operands: run<N, 5> is code of its own that no
// compiler merges with run<N>.
template <int N, int S = 0>
__device__ __forceinline__ void run(uint32_t (&a)[4], const uint32_t (&r)[8]) {
  if constexpr (N > 4096) {
    run<N / 2, S>(a, r);
    run<N / 2, S>(a, r);
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i)
      asm volatile("mad.lo.u32 %0, %0, %1, %2;" : "+r"(a[i & 3]) : "r"(r[(i + S) & 7]), "r"(r[(i + 3 + S) & 7]));
  }
}

// Up to two warps per sub-partition (8 warps): with `other`, warps 4..7 run a copy of the code of their
// own, so each sub-partition fetches two streams of code at once (`icacheprobe share`).
constexpr int kShareWarps = 8;
template <int N>
__global__ void __launch_bounds__(256) straight(const uint32_t* in, uint32_t* sink, uint64_t* out, int other) {
  uint32_t r[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) r[i] = in[(threadIdx.x + i) & 31];
  uint32_t a[4] = {r[0], r[1], r[2], r[3]};
  const int warp = int(threadIdx.x / 32);
  uint64_t* o = out + (size_t(blockIdx.x) * kShareWarps + warp) * (kPasses + 1);
#pragma unroll 1
  for (int pass = 0; pass < kPasses; ++pass) {
    const uint64_t t = clk();
    if ((threadIdx.x & 31) == 0) o[pass] = t;
    if (other && warp >= 4) run<N, 5>(a, r);
    else run<N>(a, r);
  }
  const uint64_t t = clk();
  if ((threadIdx.x & 31) == 0) o[kPasses] = t;
  sink[blockIdx.x * blockDim.x + threadIdx.x] = a[0] ^ a[1] ^ a[2] ^ a[3];
}

// A jump into code the SM has not run: `skip` (1 at run time) branches over GAP instructions, so the
// branch's target lies GAP x 16 bytes on. Stamps around the jump, twice (the second finds the code
// fetched); then 64 instructions after it.
constexpr int kJumpStamps = 6;
template <int GAP>
__global__ void __launch_bounds__(128) jump(const uint32_t* in, uint32_t* sink, uint64_t* out, int skip) {
  uint32_t r[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) r[i] = in[(threadIdx.x + i) & 31];
  uint32_t a[4] = {r[0], r[1], r[2], r[3]};
  const int warp = int(threadIdx.x / 32);
  uint64_t* o = out + (size_t(blockIdx.x) * kMaxWarps + warp) * kJumpStamps;
  uint64_t t[kJumpStamps];
#pragma unroll 1
  for (int pass = 0; pass < 2; ++pass) {
    t[3 * pass] = clk();
    if (!skip) run<GAP>(a, r);
    t[3 * pass + 1] = clk();
    run<64>(a, r);
    t[3 * pass + 2] = clk();
  }
  if ((threadIdx.x & 31) == 0)
    for (int i = 0; i < kJumpStamps; ++i) o[i] = t[i];
  sink[blockIdx.x * blockDim.x + threadIdx.x] = a[0] ^ a[1] ^ a[2] ^ a[3];
}

struct Stat {
  double med, max;
};
Stat stat(std::vector<double> v) {
  if (v.empty()) return {0, 0};
  return {median(v), *std::max_element(v.begin(), v.end())};
}

template <int N>
void measure(const uint32_t* in, uint32_t* sink, uint64_t* out) {
  for (int ctas : {1, 16, 132})
    for (int warps : {1, 4}) {
      std::vector<double> first[kPasses], rest[kPasses];
      for (int launch = 0; launch < 6; ++launch) {
        CK(cudaMemset(out, 0, sizeof(uint64_t) * kMaxCtas * kShareWarps * (kPasses + 1)));
        straight<N><<<ctas, 32 * warps>>>(in, sink, out, 0);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        std::vector<uint64_t> h(size_t(kMaxCtas) * kShareWarps * (kPasses + 1));
        CK(cudaMemcpy(h.data(), out, h.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost));
        for (int c = 0; c < ctas; ++c)
          for (int w = 0; w < warps; ++w) {
            const uint64_t* t = h.data() + (size_t(c) * kShareWarps + w) * (kPasses + 1);
            for (int p = 0; p < kPasses; ++p) (launch == 0 ? first : rest)[p].push_back(double(t[p + 1] - t[p]) / N);
          }
      }
      for (int which = 0; which < 2; ++which) {
        std::printf("%6d %8d %5d %6d %9s", N, N * 16 / 1024, ctas, warps, which == 0 ? "launch 1" : "2-6");
        for (int p = 0; p < kPasses; ++p) {
          const Stat s = stat((which == 0 ? first : rest)[p]);
          std::printf("   %6.2f / %6.2f", s.med, s.max);
        }
        std::printf("\n");
      }
    }
}

template <int GAP>
void measure_jump(const uint32_t* in, uint32_t* sink, uint64_t* out) {
  for (int ctas : {1, 16, 132})
    for (int warps : {1, 4}) {
      std::vector<double> j1, b1, j2, b2;
      for (int launch = 0; launch < 6; ++launch) {
        CK(cudaMemset(out, 0, sizeof(uint64_t) * kMaxCtas * kMaxWarps * kJumpStamps));
        jump<GAP><<<ctas, 32 * warps>>>(in, sink, out, 1);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        if (launch == 0) continue;
        std::vector<uint64_t> h(size_t(kMaxCtas) * kMaxWarps * kJumpStamps);
        CK(cudaMemcpy(h.data(), out, h.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost));
        for (int c = 0; c < ctas; ++c)
          for (int w = 0; w < warps; ++w) {
            const uint64_t* t = h.data() + (size_t(c) * kMaxWarps + w) * kJumpStamps;
            j1.push_back(double(t[1] - t[0])), b1.push_back(double(t[2] - t[1]));
            j2.push_back(double(t[4] - t[3])), b2.push_back(double(t[5] - t[4]));
          }
      }
      const Stat s1 = stat(j1), s2 = stat(b1), s3 = stat(j2), s4 = stat(b2);
      std::printf("%6d %8d %5d %6d   %7.0f / %6.0f   %7.0f / %6.0f   %7.0f / %6.0f   %7.0f / %6.0f\n", GAP, GAP * 16 / 1024, ctas, warps, s1.med,
                  s1.max, s2.med, s2.max, s3.med, s3.max, s4.med, s4.max);
    }
}

template <int N>
void measure_share(const uint32_t* in, uint32_t* sink, uint64_t* out) {
  for (int other : {0, 1})
    for (int ctas : {1, 132}) {
      std::vector<double> pass[kPasses];
      for (int launch = 0; launch < 6; ++launch) {
        straight<N><<<ctas, 32 * kShareWarps>>>(in, sink, out, other);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        if (launch == 0) continue;
        std::vector<uint64_t> h(size_t(ctas) * kShareWarps * (kPasses + 1));
        CK(cudaMemcpy(h.data(), out, h.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost));
        for (int c = 0; c < ctas; ++c)
          for (int w = 0; w < kShareWarps; ++w) {
            const uint64_t* t = h.data() + (size_t(c) * kShareWarps + w) * (kPasses + 1);
            for (int p = 0; p < kPasses; ++p) pass[p].push_back(double(t[p + 1] - t[p]) / N);
          }
      }
      std::printf("%6d %8d %5d %9s", N, N * 16 / 1024, ctas, other ? "different" : "same");
      for (int p = 0; p < kPasses; ++p) {
        const Stat st = stat(pass[p]);
        std::printf("   %6.2f / %6.2f", st.med, st.max);
      }
      std::printf("\n");
    }
}

}  // namespace

int main(int argc, char** argv) {
  const bool only_jump = argc > 1 && std::string_view(argv[1]) == "jump";  // `icacheprobe jump`: that section alone
  const bool only_share = argc > 1 && std::string_view(argv[1]) == "share";  // `icacheprobe share`: that section alone
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("== icacheprobe on %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  uint32_t *in = nullptr, *sink = nullptr;
  uint64_t* out = nullptr;
  CK(cudaMalloc(&in, 32 * sizeof(uint32_t)));
  CK(cudaMemset(in, 3, 32 * sizeof(uint32_t)));
  CK(cudaMalloc(&sink, kMaxCtas * 32 * kShareWarps * sizeof(uint32_t)));  // one word per thread of the largest CTA
  CK(cudaMalloc(&out, sizeof(uint64_t) * kMaxCtas * kShareWarps * std::max(kPasses + 1, kJumpStamps)));
  if (only_share) {
    std::printf("== two warps per sub-partition (8 a CTA), the second four running the same code as the first or their own;\n"
                "   N instructions 3 times per warp: SM cycles per instruction, median / max over warps (launches 2-6)\n");
    std::printf("%6s %8s %5s %9s %17s %17s %17s\n", "N", "code KiB", "CTAs", "code", "pass 1", "pass 2", "pass 3");
    measure_share<1024>(in, sink, out);
    measure_share<4096>(in, sink, out);
    measure_share<8192>(in, sink, out);
    return 0;
  }
  std::printf("== straight code, N instructions run 3 times per warp: SM cycles per instruction, median / max over warps\n");
  std::printf("%6s %8s %5s %6s %9s %17s %17s %17s\n", "N", "code KiB", "CTAs", "warps", "launches", "pass 1", "pass 2", "pass 3");
  if (!only_jump) {
    measure<1024>(in, sink, out);
    measure<4096>(in, sink, out);
    measure<8192>(in, sink, out);
    measure<16384>(in, sink, out);
  }
  std::printf("\n== a jump over GAP instructions into code not run yet, then 64 instructions; twice per warp:\n"
              "   SM cycles, median / max over warps (launches 2-6)\n");
  std::printf("%6s %8s %5s %6s %17s %17s %17s %17s\n", "GAP", "gap KiB", "CTAs", "warps", "jump 1", "64 after it", "jump 2", "64 after it");
  measure_jump<0>(in, sink, out);  // no instructions to skip: the stamps' own cost, the baseline
  measure_jump<32>(in, sink, out);
  measure_jump<64>(in, sink, out);
  measure_jump<256>(in, sink, out);
  measure_jump<2048>(in, sink, out);
  measure_jump<8192>(in, sink, out);
  return 0;
}
