#include "ffcv/dataset_writer.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <set>

#include "ffcv/util/atomic_file.hpp"
#include "ffcv/util/byte_buffer_pool.hpp"
#include "ffcv/util/counter_random.hpp"
#include "ffcv/util/cpu_count.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/little_endian.hpp"
#include "ffcv/util/stopwatch.hpp"
#include "ffcv/util/thread_group.hpp"
#include "load_turns.hpp"
#include "page_allocator.hpp"
#include "read_ahead.hpp"

namespace ffcv {
namespace {

// One sample after encoding: its metadata record and payloads, or why it failed.
struct EncodedSample {
  std::vector<std::uint8_t> record;
  std::vector<EncodedAllocation> payloads;  // pointer_offset is relative to the record
  std::string error;
  bool unreadable = false;  // the source could not be read (IoError): never skipped
  bool ready = false;
  double load_seconds = 0;
  double encode_seconds = 0;
  EncodeTally tally;
};

void check_fields(const std::vector<NamedField>& fields) {
  if (fields.empty()) throw ConfigError("a dataset needs at least one field");
  if (fields.size() > 65535) throw ConfigError("a dataset holds at most 65535 fields");
  std::set<std::string> names;
  for (const NamedField& named : fields) {
    if (!named.field) throw ConfigError("field '" + named.name + "' is null");
    if (named.name.empty() || named.name.size() > kFieldNameSize) {
      throw ConfigError("field name '" + named.name + "' must be 1 to 16 bytes long");
    }
    for (const char c : named.name) {
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x80) {
        throw ConfigError("field name '" + named.name + "' must be printable ASCII");
      }
    }
    if (!names.insert(named.name).second) {
      throw ConfigError("two fields are named '" + named.name + "'");
    }
  }
}

constexpr std::uint32_t kShuffleStream = 0x73687566;  // "shuf"

// 0..n-1 in a random order keyed by `seed` (Fisher-Yates on counter-based random numbers, so the
// same seed gives the same order on every machine).
std::vector<std::uint64_t> shuffled_indices(std::uint64_t n, std::uint64_t seed) {
  std::vector<std::uint64_t> order(n);
  for (std::uint64_t i = 0; i < n; ++i) order[i] = i;
  for (std::uint64_t i = n; i > 1; --i) {
    const std::uint64_t j = random_u64(seed, kShuffleStream, i - 1, 0) % i;
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

// `inner` seen in another order: row i is inner's sample order[i].
class PermutedSource final : public SampleSource {
 public:
  PermutedSource(const SampleSource& inner, std::vector<std::uint64_t> order)
      : inner_(inner), order_(std::move(order)) {}
  std::uint64_t size() const override { return order_.size(); }
  std::vector<FieldValue> load(std::uint64_t index) const override {
    return inner_.load(order_[index]);
  }
  std::string describe(std::uint64_t index) const override {
    return inner_.describe(order_[index]);
  }
  void prefetch(std::uint64_t index) const override { inner_.prefetch(order_[index]); }
  bool loads_one_at_a_time() const override { return inner_.loads_one_at_a_time(); }

 private:
  const SampleSource& inner_;
  std::vector<std::uint64_t> order_;
};

// Encodes sample `index` of `source` into `out`: its metadata record and its payloads (whose
// pointer offsets are made relative to the record). Throws naming the field that failed.
void encode_sample(const std::vector<NamedField>& fields, const MetadataLayout& layout,
                   const SampleSource& source, std::uint64_t index, std::uint64_t seed,
                   ByteBufferPool& buffers, LoadTurns& turns, EncodedSample& out) {
  out.record.assign(layout.record_size, 0);
  Stopwatch watch;
  std::vector<FieldValue> values = turns.in_turn(index, [&] { return source.load(index); });
  out.load_seconds = watch.restart();
  if (values.size() != fields.size()) {
    throw EncodeError("the source gave " + std::to_string(values.size()) + " values for " +
                      std::to_string(fields.size()) + " fields");
  }
  const EncodeContext context{index, seed, &out.tally, &buffers};
  for (std::size_t f = 0; f < fields.size(); ++f) {
    const std::size_t first = out.payloads.size();
    try {
      fields[f].field->encode(values[f], out.record.data() + layout.column_offsets[f], out.payloads,
                              context);
    } catch (const std::exception& error) {
      throw EncodeError("field '" + fields[f].name + "': " + error.what());
    }
    for (std::size_t p = first; p < out.payloads.size(); ++p) {
      out.payloads[p].pointer_offset += layout.column_offsets[f];
    }
  }
  out.encode_seconds = watch.seconds();
}

// The samples between encoding and placement: workers claim the next index to encode and deliver
// its result; the committer takes the results back in sample order. Encoding runs ahead of
// placement by at most `window` samples, bounding memory.
class EncodeWindow {
 public:
  EncodeWindow(std::uint64_t num_samples, std::uint64_t window)
      : num_samples_(num_samples), window_(window), slots_(window) {}

  // The next sample to encode, waiting while the window is full; nullopt when every sample is
  // claimed or the window was stopped.
  std::optional<std::uint64_t> claim() {
    std::unique_lock lock(mutex_);
    slot_free_.wait(lock, [&] {
      return stop_ || next_to_encode_ >= num_samples_ || next_to_encode_ < next_to_place_ + window_;
    });
    if (stop_ || next_to_encode_ >= num_samples_) return std::nullopt;
    return next_to_encode_++;
  }

  // Only the delivery of the sample the committer waits for wakes it: each wake takes the
  // worker's core for a moment (measured: a third of the writer's context switches were the
  // committer woken for a sample it could not place yet).
  void deliver(std::uint64_t index, EncodedSample sample) {
    bool awaited = false;
    {
      std::lock_guard lock(mutex_);
      slots_[index % window_] = std::move(sample);
      awaited = index == next_to_place_;
    }
    if (awaited) sample_ready_.notify_one();
  }

  // Waits for sample `index`, the next in order, and takes it out of the window.
  EncodedSample take(std::uint64_t index) {
    EncodedSample sample;
    {
      std::unique_lock lock(mutex_);
      sample_ready_.wait(lock, [&] { return slots_[index % window_].ready; });
      sample = std::move(slots_[index % window_]);
      slots_[index % window_] = EncodedSample{};
      ++next_to_place_;
    }
    slot_free_.notify_all();
    return sample;
  }

  // Wakes the workers waiting to claim: none claims again.
  void stop() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    slot_free_.notify_all();
  }

 private:
  const std::uint64_t num_samples_;
  const std::uint64_t window_;
  std::vector<EncodedSample> slots_;
  std::mutex mutex_;
  std::condition_variable sample_ready_, slot_free_;
  std::uint64_t next_to_encode_ = 0, next_to_place_ = 0;
  bool stop_ = false;
};

// One worker: encodes the samples it claims until none is left. A failure travels with its
// sample, for the committer to report or skip in order.
void encode_claimed(EncodeWindow& window, const std::vector<NamedField>& fields,
                    const MetadataLayout& layout, const SampleSource& source, std::uint64_t seed,
                    ByteBufferPool& buffers, ReadAhead& read_ahead, LoadTurns& turns) {
  while (const std::optional<std::uint64_t> index = window.claim()) {
    read_ahead.claimed(*index);
    EncodedSample result;
    try {
      encode_sample(fields, layout, source, *index, seed, buffers, turns, result);
    } catch (const IoError& error) {
      result = EncodedSample{};
      result.error = error.what();
      result.unreadable = true;
    } catch (const std::exception& error) {
      result = EncodedSample{};
      result.error = error.what();
    }
    result.ready = true;
    window.deliver(*index, std::move(result));
  }
}

// Places the sample's payloads in the pages, writes their pointers into its record and copies
// the record to row `row` of the metadata table. Throws EncodeError when it fits no page.
void place_sample(EncodedSample& sample, std::uint64_t row, PageAllocator& pages,
                  std::vector<std::uint8_t>& metadata, std::uint64_t record_size) {
  const std::vector<std::uint64_t> pointers = pages.place(row, sample.payloads);
  for (std::size_t p = 0; p < pointers.size(); ++p) {
    store_le(sample.record.data() + sample.payloads[p].pointer_offset, pointers[p]);
  }
  std::copy(sample.record.begin(), sample.record.end(), metadata.begin() + row * record_size);
}

// What the committer adds up while it places: the samples left out, the stage times and the
// tally of the samples written.
struct PlacementTotals {
  std::uint64_t skipped = 0;
  WriteStageSeconds stages;
  EncodeTally tally;
};

// The committer: takes the encoded samples in sample order and places them; a failed one is
// left out or stops the write, as `options` say.
PlacementTotals place_in_order(EncodeWindow& window, std::uint64_t num_samples,
                               const SampleSource& source, const WriterOptions& options,
                               PageAllocator& pages, std::vector<std::uint8_t>& metadata,
                               std::uint64_t record_size, ByteBufferPool& buffers) {
  PlacementTotals totals;
  std::uint64_t& skipped = totals.skipped;
  auto last_report = std::chrono::steady_clock::now();
  for (std::uint64_t index = 0; index < num_samples; ++index) {
    const std::uint64_t placed = index - skipped;  // the sample's index in the output
    Stopwatch watch;
    EncodedSample sample = window.take(index);
    totals.stages.committer_wait += watch.restart();
    // The payloads' memory goes back to the workers once the sample is placed or left out.
    struct GiveBack {
      ByteBufferPool& buffers;
      std::vector<EncodedAllocation>& payloads;
      ~GiveBack() {
        for (EncodedAllocation& payload : payloads) buffers.give(std::move(payload.bytes));
      }
    } give_back{buffers, sample.payloads};
    if (!sample.error.empty() && options.skip_bad_samples && !sample.unreadable) {
      ++skipped;
      if (options.on_skipped) options.on_skipped(index, source.describe(index), sample.error);
      continue;
    }
    if (!sample.error.empty()) {
      throw EncodeError("sample " + std::to_string(index) + " (" + source.describe(index) +
                        "): " + sample.error);
    }
    try {
      place_sample(sample, placed, pages, metadata, record_size);
    } catch (const EncodeError& error) {
      throw EncodeError("sample " + std::to_string(index) + " (" + source.describe(index) + ") " +
                        error.what());
    }
    totals.stages.place += watch.seconds();
    totals.stages.load += sample.load_seconds;
    totals.stages.encode += sample.encode_seconds;
    totals.tally.add(sample.tally);
    const auto now = std::chrono::steady_clock::now();
    if (options.on_progress && now - last_report > std::chrono::milliseconds(100)) {
      options.on_progress(index + 1, num_samples);
      last_report = now;
    }
  }
  return totals;
}

// The allocation table's bytes: the pages' entries, encoded.
std::vector<std::uint8_t> allocation_table(const PageAllocator& pages) {
  std::vector<std::uint8_t> table(pages.entries().size() * kAllocEntrySize);
  for (std::size_t i = 0; i < pages.entries().size(); ++i) {
    pages.entries()[i].encode_to(table.data() + i * kAllocEntrySize);
  }
  return table;
}

// The bytes before the metadata table: the header, then one descriptor per field.
std::vector<std::uint8_t> file_head(const std::vector<NamedField>& fields, const Header& header,
                                    std::uint64_t metadata_offset) {
  std::vector<std::uint8_t> head(metadata_offset);
  const auto header_bytes = header.encode();
  std::copy(header_bytes.begin(), header_bytes.end(), head.begin());
  for (std::size_t f = 0; f < fields.size(); ++f) {
    const FieldDescriptor descriptor{fields[f].field->type_id(), fields[f].name,
                                     fields[f].field->args()};
    const auto bytes = descriptor.encode();
    std::copy(bytes.begin(), bytes.end(), head.begin() + kHeaderSize + f * kFieldDescriptorSize);
  }
  return head;
}
}  // namespace

std::string SampleSource::describe(std::uint64_t index) const {
  return "sample " + std::to_string(index);
}

void SampleSource::prefetch(std::uint64_t) const {}

DatasetWriter::DatasetWriter(std::string path, std::vector<NamedField> fields,
                             WriterOptions options)
    : path_(std::move(path)), fields_(std::move(fields)), options_(std::move(options)) {
  check_fields(fields_);
  check_page_size(options_.page_size);
  if (options_.num_workers < 0) throw ConfigError("number of workers must be 0 (all) or more");
}

WriteSummary DatasetWriter::write(const SampleSource& source) {
  if (!options_.shuffle_indices) return write_rows(source);
  return write_rows(PermutedSource(source, shuffled_indices(source.size(), options_.seed)));
}

WriteSummary DatasetWriter::write_rows(const SampleSource& source) {
  const Stopwatch started;
  const std::uint64_t num_samples = source.size();
  std::vector<ColumnType> columns;
  for (const NamedField& named : fields_) columns.push_back(named.field->column_type());
  const MetadataLayout layout = MetadataLayout::compute(columns);
  const std::uint64_t metadata_offset = metadata_start(fields_.size());
  const std::uint64_t metadata_end = metadata_offset + num_samples * layout.record_size;

  AtomicFile file(path_);
  PageAllocator pages(file, metadata_end, options_.page_size);
  std::vector<std::uint8_t> metadata(num_samples * layout.record_size, 0);

  const int num_workers = resolve_worker_count(options_.num_workers);
  const std::uint64_t window_size = std::max<std::uint64_t>(32, 8 * std::uint64_t(num_workers));
  EncodeWindow window(num_samples, window_size);
  // Room for every payload in the window and each worker's scratch images, within 64 MiB plus
  // 16 MiB per worker of storage held unused (the window's payloads in use are bounded by the
  // window itself).
  ByteBufferPool buffers(
      window_size + 4 * std::uint64_t(num_workers),
      (std::size_t{64} << 20) + (std::size_t{16} << 20) * std::size_t(num_workers));
  PlacementTotals totals;
  ReadAhead read_ahead(source, SampleSource::kReadAhead);
  LoadTurns turns(source.loads_one_at_a_time());
  ThreadGroup threads;
  const auto stop_workers = [&] {
    window.stop();
    threads.join();
    read_ahead.stop();
  };
  try {
    threads.start(num_workers, [&](int) {
      encode_claimed(window, fields_, layout, source, options_.seed, buffers, read_ahead, turns);
    });
    totals = place_in_order(window, num_samples, source, options_, pages, metadata,
                            layout.record_size, buffers);
    stop_workers();
  } catch (...) {
    stop_workers();
    throw;
  }

  // Skipped samples leave unused records at the end of the table's space, before the first page.
  const Stopwatch finishing;
  const std::uint64_t skipped = totals.skipped;
  const std::uint64_t written = num_samples - skipped;
  const std::uint64_t table_ptr = pages.finish();
  // The unused records too (zeros): without pages the allocation table starts right after them,
  // and the file must reach it.
  file.write_at(metadata_offset, metadata.data(), metadata.size());
  const std::vector<std::uint8_t> table = allocation_table(pages);
  file.write_at(table_ptr, table.data(), table.size());

  Header header;
  header.num_fields = static_cast<std::uint16_t>(fields_.size());
  header.page_size = static_cast<std::uint32_t>(pages.page_size());
  header.num_samples = written;
  header.alloc_table_ptr = table_ptr;
  const std::vector<std::uint8_t> head = file_head(fields_, header, metadata_offset);
  file.write_at(0, head.data(), head.size());
  file.commit();
  totals.stages.finish = finishing.seconds();
  if (options_.on_progress) options_.on_progress(num_samples, num_samples);

  WriteSummary summary;
  summary.num_samples = written;
  summary.skipped = skipped;
  summary.page_size = pages.page_size();
  summary.num_pages = pages.pages_written();
  summary.heap_bytes = pages.heap_bytes();
  summary.file_size = table_ptr + table.size();
  summary.seconds = started.seconds();
  summary.workers = num_workers;
  summary.stages = totals.stages;
  summary.tally = totals.tally;
  return summary;
}

}  // namespace ffcv
