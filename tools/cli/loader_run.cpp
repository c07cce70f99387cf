#include "loader_run.hpp"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "ffcv/json_text.hpp"
#include "ffcv/progress_bar.hpp"

namespace ffcv::tools {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string format(const char* pattern, double a, double b = 0, double c = 0, double d = 0) {
  char text[256];
  std::snprintf(text, sizeof text, pattern, a, b, c, d);
  return text;
}

}  // namespace

EpochMeasurement run_epoch(Loader& loader, std::uint64_t epoch, std::uint64_t max_batches,
                           bool progress, double step_seconds) {
  EpochMeasurement m;
  m.epoch = epoch;
  for (const auto& [name, state] : loader.outputs()) m.bytes_per_sample += state.byte_size();
  const std::uint64_t planned =
      max_batches ? std::min(max_batches, loader.batches_per_epoch()) : loader.batches_per_epoch();
  ProgressBar bar("epoch " + std::to_string(epoch), planned, "batches");
  const auto start = Clock::now();
  auto iterator = loader.epoch(epoch);
  while (m.batches < planned) {
    auto batch = iterator.next();
    if (!batch) break;
    m.samples += batch->size();
    ++m.batches;
    if (step_seconds > 0) std::this_thread::sleep_for(std::chrono::duration<double>(step_seconds));
    if (progress) bar.update(m.batches);
  }
  m.seconds = seconds_since(start);
  m.diversity = measure_batch_diversity(loader.order().epoch_order(epoch),
                                        loader.options().batch_size, loader.page_of_samples());
  m.samples_per_s = m.seconds > 0 ? m.samples / m.seconds : 0;
  m.stats = iterator.stats();
  if (progress) bar.finish();
  return m;
}

double memcpy_rate(std::uint64_t bytes_per_sample) {
  const std::uint64_t bytes = std::max<std::uint64_t>(1, 256 * bytes_per_sample);
  std::vector<std::uint8_t> source(bytes, 1), target(bytes);
  std::uint64_t copied = 0;
  const auto start = Clock::now();
  while (seconds_since(start) < 0.25) {
    std::memcpy(target.data(), source.data(), bytes);
    source[copied % bytes] = target[(copied * 7) % bytes];  // keep the copies observable
    copied += bytes;
  }
  return copied / seconds_since(start);
}

std::string measurements_text(const Loader& loader, const std::vector<EpochMeasurement>& epochs,
                              double memcpy_bytes_per_s) {
  const LoaderOptions& options = loader.options();
  std::string out = loader.reader().path() + ": " + std::to_string(loader.reader().num_samples()) +
                    " samples; batch " + std::to_string(options.batch_size) + ", order " +
                    order_kind_name(options.order.kind) + ", " +
                    (options.os_cache ? std::string("mmap") : std::string("process cache")) + "\n";
  for (const auto& [name, state] : loader.outputs()) {
    out += "  output " + name + ": " + state.to_string() + "\n";
  }
  for (const EpochMeasurement& m : epochs) {
    const LoaderStats& s = m.stats;
    out += "  epoch " + std::to_string(m.epoch) + ": " + std::to_string(m.samples) +
           " samples in " + format("%.3f s = %.0f samples/s", m.seconds, m.samples_per_s) + " (" +
           std::to_string(s.workers) + " workers)\n" +
           format("    order: %.1f distinct pages per batch (%.3f of the batch size)\n",
                  m.diversity.mean_distinct_pages, m.diversity.mean_distinct_page_fraction);
    out += format("    workers: processing %.3f s, waiting for pages %.3f s, ring full %.3f s; ",
                  s.process_seconds, s.read_wait_seconds, s.ring_full_seconds) +
           format("consumer waited %.3f s\n", s.consumer_wait_seconds);
    if (!options.os_cache) {
      out += format("    storage: %.1f MiB read in %.0f calls, %.3f s; peak cache %.1f MiB\n",
                    s.pages.bytes_read / 1048576.0, double(s.pages.read_calls),
                    s.pages.storage_seconds, s.pages.peak_resident_bytes / 1048576.0);
    }
  }
  if (!epochs.empty() && epochs.back().bytes_per_sample > 0) {
    const double memcpy_samples = memcpy_bytes_per_s / epochs.back().bytes_per_sample;
    out += format(
        "  baseline: memcpy of the same output bytes on one core: %.0f samples/s "
        "(%.2f GB/s); loader / memcpy = %.3f\n",
        memcpy_samples, memcpy_bytes_per_s / 1e9, epochs.back().samples_per_s / memcpy_samples);
  }
  return out;
}

std::string measurements_json(const Loader& loader, const std::vector<EpochMeasurement>& epochs,
                              double memcpy_bytes_per_s) {
  const LoaderOptions& options = loader.options();
  std::string out = "{\"file\": " + json_quote(loader.reader().path()) +
                    ", \"batch_size\": " + std::to_string(options.batch_size) +
                    ", \"order\": " + json_quote(order_kind_name(options.order.kind)) +
                    ", \"source\": " + json_quote(options.os_cache ? "mmap" : "process_cache") +
                    ", \"memcpy_bytes_per_s\": " + format("%.0f", memcpy_bytes_per_s) +
                    ", \"epochs\": [";
  for (std::size_t i = 0; i < epochs.size(); ++i) {
    const EpochMeasurement& m = epochs[i];
    const LoaderStats& s = m.stats;
    out += std::string(i ? ", " : "") + "{\"epoch\": " + std::to_string(m.epoch) +
           ", \"batches\": " + std::to_string(m.batches) +
           ", \"samples\": " + std::to_string(m.samples) +
           format(", \"seconds\": %.6f, \"samples_per_s\": %.1f", m.seconds, m.samples_per_s) +
           ", \"bytes_per_sample\": " + std::to_string(m.bytes_per_sample) +
           format(", \"distinct_pages_per_batch\": %.3f", m.diversity.mean_distinct_pages) +
           ", \"workers\": " + std::to_string(s.workers) +
           format(", \"process_seconds\": %.6f, \"read_wait_seconds\": %.6f", s.process_seconds,
                  s.read_wait_seconds) +
           format(", \"ring_full_seconds\": %.6f, \"consumer_wait_seconds\": %.6f",
                  s.ring_full_seconds, s.consumer_wait_seconds) +
           ", \"storage_bytes_read\": " + std::to_string(s.pages.bytes_read) +
           ", \"storage_read_calls\": " + std::to_string(s.pages.read_calls) +
           ", \"peak_cache_bytes\": " + std::to_string(s.pages.peak_resident_bytes) + "}";
  }
  return out + "]}";
}

}  // namespace ffcv::tools
