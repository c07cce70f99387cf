// RowSource over ffcv::Loader: the .beton's features and targets fields, decoded by the loader's
// workers, handed to the device by the torch adapter's BatchFeed.

#include "ffcv/loader.hpp"
#include "ffcv/reader.hpp"
#include "ffcv/settings/loader_settings.hpp"
#include "ffcv/steps/op_registry.hpp"
#include "ffcv/torch/batch_feed.hpp"
#include "ffcv/torch/batch_tensors.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/stopwatch.hpp"
#include "row_sources.hpp"

namespace ffcv::saga {
namespace {

class LoaderRowSource final : public RowSource {
 public:
  LoaderRowSource(const SagaRecipe& recipe, RowRange range, const std::string& order,
                  at::Device device, bool class_labels)
      : device_(device), mask_bits_(recipe.data.mask_bits) {
    range_ = range;
    class_labels_ = class_labels;
    const SagaData& data = recipe.data;
    LoaderSettings settings = data;
    settings.order = order;  // the rows' order for this pass (validation rows: sequential)
    LoaderPlace place;
    place.location = data.train;
    place.batch_size = data.batch_size;
    LoaderOptions options = loader_options(settings, place);
    options.order.indices = subset_order(data, range, order).indices;
    if (device.is_cuda()) options.allocator = torch_adapter::pinned_allocator();
    const auto open = [&](std::vector<std::shared_ptr<Operation>> feature_steps) {
      return std::make_unique<Loader>(
          data.train,
          std::vector<PipelineSpec>{{data.features, data.features, nullptr, feature_steps},
                                    {data.targets, data.targets, nullptr, {}}},
          options);
    };
    loader_ = open({});
    const TensorState stored = loader_->outputs()[0].second;
    features_origin_ = data.train + " field '" + data.features + "'";
    targets_origin_ = data.train + " field '" + data.targets + "'";
    features_ = feature_count(stored, data, features_origin_, beton_little_endian_fix());
    // For the CPU the workers widen the features to float32 (and unpack packed bits) in the
    // batch slots, ahead of the solver and in parallel; for CUDA the compact form is copied and
    // widened on the device (features_as_float), which moves fewer bytes.
    const bool packed = mask_bits_ > 0 && stored.element_count() != mask_bits_;
    if (!device.is_cuda() && (packed || stored.dtype != DType::parse("<f4"))) {
      const OpRegistry& steps = OpRegistry::global();
      loader_ = open(
          {packed ? steps.make_operation(
                        "unpack_bits", OpParams({{"count", static_cast<std::int64_t>(mask_bits_)}}))
                  : steps.make_operation("convert", OpParams())});
    }
    const auto& outputs = loader_->outputs();
    targets_ =
        target_count(outputs[1].second, class_labels, targets_origin_, beton_little_endian_fix());
    batch_size_ = data.batch_size;
  }

  void start_epoch(std::uint64_t epoch) override {
    feed_.reset();
    order_ = loader_->order().epoch_order(epoch);
    feed_.emplace(loader_->epoch(epoch), device_, std::vector<torch_adapter::DeviceStage>{});
    batch_ = 0;
  }

  std::optional<RowBatch> next() override {
    if (!feed_) throw ConfigError("RowSource::next() before start_epoch()");
    const Stopwatch start;
    std::optional<std::vector<at::Tensor>> tensors = feed_->next();
    wait_seconds_ += start.seconds();
    if (!tensors) {
      feed_.reset();
      return std::nullopt;
    }
    RowBatch batch;
    batch.features = features_as_float((*tensors)[0], mask_bits_, device_);
    batch.targets = targets_for_solver((*tensors)[1], class_labels_, device_);
    batch.rows_host = batch_rows(order_, batch_++, batch_size_);
    batch.rows = batch.rows_host.to(device_);
    return batch;
  }

 private:
  at::Device device_;
  std::uint64_t mask_bits_;
  std::uint64_t batch_size_ = 1;
  std::unique_ptr<Loader> loader_;
  std::optional<torch_adapter::BatchFeed> feed_;
  std::vector<std::uint64_t> order_;
  std::uint64_t batch_ = 0;
};

}  // namespace

std::uint64_t beton_rows(const std::string& path) { return Reader(path).num_samples(); }

std::unique_ptr<RowSource> make_loader_row_source(const SagaRecipe& recipe, RowRange range,
                                                  const std::string& order, at::Device device,
                                                  bool class_labels) {
  return std::make_unique<LoaderRowSource>(recipe, range, order, device, class_labels);
}

}  // namespace ffcv::saga
