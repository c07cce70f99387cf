// The LibTorch adapter: batches as tensors without copies, and tensors that hold the lease.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include "ffcv/fields/ndarray_field.hpp"
#include "ffcv/fields/scalar_fields.hpp"
#include "ffcv/torch/batch_tensors.hpp"
#include "ffcv/util/errors.hpp"
#include "good_batch_before_failure.hpp"
#include "test_support.hpp"

using namespace ffcv;

namespace {

std::string write_dataset(const test::TempDir& dir) {
  const std::string path = dir.file("t.beton");
  auto make = [](std::uint64_t i) -> std::vector<FieldValue> {
    NdArray array{DType::parse("<f4"), {2, 3}, std::vector<std::uint8_t>(24)};
    for (int k = 0; k < 6; ++k) {
      const float value = static_cast<float>(i) + 0.25f * k;
      std::memcpy(&array.bytes[4 * k], &value, 4);
    }
    return {array, static_cast<std::int64_t>(i)};
  };
  DatasetWriter(
      path,
      {{"x", std::make_shared<NdArrayField>(DType::parse("<f4"), std::vector<std::uint64_t>{2, 3})},
       {"y", std::make_shared<IntField>()}})
      .write(test::FunctionSource(100, make));
  return path;
}

}  // namespace

TEST_CASE("batches become tensors of the right shape, type and values, without copies", "[torch]") {
  test::TempDir dir;
  LoaderOptions options;
  options.batch_size = 16;
  Loader loader(write_dataset(dir), {}, options);
  auto it = loader.epoch(0);
  auto batch = it.next();
  const std::uint8_t* slot_memory = batch->output("x").data;
  const auto tensors = torch_adapter::to_tensors(std::move(*batch));
  REQUIRE(tensors.size() == 2);
  CHECK(tensors[0].sizes() == at::IntArrayRef({16, 2, 3}));
  CHECK(tensors[0].scalar_type() == at::kFloat);
  CHECK(tensors[1].sizes() == at::IntArrayRef({16, 1}));
  CHECK(tensors[1].scalar_type() == at::kLong);
  CHECK(static_cast<const void*>(tensors[0].data_ptr()) == slot_memory);
  CHECK(tensors[0][5][1][2].item<float>() == 5.0f + 0.25f * 5);
  CHECK(tensors[1].squeeze(1).equal(torch::arange(16)));
}

TEST_CASE("tensors hold their batch's memory until the last one is gone", "[torch]") {
  test::TempDir dir;
  LoaderOptions options;
  options.batch_size = 10;
  options.batches_ahead = 1;  // 3 slots
  Loader loader(write_dataset(dir), {}, options);
  auto it = loader.epoch(0);
  auto kept = torch_adapter::to_tensors(std::move(*it.next()));
  const at::Tensor first_labels = kept[1].clone();
  {
    auto second = torch_adapter::to_tensors(std::move(*it.next()));
    auto third = torch_adapter::to_tensors(std::move(*it.next()));
  }  // batches 1 and 2 released
  // Batch 3 needs batch 0's slot, still held: batch 0 keeps its memory, the slot gets new memory.
  auto fourth = it.next();
  REQUIRE(fourth.has_value());
  CHECK(fourth->index() == 3);
  CHECK(kept[1].equal(first_labels));
  auto fourth_tensors = torch_adapter::to_tensors(std::move(*fourth));
  CHECK(fourth_tensors[1].data_ptr() != kept[1].data_ptr());
  kept.clear();
}

TEST_CASE("dtypes map to torch scalar types", "[torch]") {
  using torch_adapter::scalar_type;
  CHECK(scalar_type(DType::parse("|u1")) == at::kByte);
  CHECK(scalar_type(DType::parse("<f2")) == at::kHalf);
  CHECK(scalar_type(DType::parse("|b1")) == at::kBool);
  CHECK(scalar_type(DType::parse("<i4")) == at::kInt);
  CHECK_THROWS_AS(scalar_type(DType::parse(">f4")), ConfigError);
}

TEST_CASE("on the CPU, the batch before a failing one is handed out, then the error", "[torch]") {
  test::check_good_batch_before_failure(at::Device(at::kCPU));
}
