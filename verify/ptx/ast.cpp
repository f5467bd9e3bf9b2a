#include "verify/ptx/ast.hpp"

#include <array>
#include <string_view>

namespace pipesim::ptx {
namespace {

struct TypeInfo {
  Type type;
  const char* name;
  uint32_t bytes;
};

// One row per enumerator, in enum order (type_bytes / type_name index it).
constexpr std::array<TypeInfo, 31> kTypes = {{
    {Type::None, "", 0},
    {Type::Pred, "pred", 1},
    {Type::B8, "b8", 1},
    {Type::B16, "b16", 2},
    {Type::B32, "b32", 4},
    {Type::B64, "b64", 8},
    {Type::B128, "b128", 16},
    {Type::U8, "u8", 1},
    {Type::U16, "u16", 2},
    {Type::U32, "u32", 4},
    {Type::U64, "u64", 8},
    {Type::S8, "s8", 1},
    {Type::S16, "s16", 2},
    {Type::S32, "s32", 4},
    {Type::S64, "s64", 8},
    {Type::F16, "f16", 2},
    {Type::F16x2, "f16x2", 4},
    {Type::BF16, "bf16", 2},
    {Type::BF16x2, "bf16x2", 4},
    {Type::TF32, "tf32", 4},
    {Type::F32, "f32", 4},
    {Type::F64, "f64", 8},
    {Type::E4M3, "e4m3", 1},
    {Type::E5M2, "e5m2", 1},
    {Type::E4M3x2, "e4m3x2", 2},
    {Type::E5M2x2, "e5m2x2", 2},
    // Two 4-bit values share one byte.
    {Type::E2M1x2, "e2m1x2", 1},
    // Two 6-bit values, each in a byte of its own (cvt packs them into 16 bits).
    {Type::E2M3x2, "e2m3x2", 2},
    {Type::E3M2x2, "e3m2x2", 2},
    {Type::UE8M0x2, "ue8m0x2", 2},
    {Type::F32x2, "f32x2", 8},
}};

constexpr bool table_in_enum_order() {
  for (size_t i = 0; i < kTypes.size(); ++i)
    if (static_cast<size_t>(kTypes[i].type) != i) return false;
  return static_cast<size_t>(Type::F32x2) + 1 == kTypes.size();
}
static_assert(table_in_enum_order(), "kTypes must list every Type in enum order");

}  // namespace

uint32_t type_bytes(Type t) {
  const size_t i = static_cast<size_t>(t);
  return i < kTypes.size() ? kTypes[i].bytes : 0;
}

const char* type_name(Type t) {
  const size_t i = static_cast<size_t>(t);
  return i < kTypes.size() ? kTypes[i].name : "";
}

Type parse_type(const std::string& s) {
  if (s.empty()) return Type::None;
  for (const TypeInfo& info : kTypes)
    if (std::string_view(info.name) == s) return info.type;
  return Type::None;
}

}  // namespace pipesim::ptx
