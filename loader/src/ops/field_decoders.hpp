// Internal: the built-in field decoders (documented in ffcv/decoders.hpp).
#pragma once

#include "box_rows.hpp"
#include "ffcv/steps/operation.hpp"

namespace ffcv {

class IntDecoder final : public Decoder {
 public:
  std::string name() const override { return "int"; }
  bool reads_payload() const override { return false; }
  TensorState declare(const Reader& reader, std::size_t field) override;
  void decode(const std::uint8_t* column, const PayloadReader& payloads, std::uint8_t* out,
              std::span<std::uint8_t> scratch, const SampleContext& context) const override;
};

class FloatDecoder final : public Decoder {
 public:
  std::string name() const override { return "float"; }
  bool reads_payload() const override { return false; }
  TensorState declare(const Reader& reader, std::size_t field) override;
  void decode(const std::uint8_t* column, const PayloadReader& payloads, std::uint8_t* out,
              std::span<std::uint8_t> scratch, const SampleContext& context) const override;
};

class NdArrayDecoder final : public Decoder {
 public:
  std::string name() const override { return "ndarray"; }
  TensorState declare(const Reader& reader, std::size_t field) override;
  void decode(const std::uint8_t* column, const PayloadReader& payloads, std::uint8_t* out,
              std::span<std::uint8_t> scratch, const SampleContext& context) const override;

 private:
  std::uint64_t bytes_ = 0;
};

class BytesDecoder final : public Decoder {
 public:
  std::string name() const override { return "bytes"; }
  TensorState declare(const Reader& reader, std::size_t field) override;
  void decode(const std::uint8_t* column, const PayloadReader& payloads, std::uint8_t* out,
              std::span<std::uint8_t> scratch, const SampleContext& context) const override;

 private:
  std::uint64_t max_size_ = 0;
};

// The rows of a RaggedNDArray field; with `follows`, boxes that move with an image output, or
// values kept in step with a boxes output.
struct RaggedDecoderOptions {
  RaggedLayout layout = RaggedLayout::kPacked;
  std::string follows;  // "" when the rows follow nothing
  RowKind rows = RowKind::kValues;
  BoxLimits limits;
};

class RaggedDecoder final : public Decoder {
 public:
  explicit RaggedDecoder(RaggedDecoderOptions options);
  std::string name() const override { return "ragged"; }
  TensorState declare(const Reader& reader, std::size_t field) override;
  std::optional<RaggedLayout> ragged_layout() const override { return options_.layout; }
  std::uint64_t rows(const std::uint8_t* column) const override;
  std::string follows() const override { return options_.follows; }
  bool rows_move() const override { return options_.rows != RowKind::kValues; }
  std::uint64_t move_rows(std::uint8_t* rows, std::uint64_t count, const PlaneMaps& maps,
                          std::uint8_t* kept) const override;
  void decode(const std::uint8_t* column, const PayloadReader& payloads, std::uint8_t* out,
              std::span<std::uint8_t> scratch, const SampleContext& context) const override;

 private:
  RaggedDecoderOptions options_;
  std::uint64_t row_bytes_ = 0;
};

class SimpleImageDecoder final : public Decoder {
 public:
  std::string name() const override { return "image"; }
  bool maps_geometry() const override { return true; }
  void map_geometry(const std::uint8_t* column, const SampleContext& context,
                    PlaneMaps& maps) const override;
  TensorState declare(const Reader& reader, std::size_t field) override;
  std::uint64_t scratch_bytes() const override;
  void decode(const std::uint8_t* column, const PayloadReader& payloads, std::uint8_t* out,
              std::span<std::uint8_t> scratch, const SampleContext& context) const override;

 private:
  std::uint64_t width_ = 0, height_ = 0;
};

}  // namespace ffcv
