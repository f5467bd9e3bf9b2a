// Shared by gemv_check and gemv_bench: shapes, input generators, device buffers.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace pipesim::kernels::gemv_tools {

struct Shape {
  int64_t m, k, l;
  const char* kind;  // "bench", "test", "edge"
};

// seed-kernels.md section 2: benchmark shapes, then test shapes; then edge cases of our own
// (k not a multiple of 256, rows shorter than a warp's 512 bytes, m = 1 so every row is a batch edge,
// scale tensors whose length is not a multiple of 16 bytes).
inline std::vector<Shape> all_shapes() {
  return {
      {7168, 16384, 1, "bench"}, {4096, 7168, 8, "bench"}, {7168, 2048, 4, "bench"},
      {128, 256, 1, "test"},     {128, 1536, 1, "test"},   {128, 3072, 1, "test"},
      {256, 7168, 1, "test"},    {2432, 4608, 2, "test"},  {384, 7168, 2, "test"},
      {512, 512, 2, "test"},     {512, 4096, 2, "test"},   {512, 1536, 2, "test"},
      {1, 64, 3, "edge"},        {3, 192, 5, "edge"},      {1000, 4160, 3, "edge"},
      {77, 320, 9, "edge"},
  };
}

enum class Dist { kPublic, kNibbles, kWide };
inline const char* dist_name(Dist d) {
  switch (d) {
    case Dist::kPublic: return "public";
    case Dist::kNibbles: return "nibbles";
    case Dist::kWide: return "wide";
  }
  return "?";
}

struct HostInputs {
  std::vector<uint8_t> a, sfa, b, sfb;
};

// E4M3 codes of a given exponent-field range, both signs when `sign`, never NaN (S.1111.111).
inline uint8_t e4m3_code(std::mt19937_64& rng, int exp_lo, int exp_hi, bool sign) {
  for (;;) {
    const int e = exp_lo + static_cast<int>(rng() % static_cast<uint64_t>(exp_hi - exp_lo + 1));
    const int mt = static_cast<int>(rng() % 8);
    if (e == 15 && mt == 7) continue;
    const int s = sign ? static_cast<int>(rng() % 2) : 0;
    return static_cast<uint8_t>((s << 7) | (e << 3) | mt);
  }
}

// public:  like the GPU MODE problem: bytes of a/b uniform in 0..3, scales uniform in {0, 1, 2}
//          (the FP8 values 0.0, 1.0, 2.0).
// nibbles: every byte uniform in 0..255 (both nibbles, both signs); scales E4M3 codes with exponent
//          fields 5..9 (0.25 .. 3.75).
// wide:    every byte random; sfa over E4M3's whole finite range (subnormals, 448, both signs), sfb
//          over codes below 2^-4 in magnitude (subnormals, both signs), so that the fp16 result stays in
//          range; half of the draws swap the roles (sfb wide, sfa small).
inline HostInputs make_inputs(const Shape& s, Dist d, uint64_t seed) {
  std::mt19937_64 rng(seed);
  HostInputs in;
  const int64_t rows = s.l * s.m;
  in.a.resize(static_cast<size_t>(rows * s.k / 2));
  in.sfa.resize(static_cast<size_t>(rows * s.k / 16));
  in.b.resize(static_cast<size_t>(s.l * s.k / 2));
  in.sfb.resize(static_cast<size_t>(s.l * s.k / 16));
  auto fill_bytes = [&](std::vector<uint8_t>& v, int mod) {
    for (auto& x : v) x = static_cast<uint8_t>(rng() % static_cast<uint64_t>(mod));
  };
  const uint8_t kPublicScales[3] = {0x00, 0x38, 0x40};  // 0.0, 1.0, 2.0
  switch (d) {
    case Dist::kPublic:
      fill_bytes(in.a, 4);
      fill_bytes(in.b, 4);
      for (auto& x : in.sfa) x = kPublicScales[rng() % 3];
      for (auto& x : in.sfb) x = kPublicScales[rng() % 3];
      break;
    case Dist::kNibbles:
      fill_bytes(in.a, 256);
      fill_bytes(in.b, 256);
      for (auto& x : in.sfa) x = e4m3_code(rng, 5, 9, false);
      for (auto& x : in.sfb) x = e4m3_code(rng, 5, 9, false);
      break;
    case Dist::kWide: {
      fill_bytes(in.a, 256);
      fill_bytes(in.b, 256);
      const bool swap = (seed & 1) != 0;
      for (auto& x : in.sfa) x = swap ? e4m3_code(rng, 0, 2, true) : e4m3_code(rng, 0, 15, true);
      for (auto& x : in.sfb) x = swap ? e4m3_code(rng, 0, 15, true) : e4m3_code(rng, 0, 2, true);
      break;
    }
  }
  return in;
}

#define GEMV_CUDA_CHECK(call)                                                                   \
  do {                                                                                          \
    cudaError_t e_ = (call);                                                                    \
    if (e_ != cudaSuccess) {                                                                    \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,                 \
                   cudaGetErrorString(e_));                                                     \
      std::exit(1);                                                                             \
    }                                                                                           \
  } while (0)

struct DeviceInputs {
  uint8_t *a = nullptr, *sfa = nullptr, *b = nullptr, *sfb = nullptr;
  uint16_t* c = nullptr;
  int64_t m = 0, k = 0, l = 0;
  void alloc(const Shape& s) {
    m = s.m, k = s.k, l = s.l;
    const int64_t rows = s.l * s.m;
    GEMV_CUDA_CHECK(cudaMalloc(&a, static_cast<size_t>(rows * s.k / 2)));
    GEMV_CUDA_CHECK(cudaMalloc(&sfa, static_cast<size_t>(rows * s.k / 16)));
    GEMV_CUDA_CHECK(cudaMalloc(&b, static_cast<size_t>(s.l * s.k / 2)));
    GEMV_CUDA_CHECK(cudaMalloc(&sfb, static_cast<size_t>(s.l * s.k / 16)));
    GEMV_CUDA_CHECK(cudaMalloc(&c, static_cast<size_t>(rows * 2)));
  }
  void upload(const HostInputs& in) {
    GEMV_CUDA_CHECK(cudaMemcpy(a, in.a.data(), in.a.size(), cudaMemcpyHostToDevice));
    GEMV_CUDA_CHECK(cudaMemcpy(sfa, in.sfa.data(), in.sfa.size(), cudaMemcpyHostToDevice));
    GEMV_CUDA_CHECK(cudaMemcpy(b, in.b.data(), in.b.size(), cudaMemcpyHostToDevice));
    GEMV_CUDA_CHECK(cudaMemcpy(sfb, in.sfb.data(), in.sfb.size(), cudaMemcpyHostToDevice));
  }
  void release() {
    cudaFree(a), cudaFree(sfa), cudaFree(b), cudaFree(sfb), cudaFree(c);
    a = sfa = b = sfb = nullptr;
    c = nullptr;
  }
};

// Returns false (after printing) when no CUDA device can be used.
inline bool have_gpu(const char* program) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    std::printf("%s: no CUDA GPU present (%s); nothing was run.\n", program,
                e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return false;
  }
  return true;
}

}  // namespace pipesim::kernels::gemv_tools
