#include "model/text_table.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace pipesim::model {
namespace {

std::string pad_right(const std::string& s, size_t w) { return s.size() >= w ? s : s + std::string(w - s.size(), ' '); }
std::string pad_left(const std::string& s, size_t w) { return s.size() >= w ? s : std::string(w - s.size(), ' ') + s; }

// Display width: count UTF-8 code points, not bytes (× and → are multibyte).
size_t width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

}  // namespace

std::string text_table(const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right) {
  std::vector<size_t> w;
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) {
      if (w.size() <= i) w.push_back(0);
      w[i] = std::max(w[i], width(row[i]));
    }
  std::string out;
  for (const auto& row : rows) {
    std::string line = "  ";
    for (size_t i = 0; i < row.size(); ++i) {
      const size_t extra = row[i].size() - width(row[i]);
      const bool r = i < right.size() && right[i];
      line += r ? pad_left(row[i], w[i] + extra) : pad_right(row[i], w[i] + extra);
      if (i + 1 < row.size()) line += "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string percent_of(int64_t part, int64_t whole) {
  return whole > 0 ? fmt::format("{:.1f} %", 100.0 * static_cast<double>(part) / static_cast<double>(whole)) : "-";
}

}  // namespace pipesim::model
