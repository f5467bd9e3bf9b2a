// The tables an untimed run shares with its copies (sim/untimed_tables.hpp).
#include "sim/untimed_tables.hpp"

#include <algorithm>

namespace pipesim::sim::detail {

bool WordTable::find(std::span<const uint64_t> key, uint64_t h, std::span<const uint64_t>& value) const {
  if (slots_.empty()) return false;
  const uint64_t want = stored(h);
  for (size_t i = home(want);; i = (i + 1) & (slots_.size() - 1)) {
    const Slot& s = slots_[i];
    if (s.hash == 0) return false;
    if (s.hash != want || s.key_words != key.size()) continue;
    const uint64_t* at = pool_.data() + s.at;
    if (!std::equal(key.begin(), key.end(), at)) continue;
    value = {at + s.key_words, s.value_words};
    return true;
  }
}

void WordTable::insert(std::span<const uint64_t> key, uint64_t h, std::span<const uint64_t> value) {
  if (2 * (used_ + 1) > slots_.size()) grow();
  const uint64_t want = stored(h);
  size_t i = home(want);
  while (slots_[i].hash != 0) i = (i + 1) & (slots_.size() - 1);
  slots_[i] = {want, static_cast<uint32_t>(pool_.size()), static_cast<uint32_t>(key.size()), static_cast<uint32_t>(value.size())};
  pool_.insert(pool_.end(), key.begin(), key.end());
  pool_.insert(pool_.end(), value.begin(), value.end());
  ++used_;
}

void WordTable::grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(std::max<size_t>(1024, 2 * old.size()), Slot{});
  for (const Slot& s : old) {
    if (s.hash == 0) continue;
    size_t i = home(s.hash);
    while (slots_[i].hash != 0) i = (i + 1) & (slots_.size() - 1);
    slots_[i] = s;
  }
}

bool PersistentSetMemo::recall(const Key& key, std::vector<size_t>& set) {
  std::span<const uint64_t> found;
  if (!sets.find(key, WordTable::hash(key), found)) return false;
  set.assign(found.begin(), found.end());
  return true;
}

void PersistentSetMemo::remember(const Key& key, const std::vector<size_t>& set) {
  if (sets.words() >= kMaxWords) sets.clear();
  static_assert(sizeof(size_t) == sizeof(uint64_t), "a set's indices are stored as words");
  sets.insert(key, WordTable::hash(key), {reinterpret_cast<const uint64_t*>(set.data()), set.size()});
}

void PersistentSetMemo::append(const Footprint& f, Key& out) {
  static_assert(static_cast<int>(Footprint::Object::CtaGroup) < 16, "a touch's object leaves bits 60-63 free");
  out.push_back(static_cast<uint64_t>(f.everything) | static_cast<uint64_t>(f.sorted) << 1 | f.touches.size() << 2);
  for (const Footprint::Touch& t : f.touches)
    out.push_back(t.object | static_cast<uint64_t>(t.access) << 60 | static_cast<uint64_t>(t.last_exit) << 62);
}

uint32_t PersistentSetMemo::future_id(const Footprint& f) {
  Key k;
  append(f, k);
  const uint64_t h = WordTable::hash(k);
  std::span<const uint64_t> id;
  if (futures.find(k, h, id)) return static_cast<uint32_t>(id[0]);
  const uint64_t next = futures_seen++;
  futures.insert(k, h, {&next, 1});
  return static_cast<uint32_t>(next);
}

ProgramPoint& ProgramPoints::operator[](uint64_t key) {
  size_t i = static_cast<size_t>(key) & (slots_.size() - 1);
  for (; slots_[i].index != 0; i = (i + 1) & (slots_.size() - 1))
    if (slots_[i].key == key) return points_[slots_[i].index - 1];
  if (2 * (points_.size() + 1) > slots_.size()) {
    grow();
    return (*this)[key];
  }
  points_.emplace_back();
  slots_[i] = {key, static_cast<uint32_t>(points_.size())};
  return points_.back();
}

void ProgramPoints::grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(2 * old.size(), Slot{});
  for (const Slot& s : old) {
    if (s.index == 0) continue;
    size_t i = static_cast<size_t>(s.key) & (slots_.size() - 1);
    while (slots_[i].index != 0) i = (i + 1) & (slots_.size() - 1);
    slots_[i] = s;
  }
}

}  // namespace pipesim::sim::detail
