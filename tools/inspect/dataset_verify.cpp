#include "dataset_verify.hpp"

#include <algorithm>
#include <mutex>

#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/image/jpeg_codec.hpp"
#include "ffcv/image/jpeg_coding.hpp"
#include "ffcv/storage/range_reader.hpp"
#include "ffcv/util/json_text.hpp"
#include "ffcv/util/stopwatch.hpp"
#include "ffcv/util/thread_group.hpp"

namespace ffcv::tools {
namespace {

// The reason sample `sample`'s field `f` is bad, or "" when it decodes.
std::string check_value(const Reader& reader, std::uint64_t sample, std::size_t f) {
  try {
    if (reader.fields()[f].field->type_name() == "RGBImage") {
      const ImageMetadata image = ImageMetadata::load(reader.column(sample, f));
      if (image.mode == StoredImageMode::kJpg) {
        const auto payload = reader.payload(image.data_ptr);
        validate_jpeg(payload, image.width, image.height);
        const std::size_t end = jpeg_stream_end(payload);
        if (end < payload.size()) {
          return std::to_string(payload.size() - end) +
                 " bytes after the JPEG's end-of-image marker (at byte " + std::to_string(end) +
                 " of " + std::to_string(payload.size()) + "): no part of the image";
        }
        return "";
      }
    }
    reader.decode(sample, f);  // raw images, scalars, arrays, bytes, JSON
    return "";
  } catch (const FileChangedError&) {
    throw;  // the file, not this sample: one error for the whole check
  } catch (const IoError&) {
    throw;  // likewise: the storage cannot be read
  } catch (const std::exception& error) {
    return error.what();
  }
}

}  // namespace

VerifyReport verify_dataset(const Reader& reader, int workers,
                            const std::function<void(std::uint64_t, std::uint64_t)>& on_progress) {
  const Stopwatch started;
  VerifyReport report;
  report.samples = reader.num_samples();
  std::mutex mutex;
  parallel_for(
      report.samples, workers,
      [&](std::uint64_t sample) {
        for (std::size_t f = 0; f < reader.fields().size(); ++f) {
          std::string reason = check_value(reader, sample, f);
          if (reason.empty()) continue;
          std::lock_guard lock(mutex);
          report.bad.push_back({sample, reader.fields()[f].name, std::move(reason)});
        }
      },
      [&](std::uint64_t done) {
        if (on_progress) on_progress(done, report.samples);
      });
  if (on_progress) on_progress(report.samples, report.samples);
  reader.check_intact();
  std::stable_sort(report.bad.begin(), report.bad.end(),
                   [](const BadSample& a, const BadSample& b) { return a.sample < b.sample; });
  report.seconds = started.seconds();
  return report;
}

std::string verify_text(const Reader& reader, const VerifyReport& report) {
  std::string out;
  for (const BadSample& bad : report.bad) {
    out += "  sample " + std::to_string(bad.sample) + ", field '" + bad.field + "': " + bad.reason +
           "\n";
  }
  char summary[256];
  std::snprintf(
      summary, sizeof summary, "%s: %llu samples decoded in %.1f s: %s\n", reader.path().c_str(),
      static_cast<unsigned long long>(report.samples), report.seconds,
      report.bad.empty() ? "all good" : (std::to_string(report.bad.size()) + " bad").c_str());
  return summary + out;
}

std::string verify_json(const Reader& reader, const VerifyReport& report) {
  std::string out = "{\"file\": " + json_quote(reader.path()) +
                    ", \"samples\": " + std::to_string(report.samples) +
                    ", \"seconds\": " + json_number(report.seconds, 3) + ", \"bad\": [";
  for (std::size_t i = 0; i < report.bad.size(); ++i) {
    const BadSample& bad = report.bad[i];
    out += std::string(i ? ", " : "") + "{\"sample\": " + std::to_string(bad.sample) +
           ", \"field\": " + json_quote(bad.field) + ", \"reason\": " + json_quote(bad.reason) +
           "}";
  }
  return out + "]}";
}

}  // namespace ffcv::tools
