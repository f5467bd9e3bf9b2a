// The Perfetto trace writer and the JSON report: hand-built runs (no parser or engine needed),
// then end to end on tiny scenarios.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/arch.hpp"
#include "verify/check.hpp"
#include "verify/json_report.hpp"
#include "verify/trace.hpp"

namespace ps = pipesim;
using nlohmann::json;

namespace {

// Two CTAs of one cluster, a producer warp and a consumer warp, a 2-stage pipeline. CTA 1's
// consumer ends blocked on full[1]; CTA 0 saw a warning.
struct Fixture {
  ps::sim::Kernel k;
  ps::sim::RunResult r;

  Fixture() {
    k.name = "tiny";
    k.file = "scenarios/tiny.pss";
    k.lines = {"kernel tiny on sm_90a",
               "launch ctas = 2, cluster = 2, threads = 64",
               "role producer warp 0:",
               "  tma full[0] bytes = 1024",
               "role consumer warp 1:",
               "  wait full[1] parity = 0",
               "  compute 100 ns",
               "expect hang"};
    k.arch = ps::model::find_arch("sm_90a");
    k.launch.ctas = 2;
    k.launch.cluster = 2;
    k.launch.threads = 64;
    k.barriers.push_back({"full", 2, 1, -1, {}});
    k.barriers.push_back({"empty", 2, 1, -1, {}});
    ps::sim::Role prod;
    prod.name = "producer";
    prod.warp_lo = prod.warp_hi = 0;
    ps::sim::Role cons;
    cons.name = "consumer";
    cons.warp_lo = cons.warp_hi = 1;
    k.roles = {prod, cons};
    k.sites = {{{4, 3}, "tma", {}}, {{6, 3}, "wait", {}}, {{7, 3}, "compute", {}}};
    k.expect = ps::sim::Expectation{ps::sim::Verdict::Hang, "", {8, 1}};
    k.params = {{"K", 64}};

    r.verdict = ps::sim::Verdict::Hang;
    r.end_ns = 5000;
    r.events = 42;
    // Warps: tma issue, then two overlapping loads on the async unit, plus one nested in the first.
    r.spans.push_back({0, 0, 0, 100, 0, "tma 1024 B", false});
    r.spans.push_back({0, -1, 100, 1600, 0, "tma 1024 B", false});
    r.spans.push_back({0, -1, 600, 2100, 0, "tma 1024 B", false});
    r.spans.push_back({0, -1, 200, 300, 0, "tma 512 B", false});
    r.spans.push_back({0, 1, 0, 1500, 1, "wait full[0] parity 0", true});
    r.spans.push_back({0, 1, 1500, 2750, 2, "compute", false});
    r.spans.push_back({1, 1, 0, 5000, 1, "wait full[1] parity 0", true});
    r.instants.push_back({0, 1600, "full[0] phase 1 complete"});

    r.findings.push_back({"stale_wait", false, 0, 1, 1, "a \"quoted\" warning", {"note one", "note two"}});

    ps::sim::WarpEnd w;
    for (int cta = 0; cta < 2; ++cta)
      for (int warp = 0; warp < 2; ++warp) {
        w.cta = cta;
        w.warp = warp;
        w.role = warp;
        w.status = ps::sim::WarpStatus::Exited;
        w.ops_done = 3;
        if (cta == 1 && warp == 1) {
          w.status = ps::sim::WarpStatus::Blocked;
          w.site = 1;
          w.op.kind = ps::sim::OpKind::Wait;
          w.op.site = 1;
          w.op.bar.array = 0;
          w.op.bar.index = 1;
          w.op.a = 0;
        }
        r.warps.push_back(w);
      }

    // Every CTA: full[0], full[1], empty[0], empty[1]; initial = initialised, pending = expected = 1.
    ps::sim::BarrierState init{true, 0, 1, 1, 0};
    r.barriers.assign(2, std::vector<ps::sim::BarrierState>(4, init));
    r.barriers[0][0] = {true, 1, 1, 1, 0};       // full[0] completed a phase
    r.barriers[1][1] = {true, 0, 0, 1, 1024};    // full[1]: arrived, bytes outstanding
    r.role_waits.push_back({1, "full", 6500});
  }
};

std::vector<json> events_where(const json& trace, const std::string& ph, const std::string& name = {}) {
  std::vector<json> out;
  for (const auto& e : trace.at("traceEvents"))
    if (e.at("ph") == ph && (name.empty() || e.at("name") == name)) out.push_back(e);
  return out;
}

std::set<std::string> names_of(const json& trace, const std::string& meta) {
  std::set<std::string> out;
  for (const auto& e : events_where(trace, "M", meta)) out.insert(e.at("args").at("name").get<std::string>());
  return out;
}

// Complete events on one (pid, tid) must nest: Perfetto rejects partial overlaps.
void expect_properly_nested(const json& trace) {
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> tracks;
  for (const auto& e : events_where(trace, "X")) {
    double b = e.at("ts").get<double>(), d = e.at("dur").get<double>();
    tracks[{e.at("pid").get<int>(), e.at("tid").get<int>()}].push_back({b, b + d});
  }
  for (auto& [key, v] : tracks) {
    std::sort(v.begin(), v.end(), [](auto& x, auto& y) { return x.first != y.first ? x.first < y.first : x.second > y.second; });
    std::vector<double> open;
    for (auto [b, e] : v) {
      while (!open.empty() && open.back() <= b + 1e-9) open.pop_back();
      if (!open.empty()) {
        EXPECT_LE(e, open.back() + 1e-9) << "pid " << key.first << " tid " << key.second;
      }
      open.push_back(e);
    }
  }
}

}  // namespace

TEST(Trace, ValidJsonWithTracksAndEvents) {
  Fixture f;
  const std::string text = ps::verify::perfetto_trace(f.k, f.r);
  json t = json::parse(text);  // throws (test fails) when not valid JSON
  ASSERT_TRUE(t.contains("traceEvents"));
  EXPECT_EQ(t.at("displayTimeUnit"), "ns");

  EXPECT_EQ(names_of(t, "process_name"),
            (std::set<std::string>{"CTA 0 (cluster 0 rank 0)", "CTA 1 (cluster 0 rank 1)"}));
  const auto threads = names_of(t, "thread_name");
  EXPECT_TRUE(threads.count("warp 0 · producer"));
  EXPECT_TRUE(threads.count("warp 1 · consumer"));
  EXPECT_TRUE(threads.count("async unit (TMA, bulk stores)"));
  EXPECT_TRUE(threads.count("async unit (TMA, bulk stores) · lane 2"));  // two loads overlap without nesting
  EXPECT_FALSE(threads.count("async unit (TMA, bulk stores) · lane 3"));
  EXPECT_EQ(events_where(t, "M", "process_sort_index").size(), 2u);
  EXPECT_GE(events_where(t, "M", "thread_sort_index").size(), 6u);

  // Complete events: µs with ns resolution; blocked intervals named by what they wait on.
  EXPECT_EQ(events_where(t, "X").size(), f.r.spans.size());
  auto compute = events_where(t, "X", "compute");
  ASSERT_EQ(compute.size(), 1u);
  EXPECT_DOUBLE_EQ(compute[0].at("ts").get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(compute[0].at("dur").get<double>(), 1.25);
  EXPECT_EQ(compute[0].at("cat"), "run");
  EXPECT_EQ(compute[0].at("args").at("site"), "scenarios/tiny.pss:7:3");
  EXPECT_EQ(compute[0].at("args").at("op"), "compute");
  EXPECT_FALSE(compute[0].at("args").contains("line"));  // kept out of slices: size

  auto waits = events_where(t, "X", "wait full[1] parity 0");
  ASSERT_EQ(waits.size(), 1u);
  EXPECT_EQ(waits[0].at("cat"), "blocked");
  EXPECT_EQ(waits[0].at("args").at("site"), "scenarios/tiny.pss:6:3");
  EXPECT_EQ(waits[0].at("tid"), 2);  // warp 1: tid = warp + 1 (never tid 0)
  EXPECT_DOUBLE_EQ(waits[0].at("dur").get<double>(), 5.0);
  for (const auto& e : events_where(t, "X", "tma 1024 B")) EXPECT_TRUE(e.at("cat") == "async" || e.at("tid") == 1);
  for (const auto& e : t.at("traceEvents")) EXPECT_NE(e.at("tid"), 0);
  expect_properly_nested(t);

  // Phase flips: process-scoped instants.
  auto flips = events_where(t, "i", "full[0] phase 1 complete");
  ASSERT_EQ(flips.size(), 1u);
  EXPECT_EQ(flips[0].at("s"), "p");
  EXPECT_EQ(flips[0].at("cat"), "barrier");
  EXPECT_DOUBLE_EQ(flips[0].at("ts").get<double>(), 1.6);

  // The finding and the hung warp are marked at the end of the run.
  auto finding = events_where(t, "i", "warning: stale_wait");
  ASSERT_EQ(finding.size(), 1u);
  EXPECT_EQ(finding[0].at("s"), "t");
  EXPECT_EQ(finding[0].at("args").at("message"), "a \"quoted\" warning");
  EXPECT_EQ(finding[0].at("args").at("notes").size(), 2u);
  EXPECT_EQ(finding[0].at("args").at("line"), "wait full[1] parity = 0");
  EXPECT_EQ(events_where(t, "i", "hang: blocked in wait").size(), 1u);
}

TEST(Trace, MergesTimelinesWithPidOffsets) {
  Fixture f;
  ps::verify::TraceWriter w;
  const int a = w.add(f.k, f.r, "model");
  const int b = w.add(f.k, f.r, "H100 measured");
  EXPECT_GT(b, a + 1);
  EXPECT_EQ(w.timelines(), 2);
  json t = json::parse(w.str());
  const auto procs = names_of(t, "process_name");
  EXPECT_TRUE(procs.count("model · CTA 0 (cluster 0 rank 0)"));
  EXPECT_TRUE(procs.count("H100 measured · CTA 1 (cluster 0 rank 1)"));
  std::set<int> pids;
  for (const auto& e : events_where(t, "M", "process_name")) pids.insert(e.at("pid").get<int>());
  EXPECT_EQ(pids.size(), 4u);
  EXPECT_EQ(events_where(t, "X").size(), 2 * f.r.spans.size());
  EXPECT_TRUE(t.at("otherData").contains("model"));
  EXPECT_TRUE(t.at("otherData").contains("H100 measured"));
  expect_properly_nested(t);

  // Default order: one timeline above the other; ByCta puts the same CTA of both side by side.
  auto order = [](const json& tr) {
    std::map<int, std::string> name;
    std::vector<std::pair<int64_t, int>> sort;
    for (const auto& e : events_where(tr, "M", "process_name")) name[e.at("pid")] = e.at("args").at("name");
    for (const auto& e : events_where(tr, "M", "process_sort_index"))
      sort.push_back({e.at("args").at("sort_index").get<int64_t>(), e.at("pid").get<int>()});
    std::sort(sort.begin(), sort.end());
    std::vector<std::string> out;
    for (auto& [s, pid] : sort) out.push_back(name[pid].substr(0, name[pid].find(" (")));
    return out;
  };
  EXPECT_EQ(order(t), (std::vector<std::string>{"model · CTA 0", "model · CTA 1", "H100 measured · CTA 0",
                                                "H100 measured · CTA 1"}));
  ps::verify::TraceWriter by_cta(ps::verify::TraceWriter::Stacking::ByCta);
  by_cta.add(f.k, f.r, "model");
  by_cta.add(f.k, f.r, "H100 measured");
  EXPECT_EQ(order(json::parse(by_cta.str())),
            (std::vector<std::string>{"model · CTA 0", "H100 measured · CTA 0", "model · CTA 1",
                                      "H100 measured · CTA 1"}));
}

TEST(Trace, EscapesAndSanitisesText) {
  EXPECT_EQ(ps::verify::json_quote("a\"b\\c\n\x01"), "\"a\\\"b\\\\c\\n\\u0001\"");
  EXPECT_EQ(ps::verify::json_quote("warp · x"), "\"warp · x\"");
  EXPECT_EQ(ps::verify::json_quote(std::string("\xff") + "x"), "\"\\ufffdx\"");
  EXPECT_EQ(ps::verify::json_quote("\xe2\x82"), "\"\\ufffd\\ufffd\"");  // truncated sequence
  Fixture f;
  f.r.spans[0].label = std::string("bad \xc3(") + "\t";
  EXPECT_TRUE(json::accept(ps::verify::perfetto_trace(f.k, f.r)));
}

TEST(Trace, EmptyRunIsValid) {
  ps::sim::Kernel k;
  ps::sim::RunResult r;
  json t = json::parse(ps::verify::perfetto_trace(k, r));
  EXPECT_TRUE(t.at("traceEvents").empty());
}

TEST(JsonReport, SchemaFields) {
  Fixture f;
  ps::verify::CheckResult c;
  c.file = f.k.file;
  c.kernel = f.k;
  c.result = f.r;
  c.matches_expect = true;
  c.wall_ms = 1.25;
  c.report = "hang: ...";
  ps::verify::ReportOptions o;
  o.seed = 7;
  json j = ps::verify::to_json(c, o);

  EXPECT_EQ(j.at("schema"), "pipesim.check/1");
  EXPECT_EQ(j.at("file"), "scenarios/tiny.pss");
  EXPECT_EQ(j.at("kernel"), "tiny");
  EXPECT_EQ(j.at("arch"), "sm_90a");
  EXPECT_EQ(j.at("bad_input"), false);
  EXPECT_TRUE(j.at("diagnostic").is_null());
  EXPECT_EQ(j.at("expect").at("verdict"), "hang");
  EXPECT_TRUE(j.at("expect").at("kind").is_null());
  EXPECT_EQ(j.at("verdict"), "hang");
  EXPECT_EQ(j.at("matches"), true);
  EXPECT_TRUE(j.at("error_kind").is_null());
  EXPECT_EQ(j.at("seed"), 7);
  EXPECT_TRUE(j.at("jitter").is_null());
  EXPECT_DOUBLE_EQ(j.at("predicted_ns").get<double>(), 5000.0);
  EXPECT_EQ(j.at("events"), 42);
  EXPECT_DOUBLE_EQ(j.at("wall_ms").get<double>(), 1.25);
  EXPECT_EQ(j.at("launch").at("cluster"), 2);
  EXPECT_EQ(j.at("params").at("K"), 64);
  EXPECT_EQ(j.at("warps").at("total"), 4);
  EXPECT_EQ(j.at("warps").at("blocked"), 1);
  EXPECT_EQ(j.at("report"), "hang: ...");

  ASSERT_EQ(j.at("findings").size(), 1u);
  const json& fd = j.at("findings")[0];
  EXPECT_EQ(fd.at("kind"), "stale_wait");
  EXPECT_EQ(fd.at("fatal"), false);
  EXPECT_EQ(fd.at("cta"), 0);
  EXPECT_EQ(fd.at("warp"), 1);
  EXPECT_EQ(fd.at("role"), "consumer");
  EXPECT_EQ(fd.at("where"), "scenarios/tiny.pss:6:3");
  EXPECT_EQ(fd.at("line"), 6);
  EXPECT_EQ(fd.at("col"), 3);
  EXPECT_EQ(fd.at("message"), "a \"quoted\" warning");
  EXPECT_EQ(fd.at("notes").size(), 2u);

  ASSERT_EQ(j.at("blocked").size(), 1u);
  const json& b = j.at("blocked")[0];
  EXPECT_EQ(b.at("cta"), 1);
  EXPECT_EQ(b.at("warp"), 1);
  EXPECT_EQ(b.at("role"), "consumer");
  EXPECT_EQ(b.at("status"), "blocked");
  EXPECT_EQ(b.at("where"), "scenarios/tiny.pss:6:3");
  EXPECT_EQ(b.at("barrier").at("name"), "full[1]");
  EXPECT_EQ(b.at("barrier").at("cta"), 1);
  EXPECT_EQ(b.at("parity"), 0);
  EXPECT_EQ(b.at("state").at("phase"), 0);
  EXPECT_EQ(b.at("state").at("pending"), 0);
  EXPECT_EQ(b.at("state").at("expected"), 1);
  EXPECT_EQ(b.at("state").at("tx"), 1024);

  // Small: every barrier listed.
  const json& bars = j.at("barriers");
  EXPECT_EQ(bars.at("policy"), "all");
  EXPECT_EQ(bars.at("total"), 8);
  EXPECT_EQ(bars.at("listed"), 8);
  EXPECT_EQ(bars.at("entries")[2].at("name"), "empty[0]");

  ASSERT_EQ(j.at("role_waits").size(), 1u);
  EXPECT_EQ(j.at("role_waits")[0].at("role"), "consumer");
  EXPECT_TRUE(j.at("hang").is_object());  // verdict hang: present (empty here, built by hand)

  // Large: only what changed.
  o.all_barriers_limit = 4;
  json small = ps::verify::to_json(c, o);
  const json& changed = small.at("barriers");
  EXPECT_EQ(changed.at("policy"), "changed");
  EXPECT_EQ(changed.at("total"), 8);
  ASSERT_EQ(changed.at("listed"), 2);
  EXPECT_EQ(changed.at("entries")[0].at("name"), "full[0]");
  EXPECT_EQ(changed.at("entries")[0].at("cta"), 0);
  EXPECT_EQ(changed.at("entries")[0].at("phase"), 1);
  EXPECT_EQ(changed.at("entries")[1].at("name"), "full[1]");
  EXPECT_EQ(changed.at("entries")[1].at("cta"), 1);
  EXPECT_EQ(changed.at("entries")[1].at("initial"), false);

  // Round trip through text is stable.
  EXPECT_EQ(json::parse(j.dump()), j);
}

TEST(JsonReport, ErrorKindBadInputAndSummary) {
  Fixture f;
  ps::verify::CheckResult err;
  err.file = "e.pss";
  err.kernel = f.k;
  err.kernel.expect = ps::sim::Expectation{ps::sim::Verdict::Error, "pending_underflow", {8, 1}};
  err.result = f.r;
  err.result.verdict = ps::sim::Verdict::Error;
  err.result.findings.push_back({"pending_underflow", true, 1, 0, 0, "arrive beyond pending", {}});
  err.matches_expect = true;
  json je = ps::verify::to_json(err);
  EXPECT_EQ(je.at("verdict"), "error");
  EXPECT_EQ(je.at("error_kind"), "pending_underflow");
  EXPECT_TRUE(je.at("hang").is_null());
  EXPECT_EQ(je.at("expect").at("kind"), "pending_underflow");
  EXPECT_TRUE(je.at("seed").is_null());

  ps::verify::CheckResult bad;
  bad.file = "bad.pss";
  bad.bad_input = true;
  bad.diagnostic = "bad.pss:1:1: error: expected 'kernel'";
  json jb = ps::verify::to_json(bad);
  EXPECT_EQ(jb.at("schema"), "pipesim.check/1");
  EXPECT_EQ(jb.at("bad_input"), true);
  EXPECT_EQ(jb.at("diagnostic"), bad.diagnostic);
  EXPECT_TRUE(jb.at("verdict").is_null());
  EXPECT_TRUE(jb.at("kernel").is_null());
  EXPECT_TRUE(jb.at("findings").empty());
  EXPECT_TRUE(jb.at("blocked").empty());

  std::vector<ps::verify::CheckResult> all{err, bad};
  json js = ps::verify::to_json(std::span<const ps::verify::CheckResult>(all));
  EXPECT_EQ(js.at("schema"), "pipesim.check/1");
  EXPECT_EQ(js.at("results").size(), 2u);
  EXPECT_EQ(js.at("summary").at("scenarios"), 2);
  EXPECT_EQ(js.at("summary").at("matched"), 1);
  EXPECT_EQ(js.at("summary").at("bad_input"), 1);
  EXPECT_EQ(js.at("summary").at("exit_code"), 2);
}

// ------------------------------------------------------------------ end to end
namespace {

const char* kTinyOk = R"(kernel tiny_ok on sm_90a
launch ctas = 2, cluster = 2, threads = 64
pipeline p : tma -> threads, stages = 2, tx = 1024, consumers = 1 warps

role producer warp 0:
  for k in 0 .. 4:
    p.producer_acquire
    tma p
  p.producer_tail

role consumer warp 1:
  for k in 0 .. 4:
    p.consumer_wait
    compute 100 ns
    p.consumer_release

expect ok
)";

const char* kTinyHang = R"(kernel tiny_hang on sm_90a
launch ctas = 1, threads = 32
barrier b count = 1

role waiter warp 0:
  wait b parity = 0

expect hang
)";

}  // namespace

TEST(EndToEnd, TinyOkTraceAndReport) {
  ps::verify::CheckOptions o;
  o.run.record_trace = true;
  o.run.seed = 3;
  auto c = ps::verify::check_text("tiny_ok.pss", kTinyOk, o);
  ASSERT_FALSE(c.bad_input) << c.diagnostic;
  EXPECT_EQ(c.result.verdict, ps::sim::Verdict::Ok) << c.report;

  json t = json::parse(ps::verify::perfetto_trace(c.kernel, c.result));
  const auto threads = names_of(t, "thread_name");
  EXPECT_TRUE(threads.count("warp 0 · producer"));
  EXPECT_TRUE(threads.count("warp 1 · consumer"));
  EXPECT_TRUE(threads.count("async unit (TMA, bulk stores)"));
  EXPECT_EQ(names_of(t, "process_name").size(), 2u);
  EXPECT_FALSE(events_where(t, "X").empty());
  EXPECT_FALSE(events_where(t, "i").empty());  // phase flips
  expect_properly_nested(t);

  ps::verify::ReportOptions ro;
  ro.seed = o.run.seed;
  json j = ps::verify::to_json(c, ro);
  EXPECT_EQ(j.at("schema"), "pipesim.check/1");
  EXPECT_EQ(j.at("kernel"), "tiny_ok");
  EXPECT_EQ(j.at("verdict"), "ok");
  EXPECT_EQ(j.at("matches"), true);
  EXPECT_EQ(j.at("seed"), 3);
  EXPECT_TRUE(j.at("blocked").empty());
  EXPECT_GT(j.at("events").get<uint64_t>(), 0u);
  EXPECT_EQ(j.at("barriers").at("policy"), "all");
  EXPECT_EQ(j.at("barriers").at("total"), 8);  // 2 CTAs x (full[2] + empty[2])
}

TEST(EndToEnd, TinyHangReportNamesTheBarrier) {
  ps::verify::CheckOptions o;
  o.run.record_trace = true;
  auto c = ps::verify::check_text("tiny_hang.pss", kTinyHang, o);
  ASSERT_FALSE(c.bad_input) << c.diagnostic;
  json j = ps::verify::to_json(c);
  EXPECT_EQ(j.at("verdict"), "hang");
  EXPECT_EQ(j.at("matches"), true);
  ASSERT_EQ(j.at("blocked").size(), 1u);
  const json& b = j.at("blocked")[0];
  EXPECT_EQ(b.at("cta"), 0);
  EXPECT_EQ(b.at("warp"), 0);
  EXPECT_EQ(b.at("role"), "waiter");
  EXPECT_EQ(b.at("where"), "tiny_hang.pss:6:3");
  EXPECT_EQ(b.at("barrier").at("name"), "b[0]");
  EXPECT_EQ(b.at("parity"), 0);
  EXPECT_EQ(b.at("state").at("phase"), 0);
  EXPECT_EQ(b.at("state").at("pending"), 1);
  ASSERT_TRUE(j.at("hang").is_object());
  ASSERT_EQ(j.at("hang").at("groups").size(), 1u);
  EXPECT_EQ(j.at("hang").at("groups")[0].at("where"), "tiny_hang.pss:6:3");
  EXPECT_EQ(j.at("hang").at("groups")[0].at("members").size(), 1u);
  EXPECT_TRUE(j.at("hang").at("cycles").is_array());

  json t = json::parse(ps::verify::perfetto_trace(c.kernel, c.result));
  int hang_marks = 0;
  for (const auto& e : events_where(t, "i"))
    if (e.at("name").get<std::string>().rfind("hang: blocked in ", 0) == 0) ++hang_marks;
  EXPECT_EQ(hang_marks, 1);
}

TEST(EndToEnd, BadInputReport) {
  auto c = ps::verify::check_text("bad.pss", "kernel x on sm_77\n", {});
  EXPECT_TRUE(c.bad_input);
  json j = ps::verify::to_json(c);
  EXPECT_EQ(j.at("bad_input"), true);
  EXPECT_NE(j.at("diagnostic").get<std::string>().find("bad.pss:1:"), std::string::npos);
}
