// Benchmark of the NVFP4 GEMV on the three benchmark shapes of seed-kernels.md.
//
//   gemv_bench [--samples N] [--sweep] [--variants] [--floor] [--timeline] [--timeline-csv FILE]
//              [--flush memset] [google-benchmark flags]
//
// --variants  the alternatives of docs/gemv.md's third pass (stages, first stage, chunks, 2 CTAs/SM)
// --timeline-csv FILE  every CTA's stamps (last timed launch of each variant) as CSV
// --floor     what a timed launch costs without work: empty kernels of several shapes, with and
//             without the flush, back to back, and inside CUDA graphs (docs/gemv.md, launch floor)
// --timeline  per-CTA %globaltimer stamps of each TMA variant, with the event time of the same
//             launches: event time = (flush end -> first CTA entry) + body + rest
//
// Per shape: the TMA kernel (planner's choice; with --sweep also other stage sizes / warp counts),
// the plain reference kernel, and dequantize-then-cuBLAS (A and b dequantized to fp16 by a simple
// kernel, then cublasGemmStridedBatchedEx; timed together, and the cuBLAS GEMV alone). Timing: CUDA
// events around each launch, the L2 flushed before every sample (a kernel reading 256 MiB; --flush
// memset: a 256 MiB memset), all samples enqueued before one synchronisation, the median reported.
// Bandwidth = the bytes the problem must move (A, sfa, b, sfb read once, c written once) / time, and
// its fraction of the bandwidth of a 1 GiB device-to-device cudaMemcpy (read + write bytes) and of a
// copy of the shape's own byte count, both measured in the same run.
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
#include <chrono>
#include <ctime>
#include <functional>
#include <map>
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
  double us = 0, p10 = 0, p90 = 0, gbps = 0, frac = 0, frac_same = 0;
};
std::vector<Row> g_rows;
double g_copy_gbps = 0;
std::map<std::string, double> g_same_copy_gbps;  // shape name -> bandwidth of a copy of its byte count

// ---- timing ---------------------------------------------------------------------------------------
// L2 flush: by default a kernel that reads a 256 MiB buffer (five times the H100's L2), so that L2 holds
// only clean lines of that buffer when the timed kernel starts. A memset flush (--flush memset, what
// torch's cache.zero_() does) leaves up to the whole L2 dirty, and the timed kernel then pays for
// writing it back; both are reported by run_device.sh.
__device__ __forceinline__ unsigned long long globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
// With `stamp`, each block records when it is done (atomicMax of %globaltimer): the flush's end on
// the clock the GEMV's timeline stamps use.
__global__ void flush_read_kernel(const int4* p, long long n, int* sink, unsigned long long* stamp) {
  int acc = 0;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int4 v = __ldcg(p + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x7fffffff) *sink = acc;  // never true for the fill below; keeps the loads
  if (stamp != nullptr) {
    __syncthreads();
    if (threadIdx.x == 0) atomicMax(stamp, globaltimer());
  }
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
  void flush_l2(int i, unsigned long long* stamp = nullptr, cudaStream_t st = nullptr) {
    if (g_flush_memset) {
      GEMV_CUDA_CHECK(cudaMemsetAsync(flush, i & 0xFF, flush_bytes, st));
    } else {
      flush_read_kernel<<<132 * 4, 512, 0, st>>>(static_cast<const int4*>(flush),
                                                 static_cast<long long>(flush_bytes / 16), sink, stamp);
    }
  }
  double host_us_per_sample = 0;  // the last run's enqueue time per sample (host), for the floor
  // Median, p10, p90 in microseconds of the event pairs (2i, 2i+1); destroys the events.
  static std::vector<double> median_p10_p90(std::vector<cudaEvent_t>& ev, int samples) {
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
  // Median, p10, p90 of graph launches (each its own event pair).
  std::vector<double> run_graph(cudaGraphExec_t g, cudaStream_t st, int samples) {
    for (int i = 0; i < kWarmup; ++i) GEMV_CUDA_CHECK(cudaGraphLaunch(g, st));
    GEMV_CUDA_CHECK(cudaStreamSynchronize(st));
    std::vector<cudaEvent_t> ev(2 * static_cast<size_t>(samples));
    for (auto& e : ev) GEMV_CUDA_CHECK(cudaEventCreate(&e));
    for (int i = 0; i < samples; ++i) {
      GEMV_CUDA_CHECK(cudaEventRecord(ev[2 * i], st));
      GEMV_CUDA_CHECK(cudaGraphLaunch(g, st));
      GEMV_CUDA_CHECK(cudaEventRecord(ev[2 * i + 1], st));
    }
    GEMV_CUDA_CHECK(cudaStreamSynchronize(st));
    return median_p10_p90(ev, samples);
  }
  // Median, p10, p90 in microseconds of `fn` (which enqueues work on stream 0).
  std::vector<double> run(const std::function<void()>& fn, bool flush_l2_first, int samples) {
    for (int i = 0; i < kWarmup; ++i) fn();
    GEMV_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<cudaEvent_t> ev(2 * static_cast<size_t>(samples));
    for (auto& e : ev) GEMV_CUDA_CHECK(cudaEventCreate(&e));
    const auto h0 = std::chrono::steady_clock::now();
    for (int i = 0; i < samples; ++i) {
      if (flush_l2_first) flush_l2(i);
      GEMV_CUDA_CHECK(cudaEventRecord(ev[2 * i]));
      fn();
      GEMV_CUDA_CHECK(cudaEventRecord(ev[2 * i + 1]));
    }
    host_us_per_sample =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - h0).count() / samples;
    GEMV_CUDA_CHECK(cudaDeviceSynchronize());
    GEMV_CUDA_CHECK(cudaGetLastError());
    return median_p10_p90(ev, samples);
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
  if (auto it = g_same_copy_gbps.find(c.name); it != g_same_copy_gbps.end()) r.frac_same = r.gbps / it->second;
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

// A copy of the same byte count as the shape moves (L2 flushed first, like the kernels): it pays the
// same launch floor, so the kernel's fraction of it is the second reference column.
void bench_same_copy(Case& c) {
  const size_t n = static_cast<size_t>(c.bytes) / 256 * 256;
  void *src = nullptr, *dst = nullptr;
  GEMV_CUDA_CHECK(cudaMalloc(&src, n));
  GEMV_CUDA_CHECK(cudaMalloc(&dst, n));
  GEMV_CUDA_CHECK(cudaMemset(src, 1, n));
  auto t = g_timer->run([&] { GEMV_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice)); }, true,
                        g_samples);
  cudaFree(src), cudaFree(dst);
  Row r;
  r.shape = c.name, r.impl = "copy, same bytes", r.us = t[0], r.p10 = t[1], r.p90 = t[2];
  r.gbps = 2.0 * static_cast<double>(n) / (t[0] * 1e-6) / 1e9;
  r.frac = g_copy_gbps > 0 ? r.gbps / g_copy_gbps : 0;
  r.frac_same = 1.0;
  g_same_copy_gbps[c.name] = r.gbps;
  r.note = "cudaMemcpy D2D of the shape's bytes, L2 flushed; read+write bytes";
  g_rows.push_back(r);
}

std::string plan_note(const pipesim::model::GemvPlan& plan) {
  char note[200];
  std::snprintf(note, sizeof note, "grid %lld, %d+1 w, %lldB x %d, first %lld, static %lld rows, %lld chunks x %lld rows, smem %lld",
                (long long)plan.grid, plan.consumer_warps, (long long)plan.stage_a_bytes, plan.stages,
                (long long)plan.first_stage_bytes, (long long)plan.static_rows, (long long)plan.chunks,
                (long long)plan.chunk_rows, (long long)plan.smem_bytes);
  return note;
}

std::vector<double> bench_tma(Case& c, const GemvTuning& t, const std::string& impl) {
  const auto plan = gemv_nvfp4_plan(c.s.m, c.s.k, c.s.l, t);
  const std::string note = plan_note(plan);
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

void floor_row(const std::string& what, const std::vector<double>& t, const std::string& note) {
  Row r;
  r.shape = "launch floor", r.impl = what, r.us = t[0], r.p10 = t[1], r.p90 = t[2], r.note = note;
  g_rows.push_back(r);
}

// The fixed cost of one timed launch (a no-op kernel with the TMA kernel's grid, block and shared
// memory, the L2 flushed before it), for reading the small shapes' numbers.
void bench_floor() {
  const auto plan = gemv_nvfp4_plan(7168, 2048, 4);
  GEMV_CUDA_CHECK(cudaFuncSetAttribute(empty_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(plan.smem_bytes)));
  auto t = g_timer->run([&] { empty_kernel<<<plan.grid, plan.threads, plan.smem_bytes>>>(nullptr); }, true,
                        g_samples);
  floor_row("empty kernel", t, "same grid/block/smem as the TMA kernel (7168x2048x4), L2 flushed");
}

// --floor: what a timed launch costs, taken apart.
void bench_floor_detail() {
  const auto plan = gemv_nvfp4_plan(7168, 2048, 4);
  const int g = static_cast<int>(plan.grid), th = plan.threads;
  const size_t sm = static_cast<size_t>(plan.smem_bytes);
  char buf[160];
  struct Cfg { int grid, threads; size_t smem; const char* name; };
  const Cfg cfgs[] = {{g, th, sm, "plan grid/block/smem"}, {1, 32, 0, "1 block, 32 thr, 0 smem"},
                      {g, th, 0, "plan grid/block, 0 smem"}, {g, 32, sm, "plan grid, 32 thr, plan smem"}};
  for (const Cfg& k : cfgs) {
    auto t = g_timer->run([&] { empty_kernel<<<k.grid, k.threads, k.smem>>>(nullptr); }, true, g_samples);
    std::snprintf(buf, sizeof buf, "%s, L2 flushed (host enqueue %.1f us/sample)", k.name, g_timer->host_us_per_sample);
    floor_row(std::string("empty: ") + k.name, t, buf);
  }
  for (const Cfg& k : {cfgs[0], cfgs[1]}) {
    auto t = g_timer->run([&] { empty_kernel<<<k.grid, k.threads, k.smem>>>(nullptr); }, false, g_samples);
    std::snprintf(buf, sizeof buf, "%s, back to back, no flush (host enqueue %.1f us/sample)", k.name,
                  g_timer->host_us_per_sample);
    floor_row(std::string("empty b2b: ") + k.name, t, buf);
  }
  // 100 launches between one event pair: the launch-to-launch cost without events in between.
  for (const Cfg& k : {cfgs[0], cfgs[1]}) {
    auto t = g_timer->run([&] { for (int i = 0; i < 100; ++i) empty_kernel<<<k.grid, k.threads, k.smem>>>(nullptr); },
                          false, std::max(11, g_samples / 10));
    for (double& v : t) v /= 100;
    floor_row(std::string("empty x100 /100: ") + k.name, t, "100 launches per event pair, per launch");
  }
  // The launch path after the event: the empty kernel as a one-node graph, and launched with
  // programmatic stream serialization (PDL) allowed.
  {
    cudaStream_t s1;
    GEMV_CUDA_CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    cudaGraph_t graph;
    cudaGraphExec_t one;
    GEMV_CUDA_CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeRelaxed));
    empty_kernel<<<g, th, sm, s1>>>(nullptr);
    GEMV_CUDA_CHECK(cudaStreamEndCapture(s1, &graph));
    GEMV_CUDA_CHECK(cudaGraphInstantiate(&one, graph, 0));
    GEMV_CUDA_CHECK(cudaGraphDestroy(graph));
    GEMV_CUDA_CHECK(cudaGraphUpload(one, nullptr));
    auto t = g_timer->run([&] { GEMV_CUDA_CHECK(cudaGraphLaunch(one, nullptr)); }, true, g_samples);
    floor_row("empty as a 1-node graph", t, "plan grid/block/smem, cudaGraphLaunch between the events, L2 flushed");
    cudaGraphExecDestroy(one);
    cudaStreamDestroy(s1);
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(g);
    cfg.blockDim = dim3(th);
    cfg.dynamicSmemBytes = sm;
    cfg.stream = nullptr;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    t = g_timer->run([&] { GEMV_CUDA_CHECK(cudaLaunchKernelEx(&cfg, empty_kernel, static_cast<int*>(nullptr))); }, true,
                     g_samples);
    floor_row("empty, PDL attribute", t, "plan grid/block/smem, programmatic stream serialization, L2 flushed");
  }
  // Graphs: [flush], [flush, empty], [flush, TMA kernel of each shape]; the difference to [flush]
  // is what the kernel adds without an event between it and the flush.
  cudaStream_t st;
  GEMV_CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  auto capture = [&](const std::function<void()>& body) {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    GEMV_CUDA_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeRelaxed));
    body();
    GEMV_CUDA_CHECK(cudaStreamEndCapture(st, &graph));
    GEMV_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    GEMV_CUDA_CHECK(cudaGraphDestroy(graph));
    return exec;
  };
  cudaGraphExec_t gf = capture([&] { g_timer->flush_l2(0, nullptr, st); });
  const auto tf = g_timer->run_graph(gf, st, g_samples);
  floor_row("graph [flush]", tf, "the read flush alone, as a graph");
  cudaGraphExec_t ge = capture([&] {
    g_timer->flush_l2(0, nullptr, st);
    empty_kernel<<<g, th, sm, st>>>(nullptr);
  });
  auto te = g_timer->run_graph(ge, st, g_samples);
  floor_row("graph [flush, empty]", te, "plan grid/block/smem");
  for (double& v : te) v -= tf[0];
  floor_row("graph [flush, empty] - [flush]", te, "the empty kernel inside a graph, no event before it");
  for (Case& c : g_cases) {
    // Warm the launcher (counter allocation, attribute) outside the capture.
    if (GemvResult r = gemv_nvfp4(c.args(), st); !r) fail("gemv_nvfp4", r);
    GEMV_CUDA_CHECK(cudaStreamSynchronize(st));
    cudaGraphExec_t gk = capture([&] {
      g_timer->flush_l2(0, nullptr, st);
      if (GemvResult r = gemv_nvfp4(c.args(), st); !r) fail("gemv_nvfp4", r);
    });
    auto tk = g_timer->run_graph(gk, st, g_samples);
    for (double& v : tk) v -= tf[0];
    floor_row("graph [flush, tma] - [flush]", tk, c.name + ": the TMA kernel (plan) inside a graph");
    cudaGraphExecDestroy(gk);
  }
  cudaGraphExecDestroy(gf);
  cudaGraphExecDestroy(ge);
  cudaStreamDestroy(st);
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

// --variants: the work split (static share of the rows, chunk size) and the first stage.
// --variants: the alternatives measured during issue 6 (docs/gemv.md, optimisation notes).
const std::vector<std::pair<GemvTuning, std::string>>& variants() {
  static const std::vector<std::pair<GemvTuning, std::string>> v = {
      {{.max_stages = 8}, "as many stages as fit"},
      {{.first_stage_bytes = 8192}, "first stage 8K"},
      {{.static_permille = 800}, "80% static + chunks"},
      {{.static_permille = 0}, "chunks only"},
      {{.stage_a_bytes = 16384, .consumer_warps = 8, .ctas_per_sm = 2}, "2/SM 8w 16K"},
      {{.stage_a_bytes = 16384, .consumer_warps = 8, .ctas_per_sm = 2, .waves = 2}, "2/SM 8w 16K 2 waves"},
  };
  return v;
}
bool g_sweep = false;
bool g_variants = false;
bool g_floor = false;
bool g_profile = false;   // --profile: three launches of the planned TMA kernel per shape, nothing else
bool g_timeline = false;  // --timeline: per-CTA %globaltimer stamps of each TMA variant, printed

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

std::FILE* g_timeline_csv = nullptr;  // --timeline-csv FILE: every CTA of the last launch of each variant
constexpr int kTl = 10;               // timeline words per CTA (GemvTuning::timeline)

// The timed launches of one variant with per-CTA stamps: event time and its parts, per launch, medians.
void timeline(Case& c, const GemvTuning& t0, const std::string& name, bool flush = true, int reps = 21) {
  const auto plan = gemv_nvfp4_plan(c.s.m, c.s.k, c.s.l, t0);
  unsigned long long *tl = nullptr, *stamp = nullptr;
  GEMV_CUDA_CHECK(cudaMalloc(&tl, plan.grid * kTl * sizeof(unsigned long long)));
  GEMV_CUDA_CHECK(cudaMalloc(&stamp, sizeof(unsigned long long)));
  GemvTuning t = t0;
  t.timeline = tl;
  cudaEvent_t e0, e1;
  GEMV_CUDA_CHECK(cudaEventCreate(&e0));
  GEMV_CUDA_CHECK(cudaEventCreate(&e1));
  int khz = 0;
  GEMV_CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
  const double ghz = khz / 1e6;  // clock64 cycles per ns (the maximum SM clock)
  std::vector<unsigned long long> h(plan.grid * kTl);
  std::vector<double> ev, body, gap, spread_in, first_avg, first_max, end_min, end_max, ch_min, ch_max, rate, cw, pw;
  for (int rep = 0; rep < reps + 2; ++rep) {
    GEMV_CUDA_CHECK(cudaMemsetAsync(stamp, 0, sizeof(unsigned long long)));
    GEMV_CUDA_CHECK(cudaMemsetAsync(tl, 0, plan.grid * kTl * sizeof(unsigned long long)));
    if (flush) g_timer->flush_l2(rep, stamp);
    GEMV_CUDA_CHECK(cudaEventRecord(e0));
    if (GemvResult r = gemv_nvfp4(c.args(), nullptr, t); !r) fail("gemv_nvfp4", r);
    GEMV_CUDA_CHECK(cudaEventRecord(e1));
    GEMV_CUDA_CHECK(cudaDeviceSynchronize());
    if (rep < 2) continue;  // warm-up
    float ms = 0;
    GEMV_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    unsigned long long fe = 0;
    GEMV_CUDA_CHECK(cudaMemcpy(h.data(), tl, h.size() * 8, cudaMemcpyDeviceToHost));
    GEMV_CUDA_CHECK(cudaMemcpy(&fe, stamp, 8, cudaMemcpyDeviceToHost));
    unsigned long long t0s = ~0ULL, t0max = 0, tend = 0, tendmin = ~0ULL, fmax = 0;
    double fsum = 0, cmin = 1e9, cmax = 0;
    std::vector<double> rates, cws, pws;
    for (int64_t i = 0; i < plan.grid; ++i) {
      const unsigned long long* x = &h[kTl * i];
      t0s = std::min(t0s, x[0]);
      t0max = std::max(t0max, x[0]);
      tend = std::max(tend, x[2]);
      tendmin = std::min(tendmin, x[2]);
      cmin = std::min(cmin, double(x[3]));
      cmax = std::max(cmax, double(x[3]));
      cws.push_back(x[5] / ghz / 1e3);
      pws.push_back(x[6] / ghz / 1e3);
      // Streaming rate: the CTA's A + sfa bytes (stages x stage size, close enough) from first stage to end.
      rates.push_back(double(x[7]) * plan.stage_a_bytes * 9 / 8 / double(x[2] - x[1]));
    }
    for (int64_t i = 0; i < plan.grid; ++i) {
      fsum += double(h[kTl * i + 1] - t0s);
      fmax = std::max(fmax, h[kTl * i + 1] - t0s);
    }
    ev.push_back(ms * 1e3);
    body.push_back((tend - t0s) / 1e3);
    gap.push_back(fe ? (double(t0s) - double(fe)) / 1e3 : 0);
    spread_in.push_back((t0max - t0s) / 1e3);
    first_avg.push_back(fsum / plan.grid / 1e3);
    first_max.push_back(fmax / 1e3);
    end_min.push_back((tendmin - t0s) / 1e3);
    end_max.push_back((tend - t0s) / 1e3);
    ch_min.push_back(cmin);
    ch_max.push_back(cmax);
    rate.push_back(median(rates));
    cw.push_back(median(cws));
    pw.push_back(median(pws));
    std::string csv_name = name;  // a CSV field: no commas
    std::replace(csv_name.begin(), csv_name.end(), ',', ';');
    if (rep == reps + 1 && g_timeline_csv != nullptr)
      for (int64_t i = 0; i < plan.grid; ++i) {
        const unsigned long long* x = &h[kTl * i];
        std::fprintf(g_timeline_csv, "%s,%s,%lld,%.3f,%.3f,%.3f,%llu,%llu,%.3f,%.3f,%llu,%.3f,%.3f,%.3f,%.3f\n",
                     c.name.c_str(), csv_name.c_str(), (long long)i, (double(x[0]) - double(t0s)) / 1e3,
                     (double(x[1]) - double(t0s)) / 1e3, (double(x[2]) - double(t0s)) / 1e3, x[3], x[4],
                     x[5] / ghz / 1e3, x[6] / ghz / 1e3, x[7], ms * 1e3, fe ? (double(t0s) - double(fe)) / 1e3 : 0.0,
                     x[8] ? (double(x[8]) - double(t0s)) / 1e3 : -1.0, x[9] ? (double(x[9]) - double(t0s)) / 1e3 : -1.0);
      }
  }
  const double E = median(ev), B = median(body), G = median(gap);
  std::printf("timeline %-12s %-22s event %6.2f = gap %5.2f + body %6.2f + rest %5.2f us | entries spread %4.2f, "
              "first stage avg %4.2f max %4.2f, CTA ends %6.2f .. %6.2f | chunks/CTA %g..%g | median CTA %.1f B/ns, "
              "waits: consumer %.2f producer %.2f us%s\n",
              c.name.c_str(), name.c_str(), E, G, B, E - G - B, median(spread_in), median(first_avg),
              median(first_max), median(end_min), median(end_max), median(ch_min), median(ch_max), median(rate),
              median(cw), median(pw), flush ? "" : " (no flush)");
  cudaFree(tl), cudaFree(stamp);
  cudaEventDestroy(e0), cudaEventDestroy(e1);
}

void print_table() {
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  std::printf("\n== NVFP4 GEMV on %s (%d SMs), %s; median of %d samples (L2 flushed by %s) ==\n", prop.name,
              prop.multiProcessorCount, date, g_samples, g_flush_memset ? "a 256 MiB memset" : "reading 256 MiB");
  std::printf("%-16s %-32s %9s %8s %8s %7s %8s %8s  %s\n", "shape (m,k,l)", "implementation", "median us", "p10 us",
              "p90 us", "GB/s", "of copy", "of same", "notes");
  std::printf("(of copy: of the 1 GiB copy's bandwidth; of same: of a copy of the shape's own byte count, "
              "which pays the same launch floor)\n");
  for (const Row& r : g_rows)
    std::printf("%-16s %-32s %9.2f %8.2f %8.2f %7.0f %7.1f%% %7.1f%%  %s\n", r.shape.c_str(), r.impl.c_str(), r.us,
                r.p10, r.p90, r.gbps, 100 * r.frac, 100 * r.frac_same, r.note.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--samples") && i + 1 < argc) g_samples = std::max(11, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--sweep")) g_sweep = true;
    else if (!std::strcmp(argv[i], "--variants")) g_variants = true;
    else if (!std::strcmp(argv[i], "--floor")) g_floor = true;
    else if (!std::strcmp(argv[i], "--profile")) g_profile = true;
    else if (!std::strcmp(argv[i], "--timeline")) g_timeline = true;
    else if (!std::strcmp(argv[i], "--flush") && i + 1 < argc) g_flush_memset = !std::strcmp(argv[++i], "memset");
    else if (!std::strcmp(argv[i], "--timeline-csv") && i + 1 < argc) {
      g_timeline_csv = std::fopen(argv[++i], "w");
      if (g_timeline_csv)
        std::fprintf(g_timeline_csv, "shape,variant,cta,entry_us,first_us,end_us,chunks,smid,cons_wait_us,"
                                     "prod_wait_us,stages,event_us,gap_us,issue_us,vector_us\n");
    }
    else rest.push_back(argv[i]);
  }
  if (!have_gpu("gemv_bench")) return 2;
  g_timer = new Timer;
  g_have_cublas = g_cublas.load();
  if (!g_have_cublas) std::printf("gemv_bench: libcublas.so.13 not found; the cuBLAS baseline is skipped\n");
  setup_cases();
  if (g_timeline) {
    for (Case& c : g_cases) {
      timeline(c, {}, "plan");
      if (g_variants)
        for (const auto& [t, name] : variants()) timeline(c, t, name);
    }
    // The consumers' own rate: a shape whose A (19 MB) stays in the L2, not flushed, static split.
    Case l2;
    l2.s = Shape{2048, 16384, 1, "l2"};
    l2.dv.alloc(l2.s);
    l2.dv.upload(make_inputs(l2.s, Dist::kNibbles, 99));
    l2.name = "2048x16384x1";
    timeline(l2, {.static_permille = 1000}, "L2-resident, static", false);
    timeline(l2, {}, "L2-resident, plan", false);
    l2.dv.release();
    // A benchmark shape whose bytes fit in the 50 MB L2 (7168x2048x4, 33 MB), not flushed: its
    // consumers' own rate, whose 1 KiB rows flush a warp sum every two steps.
    for (Case& c : g_cases)
      if (c.bytes < (40 << 20)) timeline(c, {}, "plan, L2-resident", false);
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
  if (g_floor)
    items.push_back({"launch_floor_detail", [] { bench_floor_detail(); return std::vector<double>{g_rows.back().us, 0, 0}; }});
  for (Case& c : g_cases) {
    items.push_back({c.name + "/copy_same", [&c] { bench_same_copy(c); return std::vector<double>{g_rows.back().us, 0, 0}; }});
    items.push_back({c.name + "/tma", [&c] { return bench_tma(c, {}, "tma (plan)"); }});
    if (g_variants)
      for (const auto& [t, name] : variants()) items.push_back({c.name + "/" + name, [&c, t = t, name = name] {
                                                                 return bench_tma(c, t, name);
                                                               }});
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
  if (g_timeline_csv) std::fclose(g_timeline_csv);
  return 0;
}
