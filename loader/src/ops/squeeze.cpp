// squeeze: drops size-1 dimensions of each sample's state (FFCV's Squeeze), e.g. the int
// decoder's [1] labels to scalars, so a batch of them is [N] rather than [N, 1]. `dims` lists
// which (they must have size 1); without it every size-1 dimension goes. Only the shape changes:
// the bytes are copied as they are, and the batch dimension is never touched (FFCV's Squeeze with
// no dims also squeezes a batch of one).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "ffcv/util/errors.hpp"
#include "ops.hpp"

namespace ffcv {
namespace {

class Squeeze final : public Operation {
 public:
  explicit Squeeze(std::vector<double> dims) : dims_(std::move(dims)) {}
  std::string name() const override { return "squeeze"; }
  TensorState declare(const TensorState& input) override {
    TensorState output = input;
    output.shape.clear();
    for (std::size_t d = 0; d < input.shape.size(); ++d) {
      const bool listed = dims_.empty()
                              ? input.shape[d] == 1
                              : std::find(dims_.begin(), dims_.end(), double(d)) != dims_.end();
      if (listed && input.shape[d] != 1) {
        throw ConfigError("squeeze: dimension " + std::to_string(d) + " of " + input.to_string() +
                          " has size " + std::to_string(input.shape[d]) + ", not 1");
      }
      if (!listed) output.shape.push_back(input.shape[d]);
    }
    for (const double d : dims_) {
      if (d != std::floor(d) || d < 0 || d >= double(input.shape.size())) {
        throw ConfigError("squeeze: no dimension " + std::to_string(d) + " in " +
                          input.to_string());
      }
    }
    bytes_ = input.byte_size();
    return output;
  }
  void apply(const std::uint8_t* input, std::uint8_t* output, std::span<std::uint8_t>,
             const SampleContext&) const override {
    std::memcpy(output, input, bytes_);
  }

 private:
  std::vector<double> dims_;
  std::uint64_t bytes_ = 0;
};

}  // namespace

std::shared_ptr<Operation> make_squeeze(const OpParams& params) {
  return std::make_shared<Squeeze>(params.get_list("dims", {}));
}

}  // namespace ffcv
