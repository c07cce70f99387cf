// Features and targets from .npy files (the sparse-regression study's input).
//
// Row i of the features array (shape N x ...) becomes an NDArray value; row i of the targets
// array becomes an Int (integer dtypes of shape (N,)), a Float (float dtypes of shape (N,)), or
// an NDArray (any other shape). Samples are (features, target).
#pragma once

#include "ffcv/dataset_writer.hpp"
#include "npy_array.hpp"

namespace ffcv::tools {

class NpySource final : public SampleSource {
 public:
  // Throws ConfigError when the row counts differ or an array has no rows dimension.
  NpySource(const std::string& features_path, const std::string& targets_path);

  std::uint64_t size() const override { return features_.rows(); }
  std::vector<FieldValue> load(std::uint64_t index) const override;

  // The fields matching this source: features as NDArray, targets as Int/Float/NDArray.
  std::vector<NamedField> fields() const;

 private:
  NpyArray features_, targets_;
};

}  // namespace ffcv::tools
