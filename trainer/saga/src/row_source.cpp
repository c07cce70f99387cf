#include "ffcv/saga/row_source.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <limits>
#include <sstream>

#include "ffcv/saga/saga_step.hpp"
#include "ffcv/storage/range_reader.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/json_text.hpp"
#include "ffcv/util/text_file.hpp"
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

SagaRecipe resolve_packed_features(const SagaRecipe& recipe, std::string* note) {
  SagaRecipe resolved = recipe;
  SagaData& data = resolved.data;
  // Beside a local file only: a URL's name names no local file, so none is found.
  const std::string sidecar = data.train + ".sources.json";
  const std::string json = read_text_if_present(sidecar);
  const std::vector<double> bits = json_numbers(json, "packed_bits");
  if (bits.empty()) return resolved;  // a sidecar of another kind of write
  if (bits.size() != 1 || !(bits[0] >= 1) || bits[0] != std::floor(bits[0])) {
    throw ConfigError(sidecar + ": packed_bits is not one positive whole number");
  }
  const auto packed_bits = static_cast<std::uint64_t>(bits[0]);
  if (data.features_packed == "no") {
    throw ConfigError("data.features_packed = \"no\", but " + sidecar + " says the features of " +
                      data.train + " are " + std::to_string(packed_bits) +
                      " booleans bit-packed by `ffcv write npy --pack-bits`: leave "
                      "data.features_packed out (they are then unpacked) or remove the sidecar "
                      "if it belongs to another file");
  }
  if (data.mask_bits != 0 && data.mask_bits != packed_bits) {
    throw ConfigError(
        "data.mask_bits = " + std::to_string(data.mask_bits) + ", but " + sidecar +
        " says the features of " + data.train + " were packed from " + std::to_string(packed_bits) +
        " booleans: set data.mask_bits = " + std::to_string(packed_bits) + " or leave it out");
  }
  if (data.mask_bits == 0 && note != nullptr) {
    *note = "features: " + std::to_string(packed_bits) + " bit-packed booleans (packed_bits in " +
            sidecar + ")";
  }
  data.mask_bits = packed_bits;
  return resolved;
}

void check_rows_finite(RowSource& source, const std::atomic<bool>* stop) {
  // The smallest offending row, which column and which array, and how many rows in all.
  std::int64_t worst_row = std::numeric_limits<std::int64_t>::max(), column = 0;
  bool in_targets = false;
  double value = 0;
  std::uint64_t bad_rows = 0;
  source.start_epoch(0);
  while (std::optional<RowBatch> batch = source.next()) {
    if (stop != nullptr && stop->load()) throw SolveStopped();
    at::Tensor any_bad;  // [B] bool: rows with a non-finite feature or target
    for (const bool targets : {false, true}) {
      const at::Tensor& stored = targets ? batch->targets : batch->features;
      if (!stored.is_floating_point()) continue;
      const at::Tensor values = stored.reshape({stored.size(0), -1}).to(at::kCPU);
      const at::Tensor finite = at::isfinite(values);
      const at::Tensor bad = finite.logical_not().any(1);
      any_bad = any_bad.defined() ? any_bad.logical_or(bad) : bad;
      const at::Tensor positions = bad.nonzero().flatten();
      for (std::int64_t i = 0; i < positions.size(0); ++i) {
        const std::int64_t position = positions[i].item<std::int64_t>();
        const std::int64_t row = batch->rows_host[position].item<std::int64_t>();
        if (row > worst_row || (row == worst_row && targets)) continue;
        worst_row = row;
        in_targets = targets;
        column = finite[position].logical_not().nonzero()[0][0].item<std::int64_t>();
        value = values[position][column].item<double>();
      }
    }
    if (any_bad.defined())
      bad_rows += static_cast<std::uint64_t>(any_bad.sum().item<std::int64_t>());
  }
  if (bad_rows == 0) return;
  std::ostringstream message;
  message << (in_targets ? source.targets_origin() : source.features_origin()) << ": row "
          << worst_row << " holds " << value << " in its " << (in_targets ? "target" : "feature")
          << " " << column;
  if (bad_rows > 1) message << " (" << bad_rows - 1 << " more rows hold NaN or infinity)";
  message << "; the solver needs finite numbers: drop or repair those rows";
  throw ConfigError(message.str());
}

std::uint64_t dataset_rows(const SagaRecipe& recipe) {
  return recipe.data.loader == "mmap" ? npy_rows(recipe.data.features_npy)
                                      : beton_rows(recipe.data.train);
}

namespace {

// Refuses a big-endian `state` (one-byte types have no byte order).
void check_byte_order(const TensorState& state, const std::string& where, const std::string& fix) {
  if (state.dtype.byte_order != '>' || state.dtype.itemsize <= 1) return;
  throw ConfigError(where + " stores big-endian numbers (" + state.dtype.typestr() +
                    "), which the solver would read as little-endian ones: " + fix);
}

}  // namespace

std::string beton_little_endian_fix() {
  return "write the .beton again from little-endian arrays (numpy: a.astype(a.dtype.newbyteorder("
         "'<')))";
}

std::string npy_little_endian_fix(const std::string& path) {
  return "save it little-endian (numpy: a = np.load('" + path + "'); np.save('" + path +
         "', a.astype(a.dtype.newbyteorder('<'))))";
}

std::uint64_t feature_count(const TensorState& features, const SagaData& data,
                            const std::string& where, const std::string& fix) {
  const std::uint64_t elements = features.element_count();
  const char kind = features.dtype.kind;
  const bool numeric = kind == 'b' || kind == 'u' || kind == 'i' || kind == 'f';
  if (!numeric) {
    throw ConfigError(where + ": features of type " + features.to_string() +
                      " are not numbers the solver can read");
  }
  check_byte_order(features, where, fix);
  const bool bytes = features.dtype.kind == 'u' && features.dtype.itemsize == 1;
  const std::uint64_t mask_bits = data.mask_bits;
  if (mask_bits == 0) {
    if (bytes && data.features_packed == "auto") {
      throw ConfigError(
          where + " holds uint8 features (" + features.to_string() +
          ") and nothing says whether they are bit-packed masks (" + data.train +
          ".sources.json, which `ffcv write npy --pack-bits` leaves, is absent): set "
          "data.mask_bits = d for masks packed with --pack-bits or numpy.packbits, or "
          "data.features_packed = \"no\" to fit the bytes as feature values");
    }
    return elements;
  }
  const std::uint64_t packed_bytes = (mask_bits + 7) / 8;
  if (bytes && elements == packed_bytes) return mask_bits;
  if (elements == mask_bits) return mask_bits;  // the unpacked array (the baseline's .npy)
  throw ConfigError(where + ": data.mask_bits = " + std::to_string(mask_bits) + " needs " +
                    std::to_string(packed_bytes) + " packed bytes (uint8) or " +
                    std::to_string(mask_bits) + " values per sample, but the features are " +
                    features.to_string());
}

std::uint64_t target_count(const TensorState& targets, bool class_labels, const std::string& where,
                           const std::string& fix) {
  const char kind = targets.dtype.kind;
  if (class_labels) {
    if ((kind != 'i' && kind != 'u') || targets.element_count() != 1) {
      throw ConfigError(where +
                        ": saga.family = \"multinomial\" needs one integer class label "
                        "per sample, but the targets are " +
                        targets.to_string());
    }
    check_byte_order(targets, where, fix);
    return 1;
  }
  if (kind != 'f' && kind != 'i' && kind != 'u' && kind != 'b') {
    throw ConfigError(where + ": targets of type " + targets.to_string() + " are not numbers");
  }
  check_byte_order(targets, where, fix);
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
