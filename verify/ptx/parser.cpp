// PTX parser, module level: directives, functions' headers, variables and their initialisers, and
// the public entry points. Function bodies: body.cpp; literals and constant expressions: constants.cpp.
#include "verify/ptx/parser.hpp"

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>

#include "verify/ptx/parser_impl.hpp"

namespace pipesim::ptx {
namespace detail {
namespace {

uint16_t f32_to_f16_bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const int32_t exp = static_cast<int32_t>((x >> 23) & 0xFFu);
  uint32_t mant = x & 0x7FFFFFu;
  if (exp == 0xFF) return static_cast<uint16_t>(sign | 0x7C00u | (mant ? 0x200u : 0u));
  const int32_t e = exp - 127 + 15;
  if (e >= 0x1F) return static_cast<uint16_t>(sign | 0x7C00u);
  uint32_t half = 0, rem = 0, mid = 0;
  if (e <= 0) {  // subnormal half (or zero)
    if (e < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    const uint32_t shift = static_cast<uint32_t>(14 - e);
    half = mant >> shift;
    rem = mant & ((1u << shift) - 1);
    mid = 1u << (shift - 1);
  } else {
    half = (static_cast<uint32_t>(e) << 10) | (mant >> 13);
    rem = mant & 0x1FFFu;
    mid = 0x1000u;
  }
  if (rem > mid || (rem == mid && (half & 1u))) ++half;  // a carry into the exponent is correct
  return static_cast<uint16_t>(sign | half);
}

uint16_t f32_to_bf16_bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

double value_as_double(const Value& v) {
  if (v.fbits == 32) return std::bit_cast<float>(static_cast<uint32_t>(v.bits));
  if (v.fbits == 64) return std::bit_cast<double>(v.bits);
  return static_cast<double>(static_cast<int64_t>(v.bits));
}

// The bytes of `v` as an initialiser element of `type`, little-endian, into out[0..n).
void encode(Type type, const Value& v, uint8_t* out, size_t n) {
  uint64_t bits = v.bits;
  switch (type) {
    case Type::F32:
    case Type::TF32:
      if (v.fbits != 32) bits = std::bit_cast<uint32_t>(static_cast<float>(value_as_double(v)));
      break;
    case Type::F64:
      if (v.fbits != 64) bits = std::bit_cast<uint64_t>(value_as_double(v));
      break;
    // PTX has no half-precision literal: integers are taken as the bit pattern.
    case Type::F16:
      if (v.is_float()) bits = f32_to_f16_bits(static_cast<float>(value_as_double(v)));
      break;
    case Type::BF16:
      if (v.is_float()) bits = f32_to_bf16_bits(static_cast<float>(value_as_double(v)));
      break;
    default:
      break;
  }
  const uint8_t high = !v.is_float() && static_cast<int64_t>(v.bits) < 0 ? 0xFF : 0x00;
  for (size_t i = 0; i < n; ++i) out[i] = i < 8 ? static_cast<uint8_t>(bits >> (8 * i)) : high;
}

std::string unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char c = s[++i];
    out += c == 'n' ? '\n' : c == 't' ? '\t' : c;
  }
  return out;
}

bool is_pow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

}  // namespace

ModuleParser::ModuleParser(std::string path, std::string text)
    : path_(std::move(path)), text_(std::move(text)), lex_(text_, path_) {}

void ModuleParser::fail(TextPos at, const std::string& message) const { throw ParseError(path_, at, message); }

Token ModuleParser::expect(char c, const char* context) {
  if (lex_.peek().is(c)) return lex_.next();
  fail(lex_.peek().pos, std::string("expected '") + c + "' " + context + ", found " + describe(lex_.peek()));
}

Token ModuleParser::expect_word(const char* what) {
  if (lex_.peek().kind == TokKind::Word) return lex_.next();
  fail(lex_.peek().pos, std::string("expected ") + what + ", found " + describe(lex_.peek()));
}

uint64_t ModuleParser::expect_uint(const char* what) {
  const Token t = lex_.peek();
  if (t.kind != TokKind::Number) fail(t.pos, std::string("expected ") + what + ", found " + describe(t));
  lex_.next();
  const Value v = literal(t);
  if (v.is_float()) fail(t.pos, std::string("expected ") + what + ", found the float " + describe(t));
  return v.bits;
}

Module ModuleParser::run() {
  m_.path = path_;
  for (size_t at = 0; at < text_.size();) {
    size_t eol = text_.find('\n', at);
    if (eol == std::string::npos) eol = text_.size();
    size_t end = eol;
    if (end > at && text_[end - 1] == '\r') --end;
    m_.lines.emplace_back(text_, at, end - at);
    at = eol + 1;
  }
  while (lex_.peek().kind != TokKind::End) module_directive();
  return std::move(m_);
}

void ModuleParser::module_directive() {
  Token t = lex_.peek();
  if (t.is(';')) {
    lex_.next();
    return;
  }
  if (t.kind != TokKind::Dir)
    fail(t.pos, "expected a directive such as '.entry' or '.global' at module scope, found " + describe(t));
  const std::string_view d = t.text;
  if (d == ".version") {
    lex_.next();
    const Token v = lex_.next();
    if (v.kind != TokKind::Number) fail(v.pos, "expected a version such as 9.0 after .version, found " + describe(v));
    m_.version = v.text;
  } else if (d == ".target") {
    lex_.next();
    m_.target = expect_word("a target such as sm_90a").text;
    while (lex_.peek().is(',')) {
      lex_.next();
      expect_word("a target option such as 'debug'");
    }
  } else if (d == ".address_size") {
    lex_.next();
    const TextPos at = lex_.peek().pos;
    const uint64_t n = expect_uint("an address size (32 or 64)");
    if (n != 32 && n != 64) fail(at, "the address size must be 32 or 64");
    m_.address_size = static_cast<uint32_t>(n);
  } else if (d == ".file") {
    file_directive();
  } else if (d == ".pragma") {
    lex_.next();
    do {
      if (lex_.peek().kind != TokKind::String)
        fail(lex_.peek().pos, "expected a string after .pragma, found " + describe(lex_.peek()));
      lex_.next();
    } while (lex_.peek().is(',') && (lex_.next(), true));
    expect(';', "after the .pragma string");
  } else if (d == ".section") {
    skip_section();
  } else if (d == ".alias") {
    alias();
  } else {
    bool is_extern = false;
    while (t.is_dir(".extern") || t.is_dir(".visible") || t.is_dir(".weak") || t.is_dir(".common")) {
      is_extern = is_extern || t.is_dir(".extern");
      lex_.next();
      t = lex_.peek();
    }
    if (t.is_dir(".entry") || t.is_dir(".func")) {
      function(t.is_dir(".entry"), is_extern);
    } else if (t.is_dir(".global") || t.is_dir(".shared") || t.is_dir(".const") || t.is_dir(".local")) {
      const Space space = t.is_dir(".global")   ? Space::Global
                          : t.is_dir(".shared") ? Space::Shared
                          : t.is_dir(".const")  ? Space::Const
                                                : Space::Local;
      variable_decl(space, is_extern, false);
    } else if (t.text != d || t.kind != TokKind::Dir) {
      fail(t.pos, "expected '.entry', '.func' or a variable after " + std::string(d) + ", found " + describe(t));
    } else {
      fail(t.pos, "unknown directive " + describe(t) + " at module scope");
    }
  }
}

void ModuleParser::file_directive() {
  lex_.next();
  const TextPos at = lex_.peek().pos;
  const uint64_t number = expect_uint("a file number");
  if (number > UINT32_MAX) fail(at, "the file number does not fit in 32 bits");
  if (lex_.peek().kind != TokKind::String)
    fail(lex_.peek().pos, "expected the file's path as a string, found " + describe(lex_.peek()));
  std::string path = unescape(lex_.next().text);
  if (lex_.peek().kind == TokKind::String) {  // `.file 1 "dir" "name"`
    std::string name = unescape(lex_.next().text);
    path = name.starts_with('/') || path.empty() ? name : path + "/" + name;
  }
  if (lex_.peek().is(',')) {  // timestamp, size
    lex_.next();
    expect_uint("the file's timestamp");
    expect(',', "between the file's timestamp and size");
    expect_uint("the file's size");
  }
  for (SourceFile& f : m_.files)
    if (f.number == number) {
      f.path = std::move(path);
      return;
    }
  m_.files.push_back(SourceFile{static_cast<uint32_t>(number), std::move(path)});
}

void ModuleParser::skip_section() {
  lex_.next();
  const Token name = lex_.next();
  if (name.kind != TokKind::Dir && name.kind != TokKind::Word)
    fail(name.pos, "expected a section name after .section, found " + describe(name));
  skip_group(expect('{', "after the section name"), '}', ".section");
}

void ModuleParser::alias() {
  lex_.next();
  const Token name = expect_word("the alias name");
  expect(',', "after the alias name");
  const Token target = expect_word("the aliased function");
  expect(';', "after .alias");
  const auto it = module_syms_.find(target.text);
  if (it == module_syms_.end() || it->second.kind != SymbolKind::Function)
    fail(target.pos, "unknown function '" + std::string(target.text) + "'");
  if (!module_syms_.emplace(name.text, it->second).second)
    fail(name.pos, "'" + std::string(name.text) + "' is already declared");
}

void ModuleParser::skip_attribute() {
  lex_.next();
  skip_group(expect('(', "after .attribute"), ')', ".attribute");
}

// Skips past the `close` that matches `open`, nested pairs included; `what` names the directive.
void ModuleParser::skip_group(const Token& open, char close, const char* what) {
  const char o = open.text[0];
  uint64_t depth = 1;
  while (depth > 0) {
    const Token t = lex_.next();
    if (t.kind == TokKind::End) fail(open.pos, std::string("this '") + o + "' of " + what + " is never closed");
    if (t.is(o)) ++depth;
    if (t.is(close)) --depth;
  }
}

// A declaration's `.vN` (.v8 only where allow_v8) or its type, each before the other is known;
// false where `a` is neither. Shared by .reg and variable declarations.
bool ModuleParser::vector_or_type(const Token& a, bool allow_v8, uint32_t& vec, Type& type) {
  if ((a.text == ".v2" || a.text == ".v4" || (allow_v8 && a.text == ".v8")) && type == Type::None) {
    vec = static_cast<uint32_t>(a.text[2] - '0');
  } else if (const Type ty = parse_type(std::string(a.text.substr(1))); ty != Type::None && type == Type::None) {
    type = ty;
  } else {
    return false;
  }
  return true;
}

void ModuleParser::function(bool is_entry, bool is_extern) {
  lex_.next();
  Function f;
  f.is_entry = is_entry;
  if (lex_.peek().is_dir(".attribute")) skip_attribute();
  if (!is_entry && lex_.peek().is('(')) param_list(f.returns);
  const Token name = expect_word(is_entry ? "the kernel's name" : "the function's name");
  if (name.text[0] == '%') fail(name.pos, "a function name cannot start with '%'");
  f.name = name.text;
  f.pos = name.pos;
  bool have_params = false;
  while (true) {
    const Token t = lex_.peek();
    if (t.is('(') && !have_params) {
      param_list(f.params);
      have_params = true;
    } else if (t.is_dir(".pragma")) {
      lex_.next();
      if (lex_.peek().kind != TokKind::String) fail(lex_.peek().pos, "expected a string after .pragma");
      lex_.next();
      expect(';', "after the .pragma string");
    } else if (t.is_dir(".attribute")) {
      skip_attribute();
    } else if (t.kind == TokKind::Dir) {
      entry_directive(f.directives);
    } else {
      break;
    }
  }
  const Token end = lex_.peek();
  if (!end.is(';') && !end.is('{'))
    fail(end.pos, "expected '{' or ';' after the header of '" + f.name + "', found " + describe(end));
  lex_.next();
  const bool definition = end.is('{');
  if (definition && is_extern) fail(end.pos, "an .extern function cannot have a body");
  f.is_extern = !definition;  // declaration only, until a definition comes
  uint32_t index = static_cast<uint32_t>(m_.functions.size());
  const auto it = module_syms_.find(name.text);
  if (it != module_syms_.end()) {
    if (it->second.kind != SymbolKind::Function)
      fail(name.pos, "'" + f.name + "' is already declared as a variable");
    index = it->second.index;
    if (definition) {
      const auto def = defined_at_.find(name.text);
      if (def != defined_at_.end())
        fail(name.pos, "function '" + f.name + "' is already defined at line " + std::to_string(def->second));
      m_.functions[index] = std::move(f);
    }
  } else {
    module_syms_.emplace(name.text, SymbolRef{SymbolKind::Function, index});
    m_.functions.push_back(std::move(f));
  }
  if (definition) {
    defined_at_.emplace(name.text, name.pos.line);
    body(index, end.pos);
  }
}

void ModuleParser::param_list(std::vector<Param>& out) {
  lex_.next();  // (
  if (lex_.peek().is(')')) {
    lex_.next();
    return;
  }
  while (true) {
    out.push_back(param_decl());
    if (lex_.peek().is(',')) {
      lex_.next();
      continue;
    }
    expect(')', "to close the parameter list");
    return;
  }
}

Param ModuleParser::param_decl() {
  const Token kw = lex_.peek();
  if (kw.is_dir(".reg")) fail(kw.pos, "register parameters (.reg in a parameter list) are not supported");
  if (!kw.is_dir(".param")) fail(kw.pos, "expected '.param' in the parameter list, found " + describe(kw));
  lex_.next();
  Param p;
  bool after_ptr = false, have_type = false;
  while (lex_.peek().kind == TokKind::Dir) {
    const Token a = lex_.next();
    if (a.text == ".align") {
      const TextPos at = lex_.peek().pos;
      const uint64_t n = expect_uint("an alignment");
      if (!is_pow2(n) || n > (1u << 30)) fail(at, "the alignment must be a power of two");
      if (!after_ptr) p.align = static_cast<uint32_t>(n);  // after .ptr it is the pointee's
    } else if (a.text == ".ptr") {
      p.ptr = after_ptr = true;
    } else if (after_ptr && (a.text == ".global" || a.text == ".shared" || a.text == ".const" ||
                             a.text == ".local")) {
      // the pointee's state space: informational
    } else if (const Type ty = parse_type(std::string(a.text.substr(1))); ty != Type::None && !have_type) {
      p.type = ty;
      have_type = true;
    } else {
      fail(a.pos, "unexpected " + describe(a) + " in a parameter declaration");
    }
  }
  if (!have_type) fail(lex_.peek().pos, "expected a type such as '.u64' in the parameter declaration, found " +
                                           describe(lex_.peek()));
  const Token name = expect_word("the parameter's name");
  p.name = name.text;
  uint32_t dims = 0;
  while (lex_.peek().is('[')) {
    lex_.next();
    const TextPos at = lex_.peek().pos;
    const uint64_t n = expect_uint("the array length");
    expect(']', "after the array length");
    if (++dims > kMaxDims || n > (1ull << 32) || p.elements > (1ull << 32) / (n ? n : 1))
      fail(at, "the parameter array is too large");
    p.elements *= n;
  }
  return p;
}

void ModuleParser::entry_directive(EntryDirectives& d) {
  const Token t = lex_.next();
  auto number = [&](const char* what) {
    const TextPos at = lex_.peek().pos;
    const uint64_t n = expect_uint(what);
    if (n > UINT32_MAX) fail(at, std::string(what) + " does not fit in 32 bits");
    return static_cast<uint32_t>(n);
  };
  auto dims = [&](std::optional<uint32_t>* out) {
    out[0] = number("a dimension");
    for (int i = 1; i < 3 && lex_.peek().is(','); ++i) {
      lex_.next();
      out[i] = number("a dimension");
    }
  };
  if (t.text == ".maxntid") dims(d.maxntid);
  else if (t.text == ".reqntid") dims(d.reqntid);
  else if (t.text == ".reqnctapercluster") dims(d.reqnctapercluster);
  else if (t.text == ".minnctapersm") d.minnctapersm = number("a CTA count");
  else if (t.text == ".maxnreg") d.maxnreg = number("a register count");
  else if (t.text == ".maxclusterrank") d.maxclusterrank = number("a cluster rank");
  else if (t.text == ".explicitcluster") d.explicitcluster = true;
  else if (t.text == ".noreturn") d.noreturn = true;
  else {
    // Other performance directives (.maxnctapersm, .blocksareclusters, .abi_preserve ...): their
    // numbers are read and not kept.
    while (lex_.peek().kind == TokKind::Number) {
      lex_.next();
      if (!lex_.peek().is(',')) break;
      lex_.next();
    }
  }
}

void ModuleParser::variable_decl(Space space, bool is_extern, bool in_function) {
  lex_.next();  // the state space
  uint32_t align = 0, vec = 1;
  Type type = Type::None;
  while (lex_.peek().kind == TokKind::Dir) {
    const Token a = lex_.peek();
    if (a.text == ".attribute") {
      skip_attribute();
      continue;
    }
    lex_.next();
    if (a.text == ".align") {
      const TextPos at = lex_.peek().pos;
      const uint64_t n = expect_uint("an alignment");
      if (!is_pow2(n) || n > (1u << 30)) fail(at, "the alignment must be a power of two");
      align = static_cast<uint32_t>(n);
    } else if (!vector_or_type(a, true, vec, type)) {
      fail(a.pos, "unexpected " + describe(a) + " in a variable declaration");
    }
  }
  if (type == Type::None)
    fail(lex_.peek().pos, "expected a type such as '.b32' in the declaration, found " + describe(lex_.peek()));
  while (true) {
    const Token name = expect_word("the variable's name");
    Variable v;
    v.name = name.text;
    v.space = space;
    v.type = type;
    v.align = align != 0 || vec == 1 ? align : vec * type_bytes(type);
    v.is_extern = is_extern;
    v.pos = name.pos;
    std::vector<uint64_t> dims;
    while (lex_.peek().is('[')) {
      const Token open = lex_.next();
      uint64_t n = 0;
      if (lex_.peek().is(']')) {
        if (!dims.empty()) fail(open.pos, "only the first dimension of an array can be left out");
      } else {
        n = expect_uint("the array length");
        if (n == 0) fail(open.pos, "an array length must be at least 1");
      }
      expect(']', "after the array length");
      if (dims.size() == kMaxDims) fail(open.pos, "too many array dimensions");
      dims.push_back(n);
    }
    if (vec > 1) dims.push_back(vec);
    v.elements = 1;
    for (uint64_t n : dims) {
      if (n != 0 && v.elements > (1ull << 48) / n) fail(name.pos, "'" + v.name + "' is too large");
      v.elements *= n;
    }
    if (lex_.peek().is('=')) {
      const Token eq = lex_.next();
      if (is_extern) fail(eq.pos, "an .extern variable cannot have an initialiser");
      initialiser(v, dims, name.pos);
    }
    if (in_function) {
      const uint32_t index = static_cast<uint32_t>(fn().vars.size());
      declare(name, Binding{Binding::Var, index, 1});
      fn().vars.push_back(std::move(v));
    } else {
      const auto it = module_syms_.find(name.text);
      if (it == module_syms_.end()) {
        module_syms_.emplace(name.text, SymbolRef{SymbolKind::ModuleVar, static_cast<uint32_t>(m_.vars.size())});
        m_.vars.push_back(std::move(v));
      } else if (it->second.kind != SymbolKind::ModuleVar) {
        fail(name.pos, "'" + v.name + "' is already declared as a function");
      } else if (Variable& old = m_.vars[it->second.index]; old.is_extern || is_extern) {
        if (old.is_extern && !is_extern) old = std::move(v);  // the definition of an extern
      } else {
        fail(name.pos, "'" + v.name + "' is already declared at line " + std::to_string(old.pos.line));
      }
    }
    if (lex_.peek().is(',')) {
      lex_.next();
      continue;
    }
    expect(';', "at the end of the declaration");
    return;
  }
}

void ModuleParser::initialiser(Variable& v, const std::vector<uint64_t>& dims, TextPos name_pos) {
  const bool unsized = !dims.empty() && dims[0] == 0;
  if (!unsized && v.bytes() > kMaxInitBytes) fail(name_pos, "the initialised variable '" + v.name + "' is too large");
  uint64_t count = 0;
  if (lex_.peek().is('{')) {
    init_list(v, dims, 0, count);
  } else {
    init_item(v, 0);
    count = 1;
  }
  if (unsized) {
    uint64_t inner = 1;
    for (size_t i = 1; i < dims.size(); ++i) inner *= dims[i];
    v.elements = (count + inner - 1) / inner * inner;
    if (v.elements == 0) v.elements = inner;
  }
  v.init.resize(v.bytes());
}

void ModuleParser::init_list(Variable& v, const std::vector<uint64_t>& dims, uint32_t depth, uint64_t& count) {
  const Token open = lex_.next();  // {
  const uint64_t start = count;
  const bool unsized = !dims.empty() && dims[0] == 0;
  uint64_t span = 1;  // elements this brace covers (0: unknown, an unsized array)
  for (size_t i = depth; i < dims.size(); ++i) span *= dims[i];
  while (!lex_.peek().is('}')) {
    const Token t = lex_.peek();
    if (t.is('{')) {
      if (depth + 1 >= dims.size()) fail(t.pos, "too many nested braces in the initialiser of '" + v.name + "'");
      init_list(v, dims, depth + 1, count);
    } else {
      if (!unsized && count >= v.elements)
        fail(t.pos, "too many values in the initialiser of '" + v.name + "' (it holds " +
                        std::to_string(v.elements) + ")");
      if (unsized && (count + 1) * type_bytes(v.type) > kMaxInitBytes)
        fail(t.pos, "the initialised variable '" + v.name + "' is too large");
      init_item(v, count++);
    }
    if (!lex_.peek().is(',')) break;
    lex_.next();
  }
  expect('}', "to close the initialiser list");
  if (depth > 0) {
    if (count - start > span) fail(open.pos, "too many values in this part of the initialiser of '" + v.name + "'");
    count = start + span;
  }
}

void ModuleParser::init_item(Variable& v, uint64_t index) {
  const uint64_t esize = type_bytes(v.type);
  const uint64_t offset = index * esize;
  if (v.init.size() < offset + esize) v.init.resize(offset + esize);
  const Token t = lex_.peek();
  if (t.kind != TokKind::Word) {
    encode(v.type, expr(), v.init.data() + offset, esize);
    return;
  }
  lex_.next();
  InitAddress a;
  a.offset = offset;
  Token name = t;
  if (t.text == "generic" && lex_.peek().is('(')) {
    lex_.next();
    name = expect_word("a symbol inside generic( )");
    expect(')', "after the symbol");
    a.generic = true;
  }
  const auto it = module_syms_.find(name.text);
  if (it == module_syms_.end()) fail(name.pos, "unknown symbol '" + std::string(name.text) + "'");
  a.sym = it->second;
  if (lex_.peek().is('+')) {
    lex_.next();
    a.addend = int_expr("offset");
  } else if (lex_.peek().is('-')) {
    a.addend = int_expr("offset");
  }
  v.init_addresses.push_back(a);
}

}  // namespace detail

Module parse_module(std::string path, std::string text) {
  detail::ModuleParser parser(std::move(path), std::move(text));
  return parser.run();
}

Module parse_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw ParseError(path, {}, "cannot read '" + path + "': " + std::strerror(errno));
  std::string text;
  char buf[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  const bool failed = std::ferror(f) != 0;
  const int err = errno;
  std::fclose(f);
  if (failed) throw ParseError(path, {}, "cannot read '" + path + "': " + std::strerror(err));
  return parse_module(path, std::move(text));
}

namespace {

// The diagnostic for `line` (the text of line pos.line, or none).
std::string render(const std::string& path, std::optional<std::string_view> line, TextPos pos,
                   std::string_view message) {
  std::string out = path;
  if (pos.line != 0) out += ":" + std::to_string(pos.line) + ":" + std::to_string(pos.col);
  out += ": error: " + std::string(message) + "\n";
  if (pos.line == 0 || !line) return out;
  std::string_view text = *line;
  if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
  out += "  " + std::string(text) + "\n  ";
  const size_t caret = std::min<size_t>(pos.col ? pos.col - 1 : 0, text.size());
  for (size_t i = 0; i < caret; ++i) out += text[i] == '\t' ? '\t' : ' ';
  return out + "^\n";
}

}  // namespace

std::string format_error(const std::string& path, std::string_view text, TextPos pos, std::string_view message) {
  std::optional<std::string_view> line;
  size_t at = 0;
  for (uint32_t n = 1; n < pos.line && at != std::string_view::npos; ++n) {
    at = text.find('\n', at);
    if (at != std::string_view::npos) ++at;
  }
  if (pos.line != 0 && at != std::string_view::npos && at <= text.size()) {
    const size_t eol = text.find('\n', at);
    line = text.substr(at, eol == std::string_view::npos ? std::string_view::npos : eol - at);
  }
  return render(path, line, pos, message);
}

std::string format_error(const ParseError& e, std::string_view text) {
  return format_error(e.path, text, e.pos, e.what());
}

std::string format_error(const Module& module, TextPos pos, std::string_view message) {
  std::optional<std::string_view> line;
  if (pos.line != 0 && pos.line <= module.lines.size()) line = module.lines[pos.line - 1];
  return render(module.path, line, pos, message);
}

}  // namespace pipesim::ptx
