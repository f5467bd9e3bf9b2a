// Launch capture for the CUTLASS acceptance corpus (tools/cutlass_corpus/README.md).
//
// A capture TU includes one CUTLASS example from the nvidia-cutlass wheel (its kernel types are the
// example's own), builds the example's Gemm::Arguments with fake device pointers at fixed addresses,
// and prints the pipesim launch file (verify/ptx/launch.hpp) of that kernel:
//
//   - Params: GemmKernel::to_underlying_arguments(args, workspace), all of its bytes, as one param;
//   - grid / block / cluster / dynamic smem: what GemmUniversalAdapter::run would launch with;
//   - tensor maps: CUTLASS is compiled with CUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL, so it calls
//     cuTensorMapEncodeTiled directly; this file defines that function (no libcuda is linked): it
//     records every argument and writes the pipesim tag ("PSIMTMAP", u64 LE) and the index into the
//     launch's "tensormaps" into the 128-byte CUtensorMap;
//   - entry: the .entry of cutlass::device_kernel<GemmKernel> in the PTX compiled from the same TU,
//     found by demangling every .entry and comparing with typeid(GemmKernel).
//
// Nothing here touches a GPU or the CUDA driver; sm_count is fixed: 132 (H100 SXM), or 148 (B200) where the
// TU defines PIPESIM_CORPUS_SM100 before including this file (the Blackwell captures, launch arch sm_100a).
//
// With -DPIPESIM_CORPUS_DEVICE the same TU becomes a program for a real GPU instead (corpus.py device,
// README "On the H100"): fake_buffer() and emit() come from device_common.hpp, which allocates the
// buffers with cudaMalloc, builds the same Arguments and runs them through GemmUniversalAdapter.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>
#include <cxxabi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <sstream>
#include <string>
#include <type_traits>
#include <typeinfo>

#include <pthread.h>
#include <sys/mman.h>
#include <vector>

namespace corpus {

#ifdef PIPESIM_CORPUS_SM100
constexpr int kSmCount = 148;           // B200
constexpr const char* kArch = "sm_100a";
#else
constexpr int kSmCount = 132;           // H100 SXM
constexpr const char* kArch = "sm_90a";
#endif
constexpr uint64_t kTensorMapTag = 0x50414d544d495350ULL;  // "PSIMTMAP" little-endian
constexpr uint64_t kBufferBase = 0x7f0000000000ULL;
constexpr uint64_t kBufferSpacing = 0x100000000ULL;        // 4 GiB between buffers

#ifdef PIPESIM_CORPUS_DEVICE
[[noreturn]] inline void device_die(const std::string& msg);  // device_common.hpp
#endif

[[noreturn]] inline void die(const std::string& msg) {
#ifdef PIPESIM_CORPUS_DEVICE
  device_die(msg);
#else
  std::fprintf(stderr, "capture: %s\n", msg.c_str());
  std::exit(3);
#endif
}

struct Buffer {
  std::string name;
  uint64_t bytes = 0;
  uint64_t address = 0;
};

inline std::vector<Buffer>& buffers() {
  static std::vector<Buffer> b;
  return b;
}

#ifndef PIPESIM_CORPUS_DEVICE
// A fake device pointer: buffer i lives at kBufferBase + i * 4 GiB.
template <class T = void>
T* fake_buffer(const char* name, uint64_t bytes) {
  if (bytes >= kBufferSpacing) die(std::string("buffer ") + name + " larger than 4 GiB");
  Buffer b{name, bytes, kBufferBase + buffers().size() * kBufferSpacing};
  buffers().push_back(b);
  return reinterpret_cast<T*>(b.address);
}
#endif

inline std::string buffer_of(uint64_t addr) {
  for (auto const& b : buffers())
    if (addr >= b.address && addr < b.address + (b.bytes ? b.bytes : 1)) return b.name;
  return "";
}

struct TensorMapCall {
  CUtensorMapDataType type;
  uint32_t rank;
  uint64_t address;
  uint64_t dims[5];
  uint64_t strides[4];
  uint32_t box[5];
  uint32_t elem_strides[5];
  CUtensorMapInterleave interleave;
  CUtensorMapSwizzle swizzle;
  CUtensorMapL2promotion l2;
  CUtensorMapFloatOOBfill oob;
};

inline std::vector<TensorMapCall>& tensormap_calls() {
  static std::vector<TensorMapCall> v;
  return v;
}

inline const char* type_name(CUtensorMapDataType t) {
  switch (t) {
    case CU_TENSOR_MAP_DATA_TYPE_UINT8: return "u8";
    case CU_TENSOR_MAP_DATA_TYPE_UINT16: return "u16";
    case CU_TENSOR_MAP_DATA_TYPE_UINT32: return "u32";
    case CU_TENSOR_MAP_DATA_TYPE_INT32: return "s32";
    case CU_TENSOR_MAP_DATA_TYPE_UINT64: return "u64";
    case CU_TENSOR_MAP_DATA_TYPE_INT64: return "s64";
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT16: return "f16";
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32: return "f32";
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT64: return "f64";
    case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16: return "bf16";
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ: return "f32_ftz";
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32: return "tf32";
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ: return "tf32_ftz";
#if CUDA_VERSION >= 12080
    // Blackwell's sub-byte types (FP4 / FP6 operands of block-scaled MMAs), as the launch file names
    // them (verify/ptx/launch_impl.hpp): like u8 for fp8, the driver's type, not the element's
    case CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B: return "u4";
    case CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B: return "u4_align16b";
    case CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B: return "u6_align16b";
#endif
    default: die("unknown CUtensorMapDataType " + std::to_string(int(t)));
  }
}

// Bytes that `elements` elements of the innermost box dimension take in shared memory.
inline uint64_t box_bytes(CUtensorMapDataType t, uint64_t elements) {
  switch (t) {
    case CU_TENSOR_MAP_DATA_TYPE_UINT8: return elements;
    case CU_TENSOR_MAP_DATA_TYPE_UINT16: case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
    case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16: return 2 * elements;
    case CU_TENSOR_MAP_DATA_TYPE_UINT64: case CU_TENSOR_MAP_DATA_TYPE_INT64:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT64: return 8 * elements;
#if CUDA_VERSION >= 12080
    case CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B: return elements / 2;  // packed: 16 x 4 bit in 8 bytes
    case CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B: case CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B:
      return elements;                                                // unpacked in smem: 16 in 16 bytes
#endif
    default: return 4 * elements;
  }
}

inline const char* interleave_name(CUtensorMapInterleave v) {
  switch (v) {
    case CU_TENSOR_MAP_INTERLEAVE_NONE: return "none";
    case CU_TENSOR_MAP_INTERLEAVE_16B: return "16b";
    case CU_TENSOR_MAP_INTERLEAVE_32B: return "32b";
    default: die("unknown CUtensorMapInterleave");
  }
}

inline const char* swizzle_name(CUtensorMapSwizzle v) {
  switch (v) {
    case CU_TENSOR_MAP_SWIZZLE_NONE: return "none";
    case CU_TENSOR_MAP_SWIZZLE_32B: return "32b";
    case CU_TENSOR_MAP_SWIZZLE_64B: return "64b";
    case CU_TENSOR_MAP_SWIZZLE_128B: return "128b";
#if CUDA_VERSION >= 12080
    case CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B: return "128b_atom_32b";
    case CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B_FLIP_8B: return "128b_atom_32b_flip_8b";
    case CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B: return "128b_atom_64b";
#endif
    default: die("unknown CUtensorMapSwizzle");
  }
}

inline const char* l2_name(CUtensorMapL2promotion v) {
  switch (v) {
    case CU_TENSOR_MAP_L2_PROMOTION_NONE: return "none";
    case CU_TENSOR_MAP_L2_PROMOTION_L2_64B: return "64b";
    case CU_TENSOR_MAP_L2_PROMOTION_L2_128B: return "128b";
    case CU_TENSOR_MAP_L2_PROMOTION_L2_256B: return "256b";
    default: die("unknown CUtensorMapL2promotion");
  }
}

inline const char* oob_name(CUtensorMapFloatOOBfill v) {
  switch (v) {
    case CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: return "none";
    case CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA: return "nan";
    default: die("unknown CUtensorMapFloatOOBfill");
  }
}

inline std::string hex64(uint64_t v) {
  char b[32];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

inline std::string demangle(const char* mangled) {
  int status = 0;
  char* p = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string s = (status == 0 && p) ? p : "";
  std::free(p);
  return s;
}

// Every __global__ function of this TU as nvcc's host stubs register it: the host stub's address
// and the mangled device name (what the PTX calls the .entry). Filled by the __cudaRegisterFunction
// below at static-initialisation time.
struct Registered {
  const void* host_fun;
  std::string device_name;
};

inline std::vector<Registered>& registered() {
  static std::vector<Registered> r;
  return r;
}

// The .entry of cutlass::device_kernel<Kernel>: the name nvcc registered for its host stub, checked
// against the PTX compiled from this TU when one is given.
template <class Kernel>
std::string find_entry(const std::string& ptx_path) {
  const void* stub = reinterpret_cast<const void*>(&cutlass::device_kernel<Kernel>);
  std::string name;
  for (auto const& r : registered())
    if (r.host_fun == stub) name = r.device_name;
  if (name.empty()) die("device_kernel<GemmKernel> was not registered (capture must link -cudart shared)");
  if (!ptx_path.empty()) {
    std::ifstream in(ptx_path);
    if (!in) die("cannot read " + ptx_path);
    std::string line;
    bool found = false;
    while (!found && std::getline(in, line)) {
      auto p = line.find(".entry " + name);
      if (p != std::string::npos) {
        char after = line.size() > p + 7 + name.size() ? line[p + 7 + name.size()] : '\0';
        found = after == '(' || after == ' ' || after == '\0' || after == '\r';
      }
    }
    if (!found) die(".entry " + name.substr(0, 80) + "... is not in " + ptx_path);
  }
  return name;
}

// What the capture knows besides the launch: written with --meta FILE (one JSON object).
struct Meta {
  std::string example, variant, schedule, tile_scheduler;
  int stages = 0;
  int tile_m = 0, tile_n = 0, tile_k = 0;
  int m = 0, n = 0, k = 0, l = 1;
  uint64_t workspace_bytes = 0;
  uint64_t params_bytes = 0;
  uint64_t indeterminate_bytes = 0;  // padding bytes written as 0
};

inline std::string json_str(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') { o += '\\'; o += c; }
    else if (static_cast<unsigned char>(c) < 0x20) { char b[8]; std::snprintf(b, sizeof b, "\\u%04x", c); o += b; }
    else o += c;
  }
  return o + "\"";
}

#ifdef PIPESIM_CORPUS_DEVICE
struct Options;
inline void device_setup(Options& o);  // device_common.hpp
#endif

struct Options {
  int m = 4096, n = 4096, k = 4096, l = 1;
  std::vector<int> dims;  // the sizes of a shape that is not M N K [L] (parse's shape_names)
  std::string variant;
  std::string ptx;
  std::string meta;
  bool list = false;
#ifdef PIPESIM_CORPUS_DEVICE
  double watchdog_s = 10;  // --watchdog-s: how long one launch (or the timed batch) may take
  int warmup = 10;         // --warmup
  int iters = 50;          // --iters: timed launches
#endif
};

// capture [--variant V] [--ptx FILE] [--meta FILE] [--list] M N K [L]
// (shape_names other than "M N K [L]": exactly those sizes, in dims; m, n, k, l then stay as they are)
inline Options parse(int argc, char** argv, const char* shape_names = nullptr) {
  Options o;
  std::vector<int> pos;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* flag) -> std::string {
      if (i + 1 >= argc) die(std::string(flag) + " needs a value");
      return argv[++i];
    };
    if (a == "--variant") o.variant = value("--variant");
    else if (a == "--ptx") o.ptx = value("--ptx");
    else if (a == "--meta") o.meta = value("--meta");
    else if (a == "--list") o.list = true;
#ifdef PIPESIM_CORPUS_DEVICE
    else if (a == "--watchdog-s") o.watchdog_s = std::atof(value("--watchdog-s").c_str());
    else if (a == "--warmup") o.warmup = std::atoi(value("--warmup").c_str());
    else if (a == "--iters") o.iters = std::atoi(value("--iters").c_str());
#endif
    else if (!a.empty() && a[0] != '-') pos.push_back(std::atoi(a.c_str()));
    else die("unknown option " + a + "\nusage: capture [--variant V] [--ptx FILE] [--meta FILE] [--list] M N K [L]");
  }
  if (shape_names) {
    size_t want = 1;
    for (const char* c = shape_names; *c; ++c) want += *c == ' ';
    if (!o.list && pos.size() != want) die(std::string("expected ") + shape_names);
    for (int v : pos)
      if (v <= 0) die("problem sizes must be positive");
    o.dims = pos;
  } else {
    if (pos.size() >= 3) { o.m = pos[0]; o.n = pos[1]; o.k = pos[2]; }
    if (pos.size() >= 4) o.l = pos[3];
    if (!o.list && (pos.size() < 3 || pos.size() > 4)) die("expected M N K [L]");
    if (o.m <= 0 || o.n <= 0 || o.k <= 0 || o.l <= 0) die("problem sizes must be positive");
  }
#ifdef PIPESIM_CORPUS_DEVICE
  device_setup(o);  // device_common.hpp: the default variant, the GPU (or a clean exit without one)
#endif
  return o;
}

#ifdef PIPESIM_CORPUS_DEVICE
}  // namespace corpus
#include "device_common.hpp"
#else  // the capture: everything below builds Params on the host and prints the launch file

// Fill the stack below the caller's frame, where the next call's temporaries will live.
__attribute__((noinline)) inline void pollute_stack(unsigned char fill) {
  volatile unsigned char area[1 << 21];  // 2 MiB: CUTLASS's to_underlying_arguments frames are large (64 KiB+)
  for (size_t i = 0; i < sizeof area; ++i) area[i] = fill;
  __asm__ __volatile__("" : : "r"(area) : "memory");
}

// Run f on a new thread whose 16 MiB stack is mapped near `hint` (so values derived from stack
// addresses differ from the main thread's in their high bytes too), and wait for it.
template <class F>
void run_on_stack_at(uint64_t hint, F const& f) {
  constexpr size_t kStack = size_t(16) << 20;
  void* stack = mmap(reinterpret_cast<void*>(hint), kStack, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (stack == MAP_FAILED) die("mmap of a thread stack failed");
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstack(&attr, stack, kStack);
  struct Call {
    F const* f;
    static void* run(void* self) { (*static_cast<Call*>(self)->f)(); return nullptr; }
  } call{&f};
  pthread_t thread;
  if (pthread_create(&thread, &attr, &Call::run, &call) != 0) die("pthread_create failed");
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
  munmap(stack, kStack);
}

// Run f with the stack pointer moved down by `bytes` (a multiple of 16).
template <class F>
__attribute__((noinline)) void with_stack_offset(size_t bytes, F const& f) {
  void* p = __builtin_alloca(bytes + 16);
  __asm__ __volatile__("" : : "r"(p) : "memory");
  f();
}

// Construct Kernel's Arguments (from make_args) and then its Params into dst, with the stack below and
// dst filled with `fill` first.
template <class Kernel, class MakeArgs>
__attribute__((noinline)) void construct_params(MakeArgs const& make_args, void* workspace, unsigned char* dst,
                                                unsigned char fill) {
  using Arguments = typename Kernel::Arguments;
  using Params = typename Kernel::Params;
  // A copy of the closure (it captures by value) on this pass's stack: no register of the pass holds
  // an address of the caller's frame.
  MakeArgs local_make_args(make_args);
  alignas(alignof(Arguments)) unsigned char abuf[sizeof(Arguments)];
  std::memset(abuf, fill, sizeof abuf);
  Arguments* args = new (abuf) Arguments(local_make_args());
  std::memset(dst, fill, sizeof(Params));
  new (dst) Params(Kernel::to_underlying_arguments(*args, workspace));
  args->~Arguments();
}

// What differs between the kernels the captures know: CUTLASS GEMMs (GemmUniversal) name their cluster
// shape, schedule, stages and tile scheduler in DispatchPolicy; the FMHA kernels of example 77 have
// ClusterShape and TileShape as members and no DispatchPolicy.
template <class Kernel, class = void>
struct HasDispatchPolicy : std::false_type {};
template <class Kernel>
struct HasDispatchPolicy<Kernel, std::void_t<typename Kernel::DispatchPolicy>> : std::true_type {};

template <class Kernel, bool = HasDispatchPolicy<Kernel>::value>
struct ClusterShapeOf { using type = typename Kernel::DispatchPolicy::ClusterShape; };
template <class Kernel>
struct ClusterShapeOf<Kernel, false> { using type = typename Kernel::ClusterShape; };

// The cluster shape the kernel is launched with, as GemmUniversalAdapter::run / fmha::device::FMHA::run
// take it: the static ClusterShape, or (Blackwell's dynamic clusters, Shape<int,int,_1>) the preferred
// one of params.hw_info; `fallback` gets hw_info.cluster_shape_fallback then (else stays 0 0 0).
template <class Kernel, class Params>
void launch_cluster(Params const& params, int (&cluster)[3], int (&fallback)[3]) {
  using Cluster = typename ClusterShapeOf<Kernel>::type;
  if constexpr (cute::is_static_v<Cluster>) {
    cluster[0] = int(cute::size<0>(Cluster{}));
    cluster[1] = int(cute::size<1>(Cluster{}));
    cluster[2] = int(cute::size<2>(Cluster{}));
  } else {
    cluster[0] = int(params.hw_info.cluster_shape.x);
    cluster[1] = int(params.hw_info.cluster_shape.y);
    cluster[2] = int(params.hw_info.cluster_shape.z);
    fallback[0] = int(params.hw_info.cluster_shape_fallback.x);
    fallback[1] = int(params.hw_info.cluster_shape_fallback.y);
    fallback[2] = int(params.hw_info.cluster_shape_fallback.z);
  }
}

// Build Params for Kernel from make_args() (the example's Gemm::Arguments; called several times, so it
// must not allocate buffers; it should capture by value), print the launch file on stdout (and the
// meta file).
template <class Kernel, class MakeArgs>
int emit(MakeArgs const& make_args, Options const& opt, Meta meta) {
  // The kernel must be in the PTX of this TU: odr-use its device_kernel (host stub address).
  static const void* volatile kernel_address = reinterpret_cast<const void*>(&cutlass::device_kernel<Kernel>);
  (void)kernel_address;

  {
    auto args = make_args();
    if (!Kernel::can_implement(args)) die("GemmKernel::can_implement rejects this problem (alignment / shape)");
  }
  size_t ws_bytes = Kernel::get_workspace_size(make_args());
  void* workspace = ws_bytes ? fake_buffer("workspace", ws_bytes) : nullptr;

  using Params = typename Kernel::Params;
  // Arguments and Params hold padding (and empty members) that aggregate initialisation and copies
  // leave as they find them or fill from whatever a register or a stack slot held before (bits of host
  // stack and heap addresses, which ASLR changes per run). No correct kernel reads such bytes, and the
  // launch file must be the same on every run: build Arguments and Params in 8 passes, over stack and
  // storage filled differently, with the stack and the recorder's heap blocks moved by 0 and by
  // 2^4 ... 2^10 bytes (so a byte taken from any of the address bits 4..10 differs between pass 0 and
  // one other pass), passes 1.. on other threads whose stacks are mapped at other high addresses. Every
  // byte that is not the same in all passes is written as 0 (the meta file counts them).
  constexpr int kPasses = 8;
  alignas(alignof(Params)) static unsigned char storage[kPasses][sizeof(Params)];
  const unsigned char fills[kPasses] = {0x00, 0xff, 0x5a, 0xa5, 0x33, 0xcc, 0x0f, 0xf0};
  const size_t offsets[kPasses] = {0, 0x10, 0x20, 0x40, 0x80, 0x100, 0x200, 0x400};
  std::vector<TensorMapCall> calls;
  for (int pass = 0; pass < kPasses; ++pass) {
    auto build = [&] {
      std::vector<unsigned char> heap_shift(48 + offsets[pass], fills[pass]);
      tensormap_calls() = std::vector<TensorMapCall>();
      tensormap_calls().reserve(1 + static_cast<size_t>(pass));
      with_stack_offset(offsets[pass], [&] {
        pollute_stack(fills[pass]);
        construct_params<Kernel>(make_args, workspace, storage[pass], fills[pass]);
      });
    };
    if (pass == 0) build();
    else run_on_stack_at(0x100000000000ULL * static_cast<uint64_t>(pass) + 0x2400000000ULL * static_cast<uint64_t>(pass), build);
    if (pass == 0) calls = tensormap_calls();
    else std::launder(reinterpret_cast<Params*>(storage[pass]))->~Params();
  }
#ifdef CORPUS_DEBUG_BYTE
  std::fprintf(stderr, "byte %d:", CORPUS_DEBUG_BYTE);
  for (int pass = 0; pass < kPasses; ++pass) std::fprintf(stderr, " %02x", storage[pass][CORPUS_DEBUG_BYTE]);
  std::fprintf(stderr, "\n");
#endif
  uint64_t indeterminate = 0;
  std::string indeterminate_list;
  for (size_t i = 0; i < sizeof(Params); ++i) {
    bool same = true;
    for (int pass = 1; pass < kPasses; ++pass) same = same && storage[pass][i] == storage[0][i];
    if (!same) {
      storage[0][i] = 0;
      indeterminate_list += (indeterminate++ ? ", " : "") + std::to_string(i);
    }
  }
  tensormap_calls() = calls;
  Params* params = std::launder(reinterpret_cast<Params*>(storage[0]));

  dim3 grid = Kernel::get_grid_shape(*params);
  dim3 block = Kernel::get_block_shape();
  int cluster[3] = {0, 0, 0};
  int cluster_fallback[3] = {0, 0, 0};
  launch_cluster<Kernel>(*params, cluster, cluster_fallback);
  uint64_t smem = Kernel::SharedStorageSize;
  std::string entry = find_entry<Kernel>(opt.ptx);

  std::ostringstream j;
  j << "{\n  \"entry\": " << json_str(entry) << ",\n  \"arch\": \"" << kArch << "\",\n";
  j << "  \"grid\": [" << grid.x << ", " << grid.y << ", " << grid.z << "],\n";
  j << "  \"block\": [" << block.x << ", " << block.y << ", " << block.z << "],\n";
  j << "  \"cluster\": [" << cluster[0] << ", " << cluster[1] << ", " << cluster[2] << "],\n";
  j << "  \"dynamic_smem\": " << smem << ",\n  \"buffers\": [";
  for (size_t i = 0; i < buffers().size(); ++i) {
    auto const& b = buffers()[i];
    j << (i ? ",\n" : "\n") << "    {\"name\": " << json_str(b.name) << ", \"bytes\": " << b.bytes
      << ", \"address\": \"" << hex64(b.address) << "\"}";
  }
  j << "\n  ],\n  \"tensormaps\": [";
  std::vector<std::string> names;
  for (size_t i = 0; i < tensormap_calls().size(); ++i) {
    auto const& t = tensormap_calls()[i];
    std::string owner = buffer_of(t.address);
    std::string name = "tma_" + (owner.empty() ? std::string("unknown") : owner);
    int dup = 0;
    for (auto const& nm : names) dup += nm == name;
    names.push_back(name);
    if (dup) name += "_" + std::to_string(dup);
    auto list = [&](auto const* v, uint32_t n) {
      std::ostringstream s;
      s << "[";
      for (uint32_t d = 0; d < n; ++d) s << (d ? ", " : "") << v[d];
      s << "]";
      return s.str();
    };
    j << (i ? ",\n" : "\n") << "    {\"name\": " << json_str(name) << ", \"type\": \"" << type_name(t.type)
      << "\", \"dims\": " << list(t.dims, t.rank) << ", \"strides\": " << list(t.strides, t.rank - 1)
      << ", \"box\": " << list(t.box, t.rank) << ", \"element_strides\": " << list(t.elem_strides, t.rank)
      << ", \"interleave\": \"" << interleave_name(t.interleave) << "\", \"swizzle\": \""
      << swizzle_name(t.swizzle) << "\", \"l2_promotion\": \"" << l2_name(t.l2) << "\", \"oob_fill\": \""
      << oob_name(t.oob) << "\", \"address\": \"" << hex64(t.address) << "\"}";
  }
  j << "\n  ],\n  \"params\": [{\"index\": 0, \"hex\": \"";
  static const char* digits = "0123456789abcdef";
  for (size_t i = 0; i < sizeof(Params); ++i) j << digits[storage[0][i] >> 4] << digits[storage[0][i] & 15];
  j << "\"}]\n}\n";
  std::fwrite(j.str().data(), 1, j.str().size(), stdout);
  std::fflush(stdout);

  if (!opt.meta.empty()) {
    if constexpr (HasDispatchPolicy<Kernel>::value) {
      meta.schedule = demangle(typeid(typename Kernel::DispatchPolicy::Schedule).name());
      meta.tile_scheduler = demangle(typeid(typename Kernel::TileScheduler).name());
      meta.stages = Kernel::DispatchPolicy::Stages;
    }  // else the capture TU fills them in (FMHA: its kernel schedule and tile scheduler)
    using Tile = typename Kernel::TileShape;
    meta.tile_m = cute::size<0>(Tile{});
    meta.tile_n = cute::size<1>(Tile{});
    meta.tile_k = cute::size<2>(Tile{});
    meta.m = opt.m; meta.n = opt.n; meta.k = opt.k; meta.l = opt.l;
    meta.workspace_bytes = ws_bytes;
    meta.params_bytes = sizeof(Params);
    meta.indeterminate_bytes = indeterminate;
    std::ofstream mf(opt.meta);
    mf << "{\"example\": " << json_str(meta.example) << ", \"variant\": " << json_str(meta.variant)
       << ", \"schedule\": " << json_str(meta.schedule) << ", \"tile_scheduler\": " << json_str(meta.tile_scheduler)
       << ", \"stages\": " << meta.stages << ", \"tile\": [" << meta.tile_m << ", " << meta.tile_n << ", "
       << meta.tile_k << "], \"problem\": [";
    if (opt.dims.empty()) mf << meta.m << ", " << meta.n << ", " << meta.k << ", " << meta.l;
    for (size_t i = 0; i < opt.dims.size(); ++i) mf << (i ? ", " : "") << opt.dims[i];
    mf << "], \"workspace_bytes\": " << meta.workspace_bytes << ", \"params_bytes\": " << meta.params_bytes
       << ", \"indeterminate_bytes\": " << meta.indeterminate_bytes
       << ", \"indeterminate\": [" << indeterminate_list << "]"
       << ", \"tensormaps\": " << tensormap_calls().size() << ", \"entry\": " << json_str(entry);
    if (cluster_fallback[0])  // a dynamic cluster (Blackwell): the launch has the preferred one
      mf << ", \"cluster_preferred\": [" << cluster[0] << ", " << cluster[1] << ", " << cluster[2]
         << "], \"cluster_fallback\": [" << cluster_fallback[0] << ", " << cluster_fallback[1] << ", "
         << cluster_fallback[2] << "]";
    mf << "}\n";
    if (!mf) die("cannot write " + opt.meta);
  }
  params->~Params();
  return 0;
}

}  // namespace corpus

namespace corpus {
// A tensor map the driver would refuse: CUTLASS only prints and asserts (compiled out under NDEBUG),
// so stop here instead.
inline CUresult refuse(int line) {
  die("cuTensorMapEncodeTiled: arguments the driver refuses (capture_common.hpp:" + std::to_string(line) + ")");
}
}  // namespace corpus

// The driver entry point CUTLASS calls (CUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL): record, tag, and
// check the arguments the way the driver documents (so a launch the driver would refuse fails here).
extern "C" CUresult CUDAAPI cuTensorMapEncodeTiled(
    CUtensorMap* tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank, void* globalAddress,
    const cuuint64_t* globalDim, const cuuint64_t* globalStrides, const cuuint32_t* boxDim,
    const cuuint32_t* elementStrides, CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
    CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill) {
  using namespace corpus;
  if (!tensorMap || tensorRank < 1 || tensorRank > 5) return refuse(__LINE__);
  if (reinterpret_cast<uintptr_t>(tensorMap) % 64) return refuse(__LINE__);
  uint64_t addr = reinterpret_cast<uint64_t>(globalAddress);
  if (addr % (interleave == CU_TENSOR_MAP_INTERLEAVE_32B ? 32 : 16)) return refuse(__LINE__);
  TensorMapCall c{};
  c.type = tensorDataType;
  c.rank = tensorRank;
  c.address = addr;
  for (uint32_t i = 0; i < tensorRank; ++i) {
    c.dims[i] = globalDim[i];
    c.box[i] = boxDim[i];
    c.elem_strides[i] = elementStrides[i];
    if (globalDim[i] == 0 || globalDim[i] > (1ULL << 32)) return refuse(__LINE__);
    if (boxDim[i] == 0 || boxDim[i] > 256) return refuse(__LINE__);
    if (elementStrides[i] == 0 || elementStrides[i] > 8) return refuse(__LINE__);
  }
  for (uint32_t i = 0; i + 1 < tensorRank; ++i) {
    c.strides[i] = globalStrides[i];
    if (globalStrides[i] % 16 || globalStrides[i] >= (1ULL << 40)) return refuse(__LINE__);
  }
  if (interleave == CU_TENSOR_MAP_INTERLEAVE_NONE && swizzle != CU_TENSOR_MAP_SWIZZLE_NONE) {
    uint64_t inner = box_bytes(tensorDataType, boxDim[0]);
    uint64_t span = swizzle == CU_TENSOR_MAP_SWIZZLE_32B ? 32 : swizzle == CU_TENSOR_MAP_SWIZZLE_64B ? 64 : 128;
    if (inner > span) return refuse(__LINE__);
  }
  c.interleave = interleave;
  c.swizzle = swizzle;
  c.l2 = l2Promotion;
  c.oob = oobFill;
  uint32_t index = static_cast<uint32_t>(tensormap_calls().size());
  tensormap_calls().push_back(c);
  unsigned char* bytes = reinterpret_cast<unsigned char*>(tensorMap);
  std::memset(bytes, 0, 128);
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<unsigned char>(kTensorMapTag >> (8 * i));
  for (int i = 0; i < 4; ++i) bytes[8 + i] = static_cast<unsigned char>(index >> (8 * i));
  return CUDA_SUCCESS;
}

// nvcc's registration of each kernel (crt/host_runtime.h), interposed: the capture binary links the
// shared cudart and defines this itself, so the executable's own registration calls land here. Only
// the names are kept; nothing is registered with the runtime (the capture never launches).
extern "C" void CUDARTAPI __cudaRegisterFunction(void** fatCubinHandle, const char* hostFun, char* deviceFun,
                                                 const char* deviceName, int thread_limit, uint3* tid,
                                                 uint3* bid, dim3* bDim, dim3* gDim, int* wSize) {
  (void)fatCubinHandle; (void)deviceName; (void)thread_limit; (void)tid; (void)bid; (void)bDim; (void)gDim; (void)wSize;
  corpus::registered().push_back({hostFun, deviceFun ? deviceFun : ""});
}
#endif  // PIPESIM_CORPUS_DEVICE
