// Correctness check of the NVFP4 GEMV kernels on the GPU against the CPU double-precision reference.
//
//   gemv_check [--seed N] [--quick] [--no-watchdog]
//
// For every benchmark, test and edge shape and every input distribution: fresh inputs from a fresh seed,
// the output poisoned (0xFFFF, an fp16 NaN) before each run, then the TMA kernel (planner's choice and,
// on small shapes, tight variants that wrap the ring many times) and the plain reference kernel, each
// compared element by element: |x - ref| <= 1e-3 + 1e-3 |ref|, every element written.
// Then the watchdog: the kernel built with the producer's start phase 0 must hang on empty[0] (parity 0)
// in the producer warp and on full[0] in the consumers; the device watchdog stops it and reports where.
// Exit 0: all passed; 1: a failure; 2: no GPU.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kernels/gemv_nvfp4/gemv_common.hpp"
#include "kernels/gemv_nvfp4/gemv_nvfp4.hpp"

using namespace pipesim::kernels;
using namespace pipesim::kernels::gemv_tools;

namespace {

struct Outcome {
  bool ok = true;
  double max_err = 0;  // max |x - ref| / (1e-3 + 1e-3 |ref|)
  int64_t bad = 0, unwritten = 0, out_of_range = 0;
  int64_t first_bad = -1;
  double first_got = 0, first_ref = 0;
};

Outcome compare(const std::vector<uint16_t>& got, const std::vector<double>& ref) {
  Outcome o;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (std::fabs(ref[i]) > 65000.0) {
      ++o.out_of_range;
      continue;
    }
    const float x = __half2float(__half(__half_raw{got[i]}));
    if (got[i] == 0xFFFF) ++o.unwritten;
    const double tol = 1e-3 + 1e-3 * std::fabs(ref[i]);
    const double err = std::isfinite(x) ? std::fabs(x - ref[i]) / tol : 1e30;
    if (err > o.max_err) o.max_err = err;
    if (!(err <= 1.0)) {
      if (o.bad == 0) o.first_bad = static_cast<int64_t>(i), o.first_got = x, o.first_ref = ref[i];
      ++o.bad;
    }
  }
  o.ok = o.bad == 0 && o.unwritten == 0;
  return o;
}

int failures = 0;
int checks = 0;

void report(const char* what, const Shape& s, Dist d, uint64_t seed, const Outcome& o) {
  ++checks;
  if (!o.ok) ++failures;
  std::printf("%-4s %-24s m=%-5lld k=%-5lld l=%-2lld %-8s seed=%-20llu max_err/tol=%.3f%s", o.ok ? "ok" : "FAIL",
              what, (long long)s.m, (long long)s.k, (long long)s.l, dist_name(d), (unsigned long long)seed,
              o.max_err, o.out_of_range ? " (some refs out of fp16 range, skipped)" : "");
  if (!o.ok)
    std::printf("  bad=%lld unwritten=%lld first c[%lld]=%.6g ref=%.9g", (long long)o.bad, (long long)o.unwritten,
                (long long)o.first_bad, o.first_got, o.first_ref);
  std::printf("\n");
}

std::vector<uint16_t> run_and_fetch(DeviceInputs& dv, const std::function<GemvResult(const GemvArgs&)>& fn,
                                    GemvResult* res) {
  const int64_t rows = dv.l * dv.m;
  GEMV_CUDA_CHECK(cudaMemset(dv.c, 0xFF, static_cast<size_t>(rows * 2)));  // poison: fp16 NaN
  GemvArgs x;
  x.a = dv.a, x.sfa = dv.sfa, x.b = dv.b, x.sfb = dv.sfb, x.c = dv.c, x.m = dv.m, x.k = dv.k, x.l = dv.l;
  *res = fn(x);
  GEMV_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<uint16_t> out(static_cast<size_t>(rows));
  GEMV_CUDA_CHECK(cudaMemcpy(out.data(), dv.c, out.size() * 2, cudaMemcpyDeviceToHost));
  return out;
}

// Runs fn on dv's inputs and checks its output against ref: a launcher error is a failure named
// `what`; otherwise the comparison is reported under `label`.
void run_and_check(DeviceInputs& dv, const char* what, const char* label, const Shape& s, Dist d, uint64_t seed,
                   const std::vector<double>& ref, const std::function<GemvResult(const GemvArgs&)>& fn) {
  GemvResult r;
  const std::vector<uint16_t> got = run_and_fetch(dv, fn, &r);
  if (!r) {
    std::printf("FAIL %s returned %s: %s\n", what, to_string(r.status), r.message.c_str());
    ++failures;
  } else {
    report(label, s, d, seed, compare(got, ref));
  }
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t base_seed = std::random_device{}() ^ static_cast<uint64_t>(
                                                   std::chrono::steady_clock::now().time_since_epoch().count());
  bool quick = false, watchdog = true;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--seed") && i + 1 < argc) base_seed = std::strtoull(argv[++i], nullptr, 0);
    else if (!std::strcmp(argv[i], "--quick")) quick = true;
    else if (!std::strcmp(argv[i], "--no-watchdog")) watchdog = false;
    else {
      std::fprintf(stderr, "usage: gemv_check [--seed N] [--quick] [--no-watchdog]\n");
      return 2;
    }
  }
  if (!have_gpu("gemv_check")) return 2;
  cudaDeviceProp prop{};
  GEMV_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("gemv_check on %s (sm_%d%d, %d SMs), base seed %llu\n", prop.name, prop.major, prop.minor,
              prop.multiProcessorCount, (unsigned long long)base_seed);

  // What the loaded kernel asks of this device, per benchmark shape: compare with
  // `pipesim budget --gemv MxKxL --arch sm_XXa --regs R` (docs/budget.md, "The GEMV").
  for (const Shape& s : all_shapes()) {
    if (std::strcmp(s.kind, "bench") != 0) continue;
    GemvResources r;
    if (GemvResult e = gemv_nvfp4_resources(s.m, s.k, s.l, &r); !e) {
      std::printf("resources %lldx%lldx%lld: %s\n", (long long)s.m, (long long)s.k, (long long)s.l, e.message.c_str());
      return 1;
    }
    std::printf("resources %lldx%lldx%lld: binary sm_%d, %d registers, %lld B static smem, %lld B local, "
                "%lld B dynamic smem requested (plan), %lld B available to 1 CTA of %lld threads, "
                "%d CTA(s) per SM, grid %lld, max %d threads\n",
                (long long)s.m, (long long)s.k, (long long)s.l, r.binary_version, r.regs, (long long)r.static_smem,
                (long long)r.local_bytes, (long long)r.dynamic_smem, (long long)r.max_dynamic_smem,
                (long long)r.threads, r.ctas_per_sm, (long long)r.grid, r.max_threads);
  }

  uint64_t seed = base_seed;
  const Dist dists[] = {Dist::kPublic, Dist::kNibbles, Dist::kWide};
  for (const Shape& s : all_shapes()) {
    DeviceInputs dv;
    dv.alloc(s);
    for (Dist d : dists) {
      if (quick && d != Dist::kPublic && std::strcmp(s.kind, "bench") == 0) continue;
      const uint64_t sd = seed++;  // a fresh seed per check
      const HostInputs in = make_inputs(s, d, sd);
      std::vector<double> ref(static_cast<size_t>(s.l * s.m));
      gemv_reference_cpu(in.a.data(), in.sfa.data(), in.b.data(), in.sfb.data(), s.m, s.k, s.l, ref.data());
      dv.upload(in);
      run_and_check(dv, "gemv_nvfp4", "tma(plan)", s, d, sd, ref, [](const GemvArgs& x) { return gemv_nvfp4(x, nullptr); });
      // Three launches in a row (the chunk counter must come back to 0 after each), then one on a
      // second stream (its own counter), all checked.
      if (d == Dist::kPublic) {
        run_and_check(dv, "gemv_nvfp4 x3", "tma(all chunks) x3", s, d, sd, ref, [](const GemvArgs& x) {
          for (int i = 0; i < 2; ++i)
            if (GemvResult e = gemv_nvfp4(x, nullptr, {.static_permille = 0}); !e) return e;
          return gemv_nvfp4(x, nullptr, {.static_permille = 0});
        });
        run_and_check(dv, "gemv_nvfp4 (stream)", "tma(plan, 2nd stream)", s, d, sd, ref, [](const GemvArgs& x) {
          static cudaStream_t st = [] {
            cudaStream_t q;
            GEMV_CUDA_CHECK(cudaStreamCreateWithFlags(&q, cudaStreamNonBlocking));
            return q;
          }();
          GemvResult e = gemv_nvfp4(x, st);
          GEMV_CUDA_CHECK(cudaStreamSynchronize(st));
          return e;
        });
      }
      run_and_check(dv, "reference", "reference", s, d, sd, ref,
                    [](const GemvArgs& x) { return gemv_nvfp4_reference(x, nullptr); });
      // Tight variants on the smaller shapes: tiny stages wrap the ring many times, cross batch
      // edges inside stages, and put row boundaries inside warps.
      if (s.l * s.m * s.k <= (int64_t{1} << 25)) {
        // Work split: the planner's static share with chunks of one stage; all rows in chunks of
        // 512 bytes (chunks cross rows, batches); all static (no chunks) with a 512-byte first stage.
        const GemvTuning tight[] = {
            {.stage_a_bytes = 512, .consumer_warps = 4, .max_stages = 2},
            {.stage_a_bytes = 1024, .consumer_warps = 16, .max_stages = 3, .units_per_lane = 1},
            {.stage_a_bytes = 4096, .consumer_warps = 8, .max_stages = 4, .ctas_per_sm = 2, .units_per_lane = 2},
            {.stage_a_bytes = 1024, .consumer_warps = 16, .max_stages = 3, .static_permille = 0,
             .chunk_bytes = 512, .first_stage_bytes = 512},
            {.stage_a_bytes = 2048, .consumer_warps = 16, .max_stages = 4, .static_permille = 1000,
             .first_stage_bytes = 512},
            {.stage_a_bytes = 4096, .consumer_warps = 16, .max_stages = 4, .static_permille = 500,
             .chunk_bytes = 8192}};
        for (const GemvTuning& t : tight) {
          char name[96];
          std::snprintf(name, sizeof name, "tma(%lldB,%dw,%dst,%dcta,%du,%d%%o,%lldc,%lldf)", (long long)t.stage_a_bytes,
                        t.consumer_warps, t.max_stages, t.ctas_per_sm ? t.ctas_per_sm : 1,
                        t.units_per_lane ? t.units_per_lane : 2, t.static_permille, (long long)t.chunk_bytes,
                        (long long)t.first_stage_bytes);
          run_and_check(dv, name, name, s, d, sd, ref, [&](const GemvArgs& x) { return gemv_nvfp4(x, nullptr, t); });
        }
      }
    }
    dv.release();
  }

  // Bad arguments: an error before any launch, output untouched.
  {
    Shape s{128, 256, 1, "test"};
    DeviceInputs dv;
    dv.alloc(s);
    GEMV_CUDA_CHECK(cudaMemset(dv.c, 0xFF, 256));
    struct Bad { const char* what; GemvArgs x; GemvStatus want; };
    GemvArgs good;
    good.a = dv.a, good.sfa = dv.sfa, good.b = dv.b, good.sfb = dv.sfb, good.c = dv.c, good.m = 128,
    good.k = 256, good.l = 1;
    std::vector<Bad> bad;
    GemvArgs x = good; x.k = 100; bad.push_back({"k=100", x, GemvStatus::kBadShape});
    x = good; x.m = 0; bad.push_back({"m=0", x, GemvStatus::kBadShape});
    x = good; x.l = 0; bad.push_back({"l=0", x, GemvStatus::kBadShape});
    x = good; x.a = nullptr; bad.push_back({"a=null", x, GemvStatus::kNullPointer});
    x = good; x.b = dv.b + 8; bad.push_back({"b+8", x, GemvStatus::kMisaligned});
    for (const Bad& b : bad) {
      const GemvResult r = gemv_nvfp4(b.x, nullptr);
      GEMV_CUDA_CHECK(cudaDeviceSynchronize());
      std::vector<uint16_t> out(128);
      GEMV_CUDA_CHECK(cudaMemcpy(out.data(), dv.c, 256, cudaMemcpyDeviceToHost));
      bool untouched = true;
      for (uint16_t v : out) untouched &= v == 0xFFFF;
      const bool ok = r.status == b.want && untouched;
      ++checks;
      if (!ok) ++failures;
      std::printf("%-4s bad argument %-8s -> %s: %s%s\n", ok ? "ok" : "FAIL", b.what, to_string(r.status),
                  r.message.c_str(), untouched ? "" : " (output was written!)");
    }
    dv.release();
  }

  // The watchdog: broken producer start phase must hang exactly at the first producer_acquire.
  if (watchdog) {
    Shape s{512, 4096, 2, "test"};
    DeviceInputs dv;
    dv.alloc(s);
    dv.upload(make_inputs(s, Dist::kPublic, seed++));
    GemvArgs x;
    x.a = dv.a, x.sfa = dv.sfa, x.b = dv.b, x.sfb = dv.sfb, x.c = dv.c, x.m = s.m, x.k = s.k, x.l = s.l;
    for (int broken = 0; broken < 2; ++broken) {
      GemvWatchdogHit hit;
      const GemvResult r = gemv_nvfp4_watchdog(x, nullptr, broken != 0, 50'000'000ULL, &hit);
      bool ok;
      if (!broken) {
        ok = r && hit.fired == 0;
        std::printf("%-4s watchdog, correct phases: %s, %d waits timed out\n", ok ? "ok" : "FAIL",
                    r ? "completed" : r.message.c_str(), hit.fired);
      } else {
        // Expected: the producer warp (warp 0) times out on empty[0] waiting for parity 0 at its first
        // acquire (iteration 0); every consumer times out on full[0], parity 0.
        ok = r && hit.fired > 0 && ((hit.warp == 0 && hit.barrier == 1) || (hit.warp > 0 && hit.barrier == 0)) &&
             hit.stage == 0 && hit.parity == 0 && hit.iteration == 0;
        std::printf("%-4s watchdog, producer_phase = 0: hang detected, %d waits timed out; first: cta %d warp %d "
                    "%s[%d] parity %d iteration %lld (expected: producer empty[0] parity 0 / consumers full[0] "
                    "parity 0, iteration 0)\n",
                    ok ? "ok" : "FAIL", hit.fired, hit.cta, hit.warp, hit.barrier == 1 ? "empty" : "full",
                    hit.stage, hit.parity, hit.iteration);
      }
      ++checks;
      if (!ok) ++failures;
    }
    // The stopped run left its chunk counter mid-way; the launcher zeroed it: a normal run is right.
    {
      const HostInputs in = make_inputs(s, Dist::kNibbles, seed);
      dv.upload(in);
      std::vector<double> ref(static_cast<size_t>(s.l * s.m));
      gemv_reference_cpu(in.a.data(), in.sfa.data(), in.b.data(), in.sfb.data(), s.m, s.k, s.l, ref.data());
      run_and_check(dv, "gemv_nvfp4 after the watchdog", "tma(plan) after watchdog", s, Dist::kNibbles, seed, ref,
                    [](const GemvArgs& x) { return gemv_nvfp4(x, nullptr); });
      ++seed;
    }
    dv.release();
  }

  std::printf("gemv_check: %d checks, %d failed\n", checks, failures);
  return failures == 0 ? 0 : 1;
}
