// Loader: batches of decoded, augmented samples from a .beton file, produced by worker threads.
//
// A Loader is an immutable description (file, pipelines, options); each epoch is an
// EpochIterator, which owns the worker threads and a ring of `batches_ahead + 2` batch slots
// allocated once. Workers cooperate on the same batch: each claims the next sample of the
// oldest unfinished batch and carries it through its pipelines in one pass, writing the results
// straight into the batch's slot. next() hands batches out in order as Batch leases; a slot is
// reused only after its Batch is released, so a batch stays valid for as long as it is held.
// A consumer may hold any number of batches: when next() needs the slot of a batch still held,
// that batch keeps its memory, which leaves the ring with it, and the slot gets new memory
// (one batch more per batch held past batches_ahead + 1; a released batch's memory is reused).
//
// Same seed, same batches: the order and every random decision are keyed by
// (seed, epoch, sample), so any number of workers gives identical bytes.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ffcv/order/traversal_order.hpp"
#include "ffcv/reader.hpp"
#include "ffcv/steps/operation.hpp"
#include "ffcv/storage/page_source.hpp"

namespace ffcv {

// One output of the loader: a field through a decoder and operations.
struct PipelineSpec {
  std::string name;                  // output name (default: the field's)
  std::string field;                 // source field; may feed several outputs
  std::shared_ptr<Decoder> decoder;  // null: the field's default decoder
  std::vector<std::shared_ptr<Operation>> operations;
  // Run on the whole batch after the per-sample steps (image and label mixup).
  std::vector<std::shared_ptr<BatchOperation>> batch_operations = {};
};

// Where batch memory comes from; the LibTorch adapter supplies pinned host memory.
struct BatchAllocator {
  std::function<void*(std::uint64_t bytes)> allocate;
  std::function<void(void*)> deallocate;
};

// What a sample whose decoder or operations fail does to its epoch (LoaderOptions::on_error).
enum class OnSampleError {
  kFail,  // the epoch ends with the sample's error, naming it and the step (FFCV's behaviour)
  kSkip,  // the sample is left out of its batch, counted and listed, up to a stated share
};
// "fail" | "skip"; throws ConfigError naming the accepted values.
OnSampleError parse_on_sample_error(const std::string& text);
const char* on_sample_error_name(OnSampleError value);

// A sample left out under OnSampleError::kSkip.
struct SkippedSample {
  std::uint64_t index = 0;  // in the dataset
  std::string error;        // what failed, naming the output and step
};

struct LoaderOptions {
  std::uint64_t batch_size = 256;
  int num_workers = 0;  // 0: one per available core
  // kind, seed, rank/world size, indices, QUASI_RANDOM window. A window of 0 means, with the
  // process cache, the largest window whose epochs fit its budget (options() then holds it), and
  // with mmap FFCV's 2 x batch size.
  OrderOptions order;
  bool drop_last = true;
  std::uint64_t batches_ahead = 3;
  bool os_cache = true;  // true: mmap; false: process cache with `cache`
  ProcessCacheOptions cache;
  std::optional<BatchAllocator> allocator;  // default: 64-byte aligned heap memory
  // Pipelines for fields without a spec: true adds the default decoder for every field that
  // has no output yet (FFCV's behaviour), false loads only the listed outputs.
  bool default_pipelines = true;
  // kSkip: a failing sample is left out of its batch, which is then that much smaller (its
  // other samples keep their order and bytes; a batch left with no sample is not handed out),
  // and the epoch still fails, naming the first skipped sample, once more than
  // ceil(max_skipped_fraction x the epoch's samples on this rank) were skipped. A file that
  // changed while being read is never skipped over.
  OnSampleError on_error = OnSampleError::kFail;
  double max_skipped_fraction = 0.01;  // 0..1
};

// Where an iterator stands: restore it with Loader::epoch(position.epoch, position.batches_done).
struct LoaderPosition {
  std::uint64_t epoch = 0;
  std::uint64_t batches_done = 0;
};

// Time spent per stage of the current epoch, summed over threads, in seconds.
struct LoaderStats {
  std::uint64_t batches = 0;
  std::uint64_t samples = 0;
  double wall_seconds = 0;           // since the epoch started
  double read_wait_seconds = 0;      // workers waiting for pages (page source acquire)
  double process_seconds = 0;        // workers decoding and transforming (wall time)
  double process_cpu_seconds = 0;    // the CPU time of that work (less when cores are shared)
  double ring_full_seconds = 0;      // workers idle because every slot is held
  double consumer_wait_seconds = 0;  // next() waiting for a batch
  int workers = 0;
  std::uint64_t skipped_samples = 0;  // left out so far under OnSampleError::kSkip
  PageSourceStats pages;
};

class EpochState;
struct PageLayout;
struct CompiledPipeline;

// One output of one batch: `count` samples of `state`, contiguous, shaped [count, ...state].
// A ragged output (`layout` set; its decoder's, e.g. "ragged") holds a varying number of rows of
// `state` per sample instead:
//   packed  data [rows, ...state]: every sample's rows back to back; offsets[count + 1] says
//           where each sample's rows start (offsets[0] = 0, offsets[count] = rows), as torch's
//           nested jagged tensors take them;
//   padded  data [count, rows, ...state]: each sample's rows, then zero rows up to `rows`, the
//           batch's largest sample's; lengths[count] gives each sample's own.
// The batch's memory holds the index too, so a held batch keeps it.
struct BatchTensor {
  const std::string* name = nullptr;
  const TensorState* state = nullptr;  // one sample; one row for a ragged output
  const std::uint8_t* data = nullptr;
  std::uint64_t count = 0;
  std::optional<RaggedLayout> layout;
  std::uint64_t rows = 0;
  const std::int64_t* offsets = nullptr;  // packed only
  const std::int64_t* lengths = nullptr;  // padded only

  std::vector<std::uint64_t> shape() const;  // of `data`
  std::uint64_t byte_size() const;           // of `data`
};

// A lease on one batch slot. Movable; the slot returns to the ring when it is destroyed.
class Batch {
 public:
  Batch() = default;
  Batch(Batch&&) noexcept;
  Batch& operator=(Batch&&) noexcept;
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;
  ~Batch();

  std::uint64_t epoch() const { return epoch_; }
  std::uint64_t index() const { return index_; }  // position of the batch in its epoch
  std::uint64_t size() const { return size_; }    // samples in this batch
  std::span<const std::uint64_t> indices() const { return indices_; }  // dataset indices
  std::size_t num_outputs() const;
  BatchTensor output(std::size_t i) const;
  BatchTensor output(const std::string& name) const;  // throws ConfigError when unknown
  void release();                                     // returns the slot now

 private:
  friend class EpochState;
  std::shared_ptr<EpochState> state_;
  std::uint64_t slot_ = 0, epoch_ = 0, index_ = 0, size_ = 0;
  std::span<const std::uint64_t> indices_;
};

class EpochIterator {
 public:
  ~EpochIterator();  // stops and joins the workers at once, even mid-epoch
  EpochIterator(EpochIterator&&) noexcept;
  EpochIterator& operator=(EpochIterator&&) noexcept;

  // The next batch, or nullopt at the end of the epoch. Throws the error of a sample that
  // failed (a corrupt page, an operation's exception) naming the sample and the step; the
  // iterator is finished afterwards, the loader stays usable. Once a newer epoch of its loader
  // started (or the loader was destroyed), throws Error "... was stopped", even for batches the
  // workers had finished; batches handed out before stay valid.
  std::optional<Batch> next();
  // True when next() would return at once: the next batch is done, or the epoch is over (or
  // failed). Lets a consumer with other work to do (e.g. launching a training step) take a
  // batch only when it is there instead of blocking.
  bool ready() const;
  // Waits up to `timeout` for next() to be ready; returns ready(). For a consumer that must stay
  // responsive while it waits (the Python package checks for Ctrl-C between slices of 100 ms).
  // A batch left empty by skipped samples is passed over meanwhile, as next() would.
  bool wait_ready(std::chrono::milliseconds timeout);
  // Stops the workers now, mid-epoch too; a next() waiting on another thread, and every later
  // one, throws Error "... was stopped". For a consumer that takes batches on a thread of its own
  // and must end it (DeviceTransfer); the destructor does the same.
  void stop();

  LoaderPosition position() const;
  std::uint64_t num_batches() const;  // in this epoch, on this rank
  // The samples left out so far under OnSampleError::kSkip, in the order they failed (the first
  // kMaxSkippedListed; LoaderStats::skipped_samples counts them all).
  std::vector<SkippedSample> skipped() const;
  static constexpr std::size_t kMaxSkippedListed = 100;
  LoaderStats stats() const;

 private:
  friend class Loader;
  explicit EpochIterator(std::shared_ptr<EpochState> state);
  std::shared_ptr<EpochState> state_;
};

class Loader {
 public:
  // Opens and validates the file, resolves the pipelines (default decoders, output names) and
  // checks every pipeline's chain of states. Throws FormatError / ConfigError.
  Loader(const std::string& path, std::vector<PipelineSpec> pipelines, LoaderOptions options);
  // The same over `path` already opened as `reader` (e.g. to read its fields before naming the
  // outputs), so that it is not opened and validated twice. `path` is the location as given (a
  // URL with its user name; the Reader's path() is the one messages print).
  Loader(const std::string& path, std::shared_ptr<const Reader> reader,
         std::vector<PipelineSpec> pipelines, LoaderOptions options);
  ~Loader();

  // Starts epoch `epoch` at batch `first_batch` (to resume). Any iterator of this loader still
  // running is cancelled first.
  EpochIterator epoch(std::uint64_t epoch, std::uint64_t first_batch = 0);

  // Replaces the subset of samples for the next epochs (FFCV's `indices`).
  void set_indices(std::optional<std::vector<std::uint64_t>> indices);

  const Reader& reader() const { return *reader_; }
  const TraversalOrder& order() const { return *order_; }
  // The page of each sample's heap data (kNoPage when it has none).
  const std::vector<std::uint64_t>& page_of_samples() const { return page_of_sample_; }
  const LoaderOptions& options() const { return options_; }
  std::uint64_t batches_per_epoch() const;
  // The stats of this loader's newest epoch while its iterator or one of its batches lives
  // (empty stats otherwise): for a consumer that handed the iterator on, e.g. to a GPU transfer.
  LoaderStats current_epoch_stats() const;
  // Drops the file's pages from the OS page cache (see PageSource::drop_os_cache), so that the
  // next epoch reads from storage. Call it between epochs. Throws IoError.
  void drop_os_cache();
  // Output names and their per-sample states, in output order, as the last declaration (at
  // construction, then at each epoch()) found them; reading them never re-runs declare(), which
  // may scan the dataset and must not run while an epoch uses the steps.
  const std::vector<std::pair<std::string, TensorState>>& outputs() const { return outputs_; }
  // The batch layout of each output, in output order: nullopt for a fixed shape, or how a ragged
  // output's rows share the batch (outputs() then gives the state of one row).
  const std::vector<std::optional<RaggedLayout>>& output_layouts() const { return output_layouts_; }
  // Where sample `index`'s pixels of image output `output` go in epoch `epoch`: the maps of its
  // decoder and of each pixel-moving step, in order (ffcv/steps/plane_map.hpp), from the same
  // keyed draws as the epoch's batches, e.g. to see which window a sample was cropped to. It
  // declares the pipelines again, so it refuses to run while an epoch of the loader runs.
  // Throws ConfigError for an unknown output or one whose steps do not say where pixels go.
  std::vector<PlaneMap> sample_geometry(const std::string& output, std::uint64_t epoch,
                                        std::uint64_t index);
  // The pipelines as given, in output order (a null decoder: the field's default), e.g. to read
  // the output size of a resizable decoder when building the device steps that finish it.
  const std::vector<PipelineSpec>& pipelines() const { return pipelines_; }

 private:
  std::shared_ptr<const Reader> reader_;
  std::vector<PipelineSpec> pipelines_;
  LoaderOptions options_;
  std::unique_ptr<TraversalOrder> order_;
  std::shared_ptr<PageSource> source_;
  std::vector<std::uint64_t> page_of_sample_;
  std::weak_ptr<EpochState> running_;
  std::vector<std::pair<std::string, TensorState>> outputs_;
  std::vector<std::optional<RaggedLayout>> output_layouts_;
  bool window_from_budget_ = false;  // the QUASI_RANDOM window was chosen from the cache budget
  // Held while the pipelines are declared again (epoch(), sample_geometry()), which two threads
  // must not do at once.
  std::mutex compile_mutex_;

  // Compiles every pipeline and links the ragged outputs that follow others; sets outputs_.
  std::vector<CompiledPipeline> compile_all();
  // The constructors' work once reader_, pipelines_ and options_ are set.
  void initialize(const std::string& path);
  PageLayout page_layout() const;
};

}  // namespace ffcv
