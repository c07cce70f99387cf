// The weights digest a finished run records in its summary.json: two runs with the same digest
// ended with the same weights, bit for bit.
#pragma once

#include <string>

#include "test_support.hpp"

namespace ffcv::test {

// RUN_DIR/summary.json's "weights_digest", or "" when the summary has none.
inline std::string weights_digest_of(const std::string& run_dir) {
  const std::string summary = text_of(run_dir + "/summary.json");
  const std::string needle = "\"weights_digest\": \"";
  const std::size_t at = summary.find(needle);
  if (at == std::string::npos) return "";
  const std::size_t begin = at + needle.size();
  return summary.substr(begin, summary.find('"', begin) - begin);
}

}  // namespace ffcv::test
