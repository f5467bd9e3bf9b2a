// run_on_gpu: the worker side (CUDA driver API, loaded at run time) and the caller's watchdog. The
// worker reports on its pipe as it goes: 'R' ready to launch (device), 'L' one launch done (index,
// ms), 'S' the stamped launch done (ms, its stamps), 'E' the end (outcome, message); the caller times
// every launch from the previous report.
#include "kernels/ptx_launch/ptx_runner.hpp"

#include <cuda.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "kernels/ptx_launch/relocate.hpp"
#include "kernels/worker_process.hpp"
#include "sim/device_io.hpp"

namespace pipesim::ptx_launch {
namespace {

using Out = sim::Writer<worker::FdSink>;
using In = sim::Reader<worker::FdSource>;

enum Record : uint8_t { kReady = 'R', kLaunched = 'L', kStamped = 'S', kEnd = 'E' };

// The driver functions the worker calls, found through cuGetProcAddress at the header's CUDA_VERSION
// (so cuMemAlloc is cuMemAlloc_v2's ABI, as the header declares it). X(name) expands `name` for the
// type (the header's versioned macro) and stringizes it unexpanded for the lookup.
#define PIPESIM_CU_FUNCTIONS(X)                                                                                 \
  X(cuInit) X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetAttribute) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent) \
  X(cuModuleLoadDataEx) X(cuModuleGetFunction) X(cuFuncSetAttribute) X(cuMemAlloc) X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemsetD8)  \
  X(cuMemsetD8Async)                                                                                          \
  X(cuStreamCreate) X(cuStreamSynchronize) X(cuEventCreate) X(cuEventRecord) X(cuEventSynchronize)               \
  X(cuEventElapsedTime) X(cuLaunchKernelEx) X(cuTensorMapEncodeTiled) X(cuGetErrorName) X(cuGetErrorString)

struct Driver {
#define PIPESIM_CU_MEMBER(fn) decltype(&::fn) fn = nullptr;
  PIPESIM_CU_FUNCTIONS(PIPESIM_CU_MEMBER)
#undef PIPESIM_CU_MEMBER
};

// Something that ends the worker's run: the outcome and what to say.
struct Stop {
  GpuOutcome outcome;
  std::string message;
};

std::string cu_error(const Driver& d, CUresult rc) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (d.cuGetErrorName) d.cuGetErrorName(rc, &name);
  if (d.cuGetErrorString) d.cuGetErrorString(rc, &text);
  return fmt::format("{} ({})", name ? name : fmt::format("CUresult {}", static_cast<int>(rc)), text ? text : "no description");
}

void check(const Driver& d, CUresult rc, GpuOutcome outcome, const std::string& what) {
  if (rc != CUDA_SUCCESS) throw Stop{outcome, what + ": " + cu_error(d, rc)};
}

Driver load_driver() {
  // dlopen, not a link-time dependency: pipesim runs (and says why crosscheck cannot) where the
  // driver is missing.
  void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    throw Stop{GpuOutcome::Unavailable,
               fmt::format("cuInit cannot run: the NVIDIA driver library libcuda.so.1 is not installed ({})", ::dlerror())};
  using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  const auto get_proc = reinterpret_cast<GetProc>(::dlsym(lib, "cuGetProcAddress_v2"));
  if (!get_proc) throw Stop{GpuOutcome::Unavailable, "the NVIDIA driver has no cuGetProcAddress_v2 (a driver for CUDA 12 or later is needed)"};
  Driver d;
#define PIPESIM_CU_LOAD(fn)                                                                                       \
  {                                                                                                               \
    void* p = nullptr;                                                                                            \
    CUdriverProcAddressQueryResult found{};                                                                       \
    if (get_proc(#fn, &p, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &found) != CUDA_SUCCESS || !p)              \
      throw Stop{GpuOutcome::Unavailable, fmt::format("the NVIDIA driver lacks {} (built against CUDA {})", #fn, CUDA_VERSION)}; \
    d.fn = reinterpret_cast<decltype(d.fn)>(p);                                                                   \
  }
  PIPESIM_CU_FUNCTIONS(PIPESIM_CU_LOAD)
#undef PIPESIM_CU_LOAD
  return d;
}

// "sm_90a" -> 90; 0 when it is not that shape.
int arch_number(const std::string& arch) {
  if (!arch.starts_with("sm_")) return 0;
  return std::atoi(arch.c_str() + 3);
}

CUtensorMapDataType tensor_map_type(const ptx::TensorMapDesc& t) {
  static const std::pair<const char*, CUtensorMapDataType> kTypes[] = {
      {"u8", CU_TENSOR_MAP_DATA_TYPE_UINT8},       {"u16", CU_TENSOR_MAP_DATA_TYPE_UINT16},
      {"u32", CU_TENSOR_MAP_DATA_TYPE_UINT32},     {"s32", CU_TENSOR_MAP_DATA_TYPE_INT32},
      {"u64", CU_TENSOR_MAP_DATA_TYPE_UINT64},     {"s64", CU_TENSOR_MAP_DATA_TYPE_INT64},
      {"f16", CU_TENSOR_MAP_DATA_TYPE_FLOAT16},    {"bf16", CU_TENSOR_MAP_DATA_TYPE_BFLOAT16},
      {"f32", CU_TENSOR_MAP_DATA_TYPE_FLOAT32},    {"f32_ftz", CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ},
      {"tf32", CU_TENSOR_MAP_DATA_TYPE_TFLOAT32},  {"tf32_ftz", CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ},
      {"f64", CU_TENSOR_MAP_DATA_TYPE_FLOAT64},    {"e4m3", CU_TENSOR_MAP_DATA_TYPE_UINT8},
      {"e5m2", CU_TENSOR_MAP_DATA_TYPE_UINT8},     {"e2m1", CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B},
      {"u4", CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B}, {"e2m1_align16b", CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B},
      {"u4_align16b", CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B}, {"e2m3_align16b", CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B},
      {"e3m2_align16b", CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B}, {"u6_align16b", CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B},
  };
  for (const auto& [name, type] : kTypes)
    if (t.type_name == name) return type;
  throw Stop{GpuOutcome::NotRun, fmt::format("tensor map '{}': type '{}' has no driver type here", t.name, t.type_name)};
}

template <class Enum, size_t N>
Enum pick(const std::pair<const char*, Enum> (&table)[N], const std::string& name, const ptx::TensorMapDesc& t, const char* key) {
  for (const auto& [n, e] : table)
    if (name == n) return e;
  throw Stop{GpuOutcome::NotRun, fmt::format("tensor map '{}': {} '{}' has no driver value here", t.name, key, name)};
}

CUtensorMap encode_tensor_map(const Driver& d, const ptx::TensorMapDesc& t, uint64_t address) {
  static const std::pair<const char*, CUtensorMapInterleave> kInterleave[] = {
      {"none", CU_TENSOR_MAP_INTERLEAVE_NONE}, {"16b", CU_TENSOR_MAP_INTERLEAVE_16B}, {"32b", CU_TENSOR_MAP_INTERLEAVE_32B}};
  static const std::pair<const char*, CUtensorMapSwizzle> kSwizzle[] = {
      {"none", CU_TENSOR_MAP_SWIZZLE_NONE},
      {"32b", CU_TENSOR_MAP_SWIZZLE_32B},
      {"64b", CU_TENSOR_MAP_SWIZZLE_64B},
      {"128b", CU_TENSOR_MAP_SWIZZLE_128B},
      {"128b_atom_32b", CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B},
      {"128b_atom_32b_flip_8b", CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B_FLIP_8B},
      {"128b_atom_64b", CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B}};
  static const std::pair<const char*, CUtensorMapL2promotion> kL2[] = {{"none", CU_TENSOR_MAP_L2_PROMOTION_NONE},
                                                                        {"64b", CU_TENSOR_MAP_L2_PROMOTION_L2_64B},
                                                                        {"128b", CU_TENSOR_MAP_L2_PROMOTION_L2_128B},
                                                                        {"256b", CU_TENSOR_MAP_L2_PROMOTION_L2_256B}};
  static const std::pair<const char*, CUtensorMapFloatOOBfill> kOob[] = {
      {"none", CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE}, {"nan", CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA}};
  cuuint64_t dims[5] = {}, strides[4] = {};
  cuuint32_t box[5] = {}, elem_strides[5] = {};
  for (uint32_t i = 0; i < t.rank; ++i) {
    dims[i] = t.dims[i];
    box[i] = t.box[i];
    elem_strides[i] = t.elem_strides[i];
    if (i > 0) strides[i - 1] = t.strides[i];  // the driver's strides start at dimension 1
  }
  CUtensorMap map{};
  check(d,
        d.cuTensorMapEncodeTiled(&map, tensor_map_type(t), t.rank, reinterpret_cast<void*>(address), dims, strides, box,
                                 elem_strides, pick(kInterleave, t.interleave, t, "interleave"), pick(kSwizzle, t.swizzle, t, "swizzle"),
                                 pick(kL2, t.l2_promotion, t, "l2_promotion"), pick(kOob, t.oob_fill, t, "oob_fill")),
        GpuOutcome::NotRun, fmt::format("cuTensorMapEncodeTiled for tensor map '{}'", t.name));
  return map;
}

std::string launch_label(int i, int warmup, int total) {
  return i < warmup ? fmt::format("launch {} of {}, warm-up", i + 1, total) : fmt::format("launch {} of {}", i + 1, total);
}

// The spin kernel the timed batch is queued behind (back to back): it holds its stream for `ns`.
constexpr const char* kSpinPtx = R"(.version 7.0
.target sm_70
.address_size 64
.visible .entry pipesim_spin(.param .u64 ns) {
  .reg .u64 %t0, %t1, %lim;
  .reg .pred %p;
  ld.param.u64 %lim, [ns];
  mov.u64 %t0, %globaltimer;
SPIN:
  mov.u64 %t1, %globaltimer;
  sub.u64 %t1, %t1, %t0;
  setp.lt.u64 %p, %t1, %lim;
  @%p bra SPIN;
  ret;
}
)";

// The timed launches back to back (GpuRunOptions::back_to_back): queued behind the spin kernel on the
// launch's stream, CUDA events around each; each is reported as it completes, so that the caller's
// watchdog still names the launch that hangs.
void time_back_to_back(const Driver& d, Out& out, CUlaunchConfig config, CUfunction fn, std::vector<void*>& args,
                       const GpuRunOptions& o, const std::function<void(const std::string&)>& before_launch) {
  CUmodule spin_module{};
  check(d, d.cuModuleLoadDataEx(&spin_module, kSpinPtx, 0, nullptr, nullptr), GpuOutcome::NotRun, "the JIT of the spin kernel");
  CUfunction spin{};
  check(d, d.cuModuleGetFunction(&spin, spin_module, "pipesim_spin"), GpuOutcome::NotRun, "cuModuleGetFunction(pipesim_spin)");
  std::vector<CUevent> start(static_cast<size_t>(o.runs)), stop(start.size());
  for (size_t i = 0; i < start.size(); ++i) {
    check(d, d.cuEventCreate(&start[i], CU_EVENT_DEFAULT), GpuOutcome::NotRun, "cuEventCreate");
    check(d, d.cuEventCreate(&stop[i], CU_EVENT_DEFAULT), GpuOutcome::NotRun, "cuEventCreate");
  }
  CUlaunchConfig one = config;
  one.gridDimX = one.gridDimY = one.gridDimZ = 1;
  one.blockDimX = 32, one.blockDimY = one.blockDimZ = 1;
  one.sharedMemBytes = 0;
  one.numAttrs = 0;
  auto spin_ns = static_cast<uint64_t>(back_to_back_spin_ms(o.runs) * 1e6);
  void* spin_args[] = {&spin_ns};
  check(d, d.cuLaunchKernelEx(&one, spin, spin_args, nullptr), GpuOutcome::NotRun, "the spin kernel's launch was refused");
  const int total = o.warmup + o.runs;
  for (size_t i = 0; i < start.size(); ++i) {
    const std::string at = launch_label(o.warmup + static_cast<int>(i), o.warmup, total);
    before_launch(at);
    check(d, d.cuEventRecord(start[i], config.hStream), GpuOutcome::Fault, "cuEventRecord (" + at + ")");
    check(d, d.cuLaunchKernelEx(&config, fn, args.data(), nullptr), GpuOutcome::NotRun, "the launch was refused (" + at + ")");
    check(d, d.cuEventRecord(stop[i], config.hStream), GpuOutcome::Fault, "cuEventRecord (" + at + ")");
  }
  for (size_t i = 0; i < start.size() && out.ok; ++i) {
    const std::string at = launch_label(o.warmup + static_cast<int>(i), o.warmup, total);
    check(d, d.cuEventSynchronize(stop[i]), GpuOutcome::Fault, at);
    float ms = 0;
    check(d, d.cuEventElapsedTime(&ms, start[i], stop[i]), GpuOutcome::Fault, "cuEventElapsedTime (" + at + ")");
    out.pod(static_cast<uint8_t>(kLaunched));
    out.pod(static_cast<uint32_t>(o.warmup + static_cast<int>(i)));
    out.pod(static_cast<double>(ms));
  }
}

// The worker's body: everything CUDA. Reports as it goes; ends with an 'E' record.
void worker_body(int out_fd, const std::string& ptx_text, const std::string& entry, const ptx::Launch& l, const GpuRunOptions& o) {
  Out out{worker::FdSink{out_fd}};
  auto end = [&](GpuOutcome outcome, const std::string& message, const std::string& jit_log) {
    out.pod(static_cast<uint8_t>(kEnd));
    out.pod(outcome);
    out.str(message);
    out.str(jit_log);
  };
  std::string jit_log;
  try {
    // Load the module (and JIT it) now, not at the first launch, so the watchdog times only kernels.
    ::setenv("CUDA_MODULE_LOADING", "EAGER", 1);
    const Driver d = load_driver();
    check(d, d.cuInit(0), GpuOutcome::Unavailable, "cuInit failed");
    CUdevice dev{};
    check(d, d.cuDeviceGet(&dev, 0), GpuOutcome::Unavailable, "cuDeviceGet(0)");
    char name[256] = {};
    d.cuDeviceGetName(name, sizeof name - 1, dev);
    int major = 0, minor = 0, sms = 0;
    d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    d.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    d.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
    const std::string device = fmt::format("{}, sm_{}{}, {} SMs", name, major, minor, sms);
    if (arch_number(l.arch) != major * 10 + minor)
      throw Stop{GpuOutcome::Unavailable, fmt::format("the launch is for {}, but the GPU is {}", l.arch, device)};
    CUcontext ctx{};
    check(d, d.cuDevicePrimaryCtxRetain(&ctx, dev), GpuOutcome::Unavailable, "cuDevicePrimaryCtxRetain");
    check(d, d.cuCtxSetCurrent(ctx), GpuOutcome::Unavailable, "cuCtxSetCurrent");

    std::vector<char> info(1 << 16, 0), error(1 << 16, 0);
    CUjit_option keys[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER,
                           CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_LOG_VERBOSE};
    void* values[] = {info.data(), reinterpret_cast<void*>(static_cast<uintptr_t>(info.size() - 1)), error.data(),
                      reinterpret_cast<void*>(static_cast<uintptr_t>(error.size() - 1)), reinterpret_cast<void*>(uintptr_t{1})};
    // The entry of `text` (the kernel's PTX, or the stamped one) JIT'd, with the launch's attributes.
    auto function_of = [&](const std::string& text, bool stamped) {
      CUmodule m{};
      const CUresult jit = d.cuModuleLoadDataEx(&m, text.c_str(), 5, keys, values);
      if (!stamped) jit_log = info.data();
      if (jit != CUDA_SUCCESS)
        throw Stop{GpuOutcome::NotRun, fmt::format("the JIT of the {}PTX failed: {}{}{}", stamped ? "stamped " : "", cu_error(d, jit),
                                                   error[0] ? ": " : "", std::string(error.data()))};
      CUfunction f{};
      check(d, d.cuModuleGetFunction(&f, m, entry.c_str()), GpuOutcome::NotRun,
            "cuModuleGetFunction(" + entry + (stamped ? " with stamps" : "") + ")");
      check(d, d.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(l.dynamic_smem)),
            GpuOutcome::NotRun, fmt::format("cuFuncSetAttribute(max dynamic shared memory = {})", l.dynamic_smem));
      if (l.non_portable_cluster || l.cluster_size() > 8)
        check(d, d.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1), GpuOutcome::NotRun,
              "cuFuncSetAttribute(non-portable cluster size allowed)");
      return f;
    };
    const CUfunction fn = function_of(ptx_text, false);
    CUfunction stamped_fn{};
    CUdeviceptr stamp_buffer{};
    if (o.stamps) {
      stamped_fn = function_of(o.stamps->text, true);
      check(d, d.cuMemAlloc(&stamp_buffer, o.stamps->buffer_bytes()), GpuOutcome::NotRun,
            fmt::format("cuMemAlloc of the stamps ({} B)", o.stamps->buffer_bytes()));
    }

    // The buffers, for real; then the parameters moved onto them.
    std::vector<CUdeviceptr> real(l.buffers.size());
    std::vector<uint64_t> real_addresses(l.buffers.size());
    for (size_t i = 0; i < l.buffers.size(); ++i) {
      check(d, d.cuMemAlloc(&real[i], l.buffers[i].bytes), GpuOutcome::NotRun,
            fmt::format("cuMemAlloc of buffer '{}' ({} B)", l.buffers[i].name, l.buffers[i].bytes));
      real_addresses[i] = real[i];
    }
    RelocatedLaunch moved;
    try {
      moved = relocate_launch(l, real_addresses);
    } catch (const ptx::LaunchError& e) {
      throw Stop{GpuOutcome::NotRun, e.what()};
    }
    for (const TensorMapSlot& s : moved.tensormap_slots) {
      const CUtensorMap map = encode_tensor_map(d, l.tensormaps[s.index], moved.tensormap_addresses[s.index]);
      std::memcpy(moved.param_bytes.data() + s.offset, &map, sizeof map);
    }
    std::vector<void*> args;
    for (const ptx::ParamValue& p : l.params) args.push_back(moved.param_bytes.data() + p.offset);

    CUstream stream{};
    check(d, d.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), GpuOutcome::NotRun, "cuStreamCreate");
    CUevent start{}, stop{};
    check(d, d.cuEventCreate(&start, CU_EVENT_DEFAULT), GpuOutcome::NotRun, "cuEventCreate");
    check(d, d.cuEventCreate(&stop, CU_EVENT_DEFAULT), GpuOutcome::NotRun, "cuEventCreate");
    CUlaunchAttribute cluster{};
    cluster.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    cluster.value.clusterDim.x = l.cluster[0];
    cluster.value.clusterDim.y = l.cluster[1];
    cluster.value.clusterDim.z = l.cluster[2];
    CUlaunchConfig config{};
    config.gridDimX = l.grid[0], config.gridDimY = l.grid[1], config.gridDimZ = l.grid[2];
    config.blockDimX = l.block[0], config.blockDimY = l.block[1], config.blockDimZ = l.block[2];
    config.sharedMemBytes = static_cast<unsigned>(l.dynamic_smem);
    config.hStream = stream;
    config.attrs = &cluster;
    config.numAttrs = l.cluster_size() > 1 ? 1 : 0;

    // One kernel on the GPU at a time among crosschecks on this machine (see GpuRunOptions).
    const int lock = ::open(o.lock_file.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0666);
    if (lock >= 0) ::flock(lock, LOCK_EX);
    out.pod(static_cast<uint8_t>(kReady));
    out.str(device);
    const int total = o.warmup + o.runs;
    // --cold-l2: the scratch buffer that evicts the kernel's data from the L2 before each timed launch.
    CUdeviceptr scratch{};
    size_t scratch_bytes = 0;
    if (o.cold_l2) {
      int l2 = 0;
      d.cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev);
      scratch_bytes = 2 * static_cast<size_t>(std::max(l2, 1 << 20));
      check(d, d.cuMemAlloc(&scratch, scratch_bytes), GpuOutcome::NotRun, fmt::format("cuMemAlloc of the L2 flush buffer ({} B)", scratch_bytes));
    }
    uint8_t flushes = 0;
    auto before_launch = [&](const std::string& at) {
      if (o.cold_l2)
        check(d, d.cuMemsetD8Async(scratch, ++flushes, scratch_bytes, stream), GpuOutcome::NotRun, "the L2 flush (" + at + ")");
    };
    // One launch of `f` between CUDA events on the launch's stream, waited for: its time in ms.
    auto timed_launch = [&](CUfunction f, std::vector<void*>& a, const std::string& at) {
      before_launch(at);
      check(d, d.cuEventRecord(start, stream), GpuOutcome::Fault, "cuEventRecord (" + at + ")");
      check(d, d.cuLaunchKernelEx(&config, f, a.data(), nullptr), GpuOutcome::NotRun, "the launch was refused (" + at + ")");
      check(d, d.cuEventRecord(stop, stream), GpuOutcome::Fault, "cuEventRecord (" + at + ")");
      check(d, d.cuEventSynchronize(stop), GpuOutcome::Fault, at);
      float ms = 0;
      check(d, d.cuEventElapsedTime(&ms, start, stop), GpuOutcome::Fault, "cuEventElapsedTime (" + at + ")");
      return ms;
    };
    // The fills go on the NULL stream, which the launch's non-blocking stream does not wait for, and
    // a memset may still run when the call returns: wait for them before anything is launched.
    auto refill = [&] {
      for (size_t b = 0; b < l.buffers.size(); ++b) {
        check(d, d.cuMemsetD8(real[b], 0, l.buffers[b].bytes), GpuOutcome::NotRun, "cuMemsetD8");
        const auto c = l.contents.find(l.buffers[b].name);
        if (c != l.contents.end() && !c->second.empty())
          check(d, d.cuMemcpyHtoD(real[b], c->second.data(), c->second.size()), GpuOutcome::NotRun, "cuMemcpyHtoD");
      }
      check(d, d.cuStreamSynchronize(nullptr), GpuOutcome::NotRun, "cuStreamSynchronize (the buffers' fills)");
    };
    for (int i = 0; i < (o.back_to_back ? o.warmup : total) && out.ok; ++i) {
      // Every launch starts from the buffers' initial contents (a kernel may keep state in them).
      refill();
      const float ms = timed_launch(fn, args, launch_label(i, o.warmup, total));
      out.pod(static_cast<uint8_t>(kLaunched));
      out.pod(static_cast<uint32_t>(i));
      out.pod(static_cast<double>(ms));
    }
    if (o.back_to_back && out.ok) {
      refill();
      time_back_to_back(d, out, config, fn, args, o, before_launch);
    }
    // The stamped launch finds what the timed ones found: back to back, the buffers and the L2 as the
    // last timed launch left them; else freshly filled buffers. Its module runs once before it, so
    // that its code, like the timed launches', is not fetched for the first time (a first launch's
    // producer reached its first copy ~1.3 us later in CUTLASS 49 stream-K on the H100).
    if (o.stamps && out.ok) {
      std::vector<void*> stamped_args = args;
      stamped_args.push_back(&stamp_buffer);
      auto prepare = [&] {
        if (!o.back_to_back) refill();
        check(d, d.cuMemsetD8(stamp_buffer, 0, o.stamps->buffer_bytes()), GpuOutcome::NotRun, "cuMemsetD8 (stamps)");
        check(d, d.cuStreamSynchronize(nullptr), GpuOutcome::NotRun, "cuStreamSynchronize (the stamps' fill)");
      };
      prepare();
      timed_launch(stamped_fn, stamped_args, "the stamped module's warm-up");
      prepare();
      const float ms = timed_launch(stamped_fn, stamped_args, "the stamped launch");
      std::vector<uint64_t> stamps(o.stamps->buffer_bytes() / 8);
      check(d, d.cuMemcpyDtoH(stamps.data(), stamp_buffer, o.stamps->buffer_bytes()), GpuOutcome::Fault, "reading the stamps back");
      out.pod(static_cast<uint8_t>(kStamped));
      out.pod(static_cast<double>(ms));
      out.vec(stamps);
    }
    end(GpuOutcome::Ok, "", jit_log);
  } catch (const Stop& s) {
    end(s.outcome, s.message, jit_log);
  } catch (const std::exception& e) {
    end(GpuOutcome::NotRun, e.what(), jit_log);
  }
  // No teardown: a faulted context cannot be destroyed cleanly, and the process exit frees it all.
  _exit(0);
}

}  // namespace

GpuRun run_on_gpu(const std::string& ptx_text, const std::string& entry, const ptx::Launch& launch, const GpuRunOptions& o) {
  GpuRun r;
  r.launches_total = o.warmup + o.runs;
  worker::WorkerProcess w;
  std::string why;
  // The child is a fork: it has the PTX text and the launch already, only results travel.
  if (!w.start([&](int, int out_fd) { worker_body(out_fd, ptx_text, entry, launch, o); }, why)) {
    r.outcome = GpuOutcome::Unavailable;
    r.message = "could not start the GPU worker: " + why;
    return r;
  }
  In in{worker::FdSource{w.from_child()}};
  bool launching = false;
  auto t0 = std::chrono::steady_clock::now();
  while (true) {
    double limit_s = launching ? o.timeout_ms * 1e-3 : o.setup_timeout_s;
    // Back to back, the first timed launch waits behind the spin kernel first.
    if (launching && o.back_to_back && r.launches_done == o.warmup) limit_s += back_to_back_spin_ms(o.runs) * 1e-3;
    if (!w.wait_readable(limit_s - std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count())) {
      w.stop(true);
      r.hung_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (launching) {
        r.outcome = GpuOutcome::Hang;
        r.message = fmt::format("watchdog at {:.0f} ms: {} still running; worker killed (SIGKILL)", o.timeout_ms,
                                launch_label(r.launches_done, o.warmup, r.launches_total));
      } else {
        r.outcome = GpuOutcome::NotRun;
        r.message = fmt::format("the GPU worker did not get the kernel ready (driver start, JIT) in {:.0f} s; killed", o.setup_timeout_s);
      }
      return r;
    }
    uint8_t tag = 0;
    in.pod(tag);
    if (in.ok && tag == kReady) {
      in.str(r.device);
      launching = true;
    } else if (in.ok && tag == kLaunched) {
      uint32_t index = 0;
      double ms = 0;
      in.pod(index), in.pod(ms);
      ++r.launches_done;
      if (static_cast<int>(index) >= o.warmup) r.times_ms.push_back(ms);
    } else if (in.ok && tag == kStamped) {
      in.pod(r.stamped_ms), in.vec(r.stamps);
    } else if (in.ok && tag == kEnd) {
      in.pod(r.outcome), in.str(r.message), in.str(r.jit_log);
      if (in.ok) {
        w.stop(false);
        return r;
      }
    } else {
      in.ok = false;  // a record this side does not know: the worker is not what it should be
    }
    if (!in.ok) {
      const int status = w.stop(false);
      r.outcome = GpuOutcome::Fault;
      r.message = fmt::format("the GPU worker died ({}) {}", worker::describe_wait_status(status),
                              launching ? "during " + launch_label(r.launches_done, o.warmup, r.launches_total) : "before launching");
      return r;
    }
    t0 = std::chrono::steady_clock::now();  // each launch gets the whole watchdog from its predecessor's end
  }
}

}  // namespace pipesim::ptx_launch
