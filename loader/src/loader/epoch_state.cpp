#include "epoch_state.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "ffcv/util/cpu_count.hpp"
#include "ffcv/util/errors.hpp"
#include "ragged_batch.hpp"

namespace ffcv {
namespace {

using Clock = std::chrono::steady_clock;

std::uint64_t nanoseconds_since(Clock::time_point start) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count());
}

// CPU time this thread has used: what a worker's decoding costs, however many other threads
// share its core.
std::uint64_t thread_cpu_nanoseconds() {
  timespec now{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000ull +
         static_cast<std::uint64_t>(now.tv_nsec);
}

// Payloads of the current batch, through the page source.
class SourcePayloads final : public PayloadReader {
 public:
  SourcePayloads(const Reader& reader, const PageSource& source)
      : reader_(reader), source_(source) {}
  std::span<const std::uint8_t> payload(std::uint64_t ptr) const override {
    const AllocEntry* entry = reader_.find_allocation(ptr);
    if (entry == nullptr) {
      throw FormatError(reader_.path(), "no allocation starts at " + std::to_string(ptr), ptr);
    }
    return source_.bytes(ptr, entry->size);
  }
  std::span<const std::uint8_t> payload(std::uint64_t ptr, std::uint64_t size) const override {
    return source_.bytes(ptr, size);
  }

 private:
  const Reader& reader_;
  const PageSource& source_;
};

BatchAllocator default_allocator() {
  return {[](std::uint64_t bytes) -> void* {
            void* memory =
                std::aligned_alloc(64, std::max<std::uint64_t>(64, (bytes + 63) / 64 * 64));
            if (memory == nullptr) throw std::bad_alloc();
            return memory;
          },
          [](void* memory) { std::free(memory); }};
}

}  // namespace

EpochState::EpochState(std::shared_ptr<const Reader> reader,
                       std::vector<CompiledPipeline> pipelines, std::shared_ptr<PageSource> source,
                       EpochSchedule plan, const LoaderOptions& options)
    : reader_(std::move(reader)),
      pipelines_(std::move(pipelines)),
      source_(std::move(source)),
      plan_(std::move(plan)),
      allocator_(options.allocator.value_or(default_allocator())),
      slots_(options.batches_ahead + 2) {
  num_workers_ = resolve_worker_count(options.num_workers);
  skip_failed_samples_ = options.on_error == OnSampleError::kSkip;
  max_skipped_ = static_cast<std::uint64_t>(
      std::ceil(options.max_skipped_fraction * static_cast<double>(plan_.order.size())));
  size_ragged_outputs();
  buffers_.resize(slots_.size());
  staging_.resize(slots_.size());
  spare_.resize(slots_.size());
  const BatchAllocator host = default_allocator();
  for (std::size_t slot = 0; slot < slots_.size(); ++slot) {
    buffers_[slot] = allocate_outputs();
    for (const CompiledPipeline& pipeline : pipelines_) {
      void* staging = nullptr;
      void* spare = nullptr;
      if (pipeline.has_batch_stage()) {
        std::uint64_t largest = 0;  // of the batch stage's intermediate states
        for (std::size_t k = 1; k + 1 < pipeline.batch_states.size(); ++k) {
          largest = std::max(largest, pipeline.batch_states[k].byte_size());
        }
        staging = host.allocate(plan_.batch_size * pipeline.sample_state().byte_size());
        if (largest > 0) spare = host.allocate(plan_.batch_size * largest);
      }
      staging_[slot].push_back(staging);
      spare_[slot].push_back(spare);
    }
  }
  for (const CompiledPipeline& pipeline : pipelines_)
    has_batch_stage_ |= pipeline.has_batch_stage();
  next_item_ = batch_start(plan_.first_batch);
  claim_size_ = std::clamp<std::uint64_t>(plan_.batch_size / (4 * num_workers_), 1, 64);
  next_batch_ = plan_.first_batch;
}

EpochState::~EpochState() {
  stop();
  for (auto& outputs : buffers_) deallocate_outputs(outputs);
  for (auto& outputs : spare_outputs_) deallocate_outputs(outputs);
  for (auto& [batch, held] : handed_over_) deallocate_outputs(held.outputs);
  const BatchAllocator host = default_allocator();
  for (auto* table : {&staging_, &spare_}) {
    for (auto& slot_buffers : *table) {
      for (void* buffer : slot_buffers) {
        if (buffer != nullptr) host.deallocate(buffer);
      }
    }
  }
}

void EpochState::size_ragged_outputs() {
  for (CompiledPipeline& pipeline : pipelines_) {
    if (!pipeline.ragged) continue;
    // The most rows any batch of this epoch needs, from the metadata alone.
    std::uint64_t capacity = 0;
    for (std::uint64_t batch = plan_.first_batch; batch < plan_.num_batches; ++batch) {
      std::uint64_t sum = 0, largest = 0;
      for (const std::uint64_t index : batch_indices(batch)) {
        const std::uint64_t rows = pipeline.decoder->rows(reader_->column(index, pipeline.field));
        sum += rows;
        largest = std::max(largest, rows);
      }
      capacity =
          std::max(capacity, ragged_rows_needed(*pipeline.ragged, batch_size(batch), sum, largest));
      pipeline.ragged_largest_rows = std::max(pipeline.ragged_largest_rows, largest);
    }
    pipeline.ragged_capacity_rows = capacity;
    rows_shrink_ |= !pipeline.follows.empty();
  }
}

RaggedBatchView EpochState::ragged_view(std::uint64_t slot, std::size_t output) const {
  const CompiledPipeline& pipeline = pipelines_[output];
  return RaggedBatchView::over(*pipeline.ragged, output_data(slot, output), plan_.batch_size,
                               pipeline.sample_state().byte_size());
}

std::vector<void*> EpochState::allocate_outputs() {
  std::vector<void*> outputs;
  for (const CompiledPipeline& pipeline : pipelines_) {
    const std::uint64_t bytes =
        pipeline.ragged
            ? RaggedBatchView::block_bytes(plan_.batch_size, pipeline.ragged_capacity_rows,
                                           pipeline.sample_state().byte_size())
            : plan_.batch_size * pipeline.output_state().byte_size();
    outputs.push_back(allocator_.allocate(bytes));
  }
  return outputs;
}

void EpochState::deallocate_outputs(std::vector<void*>& outputs) {
  for (void* buffer : outputs) allocator_.deallocate(buffer);
  outputs.clear();
}

void EpochState::hand_over(Slot& slot, std::uint64_t slot_index,
                           std::unique_lock<std::mutex>& lock) {
  HandedOver& held = handed_over_[slot.batch];
  held.outputs = std::move(buffers_[slot_index]);
  held.kept_indices = std::move(slot.kept_indices);
  std::vector<void*> outputs;
  if (spare_outputs_.empty()) {
    // Unlocked: an allocator may wait (for the GIL, a driver); the slot stays held meanwhile, so
    // no worker touches it.
    lock.unlock();
    outputs = allocate_outputs();
    lock.lock();
  } else {
    outputs = std::move(spare_outputs_.back());
    spare_outputs_.pop_back();
  }
  buffers_[slot_index] = std::move(outputs);
  slot.phase = Phase::kFree;
  work_changed_.notify_all();
}

std::uint64_t EpochState::batch_start(std::uint64_t batch) const {
  return std::min<std::uint64_t>(batch * plan_.batch_size, plan_.order.size());
}

std::uint64_t EpochState::batch_size(std::uint64_t batch) const {
  return batch_start(batch + 1) - batch_start(batch);
}

std::span<const std::uint64_t> EpochState::batch_indices(std::uint64_t batch) const {
  return std::span<const std::uint64_t>(plan_.order).subspan(batch_start(batch), batch_size(batch));
}

std::uint8_t* EpochState::output_data(std::uint64_t slot, std::size_t output) const {
  return static_cast<std::uint8_t*>(buffers_[slot][output]);
}

std::uint8_t* EpochState::held_output_data(std::uint64_t slot, std::uint64_t batch,
                                           std::size_t output) const {
  std::lock_guard lock(mutex_);
  const auto held = handed_over_.find(batch);
  if (held != handed_over_.end()) return static_cast<std::uint8_t*>(held->second.outputs[output]);
  return output_data(slot, output);
}

void EpochState::start() {
  started_ = Clock::now();
  threads_.start(num_workers_, [this](int) { worker_main(); });
}

void EpochState::stop() {
  // Two threads may stop at once (a worker's failure seen in next() while the consumer's side
  // stops the epoch): one joins the workers and ends the epoch, the other waits for that.
  const std::lock_guard stopping(stop_mutex_);
  {
    std::lock_guard lock(mutex_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
  }
  work_changed_.notify_all();
  batch_changed_.notify_all();
  source_->cancel();  // wakes a worker waiting for pages; pages stay readable for the others
  threads_.join();
  source_->end_epoch();
}

void EpochState::process_sample(std::uint64_t slot, std::uint64_t position_in_batch,
                                std::uint64_t index, SampleBuffers& buffers) const {
  const SourcePayloads payloads(*reader_, *source_);
  for (std::size_t p = 0; p < pipelines_.size(); ++p) {
    const CompiledPipeline& pipeline = pipelines_[p];
    if (pipeline.follows_rows()) continue;  // below, once the rows they follow are done
    if (pipeline.ragged) {
      process_ragged_sample(slot, p, position_in_batch, index, payloads, buffers);
      continue;
    }
    process_fixed_sample(slot, p, position_in_batch, index, payloads, buffers);
  }
  for (std::size_t p = 0; p < pipelines_.size(); ++p) {
    if (pipelines_[p].follows_rows()) {
      process_ragged_sample(slot, p, position_in_batch, index, payloads, buffers);
    }
  }
}

void EpochState::process_fixed_sample(std::uint64_t slot, std::size_t p,
                                      std::uint64_t position_in_batch, std::uint64_t index,
                                      const PayloadReader& payloads, SampleBuffers& buffers) const {
  std::vector<std::uint8_t>& ping = buffers.ping;
  std::vector<std::uint8_t>& pong = buffers.pong;
  std::vector<std::uint8_t>& scratch = buffers.scratch;
  const CompiledPipeline& pipeline = pipelines_[p];
  std::uint8_t* stage_output = pipeline.has_batch_stage()
                                   ? static_cast<std::uint8_t*>(staging_[slot][p])
                                   : output_data(slot, p);
  std::uint8_t* final_output =
      stage_output + position_in_batch * pipeline.sample_state().byte_size();
  SampleContext context{plan_.epoch, index, pipeline.stream_base, plan_.epoch_key};
  const std::size_t steps = pipeline.operations.size();
  std::uint8_t* target = steps == 0 ? final_output : ping.data();
  std::size_t step = 0;  // for the error message
  try {
    pipeline.decoder->decode(reader_->column(index, pipeline.field), payloads, target, scratch,
                             context);
    const std::uint8_t* input = target;
    for (std::size_t k = 0; k < steps; ++k) {
      step = k + 1;
      context.stream = pipeline.stream_base + static_cast<std::uint32_t>(k + 1);
      target = k + 1 == steps ? final_output : (input == ping.data() ? pong.data() : ping.data());
      pipeline.operations[k]->apply(input, target, scratch, context);
      input = target;
    }
  } catch (const std::exception& error) {
    throw sample_error(index, pipeline,
                       step == 0 ? pipeline.decoder->name() : pipeline.operations[step - 1]->name(),
                       error);
  }
}

void EpochState::process_ragged_sample(std::uint64_t slot, std::size_t output,
                                       std::uint64_t position_in_batch, std::uint64_t index,
                                       const PayloadReader& payloads,
                                       SampleBuffers& buffers) const {
  const CompiledPipeline& pipeline = pipelines_[output];
  const RaggedBatchView view = ragged_view(slot, output);
  std::uint8_t* target = view.sample_values(position_in_batch);
  const std::uint64_t rows = view.sample_rows(position_in_batch);
  SampleContext context{plan_.epoch, index, pipeline.stream_base, plan_.epoch_key};
  std::uint64_t kept = rows;
  try {
    pipeline.decoder->decode(reader_->column(index, pipeline.field), payloads, target, {}, context);
    if (pipeline.follows_image()) {
      // Rows that follow an image are the ones other outputs may follow: their count and mask.
      buffers.rows[output] = rows;
      sample_geometry(*pipeline.follows_output, index, buffers.maps);
      kept = pipeline.decoder->move_rows(target, rows, buffers.maps, buffers.kept[output].data());
    } else if (pipeline.follows_output) {
      const std::size_t leader = *pipeline.follows_output;
      if (buffers.rows[leader] != rows) {
        throw Error("it has " + std::to_string(rows) + " rows, but '" + pipelines_[leader].name +
                    "', whose kept rows it follows, has " + std::to_string(buffers.rows[leader]));
      }
      kept = keep_rows(target, rows, view.row_bytes, buffers.kept[leader].data());
    }
  } catch (const std::exception& error) {
    throw sample_error(index, pipeline, pipeline.decoder->name(), error);
  }
  view.set_kept(position_in_batch, kept);
  // Padded blocks: zero rows after the kept ones, up to the block's end.
  if (view.layout == RaggedLayout::kPadded) {
    std::memset(target + kept * view.row_bytes, 0, (view.rows_word() - kept) * view.row_bytes);
  }
}

void EpochState::sample_geometry(std::size_t output, std::uint64_t index, PlaneMaps& maps) const {
  map_pipeline_geometry(pipelines_[output], *reader_, plan_.epoch, plan_.epoch_key, index, maps);
}

Error EpochState::sample_error(std::uint64_t index, const CompiledPipeline& pipeline,
                               const std::string& step, const std::exception& error) const {
  return Error("epoch " + std::to_string(plan_.epoch) + ", sample " + std::to_string(index) +
               ", output '" + pipeline.name + "', step '" + step + "': " + error.what());
}

void EpochState::settle(Slot& slot, std::uint64_t slot_index) {
  std::sort(slot.failed.begin(), slot.failed.end());
  for (std::size_t p = 0; p < pipelines_.size(); ++p) {
    if (pipelines_[p].ragged) ragged_view(slot_index, p).settle(slot.size, slot.failed);
  }
  if (!slot.failed.empty()) compact(slot, slot_index);
}

void EpochState::compact(Slot& slot, std::uint64_t slot_index) {
  const std::span<const std::uint64_t> indices = batch_indices(slot.batch);
  slot.kept_indices.clear();
  std::uint64_t kept = 0;
  for (std::uint64_t position = 0; position < slot.size; ++position) {
    if (std::binary_search(slot.failed.begin(), slot.failed.end(), position)) continue;
    for (std::size_t p = 0; p < pipelines_.size(); ++p) {
      if (pipelines_[p].ragged) continue;  // settled by settle()
      const std::uint64_t bytes = pipelines_[p].sample_state().byte_size();
      std::uint8_t* base = pipelines_[p].has_batch_stage()
                               ? static_cast<std::uint8_t*>(staging_[slot_index][p])
                               : output_data(slot_index, p);
      if (kept != position) std::memmove(base + kept * bytes, base + position * bytes, bytes);
    }
    slot.kept_indices.push_back(indices[position]);
    ++kept;
  }
  slot.size = kept;
}

std::string EpochState::record_skipped(std::uint64_t index, const std::string& error) {
  ++skipped_count_;
  if (skipped_.size() < EpochIterator::kMaxSkippedListed) skipped_.push_back({index, error});
  if (skipped_count_ <= max_skipped_) return "";
  return "epoch " + std::to_string(plan_.epoch) + ": " + std::to_string(skipped_count_) +
         " samples failed and were skipped, more than the limit of " +
         std::to_string(max_skipped_) + " (max_skipped_fraction of the epoch's " +
         std::to_string(plan_.order.size()) + " samples); the first, sample " +
         std::to_string(skipped_.front().index) + ": " + skipped_.front().error;
}

std::string EpochState::run_batch_stage(std::uint64_t slot, std::uint64_t batch,
                                        std::span<const std::uint64_t> indices) const {
  BatchContext context{plan_.epoch, batch, indices, plan_.epoch_key};
  for (std::size_t p = 0; p < pipelines_.size(); ++p) {
    const CompiledPipeline& pipeline = pipelines_[p];
    const std::size_t steps = pipeline.batch_operations.size();
    const std::uint8_t* input = static_cast<const std::uint8_t*>(staging_[slot][p]);
    for (std::size_t k = 0; k < steps; ++k) {
      std::uint8_t* target = k + 1 == steps ? output_data(slot, p)
                             : input == spare_[slot][p]
                                 ? static_cast<std::uint8_t*>(staging_[slot][p])
                                 : static_cast<std::uint8_t*>(spare_[slot][p]);
      try {
        pipeline.batch_operations[k]->apply(input, target, context);
      } catch (const std::exception& error) {
        return "epoch " + std::to_string(plan_.epoch) + ", batch " + std::to_string(batch) +
               ", output '" + pipeline.name + "', batch step '" +
               pipeline.batch_operations[k]->name() + "': " + error.what();
      }
      input = target;
    }
  }
  return "";
}

EpochState::SampleBuffers EpochState::sample_buffers() const {
  std::uint64_t intermediate = 0, scratch_size = 0;
  for (const CompiledPipeline& pipeline : pipelines_) {
    intermediate = std::max(intermediate, pipeline.intermediate_bytes);
    scratch_size = std::max(scratch_size, pipeline.scratch_bytes);
  }
  SampleBuffers buffers{
      std::vector<std::uint8_t>(intermediate),       std::vector<std::uint8_t>(intermediate),
      std::vector<std::uint8_t>(scratch_size),       {},
      std::vector<std::uint64_t>(pipelines_.size()), {}};
  for (const CompiledPipeline& pipeline : pipelines_) {
    buffers.kept.emplace_back(pipeline.follows_image() ? pipeline.ragged_largest_rows : 0);
  }
  return buffers;
}

bool EpochState::prepare_batch(Slot& slot, std::uint64_t batch,
                               std::unique_lock<std::mutex>& lock) {
  slot = Slot{};
  slot.phase = Phase::kPreparing;
  slot.batch = batch;
  slot.size = batch_size(batch);
  lock.unlock();
  // Ragged outputs: where each sample's rows go, from the metadata (the slot is this thread's
  // until it is working).
  for (std::size_t p = 0; p < pipelines_.size(); ++p) {
    const CompiledPipeline& pipeline = pipelines_[p];
    if (!pipeline.ragged) continue;
    const std::span<const std::uint64_t> indices = batch_indices(batch);
    ragged_view(batch % slots_.size(), p).write_index(slot.size, [&](std::uint64_t position) {
      return pipeline.decoder->rows(reader_->column(indices[position], pipeline.field));
    });
  }
  std::string error;
  const auto waited = Clock::now();
  try {
    source_->acquire(batch - plan_.first_batch);
  } catch (const std::exception& e) {
    error = std::string("epoch ") + std::to_string(plan_.epoch) + ", batch " +
            std::to_string(batch) + ": reading its pages failed: " + e.what();
  }
  read_wait_ns_ += nanoseconds_since(waited);
  lock.lock();
  if (stopping_) return false;
  if (!error.empty()) {
    slot.error = error;
    slot.done = slot.size;
    slot.phase = Phase::kDone;
    next_item_ = batch_start(batch + 1);
    batch_changed_.notify_all();
  } else {
    slot.phase = Phase::kWorking;
  }
  work_changed_.notify_all();
  return true;
}

EpochState::RunResult EpochState::process_run(std::uint64_t slot_index, std::uint64_t batch,
                                              std::uint64_t first, std::uint64_t count,
                                              SampleBuffers& buffers) {
  RunResult run;
  const auto began = Clock::now();
  const std::uint64_t cpu_began = thread_cpu_nanoseconds();
  for (std::uint64_t position = first; position < first + count && run.error.empty(); ++position) {
    try {
      process_sample(slot_index, position - batch_start(batch), plan_.order[position], buffers);
    } catch (const std::exception& e) {
      if (skip_failed_samples_) {
        run.failed.emplace_back(position, e.what());
      } else {
        run.error = e.what();
      }
    }
  }
  // A file truncated while mapped reads as zeros: that, not what the zeros decoded to, is the
  // error to report.
  try {
    reader_->check_intact();
    source_->check_intact();
  } catch (const std::exception& e) {
    run.error = e.what();
  }
  process_ns_ += nanoseconds_since(began);
  process_cpu_ns_ += thread_cpu_nanoseconds() - cpu_began;
  samples_ += count;
  return run;
}

void EpochState::record_run(Slot& slot, std::uint64_t batch, std::uint64_t count, RunResult run) {
  if (!run.error.empty() && slot.error.empty()) slot.error = std::move(run.error);
  for (const auto& [position, message] : run.failed) {
    slot.failed.push_back(position - batch_start(batch));
    std::string over_limit = record_skipped(plan_.order[position], message);
    if (!over_limit.empty() && slot.error.empty()) slot.error = std::move(over_limit);
  }
  slot.done += count;
}

void EpochState::finish_batch(Slot& slot, std::uint64_t slot_index, std::uint64_t batch,
                              std::unique_lock<std::mutex>& lock) {
  if (slot.error.empty() && (!slot.failed.empty() || rows_shrink_)) {
    lock.unlock();
    settle(slot, slot_index);
    lock.lock();
  }
  if (slot.error.empty() && has_batch_stage_ && slot.size > 0) {
    lock.unlock();
    const auto batch_began = Clock::now();
    const std::uint64_t batch_cpu_began = thread_cpu_nanoseconds();
    const std::span<const std::uint64_t> indices =
        slot.failed.empty() ? batch_indices(batch)
                            : std::span<const std::uint64_t>(slot.kept_indices);
    std::string batch_error = run_batch_stage(slot_index, batch, indices);
    process_ns_ += nanoseconds_since(batch_began);
    process_cpu_ns_ += thread_cpu_nanoseconds() - batch_cpu_began;
    lock.lock();
    if (!batch_error.empty()) slot.error = std::move(batch_error);
  }
  slot.phase = Phase::kDone;
  ++batches_;
  lock.unlock();
  source_->release(batch - plan_.first_batch);
  batch_changed_.notify_all();
  lock.lock();
}

void EpochState::worker_main() {
  SampleBuffers buffers = sample_buffers();
  const std::uint64_t num_slots = slots_.size();

  std::unique_lock lock(mutex_);
  for (;;) {
    if (stopping_ || next_item_ >= plan_.order.size()) return;
    const std::uint64_t batch = next_item_ / plan_.batch_size;
    const std::uint64_t slot_index = batch % num_slots;
    Slot& slot = slots_[slot_index];
    if (slot.phase == Phase::kFree) {
      // First worker on this batch: claim its slot and make its pages readable.
      if (!prepare_batch(slot, batch, lock)) return;
      continue;
    }
    if (slot.batch != batch || slot.phase == Phase::kPreparing) {
      // The slot still holds an older batch (ring full), or another worker is preparing it.
      const bool ring_full = slot.batch != batch;
      const auto waited = Clock::now();
      work_changed_.wait(lock);
      if (ring_full) ring_full_ns_ += nanoseconds_since(waited);
      continue;
    }
    // Claim a run of samples at once: fewer lock round trips, while the batch still spreads
    // over all workers.
    const std::uint64_t first = next_item_;
    const std::uint64_t count = std::min(claim_size_, batch_start(batch + 1) - first);
    next_item_ += count;
    lock.unlock();
    RunResult run = process_run(slot_index, batch, first, count, buffers);
    lock.lock();
    record_run(slot, batch, count, std::move(run));
    if (slot.done == slot.size) finish_batch(slot, slot_index, batch, lock);
  }
}

std::optional<Batch> EpochState::next(std::shared_ptr<EpochState> self) {
  std::unique_lock lock(mutex_);
  for (;;) {
    if (failed_ || next_batch_ >= plan_.num_batches) return std::nullopt;
    std::optional<Batch> batch = next_locked(self, lock);
    if (batch) return batch;
    // Every sample of that batch was skipped: its slot goes back, and the next batch is taken.
  }
}

std::optional<Batch> EpochState::next_locked(const std::shared_ptr<EpochState>& self,
                                             std::unique_lock<std::mutex>& lock) {
  Slot& slot = slots_[next_batch_ % slots_.size()];
  if (slot.phase == Phase::kHeld) hand_over(slot, next_batch_ % slots_.size(), lock);
  const auto waited = Clock::now();
  batch_changed_.wait(
      lock, [&] { return stopping_ || (slot.phase == Phase::kDone && slot.batch == next_batch_); });
  consumer_wait_ns_ += nanoseconds_since(waited);
  // A stopped epoch hands out nothing more, not even batches finished before the stop, so that
  // what its consumer sees does not depend on the workers' timing.
  if (stopping_ || !(slot.phase == Phase::kDone && slot.batch == next_batch_)) {
    throw Error("epoch " + std::to_string(plan_.epoch) +
                " was stopped (by its consumer, by a newer epoch of its loader, or by the loader's "
                "end)");
  }
  if (!slot.error.empty()) {
    failed_ = true;
    const std::string error = slot.error;
    lock.unlock();
    stop();
    throw Error(error);
  }
  if (slot.size == 0) {
    pass_empty_batch(slot);
    return std::nullopt;
  }
  slot.phase = Phase::kHeld;
  Batch batch;
  batch.state_ = self;
  batch.slot_ = next_batch_ % slots_.size();
  batch.epoch_ = plan_.epoch;
  batch.index_ = next_batch_;
  batch.size_ = slot.size;
  batch.indices_ = slot.failed.empty() ? batch_indices(next_batch_)
                                       : std::span<const std::uint64_t>(slot.kept_indices);
  ++next_batch_;
  return batch;
}

void EpochState::pass_empty_batch(Slot& slot) {
  slot.phase = Phase::kFree;
  ++next_batch_;
  work_changed_.notify_all();
}

bool EpochState::wait_ready(std::chrono::nanoseconds timeout) {
  const auto waited = Clock::now();
  const auto deadline = waited + timeout;
  std::unique_lock lock(mutex_);
  bool timed_out = false;
  for (;;) {
    if (failed_ || stopping_ || next_batch_ >= plan_.num_batches) break;
    const std::uint64_t slot_index = next_batch_ % slots_.size();
    Slot& slot = slots_[slot_index];
    if (slot.phase == Phase::kHeld) {
      hand_over(slot, slot_index, lock);  // what next() does first; the workers go on meanwhile
      continue;
    }
    if (slot.phase == Phase::kDone && slot.batch == next_batch_) {
      if (slot.size > 0 || !slot.error.empty()) break;
      pass_empty_batch(slot);
      continue;
    }
    if (timed_out) break;
    timed_out = batch_changed_.wait_until(lock, deadline) == std::cv_status::timeout;
  }
  consumer_wait_ns_ += nanoseconds_since(waited);
  lock.unlock();
  return ready();
}

bool EpochState::ready() const {
  std::lock_guard lock(mutex_);
  if (failed_ || stopping_ || next_batch_ >= plan_.num_batches) return true;
  const Slot& slot = slots_[next_batch_ % slots_.size()];
  return slot.phase == Phase::kDone && slot.batch == next_batch_;
}

void EpochState::release(std::uint64_t slot, std::uint64_t batch) {
  std::vector<void*> surplus;  // memory of a handed-over batch beyond the spare sets kept
  {
    std::lock_guard lock(mutex_);
    const auto held = handed_over_.find(batch);
    if (held == handed_over_.end()) {
      slots_[slot].phase = Phase::kFree;
    } else {
      if (spare_outputs_.size() < slots_.size()) {
        spare_outputs_.push_back(std::move(held->second.outputs));
      } else {
        surplus = std::move(held->second.outputs);
      }
      handed_over_.erase(held);
    }
  }
  if (!surplus.empty()) {
    deallocate_outputs(surplus);  // unlocked, as hand_over allocates
    return;
  }
  work_changed_.notify_all();
}

LoaderPosition EpochState::position() const {
  std::lock_guard lock(mutex_);
  return {plan_.epoch, next_batch_};
}

LoaderStats EpochState::stats() const {
  LoaderStats stats;
  stats.batches = batches_;
  stats.samples = samples_;
  stats.wall_seconds = nanoseconds_since(started_) * 1e-9;
  stats.read_wait_seconds = read_wait_ns_ * 1e-9;
  stats.process_seconds = process_ns_ * 1e-9;
  stats.process_cpu_seconds = process_cpu_ns_ * 1e-9;
  stats.ring_full_seconds = ring_full_ns_ * 1e-9;
  stats.consumer_wait_seconds = consumer_wait_ns_ * 1e-9;
  stats.workers = num_workers_;
  {
    std::lock_guard lock(mutex_);
    stats.skipped_samples = skipped_count_;
  }
  stats.pages = source_->stats();
  return stats;
}

std::vector<SkippedSample> EpochState::skipped() const {
  std::lock_guard lock(mutex_);
  return skipped_;
}

}  // namespace ffcv
