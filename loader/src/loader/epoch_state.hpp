// Internal: the mutable state of one epoch — worker threads, the batch slot ring, the
// consumer's position — shared by EpochIterator and the Batch leases it hands out.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "compiled_pipeline.hpp"
#include "ffcv/loader.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/thread_group.hpp"
#include "ragged_batch.hpp"

namespace ffcv {

struct EpochSchedule {
  std::uint64_t epoch = 0;
  std::uint64_t first_batch = 0;
  std::uint64_t num_batches = 0;  // in the whole epoch
  std::uint64_t batch_size = 0;
  std::vector<std::uint64_t> order;  // this rank's samples, truncated to the batches
  std::vector<std::vector<std::uint64_t>> batch_pages;  // pages per batch (from first_batch on)
  std::array<std::uint32_t, 2> epoch_key{};
};

class EpochState {
 public:
  EpochState(std::shared_ptr<const Reader> reader, std::vector<CompiledPipeline> pipelines,
             std::shared_ptr<PageSource> source, EpochSchedule plan, const LoaderOptions& options);
  ~EpochState();

  void start();
  // Stops and joins the workers; idempotent. Leases stay valid.
  void stop();
  // The next batch in order (blocking), nullopt at the end. Throws a failed batch's error.
  std::optional<Batch> next(std::shared_ptr<EpochState> self);
  bool ready() const;  // next() would not wait
  // EpochIterator::wait_ready.
  bool wait_ready(std::chrono::nanoseconds timeout);
  // The lease of batch `batch` in `slot` ends: the slot goes back to the workers, or, for a batch
  // handed over (below), its memory goes to the spare sets.
  void release(std::uint64_t slot, std::uint64_t batch);

  std::uint64_t num_batches() const { return plan_.num_batches; }
  std::uint64_t batch_capacity() const { return plan_.batch_size; }  // samples a batch may hold
  LoaderPosition position() const;
  LoaderStats stats() const;
  std::vector<SkippedSample> skipped() const;
  const std::vector<CompiledPipeline>& pipelines() const { return pipelines_; }
  std::uint8_t* output_data(std::uint64_t slot, std::size_t output) const;
  // The memory of output `output` of held batch `batch`, wherever it lives now.
  std::uint8_t* held_output_data(std::uint64_t slot, std::uint64_t batch, std::size_t output) const;
  std::span<const std::uint64_t> batch_indices(std::uint64_t batch) const;

 private:
  enum class Phase { kFree, kPreparing, kWorking, kDone, kHeld };
  struct Slot {
    Phase phase = Phase::kFree;
    std::uint64_t batch = 0;  // absolute batch index when not kFree
    std::uint64_t size = 0, done = 0;
    std::string error;
    std::vector<std::uint64_t> failed;        // positions of skipped samples in the batch
    std::vector<std::uint64_t> kept_indices;  // the batch's dataset indices without them
  };

  // Per-worker buffers for process_sample, sized once for the largest pipeline.
  struct SampleBuffers {
    std::vector<std::uint8_t> ping, pong, scratch;
    // Ragged outputs that follow an image, per output: which of the sample's rows they kept
    // (sized for the epoch's largest sample) and how many rows it had, for the outputs that
    // follow their rows.
    std::vector<std::vector<std::uint8_t>> kept;
    std::vector<std::uint64_t> rows;
    PlaneMaps maps;  // of the image the sample's boxes follow
  };
  // What became of a run of samples one worker claimed.
  struct RunResult {
    std::string error;  // the first error, which fails the batch; "" when none
    std::vector<std::pair<std::uint64_t, std::string>> failed;  // skipped: (position, error)
  };

  void worker_main();
  SampleBuffers sample_buffers() const;
  // With mutex_ held through `lock`, by the first worker on `batch`: claims its free slot and
  // makes the batch's pages readable (unlocked meanwhile). Returns false when the epoch stops.
  bool prepare_batch(Slot& slot, std::uint64_t batch, std::unique_lock<std::mutex>& lock);
  // Without mutex_: runs positions [first, first + count) of the order through the pipelines.
  RunResult process_run(std::uint64_t slot_index, std::uint64_t batch, std::uint64_t first,
                        std::uint64_t count, SampleBuffers& buffers);
  // Under mutex_: adds a run's result to its slot.
  void record_run(Slot& slot, std::uint64_t batch, std::uint64_t count, RunResult run);
  // With mutex_ held through `lock`, once every sample of the slot's batch is done: compacts it,
  // runs its batch stage, hands it to the consumer and releases its pages.
  void finish_batch(Slot& slot, std::uint64_t slot_index, std::uint64_t batch,
                    std::unique_lock<std::mutex>& lock);
  // next() for the slot of next_batch_, with mutex_ held: nullopt when that batch was left
  // empty by skipped samples (and is then passed over).
  std::optional<Batch> next_locked(const std::shared_ptr<EpochState>& self,
                                   std::unique_lock<std::mutex>& lock);
  // With mutex_ held: the slot of next_batch_ holds that batch, done and left empty by skipped
  // samples: it goes back to the workers, and next_batch_ moves on.
  void pass_empty_batch(Slot& slot);
  // With mutex_ held: next() needs the slot of a batch the consumer still holds. The held batch
  // keeps its output memory (and its list of kept samples), which leaves the ring with it; the
  // slot gets a spare set or a new one (allocated with the lock released) and goes back to the
  // workers. So a consumer may keep any number of batches, each costing one batch of memory,
  // and the ring never reuses memory a lease can still read.
  void hand_over(Slot& slot, std::uint64_t slot_index, std::unique_lock<std::mutex>& lock);
  // Sets each ragged output's rows per batch block: the most any batch of the epoch needs.
  void size_ragged_outputs();
  // The block of ragged output `output` in slot `slot`'s memory.
  RaggedBatchView ragged_view(std::uint64_t slot, std::size_t output) const;
  // A ragged output's part of process_sample: its rows straight into their place in the batch.
  // Rows that follow an image are moved through its maps (some dropped), rows that follow other
  // rows keep what those kept; either way the rows kept are recorded in the batch's index.
  void process_ragged_sample(std::uint64_t slot, std::size_t output,
                             std::uint64_t position_in_batch, std::uint64_t index,
                             const PayloadReader& payloads, SampleBuffers& buffers) const;
  // A fixed-shape output's part of process_sample: decoder and operations, through the
  // worker's ping-pong buffers into the batch (or its staging memory).
  void process_fixed_sample(std::uint64_t slot, std::size_t output, std::uint64_t position_in_batch,
                            std::uint64_t index, const PayloadReader& payloads,
                            SampleBuffers& buffers) const;
  // The pixel maps of image output `output` for sample `index` in this epoch.
  void sample_geometry(std::size_t output, std::uint64_t index, PlaneMaps& maps) const;
  std::vector<void*> allocate_outputs();
  void deallocate_outputs(std::vector<void*>& outputs);
  std::uint64_t batch_start(std::uint64_t batch) const;  // first position in the order
  std::uint64_t batch_size(std::uint64_t batch) const;
  // Runs the batch operations of every output that has them; returns an error text or "".
  std::string run_batch_stage(std::uint64_t slot, std::uint64_t batch,
                              std::span<const std::uint64_t> indices) const;
  // Makes the finished batch what its samples kept, by the worker that finished it, before
  // anyone else reads it: ragged outputs settle the rows their samples kept (without the failed
  // samples), then compact() leaves the failed samples out of the others.
  void settle(Slot& slot, std::uint64_t slot_index);
  // Moves the slot's kept samples down over the failed ones (slot.failed, sorted), in every
  // fixed-shape output; sets its size and kept_indices.
  void compact(Slot& slot, std::uint64_t slot_index);
  // The error of sample `index` failing in `step` of `pipeline`, naming all of them.
  Error sample_error(std::uint64_t index, const CompiledPipeline& pipeline, const std::string& step,
                     const std::exception& error) const;
  // Under mutex_: counts a skipped sample; returns the epoch's error once past the limit.
  std::string record_skipped(std::uint64_t index, const std::string& error);
  // Runs sample `index` through every pipeline into its place in the slot's batch: the outputs
  // that follow other rows last.
  void process_sample(std::uint64_t slot, std::uint64_t position_in_batch, std::uint64_t index,
                      SampleBuffers& buffers) const;

  std::shared_ptr<const Reader> reader_;
  std::vector<CompiledPipeline> pipelines_;
  std::shared_ptr<PageSource> source_;
  EpochSchedule plan_;
  BatchAllocator allocator_;
  int num_workers_ = 1;
  std::uint64_t claim_size_ = 1;             // samples a worker claims at once
  std::vector<std::vector<void*>> buffers_;  // [slot][output]
  // Outputs with batch operations: the per-sample steps write into staging[slot][output]; the
  // batch operations go from there through spare[slot][output] (ping-pong) to the output.
  std::vector<std::vector<void*>> staging_, spare_;
  bool has_batch_stage_ = false;
  bool rows_shrink_ = false;  // some ragged output follows another: batches settle their rows
  bool skip_failed_samples_ = false;
  std::uint64_t max_skipped_ = 0;

  mutable std::mutex mutex_;
  std::mutex stop_mutex_;                  // stop() runs once at a time
  std::condition_variable work_changed_;   // workers wait on it
  std::condition_variable batch_changed_;  // the consumer waits on it
  std::vector<Slot> slots_;
  // Batches handed over (hand_over) and still held, by batch index; the output memory of those
  // released since, for the next hand-overs (at most one set per slot is kept).
  struct HandedOver {
    std::vector<void*> outputs;
    std::vector<std::uint64_t> kept_indices;  // what Batch::indices() points into
  };
  std::map<std::uint64_t, HandedOver> handed_over_;
  std::vector<std::vector<void*>> spare_outputs_;
  std::uint64_t next_item_ = 0;   // next sample position (absolute in the order) to claim
  std::uint64_t next_batch_ = 0;  // next batch next() hands out
  bool stopping_ = false;
  bool failed_ = false;
  ThreadGroup threads_;
  std::vector<SkippedSample> skipped_;  // the first EpochIterator::kMaxSkippedListed
  std::uint64_t skipped_count_ = 0;

  std::chrono::steady_clock::time_point started_;
  std::atomic<std::uint64_t> read_wait_ns_{0}, process_ns_{0}, process_cpu_ns_{0}, ring_full_ns_{0},
      consumer_wait_ns_{0}, samples_{0}, batches_{0};
};

}  // namespace ffcv
