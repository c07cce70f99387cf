#include "ffcv/loader.hpp"

#include <algorithm>
#include <set>

#include "budget_window.hpp"
#include "epoch_state.hpp"
#include "ffcv/decoders.hpp"
#include "ffcv/util/errors.hpp"

namespace ffcv {

// ---- Batch -------------------------------------------------------------------------------

Batch::Batch(Batch&& other) noexcept { *this = std::move(other); }

Batch& Batch::operator=(Batch&& other) noexcept {
  if (this != &other) {
    release();
    state_ = std::move(other.state_);
    slot_ = other.slot_;
    epoch_ = other.epoch_;
    index_ = other.index_;
    size_ = other.size_;
    indices_ = other.indices_;
  }
  return *this;
}

Batch::~Batch() { release(); }

void Batch::release() {
  if (state_) state_->release(slot_, index_);
  state_.reset();
}

std::size_t Batch::num_outputs() const { return state_ ? state_->pipelines().size() : 0; }

std::vector<std::uint64_t> BatchTensor::shape() const {
  std::vector<std::uint64_t> dims;
  if (!layout || *layout == RaggedLayout::kPadded) dims.push_back(count);
  if (layout) dims.push_back(rows);
  dims.insert(dims.end(), state->shape.begin(), state->shape.end());
  return dims;
}

std::uint64_t BatchTensor::byte_size() const {
  std::uint64_t bytes = state->dtype.itemsize;
  for (const std::uint64_t extent : shape()) bytes *= extent;
  return bytes;
}

BatchTensor Batch::output(std::size_t i) const {
  if (!state_) throw ConfigError("this batch was released");
  const CompiledPipeline& pipeline = state_->pipelines().at(i);
  std::uint8_t* memory = state_->held_output_data(slot_, index_, i);
  BatchTensor tensor;
  tensor.name = &pipeline.name;
  tensor.state = &pipeline.output_state();
  tensor.data = memory;
  tensor.count = size_;
  if (pipeline.ragged) {
    const RaggedBatchView view = RaggedBatchView::over(
        *pipeline.ragged, memory, state_->batch_capacity(), pipeline.sample_state().byte_size());
    tensor.data = view.values;
    tensor.layout = pipeline.ragged;
    tensor.rows = view.rows_word();
    (*pipeline.ragged == RaggedLayout::kPacked ? tensor.offsets : tensor.lengths) = view.index + 1;
  }
  return tensor;
}

BatchTensor Batch::output(const std::string& name) const {
  if (!state_) throw ConfigError("this batch was released");
  std::string known;
  for (std::size_t i = 0; i < state_->pipelines().size(); ++i) {
    if (state_->pipelines()[i].name == name) return output(i);
    known += (i ? ", " : "") + state_->pipelines()[i].name;
  }
  throw ConfigError("no output named '" + name + "' (outputs: " + known + ")");
}

// ---- EpochIterator -----------------------------------------------------------------------

EpochIterator::EpochIterator(std::shared_ptr<EpochState> state) : state_(std::move(state)) {}
EpochIterator::EpochIterator(EpochIterator&&) noexcept = default;
EpochIterator& EpochIterator::operator=(EpochIterator&& other) noexcept {
  if (state_) state_->stop();
  state_ = std::move(other.state_);
  return *this;
}
EpochIterator::~EpochIterator() {
  if (state_) state_->stop();
}

std::optional<Batch> EpochIterator::next() { return state_->next(state_); }
bool EpochIterator::ready() const { return state_->ready(); }
bool EpochIterator::wait_ready(std::chrono::milliseconds timeout) {
  return state_->wait_ready(timeout);
}
void EpochIterator::stop() {
  if (state_) state_->stop();
}
LoaderPosition EpochIterator::position() const { return state_->position(); }
std::uint64_t EpochIterator::num_batches() const { return state_->num_batches(); }
LoaderStats EpochIterator::stats() const { return state_->stats(); }
std::vector<SkippedSample> EpochIterator::skipped() const { return state_->skipped(); }

OnSampleError parse_on_sample_error(const std::string& text) {
  if (text == "fail") return OnSampleError::kFail;
  if (text == "skip") return OnSampleError::kSkip;
  throw ConfigError("unknown on_error '" + text + "' (fail, skip)");
}

const char* on_sample_error_name(OnSampleError value) {
  return value == OnSampleError::kSkip ? "skip" : "fail";
}

// ---- Loader ------------------------------------------------------------------------------

namespace {

CompiledPipeline compile(const Reader& reader, const PipelineSpec& spec, std::uint32_t stream) {
  CompiledPipeline pipeline;
  pipeline.field = reader.field_index(spec.field);
  pipeline.name = spec.name.empty() ? spec.field : spec.name;
  pipeline.decoder = spec.decoder ? spec.decoder : default_decoder(reader, pipeline.field);
  pipeline.operations = spec.operations;
  pipeline.stream_base = stream;
  pipeline.ragged = pipeline.decoder->ragged_layout();
  const std::string where = "pipeline '" + pipeline.name + "': ";
  if (pipeline.ragged && (!spec.operations.empty() || !spec.batch_operations.empty())) {
    throw ConfigError(where + "its decoder '" + pipeline.decoder->name() +
                      "' gives a ragged output (a varying number of rows per sample), which "
                      "takes no operations");
  }
  try {
    pipeline.states.push_back(pipeline.decoder->declare(reader, pipeline.field));
    pipeline.scratch_bytes = pipeline.decoder->scratch_bytes();
    for (const auto& operation : pipeline.operations) {
      if (!operation) throw ConfigError("an operation is null");
      pipeline.states.push_back(operation->declare(pipeline.states.back()));
      pipeline.scratch_bytes = std::max(pipeline.scratch_bytes, operation->scratch_bytes());
    }
    pipeline.batch_operations = spec.batch_operations;
    if (!pipeline.batch_operations.empty()) pipeline.batch_states.push_back(pipeline.states.back());
    for (const auto& operation : pipeline.batch_operations) {
      if (!operation) throw ConfigError("a batch operation is null");
      pipeline.batch_states.push_back(operation->declare(pipeline.batch_states.back()));
    }
  } catch (const ConfigError& error) {
    throw ConfigError(where + error.what());
  }
  for (std::size_t s = 0; s + 1 < pipeline.states.size(); ++s) {
    pipeline.intermediate_bytes =
        std::max(pipeline.intermediate_bytes, pipeline.states[s].byte_size());
  }
  std::vector<TensorState> all_states = pipeline.states;
  all_states.insert(all_states.end(), pipeline.batch_states.begin(), pipeline.batch_states.end());
  for (const TensorState& state : all_states) {
    if (state.device != Device::kCpu) {
      throw ConfigError(where + "GPU stages are not available in this build's CPU loader");
    }
  }
  return pipeline;
}

}  // namespace

Loader::Loader(const std::string& path, std::vector<PipelineSpec> pipelines, LoaderOptions options)
    : reader_(std::make_shared<Reader>(path, ReaderOptions{{}, options.cache.http})),
      pipelines_(std::move(pipelines)),
      options_(std::move(options)) {
  initialize(path);
}

Loader::Loader(const std::string& path, std::shared_ptr<const Reader> reader,
               std::vector<PipelineSpec> pipelines, LoaderOptions options)
    : reader_(std::move(reader)), pipelines_(std::move(pipelines)), options_(std::move(options)) {
  initialize(path);
}

void Loader::initialize(const std::string& path) {
  if (options_.batch_size == 0) throw ConfigError("batch size must be at least 1");
  if (options_.num_workers < 0) throw ConfigError("number of workers must be 0 (all) or more");
  if (!(options_.max_skipped_fraction >= 0 && options_.max_skipped_fraction <= 1)) {
    throw ConfigError("max_skipped_fraction must lie in 0..1, got " +
                      std::to_string(options_.max_skipped_fraction));
  }
  if (options_.default_pipelines) {
    std::set<std::string> fed;
    for (const PipelineSpec& spec : pipelines_) fed.insert(spec.field);
    for (const NamedField& field : reader_->fields()) {
      if (fed.count(field.name) == 0) pipelines_.push_back({field.name, field.name, nullptr, {}});
    }
  }
  if (pipelines_.empty()) throw ConfigError("the loader has no outputs");
  // Compile once now so that a bad pipeline is an error here, not at the first epoch.
  std::set<std::string> names;
  for (const CompiledPipeline& compiled : compile_all()) {
    if (!names.insert(compiled.name).second) {
      throw ConfigError("two outputs are named '" + compiled.name + "'");
    }
  }
  page_of_sample_ = reader_->page_of_samples();
  options_.order.batch_size = options_.batch_size;
  order_ = std::make_unique<TraversalOrder>(options_.order, page_of_sample_);
  if (options_.os_cache) {
    if (reader_->remote()) {
      throw ConfigError(reader_->path() +
                        ": a file on a web server cannot be memory-mapped (os_cache); read it "
                        "through the process cache (os_cache = false), which fetches its pages "
                        "ahead within a memory budget");
    }
    source_ = make_mmap_source(path, reader_->page_size());
  } else {
    source_ = make_process_cache(path, reader_->page_size(), options_.cache);
    if (options_.order.kind == OrderKind::kQuasiRandom && options_.order.window_pages == 0) {
      // The window the budget holds, rather than FFCV's 2 x batch size pages.
      options_.order.window_pages =
          window_for_budget(options_.order, page_layout(), options_.cache.budget_bytes);
      window_from_budget_ = true;
      order_ = std::make_unique<TraversalOrder>(options_.order, page_of_sample_);
    }
  }
}

PageLayout Loader::page_layout() const {
  PageLayout layout;
  layout.page_of_sample = &page_of_sample_;
  layout.page_size = reader_->page_size();
  layout.file_size = reader_->file_size();
  layout.batch_size = options_.batch_size;
  layout.num_batches = batches_per_epoch();
  layout.batches_in_flight = options_.batches_ahead + 2;
  return layout;
}

Loader::~Loader() {
  if (auto running = running_.lock()) running->stop();
}

void Loader::set_indices(std::optional<std::vector<std::uint64_t>> indices) {
  OrderOptions order = options_.order;
  order.indices = std::move(indices);
  order_ = std::make_unique<TraversalOrder>(order, page_of_sample_);
  options_.order = std::move(order);
}

std::uint64_t Loader::batches_per_epoch() const {
  if (options_.drop_last) return order_->smallest_rank_size() / options_.batch_size;
  return (order_->rank_size() + options_.batch_size - 1) / options_.batch_size;
}

EpochIterator Loader::epoch(std::uint64_t epoch, std::uint64_t first_batch) {
  const std::lock_guard compiling(compile_mutex_);
  if (auto running = running_.lock()) running->stop();
  const std::uint64_t num_batches = batches_per_epoch();
  if (first_batch > num_batches) {
    throw ConfigError("cannot start epoch " + std::to_string(epoch) + " at batch " +
                      std::to_string(first_batch) + ": it has " + std::to_string(num_batches) +
                      " batches");
  }
  std::vector<CompiledPipeline> compiled = compile_all();
  bool reads_payload = false;
  for (const CompiledPipeline& pipeline : compiled) {
    reads_payload = reads_payload || pipeline.decoder->reads_payload();
  }
  EpochSchedule plan;
  plan.epoch = epoch;
  plan.first_batch = first_batch;
  plan.num_batches = num_batches;
  plan.batch_size = options_.batch_size;
  plan.order = order_->epoch_order(epoch);
  plan.order.resize(std::min<std::uint64_t>(plan.order.size(), num_batches * options_.batch_size));
  plan.epoch_key = SampleContext::make_epoch_key(options_.order.seed, epoch);
  plan.batch_pages = batch_pages_of(plan.order, page_of_sample_, plan.batch_size, first_batch,
                                    num_batches, reads_payload);
  try {
    source_->begin_epoch(plan.batch_pages, options_.batches_ahead + 2);
  } catch (const CacheBudgetError& error) {
    if (options_.order.kind != OrderKind::kQuasiRandom) throw;
    // The cache's advice (use QUASI_RANDOM) does not fit a QUASI_RANDOM epoch: name its window.
    throw ConfigError(window_budget_message(
        reader_->path(), error.needed_bytes(), options_.cache.budget_bytes,
        options_.order.window_pages, options_.batches_ahead + 2, epoch, !window_from_budget_));
  }
  auto state = std::make_shared<EpochState>(reader_, std::move(compiled), source_, std::move(plan),
                                            options_);
  state->start();
  running_ = state;
  return EpochIterator(std::move(state));
}

std::vector<CompiledPipeline> Loader::compile_all() {
  std::vector<CompiledPipeline> compiled;
  for (std::size_t i = 0; i < pipelines_.size(); ++i) {
    compiled.push_back(compile(*reader_, pipelines_[i], static_cast<std::uint32_t>(i * 1024)));
  }
  link_followers(compiled);
  outputs_.clear();
  output_layouts_.clear();
  for (const CompiledPipeline& pipeline : compiled) {
    outputs_.emplace_back(pipeline.name, pipeline.output_state());
    output_layouts_.push_back(pipeline.ragged);
  }
  return compiled;
}

std::vector<PlaneMap> Loader::sample_geometry(const std::string& output, std::uint64_t epoch,
                                              std::uint64_t index) {
  if (index >= reader_->num_samples()) {
    throw ConfigError("sample " + std::to_string(index) + " is past the dataset's " +
                      std::to_string(reader_->num_samples()) + " samples");
  }
  if (running_.lock()) {
    throw ConfigError(
        "sample_geometry declares the pipelines again, which an epoch still "
        "running uses; ask between epochs");
  }
  std::vector<CompiledPipeline> compiled = compile_all();
  for (const CompiledPipeline& pipeline : compiled) {
    if (pipeline.name != output) continue;
    if (pipeline.ragged) {
      throw ConfigError("output '" + output + "' is ragged: its rows have no pixel geometry");
    }
    check_followable_image(pipeline, "output '" + output + "', ");
    PlaneMaps maps;
    map_pipeline_geometry(pipeline, *reader_, epoch,
                          SampleContext::make_epoch_key(options_.order.seed, epoch), index, maps);
    return {maps.begin(), maps.end()};
  }
  throw ConfigError("no output named '" + output + "'");
}

void Loader::drop_os_cache() { source_->drop_os_cache(); }

LoaderStats Loader::current_epoch_stats() const {
  const std::shared_ptr<EpochState> state = running_.lock();
  return state ? state->stats() : LoaderStats{};
}

}  // namespace ffcv
