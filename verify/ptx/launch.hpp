// A PTX kernel's launch: which entry, the grid, the cluster, shared memory, the architecture, and the
// value of every kernel parameter. Read from a JSON launch file (docs/ptx.md, "The launch file") and
// the command line's short forms; checked against the module (the entry exists, every parameter is
// given with its size, the entry's .reqntid / .maxntid / .reqnctapercluster / .maxnreg) and against
// the architecture's limits. Every problem is a LaunchError naming the file position where there is one.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "verify/ptx/ast.hpp"

namespace pipesim::model {
struct Arch;
}

namespace pipesim::ptx {

struct LaunchError : std::runtime_error {
  std::string file;   // the launch file or "" (command line)
  TextPos pos;        // 0:0 where there is no position
  explicit LaunchError(const std::string& msg, std::string f = {}, TextPos p = {})
      : std::runtime_error(msg), file(std::move(f)), pos(p) {}
};

// A CUtensorMap as cuTensorMapEncodeTiled takes it (dims and box innermost first).
struct TensorMapDesc {
  std::string name;                 // for reports ("tma_a")
  Type elem = Type::B8;             // element type; sub-byte: E2M1x2 counts two 4-bit elements per byte
  uint32_t elem_bits = 8;           // bits per element (4 for fp4, 16 for f16 ...)
  uint32_t rank = 2;                // 1..5
  std::array<uint64_t, 5> dims{};   // elements per dimension
  std::array<uint64_t, 5> strides{};  // bytes, dimension 1.. (strides[0] is the element size, rounded up to a byte)
  std::array<uint32_t, 5> box{};    // box size per dimension, elements
  std::array<uint32_t, 5> elem_strides{1, 1, 1, 1, 1};
  std::string interleave = "none";  // none, 16b, 32b
  std::string swizzle = "none";     // none, 32b, 64b, 128b (and 128b_atom_* forms)
  std::string l2_promotion = "none";
  std::string oob_fill = "none";    // none, nan
  uint64_t global_address = 0;      // the buffer it describes (0: none named)
  // The launch file's type name ("f16", "e2m1", "u4_align16b" ...).
  std::string type_name;
  // Bits one element takes in shared memory: 0 means elem_bits. The driver's 16U4_ALIGN16B and
  // 16U6_ALIGN16B types are packed in global memory (4 or 6 bits) but land one byte per element
  // (16 values in 16 bytes, gaps included).
  uint32_t smem_elem_bits = 0;
  std::string buffer;               // the buffer global_address points into ("" when given as an address)
  uint64_t buffer_offset = 0;       // bytes into that buffer
  // Bytes one full box copies into shared memory: what complete_tx counts (out-of-bounds parts too).
  uint64_t box_bytes() const;
  // Boxes side by side along the innermost dimension that one miss brings into the L2: the L2
  // promotion over the box's row in global memory (CUTLASS's 128-byte rows under 256-byte
  // promotion: 2, the next k-block's box with this one), else 1.
  uint32_t l2_fill_boxes() const;
  // The box's row in shared memory in 16-byte units (sim::Op::tma_row16), 0 where rows are not plain
  // (interleaved layouts) or wider than 4080 bytes.
  uint8_t row16() const;
};

// A global buffer the kernel's pointers point into.
struct BufferDesc {
  std::string name;
  uint64_t bytes = 0;
  uint64_t address = 0;             // assigned by the launch (a fixed, readable layout)
  std::string contents_file;        // optional: initial bytes
};

// The bytes of the kernel's parameter space, and what the front end knows about them.
struct ParamValue {
  std::string name;                 // the PTX parameter's name
  uint64_t offset = 0;              // in the parameter buffer
  uint64_t bytes = 0;
  std::string what;                 // for reports: "u32 5", "pointer A+0", "tensormap tma_a", "288 bytes"
};

// A parameter value as the launch file or a short form gives it; resolve_launch lays it out once the
// entry's parameters are known. A struct parameter (Bytes) holds its fields as ParamSpecs too.
struct ParamSpec {
  enum class Kind : uint8_t {
    Number,     // type + bits: {"u32": 5}, {"f32": 1.5}
    Pointer,    // target buffer + pointer_offset: {"pointer": "A", "offset": 64}
    TensorMap,  // target tensor map: {"tensormap": "tma_a"}
    Bytes,      // raw bytes (hex, or zeros of the parameter's size) patched by fields
    Text,       // a short form's value ("5", "A+64", "tma_a"), typed by the PTX parameter
  };
  Kind kind = Kind::Number;
  std::string name;                 // the PTX parameter's name, "N" or "_param_N"; "" when by index
  std::optional<uint32_t> index;    // position in the entry's parameter list
  uint64_t field_offset = 0;        // a field: its byte offset in the parameter
  Type type = Type::None;           // Number
  uint64_t bits = 0;                // Number: the value's bytes, little-endian
  std::string target;               // Pointer: buffer; TensorMap: tensor map; Text: the value as written
  int64_t pointer_offset = 0;       // Pointer
  bool has_hex = false;             // Bytes
  std::vector<uint8_t> hex;         // Bytes
  std::vector<ParamSpec> fields;    // Bytes
  std::string at;                   // JSON pointer of the item ("/params/2"); "" from the command line
};

struct Launch {
  std::string file;                 // the launch file, "" when all came from the command line
  std::string entry;                // mangled entry name (or a unique substring of it)
  std::string arch = "sm_90a";
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{128, 1, 1};
  std::array<uint32_t, 3> cluster{1, 1, 1};
  uint64_t dynamic_smem = 0;
  std::optional<uint32_t> regs;     // registers per thread (for occupancy), else the entry's .maxnreg
  std::vector<BufferDesc> buffers;
  std::vector<TensorMapDesc> tensormaps;
  std::vector<uint8_t> param_bytes;  // the laid-out parameter buffer
  std::vector<ParamValue> params;
  std::map<std::string, std::vector<uint8_t>> contents;  // buffer name -> initial bytes (from files)

  // Filled by parse_launch / apply_short_form, used by resolve_launch.
  std::vector<ParamSpec> param_specs;  // as written; the command line's come last and win
  bool non_portable_cluster = false;   // cudaFuncAttributeNonPortableClusterSizeAllowed = 1
  // JSON pointer ("/grid", "/params/2/u64") -> where its value starts in `file`.
  std::map<std::string, TextPos> positions;
  // Top-level keys a short form set ("grid", "entry" ...; "param.NAME" for parameters): their errors
  // name the command line, not the file.
  std::set<std::string> from_command_line;
  // Filled by resolve_launch.
  uint64_t static_smem = 0;            // the module's .shared variables (bytes, aligned)
  int32_t function_index = -1;         // the resolved entry in Module::functions (-1: not resolved)

  // Whether the launch file or a short form set this top-level key ("grid", "cluster" ...).
  bool given(const std::string& key) const {
    return positions.count("/" + key) != 0 || from_command_line.count(key) != 0;
  }
  uint32_t threads() const { return block[0] * block[1] * block[2]; }
  uint64_t ctas() const { return uint64_t{grid[0]} * grid[1] * grid[2]; }
  uint32_t cluster_size() const { return cluster[0] * cluster[1] * cluster[2]; }
};

// Tensor maps live in memory as 128 bytes: this tag, then the index into Launch::tensormaps. The
// kernel may copy them around (param -> global -> shared); a TMA instruction reads the tag where its
// operand points.
inline constexpr uint64_t kTensorMapTag = 0x50414d54'4d495350ULL;  // "PSIMTMAP"
inline constexpr uint64_t kTensorMapBytes = 128;
// Where buffers without an "address" are placed: one after another from here, 256-byte aligned.
inline constexpr uint64_t kBufferBase = 0x7f00'0000'0000ULL;
inline constexpr uint64_t kBufferAlign = 256;

// Reads the JSON launch file (docs/ptx.md, "The launch file"): its syntax and keys, not yet the module.
Launch read_launch(const std::string& path);
// The same from text already read; `path` names the file in messages and anchors "contents" paths.
Launch parse_launch(const std::string& path, const std::string& text);
// A command-line short form, overriding the file: "grid=132", "block=384", "cluster=2x1x1",
// "smem=200704", "entry=gemv", "arch=sm_100a", "regs=168", "param.NAME=5" (also "param.NAME=A+64"
// for a buffer's address, "param.NAME=tma_a" for a tensor map), "non_portable_cluster_size=1".
void apply_short_form(Launch& launch, const std::string& assignment);
// The architecture the launch runs on: its "arch", else the module's .target where pipesim knows it,
// else sm_90a. Sets launch.arch.
const model::Arch& launch_arch(Launch& launch, const Module& module);
// Resolves the entry, checks the launch against the entry's directives and the architecture's limits,
// places the buffers, reads their contents, checks the tensor maps and lays out the parameter buffer.
void resolve_launch(Launch& launch, const Module& module, const model::Arch& arch);
// Both of the above: resolve_launch(launch, module, launch_arch(launch, module)).
void resolve_launch(Launch& launch, const Module& module);

}  // namespace pipesim::ptx
