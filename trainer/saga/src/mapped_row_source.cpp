// The baseline RowSource: rows copied out of memory-mapped .npy arrays, one batch ahead on a
// helper thread, into a host buffer (pinned for CUDA), then copied to the device. No decoding,
// no page-aware reading, no pool of workers: the plain loader a PyTorch DataLoader with one
// worker over np.load(..., mmap_mode="r") amounts to.
#include <cstring>
#include <future>

#include "ffcv/format/npy_array.hpp"
#include "ffcv/order/traversal_order.hpp"
#include "ffcv/torch/batch_tensors.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/stopwatch.hpp"
#include "row_sources.hpp"

namespace ffcv::saga {
namespace {

TensorState row_state(const MappedNpy& array) {
  TensorState state;
  state.dtype = array.dtype;
  state.shape.assign(array.shape.begin() + 1, array.shape.end());
  if (state.shape.empty()) state.shape = {1};
  return state;
}

class MappedRowSource final : public RowSource {
 public:
  MappedRowSource(const SagaRecipe& recipe, RowRange range, const std::string& order,
                  at::Device device, bool class_labels)
      : device_(device),
        mask_bits_(recipe.data.mask_bits),
        batch_size_(recipe.data.batch_size),
        drop_last_(recipe.data.drop_last),
        features_npy_(map_npy(recipe.data.features_npy)),
        targets_npy_(map_npy(recipe.data.targets_npy)) {
    range_ = range;
    class_labels_ = class_labels;
    const SagaData& data = recipe.data;
    if (features_npy_.rows() != targets_npy_.rows()) {
      throw ConfigError(data.features_npy + " has " + std::to_string(features_npy_.rows()) +
                        " rows but " + data.targets_npy + " has " +
                        std::to_string(targets_npy_.rows()));
    }
    if (range.first + range.count > features_npy_.rows()) {
      throw ConfigError(data.features_npy + " has " + std::to_string(features_npy_.rows()) +
                        " rows; rows up to " + std::to_string(range.first + range.count) +
                        " were asked for");
    }
    features_origin_ = data.features_npy;
    targets_origin_ = data.targets_npy;
    features_ = feature_count(row_state(features_npy_), data, features_origin_,
                              npy_little_endian_fix(data.features_npy));
    targets_ = target_count(row_state(targets_npy_), class_labels, targets_origin_,
                            npy_little_endian_fix(data.targets_npy));
    // No pages: random and sequential orders do not look at them (quasi_random is refused).
    order_ =
        std::make_unique<TraversalOrder>(subset_order(data, range, order),
                                         std::vector<std::uint64_t>(features_npy_.rows(), kNoPage));
  }

  ~MappedRowSource() override {
    if (ahead_.valid()) ahead_.wait();
  }

  void start_epoch(std::uint64_t epoch) override {
    if (ahead_.valid()) ahead_.wait();
    epoch_order_ = order_->epoch_order(epoch);
    batches_ = batches_in(epoch_order_.size(), batch_size_, drop_last_);
    batch_ = 0;
    started_ = true;
    gather_ahead();
  }

  std::optional<RowBatch> next() override {
    if (!started_) throw ConfigError("RowSource::next() before start_epoch()");
    if (batch_ >= batches_) return std::nullopt;
    const Stopwatch start;
    HostBatch host = ahead_.get();
    wait_seconds_ += start.seconds();
    features_npy_.file->check_intact();
    targets_npy_.file->check_intact();
    ++batch_;
    gather_ahead();
    RowBatch batch;
    batch.features = features_as_float(host.features, mask_bits_, device_);
    batch.targets = targets_for_solver(host.targets, class_labels_, device_);
    batch.rows_host = std::move(host.rows);
    batch.rows = batch.rows_host.to(device_);
    return batch;
  }

 private:
  struct HostBatch {
    at::Tensor features, targets, rows;
  };

  void gather_ahead() {
    if (batch_ >= batches_) return;
    at::Tensor rows = batch_rows(epoch_order_, batch_, batch_size_);
    ahead_ = std::async(std::launch::async, [this, rows] {
      return HostBatch{gather(features_npy_, rows), gather(targets_npy_, rows), rows};
    });
  }

  // Rows `rows` of `array`, copied one by one out of the mapping into [B, row elements].
  at::Tensor gather(const MappedNpy& array, const at::Tensor& rows) const {
    const std::int64_t count = rows.size(0);
    const std::uint64_t row_bytes = array.row_bytes();
    at::TensorOptions options = at::TensorOptions().dtype(torch_adapter::scalar_type(array.dtype));
    if (device_.is_cuda()) options = options.pinned_memory(true);
    at::Tensor out =
        at::empty({count, static_cast<std::int64_t>(row_bytes / array.dtype.itemsize)}, options);
    auto* dst = static_cast<std::uint8_t*>(out.data_ptr());
    const std::int64_t* index = rows.data_ptr<std::int64_t>();
    for (std::int64_t i = 0; i < count; ++i) {
      std::memcpy(dst + i * row_bytes, array.row(static_cast<std::uint64_t>(index[i])), row_bytes);
    }
    return out;
  }

  at::Device device_;
  std::uint64_t mask_bits_, batch_size_;
  bool drop_last_;
  MappedNpy features_npy_, targets_npy_;
  std::unique_ptr<TraversalOrder> order_;
  std::vector<std::uint64_t> epoch_order_;
  std::uint64_t batches_ = 0, batch_ = 0;
  bool started_ = false;
  std::future<HostBatch> ahead_;
};

}  // namespace

std::uint64_t npy_rows(const std::string& path) { return map_npy(path).rows(); }

std::unique_ptr<RowSource> make_mapped_row_source(const SagaRecipe& recipe, RowRange range,
                                                  const std::string& order, at::Device device,
                                                  bool class_labels) {
  return std::make_unique<MappedRowSource>(recipe, range, order, device, class_labels);
}

}  // namespace ffcv::saga
