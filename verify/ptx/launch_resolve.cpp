// The launch file's second step (launch_impl.hpp): checking a read launch against the module and the
// architecture, and laying out the parameter buffer.
#include "verify/ptx/launch.hpp"

#include <algorithm>
#include <bit>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>

#include <fmt/format.h>

#include "model/arch.hpp"
#include "model/registers.hpp"
#include "sim/engine.hpp"
#include "verify/ptx/launch_impl.hpp"

namespace pipesim::ptx {


// cuTensorMapEncodeTiled (CUDA driver API, "Tensor Map Object Management"): "if elementStrides[i] is
// not equal to one for some i, then TMA loads ceil(boxDim[i] / elementStrides[i]) number of elements
// along i-th dimension", and with interleave NONE "the first element of this array is ignored since
// TMA doesn't support the stride for dimension zero". Out-of-bounds elements are filled, so they
// count like any other.
uint64_t TensorMapDesc::box_bytes() const {
  uint64_t elements = 1;
  for (uint32_t i = 0; i < rank && i < box.size(); ++i) {
    uint64_t step = elem_strides[i] == 0 ? 1 : elem_strides[i];
    if (i == 0 && interleave == "none") step = 1;
    elements *= (uint64_t{box[i]} + step - 1) / step;
  }
  const uint64_t bits = smem_elem_bits != 0 ? smem_elem_bits : elem_bits;
  return (elements * bits + 7) / 8;
}

uint8_t TensorMapDesc::row16() const {
  if (interleave != "none") return 0;
  const uint64_t bits = uint64_t{box[0]} * (smem_elem_bits ? smem_elem_bits : elem_bits);
  const uint64_t row = bits / 8;
  return row >= 16 && row <= 4080 && row % 16 == 0 ? static_cast<uint8_t>(row / 16) : 0;
}

uint32_t TensorMapDesc::l2_fill_boxes() const {
  const uint64_t promotion = l2_promotion == "256b" ? 256 : l2_promotion == "128b" ? 128 : l2_promotion == "64b" ? 64 : 0;
  const uint64_t row = (uint64_t{box[0]} * elem_bits + 7) / 8;
  if (interleave != "none" || row == 0 || promotion <= row || promotion % row != 0) return 1;
  return static_cast<uint32_t>(promotion / row);
}

namespace detail {

const model::Arch& known_arch(const std::string& name, const std::string& file, TextPos pos) {
  if (const model::Arch* a = model::find_arch(name)) return *a;
  std::vector<std::string> names;
  for (const model::Arch& a : model::all_archs()) names.emplace_back(a.name);
  throw LaunchError(fmt::format("unknown architecture '{}'; pipesim knows {}", name, join(names)), file, pos);
}

}  // namespace detail

using namespace detail;

namespace {

std::string dims_text(const std::array<uint32_t, 3>& d) { return fmt::format("{}x{}x{}", d[0], d[1], d[2]); }

uint64_t align_up(uint64_t v, uint64_t a) { return a <= 1 ? v : (v + a - 1) / a * a; }

// The bytes of shared memory one swizzle pattern spans (0: none).
uint32_t swizzle_span(const std::string& s) {
  if (s == "32b") return 32;
  if (s == "64b") return 64;
  if (s.rfind("128b", 0) == 0) return 128;
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Resolving against the module.

class Resolver {
 public:
  Resolver(Launch& l, const Module& m, const model::Arch& a) : l_(l), m_(m), arch_(a) {}

  void run() {
    entry();
    target();
    geometry();
    registers();
    shared_memory();
    footprint();
    buffers();
    tensor_maps();
    parameters();
  }

 private:
  Launch& l_;
  const Module& m_;
  const model::Arch& arch_;
  const Function* f_ = nullptr;

  // Where a value came from: the command line (no file, no position) or the file.
  [[noreturn]] void fail(const std::string& ptr, const std::string& msg) const {
    if (ptr.empty()) throw LaunchError(msg, l_.file);
    const size_t end = ptr.find('/', 1);
    const std::string top = ptr.substr(1, end == std::string::npos ? std::string::npos : end - 1);
    if (l_.from_command_line.count(top)) throw LaunchError(msg);
    const auto it = l_.positions.find(ptr);
    throw LaunchError(msg, l_.file, it == l_.positions.end() ? TextPos{} : it->second);
  }
  [[noreturn]] void fail_spec(const ParamSpec& p, const std::string& key, const std::string& msg) const {
    if (p.at.empty()) throw LaunchError(msg);
    const auto it = l_.positions.find(key.empty() ? p.at : p.at + "/" + key);
    if (it == l_.positions.end()) fail(p.at, msg);
    throw LaunchError(msg, l_.file, it->second);
  }
  std::string arch_name() const { return std::string(arch_.name); }

  void entry() {
    std::vector<const Function*> entries;
    for (const Function& f : m_.functions)
      if (f.is_entry) entries.push_back(&f);
    std::vector<std::string> names;
    for (const Function* f : entries) names.push_back(f->name);
    if (entries.empty()) fail("/entry", "the module has no .entry");
    if (l_.entry.empty()) {
      if (entries.size() > 1)
        fail("", fmt::format("the launch names no 'entry' and the module has {}: {}", entries.size(), join(names)));
      f_ = entries[0];
    } else {
      for (const Function* f : entries)
        if (f->name == l_.entry) f_ = f;
      if (!f_) {
        std::vector<const Function*> hits;
        for (const Function* f : entries)
          if (f->name.find(l_.entry) != std::string::npos) hits.push_back(f);
        if (hits.empty())
          fail("/entry", fmt::format("no .entry matches '{}'; the module's entries are {}", l_.entry, join(names)));
        if (hits.size() > 1) {
          std::vector<std::string> hn;
          for (const Function* f : hits) hn.push_back(f->name);
          fail("/entry", fmt::format("'{}' matches {} entries: {}", l_.entry, hits.size(), join(hn)));
        }
        f_ = hits[0];
      }
    }
    l_.entry = f_->name;
    l_.function_index = static_cast<int32_t>(f_ - m_.functions.data());
  }

  // sm_XY[a|f]: the number and the suffix.
  static std::optional<std::pair<uint32_t, char>> parse_sm(const std::string& s) {
    if (s.rfind("sm_", 0) != 0) return std::nullopt;
    uint32_t n = 0;
    size_t i = 3;
    for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i)
      n = n * 10 + static_cast<uint32_t>(s[i] - '0');
    if (i == 3 || i + 1 < s.size()) return std::nullopt;
    return std::pair{n, i < s.size() ? s[i] : '\0'};
  }

  // PTX for sm_XYa runs only on that architecture; sm_XYf on its family (same major, minor not lower);
  // plain sm_XY on it and every later one.
  void target() {
    const auto t = parse_sm(m_.target);
    const auto a = parse_sm(arch_name());
    if (!t || !a) return;
    bool runs = a->first >= t->first;
    if (t->second == 'a') runs = t->first == a->first;
    if (t->second == 'f') runs = a->first / 10 == t->first / 10 && a->first >= t->first;
    if (!runs) fail("/arch", fmt::format("the module targets {}, which does not run on {}", m_.target, arch_name()));
  }

  // The grid the engine would hold (sim::RunFootprint), refused at /grid before anything is allocated.
  // A PTX warp adds its registers (8 bytes a lane each: the interpreter's value slots, an upper
  // bound before compaction) and a CTA its shared memory, which the interpreter materialises.
  void footprint() const {
    sim::RunFootprint f;
    f.ctas = l_.ctas();
    f.warps_per_cta = (l_.threads() + 31) / 32;
    f.extra_per_cta = l_.dynamic_smem + l_.static_smem;
    f.extra_per_warp = uint64_t{32} * 8 * f_->regs.size();
    const int64_t per_sm = model::resident_ctas(arch_, l_.threads(), l_.dynamic_smem + l_.static_smem, l_.regs.value_or(0));
    f.live_ctas = static_cast<uint64_t>(std::max<int64_t>(1, per_sm)) * static_cast<uint64_t>(arch_.cap.sms);
    if (const std::string no = f.refusal(); !no.empty()) fail("/grid", "the launch is too large to simulate: " + no);
  }

  static std::array<uint32_t, 3> directive_dims(const std::optional<uint32_t> (&d)[3]) {
    return {d[0].value_or(1), d[1].value_or(1), d[2].value_or(1)};
  }
  static bool any(const std::optional<uint32_t> (&d)[3]) { return d[0] || d[1] || d[2]; }

  void geometry() {
    const EntryDirectives& d = f_->directives;
    // A kernel compiled for one block or cluster shape needs no repeat of it in the launch.
    if (!l_.given("block") && any(d.reqntid)) l_.block = directive_dims(d.reqntid);
    if (!l_.given("cluster") && any(d.reqnctapercluster)) l_.cluster = directive_dims(d.reqnctapercluster);

    for (const auto& [key, v] :
         {std::pair{"grid", l_.grid}, std::pair{"block", l_.block}, std::pair{"cluster", l_.cluster}})
      if (v[0] == 0 || v[1] == 0 || v[2] == 0)
        fail(std::string("/") + key, fmt::format("'{}' {} has a zero dimension", key, dims_text(v)));

    constexpr std::array<uint32_t, 3> kBlockMax{1024, 1024, 64};  // CUDA: maxThreadsDim
    constexpr std::array<uint32_t, 3> kGridMax{0x7fffffff, 65535, 65535};  // CUDA: maxGridSize
    const char* axis = "xyz";
    for (size_t i = 0; i < 3; ++i) {
      if (l_.block[i] > kBlockMax[i])
        fail("/block", fmt::format("block {} is {} in {}, above the limit of {}", dims_text(l_.block), l_.block[i],
                                   axis[i], kBlockMax[i]));
      if (l_.grid[i] > kGridMax[i])
        fail("/grid", fmt::format("grid {} is {} in {}, above the limit of {}", dims_text(l_.grid), l_.grid[i],
                                  axis[i], kGridMax[i]));
    }
    const uint64_t threads = uint64_t{l_.block[0]} * l_.block[1] * l_.block[2];
    if (threads > static_cast<uint64_t>(arch_.cap.threads_per_block))
      fail("/block", fmt::format("block {} has {} threads, above {}'s limit of {}", dims_text(l_.block), threads,
                                 arch_name(), arch_.cap.threads_per_block));

    if (any(d.reqntid) && directive_dims(d.reqntid) != l_.block)
      fail("/block", fmt::format("entry '{}' requires a block of {} (.reqntid), the launch gives {}", f_->name,
                                 dims_text(directive_dims(d.reqntid)), dims_text(l_.block)));
    // .maxntid bounds the product, not each dimension (PTX ISA, "Performance-Tuning Directives: .maxntid").
    if (any(d.maxntid)) {
      const auto m = directive_dims(d.maxntid);
      const uint64_t most = uint64_t{m[0]} * m[1] * m[2];
      if (threads > most)
        fail("/block", fmt::format("entry '{}' allows at most {} threads per block (.maxntid {}), the launch gives {}",
                                   f_->name, most, dims_text(m), threads));
    }

    const uint64_t csize = uint64_t{l_.cluster[0]} * l_.cluster[1] * l_.cluster[2];
    if (d.explicitcluster && !l_.given("cluster") && !any(d.reqnctapercluster))
      fail("", fmt::format("entry '{}' is .explicitcluster, so the launch must give 'cluster'", f_->name));
    if (any(d.reqnctapercluster) && directive_dims(d.reqnctapercluster) != l_.cluster)
      fail("/cluster", fmt::format("entry '{}' requires a cluster of {} (.reqnctapercluster), the launch gives {}",
                                   f_->name, dims_text(directive_dims(d.reqnctapercluster)), dims_text(l_.cluster)));
    if (d.maxclusterrank && csize > *d.maxclusterrank)
      fail("/cluster", fmt::format("entry '{}' allows at most {} CTAs per cluster (.maxclusterrank), the launch gives {}",
                                   f_->name, *d.maxclusterrank, csize));
    if (csize > 1) {
      const auto portable = static_cast<uint64_t>(arch_.cap.cluster_portable);
      const auto most = static_cast<uint64_t>(arch_.cap.cluster_max);
      if (most == 0)
        fail("/cluster", fmt::format("{} has no thread block clusters, the launch asks for cluster {}", arch_name(),
                                     dims_text(l_.cluster)));
      if (csize > most)
        fail("/cluster", fmt::format("cluster {} has {} CTAs, above {}'s limit of {}", dims_text(l_.cluster), csize,
                                     arch_name(), most));
      // Above the portable size a launch needs cudaFuncAttributeNonPortableClusterSizeAllowed; a kernel
      // whose PTX asks for such a cluster itself is taken to set it.
      const bool ptx_says = (d.maxclusterrank && *d.maxclusterrank > portable) ||
                            (any(d.reqnctapercluster) && csize > portable);
      if (csize > portable && !l_.non_portable_cluster && !ptx_says)
        fail("/cluster", fmt::format("cluster {} has {} CTAs, above the portable limit of {}; a kernel launched so "
                                     "sets cudaFuncAttributeNonPortableClusterSizeAllowed, which the launch file says "
                                     "with \"non_portable_cluster_size\": true",
                                     dims_text(l_.cluster), csize, portable));
    }
    for (size_t i = 0; i < 3; ++i)
      if (l_.grid[i] % l_.cluster[i] != 0)
        fail("/grid", fmt::format("grid {} is not a whole number of clusters {} (in {})", dims_text(l_.grid),
                                  dims_text(l_.cluster), axis[i]));
  }

  void registers() {
    if (!l_.regs) return;
    const uint32_t r = *l_.regs;
    if (r == 0) fail("/regs", "'regs' must be at least 1");
    if (r > static_cast<uint32_t>(arch_.cap.regs_per_thread_max))
      fail("/regs", fmt::format("regs {} is above {}'s limit of {} per thread", r, arch_name(),
                                arch_.cap.regs_per_thread_max));
    if (f_->directives.maxnreg && r > *f_->directives.maxnreg)
      fail("/regs", fmt::format("regs {} is above the .maxnreg {} of entry '{}'", r, *f_->directives.maxnreg, f_->name));
    // Registers are allocated per warp in units of kRegAllocUnitPerWarp; one CTA must fit the SM's file.
    const uint64_t warps = (uint64_t{l_.threads()} + 31) / 32;
    const auto unit = static_cast<uint64_t>(model::kRegAllocUnitPerWarp);
    const uint64_t per_warp = align_up(uint64_t{r} * 32, unit);
    if (per_warp * warps > static_cast<uint64_t>(arch_.cap.regs_per_sm))
      fail("/regs", fmt::format("{} threads x {} registers need {} registers per CTA ({} warps x {}, allocated per warp "
                                "in units of {}), above {}'s {}",
                                l_.threads(), r, per_warp * warps, warps, per_warp, unit, arch_name(),
                                arch_.cap.regs_per_sm));
  }

  static uint64_t var_align(const Variable& v) {
    return v.align != 0 ? v.align : std::max<uint32_t>(1, type_bytes(v.type));
  }

  void shared_memory() {
    // Static shared memory: the module's .shared variables and the entry's own, each at its alignment.
    // Those of called functions are not counted (PTX puts them at module scope in practice).
    uint64_t s = 0;
    auto add = [&](const Variable& v) {
      if (v.space != Space::Shared || v.is_extern) return;
      s = align_up(s, var_align(v)) + v.bytes();
    };
    for (const Variable& v : m_.vars) add(v);
    for (const Variable& v : f_->vars) add(v);
    l_.static_smem = s;
    const uint64_t total = l_.dynamic_smem + s;
    const auto most = static_cast<uint64_t>(arch_.cap.smem_per_block);
    if (total > most)
      fail("/dynamic_smem", fmt::format("shared memory {} B dynamic + {} B static = {} B is above {}'s per-block "
                                        "limit of {} B",
                                        l_.dynamic_smem, s, total, arch_name(), most));
  }

  const BufferDesc* find_buffer(const std::string& name) const {
    for (const BufferDesc& b : l_.buffers)
      if (b.name == name) return &b;
    return nullptr;
  }
  std::string buffer_names() const {
    std::vector<std::string> n;
    for (const BufferDesc& b : l_.buffers) n.push_back(b.name);
    return n.empty() ? "there are none" : "the buffers are " + join(n);
  }
  std::string tensor_map_names() const {
    std::vector<std::string> n;
    for (const TensorMapDesc& t : l_.tensormaps) n.push_back(t.name);
    return n.empty() ? "there are none" : "the tensor maps are " + join(n);
  }

  void buffers() {
    std::vector<const BufferDesc*> placed;
    auto overlap = [](const BufferDesc& a, uint64_t at, uint64_t bytes) {
      return at < a.address + a.bytes && a.address < at + bytes;
    };
    for (size_t i = 0; i < l_.buffers.size(); ++i) {
      const BufferDesc& b = l_.buffers[i];
      const std::string ptr = "/buffers/" + std::to_string(i);
      for (size_t j = 0; j < i; ++j)
        if (l_.buffers[j].name == b.name) fail(ptr + "/name", fmt::format("buffer '{}' is defined twice", b.name));
      if (b.bytes == 0) fail(ptr + "/bytes", fmt::format("buffer '{}' has 0 bytes", b.name));
      if (b.address == 0) continue;
      if (b.address > std::numeric_limits<uint64_t>::max() - b.bytes)
        fail(ptr + "/address", fmt::format("buffer '{}' ends past the 64-bit address space", b.name));
      for (const BufferDesc* o : placed)
        if (overlap(*o, b.address, b.bytes))
          fail(ptr + "/address", fmt::format("buffer '{}' at {:#x}..{:#x} overlaps buffer '{}' at {:#x}..{:#x}", b.name,
                                             b.address, b.address + b.bytes, o->name, o->address, o->address + o->bytes));
      placed.push_back(&b);
    }
    // The others: one after another from kBufferBase, around the ones given an address.
    uint64_t cursor = kBufferBase;
    for (BufferDesc& b : l_.buffers) {
      if (b.address != 0) continue;
      for (bool moved = true; moved;) {
        cursor = align_up(cursor, kBufferAlign);
        moved = false;
        for (const BufferDesc* o : placed)
          if (overlap(*o, cursor, b.bytes)) {
            cursor = o->address + o->bytes;
            moved = true;
          }
      }
      b.address = cursor;
      cursor += b.bytes;
      placed.push_back(&b);
    }
    l_.contents.clear();
    for (size_t i = 0; i < l_.buffers.size(); ++i) {
      const BufferDesc& b = l_.buffers[i];
      if (b.contents_file.empty()) continue;
      const std::string ptr = "/buffers/" + std::to_string(i) + "/contents";
      std::ifstream in(b.contents_file, std::ios::binary);
      std::error_code ec;
      if (!in || std::filesystem::is_directory(b.contents_file, ec))
        fail(ptr, fmt::format("cannot read '{}', the contents of buffer '{}'", b.contents_file, b.name));
      std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (bytes.size() > b.bytes)
        fail(ptr, fmt::format("'{}' has {} B, more than the {} B of buffer '{}'", b.contents_file, bytes.size(),
                              b.bytes, b.name));
      l_.contents[b.name] = std::move(bytes);
    }
  }

  void tensor_maps() {
    for (size_t i = 0; i < l_.tensormaps.size(); ++i) tensor_map(i);
  }

  void tensor_map(size_t index) {
    TensorMapDesc& t = l_.tensormaps[index];
    const std::string ptr = "/tensormaps/" + std::to_string(index);
    auto at = [&](const char* key, size_t i) { return ptr + "/" + key + "/" + std::to_string(i); };
    const std::string tm = fmt::format("tensor map '{}'", t.name);
    for (size_t j = 0; j < index; ++j)
      if (l_.tensormaps[j].name == t.name) fail(ptr + "/name", fmt::format("{} is defined twice", tm));
    if (find_buffer(t.name))
      fail(ptr + "/name", fmt::format("'{}' names both a buffer and a tensor map", t.name));
    const TensorMapType* type = find_tensor_map_type(t.type_name);
    if (t.rank < 1 || t.rank > 5)
      fail(ptr + "/dims", fmt::format("{} has rank {}; a tensor map has 1 to 5 dimensions", tm, t.rank));
    if (t.interleave != "none" && t.rank < 3)
      fail(ptr + "/interleave", fmt::format("{} is interleaved, which needs rank 3 or more, not {}", tm, t.rank));
    const uint32_t smem_bits = t.smem_elem_bits != 0 ? t.smem_elem_bits : t.elem_bits;
    for (uint32_t i = 0; i < t.rank; ++i) {
      if (t.dims[i] == 0 || t.dims[i] > (uint64_t{1} << 32))
        fail(at("dims", i), fmt::format("{}: dims[{}] = {} is outside 1..4294967296", tm, i, t.dims[i]));
      if (t.box[i] == 0 || t.box[i] > 256)
        fail(at("box", i), fmt::format("{}: box[{}] = {} is outside 1..256", tm, i, t.box[i]));
      if (t.elem_strides[i] == 0 || t.elem_strides[i] > 8)
        fail(at("element_strides", i),
             fmt::format("{}: element_strides[{}] = {} is outside 1..8", tm, i, t.elem_strides[i]));
    }
    const uint64_t inner_bits = uint64_t{t.box[0]} * smem_bits;
    const uint64_t inner = inner_bits / 8;
    const std::string inner_text = inner_bits % 8 == 0 ? fmt::format("{} B", inner) : fmt::format("{} bits", inner_bits);
    if (t.interleave == "none" && inner_bits % 128 != 0)
      fail(at("box", 0), fmt::format("{}: the box's inner dimension is {} ({} x {}), not a multiple of 16 B", tm,
                                     inner_text, t.box[0], t.type_name));
    if (const uint32_t span = swizzle_span(t.swizzle); t.interleave == "none" && span != 0 && inner > span)
      fail(at("box", 0), fmt::format("{}: the box's inner dimension is {} B ({} x {}), above the {} B that swizzle "
                                     "{} spans",
                                     tm, inner, t.box[0], t.type_name, span, t.swizzle));
    if (t.interleave == "32b" && t.swizzle != "32b")
      fail(ptr + "/swizzle", fmt::format("{}: interleave 32b needs swizzle 32b, not {}", tm, t.swizzle));
    if (t.oob_fill == "nan" && type && !type->floating)
      fail(ptr + "/oob_fill", fmt::format("{}: oob_fill nan needs a floating-point type, not {}", tm, t.type_name));
    const bool align16b = type && type->align16b;
    if (align16b) {
      if (t.dims[0] % 128 != 0)
        fail(at("dims", 0),
             fmt::format("{}: type {} needs dims[0] to be a multiple of 128, not {}", tm, t.type_name, t.dims[0]));
      if (t.box[0] != 128)
        fail(at("box", 0), fmt::format("{}: type {} needs box[0] = 128, not {}", tm, t.type_name, t.box[0]));
      if (t.interleave != "none")
        fail(ptr + "/interleave", fmt::format("{}: type {} needs interleave none", tm, t.type_name));
      if (t.swizzle != "none" && t.swizzle != "128b" && t.swizzle != "128b_atom_32b" && t.swizzle != "128b_atom_64b")
        fail(ptr + "/swizzle", fmt::format("{}: type {} allows swizzle none, 128b, 128b_atom_32b or 128b_atom_64b, not {}",
                                           tm, t.type_name, t.swizzle));
    } else if (t.elem_bits == 4 && t.dims[0] % 2 != 0) {
      fail(at("dims", 0), fmt::format("{}: 4-bit type {} needs an even dims[0], not {}", tm, t.type_name, t.dims[0]));
    }
    // Strides: bytes, multiples of 16 (32 for interleave 32b and the align16b types). The first holds a
    // whole row (dims[0] elements); outer dimensions may come in any order (CUTLASS's FMHA steps over
    // heads with a stride smaller than its sequence's), so only the first is checked against what lies
    // below it.
    const uint64_t stride_unit = (t.interleave == "32b" || align16b) ? 32 : 16;
    const uint64_t row = (t.dims[0] * t.elem_bits + 7) / 8;
    for (uint32_t i = 1; i < t.rank; ++i) {
      const uint64_t s = t.strides[i];
      const std::string sp = at("strides", i - 1);
      if (s % stride_unit != 0 || s >= (uint64_t{1} << 40))
        fail(sp, fmt::format("{}: strides[{}] = {} B is not a multiple of {} below 2^40", tm, i - 1, s, stride_unit));
      // A dimension of extent 1 is never stepped along: its stride is free (CUTLASS passes 0 for a
      // batch of one).
      if (i == 1 && t.dims[i] != 1 && s < row)
        fail(sp, fmt::format("{}: strides[0] = {} B is less than the {} B of dims[0] x {}", tm, s, row, t.type_name));
    }
    // The memory it describes.
    if (!t.buffer.empty()) {
      const BufferDesc* b = find_buffer(t.buffer);
      if (!b)
        fail(ptr + "/buffer",
             fmt::format("{} names buffer '{}', which is not defined; {}", tm, t.buffer, buffer_names()));
      uint64_t span = (t.dims[0] * t.elem_bits + 7) / 8;
      for (uint32_t i = 1; i < t.rank; ++i) span += (t.dims[i] - 1) * t.strides[i];
      if (t.buffer_offset > b->bytes || span > b->bytes - t.buffer_offset)
        fail(ptr + "/buffer", fmt::format("{} spans {} B from offset {} of buffer '{}', which has {} B", tm, span,
                                          t.buffer_offset, b->name, b->bytes));
      t.global_address = b->address + t.buffer_offset;
    }
    const uint64_t align = (t.interleave == "32b" || align16b) ? 32 : 16;
    if (t.global_address % align != 0)
      fail(ptr + (t.buffer.empty() ? "/address" : "/offset"),
           fmt::format("{}: its global address {:#x} is not {}-byte aligned", tm, t.global_address, align));
  }

  // The parameter a spec names, by name, by "N" / "_param_N" (nvcc's suffix), or by index.
  size_t match(const ParamSpec& p) const {
    const std::vector<Param>& ps = f_->params;
    auto listing = [&]() {
      std::vector<std::string> n;
      for (size_t i = 0; i < ps.size(); ++i) n.push_back(fmt::format("{} {}", i, ps[i].name));
      return n.empty() ? std::string("it has none") : "its parameters are " + join(n);
    };
    if (p.index) {
      if (*p.index >= ps.size())
        fail_spec(p, "index", fmt::format("entry '{}' has {} parameters, index {} is not one of them", f_->name,
                                          ps.size(), *p.index));
      return *p.index;
    }
    for (size_t i = 0; i < ps.size(); ++i)
      if (ps[i].name == p.name) return i;
    std::string n = p.name;
    if (n.rfind("_param_", 0) == 0) n = n.substr(7);
    else if (n.rfind("param_", 0) == 0) n = n.substr(6);
    if (!n.empty() && std::all_of(n.begin(), n.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
      const std::string suffix = "_param_" + n;
      for (size_t i = 0; i < ps.size(); ++i)
        if (ps[i].name.ends_with(suffix)) return i;
      if (n.size() < 6 && std::stoul(n) < ps.size()) return std::stoul(n);
    }
    fail_spec(p, "name", fmt::format("entry '{}' has no parameter '{}'; {}", f_->name, p.name, listing()));
  }

  static std::string param_type(const Param& p) {
    std::string t = fmt::format(".{}", type_name(p.type));
    if (p.elements != 1) t += fmt::format("[{}]", p.elements);
    return t;
  }

  uint32_t pointer_bytes() const { return m_.address_size == 32 ? 4 : 8; }

  // A short form's text, typed by the parameter it sets.
  ParamSpec typed(const ParamSpec& p, const Param& param) const {
    ParamSpec out = p;
    const std::string& v = p.target;
    const std::string arg = fmt::format("param.{}={}", p.name, v);
    const size_t plus = v.find('+');
    const std::string base = v.substr(0, plus);
    if (find_buffer(base)) {
      out.kind = ParamSpec::Kind::Pointer;
      out.target = base;
      if (plus != std::string::npos) {
        const auto off = parse_int_text(v.substr(plus + 1));
        if (!off || off->negative || off->magnitude > (uint64_t{1} << 62))
          throw LaunchError(fmt::format("{}: '{}' is not a byte offset", arg, v.substr(plus + 1)));
        out.pointer_offset = static_cast<int64_t>(off->magnitude);
      }
      return out;
    }
    for (const TensorMapDesc& t : l_.tensormaps)
      if (t.name == v) {
        out.kind = ParamSpec::Kind::TensorMap;
        return out;
      }
    const uint64_t bytes = param.bytes();
    if (param.elements != 1 || bytes > 8)
      throw LaunchError(fmt::format("{}: parameter '{}' is {} ({} B), which takes 'hex' or 'fields' in the launch file",
                                    arg, param.name, param_type(param), bytes));
    out.kind = ParamSpec::Kind::Number;
    if (param.type == Type::F32 || param.type == Type::F64) {
      double d = 0;
      const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
      if (ec != std::errc() || end != v.data() + v.size())
        throw LaunchError(fmt::format("{}: '{}' is not a number, a buffer or a tensor map", arg, v));
      out.type = param.type;
      out.bits = param.type == Type::F32 ? std::bit_cast<uint32_t>(static_cast<float>(d)) : std::bit_cast<uint64_t>(d);
      return out;
    }
    const auto i = parse_int_text(v);
    if (!i) throw LaunchError(fmt::format("{}: '{}' is not a number, a buffer or a tensor map", arg, v));
    const ScalarKey* s = find_scalar_type(param.type);
    const char sign = s ? s->sign : 'b';
    const auto b = fit_int(*i, static_cast<uint32_t>(bytes), sign == 'f' ? 'b' : sign);
    if (!b)
      throw LaunchError(
          fmt::format("{}: {} does not fit parameter '{}' ({})", arg, int_text(*i), param.name, param_type(param)));
    switch (bytes) {
      case 1: out.type = Type::B8; break;
      case 2: out.type = Type::B16; break;
      case 4: out.type = Type::B32; break;
      default: out.type = Type::B64; break;
    }
    if (s && type_bytes(s->type) == bytes) out.type = s->type;
    out.bits = *b;
    return out;
  }

  // The JSON key that holds a value (for its position).
  static std::string value_key(const ParamSpec& p) {
    switch (p.kind) {
      case ParamSpec::Kind::Number: return type_name(p.type);
      case ParamSpec::Kind::Pointer: return "pointer";
      case ParamSpec::Kind::TensorMap: return "tensormap";
      default: return "";
    }
  }

  static void put(std::vector<uint8_t>& out, uint64_t at, uint64_t value, uint32_t bytes) {
    for (uint32_t i = 0; i < bytes; ++i) out[at + i] = static_cast<uint8_t>(value >> (8 * i));
  }

  // The value's bytes, checked against `size`; `label` names it in messages.
  std::vector<uint8_t> encode(const ParamSpec& p, uint64_t size, const std::string& label, const std::string& key,
                              std::string& what) const {
    auto wrong = [&](const std::string& given, uint64_t bytes) {
      fail_spec(p, key, fmt::format("{} is {} B but is given {} ({} B)", label, size, given, bytes));
    };
    std::vector<uint8_t> out;
    switch (p.kind) {
      case ParamSpec::Kind::Number: {
        const uint32_t n = type_bytes(p.type);
        if (n != size) wrong(fmt::format("a {} value", type_name(p.type)), n);
        out.assign(n, 0);
        put(out, 0, p.bits, n);
        if (p.type == Type::F32) what = fmt::format("f32 {}", std::bit_cast<float>(static_cast<uint32_t>(p.bits)));
        else if (p.type == Type::F64) what = fmt::format("f64 {}", std::bit_cast<double>(p.bits));
        else if (find_scalar_type(p.type) && find_scalar_type(p.type)->sign == 's' && n < 8 && (p.bits >> (8 * n - 1)) != 0)
          what = fmt::format("{} -{}", type_name(p.type), (uint64_t{1} << (8 * n)) - p.bits);
        else if (find_scalar_type(p.type) && find_scalar_type(p.type)->sign == 's' && n == 8)
          what = fmt::format("{} {}", type_name(p.type), static_cast<int64_t>(p.bits));
        else
          what = fmt::format("{} {}", type_name(p.type), p.bits);
        return out;
      }
      case ParamSpec::Kind::Pointer: {
        const BufferDesc* b = find_buffer(p.target);
        if (!b)
          fail_spec(p, "pointer", fmt::format("{} points into buffer '{}', which is not defined; {}", label, p.target,
                                              buffer_names()));
        if (p.pointer_offset < 0 || static_cast<uint64_t>(p.pointer_offset) > b->bytes)
          fail_spec(p, "pointer", fmt::format("{} points {} B into buffer '{}', which has {} B", label, p.pointer_offset,
                                              b->name, b->bytes));
        const uint32_t n = pointer_bytes();
        if (n != size) wrong("a pointer", n);
        out.assign(n, 0);
        put(out, 0, b->address + static_cast<uint64_t>(p.pointer_offset), n);
        what = fmt::format("pointer {}+{}", b->name, p.pointer_offset);
        return out;
      }
      case ParamSpec::Kind::TensorMap: {
        size_t index = l_.tensormaps.size();
        for (size_t i = 0; i < l_.tensormaps.size(); ++i)
          if (l_.tensormaps[i].name == p.target) index = i;
        if (index == l_.tensormaps.size())
          fail_spec(p, "tensormap", fmt::format("{} names tensor map '{}', which is not defined; {}", label, p.target,
                                                tensor_map_names()));
        if (size != kTensorMapBytes) wrong("a tensor map", kTensorMapBytes);
        out.assign(kTensorMapBytes, 0);
        put(out, 0, kTensorMapTag, 8);
        put(out, 8, index, 4);
        what = fmt::format("tensormap {}", p.target);
        return out;
      }
      case ParamSpec::Kind::Bytes: {
        if (p.has_hex && p.hex.size() != size)
          fail_spec(p, "hex", fmt::format("{} is {} B but 'hex' holds {} B", label, size, p.hex.size()));
        out = p.has_hex ? p.hex : std::vector<uint8_t>(size, 0);
        std::vector<std::pair<uint64_t, uint64_t>> taken;  // [begin, end) of each field so far
        for (const ParamSpec& f : p.fields) {
          std::string fwhat;
          // A field's own size comes from its value; it must lie inside the parameter.
          const uint64_t fsize = f.kind == ParamSpec::Kind::Number    ? type_bytes(f.type)
                                 : f.kind == ParamSpec::Kind::Pointer ? pointer_bytes()
                                                                      : kTensorMapBytes;
          const std::vector<uint8_t> bytes =
              encode(f, fsize, fmt::format("the field at offset {} of {}", f.field_offset, label), value_key(f), fwhat);
          if (f.field_offset + fsize > size)
            fail_spec(f, "offset", fmt::format("the field at offset {} ({} B) ends at byte {}, past the {} B of {}",
                                               f.field_offset, fsize, f.field_offset + fsize, size, label));
          for (const auto& [b, e] : taken)
            if (f.field_offset < e && b < f.field_offset + fsize)
              fail_spec(f, "offset",
                        fmt::format("the field at offset {} ({} B) overlaps the field at offset {} ({} B) of {}",
                                    f.field_offset, fsize, b, e - b, label));
          taken.emplace_back(f.field_offset, f.field_offset + fsize);
          std::copy(bytes.begin(), bytes.end(), out.begin() + static_cast<std::ptrdiff_t>(f.field_offset));
        }
        what = fmt::format("{} bytes{}", size, p.fields.empty() ? "" : fmt::format(", {} fields", p.fields.size()));
        return out;
      }
      case ParamSpec::Kind::Text: break;
    }
    return out;
  }

  void parameters() {
    const std::vector<Param>& ps = f_->params;
    std::vector<const ParamSpec*> given(ps.size(), nullptr);
    std::vector<ParamSpec> typed_specs;
    typed_specs.reserve(l_.param_specs.size());
    for (const ParamSpec& p : l_.param_specs) {
      const size_t i = match(p);
      typed_specs.push_back(p.kind == ParamSpec::Kind::Text ? typed(p, ps[i]) : p);
      const ParamSpec* now = &typed_specs.back();
      if (given[i] && !given[i]->at.empty() && !p.at.empty()) {
        const auto first = l_.positions.find(given[i]->at);
        const TextPos fp = first == l_.positions.end() ? TextPos{} : first->second;
        fail_spec(p, "", fmt::format("parameter '{}' is given twice, first at {}:{}", ps[i].name, fp.line, fp.col));
      }
      // The command line's value wins over the file's (it comes later).
      given[i] = now;
    }
    std::vector<std::string> missing;
    for (size_t i = 0; i < ps.size(); ++i)
      if (!given[i]) missing.push_back(fmt::format("{} ({}, {} B)", ps[i].name, param_type(ps[i]), ps[i].bytes()));
    if (!missing.empty())
      fail(l_.given("params") ? "/params" : "",
           fmt::format("entry '{}' needs {} not given: {}", f_->name, missing.size() == 1 ? "a parameter" : "parameters",
                       join(missing)));

    l_.params.clear();
    l_.param_bytes.clear();
    uint64_t offset = 0;
    for (size_t i = 0; i < ps.size(); ++i) {
      const Param& param = ps[i];
      const uint64_t align = param.align != 0 ? param.align : std::max<uint32_t>(1, type_bytes(param.type));
      offset = align_up(offset, align);
      const ParamSpec& p = *given[i];
      std::string what;
      const std::vector<uint8_t> bytes =
          encode(p, param.bytes(), fmt::format("parameter '{}' ({})", param.name, param_type(param)), value_key(p), what);
      l_.param_bytes.resize(offset + bytes.size(), 0);
      std::copy(bytes.begin(), bytes.end(), l_.param_bytes.begin() + static_cast<std::ptrdiff_t>(offset));
      l_.params.push_back(ParamValue{param.name, offset, bytes.size(), what});
      offset += bytes.size();
    }
  }
};

}  // namespace

const model::Arch& launch_arch(Launch& l, const Module& module) {
  if (!l.given("arch") && model::find_arch(module.target)) l.arch = module.target;
  const auto it = l.positions.find("/arch");
  const bool from_file = !l.from_command_line.count("arch") && it != l.positions.end();
  return known_arch(l.arch, from_file ? l.file : "", from_file ? it->second : TextPos{});
}

void resolve_launch(Launch& launch, const Module& module, const model::Arch& arch) {
  Resolver(launch, module, arch).run();
}

void resolve_launch(Launch& launch, const Module& module) { resolve_launch(launch, module, launch_arch(launch, module)); }

}  // namespace pipesim::ptx
