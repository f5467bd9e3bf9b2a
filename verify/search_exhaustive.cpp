// The exhaustive search (verify/search.hpp): depth first over the choices of sim::UntimedRun, each
// state kept as its 64-bit hash (hash compaction, as SPIN's -DHC: a collision can hide a state, with
// probability about n^2 / 2^65 for n states, which the report prints). A frame of the stack holds a
// copy of the engine at a choice point while children are left to explore from it; a child is that
// copy with one choice taken, and the last child takes the frame's copy itself. A dive into fresh
// memory keeps a copy only every kCheckpointEvery frames; the frames between replay their path from
// it when the search comes back to them.
#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iterator>
#include <new>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>

#include <sys/mman.h>

#include <fmt/format.h>

#include "sim/explain.hpp"
#include "verify/report.hpp"
#include "verify/search.hpp"

namespace pipesim::verify {
namespace {

// A line of /proc/self/status in KiB ("VmHWM:" the peak resident memory, "VmRSS:" now); 0 where it
// cannot be read.
uint64_t proc_status_kib(std::string_view key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with(key)) return std::strtoull(line.c_str() + key.size(), nullptr, 10);
  return 0;
}

// A scenario's line:col; a PTX kernel's source line (and its callers) with the PTX line.
std::string site_at(const sim::Kernel& k, uint32_t site) {
  if (site >= k.sites.size()) return "?";
  const sim::Site& s = k.sites[site];
  if (!s.origin.empty()) return fmt::format("{} (PTX line {})", sim::short_origin(s.origin), s.loc.line);
  return fmt::format("{}:{}", s.loc.line, s.loc.col);
}

std::string warp_name(const sim::Kernel& k, int cta, int warp, int role) {
  std::string s = fmt::format("CTA {} warp {}", cta, warp);
  if (role >= 0 && static_cast<size_t>(role) < k.roles.size()) s += " (" + k.roles[static_cast<size_t>(role)].name + ")";
  return s;
}

// One line of a trail, for people.
std::string choice_text(const sim::Kernel& k, const sim::UntimedRun::Choice& c) {
  using Kind = sim::UntimedRun::Choice::Kind;
  const std::string what = c.site < k.sites.size() ? k.sites[c.site].what : std::string(sim::op_name(c.op));
  const std::string on = c.barrier.empty() ? "" : " " + c.barrier;
  switch (c.kind) {
    case Kind::Op:
      // A PTX warp that ran its step's budget without synchronising (a spin) is a choice too.
      if (c.op == sim::OpKind::Compute)
        return fmt::format("{}: runs on without synchronising, to {}", warp_name(k, c.cta, c.warp, c.role), site_at(k, c.site));
      return fmt::format("{}: `{}`{} at {}", warp_name(k, c.cta, c.warp, c.role), what, on, site_at(k, c.site));
    case Kind::Land:
      return fmt::format("the copy from CTA {} warp {} (`{}` at {}) lands on{} of CTA {}", c.from_cta, c.from_warp, what,
                         site_at(k, c.site), on, c.cta);
    case Kind::Remote:
      return fmt::format("`{}` from CTA {} warp {} (at {}) reaches{} of CTA {}", what, c.from_cta, c.from_warp, site_at(k, c.site), on, c.cta);
    case Kind::Commit:
      return fmt::format("the tcgen05.commit from CTA {} warp {} (at {}) arrives on{} of CTA {}", c.from_cta, c.from_warp,
                         site_at(k, c.site), on, c.cta);
  }
  return what;
}

// `n` zeroed T in memory the kernel may back with 2 MiB pages (MADV_HUGEPAGE), for a table probed at
// random: on 4 KiB pages each probe of the visited states missed the TLB, and the page walk held up
// its prefetch (6 % of the ws protocol's search at 512 tiles). T: trivially copyable, its zero bytes
// a valid (empty) value.
template <class T>
class ZeroedPages {
 public:
  static_assert(std::is_trivially_copyable_v<T>);
  explicit ZeroedPages(size_t n) : n_(n), bytes_(n * sizeof(T) + kHugePage) {
    void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    base_ = p;
    // From the first 2 MiB boundary: only whole aligned huge pages can be backed by one.
    const uintptr_t aligned = (reinterpret_cast<uintptr_t>(p) + kHugePage - 1) & ~(kHugePage - 1);
    data_ = reinterpret_cast<T*>(aligned);
#ifdef MADV_HUGEPAGE
    madvise(data_, n * sizeof(T), MADV_HUGEPAGE);  // advice only: without it the pages stay small
#endif
  }
  ZeroedPages(ZeroedPages&& o) noexcept { swap(o); }
  ZeroedPages& operator=(ZeroedPages&& o) noexcept {
    swap(o);
    return *this;
  }
  ~ZeroedPages() {
    if (base_) munmap(base_, bytes_);
  }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  size_t size() const { return n_; }

 private:
  static constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
  void swap(ZeroedPages& o) noexcept {
    std::swap(n_, o.n_);
    std::swap(bytes_, o.bytes_);
    std::swap(base_, o.base_);
    std::swap(data_, o.data_);
  }
  size_t n_ = 0, bytes_ = 0;
  void* base_ = nullptr;
  T* data_ = nullptr;
};

// The visited states: 64-bit hash -> the sleep set the state was explored with. One open-addressing
// table and one pool of choice ids, so a new state costs no allocation of its own (a node-based map
// allocated a node and a vector per state).
class VisitedStates {
 public:
  struct Sleep { const uint64_t* begin; const uint64_t* end; };
  explicit VisitedStates(size_t expected) : slots_(std::bit_ceil(std::max<size_t>(expected * 2, 1024))) {}
  // Inserts `hash` with `sleep` and returns true, or returns false and leaves `slot` at the stored one.
  bool insert(uint64_t hash, const std::vector<uint64_t>& sleep, size_t& slot) {
    if (2 * (used_ + 1) > slots_.size()) grow();
    slot = find(hash);
    if (slots_[slot].key != 0) return false;
    slots_[slot] = {key_of(hash), static_cast<uint32_t>(pool_.size()), static_cast<uint32_t>(sleep.size())};
    pool_.insert(pool_.end(), sleep.begin(), sleep.end());
    ++used_;
    return true;
  }
  // Starts loading `hash`'s first slot: a probe of a table of millions of states misses the cache,
  // and the caller has work to do meanwhile.
  void prefetch(uint64_t hash) const { __builtin_prefetch(&slots_[static_cast<size_t>(key_of(hash)) & (slots_.size() - 1)]); }
  Sleep stored(size_t slot) const {
    const uint64_t* b = pool_.data() + slots_[slot].offset;
    return {b, b + slots_[slot].size};
  }
  // Replaces the stored set with a subset of it (in place).
  void shrink(size_t slot, const std::vector<uint64_t>& subset) {
    std::copy(subset.begin(), subset.end(), pool_.begin() + slots_[slot].offset);
    slots_[slot].size = static_cast<uint32_t>(subset.size());
  }

 private:
  struct Slot { uint64_t key = 0; uint32_t offset = 0, size = 0; };
  static uint64_t key_of(uint64_t hash) { return hash == 0 ? 1 : hash; }  // 0 marks an empty slot
  size_t find(uint64_t hash) const {
    const uint64_t key = key_of(hash);
    size_t i = static_cast<size_t>(key) & (slots_.size() - 1);
    while (slots_[i].key != 0 && slots_[i].key != key) i = (i + 1) & (slots_.size() - 1);
    return i;
  }
  void grow() {
    const ZeroedPages<Slot> old = std::exchange(slots_, ZeroedPages<Slot>(2 * slots_.size()));
    for (size_t i = 0; i < old.size(); ++i)
      if (old[i].key != 0) slots_[find(old[i].key)] = old[i];
  }
  ZeroedPages<Slot> slots_;
  std::vector<uint64_t> pool_;
  size_t used_ = 0;
};

}  // namespace

// The partial-order reduction (sim/explore.hpp Footprint; off with ExhaustiveBounds::partial_order):
//  - Sleep sets (Godefroid): after choice t was explored from a state, a later sibling u independent of
//    t carries t asleep into its subtree, where t is not taken until a choice dependent on it is (every
//    order of t and what commutes with it was covered under t). With state caching the standard way:
//    each visited state keeps the sleep set it was explored with; a revisit with a smaller sleep set
//    explores the choices in stored \ current and stores the intersection.
//  - Persistent sets (UntimedRun::persistent_set): where a subset T of the choices is closed under
//    conflicts with everything the other warps and events may still do, only T \ Z is taken (Z: the
//    sleep set). A revisit that wakes choices takes them as well, so what a state had taken covers
//    T \ Z' for its smallest sleep set Z' yet. Conditions: the state graph has no cycles (every choice runs an op
//    or lands an event; the one that may re-poll, a cluster arrive, is never in a reduced set), and a
//    choice that ends the run (a fault) would hide what the others lead to: when a child of a reduced
//    state has ended, every choice of the state is explored. Members of the set that are asleep are
//    not taken (T \ Z); one of them that would fault here faults as it did where it was taken
//    before (nothing it reads changed, or it would have woken), which ended the search unless that
//    fault is the plain run's own verdict, so persistent sets are used only when the plain run does
//    not fault.
ExhaustiveResult exhaustive_search(const sim::Kernel& kernel, const sim::RunOptions& base, const ExhaustiveBounds& bounds,
                                   const std::function<void(uint64_t, uint64_t)>& progress) {
  const auto start = std::chrono::steady_clock::now();
  const auto elapsed_s = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  ExhaustiveResult res;
  res.partial_order = bounds.partial_order;
  {
    sim::RunOptions o = base;
    o.record_trace = false;
    res.baseline = outcome_text(sim::run(kernel, o));
  }
  // Persistent sets only where the plain run did not fault (see above).
  const bool persistent = !res.baseline.starts_with("error");
  using Ids = std::vector<uint64_t>;  // choice ids, sorted
  struct Frame {
    std::optional<sim::UntimedRun> run;  // moved into the last child explored from here
    size_t open = 0, next = 0;
    Ids ids;                             // per choice (with the reduction)
    std::vector<sim::Footprint> prints;  // per choice (with the reduction)
    Ids sleep;                           // asleep here: not taken
    std::vector<uint8_t> todo;           // per choice: to explore from here
    std::vector<size_t> done;            // choices explored from here so far
    bool reduced = false;                // only a persistent set is explored
    std::optional<size_t> moved_by;      // the choice whose child took the run (next may move on since)
    // The choice on the current path (the one explored last from here).
    size_t on_path() const { return moved_by ? *moved_by : next - 1; }
    // Ready for a state with n choices. A frame is reused at its depth and its vectors keep their
    // capacity (allocating them afresh was a third of the search's allocations); prints keeps its
    // footprints too, whose touches are refilled in place (only the first n count).
    void reset(size_t n) {
      run.reset();
      open = n;
      next = 0;
      ids.clear();
      if (prints.size() < n) prints.resize(n);
      sleep.clear();
      todo.assign(n, 1);
      done.clear();
      reduced = false;
      moved_by.reset();
    }
  };
  std::vector<Frame> stack;  // stack[0, depth) is the current path; frames past it wait to be reused
  size_t depth = 0;
  VisitedStates seen(static_cast<size_t>(std::min<uint64_t>(bounds.max_states, 1u << 16)));
  const auto asleep = [](const Ids& z, uint64_t id) { return std::binary_search(z.begin(), z.end(), id); };
  const auto remaining = [](const Frame& f) {
    size_t n = 0;
    for (size_t i = f.next; i < f.open; ++i) n += f.todo[i] && !std::binary_search(f.sleep.begin(), f.sleep.end(), f.ids.empty() ? 0 : f.ids[i]);
    return n;
  };
  // A state just reached with sleep set `sleep`: pushed when it has choices to explore; an ended run's
  // outcome is judged here, and one that differs ends the search.
  bool found = false;
  Ids left, both;  // a revisit's (kept for their capacity)
  std::vector<uint8_t> sleeping;  // a fresh state's choices asleep, and its persistent set (likewise)
  std::vector<size_t> set;
  // Runs the search is done with, kept to copy the next children into: a copy assigned into a
  // finished run reuses what it had allocated (copying and freeing runs was a fifth of the search).
  constexpr size_t kSpareRuns = 64;
  std::vector<sim::UntimedRun> spares;
  const auto recycle = [&](sim::UntimedRun&& run) {
    if (spares.size() < kSpareRuns) spares.push_back(std::move(run));
  };
  const auto copy_of = [&](const sim::UntimedRun& run) {
    if (spares.empty()) return sim::UntimedRun(run);
    sim::UntimedRun copy = std::move(spares.back());
    spares.pop_back();
    copy = run;
    return copy;
  };
  // `run` is kept by the frame it is pushed in, or recycled.
  const auto arrive = [&](sim::UntimedRun&& run, size_t open, const Ids& sleep) {
    const uint64_t hash = run.state_hash();
    seen.prefetch(hash);
    // The frame this state would be pushed in, filled while the table's slot loads: the choices' ids
    // and footprints (wasted only on a revisit with nothing left to explore).
    if (open > 0) {
      if (depth == stack.size()) stack.emplace_back();
      Frame& f = stack[depth];
      f.reset(open);
      if (bounds.partial_order)
        for (size_t i = 0; i < open; ++i) {
          f.ids.push_back(run.choice_id(i));
          run.footprint(i, f.prints[i]);
        }
    }
    size_t slot = 0;
    const bool fresh = seen.insert(hash, sleep, slot);
    if (!fresh) {
      // Explored before with sleep set Z: only what slept then and is awake now is left to explore.
      const VisitedStates::Sleep stored = seen.stored(slot);
      left.clear();
      both.clear();
      std::set_difference(stored.begin, stored.end, sleep.begin(), sleep.end(), std::back_inserter(left));
      ++res.revisits;
      if (left.empty()) return recycle(std::move(run));
      std::set_intersection(stored.begin, stored.end, sleep.begin(), sleep.end(), std::back_inserter(both));
      seen.shrink(slot, both);
    } else {
      ++res.states;
    }
    if (open == 0) {
      ++res.schedules;
      sim::RunResult r = std::move(run).finish();
      const std::string outcome = outcome_text(r);
      ++res.outcomes[outcome];
      if (outcome != res.baseline && !found) {
        found = true;
        res.outcome = outcome;
        res.result = std::move(r);
        // The trail's steps, described on a replay of the path: describing every choice as its run
        // moved on (in case a trail was wanted) was 3 % of the search.
        sim::UntimedRun replay(kernel, base);
        replay.settle();
        for (size_t d = 0; d < depth; ++d) {
          const Frame& f = stack[d];
          res.trail.push_back(TrailStep{replay.describe(f.on_path()), f.on_path(), f.open});
          replay.take(f.on_path());
          replay.settle();
        }
      }
      return recycle(std::move(run));
    }
    Frame& f = stack[depth++];
    f.run.emplace(std::move(run));
    f.sleep.assign(sleep.begin(), sleep.end());
    if (!fresh)
      for (size_t i = 0; i < open; ++i) f.todo[i] = asleep(left, f.run->choice_id(i));
    if (bounds.partial_order) {
      if (fresh && open > 1 && persistent) {
        sleeping.resize(open);
        for (size_t i = 0; i < open; ++i) sleeping[i] = asleep(f.sleep, f.ids[i]);
        f.run->persistent_set(f.prints, sleeping, set);
        if (!set.empty()) {
          std::fill(f.todo.begin(), f.todo.end(), 0);
          for (size_t i : set) f.todo[i] = 1;
          f.reduced = true;
          res.pruned_persistent += open - set.size();
        }
      }
    }
    res.max_depth = std::max(res.max_depth, depth - 1);
  };
  {
    sim::UntimedRun root(kernel, base);
    const size_t open = root.settle();
    arrive(std::move(root), open, {});
  }
  // Checkpoints: in a dive that would copy each run into fresh memory (no spare run left), a frame
  // keeps its own copy only where the nearest copy above it is kCheckpointEvery frames up or more; the
  // frames between hand their run to their child, and rebuild it when the search comes back to them
  // by replaying the path from that copy. The first dive of the ws protocol at 256 tiles held 6,127
  // copies at once, and first touching their fresh memory was most of the search's page faults.
  // The copies a rebuild keeps come from the spare runs: at 128 frames most were fresh again.
  constexpr size_t kCheckpointEvery = 32;
  static_assert(kCheckpointEvery < kSpareRuns);
  // How many frames up from frame d the nearest copy of the run is (SIZE_MAX: none).
  const auto frames_from_copy = [&](size_t d) {
    for (size_t up = 1; up <= std::min(d, kCheckpointEvery); ++up)
      if (stack[d - up].run) return up;
    return SIZE_MAX;
  };
  // Frame d's run, replayed along the path from the nearest copy above it (from the launch if none);
  // the frames passed on the way that have more to explore keep a copy too (they are next).
  const auto rebuild = [&](size_t d) {
    size_t from = d;
    while (from > 0 && !stack[from - 1].run) --from;
    std::optional<sim::UntimedRun> run;
    if (from == 0) {
      run.emplace(kernel, base);
      run->settle();
    } else {
      run.emplace(copy_of(*stack[from - 1].run));
      --from;
    }
    for (size_t at = from; at < d; ++at) {
      run->take(stack[at].on_path());
      run->settle();
      Frame& passed = stack[at + 1];
      if (at + 1 < d && !passed.run && remaining(passed) > 0) {
        passed.run.emplace(copy_of(*run));
        passed.moved_by.reset();
      }
    }
    stack[d].run = std::move(run);
    stack[d].moved_by.reset();
  };
  uint64_t polls = 0;
  double memory_read_s = -1;  // when the resident memory was last read (never: -1)
  Ids sleep;  // the next child's sleep set (kept for its capacity)
  while (depth > 0 && !found) {
    if ((++polls & 255) == 0) {
      if (progress) progress(res.states, bounds.max_states);
      const double now_s = elapsed_s();
      if (bounds.max_seconds > 0 && now_s >= bounds.max_seconds) {
        res.stopped_by = "seconds";
        break;
      }
      // Reading /proc costs tens of microseconds (4 % of the search at every 256 steps): the memory is
      // read at most every 10 ms.
      if (bounds.max_memory_mib > 0 && (memory_read_s < 0 || now_s >= memory_read_s + 0.01)) {
        memory_read_s = now_s;
        if (proc_status_kib("VmRSS:") / 1024 >= bounds.max_memory_mib) {
          res.stopped_by = "memory";
          break;
        }
      }
    }
    if (res.states >= bounds.max_states) {
      res.stopped_by = "states";
      break;
    }
    Frame& top = stack[depth - 1];
    while (top.next < top.open && (!top.todo[top.next] || (!top.ids.empty() && asleep(top.sleep, top.ids[top.next])))) {
      if (top.todo[top.next]) ++res.pruned_sleep;
      ++top.next;
    }
    if (top.next == top.open) {
      if (top.run) recycle(std::move(*top.run));
      top.run.reset();
      --depth;
      continue;
    }
    const size_t i = top.next++;
    // The children's sleep set: what sleeps here or was explored from here, and commutes with i.
    sleep.clear();
    if (bounds.partial_order) {
      const auto index_of = [&](uint64_t id) { return static_cast<size_t>(std::find(top.ids.begin(), top.ids.end(), id) - top.ids.begin()); };
      for (uint64_t z : top.sleep)
        if (const size_t j = index_of(z); j < top.open && !top.prints[j].conflicts(top.prints[i])) sleep.push_back(z);
      for (size_t j : top.done)
        if (!top.prints[j].conflicts(top.prints[i])) sleep.push_back(top.ids[j]);
      std::sort(sleep.begin(), sleep.end());
      sleep.erase(std::unique(sleep.begin(), sleep.end()), sleep.end());
      top.done.push_back(i);
    }
    if (!top.run) rebuild(depth - 1);  // handed to a child, and more is to be explored here
    // The last child explored from here takes the run itself (no copy), and the frame remembers which
    // choice it was. So does the last member of a persistent set, and a child of a frame between
    // checkpoints while no spare run is left to copy into.
    const bool last = remaining(top) == 0;
    const bool hand_over = last || (spares.empty() && frames_from_copy(depth - 1) < kCheckpointEvery);
    std::optional<sim::UntimedRun> moved;
    if (hand_over) {
      top.moved_by = i;
      moved.emplace(std::move(*top.run));
      top.run.reset();
    }
    sim::UntimedRun child = hand_over ? std::move(*moved) : copy_of(*top.run);
    child.take(i);
    ++res.transitions;
    const size_t open = child.settle();
    if (top.reduced && open == 0) {
      // A choice of the persistent set ended the run: every other choice of the state is explored after
      // all. (With a plain run that does not fault, which persistent sets require, such an end is a
      // fault or a stop, whose outcome differs and ends the search; this keeps the search sound should
      // another end ever come here.)
      size_t left_out = 0;
      for (uint8_t t : top.todo) left_out += !t;
      std::fill(top.todo.begin(), top.todo.end(), 1);
      for (size_t j : top.done) top.todo[j] = 0;
      top.next = 0;
      top.reduced = false;
      res.pruned_persistent -= left_out;
    }
    if (!top.run && remaining(top) == 0) top.next = top.open;  // nothing is left to explore here
    arrive(std::move(child), open, sleep);
  }
  res.complete = !found && res.stopped_by.empty();
  res.seconds = elapsed_s();
  res.peak_rss_kib = proc_status_kib("VmHWM:");
  return res;
}

std::string trail_text(const std::vector<TrailStep>& trail) {
  std::string s;
  for (size_t d = 0; d < trail.size(); ++d)
    if (trail[d].index != 0) s += fmt::format("{}{}:{}", s.empty() ? "" : ",", d, trail[d].index);
  return s.empty() ? "0" : s;
}

std::optional<sim::RunResult> replay_trail(const sim::Kernel& kernel, const sim::RunOptions& base, const std::string& trail,
                                           std::string& error) {
  std::map<size_t, size_t> pick;  // depth -> choice index
  if (trail != "0") {
    size_t at = 0;
    while (at <= trail.size()) {
      const size_t comma = std::min(trail.find(',', at), trail.size());
      const std::string item = trail.substr(at, comma - at);
      const size_t colon = item.find(':');
      const auto digits = [](const std::string& s) {
        return !s.empty() && s.size() < 10 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
      };
      if (colon == std::string::npos || !digits(item.substr(0, colon)) || !digits(item.substr(colon + 1))) {
        error = fmt::format("--trail {}: `{}` is not DEPTH:CHOICE (whole numbers); expected the form the search printed, e.g. 3:1,17:2", trail, item);
        return std::nullopt;
      }
      pick[std::stoul(item.substr(0, colon))] = std::stoul(item.substr(colon + 1));
      at = comma + 1;
    }
  }
  sim::UntimedRun run(kernel, base);
  for (size_t depth = 0;; ++depth) {
    const size_t open = run.settle();
    if (open == 0) break;
    const auto it = pick.find(depth);
    const size_t i = it == pick.end() ? 0 : it->second;
    if (i >= open) {
      error = fmt::format("--trail: choice {} at depth {} does not exist ({} open there): the trail belongs to another scenario or version", i,
                          depth, open);
      return std::nullopt;
    }
    run.take(i);
  }
  return std::move(run).finish();
}

std::string exhaustive_report(const CheckResult& checked, const ExhaustiveResult& s, const std::string& file, const std::string& flags) {
  std::string outcomes;
  for (const auto& [what, n] : s.outcomes) outcomes += fmt::format("{}{} x{}", outcomes.empty() ? "" : ", ", what, n);
  // Hash compaction: the chance that two of n distinct states share a 64-bit hash.
  const double n = static_cast<double>(s.states);
  const std::string covered = fmt::format(
      "{} states, {} transitions ({} to states seen before), {} end states [{}], deepest schedule {} choices; {:.2f} s, {:.0f} states/s, "
      "peak memory {} MiB; {}; hash compaction: P(a state missed) < {:.1e}",
      s.states, s.transitions, s.revisits, s.schedules, outcomes, s.max_depth, s.seconds, s.seconds > 0 ? n / s.seconds : 0.0,
      s.peak_rss_kib / 1024,
      s.partial_order ? fmt::format("partial-order reduction: {} choices asleep, {} outside persistent sets", s.pruned_sleep, s.pruned_persistent)
                      : std::string("no partial-order reduction (--search-por off)"),
      n * n / std::ldexp(1.0, 65));
  if (s.trail.empty() && s.outcome.empty()) {
    if (s.complete)
      return fmt::format("search exhaustive: no interleaving changes the verdict `{}` ({}; every interleaving of synchronising actions explored)\n",
                         s.baseline, covered);
    return fmt::format("search exhaustive: no interleaving within the bound changes the verdict `{}` ({}; stopped by the {} bound: "
                       "raise --search-states / --search-seconds / --search-memory to go on)\n",
                       s.baseline, covered, s.stopped_by);
  }
  std::string out = fmt::format("search exhaustive: a schedule of {} choices changes the verdict `{}` to `{}` ({}):\n", s.trail.size(),
                                s.baseline, s.outcome, covered);
  // The trail: the last choices matter most; the replay command carries every one.
  constexpr size_t kShown = 40;
  const size_t first = s.trail.size() > kShown ? s.trail.size() - kShown : 0;
  if (first > 0) out += fmt::format("  ... {} earlier choices (the replay below takes them all)\n", first);
  for (size_t d = first; d < s.trail.size(); ++d)
    out += fmt::format("  {:>4}. {}{}\n", d, choice_text(checked.kernel, s.trail[d].choice),
                       s.trail[d].index == 0 ? "" : fmt::format("  [choice {} of {}]", s.trail[d].index + 1, s.trail[d].open));
  out += fmt::format("  again: pipesim check {}{} --trail {}\n", file, flags, trail_text(s.trail));
  out += "  (untimed: the times in this report are not a prediction)\n";
  return out + indented_report(checked, s.result);
}

}  // namespace pipesim::verify
