// The first `count` samples of another source (`ffcv write ... --subset N`), with the same
// descriptions and read-ahead hints: a wrapper that dropped prefetch() would leave the writer's
// read-ahead doing nothing for every source behind it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "ffcv/dataset_writer.hpp"

namespace ffcv::tools {

class FirstSamples final : public SampleSource {
 public:
  FirstSamples(const SampleSource& source, std::uint64_t count)
      : source_(source), count_(std::min(count, source.size())) {}
  std::uint64_t size() const override { return count_; }
  std::vector<FieldValue> load(std::uint64_t index) const override { return source_.load(index); }
  std::string describe(std::uint64_t index) const override { return source_.describe(index); }
  void prefetch(std::uint64_t index) const override {
    if (index < count_) source_.prefetch(index);
  }

 private:
  const SampleSource& source_;
  std::uint64_t count_;
};

}  // namespace ffcv::tools
