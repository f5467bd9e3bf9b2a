#include "verify/trace.hpp"

#include "sim/explain.hpp"

#include "verify/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <iterator>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace pipesim::verify {
namespace {

// Thread ids: a warp's main track is tid = warp + 1 (tid 0 is special to some Perfetto versions,
// which merged it with tid 1); its overlap lanes (rare) and the async unit's lanes live above
// these bases so they never collide with a warp's (at most 32 warps). Process-level events
// (names, phase flips) use kProcessTid.
constexpr int kProcessTid = 1;
constexpr int kWarpLaneTidBase = 100;  // + warp * 100 + lane (lane >= 1)
constexpr int kAsyncTidBase = 10000;   // + unit * 1000 + lane; units: -1 copy engine, -2 tensor pipe, -3 TMEM
int tid_of(int warp, int lane) {
  if (warp < 0) return kAsyncTidBase + (-warp - 1) * 1000 + lane;
  return lane == 0 ? warp + 1 : kWarpLaneTidBase + warp * 100 + lane;
}

int64_t to_ns(double ns) {
  if (!(ns > 0)) return 0;  // also NaN
  return std::llround(ns);
}

// Microseconds with nanosecond resolution, printed exactly: 12345 ns -> 12.345
void put_us(std::string& out, int64_t ns) {
  fmt::format_to(std::back_inserter(out), "{}.{:03}", ns / 1000, ns % 1000);
}


std::string role_name(const sim::Kernel& k, const sim::RunResult& r, int cta, int warp) {
  for (const auto& role : k.roles)
    if (warp >= role.warp_lo && warp <= role.warp_hi) return role.name;
  for (const auto& w : r.warps)
    if (w.cta == cta && w.warp == warp && w.role >= 0 && static_cast<size_t>(w.role) < k.roles.size())
      return k.roles[static_cast<size_t>(w.role)].name;
  return "no role";
}

// `"site":"f:l:c","op":"..."` for a site; empty when it has neither. The source line itself is left
// out of slices (it would dominate the trace's size); findings carry it.
std::string site_args(const sim::Kernel& k, uint32_t site, bool with_line) {
  if (site >= k.sites.size()) return {};
  const sim::Site& s = k.sites[site];
  std::string out;
  if (s.loc.line > 0) {
    out += "\"site\":";
    out += json_quote(fmt::format("{}:{}:{}", k.file, s.loc.line, s.loc.col));
    if (with_line && s.loc.line <= k.lines.size()) {
      std::string_view text = k.lines[s.loc.line - 1];
      size_t b = text.find_first_not_of(" \t");
      text = b == std::string_view::npos ? std::string_view{} : text.substr(b);
      while (!text.empty() && (text.back() == ' ' || text.back() == '\r')) text.remove_suffix(1);
      out += ",\"line\":";
      out += json_quote(text);
    }
  }
  if (!s.what.empty()) {
    if (!out.empty()) out += ',';
    out += "\"op\":";
    out += json_quote(s.what);
  }
  if (!s.origin.empty()) {  // a PTX instruction: where the kernel's own source has it
    if (!out.empty()) out += ',';
    out += "\"source\":";
    out += json_quote(sim::short_origin(s.origin));
  }
  return out;
}

// First-fit packing of slices into lanes so that slices on one lane nest properly.
struct Packed {
  size_t span;  // index into RunResult::spans
  int64_t b, e;
  int lane;
};

std::vector<Packed> pack(std::vector<Packed> v, int& lanes) {
  std::sort(v.begin(), v.end(), [](const Packed& x, const Packed& y) {
    if (x.b != y.b) return x.b < y.b;
    if (x.e != y.e) return x.e > y.e;  // the enclosing slice first
    return x.span < y.span;
  });
  std::vector<std::vector<int64_t>> open;  // per lane: stack of open slice ends
  for (Packed& p : v) {
    int chosen = -1;
    for (size_t l = 0; l < open.size(); ++l) {
      auto& st = open[l];
      while (!st.empty() && st.back() <= p.b) st.pop_back();
      if (st.empty() || p.e <= st.back()) {
        chosen = static_cast<int>(l);
        break;
      }
    }
    if (chosen < 0) {
      open.emplace_back();
      chosen = static_cast<int>(open.size()) - 1;
    }
    open[static_cast<size_t>(chosen)].push_back(p.e);
    p.lane = chosen;
  }
  lanes = std::max(1, static_cast<int>(open.size()));
  return v;
}

}  // namespace

std::string json_quote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    unsigned char c = p[i];
    if (c < 0x80) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
          if (c < 0x20 || c == 0x7f)
            fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<unsigned>(c));
          else
            out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    // Validate one UTF-8 sequence (no overlongs, no surrogates, <= U+10FFFF).
    size_t len = 0;
    uint32_t cp = 0;
    if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1Fu; }
    else if (c >= 0xE0 && c <= 0xEF) { len = 3; cp = c & 0x0Fu; }
    else if (c >= 0xF0 && c <= 0xF4) { len = 4; cp = c & 0x07u; }
    bool ok = len > 0 && i + len <= n;
    for (size_t j = 1; ok && j < len; ++j) {
      if ((p[i + j] & 0xC0) != 0x80) ok = false;
      else cp = (cp << 6) | (p[i + j] & 0x3Fu);
    }
    if (ok && ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
               (len == 4 && (cp < 0x10000 || cp > 0x10FFFF))))
      ok = false;
    if (ok) {
      out.append(s.data() + i, len);
      i += len;
    } else {
      out += "\\ufffd";
      ++i;
    }
  }
  out += '"';
  return out;
}

int TraceWriter::add(const sim::Kernel& kernel, const sim::RunResult& result, std::string_view label) {
  const int base = next_pid_;
  const int64_t cluster = std::max<int64_t>(1, kernel.launch.cluster);
  std::string& out = body_;
  auto sep = [&] {
    if (!out.empty()) out += ",\n";
    ++events_;
  };

  // Which CTAs and warps appear at all.
  std::set<int> ctas;
  std::set<std::pair<int, int>> warps;  // (cta, warp >= 0)
  for (const auto& s : result.spans) {
    ctas.insert(s.cta);
    if (s.warp >= 0) warps.insert({s.cta, s.warp});
  }
  for (const auto& w : result.warps) {
    ctas.insert(w.cta);
    // A warp with no role that never did anything gets no track (it only clutters the view).
    if (w.role >= 0 || w.status != sim::WarpStatus::Exited || w.ops_done > 0) warps.insert({w.cta, w.warp});
  }
  for (const auto& i : result.instants) ctas.insert(i.cta);
  for (const auto& f : result.findings) {
    if (f.cta < 0) continue;
    ctas.insert(f.cta);
    if (f.warp >= 0) warps.insert({f.cta, f.warp});
  }
  ctas.erase(-1);  // defensive: a span without a CTA has no process to go to
  int max_cta = ctas.empty() ? -1 : *ctas.rbegin();
  next_pid_ += static_cast<int>(std::max<int64_t>(kernel.launch.ctas, int64_t{max_cta} + 1)) + 1;
  ++timelines_;
  auto pid_of = [&](int cta) { return base + cta; };

  const std::string prefix = label.empty() ? std::string{} : fmt::format("{} · ", label);
  std::vector<std::string> site_arg_cache(kernel.sites.size());
  std::vector<bool> site_arg_done(kernel.sites.size(), false);
  auto args_for_site = [&](uint32_t site) -> const std::string& {
    static const std::string none;
    if (site >= kernel.sites.size()) return none;
    if (!site_arg_done[site]) {
      site_arg_cache[site] = site_args(kernel, site, false);
      site_arg_done[site] = true;
    }
    return site_arg_cache[site];
  };

  // Processes.
  for (int cta : ctas) {
    const int pid = pid_of(cta);
    sep();
    fmt::format_to(std::back_inserter(out),
                   R"({{"ph":"M","name":"process_name","pid":{},"tid":{},"args":{{"name":{}}}}})", pid, kProcessTid,
                   json_quote(fmt::format("{}CTA {} (cluster {} rank {})", prefix, cta, cta / cluster,
                                          cta % cluster)));
    sep();
    fmt::format_to(std::back_inserter(out),
                   R"({{"ph":"M","name":"process_sort_index","pid":{},"tid":{},"args":{{"sort_index":{}}}}})",
                   pid, kProcessTid,
                   stacking_ == Stacking::ByTimeline ? int64_t{pid} : int64_t{cta} * 1024 + timelines_);
  }

  // Group the spans by track owner (cta, warp), pack them into lanes.
  std::map<std::pair<int, int>, std::vector<Packed>> groups;
  for (size_t i = 0; i < result.spans.size(); ++i) {
    const auto& s = result.spans[i];
    if (s.cta < 0) continue;
    int64_t b = to_ns(s.begin_ns), e = std::max(b, to_ns(s.end_ns));
    groups[{s.cta, s.warp}].push_back({i, b, e, 0});
  }
  std::map<std::pair<int, int>, int> lanes_of;  // (cta, warp or -1) -> lanes used
  for (auto& [key, v] : groups) {
    int lanes = 1;
    v = pack(std::move(v), lanes);
    lanes_of[key] = lanes;
  }

  auto thread_meta = [&](int cta, int tid, const std::string& name, int sort) {
    sep();
    fmt::format_to(std::back_inserter(out),
                   R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}})", pid_of(cta),
                   tid, json_quote(name));
    sep();
    fmt::format_to(std::back_inserter(out),
                   R"({{"ph":"M","name":"thread_sort_index","pid":{},"tid":{},"args":{{"sort_index":{}}}}})",
                   pid_of(cta), tid, sort);
  };

  // Warp tracks (every warp seen, even without spans), then the async lanes.
  for (const auto& [cta, warp] : warps) {
    if (cta < 0) continue;
    const std::string name = fmt::format("warp {} · {}", warp, role_name(kernel, result, cta, warp));
    thread_meta(cta, tid_of(warp, 0), name, warp * 100);
    auto it = lanes_of.find({cta, warp});
    const int lanes = it == lanes_of.end() ? 1 : it->second;
    for (int l = 1; l < lanes; ++l)
      thread_meta(cta, tid_of(warp, l), fmt::format("{} (overlap {})", name, l + 1), warp * 100 + l);
  }
  for (const auto& [key, lanes] : lanes_of) {
    if (key.second >= 0) continue;
    const int unit = key.second;
    const std::string name = unit == -1 ? "async unit (TMA, bulk stores)" : unit == -2 ? "tensor pipe (tcgen05.mma)" : "TMEM allocation";
    for (int l = 0; l < lanes; ++l)
      thread_meta(key.first, tid_of(unit, l), l == 0 ? name : fmt::format("{} · lane {}", name, l + 1),
                  1'000'000 + (-unit) * 1000 + l);
  }

  // Slices.
  for (const auto& [key, v] : groups) {
    const int cta = key.first, warp = key.second;
    for (const Packed& p : v) {
      const auto& s = result.spans[p.span];
      sep();
      out += R"({"ph":"X","cat":)";
      out += warp < 0 ? "\"async\"" : s.blocked ? "\"blocked\"" : "\"run\"";
      out += ",\"name\":";
      out += json_quote(s.label);
      fmt::format_to(std::back_inserter(out), ",\"pid\":{},\"tid\":{},\"ts\":", pid_of(cta), tid_of(warp, p.lane));
      put_us(out, p.b);
      out += ",\"dur\":";
      put_us(out, p.e - p.b);
      out += ",\"args\":{";
      out += args_for_site(s.site);
      out += "}}";
    }
  }

  // Barrier phase flips: process-scoped instants.
  for (const auto& i : result.instants) {
    if (i.cta < 0) continue;
    sep();
    out += R"({"ph":"i","s":"p","cat":"barrier","name":)";
    out += json_quote(i.label);
    fmt::format_to(std::back_inserter(out), ",\"pid\":{},\"tid\":{},\"ts\":", pid_of(i.cta), kProcessTid);
    put_us(out, to_ns(i.at_ns));
    out += '}';
  }

  // Findings and warps still blocked: instants at the end of the run on the warp concerned.
  const int64_t end = to_ns(result.end_ns);
  for (const auto& f : result.findings) {
    sep();
    out += R"({"ph":"i","cat":"finding","name":)";
    out += json_quote(fmt::format("{}: {}", f.fatal ? "error" : "warning", f.kind));
    if (f.cta < 0)
      fmt::format_to(std::back_inserter(out), ",\"s\":\"g\",\"pid\":{},\"tid\":{}", base, kProcessTid);
    else if (f.warp < 0)
      fmt::format_to(std::back_inserter(out), ",\"s\":\"p\",\"pid\":{},\"tid\":{}", pid_of(f.cta), kProcessTid);
    else
      fmt::format_to(std::back_inserter(out), ",\"s\":\"t\",\"pid\":{},\"tid\":{}", pid_of(f.cta), tid_of(f.warp, 0));
    out += ",\"ts\":";
    put_us(out, end);
    out += ",\"args\":{\"message\":";
    out += json_quote(f.message);
    if (!f.notes.empty()) {
      out += ",\"notes\":[";
      for (size_t n = 0; n < f.notes.size(); ++n) {
        if (n) out += ',';
        out += json_quote(f.notes[n]);
      }
      out += ']';
    }
    const std::string sa = site_args(kernel, f.site, true);
    if (!sa.empty()) {
      out += ',';
      out += sa;
    }
    out += "}}";
  }
  if (result.verdict == sim::Verdict::Hang) {
    for (const auto& w : result.warps) {
      if (w.status != sim::WarpStatus::Blocked || w.cta < 0) continue;
      sep();
      out += R"({"ph":"i","s":"t","cat":"finding","name":)";
      const std::string what = w.site < kernel.sites.size() ? kernel.sites[w.site].what : std::string("?");
      out += json_quote(fmt::format("hang: blocked in {}", what));
      fmt::format_to(std::back_inserter(out), ",\"pid\":{},\"tid\":{},\"ts\":", pid_of(w.cta), tid_of(w.warp, 0));
      put_us(out, end);
      out += ",\"args\":{";
      out += site_args(kernel, w.site, true);
      out += "}}";
    }
  }

  // Summary for the trace's metadata.
  if (!other_data_.empty()) other_data_ += ',';
  const std::string key = label.empty() ? fmt::format("timeline {}", timelines_) : std::string(label);
  other_data_ += json_quote(key);
  other_data_ += ':';
  other_data_ += json_quote(fmt::format("{} ({}) on {}: {}, {} ns simulated, {} events, pids {}..{}", kernel.name,
                                        kernel.file, kernel.arch ? kernel.arch->name : std::string_view("?"),
                                        verdict_name(result.verdict), end, result.events, base,
                                        next_pid_ - 2));
  return base;
}

std::string TraceWriter::str() const {
  std::string s;
  s.reserve(body_.size() + other_data_.size() + 128);
  s += "{\"traceEvents\":[\n";
  s += body_;
  s += "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"pipesim\"";
  if (!other_data_.empty()) {
    s += ',';
    s += other_data_;
  }
  s += "}}\n";
  return s;
}

std::string perfetto_trace(const sim::Kernel& kernel, const sim::RunResult& result) {
  TraceWriter w;
  w.add(kernel, result);
  return w.str();
}

}  // namespace pipesim::verify
