// The launch file: JSON in, a laid-out Launch out (docs/ptx.md, "The launch file").
//
// Reading happens in two steps because the parameters can only be laid out against the entry:
// parse_launch checks the file's syntax, keys and value types and keeps every value's position;
// resolve_launch checks the values against the module and the architecture and builds the
// parameter buffer. Every problem is one LaunchError with the position of the value it is about.
//
// The first step is launch_read.cpp, the second launch_resolve.cpp; this header holds only what both
// use. Internal to the two: nothing else includes it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "verify/ptx/launch.hpp"

namespace pipesim::ptx::detail {

std::string join(const std::vector<std::string>& items, const char* sep = ", ");

// ---------------------------------------------------------------------------------------------
// Numbers. Values may be JSON numbers or strings ("0x7f00_0000_0000", "-1"), since addresses read
// better in hex and JSON has none.

struct Int {
  bool negative = false;
  uint64_t magnitude = 0;
};

std::optional<Int> parse_int_text(std::string_view t);
std::string int_text(const Int& v);
// Whether v fits `bytes` bytes of the given signedness ('u', 's', or 'b' for either), and its bits.
std::optional<uint64_t> fit_int(const Int& v, uint32_t bytes, char sign);

// ---------------------------------------------------------------------------------------------
// Scalar parameter types a launch file may give ({"u32": 5}).

struct ScalarKey {
  const char* key;
  Type type;
  char sign;  // 'u', 's', 'b' (bits: either), 'f' (floating point)
};
inline constexpr ScalarKey kScalarKeys[] = {
    {"u8", Type::U8, 'u'},   {"u16", Type::U16, 'u'}, {"u32", Type::U32, 'u'}, {"u64", Type::U64, 'u'},
    {"s8", Type::S8, 's'},   {"s16", Type::S16, 's'}, {"s32", Type::S32, 's'}, {"s64", Type::S64, 's'},
    {"b8", Type::B8, 'b'},   {"b16", Type::B16, 'b'}, {"b32", Type::B32, 'b'}, {"b64", Type::B64, 'b'},
    {"f32", Type::F32, 'f'}, {"f64", Type::F64, 'f'},
};
inline const ScalarKey* find_scalar_type(Type t) {
  for (const ScalarKey& s : kScalarKeys)
    if (t == s.type) return &s;
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// Tensor map element types: the launch file's names for CUtensorMapDataType.

struct TensorMapType {
  const char* name;
  Type type;
  uint32_t bits;       // in global memory
  uint32_t smem_bits;  // in shared memory
  bool floating;       // the driver type is a floating-point one (for oob_fill nan)
  bool align16b;       // CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B / 16U6_ALIGN16B
};
inline constexpr TensorMapType kTensorMapTypes[] = {
    {"u8", Type::U8, 8, 8, false, false},
    {"u16", Type::U16, 16, 16, false, false},
    {"u32", Type::U32, 32, 32, false, false},
    {"s32", Type::S32, 32, 32, false, false},
    {"u64", Type::U64, 64, 64, false, false},
    {"s64", Type::S64, 64, 64, false, false},
    {"f16", Type::F16, 16, 16, true, false},
    {"bf16", Type::BF16, 16, 16, true, false},
    {"f32", Type::F32, 32, 32, true, false},
    {"f32_ftz", Type::F32, 32, 32, true, false},
    {"tf32", Type::TF32, 32, 32, true, false},
    {"tf32_ftz", Type::TF32, 32, 32, true, false},
    {"f64", Type::F64, 64, 64, true, false},
    // 8-bit floats have no driver type of their own: they are encoded as UINT8.
    {"e4m3", Type::E4M3, 8, 8, false, false},
    {"e5m2", Type::E5M2, 8, 8, false, false},
    // CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B: 4-bit values packed in global and shared memory alike.
    {"e2m1", Type::E2M1x2, 4, 4, false, false},
    {"u4", Type::B8, 4, 4, false, false},
    // 16U4_ALIGN16B / 16U6_ALIGN16B: packed in global memory, one byte per value in shared memory.
    {"e2m1_align16b", Type::E2M1x2, 4, 8, false, true},
    {"u4_align16b", Type::B8, 4, 8, false, true},
    {"e2m3_align16b", Type::E2M3x2, 6, 8, false, true},
    {"e3m2_align16b", Type::E3M2x2, 6, 8, false, true},
    {"u6_align16b", Type::B8, 6, 8, false, true},
};
inline const TensorMapType* find_tensor_map_type(const std::string& name) {
  for (const TensorMapType& t : kTensorMapTypes)
    if (name == t.name) return &t;
  return nullptr;
}

// The architecture called `name`, or a LaunchError at `pos` of `file` that lists the known ones.
const model::Arch& known_arch(const std::string& name, const std::string& file, TextPos pos);

}  // namespace pipesim::ptx::detail
