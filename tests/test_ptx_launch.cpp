// The PTX front end's launch file (verify/ptx/launch.hpp, docs/ptx.md "The launch file").
//
// The module is built by hand (no parser): one entry with the parameter kinds real kernels have
// (a pointer, scalars, a 64-byte aligned CUtensorMap, a 288-byte struct), a second entry and a device
// function. Expected bytes and offsets are written out from the PTX layout rules (each parameter at
// its .align, else its type's size), never taken from the code under test.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "model/arch.hpp"
#include "verify/ptx/launch.hpp"

namespace pipesim::ptx {
namespace {

const std::string kEntry = "_Z4gemvPKvPfiN4cute9TmaDescE";

// Field by field: the AST structs grow while the parser is written.
Variable var(const std::string& name, Space space, Type type, uint32_t align, uint64_t elements, bool is_extern = false) {
  Variable v;
  v.name = name;
  v.space = space;
  v.type = type;
  v.align = align;
  v.elements = elements;
  v.is_extern = is_extern;
  return v;
}

Param param(const std::string& name, Type type, uint32_t align = 0, uint64_t elements = 1) {
  Param p;
  p.name = name;
  p.type = type;
  p.align = align;
  p.elements = elements;
  return p;
}

Module make_module() {
  Module m;
  m.path = "k.ptx";
  m.version = "8.0";
  m.target = "sm_90a";
  m.vars = {var("smem_static", Space::Shared, Type::B8, 16, 1024), var("dyn", Space::Shared, Type::B8, 16, 0, true),
            var("counter", Space::Global, Type::U32, 0, 1)};

  Function f;
  f.name = kEntry;
  f.is_entry = true;
  f.params = {
      param(kEntry + "_param_0", Type::U64),          // @0, 8 B
      param(kEntry + "_param_1", Type::U32),          // @8, 4 B
      param(kEntry + "_param_2", Type::B8, 64, 128),  // @64 (.align 64), 128 B
      param(kEntry + "_param_3", Type::U8),           // @192, 1 B
      param(kEntry + "_param_4", Type::B8, 8, 288),   // @200 (.align 8), 288 B
      param(kEntry + "_param_5", Type::F32),          // @488, 4 B
  };
  f.directives.maxntid[0] = 384;
  f.directives.maxntid[1] = 1;
  f.directives.maxntid[2] = 1;
  f.directives.maxnreg = 168;
  f.vars = {var("bar", Space::Shared, Type::B64, 0, 1)};  // 8 B at 1024: static 1032 B
  m.functions.push_back(f);

  Function other;
  other.name = "_Z12other_kernelv";
  other.is_entry = true;
  m.functions.push_back(other);

  Function helper;
  helper.name = "gemv_helper";  // a .func: never an entry
  m.functions.push_back(helper);
  return m;
}

// The struct parameter's item, alone so that tests can swap it.
const std::string kStructItem =
    R"({"name": "_param_4", "fields": [{"offset": 0, "tensormap": "tma_b"}, {"offset": 128, "u32": 7},
                                    {"offset": 136, "pointer": "C", "pointer_offset": 8}, {"offset": 280, "s64": -2}]})";

const std::string kGood = R"({
  "entry": "gemv",
  "arch": "sm_90a",
  "grid": 132,
  "block": [384, 1, 1],
  "cluster": [2, 1, 1],
  "dynamic_smem": 200704,
  "regs": 168,
  "buffers": [
    {"name": "A", "bytes": 1048576},
    {"name": "B", "bytes": 1000},
    {"name": "C", "bytes": 64, "address": "0x1000"}
  ],
  "tensormaps": [
    {"name": "tma_a", "type": "f16", "dims": [4096, 128], "strides": [8192], "box": [64, 128], "swizzle": "128b", "buffer": "A"},
    {"name": "tma_b", "type": "e2m1", "dims": [256, 16], "strides": [128], "box": [256, 16], "address": "0x2000"}
  ],
  "params": [
    {"name": "_Z4gemvPKvPfiN4cute9TmaDescE_param_0", "pointer": "B", "offset": 16},
    {"index": 1, "u32": 7},
    {"name": "2", "tensormap": "tma_a"},
    {"name": "param_3", "u8": 255},
    )" + kStructItem + R"(,
    {"name": "_Z4gemvPKvPfiN4cute9TmaDescE_param_5", "f32": 1.5}
  ]
}
)";

// `text` with the one occurrence of `from` replaced by `to`.
std::string with(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  EXPECT_EQ(text.find(from, at + 1), std::string::npos) << from << " occurs twice";
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// The 1-based line:col where `needle` starts in `text` (plus `skip` characters).
TextPos pos_of(const std::string& text, const std::string& needle, size_t skip = 0) {
  const size_t at = text.find(needle);
  EXPECT_NE(at, std::string::npos) << needle;
  if (at == std::string::npos) return {};
  const size_t off = at + skip;
  uint32_t line = 1;
  size_t start = 0;
  for (size_t i = 0; i < off; ++i)
    if (text[i] == '\n') {
      ++line;
      start = i + 1;
    }
  return {line, static_cast<uint32_t>(off - start + 1)};
}

Launch resolved(const std::string& text, const Module& m = make_module(), const std::vector<std::string>& shorts = {}) {
  Launch l = parse_launch("run/launch.json", text);
  for (const std::string& s : shorts) apply_short_form(l, s);
  resolve_launch(l, m);
  return l;
}

struct Failure {
  std::string message, file;
  TextPos pos;
};

Failure failure(const std::string& text, const Module& m = make_module(), const std::vector<std::string>& shorts = {}) {
  try {
    resolved(text, m, shorts);
  } catch (const LaunchError& e) {
    return {e.what(), e.file, e.pos};
  }
  ADD_FAILURE() << "no LaunchError";
  return {};
}

#define EXPECT_FAILS_AT(f, msg, line_, col_)     \
  do {                                            \
    const Failure f_ = (f);                       \
    EXPECT_EQ(f_.message, msg);                   \
    EXPECT_EQ(f_.file, "run/launch.json");        \
    EXPECT_EQ(f_.pos.line, uint32_t{line_});      \
    EXPECT_EQ(f_.pos.col, uint32_t{col_});        \
  } while (0)

#define EXPECT_FAILS_AT_POS(f, msg, pos_) EXPECT_FAILS_AT(f, msg, (pos_).line, (pos_).col)

void put(std::vector<uint8_t>& b, size_t at, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
}

// ---------------------------------------------------------------------------------------------
// A good launch, byte for byte.

TEST(PtxLaunch, GoodLaunchLaidOutByteExact) {
  const Launch l = resolved(kGood);
  EXPECT_EQ(l.entry, kEntry);
  EXPECT_EQ(l.function_index, 0);
  EXPECT_EQ(l.arch, "sm_90a");
  EXPECT_EQ(l.grid, (std::array<uint32_t, 3>{132, 1, 1}));
  EXPECT_EQ(l.block, (std::array<uint32_t, 3>{384, 1, 1}));
  EXPECT_EQ(l.cluster, (std::array<uint32_t, 3>{2, 1, 1}));
  EXPECT_EQ(l.dynamic_smem, 200704u);
  EXPECT_EQ(l.static_smem, 1032u);  // 1024 (module, .align 16) + 8 (the entry's .b64)
  EXPECT_EQ(l.regs, 168u);

  // Buffers: A and B one after another from 0x7f0000000000, 256-byte aligned; C where it was put.
  ASSERT_EQ(l.buffers.size(), 3u);
  EXPECT_EQ(l.buffers[0].address, 0x7f0000000000u);
  EXPECT_EQ(l.buffers[1].address, 0x7f0000100000u);
  EXPECT_EQ(l.buffers[2].address, 0x1000u);

  ASSERT_EQ(l.tensormaps.size(), 2u);
  EXPECT_EQ(l.tensormaps[0].global_address, 0x7f0000000000u);
  EXPECT_EQ(l.tensormaps[0].elem, Type::F16);
  EXPECT_EQ(l.tensormaps[0].elem_bits, 16u);
  EXPECT_EQ(l.tensormaps[0].rank, 2u);
  EXPECT_EQ(l.tensormaps[0].strides[0], 2u);
  EXPECT_EQ(l.tensormaps[0].strides[1], 8192u);
  EXPECT_EQ(l.tensormaps[0].box_bytes(), 64u * 128 * 2);
  EXPECT_EQ(l.tensormaps[1].global_address, 0x2000u);
  EXPECT_EQ(l.tensormaps[1].elem, Type::E2M1x2);
  EXPECT_EQ(l.tensormaps[1].elem_bits, 4u);
  EXPECT_EQ(l.tensormaps[1].box_bytes(), 256u * 16 / 2);

  // Parameters at their PTX offsets: 0, 8, 64 (.align 64), 192, 200 (.align 8), 488.
  ASSERT_EQ(l.params.size(), 6u);
  const uint64_t offsets[] = {0, 8, 64, 192, 200, 488};
  const uint64_t sizes[] = {8, 4, 128, 1, 288, 4};
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(l.params[i].name, kEntry + "_param_" + std::to_string(i));
    EXPECT_EQ(l.params[i].offset, offsets[i]) << i;
    EXPECT_EQ(l.params[i].bytes, sizes[i]) << i;
  }
  EXPECT_EQ(l.params[0].what, "pointer B+16");
  EXPECT_EQ(l.params[1].what, "u32 7");
  EXPECT_EQ(l.params[2].what, "tensormap tma_a");
  EXPECT_EQ(l.params[3].what, "u8 255");
  EXPECT_EQ(l.params[4].what, "288 bytes, 4 fields");
  EXPECT_EQ(l.params[5].what, "f32 1.5");

  std::vector<uint8_t> want(492, 0);
  put(want, 0, 0x7f0000100010u, 8);        // B + 16
  put(want, 8, 7, 4);
  put(want, 64, kTensorMapTag, 8);         // tma_a: tag, then index 0
  put(want, 72, 0, 4);
  put(want, 192, 255, 1);
  put(want, 200 + 0, kTensorMapTag, 8);    // the struct: tma_b (index 1) at 0
  put(want, 200 + 8, 1, 4);
  put(want, 200 + 128, 7, 4);
  put(want, 200 + 136, 0x1008, 8);         // C + 8
  put(want, 200 + 280, 0xfffffffffffffffeu, 8);  // -2
  put(want, 488, 0x3fc00000u, 4);          // 1.5f
  EXPECT_EQ(l.param_bytes, want);
  // The tag's bytes as they lie in memory: "PSIMTMAP".
  EXPECT_EQ(std::string(l.param_bytes.begin() + 64, l.param_bytes.begin() + 72), "PSIMTMAP");
}

// ---------------------------------------------------------------------------------------------
// Other value forms.

std::string hex_bytes(size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string h;
  for (size_t i = 0; i < n; ++i) {
    h += digits[(i % 256) >> 4];
    h += digits[i % 16];
  }
  return h;
}

TEST(PtxLaunch, HexStructPatchedByFields) {
  const std::string item = R"({"name": "_param_4", "hex": "0x)" + hex_bytes(288) +
                           R"(", "fields": [{"offset": 4, "u16": 48879}, {"offset": 16, "b32": -1}]})";
  const Launch l = resolved(with(kGood, kStructItem, item));
  std::vector<uint8_t> want(288);
  for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<uint8_t>(i);
  put(want, 4, 0xbeef, 2);
  put(want, 16, 0xffffffff, 4);
  EXPECT_EQ(std::vector<uint8_t>(l.param_bytes.begin() + 200, l.param_bytes.begin() + 488), want);
  EXPECT_EQ(l.params[4].what, "288 bytes, 2 fields");
}

TEST(PtxLaunch, HexWithSeparatorsAndNumbersAsStrings) {
  // 288 bytes written in groups; addresses and integers may be strings (hex, '_' separators).
  std::string grouped;
  const std::string h = hex_bytes(288);
  for (size_t i = 0; i < h.size(); i += 8) grouped += h.substr(i, 8) + " ";
  std::string text = with(kGood, kStructItem, R"({"name": "_param_4", "hex": ")" + grouped + R"("})");
  text = with(text, R"("u32": 7})", R"("u32": "0x7fff_ffff"})");
  const Launch l = resolved(text);
  EXPECT_EQ(l.param_bytes[200 + 287], 287 % 256);
  EXPECT_EQ(l.params[1].what, "u32 2147483647");
}

TEST(PtxLaunch, CommentsAreAllowed) {
  const std::string text = with(kGood, "\"grid\": 132,", "// one CTA per SM\n  \"grid\": 132, /* H100 */");
  EXPECT_EQ(resolved(text).grid[0], 132u);
  // Positions after a comment still point at the value.
  const std::string bad = with(text, "\"regs\": 168", "\"regs\": 200");
  EXPECT_FAILS_AT_POS(failure(bad), "regs 200 is above the .maxnreg 168 of entry '" + kEntry + "'",
                      pos_of(bad, "\"regs\": 200", 8));
  // A byte order mark is skipped, and columns count from after it on the first line only.
  const std::string bom = "\xEF\xBB\xBF" + bad;
  EXPECT_FAILS_AT_POS(failure(bom), "regs 200 is above the .maxnreg 168 of entry '" + kEntry + "'",
                      pos_of(bom, "\"regs\": 200", 8));
}

TEST(PtxLaunch, BuffersPlacedAroundFixedOnes) {
  // C sits where A would go: A moves past it (256-byte aligned), B follows A.
  const std::string text = with(kGood, R"("address": "0x1000")", R"("address": "0x7f0000000100")");
  const Launch l = resolved(text);
  EXPECT_EQ(l.buffers[2].address, 0x7f0000000100u);
  EXPECT_EQ(l.buffers[0].address, 0x7f0000000200u);  // after C's 64 B at 0x100, aligned up
  EXPECT_EQ(l.buffers[1].address, 0x7f0000100200u);
}

TEST(PtxLaunch, ShortFormsOverrideTheFile) {
  const Launch l = resolved(kGood, make_module(),
                            {"grid=66x2", "block=256", "cluster=2x1x1", "smem=1024", "regs=100", "entry=gemvPKv",
                             "arch=sm_90a", "param.1=9", "param._param_0=A+64", "param.2=tma_b", "param.param_5=-2.5",
                             "param.3=0x7f", "param.1=10"});
  EXPECT_EQ(l.grid, (std::array<uint32_t, 3>{66, 2, 1}));
  EXPECT_EQ(l.block, (std::array<uint32_t, 3>{256, 1, 1}));
  EXPECT_EQ(l.dynamic_smem, 1024u);
  EXPECT_EQ(l.regs, 100u);
  EXPECT_EQ(l.entry, kEntry);
  EXPECT_EQ(l.params[0].what, "pointer A+64");
  EXPECT_EQ(l.params[1].what, "u32 10");  // the later short form wins
  EXPECT_EQ(l.params[2].what, "tensormap tma_b");
  EXPECT_EQ(l.params[3].what, "u8 127");
  EXPECT_EQ(l.params[5].what, "f32 -2.5");
  std::vector<uint8_t> want(8);
  put(want, 0, 0x7f0000000040u, 8);
  EXPECT_EQ(std::vector<uint8_t>(l.param_bytes.begin(), l.param_bytes.begin() + 8), want);
  EXPECT_EQ(l.param_bytes[8], 10);
  EXPECT_EQ(l.param_bytes[64 + 8], 1);  // tensor map index 1
  EXPECT_EQ(l.param_bytes[192], 0x7f);
  EXPECT_TRUE(l.from_command_line.count("grid"));
  EXPECT_TRUE(l.from_command_line.count("dynamic_smem"));
}

TEST(PtxLaunch, ShortFormErrors) {
  Launch l = parse_launch("run/launch.json", kGood);
  auto error_of = [&](const std::string& s) -> std::string {
    try {
      apply_short_form(l, s);
    } catch (const LaunchError& e) {
      EXPECT_EQ(e.file, "");
      EXPECT_EQ(e.pos.line, 0u);
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(error_of("grid=abc"), "grid=abc: expected N, NxM or NxMxK");
  EXPECT_EQ(error_of("grid=1x2x3x4"), "grid=1x2x3x4: expected N, NxM or NxMxK");
  EXPECT_EQ(error_of("regs"), "'regs' is not a short form KEY=VALUE");
  EXPECT_EQ(error_of("regs="), "regs=: the value is empty");
  EXPECT_EQ(error_of("smem=-1"), "smem=-1: expected an integer in 0..4294967295");
  EXPECT_EQ(error_of("foo=1"),
            "unknown short form 'foo'; the keys are grid, block, cluster, smem, regs, entry, arch, "
            "non_portable_cluster_size and param.NAME");
  EXPECT_EQ(error_of("arch=sm_89"), "unknown architecture 'sm_89'; pipesim knows sm_90a, sm_100a, sm_103a, sm_120a");
  EXPECT_EQ(error_of("non_portable_cluster_size=yes"), "non_portable_cluster_size=yes: expected 1, 0, true or false");

  auto resolve_error = [&](const std::vector<std::string>& shorts) {
    const Failure f = failure(kGood, make_module(), shorts);
    EXPECT_EQ(f.file, "");
    EXPECT_EQ(f.pos.line, 0u);
    return f.message;
  };
  EXPECT_EQ(resolve_error({"grid=131"}), "grid 131x1x1 is not a whole number of clusters 2x1x1 (in x)");
  EXPECT_EQ(resolve_error({"param.1=4294967296"}),
            "param.1=4294967296: 4294967296 does not fit parameter '" + kEntry + "_param_1' (.u32)");
  EXPECT_EQ(resolve_error({"param.1=xyz"}), "param.1=xyz: 'xyz' is not a number, a buffer or a tensor map");
  EXPECT_EQ(resolve_error({"param.4=5"}), "param.4=5: parameter '" + kEntry +
                                              "_param_4' is .b8[288] (288 B), which takes 'hex' or 'fields' in the "
                                              "launch file");
  EXPECT_EQ(resolve_error({"param.0=B+2000"}),
            "parameter '" + kEntry + "_param_0' (.u64) points 2000 B into buffer 'B', which has 1000 B");
  EXPECT_EQ(resolve_error({"param.9=1"}), "entry '" + kEntry + "' has no parameter '9'; its parameters are 0 " +
                                              kEntry + "_param_0, 1 " + kEntry + "_param_1, 2 " + kEntry +
                                              "_param_2, 3 " + kEntry + "_param_3, 4 " + kEntry + "_param_4, 5 " +
                                              kEntry + "_param_5");
  EXPECT_EQ(resolve_error({"entry=nope"}),
            "no .entry matches 'nope'; the module's entries are " + kEntry + ", _Z12other_kernelv");
}

// How many boxes along the innermost dimension one L2 miss brings in (sim::Op::l2_fill_boxes).
TEST(PtxLaunch, TheL2PromotionFillsWholeRowsOfBoxes) {
  TensorMapDesc t;
  t.elem = Type::F16;
  t.elem_bits = 16;
  t.rank = 2;
  t.box = {64, 128, 0, 0, 0};  // 128-byte rows, as CUTLASS's 128-byte-swizzled boxes
  EXPECT_EQ(t.l2_fill_boxes(), 1u);  // no promotion
  t.l2_promotion = "128b";
  EXPECT_EQ(t.l2_fill_boxes(), 1u);  // CUTLASS's maps: a row is one promotion
  t.l2_promotion = "256b";
  EXPECT_EQ(t.l2_fill_boxes(), 2u);  // the next k-block's box comes in with this one
  t.box = {32, 128, 0, 0, 0};        // 64-byte rows
  EXPECT_EQ(t.l2_fill_boxes(), 4u);
  t.box = {48, 128, 0, 0, 0};        // 96-byte rows do not tile 256 B: no group is assumed
  EXPECT_EQ(t.l2_fill_boxes(), 1u);
  t.box = {256, 128, 0, 0, 0};       // rows wider than the promotion
  EXPECT_EQ(t.l2_fill_boxes(), 1u);
}

// A box's row in shared memory, which the SM's intake counts requests by (sim::Op::tma_row16).
TEST(PtxLaunch, ABoxRowIsItsInnerDimensionInSharedMemory) {
  TensorMapDesc t;
  t.elem = Type::F16;
  t.elem_bits = 16;
  t.rank = 2;
  t.box = {64, 128, 0, 0, 0};
  EXPECT_EQ(t.row16(), 8u);  // 128 bytes
  t.box = {16, 128, 0, 0, 0};
  EXPECT_EQ(t.row16(), 2u);  // 32 bytes
  t.box = {256, 4, 0, 0, 0};
  EXPECT_EQ(t.row16(), 32u);  // 512 bytes (an unswizzled scale-factor box): four requests a row
  t.elem_bits = 4;            // e2m1, two to a byte
  t.box = {256, 128, 0, 0, 0};
  EXPECT_EQ(t.row16(), 8u);
  t.smem_elem_bits = 8;  // the align16b types land one byte per value
  EXPECT_EQ(t.row16(), 16u);
  t.smem_elem_bits = 0;
  t.box = {4, 128, 0, 0, 0};  // 2 bytes: not a row of whole 16-byte units, counted as 128-byte rows
  EXPECT_EQ(t.row16(), 0u);
  t.box = {256, 128, 0, 0, 0};
  t.interleave = "32b";  // interleaved layouts have no plain rows
  EXPECT_EQ(t.row16(), 0u);
}

TEST(PtxLaunch, BoxBytesFollowTheDriversElementStrides) {
  TensorMapDesc t;
  t.elem = Type::F16;
  t.elem_bits = 16;
  t.rank = 2;
  t.box = {64, 128, 0, 0, 0};
  EXPECT_EQ(t.box_bytes(), 64u * 128 * 2);
  t.elem_strides = {1, 3, 1, 1, 1};  // ceil(128 / 3) = 43 rows
  EXPECT_EQ(t.box_bytes(), 64u * 43 * 2);
  t.elem_strides = {2, 1, 1, 1, 1};  // ignored in dimension 0 without interleave
  EXPECT_EQ(t.box_bytes(), 64u * 128 * 2);
  t.interleave = "16b";
  t.rank = 3;
  t.box = {8, 4, 4, 0, 0};
  EXPECT_EQ(t.box_bytes(), 4u * 4 * 4 * 2);  // honoured with interleave: ceil(8 / 2) = 4
  // Packed 4-bit values: two per byte; the align16b types land one byte per value.
  const Launch l = resolved(with(with(kGood, R"("type": "e2m1", "dims": [256, 16], "strides": [128], "box": [256, 16])",
                                      R"("type": "e2m1_align16b", "dims": [256, 16], "strides": [128], "box": [128, 16])"),
                                 R"("address": "0x2000")", R"("address": "0x2020")"));
  EXPECT_EQ(l.tensormaps[1].elem_bits, 4u);
  EXPECT_EQ(l.tensormaps[1].smem_elem_bits, 8u);
  EXPECT_EQ(l.tensormaps[1].box_bytes(), 128u * 16);
  EXPECT_EQ(l.tensormaps[0].smem_elem_bits, 0u);
}

TEST(PtxLaunch, BoxLargerThanTheTensorIsAccepted) {
  // The driver does not require box <= dims: the out-of-bounds part is filled and still counted.
  const std::string text = with(kGood, R"("dims": [4096, 128], "strides": [8192])", R"("dims": [32, 64], "strides": [64])");
  const Launch l = resolved(text);
  EXPECT_EQ(l.tensormaps[0].box_bytes(), 64u * 128 * 2);
}

TEST(PtxLaunch, DefaultsFromTheEntry) {
  Module m = make_module();
  Function& f = m.functions[0];
  f.directives.maxntid[0].reset();
  f.directives.maxntid[1].reset();
  f.directives.maxntid[2].reset();
  f.directives.reqntid[0] = 256;
  f.directives.reqnctapercluster[0] = 4;
  std::string text = with(kGood, "  \"block\": [384, 1, 1],\n", "");
  text = with(text, "  \"cluster\": [2, 1, 1],\n", "");
  const Launch l = resolved(text, m);
  EXPECT_EQ(l.block, (std::array<uint32_t, 3>{256, 1, 1}));
  EXPECT_EQ(l.cluster, (std::array<uint32_t, 3>{4, 1, 1}));
  // The architecture comes from the module when the launch names none.
  Module m100 = make_module();
  m100.target = "sm_100a";
  EXPECT_EQ(resolved(with(kGood, "  \"arch\": \"sm_90a\",\n", ""), m100).arch, "sm_100a");
  // A single entry needs no name; an exact name wins over a longer one containing it.
  Module one = make_module();
  one.functions.erase(one.functions.begin() + 1);
  EXPECT_EQ(resolved(with(kGood, "  \"entry\": \"gemv\",\n", ""), one).entry, kEntry);
  Module two = make_module();
  two.functions[1].name = kEntry + "_v2";
  EXPECT_EQ(resolved(with(kGood, "\"entry\": \"gemv\"", "\"entry\": \"" + kEntry + "\""), two).function_index, 0);
}

TEST(PtxLaunch, NonPortableClusters) {
  std::string text = with(with(kGood, "\"cluster\": [2, 1, 1]", "\"cluster\": [16, 1, 1]"), "\"grid\": 132", "\"grid\": 128");
  EXPECT_FAILS_AT_POS(failure(text),
                      "cluster 16x1x1 has 16 CTAs, above the portable limit of 8; a kernel launched so sets "
                      "cudaFuncAttributeNonPortableClusterSizeAllowed, which the launch file says with "
                      "\"non_portable_cluster_size\": true",
                      pos_of(text, "[16, 1, 1]"));
  EXPECT_EQ(resolved(with(text, "\"regs\": 168", "\"regs\": 168, \"non_portable_cluster_size\": true")).cluster_size(), 16u);
  EXPECT_EQ(resolved(text, make_module(), {"non_portable_cluster_size=1"}).cluster_size(), 16u);
  Module m = make_module();
  m.functions[0].directives.maxclusterrank = 16;  // the kernel is built for it
  EXPECT_EQ(resolved(text, m).cluster_size(), 16u);
  const std::string big = with(text, "[16, 1, 1]", "[32, 1, 1]");
  EXPECT_FAILS_AT_POS(failure(big), "cluster 32x1x1 has 32 CTAs, above sm_90a's limit of 16", pos_of(big, "[32, 1, 1]"));
}

TEST(PtxLaunch, ContentsFiles) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "pipesim_test_ptx_launch";
  std::filesystem::create_directories(dir);
  {
    std::ofstream(dir / "a.bin", std::ios::binary) << std::string(16, '\x5a');
    std::ofstream(dir / "big.bin", std::ios::binary) << std::string(1001, '\x01');
  }
  auto write_launch = [&](const std::string& text) {
    std::ofstream(dir / "launch.json", std::ios::binary) << text;
    return (dir / "launch.json").string();
  };
  std::string text = with(kGood, R"({"name": "A", "bytes": 1048576})", R"({"name": "A", "bytes": 1048576, "contents": "a.bin"})");
  Launch l = read_launch(write_launch(text));
  resolve_launch(l, make_module());
  EXPECT_EQ(l.contents.at("A"), std::vector<uint8_t>(16, 0x5a));
  EXPECT_EQ(l.buffers[0].contents_file, (dir / "a.bin").string());

  auto error_of = [&](const std::string& t) -> LaunchError {
    try {
      Launch x = read_launch(write_launch(t));
      resolve_launch(x, make_module());
    } catch (const LaunchError& e) {
      return e;
    }
    ADD_FAILURE() << "no LaunchError";
    return LaunchError("");
  };
  text = with(kGood, R"({"name": "B", "bytes": 1000})", R"({"name": "B", "bytes": 1000, "contents": "big.bin"})");
  LaunchError e = error_of(text);
  EXPECT_EQ(std::string(e.what()), "'" + (dir / "big.bin").string() + "' has 1001 B, more than the 1000 B of buffer 'B'");
  EXPECT_EQ(e.file, (dir / "launch.json").string());
  EXPECT_EQ(e.pos.line, pos_of(text, "\"big.bin\"").line);
  EXPECT_EQ(e.pos.col, pos_of(text, "\"big.bin\"").col);
  text = with(kGood, R"({"name": "B", "bytes": 1000})", R"({"name": "B", "bytes": 1000, "contents": "none.bin"})");
  e = error_of(text);
  EXPECT_EQ(std::string(e.what()), "cannot read '" + (dir / "none.bin").string() + "', the contents of buffer 'B'");
  std::filesystem::remove_all(dir);

  try {
    read_launch("/nonexistent/launch.json");
    ADD_FAILURE() << "no LaunchError";
  } catch (const LaunchError& x) {
    EXPECT_EQ(std::string(x.what()), "cannot read the launch file");
    EXPECT_EQ(x.file, "/nonexistent/launch.json");
  }
}

TEST(PtxLaunch, DocsExampleResolves) {
  // docs/ptx.md's full example, against an entry with the parameters it gives.
  std::ifstream in(std::string(PIPESIM_SOURCE_DIR) + "/docs/ptx.md");
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t begin = doc.find("```json\n");
  ASSERT_NE(begin, std::string::npos);
  const size_t end = doc.find("```", begin + 8);
  Launch l = parse_launch(std::string(PIPESIM_SOURCE_DIR) + "/docs/launch.json", doc.substr(begin + 8, end - begin - 8));
  l.buffers[0].contents_file.clear();  // a.bin is not shipped
  Module m = make_module();
  Function& f = m.functions[0];
  f.name = "_Z15gemv_tma_kernelPK6__halfPS_iN4cute9TmaDescrE";
  f.params = {param(f.name + "_param_0", Type::U64), param(f.name + "_param_1", Type::U64),
              param(f.name + "_param_2", Type::U32), param(f.name + "_param_3", Type::B8, 64, 128),
              param(f.name + "_param_4", Type::B8, 8, 8)};
  resolve_launch(l, m);
  EXPECT_EQ(l.params[3].offset, 64u);
  EXPECT_EQ(l.params[4].offset, 192u);
  EXPECT_EQ(l.buffers[2].address, 0x7f1000000000u);
  EXPECT_EQ(l.tensormaps[0].box_bytes(), 16384u);
}

// ---------------------------------------------------------------------------------------------
// Errors of the file itself: one sentence each, at the value (or key) it is about.

TEST(PtxLaunchErrors, Syntax) {
  EXPECT_FAILS_AT(failure("{\"grid\": }"),
                  "invalid JSON: syntax error while parsing value - unexpected '}'; expected '[', '{', or a literal", 1, 10);
  EXPECT_FAILS_AT(failure("{\n  \"grid\": 1,\n  \"block\" 2\n}"),
                  "invalid JSON: syntax error while parsing object separator - unexpected number literal; expected ':'",
                  3, 11);
  EXPECT_FAILS_AT(failure("{\"grid\": tru}"), "invalid JSON: syntax error while parsing value - invalid literal", 1, 13);
  EXPECT_FAILS_AT(failure(""),
                  "invalid JSON: syntax error while parsing value - unexpected end of input; expected '[', '{', or a literal",
                  1, 1);
  EXPECT_FAILS_AT(failure("[1, 2]"), "the launch file must hold a JSON object, found an array", 1, 1);
}

TEST(PtxLaunchErrors, Keys) {
  std::string t = with(kGood, "\"regs\": 168", "\"regz\": 168");
  EXPECT_FAILS_AT_POS(failure(t),
                      "unknown key 'regz'; the known keys are entry, arch, grid, block, cluster, dynamic_smem, regs, "
                      "non_portable_cluster_size, buffers, tensormaps, params",
                      pos_of(t, "\"regz\""));
  t = with(kGood, R"({"name": "B", "bytes": 1000})", R"({"name": "B", "byte": 1000})");
  EXPECT_FAILS_AT_POS(failure(t), "unknown key 'byte' in a buffer; the known keys are name, bytes, address, contents",
                      pos_of(t, "\"byte\""));
  t = with(kGood, R"("swizzle": "128b")", R"("swizle": "128b")");
  EXPECT_FAILS_AT_POS(failure(t),
                      "unknown key 'swizle' in a tensor map; the known keys are name, type, dims, strides, box, "
                      "element_strides, interleave, swizzle, l2_promotion, oob_fill, buffer, offset, address",
                      pos_of(t, "\"swizle\""));
  t = with(kGood, R"({"index": 1, "u32": 7})", R"({"index": 1, "u23": 7})");
  EXPECT_FAILS_AT_POS(failure(t),
                      "unknown key 'u23' in a parameter; the known keys are name, index, u8, u16, u32, u64, s8, s16, s32, "
                      "s64, b8, b16, b32, b64, f32, f64, pointer, offset, tensormap, hex, fields",
                      pos_of(t, "\"u23\""));
  t = with(kGood, R"({"offset": 128, "u32": 7})", R"({"offset": 128, "u32": 7, "hex": "00"})");
  EXPECT_FAILS_AT_POS(failure(t),
                      "unknown key 'hex' in a field; the known keys are offset, u8, u16, u32, u64, s8, s16, s32, s64, b8, "
                      "b16, b32, b64, f32, f64, pointer, pointer_offset, tensormap",
                      pos_of(t, "\"hex\": \"00\""));
  t = with(kGood, "\"grid\": 132,", "\"grid\": 132,\n  \"grid\": 66,");
  EXPECT_FAILS_AT(failure(t), "key 'grid' is given twice, first at 4:3", 5, 3);
}

TEST(PtxLaunchErrors, ValueTypes) {
  std::string t = with(kGood, "\"grid\": 132", "\"grid\": \"abc\"");
  EXPECT_FAILS_AT_POS(failure(t), "'grid' must be an integer, found the string \"abc\"", pos_of(t, "\"abc\""));
  t = with(kGood, "\"grid\": 132", "\"grid\": [1, 2, 3, 4]");
  EXPECT_FAILS_AT_POS(failure(t), "'grid' must be an integer or an array of 1 to 3 integers, found 4 values",
                      pos_of(t, "[1, 2, 3, 4]"));
  t = with(kGood, "\"grid\": 132", "\"grid\": [132, -1]");
  EXPECT_FAILS_AT_POS(failure(t), "'grid' must be in 0..4294967295, found -1", pos_of(t, "-1]"));
  t = with(kGood, "\"block\": [384, 1, 1]", "\"block\": 1.5");
  EXPECT_FAILS_AT_POS(failure(t), "'block' must be an integer or an array of 1 to 3 integers, found a number with a fraction",
                      pos_of(t, "1.5"));
  t = with(kGood, "\"arch\": \"sm_90a\"", "\"arch\": \"sm_89\"");
  EXPECT_FAILS_AT_POS(failure(t), "unknown architecture 'sm_89'; pipesim knows sm_90a, sm_100a, sm_103a, sm_120a",
                      pos_of(t, "\"sm_89\""));
  t = with(kGood, "\"regs\": 168", "\"regs\": 168, \"non_portable_cluster_size\": 1");
  EXPECT_FAILS_AT_POS(failure(t), "'non_portable_cluster_size' must be true or false, found an integer",
                      pos_of(t, "\"non_portable_cluster_size\": 1", 29));
  t = with(kGood, R"("params": [)", R"("params": {}, "x": [)");
  EXPECT_FAILS_AT_POS(failure(t), "unknown key 'x'; the known keys are entry, arch, grid, block, cluster, dynamic_smem, "
                                  "regs, non_portable_cluster_size, buffers, tensormaps, params",
                      pos_of(t, "\"x\""));
  t = with(kGood, R"({"name": "B", "bytes": 1000})", R"({"name": "B"})");
  EXPECT_FAILS_AT_POS(failure(t), "buffer 'B' needs 'bytes'", pos_of(t, R"({"name": "B"})"));
  t = with(kGood, R"({"name": "B", "bytes": 1000})", R"({"name": "B", "bytes": 1000, "address": 0})");
  EXPECT_FAILS_AT_POS(failure(t), "'address' must be in 1..18446744073709551615, found 0", pos_of(t, "0}"));
}

TEST(PtxLaunchErrors, Entry) {
  std::string t = with(kGood, "\"entry\": \"gemv\"", "\"entry\": \"nope\"");
  EXPECT_FAILS_AT_POS(failure(t), "no .entry matches 'nope'; the module's entries are " + kEntry + ", _Z12other_kernelv",
                      pos_of(t, "\"nope\""));
  t = with(kGood, "\"entry\": \"gemv\"", "\"entry\": \"helper\"");  // a .func is no entry
  EXPECT_FAILS_AT_POS(failure(t), "no .entry matches 'helper'; the module's entries are " + kEntry + ", _Z12other_kernelv",
                      pos_of(t, "\"helper\""));
  t = with(kGood, "\"entry\": \"gemv\"", "\"entry\": \"_Z\"");
  EXPECT_FAILS_AT_POS(failure(t), "'_Z' matches 2 entries: " + kEntry + ", _Z12other_kernelv", pos_of(t, "\"_Z\""));
  t = with(kGood, "  \"entry\": \"gemv\",\n", "");
  EXPECT_FAILS_AT(failure(t), "the launch names no 'entry' and the module has 2: " + kEntry + ", _Z12other_kernelv", 0, 0);
  Module none = make_module();
  for (Function& f : none.functions) f.is_entry = false;
  EXPECT_FAILS_AT_POS(failure(kGood, none), "the module has no .entry", pos_of(kGood, "\"gemv\""));
}

TEST(PtxLaunchErrors, Architecture) {
  Module m = make_module();
  m.target = "sm_100a";
  EXPECT_FAILS_AT_POS(failure(kGood, m), "the module targets sm_100a, which does not run on sm_90a",
                      pos_of(kGood, "\"sm_90a\""));
  m.target = "sm_90";  // plain targets run on later architectures
  EXPECT_EQ(resolved(with(kGood, "\"sm_90a\"", "\"sm_100a\""), m).arch, "sm_100a");
  m.target = "sm_100f";  // family targets on their family
  EXPECT_EQ(resolved(with(kGood, "\"sm_90a\"", "\"sm_103a\""), m).arch, "sm_103a");
  EXPECT_FAILS_AT_POS(failure(with(kGood, "\"sm_90a\"", "\"sm_120a\""), m),
                      "the module targets sm_100f, which does not run on sm_120a", pos_of(kGood, "\"sm_90a\""));
  // sm_120a has no clusters in the model.
  m.target = "sm_90";
  const std::string t = with(with(kGood, "\"sm_90a\"", "\"sm_120a\""), "\"dynamic_smem\": 200704", "\"dynamic_smem\": 0");
  EXPECT_FAILS_AT_POS(failure(t, m), "sm_120a has no thread block clusters, the launch asks for cluster 2x1x1",
                      pos_of(t, "[2, 1, 1]"));
}

TEST(PtxLaunchErrors, Geometry) {
  std::string t = with(kGood, "\"grid\": 132", "\"grid\": 0");
  EXPECT_FAILS_AT_POS(failure(t), "'grid' 0x1x1 has a zero dimension", pos_of(t, "\"grid\": 0", 8));
  t = with(kGood, "\"cluster\": [2, 1, 1]", "\"cluster\": [2, 0, 1]");
  EXPECT_FAILS_AT_POS(failure(t), "'cluster' 2x0x1 has a zero dimension", pos_of(t, "[2, 0, 1]"));
  t = with(kGood, "\"block\": [384, 1, 1]", "\"block\": [1024, 2, 1]");
  EXPECT_FAILS_AT_POS(failure(t), "block 1024x2x1 has 2048 threads, above sm_90a's limit of 1024", pos_of(t, "[1024, 2, 1]"));
  t = with(kGood, "\"block\": [384, 1, 1]", "\"block\": [1, 1, 128]");
  EXPECT_FAILS_AT_POS(failure(t), "block 1x1x128 is 128 in z, above the limit of 64", pos_of(t, "[1, 1, 128]"));
  t = with(kGood, "\"grid\": 132", "\"grid\": [132, 65536]");
  EXPECT_FAILS_AT_POS(failure(t), "grid 132x65536x1 is 65536 in y, above the limit of 65535", pos_of(t, "[132, 65536]"));
  t = with(kGood, "\"block\": [384, 1, 1]", "\"block\": [512, 1, 1]");
  EXPECT_FAILS_AT_POS(failure(t),
                      "entry '" + kEntry + "' allows at most 384 threads per block (.maxntid 384x1x1), the launch gives 512",
                      pos_of(t, "[512, 1, 1]"));
  // .maxntid bounds the product only.
  EXPECT_EQ(resolved(with(kGood, "\"block\": [384, 1, 1]", "\"block\": [128, 3, 1]")).threads(), 384u);
  t = with(kGood, "\"grid\": 132", "\"grid\": 131");
  EXPECT_FAILS_AT_POS(failure(t), "grid 131x1x1 is not a whole number of clusters 2x1x1 (in x)", pos_of(t, "131"));
}

TEST(PtxLaunchErrors, EntryDirectives) {
  Module m = make_module();
  Function& f = m.functions[0];
  for (auto& d : f.directives.maxntid) d.reset();
  f.directives.reqntid[0] = 256;
  EXPECT_FAILS_AT_POS(failure(kGood, m),
                      "entry '" + kEntry + "' requires a block of 256x1x1 (.reqntid), the launch gives 384x1x1",
                      pos_of(kGood, "[384, 1, 1]"));
  f.directives.reqntid[0].reset();
  f.directives.reqnctapercluster[0] = 4;
  EXPECT_FAILS_AT_POS(failure(kGood, m),
                      "entry '" + kEntry + "' requires a cluster of 4x1x1 (.reqnctapercluster), the launch gives 2x1x1",
                      pos_of(kGood, "[2, 1, 1]"));
  f.directives.reqnctapercluster[0].reset();
  f.directives.maxclusterrank = 4;
  std::string t = with(kGood, "\"cluster\": [2, 1, 1]", "\"cluster\": [8, 1, 1]");
  EXPECT_FAILS_AT_POS(failure(t, m),
                      "entry '" + kEntry + "' allows at most 4 CTAs per cluster (.maxclusterrank), the launch gives 8",
                      pos_of(t, "[8, 1, 1]"));
  f.directives.maxclusterrank.reset();
  f.directives.explicitcluster = true;
  t = with(kGood, "  \"cluster\": [2, 1, 1],\n", "");
  EXPECT_FAILS_AT(failure(t, m), "entry '" + kEntry + "' is .explicitcluster, so the launch must give 'cluster'", 0, 0);
  EXPECT_EQ(resolved(t, m, {"cluster=1"}).cluster_size(), 1u);
}

TEST(PtxLaunchErrors, Registers) {
  std::string t = with(kGood, "\"regs\": 168", "\"regs\": 200");
  EXPECT_FAILS_AT_POS(failure(t), "regs 200 is above the .maxnreg 168 of entry '" + kEntry + "'",
                      pos_of(t, "\"regs\": 200", 8));
  Module m = make_module();
  m.functions[0].directives.maxnreg.reset();
  t = with(kGood, "\"regs\": 168", "\"regs\": 256");
  EXPECT_FAILS_AT_POS(failure(t, m), "regs 256 is above sm_90a's limit of 255 per thread", pos_of(t, "\"regs\": 256", 8));
  // 384 threads x 176 registers: 12 warps x 5632 = 67584 > 65536.
  t = with(kGood, "\"regs\": 168", "\"regs\": 176");
  EXPECT_FAILS_AT_POS(failure(t, m),
                      "384 threads x 176 registers need 67584 registers per CTA (12 warps x 5632, allocated per warp in "
                      "units of 256), above sm_90a's 65536",
                      pos_of(t, "\"regs\": 176", 8));
  t = with(kGood, "\"regs\": 168", "\"regs\": 0");
  EXPECT_FAILS_AT_POS(failure(t, m), "'regs' must be at least 1", pos_of(t, "\"regs\": 0", 8));
}

TEST(PtxLaunchErrors, SharedMemory) {
  // 231424 + 1032 static = 232456 > 232448.
  const std::string t = with(kGood, "\"dynamic_smem\": 200704", "\"dynamic_smem\": 231424");
  EXPECT_FAILS_AT_POS(failure(t),
                      "shared memory 231424 B dynamic + 1032 B static = 232456 B is above sm_90a's per-block limit of "
                      "232448 B",
                      pos_of(t, "231424"));
  EXPECT_EQ(resolved(with(kGood, "\"dynamic_smem\": 200704", "\"dynamic_smem\": 231416")).dynamic_smem, 231416u);
}

TEST(PtxLaunchErrors, Parameters) {
  const std::string p0 = kEntry + "_param_0", p1 = kEntry + "_param_1", p2 = kEntry + "_param_2", p4 = kEntry + "_param_4";
  auto at_value = [](const std::string& text, const std::string& needle) { return pos_of(text, needle); };

  std::string t = with(kGood, R"("pointer": "B", "offset": 16})", R"("tensormap": "tma_a"})");
  EXPECT_FAILS_AT_POS(failure(t), "parameter '" + p0 + "' (.u64) is 8 B but is given a tensor map (128 B)",
                      at_value(t, "\"tma_a\"}"));
  t = with(kGood, R"({"index": 1, "u32": 7})", R"({"index": 1, "u64": 7})");
  EXPECT_FAILS_AT_POS(failure(t), "parameter '" + p1 + "' (.u32) is 4 B but is given a u64 value (8 B)",
                      pos_of(t, "\"u64\": 7", 7));
  t = with(kGood, R"({"name": "2", "tensormap": "tma_a"})", R"({"name": "2", "pointer": "A"})");
  EXPECT_FAILS_AT_POS(failure(t), "parameter '" + p2 + "' (.b8[128]) is 128 B but is given a pointer (8 B)",
                      pos_of(t, "\"pointer\": \"A\"}", 11));
  t = with(kGood, kStructItem, R"({"name": "_param_4", "hex": ")" + hex_bytes(200) + R"("})");
  EXPECT_FAILS_AT_POS(failure(t), "parameter '" + p4 + "' (.b8[288]) is 288 B but 'hex' holds 200 B",
                      at_value(t, "\"" + hex_bytes(200)));
  t = with(kGood, kStructItem, R"({"name": "_param_4", "fields": [{"offset": 284, "u64": 1}]})");
  EXPECT_FAILS_AT_POS(failure(t),
                      "the field at offset 284 (8 B) ends at byte 292, past the 288 B of parameter '" + p4 + "' (.b8[288])",
                      at_value(t, "284"));
  t = with(kGood, kStructItem, R"({"name": "_param_4", "fields": [{"offset": 0, "u64": 1}, {"offset": 4, "u32": 2}]})");
  EXPECT_FAILS_AT_POS(failure(t),
                      "the field at offset 4 (4 B) overlaps the field at offset 0 (8 B) of parameter '" + p4 + "' (.b8[288])",
                      at_value(t, "4, \"u32\""));
  t = with(kGood, kStructItem, R"({"name": "_param_4", "fields": [{"offset": 8, "pointer": "Q"}]})");
  EXPECT_FAILS_AT_POS(failure(t),
                      "the field at offset 8 of parameter '" + p4 +
                          "' (.b8[288]) points into buffer 'Q', which is not defined; the buffers are A, B, C",
                      at_value(t, "\"Q\""));
  t = with(kGood, kStructItem, R"({"name": "_param_4", "hex": "0g"})");
  EXPECT_FAILS_AT_POS(failure(t), "'hex' must hold hex digits, found 'g'", at_value(t, "\"0g\""));
  t = with(kGood, kStructItem, R"({"name": "_param_4", "hex": "abc"})");
  EXPECT_FAILS_AT_POS(failure(t), "'hex' has an odd number of hex digits (3)", at_value(t, "\"abc\""));

  t = with(kGood, R"({"name": "2", "tensormap": "tma_a"})", R"({"name": "nope", "tensormap": "tma_a"})");
  EXPECT_FAILS_AT_POS(failure(t),
                      "entry '" + kEntry + "' has no parameter 'nope'; its parameters are 0 " + p0 + ", 1 " + p1 + ", 2 " +
                          p2 + ", 3 " + kEntry + "_param_3, 4 " + p4 + ", 5 " + kEntry + "_param_5",
                      at_value(t, "\"nope\""));
  t = with(kGood, R"({"name": "param_3", "u8": 255})", R"({"name": "param_3", "u8": 255}, {"name": "1", "u32": 8})");
  EXPECT_FAILS_AT_POS(failure(t), "parameter '" + p1 + "' is given twice, first at " +
                                      std::to_string(pos_of(t, R"({"index": 1)").line) + ":" +
                                      std::to_string(pos_of(t, R"({"index": 1)").col),
                      at_value(t, R"({"name": "1")"));
  t = with(kGood, ",\n    {\"name\": \"" + kEntry + "_param_5\", \"f32\": 1.5}", "");
  EXPECT_FAILS_AT_POS(failure(t), "entry '" + kEntry + "' needs a parameter not given: " + kEntry + "_param_5 (.f32, 4 B)",
                      at_value(t, "[\n    {\"name\": \"" + kEntry + "_param_0\""));
  t = with(t, R"({"index": 1, "u32": 7},)", "");
  EXPECT_FAILS_AT_POS(failure(t),
                      "entry '" + kEntry + "' needs parameters not given: " + p1 + " (.u32, 4 B), " + kEntry +
                          "_param_5 (.f32, 4 B)",
                      at_value(t, "[\n    {\"name\": \"" + kEntry + "_param_0\""));
  t = with(kGood, R"({"index": 1, "u32": 7})", R"({"index": 9, "u32": 7})");
  EXPECT_FAILS_AT_POS(failure(t), "entry '" + kEntry + "' has 6 parameters, index 9 is not one of them", at_value(t, "9,"));
  t = with(kGood, R"({"name": "param_3", "u8": 255})", R"({"name": "param_3", "u8": 256})");
  EXPECT_FAILS_AT_POS(failure(t), "256 does not fit u8", pos_of(t, "\"u8\": 256", 6));
  t = with(kGood, R"({"index": 1, "u32": 7})", R"({"index": 1, "s32": -2147483649})");
  EXPECT_FAILS_AT_POS(failure(t), "-2147483649 does not fit s32", at_value(t, "-2147483649"));
  t = with(kGood, R"({"index": 1, "u32": 7})", R"({"index": 1, "u32": 7, "pointer": "A"})");
  EXPECT_FAILS_AT_POS(failure(t), "parameter 1 has two values, 'pointer' and 'u32'", at_value(t, "7, \"pointer\""));
  t = with(kGood, R"({"index": 1, "u32": 7})", R"({"index": 1})");
  EXPECT_FAILS_AT_POS(failure(t),
                      "parameter 1 has no value; give one of u8, u16, u32, u64, s8, s16, s32, s64, b8, b16, b32, b64, f32, "
                      "f64, pointer, tensormap, hex or fields",
                      at_value(t, R"({"index": 1})"));
  t = with(kGood, R"({"index": 1, "u32": 7})", R"({"name": "1", "index": 1, "u32": 7})");
  EXPECT_FAILS_AT_POS(failure(t), "a parameter has 'name' or 'index', not both", at_value(t, "1, \"u32\""));
  t = with(kGood, R"({"index": 1, "u32": 7})", R"({"u32": 7})");
  EXPECT_FAILS_AT_POS(failure(t), "a parameter needs 'name' (the PTX parameter) or 'index' (its position)",
                      at_value(t, R"({"u32": 7})"));
  t = with(kGood, R"({"index": 1, "u32": 7})", R"({"index": 1, "u32": 7, "offset": 4})");
  EXPECT_FAILS_AT_POS(failure(t), "'offset' belongs to a 'pointer' value", at_value(t, "4}"));
  t = with(kGood, R"("pointer": "B", "offset": 16})", R"("pointer": "Z"})");
  EXPECT_FAILS_AT_POS(failure(t), "parameter '" + p0 + "' (.u64) points into buffer 'Z', which is not defined; the buffers are A, B, C",
                      at_value(t, "\"Z\""));
  t = with(kGood, R"("pointer": "B", "offset": 16})", R"("pointer": "B", "offset": 1001})");
  EXPECT_FAILS_AT_POS(failure(t), "parameter '" + p0 + "' (.u64) points 1001 B into buffer 'B', which has 1000 B",
                      at_value(t, "\"B\", \"offset\": 1001"));
  t = with(kGood, R"({"name": "2", "tensormap": "tma_a"})", R"({"name": "2", "tensormap": "tma_z"})");
  EXPECT_FAILS_AT_POS(failure(t),
                      "parameter '" + p2 + "' (.b8[128]) names tensor map 'tma_z', which is not defined; the tensor maps "
                      "are tma_a, tma_b",
                      at_value(t, "\"tma_z\""));
  t = with(kGood, R"("f32": 1.5)", R"("f32": "1.5")");
  EXPECT_FAILS_AT_POS(failure(t), "'f32' must be a number, found a string", at_value(t, "\"1.5\""));
}

TEST(PtxLaunchErrors, Buffers) {
  std::string t = with(kGood, R"({"name": "B", "bytes": 1000})", R"({"name": "A", "bytes": 1000})");
  EXPECT_FAILS_AT_POS(failure(t), "buffer 'A' is defined twice", pos_of(t, "\"A\", \"bytes\": 1000}"));
  t = with(kGood, R"({"name": "B", "bytes": 1000})", R"({"name": "B", "bytes": 0})");
  EXPECT_FAILS_AT_POS(failure(t), "buffer 'B' has 0 bytes", pos_of(t, "0}"));
  t = with(kGood, R"({"name": "C", "bytes": 64, "address": "0x1000"})",
           R"({"name": "C", "bytes": 64, "address": "0x1000"}, {"name": "D", "bytes": 64, "address": "0x1020"})");
  EXPECT_FAILS_AT_POS(failure(t), "buffer 'D' at 0x1020..0x1060 overlaps buffer 'C' at 0x1000..0x1040",
                      pos_of(t, "\"0x1020\""));
  t = with(kGood, R"({"name": "B", "bytes": 1000})", R"({"name": "B", "bytes": 281474976710657})");
  EXPECT_FAILS_AT_POS(failure(t), "'bytes' must be in 0..281474976710656, found 281474976710657",
                      pos_of(t, "281474976710657"));
}

TEST(PtxLaunchErrors, TensorMaps) {
  const std::string a = R"({"name": "tma_a", "type": "f16", "dims": [4096, 128], "strides": [8192], "box": [64, 128], "swizzle": "128b", "buffer": "A"})";
  auto tm = [&](const std::string& item) { return with(kGood, a, item); };
  struct Case {
    std::string item, message, at;
  };
  const std::vector<Case> cases = {
      {R"({"name": "tma_a", "type": "fp8", "dims": [4096, 128], "strides": [8192], "box": [64, 128]})",
       "tensor map 'tma_a' has unknown type 'fp8'; the types are u8, u16, u32, s32, u64, s64, f16, bf16, f32, f32_ftz, "
       "tf32, tf32_ftz, f64, e4m3, e5m2, e2m1, u4, e2m1_align16b, u4_align16b, e2m3_align16b, e3m2_align16b, u6_align16b",
       "\"fp8\""},
      {R"({"name": "tma_a", "type": "f16", "dims": [1, 1, 1, 1, 1, 1], "box": [1, 1, 1, 1, 1, 1]})",
       "tensor map 'tma_a' has 6 dims; a tensor map has 1 to 5 dimensions", "[1, 1, 1, 1, 1, 1], \"box\""},
      {R"({"name": "tma_a", "type": "f16", "dims": [4096, 128], "strides": [8192, 1], "box": [64, 128]})",
       "tensor map 'tma_a' has 2 dims, so 'strides' (bytes, from dimension 1) needs 1, not 2", "[8192, 1]"},
      {R"({"name": "tma_a", "type": "f16", "dims": [4096, 128], "strides": [8192], "box": [64]})",
       "tensor map 'tma_a' has 2 dims, so 'box' needs 2, not 1", "[64]"},
      {R"({"name": "tma_a", "type": "f16", "dims": [4096, 128], "box": [64, 128]})", "tensor map 'tma_a' needs 'strides'",
       R"({"name": "tma_a")"},
      {R"({"name": "tma_a", "type": "f16", "dims": [4096, 0], "strides": [8192], "box": [64, 128]})",
       "tensor map 'tma_a': dims[1] = 0 is outside 1..4294967296", "0]"},
      {R"({"name": "tma_a", "type": "f16", "dims": [4096, 128], "strides": [8192], "box": [64, 300]})",
       "tensor map 'tma_a': box[1] = 300 is outside 1..256", "300"},
      {R"({"name": "tma_a", "type": "f16", "dims": [4096, 128], "strides": [8192], "box": [64, 128], "element_strides": [1, 9]})",
       "tensor map 'tma_a': element_strides[1] = 9 is outside 1..8", "9]"},
      {R"({"name": "tma_a", "type": "f16", "dims": [4096, 128], "strides": [8192], "box": [12, 128]})",
       "tensor map 'tma_a': the box's inner dimension is 24 B (12 x f16), not a multiple of 16 B", "12, 128"},
      {R"({"name": "tma_a", "type": "e2m1", "dims": [4096, 128], "strides": [2048], "box": [20, 128]})",
       "tensor map 'tma_a': the box's inner dimension is 10 B (20 x e2m1), not a multiple of 16 B", "20, 128"},
      {R"({"name": "tma_a", "type": "e2m1", "dims": [4096, 128], "strides": [2048], "box": [21, 128]})",
       "tensor map 'tma_a': the box's inner dimension is 84 bits (21 x e2m1), not a multiple of 16 B", "21, 128"},
      {R"({"name": "tma_a", "type": "f16", "dims": [4096, 128], "strides": [8192], "box": [128, 128], "swizzle": "128b"})",
       "tensor map 'tma_a': the box's inner dimension is 256 B (128 x f16), above the 128 B that swizzle 128b spans",
       "128, 128"},
      {R"({"name": "tma_a", "type": "f16", "dims": [4096, 128], "strides": [8192], "box": [64, 128], "swizzle": "64b"})",
       "tensor map 'tma_a': the box's inner dimension is 128 B (64 x f16), above the 64 B that swizzle 64b spans",
       "64, 128"},
      {R"({"name": "tma_a", "type": "f16", "dims": [4096, 128], "strides": [8192], "box": [64, 128], "swizzle": "16b"})",
       "'swizzle' must be one of none, 32b, 64b, 128b, 128b_atom_32b, 128b_atom_32b_flip_8b, 128b_atom_64b, found \"16b\"",
       "\"16b\""},
      {R"({"name": "tma_a", "type": "f16", "dims": [4096, 128], "strides": [8200], "box": [64, 128]})",
       "tensor map 'tma_a': strides[0] = 8200 B is not a multiple of 16 below 2^40", "8200"},
      {R"({"name": "tma_a", "type": "f16", "dims": [4096, 128], "strides": [4096], "box": [64, 128]})",
       "tensor map 'tma_a': strides[0] = 4096 B is less than the 8192 B of dims[0] x f16", "4096]"},
      {R"({"name": "tma_a", "type": "f16", "dims": [4096, 128], "strides": [8192], "box": [64, 128], "interleave": "32b"})",
       "tensor map 'tma_a' is interleaved, which needs rank 3 or more, not 2", "\"32b\""},
      {R"({"name": "tma_a", "type": "f16", "dims": [64, 128, 2], "strides": [128, 16384], "box": [16, 128, 1], "interleave": "32b", "swizzle": "128b", "buffer": "A"})",
       "tensor map 'tma_a': interleave 32b needs swizzle 32b, not 128b", "\"128b\""},
      {R"({"name": "tma_a", "type": "u8", "dims": [4096, 128], "strides": [4096], "box": [64, 128], "oob_fill": "nan"})",
       "tensor map 'tma_a': oob_fill nan needs a floating-point type, not u8", "\"nan\""},
      {R"({"name": "tma_a", "type": "u4_align16b", "dims": [4096, 128], "strides": [2048], "box": [64, 128]})",
       "tensor map 'tma_a': type u4_align16b needs box[0] = 128, not 64", "64, 128"},
      {R"({"name": "tma_a", "type": "u4_align16b", "dims": [4000, 128], "strides": [2048], "box": [128, 128]})",
       "tensor map 'tma_a': type u4_align16b needs dims[0] to be a multiple of 128, not 4000", "4000"},
      {R"({"name": "tma_a", "type": "u4_align16b", "dims": [4096, 128], "strides": [2064], "box": [128, 128]})",
       "tensor map 'tma_a': strides[0] = 2064 B is not a multiple of 32 below 2^40", "2064"},
      {R"({"name": "tma_a", "type": "f16", "dims": [4096, 128], "strides": [8192], "box": [64, 128], "buffer": "Z"})",
       "tensor map 'tma_a' names buffer 'Z', which is not defined; the buffers are A, B, C", "\"Z\""},
      {R"({"name": "tma_a", "type": "f16", "dims": [4096, 128], "strides": [8192], "box": [64, 128], "buffer": "B"})",
       "tensor map 'tma_a' spans 1048576 B from offset 0 of buffer 'B', which has 1000 B", "\"B\"}"},
      {R"({"name": "tma_a", "type": "f16", "dims": [4096, 128], "strides": [8192], "box": [64, 128], "buffer": "A", "offset": 8})",
       "tensor map 'tma_a' spans 1048576 B from offset 8 of buffer 'A', which has 1048576 B", "\"A\", \"offset\""},
      {R"({"name": "tma_a", "type": "f16", "dims": [4096, 127], "strides": [8192], "box": [64, 128], "buffer": "A", "offset": 8})",
       "tensor map 'tma_a': its global address 0x7f0000000008 is not 16-byte aligned", "8}"},
      {R"({"name": "tma_a", "type": "f16", "dims": [4096, 128], "strides": [8192], "box": [64, 128], "address": "0x10", "buffer": "A"})",
       "tensor map 'tma_a' has 'buffer' or 'address', not both", "\"0x10\""},
      {R"({"name": "tma_b", "type": "f16", "dims": [4096, 128], "strides": [8192], "box": [64, 128]})",
       "tensor map 'tma_b' is defined twice", "\"tma_b\", \"type\": \"e2m1\""},
      {R"({"name": "A", "type": "f16", "dims": [4096, 128], "strides": [8192], "box": [64, 128]})",
       "'A' names both a buffer and a tensor map", "\"A\", \"type\""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.item);
    const std::string t = tm(c.item);
    EXPECT_FAILS_AT_POS(failure(t), c.message, pos_of(t, c.at));
  }
  const std::string b = with(kGood, R"("address": "0x2000")", R"("address": "0x2008")");
  EXPECT_FAILS_AT_POS(failure(b), "tensor map 'tma_b': its global address 0x2008 is not 16-byte aligned",
                      pos_of(b, "\"0x2008\""));
}
}  // namespace
}  // namespace pipesim::ptx
