#include "write_report.hpp"

#include <algorithm>
#include <filesystem>

#include "ffcv/util/json_text.hpp"
#include "ffcv/util/text_file.hpp"
#include "source_report.hpp"

namespace ffcv::tools {
namespace {

std::uint64_t reencoded(const EncodeTally& tally) {
  std::uint64_t total = 0;
  for (std::size_t r = 0; r < tally.stored_jpegs.size(); ++r) {
    if (r != static_cast<std::size_t>(ReencodeReason::kNone)) total += tally.stored_jpegs[r];
  }
  return total;
}

std::string seconds(double value) { return json_number(value, 3); }

}  // namespace

std::string encode_tally_json(const EncodeTally& tally) {
  std::string out =
      "{\"dct_scaled\": " + std::to_string(tally.dct_scaled) + ", \"stored_jpegs\": {";
  for (std::size_t r = 0; r < tally.stored_jpegs.size(); ++r) {
    out += (r ? ", " : "") + json_quote(reencode_reason_name(static_cast<ReencodeReason>(r))) +
           ": " + std::to_string(tally.stored_jpegs[r]);
  }
  return out + "}}";
}

std::string write_summary_json(const std::string& output, const WriteSummary& summary) {
  const WriteStageSeconds& stages = summary.stages;
  const EncodeTally& tally = summary.tally;
  const double wall = std::max(summary.seconds, 1e-9);
  const double worker_time = wall * std::max(summary.workers, 1);
  return "{\"output\": " + json_quote(output) +
         ", \"samples\": " + std::to_string(summary.num_samples) +
         ", \"skipped\": " + std::to_string(summary.skipped) +
         ", \"pages\": " + std::to_string(summary.num_pages) +
         ", \"page_size\": " + std::to_string(summary.page_size) +
         ", \"file_bytes\": " + std::to_string(summary.file_size) +
         ", \"seconds\": " + seconds(summary.seconds) +
         ", \"samples_per_s\": " + json_number(summary.num_samples / wall, 1) +
         ", \"workers\": " + std::to_string(summary.workers) +
         ", \"stages\": {\"load\": " + seconds(stages.load) +
         ", \"encode\": " + seconds(stages.encode) +
         ", \"decode\": " + seconds(tally.decode_seconds) +
         ", \"resize\": " + seconds(tally.resize_seconds) +
         ", \"compress\": " + seconds(tally.compress_seconds) +
         ", \"check\": " + seconds(tally.check_seconds) + ", \"place\": " + seconds(stages.place) +
         ", \"committer_wait\": " + seconds(stages.committer_wait) +
         ", \"finish\": " + seconds(stages.finish) + "}, \"busy\": {\"workers\": " +
         json_number((stages.load + stages.encode) / worker_time, 3) +
         ", \"committer\": " + json_number(stages.place / wall, 3) +
         "}, \"images\": " + encode_tally_json(tally) + "}";
}

std::string stored_jpegs_line(const EncodeTally& tally) {
  const std::uint64_t again = reencoded(tally);
  if (tally.kept_as_is() + again == 0) return "";
  std::string out = "source JPEGs: " + std::to_string(tally.kept_as_is()) + " kept as they came, " +
                    std::to_string(again) + " encoded again";
  std::string reasons;
  for (std::size_t r = 0; r < tally.stored_jpegs.size(); ++r) {
    if (r == static_cast<std::size_t>(ReencodeReason::kNone) || tally.stored_jpegs[r] == 0) {
      continue;
    }
    reasons += (reasons.empty() ? "" : ", ") + std::to_string(tally.stored_jpegs[r]) + " " +
               reencode_reason_name(static_cast<ReencodeReason>(r));
  }
  return out + (reasons.empty() ? "" : " (" + reasons + ")") + "\n";
}

std::optional<EncodeTally> sidecar_tally(const std::string& beton_path) {
  const std::string json = read_text_if_present(sources_sidecar_path(beton_path));
  if (json.empty()) return std::nullopt;
  std::error_code error;
  const auto size = std::filesystem::file_size(beton_path, error);
  const std::vector<double> recorded = json_numbers(json, "file_bytes");
  if (error || recorded.empty() || recorded.front() != static_cast<double>(size)) {
    return std::nullopt;
  }
  EncodeTally tally;
  for (std::size_t r = 0; r < tally.stored_jpegs.size(); ++r) {
    const std::vector<double> count =
        json_numbers(json, reencode_reason_name(static_cast<ReencodeReason>(r)));
    if (count.empty()) return std::nullopt;
    tally.stored_jpegs[r] = static_cast<std::uint64_t>(count.front());
  }
  const std::vector<double> scaled = json_numbers(json, "dct_scaled");
  if (!scaled.empty()) tally.dct_scaled = static_cast<std::uint64_t>(scaled.front());
  return tally;
}

}  // namespace ffcv::tools
