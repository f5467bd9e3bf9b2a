// The device mode of a capture TU (-DPIPESIM_CORPUS_DEVICE; built by `corpus.py device`, README "On
// the H100"): the same main(), the same example types and the same Gemm::Arguments as the capture, but
//
//   - fake_buffer() allocates a real buffer (cudaMalloc): A, B and C filled with small integers
//     (-2..2, a fixed LCG per buffer name, so every run and every build sees the same inputs), every
//     other buffer (D, Aux, amax) zeroed;
//   - emit<GemmKernel>() sets hw_info from the device (sm_count), builds
//     cutlass::gemm::device::GemmUniversalAdapter<GemmKernel> (the example's Gemm), initialize()s it
//     (workspace from get_workspace_size, zeroed by CUTLASS as always) and run()s it once under a
//     watchdog: cudaStreamQuery polled for --watchdog-s seconds; a launch that never completes prints
//     `verdict=hang` and the process leaves with _exit(3) at once (a hung kernel cannot be stopped from
//     inside; the driver tears the context down when the process is gone);
//   - then, in a timing build, --warmup launches and --iters timed ones (CUDA events around each
//     run(); where there is a workspace, initialize() before each, outside the events, as the examples'
//     own timing loops do: the stream-K barrier workspace must be zeroed before every launch). A short
//     spin kernel goes first,
//     so the host queues the whole timed batch before the GPU reaches it (`queued=yes`) and the events
//     time the kernels back to back, not the host's launch overhead;
//   - in a mutant build (-DPIPESIM_CORPUS_MUTANT=name) only the watched launch.
//
// Every outcome is one line on stdout:
//   RESULT kernel=<example> variant=<v> shape=MxNxK verdict=ok median_us=.. min_us=.. ...   (timing)
//   RESULT mutant=<name> verdict=ok|hang|error ... kernel=<example> variant=<v> shape=MxNxK ...
//   ... verdict=error kind=<cudaGetErrorName | no_device | wrong_arch | cutlass_* | setup> msg="..."
// Exit status: 0 ok, 1 a CUDA or CUTLASS error, 2 setup (no device, bad arguments), 3 hang.
//
// CUTLASS is compiled with CUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL as in the capture (same host code);
// the driver functions it calls (cuTensorMapEncodeTiled; cuMemsetD*Async in fill_workspace) are defined
// below and forward to the driver's, found through the runtime (cudaGetDriverEntryPointByVersion, as
// CUTLASS does without that flag), so libcuda is not linked and the program starts, and says so, on a
// machine without a driver.
#pragma once

#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <type_traits>

#include "cutlass/gemm/device/gemm_universal_adapter.h"

#define PIPESIM_STR_(x) #x
#define PIPESIM_STR(x) PIPESIM_STR_(x)
#ifndef PIPESIM_CORPUS_KERNEL
#error "-DPIPESIM_CORPUS_KERNEL=<example name> (corpus.py device sets it)"
#endif

namespace corpus {

struct DeviceState {
  int device = -1;
  int sm_count = 0;
  std::string gpu;
  std::string head;    // "mutant=<name>" in a mutant build
  std::string kernel;  // "kernel=<example> variant=<v> shape=MxNxK", once parse() has run
};

inline DeviceState& dev() {
  static DeviceState d;
  return d;
}

inline std::string quoted(std::string s) {
  for (auto& c : s)
    if (c == '"' || c == '\n' || c == '\r') c = '\'';
  return "\"" + s + "\"";
}

// One RESULT line, flushed (a hang leaves by _exit): a timing build's starts with the kernel, a
// mutant's with mutant=<name> verdict=...
inline void result_line(const std::string& verdict_and_rest) {
  std::string line = dev().head.empty() ? "RESULT " + dev().kernel + " " + verdict_and_rest
                                        : "RESULT " + dev().head + " " + verdict_and_rest + " " + dev().kernel;
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

[[noreturn]] inline void fail_result(const std::string& kind, const std::string& msg, int code = 1) {
  std::fprintf(stderr, "pipesim-device: %s: %s\n", kind.c_str(), msg.c_str());
  std::fflush(stderr);
  if (!dev().kernel.empty()) result_line("verdict=error kind=" + kind + " msg=" + quoted(msg));
  std::exit(code);
}

// corpus::die() of capture_common.hpp in this mode (bad arguments, an unknown variant, ...).
[[noreturn]] inline void device_die(const std::string& msg) { fail_result("setup", msg, 2); }

[[noreturn]] inline void cuda_fail(const char* where, cudaError_t e) {
  fail_result(cudaGetErrorName(e), std::string(where) + ": " + cudaGetErrorString(e));
}

inline void check(cudaError_t e, const char* where) {
  if (e != cudaSuccess) cuda_fail(where, e);
}

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Wait for `done` (an event or the stream) for at most `limit_s`: a hang prints its verdict and leaves
// at once, without waiting for the GPU.
template <class Query>
void watch(Query const& done, double limit_s, const char* what) {
  auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    cudaError_t e = done();
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) cuda_fail(what, e);
    double t = seconds_since(t0);
    if (t > limit_s) {
      char b[160];
      std::snprintf(b, sizeof b, "verdict=hang waited_s=%.1f at=%s", t, what);
      result_line(b);
      std::fprintf(stderr, "pipesim-device: %s did not complete in %.1f s: a hang; leaving the GPU to the driver\n",
                   what, t);
      std::fflush(stderr);
      _exit(3);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(t < 0.01 ? 20 : 500));
  }
}

// Called by parse(): the variant this build runs by default, then the GPU, or a clean exit without one.
inline void device_setup(Options& o) {
  if (o.list) return;
#ifdef PIPESIM_CORPUS_VARIANT
  if (o.variant.empty()) o.variant = PIPESIM_STR(PIPESIM_CORPUS_VARIANT);
#endif
#ifdef PIPESIM_CORPUS_MUTANT
  dev().head = "mutant=" PIPESIM_STR(PIPESIM_CORPUS_MUTANT);
#endif
  std::string shape = std::to_string(o.m) + "x" + std::to_string(o.n) + "x" + std::to_string(o.k) +
                      (o.l != 1 ? "x" + std::to_string(o.l) : std::string());
  dev().kernel = "kernel=" PIPESIM_STR(PIPESIM_CORPUS_KERNEL) " variant=" + (o.variant.empty() ? std::string("?") : o.variant) +
                 " shape=" + shape;
  if (o.watchdog_s <= 0 || o.warmup < 0 || o.iters < 1) fail_result("setup", "bad --watchdog-s/--warmup/--iters", 2);
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    fail_result("no_device", std::string("no CUDA device: cudaGetDeviceCount: ") +
                                 (e != cudaSuccess ? std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")"
                                                   : std::string("0 devices")), 2);
  }
  check(cudaGetDevice(&dev().device), "cudaGetDevice");
  cudaDeviceProp prop;
  check(cudaGetDeviceProperties(&prop, dev().device), "cudaGetDeviceProperties");
  dev().sm_count = prop.multiProcessorCount;
  dev().gpu = prop.name;
  if (prop.major != 9 || prop.minor != 0)
    fail_result("wrong_arch", "built for sm_90a only; device 0 is " + dev().gpu + " (sm_" + std::to_string(prop.major) +
                                  std::to_string(prop.minor) + ")", 2);
}

struct DeviceBuffer {
  std::string name;
  uint64_t bytes;
  void* ptr;
  uint32_t elem_bytes;
};

inline std::vector<DeviceBuffer>& device_buffers() {
  static std::vector<DeviceBuffer> b;
  return b;
}

// A real device buffer in place of the capture's fake pointer: the inputs A, B, C filled with integers
// in -2..2 (exact in tf32, f16 and e4m3; exact sums in the f32 accumulators, so D does not depend on
// the order of the reduction), everything else zeroed.
template <class T = void>
T* fake_buffer(const char* name, uint64_t bytes) {
  void* p = nullptr;
  check(cudaMalloc(&p, bytes ? bytes : 16), "cudaMalloc");
  std::string n = name;
  uint32_t elem = 1;
  if constexpr (!std::is_void_v<T>) {
    elem = sizeof(T);
    if (n == "A" || n == "B" || n == "C") {
      size_t count = bytes / sizeof(T);
      std::vector<T> host(count);
      uint64_t x = 0x9E3779B97F4A7C15ULL;
      for (char c : n) x = (x ^ static_cast<unsigned char>(c)) * 0x100000001B3ULL;
      for (size_t i = 0; i < count; ++i) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        host[i] = static_cast<T>(static_cast<float>(static_cast<int>((x >> 33) % 5) - 2));
      }
      check(cudaMemcpy(p, host.data(), count * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy");
    } else {
      check(cudaMemset(p, 0, bytes ? bytes : 16), "cudaMemset");
    }
  } else {
    check(cudaMemset(p, 0, bytes ? bytes : 16), "cudaMemset");
  }
  device_buffers().push_back({n, bytes, p, elem});
  buffers().push_back({n, bytes, reinterpret_cast<uint64_t>(p)});
  return static_cast<T*>(p);
}

// FNV-1a of D and its count of nonzero elements: the same inputs give the same D with a correct kernel
// (run_device.sh compares each mutant's with its unpatched kernel's at the same shape).
inline std::string d_summary() {
  for (auto const& b : device_buffers()) {
    if (b.name != "D") continue;
    std::vector<unsigned char> host(b.bytes);
    check(cudaMemcpy(host.data(), b.ptr, b.bytes, cudaMemcpyDeviceToHost), "cudaMemcpy D");
    uint64_t h = 0xcbf29ce484222325ULL;
    for (unsigned char c : host) h = (h ^ c) * 0x100000001b3ULL;
    uint64_t nonzero = 0, count = b.bytes / b.elem_bytes;
    for (uint64_t i = 0; i < count; ++i) {
      bool nz = false;
      for (uint32_t j = 0; j < b.elem_bytes; ++j) nz = nz || host[i * b.elem_bytes + j];
      nonzero += nz;
    }
    char s[96];
    std::snprintf(s, sizeof s, "d_checksum=%016llx d_nonzero=%llu/%llu", static_cast<unsigned long long>(h),
                  static_cast<unsigned long long>(nonzero), static_cast<unsigned long long>(count));
    return s;
  }
  return "d_checksum=none";
}

// Keeps the GPU busy while the host queues the timed batch.
__global__ void pipesim_spin_kernel(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

template <class Kernel, class MakeArgs>
int emit(MakeArgs const& make_args, Options const& opt, Meta meta) {
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;  // the example's Gemm
  using Arguments = typename Gemm::Arguments;
  static_assert(std::is_same_v<std::decay_t<decltype(make_args())>, Arguments>);
  if (meta.example != PIPESIM_STR(PIPESIM_CORPUS_KERNEL) || meta.variant != opt.variant)
    fail_result("setup", "built as " PIPESIM_STR(PIPESIM_CORPUS_KERNEL) ", running " + meta.example + " " + meta.variant, 2);

  Arguments args = make_args();
  args.hw_info.device_id = dev().device;
  args.hw_info.sm_count = dev().sm_count;  // 132 on an H100 SXM: the capture's value
  cutlass::Status st = Gemm::can_implement(args);
  if (st != cutlass::Status::kSuccess) fail_result("cutlass_can_implement", cutlassGetStatusString(st));
  size_t ws_bytes = Gemm::get_workspace_size(args);
  void* workspace = nullptr;
  if (ws_bytes) check(cudaMalloc(&workspace, ws_bytes), "cudaMalloc workspace");
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize (buffers)");

  Gemm gemm;
  auto initialize = [&] {
    cutlass::Status s = gemm.initialize(args, workspace, stream);
    if (s != cutlass::Status::kSuccess) {
      cudaError_t e = cudaGetLastError();
      fail_result("cutlass_initialize", std::string(cutlassGetStatusString(s)) + (e ? std::string(" / ") + cudaGetErrorName(e) : ""));
    }
  };
  auto run = [&] {
    cutlass::Status s = gemm.run(stream);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) cuda_fail("launch", e);
    if (s != cutlass::Status::kSuccess) fail_result("cutlass_run", cutlassGetStatusString(s));
  };

  // The launch the capture describes, under the watchdog.
  auto t0 = std::chrono::steady_clock::now();
  initialize();
  run();
  watch([&] { return cudaStreamQuery(stream); }, opt.watchdog_s, "first_launch");
  double first_ms = seconds_since(t0) * 1e3;
  check(cudaGetLastError(), "after the first launch");
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");

  dim3 grid = Gemm::get_grid_shape(gemm.params());
  dim3 block = Kernel::get_block_shape();
  using Cluster = typename Kernel::DispatchPolicy::ClusterShape;
  char info[320];
  std::snprintf(info, sizeof info, "grid=%ux%ux%u block=%ux%ux%u cluster=%dx%dx%d smem=%d sms=%d workspace=%zu",
                grid.x, grid.y, grid.z, block.x, block.y, block.z, int(cute::size<0>(Cluster{})),
                int(cute::size<1>(Cluster{})), int(cute::size<2>(Cluster{})), int(Kernel::SharedStorageSize),
                dev().sm_count, ws_bytes);
  std::string d0 = d_summary();

  if (!dev().head.empty()) {
    char b[64];
    std::snprintf(b, sizeof b, "verdict=ok first_ms=%.3f", first_ms);
    result_line(std::string(b) + " " + d0 + " " + info + " gpu=" + quoted(dev().gpu));
    return 0;
  }

  // Timing: warm-up, then the timed batch queued behind a spin kernel.
  // initialize() again before each launch only where it does GPU work (the stream-K barrier workspace,
  // which the kernel leaves dirty, is zeroed there); with no workspace it would rebuild the same Params.
  bool reinit = ws_bytes > 0;
  for (int i = 0; i < opt.warmup; ++i) {
    if (reinit) initialize();
    run();
  }
  watch([&] { return cudaStreamQuery(stream); }, opt.watchdog_s, "warmup");
  std::vector<cudaEvent_t> start(opt.iters), stop(opt.iters);
  for (int i = 0; i < opt.iters; ++i) {
    check(cudaEventCreate(&start[i]), "cudaEventCreate");
    check(cudaEventCreate(&stop[i]), "cudaEventCreate");
  }
  cudaEvent_t spun;
  check(cudaEventCreateWithFlags(&spun, cudaEventDisableTiming), "cudaEventCreate");
  pipesim_spin_kernel<<<1, 32, 0, stream>>>(20ull * 1000 * 1000);  // 20 ms
  check(cudaGetLastError(), "spin kernel launch");
  check(cudaEventRecord(spun, stream), "cudaEventRecord");
  for (int i = 0; i < opt.iters; ++i) {
    if (reinit) initialize();
    check(cudaEventRecord(start[i], stream), "cudaEventRecord");
    run();
    check(cudaEventRecord(stop[i], stream), "cudaEventRecord");
  }
  bool queued = cudaEventQuery(spun) == cudaErrorNotReady;
  watch([&] { return cudaEventQuery(stop[opt.iters - 1]); }, opt.watchdog_s + 0.02, "timed_launches");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  std::vector<double> us(opt.iters);
  for (int i = 0; i < opt.iters; ++i) {
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start[i], stop[i]), "cudaEventElapsedTime");
    us[i] = ms * 1e3;
  }
  double mean = 0;
  for (double v : us) mean += v / opt.iters;
  std::sort(us.begin(), us.end());
  double median = opt.iters % 2 ? us[opt.iters / 2] : 0.5 * (us[opt.iters / 2 - 1] + us[opt.iters / 2]);
  double flops = 2.0 * opt.m * opt.n * double(opt.k) * opt.l;
  std::string d1 = d_summary();
  char b[400];
  std::snprintf(b, sizeof b,
                "verdict=ok median_us=%.2f min_us=%.2f max_us=%.2f mean_us=%.2f tflops=%.1f iters=%d warmup=%d "
                "queued=%s first_ms=%.3f",
                median, us.front(), us.back(), mean, flops / (median * 1e-6) / 1e12, opt.iters, opt.warmup,
                queued ? "yes" : "no", first_ms);
  result_line(std::string(b) + " " + info + " " + d0 + " d_stable=" + (d0 == d1 ? "yes" : "no") + " gpu=" +
              quoted(dev().gpu));
  return 0;
}

}  // namespace corpus

namespace corpus {
// A driver function, through the runtime (which loaded libcuda): libcuda is never linked.
inline void* driver_entry(const char* name) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult q;
  cudaError_t e = cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &q);
  if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || !p)
    fail_result("setup", std::string("the driver has no ") + name);
  return p;
}
}  // namespace corpus

// The driver entry points CUTLASS calls directly: cuTensorMapEncodeTiled (CUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL,
// as in the capture) and, from cutlass::fill_workspace (54's amax epilogue workspace), cuMemsetD*Async
// and cuGetErrorString; each forwards to the driver's. The capture never instantiated initialize(),
// so it needed only the first.
#define PIPESIM_DRIVER_FN(name) \
  static auto fn = reinterpret_cast<decltype(&::name)>(corpus::driver_entry(PIPESIM_STR(name)))

extern "C" CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dst, unsigned int value, size_t n, CUstream stream) {
  PIPESIM_DRIVER_FN(cuMemsetD32Async);
  return fn(dst, value, n, stream);
}
extern "C" CUresult CUDAAPI cuMemsetD16Async(CUdeviceptr dst, unsigned short value, size_t n, CUstream stream) {
  PIPESIM_DRIVER_FN(cuMemsetD16Async);
  return fn(dst, value, n, stream);
}
extern "C" CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n, CUstream stream) {
  PIPESIM_DRIVER_FN(cuMemsetD8Async);
  return fn(dst, value, n, stream);
}
extern "C" CUresult CUDAAPI cuGetErrorString(CUresult error, const char** str) {
  PIPESIM_DRIVER_FN(cuGetErrorString);
  return fn(error, str);
}

// cuTensorMapEncodeTiled: a refusal stops the run (CUTLASS would only print it and launch with a
// broken tensor map).
extern "C" CUresult CUDAAPI cuTensorMapEncodeTiled(
    CUtensorMap* tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank, void* globalAddress,
    const cuuint64_t* globalDim, const cuuint64_t* globalStrides, const cuuint32_t* boxDim,
    const cuuint32_t* elementStrides, CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
    CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill) {
  PIPESIM_DRIVER_FN(cuTensorMapEncodeTiled);
  CUresult r = fn(tensorMap, tensorDataType, tensorRank, globalAddress, globalDim, globalStrides, boxDim,
                  elementStrides, interleave, swizzle, l2Promotion, oobFill);
  if (r != CUDA_SUCCESS) corpus::fail_result("tensormap", "cuTensorMapEncodeTiled returned " + std::to_string(int(r)));
  return r;
}
