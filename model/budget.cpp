#include "model/budget.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "model/text_table.hpp"

namespace pipesim::model {
namespace {

std::string trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t end = s.find(sep, start);
    out.push_back(trim(s.substr(start, end == std::string_view::npos ? s.size() - start : end - start)));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return out;
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  return out;
}

bool known_operand(const std::string& n) {
  return n == "A" || n == "B" || n == "SFA" || n == "SFB" || n == "C" || n == "LA" || n == "LU" ||
         n == "VEC" || n == "AB" || n == "LORA";
}

bool pow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

std::string bits_text(int bits) { return fmt::format("{} bit", bits); }

}  // namespace

// ---------------------------------------------------------------------------------------------
// Configuration from text

std::optional<int64_t> parse_int(std::string_view s) {
  const std::string t = trim(s);
  int64_t v = 0;
  const char* first = t.data();
  const char* last = t.data() + t.size();
  auto [p, ec] = std::from_chars(first, last, v);
  if (ec != std::errc() || p != last || t.empty()) return std::nullopt;
  return v;
}

// "256x128x256" → {256, 128, 256}; accepts x, X, ×, *.
std::optional<std::vector<int64_t>> parse_dims(std::string_view s) {
  std::string t = trim(s);
  for (const std::string_view sep : {"×", "X", "*"}) {
    size_t pos = 0;
    while ((pos = t.find(sep, pos)) != std::string::npos) t.replace(pos, sep.size(), "x");
  }
  std::vector<int64_t> out;
  size_t start = 0;
  while (true) {
    const size_t end = t.find('x', start);
    auto v = parse_int(std::string_view(t).substr(start, end == std::string::npos ? end : end - start));
    if (!v) return std::nullopt;
    out.push_back(*v);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

std::string set_config_field(GemmConfig& cfg, std::string_view key_in, std::string_view value_in) {
  const std::string key = trim(key_in);
  const std::string value = trim(value_in);
  auto int_field = [&](int& field, int lo, int hi) -> std::string {
    auto v = parse_int(value);
    if (!v || *v < lo || *v > hi)
      return fmt::format("{}: expected an integer in [{}, {}], got '{}'", key, lo, hi, value);
    field = static_cast<int>(*v);
    return {};
  };
  auto auto_or_int = [&](int& field, int lo, int hi) -> std::string {
    if (value == "auto") {
      field = -1;
      return {};
    }
    return int_field(field, lo, hi);
  };
  if (key == "arch") {
    if (!find_arch(value)) {
      std::string names;
      for (const Arch& a : all_archs()) names += (names.empty() ? "" : ", ") + std::string(a.name);
      return fmt::format("arch: unknown '{}' (known: {})", value, names);
    }
    cfg.arch = value;
    return {};
  }
  if (key == "tile") {
    auto d = parse_dims(value);
    if (!d || d->size() < 2 || d->size() > 3)
      return fmt::format("tile: expected MxN or MxNxK, got '{}'", value);
    for (int64_t v : *d)
      if (v <= 0 || v > 4096) return fmt::format("tile: dimensions must be in [1, 4096], got '{}'", value);
    cfg.mma_m = static_cast<int>((*d)[0]);
    cfg.mma_n = static_cast<int>((*d)[1]);
    cfg.tile_k = d->size() == 3 ? static_cast<int>((*d)[2]) : 0;
    return {};
  }
  if (key == "cluster") {
    auto d = parse_dims(value);
    if (!d || d->empty() || d->size() > 2)
      return fmt::format("cluster: expected M or MxN, got '{}'", value);
    for (int64_t v : *d)
      if (v <= 0 || v > 16) return fmt::format("cluster: sizes must be in [1, 16], got '{}'", value);
    cfg.cluster_m = static_cast<int>((*d)[0]);
    cfg.cluster_n = d->size() == 2 ? static_cast<int>((*d)[1]) : 1;
    return {};
  }
  if (key == "cta-group") {
    if (value == "auto") {
      cfg.cta_group = 0;
      return {};
    }
    return int_field(cfg.cta_group, 1, 2);
  }
  if (key == "ab" || key == "a" || key == "b") {
    auto f = parse_operand_format(value);
    if (!f)
      return fmt::format("{}: unknown operand format '{}' (nvfp4, mxfp4, mxf6, mxf8, f16, bf16, tf32, "
                         "e4m3, e5m2, e3m2, e2m3, e2m1)",
                         key, value);
    if (key != "b") cfg.a = *f;
    if (key != "a") cfg.b = *f;
    return {};
  }
  if (key == "c" || key == "lora-dtype") {
    auto t = parse_dtype(value);
    if (!t || *t == Dtype::ue8m0 || *t == Dtype::ue4m3 || *t == Dtype::tf32)
      return fmt::format("{}: unknown or unsupported type '{}'", key, value);
    (key == "c" ? cfg.c : cfg.lora_dtype) = *t;
    return {};
  }
  if (key == "sf") {
    if (value == "none") {
      cfg.a.sf.reset();
      cfg.b.sf.reset();
      cfg.a.sf_vec = cfg.b.sf_vec = 0;
      cfg.sf.reset();
      return {};
    }
    auto t = parse_dtype(value);
    if (!t || (*t != Dtype::e4m3 && *t != Dtype::ue8m0 && *t != Dtype::ue4m3))
      return fmt::format("sf: scale type must be e4m3, ue4m3 or ue8m0, got '{}'", value);
    cfg.sf = *t == Dtype::ue4m3 ? Dtype::e4m3 : *t;
    return {};
  }
  if (key == "sf-vec") return int_field(cfg.sf_vec, 1, 1024);
  if (key == "lora-rank") return int_field(cfg.lora_rank, 0, 4096);
  if (key == "lora-stages") return int_field(cfg.lora_stages, 0, 64);
  if (key == "epilogue") {
    if (value == "tma") cfg.epilogue_tma = true;
    else if (value == "none" || value == "direct") cfg.epilogue_tma = false;
    else return fmt::format("epilogue: expected tma or none, got '{}'", value);
    return {};
  }
  if (key == "epilogue-stages") return auto_or_int(cfg.epilogue_stages, 0, 64);
  if (key == "epilogue-vectors") return int_field(cfg.epilogue_vectors, 0, 64);
  if (key == "ab-stages") return auto_or_int(cfg.ab_stages, 1, 64);
  if (key == "acc-stages") return auto_or_int(cfg.acc_stages, 1, 4);
  if (key == "occupancy") return int_field(cfg.occupancy, 1, 32);
  if (key == "solver") {
    if (value == "auto") cfg.solver = GemmConfig::Solver::automatic;
    else if (value == "cutlass") cfg.solver = GemmConfig::Solver::cutlass;
    else if (value == "seed") cfg.solver = GemmConfig::Solver::seed;
    else return fmt::format("solver: expected auto, cutlass or seed, got '{}'", value);
    return {};
  }
  if (key == "threads") return int_field(cfg.threads, 1, 1024);
  if (key == "regs") return int_field(cfg.regs_per_thread, 0, 1024);
  if (key == "setmaxnreg") {
    cfg.setmaxnreg.clear();
    if (value.empty() || value == "none") return {};
    for (const std::string& part : split(value, ',')) {
      auto v = parse_int(part);
      if (!v || *v <= 0 || *v > 1024)
        return fmt::format("setmaxnreg: expected a list of register counts, got '{}'", value);
      cfg.setmaxnreg.push_back(static_cast<int>(*v));
    }
    return {};
  }
  if (key == "tmem-alloc") {
    if (value == "auto") cfg.tmem_alloc = TmemAlloc::automatic;
    else if (value == "max") cfg.tmem_alloc = TmemAlloc::max;
    else if (value == "pow2") cfg.tmem_alloc = TmemAlloc::pow2;
    else return fmt::format("tmem-alloc: expected auto, max or pow2, got '{}'", value);
    return {};
  }
  if (key == "hand") {
    for (const std::string& part : split(value, ',')) {
      const size_t eq = part.find('=');
      if (eq == std::string::npos)
        return fmt::format("hand: expected NAME=BYTES, got '{}'", part);
      const std::string name = upper(trim(std::string_view(part).substr(0, eq)));
      auto bytes = parse_int(std::string_view(part).substr(eq + 1));
      if (!known_operand(name))
        return fmt::format("hand: unknown operand '{}' (A, B, SFA, SFB, C, LA, LU, VEC, AB, LORA)", name);
      if (!bytes || *bytes < 0) return fmt::format("hand: '{}' is not a byte count", part);
      cfg.hand.push_back(HandEstimate{name, *bytes});
    }
    return {};
  }
  return fmt::format("unknown budget setting '{}'", key);
}

// ---------------------------------------------------------------------------------------------
// The check

const char* severity_name(Severity s) {
  switch (s) {
    case Severity::note: return "note";
    case Severity::warning: return "warning";
    case Severity::error: return "error";
  }
  return "?";
}

bool has_severity(const std::vector<Finding>& findings, Severity s) {
  return std::any_of(findings.begin(), findings.end(), [&](const Finding& f) { return f.severity == s; });
}

int exit_code_of(bool bad_input, const std::vector<Finding>& findings) {
  if (bad_input || has_severity(findings, Severity::error)) return 2;
  return has_severity(findings, Severity::warning) ? 1 : 0;
}

bool BudgetReport::has(Severity s) const { return has_severity(findings, s); }

int BudgetReport::exit_code() const { return exit_code_of(bad_input, findings); }

namespace {

struct HandView {
  std::optional<int64_t> a, b, sfa, sfb, c, la, lu, vec, ab, lora;
};

HandView collect_hand(const std::vector<HandEstimate>& hand) {
  HandView h;
  for (const HandEstimate& e : hand) {
    std::optional<int64_t>* slot = nullptr;
    if (e.operand == "A") slot = &h.a;
    else if (e.operand == "B") slot = &h.b;
    else if (e.operand == "SFA") slot = &h.sfa;
    else if (e.operand == "SFB") slot = &h.sfb;
    else if (e.operand == "C") slot = &h.c;
    else if (e.operand == "LA") slot = &h.la;
    else if (e.operand == "LU") slot = &h.lu;
    else if (e.operand == "VEC") slot = &h.vec;
    else if (e.operand == "AB") slot = &h.ab;
    else if (e.operand == "LORA") slot = &h.lora;
    if (slot) *slot = e.bytes;  // the last one given wins
  }
  return h;
}

// hand == derived × num / den, exactly.
bool ratio_is(int64_t hand, int64_t derived, int64_t num, int64_t den) {
  return hand * den == derived * num;
}

struct OperandContext {
  std::string name;
  char split_axis = 0;   // 'M', 'N' or 0 (not split by cta_group)
  int cta_group = 1;
  int rows_unsplit = 0;  // rows before the cta_group split (mma_m, mma_n) or SF rows unpadded
  int k = 0;             // K extent per stage (tile_k or rank)
  int gmem_bits = 0;     // element width in global memory
  int smem_bits = 0;     // element width in shared memory
  int sf_vec = 0;        // scale factors: vector
  bool scale = false;
  int stages = 1;
  int64_t whole_tile = 0;  // C: the whole CTA output tile
};

std::vector<std::string> likely_causes(const OperandContext& o, int64_t hand, int64_t derived) {
  std::vector<std::string> causes;
  const int g = o.cta_group;
  if (g == 2 && o.split_axis && ratio_is(hand, derived, g, 1))
    causes.push_back(fmt::format("not divided by cta_group {} along {}", g, o.split_axis));
  if (g == 2 && o.split_axis && ratio_is(hand, derived, 1, g))
    causes.push_back(fmt::format("divided by cta_group {} twice", g));
  if (g == 2 && !o.split_axis && ratio_is(hand, derived, 1, g)) {
    if (o.name == "SFB")
      causes.push_back("divided by cta_group 2, but SFB is not split: each CTA holds roundup(N,128) rows");
    else
      causes.push_back(fmt::format("divided by cta_group 2, but {} is not split between the CTAs", o.name));
  }
  if (o.scale) {
    // Unpadded: rows × K / vec bytes (one byte per scale factor).
    const int64_t unpadded = int64_t{o.rows_unsplit} * ((o.k + o.sf_vec - 1) / o.sf_vec);
    if (hand == unpadded && hand != derived)
      causes.push_back("no padding to 128-row × 4-scale atoms (512 B each)");
    if (o.sf_vec == 32 && ratio_is(hand, derived, 2, 1))
      causes.push_back("one scale per 16 elements counted; this format has one per 32");
    if (o.sf_vec == 16 && ratio_is(hand, derived, 1, 2))
      causes.push_back("one scale per 32 elements counted; NVFP4 has one per 16");
  } else if (o.smem_bits > 0) {
    if (o.gmem_bits == 4 && o.smem_bits == 4 && ratio_is(hand, derived, 2, 1))
      causes.push_back("fp4 counted as one byte per element (E2M1 packs two per byte)");
    if (o.gmem_bits < 8 && o.smem_bits == 8 && ratio_is(hand, derived, o.gmem_bits, 8))
      causes.push_back(fmt::format(
          "counted {} bits per element, but kind::mxf8f6f4/f8f6f4 unpacks to one byte in shared memory",
          o.gmem_bits));
    if (o.smem_bits == 8 && ratio_is(hand, derived, 2, 1))
      causes.push_back("element counted as 2 bytes; this type is 1 byte");
    if (o.smem_bits == 16 && ratio_is(hand, derived, 1, 2))
      causes.push_back("element counted as 1 byte; this type is 2 bytes");
  }
  if (o.stages > 1 && ratio_is(hand, derived, o.stages, 1))
    causes.push_back(fmt::format("all {} stages counted instead of one", o.stages));
  if (o.whole_tile > 0 && hand == o.whole_tile && hand != derived)
    causes.push_back("the whole CTA output tile counted; the epilogue stages sub-tiles");
  return causes;
}

}  // namespace

RegisterReport register_findings(const RegisterConfig& rc, const Capacity& cap, std::vector<Finding>& findings) {
  RegisterReport regs = check_registers(rc, cap);
  for (const std::string& e : regs.errors) findings.push_back({Severity::error, "registers: " + e});
  for (const std::string& w : regs.warnings) findings.push_back({Severity::warning, "registers: " + w});
  return regs;
}

OccupancyLimits occupancy_limits(const Arch& arch, const Capacity& cap, int threads, int64_t smem_total,
                                 int64_t smem_capacity, const RegisterReport& regs, int tmem_requested, int occupancy,
                                 std::vector<Finding>& findings) {
  OccupancyLimits o;
  o.by_threads = threads > 0 ? cap.threads_per_sm / threads : 0;
  o.by_blocks = cap.blocks_per_sm;
  // Each resident CTA costs its request plus the driver's per-block reservation.
  o.by_smem = static_cast<int>(cap.smem_per_sm / (smem_total + arch.smem_reserved_per_block));
  o.by_regs = regs.max_ctas_by_regs;
  o.by_tmem = tmem_requested > 0 ? cap.tmem_columns / tmem_requested : 0;
  o.achieved = std::min({o.by_threads, o.by_blocks, o.by_smem});
  if (o.by_regs > 0) o.achieved = std::min(o.achieved, o.by_regs);
  if (smem_total <= smem_capacity && o.by_smem < occupancy)
    findings.push_back({Severity::warning,
                        fmt::format("occupancy {} not reached: shared memory fits {} CTA(s) per SM ({} × ({} + {} "
                                    "reserved) B > {} B)",
                                    occupancy, o.by_smem, occupancy, smem_total, arch.smem_reserved_per_block,
                                    cap.smem_per_sm)});
  if (o.by_threads < occupancy)
    findings.push_back({Severity::warning, fmt::format("occupancy {} not reached: {} threads per SM allow {} CTA(s) of {}",
                                                       occupancy, cap.threads_per_sm, o.by_threads, threads)});
  return o;
}

BudgetReport check_budget(const GemmConfig& cfg_in, const Capacity* device) {
  BudgetReport r;
  r.config = cfg_in;
  GemmConfig& cfg = r.config;
  auto add = [&](Severity s, std::string m) { r.findings.push_back(Finding{s, std::move(m)}); };
  auto bad = [&](std::string m) {
    r.bad_input = true;
    add(Severity::error, std::move(m));
  };

  // --- architecture ---
  const Arch* arch = find_arch(cfg.arch);
  if (!arch) {
    bad(fmt::format("unknown architecture '{}'", cfg.arch));
    return r;
  }
  r.arch_name = std::string(arch->name);
  r.arch_note = std::string(arch->uncertain_note);
  r.cap = arch->cap;
  if (device) {
    r.cap = *device;
    r.device_capacity = true;
  }
  r.solver_capacity = arch->solver_smem_capacity;
  if (!r.arch_note.empty()) add(Severity::note, fmt::format("{}: {}", r.arch_name, r.arch_note));
  if (!arch->has_tcgen05) {
    bad(fmt::format("{} ({}) has no tcgen05 / tensor memory: the Blackwell warp-specialized GEMM "
                    "this budget describes cannot run there",
                    arch->name, arch->product));
    return r;
  }
  if (device && device->smem_per_block != arch->cap.smem_per_block)
    add(Severity::warning,
        fmt::format("the GPU present allows {} B per block, the {} table says {} B; the solver's "
                    "constant is {} B (bug class: stages derived from the family's maximum)",
                    device->smem_per_block, arch->name, arch->cap.smem_per_block,
                    r.solver_capacity));

  // --- operand formats and MMA kind ---
  if (cfg.a.sf.has_value() != cfg.b.sf.has_value())
    bad("A and B must both be block scaled or both plain");
  std::optional<Dtype> sf = cfg.a.sf;
  int sf_vec = cfg.a.sf_vec;
  if (cfg.b.sf && cfg.a.sf && (*cfg.a.sf != *cfg.b.sf || cfg.a.sf_vec != cfg.b.sf_vec))
    bad("A and B use different scale-factor formats; tcgen05 takes one scale type and vector");
  if (cfg.sf) {
    if (!sf) bad("--sf given for plain (not block-scaled) operands");
    sf = cfg.sf;
  }
  if (cfg.sf_vec > 0) {
    if (!sf) bad("--sf-vec given for plain (not block-scaled) operands");
    sf_vec = cfg.sf_vec;
  }
  if (r.bad_input) return r;
  std::string why;
  auto mma = select_mma(cfg.a.data, cfg.b.data, sf, sf_vec, &why);
  if (!mma) {
    bad(why);
    return r;
  }
  r.mma = *mma;
  r.sf = sf;
  r.sf_vec = sf ? sf_vec : 0;

  // --- tile, cta_group, cluster (PTX tcgen05.mma shapes; semantics.md) ---
  if (cfg.cta_group == 0) cfg.cta_group = cfg.mma_m == 256 ? 2 : 1;  // CUTLASS use_2cta_instrs
  if (cfg.tile_k == 0) cfg.tile_k = 4 * mma->inst_k;                   // CUTLASS mma_inst_tile_k = 4
  const int g = cfg.cta_group;
  const bool scaled = mma->block_scaled;
  if (g != 1 && g != 2) bad(fmt::format("cta_group must be 1 or 2, got {}", g));
  {
    const bool mxf4 = mma->kind == MmaKind::MxF4 || mma->kind == MmaKind::MxF4NvF4;
    bool m_ok = false;
    std::string m_rule;
    if (g == 1) {
      m_ok = mxf4 || scaled ? cfg.mma_m == 128 : (cfg.mma_m == 64 || cfg.mma_m == 128);
      m_rule = mxf4 || scaled ? "128" : "64 or 128";
    } else {
      m_ok = cfg.mma_m == 128 || cfg.mma_m == 256;
      m_rule = "128 or 256";
    }
    if (!m_ok)
      bad(fmt::format("tile M {} is not a tcgen05.mma {} shape under cta_group {} (M must be {})",
                      cfg.mma_m, mma_kind_name(mma->kind), g, m_rule));
    const int n_step = g == 1 ? 8 : 16;
    const int n_min = g == 1 ? 8 : 16;
    if (cfg.mma_n < n_min || cfg.mma_n > 256 || cfg.mma_n % n_step != 0)
      bad(fmt::format("tile N {} is not a tcgen05.mma shape under cta_group {} (N in [{}, 256], step {})",
                      cfg.mma_n, g, n_min, n_step));
  }
  if (cfg.tile_k <= 0 || cfg.tile_k % mma->inst_k != 0)
    bad(fmt::format("tile K {} must be a positive multiple of the instruction K {} ({})", cfg.tile_k,
                    mma->inst_k, mma_kind_name(mma->kind)));
  if (g == 2 && cfg.cluster_m % 2 != 0)
    bad(fmt::format("cta_group 2 pairs CTAs along the cluster's M: cluster M must be even, got {}",
                    cfg.cluster_m));
  const int cluster_size = cfg.cluster_m * cfg.cluster_n;
  if (r.cap.cluster_max == 0 && cluster_size > 1)
    bad(fmt::format("{} has no thread-block clusters", arch->name));
  else if (cluster_size > r.cap.cluster_max)
    bad(fmt::format("cluster {}x{} = {} CTAs exceeds the non-portable maximum {}", cfg.cluster_m,
                    cfg.cluster_n, cluster_size, r.cap.cluster_max));
  else if (cluster_size > r.cap.cluster_portable)
    add(Severity::note, fmt::format("cluster of {} CTAs is above the portable {}: the kernel needs "
                                    "cudaFuncAttributeNonPortableClusterSizeAllowed",
                                    cluster_size, r.cap.cluster_portable));
  if (cfg.lora_rank > 0) {
    // The LoRA MMA is kind::f16 with K = rank: K steps of 16.
    if (cfg.lora_rank % 16 != 0)
      bad(fmt::format("LoRA rank {} must be a multiple of 16 (kind::f16 K step)", cfg.lora_rank));
    if (cfg.lora_stages < 1) bad("LoRA rank given without LoRA stages (--lora-stages ≥ 1)");
    if (cfg.lora_dtype != Dtype::f16 && cfg.lora_dtype != Dtype::bf16)
      bad("LoRA operands must be f16 or bf16 (kind::f16)");
  }
  if (cfg.occupancy < 1) bad("occupancy must be at least 1");
  if (r.bad_input) return r;
  // What CUTLASS's block-scaled example itself accepts (can_implement), as notes.
  if (scaled) {
    if (!(cfg.mma_n == 64 || cfg.mma_n == 128 || cfg.mma_n == 192 || cfg.mma_n == 256))
      add(Severity::note, fmt::format("CUTLASS's dense_blockscaled_gemm_persistent accepts tile N "
                                      "64/128/192/256 only; {} is a custom kernel's choice", cfg.mma_n));
    if ((cfg.mma_m == 256) != (g == 2))
      add(Severity::note, "CUTLASS's block-scaled example uses cta_group 2 exactly when tile M is 256");
    if (!pow2(cfg.cluster_m) || !pow2(cfg.cluster_n))
      add(Severity::note, "CUTLASS's examples want power-of-two cluster shapes");
  }

  // --- footprints ---
  const TileShape tile{cfg.mma_m, cfg.mma_n, cfg.tile_k, g};
  r.ab = ab_footprint(tile, *mma, r.sf_vec);
  const int cta_m = r.ab.cta_m;
  const int c_bits = dtype_bits(cfg.c);
  r.epi = epilogue_tile(cta_m, cfg.mma_n, g, c_bits);
  const int64_t c_stage = cfg.epilogue_tma ? r.epi.bytes : 0;
  if (cfg.lora_rank > 0) {
    const int lb = dtype_bits(cfg.lora_dtype);
    r.lora_la = a_like_bytes(cfg.mma_m, cfg.lora_rank, lb, g);  // LA [mma_m, R], split along M
    r.lora_lu = b_like_bytes(cfg.mma_n, cfg.lora_rank, lb, g);  // LU [mma_n, R], split along N
  }
  // Per-column epilogue vectors (seed: wcscale, bias): tile N elements of the C type each.
  r.vectors = int64_t{cfg.epilogue_vectors} * cfg.mma_n * c_bits / 8;
  r.num_lora_stage = cfg.lora_rank > 0 ? cfg.lora_stages : 0;

  // --- solver ---
  const bool extras = r.lora_la + r.lora_lu > 0 || r.vectors > 0;
  SolverFlavor flavor = SolverFlavor::cutlass;
  if (cfg.solver == GemmConfig::Solver::seed ||
      (cfg.solver == GemmConfig::Solver::automatic && extras))
    flavor = SolverFlavor::seed;
  cfg.solver = flavor == SolverFlavor::seed ? GemmConfig::Solver::seed : GemmConfig::Solver::cutlass;
  if (flavor == SolverFlavor::cutlass && extras)
    add(Severity::warning, "the CUTLASS solver does not know the LoRA / vector buffers; its stage "
                           "counts leave no room for them (use --solver seed)");
  auto solver_inputs = [&](int64_t ab_stage, int64_t c_st, int64_t la, int64_t lu, int64_t vec) {
    StageInputs in;
    in.flavor = flavor;
    in.smem_capacity = r.solver_capacity;
    in.occupancy = cfg.occupancy;
    in.ab_bytes_per_stage = ab_stage;
    in.c_bytes_per_stage = c_st;
    in.initial_c_stages = cfg.epilogue_tma ? 2 : 0;
    in.extra_bytes = (la + lu) * r.num_lora_stage + vec;
    in.mma_n = cfg.mma_n;
    in.block_scaled = scaled;
    // The seed asserts num_ab ≥ 2; a CUTLASS pipeline runs with 1 stage (no load/MMA overlap).
    in.min_ab_stages = flavor == SolverFlavor::seed ? 2 : 1;
    return in;
  };
  r.solved = compute_stages(solver_inputs(r.ab.per_stage(), c_stage, r.lora_la, r.lora_lu, r.vectors));

  // Hand-written numbers: the solver as the kernel would run it.
  const HandView h = collect_hand(cfg.hand);
  if (!cfg.hand.empty()) {
    const int64_t ab_h = h.ab ? *h.ab
                              : h.a.value_or(r.ab.a) + h.b.value_or(r.ab.b) + h.sfa.value_or(r.ab.sfa) +
                                    h.sfb.value_or(r.ab.sfb);
    int64_t la_h = h.la.value_or(r.lora_la), lu_h = h.lu.value_or(r.lora_lu);
    if (h.lora) {
      la_h = *h.lora;
      lu_h = 0;
    }
    r.solved_hand = compute_stages(
        solver_inputs(ab_h, cfg.epilogue_tma ? h.c.value_or(c_stage) : 0, la_h, lu_h, h.vec.value_or(r.vectors)));
  }
  const StageResult& in_effect = r.solved_hand ? *r.solved_hand : r.solved;
  r.num_acc_stage = cfg.acc_stages > 0 ? cfg.acc_stages : r.solved.num_acc_stage;
  r.num_ab_stage = in_effect.num_ab_stage;
  r.num_c_stage = cfg.epilogue_tma ? in_effect.num_c_stage : 0;
  if (cfg.ab_stages > 0) {
    r.num_ab_stage = cfg.ab_stages;
    if (cfg.epilogue_tma && cfg.epilogue_stages < 0) {
      // CUTLASS's top-up with the fixed A/B stage count.
      const int64_t cap = flavor == SolverFlavor::seed
                              ? r.solver_capacity - ((r.lora_la + r.lora_lu) * r.num_lora_stage + r.vectors)
                              : r.solver_capacity;
      const int64_t top = floor_div(cap - cfg.occupancy * r.ab.per_stage() * cfg.ab_stages -
                                        cfg.occupancy * (kMbarHelperBytes + 2 * c_stage),
                                    cfg.occupancy * c_stage);
      r.num_c_stage = 2 + static_cast<int>(std::max<int64_t>(top, 0));
    }
  }
  if (cfg.epilogue_tma && cfg.epilogue_stages >= 0) r.num_c_stage = cfg.epilogue_stages;
  if (cfg.epilogue_tma && r.num_c_stage < 1)
    add(Severity::error, "a TMA-store epilogue needs at least one C staging buffer");
  if (cfg.ab_stages < 0 && !in_effect.ok) add(Severity::error, in_effect.error);
  if (cfg.ab_stages < 0 && r.solved_hand && !r.solved.ok)
    add(Severity::error, "with the derived numbers: " + r.solved.error);
  if (r.num_ab_stage == 1 && in_effect.ok)
    add(Severity::warning, "num_ab_stage 1: loads and MMAs of consecutive K tiles cannot overlap");
  const int ab_st = std::max(r.num_ab_stage, 0);
  const int c_st = std::max(r.num_c_stage, 0);

  // --- buffers as allocated (CUTLASS SharedStorage: barriers first, then 1024-aligned buffers) ---
  {
    // mbarriers: ab full/empty per stage, acc full/empty per stage, LoRA full/empty per stage,
    // the 2-CTA TMEM dealloc barrier; plus the 4-byte TMEM address slot (tmem_holding_buf).
    const int n_bar = 2 * ab_st + 2 * r.num_acc_stage + 2 * r.num_lora_stage + 1;
    BufferLine bar{"barriers", fmt::format("{} mbarriers × 8 B + TMEM address 4 B", n_bar),
                   0, 1, n_bar * kMbarrierBytes + 4, 0};
    bar.bytes_per_stage = bar.bytes;
    int64_t header = bar.bytes;
    r.buffers.push_back(bar);
    if (r.vectors > 0) {
      BufferLine v{"VEC",
                   fmt::format("{} vectors × {} × {}, in the barriers' block", cfg.epilogue_vectors, cfg.mma_n,
                               bits_text(c_bits)),
                   r.vectors, 1, r.vectors, 0};
      header += r.vectors;
      r.buffers.push_back(v);
    }
    // The small members share the struct's first 1024-byte block (the next member is aligned).
    r.buffers.front().allocated = round_up(header, kBufferAlign);
    auto add_buf = [&](std::string name, std::string what, int64_t per, int stages) {
      const int64_t bytes = per * stages;
      r.buffers.push_back(BufferLine{std::move(name), std::move(what), per, stages, bytes,
                                     round_up(bytes, kBufferAlign)});
    };
    if (cfg.epilogue_tma)
      add_buf("C", fmt::format("epilogue {}×{} × {}", r.epi.m, r.epi.n, bits_text(c_bits)), r.epi.bytes, c_st);
    add_buf("A", fmt::format("{}×{} × {}", r.ab.cta_m, cfg.tile_k, bits_text(mma->a_smem_bits)), r.ab.a, ab_st);
    add_buf("B", fmt::format("{}×{} × {}", r.ab.cta_n_b, cfg.tile_k, bits_text(mma->b_smem_bits)), r.ab.b, ab_st);
    if (scaled) {
      add_buf("SFA", fmt::format("{} rows × {} scales (128×4 atoms)", r.ab.sfa_rows_padded, r.ab.sf_k_padded),
              r.ab.sfa, ab_st);
      add_buf("SFB", fmt::format("{} rows × {} scales (128×4 atoms)", r.ab.sfb_rows_padded, r.ab.sf_k_padded),
              r.ab.sfb, ab_st);
    }
    if (cfg.lora_rank > 0) {
      const int lb = dtype_bits(cfg.lora_dtype);
      add_buf("LA", fmt::format("{}×{} × {}", cfg.mma_m / g, cfg.lora_rank, bits_text(lb)), r.lora_la,
              r.num_lora_stage);
      add_buf("LU", fmt::format("{}×{} × {}", cfg.mma_n / g, cfg.lora_rank, bits_text(lb)), r.lora_lu,
              r.num_lora_stage);
    }
    for (const BufferLine& b : r.buffers) r.total += b.allocated;
  }
  r.capacity = r.cap.smem_per_block;
  r.headroom = r.capacity - r.total;
  r.percent = r.capacity > 0 ? 100.0 * static_cast<double>(r.total) / static_cast<double>(r.capacity) : 0;
  if (r.total > r.capacity)
    add(Severity::error, fmt::format("the launch would fail: {} B requested, {} B available", r.total,
                                     r.capacity));

  // --- TMEM ---
  const bool request_max = cfg.tmem_alloc == TmemAlloc::max ||
                           (cfg.tmem_alloc == TmemAlloc::automatic && scaled);
  // CUTLASS: overlapping_accum = (num_acc_stage == 1), which its rule gives for tile N 256 only.
  const bool overlapping = scaled && cfg.acc_stages < 0 && r.num_acc_stage == 1;
  r.tmem = tmem_columns(cta_m, cfg.mma_n, r.num_acc_stage, scaled, overlapping, request_max,
                        r.cap.tmem_columns);
  {
    int col = 0;
    if (r.tmem.overlapping_accum) {
      r.tmem_map.push_back({"accumulator (2 overlapped buffers)", col, r.tmem.accumulator_total});
      col += r.tmem.accumulator_total;
    } else {
      for (int s = 0; s < r.tmem.num_acc_stage; ++s) {
        r.tmem_map.push_back({fmt::format("accumulator stage {}", s), col, r.tmem.accumulator});
        col += r.tmem.accumulator;
      }
    }
    if (r.tmem.sfa > 0) {
      r.tmem_map.push_back({"SFA", col, r.tmem.sfa});
      col += r.tmem.sfa;
    }
    if (r.tmem.sfb > 0) {
      r.tmem_map.push_back({"SFB", col, r.tmem.sfb});
      col += r.tmem.sfb;
    }
    if (r.tmem.requested > col) r.tmem_map.push_back({"allocated, unused", col, r.tmem.requested - col});
  }
  if (r.tmem.used > r.cap.tmem_columns)
    add(Severity::error, fmt::format("TMEM: {} columns needed ({} accumulator + {} SFA + {} SFB), {} exist",
                                     r.tmem.used, r.tmem.accumulator_total, r.tmem.sfa, r.tmem.sfb,
                                     r.cap.tmem_columns));
  else if (r.tmem.requested * cfg.occupancy > r.cap.tmem_columns)
    add(Severity::warning,
        fmt::format("TMEM: {} CTAs per SM × {} columns allocated > {}: a later CTA's tcgen05.alloc "
                    "blocks until an earlier one deallocates (it must not wait on that CTA meanwhile)",
                    cfg.occupancy, r.tmem.requested, r.cap.tmem_columns));

  // --- registers ---
  RegisterConfig rc;
  rc.threads = cfg.threads;
  rc.regs_per_thread = cfg.regs_per_thread;
  rc.setmaxnreg = cfg.setmaxnreg;
  rc.occupancy = cfg.occupancy;
  r.regs = register_findings(rc, r.cap, r.findings);

  // --- occupancy ---
  r.occupancy = occupancy_limits(*arch, r.cap, cfg.threads, r.total, r.capacity, r.regs, r.tmem.requested,
                                 cfg.occupancy, r.findings);

  // --- hand-written estimates against the derived footprints ---
  if (!cfg.hand.empty()) {
    std::string consequence;
    if (r.solved_hand && r.solved_hand->ok && r.solved.ok) {
      const int hab = r.solved_hand->num_ab_stage, tab = r.solved.num_ab_stage;
      const int hc = r.solved_hand->num_c_stage, tc = r.solved.num_c_stage;
      if (hab > tab)
        consequence = fmt::format("with the true numbers the solver chooses num_ab_stage {} → {}: the "
                                  "hand-written numbers buy {} stage{} that do not fit",
                                  hab, tab, hab - tab, hab - tab == 1 ? "" : "s");
      else if (hab < tab)
        consequence = fmt::format("with the true numbers the solver chooses num_ab_stage {} → {}: {} "
                                  "stage{} lost",
                                  hab, tab, tab - hab, tab - hab == 1 ? "" : "s");
      else
        consequence = fmt::format("the solver's num_ab_stage is {} either way", hab);
      if (hc != tc) consequence += fmt::format("; num_c_stage {} → {}", hc, tc);
    } else if (r.solved_hand && !r.solved_hand->ok && r.solved.ok) {
      consequence = fmt::format("with the hand-written numbers the solver fails; with the true numbers it "
                                "chooses num_ab_stage {}, num_c_stage {}",
                                r.solved.num_ab_stage, r.solved.num_c_stage);
    }
    auto compare = [&](const std::string& name, std::optional<int64_t> hand, int64_t derived,
                       OperandContext ctx) {
      if (!hand) return;
      if (*hand == derived) {
        add(Severity::note, fmt::format("{}: hand-written {} B matches the derived footprint", name, *hand));
        return;
      }
      Mismatch m;
      m.operand = name;
      m.hand = *hand;
      m.derived = derived;
      m.ratio = derived > 0 ? static_cast<double>(*hand) / static_cast<double>(derived) : 0;
      ctx.name = name;
      ctx.cta_group = g;
      m.causes = likely_causes(ctx, *hand, derived);
      m.message = fmt::format("{}: hand-written {} B, derived {} B (ratio {:.3f}): {}", name, *hand, derived,
                              m.ratio,
                              m.causes.empty() ? std::string("no simple cause found")
                                               : "likely " + fmt::format("{}", fmt::join(m.causes, "; or ")));
      if (!consequence.empty()) m.message += "; " + consequence;
      add(Severity::warning, m.message);
      r.mismatches.push_back(std::move(m));
    };
    const int ab_stages_ctx = std::max(r.solved.num_ab_stage, 1);
    const int sfk = cfg.tile_k;
    compare("A", h.a, r.ab.a,
            {"", 'M', g, cfg.mma_m, cfg.tile_k, dtype_bits(cfg.a.data), mma->a_smem_bits, 0, false, ab_stages_ctx, 0});
    compare("B", h.b, r.ab.b,
            {"", 'N', g, cfg.mma_n, cfg.tile_k, dtype_bits(cfg.b.data), mma->b_smem_bits, 0, false, ab_stages_ctx, 0});
    compare("SFA", h.sfa, r.ab.sfa, {"", 0, g, cta_m, sfk, 8, 8, r.sf_vec, true, ab_stages_ctx, 0});
    compare("SFB", h.sfb, r.ab.sfb, {"", 0, g, cfg.mma_n, sfk, 8, 8, r.sf_vec, true, ab_stages_ctx, 0});
    compare("AB", h.ab, r.ab.per_stage(), {"", 0, g, 0, 0, 0, 0, 0, false, ab_stages_ctx, 0});
    compare("C", cfg.epilogue_tma ? h.c : std::nullopt, r.epi.bytes,
            {"", 0, g, 0, 0, c_bits, c_bits, 0, false, std::max(r.solved.num_c_stage, 1),
             int64_t{cta_m} * cfg.mma_n * c_bits / 8});
    const int lb = dtype_bits(cfg.lora_dtype);
    compare("LA", h.la, r.lora_la, {"", 'M', g, cfg.mma_m, cfg.lora_rank, lb, lb, 0, false, r.num_lora_stage, 0});
    compare("LU", h.lu, r.lora_lu, {"", 'N', g, cfg.mma_n, cfg.lora_rank, lb, lb, 0, false, r.num_lora_stage, 0});
    compare("LORA", h.lora, r.lora_la + r.lora_lu, {"", 0, g, 0, 0, 0, 0, 0, false, r.num_lora_stage, 0});
    compare("VEC", h.vec, r.vectors, {"", 0, g, 0, 0, 0, 0, 0, false, 1, 0});
  }
  r.valid = true;
  return r;
}

// ---------------------------------------------------------------------------------------------
// Human report

std::string format_report(const BudgetReport& r) {
  std::string out;
  const GemmConfig& c = r.config;
  if (!r.valid) {
    out += "budget: configuration rejected\n";
    for (const Finding& f : r.findings)
      out += fmt::format("  {}: {}\n", severity_name(f.severity),
                         f.message);
    return out;
  }
  auto fmt_name = [](const OperandFormat& f) {
    return std::string(dtype_name(f.data));
  };
  out += fmt::format("budget: {} tile {}x{}x{}, cluster {}x{}, cta_group {}, A {} B {}{} → C {}, {}\n",
                     r.arch_name, c.mma_m, c.mma_n, c.tile_k, c.cluster_m, c.cluster_n, c.cta_group,
                     fmt_name(c.a), fmt_name(c.b),
                     r.sf ? fmt::format(" (scale {} / {})", dtype_name(*r.sf), r.sf_vec) : std::string(),
                     dtype_name(c.c), mma_kind_name(r.mma.kind));
  if (c.lora_rank > 0)
    out += fmt::format("  LoRA rank {} ({}), {} stage(s)\n", c.lora_rank, dtype_name(c.lora_dtype), c.lora_stages);
  out += fmt::format("  solver: {} ({} B capacity{}), occupancy {}\n",
                     c.solver == GemmConfig::Solver::seed ? "seed 001 variant" : "CUTLASS _compute_stages",
                     r.solver_capacity,
                     r.solved.capacity_for_solver != r.solver_capacity
                         ? fmt::format(", {} B after extra buffers", r.solved.capacity_for_solver)
                         : std::string(),
                     c.occupancy);
  out += fmt::format("  stages: num_ab_stage {}, num_c_stage {}, num_acc_stage {}{}\n", r.num_ab_stage,
                     r.num_c_stage, r.num_acc_stage,
                     r.num_lora_stage > 0 ? fmt::format(", num_lora_stage {}", r.num_lora_stage) : std::string());
  if (r.solved_hand && r.solved_hand->ok && r.solved.ok &&
      (r.solved_hand->num_ab_stage != r.solved.num_ab_stage || r.solved_hand->num_c_stage != r.solved.num_c_stage))
    out += fmt::format("  (with the derived footprints the solver would choose num_ab_stage {}, num_c_stage {})\n",
                       r.solved.num_ab_stage, r.solved.num_c_stage);

  out += "\nshared memory (per CTA)\n";
  std::vector<std::vector<std::string>> rows{{"buffer", "derived from", "B/stage", "stages", "bytes", "allocated", "% cap"}};
  for (const BufferLine& b : r.buffers)
    rows.push_back({b.name, b.what, std::to_string(b.bytes_per_stage), std::to_string(b.stages), std::to_string(b.bytes),
                    std::to_string(b.allocated), percent_of(b.allocated, r.capacity)});
  rows.push_back({"total", "1024-byte aligned buffers", "", "", "", std::to_string(r.total), percent_of(r.total, r.capacity)});
  out += text_table(rows, {false, false, true, true, true, true, true});
  out += fmt::format("  capacity {} B per block{}; headroom {} B\n", r.capacity,
                     r.device_capacity ? " (GPU present)" : fmt::format(" ({} table)", r.arch_name), r.headroom);

  out += "\ntensor memory (columns of 32 bit × 128 lanes)\n";
  std::vector<std::vector<std::string>> t{{"range", "columns", "first", "last"}};
  for (const TmemRange& m : r.tmem_map)
    t.push_back({m.name, std::to_string(m.columns), std::to_string(m.first), std::to_string(m.first + m.columns - 1)});
  out += text_table(t, {false, true, true, true});
  out += fmt::format("  used {}, power of two {}, requested by tcgen05.alloc {} of {}\n", r.tmem.used, r.tmem.pow2,
                     r.tmem.requested, r.cap.tmem_columns);

  out += "\nregisters and occupancy\n";
  if (r.config.regs_per_thread > 0)
    out += fmt::format("  {} threads × {} registers (allocated {}) = {} per CTA of {} per SM\n", r.config.threads,
                       r.config.regs_per_thread, r.regs.regs_per_thread_alloc, r.regs.regs_per_cta, r.cap.regs_per_sm);
  else
    out += fmt::format("  {} threads; registers per thread not given (at most {} for occupancy {})\n",
                       r.config.threads, r.regs.max_regs_for_occupancy, r.config.occupancy);
  if (!r.config.setmaxnreg.empty())
    out += fmt::format("  setmaxnreg per warpgroup: {} → {} registers\n", fmt::join(r.config.setmaxnreg, ", "),
                       r.regs.regs_after_setmaxnreg);
  const OccupancyLimits& o = r.occupancy;
  out += fmt::format("  CTAs per SM: threads {}, blocks {}, shared memory {}, registers {}, TMEM {} → {}\n",
                     o.by_threads, o.by_blocks, o.by_smem, o.by_regs > 0 ? std::to_string(o.by_regs) : "?",
                     o.by_tmem > 0 ? std::to_string(o.by_tmem) : "-", o.achieved);

  if (!r.findings.empty()) out += "\n";
  for (const Finding& f : r.findings)
    out += fmt::format("{}: {}\n", severity_name(f.severity),
                       f.message);
  return out;
}

}  // namespace pipesim::model
