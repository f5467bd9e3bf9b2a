// Benchmark of the NVFP4 GEMV on the three benchmark shapes of seed-kernels.md.
//
//   gemv_bench [--samples N] [--sweep] [google-benchmark flags]
//
// Per shape: the TMA kernel (planner's choice; with --sweep also other stage sizes / warp counts),
// the plain reference kernel, and dequantize-then-cuBLAS (A and b dequantized to fp16 by a simple
// kernel, then cublasGemmStridedBatchedEx; timed together, and the cuBLAS GEMV alone). Timing: CUDA
// events around each launch, the L2 flushed (a 256 MiB memset) before every sample, all samples
// enqueued before one synchronisation, the median reported. Bandwidth = the bytes the problem must
// move (A, sfa, b, sfb read once, c written once) / time, and its fraction of the bandwidth of a
// 1 GiB device-to-device cudaMemcpy (read + write bytes) measured in the same run.
// Built with Google Benchmark when PIPESIM_GBENCH is defined (each measurement is one benchmark with
// manual time), otherwise with a plain driver; both print the same compact table at the end.
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#ifdef PIPESIM_GBENCH
#include <benchmark/benchmark.h>
#endif

#include "kernels/gemv_nvfp4/gemv_common.hpp"
#include "kernels/gemv_nvfp4/gemv_nvfp4.hpp"

using namespace pipesim::kernels;
using namespace pipesim::kernels::gemv_tools;

namespace {

int g_samples = 200;
constexpr int kWarmup = 5;

struct Row {
  std::string shape, impl, note;
  double us = 0, p10 = 0, p90 = 0, gbps = 0, frac = 0;
};
std::vector<Row> g_rows;
double g_copy_gbps = 0;

// ---- timing ---------------------------------------------------------------------------------------
// L2 flush: by default a kernel that reads a 256 MiB buffer (five times the H100's L2), so that L2 holds
// only clean lines of that buffer when the timed kernel starts. A memset flush (--flush memset, what
// torch's cache.zero_() does) leaves up to the whole L2 dirty, and the timed kernel then pays for
// writing it back; both are reported by run_device.sh.
__global__ void flush_read_kernel(const int4* p, long long n, int* sink) {
  int acc = 0;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int4 v = __ldcg(p + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x7fffffff) *sink = acc;  // never true for the fill below; keeps the loads
}
bool g_flush_memset = false;

struct Timer {
  void* flush = nullptr;
  int* sink = nullptr;
  size_t flush_bytes = size_t{256} << 20;
  Timer() {
    GEMV_CUDA_CHECK(cudaMalloc(&flush, flush_bytes));
    GEMV_CUDA_CHECK(cudaMemset(flush, 0x11, flush_bytes));
    GEMV_CUDA_CHECK(cudaMalloc(&sink, sizeof(int)));
    // Same shared-memory carveout preference as the kernels timed after it: no reconfiguration
    // between the flush and the timed launch.
    GEMV_CUDA_CHECK(cudaFuncSetAttribute(flush_read_kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                         cudaSharedmemCarveoutMaxShared));
  }
  void flush_l2(int i) {
    if (g_flush_memset) {
      GEMV_CUDA_CHECK(cudaMemsetAsync(flush, i & 0xFF, flush_bytes));
    } else {
      flush_read_kernel<<<132 * 4, 512>>>(static_cast<const int4*>(flush),
                                          static_cast<long long>(flush_bytes / 16), sink);
    }
  }
  // Median, p10, p90 in microseconds of `fn` (which enqueues work on stream 0).
  std::vector<double> run(const std::function<void()>& fn, bool flush_l2_first, int samples) {
    for (int i = 0; i < kWarmup; ++i) fn();
    GEMV_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<cudaEvent_t> ev(2 * static_cast<size_t>(samples));
    for (auto& e : ev) GEMV_CUDA_CHECK(cudaEventCreate(&e));
    for (int i = 0; i < samples; ++i) {
      if (flush_l2_first) flush_l2(i);
      GEMV_CUDA_CHECK(cudaEventRecord(ev[2 * i]));
      fn();
      GEMV_CUDA_CHECK(cudaEventRecord(ev[2 * i + 1]));
    }
    GEMV_CUDA_CHECK(cudaDeviceSynchronize());
    GEMV_CUDA_CHECK(cudaGetLastError());
    std::vector<double> us(static_cast<size_t>(samples));
    for (int i = 0; i < samples; ++i) {
      float ms = 0;
      GEMV_CUDA_CHECK(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]));
      us[i] = ms * 1e3;
    }
    for (auto& e : ev) cudaEventDestroy(e);
    std::sort(us.begin(), us.end());
    return {us[us.size() / 2], us[us.size() / 10], us[us.size() * 9 / 10]};
  }
};
Timer* g_timer = nullptr;

// ---- cuBLAS through dlopen (no link-time dependency; skipped when the library is absent) ---------
struct Cublas {
  void* lib = nullptr;
  cublasHandle_t h = nullptr;
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  using GemmFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                    const void*, const void*, cudaDataType, int, long long, const void*,
                                    cudaDataType, int, long long, const void*, void*, cudaDataType, int,
                                    long long, int, cublasComputeType_t, cublasGemmAlgo_t);
  GemmFn gemm = nullptr;
  bool load() {
    for (const char* name : {"libcublas.so.13", "libcublas.so"}) {
      lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (lib) break;
    }
    if (!lib) return false;
    create = reinterpret_cast<decltype(create)>(dlsym(lib, "cublasCreate_v2"));
    destroy = reinterpret_cast<decltype(destroy)>(dlsym(lib, "cublasDestroy_v2"));
    gemm = reinterpret_cast<decltype(gemm)>(dlsym(lib, "cublasGemmStridedBatchedEx"));
    return create && destroy && gemm && create(&h) == CUBLAS_STATUS_SUCCESS;
  }
};
Cublas g_cublas;
bool g_have_cublas = false;

__device__ float bench_e2m1(unsigned nib) {
  const float mag[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  return (nib & 8) ? -mag[nib & 7] : mag[nib & 7];
}
__device__ float bench_e4m3(unsigned x) {
  const int e = (x >> 3) & 15, mt = x & 7;
  const float mag = e == 0 ? ldexpf(mt / 8.0f, -6) : ldexpf(1.0f + mt / 8.0f, e - 7);
  return (x & 0x80) ? -mag : mag;
}
// Dequantize bytes (two E2M1 each) with one scale per 8 bytes into fp16 pairs (exact in fp16).
__global__ void dequant_kernel(const uint8_t* q, const uint8_t* sf, __half2* out, long long nbytes) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < nbytes;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const unsigned v = q[i];
    const float s = bench_e4m3(sf[i / 8]);
    out[i] = __floats2half2_rn(bench_e2m1(v & 15) * s, bench_e2m1(v >> 4) * s);
  }
}

// ---- one benchmark shape ----------------------------------------------------------------------------
struct Case {
  Shape s;
  DeviceInputs dv;
  __half2* a16 = nullptr;
  __half2* b16 = nullptr;
  __half* c16 = nullptr;
  std::string name;
  int64_t bytes = 0;
  GemvArgs args() const {
    GemvArgs x;
    x.a = dv.a, x.sfa = dv.sfa, x.b = dv.b, x.sfb = dv.sfb, x.c = dv.c, x.m = s.m, x.k = s.k, x.l = s.l;
    return x;
  }
};

void record(const Case& c, const std::string& impl, const std::vector<double>& t, const std::string& note,
            int64_t bytes) {
  Row r;
  r.shape = c.name, r.impl = impl, r.note = note;
  r.us = t[0], r.p10 = t[1], r.p90 = t[2];
  r.gbps = static_cast<double>(bytes) / (r.us * 1e-6) / 1e9;
  r.frac = g_copy_gbps > 0 ? r.gbps / g_copy_gbps : 0;
  g_rows.push_back(r);
}

void fail(const char* what, const GemvResult& r) {
  std::fprintf(stderr, "%s failed: %s\n", what, r.message.c_str());
  std::exit(1);
}

std::vector<double> bench_copy() {
  const size_t n = size_t{1} << 30;
  void *src = nullptr, *dst = nullptr;
  GEMV_CUDA_CHECK(cudaMalloc(&src, n));
  GEMV_CUDA_CHECK(cudaMalloc(&dst, n));
  GEMV_CUDA_CHECK(cudaMemset(src, 1, n));
  auto t = g_timer->run([&] { GEMV_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice)); }, false,
                        20);
  g_copy_gbps = 2.0 * static_cast<double>(n) / (t[0] * 1e-6) / 1e9;
  cudaFree(src), cudaFree(dst);
  Row r;
  r.shape = "copy 1 GiB", r.impl = "cudaMemcpy D2D", r.us = t[0], r.p10 = t[1], r.p90 = t[2];
  r.gbps = g_copy_gbps, r.frac = 1.0, r.note = "read+write bytes";
  g_rows.push_back(r);
  return t;
}

std::vector<double> bench_tma(Case& c, const GemvTuning& t, const std::string& impl) {
  const auto plan = gemv_nvfp4_plan(c.s.m, c.s.k, c.s.l, t);
  char note[160];
  std::snprintf(note, sizeof note, "grid %lld, %d+1 warps, %lld B/stage x %d, smem %lld", (long long)plan.grid,
                plan.consumer_warps, (long long)plan.stage_a_bytes, plan.stages, (long long)plan.smem_bytes);
  const GemvArgs x = c.args();
  auto res = g_timer->run([&] { if (GemvResult r = gemv_nvfp4(x, nullptr, t); !r) fail("gemv_nvfp4", r); }, true,
                          g_samples);
  record(c, impl, res, note, c.bytes);
  return res;
}

std::vector<double> bench_reference(Case& c) {
  const GemvArgs x = c.args();
  auto res = g_timer->run(
      [&] { if (GemvResult r = gemv_nvfp4_reference(x, nullptr); !r) fail("reference", r); }, true,
      std::max(20, g_samples / 4));
  record(c, "reference kernel", res, "one warp per row", c.bytes);
  return res;
}

void cublas_gemv(Case& c) {
  const float alpha = 1.0f, beta = 0.0f;
  const cublasStatus_t st = g_cublas.gemm(
      g_cublas.h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(c.s.m), 1, static_cast<int>(c.s.k), &alpha, c.a16,
      CUDA_R_16F, static_cast<int>(c.s.k), c.s.m * c.s.k, c.b16, CUDA_R_16F, static_cast<int>(c.s.k), c.s.k, &beta,
      c.c16, CUDA_R_16F, static_cast<int>(c.s.m), c.s.m, static_cast<int>(c.s.l), CUBLAS_COMPUTE_32F,
      CUBLAS_GEMM_DEFAULT);
  if (st != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "cublasGemmStridedBatchedEx failed: %d\n", static_cast<int>(st));
    std::exit(1);
  }
}

void dequant(Case& c) {
  const long long na = c.s.l * c.s.m * c.s.k / 2, nb = c.s.l * c.s.k / 2;
  dequant_kernel<<<132 * 8, 256>>>(c.dv.a, c.dv.sfa, c.a16, na);
  dequant_kernel<<<64, 256>>>(c.dv.b, c.dv.sfb, c.b16, nb);
}

std::vector<double> bench_cublas_total(Case& c) {
  auto res = g_timer->run([&] { dequant(c); cublas_gemv(c); }, true, std::max(20, g_samples / 4));
  record(c, "dequant+cuBLAS", res, "dequant to fp16, then GemmStridedBatchedEx", c.bytes);
  return res;
}

std::vector<double> bench_cublas_only(Case& c) {
  dequant(c);
  auto res = g_timer->run([&] { cublas_gemv(c); }, true, g_samples);
  const int64_t f16_bytes = c.s.l * c.s.m * c.s.k * 2 + c.s.l * c.s.k * 2 + c.s.l * c.s.m * 2;
  record(c, "cuBLAS on fp16 A", res, "GEMV alone; GB/s of its fp16 bytes", f16_bytes);
  return res;
}

std::vector<Case> g_cases;

__global__ void empty_kernel(int* p) {
  extern __shared__ int sm[];
  if (p != nullptr && threadIdx.x == 0) sm[0] = p[blockIdx.x];
}

// The fixed cost of one timed launch (a no-op kernel with the TMA kernel's grid, block and shared
// memory, the L2 flushed before it), for reading the small shapes' numbers.
void bench_floor() {
  const auto plan = gemv_nvfp4_plan(7168, 2048, 4);
  GEMV_CUDA_CHECK(cudaFuncSetAttribute(empty_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(plan.smem_bytes)));
  auto t = g_timer->run([&] { empty_kernel<<<plan.grid, plan.threads, plan.smem_bytes>>>(nullptr); }, true,
                        g_samples);
  Row r;
  r.shape = "launch floor", r.impl = "empty kernel", r.us = t[0], r.p10 = t[1], r.p90 = t[2];
  r.note = "same grid/block/smem as the TMA kernel, L2 flushed";
  g_rows.push_back(r);
}

void setup_cases() {
  for (const Shape& s : all_shapes()) {
    if (std::strcmp(s.kind, "bench") != 0) continue;
    Case c;
    c.s = s;
    c.dv.alloc(s);
    c.dv.upload(make_inputs(s, Dist::kNibbles, 1234 + static_cast<uint64_t>(s.m + s.k + s.l)));
    char name[64];
    std::snprintf(name, sizeof name, "%lldx%lldx%lld", (long long)s.m, (long long)s.k, (long long)s.l);
    c.name = name;
    c.bytes = pipesim::model::gemv_bytes_moved({s.m, s.k, s.l});
    if (g_have_cublas) {
      GEMV_CUDA_CHECK(cudaMalloc(&c.a16, static_cast<size_t>(s.l * s.m * s.k * 2)));
      GEMV_CUDA_CHECK(cudaMalloc(&c.b16, static_cast<size_t>(s.l * s.k * 2)));
      GEMV_CUDA_CHECK(cudaMalloc(&c.c16, static_cast<size_t>(s.l * s.m * 2)));
    }
    g_cases.push_back(c);
  }
}

// Agreement of the TMA kernel, the reference kernel and cuBLAS on the benchmark inputs (the full check
// against the CPU reference is gemv_check's job).
void cross_check(Case& c) {
  const int64_t rows = c.s.l * c.s.m;
  std::vector<uint16_t> t(rows), r(rows), q(rows);
  GEMV_CUDA_CHECK(cudaMemset(c.dv.c, 0xFF, rows * 2));
  if (GemvResult e = gemv_nvfp4(c.args(), nullptr); !e) fail("gemv_nvfp4", e);
  GEMV_CUDA_CHECK(cudaMemcpy(t.data(), c.dv.c, rows * 2, cudaMemcpyDeviceToHost));
  GEMV_CUDA_CHECK(cudaMemset(c.dv.c, 0xFF, rows * 2));
  if (GemvResult e = gemv_nvfp4_reference(c.args(), nullptr); !e) fail("reference", e);
  GEMV_CUDA_CHECK(cudaMemcpy(r.data(), c.dv.c, rows * 2, cudaMemcpyDeviceToHost));
  if (g_have_cublas) {
    dequant(c);
    cublas_gemv(c);
    GEMV_CUDA_CHECK(cudaMemcpy(q.data(), c.c16, rows * 2, cudaMemcpyDeviceToHost));
  }
  auto f = [](uint16_t v) { return static_cast<double>(__half2float(__half(__half_raw{v}))); };
  double worst_r = 0, worst_q = 0;
  for (int64_t i = 0; i < rows; ++i) {
    worst_r = std::max(worst_r, std::fabs(f(t[i]) - f(r[i])) / (1e-3 + 1e-3 * std::fabs(f(r[i]))));
    if (g_have_cublas) worst_q = std::max(worst_q, std::fabs(f(t[i]) - f(q[i])) / (1e-3 + 1e-3 * std::fabs(f(q[i]))));
  }
  std::printf("cross-check %s: max |tma - reference| / tol = %.3f, max |tma - cuBLAS| / tol = %.3f\n",
              c.name.c_str(), worst_r, worst_q);
}

const std::vector<std::pair<GemvTuning, std::string>>& sweep() {
  // GemvTuning: stage A bytes, consumer warps, max stages, CTAs per SM, units per lane, waves.
  static const std::vector<std::pair<GemvTuning, std::string>> v = {
      {{16384, 16, 0, 0, 0, 0}, "tma 16K/stage"},
      {{16384, 16, 12, 0, 0, 0}, "tma 16K x<=12"},
      {{8192, 16, 24, 0, 0, 0}, "tma 8K x<=24"},
      {{32768, 16, 0, 0, 1, 0}, "tma 32K 1u"},
      {{32768, 16, 0, 0, 4, 0}, "tma 32K 4u"},
      {{16384, 16, 12, 0, 4, 0}, "tma 16K x<=12 4u"},
      {{32768, 12, 0, 0, 0, 0}, "tma 32K 12w"},
      {{32768, 8, 0, 0, 4, 0}, "tma 32K 8w 4u"},
      {{16384, 8, 0, 2, 0, 0}, "tma 16K 8w 2/SM"},
  };
  return v;
}
bool g_sweep = false;
bool g_profile = false;
bool g_timeline = false;  // --timeline: per-CTA %globaltimer stamps of the planned kernel, printed  // --profile: three launches of the planned TMA kernel per shape, nothing else

void print_table() {
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  std::printf("\n== NVFP4 GEMV on %s (%d SMs), %s; median of %d samples (L2 flushed by %s) ==\n", prop.name,
              prop.multiProcessorCount, date, g_samples, g_flush_memset ? "a 256 MiB memset" : "reading 256 MiB");
  std::printf("%-16s %-20s %10s %10s %10s %9s %8s  %s\n", "shape (m,k,l)", "implementation", "median us", "p10 us",
              "p90 us", "GB/s", "of copy", "notes");
  for (const Row& r : g_rows)
    std::printf("%-16s %-20s %10.2f %10.2f %10.2f %9.0f %7.1f%%  %s\n", r.shape.c_str(), r.impl.c_str(), r.us, r.p10,
                r.p90, r.gbps, 100 * r.frac, r.note.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--samples") && i + 1 < argc) g_samples = std::max(11, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--sweep")) g_sweep = true;
    else if (!std::strcmp(argv[i], "--profile")) g_profile = true;
    else if (!std::strcmp(argv[i], "--timeline")) g_timeline = true;
    else if (!std::strcmp(argv[i], "--flush") && i + 1 < argc) g_flush_memset = !std::strcmp(argv[++i], "memset");
    else rest.push_back(argv[i]);
  }
  if (!have_gpu("gemv_bench")) return 2;
  g_timer = new Timer;
  g_have_cublas = g_cublas.load();
  if (!g_have_cublas) std::printf("gemv_bench: libcublas.so.13 not found; the cuBLAS baseline is skipped\n");
  setup_cases();
  if (g_timeline) {
    for (Case& c : g_cases) {
      const auto plan = gemv_nvfp4_plan(c.s.m, c.s.k, c.s.l);
      unsigned long long* tl = nullptr;
      GEMV_CUDA_CHECK(cudaMalloc(&tl, plan.grid * 3 * sizeof(unsigned long long)));
      GemvTuning t;
      t.timeline = tl;
      std::vector<unsigned long long> h(plan.grid * 3);
      for (int rep = 0; rep < 3; ++rep) {
        g_timer->flush_l2(rep);
        if (GemvResult r = gemv_nvfp4(c.args(), nullptr, t); !r) fail("gemv_nvfp4", r);
        GEMV_CUDA_CHECK(cudaDeviceSynchronize());
      }
      GEMV_CUDA_CHECK(cudaMemcpy(h.data(), tl, h.size() * 8, cudaMemcpyDeviceToHost));
      unsigned long long t0 = ~0ULL, t1max = 0, tend = 0, tendmin = ~0ULL, first_max = 0;
      double first_sum = 0;
      for (int64_t i = 0; i < plan.grid; ++i) {
        t0 = std::min(t0, h[3 * i]);
        tend = std::max(tend, h[3 * i + 2]);
        tendmin = std::min(tendmin, h[3 * i + 2]);
        t1max = std::max(t1max, h[3 * i]);
      }
      for (int64_t i = 0; i < plan.grid; ++i) {
        first_sum += double(h[3 * i + 1] - t0);
        first_max = std::max(first_max, h[3 * i + 1] - t0);
      }
      std::printf("timeline %s: CTA starts spread %.2f us; first full stage avg %.2f max %.2f us after the first "
                  "start; CTA ends %.2f .. %.2f us\n",
                  c.name.c_str(), (t1max - t0) / 1e3, first_sum / plan.grid / 1e3, first_max / 1e3,
                  (tendmin - t0) / 1e3, (tend - t0) / 1e3);
      cudaFree(tl);
    }
  }
  if (g_profile) {
    for (Case& c : g_cases)
      for (int i = 0; i < 3; ++i)
        if (GemvResult r = gemv_nvfp4(c.args(), nullptr); !r) fail("gemv_nvfp4", r);
    GEMV_CUDA_CHECK(cudaDeviceSynchronize());
    return 0;
  }
  for (Case& c : g_cases) cross_check(c);

  std::vector<std::pair<std::string, std::function<std::vector<double>()>>> items;
  items.push_back({"copy", [] { return bench_copy(); }});
  items.push_back({"launch_floor", [] { bench_floor(); return std::vector<double>{g_rows.back().us, 0, 0}; }});
  for (Case& c : g_cases) {
    items.push_back({c.name + "/tma", [&c] { return bench_tma(c, {}, "tma (plan)"); }});
    if (g_sweep)
      for (const auto& [t, name] : sweep()) items.push_back({c.name + "/" + name, [&c, t = t, name = name] {
                                                              return bench_tma(c, t, name);
                                                            }});
    items.push_back({c.name + "/reference", [&c] { return bench_reference(c); }});
    if (g_have_cublas) {
      items.push_back({c.name + "/dequant+cublas", [&c] { return bench_cublas_total(c); }});
      items.push_back({c.name + "/cublas_only", [&c] { return bench_cublas_only(c); }});
    }
  }

#ifdef PIPESIM_GBENCH
  int gargc = static_cast<int>(rest.size());
  benchmark::Initialize(&gargc, rest.data());
  for (auto& [name, fn] : items) {
    auto* b = benchmark::RegisterBenchmark(name.c_str(), [fn = fn](benchmark::State& state) {
      std::vector<double> t;
      for (auto _ : state) {
        t = fn();
        state.SetIterationTime(t[0] * 1e-6);  // the median sample
      }
      const Row& r = g_rows.back();
      state.counters["GB/s"] = r.gbps;
      state.counters["of_copy"] = r.frac;
      state.counters["p10_us"] = t[1];
      state.counters["p90_us"] = t[2];
    });
    b->UseManualTime()->Iterations(1)->Unit(benchmark::kMicrosecond);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
#else
  (void)rest;
  for (auto& [name, fn] : items) fn();
#endif
  print_table();
  return 0;
}
