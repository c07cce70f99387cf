// The two RowSource implementations behind open_row_source (row_source.hpp), and what they share.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ffcv/order/traversal_order.hpp"
#include "ffcv/saga/row_source.hpp"
#include "ffcv/steps/tensor_state.hpp"

namespace ffcv::saga {

std::unique_ptr<RowSource> make_loader_row_source(const SagaRecipe& recipe, RowRange range,
                                                  const std::string& order, at::Device device,
                                                  bool class_labels);
std::unique_ptr<RowSource> make_mapped_row_source(const SagaRecipe& recipe, RowRange range,
                                                  const std::string& order, at::Device device,
                                                  bool class_labels);

// The order over the rows `range` that both sources visit: `order` ("random", ...) keyed by
// data.seed.
OrderOptions subset_order(const SagaData& data, RowRange range, const std::string& order);

// Rows in the .beton / in the .npy features array.
std::uint64_t beton_rows(const std::string& path);
std::uint64_t npy_rows(const std::string& path);

// The number of features d of samples stored as `features`: packed bits when data.mask_bits > 0.
// Throws ConfigError naming `where` when the state cannot hold them, when they are big-endian
// (`fix` then says how to store them little-endian), or when they are uint8 bytes with no d and
// data.features_packed = "auto" (packed masks fitted as byte values would mean nothing).
std::uint64_t feature_count(const TensorState& features, const SagaData& data,
                            const std::string& where, const std::string& fix);
// The number of targets K of samples stored as `targets`; throws ConfigError naming `where` when
// they are not numbers, not integers where class labels are needed, or big-endian.
std::uint64_t target_count(const TensorState& targets, bool class_labels, const std::string& where,
                           const std::string& fix);

// How to store a big-endian field little-endian: in a .beton, in a baseline .npy file.
std::string beton_little_endian_fix();
std::string npy_little_endian_fix(const std::string& path);

// An epoch's batches are consecutive runs of `batch_size` rows of its order, the last one
// shorter, or left out with `drop_last`: how many there are, and the rows of batch `batch`.
std::uint64_t batches_in(std::uint64_t rows, std::uint64_t batch_size, bool drop_last);
at::Tensor batch_rows(const std::vector<std::uint64_t>& order, std::uint64_t batch,
                      std::uint64_t batch_size);

}  // namespace ffcv::saga
