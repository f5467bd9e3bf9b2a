// Internals of the PTX parser, shared by parser.cpp (module level, declarations, initialisers),
// body.cpp (function bodies: scopes, instructions, operands, labels) and constants.cpp (literals,
// constant expressions). Not a public header.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "verify/ptx/ast.hpp"
#include "verify/ptx/lexer.hpp"
#include "verify/ptx/parser.hpp"

namespace pipesim::ptx::detail {

constexpr uint32_t kNone = 0xFFFFFFFFu;
// Bounds that keep hostile input from exhausting memory; real PTX stays far below them.
constexpr uint32_t kMaxRegisters = 1u << 22;      // per function
constexpr uint64_t kMaxModuleRegisters = 1u << 24;  // in all functions together
constexpr uint32_t kMaxScopeDepth = 4096;         // nested `{ }`
constexpr uint32_t kMaxExprDepth = 256;           // nested parentheses in a constant expression
constexpr uint64_t kMaxInitBytes = 1ull << 28;    // an initialised variable
constexpr uint32_t kMaxDims = 16;                 // array dimensions of one declaration

// A constant: an integer (bits, two's complement) or a float literal (its bits, 32 or 64 wide).
struct Value {
  uint64_t bits = 0;
  uint8_t fbits = 0;  // 0: integer
  bool is_float() const { return fbits != 0; }
};

// What a name declared inside a function stands for.
struct Binding {
  enum Kind : uint8_t { Reg, VecReg, Var, Param, Return };
  Kind kind = Reg;
  uint32_t index = 0;  // register (VecReg: its first component), Function::vars / params / returns
  uint32_t width = 1;  // VecReg: components
};

// `%r<count>` declared in a scope: %rN is register base + N * width (width > 1: vector registers).
struct RegRange {
  uint32_t base = 0, count = 0, width = 1;
};

struct LabelDef {
  uint32_t target = 0;  // instruction index, or index into tables_ when is_table
  bool is_table = false;
};

// A use of a label not resolved yet (labels may be forward references).
struct LabelRef {
  std::string_view name;
  TextPos pos;
  uint32_t instr = 0, op = 0;  // the operand body[instr].ops[op] ...
  uint32_t table = kNone;      // ... or entry `op` of .branchtargets list `table`
  bool want_table = false;     // brx.idx names a .branchtargets list, bra a label
};

struct Scope {
  std::unordered_map<std::string_view, Binding> names;
  std::unordered_map<std::string_view, RegRange> ranges;
  std::unordered_map<std::string_view, LabelDef> labels;
  std::vector<LabelRef> pending;
  TextPos open;
  void clear() {
    names.clear();
    ranges.clear();
    labels.clear();
    pending.clear();
  }
};

// A name resolved inside a function: a binding, a special register, or nothing.
struct Resolved {
  enum Kind : uint8_t { None, Bound, Special } kind = None;
  Binding binding;
  int32_t component = -1;  // `.x` .. `.w` after a vector register or special register
  SpecialReg sreg = SpecialReg::Tid;
  bool sreg_vector = false;
  uint32_t sreg_number = 0;  // %envregN, %pmN
};

class ModuleParser {
 public:
  ModuleParser(std::string path, std::string text);
  Module run();

 private:
  // --- errors and tokens (parser.cpp)
  [[noreturn]] void fail(TextPos at, const std::string& message) const;
  Token expect(char c, const char* context);
  Token expect_word(const char* what);
  uint64_t expect_uint(const char* what);
  // --- constants (constants.cpp)
  Value literal(const Token& t) const;
  Value expr(uint32_t depth = 0);
  Value expr_binary(int min_prec, uint32_t depth);
  Value expr_unary(uint32_t depth);
  int64_t int_expr(const char* what);

  // --- module level (parser.cpp)
  void module_directive();
  void skip_section();
  void file_directive();
  void function(bool is_entry, bool is_extern);
  void param_list(std::vector<Param>& out);
  Param param_decl();
  void entry_directive(EntryDirectives& d);
  void alias();
  void variable_decl(Space space, bool is_extern, bool in_function);
  void initialiser(Variable& v, const std::vector<uint64_t>& dims, TextPos name_pos);
  void init_list(Variable& v, const std::vector<uint64_t>& dims, uint32_t depth, uint64_t& count);
  void init_item(Variable& v, uint64_t index);
  void skip_attribute();
  void skip_group(const Token& open, char close, const char* what);
  bool vector_or_type(const Token& a, bool allow_v8, uint32_t& vec, Type& type);

  // --- function bodies (body.cpp)
  void body(uint32_t function, TextPos open);
  void push_scope(TextPos open);
  void pop_scope();
  void body_directive();
  void reg_decl();
  void loc_directive();
  void label_or_list(const Token& name);
  void instruction();
  void call(Instruction& ins);
  Operand operand(uint32_t op_index, bool label_wanted, bool table_wanted);
  Operand operand_primary();
  Operand address(const Token& open);
  Operand name_operand(const Token& t);
  Operand bound_operand(const Resolved& r, const Token& t) const;
  Resolved resolve(std::string_view name) const;
  bool lookup(std::string_view name, Binding& out) const;
  void declare(const Token& name, Binding b);
  uint32_t add_register(std::string name, Type type);
  void resolve_pending(Scope& scope, Scope* outer);
  Function& fn() { return m_.functions[fn_]; }

  std::string path_;
  std::string text_;  // every string_view below points into it
  Lexer lex_;
  Module m_;
  std::unordered_map<std::string_view, SymbolRef> module_syms_;
  std::unordered_map<std::string_view, uint32_t> defined_at_;  // function name -> line of its body

  // The function whose body is being parsed.
  uint32_t fn_ = 0;
  uint64_t module_registers_ = 0;  // declared so far, in every function
  std::vector<Scope> scopes_;  // [0] parameters, [1] the body, deeper: nested `{ }` (reused)
  uint32_t depth_ = 0;         // scopes_[depth_] is the innermost open one
  std::vector<std::vector<Operand>> tables_;  // .branchtargets lists of this function
  std::vector<LabelRef> table_uses_;          // brx operands, resolved to a list (target = list)
  std::vector<uint32_t> table_use_list_;
  SourcePos loc_;
  std::map<std::array<uint32_t, 3>, int32_t> frame_at_;  // latest inline frame at a position
};

}  // namespace pipesim::ptx::detail
