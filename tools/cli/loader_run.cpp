#include "loader_run.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <set>
#include <thread>

#include "common/arguments.hpp"
#include "ffcv/util/available_memory.hpp"
#include "ffcv/util/byte_size.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/json_text.hpp"
#include "ffcv/util/progress_bar.hpp"
#include "ffcv/util/stopwatch.hpp"

namespace ffcv::tools {
namespace {

// A figure fit to print: NaN and the infinities (a ratio over nothing measured) as 0, -0 as 0.
double printable(double value) { return std::isfinite(value) ? value + 0.0 : 0.0; }

// a / b, or 0 when b is not a positive number.
double ratio(double a, double b) { return b > 0 && std::isfinite(b) ? a / b : 0.0; }

// PATTERN (printf) with up to four figures put in, each printable.
std::string figures(const char* pattern, double a, double b = 0, double c = 0, double d = 0) {
  char text[256];
  std::snprintf(text, sizeof text, pattern, printable(a), printable(b), printable(c), printable(d));
  return text;
}

}  // namespace

void check_loader_run(const Loader& loader) {
  const LoaderOptions& options = loader.options();
  const std::string& path = loader.reader().path();
  const std::uint64_t samples = loader.order().smallest_rank_size();
  const std::uint32_t ranks = options.order.world_size;
  if (samples == 0) {
    throw Error(path + " has no samples to load" +
                (ranks > 1 ? " on rank " + std::to_string(options.order.rank) + " of " +
                                 std::to_string(ranks)
                           : std::string()));
  }
  if (loader.batches_per_epoch() == 0) {
    const std::string count = ranks > 1
                                  ? std::to_string(loader.order().global_size()) + " samples, " +
                                        std::to_string(samples) + " for the smallest of " +
                                        std::to_string(ranks) + " ranks,"
                                  : std::to_string(samples) + " samples,";
    throw UsageError(path + " has " + count + " fewer than one batch of " +
                     std::to_string(options.batch_size) +
                     " with drop_last; use --drop-last false or a smaller --batch-size");
  }
  std::uint64_t bytes_per_sample = 0;
  for (const auto& [name, state] : loader.outputs()) bytes_per_sample += state.byte_size();
  const std::uint64_t slots = options.batches_ahead + 2;
  // In double: the product of three large numbers may not fit 64 bits.
  const double ring_bytes =
      static_cast<double>(options.batch_size) * static_cast<double>(bytes_per_sample) * slots;
  const std::uint64_t available = available_memory_bytes();
  if (available > 0 && ring_bytes > static_cast<double>(available)) {
    throw UsageError("batches of " + std::to_string(options.batch_size) + " samples of " +
                     std::to_string(bytes_per_sample) + " bytes in " + std::to_string(slots) +
                     " slots (--batches-ahead " + std::to_string(options.batches_ahead) +
                     " + 2) need " + byte_size_text(ring_bytes) + ", more than the " +
                     byte_size_text(static_cast<double>(available)) +
                     " of memory available; use a smaller --batch-size or --batches-ahead");
  }
}

namespace {

// The index of the output named "label" when it holds one integer per sample.
std::optional<std::size_t> scalar_label_output(const Loader& loader) {
  const auto& outputs = loader.outputs();
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const TensorState& state = outputs[i].second;
    const bool integer = state.dtype.kind == 'i' || state.dtype.kind == 'u';
    if (outputs[i].first == "label" && integer && state.element_count() == 1 &&
        !loader.output_layouts()[i] && state.dtype.itemsize <= 8) {
      return i;
    }
  }
  return std::nullopt;
}

// Distinct values of a batch of integer scalars (little-endian, as the loader writes them).
std::size_t distinct_values(const BatchTensor& tensor) {
  std::set<std::uint64_t> values;
  const std::size_t size = tensor.state->dtype.itemsize;
  for (std::uint64_t i = 0; i < tensor.count; ++i) {
    std::uint64_t value = 0;
    std::memcpy(&value, tensor.data + i * size, size);
    values.insert(value);
  }
  return values.size();
}

}  // namespace

EpochMeasurement run_epoch(Loader& loader, std::uint64_t epoch, std::uint64_t max_batches,
                           bool progress, double step_seconds,
                           const std::function<bool(std::uint64_t, double)>& enough) {
  EpochMeasurement m;
  m.epoch = epoch;
  std::uint64_t fixed_bytes = 0, ragged_bytes = 0;  // ragged outputs: as their batches held them
  for (std::size_t i = 0; i < loader.outputs().size(); ++i) {
    if (!loader.output_layouts()[i]) fixed_bytes += loader.outputs()[i].second.byte_size();
  }
  const std::uint64_t planned =
      max_batches ? std::min(max_batches, loader.batches_per_epoch()) : loader.batches_per_epoch();
  ProgressBar bar("epoch " + std::to_string(epoch), planned, "batches");
  const Stopwatch start;
  auto iterator = loader.epoch(epoch);
  const std::optional<std::size_t> label_output = scalar_label_output(loader);
  double distinct_labels = 0;
  while (m.batches < planned) {
    auto batch = iterator.next();
    if (!batch) break;
    if (label_output) distinct_labels += distinct_values(batch->output(*label_output));
    for (std::size_t i = 0; i < batch->num_outputs(); ++i) {
      if (loader.output_layouts()[i]) ragged_bytes += batch->output(i).byte_size();
    }
    m.samples += batch->size();
    ++m.batches;
    if (step_seconds > 0) std::this_thread::sleep_for(std::chrono::duration<double>(step_seconds));
    if (progress) bar.update(m.batches);
    if (enough && enough(m.batches, start.seconds())) break;
  }
  m.seconds = start.seconds();
  m.bytes_per_sample = fixed_bytes + (m.samples ? ragged_bytes / m.samples : 0);
  m.distinct_labels_per_batch = m.batches ? distinct_labels / static_cast<double>(m.batches) : 0;
  m.diversity = measure_batch_diversity(loader.order().epoch_order(epoch),
                                        loader.options().batch_size, loader.page_of_samples());
  m.samples_per_s = ratio(static_cast<double>(m.samples), m.seconds);
  m.stats = iterator.stats();
  if (progress) bar.finish();
  return m;
}

double memcpy_rate(std::uint64_t bytes_per_sample) {
  const std::uint64_t bytes = std::max<std::uint64_t>(1, 256 * bytes_per_sample);
  std::vector<std::uint8_t> source(bytes, 1), target(bytes);
  std::uint64_t copied = 0;
  const Stopwatch start;
  while (start.seconds() < 0.25) {
    std::memcpy(target.data(), source.data(), bytes);
    source[copied % bytes] = target[(copied * 7) % bytes];  // keep the copies observable
    copied += bytes;
  }
  return copied / start.seconds();
}

namespace {

// " (window of N pages)" for QUASI_RANDOM: the one the loader took when none was given.
std::string window_text(const LoaderOptions& options) {
  if (options.order.kind != OrderKind::kQuasiRandom) return "";
  const std::uint64_t window = quasi_random_window(options.order);
  return " (window of " + std::to_string(window) + (window == 1 ? " page)" : " pages)");
}

}  // namespace

std::string measurements_text(const Loader& loader, const std::vector<EpochMeasurement>& epochs,
                              double memcpy_bytes_per_s) {
  const LoaderOptions& options = loader.options();
  std::string out = loader.reader().path() + ": " + std::to_string(loader.reader().num_samples()) +
                    " samples; batch " + std::to_string(options.batch_size) + ", order " +
                    order_kind_name(options.order.kind) + window_text(options) + ", " +
                    (options.os_cache ? std::string("mmap") : std::string("process cache")) + "\n";
  for (std::size_t i = 0; i < loader.outputs().size(); ++i) {
    const auto& [name, state] = loader.outputs()[i];
    const std::optional<RaggedLayout> layout = loader.output_layouts()[i];
    out += "  output " + name + ": " +
           (layout ? std::string("rows of ") + state.to_string() + ", ragged (" +
                         ragged_layout_name(*layout) + ")"
                   : state.to_string()) +
           "\n";
  }
  for (const EpochMeasurement& m : epochs) {
    const LoaderStats& s = m.stats;
    out += "  epoch " + std::to_string(m.epoch) + ": " + std::to_string(m.samples) +
           " samples in " + figures("%.3f s = %.0f samples/s", m.seconds, m.samples_per_s) + " (" +
           std::to_string(s.workers) + " workers" +
           (s.skipped_samples ? ", " + std::to_string(s.skipped_samples) + " samples skipped"
                              : std::string()) +
           ")\n" +
           figures("    order: %.1f distinct pages per batch (%.3f of the batch size)",
                   m.diversity.mean_distinct_pages, m.diversity.mean_distinct_page_fraction) +
           (m.distinct_labels_per_batch > 0
                ? figures(", %.1f distinct labels", m.distinct_labels_per_batch)
                : std::string()) +
           "\n";
    out += figures("    workers: processing %.3f s, waiting for pages %.3f s, ring full %.3f s; ",
                   s.process_seconds, s.read_wait_seconds, s.ring_full_seconds) +
           figures("consumer waited %.3f s\n", s.consumer_wait_seconds);
    if (!options.os_cache) {
      out += "    storage: " + byte_size_text(double(s.pages.bytes_read)) + " read in " +
             figures("%.0f calls, %.3f s; ", double(s.pages.read_calls), s.pages.storage_seconds) +
             "peak cache " + byte_size_text(double(s.pages.peak_resident_bytes)) + "\n";
    }
  }
  if (!epochs.empty() && epochs.back().bytes_per_sample > 0 && memcpy_bytes_per_s > 0) {
    const double memcpy_samples = memcpy_bytes_per_s / epochs.back().bytes_per_sample;
    out += figures(
        "  baseline: memcpy of the same output bytes on one core: %.0f samples/s "
        "(%.2f GB/s); loader / memcpy = %.3f\n",
        memcpy_samples, memcpy_bytes_per_s / 1e9,
        ratio(epochs.back().samples_per_s, memcpy_samples));
  }
  return out;
}

std::string measurements_json(const Loader& loader, const std::vector<EpochMeasurement>& epochs,
                              double memcpy_bytes_per_s) {
  const LoaderOptions& options = loader.options();
  std::string out =
      "{\"file\": " + json_quote(loader.reader().path()) +
      ", \"batch_size\": " + std::to_string(options.batch_size) +
      ", \"order\": " + json_quote(order_kind_name(options.order.kind)) +
      (options.order.kind == OrderKind::kQuasiRandom
           ? ", \"window_pages\": " + std::to_string(quasi_random_window(options.order))
           : std::string()) +
      ", \"source\": " + json_quote(options.os_cache ? "mmap" : "process_cache") +
      ", \"memcpy_bytes_per_s\": " + json_number(memcpy_bytes_per_s, 0) + ", \"epochs\": [";
  for (std::size_t i = 0; i < epochs.size(); ++i) {
    const EpochMeasurement& m = epochs[i];
    const LoaderStats& s = m.stats;
    out += std::string(i ? ", " : "") + "{\"epoch\": " + std::to_string(m.epoch) +
           ", \"batches\": " + std::to_string(m.batches) +
           ", \"samples\": " + std::to_string(m.samples) +
           ", \"seconds\": " + json_number(m.seconds, 6) +
           ", \"samples_per_s\": " + json_number(m.samples_per_s, 1) +
           ", \"bytes_per_sample\": " + std::to_string(m.bytes_per_sample) +
           ", \"distinct_pages_per_batch\": " + json_number(m.diversity.mean_distinct_pages, 3) +
           ", \"distinct_labels_per_batch\": " + json_number(m.distinct_labels_per_batch, 3) +
           ", \"workers\": " + std::to_string(s.workers) +
           ", \"skipped_samples\": " + std::to_string(s.skipped_samples) +
           ", \"process_seconds\": " + json_number(s.process_seconds, 6) +
           ", \"read_wait_seconds\": " + json_number(s.read_wait_seconds, 6) +
           ", \"ring_full_seconds\": " + json_number(s.ring_full_seconds, 6) +
           ", \"consumer_wait_seconds\": " + json_number(s.consumer_wait_seconds, 6) +
           ", \"storage_bytes_read\": " + std::to_string(s.pages.bytes_read) +
           ", \"storage_read_calls\": " + std::to_string(s.pages.read_calls) +
           ", \"peak_cache_bytes\": " + std::to_string(s.pages.peak_resident_bytes) + "}";
  }
  return out + "]}";
}

}  // namespace ffcv::tools
