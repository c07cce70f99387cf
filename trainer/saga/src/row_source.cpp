#include "ffcv/saga/row_source.hpp"

#include <algorithm>
#include <numeric>

#include "ffcv/errors.hpp"
#include "row_sources.hpp"

namespace ffcv::saga {

std::unique_ptr<RowSource> open_row_source(const SagaRecipe& recipe, RowRange range,
                                           const std::string& order, at::Device device,
                                           bool class_labels) {
  if (range.count == 0) throw ConfigError("a SAGA row subset must hold at least one row");
  if (recipe.data.loader == "mmap") {
    return make_mapped_row_source(recipe, range, order, device, class_labels);
  }
  return make_loader_row_source(recipe, range, order, device, class_labels);
}

OrderOptions subset_order(const SagaData& data, RowRange range, const std::string& order) {
  OrderOptions options;
  options.kind = parse_order_kind(order);
  options.seed = data.seed;
  options.batch_size = data.batch_size;
  std::vector<std::uint64_t> rows(range.count);
  std::iota(rows.begin(), rows.end(), range.first);
  options.indices = std::move(rows);
  return options;
}

std::uint64_t dataset_rows(const SagaRecipe& recipe) {
  return recipe.data.loader == "mmap" ? npy_rows(recipe.data.features_npy)
                                      : beton_rows(recipe.data.train);
}

std::uint64_t feature_count(const TensorState& features, std::uint64_t mask_bits,
                            const std::string& where) {
  const std::uint64_t elements = features.element_count();
  const char kind = features.dtype.kind;
  const bool numeric = kind == 'b' || kind == 'u' || kind == 'i' || kind == 'f';
  if (!numeric) {
    throw ConfigError(where + ": features of type " + features.to_string() +
                      " are not numbers the solver can read");
  }
  if (mask_bits == 0) return elements;
  const std::uint64_t packed_bytes = (mask_bits + 7) / 8;
  if (features.dtype.kind == 'u' && features.dtype.itemsize == 1 && elements == packed_bytes) {
    return mask_bits;
  }
  if (elements == mask_bits) return mask_bits;  // the unpacked array (the baseline's .npy)
  throw ConfigError(where + ": data.mask_bits = " + std::to_string(mask_bits) + " needs " +
                    std::to_string(packed_bytes) + " packed bytes (uint8) or " +
                    std::to_string(mask_bits) + " values per sample, but the features are " +
                    features.to_string());
}

std::uint64_t target_count(const TensorState& targets, bool class_labels,
                           const std::string& where) {
  const char kind = targets.dtype.kind;
  if (class_labels) {
    if ((kind != 'i' && kind != 'u') || targets.element_count() != 1) {
      throw ConfigError(where +
                        ": saga.family = \"multinomial\" needs one integer class label "
                        "per sample, but the targets are " +
                        targets.to_string());
    }
    return 1;
  }
  if (kind != 'f' && kind != 'i' && kind != 'u' && kind != 'b') {
    throw ConfigError(where + ": targets of type " + targets.to_string() + " are not numbers");
  }
  return targets.element_count();
}

std::uint64_t batches_in(std::uint64_t rows, std::uint64_t batch_size, bool drop_last) {
  return drop_last ? rows / batch_size : (rows + batch_size - 1) / batch_size;
}

at::Tensor batch_rows(const std::vector<std::uint64_t>& order, std::uint64_t batch,
                      std::uint64_t batch_size) {
  const std::uint64_t begin = batch * batch_size;
  const std::uint64_t end = std::min<std::uint64_t>(order.size(), begin + batch_size);
  at::Tensor rows = at::empty({static_cast<std::int64_t>(end - begin)}, at::kLong);
  std::int64_t* out = rows.data_ptr<std::int64_t>();
  for (std::uint64_t i = begin; i < end; ++i) out[i - begin] = static_cast<std::int64_t>(order[i]);
  return rows;
}

at::Tensor features_as_float(const at::Tensor& stored, std::uint64_t mask_bits, at::Device device) {
  at::Tensor flat = stored.reshape({stored.size(0), -1}).to(device, /*non_blocking=*/false);
  const auto d = static_cast<std::int64_t>(mask_bits);
  if (mask_bits > 0 && flat.scalar_type() == at::kByte && flat.size(1) == (d + 7) / 8) {
    // Bit 7 of byte 0 is feature 0 (numpy.packbits, bitorder "big").
    const at::Tensor shifts = at::arange(7, -1, -1, at::TensorOptions(device).dtype(at::kByte));
    at::Tensor bits = flat.unsqueeze(2).bitwise_right_shift(shifts).bitwise_and(1);
    return bits.reshape({flat.size(0), -1}).narrow(1, 0, d).to(at::kFloat);
  }
  return flat.to(at::kFloat);
}

at::Tensor targets_for_solver(const at::Tensor& stored, bool class_labels, at::Device device) {
  at::Tensor flat = stored.reshape({stored.size(0), -1}).to(device, /*non_blocking=*/false);
  if (class_labels) return flat.reshape({flat.size(0)}).to(at::kLong);
  return flat.to(at::kFloat);
}

}  // namespace ffcv::saga
