// Chrome trace-event JSON (opens in ui.perfetto.dev and chrome://tracing) from recorded runs.
//
// Layout, per added timeline:
//   - one process per CTA: "CTA n (cluster c rank r)" (prefixed "label · " when a label is given);
//   - one thread track per warp, named by role: "warp 4 · consumer" (tid = warp + 1: never 0);
//   - unit tracks per CTA for the spans with warp < 0: -1 "async unit (TMA, bulk stores)",
//     -2 "tensor pipe (tcgen05.mma)", -3 "TMEM allocation". Copies overlap, and trace-event slices
//     on one track must nest, so overlapping spans are packed first-fit into lanes: "async unit
//     (TMA, bulk stores)", "... · lane 2", ... (the same packing guards the warp tracks);
//   - complete events ("ph":"X") for spans, ts/dur in microseconds with nanosecond resolution; a
//     blocked interval is named by what it waits on (the span label) and has cat "blocked";
//   - barrier phase flips as process-scoped instant events ("ph":"i", "s":"p", cat "barrier");
//   - findings as instant events at the end of the run on the warp concerned (cat "finding");
//   - args: "site" (file:line:col) and "op" (the site's statement); findings add "line" (the source
//     text), "message" and "notes";
//   - warps without a role that did nothing get no track.
// Several timelines (e.g. the model's and a device-measured one, issue 5) can go into one trace:
// each add() takes the next block of process ids, so they show one above the other in add order.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "sim/engine.hpp"
#include "sim/program.hpp"

namespace pipesim::verify {

class TraceWriter {
 public:
  // How the processes of several timelines are ordered: every CTA of the first timeline, then
  // every CTA of the second (ByTimeline), or CTA 0 of each timeline, then CTA 1 of each (ByCta:
  // the same CTA of the model and of a device run next to each other).
  enum class Stacking : uint8_t { ByTimeline, ByCta };
  explicit TraceWriter(Stacking stacking = Stacking::ByTimeline) : stacking_(stacking) {}

  // Adds one timeline. `label` prefixes its process names ("model", "H100 measured"); empty: none.
  // Returns the first process id it used (CTA n is pid first + n).
  int add(const sim::Kernel& kernel, const sim::RunResult& result, std::string_view label = {});

  // The complete trace: {"traceEvents":[...],"displayTimeUnit":"ns","otherData":{...}}.
  std::string str() const;

  int timelines() const { return timelines_; }
  uint64_t event_count() const { return events_; }

 private:
  std::string body_;        // comma-separated events, without the enclosing array
  std::string other_data_;  // comma-separated "key":value members of otherData
  Stacking stacking_;
  int next_pid_ = 1;
  int timelines_ = 0;
  uint64_t events_ = 0;
};

// One run as a trace: TraceWriter{}.add(kernel, result).str().
std::string perfetto_trace(const sim::Kernel& kernel, const sim::RunResult& result);

// JSON string literal (with quotes) for any UTF-8 text; invalid bytes become U+FFFD.
std::string json_quote(std::string_view s);

}  // namespace pipesim::verify
