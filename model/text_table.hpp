// Aligned plain-text tables for the reports (`pipesim budget`): columns padded by display width
// (UTF-8 code points, so × and → count once).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pipesim::model {

// Rows of cells; right[i]: column i is right-aligned. Every line starts with two spaces.
std::string text_table(const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right);

// "12.3 %" of part in whole, "-" when whole is 0.
std::string percent_of(int64_t part, int64_t whole);

}  // namespace pipesim::model
