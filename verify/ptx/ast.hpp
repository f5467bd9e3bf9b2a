// A parsed PTX module: what nvcc, CuTe DSL and Triton emit, resolved so that an interpreter can run it
// without looking at names again. Registers are numbered per function, labels are instruction
// indices, `{ }` scopes are flattened (an inner declaration shadows an outer one of the same name),
// symbols point at module or function variables. Text positions are 1-based (line, col) in the .ptx
// file; `.loc` directives give each instruction its position in the kernel's own source.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pipesim::ptx {

struct TextPos {
  uint32_t line = 0;  // 1-based; 0 = none
  uint32_t col = 0;
};

// The source position from the latest `.loc FILE LINE COL` before an instruction (file 0 = none).
// `inlined_at` forms keep the innermost position (the line the instruction came from).
struct SourcePos {
  uint32_t file = 0;  // index into Module::files (the .file number as written)
  uint32_t line = 0;
  uint32_t col = 0;
  // `inlined_at F L C`: where the function holding this line was inlined (file 0: not inlined). For
  // a toolkit wrapper (cuda::ptx) that is the kernel author's call.
  uint32_t inlined_file = 0, inlined_line = 0, inlined_col = 0;
  // The whole inlining chain: Module::inline_frames index of the frame this line was inlined into
  // (-1: none). nvcc writes the chain as consecutive `.loc`s, each inlined at the one before.
  int32_t caller = -1;
};

// One level of an instruction's inlining chain (SourcePos::caller): a position and its own caller.
struct InlineFrame {
  uint32_t file = 0, line = 0, col = 0;
  int32_t caller = -1;
};

// A PTX fundamental type as written in a declaration or an instruction suffix.
enum class Type : uint8_t {
  None,
  Pred,
  B8, B16, B32, B64, B128,
  U8, U16, U32, U64,
  S8, S16, S32, S64,
  F16, F16x2, BF16, BF16x2, TF32, F32, F64,
  E4M3, E5M2, E4M3x2, E5M2x2, E2M1x2, E2M3x2, E3M2x2, UE8M0x2,
  F32x2,  // sm_100: two f32 in a 64-bit register (add / sub / mul / fma .f32x2)
};
// Bytes of one value of the type (Pred: 1; the packed x2 forms: their container).
uint32_t type_bytes(Type t);
// "u32", "f16x2", "pred" ...; "" for None.
const char* type_name(Type t);
// Parses a type name without its dot ("u32"); Type::None if it is not one.
Type parse_type(const std::string& s);

enum class Space : uint8_t { None, Reg, Param, Global, Shared, Local, Const, Generic };

enum class SymbolKind : uint8_t { ModuleVar, FunctionVar, Param, Function };
struct SymbolRef {
  SymbolKind kind = SymbolKind::ModuleVar;
  // Into Module::vars, Function::vars, Function::params, Module::functions. A Param index at or past
  // params.size() names a return parameter, Function::returns[index - params.size()] (`func_retval0`
  // inside a .func).
  uint32_t index = 0;
};

// An address inside an initialiser (`= {generic(tbl), fn, buf+8}`): its bytes in Variable::init are
// zero; whoever lays out memory writes the symbol's address (+ addend) there.
struct InitAddress {
  uint64_t offset = 0;   // byte offset into Variable::init
  SymbolRef sym;         // ModuleVar or Function
  int64_t addend = 0;
  bool generic = false;  // generic(sym): the generic address; else the address in the symbol's space
};

// A variable: module scope (.global/.shared/.const, .extern .shared arrays) or function scope
// (.local depots, .shared inside a function, .param of calls inside `{ }`).
struct Variable {
  std::string name;
  Space space = Space::None;
  Type type = Type::B8;
  uint32_t align = 0;            // 0: the type's natural alignment
  uint64_t elements = 1;         // array length (product of dimensions); 0 for `[]` (extern, unsized)
  bool is_extern = false;
  std::vector<uint8_t> init;     // initialiser bytes, little-endian (empty: zero / none)
  std::vector<InitAddress> init_addresses;  // symbol addresses inside init (their bytes are zero)
  TextPos pos;
  uint64_t bytes() const { return elements * type_bytes(type); }
};

// A kernel or device-function parameter (`.param .u64 name`, `.param .align 64 .b8 name[128]`).
struct Param {
  std::string name;
  Type type = Type::B8;
  uint32_t align = 0;
  uint64_t elements = 1;
  bool ptr = false;              // `.ptr` attribute given
  uint64_t bytes() const { return elements * type_bytes(type); }
};

struct Register {
  std::string name;  // "%r12", "P_OUT" (scoped ones keep their written name)
  Type type = Type::B32;
};

enum class OperandKind : uint8_t {
  Reg,     // reg
  Imm,     // integer literal: imm (bits, sign-extended to 64)
  FImm,    // float literal: imm holds the bits; fbits 32 (0fXXXXXXXX) or 64 (0dXXXXXXXXXXXXXXXX, and
           // decimals such as 1.5, kept as a double whatever the instruction's type)
  Symbol,  // a variable / parameter / function name used as a value: sym (+ imm for `name+8`)
  Label,   // a branch target: label = instruction index
  Addr,    // [base + imm]: base is Reg (reg), Symbol (sym), or none (absolute imm); more items
           // inside the brackets (the coordinates of `[tmap, {x, y}]`) are in elems
  Vector,  // {a, b, c, d}: elems
  Sink,    // `_`
  Special, // a special register: sreg (+ its component in imm: 0..3 for .x .y .z .w, else 0)
};

enum class SpecialReg : uint8_t {
  Tid, Ntid, Ctaid, Nctaid, Laneid, Warpid, Nwarpid, Smid, Nsmid, Gridid,
  Clusterid, Nclusterid, ClusterCtaid, ClusterNctaid, ClusterCtarank, ClusterNctarank, IsExplicitCluster,
  Clock, Clock64, Globaltimer, GlobaltimerLo, GlobaltimerHi,
  LanemaskEq, LanemaskLe, LanemaskLt, LanemaskGe, LanemaskGt,
  DynamicSmemSize, TotalSmemSize, AggrSmemSize, Envreg, Pm,
};
// Envreg: %envreg0..31, the number in Operand::imm. Pm: %pm0..7 give imm 0..7, %pm0_64..%pm7_64 8..15.
// The vector ones (%tid, %ntid, %ctaid, %nctaid, %clusterid, %nclusterid, %cluster_ctaid,
// %cluster_nctaid) written without a component are a Vector of their four components.

struct Operand {
  OperandKind kind = OperandKind::Imm;
  bool negate = false;     // `!%p` (predicate operands, e.g. of setp / selp / and.pred)
  uint32_t reg = 0;        // Reg, Addr with a register base
  bool has_base = false;   // Addr: a base register or symbol is present
  bool base_is_sym = false;
  SymbolRef sym;           // Symbol, Addr with a symbol base
  int64_t imm = 0;         // Imm value, FImm bits, Addr offset, Special component
  uint8_t fbits = 0;       // FImm: 32 or 64
  uint32_t label = 0;      // Label: instruction index in the function body
  SpecialReg sreg = SpecialReg::Tid;
  std::vector<Operand> elems;  // Vector
  TextPos pos;
};

struct Instruction {
  // The opcode's dotted parts as written: "mbarrier.try_wait.parity.shared::cta.b64" gives
  // opcode "mbarrier" and mods {"try_wait", "parity", "shared::cta", "b64"}.
  std::string opcode;
  std::vector<std::string> mods;
  bool has_guard = false;
  bool guard_negated = false;  // @!%p
  uint32_t guard = 0;          // predicate register
  std::vector<Operand> ops;
  TextPos pos;                 // of the opcode (or the guard) in the .ptx file
  SourcePos src;               // from .loc
  // `call` only: the callee (function index) and its operand lists: ops holds the return
  // operands first (ret_count of them), then the arguments.
  uint32_t callee = 0;
  uint32_t ret_count = 0;
  // An indirect call (`call (r), %rd, (a), prototype;`): callee is unused and the target register
  // is the last operand, after the arguments.
  bool call_indirect = false;
  bool has_mod(const char* m) const {
    for (const std::string& s : mods)
      if (s == m) return true;
    return false;
  }
};

// Performance-tuning and launch directives of an entry.
struct EntryDirectives {
  std::optional<uint32_t> maxntid[3], reqntid[3];  // unset dimensions stay unset
  std::optional<uint32_t> minnctapersm, maxnreg, maxclusterrank;
  std::optional<uint32_t> reqnctapercluster[3];
  bool explicitcluster = false;
  bool noreturn = false;
};

struct Function {
  std::string name;
  bool is_entry = false;
  bool is_extern = false;        // declaration only (.extern .func): no body
  std::vector<Param> params;     // entry / function parameters
  std::vector<Param> returns;    // .func (.param .b32 retval) name(...)
  EntryDirectives directives;
  std::vector<Register> regs;    // every register declared in the function, scoped ones included
  std::vector<Variable> vars;    // function-scope variables (.local depot, .shared, call .params)
  std::vector<Instruction> body;
  TextPos pos;
};

struct SourceFile {
  uint32_t number = 0;  // as in `.file N "path"`
  std::string path;
};

struct Module {
  std::string path;              // as given to the parser
  std::vector<std::string> lines;  // the text, for carets in messages
  std::string version;           // ".version 9.0" -> "9.0"
  std::string target;            // "sm_90a" (first target; ", debug" etc. dropped)
  uint32_t address_size = 64;
  std::vector<SourceFile> files;
  std::vector<InlineFrame> inline_frames;  // SourcePos::caller chains
  std::vector<Variable> vars;    // module-scope variables
  std::vector<Function> functions;
  const Function* find_function(const std::string& name) const {
    for (const Function& f : functions)
      if (f.name == name) return &f;
    return nullptr;
  }
  const std::string* file_path(uint32_t number) const {
    for (const SourceFile& f : files)
      if (f.number == number) return &f.path;
    return nullptr;
  }
};

}  // namespace pipesim::ptx
