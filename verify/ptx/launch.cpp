// The launch file: JSON in, a laid-out Launch out (docs/ptx.md, "The launch file").
//
// Reading happens in two steps because the parameters can only be laid out against the entry:
// parse_launch checks the file's syntax, keys and value types and keeps every value's position;
// resolve_launch checks the values against the module and the architecture and builds the
// parameter buffer. Every problem is one LaunchError with the position of the value it is about.
#include "verify/ptx/launch.hpp"

#include <algorithm>
#include <bit>
#include <cctype>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/arch.hpp"
#include "model/registers.hpp"

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

namespace {

using json = nlohmann::json;

std::string join(const std::vector<std::string>& items, const char* sep = ", ") {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += sep;
    out += items[i];
  }
  return out;
}

std::string dims_text(const std::array<uint32_t, 3>& d) { return fmt::format("{}x{}x{}", d[0], d[1], d[2]); }

uint64_t align_up(uint64_t v, uint64_t a) { return a <= 1 ? v : (v + a - 1) / a * a; }

// RFC 6901: "~" and "/" inside a key are escaped so that a pointer names one value.
std::string pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Positions. nlohmann's DOM keeps none, so a second pass over the (already accepted) text records
// where each value and each key starts, by JSON pointer.

class LineIndex {
 public:
  explicit LineIndex(const std::string& text) {
    starts_.push_back(0);
    for (size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\n') starts_.push_back(i + 1);
  }
  TextPos at(size_t offset) const {
    const auto it = std::upper_bound(starts_.begin(), starts_.end(), offset);
    const size_t line = static_cast<size_t>(it - starts_.begin());  // 1-based
    return TextPos{static_cast<uint32_t>(line), static_cast<uint32_t>(offset - starts_[line - 1] + 1)};
  }

 private:
  std::vector<size_t> starts_;
};

class PositionScan {
 public:
  PositionScan(const std::string& text, const LineIndex& lines) : s_(text), lines_(lines) {
    if (s_.rfind("\xEF\xBB\xBF", 0) == 0) i_ = 3;  // a UTF-8 byte order mark, which nlohmann skips too
    value("");
  }
  std::map<std::string, TextPos> values, keys;
  // The first key given twice in one object: its pointer, where it is given again.
  std::optional<std::pair<std::string, TextPos>> duplicate;

 private:
  const std::string& s_;
  const LineIndex& lines_;
  size_t i_ = 0;

  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  // Whitespace and the comments nlohmann accepts with ignore_comments (// and /* */).
  void skip() {
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++i_;
      } else if (c == '/' && i_ + 1 < s_.size() && s_[i_ + 1] == '/') {
        while (i_ < s_.size() && s_[i_] != '\n') ++i_;
      } else if (c == '/' && i_ + 1 < s_.size() && s_[i_ + 1] == '*') {
        const size_t end = s_.find("*/", i_ + 2);
        i_ = end == std::string::npos ? s_.size() : end + 2;
      } else {
        break;
      }
    }
  }
  static void put_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  uint32_t hex4() {
    uint32_t v = 0;
    for (int k = 0; k < 4 && i_ < s_.size(); ++k, ++i_) {
      const char c = s_[i_];
      v = v * 16 + static_cast<uint32_t>(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    return v;
  }
  // A string, decoded the way nlohmann decodes it, so that keys match the DOM's.
  std::string string() {
    std::string out;
    ++i_;  // opening quote
    while (i_ < s_.size() && s_[i_] != '"') {
      if (s_[i_] != '\\') {
        out += s_[i_++];
        continue;
      }
      ++i_;
      const char e = peek();
      ++i_;
      switch (e) {
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00 && peek() == '\\') {
            i_ += 2;  // "\u" of the low surrogate
            const uint32_t lo = hex4();
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          put_utf8(out, cp);
          break;
        }
        default: out += e; break;  // \" \\ \/
      }
    }
    ++i_;  // closing quote
    return out;
  }
  void value(const std::string& ptr) {
    skip();
    values[ptr] = lines_.at(i_);
    const char c = peek();
    if (c == '{') {
      ++i_;
      std::set<std::string> seen;
      skip();
      if (peek() == '}') {
        ++i_;
        return;
      }
      while (i_ < s_.size()) {
        skip();
        const size_t key_at = i_;
        const std::string key = string();
        const std::string child = ptr + "/" + pointer_token(key);
        if (seen.insert(key).second)
          keys[child] = lines_.at(key_at);
        else if (!duplicate)
          duplicate.emplace(child, lines_.at(key_at));
        skip();
        ++i_;  // ':'
        value(child);
        skip();
        if (peek() == ',') {
          ++i_;
          continue;
        }
        ++i_;  // '}'
        return;
      }
    } else if (c == '[') {
      ++i_;
      skip();
      if (peek() == ']') {
        ++i_;
        return;
      }
      for (size_t n = 0; i_ < s_.size(); ++n) {
        value(ptr + "/" + std::to_string(n));
        skip();
        if (peek() == ',') {
          ++i_;
          continue;
        }
        ++i_;  // ']'
        return;
      }
    } else if (c == '"') {
      string();
    } else {
      while (i_ < s_.size() && std::strchr(",]} \t\r\n/", s_[i_]) == nullptr) ++i_;
    }
  }
};

// ---------------------------------------------------------------------------------------------
// Numbers. Values may be JSON numbers or strings ("0x7f00_0000_0000", "-1"), since addresses read
// better in hex and JSON has none.

struct Int {
  bool negative = false;
  uint64_t magnitude = 0;
};

std::optional<Int> parse_int_text(std::string_view t) {
  Int v;
  if (!t.empty() && (t[0] == '-' || t[0] == '+')) {
    v.negative = t[0] == '-';
    t.remove_prefix(1);
  }
  int base = 10;
  if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
    base = 16;
    t.remove_prefix(2);
  }
  if (t.empty()) return std::nullopt;
  bool digit_seen = false;
  for (char c : t) {
    if (c == '_' && digit_seen) continue;  // digit separators: 0x7f00_0000_0000
    int d;
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if (base == 16 && (c | 0x20) >= 'a' && (c | 0x20) <= 'f')
      d = (c | 0x20) - 'a' + 10;
    else
      return std::nullopt;
    const auto ub = static_cast<uint64_t>(base);
    const auto ud = static_cast<uint64_t>(d);
    if (v.magnitude > (std::numeric_limits<uint64_t>::max() - ud) / ub) return std::nullopt;
    v.magnitude = v.magnitude * ub + ud;
    digit_seen = true;
  }
  if (v.negative && v.magnitude == 0) v.negative = false;
  return v;
}

std::string int_text(const Int& v) { return (v.negative ? "-" : "") + std::to_string(v.magnitude); }

// Whether v fits `bytes` bytes of the given signedness ('u', 's', or 'b' for either), and its bits.
std::optional<uint64_t> fit_int(const Int& v, uint32_t bytes, char sign) {
  const uint32_t nbits = bytes * 8;
  const uint64_t umax = nbits >= 64 ? std::numeric_limits<uint64_t>::max() : (uint64_t{1} << nbits) - 1;
  const uint64_t smax = umax >> 1;
  if (v.negative) {
    if (sign == 'u' || v.magnitude > smax + 1) return std::nullopt;
    return (~v.magnitude + 1) & umax;
  }
  if (v.magnitude > (sign == 's' ? smax : umax)) return std::nullopt;
  return v.magnitude;
}

const char* json_kind(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    case json::value_t::string: return "a string";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer";
    case json::value_t::number_float: return "a number with a fraction";
    default: return "something else";
  }
}

// ---------------------------------------------------------------------------------------------
// Scalar parameter types a launch file may give ({"u32": 5}).

struct ScalarKey {
  const char* key;
  Type type;
  char sign;  // 'u', 's', 'b' (bits: either), 'f' (floating point)
};
constexpr ScalarKey kScalarKeys[] = {
    {"u8", Type::U8, 'u'},   {"u16", Type::U16, 'u'}, {"u32", Type::U32, 'u'}, {"u64", Type::U64, 'u'},
    {"s8", Type::S8, 's'},   {"s16", Type::S16, 's'}, {"s32", Type::S32, 's'}, {"s64", Type::S64, 's'},
    {"b8", Type::B8, 'b'},   {"b16", Type::B16, 'b'}, {"b32", Type::B32, 'b'}, {"b64", Type::B64, 'b'},
    {"f32", Type::F32, 'f'}, {"f64", Type::F64, 'f'},
};
const ScalarKey* find_scalar_key(const std::string& k) {
  for (const ScalarKey& s : kScalarKeys)
    if (k == s.key) return &s;
  return nullptr;
}
const ScalarKey* find_scalar_type(Type t) {
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
constexpr TensorMapType kTensorMapTypes[] = {
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
const TensorMapType* find_tensor_map_type(const std::string& name) {
  for (const TensorMapType& t : kTensorMapTypes)
    if (name == t.name) return &t;
  return nullptr;
}

const std::vector<std::string> kInterleaves{"none", "16b", "32b"};
const std::vector<std::string> kSwizzles{"none", "32b", "64b", "128b", "128b_atom_32b", "128b_atom_32b_flip_8b",
                                         "128b_atom_64b"};
const std::vector<std::string> kL2Promotions{"none", "64b", "128b", "256b"};
const std::vector<std::string> kOobFills{"none", "nan"};

// The bytes of shared memory one swizzle pattern spans (0: none).
uint32_t swizzle_span(const std::string& s) {
  if (s == "32b") return 32;
  if (s == "64b") return 64;
  if (s.rfind("128b", 0) == 0) return 128;
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Reading the JSON document.

const std::vector<std::string> kTopKeys{"entry",   "arch",       "grid",   "block",
                                        "cluster", "dynamic_smem", "regs", "non_portable_cluster_size",
                                        "buffers", "tensormaps", "params"};
const std::vector<std::string> kBufferKeys{"name", "bytes", "address", "contents"};
const std::vector<std::string> kTensorMapKeys{"name",       "type",    "dims",         "strides", "box",
                                              "element_strides", "interleave", "swizzle", "l2_promotion",
                                              "oob_fill",   "buffer",  "offset",       "address"};

std::vector<std::string> value_keys() {
  std::vector<std::string> k;
  for (const ScalarKey& s : kScalarKeys) k.emplace_back(s.key);
  return k;
}

class Reader {
 public:
  Reader(const std::string& file, const PositionScan& scan) : file_(file), scan_(scan) {}

  TextPos pos(const std::string& ptr) const {
    const auto it = scan_.values.find(ptr);
    return it == scan_.values.end() ? TextPos{} : it->second;
  }
  [[noreturn]] void fail(const std::string& ptr, const std::string& msg) const {
    throw LaunchError(msg, file_, pos(ptr));
  }

  void only_keys(const json& obj, const std::string& ptr, const std::vector<std::string>& known,
                 const std::string& where) const {
    for (const auto& [key, v] : obj.items()) {
      (void)v;
      if (std::find(known.begin(), known.end(), key) != known.end()) continue;
      const auto it = scan_.keys.find(ptr + "/" + pointer_token(key));
      throw LaunchError(fmt::format("unknown key '{}'{}; the known keys are {}", key, where, join(known)), file_,
                        it == scan_.keys.end() ? pos(ptr) : it->second);
    }
  }

  Int integer(const json& v, const std::string& ptr, const std::string& what) const {
    if (v.is_number_unsigned()) return Int{false, v.get<uint64_t>()};
    if (v.is_number_integer()) {
      const int64_t i = v.get<int64_t>();
      return i < 0 ? Int{true, uint64_t{0} - static_cast<uint64_t>(i)} : Int{false, static_cast<uint64_t>(i)};
    }
    if (v.is_string()) {
      if (auto p = parse_int_text(v.get<std::string>())) return *p;
      fail(ptr, fmt::format("'{}' must be an integer, found the string \"{}\"", what, v.get<std::string>()));
    }
    fail(ptr, fmt::format("'{}' must be an integer, found {}", what, json_kind(v)));
  }
  uint64_t uint(const json& v, const std::string& ptr, const std::string& what, uint64_t lo, uint64_t hi) const {
    const Int i = integer(v, ptr, what);
    if (i.negative || i.magnitude < lo || i.magnitude > hi)
      fail(ptr, fmt::format("'{}' must be in {}..{}, found {}", what, lo, hi, int_text(i)));
    return i.magnitude;
  }
  uint32_t u32(const json& v, const std::string& ptr, const std::string& what, uint32_t lo = 0) const {
    return static_cast<uint32_t>(uint(v, ptr, what, lo, std::numeric_limits<uint32_t>::max()));
  }
  std::string string(const json& v, const std::string& ptr, const std::string& what) const {
    if (!v.is_string()) fail(ptr, fmt::format("'{}' must be a string, found {}", what, json_kind(v)));
    std::string s = v.get<std::string>();
    if (s.empty()) fail(ptr, fmt::format("'{}' must not be empty", what));
    return s;
  }
  std::string choice(const json& v, const std::string& ptr, const std::string& what,
                     const std::vector<std::string>& known) const {
    const std::string s = string(v, ptr, what);
    if (std::find(known.begin(), known.end(), s) == known.end())
      fail(ptr, fmt::format("'{}' must be one of {}, found \"{}\"", what, join(known), s));
    return s;
  }
  // grid / block / cluster: N or [x], [x, y], [x, y, z]; missing dimensions are 1.
  std::array<uint32_t, 3> dims(const json& v, const std::string& ptr, const std::string& what) const {
    std::array<uint32_t, 3> d{1, 1, 1};
    if (v.is_array()) {
      if (v.empty() || v.size() > 3)
        fail(ptr, fmt::format("'{}' must be an integer or an array of 1 to 3 integers, found {} values", what,
                              v.size()));
      for (size_t i = 0; i < v.size(); ++i)
        d[i] = u32(v[i], ptr + "/" + std::to_string(i), what);
      return d;
    }
    if (!v.is_number_integer() && !v.is_string())
      fail(ptr, fmt::format("'{}' must be an integer or an array of 1 to 3 integers, found {}", what, json_kind(v)));
    d[0] = u32(v, ptr, what);
    return d;
  }
  // An array of integers (tensor map dims, strides, box ...).
  std::vector<uint64_t> list(const json& v, const std::string& ptr, const std::string& what) const {
    if (!v.is_array()) fail(ptr, fmt::format("'{}' must be an array of integers, found {}", what, json_kind(v)));
    std::vector<uint64_t> out;
    for (size_t i = 0; i < v.size(); ++i)
      out.push_back(uint(v[i], ptr + "/" + std::to_string(i), what, 0, std::numeric_limits<uint64_t>::max()));
    return out;
  }
  const json& need(const json& obj, const std::string& ptr, const char* key, const std::string& what) const {
    if (!obj.contains(key)) fail(ptr, fmt::format("{} needs '{}'", what, key));
    return obj.at(key);
  }

  std::vector<uint8_t> hex(const json& v, const std::string& ptr, const std::string& what) const {
    std::string s = string(v, ptr, what);
    std::string digits;
    for (size_t i = 0; i < s.size(); ++i) {
      const char c = s[i];
      if (c == ' ' || c == '_') continue;  // separators, for readability
      if (i == 0 && s.size() > 1 && c == '0' && (s[1] == 'x' || s[1] == 'X')) {
        ++i;
        continue;
      }
      if (!std::isxdigit(static_cast<unsigned char>(c)))
        fail(ptr, fmt::format("'{}' must hold hex digits, found '{}'", what, c));
      digits += c;
    }
    if (digits.size() % 2 != 0)
      fail(ptr, fmt::format("'{}' has an odd number of hex digits ({})", what, digits.size()));
    std::vector<uint8_t> out(digits.size() / 2);
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = static_cast<uint8_t>(std::stoul(digits.substr(2 * i, 2), nullptr, 16));
    return out;
  }

  // One parameter value, or one field of a struct parameter.
  ParamSpec value(const json& item, const std::string& ptr, bool field) const {
    const std::string what = field ? "a field" : "a parameter";
    if (!item.is_object()) fail(ptr, fmt::format("{} must be an object, found {}", what, json_kind(item)));
    std::vector<std::string> known = field ? std::vector<std::string>{"offset"}
                                           : std::vector<std::string>{"name", "index"};
    for (const std::string& k : value_keys()) known.push_back(k);
    known.insert(known.end(), {"pointer", field ? "pointer_offset" : "offset", "tensormap"});
    if (!field) known.insert(known.end(), {"hex", "fields"});
    only_keys(item, ptr, known, field ? " in a field" : " in a parameter");

    ParamSpec p;
    p.at = ptr;
    std::string label;
    if (field) {
      p.field_offset = uint(need(item, ptr, "offset", "a field"), ptr + "/offset", "offset", 0,
                            std::numeric_limits<uint32_t>::max());
      label = fmt::format("the field at offset {}", p.field_offset);
    } else {
      if (item.contains("name") && item.contains("index"))
        fail(ptr + "/index", "a parameter has 'name' or 'index', not both");
      if (item.contains("name")) {
        p.name = string(item["name"], ptr + "/name", "name");
        label = fmt::format("parameter '{}'", p.name);
      } else if (item.contains("index")) {
        p.index = u32(item["index"], ptr + "/index", "index");
        label = fmt::format("parameter {}", *p.index);
      } else {
        fail(ptr, "a parameter needs 'name' (the PTX parameter) or 'index' (its position)");
      }
    }
    // Which value it holds: exactly one kind.
    std::vector<std::string> kinds;
    for (const auto& [k, v] : item.items()) {
      (void)v;
      if (find_scalar_key(k) || k == "pointer" || k == "tensormap") kinds.push_back(k);
    }
    if (item.contains("hex") || item.contains("fields")) kinds.emplace_back(item.contains("hex") ? "hex" : "fields");
    if (kinds.empty())
      fail(ptr, fmt::format("{} has no value; give one of {}, pointer, tensormap{}", label, join(value_keys()),
                            field ? "" : ", hex or fields"));
    if (kinds.size() > 1)
      fail(ptr + "/" + kinds[1], fmt::format("{} has two values, '{}' and '{}'", label, kinds[0], kinds[1]));
    const std::string& k = kinds[0];
    const std::string vptr = ptr + "/" + k;
    const char* offset_key = field ? "pointer_offset" : "offset";
    if (item.contains(offset_key) && k != "pointer")
      fail(ptr + "/" + offset_key, fmt::format("'{}' belongs to a 'pointer' value", offset_key));
    if (const ScalarKey* s = find_scalar_key(k)) {
      p.kind = ParamSpec::Kind::Number;
      p.type = s->type;
      const json& v = item[k];
      if (s->sign == 'f') {
        if (!v.is_number()) fail(vptr, fmt::format("'{}' must be a number, found {}", k, json_kind(v)));
        const double d = v.get<double>();
        p.bits = s->type == Type::F32 ? std::bit_cast<uint32_t>(static_cast<float>(d)) : std::bit_cast<uint64_t>(d);
      } else {
        const Int i = integer(v, vptr, k);
        const auto bits = fit_int(i, type_bytes(s->type), s->sign);
        if (!bits) fail(vptr, fmt::format("{} does not fit {}", int_text(i), k));
        p.bits = *bits;
      }
    } else if (k == "pointer") {
      p.kind = ParamSpec::Kind::Pointer;
      p.target = string(item[k], vptr, k);
      if (item.contains(offset_key)) {
        const Int i = integer(item[offset_key], ptr + "/" + offset_key, offset_key);
        if (i.magnitude > (uint64_t{1} << 62))
          fail(ptr + "/" + offset_key, fmt::format("'{}' {} is out of range", offset_key, int_text(i)));
        p.pointer_offset = i.negative ? -static_cast<int64_t>(i.magnitude) : static_cast<int64_t>(i.magnitude);
      }
    } else if (k == "tensormap") {
      p.kind = ParamSpec::Kind::TensorMap;
      p.target = string(item[k], vptr, k);
    } else {
      p.kind = ParamSpec::Kind::Bytes;
      if (item.contains("hex")) {
        p.has_hex = true;
        p.hex = hex(item["hex"], ptr + "/hex", "hex");
      }
      if (item.contains("fields")) {
        const json& f = item["fields"];
        if (!f.is_array()) fail(ptr + "/fields", fmt::format("'fields' must be an array, found {}", json_kind(f)));
        for (size_t i = 0; i < f.size(); ++i) p.fields.push_back(value(f[i], ptr + "/fields/" + std::to_string(i), true));
      }
    }
    return p;
  }

 private:
  const std::string& file_;
  const PositionScan& scan_;
};

// nlohmann's message names the line and column itself; ours come from the byte offset, so keep only
// what went wrong ("syntax error while parsing value - unexpected '}'; expected ...").
std::string syntax_message(const std::string& what) {
  std::string m = what;
  const size_t col = m.find("column ");
  if (col != std::string::npos) {
    const size_t colon = m.find(": ", col);
    if (colon != std::string::npos) m = m.substr(colon + 2);
  }
  const size_t last = m.find("; last read: ");
  if (last != std::string::npos) {
    const size_t next = m.find("; expected", last + 1);
    m.erase(last, next == std::string::npos ? std::string::npos : next - last);
  }
  return "invalid JSON: " + m;
}

const model::Arch& known_arch(const std::string& name, const std::string& file, TextPos pos) {
  if (const model::Arch* a = model::find_arch(name)) return *a;
  std::vector<std::string> names;
  for (const model::Arch& a : model::all_archs()) names.emplace_back(a.name);
  throw LaunchError(fmt::format("unknown architecture '{}'; pipesim knows {}", name, join(names)), file, pos);
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
    // Strides: bytes, multiples of 16 (32 for interleave 32b and the align16b types), each holding the
    // dimensions below it (the layout the driver documents: stride[i] = stride[i-1] * (dim[i] + pad)).
    const uint64_t stride_unit = (t.interleave == "32b" || align16b) ? 32 : 16;
    uint64_t below = (t.dims[0] * t.elem_bits + 7) / 8;
    std::string below_text = fmt::format("dims[0] x {}", t.type_name);
    for (uint32_t i = 1; i < t.rank; ++i) {
      const uint64_t s = t.strides[i];
      const std::string sp = at("strides", i - 1);
      if (s % stride_unit != 0 || s >= (uint64_t{1} << 40))
        fail(sp, fmt::format("{}: strides[{}] = {} B is not a multiple of {} below 2^40", tm, i - 1, s, stride_unit));
      // A dimension of extent 1 is never stepped along: its stride is free (CUTLASS passes 0 for a
      // batch of one).
      if (t.dims[i] == 1) continue;
      if (s < below)
        fail(sp, fmt::format("{}: strides[{}] = {} B is less than the {} B of {}", tm, i - 1, s, below, below_text));
      // s < 2^40 and dims[i] <= 2^32: the product can pass 2^64, which no later stride reaches anyway.
      below = t.dims[i] > std::numeric_limits<uint64_t>::max() / s ? std::numeric_limits<uint64_t>::max() : s * t.dims[i];
      below_text = fmt::format("strides[{}] x dims[{}]", i - 1, i);
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

std::array<uint32_t, 3> parse_dims_text(const std::string& key, const std::string& v) {
  std::array<uint32_t, 3> d{1, 1, 1};
  size_t n = 0;
  size_t start = 0;
  while (true) {
    const size_t end = v.find_first_of("x,", start);
    const auto i = parse_int_text(v.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (n == 3 || !i || i->negative || i->magnitude > std::numeric_limits<uint32_t>::max())
      throw LaunchError(fmt::format("{}={}: expected N, NxM or NxMxK", key, v));
    d[n++] = static_cast<uint32_t>(i->magnitude);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return d;
}

}  // namespace

Launch parse_launch(const std::string& path, const std::string& text) {
  const LineIndex lines(text);
  json doc;
  try {
    doc = json::parse(text, nullptr, true, /*ignore_comments=*/true);
  } catch (const json::parse_error& e) {
    // e.byte is 1-based: the character the parser stopped at.
    throw LaunchError(syntax_message(e.what()), path, lines.at(e.byte == 0 ? 0 : e.byte - 1));
  }
  const PositionScan scan(text, lines);
  const Reader r(path, scan);
  if (!doc.is_object()) r.fail("", fmt::format("the launch file must hold a JSON object, found {}", json_kind(doc)));
  if (scan.duplicate) {
    const auto first = scan.keys.find(scan.duplicate->first);
    const TextPos fp = first == scan.keys.end() ? TextPos{} : first->second;
    const std::string& p = scan.duplicate->first;
    throw LaunchError(fmt::format("key '{}' is given twice, first at {}:{}", p.substr(p.rfind('/') + 1), fp.line, fp.col),
                      path, scan.duplicate->second);
  }
  r.only_keys(doc, "", kTopKeys, "");

  Launch l;
  l.file = path;
  l.positions = scan.values;
  if (doc.contains("entry")) l.entry = r.string(doc["entry"], "/entry", "entry");
  if (doc.contains("arch")) {
    l.arch = r.string(doc["arch"], "/arch", "arch");
    known_arch(l.arch, path, r.pos("/arch"));
  }
  if (doc.contains("grid")) l.grid = r.dims(doc["grid"], "/grid", "grid");
  if (doc.contains("block")) l.block = r.dims(doc["block"], "/block", "block");
  if (doc.contains("cluster")) l.cluster = r.dims(doc["cluster"], "/cluster", "cluster");
  if (doc.contains("dynamic_smem"))
    l.dynamic_smem = r.uint(doc["dynamic_smem"], "/dynamic_smem", "dynamic_smem", 0, std::numeric_limits<uint32_t>::max());
  if (doc.contains("regs")) l.regs = r.u32(doc["regs"], "/regs", "regs");
  if (doc.contains("non_portable_cluster_size")) {
    const json& v = doc["non_portable_cluster_size"];
    if (!v.is_boolean())
      r.fail("/non_portable_cluster_size",
             fmt::format("'non_portable_cluster_size' must be true or false, found {}", json_kind(v)));
    l.non_portable_cluster = v.get<bool>();
  }

  auto array = [&](const char* key) -> const json& {
    const json& v = doc[key];
    if (!v.is_array()) r.fail(std::string("/") + key, fmt::format("'{}' must be an array, found {}", key, json_kind(v)));
    return v;
  };
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  // Each element of the array at `key` ("buffers", "tensormaps"): an object with only the `known` keys
  // and a string "name"; `noun` names one in messages. each(item, ptr, name, what) reads the rest.
  auto named_objects = [&](const char* key, const char* noun, const std::vector<std::string>& known, auto each) {
    const json& items = array(key);
    const std::string a = std::string("a ") + noun;
    for (size_t i = 0; i < items.size(); ++i) {
      const std::string ptr = std::string("/") + key + "/" + std::to_string(i);
      const json& item = items[i];
      if (!item.is_object()) r.fail(ptr, fmt::format("{} must be an object, found {}", a, json_kind(item)));
      r.only_keys(item, ptr, known, " in " + a);
      std::string name = r.string(r.need(item, ptr, "name", a), ptr + "/name", "name");
      const std::string what = fmt::format("{} '{}'", noun, name);
      each(item, ptr, std::move(name), what);
    }
  };
  if (doc.contains("buffers")) {
    named_objects("buffers", "buffer", kBufferKeys,
                  [&](const json& b, const std::string& ptr, std::string name, const std::string& what) {
      BufferDesc d;
      d.name = std::move(name);
      // Up to 2^48 B (256 TiB) keeps every address sum below 2^64.
      d.bytes = r.uint(r.need(b, ptr, "bytes", what), ptr + "/bytes", "bytes", 0, uint64_t{1} << 48);
      if (b.contains("address"))
        d.address = r.uint(b["address"], ptr + "/address", "address", 1, std::numeric_limits<uint64_t>::max());
      if (b.contains("contents")) {
        const std::filesystem::path c = r.string(b["contents"], ptr + "/contents", "contents");
        d.contents_file = (c.is_absolute() ? c : dir / c).string();
      }
      l.buffers.push_back(std::move(d));
    });
  }
  if (doc.contains("tensormaps")) {
    named_objects("tensormaps", "tensor map", kTensorMapKeys,
                  [&](const json& t, const std::string& ptr, std::string name, const std::string& what) {
      TensorMapDesc d;
      d.name = std::move(name);
      d.type_name = r.string(r.need(t, ptr, "type", what), ptr + "/type", "type");
      const TensorMapType* type = find_tensor_map_type(d.type_name);
      if (!type) {
        std::vector<std::string> names;
        for (const TensorMapType& k : kTensorMapTypes) names.emplace_back(k.name);
        r.fail(ptr + "/type", fmt::format("{} has unknown type '{}'; the types are {}", what, d.type_name, join(names)));
      }
      d.elem = type->type;
      d.elem_bits = type->bits;
      d.smem_elem_bits = type->smem_bits == type->bits ? 0 : type->smem_bits;
      const std::vector<uint64_t> dims = r.list(r.need(t, ptr, "dims", what), ptr + "/dims", "dims");
      if (dims.empty() || dims.size() > 5)
        r.fail(ptr + "/dims", fmt::format("{} has {} dims; a tensor map has 1 to 5 dimensions", what, dims.size()));
      d.rank = static_cast<uint32_t>(dims.size());
      std::copy(dims.begin(), dims.end(), d.dims.begin());
      d.strides[0] = (d.elem_bits + 7) / 8;
      if (d.rank > 1 || t.contains("strides")) {
        const std::vector<uint64_t> s = r.list(r.need(t, ptr, "strides", what), ptr + "/strides", "strides");
        if (s.size() != d.rank - 1)
          r.fail(ptr + "/strides", fmt::format("{} has {} dims, so 'strides' (bytes, from dimension 1) needs {}, not {}",
                                               what, d.rank, d.rank - 1, s.size()));
        std::copy(s.begin(), s.end(), d.strides.begin() + 1);
      }
      auto small = [&](const char* key, std::array<uint32_t, 5>& out) {
        const std::vector<uint64_t> v = r.list(t[key], ptr + "/" + key, key);
        if (v.size() != d.rank)
          r.fail(ptr + "/" + key, fmt::format("{} has {} dims, so '{}' needs {}, not {}", what, d.rank, key, d.rank,
                                              v.size()));
        for (size_t k = 0; k < v.size(); ++k) {
          // The real limits (256, 8) are checked with the module; here only what fits a u32.
          if (v[k] > std::numeric_limits<uint32_t>::max())
            r.fail(ptr + "/" + key + "/" + std::to_string(k), fmt::format("'{}' value {} is too large", key, v[k]));
          out[k] = static_cast<uint32_t>(v[k]);
        }
      };
      r.need(t, ptr, "box", what);
      small("box", d.box);
      if (t.contains("element_strides")) small("element_strides", d.elem_strides);
      if (t.contains("interleave"))
        d.interleave = r.choice(t["interleave"], ptr + "/interleave", "interleave", kInterleaves);
      if (t.contains("swizzle")) d.swizzle = r.choice(t["swizzle"], ptr + "/swizzle", "swizzle", kSwizzles);
      if (t.contains("l2_promotion"))
        d.l2_promotion = r.choice(t["l2_promotion"], ptr + "/l2_promotion", "l2_promotion", kL2Promotions);
      if (t.contains("oob_fill")) d.oob_fill = r.choice(t["oob_fill"], ptr + "/oob_fill", "oob_fill", kOobFills);
      if (t.contains("buffer") && t.contains("address"))
        r.fail(ptr + "/address", fmt::format("{} has 'buffer' or 'address', not both", what));
      if (t.contains("offset") && !t.contains("buffer"))
        r.fail(ptr + "/offset", fmt::format("{}: 'offset' is into a 'buffer', and none is named", what));
      if (t.contains("buffer")) d.buffer = r.string(t["buffer"], ptr + "/buffer", "buffer");
      if (t.contains("offset"))
        d.buffer_offset = r.uint(t["offset"], ptr + "/offset", "offset", 0, uint64_t{1} << 48);
      if (t.contains("address"))
        d.global_address = r.uint(t["address"], ptr + "/address", "address", 0, std::numeric_limits<uint64_t>::max());
      l.tensormaps.push_back(std::move(d));
    });
  }
  if (doc.contains("params")) {
    const json& ps = array("params");
    for (size_t i = 0; i < ps.size(); ++i) l.param_specs.push_back(r.value(ps[i], "/params/" + std::to_string(i), false));
  }
  return l;
}

Launch read_launch(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::error_code ec;
  if (!in || std::filesystem::is_directory(path, ec)) throw LaunchError("cannot read the launch file", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_launch(path, ss.str());
}

void apply_short_form(Launch& l, const std::string& assignment) {
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw LaunchError(fmt::format("'{}' is not a short form KEY=VALUE", assignment));
  const std::string key = assignment.substr(0, eq);
  const std::string v = assignment.substr(eq + 1);
  if (v.empty()) throw LaunchError(fmt::format("{}: the value is empty", assignment));
  auto number = [&](uint64_t hi) {
    const auto i = parse_int_text(v);
    if (!i || i->negative || i->magnitude > hi)
      throw LaunchError(fmt::format("{}: expected an integer in 0..{}", assignment, hi));
    return i->magnitude;
  };
  std::string top = key;
  if (key == "grid") {
    l.grid = parse_dims_text(key, v);
  } else if (key == "block") {
    l.block = parse_dims_text(key, v);
  } else if (key == "cluster") {
    l.cluster = parse_dims_text(key, v);
  } else if (key == "smem" || key == "dynamic_smem") {
    l.dynamic_smem = number(std::numeric_limits<uint32_t>::max());
    top = "dynamic_smem";
  } else if (key == "regs") {
    l.regs = static_cast<uint32_t>(number(std::numeric_limits<uint32_t>::max()));
  } else if (key == "entry") {
    l.entry = v;
  } else if (key == "arch") {
    known_arch(v, "", {});
    l.arch = v;
  } else if (key == "non_portable_cluster_size") {
    if (v != "1" && v != "0" && v != "true" && v != "false")
      throw LaunchError(fmt::format("{}: expected 1, 0, true or false", assignment));
    l.non_portable_cluster = v == "1" || v == "true";
  } else if (key.rfind("param.", 0) == 0 && key.size() > 6) {
    ParamSpec p;
    p.kind = ParamSpec::Kind::Text;
    p.name = key.substr(6);
    p.target = v;
    // A repeated short form replaces the earlier one.
    std::erase_if(l.param_specs, [&](const ParamSpec& o) { return o.at.empty() && o.name == p.name; });
    l.param_specs.push_back(std::move(p));
  } else {
    throw LaunchError(fmt::format("unknown short form '{}'; the keys are grid, block, cluster, smem, regs, entry, arch, "
                                  "non_portable_cluster_size and param.NAME",
                                  key));
  }
  l.from_command_line.insert(top);
}

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
