// The memory estimate of saga_memory.hpp and the check against what the machine has.
#include "ffcv/saga/saga_memory.hpp"

#include <algorithm>
#include <sstream>

#include "ffcv/util/byte_size.hpp"
#include "ffcv/util/errors.hpp"

namespace ffcv::saga {
namespace {

std::string sizes_text(std::initializer_list<std::pair<double, const char*>> factors) {
  std::ostringstream text;
  bool first = true;
  for (const auto& [value, unit] : factors) {
    text << (first ? "" : " x ") << static_cast<std::uint64_t>(value) << unit;
    first = false;
  }
  return text.str();
}

}  // namespace

std::vector<MemoryPart> estimate_saga_memory(const SagaRecipe& recipe, const MemorySizes& sizes) {
  const SagaSolver& solver = recipe.saga;
  const bool cuda = solver.device == "cuda";
  const bool lasso = solver.objective == "lasso_path";
  const double d = static_cast<double>(sizes.features);
  const double k = static_cast<double>(sizes.outputs);
  const double b = static_cast<double>(recipe.data.batch_size);
  std::vector<MemoryPart> parts;
  parts.push_back({"model and SAGA averages",
                   sizes_text({{4, " copies"}, {d, " features"}, {k, " outputs"}, {4, " bytes"}}),
                   4 * d * k * 4, cuda, ""});
  parts.push_back(
      {"SAGA table",
       sizes_text(
           {{static_cast<double>(sizes.table_rows), " rows"}, {k, " outputs"}, {4, " bytes"}}),
       static_cast<double>(sizes.table_rows) * k * 4, cuda && solver.table != "host", ""});
  parts.push_back(
      {"step work",
       sizes_text({{6, " temporaries"}, {d, " features"}, {k, " outputs"}, {4, " bytes"}}) + " + " +
           sizes_text({{b, " rows"}, {d, " features"}, {8, " bytes"}}),
       6 * d * k * 4 + b * d * 8, cuda, "a smaller data.batch_size"});
  const double slots = 5;  // the loader's batches_ahead (3) + 2
  const double row_bytes = cuda ? static_cast<double>(sizes.stored_row_bytes) : d * 4;
  parts.push_back({"loader batches",
                   sizes_text({{slots, " slots"}, {b, " rows"}, {row_bytes, " bytes"}}),
                   slots * b * row_bytes, false, "a smaller data.batch_size"});
  parts.push_back({"statistics pass",
                   sizes_text({{3, " copies"}, {b, " rows"}, {d, " features"}, {8, " bytes"}}) +
                       " + " + sizes_text({{d, " features"}, {k + 6, " sums"}, {8, " bytes"}}),
                   3 * b * d * 8 + d * (k + 6) * 8, cuda, "a smaller data.batch_size"});
  if (keeps_path_models(solver)) {
    const double points =
        lasso ? static_cast<double>(solver.num_lambdas + 1)
              : static_cast<double>(solver.lambdas.empty() ? solver.num_lambdas + solver.do_zero
                                                           : solver.lambdas.size());
    const double copies = lasso ? 2 : 1;
    std::string shrink = solver.path_weights ? "saga.path_weights = false" : "";
    if (solver.selection == "one_se") {
      shrink += std::string(shrink.empty() ? "" : " and ") +
                "saga.selection = \"val_loss\" (one_se keeps every point's model)";
    }
    parts.push_back(
        {"path weights",
         sizes_text(
             {{points, " points"}, {d, " features"}, {k, " outputs"}, {4 * copies, " bytes"}}),
         points * d * k * 4 * copies, false, shrink});
  }
  return parts;
}

void check_saga_memory(const std::vector<MemoryPart>& parts, const SagaSolver& solver,
                       std::uint64_t available) {
  const double limit = solver.memory_limit_gib > 0 ? solver.memory_limit_gib * (1ull << 30)
                                                   : static_cast<double>(available);
  if (limit <= 0) return;
  std::vector<const MemoryPart*> host;
  double total = 0;
  for (const MemoryPart& part : parts) {
    if (part.on_device) continue;
    host.push_back(&part);
    total += part.bytes;
  }
  if (total <= limit) return;
  std::sort(host.begin(), host.end(),
            [](const MemoryPart* a, const MemoryPart* b) { return a->bytes > b->bytes; });
  std::string message = "this SAGA run needs about " + byte_size_text(total) +
                        " of host memory, more than the " + byte_size_text(limit) +
                        (solver.memory_limit_gib > 0 ? " of saga.memory_limit_gib" : " available") +
                        ": ";
  std::string shrink;
  for (std::size_t i = 0; i < host.size(); ++i) {
    message += (i ? "; " : "") + host[i]->name + " " + byte_size_text(host[i]->bytes) + " (" +
               host[i]->formula + ")";
    // The settings of the parts that matter (a tenth of the estimate or more).
    if (!host[i]->shrink.empty() && host[i]->bytes >= total / 10 &&
        shrink.find(host[i]->shrink) == std::string::npos) {
      shrink += (shrink.empty() ? "" : ", or ") + host[i]->shrink;
    }
  }
  message += ". To go on: " + (shrink.empty() ? std::string() : shrink + ", or ") +
             "--set saga.memory_limit_gib=N to allow N GiB";
  throw ConfigError(message);
}

}  // namespace ffcv::saga
