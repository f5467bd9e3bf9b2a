// Host-only parts of the NVFP4 GEMV: argument validation, exact decoders, the CPU reference.
#include <Eigen/Core>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <thread>
#include <vector>

#include "kernels/gemv_nvfp4/gemv_nvfp4.hpp"

namespace pipesim::kernels {

const char* to_string(GemvStatus s) {
  switch (s) {
    case GemvStatus::kOk: return "ok";
    case GemvStatus::kBadShape: return "bad shape";
    case GemvStatus::kNullPointer: return "null pointer";
    case GemvStatus::kMisaligned: return "misaligned pointer";
    case GemvStatus::kNoPlan: return "no plan";
    case GemvStatus::kCudaError: return "CUDA error";
  }
  return "unknown";
}

namespace {

GemvResult error(GemvStatus s, std::string msg) { return GemvResult{s, std::move(msg)}; }

bool aligned(const void* p, uintptr_t a) { return reinterpret_cast<uintptr_t>(p) % a == 0; }

}  // namespace

GemvResult validate_gemv_args(const GemvArgs& x) {
  if (x.m < 1) return error(GemvStatus::kBadShape, "m must be at least 1 (got " + std::to_string(x.m) + ")");
  if (x.l < 1) return error(GemvStatus::kBadShape, "l must be at least 1 (got " + std::to_string(x.l) + ")");
  if (x.k < 64 || x.k % 64 != 0)
    return error(GemvStatus::kBadShape,
                 "k must be a positive multiple of 64 (got " + std::to_string(x.k) + ")");
  // Offsets inside the kernel: the flat A byte count must fit comfortably in 63 bits, and the
  // k-dimension bookkeeping in 32 bits.
  constexpr int64_t kMaxK = int64_t{1} << 24;
  constexpr int64_t kMaxElems = int64_t{1} << 46;
  if (x.k > kMaxK) return error(GemvStatus::kBadShape, "k must be at most 2^24");
  if (x.m > kMaxElems / x.k || x.l > kMaxElems / (x.m * x.k))
    return error(GemvStatus::kBadShape, "m*k*l must be at most 2^46");
  struct P { const void* p; const char* name; uintptr_t align; };
  const std::array<P, 5> ptrs{{{x.a, "a", 16}, {x.sfa, "sfa", 16}, {x.b, "b", 16}, {x.sfb, "sfb", 4},
                               {x.c, "c", 2}}};
  for (const P& p : ptrs)
    if (p.p == nullptr) return error(GemvStatus::kNullPointer, std::string(p.name) + " is null");
  for (const P& p : ptrs)
    if (!aligned(p.p, p.align))
      return error(GemvStatus::kMisaligned, std::string(p.name) + " must be " +
                                                std::to_string(p.align) + "-byte aligned");
  return {};
}

double decode_e2m1(uint8_t nibble) {
  static constexpr std::array<double, 8> kMag{0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
  const double v = kMag[nibble & 7u];
  return (nibble & 8u) ? -v : v;
}

double decode_e4m3(uint8_t byte) {
  const int sign = byte >> 7;
  const int exp = (byte >> 3) & 15;
  const int man = byte & 7;
  if (exp == 15 && man == 7) return std::numeric_limits<double>::quiet_NaN();
  const double mag = exp == 0 ? std::ldexp(man / 8.0, -6) : std::ldexp(1.0 + man / 8.0, exp - 7);
  return sign ? -mag : mag;
}

void gemv_reference_cpu(const uint8_t* a, const uint8_t* sfa, const uint8_t* b, const uint8_t* sfb,
                        int64_t m, int64_t k, int64_t l, double* out) {
  using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  // 256-entry tables: every byte's two E2M1 values, every E4M3 code.
  std::array<double, 256> lo{}, hi{}, e4m3{};
  for (int v = 0; v < 256; ++v) {
    lo[v] = decode_e2m1(static_cast<uint8_t>(v & 15));
    hi[v] = decode_e2m1(static_cast<uint8_t>(v >> 4));
    e4m3[v] = decode_e4m3(static_cast<uint8_t>(v));
  }
  const int64_t rb = k / 2, sb = k / 16;
  constexpr int64_t kBlockRows = 64;
  for (int64_t batch = 0; batch < l; ++batch) {
    Eigen::VectorXd vec(k);
    for (int64_t j = 0; j < k; ++j) {
      const uint8_t byte = b[batch * rb + j / 2];
      vec[j] = ((j & 1) ? hi[byte] : lo[byte]) * e4m3[sfb[batch * sb + j / 16]];
    }
    const int64_t blocks = (m + kBlockRows - 1) / kBlockRows;
    const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    const int64_t workers = std::min<int64_t>(blocks, std::min<unsigned>(hw, 32u));
    auto work = [&](int64_t w) {
      RowMajor mat(kBlockRows, k);
      for (int64_t blk = w; blk < blocks; blk += workers) {
        const int64_t r0 = blk * kBlockRows;
        const int64_t rows = std::min(kBlockRows, m - r0);
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t g = batch * m + r0 + r;
          const uint8_t* arow = a + g * rb;
          const uint8_t* srow = sfa + g * sb;
          for (int64_t j = 0; j < rb; ++j) {
            const double s = e4m3[srow[j / 8]];
            mat(r, 2 * j) = lo[arow[j]] * s;
            mat(r, 2 * j + 1) = hi[arow[j]] * s;
          }
        }
        const Eigen::VectorXd y = mat.topRows(rows) * vec;
        for (int64_t r = 0; r < rows; ++r) out[batch * m + r0 + r] = y[r];
      }
    };
    std::vector<std::thread> pool;
    for (int64_t w = 1; w < workers; ++w) pool.emplace_back(work, w);
    work(0);
    for (auto& t : pool) t.join();
  }
}

}  // namespace pipesim::kernels
