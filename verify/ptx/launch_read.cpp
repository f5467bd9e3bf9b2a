// The launch file's first step (launch_impl.hpp): reading the JSON launch file and the command line's
// short forms. parse_launch checks the file's syntax, keys and value types and keeps every value's
// position; the values are checked against the module in launch_resolve.cpp.
#include "verify/ptx/launch.hpp"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "verify/ptx/launch_impl.hpp"

namespace pipesim::ptx {

namespace detail {

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += sep;
    out += items[i];
  }
  return out;
}

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

}  // namespace detail

using namespace detail;

namespace {

using json = nlohmann::json;

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

// A scalar parameter type by its launch file key ("u32").
const ScalarKey* find_scalar_key(const std::string& k) {
  for (const ScalarKey& s : kScalarKeys)
    if (k == s.key) return &s;
  return nullptr;
}

// Tensor map options, by the launch file's names.
const std::vector<std::string> kInterleaves{"none", "16b", "32b"};
const std::vector<std::string> kSwizzles{"none", "32b", "64b", "128b", "128b_atom_32b", "128b_atom_32b_flip_8b",
                                         "128b_atom_64b"};
const std::vector<std::string> kL2Promotions{"none", "64b", "128b", "256b"};
const std::vector<std::string> kOobFills{"none", "nan"};

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
  } catch (const json::out_of_range& e) {
    // A number past what a double holds ("1E999"): the library names it, not where it is (found by
    // the fuzzer, docs/fuzzing.md). The first place its text occurs is where it is.
    const std::string what = e.what();
    const size_t open = what.find('\''), close = what.rfind('\'');
    const std::string number = open != std::string::npos && close > open ? what.substr(open + 1, close - open - 1) : "";
    const size_t at = number.empty() ? std::string::npos : text.find(number);
    throw LaunchError(fmt::format("number {}{} is out of range", number.substr(0, 32), number.size() > 32 ? "..." : ""), path,
                      at == std::string::npos ? TextPos{} : lines.at(at));
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

}  // namespace pipesim::ptx
