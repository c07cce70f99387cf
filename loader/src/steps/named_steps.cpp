#include "ffcv/steps/named_steps.hpp"

#include "ffcv/util/closest_name.hpp"

namespace ffcv {

void throw_unknown_step(const std::string& kind, const std::string& name,
                        const std::vector<std::string>& known) {
  const std::string nearest = closest_name(name, known);
  std::string list;
  for (const std::string& key : known) list += (list.empty() ? "" : ", ") + key;
  throw ConfigError("unknown " + kind + " '" + name + "'" +
                    (nearest.empty() ? "" : " (did you mean '" + nearest + "'?)") +
                    "; known: " + list);
}

}  // namespace ffcv
