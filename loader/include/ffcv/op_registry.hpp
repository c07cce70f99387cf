// OpRegistry: decoders and operations by name, so recipes and the CLI can list them.
//
// Built-in steps register themselves at start-up; a library can add its own (a recipe may load
// a shared library of user operations, which registers them from a static initializer).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ffcv/op_params.hpp"
#include "ffcv/operation.hpp"

namespace ffcv {

using DecoderFactory = std::function<std::shared_ptr<Decoder>(const OpParams&)>;
using OperationFactory = std::function<std::shared_ptr<Operation>(const OpParams&)>;

class OpRegistry {
 public:
  static OpRegistry& global();

  void register_decoder(const std::string& name, std::string summary, DecoderFactory factory);
  void register_operation(const std::string& name, std::string summary, OperationFactory factory);

  // Builds a step; throws ConfigError for an unknown name (suggesting the closest) or for
  // parameters the step does not take.
  std::shared_ptr<Decoder> make_decoder(const std::string& name, const OpParams& params) const;
  std::shared_ptr<Operation> make_operation(const std::string& name, const OpParams& params) const;

  // (name, summary) of every registered step, sorted by name.
  std::vector<std::pair<std::string, std::string>> decoders() const;
  std::vector<std::pair<std::string, std::string>> operations() const;

 private:
  OpRegistry();
  template <typename Factory>
  struct Entry {
    std::string summary;
    Factory factory;
  };
  mutable std::mutex mutex_;
  std::map<std::string, Entry<DecoderFactory>> decoders_;
  std::map<std::string, Entry<OperationFactory>> operations_;
};

}  // namespace ffcv
