// Native wgmma probes (no interpreter, issue 21): the two tensor-pipe facts docs/calibration.md lists as
// assumed. Operands are whatever shared memory holds (the values do not change the timing).
//   nvcc -std=c++20 -O3 -gencode arch=compute_90a,code=sm_90a kernels/interp/mmaprobe.cu -o mmaprobe && ./mmaprobe
//
// 1. Issue queue (`mma_queue_depth`): one CTA, one warpgroup issues k = 1..32 wgmma m64n128k16 (f16 in,
//    f16 accumulate) back to back, then commit_group + wait_group 0. Printed per k: the cycles from the
//    first issue to the return of issue i (i = 1..k, thread 0's clock64), and to the wait's end. Issues
//    that return one MMA apart (~64 cycles at 4096 FLOP/clk/SM) instead of a few cycles apart mark a full
//    queue: the first such i is the depth in warpgroup MMAs per sub-partition.
// 2. Rate and clock under load (`tensor_clock_ghz`): every SM runs W warpgroups (1 or 2), each looping
//    ITERS x (4 wgmma + commit + wait_group 1), for n = 128 and 256 and f16 / e4m3 inputs. Printed: the
//    achieved TFLOPS over %globaltimer (first CTA start to last CTA end), FLOP per SM cycle, and the SM
//    clock during the run (clock64 cycles / globaltimer ns, median over CTAs).
//    Expected if the model is right: FLOP/clk/SM 4096 (f16) and 8192 (e4m3) with 2 warpgroups; the
//    SM clock x that rate x 132 gives the TFLOPS; compare with 989 / 1979 (the datasheet's, at 1.83 GHz).
// 3. `lag` (./mmaprobe lag runs only this): is wgmma warpgroup-collective? One CTA, one warpgroup; warp 3
//    spins LAG cycles before its wgmma m64n128k16, warps 0-2 issue at once; each warp then commits and
//    waits (wait_group 0). Printed per warp (lane 0's clock64, from a common start after __syncthreads):
//    when its wgmma was issued, when that issue returned, and when its wait_group returned.
//    The engine's reading (docs/semantics.md, "The tensor pipe"): the warpgroup's MMA runs once the last
//    warp issued it, so warps 0-2's wait_group returns after warp 3's issue + one MMA (~64 cycles), for
//    every LAG; a per-warp MMA would let warps 0-2 return ~LAG cycles earlier than warp 3.
// 4. `share` (./mmaprobe share runs only this): two warpgroups' wgmma on one SM's pipe, the second
//    issued DELAY cycles after the first: served first come first served, or interleaved?
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "probe.cuh"
#include "wgmma.cuh"

namespace {

using namespace wgmma_probe;

enum Kind { kN128F16 = 0, kN128E4M3 = 1, kN256F16 = 2 };
constexpr double kFlop[3] = {2.0 * 64 * 128 * 16, 2.0 * 64 * 128 * 32, 2.0 * 64 * 256 * 16};
constexpr const char* kName[3] = {"m64n128k16 f16", "m64n128k32 e4m3", "m64n256k16 f16"};

template <int K>
__device__ __forceinline__ void mma(uint32_t (&d)[64], uint64_t da, uint64_t db) {
  if constexpr (K == kN128F16) mma_n128_f16(d, da, db);
  else if constexpr (K == kN128E4M3) mma_n128_e4m3(d, da, db);
  else mma_n256_f16(d, da, db);
}

// --- 1. The issue queue: k MMAs back to back, thread 0's clock after each returns (k a template
// argument: the loop fully unrolled, the stamps in registers, nothing between the MMAs but clock reads).
template <int k>
__global__ void queue_probe(uint64_t* out) {
  extern __shared__ __align__(128) uint8_t smem[];
  uint32_t d[64] = {};
  const uint64_t da = desc(smem), db = desc(smem + 8192);
  uint64_t t[k];
  __syncthreads();
  pin(d);
  fence();
  const uint64_t t0 = clk();
#pragma unroll
  for (int i = 0; i < k; ++i) {
    mma<kN128F16>(d, da, db);
    t[i] = clk();
  }
  commit();
  wait<0>();
  pin(d);
  const uint64_t t1 = clk();
  if (threadIdx.x == 0) {
#pragma unroll
    for (int i = 0; i < k; ++i) out[i] = t[i] - t0;
    out[k] = t1 - t0;
  }
  if (d[0] == 0xdeadbeef) out[40] = d[1];  // keep the accumulators alive
}

template <int k>
void run_queue(uint64_t* out) {
  CK(cudaFuncSetAttribute(queue_probe<k>, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024));
  std::vector<uint64_t> best(size_t(k) + 1, ~0ull);
  for (int rep = 0; rep < 7; ++rep) {
    queue_probe<k><<<1, 128, 64 * 1024>>>(out);
    CK(cudaDeviceSynchronize());
    std::vector<uint64_t> h(size_t(k) + 1);
    CK(cudaMemcpy(h.data(), out, sizeof(uint64_t) * h.size(), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < h.size(); ++i) best[i] = std::min(best[i], h[i]);
  }
  std::printf("QUEUE k=%d issue_return_cycles=", k);
  for (int i = 0; i < k; ++i) std::printf("%s%llu", i ? "," : "", (unsigned long long)best[size_t(i)]);
  std::printf(" drained_cycles=%llu (fastest of 7)\n", (unsigned long long)best[size_t(k)]);
}
template <int... ks>
void run_queues(uint64_t* out, std::integer_sequence<int, ks...>) {
  (run_queue<ks + 1>(out), ...);
}

// --- 2. Rate and clock: each warpgroup loops iters x (4 MMAs, commit, wait_group 1).
struct CtaStat {
  unsigned long long g0, g1, cyc;
};
template <int K>
__global__ void rate_probe(int iters, CtaStat* st) {
  extern __shared__ __align__(128) uint8_t smem[];
  uint32_t d[64] = {};
  const uint64_t da = desc(smem), db = desc(smem + 16384);
  __syncthreads();
  const uint64_t g0 = gt(), c0 = clk();
  for (int it = 0; it < iters; ++it) {
    pin(d);
    fence();
#pragma unroll
    for (int j = 0; j < 4; ++j) mma<K>(d, da, db);
    commit();
    wait<1>();
    pin(d);
  }
  wait<0>();
  pin(d);
  __syncthreads();
  const uint64_t g1 = gt(), c1 = clk();
  if (threadIdx.x == 0) st[blockIdx.x] = CtaStat{g0, g1, c1 - c0};
  if (d[0] == 0xdeadbeef) st[0].cyc = d[1];
}

template <int K>
void run_rate(int sms, int warpgroups, CtaStat* dst) {
  const int iters = 20000;
  CK(cudaFuncSetAttribute(rate_probe<K>, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024));
  std::vector<CtaStat> st(static_cast<size_t>(sms));
  std::vector<double> tflops, per_clk, ghz;
  for (int rep = 0; rep < 5; ++rep) {
    rate_probe<K><<<sms, 128 * warpgroups, 64 * 1024>>>(iters, dst);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(st.data(), dst, sizeof(CtaStat) * size_t(sms), cudaMemcpyDeviceToHost));
    unsigned long long g0 = ~0ull, g1 = 0;
    std::vector<double> clocks, cycles;
    for (const CtaStat& s : st) {
      g0 = std::min(g0, s.g0), g1 = std::max(g1, s.g1);
      clocks.push_back(double(s.cyc) / double(s.g1 - s.g0));
      cycles.push_back(double(s.cyc));
    }
    std::sort(clocks.begin(), clocks.end());
    std::sort(cycles.begin(), cycles.end());
    const double flop_per_sm = kFlop[K] * 4.0 * iters * warpgroups;
    tflops.push_back(flop_per_sm * sms / double(g1 - g0) / 1e3);
    per_clk.push_back(flop_per_sm / cycles[cycles.size() / 2]);
    ghz.push_back(clocks[clocks.size() / 2]);
  }
  std::sort(tflops.begin(), tflops.end());
  std::sort(per_clk.begin(), per_clk.end());
  std::sort(ghz.begin(), ghz.end());
  std::printf("RATE kind=\"%s\" warpgroups=%d sms=%d tflops=%.1f flop_per_clk_sm=%.0f sm_clock_ghz=%.3f (medians of 5)\n", kName[K],
              warpgroups, sms, tflops[2], per_clk[2], ghz[2]);
}

// --- 3. Warpgroup-collective or not: warp 3 issues `lag` cycles after its siblings.
__global__ void lag_probe(long long lag, uint64_t* out) {
  extern __shared__ __align__(128) uint8_t smem[];
  uint32_t d[64] = {};
  const uint64_t da = desc(smem), db = desc(smem + 8192);
  const int warp = threadIdx.x / 32;
  __syncthreads();
  const uint64_t t0 = clk();
  if (warp == 3)
    while (static_cast<long long>(clk() - t0) < lag) {
    }
  pin(d);
  fence();
  const uint64_t issued = clk();
  mma<kN128F16>(d, da, db);
  const uint64_t returned = clk();
  commit();
  wait<0>();
  pin(d);
  const uint64_t waited = clk();
  if (threadIdx.x % 32 == 0) {
    out[warp * 3 + 0] = issued - t0;
    out[warp * 3 + 1] = returned - t0;
    out[warp * 3 + 2] = waited - t0;
  }
  if (d[0] == 0xdeadbeef) out[40] = d[1];
}

void run_lag(uint64_t* out) {
  CK(cudaFuncSetAttribute(lag_probe, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024));
  for (long long lag : {0LL, 1000LL, 5000LL, 20000LL, 100000LL}) {
    for (int rep = 0; rep < 3; ++rep) {
      lag_probe<<<1, 128, 64 * 1024>>>(lag, out);
      CK(cudaDeviceSynchronize());
      uint64_t h[12];
      CK(cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost));
      std::printf("LAG lag=%lld rep=%d", lag, rep);
      for (int w = 0; w < 4; ++w)
        std::printf(" w%d=issue:%llu,returned:%llu,waited:%llu", w, (unsigned long long)h[w * 3], (unsigned long long)h[w * 3 + 1],
                    (unsigned long long)h[w * 3 + 2]);
      std::printf("\n");
    }
  }
}

// --- 4. Two warpgroups on one pipe (`share`; ./mmaprobe share runs only this): warpgroup 0 issues 4 wgmma
// m64n128k16 at once, warpgroup 1 the same `delay` cycles later; each then commits and waits
// (wait_group 0). Printed per warpgroup (its warp 0's lane 0, from a common start after __syncthreads):
// when its first wgmma issued and when its wait returned. First come first served (the engine's pipe):
// warpgroup 0 returns one MMA x 4 (~256 cycles) after its issue whatever the delay; interleaved, it
// returns near warpgroup 1 (~7 MMAs) while the delay is under 4 MMAs.
__global__ void share_probe(long long delay, uint64_t* out) {
  extern __shared__ __align__(128) uint8_t smem[];
  uint32_t d[64] = {};
  const uint64_t da = desc(smem), db = desc(smem + 8192);
  const int group = threadIdx.x / 128;
  __syncthreads();
  const uint64_t t0 = clk();
  if (group == 1)
    while (static_cast<long long>(clk() - t0) < delay) {
    }
  pin(d);
  fence();
  const uint64_t issued = clk();
  mma<kN128F16>(d, da, db);
  mma<kN128F16>(d, da, db);
  mma<kN128F16>(d, da, db);
  mma<kN128F16>(d, da, db);
  commit();
  wait<0>();
  pin(d);
  const uint64_t waited = clk();
  if (threadIdx.x % 128 == 0) {
    out[group * 2 + 0] = issued - t0;
    out[group * 2 + 1] = waited - t0;
  }
  if (d[0] == 0xdeadbeef) out[40] = d[1];
}

void run_share(uint64_t* out) {
  CK(cudaFuncSetAttribute(share_probe, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024));
  for (long long delay : {0LL, 32LL, 64LL, 128LL, 192LL, 256LL, 512LL, 2000LL}) {
    std::vector<double> w0, w1, i1;
    for (int rep = 0; rep < 7; ++rep) {
      share_probe<<<1, 256, 64 * 1024>>>(delay, out);
      CK(cudaDeviceSynchronize());
      uint64_t h[4];
      CK(cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost));
      w0.push_back(double(h[1]) - double(h[0]));
      i1.push_back(double(h[2]));
      w1.push_back(double(h[3]) - double(h[0]));
    }
    std::printf("SHARE delay=%lld wg0_wait_returned_after_its_issue=%.0f wg1_issued=%.0f wg1_wait_returned=%.0f (cycles, medians of 7)\n",
                delay, median(w0), median(i1), median(w1));
  }
}

}  // namespace

int main(int argc, char** argv) {
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  std::printf("== mmaprobe on %s, %d SMs\n", prop.name, sms);

  uint64_t* out = nullptr;
  CK(cudaMalloc(&out, 64 * sizeof(uint64_t)));
  if (argc > 1 && std::string(argv[1]) == "share") {
    run_share(out);
    return 0;
  }
  run_lag(out);
  if (argc > 1 && std::string(argv[1]) == "lag") return 0;
  run_queues(out, std::make_integer_sequence<int, 32>{});

  CtaStat* st = nullptr;
  CK(cudaMalloc(&st, sizeof(CtaStat) * size_t(sms)));
  for (int wg : {1, 2}) {
    run_rate<kN128F16>(sms, wg, st);
    run_rate<kN128E4M3>(sms, wg, st);
    run_rate<kN256F16>(sms, wg, st);
  }
  return 0;
}
