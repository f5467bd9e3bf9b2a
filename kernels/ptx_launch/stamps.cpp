#include "kernels/ptx_launch/stamps.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include <fmt/format.h>

namespace pipesim::ptx_launch {
namespace {

constexpr uint32_t kMaxSites = 1u << 16;
constexpr uint64_t kTimeMask = (uint64_t{1} << 48) - 1;

// The code part of a PTX line: comments stripped, a leading label dropped, trimmed.
std::string_view code_of(std::string_view line) {
  if (size_t c = line.find("//"); c != std::string_view::npos) line = line.substr(0, c);
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.front()))) line.remove_prefix(1);
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.remove_suffix(1);
  // "LAB_WAIT: mbarrier.try_wait ..." (a label and an instruction on one line)
  size_t i = 0;
  while (i < line.size() && (std::isalnum(static_cast<unsigned char>(line[i])) || line[i] == '_' || line[i] == '$')) ++i;
  if (i > 0 && i < line.size() && line[i] == ':') {
    line.remove_prefix(i + 1);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.front()))) line.remove_prefix(1);
  }
  return line;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// Whether the instruction `rest` (its guard split off) is `op` or one of its forms (`op.`...).
bool is_opcode(std::string_view rest, std::string_view op) {
  return starts_with(rest, op) &&
         (rest.size() == op.size() || rest[op.size()] == '.' || std::isspace(static_cast<unsigned char>(rest[op.size()])) || rest[op.size()] == ';');
}

// An instruction's guard ("@%p1", "@!%p1") and the rest.
struct Guarded {
  std::string_view guard;  // without '@'
  std::string_view rest;
};
Guarded split_guard(std::string_view code) {
  if (code.empty() || code.front() != '@') return {{}, code};
  size_t i = 1;
  while (i < code.size() && !std::isspace(static_cast<unsigned char>(code[i]))) ++i;
  Guarded g{code.substr(1, i - 1), code.substr(i)};
  while (!g.rest.empty() && std::isspace(static_cast<unsigned char>(g.rest.front()))) g.rest.remove_prefix(1);
  return g;
}

enum class Where { None, AfterIfTrue, After, Before };

struct Point {
  Where where = Where::None;
  std::string what;
  std::string pred;  // AfterIfTrue: the predicate the instruction wrote
};

Point classify(std::string_view rest) {
  auto opcode_is = [&](std::string_view op) { return is_opcode(rest, op); };
  if (opcode_is("mbarrier.try_wait") || opcode_is("mbarrier.test_wait")) {
    const size_t sp = rest.find_first_of(" \t");
    const size_t comma = rest.find(',');
    if (sp == std::string_view::npos || comma == std::string_view::npos || comma < sp) return {};
    std::string_view pred = rest.substr(sp, comma - sp);
    while (!pred.empty() && std::isspace(static_cast<unsigned char>(pred.front()))) pred.remove_prefix(1);
    while (!pred.empty() && std::isspace(static_cast<unsigned char>(pred.back()))) pred.remove_suffix(1);
    return {Where::AfterIfTrue, std::string(opcode_is("mbarrier.try_wait") ? "mbarrier.try_wait" : "mbarrier.test_wait"), std::string(pred)};
  }
  // A TMA load's issue (into shared memory: `cp.async.bulk[.tensor.Nd].shared...`), lane 0's: when
  // the producer asked for each stage, beside when its consumers saw it land.
  if (opcode_is("cp.async.bulk")) {
    std::string_view form = rest.substr(std::string_view("cp.async.bulk").size());
    const bool tensor = starts_with(form, ".tensor.");
    if (tensor) {
      const size_t dims_end = form.find('.', std::string_view(".tensor.").size());  // after ".tensor.2d"
      form = dims_end == std::string_view::npos ? std::string_view{} : form.substr(dims_end);
    }
    if (starts_with(form, ".shared")) return {Where::After, tensor ? "cp.async.bulk.tensor" : "cp.async.bulk", {}};
  }
  // A warpgroup MMA's fence and commit, after they return: with the wait, whether a k-block's time
  // goes to issuing its wgmma or to waiting for them.
  if (opcode_is("wgmma.fence")) return {Where::After, "wgmma.fence", {}};
  if (opcode_is("wgmma.commit_group")) return {Where::After, "wgmma.commit_group", {}};
  if (opcode_is("wgmma.wait_group")) return {Where::After, "wgmma.wait_group", {}};
  if (opcode_is("cp.async.bulk.wait_group")) return {Where::After, "cp.async.bulk.wait_group", {}};
  if (opcode_is("barrier.cluster.wait")) return {Where::After, "barrier.cluster.wait", {}};
  if ((opcode_is("bar.sync") || opcode_is("barrier.sync") || opcode_is("barrier.cta.sync") || opcode_is("bar.cta.sync")))
    return {Where::After, "bar.sync", {}};
  if (opcode_is("ret") || opcode_is("exit")) return {Where::Before, "warp exit", {}};
  return {};
}

// A line asked for as a site: an instruction the warp goes on from. "" when it is one, else why not.
std::string not_a_line_site(std::string_view code) {
  const std::string_view rest = split_guard(code).rest;
  if (rest.empty()) return "an empty line or a label";
  if (rest.front() == '.' || rest.front() == '{' || rest.front() == '}') return "a directive or a brace";
  for (std::string_view op : {"bra", "brx.idx", "ret", "exit", "trap", "call"})
    if (is_opcode(rest, op))
      return fmt::format("`{}`, after which the warp does not go on to the next line", op);
  return {};
}

// Lane 0 writes (site, %globaltimer) at the warp's cursor, within its slice, where `pred` (and `guard`)
// hold. %pipesim_q ends up false elsewhere. After a wait (`pred` set) the stamp code is branched over
// unless the wait's predicate is true: the branch cannot issue before the wait's result is in, so the
// timer is read when the wait returned, not when it was issued (the H100 issues the next independent
// instruction, a read of %globaltimer among them, while a try_wait's predicate is still pending).
std::string stamp_code(uint32_t site, std::string_view pred, std::string_view guard) {
  std::string s;
  std::string skip;
  if (!pred.empty()) {
    skip = fmt::format("$pipesim_skip_{}_{}", site, pred.front() == '!' ? "n" : "p");
    s += pred.front() == '!' ? fmt::format("\t@{} bra \t{};\n", pred.substr(1), skip) : fmt::format("\t@!{} bra \t{};\n", pred, skip);
  }
  s += "\tmov.u64 \t%pipesim_t, %globaltimer;\n"
       "\tsetp.lt.u64 \t%pipesim_q, %pipesim_c, %pipesim_e;\n"
       "\tand.pred \t%pipesim_q, %pipesim_q, %pipesim_l0;\n";
  auto and_with = [&](std::string_view p) {
    if (p.empty()) return;
    if (p.front() == '!') {
      s += fmt::format("\tnot.pred \t%pipesim_n, {};\n\tand.pred \t%pipesim_q, %pipesim_q, %pipesim_n;\n", p.substr(1));
    } else {
      s += fmt::format("\tand.pred \t%pipesim_q, %pipesim_q, {};\n", p);
    }
  };
  and_with(guard);
  s += fmt::format("\tand.b64 \t%pipesim_t, %pipesim_t, {};\n\tor.b64 \t%pipesim_t, %pipesim_t, {};\n", kTimeMask, uint64_t{site} << 48);
  s += "\t@%pipesim_q st.global.u64 \t[%pipesim_c], %pipesim_t;\n\t@%pipesim_q add.u64 \t%pipesim_c, %pipesim_c, 8;\n";
  if (!skip.empty()) s += skip + ":\n";
  return s;
}

// The warp's slice of the buffer: cursor %pipesim_c, end %pipesim_e; %pipesim_l0: lane 0.
std::string prologue(uint32_t warps_per_cta, uint32_t per_warp) {
  return fmt::format(
      "\t.reg .b64 \t%pipesim_c, %pipesim_e, %pipesim_t;\n"
      "\t.reg .b32 \t%pipesim_a, %pipesim_b, %pipesim_d, %pipesim_x, %pipesim_y;\n"
      "\t.reg .pred \t%pipesim_l0, %pipesim_q, %pipesim_n;\n"
      "\tld.param.u64 \t%pipesim_c, [__pipesim_stamps];\n"
      "\tcvta.to.global.u64 \t%pipesim_c, %pipesim_c;\n"
      "\tmov.u32 \t%pipesim_a, %ctaid.x;\n\tmov.u32 \t%pipesim_b, %ctaid.y;\n\tmov.u32 \t%pipesim_d, %ctaid.z;\n"
      "\tmov.u32 \t%pipesim_x, %nctaid.x;\n\tmov.u32 \t%pipesim_y, %nctaid.y;\n"
      "\tmad.lo.u32 \t%pipesim_d, %pipesim_d, %pipesim_y, %pipesim_b;\n"
      "\tmad.lo.u32 \t%pipesim_d, %pipesim_d, %pipesim_x, %pipesim_a;\n"
      "\tmov.u32 \t%pipesim_a, %tid.x;\n\tmov.u32 \t%pipesim_b, %tid.y;\n\tmov.u32 \t%pipesim_x, %tid.z;\n"
      "\tmov.u32 \t%pipesim_y, %ntid.y;\n"
      "\tmad.lo.u32 \t%pipesim_x, %pipesim_x, %pipesim_y, %pipesim_b;\n"
      "\tmov.u32 \t%pipesim_y, %ntid.x;\n"
      "\tmad.lo.u32 \t%pipesim_x, %pipesim_x, %pipesim_y, %pipesim_a;\n"
      "\tand.b32 \t%pipesim_a, %pipesim_x, 31;\n"
      "\tsetp.eq.u32 \t%pipesim_l0, %pipesim_a, 0;\n"
      "\tshr.u32 \t%pipesim_b, %pipesim_x, 5;\n"
      "\tmad.lo.u32 \t%pipesim_d, %pipesim_d, {}, %pipesim_b;\n"
      "\tmul.wide.u32 \t%pipesim_t, %pipesim_d, {};\n"
      "\tadd.u64 \t%pipesim_c, %pipesim_c, %pipesim_t;\n"
      "\tadd.u64 \t%pipesim_e, %pipesim_c, {};\n",
      warps_per_cta, uint64_t{per_warp} * 8, uint64_t{per_warp} * 8);
}

// Where `.entry NAME` starts: the offset of the name, with a delimiter after it.
size_t find_entry(std::string_view ptx, std::string_view entry) {
  size_t at = 0;
  while ((at = ptx.find(".entry", at)) != std::string_view::npos) {
    size_t n = at + 6;
    while (n < ptx.size() && std::isspace(static_cast<unsigned char>(ptx[n]))) ++n;
    if (ptx.substr(n, entry.size()) == entry) {
      const size_t e = n + entry.size();
      if (e < ptx.size() && (ptx[e] == '(' || std::isspace(static_cast<unsigned char>(ptx[e])))) return e;
    }
    at = n;
  }
  return std::string_view::npos;
}

}  // namespace

StampedPtx add_stamps(std::string_view ptx, std::string_view entry, uint32_t warps_per_cta, uint64_t ctas, uint32_t per_warp,
                      std::span<const uint32_t> lines) {
  if (per_warp == 0) throw std::runtime_error("stamps: a warp's slice must hold at least one stamp");
  const size_t name_end = find_entry(ptx, entry);
  if (name_end == std::string_view::npos) throw std::runtime_error(fmt::format("stamps: no .entry {} in the PTX", entry));
  const size_t open = ptx.find('(', name_end);
  const size_t close = open == std::string_view::npos ? open : ptx.find(')', open);
  const size_t body = close == std::string_view::npos ? close : ptx.find('{', close);
  if (body == std::string_view::npos) throw std::runtime_error(fmt::format("stamps: .entry {} has no parameter list and body", entry));
  bool has_params = false;
  for (size_t i = open + 1; i < close; ++i) has_params |= !std::isspace(static_cast<unsigned char>(ptx[i]));

  StampedPtx out;
  out.per_warp = per_warp;
  out.warps = uint64_t{warps_per_cta} * ctas;
  out.sites.push_back({0, "warp start"});
  out.sites.push_back({0, "warp exit"});
  std::string& t = out.text;
  t.reserve(ptx.size() * 2);
  t.append(ptx.substr(0, close));
  t.append(has_params ? ",\n\t.param .u64 __pipesim_stamps\n" : "\n\t.param .u64 __pipesim_stamps\n");
  t.append(ptx.substr(close, body + 1 - close));
  t.append("\n");
  t.append(prologue(warps_per_cta, per_warp));
  t.append(stamp_code(0, {}, {}));

  // The body, line by line, to its closing brace (inline asm blocks nest braces).
  uint32_t line_no = 1;
  for (size_t i = 0; i <= body; ++i) line_no += ptx[i] == '\n';
  int depth = 1;
  size_t pos = body + 1;
  std::vector<uint32_t> found;  // the asked-for lines met in the body
  while (pos < ptx.size() && depth > 0) {
    size_t eol = ptx.find('\n', pos);
    if (eol == std::string_view::npos) eol = ptx.size();
    const std::string_view line = ptx.substr(pos, eol - pos);
    const std::string_view code = code_of(line);
    for (char ch : code) depth += ch == '{' ? 1 : ch == '}' ? -1 : 0;
    Guarded g = split_guard(code);
    Point p = depth > 0 ? classify(g.rest) : Point{};
    const bool asked = std::find(lines.begin(), lines.end(), line_no) != lines.end();
    if (asked) {
      found.push_back(line_no);
      if (p.where == Where::None) {
        if (std::string why = not_a_line_site(code); !why.empty())
          throw std::runtime_error(fmt::format("stamps: line {} is not an instruction the warp goes on from: {}", line_no, why));
        p = {Where::After, "line", {}};
        g = {};  // stamped whether its guard held or not: the warp passed the line
      }
    }
    if (p.where == Where::AfterIfTrue && !g.guard.empty()) {
      ++out.skipped;  // its predicate keeps an old value where the guard is false
    } else if (p.where != Where::None) {
      uint32_t site = 1;  // warp exit
      if (p.where != Where::Before) {
        if (out.sites.size() >= kMaxSites) throw std::runtime_error(fmt::format("stamps: .entry {} has more than {} sites", entry, kMaxSites - 2));
        site = static_cast<uint32_t>(out.sites.size());
        out.sites.push_back({line_no, p.what});
      }
      if (p.where == Where::Before) t.append(stamp_code(site, {}, g.guard));
      t.append(line);
      t.append("\n");
      if (p.where != Where::Before) t.append(stamp_code(site, p.pred, g.guard));
      pos = eol + 1;
      ++line_no;
      continue;
    }
    t.append(line);
    t.append(eol < ptx.size() ? "\n" : "");
    pos = eol + 1;
    ++line_no;
  }
  if (pos < ptx.size()) t.append(ptx.substr(pos));
  for (uint32_t l : lines)
    if (std::find(found.begin(), found.end(), l) == found.end())
      throw std::runtime_error(fmt::format("stamps: line {} is not in the body of .entry {}", l, entry));
  return out;
}

std::vector<Stamp> read_stamps(const std::vector<uint64_t>& buffer, uint32_t per_warp) {
  std::vector<Stamp> out;
  if (per_warp == 0) return out;
  for (size_t w = 0; w * per_warp < buffer.size(); ++w)
    for (size_t i = w * per_warp; i < (w + 1) * per_warp && i < buffer.size() && buffer[i] != 0; ++i)
      out.push_back({w, static_cast<uint32_t>(buffer[i] >> 48), buffer[i] & kTimeMask});
  return out;
}

}  // namespace pipesim::ptx_launch
